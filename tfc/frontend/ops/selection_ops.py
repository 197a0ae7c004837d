"""Selection ops: GatherV2, OneHot, Select/SelectV2/Where, Range (tf.gather, tf.one_hot,
tf.where, tf.where_v2, tf.range, tf.sequence_mask).

Entries follow TF 1.15's OpDefs and C++ shape functions (array_ops.cc, math_ops.cc);
the functions follow tensorflow/python/ops/array_ops.py and math_ops.py of TF 1.15.
"""
from __future__ import annotations

import builtins
import math

import numpy as np

from tfc import ir
from tfc.ir.dims import SymExpr, dim_ceildiv, dim_sub

from .. import dtypes
from ..convert import convert_to_tensor
from ..graph import Tensor, colocate_with, name_scope
from ..op_helper import apply_op
from ..registry import Attr, OpType, ShapeError, register
from ..tensor_util import constant_value
from . import inference_context as ic
from .constant_op import constant

INDEX_TYPES = (dtypes.int32, dtypes.int64)
RANGE_TYPES = (dtypes.bfloat16, dtypes.float16, dtypes.float32, dtypes.float64, dtypes.int32, dtypes.int64)
WHERE_TYPES = (dtypes.float32, dtypes.float64, dtypes.int32, dtypes.uint8, dtypes.int16, dtypes.int8,
               dtypes.complex64, dtypes.int64, dtypes.bfloat16, dtypes.uint16, dtypes.complex128, dtypes.float16,
               dtypes.uint32, dtypes.uint64, dtypes.bool)


# =====================================================================================
# Lowerings
# =====================================================================================
def _lower_gather(ctx, op, params, indices, axis):
    if op._attrs["batch_dims"] != 0:
        ctx.fail(f"GatherV2 with batch_dims={op._attrs['batch_dims']} is not supported by the compiler "
                 "(batch_dims 0 only)")
    rank = params.type.rank
    if rank == 0:
        ctx.fail("params must be at least 1 dimensional")
    axis = ic.static_axis(ctx, axis, rank, "GatherV2's axis")
    extent = ctx.canon(params.type.shape[axis])
    known = ctx.static(indices)
    in_range = known is not None and isinstance(extent, int) and bool(
        np.all((np.asarray(known) >= 0) & (np.asarray(known) < extent)))
    if in_range:  # out-of-range indices are left to the run-time check (InvalidArgumentError, as in TF)
        folded = ic.fold(ctx, lambda p, i: np.take(p, i.astype(np.int64), axis=axis), [params, indices],
                         params.type.elem)
        if folded is not None:
            return folded
    return ctx.b.value("gather", [params, indices], {"axis": axis})


def _lower_one_hot(ctx, op, indices, depth, on_value, off_value):
    depth_values = ic.static_ints(ctx, depth, "OneHot's depth")
    if len(depth_values) != 1:
        ctx.fail("depth must be a scalar")
    depth = depth_values[0]
    if depth < 0:
        ctx.fail(f"depth must be non-negative, got: {depth}")
    for value, what in ((on_value, "on_value"), (off_value, "off_value")):
        if value.type.rank != 0:
            ctx.fail(f"{what} must be a scalar, but got: {value.type}")
    rank = indices.type.rank
    axis = op._attrs["axis"]
    if axis < -1 or axis > rank:
        ctx.fail(f"Expected axis to be -1 or between [0, {rank}).  But received: {axis}")
    if axis == -1:
        axis = rank
    shape = tuple(indices.type.shape[:axis]) + (depth,) + tuple(indices.type.shape[axis:])
    if not indices.type.elem.is_signed:
        indices = ctx.convert(indices, ir.ElemType.I32)
    position = ctx.b.value("iota", [], {"dim": axis}, result_type=ir.TensorType(indices.type.elem, shape))
    spread = ctx.broadcast_in_dim(indices, shape, [i if i < axis else i + 1 for i in builtins.range(rank)])
    hot = ctx.b.value("compare", [position, spread], {"dir": "eq"})
    return ctx.b.value("select", [hot, ctx.broadcast_in_dim(on_value, shape, []),
                                  ctx.broadcast_in_dim(off_value, shape, [])])


