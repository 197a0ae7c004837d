"""``tf.contrib.summary`` of TF 1.x (python/ops/summary_ops_v2.py): summaries written by a
default writer, the way TF 1.x eager programs log to TensorBoard.

    writer = tf.contrib.summary.create_file_writer(logdir, flush_millis=10000)
    with writer.as_default(), tf.contrib.summary.always_record_summaries():
        tf.contrib.summary.scalar("loss", loss)            # step: the global step
        tf.contrib.summary.histogram("weights", w, step=3)

``create_file_writer`` opens ``logdir/events.out.tfevents.<secs>.<host>.v2`` at once (its
first event is ``file_version: "brain.Event:2"``); writers are shared by ``name``
(default ``"logdir:" + logdir``), as TF's summary-writer resources are. Summaries are
recorded only inside ``always_record_summaries()`` / ``record_summaries_every_n_global_steps
(n)`` / ``record_if(cond)`` (TF 1.x's contrib default is *not* recording) and while a
writer is the default (``as_default()`` flushes when it exits). A scalar is one
``simple_value`` (the tensor's first value as float32), a histogram TF's default
histogram (tfc/frontend/summary.py's ``histogram_proto``), tagged like TF: the name under
the enclosing name scopes, ``family/family/name`` with a family. The step defaults to the
global step (``tf.train.get_or_create_global_step()``).

Executing eagerly, a summary is written when the call runs and the call returns
``tf.constant(True)`` (``False`` when not recording; ``None`` without a default writer).
In a graph — a plain TF1 graph, or a ``defun`` / ``tf.function`` trace, which runs it at
every call — it is a ``WriteScalarSummary`` / ``WriteHistogramSummary`` host op that writes
when the step runs (``all_summary_ops()`` lists them; the writer is named by an attr, the
recording condition is an input).
"""
from __future__ import annotations

import contextlib
import threading
import time
import weakref

import numpy as np

from tfc import _api

_api.build()  # the TF1 namespace (its op registry) first

from tfc.frontend import dtypes, errors  # noqa: E402
from tfc.frontend.graph import get_default_graph  # noqa: E402
from tfc.frontend.registry import Attr, OpType, register  # noqa: E402
from tfc.frontend.summary import REAL_NUMBER_TYPES, FileWriter, histogram_proto, summary_scope  # noqa: E402

_SUMMARY_COLLECTION = "_SUMMARY_V2"  # ops.GraphKeys._SUMMARY_COLLECTION
_SUMMARY_WRITER_INIT_COLLECTION_NAME = "_SUMMARY_WRITER_V2"


class _SummaryState(threading.local):
    def __init__(self):
        super().__init__()
        self.is_recording = None
        self.writer = None


_summary_state = _SummaryState()
_RESOURCES: "weakref.WeakValueDictionary" = weakref.WeakValueDictionary()  # shared name -> FileWriter
_RESOURCES_LOCK = threading.Lock()


def _eager() -> bool:
    return getattr(get_default_graph(), "_is_eager", False)


def _resource(key: str, op=None) -> FileWriter:
    resource = _RESOURCES.get(key)
    if resource is None:
        raise errors.NotFoundError(None, op, f"Resource localhost/{key}/N10tensorflow22SummaryWriterInterfaceE "
                                             "does not exist.")
    return resource


# -- writers -----------------------------------------------------------------------------------
class SummaryWriter:
    """A summary writer (TF's ``_LegacyResourceSummaryWriter``): ``as_default()``,
    ``set_as_default()``, ``init()``, ``flush()``, ``close()``."""

    def __init__(self, resource: FileWriter, key: str):
        self._resource = resource  # the writer object keeps its event file alive (graphs using it too)
        self._key = key
        if not _eager():
            from tfc.frontend.ops.control_flow_ops import no_op

            get_default_graph().add_to_collection(_SUMMARY_WRITER_INIT_COLLECTION_NAME,
                                                  no_op(name="create_summary_file_writer"))

    def set_as_default(self):
        """Makes this the default writer of the thread (until another is set)."""
        _summary_state.writer = self

    @contextlib.contextmanager
    def as_default(self):
        """The default writer inside the block; flushed when the block exits."""
        old = _summary_state.writer
        try:
            _summary_state.writer = self
            yield self
            self.flush()
        finally:
            _summary_state.writer = old

    def init(self):
        """The writer is created with its event file already: nothing to initialise."""
        if _eager():
            return None
        from tfc.frontend.ops.control_flow_ops import no_op

        return no_op(name="create_summary_file_writer")

    def flush(self):
        if _eager():
            self._resource.flush()
            return None
        return _writer_op("FlushSummaryWriter", [], self, name="FlushSummaryWriter")

    def close(self):
        if _eager():
            self._resource.close()
            return None
        return _writer_op("CloseSummaryWriter", [], self, name="CloseSummaryWriter")

    @property
    def logdir(self) -> str:
        return self._resource.get_logdir()


