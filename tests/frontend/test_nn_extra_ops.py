"""tf.nn.conv1d, atrous_conv2d, separable_conv2d, lrn and fused_batch_norm against real
TensorFlow's graphs, values and gradients (tests/fixtures/nn_extra.json, made by
tests/fixtures/make_tf_nn_extra.py), plus space_to_batch_nd / batch_to_space_nd."""
import json
import os

import numpy as np
import pytest

import tfc.compat.v1 as tf

HERE = os.path.join(os.path.dirname(__file__), "..", "fixtures")
FIXTURES = json.load(open(os.path.join(HERE, "nn_extra.json")))["cases"]


def _cases():
    """NN_EXTRA_CASES and helpers from the fixture script, without importing TensorFlow."""
    source = open(os.path.join(HERE, "make_tf_nn_extra.py")).read()
    start = source.index("def case_input")
    end = source.index("def record")
    namespace = {"np": np}
    exec(source[start:end], namespace)
    return namespace


NS = _cases()
CASES = NS["NN_EXTRA_CASES"]


@pytest.mark.parametrize("name", sorted(CASES))
def test_nn_extra_as_tensorflow(name):
    build, specs, grad_inputs = CASES[name]
    want = FIXTURES[name]
    with tf.Graph().as_default() as g:
        inputs = [tf.constant(v) for v in NS["case_inputs"](specs)]
        before = set(g.get_operations())
        result = build(tf, *inputs)
        nodes = [[o.name, o.type] for o in g.get_operations() if o not in before and o.type != "Const"]
        assert nodes == want["nodes"]
        outputs = list(result) if isinstance(result, tuple) else [result]
        for t, w in zip(outputs, want["outputs"]):
            assert t.dtype.name == w["dtype"]
            assert t.shape.as_list() == w["shape"]
        y = outputs[0]
        grads = tf.gradients(tf.reduce_sum(y * tf.constant(NS["ramp"](y.shape.as_list()))),
                             [inputs[i] for i in grad_inputs])
        grad_nodes = [[o.name, o.type] for o in g.get_operations() if o.type in NS["GRAD_TYPES"]
                      and o.name.startswith("gradients/")]
        assert grad_nodes == want["grad_nodes"]
        with tf.Session() as sess:
            values, grad_values = sess.run([outputs, grads])
    for v, w in zip(values, want["outputs"]):
        np.testing.assert_allclose(v, w["value"], rtol=2e-5, atol=2e-5)
    for v, w in zip(grad_values, want["gradients"]):
        np.testing.assert_allclose(v, w, rtol=1e-4, atol=5e-5)


def test_space_to_batch_round_trip_and_values():
    x = np.arange(2 * 5 * 6 * 3, dtype=np.float32).reshape(2, 5, 6, 3)
    with tf.Graph().as_default():
        s = tf.space_to_batch_nd(tf.constant(x), [2, 3], [[1, 2], [0, 0]])
        assert s.shape.as_list() == [12, 4, 2, 3]
        b = tf.batch_to_space_nd(s, [2, 3], [[1, 2], [0, 0]])
        assert b.shape.as_list() == [2, 5, 6, 3]
        with tf.Session() as sess:
            s_value, b_value = sess.run([s, b])
    padded = np.pad(x, [[0, 0], [1, 2], [0, 0], [0, 0]])
    want = padded.reshape(2, 4, 2, 2, 3, 3).transpose(2, 4, 0, 1, 3, 5).reshape(12, 4, 2, 3)
    np.testing.assert_array_equal(s_value, want)
    np.testing.assert_array_equal(b_value, x)


def test_errors():
    with pytest.raises(ValueError, match="is not divisible by block_shape"):
        tf.space_to_batch_nd(tf.zeros([1, 5, 4, 1]), [2, 2], [[0, 0], [0, 0]])
    with pytest.raises(ValueError, match='data_format must be "NWC" or "NCW"'):
        tf.nn.conv1d(tf.zeros([1, 4, 2]), tf.zeros([2, 2, 2]), 1, "SAME", data_format="NHWC_X")
    with pytest.raises(ValueError):
        tf.nn.lrn(tf.zeros([2, 3, 4]))