def _lower_select(ctx, op, cond, t, e):
    shape = ic.unify_shapes(ctx, [t, e])
    folded = ic.fold(ctx, lambda c, a, b: np.where(c.reshape(c.shape + (1,) * (a.ndim - c.ndim)), a, b)
                     if c.ndim == 1 else np.where(c, a, b), [cond, t, e], t.type.elem)
    if folded is not None:
        return folded
    rank = len(shape)
    if cond.type.rank == 0:
        cond = ctx.broadcast_in_dim(cond, shape, [])
    elif cond.type.rank == 1 and rank > 1:
        first = ctx.canon(cond.type.shape[0])
        if first != ctx.canon(shape[0]):
            if isinstance(first, int) and isinstance(shape[0], int):
                ctx.fail(f"Dimension 0 in both shapes must be equal, but are {first} and {shape[0]}.")
            ctx.unify(first, shape[0], (tuple(cond.type.shape), shape))
        shape = tuple(ctx.canon(d) for d in t.type.shape)
        cond = ctx.broadcast_in_dim(cond, shape, [0])
    else:
        if cond.type.rank != rank:
            ctx.fail(f"'then' and 'else' must have the same size, or 'cond' must be a scalar or a vector of "
                     f"their first dimension; got shapes {list(cond.type.shape)} and {list(shape)}")
        ic.unify_shapes(ctx, [t, e, cond])
    return ctx.b.value("select", [cond, t, e])


def _lower_select_v2(ctx, op, cond, t, e):
    folded = ic.fold(ctx, np.where, [cond, t, e], t.type.elem)
    if folded is not None:
        return folded
    shape = ctx.broadcast_shapes(tuple(cond.type.shape), tuple(t.type.shape), tuple(e.type.shape))
    cond, t, e = (ctx.broadcast_to(v, shape) for v in (cond, t, e))
    return ctx.b.value("select", [cond, t, e])


def _lower_where(ctx, op, condition):
    known = ctx.static(condition)
    if known is not None and not ic.is_symbolic(known):
        known = np.asarray(known).reshape(tuple(condition.type.shape))
        return ctx.constant(np.argwhere(known != 0).astype(np.int64).reshape(-1, known.ndim), ir.ElemType.I64)
    if op._get_control_flow_context() is not None:
        ctx.fail("Where (tf.where with only a condition) inside a tf.cond or tf.while_loop: its number of rows "
                 "is known only when it runs, and a compiled branch or loop body has one shape; tfc computes it "
                 "between the step's compiled stages outside control flow (compute the mask outside the loop, "
                 "or select with tf.where(cond, x, y))")
    ctx.fail("data-dependent output shape: Where (tf.where with only a condition) returns one row per true "
             "element, so its output size is only known at run time")


def _range_values(start, limit, delta, dtype):
    """TF's RangeOp: ``val = start; out[i] = val; val += delta`` in the output type."""
    np_dtype = dtype.as_numpy_dtype
    start, limit, delta = (np.asarray(v, dtype=np_dtype)[()] for v in (start, limit, delta))
    size = _range_size(start, limit, delta, dtype.is_integer)
    out = np.empty(size, dtype=np_dtype)
    value = start
    for i in builtins.range(size):
        out[i] = value
        value = np_dtype(value + delta)
    return out


