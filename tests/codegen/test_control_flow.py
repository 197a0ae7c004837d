"""``if`` and ``while`` compiled to LLVM branches and loops in the entry, against the
evaluator: both branches, zero-iteration loops, swapped loop variables, invariants,
symbolic shapes, nesting, variables assigned inside a branch."""
from __future__ import annotations

import numpy as np
import pytest

from tfc import ir
from tfc.compiler import compile_module
from tfc.ir.evaluator import evaluate

from .helpers import func

IF_SELECT = func(
    "(%p: pred[], %x: f32[s0,4], %y: f32[s0,4]) -> (f32[s0,4], f32[s0,4])",
    "%r:2 = if %p, %x, %y : (f32[s0,4], f32[s0,4]) {",
    "^(%a: f32[s0,4], %b: f32[s0,4]):",
    "  %s = add %a, %b : f32[s0,4]",
    "  %t = tanh %s : f32[s0,4]",
    "  yield %t, %a",
    "} {",
    "^(%a: f32[s0,4], %b: f32[s0,4]):",
    "  %m = mul %a, %b : f32[s0,4]",
    "  yield %m, %b",
    "}",
    "return %r#0, %r#1")

COUNT_DOUBLE = func(
    "(%n: i32[], %x: f32[s0]) -> (i32[], f32[s0])",
    "%zero = constant dense<0> : i32[]",
    "%w:2 = while %zero, %x, %n {carried=2} : (i32[], f32[s0]) {",
    "^(%i: i32[], %acc: f32[s0], %lim: i32[]):",
    "  %p = compare %i, %lim {dir=\"lt\"} : pred[]",
    "  yield %p",
    "} {",
    "^(%i: i32[], %acc: f32[s0], %lim: i32[]):",
    "  %one = constant dense<1> : i32[]",
    "  %i2 = add %i, %one : i32[]",
    "  %half = constant dense<0.5> : f32[]",
    "  %h = broadcast %half {dims=[]} : f32[s0]",
    "  %acc2 = add %acc, %h : f32[s0]",
    "  %acc3 = mul %acc2, %acc2 : f32[s0]",
    "  yield %i2, %acc3",
    "}",
    "return %w#0, %w#1")

SWAP = func(
    "(%n: i32[], %a: f32[3], %b: f32[3]) -> (f32[3], f32[3])",
    "%zero = constant dense<0> : i32[]",
    "%w:3 = while %zero, %a, %b, %n {carried=3} : (i32[], f32[3], f32[3]) {",
    "^(%i: i32[], %x: f32[3], %y: f32[3], %lim: i32[]):",
    "  %p = compare %i, %lim {dir=\"lt\"} : pred[]",
    "  yield %p",
    "} {",
    "^(%i: i32[], %x: f32[3], %y: f32[3], %lim: i32[]):",
    "  %one = constant dense<1> : i32[]",
    "  %i2 = add %i, %one : i32[]",
    "  yield %i2, %y, %x",
    "}",
    "return %w#1, %w#2")


def _check(text: str, inputs: list) -> list:
    result = compile_module(ir.parse(text))
    got = result.executable.run([np.array(v) for v in inputs])
    expected = evaluate(ir.parse(text).main, [np.array(v) for v in inputs])
    for a, b in zip(got, expected):
        np.testing.assert_allclose(a, b, rtol=2e-6, atol=1e-6)
    return got


@pytest.mark.parametrize("taken", [True, False])
@pytest.mark.parametrize("batch", [1, 7])
def test_if_runs_only_the_taken_branch(taken, batch):
    rng = np.random.default_rng(batch)
    x, y = (rng.standard_normal((batch, 4)).astype(np.float32) for _ in range(2))
    got = _check(IF_SELECT, [np.bool_(taken), x, y])
    np.testing.assert_allclose(got[0], np.tanh(x + y) if taken else x * y, rtol=2e-6, atol=1e-6)
    np.testing.assert_array_equal(got[1], x if taken else y)


@pytest.mark.parametrize("n", [0, 1, 5])
def test_while_loops_n_times_zero_included(n):
    x = np.linspace(-1, 1, 6).astype(np.float32)
    count, value = _check(COUNT_DOUBLE, [np.int32(n), x])
    expected = x.astype(np.float64)
    for _ in range(n):
        expected = (expected + 0.5) ** 2
    assert count == n
    np.testing.assert_allclose(value, expected, rtol=1e-5)


