"""The packed GEMM routine of the runtime, called directly, against numpy in float64.

Shapes cross every blocking edge: K over several KC blocks (and a short last one), N
over two NC blocks, K so deep that fewer than NC columns are packed at once, M, N and K
that are not multiples of MR, NR or the vector width, transposed operands (any strides),
a leading dimension wider than N, the addend X (a bias row, a matrix, C itself) and the
empty cases. Each runs with the pool at 1 and 2 threads, which must agree bit for bit.
"""
from __future__ import annotations

import ctypes

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tfc import ir
from tfc.codegen import parallel
from tfc.codegen.kernels import gemm

INT = ctypes.c_int64
PTR = ctypes.c_void_p


def routine(dtype):
    elem = ir.ElemType.F32 if dtype == np.float32 else ir.ElemType.F64
    prototype = ctypes.CFUNCTYPE(None, INT, INT, INT, PTR, INT, INT, PTR, INT, INT, PTR, INT, PTR, INT)
    return prototype(parallel.gemm_address(elem))


def run_gemm(a, b, transpose_a=False, transpose_b=False, extra_columns=0, threads=1, addend=None):
    """C = A @ B (+ addend: "bias" a row, "matrix" an M x N array, "in place" C's own
    values) through the routine; A and B are passed as views of transposed copies when
    asked (so their strides, not their layout, say which way they run). Returns C and
    the X added (None without)."""
    M, K = a.shape
    N = b.shape[1]
    a_store = np.ascontiguousarray(a.T) if transpose_a else np.ascontiguousarray(a)
    b_store = np.ascontiguousarray(b.T) if transpose_b else np.ascontiguousarray(b)
    sam, sak = (1, M) if transpose_a else (K, 1)
    sbk, sbn = (1, K) if transpose_b else (N, 1)
    ldc = N + extra_columns
    c = np.full((M, ldc), 7.0, a.dtype)
    x, x_address, ldx = None, None, 0
    if addend == "bias":
        x = np.linspace(-1, 1, N).astype(a.dtype)
        x_address = x.ctypes.data
    elif addend == "matrix":
        x = np.linspace(-2, 2, M * N).astype(a.dtype).reshape(M, N)
        x_address, ldx = x.ctypes.data, N
    elif addend == "in place":
        c[:, :N] = np.linspace(3, -3, M * N).astype(a.dtype).reshape(M, N)
        x = c[:, :N].copy()
        x_address, ldx = c.ctypes.data, ldc
    previous = parallel.set_pool_size(threads)
    try:
        routine(a.dtype.type)(M, N, K, a_store.ctypes.data, sam, sak, b_store.ctypes.data, sbk, sbn,
                              c.ctypes.data, ldc, x_address, ldx)
    finally:
        parallel.set_pool_size(previous)
    if extra_columns:
        assert (c[:, N:] == 7.0).all(), "the routine wrote past N in a row of C"
    return (c[:, :N], x) if addend else c[:, :N]


def check(M, N, K, dtype, **layout):
    rng = np.random.default_rng(M * 7919 + N * 31 + K)
    a = rng.uniform(-1, 1, (M, K)).astype(dtype)
    b = rng.uniform(-1, 1, (K, N)).astype(dtype)
    single = run_gemm(a, b, threads=1, **layout)
    threaded = run_gemm(a, b, threads=2, **layout)
    np.testing.assert_array_equal(threaded, single)
    expected = a.astype(np.float64) @ b.astype(np.float64)
    tolerance = 1e-5 * max(K, 1) if dtype == np.float32 else 1e-13 * max(K, 1)
    np.testing.assert_allclose(single, expected, rtol=tolerance, atol=tolerance)


SHAPES = {
    "one element": (1, 1, 1),
    "K over KC blocks with a short tail": (13, 37, 2 * 256 + 19),
    "N over two NC blocks": (30, 2048 + 70, 20),
    "K too deep to pack NC columns": (20, 1100, gemm.PACKED_B_ELEMENTS // 1024 + 100),
    "many row panels, parallel": (300, 200, 150),
    "one row, parallel over columns": (1, 4000, 300),
    # Few rows: the columns are split between tasks, which share one packed copy of A.
    "few rows, A packed once for every column task": (64, 512, 2 * 256 + 3),
    "few rows, A too big to pack whole": (25, 600, gemm.SHARED_A_ELEMENTS // 36 + 7),
}


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", list(SHAPES))
def test_blocking_edges(case, dtype):
    check(*SHAPES[case], dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("transpose_a, transpose_b", [(True, False), (False, True), (True, True)])
def test_transposed_operands_and_wide_rows(transpose_a, transpose_b, dtype):
    check(97, 130, 270, dtype, transpose_a=transpose_a, transpose_b=transpose_b, extra_columns=5)


def test_empty_contraction_writes_zeros():
    a = np.zeros((5, 0), np.float32)
    b = np.zeros((0, 9), np.float32)
    np.testing.assert_array_equal(run_gemm(a, b, extra_columns=2), np.zeros((5, 9), np.float32))


def test_empty_output_touches_nothing():
    a = np.ones((0, 4), np.float64)
    b = np.ones((4, 3), np.float64)
    assert run_gemm(a, b).shape == (0, 3)
    c = run_gemm(np.ones((3, 4)), np.ones((4, 0)), extra_columns=2)
    assert c.shape == (3, 0)


@settings(max_examples=40, deadline=None)
@given(M=st.integers(1, 70), N=st.integers(1, 90), K=st.integers(1, 600),
       dtype=st.sampled_from([np.float32, np.float64]), transpose_a=st.booleans(), transpose_b=st.booleans())
def test_random_shapes(M, N, K, dtype, transpose_a, transpose_b):
    check(M, N, K, dtype, transpose_a=transpose_a, transpose_b=transpose_b)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("addend", ["bias", "matrix", "in place"])
@pytest.mark.parametrize("M, N, K", [(64, 512, 256), (13, 37, 2 * 256 + 19), (30, 2048 + 70, 20), (7, 9, 0)])
def test_the_addend_is_added_once_to_every_element(M, N, K, addend, dtype):
    # A dot's "+ bias" / "+ accumulator" epilogue: added where the first K block is stored
    # (several K blocks, partial tiles, two NC blocks, and K = 0 where C is just X).
    rng = np.random.default_rng(M + N + K)
    a = rng.uniform(-1, 1, (M, K)).astype(dtype)
    b = rng.uniform(-1, 1, (K, N)).astype(dtype)
    single, x = run_gemm(a, b, threads=1, addend=addend, extra_columns=3)
    threaded, _ = run_gemm(a, b, threads=2, addend=addend, extra_columns=3)
    np.testing.assert_array_equal(threaded, single)
    expected = a.astype(np.float64) @ b.astype(np.float64) + x.astype(np.float64)
    tolerance = 1e-5 * max(K, 1) if dtype == np.float32 else 1e-13 * max(K, 1)
    np.testing.assert_allclose(single, expected, rtol=tolerance, atol=tolerance)
