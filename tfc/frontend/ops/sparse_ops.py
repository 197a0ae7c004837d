"""Sparse ops: tf.sparse.* and the TF1 ``tf.sparse_*`` names on SparseTensors
(tfc/frontend/sparse_tensor.py).

Entries follow TF's OpDefs and shape functions (core/ops/sparse_ops.cc), kernels'
messages (core/kernels/sparse_*.cc) and gradients (python/ops/sparse_grad.py). Each is
compiled from core IR ops where its output shapes are known while compiling:

- SparseToDense, SparseReduceSum, SparseTensorDenseMatMul: an n-d index becomes one
  linear index into the dense result (``scatter_add`` with a hit mask, as in
  scatter_ops.py); their output shapes come from the ``dense_shape`` *values*, so when
  those are known only at run time (a fed ``sparse_placeholder``) the op has a
  ``host_fallback``: it runs on the host and the step runs in stages
  (tfc/runtime/host.py), like tf.where;
- SparseTensorDenseAdd, SparseReshape, SparseReorder, SparseConcat, SparseAddGrad,
  SparseFillEmptyRowsGrad, SparseDenseCwiseMul/Div have output shapes that follow from
  their inputs' shapes and are compiled once the rank (indices' second dim) is known:
  a sparse_placeholder without a shape runs them on the host (``host_fallback``);
  reordering ranks each entry by counting the entries before it (an O(N^2) compare
  fused into a reduction: the IR has no sort), a stable order;
- SparseAdd (two sparse operands) and SparseFillEmptyRows have data-dependent numbers
  of entries: host ops (``host_only``).

Bad indices are run-time ``check``s with TF's kernel messages. String values (from
tf.string_split) run on the host. tf.sparse.retain and tf.sparse.from_dense are Where +
gathers, as TF builds them.
"""
from __future__ import annotations

import numpy as np

from tfc import ir
from tfc.ir.dims import dims_product

from .. import dtypes
from ..errors import InvalidArgumentError
from ..graph import name_scope
from ..op_helper import apply_op
from ..registry import Attr, OpType, ShapeError, register
from ..sparse_tensor import SparseTensor, SparseTensorValue, convert_to_sparse_tensor
from . import inference_context as ic
from .scatter_ops import _emit_message_check, _scalar_of, _shape_text

INDEX_TYPES = (dtypes.int32, dtypes.int64)
_I64 = ir.ElemType.I64
_I32 = ir.ElemType.I32
_PRED = ir.ElemType.PRED

_OUT_OF_ORDER = ("is out of order. Many sparse ops require sorted indices.\n    Use `tf.sparse.reorder` to create "
                 "a correctly ordered copy.\n\n")


# =====================================================================================
# Lowering helpers
# =====================================================================================
def _tt(elem, shape):
    return ir.TensorType(elem, tuple(shape))


def _full(ctx, number, elem, shape):
    return ctx.broadcast_in_dim(ctx.scalar(number, elem), tuple(shape), [])


def _cmp(ctx, a, b, direction):
    return ctx.elementwise("compare", a, b, attrs={"dir": direction}, result_elem=_PRED)


def _any(ctx, *preds):
    out = preds[0]
    for p in preds[1:]:
        out = ctx.b.value("or", [out, p])
    return out


def _select(ctx, pred, a, b):
    shape = ctx.broadcast_shapes(tuple(pred.type.shape), tuple(a.type.shape), tuple(b.type.shape))
    return ctx.b.value("select", [ctx.broadcast_to(pred, shape), ctx.broadcast_to(a, shape),
                                  ctx.broadcast_to(b, shape)])


def _column(ctx, rows, k):
    """Column k of an [N, D] value, as [N]."""
    count = ctx.canon(rows.type.shape[0])
    return ctx.reshape(ctx.b.value("slice", [rows], {"start": [0, k], "limit": [count, k + 1]}), (count,))


def _scalars(ctx, vector, count):
    """The elements of a rank-1 value of static length, as scalars."""
    return [_scalar_of(ctx, vector, k) for k in range(count)]


def _dims_scalars(ctx, dims):
    return [ic.dim_scalar(ctx, ctx.canon(d), _I64) for d in dims]


def _as_rows(ctx, indices, count, depth):
    """Indices as i64 [count, depth]."""
    wide = ctx.convert(indices, _I64)
    return ctx.reshape(wide, (count, depth))


def _holds_statically(ctx, holds) -> bool:
    known = ctx.static(holds)
    return known is not None and known.dtype != object and bool(np.all(known))


def _assert(ctx, holds, pieces) -> None:
    """A ``check`` of kind ``assert``: TF's message from text and scalar run-time values
    (skipped when the condition is known to hold)."""
    if not _holds_statically(ctx, holds):
        _emit_message_check(ctx, holds, pieces)


def _list_text(scalars, sep=",") -> list:
    """Pieces "[a,b,c]" of scalar values (or ints)."""
    pieces = ["["]
    for i, s in enumerate(scalars):
        if i:
            pieces.append(sep)
        pieces.append(str(s) if isinstance(s, int) else s)
    return pieces + ["]"]


def _first(ctx, bad, *arrays):
    """(holds, position of the first true entry of pred[N] ``bad``, each of ``arrays`` [N, ...]
    at that position); a zero row is appended so an all-false ``bad`` has a position."""
    holds = ctx.b.value("not", [ctx.reduce(bad, "or", [0])])
    padded = ctx.b.value("concatenate", [bad, ctx.constant(np.zeros(1, bool))], {"dim": 0})
    pos = ctx.b.value("argmax", [ctx.convert(padded, _I32)], {"dim": 0}, result_type=_tt(_I64, ()))
    picked = []
    for array in arrays:
        tail = tuple(array.type.shape[1:])
        zero = _full(ctx, 0, array.type.elem, (1,) + tail)
        extended = ctx.b.value("concatenate", [array, zero], {"dim": 0})
        picked.append(ctx.b.value("gather", [extended, pos], {"axis": 0}))
    return (holds, pos, *picked)


def _linearize(ctx, rows, dims):
    """(linear i64 [N] index of rows [N, D] into ``dims`` (row-major), pred [N, D] out of
    bounds per component)."""
    count = ctx.canon(rows.type.shape[0])
    bounds = _dims_scalars(ctx, dims)
    linear, bad_columns = None, []
    for k, bound in enumerate(bounds):
        column = _column(ctx, rows, k)
        bad_columns.append(_any(ctx, _cmp(ctx, column, ctx.scalar(0, _I64), "lt"), _cmp(ctx, column, bound, "ge")))
        linear = column if linear is None else ctx.elementwise("add", ctx.elementwise("mul", linear, bound), column)
    if linear is None:
        linear = _full(ctx, 0, _I64, (count,))
        bad = _full(ctx, False, _PRED, (count, 0))
    else:
        bad = ctx.b.value("concatenate", [ctx.reshape(c, (count, 1)) for c in bad_columns], {"dim": 1}) \
            if len(bad_columns) > 1 else ctx.reshape(bad_columns[0], (count, 1))
    return linear, bad


def _row_any(ctx, bad):
    if not isinstance(ctx.canon(bad.type.shape[1]), int) or ctx.canon(bad.type.shape[1]) == 0:
        return _full(ctx, False, _PRED, (ctx.canon(bad.type.shape[0]),))
    return ctx.reduce(bad, "or", [1])


def _assign(ctx, base, linear, values, unique: bool):
    """``base`` [M] with ``values`` [N] written at ``linear`` [N] (in bounds); repeated
    indices keep the last value unless ``unique`` says there are none."""
    from .scatter_ops import _scatter_rows

    elem = base.type.elem
    if elem == _PRED:  # scatter_add adds numbers: write 0/1 and compare back
        out = _assign(ctx, ctx.convert(base, _I32), linear, ctx.convert(values, _I32), unique)
        return _cmp(ctx, out, ctx.scalar(0, _I32), "ne")
    if not unique:
        return _scatter_rows(ctx, base, linear, values, "update")
    total = ctx.canon(base.type.shape[0])
    count = ctx.canon(linear.type.shape[0])
    hits = ctx.b.value("scatter_add", [_full(ctx, 0, _I32, (total,)), linear, _full(ctx, 1, _I32, (count,))],
                       {"axis": 0})
    scattered = ctx.b.value("scatter_add", [_full(ctx, 0, elem, (total,)), linear, values], {"axis": 0})
    return ctx.b.value("select", [_cmp(ctx, hits, ctx.scalar(0, _I32), "gt"), scattered, base])


def _stable_order(ctx, rows):
    """perm i64 [N]: the entries of rows [N, R] in lexicographic order, ties in input order."""
    count = ctx.canon(rows.type.shape[0])
    depth = ctx.canon(rows.type.shape[1])
    square = (count, count)
    # before[i, j]: entry j comes before entry i
    before = ctx.b.value("compare", [ctx.b.value("iota", [], {"dim": 1}, result_type=_tt(_I64, square)),
                                     ctx.b.value("iota", [], {"dim": 0}, result_type=_tt(_I64, square))],
                         {"dir": "lt"})
    for k in reversed(range(depth)):
        column = _column(ctx, rows, k)
        mine = ctx.broadcast_in_dim(column, square, [0])
        theirs = ctx.broadcast_in_dim(column, square, [1])
        less = ctx.b.value("compare", [theirs, mine], {"dir": "lt"})
        equal = ctx.b.value("compare", [theirs, mine], {"dir": "eq"})
        before = ctx.b.value("or", [less, ctx.b.value("and", [equal, before])])
    position = ctx.reduce(ctx.convert(before, _I64), "sum", [1])
    iota = ctx.b.value("iota", [], {"dim": 0}, result_type=_tt(_I64, (count,)))
    return ctx.b.value("scatter_add", [_full(ctx, 0, _I64, (count,)), position, iota], {"axis": 0})


def _vector(ctx, scalars, elem=_I64):
    """A rank-1 value of scalar values."""
    if not scalars:
        return ctx.constant(np.zeros(0, elem.np_dtype))
    parts = [ctx.reshape(ctx.convert(s, elem), (1,)) for s in scalars]
    return parts[0] if len(parts) == 1 else ctx.b.value("concatenate", parts, {"dim": 0})


def _static_length(ctx, value, what):
    if value.type.rank != 1 or not isinstance(ctx.canon(value.type.shape[0]), int):
        ctx.fail(f"{what} needs a known length")
    return ctx.canon(value.type.shape[0])


# -- host helpers ----------------------------------------------------------------------------------
def _shape_str(dims) -> str:
    return "[" + ",".join(str(int(d)) for d in dims) + "]"


def _host_rows(indices) -> np.ndarray:
    indices = np.asarray(indices).astype(np.int64)
    if indices.ndim == 0:
        return indices.reshape(1, 1)
    if indices.ndim == 1:
        return indices.reshape(-1, 1)
    return indices


