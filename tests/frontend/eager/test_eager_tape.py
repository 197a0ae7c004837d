"""tf.GradientTape: gradients against TensorFlow's (fixture), finite differences and
graph-mode tf.gradients; persistent and nested tapes, stop_recording, variables."""
import json
import os

import numpy as np
import pytest

import tfc.compat.v1 as tf

FIXTURE = os.path.join(os.path.dirname(__file__), "..", "..", "fixtures", "tf_eager.json")


def _fixture():
    with open(FIXTURE) as f:
        return json.load(f)


def _function(source):
    namespace = {}
    exec(source, namespace)  # noqa: S102 - the fixture's recorded test case
    return namespace["f"]


def test_gradients_match_tensorflow_and_finite_differences():
    for name, case in _fixture()["gradients"].items():
        f = _function(case["source"])
        x = tf.constant(np.array(case["x"], dtype=np.float32))
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = f(tf, x)
        g = tape.gradient(y, x)
        np.testing.assert_allclose(y.numpy(), case["y"], rtol=1e-5, atol=1e-6, err_msg=name)
        np.testing.assert_allclose(g.numpy(), case["grad"], rtol=1e-5, atol=1e-6, err_msg=name)
        # central differences in float64 of the same function, run eagerly
        x64 = np.array(case["x"], dtype=np.float64)
        numeric = np.zeros_like(x64)
        for index in np.ndindex(x64.shape):
            step = np.zeros_like(x64)
            step[index] = 1e-4
            plus = float(np.sum(f(tf, tf.constant((x64 + step).astype(np.float32))).numpy().astype(np.float64)))
            minus = float(np.sum(f(tf, tf.constant((x64 - step).astype(np.float32))).numpy().astype(np.float64)))
            numeric[index] = (plus - minus) / 2e-4
        np.testing.assert_allclose(g.numpy(), numeric, rtol=2e-2, atol=2e-2, err_msg=name)


def test_gradients_match_graph_mode_tf_gradients():
    for name in ("tanh_matmul", "softmax_xent", "reduce_max_mean", "concat_slice"):
        case = _fixture()["gradients"][name]
        f = _function(case["source"])
        x_value = np.array(case["x"], dtype=np.float32)
        x = tf.constant(x_value)
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = f(tf, x)
        eager_grad = tape.gradient(y, x).numpy()
        with tf.Graph().as_default():
            p = tf.placeholder(tf.float32, x_value.shape)
            (graph_grad,) = tf.gradients(f(tf, p), [p])
            with tf.Session() as sess:
                expected = sess.run(graph_grad, {p: x_value})
        np.testing.assert_allclose(eager_grad, expected, rtol=1e-6, atol=1e-7, err_msg=name)


def test_second_derivatives_with_nested_tapes():
    for name, case in _fixture()["second_order"].items():
        f = _function(case["source"])
        x = tf.constant(np.float32(case["x"]))
        with tf.GradientTape() as outer:
            outer.watch(x)
            with tf.GradientTape() as inner:
                inner.watch(x)
                y = f(tf, x)
            dy = inner.gradient(y, x)
        d2y = outer.gradient(dy, x)
        assert float(dy) == pytest.approx(case["dy"], rel=1e-5), name
        assert float(d2y) == pytest.approx(case["d2y"], rel=1e-5, abs=1e-6), name


def test_variables_are_watched_automatically():
    w = tf.Variable([[1.0], [2.0]])
    b = tf.Variable(0.5)
    frozen = tf.Variable(3.0, trainable=False)
    x = tf.constant([[1., 2.], [3., 4.]])
    with tf.GradientTape() as tape:
        pred = tf.matmul(x, w) + b * frozen
        loss = tf.reduce_mean(tf.square(pred - 1.0))
    assert [v.name for v in tape.watched_variables()] == [w.name, b.name]
    gw, gb, gf = tape.gradient(loss, [w, b, frozen])
    residual = x.numpy() @ w.numpy() + 1.5 - 1.0
    np.testing.assert_allclose(gw.numpy(), x.numpy().T @ residual, rtol=1e-6)
    assert float(gb) == pytest.approx(float(3.0 * residual.sum()))
    assert gf is None  # not trainable, not watched


def test_watch_accessed_variables_false_and_explicit_watch():
    a = tf.Variable(2.0)
    b = tf.Variable(3.0)
    with tf.GradientTape(watch_accessed_variables=False) as tape:
        tape.watch(a)
        y = a * b
    assert tape.watched_variables() == (a,)
    ga, gb = tape.gradient(y, [a, b])
    assert float(ga) == 3.0 and gb is None