class _NoopSummaryWriter(SummaryWriter):
    """``create_file_writer(None)``: a writer that writes nothing."""

    def __init__(self):  # noqa: D107 - no resource
        self._resource = None
        self._key = None

    def init(self):
        return None

    def flush(self):
        return None

    def close(self):
        return None

    @contextlib.contextmanager
    def as_default(self):
        yield self

    def set_as_default(self):
        pass


def create_file_writer(logdir, max_queue=None, flush_millis=None, filename_suffix=None, name=None):
    """A writer of the event file ``logdir/events.out.tfevents.<secs>.<host>.v2`` (a writer
    made earlier with the same ``name`` is reused, its file too)."""
    if logdir is None:
        return _NoopSummaryWriter()
    logdir = str(logdir)
    max_queue = 10 if max_queue is None else int(_value(max_queue))
    flush_millis = 2 * 60 * 1000 if flush_millis is None else int(_value(flush_millis))
    filename_suffix = ".v2" if filename_suffix is None else _text(_value(filename_suffix))
    key = "logdir:" + logdir if name is None else str(name)
    with _RESOURCES_LOCK:
        resource = _RESOURCES.get(key)
        if resource is None or resource._closed:
            resource = FileWriter(logdir, max_queue=max_queue, flush_secs=flush_millis / 1000.0,
                                  filename_suffix=filename_suffix)
            _RESOURCES[key] = resource
    return SummaryWriter(resource, key)


def create_summary_file_writer(*args, **kwargs):
    """The old name of ``create_file_writer``."""
    return create_file_writer(*args, **kwargs)


def _value(x):
    return x.numpy() if hasattr(x, "numpy") else x


def _text(x) -> str:
    x = np.asarray(x, dtype=object)[()] if isinstance(x, np.ndarray) else x
    return x.decode() if isinstance(x, bytes) else str(x)


# -- recording conditions ----------------------------------------------------------------------
@contextlib.contextmanager
def record_if(condition):
    """Record summaries in the block when ``condition`` (a bool, a bool tensor, or a callable
    giving one, evaluated at each summary) holds."""
    old = _summary_state.is_recording
    try:
        _summary_state.is_recording = condition
        yield
    finally:
        _summary_state.is_recording = old


def always_record_summaries():
    return record_if(True)


def never_record_summaries():
    return record_if(False)


def record_summaries_every_n_global_steps(n, global_step=None):
    """Record when ``global_step % n == 0`` (the global step by default)."""
    from tfc.frontend.ops.math_ops import equal

    if global_step is None:
        global_step = _global_step()

    def should():
        return equal(global_step % n, 0)

    return record_if(should if _eager() else should())


def should_record_summaries():
    """Whether summaries would be recorded now (a bool tensor)."""
    from tfc.frontend.ops.constant_op import constant

    condition = _condition()
    if isinstance(condition, bool):
        return constant(condition)
    return condition


def _condition():
    """The recording condition now: a Python bool or a bool tensor (graph mode)."""
    if _summary_state.writer is None:
        return False
    condition = _summary_state.is_recording
    if callable(condition):
        condition = condition()
    if condition is None:
        return False  # TF 1.x's contrib summaries record only when asked to
    if isinstance(condition, (bool, np.bool_)):
        return bool(condition)
    from tfc.frontend.tensor_util import constant_value

    known = constant_value(condition) if hasattr(condition, "dtype") else np.asarray(condition)
    if known is not None:
        return bool(known)
    return condition


def has_default_writer() -> bool:
    return _summary_state.writer is not None


def _global_step():
    from tfc.frontend.graph import init_scope
    from tfc.frontend.train.training_util import get_or_create_global_step

    with init_scope():  # a defun trace uses the eager global step
        return get_or_create_global_step()


