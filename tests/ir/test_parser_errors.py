"""Every parser failure is an IRParseError with a line and column, however deep the text nests.

Deeply nested dense literals, parenthesised dims and regions used to let RecursionError
escape; integer literals Python refuses to convert let ValueError escape.
"""
from __future__ import annotations

import sys

import numpy as np
import pytest

from tfc.ir.parser import MAX_DENSE_DEPTH, MAX_NESTING, IRParseError, parse_module


def constant(literal: str, type_text: str) -> str:
    return f"func @f() -> ({type_text}) {{\n  %0 = constant dense<{literal}> : {type_text}\n  return %0\n}}\n"


def with_arg_type(type_text: str) -> str:
    return f"func @f(%x: {type_text}) -> () {{\n  return\n}}\n"


def nested_fusions(levels: int) -> str:
    lines = ["func @f(%x: f32[]) -> () {"]
    for i in range(levels):
        lines += ['  fusion %x {kind="loop"} {', f"  ^(%p{i}: f32[]):"]
    lines += ["  yield"] + ["  }"] * levels + ["  return", "}", ""]
    return "\n".join(lines)


def parse_error(text: str) -> IRParseError:
    with pytest.raises(IRParseError) as info:
        parse_module(text)
    return info.value


def test_dense_literals_nest_up_to_the_largest_rank():
    depth = MAX_DENSE_DEPTH
    module = parse_module(constant("[" * depth + "2.5" + "]" * depth, "f32[1]"))
    value = module.functions["f"].body.ops[0].attrs["value"]
    assert value.dtype == np.float32 and value.tolist() == [2.5]
    for depth in (MAX_DENSE_DEPTH + 1, 100000):
        error = parse_error(constant("[" * depth + "2.5" + "]" * depth, "f32[1]"))
        assert (error.line, error.column) == (2, 23 + MAX_DENSE_DEPTH)
        assert error.message == f"dense literal lists nested deeper than {MAX_DENSE_DEPTH} levels"


def test_an_unclosed_deep_dense_literal_is_a_parse_error():
    full = constant("[" * MAX_DENSE_DEPTH, "f32[1]")
    text = full[:full.index("dense<") + len("dense<") + MAX_DENSE_DEPTH]
    error = parse_error(text)
    assert (error.line, error.column) == (2, len(text.split("\n")[1]) + 1)
    assert error.message == "expected a dense element, found end of input"


def test_a_deep_ragged_dense_literal_names_the_ragged_item():
    depth = MAX_DENSE_DEPTH
    text = constant("[" * depth + "1.0" + "]" * (depth - 1) + ", 2.0]", "f32[2]")
    error = parse_error(text)
    assert (error.line, error.column) == (2, text.split("\n")[1].index(", 2.0") + 3)
    assert error.message == f"ragged dense literal: shape () where {(1,) * (depth - 1)} was expected"


def test_a_deep_dense_literal_with_a_missing_comma_is_a_parse_error():
    error = parse_error(constant("[" * 200 + "1.0 2.0" + "]" * 200, "f32[2]"))
    assert (error.line, error.column) == (2, 200 + 27)
    assert error.message == "expected ',', found '2.0'"


def test_parenthesised_dims_nest_up_to_the_limit():
    module = parse_module(with_arg_type("f32[" + "(" * MAX_NESTING + "s0 + 4" + ")" * MAX_NESTING + "]"))
    assert str(module.functions["f"].args[0].type) == "f32[s0+4]"
    for depth in (MAX_NESTING + 1, 100000):
        error = parse_error(with_arg_type("f32[" + "(" * depth + "4" + ")" * depth + "]"))
        assert (error.line, error.column) == (1, len("func @f(%x: f32[") + MAX_NESTING + 1)
        assert error.message == f"parentheses nested deeper than {MAX_NESTING} levels"


def test_regions_nest_up_to_the_limit():
    module = parse_module(nested_fusions(MAX_NESTING))
    op, depth = module.functions["f"].body.ops[0], 1
    while op.regions[0].ops[0].name == "fusion":
        op, depth = op.regions[0].ops[0], depth + 1
    assert depth == MAX_NESTING
    error = parse_error(nested_fusions(400))
    assert (error.line, error.column) == (2 + 2 * MAX_NESTING, 27)
    assert error.message == f"regions nested deeper than {MAX_NESTING} levels"


def test_a_stack_that_runs_out_is_a_parse_error():
    """Called from deep inside a program, the parser's stack can run out below MAX_NESTING."""
    frames = 0
    frame = sys._getframe()
    while frame is not None:
        frames, frame = frames + 1, frame.f_back
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(frames + 120)
    try:
        error = parse_error(with_arg_type("f32[" + "(" * 90 + "4" + ")" * 90 + "]"))
    finally:
        sys.setrecursionlimit(limit)
    assert error.line == 1 and 17 < error.column <= 17 + 90
    assert error.message == "the text nests too deeply for the parser's stack"


HUGE = "9" * 5000

HUGE_INTEGERS = [
    # (where, text, line, column)
    ("dim", with_arg_type(f"f32[{HUGE}]"), 1, 17),
    ("dense element", constant(HUGE, "i32[]"), 2, 23),
    ("int attribute", f"func @f() -> (i32[4]) {{\n  %0 = iota {{dim={HUGE}}} : i32[4]\n  return %0\n}}\n", 2, 18),
    ("result count", f"func @f() -> () {{\n  %0:{HUGE} = iota {{dim=0}} : i32[4]\n  return\n}}\n", 2, 6),
    ("result index", f"func @f(%x: f32[]) -> () {{\n  %0 = neg %x#{HUGE} : f32[]\n  return\n}}\n", 2, 15),
    ("location line", f'func @f() -> () {{\n  return loc("a.py":{HUGE})\n}}\n', 2, 21),
]


@pytest.mark.parametrize("where,text,line,column", HUGE_INTEGERS, ids=[c[0] for c in HUGE_INTEGERS])
def test_integers_too_long_to_convert_are_parse_errors(where, text, line, column):
    error = parse_error(text)
    assert (error.line, error.column) == (line, column)
    assert error.message == "integer literal of 5000 digits is out of range"


@pytest.mark.parametrize("literal,shown", [("1e400", "1e400"), ("-1e400", "-1e400"),
                                           (HUGE + ".0", "9" * 37 + "...")], ids=["1e400", "-1e400", "5000 digits"])
def test_float_literals_beyond_f64_are_out_of_range(literal, shown):
    error = parse_error(constant(literal, "f64[]"))
    assert (error.line, error.column) == (2, 23 + literal.startswith("-"))
    assert error.message == f"{shown} is out of range for f64"


def test_inf_and_nan_literals_still_parse():
    module = parse_module(constant("[inf, -inf, nan]", "f64[3]"))
    value = module.functions["f"].body.ops[0].attrs["value"]
    assert value[0] == np.inf and value[1] == -np.inf and np.isnan(value[2])
