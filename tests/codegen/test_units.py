"""Programs compile as separate units (tfc/codegen/units.py, objects.py, jit.UnitBuild):
the entry as glue at -O0, each kernel at -O3 under a name hashed from its text, several
at once, each unit's object cached on its own."""
from __future__ import annotations

import concurrent.futures

import numpy as np
import pytest
from llvmlite import ir as ll

from tfc import ir
from tfc.codegen import jit, objects
from tfc.codegen.program import Program
from tfc.codegen.target import host_target
from tfc.codegen.units import Splitter, split_program
from tfc.compiler import compile_module
from tfc.ir.evaluator import evaluate

from .helpers import func


def _layers(scales, activation: str = "tanh") -> str:
    """One matmul + ``activation(x * scale)`` layer per scale (loop fusions kept apart)."""
    lines = []
    value = "%x"
    for i, scale in enumerate(scales):
        lines += [f"%d{i} = dot {value}, %w {{contract=[[1], [0]]}} : f32[s0,8]",
                  f"%c{i} = constant dense<{scale}> : f32[]",
                  f"%b{i} = broadcast %c{i} {{dims=[]}} : f32[s0,8]",
                  f"%m{i} = mul %d{i}, %b{i} : f32[s0,8]",
                  f"%t{i} = {activation} %m{i} : f32[s0,8]"]
        value = f"%t{i}"
    lines.append(f"return {value}")
    return func("(%x: f32[s0,8], %w: f32[8,8]) -> (f32[s0,8])", *lines)


def _units(text: str) -> list:
    module = ir.parse(text)
    compile_module(module, native=False)
    program = Program(module.main)
    program.build()
    return split_program(program.module, program.entry_name, program.kernel_levels)


def _inputs(batch: int = 5):
    rng = np.random.default_rng(3)
    return [rng.standard_normal((batch, 8)).astype(np.float32), rng.standard_normal((8, 8)).astype(np.float32) * 0.5]


def test_a_program_splits_into_its_entry_and_one_unit_per_distinct_kernel():
    units = _units(_layers([0.5, 0.25]))
    entry = units[-1]
    kernels = units[:-1]
    assert entry.name == "tfc_main" and entry.opt_level == 0
    assert [unit.opt_level for unit in kernels] == [2, 2]  # output fusions (dot + elementwise)

    # Each kernel unit defines exactly its kernel, external, named by its hash.
    for unit in kernels:
        assert unit.name.startswith("tfc.") and unit.text.count("define ") == 1
        assert f'define i32 @"{unit.name}"(' in unit.text
        assert f'declare i32 @"{unit.name}"(' in entry.text
    assert "define internal" not in entry.text.split('@"tfc_main"')[0]  # kernels are only declared there
    assert len({unit.name for unit in kernels}) == len(kernels)


def test_kernels_that_reduce_get_o3_and_the_others_o2():
    text = func("(%x: f32[s0,8]) -> (f32[s0], f32[s0,8])",
                "%s = reduce %x {dims=[1], op=\"sum\"} : f32[s0]",
                "%t = tanh %x : f32[s0,8]", "return %s, %t")
    levels = sorted(unit.opt_level for unit in _units(text))
    assert levels == [0, 2, 3]


def test_equal_kernels_of_different_programs_have_equal_units():
    first = {unit.name: unit.text for unit in _units(_layers([0.5, 0.25]))[:-1]}
    second = {unit.name: unit.text for unit in _units(_layers([0.25, 3.0]))[:-1]}
    shared = set(first) & set(second)
    assert shared  # the matmul and the * 0.25 layer
    assert all(first[name] == second[name] for name in shared)
    assert set(first) != set(second)  # * 0.5 and * 3.0 differ


def test_a_changed_graph_compiles_only_the_kernels_that_changed():
    jit.clear_unit_cache()
    jit.clear_memory_cache()
    first = compile_module(ir.parse(_layers([0.5, 0.25])))
    units, compiled = first.executable.code.units
    assert compiled == units
    second = compile_module(ir.parse(_layers([0.25, 0.125])))  # the * 0.5 layer became * 0.125
    units, compiled = second.executable.code.units
    assert compiled == 2  # the new * 0.125 kernel and the entry; the rest came from the unit cache
    for result, scales in ((first, [0.5, 0.25]), (second, [0.25, 0.125])):
        xs = _inputs()
        expected = evaluate(ir.parse(_layers(scales)).main, xs)[0]
        np.testing.assert_allclose(result.executable.run(xs)[0], expected, rtol=2e-6, atol=1e-6)


def test_the_timing_table_lists_units_and_the_threads_seconds():
    jit.clear_unit_cache()
    jit.clear_memory_cache()
    table = compile_module(ir.parse(_layers([0.75, 1.5]))).timing_table()
    assert "LLVM, compile units (wall)" in table and "optimisation (thread s)" in table
    assert "compile units: 3 (3 compiled by LLVM" in table
    assert "ms in LLVM  fusion[output]: dot, mul, tanh" in table
    assert "ms in LLVM  tfc_main (the entry: glue, one call per kernel)" in table


def test_units_compile_on_threads_to_the_objects_a_single_thread_makes():
    assert objects.unlocked()  # this llvmlite exposes its C functions: units compile in parallel
    units = _units(_layers([0.5, 0.25, 2.0]))
    target = host_target()
    serial = [objects.compile_object(u.text, target, u.opt_level)[0] for u in units]
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        parallel = list(pool.map(lambda u: objects.compile_object(u.text, target, u.opt_level)[0], units * 3))
    assert parallel == serial * 3


