"""tf.SparseTensor, tf.SparseTensorValue and tf.sparse_placeholder (TF 2.x's
framework/sparse_tensor.py and array_ops.sparse_placeholder, graph mode).

A SparseTensor is no graph node: it is three tensors, ``indices`` (int64 [N, rank]),
``values`` ([N]) and ``dense_shape`` (int64 [rank]), that the sparse ops
(tfc/frontend/ops/sparse_ops.py) take and return. ``Session.run`` fetches one as a
SparseTensorValue of three arrays (tfc/runtime/fetch.py) and feeds one from a
SparseTensorValue or an ``(indices, values, dense_shape)`` tuple (``expand_feeds``, called
by tfc/runtime/session.py), as TF's session does. ``tf.convert_to_tensor`` refuses one
with TF's TypeError.
"""
from __future__ import annotations

import collections

from . import dtypes
from .graph import Tensor, _run_using_default_session, name_scope
from .tensor_shape import TensorShape, dimension_value

SparseTensorValue = collections.namedtuple("SparseTensorValue", ["indices", "values", "dense_shape"])


class SparseTensor:
    """A sparse tensor: ``values[i]`` at ``indices[i]`` of a dense tensor of ``dense_shape``."""

    is_tensor_like = True  # tf.is_tensor

    @classmethod
    def from_value(cls, sparse_tensor_value):
        if not is_sparse(sparse_tensor_value):
            raise TypeError(f"Argument sparse_tensor_value={sparse_tensor_value} is neither a SparseTensor nor "
                            "SparseTensorValue.")
        return SparseTensor(indices=sparse_tensor_value.indices, values=sparse_tensor_value.values,
                            dense_shape=sparse_tensor_value.dense_shape)

    def __init__(self, indices, values, dense_shape):
        from .convert import convert_to_tensor
        from .tensor_util import constant_value_as_shape

        with name_scope(None, "SparseTensor", [indices, values, dense_shape]):
            indices = convert_to_tensor(indices, name="indices", dtype=dtypes.int64)
            values = convert_to_tensor(values, name="values")
            dense_shape = convert_to_tensor(dense_shape, name="dense_shape", dtype=dtypes.int64)
            dense_shape_default = constant_value_as_shape(dense_shape)
        self._indices = indices
        self._values = values
        self._dense_shape = dense_shape
        self._dense_shape_default = dense_shape_default
        indices_shape = indices.shape.with_rank(2)
        values_shape = values.shape.with_rank(1)
        dense_shape_shape = dense_shape.shape.with_rank(1)
        indices_shape.dims[0].assert_is_compatible_with(values_shape.dims[0])
        indices_shape.dims[1].assert_is_compatible_with(dense_shape_shape.dims[0])

    # -- the components ----------------------------------------------------------------------
    @property
    def indices(self) -> Tensor:
        return self._indices

    @property
    def values(self) -> Tensor:
        return self._values

    @property
    def dense_shape(self) -> Tensor:
        return self._dense_shape

    @property
    def op(self):
        return self._values.op

    @property
    def dtype(self):
        return self._values.dtype

    @property
    def graph(self):
        return self._indices.graph

    @property
    def shape(self) -> TensorShape:
        return self._dense_shape_default

    def get_shape(self) -> TensorShape:
        return self._dense_shape_default

    def set_shape(self, shape) -> None:
        if not isinstance(shape, TensorShape):
            shape = TensorShape(shape)
        self._dense_shape_default = self._dense_shape_default.merge_with(shape)

    def with_values(self, new_values) -> "SparseTensor":
        return SparseTensor(self._indices, new_values, self._dense_shape)

    def consumers(self) -> list:
        """The ops that consume any of the three component tensors."""
        out = []
        for t in (self._indices, self._values, self._dense_shape):
            for op in t.consumers():
                if op not in out:
                    out.append(op)
        return sorted(out, key=lambda op: op.name)

    def eval(self, feed_dict=None, session=None) -> SparseTensorValue:
        indices, values, dense_shape = _run_using_default_session(
            [self.indices, self.values, self.dense_shape], feed_dict, self.graph, session, "evaluate tensor", "eval")
        return SparseTensorValue(indices, values, dense_shape)

    def __repr__(self) -> str:
        return f"SparseTensor(indices={self._indices}, values={self._values}, dense_shape={self._dense_shape})"

    # -- operators (TF's sparse-dense element-wise ops) ------------------------------------------
    def __mul__(self, other):
        from .ops.sparse_ops import sparse_dense_cwise_op

        return sparse_dense_cwise_op("SparseDenseCwiseMul", self, other, "mul")

    def __truediv__(self, other):
        from .ops.sparse_ops import sparse_dense_cwise_op

        return sparse_dense_cwise_op("SparseDenseCwiseDiv", self, other, "truediv")

    __div__ = __truediv__


