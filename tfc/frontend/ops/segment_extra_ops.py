"""The unsorted segment reductions beyond the sum, as TensorFlow 1.15 builds them:

- ``tf.math.unsorted_segment_max`` / ``unsorted_segment_min`` / ``unsorted_segment_prod``
  (TF1 aliases ``tf.unsorted_segment_*``): the UnsortedSegmentMax / UnsortedSegmentMin /
  UnsortedSegmentProd ops, with TF's gradients (math_grad.py's _UnsortedSegmentMinOrMaxGrad
  and _UnsortedSegmentProdGrad).
- ``tf.math.unsorted_segment_mean`` / ``unsorted_segment_sqrt_n``: TF's python compositions
  (math_ops.py): ``UnsortedSegmentSum`` of the data divided by the clamped segment sizes
  (an ``UnsortedSegmentSum`` of ones, reshaped, ``Maximum(N, 1)``; its ``Sqrt`` for
  sqrt_n), differentiated through those ops.

The three ops follow TF's CPU kernels (UnsortedSegmentReductionOp): the output has
``num_segments`` rows, data rows with a negative id are dropped, an id >= num_segments
fails at run time (InvalidArgumentError), and an empty segment holds the reduction's
initial value (the type's lowest value for max, its highest for min, 1 for a product). The
kernel folds the rows into that initial value in order, ``out = max(row, out)`` with
``std::max`` (Eigen's cwiseMax), so the CPU result for floats is order dependent around
NaN: a NaN row makes the running value NaN and the next non-NaN row replaces it. The
compiled reduction reproduces that exactly: per segment (and element), the maximum of the
rows after the last NaN, NaN when the last row is NaN, and with no NaN at all the maximum
floored at the lowest value (so a segment of -inf is the lowest finite value, as in TF).

Lowering: the rows of each segment are laid out as a ``[num_segments, L, ...]`` table with
a membership mask ``[num_segments, L]`` in row order, then reduced over L:

- segment ids known while compiling (all below num_segments): each segment's rows are
  gathered (L = the longest segment, padding rows masked out), as the sorted segment ops do;
- otherwise (ids fed or computed): L is every row, and the mask is the compare matrix
  ``ids[None, :] == iota(num_segments)[:, None]`` (negative ids match no segment); the
  table is the data broadcast over the segments. Its size is num_segments x rows x the row
  size (no sort or scatter-max in the IR), which suits the moderate sizes these ops see.

``num_segments`` must be known while compiling (a constant, or a dim of a shape), as for
UnsortedSegmentSum.
"""
from __future__ import annotations

import builtins

import numpy as np

from tfc import ir
from tfc.ir.dims import dims_product

from .. import dtypes
from ..convert import convert_to_tensor
from ..graph import name_scope
from ..op_helper import apply_op
from ..registry import Attr, OpType, register
from . import inference_context as ic

_d = dtypes
_INDEX_TYPES = (_d.int32, _d.int64)
_REAL_TYPES = (_d.float32, _d.float64, _d.int32, _d.uint8, _d.int16, _d.int8, _d.int64, _d.bfloat16, _d.uint16,
               _d.float16, _d.uint32, _d.uint64)
_NUMBER_TYPES = _REAL_TYPES + (_d.complex64, _d.complex128)
_KINDS = {"UnsortedSegmentMax": "max", "UnsortedSegmentMin": "min", "UnsortedSegmentProd": "prod"}


def initial_value(kind: str, np_dtype):
    """The CPU kernel's initial value of an output row: Eigen's lowest() for max (the most
    negative finite float), highest() for min, 1 for a product."""
    np_dtype = np.dtype(np_dtype)
    if kind == "prod":
        return 1
    info = np.finfo(np_dtype) if np_dtype.kind == "f" else np.iinfo(np_dtype)
    return info.min if kind == "max" else info.max


# -- lowering ---------------------------------------------------------------------------------
def _flat_rows(ctx, data, segment_ids):
    """(data as [rows, rest...], ids as [rows], rest): TF's shape checks, ids flattened."""
    ids_rank = segment_ids.type.rank
    if data.type.rank < ids_rank:
        ctx.fail(f"data.shape = {list(data.type.shape)} does not start with segment_ids.shape = "
                 f"{list(segment_ids.type.shape)}")
    for axis in builtins.range(ids_rank):
        a, b = ctx.canon(data.type.shape[axis]), ctx.canon(segment_ids.type.shape[axis])
        if a != b:
            if isinstance(a, int) and isinstance(b, int):
                ctx.fail(f"data.shape = {list(data.type.shape)} does not start with segment_ids.shape = "
                         f"{list(segment_ids.type.shape)}")
            ctx.unify(a, b, (tuple(data.type.shape), tuple(segment_ids.type.shape)))
    lead = [ctx.canon(d) for d in data.type.shape[:ids_rank]]
    rest = tuple(ctx.canon(d) for d in data.type.shape[ids_rank:])
    rows = ctx.canon(dims_product(lead))
    return ctx.reshape(data, (rows,) + rest), ctx.reshape(segment_ids, (rows,)), rows, rest


