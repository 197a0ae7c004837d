"""Threaded kernels give bit-identical results to single-threaded ones.

Each program is large enough for the entry to split its kernels across the pool
(PARALLEL_WORK element-operations or more). It runs with the pool at 1 thread (every
kernel on the calling thread), 2 and 3 threads; the outputs must match bit for bit, and
agree with the evaluator.
"""
from __future__ import annotations

import numpy as np
import pytest

from tfc import ir
from tfc.codegen import parallel

from .helpers import assert_agrees, compiled, func, reference

PROGRAMS = {
    "elementwise f32": (func("(%x: f32[300001]) -> (f32[300001])",
                             "%0 = tanh %x : f32[300001]", "%1 = logistic %x : f32[300001]",
                             "%2 = mul %0, %1 : f32[300001]", "%3 = exp %2 : f32[300001]",
                             "%4 = add %3, %x : f32[300001]", "return %4"), [(300001,)]),
    "elementwise f64": (func("(%x: f64[2,150001]) -> (f64[2,150001])",
                             "%0 = log1p %x : f64[2,150001]", "%1 = expm1 %0 : f64[2,150001]",
                             "return %1"), [(2, 150001)]),
    "row reductions": (func("(%x: f32[512,700]) -> (f32[512], f32[512])",
                            '%0 = reduce %x {dims=[1], op="sum"} : f32[512]',
                            '%1 = reduce %x {dims=[1], op="max"} : f32[512]', "return %0, %1"), [(512, 700)]),
    "softmax rows": (func("(%x: f32[256,1000]) -> (f32[256,1000])",
                          '%0 = reduce %x {dims=[1], op="max"} : f32[256]',
                          "%1 = broadcast %0 {dims=[0]} : f32[256,1000]", "%2 = sub %x, %1 : f32[256,1000]",
                          "%3 = exp %2 : f32[256,1000]", '%4 = reduce %3 {dims=[1], op="sum"} : f32[256]',
                          "%5 = broadcast %4 {dims=[0]} : f32[256,1000]", "%6 = div %3, %5 : f32[256,1000]",
                          "return %6"), [(256, 1000)]),
    "gemm with epilogue": (func("(%a: f32[300,400], %b: f32[400,500], %c: f32[500]) -> (f32[300,500])",
                                "%0 = dot %a, %b {contract=[[1], [0]]} : f32[300,500]",
                                "%1 = broadcast %c {dims=[1]} : f32[300,500]", "%2 = add %0, %1 : f32[300,500]",
                                "%3 = tanh %2 : f32[300,500]", "return %3"), [(300, 400), (400, 500), (500,)]),
    "gemm f64, transposed lhs": (func("(%a: f64[200,150], %b: f64[200,260]) -> (f64[150,260])",
                                      "%0 = dot %a, %b {contract=[[0], [0]]} : f64[150,260]", "return %0"),
                                 [(200, 150), (200, 260)]),
    "direct conv": (func("(%x: f32[8,16,16,32], %w: f32[3,3,32,64]) -> (f32[8,16,16,64])",
                         "%0 = conv %x, %w {padding=[[1, 1], [1, 1]]} : f32[8,16,16,64]", "return %0"),
                    [(8, 16, 16, 32), (3, 3, 32, 64)]),
    "im2col conv": (func("(%x: f32[8,16,16,8], %w: f32[3,3,8,12]) -> (f32[8,16,16,12])",
                         "%0 = conv %x, %w {padding=[[1, 1], [1, 1]]} : f32[8,16,16,12]", "return %0"),
                    [(8, 16, 16, 8), (3, 3, 8, 12)]),
    "grouped conv": (func("(%x: f32[8,16,16,8], %w: f32[3,3,4,8]) -> (f32[8,16,16,8])",
                          "%0 = conv %x, %w {groups=2, padding=[[1, 1], [1, 1]]} : f32[8,16,16,8]", "return %0"),
                     [(8, 16, 16, 8), (3, 3, 4, 8)]),
    "max pool, overlapping windows": (func("(%x: f32[16,40,40,24]) -> (f32[16,20,20,24])",
                                           '%0 = reduce_window %x {op="max", padding=[[0, 0], [1, 1], [1, 1], '
                                           '[0, 0]], strides=[1, 2, 2, 1], window=[1, 3, 3, 1]} : f32[16,20,20,24]',
                                           "return %0"), [(16, 40, 40, 24)]),
    "max pool gradient": (func("(%x: f32[16,40,40,24], %g: f32[16,20,20,24]) -> (f32[16,40,40,24])",
                               '%0 = select_and_scatter %x, %g {padding=[[0, 0], [1, 1], [1, 1], [0, 0]], '
                               'strides=[1, 2, 2, 1], window=[1, 3, 3, 1]} : f32[16,40,40,24]', "return %0"),
                          [(16, 40, 40, 24), (16, 20, 20, 24)]),
}


