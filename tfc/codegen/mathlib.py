"""Vectorisable transcendental functions: range reduction + polynomials, no calls.

A call to libm's ``expf`` in a loop stops LLVM's loop vectoriser; these straight-line
versions (selects, no branches) vectorise with the rest of a fused loop. Accuracy is
tested against numpy in ulps (tests/codegen/test_mathlib.py). Coefficients are Cephes'
(log, f64 exp and tanh) and Eigen's (erf); f64 uses Cephes' rational approximations. The
f32 polynomials are relative minimax fits (iteratively reweighted least squares, the
errors below with the coefficients rounded to f32), all of degree 4: on [-ln2/2, ln2/2]
exp's (e^r - 1 - r)/r^2 (3.7e-9) and tanh's (expm1(r) - r)/r^2 (1.2e-7); tanh's
(tanh(x) - x)/x^3 in x^2 on [0, 0.25] (4.2e-9 relative to tanh).
"""
from __future__ import annotations

import math

from llvmlite import ir as ll

from .llvm_util import F32, F64, I32, I64, call_intrinsic


# Products feeding a sum may fuse into one FMA (one rounding instead of two): fewer
# instructions, and never less accurate for the polynomials and reductions here.
CONTRACT = ("contract",)


def _const(t, value: float):
    return ll.Constant(t, float(value))


def _mul_add(b: ll.IRBuilder, x, y, z):
    """x * y + z, contractible to an FMA."""
    return b.fadd(b.fmul(x, y, flags=CONTRACT), z, flags=CONTRACT)


def _poly(b: ll.IRBuilder, x, coefficients) -> object:
    """Horner: c0*x^n + c1*x^(n-1) + ... + cn."""
    t = x.type
    result = _const(t, coefficients[0])
    for c in coefficients[1:]:
        result = _mul_add(b, result, x, _const(t, c))
    return result


def _estrin(b: ll.IRBuilder, x, coefficients, x2=None) -> object:
    """The polynomial of ``_poly`` by Estrin's scheme: pairs c*x + c' in parallel, then
    combined with x^2, x^4...: the dependent chain is ~log2(n) multiply-adds long instead
    of n (these loops are limited by latency: each element's chain must finish before
    the out-of-order window moves on). ``x2``: x*x when the caller has it."""
    t = x.type
    terms = [_const(t, c) for c in coefficients]
    power = x
    squared = x2
    while len(terms) > 1:
        leading = terms[:len(terms) % 2]  # an odd count: the highest term waits a level
        rest = terms[len(leading):]
        terms = leading + [_mul_add(b, rest[i], power, rest[i + 1]) for i in range(0, len(rest), 2)]
        power = squared if squared is not None else b.fmul(power, power)
        squared = None
    return terms[0]


def _int_type(t):
    return I32 if t == F32 else I64


def _ldexp(b: ll.IRBuilder, y, n_int):
    """y * 2^n for n in a wide range: two exponent-field multiplications (no overflow of
    the biased exponent, denormal results come out right)."""
    t = y.type
    it = _int_type(t)
    bias, shift = (127, 23) if t == F32 else (1023, 52)
    half = b.ashr(n_int, ll.Constant(it, 1))
    rest = b.sub(n_int, half)
    for part in (half, rest):
        bits = b.shl(b.add(part, ll.Constant(it, bias)), ll.Constant(it, shift))
        y = b.fmul(y, b.bitcast(bits, t))
    return y


def _is_nan(b: ll.IRBuilder, x):
    return b.fcmp_unordered("uno", x, x)


# x/ln2 + 1.5*2^23 + 127 rounds x/ln2 to an integer n held in the low mantissa bits,
# biased by 127: shifted left by 23, those bits are 2^n's (for 2^n normal).
_ROUND_AND_BIAS_F32 = 12583039.0


