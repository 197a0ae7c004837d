"""N-d gathers and scatters: GatherNd, ScatterNd, TensorScatterUpdate/Add/Sub and the ref
variable updates ScatterUpdate/ScatterAdd/ScatterSub (tf.gather_nd, tf.scatter_nd,
tf.tensor_scatter_update/add/sub, tf.scatter_update/add/sub).

Entries follow TF 1.15's OpDefs and C++ shape functions (array_ops.cc, state_ops.cc);
gradients are array_grad.py's. Compiled, an n-d index becomes one linear index into the
leading dims (a core ``gather``/``scatter_add`` on axis 0 of a reshaped tensor); bad
indices are a run-time ``check`` with TF's CPU kernel message (TF raises where XLA would
clamp or skip). ``tensor_scatter_update`` / ``scatter_update`` with repeated indices keep
the last update, as TF's CPU kernels (which apply them in order) do.
"""
from __future__ import annotations

import numpy as np

from tfc import ir
from tfc.ir.dims import dims_product

from .. import dtypes
from ..op_helper import apply_op
from ..registry import Attr, OpType, ShapeError, register
from . import inference_context as ic

INDEX_TYPES = (dtypes.int32, dtypes.int64)
_I64 = ir.ElemType.I64
_I32 = ir.ElemType.I32
_PRED = ir.ElemType.PRED


# =====================================================================================
# Lowering helpers
# =====================================================================================
def _tt(elem, shape):
    return ir.TensorType(elem, tuple(shape))


def _shape_text(ctx, dims) -> list:
    """Pieces of TF's ``TensorShape::DebugString`` ("[3,2]"): strings, and scalar values
    for dims known only at run time."""
    pieces = ["["]
    for i, d in enumerate(dims):
        if i:
            pieces.append(",")
        d = ctx.canon(d)
        pieces.append(str(d) if isinstance(d, int) else ic.dim_scalar(ctx, d, _I64))
    pieces.append("]")
    return pieces


def _emit_message_check(ctx, holds, pieces) -> None:
    """A ``check`` of kind ``assert`` failing with the text and scalar values of ``pieces``."""
    text, values = [""], []
    for piece in pieces:
        if isinstance(piece, str):
            text[-1] += piece
        else:
            values.append(piece)
            text.append("")
    ctx.b.op("check", [holds, *values], {"kind": "assert", "text": text})


def _scalar_of(ctx, row, k):
    """Element k of a 1-D value, as a scalar."""
    piece = ctx.b.value("slice", [row], {"start": [k], "limit": [k + 1]})
    return ctx.reshape(piece, ())


def _position_pieces(ctx, pos, batch_shape) -> list:
    """TF's SliceDebugString(batch_shape, pos): "" for rank 0, "[i]", "[i,j]"..."""
    rank = len(batch_shape)
    if rank == 0:
        return []
    if rank == 1:
        return ["[", pos, "]"]
    parts = []
    rest = pos
    for d in reversed(batch_shape[1:]):
        size = ic.dim_scalar(ctx, ctx.canon(d), _I64)
        parts.append(ctx.b.value("rem", [rest, size]))
        rest = ctx.b.value("div", [rest, size])
    parts.append(rest)
    pieces = ["["]
    for i, part in enumerate(reversed(parts)):
        if i:
            pieces.append(",")
        pieces.append(part)
    return pieces + ["]"]


def _first_bad(ctx, bad, rows):
    """(holds, position of the first bad row, that row) for a pred[N] ``bad`` and rows [N, D]
    (one zero row is appended so that an empty or all-good ``bad`` has a position)."""
    holds = ctx.b.value("not", [ctx.reduce(bad, "or", [0])])
    padded = ctx.b.value("concatenate", [bad, ctx.constant(np.zeros(1, bool))], {"dim": 0})
    pos = ctx.b.value("argmax", [ctx.convert(padded, _I32)], {"dim": 0}, result_type=_tt(_I64, ()))
    row = None
    if rows is not None:
        zero_row = ctx.broadcast_in_dim(ctx.scalar(0, rows.type.elem), (1,) + tuple(rows.type.shape[1:]), [])
        rows = ctx.b.value("concatenate", [rows, zero_row], {"dim": 0})
        row = ctx.b.value("gather", [rows, pos], {"axis": 0})
    return holds, pos, row


