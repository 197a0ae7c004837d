"""More TF1 math: inverse and hyperbolic trig (Acos... Cosh), special functions (Lgamma,
Digamma, Polygamma orders 0/1, Erfc, Erfinv), the no-NaN ops (DivNoNan, MulNoNan, Xlogy,
Xdivy, Xlog1py), EuclideanNorm, AccumulateNV2, and TF 1.15's python
compositions around them (reduce_logsumexp, reduce_std/variance, log_sigmoid, polyval,
zero_fraction, is_non_decreasing, confusion_matrix...).

Each op type is one registry entry (shape rule, lowering, gradient as TF's math_grad.py).
The lowerings are built from core elementwise ops only (there is no core asin, lgamma...):
the special functions are computed in f64 (converted back to the op's type), with
recurrences to move the argument into the range of an asymptotic series, reflection for
small/negative arguments, and Newton steps on top of Giles' approximation for erfinv.
"""
from __future__ import annotations

import math

import numpy as np

from tfc import ir

from .. import dtypes
from ..convert import convert_to_tensor
from ..graph import Tensor, name_scope
from ..op_helper import apply_op
from ..registry import Attr, OpType, ShapeError, register
from . import array_ops as _array
from . import inference_context as ic
from . import math_ops as m
from .constant_op import constant
from .inference_context import run_shape_fn, unchanged_shape

_d = dtypes
_E = ir.ElemType
_FLOATS = (_d.bfloat16, _d.float16, _d.float32, _d.float64)
_FLOATS_COMPLEX = _FLOATS + (_d.complex64, _d.complex128)


def _out(op_type, inputs, attrs=None, name=None) -> Tensor:
    return apply_op(op_type, inputs, attrs, name=name).outputs[0]


# -- lowering helpers ------------------------------------------------------------------------
class _F64:
    """Elementwise arithmetic on f64 core values (python floats become scalar constants)."""

    def __init__(self, ctx):
        self.ctx = ctx

    def c(self, number):
        return m.scalar_constant(self.ctx, number, _E.F64)

    def _v(self, v):
        return self.c(float(v)) if isinstance(v, (int, float)) else v

    def u(self, name, x):
        return self.ctx.b.value(name, [self._v(x)])

    def bin(self, name, a, b):
        return self.ctx.elementwise(name, self._v(a), self._v(b))

    def add(self, a, b):
        return self.bin("add", a, b)

    def sub(self, a, b):
        return self.bin("sub", a, b)

    def mul(self, a, b):
        return self.bin("mul", a, b)

    def div(self, a, b):
        return self.bin("div", a, b)

    def cmp(self, direction, a, b):
        return self.ctx.elementwise("compare", self._v(a), self._v(b), attrs={"dir": direction})

    def select(self, p, a, b):
        return m._select(self.ctx, p, self._v(a), self._v(b))

    def poly(self, z, coeffs):
        """Horner: coeffs[0] + coeffs[1] z + ..."""
        acc = self.c(coeffs[-1])
        for coeff in reversed(coeffs[:-1]):
            acc = self.add(self.mul(acc, z), coeff)
        return acc


def _float_lowering(compute, arity=1):
    """A lowering that converts its float operands to f64, runs ``compute(f, *xs)`` and
    converts back (TF registers these kernels for floating types only)."""
    def lower(ctx, op, *values):
        m._require_float(ctx, op, *values[:arity])
        elem = m._elem_of(values[0])
        values = m._broadcast_all(ctx, *values[:arity]) if arity > 1 else list(values[:1])
        f = _F64(ctx)
        wide = [ctx.convert(v, _E.F64) if elem is not _E.F64 else v for v in values]
        result = compute(f, *wide)
        return ctx.convert(result, elem) if elem is not _E.F64 else result

    lower.__doc__ = compute.__doc__
    return lower


_LN2 = math.log(2.0)


def _asin(f, x):
    """atan2(x, sqrt((1 - x)(1 + x)))."""
    return f.bin("atan2", x, f.u("sqrt", f.mul(f.sub(1.0, x), f.add(1.0, x))))


def _acos(f, x):
    """atan2(sqrt((1 - x)(1 + x)), x)."""
    return f.bin("atan2", f.u("sqrt", f.mul(f.sub(1.0, x), f.add(1.0, x))), x)


def _atan(f, x):
    """atan2(x, 1)."""
    return f.bin("atan2", x, f.c(1.0))


def _sinh(f, x):
    """(expm1(x) - expm1(-x)) / 2 for |x| < 1, else sign(x) (t - 1/(4t)), t = exp(|x| - ln 2)."""
    small = f.mul(0.5, f.sub(f.u("expm1", x), f.u("expm1", f.u("neg", x))))
    t = f.u("exp", f.sub(f.u("abs", x), _LN2))
    large = f.mul(f.u("sign", x), f.sub(t, f.div(0.25, t)))
    return f.select(f.cmp("lt", f.u("abs", x), 1.0), small, large)


def _cosh(f, x):
    """t + 1/(4t), t = exp(|x| - ln 2) (no overflow before cosh itself overflows)."""
    t = f.u("exp", f.sub(f.u("abs", x), _LN2))
    return f.add(t, f.div(0.25, t))


