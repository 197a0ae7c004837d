"""Slicing: the Slice and StridedSlice ops, tf.slice, tf.strided_slice, Tensor.__getitem__.

:func:`validate_strided_slice` is a port of TF's ``ValidateStridedSliceOp``
(tensorflow/core/util/strided_slice_op.cc): it turns the sparse spec (begin, end,
strides and the five masks, one entry per index expression) into a dense spec (one
entry per input dimension), canonicalizes the bounds and computes the output shape.
Shape inference and :func:`strided_slice_numpy` (constant folding) both use it, so the
static shape and the value always agree with what TF's kernel produces.

``x[1:, ..., tf.newaxis, 0]`` builds, as TF 1.15 does, an op named ``strided_slice``
whose begin/end/strides inputs are ``strided_slice/stack``, ``strided_slice/stack_1``
and ``strided_slice/stack_2``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
import numpy as np

from tfc import ir
from tfc.ir.dims import dim_add, dim_ceildiv, dim_floordiv, dim_mul, dim_str, dim_sub

from .. import dtypes
from ..graph import Tensor, name_scope
from ..op_helper import apply_op
from ..registry import Attr, OpType, ShapeError, register
from ..tensor_shape import Dimension
from . import inference_context as ic
from .constant_op import constant

_BaseSlice = slice  # `slice` is redefined below as tf.slice

INDEX_TYPES = (dtypes.int32, dtypes.int64)
_SHRINK_AXIS = -1
_NEW_AXIS = -2


# =====================================================================================
# Lowerings of Slice and StridedSlice
# =====================================================================================
class _Dynamic:
    """An index known only at run time: ``value()`` emits it as an IR scalar."""

    def __init__(self, value):
        self.value = value


def _index_items(ctx, vector, count: int) -> list:
    """One entry per element of the rank-1 ``vector``: an int or SymExpr when known at
    compile time, else a _Dynamic that extracts the element."""
    known = ctx.static(vector)
    if known is not None:
        return list(ic.as_dim_array(np.asarray(known).reshape(-1)))
    packed = ic.packed_elements(ctx, vector)
    items = []
    for i in range(count):
        if packed is not None:
            element = packed[i]
            value = ctx.static(element)
            if value is not None:
                items.append(ic.as_dim_array(np.asarray(value).reshape(-1))[0])
                continue
            items.append(_Dynamic(lambda element=element: element))
        else:
            items.append(_Dynamic(lambda i=i: ctx.reshape(ic.slice_axis(ctx, vector, 0, i, i + 1), ())))
    return items


def _wrapped_index(ctx, index, extent):
    """A run-time index made non-negative the way TF reads it: ``i < 0 ? i + extent : i``."""
    elem = index.type.elem
    negative = ctx.b.value("compare", [index, ctx.scalar(0, elem)], {"dir": "lt"})
    shifted = ctx.b.value("add", [index, ic.dim_scalar(ctx, extent, elem)])
    return ctx.b.value("select", [negative, shifted, index])


class _Plan:
    """What a slice lowers to: dynamic_slice the dims whose start is known only at run
    time, reverse some dims, slice them (positive strides), then reshape.
    :meth:`emit_grad` does the converse for StridedSliceGrad: reshape, pad (interior
    padding undoes the strides), reverse, scatter into the run-time positions."""

    def __init__(self, shape):
        rank = len(shape)
        self.shape = tuple(shape)
        self.reverse = []
        self.start = [0] * rank
        self.limit = list(shape)
        self.stride = [1] * rank
        self.dynamic = {}  # dim -> (IR index scalar, window size)

    def emit(self, ctx, x, final_shape):
        final_shape = tuple(ctx.canon(d) for d in final_shape)
        if any(isinstance(d, int) and d == 0 for d in final_shape):
            return ic.empty(ctx, x.type.elem, final_shape)
        if self.dynamic:  # first, so that the static part works on the small window
            elem = next(iter(self.dynamic.values()))[0].type.elem
            starts, sizes = [], []
            for d in range(x.type.rank):
                if d in self.dynamic:
                    index, size = self.dynamic[d]
                    starts.append(ctx.convert(index, elem))
                    sizes.append(ctx.canon(size))
                else:
                    starts.append(ctx.scalar(0, elem))
                    sizes.append(ctx.canon(x.type.shape[d]))
            x = ctx.b.value("dynamic_slice", [x] + starts, {"sizes": sizes})
        reverse = [d for d in self.reverse if x.type.shape[d] != 1]
        if reverse:
            x = ctx.b.value("reverse", [x], {"dims": sorted(reverse)})
        full = [ctx.canon(d) for d in x.type.shape]
        start = [0 if d in self.dynamic else ctx.canon(v) for d, v in enumerate(self.start)]
        limit = [full[d] if d in self.dynamic else ctx.canon(v) for d, v in enumerate(self.limit)]
        if any(v != 0 for v in start) or limit != full or any(k != 1 for k in self.stride):
            x = ctx.b.value("slice", [x], {"start": start, "limit": limit, "stride": list(self.stride)})
        return ctx.reshape(x, final_shape)

    def emit_grad(self, ctx, dy):
        """A tensor of the sliced input's shape: ``dy`` where the slice read, zeros elsewhere."""
        from .array_ops import _zero_extend

        elem = dy.type.elem
        shape = [ctx.canon(d) for d in self.shape]
        rank = len(shape)
        window = [ctx.canon(self.dynamic[d][1]) if d in self.dynamic else shape[d] for d in range(rank)]
        taken = []  # the processing shape: elements the slice took along each dim
        for d in range(rank):
            if d in self.dynamic:
                taken.append(window[d])
            else:
                extent = ctx.canon(dim_sub(self.limit[d], self.start[d]))
                taken.append(ctx.canon(dim_ceildiv(extent, self.stride[d])))
        zero = ctx.scalar(False if elem.is_pred else 0, elem)
        if any(isinstance(t, int) and t == 0 for t in taken):
            return ctx.broadcast_in_dim(zero, tuple(shape), [])
        g = ctx.reshape(dy, tuple(taken))
        # Undo the static slice: zeros before, between (strides) and after the taken elements.
        low, high, interior, symbolic = [0] * rank, [0] * rank, [0] * rank, {}
        for d in range(rank):
            if d in self.dynamic:
                continue
            start = ctx.canon(self.start[d])
            used = ctx.canon(dim_add(dim_mul(dim_sub(taken[d], 1), self.stride[d]), 1))
            after = ctx.canon(dim_sub(dim_sub(window[d], start), used))
            interior[d] = self.stride[d] - 1
            if isinstance(start, int) and isinstance(after, int):
                low[d], high[d] = start, after
            else:
                symbolic[d] = (start, after)
        if any(low) or any(high) or any(interior):
            g = ctx.b.value("pad", [g, zero], {"low": low, "high": high, "interior": interior})
        for d, (start, after) in symbolic.items():
            g = _zero_extend(ctx, g, d, start, after)
        reverse = [d for d in self.reverse if window[d] != 1]
        if reverse:
            g = ctx.b.value("reverse", [g], {"dims": sorted(reverse)})
        # Undo the dynamic slice: add the window at its run-time position.
        for d in sorted(self.dynamic):
            index, size = self.dynamic[d]
            size = ctx.canon(size)
            target = [ctx.canon(v) for v in g.type.shape]
            target[d] = shape[d]
            index_elem = index.type.elem
            positions = ctx.b.value("iota", [], {"dim": 0}, result_type=ir.TensorType(index_elem, (size,)))
            positions = ctx.b.value("add", [positions, ctx.broadcast_in_dim(index, (size,), [])])
            g = ctx.b.value("scatter_add", [ctx.broadcast_in_dim(zero, tuple(target), []), positions, g],
                            {"axis": d})
        return g