def _statically_valid(ctx, indices, bounds) -> bool:
    """Whether ``indices`` [..., D] is known now and every component is in [0, bounds[k])."""
    known = ctx.static(indices)
    bounds = [ctx.canon(b) for b in bounds]
    if known is None or ic.is_symbolic(known) or not all(isinstance(b, int) for b in bounds):
        return False
    known = np.asarray(known).reshape(tuple(ctx.canon(d) for d in indices.type.shape))
    if not bounds:
        return True
    rows = known.reshape(-1, len(bounds))
    return bool(np.all((rows >= 0) & (rows < np.array(bounds, dtype=np.int64))))


def _linear_index(ctx, op, indices, shape, message_shape, into: str):
    """Indices [..., D] into ``shape`` as one linear i64 index [N] over shape[:D], checked:
    TF's "indices[i] = [a, b] does not index into {into} [3,2]" when a row is out of range."""
    depth = ctx.canon(indices.type.shape[-1])
    batch = tuple(ctx.canon(d) for d in indices.type.shape[:-1])
    count = dims_product(batch) if batch else 1
    rows = ctx.reshape(indices, (count, depth))
    bounds = [ctx.canon(d) for d in shape[:depth]]
    wide = ctx.convert(rows, _I64) if rows.type.elem != _I64 else rows
    linear = None
    bad = None
    for k in range(depth):
        column = ctx.reshape(ctx.b.value("slice", [wide], {"start": [0, k], "limit": [count, k + 1]}), (count,))
        bound = ctx.broadcast_in_dim(ic.dim_scalar(ctx, bounds[k], _I64), (count,), [])
        zero = ctx.broadcast_in_dim(ctx.scalar(0, _I64), (count,), [])
        out = ctx.b.value("or", [ctx.b.value("compare", [column, zero], {"dir": "lt"}),
                                 ctx.b.value("compare", [column, bound], {"dir": "ge"})])
        bad = out if bad is None else ctx.b.value("or", [bad, out])
        linear = column if linear is None else ctx.b.value("add", [ctx.b.value("mul", [linear, bound]), column])
    if linear is None:  # depth 0: every index row names the whole tensor
        linear = ctx.broadcast_in_dim(ctx.scalar(0, _I64), (count,), [])
    elif not _statically_valid(ctx, indices, bounds):
        holds, pos, row = _first_bad(ctx, bad, rows)
        pieces = ["indices", *_position_pieces(ctx, pos, batch), " = ["]
        for k in range(depth):
            if k:
                pieces.append(", ")
            pieces.append(_scalar_of(ctx, row, k))
        pieces += [f"] does not index into {into} ", *_shape_text(ctx, message_shape)]
        _emit_message_check(ctx, holds, pieces)
    return linear, count, depth


def _last_wins(ctx, linear, count):
    """pred[N]: whether no later index equals this one (TF's CPU kernels apply updates in
    order, so the last of repeated indices is what remains)."""
    known = ctx.static(linear)
    if known is not None and not ic.is_symbolic(known):
        flat = np.asarray(known).reshape(-1)
        keep = np.ones(flat.size, bool)
        seen = set()
        for i in range(flat.size - 1, -1, -1):
            keep[i] = flat[i] not in seen
            seen.add(flat[i])
        return ctx.constant(keep)
    if isinstance(count, int) and count <= 1:
        return ctx.constant(np.ones(count, bool))
    square = (count, count)
    a = ctx.broadcast_in_dim(linear, square, [0])
    b = ctx.broadcast_in_dim(linear, square, [1])
    later = ctx.b.value("compare", [ctx.b.value("iota", [], {"dim": 1}, result_type=_tt(_I32, square)),
                                    ctx.b.value("iota", [], {"dim": 0}, result_type=_tt(_I32, square))],
                        {"dir": "gt"})
    repeated = ctx.b.value("and", [ctx.b.value("compare", [a, b], {"dir": "eq"}), later])
    return ctx.b.value("not", [ctx.reduce(repeated, "or", [1])])


