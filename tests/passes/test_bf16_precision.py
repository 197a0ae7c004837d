"""bf16 precision: IR text in -> IR text out, and its place in the pipeline."""
import numpy as np
import pytest

from tfc.ir import evaluate, parse_module, verify
from tfc.passes import PassManager, default_pipeline
from tfc.passes.bf16_precision import Bf16Precision


def _func(signature: str, *lines: str) -> str:
    body = "".join(f"  {line}\n" for line in lines)
    return f"func @main{signature} {{\n{body}}}\n"


def rewrite(text: str) -> str:
    module = parse_module(text)
    verify(module)
    assert Bf16Precision().run(module) is True
    verify(module)
    return str(module)


def assert_unchanged(text: str) -> None:
    module = parse_module(text)
    assert Bf16Precision().run(module) is False
    assert str(module) == text


def test_dot_operands_are_rounded_before_the_dot():
    sig = "(%x: f32[s0,3], %w: f32[3,5]) -> (f32[s0,5])"
    text = _func(sig,
                 '%0 = dot %x, %w {contract=[[1], [0]]} : f32[s0,5] loc("MatMul"("m.py":3))',
                 "return %0")
    assert rewrite(text) == _func(sig,
                                  '%0 = round_bf16 %x : f32[s0,3] loc("MatMul"("m.py":3))',
                                  '%1 = round_bf16 %w : f32[3,5] loc("MatMul"("m.py":3))',
                                  '%2 = dot %0, %1 {contract=[[1], [0]]} : f32[s0,5] loc("MatMul"("m.py":3))',
                                  "return %2")


def test_conv_operands_are_rounded_and_the_epilogue_is_not():
    sig = "(%x: f32[s0,8,8,3], %w: f32[3,3,3,4], %b: f32[s0,6,6,4]) -> (f32[s0,6,6,4])"
    text = _func(sig,
                 "%0 = conv %x, %w : f32[s0,6,6,4]",
                 "%1 = add %0, %b : f32[s0,6,6,4]",
                 "return %1")
    assert rewrite(text) == _func(sig,
                                  "%0 = round_bf16 %x : f32[s0,8,8,3]",
                                  "%1 = round_bf16 %w : f32[3,3,3,4]",
                                  "%2 = conv %0, %1 : f32[s0,6,6,4]",
                                  "%3 = add %2, %b : f32[s0,6,6,4]",
                                  "return %3")


def test_a_value_feeding_two_contractions_is_rounded_once_and_the_pass_is_idempotent():
    sig = "(%x: f32[4,4], %w: f32[4,4]) -> (f32[4,4], f32[4,4])"
    text = _func(sig,
                 "%0 = dot %x, %w {contract=[[1], [0]]} : f32[4,4]",
                 "%1 = dot %0, %w {contract=[[1], [0]]} : f32[4,4]",
                 "%2 = dot %x, %x {contract=[[1], [0]]} : f32[4,4]",
                 "return %1, %2")
    once = rewrite(text)
    assert once == _func(sig,
                         "%0 = round_bf16 %x : f32[4,4]",
                         "%1 = round_bf16 %w : f32[4,4]",
                         "%2 = dot %0, %1 {contract=[[1], [0]]} : f32[4,4]",
                         "%3 = round_bf16 %2 : f32[4,4]",
                         "%4 = dot %3, %1 {contract=[[1], [0]]} : f32[4,4]",
                         "%5 = dot %0, %0 {contract=[[1], [0]]} : f32[4,4]",
                         "return %4, %5")
    assert_unchanged(once)


def test_other_element_types_and_other_ops_are_not_touched():
    assert_unchanged(_func("(%a: f64[2,3], %b: f64[3,2], %i: i32[2,3], %j: i32[3,2], %x: f32[4]) -> "
                           "(f64[2,2], i32[2,2], f32[4])",
                           "%0 = dot %a, %b {contract=[[1], [0]]} : f64[2,2]",
                           "%1 = dot %i, %j {contract=[[1], [0]]} : i32[2,2]",
                           "%2 = tanh %x : f32[4]",
                           "return %0, %1, %2"))


def test_contractions_inside_regions_are_rounded_there():
    sig = "(%p: pred[], %x: f32[2,2]) -> (f32[2,2])"
    text = _func(sig,
                 "%0 = if %p, %x : f32[2,2] {",
                 "^(%a: f32[2,2]):",
                 "  %1 = dot %a, %a {contract=[[1], [0]]} : f32[2,2]",
                 "  yield %1",
                 "} {",
                 "^(%a: f32[2,2]):",
                 "  yield %a",
                 "}",
                 "return %0")
    assert rewrite(text) == _func(sig,
                                  "%0 = if %p, %x : f32[2,2] {",
                                  "^(%a: f32[2,2]):",
                                  "  %1 = round_bf16 %a : f32[2,2]",
                                  "  %2 = dot %1, %1 {contract=[[1], [0]]} : f32[2,2]",
                                  "  yield %2",
                                  "} {",
                                  "^(%a: f32[2,2]):",
                                  "  yield %a",
                                  "}",
                                  "return %0")


def test_the_rewritten_module_computes_bf16_products():
    """The evaluator on the rewritten module = an f64 matmul of the rounded operands."""
    text = _func("(%x: f32[3,4], %w: f32[4,2]) -> (f32[3,2])",
                 "%0 = dot %x, %w {contract=[[1], [0]]} : f32[3,2]",
                 "return %0")
    module = parse_module(rewrite(text))
    rng = np.random.default_rng(1)
    x, w = rng.standard_normal((3, 4)).astype(np.float32), rng.standard_normal((4, 2)).astype(np.float32)

    def bf16(a):
        bits = a.view(np.uint32).astype(np.uint64)
        return ((bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000).astype(np.uint32).view(np.float32)

    got = evaluate(module, [x, w])[0]
    want = bf16(x).astype(np.float64) @ bf16(w).astype(np.float64)
    np.testing.assert_allclose(got, want, rtol=1e-6)
    assert not np.allclose(got, x.astype(np.float64) @ w, rtol=1e-6)  # it did change the result


def test_pipeline_has_the_pass_only_when_asked():
    names = [getattr(item, "name", None) for item in default_pipeline()]
    assert "bf16_precision" not in names
    assert names == [getattr(item, "name", None) for item in default_pipeline("f32")]
    assert [getattr(item, "name", None) for item in default_pipeline("bf16")] == names + ["bf16_precision",
                                                                                          "const_fold", "dce"]
    with pytest.raises(ValueError, match="'f32', 'bf16'"):
        default_pipeline("f16")


def test_bf16_pipeline_folds_the_rounding_of_constant_weights():
    text = _func("(%x: f32[s0,2]) -> (f32[s0,2])",
                 "%0 = constant dense<[[1.00390625, 1.01171875], [3.0, -0.0]]> : f32[2,2]",
                 "%1 = dot %x, %0 {contract=[[1], [0]]} : f32[s0,2]",
                 "return %1")
    default = parse_module(text)
    PassManager("default").run(default)
    assert "round_bf16" not in str(default)
    module = parse_module(text)
    PassManager("default_bf16").run(module)
    assert str(module) == _func("(%x: f32[s0,2]) -> (f32[s0,2])",
                                "%0 = round_bf16 %x : f32[s0,2]",
                                "%1 = constant dense<[[1.0, 1.015625], [3.0, -0.0]]> : f32[2,2]",
                                "%2 = dot %0, %1 {contract=[[1], [0]]} : f32[s0,2]",
                                "return %2")