def _lower_range(ctx, op, start, limit, delta):
    dtype = op._attrs["Tidx"]
    elem = ctx.elem(dtype)
    known = [ctx.static(v) for v in (start, limit, delta)]
    if any(k is None for k in known):
        ctx.fail("data-dependent output shape: Range's start, limit and delta must be known at compile time")
    flat = []
    for k in known:
        k = np.asarray(k).reshape(-1)
        if k.size != 1:
            ctx.fail("Range's start, limit and delta must be scalars")
        flat.append(k[0])
    if not any(isinstance(v, SymExpr) for v in flat):
        try:
            values = _range_values(*flat, dtype)
        except ShapeError as error:
            ctx.fail(str(error))
        return ic.from_static(ctx, values, elem)
    first, last, step = flat
    if isinstance(step, SymExpr) or float(step) != int(step) or any(
            not isinstance(v, SymExpr) and float(v) != int(v) for v in (first, last)):
        ctx.fail("Range with a start or limit known only at run time needs integral values and a delta known "
                 "at compile time")
    first = first if isinstance(first, SymExpr) else int(first)
    last = last if isinstance(last, SymExpr) else int(last)
    step = int(step)
    if step == 0:
        ctx.fail("Requires delta != 0")
    size = dim_ceildiv(dim_sub(last, first), step) if step > 0 else dim_ceildiv(dim_sub(first, last), -step)
    count = ctx.b.value("iota", [], {"dim": 0}, result_type=ir.TensorType(elem, (size,)))
    if step != 1:
        count = ctx.b.value("mul", [count, ctx.broadcast_in_dim(ctx.scalar(step, elem), (size,), [])])
    if first != 0:
        index_elem = elem if elem in (ir.ElemType.I32, ir.ElemType.I64) else ir.ElemType.I64
        offset = ctx.convert(ic.dim_scalar(ctx, first, index_elem), elem)
        count = ctx.b.value("add", [count, ctx.broadcast_in_dim(offset, (size,), [])])
    return count


def _lower_unsorted_segment_sum(ctx, op, data, segment_ids, num_segments):
    """A core scatter_add of the data into zeros of [num_segments] + data.shape[rank(ids):];
    negative ids are dropped, ids >= num_segments fail (TF's CPU kernel)."""
    counts = ic.static_dims(ctx, num_segments, "UnsortedSegmentSum's num_segments")
    if len(counts) != 1:
        ctx.fail("num_segments should be a scalar")
    count = ctx.canon(counts[0])
    if isinstance(count, int) and count < 0:
        ctx.fail(f"num_segments must be non-negative, got {count}")
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
    count = ctx.canon(count)  # num_segments may be a dim the unification just bound
    out_shape = (count,) + tuple(ctx.canon(d) for d in data.type.shape[ids_rank:])
    ctx.check("segment_id", segment_ids, bound=[count])
    elem = data.type.elem
    zeros = ctx.broadcast_in_dim(ctx.scalar(0, elem), out_shape, [])
    if ids_rank == 0:  # one id: the whole data is one update
        segment_ids = ctx.reshape(segment_ids, (1,))
        data = ctx.reshape(data, (1,) + tuple(data.type.shape))
    return ctx.b.value("scatter_add", [zeros, segment_ids, data], {"axis": 0})


# =====================================================================================
# Gradients (array_grad.py and math_grad.py of TF 1.15)
# =====================================================================================
def _gather_v2_grad(op, grad):
    """_GatherV2Grad, densified.

    TF returns ``IndexedSlices(values, indices, params_shape)`` for axis 0; tfc has no
    IndexedSlices, so it adds what TF's conversion to a dense tensor adds
    (``unsorted_segment_sum(values, indices, dense_shape[0])``: ``strided_slice_1``,
    ``UnsortedSegmentSum``) right here, inside ``GatherV2_grad``. Other axes are built
    exactly as TF builds them (TF's gradient is dense there too).
    """
    from .array_ops import expand_dims, reshape, shape, size, transpose
    from .concat_ops import concat
    from .math_ops import cast

    params = op.inputs[0]
    with colocate_with(params):
        params_shape = shape(params, out_type=dtypes.int64)
        params_shape = cast(params_shape, dtypes.int32)
    indices = op.inputs[1]
    indices_size = expand_dims(size(indices), 0)
    axis = op.inputs[2]
    axis_static = constant_value(axis)
    batch_dims = int(op.get_attr("batch_dims"))
    if batch_dims < 0 and indices.shape.ndims is not None:
        batch_dims += indices.shape.ndims
    if batch_dims != 0:
        raise NotImplementedError(f"The gradient of GatherV2 with batch_dims={batch_dims} is not supported by tfc "
                                  f"(nor is compiling such a gather); op: {op.name}")
    if axis_static is not None and np.asarray(axis_static).size == 1 and int(np.asarray(axis_static)) == 0:
        params_tail_shape = params_shape[1:]
        values_shape = concat([indices_size, params_tail_shape], 0)
        values = reshape(grad, values_shape)
        indices = reshape(indices, indices_size)
        # IndexedSlices(values, indices, params_shape) made dense (_IndexedSlicesToTensor).
        params_grad = unsorted_segment_sum(values, indices, params_shape[0])
    else:
        outer_shape = params_shape[:axis]
        inner_shape = params_shape[axis:][1:]
        values_shape = concat([outer_shape, [-1], inner_shape], 0)
        values_dims = size(values_shape)
        axis_dims = size(outer_shape)
        outer_batches_indices = range(batch_dims)
        batch_axis_indices = range(batch_dims, axis_dims)
        inner_axes_indices = range(axis_dims + 1, values_dims)
        values = reshape(grad, values_shape)
        # Move values[axis] up to values[batch_dims].
        transpose_dims = concat([outer_batches_indices, [axis_dims], batch_axis_indices, inner_axes_indices], 0)
        values_transpose = transpose(values, transpose_dims)
        params_grad = _batch_gather_grad(values_transpose, indices, params_shape[axis])
        # Move dimension batch_dims back to its original position.
        invert_transpose_dims = concat([outer_batches_indices, batch_axis_indices + 1, [batch_dims],
                                        inner_axes_indices], 0)
        params_grad = transpose(params_grad, invert_transpose_dims)
    return [params_grad, None, None]


