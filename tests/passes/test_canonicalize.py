"""Canonicalize: IR text in -> IR text out, for every rewrite and the ones that must not happen."""
import pytest

from tfc.ir import parse_module, verify
from tfc.passes import DCE, Canonicalize


def _func(signature: str, *lines: str) -> str:
    body = "".join(f"  {line}\n" for line in lines)
    return f"func @main{signature} {{\n{body}}}\n"


def canonicalize(text: str, *, dce: bool = False) -> str:
    """Run Canonicalize (then DCE, to drop orphaned producers) and return the text."""
    module = parse_module(text)
    verify(module)
    Canonicalize().run(module)
    verify(module)
    if dce:
        DCE().run(module)
    return str(module)


def assert_fixed_point(text: str) -> None:
    """The pass leaves canonical IR alone and says so."""
    module = parse_module(text)
    assert Canonicalize().run(module) is False
    assert str(module) == text


F = "f32[s0,4]"
IDENTITY = _func(f"(%x: {F}) -> ({F})", "return %x")


def _splat_broadcast(value: str, elem: str = "f32") -> list:
    return [f"%0 = constant dense<{value}> : {elem}[]", f"%1 = broadcast %0 {{dims=[]}} : {elem}[s0,4]"]


# -- identities ----------------------------------------------------------------------------
@pytest.mark.parametrize("op, const, const_first", [
    ("mul", "1.0", False), ("mul", "1.0", True), ("add", "0.0", False), ("add", "0.0", True),
    ("sub", "0.0", False), ("div", "1.0", False), ("add", "-0.0", False),
])
def test_float_identities_with_broadcast_scalar(op, const, const_first):
    operands = "%1, %x" if const_first else "%x, %1"
    text = _func(f"(%x: {F}) -> ({F})", *_splat_broadcast(const), f"%2 = {op} {operands} : {F}", "return %2")
    assert canonicalize(text, dce=True) == IDENTITY


@pytest.mark.parametrize("op, const", [("mul", "1"), ("add", "0"), ("sub", "0"), ("div", "1")])
def test_int_identities_with_splat_constant(op, const):
    text = _func("(%x: i32[3]) -> (i32[3])", f"%0 = constant dense<{const}> : i32[3]",
                 f"%1 = {op} %x, %0 : i32[3]", "return %1")
    assert canonicalize(text) == _func("(%x: i32[3]) -> (i32[3])", f"%0 = constant dense<{const}> : i32[3]",
                                       "return %x")


def test_identity_keeps_the_constant_when_not_dce():
    text = _func(f"(%x: {F}) -> ({F})", *_splat_broadcast("1.0"), f"%2 = mul %1, %x : {F}", "return %2")
    assert canonicalize(text) == _func(f"(%x: {F}) -> ({F})", *_splat_broadcast("1.0"), "return %x")


def test_zero_minus_x_and_one_over_x_are_not_identities():
    text = _func("(%x: f32[3]) -> (f32[3], f32[3])", "%0 = constant dense<0.0> : f32[3]",
                 "%1 = constant dense<1.0> : f32[3]", "%2 = sub %0, %x : f32[3]", "%3 = div %1, %x : f32[3]",
                 "return %2, %3")
    assert_fixed_point(text)


def test_non_splat_constant_is_not_an_identity():
    text = _func("(%x: f32[2]) -> (f32[2])", "%0 = constant dense<[1.0, 0.0]> : f32[2]",
                 "%1 = mul %x, %0 : f32[2]", "return %1")
    assert_fixed_point(text)


def test_int_times_zero_is_zero():
    text = _func("(%x: i32[s0,4]) -> (i32[s0,4])", *_splat_broadcast("0", "i32"),
                 "%2 = mul %x, %1 : i32[s0,4]", "return %2")
    assert canonicalize(text) == _func("(%x: i32[s0,4]) -> (i32[s0,4])", *_splat_broadcast("0", "i32"),
                                       "return %1")


def test_float_times_zero_is_not_rewritten():
    text = _func(f"(%x: {F}) -> ({F})", *_splat_broadcast("0.0"), f"%2 = mul %x, %1 : {F}", "return %2")
    assert_fixed_point(text)


