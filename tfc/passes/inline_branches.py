"""Inline branches: an ``if`` whose predicate is a constant becomes the ops of the region it
would take, and a ``while`` whose condition region yields a constant false runs zero
times, so its results are its initial values.

Why it is safe: the taken region's ops run exactly as they would inside the ``if`` (in the
same order, with the captured operands in place of the region's arguments, side effects
included: an ``assign`` in the taken branch still happens, in the other branch it never
did), and the results are the values the region yields. A ``while`` whose condition is
false on entry never runs its body. Regions see nothing but their arguments, so moving
their ops out cannot change what any operand refers to. Runs inside the simplify fixed
point, after constant folding has made predicates constant.
"""
from __future__ import annotations

from typing import Optional

from tfc.ir.core import Module, Operation

from .manager import Pass
from .patterns import Rewrite, splat_scalar, sweep_module


class InlineBranches(Pass):
    name = "inline_branches"

    def run(self, module: Module) -> bool:
        self.notes = []
        return sweep_module(module, self._visit)

    def _visit(self, op: Operation) -> Optional[Rewrite]:
        if op.name == "if":
            taken = splat_scalar(op.operands[0])
            if taken is None:
                return None
            region = op.regions[0] if bool(taken) else op.regions[1]
            return _inline(region, op.operands[1:])
        if op.name == "while":
            condition = op.regions[0]
            if len(condition.ops) != 2:  # just `constant; yield`
                return None
            flag = splat_scalar(condition.ops[-1].operands[0])
            if flag is None or bool(flag):
                return None
            return Rewrite([], list(op.operands[:op.attrs["carried"]]))
        return None


def _inline(region, operands) -> Rewrite:
    """The region's ops, moved out, with its arguments replaced by ``operands``."""
    for arg, operand in zip(region.args, operands):
        arg.replace_all_uses_with(operand)
    terminator = region.ops[-1]
    yielded = list(terminator.operands)
    terminator.drop_references()
    ops = list(region.ops[:-1])
    region.ops = []
    for inner in ops:
        inner.parent = None
    return Rewrite(ops, yielded)