def _asinh(f, x):
    """sign(x) log1p(a + a^2 / (1 + sqrt(a^2 + 1))), a = |x|; log(a) + ln 2 for a > 1e8."""
    a = f.u("abs", x)
    a2 = f.mul(a, a)
    small = f.u("log1p", f.add(a, f.div(a2, f.add(1.0, f.u("sqrt", f.add(a2, 1.0))))))
    large = f.add(f.u("log", a), _LN2)
    magnitude = f.select(f.cmp("gt", a, 1e8), large, small)
    return f.select(f.cmp("lt", x, 0.0), f.u("neg", magnitude), magnitude)


def _acosh(f, x):
    """log1p((x - 1) + sqrt((x - 1)(x + 1))); log(x) + ln 2 for x > 1e8; NaN below 1."""
    xm1 = f.sub(x, 1.0)
    small = f.u("log1p", f.add(xm1, f.u("sqrt", f.mul(xm1, f.add(x, 1.0)))))
    large = f.add(f.u("log", x), _LN2)
    return f.select(f.cmp("gt", x, 1e8), large, small)


def _atanh(f, x):
    """log1p(2x / (1 - x)) / 2."""
    return f.mul(0.5, f.u("log1p", f.div(f.mul(2.0, x), f.sub(1.0, x))))


def _abs_sin_pi(f, x):
    """|sin(pi x)| = |sin(pi (x - round(x)))| (exact zeros at the integers)."""
    return f.u("abs", f.u("sin", f.mul(math.pi, f.sub(x, f.u("round", x)))))


_STIRLING = [1 / 12, -1 / 360, 1 / 1260, -1 / 1680, 1 / 1188, -691 / 360360, 1 / 156]


def _lgamma_positive(f, y):
    """lgamma(y) for y >= 0.5: Stirling's series at y >= 8, else at y + 8 minus log(y (y+1)...(y+7))."""
    def stirling(z):
        inv = f.div(1.0, z)
        inv2 = f.mul(inv, inv)
        series = f.mul(inv, f.poly(inv2, _STIRLING))
        main = f.sub(f.mul(f.sub(z, 0.5), f.u("log", z)), z)
        return f.add(f.add(main, 0.5 * math.log(2 * math.pi)), series)

    product = y
    for k in range(1, 8):
        product = f.mul(product, f.add(y, float(k)))
    shifted = f.sub(stirling(f.add(y, 8.0)), f.u("log", product))
    return f.select(f.cmp("lt", y, 8.0), shifted, stirling(y))


def _lgamma(f, x):
    """lgamma: reflection log(pi / |sin(pi x)|) - lgamma(1 - x) below 0.5; +inf at the
    non-positive integers and at +-inf (as TF)."""
    reflect = f.cmp("lt", x, 0.5)
    y = f.select(reflect, f.sub(1.0, x), x)
    main = _lgamma_positive(f, y)
    reflected = f.sub(f.u("log", f.div(math.pi, _abs_sin_pi(f, x))), main)
    result = f.select(reflect, reflected, main)
    return f.select(f.cmp("eq", f.u("abs", x), math.inf), math.inf, result)


_DIGAMMA = [-1 / 12, 1 / 120, -1 / 252, 1 / 240, -1 / 132, 691 / 32760, -1 / 12]
_TRIGAMMA = [1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66, -691 / 2730, 7 / 6]


def _shifted(f, y, asymptotic, term):
    """asymptotic(y + 10) combined with sum_k term(y + k) for y < 10, else asymptotic(y)."""
    total = term(y)
    for k in range(1, 10):
        total = f.add(total, term(f.add(y, float(k))))
    return f.select(f.cmp("lt", y, 10.0), asymptotic(f.add(y, 10.0), total), asymptotic(y, None))


def _nonpositive_integer(f, x):
    return f.bin("and", f.cmp("le", x, 0.0), f.cmp("eq", x, f.u("floor", x)))


def _digamma(f, x):
    """digamma: psi(y + 10) - sum 1/(y + k) and the asymptotic series; reflection
    psi(1 - x) - pi / tan(pi x) below 0.5; NaN at the non-positive integers and -inf (as TF)."""
    def asymptotic(z, total):
        inv2 = f.div(1.0, f.mul(z, z))
        value = f.add(f.sub(f.u("log", z), f.div(0.5, z)), f.mul(inv2, f.poly(inv2, _DIGAMMA)))
        return value if total is None else f.sub(value, total)

    reflect = f.cmp("lt", x, 0.5)
    y = f.select(reflect, f.sub(1.0, x), x)
    main = _shifted(f, y, asymptotic, lambda z: f.div(1.0, z))
    r = f.sub(x, f.u("round", x))
    tan_pi = f.div(f.u("sin", f.mul(math.pi, r)), f.u("cos", f.mul(math.pi, r)))
    result = f.select(reflect, f.sub(main, f.div(math.pi, tan_pi)), main)
    return f.select(_nonpositive_integer(f, x), math.nan, result)