@pytest.mark.parametrize("n", [0, 1, 2, 3])
def test_swapping_loop_variables_stage_through_scratch(n):
    a = np.array([1, 2, 3], np.float32)
    b = np.array([4, 5, 6], np.float32)
    x, y = _check(SWAP, [np.int32(n), a, b])
    np.testing.assert_array_equal(x, a if n % 2 == 0 else b)
    np.testing.assert_array_equal(y, b if n % 2 == 0 else a)


def test_a_loop_inside_a_branch_and_a_branch_inside_a_loop():
    text = func(
        "(%p: pred[], %n: i32[], %x: f32[2]) -> (f32[2])",
        "%r = if %p, %n, %x : f32[2] {",
        "^(%m: i32[], %v: f32[2]):",
        "  %zero = constant dense<0> : i32[]",
        "  %w:2 = while %zero, %v, %m {carried=2} : (i32[], f32[2]) {",
        "  ^(%i: i32[], %acc: f32[2], %lim: i32[]):",
        "    %c = compare %i, %lim {dir=\"lt\"} : pred[]",
        "    yield %c",
        "  } {",
        "  ^(%i: i32[], %acc: f32[2], %lim: i32[]):",
        "    %one = constant dense<1> : i32[]",
        "    %i2 = add %i, %one : i32[]",
        "    %two = constant dense<2> : i32[]",
        "    %k = rem %i, %two : i32[]",
        "    %zero2 = constant dense<0> : i32[]",
        "    %even = compare %k, %zero2 {dir=\"eq\"} : pred[]",
        "    %next = if %even, %acc : f32[2] {",
        "    ^(%u: f32[2]):",
        "      %d = add %u, %u : f32[2]",
        "      yield %d",
        "    } {",
        "    ^(%u: f32[2]):",
        "      %e = neg %u : f32[2]",
        "      yield %e",
        "    }",
        "    yield %i2, %next",
        "  }",
        "  yield %w#1",
        "} {",
        "^(%m: i32[], %v: f32[2]):",
        "  yield %v",
        "}",
        "return %r")
    x = np.array([1.5, -2.0], np.float32)
    got = _check(text, [np.bool_(True), np.int32(4), x])[0]
    np.testing.assert_array_equal(got, x * 4)  # *2, negate, *2, negate
    np.testing.assert_array_equal(_check(text, [np.bool_(False), np.int32(4), x])[0], x)


def test_an_assign_inside_a_branch_happens_only_when_it_is_taken():
    text = func(
        "(%p: pred[], %v: ref<f32[3]>, %x: f32[3]) -> (f32[3])",
        "%r = if %p, %v, %x : f32[3] {",
        "^(%ref: ref<f32[3]>, %a: f32[3]):",
        "  %old = read %ref : f32[3]",
        "  %new = add %old, %a : f32[3]",
        "  assign %ref, %new",
        "  yield %new",
        "} {",
        "^(%ref: ref<f32[3]>, %a: f32[3]):",
        "  %old = read %ref : f32[3]",
        "  yield %old",
        "}",
        "return %r")
    result = compile_module(ir.parse(text))
    variable = np.array([1, 2, 3], np.float32)
    x = np.array([10, 20, 30], np.float32)
    out = result.executable.run([np.array(False), variable, x])[0]
    np.testing.assert_array_equal(out, [1, 2, 3])
    np.testing.assert_array_equal(variable, [1, 2, 3])
    out = result.executable.run([np.array(True), variable, x])[0]
    np.testing.assert_array_equal(out, [11, 22, 33])
    np.testing.assert_array_equal(variable, [11, 22, 33])


def test_the_verifier_checks_region_signatures():
    bad = IF_SELECT.replace("yield %m, %b", "yield %m, %m").replace("%m = mul %a, %b : f32[s0,4]",
                                                                     "%m = mul %a, %b : f32[s0,4]")
    bad = bad.replace("(%p: pred[],", "(%p: i32[],")
    with pytest.raises(Exception, match="the predicate of 'if' must be pred"):
        ir.verify(ir.parse(bad))
    wrong_yield = COUNT_DOUBLE.replace("yield %i2, %acc3", "yield %acc3, %i2")
    with pytest.raises(Exception, match=r"the body region yields \(f32\[s0\], i32\[\]\), expected"):
        ir.verify(ir.parse(wrong_yield))