def _batch_gather_grad(values, indices, gather_dim_size):
    """_BatchGatherGrad for batch_dims == 0."""
    from .array_ops import expand_dims, reshape, size

    indices_size = expand_dims(size(indices), 0)
    indices = reshape(indices, indices_size)
    return unsorted_segment_sum(values, indices, gather_dim_size)


def _gather_drop_negatives(params, ids, zero_clipped_indices=None, is_positive=None):
    """math_grad._GatherDropNegatives: gather params at the ids, zeros for negative ids."""
    from .array_ops import expand_dims, ones_like, zeros_like
    from .math_ops import greater_equal, maximum

    if zero_clipped_indices is None:
        zero_clipped_indices = maximum(ids, zeros_like(ids))
    gathered = gather(params, zero_clipped_indices)
    if is_positive is None:
        is_positive = greater_equal(ids, 0)
        for _ in builtins.range(gathered.shape.ndims - is_positive.shape.ndims):
            is_positive = expand_dims(is_positive, -1)
        is_positive = is_positive & ones_like(gathered, dtype=dtypes.bool)
    zero_slice = zeros_like(gathered)
    return where(is_positive, gathered, zero_slice), zero_clipped_indices, is_positive


# =====================================================================================
# GatherV2
# =====================================================================================
def _gather_shape(ctx):
    params = ic.with_rank_at_least(ctx.input(0), 1)
    indices = ctx.input(1)
    ic.with_rank(ctx.input(2), 0)
    axis_value = ctx.input_tensor(2)
    if axis_value is None:
        if params is not None and indices is not None:
            return [[None] * (len(params) + len(indices) - 1)]
        return [None]
    axis = int(np.asarray(axis_value))
    ic.with_rank_at_least(params, -axis if axis < 0 else axis + 1)
    batch_dims = ctx.attr("batch_dims")
    ic.with_rank_at_least(indices, abs(batch_dims))
    if batch_dims < 0:
        batch_dims += -1 if indices is None else len(indices)
    ic.with_rank_at_least(params, batch_dims + 1)
    out = ic.concatenate(ic.subshape(params, 0, axis), ic.subshape(indices, batch_dims))
    if axis != -1:
        out = ic.concatenate(out, ic.subshape(params, axis + 1))
    return [out]


