"""N-d gathers and scatters (tf.gather_nd, scatter_nd, tensor_scatter_*, scatter_update/add/
sub on ref variables), top_k / in_top_k, check_numerics and the matrix helpers (band part,
diag, diag part, set diag, eye, linspace, meshgrid, norm, cumsum/cumprod, is_nan...):
TensorFlow's graphs node for node, its values, gradients and errors
(tests/fixtures/scatter_topk_graphs.json, made by
tests/fixtures/make_tf_scatter_topk_graphs.py with TF 2.x; TF 1.15's Python functions for
the five that 2.x builds differently), numpy on random shapes, and the IR evaluator (every
compiled program here is also run by the evaluator on its lowered IR)."""
import copy
import importlib.util
import json
import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tfc.compat.v1 as tf
from tfc.frontend.errors import InvalidArgumentError
from tfc.ir.evaluator import evaluate
from tfc.passes.lower import FeedSpec, lower_graph

_FIXTURES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fixtures")
_spec = importlib.util.spec_from_file_location("make_tf_scatter_topk_graphs",
                                               os.path.join(_FIXTURES, "make_tf_scatter_topk_graphs.py"))
programs = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(programs)  # the program builders; TensorFlow is imported only by its main()

with open(os.path.join(_FIXTURES, "scatter_topk_graphs.json")) as _f:
    FIXTURE = json.load(_f)

# Attrs newer than TF 1.15 (TF 2.x writes them; 1.15's OpDefs have none of them).
_TF2_ONLY_ATTRS = {"_has_manual_control_dependencies", "bad_indices_policy", "Tk", "index_type", "grad_a",
                   "grad_b"}
# TF 2.x's gradient functions use static shapes (no BroadcastGradientArgs, other helper
# nodes) and return IndexedSlices for gathers; TF 1.15's (and tfc's) do not. For programs
# calling tf.gradients, the nodes outside ``gradients/`` are compared node for node and
# the gradients by value.
_GRADIENT_PROGRAMS = {"gather_nd_gradient", "scatter_nd_basic", "tensor_scatter", "top_k_basic",
                      "check_numerics_basic", "matrix_basic", "norm_cumulative"}


def _strip(nodes):
    nodes = copy.deepcopy(nodes)
    for node in nodes:
        for attr in _TF2_ONLY_ATTRS:
            node["attrs"].pop(attr, None)
    return nodes


def _forward_only(nodes):
    kept = [n for n in nodes if not n["name"].startswith("gradients") and n["op"] != "Identity"
            or n["name"] == "v/read"]
    for n in kept:
        n["inputs"] = ["gradients/..." if i.lstrip("^").startswith("gradients") else i for i in n["inputs"]]
    return [n for n in kept if not (n["op"] == "Identity" and n["name"].startswith("gradients"))]


def build(name):
    graph = tf.Graph()
    with graph.as_default():
        fetches = programs.PROGRAMS[name](tf)
    return graph, fetches


def test_fixture_covers_every_program():
    assert sorted(FIXTURE["programs"]) == sorted(programs.PROGRAMS)
    assert sorted(FIXTURE["errors"]) == sorted(programs.ERRORS)
    assert sorted(FIXTURE["run_errors"]) == sorted(programs.RUN_ERRORS)


@pytest.mark.parametrize("name", sorted(programs.PROGRAMS))
def test_graph_matches_tensorflow(name):
    expected = _strip(FIXTURE["programs"][name])
    graph, _ = build(name)
    got = _strip(programs.record_graph(graph))
    if name in _GRADIENT_PROGRAMS:
        expected, got = _forward_only(expected), _forward_only(got)
        # tf.convert_to_tensor of an IndexedSlices gradient (TF) adds nodes tfc has no need of
        if name == "gather_nd_gradient":
            expected = [n for n in expected if not n["name"].startswith(("strided_slice", "UnsortedSegmentSum"))]
    if name == "eye_linspace_meshgrid":
        # TF 1.15's _constant_if_small multiplies meshgrid's Size tensors with numpy (a list of
        # tensors is an object array there), leaving ``ones/mul`` and ``ones/Less`` nodes that
        # TF 2.x (whose tensors refuse numpy conversion) does not build; tfc builds 1.15's.
        got = [n for n in got if not ("/ones/mul" in n["name"] or "/ones/Less" in n["name"])]
    assert [n["name"] for n in got] == [n["name"] for n in expected]
    for g, e in zip(got, expected):
        assert g == e, (g["name"], g, e)


def _value(entry):
    flat = [np.nan if v is None else v for v in entry["value"]]
    return np.array(flat, dtype=entry["dtype"]).reshape(entry["shape"])


