"""EagerTensor (a value with TF's Tensor interface) and EagerOperation (what an op run
eagerly returns to the frontend code that created it).

An EagerTensor holds a C-contiguous numpy array and its DType. It is a ``Tensor``
(``isinstance(t, tf.Tensor)``), so the whole frontend accepts it; what only makes sense in
a graph (``name``, ``eval``) raises as in TF 1.x, and the Python protocols TF's eager
tensors have work: ``numpy()``, ``__array__``, ``float``/``int``/``bool``/``len``/``iter``,
``format``, printing as ``tf.Tensor([1. 2.], shape=(2,), dtype=float32)``.

Nothing links a tensor to the op that made it (a loop of ops keeps no history alive);
GradientTape records what it needs while it is recording.
"""
from __future__ import annotations

import itertools

import numpy as np

from .. import dtypes
from ..graph import Tensor, get_default_graph
from ..tensor_shape import TensorShape

CPU_DEVICE = "/job:localhost/replica:0/task:0/device:CPU:0"
_IDS = itertools.count(1)


def contiguous(value, dtype=None) -> np.ndarray:
    """``value`` as a C-contiguous array of ``dtype`` (0-d stays 0-d, unlike
    np.ascontiguousarray); no copy when it already is one."""
    array = np.asarray(value, dtype=dtype)
    return array if array.flags.c_contiguous else array.copy(order="C")


def _numpy_text(array: np.ndarray, dtype, is_repr: bool = False) -> str:
    """TF's _numpy_text: repr/str of the value; a multi-line value starts on a new line."""
    if dtype.base_dtype in (dtypes.resource, dtypes.variant):
        return "<unprintable>"
    value = array[()] if array.ndim == 0 else array
    with np.printoptions(legacy="1.25"):  # scalars print as numpy 1 printed them (TF 1.x: numpy=1.5)
        text = repr(value) if is_repr else str(value)
    if "\n" in text:
        text = "\n" + text
    return text


class _EagerOpStub:
    """``t.op`` of an eager tensor: no graph op exists; this answers what frontend code asks."""

    __slots__ = ("_tensor",)
    type = "EagerConst"
    name = ""
    inputs = ()
    control_inputs = ()
    device = CPU_DEVICE
    _control_flow_context = None
    _control_inputs = ()
    _inputs = ()
    traceback = ()
    _user_frames = ()

    def __init__(self, tensor):
        self._tensor = tensor

    @property
    def outputs(self):
        return [self._tensor]

    @property
    def graph(self):
        return get_default_graph()

    def _get_control_flow_context(self):
        return None

    def colocation_groups(self):
        return []


