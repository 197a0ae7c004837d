"""The evaluator against direct numpy expressions, one test (at least) per core op."""
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from hypothesis.extra import numpy as hnp

from tfc import program_errors
from tfc.ir import CORE_OPS, Block, Builder, ElemType, Function, Module, RefType, TensorType, sym, tensor
from tfc.ir.evaluator import CheckFailure, EvaluationError, evaluate, evaluate_op

_DECLARED: set = set()  # ops some test claims to cover
_SEEN: set = set()  # ops actually built by the running test

# numpy warnings must not escape the evaluator
pytestmark = pytest.mark.filterwarnings("error::RuntimeWarning")

hsettings = settings(max_examples=40, deadline=None,
                     suppress_health_check=[HealthCheck.function_scoped_fixture])


def covers(*names):
    """Declare the ops a test covers; the fixture below checks it really built them."""
    _DECLARED.update(names)

    def mark(fn):
        fn._covers = names
        return fn

    return mark


_RUNS: dict = {}  # test function -> (number of runs, ops built over those runs)


@pytest.fixture(autouse=True)
def _record_ops(request):
    _SEEN.clear()
    yield
    runs, seen = _RUNS.get(request.function, (0, set()))
    _RUNS[request.function] = (runs + 1, seen | _SEEN)


@pytest.fixture(autouse=True, scope="module")
def _audit_covers(request):
    """After the module: each fully run test really built the ops it declares."""
    yield
    for fn, (runs, seen) in _RUNS.items():
        items = sum(1 for item in request.session.items if getattr(item, "function", None) is fn)
        missing = set(getattr(fn, "_covers", ())) - seen
        assert runs < items or not missing, f"{fn.__name__} declares {missing} but never built them"


def test_every_core_op_has_a_test():
    assert set(CORE_OPS) - {"return", "yield"} <= _DECLARED, set(CORE_OPS) - _DECLARED - {"return", "yield"}


# -- helpers ---------------------------------------------------------------------------------
def type_of(a) -> TensorType:
    a = np.asarray(a)
    return TensorType(ElemType.from_numpy(a.dtype), a.shape)


def run_fn(f, inputs, **kwargs):
    _SEEN.update(op.name for op in f.walk())
    out = evaluate(f, inputs, **kwargs)
    return out[0] if len(out) == 1 else out


def run(name, inputs, attrs=None, result_type=None, arg_types=None):
    """Evaluate ``main(inputs...) { return name(inputs...) }``."""
    f = Function("main", arg_types or [type_of(a) for a in inputs])
    b = Builder(f.body)
    op = b.op(name, f.args, attrs, None if result_type is None else [result_type])
    b.op("return", op.results)
    return run_fn(f, inputs)


def check(actual, expected, dtype=None):
    """Exact: dtype, shape and values (NaNs in the same places)."""
    expected = np.asarray(expected, dtype=dtype)
    assert actual.dtype == expected.dtype, (actual.dtype, expected.dtype)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    np.testing.assert_array_equal(actual, expected)


F32 = np.float32
X = np.array([-2.5, -0.5, 0.0, 0.5, 1.5, 2.5, 3.7], F32)
POS = np.array([0.0, 0.25, 1.0, 4.0, 1e30], F32)


# -- elementwise unary -----------------------------------------------------------------------
@covers("exp", "expm1", "log", "log1p", "sqrt", "tanh", "sin", "cos", "floor", "ceil", "round")
@pytest.mark.parametrize("name, fn, x", [
    ("exp", np.exp, X), ("expm1", np.expm1, X), ("log", np.log, POS), ("log1p", np.log1p, POS),
    ("sqrt", np.sqrt, POS), ("tanh", np.tanh, X), ("sin", np.sin, X), ("cos", np.cos, X),
    ("floor", np.floor, X), ("ceil", np.ceil, X), ("round", np.rint, X),
])
def test_unary_float(name, fn, x):
    with np.errstate(all="ignore"):
        x64, x16 = x.astype(np.float64), x.astype(np.float16)
        expected = [fn(x), fn(x64), fn(x16.astype(F32)).astype(np.float16)]
    for value, want in zip([x, x64, x16], expected):
        check(run(name, [value]), want)


@covers("round", "floor", "ceil")
def test_round_half_to_even():
    x = np.array([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 2.4999998], F32)
    check(run("round", [x]), np.array([0, 2, 2, -0.0, -2, -2, 2], F32))
    assert np.signbit(run("round", [x])[3])
    check(run("floor", [x]), np.array([0, 1, 2, -1, -2, -3, 2], F32))
    check(run("ceil", [x]), np.array([1, 2, 3, -0.0, -1, -2, 3], F32))


@covers("rsqrt", "logistic", "erf")
def test_rsqrt_logistic_erf():
    check(run("rsqrt", [np.array([4.0, 0.25, 0.0, -1.0], F32)]), np.array([0.5, 2.0, np.inf, np.nan], F32))
    x = np.array([-100.0, -3.0, 0.0, 2.0, 100.0, np.nan], F32)
    np.testing.assert_allclose(run("logistic", [x]), (1 / (1 + np.exp(-x.astype(np.float64)))).astype(F32),
                               rtol=1e-6)
    assert run("logistic", [x]).dtype == F32
    check(run("logistic", [np.array([0.0, 100.0], np.float16)]), np.array([0.5, 1.0], np.float16))
    e = np.array([-3.0, -0.5, 0.0, 0.3, 1.0, np.inf, np.nan], np.float64)
    check(run("erf", [e]), np.array([math.erf(v) for v in e]))
    e32 = e.astype(F32)
    check(run("erf", [e32]), np.array([math.erf(v) for v in e32.astype(np.float64)], F32))


def _bf16_reference(x: np.ndarray) -> np.ndarray:
    """Round f32 to bf16 by arithmetic, not bits: in f64, the nearest multiple (ties to
    even: np.rint) of the bf16 quantum at x (2^(e-8) for |x| in [2^(e-1), 2^e), at least
    2^-133, bf16's smallest denormal); past bf16's range the f32 cast gives inf."""
    x64 = x.astype(np.float64)
    finite = np.isfinite(x64) & (x64 != 0)
    _, exponent = np.frexp(np.where(finite, x64, 1.0))
    quantum = np.ldexp(1.0, np.maximum(exponent - 8, -133))
    with np.errstate(over="ignore"):
        rounded = (np.rint(x64 / quantum) * quantum).astype(F32)
    return np.where(finite, np.copysign(rounded, x), x)  # 0, +-inf, NaN unchanged; signs kept


def _bits(x: np.ndarray) -> list:
    return [hex(b) for b in np.asarray(x, F32).view(np.uint32).reshape(-1)]


@covers("round_bf16")
def test_round_bf16_hand_picked():
    cases = [  # (input, expected) as f32 bit patterns
        (0x3F800000, 0x3F800000),  # 1.0 is a bf16
        (0x3F808000, 0x3F800000),  # 1.00390625: a tie, to even (down)
        (0x3F818000, 0x3F820000),  # 1.01171875: a tie, to even (up)
        (0x3F807FFF, 0x3F800000),  # just below a tie: down
        (0x3F808001, 0x3F810000),  # just above a tie: up
        (0x3FFF8000, 0x40000000),  # the carry moves into the exponent: 2.0
        (0x7F7FFFFF, 0x7F800000),  # f32 max (3.4e38) rounds past bf16 max: inf
        (0xFF7FFFFF, 0xFF800000),  # and -inf
        (0x7F7F7FFF, 0x7F7F0000),  # bf16 max stays finite
        (0x00018000, 0x00020000),  # denormal tie, to even (up)
        (0x00008000, 0x00000000),  # the smallest denormal tie rounds to +0
        (0x80008001, 0x80010000),  # negative denormal above a tie
        (0x80000000, 0x80000000),  # -0.0 stays -0.0
        (0x7F800000, 0x7F800000), (0xFF800000, 0xFF800000),  # infinities stay
    ]
    x = np.array([c[0] for c in cases], np.uint32).view(F32)
    want = np.array([c[1] for c in cases], np.uint32).view(F32)
    got = run("round_bf16", [x])
    assert got.dtype == F32
    assert _bits(got) == _bits(want)
    assert _bits(_bf16_reference(x)) == _bits(want)  # the reference agrees with the hand-picked values
    nans = np.array([0x7FC00000, 0x7F800001, 0xFFFFFFFF, 0x7FBFFFFF], np.uint32).view(F32)
    assert _bits(run("round_bf16", [nans])) == _bits(nans)  # NaN passes unchanged (no carry into inf)