def _static_table(ctx, data, ids: np.ndarray, count: int, rest: tuple):
    """Ids known now: ([count, L, rest...] table of each segment's rows in order, the
    [count, L] membership mask as a constant), L the longest segment."""
    keep = ids >= 0
    sizes = np.bincount(ids[keep], minlength=count) if keep.any() else np.zeros(count, np.int64)
    longest = int(sizes.max()) if count else 0
    picks = np.full((count, longest), ids.size, np.int64)  # row ids.size: the padding row
    kept = np.flatnonzero(keep)
    order = kept[np.argsort(ids[kept], kind="stable")]  # by segment, rows in order within one
    starts = np.cumsum(sizes) - sizes
    picks[ids[order], np.arange(order.size) - starts[ids[order]]] = order
    member = np.arange(longest)[None, :] < sizes[:, None]
    elem = data.type.elem
    pad_row = ctx.broadcast_in_dim(ctx.scalar(0, elem), (1,) + rest, [])
    table = ctx.b.value("concatenate", [data, pad_row], {"dim": 0})
    gathered = ctx.b.value("gather", [table, ctx.constant(picks.astype(np.int32))], {"axis": 0})
    return gathered, ctx.constant(member), longest


def _matrix_table(ctx, data, ids, count, rows, rest: tuple):
    """Ids known only at run time: (the data broadcast to [count, rows, rest...], the
    [count, rows] mask ``ids == segment``)."""
    segment = ctx.b.value("iota", [], {"dim": 0}, result_type=ir.TensorType(ids.type.elem, (count, rows)))
    member = ctx.b.value("compare", [segment, ctx.broadcast_in_dim(ids, (count, rows), [1])], {"dir": "eq"})
    table = ctx.broadcast_in_dim(data, (count, rows) + rest, [i + 1 for i in builtins.range(1 + len(rest))])
    return table, member


def _reduce_table(ctx, kind: str, table, member, length, count, rest: tuple):
    """The CPU kernel's fold over the table's L dim (see the module docstring)."""
    elem = table.type.elem
    np_dtype = np.dtype(elem.np_dtype)
    shape = tuple(table.type.shape)
    spread = list(builtins.range(2))
    member_b = ctx.broadcast_in_dim(member, shape, spread)
    out_shape = (count,) + rest
    init = initial_value(kind, np_dtype)
    if kind == "prod":
        picked = ctx.b.value("select", [member_b, table, ctx.broadcast_in_dim(ctx.scalar(1, elem), shape, [])])
        return ctx.reduce(picked, "prod", [1])
    if not elem.is_float:
        picked = ctx.b.value("select", [member_b, table, ctx.broadcast_in_dim(ctx.scalar(init, elem), shape, [])])
        return ctx.reduce(picked, kind, [1])
    # floats: the rows after the last NaN (by position in the table, which keeps row order)
    position = ctx.b.value("iota", [], {"dim": 1}, result_type=ir.TensorType(ir.ElemType.I32, shape))
    none = ctx.broadcast_in_dim(ctx.scalar(-1, ir.ElemType.I32), shape, [])
    is_nan = ctx.b.value("compare", [table, table], {"dir": "ne"})
    nan_member = ctx.b.value("and", [member_b, is_nan])
    last_nan = ctx.reduce(ctx.b.value("select", [nan_member, position, none]), "max", [1])
    row_position = ctx.b.value("iota", [], {"dim": 1}, result_type=ir.TensorType(ir.ElemType.I32, (count, length)))
    no_row = ctx.broadcast_in_dim(ctx.scalar(-1, ir.ElemType.I32), (count, length), [])
    last_member = ctx.reduce(ctx.b.value("select", [member, row_position, no_row]), "max", [1])
    after = ctx.b.value("compare", [position, ctx.broadcast_in_dim(last_nan, shape, [0] + [
        i + 2 for i in builtins.range(len(rest))])], {"dir": "gt"})
    valid = ctx.b.value("and", [member_b, after])
    beyond = float("-inf") if kind == "max" else float("inf")
    picked = ctx.b.value("select", [valid, table, ctx.broadcast_in_dim(ctx.scalar(beyond, elem), shape, [])])
    folded = ctx.reduce(picked, kind, [1])
    floored = ctx.b.value(kind, [folded, ctx.broadcast_in_dim(ctx.scalar(init, elem), out_shape, [])])
    zero = ctx.broadcast_in_dim(ctx.scalar(0, ir.ElemType.I32), out_shape, [])
    has_nan = ctx.b.value("compare", [last_nan, zero], {"dir": "ge"})
    rows_after = ctx.b.value("compare", [ctx.broadcast_in_dim(last_member, out_shape, [0]), last_nan],
                             {"dir": "gt"})
    nan = ctx.broadcast_in_dim(ctx.scalar(float("nan"), elem), out_shape, [])
    after_nan = ctx.b.value("select", [rows_after, folded, nan])
    return ctx.b.value("select", [has_nan, after_nan, floored])