def _scatter_rows(ctx, base, linear, updates, mode: str):
    """``base`` [M, inner...] with rows ``linear`` [N] updated by ``updates`` [N, inner...]:
    mode add / sub / update (last of repeated indices wins)."""
    count = ctx.canon(linear.type.shape[0])
    elem = base.type.elem
    zeros = ctx.broadcast_in_dim(ctx.scalar(0, elem), tuple(base.type.shape), [])
    if mode == "update":
        keep = _last_wins(ctx, linear, count)
        upd_keep = ctx.broadcast_in_dim(keep, tuple(updates.type.shape), [0])
        updates = ctx.b.value("select", [upd_keep, updates, ctx.broadcast_in_dim(
            ctx.scalar(0, elem), tuple(updates.type.shape), [])])
        rows = tuple(base.type.shape[:1])
        hits = ctx.b.value("scatter_add", [ctx.broadcast_in_dim(ctx.scalar(0, _I32), rows, []), linear,
                                           ctx.broadcast_in_dim(ctx.scalar(1, _I32), (count,), [])], {"axis": 0})
        hit = ctx.b.value("compare", [hits, ctx.broadcast_in_dim(ctx.scalar(0, _I32), rows, [])], {"dir": "gt"})
        hit = ctx.broadcast_in_dim(hit, tuple(base.type.shape), [0])
        scattered = ctx.b.value("scatter_add", [zeros, linear, updates], {"axis": 0})
        return ctx.b.value("select", [hit, scattered, base])
    if mode == "sub":
        updates = ctx.b.value("neg", [updates])
    return ctx.b.value("scatter_add", [base, linear, updates], {"axis": 0})


# =====================================================================================
# GatherNd
# =====================================================================================
def _gather_nd_shape(ctx):
    params = ctx.input(0)
    indices = ic.with_rank_at_least(ctx.input(1), 1)
    if indices is None or indices[-1] is None or params is None:
        return [None]
    depth = indices[-1]
    if depth > len(params):
        raise ShapeError(f"indices.shape[-1] must be <= params.rank, but saw indices shape: "
                         f"{ic.debug_string(indices)} and params shape: {ic.debug_string(params)}")
    return [indices[:-1] + params[depth:]]


def _lower_gather_nd(ctx, op, params, indices):
    shape = tuple(ctx.canon(d) for d in params.type.shape)
    depth = ctx.canon(indices.type.shape[-1]) if indices.type.rank else None
    if depth is None or not isinstance(depth, int):
        ctx.fail("GatherNd's indices need a known last dimension")
    if depth > len(shape):
        ctx.fail(f"indices.shape[-1] must be <= params.rank, but saw indices shape: {list(indices.type.shape)} "
                 f"and params shape: {list(shape)}")
    batch = tuple(ctx.canon(d) for d in indices.type.shape[:-1])
    inner = shape[depth:]
    linear, count, _ = _linear_index(ctx, op, indices, shape, shape, "param shape")
    if depth == 0:
        return ctx.broadcast_in_dim(params, batch + inner, list(range(len(batch), len(batch) + len(inner))))
    outer = dims_product(shape[:depth])
    flat = ctx.reshape(params, (outer,) + inner)
    gathered = ctx.b.value("gather", [flat, linear], {"axis": 0})
    return ctx.reshape(gathered, batch + inner)


@register
class GatherNd(OpType):
    inputs = ["params: Tparams", "indices: Tindices"]
    outputs = ["output: Tparams"]
    attrs = {"Tparams": Attr("type"), "Tindices": Attr("type", allowed=INDEX_TYPES)}

    def infer(op):
        return ic.run_shape_fn(op, _gather_nd_shape)

    lower = _lower_gather_nd

    def gradient(op, grad):
        """_GatherNdGrad; TF's IndexedSlices for [N, 1] indices made dense here (an
        UnsortedSegmentSum, as TF's conversion to a tensor adds)."""
        from .array_ops import shape, squeeze
        from .selection_ops import unsorted_segment_sum

        ref = op.inputs[0]
        indices = op.inputs[1]
        ref_shape = shape(ref, out_type=indices.dtype)
        if indices.shape.ndims == 2 and indices.shape.dims[-1].value == 1:
            ref_grad = unsorted_segment_sum(grad, squeeze(indices, axis=-1), ref_shape[0])
        else:
            ref_grad = scatter_nd(indices, grad, ref_shape)
        return [ref_grad, None]


