"""Array ops: placeholders, identities, shapes, reshaping, transposing, fill, tile, pad.

Registry entries mirror TF 1.15's OpDefs (tensorflow/core/ops/array_ops.cc) and their
C++ shape functions (through :mod:`.inference_context`, which reproduces TF's error
messages). The user-facing functions build the same ops under the same names as
tensorflow/python/ops/array_ops.py of TF 1.15.

Packing, concat and split live in :mod:`.concat_ops`; gather, one-hot, select/where
and range in :mod:`.selection_ops`; slicing (``Tensor.__getitem__``) in :mod:`.slicing`.
This module imports them all, so importing it registers the whole array family.
"""
from __future__ import annotations

import functools
import operator

import numpy as np

from tfc import ir
from tfc.ir.dims import SymExpr, dim_floordiv, dim_mul, dim_str, dim_sub, dims_product, sym

from .. import dtypes
from ..convert import convert_to_tensor
from ..graph import Tensor, get_default_graph, name_scope
from ..op_helper import apply_op
from ..registry import Attr, OpType, ShapeError, register
from ..tensor_shape import TensorShape, as_shape
from . import inference_context as ic
from .concat_ops import autopack  # noqa: F401 - convert_to_tensor uses array_ops.autopack
from .constant_op import constant

INDEX_TYPES = (dtypes.int32, dtypes.int64)
ONES_LIKE_TYPES = (dtypes.bfloat16, dtypes.float16, dtypes.float32, dtypes.float64, dtypes.int8, dtypes.uint8,
                   dtypes.int16, dtypes.uint16, dtypes.int32, dtypes.int64, dtypes.complex64, dtypes.complex128,
                   dtypes.bool)

# Used for slicing to specify a new 1 size dimension (tf.newaxis).
newaxis = None


# =====================================================================================
# Lowering helpers
# =====================================================================================
def _pass_through(ctx, op, *values):
    """Identity-like ops: every output is the corresponding input.

    Identity and StopGradient forward a variable's ref (``forwards_refs``): in TF1 their
    output aliases the variable's buffer, so the value is read where a consumer runs —
    after that consumer's control dependencies (``v/read`` under
    ``tf.control_dependencies([inc])`` sees the update).
    """
    return list(values)


def _shape_array(ctx, value) -> np.ndarray:
    out = np.empty(value.type.rank, dtype=object)
    for i, d in enumerate(value.type.shape):
        out[i] = ctx.canon(d)
    return ic.as_dim_array(out)


def _fmt_shape(shape) -> str:
    return "[" + ",".join(dim_str(d) for d in shape) + "]"


def _equate_counts(ctx, have, want, in_shape, out_shape):
    """Make the element counts ``have`` (input) and ``want`` (target) equal: unify a
    symbol when one side is ``c * symbol``, else fail as TF's Reshape does."""
    have, want = ctx.canon(have), ctx.canon(want)
    if have == want:
        return
    if isinstance(have, int) and isinstance(want, int):
        ctx.fail(f"Input to reshape is a tensor with {have} values, but the requested shape has {want}")
    for a, b in ((have, want), (want, have)):
        if isinstance(a, SymExpr) and len(a.terms) == 1:
            (monomial, coeff), = a.terms.items()
            if len(monomial) == 1 and isinstance(monomial[0], str):
                quotient = dim_floordiv(b, coeff)
                if dim_mul(quotient, coeff) == b:
                    ctx.unify(sym(monomial[0]), quotient, (in_shape, out_shape))
                    return
    ctx.fail(f"cannot prove that a tensor of shape {_fmt_shape(in_shape)} ({dim_str(have)} elements) "
             f"fits the shape {_fmt_shape(out_shape)} ({dim_str(want)} elements)")


def _lower_reshape(ctx, op, x, shape):
    target = ic.static_dims(ctx, shape, "Reshape's shape argument")
    in_shape = tuple(x.type.shape)
    wild = [i for i, d in enumerate(target) if isinstance(d, int) and d == -1]
    if len(wild) > 1:
        ctx.fail(f"only one input size may be -1, not both {wild[0]} and {wild[1]}")
    bad = [d for d in target if isinstance(d, int) and d < -1]
    if bad:
        ctx.fail(f"size {target.index(bad[0])} must be non-negative, not {bad[0]}")
    total = dims_product(in_shape)
    if wild:
        known = dims_product(d for i, d in enumerate(target) if i != wild[0])
        if known == 0:
            ctx.fail("Reshape cannot infer the missing input size for an empty tensor unless all specified "
                     "input sizes are non-zero")
        quotient = dim_floordiv(total, known)
        if dim_mul(quotient, known) != total:
            if isinstance(total, int) and isinstance(known, int):
                ctx.fail(f"Input to reshape is a tensor with {total} values, but the requested shape requires "
                         f"a multiple of {known}")
            ctx.fail(f"cannot prove that {dim_str(known)} divides the {dim_str(total)} elements of a tensor of "
                     f"shape {_fmt_shape(in_shape)} (reshape to {_fmt_shape(target)})")
        target[wild[0]] = quotient
    else:
        _equate_counts(ctx, total, dims_product(target), in_shape, target)
    target = tuple(ctx.canon(d) for d in target)
    folded = ic.fold(ctx, lambda v: v.reshape([int(d) for d in target]), [x], x.type.elem) \
        if all(isinstance(d, int) for d in target) else None
    return folded if folded is not None else ctx.reshape(x, target)


def _lower_expand_dims(ctx, op, x, dim):
    rank = x.type.rank
    axis = ic.static_axis(ctx, dim, rank + 1, "ExpandDims' dim")
    shape = list(x.type.shape)
    shape.insert(axis, 1)
    folded = ic.fold(ctx, lambda v: np.expand_dims(v, axis), [x], x.type.elem)
    return folded if folded is not None else ctx.reshape(x, tuple(shape))


def _lower_squeeze(ctx, op, x):
    shape = list(x.type.shape)
    rank = len(shape)
    explicit = {ic.normalize_axis(ctx, d, rank, "squeeze dim") for d in op._attrs["squeeze_dims"]}
    keep = []
    for i, d in enumerate(shape):
        if explicit:
            if i in explicit:
                if isinstance(d, int) and d != 1:
                    ctx.fail(f"Can not squeeze dim[{i}], expected a dimension of 1, got {d}")
                if not isinstance(d, int):
                    ctx.unify(d, 1, (tuple(shape), tuple(shape[:i]) + (1,) + tuple(shape[i + 1:])))
                continue
        elif d == 1:
            continue  # a run-time dim of 1 is specialised to 1, so symbolic dims stay
        keep.append(i)
    out = tuple(ctx.canon(x.type.shape[i]) for i in keep)
    folded = ic.fold(ctx, lambda v: v.reshape([int(d) for d in out]), [x], x.type.elem) \
        if all(isinstance(d, int) for d in out) else None
    return folded if folded is not None else ctx.reshape(x, out)


def _lower_transpose(ctx, op, x, perm):
    rank = x.type.rank
    perm = ic.static_ints(ctx, perm, "Transpose's perm")
    if sorted(perm) != list(range(rank)):
        ctx.fail(f"transpose expects a vector of size {rank}. But input(1) is a vector of size {len(perm)}"
                 if len(perm) != rank else f"{perm} is not a permutation of {rank} dims")
    folded = ic.fold(ctx, lambda v: np.transpose(v, perm), [x], x.type.elem)
    return folded if folded is not None else ctx.transpose(x, perm)


def _static_fill_shape(ctx, dims_value, what):
    dims = ic.static_dims(ctx, dims_value, what)
    for d in dims:
        if isinstance(d, int) and d < 0:
            ctx.fail("Fill dimensions must be >= 0")
    return tuple(dims)


_FOLD_FILL_LIMIT = 1024


def _lower_fill(ctx, op, dims, value):
    shape = _static_fill_shape(ctx, dims, "Fill's dims")
    if value.type.rank != 0:
        ctx.fail(f"value must be a scalar, got a tensor of rank {value.type.rank}")
    if all(isinstance(d, int) for d in shape):
        folded = ic.fold(ctx, lambda v: np.full(shape, v, dtype=v.dtype), [value], value.type.elem,
                         size_limit=_FOLD_FILL_LIMIT)
        if folded is not None:
            return folded
    return ctx.broadcast_in_dim(value, shape, [])


