"""Ops whose output shapes depend on the values: Unique, UniqueWithCounts,
DynamicPartition, and tf.boolean_mask (Where + Gather, as TF's python builds it; Where
and ListDiff live with their lowerings, which fold them when the values are known). After TF 1.15's OpDefs and shape functions; computed on the host with
numpy (``host_only``). A compiled op that consumes one of them runs in a later stage of
the step (tfc/runtime/session.py ``_execute_staged``), with the result fed to it: its
size binds the program's shape symbols like any feed.
"""
from __future__ import annotations

import numpy as np

from .. import dtypes
from ..graph import name_scope
from ..op_helper import apply_op
from ..registry import Attr, OpType, register
from ..tensor_shape import TensorShape, unknown_shape


def _first_occurrence_unique(x: np.ndarray) -> tuple:
    """(unique values in order of first occurrence, index of each element's value, counts)."""
    values, first, inverse, counts = np.unique(x, return_index=True, return_inverse=True, return_counts=True)
    order = np.argsort(first, kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    return values[order], rank[inverse.reshape(-1)], counts[order]


def _unique_host(op, x):
    x = np.asarray(x)
    if x.ndim != 1:
        from ..errors import InvalidArgumentError

        raise InvalidArgumentError(None, op, "unique expects a 1D vector.")
    values, idx, counts = _first_occurrence_unique(x)
    out_idx = op._attrs["out_idx"].as_numpy_dtype
    outputs = [values.astype(x.dtype), idx.astype(out_idx)]
    if op.type == "UniqueWithCounts":
        outputs.append(counts.astype(out_idx))
    return outputs


@register
class Unique(OpType):
    inputs = ["x: T"]
    outputs = ["y: T", "idx: out_idx"]
    attrs = {"T": Attr("type"), "out_idx": Attr("type", dtypes.int32, allowed=(dtypes.int32, dtypes.int64))}
    host_only = True
    not_differentiable = True

    def infer(op):
        return [TensorShape([None]), op._inputs[0].shape.merge_with(TensorShape([None]))]

    host = staticmethod(_unique_host)


@register
class UniqueWithCounts(OpType):
    inputs = ["x: T"]
    outputs = ["y: T", "idx: out_idx", "count: out_idx"]
    attrs = {"T": Attr("type"), "out_idx": Attr("type", dtypes.int32, allowed=(dtypes.int32, dtypes.int64))}
    host_only = True
    not_differentiable = True

    def infer(op):
        return [TensorShape([None]), op._inputs[0].shape.merge_with(TensorShape([None])), TensorShape([None])]

    host = staticmethod(_unique_host)


def _dynamic_partition_host(op, data, partitions):
    from ..errors import InvalidArgumentError

    data, partitions = np.asarray(data), np.asarray(partitions)
    count = op._attrs["num_partitions"]
    if data.shape[:partitions.ndim] != partitions.shape:
        raise InvalidArgumentError(None, op, f"data.shape must start with partitions.shape, got data.shape = "
                                             f"{list(data.shape)}, partitions.shape = {list(partitions.shape)}")
    bad = np.flatnonzero((partitions < 0) | (partitions >= count))
    if bad.size:
        from tfc.program_errors import slice_debug_string

        where = slice_debug_string(list(partitions.shape), int(bad[0]))
        raise InvalidArgumentError(None, op, f"partitions{where} = {partitions.reshape(-1)[bad[0]]} is not in "
                                             f"[0, {count})")
    flat = data.reshape((-1,) + data.shape[partitions.ndim:])
    keys = partitions.reshape(-1)
    return [flat[keys == i] for i in range(count)]


@register
class DynamicPartition(OpType):
    inputs = ["data: T", "partitions: int32"]
    outputs = ["outputs: num_partitions * T"]
    attrs = {"num_partitions": Attr("int"), "T": Attr("type")}
    host_only = True
    not_differentiable = True

    def infer(op):
        data, partitions = op._inputs[0].shape, op._inputs[1].shape
        if data.ndims is None or partitions.ndims is None:
            return [unknown_shape()] * op._attrs["num_partitions"]
        shape = TensorShape([None]).concatenate(data[partitions.ndims:])
        return [shape] * op._attrs["num_partitions"]

    host = staticmethod(_dynamic_partition_host)


def unique(x, out_idx=dtypes.int32, name=None):
    """tf.unique: (y, idx) with y the values of x in order of first occurrence."""
    return tuple(apply_op("Unique", [x], {"out_idx": dtypes.as_dtype(out_idx)}, name=name).outputs)


def unique_with_counts(x, out_idx=dtypes.int32, name=None):
    return tuple(apply_op("UniqueWithCounts", [x], {"out_idx": dtypes.as_dtype(out_idx)}, name=name).outputs)


def dynamic_partition(data, partitions, num_partitions, name=None):
    """tf.dynamic_partition: data split into ``num_partitions`` by the partition ids."""
    op = apply_op("DynamicPartition", [data, partitions], {"num_partitions": int(num_partitions)}, name=name)
    return list(op.outputs)


def boolean_mask(tensor, mask, name="boolean_mask", axis=None):
    """tf.boolean_mask, as TF 1.15's array_ops builds it: the leading dims that ``mask``
    covers (from ``axis``) flattened, then ``gather(tensor, squeeze(where(mask), 1))``."""
    from ..convert import convert_to_tensor
    from .array_ops import reshape, shape, squeeze
    from .concat_ops import concat
    from .math_ops import reduce_prod
    from .selection_ops import gather, where

    with name_scope(name, values=[tensor, mask]):
        tensor = convert_to_tensor(tensor, name="tensor")
        mask = convert_to_tensor(mask, name="mask")
        shape_mask = mask.shape
        ndims_mask = shape_mask.ndims
        shape_tensor = tensor.shape
        if ndims_mask == 0:
            raise ValueError("mask cannot be scalar.")
        if ndims_mask is None:
            raise ValueError("Number of mask dimensions must be specified, even if some dimensions are None.  "
                             "E.g. shape=[None] is ok, but shape=None is not.")
        axis = 0 if axis is None else axis
        shape_tensor[axis:axis + ndims_mask].assert_is_compatible_with(shape_mask)
        leading_size = reduce_prod(shape(tensor)[axis:axis + ndims_mask], [0])
        tensor = reshape(tensor, concat([shape(tensor)[:axis], [leading_size], shape(tensor)[axis + ndims_mask:]], 0))
        first_dim = shape_tensor[axis:axis + ndims_mask].num_elements()
        tensor.set_shape(TensorShape(shape_tensor[:axis]).concatenate([first_dim])
                         .concatenate(shape_tensor[axis + ndims_mask:]))
        mask = reshape(mask, [-1])
        indices = squeeze(where(mask), axis=[1])
        return gather(tensor, indices, axis=axis)


TF_EXPORTS = ["unique", "unique_with_counts", "dynamic_partition", "boolean_mask"]
