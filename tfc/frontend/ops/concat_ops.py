"""Packing and joining: Pack/Unpack (stack, unstack), autopacking, ConcatV2, Split, SplitV.

Entries follow TF 1.15's OpDefs and C++ shape functions; the functions build the ops
under the names tensorflow/python/ops/array_ops.py gives them. ``autopack`` is what
``convert_to_tensor`` uses for lists holding tensors (TF's _autopacking_helper).
"""
from __future__ import annotations

import numbers

import numpy as np

from tfc import ir
from tfc.ir.dims import dim_add, dim_floordiv, dim_mul, dim_str, dim_sub

from .. import dtypes
from ..convert import convert_to_tensor
from ..graph import Operation, Tensor, name_scope
from ..op_helper import apply_op
from ..registry import Attr, OpType, ShapeError, register
from ..tensor_shape import Dimension
from . import inference_context as ic
from .constant_op import constant

INDEX_TYPES = (dtypes.int32, dtypes.int64)


# =====================================================================================
# Lowerings
# =====================================================================================
def _lower_pack(ctx, op, *values):
    rank = values[0].type.rank
    axis = ic.normalize_axis(ctx, op._attrs["axis"], rank + 1)
    elem = values[0].type.elem
    folded = ic.fold(ctx, lambda *known: np.stack(known, axis), values, elem)
    if folded is not None:
        return folded
    shape = ic.unify_shapes(ctx, values)
    expanded = tuple(shape[:axis]) + (1,) + tuple(shape[axis:])
    out = ic.concat_values(ctx, [ctx.reshape(v, expanded) for v in values], axis)
    if rank == 0:
        ic.record_elements(ctx, out, values)
    return out


def _lower_unpack(ctx, op, x):
    rank = x.type.rank
    axis = ic.normalize_axis(ctx, op._attrs["axis"], rank)
    count = op._attrs["num"]
    d = ctx.canon(x.type.shape[axis])
    if isinstance(d, int) and d != count:
        ctx.fail(f"Input shape axis {axis} must equal {count}, got shape {[dim_str(v) for v in x.type.shape]}")
    if not isinstance(d, int):
        shape = tuple(x.type.shape)
        ctx.unify(d, count, (shape, shape[:axis] + (count,) + shape[axis + 1:]))
    folded = ic.fold(ctx, lambda v: [np.take(v, i, axis=axis) for i in range(count)], [x], x.type.elem)
    if folded is not None:
        return folded
    out_shape = tuple(ctx.canon(v) for i, v in enumerate(x.type.shape) if i != axis)
    return [ctx.reshape(ic.slice_axis(ctx, x, axis, i, i + 1), out_shape) for i in range(count)]


def _lower_concat(ctx, op, *inputs):
    values, axis_value = inputs[:-1], inputs[-1]
    rank = values[0].type.rank
    if rank == 0:
        ctx.fail("Can't concatenate scalars (use tf.stack instead)")
    axis = ic.static_axis(ctx, axis_value, rank, "ConcatV2's axis")
    elem = values[0].type.elem
    folded = ic.fold(ctx, lambda *known: np.concatenate(known, axis), values, elem)
    if folded is not None:
        return folded
    ic.unify_shapes(ctx, values, skip_axis=axis)
    return ic.concat_values(ctx, list(values), axis)


def _split_pieces(ctx, x, axis, sizes):
    """Consecutive slices of ``x`` along ``axis`` with the given (dim) sizes."""
    known = ctx.static(x)
    if known is not None and all(isinstance(s, int) for s in sizes):
        bounds = np.cumsum([0] + list(sizes)).tolist()
        folded = ic.fold(ctx, lambda v: [np.take(v, range(bounds[i], bounds[i + 1]), axis=axis)
                                         for i in range(len(sizes))], [x], x.type.elem)
        if folded is not None:
            return folded
    if len(sizes) == 1:
        return [x]
    out, start = [], 0
    for size in sizes:
        limit = dim_add(start, size)
        out.append(ic.slice_axis(ctx, x, axis, start, limit))
        start = limit
    return out