def _lower_filled_like(number):
    def lower(ctx, op, x):
        elem = x.type.elem
        shape = tuple(x.type.shape)
        if ctx.static(x) is not None and all(isinstance(d, int) for d in shape):
            folded = ic.fold(ctx, lambda v: np.full(shape, number, dtype=elem.np_dtype), [x], elem,
                             size_limit=_FOLD_FILL_LIMIT)
            if folded is not None:
                return folded
        return ctx.broadcast_in_dim(ctx.scalar(number, elem), shape, [])

    return lower


def _lower_broadcast_to(ctx, op, x, shape):
    target = tuple(ic.static_dims(ctx, shape, "BroadcastTo's shape"))
    if x.type.rank > len(target):
        ctx.fail(f"Rank of input ({x.type.rank}) must be no greater than rank of output shape ({len(target)})")
    in_shape = tuple(x.type.shape)
    for i in range(1, len(in_shape) + 1):
        d, t = ctx.canon(in_shape[-i]), ctx.canon(target[-i])
        if d == 1 or d == t:
            continue
        if t == 1 or (isinstance(d, int) and isinstance(t, int)):
            ctx.fail(f"Incompatible shapes: {_fmt_shape(in_shape)} vs. {_fmt_shape(target)}")
        ctx.unify(d, t, (in_shape, target))
    target = tuple(ctx.canon(d) for d in target)
    if all(isinstance(d, int) for d in target):
        folded = ic.fold(ctx, lambda v: np.broadcast_to(v, target).copy(), [x], x.type.elem)
        if folded is not None:
            return folded
    return ctx.broadcast_to(x, target)


def _lower_tile(ctx, op, x, multiples):
    reps = ic.static_dims(ctx, multiples, "Tile's multiples")
    rank = x.type.rank
    if len(reps) != rank:
        ctx.fail(f"Expected multiples argument to be a vector of length {rank} but got length {len(reps)}")
    for i, m in enumerate(reps):
        if isinstance(m, int) and m < 0:
            ctx.fail(f"Expected multiples[{i}] >= 0, but got {m}")
    if all(isinstance(m, int) for m in reps):
        folded = ic.fold(ctx, lambda v: np.tile(v, reps), [x], x.type.elem)
        if folded is not None:
            return folded
    wide, dims, out = [], [], []
    for d, m in zip(x.type.shape, reps):
        if not (isinstance(m, int) and m == 1):
            wide.append(m)
        dims.append(len(wide))
        wide.append(d)
        out.append(dim_mul(m, d))
    if tuple(wide) == tuple(x.type.shape):
        return x
    return ctx.reshape(ctx.broadcast_in_dim(x, wide, dims), tuple(out))


def _static_paddings(ctx, x, paddings) -> list:
    rank = x.type.rank
    values = ic.static_ints(ctx, paddings, "paddings")
    if len(values) != 2 * rank:
        ctx.fail(f"paddings must be a [{rank}, 2] matrix for an input of rank {rank}, got {len(values)} values")
    pairs = [values[2 * i: 2 * i + 2] for i in range(rank)]
    for lo, hi in pairs:
        if lo < 0 or hi < 0:
            ctx.fail("Paddings must be non-negative")
    return pairs


def _zero(elem):
    return False if elem.is_pred else 0


def _lower_pad(ctx, op, x, paddings, constant_values=None):
    pairs = _static_paddings(ctx, x, paddings)
    elem = x.type.elem
    if constant_values is None:
        constant_values = ctx.scalar(_zero(elem), elem)
    elif constant_values.type.rank != 0:
        ctx.fail("constant_values must be a scalar")
    folded = ic.fold(ctx, lambda v, c: np.pad(v, pairs, constant_values=c[()]), [x, constant_values], elem)
    if folded is not None:
        return folded
    if all(lo == 0 and hi == 0 for lo, hi in pairs):
        return x
    return ctx.b.value("pad", [x, constant_values], {"low": [p[0] for p in pairs], "high": [p[1] for p in pairs]})


def _lower_mirror_pad(ctx, op, x, paddings):
    pairs = _static_paddings(ctx, x, paddings)
    mode = op._attrs["mode"].upper()
    if mode not in ("REFLECT", "SYMMETRIC"):
        ctx.fail(f"MirrorPad mode {mode} is not REFLECT or SYMMETRIC")
    offset = 1 if mode == "REFLECT" else 0
    out = x
    for axis, (lo, hi) in enumerate(pairs):
        if lo == 0 and hi == 0:
            continue
        d = out.type.shape[axis]
        if isinstance(d, int) and (lo > d - offset or hi > d - offset):
            ctx.fail(f"paddings must be no greater than the dimension size{' minus 1' if offset else ''}: "
                     f"{lo}, {hi} greater than {d - offset}")
        pieces = []
        if lo:
            pieces.append(ctx.b.value("reverse", [ic.slice_axis(ctx, out, axis, offset, lo + offset)],
                                      {"dims": [axis]}))
        pieces.append(out)
        if hi:
            pieces.append(ctx.b.value("reverse", [ic.slice_axis(ctx, out, axis, dim_sub(d, hi + offset),
                                                              dim_sub(d, offset))], {"dims": [axis]}))
        out = ctx.b.value("concatenate", pieces, {"dim": axis})
    return out


def _reverse(ctx, x, axes):
    axes = sorted(set(axes))
    folded = ic.fold(ctx, lambda v: np.flip(v, axis=tuple(axes)) if axes else v, [x], x.type.elem)
    if folded is not None:
        return folded
    axes = [a for a in axes if x.type.shape[a] != 1]
    if not axes:
        return x
    return ctx.b.value("reverse", [x], {"dims": axes})


def _lower_reverse(ctx, op, x, dims):
    flags = ctx.static(dims)
    if flags is None:
        ctx.fail("Reverse's dims must be known at compile time")
    flags = np.asarray(flags).reshape(-1).astype(bool).tolist()
    if len(flags) != x.type.rank:
        ctx.fail(f"'dims' must have the same number of values as 'input' has dimensions: {x.type.rank} vs. "
                 f"{len(flags)}")
    return _reverse(ctx, x, [i for i, f in enumerate(flags) if f])


def _lower_reverse_v2(ctx, op, x, axis):
    rank = x.type.rank
    axes = [ic.normalize_axis(ctx, a, rank, "reverse axis") for a in ic.static_ints(ctx, axis, "ReverseV2's axis")]
    if len(set(axes)) != len(axes):
        ctx.fail("an axis is specified more than once")
    return _reverse(ctx, x, axes)


def _zero_extend(ctx, value, axis: int, low, high):
    """``value`` with ``low``/``high`` zeros added along ``axis`` (dims; run-time sizes too)."""
    if isinstance(low, int) and isinstance(high, int) and low >= 0 and high >= 0:
        if low == 0 and high == 0:
            return value
        rank = value.type.rank
        lows, highs = [0] * rank, [0] * rank
        lows[axis], highs[axis] = low, high
        return ctx.b.value("pad", [value, ctx.scalar(_zero(value.type.elem), value.type.elem)],
                           {"low": lows, "high": highs})
    pieces = []
    for extent in (low, "value", high):
        if extent == "value":
            pieces.append(value)
            continue
        extent = ctx.canon(extent)
        if isinstance(extent, int) and extent == 0:
            continue
        shape = [ctx.canon(d) for d in value.type.shape]
        shape[axis] = extent
        pieces.append(ctx.broadcast_in_dim(ctx.scalar(_zero(value.type.elem), value.type.elem), tuple(shape), []))
    return ic.concat_values(ctx, pieces, axis)


