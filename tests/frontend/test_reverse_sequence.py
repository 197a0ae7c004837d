"""tf.reverse_sequence (the ReverseSequence op): TensorFlow's graph and shape errors, values
against numpy for random shapes, axes, dtypes and lengths, its gradient (ReverseSequence of
the gradient, as TF's array_grad), and the kernel's run-time errors on bad lengths
(fixtures: tests/fixtures/make_tf_assert_graphs.py, made with TF 2.21 in TF1 mode)."""
import importlib.util
import json
import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tfc.compat.v1 as tf
from tfc.frontend.errors import InvalidArgumentError

_FIXTURES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fixtures")
_spec = importlib.util.spec_from_file_location("make_tf_assert_graphs",
                                               os.path.join(_FIXTURES, "make_tf_assert_graphs.py"))
programs = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(programs)  # the program builders; TensorFlow is imported only by its main()

with open(os.path.join(_FIXTURES, "assert_graphs.json")) as _f:
    FIXTURE = json.load(_f)

PROGRAMS = ["reverse_sequence_batch_major", "reverse_sequence_time_major"]


def reference(x: np.ndarray, lengths, seq_axis: int, batch_axis: int) -> np.ndarray:
    """numpy: the first lengths[b] entries along seq_axis of slice b along batch_axis reversed."""
    moved = np.moveaxis(x, (batch_axis, seq_axis), (0, 1))
    out = moved.copy()
    for b, length in enumerate(lengths):
        out[b, :length] = moved[b, :length][::-1]
    return np.moveaxis(out, (0, 1), (batch_axis, seq_axis))


# -- TensorFlow's graph, values and errors -------------------------------------------------------------
@pytest.mark.parametrize("name", PROGRAMS)
def test_graph_matches_tensorflow(name):
    """Node for node outside the gradient (TF 2.x's own gradient graphs of Sum and Mul differ
    from TF 1.15's); the gradient of ReverseSequence is TF's."""
    with tf.Graph().as_default() as graph:
        programs.PROGRAMS[name](tf)
    got = [n for n in programs.record_graph(graph) if not n["name"].startswith("gradients/")]
    nodes = FIXTURE["programs"][name]["nodes"]
    expected = [n for n in nodes if not n["name"].startswith("gradients/")]
    assert got == expected
    gradient = [n for n in nodes if n["op"] == "ReverseSequence" and n["name"].startswith("gradients/")]
    assert [(n["name"], n["inputs"][1], n["attrs"]) for n in gradient] == [
        (n["name"], n["inputs"][1], n["attrs"]) for n in programs.record_graph(graph)
        if n["op"] == "ReverseSequence" and n["name"].startswith("gradients/")]


def test_the_fixture_has_the_gradient_and_the_attrs():
    nodes = {n["name"]: n for n in FIXTURE["programs"]["reverse_sequence_batch_major"]["nodes"]}
    assert nodes["gradients/ReverseSequence_grad/ReverseSequence"]["inputs"][1] == "lengths"
    assert nodes["ReverseSequence"]["attrs"] == {"T": {"type": "float32"}, "Tlen": {"type": "int64"},
                                                 "batch_dim": {"i": 0}, "seq_dim": {"i": 1}}
    time_major = {n["name"]: n for n in FIXTURE["programs"]["reverse_sequence_time_major"]["nodes"]}
    assert time_major["ReverseSequence/seq_lengths"]["dtypes"] == ["int32"]


@pytest.mark.parametrize("name", PROGRAMS)
def test_runs_match_tensorflow(name):
    """Values, the gradient, and TF's kernel errors ("seq_lens(1) < 0") naming the op."""
    with tf.Graph().as_default() as graph:
        targets, feeds = programs.PROGRAMS[name](tf)
        expected = FIXTURE["programs"][name]["runs"]
        with tf.Session() as sess:
            for label, target in targets.items():
                for feed_label, feed in feeds.items():
                    try:
                        got = {"values": programs.as_json(sess.run(target, programs.feed_dict(graph, feed)))}
                    except InvalidArgumentError as e:
                        message, _, named = e.message.rpartition(" (in '")
                        got = {"error": type(e).__name__, "message": message, "node": named[:-2]}
                    assert got == expected[label][feed_label], (label, feed_label)


@pytest.mark.parametrize("name", sorted(n for n in programs.ERRORS if n.startswith("err_reverse_sequence")))
def test_shape_errors_are_tensorflows(name):
    """TF's shape-function message; the op description after it is TF 1.15's format."""
    expected = FIXTURE["errors"][name]
    with tf.Graph().as_default():
        with pytest.raises(ValueError) as caught:
            programs.ERRORS[name](tf)
    core = expected["message"].split(" for '{{node ")[0]
    assert str(caught.value).startswith(core + " for 'ReverseSequence' (op: 'ReverseSequence') with input shapes: ")
    assert str(caught.value).endswith(expected["message"].split(" with input shapes: ")[1])


