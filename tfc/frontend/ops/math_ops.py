"""Math ops: elementwise unary/binary ops, AddN, reductions, ArgMax/ArgMin, MatMul,
BatchMatMulV2, Cast, Cumsum/Cumprod, the user-facing functions (tf.add, tf.reduce_sum,
tf.matmul...) and the Tensor operator overloads (``a + b`` -> 'add' of type AddV2).

Gradients are TF 1.15's python/ops/math_grad.py, graph for graph. The op types those
gradient graphs use live here too: BroadcastGradientArgs (computed while compiling from
the two shapes), TanhGrad/SigmoidGrad/RsqrtGrad/SqrtGrad/ReciprocalGrad, and the
DynamicStitch, ListDiff and Cumprod of ``reduced_shape`` and the Prod gradient.

Everything follows TensorFlow 1.15: the OpDefs (input/attr names, defaults, allowed
types in TF's order, so that type errors list them like TF), the C++ shape functions
(``BroadcastBinaryOpShapeFn``, ``ReductionShape``, ``MatMulShape``...) with their error
texts, and the python wrappers in tensorflow/python/ops/math_ops.py (name scopes, which
constants are created where, ``_ReductionDims``, ``_truediv_python3``...).

Shape functions use the InferenceContext helpers of ``inference_context`` (shared
with array ops), so messages and the "computed input tensors" context match TF.
"""
from __future__ import annotations

import inspect

import numpy as np

from tfc import ir

from .. import dtypes
from ..convert import convert_to_tensor
from ..graph import Tensor, name_scope
from ..op_helper import apply_op
from ..registry import Attr, OpType, ShapeError, register
from . import inference_context as ic
from .constant_op import constant
from .inference_context import run_shape_fn, unchanged_shape

_d = dtypes

# -- type groups, in the order TF's OpDefs list them ---------------------------------
REAL_NUMBER_TYPES = (_d.float32, _d.float64, _d.int32, _d.uint8, _d.int16, _d.int8, _d.int64, _d.bfloat16,
                     _d.uint16, _d.float16, _d.uint32, _d.uint64)
NUMBER_TYPES = (_d.float32, _d.float64, _d.int32, _d.uint8, _d.int16, _d.int8, _d.complex64, _d.int64,
                _d.bfloat16, _d.uint16, _d.complex128, _d.float16, _d.uint32, _d.uint64)
NN_FLOAT_TYPES = (_d.float16, _d.bfloat16, _d.float32, _d.float64)  # "{half, bfloat16, float, double}"
INDEX_TYPES = (_d.int32, _d.int64)
_UNARY = (_d.bfloat16, _d.float16, _d.float32, _d.float64, _d.int32, _d.int64, _d.complex64, _d.complex128)
_UNARY_REAL = (_d.bfloat16, _d.float16, _d.float32, _d.float64)
_UNARY_COMPLEX = (_d.bfloat16, _d.float16, _d.float32, _d.float64, _d.complex64, _d.complex128)
_ABS = (_d.bfloat16, _d.float16, _d.float32, _d.float64, _d.int8, _d.int16, _d.int32, _d.int64)
_BINARY_MORE = (_d.bfloat16, _d.float16, _d.float32, _d.float64, _d.uint8, _d.int8, _d.uint16, _d.int16,
                _d.int32, _d.int64, _d.complex64, _d.complex128)
_ADD = (_d.bfloat16, _d.float16, _d.float32, _d.float64, _d.uint8, _d.int8, _d.int16, _d.int32, _d.int64,
        _d.complex64, _d.complex128, _d.string)
_ADD_V2 = _ADD[:-1]
_POW = (_d.bfloat16, _d.float32, _d.float16, _d.float64, _d.int32, _d.int64, _d.complex64, _d.complex128)
_MIN_MAX = (_d.bfloat16, _d.float16, _d.float32, _d.float64, _d.int32, _d.int64)
_FLOOR_MOD = (_d.int32, _d.int64, _d.bfloat16, _d.float16, _d.float32, _d.float64)
_EQUALITY = (_d.bfloat16, _d.float16, _d.float32, _d.float64, _d.uint8, _d.int8, _d.int16, _d.int32, _d.int64,
             _d.complex64, _d.string, _d.bool, _d.complex128)
_MATMUL = (_d.bfloat16, _d.float16, _d.float32, _d.float64, _d.int32, _d.int64, _d.complex64, _d.complex128)


# -- shape functions -------------------------------------------------------------------
def _broadcast_shape(c) -> list:
    return [ic.broadcast(c.input(0), c.input(1))]


def _broadcast_infer(op) -> list:
    return run_shape_fn(op, _broadcast_shape)


# -- registry entries: elementwise ----------------------------------------------------
def _register_cwise(type_name: str, inputs: list, output: str, attrs: dict, infer, **methods):
    """Register one op type from a table row; ``methods`` may add lower/gradient/..."""
    body = {"inputs": inputs, "outputs": [output], "attrs": attrs, "infer": infer,
            "__doc__": f"TF op {type_name}.", **methods}
    return register(type(type_name, (OpType,), body))


# -- lowerings (graph -> core IR; see docs/CONTRIBUTING-ops.md "Lowering") -----------------
# Each function is an entry's ``lower(ctx, op, *inputs)``. They reproduce TF 1.15's CPU
# kernels numerically (Eigen functors in tensorflow/core/kernels/cwise_ops.h and friends),
# with the core conventions of tfc/ir/ops.py where TF has undefined behaviour or raises at
# run time (integer division by zero gives -1 for the quotient and x for the remainder,
# integer powers with a negative exponent are 0 except for bases 1 and -1).
_E = ir.ElemType


def _elem_of(value) -> "ir.ElemType":
    return value.type.elem


def _require_float(ctx, op, *values) -> None:
    """TF registers these kernels for floating types only."""
    for v in values:
        if not _elem_of(v).is_float:
            ctx.fail(f"{op.type} of {_elem_of(v)} values has no kernel (floating-point types only)")


def _broadcast_all(ctx, *values) -> list:
    """numpy broadcasting of ``values`` to their common shape."""
    shape = ctx.broadcast_shapes(*[tuple(v.type.shape) for v in values])
    return [ctx.broadcast_to(v, shape) for v in values]


def scalar_constant(ctx, number, elem):
    """A rank-0 constant of ``elem``.

    Built with ``ctx.b`` directly: ``LowerCtx.constant`` (tfc/passes/lower.py) passes its
    array through ``np.ascontiguousarray``, which turns a 0-d array into shape [1], so
    ``ctx.scalar`` currently yields ``f32[1]`` and a rank-0 result combined with it would
    come out as [1] (reported; see tests/frontend/test_math_lowering.py).
    """
    array = np.array(number, dtype=elem.np_dtype)
    return ctx.b.value("constant", [], {"value": array}, result_type=ir.TensorType(elem, ()))


def _like(ctx, number, value):
    """A scalar constant of ``value``'s element type (broadcast by ctx.elementwise)."""
    return scalar_constant(ctx, number, _elem_of(value))


def _full_like(ctx, number, value):
    """``number`` broadcast to ``value``'s type (for select operands)."""
    return ctx.broadcast_to(_like(ctx, number, value), tuple(value.type.shape))


def _select(ctx, predicate, on_true, on_false):
    predicate, on_true, on_false = _broadcast_all(ctx, predicate, on_true, on_false)
    return ctx.b.value("select", [predicate, on_true, on_false])


def _cmp(ctx, direction: str, x, y):
    return ctx.elementwise("compare", x, y, attrs={"dir": direction})


def _unary_core(core_op: str, float_only: bool = True):
    def lower(ctx, op, x):
        if float_only:
            _require_float(ctx, op, x)
        return ctx.b.value(core_op, [x])

    lower.__doc__ = f"One core ``{core_op}``."
    return lower


def _binary_core(core_op: str):
    def lower(ctx, op, x, y):
        return ctx.elementwise(core_op, x, y)

    lower.__doc__ = f"One core ``{core_op}`` over numpy-broadcast operands."
    return lower


def _compare_core(direction: str):
    def lower(ctx, op, x, y):
        known = [ctx.static(v) for v in (x, y)]
        if all(k is not None and not ic.is_symbolic(k) and np.size(k) <= 4096 for k in known):  # a known bool
            compare = {"lt": np.less, "le": np.less_equal, "gt": np.greater, "ge": np.greater_equal}[direction]
            folded = ic.fold(ctx, compare, [x, y], ir.ElemType.PRED)
            if folded is not None:
                return folded
        return _cmp(ctx, direction, x, y)

    lower.__doc__ = f"``compare`` with dir={direction}."
    return lower


def _lower_sign(ctx, op, x):
    """Ints: core sign. Floats: TF's sign(NaN) = NaN and sign(-0.0) = +0.0 (the core sign
    keeps both zeros' signs)."""
    result = ctx.b.value("sign", [x])
    if _elem_of(x).is_float:
        result = _select(ctx, _cmp(ctx, "eq", x, _full_like(ctx, 0, x)), _full_like(ctx, 0, x), result)
    return result


def _lower_square(ctx, op, x):
    return ctx.b.value("mul", [x, x])


def _lower_tan(ctx, op, x):
    """sin(x) / cos(x) (there is no core tan)."""
    _require_float(ctx, op, x)
    return ctx.b.value("div", [ctx.b.value("sin", [x]), ctx.b.value("cos", [x])])


def _lower_reciprocal(ctx, op, x):
    """1 / x (integer division for integer types, which fails on 0)."""
    if not _elem_of(x).is_float:
        _check_divisor(ctx, "divisor", x, x)
    return ctx.elementwise("div", _like(ctx, 1, x), x)


def _lower_round(ctx, op, x):
    """Half to even for floats; integers are already round."""
    if not _elem_of(x).is_float:
        return x
    return ctx.b.value("round", [x])


def _lower_is_nan(ctx, op, x):
    _require_float(ctx, op, x)
    return _cmp(ctx, "ne", x, x)


def _lower_is_inf(ctx, op, x):
    _require_float(ctx, op, x)
    return _cmp(ctx, "eq", ctx.b.value("abs", [x]), _like(ctx, np.inf, x))


def _lower_is_finite(ctx, op, x):
    """|x| < inf (false for NaN and +-inf)."""
    _require_float(ctx, op, x)
    return _cmp(ctx, "lt", ctx.b.value("abs", [x]), _like(ctx, np.inf, x))


def _lower_logical_not(ctx, op, x):
    folded = ic.fold(ctx, np.logical_not, [x], x.type.elem)  # a known mask stays known (a ready op's Where)
    return folded if folded is not None else ctx.b.value("not", [x])


def _check_divisor(ctx, kind: str, x, y):
    """TF's integer division fails on a zero divisor (check kinds ``divisor`` and
    ``truncate_divisor``), but only when the result has elements; INT_MIN / -1 is INT_MIN."""
    if _elem_of(y).is_float:
        return
    shape = ctx.broadcast_shapes(tuple(x.type.shape), tuple(y.type.shape))
    ctx.check(kind, y, unless_empty=None if _static_nonempty(shape) else list(shape))


def _static_nonempty(shape) -> bool:
    return all(isinstance(d, int) and d > 0 for d in shape)


def _lower_int_division(core_op: str, kind: str):
    def lower(ctx, op, x, y):
        _check_divisor(ctx, kind, x, y)
        return ctx.elementwise(core_op, x, y)

    lower.__doc__ = f"One core ``{core_op}``; integer divisors are checked (``{kind}``)."
    return lower


def _lower_floor_div(ctx, op, x, y):
    """Floats: floor(x / y). Unsigned: x / y. Signed: the truncating quotient, minus one
    where the remainder is nonzero and its sign differs from y's (INT_MIN / -1 =
    INT_MIN; a zero divisor fails)."""
    _check_divisor(ctx, "divisor", x, y)
    x, y = _broadcast_all(ctx, x, y)
    elem = _elem_of(x)
    quotient = ctx.b.value("div", [x, y])
    if elem.is_float:
        return ctx.b.value("floor", [quotient])
    if not elem.is_signed:
        return quotient
    fix = _floor_fix(ctx, x, y)
    return _select(ctx, fix, ctx.elementwise("sub", quotient, _like(ctx, 1, x)), quotient)