def _lower_slice(ctx, op, x, begin, size):
    rank = x.type.rank
    sizes = ic.static_dims(ctx, size, "Slice's size")
    if len(sizes) != rank:
        ctx.fail(f"Expected size to be a vector of {rank} elements, got {len(sizes)}")
    begins = _index_items(ctx, begin, rank)
    if len(begins) != rank:
        ctx.fail(f"Expected begin to be a vector of {rank} elements, got {len(begins)}")
    if all(isinstance(b, int) for b in begins) and all(isinstance(s, int) for s in sizes) and all(
            isinstance(d, int) for d in x.type.shape):
        index = tuple(_BaseSlice(b, d if s == -1 else b + s) for b, s, d in zip(begins, sizes, x.type.shape))
        if all(0 <= b <= d and (s == -1 or 0 <= s <= d - b) for b, s, d in zip(begins, sizes, x.type.shape)):
            folded = ic.fold(ctx, lambda v: v[index], [x], x.type.elem)
            if folded is not None:
                return folded
    plan = _Plan(x.type.shape)
    shape = []
    for i, (b, s) in enumerate(zip(begins, sizes)):
        d = ctx.canon(x.type.shape[i])
        if isinstance(s, int) and s < -1:
            ctx.fail(f"Out of bounds slicing on dimension {i} of length {dim_str(d)}: sizes vector cannot be < -1, "
                     f"but was {s}")
        if isinstance(b, _Dynamic):
            if isinstance(s, int) and s == -1:
                ctx.fail(f"Slice with a begin known only at run time and size -1 on dimension {i}: the output size "
                         "is data-dependent")
            begin_value = b.value()
            ctx.check("slice_begin", begin_value, bound=[d], size=[s], axis=i)  # dynamic_slice would clamp
            if s != d:
                plan.dynamic[i] = (begin_value, s)
            shape.append(s)
            continue
        extent = dim_sub(d, b) if isinstance(s, int) and s == -1 else s
        if isinstance(b, int) and (b < 0 or (isinstance(d, int) and b > d)):
            ctx.fail(f"Expected begin[{i}] in [0, {dim_str(d)}], but got {b}")
        if isinstance(d, int) and isinstance(b, int) and isinstance(extent, int) and not 0 <= extent <= d - b:
            ctx.fail(f"Expected size[{i}] in [0, {d - b}], but got {extent}")
        plan.start[i] = b
        plan.limit[i] = dim_add(b, extent)
        shape.append(extent)
    return plan.emit(ctx, x, shape)


