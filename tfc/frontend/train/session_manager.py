"""tf.train.SessionManager (TF 1.15's python/training/session_manager.py).

``prepare_session`` creates a Session on ``master``, restores the latest checkpoint of
``checkpoint_dir`` (or ``checkpoint_filename_with_path``) when there is one, else runs
``init_op``/``init_fn``; then runs ``local_init_op`` once ``ready_for_local_init_op``
reports nothing, and checks ``ready_op``. ``wait_for_session`` keeps creating sessions
until another process has made the model ready (every ``recovery_wait_secs``, at most
``max_wait_secs``); ``recover_session`` restores if it can and says whether it did.

A ready op returns a 1-D string tensor of the names of what is not initialized
(``report_uninitialized_variables``): empty means ready. Sessions are made by
``Session(master, graph=..., config=...)``: an empty master runs in this process; any
other target is the Session's to connect to.
"""
from __future__ import annotations

import time

import numpy as np

from .. import errors
from .. import tf_logging as logging


def _maybe_name(obj) -> str:
    """The object's name for a message: "None", its name, or a no-name note."""
    if obj is None:
        return "None"
    if hasattr(obj, "name"):
        return obj.name
    return f"<no name for {type(obj)}>"


def _new_session(target, graph, config):
    from tfc.runtime.session import Session

    return Session(target, graph=graph, config=config)


