"""tf.acos... tf.math.erfinv, reduce_logsumexp/std/variance/euclidean_norm, the no-NaN ops,
accumulate_n, polyval, zero_fraction, is_non_decreasing, arg_max against real TensorFlow
(tests/fixtures/math_extra.json, made by tests/fixtures/make_math_extra_fixture.py), and the
special functions against python's math module over hypothesis-drawn arguments."""
import json
import math
import os

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tfc.compat.v1 as tf

HERE = os.path.join(os.path.dirname(__file__), "..", "fixtures")
FIXTURES = json.load(open(os.path.join(HERE, "math_extra.json")))["cases"]


def _cases():
    """MATH_EXTRA_CASES and helpers from the fixture script, without importing TensorFlow."""
    source = open(os.path.join(HERE, "make_math_extra_fixture.py")).read()
    namespace = {"np": np}
    exec(source[source.index("# Input domains"):source.index("def record")], namespace)
    return namespace


NS = _cases()
CASES = NS["MATH_EXTRA_CASES"]

# TF 1.15's compositions where the recording TensorFlow (2.x) builds other nodes:
# reduce_logsumexp used where/Select, a static (Const) shape and Add; accumulate_n built
# AccumulateNV2 (2.x: AddN).
_LSE = ["Max", "IsFinite", "Select", "StopGradient", "Sub", "Exp", "Sum", "Log"]
TF115_NODES = {
    "logsumexp_axis1": [[f"ReduceLogSumExp/{t}", t] for t in _LSE]
    + [["ReduceLogSumExp/Reshape", "Reshape"], ["ReduceLogSumExp/Add", "Add"]],
    "logsumexp_all": [[f"ReduceLogSumExp/{t}", t] for t in _LSE]
    + [["ReduceLogSumExp/Reshape", "Reshape"], ["ReduceLogSumExp/Add", "Add"]],
    "logsumexp_keepdims": [[f"lse/{t}", t] for t in _LSE] + [["lse/Add", "Add"]],
    "accumulate_n": [["AccumulateNV2", "AccumulateNV2"]],
    "accumulate_n_named": [["acc", "AccumulateNV2"]],
}
# is_non_decreasing / is_strictly_increasing: TF's x[1:] - x[:-1] without its cond (whose
# branches differ in shape; the slices alone give [] for short x).
_MONOTONIC = [["Reshape", "Reshape"], ["sub", "Sub"], ["add", "AddV2"], ["ones_like", "Fill"],
              ["StridedSlice", "StridedSlice"], ["ones_like_1", "Fill"], ["StridedSlice_1", "StridedSlice"],
              ["sub_1", "Sub"]]
MONOTONIC = {"is_non_decreasing": ("is_non_decreasing", "LessEqual"),
             "is_non_decreasing_cumsum": ("is_non_decreasing", "LessEqual"),
             "is_non_decreasing_one": ("one", "LessEqual"),
             "is_strictly_increasing": ("is_strictly_increasing", "Less")}


# confusion_matrix: 1.15 added a SparseTensor to zeros (SparseTensorDenseAdd) where 2.x
# builds ScatterNd; the nodes before are the same.
_CM_TAIL = [["zeros", "Fill"], ["SparseTensorDenseAdd", "SparseTensorDenseAdd"]]
CONFUSION_TAILS = {"confusion_matrix": ("confusion_matrix", _CM_TAIL),
                   "confusion_matrix_inferred": ("confusion_matrix", [["Cast_2", "Cast"]] + _CM_TAIL),
                   "confusion_matrix_weights": ("cm", _CM_TAIL)}


def _expected_nodes(name, recorded):
    if name in CONFUSION_TAILS:
        scope, tail = CONFUSION_TAILS[name]
        cut = [t for _, t in recorded].index("ScatterNd")
        return recorded[:cut] + [[f"{scope}/{n}", t] for n, t in tail]
    if name in MONOTONIC:
        scope, compare = MONOTONIC[name]
        before = [n for n in recorded if not n[0].startswith(scope + "/")]
        return before + [[f"{scope}/{n}", t] for n, t in _MONOTONIC + [[compare, compare], ["All", "All"]]]
    return TF115_NODES.get(name, recorded)




def _close(got, want, dtype):
    got, want = np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64)
    rtol = 1e-12 if dtype == "float64" else 2e-6
    np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol)


