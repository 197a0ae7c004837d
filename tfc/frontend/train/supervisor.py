"""tf.train.Supervisor (TF 1.15's python/training/supervisor.py).

A Supervisor gathers (or builds, adding them to the graph's collections) the ready op
(``report_uninitialized_variables``), init op, local init op, saver, summary op and global
step, finalizes the graph, and hands out sessions: ``managed_session()`` prepares one
(restoring the latest checkpoint of ``logdir``, else running the init op), starts the
standard services for a chief with a ``logdir`` — threads that save a checkpoint every
``save_model_secs`` and compute the summaries and ``global_step/sec`` every
``save_summaries_secs``, each doing it once at the start — and stops them on exit, where
an exception raised inside the ``with`` is reported to the coordinator and re-raised by
``stop()``. No final checkpoint is written on exit (TF does not either).
"""
from __future__ import annotations

import contextlib
import os
import time

from .. import tf_logging as logging
from ..graph import GraphKeys, add_to_collection, get_collection, get_default_graph
from . import training_util
from .coordinator import Coordinator, LooperThread
from .session_manager import SessionManager


class Supervisor:
    """TF's Supervisor (deprecated in TF 1.15 in favour of MonitoredTrainingSession)."""

    USE_DEFAULT = 0

    def __init__(self, graph=None, ready_op=USE_DEFAULT, ready_for_local_init_op=USE_DEFAULT, is_chief=True,
                 init_op=USE_DEFAULT, init_feed_dict=None, local_init_op=USE_DEFAULT, logdir=None,
                 summary_op=USE_DEFAULT, saver=USE_DEFAULT, global_step=USE_DEFAULT, save_summaries_secs=120,
                 save_model_secs=600, recovery_wait_secs=30, stop_grace_secs=120, checkpoint_basename="model.ckpt",
                 session_manager=None, summary_writer=USE_DEFAULT, init_fn=None, local_init_run_options=None):
        from ..saver import export_meta_graph
        from ..summary import FileWriter

        logging.deprecation_warning("Supervisor.__init__", "tensorflow.python.training.supervisor",
                                    "Please switch to tf.train.MonitoredTrainingSession")
        if graph is None:
            graph = get_default_graph()
        with graph.as_default():
            self._init_ready_op(ready_op=ready_op, ready_for_local_init_op=ready_for_local_init_op)
            self._init_init_op(init_op=init_op, init_feed_dict=init_feed_dict)
            self._init_local_init_op(local_init_op=local_init_op)
            self._init_saver(saver=saver)
            self._init_summary_op(summary_op=summary_op)
            self._init_global_step(global_step=global_step)
            self._graph = graph
            self._meta_graph_def = export_meta_graph(graph_def=graph.as_graph_def(add_shapes=True),
                                                     saver_def=self._saver.saver_def if self._saver else None)
        self._is_chief = is_chief
        self._coord = Coordinator()
        self._recovery_wait_secs = recovery_wait_secs
        self._stop_grace_secs = stop_grace_secs
        self._init_fn = init_fn
        self._local_init_run_options = local_init_run_options
        # Only a chief writes summaries and checkpoints.
        self._logdir = None
        self._save_summaries_secs = None
        self._save_model_secs = None
        self._save_path = None
        self._summary_writer = None
        if self._is_chief:
            self._logdir = logdir
            self._save_summaries_secs = save_summaries_secs
            self._save_model_secs = save_model_secs
            if self._logdir:
                self._save_path = os.path.join(self._logdir, checkpoint_basename)
            if summary_writer is Supervisor.USE_DEFAULT:
                if self._logdir:
                    self._summary_writer = FileWriter(self._logdir)
            else:
                self._summary_writer = summary_writer
            self._graph_added_to_summary = False
        self._init_session_manager(session_manager=session_manager)
        self._verify_setup()
        graph.finalize()

    def _init_session_manager(self, session_manager=None):
        if session_manager is None:
            self._session_manager = SessionManager(
                local_init_op=self._local_init_op, ready_op=self._ready_op,
                ready_for_local_init_op=self._ready_for_local_init_op, graph=self._graph,
                recovery_wait_secs=self._recovery_wait_secs, local_init_run_options=self._local_init_run_options)
        else:
            self._session_manager = session_manager

    def _get_first_op_from_collection(self, key):
        op_list = get_collection(key)
        if len(op_list) > 1:
            logging.info("Found %d %s operations. Returning the first one.", len(op_list), key)
        if op_list:
            return op_list[0]
        return None

    def _init_ready_op(self, ready_op=USE_DEFAULT, ready_for_local_init_op=USE_DEFAULT):
        from ..variables import report_uninitialized_variables

        if ready_op is Supervisor.USE_DEFAULT:
            ready_op = self._get_first_op_from_collection(GraphKeys.READY_OP)
            if ready_op is None:
                ready_op = report_uninitialized_variables()
                add_to_collection(GraphKeys.READY_OP, ready_op)
        self._ready_op = ready_op
        # ready_for_local_init_op defaults to None (TF's backward compatibility).
        if ready_for_local_init_op is Supervisor.USE_DEFAULT:
            ready_for_local_init_op = self._get_first_op_from_collection(GraphKeys.READY_FOR_LOCAL_INIT_OP)
        self._ready_for_local_init_op = ready_for_local_init_op

    def _init_init_op(self, init_op=USE_DEFAULT, init_feed_dict=None):
        from ..variables import global_variables_initializer

        if init_op is Supervisor.USE_DEFAULT:
            init_op = self._get_first_op_from_collection(GraphKeys.INIT_OP)
            if init_op is None:
                init_op = global_variables_initializer()
                add_to_collection(GraphKeys.INIT_OP, init_op)
        self._init_op = init_op
        self._init_feed_dict = init_feed_dict

    def _init_local_init_op(self, local_init_op=USE_DEFAULT):
        from ..ops.control_flow_ops import group
        from ..variables import local_variables_initializer
        from .monitored_session import _tables_initializer

        if local_init_op is Supervisor.USE_DEFAULT:
            local_init_op = self._get_first_op_from_collection(GraphKeys.LOCAL_INIT_OP)
            if local_init_op is None:
                op_list = [local_variables_initializer(), _tables_initializer()]
                if op_list:
                    local_init_op = group(*op_list)
                    add_to_collection(GraphKeys.LOCAL_INIT_OP, local_init_op)
        self._local_init_op = local_init_op

    def _init_saver(self, saver=USE_DEFAULT):
        from ..saver import Saver
        from ..variables import global_variables

        if saver is Supervisor.USE_DEFAULT:
            saver = self._get_first_op_from_collection(GraphKeys.SAVERS)
            if saver is None and global_variables():
                saver = Saver()
                add_to_collection(GraphKeys.SAVERS, saver)
        self._saver = saver

    def _init_summary_op(self, summary_op=USE_DEFAULT):
        from ..summary import merge_all

        if summary_op is Supervisor.USE_DEFAULT:
            summary_op = self._get_first_op_from_collection(GraphKeys.SUMMARY_OP)
            if summary_op is None:
                summary_op = merge_all()
                if summary_op is not None:
                    add_to_collection(GraphKeys.SUMMARY_OP, summary_op)
        self._summary_op = summary_op

    def _init_global_step(self, global_step=USE_DEFAULT):
        if global_step is Supervisor.USE_DEFAULT:
            global_step = self._get_first_op_from_collection(GraphKeys.GLOBAL_STEP)
            if global_step is None:
                global_step = self._default_global_step_tensor()
                if global_step is not None:
                    add_to_collection(GraphKeys.GLOBAL_STEP, global_step)
        self._global_step = global_step

    @property
    def is_chief(self):
        return self._is_chief

    @property
    def session_manager(self):
        return self._session_manager

    @property
    def coord(self):
        return self._coord

    @property
    def init_op(self):
        return self._init_op

    @property
    def init_feed_dict(self):
        return self._init_feed_dict

    @property
    def ready_op(self):
        return self._ready_op

    @property
    def ready_for_local_init_op(self):
        return self._ready_for_local_init_op

    @property
    def summary_writer(self):
        return self._summary_writer

    @property
    def summary_op(self):
        return self._summary_op

    @property
    def save_summaries_secs(self):
        return self._save_summaries_secs

    @property
    def global_step(self):
        return self._global_step

    @property
    def saver(self):
        return self._saver

    @property
    def save_model_secs(self):
        return self._save_model_secs

    @property
    def save_path(self):
        return self._save_path

    def _write_graph(self):
        """``logdir/graph.pbtxt``, and the graph and meta graph events (once)."""
        assert self._is_chief
        if self._logdir:
            training_util.write_graph(self._graph.as_graph_def(add_shapes=True), self._logdir, "graph.pbtxt")
        if self._summary_writer and not self._graph_added_to_summary:
            self._summary_writer.add_graph(self._graph)
            self._summary_writer.add_meta_graph(self._meta_graph_def)
            self._graph_added_to_summary = True

    def start_standard_services(self, sess):
        """A START SessionLog, then the summary, step-counter and checkpoint threads."""
        from tfc.protos import SessionLog

        if not self._is_chief:
            raise RuntimeError("Only chief supervisor can start standard services. Because only chief supervisors "
                               "can write events.")
        if not self._logdir:
            logging.warning("Standard services need a 'logdir' passed to the SessionManager")
            return
        if self._global_step is not None and self._summary_writer:
            current_step = training_util.global_step(sess, self._global_step)
            self._summary_writer.add_session_log(SessionLog(status=SessionLog.START), current_step)
        threads = []
        if self._save_summaries_secs and self._summary_writer:
            if self._summary_op is not None:
                threads.append(SVSummaryThread(self, sess))
            if self._global_step is not None:
                threads.append(SVStepCounterThread(self, sess))
        if self.saver and self._save_model_secs:
            threads.append(SVTimerCheckpointThread(self, sess))
        for t in threads:
            t.start()
        return threads

    def prepare_or_wait_for_session(self, master="", config=None, wait_for_checkpoint=False, max_wait_secs=7200,
                                    start_standard_services=True):
        """A chief's session restored or initialized (then the graph is written and the
        services started); a worker's once the chief made the model ready."""
        self._coord.clear_stop()
        if self._summary_writer:
            self._summary_writer.reopen()
        if self._is_chief:
            sess = self._session_manager.prepare_session(
                master, init_op=self.init_op, saver=self.saver, checkpoint_dir=self._logdir,
                wait_for_checkpoint=wait_for_checkpoint, max_wait_secs=max_wait_secs, config=config,
                init_feed_dict=self._init_feed_dict, init_fn=self._init_fn)
            self._write_graph()
            if start_standard_services:
                logging.info("Starting standard services.")
                self.start_standard_services(sess)
        else:
            sess = self._session_manager.wait_for_session(master, config=config, max_wait_secs=max_wait_secs)
        if start_standard_services:
            logging.info("Starting queue runners.")
            self.start_queue_runners(sess)
        return sess

    def start_queue_runners(self, sess, queue_runners=None):
        if queue_runners is None:
            queue_runners = self._graph.get_collection(GraphKeys.QUEUE_RUNNERS)
        threads = []
        for qr in queue_runners:
            threads.extend(qr.create_threads(sess, coord=self._coord, daemon=True, start=True))
        return threads

    def loop(self, timer_interval_secs, target, args=None, kwargs=None):
        """Start a LooperThread calling ``target`` every ``timer_interval_secs``."""
        looper = LooperThread(self._coord, timer_interval_secs, target=target, args=args, kwargs=kwargs)
        looper.start()
        return looper

    def stop(self, threads=None, close_summary_writer=True, ignore_live_threads=False):
        """Stop and join the threads (re-raising an exception reported to the coordinator),
        then write a STOP SessionLog and close the summary writer."""
        from tfc.protos import SessionLog

        self._coord.request_stop()
        try:
            self._coord.join(threads, stop_grace_period_secs=self._stop_grace_secs,
                             ignore_live_threads=ignore_live_threads)
        finally:
            if close_summary_writer and self._summary_writer:
                self._summary_writer.add_session_log(SessionLog(status=SessionLog.STOP))
                self._summary_writer.close()
                self._graph_added_to_summary = False

    def request_stop(self, ex=None):
        self._coord.request_stop(ex=ex)

    def should_stop(self):
        return self._coord.should_stop()

    def stop_on_exception(self):
        return self._coord.stop_on_exception()

    def wait_for_stop(self):
        self._coord.wait_for_stop()

    def summary_computed(self, sess, summary, global_step=None):
        """Write a computed summary (at the current global step by default)."""
        if not self._summary_writer:
            raise RuntimeError("Writing a summary requires a summary writer.")
        if global_step is None and self.global_step is not None:
            global_step = training_util.global_step(sess, self.global_step)
        self._summary_writer.add_summary(summary, global_step)

    def _default_global_step_tensor(self):
        """The tensor ``global_step:0`` if it is an int32/int64, else None."""
        from .. import dtypes

        try:
            gs = get_default_graph().get_tensor_by_name("global_step:0")
        except KeyError:
            return None
        if gs.dtype.base_dtype in (dtypes.int32, dtypes.int64):
            return gs
        logging.warning("Found 'global_step' is not an int type: %s", gs.dtype)
        return None

    def _verify_setup(self):
        """A non-chief needs every variable placed on a device."""
        if not self._is_chief:
            for op in self._graph.get_operations():
                if op.type in ("Variable", "VariableV2") and not op.device:
                    raise ValueError(f"When using replicas, all Variables must have their device set: {op}")

    @contextlib.contextmanager
    def managed_session(self, master="", config=None, start_standard_services=True, close_summary_writer=True):
        """A prepared session; on exit the services stop (an exception raised inside is
        reported to the coordinator and re-raised from ``stop()``) and the session closes."""
        sess = None
        try:
            sess = self.prepare_or_wait_for_session(master=master, config=config,
                                                    start_standard_services=start_standard_services)
            yield sess
        except Exception as e:  # noqa: BLE001 - TF reports every exception to the coordinator
            self.request_stop(e)
        finally:
            try:
                self.stop(close_summary_writer=close_summary_writer)
            finally:
                try:
                    sess.close()
                except Exception:  # noqa: BLE001 - errors closing are ignored (TF)
                    pass

    # TF's CamelCase aliases.
    PrepareSession = prepare_or_wait_for_session
    StartQueueRunners = start_queue_runners
    StartStandardServices = start_standard_services
    Stop = stop
    RequestStop = request_stop
    Loop = loop
    ShouldStop = should_stop
    StopOnException = stop_on_exception
    WaitForStop = wait_for_stop
    SummaryComputed = summary_computed


