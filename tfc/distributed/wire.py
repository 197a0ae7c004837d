"""TensorProto <-> numpy for the wire, and TF status codes <-> gRPC status codes.

Numeric and bool tensors travel as ``tensor_content`` (the raw little-endian bytes, as
TensorFlow's C++ ``Tensor::AsProtoTensorContent`` writes them) and are read from it with
one ``np.frombuffer``; tensors that a peer wrote with typed value fields (``float_val``...,
short lists repeat their last element, as TF's ``MakeNdarray`` reads them) convert with
one ``np.array`` call over the repeated field. Strings are lists of bytes either way.
"""
from __future__ import annotations

import numpy as np

from tfc.frontend import errors
from tfc.protos.named_tensor_pb2 import NamedTensorProto
from tfc.protos.tensor_pb2 import TensorProto

# DataType enum -> numpy dtype (the base types; a *_REF enum is its base + 100).
_NUMPY_BY_ENUM = {
    1: np.dtype(np.float32), 2: np.dtype(np.float64), 3: np.dtype(np.int32), 4: np.dtype(np.uint8),
    5: np.dtype(np.int16), 6: np.dtype(np.int8), 7: np.dtype(object), 8: np.dtype(np.complex64),
    9: np.dtype(np.int64), 10: np.dtype(np.bool_), 17: np.dtype(np.uint16), 18: np.dtype(np.complex128),
    19: np.dtype(np.float16), 22: np.dtype(np.uint32), 23: np.dtype(np.uint64),
}
_ENUM_BY_NUMPY = {dtype: enum for enum, dtype in _NUMPY_BY_ENUM.items() if dtype != np.dtype(object)}
_DT_STRING = 7
_TYPE_NAMES = {14: "bfloat16", 20: "resource", 21: "variant"}

# Typed value fields by DataType enum (for tensors written without tensor_content).
_VALUE_FIELD = {1: "float_val", 2: "double_val", 3: "int_val", 4: "int_val", 5: "int_val", 6: "int_val",
                9: "int64_val", 10: "bool_val", 17: "int_val", 19: "half_val", 22: "uint32_val", 23: "uint64_val",
                8: "scomplex_val", 18: "dcomplex_val"}


def numpy_dtype(enum: int) -> np.dtype:
    """The numpy dtype of a DataType enum value (ref types map to their base type)."""
    base = enum - 100 if enum > 100 else enum
    dtype = _NUMPY_BY_ENUM.get(base)
    if dtype is None:
        name = _TYPE_NAMES.get(base, f"DataType {enum}")
        raise errors.UnimplementedError(None, None, f"tensors of type {name} cannot be sent over the wire by tfc")
    return dtype


def datatype_enum(dtype) -> int:
    """The DataType enum value of a numpy dtype (object arrays are strings)."""
    dtype = np.dtype(dtype)
    if dtype.kind in ("O", "S", "U"):
        return _DT_STRING
    enum = _ENUM_BY_NUMPY.get(dtype.newbyteorder("=") if dtype.byteorder not in ("=", "|") else dtype)
    if enum is None:
        raise errors.UnimplementedError(None, None, f"arrays of dtype {dtype} cannot be sent over the wire by tfc")
    return enum


def to_tensor_proto(value, enum: int = None) -> TensorProto:
    """A TensorProto holding ``value`` (an array or scalar; ``enum``: the DataType to send it as,
    else the array's own)."""
    array = np.asarray(value)
    if enum is None:
        enum = datatype_enum(array.dtype)
    elif enum > 100:
        enum -= 100
    proto = TensorProto(dtype=enum)
    dims = proto.tensor_shape.dim
    for d in array.shape:
        dims.add(size=d)
    if enum == _DT_STRING:
        flat = array.ravel().tolist()
        try:
            proto.string_val.extend(flat)
        except TypeError:
            proto.string_val.extend([_as_bytes(item) for item in flat])
        return proto
    dtype = numpy_dtype(enum)
    if array.dtype != dtype:
        array = array.astype(dtype)
    if dtype.byteorder == ">" or (dtype.byteorder == "=" and np.little_endian is False):
        array = array.astype(dtype.newbyteorder("<"))
    if array.size:
        proto.tensor_content = np.ascontiguousarray(array).tobytes()
    return proto


def _as_bytes(item) -> bytes:
    if isinstance(item, bytes):
        return item
    if isinstance(item, str):
        return item.encode("utf-8")
    if isinstance(item, np.bytes_):
        return bytes(item)
    return str(item).encode("utf-8")


