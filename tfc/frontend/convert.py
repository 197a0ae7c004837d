"""convert_to_tensor: Tensors pass through; Variables, lists of tensors and python or
numpy values convert through registered conversion functions (TF's behaviour)."""
from __future__ import annotations

from typing import Callable, Optional

from . import dtypes
from .graph import Tensor

# (type, function) in registration order; function(value, dtype, name, as_ref) -> Tensor
_CONVERSION_FUNCTIONS: list = []


def register_tensor_conversion_function(base_type, conversion_func: Callable, priority: int = 100) -> None:
    del priority  # kept for TF's signature; first matching registration wins
    _CONVERSION_FUNCTIONS.append((base_type, conversion_func))


def _check_dtype(tensor: Tensor, dtype: Optional[dtypes.DType]) -> Tensor:
    if dtype is not None and not dtype.is_compatible_with(tensor.dtype):
        raise ValueError(f"Tensor conversion requested dtype {dtype.name} for Tensor with dtype "
                         f"{tensor.dtype.name}: {tensor!r}")
    return tensor


def convert_to_tensor(value, dtype=None, name=None, preferred_dtype=None, as_ref: bool = False,
                      dtype_hint=None) -> Tensor:
    """Convert ``value`` to a Tensor of ``dtype`` (or the natural dtype of the value)."""
    dtype = None if dtype is None else dtypes.as_dtype(dtype)
    preferred = preferred_dtype if preferred_dtype is not None else dtype_hint
    if isinstance(value, Tensor):
        if type(value) is not Tensor and hasattr(value, "_capture_into_graph"):  # an eager tensor in a graph
            value = value._capture_into_graph(as_ref)
        return _check_dtype(value, dtype)
    for base_type, function in _CONVERSION_FUNCTIONS:
        if isinstance(value, base_type):
            return _check_dtype(function(value, dtype, name, as_ref), dtype)
    if isinstance(value, (list, tuple)) and _contains_tensor(value):
        from .ops.array_ops import autopack

        return _check_dtype(autopack(value, dtype, name or "packed"), dtype)
    from .ops.constant_op import constant

    if dtype is None and preferred is not None:
        try:
            return constant(value, dtype=dtypes.as_dtype(preferred), name=name or "Const")
        except (TypeError, ValueError):
            pass
    return constant(value, dtype=dtype, name=name or "Const")


def _contains_tensor(value) -> bool:
    for item in value:
        if isinstance(item, Tensor) or hasattr(item, "_as_graph_element"):
            return True
        if isinstance(item, (list, tuple)) and _contains_tensor(item):
            return True
    return False


def convert_n_to_tensor(values, dtype=None, name=None, preferred_dtype=None) -> list:
    return [convert_to_tensor(v, dtype=dtype, name=None if name is None else f"{name}_{i}",
                              preferred_dtype=preferred_dtype) for i, v in enumerate(values)]


def is_tensor(value) -> bool:
    """tf.is_tensor: a Tensor or a Variable (TF registers variables as dense tensor-like), or
    a tensor-like object such as a SparseTensor."""
    from .variables import Variable

    return isinstance(value, (Tensor, Variable)) or getattr(value, "is_tensor_like", False) is True


def is_tensor_like(value) -> bool:
    return isinstance(value, Tensor) or any(isinstance(value, t) for t, _ in _CONVERSION_FUNCTIONS)


def _shape_to_tensor(value, dtype, name, as_ref):
    from .ops.constant_op import constant

    if not value.is_fully_defined():
        raise ValueError(f"Cannot convert a partially known TensorShape to a Tensor: {value}")
    return constant(value.as_list(), dtype=dtype or dtypes.int32, name=name or "Const")


def _dimension_to_tensor(value, dtype, name, as_ref):
    from .ops.constant_op import constant

    if value.value is None:
        raise ValueError("Cannot convert an unknown Dimension to a Tensor: ?")
    return constant(value.value, dtype=dtype or dtypes.int32, name=name or "Const")


def _register_builtin_conversions() -> None:
    from .tensor_shape import Dimension, TensorShape

    register_tensor_conversion_function(TensorShape, _shape_to_tensor)
    register_tensor_conversion_function(Dimension, _dimension_to_tensor)


_register_builtin_conversions()