class SVSummaryThread(LooperThread):
    """Computes the summary op (with the global step) every ``save_summaries_secs``."""

    def __init__(self, sv, sess):
        super().__init__(sv.coord, sv.save_summaries_secs)
        self._sv = sv
        self._sess = sess

    def run_loop(self):
        if self._sv.global_step is not None:
            summary_strs, global_step = self._sess.run([self._sv.summary_op, self._sv.global_step])
        else:
            summary_strs = self._sess.run(self._sv.summary_op)
            global_step = None
        if self._sv.summary_writer:
            logging.info("Recording summary at step %s.", global_step)
            self._sv.summary_writer.add_summary(summary_strs, global_step)


class SVStepCounterThread(LooperThread):
    """Writes ``<global step op>/sec`` every ``save_summaries_secs``."""

    def __init__(self, sv, sess, step_counter=None):
        super().__init__(sv.coord, sv.save_summaries_secs)
        self._sv = sv
        self._sess = sess
        self._last_time = 0.0
        self._last_step = 0
        step_counter = sv.global_step if step_counter is None else step_counter
        self._step_counter = step_counter
        self._summary_tag = f"{self._step_counter.op.name}/sec"

    def start_loop(self):
        self._last_time = time.time()
        self._last_step = training_util.global_step(self._sess, self._step_counter)

    def run_loop(self):
        from tfc.protos import Summary

        current_step = training_util.global_step(self._sess, self._step_counter)
        added_steps = current_step - self._last_step
        self._last_step = current_step
        current_time = time.time()
        elapsed_time = current_time - self._last_time
        self._last_time = current_time
        steps_per_sec = added_steps / elapsed_time if elapsed_time > 0.0 else float("inf")
        summary = Summary(value=[Summary.Value(tag=self._summary_tag, simple_value=steps_per_sec)])
        if self._sv.summary_writer:
            self._sv.summary_writer.add_summary(summary, current_step)
        logging.log_first_n(logging.INFO, "%s: %g", 10, self._summary_tag, steps_per_sec)


class SVTimerCheckpointThread(LooperThread):
    """Saves a checkpoint every ``save_model_secs`` (with a CHECKPOINT SessionLog)."""

    def __init__(self, sv, sess):
        super().__init__(sv.coord, sv.save_model_secs)
        self._sv = sv
        self._sess = sess

    def run_loop(self):
        from tfc.protos import SessionLog

        logging.info("Saving checkpoint to path %s", self._sv.save_path)
        self._sv.saver.save(self._sess, self._sv.save_path, global_step=self._sv.global_step)
        if self._sv.summary_writer and self._sv.global_step is not None:
            current_step = training_util.global_step(self._sess, self._sv.global_step)
            self._sv.summary_writer.add_session_log(
                SessionLog(status=SessionLog.CHECKPOINT, checkpoint_path=self._sv.save_path), current_step)
