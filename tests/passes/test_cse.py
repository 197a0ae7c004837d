"""CSE: IR text in -> IR text out."""
from tfc.ir import parse_module, verify
from tfc.passes import CSE, Canonicalize


def _func(signature: str, *lines: str) -> str:
    body = "".join(f"  {line}\n" for line in lines)
    return f"func @main{signature} {{\n{body}}}\n"


def cse(text: str) -> str:
    module = parse_module(text)
    verify(module)
    CSE().run(module)
    verify(module)
    return str(module)


def assert_unchanged(text: str) -> None:
    module = parse_module(text)
    assert CSE().run(module) is False
    assert str(module) == text


def test_identical_pure_ops_merge_keeping_the_first():
    sig = "(%x: f32[s0,4]) -> (f32[s0,4], f32[s0,4])"
    text = _func(sig,
                 '%0 = exp %x : f32[s0,4] loc("first"("a.py":1))',
                 '%1 = exp %x : f32[s0,4] loc("second"("a.py":2))',
                 "%2 = add %0, %0 : f32[s0,4]",
                 "%3 = add %1, %1 : f32[s0,4]",
                 "return %2, %3")
    assert cse(text) == _func(sig,
                              '%0 = exp %x : f32[s0,4] loc("first"("a.py":1))',
                              "%1 = add %0, %0 : f32[s0,4]",
                              "return %1, %1")


def test_constants_merge_by_value_and_type():
    sig = "() -> (f32[2], f32[2], f32[2], f64[2], f32[2], f32[2], f32[2])"
    text = _func(sig,
                 "%0 = constant dense<[1.0, 2.0]> : f32[2]",
                 "%1 = constant dense<[1.0, 2.0]> : f32[2]",
                 "%2 = constant dense<[2.0, 1.0]> : f32[2]",
                 "%3 = constant dense<[1.0, 2.0]> : f64[2]",
                 "%4 = constant dense<0.0> : f32[2]",
                 "%5 = constant dense<-0.0> : f32[2]",
                 "%6 = constant dense<nan> : f32[2]",
                 "%7 = constant dense<nan> : f32[2]",
                 "return %0, %1, %2, %3, %4, %5, %6")
    assert cse(text) == _func(sig,
                              "%0 = constant dense<[1.0, 2.0]> : f32[2]",
                              "%1 = constant dense<[2.0, 1.0]> : f32[2]",
                              "%2 = constant dense<[1.0, 2.0]> : f64[2]",
                              "%3 = constant dense<0.0> : f32[2]",
                              "%4 = constant dense<-0.0> : f32[2]",
                              "%5 = constant dense<nan> : f32[2]",
                              "return %0, %0, %1, %2, %3, %4, %5")


def test_different_attributes_or_result_types_do_not_merge():
    sig = "(%x: f32[2,3]) -> (f32[2], f32[2], f32[3], f32[6], f32[3,2], i32[2,3])"
    text = _func(sig,
                 '%0 = reduce %x {dims=[1], op="sum"} : f32[2]',
                 '%1 = reduce %x {dims=[1], op="max"} : f32[2]',
                 '%2 = reduce %x {dims=[0], op="sum"} : f32[3]',
                 "%3 = reshape %x : f32[6]",
                 "%4 = reshape %x : f32[3,2]",
                 "%5 = convert %x : i32[2,3]",
                 "return %0, %1, %2, %3, %4, %5")
    assert_unchanged(text)


def test_symbolic_attributes_merge_by_equality():
    sig = "(%x: f32[s0,4]) -> (f32[s0-1,4], f32[s0-1,4], f32[s0-2,4])"
    text = _func(sig,
                 "%0 = slice %x {limit=[s0, 4], start=[1, 0]} : f32[s0-1,4]",
                 "%1 = slice %x {limit=[s0, 4], start=[1, 0]} : f32[s0-1,4]",
                 "%2 = slice %x {limit=[s0-1, 4], start=[1, 0]} : f32[s0-2,4]",
                 "return %0, %1, %2")
    assert cse(text) == _func(sig,
                              "%0 = slice %x {limit=[s0, 4], start=[1, 0]} : f32[s0-1,4]",
                              "%1 = slice %x {limit=[s0-1, 4], start=[1, 0]} : f32[s0-2,4]",
                              "return %0, %0, %1")


def test_nested_list_attributes_merge():
    sig = "(%a: f32[3,4], %b: f32[4,5]) -> (f32[3,5], f32[3,5])"
    text = _func(sig,
                 "%0 = dot %a, %b {contract=[[1], [0]]} : f32[3,5]",
                 "%1 = dot %a, %b {contract=[[1], [0]]} : f32[3,5]",
                 "return %0, %1")
    assert cse(text) == _func(sig, "%0 = dot %a, %b {contract=[[1], [0]]} : f32[3,5]", "return %0, %0")


