"""TensorProto <-> numpy on the wire, and status codes."""
from __future__ import annotations

import numpy as np
import pytest

from tfc.distributed import wire
from tfc.frontend import errors
from tfc.protos import TensorProto


@pytest.mark.parametrize("dtype,enum", [(np.float32, 1), (np.float64, 2), (np.int32, 3), (np.uint8, 4),
                                        (np.int16, 5), (np.int8, 6), (np.complex64, 8), (np.int64, 9),
                                        (np.bool_, 10), (np.uint16, 17), (np.complex128, 18), (np.float16, 19),
                                        (np.uint32, 22), (np.uint64, 23)])
def test_numeric_round_trip_uses_tensor_content(dtype, enum):
    array = (np.arange(6).reshape(2, 3) % 2 == 1) if dtype is np.bool_ else np.arange(6, dtype=dtype).reshape(2, 3)
    proto = wire.to_tensor_proto(array)
    assert proto.dtype == enum
    assert [d.size for d in proto.tensor_shape.dim] == [2, 3]
    assert proto.tensor_content == np.ascontiguousarray(array).tobytes()
    back = wire.to_ndarray(TensorProto.FromString(proto.SerializeToString()))
    assert back.dtype == np.dtype(dtype) and back.shape == (2, 3) and np.array_equal(back, array)
    assert back.flags.writeable


def test_scalars_empty_and_requested_type():
    assert wire.to_ndarray(wire.to_tensor_proto(np.float32(2.5))).shape == ()
    assert wire.to_ndarray(wire.to_tensor_proto(np.float32(2.5)))[()] == 2.5
    empty = wire.to_tensor_proto(np.zeros((0, 4), np.int32))
    assert empty.tensor_content == b""
    assert wire.to_ndarray(empty).shape == (0, 4)
    as_ref = wire.to_tensor_proto(np.arange(3), 101)  # DT_FLOAT_REF: sent as DT_FLOAT
    assert as_ref.dtype == 1 and wire.to_ndarray(as_ref).tolist() == [0.0, 1.0, 2.0]


def test_typed_value_fields_and_their_broadcast():
    proto = TensorProto(dtype=1, float_val=[1.5])
    proto.tensor_shape.dim.add(size=3)
    assert wire.to_ndarray(proto).tolist() == [1.5, 1.5, 1.5]
    proto = TensorProto(dtype=3, int_val=[1, 2])
    proto.tensor_shape.dim.add(size=4)
    assert wire.to_ndarray(proto).tolist() == [1, 2, 2, 2]
    half = TensorProto(dtype=19, half_val=[int(np.float16(0.5).view(np.uint16))])
    assert wire.to_ndarray(half)[()] == np.float16(0.5)
    complex_ = TensorProto(dtype=8, scomplex_val=[1.0, 2.0])
    assert wire.to_ndarray(complex_)[()] == np.complex64(1 + 2j)
    zeros = TensorProto(dtype=9)
    zeros.tensor_shape.dim.add(size=2)
    assert wire.to_ndarray(zeros).tolist() == [0, 0]


def test_strings():
    array = np.array([[b"ab", b""], [b"c", b"\xff"]], dtype=object)
    proto = wire.to_tensor_proto(array)
    assert proto.dtype == 7 and list(proto.string_val) == [b"ab", b"", b"c", b"\xff"]
    assert wire.to_ndarray(proto).tolist() == array.tolist()
    assert list(wire.to_tensor_proto(np.array(["é", "x"])).string_val) == ["é".encode(), b"x"]
    assert wire.to_ndarray(wire.to_tensor_proto(np.asarray(b"one")))[()] == b"one"
    # TensorFlow's masters send strings as tensor_content: varint32 lengths, then the bytes
    encoded = TensorProto(dtype=7, tensor_content=bytes([2, 0, 200, 1]) + b"ab" + b"x" * 200)
    encoded.tensor_shape.dim.add(size=3)
    assert wire.to_ndarray(encoded).tolist() == [b"ab", b"", b"x" * 200]
    encoded.tensor_content = bytes([5]) + b"ab"
    with pytest.raises(errors.InvalidArgumentError, match="Malformed string tensor_content"):
        wire.to_ndarray(encoded)


def test_bad_content_and_unsupported_types():
    proto = TensorProto(dtype=1, tensor_content=b"\0" * 7)
    proto.tensor_shape.dim.add(size=2)
    with pytest.raises(errors.InvalidArgumentError, match=r"has 7 bytes of tensor_content, not 8"):
        wire.to_ndarray(proto)
    with pytest.raises(errors.UnimplementedError, match="tensors of type resource cannot be sent"):
        wire.to_ndarray(TensorProto(dtype=20))
    with pytest.raises(errors.UnimplementedError, match="bfloat16"):
        wire.numpy_dtype(14)


def test_status_of():
    op = type("Op", (), {"name": "v/read"})()
    assert wire.status_of(errors.FailedPreconditionError(None, op, "uninit v")) == \
        (errors.FAILED_PRECONDITION, "uninit v\n\t [[{{node v/read}}]]")
    assert wire.status_of(errors.AbortedError(None, None, "gone")) == (errors.ABORTED, "gone")
    assert wire.status_of(ValueError("bad feed")) == (errors.INVALID_ARGUMENT, "bad feed")
    assert wire.status_of(KeyError("k")) == (errors.INVALID_ARGUMENT, "k")
    assert wire.status_of(RuntimeError("boom")) == (errors.INTERNAL, "RuntimeError: boom")
    assert wire.split_node_suffix("uninit v\n\t [[{{node v/read}}]]") == ("uninit v", "v/read")
    assert wire.split_node_suffix("no node") == ("no node", None)
    assert wire.node_name_in("x\n\t [[{{node a/b}}]]\nRecent logs") == "a/b"
    assert wire.error_class(errors.UNAVAILABLE) is errors.UnavailableError
    assert wire.error_class(99) is errors.UnknownError
    assert wire.grpc_code(errors.DEADLINE_EXCEEDED).name == "DEADLINE_EXCEEDED"
