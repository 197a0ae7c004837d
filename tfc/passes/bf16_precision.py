"""bf16 precision: round the f32 operands of every ``dot`` and ``conv`` to bfloat16.

What it rewrites: each f32 operand ``%x`` of a ``dot`` or ``conv`` (in any block, also
inside ``if``/``while`` regions) becomes ``%r = round_bf16 %x``, inserted just before the
contraction::

    %2 = dot %0, %1 {contract=[[1], [0]]} : f32[4,5]
  ->
    %2 = round_bf16 %0 : f32[4,3]
    %3 = round_bf16 %1 : f32[3,5]
    %4 = dot %2, %3 {contract=[[1], [0]]} : f32[4,5]

An operand already made by ``round_bf16`` is left alone (the pass is idempotent), and
one value feeding several contractions is rounded once per block. Nothing else changes:
the contraction still accumulates in f32 and every other op (bias adds, activations,
reductions, the optimizer's updates) still computes in f32.

This is the numerics of TF's oneDNN auto-mixed-precision on CPU (``precision="bf16"``,
tfc/codegen/bf16.py): the graph's MatMul/BatchMatMul/Conv ops, their gradients' matmuls
and convolutions included (they lower to ``dot``/``conv`` too), multiply bf16 operands
and accumulate in f32. Because a product of two bf16 values (8-bit significands) is exact
in f32, f32 kernels on rounded operands give the results of bf16 x bf16 -> f32
products.

Why it is safe: ``round_bf16`` is pure, elementwise and f32 -> f32, so every rewritten
contraction keeps its operand and result types, and the inserted op is placed right
before its only user, after the value it reads. It changes results on purpose (that is
the mode; it is off unless requested). Integer, f16 and f64 contractions are not touched.
"""
from __future__ import annotations

from tfc.ir.core import Block, Module, Operation
from tfc.ir.types import ElemType, TensorType

from .manager import Pass

CONTRACTIONS = ("dot", "conv")


class Bf16Precision(Pass):
    name = "bf16_precision"

    def run(self, module: Module) -> bool:
        self.notes = []
        rounded = 0
        for function in module.functions.values():
            rounded += _round_block(function.body)
        if rounded:
            self.notes.append(f"rounded {rounded} contraction operand(s) to bfloat16")
        return rounded > 0


def _is_f32_tensor(value) -> bool:
    return isinstance(value.type, TensorType) and value.type.elem is ElemType.F32


def _round_block(block: Block) -> int:
    """Insert the roundings in ``block`` and the regions of its ops; the number inserted.
    One pass over the block, building its new op list (linear in its size)."""
    ops: list = []
    done: dict = {}  # value -> its round_bf16 result in this block
    inserted = 0
    for op in block.ops:
        for region in op.regions:
            inserted += _round_block(region)
        if op.name in CONTRACTIONS:
            for i, operand in enumerate(op.operands):
                if not _is_f32_tensor(operand):
                    continue
                producer = operand.defining_op
                if producer is not None and producer.name == "round_bf16":
                    continue
                if operand not in done:
                    rounding = Operation("round_bf16", [operand], [operand.type], loc=op.loc)
                    rounding.parent = block
                    ops.append(rounding)
                    done[operand] = rounding.result
                    inserted += 1
                op.operands[i] = done[operand]
        ops.append(op)
    block.ops = ops
    return inserted