def _trigamma(f, x):
    """psi'(x): psi'(y + 10) + sum 1/(y + k)^2 and the asymptotic series; reflection
    pi^2 / sin^2(pi x) - psi'(1 - x) below 0.5; +inf at the non-positive integers (as TF)."""
    def asymptotic(z, total):
        inv = f.div(1.0, z)
        inv2 = f.mul(inv, inv)
        value = f.add(f.add(inv, f.mul(0.5, inv2)), f.mul(f.mul(inv, inv2), f.poly(inv2, _TRIGAMMA)))
        return value if total is None else f.add(value, total)

    reflect = f.cmp("lt", x, 0.5)
    y = f.select(reflect, f.sub(1.0, x), x)
    main = _shifted(f, y, asymptotic, lambda z: f.div(1.0, f.mul(z, z)))
    s = _abs_sin_pi(f, x)
    result = f.select(reflect, f.sub(f.div(math.pi ** 2, f.mul(s, s)), main), main)
    return f.select(_nonpositive_integer(f, x), math.inf, result)


def _erfc(f, x):
    """1 - erf(x) below 2; above, the continued fraction
    exp(-x^2) / sqrt(pi) / (x + (1/2) / (x + 1 / (x + (3/2) / ...))) (60 terms)."""
    near = f.sub(1.0, f.u("erf", x))
    z = f.select(f.cmp("lt", x, 2.0), 2.0, x)  # keeps the unused branch finite
    t = z
    for k in range(60, 0, -1):
        t = f.add(z, f.div(k / 2.0, t))
    tail = f.div(f.u("exp", f.u("neg", f.mul(z, z))), f.mul(math.sqrt(math.pi), t))
    return f.select(f.cmp("lt", x, 2.0), near, tail)


_GILES_CENTRAL = [1.50140941, 0.246640727, -0.00417768164, -0.00125372503, 0.00021858087, -4.39150654e-06,
                  -3.5233877e-06, 3.43273939e-07, 2.81022636e-08]
_GILES_TAIL = [2.83297682, 1.00167406, 0.00943887047, -0.0076224613, 0.00573950773, -0.00367342844,
               0.00134934322, 0.000100950558, -0.000200214257]


def _erfinv(f, y):
    """Giles' single-precision approximation, then three Newton steps on erf(x) = y;
    +-inf at +-1, NaN outside [-1, 1]."""
    w = f.u("neg", f.u("log", f.mul(f.sub(1.0, y), f.add(1.0, y))))
    central = f.poly(f.sub(w, 2.5), _GILES_CENTRAL)
    tail = f.poly(f.sub(f.u("sqrt", f.select(f.cmp("lt", w, 5.0), 5.0, w)), 3.0), _GILES_TAIL)
    x = f.mul(f.select(f.cmp("lt", w, 5.0), central, tail), y)
    for _ in range(3):
        step = f.mul(f.sub(f.u("erf", x), y), f.mul(math.sqrt(math.pi) / 2, f.u("exp", f.mul(x, x))))
        x = f.sub(x, f.select(f.cmp("eq", step, step), step, 0.0))  # no step where exp overflowed
    x = f.select(f.cmp("eq", y, 0.0), y, x)
    x = f.select(f.cmp("eq", y, 1.0), math.inf, x)
    return f.select(f.cmp("eq", y, -1.0), -math.inf, x)


def _lower_polygamma(ctx, op, a, x):
    """Orders 0 (digamma) and 1 (trigamma), the orders a must be known while compiling."""
    known = ctx.static(a)
    orders = set(np.asarray(known).ravel().tolist()) if known is not None else None
    if not orders or len(orders) != 1 or next(iter(orders)) not in (0, 1):
        ctx.fail("Polygamma: the compiler supports only a known order of 0 or 1")
    compute = _digamma if next(iter(orders)) == 0 else _trigamma
    return _float_lowering(lambda f, v: compute(f, v))(ctx, op, m._broadcast_all(ctx, a, x)[1])


def _zero_unless(test_zero_of):
    """``select(v == 0, 0, expr)`` where ``v`` is operand ``test_zero_of`` (0 for x, 1 for y)."""
    def wrap(expr):
        def compute(f, x, y):
            zero = f.cmp("eq", (x, y)[test_zero_of], 0.0)
            return f.select(zero, 0.0, expr(f, x, y))

        compute.__doc__ = f"0 where {'xy'[test_zero_of]} == 0, else {expr.__doc__}"
        return compute

    return wrap


_xlogy = _zero_unless(0)(lambda f, x, y: f.mul(x, f.u("log", y)))
_xlog1py = _zero_unless(0)(lambda f, x, y: f.mul(x, f.u("log1p", y)))
_xdivy = _zero_unless(0)(lambda f, x, y: f.div(x, y))


def _lower_no_nan(core_op):
    def lower(ctx, op, x, y):
        m._require_float(ctx, op, x, y)
        x, y = m._broadcast_all(ctx, x, y)
        zero = m._cmp(ctx, "eq", y, m._full_like(ctx, 0, y))
        return m._select(ctx, zero, m._full_like(ctx, 0, x), ctx.elementwise(core_op, x, y))

    lower.__doc__ = f"0 where y == 0, else core ``{core_op}`` (TF's {core_op}_no_nan)."
    return lower


