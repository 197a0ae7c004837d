"""Use lists: every value knows its (op, operand index) uses, through every kind of change."""
import pytest

from tfc.ir import Block, Builder, Function, Module, Operation, parse_module, tensor, verify
from tfc.ir.verifier import VerifyError
from tfc.passes.manager import WorkCounter

F4 = tensor("f32", 4)


def _chain(n: int):
    """@main(%x) computing n negations in a row, returning the last; (function, values)."""
    func = Function("main", [F4], ["x"])
    b = Builder(func.body)
    values = [func.args[0]]
    for _ in range(n):
        values.append(b.value("neg", [values[-1]]))
    b.op("return", [values[-1]])
    return func, values


def test_construction_records_every_operand_slot():
    func = Function("main", [F4, F4], ["x", "y"])
    x, y = func.args
    b = Builder(func.body)
    add = b.op("add", [x, x])
    mul = b.op("mul", [x, y])
    assert x.uses == [(add, 0), (add, 1), (mul, 0)]
    assert x.users == [add, mul] and x.num_uses == 3 and x.has_uses
    assert y.uses == [(mul, 1)]
    assert add.result.uses == [] and not add.result.has_uses


def test_assigning_operands_moves_uses():
    func = Function("main", [F4, F4], ["x", "y"])
    x, y = func.args
    op = Builder(func.body).op("add", [x, y])
    op.operands = [y, y]
    assert x.uses == [] and sorted(y.uses, key=lambda use: use[1]) == [(op, 0), (op, 1)]
    op.operands[0] = x
    assert x.uses == [(op, 0)] and y.uses == [(op, 1)]
    op.operands[-1] = x
    assert x.num_uses == 2 and y.uses == []


def test_list_mutators_keep_slots_right():
    func = Function("main", [F4, F4, F4], ["a", "b", "c"])
    a, b, c = func.args
    op = Operation("concatenate", [a, b], [tensor("f32", 8)], {"dim": 0})
    op.operands.insert(0, c)  # c, a, b
    assert c.uses == [(op, 0)] and a.uses == [(op, 1)] and b.uses == [(op, 2)]
    op.operands.append(a)  # c, a, b, a
    assert sorted(i for _, i in a.uses) == [1, 3]
    assert op.operands.pop(0) is c  # a, b, a
    assert c.uses == [] and sorted(i for _, i in a.uses) == [0, 2] and b.uses == [(op, 1)]
    op.operands.remove(b)  # a, a
    assert b.uses == [] and sorted(i for _, i in a.uses) == [0, 1]
    op.operands[0:1] = [b, c]  # b, c, a
    assert b.uses == [(op, 0)] and c.uses == [(op, 1)] and a.uses == [(op, 2)]
    del op.operands[1]  # b, a
    assert c.uses == [] and a.uses == [(op, 1)]
    op.operands.clear()
    assert a.uses == b.uses == c.uses == []
    op.operands += [c, c]
    assert sorted(i for _, i in c.uses) == [0, 1]
    assert op.operands == [c, c]  # still reads as a list


def test_replace_all_uses_with_touches_only_the_uses():
    func, values = _chain(3)
    x, n1, n2, n3 = values
    extra = Builder(func.body).value("exp", [x])
    func.body.ops.insert(0, func.body.ops.pop())  # keep exp before its uses
    assert n1.replace_all_uses_with(extra) == 1
    assert n1.uses == [] and extra.uses == [(n2.owner, 0)]
    assert n2.owner.operands[0] is extra
    assert n3.replace_all_uses_with(n3) == 0


