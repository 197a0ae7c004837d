"""Structurally identical kernels share one LLVM function, and results do not change."""
from __future__ import annotations

import numpy as np
import pytest

from tfc import ir
from tfc.codegen.program import Program
from tfc.compiler import compile_module

from .helpers import check, func


def _planned(text: str) -> ir.Function:
    module = ir.parse(text)
    compile_module(module, native=False)
    return module.main


def _layers(count: int, scales) -> str:
    """``count`` tanh(x * w_i + c_i) layers, each a loop fusion kept apart by a matmul."""
    lines = []
    value = "%x"
    for i in range(count):
        lines += [f"%d{i} = dot {value}, %w {{contract=[[1], [0]]}} : f32[s0,8]",
                  f"%c{i} = constant dense<{scales[i]}> : f32[]",
                  f"%b{i} = broadcast %c{i} {{dims=[]}} : f32[s0,8]",
                  f"%m{i} = mul %d{i}, %b{i} : f32[s0,8]",
                  f"%t{i} = tanh %m{i} : f32[s0,8]"]
        value = f"%t{i}"
    lines.append(f"return {value}")
    return func("(%x: f32[s0,8], %w: f32[8,8]) -> (f32[s0,8])", *lines)


def test_identical_layers_share_their_kernels():
    program = Program(_planned(_layers(6, [0.5] * 6)))
    program.emit()
    emitted, distinct = program.kernel_counts
    assert emitted == 6
    assert distinct == 1


def test_layers_with_different_constants_keep_their_own_kernels():
    program = Program(_planned(_layers(3, [0.5, 0.25, 2.0])))
    program.emit()
    assert program.kernel_counts == (3, 3)


def test_shared_kernels_compute_what_the_evaluator_computes():
    rng = np.random.default_rng(7)
    text = _layers(6, [0.5] * 6)
    for batch in (1, 5, 300):
        check(text, [rng.standard_normal((batch, 8)).astype(np.float32),
                     rng.standard_normal((8, 8)).astype(np.float32) * 0.5], exact=False)


def test_ops_with_one_key_call_one_kernel_without_emitting_it_again(monkeypatch):
    monkeypatch.setenv("TFC_CHECK_KERNEL_SHARING", "0")
    program = Program(_planned(_layers(6, [0.5] * 6)))
    program.emit()
    # The first layer's region lists the constant after the dot (the others before it):
    # a different key, emitted once more, and then merged by its LLVM text.
    assert program.kernel_counts == (2, 1)


def test_checked_sharing_reports_a_key_that_misses_a_difference(monkeypatch):
    import tfc.codegen.kernel_key as kernel_key_module
    from tfc.codegen.llvm_util import CodegenError

    monkeypatch.setenv("TFC_CHECK_KERNEL_SHARING", "1")
    monkeypatch.setattr(kernel_key_module, "IGNORED_ATTRS", frozenset({"_buf", "value"}))
    program = Program(_planned(_layers(2, [0.5, 0.25])))
    with pytest.raises(CodegenError, match="kernel sharing: 'fusion' at op 1 has the key of k0.fusion but emits k1.fusion"):
        program.emit()


def test_equal_dims_built_in_either_order_emit_the_same_code():
    """A dim's terms keep the order it was built in (s1+1 or 1+s1); kernels emit them in
    canonical order, so two ops of one key emit the same text (found by a sparse concat)."""
    from tfc.ir.dims import dim_add, ordered_terms, sym

    a, b = dim_add(sym("s1"), 1), dim_add(1, sym("s1"))
    assert a == b and list(a.terms) != list(b.terms)
    assert ordered_terms(a) == ordered_terms(b) == [(("s1",), 1), ((), 1)]
