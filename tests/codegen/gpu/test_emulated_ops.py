"""Every core op, compiled for the GPU and run on the host emulation of its thread grids,
agrees with the evaluator: tests/codegen/test_ops_vs_evaluator.py (random shapes with
size-0 dims, rank 0, every element type, NaN, infinities, integer extremes) re-run on
GPU programs (see emulation.py)."""
import pytest

from .. import helpers
from .. import test_ops_vs_evaluator as cpu_tests
from .emulation import compiled_for_gpu, patch, rerun

rerun(cpu_tests, globals(), skip={"test_every_core_op_is_covered"})


@pytest.fixture(autouse=True)
def _gpu_programs(monkeypatch):
    patch(monkeypatch, cpu_tests)


def test_programs_here_are_gpu_programs():
    text = helpers.func("(%x: f32[s0]) -> (f32[s0])", "%0 = tanh %x : f32[s0]", "return %0")
    result = compiled_for_gpu(text)
    assert result.target == "cuda"
    assert list(result.program.kernels) == ["tfc_k0_tanh"]
