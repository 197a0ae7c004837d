"""Stacks (TF's StackV2/StackPushV2/StackPopV2 in gradients of while loops) lowered as
values (tfc/passes/lower_stacks.py): the pops of values known at compile time, stacks only
ordering ops, and the element shapes of stacks allocated at a loop's entry."""
from __future__ import annotations

import numpy as np
import pytest

import tfc.compat.v1 as tf
from tfc.passes.lower import FeedSpec, lower_graph


def _rnn_gradients(batch_dims_unified: bool):
    """The gradients of a 3-step tanh RNN's loss for its weights, with the batch dim of
    the inputs and of the loss's weights both unknown (unified when the loss multiplies)."""
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float32, [None, 3, 5], name="x")
        cell = tf.nn.rnn_cell.BasicRNNCell(5)
        out, _ = tf.nn.dynamic_rnn(cell, x, dtype=tf.float32)
        y = tf.placeholder(tf.float32, [None, 3, 5] if batch_dims_unified else [4, 3, 5], name="y")
        loss = tf.reduce_sum(out * y)
        grads = tf.gradients(loss, [x] + cell.weights)
    return graph, x, y, grads, cell


def test_popped_shapes_known_at_compile_time_follow_unified_batch_symbols():
    # The forward loop pushes the shapes of its tensors (for BroadcastGradientArgs in the
    # backward loop); they mention the batch symbol of x, which the loss then unifies with
    # y's. The pops must name the surviving symbol (the module verifies).
    graph, x, y, grads, _ = _rnn_gradients(batch_dims_unified=True)
    with graph.as_default():
        lowered = lower_graph(grads, (), [FeedSpec(x, tf.float32, (-1, 3, 5)), FeedSpec(y, tf.float32, (-1, 3, 5))])
        from tfc.ir import verify

        verify(lowered.module)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            feeds = {x: np.ones((4, 3, 5), np.float32), y: np.full((4, 3, 5), 0.5, np.float32)}
            got = sess.run(grads, feeds)
    assert [g.shape for g in got] == [(4, 3, 5), (10, 5), (5,)]


def _numeric_weight_gradient(x_value, y_value, kernel, bias):
    """d loss / d kernel of the same RNN in float64, by central differences."""
    def loss(k):
        h = np.zeros((x_value.shape[0], 5))
        total = 0.0
        for t in range(3):
            h = np.tanh(np.concatenate([x_value[:, t], h], 1) @ k + bias)
            total += np.sum(h * y_value[:, t])
        return total

    grad = np.zeros_like(kernel)
    for index in np.ndindex(*kernel.shape):
        step = np.zeros_like(kernel)
        step[index] = 1e-6
        grad[index] = (loss(kernel + step) - loss(kernel - step)) / 2e-6
    return grad


@pytest.mark.parametrize("unified", [True, False])
def test_rnn_weight_gradients_match_central_differences(unified):
    graph, x, y, grads, cell = _rnn_gradients(batch_dims_unified=unified)
    rng = np.random.RandomState(3)
    x_value = rng.randn(4, 3, 5).astype(np.float32)
    y_value = rng.randn(4, 3, 5).astype(np.float32)
    with graph.as_default(), tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        kernel, bias = sess.run(cell.weights)
        got = sess.run(grads[1], {x: x_value, y: y_value})
    expected = _numeric_weight_gradient(x_value.astype(np.float64), y_value.astype(np.float64),
                                        kernel.astype(np.float64), bias.astype(np.float64))
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)