@covers("round_bf16")
@hsettings
@given(bits=hnp.arrays(np.uint32, hnp.array_shapes(max_dims=2, max_side=16), elements=st.integers(0, 2**32 - 1)))
def test_round_bf16_matches_an_arithmetic_reference(bits):
    x = bits.view(F32)
    got = run("round_bf16", [x])
    assert got.shape == x.shape and got.dtype == F32
    assert _bits(got) == _bits(_bf16_reference(x))
    # idempotent, and within half a bf16 ulp of the input: at most 2^-8 relative (2^-9 of
    # the significand), or 2^-134 (half the smallest denormal) below the normal range
    assert _bits(run("round_bf16", [got])) == _bits(got)
    finite = np.isfinite(got)
    x64 = x[finite].astype(np.float64)
    assert np.all(np.abs(got[finite] - x64) <= np.maximum(np.abs(x64) * 2.0**-8, 2.0**-134))


@covers("neg", "abs", "sign")
def test_neg_abs_sign():
    i8 = np.array([-128, -5, 0, 7, 127], np.int8)
    check(run("neg", [i8]), np.array([-128, 5, 0, -7, -127], np.int8))  # wraps
    check(run("abs", [i8]), np.array([-128, 5, 0, 7, 127], np.int8))
    check(run("sign", [i8]), np.array([-1, -1, 0, 1, 1], np.int8))
    check(run("abs", [np.array([0, 200], np.uint8)]), np.array([0, 200], np.uint8))
    f = np.array([-3.0, -0.0, 0.0, 2.0, np.nan, -np.inf], F32)
    check(run("neg", [f]), -f)
    check(run("abs", [f]), np.abs(f))
    s = run("sign", [f])
    check(s, np.array([-1, -0.0, 0, 1, np.nan, -1], F32))
    assert np.signbit(s[1]) and not np.signbit(s[2])


@covers("not")
def test_not():
    check(run("not", [np.array([True, False])]), [False, True])
    check(run("not", [np.array([0, 5, -1], np.int32)]), np.array([-1, -6, 0], np.int32))
    check(run("not", [np.array([0, 255], np.uint8)]), np.array([255, 0], np.uint8))


# -- elementwise binary ----------------------------------------------------------------------
@covers("add", "sub", "mul")
def test_add_sub_mul_wrap_i8():
    a = np.array([100, -100, 127, -128], np.int8)
    b = np.array([100, 100, 1, -1], np.int8)
    check(run("add", [a, b]), np.array([-56, 0, -128, 127], np.int8))
    check(run("sub", [a, b]), np.array([0, 56, 126, -127], np.int8))
    check(run("mul", [a, b]), np.array([16, -16, 127, -128], np.int8))
    h = np.array([65504, 1, 0.1], np.float16)
    check(run("add", [h, h]), np.array([np.inf, 2, 0.2], np.float16))
    check(run("mul", [X, X]), X * X)


INT_MIN = np.iinfo(np.int32).min


@covers("div", "rem")
def test_integer_div_rem_edge_cases():
    a = np.array([7, -7, 7, -7, 5, -5, INT_MIN, INT_MIN, 0], np.int32)
    b = np.array([2, 2, -2, -2, 0, 0, -1, 1, 0], np.int32)
    check(run("div", [a, b]), np.array([3, -3, -3, 3, -1, -1, INT_MIN, INT_MIN, -1], np.int32))
    check(run("rem", [a, b]), np.array([1, -1, 1, -1, 5, -5, 0, 0, 0], np.int32))
    a8 = np.array([-128, -128, 100], np.int8)
    b8 = np.array([-1, 3, 0], np.int8)
    check(run("div", [a8, b8]), np.array([-128, -42, -1], np.int8))
    check(run("rem", [a8, b8]), np.array([0, -2, 100], np.int8))
    u = np.array([7, 200, 9], np.uint8)
    v = np.array([2, 0, 4], np.uint8)
    check(run("div", [u, v]), np.array([3, 255, 2], np.uint8))
    check(run("rem", [u, v]), np.array([1, 200, 1], np.uint8))
    big = np.array([np.iinfo(np.int64).min], np.int64)
    check(run("div", [big, np.array([-1], np.int64)]), big)


@covers("div", "rem")
def test_float_div_rem():
    a = np.array([7.5, -7.5, 1.0, -1.0, 0.0, 5.0], F32)
    b = np.array([2.0, 2.0, 0.0, 0.0, 0.0, -3.0], F32)
    check(run("div", [a, b]), np.array([3.75, -3.75, np.inf, -np.inf, np.nan, -5 / 3], F32))
    check(run("rem", [a, b]), np.array([1.5, -1.5, np.nan, np.nan, np.nan, 2.0], F32))  # fmod


@covers("pow")
def test_pow():
    base = np.array([2, -2, 3, 1, -1, -1, 0, 5, 0, 2], np.int32)
    expo = np.array([10, 3, 0, -5, -3, -4, -1, -2, 0, 31], np.int32)
    check(run("pow", [base, expo]), np.array([1024, -8, 1, 1, -1, 1, 0, 0, 1, INT_MIN], np.int32))
    check(run("pow", [np.array([3, 2], np.int8), np.array([5, 7], np.int8)]), np.array([-13, -128], np.int8))
    check(run("pow", [np.array([3], np.uint8), np.array([6], np.uint8)]), np.array([217], np.uint8))
    check(run("pow", [np.array([7], np.int64), np.array([40], np.int64)]),
          np.array([(7 ** 40 + 2 ** 63) % 2 ** 64 - 2 ** 63], np.int64))
    f = np.array([2.0, 4.0, -8.0, 0.0], F32)
    g = np.array([0.5, -1.0, 1 / 3, -1.0], F32)
    with np.errstate(all="ignore"):
        expected = np.power(f, g)
    check(run("pow", [f, g]), expected)


@covers("max", "min")
def test_max_min_propagate_nan():
    a = np.array([1.0, np.nan, 3.0, -np.inf], F32)
    b = np.array([np.nan, 2.0, 2.0, 0.0], F32)
    check(run("max", [a, b]), np.array([np.nan, np.nan, 3.0, 0.0], F32))
    check(run("min", [a, b]), np.array([np.nan, np.nan, 2.0, -np.inf], F32))
    i = np.array([-128, 5], np.int8)
    check(run("max", [i, i[::-1].copy()]), np.array([5, 5], np.int8))


@covers("and", "or", "xor")
def test_logical_and_bitwise():
    p, q = np.array([True, True, False, False]), np.array([True, False, True, False])
    check(run("and", [p, q]), p & q)
    check(run("or", [p, q]), p | q)
    check(run("xor", [p, q]), p ^ q)
    a, b = np.array([12, -1], np.int32), np.array([10, 7], np.int32)
    check(run("and", [a, b]), np.array([8, 7], np.int32))
    check(run("or", [a, b]), np.array([14, -1], np.int32))
    check(run("xor", [a, b]), np.array([6, -8], np.int32))


@covers("atan2")
def test_atan2():
    y = np.array([1.0, -1.0, 0.0, -0.0, 1.0], F32)
    x = np.array([1.0, -1.0, -1.0, -1.0, 0.0], F32)
    check(run("atan2", [y, x]), np.arctan2(y, x))


@covers("compare")
@pytest.mark.parametrize("direction, fn", [("eq", np.equal), ("ne", np.not_equal), ("lt", np.less),
                                           ("le", np.less_equal), ("gt", np.greater), ("ge", np.greater_equal)])
def test_compare(direction, fn):
    a = np.array([1.0, np.nan, 2.0, -0.0], F32)
    b = np.array([1.0, np.nan, 3.0, 0.0], F32)
    check(run("compare", [a, b], {"dir": direction}), fn(a, b))
    i, j = np.array([1, 2, 3], np.int8), np.array([3, 2, 1], np.int8)
    check(run("compare", [i, j], {"dir": direction}), fn(i, j))


@covers("select")
def test_select():
    p = np.array([[True, False], [False, True]])
    a, b = np.array([[1, 2], [3, 4]], np.int16), np.array([[5, 6], [7, 8]], np.int16)
    check(run("select", [p, a, b]), np.array([[1, 6], [7, 4]], np.int16))