class EagerTensor(Tensor):
    """A concrete value: ``tf.Tensor([1. 2.], shape=(2,), dtype=float32)``."""

    __slots__ = ("_array", "_eager_dtype", "_shape_cache", "_sig", "_id")

    def __init__(self, array: np.ndarray, dtype):
        self._array = array
        self._eager_dtype = dtype
        self._shape_cache = None
        self._sig = None
        self._id = next(_IDS)

    # -- what the frontend reads ----------------------------------------------------------
    @property
    def dtype(self):
        return self._eager_dtype

    @property
    def _dtype(self):
        return self._eager_dtype

    @property
    def shape(self) -> TensorShape:
        shape = self._shape_cache
        if shape is None:
            shape = self._shape_cache = TensorShape(self._array.shape)
        return shape

    def get_shape(self) -> TensorShape:
        return self.shape

    @property
    def _shape(self):
        return self.shape

    def set_shape(self, shape) -> None:
        if not self.shape.is_compatible_with(shape):
            raise ValueError(f"Tensor's shape {self.shape} is not compatible with supplied shape {TensorShape(shape)}")

    @property
    def ndim(self) -> int:
        return self._array.ndim

    @property
    def graph(self):
        return get_default_graph()

    @property
    def op(self):
        return _EagerOpStub(self)

    @property
    def _op(self):
        return _EagerOpStub(self)

    @property
    def value_index(self) -> int:
        return 0

    @property
    def _value_index(self) -> int:
        return 0

    @property
    def _consumers(self) -> list:
        return []

    def consumers(self) -> list:
        return []

    @property
    def name(self):
        raise AttributeError("Tensor.name is meaningless when eager execution is enabled.")

    @property
    def device(self) -> str:
        return CPU_DEVICE

    @property
    def backing_device(self) -> str:
        return CPU_DEVICE

    def cpu(self):
        return self

    def eval(self, feed_dict=None, session=None):
        raise NotImplementedError("eval is not supported when eager execution is enabled, is .numpy() the method "
                                  "you are looking for?")

    def _shape_tuple(self) -> tuple:
        return self._array.shape

    def _rank(self) -> int:
        return self._array.ndim

    def _num_elements(self) -> int:
        return self._array.size

    # -- values ---------------------------------------------------------------------------------
    def _numpy(self) -> np.ndarray:
        return self._array

    def _eager_numpy(self) -> np.ndarray:
        """The value (tensor_util.constant_value reads it)."""
        return self._array

    def numpy(self):
        """A copy of the value: a numpy array, or a numpy scalar for a 0-d tensor."""
        array = self._array
        if array.ndim == 0:
            return array[()]
        return array.copy()

    def __array__(self, dtype=None, copy=None):
        if dtype is None:
            return self._array if not copy else self._array.copy()
        return np.asarray(self._array, dtype=dtype)

    def __float__(self) -> float:
        return float(self._array)

    def __int__(self) -> int:
        return int(self._array)

    def __complex__(self) -> complex:
        return complex(self._array)

    def __index__(self) -> int:
        return self._array.__index__() if self._array.ndim else self._array[()].__index__()

    def __bool__(self) -> bool:
        return bool(self._array)

    __nonzero__ = __bool__

    def __len__(self) -> int:
        if not self._array.ndim:
            raise TypeError("Scalar tensor has no `len()`")
        return self._array.shape[0]

    def __iter__(self):
        shape = self._array.shape
        if not shape:
            raise TypeError("Cannot iterate over a scalar tensor.")
        from . import tape as _tape

        if _tape.recording(self):
            for i in range(shape[0]):
                yield self[i]
        else:  # the rows as values (nothing records them: no op needed)
            array, dtype = self._array, self._eager_dtype
            for i in range(shape[0]):
                yield EagerTensor(contiguous(array[i]), dtype)

    def __format__(self, format_spec: str) -> str:
        value = self._array[()] if self._array.ndim == 0 and self._array.dtype != object else self._array
        return value.__format__(format_spec)

    def __str__(self) -> str:
        return f"tf.Tensor({_numpy_text(self._array, self._eager_dtype)}, shape={self.shape}, " \
               f"dtype={self._eager_dtype.name})"

    def __repr__(self) -> str:
        return f"<tf.Tensor: id={self._id}, shape={self.shape}, dtype={self._eager_dtype.name}, " \
               f"numpy={_numpy_text(self._array, self._eager_dtype, is_repr=True)}>"

    def __reduce__(self):
        return EagerTensor, (self._array, self._eager_dtype)

    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return EagerTensor(self._array.copy(), self._eager_dtype)

    def _as_graph_element(self):
        return self

    def _capture_into_graph(self, as_ref: bool = False):
        """convert_to_tensor of this tensor: itself in eager mode, else its capture in the
        default graph (a defun trace)."""
        if getattr(get_default_graph(), "_is_eager", False):
            return self
        from .function import capture

        return capture(self, as_ref)


class EagerRefTensor(EagerTensor):
    """A variable's ref handle in eager mode (``var._ref()``): ops with ref inputs (Assign,
    ApplyGradientDescent...) update the variable's buffer in place; read as a value, it is
    the variable's current value."""

    __slots__ = ("_variable",)

    def __init__(self, variable):
        self._variable = variable
        self._eager_dtype = variable.dtype.base_dtype._as_ref
        self._shape_cache = None
        self._sig = None
        self._id = next(_IDS)

    @property
    def _array(self):
        return self._variable._array

    def __str__(self) -> str:
        return f"tf.Tensor({_numpy_text(self._array, self._eager_dtype)}, shape={self.shape}, " \
               f"dtype={self._eager_dtype.name})"


class EagerOperation:
    """An op that ran eagerly: its type, attrs, inputs and outputs (what the code that made
    it reads: ``.outputs``; what gradient functions read: ``.inputs``, ``.get_attr``)."""

    __slots__ = ("_type", "_name", "_attrs", "_inputs", "_outputs", "__weakref__")

    _control_flow_context = None
    _control_inputs = ()
    control_inputs = ()
    device = CPU_DEVICE
    traceback = ()
    _user_frames = ()
    _original_op = None

    def __init__(self, op_type: str, name, attrs: dict, inputs, outputs):
        self._type = op_type
        self._name = name
        self._attrs = attrs
        self._inputs = inputs
        self._outputs = outputs

    @property
    def type(self) -> str:
        return self._type

    @property
    def name(self) -> str:
        name = self._name
        if not name:
            return self._type
        return name[:-1] if name.endswith("/") else name

    @property
    def inputs(self) -> list:
        return list(self._inputs)

    @property
    def outputs(self) -> list:
        return self._outputs

    def values(self) -> tuple:
        return tuple(self._outputs)

    @property
    def graph(self):
        return get_default_graph()

    @property
    def op_def(self):
        from ..registry import lookup_op_type

        return lookup_op_type(self._type)

    def get_attr(self, name: str):
        from ..node_def import attr_to_python

        if name not in self._attrs:
            raise ValueError(f"Operation '{self.name}' has no attr named '{name}'.")
        return attr_to_python(self, name)

    def _get_attr_raw(self, name: str, default=None):
        return self._attrs.get(name, default)

    def _get_control_flow_context(self):
        return None

    def colocation_groups(self) -> list:
        return []

    def run(self, feed_dict=None, session=None) -> None:
        """Already ran."""

    def __repr__(self) -> str:
        return f"<tf.Operation '{self.name}' type={self._type}>"
