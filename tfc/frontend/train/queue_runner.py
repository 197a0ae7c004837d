"""tf.train.QueueRunner, add_queue_runner and start_queue_runners (TF 1.15's
python/training/queue_runner_impl.py).

A QueueRunner holds a queue and the ops that fill it; ``create_threads(sess, coord)`` starts
one thread per enqueue op, each running its op in a loop until the coordinator asks to
stop or the queue closes (an error of ``queue_closed_exception_types``, OutOfRangeError by
default: the last thread of the session to see it runs ``close_op``); any other error is
reported to the coordinator. With a coordinator, one more thread waits for the stop request
and runs ``cancel_op`` (closing the queue and cancelling pending enqueues), which unblocks
the enqueue threads; a thread whose run is cancelled because its session closed after the
stop request (a SyncReplicasOptimizer's chief waiting in ``take_grad``) ends quietly, where
TF's would die printing the CancelledError. The threads share the session with the thread that dequeues: tfc's
sessions take concurrent ``run`` calls, and a blocked enqueue or dequeue lets go of the
session (tfc/runtime/step_context.py).
"""
from __future__ import annotations

import threading
import weakref

from .. import errors
from .. import tf_logging as logging
from ..graph import GraphKeys, add_to_collection, get_collection, get_default_session


class QueueRunner:
    """Runs the enqueue ops of a queue in threads (see the module docstring)."""

    def __init__(self, queue=None, enqueue_ops=None, close_op=None, cancel_op=None,
                 queue_closed_exception_types=None, queue_runner_def=None, import_scope=None):
        self._lock = threading.Lock()
        self._runs_per_session: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
        self._exceptions_raised: list = []
        if queue_runner_def:
            if queue:
                raise ValueError("queue_runner_def and queue are mutually exclusive.")
            self._init_from_proto(queue_runner_def, import_scope=import_scope)
            return
        if not queue or not enqueue_ops:
            raise ValueError("Must provide queue and enqueue_ops.")
        self._queue = queue
        self._enqueue_ops = list(enqueue_ops)
        self._close_op = close_op
        self._cancel_op = cancel_op
        if queue_closed_exception_types is not None:
            if (not isinstance(queue_closed_exception_types, tuple) or not queue_closed_exception_types
                    or not all(isinstance(t, type) and issubclass(t, errors.OpError)
                               for t in queue_closed_exception_types)):
                raise TypeError("queue_closed_exception_types, when provided, must be a tuple of tf.error types, "
                                f"but saw: {queue_closed_exception_types}")
        self._queue_closed_exception_types = queue_closed_exception_types
        if self._close_op is None:  # no more will come, but what is pending stays
            self._close_op = self._queue.close()
        if self._cancel_op is None:  # an error: unblock everything
            self._cancel_op = self._queue.close(cancel_pending_enqueues=True)
        if not self._queue_closed_exception_types:
            self._queue_closed_exception_types = (errors.OutOfRangeError,)
        else:
            self._queue_closed_exception_types = tuple(self._queue_closed_exception_types)

    def _init_from_proto(self, queue_runner_def, import_scope=None) -> None:
        from ..graph import get_default_graph
        from ..saver import _prepend_name_scope

        graph = get_default_graph()

        def element(name):
            return graph.as_graph_element(_prepend_name_scope(name, import_scope))

        self._queue = element(queue_runner_def.queue_name)  # (the queue's op: it has the queue's name)
        self._enqueue_ops = [element(name) for name in queue_runner_def.enqueue_op_name]
        self._close_op = element(queue_runner_def.close_op_name)
        self._cancel_op = element(queue_runner_def.cancel_op_name)
        self._queue_closed_exception_types = tuple(
            errors.exception_type_from_error_code(code) for code in queue_runner_def.queue_closed_exception_types)
        if not self._queue_closed_exception_types:  # (a QueueRunnerDef older than the field)
            self._queue_closed_exception_types = (errors.OutOfRangeError,)

    @property
    def queue(self):
        return self._queue

    @property
    def enqueue_ops(self):
        return self._enqueue_ops

    @property
    def close_op(self):
        return self._close_op

    @property
    def cancel_op(self):
        return self._cancel_op

    @property
    def queue_closed_exception_types(self):
        return self._queue_closed_exception_types

    @property
    def exceptions_raised(self):
        """The exceptions the threads raised (when they had no coordinator to report to)."""
        return self._exceptions_raised

    @property
    def name(self):
        """The name of the queue."""
        return self._queue.name

    def to_proto(self, export_scope=None):
        """A QueueRunnerDef (what export_meta_graph keeps in the QUEUE_RUNNERS collection), or
        None when the queue is outside ``export_scope``."""
        from tfc.protos.queue_runner_pb2 import QueueRunnerDef

        from ..saver import _strip_name_scope

        if export_scope is not None and not self.queue.name.startswith(export_scope):
            return None
        proto = QueueRunnerDef(queue_name=_strip_name_scope(self.queue.name, export_scope))
        proto.enqueue_op_name.extend(_strip_name_scope(op.name, export_scope) for op in self.enqueue_ops)
        proto.close_op_name = _strip_name_scope(self.close_op.name, export_scope)
        proto.cancel_op_name = _strip_name_scope(self.cancel_op.name, export_scope)
        proto.queue_closed_exception_types.extend(errors.error_code_from_exception_type(cls)
                                                  for cls in self._queue_closed_exception_types)
        return proto

    @staticmethod
    def from_proto(queue_runner_def, import_scope=None):
        return QueueRunner(queue_runner_def=queue_runner_def, import_scope=import_scope)

    def _run(self, sess, enqueue_op, coord=None) -> None:
        decremented = False
        try:
            enqueue_callable = sess.make_callable(enqueue_op)
            while True:
                if coord and coord.should_stop():
                    break
                try:
                    enqueue_callable()
                except self._queue_closed_exception_types:
                    with self._lock:  # the queue was closed: the last thread closes it for good
                        self._runs_per_session[sess] -= 1
                        decremented = True
                        if self._runs_per_session[sess] == 0:
                            try:
                                sess.run(self._close_op)
                            except Exception as e:  # noqa: BLE001 - errors closing are ignored (TF)
                                logging.vlog(1, "Ignored exception: %s", str(e))
                        return
        except Exception as e:  # noqa: BLE001 - every other error goes to the coordinator
            if coord and coord.should_stop() and isinstance(e, errors.CancelledError):
                return  # its session closed after the stop request (TF's thread dies with the error printed)
            if coord:
                coord.request_stop(e)
            else:
                logging.error("Exception in QueueRunner: %s", str(e))
                with self._lock:
                    self._exceptions_raised.append(e)
                raise
        finally:
            if not decremented:
                with self._lock:
                    self._runs_per_session[sess] -= 1

    def _close_on_stop(self, sess, cancel_op, coord) -> None:
        coord.wait_for_stop()
        try:
            sess.run(cancel_op)
        except Exception as e:  # noqa: BLE001 - errors cancelling are ignored (TF)
            logging.vlog(1, "Ignored exception: %s", str(e))

    def create_threads(self, sess, coord=None, daemon=False, start=False) -> list:
        """The threads running the enqueue ops in ``sess`` (none if they run already), and,
        with ``coord``, the one closing the queue when it asks to stop."""
        with self._lock:
            if self._runs_per_session.get(sess, 0) > 0:
                return []  # already started
            self._runs_per_session[sess] = len(self._enqueue_ops)
            self._exceptions_raised = []
        threads = [threading.Thread(target=self._run, args=(sess, op, coord),
                                    name=f"QueueRunnerThread-{self.name}-{op.name}") for op in self._enqueue_ops]
        if coord:
            threads.append(threading.Thread(target=self._close_on_stop, args=(sess, self._cancel_op, coord),
                                            name=f"QueueRunnerThread-{self.name}-close_on_stop"))
        for thread in threads:
            if coord:
                coord.register_thread(thread)
            if daemon:
                thread.daemon = True
            if start:
                thread.start()
        return threads