def _host_validate(op, rows, shape, validate: bool) -> None:
    """SparseTensor::IndicesValid (validate) or ToDense's bounds test."""
    shape = np.asarray(shape, dtype=np.int64)
    bad = (rows < 0) | (rows >= shape[None, :])
    if not validate:
        if bad.any():
            raise InvalidArgumentError(None, op, f"Indices are not valid (out of bounds).  Shape: {_shape_str(shape)}")
        return
    for i in range(rows.shape[0]):
        text = "[" + ",".join(str(int(v)) for v in rows[i]) + "]"
        if bad[i].any():
            raise InvalidArgumentError(None, op, f"indices[{i}] = {text} is out of bounds: need 0 <= index < "
                                                 f"{_shape_str(shape)}")
        if i:
            previous, current = tuple(rows[i - 1]), tuple(rows[i])
            if current < previous:
                raise InvalidArgumentError(None, op, f"indices[{i}] = {text} {_OUT_OF_ORDER}")
            if current == previous:
                raise InvalidArgumentError(None, op, f"indices[{i}] = {text} is repeated")


def _lexsort(rows) -> np.ndarray:
    """The stable lexicographic order of rows [N, R]."""
    if rows.shape[0] == 0 or rows.shape[1] == 0:
        return np.arange(rows.shape[0])
    return np.lexsort(tuple(rows[:, k] for k in reversed(range(rows.shape[1]))))


# =====================================================================================
# SparseToDense
# =====================================================================================
def _sparse_to_dense_shape(ctx):
    return [ctx.shape_from_shape_tensor(1)]


def _lower_sparse_to_dense(ctx, op, indices, output_shape, values, default):
    if indices.type.rank > 2 or output_shape.type.rank > 1 or default.type.rank != 0 or values.type.rank > 1:
        ctx.fail("SparseToDense's inputs have bad ranks")  # the host raises TF's message
    dims = [ctx.canon(d) for d in ic.static_dims(ctx, output_shape, "SparseToDense's output_shape")]
    count = ctx.canon(indices.type.shape[0]) if indices.type.rank > 0 else 1
    depth = ctx.canon(indices.type.shape[1]) if indices.type.rank == 2 else 1
    if not isinstance(depth, int) or depth != len(dims) or any(isinstance(d, int) and d < 0 for d in dims):
        ctx.fail(f"output_shape has incorrect number of elements: {len(dims)} should be: {depth}")
    if values.type.rank == 1:
        ctx.unify(ctx.canon(values.type.shape[0]), count, (tuple(values.type.shape), (count,)))
        count = ctx.canon(count)
    else:
        values = ctx.broadcast_in_dim(values, (count,), [])
    rows = _as_rows(ctx, indices, count, depth)
    linear, bad = _linearize(ctx, rows, dims)
    out_of_bounds = _row_any(ctx, bad)
    shape_pieces = _shape_text(ctx, dims)
    validate = op._attrs["validate_indices"]
    if validate:
        shifted = ctx.b.value("concatenate", [ctx.constant(np.array([-1], np.int64)), linear], {"dim": 0})
        previous = ctx.b.value("slice", [shifted], {"start": [0], "limit": [count]})
        code = _select(ctx, out_of_bounds, ctx.scalar(1, _I32), _select(
            ctx, _cmp(ctx, linear, previous, "lt"), ctx.scalar(2, _I32),
            _select(ctx, _cmp(ctx, linear, previous, "eq"), ctx.scalar(3, _I32), ctx.scalar(0, _I32))))
        known = ctx.static(code)
        if known is None or ic.is_symbolic(known) or np.any(known):  # else: indices known to be valid
            _, pos, row, kind = _first(ctx, _cmp(ctx, code, ctx.scalar(0, _I32), "ne"), rows, code)
            index = ["indices[", pos, "] = ", *_list_text(_scalars(ctx, row, depth))]
            for number, text in ((1, [" is out of bounds: need 0 <= index < ", *shape_pieces]),
                                 (2, [" " + _OUT_OF_ORDER]), (3, [" is repeated"])):
                _assert(ctx, _cmp(ctx, kind, ctx.scalar(number, _I32), "ne"), index + text)
    else:
        _assert(ctx, ctx.b.value("not", [ctx.reduce(out_of_bounds, "or", [0])]),
                ["Indices are not valid (out of bounds).  Shape: ", *shape_pieces])
    total = dims_product(dims)
    base = ctx.broadcast_in_dim(default, (total,), [])
    safe = _select(ctx, out_of_bounds, ctx.scalar(0, _I64), linear)
    return ctx.reshape(_assign(ctx, base, safe, values, unique=validate), tuple(dims))


def _sparse_to_dense_host(op, indices, output_shape, values, default):
    indices, output_shape = np.asarray(indices), np.asarray(output_shape)
    values, default = np.asarray(values), np.asarray(default)
    if indices.ndim > 2:
        raise InvalidArgumentError(None, op, f"sparse_indices should be a scalar, vector, or matrix, got shape "
                                             f"{_shape_str(indices.shape)}")
    num_elems = indices.shape[0] if indices.ndim > 0 else 1
    num_dims = indices.shape[1] if indices.ndim > 1 else 1
    if output_shape.ndim > 1:
        raise InvalidArgumentError(None, op, f"output_shape should be a scalar or vector, got shape "
                                             f"{_shape_str(output_shape.shape)}")
    if output_shape.size != num_dims:
        raise InvalidArgumentError(None, op, f"output_shape has incorrect number of elements: {output_shape.size} "
                                             f"should be: {num_dims}")
    if not (values.ndim == 0 or (values.ndim == 1 and values.size == num_elems)):
        raise InvalidArgumentError(None, op, f"sparse_values has incorrect shape {_shape_str(values.shape)}, should "
                                             f"be [] or [{num_elems}]")
    if default.ndim != 0:
        raise InvalidArgumentError(None, op, "default_value should be a scalar.")
    shape = output_shape.reshape(-1).astype(np.int64)
    for d, size in enumerate(shape):
        if size < 0:
            raise InvalidArgumentError(None, op, f"Dimension {size} must be >= 0")
    rows = _host_rows(indices)
    _host_validate(op, rows, shape, op._attrs["validate_indices"])
    out = np.empty(tuple(int(d) for d in shape), dtype=values.dtype)
    out[...] = default
    values = np.broadcast_to(values, (num_elems,))
    for i in range(num_elems):
        out[tuple(rows[i])] = values[i]
    return [out]


@register
class SparseToDense(OpType):
    inputs = ["sparse_indices: Tindices", "output_shape: Tindices", "sparse_values: T", "default_value: T"]
    outputs = ["dense: T"]
    attrs = {"validate_indices": Attr("bool", True), "T": Attr("type"),
             "Tindices": Attr("type", allowed=INDEX_TYPES)}
    # an output shape known only at run time (a fed dense_shape): on the host
    host_fallback = True

    def infer(op):
        return ic.run_shape_fn(op, _sparse_to_dense_shape)

    lower = _lower_sparse_to_dense
    host = staticmethod(_sparse_to_dense_host)

    def gradient(op, grad):
        """_SparseToDenseGrad (TF 2.x)."""
        from .array_ops import zeros_like
        from .math_ops import reduce_sum
        from .scatter_ops import gather_nd

        sparse_indices, output_shape, _, _ = op.inputs
        sparse_values_grad = gather_nd(grad, sparse_indices)
        default_value_grad = reduce_sum(grad) - reduce_sum(sparse_values_grad)
        return [zeros_like(sparse_indices), zeros_like(output_shape), sparse_values_grad, default_value_grad]


def sparse_to_dense(sparse_indices, output_shape, sparse_values, default_value=0, validate_indices=True, name=None):
    """tf.sparse_to_dense: a dense tensor of ``output_shape`` holding ``sparse_values`` at
    ``sparse_indices`` and ``default_value`` elsewhere."""
    return apply_op("SparseToDense", [sparse_indices, output_shape, sparse_values, default_value],
                    {"validate_indices": validate_indices}, name=name).outputs[0]


def sparse_tensor_to_dense(sp_input, default_value=None, validate_indices=True, name=None):
    """tf.sparse.to_dense / tf.sparse_tensor_to_dense."""
    from .array_ops import zeros

    sp_input = convert_to_sparse_tensor(sp_input)
    if default_value is None:
        default_value = zeros([], dtype=sp_input.dtype)
    return apply_op("SparseToDense", [sp_input.indices, sp_input.dense_shape, sp_input.values, default_value],
                    {"validate_indices": validate_indices}, name=name).outputs[0]


# =====================================================================================
# SparseReorder
# =====================================================================================
def _sparse_reorder_shape(ctx):
    indices = ic.with_rank(ctx.input(0), 2)
    values = ic.with_rank(ctx.input(1), 1)
    ic.with_rank(ctx.input(2), 1)
    return [indices, values]


def _lower_sparse_reorder(ctx, op, indices, values, shape):
    if indices.type.rank != 2 or values.type.rank != 1 or not isinstance(ctx.canon(indices.type.shape[1]), int):
        ctx.fail("SparseReorder needs [N, R] indices with a known R")
    count = ctx.unify(ctx.canon(indices.type.shape[0]), ctx.canon(values.type.shape[0]),
                      (tuple(indices.type.shape), tuple(values.type.shape)))
    rows = ctx.reshape(indices, (count, ctx.canon(indices.type.shape[1])))
    perm = _stable_order(ctx, rows)
    return [ctx.b.value("gather", [rows, perm], {"axis": 0}), ctx.b.value("gather", [values, perm], {"axis": 0})]


def _sparse_reorder_host(op, indices, values, shape):
    rows = np.asarray(indices, dtype=np.int64)
    order = _lexsort(rows)
    return [rows[order], np.asarray(values)[order]]


@register
class SparseReorder(OpType):
    inputs = ["input_indices: int64", "input_values: T", "input_shape: int64"]
    outputs = ["output_indices: int64", "output_values: T"]
    attrs = {"T": Attr("type")}

    def infer(op):
        return ic.run_shape_fn(op, _sparse_reorder_shape)

    lower = _lower_sparse_reorder
    host = staticmethod(_sparse_reorder_host)  # string values, or a rank known only at run time
    host_fallback = True

    def gradient(op, unused_output_indices_grad, output_values_grad):
        """_SparseReorderGrad: the values' gradient gathered back through the inverse permutation."""
        from .array_ops import invert_permutation, shape
        from .selection_ops import gather, range as tf_range

        input_indices = op.inputs[0]
        input_shape = op.inputs[2]
        num_entries = shape(input_indices)[0]
        entry_indices = tf_range(num_entries)
        sp_unordered = SparseTensor(input_indices, entry_indices, input_shape)
        sp_ordered = sparse_reorder(sp_unordered)
        inverted_permutation = invert_permutation(sp_ordered.values)
        return [None, gather(output_values_grad, inverted_permutation), None]