def _run_program(name):
    graph, fetches = build(name)
    with graph.as_default(), tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        feeds = programs.feeds_for(graph)
        return [(key, sess.run(t, feeds)) for key, t in fetches]


@pytest.mark.parametrize("name", sorted(programs.PROGRAMS))
def test_values_match_tensorflow(name):
    got = _run_program(name)
    expected = FIXTURE["values"][name]
    assert [k for k, _ in got] == [k for k, _ in expected]
    for (key, value), (_, entry) in zip(got, expected):
        want = _value(entry)
        value = np.asarray(value)
        assert value.dtype == want.dtype and value.shape == want.shape, (name, key, value, want)
        if name == "top_k_basic" and key in ("v3", "i3"):  # sorted=False: TF's order is unspecified
            value, want = np.sort(value, axis=-1), np.sort(want, axis=-1)
        np.testing.assert_allclose(value, want, rtol=2e-6, atol=1e-6, err_msg=f"{name}: {key}")


def _core_message(message: str) -> str:
    """A shape-function message without TF's `` for '<node>' ...`` suffix (1.15 and 2.x word it
    differently)."""
    return message.split(" for '")[0]


# Messages of TF 1.15's Python functions where 2.x reworded them (linalg_ops.py, array_ops.py).
_TF115_MESSAGES = {
    "norm_bad_axis": "'axis' must be None, an integer, or a tuple of 2 unique integers",
    "meshgrid_indexing": "indexing parameter must be either 'xy' or 'ij'",
}


@pytest.mark.parametrize("name", sorted(programs.ERRORS))
def test_graph_errors_match_tensorflow(name):
    expected = FIXTURE["errors"][name]
    with tf.Graph().as_default():
        with pytest.raises(Exception) as caught:
            programs.ERRORS[name](tf)
    assert type(caught.value).__name__ == expected["type"]
    want = _TF115_MESSAGES.get(name, _core_message(expected["message"]))
    assert _core_message(str(caught.value)) == want


@pytest.mark.parametrize("name", sorted(programs.RUN_ERRORS))
def test_run_errors_match_tensorflow(name):
    expected = FIXTURE["run_errors"][name]
    graph = tf.Graph()
    with graph.as_default():
        t = programs.RUN_ERRORS[name](tf)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            with pytest.raises(InvalidArgumentError) as caught:
                sess.run(t, programs.feeds_for(graph))
    assert expected["type"] == "InvalidArgumentError"
    assert caught.value.message == f"{expected['message']} (in '{t.op.name}')"


def test_eye_needs_integers_as_in_tf115():
    with tf.Graph().as_default():
        with pytest.raises(TypeError, match="num_rows and num_columns must be positive integer values."):
            tf.eye(2.5)


def test_scatter_update_needs_a_variable():
    with tf.Graph().as_default():
        with pytest.raises(TypeError, match="'ScatterUpdate' Op requires that input 'ref' be a mutable tensor"):
            tf.scatter_update(tf.zeros([3, 2]), [0], tf.ones([1, 2]))


def test_matrix_two_norm_is_not_implemented():
    with tf.Graph().as_default():
        with pytest.raises(NotImplementedError, match="matrix 2-norm"):
            tf.norm(tf.ones([2, 2]), ord=2, axis=[0, 1])


def test_namespaces():
    assert tf.tensor_scatter_nd_update is tf.tensor_scatter_update
    assert tf.math.top_k is tf.nn.top_k
    assert tf.debugging.check_numerics is tf.check_numerics
    assert tf.linalg.band_part is tf.matrix_band_part and tf.linalg.diag is tf.matrix_diag
    assert tf.linspace is tf.lin_space


# -- the IR evaluator gives what the compiled program gives -------------------------------------------
def _compiled_and_evaluated(fetches, feeds):
    with tf.Session() as sess:
        compiled = sess.run(fetches, feeds)
    specs = [FeedSpec(t, t.dtype, np.shape(v)) for t, v in feeds.items()]
    lowered = lower_graph(fetches, [], specs)
    by_tensor = dict(feeds)
    args = [np.asarray(by_tensor[t], dtype=t.dtype.as_numpy_dtype) for t in lowered.feeds]
    evaluated = evaluate(lowered.module, args)
    return compiled, evaluated