@pytest.mark.parametrize("op, const", [("and", "true"), ("or", "false")])
def test_pred_identities(op, const):
    text = _func("(%p: pred[2]) -> (pred[2])", f"%0 = constant dense<{const}> : pred[2]",
                 f"%1 = {op} %0, %p : pred[2]", "return %1")
    assert canonicalize(text, dce=True) == _func("(%p: pred[2]) -> (pred[2])", "return %p")


@pytest.mark.parametrize("op, const", [("and", "false"), ("or", "true")])
def test_pred_absorbing_constants_are_left(op, const):
    text = _func("(%p: pred[2]) -> (pred[2])", f"%0 = constant dense<{const}> : pred[2]",
                 f"%1 = {op} %p, %0 : pred[2]", "return %1")
    assert_fixed_point(text)


def test_and_with_all_ones_int_is_not_rewritten():
    text = _func("(%x: i32[2]) -> (i32[2])", "%0 = constant dense<1> : i32[2]", "%1 = and %x, %0 : i32[2]",
                 "return %1")
    assert_fixed_point(text)


# -- involutions ---------------------------------------------------------------------------
@pytest.mark.parametrize("op, t", [("neg", "f32[3]"), ("neg", "i32[3]"), ("not", "pred[3]"), ("not", "i8[3]")])
def test_involutions(op, t):
    text = _func(f"(%x: {t}) -> ({t})", f"%0 = {op} %x : {t}", f"%1 = {op} %0 : {t}", "return %1")
    assert canonicalize(text) == _func(f"(%x: {t}) -> ({t})", f"%0 = {op} %x : {t}", "return %x")
    assert canonicalize(text, dce=True) == _func(f"(%x: {t}) -> ({t})", "return %x")


def test_triple_negation_is_one():
    text = _func("(%x: f32[3]) -> (f32[3])", "%0 = neg %x : f32[3]", "%1 = neg %0 : f32[3]",
                 "%2 = neg %1 : f32[3]", "return %2")
    assert canonicalize(text, dce=True) == _func("(%x: f32[3]) -> (f32[3])", "%0 = neg %x : f32[3]", "return %0")


# -- transpose -----------------------------------------------------------------------------
def test_transpose_of_transpose_composes():
    text = _func("(%x: f32[2,3,4]) -> (f32[3,4,2])",
                 "%0 = transpose %x {perm=[1, 0, 2]} : f32[3,2,4]",
                 '%1 = transpose %0 {perm=[0, 2, 1]} : f32[3,4,2] loc("t.py":7)',
                 "return %1")
    assert canonicalize(text, dce=True) == _func(
        "(%x: f32[2,3,4]) -> (f32[3,4,2])",
        '%0 = transpose %x {perm=[1, 2, 0]} : f32[3,4,2] loc("t.py":7)',
        "return %0")


def test_transpose_of_inverse_transpose_is_x():
    text = _func("(%x: f32[s0,3,4]) -> (f32[s0,3,4])",
                 "%0 = transpose %x {perm=[2, 0, 1]} : f32[4,s0,3]",
                 "%1 = transpose %0 {perm=[1, 2, 0]} : f32[s0,3,4]",
                 "return %1")
    assert canonicalize(text, dce=True) == _func("(%x: f32[s0,3,4]) -> (f32[s0,3,4])", "return %x")


def test_identity_transpose_is_x():
    text = _func("(%x: f32[2,3]) -> (f32[2,3])", "%0 = transpose %x {perm=[0, 1]} : f32[2,3]", "return %0")
    assert canonicalize(text) == _func("(%x: f32[2,3]) -> (f32[2,3])", "return %x")


def test_single_transpose_stays():
    assert_fixed_point(_func("(%x: f32[2,3]) -> (f32[3,2])", "%0 = transpose %x {perm=[1, 0]} : f32[3,2]",
                             "return %0"))


# -- reshape -------------------------------------------------------------------------------
def test_reshape_of_reshape_is_one_reshape():
    text = _func("(%x: f32[s0,6]) -> (f32[s0,2,3])",
                 "%0 = reshape %x : f32[6*s0]",
                 '%1 = reshape %0 : f32[s0,2,3] loc("r.py":2)',
                 "return %1")
    assert canonicalize(text, dce=True) == _func("(%x: f32[s0,6]) -> (f32[s0,2,3])",
                                                 '%0 = reshape %x : f32[s0,2,3] loc("r.py":2)',
                                                 "return %0")


