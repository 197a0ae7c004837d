"""GPU reductions (tfc/codegen/gpu/reduction.py): one work item per output, or for small
outputs of large reductions two launches (chunk partials, then their combination; a
block per chunk when the innermost dim is reduced), on the host emulation against the
evaluator."""
import numpy as np
import pytest

from tfc.codegen.gpu.plan import Launch
from tfc.codegen.gpu.reduction import SPLIT

from ..helpers import assert_agrees, func, reference
from .emulation import compiled_for_gpu
from tfc import ir


def _launches(result) -> list:
    return [step for step in result.program.plan if isinstance(step, Launch)]


@pytest.mark.parametrize("elem, kind", [("f32", "sum"), ("f16", "sum"), ("f64", "max"), ("i32", "sum"),
                                        ("f32", "min"), ("i8", "prod"), ("pred", "or"), ("pred", "and")])
def test_small_outputs_of_large_reductions_are_split(elem, kind):
    text = func(f"(%x: {elem}[s0,3,s1]) -> ({elem}[3], {elem}[])",
                f'%0 = reduce %x {{dims=[0, 2], op="{kind}"}} : {elem}[3]',
                f'%1 = reduce %x {{dims=[0, 1, 2], op="{kind}"}} : {elem}[]', "return %0, %1")
    result = compiled_for_gpu(text)
    assert [step.extent for step in _launches(result)][1::2] == [3, 1]  # the combinations
    assert [step.block for step in _launches(result)] == [256, None, 256, None]  # a block per chunk
    rng = np.random.default_rng(0)
    for s0, s1 in ((0, 4), (1, 1), (700, 3), (SPLIT + 1, 5)):
        if elem == "pred":
            x = rng.random((s0, 3, s1)) < (0.999 if kind == "and" else 0.001)
        elif elem.startswith("f"):
            x = rng.uniform(-2, 2, (s0, 3, s1)).astype(elem.replace("f", "float"))
        else:
            x = rng.integers(-1, 2, (s0, 3, s1)).astype(elem.replace("i", "int"))
        expected = ir.evaluate(reference(text), [x.copy()])
        got = result.executable.run([x.copy()])
        tolerance = {"f16": (3e-3, 3e-2), "f32": (1e-5, 1e-4)}.get(elem)
        for e, g in zip(expected, got):
            assert_agrees(e, g, exact=tolerance is None, tolerance=tolerance, label=f"{kind} {x.shape}")


def test_large_outputs_get_a_thread_or_a_block_each():
    """A column sum: a thread per output (coalesced); a row max: a block per output."""
    text = func("(%x: f32[s0,9000]) -> (f32[9000], f32[s0])",
                '%0 = reduce %x {dims=[0], op="sum"} : f32[9000]',
                '%1 = reduce %x {dims=[1], op="max"} : f32[s0]', "return %0, %1")
    result = compiled_for_gpu(text)
    assert [str(step.extent) for step in _launches(result)] == ["9000", "s0"]
    assert [step.block for step in _launches(result)] == [None, 256]
    x = np.random.default_rng(1).standard_normal((37, 9000)).astype(np.float32)
    got = result.executable.run([x])
    np.testing.assert_allclose(got[0], x.sum(0), rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(got[1], x.max(1))


def test_a_column_sum_of_few_outputs_splits_with_a_thread_per_chunk():
    text = func("(%x: f32[s0,5]) -> (f32[5])", '%0 = reduce %x {dims=[0], op="sum"} : f32[5]', "return %0")
    result = compiled_for_gpu(text)
    assert [step.block for step in _launches(result)] == [None, None]  # neighbouring threads: neighbouring columns
    x = np.random.default_rng(3).standard_normal((3000, 5)).astype(np.float32)
    np.testing.assert_allclose(result.executable.run([x])[0], x.sum(0), rtol=1e-5, atol=1e-4)
