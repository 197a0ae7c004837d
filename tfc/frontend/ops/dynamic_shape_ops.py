"""Ops whose output shapes depend on the values: Unique, UniqueWithCounts,
DynamicPartition, and tf.boolean_mask (Where + Gather, as TF's python builds it; Where
and ListDiff live with their lowerings, which fold them when the values are known). After
TF 1.15's OpDefs and shape functions. They run between the step's compiled stages
(``host_only``), each on a compiled kernel whose outputs are sized by a bound and trimmed
to the count it reports (bounded_kernels.py); a compiled op that consumes one of them
runs in a later stage of the step (tfc/runtime/session.py ``_execute_staged``), with the
result fed to it: its size binds the program's shape symbols like any feed.

The sorted segment reductions (SegmentSum, SegmentMean, SegmentMax, SegmentMin,
SegmentProd) have ``ids[-1] + 1`` output rows. Where the segment ids are known while
compiling (constants, or values the compiler folds) they are compiled: each segment's rows
are gathered into a ``[segments, longest segment]`` table padded with the reduction's
identity, then reduced. Ids known only at run time make the op run on the host
(``host_fallback``, like tf.where's indices), in a stage of its own. Their gradients are
TF's (math_grad.py), and DynamicPartition's is TF's ParallelDynamicStitch of the
gradients over the partitioned indices (DynamicStitch, in math_ops.py, runs on the host
when its indices are known only at run time).
"""
from __future__ import annotations

import numpy as np

from .. import dtypes
from ..graph import name_scope
from ..op_helper import apply_op
from ..registry import Attr, OpType, register
from ..tensor_shape import TensorShape, unknown_shape
from . import bounded_kernels
from .bounded_kernels import compilable


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
    if compilable(x.dtype):
        values, idx, counts = bounded_kernels.unique(x)
    else:  # strings
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
    if compilable(data.dtype):
        parts, placed = bounded_kernels.dynamic_partition(data, partitions, count)
        if placed == partitions.size:
            return parts
    flat = data.reshape((-1,) + data.shape[partitions.ndim:])
    keys = partitions.reshape(-1)
    bad = np.flatnonzero((keys < 0) | (keys >= count))
    if bad.size:
        from tfc.program_errors import slice_debug_string

        where = slice_debug_string(list(partitions.shape), int(bad[0]))
        raise InvalidArgumentError(None, op, f"partitions{where} = {keys[bad[0]]} is not in [0, {count})")
    return [flat[keys == i] for i in range(count)]  # strings


def _dynamic_partition_grad(op, *grads):
    """TF's _DynamicPartitionGrads: the gradients stitched back to the rows they came from."""
    from .math_ops import array_ops, parallel_dynamic_stitch, reduce_prod

    data, indices = op.inputs
    prefix_shape = array_ops.shape(indices)
    original_indices = array_ops.reshape(array_ops.range(reduce_prod(prefix_shape)), prefix_shape)
    partitioned_indices = dynamic_partition(original_indices, indices, op.get_attr("num_partitions"))
    reconstructed = parallel_dynamic_stitch(partitioned_indices, list(grads))
    return [array_ops.reshape(reconstructed, array_ops.shape(data)), None]


@register
class DynamicPartition(OpType):
    inputs = ["data: T", "partitions: int32"]
    outputs = ["outputs: num_partitions * T"]
    attrs = {"num_partitions": Attr("int"), "T": Attr("type")}
    host_only = True
    gradient = _dynamic_partition_grad

    def infer(op):
        data, partitions = op._inputs[0].shape, op._inputs[1].shape
        if data.ndims is None or partitions.ndims is None:
            return [unknown_shape()] * op._attrs["num_partitions"]
        shape = TensorShape([None]).concatenate(data[partitions.ndims:])
        return [shape] * op._attrs["num_partitions"]

    host = staticmethod(_dynamic_partition_host)