def test_reshape_back_and_reshape_to_own_type_are_x():
    text = _func("(%x: f32[s0,6]) -> (f32[s0,6], f32[s0,6])",
                 "%0 = reshape %x : f32[6*s0]",
                 "%1 = reshape %0 : f32[s0,6]",
                 "%2 = reshape %x : f32[s0,6]",
                 "return %1, %2")
    assert canonicalize(text, dce=True) == _func("(%x: f32[s0,6]) -> (f32[s0,6], f32[s0,6])", "return %x, %x")


# -- broadcast -----------------------------------------------------------------------------
def test_broadcast_of_broadcast_composes_dims():
    text = _func("(%x: f32[3], %n: f32[s0]) -> (f32[2,s0,3])",
                 "%0 = broadcast %x {dims=[1]} : f32[s0,3]",
                 "%1 = broadcast %0 {dims=[1, 2]} : f32[2,s0,3]",
                 "return %1")
    assert canonicalize(text, dce=True) == _func("(%x: f32[3], %n: f32[s0]) -> (f32[2,s0,3])",
                                                 "%0 = broadcast %x {dims=[2]} : f32[2,s0,3]",
                                                 "return %0")


def test_broadcast_of_scalar_broadcast():
    text = _func("(%x: f32[]) -> (f32[5,4])",
                 "%0 = broadcast %x {dims=[]} : f32[4]",
                 "%1 = broadcast %0 {dims=[1]} : f32[5,4]",
                 "return %1")
    assert canonicalize(text, dce=True) == _func("(%x: f32[]) -> (f32[5,4])",
                                                 "%0 = broadcast %x {dims=[]} : f32[5,4]",
                                                 "return %0")


def test_broadcast_with_size_one_expansion_composes():
    text = _func("(%x: f32[1,3]) -> (f32[2,5,3])",
                 "%0 = broadcast %x {dims=[0, 1]} : f32[5,3]",
                 "%1 = broadcast %0 {dims=[1, 2]} : f32[2,5,3]",
                 "return %1")
    assert canonicalize(text, dce=True) == _func("(%x: f32[1,3]) -> (f32[2,5,3])",
                                                 "%0 = broadcast %x {dims=[1, 2]} : f32[2,5,3]",
                                                 "return %0")


def test_broadcast_to_own_type_is_x():
    text = _func(f"(%x: {F}) -> ({F})", f"%0 = broadcast %x {{dims=[0, 1]}} : {F}", "return %0")
    assert canonicalize(text) == IDENTITY


def test_size_one_expanding_broadcast_stays():
    assert_fixed_point(_func("(%x: f32[1,4]) -> (f32[3,4])", "%0 = broadcast %x {dims=[0, 1]} : f32[3,4]",
                             "return %0"))


# -- convert, select, slice, pad, concatenate, reduce ----------------------------------------
def test_convert_to_same_type_is_x_but_real_converts_stay():
    text = _func("(%x: f32[3]) -> (f32[3], i32[3])",
                 "%0 = convert %x : f32[3]",
                 "%1 = convert %x : i32[3]",
                 "return %0, %1")
    assert canonicalize(text) == _func("(%x: f32[3]) -> (f32[3], i32[3])",
                                       "%0 = convert %x : i32[3]",
                                       "return %x, %0")


@pytest.mark.parametrize("value, chosen", [("true", "%a"), ("false", "%b")])
def test_select_with_splat_predicate(value, chosen):
    sig = "(%a: f32[s0], %b: f32[s0]) -> (f32[s0])"
    text = _func(sig, f"%0 = constant dense<{value}> : pred[]", "%1 = broadcast %0 {dims=[]} : pred[s0]",
                 "%2 = select %1, %a, %b : f32[s0]", "return %2")
    assert canonicalize(text, dce=True) == _func(sig, f"return {chosen}")


def test_select_with_mixed_constant_predicate_stays():
    text = _func("(%a: f32[2], %b: f32[2]) -> (f32[2])", "%0 = constant dense<[true, false]> : pred[2]",
                 "%1 = select %0, %a, %b : f32[2]", "return %1")
    assert_fixed_point(text)


def test_select_of_equal_branches():
    text = _func("(%p: pred[2], %a: f32[2]) -> (f32[2])", "%0 = select %p, %a, %a : f32[2]", "return %0")
    assert canonicalize(text) == _func("(%p: pred[2], %a: f32[2]) -> (f32[2])", "return %a")


