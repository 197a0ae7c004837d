"""(3) MLP inference: 784-512-512-10, relu, softmax, batch 256; weights are variables."""
from __future__ import annotations

import numpy as np

from .base import Workload, normal, weights


def _softmax(logits):
    e = np.exp(logits - logits.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


class MLP(Workload):
    name = "mlp"
    title = "MLP relu/softmax"
    rtol = 1e-4
    atol = 1e-5

    def setup(self):
        self.batch = 4 if self.tiny else 256
        self.sizes = (64, 32, 32, 10) if self.tiny else (784, 512, 512, 10)
        self.x = normal(self.rng, self.batch, self.sizes[0])
        self.params = []  # [(w, b)] per layer
        for fan_in, fan_out in zip(self.sizes, self.sizes[1:]):
            self.params.append((weights(self.rng, fan_in, fan_out),
                                (self.rng.standard_normal(fan_out) * 0.1).astype(np.float32)))

    def describe(self):
        return "-".join(map(str, self.sizes)) + f", batch {self.batch}"

    def build_numpy(self):
        x, params = self.x, self.params

        def step():
            h = x
            for w, b in params[:-1]:
                h = np.maximum(h @ w + b, 0)
            w, b = params[-1]
            return _softmax(h @ w + b)

        return step

    def tf1_graph(self, tf):
        x = tf.placeholder(tf.float32, [None, self.sizes[0]], name="x")
        h = x
        for i, (w, b) in enumerate(self.params):
            with tf.variable_scope(f"layer{i}"):
                w = tf.Variable(w, name="w")
                b = tf.Variable(b, name="b")
            h = tf.matmul(h, w) + b
            h = tf.nn.relu(h) if i < len(self.params) - 1 else tf.nn.softmax(h)
        return h, {x: self.x}

    def tf_operand(self, tf):
        """What XLA's matmuls read of an operand: itself (the bf16 rows round it)."""
        return _unchanged

    def jax_operand(self, jax):
        """What JAX's matmuls read of an operand: itself (the bf16 rows round it)."""
        return _unchanged

    def build_tf_xla(self):
        from .. import peers

        tf = peers.import_tensorflow()
        variables = [(tf.Variable(w), tf.Variable(b)) for w, b in self.params]
        operand = self.tf_operand(tf)

        @tf.function(jit_compile=True)
        def f(x):
            h = x
            for i, (w, b) in enumerate(variables):
                h = tf.matmul(operand(h), operand(w)) + b
                h = tf.nn.relu(h) if i < len(variables) - 1 else tf.nn.softmax(h)
            return h

        x = tf.constant(self.x)
        return lambda: f(x).numpy()

    def build_jax(self):
        from .. import peers

        jax = peers.import_jax()
        jnp = jax.numpy
        operand = self.jax_operand(jax)

        @jax.jit
        def f(x, params):
            h = x
            for i, (w, b) in enumerate(params):
                h = jnp.matmul(operand(h), operand(w), precision=jax.lax.Precision.HIGHEST) + b
                h = jax.nn.relu(h) if i < len(params) - 1 else jax.nn.softmax(h, axis=-1)
            return h

        x = jax.device_put(self.x)
        params = jax.device_put(self.params)
        return lambda: f(x, params).block_until_ready()


def _unchanged(a):
    return a
