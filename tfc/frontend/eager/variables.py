"""Variables in eager mode (TF 1.x's eager ResourceVariable): ``tf.Variable`` and
``tf.get_variable`` made while executing eagerly (or inside a defun trace, lifted out
as TF's init_scope does) are EagerVariables.

The value lives in a numpy buffer the variable owns. Reads hand out the buffer itself
(no copy) and mark it shared; an op that writes the variable (``assign_add``, an
optimizer's ``ApplyAdam``...: a compiled kernel taking the buffer as its ref argument and
updating it in place) first copies a shared buffer, so values read earlier never change.
Inside a defun trace a variable is a ``VariableV2`` op of the trace graph bound to the
same buffer when the program runs.
"""
from __future__ import annotations

import itertools

import numpy as np

from ..graph import GraphKeys, get_default_graph
from ..tensor_shape import TensorShape
from ..variables import Variable
from . import tape as _tape
from .context import eager_graph, eager_scope
from .tensor import CPU_DEVICE, EagerRefTensor, EagerTensor, _numpy_text

_ACTIVE_TAPES = _tape.ACTIVE_TAPES
_UIDS = itertools.count(1)


class _VariableOpStub:
    """``v.op`` of an eager variable: its name and graph (what optimizers key slots by)."""

    __slots__ = ("_variable",)
    type = "VarHandleOp"
    inputs = ()
    outputs = ()
    control_inputs = ()
    traceback = ()
    device = CPU_DEVICE
    _control_flow_context = None
    _user_frames = ()

    def __init__(self, variable):
        self._variable = variable

    @property
    def name(self) -> str:
        return self._variable._handle_name

    @property
    def graph(self):
        return self._variable.graph

    def _get_control_flow_context(self):
        return None

    def colocation_groups(self):
        return [f"loc:@{self.name}".encode()]


def _in_trace():
    """The defun trace graph being built, or None when executing eagerly."""
    graph = get_default_graph()
    if getattr(graph, "_is_eager", False):
        return None
    return graph