def _round_to_power_f32(b: ll.IRBuilder, x):
    """(n, 2^n) for n = x/ln2 rounded to nearest, both from one multiply-add (no rounding
    instruction or integer conversion); for x/ln2 in [-127.5, 127.5] (n = -127 gives 0)."""
    shifted = b.fadd(b.fmul(x, _const(F32, 1.0 / math.log(2.0)), flags=CONTRACT), _const(F32, _ROUND_AND_BIAS_F32),
                     flags=CONTRACT)
    n = b.fsub(shifted, _const(F32, _ROUND_AND_BIAS_F32))
    return n, b.bitcast(b.shl(b.bitcast(shifted, I32), ll.Constant(I32, 23)), F32)


def _exp_of_reduced(b: ll.IRBuilder, x, n):
    """exp(x - n*ln2): Cody-Waite reduction (ln2 in two parts) and a polynomial (f32) or
    Cephes' rational function (f64)."""
    t = x.type
    if t == F32:
        r = _mul_add(b, n, _const(t, -0.693359375), x)
        r = _mul_add(b, n, _const(t, 2.12194440e-4), r)
        z = b.fmul(r, r)
        p = _estrin(b, r, [1.38145697e-3, 8.36873055e-3, 4.16683890e-2, 1.66665211e-1, 4.99999940e-1], z)
        return b.fadd(_mul_add(b, p, z, r), _const(t, 1.0))
    r = b.fsub(x, b.fmul(n, _const(t, 6.93145751953125e-1)))
    r = b.fsub(r, b.fmul(n, _const(t, 1.42860682030941723212e-6)))
    z = b.fmul(r, r)
    px = b.fmul(r, _poly(b, z, [1.26177193074810590878e-4, 3.02994407707441961300e-2,
                                9.99999999999999999910e-1]))
    q = _poly(b, z, [3.00198505138664455042e-6, 2.52448340349684104192e-3, 2.27265548208155028766e-1,
                     2.00000000000000000009e0])
    return b.fadd(_const(t, 1.0), b.fmul(_const(t, 2.0), b.fdiv(px, b.fsub(q, px))))


def _exp_core(b: ll.IRBuilder, x, wide_range: bool):
    """exp(x) for an ``x`` already clamped into the range the caller needs: x = n*ln2 + r,
    exp(r), then the scaling by 2^n. ``wide_range``: n may leave the normal exponent range
    (overflow to inf, denormal results), which takes two scalings; else one. A NaN ``x``
    gives NaN (every step propagates it)."""
    t = x.type
    if t == F32 and not wide_range:
        n, power = _round_to_power_f32(b, x)
        return b.fmul(_exp_of_reduced(b, x, n), power)
    n = call_intrinsic(b, "rint", b.fmul(x, _const(t, 1.0 / math.log(2.0))))
    y = _exp_of_reduced(b, x, n)
    n_int = b.fptosi(n, _int_type(t))
    return _ldexp(b, y, n_int) if wide_range else _scale_normal(b, y, n_int)


def _scale_normal(b: ll.IRBuilder, y, n_int):
    """y * 2^n for 2^n a normal number: one multiplication by it."""
    t = y.type
    it = _int_type(t)
    bias, shift = (127, 23) if t == F32 else (1023, 52)
    return b.fmul(y, b.bitcast(b.shl(b.add(n_int, ll.Constant(it, bias)), ll.Constant(it, shift)), t))


def _clamp(b: ll.IRBuilder, x, lo=None, hi=None):
    """x limited to [lo, hi] (either may be None); a NaN stays NaN."""
    t = x.type
    if hi is not None:
        x = b.select(b.fcmp_ordered(">", x, _const(t, hi)), _const(t, hi), x)
    if lo is not None:
        x = b.select(b.fcmp_ordered("<", x, _const(t, lo)), _const(t, lo), x)
    return x


def exp(b: ll.IRBuilder, x):
    hi_limit, lo_limit = (88.8, -104.0) if x.type == F32 else (709.8, -745.2)
    return _exp_core(b, _clamp(b, x, lo_limit, hi_limit), wide_range=True)


