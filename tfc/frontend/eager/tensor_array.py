"""tf.TensorArray in eager mode (TF 1.x's _EagerTensorArray): a Python list of tensors.

Writes store the tensor (and return the array itself: eager arrays are mutable); reads
return it; stack/gather/concat are ops (so a GradientTape differentiates through them).
"""
from __future__ import annotations

import numpy as np

from .. import dtypes, errors
from ..tensor_shape import TensorShape, unknown_shape
from .tensor import EagerTensor


def _convert(value, dtype):
    from ..convert import convert_to_tensor

    return convert_to_tensor(value, dtype=dtype)


def _index(index) -> int:
    return int(np.asarray(index._array if isinstance(index, EagerTensor) else index))


class EagerTensorArray:
    """A TensorArray whose elements are eager tensors."""

    def __init__(self, dtype, size=None, dynamic_size=None, clear_after_read=None, tensor_array_name=None,
                 handle=None, flow=None, infer_shape=True, element_shape=None,
                 colocate_with_first_write_call=True, name=None):
        del clear_after_read, tensor_array_name, colocate_with_first_write_call, name
        if handle is not None:
            raise ValueError("TensorArray handles are not supported in eager mode.")
        if size is None:
            raise ValueError("Argument `size` must be provided if handle is not provided.")
        del flow
        self._dtype = dtypes.as_dtype(dtype).base_dtype
        self._dynamic_size = bool(dynamic_size)
        self._infer_shape = infer_shape
        self._element_shape = unknown_shape() if element_shape is None else TensorShape(element_shape)
        self._tensors = [None] * _index(size)

    @property
    def dtype(self):
        return self._dtype

    @property
    def flow(self):
        """Eager arrays have no flow (TF returns a dummy): a scalar 0."""
        return EagerTensor(np.zeros((), np.float32), dtypes.float32)

    @property
    def handle(self):
        return None

    @property
    def element_shape(self) -> TensorShape:
        return self._element_shape

    def identity(self):
        return self

    def grad(self, source, flow=None, name=None):
        raise NotImplementedError("TensorArray.grad is not supported when executing eagerly; eager's gradient "
                                  "implementation does not use/need this function to compute gradients of "
                                  "operations that use TensorArrays.")

    def read(self, index, name=None):
        i = _index(index)
        if i < 0 or i >= len(self._tensors):
            raise errors.InvalidArgumentError(None, None, f"Tried to read from index {i} but array size is: "
                                                          f"{len(self._tensors)}")
        tensor = self._tensors[i]
        if tensor is None:
            if self._element_shape.is_fully_defined():
                return EagerTensor(np.zeros(self._element_shape.as_list(), self._dtype.as_numpy_dtype), self._dtype)
            raise errors.InvalidArgumentError(None, None, f"Could not read from TensorArray index {i}.  Furthermore, "
                                                          "the element shape is not fully defined: "
                                                          f"{self._element_shape}.  It is possible you are working "
                                                          "with a resizeable TensorArray and stop_gradients is not "
                                                          "allowing the gradients to be written.")
        return tensor

    def write(self, index, value, name=None):
        i = _index(index)
        value = _convert(value, self._dtype)
        if i < 0:
            raise errors.InvalidArgumentError(None, None, f"Writing to negative indices (index {i}) is not allowed.")
        if i >= len(self._tensors):
            if not self._dynamic_size:
                raise errors.InvalidArgumentError(None, None, f"Tried to write to index {i} but array is not "
                                                              f"resizeable and size is: {len(self._tensors)}")
            self._tensors.extend([None] * (i + 1 - len(self._tensors)))
        if self._infer_shape:
            if not self._element_shape.is_compatible_with(value.shape):
                raise ValueError(f"Incompatible shape for value ({value.shape}), expected ({self._element_shape})")
            self._element_shape = self._element_shape.merge_with(value.shape)
        self._tensors[i] = value
        return self

    def _all(self) -> list:
        return [self.read(i) for i in range(len(self._tensors))]

    def stack(self, name=None):
        from ..ops.concat_ops import stack

        if not self._tensors:
            shape = [0] + (self._element_shape.as_list() if self._element_shape.is_fully_defined() else [])
            return EagerTensor(np.zeros(shape, self._dtype.as_numpy_dtype), self._dtype)
        return stack(self._all())

    def gather(self, indices, name=None):
        from ..ops.concat_ops import stack

        values = np.asarray(indices._array if isinstance(indices, EagerTensor) else indices).reshape(-1)
        return stack([self.read(int(i)) for i in values])

    def concat(self, name=None):
        from ..ops.concat_ops import concat

        return concat(self._all(), 0)

    def unstack(self, value, name=None):
        from ..ops.concat_ops import unstack

        value = _convert(value, self._dtype)
        for i, element in enumerate(unstack(value)):
            self.write(i, element)
        return self

    def scatter(self, indices, value, name=None):
        from ..ops.concat_ops import unstack

        value = _convert(value, self._dtype)
        values = np.asarray(indices._array if isinstance(indices, EagerTensor) else indices).reshape(-1)
        for i, element in zip(values, unstack(value)):
            self.write(int(i), element)
        return self

    def split(self, value, lengths, name=None):
        from ..ops.concat_ops import split

        value = _convert(value, self._dtype)
        sizes = [int(n) for n in np.asarray(lengths._array if isinstance(lengths, EagerTensor) else lengths)]
        for i, element in enumerate(split(value, sizes, axis=0)):
            self.write(i, element)
        return self

    def size(self, name=None):
        return EagerTensor(np.array(len(self._tensors), np.int32), dtypes.int32)

    def close(self, name=None):
        self._tensors = []
