"""Shapes that pick the GEMM routine's other paths, against numpy.

* Narrow N (fewer than two NR panels: A read in place, B packed into rows of N rounded
  up to the vector width, NR-wide panels and then one vector-wide panel of 2*MR rows,
  partial columns through masked loads and stores): every N from 1 to 40, odd M and K,
  K of 0 and 1, transposed operands, the bias / matrix / in-place addend, and sizes on
  both sides of the parallel threshold.
* The wide path's per-thread packed-A buffers, including more tasks running at once than
  buffers (workers left from a bigger pool), which fall back to a buffer of their own.
* A dense layer with a few outputs through a session (the bias fused as the addend).

Operands are small integers where possible, so f32 sums are exact and the results must
equal numpy's integer products bit for bit; random floats are checked with tolerances
scaled to K.
"""
from __future__ import annotations

import numpy as np
import pytest

from tfc.codegen import parallel
from tfc.codegen.kernels import gemm

from .test_gemm import run_gemm

NARROW_LIMIT = 40  # past 2 * NR for f32 (32) and f64 (16): the narrow path and the wide one


def integer_operands(M, N, K, dtype, seed):
    rng = np.random.default_rng(seed)
    a = rng.integers(-3, 4, (M, K)).astype(dtype)
    b = rng.integers(-3, 4, (K, N)).astype(dtype)
    return a, b


def exact_product(a, b):
    return (a.astype(np.int64) @ b.astype(np.int64)).astype(a.dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_every_narrow_width_is_exact(dtype):
    # N = 1..40 over odd M and K; rows split over tasks (M = 37 with 2 threads).
    for N in range(1, NARROW_LIMIT + 1):
        M, K = 37 + 2 * (N % 3), 129 + N
        a, b = integer_operands(M, N, K, dtype, seed=N)
        expected = exact_product(a, b)
        for threads in (1, 2):
            np.testing.assert_array_equal(run_gemm(a, b, threads=threads, extra_columns=3), expected,
                                          err_msg=f"N={N} threads={threads}")


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("transpose_a, transpose_b", [(False, False), (True, False), (False, True), (True, True)])
def test_narrow_transposed_operands(transpose_a, transpose_b, dtype):
    for N in (1, 3, 8, 9, 10, 15, 17, 24, 31):
        a, b = integer_operands(23, N, 77, dtype, seed=N + 100)
        got = run_gemm(a, b, transpose_a=transpose_a, transpose_b=transpose_b, threads=2, extra_columns=2)
        np.testing.assert_array_equal(got, exact_product(a, b), err_msg=f"N={N}")


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("addend", ["bias", "matrix", "in place"])
@pytest.mark.parametrize("N", [1, 5, 8, 10, 16, 20, 31])
def test_narrow_addend_is_added_once(N, addend, dtype):
    # K = 300 is over a KC block: the narrow path has no K blocks, the addend must still be
    # added exactly once (and not to rows or columns past the edges).
    M, K = 29, 300
    rng = np.random.default_rng(N)
    a = rng.uniform(-1, 1, (M, K)).astype(dtype)
    b = rng.uniform(-1, 1, (K, N)).astype(dtype)
    single, x = run_gemm(a, b, threads=1, addend=addend, extra_columns=3)
    threaded, _ = run_gemm(a, b, threads=2, addend=addend, extra_columns=3)
    np.testing.assert_array_equal(threaded, single)
    expected = a.astype(np.float64) @ b.astype(np.float64) + x.astype(np.float64)
    tolerance = 2e-6 * K if dtype == np.float32 else 1e-14 * K
    np.testing.assert_allclose(single, expected, rtol=tolerance, atol=tolerance)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("N", [1, 10, 17, 40])
def test_tiny_depths(N, dtype):
    # K = 1: one rank-1 update (no unrolled trip); K = 0: C is the addend (or zeros).
    a, b = integer_operands(11, N, 1, dtype, seed=N)
    np.testing.assert_array_equal(run_gemm(a, b, threads=2), exact_product(a, b))
    got, x = run_gemm(a, b, threads=2, addend="bias")
    np.testing.assert_array_equal(got, exact_product(a, b) + x)
    empty_a, empty_b = np.zeros((11, 0), dtype), np.zeros((0, N), dtype)
    np.testing.assert_array_equal(run_gemm(empty_a, empty_b, extra_columns=1), np.zeros((11, N), dtype))
    got, x = run_gemm(empty_a, empty_b, addend="matrix")
    np.testing.assert_array_equal(got, x)


@pytest.mark.parametrize("N", [10, 24])
def test_narrow_across_the_parallel_threshold(N):
    # M*N*K just under and just over PARALLEL_FLOPS (serial, then tasks), and a tall A
    # with many row units per task.
    K = 512
    limit = gemm.PARALLEL_FLOPS // (N * K)
    for M in (limit - 1, limit + 1, limit + 2, 1001):
        a, b = integer_operands(M, N, K, np.float32, seed=M)
        expected = exact_product(a, b)
        for threads in (1, 2):
            np.testing.assert_array_equal(run_gemm(a, b, threads=threads, addend=None), expected,
                                          err_msg=f"M={M} threads={threads}")


def test_mlp_shapes_match_numpy():
    # The MLP benchmark's layers (784-512-512-10, batch 256) with their bias rows.
    rng = np.random.default_rng(7)
    for M, N, K in ((256, 512, 784), (256, 512, 512), (256, 10, 512)):
        a = rng.uniform(-1, 1, (M, K)).astype(np.float32)
        b = rng.uniform(-1, 1, (K, N)).astype(np.float32)
        got, x = run_gemm(a, b, threads=2, addend="bias")
        expected = a.astype(np.float64) @ b.astype(np.float64) + x
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=2e-5)