def test_whole_slice_is_x_partial_and_strided_stay():
    sig = "(%x: f32[s0,4]) -> (f32[s0,4], f32[s0,4], f32[s0-1,4], f32[s0,2])"
    text = _func(sig,
                 "%0 = slice %x {limit=[s0, 4], start=[0, 0]} : f32[s0,4]",
                 "%1 = slice %x {limit=[s0, 4], start=[0, 0], stride=[1, 1]} : f32[s0,4]",
                 "%2 = slice %x {limit=[s0, 4], start=[1, 0]} : f32[s0-1,4]",
                 "%3 = slice %x {limit=[s0, 4], start=[0, 0], stride=[1, 2]} : f32[s0,2]",
                 "return %0, %1, %2, %3")
    assert canonicalize(text) == _func(sig,
                                       "%0 = slice %x {limit=[s0, 4], start=[1, 0]} : f32[s0-1,4]",
                                       "%1 = slice %x {limit=[s0, 4], start=[0, 0], stride=[1, 2]} : f32[s0,2]",
                                       "return %x, %x, %0, %1")


def test_zero_pad_is_x_real_pad_stays():
    sig = "(%x: f32[3], %v: f32[]) -> (f32[3], f32[3], f32[4])"
    text = _func(sig,
                 "%0 = pad %x, %v {high=[0], low=[0]} : f32[3]",
                 "%1 = pad %x, %v {high=[0], interior=[0], low=[0]} : f32[3]",
                 "%2 = pad %x, %v {high=[1], low=[0]} : f32[4]",
                 "return %0, %1, %2")
    assert canonicalize(text) == _func(sig, "%0 = pad %x, %v {high=[1], low=[0]} : f32[4]", "return %x, %x, %0")


def test_interior_pad_stays():
    assert_fixed_point(_func("(%x: f32[3], %v: f32[]) -> (f32[5])",
                             "%0 = pad %x, %v {high=[0], interior=[1], low=[0]} : f32[5]", "return %0"))


def test_single_operand_concatenate_is_x():
    sig = "(%x: f32[s0,2], %y: f32[3,2]) -> (f32[s0,2], f32[s0+3,2])"
    text = _func(sig, "%0 = concatenate %x {dim=0} : f32[s0,2]", "%1 = concatenate %x, %y {dim=0} : f32[s0+3,2]",
                 "return %0, %1")
    assert canonicalize(text) == _func(sig, "%0 = concatenate %x, %y {dim=0} : f32[s0+3,2]", "return %x, %0")


def test_reduce_over_no_dims_is_x():
    sig = "(%x: f32[s0,4]) -> (f32[s0,4], f32[s0])"
    text = _func(sig, '%0 = reduce %x {dims=[], op="sum"} : f32[s0,4]',
                 '%1 = reduce %x {dims=[1], op="max"} : f32[s0]', "return %0, %1")
    assert canonicalize(text) == _func(sig, '%0 = reduce %x {dims=[1], op="max"} : f32[s0]', "return %x, %0")


# -- operand order ---------------------------------------------------------------------------
def test_commutative_ops_order_operands_by_position():
    sig = "(%a: f32[2], %b: f32[2]) -> (f32[2], f32[2], f32[2], f32[2])"
    text = _func(sig, "%0 = add %b, %a : f32[2]", "%1 = add %a, %b : f32[2]", "%2 = max %b, %a : f32[2]",
                 "%3 = sub %b, %a : f32[2]", "return %0, %1, %2, %3")
    assert canonicalize(text) == _func(sig, "%0 = add %a, %b : f32[2]", "%1 = add %a, %b : f32[2]",
                                       "%2 = max %b, %a : f32[2]", "%3 = sub %b, %a : f32[2]",
                                       "return %0, %1, %2, %3")


def test_float_max_and_min_keep_their_operand_order_integer_ones_do_not():
    # max(-0.0, 0.0) is -0.0 and max(0.0, -0.0) is 0.0: a float max is not commutative.
    sig = "(%a: f32[2], %b: f32[2], %i: i32[2], %j: i32[2]) -> (f32[2], i32[2])"
    text = _func(sig, "%0 = min %b, %a : f32[2]", "%1 = max %j, %i : i32[2]", "return %0, %1")
    assert canonicalize(text) == _func(sig, "%0 = min %b, %a : f32[2]", "%1 = max %i, %j : i32[2]", "return %0, %1")


