"""Eager variables and optimizers: assign*, reads as snapshots, get_variable, layers, and
training loops that match TensorFlow's steps (fixture) and tfc's graph-mode loop."""
import json
import os

import numpy as np
import pytest

import tfc.compat.v1 as tf
import tfc.contrib.eager as tfe

FIXTURE = os.path.join(os.path.dirname(__file__), "..", "..", "fixtures", "tf_eager.json")


def _fixture():
    with open(FIXTURE) as f:
        return json.load(f)


def test_variable_values_and_updates():
    v = tf.Variable([1., 2.], name="v")
    assert v.name == "v:0" and v.dtype == tf.float32 and v.shape.as_list() == [2] and v.trainable
    assert isinstance(v, tf.Variable) and isinstance(v, tfe.Variable)
    before = v.read_value()
    value = v.value()
    assert v.assign([3., 4.]) is v
    assert v.numpy().tolist() == [3., 4.]
    assert before.numpy().tolist() == [1., 2.] and value.numpy().tolist() == [1., 2.]  # reads are snapshots
    v.assign_add([1., 1.])
    v.assign_sub(tf.constant([0.5, 0.5]))
    assert v.numpy().tolist() == [3.5, 4.5]
    assert (v * 2).numpy().tolist() == [7., 9.] and (v + v).numpy().tolist() == [7., 9.]
    assert np.asarray(v).tolist() == [3.5, 4.5]
    assert tf.assign(v, [0., 1.]).numpy().tolist() == [0., 1.]
    assert tf.assign_add(v, [1., 1.]).numpy().tolist() == [1., 2.]
    with pytest.raises(ValueError, match=r"Shapes \(2,\) and \(3,\) are incompatible"):
        v.assign([1., 2., 3.])
    s = tf.Variable(2.0)
    assert float(s) == 2.0 and bool(s) and s.name == "Variable:0"
    unnamed = tf.Variable(0.0)
    assert unnamed.name == "Variable:0"  # eager names are not uniquified
    assert tf.global_variables() == [] and tf.trainable_variables() == []  # TF 1.x: no collections in eager mode
    with tf.name_scope("scope"):
        assert tf.Variable(1.0, name="w").name == "scope/w:0"
    i = tf.Variable(0)
    i.assign_add(5)
    assert int(i) == 5 and i.dtype == tf.int32


def test_get_variable_and_layers():
    with tf.variable_scope("model"):
        v = tf.get_variable("w", [2, 3], initializer=tf.ones_initializer())
        again = tf.get_variable("w", [2, 3], initializer=tf.zeros_initializer())
    assert v.name == "model/w:0" and v.numpy().sum() == 6.
    assert again is not v and again.numpy().sum() == 0.  # eager get_variable keeps no store (TF 1.x)
    dense = tf.layers.Dense(4, kernel_initializer=tf.ones_initializer())
    x = tf.constant([[1., 2., 3.]])
    assert dense(x).numpy().tolist() == [[6.] * 4]
    assert [w.name for w in dense.trainable_variables] == ["dense/kernel:0", "dense/bias:0"]
    assert np.array_equal(dense(x).numpy(), dense(x).numpy())  # the layer keeps its variables
    gs = tf.train.get_or_create_global_step()
    assert gs is tf.train.get_or_create_global_step() and gs.dtype == tf.int64


def _data():
    rng = np.random.RandomState(_fixture()["optimizers"]["data_seed"])
    x = rng.randn(32, 3).astype(np.float32)
    y = (x @ np.array([[1.5], [-2.0], [0.5]], np.float32) + 0.75).astype(np.float32)
    return x, y


def _optimizer(source):
    return eval(source, {"tf": tf})  # noqa: S307 - the fixture's optimizer expression


def test_optimizer_steps_match_tensorflow():
    fixture = _fixture()["optimizers"]
    x, y = _data()
    for name, trajectory in fixture["trajectories"].items():
        w = tf.Variable(np.zeros((3, 1), np.float32))
        b = tf.Variable(0.0)
        opt = _optimizer(trajectory["optimizer"])
        for step, expected in enumerate(trajectory["steps"]):
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean(tf.square(tf.matmul(x, w) + b - y))
            gw, gb = tape.gradient(loss, [w, b])
            opt.apply_gradients([(gw, w), (gb, b)])
            assert float(loss) == pytest.approx(expected["loss"], rel=1e-5), (name, step)
            np.testing.assert_allclose(w.numpy().ravel(), expected["w"], rtol=1e-5, atol=1e-6, err_msg=name)
            assert float(b.numpy()) == pytest.approx(expected["b"], rel=1e-5, abs=1e-6), (name, step)


def _graph_mode_steps(source, x, y, steps):
    """The same loop in graph mode (a session step per iteration): losses, weights."""
    with tf.Graph().as_default():
        w = tf.Variable(np.zeros((3, 1), np.float32))
        b = tf.Variable(0.0)
        loss = tf.reduce_mean(tf.square(tf.matmul(x, w) + b - y))
        train = _optimizer(source).minimize(loss)
        out = []
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            for _ in range(steps):
                loss_value, _ = sess.run([loss, train])
                out.append((loss_value, sess.run(w).ravel(), sess.run(b)))
    return out


def test_eager_training_matches_graph_mode_step_by_step_and_converges():
    x, y = _data()
    for source in ("tf.train.GradientDescentOptimizer(0.1)", "tf.train.MomentumOptimizer(0.05, 0.9)",
                   "tf.train.AdamOptimizer(0.1)"):
        graph_steps = _graph_mode_steps(source, x, y, 12)
        w = tf.Variable(np.zeros((3, 1), np.float32))
        b = tf.Variable(0.0)
        opt = _optimizer(source)

        def loss_fn():
            return tf.reduce_mean(tf.square(tf.matmul(x, w) + b - y))

        for step, (loss_value, w_value, b_value) in enumerate(graph_steps):
            loss = loss_fn()
            opt.minimize(loss_fn)
            assert float(loss) == pytest.approx(float(loss_value), rel=1e-5), (source, step)
            np.testing.assert_allclose(w.numpy().ravel(), w_value, rtol=1e-5, atol=1e-6, err_msg=source)
            assert float(b.numpy()) == pytest.approx(float(b_value), rel=1e-5, abs=1e-6)
        for _ in range(150):
            opt.minimize(loss_fn)
        np.testing.assert_allclose(w.numpy().ravel(), [1.5, -2.0, 0.5], atol=2e-3, err_msg=source)
        assert float(b.numpy()) == pytest.approx(0.75, abs=2e-3)


def test_minimize_with_global_step_and_var_list():
    gs = tf.train.get_or_create_global_step()
    a = tf.Variable(1.0)
    b = tf.Variable(1.0)
    opt = tf.train.GradientDescentOptimizer(0.25)
    opt.minimize(lambda: a * a + b * b, global_step=gs, var_list=[a])
    assert float(a.numpy()) == 0.5 and float(b.numpy()) == 1.0 and int(gs) == 1
    with pytest.raises(RuntimeError, match="`loss` passed to Optimizer.compute_gradients should be a function when "
                                           "eager execution is enabled."):
        opt.minimize(a * a)
    slots = tf.train.MomentumOptimizer(0.1, 0.9)
    slots.minimize(lambda: a * b)
    assert slots.get_slot_names() == ["momentum"]
    assert float(slots.get_slot(a, "momentum").numpy()) == pytest.approx(1.0)  # b's value, the first gradient
