"""GPU scatter_add (tfc/codegen/gpu/scatter.py): an init launch (the operand copied into
the output), then one work item per update element adding atomically; f16 through an f32
scratch buffer. The PTX holds the atomics and assembles for sm_80 and sm_90; the host
emulation (small grids: grid-stride loops with tails) agrees with the evaluator, with
duplicate and out-of-range (skipped) indices; unsorted_segment_sum and an embedding
gradient lower to it, and bad segment ids fail with the CPU's message."""
import re

import numpy as np
import pytest

import tfc
import tfc.compat.v1 as tf
from tfc import ir
from tfc.codegen.gpu import ptx as ptx_module
from tfc.codegen.gpu.plan import Launch
from tfc.compiler import compile_module
from tfc.frontend import errors

from ..helpers import assert_agrees, func, reference
from .emulation import SMALL_GRID, compiled_for_gpu

needs_ptxas = pytest.mark.skipif(ptx_module.ptxas_path() is None, reason="ptxas is not installed")

NP = {"f16": np.float16, "f32": np.float32, "f64": np.float64, "i8": np.int8, "u8": np.uint8, "i32": np.int32,
      "i64": np.int64, "pred": np.bool_}


def _text(elem: str, axis: int = 0, index: str = "i32") -> str:
    """scatter_add along ``axis`` of a rank-3 operand [s0, 3, s1] with a rank-2 index tensor."""
    shape = ["s0", "3", "s1"]
    updates = shape[:axis] + ["s2", "2"] + shape[axis + 1:]
    t = f"{elem}[{','.join(shape)}]"
    return func(f"(%x: {t}, %i: {index}[s2,2], %u: {elem}[{','.join(updates)}]) -> ({t})",
                f"%0 = scatter_add %x, %i, %u {{axis={axis}}} : {t}", "return %0")


def _launches(result) -> list:
    return [step for step in result.program.plan if isinstance(step, Launch)]


def _values(rng, elem: str, shape) -> np.ndarray:
    if elem == "pred":
        return rng.random(shape) < 0.3
    if elem == "u8":
        return rng.integers(0, 200, shape).astype(np.uint8)
    return rng.integers(-100, 100, shape).astype(NP[elem])  # integer-valued: float sums are exact