def _lower_split(ctx, op, split_dim, x):
    rank = x.type.rank
    if rank == 0:
        ctx.fail("Can't split scalars")
    axis = ic.static_axis(ctx, split_dim, rank, "Split's split_dim")
    count = op._attrs["num_split"]
    d = ctx.canon(x.type.shape[axis])
    piece = dim_floordiv(d, count)
    if dim_mul(piece, count) != d:
        if isinstance(d, int):
            ctx.fail(f"Number of ways to split should evenly divide the split dimension, but got split_dim {axis} "
                     f"(size = {d}) and num_split {count}")
        ctx.fail(f"cannot prove that num_split {count} evenly divides dimension {axis} of size {dim_str(d)}")
    return _split_pieces(ctx, x, axis, [piece] * count)


def _lower_split_v(ctx, op, x, size_splits, split_dim):
    rank = x.type.rank
    if rank == 0:
        ctx.fail("Can't split scalars")
    axis = ic.static_axis(ctx, split_dim, rank, "SplitV's split_dim")
    sizes = ic.static_ints(ctx, size_splits, "SplitV's size_splits")
    count = op._attrs["num_split"]
    if len(sizes) != count:
        ctx.fail("Length of size_splits should be equal to num_outputs")
    if sizes.count(-1) > 1:
        ctx.fail("size_splits can only have one -1")
    if any(s < -1 for s in sizes):
        ctx.fail(f"size_splits must be non-negative (or -1), got {sizes}")
    d = ctx.canon(x.type.shape[axis])
    total = sum(s for s in sizes if s != -1)
    dims = list(sizes)
    if -1 in sizes:
        rest = dim_sub(d, total)
        if isinstance(rest, int) and rest < 0:
            ctx.fail(f"can't split axis of size {d} into pieces of size [{','.join(map(str, sizes))}]")
        dims[sizes.index(-1)] = rest
    elif isinstance(d, int):
        if d != total:
            ctx.fail(f"Determined shape must either match input shape along split_dim exactly if fully specified, "
                     f"or be less than the size of the input along split_dim if not fully specified.  Got: "
                     f"{total}")
    else:
        shape = tuple(x.type.shape)
        ctx.unify(d, total, (shape, shape[:axis] + (total,) + shape[axis + 1:]))
    return _split_pieces(ctx, x, axis, dims)


def _lower_concat_offset(ctx, op, concat_dim, *shapes):
    """ConcatOffset: offset[i] is zero except at ``concat_dim``, where it is the sum of the
    earlier inputs' sizes along it (no negative concat_dim, as TF 1.15's kernel)."""
    rank = shapes[0].type.shape[0]
    if not isinstance(rank, int):
        ctx.fail("ConcatOffset's shapes must have a length known at compile time")
    for i, s in enumerate(shapes[1:]):
        if s.type.shape[0] != rank:
            ctx.fail(f"input {i + 1} should contain {rank} elements, but got {s.type.shape[0]}")
    axis_value = ctx.static(concat_dim)
    known = [ctx.static(s) for s in shapes]
    if axis_value is not None and all(k is not None for k in known):
        axis = int(np.asarray(axis_value).reshape(-1)[0])
        if not 0 <= axis < rank:
            ctx.fail(f"Concat dim is out of range: {axis} vs. {rank}")
        offset, out = 0, []
        for k in known:
            dims = ic.as_dim_array(np.asarray(k).reshape(-1))
            vector = np.zeros(rank, dtype=object)
            vector[:] = [0] * rank
            vector[axis] = offset
            offset = ctx.canon(dim_add(offset, dims[axis]))
            out.append(ic.from_static(ctx, vector, ir.ElemType.I32))
        return out
    # Known only at run time: mask (position == concat_dim) times the running sum.
    vector_type = ir.TensorType(ir.ElemType.I32, (rank,))
    position = ctx.b.value("iota", [], {"dim": 0}, result_type=vector_type)
    at_axis = ctx.b.value("compare", [position, ctx.broadcast_in_dim(concat_dim, (rank,), [])], {"dir": "eq"})
    mask = ctx.convert(at_axis, ir.ElemType.I32)
    running = ctx.constant(np.zeros(rank, np.int32))
    out = []
    for s in shapes:
        out.append(ctx.b.value("mul", [mask, running]))
        running = ctx.b.value("add", [running, s])
    return out