def test_block_replace_all_uses_is_scoped_to_the_block():
    text = """func @main(%x: f32[4]) -> (f32[4], f32[4]) {
  %0 = exp %x : f32[4]
  %1 = fusion %0, %x {kind="loop"} : f32[4] {
  ^(%a: f32[4], %b: f32[4]):
    %2 = add %a, %b : f32[4]
    yield %2
  }
  %3 = neg %0 : f32[4]
  return %1, %3
}
"""
    module = parse_module(text)
    body = module.main.body
    exp, fusion, neg, ret = body.ops
    region = fusion.regions[0]
    a = region.args[0]
    outside = Operation("neg", [a], [F4])  # a user of %a that no block holds
    region.replace_all_uses(a, region.args[1])
    assert region.ops[0].operands == [region.args[1], region.args[1]]
    assert a.uses == [(outside, 0)]  # not in the region: untouched
    outside.erase()
    body.replace_all_uses(exp.result, module.main.args[0])
    assert fusion.operands[0] is module.main.args[0] and neg.operands[0] is module.main.args[0]
    assert exp.result.uses == []
    assert body.contains(region.ops[0]) and not region.contains(neg)


def test_erase_drops_uses_recursively_and_detach_keeps_them():
    module = parse_module("""func @main(%x: f32[4]) -> (f32[4]) {
  %0 = fusion %x {kind="loop"} : f32[4] {
  ^(%a: f32[4]):
    %1 = exp %a : f32[4]
    yield %1
  }
  %2 = neg %x : f32[4]
  return %2
}
""")
    body = module.main.body
    fusion, neg, _ = body.ops
    x = module.main.args[0]
    a = fusion.regions[0].args[0]
    assert a.num_uses == 1 and x.num_uses == 2
    body.detach(neg)
    assert neg.parent is None and x.num_uses == 2  # still a user
    body.insert(1, neg)
    fusion.erase()
    assert fusion not in body.ops and a.uses == [] and x.uses == [(neg, 0)]
    body.remove(neg)
    assert x.uses == [] and neg.operands == []


def test_erase_ops_removes_many_in_one_pass():
    func, values = _chain(5)
    body = func.body
    doomed = {values[3].owner, values[4].owner}
    values[5].owner.operands = [values[2]]
    body.erase_ops(doomed)
    assert [op.name for op in body.ops] == ["neg", "neg", "neg", "return"]
    assert values[2].uses == [(values[5].owner, 0)] and values[3].uses == [] and values[4].uses == []
    verify(func)


def test_verifier_reports_a_dropped_op_that_still_uses_a_value():
    func, values = _chain(2)
    body = func.body
    stale = body.ops[1]
    body.ops.remove(stale)  # behind the IR's back: not erased
    body.ops[-1].operands = [values[1]]
    with pytest.raises(VerifyError, match="use list of result 0 records a use by a 'neg' op not in the function"):
        verify(func)
    stale.drop_references()
    verify(func)


def test_verifier_reports_an_operand_missing_from_its_use_list():
    func, values = _chain(2)
    op = func.body.ops[1]
    list.__setitem__(op.operands, 0, values[0])  # bypasses the use lists
    with pytest.raises(VerifyError, match="operand 0 is missing from its value's use list"):
        verify(func)


def test_parsed_modules_have_use_lists():
    module = parse_module("""func @main(%x: f32[4]) -> (f32[4]) {
  %0 = add %x, %x : f32[4]
  %1 = mul %0, %x : f32[4]
  return %1
}
""")
    x = module.main.args[0]
    add, mul, ret = module.main.body.ops
    assert x.uses == [(add, 0), (add, 1), (mul, 1)]
    assert add.result.uses == [(mul, 0)] and mul.result.uses == [(ret, 0)]


def _rauw_work(n: int) -> int:
    """Lines executed to redirect one use of a value in a function of n ops."""
    func, values = _chain(n)
    extra = Builder(Block()).value("exp", [values[0]])
    target = values[n // 2]
    with WorkCounter() as counter:
        target.replace_all_uses_with(extra)
        func.body.replace_all_uses(extra, target)
    return counter.lines


def test_replacing_uses_costs_the_uses_not_the_function():
    small, large = _rauw_work(50), _rauw_work(5000)
    assert small > 0 and large == small


def test_module_of_a_chain_verifies():
    func, _ = _chain(10)
    verify(Module([func]))
