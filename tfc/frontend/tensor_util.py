"""TensorProto <-> numpy (TF's make_tensor_proto / MakeNdarray) and static values.

``constant_value`` evaluates a tensor at graph-build time when its value does not depend
on feeds or variables (TF's tensor_util.constant_value), which shape inference uses for
reshape targets, fill dims, reduction axes and the like.
"""
from __future__ import annotations

import numbers
from typing import Optional

import numpy as np

from . import dtypes
from .tensor_shape import TensorShape, as_shape, unknown_shape

# Types TF stores as raw bytes (tensor_content) when a tensor has several elements.
_TENSOR_CONTENT_TYPES = {"float32", "float64", "int32", "uint8", "int16", "int8", "int64", "uint32", "uint64"}

_VALUE_FIELDS = {
    "float16": "half_val", "float32": "float_val", "float64": "double_val", "int32": "int_val",
    "int16": "int_val", "int8": "int_val", "uint8": "int_val", "uint16": "int_val", "int64": "int64_val",
    "uint32": "uint32_val", "uint64": "uint64_val", "bool": "bool_val", "string": "string_val",
    "complex64": "scomplex_val", "complex128": "dcomplex_val",
}


def _flatten(values):
    if isinstance(values, (list, tuple)):
        for v in values:
            yield from _flatten(v)
    else:
        yield values


def _check_compatible(values, dtype: dtypes.DType) -> None:
    """TF's _AssertCompatible: python values must fit the requested dtype."""
    if isinstance(values, (np.ndarray, np.generic)):
        return
    for v in _flatten(values):
        if isinstance(v, (np.ndarray, np.generic)):
            continue
        if dtype == dtypes.string:
            ok = isinstance(v, (str, bytes))
        elif dtype.is_bool:
            ok = isinstance(v, bool)
        elif dtype.is_integer:
            ok = isinstance(v, numbers.Integral)
        elif dtype.is_floating or dtype.is_complex:
            ok = isinstance(v, numbers.Number)
        else:
            ok = True
        if not ok:
            raise TypeError(f"Expected {dtype.name}, got {v!r} of type '{type(v).__name__}' instead.")


def _dense_dims(values) -> list:
    if not isinstance(values, (list, tuple)):
        return []
    if len(values) == 0:
        return [0]
    return [len(values)] + _dense_dims(values[0])


def to_numpy(values, dtype: Optional[dtypes.DType] = None) -> np.ndarray:
    """A python/numpy value as an ndarray with TF's default dtypes (float32, int32)."""
    if values is None:
        raise ValueError("None values not supported.")
    if isinstance(values, (np.ndarray, np.generic)):
        array = np.asarray(values)
        if dtype is not None:
            array = array.astype(_numpy_type(dtype))
        elif array.dtype.kind in ("U", "S"):
            array = array.astype(object)
        return array
    if dtype is not None:
        _check_compatible(values, dtype)
        if dtype == dtypes.string:
            array = np.array(values, dtype=object)
        else:
            array = np.array(values, dtype=_numpy_type(dtype))
    else:
        try:
            array = np.array(values)
        except ValueError as e:
            raise ValueError(f"Argument must be a dense tensor: {values} - got shape irregular: {e}") from None
        if array.dtype == np.float64:
            array = array.astype(np.float32)
        elif array.dtype == np.int64:
            down = array.astype(np.int32)
            if np.array_equal(down, array):
                array = down
        elif array.dtype.kind in ("U", "S"):  # numpy's fixed-width strings drop trailing NULs: keep the objects
            array = np.array(values, dtype=object)
    if list(array.shape) != _dense_dims(values) and array.dtype != object:
        raise ValueError(f"Argument must be a dense tensor: {values} - got shape {list(array.shape)}, but wanted "
                         f"{_dense_dims(values)}.")
    return array


