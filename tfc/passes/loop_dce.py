"""Loop DCE: delete the loop-carried values of a ``while`` that nothing uses, and the loop
invariants its regions no longer read.

A carried value is dead when its result after the loop is unused, the condition region
does not read it, and in the body it feeds at most its own next value (possibly through
other dead carried values): nothing the loop computes that matters depends on it. TF's
gradients make many (stacks of forward values the backward loop never pops because the
values are known at compile time, counters kept only for TF's own bookkeeping). The
value's operand, result, region arguments and yield slot go; the ops that computed its
next value are then dead, and DCE deletes them.

Why it is safe: a deleted carried value can influence only deleted values (checked as a
fixed point over the body), never the condition, an effect or a live result, so the loop
runs the same iterations and computes the same live values. Only values of pure ops are
traced; ops with effects in the body (and calls) are roots and keep what they read.
"""
from __future__ import annotations

from tfc.ir.core import Block, Module, Operation

from .manager import Pass
from .patterns import is_removable


class LoopDCE(Pass):
    name = "loop_dce"

    def run(self, module: Module) -> bool:
        self.notes = []
        changed = False
        for func in module.functions.values():
            for op in list(func.walk()):
                if op.name == "while" and op.parent is not None:
                    changed |= _prune(op)
        return changed


def _prune(loop: Operation) -> bool:
    condition, body = loop.regions
    carried = loop.attrs["carried"]
    dead = {k for k in range(carried) if not loop.results[k].has_uses and not condition.args[k].has_uses}
    while dead:
        live = _live_values(body, skip_yield=dead)
        still = {k for k in dead if body.args[k] not in live}
        if still == dead:
            break
        dead = still
    unused_invariants = {i for i in range(carried, len(loop.operands))
                         if not condition.args[i].has_uses and not body.args[i].has_uses}
    if not dead and not unused_invariants:
        return False
    _drop_yields(body, dead)
    gone = dead | unused_invariants
    # The dead carried args may still be used by the (now dead) ops computing their next
    # values: those ops go first, then the args.
    _erase_dead_ops(body)
    for region in (condition, body):
        _drop_args(region, gone)
    loop.operands = [v for i, v in enumerate(loop.operands) if i not in gone]
    loop.results = [r for k, r in enumerate(loop.results) if k not in dead]
    for index, result in enumerate(loop.results):
        result.index = index
    loop.attrs["carried"] = carried - len(dead)
    return True


def _live_values(body: Block, skip_yield: set) -> set:
    """Values the body needs for the yields not in ``skip_yield`` and for its effects."""
    terminator = body.ops[-1]
    pending = [v for k, v in enumerate(terminator.operands) if k not in skip_yield]
    pending += [v for op in body.ops[:-1] if not is_removable(op) for v in op.operands]
    live: set = set()
    while pending:
        value = pending.pop()
        if value in live:
            continue
        live.add(value)
        producer = value.defining_op
        if producer is not None and producer.parent is body:
            pending.extend(producer.operands)
    return live


def _drop_yields(body: Block, dead: set) -> None:
    terminator = body.ops[-1]
    terminator.operands = [v for k, v in enumerate(terminator.operands) if k not in dead]


def _erase_dead_ops(body: Block) -> None:
    """Erase the body's pure ops whose results are unused, last first (so uses vanish in
    order)."""
    for op in reversed(body.ops[:-1]):
        if is_removable(op) and not any(r.has_uses for r in op.results):
            op.erase()


def _drop_args(block: Block, gone: set) -> None:
    block.args = [arg for i, arg in enumerate(block.args) if i not in gone]
    for index, arg in enumerate(block.args):
        arg.index = index