def _lower_mirror_pad_grad(ctx, op, grad, paddings):
    """Fold each reflected border back onto the input positions it was copied from."""
    pairs = _static_paddings(ctx, grad, paddings)
    mode = op._attrs["mode"].upper()
    if mode not in ("REFLECT", "SYMMETRIC"):
        ctx.fail(f"MirrorPadGrad mode {mode} is not REFLECT or SYMMETRIC")
    offset = 1 if mode == "REFLECT" else 0
    out = grad
    for axis, (lo, hi) in enumerate(pairs):
        if lo == 0 and hi == 0:
            continue
        full = ctx.canon(out.type.shape[axis])
        d = ctx.canon(dim_sub(full, lo + hi))
        if isinstance(d, int) and (d < 0 or lo > d - offset or hi > d - offset):
            ctx.fail(f"paddings must be no greater than the dimension size{' minus 1' if offset else ''}: "
                     f"{lo}, {hi} greater than {d - offset}")
        result = ic.slice_axis(ctx, out, axis, lo, ctx.canon(dim_sub(full, hi)))
        if lo:
            border = ctx.b.value("reverse", [ic.slice_axis(ctx, out, axis, 0, lo)], {"dims": [axis]})
            border = _zero_extend(ctx, border, axis, offset, ctx.canon(dim_sub(d, lo + offset)))
            result = ctx.b.value("add", [result, border])
        if hi:
            border = ctx.b.value("reverse", [ic.slice_axis(ctx, out, axis, ctx.canon(dim_sub(full, hi)), full)],
                                 {"dims": [axis]})
            border = _zero_extend(ctx, border, axis, ctx.canon(dim_sub(d, hi + offset)), offset)
            result = ctx.b.value("add", [result, border])
        out = result
    return out


def _lower_invert_permutation(ctx, op, x):
    known = ctx.static(x)
    if known is not None and not ic.is_symbolic(known):
        values = np.asarray(known).reshape(-1).astype(np.int64)
        if sorted(values.tolist()) != list(range(values.size)):
            ctx.fail(f"{values.tolist()} is not a valid permutation")
        return ctx.constant(np.argsort(values).astype(x.type.elem.np_dtype), x.type.elem)
    # y[x[i]] = i: scatter the positions into zeros (out-of-range entries are dropped).
    n = ctx.canon(x.type.shape[0])
    positions = ctx.b.value("iota", [], {"dim": 0}, result_type=x.type)
    zeros = ctx.broadcast_in_dim(ctx.scalar(0, x.type.elem), (n,), [])
    return ctx.b.value("scatter_add", [zeros, x, positions], {"axis": 0})


def _lower_size(ctx, op, x):
    count = ctx.canon(dims_product(x.type.shape))
    return ic.from_static(ctx, ic.as_dim_array(np.array(count, dtype=object)), ctx.elem(op._attrs["out_type"]))



# =====================================================================================
# Gradient helpers (tensorflow/python/ops/array_grad.py of TF 1.15)
# =====================================================================================
def _identity_grad(op, grad):
    """_IdGrad: Identity, RefIdentity, Snapshot and PlaceholderWithDefault pass it on."""
    return grad


def _reshape_to_input(op, grad):
    """_ReshapeToInput: ``Shape`` of the input, then ``Reshape``."""
    return reshape(grad, shape(op.inputs[0]))


def _pad_grad(op, grad):
    """_PadGrad (Pad, PadV2): slice the input's extent out of the gradient."""
    from .concat_ops import stack
    from .slicing import slice as slice_

    x = op.inputs[0]
    a = op.inputs[1]  # [Rank(x), 2]
    pad_before = slice_(a, [0, 0], stack([rank(x), 1]))
    begin = reshape(pad_before, [-1])
    # TF 1.15: shape(x) (int32; int64 paddings fail there). Same graph for int32.
    sizes = shape(x, out_type=a.dtype.base_dtype)
    x_grad = slice_(grad, begin, sizes)
    if len(op.inputs) == 3:
        return [x_grad, None, None]
    return [x_grad, None]


def broadcast_gradient_args(s0, s1, name=None):
    """gen_array_ops.broadcast_gradient_args: the (r0, r1) reduction indices of a
    BroadcastGradientArgs op (the op's registry entry lives with the math gradients)."""
    return apply_op("BroadcastGradientArgs", [s0, s1], name=name).outputs


# =====================================================================================
# Placeholders and identities
# =====================================================================================
@register
class Placeholder(OpType):
    outputs = ["output: dtype"]
    attrs = {"dtype": Attr("type"), "shape": Attr("shape", TensorShape(None))}
    not_differentiable = True

    def infer(op):
        return [op._attrs["shape"]]


@register
class PlaceholderWithDefault(OpType):
    inputs = ["input: dtype"]
    outputs = ["output: dtype"]
    attrs = {"dtype": Attr("type"), "shape": Attr("shape")}

    def infer(op):
        def shape_fn(ctx):
            out = ic.as_dims(ctx.attr("shape"))
            ic.merge(ctx.input(0), out)  # compatibility check; the attr shape is returned
            return [out]

        return ic.run_shape_fn(op, shape_fn)

    lower = _pass_through  # not fed: the default value
    gradient = _identity_grad

    def host(op, value):
        """A string default (a saver's file name) is produced on the host."""
        return [value]


@register
class Identity(OpType):
    inputs = ["input: T"]
    outputs = ["output: T"]
    attrs = {"T": Attr("type")}
    forwards_refs = True
    infer = ic.unchanged_shape
    lower = _pass_through
    gradient = _identity_grad

    def host(op, value):
        """Identity of strings (filenames, summaries) runs on the host."""
        return [value]


@register
class RefIdentity(OpType):
    inputs = ["input: Ref(T)"]
    outputs = ["output: Ref(T)"]
    attrs = {"T": Attr("type")}
    infer = ic.unchanged_shape
    lower = _pass_through
    gradient = _identity_grad


@register
class Snapshot(OpType):
    inputs = ["input: T"]
    outputs = ["output: T"]
    attrs = {"T": Attr("type")}
    infer = ic.unchanged_shape
    lower = _pass_through
    gradient = _identity_grad


@register
class StopGradient(OpType):
    inputs = ["input: T"]
    outputs = ["output: T"]
    attrs = {"T": Attr("type")}
    infer = ic.unchanged_shape
    lower = _pass_through
    not_differentiable = True


@register
class IdentityN(OpType):
    inputs = ["input: T"]  # T is a list(type): one input per entry
    outputs = ["output: T"]
    attrs = {"T": Attr("list(type)")}

    def infer(op):
        return [t.shape for t in op._inputs]

    lower = _pass_through

    def gradient(op, *grads):
        """_IdNGrad: every gradient passes through."""
        return list(grads)


def placeholder(dtype, shape=None, name=None):
    """tf.placeholder: a Placeholder op of ``dtype`` (a DType or a name like "float")."""
    dtype = dtypes.as_dtype(dtype)
    return apply_op("Placeholder", [], {"dtype": dtype, "shape": TensorShape(shape)}, name).outputs[0]


def placeholder_with_default(input, shape, name=None):  # noqa: A002 - TF's argument name
    return apply_op("PlaceholderWithDefault", [input], {"shape": TensorShape(shape)}, name).outputs[0]


def identity(input, name=None):  # noqa: A002
    """tf.identity: inside ``control_dependencies`` the new Identity op carries them."""
    return apply_op("Identity", [input], name=name).outputs[0]


def stop_gradient(input, name=None):  # noqa: A002
    return apply_op("StopGradient", [input], name=name).outputs[0]


def identity_n(input, name=None):  # noqa: A002
    """tf.identity_n: one IdentityN op forwarding a list of tensors of any types."""
    with name_scope(name, "IdentityN", input) as scope:
        tensors = [convert_to_tensor(v, name=f"input_{i}") for i, v in enumerate(input)]
        op = get_default_graph().create_op("IdentityN", tensors, name=scope,
                                           attrs={"T": [t.dtype.base_dtype for t in tensors]})
    return op.outputs


# =====================================================================================
# Shape, Size, Rank
# =====================================================================================
def _shape_of_inputs(ctx):
    return [[None if ctx.input(i) is None else len(ctx.input(i))] for i in range(ctx.num_inputs)]


@register
class Shape(OpType):
    inputs = ["input: T"]
    outputs = ["output: out_type"]
    attrs = {"T": Attr("type"), "out_type": Attr("type", dtypes.int32, allowed=INDEX_TYPES)}
    not_differentiable = True

    def infer(op):
        return ic.run_shape_fn(op, _shape_of_inputs)

    def lower(ctx, op, x):
        """The input's IR shape as a compile-time value (a ``dims`` op for symbols)."""
        return ic.from_static(ctx, _shape_array(ctx, x), ctx.elem(op._attrs["out_type"]))