def to_ndarray(proto: TensorProto) -> np.ndarray:
    """The numpy value of a TensorProto (a fresh, writable array)."""
    enum = proto.dtype
    shape = tuple(d.size for d in proto.tensor_shape.dim)
    count = 1
    for d in shape:
        count *= d
    dtype = numpy_dtype(enum)
    base = enum - 100 if enum > 100 else enum
    if base == _DT_STRING:
        if proto.tensor_content:  # TF's AsProtoTensorContent: varint lengths, then the bytes
            return _decode_string_content(proto.tensor_content, count).reshape(shape)
        values = list(proto.string_val)
        array = np.empty(count, dtype=object)
        if len(values) == count:
            array[:] = values
        elif values:
            array[:len(values)] = values
            array[len(values):] = values[-1]
        else:
            array[:] = b""
        return array.reshape(shape)
    content = proto.tensor_content
    if content:
        if len(content) != count * dtype.itemsize:
            raise errors.InvalidArgumentError(
                None, None, f"TensorProto of type {dtype} and shape {list(shape)} has {len(content)} bytes of "
                            f"tensor_content, not {count * dtype.itemsize}")
        return np.frombuffer(content, dtype=dtype.newbyteorder("<")).astype(dtype).reshape(shape)
    if count == 0:
        return np.zeros(shape, dtype=dtype)
    field = _VALUE_FIELD[base]
    raw = getattr(proto, field)
    if base == 19:  # half_val holds the float16 bit patterns
        values = np.array(raw, dtype=np.uint16).view(np.float16)
    elif base in (8, 18):  # (real, imag) pairs
        pairs = np.array(raw, dtype=np.float64).reshape(-1, 2)
        values = (pairs[:, 0] + 1j * pairs[:, 1]).astype(dtype)
    else:
        values = np.array(raw, dtype=dtype)
    if values.size == count:
        return values.reshape(shape)
    out = np.zeros(count, dtype=dtype)
    if values.size:
        out[:values.size] = values
        out[values.size:] = values[-1]
    return out.reshape(shape)


def _decode_string_content(content: bytes, count: int) -> np.ndarray:
    """TF's port::DecodeStringList: ``count`` varint32 lengths, then the strings' bytes."""
    lengths = []
    position = 0
    size = len(content)
    for _ in range(count):
        length = shift = 0
        while True:
            if position >= size:
                raise errors.InvalidArgumentError(None, None, "Malformed string tensor_content in a TensorProto")
            byte = content[position]
            position += 1
            length |= (byte & 0x7F) << shift
            if byte < 0x80:
                break
            shift += 7
        lengths.append(length)
    if position + sum(lengths) != size:
        raise errors.InvalidArgumentError(None, None, "Malformed string tensor_content in a TensorProto")
    array = np.empty(count, dtype=object)
    for i, length in enumerate(lengths):
        array[i] = content[position:position + length]
        position += length
    return array


def named_tensor(name: str, value, enum: int = None) -> NamedTensorProto:
    return NamedTensorProto(name=name, tensor=to_tensor_proto(value, enum))


def time_remaining(context):
    """Seconds left before a server-side RPC's deadline; None without one (gRPC reports an
    absent deadline as a huge number)."""
    if context is None:
        return None
    remaining = context.time_remaining()
    if remaining is None or remaining > 1e8:
        return None
    return max(0.0, remaining)


# -- status codes ------------------------------------------------------------------------------
# TF's error codes and gRPC's status codes have the same numbers (error_codes.proto).
def grpc_code(tf_code: int):
    import grpc

    for code in grpc.StatusCode:
        if code.value[0] == tf_code:
            return code
    return grpc.StatusCode.UNKNOWN


def error_class(tf_code: int):
    """The tf.errors class of a status code (UnknownError for codes it does not know)."""
    try:
        return errors.exception_type_from_error_code(int(tf_code))
    except KeyError:
        return errors.UnknownError


def status_of(exception: BaseException) -> tuple:
    """(TF status code, message) that a server reports for an exception raised by a step:
    an OpError keeps its code (its message names the op TF's way, ``[[{{node NAME}}]]``, so
    that TensorFlow's client finds the op too); ValueError, TypeError and KeyError are
    INVALID_ARGUMENT (bad feeds, fetches or graphs); anything else is INTERNAL."""
    if isinstance(exception, errors.OpError):
        message = exception.message
        op = exception.op
        name = getattr(op, "name", None)
        if name and "[[{{node " not in message:
            message = f"{message}\n\t [[{{{{node {name}}}}}]]"
        return exception.error_code, message
    if isinstance(exception, (ValueError, TypeError, KeyError)):
        text = exception.args[0] if isinstance(exception, KeyError) and exception.args else exception
        return errors.INVALID_ARGUMENT, str(text)
    return errors.INTERNAL, f"{type(exception).__name__}: {exception}"


_NODE_SUFFIX = "\n\t [[{{node "
_NODE_RE = None


def node_name_in(message: str):
    """The op a TF error message names (``[[{{node NAME}}]]``, the first one; TF's client
    looks for the same), or None."""
    global _NODE_RE
    if _NODE_RE is None:
        import re

        _NODE_RE = re.compile(r"\[\[(?:Node: )?\{\{node ([^} ]*)\}\}")
    match = _NODE_RE.search(message)
    return match.group(1) if match else None


def split_node_suffix(message: str) -> tuple:
    """(message without a trailing ``\\n\\t [[{{node NAME}}]]``, NAME or None)."""
    position = message.rfind(_NODE_SUFFIX)
    if position < 0:
        return message, None
    rest = message[position + len(_NODE_SUFFIX):]
    end = rest.find("}}]]")
    if end < 0 or rest[end + 4:].strip():
        return message, None
    return message[:position], rest[:end]