def _floor_fix(ctx, x, y):
    """Where a truncating integer quotient/remainder needs the floor correction: a nonzero
    remainder whose sign differs from y's (y is never 0: _check_divisor fails first)."""
    zero = _like(ctx, 0, x)
    remainder = ctx.b.value("rem", [x, y])
    nonzero = _cmp(ctx, "ne", remainder, zero)
    signs_differ = ctx.b.value("xor", [_cmp(ctx, "lt", remainder, zero), _cmp(ctx, "lt", y, zero)])
    return ctx.b.value("and", [nonzero, signs_differ])


def _lower_floor_mod(ctx, op, x, y):
    """Signed ints: rem(x, y) + y where the remainder's sign differs from y's (a zero
    divisor fails). Floats: TF's google_floor_fmod,
    ``(x < 0) == (y < 0) ? fmod(x, y) : fmod(fmod(x, y) + y, y)``."""
    _check_divisor(ctx, "divisor", x, y)
    x, y = _broadcast_all(ctx, x, y)
    elem = _elem_of(x)
    remainder = ctx.b.value("rem", [x, y])
    if elem.is_float:
        zero = _like(ctx, 0, x)
        same_sign = _cmp(ctx, "eq", _cmp(ctx, "lt", x, zero), _cmp(ctx, "lt", y, zero))
        wrapped = ctx.b.value("rem", [ctx.b.value("add", [remainder, y]), y])
        return _select(ctx, same_sign, remainder, wrapped)
    if not elem.is_signed:
        return remainder
    return _select(ctx, _floor_fix(ctx, x, y), ctx.b.value("add", [remainder, y]), remainder)


def _lower_truncate_div(ctx, op, x, y):
    """Integers: the core's truncating division (a zero divisor fails with TF's
    InternalError). Floats: x / y rounded toward zero."""
    _check_divisor(ctx, "truncate_divisor", x, y)
    x, y = _broadcast_all(ctx, x, y)
    quotient = ctx.b.value("div", [x, y])
    if not _elem_of(x).is_float:
        return quotient
    negative = _cmp(ctx, "lt", quotient, _like(ctx, 0, quotient))
    return _select(ctx, negative, ctx.b.value("ceil", [quotient]), ctx.b.value("floor", [quotient]))


def _lower_squared_difference(ctx, op, x, y):
    difference = ctx.elementwise("sub", x, y)
    return ctx.b.value("mul", [difference, difference])


def _lower_atan2(ctx, op, y, x):
    _require_float(ctx, op, y, x)
    return ctx.elementwise("atan2", y, x)


def _lower_pow(ctx, op, x, y):
    """Core pow: C pow for floats; exponentiation by squaring for integers, where TF
    fails on a negative exponent (when the result has elements)."""
    if _elem_of(y).is_signed:
        shape = ctx.broadcast_shapes(tuple(x.type.shape), tuple(y.type.shape))
        ctx.check("exponent", y, unless_empty=None if _static_nonempty(shape) else list(shape))
    return ctx.elementwise("pow", x, y)


def _lower_equality(direction: str):
    """Equal/NotEqual; with incompatible_shape_error=False, statically incompatible shapes
    give TF's scalar false (Equal) / true (NotEqual)."""
    def lower(ctx, op, x, y):
        if not op._attrs.get("incompatible_shape_error", True) and not _static_broadcastable(x, y):
            return scalar_constant(ctx, direction == "ne", _E.PRED)
        return _cmp(ctx, direction, x, y)

    return lower


def _static_broadcastable(x, y) -> bool:
    a, b = tuple(x.type.shape), tuple(y.type.shape)
    for da, db in zip(reversed(a), reversed(b)):
        if isinstance(da, int) and isinstance(db, int) and da != db and 1 not in (da, db):
            return False
    return True


_UNARY_LOWER = {
    "Neg": _unary_core("neg", float_only=False), "Abs": _unary_core("abs", float_only=False),
    "Sign": _lower_sign, "Square": _lower_square, "Sqrt": _unary_core("sqrt"), "Rsqrt": _unary_core("rsqrt"),
    "Exp": _unary_core("exp"), "Expm1": _unary_core("expm1"), "Log": _unary_core("log"),
    "Log1p": _unary_core("log1p"), "Sin": _unary_core("sin"), "Cos": _unary_core("cos"), "Tan": _lower_tan,
    "Tanh": _unary_core("tanh"), "Sigmoid": _unary_core("logistic"), "Reciprocal": _lower_reciprocal,
    "Floor": _unary_core("floor"), "Ceil": _unary_core("ceil"), "Round": _lower_round,
    "Rint": _unary_core("round"), "Erf": _unary_core("erf"), "IsNan": _lower_is_nan, "IsInf": _lower_is_inf,
    "IsFinite": _lower_is_finite, "LogicalNot": _lower_logical_not,
}
_BINARY_LOWER = {
    "Add": _binary_core("add"), "AddV2": _binary_core("add"), "Sub": _binary_core("sub"),
    "Mul": _binary_core("mul"), "RealDiv": _binary_core("div"),
    # TF1's Div: C truncation for integers (like TruncateDiv), true division for floats.
    "Div": _lower_int_division("div", "divisor"),
    "FloorDiv": _lower_floor_div, "TruncateDiv": _lower_truncate_div, "FloorMod": _lower_floor_mod,
    "TruncateMod": _lower_int_division("rem", "truncate_divisor"), "Pow": _lower_pow, "Maximum": _binary_core("max"),
    "Minimum": _binary_core("min"), "SquaredDifference": _lower_squared_difference, "Atan2": _lower_atan2,
    "Less": _compare_core("lt"), "LessEqual": _compare_core("le"), "Greater": _compare_core("gt"),
    "GreaterEqual": _compare_core("ge"), "LogicalAnd": _binary_core("and"), "LogicalOr": _binary_core("or"),
    "Equal": _lower_equality("eq"), "NotEqual": _lower_equality("ne"),
}


# -- lowerings: reductions ----------------------------------------------------------------
def _static_axes(ctx, op, x, axes) -> list:
    """Sorted non-negative reduction axes (must be known while compiling; a repeated axis
    is an error, as in TF's ReductionHelper)."""
    known = ctx.static(axes)
    if known is None:
        ctx.fail("the reduction axes must be known at compile time")
    rank = x.type.rank
    out = set()
    for axis in np.asarray(known).reshape(-1).tolist():
        axis = int(axis)
        if not -rank <= axis < rank:
            ctx.fail(f"Invalid reduction dimension {axis} for input with {rank} dimensions.")
        if axis % rank in out:
            ctx.fail(f"Invalid reduction arguments: Axes contains duplicate dimension: {axis % rank}")
        out.add(axis % rank)
    return sorted(out)


def _keep_dims(ctx, op, x, result, dims):
    if not op._attrs.get("keep_dims", False):
        return result
    shape = [1 if i in dims else d for i, d in enumerate(x.type.shape)]
    return ctx.reshape(result, shape)


_STATIC_REDUCTIONS = {"sum": np.sum, "prod": np.prod, "max": np.max, "min": np.min}


def _fold_reduction(ctx, op, x, dims, kind):
    """An integer reduction of a value known while compiling (shape arithmetic such as
    reduce_prod(tf.shape(x)) in gradients), or None."""
    if kind not in _STATIC_REDUCTIONS or not _elem_of(x).is_int or ctx.static(x) is None:
        return None
    keep = bool(op._attrs.get("keep_dims", False))

    def reduce(value):
        return np.asarray(_STATIC_REDUCTIONS[kind](value, axis=tuple(dims), keepdims=keep))

    try:
        return ic.fold(ctx, reduce, [x], _elem_of(x))
    except TypeError:  # max/min of symbolic dims
        return None


def _reduction(kind: str):
    def lower(ctx, op, x, axes):
        dims = _static_axes(ctx, op, x, axes)
        if kind in ("and", "or") and not _elem_of(x).is_pred:
            ctx.fail(f"{op.type} takes bool values")
        folded = _fold_reduction(ctx, op, x, dims, kind)
        if folded is not None:
            return folded
        return _keep_dims(ctx, op, x, ctx.reduce(x, kind, dims), dims)

    lower.__doc__ = f"Core ``reduce {kind}`` over the static axes (keep_dims -> reshape)."
    return lower


def dims_count(ctx, dims, elem):
    """The product of ``dims`` (ints or symbolic) as a scalar of ``elem``."""
    from tfc.ir.dims import dims_product

    count = dims_product(list(dims))
    if isinstance(count, int):
        return scalar_constant(ctx, count, elem)
    value = ctx.from_static(np.array([count], dtype=object), _E.I64)
    return ctx.convert(ctx.reshape(value, ()), elem)


def _lower_mean(ctx, op, x, axes):
    """sum / (product of the reduced dims), TF's MeanReducer: integer means sum in i64
    (so u8 [200, 200] means 200; i64 sums wrap, as TF's do), truncate, and are 0 over no
    elements; f16 sums in f32 and rounds the quotient once (TF's half specialisation)."""
    dims = _static_axes(ctx, op, x, axes)
    elem = _elem_of(x)
    if not dims:
        return _keep_dims(ctx, op, x, x, dims)
    compute = _E.F32 if elem is _E.F16 else _E.I64 if elem.is_int else elem
    total = ctx.reduce(ctx.convert(x, compute), "sum", dims)
    sizes = [x.type.shape[d] for d in dims]
    count = dims_count(ctx, sizes, compute)
    if elem.is_int and not _static_nonempty(sizes):  # an empty sum is 0: divide it by 1
        count = ctx.elementwise("max", count, scalar_constant(ctx, 1, compute))
    mean = ctx.convert(ctx.elementwise("div", total, count), elem)
    return _keep_dims(ctx, op, x, mean, dims)


_REDUCTION_LOWER = {"Sum": _reduction("sum"), "Mean": _lower_mean, "Prod": _reduction("prod"),
                    "Max": _reduction("max"), "Min": _reduction("min"), "All": _reduction("and"),
                    "Any": _reduction("or")}


def _static_axis(ctx, value, rank: int, what: str) -> int:
    known = ctx.static(value)
    if known is None:
        ctx.fail(f"the {what} must be known at compile time")
    known = np.asarray(known).reshape(-1)
    if known.size != 1:
        ctx.fail(f"the {what} must be a scalar")
    axis = int(known[0])
    if not -rank <= axis < rank:
        ctx.fail(f"Expected {what} in the range [{-rank}, {rank}), but got {axis}")
    return axis % rank


def _arg_reduce(core_op: str):
    def lower(ctx, op, x, dimension):
        if x.type.rank == 0:
            ctx.fail(f"{op.type} of a scalar: there is no dimension to reduce")
        axis = _static_axis(ctx, dimension, x.type.rank, "dimension")
        if _elem_of(x).is_pred:
            ctx.fail(f"{op.type} of bool values has no kernel")
        out_elem = ctx.elem(op._attrs["output_type"])
        shape = [d for i, d in enumerate(x.type.shape) if i != axis]
        if not (isinstance(x.type.shape[axis], int) and x.type.shape[axis] > 0):
            ctx.check("reduction_axis", x, axis=axis)  # TF: "Reduction axis 0 is empty in shape [0]"
        return ctx.b.value(core_op, [x], {"dim": axis},
                           result_type=ir.TensorType(out_elem, tuple(shape)))

    lower.__doc__ = f"Core ``{core_op}`` (first index among ties) with TF's output_type; an empty axis fails."
    return lower


# -- lowerings: AddN, Cast, Cumsum, MatMul ---------------------------------------------------
def _lower_add_n(ctx, op, *inputs):
    """A chain of adds, left to right (TF's AddN sums in that order too)."""
    total = inputs[0]
    for value in inputs[1:]:
        total = ctx.elementwise("add", total, value)
    return total


def _lower_cast(ctx, op, x):
    """Core convert (float -> int truncates toward zero, saturating; x -> bool is x != 0;
    bool -> number is 0/1). ``Truncate`` only matters between float widths, where convert
    rounds to nearest like TF's default."""
    return ctx.convert(x, ctx.elem(op._attrs["DstT"]))


