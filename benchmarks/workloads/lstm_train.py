"""(10) One training step of the LSTM of the ``lstm`` workload (batch 64, 50 steps, 128
inputs, 128 units, BasicLSTMCell arithmetic, forget bias 1.0): the parameters, kernel
``[inputs + units, 4 * units]`` and bias ``[4 * units]``, are variables; the loss is
``sum(outputs * target) / batch`` over all time steps (``target`` a fixed random
``[batch, steps, units]`` array); plain SGD (learning rate 0.1) updates them in place.

- numpy: the forward pass, then backpropagation through time written out by hand (the
  cell's backward pass step by step, newest first; the kernel's gradient is one matmul of
  all steps' ``[x_t, h]`` with all steps' gate gradients), ``w -= lr * dw``.
- tfc and TF graph mode: the same TF1 graph: ``tf.nn.dynamic_rnn`` with the duck-typed
  cell of ``lstm`` reading ``tf.get_variable``s, and
  ``tf.train.GradientDescentOptimizer(0.1).minimize(loss)`` (gradients through the
  ``tf.while_loop`` that dynamic_rnn builds); a step is ``sess.run(train_op, feed_dict)``.
- TF XLA: ``tf.function(jit_compile=True)`` of a step that takes the gradients with a
  ``GradientTape`` through a ``tf.while_loop`` over time and ``assign_sub``s them into
  ``tf.Variable``s.
- JAX: ``jax.jit`` of ``value_and_grad`` of a ``lax.scan`` LSTM + the update (the
  parameters are donated).

Parameters, snapshots and the check work as in ``mlp_train``.
"""
from __future__ import annotations

import numpy as np

from .base import normal, weights
from .lstm import FORGET_BIAS, _Cell, _sigmoid
from .mlp_train import Snapshot, TrainingWorkload


class _VariableCell(_Cell):
    """``lstm``'s cell on given kernel and bias tensors (variables) instead of constants."""

    def __init__(self, tf, kernel, bias, units):
        self.tf = tf
        self.kernel = kernel
        self.bias = bias
        self.units = units