@register
class GatherV2(OpType):
    inputs = ["params: Tparams", "indices: Tindices", "axis: Taxis"]
    outputs = ["output: Tparams"]
    attrs = {"batch_dims": Attr("int", 0), "Tparams": Attr("type"), "Tindices": Attr("type", allowed=INDEX_TYPES),
             "Taxis": Attr("type", allowed=INDEX_TYPES)}

    def infer(op):
        return ic.run_shape_fn(op, _gather_shape)

    lower = _lower_gather

    def host(op, params, indices, axis):
        """GatherV2 of strings (a ready op's variable names) runs on the host."""
        from ..errors import InvalidArgumentError

        params, indices, axis = np.asarray(params), np.asarray(indices), int(np.asarray(axis))
        if not -params.ndim <= axis < max(params.ndim, 1):
            raise InvalidArgumentError(None, op, f"Expected axis in the range [{-params.ndim}, {params.ndim}), but "
                                                 f"got {axis}")
        axis %= max(params.ndim, 1)
        limit = params.shape[axis]
        bad = np.flatnonzero((indices < 0) | (indices >= limit))
        if bad.size:
            index = np.unravel_index(bad[0], indices.shape)
            where = ",".join(str(int(i)) for i in index)
            raise InvalidArgumentError(None, op, f"indices[{where}] = {int(indices[index])} is not in [0, {limit})")
        return [np.take(params, indices, axis=axis)]
    gradient = _gather_v2_grad


def _static_value(value):
    """tensor_util.constant_value, passing python values through as TF does."""
    if isinstance(value, Tensor):
        return constant_value(value)
    return value


def gather(params, indices, validate_indices=None, name=None, axis=None, batch_dims=0):
    """tf.gather (TF 1.15): a GatherV2 op, or the variable's ``sparse_read`` for axis 0."""
    del validate_indices
    if axis is None:
        axis = batch_dims
    static_axis = _static_value(axis)
    if static_axis is None or np.any(np.asarray(static_axis) != 0):
        return apply_op("GatherV2", [params, indices, axis], {"batch_dims": batch_dims}, name).outputs[0]
    try:
        return params.sparse_read(indices, name=name)
    except AttributeError:
        return apply_op("GatherV2", [params, indices, axis], name=name).outputs[0]


# =====================================================================================
# UnsortedSegmentSum (math_ops in TF; here because it is the dense gradient of gathers)
# =====================================================================================
def _unsorted_segment_shape(ctx):
    """UnsortedSegmentReductionShapeFn: [num_segments] + data.shape[rank(segment_ids):]."""
    ic.with_rank(ctx.input(2), 0)
    data = ctx.input(0)
    ids = ctx.input(1)
    if ids is None:
        return [None]
    if data is not None:
        data = ic.with_rank_at_least(data, len(ids))
        merged = [ic.merge_dim(d, i) for d, i in zip(data, ids)]
        data = merged + data[len(ids):]
    count = ctx.scalar_input_dim(2)
    return [ic.concatenate([count], ic.subshape(data, len(ids)))]


@register
class UnsortedSegmentSum(OpType):
    inputs = ["data: T", "segment_ids: Tindices", "num_segments: Tnumsegments"]
    outputs = ["output: T"]
    attrs = {"T": Attr("type"), "Tindices": Attr("type", allowed=INDEX_TYPES),
             "Tnumsegments": Attr("type", dtypes.int32, allowed=INDEX_TYPES)}

    def infer(op):
        return ic.run_shape_fn(op, _unsorted_segment_shape)

    lower = _lower_unsorted_segment_sum

    def gradient(op, grad):
        """_UnsortedSegmentSumGrad: gather the gradient back (zeros for negative ids)."""
        return [_gather_drop_negatives(grad, op.inputs[1])[0], None, None]


def unsorted_segment_sum(data, segment_ids, num_segments, name=None):
    """tf.math.unsorted_segment_sum: sums of the data rows sharing a segment id."""
    return apply_op("UnsortedSegmentSum", [data, segment_ids, num_segments], name=name).outputs[0]


# =====================================================================================
# OneHot
# =====================================================================================
def _one_hot_shape(ctx):
    axis = ctx.attr("axis")
    if axis < -1:
        raise ShapeError("axis must be >= -1")
    depth = ctx.scalar_input_dim(1)
    indices = ctx.input(0)
    if indices is None:
        return [None]
    new_rank = len(indices) + 1
    depth_index = (axis + new_rank) % new_rank
    return [indices[:depth_index] + [depth] + indices[depth_index:]]