def log(b: ll.IRBuilder, x):
    t = x.type
    it = _int_type(t)
    is_f32 = t == F32
    mantissa_bits, bias = (23, 127) if is_f32 else (52, 1023)
    smallest_normal = 1.17549435e-38 if is_f32 else 2.2250738585072014e-308
    # Scale denormals into the normal range.
    tiny = b.fcmp_ordered("<", x, _const(t, smallest_normal))
    scaled = b.select(tiny, b.fmul(x, _const(t, 2.0 ** mantissa_bits)), x)
    bits = b.bitcast(scaled, it)
    exponent = b.sub(b.lshr(bits, ll.Constant(it, mantissa_bits)), ll.Constant(it, bias - 1))
    exponent = b.sub(exponent, b.select(tiny, ll.Constant(it, mantissa_bits), ll.Constant(it, 0)))
    mantissa_mask = (1 << mantissa_bits) - 1
    half_bits = (bias - 1) << mantissa_bits
    m_bits = b.or_(b.and_(bits, ll.Constant(it, mantissa_mask)), ll.Constant(it, half_bits))
    m = b.bitcast(m_bits, t)  # in [0.5, 1)
    low = b.fcmp_ordered("<", m, _const(t, 0.707106781186547524))
    e = b.sitofp(b.sub(exponent, b.zext(low, it)), t)
    m = b.fsub(b.select(low, b.fadd(m, m), m), _const(t, 1.0))
    z = b.fmul(m, m)
    if is_f32:
        p = _poly(b, m, [7.0376836292e-2, -1.1514610310e-1, 1.1676998740e-1, -1.2420140846e-1, 1.4249322787e-1,
                         -1.6668057665e-1, 2.0000714765e-1, -2.4999993993e-1, 3.3333331174e-1])
        y = b.fmul(b.fmul(m, z), p)
    else:
        p = _poly(b, m, [1.01875663804580931796e-4, 4.97494994976747001425e-1, 4.70579119878881725854e0,
                         1.44989225341610930846e1, 1.79368678507819816313e1, 7.70838733755885391666e0])
        q = _poly(b, m, [1.0, 1.12873587189167450590e1, 4.52279145837532221105e1, 8.29875266912776603211e1,
                         7.11544750618563894466e1, 2.31251620126765340583e1])
        y = b.fmul(b.fmul(m, z), b.fdiv(p, q))
    y = b.fadd(y, b.fmul(e, _const(t, -2.121944400546905827679e-4)))
    y = b.fsub(y, b.fmul(z, _const(t, 0.5)))
    result = b.fadd(b.fadd(m, y), b.fmul(e, _const(t, 0.693359375)))
    result = b.select(b.fcmp_ordered("==", x, _const(t, 0.0)), _const(t, float("-inf")), result)
    result = b.select(b.fcmp_ordered("<", x, _const(t, 0.0)), _const(t, float("nan")), result)
    result = b.select(b.fcmp_ordered("==", x, _const(t, float("inf"))), x, result)
    return b.select(_is_nan(b, x), x, result)


def _expm1_reduced_f32(b: ll.IRBuilder, x):
    """expm1(x) for f32 ``x`` in [0, 20], for tanh from 2|x| = 1 up (a NaN propagates):
    x = n*ln2 + r with n = x/ln2 rounded, r in [-ln2/2, ln2/2]; expm1(r) = r + r^2*q(r),
    q a degree-4 fit of (expm1(r) - r)/r^2 (relative error 1.2e-7, so ~2e-8 in expm1(r));
    expm1(x) = 2^n*expm1(r) + (2^n - 1), one multiply-add. One f32 constant for ln2 (off
    by 1.9e-9) puts an error of n*1.9e-9 in r: 2^-n of it reaches tanh, whose sensitivity
    to u = expm1(2|x|) is 2/(u + 2). Within tanh's 1 ulp: measured over every f32 (see
    ``_tanh_f32``)."""
    t = x.type
    n, power = _round_to_power_f32(b, x)
    r = _mul_add(b, n, _const(t, -math.log(2.0)), x)
    r2 = b.fmul(r, r)
    q = _estrin(b, r, [1.39012805e-3, 8.36314075e-3, 4.16668542e-2, 1.66665778e-1, 0.5], r2)
    expm1_r = _mul_add(b, r2, q, r)
    return _mul_add(b, power, expm1_r, b.fsub(power, _const(t, 1.0)))


