"""The rest of the tf.sparse namespace (softmax, slice, split, transpose, maximum/minimum,
merge, to_indicator, reduce_max(_sparse), reduce_sum_sparse, cross/cross_hashed,
expand_dims, eye, reset_shape, the sparse segment reductions) against TensorFlow: the
values, gradients and static shapes of tests/fixtures/sparse_extra.json (made by
tests/fixtures/make_sparse_extra_fixture.py with TF 2.21), TF's node names and types, its
graph and kernel errors; which ops are compiled and which run on the host."""
import functools
import importlib.util
import json
import os
import re

import numpy as np
import pytest

import tfc.compat.v1 as tf
from tfc.frontend.errors import InvalidArgumentError

_FIXTURES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fixtures")
_spec = importlib.util.spec_from_file_location("make_sparse_extra_fixture",
                                               os.path.join(_FIXTURES, "make_sparse_extra_fixture.py"))
programs = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(programs)  # the program builders; TensorFlow is imported only by its main()

with open(os.path.join(_FIXTURES, "sparse_extra.json")) as _f:
    FIXTURE = json.load(_f)

# Programs whose nodes are TF's, name for name and type for type: all of them, the
# gradients of the sparse ops included, but tf.gradients' own nodes (its grad_ys) and the
# gradients of the Sum and Mul that make the losses, where TF 2.21 differs from TF 1.15.
_SAME_NODES = sorted(set(programs.PROGRAMS) - {"shape_ops", "reset_fed"})


def _compared(nodes):
    types = dict(nodes)
    out = []
    for name, op_type in nodes:
        if name.startswith("gradients"):
            rest = name.split("/", 1)[1]
            if "_grad/" not in rest or types.get(rest[:rest.index("_grad/")]) in ("Sum", "Mul", "AddV2"):
                continue
        out.append([name, op_type])
    return out


def _array(entry):
    if entry["dtype"] == "bytes":
        flat = np.empty(len(entry["value"]), dtype=object)
        flat[:] = [v.encode("latin-1") for v in entry["value"]]
        return flat.reshape(entry["shape"])
    flat = [np.nan if v is None else v for v in entry["value"]]
    return np.array(flat, dtype=entry["dtype"]).reshape(entry["shape"])


def _check_array(got, entry, what):
    want = _array(entry)
    got = np.asarray(got)
    assert got.shape == want.shape, (what, got, want)
    if want.dtype == object:
        assert got.tolist() == want.tolist(), what
        return
    assert got.dtype == want.dtype, (what, got.dtype, want.dtype)
    if want.dtype.kind in "iub":
        np.testing.assert_array_equal(got, want, err_msg=what)
    else:
        np.testing.assert_allclose(got, want, rtol=2e-6, atol=1e-6, err_msg=what)


def _build(name):
    graph = tf.Graph()
    with graph.as_default():
        fetches = programs.PROGRAMS[name](tf)
    return graph, fetches


@functools.lru_cache(maxsize=None)
def _run(name):
    """(graph, fetches, values, op types forced to the host), once per program."""
    graph, fetches = _build(name)
    with graph.as_default(), tf.Session() as sess:
        values = sess.run([t for _, t in fetches], programs.feeds_for(graph))
        forced = {op.type for plan in sess._run_plans.values() for op in plan.forced_host}
    return graph, fetches, values, forced


def test_fixture_covers_every_program():
    assert sorted(FIXTURE["values"]) == sorted(programs.PROGRAMS)
    assert sorted(FIXTURE["errors"]) == sorted(programs.ERRORS)
    assert sorted(FIXTURE["run_errors"]) == sorted(programs.RUN_ERRORS)


@pytest.mark.parametrize("name", sorted(programs.PROGRAMS))
def test_values_shapes_and_nodes_match_tensorflow(name):
    graph, fetches, values, _ = _run(name)
    assert [[k, programs.base.shape_json(t.shape)] for k, t in fetches] == FIXTURE["shapes"][name]
    for (key, _), value, (want_key, entry) in zip(fetches, values, FIXTURE["values"][name]):
        assert key == want_key
        what = f"{name}: {key}"
        if "sparse" in entry:
            assert isinstance(value, tf.SparseTensorValue), what
            for part, want in zip(value, entry["sparse"]):
                _check_array(part, want, what)
        else:
            _check_array(value, entry, what)
    if name in _SAME_NODES:
        got = _compared([[op.name, op.type] for op in graph.get_operations()])
        assert got == _compared(FIXTURE["nodes"][name])