def add_queue_runner(qr, collection=GraphKeys.QUEUE_RUNNERS) -> None:
    """Adds ``qr`` to the graph's ``collection`` (QUEUE_RUNNERS)."""
    add_to_collection(collection, qr)


def start_queue_runners(sess=None, coord=None, daemon=True, start=True, collection=GraphKeys.QUEUE_RUNNERS) -> list:
    """Starts the threads of every QueueRunner of ``collection`` in ``sess`` (the default
    session when None); returns them."""
    from tfc.runtime.session import BaseSession

    if sess is None:
        sess = get_default_session()
        if not sess:
            raise ValueError("Cannot start queue runners: No default session is registered. Use `with "
                             "sess.as_default()` or pass an explicit session to tf.start_queue_runners(sess=sess)")
    if not isinstance(sess, BaseSession):
        if sess.__class__.__name__ in ("MonitoredSession", "SingularMonitoredSession"):
            return []  # (TF: they start their queue runners themselves)
        raise TypeError(f"sess must be a `tf.Session` object. Given class: {sess.__class__}")
    with sess.graph.as_default():
        queue_runners = get_collection(collection)
        if not queue_runners:
            logging.warning("`tf.train.start_queue_runners()` was called when no queue runners were defined. You "
                            "can safely remove the call to this deprecated function.")
        threads = []
        for qr in queue_runners:
            threads.extend(qr.create_threads(sess, coord=coord, daemon=daemon, start=start))
    return threads


def _namespace():
    """``tf.train.queue_runner``: the same three names."""
    import types

    module = types.ModuleType("tfc.train.queue_runner")
    module.__dict__.update({"QueueRunner": QueueRunner, "add_queue_runner": add_queue_runner,
                            "start_queue_runners": start_queue_runners})
    return module


EXPORTS = {"QueueRunner": QueueRunner, "add_queue_runner": add_queue_runner,
           "start_queue_runners": start_queue_runners, "queue_runner": _namespace()}