def gather_nd(params, indices, name=None, batch_dims=0):
    """tf.gather_nd (batch_dims 0)."""
    if batch_dims != 0:
        raise NotImplementedError("tfc implements tf.gather_nd with batch_dims=0 only")
    return apply_op("GatherNd", [params, indices], name=name).outputs[0]


# =====================================================================================
# ScatterNd, TensorScatterUpdate/Add/Sub
# =====================================================================================
def _scatter_nd_update_shape(input_shape, indices, updates, empty_check=True):
    """TF's ScatterNdUpdateShape checks; returns the output shape (the input's)."""
    if input_shape is not None and indices is not None and updates is not None:
        if empty_check and ic.num_elements(input_shape) == 0 and (
                (ic.num_elements(indices) or 0) > 0 or (ic.num_elements(updates) or 0) > 0):
            raise ShapeError("Indices and updates specified for empty output shape")
        outer = len(indices) - 1
        ix = indices[-1]
        try:
            ic.merge(indices[:outer], ic.subshape(updates, 0, outer) if len(updates) >= outer else updates)
        except ShapeError as error:
            raise ShapeError(f"Dimensions [0,{outer}) of indices[shape={ic.debug_string(indices)}] = "
                             f"{ic.debug_string(indices[:outer])} must match dimensions [0,{outer}) of "
                             f"updates[shape={ic.debug_string(updates)}] = "
                             f"{ic.debug_string(updates[:outer])}: {error}") from None
        if ix is not None:
            try:
                ic.merge(input_shape[ix:], updates[outer:])
            except ShapeError as error:
                raise ShapeError(f"Dimensions [{ix},{len(input_shape)}) of input[shape="
                                 f"{ic.debug_string(input_shape)}] = {ic.debug_string(input_shape[ix:])} must "
                                 f"match dimensions [{outer},{len(updates)}) of updates[shape="
                                 f"{ic.debug_string(updates)}] = {ic.debug_string(updates[outer:])}: "
                                 f"{error}") from None
    return [input_shape]


def _scatter_nd_shape(ctx):
    indices = ic.with_rank_at_least(ctx.input(0), 1)
    updates = ctx.input(1)
    shape = ctx.shape_from_shape_tensor(2)
    return _scatter_nd_update_shape(shape, indices, updates)


def _tensor_scatter_shape(ctx):
    indices = ic.with_rank_at_least(ctx.input(1), 1)
    return _scatter_nd_update_shape(ctx.input(0), indices, ctx.input(2))


def _lower_nd_scatter(ctx, op, base, indices, updates, mode: str):
    shape = tuple(ctx.canon(d) for d in base.type.shape)
    if indices.type.rank == 0 or not isinstance(ctx.canon(indices.type.shape[-1]), int):
        ctx.fail(f"{op.type}'s indices need a known last dimension")
    depth = ctx.canon(indices.type.shape[-1])
    if depth > len(shape):
        ctx.fail(f"indices.shape[-1] must be <= shape.rank for {op.type}")
    batch = tuple(ctx.canon(d) for d in indices.type.shape[:-1])
    inner = shape[depth:]
    expected = batch + inner
    if updates.type.rank != len(expected):
        ctx.fail(f"updates must have shape indices.shape[:-1] + shape[indices.shape[-1]:] = {list(expected)}, got "
                 f"{list(updates.type.shape)}")
    for a, b in zip(updates.type.shape, expected):
        ctx.unify(ctx.canon(a), b, (tuple(updates.type.shape), expected))
    linear, count, _ = _linear_index(ctx, op, indices, shape, shape, "shape")
    outer = dims_product(shape[:depth]) if depth else 1
    flat_base = ctx.reshape(base, (outer,) + inner)
    flat_updates = ctx.reshape(updates, (count,) + inner)
    result = _scatter_rows(ctx, flat_base, linear, flat_updates, mode)
    return ctx.reshape(result, shape)


def _lower_scatter_nd(ctx, op, indices, updates, shape):
    dims = ic.static_dims(ctx, shape, "ScatterNd's shape")
    dims = tuple(ctx.canon(d) for d in dims)
    zeros = ctx.broadcast_in_dim(ctx.scalar(0, updates.type.elem), dims, [])
    return _lower_nd_scatter(ctx, op, zeros, indices, updates, "add")


