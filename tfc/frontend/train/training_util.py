"""The global step (TF 1.15's python/training/training_util.py).

``create_global_step`` makes, at the root name scope, ``get_variable('global_step',
shape=[], dtype=int64, initializer=zeros_initializer(), trainable=False,
collections=[GLOBAL_VARIABLES, GLOBAL_STEP])`` — ops ``global_step``,
``global_step/Initializer/zeros``, ``global_step/Assign``, ``global_step/read``.
"""
from __future__ import annotations

import logging

from .. import dtypes
from ..graph import GraphKeys, Tensor, get_default_graph

_log = logging.getLogger("tfc")


def global_step(sess, global_step_tensor) -> int:
    """The value of the global step, as a Python int."""
    return int(sess.run(global_step_tensor))


def get_global_step(graph=None):
    """The global step variable (or tensor) of ``graph``: the only member of the
    GLOBAL_STEP collection, else the tensor named 'global_step:0', else None."""
    graph = graph or get_default_graph()
    global_step_tensor = None
    global_step_tensors = graph.get_collection(GraphKeys.GLOBAL_STEP)
    if len(global_step_tensors) == 1:
        global_step_tensor = global_step_tensors[0]
    elif not global_step_tensors:
        try:
            global_step_tensor = graph.get_tensor_by_name("global_step:0")
        except KeyError:
            return None
    else:
        _log.error("Multiple tensors in global_step collection.")
        return None
    assert_global_step(global_step_tensor)
    return global_step_tensor


def create_global_step(graph=None):
    """Create the global step variable in ``graph``; a ValueError if it exists."""
    from ..initializers import zeros_initializer
    from ..variable_scope import get_variable

    graph = graph or get_default_graph()
    if get_global_step(graph) is not None:
        raise ValueError('"global_step" already exists.')
    with graph.as_default() as g, g.name_scope(None):
        return get_variable(GraphKeys.GLOBAL_STEP, shape=[], dtype=dtypes.int64, initializer=zeros_initializer(),
                            trainable=False, collections=[GraphKeys.GLOBAL_VARIABLES, GraphKeys.GLOBAL_STEP])


def get_or_create_global_step(graph=None):
    """The global step of ``graph``, created if there is none."""
    graph = graph or get_default_graph()
    global_step_tensor = get_global_step(graph)
    if global_step_tensor is None:
        global_step_tensor = create_global_step(graph)
    return global_step_tensor


# The collection holding the global step's read tensor (TF's GLOBAL_STEP_READ_KEY).
GLOBAL_STEP_READ_KEY = "global_step_read_op_cache"


def _get_global_step_read(graph=None):
    """The global step's read tensor of ``graph`` (the GLOBAL_STEP_READ_KEY collection), or None."""
    graph = graph or get_default_graph()
    global_step_read_tensors = graph.get_collection(GLOBAL_STEP_READ_KEY)
    if len(global_step_read_tensors) > 1:
        raise RuntimeError(f"There are multiple items in collection {GLOBAL_STEP_READ_KEY}. There should be only one.")
    return global_step_read_tensors[0] if global_step_read_tensors else None


def _get_or_create_global_step_read(graph=None):
    """TF 1.15's training_util._get_or_create_global_step_read: the global step's value as
    a tensor the hooks fetch, ``global_step/cond/Merge + 0`` (``global_step/add``): a cond
    on IsVariableInitialized reading the variable, else its initial value. None without a
    global step."""
    from ..control_flow import cond
    from ..ops.state_ops import is_variable_initialized
    from ..variables import Variable

    graph = graph or get_default_graph()
    global_step_read_tensor = _get_global_step_read(graph)
    if global_step_read_tensor is not None:
        return global_step_read_tensor
    global_step_tensor = get_global_step(graph)
    if global_step_tensor is None:
        return None
    with graph.as_default() as g, g.name_scope(None):
        with g.name_scope(global_step_tensor.op.name + "/"):
            if isinstance(global_step_tensor, Variable):
                global_step_value = cond(is_variable_initialized(global_step_tensor), global_step_tensor.read_value,
                                         lambda: global_step_tensor.initial_value)
            else:
                global_step_value = global_step_tensor
            global_step_read_tensor = global_step_value + 0
            graph.add_to_collection(GLOBAL_STEP_READ_KEY, global_step_read_tensor)
    return _get_global_step_read(graph)


def _increment_global_step(increment, graph=None):
    """``assign_add(global_step, increment)`` after the global step's read tensor."""
    from ..graph import control_dependencies
    from ..ops.state_ops import assign_add

    graph = graph or get_default_graph()
    global_step_tensor = get_global_step(graph)
    if global_step_tensor is None:
        raise ValueError("Global step tensor should be created by tf.train.get_or_create_global_step before calling "
                         "increment.")
    global_step_read_tensor = _get_or_create_global_step_read(graph)
    with graph.as_default() as g, g.name_scope(None):
        with g.name_scope(global_step_tensor.op.name + "/"):
            with control_dependencies([global_step_read_tensor]):
                return assign_add(global_step_tensor, increment)


def write_graph(graph_or_graph_def, logdir, name, as_text=True):
    """training_util.write_graph (tf.train.write_graph)."""
    from ..graph_io import write_graph as _write_graph

    return _write_graph(graph_or_graph_def, logdir, name, as_text=as_text)


def assert_global_step(global_step_tensor) -> None:
    """TypeError unless ``global_step_tensor`` is a scalar integer Variable or Tensor."""
    from ..variables import Variable

    if not isinstance(global_step_tensor, (Variable, Tensor)):
        raise TypeError(f'Existing "global_step" must be a Variable or Tensor: {global_step_tensor}.')
    if not global_step_tensor.dtype.base_dtype.is_integer:
        raise TypeError(f'Existing "global_step" does not have integer type: {global_step_tensor.dtype}')
    shape = global_step_tensor.get_shape()
    if shape.ndims != 0 and shape.is_fully_defined():
        raise TypeError(f'Existing "global_step" is not scalar: {shape}')