def test_an_invalid_unit_raises_llvms_message():
    with pytest.raises(RuntimeError, match="LLVM IR parsing error"):
        objects.compile_object("define i32 @f() {\n  ret i64 0\n}\n", host_target(), 3)


def test_branch_weight_metadata_travels_with_the_unit():
    # A gather's index check branches with a "likely" weight: metadata the unit must carry.
    text = func("(%p: f32[4,3], %i: i32[s0]) -> (f32[s0,3])",
                "%g = gather %p, %i {axis=0} : f32[s0,3]", "return %g")
    units = _units(text)
    entry = units[-1]
    assert ", !prof !0" in entry.text
    assert '!0 = !{ !"branch_weights", i32 1, i32 99 }' in entry.text.splitlines()
    result = compile_module(ir.parse(text))
    params = np.arange(12, dtype=np.float32).reshape(4, 3)
    np.testing.assert_array_equal(result.executable.run([params, np.array([3, 0], np.int32)])[0], params[[3, 0]])


def test_a_kernel_touching_a_mutable_global_keeps_the_module_whole():
    module = ll.Module()
    counter = ll.GlobalVariable(module, ll.IntType(64), name="counter")
    counter.initializer = ll.Constant(ll.IntType(64), 0)
    kernel = ll.Function(module, ll.FunctionType(ll.IntType(32), []), name="k0.bump")
    b = ll.IRBuilder(kernel.append_basic_block("entry"))
    b.store(b.add(b.load(counter), ll.Constant(ll.IntType(64), 1)), counter)
    b.ret(ll.Constant(ll.IntType(32), 0))
    entry = ll.Function(module, ll.FunctionType(ll.IntType(32), []), name="tfc_main")
    b = ll.IRBuilder(entry.append_basic_block("entry"))
    b.ret(b.call(kernel, []))
    splitter = Splitter(module, "tfc_main")
    assert splitter.kernel_unit(kernel) is None and splitter.failed
    assert split_program(module, "tfc_main") is None


def test_random_ops_that_differ_only_in_seeds_share_one_kernel():
    lines = []
    for i in range(4):
        lines += [f"%s{i} = rng %r{i} {{dist=\"normal\", seed=[{i}, {7 * i}]}} : f32[16,16]"]
    lines.append("return " + ", ".join(f"%s{i}" for i in range(4)))
    refs = ", ".join(f"%r{i}: ref<i64[]>" for i in range(4))
    text = func(f"({refs}) -> ({', '.join(['f32[16,16]'] * 4)})", *lines)
    module = ir.parse(text)
    compile_module(module, native=False)
    program = Program(module.main)
    program.build()
    assert program.kernel_counts == (4, 1)
    result = compile_module(ir.parse(text))
    states = [np.array(5, np.int64) for _ in range(4)]
    expected_states = [np.array(5, np.int64) for _ in range(4)]
    got = result.executable.run(states)
    expected = evaluate(ir.parse(text).main, expected_states)
    for a, b in zip(got, expected):
        np.testing.assert_allclose(a, b, rtol=2e-6, atol=1e-6)
    assert len({a.tobytes() for a in got}) == 4  # four seeds, four different draws


def test_a_forked_child_compiles_with_a_pool_of_its_own():
    import os

    objects.compile_pool()  # the parent's threads exist
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: compile a fresh program (its units need the pool) and report
        try:
            jit.clear_unit_cache()
            jit.clear_memory_cache()
            result = compile_module(ir.parse(_layers([0.375])))
            ok = result.executable.code.units[1] == 2
            os.write(write, b"ok" if ok else b"no")
        finally:
            os._exit(0)
    os.close(write)
    import signal
    import time

    deadline = time.monotonic() + 60
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() > deadline:  # a child waiting for threads it does not have
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            pytest.fail("the forked child's compile did not finish in 60 s")
        time.sleep(0.02)
    assert os.read(read, 2) == b"ok" and status == 0


def test_a_loop_hint_travels_with_its_unit_numbered_by_the_unit_alone():
    # A flat loop computing tanh asks LLVM to interleave (kernels/loop.py). In a program that
    # also has a gather's branch weights the module numbers the nodes differently, but the
    # tanh kernel's unit is the same text, with its own nodes from !0.
    tanh_only = func("(%x: f32[s0]) -> (f32[s0])", "%t = tanh %x : f32[s0]", "return %t")
    with_gather = func("(%x: f32[s0], %p: f32[4,3], %i: i32[s1]) -> (f32[s1,3], f32[s0])",
                       "%g = gather %p, %i {axis=0} : f32[s1,3]", "%t = tanh %x : f32[s0]", "return %g, %t")
    alone = [unit for unit in _units(tanh_only)[:-1] if "tanh" in unit.name]
    beside = [unit for unit in _units(with_gather)[:-1] if "tanh" in unit.name]
    assert len(alone) == 1 and [unit.text for unit in beside] == [alone[0].text]
    lines = alone[0].text.splitlines()
    assert any(line.endswith(", !llvm.loop !0") for line in lines)
    assert "!0 = !{ !0, !1 }" in lines and '!1 = !{ !"llvm.loop.interleave.count", i32 4 }' in lines
    assert "branch_weights" not in alone[0].text
