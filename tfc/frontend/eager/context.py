"""Eager mode (TF 1.x's ``tf.enable_eager_execution``): the process-wide switch and the
eager context graph.

Eager mode is a default graph of a special kind, an :class:`EagerGraph`: while it is the
default graph (no other graph entered with ``as_default()``), every op the frontend
creates runs at once (``create_op`` and ``apply_op`` hand it to
``tfc.frontend.eager.execute``) and nothing is kept: no Operation, no name, no graph
growth. Entering another graph (``with tf.Graph().as_default():``, or a ``defun`` trace)
is graph mode again, as in TF 1.x.

The switch is process-global, as in TF 1.x: ``enable_eager_execution()`` installs an
EagerGraph as the process's default graph, ``disable_eager_execution()`` puts the graph
that was there back. ``eager_mode()`` does both around a block (what the tests use).
"""
from __future__ import annotations

import contextlib
import threading

from .. import graph as _graph_module
from ..graph import Graph, get_default_graph

# Collections TF 1.x does not fill in eager mode (library code adds to them per call:
# losses, summaries, train ops, variables); everything else behaves as in a graph.
_DROPPED_COLLECTIONS = frozenset({
    "variables", "trainable_variables", "local_variables", "model_variables", "metric_variables", "losses",
    "regularization_losses", "summaries", "train_op", "update_ops", "moving_average_variables",
    "concatenated_variables", "saveable_objects", "trainable_resource_variables", "queue_runners",
})


class _NullContext:
    """A do-nothing context manager (control dependencies, colocation, devices in eager mode)."""

    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return False


_NULL = _NullContext()


class _EagerScratch(dict):
    """The eager graph's per-graph state: get_variable's store keeps no variables in eager
    mode (TF 1.x: ``_store_eager_variables`` is False), so every call makes a new one."""

    def __missing__(self, key):
        if key == "variable_store":
            from ..variable_scope import _VariableStore

            store = _VariableStore()
            store._vars = _NeverStored()
            self[key] = store
            return store
        raise KeyError(key)

    def __contains__(self, key):
        return key == "variable_store" or dict.__contains__(self, key)


class _NeverStored(dict):
    def __setitem__(self, key, value):
        pass


class EagerGraph(Graph):
    """The eager context: the default graph while eager execution is enabled."""

    _keep_on_reset = True  # tf.reset_default_graph() leaves eager mode on (graph.py)
    _is_eager = True

    def __init__(self):
        super().__init__()
        self._scratch = _EagerScratch()

    # -- op creation runs the op -----------------------------------------------------------
    def create_op(self, op_type, inputs=(), dtypes_=None, input_types=None, name=None, attrs=None, op_def=None,
                  compute_shapes=True, compute_device=True, control_inputs=()):
        from .execute import execute_create_op

        return execute_create_op(op_type, inputs, attrs, name)

    def _eager_apply(self, entry, inputs, attrs, name, control_inputs=()):
        """op_helper.apply_op's eager path: convert the inputs and run the op."""
        from .execute import eager_apply

        return eager_apply(entry, inputs, attrs, name)

    def _eager_constant(self, value, dtype, shape, verify_shape):
        """tf.constant of a number or a numpy array without a TensorProto (None: the
        general conversion, with TF's checks)."""
        from .execute import eager_constant

        return eager_constant(value, dtype, shape, verify_shape)

    # -- names are not uniquified in eager mode (TF 1.x) --------------------------------------
    def unique_name(self, name: str, mark_as_used: bool = True) -> str:
        return self._name_stack + "/" + name if self._name_stack else name

    # -- graph-only machinery is a no-op --------------------------------------------------
    def control_dependencies(self, control_inputs):
        return _NULL

    def colocate_with(self, op, ignore_existing: bool = False):
        return _NULL

    def device(self, device_name_or_function):
        return _NULL

    def add_to_collection(self, name, value) -> None:
        if name in _DROPPED_COLLECTIONS:
            return
        super().add_to_collection(name, value)

    def get_collection_ref(self, name) -> list:
        if name in _DROPPED_COLLECTIONS:
            return []  # what is appended is dropped
        return super().get_collection_ref(name)

    def finalize(self) -> None:
        pass

    def get_operations(self) -> list:
        return []


_STATE = {"enabled": False, "saved_graph": None, "graph": None}
_LOCK = threading.Lock()


def eager_graph() -> EagerGraph:
    """The eager context graph (made on first use)."""
    graph = _STATE["graph"]
    if graph is None:
        graph = _STATE["graph"] = EagerGraph()
    return graph


def executing_eagerly() -> bool:
    """tf.executing_eagerly(): True when ops run at once (eager enabled, no graph entered,
    not inside a defun trace)."""
    return getattr(get_default_graph(), "_is_eager", False)


def executing_eagerly_outside_functions() -> bool:
    return _STATE["enabled"]


def enable_eager_execution(config=None, device_policy=None, execution_mode=None) -> None:
    """tf.enable_eager_execution(): from now on ops run at once (process-wide)."""
    del config, device_policy, execution_mode
    with _LOCK:
        if _STATE["enabled"]:
            return
        _STATE["saved_graph"] = _graph_module._GLOBAL["default_graph"]
        _graph_module._GLOBAL["default_graph"] = eager_graph()
        _STATE["enabled"] = True


def disable_eager_execution() -> None:
    """Back to graph mode: the default graph is the one before eager mode was enabled."""
    with _LOCK:
        if not _STATE["enabled"]:
            return
        current = _graph_module._GLOBAL["default_graph"]
        if current is _STATE["graph"]:
            _graph_module._GLOBAL["default_graph"] = _STATE["saved_graph"]
        _STATE["saved_graph"] = None
        _STATE["enabled"] = False
        _STATE["graph"] = None  # a fresh eager context next time (its collections, variable scopes)


def is_enabled() -> bool:
    return _STATE["enabled"]


@contextlib.contextmanager
def eager_mode():
    """Eager execution inside the block, the previous mode after it (tests, scripts)."""
    was_enabled = _STATE["enabled"]
    enable_eager_execution()
    try:
        yield
    finally:
        if not was_enabled:
            disable_eager_execution()


@contextlib.contextmanager
def eager_scope():
    """Run the block eagerly even inside a graph (a defun trace lifting variable creation
    out to the eager context, as TF's init_scope does)."""
    graph = eager_graph()
    with graph.as_default():
        yield graph
