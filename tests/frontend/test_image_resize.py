"""tf.image.resize_bilinear / resize_nearest_neighbor / resize_images against real
TensorFlow's values, gradients and graph node names (tests/fixtures/image_resize.json,
made by tests/fixtures/make_tf_image_resize.py)."""
import json
import os

import numpy as np
import pytest

import tfc.compat.v1 as tf

HERE = os.path.join(os.path.dirname(__file__), "..", "fixtures")
FIXTURES = json.load(open(os.path.join(HERE, "image_resize.json")))["resize"]


def _cases():
    """RESIZE_CASES and resize_input from the fixture script, without importing TensorFlow."""
    source = open(os.path.join(HERE, "make_tf_image_resize.py")).read()
    start = source.index("def resize_input")
    end = source.index("def record_resize")
    namespace = {"np": np}
    exec(source[start:end], namespace)
    return namespace["RESIZE_CASES"], namespace["resize_input"]


CASES, RESIZE_INPUT = _cases()


@pytest.mark.parametrize("name", sorted(CASES))
def test_resize_as_tensorflow(name):
    fn, kind = CASES[name]
    want = FIXTURES[name]
    g = tf.Graph()
    with g.as_default():
        x = tf.constant(RESIZE_INPUT(kind))
        y = fn(tf, x)
        assert [[o.name, o.type] for o in g.get_operations()] == want["nodes"]
        assert y.dtype.name == want["dtype"]
        assert y.shape.as_list() == want["shape"]
        grads = [None]
        if "gradient" in want:
            w = tf.constant(np.linspace(-1, 1, int(np.prod(want["shape"]))).reshape(want["shape"]), y.dtype)
            grads = tf.gradients(tf.reduce_sum(y * w), x)
        with tf.Session() as sess:
            value = sess.run(y)
            if grads[0] is not None:
                np.testing.assert_allclose(sess.run(grads[0]), want["gradient"], rtol=2e-5, atol=2e-6)
    if value.dtype.kind in "iu":
        np.testing.assert_array_equal(value, np.array(want["value"], value.dtype))
    else:
        np.testing.assert_allclose(value, want["value"], rtol=2e-6, atol=2e-6)


def test_resize_bilinear_gradient_numerically():
    x0 = np.random.RandomState(0).randn(1, 3, 4, 2)
    w0 = np.random.RandomState(1).randn(1, 5, 7, 2)
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float64, [1, 3, 4, 2])
        y = tf.image.resize_bilinear(x, [5, 7], half_pixel_centers=True)
        loss = tf.reduce_sum(tf.cast(y, tf.float64) * w0)
        (grad,) = tf.gradients(loss, x)
        assert grad.op.type == "ResizeBilinearGrad" and grad.dtype == tf.float64
        with tf.Session() as sess:
            analytic = sess.run(grad, {x: x0})
            eps, numeric = 1e-3, np.zeros_like(x0)
            for i in np.ndindex(x0.shape):
                up, down = x0.copy(), x0.copy()
                up[i] += eps
                down[i] -= eps
                numeric[i] = (sess.run(loss, {x: up}) - sess.run(loss, {x: down})) / (2 * eps)
    np.testing.assert_allclose(analytic, numeric, rtol=1e-3, atol=1e-3)


def test_resize_errors():
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="must have either 3 or 4 dimensions"):
            tf.image.resize_images(tf.zeros([4, 3]), [2, 2])
        with pytest.raises(ValueError, match="must be a 1-D Tensor of 2 elements"):
            tf.image.resize_images(tf.zeros([4, 3, 1]), [2, 2, 2])
        with pytest.raises(NotImplementedError, match="tfc does not implement"):
            tf.image.resize_images(tf.zeros([4, 3, 1]), [2, 2], method=tf.image.ResizeMethod.AREA)
