"""Lowerings of the math ops (tfc/frontend/ops/math_ops.py), run for real: graphs go through
``tf.Session`` (lowering, passes, LLVM) and are compared with numpy references that
follow TF 1.15's kernels. Placeholders have an unknown batch dim; each graph runs at two
batch sizes in one session and must compile once.

Many ops share one graph (one JIT compile) to keep the file fast.
"""
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tfc.compat.v1 as tf
from tfc.frontend.op_helper import apply_op
from tfc.passes.lower import UnsupportedOpsError

F32_TOL = dict(rtol=2e-6, atol=1e-6)


def op(op_type, *inputs, **attrs):
    """One TF op, created the way TF's generated wrappers create it."""
    return apply_op(op_type, list(inputs), attrs).outputs[0]


def run_batches(fetches: dict, make_feeds, check, sizes=(3, 5)):
    """Run ``fetches`` at each batch size in one session; ``check(feeds, results)``; one compile."""
    with tf.Session() as sess:
        for n in sizes:
            feeds = make_feeds(n)
            results = sess.run(fetches, feeds)
            check(feeds, results)
        stats = sess.cache_stats()
    assert stats["compiles"] == 1, stats


def assert_close(actual, expected, name, **tol):
    expected = np.asarray(expected)
    assert actual.shape == expected.shape, (name, actual.shape, expected.shape)
    assert actual.dtype == expected.dtype, (name, actual.dtype, expected.dtype)
    if expected.dtype.kind in "biu":
        np.testing.assert_array_equal(actual, expected, err_msg=name)
    else:
        np.testing.assert_allclose(actual, expected, equal_nan=True, err_msg=name, **(tol or F32_TOL))


@pytest.fixture(autouse=True)
def fresh_graph():
    with tf.Graph().as_default() as g:
        yield g


# -- integer references with the core's conventions (x / 0 = -1, rem(x, 0) = x) --------------
def _wrap(values, dtype):
    bits = np.iinfo(dtype).bits
    out = [((int(v) + 2 ** (bits - 1)) % 2 ** bits) - 2 ** (bits - 1) for v in np.ravel(values)]
    return np.array(out, dtype=dtype).reshape(np.shape(values))


def _pairwise(fn, x, y, dtype):
    x, y = np.broadcast_arrays(x, y)
    return _wrap(np.array([fn(int(a), int(b)) for a, b in zip(x.ravel(), y.ravel())], dtype=object)
                 .reshape(x.shape), dtype)


def trunc_div(a, b):
    if b == 0:
        return -1
    q = abs(a) // abs(b)
    return -q if (a < 0) != (b < 0) else q


def trunc_mod(a, b):
    return a if b == 0 else a - trunc_div(a, b) * b


def floor_div(a, b):
    return -1 if b == 0 else a // b


def floor_mod(a, b):
    return a if b == 0 else a % b


def int_pow(a, b):
    if b < 0:
        return 1 if a == 1 else (-1 if b % 2 else 1) if a == -1 else 0
    return a ** b


def tf_sign(x):
    """TF (2.x kernels, what tf.compat.v1 runs): -1, 0 (for both zeros) or 1; NaN stays NaN."""
    return np.where(np.isnan(x), x, (x > 0).astype(x.dtype) - (x < 0).astype(x.dtype)).astype(x.dtype)


def tf_float_floormod(x, y):
    """TF's google_floor_fmod."""
    trunc = np.fmod(x, y)
    return np.where((x < 0) == (y < 0), trunc, np.fmod(trunc + y, y)).astype(x.dtype)


# -- elementwise: floats ------------------------------------------------------------------------
_SPECIAL = [0.0, -0.0, 0.5, -0.5, 1.5, 2.5, -2.5, 3.0, -1.25, 0.75, np.inf, -np.inf, np.nan, 7.3]