def _lower_euclidean_norm(ctx, op, x, axes):
    """sqrt(sum(x * x)) over the static axes."""
    m._require_float(ctx, op, x)
    dims = m._static_axes(ctx, op, x, axes)
    total = ctx.reduce(ctx.b.value("mul", [x, x]), "sum", dims)
    return m._keep_dims(ctx, op, x, ctx.b.value("sqrt", [total]), dims)


def _lower_accumulate(ctx, op, *inputs):
    return m._lower_add_n(ctx, op, *inputs)


# -- gradients (TF's math_grad.py) -------------------------------------------------------------
def _unary_grad(body):
    def gradient(op, grad):
        x = op.inputs[0]
        with m._control_dependencies([grad]):
            return body(m.conj(x), op.outputs[0], grad)

    return gradient


def _one(x):
    return constant(1, dtype=x.dtype)


_ASIN_GRAD = _unary_grad(lambda x, y, g: g * m.reciprocal(m.sqrt(m.subtract(_one(x), m.square(x)))))
_ACOS_GRAD = _unary_grad(lambda x, y, g: -g * m.reciprocal(m.sqrt(m.subtract(_one(x), m.square(x)))))
_ATAN_GRAD = _unary_grad(lambda x, y, g: g * m.reciprocal(m.add(_one(x), m.square(x))))
_ATANH_GRAD = _unary_grad(lambda x, y, g: g * m.reciprocal(m.subtract(_one(x), m.square(x))))
_SINH_GRAD = _unary_grad(lambda x, y, g: g * cosh(x))
_COSH_GRAD = _unary_grad(lambda x, y, g: g * sinh(x))
_LGAMMA_GRAD = _unary_grad(lambda x, y, g: g * digamma(x))
_DIGAMMA_GRAD = _unary_grad(lambda x, y, g: g * _out("Polygamma", [constant(1, dtype=x.dtype), x]))
_ERFC_GRAD = _unary_grad(lambda x, y, g: g * constant(-2 / np.sqrt(np.pi), dtype=g.dtype) * m.exp(-m.square(x)))


def _asinh_grad(op, grad):
    y = op.outputs[0]
    with m._control_dependencies([grad]):
        return grad / cosh(m.conj(y))


def _acosh_grad(op, grad):
    y = op.outputs[0]
    with m._control_dependencies([grad]):
        return grad / sinh(m.conj(y))


def _erfinv_grad(op, grad):
    root_pi_over_two = constant(np.sqrt(np.pi) / 2, dtype=grad.dtype)
    with m._control_dependencies([grad]):
        return grad * root_pi_over_two * m.exp(m.square(op.outputs[0]))


def _not_zero(x):
    return m.cast(m.not_equal(x, m.cast(0., dtype=x.dtype)), dtype=x.dtype)


def _xlogy_grad(op, grad):
    x, y = op.inputs
    sx, sy = _array.shape(x), _array.shape(y)
    rx, ry = m._broadcast_gradient_args(sx, sy)
    with m._control_dependencies([grad]):
        partial_x = _out("Xlogy", [_not_zero(x), y])
        partial_y = _out("Xdivy", [x, y])
        return (_array.reshape(m.reduce_sum(partial_x * grad, rx), sx),
                _array.reshape(m.reduce_sum(partial_y * grad, ry), sy))


def _xlog1py_grad(op, grad):
    x, y = op.inputs
    sx, sy = _array.shape(x), _array.shape(y)
    rx, ry = m._broadcast_gradient_args(sx, sy)
    with m._control_dependencies([grad]):
        partial_x = _out("Xlog1py", [_not_zero(x), y])
        partial_y = _out("Xdivy", [x, y + 1.])
        return (_array.reshape(m.reduce_sum(partial_x * grad, rx), sx),
                _array.reshape(m.reduce_sum(partial_y * grad, ry), sy))


def _xdivy_grad(op, grad):
    x, y = op.inputs
    sx, sy = _array.shape(x), _array.shape(y)
    rx, ry = m._broadcast_gradient_args(sx, sy)
    with m._control_dependencies([grad]):
        partial_x = _out("Xdivy", [_not_zero(x), y])
        partial_y = _out("Xdivy", [m.negative(x), y ** 2])
        return (_array.reshape(m.reduce_sum(partial_x * grad, rx), sx),
                _array.reshape(m.reduce_sum(partial_y * grad, ry), sy))


def _div_no_nan_grad(op, grad):
    x, y = op.inputs
    sx, sy = _array.shape(x), _array.shape(y)
    rx, ry = m._broadcast_gradient_args(sx, sy)
    x, y = m.conj(x), m.conj(y)
    return (_array.reshape(m.reduce_sum(div_no_nan(grad, y), rx), sx),
            _array.reshape(m.reduce_sum(grad * div_no_nan(div_no_nan(-x, y), y), ry), sy))


