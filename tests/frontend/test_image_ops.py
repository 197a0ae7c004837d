"""tf.image against real TensorFlow's values and gradients (tests/fixtures/print_image.json,
made by tests/fixtures/make_tf_print_image.py); random flips: seeding and structure."""
import json
import os

import numpy as np
import pytest

import tfc.compat.v1 as tf

HERE = os.path.join(os.path.dirname(__file__), "..", "fixtures")
FIXTURES = json.load(open(os.path.join(HERE, "print_image.json")))["image"]


def _cases():
    """IMAGE_CASES and image_input from the fixture script, without importing TensorFlow."""
    source = open(os.path.join(HERE, "make_tf_print_image.py")).read()
    start = source.index("def image_input")
    end = source.index("def record_image")
    namespace = {"np": np}
    exec(source[start:end], namespace)
    return namespace["IMAGE_CASES"], namespace["image_input"]


CASES, IMAGE_INPUT = _cases()


@pytest.mark.parametrize("name", sorted(CASES))
def test_image_op_as_tensorflow(name):
    fn, kind = CASES[name]
    want = FIXTURES[name]
    with tf.Graph().as_default():
        x = tf.constant(IMAGE_INPUT(kind))
        y = fn(tf, x)
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


def test_image_errors():
    with pytest.raises(ValueError, match=r"^central_fraction must be within \(0, 1\]$"):
        tf.image.central_crop(tf.zeros([4, 4, 3]), 0.0)
    with pytest.raises(ValueError, match="must be at least three-dimensional"):
        tf.image.flip_left_right(tf.zeros([4, 3]))


def test_random_flips_are_seeded_and_flip_whole_images():
    batch = IMAGE_INPUT("batch")
    image = IMAGE_INPUT("image")
    results = []
    for _ in range(2):
        with tf.Graph().as_default():
            tf.set_random_seed(7)
            lr = tf.image.random_flip_left_right(tf.constant(batch), seed=3)
            ud = tf.image.random_flip_up_down(tf.constant(image), seed=3)
            with tf.Session() as sess:
                results.append([sess.run([lr, ud]) for _ in range(8)])
    for (a_lr, a_ud), (b_lr, b_ud) in zip(*results):  # same seeds: same stream
        np.testing.assert_array_equal(a_lr, b_lr)
        np.testing.assert_array_equal(a_ud, b_ud)
    seen_lr, seen_ud = set(), set()
    for lr, ud in results[0]:
        for i in range(batch.shape[0]):
            flipped = np.array_equal(lr[i], batch[i, :, ::-1])
            assert flipped or np.array_equal(lr[i], batch[i])
            seen_lr.add(flipped)
        flipped = np.array_equal(ud, image[::-1])
        assert flipped or np.array_equal(ud, image)
        seen_ud.add(flipped)
    assert seen_lr == {True, False} and seen_ud == {True, False}
