"""(9) An LSTM forward pass over time: batch 64, 128 units, 50 steps, 128 inputs; the outputs
of every step (``[batch, time, units]``).

- numpy: the cell written out, a Python loop over time.
- tfc and TF graph mode: ``tf.nn.dynamic_rnn`` (one ``tf.while_loop`` over TensorArrays)
  with an LSTM cell whose weights are constants: the cell is a small duck-typed RNN cell
  (``state_size``, ``output_size``, ``zero_state``, ``__call__``), the same code for both,
  so neither needs ``tf.nn.rnn_cell`` (which TF 2.16+ only has with tf-keras).
- TF XLA: ``tf.function(jit_compile=True)`` of a ``tf.while_loop`` over time.
- JAX: ``jax.jit`` of ``lax.scan``.
"""
from __future__ import annotations

import numpy as np

from .base import Workload, normal, weights

FORGET_BIAS = 1.0


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


class _Cell:
    """BasicLSTMCell's arithmetic (gates i, j, f, o from one matmul of [x, h]) for any TF1 API."""

    def __init__(self, tf, kernel, bias, units):
        self.tf = tf
        self.kernel = tf.constant(kernel)
        self.bias = tf.constant(bias)
        self.units = units

    @property
    def state_size(self):
        return (self.units, self.units)

    @property
    def output_size(self):
        return self.units

    def zero_state(self, batch_size, dtype):
        tf = self.tf
        return (tf.zeros([batch_size, self.units], dtype), tf.zeros([batch_size, self.units], dtype))

    def get_initial_state(self, inputs=None, batch_size=None, dtype=None):
        return self.zero_state(batch_size, dtype)

    def __call__(self, inputs, state, scope=None):
        tf = self.tf
        c, h = state
        gates = tf.matmul(tf.concat([inputs, h], 1), self.kernel) + self.bias
        i, j, f, o = tf.split(gates, 4, axis=1)
        new_c = c * tf.sigmoid(f + FORGET_BIAS) + tf.sigmoid(i) * tf.tanh(j)
        new_h = tf.tanh(new_c) * tf.sigmoid(o)
        return new_h, (new_c, new_h)


class LSTM(Workload):
    name = "lstm"
    title = "LSTM forward, dynamic_rnn"
    rtol = 1e-4
    atol = 1e-5

    def setup(self):
        self.batch, self.steps, self.inputs, self.units = (4, 3, 5, 6) if self.tiny else (64, 50, 128, 128)
        self.x = normal(self.rng, self.batch, self.steps, self.inputs) * 0.5
        self.kernel = weights(self.rng, self.inputs + self.units, 4 * self.units, scale=0.1)
        self.bias = (self.rng.standard_normal(4 * self.units) * 0.1).astype(np.float32)

    def describe(self):
        return f"batch {self.batch}, {self.steps} steps, {self.inputs} -> {self.units} units"

    def build_numpy(self):
        x, kernel, bias, units = self.x, self.kernel, self.bias, self.units

        def step():
            c = np.zeros((self.batch, units), np.float32)
            h = np.zeros((self.batch, units), np.float32)
            outputs = []
            for t in range(self.steps):
                gates = np.concatenate([x[:, t], h], 1) @ kernel + bias
                i, j, f, o = np.split(gates, 4, axis=1)
                c = c * _sigmoid(f + FORGET_BIAS) + _sigmoid(i) * np.tanh(j)
                h = np.tanh(c) * _sigmoid(o)
                outputs.append(h)
            return np.stack(outputs, 1)

        return step

    def tf1_graph(self, tf):
        x = tf.placeholder(tf.float32, [None, self.steps, self.inputs], name="x")
        cell = _Cell(tf, self.kernel, self.bias, self.units)
        outputs, _ = tf.nn.dynamic_rnn(cell, x, dtype=tf.float32)
        return outputs, {x: self.x}

    def build_tf_xla(self):
        from .. import peers

        tf = peers.import_tensorflow()
        kernel, bias, units, steps = tf.constant(self.kernel), tf.constant(self.bias), self.units, self.steps

        @tf.function(jit_compile=True)
        def f(x):
            batch = tf.shape(x)[0]
            c = tf.zeros([batch, units])
            h = tf.zeros([batch, units])
            outputs = tf.TensorArray(tf.float32, size=steps)

            def body(t, c, h, outputs):
                gates = tf.matmul(tf.concat([x[:, t], h], 1), kernel) + bias
                i, j, fg, o = tf.split(gates, 4, axis=1)
                c = c * tf.sigmoid(fg + FORGET_BIAS) + tf.sigmoid(i) * tf.tanh(j)
                h = tf.tanh(c) * tf.sigmoid(o)
                return t + 1, c, h, outputs.write(t, h)

            _, _, _, outputs = tf.while_loop(lambda t, *_: t < steps, body, [0, c, h, outputs])
            return tf.transpose(outputs.stack(), [1, 0, 2])

        x = tf.constant(self.x)
        return lambda: f(x).numpy()

    def build_jax(self):
        from .. import peers

        jax = peers.import_jax()
        jnp = jax.numpy
        kernel, bias = jnp.asarray(self.kernel), jnp.asarray(self.bias)

        @jax.jit
        def f(x):
            def cell(carry, x_t):
                c, h = carry
                gates = jnp.concatenate([x_t, h], 1) @ kernel + bias
                i, j, fg, o = jnp.split(gates, 4, axis=1)
                c = c * jax.nn.sigmoid(fg + FORGET_BIAS) + jax.nn.sigmoid(i) * jnp.tanh(j)
                h = jnp.tanh(c) * jax.nn.sigmoid(o)
                return (c, h), h

            zeros = jnp.zeros((x.shape[0], kernel.shape[1] // 4), x.dtype)
            _, outputs = jax.lax.scan(cell, (zeros, zeros), jnp.swapaxes(x, 0, 1))
            return jnp.swapaxes(outputs, 0, 1)

        x = jnp.asarray(self.x)
        return lambda: np.asarray(f(x))