def test_compiled_matches_the_evaluator():
    with tf.Graph().as_default():
        p = tf.placeholder(tf.float32, [None, 3], name="p")
        m = tf.placeholder(tf.float32, [4, 3], name="m")
        idx = tf.placeholder(tf.int32, [None, 2], name="idx")
        upd = tf.placeholder(tf.float32, [None], name="upd")
        x = tf.placeholder(tf.float32, [None, 6], name="x")
        t = tf.placeholder(tf.int32, [None], name="t")
        v, i = tf.nn.top_k(x, 4)
        fetches = [tf.gather_nd(p, idx), tf.scatter_nd(idx, upd, [4, 3]), tf.tensor_scatter_update(p, idx, upd),
                   tf.tensor_scatter_sub(p, idx, upd), v, i, tf.nn.in_top_k(x, t, 2),
                   tf.matrix_band_part(p, 0, 1), tf.matrix_diag_part(m), tf.matrix_set_diag(m, [1.0, 2.0, 3.0]),
                   tf.check_numerics(p, "p"), tf.norm(p, axis=1), tf.gradients(tf.reduce_sum(v * v), x)[0]]
        feeds = {p: np.arange(12, dtype=np.float32).reshape(4, 3), m: np.arange(12, dtype=np.float32).reshape(4, 3) - 4,
                 idx: np.array([[0, 1], [3, 2], [0, 1]], np.int32),
                 upd: np.array([1.0, 2.0, 3.0], np.float32),
                 x: np.array([[3, 1, 3, np.nan, -np.inf, 0], [1, 1, 1, 1, 1, 1]], np.float32),
                 t: np.array([0, 5], np.int32)}
        compiled, evaluated = _compiled_and_evaluated(fetches, feeds)
    assert len(compiled) == len(evaluated)
    for a, b in zip(compiled, evaluated):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_evaluator_raises_the_compiled_programs_errors():
    from tfc.ir.evaluator import EvaluationError  # noqa: F401 - the evaluator's own failure class

    with tf.Graph().as_default():
        p = tf.placeholder(tf.float32, [3, 2], name="p")
        idx = tf.placeholder(tf.int32, [None, 2], name="idx")
        g = tf.gather_nd(p, idx)
        lowered = lower_graph([g], [], [FeedSpec(p, p.dtype, (3, 2)), FeedSpec(idx, idx.dtype, (2, 2))])
        args = {p: np.zeros((3, 2), np.float32), idx: np.array([[0, 1], [2, 5]], np.int32)}
        with pytest.raises(Exception) as caught:
            evaluate(lowered.module, [args[t] for t in lowered.feeds])
    assert "indices[1] = [2, 5] does not index into param shape [3,2]" in str(caught.value)


# -- numpy on random shapes ------------------------------------------------------------------------
def _top_k_numpy(x, k):
    order = np.argsort(-x, axis=-1, kind="stable")[..., :k]
    return np.take_along_axis(x, order, axis=-1), order.astype(np.int32)


@settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck))
@given(rows=st.integers(1, 4), cols=st.integers(1, 7), data=st.data())
def test_top_k_matches_numpy(rows, cols, data):
    k = data.draw(st.integers(0, cols))
    x = np.array(data.draw(st.lists(st.integers(-3, 3), min_size=rows * cols, max_size=rows * cols)),
                 np.float32).reshape(rows, cols)
    with tf.Graph().as_default():
        ph = tf.placeholder(tf.float32, [None, cols])
        values, indices = tf.nn.top_k(ph, k)
        with tf.Session() as sess:
            got_v, got_i = sess.run([values, indices], {ph: x})
    want_v, want_i = _top_k_numpy(x, k)
    np.testing.assert_array_equal(got_v, want_v)
    np.testing.assert_array_equal(got_i, want_i)


@settings(max_examples=10, deadline=None, suppress_health_check=list(HealthCheck))
@given(shape=st.lists(st.integers(1, 4), min_size=1, max_size=3), data=st.data())
def test_gather_nd_and_scatter_nd_match_numpy(shape, data):
    depth = data.draw(st.integers(1, len(shape)))
    count = data.draw(st.integers(1, 5))
    rows = np.array([[data.draw(st.integers(0, shape[k] - 1)) for k in range(depth)] for _ in range(count)],
                    np.int32)
    params = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    updates = np.arange(count * int(np.prod(shape[depth:])), dtype=np.float32).reshape(
        (count,) + tuple(shape[depth:])) + 1
    want_gather = np.stack([params[tuple(r)] for r in rows])
    want_scatter = np.zeros(shape, np.float32)
    want_update = params.copy()
    for r, u in zip(rows, updates):
        want_scatter[tuple(r)] += u
        want_update[tuple(r)] = u
    with tf.Graph().as_default():
        p = tf.placeholder(tf.float32, shape)
        i = tf.placeholder(tf.int32, [None, depth])
        u = tf.placeholder(tf.float32, [None] + list(shape[depth:]))
        fetches = [tf.gather_nd(p, i), tf.scatter_nd(i, u, shape), tf.tensor_scatter_update(p, i, u)]
        with tf.Session() as sess:
            got = sess.run(fetches, {p: params, i: rows, u: updates})
    np.testing.assert_array_equal(got[0], want_gather)
    np.testing.assert_array_equal(got[1], want_scatter)
    np.testing.assert_array_equal(got[2], want_update)