# =====================================================================================
# Gradients (tensorflow/python/ops/array_grad.py of TF 1.15)
# =====================================================================================
def _extract_input_shapes(inputs) -> list:
    """_ExtractInputShapes: Const shapes when all are static, else one ShapeN."""
    from .array_ops import shape, shape_n

    sizes = []
    for x in inputs:
        input_shape = shape(x)
        if input_shape.op.type != "Const":
            return shape_n(inputs)
        sizes.append(input_shape)
    return sizes


def _concat_grad_helper(op, grad, start_value_index: int, end_value_index: int, dim_index: int) -> list:
    """_ConcatGradHelper for a dense gradient: ConcatOffset + one Slice per input (or a
    SplitV of the sizes for more than 16 inputs)."""
    from .array_ops import rank, squeeze
    from .slicing import slice as slice_

    if len(op.inputs) == 2:  # degenerate concatenation
        return [grad, None] if end_value_index <= dim_index else [None, grad]
    concat_dim = op.inputs[dim_index]
    input_values = op.inputs[start_value_index:end_value_index]
    if concat_dim.op.type == "Const":
        # TF 1.15: a constant axis made in another control flow context (a loop body's, for
        # the gradient loop) is made again here.
        from ..control_flow import get_output_context
        from ..tensor_util import constant_value
        from .constant_op import constant

        if get_output_context(concat_dim.op) is not get_output_context(grad.op):
            concat_dim = constant(constant_value(concat_dim), dtype=concat_dim.dtype)
    non_neg_concat_dim = concat_dim % rank(input_values[0])
    sizes = _extract_input_shapes(input_values)
    out_grads = []
    if len(sizes) > 16:
        sizes = squeeze(slice_(stack(sizes, axis=1), [non_neg_concat_dim, 0], [1, -1]))
        out_grads = list(split(grad, sizes, non_neg_concat_dim))
    else:
        offset = concat_offset(non_neg_concat_dim, sizes)
        for begin, size in zip(offset, sizes):
            out_grads.append(slice_(grad, begin, size))
    return out_grads + [None] if end_value_index <= dim_index else [None] + out_grads


def concat_offset(concat_dim, shape, name=None) -> list:
    """gen_array_ops.concat_offset: the offsets of each input in a concatenation."""
    return apply_op("ConcatOffset", [concat_dim, list(shape)], name=name).outputs


# =====================================================================================
# Pack / Unpack (stack / unstack) and autopacking
# =====================================================================================
def _pack_axis(axis: int, rank_after_pack: int) -> int:
    """GetAxisForPackAndUnpack."""
    if axis < -rank_after_pack or axis >= rank_after_pack:
        raise ShapeError(f"Invalid axis: {axis}; must be in [{-rank_after_pack},{rank_after_pack})")
    return axis + rank_after_pack if axis < 0 else axis


def _pack_shape(ctx):
    count = ctx.num_inputs
    merged = ctx.input(count - 1)
    for i in range(count - 2, -1, -1):
        try:
            merged = ic.merge(ctx.input(i), merged)
        except ShapeError as error:
            raise ic.append_to_message(error, f"From merging shape {i} with other shapes.") from None
    if merged is None:
        return [None]
    axis = _pack_axis(ctx.attr("axis"), len(merged) + 1)
    return [merged[:axis] + [count] + merged[axis:]]


@register
class Pack(OpType):
    inputs = ["values: N * T"]
    outputs = ["output: T"]
    attrs = {"N": Attr("int"), "T": Attr("type"), "axis": Attr("int", 0)}

    def infer(op):
        return ic.run_shape_fn(op, _pack_shape)

    lower = _lower_pack

    def gradient(op, grad):
        """_PackGrad: unstack the gradient."""
        return unstack(grad, num=op.get_attr("N"), axis=op.get_attr("axis"))


def _unpack_shape(ctx):
    count = ctx.attr("num")
    value = ctx.input(0)
    if value is None:
        return [None] * count
    axis = _pack_axis(ctx.attr("axis"), len(value))
    ic.with_value(value[axis], count)
    out = value[:axis] + value[axis + 1:]
    return [out] * count


@register
class Unpack(OpType):
    inputs = ["value: T"]
    outputs = ["output: num * T"]
    attrs = {"num": Attr("int"), "T": Attr("type"), "axis": Attr("int", 0)}

    def infer(op):
        return ic.run_shape_fn(op, _unpack_shape)

    lower = _lower_unpack

    def gradient(op, *grads):
        """_UnpackGrad: stack the gradients."""
        return stack(list(grads), axis=op.get_attr("axis"))