def _lower_cumulative(ctx, op, x, axis, kind: str):
    """A core ``scan`` along the axis: sequential, as TF's kernels sum (any length, also one
    known only at run time)."""
    rank = x.type.rank
    name = {"sum": "Cumsum", "prod": "Cumprod"}[kind]
    if rank == 0:
        ctx.fail(f"{name} of a scalar: input must be at least rank 1")
    axis = _static_axis(ctx, axis, rank, "axis")
    if _elem_of(x).is_pred:
        ctx.fail(f"{name} of bool values has no kernel")
    return ctx.b.value("scan", [x], {"op": kind, "dim": axis, "exclusive": bool(op._attrs.get("exclusive", False)),
                                     "reverse": bool(op._attrs.get("reverse", False))})


def _lower_cumsum(ctx, op, x, axis):
    return _lower_cumulative(ctx, op, x, axis, "sum")


def _contract(ctx, a, a_dim: int, b, b_dim: int):
    """Unify the contracted dims (symbolic ones are checked at run time)."""
    ctx.unify(a.type.shape[a_dim], b.type.shape[b_dim], (a.type.shape, b.type.shape))


def _lower_matmul(ctx, op, a, b):
    """dot contracting a's dim 1 (0 when transpose_a) with b's dim 0 (1 when transpose_b)."""
    if _elem_of(a).is_pred:
        ctx.fail("MatMul of bool values has no kernel")
    lc = 0 if op._attrs.get("transpose_a") else 1
    rc = 1 if op._attrs.get("transpose_b") else 0
    _contract(ctx, a, lc, b, rc)
    return ctx.b.value("dot", [a, b], {"contract": [[lc], [rc]]})


def _lower_batch_matmul_v2(ctx, op, x, y):
    """Batch dims broadcast (numpy rules) to a common shape first; then one dot with those
    batch dims, contracting x's last dim (second to last with adj_x) with y's second to
    last (last with adj_y). Real types only, so the adjoint is the transpose."""
    adj_x, adj_y = op._attrs.get("adj_x", False), op._attrs.get("adj_y", False)
    rx, ry = x.type.rank, y.type.rank
    if rx < 2 or ry < 2:
        ctx.fail("BatchMatMulV2 needs operands of rank >= 2")
    lc = rx - 2 if adj_x else rx - 1
    rc = ry - 1 if adj_y else ry - 2
    _contract(ctx, x, lc, y, rc)
    batch = ctx.broadcast_shapes(tuple(x.type.shape[:-2]), tuple(y.type.shape[:-2]))
    x = ctx.broadcast_to(x, tuple(batch) + tuple(x.type.shape[-2:]))
    y = ctx.broadcast_to(y, tuple(batch) + tuple(y.type.shape[-2:]))
    nb = len(batch)
    lc, rc = nb + (lc - (rx - 2)), nb + (rc - (ry - 2))
    attrs = {"contract": [[lc], [rc]]}
    if nb:
        attrs["batch"] = [list(range(nb)), list(range(nb))]
    return ctx.b.value("dot", [x, y], attrs)


# -- gradients (tf.gradients; see docs/CONTRIBUTING-ops.md "Gradients") -------------------
# Each function is an entry's ``gradient(op, *grads)``, building the graph TF 1.15's
# python/ops/math_grad.py builds (graph mode, so ``op.skip_input_indices`` never applies;
# ``compat.forward_compatible(2019, 9, 14)`` is False in 1.15, so the plain products are
# used rather than mul_no_nan/xdivy). The ops get TF's names under ``gradients/<op>_grad``.
def _shape_tuple(t):
    """Tensor._shape_tuple(): None for an unknown rank, else a tuple with None for unknown dims."""
    dims = t.shape.dims
    return None if dims is None else tuple(d.value for d in dims)


def _shapes_fully_specified_and_equal(x, y, grad) -> bool:
    x_shape, y_shape, grad_shape = _shape_tuple(x), _shape_tuple(y), _shape_tuple(grad)
    return x_shape == y_shape and x_shape == grad_shape and x_shape is not None and None not in x_shape


def _broadcast_gradient_args(sx, sy):
    """gen_array_ops.broadcast_gradient_args: (rx, ry)."""
    return apply_op("BroadcastGradientArgs", [sx, sy]).outputs


def _control_dependencies(tensors):
    from ..graph import control_dependencies

    return control_dependencies(tensors)


def _safe_shape_div(x, y):
    """Divides ``x / y`` assuming ``x, y >= 0``, treating ``0 / 0 = 0``."""
    return x // maximum(y, 1)


def reduced_shape(input_shape, axes):
    """TF's math_ops.reduced_shape: input_shape with the reduced axes set to 1 (a
    DynamicStitch of range(rank) and the axes)."""
    input_shape = cast(input_shape, dtypes.int32)
    axes = cast(axes, dtypes.int32)
    input_rank = array_ops.size(input_shape)
    axes = (axes + input_rank) % input_rank
    axes_shape = array_ops.shape(axes)
    return dynamic_stitch([array_ops.range(input_rank), axes], [input_shape, array_ops.fill(axes_shape, 1)])


def _neg_grad(op, grad):
    return -grad


def _abs_grad(op, grad):
    return grad * sign(op.inputs[0])


def _square_grad(op, grad):
    x = op.inputs[0]
    with _control_dependencies([grad]):
        x = conj(x)
        y = constant(2.0, dtype=x.dtype)
        return multiply(grad, multiply(x, y))


def _sqrt_grad(op, grad):
    return _out("SqrtGrad", [op.outputs[0], grad])


def _rsqrt_grad(op, grad):
    return _out("RsqrtGrad", [op.outputs[0], grad])


def _reciprocal_grad(op, grad):
    return _out("ReciprocalGrad", [op.outputs[0], grad])


def _exp_grad(op, grad):
    y = op.outputs[0]
    with _control_dependencies([grad]):
        y = conj(y)
        return grad * y


def _expm1_grad(op, grad):
    x = op.inputs[0]
    with _control_dependencies([grad]):
        x = conj(x)
        y = exp(x)
        return grad * y


def _log_grad(op, grad):
    x = op.inputs[0]
    with _control_dependencies([grad]):
        x = conj(x)
        return grad * reciprocal(x)


def _log1p_grad(op, grad):
    x = op.inputs[0]
    with _control_dependencies([grad]):
        x = conj(x)
        return grad * reciprocal(1 + x)


def _tanh_grad(op, grad):
    y = op.outputs[0]
    with _control_dependencies([grad]):
        y = conj(y)
        return _out("TanhGrad", [y, grad])


def _sigmoid_grad(op, grad):
    y = op.outputs[0]
    with _control_dependencies([grad]):
        y = conj(y)
        return _out("SigmoidGrad", [y, grad])


def _sign_grad(op, grad):
    x = op.inputs[0]
    return array_ops.zeros(array_ops.shape(x), dtype=x.dtype)


def _sin_grad(op, grad):
    x = op.inputs[0]
    with _control_dependencies([grad]):
        x = conj(x)
        return grad * cos(x)


def _cos_grad(op, grad):
    x = op.inputs[0]
    with _control_dependencies([grad]):
        x = conj(x)
        return -grad * sin(x)


def _tan_grad(op, grad):
    x = op.inputs[0]
    with _control_dependencies([grad]):
        x = conj(x)
        secx = reciprocal(cos(x))
        secx2 = square(secx)
        return secx2 * grad


def _erf_grad(op, grad):
    x = op.inputs[0]
    two_over_root_pi = constant(2 / np.sqrt(np.pi), dtype=grad.dtype)
    with _control_dependencies([grad]):
        x = conj(x)
        return grad * two_over_root_pi * exp(-square(x))


_UNARY_GRAD = {
    "Neg": _neg_grad, "Abs": _abs_grad, "Sign": _sign_grad, "Square": _square_grad, "Sqrt": _sqrt_grad,
    "Rsqrt": _rsqrt_grad, "Exp": _exp_grad, "Expm1": _expm1_grad, "Log": _log_grad, "Log1p": _log1p_grad,
    "Sin": _sin_grad, "Cos": _cos_grad, "Tan": _tan_grad, "Tanh": _tanh_grad, "Sigmoid": _sigmoid_grad,
    "Reciprocal": _reciprocal_grad, "Erf": _erf_grad,
}
# TF registers gradients that return None for these (and none at all for the predicates).
_NOT_DIFFERENTIABLE = {"Floor", "Ceil", "Round", "Rint", "IsNan", "IsInf", "IsFinite", "LogicalNot", "FloorDiv",
                       "TruncateDiv", "Less", "LessEqual", "Greater", "GreaterEqual", "LogicalAnd",
                       "LogicalOr", "Equal", "NotEqual", "ArgMax", "ArgMin", "All", "Any"}


def _tanh_grad_grad(op, grad):
    with _control_dependencies([grad]):
        a = conj(op.inputs[0])
        b = conj(op.inputs[1])
        return grad * -2.0 * b * a, _out("TanhGrad", [a, grad])


def _sigmoid_grad_grad(op, grad):
    with _control_dependencies([grad]):
        a = conj(op.inputs[0])
        b = conj(op.inputs[1])
        gb = grad * b
        return gb - 2.0 * gb * a, _out("SigmoidGrad", [a, grad])


def _rsqrt_grad_grad(op, grad):
    a = op.inputs[0]  # x^(-1/2)
    b = op.inputs[1]  # the backprop gradient of a
    with _control_dependencies([grad]):
        ca = conj(a)
        cg = conj(grad)
        grad_a = -1.5 * cg * b * square(ca)
        grad_b = _out("RsqrtGrad", [ca, grad])
        return grad_a, grad_b


def _sqrt_grad_grad(op, grad):
    a = op.inputs[0]
    y = op.outputs[0]  # y = 0.5 * b / conj(a)
    with _control_dependencies([grad]):
        ga = grad / a
        return -conj(ga) * y, 0.5 * ga


def _reciprocal_grad_grad(op, grad):
    b = op.inputs[1]
    with _control_dependencies([grad]):
        ca = conj(op.inputs[0])
        cg = conj(grad)
        return cg * -2.0 * b * ca, _out("ReciprocalGrad", [ca, grad])


def _add_grad(op, grad):
    x, y = op.inputs
    if _shapes_fully_specified_and_equal(x, y, grad):
        return grad, grad
    sx = array_ops.shape(x)
    sy = array_ops.shape(y)
    rx, ry = _broadcast_gradient_args(sx, sy)
    return (array_ops.reshape(reduce_sum(grad, rx), sx),
            array_ops.reshape(reduce_sum(grad, ry), sy))


def _sub_grad(op, grad):
    x, y = op.inputs
    if _shapes_fully_specified_and_equal(x, y, grad):
        return grad, -grad
    sx = array_ops.shape(x)
    sy = array_ops.shape(y)
    rx, ry = _broadcast_gradient_args(sx, sy)
    return (array_ops.reshape(reduce_sum(grad, rx), sx),
            array_ops.reshape(reduce_sum(-grad, ry), sy))


def _mul_grad(op, grad):
    x, y = op.inputs
    if _shapes_fully_specified_and_equal(x, y, grad) and grad.dtype in (dtypes.int32, dtypes.float32):
        return multiply(grad, y), multiply(grad, x)
    sx = array_ops.shape(x)
    sy = array_ops.shape(y)
    rx, ry = _broadcast_gradient_args(sx, sy)
    x = conj(x)
    y = conj(y)
    return (array_ops.reshape(reduce_sum(multiply(grad, y), rx), sx),
            array_ops.reshape(reduce_sum(multiply(x, grad), ry), sy))


def _div_grad(op, grad):
    """Div (TF1's division op): math_ops.divide, i.e. ``truediv`` ops."""
    x, y = op.inputs
    sx = array_ops.shape(x)
    sy = array_ops.shape(y)
    rx, ry = _broadcast_gradient_args(sx, sy)
    x = conj(x)
    y = conj(y)
    return (array_ops.reshape(reduce_sum(divide(grad, y), rx), sx),
            array_ops.reshape(reduce_sum(grad * divide(divide(-x, y), y), ry), sy))


