"""Flat loop kernels (tfc/codegen/kernels/loop.py): a large loop computing inline
transcendental functions asks LLVM to interleave vector iterations; results match the evaluator at sizes
around the interleaved loop's step (4 vectors of 8 f32 or 4 f64 on AVX2)."""
from __future__ import annotations

import numpy as np
import pytest

from tfc import ir
from tfc.codegen.kernels.loop import INTERLEAVE, INTERLEAVE_FROM
from tfc.compiler import compile_module
from tfc.ir.evaluator import evaluate

from ..helpers import func

CHAIN = func("(%x: f32[s0]) -> (f32[s0])",
             "%c = constant dense<1.5> : f32[]", "%b = broadcast %c {dims=[]} : f32[s0]",
             "%m = mul %x, %b : f32[s0]", "%t = tanh %m : f32[s0]", "%s = logistic %x : f32[s0]",
             "%p = mul %t, %s : f32[s0]", "%q = mul %x, %x : f32[s0]", "%r = add %p, %q : f32[s0]", "return %r")
PLAIN = func("(%x: f32[s0]) -> (f32[s0])", "%q = mul %x, %x : f32[s0]", "%r = add %q, %x : f32[s0]", "return %r")


def _hinted_loops(text: str) -> int:
    llvm_ir = compile_module(ir.parse(text)).llvm_ir
    hint = f'!{{ !"llvm.loop.interleave.count", i32 {INTERLEAVE} }}'
    return sum(line.endswith(hint) for line in llvm_ir.splitlines()) and llvm_ir.count(", !llvm.loop !")


def test_only_large_loops_with_transcendental_functions_are_interleaved():
    assert _hinted_loops(CHAIN) == 1  # a size known at run time
    assert _hinted_loops(CHAIN.replace("s0", str(INTERLEAVE_FROM))) == 1
    assert _hinted_loops(CHAIN.replace("s0", str(INTERLEAVE_FROM - 1))) == 0
    assert _hinted_loops(PLAIN) == 0


@pytest.mark.parametrize("elem", ["f32", "f64"])
def test_an_interleaved_loop_matches_the_evaluator_at_every_remainder(elem):
    text = CHAIN.replace("f32", elem)
    executable = compile_module(ir.parse(text)).executable
    rng = np.random.default_rng(7)
    dtype = np.float32 if elem == "f32" else np.float64
    for size in (1, 7, 31, 32, 33, 63, 65, 1000, 4099):
        x = (rng.standard_normal(size) * 3).astype(dtype)
        expected = evaluate(ir.parse(text).main, [x])[0]
        np.testing.assert_allclose(executable.run([x])[0], expected, rtol=4e-7 if elem == "f32" else 1e-14,
                                   atol=1e-7 if elem == "f32" else 1e-15, err_msg=f"size {size}")