@register
class OneHot(OpType):
    inputs = ["indices: TI", "depth: int32", "on_value: T", "off_value: T"]
    outputs = ["output: T"]
    attrs = {"axis": Attr("int", -1), "T": Attr("type"),
             "TI": Attr("type", dtypes.int64, allowed=(dtypes.uint8, dtypes.int32, dtypes.int64))}

    def infer(op):
        return ic.run_shape_fn(op, _one_hot_shape)

    lower = _lower_one_hot
    not_differentiable = True


def one_hot(indices, depth, on_value=None, off_value=None, axis=None, dtype=None, name=None):
    """tf.one_hot: dtype from on/off values (float32 by default), OneHot named 'one_hot'."""
    with name_scope(name, "one_hot", [indices, depth, on_value, off_value, axis, dtype]) as scope:
        on_exists = on_value is not None
        off_exists = off_value is not None
        dtype = None if dtype is None else dtypes.as_dtype(dtype)
        # TF converts given on/off values once just to read their dtypes (stray Consts).
        on_dtype = convert_to_tensor(on_value).dtype.base_dtype if on_exists else None
        off_dtype = convert_to_tensor(off_value).dtype.base_dtype if off_exists else None
        if on_exists or off_exists:
            if dtype is not None:
                if on_exists and on_dtype != dtype:
                    raise TypeError(f"dtype {on_dtype} of on_value does not match dtype parameter {dtype}")
                if off_exists and off_dtype != dtype:
                    raise TypeError(f"dtype {off_dtype} of off_value does not match dtype parameter {dtype}")
            else:
                dtype = on_dtype if on_exists else off_dtype
        elif dtype is None:
            dtype = dtypes.float32
        if not on_exists:
            on_value = convert_to_tensor(1, dtype, name="on_value")
            on_dtype = dtype
        if not off_exists:
            off_value = convert_to_tensor(0, dtype, name="off_value")
            off_dtype = dtype
        if on_dtype != off_dtype:
            raise TypeError(f"dtype {on_dtype} of on_value does not match dtype {off_dtype} of off_value")
        attrs = {} if axis is None else {"axis": axis}
        return apply_op("OneHot", [indices, depth, on_value, off_value], attrs, scope).outputs[0]


# =====================================================================================
# Select, SelectV2, Where
# =====================================================================================
def _select_shape(ctx):
    """Select: t and e share a shape; cond is a scalar, that shape, or a vector over dim 0."""
    data = ic.merge(ctx.input(1), ctx.input(2))
    cond = ctx.input(0)
    if cond is None or data is None:
        return [data]
    if len(cond) == 0:
        return [data]
    if len(cond) != 1 or len(data) == 0:
        return [ic.merge(data, cond)]
    ic.merge(cond, [data[0]])
    return [data]


@register
class Select(OpType):
    inputs = ["condition: bool", "t: T", "e: T"]
    outputs = ["output: T"]
    attrs = {"T": Attr("type")}

    def infer(op):
        return ic.run_shape_fn(op, _select_shape)

    lower = _lower_select

    def gradient(op, grad):
        """_SelectGrad: the gradient where chosen, ``zeros_like`` elsewhere."""
        from .array_ops import zeros_like

        c = op.inputs[0]
        zeros = zeros_like(op.inputs[1])
        return [None, where(c, grad, zeros), where(c, zeros, grad)]


def _select_v2_shape(ctx):
    other = ic.broadcast(ctx.input(1), ctx.input(2))
    return [ic.broadcast(ctx.input(0), other)]


@register
class SelectV2(OpType):
    inputs = ["condition: bool", "t: T", "e: T"]
    outputs = ["output: T"]
    attrs = {"T": Attr("type")}

    def infer(op):
        return ic.run_shape_fn(op, _select_v2_shape)

    lower = _lower_select_v2

    def gradient(op, grad):
        """_SelectGradV2: select against a scalar zero, then sum the broadcast dims away."""
        from .array_ops import broadcast_gradient_args, reshape, shape, zeros
        from .math_ops import reduce_sum

        c, x, y = op.inputs
        zero = zeros([], dtype=grad.dtype.base_dtype)
        gx = where_v2(c, grad, zero)
        x_shape = shape(x)
        output_shape = shape(op.outputs[0])
        reduce_x, _ = broadcast_gradient_args(x_shape, output_shape)
        gx = reduce_sum(gx, keepdims=True, axis=reduce_x)
        gx = reshape(gx, x_shape)
        gy = where_v2(c, zero, grad)
        y_shape = shape(y)
        reduce_y, _ = broadcast_gradient_args(y_shape, output_shape)
        gy = reduce_sum(gy, keepdims=True, axis=reduce_y)
        gy = reshape(gy, y_shape)
        return [None, gx, gy]