def _relative(bound, d):
    """``bound - d`` when it is a plain int (the bound is ``d + c``), else None."""
    diff = dim_sub(bound, d)
    return diff if isinstance(diff, int) else None


def _strided_interval(ctx, axis, d, b, e, stride, begin_masked, end_masked):
    """(start, limit, positive stride, reversed) of one sliced (non-shrink) dim."""
    if isinstance(d, int):
        for bound, masked in ((b, begin_masked), (e, end_masked)):
            if not masked and not isinstance(bound, int):
                ctx.fail(f"StridedSlice bound {dim_str(bound)} on dimension {axis} depends on run-time sizes; "
                         "TF clamps it into the dimension, which the compiler cannot express")
        first = _canonical(b if not begin_masked else 0, 0, stride, d, begin_masked)
        last = _canonical(e if not end_masked else 0, 1, stride, d, end_masked)
        if stride > 0:
            return first, max(first, last), stride, False
        start, limit = d - 1 - first, d - 1 - last
        return start, max(start, limit), -stride, True
    # A dimension known only at run time: bounds are taken as given (no clamping), so
    # only forms whose violation yields an empty/negative size rather than an
    # out-of-range read are accepted: start a non-negative int, limit ``d + c`` (c <= 0).
    if stride > 0:
        start = 0 if begin_masked else (b if not isinstance(b, int) or b >= 0 else dim_add(d, b))
        limit = d if end_masked else (e if not isinstance(e, int) or e >= 0 else dim_add(d, e))
        reverse = False
    else:
        first = dim_sub(d, 1) if begin_masked else (b if not isinstance(b, int) or b >= 0 else dim_add(d, b))
        last = -1 if end_masked else (e if not isinstance(e, int) or e >= 0 else dim_add(d, e))
        start, limit = dim_sub(dim_sub(d, 1), first), dim_sub(dim_sub(d, 1), last)
        reverse = True
    offset = _relative(limit, d)
    if not (isinstance(start, int) and start >= 0 and offset is not None and offset <= 0):
        shown = f"{'' if begin_masked else dim_str(b)}:{'' if end_masked else dim_str(e)}:{stride}"
        ctx.fail(f"StridedSlice [{shown}] on dimension {axis} of run-time size {dim_str(d)}: TF clamps the bounds "
                 "to the run-time size, which the compiler cannot express (bounds counted from the start may "
                 "only begin, and bounds counted from the end may only end, a slice of such a dimension)")
    return start, limit, abs(stride), reverse


def _lower_strided_slice(ctx, op, x, begin, end, strides):
    attrs = op._attrs
    masks = _masks(attrs)
    stride_values = ic.static_ints(ctx, strides, "StridedSlice's strides")
    count = len(stride_values)
    begins = _index_items(ctx, begin, count)
    ends = _index_items(ctx, end, count)
    if len(begins) != count or len(ends) != count:
        ctx.fail("Expected begin, end, and strides to be 1D equal size tensors")
    if masks[2] and masks[2] & (masks[2] - 1):
        ctx.fail("Multiple ellipses in slice spec not allowed")

    # Constant folding (shape arithmetic: tf.shape(x)[0], shape[1:]...).
    if all(isinstance(v, int) for v in begins + ends) and all(isinstance(d, int) for d in x.type.shape) \
            and ctx.static(x) is not None:
        try:
            validate_strided_slice(begins, ends, stride_values, list(x.type.shape), *masks)
        except ShapeError as error:
            ctx.fail(str(error))
        folded = ic.fold(ctx, lambda v: strided_slice_numpy(v, begins, ends, stride_values, attrs), [x],
                         x.type.elem)
        if folded is not None:
            return folded

    plan, final = _strided_slice_plan(ctx, attrs, x.type.shape, begins, ends, stride_values)
    return plan.emit(ctx, x, final)