def _mul_no_nan_grad(op, grad):
    x, y = op.inputs
    if isinstance(grad, Tensor) and m._shapes_fully_specified_and_equal(x, y, grad):
        return _out("MulNoNan", [grad, y]), _out("MulNoNan", [x, grad])
    sx, sy = _array.shape(x), _array.shape(y)
    rx, ry = m._broadcast_gradient_args(sx, sy)
    return (_array.reshape(m.reduce_sum(_out("MulNoNan", [grad, y]), rx), sx),
            _array.reshape(m.reduce_sum(_out("MulNoNan", [x, grad]), ry), sy))


def _euclidean_norm_grad(op, grad):
    output = op.outputs[0]
    if not op.get_attr("keep_dims"):
        output_shape_kept_dims = m.reduced_shape(_array.shape(op.inputs[0]), op.inputs[1])
        output = _array.reshape(output, output_shape_kept_dims)
        grad = _array.reshape(grad, output_shape_kept_dims)
    return m.truediv(op.inputs[0], output / grad), None


def _accumulate_grad(op, grad):
    return [grad] * len(op.inputs)


# -- registry entries ----------------------------------------------------------------------------
_UNARY = [
    ("Asin", _asin, _FLOATS_COMPLEX, _ASIN_GRAD), ("Acos", _acos, _FLOATS_COMPLEX, _ACOS_GRAD),
    ("Atan", _atan, _FLOATS_COMPLEX, _ATAN_GRAD), ("Sinh", _sinh, _FLOATS_COMPLEX, _SINH_GRAD),
    ("Cosh", _cosh, _FLOATS_COMPLEX, _COSH_GRAD), ("Asinh", _asinh, _FLOATS_COMPLEX, _asinh_grad),
    ("Acosh", _acosh, _FLOATS_COMPLEX, _acosh_grad), ("Atanh", _atanh, _FLOATS_COMPLEX, _ATANH_GRAD),
    ("Lgamma", _lgamma, _FLOATS, _LGAMMA_GRAD), ("Digamma", _digamma, _FLOATS, _DIGAMMA_GRAD),
    ("Erfc", _erfc, _FLOATS, _ERFC_GRAD), ("Erfinv", _erfinv, _FLOATS, _erfinv_grad),
]
for _name, _compute, _allowed, _grad in _UNARY:
    m._register_cwise(_name, ["x: T"], "y: T", {"T": Attr("type", allowed=_allowed)}, unchanged_shape,
                      lower=_float_lowering(_compute), gradient=_grad)

m._register_cwise("Polygamma", ["a: T", "x: T"], "z: T", {"T": Attr("type", allowed=(_d.float32, _d.float64))},
                  m._broadcast_infer, lower=_lower_polygamma)
for _name, _compute, _grad in (("Xlogy", _xlogy, _xlogy_grad), ("Xdivy", _xdivy, _xdivy_grad),
                               ("Xlog1py", _xlog1py, _xlog1py_grad)):
    m._register_cwise(_name, ["x: T", "y: T"], "z: T", {"T": Attr("type", allowed=_FLOATS_COMPLEX)},
                      m._broadcast_infer, lower=_float_lowering(_compute, arity=2), gradient=_grad)
m._register_cwise("DivNoNan", ["x: T", "y: T"], "z: T", {"T": Attr("type", allowed=_FLOATS_COMPLEX)},
                  m._broadcast_infer, lower=_lower_no_nan("div"), gradient=_div_no_nan_grad)
m._register_cwise("MulNoNan", ["x: T", "y: T"], "z: T", {"T": Attr("type", allowed=_FLOATS_COMPLEX)},
                  m._broadcast_infer, lower=_lower_no_nan("mul"), gradient=_mul_no_nan_grad)
m._register_cwise("EuclideanNorm", ["input: T", "reduction_indices: Tidx"], "output: T",
                  {"keep_dims": Attr("bool", False), "T": Attr("type", allowed=m.NUMBER_TYPES),
                   "Tidx": Attr("type", _d.int32, allowed=m.INDEX_TYPES)}, m._reduction_infer,
                  lower=_lower_euclidean_norm, gradient=_euclidean_norm_grad)


def _accumulate_shape(c) -> list:
    """TF's AccumulateNV2 shape function: the ``shape`` attr merged with every input."""
    current = c.attr("shape")
    current = None if current is None or current.ndims is None else [d.value for d in current.dims]
    for i in range(c.num_inputs):
        try:
            current = ic.merge(c.input(i), current)
        except ShapeError as e:
            raise ic.append_to_message(e, f"From merging shape {i} with other shapes.") from None
    return [current]


@register
class AccumulateNV2(OpType):
    inputs = ["inputs: N * T"]
    outputs = ["sum: T"]
    attrs = {"N": Attr("int"), "T": Attr("type", allowed=m.NUMBER_TYPES), "shape": Attr("shape")}

    def infer(op):
        return run_shape_fn(op, _accumulate_shape)

    lower = _lower_accumulate
    gradient = _accumulate_grad


# -- python functions ----------------------------------------------------------------------------
def _unary_fn(op_type, py_name):
    def fn(x, name=None):
        return _out(op_type, [x], name=name)

    fn.__name__ = py_name
    fn.__doc__ = f"tf.math.{py_name}: a {op_type} op."
    return fn