def sparse_reorder(sp_input, name=None):
    """tf.sparse.reorder: the entries in canonical row-major order."""
    from .array_ops import identity

    sp_input = convert_to_sparse_tensor(sp_input)
    op = apply_op("SparseReorder", [sp_input.indices, sp_input.values, sp_input.dense_shape], name=name)
    reordered_ind, reordered_val = op.outputs
    if sp_input.get_shape().is_fully_defined():
        return SparseTensor(reordered_ind, reordered_val, sp_input.get_shape().as_list())
    sp_output = SparseTensor(reordered_ind, reordered_val, identity(sp_input.dense_shape))
    sp_output.set_shape(sp_input.shape)
    return sp_output


# =====================================================================================
# SparseReshape
# =====================================================================================
def _sparse_reshape_shape(ctx):
    indices = ic.with_rank(ctx.input(0), 2)
    ic.with_rank(ctx.input(1), 1)
    new_shape = ic.with_rank(ctx.input(2), 1)
    return [[indices[0], new_shape[0]], new_shape]


def _lower_sparse_reshape(ctx, op, indices, input_shape, new_shape):
    rank_in = _static_length(ctx, input_shape, "SparseReshape's input_shape")
    rank_out = _static_length(ctx, new_shape, "SparseReshape's new_shape")
    if indices.type.rank != 2:
        ctx.fail("SparseReshape's input_indices must be a matrix")
    count = ctx.canon(indices.type.shape[0])
    ctx.unify(ctx.canon(indices.type.shape[1]), rank_in, (tuple(indices.type.shape), (count, rank_in)))
    rows = ctx.reshape(indices, (count, rank_in))
    in_sizes = _scalars(ctx, input_shape, rank_in)
    sizes = _scalars(ctx, new_shape, rank_out)
    one, zero, minus_one = ctx.scalar(1, _I64), ctx.scalar(0, _I64), ctx.scalar(-1, _I64)
    dense_size = one
    for s in in_sizes:
        dense_size = ctx.b.value("mul", [dense_size, s])
    unknown = [ctx.b.value("compare", [s, minus_one], {"dir": "eq"}) for s in sizes]
    # TF's loop over the target sizes: a second -1, or a negative size, stops it.
    seen = ctx.constant(np.array(False))
    first_unknown = minus_one
    product = one
    for d, (s, is_unknown) in enumerate(zip(sizes, unknown)):
        _assert(ctx, ctx.b.value("not", [ctx.b.value("and", [is_unknown, seen])]),
                ["only one output dimension may be -1, not both ", first_unknown, f" and {d}"])
        _assert(ctx, ctx.b.value("or", [is_unknown, ctx.b.value("compare", [s, zero], {"dir": "ge"})]),
                [f"size {d} must be non-negative, not ", s])
        first_unknown = ctx.b.value("select", [seen, first_unknown, ctx.b.value(
            "select", [is_unknown, ctx.scalar(d, _I64), first_unknown])])
        seen = ctx.b.value("or", [seen, is_unknown])
        product = ctx.b.value("mul", [product, ctx.b.value("select", [is_unknown, one, s])])
    has_unknown = seen
    _assert(ctx, ctx.b.value("or", [ctx.b.value("not", [has_unknown]),
                                    ctx.b.value("compare", [product, zero], {"dir": "gt"})]),
            ["reshape cannot infer the missing input size for an empty tensor unless all specified input sizes are "
             "non-zero"])
    safe_product = ctx.b.value("max", [product, one])
    missing = ctx.b.value("div", [dense_size, safe_product])
    in_text = _list_text(in_sizes)
    partial = [ctx.b.value("select", [u, one, s]) for s, u in zip(sizes, unknown)]
    _assert(ctx, ctx.b.value("or", [ctx.b.value("not", [has_unknown]), ctx.b.value(
        "compare", [ctx.b.value("mul", [product, missing]), dense_size], {"dir": "eq"})]),
        ["Input to reshape is a SparseTensor with ", dense_size, " dense values, but the requested shape requires a "
         "multiple of ", product, ". input_shape=", *in_text, " output_shape=", *_list_text(partial)])
    out_sizes = [ctx.b.value("select", [u, missing, s]) for s, u in zip(sizes, unknown)]
    total = one
    for s in out_sizes:
        total = ctx.b.value("mul", [total, s])
    _assert(ctx, ctx.b.value("compare", [total, dense_size], {"dir": "eq"}),
            ["Input to reshape is a tensor with ", dense_size, " dense values, but the requested shape has ", total,
             ". input_shape=", *in_text, " output_shape=", *_list_text(out_sizes)])
    # linear index through the input strides, split by the output strides
    linear = _full(ctx, 0, _I64, (count,))
    stride = one
    for k in reversed(range(rank_in)):
        linear = ctx.elementwise("add", linear, ctx.elementwise("mul", _column(ctx, rows, k), stride))
        stride = ctx.b.value("mul", [stride, in_sizes[k]])
    out_strides = [one] * rank_out
    stride = one
    for k in reversed(range(rank_out)):
        out_strides[k] = stride
        stride = ctx.b.value("mul", [stride, out_sizes[k]])
    columns = []
    rest = linear
    for k in range(rank_out):
        s = ctx.b.value("max", [out_strides[k], one])  # sizes of 0: no entries, no division by zero
        columns.append(ctx.reshape(ctx.elementwise("div", rest, s), (count, 1)))
        rest = ctx.elementwise("rem", rest, s)
    if not columns:
        out_rows = _full(ctx, 0, _I64, (count, 0))
    elif len(columns) == 1:
        out_rows = columns[0]
    else:
        out_rows = ctx.b.value("concatenate", columns, {"dim": 1})
    return [out_rows, _vector(ctx, out_sizes)]


def _sparse_reshape_host(op, indices, input_shape, new_shape):
    indices = np.asarray(indices, np.int64)
    input_shape, target = np.asarray(input_shape, np.int64), np.asarray(new_shape, np.int64)

    def fail(message):
        raise InvalidArgumentError(None, op, message)

    if indices.ndim != 2:
        fail(f"Input indices should be a matrix but received shape {_shape_str(indices.shape)}")
    if input_shape.ndim != 1:
        fail(f"Input shape should be a vector but received shape {_shape_str(input_shape.shape)}")
    if target.ndim != 1:
        fail(f"Target shape should be a vector but received shape {_shape_str(target.shape)}")
    dense_size = int(np.prod(input_shape, dtype=np.int64))
    output = []
    product, unknown = 1, -1
    for d, size in enumerate(target.tolist()):
        if size == -1:
            if unknown != -1:
                fail(f"only one output dimension may be -1, not both {unknown} and {d}")
            unknown = d
            output.append(1)
        else:
            if size < 0:
                fail(f"size {d} must be non-negative, not {size}")
            product *= size
            output.append(size)
    if unknown != -1:
        if product <= 0:
            fail("reshape cannot infer the missing input size for an empty tensor unless all specified input sizes "
                 "are non-zero")
        missing = dense_size // product
        if product * missing != dense_size:
            fail(f"Input to reshape is a SparseTensor with {dense_size} dense values, but the requested shape "
                 f"requires a multiple of {product}. input_shape={_shape_str(input_shape)} "
                 f"output_shape={_shape_str(output)}")
        output[unknown] = missing
    total = int(np.prod(output, dtype=np.int64))
    if total != dense_size:
        fail(f"Input to reshape is a tensor with {dense_size} dense values, but the requested shape has {total}. "
             f"input_shape={_shape_str(input_shape)} output_shape={_shape_str(output)}")
    if indices.shape[0] == 0 or dense_size == 0:
        return [np.zeros((indices.shape[0], len(output)), np.int64), np.array(output, np.int64)]
    linear = np.ravel_multi_index(tuple(indices.T), tuple(int(d) for d in input_shape), mode="wrap")
    rows = np.stack(np.unravel_index(linear, tuple(output)), axis=1) if output else np.zeros((len(linear), 0))
    return [rows.astype(np.int64), np.array(output, np.int64)]


@register
class SparseReshape(OpType):
    inputs = ["input_indices: int64", "input_shape: int64", "new_shape: int64"]
    outputs = ["output_indices: int64", "output_shape: int64"]
    attrs = {}
    not_differentiable = True
    host_fallback = True  # ranks known only at run time: on the host

    def infer(op):
        return ic.run_shape_fn(op, _sparse_reshape_shape)

    lower = _lower_sparse_reshape
    host = staticmethod(_sparse_reshape_host)


