"""Row kernels (tfc/codegen/kernels/row.py): loops along long rows computing inline
transcendental functions (softmax's exp) are interleaved like flat loops; results match
the evaluator."""
from __future__ import annotations

import numpy as np
import pytest

from tfc import ir
from tfc.codegen.kernels.row import INTERLEAVE_FROM_ROW
from tfc.compiler import compile_module
from tfc.ir.evaluator import evaluate

from ..helpers import func


def _softmax(columns) -> str:
    return func(f"(%x: f32[s0,{columns}]) -> (f32[s0,{columns}])",
                '%m = reduce %x {dims=[1], op="max"} : f32[s0]',
                f"%mb = broadcast %m {{dims=[0]}} : f32[s0,{columns}]",
                f"%d = sub %x, %mb : f32[s0,{columns}]",
                f"%e = exp %d : f32[s0,{columns}]",
                '%s = reduce %e {dims=[1], op="sum"} : f32[s0]',
                f"%sb = broadcast %s {{dims=[0]}} : f32[s0,{columns}]",
                f"%y = div %e, %sb : f32[s0,{columns}]",
                "return %y")


@pytest.mark.parametrize("columns, hinted_loops", [(INTERLEAVE_FROM_ROW, 2), (INTERLEAVE_FROM_ROW - 1, 0), (10, 0)])
def test_long_rows_of_exps_are_interleaved_and_match_the_evaluator(columns, hinted_loops):
    text = _softmax(columns)
    result = compile_module(ir.parse(text))
    assert "row fusion of 7 ops" in result.fusion_report()
    assert result.llvm_ir.count(", !llvm.loop !") == hinted_loops
    x = (np.random.default_rng(5).standard_normal((37, columns)) * 4).astype(np.float32)
    expected = evaluate(ir.parse(text).main, [x])[0]
    np.testing.assert_allclose(result.executable.run([x])[0], expected, rtol=3e-6, atol=1e-9)
