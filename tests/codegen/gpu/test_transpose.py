"""Transposes through shared memory (tfc/codegen/gpu/transpose.py), a block per 32 x 32
tile, on the host emulation: every permutation that moves the innermost dim, tails and
empty dims, every element size, exactly numpy's result."""
import numpy as np
import pytest

from tfc.codegen.gpu import ptx as ptx_module
from tfc.codegen.gpu import transpose
from tfc.codegen.gpu.plan import Launch

from ..helpers import func
from .emulation import compiled_for_gpu, compiled_on_device

EMULATE = True  # test_device_cooperative.py runs these tests on a CUDA device with False
NP = {"f32": np.float32, "f16": np.float16, "f64": np.float64, "i8": np.int8, "i64": np.int64, "pred": np.bool_}


def _compiled(text: str):
    return compiled_for_gpu(text) if EMULATE else compiled_on_device(text)


def _program(elem: str, shape: str, perm: list, out: str) -> str:
    return func(f"(%x: {elem}{shape}) -> ({elem}{out})", f"%0 = transpose %x {{perm={perm}}} : {elem}{out}",
                "return %0")


@pytest.mark.parametrize("elem", list(NP))
def test_a_matrix_transpose_in_tiles(elem):
    result = _compiled(_program(elem, "[s0,s1]", [1, 0], "[s1,s0]"))
    (launch,) = [s for s in result.program.plan if isinstance(s, Launch)]
    assert launch.block == transpose.THREADS
    rng = np.random.default_rng(0)
    for m, n in ((1, 1), (0, 7), (33, 65), (100, 31), (64, 64)):
        x = (rng.standard_normal((m, n)) * 50).astype(NP[elem])
        np.testing.assert_array_equal(result.executable.run([x])[0], x.T)


@pytest.mark.parametrize("perm", [[3, 1, 2, 0], [0, 2, 1], [2, 0, 1], [1, 2, 0], [0, 1, 3, 2]])
def test_permutations_that_move_the_innermost_dim(perm):
    sizes = [5, 40, 3, 37][:len(perm)]
    shape = "[" + ",".join(["s0"] + [str(s) for s in sizes[1:]]) + "]"
    out = "[" + ",".join(("s0" if p == 0 else str(sizes[p])) for p in perm) + "]"
    result = _compiled(_program("f32", shape, perm, out))
    assert [s.block for s in result.program.plan if isinstance(s, Launch)] == [transpose.THREADS]
    x = np.random.default_rng(1).standard_normal([6] + sizes[1:]).astype(np.float32)
    np.testing.assert_array_equal(result.executable.run([x])[0], x.transpose(perm))


def test_a_transpose_keeping_the_innermost_dim_stays_a_thread_per_element():
    result = _compiled(_program("f32", "[4,5,6]", [1, 0, 2], "[5,4,6]"))
    assert [s.block for s in result.program.plan if isinstance(s, Launch)] == [None]
    x = np.arange(120, dtype=np.float32).reshape(4, 5, 6)
    np.testing.assert_array_equal(result.executable.run([x])[0], x.transpose(1, 0, 2))


@pytest.mark.skipif(ptx_module.ptxas_path() is None or ptx_module.libdevice_path() is None,
                    reason="ptxas or libdevice is not installed")
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_the_tiled_transpose_assembles(arch):
    result = _compiled(_program("f16", "[s0,s1]", [1, 0], "[s1,s0]"))
    program = result.program
    text = ptx_module.compile_ptx(program.module_text("ptx"), program.kernels, arch)
    assert "st.shared.b16" in text and "ld.shared.b16" in text and "bar.sync" in text
    assert ptx_module.assemble(text, arch)[:4] == b"\x7fELF"