@register
class ShapeN(OpType):
    inputs = ["input: N * T"]
    outputs = ["output: N * out_type"]
    attrs = {"N": Attr("int"), "T": Attr("type"), "out_type": Attr("type", dtypes.int32, allowed=INDEX_TYPES)}
    not_differentiable = True

    def infer(op):
        return ic.run_shape_fn(op, _shape_of_inputs)

    def lower(ctx, op, *xs):
        elem = ctx.elem(op._attrs["out_type"])
        return [ic.from_static(ctx, _shape_array(ctx, x), elem) for x in xs]


@register
class Size(OpType):
    inputs = ["input: T"]
    outputs = ["output: out_type"]
    attrs = {"T": Attr("type"), "out_type": Attr("type", dtypes.int32, allowed=INDEX_TYPES)}
    not_differentiable = True

    def infer(op):
        return [TensorShape([])]

    lower = _lower_size


@register
class Rank(OpType):
    inputs = ["input: T"]
    outputs = ["output: int32"]
    attrs = {"T": Attr("type")}
    not_differentiable = True

    def infer(op):
        return [TensorShape([])]

    def lower(ctx, op, x):
        return ctx.scalar(x.type.rank, ir.ElemType.I32)


def shape(input, name=None, out_type=dtypes.int32):  # noqa: A002
    """tf.shape: a Const when the static shape is fully defined, else a Shape op."""
    return shape_internal(input, name, optimize=True, out_type=out_type)


def shape_internal(input, name=None, optimize=True, out_type=dtypes.int32):  # noqa: A002
    with name_scope(name, "Shape", [input]) as scope:
        tensor = convert_to_tensor(input)
        if optimize and tensor.shape.is_fully_defined():
            return constant(tensor.shape.as_list(), out_type, name=scope)
        return apply_op("Shape", [tensor], {"out_type": out_type}, scope).outputs[0]


def shape_n(input, out_type=dtypes.int32, name=None):  # noqa: A002
    return apply_op("ShapeN", [list(input)], {"out_type": out_type}, name).outputs


def size(input, name=None, out_type=dtypes.int32):  # noqa: A002
    """tf.size: a Const when the element count is static (or a dim is 0), else Size."""
    with name_scope(name, "Size", [input]) as scope:
        tensor = convert_to_tensor(input)
        static = tensor.shape
        if static.is_fully_defined():
            return constant(static.num_elements(), out_type, name=scope)
        if static.dims and any(d.value == 0 for d in static.dims):
            return constant(0, out_type, name=scope)
        return apply_op("Size", [tensor], {"out_type": out_type}, scope).outputs[0]


def rank(input, name=None):  # noqa: A002
    """tf.rank: a Const when the rank is static, else a Rank op."""
    with name_scope(name, "Rank", [input]) as scope:
        tensor = convert_to_tensor(input)
        if tensor.shape.ndims is not None:
            return constant(tensor.shape.ndims, dtypes.int32, name=scope)
        return apply_op("Rank", [tensor], name=scope).outputs[0]


# =====================================================================================
# Reshape, ExpandDims, Squeeze
# =====================================================================================
def _known_product(shape: list):
    """(product of the known dims, index of the unknown dim or -1, more than one unknown)."""
    unknown = [i for i, d in enumerate(shape) if d is None]
    product = 1
    for d in shape:
        if d is not None:
            product *= d
    return product, (unknown[0] if unknown else -1), len(unknown) > 1


def _reshape_shape(ctx):
    """SetOutputShapeForReshape: infer a -1 dim, check element counts."""
    in_shape = ctx.input(0)
    out = ctx.shape_from_shape_tensor(1)
    if out is None or in_shape is None:
        return [out]
    out = list(out)
    known_out, out_unknown, too_many_out = _known_product(out)
    known_in, in_unknown, too_many_in = _known_product(in_shape)
    if too_many_out or too_many_in:
        return [out]
    if in_unknown < 0 and out_unknown < 0:
        if known_in != known_out:
            raise ShapeError(f"Cannot reshape a tensor with {known_in} elements to shape {ic.debug_string(out)} "
                             f"({known_out} elements)")
    elif in_unknown < 0 and out_unknown >= 0 and known_out > 0:
        out[out_unknown] = ic.divide_dim(known_in, known_out)
    elif in_unknown >= 0 and out_unknown < 0 and known_in != 0:
        ic.divide_dim(known_out, known_in)  # only checks divisibility
    return [out]


@register
class Reshape(OpType):
    inputs = ["tensor: T", "shape: Tshape"]
    outputs = ["output: T"]
    attrs = {"T": Attr("type"), "Tshape": Attr("type", dtypes.int32, allowed=INDEX_TYPES)}

    def infer(op):
        return ic.run_shape_fn(op, _reshape_shape)

    lower = _lower_reshape

    def host(op, tensor, shape):
        """Reshape of strings (a ready op's variable names) runs on the host."""
        from ..errors import InvalidArgumentError

        tensor, dims = np.asarray(tensor), [int(d) for d in np.asarray(shape).ravel()]
        known = int(np.prod([d for d in dims if d != -1], dtype=np.int64))
        if (-1 not in dims and known != tensor.size) or (-1 in dims and (known == 0 or tensor.size % known)):
            wanted = f"requires a multiple of {known}" if -1 in dims else f"has {known}"
            raise InvalidArgumentError(None, op, f"Input to reshape is a tensor with {tensor.size} values, but the "
                                                 f"requested shape {wanted}")
        return [tensor.reshape(dims)]

    def gradient(op, grad):
        """_ReshapeGrad: ``gradients/Reshape_grad/Shape`` and ``.../Reshape``."""
        return [reshape(grad, shape(op.inputs[0])), None]


def _expand_dims_shape(ctx):
    in_shape = ctx.input(0)
    dim_value = ctx.input_tensor(1)
    if dim_value is not None and np.asarray(dim_value).size != 1:
        raise ShapeError("'dim' input must be a tensor with a single value")
    if dim_value is None or in_shape is None:
        return [None]
    axis = int(np.asarray(dim_value).ravel()[0])
    in_rank = len(in_shape)
    min_dim = -in_rank - 1
    if axis < min_dim or axis > in_rank:
        raise ShapeError(f"dim {axis} not in the interval [{min_dim}, {in_rank}].")
    if axis < 0:
        axis += in_rank + 1
    return [in_shape[:axis] + [1] + in_shape[axis:]]


@register
class ExpandDims(OpType):
    inputs = ["input: T", "dim: Tdim"]
    outputs = ["output: T"]
    attrs = {"T": Attr("type"), "Tdim": Attr("type", dtypes.int32, allowed=INDEX_TYPES)}

    def infer(op):
        return ic.run_shape_fn(op, _expand_dims_shape)

    lower = _lower_expand_dims

    def host(op, value, dim):
        """ExpandDims of strings (tf.strings.split of a scalar) runs on the host."""
        value = np.asarray(value)
        axis = int(np.asarray(dim).reshape(-1)[0])
        return [np.expand_dims(value, axis if axis >= 0 else axis + value.ndim + 1)]

    def gradient(op, grad):
        return [_reshape_to_input(op, grad), None]


def _squeeze_shape(ctx):
    in_shape = ctx.input(0)
    if in_shape is None:
        return [None]
    in_rank = len(in_shape)
    squeeze_dims = []
    for i, d in enumerate(ctx.attr("squeeze_dims")):
        if d < -in_rank or d >= in_rank:
            raise ShapeError(f"squeeze_dims[{i}] not in [{-in_rank},{in_rank}).")
        squeeze_dims.append(d + in_rank if d < 0 else d)
    out = []
    for i, d in enumerate(in_shape):
        explicit = i in squeeze_dims
        if d is None:
            if explicit:
                continue  # assumed to be 1 at run time
            if not squeeze_dims:
                return [None]
        elif d == 1:
            if explicit or not squeeze_dims:
                continue
        elif explicit:
            raise ShapeError(f"Can not squeeze dim[{i}], expected a dimension of 1, got {d}")
        out.append(d)
    return [out]