@register
class Where(OpType):
    inputs = ["input: T"]
    outputs = ["index: int64"]
    attrs = {"T": Attr("type", dtypes.bool, allowed=WHERE_TYPES)}

    def infer(op):
        condition = op._inputs[0].shape
        return [[None, condition.ndims]]

    lower = _lower_where
    not_differentiable = True
    # a condition known only at run time: the indices are computed on the host (a later
    # stage of the step gets them fed), outside a tf.cond or tf.while_loop
    host_fallback = True

    def host(op, condition):
        from .bounded_kernels import compilable, where_indices

        condition = np.asarray(condition)
        if compilable(condition.dtype):
            return [where_indices(condition)]
        return [np.argwhere(condition != 0).astype(np.int64).reshape(-1, condition.ndim)]


def _where_indices(condition, name):
    with name_scope(name, "Where", [condition]) as scope:
        condition = convert_to_tensor(condition, preferred_dtype=dtypes.bool, name="condition")
        return apply_op("Where", [condition], name=scope).outputs[0]


def where(condition, x=None, y=None, name=None):
    """tf.where of TF 1.x: coordinates of true elements, or Select(condition, x, y)."""
    if x is None and y is None:
        return _where_indices(condition, name)
    if x is not None and y is not None:
        return apply_op("Select", [condition, x, y], name=name).outputs[0]
    raise ValueError("x and y must both be non-None or both be None.")


def where_v2(condition, x=None, y=None, name=None):
    """tf.where_v2: like where, with SelectV2 (broadcasting) for the 3-argument form."""
    if x is None and y is None:
        return _where_indices(condition, name)
    if x is not None and y is not None:
        return apply_op("SelectV2", [condition, x, y], name=name).outputs[0]
    raise ValueError("x and y must both be non-None or both be None.")


# =====================================================================================
# Range
# =====================================================================================
def _range_size(start, limit, delta, is_integer: bool) -> int:
    fmt = ic.format_element
    if start > limit and delta > 0:
        raise ShapeError(f"Requires start <= limit when delta > 0: {fmt(start)}/{fmt(limit)}")
    if start < limit and delta < 0:
        raise ShapeError(f"Requires start >= limit when delta < 0: {fmt(start)}/{fmt(limit)}")
    if delta == 0:
        raise ShapeError("Requires delta != 0")
    if is_integer:
        return (builtins.abs(int(limit) - int(start)) + builtins.abs(int(delta)) - 1) // builtins.abs(int(delta))
    return int(math.ceil(builtins.abs((limit - start) / delta)))


def _range_shape(ctx):
    for index, arg in enumerate(("start", "limit", "delta")):
        try:
            ic.with_rank(ctx.input(index), 0)
        except ShapeError as error:
            raise ic.append_to_message(error, f" for '{arg}'") from None
    values = [ctx.input_tensor(i) for i in builtins.range(3)]
    if any(v is None for v in values):
        return [[None]]
    dtype = ctx.attr("Tidx")
    start, limit, delta = (np.asarray(v, dtype=dtype.as_numpy_dtype)[()] for v in values)
    return [[_range_size(start, limit, delta, dtype.is_integer)]]


