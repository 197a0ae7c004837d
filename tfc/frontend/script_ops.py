"""tf.py_func and tf.numpy_function (TF 1.15's script_ops in graph mode), as host ops.

``py_func(func, inp, Tout)`` adds a ``PyFunc`` node (``PyFuncStateless`` when
``stateful=False``) with TF's attrs ``Tin``, ``Tout`` and ``token``; the token
(``pyfunc_<n>``) names ``func`` in a process-wide registry (TF's ``FuncRegistry``: weak
values, the graph holds the strong references). The node runs in Python on the host when
a step needs it (see ``tfc/runtime/host.py``):

- its inputs are fed/constant/host values: it runs *before* the compiled program and its
  outputs are fed to the program like feeds (compiled ops may consume them);
- its inputs come from compiled ops: it runs *after* the program on the values the program
  returns; then no compiled op may consume its outputs (the planner refuses that graph
  with a message naming both ops: a program is not split around a py_func yet).

Outputs have unknown shapes unless the caller sets them. Errors are TF's: an exception in
``func`` is an ``UnknownError`` (``InvalidArgumentError`` for ValueError/TypeError,
``OutOfRangeError`` for StopIteration...) whose message is the exception and its traceback;
a wrong dtype or number of results is an ``InvalidArgumentError`` with TF's kernel text.
"""
from __future__ import annotations

import threading
import traceback
import weakref

import numpy as np

from . import dtypes, errors
from .convert import convert_to_tensor
from .graph import get_default_graph, name_scope
from .registry import Attr, OpType, register
from .tensor_shape import TensorShape


class FuncRegistry:
    """Python callables of PyFunc nodes, by token (TF's script_ops.FuncRegistry)."""

    def __init__(self):
        self._lock = threading.Lock()
        self._unique_id = 0
        self._funcs = weakref.WeakValueDictionary()

    def insert(self, func) -> str:
        with self._lock:
            unique_id = self._unique_id
            self._unique_id += 1
        token = f"pyfunc_{unique_id}"
        self._funcs[token] = func
        return token

    def remove(self, token) -> None:
        self._funcs.pop(token, None)

    def size(self) -> int:
        return len(self._funcs)

    @staticmethod
    def _convert(value):
        result = np.asarray(value, order="C")
        if result.dtype.char in "SU":
            out = np.empty(result.shape, dtype=object)
            for index, item in np.ndenumerate(result):
                out[index] = item.encode("utf-8") if isinstance(item, str) else bytes(item)
            return out
        return result

    def __call__(self, token, args):
        func = self._funcs.get(token, None)
        if func is None:
            raise ValueError("callback %s is not found" % token)
        ret = func(*args)
        if isinstance(ret, bytes):
            ret = [ret]
        if isinstance(ret, (tuple, list)):
            return [self._convert(x) for x in ret]
        return self._convert(ret)


_py_funcs = FuncRegistry()


def _text(value) -> str:
    return value.decode("utf-8") if isinstance(value, bytes) else str(value)


def _type_string(dtype) -> str:
    from .graph_io import _tf_type_name

    return _tf_type_name(dtype)


def _exception_status(op, exc):
    """TF's py_func.cc: the error class for a Python exception, and PyExceptionFetch's text."""
    tb = exc.__traceback__
    if tb is not None and tb.tb_frame.f_code is _run.__code__:  # start at the registry's call, as TF's text does
        tb = tb.tb_next
    text = f"{type(exc).__name__}: {exc}\n" + "\n".join(traceback.format_exception(type(exc), exc, tb)) + "\n"
    if isinstance(exc, (ValueError, TypeError)):
        cls = errors.InvalidArgumentError
    elif isinstance(exc, StopIteration):
        cls = errors.OutOfRangeError
    elif isinstance(exc, MemoryError):
        cls = errors.ResourceExhaustedError
    elif isinstance(exc, NotImplementedError):
        cls = errors.UnimplementedError
    else:
        cls = errors.UnknownError
    return cls(None, op, text)


def _input_value(value):
    array = np.asarray(value)
    if array.dtype.kind in "SU":
        array = array.astype(object)
    return np.array(array, copy=True)


