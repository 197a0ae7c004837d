"""The GEMM routine's matrix-vector paths (tfc/codegen/kernels/gemv.py): M == 1 or N == 1,
in the dot shape and the axpy shape, and the strided cases that fall through to the
general routine. Operands are small integers, so every sum is exact and the results must
equal numpy's bit for bit whatever the summation order."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

from .test_gemm import run_gemm

DEPTHS = (1, 3, 8, 31, 32, 33, 67, 300)  # around the 8-lane vectors and the 4 x 8 dot blocks


def _integers(rng, shape, dtype):
    return rng.integers(-3, 4, shape).astype(dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", ["row", "column"])
@pytest.mark.parametrize("transpose_a, transpose_b", list(itertools.product([False, True], repeat=2)))
def test_matrix_vector_products_are_exact(dtype, shape, transpose_a, transpose_b):
    rng = np.random.default_rng(11)
    for K, length in itertools.product(DEPTHS, (1, 5, 8, 19, 64)):
        M, N = (1, length) if shape == "row" else (length, 1)
        a, b = _integers(rng, (M, K), dtype), _integers(rng, (K, N), dtype)
        got = run_gemm(a, b, transpose_a=transpose_a, transpose_b=transpose_b)
        np.testing.assert_array_equal(got, a.astype(np.float64) @ b, err_msg=f"M={M} N={N} K={K}")


@pytest.mark.parametrize("addend", ["bias", "matrix", "in place"])
@pytest.mark.parametrize("shape", ["row", "column"])
@pytest.mark.parametrize("transpose_a, transpose_b", list(itertools.product([False, True], repeat=2)))
def test_the_addend_is_added_once(addend, shape, transpose_a, transpose_b):
    rng = np.random.default_rng(5)
    for K in (1, 33, 130):
        M, N = (1, 37) if shape == "row" else (45, 1)
        a, b = _integers(rng, (M, K), np.float32), _integers(rng, (K, N), np.float32)
        got, x = run_gemm(a, b, transpose_a=transpose_a, transpose_b=transpose_b, addend=addend)
        want = a.astype(np.float64) @ b + x.astype(np.float64)
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-5, err_msg=f"K={K}")


@pytest.mark.parametrize("shape", ["row", "column"])
def test_a_strided_output_row_takes_the_general_routine(shape):
    """C with columns padded (ldc > N), which the axpy shape cannot write contiguously."""
    rng = np.random.default_rng(3)
    M, N = (1, 21) if shape == "row" else (30, 1)
    a, b = _integers(rng, (M, 40), np.float32), _integers(rng, (40, N), np.float32)
    for transpose_a in (False, True):
        got = run_gemm(a, b, transpose_a=transpose_a, extra_columns=3)  # also checks nothing past N is written
        np.testing.assert_array_equal(got, a.astype(np.float64) @ b)


def test_fractional_values_match_numpy_closely():
    rng = np.random.default_rng(9)
    a = rng.standard_normal((1, 1000)).astype(np.float32)
    b = rng.standard_normal((1000, 300)).astype(np.float32)
    np.testing.assert_allclose(run_gemm(a, b), a.astype(np.float64) @ b, rtol=2e-5, atol=2e-4)
    np.testing.assert_allclose(run_gemm(b.T.copy(), a.T.copy()), b.T.astype(np.float64) @ a.T, rtol=2e-5,
                               atol=2e-4)


def test_a_batch_of_one_through_a_one_output_layer_and_its_gradients():
    """Forward (1 x K @ K x 1) and the gradients' products (K x 1 @ 1 x 1, 1 x 1 @ 1 x K)
    through a session, against numpy."""
    import tfc.compat.v1 as tf

    rng = np.random.default_rng(2)
    x_value = rng.standard_normal((1, 70)).astype(np.float32)
    w_value = rng.standard_normal((70, 1)).astype(np.float32)
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 70])
        w = tf.constant(w_value)
        y = tf.matmul(x, w)
        grad_x, grad_w = tf.gradients(tf.reduce_sum(y * y), [x, w])
        with tf.Session() as sess:
            got_y, got_gx, got_gw = sess.run([y, grad_x, grad_w], {x: x_value})
    want_y = x_value.astype(np.float64) @ w_value
    np.testing.assert_allclose(got_y, want_y, rtol=1e-5)
    np.testing.assert_allclose(got_gx, 2 * want_y @ w_value.T, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got_gw, x_value.T @ (2 * want_y), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("addend", [None, "bias", "matrix", "in place"])
@pytest.mark.parametrize("shape", ["row", "column"])
@pytest.mark.parametrize("transpose_a, transpose_b", list(itertools.product([False, True], repeat=2)))
def test_large_products_split_over_the_pool_give_the_same_bits(addend, shape, transpose_a, transpose_b):
    """At least gemv.PARALLEL_ELEMENTS matrix elements: the outputs are cut into ranges,
    one task each, and every output sums in the same order as on one thread."""
    from tfc.codegen.kernels import gemv

    rng = np.random.default_rng(13)
    M, N, K = (1, 1003, 1050) if shape == "row" else (1003, 1, 1050)
    assert max(M, N) * K >= gemv.PARALLEL_ELEMENTS
    a = rng.standard_normal((M, K)).astype(np.float32)
    b = rng.standard_normal((K, N)).astype(np.float32)
    results = [run_gemm(a, b, transpose_a=transpose_a, transpose_b=transpose_b, threads=threads, addend=addend)
               for threads in (1, 2)]
    if addend is not None:
        results = [got for got, _ in results]
    np.testing.assert_array_equal(results[0], results[1])
    np.testing.assert_allclose(results[1], a.astype(np.float64) @ b + (0 if addend is None else 0), rtol=1e-3,
                               atol=1e-3 if addend is None else 4)