def _real_div_grad(op, grad):
    x, y = op.inputs
    sx = array_ops.shape(x)
    sy = array_ops.shape(y)
    rx, ry = _broadcast_gradient_args(sx, sy)
    x = conj(x)
    y = conj(y)
    return (array_ops.reshape(reduce_sum(realdiv(grad, y), rx), sx),
            array_ops.reshape(reduce_sum(grad * realdiv(realdiv(-x, y), y), ry), sy))


def _floor_mod_grad(op, grad):
    x = conj(op.inputs[0])
    y = conj(op.inputs[1])
    sx = array_ops.shape(x)
    sy = array_ops.shape(y)
    rx, ry = _broadcast_gradient_args(sx, sy)
    floor_xy = floor_div(x, y)
    gx = array_ops.reshape(reduce_sum(grad, rx), sx)
    gy = array_ops.reshape(reduce_sum(grad * negative(floor_xy), ry), sy)
    return gx, gy


def _pow_grad(op, grad):
    """grad * (y * x^(y - 1), z * log(x)), with log(x) taken as 0 where x <= 0."""
    x, y = op.inputs
    z = op.outputs[0]
    sx = array_ops.shape(x)
    sy = array_ops.shape(y)
    rx, ry = _broadcast_gradient_args(sx, sy)
    x = conj(x)
    y = conj(y)
    z = conj(z)
    gx = array_ops.reshape(reduce_sum(grad * y * pow(x, y - 1), rx), sx)
    if x.dtype.is_complex:
        mask = not_equal(x, 0)
    else:
        mask = x > 0
    safe_x = array_ops.where(mask, x, array_ops.ones_like(x))
    log_x = array_ops.where(mask, log(safe_x), array_ops.zeros_like(x))
    gy = array_ops.reshape(reduce_sum(grad * z * log_x, ry), sy)
    return gx, gy


def _maximum_minimum_grad(selector_op):
    def gradient(op, grad):
        x, y = op.inputs
        gdtype = grad.dtype
        sx = array_ops.shape(x)
        sy = array_ops.shape(y)
        gradshape = array_ops.shape(grad)
        zeros = array_ops.zeros(gradshape, gdtype)
        xmask = selector_op(x, y)
        rx, ry = _broadcast_gradient_args(sx, sy)
        xgrad = array_ops.where(xmask, grad, zeros)
        ygrad = array_ops.where(xmask, zeros, grad)
        gx = array_ops.reshape(reduce_sum(xgrad, rx), sx)
        gy = array_ops.reshape(reduce_sum(ygrad, ry), sy)
        return gx, gy

    return gradient


def _squared_difference_grad(op, grad):
    x, y = op.inputs
    with _control_dependencies([grad]):
        # The parens make grad * 2.0 a Mul of a Tensor (TF's comment about IndexedSlices).
        x_grad = scalar_mul(2.0, grad) * (x - y)
    if _shapes_fully_specified_and_equal(x, y, grad):
        return x_grad, -x_grad
    sx = array_ops.shape(x)
    sy = array_ops.shape(y)
    rx, ry = _broadcast_gradient_args(sx, sy)
    return (array_ops.reshape(reduce_sum(x_grad, rx), sx),
            -array_ops.reshape(reduce_sum(x_grad, ry), sy))


def _atan2_grad(op, grad):
    """grad * x / (x^2 + y^2), grad * -y / (x^2 + y^2), each summed back to its input's
    shape when the op broadcast (as TF 2.x does; TF 1.15 raised there)."""
    y, x = op.inputs
    with _control_dependencies([grad]):
        grad_inv = grad / (square(x) + square(y))
        gy = x * grad_inv
        gx = -y * grad_inv
        if _shapes_fully_specified_and_equal(y, x, grad):
            return gy, gx
        sy, sx = array_ops.shape(y), array_ops.shape(x)
        ry, rx = _broadcast_gradient_args(sy, sx)
        return array_ops.reshape(reduce_sum(gy, ry), sy), array_ops.reshape(reduce_sum(gx, rx), sx)


_BINARY_GRAD = {
    "Add": _add_grad, "AddV2": _add_grad, "Sub": _sub_grad, "Mul": _mul_grad, "Div": _div_grad,
    "RealDiv": _real_div_grad, "FloorMod": _floor_mod_grad, "Pow": _pow_grad,
    "Maximum": _maximum_minimum_grad(lambda x, y: greater_equal(x, y)),
    "Minimum": _maximum_minimum_grad(lambda x, y: less_equal(x, y)),
    "SquaredDifference": _squared_difference_grad, "Atan2": _atan2_grad,
}


def _sum_grad(op, grad):
    """Reduce-all with a known rank: Reshape to ones and Tile; otherwise reduced_shape."""
    from ..tensor_util import constant_value

    input_0_shape = _shape_tuple(op.inputs[0])
    if input_0_shape is not None:
        axes = constant_value(op.inputs[1])
        if axes is not None:
            rank = len(input_0_shape)
            if np.array_equal(axes, np.arange(rank)):  # Reduce all dims.
                grad = array_ops.reshape(grad, [1] * rank)
                if None not in input_0_shape:
                    input_shape = constant(input_0_shape, dtype=dtypes.int32)
                else:
                    input_shape = array_ops.shape(op.inputs[0])
                return [array_ops.tile(grad, input_shape), None]
    input_shape = array_ops.shape(op.inputs[0])
    output_shape_kept_dims = reduced_shape(input_shape, op.inputs[1])
    tile_scaling = _safe_shape_div(input_shape, output_shape_kept_dims)
    grad = array_ops.reshape(grad, output_shape_kept_dims)
    return [array_ops.tile(grad, tile_scaling), None]


def _mean_grad(op, grad):
    sum_grad = _sum_grad(op, grad)[0]
    input_shape = _shape_tuple(op.inputs[0])
    output_shape = _shape_tuple(op.outputs[0])
    if (input_shape is not None and output_shape is not None and None not in input_shape
            and None not in output_shape):
        input_size = int(np.prod(input_shape, dtype=np.int64))
        output_size = int(np.prod(output_shape, dtype=np.int64))
        factor = input_size // max(output_size, 1)
        factor = constant(factor, dtype=sum_grad.dtype)
    else:
        input_shape = array_ops.shape(op.inputs[0])
        output_shape = array_ops.shape(op.outputs[0])
        factor = _safe_shape_div(reduce_prod(input_shape), reduce_prod(output_shape))
    return truediv(sum_grad, cast(factor, sum_grad.dtype)), None


def _min_or_max_grad(op, grad):
    """The gradient goes to the inputs equal to the result, divided evenly among ties."""
    input_shape = array_ops.shape(op.inputs[0])
    output_shape_kept_dims = reduced_shape(input_shape, op.inputs[1])
    y = op.outputs[0]
    y = array_ops.reshape(y, output_shape_kept_dims)
    grad = array_ops.reshape(grad, output_shape_kept_dims)
    indicators = cast(equal(y, op.inputs[0]), grad.dtype)
    num_selected = array_ops.reshape(reduce_sum(indicators, op.inputs[1]), output_shape_kept_dims)
    return [divide(indicators, num_selected) * grad, None]


def _prod_grad(op, grad):
    """Products of everything before and after each entry (two exclusive cumprods over
    the reduced dims packed into one), so zeros in the input are handled."""
    from ..graph import device

    input_shape = array_ops.shape(op.inputs[0])
    reduction_indices = array_ops.reshape(op.inputs[1], [-1])
    output_shape_kept_dims = reduced_shape(input_shape, op.inputs[1])
    tile_scaling = _safe_shape_div(input_shape, output_shape_kept_dims)
    grad = array_ops.reshape(grad, output_shape_kept_dims)
    grad = array_ops.tile(grad, tile_scaling)
    with device("/cpu:0"):
        rank = array_ops.rank(op.inputs[0])
        reduction_indices = (reduction_indices + rank) % rank
        reduced = cast(reduction_indices, dtypes.int32)
        idx = array_ops.range(0, rank)
        other, _ = setdiff1d(idx, reduced)
        perm = array_ops.concat([reduced, other], 0)
        reduced_num = reduce_prod(array_ops.gather(input_shape, reduced))
        other_num = reduce_prod(array_ops.gather(input_shape, other))
    permuted = array_ops.transpose(op.inputs[0], perm)
    permuted_shape = array_ops.shape(permuted)
    reshaped = array_ops.reshape(permuted, (reduced_num, other_num))
    left = cumprod(reshaped, axis=0, exclusive=True)
    right = cumprod(reshaped, axis=0, exclusive=True, reverse=True)
    y = array_ops.reshape(conj(left) * conj(right), permuted_shape)
    out = grad * array_ops.transpose(y, array_ops.invert_permutation(perm))
    return array_ops.reshape(out, input_shape), None


_REDUCTION_GRAD = {"Sum": _sum_grad, "Mean": _mean_grad, "Prod": _prod_grad, "Max": _min_or_max_grad,
                   "Min": _min_or_max_grad}


def _add_n_grad(op, grad):
    """Copies the gradient to all inputs."""
    return [grad] * len(op.inputs)


def _cast_grad(op, grad):
    floats = (dtypes.float16, dtypes.float32, dtypes.float64, dtypes.bfloat16, dtypes.complex64, dtypes.complex128)
    src_type = op.inputs[0].dtype.base_dtype
    dst_type = grad.dtype.base_dtype
    if src_type in floats and dst_type in floats:
        return cast(grad, src_type)
    return None


def _cumsum_grad(op, grad):
    axis = op.inputs[1]
    exclusive = op.get_attr("exclusive")
    reverse = op.get_attr("reverse")
    return [cumsum(grad, axis, exclusive=exclusive, reverse=not reverse), None]


def _cumprod_grad(op, grad):
    x = op.inputs[0]
    axis = op.inputs[1]
    exclusive = op.get_attr("exclusive")
    reverse = op.get_attr("reverse")
    prod = cumprod(x, axis, exclusive=exclusive, reverse=reverse)
    out = cumsum(prod * grad, axis, exclusive=exclusive, reverse=not reverse)
    return [out / x, None]


def _conj_grad(op, grad):
    return conj(grad)


def _mat_mul(a, b, transpose_a=False, transpose_b=False):
    """gen_math_ops.mat_mul."""
    return _out("MatMul", [a, b], {"transpose_a": transpose_a, "transpose_b": transpose_b})


def _matmul_grad(op, grad):
    t_a = op.get_attr("transpose_a")
    t_b = op.get_attr("transpose_b")
    a = conj(op.inputs[0])
    b = conj(op.inputs[1])
    if not t_a and not t_b:
        grad_a = _mat_mul(grad, b, transpose_b=True)
        grad_b = _mat_mul(a, grad, transpose_a=True)
    elif not t_a and t_b:
        grad_a = _mat_mul(grad, b)
        grad_b = _mat_mul(grad, a, transpose_a=True)
    elif t_a and not t_b:
        grad_a = _mat_mul(b, grad, transpose_b=True)
        grad_b = _mat_mul(a, grad)
    else:
        grad_a = _mat_mul(b, grad, transpose_a=True, transpose_b=True)
        grad_b = _mat_mul(grad, a, transpose_a=True, transpose_b=True)
    return grad_a, grad_b