def test_constants_go_second():
    sig = "(%x: f32[s0,4]) -> (f32[s0,4])"
    text = _func(sig, *_splat_broadcast("2.0"), f"%2 = mul %1, %x : {F}", "return %2")
    assert canonicalize(text) == _func(sig, *_splat_broadcast("2.0"), f"%2 = mul %x, %1 : {F}", "return %2")


def test_op_results_order_after_arguments():
    sig = "(%a: f32[2], %b: f32[2]) -> (f32[2])"
    text = _func(sig, "%0 = exp %a : f32[2]", "%1 = mul %0, %b : f32[2]", "return %1")
    assert canonicalize(text) == _func(sig, "%0 = exp %a : f32[2]", "%1 = mul %b, %0 : f32[2]", "return %1")


@pytest.mark.parametrize("direction, swapped", [("eq", True), ("ne", True), ("lt", False), ("ge", False)])
def test_compare_order(direction, swapped):
    sig = "(%a: i32[2], %b: i32[2]) -> (pred[2])"
    text = _func(sig, f'%0 = compare %b, %a {{dir="{direction}"}} : pred[2]', "return %0")
    operands = "%a, %b" if swapped else "%b, %a"
    assert canonicalize(text) == _func(sig, f'%0 = compare {operands} {{dir="{direction}"}} : pred[2]',
                                       "return %0")


@pytest.mark.parametrize("op", ["and", "or", "xor"])
def test_logical_ops_are_commutative(op):
    sig = "(%a: pred[2], %b: pred[2]) -> (pred[2])"
    text = _func(sig, f"%0 = {op} %b, %a : pred[2]", "return %0")
    assert canonicalize(text) == _func(sig, f"%0 = {op} %a, %b : pred[2]", "return %0")


# -- effects, regions, fixed point -----------------------------------------------------------
def test_effectful_ops_are_never_rewritten():
    sig = "(%w: ref<f32[2]>, %s: ref<i64[]>) -> (f32[2], f32[2])"
    text = _func(sig,
                 "%0 = read %w : f32[2]",
                 "%1 = constant dense<1.0> : f32[2]",
                 "%2 = mul %0, %1 : f32[2]",
                 "assign %w, %2",
                 '%3 = rng %s {dist="uniform", seed=[1, 2]} : f32[2]',
                 "%4 = read %w : f32[2]",
                 "return %4, %3")
    assert canonicalize(text) == _func(sig,
                                       "%0 = read %w : f32[2]",
                                       "%1 = constant dense<1.0> : f32[2]",
                                       "assign %w, %0",
                                       '%2 = rng %s {dist="uniform", seed=[1, 2]} : f32[2]',
                                       "%3 = read %w : f32[2]",
                                       "return %3, %2")


def test_fusion_regions_are_simplified():
    text = """\
func @main(%x: f32[s0,4]) -> (f32[s0,4]) {
  %0 = fusion %x {kind="loop"} : f32[s0,4] {
  ^(%p0: f32[s0,4]):
    %1 = constant dense<1.0> : f32[]
    %2 = broadcast %1 {dims=[]} : f32[s0,4]
    %3 = mul %2, %p0 : f32[s0,4]
    %4 = neg %3 : f32[s0,4]
    yield %4
  }
  return %0
}
"""
    assert canonicalize(text, dce=True) == """\
func @main(%x: f32[s0,4]) -> (f32[s0,4]) {
  %0 = fusion %x {kind="loop"} : f32[s0,4] {
  ^(%p0: f32[s0,4]):
    %1 = neg %p0 : f32[s0,4]
    yield %1
  }
  return %0
}
"""


def test_chains_simplify_in_one_run():
    sig = "(%x: f32[s0,3]) -> (f32[s0,3])"
    text = _func(sig,
                 "%0 = constant dense<0.0> : f32[]",
                 "%1 = broadcast %0 {dims=[]} : f32[s0,3]",
                 "%2 = transpose %x {perm=[1, 0]} : f32[3,s0]",
                 "%3 = transpose %2 {perm=[1, 0]} : f32[s0,3]",
                 "%4 = add %1, %3 : f32[s0,3]",
                 "%5 = neg %4 : f32[s0,3]",
                 "%6 = neg %5 : f32[s0,3]",
                 "%7 = reshape %6 : f32[3*s0]",
                 "%8 = reshape %7 : f32[s0,3]",
                 "return %8")
    module = parse_module(text)
    assert Canonicalize().run(module) is True
    DCE().run(module)
    assert str(module) == _func(sig, "return %x")
    assert Canonicalize().run(module) is False


