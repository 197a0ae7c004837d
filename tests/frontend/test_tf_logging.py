"""tf.logging (TF 1.15's tf_logging): the ``tensorflow`` logger, its default handler and
format, verbosity, log_first_n/log_every_n."""
from __future__ import annotations

import logging
import subprocess
import sys

import tfc.compat.v1 as tf


def test_a_program_prints_tfs_lines_on_stderr():
    code = ("import tfc.compat.v1 as tf\n"
            "tf.logging.info('hidden %d', 0)\n"
            "tf.logging.set_verbosity(tf.logging.INFO)\n"
            "tf.logging.info('loss = %s, step = %d', 0.5, 3)\n"
            "tf.logging.warn('careful')\n"
            "print(tf.logging.get_verbosity(), tf.get_logger().name)\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stderr.splitlines()[-2:] == ["INFO:tensorflow:loss = 0.5, step = 3", "WARNING:tensorflow:careful"]
    assert result.stdout == "20 tensorflow\n"


def test_levels_are_pythons():
    assert (tf.logging.DEBUG, tf.logging.INFO, tf.logging.WARN, tf.logging.ERROR, tf.logging.FATAL) == \
        (logging.DEBUG, logging.INFO, logging.WARN, logging.ERROR, logging.FATAL)


def _log_both():
    for i in range(5):
        tf.logging.log_first_n(tf.logging.INFO, "first %d", 2, i)
        tf.logging.log_every_n(tf.logging.INFO, "every %d", 3, i)


def test_log_first_n_and_every_n_count_per_call_site_as_tf(caplog):
    # TF's counter is keyed by the first frame outside the file that called log_first_n /
    # log_every_n (here the test's caller), so both calls share one count: TF prints the same.
    with caplog.at_level(logging.INFO, logger="tensorflow"):
        _log_both()
    assert caplog.messages == ["first 0", "every 1", "every 4"]


def test_records_name_the_callers_file():
    records = []

    class Keep(logging.Handler):
        def emit(self, record):
            records.append(record)

    logger = logging.getLogger("tensorflow")
    handler = Keep()
    logger.addHandler(handler)
    previous = logger.level
    logger.setLevel(logging.INFO)
    try:
        tf.logging.info("where")
    finally:
        logger.removeHandler(handler)
        logger.setLevel(previous)
    assert [(r.filename, r.funcName) for r in records] == [("test_tf_logging.py", "test_records_name_the_callers_file")]