def _numpy_type(dtype: dtypes.DType):
    np_type = dtype.base_dtype.as_numpy_dtype
    if np_type is None:
        raise TypeError(f"Cannot convert to numpy a tensor of type {dtype.name}")
    return np_type


def make_tensor_proto(values, dtype=None, shape=None, verify_shape: bool = False, allow_broadcast: bool = False):
    """A TensorProto laid out as TensorFlow lays it out (tensor_content vs typed values)."""
    from tfc.protos import TensorProto

    dtype = None if dtype is None else dtypes.as_dtype(dtype).base_dtype
    empty_shape = (shape is not None and not isinstance(values, (np.ndarray, np.generic))
                   and values is not None and int(np.prod([int(d) for d in shape], dtype=np.int64)) == 0)
    if empty_shape:
        # TF: a python value with a zero-element shape is not looked at (no compatibility
        # check): ``np.empty(shape, dtype)``, float32 when no dtype is given.
        if dtype is None:
            array = np.empty([int(d) for d in shape], dtype=np.float32)
        else:
            array = np.empty([int(d) for d in shape], dtype=_numpy_type(dtype))
    else:
        array = to_numpy(values, dtype)
    tf_dtype = dtype or dtypes.as_dtype(array.dtype if array.dtype != object else "string")
    if shape is None:
        shape = list(array.shape)
        is_same_size = True
    else:
        shape = [int(d) for d in shape]
        target = int(np.prod(shape)) if shape else 1
        if verify_shape and list(array.shape) != shape:
            raise TypeError(f"Expected Tensor's shape: {tuple(shape)}, got {array.shape}.")
        is_same_size = array.size == target
        if not is_same_size:
            if array.size > target:
                raise ValueError(f"Too many elements provided. Needed at most {target}, but received {array.size}")
            if allow_broadcast and array.size != 1 and array.ndim:
                array = np.broadcast_to(array, shape)
                is_same_size = True
        elif array.shape != tuple(shape):
            array = array.reshape(shape)
    proto = TensorProto(dtype=tf_dtype.as_datatype_enum, tensor_shape=as_shape(shape).as_proto())
    name = tf_dtype.name
    if is_same_size and name in _TENSOR_CONTENT_TYPES and array.size > 1:
        proto.tensor_content = np.ascontiguousarray(array, dtype=_numpy_type(tf_dtype)).tobytes()
        return proto
    flat = array.ravel()
    field_name = _VALUE_FIELDS.get(name)
    if field_name is None:
        raise TypeError(f"Cannot make a TensorProto of type {name}")
    values_field = getattr(proto, field_name)
    if name == "float16":
        values_field.extend(int(v) for v in flat.astype(np.float16).view(np.uint16))
    elif name == "string":
        if empty_shape:  # TF flattens the python value's strings even then (string_val: "a")
            flat = [v for v in _flatten(values)]
        values_field.extend(v if isinstance(v, bytes) else str(v).encode() for v in flat)
    elif name in ("complex64", "complex128"):
        for v in flat:
            values_field.extend([float(v.real), float(v.imag)])
    else:
        values_field.extend(flat.tolist())
    return proto


def make_ndarray(proto) -> np.ndarray:
    """The numpy value of a TensorProto (short value lists repeat their last element)."""
    dtype = dtypes.as_dtype(proto.dtype).base_dtype
    shape = [d.size for d in proto.tensor_shape.dim]
    count = int(np.prod(shape)) if shape else 1
    if dtype == dtypes.string:
        values = list(proto.string_val)
        array = np.empty(count, dtype=object)
        if values:
            array[:len(values)] = values
            array[len(values):] = values[-1]
        else:
            array[:] = b""
        return array.reshape(shape)
    np_type = _numpy_type(dtype)
    if proto.tensor_content:
        return np.frombuffer(proto.tensor_content, dtype=np_type).copy().reshape(shape)
    field_name = _VALUE_FIELDS[dtype.name]
    raw = list(getattr(proto, field_name))
    if dtype == dtypes.float16:
        values = np.array(raw, dtype=np.uint16).view(np.float16)
    elif dtype.is_complex:
        pairs = np.array(raw, dtype=np.float64).reshape(-1, 2)
        values = (pairs[:, 0] + 1j * pairs[:, 1]).astype(np_type)
    else:
        values = np.array(raw, dtype=np_type)
    if values.size == count:
        return values.reshape(shape)
    out = np.zeros(count, dtype=np_type)
    if values.size:
        out[:values.size] = values
        out[values.size:] = values[-1]
    return out.reshape(shape)