def stack(values, axis=0, name="stack"):
    """tf.stack: for axis 0 a constant list becomes a Const, a list with tensors a Pack."""
    if axis == 0:
        try:
            return convert_to_tensor(values, name=name)
        except (TypeError, ValueError):
            pass  # non-constant elements, or shapes that do not pack: try the op below
    value_shape = convert_to_tensor(values[0], name=name).shape
    if value_shape.ndims is not None:
        expanded = value_shape.ndims + 1
        if axis < -expanded or axis >= expanded:
            raise ValueError(f"axis = {axis} not in [{-expanded}, {expanded})")
    return apply_op("Pack", [list(values)], {"axis": axis}, name).outputs[0]


def unstack(value, num=None, axis=0, name="unstack"):
    """tf.unstack: an Unpack op; ``num`` comes from the static shape when not given."""
    if num is None:
        value = convert_to_tensor(value)
        value_shape = value.shape
        if value_shape.ndims is not None:
            if axis < -value_shape.ndims or axis >= value_shape.ndims:
                raise ValueError(f"axis = {axis} not in [{-value_shape.ndims}, {value_shape.ndims})")
            num = value_shape.dims[axis].value
        if num is None:
            raise ValueError(f"Cannot infer num from shape {value_shape}")
    return apply_op("Unpack", [value], {"num": num, "axis": axis}, name).outputs


def _is_dense_tensor_like(value) -> bool:
    """Tensors and variables (not operations)."""
    if isinstance(value, Tensor):
        return True
    return (hasattr(value, "_as_graph_element") and not isinstance(value, Operation)
            and hasattr(value, "dtype"))


def _dtype_from_nested_lists(values):
    for item in values:
        if _is_dense_tensor_like(item):
            return dtypes.as_dtype(item.dtype).base_dtype
        if isinstance(item, (list, tuple)):
            found = _dtype_from_nested_lists(item)
            if found is not None:
                return found
    return None


def _cast_nested(values, dtype):
    """_cast_nested_seqs_to_dtype: Cast every tensor whose dtype differs."""
    out = []
    for item in values:
        if isinstance(item, (list, tuple)):
            out.append(_cast_nested(item, dtype))
        elif _is_dense_tensor_like(item) and dtypes.as_dtype(item.dtype).base_dtype != dtype:
            out.append(apply_op("Cast", [item], {"DstT": dtype}).outputs[0])
        else:
            out.append(item)
    return out


def _autopacking_helper(values, dtype, name):
    """Pack a (nested) list holding tensors; constant elements become Consts '0', '1'..."""
    must_pack = False
    converted = []
    with name_scope(name) as scope:
        for i, item in enumerate(values):
            if _is_dense_tensor_like(item):
                if dtype is not None and dtypes.as_dtype(item.dtype).base_dtype != dtype:
                    raise TypeError(f"Cannot convert a list containing a tensor of dtype {item.dtype} to {dtype} "
                                    f"(Tensor is: {item!r})")
                converted.append(item)
                must_pack = True
            elif isinstance(item, (list, tuple)):
                packed = _autopacking_helper(item, dtype, str(i))
                if _is_dense_tensor_like(packed):
                    must_pack = True
                converted.append(packed)
            else:
                converted.append(item)
        if not must_pack:
            return converted
        tensors = []
        for i, item in enumerate(converted):
            if _is_dense_tensor_like(item):
                tensors.append(item)
            else:
                tensors.append(constant(item, dtype=dtype, name=str(i)))
        return apply_op("Pack", [tensors], {"axis": 0}, scope).outputs[0]


def autopack(values, dtype=None, name="packed"):
    """convert_to_tensor of a list holding tensors (TF's _autopacking_conversion_function)."""
    inferred = _dtype_from_nested_lists(values)
    dtype = None if dtype is None else dtypes.as_dtype(dtype).base_dtype
    if dtype is None:
        dtype = inferred
    elif inferred is not None and dtype != inferred:
        values = _cast_nested(values, dtype)
    return _autopacking_helper(values, dtype, name or "packed")