@pytest.mark.parametrize("name", sorted(CASES))
def test_math_extra_as_tensorflow(name):
    build, specs, grad_inputs = CASES[name]
    want = FIXTURES[name]
    with tf.Graph().as_default() as g:
        inputs = [tf.constant(v) for v in NS["case_inputs"](specs)]
        before = set(g.get_operations())
        y = build(tf, *inputs)
        nodes = [[o.name, o.type] for o in g.get_operations() if o not in before and o.type != "Const"]
        assert nodes == _expected_nodes(name, want["nodes"])
        assert y.dtype.name == want["dtype"]
        # TF's shape refiner evaluates the class count max(labels, predictions) + 1 of
        # constant inputs; tfc's static shapes leave it unknown.
        assert y.shape.as_list() == ([None, None] if name == "confusion_matrix_inferred" else want["shape"])
        fetch = {"y": y}
        if grad_inputs:
            loss = tf.reduce_sum(y * tf.constant(NS["ramp"](y.shape.as_list()), dtype=y.dtype))
            fetch["grads"] = tf.gradients(loss, [inputs[i] for i in grad_inputs])
            grad_nodes = [[o.name, o.type] for o in g.get_operations()
                          if o.type in NS["GRAD_TYPES"] and o.name.startswith("gradients/")]
            assert grad_nodes == want["grad_nodes"]
        with tf.Session() as sess:
            got = sess.run(fetch)
    if want["dtype"] in ("float32", "float64"):
        _close(got["y"], want["value"], want["dtype"])
    else:
        assert np.asarray(got["y"]).tolist() == want["value"]
    for g_got, g_want in zip(got.get("grads", []), want.get("grads", [])):
        _close(g_got, g_want, want["dtype"])


def test_logsumexp_gradient_stops_at_the_max():
    with tf.Graph().as_default() as g:
        x = tf.constant([[1., 2., 3.], [-np.inf, 0., 0.]])
        y = tf.reduce_logsumexp(x, axis=1)
        (grad,) = tf.gradients(y, [x])
        assert grad.op.type != "StopGradient"
        assert [o.type for o in g.get_operations() if o.name.startswith("gradients/ReduceLogSumExp/Max")] == []
        with tf.Session() as sess:
            value, dx = sess.run([y, grad])
    np.testing.assert_allclose(value, [3 + np.log(1 + np.exp(-1) + np.exp(-2)), np.log(2)], rtol=1e-6)
    np.testing.assert_allclose(dx.sum(axis=1), [1, 1], rtol=1e-6)
    assert dx[1, 0] == 0


def test_confusion_matrix_checks_its_inputs():
    with tf.Graph().as_default():
        labels = tf.placeholder(tf.int32, [3])
        cm = tf.math.confusion_matrix(labels, [0, 1, 2], num_classes=3)
        with tf.Session() as sess:
            np.testing.assert_array_equal(sess.run(cm, {labels: [0, 2, 2]}), [[1, 0, 0], [0, 0, 0], [0, 1, 1]])
            for bad, message in [([0, -1, 2], "`labels` contains negative values"),
                                 ([0, 3, 2], "`labels` out of bound")]:
                with pytest.raises(tf.errors.InvalidArgumentError, match=message):
                    sess.run(cm, {labels: bad})


def test_names_and_aliases():
    assert tf.div_no_nan is tf.math.divide_no_nan
    assert tf.nn.zero_fraction is tf.math.zero_fraction
    assert tf.confusion_matrix is tf.math.confusion_matrix
    assert tf.debugging.is_non_decreasing is tf.math.is_non_decreasing
    assert tf.arg_max(tf.constant([[1, 3, 2]]), 1).op.type == "ArgMax"
    for name in ["acos", "acosh", "asin", "asinh", "atan", "atanh", "sinh", "cosh", "lgamma", "digamma", "erfc",
                 "erfinv", "log_sigmoid", "reduce_logsumexp", "accumulate_n", "invert_permutation", "xlogy",
                 "xdivy"]:
        assert getattr(tf, name) is getattr(tf.math, name)
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 3])
        for fn, op_type in [(tf.acos, "Acos"), (tf.math.erfinv, "Erfinv"), (tf.lgamma, "Lgamma"),
                            (tf.math.cosh, "Cosh")]:
            y = fn(x, name="named")
            assert (y.op.type, y.shape.as_list()) == (op_type, [None, 3])
        assert tf.math.xlogy(x, tf.ones([4, 1]), name="xy").shape.as_list() == [4, 3]
        assert tf.math.reduce_euclidean_norm(x, 1).op.type == "EuclideanNorm"
        acc = tf.accumulate_n([x, tf.zeros([2, 3])])
        assert (acc.op.type, acc.shape.as_list()) == ("AccumulateNV2", [2, 3])
        with pytest.raises(TypeError):
            tf.acos(tf.constant([1, 2]))  # floats only
        with pytest.raises(ValueError):
            tf.math.polyval(3.0, x)


def test_monotonic_short_and_fed_inputs():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None])
        nd, si = tf.math.is_non_decreasing(x), tf.math.is_strictly_increasing(x)
        with tf.Session() as sess:
            for value, want in [([], (True, True)), ([3.], (True, True)), ([1., 1., 2.], (True, False)),
                                ([1., 2., 3.], (True, True)), ([2., 1.], (False, False))]:
                assert tuple(sess.run([nd, si], {x: value})) == want


def test_invert_permutation_of_a_fed_permutation():
    with tf.Graph().as_default():
        p = tf.placeholder(tf.int32, [4])
        y = tf.math.invert_permutation(p)
        with tf.Session() as sess:
            assert sess.run(y, {p: [2, 0, 3, 1]}).tolist() == [1, 3, 0, 2]


