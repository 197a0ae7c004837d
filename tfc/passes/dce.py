"""Dead code elimination: delete ops none of whose results is used, transitively.

Each block is scanned backward from its terminator: an op is live when it has an effect
(``assign`` stores, ``rng`` advances its state), is a terminator or a call (the callee
may have effects), or when one of its results is used by a live op. Everything else is
deleted. Live fusion ops are cleaned inside as well (their ``yield`` is the root); a
fusion none of whose results is used goes as a whole (fusion bodies are pure).

Why it is safe: a deleted op is pure (or a ``read``, which observes a ref without
changing it), so nothing else can tell it ran. Function arguments, results and the
functions themselves are never touched.
"""
from __future__ import annotations

from tfc.ir.core import Block, Module

from .manager import Pass
from .patterns import is_removable


class DCE(Pass):
    name = "dce"

    def run(self, module: Module) -> bool:
        self.notes = []
        changed = False
        for func in module.functions.values():
            changed |= _dce_block(func.body)
        return changed


def _dce_block(block: Block) -> bool:
    """Delete the dead ops of ``block`` (and of the regions of its live ops).

    One backward walk over the use lists: users come after their operands' producers, so
    when an op is reached every user of its results has already been kept or erased (and
    an erased op no longer uses anything): the op is dead when it is removable and none of
    its results has a use left. Linear in the block's size."""
    kept: list = []
    changed = False
    for op in reversed(block.ops):
        if is_removable(op) and not any(result._uses for result in op.results):
            op.parent = None
            op.drop_references()
            changed = True
            continue
        for region in op.regions:
            changed |= _dce_block(region)
        kept.append(op)
    kept.reverse()
    block.ops = kept
    return changed