class EagerVariable(Variable):
    """A variable whose value is a buffer owned by the Python object (eager mode)."""

    def __init__(self, initial_value=None, trainable=None, collections=None, validate_shape=True,
                 caching_device=None, name=None, variable_def=None, dtype=None, expected_shape=None,
                 import_scope=None, constraint=None, use_resource=None, synchronization=None, aggregation=None,
                 shape=None):
        from ..convert import convert_to_tensor
        from ..dtypes import as_dtype
        from ..graph import name_scope

        del caching_device, expected_shape, import_scope, use_resource, synchronization, aggregation
        if variable_def is not None:
            raise ValueError("variable_def is not supported when eager execution is enabled.")
        if initial_value is None:
            raise ValueError("initial_value must be specified.")
        if constraint is not None and not callable(constraint):
            raise ValueError("The `constraint` argument must be a callable.")
        self._trainable = True if trainable is None else bool(trainable)
        self._constraint = constraint
        self._save_slice_info = None
        with eager_scope():
            with name_scope(name, "Variable") as scope:
                self._handle_name = scope[:-1] if scope.endswith("/") else scope
                if callable(initial_value):
                    initial_value = initial_value()
                value = convert_to_tensor(initial_value, name="initial_value",
                                          dtype=None if dtype is None else as_dtype(dtype))
        if not isinstance(value, EagerTensor):
            raise ValueError(f"The initial value of variable '{self._handle_name}' is a graph tensor ({value!r}); "
                             "a variable made inside a defun must be initialised from a Python value, a numpy "
                             "array or a callable (it is computed eagerly).")
        array = np.array(value._array, dtype=value._array.dtype, order="C", copy=True)
        if shape is not None and validate_shape and not TensorShape(shape).is_compatible_with(array.shape):
            raise ValueError(f"Shapes {TensorShape(shape)} and {TensorShape(array.shape)} are incompatible")
        self._array = array
        self._shared = False
        self._value_dtype = value.dtype.base_dtype
        self._value_shape = TensorShape(array.shape)
        self._initial_value = value
        self._unique_id = f"{self._handle_name}_{next(_UIDS)}"
        self._ref_tensor = EagerRefTensor(self)
        self._op_stub = _VariableOpStub(self)
        self._graph = eager_graph()
        if collections and GraphKeys.GLOBAL_STEP in collections:  # TF 1.x: the one collection eager variables join
            self._graph.add_to_collection(GraphKeys.GLOBAL_STEP, self)

    # -- the buffer ---------------------------------------------------------------------------
    def _snapshot_array(self) -> np.ndarray:
        """The current value for a reader (the buffer, now shared)."""
        self._shared = True
        return self._array

    def _buffer(self, written: bool) -> np.ndarray:
        """The buffer for a program: unshared first when the program writes it."""
        if written and self._shared:
            self._array = self._array.copy()
            self._shared = False
        return self._array

    def _set_value(self, value) -> None:
        """A new value, as is (a restored checkpoint; the caller checked the shape)."""
        self._array = np.array(value, dtype=self._value_dtype.as_numpy_dtype, order="C", copy=True)
        self._shared = False

    # -- identity -----------------------------------------------------------------------------
    @property
    def name(self) -> str:
        return self._handle_name + ":0"

    @property
    def op(self):
        return self._op_stub

    @property
    def dtype(self):
        return self._value_dtype

    @property
    def shape(self) -> TensorShape:
        return self._value_shape

    def get_shape(self) -> TensorShape:
        return self._value_shape

    def set_shape(self, shape) -> None:
        if not self._value_shape.is_compatible_with(shape):
            raise ValueError(f"Shapes {self._value_shape} and {TensorShape(shape)} are incompatible")

    @property
    def graph(self):
        return self._graph

    @property
    def device(self) -> str:
        return CPU_DEVICE

    @property
    def handle(self):
        return self._ref()

    @property
    def initializer(self):
        return None

    @property
    def initial_value(self):
        return self._initial_value

    def initialized_value(self):
        return self.value()

    def __repr__(self) -> str:
        return (f"<tf.Variable '{self.name}' shape={self._value_shape} dtype={self._value_dtype.name}, "
                f"numpy={_numpy_text(self._array, self._value_dtype, is_repr=True)}>")

    # -- values ---------------------------------------------------------------------------------
    def value(self):
        graph = _in_trace()
        if graph is not None:
            read = _trace_graph(graph, self).read_variable(self)
            if _ACTIVE_TAPES:
                _tape.variable_read(self, read)
            return read
        t = EagerTensor(self._snapshot_array(), self._value_dtype)
        if _ACTIVE_TAPES:
            _tape.variable_read(self, t)
        return t

    def read_value(self):
        return self.value()

    def _ref(self):
        graph = _in_trace()
        if graph is not None:
            ref = _trace_graph(graph, self).capture_variable(self)
            if _ACTIVE_TAPES:
                _tape.variable_read(self, ref)
            return ref
        return self._ref_tensor

    def _as_graph_element(self):
        return self._ref()

    def numpy(self):
        return self._array[()] if self._array.ndim == 0 else self._array.copy()

    def __array__(self, dtype=None, copy=None):
        return np.array(self._array, dtype=dtype, copy=True)

    def __float__(self) -> float:
        return float(self._array)

    def __int__(self) -> int:
        return int(self._array)

    def __index__(self) -> int:
        return self._array[()].__index__()

    def __bool__(self) -> bool:
        return bool(self._array)

    def __format__(self, format_spec: str) -> str:
        return (self._array[()] if self._array.ndim == 0 else self._array).__format__(format_spec)

    def __len__(self) -> int:
        if not self._array.ndim:
            raise TypeError("Scalar tensor has no `len()`")
        return self._array.shape[0]

    def eval(self, session=None):
        if _in_trace() is None:
            raise NotImplementedError("eval is not supported when eager execution is enabled, is .numpy() the "
                                      "method you are looking for?")
        return super().eval(session)

    def load(self, value, session=None) -> None:
        self.assign(value)

    # -- updates --------------------------------------------------------------------------------
    def _update(self, function, value, use_locking, name, read_value):
        from ..ops import state_ops

        result = getattr(state_ops, function)(self._ref(), value, use_locking=use_locking, name=name)
        if _in_trace() is not None:
            return result if read_value else result.op
        return self if read_value else None

    def assign(self, value, use_locking=None, name=None, read_value=True):
        if _in_trace() is None:
            from ..convert import convert_to_tensor

            tensor = convert_to_tensor(value, dtype=self._value_dtype)
            if not self._value_shape.is_compatible_with(tensor.shape):
                raise ValueError(f"Shapes {self._value_shape} and {tensor.shape} are incompatible")
        return self._update("assign", value, use_locking, name, read_value)

    def assign_add(self, delta, use_locking=None, name=None, read_value=True):
        return self._update("assign_add", delta, use_locking, name, read_value)

    def assign_sub(self, delta, use_locking=None, name=None, read_value=True):
        return self._update("assign_sub", delta, use_locking, name, read_value)

    def count_up_to(self, limit):
        value = self.numpy()
        if value >= limit:
            from ..errors import OutOfRangeError

            raise OutOfRangeError(None, None, f"Reached limit of {limit}")
        self.assign_add(1)
        return EagerTensor(np.array(value), self._value_dtype)

    def to_proto(self, export_scope=None):
        raise RuntimeError("to_proto not supported in EAGER mode.")


def _trace_graph(graph, variable):
    """``graph`` when it is a defun trace (it captures eager variables), else an error."""
    if getattr(graph, "capture_variable", None) is None:
        raise ValueError(f"The eager variable {variable.name} cannot be used in a graph that is not a defun trace "
                         f"({graph!r}).")
    return graph


def make_variable_class():
    """For tfc.frontend.variables: the class ``tf.Variable(...)`` builds now (None: the graph
    Variable). Eager mode and defun traces make EagerVariables."""
    graph = get_default_graph()
    if getattr(graph, "_is_eager", False) or getattr(graph, "_init_scope_graph", None) is not None:
        return EagerVariable
    return None