def _batch_matmul_v2_grad(op, grad):
    """The matmul gradients, then a reduction over the broadcast batch dims."""
    x, y = op.inputs
    adj_x = op.get_attr("adj_x")
    adj_y = op.get_attr("adj_y")
    if not adj_x:
        if not adj_y:
            grad_x = matmul(grad, y, adjoint_a=False, adjoint_b=True)
            grad_y = matmul(x, grad, adjoint_a=True, adjoint_b=False)
        else:
            grad_x = matmul(grad, y, adjoint_a=False, adjoint_b=False)
            grad_y = matmul(grad, x, adjoint_a=True, adjoint_b=False)
    else:
        if not adj_y:
            grad_x = matmul(y, grad, adjoint_a=False, adjoint_b=True)
            grad_y = matmul(x, grad, adjoint_a=False, adjoint_b=False)
        else:
            grad_x = matmul(y, grad, adjoint_a=True, adjoint_b=True)
            grad_y = matmul(grad, x, adjoint_a=True, adjoint_b=True)
    shape_x_static = x.get_shape()
    shape_y_static = y.get_shape()
    if not (shape_x_static.is_fully_defined() and shape_y_static.is_fully_defined()
            and shape_x_static == shape_y_static):
        sx = array_ops.shape(x)
        sy = array_ops.shape(y)
        rx, ry = _broadcast_gradient_args(sx[:-2], sy[:-2])
        grad_x = array_ops.reshape(reduce_sum(grad_x, rx), sx)
        grad_y = array_ops.reshape(reduce_sum(grad_y, ry), sy)
    return grad_x, grad_y


_UNARY_OPS = [
    ("Neg", _UNARY), ("Abs", _ABS), ("Sign", _UNARY), ("Square", _UNARY), ("Sqrt", _UNARY_COMPLEX),
    ("Rsqrt", _UNARY_COMPLEX), ("Exp", _UNARY_COMPLEX), ("Expm1", _UNARY_COMPLEX), ("Log", _UNARY_COMPLEX),
    ("Log1p", _UNARY_COMPLEX), ("Sin", _UNARY_COMPLEX), ("Cos", _UNARY_COMPLEX), ("Tan", _UNARY),
    ("Tanh", _UNARY_COMPLEX), ("Sigmoid", _UNARY_COMPLEX), ("Reciprocal", _UNARY), ("Floor", _UNARY_REAL),
    ("Ceil", _UNARY_REAL), ("Round", _UNARY), ("Rint", _UNARY_REAL), ("Erf", _UNARY_REAL),
]

def _grad_methods(type_name: str) -> dict:
    """The ``gradient`` (or ``not_differentiable``) of a table-built entry."""
    if type_name in _NOT_DIFFERENTIABLE:
        return {"not_differentiable": True}
    for table in (_UNARY_GRAD, _BINARY_GRAD, _REDUCTION_GRAD):
        if type_name in table:
            return {"gradient": table[type_name]}
    return {}


for _name, _allowed in _UNARY_OPS:
    _register_cwise(_name, ["x: T"], "y: T", {"T": Attr("type", allowed=_allowed)}, unchanged_shape,
                    lower=_UNARY_LOWER[_name], **_grad_methods(_name))
for _name in ("IsNan", "IsInf", "IsFinite"):
    _register_cwise(_name, ["x: T"], "y: bool", {"T": Attr("type", allowed=_UNARY_REAL)}, unchanged_shape,
                    lower=_UNARY_LOWER[_name], **_grad_methods(_name))
_register_cwise("LogicalNot", ["x: bool"], "y: bool", {}, unchanged_shape, lower=_UNARY_LOWER["LogicalNot"],
                not_differentiable=True)

_BINARY_OPS = [
    ("Add", _ADD), ("AddV2", _ADD_V2), ("Sub", _BINARY_MORE), ("Mul", _BINARY_MORE), ("RealDiv", _BINARY_MORE),
    ("Div", _BINARY_MORE), ("FloorDiv", _BINARY_MORE), ("TruncateDiv", _BINARY_MORE), ("FloorMod", _FLOOR_MOD),
    ("TruncateMod", _FLOOR_MOD), ("Pow", _POW), ("Maximum", _MIN_MAX), ("Minimum", _MIN_MAX),
    ("SquaredDifference", _UNARY),
]
# Integer arithmetic on values known while compiling (shape computations such as
# ``tf.shape(x)[0] * 3``) stays known, so Reshape/Fill/Tile... downstream can use it.
def _fold_floor_mod(x, y):
    """x mod y (floor) of known integers; None when a value is symbolic or y has a zero."""
    if ic.is_symbolic(x) or ic.is_symbolic(y):
        return None
    x, y = np.broadcast_arrays(x, y)
    if np.any(y == 0):
        return None
    return np.mod(x, y)


def _nonnegative_dim(d) -> bool:
    """A symbolic dim expression that is a sum of products of run-time dims (>= 0)."""
    from tfc.ir.dims import SymExpr

    return isinstance(d, SymExpr) and all(c > 0 and m for m, c in d.terms.items())


def _fold_maximum(x, y):
    """max of known integers. A symbolic dim d stays d in max(d, c) for c <= 1: dims that
    are 1 at run time are specialised to 1, so a symbolic dim is >= 2 or 0 (and TF's shape
    arithmetic only uses max(d, 1) as a divisor of a multiple of d, where 0 and 1 agree)."""
    x, y = np.broadcast_arrays(x, y)
    out = np.empty(x.shape, dtype=object)
    for i, (a, b) in enumerate(zip(x.reshape(-1).tolist(), y.reshape(-1).tolist())):
        if isinstance(a, int) and isinstance(b, int):
            out.reshape(-1)[i] = max(a, b)
        elif a == b:
            out.reshape(-1)[i] = a
        elif _nonnegative_dim(a) and isinstance(b, int) and b <= 1:
            out.reshape(-1)[i] = a
        elif _nonnegative_dim(b) and isinstance(a, int) and a <= 1:
            out.reshape(-1)[i] = b
        else:
            return None
    return out


def _fold_minimum(x, y):
    if ic.is_symbolic(x) or ic.is_symbolic(y):
        return None
    return np.minimum(x, y)


_STATIC_INT_BINARY = {"Add": np.add, "AddV2": np.add, "Sub": np.subtract, "Mul": np.multiply,
                      "FloorDiv": np.floor_divide, "FloorMod": _fold_floor_mod, "Maximum": _fold_maximum,
                      "Minimum": _fold_minimum}


def _static_int_binary(np_fn, lower):
    def lower_with_static(ctx, op, x, y):
        known_x, known_y = ctx.static(x), ctx.static(y)
        dtype = op.outputs[0].dtype
        if known_x is not None and known_y is not None and dtype.is_integer:
            if not (np_fn is np.floor_divide and np.any(known_y == 0)):
                result = np_fn(ic.as_dim_array(known_x), ic.as_dim_array(known_y))
                if result is not None:
                    return ic.from_static(ctx, result, ctx.elem(dtype))
        return lower(ctx, op, x, y)

    return lower_with_static


for _name, _allowed in _BINARY_OPS:
    _lower = _BINARY_LOWER[_name]
    if _name in _STATIC_INT_BINARY:
        _lower = _static_int_binary(_STATIC_INT_BINARY[_name], _lower)
    _register_cwise(_name, ["x: T", "y: T"], "z: T", {"T": Attr("type", allowed=_allowed)}, _broadcast_infer,
                    lower=_lower, **_grad_methods(_name))
_register_cwise("Atan2", ["y: T", "x: T"], "z: T", {"T": Attr("type", allowed=_UNARY_REAL)}, _broadcast_infer,
                lower=_BINARY_LOWER["Atan2"], gradient=_atan2_grad)
for _name in ("Less", "LessEqual", "Greater", "GreaterEqual"):
    _register_cwise(_name, ["x: T", "y: T"], "z: bool", {"T": Attr("type", allowed=REAL_NUMBER_TYPES)},
                    _broadcast_infer, lower=_BINARY_LOWER[_name], not_differentiable=True)
for _name in ("LogicalAnd", "LogicalOr"):
    _register_cwise(_name, ["x: bool", "y: bool"], "z: bool", {}, _broadcast_infer, lower=_BINARY_LOWER[_name],
                    not_differentiable=True)


def _equality_shape(c) -> list:
    """Equal/NotEqual: broadcasting, or an unknown shape when incompatible_shape_error=False."""
    try:
        return _broadcast_shape(c)
    except ShapeError:
        if c.attr("incompatible_shape_error"):
            raise
        return [None]


def _equality_infer(op) -> list:
    return run_shape_fn(op, _equality_shape)


for _name in ("Equal", "NotEqual"):
    _register_cwise(_name, ["x: T", "y: T"], "z: bool",
                    {"T": Attr("type", allowed=_EQUALITY), "incompatible_shape_error": Attr("bool", True)},
                    _equality_infer, lower=_BINARY_LOWER[_name], not_differentiable=True)


@register
class Conj(OpType):
    inputs = ["input: T"]
    outputs = ["output: T"]
    attrs = {"T": Attr("type", _d.complex64, allowed=(_d.complex64, _d.complex128, _d.variant))}
    infer = unchanged_shape

    def lower(ctx, op, x):
        """The conjugate of a real value is itself; complex values never reach the compiler."""
        if _elem_of(x).is_float or _elem_of(x).is_int:
            return x
        ctx.fail("complex numbers are not supported by the compiler")

    gradient = _conj_grad


@register
class AddN(OpType):
    inputs = ["inputs: N * T"]
    outputs = ["sum: T"]
    attrs = {"N": Attr("int"), "T": Attr("type", allowed=NUMBER_TYPES + (_d.variant,))}

    def infer(op):
        return run_shape_fn(op, _add_n_shape)

    lower = _lower_add_n
    gradient = _add_n_grad


def _add_n_shape(c) -> list:
    """Merge every input shape, last to first, as TF's AddN shape function does."""
    current = c.input(c.num_inputs - 1)
    for i in range(c.num_inputs - 2, -1, -1):
        try:
            current = ic.merge(c.input(i), current)
        except ShapeError as e:
            raise ic.append_to_message(e, f"From merging shape {i} with other shapes.") from None
    return [current]


@register
class Cast(OpType):
    inputs = ["x: SrcT"]
    outputs = ["y: DstT"]
    attrs = {"SrcT": Attr("type"), "DstT": Attr("type"), "Truncate": Attr("bool", False)}
    infer = unchanged_shape
    lower = _lower_cast
    gradient = _cast_grad


@register
class Cumsum(OpType):
    inputs = ["x: T", "axis: Tidx"]
    outputs = ["out: T"]
    attrs = {"exclusive": Attr("bool", False), "reverse": Attr("bool", False),
             "T": Attr("type", allowed=NUMBER_TYPES), "Tidx": Attr("type", _d.int32, allowed=INDEX_TYPES)}
    infer = unchanged_shape
    lower = _lower_cumsum
    gradient = _cumsum_grad


# -- registry entries: reductions, arg ops, matmul ----------------------------------------
def _reduction_shape(c) -> list:
    """TF's ReductionShape: constant axes drop (or keep as 1) dims; otherwise unknown."""
    inp = c.input(0)
    ic.with_rank_at_most(c.input(1), 1)
    keep_dims = c.attr("keep_dims")
    value = c.input_tensor(1)
    if value is None or inp is None:
        return [ic.unknown_of_rank(len(inp)) if keep_dims and inp is not None else None]
    rank = len(inp)
    reduced = set()
    for index in np.asarray(value).ravel().tolist():
        if index < -rank or index >= rank:
            raise ShapeError(f"Invalid reduction dimension {index} for input with {rank} dimensions.")
        reduced.add(index + rank if index < 0 else index)
    return [[1 if i in reduced else d for i, d in enumerate(inp) if keep_dims or i not in reduced]]


def _reduction_infer(op) -> list:
    return run_shape_fn(op, _reduction_shape)


for _name in ("Sum", "Mean", "Prod", "Max", "Min"):
    _register_cwise(_name, ["input: T", "reduction_indices: Tidx"], "output: T",
                    {"keep_dims": Attr("bool", False), "T": Attr("type", allowed=NUMBER_TYPES),
                     "Tidx": Attr("type", _d.int32, allowed=INDEX_TYPES)}, _reduction_infer,
                    lower=_REDUCTION_LOWER[_name], **_grad_methods(_name))
for _name in ("All", "Any"):
    _register_cwise(_name, ["input: bool", "reduction_indices: Tidx"], "output: bool",
                    {"keep_dims": Attr("bool", False), "Tidx": Attr("type", _d.int32, allowed=INDEX_TYPES)},
                    _reduction_infer, lower=_REDUCTION_LOWER[_name], not_differentiable=True)