# -- static values ---------------------------------------------------------------------
def constant_value(tensor, partial: bool = False) -> Optional[np.ndarray]:
    """The value of ``tensor`` if it can be computed without running the graph."""
    eager_value = getattr(tensor, "_eager_numpy", None)  # an eager tensor: its value
    if eager_value is not None:
        return eager_value()
    op = tensor.op
    kind = op.type
    if kind == "Const":
        return const_op_value(op)
    if kind == "Shape":
        shape = op.inputs[0].shape
        if shape.is_fully_defined():
            return np.array(shape.as_list(), dtype=op._attrs["out_type"].as_numpy_dtype)
        return None
    if kind == "Size":
        n = op.inputs[0].shape.num_elements()
        return None if n is None else np.array(n, dtype=op._attrs["out_type"].as_numpy_dtype)
    if kind == "Rank":
        rank = op.inputs[0].shape.ndims
        return None if rank is None else np.array(rank, dtype=np.int32)
    if kind in ("Identity", "StopGradient", "Snapshot"):
        return constant_value(op.inputs[0])
    if kind == "Cast":
        value = constant_value(op.inputs[0])
        return None if value is None else value.astype(op._attrs["DstT"].as_numpy_dtype)
    if kind == "Pack":
        values = [constant_value(t) for t in op.inputs]
        if any(v is None for v in values):
            return None
        return np.stack(values, axis=op._attrs["axis"])
    if kind == "ConcatV2":
        values = [constant_value(t) for t in op.inputs]
        if any(v is None for v in values):
            return None
        return np.concatenate(values[:-1], axis=int(values[-1]))
    if kind == "Fill":
        dims, value = (constant_value(t) for t in op.inputs)
        if dims is None or value is None:
            return None
        return np.full(dims, value)
    if kind == "Range":
        start, limit, delta = (constant_value(t) for t in op.inputs)
        if start is None or limit is None or delta is None:
            return None
        return np.arange(start, limit, delta, dtype=op._attrs["Tidx"].as_numpy_dtype)
    if kind in ("ExpandDims", "Reshape", "Squeeze"):
        value = constant_value(op.inputs[0])
        out_shape = op.outputs[0].shape
        if value is None or not out_shape.is_fully_defined():
            return None
        return value.reshape(out_shape.as_list())
    if kind in ("Add", "AddV2", "Sub", "Mul", "FloorDiv", "Maximum", "Minimum"):
        a, b = (constant_value(t) for t in op.inputs)
        if a is None or b is None:
            return None
        fn = {"Add": np.add, "AddV2": np.add, "Sub": np.subtract, "Mul": np.multiply,
              "FloorDiv": np.floor_divide, "Maximum": np.maximum, "Minimum": np.minimum}[kind]
        return fn(a, b).astype(a.dtype)
    if kind in ("Less", "LessEqual", "Greater", "GreaterEqual", "Equal", "NotEqual"):
        a, b = (constant_value(t) for t in op.inputs)
        if a is None or b is None:
            return None
        fn = {"Less": np.less, "LessEqual": np.less_equal, "Greater": np.greater, "GreaterEqual": np.greater_equal,
              "Equal": np.equal, "NotEqual": np.not_equal}[kind]
        return np.asarray(fn(a, b))
    if kind == "SelectV2":  # TF's shape inference evaluates it (tf.sparse.expand_dims' axis)
        cond, a, b = (constant_value(t) for t in op.inputs)
        if cond is None or a is None or b is None:
            return None
        return np.asarray(np.where(cond, a, b)).astype(a.dtype)
    if kind == "StridedSlice":
        return _strided_slice_value(op)
    if kind == "BroadcastGradientArgs":  # TF's shape inference evaluates it: static Sum shapes
        s0, s1 = (constant_value(t) for t in op.inputs)
        if s0 is None or s1 is None:
            return None
        return _broadcast_gradient_args_value(s0, s1)[tensor.value_index]
    return None