def _lower_unsorted_segment(ctx, op, data, segment_ids, num_segments):
    kind = _KINDS[op.type]
    counts = ic.static_dims(ctx, num_segments, f"{op.type}'s num_segments")
    if len(counts) != 1:
        ctx.fail("num_segments should be a scalar")
    count = ctx.canon(counts[0])
    if isinstance(count, int) and count < 0:
        ctx.fail(f"num_segments must be non-negative, got {count}")
    data, ids, rows, rest = _flat_rows(ctx, data, segment_ids)
    count = ctx.canon(count)  # num_segments may be a dim the unification just bound
    elem = data.type.elem
    out_shape = (count,) + rest
    ctx.check("segment_id", ids, bound=[count])
    known = ctx.static(ids)
    if (isinstance(rows, int) and rows == 0) or count == 0:
        return ctx.broadcast_in_dim(ctx.scalar(initial_value(kind, elem.np_dtype), elem), out_shape, [])
    if known is not None and known.dtype != object and isinstance(count, int) and \
            bool(np.all(np.asarray(known) < count)):
        table, member, length = _static_table(ctx, data, np.asarray(known).astype(np.int64).reshape(-1), count,
                                              rest)
        if length == 0:
            return ctx.broadcast_in_dim(ctx.scalar(initial_value(kind, elem.np_dtype), elem), out_shape, [])
    else:
        table, member = _matrix_table(ctx, data, ids, count, rows, rest)
        length = rows
    return _reduce_table(ctx, kind, table, member, length, count, rest)


# -- gradients (TF 1.15's math_grad.py) -------------------------------------------------------
def _unsorted_segment_min_or_max_grad(op, grad):
    """_UnsortedSegmentMinOrMaxGrad: the gradient shared evenly by the selected elements."""
    from .array_ops import zeros_like
    from .math_ops import cast, divide, equal, logical_and
    from .selection_ops import _gather_drop_negatives, unsorted_segment_sum, where

    gathered_outputs, zero_clipped_indices, is_positive = _gather_drop_negatives(op.outputs[0], op.inputs[1])
    is_selected = equal(op.inputs[0], gathered_outputs)
    is_selected = logical_and(is_selected, is_positive)
    num_selected = unsorted_segment_sum(cast(is_selected, grad.dtype), op.inputs[1], op.inputs[2])
    weighted_grads = divide(grad, num_selected)
    gathered_grads, _, _ = _gather_drop_negatives(weighted_grads, None, zero_clipped_indices, is_positive)
    zeros = zeros_like(gathered_grads)
    return [where(is_selected, gathered_grads, zeros), None, None]


def _unsorted_segment_prod_grad(op, grad):
    """_UnsortedSegmentProdGrad: the product of the other elements of the segment; a
    segment with one zero passes the product of the rest to it, one with more passes 0."""
    from .array_ops import ones_like, zeros_like
    from .math_ops import cast, equal, greater, maximum
    from .selection_ops import _gather_drop_negatives, gather, unsorted_segment_sum, where

    is_zero = equal(op.inputs[0], 0)
    num_zeros = unsorted_segment_sum(cast(is_zero, dtype=dtypes.int32), op.inputs[1], op.inputs[2])
    grad = where(greater(num_zeros, 1), zeros_like(grad), grad)
    non_zero_data = where(is_zero, ones_like(op.inputs[0]), op.inputs[0])
    non_zero_prod = unsorted_segment_prod(non_zero_data, op.inputs[1], op.inputs[2])
    zero_clipped_indices = maximum(op.inputs[1], zeros_like(op.inputs[1]))
    gathered_prod = gather(op.outputs[0], zero_clipped_indices)
    gathered_non_zero_prod = gather(non_zero_prod, zero_clipped_indices)
    prod_divided_by_el = gathered_prod / op.inputs[0]  # may hold nan/inf, not selected then
    partial_derivative = where(is_zero, gathered_non_zero_prod, prod_divided_by_el)
    gathered_grad = _gather_drop_negatives(grad, op.inputs[1], zero_clipped_indices)[0]
    return [gathered_grad * partial_derivative, None, None]