def test_shape_ops_nodes_match_tensorflow_1_15():
    """expand_dims, eye and reset_shape build TF's nodes, but where TF 2.21 and 1.15 differ
    in the ops they call (tfc builds 1.15's): tf.zeros of a list holding a tensor adds
    ``zeros/mul`` and ``zeros/Less`` (1.15's np.prod of the list), ones_like names its shape
    ``ones_like/Shape``, tf.add is an ``Add``."""
    graph, _ = _build("shape_ops")
    got = []
    for op in graph.get_operations():
        if re.search(r"/zeros/(mul|Less)(/y)?$", op.name):
            continue
        name = op.name.replace("ones_like/Shape", "ones_like/Shape/shape_as_tensor")
        got.append([name, "AddV2" if op.type == "Add" else op.type])
    assert got == FIXTURE["nodes"]["shape_ops"]
    assert sum(bool(re.search(r"/zeros/(mul|Less)$", op.name)) for op in graph.get_operations()) == 6


def test_reset_shape_of_a_fed_shape_asserts_as_tensorflow_1_15():
    """A new shape checked at run time: TF's tf.assert_equal (1.15's, in ``assert_equal``;
    2.21 builds its own in ``assert_equal_1``) and tf.assert_less_equal, then the rest."""
    graph, _ = _build("reset_fed")
    got = [[op.name, op.type] for op in graph.get_operations()]
    want = FIXTURE["nodes"]["reset_fed"]
    assert [n for n in got if not n[0].startswith("assert_equal/")] == \
        [n for n in want if not n[0].startswith("assert_equal_1/")]
    assert ["assert_equal/Assert/Assert", "Assert"] in got
    _, fetches, values, _ = _run("reset_fed")
    np.testing.assert_array_equal(values[0].dense_shape, [4, 4])
    np.testing.assert_array_equal(values[1], [[1, 0, 2, 0], [0, 3, 0, 0], [-1, 0.5, 0, 2], [0, 0, 0, 0]])


def test_specific_values():
    """A few values spelled out (the fixture holds them all)."""
    _, fetches, values, _ = _run("softmax")
    out = dict(zip([k for k, _ in fetches], values))
    np.testing.assert_allclose(out["s"].values, [0.26894143, 0.7310586, 1.0, 0.03911257, 0.17529039, 0.785597],
                               rtol=1e-6)
    # the kernel writes its outputs in the reordered order, next to the input's indices
    np.testing.assert_allclose(out["s_un"].values, [0.11920291, 0.880797, 0.880797, 0.11920291], rtol=1e-6)
    _, fetches, values, _ = _run("maximum_minimum")
    out = dict(zip([k for k, _ in fetches], values))
    np.testing.assert_array_equal(out["mx"].indices, [[0, 0], [0, 2], [1, 0], [1, 1], [2, 0], [2, 1], [2, 3]])
    np.testing.assert_array_equal(out["mx"].values, [5, 2, 0, 3, 0, 1, 2])  # a missing entry counts as 0
    _, fetches, values, _ = _run("cross")
    out = dict(zip([k for k, _ in fetches], values))
    assert out["c"].values.tolist() == [b"a_X_d_X_f", b"b_X_e_X_g", b"c_X_e_X_g"]
    assert out["h"].values.tolist() == [5684865645872741371, 1392610987527938559, 6629649657679214674]
    assert out["h_buckets"].values.tolist() == [17, 36, 57]