_FLOAT_UNARY = {
    "Neg": np.negative, "Abs": np.abs, "Sign": tf_sign, "Square": np.square, "Sqrt": np.sqrt,
    "Rsqrt": lambda x: (1 / np.sqrt(x)).astype(x.dtype), "Exp": np.exp, "Expm1": np.expm1, "Log": np.log,
    "Log1p": np.log1p, "Sin": np.sin, "Cos": np.cos, "Tan": np.tan, "Tanh": np.tanh,
    "Sigmoid": lambda x: (1 / (1 + np.exp(-x))).astype(x.dtype), "Reciprocal": lambda x: (1 / x).astype(x.dtype),
    "Floor": np.floor, "Ceil": np.ceil, "Round": np.round, "Rint": np.rint,
    "Erf": lambda x: np.vectorize(math.erf, otypes=[x.dtype])(x),
    "IsNan": np.isnan, "IsInf": np.isinf, "IsFinite": np.isfinite,
}
# sin/cos/tan/erf come from libm or LLVM intrinsics: a few ulps from numpy's.
_LOOSE = {"Tan": dict(rtol=2e-5, atol=1e-6), "Sin": dict(rtol=1e-5, atol=1e-6), "Cos": dict(rtol=1e-5, atol=1e-6)}


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_float_unary_ops(dtype):
    tf_dtype = tf.as_dtype(dtype)
    x = tf.placeholder(tf_dtype, [None, len(_SPECIAL) + 4], name="x")
    fetches = {name: op(name, x) for name in _FLOAT_UNARY}

    def feeds(n):
        rng = np.random.default_rng(n)
        rows = [np.concatenate([_SPECIAL, rng.uniform(-4, 4, 4)]) for _ in range(n)]
        return {x: np.array(rows, dtype=dtype)}

    def check(fed, out):
        value = fed[x]
        with np.errstate(all="ignore"):
            for name, ref in _FLOAT_UNARY.items():
                assert_close(out[name], ref(value), name, **_LOOSE.get(name, {}))

    run_batches(fetches, feeds, check)


def test_sign_of_nan_is_nan_and_of_minus_zero_is_zero():
    x = tf.placeholder(tf.float32, [None])
    with tf.Session() as sess:
        out = sess.run(tf.sign(x), {x: [np.nan, -np.nan, -3.0, 0.0, -0.0, 2.0]})
    np.testing.assert_array_equal(out, [np.nan, np.nan, -1, 0, 0, 1])
    assert not np.signbit(out[4])  # TF: sign(-0.0) is +0.0


def test_float16_unary_binary_and_mean():
    x = tf.placeholder(tf.float16, [None, 4])
    y = tf.placeholder(tf.float16, [4])
    fetches = {"exp": tf.exp(x), "sigmoid": tf.sigmoid(x), "add": x + y, "mul": x * y, "round": tf.round(x),
               "mean": tf.reduce_mean(x, 0)}

    def feeds(n):
        return {x: np.linspace(-2, 2, 4 * n).reshape(n, 4).astype(np.float16),
                y: np.array([0.5, -1, 2, 3], np.float16)}

    def check(fed, out):
        a, b = fed[x], fed[y]
        tol = dict(rtol=2e-3, atol=1e-3)
        assert_close(out["exp"], np.exp(a), "exp", **tol)
        assert_close(out["sigmoid"], (1 / (1 + np.exp(-a.astype(np.float32)))).astype(np.float16), "sigmoid", **tol)
        assert_close(out["add"], a + b, "add", **tol)
        assert_close(out["mul"], a * b, "mul", **tol)
        assert_close(out["round"], np.round(a), "round", **tol)
        assert_close(out["mean"], a.astype(np.float32).mean(0).astype(np.float16), "mean", **tol)

    run_batches(fetches, feeds, check)


_FLOAT_BINARY = {
    "Add": np.add, "AddV2": np.add, "Sub": np.subtract, "Mul": np.multiply, "RealDiv": np.divide,
    "Div": np.divide, "FloorDiv": lambda a, b: np.floor(a / b), "FloorMod": tf_float_floormod,
    "TruncateDiv": lambda a, b: np.trunc(a / b), "TruncateMod": np.fmod, "Pow": np.power,
    "Maximum": np.maximum, "Minimum": np.minimum, "SquaredDifference": lambda a, b: (a - b) * (a - b),
    "Less": np.less, "LessEqual": np.less_equal, "Greater": np.greater, "GreaterEqual": np.greater_equal,
    "Equal": np.equal, "NotEqual": np.not_equal,
}


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_float_binary_ops_broadcast(dtype):
    """[?, 8] (op) [8]; the y row holds negative, zero and fractional divisors."""
    tf_dtype = tf.as_dtype(dtype)
    x = tf.placeholder(tf_dtype, [None, 8], name="x")
    y = tf.placeholder(tf_dtype, [8], name="y")
    fetches = {name: op(name, x, y) for name in _FLOAT_BINARY}
    fetches["Atan2"] = tf.atan2(x, y)
    y_value = np.array([3.0, -3.0, 0.5, -0.75, 2.0, 0.0, 1.0, -7.25], dtype)

    def feeds(n):
        rng = np.random.default_rng(10 + n)
        a = rng.uniform(-10, 10, (n, 8)).astype(dtype)
        a[0, :4] = [-6.0, 6.0, -3.0, 0.0]  # exact multiples: floor/mod edge cases
        return {x: a, y: y_value}

    def check(fed, out):
        a, b = fed[x], fed[y]
        with np.errstate(all="ignore"):
            for name, ref in _FLOAT_BINARY.items():
                assert_close(out[name], np.asarray(ref(a, b)).astype(out[name].dtype), name)
            assert_close(out["Atan2"], np.arctan2(a, b), "Atan2")

    run_batches(fetches, feeds, check)