# -- sorted segment reductions -------------------------------------------------------------
_SEGMENT_OPS = {"SegmentSum": "sum", "SegmentMean": "mean", "SegmentMax": "max", "SegmentMin": "min",
                "SegmentProd": "prod"}
_SEGMENT_TYPES = (dtypes.float32, dtypes.float64, dtypes.int32, dtypes.uint8, dtypes.int16, dtypes.int8,
                  dtypes.int64, dtypes.bfloat16, dtypes.uint16, dtypes.float16, dtypes.uint32, dtypes.uint64)


def _segment_shape(op) -> list:
    """TF's SegmentReductionShapeFn: [?] + data.shape[1:]."""
    from . import inference_context as ic

    def shape_fn(c):
        data = ic.with_rank_at_least(c.input(0), 1)
        ic.with_rank(c.input(1), 1)
        return [ic.concatenate([None], ic.subshape(data, 1))]

    return ic.run_shape_fn(op, shape_fn)


def _segment_errors(op, ids: np.ndarray, rows: int) -> None:
    """TF's SegmentReductionOp checks (InvalidArgumentError), in its order."""
    from ..errors import InvalidArgumentError

    if ids.ndim != 1:
        raise InvalidArgumentError(None, op, "segment_ids should be a vector.")
    if ids.shape[0] != rows:
        raise InvalidArgumentError(None, op, "segment_ids should be the same size as dimension 0 of input.")
    if ids.size and (ids[-1] + 1 < 0 or ids[0] < 0):
        raise InvalidArgumentError(None, op, "segment ids must be >= 0")
    if ids.size > 1 and np.any(ids[1:] < ids[:-1]):
        raise InvalidArgumentError(None, op, "segment ids are not increasing")


def _segment_host(op, data, segment_ids):
    """The reduction in numpy (ids known only at run time): empty segments are 0 (1 for a
    product), a mean divides in the data's type."""
    data, ids = np.asarray(data), np.asarray(segment_ids).astype(np.int64)
    _segment_errors(op, ids, data.shape[0] if data.ndim else -1)
    kind = _SEGMENT_OPS[op.type]
    count = int(ids[-1]) + 1 if ids.size else 0
    out = np.full((count,) + data.shape[1:], 1 if kind == "prod" else 0, dtype=data.dtype)
    bounds = np.flatnonzero(np.diff(ids)) + 1
    for start, stop in zip(np.concatenate([[0], bounds]), np.concatenate([bounds, [ids.size]])):
        if start == stop:
            continue
        rows = data[start:stop]
        if kind == "mean":
            total = rows.sum(axis=0, dtype=data.dtype)
            value = total / np.asarray(stop - start, dtype=data.dtype) if data.dtype.kind in "fc" else \
                (np.trunc(total / (stop - start))).astype(data.dtype)
        else:
            value = {"sum": np.add, "prod": np.multiply, "max": np.maximum, "min": np.minimum}[kind].reduce(
                rows, axis=0, dtype=data.dtype)
        out[ids[start]] = value
    return [out]