def test_commutative_operands_are_put_in_canonical_order_before_keying():
    sig = "(%a: f32[2], %b: f32[2]) -> (f32[2], f32[2])"
    text = _func(sig, "%0 = add %a, %b : f32[2]", "%1 = add %b, %a : f32[2]", "return %0, %1")
    assert cse(text) == _func(sig, "%0 = add %a, %b : f32[2]", "return %0, %0")
    module = parse_module(text)
    Canonicalize().run(module)
    CSE().run(module)
    assert str(module) == _func(sig, "%0 = add %a, %b : f32[2]", "return %0, %0")
    # a merge that replaces an operand by an earlier duplicate leaves canonical order behind
    text = _func(sig, "%0 = exp %a : f32[2]", "%1 = exp %b : f32[2]", "%2 = exp %a : f32[2]",
                 "%3 = mul %1, %2 : f32[2]", "return %3, %0")
    module = parse_module(text)
    assert CSE().run(module) is True
    assert str(module) == _func(sig, "%0 = exp %a : f32[2]", "%1 = exp %b : f32[2]", "%2 = mul %0, %1 : f32[2]",
                                "return %2, %0")
    assert Canonicalize().run(module) is False


def test_merging_cascades_to_users():
    sig = "(%x: f32[2]) -> (f32[2], f32[2])"
    text = _func(sig, "%0 = exp %x : f32[2]", "%1 = neg %0 : f32[2]", "%2 = exp %x : f32[2]",
                 "%3 = neg %2 : f32[2]", "return %1, %3")
    assert cse(text) == _func(sig, "%0 = exp %x : f32[2]", "%1 = neg %0 : f32[2]", "return %1, %1")


def test_reads_are_never_merged_across_an_assign():
    sig = "(%w: ref<f32[2]>, %g: f32[2]) -> (f32[2], f32[2])"
    text = _func(sig,
                 "%0 = read %w : f32[2]",
                 "%1 = sub %0, %g : f32[2]",
                 "assign %w, %1",
                 "%2 = read %w : f32[2]",
                 "%3 = sub %2, %g : f32[2]",
                 "return %1, %3")
    assert_unchanged(text)


def test_effectful_ops_never_merge():
    sig = "(%w: ref<f32[2]>, %s: ref<i64[]>, %v: f32[2]) -> (f32[2], f32[2], f32[2], f32[2])"
    text = _func(sig,
                 "%0 = read %w : f32[2]",
                 "%1 = read %w : f32[2]",
                 '%2 = rng %s {dist="uniform", seed=[1, 2]} : f32[2]',
                 '%3 = rng %s {dist="uniform", seed=[1, 2]} : f32[2]',
                 "assign %w, %v",
                 "assign %w, %v",
                 "return %0, %1, %2, %3")
    assert_unchanged(text)


def test_calls_never_merge():
    text = _func("(%x: f32[2]) -> (f32[2], f32[2])", "%0 = call %x {callee=@f} : f32[2]",
                 "%1 = call %x {callee=@f} : f32[2]", "return %0, %1") + "\n" + """\
func @f(%a: f32[2]) -> (f32[2]) {
  return %a
}
"""
    assert_unchanged(text)


FUSIONS = """\
func @main(%x: f32[2]) -> (f32[2], f32[2]) {
  %0 = fusion %x {kind="loop"} : f32[2] {
  ^(%p0: f32[2]):
    %1 = exp %p0 : f32[2]
    %2 = exp %p0 : f32[2]
    %3 = add %1, %2 : f32[2]
    yield %3
  }
  %4 = fusion %x {kind="loop"} : f32[2] {
  ^(%p0: f32[2]):
    %5 = exp %p0 : f32[2]
    yield %5
  }
  %6 = exp %x : f32[2]
  return %0, %4
}
"""


def test_fusions_never_merge_but_their_regions_are_cleaned_each_on_its_own():
    assert cse(FUSIONS) == """\
func @main(%x: f32[2]) -> (f32[2], f32[2]) {
  %0 = fusion %x {kind="loop"} : f32[2] {
  ^(%p0: f32[2]):
    %1 = exp %p0 : f32[2]
    %2 = add %1, %1 : f32[2]
    yield %2
  }
  %3 = fusion %x {kind="loop"} : f32[2] {
  ^(%p0: f32[2]):
    %4 = exp %p0 : f32[2]
    yield %4
  }
  %5 = exp %x : f32[2]
  return %0, %3
}
"""


def test_identical_fusions_do_not_merge():
    text = """\
func @main(%x: f32[2]) -> (f32[2], f32[2]) {
  %0 = fusion %x {kind="loop"} : f32[2] {
  ^(%p0: f32[2]):
    %1 = exp %p0 : f32[2]
    yield %1
  }
  %2 = fusion %x {kind="loop"} : f32[2] {
  ^(%p0: f32[2]):
    %3 = exp %p0 : f32[2]
    yield %3
  }
  return %0, %2
}
"""
    assert_unchanged(text)


def test_second_run_changes_nothing():
    sig = "(%x: f32[2]) -> (f32[2], f32[2])"
    module = parse_module(_func(sig, "%0 = exp %x : f32[2]", "%1 = exp %x : f32[2]", "return %0, %1"))
    assert CSE().run(module) is True
    assert CSE().run(module) is False
