"""Sparse ops (tf.sparse.*, the TF1 tf.sparse_* names, tf.string_split / tf.strings.split,
VarLenFeature parsing, tf.nn.embedding_lookup_sparse) against TensorFlow: the values,
gradients and static shapes of tests/fixtures/sparse_ops.json (made by
tests/fixtures/make_sparse_fixture.py with TF 2.21), the node types TF builds, its graph
and kernel errors; which ops are compiled and which run on the host; compiled programs
against the IR evaluator."""
import importlib.util
import json
import os

import numpy as np
import pytest

import tfc.compat.v1 as tf
from tfc.frontend.errors import InvalidArgumentError
from tfc.ir.evaluator import evaluate
from tfc.passes.lower import FeedSpec, lower_graph

_FIXTURES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fixtures")
_spec = importlib.util.spec_from_file_location("make_sparse_fixture", os.path.join(_FIXTURES, "make_sparse_fixture.py"))
programs = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(programs)  # the program builders; TensorFlow is imported only by its main()

with open(os.path.join(_FIXTURES, "sparse_ops.json")) as _f:
    FIXTURE = json.load(_f)

# Programs whose nodes outside gradients/ are TF's, name for name and type for type.
# (embedding: tfc combines with a SparseTensorDenseMatMul where TF has segment sums;
# sparse_tensor_basics/parse_var_len are compared too.)
_SAME_NODES = ["sparse_tensor_basics", "to_dense", "fed_dense_shape", "reorder", "reshape", "add", "reduce_sum",
               "matmul", "retain_fill_concat", "cwise", "strings", "parse_var_len", "to_dense_gradient"]


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
    np.testing.assert_allclose(got, want, rtol=2e-6, atol=1e-6, err_msg=what)


def _build(name):
    graph = tf.Graph()
    with graph.as_default():
        fetches = programs.PROGRAMS[name](tf)
    return graph, fetches


def test_fixture_covers_every_program():
    assert sorted(FIXTURE["values"]) == sorted(programs.PROGRAMS)
    assert sorted(FIXTURE["errors"]) == sorted(programs.ERRORS)
    assert sorted(FIXTURE["run_errors"]) == sorted(programs.RUN_ERRORS)


@pytest.mark.parametrize("name", sorted(programs.PROGRAMS))
def test_values_and_shapes_match_tensorflow(name):
    graph, fetches = _build(name)
    assert [[k, programs.shape_json(t.shape)] for k, t in fetches] == FIXTURE["shapes"][name]
    with graph.as_default(), tf.Session() as sess:
        values = sess.run([t for _, t in fetches], programs.feeds_for(graph))
    for (key, _), value, (want_key, entry) in zip(fetches, values, FIXTURE["values"][name]):
        assert key == want_key
        what = f"{name}: {key}"
        if "sparse" in entry:
            assert isinstance(value, tf.SparseTensorValue), what
            for part, want in zip(value, entry["sparse"]):
                _check_array(part, want, what)
        else:
            _check_array(value, entry, what)


@pytest.mark.parametrize("name", _SAME_NODES)
def test_nodes_match_tensorflow(name):
    graph, _ = _build(name)
    got = [[op.name, op.type] for op in graph.get_operations() if not op.name.startswith("gradients")]
    want = [n for n in FIXTURE["nodes"][name] if not n[0].startswith("gradients")]
    assert got == want


def test_gradients_use_tensorflows_gradient_ops():
    graph, _ = _build("add")
    types = {op.type for op in graph.get_operations() if op.name.startswith("gradients")}
    assert {"SparseAddGrad", "GatherNd"} <= types
    graph, _ = _build("matmul")
    types = [op.type for op in graph.get_operations() if op.name.startswith("gradients")]
    assert types.count("SparseTensorDenseMatMul") == 3 and "BatchMatMulV2" in types
    graph, _ = _build("retain_fill_concat")
    assert "SparseFillEmptyRowsGrad" in {op.type for op in graph.get_operations()}


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
    if name == "dense_ids":  # TF names its own class of symbolic tensors
        assert message == "sp_ids must be SparseTensor, got <class 'tfc.frontend.graph.Tensor'>"
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


# -- compiled, or on the host ---------------------------------------------------------------------------
def _forced_host(sess) -> set:
    return {op.type for plan in sess._run_plans.values() for op in plan.forced_host}


