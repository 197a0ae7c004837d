"""The rest of TF 1.15's tf.sparse namespace (and the TF1 ``tf.sparse_*`` names):
softmax, slice, split, transpose, maximum/minimum, merge, to_indicator, reduce_max,
reduce_max_sparse, reduce_sum_sparse, cross/cross_hashed, expand_dims, eye, reset_shape
and the sparse segment reductions (segment_sum/mean/sqrt_n).

Entries follow TF's OpDefs and shape functions (core/ops/sparse_ops.cc, math_ops.cc), the
kernels' semantics and InvalidArgumentError messages (core/kernels/sparse_*.cc,
segment_reduction_ops_impl.h) and the gradients of python/ops/sparse_grad.py and
math_grad.py; the python functions build TF's graphs (python/ops/sparse_ops.py). As in
sparse_ops.py, an op is compiled from core IR ops where its output shapes follow from its
inputs' shapes (or values known while compiling), and runs on the host otherwise:

- compiled: SparseSoftmax (entries reordered by an O(N^2) stable rank as SparseReorder is,
  each group's max and sum over the entries sharing all but the last index),
  SparseDenseCwiseAdd, SparseSliceGrad, SparseReduceMax (an output shape from the dense
  shape's values, as SparseReduceSum), the sparse segment reductions when their segment
  ids are known while compiling and their gradients (SparseSegmentSumGrad...). Each has a
  ``host_fallback``: values known only at run time (a fed dense shape, fed segment ids, a
  rank known only at run time) run it on the host, and the step runs in stages
  (tfc/runtime/host.py);
- host ops (``host_only``), as many output entries as the data says: SparseSlice,
  SparseSplit, SparseSparseMaximum/Minimum, SparseReduceMaxSparse, SparseReduceSumSparse,
  SparseCross (hashed with farmhash's Fingerprint64 and TF's FingerprintCat64, bit-exact)
  and SparseCrossV2.

tf.sparse.transpose, merge, to_indicator, expand_dims, eye and reset_shape are built from
other ops (Transpose, GatherV2, SparseReorder, SparseToDense...), as TF builds them.
"""
from __future__ import annotations

import numbers

import numpy as np

from tfc import ir
from tfc.ir.dims import dims_product

from .. import dtypes
from ..errors import InvalidArgumentError
from ..graph import Tensor, get_default_graph, name_scope
from ..op_helper import apply_op
from ..registry import Attr, OpType, register
from ..sparse_tensor import SparseTensor, SparseTensorValue, convert_to_sparse_tensor
from . import inference_context as ic
from .sparse_ops import (_any, _assert, _cmp, _column, _first, _full, _lexsort, _linearize, _lower_sparse_dense_cwise,
                         _reduced_axes, _row_any, _select, _sparse_dense_cwise_host,
                         _sparse_dense_cwise_shape, _sparse_reduce_shape, _sparse_reduction_dims, _stable_order,
                         _static_length, _tt, sparse_reorder, sparse_tensor_to_dense)

_I64 = ir.ElemType.I64
_I32 = ir.ElemType.I32
_PRED = ir.ElemType.PRED
_FLOATS = (dtypes.float16, dtypes.float32, dtypes.float64)
_REAL = (dtypes.float32, dtypes.float64, dtypes.int32, dtypes.uint8, dtypes.int16, dtypes.int8, dtypes.int64,
         dtypes.bfloat16, dtypes.uint16, dtypes.float16, dtypes.uint32, dtypes.uint64)
_INDEX = (dtypes.int32, dtypes.int64)


# =====================================================================================
# Helpers
# =====================================================================================
def _fail(op):
    def fail(message):
        raise InvalidArgumentError(None, op, message)

    return fail


def _debug_shape(shape) -> str:
    """TF's TensorShape::DebugString: "[3,4]"."""
    return "[" + ",".join(str(int(d)) for d in shape) + "]"


def _summarize(values, limit: int) -> str:
    """TF's Tensor::SummarizeValue: the first ``limit`` elements, space-separated, "..."."""
    flat = [str(int(v)) for v in np.asarray(values).reshape(-1)]
    text = " ".join(flat[:limit])
    return text + "..." if len(flat) > limit else text


def _validate_sparse_tensor(fail, indices, values, shape) -> None:
    """sparse_utils::ValidateSparseTensorShape (kNone index validation)."""
    if indices.ndim != 2:
        fail(f"Sparse indices must be rank 2 but is rank {indices.ndim}")
    if values.ndim != 1:
        fail(f"Sparse values must be rank 1 but is rank {values.ndim}")
    if shape.ndim != 1:
        fail(f"Sparse shape must be rank 1 but is rank {shape.ndim}")
    if values.shape[0] != indices.shape[0]:
        fail(f"Number of elements in indices ({indices.shape[0]}) and values ({values.shape[0]}) do not match")
    if shape.size != indices.shape[1]:
        fail(f"Index rank ({indices.shape[1]}) and shape rank ({shape.size}) do not match")


def _same_columns(ctx, rows_a, rows_b, columns):
    """pred [N, M]: rows_a[i, k] == rows_b[j, k] for every k in ``columns``."""
    n = ctx.canon(rows_a.type.shape[0])
    m = ctx.canon(rows_b.type.shape[0])
    square = (n, m)
    same = _full(ctx, True, _PRED, square)
    for k in columns:
        mine = ctx.broadcast_in_dim(_column(ctx, rows_a, k), square, [0])
        theirs = ctx.broadcast_in_dim(_column(ctx, rows_b, k), square, [1])
        same = ctx.b.value("and", [same, ctx.b.value("compare", [mine, theirs], {"dir": "eq"})])
    return same


def _earlier(ctx, count):
    """pred [N, N]: j < i at [i, j]."""
    square = (count, count)
    return ctx.b.value("compare", [ctx.b.value("iota", [], {"dim": 1}, result_type=_tt(_I64, square)),
                                   ctx.b.value("iota", [], {"dim": 0}, result_type=_tt(_I64, square))],
                       {"dir": "lt"})


def _lowest(elem):
    from tfc.ir.evaluator import lowest

    return lowest(np.dtype(elem.np_dtype))


def _matrix_rows(ctx, indices, values, what):
    """(rows i64 [N, R], values [N], N, R) of a sparse operand with a known rank R."""
    if indices.type.rank != 2 or values.type.rank != 1 or not isinstance(ctx.canon(indices.type.shape[1]), int):
        ctx.fail(f"{what} needs [N, R] indices with a known R (else on the host)")
    depth = ctx.canon(indices.type.shape[1])
    count = ctx.unify(ctx.canon(indices.type.shape[0]), ctx.canon(values.type.shape[0]),
                      (tuple(indices.type.shape), tuple(values.type.shape)))
    return ctx.convert(ctx.reshape(indices, (count, depth)), _I64), values, count, depth


# =====================================================================================
# SparseDenseCwiseAdd (the gradient of SparseSoftmax adds with it)
# =====================================================================================
@register
class SparseDenseCwiseAdd(OpType):
    inputs = ["sp_indices: int64", "sp_values: T", "sp_shape: int64", "dense: T"]
    outputs = ["output: T"]
    attrs = {"T": Attr("type")}
    host_fallback = True  # a rank known only at run time: on the host

    def infer(op):
        return ic.run_shape_fn(op, _sparse_dense_cwise_shape)

    lower = _lower_sparse_dense_cwise("add")
    host = staticmethod(_sparse_dense_cwise_host(np.add))

    def gradient(op, grad):
        """_SparseDenseCwiseAddGrad: TF has none."""
        raise NotImplementedError("Gradient for SparseDenseCwiseAdd is not implemented.")


def sparse_dense_cwise_add(sp_t, dense_t):
    """TF's sparse_ops.sparse_dense_cwise_add: the SparseTensor's values plus the dense
    elements they index (the dense side broadcast to the sparse one)."""
    result = apply_op("SparseDenseCwiseAdd", [sp_t.indices, sp_t.values, sp_t.dense_shape, dense_t]).outputs[0]
    return SparseTensor(sp_t.indices, result, sp_t.dense_shape)


# =====================================================================================
# SparseSoftmax
# =====================================================================================
def _sparse_softmax_shape(ctx):
    ic.with_rank(ctx.input(0), 2)
    values = ic.with_rank(ctx.input(1), 1)
    ic.with_rank(ctx.input(2), 1)
    return [values]


def _lower_sparse_softmax(ctx, op, indices, values, shape):
    rank = _static_length(ctx, shape, "SparseSoftmax's sp_shape")
    rows, values, count, depth = _matrix_rows(ctx, indices, values, "SparseSoftmax")
    if rank < 2 or depth != rank:
        ctx.fail("SparseSoftmax's input has rank < 2 (the host raises TF's message)")
    perm = _stable_order(ctx, rows)  # the kernel reorders its copy and writes the outputs in that order
    rows = ctx.b.value("gather", [rows, perm], {"axis": 0})
    values = ctx.b.value("gather", [values, perm], {"axis": 0})
    square = (count, count)
    same = _same_columns(ctx, rows, rows, range(depth - 1))  # a group: all but the class index
    elem = values.type.elem
    theirs = ctx.broadcast_in_dim(values, square, [1])
    peak = ctx.reduce(ctx.b.value("select", [same, theirs, _full(ctx, _lowest(elem), elem, square)]), "max", [1])
    shifted = ctx.b.value("exp", [ctx.b.value("sub", [values, peak])])
    total = ctx.reduce(ctx.b.value("select", [same, ctx.broadcast_in_dim(shifted, square, [1]),
                                              _full(ctx, 0, elem, square)]), "sum", [1])
    inverse = ctx.b.value("div", [_full(ctx, 1, elem, (count,)), total])
    return ctx.b.value("mul", [shifted, inverse])