def test_canonical_ir_is_a_fixed_point():
    text = _func("(%a: f32[2], %b: f32[2]) -> (f32[2])", "%0 = add %a, %b : f32[2]", "%1 = exp %0 : f32[2]",
                 "return %1")
    assert_fixed_point(text)


def test_module_with_several_functions():
    text = _func("(%x: f32[2]) -> (f32[2])", "%0 = neg %x : f32[2]", "%1 = neg %0 : f32[2]",
                 "%2 = call %1 {callee=@f} : f32[2]", "return %2") + "\n" + """\
func @f(%a: f32[2]) -> (f32[2]) {
  %0 = transpose %a {perm=[0]} : f32[2]
  return %0
}
"""
    out = canonicalize(text, dce=True)
    assert out == _func("(%x: f32[2]) -> (f32[2])", "%0 = call %x {callee=@f} : f32[2]", "return %0") + "\n" + """\
func @f(%a: f32[2]) -> (f32[2]) {
  return %a
}
"""


# -- scatters ---------------------------------------------------------------------------------
@pytest.mark.parametrize("scatter_first", [False, True])
def test_adding_rows_scattered_into_zeros_scatters_them_into_the_other_operand(scatter_first):
    # TF's gradient of a TensorArray read in a loop: one row written into a new zero array,
    # added to the accumulated gradient array each iteration.
    sig = "(%acc: f32[5,3], %i: i32[1], %row: f32[1,3]) -> (f32[5,3])"
    operands = "%3, %acc" if scatter_first else "%acc, %3"
    text = _func(sig,
                 "%0 = constant dense<0.0> : f32[]",
                 "%1 = broadcast %0 {dims=[]} : f32[5,3]",
                 "%3 = scatter_add %1, %i, %row {axis=0} : f32[5,3]",
                 f"%4 = add {operands} : f32[5,3]",
                 "return %4")
    assert canonicalize(text, dce=True) == _func(sig, "%0 = scatter_add %acc, %i, %row {axis=0} : f32[5,3]",
                                                 "return %0")


def test_adding_rows_scattered_into_nonzeros_stays():
    sig = "(%acc: f32[5,3], %base: f32[5,3], %i: i32[1], %row: f32[1,3]) -> (f32[5,3])"
    assert_fixed_point(_func(sig, "%0 = scatter_add %base, %i, %row {axis=0} : f32[5,3]",
                             "%1 = add %acc, %0 : f32[5,3]", "return %1"))


def test_scattering_every_row_in_order_into_zeros_is_the_rows_and_gathering_them_is_the_array():
    # TF's TensorArray unstack / stack of a whole array.
    sig = "(%x: f32[3,s0]) -> (f32[3,s0], f32[3,s0])"
    text = _func(sig,
                 "%0 = constant dense<0.0> : f32[]",
                 "%1 = broadcast %0 {dims=[]} : f32[3,s0]",
                 "%2 = constant dense<[0, 1, 2]> : i32[3]",
                 "%3 = scatter_add %1, %2, %x {axis=0} : f32[3,s0]",
                 "%4 = exp %3 : f32[3,s0]",
                 "%5 = gather %4, %2 {axis=0} : f32[3,s0]",
                 "return %3, %5")
    assert canonicalize(text, dce=True) == _func(sig, "%0 = exp %x : f32[3,s0]", "return %x, %0")


@pytest.mark.parametrize("indices", ["[0, 2, 1]", "[0, 1, 1]"])
def test_scattering_or_gathering_rows_out_of_order_stays(indices):
    sig = "(%x: f32[3,2]) -> (f32[3,2], f32[3,2])"
    assert_fixed_point(_func(sig,
                             "%0 = constant dense<0.0> : f32[]",
                             "%1 = broadcast %0 {dims=[]} : f32[3,2]",
                             f"%2 = constant dense<{indices}> : i32[3]",
                             "%3 = scatter_add %1, %2, %x {axis=0} : f32[3,2]",
                             "%4 = gather %x, %2 {axis=0} : f32[3,2]",
                             "return %3, %4"))