def _strided_slice_plan(ctx, attrs, in_shape, begins, ends, stride_values):
    """The _Plan and final shape of a strided slice of a tensor of shape ``in_shape``."""
    masks = _masks(attrs)
    count = len(stride_values)
    rank = len(in_shape)
    # The dense spec, with each dim's begin/end given as the index of its sparse entry.
    positions = list(range(count))
    try:
        d_begin, d_end, d_strides, d_bmask, d_emask, d_shrink, gather = _build_dense_spec(
            positions, positions, stride_values, rank, masks)
    except ShapeError as error:
        ctx.fail(str(error))
    plan = _Plan(in_shape)
    processing = []
    for axis in range(rank):
        d = ctx.canon(in_shape[axis])
        stride = d_strides[axis]
        if stride == 0:
            ctx.fail(f"strides[{axis}] must be non-zero")
        if d_shrink & (1 << axis):
            if stride <= 0:
                ctx.fail("only stride 1 allowed on non-range indexing.")
            b = begins[d_begin[axis]]
            processing.append(1)
            if isinstance(b, _Dynamic):
                index = _wrapped_index(ctx, b.value(), d)
                ctx.check("slice_index", index, bound=[d], axis=axis)  # before dynamic_slice clamps it
                plan.dynamic[axis] = (index, 1)
                continue
            index = dim_add(d, b) if isinstance(b, int) and b < 0 else b
            if isinstance(d, int) and (not isinstance(index, int) or not 0 <= index < d):
                ctx.fail(f"slice index {dim_str(b)} of dimension {axis} out of bounds.")
            plan.start[axis], plan.limit[axis] = index, dim_add(index, 1)
            continue
        begin_masked = bool(d_bmask & (1 << axis))
        end_masked = bool(d_emask & (1 << axis))
        b = None if begin_masked else begins[d_begin[axis]]
        e = None if end_masked else ends[d_end[axis]]
        if isinstance(b, _Dynamic) or isinstance(e, _Dynamic):
            ctx.fail(f"StridedSlice with a begin/end known only at run time on dimension {axis}: the output size "
                     "is data-dependent (only indexing with a run-time scalar, x[i], is supported)")
        start, limit, step, reverse = _strided_interval(ctx, axis, d, b, e, stride, begin_masked, end_masked)
        if reverse:
            plan.reverse.append(axis)
        plan.start[axis], plan.limit[axis], plan.stride[axis] = start, limit, step
        size = dim_sub(limit, start)
        processing.append(size if step == 1 else dim_floordiv(dim_add(size, step - 1), step))
    final = []
    for index in gather:
        if index >= 0:
            final.append(processing[index])
        elif index == _NEW_AXIS:
            final.append(1)
    return plan, final


def _lower_strided_slice_grad(ctx, op, shape, begin, end, strides, dy):
    attrs = op._attrs
    in_shape = [ctx.canon(d) for d in ic.static_dims(ctx, shape, "StridedSliceGrad's shape")]
    for d in in_shape:
        if isinstance(d, int) and d < 0:
            ctx.fail(f"StridedSliceGrad's shape has a negative dimension: {in_shape}")
    masks = _masks(attrs)
    stride_values = ic.static_ints(ctx, strides, "StridedSliceGrad's strides")
    count = len(stride_values)
    begins = _index_items(ctx, begin, count)
    ends = _index_items(ctx, end, count)
    if len(begins) != count or len(ends) != count:
        ctx.fail("Expected begin, end, and strides to be 1D equal size tensors")
    if masks[2] and masks[2] & (masks[2] - 1):
        ctx.fail("Multiple ellipses in slice spec not allowed")
    if all(isinstance(v, int) for v in begins + ends) and all(isinstance(d, int) for d in in_shape):
        try:
            validate_strided_slice(begins, ends, stride_values, in_shape, *masks)
        except ShapeError as error:
            ctx.fail(str(error))
    plan, final = _strided_slice_plan(ctx, attrs, in_shape, begins, ends, stride_values)
    if dy.type.rank != len(final):
        ctx.fail(f"shape of dy was {[dim_str(d) for d in dy.type.shape]} instead of {[dim_str(d) for d in final]}")
    for got, want in zip(dy.type.shape, final):
        ctx.unify(got, want, (tuple(dy.type.shape), tuple(final)))
    return plan.emit_grad(ctx, dy)


# =====================================================================================
# Slice
# =====================================================================================
def _slice_shape(ctx):
    """SliceShape of common_shape_fns.cc."""
    in_shape = ctx.input(0)
    begin_shape = ic.with_rank(ctx.input(1), 1)
    sizes_shape = ic.with_rank(ctx.input(2), 1)
    begin_shape = ic.merge(begin_shape, sizes_shape)
    if begin_shape[0] is not None:
        in_shape = ic.with_rank(in_shape, begin_shape[0])
    begin_value = ctx.shape_from_shape_tensor(1)  # partially known begins read as a "shape"
    sizes = ctx.input_tensor(2)
    if sizes is not None:
        sizes = np.asarray(sizes).ravel().tolist()
        begin_value = ic.with_rank(begin_value, len(sizes))
        dims = []
        for i, size in enumerate(sizes):
            in_dim = ic.dim(in_shape, i)
            if size == -1:
                dims.append(ic.subtract_dims(in_dim, begin_value[i]))
            elif size < 0:
                shown = -1 if in_dim is None else in_dim
                raise ShapeError(f"Out of bounds slicing on dimension {i} of length {shown}: sizes vector cannot "
                                 f"be < -1, but was {size}")
            else:
                dims.append(size)
        return [dims]
    sizes_value = ctx.shape_from_shape_tensor(2)
    if sizes_value is not None:
        ic.with_rank(begin_value, len(sizes_value))
        return [sizes_value]
    return [ic.unknown_of_rank(None if in_shape is None else len(in_shape))]


