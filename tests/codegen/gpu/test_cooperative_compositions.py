"""Cooperative kernels composed (tfc/codegen/gpu/block.py and its users): a chain in which
block row fusions, the shared-memory GEMM, a split weight gradient, a tiled transpose and
a chunked full reduction feed each other, including a reduction of a slice of a row
fusion's own result; and an MLP trained on the emulated GPU for a few steps, against the
CPU's results."""
import numpy as np

import tfc
import tfc.compat.v1 as tf
from tfc.codegen.gpu.plan import Launch


def _chain(x, w):
    mean, variance = tf.nn.moments(x, axes=[1], keep_dims=True)
    normalised = (x - mean) * tf.rsqrt(variance + 1e-5)
    probabilities = tf.nn.softmax(tf.matmul(normalised, w))  # GEMM with M unknown, then rows
    head = tf.reduce_sum(probabilities[:, :40], axis=1)  # a slice of the row fusion's result
    gram = tf.matmul(tf.transpose(probabilities), probabilities)  # transposed operand, split contraction
    return [probabilities, head, gram, tf.reduce_sum(gram * gram)]


def _compile(build, shapes, **options):
    graph = tf.Graph()
    with graph.as_default():
        feeds = [tf.placeholder(tf.float32, shape) for shape in shapes]
        return tfc.compile(build(*feeds), feeds=feeds, **options)


def test_a_chain_of_cooperative_kernels_computes_what_the_cpu_computes():
    shapes = [[None, 96], [96, 160]]
    gpu = _compile(_chain, shapes, target="cuda", arch="sm_80", emulate=True)
    blocks = [step.block for step in gpu.result.program.plan if isinstance(step, Launch) and step.block]
    assert len(blocks) >= 5
    cpu = _compile(_chain, shapes)
    rng = np.random.default_rng(21)
    for batch in (1, 130, 300):
        inputs = [rng.standard_normal((batch, 96)).astype(np.float32),
                  (rng.standard_normal((96, 160)) * 0.2).astype(np.float32)]
        for got, want in zip(gpu(*inputs), cpu(*inputs)):
            np.testing.assert_allclose(got, want, rtol=2e-4, atol=2e-5)


def test_an_mlp_trains_on_the_emulated_gpu_as_on_the_cpu(monkeypatch):
    monkeypatch.setenv("TFC_GPU_EMULATION", "1")
    rng = np.random.default_rng(22)
    initial = [(rng.standard_normal((64, 96)) * 0.2).astype(np.float32),
               (rng.standard_normal((96, 10)) * 0.2).astype(np.float32)]
    batches = [(rng.standard_normal((200, 64)).astype(np.float32), rng.integers(0, 10, 200)) for _ in range(3)]

    def train(device: str) -> list:
        graph = tf.Graph()
        with graph.as_default(), tf.device(device):
            x = tf.placeholder(tf.float32, [None, 64])
            labels = tf.placeholder(tf.int64, [None])
            w1, w2 = [tf.Variable(w) for w in initial]
            logits = tf.matmul(tf.nn.relu(tf.matmul(x, w1)), w2)
            loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits))
            step = tf.train.GradientDescentOptimizer(0.5).minimize(loss)
            with tf.Session() as session:
                session.run(tf.global_variables_initializer())
                losses = [session.run([loss, step], {x: a, labels: b})[0] for a, b in batches]
                assert {s.target for s in session.compiled_steps()} >= {"cuda" if "gpu" in device else "cpu"}
                return losses + session.run([w1, w2])

    for got, want in zip(train("/gpu:0"), train("/cpu:0")):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