def test_persistent_tape_and_one_shot_tape():
    x = tf.constant(3.0)
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x * x
        z = y * y
    assert float(tape.gradient(z, x)) == pytest.approx(4 * 27.0)
    assert float(tape.gradient(y, x)) == 6.0
    assert float(tape.gradient(z, y)) == 18.0
    del tape
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = x * x
    assert float(tape.gradient(y, x)) == 6.0
    with pytest.raises(RuntimeError, match="GradientTape.gradient can only be called once on non-persistent tapes."):
        tape.gradient(y, x)


def test_stop_recording_stop_gradient_and_unconnected():
    x = tf.constant(2.0)
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x * x
        with tape.stop_recording():
            unseen = x * 10.
        z = y + tf.stop_gradient(x * 3.) + unseen
    assert float(tape.gradient(z, x)) == 4.0
    other = tf.constant(1.0)
    assert tape.gradient(z, other) is None
    assert float(tape.gradient(z, other, unconnected_gradients="zero")) == 0.0
    assert tape.gradient(tf.cast(x, tf.int32) * 2, x) is None  # integers carry no gradient


def test_structures_output_gradients_and_multiple_targets():
    a = tf.constant([1., 2.])
    b = tf.constant(3.)
    with tf.GradientTape(persistent=True) as tape:
        tape.watch([a, b])
        y1 = a * b
        y2 = tf.reduce_sum(a * a)
    grads = tape.gradient([y1, y2], {"a": a, "b": b})
    np.testing.assert_allclose(grads["a"].numpy(), [3. + 2., 3. + 4.])
    assert float(grads["b"]) == 3.
    weighted = tape.gradient(y1, a, output_gradients=tf.constant([1., -1.]))
    np.testing.assert_allclose(weighted.numpy(), [3., -3.])


def test_gradient_through_python_control_flow_and_cond():
    x = tf.constant(1.5)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = x
        for _ in range(3):
            if y < 5:
                y = y * y
            else:
                y = y + 1.
        z = tf.cond(y > 100, lambda: y * 2., lambda: y * 3.)
    # x**8 at 1.5 = 25.6 < 100: z = 3 * x**8 (1.5**4 = 5.06 >= 5 at the third step? no: 1.5, 2.25, 5.06 -> +1)
    expected = 3 * 4 * 1.5 ** 3  # y = x**4 + 1 after the loop (x**4 >= 5 on the third pass), z = 3 y
    assert float(tape.gradient(z, x)) == pytest.approx(expected, rel=1e-5)


def test_gradient_of_a_while_loop_and_map_fn():
    x = tf.constant([1., 2.])
    with tf.GradientTape() as tape:
        tape.watch(x)
        _, y = tf.while_loop(lambda i, v: i < 3, lambda i, v: (i + 1, v * 2.), [0, x])
        z = tf.reduce_sum(tf.map_fn(lambda row: row * row, y))
    np.testing.assert_allclose(tape.gradient(z, x).numpy(), 2 * 64 * x.numpy(), rtol=1e-6)


def test_cnn_gradients_match_graph_mode():
    rng = np.random.RandomState(0)
    images = rng.randn(2, 6, 6, 3).astype(np.float32)
    kernel_value = (rng.randn(3, 3, 3, 4) * 0.3).astype(np.float32)
    labels = np.array([1, 3])

    def loss_of(tf_, x, kernel):
        y = tf_.nn.relu(tf_.nn.conv2d(x, kernel, [1, 1, 1, 1], "SAME"))
        y = tf_.nn.max_pool(y, [1, 2, 2, 1], [1, 2, 2, 1], "VALID")
        logits = tf_.reduce_mean(y, axis=[1, 2])
        return tf_.reduce_mean(tf_.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits))

    kernel = tf.Variable(kernel_value)
    with tf.GradientTape() as tape:
        loss = loss_of(tf, tf.constant(images), kernel)
    eager_grad = tape.gradient(loss, kernel).numpy()
    with tf.Graph().as_default():
        k = tf.Variable(kernel_value)
        graph_loss = loss_of(tf, tf.constant(images), k)
        (grad,) = tf.gradients(graph_loss, [k])
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            expected_loss, expected = sess.run([graph_loss, grad])
    assert float(loss) == pytest.approx(float(expected_loss), rel=1e-6)
    np.testing.assert_allclose(eager_grad, expected, rtol=1e-5, atol=1e-7)


def test_tf_gradients_is_graph_only():
    with pytest.raises(RuntimeError, match="tf.gradients is not supported when eager execution is enabled. Use "
                                           "tf.GradientTape instead."):
        tf.gradients(tf.constant(1.), tf.constant(2.))