# -- convert ---------------------------------------------------------------------------------
@covers("convert")
@pytest.mark.parametrize("src, dst, values, expected", [
    (F32, np.int8, [np.nan, np.inf, -np.inf, 1e10, -1e10, 2.9, -2.9, 127.5, -128.7, -0.5],
     [0, 127, -128, 127, -128, 2, -2, 127, -128, 0]),
    (np.float64, np.int64, [9.3e18, -9.3e18, 2.0 ** 63, -2.0 ** 63, np.nan, 123.99],
     [2**63 - 1, -2**63, 2**63 - 1, -2**63, 0, 123]),
    (F32, np.int32, [2.0 ** 31, -2.0 ** 31, 2147483520.0, np.nan], [2**31 - 1, -2**31, 2147483520, 0]),
    (np.float16, np.uint8, [-3.5, 300.0, 255.9, np.nan, np.inf], [0, 255, 255, 0, 255]),
    (F32, np.bool_, [0.0, -0.0, np.nan, 2.0, -np.inf], [False, False, True, True, True]),
    (np.int32, np.bool_, [0, 1, -7], [False, True, True]),
    (np.bool_, F32, [True, False], [1.0, 0.0]),
    (np.bool_, np.int8, [True, False], [1, 0]),
    (np.int32, np.int8, [300, -129, 127], [44, 127, 127]),
    (np.int32, np.uint8, [-1, 256, 7], [255, 0, 7]),
    (np.float64, np.float16, [1e6, -1e6, 0.1], [np.inf, -np.inf, 0.1]),
    (np.float64, F32, [1e300, 1.0 + 2.0 ** -30], [np.inf, 1.0]),
    (np.int32, F32, [16777217, -16777219], [16777216.0, -16777220.0]),
    (np.int64, np.float16, [100000, 3], [np.inf, 3.0]),
])
def test_convert(src, dst, values, expected):
    x = np.array(values, dtype=src)
    check(run("convert", [x], result_type=tensor(ElemType.from_numpy(dst), len(values))),
          np.array(expected, dtype=dst))


@covers("convert")
def test_convert_rank0():
    out = run("convert", [np.array(-7.9, F32)], result_type=tensor("i32"))
    check(out, np.array(-7, np.int32))


# -- generators ------------------------------------------------------------------------------
def single(name, attrs, result_type, env=None):
    op = Builder(Block()).op(name, [], attrs, [result_type])
    _SEEN.add(name)
    return evaluate_op(op, [], env or {})[0]


@covers("constant")
def test_constant():
    value = np.arange(6, dtype=np.int16).reshape(2, 3)
    check(single("constant", {"value": value}, tensor("i16", 2, 3)), value)
    check(single("constant", {"value": np.array([1.5], F32)}, tensor("f32", 2, 2)), np.full((2, 2), 1.5, F32))
    check(single("constant", {"value": np.array(True)}, tensor("pred")), np.array(True))
    out = single("constant", {"value": value}, tensor("i16", 2, 3))
    out[0, 0] = 99
    assert value[0, 0] == 0  # results never alias the attribute


@covers("iota")
def test_iota():
    check(single("iota", {"dim": 1}, tensor("i32", 2, 3)), np.array([[0, 1, 2], [0, 1, 2]], np.int32))
    check(single("iota", {"dim": 0}, tensor("f32", 3, 2)), np.array([[0, 0], [1, 1], [2, 2]], F32))
    check(single("iota", {"dim": 0}, tensor("i8", 130))[-2:], np.array([-128, -127], np.int8))
    s0 = sym("s0")
    check(single("iota", {"dim": 0}, tensor("i64", s0), {"s0": 4}), np.arange(4))


