"""Cooperative kernels (tfc/codegen/gpu/block.py): row reductions and row fusions run a
block of threads per row, with warp shuffles and shared memory; checked on the host
emulation against the evaluator and against a numpy model of the exact combination
order, and as PTX (barriers, shuffles, shared memory) that ptxas accepts."""
import numpy as np
import pytest

import tfc
import tfc.compat.v1 as tf
from tfc import ir
from tfc.codegen.gpu import block
from tfc.codegen.gpu import ptx as ptx_module
from tfc.codegen.gpu.plan import Launch
from tfc.codegen.llvm_util import F32, CodegenError
from tfc.codegen.kernel import Kernel
from tfc.compiler import compile_module
from tfc.ir.dims import sym
from tfc.runtime.cuda.executable import LaunchConfig

from ..helpers import assert_agrees, func, reference
from .emulation import compiled_for_gpu, compiled_on_device

EMULATE = True  # test_device_cooperative.py runs these tests on a CUDA device with False
needs_ptxas = pytest.mark.skipif(ptx_module.ptxas_path() is None or ptx_module.libdevice_path() is None,
                                 reason="ptxas or libdevice is not installed")


def _compiled(text: str):
    return compiled_for_gpu(text) if EMULATE else compiled_on_device(text)


def _launches(result) -> list:
    return [step for step in result.program.plan if isinstance(step, Launch)]