asin = _unary_fn("Asin", "asin")
acos = _unary_fn("Acos", "acos")
atan = _unary_fn("Atan", "atan")
sinh = _unary_fn("Sinh", "sinh")
cosh = _unary_fn("Cosh", "cosh")
asinh = _unary_fn("Asinh", "asinh")
acosh = _unary_fn("Acosh", "acosh")
atanh = _unary_fn("Atanh", "atanh")
lgamma = _unary_fn("Lgamma", "lgamma")
digamma = _unary_fn("Digamma", "digamma")
erfc = _unary_fn("Erfc", "erfc")


def erfinv(x, name=None):
    """tf.math.erfinv: an Erfinv op in scope 'erfinv'."""
    with name_scope(name, "erfinv", [x]):
        return _out("Erfinv", [x])


def xlogy(x, y, name=None):
    return _out("Xlogy", [x, y], name=name)


def xdivy(x, y, name=None):
    """tf.math.xdivy: an Xdivy op in scope 'xdivy'."""
    with name_scope(name, "xdivy", [x]):
        return _out("Xdivy", [x, y])


def xlog1py(x, y, name=None):
    """tf.math.xlog1py: an Xlog1py op in scope 'xlog1py'."""
    with name_scope(name, "xlog1py", [x]):
        return _out("Xlog1py", [x, y])


def div_no_nan(x, y, name=None):
    """tf.div_no_nan: DivNoNan in scope 'div_no_nan' (y converted with x's dtype)."""
    with name_scope(name, "div_no_nan", [x, y]) as scope:
        x = convert_to_tensor(x, name="x")
        y = convert_to_tensor(y, name="y", dtype=x.dtype.base_dtype)
        x_dtype, y_dtype = x.dtype.base_dtype, y.dtype.base_dtype
        if x_dtype != y_dtype:
            raise TypeError(f"x and y must have the same dtype, got {x_dtype!r} != {y_dtype!r}")
        return _out("DivNoNan", [x, y], name=scope)


def multiply_no_nan(x, y, name=None):
    """tf.math.multiply_no_nan: MulNoNan in scope 'multiply_no_nan'."""
    with name_scope(name, "multiply_no_nan", [x, y]) as scope:
        x = convert_to_tensor(x, name="x")
        y = convert_to_tensor(y, name="y", dtype=x.dtype.base_dtype)
        x_dtype, y_dtype = x.dtype.base_dtype, y.dtype.base_dtype
        if x_dtype != y_dtype:
            raise TypeError(f"x and y must have the same dtype, got {x_dtype!r} != {y_dtype!r}")
        return _out("MulNoNan", [x, y], name=scope)


def reciprocal_no_nan(x, name=None):
    """tf.math.reciprocal_no_nan: DivNoNan(1, x) in scope 'reciprocal_no_nan'."""
    with name_scope(name, "reciprocal_no_nan", [x]) as scope:
        x = convert_to_tensor(x, name="x")
        one = constant(1, dtype=x.dtype.base_dtype, name="one")
        return _out("DivNoNan", [one, x], name=scope)


def log_sigmoid(x, name=None):
    """-softplus(-x) (TF's composition: LogSigmoid/Neg, LogSigmoid/Softplus, LogSigmoid)."""
    with name_scope(name, "LogSigmoid", [x]) as scope:
        x = convert_to_tensor(x, name="x")
        return _out("Neg", [_out("Softplus", [-x])], name=scope)


def _reduction_args(axis, reduction_indices, keepdims, keep_dims):
    axis = m.deprecated_argument_lookup("axis", axis, "reduction_indices", reduction_indices)
    keepdims = m.deprecated_argument_lookup("keepdims", keepdims, "keep_dims", keep_dims)
    return axis, (False if keepdims is None else bool(keepdims))


def reduce_logsumexp(input_tensor, axis=None, keepdims=None, name=None, reduction_indices=None, keep_dims=None):
    """TF 1.15's composition: log(sum(exp(x - max))) + max, the max (0 where not finite)
    under StopGradient."""
    axis, keepdims = _reduction_args(axis, reduction_indices, keepdims, keep_dims)
    input_tensor = convert_to_tensor(input_tensor)
    with name_scope(name, "ReduceLogSumExp", [input_tensor]):
        raw_max = m.reduce_max(input_tensor, axis=axis, keepdims=True)
        from .selection_ops import where

        my_max = _array.stop_gradient(where(m.is_finite(raw_max), raw_max, _array.zeros_like(raw_max)))
        result = m.log(m.reduce_sum(m.exp(m.subtract(input_tensor, my_max)), axis, keepdims=keepdims))
        if not keepdims:
            my_max = _array.reshape(my_max, _array.shape(result))
        result = m.add(result, my_max)
        return m._may_reduce_to_scalar(keepdims, axis, result)


def reduce_variance(input_tensor, axis=None, keepdims=False, name=None):
    name = name if name else "reduce_variance"
    with name_scope(name):
        means = m.reduce_mean(input_tensor, axis=axis, keepdims=True)
        squared_deviations = m.square(input_tensor - means)
        return m.reduce_mean(squared_deviations, axis=axis, keepdims=keepdims)