def _arg_op_shape(c) -> list:
    """TF's ArgOpShape."""
    ic.with_rank(c.input(1), 0)
    inp = c.input(0)
    if inp is None:
        return [None]
    rank = len(inp)
    if rank <= 1:
        return [[]]
    value = c.input_tensor(1)
    if value is None:
        return [[None] * (rank - 1)]
    dimension = int(value)
    axis = dimension + rank if dimension < 0 else dimension
    if axis < 0 or axis >= rank:
        raise ShapeError(f"Dimension ({dimension}) must be in the range [{-rank}, {rank}), where {rank} is the "
                         f"number of dimensions in the input.")
    return [[d for i, d in enumerate(inp) if i != axis]]


def _arg_op_infer(op) -> list:
    return run_shape_fn(op, _arg_op_shape)


for _name in ("ArgMax", "ArgMin"):
    _register_cwise(_name, ["input: T", "dimension: Tidx"], "output: output_type",
                    {"T": Attr("type", allowed=NUMBER_TYPES), "Tidx": Attr("type", _d.int32, allowed=INDEX_TYPES),
                     "output_type": Attr("type", _d.int64, allowed=INDEX_TYPES)}, _arg_op_infer,
                    lower=_arg_reduce("argmax" if _name == "ArgMax" else "argmin"), not_differentiable=True)


def _matmul_shape(c) -> list:
    """TF's MatMulShape."""
    a = ic.with_rank(c.input(0), 2)
    b = ic.with_rank(c.input(1), 2)
    transpose_a, transpose_b = c.attr("transpose_a"), c.attr("transpose_b")
    rows = a[1] if transpose_a else a[0]
    cols = b[0] if transpose_b else b[1]
    ic.merge_dim(a[0] if transpose_a else a[1], b[1] if transpose_b else b[0])
    return [[rows, cols]]


@register
class MatMul(OpType):
    inputs = ["a: T", "b: T"]
    outputs = ["product: T"]
    attrs = {"transpose_a": Attr("bool", False), "transpose_b": Attr("bool", False),
             "T": Attr("type", allowed=_MATMUL)}

    def infer(op):
        return run_shape_fn(op, _matmul_shape)

    lower = _lower_matmul
    gradient = _matmul_grad


def _batch_matmul_v2_shape(c) -> list:
    """TF's BatchMatMulV2Shape: inner dims merge, batch dims broadcast."""
    x = ic.with_rank_at_least(c.input(0), 2)
    y = ic.with_rank_at_least(c.input(1), 2)
    adj_x, adj_y = c.attr("adj_x"), c.attr("adj_y")
    rows = ic.dim(x, -1 if adj_x else -2)
    cols = ic.dim(y, -2 if adj_y else -1)
    ic.merge_dim(ic.dim(x, -2 if adj_x else -1), ic.dim(y, -1 if adj_y else -2))
    batch = ic.broadcast(ic.subshape(x, 0, -2), ic.subshape(y, 0, -2))
    return [ic.concatenate(batch, [rows, cols])]


@register
class BatchMatMulV2(OpType):
    inputs = ["x: T", "y: T"]
    outputs = ["output: T"]
    attrs = {"T": Attr("type", allowed=_MATMUL), "adj_x": Attr("bool", False), "adj_y": Attr("bool", False)}

    def infer(op):
        return run_shape_fn(op, _batch_matmul_v2_shape)

    lower = _lower_batch_matmul_v2
    gradient = _batch_matmul_v2_grad


# -- registry entries: the gradient ops of math_grad.py ------------------------------------
# TanhGrad, SigmoidGrad, RsqrtGrad, SqrtGrad, ReciprocalGrad: (y, dy) with y the forward
# op's output; the formulas are TF 1.15's Eigen gradient functors term for term.
_UNARY_GRAD_TYPES = (_d.bfloat16, _d.float16, _d.float32, _d.float64, _d.complex64, _d.complex128)


def _lower_tanh_grad_op(ctx, op, y, dy):
    """dy * (1 - y * y)."""
    _require_float(ctx, op, y)
    return ctx.elementwise("mul", dy, ctx.elementwise("sub", _like(ctx, 1, y), ctx.b.value("mul", [y, y])))


def _lower_sigmoid_grad_op(ctx, op, y, dy):
    """dy * y * (1 - y)."""
    _require_float(ctx, op, y)
    return ctx.elementwise("mul", ctx.elementwise("mul", dy, y), ctx.elementwise("sub", _like(ctx, 1, y), y))


def _lower_rsqrt_grad_op(ctx, op, y, dy):
    """-0.5 * (dy * y) * (y * y)."""
    _require_float(ctx, op, y)
    scaled = ctx.elementwise("mul", _like(ctx, -0.5, y), ctx.elementwise("mul", dy, y))
    return ctx.elementwise("mul", scaled, ctx.b.value("mul", [y, y]))


def _lower_sqrt_grad_op(ctx, op, y, dy):
    """0.5 * dy / y."""
    _require_float(ctx, op, y)
    return ctx.elementwise("div", ctx.elementwise("mul", _like(ctx, 0.5, dy), dy), y)


def _lower_reciprocal_grad_op(ctx, op, y, dy):
    """-dy * y * y."""
    _require_float(ctx, op, y)
    return ctx.elementwise("mul", ctx.elementwise("mul", ctx.b.value("neg", [dy]), y), y)


for _name, _lower, _grad in (("TanhGrad", _lower_tanh_grad_op, _tanh_grad_grad),
                             ("SigmoidGrad", _lower_sigmoid_grad_op, _sigmoid_grad_grad),
                             ("RsqrtGrad", _lower_rsqrt_grad_op, _rsqrt_grad_grad),
                             ("SqrtGrad", _lower_sqrt_grad_op, _sqrt_grad_grad),
                             ("ReciprocalGrad", _lower_reciprocal_grad_op, _reciprocal_grad_grad)):
    _register_cwise(_name, ["y: T", "dy: T"], "z: T", {"T": Attr("type", allowed=_UNARY_GRAD_TYPES)},
                    unchanged_shape, lower=_lower, gradient=_grad)


def _bcast_reduce_indices(s0: list, s1: list) -> tuple:
    """TF's BCast grad_{x,y}_reduce_idx on (static or symbolic) dims: identical shapes
    reduce nothing; otherwise, right-aligned and 1-extended, a dim that is 1 on one side
    only is reduced on that side, a dim that is 1 on both sides on both."""
    if len(s0) == len(s1) and all(a == b for a, b in zip(s0, s1)):
        return [], []
    rank = max(len(s0), len(s1))
    x = [1] * (rank - len(s0)) + list(s0)
    y = [1] * (rank - len(s1)) + list(s1)
    r0, r1 = [], []
    for i, (a, b) in enumerate(zip(x, y)):
        a_one, b_one = a == 1, b == 1
        if a_one and b_one:
            r0.append(i)
            r1.append(i)
        elif a_one:
            r0.append(i)
        elif b_one:
            r1.append(i)
    return r0, r1


def _lower_broadcast_gradient_args(ctx, op, s0, s1):
    """Computed while compiling from the two shapes, which are always known then
    (symbolic dims are never 1 at run time: a fed dim of 1 is specialised to 1)."""
    d0 = ctx.static_dims(s0)
    d1 = ctx.static_dims(s1)
    if d0 is None or d1 is None:
        ctx.fail("BroadcastGradientArgs needs both shapes known at compile time")
    d0 = [ctx.canon(d) for d in d0]
    d1 = [ctx.canon(d) for d in d1]
    for a, b in zip(reversed(d0), reversed(d1)):
        if a != b and a != 1 and b != 1:
            ctx.unify(a, b, (tuple(d0), tuple(d1)))  # fails for two different static dims
    r0, r1 = _bcast_reduce_indices(d0, d1)
    elem = _elem_of(s0)
    return [ctx.from_static(np.array(r0, dtype=np.int64), elem), ctx.from_static(np.array(r1, dtype=np.int64), elem)]


@register
class BroadcastGradientArgs(OpType):
    """The reduction indices for the gradients of ``s0 op s1`` with broadcasting."""
    inputs = ["s0: T", "s1: T"]
    outputs = ["r0: T", "r1: T"]
    attrs = {"T": Attr("type", _d.int32, allowed=INDEX_TYPES)}
    not_differentiable = True

    def infer(op):
        def shape_fn(c):
            ic.with_rank(c.input(0), 1)
            ic.with_rank(c.input(1), 1)
            return [[None], [None]]

        return run_shape_fn(op, shape_fn)

    lower = _lower_broadcast_gradient_args


def _dynamic_stitch_shape(c) -> list:
    """TF's DynamicStitchShapeFunction."""
    n = c.attr("N")
    all_constant = True
    max_index = 0
    extra = None
    for i in range(n):
        value = c.input_tensor(i)
        if value is None:
            all_constant = False
        indices_shape, data_shape = c.input(i), c.input(i + n)
        if indices_shape is None:
            continue
        rank = len(indices_shape)
        if data_shape is not None:
            ic.merge(ic.with_rank_at_least(data_shape, rank)[:rank], indices_shape)
        rest = ic.subshape(data_shape, rank)
        extra = ic.merge(extra, rest)
        if value is not None and np.asarray(value).size:
            max_index = max(max_index, int(np.max(value)))
    first = [max_index + 1 if all_constant else None]
    return [None if extra is None else first + list(extra)]


def _lower_dynamic_stitch(ctx, op, *inputs):
    """Indices must be known while compiling (they are in gradient graphs): folded when
    the data are known too, else one gather from the concatenated rows (a later index
    wins, as in TF; rows no index names are zeros)."""
    n = len(inputs) // 2
    indices, data = inputs[:n], inputs[n:]
    known = [ctx.static(v) for v in indices]
    if any(k is None for k in known):
        ctx.fail("DynamicStitch's indices must be known at compile time")
    known = [np.asarray(k).astype(np.int64).reshape(-1) for k in known]
    size = max([int(k.max()) + 1 for k in known if k.size] + [0])
    if any((k < 0).any() for k in known):
        ctx.fail("DynamicStitch: indices must be non-negative")
    source = np.full(size, -1, dtype=np.int64)  # row of the concatenation for each output row
    offset = 0
    for k in known:
        source[k] = offset + np.arange(k.size)
        offset += k.size
    elem = _elem_of(data[0])
    slice_shape = tuple(data[0].type.shape[indices[0].type.rank:])

    def stitch(*values):
        rows = np.concatenate([np.asarray(v).reshape((-1,) + np.asarray(v).shape[len(i.type.shape):])
                               for v, i in zip(values, indices)], axis=0) if values else None
        out = np.zeros((size,) + rows.shape[1:], dtype=rows.dtype)
        covered = source >= 0
        out[covered] = rows[source[covered]]
        return out

    if all(isinstance(d, int) for v in data for d in v.type.shape):
        folded = ic.fold(ctx, stitch, list(data), elem)
        if folded is not None:
            return folded
    rows = [ctx.reshape(v, (int(k.size),) + slice_shape) for v, k in zip(data, known)]
    zero = ctx.broadcast_in_dim(_like(ctx, 0, data[0]), (1,) + slice_shape, [])
    table = ctx.b.value("concatenate", rows + [zero], {"dim": 0}) if rows else zero
    picks = np.where(source >= 0, source, offset).astype(np.int32)
    return ctx.b.value("gather", [table, ctx.constant(picks)], {"axis": 0})


def _dynamic_stitch_host(op, *values):
    """DynamicStitch with indices known only at run time (a DynamicPartition's, in its
    gradient): merged[indices[m][i]] = data[m][i], a later index wins, other rows are 0."""
    from ..errors import InvalidArgumentError

    n = len(values) // 2
    indices = [np.asarray(v).astype(np.int64) for v in values[:n]]
    data = [np.asarray(v) for v in values[n:]]
    for m, (i, d) in enumerate(zip(indices, data)):
        if d.shape[:i.ndim] != i.shape:
            raise InvalidArgumentError(None, op, f"data[{m}].shape = {list(d.shape)} does not start with "
                                                 f"indices[{m}].shape = {list(i.shape)}")
        if i.size and i.min() < 0:
            raise InvalidArgumentError(None, op, f"indices[{m}] has a negative index {int(i.min())}")
    size = max([int(i.max()) + 1 for i in indices if i.size] + [0])
    slice_shape = data[0].shape[indices[0].ndim:]
    merged = np.zeros((size,) + slice_shape, dtype=data[0].dtype)
    for i, d in zip(indices, data):
        merged[i.reshape(-1)] = d.reshape((-1,) + slice_shape)
    return [merged]


