"""tfc/distributed/tensor_coding.py: RecvTensorResponse bytes written and read without
protobuf messages are exactly protobuf's, and anything else falls back to protobuf."""
from __future__ import annotations

import numpy as np
import pytest

from tfc.distributed import tensor_coding, wire
from tfc.protos import worker_pb2

VALUES = [
    np.arange(12, dtype=np.float32).reshape(3, 4),
    np.float64(2.5),
    np.zeros((0, 3), np.int32),
    np.array([True, False]),
    np.arange(300, dtype=np.int64).reshape(3, 100),
    np.array([b"ab", b"c"], dtype=object),
    np.ones((2, 3), np.float16)[:, ::2],
    np.arange(6, dtype=np.int32).reshape(2, 3).T,
    np.complex64(1 + 2j),
    np.arange(5, dtype=np.uint8),
]


@pytest.mark.parametrize("value", VALUES, ids=lambda v: f"{np.asarray(v).dtype}{list(np.shape(v))}")
def test_bytes_are_protobufs_and_read_back(value):
    data = tensor_coding.recv_tensor_response(value, 12345)
    expected = worker_pb2.RecvTensorResponse(tensor=wire.to_tensor_proto(value), send_start_micros=12345)
    assert data == expected.SerializeToString()
    answer = tensor_coding.parse_recv_tensor_response(data)
    assert answer.is_dead is False
    assert answer.array.dtype == np.asarray(value).dtype and answer.array.shape == np.shape(value)
    np.testing.assert_array_equal(answer.array, value)


def test_typed_value_fields_and_dead_tensors_are_read_by_protobuf():
    response = worker_pb2.RecvTensorResponse(is_dead=True)
    response.tensor.dtype = 1
    response.tensor.tensor_shape.dim.add(size=3)
    response.tensor.float_val.extend([1.0, 2.0])  # TF's short form: the last value repeats
    answer = tensor_coding.parse_recv_tensor_response(response.SerializeToString())
    assert answer.is_dead is True
    np.testing.assert_array_equal(answer.array, np.array([1.0, 2.0, 2.0], np.float32))


def test_a_wrong_content_size_is_an_invalid_argument():
    response = worker_pb2.RecvTensorResponse()
    response.tensor.dtype = 1
    response.tensor.tensor_shape.dim.add(size=3)
    response.tensor.tensor_content = b"\0" * 8
    from tfc.frontend import errors

    with pytest.raises(errors.InvalidArgumentError, match="has 8 bytes of tensor_content, not 12"):
        tensor_coding.parse_recv_tensor_response(response.SerializeToString())