def _model_block_sum(row: np.ndarray, threads: int) -> np.float32:
    """The order block_reduce combines a row in: per-thread strided sums, a butterfly in
    each warp, the warps' totals (padded with zeros to a warp) by a butterfly again."""
    partial = np.zeros(threads, np.float32)
    for tid in range(threads):
        for value in row[tid::threads]:
            partial[tid] = np.float32(partial[tid] + value)

    def butterfly(values):
        values = values.copy()
        for distance in block.SHUFFLE_STAGES:
            values = np.array([np.float32(values[lane] + values[lane ^ distance]) for lane in range(32)],
                              np.float32)
        return values[0]

    totals = [butterfly(partial[w * 32:(w + 1) * 32]) for w in range(threads // 32)]
    if len(totals) == 1:
        return totals[0]
    return butterfly(np.array(totals + [0.0] * (32 - len(totals)), np.float32))


def test_threads_follow_the_row_length():
    assert [block.threads_for(n) for n in (1, 10, 32, 33, 100, 256, 5000)] == [32, 32, 32, 64, 128, 256, 256]
    assert block.threads_for(sym("s0")) == block.THREADS


@pytest.mark.parametrize("length", [1000, 40])
def test_a_row_sum_is_combined_in_the_documented_order(length):
    text = func(f"(%x: f32[s0,{length}]) -> (f32[s0])", '%0 = reduce %x {dims=[1], op="sum"} : f32[s0]',
                "return %0")
    result = _compiled(text)
    (launch,) = _launches(result)
    assert launch.block == block.threads_for(length) and str(launch.extent) == "s0"
    x = np.random.default_rng(0).standard_normal((131, length)).astype(np.float32)
    got = result.executable.run([x])[0]
    expected = np.array([_model_block_sum(row, launch.block) for row in x[:6]])
    np.testing.assert_array_equal(got[:6], expected)  # bit for bit: what the GPU computes
    np.testing.assert_allclose(got, x.sum(1), rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("elem, kind", [("f32", "max"), ("f64", "sum"), ("f16", "sum"), ("i32", "sum"),
                                        ("i8", "prod"), ("i64", "min"), ("pred", "and"), ("pred", "or")])
def test_row_reductions_of_every_type_agree_with_the_evaluator(elem, kind):
    text = func(f"(%x: {elem}[s0,3,s1]) -> ({elem}[s0,3])", f'%0 = reduce %x {{dims=[2], op="{kind}"}} : {elem}[s0,3]',
                "return %0")
    result = _compiled(text)
    assert [step.block for step in _launches(result)] == [block.THREADS]
    rng = np.random.default_rng(1)
    for s0, s1 in ((0, 5), (2, 0), (50, 1), (45, 300), (3, 1100)):
        if elem == "pred":
            x = rng.random((s0, 3, s1)) < (0.995 if kind == "and" else 0.005)
        elif elem.startswith("f"):
            x = rng.uniform(-2, 2, (s0, 3, s1)).astype(elem.replace("f", "float"))
        else:
            x = rng.integers(-2, 3, (s0, 3, s1)).astype(elem.replace("i", "int"))
        expected = ir.evaluate(reference(text), [x.copy()])[0]
        got = result.executable.run([x.copy()])[0]
        tolerance = {"f16": (3e-3, 3e-2), "f64": (1e-12, 1e-12)}.get(elem)
        assert_agrees(expected, got, exact=tolerance is None, tolerance=tolerance, label=f"{kind} {x.shape}")


def test_results_do_not_depend_on_the_grid():
    text = func("(%x: f32[s0,777]) -> (f32[s0])", '%0 = reduce %x {dims=[1], op="sum"} : f32[s0]', "return %0")
    x = np.random.default_rng(2).standard_normal((200, 777)).astype(np.float32)
    runs = []
    for config in (LaunchConfig(block=32, max_blocks=3), LaunchConfig(block=256, max_blocks=1 << 16)):
        result = compile_module(ir.parse(text), target="cuda", emulate=EMULATE, arch="sm_80" if EMULATE else None)
        result.executable.code.config = config
        runs.append(result.executable.run([x])[0])
    np.testing.assert_array_equal(runs[0], runs[1])


def _row_graph(length, dtype=tf.float32):
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(dtype, [None, length], name="x")
        probabilities = tf.nn.softmax(x)
        mean, variance = tf.nn.moments(x, axes=[1], keep_dims=True)
        normalised = (x - mean) * tf.rsqrt(variance + 1e-5)
    return graph, x, [probabilities, normalised]


@pytest.mark.parametrize("length", [7, 300, 1500])
def test_softmax_and_layer_norm_run_a_block_per_row(length, monkeypatch):
    monkeypatch.setenv("TFC_GPU_EMULATION", "1")
    graph, x, fetches = _row_graph(length)
    compiled = tfc.compile(fetches, feeds=[x], target="cuda", arch="sm_80", emulate=EMULATE)
    launches = _launches(compiled.result)
    assert [step.block for step in launches] == [block.threads_for(length)] * 2
    data = np.random.default_rng(3).standard_normal((37, length)).astype(np.float32) * 3
    probabilities, normalised = compiled(data)
    exp = np.exp(data - data.max(1, keepdims=True))
    np.testing.assert_allclose(probabilities, exp / exp.sum(1, keepdims=True), rtol=1e-5, atol=1e-7)
    expected = (data - data.mean(1, keepdims=True)) / np.sqrt(data.var(1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(normalised, expected, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("length, written_out", [(7, True), (1024, True), (1500, True), (5000, False)])
def test_a_static_rows_passes_are_written_out_with_the_loops_bits(length, written_out, monkeypatch):
    """Up to UNROLLED_SHARE elements per thread a pass over the row is straight-line code
    (no "rj" / "j" loop in the kernel), combining in the loop's order: the same bits."""
    from tfc.codegen.gpu import row

    monkeypatch.setenv("TFC_GPU_EMULATION", "1")
    data = np.random.default_rng(5).standard_normal((5, length)).astype(np.float32) * 3
    graph, x, fetches = _row_graph(length)
    compiled = tfc.compile(fetches, feeds=[x], target="cuda", arch="sm_80", emulate=EMULATE)
    text = compiled.result.program.module_text("ptx")
    assert ("rj.head" not in text) == written_out
    monkeypatch.setattr(row, "UNROLLED_SHARE", 0)
    looped = tfc.compile(fetches, feeds=[x], target="cuda", arch="sm_80", emulate=EMULATE)
    assert "rj.head" in looped.result.program.module_text("ptx")
    for got, expected in zip(compiled(data), looped(data)):
        np.testing.assert_array_equal(got, expected)


def test_f16_rows_accumulate_in_f32(monkeypatch):
    monkeypatch.setenv("TFC_GPU_EMULATION", "1")
    graph, x, fetches = _row_graph(500, tf.float16)
    compiled = tfc.compile(fetches[:1], feeds=[x], target="cuda", arch="sm_80", emulate=EMULATE)
    data = np.random.default_rng(4).standard_normal((9, 500)).astype(np.float16)
    (probabilities,) = compiled(data)
    wide = data.astype(np.float64)
    exp = np.exp(wide - wide.max(1, keepdims=True))
    np.testing.assert_allclose(probabilities.astype(np.float64), exp / exp.sum(1, keepdims=True), rtol=2e-2,
                               atol=2e-5)


def test_phases_do_not_nest_and_barriers_stay_out_of_phases():
    from tfc.codegen.gpu.program import GpuProgram

    program = GpuProgram(ir.parse(func("(%x: f32[4]) -> (f32[4])", "return %x")).functions["main"])
    with pytest.raises(CodegenError, match="multiple of 32"):
        block.Block(Kernel(program, "k.odd", []), 48, "ptx")
    for target in ("ptx", "host"):
        cooperative = block.Block(Kernel(program, f"k.{target}", []), 64, target)
        with cooperative.phase():
            with pytest.raises(CodegenError, match="phases do not nest"):
                with cooperative.phase():
                    pass
            with pytest.raises(CodegenError, match="barrier inside a phase"):
                cooperative.barrier()
            with pytest.raises(CodegenError, match="warp reduction inside a phase"):
                cooperative.warp_reduce(cooperative.private(F32), "sum", ir.ElemType.F32)




@needs_ptxas
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_cooperative_kernels_assemble_with_barriers_shuffles_and_shared_memory(arch):
    graph, x, fetches = _row_graph(300)
    with graph.as_default():
        wide = tf.placeholder(tf.float64, [None, 3000], name="wide")
        fetches = fetches + [tf.reduce_max(wide, axis=1), tf.reduce_any(wide > 0, axis=1)]
    compiled = tfc.compile(fetches, feeds=[x, wide], target="cuda", arch=arch)
    program = compiled.result.program
    text = ptx_module.compile_ptx(program.module_text("ptx"), program.kernels, arch)
    assert "bar.sync" in text and "shfl.sync.bfly.b32" in text
    assert "ld.shared" in text and "st.shared" in text
    assert ptx_module.assemble(text, arch)[:4] == b"\x7fELF"
    host = program.module_text("host")
    assert "llvm.nvvm" not in host and "addrspace(3)" not in host


def test_no_phase_reads_what_another_thread_of_it_writes(monkeypatch):
    """Every cooperative kernel kind gives the same bits with the emulation running each
    phase's threads first to last and last to first: no missing barrier (a race on the GPU)."""
    def build():
        graph = tf.Graph()
        with graph.as_default():
            x = tf.placeholder(tf.float32, [None, 300], name="x")
            w = tf.placeholder(tf.float32, [300, 200], name="w")
            image = tf.placeholder(tf.float32, [None, 9, 9, 3], name="image")
            kernel = tf.placeholder(tf.float32, [3, 3, 3, 40], name="kernel")
            mean, variance = tf.nn.moments(x, axes=[1], keep_dims=True)
            fetches = [tf.nn.softmax(x), (x - mean) * tf.rsqrt(variance + 1e-5), tf.reduce_max(x, axis=1),
                       tf.nn.relu(tf.matmul(x, w)), tf.nn.conv2d(image, kernel, [1, 1, 1, 1], "SAME"),
                       tf.reduce_sum(x), tf.transpose(x)]
            return tfc.compile(fetches, feeds=[x, w, image, kernel], target="cuda", arch="sm_80", emulate=EMULATE)

    rng = np.random.default_rng(9)
    inputs = [rng.standard_normal((70, 300)).astype(np.float32), rng.standard_normal((300, 200)).astype(np.float32),
              rng.standard_normal((8, 9, 9, 3)).astype(np.float32),
              rng.standard_normal((3, 3, 3, 40)).astype(np.float32)]
    ascending = build()
    assert sum(1 for s in _launches(ascending.result) if s.block) == 7
    monkeypatch.setenv(block.DESCENDING_ENV, "1")
    descending = build()
    for first, second in zip(ascending(*inputs), descending(*inputs)):
        np.testing.assert_array_equal(first, second)