def test_float_floormod_sign_rule():
    """The result takes the divisor's sign: TF's fmod-based floor mod."""
    x = tf.placeholder(tf.float32, [None])
    y = tf.placeholder(tf.float32, [None])
    with tf.Session() as sess:
        a = np.array([-7.5, 7.5, -7.5, 7.5, -6.0, 6.0, -0.0, 1e-8], np.float32)
        b = np.array([2.0, -2.0, -2.0, 2.0, 3.0, -3.0, 5.0, -1.0], np.float32)
        out = sess.run([tf.floormod(x, y), tf.floor_div(x, y)], {x: a, y: b})
    np.testing.assert_array_equal(out[0], tf_float_floormod(a, b))
    np.testing.assert_array_equal(out[0][:4], [0.5, -0.5, -1.5, 1.5])
    np.testing.assert_array_equal(out[1][:6], [-4, -4, 3, 3, -2, -2])


# -- elementwise: integers ------------------------------------------------------------------------
_INT_BINARY = {
    "Add": lambda a, b: a + b, "Sub": lambda a, b: a - b, "Mul": lambda a, b: a * b,
    "Div": trunc_div, "TruncateDiv": trunc_div, "TruncateMod": trunc_mod, "FloorDiv": floor_div,
    "FloorMod": floor_mod, "Maximum": max, "Minimum": min, "SquaredDifference": lambda a, b: (a - b) * (a - b),
}
_INT_COMPARE = {"Less": np.less, "LessEqual": np.less_equal, "Greater": np.greater,
                "GreaterEqual": np.greater_equal, "Equal": np.equal, "NotEqual": np.not_equal}


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_integer_binary_ops_all_pairs(dtype):
    """x[?, 1] (op) y[k]: every pair of edge values, negatives, INT_MIN / -1 (a zero divisor
    raises: tests/frontend/test_integer_semantics.py)."""
    info = np.iinfo(dtype)
    values = np.array([info.min, -7, -3, -2, -1, 0, 1, 2, 3, 7, info.max], dtype)
    divisors = values[values != 0]
    tf_dtype = tf.as_dtype(dtype)
    x = tf.placeholder(tf_dtype, [None, 1], name="x")
    y = tf.placeholder(tf_dtype, [len(divisors)], name="y")
    fetches = {name: op(name, x, y) for name in list(_INT_BINARY) + list(_INT_COMPARE)}

    def feeds(n):
        rows = values if n == len(values) else np.resize(values[::-1], n)
        return {x: rows.reshape(-1, 1).astype(dtype), y: divisors}

    def check(fed, out):
        a, b = fed[x], fed[y]
        for name, ref in _INT_BINARY.items():
            assert_close(out[name], _pairwise(ref, a, b, dtype), name)
        for name, ref in _INT_COMPARE.items():
            assert_close(out[name], ref(a, b), name)

    run_batches(fetches, feeds, check, sizes=(len(values), 4))


