"""Common subexpression elimination: merge pure ops that compute the same thing.

Two ops are the same when they have the same name, the same operands (the same SSA
values, in order), the same attributes (deep equality: arrays by dtype, shape and bytes,
SymExprs by equality, nested lists element by element, floats by their bits) and the
same result types. The later op is deleted and its results replaced by the first one's.

Why it is safe: a pure op's results depend only on its operands and attributes, and the
first op dominates the later one (same block, earlier), so every use of the later op can
use the first. Never merged:

- ops with effects: two ``read``s of a ref may see different values around an
  ``assign``; two ``rng``s draw different numbers; ``assign`` stores. (Two reads with no
  assign between them are not merged either: simple, and cheap to keep.)
- calls (the callee may have effects) and terminators;
- fusion ops: comparing regions structurally is not worth it here; fusion runs after
  CSE has merged the unfused ops, so duplicate fusions are rare.

Each fusion region is its own scope (a region sees only its own values), so ops inside
a region merge with each other but never with ops outside. Before keying a commutative
op, CSE puts its operands in canonicalize's order (non-constants by position, then
constants), so ``a+b`` and ``b+a`` merge, and an operand replaced by an earlier duplicate
leaves the op in canonical order: canonicalize has nothing to redo after CSE, and the
simplify group reaches its fixed point one iteration sooner. (Swapping a commutative
op's operands never changes its value.)

One forward walk per block, each op keyed once: linear in the size of the function.
"""
from __future__ import annotations

from typing import Optional

from tfc.ir.core import Block, Module, Operation

from .manager import Pass
from .patterns import attrs_key, is_commutative, is_pure, order_commutative_operands


class CSE(Pass):
    name = "cse"

    def run(self, module: Module) -> bool:
        self.notes = []
        changed = False
        for func in module.functions.values():
            changed |= _cse_block(func.body)
        return changed


def _cse_block(block: Block) -> bool:
    """Merge duplicates within ``block``; regions first, each with its own table.

    One forward walk: a duplicate's uses move to the first op through the use lists (a
    cost per use) before any later op is keyed, so later ops see merged operands and one
    walk finds chains of duplicates (linear in the block's size)."""
    seen: dict = {}
    changed = False
    position: dict = {arg: (-1, arg.index) for arg in block.args}  # canonicalize's order
    old_ops, block.ops = block.ops, []
    for op in old_ops:
        for region in op.regions:
            changed |= _cse_block(region)
        if is_commutative(op) and len(op.operands) == 2:
            changed |= order_commutative_operands(op, position)
        key = _key(op)
        first = seen.get(key) if key is not None else None
        if first is None:
            if key is not None:
                seen[key] = op
            index = len(block.ops)
            for result in op.results:
                position[result] = (index, result.index)
            block.ops.append(op)
            continue
        changed = True
        op.parent = None
        for old, new in zip(op.results, first.results):
            old.replace_all_uses_with(new)
        op.drop_references()
    return changed


def _key(op: Operation) -> Optional[tuple]:
    """The op's identity for merging, or None when it must never be merged."""
    if not is_pure(op) or op.regions or op.name == "fusion" or not op.results:
        return None
    return (op.name, tuple(op.operands), attrs_key(op.attrs), tuple(op.result_types))