class SessionManager:
    """Creates sessions: restores or initializes the model and checks it is ready."""

    def __init__(self, local_init_op=None, ready_op=None, ready_for_local_init_op=None, graph=None,
                 recovery_wait_secs=30, local_init_run_options=None):
        from ..graph import get_default_graph

        if graph is None:
            graph = get_default_graph()
        self._local_init_op = local_init_op
        self._ready_op = ready_op
        self._ready_for_local_init_op = ready_for_local_init_op
        self._graph = graph
        self._recovery_wait_secs = recovery_wait_secs
        self._target = None
        self._local_init_run_options = local_init_run_options
        if ready_for_local_init_op is not None and local_init_op is None:
            raise ValueError("If you pass a ready_for_local_init_op you must also pass a local_init_op , "
                             f"ready_for_local_init_op [{ready_for_local_init_op}]")

    def _restore_checkpoint(self, master, saver=None, checkpoint_dir=None, checkpoint_filename_with_path=None,
                            wait_for_checkpoint=False, max_wait_secs=7200, config=None):
        """``(session, restored)``: a new session, restored from a checkpoint if one is found."""
        from ..saver import get_checkpoint_state

        self._target = master
        sess = _new_session(self._target, self._graph, config)
        if checkpoint_dir and checkpoint_filename_with_path:
            raise ValueError("Can not provide both checkpoint_dir and checkpoint_filename_with_path.")
        if not saver or not (checkpoint_dir or checkpoint_filename_with_path):
            return sess, False
        if checkpoint_filename_with_path:
            saver.restore(sess, checkpoint_filename_with_path)
            return sess, True
        wait_time = 0
        ckpt = get_checkpoint_state(checkpoint_dir)
        while not ckpt or not ckpt.model_checkpoint_path:
            if wait_for_checkpoint and wait_time < max_wait_secs:
                logging.info("Waiting for checkpoint to be available.")
                time.sleep(self._recovery_wait_secs)
                wait_time += self._recovery_wait_secs
                ckpt = get_checkpoint_state(checkpoint_dir)
            else:
                return sess, False
        saver.restore(sess, ckpt.model_checkpoint_path)
        saver.recover_last_checkpoints(ckpt.all_model_checkpoint_paths)
        return sess, True

    def prepare_session(self, master, init_op=None, saver=None, checkpoint_dir=None,
                        checkpoint_filename_with_path=None, wait_for_checkpoint=False, max_wait_secs=7200,
                        config=None, init_feed_dict=None, init_fn=None):
        """A Session with the model restored or initialized, ready; RuntimeError otherwise."""
        sess, is_loaded_from_checkpoint = self._restore_checkpoint(
            master, saver, checkpoint_dir=checkpoint_dir, checkpoint_filename_with_path=checkpoint_filename_with_path,
            wait_for_checkpoint=wait_for_checkpoint, max_wait_secs=max_wait_secs, config=config)
        if not is_loaded_from_checkpoint:
            if init_op is None and not init_fn and self._local_init_op is None:
                raise RuntimeError("Model is not initialized and no init_op or init_fn or local_init_op was given")
            if init_op is not None:
                sess.run(init_op, feed_dict=init_feed_dict)
            if init_fn:
                init_fn(sess)
        local_init_success, msg = self._try_run_local_init_op(sess)
        if not local_init_success:
            raise RuntimeError("Init operations did not make model ready for local_init.  "
                               f"Init op: {_maybe_name(init_op)}, init fn: {init_fn}, error: {msg}")
        is_ready, msg = self._model_ready(sess)
        if not is_ready:
            raise RuntimeError("Init operations did not make model ready.  "
                               f"Init op: {_maybe_name(init_op)}, init fn: {init_fn}, "
                               f"local_init_op: {self._local_init_op}, error: {msg}")
        return sess

    def recover_session(self, master, saver=None, checkpoint_dir=None, checkpoint_filename_with_path=None,
                        wait_for_checkpoint=False, max_wait_secs=7200, config=None):
        """``(session, initialized)``: initialized is True when a checkpoint made it ready."""
        sess, is_loaded_from_checkpoint = self._restore_checkpoint(
            master, saver, checkpoint_dir=checkpoint_dir, checkpoint_filename_with_path=checkpoint_filename_with_path,
            wait_for_checkpoint=wait_for_checkpoint, max_wait_secs=max_wait_secs, config=config)
        local_init_success, msg = self._try_run_local_init_op(sess)
        if not is_loaded_from_checkpoint:
            return sess, False
        restoring_file = checkpoint_dir or checkpoint_filename_with_path
        if not local_init_success:
            logging.info("Restoring model from %s did not make model ready for local init: %s", restoring_file, msg)
            return sess, False
        is_ready, msg = self._model_ready(sess)
        if not is_ready:
            logging.info("Restoring model from %s did not make model ready: %s", restoring_file, msg)
            return sess, False
        logging.info("Restored model from %s", restoring_file)
        return sess, is_loaded_from_checkpoint

    def wait_for_session(self, master, config=None, max_wait_secs=float("Inf")):
        """A Session once the model is ready; DeadlineExceededError after ``max_wait_secs``."""
        self._target = master
        if max_wait_secs is None:
            max_wait_secs = float("Inf")
        timer = _CountDownTimer(max_wait_secs)
        while True:
            sess = _new_session(self._target, self._graph, config)
            not_ready_msg = None
            local_init_success, not_ready_local_msg = self._try_run_local_init_op(sess)
            if local_init_success:
                is_ready, not_ready_msg = self._model_ready(sess)
                if is_ready:
                    return sess
            self._safe_close(sess)
            remaining_ms_after_wait = timer.secs_remaining() - self._recovery_wait_secs
            if remaining_ms_after_wait < 0:
                raise errors.DeadlineExceededError(None, None, "Session was not ready after waiting %d secs."
                                                   % (max_wait_secs,))
            logging.info("Waiting for model to be ready.  Ready_for_local_init_op:  %s, ready: %s",
                         not_ready_local_msg, not_ready_msg)
            time.sleep(self._recovery_wait_secs)

    def _safe_close(self, sess) -> None:
        try:
            sess.close()
        except Exception:  # noqa: BLE001 - as TF: closing must not raise here
            pass

    def _model_ready(self, sess):
        return _ready(self._ready_op, sess, "Model not ready")

    def _model_ready_for_local_init(self, sess):
        return _ready(self._ready_for_local_init_op, sess, "Model not ready for local init")

    def _try_run_local_init_op(self, sess):
        """``(True, None)`` after running local_init_op (or without one), else ``(False, why)``."""
        if self._local_init_op is not None:
            is_ready_for_local_init, msg = self._model_ready_for_local_init(sess)
            if is_ready_for_local_init:
                logging.info("Running local_init_op.")
                sess.run(self._local_init_op, options=self._local_init_run_options)
                logging.info("Done running local_init_op.")
                return True, None
            return False, msg
        return True, None


def _ready(op, sess, msg):
    """``(True, None)`` when ``op`` is None or reports nothing; else ``(False, reason)``."""
    if op is None:
        return True, None
    try:
        ready_value = sess.run(op)
        # Ready: an empty 1-D tensor (None and int32 for backward compatibility).
        if ready_value is None or ready_value.dtype == np.int32 or ready_value.size == 0:
            return True, None
        non_initialized_varnames = ", ".join([i.decode("utf-8") for i in ready_value])
        return False, "Variables not initialized: " + non_initialized_varnames
    except errors.FailedPreconditionError as e:
        if "uninitialized" not in str(e):
            logging.warning("%s : error [%s]", msg, str(e))
            raise e
        return False, str(e)


class _CountDownTimer:
    """Seconds left of a duration started at creation."""

    __slots__ = ["_start_time_secs", "_duration_secs"]

    def __init__(self, duration_secs):
        self._start_time_secs = time.time()
        self._duration_secs = duration_secs

    def secs_remaining(self) -> float:
        diff = self._duration_secs - (time.time() - self._start_time_secs)
        return max(0, diff)
