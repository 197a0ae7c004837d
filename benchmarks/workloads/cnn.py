"""(6) A small CNN forward pass on 28x28x1, batch 64:
conv 5x5x32 SAME + relu, 2x2 max pool, conv 5x5x64 SAME + relu, 2x2 max pool, dense to 10.

The numpy reference does each convolution as im2col (a strided window view) + one BLAS
matmul, and the pools as a reshape + max: the reasonable way in plain numpy.
"""
from __future__ import annotations

import numpy as np

from .base import Workload, normal, weights


def conv2d_same(x, w):
    """NHWC x HWIO, stride 1, SAME padding (odd kernel)."""
    kh, kw, cin, cout = w.shape
    padded = np.pad(x, ((0, 0), (kh // 2, kh // 2), (kw // 2, kw // 2), (0, 0)))
    windows = np.lib.stride_tricks.sliding_window_view(padded, (kh, kw), axis=(1, 2))  # N,H,W,C,kh,kw
    n, h, wd = x.shape[:3]
    columns = windows.transpose(0, 1, 2, 4, 5, 3).reshape(n * h * wd, kh * kw * cin)
    return (columns @ w.reshape(kh * kw * cin, cout)).reshape(n, h, wd, cout)


def max_pool_2x2(x):
    n, h, w, c = x.shape
    return x.reshape(n, h // 2, 2, w // 2, 2, c).max(axis=(2, 4))


class CNN(Workload):
    name = "cnn"
    title = "small CNN forward"
    rtol = 1e-4
    atol = 1e-4

    def setup(self):
        self.batch = 2 if self.tiny else 64
        self.channels = (4, 8) if self.tiny else (32, 64)
        c1, c2 = self.channels
        self.x = normal(self.rng, self.batch, 28, 28, 1)
        self.w1 = weights(self.rng, 5, 5, 1, c1)
        self.b1 = (0.1 * self.rng.standard_normal(c1)).astype(np.float32)
        self.w2 = weights(self.rng, 5, 5, c1, c2)
        self.b2 = (0.1 * self.rng.standard_normal(c2)).astype(np.float32)
        self.flat = 7 * 7 * c2
        self.wd = weights(self.rng, self.flat, 10)
        self.bd = (0.1 * self.rng.standard_normal(10)).astype(np.float32)

    def describe(self):
        c1, c2 = self.channels
        return f"batch {self.batch}, 28x28x1 -> conv5x5x{c1} -> pool -> conv5x5x{c2} -> pool -> 10"

    def build_numpy(self):
        x, w1, b1, w2, b2, wd, bd, flat = (self.x, self.w1, self.b1, self.w2, self.b2, self.wd, self.bd,
                                           self.flat)

        def step():
            h = max_pool_2x2(np.maximum(conv2d_same(x, w1) + b1, 0))
            h = max_pool_2x2(np.maximum(conv2d_same(h, w2) + b2, 0))
            return h.reshape(-1, flat) @ wd + bd

        return step

    def tf1_graph(self, tf):
        x = tf.placeholder(tf.float32, [None, 28, 28, 1], name="x")
        names = ("w1", "b1", "w2", "b2", "wd", "bd")
        w1, b1, w2, b2, wd, bd = (tf.Variable(getattr(self, n), name=n) for n in names)
        ones, pool = [1, 1, 1, 1], [1, 2, 2, 1]
        h = tf.nn.relu(tf.nn.conv2d(x, w1, strides=ones, padding="SAME") + b1)
        h = tf.nn.max_pool(h, ksize=pool, strides=pool, padding="VALID")
        h = tf.nn.relu(tf.nn.conv2d(h, w2, strides=ones, padding="SAME") + b2)
        h = tf.nn.max_pool(h, ksize=pool, strides=pool, padding="VALID")
        logits = tf.matmul(tf.reshape(h, [-1, self.flat]), wd) + bd
        return logits, {x: self.x}

    def tf_operand(self, tf):
        """What XLA's convolutions and matmul read of an operand: itself (cnn_bf16 rounds it)."""
        return _unchanged

    def jax_operand(self, jax):
        """What JAX's convolutions and matmul read of an operand: itself (cnn_bf16 rounds it)."""
        return _unchanged

    def build_tf_xla(self):
        from .. import peers

        tf = peers.import_tensorflow()
        w1, b1, w2, b2, wd, bd = (tf.Variable(getattr(self, n)) for n in ("w1", "b1", "w2", "b2", "wd", "bd"))
        flat = self.flat
        operand = self.tf_operand(tf)

        @tf.function(jit_compile=True)
        def f(x):
            h = tf.nn.relu(tf.nn.conv2d(operand(x), operand(w1), strides=1, padding="SAME") + b1)
            h = tf.nn.max_pool2d(h, ksize=2, strides=2, padding="VALID")
            h = tf.nn.relu(tf.nn.conv2d(operand(h), operand(w2), strides=1, padding="SAME") + b2)
            h = tf.nn.max_pool2d(h, ksize=2, strides=2, padding="VALID")
            return tf.matmul(operand(tf.reshape(h, [-1, flat])), operand(wd)) + bd

        x = tf.constant(self.x)
        return lambda: f(x).numpy()

    def build_jax(self):
        from .. import peers

        jax = peers.import_jax()
        lax, jnp = jax.lax, jax.numpy
        flat = self.flat
        highest = lax.Precision.HIGHEST
        operand = self.jax_operand(jax)

        def conv(x, w):
            return lax.conv_general_dilated(operand(x), operand(w), (1, 1), "SAME",
                                            dimension_numbers=("NHWC", "HWIO", "NHWC"), precision=highest)

        def pool(x):
            return lax.reduce_window(x, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")

        @jax.jit
        def f(x, w1, b1, w2, b2, wd, bd):
            h = pool(jax.nn.relu(conv(x, w1) + b1))
            h = pool(jax.nn.relu(conv(h, w2) + b2))
            return jnp.matmul(operand(h.reshape(-1, flat)), operand(wd), precision=highest) + bd

        args = [jax.device_put(getattr(self, n)) for n in ("x", "w1", "b1", "w2", "b2", "wd", "bd")]
        return lambda: f(*args).block_until_ready()


def _unchanged(a):
    return a