@register
class Slice(OpType):
    inputs = ["input: T", "begin: Index", "size: Index"]
    outputs = ["output: T"]
    attrs = {"T": Attr("type"), "Index": Attr("type", allowed=INDEX_TYPES)}

    def infer(op):
        return ic.run_shape_fn(op, _slice_shape)

    lower = _lower_slice

    def gradient(op, grad):
        """_SliceGrad: pad the gradient with the zeros before and after the slice."""
        from .array_ops import pad, rank, reshape, shape
        from .concat_ops import concat, stack

        input_vec = op.inputs[0]
        begin_vec = op.inputs[1]
        # TF 1.15 uses int32 shapes (and fails for int64 begins); the begin's type is the
        # same graph for int32 and also works for int64.
        index_type = begin_vec.dtype.base_dtype
        input_rank = rank(input_vec)
        slice_size = shape(op.outputs[0], out_type=index_type)
        shape_ = stack([input_rank, 1])
        before_pad = reshape(begin_vec, shape_)
        after_pad = reshape(shape(input_vec, out_type=index_type) - slice_size - begin_vec, shape_)
        paddings = concat([before_pad, after_pad], 1)
        return [pad(grad, paddings), None, None]


def slice(input_, begin, size, name=None):  # noqa: A001 - TF's name
    """tf.slice: ``size[i] == -1`` takes everything from ``begin[i]`` on."""
    return apply_op("Slice", [input_, begin, size], name=name).outputs[0]


# =====================================================================================
# StridedSlice: TF's ValidateStridedSliceOp
# =====================================================================================
@dataclass
class StridedSliceSpec:
    """The dense (per input dimension) form of a strided slice, as TF computes it."""

    begin: list
    end: list
    strides: list
    shrink_axis_mask: int  # dense
    processing_shape: list = field(default_factory=list)  # -1 for unknown
    final_shape: list = field(default_factory=list)  # -1 for unknown


def _shape_text(array) -> str:
    """TensorShape::DebugString of a value's shape: ``[2]``."""
    return "[" + ",".join(str(d) for d in np.shape(array)) + "]"


def _check_spec_shapes(begin, end, strides) -> None:
    n = np.size(strides)
    begin_wrong = begin is not None and not (np.ndim(begin) == 1 and np.size(begin) == n and np.size(begin) < 32)
    end_wrong = end is not None and not (np.ndim(end) == 1 and np.size(end) == n)
    if begin_wrong or end_wrong or np.ndim(strides) != 1:
        if begin is not None and end is not None:
            raise ShapeError("Expected begin, end, and strides to be 1D equal size tensors, but got shapes "
                             f"{_shape_text(begin)}, {_shape_text(end)}, and {_shape_text(strides)} instead.")
        raise ShapeError("Expected begin, end, and strides to be 1D equal size tensors, but got shape "
                         f"{_shape_text(strides)} for strides.")


def _build_dense_spec(begin, end, strides, dims, masks):
    """BuildDenseSpec: expand the ellipsis (explicit or implicit) and skip new axes.

    Returns (begin, end, strides, begin_mask, end_mask, shrink_mask, gather indices),
    all dense; a gather index is a processing dim, _NEW_AXIS or _SHRINK_AXIS.
    """
    begin_mask, end_mask, ellipsis_mask, new_axis_mask, shrink_mask = masks
    sparse_dims = len(strides)
    num_add_axis_after_ellipsis = 0
    ellipsis_seen = False
    for i in range(sparse_dims):
        if ellipsis_seen and (1 << i) & new_axis_mask:
            num_add_axis_after_ellipsis += 1
        if (1 << i) & ellipsis_mask:
            ellipsis_seen = True
    if not ellipsis_seen:  # an implicit ellipsis at the end
        ellipsis_mask |= 1 << sparse_dims
        sparse_dims += 1
    d_begin, d_end, d_strides = [0] * dims, [0] * dims, [1] * dims
    d_begin_mask = d_end_mask = d_shrink = 0
    gather = []
    full = 0
    for i in range(sparse_dims):
        bit = 1 << i
        if bit & ellipsis_mask:
            next_index = min(dims - (sparse_dims - i) + 1 + num_add_axis_after_ellipsis, dims)
            while full < next_index:
                d_begin_mask |= 1 << full
                d_end_mask |= 1 << full
                gather.append(full)
                full += 1
        elif bit & new_axis_mask:
            gather.append(_NEW_AXIS)
        else:
            if full == dims:
                raise ShapeError(f"Index out of range using input dim {full}; input has only {dims} dims")
            if begin is not None:
                d_begin[full] = int(begin[i])
            if end is not None:
                d_end[full] = int(end[i])
            d_strides[full] = int(strides[i])
            if begin_mask & bit:
                d_begin_mask |= 1 << full
            if end_mask & bit:
                d_end_mask |= 1 << full
            if shrink_mask & bit:
                gather.append(_SHRINK_AXIS)
                d_shrink |= 1 << full
            else:
                gather.append(full)
            full += 1
    return d_begin, d_end, d_strides, d_begin_mask, d_end_mask, d_shrink, gather