# -- the special functions against python's math (float64 references) --------------------------
def _digamma_ref(x):
    """psi(x): recurrence to x >= 20 and the asymptotic series, reflection below 0.5."""
    if x < 0.5:
        return _digamma_ref(1 - x) - math.pi / math.tan(math.pi * x)
    total = 0.0
    while x < 20:
        total -= 1 / x
        x += 1
    inv2 = 1 / (x * x)
    return total + math.log(x) - 0.5 / x - inv2 * (1 / 12 - inv2 * (1 / 120 - inv2 * (1 / 252 - inv2 / 240)))


def _erfinv_ref(y):
    """Bisection of math.erf (float64)."""
    lo, hi = -7.0, 7.0
    for _ in range(200):
        mid = (lo + hi) / 2
        if math.erf(mid) < y:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


_FUNCTIONS = ["lgamma", "digamma", "erfc", "erfinv", "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh",
              "atanh"]
_GRAPH = {}


def _session():
    """One graph with every function applied to a float32 placeholder (compiled once)."""
    if not _GRAPH:
        graph = tf.Graph()
        with graph.as_default():
            x = tf.placeholder(tf.float32, [None])
            _GRAPH.update(x=x, outputs={n: getattr(tf.math, n)(x) for n in _FUNCTIONS}, sess=tf.Session())
    return _GRAPH


_REFERENCES = {
    "lgamma": (math.lgamma, (-30.0, 60.0)), "digamma": (_digamma_ref, (-30.0, 60.0)),
    "erfc": (math.erfc, (-5.0, 9.0)), "erfinv": (_erfinv_ref, (-0.999999, 0.999999)),
    "asin": (math.asin, (-1.0, 1.0)), "acos": (math.acos, (-1.0, 1.0)), "atan": (math.atan, (-1e6, 1e6)),
    "sinh": (math.sinh, (-80.0, 80.0)), "cosh": (math.cosh, (-80.0, 80.0)), "asinh": (math.asinh, (-1e30, 1e30)),
    "acosh": (math.acosh, (1.0, 1e30)), "atanh": (math.atanh, (-0.999, 0.999)),
}


def _relative_error(name, value, ref, x):
    """|got - ref| scaled by |ref| and, where the function has a root or cancels, by the
    condition of the float32 argument (|x f'(x)| ulps)."""
    scale = abs(ref)
    if name in ("lgamma", "digamma"):  # roots near 1, 2, 1.4616 and between the negative poles
        h = abs(x) * 1e-6 + 1e-30
        fn = _REFERENCES[name][0]
        try:
            scale = max(scale, abs(fn(x + h) - fn(x - h)) / 2 / h * abs(x))
        except (ValueError, ZeroDivisionError):
            pass
    return abs(value - ref) / max(scale, 1e-30)


@pytest.mark.parametrize("name", _FUNCTIONS)
def test_special_functions_match_python_math(name):
    fn, (low, high) = _REFERENCES[name]
    graph = _session()

    @settings(max_examples=5, deadline=None, derandomize=True)
    @given(st.lists(st.floats(float(np.float32(low)), float(np.float32(high)), width=32), min_size=1, max_size=30))
    def check(values):
        xs = np.asarray(values, dtype=np.float32)
        if name in ("lgamma", "digamma"):
            xs = xs[(xs > 0) | (np.abs(xs - np.round(xs)) > 1e-3)]  # not at the poles
            if xs.size == 0:
                return
        got = graph["sess"].run(graph["outputs"][name], {graph["x"]: xs})
        for x, value in zip(xs.tolist(), got.tolist()):
            ref = fn(x)
            if math.isinf(ref) or abs(ref) > 3e38:
                assert math.isinf(value) and (value > 0) == (ref > 0), (x, value, ref)
                continue
            if abs(ref) < 1e-37 and name not in ("lgamma", "digamma"):  # float32 underflow
                assert abs(value) < 1e-37
                continue
            assert _relative_error(name, value, ref, x) < 2e-6, (name, x, value, ref)

    check()


def test_special_values():
    with tf.Graph().as_default():
        x = tf.constant([0., -1., -2.5, np.inf, -np.inf, np.nan], tf.float32)
        ops = {"lgamma": tf.lgamma(x), "digamma": tf.digamma(x), "erfc": tf.erfc(x),
               "erfinv": tf.math.erfinv(tf.constant([1., -1., 1.5, 0., -0.5]))}
        with tf.Session() as sess:
            got = sess.run(ops)
    np.testing.assert_equal(got["lgamma"][[0, 1, 3, 4, 5]], [np.inf, np.inf, np.inf, np.inf, np.nan])
    np.testing.assert_allclose(got["lgamma"][2], math.lgamma(-2.5), rtol=1e-6)
    np.testing.assert_equal(got["digamma"][[0, 1, 3, 4, 5]], [np.nan, np.nan, np.inf, np.nan, np.nan])
    np.testing.assert_allclose(got["digamma"][2], 1.1031568, rtol=1e-6)  # TF's value
    np.testing.assert_equal(got["erfc"][[0, 3, 4, 5]], [1., 0., 2., np.nan])
    np.testing.assert_equal(got["erfinv"][:4], [np.inf, -np.inf, np.nan, 0.])
    np.testing.assert_allclose(got["erfinv"][4], -0.47693628, rtol=1e-6)