# =====================================================================================
# ConcatV2, Split, SplitV
# =====================================================================================
def _concat_pieces(shape, axis: int, min_rank: int):
    """(dims before axis, the axis dim, dims after axis) of one ConcatV2 input."""
    shape = ic.with_rank_at_least(shape, min_rank)
    before = ic.subshape(shape, 0, axis)
    middle = ic.dim(shape, axis)
    after = [] if axis == -1 else ic.subshape(shape, axis + 1)
    return before, middle, after


def _concat_shape(ctx):
    """ConcatShapeHelper: sum the axis dim, merge the others."""
    count = ctx.num_inputs - 1
    ic.with_rank(ctx.input(count), 0)
    axis_value = ctx.input_tensor(count)
    if axis_value is None:
        known_rank = next((len(ctx.input(i)) for i in range(count) if ctx.input(i) is not None), None)
        if known_rank is None:
            return [None]
        if known_rank == 0:
            raise ShapeError("Can't concatenate scalars (use tf.stack instead)")
        for i in range(count):
            ic.with_rank(ctx.input(i), known_rank)
        return [[None] * known_rank]
    axis = int(np.asarray(axis_value).ravel()[0])
    min_rank = -axis if axis < 0 else axis + 1
    out_before, out_middle, out_after = _concat_pieces(ctx.input(count - 1), axis, min_rank)
    for i in range(count - 2, -1, -1):
        before, middle, after = _concat_pieces(ctx.input(i), axis, min_rank)
        out_before = ic.merge(before, out_before)
        out_middle = ic.add_dims(out_middle, middle)
        out_after = ic.merge(after, out_after)
    return [ic.concatenate(ic.concatenate(out_before, [out_middle]), out_after)]


@register
class ConcatV2(OpType):
    inputs = ["values: N * T", "axis: Tidx"]
    outputs = ["output: T"]
    attrs = {"N": Attr("int"), "T": Attr("type"), "Tidx": Attr("type", dtypes.int32, allowed=INDEX_TYPES)}

    def infer(op):
        return ic.run_shape_fn(op, _concat_shape)

    lower = _lower_concat

    def host(op, *values_and_axis):
        """ConcatV2 of strings (a ready op's variable names) runs on the host."""
        from ..errors import InvalidArgumentError

        values, axis = [np.asarray(v) for v in values_and_axis[:-1]], int(np.asarray(values_and_axis[-1]))
        rank = values[0].ndim
        if not -rank <= axis < max(rank, 1):
            raise InvalidArgumentError(None, op, f"ConcatOp : Expected concatenating dimensions in the range "
                                                 f"[{-rank}, {rank}), but got {axis}")
        axis %= max(rank, 1)

        def others(shape):
            return shape[:axis] + shape[axis + 1:]

        for i, v in enumerate(values[1:], 1):
            if v.ndim != rank or others(v.shape) != others(values[0].shape):
                shape0, shape_i = (",".join(map(str, s)) for s in (values[0].shape, v.shape))
                raise InvalidArgumentError(None, op, f"ConcatOp : Dimensions of inputs should match: shape[0] = "
                                                     f"[{shape0}] vs. shape[{i}] = [{shape_i}]")
        return [np.concatenate(values, axis=axis)]

    def gradient(op, grad):
        return _concat_grad_helper(op, grad, start_value_index=0, end_value_index=-1, dim_index=-1)


@register
class ConcatOffset(OpType):
    inputs = ["concat_dim: int32", "shape: N * int32"]
    outputs = ["offset: N * int32"]
    attrs = {"N": Attr("int")}
    not_differentiable = True

    def infer(op):
        return [t.shape for t in op._inputs[1:]]

    lower = _lower_concat_offset


def _replace_dim(shape, index, value):
    if shape is None:
        return None
    out = list(shape)
    out[index] = value
    return out


def _split_shape(ctx):
    value = ctx.input(1)
    value_rank = None if value is None else len(value)
    split_dim = ctx.scalar_input_axis(0, value_rank)
    count = ctx.attr("num_split")
    if split_dim is None:
        out = ic.unknown_of_rank(value_rank)
    else:
        value = ic.with_rank_at_least(value, split_dim + 1)
        try:
            piece = ic.divide_dim(ic.dim(value, split_dim), count)
        except ShapeError as error:
            raise ic.append_to_message(
                error, "Number of ways to split should evenly divide the split dimension") from None
        out = _replace_dim(value, split_dim, piece)
    return [out] * count