def _lower_segment(ctx, op, data, segment_ids):
    """Segment ids known while compiling: the rows of each segment gathered into a
    [segments, longest] table (padding rows hold the reduction's identity), reduced over
    the second dim; a mean divides by the (static) counts, empty segments give 0 (1 for a
    product). Ids known only at run time: ctx.fail, and the op runs on the host."""
    from tfc.ir.evaluator import highest, lowest

    kind = _SEGMENT_OPS[op.type]
    known = ctx.static(segment_ids)
    if known is None:
        ctx.fail(f"{op.type}'s segment_ids are known only at run time (its output size is ids[-1] + 1)")
    ids = np.asarray(known).astype(np.int64)
    rows = data.type.shape[0] if data.type.rank else None
    if ids.ndim != 1 or data.type.rank < 1 or not isinstance(ctx.canon(rows), int) or ctx.canon(rows) != ids.size:
        if ids.ndim == 1 and data.type.rank >= 1 and not isinstance(ctx.canon(rows), int):
            ctx.unify(rows, int(ids.size), (tuple(data.type.shape), ids.shape))
        else:
            ctx.fail(f"{op.type}: bad segment_ids for the data (checked on the host)")
    if ids.size and (ids[0] < 0 or np.any(ids[1:] < ids[:-1])):
        ctx.fail(f"{op.type}: the segment ids are negative or not sorted (checked on the host)")
    elem = data.type.elem
    rest = tuple(ctx.canon(d) for d in data.type.shape[1:])
    count = int(ids[-1]) + 1 if ids.size else 0
    sizes = np.bincount(ids, minlength=count) if ids.size else np.zeros(0, np.int64)
    if count == 0 or ids.size == 0:
        return ctx.broadcast_in_dim(ctx.scalar(1 if kind == "prod" else 0, elem), (count,) + rest, [])
    longest = int(sizes.max())
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    offsets = np.arange(longest)
    picks = np.where(offsets[None, :] < sizes[:, None], starts[:, None] + offsets[None, :], ids.size)
    np_elem = elem.np_dtype
    identity = {"sum": 0, "mean": 0, "prod": 1, "max": lowest(np.dtype(np_elem)),
                "min": highest(np.dtype(np_elem))}[kind]
    pad_row = ctx.broadcast_in_dim(ctx.scalar(identity, elem), (1,) + rest, [])
    table = ctx.b.value("concatenate", [data, pad_row], {"dim": 0})
    gathered = ctx.b.value("gather", [table, ctx.constant(picks.astype(np.int32))], {"axis": 0})
    reduced = ctx.reduce(gathered, "sum" if kind == "mean" else kind, [1])
    out_shape = (count,) + rest
    if kind == "mean":
        divisor = ctx.constant(np.maximum(sizes, 1).astype(np_elem))
        return ctx.elementwise("div", reduced, ctx.broadcast_in_dim(divisor, out_shape, [0]))
    if kind in ("max", "min") and np.any(sizes == 0):
        empty = ctx.broadcast_in_dim(ctx.constant(sizes == 0), out_shape, [0])
        zeros = ctx.broadcast_in_dim(ctx.scalar(0, elem), out_shape, [])
        return ctx.b.value("select", [empty, zeros, reduced])
    return reduced


def _segment_sum_grad(op, grad):
    """TF's _SegmentSumGrad."""
    from .math_ops import array_ops

    return array_ops.gather(grad, op.inputs[1]), None


def _segment_mean_grad(op, grad):
    """TF 1.15's _SegmentMeanGrad: the gradient over the segment sizes, gathered back."""
    from .constant_op import constant
    from .math_ops import array_ops, divide

    input_rank = array_ops.rank(op.inputs[0])
    ones_shape = array_ops.concat([array_ops.shape(op.inputs[1]),
                                   array_ops.fill(array_ops.expand_dims(input_rank - 1, 0), 1)], 0)
    ones = array_ops.fill(ones_shape, constant(1, dtype=grad.dtype))
    scaled_grad = divide(grad, segment_sum(ones, op.inputs[1]))
    return array_ops.gather(scaled_grad, op.inputs[1]), None


def _segment_min_or_max_grad(op, grad):
    """TF's _SegmentMinOrMaxGrad: the gradient shared evenly by the selected elements."""
    from .math_ops import array_ops, cast, divide, equal

    zeros = array_ops.zeros_like(op.inputs[0], dtype=op.inputs[0].dtype)
    gathered_outputs = array_ops.gather(op.outputs[0], op.inputs[1])
    is_selected = equal(op.inputs[0], gathered_outputs)
    num_selected = segment_sum(cast(is_selected, grad.dtype), op.inputs[1])
    weighted_grads = divide(grad, num_selected)
    gathered_grads = array_ops.gather(weighted_grads, op.inputs[1])
    return array_ops.where(is_selected, gathered_grads, zeros), None