def is_sparse(x) -> bool:
    """A SparseTensor or a SparseTensorValue."""
    return isinstance(x, (SparseTensor, SparseTensorValue))


def convert_to_tensor_or_sparse_tensor(value, dtype=None, name=None):
    """tf.convert_to_tensor_or_sparse_tensor: SparseTensors (and their values) stay sparse."""
    from .convert import convert_to_tensor

    if dtype is not None:
        dtype = dtypes.as_dtype(dtype)
    if isinstance(value, SparseTensorValue):
        value = SparseTensor.from_value(value)
    if isinstance(value, SparseTensor):
        if dtype and not dtype.is_compatible_with(value.dtype):
            raise RuntimeError(f"Sparse dtype: requested = {dtype}, actual = {value.dtype}")
        return value
    return convert_to_tensor(value, dtype=dtype, name=name)


def convert_to_sparse_tensor(sp_input) -> SparseTensor:
    """TF's sparse_ops._convert_to_sparse_tensor."""
    if isinstance(sp_input, SparseTensorValue):
        return SparseTensor.from_value(sp_input)
    if not isinstance(sp_input, SparseTensor):
        raise TypeError("Input must be a SparseTensor.")
    return sp_input


def _refuse_conversion(value, dtype=None, name=None, as_ref=False):
    """tf.convert_to_tensor(SparseTensor): TF's TypeError (a SparseTensor is no dense tensor)."""
    raise TypeError(f"Failed to convert elements of {value} to Tensor. Consider casting elements to a supported "
                    "type. See https://www.tensorflow.org/api_docs/python/tf/dtypes for supported TF dtypes.")


def sparse_placeholder(dtype, shape=None, name=None):
    """tf.sparse_placeholder: a SparseTensor of three placeholders (the dense shape a
    PlaceholderWithDefault of the given shape, -1 for unknown dims, when a shape is given)."""
    from .convert import convert_to_tensor
    from .graph import get_default_graph
    from .ops.array_ops import placeholder, placeholder_with_default
    from .tensor_util import constant_value_as_shape

    if getattr(get_default_graph(), "_eager_apply", None) is not None:
        raise RuntimeError("`sparse_placeholder` is not compatible with eager execution.")
    shape_name = (name + "/shape") if name is not None else None
    default_shape_name = (name + "/shape_default") if name is not None else None
    if shape is None:
        rank = None
        dense_shape = placeholder(dtypes.int64, shape=[rank], name=shape_name)
        dense_shape_default = constant_value_as_shape(dense_shape)
    else:
        if isinstance(shape, Tensor):
            rank = shape.shape.dims[0].value
            dense_shape_default = constant_value_as_shape(shape)
        else:
            dims = [dimension_value(d) for d in shape]
            rank = len(dims)
            dense_shape_default = TensorShape(tuple(None if d == -1 else d for d in dims))
            shape = convert_to_tensor([-1 if d is None else d for d in dims], dtype=dtypes.int64,
                                      name=default_shape_name)
        dense_shape = placeholder_with_default(shape, shape=shape.shape, name=shape_name)
    result = SparseTensor(
        values=placeholder(dtype, shape=[None], name=(name + "/values") if name is not None else None),
        indices=placeholder(dtypes.int64, shape=[None, rank], name=(name + "/indices") if name is not None else None),
        dense_shape=dense_shape)
    result.set_shape(dense_shape_default)
    return result


# -- Session.run: feeding a SparseTensor ----------------------------------------------------------
def expand_feeds(feed_dict):
    """``feed_dict`` with each SparseTensor key replaced by its three component tensors, fed
    from a SparseTensorValue or any ``(indices, values, dense_shape)`` sequence (TF zips the
    components with the value). The dict itself when it has no SparseTensor key."""
    if not feed_dict:
        return feed_dict
    for key in feed_dict:
        if isinstance(key, SparseTensor):
            break
    else:
        return feed_dict
    out = {}
    for key, value in feed_dict.items():
        if isinstance(key, SparseTensor):  # (a SparseTensor value is no sequence: TF's TypeError)
            for component, part in zip((key.indices, key.values, key.dense_shape), value):
                out[component] = part
        else:
            out[key] = value
    return out


def _register() -> None:
    from .convert import register_tensor_conversion_function

    register_tensor_conversion_function(SparseTensor, _refuse_conversion)


_register()

TF_EXPORTS = ["SparseTensor", "SparseTensorValue", "sparse_placeholder", "convert_to_tensor_or_sparse_tensor"]
SPARSE_EXPORTS = {"SparseTensor": SparseTensor, "placeholder": sparse_placeholder}