def _run(op, *values):
    token = _text(op._attrs["token"])
    want = list(op._attrs["Tout"])
    try:
        result = _py_funcs(token, [_input_value(v) for v in values])
    except errors.OpError:
        raise
    except Exception as e:  # noqa: BLE001 - every Python error becomes a TF status, as TF's kernel does
        raise _exception_status(op, e).with_traceback(None) from e
    if isinstance(result, list):
        outs = result
    elif result.dtype == object and result.ndim == 0 and result[()] is None:
        outs = []
    else:
        outs = [result]
    if len(outs) != len(want):
        raise errors.InvalidArgumentError(None, op, f"{token} returns {len(outs)} values, but expects to see "
                                                    f"{len(want)} values.")
    converted = []
    for i, (value, dtype) in enumerate(zip(outs, want)):
        dtype = dtypes.as_dtype(dtype).base_dtype
        if value.dtype == object:
            got = dtypes.string
            if not all(isinstance(item, (bytes, str)) for item in value.reshape(-1)):
                raise errors.UnimplementedError(None, op, "Unsupported object type " + type(
                    next(item for item in value.reshape(-1) if not isinstance(item, (bytes, str)))).__name__)
            value = np.vectorize(lambda x: x.encode("utf-8") if isinstance(x, str) else x, otypes=[object])(value) \
                if value.size else value
        else:
            try:
                got = dtypes.as_dtype(value.dtype)
            except (TypeError, ValueError, KeyError):
                raise errors.UnimplementedError(None, op, f"Unsupported numpy type {value.dtype}") from None
        if got != dtype:
            raise errors.InvalidArgumentError(None, op, f"{i}-th value returned by {token} is {_type_string(got)}, "
                                                        f"but expects {_type_string(dtype)}")
        converted.append(value)
    return converted


class _PyFuncBase(OpType):
    inputs = ["input: Tin"]
    outputs = ["output: Tout"]
    attrs = {"token": Attr("string"), "Tin": Attr("list(type)"), "Tout": Attr("list(type)")}
    host_only = True
    not_differentiable = True  # TF: ops.NotDifferentiable("PyFunc")
    takes_string_constants = True

    def infer(op):
        return [TensorShape(None) for _ in op._attrs["Tout"]]

    host = staticmethod(_run)


@register
class PyFunc(_PyFuncBase):
    """Calls a Python function (by ``token``) on numpy values; stateful."""

    stateful = True


@register
class PyFuncStateless(_PyFuncBase):
    """PyFunc that TF may constant-fold or deduplicate."""

    stateful = False


def _internal_py_func(func, inp, Tout, stateful=True, name=None):
    if not callable(func):
        raise ValueError("Expected func to be callable, got func of type {}".format(type(func)))
    is_list_or_tuple = isinstance(Tout, (list, tuple))
    Tout = list(Tout) if is_list_or_tuple else [Tout]
    Tout = [dtypes.as_dtype(t).base_dtype for t in Tout]
    graph = get_default_graph()
    token = _py_funcs.insert(func)
    # The graph keeps func alive (the registry's references are weak), as TF's
    # graph._py_funcs_used_in_graph does.
    if not hasattr(graph, "_py_funcs_used_in_graph"):
        graph._py_funcs_used_in_graph = []
    graph._py_funcs_used_in_graph.append(func)
    op_type = "PyFunc" if stateful else "PyFuncStateless"
    inp = list(inp or [])
    with name_scope(name, op_type, inp) as scope:
        tensors = [convert_to_tensor(v, name=f"input_{i}" if len(inp) > 1 else "input") for i, v in enumerate(inp)]
        attrs = {"token": token, "Tin": [t.dtype.base_dtype for t in tensors], "Tout": Tout}
        op = get_default_graph().create_op(op_type, tensors, name=scope, attrs=attrs)
    outputs = op.outputs
    if not outputs:
        return op
    return list(outputs) if is_list_or_tuple else outputs[0]


def py_func(func, inp, Tout, stateful=True, name=None):
    """Wraps a python function and uses it as a TensorFlow op (runs on the host)."""
    return _internal_py_func(func=func, inp=inp, Tout=Tout, stateful=stateful, name=name)


def numpy_function(func, inp, Tout, name=None):
    """tf.numpy_function: py_func, always stateful."""
    return py_func(func, inp, Tout, stateful=True, name=name)


TF_EXPORTS = {"py_func": py_func, "numpy_function": numpy_function}