def test_a_dead_pure_branch_is_removed_and_one_with_an_assign_is_kept():
    text = func(
        "(%p: pred[], %v: ref<f32[3]>, %x: f32[3]) -> (f32[3])",
        "%dead = if %p, %x : f32[3] {",
        "^(%a: f32[3]):",
        "  %s = add %a, %a : f32[3]",
        "  yield %s",
        "} {",
        "^(%a: f32[3]):",
        "  yield %a",
        "}",
        "%kept = if %p, %v, %x : f32[3] {",
        "^(%ref: ref<f32[3]>, %a: f32[3]):",
        "  assign %ref, %a",
        "  yield %a",
        "} {",
        "^(%ref: ref<f32[3]>, %a: f32[3]):",
        "  yield %a",
        "}",
        "return %x")
    module = ir.parse(text)
    compile_module(module, native=False)
    names = [op.name for op in module.main.body.ops]
    assert names.count("if") == 1 and "assign" in str(module)


def test_a_constant_predicate_inlines_the_taken_branch():
    text = func(
        "(%x: f32[3]) -> (f32[3])",
        "%p = constant dense<true> : pred[]",
        "%r = if %p, %x : f32[3] {",
        "^(%a: f32[3]):",
        "  %s = exp %a : f32[3]",
        "  yield %s",
        "} {",
        "^(%a: f32[3]):",
        "  %n = neg %a : f32[3]",
        "  yield %n",
        "}",
        "return %r")
    module = ir.parse(text)
    compile_module(module, native=False, verify="each")
    assert [op.name for op in module.main.body.ops] == ["exp", "return"]
    x = np.array([0.0, 1.0, -1.0], np.float32)
    np.testing.assert_allclose(_check(text, [x])[0], np.exp(x), rtol=2e-6)


def test_a_loop_whose_condition_is_false_from_the_start_is_its_initial_values():
    text = func(
        "(%x: f32[3]) -> (f32[3])",
        "%w = while %x {carried=1} : f32[3] {",
        "^(%a: f32[3]):",
        "  %f = constant dense<false> : pred[]",
        "  yield %f",
        "} {",
        "^(%a: f32[3]):",
        "  %d = add %a, %a : f32[3]",
        "  yield %d",
        "}",
        "return %w")
    module = ir.parse(text)
    compile_module(module, native=False, verify="each")
    assert [op.name for op in module.main.body.ops] == ["return"]


ARRAY_FILL = func(
    "(%n: i32[], %x: f32[s0,3]) -> (f32[s0,3])",
    "%zero = constant dense<0> : i32[]",
    "%z = constant dense<0.0> : f32[]",
    "%acc0 = broadcast %z {dims=[]} : f32[s0,3]",
    "%w:2 = while %zero, %acc0, %n, %x {carried=2} : (i32[], f32[s0,3]) {",
    "^(%i: i32[], %acc: f32[s0,3], %lim: i32[], %src: f32[s0,3]):",
    "  %p = compare %i, %lim {dir=\"lt\"} : pred[]",
    "  yield %p",
    "} {",
    "^(%i: i32[], %acc: f32[s0,3], %lim: i32[], %src: f32[s0,3]):",
    "  %row = gather %src, %i {axis=0} : f32[3]",
    "  %two = constant dense<2.0> : f32[]",
    "  %b2 = broadcast %two {dims=[]} : f32[3]",
    "  %scaled = mul %row, %b2 : f32[3]",
    "  %upd = reshape %scaled : f32[1,3]",
    "  %at = reshape %i : i32[1]",
    "  %acc2 = scatter_add %acc, %at, %upd {axis=0} : f32[s0,3]",
    "  %one = constant dense<1> : i32[]",
    "  %i2 = add %i, %one : i32[]",
    "  yield %i2, %acc2",
    "}",
    "return %w#1")


def test_a_loop_writing_into_its_own_array_updates_it_in_place():
    # A TensorArray write in a loop (scatter_add of the loop's own array, read nowhere else
    # in the body) writes into the loop variable's buffer: no copy of the array per iteration.
    module = ir.parse(ARRAY_FILL)
    compile_module(module, native=False)
    loop = next(op for op in module.main.body.ops if op.name == "while")
    scatter = next(op for op in loop.regions[1].ops if op.name == "scatter_add")
    assert scatter.attrs["_buf"] == [loop.attrs["_buf"][1]]
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    for n in (0, 2, 4):
        got = _check(ARRAY_FILL, [np.int32(n), x])[0]
        expected = np.zeros_like(x)
        expected[:n] = x[:n] * 2
        np.testing.assert_array_equal(got, expected)
