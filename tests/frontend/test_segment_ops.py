"""tf.math.segment_sum / mean / max / min / prod (compiled when the segment ids are known
while compiling, on the host when they are fed), their gradients, the gradient of
tf.dynamic_partition and tf.dynamic_stitch of run-time indices, against real TensorFlow
(tests/fixtures/segment_ops.json, made by tests/fixtures/make_segment_fixture.py), the
compiled reductions against the IR evaluator, and TF's kernel errors."""
import importlib.util
import json
import os

import numpy as np
import pytest

import tfc.compat.v1 as tf
from tfc.ir.evaluator import evaluate
from tfc.passes.lower import FeedSpec, lower_graph

_FIXTURES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fixtures")
_spec = importlib.util.spec_from_file_location("make_segment_fixture",
                                               os.path.join(_FIXTURES, "make_segment_fixture.py"))
cases = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(cases)  # the inputs; TensorFlow is imported only by its main()

with open(os.path.join(_FIXTURES, "segment_ops.json")) as _f:
    FIXTURE = json.load(_f)


@pytest.fixture(autouse=True)
def fresh_graph():
    with tf.Graph().as_default() as g:
        yield g


def _segment_graph(data, ids):
    fetches = {}
    for name in cases.OPS:
        y = getattr(tf.math, name)(data, ids)
        fetches[name] = (y, tf.gradients(tf.reduce_sum(y * tf.constant(cases.ramp([5, 3]))), [data])[0])
    return fetches


def _check_segments(values):
    for name, (y, g) in values.items():
        want = FIXTURE["segments"][name]
        np.testing.assert_allclose(y, want["value"], rtol=1e-6, err_msg=name)
        np.testing.assert_allclose(g, want["gradient"], rtol=1e-6, atol=1e-7, err_msg=name)


def test_static_ids_compile_and_match_tensorflow():
    """Constant ids: compiled (fed data, so nothing folds away), the evaluator agrees."""
    data = tf.placeholder(tf.float32, [None, 3])
    fetches = _segment_graph(data, tf.constant(cases.IDS))
    for name in cases.OPS:
        y = fetches[name][0]
        want = FIXTURE["segments"][name]
        assert (y.op.name, y.op.type, y.shape.as_list()) == (want["op"], want["type"], want["shape"])
    ints = {name: getattr(tf.math, name)(tf.placeholder_with_default(cases.INT_DATA, [None]),
                                         tf.constant(cases.INT_IDS)) for name in cases.OPS}
    with tf.Session() as sess:
        values, int_values = sess.run([fetches, ints], {data: cases.DATA})
        assert sess.cache_stats()["compiles"] == 1
    _check_segments(values)
    for name, y in int_values.items():
        assert y.dtype == np.int32
        np.testing.assert_array_equal(y, FIXTURE["int_segments"][name], err_msg=name)
    flat = [t for name in cases.OPS for t in fetches[name]]
    lowered = lower_graph(flat, [], [FeedSpec(data, data.dtype, cases.DATA.shape)])
    evaluated = evaluate(lowered.module, [cases.DATA])
    for c, e in zip([v for name in cases.OPS for v in values[name]], evaluated):
        np.testing.assert_allclose(c, e, rtol=1e-6, atol=1e-7)


def test_fed_ids_run_on_the_host_and_match_tensorflow():
    data = tf.placeholder(tf.float32, [None, 3])
    ids = tf.placeholder(tf.int32, [None])
    fetches = _segment_graph(data, ids)
    with tf.Session() as sess:
        _check_segments(sess.run(fetches, {data: cases.DATA, ids: cases.IDS}))
        shorter = sess.run(tf.math.segment_max(data, ids), {data: cases.DATA[:3], ids: [1, 1, 4]})
    np.testing.assert_array_equal(shorter, [[0, 0, 0], [1.5, 4, 3], [0, 0, 0], [0, 0, 0], [0, 2, 0.5]])


def test_dynamic_partition_gradient_and_stitch():
    fetches = {}
    for name, (value, partitions, count) in cases.PARTITION_CASES.items():
        x = tf.placeholder(tf.float32, value.shape)
        p = tf.placeholder(tf.int32, np.shape(partitions))
        parts = tf.dynamic_partition(x, p, count)
        loss = tf.add_n([tf.reduce_sum(part * part * float(i + 1)) for i, part in enumerate(parts)])
        grad = tf.gradients(loss, [x])[0]
        assert grad.op.type == "Reshape" and grad.op.inputs[0].op.type == "ParallelDynamicStitch"
        fetches[name] = ((parts, grad), {x: value, p: partitions})
    indices = [tf.placeholder(tf.int32, [None]) for _ in cases.STITCH_INDICES]
    stitched = tf.dynamic_stitch(indices, [tf.constant(d) for d in cases.STITCH_DATA])
    with tf.Session() as sess:
        for name, (tensors, feeds) in fetches.items():
            parts, grad = sess.run(tensors, feeds)
            want = FIXTURE["partitions"][name]
            for got, w in zip(parts, want["parts"]):
                np.testing.assert_array_equal(got, np.asarray(w, np.float32).reshape(got.shape))
            np.testing.assert_array_equal(grad, want["gradient"], err_msg=name)
        np.testing.assert_array_equal(sess.run(stitched, dict(zip(indices, cases.STITCH_INDICES))),
                                      FIXTURE["stitch"])


def test_errors():
    ones = tf.ones([4, 2])
    ids = tf.placeholder(tf.int32, [None])
    total = tf.math.segment_sum(ones, ids)
    with tf.Session() as sess:
        for name, bad in cases.ERROR_IDS.items():
            with pytest.raises(tf.errors.InvalidArgumentError, match=FIXTURE["errors"][name]):
                sess.run(total, {ids: bad})
            with pytest.raises(tf.errors.InvalidArgumentError, match=FIXTURE["errors"][name]):
                sess.run(tf.math.segment_sum(ones, tf.constant(bad)))
    with pytest.raises(ValueError, match="Shape must be rank 1 but is rank 2"):
        tf.math.segment_sum(ones, [[0, 0], [1, 1]])
    with pytest.raises(TypeError, match="not in list of allowed values"):
        tf.math.segment_max(tf.constant([True]), [0])
    assert tf.segment_sum is tf.math.segment_sum and tf.segment_prod is tf.math.segment_prod