@register
class DynamicStitch(OpType):
    inputs = ["indices: N * int32", "data: N * T"]
    outputs = ["merged: T"]
    attrs = {"N": Attr("int"), "T": Attr("type")}

    def infer(op):
        return run_shape_fn(op, _dynamic_stitch_shape)

    lower = _lower_dynamic_stitch
    # indices known only at run time: on the host (a later stage of the step gets the result)
    host_fallback = True
    host = staticmethod(_dynamic_stitch_host)

    def gradient(op, grad):
        """TF's _DynamicStitchGrads: each data input gathers its rows back."""
        num_values = len(op.inputs) // 2
        indices_grad = [None] * num_values

        def as_int32(x):
            return x if x.dtype == dtypes.int32 else cast(x, dtypes.int32)

        inputs = [as_int32(x) for x in op.inputs[:num_values]]
        values_grad = [array_ops.gather(grad, inp) for inp in inputs]
        return indices_grad + values_grad


def _lower_list_diff(ctx, op, x, y):
    """Values of x not in y, in order, and their positions (both known while compiling)."""
    known_x, known_y = ctx.static(x), ctx.static(y)
    if known_x is None or known_y is None:
        ctx.fail("ListDiff has a data-dependent output shape: its inputs must be known at compile time")
    flat_x = ic.as_dim_array(np.asarray(known_x).reshape(-1)) if np.asarray(known_x).dtype == object \
        else np.asarray(known_x).reshape(-1)
    drop = set(np.asarray(known_y).reshape(-1).tolist())
    keep = [i for i, v in enumerate(flat_x.tolist()) if v not in drop]
    out = np.array([flat_x[i] for i in keep], dtype=flat_x.dtype)
    return [ic.from_static(ctx, out, _elem_of(x)),
            ctx.from_static(np.array(keep, dtype=np.int64), ctx.elem(op._attrs["out_idx"]))]


@register
class ListDiff(OpType):
    inputs = ["x: T", "y: T"]
    outputs = ["out: T", "idx: out_idx"]
    attrs = {"T": Attr("type"), "out_idx": Attr("type", _d.int32, allowed=INDEX_TYPES)}
    not_differentiable = True

    def infer(op):
        def shape_fn(c):
            ic.with_rank(c.input(0), 1)
            ic.with_rank(c.input(1), 1)
            return [[None], [None]]

        return run_shape_fn(op, shape_fn)

    lower = _lower_list_diff
    host_fallback = True  # values known only at run time: on the host (tfc/runtime/host.py)

    def host(op, x, y):
        from .bounded_kernels import compilable, setdiff1d

        x, y = np.asarray(x), np.asarray(y)
        out_idx = op._attrs["out_idx"].as_numpy_dtype
        if compilable(x.dtype):
            values, positions = setdiff1d(x, y)
            return [values, positions.astype(out_idx)]
        keep = ~np.isin(x, y)  # strings
        return [x[keep], np.flatnonzero(keep).astype(out_idx)]


def _lower_cumprod(ctx, op, x, axis):
    return _lower_cumulative(ctx, op, x, axis, "prod")


@register
class Cumprod(OpType):
    inputs = ["x: T", "axis: Tidx"]
    outputs = ["out: T"]
    attrs = {"exclusive": Attr("bool", False), "reverse": Attr("bool", False),
             "T": Attr("type", allowed=NUMBER_TYPES), "Tidx": Attr("type", _d.int32, allowed=INDEX_TYPES)}
    infer = unchanged_shape
    lower = _lower_cumprod
    gradient = _cumprod_grad


# -- user-facing functions --------------------------------------------------------------
def deprecated_argument_lookup(new_name, new_value, old_name, old_value):
    """TF's deprecation.deprecated_argument_lookup."""
    if old_value is not None:
        if new_value is not None:
            raise ValueError(f"Cannot specify both '{old_name}' and '{new_name}'")
        return old_value
    return new_value


class _ArrayFamily:
    """The array-op functions by TF name (tf.shape, tf.concat, tf.where, tf.range...).

    They live in several sibling modules and import this one, so they are looked up
    when first used rather than at import time.
    """

    _MODULES = ("array_ops", "concat_ops", "selection_ops", "slicing", "control_flow_ops")

    def __getattr__(self, name: str):
        import importlib

        for module_name in self._MODULES:
            module = importlib.import_module(f"{__package__}.{module_name}")
            if hasattr(module, name):
                return getattr(module, name)
        raise AttributeError(f"no array op function named {name!r}")


array_ops = _ArrayFamily()


def _out(op_type: str, inputs, attrs=None, name=None) -> Tensor:
    return apply_op(op_type, inputs, attrs, name=name).outputs[0]


def _generated(op_type: str, py_name: str, arg_names=("x",)):
    """A function like TF's generated wrapper gen_math_ops.<py_name>(x[, y], name=None)."""
    signature = inspect.Signature(
        [inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD) for n in arg_names]
        + [inspect.Parameter("name", inspect.Parameter.POSITIONAL_OR_KEYWORD, default=None)])

    count = len(arg_names)

    def wrapper(*args, **kwargs):
        if not kwargs and len(args) == count:  # the common call, without Signature.bind's cost
            return _out(op_type, list(args))
        arguments = signature.bind(*args, **kwargs).arguments
        return _out(op_type, [arguments[n] for n in arg_names], name=arguments.get("name"))

    wrapper.__name__ = wrapper.__qualname__ = py_name
    wrapper.__signature__ = signature
    wrapper.__doc__ = f"Creates a {op_type} op, like TF's tf.{py_name}."
    return wrapper


negative = _generated("Neg", "negative")
neg = negative
sign = _generated("Sign", "sign")
square = _generated("Square", "square")
sqrt = _generated("Sqrt", "sqrt")
rsqrt = _generated("Rsqrt", "rsqrt")
exp = _generated("Exp", "exp")
expm1 = _generated("Expm1", "expm1")
log = _generated("Log", "log")
log1p = _generated("Log1p", "log1p")
sin = _generated("Sin", "sin")
cos = _generated("Cos", "cos")
tan = _generated("Tan", "tan")
tanh = _generated("Tanh", "tanh")
sigmoid = _generated("Sigmoid", "sigmoid")
reciprocal = _generated("Reciprocal", "reciprocal")
floor = _generated("Floor", "floor")
ceil = _generated("Ceil", "ceil")
rint = _generated("Rint", "rint")
erf = _generated("Erf", "erf")
is_nan = _generated("IsNan", "is_nan")
is_inf = _generated("IsInf", "is_inf")
is_finite = _generated("IsFinite", "is_finite")
logical_not = _generated("LogicalNot", "logical_not")

_XY = ("x", "y")
add = _generated("Add", "add", _XY)
add_v2 = _generated("AddV2", "add_v2", _XY)
subtract = _generated("Sub", "subtract", _XY)
multiply = _generated("Mul", "multiply", _XY)
realdiv = _generated("RealDiv", "realdiv", _XY)
floor_div = _generated("FloorDiv", "floor_div", _XY)
truncatediv = _generated("TruncateDiv", "truncatediv", _XY)
floormod = _generated("FloorMod", "floormod", _XY)
mod = floormod
truncatemod = _generated("TruncateMod", "truncatemod", _XY)
maximum = _generated("Maximum", "maximum", _XY)
minimum = _generated("Minimum", "minimum", _XY)
squared_difference = _generated("SquaredDifference", "squared_difference", _XY)
atan2 = _generated("Atan2", "atan2", ("y", "x"))
logical_and = _generated("LogicalAnd", "logical_and", _XY)
logical_or = _generated("LogicalOr", "logical_or", _XY)
less = _generated("Less", "less", _XY)
less_equal = _generated("LessEqual", "less_equal", _XY)
greater = _generated("Greater", "greater", _XY)
greater_equal = _generated("GreaterEqual", "greater_equal", _XY)
equal = _generated("Equal", "equal", _XY)
not_equal = _generated("NotEqual", "not_equal", _XY)


def abs(x, name=None):  # noqa: A001 - TF's name
    """tf.abs: Abs (ComplexAbs for complex inputs is not supported)."""
    with name_scope(name, "Abs", [x]) as scope:
        x = convert_to_tensor(x, name="x")
        return _out("Abs", [x], name=scope)


def pow(x, y, name=None):  # noqa: A001 - TF's name
    with name_scope(name, "Pow", [x]) as scope:
        return _out("Pow", [x, y], name=scope)


def round(x, name=None):  # noqa: A001 - TF's name
    """tf.round: integers come back unchanged; x is converted outside any scope (as TF)."""
    x = convert_to_tensor(x, name="x")
    if x.dtype.is_integer:
        return x
    return _out("Round", [x], name=name)


def logical_xor(x, y, name="LogicalXor"):
    """x ^ y = (x | y) & ~(x & y), built from three ops as TF does."""
    return logical_and(logical_or(x, y), logical_not(logical_and(x, y)), name=name)


def cast(x, dtype, name=None):
    """tf.cast: returns x itself when it already has the dtype; else a Cast op."""
    base_type = dtypes.as_dtype(dtype).base_dtype
    if isinstance(x, Tensor) and base_type == x.dtype:
        return x
    with name_scope(name, "Cast", [x]) as scope:
        x = convert_to_tensor(x, name="x")
        if x.dtype.base_dtype != base_type:
            x = _out("Cast", [x], {"DstT": base_type}, name=scope)
        return x


def to_float(x, name="ToFloat"):
    return cast(x, dtypes.float32, name=name)


def to_double(x, name="ToDouble"):
    return cast(x, dtypes.float64, name=name)


def to_int32(x, name="ToInt32"):
    return cast(x, dtypes.int32, name=name)


def to_int64(x, name="ToInt64"):
    return cast(x, dtypes.int64, name=name)


# Integer types divided with `/` are cast first (numpy's true division rules).
_TRUEDIV_TABLE = {
    _d.uint8: _d.float32, _d.int8: _d.float32, _d.uint16: _d.float32, _d.int16: _d.float32,
    _d.int32: _d.float64, _d.int64: _d.float64, _d.bfloat16: None, _d.float16: None, _d.float32: None,
    _d.float64: None, _d.complex64: None, _d.complex128: None,
}


def _truediv_python3(x, y, name=None):
    with name_scope(name, "truediv", [x, y]) as scope:
        x = convert_to_tensor(x, name="x")
        y = convert_to_tensor(y, name="y")
        x_dtype, y_dtype = x.dtype.base_dtype, y.dtype.base_dtype
        if x_dtype != y_dtype:
            raise TypeError(f"x and y must have the same dtype, got {x_dtype!r} != {y_dtype!r}")
        if x_dtype not in _TRUEDIV_TABLE:
            raise TypeError(f"Invalid dtype {x_dtype!r} in __truediv__")
        dtype = _TRUEDIV_TABLE[x_dtype]
        if dtype is not None:
            x = cast(x, dtype)
            y = cast(y, dtype)
        return _out("RealDiv", [x, y], name=scope)


def _div_python2(x, y, name=None):
    with name_scope(name, "div", [x, y]) as scope:
        x = convert_to_tensor(x, name="x")
        y = convert_to_tensor(y, name="y", dtype=x.dtype.base_dtype)
        if x.dtype.is_floating or x.dtype.is_complex:
            return _out("RealDiv", [x, y], name=scope)
        return _out("FloorDiv", [x, y], name=scope)


def truediv(x, y, name=None):
    return _truediv_python3(x, y, name)


def div(x, y, name=None):
    """tf.div (TF1): python 2 division, RealDiv for floats and FloorDiv for integers."""
    return _div_python2(x, y, name)


