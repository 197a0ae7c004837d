"""tf.logging (TF 1.15's python/platform/tf_logging.py).

Everything goes to the Python logger named ``tensorflow``, as in TensorFlow: the training
utilities (hooks, MonitoredSession, Supervisor, Saver.restore) log through it, so
``tf.logging.set_verbosity(tf.logging.INFO)`` shows TensorFlow's lines, e.g.
``INFO:tensorflow:loss = 0.5, step = 1 (0.012 sec)``. The logger is WARN until told
otherwise (Python's default); when the root logger has no handler (nobody configured
logging), one StreamHandler on stderr (stdout in an interactive shell, at INFO) with
``logging.BASIC_FORMAT`` (``LEVEL:tensorflow:message``) is added to it, as TF's
``get_logger`` does.
"""
from __future__ import annotations

import logging as _logging
import sys
import threading
import traceback
from logging import DEBUG, ERROR, FATAL, INFO, WARN

_logger = None
_logger_lock = threading.Lock()


def _get_caller(offset: int = 3):
    """The code and frame of the innermost frame outside this file."""
    frame = sys._getframe(offset)
    our_file = frame.f_code.co_filename
    frame = frame.f_back
    while frame:
        if frame.f_code.co_filename != our_file:
            return frame.f_code, frame
        frame = frame.f_back
    return None, None


def _logger_find_caller(stack_info=False, stacklevel=1):
    code, frame = _get_caller(4)
    sinfo = "\n".join(traceback.format_stack()) if stack_info else None
    if code:
        return code.co_filename, frame.f_lineno, code.co_name, sinfo
    return "(unknown file)", 0, "(unknown function)", sinfo


def get_logger() -> _logging.Logger:
    """tf.get_logger: the ``tensorflow`` logger (configured once, as TF does)."""
    global _logger
    if _logger:
        return _logger
    with _logger_lock:
        if _logger:
            return _logger
        logger = _logging.getLogger("tensorflow")
        logger.findCaller = _logger_find_caller
        if not _logging.getLogger().handlers:
            interactive = bool(getattr(sys, "ps1", None)) or bool(sys.flags.interactive)
            if interactive:
                logger.setLevel(INFO)
            handler = _logging.StreamHandler(sys.stdout if interactive else sys.stderr)
            handler.setFormatter(_logging.Formatter(_logging.BASIC_FORMAT, None))
            logger.addHandler(handler)
        _logger = logger
        return _logger


def log(level, msg, *args, **kwargs) -> None:
    get_logger().log(level, msg, *args, **kwargs)


def debug(msg, *args, **kwargs) -> None:
    get_logger().debug(msg, *args, **kwargs)


def error(msg, *args, **kwargs) -> None:
    get_logger().error(msg, *args, **kwargs)


def fatal(msg, *args, **kwargs) -> None:
    get_logger().fatal(msg, *args, **kwargs)


def info(msg, *args, **kwargs) -> None:
    get_logger().info(msg, *args, **kwargs)


def warn(msg, *args, **kwargs) -> None:
    get_logger().warning(msg, *args, **kwargs)


def warning(msg, *args, **kwargs) -> None:
    get_logger().warning(msg, *args, **kwargs)


def TaskLevelStatusMessage(msg) -> None:  # noqa: N802 - TF's name
    error(msg)


def flush() -> None:
    raise NotImplementedError()


def vlog(level, msg, *args, **kwargs) -> None:
    get_logger().log(level, msg, *args, **kwargs)


_log_counter_per_token: dict = {}


def _GetNextLogCountPerToken(token) -> int:  # noqa: N802 - TF's name
    """How many times this was called with ``token`` before (0 the first time)."""
    _log_counter_per_token[token] = 1 + _log_counter_per_token.get(token, -1)
    return _log_counter_per_token[token]


def _GetFileAndLine() -> tuple:  # noqa: N802 - TF's name
    code, frame = _get_caller()
    if not code:
        return "<unknown>", 0
    return code.co_filename, frame.f_lineno


def log_every_n(level, msg, n, *args) -> None:
    """Log on the 1st, (n+1)th, (2n+1)th... call from the same file and line."""
    count = _GetNextLogCountPerToken(_GetFileAndLine())
    log_if(level, msg, not (count % n), *args)


def log_first_n(level, msg, n, *args) -> None:
    """Log only the first ``n`` times this is called from the same file and line."""
    count = _GetNextLogCountPerToken(_GetFileAndLine())
    log_if(level, msg, count < n, *args)


def log_if(level, msg, condition, *args) -> None:
    if condition:
        vlog(level, msg, *args)


def get_verbosity() -> int:
    return get_logger().getEffectiveLevel()


def set_verbosity(v) -> None:
    get_logger().setLevel(v)


def deprecation_warning(qualified_name: str, module: str, instructions: str, stacklevel: int = 2,
                        after: str = None) -> None:
    """The warning TF's ``@deprecation.deprecated`` logs on a deprecated call, once per
    function: ``From FILE:LINE: NAME (from MODULE) is deprecated and will be removed in a
    future version.`` and the instructions (FILE:LINE is the caller's)."""
    if qualified_name in _warned_deprecations:
        return
    _warned_deprecations.add(qualified_name)
    frame = sys._getframe(stacklevel)
    location = f"{frame.f_code.co_filename}:{frame.f_lineno}"
    when = f"after {after}" if after else "in a future version"  # @deprecated(date, ...) names the date
    warning("From %s: %s (from %s) is deprecated and will be removed %s.\n"
            "Instructions for updating:\n%s", location, qualified_name, module, when, instructions)


_warned_deprecations: set = set()

# tf.get_logger, and tf.logging.*
TF_EXPORTS = ["get_logger"]
EXPORTS = {
    "DEBUG": DEBUG, "ERROR": ERROR, "FATAL": FATAL, "INFO": INFO, "WARN": WARN,
    "TaskLevelStatusMessage": TaskLevelStatusMessage, "debug": debug, "error": error, "fatal": fatal,
    "flush": flush, "get_verbosity": get_verbosity, "info": info, "log": log, "log_every_n": log_every_n,
    "log_first_n": log_first_n, "log_if": log_if, "set_verbosity": set_verbosity, "vlog": vlog, "warn": warn,
    "warning": warning,
}