def reduce_std(input_tensor, axis=None, keepdims=False, name=None):
    name = name if name else "reduce_std"
    with name_scope(name):
        variance = reduce_variance(input_tensor, axis=axis, keepdims=keepdims)
        return m.sqrt(variance)


def reduce_euclidean_norm(input_tensor, axis=None, keepdims=False, name=None):
    keepdims = bool(keepdims)
    output = _out("EuclideanNorm", [input_tensor, m._reduction_dims(input_tensor, axis)], {"keep_dims": keepdims},
                  name=name)
    return m._may_reduce_to_scalar(keepdims, axis, output)


def accumulate_n(inputs, shape=None, tensor_dtype=None, name=None):
    """TF 1.15's accumulate_n: an AccumulateNV2 op (a single input comes back as is)."""
    from ..tensor_shape import TensorShape, as_shape

    message = "inputs must be a list of at least one Tensor with the same dtype and shape"
    if not inputs or not isinstance(inputs, (list, tuple)):
        raise ValueError(message)
    inputs = [convert_to_tensor(v) for v in inputs]
    if not all(x.dtype == inputs[0].dtype for x in inputs):
        raise ValueError(message)
    shape = as_shape(shape) if shape is not None else TensorShape(None)
    for input_tensor in inputs:
        shape = shape.merge_with(input_tensor.get_shape())
    if tensor_dtype is not None and tensor_dtype != inputs[0].dtype:
        raise TypeError(f"tensor_dtype is {tensor_dtype}, but input is of type {inputs[0].dtype}")
    if len(inputs) == 1 and name is None:
        return inputs[0]
    if len(inputs) == 1:
        return _array.identity(inputs[0], name=name)
    return _out("AccumulateNV2", [inputs], {"shape": shape}, name=name)


def arg_max(input, dimension, output_type=dtypes.int64, name=None):  # noqa: A002 - TF's name
    """tf.arg_max (TF1's generated wrapper): an ArgMax op."""
    return _out("ArgMax", [input, dimension], {"output_type": output_type}, name=name)


def arg_min(input, dimension, output_type=dtypes.int64, name=None):  # noqa: A002
    return _out("ArgMin", [input, dimension], {"output_type": output_type}, name=name)


def polyval(coeffs, x, name=None):
    """Horner's scheme: p = c + p * x over the coefficients (highest power first)."""
    if not isinstance(coeffs, list):
        raise ValueError(f"Argument coeffs must be list type found {type(coeffs)}.")
    with name_scope(name, "polyval", list(coeffs) + [x]) as scope:
        x = convert_to_tensor(x, name="x")
        if len(coeffs) < 1:
            return _array.zeros_like(x, name=scope)
        coeffs = [convert_to_tensor(coeff, name=f"coeff_{index}") for index, coeff in enumerate(coeffs)]
        p = coeffs[0]
        for c in coeffs[1:]:
            p = c + p * x
        return p


def _get_diff_for_monotonic_comparison(x):
    """x[1:] - x[:-1] of the flattened x.

    TF 1.15 puts this under ``cond(size(x) < 2, lambda: [], diff)``; its branches have
    different shapes, which tfc's cond cannot compile, and the slices alone already give
    [] for fewer than 2 elements (x[1:0] and x[0:-1] of a 1- or 0-element x), so the
    same slices and subtraction are built without the cond (no Less/Switch/Merge nodes).
    """
    from .slicing import strided_slice

    x = _array.reshape(x, [-1])
    if not (x.dtype.is_floating or x.dtype.is_integer or x.dtype.is_complex):
        raise TypeError(f"Expected x to be numeric, instead found: {x}")
    s_len = _array.shape(x) - 1
    return strided_slice(x, [1], [1] + s_len) - strided_slice(x, [0], s_len)


def is_non_decreasing(x, name=None):
    with name_scope(name, "is_non_decreasing", [x]):
        diff = _get_diff_for_monotonic_comparison(x)
        zero = convert_to_tensor(0, dtype=diff.dtype)
        return m.reduce_all(m.less_equal(zero, diff))


def is_strictly_increasing(x, name=None):
    with name_scope(name, "is_strictly_increasing", [x]):
        diff = _get_diff_for_monotonic_comparison(x)
        zero = convert_to_tensor(0, dtype=diff.dtype)
        return m.reduce_all(m.less(zero, diff))


def _count_nonzero(input_tensor, dtype=dtypes.int64):
    with name_scope("count_nonzero", values=[input_tensor]):
        zero = _array.zeros([], dtype=input_tensor.dtype)
        return m.reduce_sum(m.cast(m.not_equal(input_tensor, zero), dtype=dtype), name="nonzero_count")


def zero_fraction(value, name=None):
    """The fraction of zeros in ``value`` (TF's composition: an int32 count under a cond)."""
    from ..control_flow import cond

    with name_scope(name, "zero_fraction", [value]):
        value = convert_to_tensor(value, name="value")
        size = _array.size(value, out_type=dtypes.int64)
        num_nonzero = cond(size <= dtypes.int32.max,
                           true_fn=lambda: m.cast(_count_nonzero(value, dtype=dtypes.int32), dtype=dtypes.int64),
                           false_fn=lambda: _count_nonzero(value, dtype=dtypes.int64))
        with name_scope("counts_to_fraction"):
            num_zero = size - num_nonzero
            num_zero_float32 = m.cast(num_zero, dtype=dtypes.float32)
            size_float32 = m.cast(size, dtype=dtypes.float32)
            zero_fraction_float32 = num_zero_float32 / size_float32
        return _array.identity(zero_fraction_float32, "fraction")


