"""RecvTensorResponse bytes without protobuf message objects (TF's grpc_tensor_coding.cc).

A RecvTensor answer is mostly one tensor's raw bytes. Building it as protobuf messages
copies those bytes four times (``tobytes``, ``TensorProto.tensor_content``, the response's
copy of the TensorProto, ``SerializeToString``), and reading it back three times; for the
megabyte tensors of a parameter server that was most of its CPU time. Here the sender
writes the protobuf wire format itself: a few header bytes, then the array's memory, joined
in one copy; the receiver walks the fields and makes the array over the received bytes
(``np.frombuffer``: no copy).

The bytes are ordinary protobuf: TensorFlow's peers read them as a RecvTensorResponse, and
an answer that does not have the plain layout (a string tensor, typed value fields instead
of ``tensor_content``, a big-endian peer...) is parsed by protobuf instead.
"""
from __future__ import annotations

import numpy as np

from tfc.protos import worker_pb2

from . import wire

_LITTLE = np.little_endian


def _varint(value: int) -> bytes:
    value &= 0xFFFFFFFFFFFFFFFF
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _length_delimited(field: int, payload_size: int) -> bytes:
    return _varint(field << 3 | 2) + _varint(payload_size)


def recv_tensor_response(value, send_start_micros: int) -> bytes:
    """The serialized RecvTensorResponse for ``value`` (is_dead false)."""
    array = np.asarray(value)
    if array.dtype.kind in ("O", "S", "U") or not _LITTLE:
        response = worker_pb2.RecvTensorResponse(tensor=wire.to_tensor_proto(array), is_dead=False,
                                                 send_start_micros=send_start_micros)
        return response.SerializeToString()
    enum = wire.datatype_enum(array.dtype)
    shape = array.shape
    array = np.ascontiguousarray(array)  # (a 0-d array comes back 1-d)
    dims = b"".join(_length_delimited(2, len(size)) + size
                    for size in (b"\x08" + _varint(d) if d else b"" for d in shape))
    head = b"\x08" + _varint(enum)
    if dims:
        head += _length_delimited(2, len(dims)) + dims
    if array.nbytes:
        head += _length_delimited(4, array.nbytes)
    tensor_size = len(head) + array.nbytes
    tail = b"\x18" + _varint(send_start_micros)  # send_start_micros = 3; is_dead false is not written
    prefix = _length_delimited(1, tensor_size) + head
    return b"".join((prefix, memoryview(array.reshape(-1)).cast("B"), tail))


class RecvTensorAnswer:
    """A decoded RecvTensorResponse: ``is_dead`` and ``array`` (read-only when it lies over
    the received bytes)."""

    __slots__ = ("is_dead", "array")

    def __init__(self, is_dead: bool, array):
        self.is_dead = is_dead
        self.array = array


class _NotPlain(Exception):
    """The answer does not have the plain layout: protobuf parses it."""


def _read_varint(data, position: int) -> tuple:
    result = shift = 0
    while True:
        if position >= len(data) or shift > 63:
            raise _NotPlain
        byte = data[position]
        position += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result, position
        shift += 7


def _fields(data, start: int, end: int):
    """(field number, wire type, value or (begin, end) of the payload) of each field."""
    position = start
    while position < end:
        key, position = _read_varint(data, position)
        field, kind = key >> 3, key & 7
        if kind == 0:
            value, position = _read_varint(data, position)
            yield field, kind, value
        elif kind == 2:
            size, position = _read_varint(data, position)
            if position + size > end:
                raise _NotPlain
            yield field, kind, (position, position + size)
            position += size
        else:
            raise _NotPlain


def _shape(data, begin: int, end: int) -> tuple:
    dims = []
    for field, kind, value in _fields(data, begin, end):
        if field != 2 or kind != 2:
            raise _NotPlain  # unknown_rank, or not a dim
        size = None
        for dim_field, dim_kind, dim_value in _fields(data, *value):
            if dim_field == 1 and dim_kind == 0:
                size = dim_value
            elif dim_field != 2:
                raise _NotPlain
        dims.append(0 if size is None else size)
    return tuple(dims)


def _plain(data) -> RecvTensorAnswer:
    is_dead = False
    tensor = None
    for field, kind, value in _fields(data, 0, len(data)):
        if field == 1 and kind == 2:
            tensor = value
        elif field == 2 and kind == 0:
            is_dead = bool(value)
        elif field in (3, 5) and kind == 0:
            continue
        else:
            raise _NotPlain
    if tensor is None:
        raise _NotPlain
    enum, shape, content = 0, (), None
    for field, kind, value in _fields(data, *tensor):
        if field == 1 and kind == 0:
            enum = value
        elif field == 2 and kind == 2:
            shape = _shape(data, *value)
        elif field == 3 and kind == 0:
            continue
        elif field == 4 and kind == 2:
            content = value
        else:
            raise _NotPlain  # typed value fields, resource handles, variants
    base = enum - 100 if enum > 100 else enum
    if base == 7 or base == 0:
        raise _NotPlain
    dtype = wire.numpy_dtype(enum)
    count = 1
    for d in shape:
        count *= d
    if content is None:
        if count:
            raise _NotPlain
        return RecvTensorAnswer(is_dead, np.zeros(shape, dtype=dtype))
    begin, end = content
    if end - begin != count * dtype.itemsize:
        raise _NotPlain  # protobuf's path reports the size mismatch
    return RecvTensorAnswer(is_dead, np.frombuffer(data, dtype=dtype, count=count, offset=begin).reshape(shape))


def parse_recv_tensor_response(data: bytes) -> RecvTensorAnswer:
    """A RecvTensorResponse's bytes as (is_dead, array)."""
    if _LITTLE:
        try:
            return _plain(data)
        except _NotPlain:
            pass
    response = worker_pb2.RecvTensorResponse.FromString(data)
    return RecvTensorAnswer(response.is_dead, wire.to_ndarray(response.tensor))