def _broadcast_gradient_args_value(s0, s1) -> tuple:
    """The reduction indices BroadcastGradientArgs gives for two known shapes."""
    n = max(len(s0), len(s1))
    a = [1] * (n - len(s0)) + [int(d) for d in s0]
    b = [1] * (n - len(s1)) + [int(d) for d in s1]
    r0 = [i for i in range(n) if a[i] == 1 and b[i] != 1]
    r1 = [i for i in range(n) if b[i] == 1 and a[i] != 1]
    dtype = np.asarray(s0).dtype
    return np.array(r0, dtype=dtype), np.array(r1, dtype=dtype)


def const_op_value(op) -> np.ndarray:
    cached = getattr(op, "_const_value", None)
    if cached is None:
        cached = make_ndarray(op._attrs["value"])
        cached.setflags(write=False)
        op._const_value = cached
    return cached


def _strided_slice_value(op) -> Optional[np.ndarray]:
    values = [constant_value(t) for t in op.inputs]
    if any(v is None for v in values):
        return None
    from .ops.slicing import strided_slice_numpy

    return strided_slice_numpy(values[0], values[1], values[2], values[3], op._attrs)


def constant_value_as_shape(tensor) -> TensorShape:
    """A (partial) TensorShape from a 1-D int tensor: Shape ops, Pack of scalars, concat."""
    shape = tensor.shape
    if hasattr(tensor, "_eager_numpy") and shape.ndims == 1:  # an eager tensor: its value
        return TensorShape([None if int(v) == -1 else int(v) for v in tensor._eager_numpy()])
    if shape.ndims == 0:
        value = constant_value(tensor)
        if value is None:
            return unknown_shape()
        return TensorShape([None if int(value) == -1 else int(value)])
    op = tensor.op
    if op.type == "Shape":
        return op.inputs[0].shape
    if op.type == "Pack":
        dims = []
        for t in op.inputs:
            value = constant_value(t)
            dims.append(None if value is None or int(value) == -1 else int(value))
        return TensorShape(dims)
    if op.type == "ConcatV2":
        out = TensorShape([])
        for t in op.inputs[:-1]:
            out = out.concatenate(constant_value_as_shape(t))
        return out
    if op.type == "StridedSlice" and op.inputs[0].op.type == "Shape":
        value = constant_value(tensor)
        if value is not None:
            return TensorShape([None if v == -1 else int(v) for v in value])
        begin, end, strides = (constant_value(t) for t in op.inputs[1:])
        base = op.inputs[0].op.inputs[0].shape
        attrs = op._attrs
        if (base.ndims is not None and begin is not None and end is not None and strides is not None
                and begin.size == 1 and not attrs["ellipsis_mask"] and not attrs["new_axis_mask"]
                and not attrs["shrink_axis_mask"]):
            b = None if attrs["begin_mask"] & 1 else int(begin[0])
            e = None if attrs["end_mask"] & 1 else int(end[0])
            return TensorShape(base.dims[slice(b, e, int(strides[0]))])
    value = constant_value(tensor)
    if value is not None:
        return TensorShape([None if int(v) == -1 else int(v) for v in value.ravel()])
    if shape.ndims == 1 and shape.dims[0].value is not None:
        return unknown_shape(ndims=shape.dims[0].value)
    return unknown_shape()