def _choose_step(step):
    from tfc.frontend.convert import convert_to_tensor

    if step is None:
        return _global_step()
    return convert_to_tensor(step, dtype=dtypes.int64)


# -- summaries ---------------------------------------------------------------------------------
def _write(resource: FileWriter, step, summary) -> None:
    from tfc.protos import Event

    if resource._closed:
        return
    resource.add_event(Event(wall_time=time.time(), step=int(step), summary=summary))


def _scalar_summary(tag: str, value, op=None):
    from tfc.protos import Summary

    flat = np.asarray(value).reshape(-1)
    if flat.size == 0:
        raise errors.InvalidArgumentError(None, op, f"Index out of range using input dim 0; input has only 0 dims "
                                                    f"(scalar summary '{tag}' of an empty tensor)")
    summary = Summary()
    summary.value.add(tag=tag, simple_value=float(np.float32(flat[0])))
    return summary


def _histogram_summary(tag: str, value, op=None):
    from tfc.protos import Summary

    flat = np.asarray(value).astype(np.float64).reshape(-1)
    bad = ~np.isfinite(flat)
    if bad.any():
        first = flat[np.argmax(bad)]
        raise errors.InvalidArgumentError(None, op, f"{'Nan' if np.isnan(first) else 'Infinity'} in summary "
                                                    f"histogram for: {tag}")
    summary = Summary()
    summary.value.add(tag=tag).histo.CopyFrom(histogram_proto(flat))
    return summary


_MAKERS = {"WriteScalarSummary": _scalar_summary, "WriteHistogramSummary": _histogram_summary}


def _summary(op_type: str, name, tensor, family, step):
    from tfc.frontend.convert import convert_to_tensor
    from tfc.frontend.graph import name_scope
    from tfc.frontend.ops.constant_op import constant

    writer = _summary_state.writer
    if writer is None:
        if _eager():
            return None
        from tfc.frontend.ops.control_flow_ops import no_op

        return no_op()
    if writer._resource is None:  # the no-op writer
        return constant(False)
    condition = _condition()
    if condition is False:
        return constant(False)
    graph = get_default_graph()
    scope_name = graph.get_name_scope() if hasattr(graph, "get_name_scope") else ""
    with name_scope(scope_name + "/" if scope_name else None), summary_scope(name, family, values=[tensor]) as (
            tag, scope):
        if _eager():
            value = convert_to_tensor(tensor)
            if value.dtype.base_dtype not in REAL_NUMBER_TYPES:
                raise TypeError(f"Value passed to parameter 'value' has DataType {value.dtype.name} not in list of "
                                f"allowed values: {', '.join(d.name for d in REAL_NUMBER_TYPES)}")
            step_value = int(np.asarray(_choose_step(step)))
            _write(writer._resource, step_value, _MAKERS[op_type](tag, value.numpy()))
            return constant(True)
        step_tensor = _choose_step(step)
        value = convert_to_tensor(tensor)
        record = condition if not isinstance(condition, bool) else constant(True)
        op = _writer_op(op_type, [step_tensor, tag, value, record], writer, name=scope)
        graph.add_to_collection(_SUMMARY_COLLECTION, op)
        from tfc.frontend.graph import control_dependencies

        with control_dependencies([op]):
            return constant(True)


def _writer_op(op_type: str, inputs: list, writer: SummaryWriter, name=None):
    from tfc.frontend.op_helper import apply_op

    graph = get_default_graph()
    graph._scratch.setdefault("tfc.contrib.summary.writers", {})[writer._key] = writer._resource  # kept alive
    return apply_op(op_type, inputs, attrs={"writer": writer._key}, name=name)


def scalar(name, tensor, family=None, step=None):
    """Writes a scalar summary (one ``simple_value``) if recording."""
    return _summary("WriteScalarSummary", name, tensor, family, step)


def histogram(name, tensor, family=None, step=None):
    """Writes a histogram summary if recording."""
    return _summary("WriteHistogramSummary", name, tensor, family, step)


def flush(writer=None, name=None):
    """Flushes ``writer`` (the default writer when None)."""
    del name
    if writer is None:
        writer = _summary_state.writer
        if writer is None:
            if _eager():
                return None
            from tfc.frontend.ops.control_flow_ops import no_op

            return no_op()
    if isinstance(writer, SummaryWriter):
        return writer.flush()
    raise ValueError(f"Invalid argument to flush(): {writer!r}")