def test_integer_floor_division_examples():
    """The classic cases, spelled out: floor toward -inf, the remainder follows the divisor."""
    x = tf.placeholder(tf.int32, [None])
    y = tf.placeholder(tf.int32, [None])
    with tf.Session() as sess:
        div, mod, tdiv, tmod = sess.run([x // y, x % y, tf.truncatediv(x, y), tf.truncatemod(x, y)],
                                        {x: [7, -7, 7, -7, 0], y: [2, 2, -2, -2, 3]})
    np.testing.assert_array_equal(div, [3, -4, -4, 3, 0])
    np.testing.assert_array_equal(mod, [1, 1, -1, -1, 0])
    np.testing.assert_array_equal(tdiv, [3, -3, -3, 3, 0])
    np.testing.assert_array_equal(tmod, [1, -1, 1, -1, 0])


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_integer_unary_and_pow(dtype):
    tf_dtype = tf.as_dtype(dtype)
    info = np.iinfo(dtype)
    x = tf.placeholder(tf_dtype, [None, 1], name="x")
    nonzero = tf.placeholder(tf_dtype, [None, 1], name="nonzero")
    e = tf.placeholder(tf_dtype, [7], name="e")
    fetches = {"Neg": tf.negative(x), "Abs": tf.abs(x), "Sign": tf.sign(x), "Square": tf.square(x),
               "Reciprocal": tf.reciprocal(nonzero), "Round": op("Round", x), "Pow": tf.pow(x, e)}
    exponents = np.array([0, 1, 2, 3, 5, 7, 9], dtype)  # negative ones raise (test_integer_semantics.py)

    def feeds(n):
        base = np.array([-3, -2, -1, 0, 1, 2, 3, 5, info.max, info.min + 1], dtype)
        column = np.resize(base, n).reshape(-1, 1)
        return {x: column, nonzero: np.where(column == 0, 7, column), e: exponents}

    def check(fed, out):
        a = fed[x]
        assert_close(out["Neg"], -a, "Neg")
        assert_close(out["Abs"], np.abs(a), "Abs")
        assert_close(out["Sign"], np.sign(a), "Sign")
        assert_close(out["Square"], _pairwise(lambda p, q: p * q, a, a, dtype), "Square")
        assert_close(out["Reciprocal"], _pairwise(trunc_div, 1, fed[nonzero], dtype), "Reciprocal")
        assert_close(out["Round"], a, "Round")
        assert_close(out["Pow"], _pairwise(int_pow, a, fed[e], dtype), "Pow")

    run_batches(fetches, feeds, check, sizes=(10, 4))


def test_integer_division_property():
    """Random int32 pairs through one compiled graph (hypothesis feeds, no recompiles)."""
    x = tf.placeholder(tf.int32, [None])
    y = tf.placeholder(tf.int32, [None])
    fetches = [x // y, x % y, tf.truncatediv(x, y), tf.truncatemod(x, y)]
    ints = st.integers(-(2 ** 31), 2 ** 31 - 1) | st.integers(-20, 20)
    with tf.Session() as sess:
        @settings(max_examples=60, deadline=None)
        @given(st.lists(st.tuples(ints, ints.filter(lambda v: v != 0)), min_size=2, max_size=12))
        def check(pairs):
            a = np.array([p[0] for p in pairs], np.int32)
            b = np.array([p[1] for p in pairs], np.int32)
            out = sess.run(fetches, {x: a, y: b})
            for result, ref in zip(out, (floor_div, floor_mod, trunc_div, trunc_mod)):
                np.testing.assert_array_equal(result, _pairwise(ref, a, b, np.int32))

        check()
        assert sess.cache_stats()["compiles"] == 1


def test_uint8_floor_division():
    x = tf.placeholder(tf.uint8, [None])
    y = tf.placeholder(tf.uint8, [None])
    with tf.Session() as sess:
        a = np.array([7, 200, 255, 9], np.uint8)
        b = np.array([2, 7, 16, 3], np.uint8)
        div, tdiv = sess.run([op("FloorDiv", x, y), op("TruncateDiv", x, y)], {x: a, y: b})
        with pytest.raises(tf.errors.InvalidArgumentError, match="Integer division by zero"):
            sess.run(op("Div", x, x * 0), {x: a})
    np.testing.assert_array_equal(div, a // b)
    np.testing.assert_array_equal(tdiv, a // b)


def test_logical_ops_and_bool_equality():
    a = tf.placeholder(tf.bool, [None, 4])
    b = tf.placeholder(tf.bool, [4])
    fetches = {"and": tf.logical_and(a, b), "or": tf.logical_or(a, b), "not": tf.logical_not(a),
               "xor": tf.logical_xor(a, b), "eq": tf.equal(a, b), "ne": tf.not_equal(a, b)}

    def feeds(n):
        rng = np.random.default_rng(n)
        return {a: rng.integers(0, 2, (n, 4)).astype(bool), b: np.array([True, False, True, False])}

    def check(fed, out):
        p, q = fed[a], fed[b]
        refs = {"and": p & q, "or": p | q, "not": ~p, "xor": p ^ q, "eq": p == q, "ne": p != q}
        for name, ref in refs.items():
            assert_close(out[name], ref, name)

    run_batches(fetches, feeds, check)


def test_equal_with_incompatible_shapes_and_no_error():
    x = tf.placeholder(tf.int32, [None, 3])
    y = tf.placeholder(tf.int32, [2])
    eq = op("Equal", x, y, incompatible_shape_error=False)
    ne = op("NotEqual", x, y, incompatible_shape_error=False)
    with tf.Session() as sess:
        out = sess.run([eq, ne], {x: np.zeros((2, 3), np.int32), y: [0, 0]})
    assert out[0].shape == () and not out[0] and out[1]


# -- Cast ------------------------------------------------------------------------------------------
def test_cast():
    f = tf.placeholder(tf.float32, [None, 6])
    i = tf.placeholder(tf.int64, [None, 6])
    b = tf.placeholder(tf.bool, [None, 6])
    fetches = {
        "f2i": tf.cast(f, tf.int32), "f2i64": tf.cast(f, tf.int64), "f2b": tf.cast(f, tf.bool),
        "f2d": tf.cast(f, tf.float64), "f2h": tf.cast(f, tf.float16), "f2u8": tf.cast(tf.abs(f), tf.uint8),
        "i2f": tf.cast(i, tf.float32), "i2i32": tf.cast(i, tf.int32), "i2b": tf.cast(i, tf.bool),
        "b2f": tf.cast(b, tf.float32), "b2i": tf.cast(b, tf.int32), "trunc": op("Cast", f, DstT=tf.int32, Truncate=True),
    }

    def feeds(n):
        rng = np.random.default_rng(n)
        fv = rng.uniform(-100, 100, (n, 6)).astype(np.float32)
        fv[0] = [-2.7, 2.7, -0.5, 0.0, np.nan, 1e-3]
        iv = rng.integers(-2 ** 40, 2 ** 40, (n, 6))
        iv[0, :3] = [0, 2 ** 32 + 5, -(2 ** 31) - 1]
        return {f: fv, i: iv, b: rng.integers(0, 2, (n, 6)).astype(bool)}

    def check(fed, out):
        fv, iv, bv = fed[f], fed[i], fed[b]
        finite = np.nan_to_num(fv)  # NaN -> 0 (convert's rule; TF's is undefined)
        assert_close(out["f2i"], np.trunc(finite).astype(np.int32), "f2i")
        assert_close(out["trunc"], np.trunc(finite).astype(np.int32), "trunc")
        assert_close(out["f2i64"], np.trunc(finite).astype(np.int64), "f2i64")
        assert_close(out["f2b"], fv != 0, "f2b")
        assert_close(out["f2d"], fv.astype(np.float64), "f2d")
        assert_close(out["f2h"], fv.astype(np.float16), "f2h")
        assert_close(out["f2u8"], np.trunc(np.abs(finite)).astype(np.uint8), "f2u8")
        assert_close(out["i2f"], iv.astype(np.float32), "i2f")
        assert_close(out["i2i32"], iv.astype(np.int32), "i2i32")
        assert_close(out["i2b"], iv != 0, "i2b")
        assert_close(out["b2f"], bv.astype(np.float32), "b2f")
        assert_close(out["b2i"], bv.astype(np.int32), "b2i")

    run_batches(fetches, feeds, check)


# -- reductions ----------------------------------------------------------------------------------
_REDUCE_AXES = [None, 0, 1, -1, (1, 2), (0, -1), (-3, -2, -1), (), (2, 0)]


@pytest.mark.parametrize("keepdims", [False, True])
def test_float_reductions(keepdims):
    x = tf.placeholder(tf.float32, [None, 4, 5], name="x")
    fns = {"sum": (tf.reduce_sum, np.sum), "mean": (tf.reduce_mean, np.mean), "prod": (tf.reduce_prod, np.prod),
           "max": (tf.reduce_max, np.max), "min": (tf.reduce_min, np.min)}
    fetches = {(name, str(axis)): fn(x, axis=list(axis) if isinstance(axis, tuple) else axis, keepdims=keepdims)
               for name, (fn, _) in fns.items() for axis in _REDUCE_AXES}

    def feeds(n):
        return {x: np.random.default_rng(n).uniform(0.5, 1.5, (n, 4, 5)).astype(np.float32)}

    def check(fed, out):
        value = fed[x]
        for (name, axis_text), result in out.items():
            axis = eval(axis_text)  # noqa: S307 - our own repr
            axis = tuple(a % 3 for a in (axis if isinstance(axis, tuple) else (axis,))) if axis is not None else None
            ref = fns[name][1](value, axis=axis, keepdims=keepdims).astype(np.float32)
            assert_close(result, ref, f"{name} {axis_text}", rtol=1e-5, atol=1e-6)

    run_batches(fetches, feeds, check)


def test_integer_reductions_and_truncating_mean():
    x = tf.placeholder(tf.int32, [None, 4], name="x")
    fetches = {"sum0": tf.reduce_sum(x, 0), "sum1": tf.reduce_sum(x, -1, keepdims=True),
               "mean0": tf.reduce_mean(x, 0), "mean1": tf.reduce_mean(x, 1), "mean_all": tf.reduce_mean(x),
               "prod1": tf.reduce_prod(x, 1), "max0": tf.reduce_max(x, 0), "min1": tf.reduce_min(x, 1)}

    def feeds(n):
        v = np.random.default_rng(n).integers(-9, 10, (n, 4)).astype(np.int32)
        v[0] = [-7, 0, 0, 0]  # mean -7/4 truncates to -1 (numpy's floor would give -2)
        return {x: v}

    def tmean(v, axis):
        total = v.sum(axis=axis, dtype=np.int64)
        count = v.size if axis is None else v.shape[axis]
        return (np.sign(total) * (np.abs(total) // count)).astype(np.int32)

    def check(fed, out):
        v = fed[x]
        assert_close(out["sum0"], v.sum(0).astype(np.int32), "sum0")
        assert_close(out["sum1"], v.sum(1, keepdims=True).astype(np.int32), "sum1")
        assert_close(out["mean0"], tmean(v, 0), "mean0")
        assert_close(out["mean1"], tmean(v, 1), "mean1")
        assert out["mean1"][0] == -1
        assert_close(out["mean_all"], tmean(v, None), "mean_all")
        assert_close(out["prod1"], v.prod(1).astype(np.int32), "prod1")
        assert_close(out["max0"], v.max(0), "max0")
        assert_close(out["min1"], v.min(1), "min1")

    run_batches(fetches, feeds, check)


def test_all_any():
    x = tf.placeholder(tf.bool, [None, 3])
    fetches = {"all0": tf.reduce_all(x, 0), "any1": tf.reduce_any(x, -1, keepdims=True), "all": tf.reduce_all(x),
               "any": tf.reduce_any(x, [0, 1])}

    def feeds(n):
        v = np.random.default_rng(n).integers(0, 2, (n, 3)).astype(bool)
        v[0] = True
        return {x: v}

    def check(fed, out):
        v = fed[x]
        assert_close(out["all0"], v.all(0), "all0")
        assert_close(out["any1"], v.any(-1, keepdims=True), "any1")
        assert_close(out["all"], np.array(v.all()), "all")
        assert_close(out["any"], np.array(v.any()), "any")

    run_batches(fetches, feeds, check)


def test_arg_max_min():
    x = tf.placeholder(tf.float32, [None, 5], name="x")
    i = tf.placeholder(tf.int64, [None, 3, 2], name="i")
    fetches = {"amax0": tf.argmax(x, 0), "amax1": tf.argmax(x, 1, output_type=tf.int32),
               "amin1": tf.argmin(x, -1), "amin0": tf.argmin(x, 0, output_type=tf.int32),
               "iamax": tf.argmax(i, 1), "iamin": tf.argmin(i, -1, output_type=tf.int32)}

    def feeds(n):
        rng = np.random.default_rng(n)
        xv = rng.integers(-3, 4, (n, 5)).astype(np.float32)  # many ties: the first index wins
        return {x: xv, i: rng.integers(-2, 3, (n, 3, 2))}

    def check(fed, out):
        xv, iv = fed[x], fed[i]
        assert_close(out["amax0"], np.argmax(xv, 0), "amax0")
        assert_close(out["amax1"], np.argmax(xv, 1).astype(np.int32), "amax1")
        assert_close(out["amin1"], np.argmin(xv, -1), "amin1")
        assert_close(out["amin0"], np.argmin(xv, 0).astype(np.int32), "amin0")
        assert_close(out["iamax"], np.argmax(iv, 1), "iamax")
        assert_close(out["iamin"], np.argmin(iv, -1).astype(np.int32), "iamin")

    run_batches(fetches, feeds, check)


def test_add_n():
    a, b, c = (tf.placeholder(tf.float32, [None, 3], name=n) for n in "abc")
    k = tf.placeholder(tf.int32, [None], name="k")
    fetches = {"f": tf.add_n([a, b, c]), "i": tf.add_n([k, k, k, k])}

    def feeds(n):
        rng = np.random.default_rng(n)
        return {a: rng.normal(size=(n, 3)), b: rng.normal(size=(n, 3)), c: rng.normal(size=(n, 3)),
                k: rng.integers(-50, 50, n)}

    def check(fed, out):
        ref = (fed[a].astype(np.float32) + fed[b].astype(np.float32)) + fed[c].astype(np.float32)
        assert_close(out["f"], ref, "f")
        assert_close(out["i"], (4 * fed[k]).astype(np.int32), "i")

    run_batches(fetches, feeds, check)


# -- Cumsum -----------------------------------------------------------------------------------------
def np_cumsum(v, axis, exclusive, reverse):
    if reverse:
        v = np.flip(v, axis)
    out = np.cumsum(v, axis=axis, dtype=v.dtype)
    if exclusive:
        out = out - v
    return np.flip(out, axis) if reverse else out


def test_cumsum_flags_and_axes():
    x = tf.placeholder(tf.float32, [None, 6], name="x")
    k = tf.placeholder(tf.int32, [None, 3, 4], name="k")
    flags = [(e, r) for e in (False, True) for r in (False, True)]
    fetches = {}
    for e, r in flags:
        fetches[("x", 1, e, r)] = tf.cumsum(x, axis=1, exclusive=e, reverse=r)
        fetches[("k", -2, e, r)] = tf.cumsum(k, axis=-2, exclusive=e, reverse=r)
        fetches[("k", 2, e, r)] = tf.cumsum(k, axis=2, exclusive=e, reverse=r)

    def feeds(n):
        rng = np.random.default_rng(n)
        return {x: rng.uniform(-1, 1, (n, 6)).astype(np.float32), k: rng.integers(-100, 100, (n, 3, 4))}

    def check(fed, out):
        for (name, axis, e, r), result in out.items():
            v = fed[x] if name == "x" else fed[k].astype(np.int32)
            assert_close(result, np_cumsum(v, axis, e, r), f"{name} axis={axis} exclusive={e} reverse={r}",
                         rtol=1e-5, atol=1e-6)

    run_batches(fetches, feeds, check)


def test_cumsum_of_long_and_run_time_axes():
    x = tf.placeholder(tf.float32, [None, 5000])
    y = tf.placeholder(tf.float32, [3, None])
    long_axis = tf.cumsum(x, axis=1)
    symbolic = tf.cumprod(y, axis=1, exclusive=True)
    values = np.random.default_rng(3).normal(size=(2, 5000)).astype(np.float32)
    with tf.Session() as sess:
        got = sess.run(long_axis, {x: values})
        np.testing.assert_array_equal(got, np.cumsum(values, axis=1, dtype=np.float32))  # sequential, as numpy's
        got = sess.run(symbolic, {y: np.arange(12, dtype=np.float32).reshape(3, 4) + 1})
    np.testing.assert_array_equal(got, [[1, 1, 2, 6], [1, 5, 30, 210], [1, 9, 90, 990]])


# -- MatMul / BatchMatMulV2 ------------------------------------------------------------------------
def test_matmul_transposes():
    a = tf.placeholder(tf.float32, [None, 4], name="a")   # [n, 4]
    at = tf.placeholder(tf.float32, [4, None], name="at")  # [4, n]
    bv = np.random.default_rng(0).normal(size=(4, 3)).astype(np.float32)
    btv = np.random.default_rng(1).normal(size=(3, 4)).astype(np.float32)
    b, bt = tf.constant(bv), tf.constant(btv)
    fetches = {"nn": tf.matmul(a, b), "tn": tf.matmul(at, b, transpose_a=True),
               "nt": tf.matmul(a, bt, transpose_b=True), "tt": tf.matmul(at, bt, transpose_a=True, transpose_b=True),
               "gram": tf.matmul(a, a, transpose_b=True)}

    def feeds(n):
        av = np.random.default_rng(n).normal(size=(n, 4)).astype(np.float32)
        return {a: av, at: np.ascontiguousarray(av.T)}

    def check(fed, out):
        av = fed[a]
        tol = dict(rtol=1e-5, atol=1e-5)
        assert_close(out["nn"], av @ bv, "nn", **tol)
        assert_close(out["tn"], av @ bv, "tn", **tol)
        assert_close(out["nt"], av @ btv.T, "nt", **tol)
        assert_close(out["tt"], av @ btv.T, "tt", **tol)
        assert_close(out["gram"], av @ av.T, "gram", **tol)

    run_batches(fetches, feeds, check)


def test_integer_matmul():
    a = tf.placeholder(tf.int32, [None, 3])
    b = tf.placeholder(tf.int32, [3, 2])
    with tf.Session() as sess:
        av = np.arange(-6, 6, dtype=np.int32).reshape(4, 3)
        bv = np.array([[1, -2], [3, 4], [-5, 6]], np.int32)
        np.testing.assert_array_equal(sess.run(tf.matmul(a, b), {a: av, b: bv}), av @ bv)


def test_batch_matmul_v2_broadcasting_and_adjoints():
    x = tf.placeholder(tf.float32, [None, 1, 3, 4], name="x")
    y3 = tf.placeholder(tf.float32, [2, 4, 5], name="y3")
    y2 = tf.placeholder(tf.float32, [4, 5], name="y2")
    yt = tf.placeholder(tf.float32, [2, 5, 4], name="yt")
    xt = tf.placeholder(tf.float32, [None, 1, 4, 3], name="xt")
    fetches = {
        "bcast": op("BatchMatMulV2", x, y3),           # [n,1] x [2] batch -> [n,2]
        "rank2": op("BatchMatMulV2", x, y2),           # y without batch dims
        "adj_y": op("BatchMatMulV2", x, yt, adj_y=True),
        "adj_both": op("BatchMatMulV2", xt, yt, adj_x=True, adj_y=True),
        "matmul_fn": tf.matmul(x, y3),
    }

    def feeds(n):
        rng = np.random.default_rng(n)
        xv = rng.normal(size=(n, 1, 3, 4)).astype(np.float32)
        return {x: xv, xt: np.ascontiguousarray(np.swapaxes(xv, -1, -2)), y3: rng.normal(size=(2, 4, 5)),
                y2: rng.normal(size=(4, 5)), yt: rng.normal(size=(2, 5, 4))}

    def check(fed, out):
        xv = fed[x]
        y3v, y2v, ytv = (fed[t].astype(np.float32) for t in (y3, y2, yt))
        tol = dict(rtol=1e-5, atol=1e-5)
        assert_close(out["bcast"], np.matmul(xv, y3v), "bcast", **tol)
        assert_close(out["matmul_fn"], np.matmul(xv, y3v), "matmul_fn", **tol)
        assert_close(out["rank2"], np.matmul(xv, y2v), "rank2", **tol)
        assert_close(out["adj_y"], np.matmul(xv, np.swapaxes(ytv, -1, -2)), "adj_y", **tol)
        assert_close(out["adj_both"], np.matmul(xv, np.swapaxes(ytv, -1, -2)), "adj_both", **tol)

    run_batches(fetches, feeds, check)


def test_conj_of_a_real_value_is_the_value():
    """Conj only accepts complex types, which never reach the compiler; a real value passes."""
    from tfc import ir
    from tfc.frontend.registry import lookup_op_type
    from tfc.passes.lower import LowerCtx

    ctx = LowerCtx()
    arg = ctx.function.body.add_arg(ir.TensorType(ir.ElemType.F32, (3,)), "x")
    assert lookup_op_type("Conj").lower(ctx, None, arg) is arg


# -- failures ---------------------------------------------------------------------------------------
def test_unsupported_cases_fail_with_reasons():
    x = tf.placeholder(tf.float32, [None, 3])
    axis = tf.placeholder(tf.int32, [1])
    k = tf.placeholder(tf.int32, [None])
    dynamic = tf.reduce_sum(x, axis)
    int_tan = op("Tan", k)
    repeated = tf.reduce_max(x, [1, -1])
    with tf.Session() as sess:
        with pytest.raises(UnsupportedOpsError) as info:
            sess.run([dynamic, int_tan, repeated], {x: np.zeros((2, 3), np.float32), axis: [0], k: [1]})
    text = str(info.value)
    assert "cannot compile 3 ops" in text
    assert "reduction axes must be known at compile time" in text
    assert "Tan of i32 values has no kernel" in text
    assert "Axes contains duplicate dimension: 1" in text


# -- scalars keep rank 0 (regressions: np.ascontiguousarray made 0-d arrays 1-d) ------------------
def test_scalar_constant_keeps_rank_zero():
    x = tf.placeholder(tf.float32, [None])
    y = tf.reduce_sum(x) * 2.0
    with tf.Session() as sess:
        out = sess.run(y, {x: [1.0, 2.0, 3.0]})
    assert np.shape(out) == ()
    assert out == 12.0


def test_scalar_placeholder_feed():
    x = tf.placeholder(tf.float32, [None])
    s = tf.placeholder(tf.float32, [])
    with tf.Session() as sess:
        out = sess.run(x * s, {x: [1.0, 2.0], s: 3.0})
    np.testing.assert_array_equal(out, [3.0, 6.0])