def _with_sign_of_f32(b: ll.IRBuilder, magnitude, x):
    """``magnitude`` (>= 0 or NaN) with x's sign bit or-ed in: one instruction where
    copysign takes two (it first clears the magnitude's sign)."""
    sign = b.and_(b.bitcast(x, I32), ll.Constant(I32, -(1 << 31)))
    return b.bitcast(b.or_(b.bitcast(magnitude, I32), sign), F32)


def _tanh_f32(b: ll.IRBuilder, x, ax):
    """|x| < 0.5: |x| + |x|^3*p(x^2), the odd polynomial; else u / (u + 2) with
    u = expm1(2|x|) (2|x| clamped to 20: tanh rounds to 1 from |x| = 9.1). Both are
    computed and one is selected (no branch: the loop stays vectorised). The quotient
    carries the roundings of u, of u + 2 and of the divide: over every f32 it is within
    1 ulp from |x| = 0.5 up, 2 ulps below, where the polynomial takes over. Over every f32
    from 2^-13 to 9.2 (135 million): at most 1 ulp, 97.5% correctly rounded. Both results
    are >= 0 (or NaN), so x's sign is or-ed in."""
    x2 = b.fmul(x, x)
    p = _poly(b, x2, [-6.64748391e-3, 2.12979894e-2, -5.38991913e-2, 1.33329645e-1, -3.33333284e-1])
    small = _mul_add(b, b.fmul(x2, ax), p, ax)
    u = _expm1_reduced_f32(b, _clamp(b, b.fadd(ax, ax), hi=20.0))
    large = b.fdiv(u, b.fadd(u, _const(F32, 2.0)))
    return _with_sign_of_f32(b, b.select(b.fcmp_ordered("<", ax, _const(F32, 0.5)), small, large), x)


def tanh(b: ll.IRBuilder, x):
    """f32: see ``_tanh_f32``. f64: near 0 (|x| < 0.625) Cephes' rational function; else
    (1 - z) / (1 + z) with z = exp(-2|x|) in (0, 0.29], computed for -2|x| >= -40 only
    (tanh rounds to +-1 from |x| = 19.1): a normal number, scaled by 2^n in one
    multiplication."""
    t = x.type
    ax = call_intrinsic(b, "fabs", x)
    if t == F32:
        return _tanh_f32(b, x, ax)
    z = b.fmul(x, x)
    p = _poly(b, z, [-9.64399179425052238628e-1, -9.92877231001918586564e1, -1.61468768441708447952e3])
    q = _poly(b, z, [1.0, 1.12811678491632931402e2, 2.23548839060100448583e3, 4.84406305325125486048e3])
    small = b.fadd(x, b.fmul(x, b.fmul(z, b.fdiv(p, q))))
    one = _const(t, 1.0)
    e = _exp_core(b, _clamp(b, b.fmul(ax, _const(t, -2.0)), lo=-40.0), wide_range=False)
    large = b.fdiv(b.fsub(one, e), b.fadd(one, e))
    # the sign copied last: x + x*w made +0 of -0
    return call_intrinsic(b, "copysign", b.select(b.fcmp_ordered("<", ax, _const(t, 0.625)), small, large), x)