def test_more_tasks_at_once_than_packed_a_buffers():
    # A pool grown to 3 and shrunk to 2 keeps its 2 workers: three threads can run compute
    # tasks at once while the call made 2 packed-A buffers; the third must use its own.
    a, b = integer_operands(300, 200, 530, np.float32, seed=3)
    expected = exact_product(a, b)
    previous = parallel.set_pool_size(3)
    try:
        np.testing.assert_array_equal(run_gemm(a, b, threads=3), expected)
        np.testing.assert_array_equal(run_gemm(a, b, threads=2), expected)
        np.testing.assert_array_equal(run_gemm(a, b, threads=1), expected)
    finally:
        parallel.set_pool_size(previous)


def test_dense_layer_with_few_outputs_through_a_session():
    # relu(x @ w + b) with 10 and 37 outputs: the bias is the GEMM's addend; batch sizes on
    # both sides of the parallel threshold, one compile.
    import tfc.compat.v1 as tf

    rng = np.random.default_rng(11)
    w10 = rng.integers(-3, 4, (512, 10)).astype(np.float32)
    b10 = rng.integers(-9, 10, 10).astype(np.float32)
    w37 = rng.integers(-3, 4, (64, 37)).astype(np.float32)
    b37 = rng.integers(-9, 10, 37).astype(np.float32)
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 512])
        y = tf.placeholder(tf.float32, [None, 64])
        fetches = [tf.nn.relu(tf.matmul(x, tf.constant(w10)) + tf.constant(b10)),
                   tf.matmul(y, tf.constant(w37)) + tf.constant(b37)]
        with tf.Session() as sess:
            for batch in (3, 256):
                xv = rng.integers(-3, 4, (batch, 512)).astype(np.float32)
                yv = rng.integers(-3, 4, (batch, 64)).astype(np.float32)
                dense10, dense37 = sess.run(fetches, {x: xv, y: yv})
                np.testing.assert_array_equal(dense10, np.maximum(exact_product(xv, w10) + b10, 0))
                np.testing.assert_array_equal(dense37, exact_product(yv, w37) + b37)
