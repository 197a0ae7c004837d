"""The scan kernels (compact, first_occurrence) against the evaluator: text in, values out."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tfc import ir

from ..helpers import arrays, check, func

ELEMS = ("f16", "f32", "f64", "i8", "i16", "i32", "i64", "u8", "pred")


def _program(op: str, elem: str) -> str:
    return func(f"(%x: {elem}[s0]) -> (i64[s0])", f"%r = {op} %x : i64[s0]", "return %r")


def test_compact_text_and_values():
    text = _program("compact", "f32")
    printed = ir.print_module(ir.parse(text))
    assert "= compact %x : i64[s0]" in printed
    assert ir.print_module(ir.parse(printed)) == printed
    x = np.array([0.0, 2.0, -0.0, np.nan, 0.0, -1.0], np.float32)
    expected, got, _, _ = check(text, [x])
    np.testing.assert_array_equal(got[0], [1, 3, 5, -1, -1, -1])


def test_first_occurrence_values():
    x = np.array([0.0, -0.0, np.nan, 1.0, np.nan, 1.0, 0.0], np.float32)
    _, got, _, _ = check(_program("first_occurrence", "f32"), [x])
    np.testing.assert_array_equal(got[0], [0, 0, 2, 3, 4, 3, 0])


@pytest.mark.parametrize("op", ["compact", "first_occurrence"])
def test_empty(op):
    _, got, _, _ = check(_program(op, "i32"), [np.zeros(0, np.int32)])
    assert got[0].shape == (0,) and got[0].dtype == np.int64


@pytest.mark.parametrize("op", ["compact", "first_occurrence"])
@settings(max_examples=25, deadline=None)
@given(data=st.data(), elem=st.sampled_from(ELEMS))
def test_scan_ops_agree(op, data, elem):
    dtype = ir.ElemType(elem).np_dtype
    size = data.draw(st.integers(0, 300))
    if dtype.kind in "iu":  # few distinct values, so repeats are common
        values = data.draw(arrays(dtype, (size,), elems=st.integers(-3 if dtype.kind == "i" else 0, 5)))
    else:
        values = data.draw(arrays(dtype, (size,)))
    check(_program(op, elem), [values])


def test_first_occurrence_many_distinct_values():
    """More values than the table's first sizes: probing and wrap-around stay right."""
    rng = np.random.default_rng(7)
    x = rng.integers(-50_000, 50_000, size=20_000).astype(np.int64)
    _, got, _, _ = check(_program("first_occurrence", "i64"), [x])
    _, first = np.unique(x, return_index=True)
    assert set(got[0].tolist()) == set(first.tolist())


# -- scan (kernels/scan.py) ------------------------------------------------------------------
SCAN_ELEMS = ("f16", "f32", "f64", "i8", "i32", "i64", "u8")


def _scan_program(elem: str, op: str, dim: int, exclusive: bool, reverse: bool) -> str:
    flags = f'{{dim={dim}, exclusive={str(exclusive).lower()}, op="{op}", reverse={str(reverse).lower()}}}'
    return func(f"(%x: {elem}[s0,s1,s2]) -> ({elem}[s0,s1,s2])", f"%r = scan %x {flags} : {elem}[s0,s1,s2]",
                "return %r")


def test_scan_values():
    x = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], np.float32).reshape(2, 3, 1)
    _, got, _, _ = check(_scan_program("f32", "sum", 1, False, False), [x])
    np.testing.assert_array_equal(got[0][..., 0], [[1, 3, 6], [4, 9, 15]])
    _, got, _, _ = check(_scan_program("f32", "prod", 1, True, True), [x])
    np.testing.assert_array_equal(got[0][..., 0], [[6, 3, 1], [30, 6, 1]])


@settings(max_examples=30, deadline=None)
@given(data=st.data(), elem=st.sampled_from(SCAN_ELEMS), op=st.sampled_from(["sum", "prod"]),
       dim=st.integers(0, 2), exclusive=st.booleans(), reverse=st.booleans())
def test_scan_agrees(data, elem, op, dim, exclusive, reverse):
    dtype = ir.ElemType(elem).np_dtype
    shape = tuple(data.draw(st.integers(0, 5)) for _ in range(3))
    if dtype.kind in "iu":
        values = data.draw(arrays(dtype, shape, elems=st.integers(0 if dtype.kind == "u" else -9, 9)))
    else:
        values = data.draw(arrays(dtype, shape, bound=2.0))
    check(_scan_program(elem, op, dim, exclusive, reverse), [values])  # the same sequential order: exact