@covers("dims")
def test_dims():
    s0, s1 = sym("s0"), sym("s1")
    out = single("dims", {"values": [s0, 3, s0 * s1 + 1, (s0 - 1) // 2]}, tensor("i64", 4), {"s0": 7, "s1": 5})
    check(out, np.array([7, 3, 36, 3], np.int64))
    check(single("dims", {"values": [4]}, tensor("i32", 1)), np.array([4], np.int32))
    with pytest.raises(EvaluationError, match="s0"):
        single("dims", {"values": [s0]}, tensor("i32", 1))


# -- shape ops -------------------------------------------------------------------------------
@covers("broadcast")
def test_broadcast():
    check(run("broadcast", [np.array(2.0, F32)], {"dims": []}, tensor("f32", 2, 3)), np.full((2, 3), 2.0, F32))
    v = np.array([1, 2, 3], np.int32)
    check(run("broadcast", [v], {"dims": [0]}, tensor("i32", 3, 2)), np.array([[1, 1], [2, 2], [3, 3]], np.int32))
    check(run("broadcast", [v], {"dims": [1]}, tensor("i32", 2, 3)), np.array([v, v]))
    one = np.array([[5], [6]], np.int8)  # size-1 dim expands
    check(run("broadcast", [one], {"dims": [0, 2]}, tensor("i8", 2, 2, 3)),
          np.broadcast_to(one[:, None, :], (2, 2, 3)))


@covers("reshape", "transpose", "reverse")
def test_reshape_transpose_reverse():
    x = np.arange(24, dtype=F32).reshape(2, 3, 4)
    check(run("reshape", [x], result_type=tensor("f32", 4, 6)), x.reshape(4, 6))
    check(run("reshape", [np.array([7], np.int8)], result_type=tensor("i8")), np.array(7, np.int8))
    check(run("transpose", [x], {"perm": [2, 0, 1]}), x.transpose(2, 0, 1))
    check(run("reverse", [x], {"dims": [0, 2]}), x[::-1, :, ::-1])
    check(run("reverse", [x], {"dims": []}), x)


@covers("slice")
def test_slice():
    x = np.arange(30, dtype=np.int32).reshape(5, 6)
    check(run("slice", [x], {"start": [1, 0], "limit": [5, 6], "stride": [2, 4]}), x[1:5:2, 0:6:4])
    check(run("slice", [x], {"start": [2, 3], "limit": [2, 5]}), x[2:2, 3:5])
    s0 = sym("s0")  # symbolic start/limit: the last s0-1 rows
    f = Function("main", [tensor("i32", s0, 6)])
    b = Builder(f.body)
    b.op("return", [b.value("slice", f.args, {"start": [1, 0], "limit": [s0, 6]})])
    check(run_fn(f, [x]), x[1:])
    check(run_fn(f, [x[:2].copy()]), x[1:2])


@covers("dynamic_slice")
def test_dynamic_slice_clamps():
    x = np.arange(20, dtype=F32).reshape(4, 5)
    i32 = lambda v: np.array(v, np.int32)  # noqa: E731
    check(run("dynamic_slice", [x, i32(1), i32(2)], {"sizes": [2, 3]}), x[1:3, 2:5])
    check(run("dynamic_slice", [x, i32(3), i32(-4)], {"sizes": [2, 3]}), x[2:4, 0:3])
    check(run("dynamic_slice", [x, i32(99), np.array(7, np.int64)], {"sizes": [4, 1]}), x[:, 4:5])


@covers("concatenate")
def test_concatenate():
    a, b = np.ones((2, 2), np.int8), np.zeros((2, 3), np.int8)
    empty = np.zeros((2, 0), np.int8)
    check(run("concatenate", [a, b, empty], {"dim": 1}), np.concatenate([a, b], axis=1))


@covers("pad")
def test_pad_negative_and_interior():
    x = np.array([1, 2, 3], np.int32)
    z = np.array(0, np.int32)
    check(run("pad", [x, z], {"low": [2], "high": [1], "interior": [1]}), np.array([0, 0, 1, 0, 2, 0, 3, 0], np.int32))
    check(run("pad", [x, z], {"low": [-1], "high": [-1], "interior": [2]}), np.array([0, 0, 2, 0, 0], np.int32))
    check(run("pad", [x, z], {"low": [-5], "high": [4]}), np.array([0, 0], np.int32))
    check(run("pad", [x, z], {"low": [-3], "high": [0]}), np.zeros(0, np.int32))
    m = np.arange(4, dtype=F32).reshape(2, 2)
    out = run("pad", [m, np.array(-1, F32)], {"low": [1, -1], "high": [0, 2], "interior": [1, 0]})
    check(out, np.array([[-1, -1, -1], [1, -1, -1], [-1, -1, -1], [3, -1, -1]], F32))
    check(run("pad", [np.zeros((0,), F32), np.array(9, F32)], {"low": [1], "high": [1], "interior": [3]}),
          np.array([9, 9], F32))


# -- indexing --------------------------------------------------------------------------------
@covers("gather")
def test_gather():
    params = np.arange(12, dtype=F32).reshape(3, 4)
    idx = np.array([[2, 0], [1, 1]], np.int32)
    check(run("gather", [params, idx], {"axis": 0}), params[idx])
    check(run("gather", [params, np.array([3, 0], np.int64)], {"axis": 1}), params[:, [3, 0]])
    check(run("gather", [params, np.zeros((0,), np.int32)], {"axis": 0}), np.zeros((0, 4), F32))


@covers("gather")
def test_gather_out_of_range_message():
    params = np.arange(3, dtype=F32)
    with pytest.raises(EvaluationError, match=r"indices\[1\] = 7 is not in \[0, 3\)"):
        run("gather", [params, np.array([0, 7, -1], np.int32)], {"axis": 0})
    with pytest.raises(EvaluationError, match=r"indices\[3\] = -1 is not in \[0, 3\)"):
        run("gather", [params, np.array([[0, 1], [2, -1]], np.int32)], {"axis": 0})


def run_check(x, attrs):
    """Evaluate ``main(x) { check x {attrs}; return x }``."""
    f = Function("main", [type_of(x)])
    b = Builder(f.body)
    b.op("check", [f.args[0]], attrs)
    b.op("return", [f.args[0]])
    return run_fn(f, [x])


@covers("check")
@pytest.mark.parametrize("x, attrs, message", [
    (np.array([3, 0, 5], np.int32), {"kind": "divisor"}, "Integer division by zero"),
    (np.array([3, 0], np.uint8), {"kind": "truncate_divisor"},
     "Unexpected error in binary operator (only integer div and mod should have errors)"),
    (np.array([1, -2], np.int64), {"kind": "exponent"}, "Integers to negative integer powers are not allowed"),
    (np.array([[0, 1], [3, 9]], np.int32), {"kind": "segment_id", "bound": [2]},
     "segment_ids[1,0] = 3 is out of range [0, 2)"),
    (np.array([0, 5, -2, 7], np.int32), {"kind": "label", "bound": [3]},
     "Received a label value of -2 which is outside the valid range of [0, 3).  Label values: 0 5 -2 7"),
    (np.array(-1, np.int32), {"kind": "slice_index", "bound": [3], "axis": 1},
     "slice index -1 of dimension 1 out of bounds."),
    (np.array(4, np.int64), {"kind": "slice_begin", "bound": [3], "size": [0], "axis": 0},
     "Expected begin[0] in [0, 3], but got 4"),
    (np.array(2, np.int32), {"kind": "slice_begin", "bound": [3], "size": [2], "axis": 1},
     "Expected size[1] in [0, 1], but got 2"),
    (np.array(1, np.int32), {"kind": "slice_begin", "bound": [0], "size": [0], "axis": 0},
     "Expected begin[0] == 0 (got 1) and size[0] == 0 (got 0) when input.dim_size(0) == 0"),
    (np.zeros((3, 0), F32), {"kind": "reduction_axis", "axis": 1}, "Reduction axis 1 is empty in shape [3,0]"),
])
def test_check_failures_raise_tf_messages(x, attrs, message):
    with pytest.raises(CheckFailure) as caught:
        run_check(x, attrs)
    assert caught.value.message == message
    assert caught.value.error == ("InternalError" if attrs["kind"] == "truncate_divisor" else "InvalidArgumentError")


@covers("check")
@pytest.mark.parametrize("x, attrs", [
    (np.array([3, -1, 5], np.int32), {"kind": "divisor"}),
    (np.zeros(3, np.int32), {"kind": "divisor", "unless_empty": [4, 0]}),  # no result element needs x
    (np.array([0, 9], np.int8), {"kind": "exponent"}),
    (np.array([-1, 1, -5], np.int64), {"kind": "segment_id", "bound": [2]}),  # negative ids are dropped
    (np.array([0, 2], np.int32), {"kind": "label", "bound": [3]}),
    (np.zeros(0, np.int32), {"kind": "label", "bound": [0]}),
    (np.array(2, np.int32), {"kind": "slice_index", "bound": [3]}),
    (np.array(3, np.int32), {"kind": "slice_begin", "bound": [3], "size": [0]}),
    (np.array(0, np.int32), {"kind": "slice_begin", "bound": [0], "size": [0]}),
    (np.zeros((0, 3), F32), {"kind": "reduction_axis", "axis": 1}),
])
def test_check_passes_and_returns_nothing(x, attrs):
    check(run_check(x, attrs), x)


def run_assert(cond, values, text, summarize=3):
    """Evaluate ``main(cond, values...) { check cond, values... {kind="assert"}; return }``."""
    args = [np.array(cond)] + [np.asarray(v) for v in values]
    f = Function("main", [type_of(a) for a in args])
    b = Builder(f.body)
    b.op("check", list(f.args), {"kind": "assert", "text": text, "summarize": summarize})
    b.op("return", [])
    return run_fn(f, args)


@covers("check")
def test_check_assert_formats_its_values_like_tensorflow():
    text = ["assertion failed: [msg] [", "] [", "]"]
    values = [np.array([[1.5, 2.0], [3.0, 4.0]], F32), np.array([True, False])]
    assert run_assert(True, values, text) == []
    with pytest.raises(CheckFailure) as caught:
        run_assert(False, values, text)
    assert caught.value.message == "assertion failed: [msg] [[1.5 2][3...]...] [1 0]"
    assert caught.value.error == "InvalidArgumentError" and caught.value.code == program_errors.ASSERT
    with pytest.raises(CheckFailure) as caught:
        run_assert(False, values, text, summarize=-1)
    assert caught.value.message == "assertion failed: [msg] [[1.5 2][3 4]] [1 0]"


@covers("scatter_add")
def test_scatter_add():
    operand = np.ones((4, 2), F32)
    idx = np.array([1, 3, 1, 9, -1], np.int32)  # duplicates add up; out-of-range skipped
    updates = np.arange(10, dtype=F32).reshape(5, 2)
    expected = operand.copy()
    np.add.at(expected, idx[:3], updates[:3])
    check(run("scatter_add", [operand, idx, updates], {"axis": 0}), expected)
    o = np.zeros((2, 3), np.int8)
    out = run("scatter_add", [o, np.array([[0, 0]], np.int32), np.full((2, 1, 2), 100, np.int8)], {"axis": 1})
    check(out, np.array([[-56, 0, 0], [-56, 0, 0]], np.int8))


@covers("compact")
def test_compact_lists_nonzero_positions_then_minus_one():
    check(run("compact", [np.array([0.0, 2.0, -0.0, np.nan, 0.0], F32)]), np.array([1, 3, -1, -1, -1], np.int64))
    check(run("compact", [np.zeros(0, np.bool_)]), np.zeros(0, np.int64))


@covers("first_occurrence")
def test_first_occurrence_by_value():
    x = np.array([0.0, -0.0, np.nan, 1.0, np.nan, 1.0], F32)  # -0.0 == 0.0; NaN equals nothing
    check(run("first_occurrence", [x]), np.array([0, 0, 2, 3, 4, 3], np.int64))
    check(run("first_occurrence", [np.array([5, 3, 5, 5], np.int8)]), np.array([0, 1, 0, 0], np.int64))


@covers("scan")
def test_scan_runs_in_order_in_the_element_type():
    x = np.array([[1, 2, 3], [4, 5, 6]], np.int8)
    check(run("scan", [x], {"op": "sum", "dim": 1}), np.array([[1, 3, 6], [4, 9, 15]], np.int8))
    check(run("scan", [x], {"op": "prod", "dim": 0, "exclusive": True}), np.array([[1, 1, 1], [1, 2, 3]], np.int8))
    check(run("scan", [x], {"op": "sum", "dim": 1, "exclusive": True, "reverse": True}),
          np.array([[5, 3, 0], [11, 6, 0]], np.int8))
    check(run("scan", [np.full(3, 100, np.int8)], {"op": "sum", "dim": 0}), np.array([100, -56, 44], np.int8))
    halves = run("scan", [np.array([2048, 1, 1], np.float16)], {"op": "sum", "dim": 0})
    check(halves, np.array([2048, 2048, 2048], np.float16))  # each step rounds: 2049 is not a half


@covers("host_call")
def test_host_call_runs_the_given_host_and_has_no_results():
    module_text = (
        "func @main(%i: i32[], %x: f32[2]) -> (f32[2]) {\n"
        '  host_call %x, %i {ops=["p"], tensors=["x:0", "i:0"]}\n'
        "  return %x\n"
        "}\n")
    from tfc.ir import parser

    module = parser.parse_module(module_text)
    _SEEN.update(op.name for op in module.main.walk())
    seen = []
    out = evaluate(module, [np.array(3, np.int32), np.array([1.0, 2.0], F32)],
                   host=lambda ops, tensors, arrays: seen.append((ops, tensors, [a.tolist() for a in arrays])))
    check(out[0], np.array([1.0, 2.0], F32))
    assert seen == [(["p"], ["x:0", "i:0"], [[1.0, 2.0], 3])]
    assert evaluate(module, [np.array(3, np.int32), np.array([1.0, 2.0], F32)])[0].tolist() == [1.0, 2.0]


# -- reductions ------------------------------------------------------------------------------
@covers("reduce")
def test_reduce_kinds():
    x = np.array([[1.0, 2.0, 3.0], [4.0, np.nan, -1.0]], F32)
    check(run("reduce", [x], {"op": "sum", "dims": [0]}), np.array([5.0, np.nan, 2.0], F32))
    check(run("reduce", [x], {"op": "prod", "dims": [1]}), np.array([6.0, np.nan], F32))
    check(run("reduce", [x], {"op": "max", "dims": [1]}), np.array([3.0, np.nan], F32))
    check(run("reduce", [x], {"op": "min", "dims": [0, 1]}), np.array(np.nan, F32))
    p = np.array([[True, False], [True, True]])
    check(run("reduce", [p], {"op": "and", "dims": [1]}), [False, True])
    check(run("reduce", [p], {"op": "or", "dims": [0]}), [True, True])
    i8 = np.full((3,), 100, np.int8)
    check(run("reduce", [i8], {"op": "sum", "dims": [0]}), np.array(44, np.int8))
    check(run("reduce", [i8], {"op": "prod", "dims": [0]}), np.array(64, np.int8))  # 10^6 mod 256
    check(run("reduce", [x], {"op": "sum", "dims": []}), x)
    h = np.full((4096,), 1.0, np.float16)  # f16 sum accumulates beyond 2048
    check(run("reduce", [h], {"op": "sum", "dims": [0]}), np.array(4096.0, np.float16))


@covers("reduce")
def test_reduce_empty_identities():
    e = np.zeros((0, 3), F32)
    check(run("reduce", [e], {"op": "sum", "dims": [0]}), np.zeros(3, F32))
    check(run("reduce", [e], {"op": "prod", "dims": [0]}), np.ones(3, F32))
    check(run("reduce", [e], {"op": "max", "dims": [0]}), np.full(3, -np.inf, F32))
    check(run("reduce", [e], {"op": "min", "dims": [0]}), np.full(3, np.inf, F32))
    check(run("reduce", [np.zeros((0,), np.int16)], {"op": "max", "dims": [0]}), np.array(-32768, np.int16))
    check(run("reduce", [np.zeros((0,), bool)], {"op": "and", "dims": [0]}), np.array(True))


@covers("argmax", "argmin")
def test_argmax_argmin():
    x = np.array([[1.0, 3.0, 3.0, -1.0], [np.nan, 5.0, np.nan, -9.0], [2.0, 2.0, 2.0, 2.0]], F32)
    check(run("argmax", [x], {"dim": 1}, tensor("i32", 3)), np.array([1, 0, 0], np.int32))
    check(run("argmin", [x], {"dim": 1}, tensor("i64", 3)), np.array([3, 0, 0], np.int64))
    check(run("argmax", [x], {"dim": 0}, tensor("i32", 4)), np.array([1, 1, 1, 2], np.int32))
    i = np.array([[-128, 127, 127]], np.int8)
    check(run("argmin", [i], {"dim": 1}, tensor("i32", 1)), np.array([0], np.int32))
    check(run("argmax", [np.zeros((2, 0), F32)], {"dim": 1}, tensor("i32", 2)), np.zeros(2, np.int32))
    check(run("argmax", [np.zeros((0, 2), F32)], {"dim": 1}, tensor("i32", 0)), np.zeros(0, np.int32))


# -- contractions ----------------------------------------------------------------------------
@covers("dot")
def test_dot():
    a = np.arange(6, dtype=F32).reshape(2, 3)
    b = np.arange(12, dtype=F32).reshape(3, 4)
    check(run("dot", [a, b], {"contract": [[1], [0]]}), a @ b)
    check(run("dot", [b, a], {"contract": [[0], [1]]}), b.T @ a.T)
    v = np.array([1.0, 2.0, 3.0], F32)
    check(run("dot", [v, v], {"contract": [[0], [0]]}), np.array(14.0, F32))
    x = np.arange(24, dtype=np.int32).reshape(2, 3, 4)
    y = np.arange(40, dtype=np.int32).reshape(4, 2, 5)
    check(run("dot", [x, y], {"contract": [[2], [0]], "batch": [[0], [1]]}),
          np.einsum("bmk,kbn->bmn", x, y))
    i8 = np.full((1, 3), 100, np.int8)
    check(run("dot", [i8, i8], {"contract": [[1], [1]]}), np.array([[48]], np.int8))  # 30000 mod 256
    check(run("dot", [np.zeros((2, 0), F32), np.zeros((0, 3), F32)], {"contract": [[1], [0]]}), np.zeros((2, 3), F32))
    outer = run("dot", [v, v], {"contract": [[], []]})
    check(outer, np.outer(v, v))


def conv_reference(x, w, strides, padding, lhs_dil, rhs_dil, groups):
    """A direct loop over output positions: the definition of conv."""
    n, h, wd, c = x.shape
    kh, kw, cg, o = w.shape
    dil = np.zeros((n, (h - 1) * lhs_dil[0] + 1, (wd - 1) * lhs_dil[1] + 1, c), x.dtype)
    dil[:, ::lhs_dil[0], ::lhs_dil[1], :] = x
    xp = np.pad(dil, [(0, 0), tuple(padding[0]), tuple(padding[1]), (0, 0)])
    span = [(kh - 1) * rhs_dil[0] + 1, (kw - 1) * rhs_dil[1] + 1]
    oh = (xp.shape[1] - span[0]) // strides[0] + 1
    ow = (xp.shape[2] - span[1]) // strides[1] + 1
    og = o // groups
    out = np.zeros((n, oh, ow, o), np.float64)
    for i in range(oh):
        for j in range(ow):
            for f in range(o):
                g = f // og
                for a in range(kh):
                    for b in range(kw):
                        pixel = xp[:, i * strides[0] + a * rhs_dil[0], j * strides[1] + b * rhs_dil[1],
                                   g * cg:(g + 1) * cg]
                        out[:, i, j, f] += pixel.astype(np.float64) @ w[a, b, :, f]
    return out.astype(x.dtype)


@covers("conv")
@pytest.mark.parametrize("shape, kernel, strides, padding, lhs_dil, rhs_dil, groups", [
    ((2, 5, 5, 3), (3, 3, 3, 4), [1, 1], [[0, 0], [0, 0]], [1, 1], [1, 1], 1),
    ((1, 6, 7, 2), (3, 2, 2, 3), [2, 3], [[1, 2], [0, 1]], [1, 1], [1, 1], 1),
    ((1, 4, 4, 2), (2, 2, 2, 2), [1, 1], [[1, 1], [1, 1]], [2, 2], [1, 1], 1),  # transposed-conv style
    ((2, 7, 7, 1), (2, 3, 1, 2), [1, 2], [[2, 2], [1, 1]], [1, 1], [2, 3], 1),
    ((1, 5, 5, 4), (3, 3, 1, 4), [1, 1], [[1, 1], [1, 1]], [1, 1], [1, 1], 4),  # depthwise
    ((1, 5, 5, 6), (2, 2, 3, 4), [1, 1], [[0, 0], [0, 0]], [1, 1], [1, 1], 2),
    ((0, 3, 3, 1), (2, 2, 1, 1), [1, 1], [[0, 0], [0, 0]], [1, 1], [1, 1], 1),  # empty batch
])
def test_conv(shape, kernel, strides, padding, lhs_dil, rhs_dil, groups):
    rng = np.random.default_rng(0)
    x = rng.integers(-3, 4, shape).astype(F32)  # small integers: every sum is exact
    w = rng.integers(-3, 4, kernel).astype(F32)
    attrs = {"strides": strides, "padding": padding, "lhs_dilation": lhs_dil, "rhs_dilation": rhs_dil,
             "groups": groups}
    check(run("conv", [x, w], attrs), conv_reference(x, w, strides, padding, lhs_dil, rhs_dil, groups))


def conv_reference_nd(x, w, strides, padding, lhs_dil, rhs_dil, groups):
    """conv_reference over any number of spatial dims (x [N, S..., C], w [K..., Cg, O])."""
    k = x.ndim - 2
    dilated_shape = [x.shape[0]] + [(d - 1) * s + 1 for d, s in zip(x.shape[1:-1], lhs_dil)] + [x.shape[-1]]
    dil = np.zeros(dilated_shape, x.dtype)
    dil[(slice(None),) + tuple(slice(None, None, s) for s in lhs_dil) + (slice(None),)] = x
    xp = np.pad(dil, [(0, 0)] + [tuple(p) for p in padding] + [(0, 0)])
    cg, o = w.shape[-2:]
    spans = [(kk - 1) * r + 1 for kk, r in zip(w.shape[:k], rhs_dil)]
    outs = [(xp.shape[1 + i] - spans[i]) // strides[i] + 1 for i in range(k)]
    og = o // groups
    out = np.zeros([x.shape[0]] + outs + [o], np.float64)
    for pos in np.ndindex(*outs):
        for tap in np.ndindex(*w.shape[:k]):
            where = tuple(p * s + t * r for p, s, t, r in zip(pos, strides, tap, rhs_dil))
            for f in range(o):
                g = f // og
                pixel = xp[(slice(None),) + where + (slice(g * cg, (g + 1) * cg),)]
                out[(slice(None),) + pos + (f,)] += pixel.astype(np.float64) @ w[tap + (slice(None), f)]
    return out.astype(x.dtype)


@covers("conv")
@pytest.mark.parametrize("shape, kernel, strides, padding, lhs_dil, rhs_dil, groups", [
    ((2, 7, 3), (3, 3, 4), [2], [[1, 1]], [1], [1], 1),  # 1-D
    ((1, 5, 2), (2, 1, 4), [1], [[0, 1]], [2], [2], 2),
    ((2, 4, 5, 3, 2), (2, 3, 2, 2, 3), [2, 1, 2], [[1, 0], [1, 1], [0, 1]], [1, 1, 1], [1, 2, 1], 1),  # 3-D
    ((1, 3, 2, 4, 4), (2, 2, 2, 2, 6), [1, 1, 1], [[0, 0], [0, 0], [1, 0]], [2, 1, 2], [1, 1, 1], 2),
])
def test_conv_nd(shape, kernel, strides, padding, lhs_dil, rhs_dil, groups):
    rng = np.random.default_rng(0)
    x = rng.integers(-3, 4, shape).astype(F32)
    w = rng.integers(-3, 4, kernel).astype(F32)
    attrs = {"strides": strides, "padding": padding, "lhs_dilation": lhs_dil, "rhs_dilation": rhs_dil,
             "groups": groups}
    check(run("conv", [x, w], attrs), conv_reference_nd(x, w, strides, padding, lhs_dil, rhs_dil, groups))


@covers("conv")
def test_conv_window_larger_than_input():
    out = run("conv", [np.ones((1, 2, 2, 1), F32), np.ones((3, 3, 1, 1), F32)])
    check(out, np.zeros((1, 0, 0, 1), F32))


@covers("reduce_window")
def test_reduce_window():
    x = np.arange(16, dtype=F32).reshape(4, 4) - 8
    out = run("reduce_window", [x], {"op": "max", "window": [2, 2], "strides": [2, 2]})
    check(out, x.reshape(2, 2, 2, 2).max(axis=(1, 3)))
    out = run("reduce_window", [x], {"op": "max", "window": [3, 3], "strides": [2, 2], "padding": [[1, 1], [1, 1]]})
    padded = np.pad(x, 1, constant_values=-np.inf)
    check(out, np.array([[padded[i:i + 3, j:j + 3].max() for j in (0, 2)] for i in (0, 2)], F32))
    out = run("reduce_window", [x], {"op": "sum", "window": [1, 3], "padding": [[0, 0], [1, 1]]})
    padded = np.pad(x, [(0, 0), (1, 1)])
    check(out, padded[:, :-2] + padded[:, 1:-1] + padded[:, 2:])
    i = np.array([5, -3, 7], np.int8)
    out = run("reduce_window", [i], {"op": "min", "window": [2], "padding": [[0, 1]]})
    check(out, np.array([-3, -3, 7], np.int8))
    out = run("reduce_window", [np.array([-128, -128], np.int8)], {"op": "max", "window": [2], "padding": [[1, 1]]})
    check(out, np.array([-128, -128, -128], np.int8))


@covers("select_and_scatter")
def test_select_and_scatter():
    x = np.array([[1, 5, 5, 2], [3, 0, 6, 6], [7, 7, 1, 0], [0, 7, 2, 2]], F32)
    source = np.array([[10, 20], [30, 40]], F32)
    out = run("select_and_scatter", [x, source], {"window": [2, 2], "strides": [2, 2]})
    expected = np.zeros_like(x)
    expected[0, 1] = 10  # block [[1, 5], [3, 0]]: the 5
    expected[1, 2] = 20  # tie 6, 6: first in row-major order
    expected[2, 0] = 30  # tie 7, 7, 7: (2,0) first
    expected[3, 2] = 40  # tie 2, 2: (3,2) first
    check(out, expected)
    # overlapping windows accumulate; padding never wins even against -inf
    y = np.array([-np.inf, -np.inf, 1.0], F32)
    out = run("select_and_scatter", [y, np.array([1, 2, 4], F32)], {"window": [2], "padding": [[1, 0]]})
    check(out, np.array([1.0 + 2.0, 0.0, 4.0], F32))
    z = np.array([1.0, np.nan, 3.0, np.nan], F32)  # NaN counts as the maximum (first one)
    out = run("select_and_scatter", [z, np.array([5.0], F32)], {"window": [4]})
    check(out, np.array([0.0, 5.0, 0.0, 0.0], F32))
    i = np.array([[3, 9], [9, 1]], np.int16)
    out = run("select_and_scatter", [i, np.array([[2]], np.int16)], {"window": [2, 2]})
    check(out, np.array([[0, 2], [0, 0]], np.int16))


# -- state -----------------------------------------------------------------------------------
@covers("read", "assign")
def test_read_assign_in_place():
    ref = np.array([1.0, 2.0], F32)
    f = Function("main", [RefType(tensor("f32", 2)), tensor("f32", 2)], ["v", "delta"])
    b = Builder(f.body)
    old = b.value("read", [f.args[0]])
    new = b.value("add", [old, f.args[1]])
    b.op("assign", [f.args[0], new])
    after = b.value("read", [f.args[0]])
    b.op("return", [old, after])
    old_value, after_value = run_fn(f, [ref, np.array([10.0, 20.0], F32)])
    check(old_value, np.array([1.0, 2.0], F32))  # a read is a snapshot
    check(after_value, np.array([11.0, 22.0], F32))
    check(ref, np.array([11.0, 22.0], F32))  # updated in place
    after_value[0] = -1
    assert ref[0] == 11.0  # results are fresh
    store = {"v": ref}
    run_fn(f, [None, np.array([1.0, 1.0], F32)], state=store)
    check(ref, np.array([12.0, 23.0], F32))


def rng_function(dist, result_type, seed=(1, 2)):
    f = Function("main", [RefType(tensor("i64"))], ["state"])
    b = Builder(f.body)
    b.op("return", [b.value("rng", f.args, {"dist": dist, "seed": list(seed)}, result_type)])
    return f


@covers("rng")
def test_rng_determinism_and_state():
    f = rng_function("uniform", tensor("f32", 1000))
    s1, s2 = np.array(5, np.int64), np.array(5, np.int64)
    a, b = run_fn(f, [s1]), run_fn(f, [s2])
    check(a, b)
    assert s1 == 6 and s2 == 6
    c = run_fn(f, [s1])
    assert s1 == 7 and not np.array_equal(a, c)
    assert a.min() >= 0 and a.max() < 1
    other_seed = run_fn(rng_function("uniform", tensor("f32", 1000), seed=(1, 3)), [np.array(5, np.int64)])
    assert not np.array_equal(a, other_seed)
    x = np.array(np.iinfo(np.int64).max, np.int64)
    run_fn(f, [x])
    assert x == np.iinfo(np.int64).min  # wraps


# -- structure -------------------------------------------------------------------------------
@covers("fusion")
def test_fusion_region():
    t = tensor("f32", 3)
    region = Block([t, t])
    rb = Builder(region)
    s = rb.value("add", region.args)
    rb.op("yield", [rb.value("max", [s, region.args[0]]), s])
    f = Function("main", [t, t])
    b = Builder(f.body)
    fused = b.op("fusion", f.args, {"kind": "loop"}, [t, t], regions=[region])
    b.op("return", fused.results)
    a, c = np.array([1, -2, 3], F32), np.array([-5, 1, 1], F32)
    m, total = run_fn(f, [a, c])
    check(m, np.maximum(a + c, a))
    check(total, a + c)
    out = evaluate_op(fused, [a, c], {})
    check(out[1], a + c)


@covers("if")
def test_if_runs_the_taken_region_with_the_captured_values():
    t = tensor("f32", 3)
    pred = tensor("pred")
    then, otherwise = Block([t]), Block([t])
    tb = Builder(then)
    tb.op("yield", [tb.value("add", [then.args[0], then.args[0]])])
    Builder(otherwise).op("yield", [Builder(otherwise).value("neg", [otherwise.args[0]])])
    f = Function("main", [pred, t])
    b = Builder(f.body)
    branch = b.op("if", f.args, {}, [t], regions=[then, otherwise])
    b.op("return", branch.results)
    x = np.array([1, -2, 3], F32)
    check(run_fn(f, [np.bool_(True), x]), x + x)
    check(run_fn(f, [np.bool_(False), x]), -x)


@covers("while")
def test_while_carries_its_values_until_the_condition_is_false():
    count, t = tensor("i32"), tensor("f32", 2)
    pred = tensor("pred")
    condition, body = Block([count, t, count]), Block([count, t, count])
    cb = Builder(condition)
    cb.op("yield", [cb.op("compare", [condition.args[0], condition.args[2]], {"dir": "lt"}, [pred]).result])
    bb = Builder(body)
    one = bb.op("constant", [], {"value": np.array(1, np.int32)}, [count]).result
    bb.op("yield", [bb.value("add", [body.args[0], one]), bb.value("mul", [body.args[1], body.args[1]])])
    f = Function("main", [count, t, count])
    b = Builder(f.body)
    loop = b.op("while", f.args, {"carried": 2}, [count, t], regions=[condition, body])
    b.op("return", loop.results)
    x = np.array([1.5, -2.0], F32)
    i, v = run_fn(f, [np.int32(0), x, np.int32(3)])
    assert i == 3
    check(v, x ** 8)
    i, v = run_fn(f, [np.int32(5), x, np.int32(3)])  # false at once: the initial values, copied
    assert i == 5
    check(v, x)


def call_module():
    callee = Function("twice", [tensor("f32", sym("s0"))])
    cb = Builder(callee.body)
    cb.op("return", [cb.value("add", [callee.args[0], callee.args[0]])])
    main = Function("main", [tensor("f32", sym("s0"), 2)])
    b = Builder(main.body)
    flat = b.value("reshape", main.args, result_type=tensor("f32", sym("s0") * 2))
    call = b.op("call", [flat], {"callee": "twice"}, [tensor("f32", sym("s0") * 2)])
    b.op("return", call.results)
    return Module([callee, main]), call


@covers("call")
def test_call():
    module, call = call_module()
    x = np.arange(6, dtype=F32).reshape(3, 2)
    _SEEN.update(op.name for fn in module.functions.values() for op in fn.walk())
    check(evaluate(module, [x])[0], 2 * x.reshape(6))
    with pytest.raises(EvaluationError, match="module"):
        evaluate_op(call, [x.reshape(6)], {"s0": 3})
    check(evaluate_op(call, [x.reshape(6)], {"s0": 3}, module=module)[0], 2 * x.reshape(6))


# -- random shapes and dtypes (hypothesis) ---------------------------------------------------
ALL_DTYPES = [np.float16, F32, np.float64, np.int8, np.int16, np.int32, np.int64, np.uint8]
SHAPES = hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=4)


def draw_pair(data, dtypes=ALL_DTYPES):
    dtype = np.dtype(data.draw(st.sampled_from(dtypes)))
    shape = data.draw(SHAPES)
    return data.draw(hnp.arrays(dtype, shape)), data.draw(hnp.arrays(dtype, shape))


@covers("add", "sub", "mul", "max", "min", "div", "abs", "neg")
@hsettings
@given(data=st.data())
def test_elementwise_random(data):
    x, y = draw_pair(data)
    with np.errstate(all="ignore"):
        cases = [("add", np.add), ("sub", np.subtract), ("mul", np.multiply), ("max", np.maximum),
                 ("min", np.minimum)]
        if x.dtype.kind == "f":
            cases.append(("div", np.divide))
        expected = {name: fn(x, y) for name, fn in cases}
        expected["abs"], expected["neg"] = np.abs(x), np.negative(x)
    for name, want in expected.items():
        if name == "neg" and x.dtype == np.uint8:
            continue
        check(run(name, [x] if name in ("abs", "neg") else [x, y]), want)


@covers("div", "rem")
@hsettings
@given(data=st.data())
def test_integer_div_rem_random(data):
    x, y = draw_pair(data, [np.int8, np.int16, np.int32, np.int64, np.uint8])
    q, r = run("div", [x, y]), run("rem", [x, y])
    for a, b, qq, rr in zip(x.flat, y.flat, q.flat, r.flat):
        a, b = int(a), int(b)
        if b == 0:
            assert rr == a and qq == np.array(-1).astype(x.dtype)
        elif a == np.iinfo(x.dtype).min and b == -1:
            assert qq == a and rr == 0
        else:
            want_q = abs(a) // abs(b) * (1 if (a < 0) == (b < 0) else -1)
            assert (qq, rr) == (want_q, a - want_q * b)


@covers("exp", "tanh", "sqrt", "floor")
@hsettings
@given(data=st.data())
def test_unary_float_random(data):
    dtype = np.dtype(data.draw(st.sampled_from([np.float16, F32, np.float64])))
    x = data.draw(hnp.arrays(dtype, SHAPES))
    compute = F32 if dtype == np.float16 else dtype
    for name, fn in (("exp", np.exp), ("tanh", np.tanh), ("sqrt", np.sqrt), ("floor", np.floor)):
        with np.errstate(all="ignore"):
            want = fn(x.astype(compute)).astype(dtype)
        check(run(name, [x]), want)


@covers("broadcast")
@hsettings
@given(data=st.data())
def test_broadcast_random(data):
    rank = data.draw(st.integers(0, 4))
    result_shape = data.draw(hnp.array_shapes(min_dims=rank, max_dims=rank, min_side=0, max_side=3))
    dims = sorted(data.draw(st.sets(st.integers(0, rank - 1), max_size=rank))) if rank else []
    operand_shape = tuple(data.draw(st.sampled_from([1, result_shape[d]])) for d in dims)
    x = data.draw(hnp.arrays(np.int16, operand_shape))
    out = run("broadcast", [x], {"dims": dims}, tensor("i16", *result_shape))
    expected = np.zeros(result_shape, np.int16)
    for index in np.ndindex(*result_shape):
        expected[index] = x[tuple(0 if n == 1 else index[d] for n, d in zip(operand_shape, dims))]
    check(out, expected)


@covers("reduce")
@hsettings
@given(data=st.data())
def test_reduce_random(data):
    dtype = np.dtype(data.draw(st.sampled_from(ALL_DTYPES)))
    x = data.draw(hnp.arrays(dtype, SHAPES))
    axes = tuple(sorted(data.draw(st.sets(st.integers(0, max(x.ndim - 1, 0)), max_size=x.ndim)))) if x.ndim else ()
    compute = F32 if dtype == np.float16 else dtype
    with np.errstate(all="ignore"):
        lo = -np.inf if dtype.kind == "f" else np.iinfo(dtype).min
        hi = np.inf if dtype.kind == "f" else np.iinfo(dtype).max
        expected = {"sum": np.sum(x, axis=axes, dtype=compute).astype(dtype),
                    "max": np.max(x, axis=axes, initial=lo), "min": np.min(x, axis=axes, initial=hi)}
    if dtype.kind in "iu":  # integer sums are exact modulo 2^bits
        big = np.sum(x.astype(object), axis=axes) if x.size else np.zeros(np.sum(x, axis=axes).shape, object)
        assert np.array_equal(np.asarray(big % 2 ** (8 * dtype.itemsize)).astype(np.uint64).astype(dtype),
                              expected["sum"])
    for kind, want in expected.items():
        check(run("reduce", [x], {"op": kind, "dims": list(axes)}), np.asarray(want))


@covers("transpose")
@hsettings
@given(data=st.data())
def test_transpose_random(data):
    x = data.draw(hnp.arrays(np.dtype(data.draw(st.sampled_from(ALL_DTYPES))), SHAPES))
    perm = data.draw(st.permutations(range(x.ndim)))
    check(run("transpose", [x], {"perm": list(perm)}), np.transpose(x, perm))


@covers("slice")
@hsettings
@given(data=st.data())
def test_slice_random(data):
    x = data.draw(hnp.arrays(np.int32, SHAPES))
    start, limit, stride = [], [], []
    for n in x.shape:
        a = data.draw(st.integers(0, n))
        start.append(a)
        limit.append(data.draw(st.integers(a, n)))
        stride.append(data.draw(st.integers(1, 3)))
    out = run("slice", [x], {"start": start, "limit": limit, "stride": stride})
    check(out, x[tuple(slice(a, b, k) for a, b, k in zip(start, limit, stride))])


@covers("pad")
@hsettings
@given(data=st.data())
def test_pad_random(data):
    x = data.draw(hnp.arrays(np.int8, hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4)))
    interior = [data.draw(st.integers(0, 2)) for _ in x.shape]
    inner = [n + max(n - 1, 0) * k for n, k in zip(x.shape, interior)]
    low = [data.draw(st.integers(-m, 3)) for m in inner]
    high = [data.draw(st.integers(-(m + lo) if m + lo > 0 else 0, 3)) for m, lo in zip(inner, low)]
    out = run("pad", [x, np.array(-1, np.int8)], {"low": low, "high": high, "interior": interior})
    expected = np.full([m + lo + hi for m, lo, hi in zip(inner, low, high)], -1, np.int8)
    for index in np.ndindex(*expected.shape):  # result i comes from padded position i - low
        pos = [i - lo for i, lo in zip(index, low)]
        if all(0 <= p < m and p % (k + 1) == 0 for p, m, k in zip(pos, inner, interior)):
            expected[index] = x[tuple(p // (k + 1) for p, k in zip(pos, interior))]
    check(out, expected)


@covers("dot")
@hsettings
@given(data=st.data())
def test_dot_random(data):
    dtype = np.dtype(data.draw(st.sampled_from([np.int8, np.int32, np.int64, np.uint8])))
    b, m, k, n = (data.draw(st.integers(0, 4)) for _ in range(4))
    x = data.draw(hnp.arrays(dtype, (b, m, k)))
    y = data.draw(hnp.arrays(dtype, (k, b, n)))
    out = run("dot", [x, y], {"contract": [[2], [0]], "batch": [[0], [1]]})
    exact = np.einsum("bmk,kbn->bmn", x.astype(object), y.astype(object)) if x.size and y.size else \
        np.zeros((b, m, n), object)
    modulus = 2 ** (8 * dtype.itemsize)
    want = np.vectorize(lambda v: int(v) % modulus, otypes=[object])(exact).astype(np.uint64).astype(dtype) \
        if exact.size else np.zeros((b, m, n), dtype)
    check(out, want)
    f = data.draw(hnp.arrays(np.float64, (m, k), elements=st.floats(-10, 10)))
    g = data.draw(hnp.arrays(np.float64, (k, n), elements=st.floats(-10, 10)))
    got = run("dot", [f, g], {"contract": [[1], [0]]})
    assert got.dtype == np.float64 and got.shape == (m, n)
    np.testing.assert_allclose(got, f @ g, rtol=1e-12, atol=1e-9)


# -- symbols, empty and rank-0 tensors -------------------------------------------------------
def symbolic_function():
    s0 = sym("s0")
    f = Function("main", [tensor("f32", s0, 3)], ["x"])
    b = Builder(f.body)
    x = f.args[0]
    bias = b.value("constant", [], {"value": np.array([1, 2, 3], F32)}, tensor("f32", 3))
    wide = b.value("broadcast", [bias], {"dims": [1]}, tensor("f32", s0, 3))
    total = b.value("reduce", [b.value("add", [x, wide])], {"op": "sum", "dims": [1]})
    flat = b.value("reshape", [x], result_type=tensor("f32", 3 * s0))
    size = b.value("dims", [], {"values": [s0, 3 * s0]}, tensor("i32", 2))
    b.op("return", [total, flat, size])
    return f


@covers("broadcast", "reduce", "reshape", "dims", "constant", "add")
@pytest.mark.parametrize("batch", [2, 5, 0])
def test_symbolic_batch(batch):
    x = np.arange(batch * 3, dtype=F32).reshape(batch, 3)
    total, flat, size = run_fn(symbolic_function(), [x])
    check(total, (x + np.array([1, 2, 3], F32)).sum(axis=1))
    check(flat, x.reshape(-1))
    check(size, np.array([batch, 3 * batch], np.int32))


@covers("exp", "transpose", "concatenate", "dot", "reduce", "pad", "reverse")
def test_empty_tensors():
    e = np.zeros((0, 3), F32)
    check(run("exp", [e]), e)
    check(run("transpose", [e], {"perm": [1, 0]}), np.zeros((3, 0), F32))
    check(run("concatenate", [e, np.ones((2, 3), F32)], {"dim": 0}), np.ones((2, 3), F32))
    check(run("dot", [e, np.ones((3, 4), F32)], {"contract": [[1], [0]]}), np.zeros((0, 4), F32))
    check(run("reduce", [e], {"op": "sum", "dims": [1]}), np.zeros(0, F32))
    check(run("pad", [e, np.array(1, F32)], {"low": [1, 0], "high": [0, 0]}), np.ones((1, 3), F32))
    check(run("reverse", [e], {"dims": [0]}), e)


@covers("add", "compare", "select", "reduce", "broadcast")
def test_rank0():
    a, b = np.array(3, np.int32), np.array(-4, np.int32)
    check(run("add", [a, b]), np.array(-1, np.int32))
    check(run("compare", [a, b], {"dir": "gt"}), np.array(True))
    check(run("select", [np.array(False), a, b]), b)
    check(run("reduce", [a], {"op": "max", "dims": []}), a)
    check(run("broadcast", [a], {"dims": []}, tensor("i32")), a)


# -- arguments, results and evaluate_op ------------------------------------------------------
@pytest.mark.parametrize("value, message", [
    (np.zeros((2, 3), np.float64), r"argument 0 \(%x\).*f32\[s0,3\].*float64"),
    (np.zeros((2, 4), F32), r"argument 0 \(%x\)"),
    (np.zeros((2, 3, 1), F32), r"argument 0 \(%x\)"),
    ([[1.0, 2.0, 3.0]], r"argument 0 \(%x\).*numpy array"),
])
def test_bad_argument(value, message):
    with pytest.raises(EvaluationError, match=message):
        evaluate(symbolic_function(), [value])


def test_argument_symbol_mismatch_and_count():
    s0 = sym("s0")
    f = Function("main", [tensor("f32", s0), tensor("f32", s0), tensor("f32", s0 + 1)], ["a", "b", "c"])
    b = Builder(f.body)
    b.op("return", [f.args[0]])
    ok = [np.zeros(2, F32), np.zeros(2, F32), np.zeros(3, F32)]
    check(evaluate(f, ok)[0], np.zeros(2, F32))
    with pytest.raises(EvaluationError, match=r"argument 1 \(%b\).*s0"):
        evaluate(f, [np.zeros(2, F32), np.zeros(3, F32), np.zeros(3, F32)])
    with pytest.raises(EvaluationError, match=r"argument 2 \(%c\)"):
        evaluate(f, [np.zeros(2, F32), np.zeros(2, F32), np.zeros(2, F32)])
    with pytest.raises(EvaluationError, match="3 arguments"):
        evaluate(f, ok[:2])
    with pytest.raises(EvaluationError, match=r"argument 0 \(%a\).*numpy array"):
        evaluate(Module([f]), [None, None, None])
    assert issubclass(EvaluationError, ValueError)


def test_results_are_fresh():
    f = Function("main", [tensor("f32", 2), RefType(tensor("f32", 2))])
    b = Builder(f.body)
    b.op("return", [f.args[0], f.args[0], b.value("read", [f.args[1]])])
    x, ref = np.ones(2, F32), np.zeros(2, F32)
    a, c, r = evaluate(f, [x, ref])
    assert not np.may_share_memory(a, x) and not np.may_share_memory(a, c) and not np.may_share_memory(r, ref)


def test_evaluate_op_for_constant_folding():
    b = Builder(Block())
    x = b.value("constant", [], {"value": np.arange(6, dtype=F32)}, tensor("f32", 6))
    op = b.op("reshape", [x], result_types=[tensor("f32", 2, 3)])
    value = np.arange(6, dtype=F32)
    out = evaluate_op(op, [value], {})[0]
    check(out, value.reshape(2, 3))
    assert not np.may_share_memory(out, value)
    s0 = sym("s0")
    sliced = b.op("slice", [b.value("iota", [], {"dim": 0}, tensor("i32", s0))], {"start": [1], "limit": [s0]})
    check(evaluate_op(sliced, [np.arange(4, dtype=np.int32)], {"s0": 4})[0], np.arange(1, 4, dtype=np.int32))
    with pytest.raises(EvaluationError, match="s0"):
        evaluate_op(sliced, [np.arange(4, dtype=np.int32)], {})