@register
class ScatterNd(OpType):
    inputs = ["indices: Tindices", "updates: T", "shape: Tindices"]
    outputs = ["output: T"]
    attrs = {"T": Attr("type"), "Tindices": Attr("type", allowed=INDEX_TYPES)}

    def infer(op):
        return ic.run_shape_fn(op, _scatter_nd_shape)

    lower = _lower_scatter_nd

    def gradient(op, grad):
        """_ScatterNdGrad."""
        return [None, gather_nd(grad, op.inputs[0]), None]


def _tensor_scatter_lower(mode):
    def lower(ctx, op, tensor, indices, updates):
        return _lower_nd_scatter(ctx, op, tensor, indices, updates, mode)

    return lower


class _TensorScatter(OpType):
    """The tensor_scatter_nd_* ops: ``tensor`` with ``updates`` applied at ``indices``."""

    inputs = ["tensor: T", "indices: Tindices", "updates: T"]
    outputs = ["output: T"]
    attrs = {"T": Attr("type"), "Tindices": Attr("type", allowed=INDEX_TYPES)}

    def infer(op):
        return ic.run_shape_fn(op, _tensor_scatter_shape)


@register
class TensorScatterUpdate(_TensorScatter):
    lower = _tensor_scatter_lower("update")

    def gradient(op, grad):
        """_TensorScatterUpdateGrad."""
        from .array_ops import identity, zeros_like

        indices = op.inputs[1]
        updates_grad = gather_nd(grad, indices)
        tensor_grad = tensor_scatter_update(identity(grad), indices, zeros_like(op.inputs[2], dtype=grad.dtype))
        return [tensor_grad, None, updates_grad]


@register
class TensorScatterAdd(_TensorScatter):
    lower = _tensor_scatter_lower("add")

    def gradient(op, grad):
        """_TensorScatterAddGrad."""
        from .array_ops import identity

        indices = op.inputs[1]
        updates_grad = gather_nd(grad, indices)
        tensor_grad = identity(grad)
        return [tensor_grad, None, updates_grad]


@register
class TensorScatterSub(_TensorScatter):
    lower = _tensor_scatter_lower("sub")

    def gradient(op, grad):
        """_TensorScatterSubGrad."""
        from .array_ops import identity
        from .math_ops import negative

        indices = op.inputs[1]
        updates_grad = gather_nd(grad, indices)
        tensor_grad = identity(grad)
        return [tensor_grad, None, negative(updates_grad)]


def scatter_nd(indices, updates, shape, name=None):
    """tf.scatter_nd: updates summed into zeros of ``shape``."""
    return apply_op("ScatterNd", [indices, updates, shape], name=name).outputs[0]


def tensor_scatter_update(tensor, indices, updates, name=None):
    return apply_op("TensorScatterUpdate", [tensor, indices, updates], name=name).outputs[0]


def tensor_scatter_add(tensor, indices, updates, name=None):
    return apply_op("TensorScatterAdd", [tensor, indices, updates], name=name).outputs[0]


def tensor_scatter_sub(tensor, indices, updates, name=None):
    return apply_op("TensorScatterSub", [tensor, indices, updates], name=name).outputs[0]


# =====================================================================================
# ScatterUpdate, ScatterAdd, ScatterSub (ref variables, updated in place)
# =====================================================================================
def _scatter_update_shape(ctx):
    """ScatterUpdateShape: updates is indices.shape + ref.shape[1:] (or a scalar)."""
    var_shape = ctx.input(0)
    indices = ctx.input(1)
    updates = ctx.input(2)
    if var_shape is not None:
        var_shape = ic.with_rank_at_least(var_shape, 1)
    var_sub = None if var_shape is None else ic.subshape(var_shape, 1)
    concat = None if indices is None or var_sub is None else ic.concatenate(indices, var_sub)
    if updates is not None and len(updates) != 0:
        ic.merge(updates, concat)
    return [var_shape]