@register
class Squeeze(OpType):
    inputs = ["input: T"]
    outputs = ["output: T"]
    attrs = {"T": Attr("type"), "squeeze_dims": Attr("list(int)", [])}

    def infer(op):
        return ic.run_shape_fn(op, _squeeze_shape)

    lower = _lower_squeeze

    def gradient(op, grad):
        return _reshape_to_input(op, grad)


def reshape(tensor, shape, name=None):  # noqa: F811 - TF's argument name
    return apply_op("Reshape", [tensor, shape], name=name).outputs[0]


def _deprecated_argument_lookup(new_name, new_value, old_name, old_value):
    if old_value is not None:
        if new_value is not None:
            raise ValueError(f"Cannot specify both '{old_name}' and '{new_name}'")
        return old_value
    return new_value


def expand_dims(input, axis=None, name=None, dim=None):  # noqa: A002
    axis = _deprecated_argument_lookup("axis", axis, "dim", dim)
    if axis is None:
        raise ValueError("Must specify an axis argument to tf.expand_dims()")
    return apply_op("ExpandDims", [input, axis], name=name).outputs[0]


def squeeze(input, axis=None, name=None, squeeze_dims=None):  # noqa: A002
    axis = _deprecated_argument_lookup("axis", axis, "squeeze_dims", squeeze_dims)
    if np.isscalar(axis):
        axis = [axis]
    return apply_op("Squeeze", [input], {"squeeze_dims": list(axis or [])}, name).outputs[0]


# =====================================================================================
# Transpose
# =====================================================================================
def _transpose_shape(ctx):
    in_shape = ctx.input(0)
    perm_shape = ctx.input(1)
    perm = ctx.input_tensor(1)
    perm_elems = ic.num_elements(perm_shape)
    if in_shape is None and perm_elems is None and perm is None:
        return [None]
    if in_shape is not None:
        in_rank = len(in_shape)
    elif perm_elems is not None:
        in_rank = perm_elems
    else:
        in_rank = int(np.asarray(perm).size)
    if in_shape is None and in_rank < 2:
        return [in_shape]  # a 1-element perm fits a scalar or a vector alike
    in_shape = ic.with_rank(in_shape, in_rank)
    ic.with_rank(perm_shape, 1)
    ic.with_value(perm_elems, in_rank)
    if perm is None:
        return [[None] * in_rank]
    dims = []
    for index in np.asarray(perm).ravel()[:in_rank].tolist():
        if index >= in_rank:
            raise ShapeError(f"perm dim {index} is out of range of input rank {in_rank}")
        dims.append(in_shape[index])
    return [dims]


@register
class Transpose(OpType):
    inputs = ["x: T", "perm: Tperm"]
    outputs = ["y: T"]
    attrs = {"T": Attr("type"), "Tperm": Attr("type", dtypes.int32, allowed=INDEX_TYPES)}

    def infer(op):
        return ic.run_shape_fn(op, _transpose_shape)

    lower = _lower_transpose

    def gradient(op, grad):
        """_TransposeGrad: unshuffle with the inverse permutation (``InvertPermutation``)."""
        return [transpose(grad, invert_permutation(op.inputs[1])), None]


@register
class ConjugateTranspose(OpType):
    inputs = ["x: T", "perm: Tperm"]
    outputs = ["y: T"]
    attrs = {"T": Attr("type"), "Tperm": Attr("type", dtypes.int32, allowed=INDEX_TYPES)}

    def infer(op):
        return ic.run_shape_fn(op, _transpose_shape)

    lower = _lower_transpose  # real types only: conjugation is the identity

    def gradient(op, grad):
        return [transpose(grad, invert_permutation(op.inputs[1]), conjugate=True), None]


@register
class InvertPermutation(OpType):
    inputs = ["x: T"]
    outputs = ["y: T"]
    attrs = {"T": Attr("type", dtypes.int32, allowed=INDEX_TYPES)}
    not_differentiable = True

    def infer(op):
        return ic.run_shape_fn(op, lambda ctx: [ic.with_rank(ctx.input(0), 1)])

    lower = _lower_invert_permutation


def invert_permutation(x, name=None):
    """tf.invert_permutation: ``y[x[i]] = i`` (an InvertPermutation op)."""
    return apply_op("InvertPermutation", [x], name=name).outputs[0]


def transpose(a, perm=None, name="transpose", conjugate=False):
    """tf.transpose; without ``perm`` the reversed order, computed in the graph when the
    rank is unknown (or 0): ``transpose/Rank``, ``transpose/sub``, ``transpose/Range``,
    ``transpose/sub_1`` as TF 1.x builds it."""
    with name_scope(name, "transpose", [a]) as scope:
        if perm is not None:
            op_type = "ConjugateTranspose" if conjugate and _is_complex(a) else "Transpose"
            return apply_op(op_type, [a, perm], name=scope).outputs[0]
        a = convert_to_tensor(a, name="a")
        op_type = "ConjugateTranspose" if conjugate and a.dtype.is_complex else "Transpose"
        if not a.shape.ndims:
            a_rank = apply_op("Rank", [a]).outputs[0]
            perm = (a_rank - 1) - _range_op(0, a_rank, 1)
        else:
            in_rank = a.shape.ndims
            perm = (in_rank - 1) - np.arange(in_rank)
        result = apply_op(op_type, [a, perm], name=scope).outputs[0]
        dims = a.shape.dims  # the Transpose's input (an eager result has no op to ask)
        if dims is not None:
            result.set_shape(dims[::-1])
        return result


def _is_complex(value) -> bool:
    dtype = getattr(value, "dtype", None)
    try:
        return dtype is not None and dtypes.as_dtype(dtype).is_complex
    except TypeError:
        return False


def _range_op(start, limit, delta, name=None):
    """gen_math_ops._range: a bare Range op (its inputs converted inside ``Range/``)."""
    return apply_op("Range", [start, limit, delta], name=name).outputs[0]


# =====================================================================================
# Fill, zeros, ones
# =====================================================================================
def _fill_shape(ctx):
    ic.with_rank(ctx.input(0), 1)
    ic.with_rank(ctx.input(1), 0)
    dims = ctx.input_tensor(0)
    if dims is not None and (np.asarray(dims) < 0).any():
        raise ShapeError("Fill dimensions must be >= 0")
    return [ctx.shape_from_shape_tensor(0)]


@register
class Fill(OpType):
    inputs = ["dims: index_type", "value: T"]
    outputs = ["output: T"]
    attrs = {"T": Attr("type"), "index_type": Attr("type", dtypes.int32, allowed=INDEX_TYPES)}

    def infer(op):
        return ic.run_shape_fn(op, _fill_shape)

    lower = _lower_fill

    def gradient(op, grad):
        """_FillGrad: the value receives the sum of the gradient; dims none."""
        from .math_ops import reduce_sum

        return [None, reduce_sum(grad)]


@register
class ZerosLike(OpType):
    inputs = ["x: T"]
    outputs = ["y: T"]
    attrs = {"T": Attr("type")}
    infer = ic.unchanged_shape
    lower = _lower_filled_like(0)
    not_differentiable = True


@register
class OnesLike(OpType):
    inputs = ["x: T"]
    outputs = ["y: T"]
    attrs = {"T": Attr("type", allowed=ONES_LIKE_TYPES)}
    infer = ic.unchanged_shape
    lower = _lower_filled_like(1)
    not_differentiable = True


def fill(dims, value, name=None):
    return apply_op("Fill", [dims, value], name=name).outputs[0]


def _contains_tensor(value) -> bool:
    if isinstance(value, Tensor) or hasattr(value, "_as_graph_element"):
        return True
    if isinstance(value, (list, tuple)):
        return any(_contains_tensor(v) for v in value)
    return False


def _constant_if_small(value, shape, dtype, name):
    """TF's _constant_if_small: a Const when ``np.prod(shape) < 1000``; a TypeError on the
    way (a shape holding tensors, a scalar shape that make_tensor_proto cannot iterate)
    means no Const."""
    try:
        if _element_count(shape) < 1000:
            return constant(value, shape=shape, dtype=dtype, name=name)
    except TypeError:
        pass
    return None