def test_static_shapes_compile_and_fed_shapes_run_on_the_host():
    with tf.Graph().as_default():
        sp, i, v = programs._fed_sparse(tf)
        fetches = [tf.sparse.to_dense(sp), tf.sparse.reduce_sum(sp, 1),
                   tf.sparse_tensor_dense_matmul(sp, tf.ones([4, 2])),
                   tf.sparse.reorder(sp).values, tf.sparse.reshape(sp, [2, 6]).indices,
                   tf.sparse.add(sp, tf.ones([3, 4]))]
        feeds = {i: programs.FEEDS["i"], v: programs.FEEDS["v"]}
        with tf.Session() as sess:
            compiled = sess.run(fetches, feeds)
            assert _forced_host(sess) == set()
        ph = tf.sparse_placeholder(tf.float32, shape=[None, 4])  # the dense shape is fed: its values at run time
        on_host = [tf.sparse.to_dense(ph), tf.sparse.reduce_sum(ph, 1),
                   tf.sparse_tensor_dense_matmul(ph, tf.ones([4, 2])),
                   tf.sparse.reorder(ph).values, tf.sparse.reshape(ph, [2, 6]).indices,
                   tf.sparse.add(ph, tf.ones([3, 4]))]
        with tf.Session() as sess:
            hosted = sess.run(on_host, {ph: (programs.FEEDS["i"], programs.FEEDS["v"], [3, 4])})
            assert _forced_host(sess) == {"SparseToDense", "SparseReduceSum", "SparseTensorDenseMatMul"}
        unknown_rank = tf.sparse_placeholder(tf.float32)  # indices [?, ?]: the rank too is known at run time only
        with tf.Session() as sess:
            reordered = sess.run(tf.sparse.reorder(unknown_rank), {unknown_rank: (programs.FEEDS["iu"],
                                                                                  programs.FEEDS["vu"], [3, 4])})
            assert _forced_host(sess) == {"SparseReorder"}
    np.testing.assert_array_equal(reordered.indices, [[0, 1], [0, 1], [1, 0], [2, 3]])
    np.testing.assert_array_equal(reordered.values, [2, 4, 3, 1])
    for a, b in zip(compiled, hosted):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(compiled[0], [[0, 1.5, 0, 0], [-2, 0, 0, 0], [0, 0, 0, 4]])
    np.testing.assert_array_equal(compiled[2], [[1.5, 1.5], [-2, -2], [4, 4]])
    np.testing.assert_array_equal(compiled[4], [[0, 1], [0, 4], [1, 5]])


def _compiled_and_evaluated(fetches, feeds):
    with tf.Session() as sess:
        compiled = sess.run(fetches, feeds)
    specs = [FeedSpec(t, t.dtype, np.shape(value)) for t, value in feeds.items()]
    lowered = lower_graph(fetches, [], specs)
    args = [np.asarray(feeds[t], dtype=t.dtype.as_numpy_dtype) for t in lowered.feeds]
    return compiled, evaluate(lowered.module, args)


def test_compiled_matches_the_evaluator():
    with tf.Graph().as_default():
        i = tf.placeholder(tf.int64, [None, 2])
        v = tf.placeholder(tf.float32, [None])
        b = tf.placeholder(tf.float32, [4, 3])
        ns = tf.placeholder(tf.int64, [2])
        sp = tf.SparseTensor(i, v, [3, 4])
        other = tf.SparseTensor(tf.constant([[0, 0], [2, 3]], tf.int64), [1.0, 2.0], [3, 4])
        fetches = [tf.sparse.to_dense(sp, validate_indices=False), tf.sparse.reduce_sum(sp, 0, keepdims=True),
                   tf.sparse_tensor_dense_matmul(sp, b),
                   tf.sparse_tensor_dense_matmul(sp, tf.transpose(b), adjoint_b=True),
                   tf.sparse.reorder(sp).indices, tf.sparse.reorder(sp).values, tf.sparse.reshape(sp, ns).indices,
                   tf.sparse.add(sp, tf.zeros([3, 4]) + 1.0), tf.sparse_concat(1, [sp, other]).indices,
                   (sp * tf.constant([1.0, 2.0, 3.0, 4.0])).values]
        feeds = {i: np.array([[2, 1], [0, 3], [0, 0], [1, 2]], np.int64),
                 v: np.array([1.0, -2.0, 3.0, 0.5], np.float32),
                 b: np.arange(12, dtype=np.float32).reshape(4, 3), ns: np.array([-1, 2], np.int64)}
        compiled, evaluated = _compiled_and_evaluated(fetches, feeds)
    for c, e in zip(compiled, evaluated):
        np.testing.assert_allclose(c, e, rtol=1e-6)
    np.testing.assert_array_equal(compiled[0], [[3, 0, 0, -2], [0, 0, 0.5, 0], [0, 1, 0, 0]])  # unvalidated to_dense
    np.testing.assert_array_equal(compiled[4], [[0, 0], [0, 3], [1, 2], [2, 1]])  # reordered indices
    np.testing.assert_array_equal(compiled[5], [3, -2, 0.5, 1])
    np.testing.assert_array_equal(compiled[6], [[4, 1], [1, 1], [0, 0], [3, 0]])  # reshaped to [6, 2]


def test_every_sparse_entry_has_a_gradient_or_none_and_a_way_to_run():
    from tfc.frontend.registry import lookup_op_type, registered_op_types

    names = [n for n in registered_op_types() if lookup_op_type(n).__module__.endswith((".sparse_ops",
                                                                                     ".string_split_ops"))]
    assert len(names) == 15
    for name in names:
        entry = lookup_op_type(name)
        assert (entry.gradient is not None) != entry.not_differentiable, name
        assert entry.lower is not None or getattr(entry, "host_only", False), name
        assert not getattr(entry, "host_fallback", False) or entry.host is not None, name
