"""Every kernel kind becomes PTX that ptxas accepts for sm_80 and sm_90, and the math
goes through libdevice.

One graph holds a kernel of each kind the GPU program has: loop fusions (flat, nested,
a concatenation written piece by piece), input fusions into a reduction, row fusions
(softmax), dots and convs with epilogues, gather, scatter_add, argmax, checks (labels,
tf.Assert), RNG, pools and their gradients, f16 reductions (device heap scratch), and
kernels inside a while loop and a cond.
"""
import re

import numpy as np
import pytest

import tfc
import tfc.compat.v1 as tf
from tfc.codegen.gpu import ptx as ptx_module
from tfc.codegen.llvm_util import CodegenError

needs_ptxas = pytest.mark.skipif(ptx_module.ptxas_path() is None, reason="ptxas is not installed")
needs_libdevice = pytest.mark.skipif(ptx_module.libdevice_path() is None, reason="libdevice is not installed")


def _every_kind():
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float32, [None, 8, 8, 3], name="x")
        labels = tf.placeholder(tf.int32, [None], name="labels")
        w = tf.constant(np.random.default_rng(0).standard_normal((3, 3, 3, 4)).astype(np.float32))
        conv = tf.nn.relu(tf.nn.conv2d(x, w, [1, 1, 1, 1], "SAME") + 0.5)
        pool = tf.nn.max_pool(conv, [1, 2, 2, 1], [1, 2, 2, 1], "SAME")
        flat = tf.reshape(pool, [-1, 64])
        dense = tf.matmul(flat, tf.ones([64, 10])) + tf.range(10, dtype=tf.float32)
        loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=dense))
        pool_grad = tf.gradients(loss, [x])[0]
        probs = tf.nn.softmax(dense)
        pieces = tf.concat([tf.tanh(dense), tf.exp(dense), tf.erf(dense)], axis=1)
        half = tf.reduce_sum(tf.cast(dense, tf.float16), axis=0)
        gathered = tf.gather(dense, labels)
        scattered = tf.tensor_scatter_nd_add(tf.zeros([6, 10]), tf.reshape(labels, [-1, 1]), dense)
        best = tf.argmax(dense, axis=1)
        noise = tf.random_normal([5, 7], seed=1) + tf.truncated_normal([7], seed=2)
        checked = tf.Assert(tf.reduce_all(dense > -1e9), [dense])
        with tf.control_dependencies([checked]):
            asserted = tf.identity(tf.reduce_max(dense))
        loop = tf.while_loop(lambda i, v: i < 3, lambda i, v: (i + 1, tf.sin(v) * 2.0), [0, tf.reduce_sum(dense)])
        branch = tf.cond(tf.reduce_sum(dense) > 0, lambda: tf.log1p(tf.abs(dense)), lambda: tf.pow(dense, 2.0))
        fetches = [loss, pool_grad, probs, pieces, half, gathered, scattered, best, noise, asserted, loop[1], branch]
        return tfc.compile(fetches, feeds=[x, labels], target="cuda", arch="sm_80")


@pytest.fixture(scope="module")
def program():
    return _every_kind()


@needs_libdevice
def test_every_kernel_kind_is_in_the_program(program):
    kinds = {re.sub(r"^tfc_k\d+_", "", name) for name in program.result.program.kernels}
    assert {"fusion", "dot", "reduce", "gather", "scatter_add", "argmax", "check", "rng",
            "select_and_scatter"} <= kinds | {k.split("_")[0] for k in kinds}, kinds


@needs_libdevice
def test_math_goes_through_libdevice(program):
    text = program.ptx
    assert ".target sm_80" in text
    assert "ex2.approx" not in text or "__nv_" not in text  # libdevice inlined: no calls left
    assert not re.search(r"call[^;]*__nv_", text)
    assert not re.search(r"call[^;]*(tanhf|expf|logf|erff|log1pf|sinf|powf)\b", text)