def logistic(b: ll.IRBuilder, x):
    """1 / (1 + z) for x >= 0 and z / (1 + z) below, with z = exp(-|x|) in [0, 1]: no
    overflow, no cancellation. f32: z = 0 from -|x| = -87.7 on (the scaling 2^-127 is 0),
    as TF's (Eigen's) logistic is 0 from x = -88: results that would be denormal are
    flushed, and one scaling suffices."""
    t = x.type
    one = _const(t, 1.0)
    neg_ax = b.fneg(call_intrinsic(b, "fabs", x))
    if t == F32:
        z = _exp_core(b, _clamp(b, neg_ax, lo=-88.0), wide_range=False)
    else:
        z = _exp_core(b, _clamp(b, neg_ax, lo=-745.2), wide_range=True)
    numerator = b.select(b.fcmp_ordered(">=", x, _const(t, 0.0)), one, z)
    return b.fdiv(numerator, b.fadd(one, z))


def expm1(b: ll.IRBuilder, x):
    """exp(x) - 1, accurate near 0: Kahan's trick u = exp(x); (u - 1) * x / log(u)."""
    t = x.type
    u = exp(b, x)
    one = _const(t, 1.0)
    um1 = b.fsub(u, one)
    corrected = b.fmul(um1, b.fdiv(x, log(b, u)))
    result = b.select(b.fcmp_ordered("==", u, one), x, corrected)
    result = b.select(b.fcmp_ordered("==", um1, _const(t, -1.0)), um1, result)
    result = b.select(b.fcmp_ordered("==", u, _const(t, float("inf"))), u, result)
    return b.select(_is_nan(b, x), x, result)


def log1p(b: ll.IRBuilder, x):
    """log(1 + x), accurate near 0: u = 1 + x; log(u) * x / (u - 1)."""
    t = x.type
    one = _const(t, 1.0)
    u = b.fadd(one, x)
    corrected = b.fmul(log(b, u), b.fdiv(x, b.fsub(u, one)))
    result = b.select(b.fcmp_ordered("==", u, one), x, corrected)
    result = b.select(b.fcmp_ordered("==", u, _const(t, float("inf"))), log(b, u), result)
    result = b.select(b.fcmp_ordered("<=", u, _const(t, 0.0)), log(b, u), result)
    return b.select(_is_nan(b, x), x, result)


def erf_f32(b: ll.IRBuilder, x):
    """Eigen's rational approximation of erf for float, clamped to [-4, 4]."""
    t = x.type
    clamped = b.select(b.fcmp_ordered(">", x, _const(t, 4.0)), _const(t, 4.0), x)
    clamped = b.select(b.fcmp_ordered("<", clamped, _const(t, -4.0)), _const(t, -4.0), clamped)
    x2 = b.fmul(clamped, clamped)
    p = _poly(b, x2, [-2.72614225801306e-10, 2.77068142495902e-08, -2.10102402082508e-06, -5.69250639462346e-05,
                      -7.34990630326855e-04, -2.95459980854025e-03, -1.60960333262415e-02])
    q = _poly(b, x2, [-1.45660718464996e-05, -2.13374055278905e-04, -1.68282697438203e-03, -7.37332916720468e-03,
                      -1.42647390514189e-02])
    result = b.fdiv(b.fmul(clamped, p), q)
    return b.select(_is_nan(b, x), x, result)


UNARY = {"exp": exp, "log": log, "tanh": tanh, "logistic": logistic, "expm1": expm1, "log1p": log1p}
# the ops emitted inline (vectorised with their loop) for f32, and f64 but erf
INLINE_FUNCTIONS = frozenset(UNARY) | {"erf"}


def emit_unary(b: ll.IRBuilder, name: str, x):
    """The inline version of ``name`` for f32/f64 ``x``, or None when libm is used."""
    if x.type not in (F32, F64):
        return None
    if name == "erf":
        return erf_f32(b, x) if x.type == F32 else None
    fn = UNARY.get(name)
    return None if fn is None else fn(b, x)