@register
class Range(OpType):
    inputs = ["start: Tidx", "limit: Tidx", "delta: Tidx"]
    outputs = ["output: Tidx"]
    attrs = {"Tidx": Attr("type", dtypes.int32, allowed=RANGE_TYPES)}

    def infer(op):
        return ic.run_shape_fn(op, _range_shape)

    lower = _lower_range
    not_differentiable = True
    # values known only at run time (tf.sequence_mask's max length): the host computes it
    # between stages of the step (tfc/runtime/host.py); what consumes it is compiled with its
    # size bound like a feed's
    host_fallback = True

    def host(op, start, limit, delta):
        from ..errors import InvalidArgumentError

        dtype = op._attrs["Tidx"]
        np_dtype = dtype.as_numpy_dtype
        start, limit, delta = (np.asarray(v, dtype=np_dtype).reshape(-1) for v in (start, limit, delta))
        for name, value in (("start", start), ("limit", limit), ("delta", delta)):
            if value.size != 1:
                raise InvalidArgumentError(None, op, f"{name} must be a scalar, not shape {list(value.shape)}")
        start, limit, delta = start[0], limit[0], delta[0]
        try:
            size = _range_size(start, limit, delta, dtype.is_integer)
        except ShapeError as error:
            raise InvalidArgumentError(None, op, str(error)) from None
        if size == 0:
            return [np.zeros(0, np_dtype)]
        steps = np.full(size, delta, dtype=np_dtype)
        steps[0] = start
        return [np.cumsum(steps, dtype=np_dtype)]  # TF's ``val += delta``, in order, in the output type


_RANGE_DTYPE_HIERARCHY = [dtypes.int32, dtypes.int64, dtypes.float32, dtypes.float64]


def range(start, limit=None, delta=1, dtype=None, name="range"):  # noqa: A001 - TF's name
    """tf.range: arguments converted in ``range/``; without dtype, the widest one wins and
    the others are cast (``range/Cast``...), as in TF 1.15."""
    from .math_ops import cast

    if limit is None:
        start, limit = 0, start
    with name_scope(name, "Range", [start, limit, delta]) as scope:
        start = convert_to_tensor(start, dtype=dtype, name="start")
        limit = convert_to_tensor(limit, dtype=dtype, name="limit")
        delta = convert_to_tensor(delta, dtype=dtype, name="delta")
        if dtype is None:
            args = [start, limit, delta]
            assert all(arg.dtype in _RANGE_DTYPE_HIERARCHY for arg in args)
            inferred = max((arg.dtype for arg in args), key=_RANGE_DTYPE_HIERARCHY.index)
            start, limit, delta = (cast(arg, inferred) for arg in args)
        return apply_op("Range", [start, limit, delta], name=scope).outputs[0]


def sequence_mask(lengths, maxlen=None, dtype=dtypes.bool, name=None):
    """tf.sequence_mask: ``range(maxlen) < expand_dims(lengths, -1)``."""
    from .array_ops import expand_dims
    from .math_ops import cast

    with name_scope(name, "SequenceMask", [lengths, maxlen]):
        lengths = convert_to_tensor(lengths)
        if maxlen is None:
            axes = _all_dimensions(lengths)
            maxlen = apply_op("Max", [lengths, axes]).outputs[0]
            maxlen = apply_op("Maximum", [constant(0, maxlen.dtype), maxlen]).outputs[0]
        else:
            maxlen = convert_to_tensor(maxlen)
        if maxlen.shape.ndims is not None and maxlen.shape.ndims != 0:
            raise ValueError("maxlen must be scalar for sequence_mask")
        row_vector = apply_op("Range", [constant(0, maxlen.dtype), maxlen, constant(1, maxlen.dtype)]).outputs[0]
        matrix = apply_op("Cast", [expand_dims(lengths, -1)], {"DstT": maxlen.dtype}).outputs[0]
        result = row_vector < matrix
        dtype = None if dtype is None else dtypes.as_dtype(dtype)
        if dtype is None or result.dtype.base_dtype == dtype.base_dtype:
            return result
        return cast(result, dtype)


def _all_dimensions(x):
    """A 1-D tensor of all of x's axes: a Const when the rank is static."""
    if x.shape.ndims is not None:
        return constant(np.arange(x.shape.ndims), dtype=dtypes.int32)
    from .array_ops import rank

    return range(0, rank(x))


TF_EXPORTS = ["gather", "one_hot", "where", "where_v2", "range", "sequence_mask", "unsorted_segment_sum"]
MATH_EXPORTS = ["unsorted_segment_sum"]