def _element_count(shape):
    """``np.prod(shape)`` as TF 1.15 evaluates it.

    For a list holding tensors numpy multiplies the elements as Python objects, so TF
    leaves ``mul`` (and, comparing with 1000, ``Less``) ops in the graph before the
    comparison fails (a tensor is no bool); we do the same.
    """
    if isinstance(shape, TensorShape):
        count = shape.num_elements()
        if count is None:
            raise TypeError("partially known shape")
        return count
    if isinstance(shape, (list, tuple)) and any(_contains_tensor(d) for d in shape):
        return functools.reduce(operator.mul, shape)
    return np.prod(shape)


def _shape_as_tensor(shape):
    """constant_op._tensor_shape_tensor_conversion_function: ``shape_as_tensor`` Const."""
    dims = as_shape(shape)
    if not dims.is_fully_defined():
        raise ValueError(f"Cannot convert a partially known TensorShape to a Tensor: {dims}")
    values = dims.as_list()
    dtype = dtypes.int64 if any(d >= 2 ** 31 for d in values) else dtypes.int32
    return constant(values, dtype=dtype, name="shape_as_tensor")


def _filled(shape, fill_value, dtype, name, default_name):
    """zeros/ones: a small static shape gives a Const, otherwise shape tensor + Fill."""
    dtype = dtypes.as_dtype(dtype).base_dtype
    with name_scope(name, default_name, [shape]) as scope:
        if not isinstance(shape, Tensor):
            try:
                output = _constant_if_small(fill_value, shape, dtype, scope)
                if output is not None:
                    return output
                shape = _shape_as_tensor(shape)
            except (TypeError, ValueError):
                shape = convert_to_tensor(shape, dtype=dtypes.int32)
        if not shape.shape.dims:  # unknown rank or a scalar: make it a vector
            shape = reshape(shape, [-1])
        output = fill(shape, constant(fill_value, dtype=dtype), name=scope)
    assert output.dtype.base_dtype == dtype
    return output


def _zero_of(dtype):
    dtype = dtypes.as_dtype(dtype).base_dtype
    if dtype == dtypes.bool:
        return False
    if dtype == dtypes.string:
        return ""
    return 0


def zeros(shape, dtype=dtypes.float32, name=None):
    return _filled(shape, _zero_of(dtype), dtype, name, "zeros")


def ones(shape, dtype=dtypes.float32, name=None):
    one = True if dtypes.as_dtype(dtype).base_dtype == dtypes.bool else 1
    return _filled(shape, one, dtype, name, "ones")


def zeros_like(tensor, dtype=None, name=None, optimize=True):
    """tf.zeros_like: a Const (via zeros) for static shapes, else a ZerosLike op."""
    with name_scope(name, "zeros_like", [tensor]) as scope:
        tensor = convert_to_tensor(tensor, name="tensor")
        dtype = None if dtype is None else dtypes.as_dtype(dtype)
        if optimize and tensor.shape.is_fully_defined() and tensor.dtype != dtypes.variant:
            return zeros(tensor.shape, dtype=dtype or tensor.dtype, name=scope)
        if dtype is not None and dtype != tensor.dtype and dtype != dtypes.variant:
            return zeros(shape_internal(tensor, optimize=optimize), dtype=dtype, name=scope)
        return apply_op("ZerosLike", [tensor], name=scope).outputs[0]


def ones_like(tensor, dtype=None, name=None, optimize=True):
    """tf.ones_like: ``ones_like/Shape`` (Const or Shape op), ``ones_like/Const``, Fill."""
    with name_scope(name, "ones_like", [tensor]) as scope:
        tensor = convert_to_tensor(tensor, name="tensor")
        ones_shape = shape_internal(tensor, optimize=optimize)
        dtype = tensor.dtype if dtype is None else dtypes.as_dtype(dtype)
        result = ones(ones_shape, dtype=dtype, name=scope)
        result.set_shape(tensor.shape)
        return result


# =====================================================================================
# BroadcastTo
# =====================================================================================
def _broadcast_to_shape(ctx):
    ic.with_rank(ctx.input(1), 1)
    out = ctx.shape_from_shape_tensor(1)
    if out is None:
        return [None]
    in_shape = ctx.input(0)
    if in_shape is None:
        return [out]
    out = list(out)
    ic.with_rank_at_most(in_shape, len(out))
    for i in range(len(in_shape)):
        in_dim = in_shape[len(in_shape) - i - 1]
        if in_dim is not None and in_dim > 1:
            j = len(out) - i - 1
            out[j] = ic.merge_dim(in_dim, out[j])
    return [out]


@register
class BroadcastTo(OpType):
    inputs = ["input: T", "shape: Tidx"]
    outputs = ["output: T"]
    attrs = {"T": Attr("type"), "Tidx": Attr("type", dtypes.int32, allowed=INDEX_TYPES)}

    def infer(op):
        return ic.run_shape_fn(op, _broadcast_to_shape)

    lower = _lower_broadcast_to

    def gradient(op, grad):
        """_BroadcastToGrad: sum over the broadcast dims (BroadcastGradientArgs), reshape."""
        from .math_ops import reduce_sum

        input_value_shape = shape(op.inputs[0])
        _, reduction_axes = broadcast_gradient_args(op.inputs[1], input_value_shape)
        updates_grad_reshaped = reduce_sum(grad, axis=reduction_axes, keepdims=True)
        return [reshape(updates_grad_reshaped, input_value_shape), None]


def broadcast_to(input, shape, name=None):  # noqa: A002
    return apply_op("BroadcastTo", [input, shape], name=name).outputs[0]


# =====================================================================================
# Tile, Pad, Reverse
# =====================================================================================
def _tile_shape(ctx):
    in_shape = ctx.input(0)
    multiples = ctx.shape_from_shape_tensor(1)
    if in_shape is not None:
        multiples = ic.with_rank(multiples, len(in_shape))
        ic.merge(ctx.input(1), [len(in_shape)])
    if multiples is None:
        return [None]
    in_shape = ic.with_rank(in_shape, len(multiples))
    return [[ic.multiply_dims(d, m) for d, m in zip(in_shape, multiples)]]


@register
class Tile(OpType):
    inputs = ["input: T", "multiples: Tmultiples"]
    outputs = ["output: T"]
    attrs = {"T": Attr("type"), "Tmultiples": Attr("type", dtypes.int32, allowed=INDEX_TYPES)}

    def infer(op):
        return ic.run_shape_fn(op, _tile_shape)

    lower = _lower_tile

    def gradient(op, grad):
        """_TileGrad: reshape to interleaved [multiple, dim] pairs, sum the multiples."""
        from .concat_ops import stack
        from .math_ops import reduce_sum
        from .selection_ops import range as range_

        input_shape = shape(op.inputs[0], out_type=op.inputs[1].dtype)
        split_shape = reshape(transpose(stack([op.inputs[1], input_shape])), [-1])
        axes = range_(0, size(split_shape), 2)
        input_grad = reduce_sum(reshape(grad, split_shape), axes)
        input_grad.set_shape(op.inputs[0].get_shape())
        return [input_grad, None]


def tile(input, multiples, name=None):  # noqa: A002
    return apply_op("Tile", [input, multiples], name=name).outputs[0]


def _pad_shape(ctx):
    """PadShapeFn (Pad, PadV2, MirrorPad): paddings is a [rank, 2] matrix."""
    paddings = ic.with_rank(ctx.input(1), 2)
    ic.with_value(paddings[1], 2)
    in_shape = ctx.input(0)
    n_dim = paddings[0]
    if n_dim is not None:
        in_shape = ic.with_rank(in_shape, n_dim)
    elif in_shape is not None:
        n_dim = ic.with_value(n_dim, len(in_shape))
    values = ctx.input_tensor(1)
    if values is None:
        return [ic.unknown_of_rank(n_dim)]
    values = np.asarray(values)
    in_shape = ic.with_rank(in_shape, values.shape[0])
    out = []
    for i, (before, after) in enumerate(values.tolist()):
        if before < 0 or after < 0:
            raise ShapeError("Paddings must be non-negative")
        out.append(ic.add_dims(in_shape[i], before + after))
    return [out]