@register
class Split(OpType):
    inputs = ["split_dim: int32", "value: T"]
    outputs = ["output: num_split * T"]
    attrs = {"num_split": Attr("int"), "T": Attr("type")}

    def infer(op):
        return ic.run_shape_fn(op, _split_shape)

    lower = _lower_split

    def gradient(op, *grads):
        """_SplitGrad: concatenate the gradients along split_dim."""
        return [None, concat(list(grads), op.inputs[0])]


def _split_v_shape(ctx):
    value = ctx.input(0)
    value_rank = None if value is None else len(value)
    split_dim = ctx.scalar_input_axis(2, value_rank)
    count = ctx.attr("num_split")
    sizes = ctx.input_tensor(1)
    if value is None:
        return [None] * count
    if value_rank == 0:
        raise ShapeError("Can't split scalars")
    if sizes is None:
        if split_dim is None:
            return [[None] * value_rank] * count
        return [_replace_dim(value, split_dim, None)] * count
    if split_dim is None:  # TF would read an unknown axis here; keep the rank only
        return [[None] * value_rank] * count
    ic.with_rank_at_least(value, split_dim + 1)
    data = [int(v) for v in np.asarray(sizes).ravel()]
    if count != len(data):
        raise ShapeError("Length of size_splits should be equal to num_outputs")
    if data.count(-1) > 1:
        raise ShapeError("size_splits can only have one -1")
    total = sum(v for v in data if v != -1)
    dim_size = value[split_dim]
    outputs = []
    for size in data:
        if size == -1:
            size = None if dim_size is None else dim_size - total
        outputs.append(_replace_dim(value, split_dim, size))
    if dim_size is not None:
        has_neg_one = -1 in data
        if (total > dim_size) if has_neg_one else (total != dim_size):
            raise ShapeError(f"can't split axis of size {dim_size} into pieces of size "
                             f"[{','.join(str(v) for v in data)}]")
    return outputs


@register
class SplitV(OpType):
    inputs = ["value: T", "size_splits: Tlen", "split_dim: int32"]
    outputs = ["output: num_split * T"]
    attrs = {"num_split": Attr("int"), "T": Attr("type"), "Tlen": Attr("type", dtypes.int64, allowed=INDEX_TYPES)}

    def infer(op):
        return ic.run_shape_fn(op, _split_v_shape)

    lower = _lower_split_v

    def gradient(op, *grads):
        """_SplitVGrad: concatenate the gradients along split_dim."""
        return [concat(list(grads), op.inputs[2]), None, None]


def concat(values, axis, name="concat"):
    """tf.concat; a single value becomes ``concat/concat`` (an Identity) as in TF 1.15."""
    if not isinstance(values, (list, tuple)):
        values = [values]
    if len(values) == 1:
        with name_scope(name):
            axis_tensor = convert_to_tensor(axis, name="concat_dim", dtype=dtypes.int32)
            axis_tensor.shape.assert_has_rank(0)
            return apply_op("Identity", [values[0]], name=name).outputs[0]
    return apply_op("ConcatV2", [list(values), axis], name=name).outputs[0]


def split(value, num_or_size_splits, axis=0, num=None, name="split"):
    """tf.split: Split for an int count, SplitV for a list/1-D tensor of sizes.

    As in TF, ``num_or_size_splits`` is first converted to a tensor outside any scope
    (a stray ``Const`` op in the graph).
    """
    size_splits = convert_to_tensor(num_or_size_splits)
    if isinstance(num_or_size_splits, (numbers.Integral, Dimension)):
        return apply_op("Split", [axis, value], {"num_split": int(num_or_size_splits)}, name).outputs
    if size_splits.shape.ndims == 0:
        raise ValueError("Rank-0 tensors are not supported as the num_or_size_splits argument to split. Argument "
                         f"provided: {num_or_size_splits}")
    if num is None:
        dims = size_splits.shape.dims
        if dims:
            num = dims[0].value
        if num is None:
            raise ValueError(f"Cannot infer num from shape {num_or_size_splits}")
    return apply_op("SplitV", [value, size_splits, axis], {"num_split": num}, name).outputs


TF_EXPORTS = ["stack", "unstack", "concat", "split"]