def test_gradients_numerically():
    """Finite differences in float64 for the differentiable ops added here."""
    rng = np.random.default_rng(0)
    x0 = rng.normal(size=(3, 4))
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float64, [3, 4])
        w = tf.constant(rng.normal(size=(3, 4)))
        top_v, _ = tf.nn.top_k(x, 2)
        y = (tf.reduce_sum(tf.gather_nd(x, [[0, 1], [2, 3], [0, 1]]) ** 2)
             + tf.reduce_sum(tf.tensor_scatter_update(x, [[1, 1]], [5.0]) * w)
             + tf.reduce_sum(tf.tensor_scatter_sub(x, [[2]], [[1.0, 2.0, 3.0, 4.0]]) * w)
             + tf.reduce_sum(top_v * tf.constant([[1.0, 2.0]], tf.float64))
             + tf.reduce_sum(tf.matrix_band_part(x, 1, 0) * w) + tf.reduce_sum(tf.matrix_diag_part(x) ** 2)
             + tf.reduce_sum(tf.matrix_set_diag(x, tf.matrix_diag_part(x) * 2.0) * w)
             + tf.norm(x) + tf.reduce_sum(tf.norm(x, ord=1, axis=1)) + tf.reduce_sum(tf.check_numerics(x, "x") * w))
        g, = tf.gradients(y, x)
        with tf.Session() as sess:
            analytic = sess.run(g, {x: x0})
            numeric = np.zeros_like(x0)
            eps = 1e-6
            for index in np.ndindex(x0.shape):
                up, down = x0.copy(), x0.copy()
                up[index] += eps
                down[index] -= eps
                numeric[index] = (sess.run(y, {x: up}) - sess.run(y, {x: down})) / (2 * eps)
    np.testing.assert_allclose(analytic, numeric, rtol=1e-5, atol=1e-5)


def test_ceil_division_of_an_exact_multiple_is_the_quotient():
    """top_k's gradient builds range(0, n * last, last): its size ceil(5*s0 / 5) must be s0."""
    from tfc.ir.dims import dim_ceildiv, dim_mul, sym

    s0 = sym("s0")
    assert dim_ceildiv(dim_mul(s0, 5), 5) == s0
    assert dim_ceildiv(dim_mul(s0, 6), dim_mul(s0, 3)) == 2
    assert dim_ceildiv(7, 2) == 4


def test_add_check_numerics_ops_builds_tfs_chain_and_checks_every_float():
    import tfc.compat.v1 as tf

    with tf.Graph().as_default() as graph:
        x = tf.placeholder(tf.float32, [None], name="x")
        y = tf.log(x, name="y")
        z = tf.reduce_sum(y * 2.0, name="z")
        tf.cast(x, tf.int32, name="n")  # not a float: not checked
        check = tf.add_check_numerics_ops()
        checks = [(op.name, [t.name for t in op.inputs], [c.name for c in op.control_inputs], op.get_attr("message"))
                  for op in graph.get_operations() if op.type == "CheckNumerics"]
        with tf.Session() as sess:
            value = sess.run([z, check], {x: [1.0, 2.0]})[0]
            with pytest.raises(tf.errors.InvalidArgumentError, match=r"y:0 : Tensor had NaN values"):
                sess.run(check, {x: [1.0, -1.0]})
    # what TF 2.21's tf.compat.v1.add_check_numerics_ops builds for the same graph
    assert (check.name, check.type, [c.name for c in check.control_inputs]) == ("group_deps", "NoOp",
                                                                                 ["CheckNumerics_4"])
    assert checks == [("CheckNumerics", ["x:0"], [], b"x:0"), ("CheckNumerics_1", ["y:0"], ["CheckNumerics"], b"y:0"),
                      ("CheckNumerics_2", ["mul/y:0"], ["CheckNumerics_1"], b"mul/y:0"),
                      ("CheckNumerics_3", ["mul:0"], ["CheckNumerics_2"], b"mul:0"),
                      ("CheckNumerics_4", ["z:0"], ["CheckNumerics_3"], b"z:0")]
    assert value == pytest.approx(np.log(2.0) * 2)


def test_add_check_numerics_ops_refuses_control_flow():
    import tfc.compat.v1 as tf

    with tf.Graph().as_default():
        p = tf.placeholder(tf.bool, [])
        tf.cond(p, lambda: tf.constant(1.0), lambda: tf.constant(2.0))
        with pytest.raises(ValueError, match=r"not compatible with TensorFlow control flow operations"):
            tf.add_check_numerics_ops()