def _segment_prod_grad(op, grad):
    """TF's _SegmentProdGrad: the product of the other elements, with segments holding one
    zero (its element gets the product of the rest) or more (all zero) handled apart."""
    from .math_ops import array_ops, cast, equal, greater

    data, segment_ids = op.inputs
    is_zero = equal(data, 0)
    num_zeros = segment_sum(cast(is_zero, dtype=dtypes.int32), segment_ids)
    grad = array_ops.where_v2(greater(num_zeros, 1), array_ops.zeros_like(grad), grad)
    non_zero_data = array_ops.where_v2(is_zero, array_ops.ones_like(data), data)
    non_zero_prod = segment_prod(non_zero_data, segment_ids)
    gathered_prod = array_ops.gather(op.outputs[0], segment_ids)
    gathered_non_zero_prod = array_ops.gather(non_zero_prod, segment_ids)
    prod_divided_by_el = gathered_prod / non_zero_data
    partial_derivative = array_ops.where_v2(is_zero, gathered_non_zero_prod, prod_divided_by_el)
    gathered_grad = array_ops.gather(grad, segment_ids)
    return gathered_grad * partial_derivative, None


_SEGMENT_GRADS = {"SegmentSum": _segment_sum_grad, "SegmentMean": _segment_mean_grad,
                  "SegmentMax": _segment_min_or_max_grad, "SegmentMin": _segment_min_or_max_grad,
                  "SegmentProd": _segment_prod_grad}
_SEGMENT_ALLOWED = {"SegmentSum": _SEGMENT_TYPES + (dtypes.complex64, dtypes.complex128),
                    "SegmentMean": _SEGMENT_TYPES + (dtypes.complex64, dtypes.complex128),
                    "SegmentProd": _SEGMENT_TYPES + (dtypes.complex64, dtypes.complex128),
                    "SegmentMax": _SEGMENT_TYPES, "SegmentMin": _SEGMENT_TYPES}

for _name in _SEGMENT_OPS:
    register(type(_name, (OpType,), {
        "__doc__": f"TF op {_name}: a sorted segment reduction.",
        "inputs": ["data: T", "segment_ids: Tindices"], "outputs": ["output: T"],
        "attrs": {"T": Attr("type", allowed=_SEGMENT_ALLOWED[_name]),
                  "Tindices": Attr("type", allowed=(dtypes.int32, dtypes.int64))},
        "infer": staticmethod(_segment_shape), "lower": staticmethod(_lower_segment),
        "host": staticmethod(_segment_host), "host_fallback": True,
        "gradient": staticmethod(_SEGMENT_GRADS[_name])}))


def _segment(op_type, data, segment_ids, name):
    return apply_op(op_type, [data, segment_ids], name=name).outputs[0]


def segment_sum(data, segment_ids, name=None):
    """tf.math.segment_sum: sums of the rows sharing a (sorted) segment id."""
    return _segment("SegmentSum", data, segment_ids, name)


def segment_mean(data, segment_ids, name=None):
    return _segment("SegmentMean", data, segment_ids, name)


def segment_max(data, segment_ids, name=None):
    return _segment("SegmentMax", data, segment_ids, name)


def segment_min(data, segment_ids, name=None):
    return _segment("SegmentMin", data, segment_ids, name)


def segment_prod(data, segment_ids, name=None):
    return _segment("SegmentProd", data, segment_ids, name)


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


_SEGMENT_EXPORTS = ["segment_max", "segment_mean", "segment_min", "segment_prod", "segment_sum"]
TF_EXPORTS = ["unique", "unique_with_counts", "dynamic_partition", "boolean_mask"] + _SEGMENT_EXPORTS
MATH_EXPORTS = list(_SEGMENT_EXPORTS)