def _check(text: str, elem: str, axis: int, s0: int, s1: int, s2: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    shape = [s0, 3, s1]
    bound = shape[axis]
    updates = shape[:axis] + [s2, 2] + shape[axis + 1:]
    x = _values(rng, elem, shape)
    i = rng.integers(-2, bound + 2, (s2, 2)).astype(np.int32)  # duplicates, and out of range (skipped)
    u = _values(rng, elem, updates)
    expected = ir.evaluate(reference(text), [x.copy(), i.copy(), u.copy()])[0]
    got = compiled_for_gpu(text).executable.run([x, i, u])[0]
    assert_agrees(expected, got, label=f"{elem} axis {axis} {shape} {s2}")


@pytest.mark.parametrize("elem", ["f32", "f64", "f16", "i32", "i8", "u8", "i64", "pred"])
def test_emulated_scatter_add_agrees_with_the_evaluator(elem):
    text = _text(elem)
    # s2 * 2 * 3 * s1 add items (270, 480): several grid-stride turns of the 96-thread grid and a tail
    for s0, s1, s2, seed in ((4, 5, 9, 0), (3, 2, 40, 1), (0, 2, 3, 2), (2, 0, 5, 3), (5, 1, 0, 4)):
        _check(text, elem, 0, s0, s1, s2, seed)


@pytest.mark.parametrize("axis", [1, 2])
def test_inner_axes_and_specific_sums(axis):
    text = _text("f32", axis)
    for s0, s1, s2, seed in ((2, 3, 7, 5), (3, 4, 33, 6)):
        _check(text, "f32", axis, s0, s1, s2, seed)
    # every update at index 1 (and the out-of-range ones dropped): row 1 gets their sum
    x = np.zeros((2, 3, 2), np.float32)
    shape = [2, 3, 2]
    updates = shape[:axis] + [50, 2] + shape[axis + 1:]
    u = np.ones(updates, np.float32)
    i = np.ones((50, 2), np.int32)
    i[0, 0], i[0, 1] = -1, shape[axis]
    got = compiled_for_gpu(text).executable.run([x, i, u])[0]
    expected = np.zeros(shape, np.float32)
    np.moveaxis(expected, axis, 0)[1] = 98.0
    np.testing.assert_array_equal(got, expected)


def test_one_item_per_update_element_after_an_init_launch():
    result = compiled_for_gpu(_text("f32"))
    init, add = _launches(result)
    assert str(init.extent) == "3*s0*s1" and str(add.extent) == "6*s1*s2"
    assert init.buffers == [("out", 0), ("arg", 0)]
    assert add.buffers == [("out", 0), ("arg", 1), ("arg", 2)]
    half = _launches(compiled_for_gpu(_text("f16")))
    assert [str(step.extent) for step in half] == ["3*s0*s1", "6*s1*s2", "3*s0*s1"]
    stage = half[1].buffers[-1]
    assert stage[0] == "stage" and str(stage[2]) == "12*s0*s1"  # f32 sums of the f16 output
    assert half[0].buffers[-1] == half[2].buffers[-1] == stage


def test_a_loop_updating_its_array_in_place_has_no_init_launch():
    from ..test_control_flow import ARRAY_FILL

    result = compile_module(ir.parse(ARRAY_FILL), target="cuda", emulate=True, arch="sm_80")
    result.executable.code.config = SMALL_GRID
    launches = [s for s in _all_steps(result.program.plan) if isinstance(s, Launch) and "scatter_add" in s.kernel]
    assert len(launches) == 1
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    got = result.executable.run([np.array(3, np.int32), x])[0]
    expected = np.zeros_like(x)
    expected[:3] = x[:3] * 2
    np.testing.assert_array_equal(got, expected)


def _all_steps(steps):
    for step in steps:
        yield step
        for name in ("then", "otherwise", "condition", "body"):
            yield from _all_steps(getattr(step, name, None) or [])


ATOMICS = {"f32": "atom.global.add.f32", "f64": "atom.global.add.f64", "f16": "atom.global.add.f32",
           "i32": "atom.global.add.u32", "i64": "atom.global.add.u64", "i8": "atom.relaxed.sys.global.cas.b32",
           "pred": "st.relaxed.sys.global.b8"}


@needs_ptxas
@pytest.mark.parametrize("elem", sorted(ATOMICS))
def test_ptx_holds_the_atomics_and_assembles(elem):
    result = compile_module(ir.parse(_text(elem, 1)), target="cuda", arch="sm_80")
    for arch in ("sm_80", "sm_90"):
        text = ptx_module.compile_ptx(result.program.module_text("ptx"), result.program.kernels, arch)
        assert ATOMICS[elem] in text, elem
        assert ptx_module.assemble(text, arch)[:4] == b"\x7fELF"


def _segment_sum_program():
    graph = tf.Graph()
    with graph.as_default():
        data = tf.placeholder(tf.float32, [None, 4], name="data")
        ids = tf.placeholder(tf.int32, [None], name="ids")
        program = tfc.compile([tf.unsorted_segment_sum(data, ids, 3)], feeds=[data, ids], target="cuda",
                              emulate=True, arch="sm_80")
    program.result.executable.code.config = SMALL_GRID
    return program


def test_unsorted_segment_sum_runs_in_parallel_and_checks_its_ids():
    program = _segment_sum_program()
    adds = [s for s in _launches(program.result) if "scatter_add" in s.kernel]
    assert [re.sub(r"s\d+", "n", str(s.extent)) for s in adds] == ["12", "4*n"]  # init, then a row element each
    data = np.arange(200, dtype=np.float32).reshape(50, 4)
    ids = (np.arange(50) % 4 - 1).astype(np.int32)  # -1 (dropped), 0, 1, 2, ...
    expected = np.stack([data[ids == k].sum(0) for k in range(3)])
    np.testing.assert_array_equal(program(data, ids)[0], expected)
    ids[7] = 3
    with pytest.raises(errors.InvalidArgumentError, match=r"segment_ids\[7\] = 3 is out of range \[0, 3\)"):
        program(data, ids)


def test_an_embedding_gradient_scatters_its_rows_in_parallel():
    graph = tf.Graph()
    with graph.as_default():
        table = tf.placeholder(tf.float32, [20, 8], name="table")
        ids = tf.placeholder(tf.int32, [None], name="ids")
        loss = tf.reduce_sum(tf.nn.embedding_lookup(table, ids) * tf.range(8, dtype=tf.float32))
        grad = tf.convert_to_tensor(tf.gradients(loss, table)[0])
        program = tfc.compile([grad], feeds=[table, ids], target="cuda", emulate=True, arch="sm_80")
    program.result.executable.code.config = SMALL_GRID
    extents = [re.sub(r"s\d+", "n", str(s.extent)) for s in _launches(program.result) if "scatter_add" in s.kernel]
    assert extents == ["160", "8*n"]
    ids_value = np.array([3, 3, 0, 19, 3, 7] * 5, np.int32)
    expected = np.zeros((20, 8), np.float32)
    np.add.at(expected, ids_value, np.arange(8, dtype=np.float32))
    got = program(np.zeros((20, 8), np.float32), ids_value)[0]
    np.testing.assert_array_equal(got, expected)
    assert got[3, 5] == 75.0