def test_compiled_ops_and_host_ops():
    """Static shapes compile SparseSoftmax, SparseReduceMax, SparseSliceGrad,
    SparseDenseCwiseAdd and a sparse segment sum of constant ids; a fed dense shape or fed
    segment ids run them on the host, with the same results."""
    from tfc.runtime.host import runs_on_host

    for name, host_only in [("softmax", set()), ("reduce_max", set()), ("slice", {"SparseSlice"}),
                            ("segments", set())]:
        graph, _ = _build(name)
        on_host = {op.type for op in graph.get_operations() if runs_on_host(op)}
        assert {t for t in on_host if t.startswith("Sparse")} == host_only, name
    _, _, _, forced = _run("softmax")
    assert forced == set()
    _, _, _, forced = _run("segments")
    assert forced == {"SparseSegmentSum", "SparseSegmentMean", "SparseSegmentSqrtN", "SparseSegmentSumWithNumSegments",
                      "SparseSegmentMeanWithNumSegments", "SparseSegmentSqrtNWithNumSegments"}  # fed ids
    graph, _ = _build("segments")  # s_const (constant ids) and the gradients are compiled
    assert [op.name for op in graph.get_operations() if op.type == "SparseSegmentSum"] == ["SparseSegmentSum",
                                                                                         "SparseSegmentSum_1"]
    with tf.Graph().as_default():
        i = tf.placeholder(tf.int64, [None, 2])
        v = tf.placeholder(tf.float32, [None])
        ds = tf.placeholder(tf.int64, [2])
        feeds = {i: programs.FEEDS["i"], v: programs.FEEDS["v"], ds: [3, 4]}
        static = tf.SparseTensor(i, v, [3, 4])
        fed = tf.SparseTensor(i, v, ds)
        fetches = [tf.sparse.softmax(static).values, tf.sparse.reduce_max(static, 1),
                   tf.sparse.reduce_max(static, 0, keepdims=True)]
        hosted = [tf.sparse.softmax(fed).values, tf.sparse.reduce_max(fed, 1),
                  tf.sparse.reduce_max(fed, 0, keepdims=True)]
        with tf.Session() as sess:
            compiled = sess.run(fetches, feeds)
            assert {op.type for plan in sess._run_plans.values() for op in plan.forced_host} == set()
        with tf.Session() as sess:
            on_host = sess.run(hosted, feeds)
            assert {op.type for plan in sess._run_plans.values() for op in plan.forced_host} == {"SparseReduceMax"}
    for a, b in zip(compiled, on_host):
        np.testing.assert_allclose(a, b, rtol=1e-6)
    np.testing.assert_array_equal(compiled[1], [2, 3, 2])
    np.testing.assert_array_equal(compiled[2], [[1, 3, 2, 2]])


def test_compiled_matches_the_evaluator():
    from tfc.frontend.op_helper import apply_op
    from tfc.ir.evaluator import evaluate
    from tfc.passes.lower import FeedSpec, lower_graph

    with tf.Graph().as_default():
        i = tf.placeholder(tf.int64, [None, 2])
        v = tf.placeholder(tf.float32, [None])
        out_i = tf.placeholder(tf.int64, [None, 2])
        g = tf.placeholder(tf.float32, [None])
        data = tf.placeholder(tf.float32, [4, 3])
        idx = tf.placeholder(tf.int32, [None])
        sp = tf.SparseTensor(i, v, [3, 4])
        slice_grad = apply_op("SparseSliceGrad", [g, i, tf.constant([1, 0], tf.int64), out_i]).outputs[0]
        fetches = [tf.sparse.softmax(sp).values, tf.sparse.reduce_max(sp, 1), slice_grad,
                   tf.sparse.segment_mean(data, idx, tf.constant([0, 0, 2])),
                   tf.gradients(tf.reduce_sum(tf.sparse.segment_sqrt_n(data, idx, tf.constant([0, 0, 2]))), data)[0]]
        feeds = {i: np.array([[2, 1], [0, 3], [1, 0], [2, 3], [1, 2]], np.int64),
                 v: np.array([1.0, -2.0, 3.0, 0.5, 4.0], np.float32),
                 out_i: np.array([[0, 0], [1, 3], [0, 2]], np.int64), g: np.array([10.0, 20.0, 30.0], np.float32),
                 data: np.arange(12, dtype=np.float32).reshape(4, 3), idx: np.array([3, 1, 1], np.int32)}
        with tf.Session() as sess:
            compiled = sess.run(fetches, feeds)
        specs = [FeedSpec(t, t.dtype, np.shape(value)) for t, value in feeds.items()]
        lowered = lower_graph(fetches, [], specs)
        args = [np.asarray(feeds[t], dtype=t.dtype.as_numpy_dtype) for t in lowered.feeds]
        evaluated = evaluate(lowered.module, args)
    for c, e in zip(compiled, evaluated):
        np.testing.assert_allclose(c, e, rtol=1e-6)
    # reordered: [0,3] | [1,0] [1,2] | [2,1] [2,3], each row's softmax
    np.testing.assert_allclose(compiled[0], [1.0, 0.26894142, 0.73105858, 0.62245933, 0.37754067], rtol=1e-6)
    np.testing.assert_array_equal(compiled[1], [-2, 4, 1])  # a row's max, negative or not
    np.testing.assert_array_equal(compiled[2], [0, 0, 10, 20, 30])  # [1,0] [2,3] [1,2]: the window's entries
    np.testing.assert_allclose(compiled[3], [[6, 7, 8], [0, 0, 0], [3, 4, 5]])
    np.testing.assert_allclose(compiled[4], [[0, 0, 0], [1 + 2 ** -0.5] * 3, [0, 0, 0], [2 ** -0.5] * 3], rtol=1e-6)