@needs_ptxas
@needs_libdevice
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_ptxas_assembles_every_kernel_kind(program, arch):
    result = program.result
    text = ptx_module.compile_ptx(result.program.module_text("ptx"), result.program.kernels, arch)
    assert f".target {arch}" in text
    for name in result.program.kernels:
        assert f".entry {name}(" in text
    cubin = ptx_module.assemble(text, arch)
    assert cubin[:4] == b"\x7fELF"


def test_libdevice_names():
    text = ('declare float @"llvm.exp.f32"(float)\ndeclare double @llvm.pow.f64(double, double)\n'
            'declare float @"tanhf"(float)\ndeclare float @"llvm.sqrt.f32"(float)\n')
    renamed = ptx_module.to_libdevice(text)
    assert "@__nv_expf(" in renamed and "@__nv_pow(" in renamed and "@__nv_tanhf(" in renamed
    assert '@"llvm.sqrt.f32"' in renamed  # NVPTX lowers sqrt exactly (sqrt.rn)


def test_host_functions_are_refused_by_name():
    assert ptx_module.device_function("llvm.fma.f32")
    assert ptx_module.device_function("llvm.memcpy.p0.p0.i64")
    assert ptx_module.device_function("llvm.fptosi.sat.i32.f32")
    assert ptx_module.device_function("erff") and ptx_module.device_function("malloc")
    assert not ptx_module.device_function("tfc_parallel_for")
    assert not ptx_module.device_function("aligned_alloc")
    assert not ptx_module.device_function("llvm.x86.avx2.permd")


def test_unknown_arch_is_refused():
    with pytest.raises(CodegenError, match="unknown CUDA architecture 'gfx90a'"):
        ptx_module.target_machine("gfx90a")


@needs_ptxas
def test_ptxas_errors_are_reported():
    with pytest.raises(CodegenError, match="ptxas rejected the PTX for sm_80"):
        ptx_module.assemble(".version 7.0\n.target sm_80\n.address_size 64\nnot ptx at all\n", "sm_80")


def test_remainders_become_libdevice_fmod():
    """NVPTX expands frem as x - trunc(x/y)*y (17662742 rem 2.5 = -0.5 on an H200): every
    scalar frem becomes C's fmod, which to_libdevice renames to libdevice's exact one."""
    text = ("define void @k(float %a, double %b) {\n"
            '  %".2" = frem float %a, 2.500000e+00\n'
            "  %s = frem fast double %b, %b\n"
            "  ret void\n}\n")
    rewritten = ptx_module.exact_remainders(text)
    assert '  %".2" = call float @fmodf(float %a, float 2.500000e+00)\n' in rewritten
    assert "  %s = call double @fmod(double %b, double %b)\n" in rewritten
    assert rewritten.endswith("\ndeclare double @fmod(double, double)\n\ndeclare float @fmodf(float, float)\n")
    renamed = ptx_module.to_libdevice(rewritten)
    assert "@__nv_fmodf(float %a" in renamed and "declare double @__nv_fmod(double, double)" in renamed


def test_a_declared_fmod_is_not_declared_twice():
    text = "declare float @fmodf(float, float)\ndefine float @k(float %a) {\n  %r = frem float %a, %a\n  ret float %r\n}\n"
    assert ptx_module.exact_remainders(text).count("declare float @fmodf") == 1


def test_a_vector_remainder_is_refused():
    text = "define <2 x float> @k(<2 x float> %a) {\n  %r = frem <2 x float> %a, %a\n  ret <2 x float> %r\n}\n"
    with pytest.raises(CodegenError, match="vector frem"):
        ptx_module.exact_remainders(text)


@needs_libdevice
def test_floormod_kernel_calls_no_approximate_remainder():
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float32, [None], name="x")
        y = tf.placeholder(tf.float32, [None], name="y")
        program = tfc.compile(tf.floormod(x, y), feeds=[x, y], target="cuda", arch="sm_90")
    optimised = ptx_module.compile_ptx(program.result.program.module_text("ptx"), program.result.program.kernels,
                                       "sm_90", keep_ir=True)[1]
    assert " frem " not in optimised
    assert not re.search(r"call[^;]*fmod", program.ptx)  # libdevice's fmodf inlined