def _canonical(x: int, c: int, stride: int, dim: int, masked: bool) -> int:
    """Clamp a begin (c=0) or end (c=1) bound into the valid range for ``stride``."""
    valid = (0, dim) if stride > 0 else (-1, dim - 1)
    if masked:
        return valid[c] if stride > 0 else valid[(c + 1) & 1]
    x_fwd = dim + x if x < 0 else x
    return min(max(x_fwd, valid[0]), valid[1])


def _dim_size(interval: int, stride: int) -> int:
    if interval == 0 or (interval < 0) != (stride < 0):
        return 0
    return interval // stride + (1 if interval % stride != 0 else 0)


def validate_strided_slice(begin, end, strides, input_shape, begin_mask=0, end_mask=0, ellipsis_mask=0,
                           new_axis_mask=0, shrink_axis_mask=0) -> StridedSliceSpec:
    """ValidateStridedSliceOp. ``begin``/``end`` may be None (unknown values), ``strides``
    must be known; ``input_shape`` is a list with None (or -1) for unknown dims."""
    _check_spec_shapes(begin, end, strides)
    if ellipsis_mask and ellipsis_mask & (ellipsis_mask - 1):
        raise ShapeError("Multiple ellipses in slice spec not allowed")
    begin = None if begin is None else np.asarray(begin).ravel().tolist()
    end = None if end is None else np.asarray(end).ravel().tolist()
    strides = np.asarray(strides).ravel().tolist()
    shape = [-1 if d is None else int(d) for d in input_shape]
    masks = (begin_mask, end_mask, ellipsis_mask, new_axis_mask, shrink_axis_mask)
    d_begin, d_end, d_strides, d_bmask, d_emask, d_shrink, gather = _build_dense_spec(
        begin, end, strides, len(shape), masks)
    values_known = begin is not None and end is not None
    processing = []
    for i, dim_i in enumerate(shape):
        stride = d_strides[i]
        if stride == 0:
            raise ShapeError(f"strides[{i}] must be non-zero")
        shrink = bool(d_shrink & (1 << i))
        if dim_i == -1:
            processing.append(1 if shrink else -1)
            continue
        begin_masked, end_masked = bool(d_bmask & (1 << i)), bool(d_emask & (1 << i))
        if shrink and stride <= 0:
            raise ShapeError("only stride 1 allowed on non-range indexing.")
        if values_known:
            if shrink:
                # foo[-1] has begin -1 and end 0: rebuild end as begin + 1.
                x_fwd = dim_i + d_begin[i] if d_begin[i] < 0 else d_begin[i]
                d_begin[i], d_end[i] = x_fwd, x_fwd + 1
                if x_fwd < 0 or x_fwd >= dim_i:
                    raise ShapeError(f"slice index {x_fwd} of dimension {i} out of bounds.")
            else:
                d_begin[i] = _canonical(d_begin[i], 0, stride, dim_i, begin_masked)
                d_end[i] = _canonical(d_end[i], 1, stride, dim_i, end_masked)
            processing.append(_dim_size(d_end[i] - d_begin[i], stride))
        elif shrink:
            processing.append(1)
        elif begin_masked and end_masked and dim_i > 0:
            processing.append(_dim_size(-dim_i if stride < 0 else dim_i, stride))
        else:
            processing.append(-1)
    final = []
    for index in gather:
        if index >= 0:
            final.append(processing[index])
        elif index == _NEW_AXIS:
            final.append(1)
    return StridedSliceSpec(d_begin, d_end, d_strides, d_shrink, processing, final)


def _strided_slice_shape(ctx):
    in_shape = ctx.input(0)
    begin_shape = ic.with_rank(ctx.input(1), 1)
    end_shape = ic.with_rank(ctx.input(2), 1)
    strides_shape = ic.with_rank(ctx.input(3), 1)
    begin_shape = ic.merge(begin_shape, end_shape)
    begin_shape = ic.merge(begin_shape, strides_shape)
    strides = ctx.input_tensor(3)
    if in_shape is None or begin_shape[0] is None or strides is None:
        return [None]
    begin = ctx.input_tensor(1)
    end = ctx.input_tensor(2)
    spec = validate_strided_slice(begin, end, strides, in_shape, *_masks(ctx.op._attrs))
    return [[None if d == -1 else d for d in spec.final_shape]]