def test_tensorflows_graph_def_imports_and_runs():
    """A GraphDef TF 2.21 wrote with these ops (their attrs included) imports and computes
    TF's values."""
    import base64

    entry = FIXTURE["imported"]
    graph_def = tf.GraphDef()
    graph_def.ParseFromString(base64.b64decode(entry["graph_def"]))
    with tf.Graph().as_default():
        tf.import_graph_def(graph_def, name="")
        with tf.Session() as sess:
            values = sess.run(entry["fetches"])
    for name, value, want in zip(entry["fetches"], values, entry["values"]):
        _check_array(value, want, name)
    assert values[4].tolist() == [1484974617627318892, 5470948523078679805]
    assert values[5].tolist() == [b"a_X_7", b"b_X_8"]


def _core_message(message: str) -> str:
    return message.split(" for '")[0]


@pytest.mark.parametrize("name", sorted(programs.ERRORS))
def test_graph_errors_match_tensorflow(name):
    expected = FIXTURE["errors"][name]
    with tf.Graph().as_default():
        with pytest.raises(Exception) as caught:
            programs.ERRORS[name](tf)
    assert type(caught.value).__name__ == expected["type"]
    message = str(caught.value)
    if name == "reduce_max_gradient":  # TF 1.15's message (TF 2.21 adds advice)
        assert message == "No gradient defined for operation 'SparseReduceMax' (op type: SparseReduceMax)"
        assert expected["message"].startswith("No gradient defined for operation'SparseReduceMax'")
        return
    assert _core_message(message) == _core_message(expected["message"])


@pytest.mark.parametrize("name", sorted(programs.RUN_ERRORS))
def test_run_errors_match_tensorflow(name):
    expected = FIXTURE["run_errors"][name]
    graph = tf.Graph()
    with graph.as_default():
        t = programs.RUN_ERRORS[name](tf)
        with tf.Session() as sess:
            with pytest.raises(InvalidArgumentError) as caught:
                sess.run(t, programs.feeds_for(graph))
    assert expected["type"] == "InvalidArgumentError"
    message = caught.value.message  # a compiled check names its op after TF's text, a host op raises TF's text
    assert message == expected["message"] or message.startswith(expected["message"] + " (in '"), (message, expected)


def test_namespace_is_complete_but_for_three_names():
    """Every TF1 tf.sparse name but SparseConditionalAccumulator, bincount (TF 2.3's) and
    mask (it takes IndexedSlices, which tfc does not have)."""
    from tfc._missing import NotImplementedYet, tf1_names

    missing = sorted(n for n in tf1_names()["sparse"] if not hasattr(tf.sparse, n))
    assert missing == ["SparseConditionalAccumulator", "bincount", "mask"]
    with pytest.raises(NotImplementedYet):
        tf.sparse.mask  # noqa: B018
    for name in ["sparse_softmax", "sparse_slice", "sparse_split", "sparse_transpose", "sparse_maximum",
                 "sparse_minimum", "sparse_merge", "sparse_reduce_max", "sparse_reduce_max_sparse",
                 "sparse_reduce_sum_sparse", "sparse_to_indicator", "sparse_reset_shape", "sparse_segment_sum",
                 "sparse_segment_mean", "sparse_segment_sqrt_n"]:
        assert getattr(tf, name) is getattr(tf.sparse, name[len("sparse_"):]), name


def test_every_new_entry_has_a_way_to_run():
    from tfc.frontend.registry import lookup_op_type, registered_op_types

    names = [n for n in registered_op_types() if lookup_op_type(n).__module__.endswith(".sparse_ops_extra")]
    assert len(names) == 21
    for name in names:
        entry = lookup_op_type(name)
        assert entry.lower is not None or getattr(entry, "host_only", False), name
        assert not getattr(entry, "host_fallback", False) or entry.host is not None, name
    no_gradient = {"SparseSplit", "SparseReduceMax", "SparseReduceMaxSparse", "SparseReduceSumSparse", "SparseCross",
                   "SparseCrossV2", "SparseSliceGrad", "SparseSegmentSumGrad", "SparseSegmentMeanGrad",
                   "SparseSegmentSqrtNGrad"}  # TF registers none: tf.gradients raises LookupError
    assert {n for n in names if lookup_op_type(n).gradient is None and not lookup_op_type(n).not_differentiable} \
        == no_gradient