def test_batch_dim_equal_to_seq_dim_fails_when_it_runs():
    """TF's shape function accepts it (when the dims merge); its kernel does not."""
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [3, 3], name="x")
        r = tf.reverse_sequence(x, [1, 2, 3], seq_axis=1, batch_axis=1)
        assert r.shape.as_list() == [3, 3]
        with tf.Session() as sess:
            with pytest.raises(InvalidArgumentError) as caught:
                sess.run(r, {x: np.zeros((3, 3), np.float32)})
            assert caught.value.message == "batch_dim == seq_dim == 1 (in 'ReverseSequence')"


def test_constant_lengths_are_checked_while_compiling_and_still_fail_when_run():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [2, 4], name="x")
        good = tf.reverse_sequence(x, tf.constant([3, 4], tf.int64), seq_axis=1)
        bad = tf.reverse_sequence(x, [1, 9], seq_axis=1)
        value = np.arange(8, dtype=np.float32).reshape(2, 4)
        with tf.Session() as sess:
            np.testing.assert_array_equal(sess.run(good, {x: value}), reference(value, [3, 4], 1, 0))
            with pytest.raises(InvalidArgumentError) as caught:
                sess.run(bad, {x: value})
            assert caught.value.message == "seq_lens(1) > input.dims(1) (in 'ReverseSequence_1')"


# -- random shapes against numpy ----------------------------------------------------------------------
@st.composite
def cases(draw):
    rank = draw(st.integers(2, 4))
    shape = draw(st.lists(st.integers(0, 4), min_size=rank, max_size=rank))
    seq_axis, batch_axis = draw(st.permutations(range(rank)))[:2]
    lengths = [draw(st.integers(0, shape[seq_axis])) for _ in range(shape[batch_axis])]
    dtype = draw(st.sampled_from([np.float32, np.int32, np.float64, np.bool_]))
    length_dtype = draw(st.sampled_from([np.int32, np.int64]))
    return shape, seq_axis, batch_axis, np.array(lengths, length_dtype), dtype


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=cases(), data=st.data())
def test_values_match_numpy(case, data):
    shape, seq_axis, batch_axis, lengths, dtype = case
    rng = np.random.default_rng(data.draw(st.integers(0, 2 ** 16)))
    x = (rng.standard_normal(shape) * 10).astype(dtype)
    with tf.Graph().as_default():
        known = data.draw(st.booleans())  # a static shape, or every dim known only at run time
        xp = tf.placeholder(tf.as_dtype(dtype), shape if known else [None] * len(shape), name="x")
        lp = tf.placeholder(tf.as_dtype(lengths.dtype), [None], name="lengths")
        r = tf.reverse_sequence(xp, lp, seq_axis=seq_axis, batch_axis=batch_axis)
        with tf.Session() as sess:
            got = sess.run(r, {xp: x, lp: lengths})
    np.testing.assert_array_equal(got, reference(x, lengths, seq_axis, batch_axis))


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=cases(), data=st.data())
def test_gradient_matches_numpy(case, data):
    """d sum(w * reverse_sequence(x)) / dx = reverse_sequence(w): each position's weight goes
    back to the position it came from."""
    shape, seq_axis, batch_axis, lengths, _ = case
    rng = np.random.default_rng(data.draw(st.integers(0, 2 ** 16)))
    x = rng.standard_normal(shape)
    w = rng.standard_normal(shape)
    with tf.Graph().as_default():
        xp = tf.placeholder(tf.float64, shape, name="x")
        lp = tf.placeholder(tf.as_dtype(lengths.dtype), [None], name="lengths")
        loss = tf.reduce_sum(tf.constant(w) * tf.reverse_sequence(xp, lp, seq_axis=seq_axis, batch_axis=batch_axis))
        (grad,) = tf.gradients(loss, [xp])
        with tf.Session() as sess:
            got = sess.run(grad, {xp: x, lp: lengths})
    np.testing.assert_allclose(got, reference(w, lengths, seq_axis, batch_axis), rtol=1e-12)
    # and numerically, through numpy's formula
    eps, flat = 1e-6, x.reshape(-1)
    for i in range(min(flat.size, 6)):
        up, down = flat.copy(), flat.copy()
        up[i] += eps
        down[i] -= eps
        numeric = (np.sum(w * reference(up.reshape(shape), lengths, seq_axis, batch_axis))
                   - np.sum(w * reference(down.reshape(shape), lengths, seq_axis, batch_axis))) / (2 * eps)
        assert abs(numeric - got.reshape(-1)[i]) < 1e-6