def _shape(op):
    from .selection_ops import _unsorted_segment_shape

    return ic.run_shape_fn(op, _unsorted_segment_shape)


_GRADS = {"UnsortedSegmentMax": _unsorted_segment_min_or_max_grad,
          "UnsortedSegmentMin": _unsorted_segment_min_or_max_grad,
          "UnsortedSegmentProd": _unsorted_segment_prod_grad}

for _name in _KINDS:
    register(type(_name, (OpType,), {
        "__doc__": f"TF op {_name}: an unsorted segment reduction (TF's CPU kernel semantics).",
        "inputs": ["data: T", "segment_ids: Tindices", "num_segments: Tnumsegments"], "outputs": ["output: T"],
        "attrs": {"T": Attr("type", allowed=_NUMBER_TYPES if _name == "UnsortedSegmentProd" else _REAL_TYPES),
                  "Tindices": Attr("type", allowed=_INDEX_TYPES),
                  "Tnumsegments": Attr("type", _d.int32, allowed=_INDEX_TYPES)},
        "infer": staticmethod(_shape), "lower": staticmethod(_lower_unsorted_segment),
        "gradient": staticmethod(_GRADS[_name])}))


# -- functions --------------------------------------------------------------------------------
def unsorted_segment_max(data, segment_ids, num_segments, name=None):
    """tf.math.unsorted_segment_max: the maximum of the data rows sharing a segment id."""
    return apply_op("UnsortedSegmentMax", [data, segment_ids, num_segments], name=name).outputs[0]


def unsorted_segment_min(data, segment_ids, num_segments, name=None):
    """tf.math.unsorted_segment_min: the minimum of the data rows sharing a segment id."""
    return apply_op("UnsortedSegmentMin", [data, segment_ids, num_segments], name=name).outputs[0]


def unsorted_segment_prod(data, segment_ids, num_segments, name=None):
    """tf.math.unsorted_segment_prod: the product of the data rows sharing a segment id."""
    return apply_op("UnsortedSegmentProd", [data, segment_ids, num_segments], name=name).outputs[0]


def _unsorted_segment_n(data, segment_ids, num_segments):
    """TF 1.15's _unsorted_segment_N: the segment sizes (an UnsortedSegmentSum of ones),
    reshaped to broadcast over the data's trailing dims, at least 1."""
    from .array_ops import ones, reshape, shape_internal
    from .math_ops import maximum
    from .selection_ops import unsorted_segment_sum

    segment_ids_shape = shape_internal(segment_ids)
    ones_tensor = ones(segment_ids_shape, dtype=data.dtype)
    n = unsorted_segment_sum(ones_tensor, segment_ids, num_segments)
    ndims_output = data.shape.ndims - segment_ids.shape.ndims
    broadcast_shape = [num_segments] + [1] * ndims_output
    n = reshape(n, broadcast_shape)
    return maximum(n, 1)


def unsorted_segment_mean(data, segment_ids, num_segments, name=None):
    """tf.math.unsorted_segment_mean: the sums over the segment sizes (0 for an empty one)."""
    from .selection_ops import unsorted_segment_sum

    with name_scope(name, "UnsortedSegmentMean"):
        data = convert_to_tensor(data)
        segment_ids = convert_to_tensor(segment_ids)
        n = _unsorted_segment_n(data, segment_ids, num_segments)
        summed = unsorted_segment_sum(data, segment_ids, num_segments)
        return summed / n


def unsorted_segment_sqrt_n(data, segment_ids, num_segments, name=None):
    """tf.math.unsorted_segment_sqrt_n: the sums over the square roots of the segment sizes."""
    from .math_ops import sqrt
    from .selection_ops import unsorted_segment_sum

    with name_scope(name, "UnsortedSegmentSqrtN"):
        data = convert_to_tensor(data)
        segment_ids = convert_to_tensor(segment_ids)
        n = _unsorted_segment_n(data, segment_ids, num_segments)
        summed = unsorted_segment_sum(data, segment_ids, num_segments)
        return summed / sqrt(n)


_EXPORTS = ["unsorted_segment_max", "unsorted_segment_mean", "unsorted_segment_min", "unsorted_segment_prod",
            "unsorted_segment_sqrt_n"]
TF_EXPORTS = list(_EXPORTS)
MATH_EXPORTS = list(_EXPORTS)
