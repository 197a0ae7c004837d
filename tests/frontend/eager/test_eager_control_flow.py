"""tf.cond, tf.case, tf.while_loop, tf.map_fn, tf.scan and the folds in eager mode: Python
control flow over the values, as TF 1.x runs them."""
import numpy as np
import pytest

import tfc.compat.v1 as tf


def test_cond_and_case_run_one_branch():
    taken = []
    x = tf.constant(2.)

    def yes():
        taken.append("yes")
        return x * 10.

    def no():
        taken.append("no")
        return x

    assert float(tf.cond(x > 1., yes, no)) == 20. and taken == ["yes"]
    assert float(tf.cond(x > 5., yes, no)) == 2. and taken == ["yes", "no"]
    assert [float(t) for t in tf.cond(x > 1., lambda: [x, x], lambda: [x, x * 2.], strict=True)] == [2., 2.]
    with pytest.raises(TypeError, match="pred must not be a Python bool"):
        tf.cond(True, yes, no)
    out = tf.case([(x < 0., lambda: tf.constant(-1.)), (x > 1., lambda: tf.constant(1.))],
                  default=lambda: tf.constant(0.))
    assert float(out) == 1.


def test_while_loop_is_a_python_loop():
    i, total = tf.while_loop(lambda i, t: i < 5, lambda i, t: (i + 1, t + i), [tf.constant(0), tf.constant(0)])
    assert int(i) == 5 and int(total) == 10
    single = tf.while_loop(lambda v: v < 100., lambda v: v * 3., [tf.constant(1.)])
    assert float(single) == 243.
    capped = tf.while_loop(lambda v: v < 100., lambda v: v * 3., [tf.constant(1.)], maximum_iterations=2)
    assert float(capped) == 9.


def test_map_fn_scan_and_folds():
    x = tf.constant([[1., 2.], [3., 4.], [5., 6.]])
    np.testing.assert_array_equal(tf.map_fn(lambda row: row * 2., x).numpy(), x.numpy() * 2)
    np.testing.assert_array_equal(tf.map_fn(lambda row: tf.reduce_sum(row), x).numpy(), [3., 7., 11.])
    np.testing.assert_array_equal(tf.scan(lambda a, row: a + row, x).numpy(), np.cumsum(x.numpy(), 0))
    np.testing.assert_array_equal(tf.scan(lambda a, row: a + row, x, initializer=tf.zeros([2]), reverse=True).numpy(),
                                  np.cumsum(x.numpy()[::-1], 0)[::-1])
    np.testing.assert_array_equal(tf.foldl(lambda a, row: a * row, x).numpy(), [15., 48.])
    np.testing.assert_array_equal(tf.foldr(lambda a, row: a - row, x, initializer=tf.zeros([2])).numpy(), [-9., -12.])


def test_tensor_array_and_dynamic_rnn():
    ta = tf.TensorArray(tf.float32, size=2, dynamic_size=True)
    ta = ta.write(0, tf.constant([1., 2.])).write(1, [3., 4.]).write(2, [5., 6.])
    np.testing.assert_array_equal(ta.stack().numpy(), [[1., 2.], [3., 4.], [5., 6.]])
    np.testing.assert_array_equal(ta.gather([2, 0]).numpy(), [[5., 6.], [1., 2.]])
    assert int(ta.size()) == 3 and ta.read(1).numpy().tolist() == [3., 4.]
    with pytest.raises(tf.errors.InvalidArgumentError, match="array is not resizeable and size is: 1"):
        tf.TensorArray(tf.float32, size=1).write(1, 1.)
    x = tf.constant(np.random.RandomState(0).randn(2, 5, 3).astype(np.float32))
    cell = tf.nn.rnn_cell.BasicRNNCell(4)
    with tf.GradientTape() as tape:
        outputs, state = tf.nn.dynamic_rnn(cell, x, dtype=tf.float32)
        loss = tf.reduce_sum(outputs * outputs)
    kernel, bias = cell.trainable_variables
    g_kernel, g_bias = tape.gradient(loss, [kernel, bias])
    static_outputs, _ = tf.nn.static_rnn(cell, tf.unstack(x, axis=1), dtype=tf.float32)
    np.testing.assert_allclose(outputs.numpy()[:, -1], static_outputs[-1].numpy(), rtol=1e-6)
    np.testing.assert_allclose(state.numpy(), outputs.numpy()[:, -1], rtol=1e-6)
    # the same RNN in numpy and its gradient by finite differences on one kernel entry
    def numpy_loss(k):
        h = np.zeros((2, 4), np.float64)
        total = 0.
        for t in range(5):
            h = np.tanh(np.concatenate([x.numpy()[:, t], h], 1) @ k + bias.numpy())
            total += (h * h).sum()
        return total
    k = kernel.numpy().astype(np.float64)
    step = np.zeros_like(k)
    step[1, 2] = 1e-5
    numeric = (numpy_loss(k + step) - numpy_loss(k - step)) / 2e-5
    assert float(g_kernel.numpy()[1, 2]) == pytest.approx(numeric, rel=1e-3)
    assert g_bias.shape.as_list() == [4]