def graph(param, step=None, name=None):
    """Writes a graph (a ``tf.Graph``, a GraphDef or its serialization) to the default writer."""
    from tfc.protos import Event

    if not _eager():
        raise NotImplementedError("tfc: tf.contrib.summary.graph is implemented in eager mode only; in a graph use "
                                  "tf.contrib.summary.initialize(graph=...) or tf.summary.FileWriter.add_graph")
    writer = _summary_state.writer
    if writer is None or writer._resource is None:
        return None
    if hasattr(param, "as_graph_def"):
        data = param.as_graph_def(add_shapes=True).SerializeToString()
    elif hasattr(param, "SerializeToString"):
        data = param.SerializeToString()
    else:
        data = bytes(_value(param))
    step = int(np.asarray(_choose_step(step)))
    writer._resource.add_event(Event(wall_time=time.time(), step=step, graph_def=data))
    return None


def all_summary_ops():
    """The summary ops of the default graph (None when executing eagerly)."""
    if _eager():
        return None
    return get_default_graph().get_collection(_SUMMARY_COLLECTION)


def summary_writer_initializer_op():
    if _eager():
        raise RuntimeError("tf.contrib.summary.summary_writer_initializer_op is only supported in graph mode.")
    return get_default_graph().get_collection(_SUMMARY_WRITER_INIT_COLLECTION_NAME)


def initialize(graph=None, session=None):  # noqa: F811 - TF's argument name
    """Graph mode: run the writers' initializers and write ``graph``; a no-op when eager."""
    from tfc.frontend.graph import get_default_session

    if _eager():
        return
    writer = _summary_state.writer
    if writer is None:
        raise RuntimeError("No default tf.contrib.summary.SummaryWriter found")
    if session is None:
        session = get_default_session()
        if session is None:
            raise ValueError("session must be passed if no default session exists")
    session.run(summary_writer_initializer_op())
    if graph is not None and writer._resource is not None:
        writer._resource.add_graph(graph if hasattr(graph, "as_graph_def") else None,
                                   graph_def=None if hasattr(graph, "as_graph_def") else graph)


def eval_dir(model_dir, name=None):
    import os

    return os.path.join(model_dir, "eval" if not name else "eval_" + name)


# -- the host ops a graph (or a defun trace) runs ----------------------------------------------
def _no_outputs(op):
    return []


class _WriteSummary(OpType):
    """Writes one summary to the writer named by ``writer`` when ``record`` holds. (TF's op
    takes the writer as a resource input; tfc names it by attr.)"""

    inputs = ["step: int64", "tag: string", "value: T", "record: bool"]
    outputs = []
    attrs = {"T": Attr("type", allowed=REAL_NUMBER_TYPES), "writer": Attr("string")}
    host_only = True
    stateful = True
    not_differentiable = True
    infer = _no_outputs

    def host(op, step, tag, value, record):
        if not bool(np.asarray(record)):
            return []
        tag = _text(np.asarray(tag, dtype=object)[()])
        _write(_resource(op._attrs["writer"], op), np.asarray(step), _MAKERS[op.type](tag, value, op))
        return []


@register
class WriteScalarSummary(_WriteSummary):
    pass


@register
class WriteHistogramSummary(_WriteSummary):
    pass


@register
class FlushSummaryWriter(OpType):
    inputs = []
    outputs = []
    attrs = {"writer": Attr("string")}
    host_only = True
    stateful = True
    not_differentiable = True
    infer = _no_outputs

    def host(op):
        resource = _resource(op._attrs["writer"], op)
        if not resource._closed:
            resource.flush()
        return []


@register
class CloseSummaryWriter(OpType):
    inputs = []
    outputs = []
    attrs = {"writer": Attr("string")}
    host_only = True
    stateful = True
    not_differentiable = True
    infer = _no_outputs

    def host(op):
        _resource(op._attrs["writer"], op).close()
        return []


def __getattr__(name):  # TF 1.x's other contrib.summary names (image, audio, generic, create_db_writer...)
    if name.startswith("__"):
        raise AttributeError(f"module 'tfc.contrib.summary' has no attribute {name!r}")
    from tfc._missing import NotImplementedYet

    raise NotImplementedYet(f"tf.contrib.summary.{name}")