class LSTMTrain(TrainingWorkload):
    name = "lstm_train"
    title = "LSTM training step, dynamic_rnn (SGD)"
    rtol = 1e-5
    atol = 1e-6
    learning_rate = 0.1

    def setup(self):
        self.batch, self.steps, self.inputs, self.units = (4, 3, 5, 6) if self.tiny else (64, 50, 128, 128)
        self.x = normal(self.rng, self.batch, self.steps, self.inputs) * 0.5
        kernel = weights(self.rng, self.inputs + self.units, 4 * self.units, scale=0.1)
        bias = (self.rng.standard_normal(4 * self.units) * 0.1).astype(np.float32)
        self.target = normal(self.rng, self.batch, self.steps, self.units)
        self.initial = [kernel, bias]

    def describe(self):
        return (f"batch {self.batch}, {self.steps} steps, {self.inputs} -> {self.units} units, "
                f"loss sum(outputs * target) / batch, lr {self.learning_rate:g}")

    # -- numpy ---------------------------------------------------------------------------------
    def _forward_numpy(self, kernel, bias, x):
        """(outputs [steps, batch, units], what the backward pass needs)."""
        batch, units = x.shape[0], self.units
        c = np.zeros((batch, units), kernel.dtype)
        h = np.zeros((batch, units), kernel.dtype)
        zs, cs, gates_list, outputs = [], [c], [], []
        for t in range(self.steps):
            z = np.concatenate([x[:, t], h], 1)
            gates = z @ kernel + bias
            i, j, f, o = np.split(gates, 4, axis=1)
            si, tj, sf, so = _sigmoid(i), np.tanh(j), _sigmoid(f + FORGET_BIAS), _sigmoid(o)
            c = c * sf + si * tj
            h = np.tanh(c) * so
            zs.append(z)
            cs.append(c)
            gates_list.append((si, tj, sf, so))
            outputs.append(h)
        return np.stack(outputs), (zs, cs, gates_list)

    def loss_numpy(self, params):
        """The loss for ``params`` (the forward pass alone; tests take finite differences of it)."""
        kernel, bias = params
        outputs, _ = self._forward_numpy(kernel, bias, self.x.astype(kernel.dtype))
        return np.sum(outputs * np.swapaxes(self.target, 0, 1)) / self.batch

    def build_numpy(self):
        params = [p.copy() for p in self.initial]
        kernel, bias = params
        dtype = kernel.dtype  # float32; float64 when a test made the parameters float64
        x = self.x.astype(dtype)
        lr, inputs, units = dtype.type(self.learning_rate), self.inputs, self.units
        d_outputs = np.swapaxes(self.target, 0, 1).astype(dtype) / dtype.type(self.batch)  # d loss / d h_t

        def step():
            _, (zs, cs, gates_list) = self._forward_numpy(kernel, bias, x)
            recurrent = kernel[inputs:].T  # d gates / d h_{t-1}, transposed
            d_gates = np.empty((self.steps, x.shape[0], 4 * units), dtype)
            dh = np.zeros((x.shape[0], units), dtype)  # from step t+1 through h_t
            dc = np.zeros((x.shape[0], units), dtype)  # from step t+1 through c_t
            for t in reversed(range(self.steps)):
                si, tj, sf, so = gates_list[t]
                dh = dh + d_outputs[t]
                tc = np.tanh(cs[t + 1])
                dc = dc + dh * so * (1 - tc * tc)
                g = d_gates[t]
                g[:, :units] = dc * tj * si * (1 - si)  # i
                g[:, units:2 * units] = dc * si * (1 - tj * tj)  # j
                g[:, 2 * units:3 * units] = dc * cs[t] * sf * (1 - sf)  # f
                g[:, 3 * units:] = dh * tc * so * (1 - so)  # o
                dc = dc * sf
                dh = g @ recurrent
            d_gates = d_gates.reshape(-1, 4 * units)
            grad_kernel = np.concatenate(zs).T @ d_gates
            grad_bias = d_gates.sum(axis=0)
            params[0] -= lr * grad_kernel  # in place (the arrays kernel and bias name)
            params[1] -= lr * grad_bias
            return Snapshot(lambda: params)

        return step

    # -- TF1 graph (tfc, TF graph mode) --------------------------------------------------------
    def tf1_graph(self, tf):
        x = tf.placeholder(tf.float32, [None, self.steps, self.inputs], name="x")
        target = tf.placeholder(tf.float32, [None, self.steps, self.units], name="target")
        with tf.variable_scope("lstm"):
            kernel = tf.get_variable("kernel", initializer=self.initial[0])
            bias = tf.get_variable("bias", initializer=self.initial[1])
        cell = _VariableCell(tf, kernel, bias, self.units)
        outputs, _ = tf.nn.dynamic_rnn(cell, x, dtype=tf.float32)
        loss = tf.reduce_sum(outputs * target) / float(self.batch)
        train_op = tf.train.GradientDescentOptimizer(self.learning_rate).minimize(loss)
        return train_op, {x: self.x, target: self.target}, [kernel, bias]

    # -- TF XLA --------------------------------------------------------------------------------
    def build_tf_xla(self):
        from .. import peers

        tf = peers.import_tensorflow()
        variables = [tf.Variable(p) for p in self.initial]
        kernel, bias = variables
        units, steps, lr, batch = self.units, self.steps, self.learning_rate, float(self.batch)

        @tf.function(jit_compile=True)
        def train(x, target):
            with tf.GradientTape() as tape:
                n = tf.shape(x)[0]
                c = tf.zeros([n, units])
                h = tf.zeros([n, units])
                outputs = tf.TensorArray(tf.float32, size=steps)

                def body(t, c, h, outputs):
                    gates = tf.matmul(tf.concat([x[:, t], h], 1), kernel) + bias
                    i, j, fg, o = tf.split(gates, 4, axis=1)
                    c = c * tf.sigmoid(fg + FORGET_BIAS) + tf.sigmoid(i) * tf.tanh(j)
                    h = tf.tanh(c) * tf.sigmoid(o)
                    return t + 1, c, h, outputs.write(t, h)

                _, _, _, outputs = tf.while_loop(lambda t, *_: t < steps, body, [0, c, h, outputs],
                                                 maximum_iterations=steps)
                outputs = tf.transpose(outputs.stack(), [1, 0, 2])
                loss = tf.reduce_sum(outputs * target) / batch
            for v, g in zip(variables, tape.gradient(loss, variables)):
                v.assign_sub(lr * g)
            return loss

        x, target = tf.constant(self.x), tf.constant(self.target)

        def read():
            return [v.numpy() for v in variables]

        def step():
            train(x, target).numpy()
            return Snapshot(read)

        return step

    # -- JAX -----------------------------------------------------------------------------------
    def build_jax(self):
        from .. import peers

        jax = peers.import_jax()
        jnp = jax.numpy
        highest = jax.lax.Precision.HIGHEST
        lr, batch = self.learning_rate, float(self.batch)

        def loss_fn(params, x, target):
            kernel, bias = params

            def cell(carry, x_t):
                c, h = carry
                gates = jnp.matmul(jnp.concatenate([x_t, h], 1), kernel, precision=highest) + bias
                i, j, fg, o = jnp.split(gates, 4, axis=1)
                c = c * jax.nn.sigmoid(fg + FORGET_BIAS) + jax.nn.sigmoid(i) * jnp.tanh(j)
                h = jnp.tanh(c) * jax.nn.sigmoid(o)
                return (c, h), h

            zeros = jnp.zeros((x.shape[0], kernel.shape[1] // 4), x.dtype)
            _, outputs = jax.lax.scan(cell, (zeros, zeros), jnp.swapaxes(x, 0, 1))
            return jnp.sum(outputs * jnp.swapaxes(target, 0, 1)) / batch

        def train(params, x, target):
            loss, grads = jax.value_and_grad(loss_fn)(params, x, target)
            return [p - lr * g for p, g in zip(params, grads)], loss

        train = jax.jit(train, donate_argnums=0)
        x, target = jax.device_put(self.x), jax.device_put(self.target)
        state = [jax.device_put([p.copy() for p in self.initial])]

        def step():
            params, loss = train(state[0], x, target)
            loss.block_until_ready()
            state[0] = params
            return Snapshot(lambda: params)

        return step