def divide(x, y, name=None):
    """tf.divide: ``x / y`` (so 'truediv'), or truediv under ``name`` when one is given."""
    if name is not None:
        return _truediv_python3(x, y, name)
    return x / y


def floordiv(x, y, name=None):
    with name_scope(name, "floordiv", [x, y]) as scope:
        return _out("FloorDiv", [x, y], name=scope)


def conj(x, name=None):
    if isinstance(x, Tensor) and (x.dtype.is_floating or x.dtype.is_integer):
        return x
    with name_scope(name, "Conj", [x]) as scope:
        x = convert_to_tensor(x, name="x")
        if x.dtype.is_complex:
            return _out("Conj", [x], name=scope)
        if x.dtype.is_floating or x.dtype.is_integer:
            return x
        raise TypeError(f"Expected numeric or variant tensor, got dtype {x.dtype!r}")


def scalar_mul(scalar, x, name=None):
    scalar = convert_to_tensor(scalar, dtype=x.dtype.base_dtype, name="scalar")
    shape = scalar.get_shape()
    if shape.ndims == 0:
        return _out("Mul", [scalar, x], name=name)
    raise ValueError(f"Only scalar multiply works, got shape {shape}")


def add_n(inputs, name=None):
    """tf.add_n: AddN of the list; a single input comes back as is (Identity when named)."""
    message = "inputs must be a list of at least one Tensor/IndexedSlices with the same dtype and shape"
    if not inputs or not isinstance(inputs, (list, tuple)):
        raise ValueError(message)
    inputs = [convert_to_tensor(v) for v in inputs]
    if len(inputs) == 1:
        if name:
            return array_ops.identity(inputs[0], name=name)
        return inputs[0]
    return _out("AddN", [inputs], name=name)


def cumsum(x, axis=0, exclusive=False, reverse=False, name=None):
    with name_scope(name, "Cumsum", [x]) as scope:
        x = convert_to_tensor(x, name="x")
        return _out("Cumsum", [x, axis], {"exclusive": exclusive, "reverse": reverse}, name=scope)


def cumprod(x, axis=0, exclusive=False, reverse=False, name=None):
    with name_scope(name, "Cumprod", [x]) as scope:
        x = convert_to_tensor(x, name="x")
        return _out("Cumprod", [x, axis], {"exclusive": exclusive, "reverse": reverse}, name=scope)


def dynamic_stitch(indices, data, name=None):
    """tf.dynamic_stitch: merged[indices[m][i]] = data[m][i] (a DynamicStitch op)."""
    return _out("DynamicStitch", [list(indices), list(data)], name=name)


@register
class ParallelDynamicStitch(DynamicStitch):
    """DynamicStitch whose indices do not repeat (TF: which of repeated ones wins is
    unspecified; here the last, as DynamicStitch)."""


def parallel_dynamic_stitch(indices, data, name=None):
    """data_flow_ops.parallel_dynamic_stitch (DynamicPartition's gradient uses it)."""
    return _out("ParallelDynamicStitch", [list(indices), list(data)], name=name)


def setdiff1d(x, y, index_dtype=dtypes.int32, name=None):
    """tf.setdiff1d: a ListDiff op; (values of x not in y, their indices in x)."""
    return tuple(apply_op("ListDiff", [x, y], {"out_idx": index_dtype}, name=name).outputs)


# -- reductions ---------------------------------------------------------------------------
def _reduction_dims(x, axis):
    """TF's _ReductionDims: the axis, a Const range(rank) when x's rank is known, else Range(Rank)."""
    if axis is not None:
        return axis
    if isinstance(x, Tensor) and x.shape.ndims is not None:
        return constant(np.arange(x.shape.ndims, dtype=np.int32))
    return array_ops.range(0, array_ops.rank(x))


def _may_reduce_to_scalar(keepdims, axis, output: Tensor) -> Tensor:
    if not output.shape.is_fully_defined() and not keepdims and axis is None:
        output.set_shape([])
    return output


def _reduce(op_type: str, input_tensor, axis, keepdims, name) -> Tensor:
    keepdims = False if keepdims is None else bool(keepdims)
    output = _out(op_type, [input_tensor, _reduction_dims(input_tensor, axis)], {"keep_dims": keepdims},
                  name=name)
    return _may_reduce_to_scalar(keepdims, axis, output)


def _make_reduction(op_type: str, py_name: str):
    """tf.reduce_* with TF1's signature (axis/reduction_indices, keepdims/keep_dims)."""
    def reduction(input_tensor, axis=None, keepdims=None, name=None, reduction_indices=None, keep_dims=None):
        axis = deprecated_argument_lookup("axis", axis, "reduction_indices", reduction_indices)
        keepdims = deprecated_argument_lookup("keepdims", keepdims, "keep_dims", keep_dims)
        return _reduce(op_type, input_tensor, axis, keepdims, name)

    reduction.__name__ = py_name
    reduction.__doc__ = f"tf.{py_name}: a {op_type} op over `axis` (all dims when None)."
    return reduction


reduce_sum = _make_reduction("Sum", "reduce_sum")
reduce_mean = _make_reduction("Mean", "reduce_mean")
reduce_prod = _make_reduction("Prod", "reduce_prod")
reduce_max = _make_reduction("Max", "reduce_max")
reduce_min = _make_reduction("Min", "reduce_min")
reduce_all = _make_reduction("All", "reduce_all")
reduce_any = _make_reduction("Any", "reduce_any")


def count_nonzero(input_tensor=None, axis=None, keepdims=None, dtype=dtypes.int64, name=None,
                  reduction_indices=None, keep_dims=None, input=None):  # noqa: A002 - TF's name
    keepdims = deprecated_argument_lookup("keepdims", keepdims, "keep_dims", keep_dims)
    input_tensor = deprecated_argument_lookup("input", input, "input_tensor", input_tensor)
    axis = deprecated_argument_lookup("axis", axis, "reduction_indices", reduction_indices)
    with name_scope(name, "count_nonzero", [input_tensor]):
        input_tensor = convert_to_tensor(input_tensor, name="input")
        zero = array_ops.zeros([], dtype=input_tensor.dtype)
        nonzero = cast(not_equal(input_tensor, zero), dtypes.int64)
        return cast(reduce_sum(nonzero, axis=axis, keepdims=bool(keepdims)), dtype=dtype)


def _arg_op(op_type, input, axis, name, dimension, output_type):  # noqa: A002
    axis = deprecated_argument_lookup("axis", axis, "dimension", dimension)
    if axis is None:
        axis = 0
    return _out(op_type, [input, axis], {"output_type": output_type}, name=name)


def argmax(input, axis=None, name=None, dimension=None, output_type=dtypes.int64):  # noqa: A002
    return _arg_op("ArgMax", input, axis, name, dimension, output_type)


def argmin(input, axis=None, name=None, dimension=None, output_type=dtypes.int64):  # noqa: A002
    return _arg_op("ArgMin", input, axis, name, dimension, output_type)


def matmul(a, b, transpose_a=False, transpose_b=False, adjoint_a=False, adjoint_b=False, a_is_sparse=False,
           b_is_sparse=False, name=None):
    """tf.matmul: MatMul for matrices, BatchMatMulV2 when either rank is > 2 or unknown."""
    with name_scope(name, "MatMul", [a, b]) as scope:
        if transpose_a and adjoint_a:
            raise ValueError("Only one of transpose_a and adjoint_a can be True.")
        if transpose_b and adjoint_b:
            raise ValueError("Only one of transpose_b and adjoint_b can be True.")
        a = convert_to_tensor(a, name="a")
        b = convert_to_tensor(b, name="b")
        a_rank, b_rank = a.shape.ndims, b.shape.ndims
        batched = a_rank is None or a_rank > 2 or b_rank is None or b_rank > 2
        if batched and not a_is_sparse and not b_is_sparse:
            # BatchMatMulV2 has no transpose attrs: conjugate and use the adjoint instead.
            if transpose_a:
                a, adjoint_a = conj(a), True
            if transpose_b:
                b, adjoint_b = conj(b), True
            return _out("BatchMatMulV2", [a, b], {"adj_x": adjoint_a, "adj_y": adjoint_b}, name=scope)
        if adjoint_a:
            a, transpose_a = conj(a), True
        if adjoint_b:
            b, transpose_b = conj(b), True
        return _out("MatMul", [a, b], {"transpose_a": transpose_a, "transpose_b": transpose_b}, name=scope)


# -- Tensor operator overloads ------------------------------------------------------------
def _add_dispatch(x, y, name=None):
    """``+``: AddV2, or Add for strings."""
    if x.dtype == dtypes.string:
        return add(x, y, name=name)
    return add_v2(x, y, name=name)


def _binary_op_wrapper(func, op_name: str):
    """Tensor.__<op>__: scope '<op_name>', y converted with x's dtype as a hint ('add/y')."""
    def binary_op_wrapper(x, y):
        with name_scope(None, op_name, [x, y]) as scope:
            if not isinstance(y, Tensor):
                try:
                    y = convert_to_tensor(y, dtype_hint=x.dtype.base_dtype, name="y")
                except TypeError:
                    if hasattr(type(y), f"__r{op_name}__"):
                        return NotImplemented
                    raise
            return func(x, y, name=scope)

    binary_op_wrapper.__name__ = f"__{op_name}__"
    return binary_op_wrapper


def _r_binary_op_wrapper(func, op_name: str):
    """Tensor.__r<op>__: the left operand is converted with this tensor's dtype ('add/x')."""
    def r_binary_op_wrapper(y, x):
        with name_scope(None, op_name, [x, y]) as scope:
            x = convert_to_tensor(x, dtype=y.dtype.base_dtype, name="x")
            return func(x, y, name=scope)

    r_binary_op_wrapper.__name__ = f"__r{op_name}__"
    return r_binary_op_wrapper


_BINARY_OPERATORS = {
    "add": _add_dispatch, "sub": subtract, "mul": multiply, "truediv": _truediv_python3, "floordiv": floordiv,
    "mod": floormod, "pow": pow, "and": logical_and, "or": logical_or, "xor": logical_xor, "matmul": matmul,
}


def _install_tensor_operators() -> None:
    for op_name, func in _BINARY_OPERATORS.items():
        setattr(Tensor, f"__{op_name}__", _binary_op_wrapper(func, op_name))
        setattr(Tensor, f"__r{op_name}__", _r_binary_op_wrapper(func, op_name))
    Tensor.__neg__ = lambda self: negative(self)
    Tensor.__abs__ = lambda self: abs(self)
    Tensor.__invert__ = lambda self: logical_not(self)
    Tensor.__lt__ = lambda self, other: less(self, other)
    Tensor.__le__ = lambda self, other: less_equal(self, other)
    Tensor.__gt__ = lambda self, other: greater(self, other)
    Tensor.__ge__ = lambda self, other: greater_equal(self, other)
    # __eq__/__ne__ stay Python identity, as in TF1 graph mode.


_install_tensor_operators()

# -- exports ---------------------------------------------------------------------------
_SHARED = [
    "abs", "add", "add_n", "argmax", "argmin", "atan2", "ceil", "conj", "cos", "count_nonzero", "cumsum",
    "divide", "equal", "erf", "exp", "expm1", "floor", "floordiv", "floormod", "greater", "greater_equal",
    "is_finite", "is_inf", "is_nan", "less", "less_equal", "log", "log1p", "logical_and", "logical_not",
    "logical_or", "logical_xor", "maximum", "minimum", "mod", "multiply", "negative", "not_equal", "pow",
    "realdiv", "reciprocal", "reduce_all", "reduce_any", "reduce_max", "reduce_mean", "reduce_min", "reduce_prod",
    "reduce_sum", "rint", "round", "rsqrt", "scalar_mul", "sigmoid", "sign", "sin", "sqrt", "square",
    "squared_difference", "subtract", "tan", "tanh", "truediv", "truncatediv", "truncatemod", "cumprod",
]
TF_EXPORTS = _SHARED + ["cast", "div", "dynamic_stitch", "floor_div", "matmul", "setdiff1d", "to_double", "to_float",
                        "to_int32", "to_int64"]
MATH_EXPORTS = list(_SHARED)