@pytest.fixture
def restore_pool_size():
    previous = parallel.pool_size()
    yield
    parallel.set_pool_size(previous)


def inputs(text: str, shapes: list) -> list:
    rng = np.random.default_rng(7)
    function = ir.parse(text).main
    return [rng.uniform(0.1, 2.0, shape).astype(arg.type.elem.np_dtype) for arg, shape in zip(function.args, shapes)]


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_threaded_results_equal_single_threaded(name, restore_pool_size):
    text, shapes = PROGRAMS[name]
    args = inputs(text, shapes)
    executable = compiled(text).executable
    results = {}
    for threads in (1, 2, 3):
        parallel.set_pool_size(threads)
        results[threads] = executable.run([a.copy() for a in args])
    for threads in (2, 3):
        for single, threaded in zip(results[1], results[threads]):
            np.testing.assert_array_equal(threaded, single, err_msg=f"{name}: {threads} threads vs 1")
    expected = ir.evaluate(reference(text), [a.copy() for a in args])
    for want, got in zip(expected, results[1]):
        assert_agrees(want, got, exact=False, tolerance=(1e-5, 1e-5), label=name)


def test_pool_size_is_settable(restore_pool_size):
    parallel.set_pool_size(3)
    assert parallel.pool_size() == 3
    with pytest.raises(ValueError, match="at least 1 thread"):
        parallel.set_pool_size(0)


BACK_TO_BACK = """
import ctypes, sys
import numpy as np
from tfc.codegen.parallel import jit_runtime, set_pool_size

code = jit_runtime()
P, I = ctypes.c_void_p, ctypes.c_int64
gemm = ctypes.CFUNCTYPE(None, I, I, I, P, I, I, P, I, I, P, I)(code.engine.get_function_address("tfc_gemm_f32"))
set_pool_size(2)
rng = np.random.default_rng(0)
for M, N, K in ((256, 10, 512), (64, 40, 400), (784, 64, 32)):
    a = rng.uniform(-1, 1, (M, K)).astype(np.float32)
    b = rng.uniform(-1, 1, (K, N)).astype(np.float32)
    first = None
    for _ in range(1500):
        c = np.full((M, N), np.nan, np.float32)
        gemm(M, N, K, a.ctypes.data, K, 1, b.ctypes.data, N, 1, c.ctypes.data, N)
        if first is None:
            first = c
            np.testing.assert_allclose(c, a.astype(np.float64) @ b, rtol=1e-4, atol=1e-4)
        elif not np.array_equal(c, first):
            sys.exit(f"{M}x{N}x{K}: a run differs from the first")
print("ok")
"""


def test_back_to_back_jobs_neither_hang_nor_lose_tasks(tmp_path):
    """Many GEMMs of few tasks each (two pool jobs per call, in quick succession): a
    worker waking late for one job must not claim an index of the next. Runs in a child
    process under a deadline, since the failure this guards against is a hang."""
    import subprocess
    import sys

    script = tmp_path / "back_to_back.py"
    script.write_text(BACK_TO_BACK)
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "ok"