def sparse_reshape(sp_input, shape, name=None):
    """tf.sparse.reshape: the same entries indexed into ``shape`` (one dim may be -1)."""
    from ..tensor_util import constant_value, constant_value_as_shape
    from .array_ops import identity
    from .constant_op import constant
    from .math_ops import cast

    sp_input = convert_to_sparse_tensor(sp_input)
    shape = cast(shape, dtype=dtypes.int64)
    with name_scope(name, "SparseReshape", [sp_input]) as name:
        reshaped_ind, reshaped_shape = apply_op("SparseReshape", [sp_input.indices, sp_input.dense_shape, shape],
                                                name=name).outputs
        reshaped_shape_const = constant_value_as_shape(shape)
        reshaped_shape_const = reshaped_shape_const.as_list() if reshaped_shape_const.ndims is not None else None
        if reshaped_shape_const is not None and sp_input.shape.is_fully_defined():
            shape_const_by_user = constant_value(shape)
            if shape_const_by_user is not None:
                num_implied_by_user = sum(d == -1 for d in shape_const_by_user)
                if num_implied_by_user > 1:
                    raise ValueError(f"At most one dimension can be inferred (-1). Found: {shape_const_by_user}")
            original_reshaped_shape = list(reshaped_shape_const)
            in_shape_size = int(np.prod(sp_input.shape.as_list()))
            num_implied = sum(dim is None for dim in reshaped_shape_const)
            if num_implied == 1 and 0 not in reshaped_shape_const:
                implied_idx = original_reshaped_shape.index(None)
                non_implied_idx = original_reshaped_shape[:implied_idx] + original_reshaped_shape[implied_idx + 1:]
                reshaped_shape_const[implied_idx] = int(in_shape_size // int(np.prod(non_implied_idx)))
            if num_implied == 0 or (num_implied == 1 and 0 not in reshaped_shape_const):
                reshaped_size = int(np.prod(reshaped_shape_const))
                if reshaped_size != in_shape_size:
                    raise ValueError(f"Cannot reshape a tensor with {in_shape_size} elements to shape "
                                     f"{original_reshaped_shape} ({reshaped_size} elements).")
                reshaped_shape = constant(reshaped_shape_const, dtype=dtypes.int64)
        return SparseTensor(reshaped_ind, identity(sp_input.values), reshaped_shape)


# =====================================================================================
# SparseTensorDenseAdd, SparseAdd, SparseAddGrad
# =====================================================================================
def _lower_sparse_tensor_dense_add(ctx, op, a_indices, a_values, a_shape, b):
    ndims = b.type.rank
    dims = [ctx.canon(d) for d in b.type.shape]
    if a_indices.type.rank != 2 or a_values.type.rank != 1 or a_shape.type.rank != 1:
        ctx.fail("SparseTensorDenseAdd needs matrix indices and vector values and shape")
    rank = _static_length(ctx, a_shape, "SparseTensorDenseAdd's a_shape")
    if rank != ndims:
        _emit_message_check(ctx, ctx.constant(np.array(False)),
                            [f"Two operands have different ranks; received: {rank} and {ndims}"])
        return b
    shape = ctx.convert(a_shape, _I64)
    for i, (value, d) in enumerate(zip(_scalars(ctx, shape, rank), _dims_scalars(ctx, dims))):
        _assert(ctx, ctx.b.value("compare", [value, d], {"dir": "eq"}),
                [f"Dimension {i} does not equal (no broadcasting is supported): sparse side ", value,
                 " vs dense side ", d])
    count = ctx.unify(ctx.canon(a_indices.type.shape[0]), ctx.canon(a_values.type.shape[0]),
                      (tuple(a_indices.type.shape), tuple(a_values.type.shape)))
    ctx.unify(ctx.canon(a_indices.type.shape[1]), ndims, (tuple(a_indices.type.shape), (count, ndims)))
    rows = _as_rows(ctx, a_indices, count, ndims)
    linear, bad = _linearize(ctx, rows, dims)
    if ndims:
        flat_bad = ctx.reshape(bad, (dims_product((count, ndims)),))
        flat_rows = ctx.reshape(rows, (dims_product((count, ndims)),))
        holds, pos, value = _first(ctx, flat_bad, flat_rows)
        width = ctx.scalar(ndims, _I64)
        shape_pieces = []
        for k, d in enumerate(_dims_scalars(ctx, dims)):
            shape_pieces += ([" "] if k else []) + [d]
        _assert(ctx, holds, ["Sparse tensor has an invalid index on dimension ", ctx.b.value("rem", [pos, width]),
                             ": a_indices(", ctx.b.value("div", [pos, width]), ",",
                             ctx.b.value("rem", [pos, width]), ") = ", value, ", dense tensor shape: ",
                             *shape_pieces])
    total = dims_product(dims)
    safe = _select(ctx, _row_any(ctx, bad), ctx.scalar(0, _I64), linear)
    flat = ctx.reshape(b, (total,))
    out = ctx.b.value("scatter_add", [flat, safe, a_values], {"axis": 0})
    return ctx.reshape(out, tuple(dims))


def _sparse_tensor_dense_add_host(op, a_indices, a_values, a_shape, b):
    a_indices, a_values = np.asarray(a_indices).astype(np.int64), np.asarray(a_values)
    a_shape, b = np.asarray(a_shape).astype(np.int64), np.asarray(b)

    def fail(message):
        raise InvalidArgumentError(None, op, message)

    if a_indices.ndim != 2:
        fail(f"Input a_indices should be a matrix but received shape: {_shape_str(a_indices.shape)}")
    if a_values.ndim != 1 or a_shape.ndim != 1:
        fail(f"Inputs a_values and a_shape should be vectors but received shapes: {_shape_str(a_values.shape)} and "
             f"{_shape_str(a_shape.shape)}")
    if a_shape.size != b.ndim:
        fail(f"Two operands have different ranks; received: {a_shape.size} and {b.ndim}")
    for i in range(b.ndim):
        if a_shape[i] != b.shape[i]:
            fail(f"Dimension {i} does not equal (no broadcasting is supported): sparse side {a_shape[i]} vs dense "
                 f"side {b.shape[i]}")
    out = b.copy()
    for i in range(a_indices.shape[0]):
        for d in range(b.ndim):
            if not 0 <= a_indices[i, d] < b.shape[d]:
                fail(f"Sparse tensor has an invalid index on dimension {d}: a_indices({i},{d}) = {a_indices[i, d]}, "
                     f"dense tensor shape: {' '.join(str(n) for n in b.shape)}")
        out[tuple(a_indices[i])] += a_values[i]
    return [out]


@register
class SparseTensorDenseAdd(OpType):
    inputs = ["a_indices: Tindices", "a_values: T", "a_shape: Tindices", "b: T"]
    outputs = ["output: T"]
    attrs = {"T": Attr("type"), "Tindices": Attr("type", allowed=INDEX_TYPES)}
    host_fallback = True  # a rank known only at run time: on the host

    def infer(op):
        return [op.inputs[3].shape]

    lower = _lower_sparse_tensor_dense_add
    host = staticmethod(_sparse_tensor_dense_add_host)

    def gradient(op, out_grad):
        """_SparseTensorDenseAddGrad."""
        from .scatter_ops import gather_nd

        sp_indices = op.inputs[0]
        return [None, gather_nd(out_grad, sp_indices), None, out_grad]


def _sparse_add_host(op, a_indices, a_values, a_shape, b_indices, b_values, b_shape, thresh):
    a_indices, b_indices = np.asarray(a_indices, np.int64), np.asarray(b_indices, np.int64)
    a_values, b_values = np.asarray(a_values), np.asarray(b_values)
    a_shape, b_shape = np.asarray(a_shape, np.int64), np.asarray(b_shape, np.int64)
    if a_indices.ndim != 2 or b_indices.ndim != 2:
        raise InvalidArgumentError(None, op, f"Input indices should be matrices but received shapes: "
                                             f"{_shape_str(a_indices.shape)} and {_shape_str(b_indices.shape)}")
    if a_values.ndim != 1 or b_values.ndim != 1:
        raise InvalidArgumentError(None, op, f"Input values should be vectors but received shapes: "
                                             f"{_shape_str(a_values.shape)} and {_shape_str(b_values.shape)}")
    if a_shape.ndim != 1 or b_shape.ndim != 1:
        raise InvalidArgumentError(None, op, f"Input shapes should be a vector but received shapes "
                                             f"{_shape_str(a_shape.shape)} and {_shape_str(b_shape.shape)}")
    if a_shape.size != b_shape.size:
        raise InvalidArgumentError(None, op, f"Operands do not have the same ranks; got shapes: "
                                             f"{_shape_str(a_shape)} and {_shape_str(b_shape)}")
    for i in range(a_shape.size):
        if a_shape[i] != b_shape[i]:
            raise InvalidArgumentError(None, op, f"Operands' shapes do not match: got {a_shape[i]} and "
                                                 f"{b_shape[i]} for dimension {i}")
    thresh = np.asarray(thresh)
    out_rows, out_values = [], []
    i = j = 0
    while i < len(a_indices) and j < len(b_indices):
        ka, kb = tuple(a_indices[i]), tuple(b_indices[j])
        if ka < kb:
            out_rows.append(a_indices[i])
            out_values.append(a_values[i])
            i += 1
        elif ka == kb:
            s = a_values[i] + b_values[j]
            if thresh <= np.abs(s):
                out_rows.append(a_indices[i])
                out_values.append(s)
            i += 1
            j += 1
        else:
            out_rows.append(b_indices[j])
            out_values.append(b_values[j])
            j += 1
    for k in range(i, len(a_indices)):
        out_rows.append(a_indices[k])
        out_values.append(a_values[k])
    for k in range(j, len(b_indices)):
        out_rows.append(b_indices[k])
        out_values.append(b_values[k])
    rank = a_shape.size
    rows = np.array(out_rows, dtype=np.int64).reshape(-1, rank)
    return [rows, np.array(out_values, dtype=a_values.dtype).reshape(-1), a_shape.copy()]


def _sparse_add_shape(ctx):
    shape = ic.with_rank(ctx.input(2), 1)
    return [[None, shape[0]], [None], shape]


@register
class SparseAdd(OpType):
    inputs = ["a_indices: int64", "a_values: T", "a_shape: int64", "b_indices: int64", "b_values: T",
              "b_shape: int64", "thresh: Treal"]
    outputs = ["sum_indices: int64", "sum_values: T", "sum_shape: int64"]
    attrs = {"T": Attr("type"), "Treal": Attr("type")}
    host_only = True  # as many entries as distinct indices: known only at run time

    def infer(op):
        return ic.run_shape_fn(op, _sparse_add_shape)

    host = staticmethod(_sparse_add_host)

    def gradient(op, *grads):
        """_SparseAddGrad: SparseAddGrad matches the sum's entries back to each operand's."""
        from ..tensor_shape import TensorShape

        val_grad = grads[1]
        a_indices = op.inputs[0]
        b_indices = op.inputs[3]
        sum_indices = op.outputs[0]
        a_val_grad, b_val_grad = apply_op("SparseAddGrad", [val_grad, a_indices, b_indices, sum_indices]).outputs
        a_val_grad.set_shape(TensorShape(op.inputs[1].shape))
        b_val_grad.set_shape(TensorShape(op.inputs[4].shape))
        return [None, a_val_grad, None, None, b_val_grad, None, None]


def _sparse_add_grad_shape(ctx):
    a = ic.with_rank(ctx.input(1), 2)
    b = ic.with_rank(ctx.input(2), 2)
    return [[a[0]], [b[0]]]


def _matching_sum(ctx, rows, sum_rows, grad):
    """grad [S] summed where an entry of rows [N, R] equals an entry of sum_rows [S, R]."""
    count = ctx.canon(rows.type.shape[0])
    total = ctx.canon(sum_rows.type.shape[0])
    depth = ctx.canon(rows.type.shape[1])
    square = (count, total)
    same = _full(ctx, True, _PRED, square)
    for k in range(depth):
        mine = ctx.broadcast_in_dim(_column(ctx, rows, k), square, [0])
        theirs = ctx.broadcast_in_dim(_column(ctx, sum_rows, k), square, [1])
        same = ctx.b.value("and", [same, ctx.b.value("compare", [mine, theirs], {"dir": "eq"})])
    picked = ctx.b.value("select", [same, ctx.broadcast_in_dim(grad, square, [1]),
                                    _full(ctx, 0, grad.type.elem, square)])
    return ctx.reduce(picked, "sum", [1])


def _lower_sparse_add_grad(ctx, op, grad, a_indices, b_indices, sum_indices):
    if any(not isinstance(ctx.canon(t.type.shape[1]), int) for t in (a_indices, b_indices, sum_indices)):
        ctx.fail("SparseAddGrad needs indices of a known rank")
    depth = ctx.canon(a_indices.type.shape[1])
    for t in (b_indices, sum_indices):
        ctx.unify(ctx.canon(t.type.shape[1]), depth, (tuple(t.type.shape), tuple(a_indices.type.shape)))
    ctx.unify(ctx.canon(sum_indices.type.shape[0]), ctx.canon(grad.type.shape[0]),
              (tuple(sum_indices.type.shape), tuple(grad.type.shape)))
    return [_matching_sum(ctx, a_indices, sum_indices, grad), _matching_sum(ctx, b_indices, sum_indices, grad)]


def _sparse_add_grad_host(op, grad, a_indices, b_indices, sum_indices):
    grad = np.asarray(grad)
    position = {tuple(row): j for j, row in enumerate(np.asarray(sum_indices, np.int64).tolist())}

    def matched(indices):
        rows = np.asarray(indices, np.int64).tolist()
        out = np.zeros(len(rows), dtype=grad.dtype)
        for i, row in enumerate(rows):
            j = position.get(tuple(row))
            if j is not None:
                out[i] = grad[j]
        return out

    return [matched(a_indices), matched(b_indices)]


@register
class SparseAddGrad(OpType):
    inputs = ["backprop_val_grad: T", "a_indices: int64", "b_indices: int64", "sum_indices: int64"]
    outputs = ["a_val_grad: T", "b_val_grad: T"]
    attrs = {"T": Attr("type")}
    not_differentiable = True
    host_fallback = True  # a rank known only at run time: on the host

    def infer(op):
        return ic.run_shape_fn(op, _sparse_add_grad_shape)

    lower = _lower_sparse_add_grad
    host = staticmethod(_sparse_add_grad_host)


def _broadcast_static_shape(a, b):
    """common_shapes.broadcast_shape of two TensorShapes (compatible ones: sparse_add checked)."""
    from ..tensor_shape import TensorShape, unknown_shape

    if a.ndims is None or b.ndims is None:
        return unknown_shape()
    x, y = a.as_list(), b.as_list()
    rank = max(len(x), len(y))
    x, y = [1] * (rank - len(x)) + x, [1] * (rank - len(y)) + y
    out = []
    for dx, dy in zip(x, y):
        if dx is None or dy is None:
            known = dy if dx is None else dx
            out.append(known if known is not None and known > 1 else None)
        else:
            out.append(max(dx, dy) if 1 in (dx, dy) else dx)
    return TensorShape(out)


def sparse_add(a, b, threshold=None, thresh=None):
    """tf.sparse.add (TF1): SparseAdd for two SparseTensors, SparseTensorDenseAdd (a dense
    result) when one operand is dense."""
    from ..convert import convert_to_tensor

    if threshold is None:
        threshold = thresh
    if threshold is None:
        threshold = 0
    sparse_classes = (SparseTensor, SparseTensorValue)
    if not any(isinstance(inp, sparse_classes) for inp in [a, b]):
        raise TypeError("At least one input should be SparseTensor; do you mean to use tf.add()?")
    if all(isinstance(inp, sparse_classes) for inp in [a, b]):
        a = convert_to_sparse_tensor(a)
        b = convert_to_sparse_tensor(b)
        threshold = convert_to_tensor(threshold, dtype=a.values.dtype.real_dtype.base_dtype, name="threshold")
        output_ind, output_val, output_shape = apply_op(
            "SparseAdd", [a.indices, a.values, a.dense_shape, b.indices, b.values, b.dense_shape, threshold]).outputs
        a.get_shape().assert_is_compatible_with(b.get_shape())
        static_shape = _broadcast_static_shape(a.get_shape(), b.get_shape())
        if static_shape.is_fully_defined():
            output_shape = static_shape.as_list()
        return SparseTensor(output_ind, output_val, output_shape)
    if isinstance(b, sparse_classes):
        a, b = b, a
    a = convert_to_sparse_tensor(a)
    return apply_op("SparseTensorDenseAdd", [a.indices, a.values, a.dense_shape, b]).outputs[0]


# =====================================================================================
# SparseReduceSum
# =====================================================================================
def _sparse_reduce_shape(ctx):
    keep_dims = ctx.attr("keep_dims")
    shape = ctx.input_tensor(2)
    axes = ctx.input_tensor(3)
    if shape is None or axes is None:
        return [None]
    shape = np.asarray(shape).reshape(-1)
    ndims = shape.size
    if ndims == 0:
        raise ShapeError("Number of dims in shape tensor must not be 0")
    reduced = {(int(a) + ndims) % ndims for a in np.asarray(axes).reshape(-1)}
    if keep_dims:
        return [[1 if d in reduced else int(shape[d]) for d in range(ndims)]]
    return [[int(shape[d]) for d in range(ndims) if d not in reduced]]


def _reduced_axes(ndims, axes, raise_error) -> list:
    out = []
    for a in axes:
        if a < -ndims or a >= ndims:
            raise_error(f"Invalid reduction dimension {a}, for input with {ndims} dimensions.")
        out.append(a + ndims if a < 0 else a)
    return sorted(set(out))


def _lower_sparse_reduce_sum(ctx, op, indices, values, shape, axes):
    dims = [ctx.canon(d) for d in ic.static_dims(ctx, shape, "SparseReduceSum's input_shape")]
    axis_list = ic.static_ints(ctx, axes, "SparseReduceSum's reduction_axes")
    reduced = _reduced_axes(len(dims), axis_list, ctx.fail)
    if indices.type.rank != 2 or values.type.rank != 1:
        ctx.fail("SparseReduceSum needs matrix indices and vector values")
    count = ctx.unify(ctx.canon(indices.type.shape[0]), ctx.canon(values.type.shape[0]),
                      (tuple(indices.type.shape), tuple(values.type.shape)))
    ctx.unify(ctx.canon(indices.type.shape[1]), len(dims), (tuple(indices.type.shape), (count, len(dims))))
    rows = ctx.reshape(indices, (count, len(dims)))
    kept = [d for d in range(len(dims)) if d not in reduced]
    if kept:
        kept_rows = ctx.b.value("concatenate", [ctx.reshape(_column(ctx, rows, d), (count, 1)) for d in kept],
                                {"dim": 1}) if len(kept) > 1 else ctx.reshape(_column(ctx, rows, kept[0]), (count, 1))
    else:
        kept_rows = _full(ctx, 0, _I64, (count, 0))
    kept_dims = [dims[d] for d in kept]
    linear, bad = _linearize(ctx, kept_rows, kept_dims)
    out_of_bounds = _row_any(ctx, bad)  # TF's kernel does not check them; they add nothing here
    linear = _select(ctx, out_of_bounds, ctx.scalar(0, _I64), linear)
    values = _select(ctx, out_of_bounds, ctx.scalar(0, values.type.elem), values)
    total = dims_product(kept_dims)
    out = ctx.b.value("scatter_add", [_full(ctx, 0, values.type.elem, (total,)), linear, values], {"axis": 0})
    if op._attrs["keep_dims"]:
        out_shape = tuple(1 if d in reduced else dims[d] for d in range(len(dims)))
    else:
        out_shape = tuple(kept_dims)
    return ctx.reshape(out, out_shape)


def _sparse_reduce_sum_host(op, indices, values, shape, axes):
    indices, values = np.asarray(indices, np.int64), np.asarray(values)
    shape = np.asarray(shape, np.int64).reshape(-1)

    def fail(message):
        raise InvalidArgumentError(None, op, message)

    reduced = _reduced_axes(shape.size, [int(a) for a in np.asarray(axes).reshape(-1)], fail)
    kept = [d for d in range(shape.size) if d not in reduced]
    out = np.zeros(tuple(int(shape[d]) for d in kept), dtype=values.dtype)
    for row, value in zip(indices, values):
        index = tuple(int(row[d]) for d in kept)
        if all(0 <= v < int(shape[d]) for v, d in zip(index, kept)):
            out[index] += value
    if op._attrs["keep_dims"]:
        out = out.reshape(tuple(1 if d in reduced else int(shape[d]) for d in range(shape.size)))
    return [out]


@register
class SparseReduceSum(OpType):
    inputs = ["input_indices: int64", "input_values: T", "input_shape: int64", "reduction_axes: int32"]
    outputs = ["output: T"]
    attrs = {"keep_dims": Attr("bool", False), "T": Attr("type")}
    host_fallback = True  # an input_shape known only at run time: on the host

    def infer(op):
        return ic.run_shape_fn(op, _sparse_reduce_shape)

    lower = _lower_sparse_reduce_sum
    host = staticmethod(_sparse_reduce_sum_host)

    def gradient(op, out_grad):
        """_SparseReduceSumGrad: the output gradient gathered at each entry's reduced index."""
        from .array_ops import reshape
        from .math_ops import cast, floordiv, reduced_shape
        from .scatter_ops import gather_nd

        sp_indices = op.inputs[0]
        sp_shape = op.inputs[2]
        output_shape_kept_dims = reduced_shape(sp_shape, op.inputs[3])
        out_grad_reshaped = reshape(out_grad, output_shape_kept_dims)
        scale = floordiv(sp_shape, cast(output_shape_kept_dims, dtypes.int64))
        return [None, gather_nd(out_grad_reshaped, floordiv(sp_indices, scale)), None, None]


def _sparse_reduction_dims(sp_input, axis):
    """math_ops._ReductionDims for a SparseTensor."""
    from .array_ops import size
    from .constant_op import constant
    from .selection_ops import range as tf_range

    if axis is not None:
        return axis
    rank = sp_input.shape.ndims
    if rank:
        return constant(np.arange(rank, dtype=np.int32))
    return tf_range(0, size(sp_input.dense_shape))


def sparse_reduce_sum(sp_input, axis=None, keepdims=None, reduction_axes=None, keep_dims=None):
    """tf.sparse.reduce_sum (TF1): a dense sum over ``axis`` (all axes by default)."""
    if keepdims is None:
        keepdims = keep_dims
    if axis is None:
        axis = reduction_axes
    if keepdims is None:
        keepdims = False
    sp_input = convert_to_sparse_tensor(sp_input)
    return apply_op("SparseReduceSum", [sp_input.indices, sp_input.values, sp_input.dense_shape,
                                        _sparse_reduction_dims(sp_input, axis)],
                    {"keep_dims": bool(keepdims)}).outputs[0]


# =====================================================================================
# SparseTensorDenseMatMul
# =====================================================================================
def _sparse_dense_matmul_shape(ctx):
    ic.with_rank(ctx.input(0), 2)
    ic.with_rank(ctx.input(1), 1)
    a_shape = ic.with_rank(ctx.shape_from_shape_tensor(2), 2)
    b = ic.with_rank(ctx.input(3), 2)
    adjoint_a, adjoint_b = ctx.attr("adjoint_a"), ctx.attr("adjoint_b")
    output_right = b[0 if adjoint_b else 1]
    output_left = a_shape[1 if adjoint_a else 0]
    inner_left = a_shape[0 if adjoint_a else 1]
    inner_right = b[1 if adjoint_b else 0]
    ic.merge_dim(inner_left, inner_right)
    return [[output_left, output_right]]


def _lower_sparse_dense_matmul(ctx, op, a_indices, a_values, a_shape, b):
    adjoint_a, adjoint_b = op._attrs["adjoint_a"], op._attrs["adjoint_b"]
    if a_indices.type.rank != 2 or a_values.type.rank != 1 or b.type.rank != 2:
        ctx.fail("SparseTensorDenseMatMul needs matrix indices, vector values and a matrix b")
    shape = [ctx.canon(d) for d in ic.static_dims(ctx, a_shape, "SparseTensorDenseMatMul's a_shape")]
    if len(shape) != 2 or ctx.canon(a_indices.type.shape[1]) != 2:
        ctx.fail("Tensor 'a_shape' must have 2 elements")
    b_dims = [ctx.canon(d) for d in b.type.shape]
    outer_left = shape[1] if adjoint_a else shape[0]
    inner_left = shape[0] if adjoint_a else shape[1]
    outer_right = b_dims[0] if adjoint_b else b_dims[1]
    inner_right = b_dims[1] if adjoint_b else b_dims[0]
    if isinstance(inner_left, int) and isinstance(inner_right, int) and inner_left != inner_right:
        ctx.fail("inner dimensions do not match")  # the host raises TF's message
    a0, a1, left, right = _dims_scalars(ctx, [shape[0], shape[1], inner_left, inner_right])
    _assert(ctx, ctx.b.value("compare", [left, right], {"dir": "eq"}),
            ["Cannot multiply A and B because inner dimension does not match: ", left, " vs. ", right,
             ".  Did you forget a transpose?  Dimensions of A: [", a0, ", ", a1, ").  Dimensions of B: ",
             *_shape_text(ctx, b_dims)])
    count = ctx.unify(ctx.canon(a_indices.type.shape[0]), ctx.canon(a_values.type.shape[0]),
                      (tuple(a_indices.type.shape), tuple(a_values.type.shape)))
    rows = _as_rows(ctx, a_indices, count, 2)
    lhs_index, rhs_index = (1, 0) if adjoint_a else (0, 1)
    m, k = _column(ctx, rows, lhs_index), _column(ctx, rows, rhs_index)
    zero = ctx.scalar(0, _I64)
    k_bad = _any(ctx, _cmp(ctx, k, zero, "lt"), _cmp(ctx, k, right, "ge"))
    out_rows = ic.dim_scalar(ctx, outer_left, _I64)
    m_bad = _any(ctx, _cmp(ctx, m, zero, "lt"), _cmp(ctx, m, out_rows, "ge"))
    code = _select(ctx, k_bad, ctx.scalar(1, _I32), _select(ctx, m_bad, ctx.scalar(2, _I32), ctx.scalar(0, _I32)))
    _, pos, kind, m_at, k_at = _first(ctx, _cmp(ctx, code, ctx.scalar(0, _I32), "ne"), code, m, k)
    _assert(ctx, _cmp(ctx, kind, ctx.scalar(1, _I32), "ne"),
            ["k (", k_at, ") from index[", pos, f",{rhs_index}] out of bounds (>=", right, ")"])
    _assert(ctx, _cmp(ctx, kind, ctx.scalar(2, _I32), "ne"),
            ["m (", m_at, ") from index[", pos, f",{lhs_index}] out of bounds (>=", out_rows, ")"])
    k = _select(ctx, k_bad, zero, k)
    m = _select(ctx, m_bad, zero, m)
    b_eff = ctx.transpose(b, [1, 0]) if adjoint_b else b
    gathered = ctx.b.value("gather", [b_eff, k], {"axis": 0})
    width = ctx.canon(outer_right)
    products = ctx.b.value("mul", [gathered, ctx.broadcast_in_dim(a_values, (count, width), [0])])
    zeros = _full(ctx, 0, b.type.elem, (outer_left, width))
    return ctx.b.value("scatter_add", [zeros, m, products], {"axis": 0})


def _sparse_dense_matmul_host(op, a_indices, a_values, a_shape, b):
    adjoint_a, adjoint_b = op._attrs["adjoint_a"], op._attrs["adjoint_b"]
    a_indices, a_values = np.asarray(a_indices).astype(np.int64), np.asarray(a_values)
    a_shape, b = np.asarray(a_shape, np.int64), np.asarray(b)

    def fail(message):
        raise InvalidArgumentError(None, op, message)

    if a_shape.ndim != 1:
        fail("Tensor 'a_shape' is not a vector")
    if a_shape.size != 2:
        fail("Tensor 'a_shape' must have 2 elements")
    if a_values.ndim != 1:
        fail("Tensor 'a_values' is not a vector")
    if a_indices.ndim != 2:
        fail("Tensor 'a_indices' is not a matrix")
    nnz = a_indices.shape[0]
    if nnz != a_values.size:
        fail("Number of rows of a_indices does not match number of entries in a_values")
    if a_indices.shape[1] != a_shape.size:
        fail("Number of columns of a_indices does not match number of entries in a_shape")
    if b.ndim != 2:
        fail("Tensor 'b' is not a matrix")
    outer_left = a_shape[1] if adjoint_a else a_shape[0]
    outer_right = b.shape[0] if adjoint_b else b.shape[1]
    inner_left = a_shape[0] if adjoint_a else a_shape[1]
    inner_right = b.shape[1] if adjoint_b else b.shape[0]
    if inner_right != inner_left:
        fail(f"Cannot multiply A and B because inner dimension does not match: {inner_left} vs. {inner_right}.  Did "
             f"you forget a transpose?  Dimensions of A: [{a_shape[0]}, {a_shape[1]}).  Dimensions of B: "
             f"{_shape_str(b.shape)}")
    b_eff = np.conj(b.T) if adjoint_b else b
    values = np.conj(a_values) if adjoint_a else a_values
    lhs_index, rhs_index = (1, 0) if adjoint_a else (0, 1)
    out = np.zeros((int(outer_left), int(outer_right)), dtype=b.dtype)
    for i in range(nnz):
        m, k = int(a_indices[i, lhs_index]), int(a_indices[i, rhs_index])
        if not 0 <= k < inner_right:
            fail(f"k ({k}) from index[{i},{rhs_index}] out of bounds (>={inner_right})")
        if not 0 <= m < outer_left:
            fail(f"m ({m}) from index[{i},{lhs_index}] out of bounds (>={outer_left})")
        out[m] += values[i] * b_eff[k]
    return [out]


@register
class SparseTensorDenseMatMul(OpType):
    inputs = ["a_indices: Tindices", "a_values: T", "a_shape: int64", "b: T"]
    outputs = ["product: T"]
    attrs = {"T": Attr("type"), "Tindices": Attr("type", dtypes.int64, allowed=INDEX_TYPES),
             "adjoint_a": Attr("bool", False), "adjoint_b": Attr("bool", False)}
    host_fallback = True  # an a_shape known only at run time: on the host

    def infer(op):
        return ic.run_shape_fn(op, _sparse_dense_matmul_shape)

    lower = _lower_sparse_dense_matmul
    host = staticmethod(_sparse_dense_matmul_host)

    def gradient(op, grad):
        """_SparseTensorDenseMatMulGrad: b's gradient is A^T grad; each value's the dot of its
        row of grad with its row of b."""
        from .array_ops import expand_dims, squeeze, transpose
        from .math_ops import matmul
        from .selection_ops import gather

        a_indices, a_values, a_shape = op.inputs[:3]
        b = op.inputs[3]
        adj_a = op._attrs["adjoint_a"]
        adj_b = op._attrs["adjoint_b"]
        a_type = a_values.dtype.base_dtype
        b_type = b.dtype.base_dtype
        if a_type != b_type:
            raise TypeError(f"SparseTensorDenseMatMul op received operands with different types: `{a_type}` and "
                            f"`{b_type}`.")
        b_grad = apply_op("SparseTensorDenseMatMul", [a_indices, a_values, a_shape, grad],
                          {"adjoint_a": not adj_a}).outputs[0]
        if adj_b:
            b_grad = transpose(b_grad, [1, 0])
        rows = a_indices[:, 0]
        cols = a_indices[:, 1]
        parts_a = gather(grad, rows if not adj_a else cols)
        parts_b = gather(b if not adj_b else transpose(b), cols if not adj_a else rows)
        if not adj_a and not adj_b:
            a_values_grad = matmul(expand_dims(parts_a, -2), expand_dims(parts_b, -2), adjoint_b=True)
        elif adj_a and not adj_b:
            a_values_grad = matmul(expand_dims(parts_a, -1), expand_dims(parts_b, -1), adjoint_a=True)
        elif not adj_a and adj_b:
            a_values_grad = matmul(expand_dims(parts_a, -2), expand_dims(parts_b, -1))
        else:
            a_values_grad = matmul(expand_dims(parts_a, -1), expand_dims(parts_b, -2), adjoint_a=True,
                                   adjoint_b=True)
        return [None, squeeze(a_values_grad, axis=[-2, -1]), None, b_grad]


def sparse_tensor_dense_matmul(sp_a, b, adjoint_a=False, adjoint_b=False, name=None):
    """tf.sparse.sparse_dense_matmul / tf.sparse_tensor_dense_matmul: SparseTensor A times
    dense B (either may be adjoint); B sparse computes (B^T A^T)^T."""
    from ..convert import convert_to_tensor
    from .array_ops import transpose

    if isinstance(b, (SparseTensor, SparseTensorValue)):
        if adjoint_a != adjoint_b:
            return transpose(sparse_tensor_dense_matmul(b, sp_a, adjoint_a, adjoint_b))
        return transpose(sparse_tensor_dense_matmul(b, sp_a, adjoint_a=not adjoint_a, adjoint_b=not adjoint_b))
    sp_a = convert_to_sparse_tensor(sp_a)
    with name_scope(name, "SparseTensorDenseMatMul", [sp_a.indices, sp_a.values, b]) as name:
        b = convert_to_tensor(b, name="b")
        return apply_op("SparseTensorDenseMatMul", [sp_a.indices, sp_a.values, sp_a.dense_shape, b],
                        {"adjoint_a": adjoint_a, "adjoint_b": adjoint_b}).outputs[0]


# =====================================================================================
# SparseDenseCwiseMul / Div (SparseTensor * dense, SparseTensor / dense)
# =====================================================================================
def _sparse_dense_cwise_shape(ctx):
    return [[ctx.input(0)[0] if ctx.input(0) is not None else None]]


def _lower_sparse_dense_cwise(kind):
    def lower(ctx, op, indices, values, shape, dense):
        rank = _static_length(ctx, shape, f"{op.type}'s sp_shape")
        if indices.type.rank != 2 or values.type.rank != 1 or dense.type.rank > rank:
            ctx.fail(f"{op.type} needs a dense operand of rank at most the sparse one's")
        count = ctx.unify(ctx.canon(indices.type.shape[0]), ctx.canon(values.type.shape[0]),
                          (tuple(indices.type.shape), tuple(values.type.shape)))
        rows = _as_rows(ctx, indices, count, rank)
        dense_dims = [ctx.canon(d) for d in dense.type.shape]
        offset = rank - len(dense_dims)
        sparse_sizes = _scalars(ctx, ctx.convert(shape, _I64), rank)
        dense_sizes = _dims_scalars(ctx, dense_dims)
        one = ctx.scalar(1, _I64)
        fits = ctx.constant(np.array(True))
        for d, size in enumerate(dense_sizes):
            fits = ctx.b.value("and", [fits, ctx.b.value("or", [
                ctx.b.value("compare", [size, one], {"dir": "eq"}),
                ctx.b.value("compare", [size, sparse_sizes[offset + d]], {"dir": "eq"})])])
        _assert(ctx, fits, ["SparseDenseBinaryOpShared broadcasts dense to sparse only; got incompatible shapes: ",
                            *_list_text(sparse_sizes), " vs. ", *_list_text(dense_sizes)])
        # the dense element each entry sees: its index mod the dense extent (0 on broadcast dims)
        linear = _full(ctx, 0, _I64, (count,))
        for d, size in enumerate(dense_sizes):
            column = ctx.elementwise("rem", _column(ctx, rows, offset + d), ctx.b.value("max", [size, one]))
            linear = ctx.elementwise("add", ctx.elementwise("mul", linear, size), column)
        flat = ctx.reshape(dense, (dims_product(dense_dims),))
        picked = ctx.b.value("gather", [flat, linear], {"axis": 0})
        return ctx.b.value(kind, [values, picked])

    return lower


def _sparse_dense_cwise_grad(is_mul):
    def gradient(op, grad):
        """_SparseDenseCwiseMulOrDivGrad."""
        from .array_ops import expand_dims, ones, shape as tf_shape, size, zeros_like
        from .concat_ops import concat
        from .math_ops import cast, floordiv, square
        from .slicing import slice as tf_slice
        from .scatter_ops import gather_nd

        x_indices = op.inputs[0]
        x_shape = op.inputs[2]
        y = op.inputs[3]
        y_shape = cast(tf_shape(y), dtypes.int64)
        num_added_dims = expand_dims(size(x_shape) - size(y_shape), 0)
        augmented_y_shape = concat([ones(num_added_dims, dtypes.int64), y_shape], 0)
        scaling = floordiv(x_shape, augmented_y_shape)
        scaled_indices = floordiv(x_indices, scaling)
        scaled_indices = tf_slice(scaled_indices, concat([[0], num_added_dims], 0), [-1, -1])
        dense_vals = gather_nd(y, scaled_indices)
        if is_mul:
            dx = grad * dense_vals
            dy_val = grad * op.inputs[1]
        else:
            dx = grad / dense_vals
            dy_val = grad * (-op.inputs[1] / square(dense_vals))
        dy = sparse_add(zeros_like(y), SparseTensor(scaled_indices, dy_val, y_shape))
        return [None, dx, None, dy]

    return gradient


def _sparse_dense_cwise_host(function):
    def host(op, indices, values, shape, dense):
        indices, values = np.asarray(indices, np.int64), np.asarray(values)
        shape, dense = np.asarray(shape, np.int64), np.asarray(dense)
        offset = shape.size - dense.ndim
        if offset < 0 or any(d not in (1, shape[offset + k]) for k, d in enumerate(dense.shape)):
            raise InvalidArgumentError(None, op, f"SparseDenseBinaryOpShared broadcasts dense to sparse only; got "
                                                 f"incompatible shapes: {_shape_str(shape)} vs. "
                                                 f"{_shape_str(dense.shape)}")
        picked = np.array([dense[tuple(int(row[offset + k]) % max(d, 1) for k, d in enumerate(dense.shape))]
                           for row in indices], dtype=dense.dtype).reshape(-1)
        return [function(values, picked).astype(values.dtype)]

    return host


@register
class SparseDenseCwiseMul(OpType):
    inputs = ["sp_indices: int64", "sp_values: T", "sp_shape: int64", "dense: T"]
    outputs = ["output: T"]
    attrs = {"T": Attr("type")}
    host_fallback = True  # a rank known only at run time: on the host

    def infer(op):
        return ic.run_shape_fn(op, _sparse_dense_cwise_shape)

    lower = _lower_sparse_dense_cwise("mul")
    host = staticmethod(_sparse_dense_cwise_host(np.multiply))
    gradient = _sparse_dense_cwise_grad(True)


@register
class SparseDenseCwiseDiv(OpType):
    inputs = ["sp_indices: int64", "sp_values: T", "sp_shape: int64", "dense: T"]
    outputs = ["output: T"]
    attrs = {"T": Attr("type")}
    host_fallback = True  # a rank known only at run time: on the host

    def infer(op):
        return ic.run_shape_fn(op, _sparse_dense_cwise_shape)

    lower = _lower_sparse_dense_cwise("div")
    host = staticmethod(_sparse_dense_cwise_host(lambda a, b: a / b if a.dtype.kind in "fc" else a // b))
    gradient = _sparse_dense_cwise_grad(False)


def sparse_dense_cwise_op(op_type, sp_t, other, op_name):
    """SparseTensor * dense / SparseTensor / dense (TF's operator overloads): a SparseTensor
    with the same indices."""
    from ..convert import convert_to_tensor

    if isinstance(other, SparseTensor):
        raise TypeError(f"unsupported operand: SparseTensor {op_name} SparseTensor")
    with name_scope(None, op_name, [sp_t.indices, sp_t.values, sp_t.dense_shape, other]) as name:
        other = convert_to_tensor(other, dtype=sp_t.values.dtype, name="y")
        values = apply_op(op_type, [sp_t.indices, sp_t.values, sp_t.dense_shape, other], name=name).outputs[0]
    return SparseTensor(sp_t.indices, values, sp_t.dense_shape)


# =====================================================================================
# SparseFillEmptyRows, SparseFillEmptyRowsGrad
# =====================================================================================
def _fill_empty_rows_shape(ctx):
    indices = ic.with_rank(ctx.input(0), 2)
    values = ic.with_rank(ctx.input(1), 1)
    shape = ic.with_rank(ctx.input(2), 1)
    ic.with_rank(ctx.input(3), 0)
    n = ic.merge_dim(indices[0], values[0])
    ic.merge_dim(indices[1], shape[0])
    if shape[0] == 0:
        raise ShapeError("dense_shape must not be empty")
    constant_shape = ctx.shape_from_shape_tensor(2)
    rows = constant_shape[0] if constant_shape else None
    return [[None, shape[0]], [None], [rows], [n]]


def _fill_empty_rows_host(op, indices, values, dense_shape, default_value):
    indices, values = np.asarray(indices, np.int64), np.asarray(values)
    dense_shape, default_value = np.asarray(dense_shape, np.int64), np.asarray(default_value)

    def fail(message):
        raise InvalidArgumentError(None, op, message)

    if dense_shape.ndim != 1:
        fail(f"dense_shape must be a vector, saw: {_shape_str(dense_shape.shape)}")
    if indices.ndim != 2:
        fail(f"indices must be a matrix, saw: {_shape_str(indices.shape)}")
    if values.ndim != 1:
        fail(f"values must be a vector, saw: {_shape_str(values.shape)}")
    if default_value.ndim != 0:
        fail(f"default_value must be a scalar, saw: {_shape_str(default_value.shape)}")
    if indices.shape[0] != values.shape[0]:
        fail(f"The length of `values` ({values.shape[0]}) must match the first dimension of `indices` "
             f"({indices.shape[0]}).")
    if dense_shape.size == 0:
        fail("Dense shape cannot be empty.")
    dense_rows = int(dense_shape[0])
    count = indices.shape[0]
    if dense_rows == 0 and count:
        fail(f"Received SparseTensor with dense_shape[0] = 0 but indices.shape[0] = {count}")
    rows = indices[:, 0] if count else np.zeros(0, np.int64)
    for i, row in enumerate(rows):
        if row < 0:
            fail(f"indices({i}, 0) is invalid: {row} < 0")
        if row >= dense_rows:
            fail(f"indices({i}, 0) is invalid: {row} >= {dense_rows}")
    counts = np.bincount(rows, minlength=dense_rows)[:dense_rows] if count else np.zeros(dense_rows, np.int64)
    empty = counts == 0
    rank = dense_shape.size
    # each row's entries in input order, a default entry [row, 0, ...] for an empty row
    starts = np.concatenate([[0], np.cumsum(counts + empty)])[:-1]
    total = int(np.sum(counts + empty))
    out_indices = np.zeros((total, rank), np.int64)
    out_values = np.empty((total,), dtype=values.dtype)
    reverse = np.zeros((count,), np.int64)
    filled = np.zeros(dense_rows, np.int64)
    for i in range(count):
        row = int(rows[i])
        position = starts[row] + filled[row]
        filled[row] += 1
        out_indices[position] = indices[i]
        out_values[position] = values[i]
        reverse[i] = position
    for row in np.flatnonzero(empty):
        out_indices[starts[row], 0] = row
        out_values[starts[row]] = default_value
    return [out_indices, out_values, empty, reverse]


@register
class SparseFillEmptyRows(OpType):
    inputs = ["indices: int64", "values: T", "dense_shape: int64", "default_value: T"]
    outputs = ["output_indices: int64", "output_values: T", "empty_row_indicator: bool",
               "reverse_index_map: int64"]
    attrs = {"T": Attr("type")}
    host_only = True  # one more entry per empty row: known only at run time

    def infer(op):
        return ic.run_shape_fn(op, _fill_empty_rows_shape)

    host = staticmethod(_fill_empty_rows_host)

    def gradient(op, unused_grad_output_indices, output_grad_values, unused_grad_empty_row_indicator,
                 unused_grad_reverse_index_map):
        """_SparseFillEmptyRowsGrad."""
        reverse_index_map = op.outputs[3]
        d_values, d_default_value = apply_op("SparseFillEmptyRowsGrad",
                                             [reverse_index_map, output_grad_values]).outputs
        return [None, d_values, None, d_default_value]


def _fill_empty_rows_grad_shape(ctx):
    reverse_index_map = ic.with_rank(ctx.input(0), 1)
    ic.with_rank(ctx.input(1), 1)
    return [reverse_index_map, []]


def _lower_fill_empty_rows_grad(ctx, op, reverse_index_map, grad_values):
    count = ctx.canon(reverse_index_map.type.shape[0])
    total = ctx.canon(grad_values.type.shape[0])
    index = ctx.convert(reverse_index_map, _I64)
    bound = ic.dim_scalar(ctx, total, _I64)
    bad = _any(ctx, _cmp(ctx, index, ctx.scalar(0, _I64), "lt"), _cmp(ctx, index, bound, "ge"))
    holds, pos, value = _first(ctx, bad, index)
    _assert(ctx, holds, ["Elements in reverse index must be in [0, ", bound, ") but got reverse_index_map(", pos,
                         ") = ", value])
    index = _select(ctx, bad, ctx.scalar(0, _I64), index)
    d_values = ctx.b.value("gather", [grad_values, index], {"axis": 0})
    visited = ctx.b.value("scatter_add", [_full(ctx, 0, _I32, (total,)), index, _full(ctx, 1, _I32, (count,))],
                          {"axis": 0})
    unvisited = _select(ctx, _cmp(ctx, visited, ctx.scalar(0, _I32), "gt"), ctx.scalar(0, grad_values.type.elem),
                        grad_values)
    return [d_values, ctx.reduce(unvisited, "sum", [0])]


@register
class SparseFillEmptyRowsGrad(OpType):
    inputs = ["reverse_index_map: int64", "grad_values: T"]
    outputs = ["d_values: T", "d_default_value: T"]
    attrs = {"T": Attr("type")}
    not_differentiable = True

    def infer(op):
        return ic.run_shape_fn(op, _fill_empty_rows_grad_shape)

    lower = _lower_fill_empty_rows_grad


def sparse_fill_empty_rows(sp_input, default_value, name=None):
    """tf.sparse.fill_empty_rows: (the SparseTensor with an entry ``[row, 0, ...] = default_value``
    in each empty row, a bool vector marking those rows)."""
    from ..convert import convert_to_tensor

    sp_input = convert_to_sparse_tensor(sp_input)
    with name_scope(name, "SparseFillEmptyRows", [sp_input]):
        default_value = convert_to_tensor(default_value, dtype=sp_input.values.dtype)
        output_indices, output_values, empty_row_indicator, _ = apply_op(
            "SparseFillEmptyRows", [sp_input.indices, sp_input.values, sp_input.dense_shape, default_value]).outputs
        return SparseTensor(indices=output_indices, values=output_values,
                            dense_shape=sp_input.dense_shape), empty_row_indicator


# =====================================================================================
# SparseConcat
# =====================================================================================
def _sparse_concat_shape(ctx):
    n = ctx.attr("N")
    rows = 0
    cols = None
    shape = None
    for i in range(n):
        indices = ic.with_rank(ctx.input(i), 2)
        values = ic.with_rank(ctx.input(i + n), 1)
        dense_shape = ic.with_rank(ctx.input(i + 2 * n), 1)
        count = ic.merge_dim(indices[0], values[0])
        rows = ic.add_dims(rows, count)
        cols = ic.merge_dim(cols, indices[1])
        shape = dense_shape if shape is None else ic.merge(shape, dense_shape)
    return [[rows, cols], [rows], shape]


def _concat_axis(rank, concat_dim, fail):
    if concat_dim < -rank or concat_dim >= rank:
        fail(f"Concat dimension must be in range [{-rank}, {rank}), got {concat_dim}")
    return concat_dim + rank if concat_dim < 0 else concat_dim


def _lower_sparse_concat(ctx, op, *inputs):
    n = op._attrs["N"]
    indices, values, shapes = inputs[:n], inputs[n:2 * n], inputs[2 * n:]
    rank = _static_length(ctx, shapes[0], "SparseConcat's shapes")
    for s in shapes[1:]:
        if _static_length(ctx, s, "SparseConcat's shapes") != rank:
            ctx.fail("Ranks of all input tensors should match")
    axis = _concat_axis(rank, op._attrs["concat_dim"], ctx.fail)
    sizes = [_scalars(ctx, s, rank) for s in shapes]
    for i in range(1, n):
        for j in range(rank):
            if j != axis:
                _assert(ctx, ctx.b.value("compare", [sizes[i][j], sizes[0][j]], {"dir": "eq"}),
                        ["Input shapes must match: expected ", sizes[0][j], f" for dimension {j} but got ",
                         sizes[i][j], f" at position {i}"])
    offset = ctx.scalar(0, _I64)
    shifted, counts = [], []
    unit = np.zeros(rank, np.int64)
    unit[axis] = 1
    unit = ctx.constant(unit)
    for i in range(n):
        count = ctx.unify(ctx.canon(indices[i].type.shape[0]), ctx.canon(values[i].type.shape[0]),
                          (tuple(indices[i].type.shape), tuple(values[i].type.shape)))
        ctx.unify(ctx.canon(indices[i].type.shape[1]), rank, (tuple(indices[i].type.shape), (count, rank)))
        rows = ctx.reshape(indices[i], (count, rank))
        shift = ctx.broadcast_in_dim(ctx.elementwise("mul", unit, offset), (count, rank), [1])
        shifted.append(ctx.b.value("add", [rows, shift]))
        counts.append(count)
        offset = ctx.b.value("add", [offset, sizes[i][axis]])
    rows = ctx.b.value("concatenate", shifted, {"dim": 0})
    all_values = ctx.b.value("concatenate", list(values), {"dim": 0})
    perm = _stable_order(ctx, rows)
    out_shape = _vector(ctx, [offset if j == axis else sizes[0][j] for j in range(rank)])
    return [ctx.b.value("gather", [rows, perm], {"axis": 0}), ctx.b.value("gather", [all_values, perm], {"axis": 0}),
            out_shape]


def _sparse_concat_host(op, *inputs):
    n = op._attrs["N"]
    indices = [np.asarray(t, np.int64) for t in inputs[:n]]
    values = [np.asarray(t) for t in inputs[n:2 * n]]
    shapes = [np.asarray(t, np.int64) for t in inputs[2 * n:]]

    def fail(message):
        raise InvalidArgumentError(None, op, message)

    rank = shapes[0].size
    axis = _concat_axis(rank, op._attrs["concat_dim"], fail)
    for i in range(1, n):
        if shapes[i].size != rank:
            fail(f"Ranks of all input tensors should match: shape[0] = {_shape_str(shapes[0])} vs. shape[{i}] = "
                 f"{_shape_str(shapes[i])}")
        for j in range(rank):
            if j != axis and shapes[i][j] != shapes[0][j]:
                fail(f"Input shapes must match: expected {shapes[0][j]} for dimension {j} but got {shapes[i][j]} at "
                     f"position {i}")
    offset = 0
    shifted = []
    for i in range(n):
        rows = indices[i].reshape(-1, rank).copy()
        rows[:, axis] += offset
        shifted.append(rows)
        offset += int(shapes[i][axis])
    rows = np.concatenate(shifted, axis=0)
    all_values = np.concatenate(values, axis=0)
    order = _lexsort(rows)
    out_shape = shapes[0].copy()
    out_shape[axis] = offset
    return [rows[order], all_values[order], out_shape]


@register
class SparseConcat(OpType):
    inputs = ["indices: N * int64", "values: N * T", "shapes: N * int64"]
    outputs = ["output_indices: int64", "output_values: T", "output_shape: int64"]
    attrs = {"concat_dim": Attr("int"), "N": Attr("int"), "T": Attr("type")}
    not_differentiable = True
    host_fallback = True  # shapes of unknown rank: on the host

    def infer(op):
        return ic.run_shape_fn(op, _sparse_concat_shape)

    lower = _lower_sparse_concat
    host = staticmethod(_sparse_concat_host)


def sparse_concat(axis, sp_inputs, name=None, expand_nonconcat_dim=False, concat_dim=None,
                  expand_nonconcat_dims=None):
    """tf.sparse.concat (TF1): the SparseTensors concatenated along ``axis``, entries in
    row-major order."""
    from ..tensor_shape import TensorShape, dimension_at_index, unknown_shape
    from .array_ops import reshape
    from .concat_ops import concat
    from .constant_op import constant
    from .math_ops import reduce_max

    if expand_nonconcat_dims is not None:
        expand_nonconcat_dim = expand_nonconcat_dims
    if concat_dim is not None:
        axis = concat_dim
    if not isinstance(sp_inputs, (list, tuple)):
        raise TypeError("Inputs must be a list or tuple.")
    sp_inputs = [convert_to_sparse_tensor(sp) for sp in sp_inputs]
    if len(sp_inputs) == 1:
        return sp_inputs[0]
    inds = [sp.indices for sp in sp_inputs]
    vals = [sp.values for sp in sp_inputs]
    shapes = [sp.dense_shape for sp in sp_inputs]
    if expand_nonconcat_dim:
        max_shape = reduce_max(concat([reshape(shape, [1, -1]) for shape in shapes], 0), 0)
        shapes = [concat([max_shape[:axis], shape[-1:] if axis == -1 else shape[axis:axis + 1],
                          [] if axis == -1 else max_shape[axis + 1:]], 0) for shape in shapes]
    output_ind, output_val, output_shape = apply_op("SparseConcat", [inds, vals, shapes],
                                                    {"concat_dim": int(axis)}, name=name).outputs
    input_shapes = [inp.shape for inp in sp_inputs]
    if all(shape.ndims is not None for shape in input_shapes):
        if expand_nonconcat_dim:
            static_output_shape = []
            for dim in range(input_shapes[0].ndims):
                static_output_shape.append(max(dimension_at_index(shape, dim) for shape in input_shapes))
        else:
            static_output_shape = input_shapes[0].as_list()
        static_output_shape[axis] = sum(dimension_at_index(shape, axis) for shape in input_shapes)
    else:
        static_output_shape = unknown_shape()
    if all(shape.is_fully_defined() for shape in input_shapes):
        output_shape = constant(TensorShape(static_output_shape).as_list(), dtype=dtypes.int64)
        return SparseTensor(output_ind, output_val, output_shape)
    output = SparseTensor(output_ind, output_val, output_shape)
    output.set_shape(TensorShape(static_output_shape))
    return output


# =====================================================================================
# Built from other ops: retain, from_dense
# =====================================================================================
def sparse_retain(sp_input, to_retain):
    """tf.sparse.retain: the entries where the bool vector ``to_retain`` is true."""
    from ..convert import convert_to_tensor
    from ..tensor_shape import dimension_at_index
    from .array_ops import identity, reshape
    from .selection_ops import gather, where_v2

    sp_input = convert_to_sparse_tensor(sp_input)
    to_retain = convert_to_tensor(to_retain)
    retain_shape = to_retain.shape
    retain_shape.assert_has_rank(1)
    if sp_input.values.shape.dims is not None:
        sp_input.values.shape.dims[0].assert_is_compatible_with(dimension_at_index(retain_shape, 0))
    where_true = reshape(where_v2(to_retain), [-1])
    new_indices = gather(sp_input.indices, where_true)
    new_values = gather(sp_input.values, where_true)
    return SparseTensor(new_indices, new_values, identity(sp_input.dense_shape))


def from_dense(tensor, name=None):
    """tf.sparse.from_dense: the nonzero elements of a dense tensor (Where, GatherNd)."""
    from ..convert import convert_to_tensor
    from .array_ops import shape as tf_shape, zeros_like
    from .math_ops import not_equal
    from .scatter_ops import gather_nd
    from .selection_ops import where_v2

    with name_scope(name, "dense_to_sparse"):
        tensor = convert_to_tensor(tensor)
        indices = where_v2(not_equal(tensor, zeros_like(tensor)))
        values = gather_nd(tensor, indices)
        shape = tf_shape(tensor, out_type=dtypes.int64)
        return SparseTensor(indices, values, shape)


TF_EXPORTS = {
    "sparse_to_dense": sparse_to_dense, "sparse_tensor_to_dense": sparse_tensor_to_dense,
    "sparse_reorder": sparse_reorder, "sparse_reshape": sparse_reshape, "sparse_add": sparse_add,
    "sparse_reduce_sum": sparse_reduce_sum, "sparse_tensor_dense_matmul": sparse_tensor_dense_matmul,
    "sparse_retain": sparse_retain, "sparse_fill_empty_rows": sparse_fill_empty_rows,
    "sparse_concat": sparse_concat,
}
SPARSE_EXPORTS = {
    "to_dense": sparse_tensor_to_dense, "reorder": sparse_reorder, "reshape": sparse_reshape, "add": sparse_add,
    "reduce_sum": sparse_reduce_sum, "sparse_dense_matmul": sparse_tensor_dense_matmul,
    "matmul": sparse_tensor_dense_matmul, "retain": sparse_retain, "fill_empty_rows": sparse_fill_empty_rows,
    "concat": sparse_concat, "from_dense": from_dense,
}