def _sparse_softmax_host(op, indices, values, shape):
    indices, values, shape = np.asarray(indices), np.asarray(values), np.asarray(shape)
    fail = _fail(op)
    if indices.ndim != 2:
        fail(f"Input sp_indices should be a matrix but received shape: {_debug_shape(indices.shape)}")
    if values.ndim != 1 or shape.ndim != 1:
        fail(f"Inputs sp_values and sp_shape should be vectors but received shapes: {_debug_shape(values.shape)} "
             f"and {_debug_shape(shape.shape)}")
    if shape.size < 2:
        fail(f"Input should have rank >= 2, but received shape: {_summarize(shape, 3)}")
    _validate_sparse_tensor(fail, indices, values, shape)
    rows = indices.astype(np.int64)
    order = _lexsort(rows)
    rows, sorted_values = rows[order], values[order]
    out = np.empty_like(sorted_values)
    start = 0
    while start < len(rows):
        stop = start + 1
        while stop < len(rows) and tuple(rows[stop, :-1]) == tuple(rows[start, :-1]):
            stop += 1
        group = sorted_values[start:stop]
        shifted = np.exp(group - group.max())
        out[start:stop] = shifted * (np.asarray(1, group.dtype) / shifted.sum(dtype=group.dtype))
        start = stop
    return [out]


@register
class SparseSoftmax(OpType):
    inputs = ["sp_indices: int64", "sp_values: T", "sp_shape: int64"]
    outputs = ["output: T"]
    attrs = {"T": Attr("type", allowed=_FLOATS)}
    host_fallback = True  # a rank known only at run time (or < 2: TF's message): on the host

    def infer(op):
        return ic.run_shape_fn(op, _sparse_softmax_shape)

    lower = _lower_sparse_softmax
    host = staticmethod(_sparse_softmax_host)

    def gradient(op, grad):
        """_SparseSoftmaxGrad: grad_x = (grad - sum(grad * softmax) over the class dim) * softmax."""
        from .sparse_ops import sparse_reduce_sum

        indices, shape = op.inputs[0], op.inputs[2]
        out_vals = op.outputs[0]
        sp_output = SparseTensor(indices, out_vals, shape)
        sp_grad = SparseTensor(indices, grad, shape)
        sp_product = SparseTensor(indices, sp_output.values * sp_grad.values, shape)
        sum_reduced = -sparse_reduce_sum(sp_product, [-1], keepdims=True)
        sp_sum = sparse_dense_cwise_add(sp_grad, sum_reduced)
        grad_x = sp_sum.values * sp_output.values
        return [None, grad_x, None]


def sparse_softmax(sp_input, name=None):
    """tf.sparse.softmax: softmax over the last dim of each group of entries sharing all
    other indices (the implicit zeros take no part)."""
    with name_scope(name, "SparseSoftmax", [sp_input.indices, sp_input.values]):
        out_vals = apply_op("SparseSoftmax", [sp_input.indices, sp_input.values, sp_input.dense_shape]).outputs[0]
        return SparseTensor(sp_input.indices, out_vals, sp_input.dense_shape)


# =====================================================================================
# SparseSlice, SparseSliceGrad
# =====================================================================================
def _sparse_slice_shape(ctx):
    shape = ctx.input(2)
    rank = ic.num_elements(shape) if shape is not None else None
    return [[None, rank], [None], shape]


def _sparse_slice_host(op, indices, values, shape, start, size):
    indices, values = np.asarray(indices), np.asarray(values)
    shape, start, size = np.asarray(shape), np.asarray(start), np.asarray(size)
    fail = _fail(op)
    _validate_sparse_tensor(fail, indices, values, shape)
    if start.ndim != 1:
        fail(f"Input start should be a vector but received shape {_debug_shape(start.shape)}")
    if size.ndim != 1:
        fail(f"Input size should be a vector but received shape {_debug_shape(size.shape)}")
    dims = shape.size
    if start.size != dims:
        fail(f"Expected start to be a vector of length {dims} but got length {start.size}")
    if size.size != dims:
        fail(f"Expected size to be a vector of length {dims} but got length {size.size}")
    shape, start, size = shape.astype(np.int64), start.astype(np.int64), size.astype(np.int64)
    rows = indices.astype(np.int64)
    out_shape = np.array([max(0, int(size[d]) if start[d] + size[d] < shape[d] else int(shape[d] - start[d]))
                          for d in range(dims)], np.int64)
    hit = np.all((rows >= start[None, :]) & (rows < (start + size)[None, :]), axis=1) if dims else \
        np.ones(len(rows), bool)
    return [(rows[hit] - start[None, :]).reshape(-1, dims), values[hit], out_shape]


@register
class SparseSlice(OpType):
    inputs = ["indices: int64", "values: T", "shape: int64", "start: int64", "size: int64"]
    outputs = ["output_indices: int64", "output_values: T", "output_shape: int64"]
    attrs = {"T": Attr("type")}
    host_only = True  # the entries inside the window: known only at run time

    def infer(op):
        return ic.run_shape_fn(op, _sparse_slice_shape)

    host = staticmethod(_sparse_slice_host)

    def gradient(op, *grads):
        """_SparseSliceGrad: SparseSliceGrad matches the slice's entries back to the input's."""
        backprop_val_grad = grads[1]
        input_indices = op.inputs[0]
        input_start = op.inputs[3]
        output_indices = op.outputs[0]
        val_grad = apply_op("SparseSliceGrad", [backprop_val_grad, input_indices, input_start,
                                                output_indices]).outputs[0]
        val_grad.set_shape(op.inputs[1].get_shape())
        return [None, val_grad, None, None, None]


def _sparse_slice_grad_shape(ctx):
    indices = ic.with_rank(ctx.input(1), 2)
    return [[indices[0]]]


def _lower_sparse_slice_grad(ctx, op, grad, input_indices, input_start, output_indices):
    """Input entry i takes the gradient of output entry c_i, c_i the number of input
    entries before it that equal some output entry shifted by ``start``, when it equals
    that entry: the kernel's in-order matching for a slice's outputs (a subsequence of its
    inputs, in order)."""
    if input_indices.type.rank != 2 or output_indices.type.rank != 2 or grad.type.rank != 1:
        ctx.fail("SparseSliceGrad needs matrix indices and a vector gradient")
    depth = ctx.canon(input_indices.type.shape[1])
    if not isinstance(depth, int):
        ctx.fail("SparseSliceGrad needs indices of a known rank")
    ctx.unify(ctx.canon(output_indices.type.shape[1]), depth,
              (tuple(output_indices.type.shape), tuple(input_indices.type.shape)))
    if _static_length(ctx, input_start, "SparseSliceGrad's input_start") != depth:
        ctx.fail("SparseSliceGrad's start does not match the rank (checked on the host)")
    count = ctx.canon(input_indices.type.shape[0])
    total = ctx.unify(ctx.canon(output_indices.type.shape[0]), ctx.canon(grad.type.shape[0]),
                      (tuple(output_indices.type.shape), tuple(grad.type.shape)))
    rows = ctx.convert(ctx.reshape(input_indices, (count, depth)), _I64)
    start = ctx.convert(input_start, _I64)
    shifted = ctx.b.value("add", [ctx.convert(ctx.reshape(output_indices, (total, depth)), _I64),
                                  ctx.broadcast_in_dim(start, (total, depth), [1])])
    equal = _same_columns(ctx, rows, shifted, range(depth))  # [N, M]
    matched = ctx.convert(ctx.reduce(equal, "or", [1]), _I64)
    before = ctx.reduce(ctx.b.value("select", [_earlier(ctx, count), ctx.broadcast_in_dim(matched, (count, count), [1]),
                                               _full(ctx, 0, _I64, (count, count))]), "sum", [1])
    square = (count, total)
    column = ctx.b.value("iota", [], {"dim": 1}, result_type=_tt(_I64, square))
    mine = ctx.b.value("and", [equal, ctx.b.value("compare", [column, ctx.broadcast_in_dim(before, square, [0])],
                                                  {"dir": "eq"})])
    elem = grad.type.elem
    return ctx.reduce(ctx.b.value("select", [mine, ctx.broadcast_in_dim(grad, square, [1]),
                                             _full(ctx, 0, elem, square)]), "sum", [1])


def _sparse_slice_grad_host(op, grad, input_indices, input_start, output_indices):
    grad, input_indices = np.asarray(grad), np.asarray(input_indices)
    input_start, output_indices = np.asarray(input_start), np.asarray(output_indices)
    fail = _fail(op)
    if input_indices.ndim != 2 or output_indices.ndim != 2:
        fail(f"Input indices should be matrices but received shapes: {_debug_shape(input_indices.shape)} and "
             f"{_debug_shape(output_indices.shape)}")
    if grad.ndim != 1:
        fail(f"Input backprop_val_grad should be a vector but received shape: {_debug_shape(grad.shape)}")
    if input_indices.shape[1] != output_indices.shape[1]:
        fail(f"The input and output should have the same ndims: got: {input_indices.shape[1]} and "
             f"{output_indices.shape[1]}")
    if output_indices.shape[0] > input_indices.shape[0]:
        fail(f"# rows of output_indices should be not greater than of input_indices, got "
             f"{output_indices.shape[0]} and {input_indices.shape[0]}")
    if grad.size != output_indices.shape[0]:
        fail(f"# elements of backprop_val_grad and # rows of output_indices should match (#nnz of sum): got "
             f"{grad.size} and {output_indices.shape[0]}")
    if input_start.ndim != 1:
        fail(f"Input start should be a vector but received shape {_debug_shape(input_start.shape)}")
    out = np.zeros(input_indices.shape[0], dtype=grad.dtype)
    start = input_start.astype(np.int64)
    j = 0
    for i in range(input_indices.shape[0]):
        if j >= grad.size:
            break
        if np.array_equal(input_indices[i].astype(np.int64), output_indices[j].astype(np.int64) + start):
            out[i] = grad[j]
            j += 1
    return [out]


@register
class SparseSliceGrad(OpType):
    inputs = ["backprop_val_grad: T", "input_indices: int64", "input_start: int64", "output_indices: int64"]
    outputs = ["val_grad: T"]
    attrs = {"T": Attr("type")}
    host_fallback = True  # a rank known only at run time: on the host (TF registers no gradient)

    def infer(op):
        return ic.run_shape_fn(op, _sparse_slice_grad_shape)

    lower = _lower_sparse_slice_grad
    host = staticmethod(_sparse_slice_grad_host)


def sparse_slice(sp_input, start, size, name=None):
    """tf.sparse.slice: the entries inside the window ``[start, start + size)``, indexed
    from ``start``."""
    from ..convert import convert_to_tensor

    sp_input = convert_to_sparse_tensor(sp_input)
    start = convert_to_tensor(start, dtypes.int64)
    size = convert_to_tensor(size, dtypes.int64)
    with name_scope(name, "SparseSlice", [sp_input]) as name:
        output_indices, output_values, output_shape = apply_op(
            "SparseSlice", [sp_input.indices, sp_input.values, sp_input.dense_shape, start, size], name=name).outputs
        return SparseTensor(output_indices, output_values, output_shape)