@register
class Pad(OpType):
    inputs = ["input: T", "paddings: Tpaddings"]
    outputs = ["output: T"]
    attrs = {"T": Attr("type"), "Tpaddings": Attr("type", dtypes.int32, allowed=INDEX_TYPES)}

    def infer(op):
        return ic.run_shape_fn(op, _pad_shape)

    lower = _lower_pad
    gradient = _pad_grad


@register
class PadV2(OpType):
    inputs = ["input: T", "paddings: Tpaddings", "constant_values: T"]
    outputs = ["output: T"]
    attrs = {"T": Attr("type"), "Tpaddings": Attr("type", dtypes.int32, allowed=INDEX_TYPES)}

    def infer(op):
        return ic.run_shape_fn(op, _pad_shape)

    lower = _lower_pad
    gradient = _pad_grad


@register
class MirrorPad(OpType):
    inputs = ["input: T", "paddings: Tpaddings"]
    outputs = ["output: T"]
    attrs = {"T": Attr("type"), "Tpaddings": Attr("type", dtypes.int32, allowed=INDEX_TYPES),
             "mode": Attr("string")}

    def infer(op):
        return ic.run_shape_fn(op, _pad_shape)

    lower = _lower_mirror_pad

    def gradient(op, grad):
        """_MirrorPadGrad: a MirrorPadGrad op folds the reflected borders back."""
        return [apply_op("MirrorPadGrad", [grad, op.inputs[1]], {"mode": op.get_attr("mode")}).outputs[0], None]


def _mirror_pad_grad_shape(ctx):
    """MirrorPadGrad's shape function: each dim shrinks by its two paddings."""
    paddings = ic.with_rank(ctx.input(1), 2)
    rank = paddings[0]
    if rank is None:
        return [None]
    in_shape = ic.with_rank(ctx.input(0), rank)
    ic.merge(paddings, [rank, 2])
    values = ctx.input_tensor(1)
    if values is None:
        return [ic.unknown_of_rank(rank)]
    out = []
    for i, (before, after) in enumerate(np.asarray(values).reshape(rank, 2).tolist()):
        if before < 0 or after < 0:
            raise ShapeError("Paddings must be non-negative")
        out.append(ic.subtract_dims(in_shape[i], before + after))
    return [out]


@register
class MirrorPadGrad(OpType):
    """The gradient of MirrorPad: the reflected borders are added back onto the input."""

    inputs = ["input: T", "paddings: Tpaddings"]
    outputs = ["output: T"]
    attrs = {"T": Attr("type"), "Tpaddings": Attr("type", dtypes.int32, allowed=INDEX_TYPES),
             "mode": Attr("string")}

    def infer(op):
        return ic.run_shape_fn(op, _mirror_pad_grad_shape)

    lower = _lower_mirror_pad_grad

    def gradient(op, grad):
        """_MirrorPadGradGrad: MirrorPad again."""
        return [apply_op("MirrorPad", [grad, op.inputs[1]], {"mode": op.get_attr("mode")}).outputs[0], None]


def _paddings_constant(paddings):
    """_get_paddings_constant: the paddings' known values (None where unknown)."""
    if isinstance(paddings, Tensor):
        from ..tensor_util import constant_value

        value = constant_value(paddings, partial=True)
        return None if value is None else value.tolist()
    if isinstance(paddings, (list, tuple)):
        return [_paddings_constant(p) for p in paddings]
    return paddings


def pad(tensor, paddings, mode="CONSTANT", name=None, constant_values=0):
    """tf.pad: Pad (or PadV2 for nonzero constant_values) or MirrorPad."""
    mode = mode.upper()
    if mode == "CONSTANT":
        if not isinstance(constant_values, Tensor) and np.all(np.asarray(constant_values) == 0):
            result = apply_op("Pad", [tensor, paddings], name=name).outputs[0]
        else:
            result = apply_op("PadV2", [tensor, paddings, constant_values], name=name).outputs[0]
    elif mode in ("REFLECT", "SYMMETRIC"):
        result = apply_op("MirrorPad", [tensor, paddings], {"mode": mode}, name=name).outputs[0]
    else:
        raise ValueError(f"Unknown padding mode: {mode}")
    _restore_pad_shape(result, tensor, paddings)
    return result


def _restore_pad_shape(result, tensor, paddings) -> None:
    """TF's pad() sets what it knows of the output shape when inference could not."""
    known = _paddings_constant(paddings)
    input_shape = tensor.shape if isinstance(tensor, Tensor) else result.op.inputs[0].shape
    if input_shape.ndims is None or result.shape.is_fully_defined() or known is None:
        return
    new_shape = []
    for padding, dim in zip(known, input_shape.as_list()):
        if padding is None or dim is None or any(x is None for x in padding):
            new_shape.append(None)
        else:
            new_shape.append(sum(padding) + dim)
    result.set_shape(new_shape)


REVERSE_TYPES = (dtypes.uint8, dtypes.int8, dtypes.uint16, dtypes.int16, dtypes.int32, dtypes.int64, dtypes.bool,
                 dtypes.float16, dtypes.float32, dtypes.float64, dtypes.complex64, dtypes.complex128, dtypes.string)


def _reverse_shape(ctx):
    in_shape = ctx.input(0)
    dims = ic.with_rank(ctx.input(1), 1)
    if dims[0] is not None:
        in_shape = ic.with_rank(in_shape, dims[0])
    if in_shape is not None and len(in_shape) > 8:
        raise ShapeError("reverse does not work on tensors with more than 8 dimensions")
    return [in_shape]


@register
class Reverse(OpType):
    inputs = ["tensor: T", "dims: bool"]
    outputs = ["output: T"]
    attrs = {"T": Attr("type", allowed=REVERSE_TYPES)}

    def infer(op):
        return ic.run_shape_fn(op, _reverse_shape)

    lower = _lower_reverse

    def gradient(op, grad):
        """_ReverseGrad: reverse the gradient along the same dims (a Reverse op)."""
        return [apply_op("Reverse", [grad, op.inputs[1]]).outputs[0], None]


def _reverse_v2_shape(ctx):
    in_shape = ctx.input(0)
    ic.with_rank(ctx.input(1), 1)
    if in_shape is not None and len(in_shape) > 8:
        raise ShapeError("reverse does not work on tensors with more than 8 dimensions")
    axis = ctx.input_tensor(1)
    if axis is not None and in_shape is not None:
        in_rank = len(in_shape)
        seen = set()
        for i, value in enumerate(np.asarray(axis).ravel().tolist()):
            canonical = value + in_rank if value < 0 else value
            if canonical < 0 or canonical >= in_rank:
                # TF's message lacks the closing bracket.
                raise ShapeError(f"'axis'[{i}] = {value} is out of valid range [0, {in_rank - 1}")
            if canonical in seen:
                raise ShapeError(f"axis {canonical} specified more than once.")
            seen.add(canonical)
    return [in_shape]


@register
class ReverseV2(OpType):
    inputs = ["tensor: T", "axis: Tidx"]
    outputs = ["output: T"]
    attrs = {"Tidx": Attr("type", dtypes.int32, allowed=INDEX_TYPES),
             "T": Attr("type", allowed=REVERSE_TYPES + (dtypes.bfloat16,))}

    def infer(op):
        return ic.run_shape_fn(op, _reverse_v2_shape)

    lower = _lower_reverse_v2

    def gradient(op, grad):
        return [reverse_v2(grad, op.inputs[1]), None]


def reverse_v2(tensor, axis, name=None):
    """tf.reverse (TF 1.15's tf.reverse is reverse_v2): a ReverseV2 op."""
    return apply_op("ReverseV2", [tensor, axis], name=name).outputs[0]


reverse = reverse_v2


