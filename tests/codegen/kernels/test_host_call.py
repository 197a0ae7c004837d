"""``host_call``: the program calls back into the runtime where it reaches the op (inside a
loop: once per iteration, in order), against the evaluator's calls; refused where no
runtime can be called (ahead-of-time code, the GPU)."""
from __future__ import annotations

import numpy as np
import pytest

from tfc import ir
from tfc.codegen.llvm_util import CodegenError
from tfc.codegen.program import Program
from tfc.compiler import compile_module

from ..helpers import func

LOOP = func(
    "(%n: i32[], %x: f32[s0]) -> (f32[s0])",
    "%zero = constant dense<0> : i32[]",
    "%w:2 = while %zero, %x, %n {carried=2} : (i32[], f32[s0]) {",
    "^(%i: i32[], %acc: f32[s0], %lim: i32[]):",
    "  %p = compare %i, %lim {dir=\"lt\"} : pred[]",
    "  yield %p",
    "} {",
    "^(%i: i32[], %acc: f32[s0], %lim: i32[]):",
    "  host_call %i, %acc {ops=[\"loop/Print\"], tensors=[\"loop/i:0\", \"loop/acc:0\"]}",
    "  %one = constant dense<1> : i32[]",
    "  %i2 = add %i, %one : i32[]",
    "  %acc2 = add %acc, %acc : f32[s0]",
    "  yield %i2, %acc2",
    "}",
    "return %w#1")


def _recorder(calls: list):
    def record(ops, tensors, arrays):
        calls.append((list(ops), list(tensors), [a.tolist() for a in arrays]))

    return record


@pytest.mark.parametrize("n", [0, 1, 3])
def test_loop_calls_back_once_per_iteration_like_the_evaluator(n):
    x = np.array([1.0, -0.5, 2.0], np.float32)
    expected_calls, got_calls = [], []
    expected = ir.evaluate(ir.parse(LOOP), [np.array(n, np.int32), x], host=_recorder(expected_calls))
    executable = compile_module(ir.parse(LOOP)).executable
    executable.host_calls.handler = _recorder(got_calls)
    got = executable.run([np.array(n, np.int32), x])
    np.testing.assert_array_equal(got[0], expected[0])
    assert got_calls == expected_calls
    assert [call[2][0] for call in got_calls] == list(range(n))
    assert got_calls[-1:] == ([(["loop/Print"], ["loop/i:0", "loop/acc:0"], [n - 1, (x * 2 ** (n - 1)).tolist()])]
                              if n else [])


def test_host_side_exception_stops_the_program_and_is_raised():
    executable = compile_module(ir.parse(LOOP)).executable
    seen = []

    def fail_on_second(ops, tensors, arrays):
        seen.append(int(arrays[0]))
        if len(seen) == 2:
            raise KeyError("from the host")

    executable.host_calls.handler = fail_on_second
    with pytest.raises(KeyError, match="from the host"):
        executable.run([np.array(5, np.int32), np.ones(2, np.float32)])
    assert seen == [0, 1]
    executable.host_calls.handler = lambda *args: None  # the executable stays usable
    np.testing.assert_array_equal(executable.run([np.array(2, np.int32), np.ones(2, np.float32)])[0], [4.0, 4.0])


def test_printed_ir_round_trips():
    printed = ir.print_module(ir.parse(LOOP))
    assert '    host_call %i, %acc {ops=["loop/Print"], tensors=["loop/i:0", "loop/acc:0"]}\n' in printed
    assert ir.print_module(ir.parse(printed)) == printed


def _planned(text: str) -> ir.Function:
    module = ir.parse(text)
    compile_module(module, native=False)  # the passes, buffer assignment included
    return module.main


def test_ahead_of_time_code_refuses_host_calls():
    with pytest.raises(CodegenError, match="host_call of 'loop/Print'.*ahead-of-time"):
        Program(_planned(LOOP), external_constants=True).build()


def test_the_gpu_refuses_host_calls():
    from tfc.codegen.gpu.program import GpuProgram

    with pytest.raises(CodegenError, match="host_call of 'loop/Print'"):
        GpuProgram(_planned(LOOP)).build()
