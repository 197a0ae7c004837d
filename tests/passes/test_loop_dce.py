"""Loop DCE: IR text in -> IR text out. A while loop's carried values that only feed
themselves, and invariants no region reads, go."""
from tfc.ir import parse_module, verify
from tfc.passes import DCE, LoopDCE

LOOP = """func @main(%x: f32[4], %n: i32[]) -> (i32[], f32[4]) {
  %0 = constant dense<0> : i32[]
  %1 = constant dense<0.0> : f32[3,4]
  %2:3 = while %0, %x, %1, %n, %x {carried=3} : (i32[], f32[4], f32[3,4]) {
  ^(%i: i32[], %v: f32[4], %acc: f32[3,4], %limit: i32[], %unused: f32[4]):
    %3 = compare %i, %limit {dir="lt"} : pred[]
    yield %3
  } {
  ^(%i: i32[], %v: f32[4], %acc: f32[3,4], %limit: i32[], %unused: f32[4]):
    %4 = constant dense<1> : i32[]
    %5 = add %i, %4 : i32[]
    %6 = exp %v : f32[4]
    %7 = reshape %i : i32[1]
    %8 = reshape %v : f32[1,4]
    %9 = scatter_add %acc, %7, %8 {axis=0} : f32[3,4]
    yield %5, %6, %9
  }
  return %2#0, %2#1
}
"""

PRUNED = """func @main(%x: f32[4], %n: i32[]) -> (i32[], f32[4]) {
  %0 = constant dense<0> : i32[]
  %1:2 = while %0, %x, %n {carried=2} : (i32[], f32[4]) {
  ^(%i: i32[], %v: f32[4], %limit: i32[]):
    %2 = compare %i, %limit {dir="lt"} : pred[]
    yield %2
  } {
  ^(%i: i32[], %v: f32[4], %limit: i32[]):
    %3 = constant dense<1> : i32[]
    %4 = add %i, %3 : i32[]
    %5 = exp %v : f32[4]
    yield %4, %5
  }
  return %1#0, %1#1
}
"""


def loop_dce(text: str) -> tuple:
    module = parse_module(text)
    verify(module)
    changed = LoopDCE().run(module)
    DCE().run(module)
    verify(module)
    return changed, str(module)


def test_a_carried_value_only_feeding_itself_and_an_unread_invariant_go():
    # %acc (a stack TF's gradient pushes the forward values onto) is never read after the
    # loop; %unused is an invariant nothing reads.
    assert loop_dce(LOOP) == (True, PRUNED)


def test_a_carried_value_the_condition_reads_stays():
    text = LOOP.replace('%3 = compare %i, %limit {dir="lt"} : pred[]',
                        '%3 = compare %i, %limit {dir="lt"} : pred[]\n    %30 = reduce %acc {dims=[0, 1], op="sum"} : f32[]')
    changed, out = loop_dce(text)
    assert changed and "%acc: f32[3,4]" in out and "%unused" not in out


def test_a_carried_value_feeding_a_live_one_stays():
    text = LOOP.replace("%6 = exp %v : f32[4]", '%60 = reduce %acc {dims=[0], op="sum"} : f32[4]\n    %6 = exp %60 : f32[4]')
    changed, out = loop_dce(text)
    assert changed and "%acc: f32[3,4]" in out and "scatter_add" in out


def test_dead_values_feeding_each_other_go_together():
    # %a and %b swap each iteration; neither result is used.
    text = """func @main(%x: f32[2]) -> (i32[]) {
  %0 = constant dense<0> : i32[]
  %1:3 = while %0, %x, %x {carried=3} : (i32[], f32[2], f32[2]) {
  ^(%i: i32[], %a: f32[2], %b: f32[2]):
    %2 = constant dense<5> : i32[]
    %3 = compare %i, %2 {dir="lt"} : pred[]
    yield %3
  } {
  ^(%i: i32[], %a: f32[2], %b: f32[2]):
    %4 = constant dense<1> : i32[]
    %5 = add %i, %4 : i32[]
    %6 = neg %b : f32[2]
    %7 = exp %a : f32[2]
    yield %5, %6, %7
  }
  return %1#0
}
"""
    changed, out = loop_dce(text)
    assert changed
    assert "%1 = while %0 {carried=1} : i32[] {" in out and "neg" not in out and "exp" not in out


def test_a_loop_with_nothing_dead_is_unchanged():
    text = PRUNED
    module = parse_module(text)
    assert LoopDCE().run(module) is False
    assert str(module) == text