def remove_squeezable_dimensions(labels, predictions, expected_rank_diff=0, name=None):
    """Squeeze a last dimension of size 1 when the ranks differ by 1 (static ranks only)."""
    with name_scope(name, "remove_squeezable_dimensions", [labels, predictions]):
        predictions = convert_to_tensor(predictions)
        labels = convert_to_tensor(labels)
        predictions_shape, labels_shape = predictions.get_shape(), labels.get_shape()
        predictions_rank, labels_rank = predictions_shape.ndims, labels_shape.ndims
        if labels_rank is None or predictions_rank is None:
            raise NotImplementedError("tfc's remove_squeezable_dimensions needs the ranks of labels and "
                                      "predictions to be known while building the graph")
        rank_diff = predictions_rank - labels_rank
        if rank_diff == expected_rank_diff + 1 and predictions_shape.dims[-1].is_compatible_with(1):
            predictions = _array.squeeze(predictions, [-1])
        elif rank_diff == expected_rank_diff - 1 and labels_shape.dims[-1].is_compatible_with(1):
            labels = _array.squeeze(labels, [-1])
        return labels, predictions


def confusion_matrix(labels, predictions, num_classes=None, dtype=dtypes.int32, name=None, weights=None):
    """TF 1.15's composition: asserted non-negative (and < num_classes) int64 labels and
    predictions, a SparseTensor of ones (or weights) at [label, prediction] added to zeros."""
    from ..check_ops import assert_less, assert_non_negative
    from ..sparse_tensor import SparseTensor
    from .concat_ops import stack
    from .control_flow_ops import with_dependencies
    from .sparse_ops import sparse_add

    with name_scope(name, "confusion_matrix", (predictions, labels, num_classes, weights)):
        labels, predictions = remove_squeezable_dimensions(convert_to_tensor(labels, name="labels"),
                                                           convert_to_tensor(predictions, name="predictions"))
        predictions = m.cast(predictions, dtypes.int64)
        labels = m.cast(labels, dtypes.int64)
        labels = with_dependencies([assert_non_negative(labels, message="`labels` contains negative values")],
                                   labels)
        predictions = with_dependencies(
            [assert_non_negative(predictions, message="`predictions` contains negative values")], predictions)
        if num_classes is None:
            num_classes = m.maximum(m.reduce_max(predictions), m.reduce_max(labels)) + 1
        else:
            num_classes_int64 = m.cast(num_classes, dtypes.int64)
            labels = with_dependencies([assert_less(labels, num_classes_int64, message="`labels` out of bound")],
                                       labels)
            predictions = with_dependencies(
                [assert_less(predictions, num_classes_int64, message="`predictions` out of bound")], predictions)
        if weights is not None:
            weights = convert_to_tensor(weights, name="weights")
            predictions.get_shape().assert_is_compatible_with(weights.get_shape())
            weights = m.cast(weights, dtype)
        shape = stack([num_classes, num_classes])
        indices = stack([labels, predictions], axis=1)
        values = _array.ones_like(predictions, dtype) if weights is None else weights
        cm_sparse = SparseTensor(indices=indices, values=values, dense_shape=m.cast(shape, dtypes.int64))
        zero_matrix = _array.zeros(m.cast(shape, dtypes.int32), dtype)
        return sparse_add(zero_matrix, cm_sparse)


_ALIASES = {
    "asin": asin, "acos": acos, "atan": atan, "sinh": sinh, "cosh": cosh, "asinh": asinh, "acosh": acosh,
    "atanh": atanh, "lgamma": lgamma, "digamma": digamma, "erfc": erfc, "erfinv": erfinv,
    "log_sigmoid": log_sigmoid, "reduce_logsumexp": reduce_logsumexp, "accumulate_n": accumulate_n,
    "xlogy": xlogy, "xdivy": xdivy, "is_non_decreasing": is_non_decreasing,
    "is_strictly_increasing": is_strictly_increasing, "confusion_matrix": confusion_matrix,
}
TF_EXPORTS = {**_ALIASES, "div_no_nan": div_no_nan, "arg_max": arg_max, "arg_min": arg_min}
MATH_EXPORTS = {**_ALIASES, "invert_permutation": _array.invert_permutation, "reduce_std": reduce_std,
                "reduce_variance": reduce_variance,
                "reduce_euclidean_norm": reduce_euclidean_norm, "xlog1py": xlog1py, "divide_no_nan": div_no_nan,
                "multiply_no_nan": multiply_no_nan, "reciprocal_no_nan": reciprocal_no_nan, "polyval": polyval,
                "zero_fraction": zero_fraction}
NN_EXPORTS = {"zero_fraction": zero_fraction}
DEBUGGING_EXPORTS = {"is_non_decreasing": is_non_decreasing, "is_strictly_increasing": is_strictly_increasing}