# =====================================================================================
# SparseSplit
# =====================================================================================
def _sparse_split_shape(ctx):
    n = ctx.attr("num_split")
    shape = ctx.input(3)
    rank = ic.num_elements(shape) if shape is not None else None
    return [[None, rank]] * n + [[None]] * n + [shape] * n


def _sparse_split_host(op, split_dim, indices, values, shape):
    indices, values, shape = np.asarray(indices), np.asarray(values), np.asarray(shape)
    num_split = op._attrs["num_split"]
    fail = _fail(op)
    if indices.ndim != 2:
        fail(f"Input indices should be a matrix but received shape {_debug_shape(indices.shape)}")
    if values.ndim != 1:
        fail(f"Input values should be a vector but received shape {_debug_shape(indices.shape)}")
    if shape.ndim != 1:
        fail(f"Input shape should be a vector but received shape {_debug_shape(shape.shape)}")
    axis_input = int(np.asarray(split_dim))
    rank = shape.size
    axis = rank + axis_input if axis_input < 0 else axis_input
    if not 0 <= axis < rank:
        fail(f"Input axis should be in range [{-rank}, {rank}), got {axis_input}")
    shape = shape.astype(np.int64)
    if not 1 <= num_split <= shape[axis]:
        fail(f"Input num_split should be between 1 and the splitting dimension size ({shape[axis]}), got {num_split}")
    _validate_sparse_tensor(fail, indices, values, shape)
    rows = indices.astype(np.int64)
    size, residual = int(shape[axis]) // num_split, int(shape[axis]) % num_split
    column = rows[:, axis]
    offset = residual * (size + 1)
    slice_index = np.where(column < offset, column // (size + 1), residual + (column - offset) // max(size, 1))
    within = np.where(column < offset, column % (size + 1), (column - offset) % max(size, 1))
    out_indices, out_values, out_shapes = [], [], []
    for k in range(num_split):
        hit = slice_index == k
        part = rows[hit].copy()
        part[:, axis] = within[hit]
        out_indices.append(part.reshape(-1, rank))
        out_values.append(values[hit])
        part_shape = shape.copy()
        part_shape[axis] = size + 1 if k < residual else size
        out_shapes.append(part_shape)
    return out_indices + out_values + out_shapes


@register
class SparseSplit(OpType):
    inputs = ["split_dim: int64", "indices: int64", "values: T", "shape: int64"]
    outputs = ["output_indices: num_split * int64", "output_values: num_split * T",
               "output_shape: num_split * int64"]
    attrs = {"num_split": Attr("int"), "T": Attr("type")}
    host_only = True  # each part's entries: known only at run time

    def infer(op):
        return ic.run_shape_fn(op, _sparse_split_shape)

    host = staticmethod(_sparse_split_host)


class KeywordRequired:
    """TF's stand-in that makes tf.sparse.split take keyword arguments only."""

    def __repr__(self):
        return "KeywordRequired()"


def sparse_split(keyword_required=KeywordRequired(), sp_input=None, num_split=None, axis=None, name=None,
                 split_dim=None):
    """tf.sparse.split (TF1): ``num_split`` SparseTensors along ``axis``; the first
    ``shape[axis] % num_split`` parts get one more slot."""
    if not isinstance(keyword_required, KeywordRequired):
        raise ValueError("Keyword arguments are required for this function.")
    if sp_input is None:
        raise ValueError("sp_input is required")
    if num_split is None:
        raise ValueError("num_split is required")
    if axis is None:
        raise ValueError("axis is required")
    if split_dim is not None:
        raise ValueError("Cannot specify both 'axis' and 'split_dim'")
    sp_input = convert_to_sparse_tensor(sp_input)
    outputs = apply_op("SparseSplit", [axis, sp_input.indices, sp_input.values, sp_input.dense_shape],
                       {"num_split": num_split}, name=name).outputs
    return [SparseTensor(outputs[i], outputs[num_split + i], outputs[2 * num_split + i]) for i in range(num_split)]


# =====================================================================================
# SparseSparseMaximum / SparseSparseMinimum
# =====================================================================================
def _sparse_min_or_max_shape(ctx):
    for i, rank in enumerate((2, 1, 1, 2, 1, 1)):
        ic.with_rank(ctx.input(i), rank)
    return [[None, None], [None]]


def _sparse_binary_host(function):
    def host(op, a_indices, a_values, a_shape, b_indices, b_values, b_shape):
        a_indices, a_values, a_shape = np.asarray(a_indices), np.asarray(a_values), np.asarray(a_shape)
        b_indices, b_values, b_shape = np.asarray(b_indices), np.asarray(b_values), np.asarray(b_shape)
        fail = _fail(op)
        if a_indices.ndim != 2 or b_indices.ndim != 2:
            fail(f"Inputs a_indices and b_indices should be matrices but received shapes: "
                 f"{_debug_shape(a_indices.shape)}, {_debug_shape(b_indices.shape)}")
        if a_values.ndim != 1 or b_values.ndim != 1:
            fail(f"Inputs a_values and b_values should be vectors but received shapes: "
                 f"{_debug_shape(a_values.shape)} and {_debug_shape(b_values.shape)}")
        if a_values.size != a_indices.shape[0] or b_values.size != b_indices.shape[0]:
            fail(f"Expected {a_indices.shape[0]} and {b_indices.shape[0]} non-empty input values, got "
                 f"{a_values.size} and {b_values.size}")
        if a_shape.ndim != 1 or b_shape.ndim != 1:
            fail(f"Input shapes should be a vector but received shapes {_debug_shape(a_shape.shape)} and "
                 f"{_debug_shape(b_shape.shape)}")
        for rows, vals, shape in ((a_indices, a_values, a_shape), (b_indices, b_values, b_shape)):
            _validate_sparse_tensor(fail, rows, vals, shape)  # and the indices in bounds (kUnordered)
            for i in range(rows.shape[0]):
                if np.any((rows[i] < 0) | (rows[i] >= shape)):
                    fail(f"Sparse index tuple indices[{i}, :] = [{', '.join(str(int(v)) for v in rows[i])}] is out "
                         f"of bounds")
        num_dims = a_indices.shape[1]
        if num_dims == 0:
            fail("Tensors must not be empty")
        if a_shape.size != b_shape.size:
            fail(f"Operands do not have the same ranks; got shapes: {_summarize(a_shape, 10)} and "
                 f"{_summarize(b_shape, 10)}")
        for i in range(a_shape.size):
            if a_shape[i] != b_shape[i]:
                fail(f"Operands' shapes do not match: got {a_shape[i]} and {b_shape[i]} for dimension {i}")
        a_rows, b_rows = a_indices.astype(np.int64).tolist(), b_indices.astype(np.int64).tolist()
        zero = np.zeros((), a_values.dtype)
        rows, a_aug, b_aug = [], [], []
        i = j = 0
        while i < len(a_rows) and j < len(b_rows):  # UnionSparseIndicesAndValues
            if a_rows[i] < b_rows[j]:
                rows.append(a_rows[i]), a_aug.append(a_values[i]), b_aug.append(zero)
                i += 1
            elif a_rows[i] == b_rows[j]:
                rows.append(a_rows[i]), a_aug.append(a_values[i]), b_aug.append(b_values[j])
                i += 1
                j += 1
            else:
                rows.append(b_rows[j]), a_aug.append(zero), b_aug.append(b_values[j])
                j += 1
        for k in range(i, len(a_rows)):
            rows.append(a_rows[k]), a_aug.append(a_values[k]), b_aug.append(zero)
        for k in range(j, len(b_rows)):
            rows.append(b_rows[k]), a_aug.append(zero), b_aug.append(b_values[k])
        out = function(np.array(a_aug, a_values.dtype), np.array(b_aug, a_values.dtype)).astype(a_values.dtype)
        return [np.array(rows, np.int64).reshape(-1, num_dims), out.reshape(-1)]

    return host


def _SparseSparseMaximumGrad(unused_op, unused_grad):  # noqa: N802 - TF's name (its error names it)
    """TF's gradient of SparseSparseMaximum: registered with one gradient argument for an op
    of two outputs, so calling it raises Python's TypeError, as in TF."""
    raise NotImplementedError("Gradient for SparseSparseMaximum is not implemented.")


def _SparseSparseMinimumGrad(unused_op, unused_grad):  # noqa: N802 - TF's name
    """As _SparseSparseMaximumGrad."""
    raise NotImplementedError("Gradient for SparseSparseMinimum is not implemented.")


@register
class SparseSparseMaximum(OpType):
    inputs = ["a_indices: int64", "a_values: T", "a_shape: int64", "b_indices: int64", "b_values: T",
              "b_shape: int64"]
    outputs = ["output_indices: int64", "output_values: T"]
    attrs = {"T": Attr("type", allowed=_REAL)}
    host_only = True  # the union of the operands' entries: known only at run time

    def infer(op):
        return ic.run_shape_fn(op, _sparse_min_or_max_shape)

    host = staticmethod(_sparse_binary_host(np.maximum))
    gradient = staticmethod(_SparseSparseMaximumGrad)


@register
class SparseSparseMinimum(OpType):
    inputs = ["a_indices: int64", "a_values: T", "a_shape: int64", "b_indices: int64", "b_values: T",
              "b_shape: int64"]
    outputs = ["output_indices: int64", "output_values: T"]
    attrs = {"T": Attr("type")}
    host_only = True  # the union of the operands' entries: known only at run time

    def infer(op):
        return ic.run_shape_fn(op, _sparse_min_or_max_shape)

    host = staticmethod(_sparse_binary_host(np.minimum))
    gradient = staticmethod(_SparseSparseMinimumGrad)


def _sparse_min_or_max(op_type, sp_a, sp_b, name):
    with name_scope(name, op_type, [sp_a.indices, sp_a.values, sp_b.indices, sp_b.values]) as name:
        out_indices, out_values = apply_op(op_type, [sp_a.indices, sp_a.values, sp_a.dense_shape, sp_b.indices,
                                                     sp_b.values, sp_b.dense_shape], name=name).outputs
    return SparseTensor(out_indices, out_values, sp_a.dense_shape)


def sparse_maximum(sp_a, sp_b, name=None):
    """tf.sparse.maximum: the element-wise max of two SparseTensors of one shape (an entry
    missing from one operand counts as 0)."""
    return _sparse_min_or_max("SparseSparseMaximum", sp_a, sp_b, name)


def sparse_minimum(sp_a, sp_b, name=None):
    """tf.sparse.minimum: the element-wise min of two SparseTensors of one shape."""
    return _sparse_min_or_max("SparseSparseMinimum", sp_a, sp_b, name)


# =====================================================================================
# SparseReduceMax (dense), SparseReduceMaxSparse, SparseReduceSumSparse
# =====================================================================================
def _kept_rows(ctx, rows, count, kept):
    if not kept:
        return _full(ctx, 0, _I64, (count, 0))
    columns = [ctx.reshape(_column(ctx, rows, d), (count, 1)) for d in kept]
    return columns[0] if len(columns) == 1 else ctx.b.value("concatenate", columns, {"dim": 1})


def _lower_sparse_reduce_max(ctx, op, indices, values, shape, axes):
    dims = [ctx.canon(d) for d in ic.static_dims(ctx, shape, "SparseReduceMax's input_shape")]
    axis_list = ic.static_ints(ctx, axes, "SparseReduceMax's reduction_axes")
    reduced = _reduced_axes(len(dims), axis_list, ctx.fail)
    rows, values, count, depth = _matrix_rows(ctx, indices, values, "SparseReduceMax")
    if depth != len(dims):
        ctx.fail("SparseReduceMax's indices do not match its shape (checked on the host)")
    kept = [d for d in range(len(dims)) if d not in reduced]
    kept_dims = [dims[d] for d in kept]
    linear, bad = _linearize(ctx, _kept_rows(ctx, rows, count, kept), kept_dims)
    valid = ctx.b.value("not", [_row_any(ctx, bad)])  # out-of-bounds entries add nothing (as SparseReduceSum)
    square = (count, count)
    elem = values.type.elem
    same = ctx.b.value("and", [_cmp(ctx, ctx.broadcast_in_dim(linear, square, [0]),
                                    ctx.broadcast_in_dim(linear, square, [1]), "eq"),
                               ctx.broadcast_in_dim(valid, square, [1])])
    peak = ctx.reduce(ctx.b.value("select", [same, ctx.broadcast_in_dim(values, square, [1]),
                                             _full(ctx, _lowest(elem), elem, square)]), "max", [1])
    repeated = ctx.reduce(ctx.b.value("and", [same, _earlier(ctx, count)]), "or", [1])
    writes = ctx.b.value("and", [valid, ctx.b.value("not", [repeated])])  # each group's first entry writes its max
    contribution = _select(ctx, writes, peak, ctx.scalar(0, elem))
    safe = _select(ctx, valid, linear, ctx.scalar(0, _I64))
    total = dims_product(kept_dims)
    out = ctx.b.value("scatter_add", [_full(ctx, 0, elem, (total,)), safe, contribution], {"axis": 0})
    if op._attrs["keep_dims"]:
        return ctx.reshape(out, tuple(1 if d in reduced else dims[d] for d in range(len(dims))))
    return ctx.reshape(out, tuple(kept_dims))


def _reduce_groups(op, indices, values, shape, axes):
    """(kept axes, reduced axes, group keys in order, each group's values, the shape) of
    the kernels' Reorder + group over the kept axes."""
    indices, values = np.asarray(indices), np.asarray(values)
    shape = np.asarray(shape)
    fail = _fail(op)
    axes = np.asarray(axes)
    if shape.ndim != 1:
        fail(f"Expected input_shape to be a vector; got shape: {_debug_shape(shape.shape)}")
    if axes.ndim > 1:
        fail(f"Expected reduction_axes to be a scalar or a vector; got shape: {_debug_shape(axes.shape)}")
    ndims = shape.size
    for a in axes.reshape(-1).tolist():
        if a < -ndims or a >= ndims:
            fail(f"Invalid reduction dimension {a}, for input with {ndims} dimensions.")
    _validate_sparse_tensor(fail, indices, values, shape)
    reduced = sorted({(int(a) + ndims) % ndims for a in axes.reshape(-1).tolist()})
    kept = [d for d in range(ndims) if d not in reduced]
    rows = indices.astype(np.int64)
    order = _lexsort(rows[:, kept + reduced]) if len(rows) else np.arange(0)
    groups, members = [], []
    for i in order:
        key = tuple(int(v) for v in rows[i, kept])
        if groups and groups[-1] == key:
            members[-1].append(values[i])
        else:
            groups.append(key)
            members.append([values[i]])
    return kept, reduced, groups, members, shape.astype(np.int64)


def _reduced_dims(kept, reduced, shape, keep_dims):
    if keep_dims:
        return [1 if d in reduced else int(shape[d]) for d in range(shape.size)]
    return [int(shape[d]) for d in kept]


def _sparse_reduce_max_host(op, indices, values, shape, axes):
    kept, reduced, groups, members, shape = _reduce_groups(op, indices, values, shape, axes)
    dtype = np.asarray(values).dtype
    kept_dims = [int(shape[d]) for d in kept]
    out = np.zeros(kept_dims, dtype=dtype)
    for key, group in zip(groups, members):
        if all(0 <= k < n for k, n in zip(key, kept_dims)):
            out[key] = np.max(np.array(group, dtype))
    return [out.reshape(_reduced_dims(kept, reduced, shape, op._attrs["keep_dims"]))]


def _reduce_sparse_host(function):
    def host(op, indices, values, shape, axes):
        kept, reduced, groups, members, shape = _reduce_groups(op, indices, values, shape, axes)
        dtype = np.asarray(values).dtype
        keep_dims = op._attrs["keep_dims"]
        out_dims = _reduced_dims(kept, reduced, shape, keep_dims)
        out_indices = np.zeros((len(groups), len(out_dims)), np.int64)
        for i, key in enumerate(groups):
            for j, k in enumerate(key):
                out_indices[i, kept[j] if keep_dims else j] = k
        out_values = np.array([function(np.array(g, dtype)) for g in members], dtype).reshape(-1)
        return [out_indices, out_values, np.array(out_dims, np.int64)]

    return host


@register
class SparseReduceMax(OpType):
    inputs = ["input_indices: int64", "input_values: T", "input_shape: int64", "reduction_axes: int32"]
    outputs = ["output: T"]
    attrs = {"keep_dims": Attr("bool", False), "T": Attr("type", allowed=_REAL)}
    host_fallback = True  # an input_shape known only at run time: on the host

    def infer(op):
        return ic.run_shape_fn(op, _sparse_reduce_shape)

    lower = _lower_sparse_reduce_max
    host = staticmethod(_sparse_reduce_max_host)


def _unknown_three(op):
    from ..tensor_shape import unknown_shape

    return [unknown_shape()] * 3


@register
class SparseReduceMaxSparse(OpType):
    inputs = ["input_indices: int64", "input_values: T", "input_shape: int64", "reduction_axes: int32"]
    outputs = ["output_indices: int64", "output_values: T", "output_shape: int64"]
    attrs = {"keep_dims": Attr("bool", False), "T": Attr("type", allowed=_REAL)}
    host_only = True  # one entry per nonempty group: known only at run time

    infer = staticmethod(_unknown_three)
    host = staticmethod(_reduce_sparse_host(np.max))


@register
class SparseReduceSumSparse(OpType):
    inputs = ["input_indices: int64", "input_values: T", "input_shape: int64", "reduction_axes: int32"]
    outputs = ["output_indices: int64", "output_values: T", "output_shape: int64"]
    attrs = {"keep_dims": Attr("bool", False), "T": Attr("type")}
    host_only = True  # one entry per nonempty group: known only at run time

    infer = staticmethod(_unknown_three)
    host = staticmethod(_reduce_sparse_host(lambda group: np.sum(group, dtype=group.dtype)))


def _reduction_args(axis, keepdims, reduction_axes, keep_dims):
    if keepdims is not None and keep_dims is not None:
        raise ValueError("Cannot specify both 'keepdims' and 'keep_dims'")
    if axis is not None and reduction_axes is not None:
        raise ValueError("Cannot specify both 'axis' and 'reduction_axes'")
    keepdims = keep_dims if keepdims is None else keepdims
    axis = reduction_axes if axis is None else axis
    return axis, bool(keepdims) if keepdims is not None else False


def sparse_reduce_max(sp_input, axis=None, keepdims=None, reduction_axes=None, keep_dims=None):
    """tf.sparse.reduce_max (TF1): a dense max over ``axis`` (all axes by default); cells
    with no entry are 0."""
    axis, keepdims = _reduction_args(axis, keepdims, reduction_axes, keep_dims)
    return apply_op("SparseReduceMax", [sp_input.indices, sp_input.values, sp_input.dense_shape,
                                        _sparse_reduction_dims(sp_input, axis)], {"keep_dims": keepdims}).outputs[0]


def _reduce_sparse(op_type, sp_input, axis, keepdims, reduction_axes, keep_dims):
    axis, keepdims = _reduction_args(axis, keepdims, reduction_axes, keep_dims)
    output_ind, output_val, output_shape = apply_op(
        op_type, [sp_input.indices, sp_input.values, sp_input.dense_shape, _sparse_reduction_dims(sp_input, axis)],
        {"keep_dims": keepdims}).outputs
    return SparseTensor(output_ind, output_val, output_shape)


def sparse_reduce_max_sparse(sp_input, axis=None, keepdims=None, reduction_axes=None, keep_dims=None):
    """tf.sparse.reduce_max_sparse: the max over ``axis`` as a SparseTensor (an entry per
    index that has entries)."""
    return _reduce_sparse("SparseReduceMaxSparse", sp_input, axis, keepdims, reduction_axes, keep_dims)


def sparse_reduce_sum_sparse(sp_input, axis=None, keepdims=None, reduction_axes=None, keep_dims=None):
    """tf.sparse.reduce_sum_sparse: the sum over ``axis`` as a SparseTensor."""
    return _reduce_sparse("SparseReduceSumSparse", sp_input, axis, keepdims, reduction_axes, keep_dims)


# =====================================================================================
# SparseCross, SparseCrossV2
# =====================================================================================
_M64 = (1 << 64) - 1
_MUL = 0xC6A4A7935BD1E995
_DEFAULT_HASH_KEY = 0xDECAFCAFFE


def _shift_mix(value: int) -> int:
    return value ^ (value >> 47)


def fingerprint_cat64(fp1: int, fp2: int) -> int:
    """TF's FingerprintCat64 (core/platform/fingerprint.h), on unsigned 64-bit ints."""
    result = fp1 ^ _MUL
    result ^= (_shift_mix((fp2 * _MUL) & _M64) * _MUL) & _M64
    result = (result * _MUL) & _M64
    result = (_shift_mix(result) * _MUL) & _M64
    return _shift_mix(result)


def _cross_shape(ctx):
    return [[None, 2], [None], [2]]


def _split_cross_inputs(op, inputs, with_sep):
    n = op._attrs["N"]
    dense_count = len(op._attrs["dense_types"])
    indices = [np.asarray(t) for t in inputs[:n]]
    values = [np.asarray(t) for t in inputs[n:2 * n]]
    shapes = [np.asarray(t) for t in inputs[2 * n:3 * n]]
    dense = [np.asarray(t) for t in inputs[3 * n:3 * n + dense_count]]
    sep = inputs[3 * n + dense_count] if with_sep else None
    return indices, values, shapes, dense, sep


def _validate_cross(fail, indices, values, shapes, dense) -> int:
    """The kernel's ValidateInput; the batch size."""
    for i, t in enumerate(indices):
        if t.ndim != 2:
            fail(f"Input indices should be a matrix but received shape {_debug_shape(t.shape)} at position {i}")
        if t.shape[1] != 2:
            fail(f"Expected D2 of index to be 2 got {t.shape[1]} at position {i}")
    for i, t in enumerate(values):
        if t.ndim != 1:
            fail(f"Input values should be a vector but received shape {_debug_shape(t.shape)} at position {i}")
        if indices[i].shape[0] != t.shape[0]:
            fail(f"Expected size of values to be {indices[i].shape[0]} got {t.shape[0]} at position {i}")
    for i, t in enumerate(shapes):
        if t.ndim != 1:
            fail(f"Input shapes should be a vector but received shape {_debug_shape(t.shape)} at position {i}")
        if t.size != 2:
            fail(f"shape should imply a 2D tensor, but got {_debug_shape(t.shape)} at position {i}")
    for i, t in enumerate(dense):
        if t.ndim != 2:
            fail(f"Dense inputs should be a matrix but received shape {_debug_shape(t.shape)} at position {i}")
    batch = int(shapes[0][0]) if shapes else (dense[0].shape[0] if dense else 0)
    for i, t in enumerate(shapes):
        if int(t[0]) != batch:
            fail(f"Expected batch size {batch} got {int(t[0])} at position {i}")
    for i, t in enumerate(dense):
        if t.shape[0] != batch:
            fail(f"Expected batch size {batch} got {t.shape[0]} at dense tensor {i}")
    return batch


def _cross_columns(indices, values, dense, batch):
    """Per column (sparse inputs first, then dense), each batch row's features: the
    consecutive entries of the row (the kernel's ExtractFeatureData), a dense row whole."""
    columns = []
    for rows, vals in zip(indices, values):
        features, position = [], 0
        rows = rows.astype(np.int64)
        for b in range(batch):
            start = position
            while position < rows.shape[0] and rows[position, 0] == b:
                position += 1
            features.append(list(vals[start:position]))
        columns.append(features)
    for t in dense:
        columns.append([list(t[b]) for b in range(batch)])
    return columns


def _cross_rows(op, columns, batch, feature, combine, out_dtype):
    out_indices, out_values, longest = [], [], 0
    for b in range(batch):
        lists = [column[b] for column in columns]
        if not lists or any(len(f) == 0 for f in lists):
            continue
        count = 0
        permutation = [0] * len(lists)
        while True:  # ProductIterator: the last column varies fastest
            out_indices.append([b, count])
            out_values.append(combine([feature(lists[i][permutation[i]]) for i in range(len(lists))]))
            count += 1
            k = len(lists) - 1
            while k >= 0:
                permutation[k] += 1
                if permutation[k] < len(lists[k]):
                    break
                permutation[k] = 0
                k -= 1
            if k < 0:
                break
        longest = max(longest, count)
    values = np.empty(len(out_values), dtype=object) if out_dtype == object else np.array(out_values, out_dtype)
    if out_dtype == object:
        values[:] = out_values
    return [np.array(out_indices, np.int64).reshape(-1, 2), values.reshape(-1), np.array([batch, longest], np.int64)]


def _string_feature(value) -> bytes:
    if isinstance(value, (bytes, np.bytes_)):
        return bytes(value)
    if isinstance(value, str):
        return value.encode()
    return str(int(value)).encode()


def _hash_feature(value) -> int:
    from .string_hash_ops import fingerprint64

    if isinstance(value, (bytes, np.bytes_, str)):
        return fingerprint64(value.encode() if isinstance(value, str) else bytes(value))
    return int(value) & _M64


def _sparse_cross_host(op, *inputs):
    indices, values, shapes, dense, _ = _split_cross_inputs(op, inputs, with_sep=False)
    batch = _validate_cross(_fail(op), indices, values, shapes, dense)
    columns = _cross_columns(indices, values, dense, batch)
    if not op._attrs["hashed_output"]:
        return _cross_rows(op, columns, batch, _string_feature, b"_X_".join, object)
    num_buckets, key = op._attrs["num_buckets"], op._attrs["hash_key"] & _M64

    def combine(hashes):
        out = key
        for h in hashes:
            out = fingerprint_cat64(out, h)
        return out % num_buckets if num_buckets > 0 else out % ((1 << 63) - 1)

    return _cross_rows(op, columns, batch, _hash_feature, combine, np.int64)


def _sparse_cross_v2_host(op, *inputs):
    indices, values, shapes, dense, sep = _split_cross_inputs(op, inputs, with_sep=True)
    batch = _validate_cross(_fail(op), indices, values, shapes, dense)
    columns = _cross_columns(indices, values, dense, batch)
    return _cross_rows(op, columns, batch, _string_feature, _string_feature(np.asarray(sep).item()).join, object)


_CROSS_TYPES = (dtypes.int64, dtypes.string)


@register
class SparseCross(OpType):
    inputs = ["indices: N * int64", "values: sparse_types", "shapes: N * int64", "dense_inputs: dense_types"]
    outputs = ["output_indices: int64", "output_values: out_type", "output_shape: int64"]
    attrs = {"N": Attr("int"), "hashed_output": Attr("bool"), "num_buckets": Attr("int"), "hash_key": Attr("int"),
             "sparse_types": Attr("list(type)"), "dense_types": Attr("list(type)"),
             "out_type": Attr("type", allowed=_CROSS_TYPES), "internal_type": Attr("type", allowed=_CROSS_TYPES)}
    host_only = True  # the crosses of each row: known only at run time

    def infer(op):
        return ic.run_shape_fn(op, _cross_shape)

    host = staticmethod(_sparse_cross_host)


@register
class SparseCrossV2(OpType):
    inputs = ["indices: N * int64", "values: sparse_types", "shapes: N * int64", "dense_inputs: dense_types",
              "sep: string"]
    outputs = ["output_indices: int64", "output_values: string", "output_shape: int64"]
    attrs = {"N": Attr("int"), "sparse_types": Attr("list(type)"), "dense_types": Attr("list(type)")}
    host_only = True  # the crosses of each row: known only at run time

    def infer(op):
        return ic.run_shape_fn(op, _cross_shape)

    host = staticmethod(_sparse_cross_v2_host)


def _create_list_op(op_type, flat_inputs, attrs, name):
    """An op whose inputs include list(type) arguments (apply_op binds one type per arg)."""
    graph = flat_inputs[0].graph if flat_inputs else get_default_graph()
    eager_apply = getattr(graph, "_eager_apply", None)
    if eager_apply is not None:
        raise NotImplementedError(f"tfc does not run {op_type} eagerly")
    with graph.as_default(), graph.name_scope(name or op_type) as scope:
        return graph.create_op(op_type, list(flat_inputs), name=scope, attrs=attrs)


def _cross_parts(inputs, message):
    from .math_ops import cast

    if not isinstance(inputs, (tuple, list)):
        raise TypeError("Inputs must be a list")
    if not all(isinstance(i, (SparseTensor, Tensor)) for i in inputs):
        raise TypeError(message)
    sparse_inputs = [i for i in inputs if isinstance(i, SparseTensor)]
    dense_inputs = [i for i in inputs if not isinstance(i, SparseTensor)]
    indices = [sp.indices for sp in sparse_inputs]
    values = [sp.values for sp in sparse_inputs]
    shapes = [sp.dense_shape for sp in sparse_inputs]
    internal_type = dtypes.string
    for i in range(len(values)):
        if values[i].dtype != dtypes.string:
            values[i] = cast(values[i], dtypes.int64)
            internal_type = dtypes.int64
    for i in range(len(dense_inputs)):
        if dense_inputs[i].dtype != dtypes.string:
            dense_inputs[i] = cast(dense_inputs[i], dtypes.int64)
            internal_type = dtypes.int64
    return indices, values, shapes, dense_inputs, internal_type


def sparse_cross(inputs, name=None, separator=None):
    """tf.sparse.cross: the cartesian product of each row's features across the inputs
    (SparseTensors, then dense Tensors), joined by ``separator`` ("_X_")."""
    from ..convert import convert_to_tensor

    if separator is None:
        separator = "_X_"
    separator = convert_to_tensor(separator, dtypes.string)
    indices, values, shapes, dense_inputs, _ = _cross_parts(inputs, "All inputs must be Tensor or SparseTensor.")
    attrs = {"N": len(indices), "sparse_types": [v.dtype.base_dtype for v in values],
             "dense_types": [d.dtype.base_dtype for d in dense_inputs]}
    op = _create_list_op("SparseCrossV2", indices + values + shapes + dense_inputs + [separator], attrs, name)
    return SparseTensor(*op.outputs)


def sparse_cross_hashed(inputs, num_buckets=0, hash_key=None, name=None):
    """tf.sparse.cross_hashed: the crosses hashed (FingerprintCat64 of the features'
    Fingerprint64s, from ``hash_key``), modulo ``num_buckets`` when positive."""
    return _sparse_cross_internal(inputs, hashed_output=True, num_buckets=num_buckets, hash_key=hash_key, name=name)


def _sparse_cross_internal(inputs, hashed_output=False, num_buckets=0, hash_key=None, name=None):
    indices, values, shapes, dense_inputs, internal_type = _cross_parts(inputs, "All inputs must be SparseTensors")
    attrs = {"N": len(indices), "hashed_output": hashed_output, "num_buckets": num_buckets,
             "hash_key": hash_key or _DEFAULT_HASH_KEY, "out_type": dtypes.int64 if hashed_output else dtypes.string,
             "internal_type": internal_type, "sparse_types": [v.dtype.base_dtype for v in values],
             "dense_types": [d.dtype.base_dtype for d in dense_inputs]}
    op = _create_list_op("SparseCross", indices + values + shapes + dense_inputs, attrs, name)
    return SparseTensor(*op.outputs)


# =====================================================================================
# Built from other ops: transpose, merge, to_indicator, expand_dims, eye, reset_shape
# =====================================================================================
def sparse_transpose(sp_input, perm=None, name=None):
    """tf.sparse.transpose: the indices' columns permuted by ``perm`` (reversed by default),
    reordered."""
    from ..convert import convert_to_tensor
    from ..tensor_util import constant_value
    from .array_ops import transpose
    from .selection_ops import gather, range as tf_range

    with name_scope(name, "SparseTranspose", [sp_input]):
        if perm is None:
            if sp_input.shape.ndims is not None:
                rank = sp_input.shape.ndims
                perm = (rank - 1) - np.arange(0, rank, 1)
            else:
                with name_scope(None, "Rank", [sp_input.dense_shape]) as scope:  # array_ops.rank of a SparseTensor
                    rank = apply_op("Size", [sp_input.dense_shape], {"out_type": dtypes.int32}, name=scope).outputs[0]
                perm = (rank - 1) - tf_range(0, rank, 1)
        indices = sp_input.indices
        transposed_indices = transpose(gather(transpose(indices), perm))
        perm_ = constant_value(convert_to_tensor(perm))
        if perm_ is not None and sp_input.get_shape().is_fully_defined():
            old_shape_ = sp_input.get_shape().as_list()
            transposed_dense_shape = list(old_shape_)
            for i, p in enumerate(perm_):
                transposed_dense_shape[i] = old_shape_[p]
        else:
            transposed_dense_shape = gather(sp_input.dense_shape, perm)
        transposed_st = SparseTensor(transposed_indices, sp_input.values, transposed_dense_shape)
        return sparse_reorder(transposed_st)


def sparse_merge(sp_ids, sp_values, vocab_size, name=None, already_sorted=False):
    """tf.sparse.merge / tf.sparse_merge: ids and values SparseTensors combined into one
    whose last index is the id (a list of ids and vocab sizes: one index each)."""
    return _sparse_merge_impl(sp_ids, sp_values, vocab_size, name, already_sorted)


def _sparse_merge_impl(sp_ids, sp_values, vocab_size, name=None, already_sorted=False):
    from .array_ops import expand_dims
    from .concat_ops import concat
    from .math_ops import cast

    if isinstance(sp_ids, (SparseTensorValue, SparseTensor)):
        sp_ids = [sp_ids]
        if not (isinstance(vocab_size, Tensor) or isinstance(vocab_size, numbers.Integral)):
            raise TypeError(f"vocab_size has to be a Tensor or Python int. Found {type(vocab_size)}")
        vocab_size = [vocab_size]
    else:
        if not hasattr(sp_ids, "__iter__"):
            raise TypeError(f"sp_ids has to be a SparseTensor or list thereof. Found {type(sp_ids)}")
        if not hasattr(vocab_size, "__iter__"):
            raise TypeError(f"vocab_size has to be a list of Tensors or Python ints. Found {type(vocab_size)}")
        for dim in vocab_size:
            if not (isinstance(dim, Tensor) or isinstance(dim, numbers.Integral)):
                raise TypeError(f"vocab_size has to be a list of Tensors or Python ints. Found {type(dim)}")
    if len(sp_ids) != len(vocab_size):
        raise ValueError("sp_ids and vocab_size have to have equal lengths.")
    with name_scope(name, "SparseMerge", [sp_ids, sp_values]):
        sp_ids = [convert_to_sparse_tensor(sp_ids_dim) for sp_ids_dim in sp_ids]
        sp_values = convert_to_sparse_tensor(sp_values)
        ids = []
        for sp_ids_dim in sp_ids:
            ids_dim = sp_ids_dim.values
            if sp_ids_dim.dtype != dtypes.int64:
                ids_dim = cast(ids_dim, dtypes.int64)
            ids += [expand_dims(ids_dim, axis=1)]
        vocab_size = [cast(x, dtypes.int64) for x in vocab_size]
        indices_columns_to_preserve = sp_ids[0].indices[:, :-1]
        new_indices = concat([indices_columns_to_preserve] + ids, 1)
        new_values = sp_values.values
        new_shape = concat([sp_ids[0].dense_shape[:-1], vocab_size], 0)
        result = SparseTensor(new_indices, new_values, new_shape)
        if already_sorted:
            return result
        sorted_result = sparse_reorder(result)
        return SparseTensor(sorted_result.indices, sorted_result.values, new_shape)


def sparse_to_indicator(sp_input, vocab_size, name=None):
    """tf.sparse.to_indicator: a dense bool tensor, ``[..., id]`` true where a row of the
    int SparseTensor holds ``id``."""
    from .array_ops import expand_dims, fill, shape

    sp_input = convert_to_sparse_tensor(sp_input)
    with name_scope(name, "SparseToIndicator", [sp_input]) as name:
        num_entries = shape(sp_input.indices)[0]
        new_values = fill(expand_dims(num_entries, 0), True)
        sp_values = SparseTensor(sp_input.indices, new_values, sp_input.dense_shape)
        sp_new = _sparse_merge_impl(sp_input, sp_values, vocab_size, name)
        return sparse_tensor_to_dense(sp_new, default_value=False, validate_indices=False, name=name)


def sparse_expand_dims(sp_input, axis=None, name=None):
    """tf.sparse.expand_dims: a dimension of size 1 inserted at ``axis`` (-1 by default)."""
    from ..convert import convert_to_tensor
    from ..tensor_shape import dimension_value
    from .array_ops import shape as tf_shape, zeros
    from .concat_ops import concat
    from .selection_ops import where_v2
    from .slicing import slice as tf_slice

    rank = dimension_value(sp_input.dense_shape.get_shape()[0])
    if rank is None:
        rank = tf_shape(sp_input.dense_shape)[0]
    axis = -1 if axis is None else axis
    with name_scope(name, "expand_dims", [sp_input]):
        if isinstance(axis, numbers.Integral) and not isinstance(axis, bool):
            axis = convert_to_tensor(axis, name="axis", dtype=dtypes.int32)
        elif not isinstance(axis, Tensor):
            raise TypeError("axis must be an integer value in range [-rank(sp_input) - 1, rank(sp_input)]")
        axis = where_v2(axis >= 0, axis, axis + rank + 1)
        column_size = tf_shape(sp_input.indices)[0]
        new_index = zeros([column_size, 1], dtype=dtypes.int64)
        indices_before = tf_slice(sp_input.indices, [0, 0], [-1, axis])
        indices_after = tf_slice(sp_input.indices, [0, axis], [-1, -1])
        indices = concat([indices_before, new_index, indices_after], axis=1)
        shape_before = tf_slice(sp_input.dense_shape, [0], [axis])
        shape_after = tf_slice(sp_input.dense_shape, [axis], [-1])
        new_shape = convert_to_tensor([1], name="new_shape", dtype=dtypes.int64)
        shape = concat([shape_before, new_shape, shape_after], axis=0)
        return SparseTensor(indices=indices, values=sp_input.values, dense_shape=shape)


def _make_int64_tensor(value, name):
    from ..convert import convert_to_tensor
    from .math_ops import cast

    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        return convert_to_tensor(value, name=name, dtype=dtypes.int64)
    if not isinstance(value, Tensor):
        raise TypeError(f"{name} must be an integer value")
    if value.dtype == dtypes.int64:
        return value
    return cast(value, dtypes.int64)


def sparse_eye(num_rows, num_columns=None, dtype=dtypes.float32, name=None):
    """tf.sparse.eye: a [num_rows, num_columns] SparseTensor with ones on the diagonal."""
    from .array_ops import ones
    from .concat_ops import stack
    from .math_ops import minimum
    from .selection_ops import range as tf_range

    with name_scope(name, "eye", [num_rows, num_columns]):
        num_rows = _make_int64_tensor(num_rows, "num_rows")
        num_columns = num_rows if num_columns is None else _make_int64_tensor(num_columns, "num_columns")
        diag_size = minimum(num_rows, num_columns)
        diag_range = tf_range(diag_size, dtype=dtypes.int64)
        return SparseTensor(indices=stack([diag_range, diag_range], axis=1), values=ones(diag_size, dtype=dtype),
                            dense_shape=[num_rows, num_columns])


def sparse_reset_shape(sp_input, new_shape=None):
    """tf.sparse.reset_shape: the same entries with dense shape ``new_shape`` (no smaller
    than the old one), or the tight bounding box of the indices."""
    from ..check_ops import assert_equal, assert_less_equal
    from ..convert import convert_to_tensor
    from ..tensor_util import constant_value
    from .array_ops import identity, ones_like, shape as tf_shape
    from .constant_op import constant
    from .control_flow_ops import with_dependencies
    from .math_ops import add, cast, maximum, reduce_max

    sp_input = convert_to_sparse_tensor(sp_input)
    in_indices = identity(sp_input.indices)
    in_values = identity(sp_input.values)
    in_shape = identity(sp_input.dense_shape)
    if new_shape is None:
        dim_low_bound = reduce_max(in_indices, axis=0)
        output_shape_tensor = maximum(constant(0, dtype=dtypes.int64), add(dim_low_bound, ones_like(in_shape)))
    else:
        output_shape_tensor = convert_to_tensor(new_shape)
        output_shape_tensor.get_shape().assert_has_rank(1)
        output_shape_tensor = cast(output_shape_tensor, dtypes.int64)
        if output_shape_tensor.get_shape().ndims is not None:
            output_shape_tensor.get_shape().dims[0].assert_is_compatible_with(in_shape.get_shape().dims[0])
        output_shape_tensor_const = constant_value(output_shape_tensor)
        if output_shape_tensor_const is not None and sp_input.get_shape().is_fully_defined():
            in_shape_const = np.array(sp_input.get_shape().as_list())
            if not np.all(in_shape_const <= output_shape_tensor_const):
                raise ValueError(f"Requested new_shape should have dimension sizes >= sp_input.shape.  Found "
                                 f"new_shape ({in_shape_const}), sp_input.shape ({output_shape_tensor_const}).")
            output_shape_tensor = output_shape_tensor_const
        else:
            output_shape_tensor = with_dependencies(
                [assert_equal(tf_shape(in_shape), tf_shape(output_shape_tensor))], output_shape_tensor)
            output_shape_tensor = with_dependencies([assert_less_equal(in_shape, output_shape_tensor)],
                                                    output_shape_tensor)
    return SparseTensor(in_indices, in_values, output_shape_tensor)


# =====================================================================================
# Sparse segment reductions: SparseSegmentSum/Mean/SqrtN (WithNumSegments), their grads
# =====================================================================================
_SEGMENT_KINDS = {"SparseSegmentSum": "sum", "SparseSegmentMean": "mean", "SparseSegmentSqrtN": "sqrtn"}


def _segment_kind(op_type):
    return _SEGMENT_KINDS[op_type.replace("WithNumSegments", "")]


def _segment_shape(ctx, with_num_segments):
    data = ic.with_rank_at_least(ctx.input(0), 1)
    indices = ic.with_rank(ctx.input(1), 1)
    segment_ids = ic.with_rank(ctx.input(2), 1)
    ic.merge_dim(indices[0] if indices else None, segment_ids[0] if segment_ids else None)
    rows = None
    if with_num_segments:
        ic.with_rank(ctx.input(3), 0)
        value = ctx.input_tensor(3)
        rows = int(np.asarray(value)) if value is not None else None
    if data is None:
        return [None]
    return [ic.concatenate([rows], ic.subshape(data, 1))]


def _segment_scale(kind, counts, dtype):
    counts = np.asarray(counts, np.float64)
    if kind == "mean":
        return np.where(counts > 0, 1.0 / np.maximum(counts, 1), 0).astype(dtype)
    if kind == "sqrtn":
        return np.where(counts > 0, 1.0 / np.sqrt(np.maximum(counts, 1)), 0).astype(dtype)
    return np.ones_like(counts).astype(dtype)


def _sparse_segment_host(op, data, indices, segment_ids, num_segments=None):
    """The kernel's loop over the (sorted) segments: ids increasing, each segment's rows
    summed and scaled (1/n for a mean, 1/sqrt(n) for sqrtn), gaps 0."""
    data, indices, ids = np.asarray(data), np.asarray(indices).astype(np.int64), np.asarray(segment_ids)
    ids = ids.astype(np.int64)
    fail = _fail(op)
    kind = _segment_kind(op.type)
    if indices.ndim != 1:
        fail("indices should be a vector.")
    if ids.ndim != 1:
        fail("segment_ids should be a vector.")
    if indices.size != ids.size:
        fail("segment_ids and indices should have same size.")
    last_plus_one = int(ids[-1]) + 1 if ids.size else 0
    if num_segments is not None:
        rows = int(np.asarray(num_segments))
        if rows < last_plus_one:
            fail("segment ids must be < num_segments")
    else:
        rows = last_plus_one
    if rows < 0:
        fail("segment ids must be >= 0")
    out = np.zeros((rows,) + data.shape[1:], dtype=data.dtype)
    if ids.size == 0:
        return [out]
    if rows <= 0:
        fail("segment ids must be >= 0")
    start = 0
    while start < ids.size:
        end = start + 1
        while end < ids.size and ids[end] == ids[start]:
            end += 1
        if end < ids.size and not ids[start] < ids[end]:
            fail("segment ids are not increasing")
        out_index = int(ids[start])
        if not 0 <= out_index < rows:
            fail(f"Segment id {out_index} out of range [0, {rows}), possibly because 'segment_ids' input is not "
                 f"sorted.")
        for k in range(start, end):
            if not 0 <= indices[k] < data.shape[0]:
                fail(f"Bad: indices[{k}] == {indices[k]} out of range [0, {data.shape[0]})")
        total = np.sum(data[indices[start:end]], axis=0, dtype=data.dtype)
        count = end - start
        if count > 1 and kind != "sum":
            total = total * _segment_scale(kind, [count], data.dtype)[0]
        out[out_index] = total
        start = end
    return [out]


def _lower_sparse_segment(ctx, op, data, indices, segment_ids, num_segments=None):
    """Segment ids known while compiling (validated now; bad ones run the op on the host for
    TF's message): the gathered rows scatter-added into their segments and scaled; indices
    out of range are a run-time check with the kernel's message."""
    kind = _segment_kind(op.type)
    known = ctx.static(segment_ids)
    if known is None or ic.is_symbolic(known):
        ctx.fail(f"{op.type}'s segment_ids are known only at run time (its output size depends on them)")
    ids = np.asarray(known).astype(np.int64).reshape(-1)
    if data.type.rank < 1 or indices.type.rank != 1:
        ctx.fail(f"{op.type}: bad ranks (checked on the host)")
    count = ctx.unify(ctx.canon(indices.type.shape[0]), int(ids.size), (tuple(indices.type.shape), ids.shape))
    last_plus_one = int(ids[-1]) + 1 if ids.size else 0
    if num_segments is not None:
        rows_known = ctx.static(num_segments)
        if rows_known is None or ic.is_symbolic(rows_known):
            ctx.fail(f"{op.type}'s num_segments is known only at run time")
        rows = int(np.asarray(rows_known))
    else:
        rows = last_plus_one
    if rows < last_plus_one or rows < 0 or (ids.size and (ids[0] < 0 or np.any(ids[1:] < ids[:-1]))):
        ctx.fail(f"{op.type}: bad segment ids (the host raises TF's message)")
    elem = data.type.elem
    rest = tuple(ctx.canon(d) for d in data.type.shape[1:])
    if ids.size == 0 or rows == 0:
        return _full(ctx, 0, elem, (rows,) + rest)
    data_rows = ctx.canon(data.type.shape[0])
    wide = ctx.convert(indices, _I64)
    bound = ic.dim_scalar(ctx, data_rows, _I64)
    bad = _any(ctx, _cmp(ctx, wide, ctx.scalar(0, _I64), "lt"), _cmp(ctx, wide, bound, "ge"))
    holds, pos, value = _first(ctx, bad, wide)
    _assert(ctx, holds, ["Bad: indices[", pos, "] == ", value, " out of range [0, ", bound, ")"])
    safe = _select(ctx, bad, ctx.scalar(0, _I64), wide)
    gathered = ctx.b.value("gather", [data, safe], {"axis": 0})
    counts = np.bincount(ids, minlength=rows)[:rows]
    if kind != "sum":
        scale = _segment_scale(kind, counts, elem.np_dtype)[ids]
        scale = np.where(counts[ids] > 1, scale, 1).astype(elem.np_dtype)  # one row: copied as is
        gathered = ctx.b.value("mul", [gathered, ctx.broadcast_in_dim(ctx.constant(scale), (count,) + rest, [0])])
    out_shape = (rows,) + rest
    return ctx.b.value("scatter_add", [_full(ctx, 0, elem, out_shape), ctx.constant(ids), gathered], {"axis": 0})


def _segment_grad(op, grad):
    """TF's _SparseSegment{Sum,Mean,SqrtN}(WithNumSegments)Grad: SparseSegment*Grad."""
    from .array_ops import shape

    kind = _segment_kind(op.type)
    grad_type = {"sum": "SparseSegmentSumGrad", "mean": "SparseSegmentMeanGrad", "sqrtn": "SparseSegmentSqrtNGrad"}
    dim0 = shape(op.inputs[0])[0]
    out = apply_op(grad_type[kind], [grad, op.inputs[1], op.inputs[2], dim0]).outputs[0]
    return [out, None, None] + ([None] if op.type.endswith("WithNumSegments") else [])


def _register_segment(op_type, with_num_segments):
    inputs = ["data: T", "indices: Tidx", "segment_ids: Tsegmentids"]
    attrs = {"T": Attr("type", allowed=_REAL if op_type.startswith("SparseSegmentSum") else _FLOATS),
             "Tidx": Attr("type", dtypes.int32, allowed=_INDEX),
             "Tsegmentids": Attr("type", dtypes.int32, allowed=_INDEX),
             "sparse_gradient": Attr("bool", False)}
    if with_num_segments:
        inputs.append("num_segments: Tnumsegments")
        attrs["Tnumsegments"] = Attr("type", dtypes.int32, allowed=_INDEX)
    register(type(op_type, (OpType,), {
        "__doc__": f"TF op {op_type}: a segment reduction of the rows ``data[indices]``.",
        "inputs": inputs, "outputs": ["output: T"], "attrs": attrs,
        "infer": staticmethod(lambda op: ic.run_shape_fn(op, lambda c: _segment_shape(c, with_num_segments))),
        "lower": staticmethod(_lower_sparse_segment), "host": staticmethod(_sparse_segment_host),
        "host_fallback": True,  # segment ids known only at run time: on the host
        "gradient": staticmethod(_segment_grad)}))


for _name in _SEGMENT_KINDS:
    _register_segment(_name, False)
    _register_segment(_name + "WithNumSegments", True)


def _segment_grad_shape(ctx):
    grad = ic.with_rank_at_least(ctx.input(0), 1)
    ic.with_rank(ctx.input(1), 1)
    ic.with_rank(ctx.input(2), 1)
    ic.with_rank(ctx.input(3), 0)
    value = ctx.input_tensor(3)
    rows = int(np.asarray(value)) if value is not None else None
    if grad is None:
        return [None]
    return [ic.concatenate([rows], ic.subshape(grad, 1))]


def _sparse_segment_grad_host(op, grad, indices, segment_ids, output_dim0):
    grad, indices, ids = np.asarray(grad), np.asarray(indices), np.asarray(segment_ids)
    fail = _fail(op)
    kind = _SEGMENT_KINDS[op.type[:-len("Grad")]]
    if indices.ndim != 1:
        fail("indices should be a vector.")
    if ids.ndim != 1:
        fail("segment_ids should be a vector.")
    if np.asarray(output_dim0).ndim != 0:
        fail("output_dim0 should be a scalar.")
    if indices.size != ids.size:
        fail("segment_ids and indices should have same size.")
    rows = int(np.asarray(output_dim0))
    out = np.zeros((rows,) + grad.shape[1:], dtype=grad.dtype)
    if rows == 0 or ids.size == 0:
        return [out]
    indices, ids = indices.astype(np.int64), ids.astype(np.int64)
    segments = grad.shape[0]
    if int(ids[-1]) + 1 > segments:
        fail("Invalid number of segments")
    scale = np.ones(segments, np.float64)
    if kind != "sum":
        for idx in ids:
            if not 0 <= idx < segments:
                fail(f"Segment id {idx} out of range [0, {segments}).")
        counts = np.bincount(ids, minlength=segments)[:segments].astype(np.float64)
        scale = 1.0 / np.maximum(counts, 1.0) if kind == "mean" else 1.0 / np.sqrt(np.maximum(counts, 1.0))
    for i in range(ids.size):
        if not 0 <= indices[i] < rows:
            fail(f"Index {indices[i]} out of range [0, {rows}).")
        if not 0 <= ids[i] < segments:
            fail(f"Segment id {ids[i]} out of range [0, {segments}).")
        out[indices[i]] += grad[ids[i]] * grad.dtype.type(scale[ids[i]])
    return [out]


def _lower_sparse_segment_grad(ctx, op, grad, indices, segment_ids, output_dim0):
    """out[indices[i]] += grad[ids[i]] * scale[ids[i]] (scale: 1, 1/count, 1/sqrt(count)
    of the id's entries), with the kernel's checks in its order."""
    kind = _SEGMENT_KINDS[op.type[:-len("Grad")]]
    rows_known = ctx.static(output_dim0)
    if rows_known is None or ic.is_symbolic(rows_known) or grad.type.rank < 1 or indices.type.rank != 1:
        ctx.fail(f"{op.type}'s output_dim0 is known only at run time")
    rows = int(np.asarray(rows_known))
    elem = grad.type.elem
    rest = tuple(ctx.canon(d) for d in grad.type.shape[1:])
    count = ctx.unify(ctx.canon(indices.type.shape[0]), ctx.canon(segment_ids.type.shape[0]),
                      (tuple(indices.type.shape), tuple(segment_ids.type.shape)))
    if rows < 0:
        ctx.fail(f"{op.type}: a negative output_dim0 (the host raises TF's message)")
    out_shape = (rows,) + rest
    if rows == 0 or count == 0:
        return _full(ctx, 0, elem, out_shape)
    segments = ctx.canon(grad.type.shape[0])
    seg_bound = ic.dim_scalar(ctx, segments, _I64)
    row_bound = ctx.scalar(rows, _I64)
    zero = ctx.scalar(0, _I64)
    index = ctx.convert(indices, _I64)
    ids = ctx.convert(segment_ids, _I64)
    entries = ic.dim_scalar(ctx, count, _I64)
    nonempty = _cmp(ctx, entries, zero, "gt")
    padded = ctx.b.value("concatenate", [ids, ctx.constant(np.zeros(1, np.int64))], {"dim": 0})
    position = ctx.b.value("max", [ctx.b.value("sub", [entries, ctx.scalar(1, _I64)]), zero])  # 0 (the pad) if none
    last = ctx.reshape(ctx.b.value("gather", [padded, ctx.reshape(position, (1,))], {"axis": 0}), ())
    _assert(ctx, ctx.b.value("or", [ctx.b.value("not", [nonempty]),
                                    _cmp(ctx, ctx.b.value("add", [last, ctx.scalar(1, _I64)]), seg_bound, "le")]),
            ["Invalid number of segments"])
    seg_bad = _any(ctx, _cmp(ctx, ids, zero, "lt"), _cmp(ctx, ids, seg_bound, "ge"))
    if kind != "sum":
        holds, _, value = _first(ctx, seg_bad, ids)
        _assert(ctx, holds, ["Segment id ", value, " out of range [0, ", seg_bound, ")."])
    index_bad = _any(ctx, _cmp(ctx, index, zero, "lt"), _cmp(ctx, index, row_bound, "ge"))
    code = _select(ctx, index_bad, ctx.scalar(1, _I32), _select(ctx, seg_bad, ctx.scalar(2, _I32),
                                                                ctx.scalar(0, _I32)))
    _, _, kind_at, index_at, id_at = _first(ctx, _cmp(ctx, code, ctx.scalar(0, _I32), "ne"), code, index, ids)
    _assert(ctx, _cmp(ctx, kind_at, ctx.scalar(1, _I32), "ne"),
            ["Index ", index_at, " out of range [0, ", row_bound, ")."])
    _assert(ctx, _cmp(ctx, kind_at, ctx.scalar(2, _I32), "ne"),
            ["Segment id ", id_at, " out of range [0, ", seg_bound, ")."])
    safe_ids = _select(ctx, seg_bad, zero, ids)
    picked = ctx.b.value("gather", [grad, safe_ids], {"axis": 0})
    if kind != "sum":
        hits = ctx.b.value("scatter_add", [_full(ctx, 0, elem, (segments,)), safe_ids, _full(ctx, 1, elem, (count,))],
                           {"axis": 0})
        hits = ctx.b.value("max", [hits, _full(ctx, 1, elem, (segments,))])
        if kind == "sqrtn":
            hits = ctx.b.value("sqrt", [hits])
        scale = ctx.b.value("div", [_full(ctx, 1, elem, (segments,)), hits])
        scale = ctx.b.value("gather", [scale, safe_ids], {"axis": 0})
        picked = ctx.b.value("mul", [picked, ctx.broadcast_in_dim(scale, (count,) + rest, [0])])
    safe_index = _select(ctx, index_bad, zero, index)
    return ctx.b.value("scatter_add", [_full(ctx, 0, elem, out_shape), safe_index, picked], {"axis": 0})


for _name in _SEGMENT_KINDS:
    register(type(_name + "Grad", (OpType,), {
        "__doc__": f"TF op {_name}Grad: the gradient of {_name} with respect to its data.",
        "inputs": ["grad: T", "indices: Tidx", "segment_ids: Tsegmentids", "output_dim0: int32"],
        "outputs": ["output: T"],
        "attrs": {"T": Attr("type", allowed=_FLOATS), "Tidx": Attr("type", dtypes.int32, allowed=_INDEX),
                  "Tsegmentids": Attr("type", dtypes.int32, allowed=_INDEX)},
        "infer": staticmethod(lambda op: ic.run_shape_fn(op, _segment_grad_shape)),
        "lower": staticmethod(_lower_sparse_segment_grad), "host": staticmethod(_sparse_segment_grad_host),
        "host_fallback": True}))  # an output_dim0 known only at run time: on the host (TF registers no gradient)


def _sparse_segment(op_type, data, indices, segment_ids, name, num_segments, sparse_gradient):
    if sparse_gradient:
        raise NotImplementedError("tfc does not implement sparse_gradient=True (an IndexedSlices gradient)")
    attrs = {"sparse_gradient": False}
    if num_segments is not None:
        return apply_op(op_type + "WithNumSegments", [data, indices, segment_ids, num_segments], attrs,
                        name=name).outputs[0]
    return apply_op(op_type, [data, indices, segment_ids], attrs, name=name).outputs[0]


def sparse_segment_sum(data, indices, segment_ids, name=None, num_segments=None, sparse_gradient=False):
    """tf.sparse.segment_sum: sums of the rows ``data[indices]`` sharing a (sorted) segment id."""
    return _sparse_segment("SparseSegmentSum", data, indices, segment_ids, name, num_segments, sparse_gradient)


def sparse_segment_mean(data, indices, segment_ids, name=None, num_segments=None, sparse_gradient=False):
    """tf.sparse.segment_mean: means of the rows ``data[indices]`` sharing a segment id."""
    return _sparse_segment("SparseSegmentMean", data, indices, segment_ids, name, num_segments, sparse_gradient)


def sparse_segment_sqrt_n(data, indices, segment_ids, name=None, num_segments=None, sparse_gradient=False):
    """tf.sparse.segment_sqrt_n: sums of the rows sharing a segment id over sqrt(count)."""
    return _sparse_segment("SparseSegmentSqrtN", data, indices, segment_ids, name, num_segments, sparse_gradient)


TF_EXPORTS = {
    "sparse_softmax": sparse_softmax, "sparse_slice": sparse_slice, "sparse_split": sparse_split,
    "sparse_transpose": sparse_transpose, "sparse_maximum": sparse_maximum, "sparse_minimum": sparse_minimum,
    "sparse_merge": sparse_merge, "sparse_reduce_max": sparse_reduce_max,
    "sparse_reduce_max_sparse": sparse_reduce_max_sparse, "sparse_reduce_sum_sparse": sparse_reduce_sum_sparse,
    "sparse_to_indicator": sparse_to_indicator, "sparse_reset_shape": sparse_reset_shape,
    "sparse_segment_sum": sparse_segment_sum, "sparse_segment_mean": sparse_segment_mean,
    "sparse_segment_sqrt_n": sparse_segment_sqrt_n,
}
SPARSE_EXPORTS = {
    "softmax": sparse_softmax, "slice": sparse_slice, "split": sparse_split, "transpose": sparse_transpose,
    "maximum": sparse_maximum, "minimum": sparse_minimum, "merge": sparse_merge, "reduce_max": sparse_reduce_max,
    "reduce_max_sparse": sparse_reduce_max_sparse, "reduce_sum_sparse": sparse_reduce_sum_sparse,
    "cross": sparse_cross, "cross_hashed": sparse_cross_hashed, "to_indicator": sparse_to_indicator,
    "expand_dims": sparse_expand_dims, "eye": sparse_eye, "reset_shape": sparse_reset_shape,
    "segment_sum": sparse_segment_sum, "segment_mean": sparse_segment_mean,
    "segment_sqrt_n": sparse_segment_sqrt_n,
}