def _lower_ref_scatter(mode: str):
    def lower(ctx, op, ref, indices, updates):
        current = ctx.b.value("read", [ref])
        shape = tuple(ctx.canon(d) for d in current.type.shape)
        if not shape:
            ctx.fail(f"{op.type} of a scalar variable: params must be at least 1-D")
        limit = shape[0]
        inner = shape[1:]
        ishape = tuple(ctx.canon(d) for d in indices.type.shape)
        count = dims_product(ishape) if ishape else 1
        flat_idx = ctx.reshape(indices, (count,))
        wide = ctx.convert(flat_idx, _I64) if flat_idx.type.elem != _I64 else flat_idx
        expected = ishape + inner
        if updates.type.rank == 0:
            updates = ctx.broadcast_in_dim(updates, expected, [])
        elif updates.type.rank != len(expected):
            ctx.fail(f"Must have updates.shape = indices.shape + params.shape[1:] or updates.shape = [], got "
                     f"updates.shape {list(updates.type.shape)}, indices.shape {list(ishape)}, params.shape "
                     f"{list(shape)}")
        else:
            for a, b in zip(updates.type.shape, expected):
                ctx.unify(ctx.canon(a), b, (tuple(updates.type.shape), expected))
        if not _statically_valid(ctx, ctx.reshape(indices, (count, 1)), [limit]):
            bound = ctx.broadcast_in_dim(ic.dim_scalar(ctx, limit, _I64), (count,), [])
            zero = ctx.broadcast_in_dim(ctx.scalar(0, _I64), (count,), [])
            bad = ctx.b.value("or", [ctx.b.value("compare", [wide, zero], {"dir": "lt"}),
                                     ctx.b.value("compare", [wide, bound], {"dir": "ge"})])
            holds, pos, row = _first_bad(ctx, bad, ctx.reshape(flat_idx, (count, 1)))
            pieces = ["indices", *_position_pieces(ctx, pos, ishape), " = ", _scalar_of(ctx, row, 0),
                      " is not in [0, ", *([str(limit)] if isinstance(limit, int) else
                                           [ic.dim_scalar(ctx, limit, _I64)]), ")"]
            _emit_message_check(ctx, holds, pieces)
        flat_updates = ctx.reshape(updates, (count,) + inner)
        result = _scatter_rows(ctx, current, wide, flat_updates, mode)
        ctx.b.op("assign", [ref, result])
        return ref

    return lower


def _ref_scatter_entry(name: str, mode: str, locking_default: bool):
    attrs = {"T": Attr("type"), "Tindices": Attr("type", allowed=INDEX_TYPES),
             "use_locking": Attr("bool", locking_default)}
    namespace = {
        "inputs": ["ref: Ref(T)", "indices: Tindices", "updates: T"],
        "outputs": ["output_ref: Ref(T)"],
        "attrs": attrs,
        "stateful": True,
        "not_differentiable": True,
        "infer": staticmethod(lambda op: ic.run_shape_fn(op, _scatter_update_shape)),
        "lower": staticmethod(_lower_ref_scatter(mode)),
    }
    return register(type(name, (OpType,), namespace))


ScatterUpdate = _ref_scatter_entry("ScatterUpdate", "update", True)
ScatterAdd = _ref_scatter_entry("ScatterAdd", "add", False)
ScatterSub = _ref_scatter_entry("ScatterSub", "sub", False)


def _ref_scatter(op_type):
    def scatter(ref, indices, updates, use_locking=None, name=None):
        from .state_ops import _require_ref

        attrs = {} if use_locking is None else {"use_locking": use_locking}
        return apply_op(op_type, [_require_ref(ref, op_type), indices, updates], attrs, name).outputs[0]

    scatter.__name__ = {"ScatterUpdate": "scatter_update", "ScatterAdd": "scatter_add",
                        "ScatterSub": "scatter_sub"}[op_type]
    scatter.__doc__ = f"tf.{scatter.__name__}: a {op_type} op updating the variable in place; returns it."
    return scatter


scatter_update = _ref_scatter("ScatterUpdate")
scatter_add = _ref_scatter("ScatterAdd")
scatter_sub = _ref_scatter("ScatterSub")

TF_EXPORTS = ["gather_nd", "scatter_nd", "tensor_scatter_update", "tensor_scatter_add", "tensor_scatter_sub",
              "scatter_update", "scatter_add", "scatter_sub"]
TF_EXPORTS = {**{n: globals()[n] for n in TF_EXPORTS},
              "tensor_scatter_nd_update": tensor_scatter_update, "tensor_scatter_nd_add": tensor_scatter_add,
              "tensor_scatter_nd_sub": tensor_scatter_sub}