# -- ReverseSequence ---------------------------------------------------------------------------
def _reverse_sequence_shape(ctx):
    """ReverseSequence's shape fn: seq_lengths a vector as long as the batch dim."""
    input_shape = ctx.input(0)
    seq_lens = ic.with_rank(ctx.input(1), 1)
    seq_dim, batch_dim = ctx.attr("seq_dim"), ctx.attr("batch_dim")
    if input_shape is None:
        return [None]
    rank = len(input_shape)
    if batch_dim >= rank:
        raise ShapeError(f"batch_dim must be < input rank: {batch_dim} vs. {rank}")
    if seq_dim >= rank:
        raise ShapeError(f"seq_dim must be < input rank: {seq_dim} vs. {rank}")
    out = list(input_shape)
    out[batch_dim] = ic.merge_dim(input_shape[batch_dim], seq_lens[0])
    return [out]


def _assert_in_program(ctx, holds, text, values=()):
    """A ``check`` of kind ``assert`` with TF's message ``text`` pieces around ``values``."""
    ctx.b.op("check", [holds, *values], {"kind": "assert", "text": list(text)})


def _check_seq_lens(ctx, lengths, seq_len, seq_dim: int) -> None:
    """TF's kernel checks: seq_lens(d) in [0, input.dims(seq_dim)], for the first d that is
    not ("seq_lens(1) < 0", "seq_lens(0) > input.dims(1)")."""
    i64 = ir.ElemType.I64
    count = lengths.type.shape[0]
    static = ctx.static(lengths)
    if static is not None and static.dtype != object and isinstance(seq_len, int):
        values = np.asarray(static).reshape(-1)
        for d, value in enumerate(values.tolist()):
            checks = ((value < 0, f"seq_lens({d}) < 0"), (value > seq_len, f"seq_lens({d}) > input.dims({seq_dim})"))
            for bad, text in checks:
                if bad:
                    _assert_in_program(ctx, ctx.constant(np.array(False)), [text])
                    return
        return
    positions = ctx.b.value("iota", [], {"dim": 0}, result_type=ir.TensorType(i64, (count,)))
    none = ic.dim_scalar(ctx, count, i64)

    def first(bad):  # the first position where ``bad`` holds, else the count
        return ctx.reduce(ctx.elementwise("select", bad, positions, none), "min", [0])

    negative = first(ctx.elementwise("compare", lengths, ctx.scalar(0, i64), attrs={"dir": "lt"}))
    too_long = first(ctx.elementwise("compare", lengths, ic.dim_scalar(ctx, seq_len, i64), attrs={"dir": "gt"}))
    _assert_in_program(ctx, ctx.elementwise("compare", too_long, negative, attrs={"dir": "le"}),
                       ["seq_lens(", ") < 0"], [negative])
    _assert_in_program(ctx, ctx.elementwise("compare", negative, too_long, attrs={"dir": "le"}),
                       ["seq_lens(", f") > input.dims({seq_dim})"], [too_long])


def _lower_reverse_sequence(ctx, op, x, seq_lengths):
    """out[b, t] = x[b, seq_lengths[b] - 1 - t] for t < seq_lengths[b], else x[b, t]: the
    batch and sequence dims transposed to the front and merged, one row gather, and back."""
    seq_dim, batch_dim = op._attrs["seq_dim"], op._attrs["batch_dim"]
    rank = x.type.rank
    if seq_dim < 0 or batch_dim < 0:
        ctx.fail(f"ReverseSequence with a negative dim (seq_dim {seq_dim}, batch_dim {batch_dim})")
    if seq_dim == batch_dim:
        _assert_in_program(ctx, ctx.constant(np.array(False)), [f"batch_dim == seq_dim == {seq_dim}"])
        return x
    batch = ctx.unify(x.type.shape[batch_dim], seq_lengths.type.shape[0],
                      (tuple(x.type.shape), tuple(seq_lengths.type.shape)))
    seq_len = ctx.canon(x.type.shape[seq_dim])
    i64 = ir.ElemType.I64
    lengths = ctx.convert(seq_lengths, i64)
    _check_seq_lens(ctx, lengths, seq_len, seq_dim)
    perm = [batch_dim, seq_dim] + [d for d in range(rank) if d not in (batch_dim, seq_dim)]
    moved = ctx.transpose(x, perm)
    moved_shape = tuple(moved.type.shape)
    rows = ctx.reshape(moved, (dim_mul(batch, seq_len), dims_product(moved_shape[2:])))
    grid = ir.TensorType(i64, (batch, seq_len))
    b = ctx.b.value("iota", [], {"dim": 0}, result_type=grid)
    t = ctx.b.value("iota", [], {"dim": 1}, result_type=grid)
    length = ctx.broadcast_in_dim(lengths, (batch, seq_len), [0])
    inside = ctx.elementwise("compare", t, length, attrs={"dir": "lt"})
    reversed_t = ctx.elementwise("sub", ctx.elementwise("sub", length, ctx.scalar(1, i64)), t)
    source_t = ctx.elementwise("select", inside, reversed_t, t)
    source = ctx.elementwise("add", ctx.elementwise("mul", b, ic.dim_scalar(ctx, seq_len, i64)), source_t)
    source = ctx.reshape(source, (dim_mul(batch, seq_len),))
    picked = ctx.b.value("gather", [rows, source], {"axis": 0})
    out = ctx.reshape(picked, moved_shape)
    return ctx.transpose(out, [perm.index(d) for d in range(rank)])


@register
class ReverseSequence(OpType):
    inputs = ["input: T", "seq_lengths: Tlen"]
    outputs = ["output: T"]
    attrs = {"seq_dim": Attr("int"), "batch_dim": Attr("int", 0), "T": Attr("type"),
             "Tlen": Attr("type", dtypes.int64, allowed=INDEX_TYPES)}

    def infer(op):
        return ic.run_shape_fn(op, _reverse_sequence_shape)

    lower = _lower_reverse_sequence

    def gradient(op, grad):
        """array_grad's _ReverseSequenceGrad: the gradient reversed the same way."""
        return [reverse_sequence(grad, batch_axis=op._attrs["batch_dim"], seq_axis=op._attrs["seq_dim"],
                                 seq_lengths=op.inputs[1]), None]


def reverse_sequence(input, seq_lengths, seq_axis=None, batch_axis=None, name=None,  # noqa: A002
                     seq_dim=None, batch_dim=None):
    """tf.reverse_sequence (v1): a ReverseSequence op reversing the first ``seq_lengths[b]``
    entries along ``seq_axis`` of each slice ``b`` along ``batch_axis``."""
    from .math_ops import deprecated_argument_lookup

    seq_axis = deprecated_argument_lookup("seq_axis", seq_axis, "seq_dim", seq_dim)
    batch_axis = deprecated_argument_lookup("batch_axis", batch_axis, "batch_dim", batch_dim)
    if seq_axis is None:
        raise TypeError("Expected int for argument 'seq_dim' not None.")
    attrs = {"seq_dim": seq_axis, "batch_dim": 0 if batch_axis is None else batch_axis}
    if not isinstance(seq_lengths, Tensor) and not hasattr(seq_lengths, "_as_graph_element"):
        # TF's _apply_op_helper takes a value's own dtype when it is allowed (a list of
        # Python ints is int32), and the attr's default (int64) only otherwise.
        from ..tensor_util import make_tensor_proto

        try:
            own = dtypes.as_dtype(make_tensor_proto(seq_lengths).dtype)
        except (TypeError, ValueError):
            own = None
        if own in INDEX_TYPES:
            attrs["Tlen"] = own
    return apply_op("ReverseSequence", [input, seq_lengths], attrs, name).outputs[0]


TF_EXPORTS = [
    "newaxis", "placeholder", "placeholder_with_default", "identity", "identity_n", "stop_gradient",
    "shape", "shape_n", "size", "rank", "reshape", "expand_dims", "squeeze", "transpose",
    "fill", "zeros", "ones", "zeros_like", "ones_like", "broadcast_to", "tile", "pad", "reverse",
    "reverse_v2", "invert_permutation", "reverse_sequence",
]


# The rest of the array family registers on import too (and Tensor.__getitem__).
from . import concat_ops, selection_ops, slicing  # noqa: E402,F401


def __getattr__(name):
    """``array_ops.range`` is tf.range (of :mod:`.selection_ops`), resolved on access so
    that this module's own code keeps Python's builtin ``range``."""
    if name == "range":
        return selection_ops.range
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