def _masks(attrs) -> tuple:
    return (attrs["begin_mask"], attrs["end_mask"], attrs["ellipsis_mask"], attrs["new_axis_mask"],
            attrs["shrink_axis_mask"])


@register
class StridedSlice(OpType):
    inputs = ["input: T", "begin: Index", "end: Index", "strides: Index"]
    outputs = ["output: T"]
    attrs = {"T": Attr("type"), "Index": Attr("type", allowed=INDEX_TYPES), "begin_mask": Attr("int", 0),
             "end_mask": Attr("int", 0), "ellipsis_mask": Attr("int", 0), "new_axis_mask": Attr("int", 0),
             "shrink_axis_mask": Attr("int", 0)}

    def infer(op):
        return ic.run_shape_fn(op, _strided_slice_shape)

    lower = _lower_strided_slice

    def gradient(op, grad):
        """_StridedSliceGrad: a StridedSliceGrad op (shape of the input, same spec)."""
        from .array_ops import shape

        begin, end, strides = op.inputs[1:]
        x = shape(op.inputs[0], out_type=begin.dtype)
        return [strided_slice_grad(x, begin, end, strides, grad, **_mask_attrs(op)), None, None, None]


def _mask_attrs(op) -> dict:
    return {name: op.get_attr(name) for name in ("begin_mask", "end_mask", "ellipsis_mask", "new_axis_mask",
                                                 "shrink_axis_mask")}


@register
class StridedSliceGrad(OpType):
    """The gradient of StridedSlice: ``dy`` scattered into zeros of the input's shape."""

    inputs = ["shape: Index", "begin: Index", "end: Index", "strides: Index", "dy: T"]
    outputs = ["output: T"]
    attrs = {"T": Attr("type"), "Index": Attr("type", allowed=INDEX_TYPES), "begin_mask": Attr("int", 0),
             "end_mask": Attr("int", 0), "ellipsis_mask": Attr("int", 0), "new_axis_mask": Attr("int", 0),
             "shrink_axis_mask": Attr("int", 0)}

    def infer(op):
        return ic.run_shape_fn(op, lambda ctx: [ctx.shape_from_shape_tensor(0)])

    lower = _lower_strided_slice_grad

    def gradient(op, grad):
        """_StridedSliceGradGrad: the same strided slice of the gradient."""
        begin, end, strides = op.inputs[1:4]
        return [None, None, None, None, strided_slice(grad, begin, end, strides, **_mask_attrs(op))]


def strided_slice_grad(shape, begin, end, strides, dy, begin_mask=0, end_mask=0, ellipsis_mask=0,
                       new_axis_mask=0, shrink_axis_mask=0, name=None):
    """gen_array_ops.strided_slice_grad."""
    attrs = {"begin_mask": begin_mask, "end_mask": end_mask, "ellipsis_mask": ellipsis_mask,
             "new_axis_mask": new_axis_mask, "shrink_axis_mask": shrink_axis_mask}
    return apply_op("StridedSliceGrad", [shape, begin, end, strides, dy], attrs, name).outputs[0]


def strided_slice_numpy(value, begin, end, strides, attrs) -> np.ndarray:
    """The value of a StridedSlice of ``value`` (numpy), exactly as TF's kernel slices."""
    value = np.asarray(value)
    spec = validate_strided_slice(begin, end, strides, list(value.shape), *_masks(attrs))
    out = value
    for axis in range(value.ndim):
        if spec.shrink_axis_mask & (1 << axis):
            indices = [spec.begin[axis]]
        else:
            indices = list(range(spec.begin[axis], spec.end[axis], spec.strides[axis]))
        out = np.take(out, np.asarray(indices, dtype=np.int64), axis=axis)
    return out.reshape(spec.final_shape)




def strided_slice(input_, begin, end, strides=None, begin_mask=0, end_mask=0, ellipsis_mask=0, new_axis_mask=0,
                  shrink_axis_mask=0, var=None, name=None):
    """tf.strided_slice; the result gets TF's ``assign`` closure (sliced assignment to
    ``var``)."""
    if strides is None:
        from .array_ops import ones_like

        strides = ones_like(begin)
    attrs = {"begin_mask": begin_mask, "end_mask": end_mask, "ellipsis_mask": ellipsis_mask,
             "new_axis_mask": new_axis_mask, "shrink_axis_mask": shrink_axis_mask}
    result = apply_op("StridedSlice", [input_, begin, end, strides], attrs, name).outputs[0]
    parent_name = name

    def assign(val, name=None):
        if var is None:
            raise ValueError("Sliced assignment is only supported for variables")
        if name is None:
            name = parent_name + "_assign"
        return var._strided_slice_assign(begin=begin, end=end, strides=strides, value=val, name=name, **attrs)

    result.assign = assign
    return result


# =====================================================================================
# Tensor.__getitem__
# =====================================================================================
_SLICE_TYPE_ERROR = ("Only integers, slices (`:`), ellipsis (`...`), tf.newaxis (`None`) and scalar "
                     "tf.int32/tf.int64 tensors are valid indices")
_SUPPORTED_SLICE_DTYPES = (dtypes.int32, dtypes.int32_ref, dtypes.int64, dtypes.int64_ref)


def _check_index(idx) -> None:
    """TF's _check_index: ints, Dimensions and scalar int32/int64 tensors."""
    if isinstance(idx, (int, Dimension)) and not isinstance(idx, bool):
        return
    dtype = getattr(idx, "dtype", None)
    try:
        supported = dtype is not None and dtypes.as_dtype(dtype) in _SUPPORTED_SLICE_DTYPES
    except TypeError:
        supported = False
    shape = getattr(idx, "shape", None)
    if not supported or (shape is not None and len(shape) == 1):
        raise TypeError(_SLICE_TYPE_ERROR + f", got {idx!r}")


def _is_undefined_dimension(d) -> bool:
    return isinstance(d, Dimension) and d.value is None


def _index_value(x):
    """A Dimension index as its int (packed like one); other indices unchanged."""
    return x.value if isinstance(x, Dimension) else x


@dataclass
class _IndexSpec:
    begin: list = field(default_factory=list)
    end: list = field(default_factory=list)
    strides: list = field(default_factory=list)
    begin_mask: int = 0
    end_mask: int = 0
    ellipsis_mask: int = 0
    new_axis_mask: int = 0
    shrink_axis_mask: int = 0


def _parse_slice_spec(slice_spec) -> _IndexSpec:
    """Turn ``x[...]``'s index expressions into StridedSlice's begin/end/strides/masks."""
    spec = _IndexSpec()
    for index, s in enumerate(slice_spec):
        bit = 1 << index
        if isinstance(s, _BaseSlice):
            if s.start is not None and not _is_undefined_dimension(s.start):
                _check_index(s.start)
                spec.begin.append(_index_value(s.start))
            else:
                spec.begin.append(0)
                spec.begin_mask |= bit
            if s.stop is not None and not _is_undefined_dimension(s.stop):
                _check_index(s.stop)
                spec.end.append(_index_value(s.stop))
            else:
                spec.end.append(0)
                spec.end_mask |= bit
            if s.step is not None and not _is_undefined_dimension(s.step):
                _check_index(s.step)
                spec.strides.append(_index_value(s.step))
            else:
                spec.strides.append(1)
        elif s is Ellipsis:
            spec.begin.append(0)
            spec.end.append(0)
            spec.strides.append(1)
            spec.ellipsis_mask |= bit
        elif s is None:  # tf.newaxis
            spec.begin.append(0)
            spec.end.append(0)
            spec.strides.append(1)
            spec.new_axis_mask |= bit
        else:
            _check_index(s)
            s = _index_value(s)
            spec.begin.append(s)
            spec.end.append(s + 1)  # for a tensor index this is an 'add' op, as in TF
            spec.strides.append(1)
            spec.shrink_axis_mask |= bit
    return spec


def _slice_helper(tensor, slice_spec, var=None):
    """Tensor.__getitem__ (TF's _slice_helper): basic numpy indexing via StridedSlice."""
    from .concat_ops import stack

    if isinstance(slice_spec, (bool, np.bool_)) or (isinstance(slice_spec, Tensor) and
                                                     slice_spec.dtype == dtypes.bool) or \
            (isinstance(slice_spec, np.ndarray) and slice_spec.dtype == bool):
        raise NotImplementedError("Boolean mask indexing (tf.boolean_mask) is not supported by tfc yet")
    if not isinstance(slice_spec, (list, tuple)):
        slice_spec = [slice_spec]
    spec = _parse_slice_spec(slice_spec)
    with name_scope(None, "strided_slice", [tensor] + spec.begin + spec.end + spec.strides) as scope:
        if spec.begin:
            packed = [stack(spec.begin), stack(spec.end), stack(spec.strides)]
            if any(p.dtype == dtypes.int64 for p in packed):
                packed = [p if p.dtype == dtypes.int64 else apply_op("Cast", [p], {"DstT": dtypes.int64}).outputs[0]
                          for p in packed]
        else:
            empty = constant([], dtype=dtypes.int32)
            packed = [empty, empty, empty]
        return strided_slice(tensor, *packed, begin_mask=spec.begin_mask, end_mask=spec.end_mask,
                             shrink_axis_mask=spec.shrink_axis_mask, new_axis_mask=spec.new_axis_mask,
                             ellipsis_mask=spec.ellipsis_mask, var=var, name=scope)


Tensor.__getitem__ = _slice_helper

TF_EXPORTS = ["slice", "strided_slice"]
