"""Kernel emitters, one module per kernel family, and the dispatch from IR op to kernel."""
from __future__ import annotations

from tfc import ir

from ..llvm_util import CodegenError
from . import compaction, contraction, control, host_call, loop, reduction, rng, row, scan, special, state, windows

SPECIAL_EMITTERS = {**special.EMITTERS, **windows.EMITTERS, **rng.EMITTERS, **compaction.EMITTERS, **scan.EMITTERS}
FAMILY_EMITTERS = {"loop": loop.emit, "reduction": reduction.emit, "contraction": contraction.emit, "row": row.emit}


def _kind(op: ir.Operation) -> str:
    if op.name == "fusion":
        return {"loop": "loop", "input": "reduction", "output": "contraction", "row": "row"}[op.attrs["kind"]]
    if op.name == "reduce":
        return "reduction"
    if op.name in ("dot", "conv"):
        return "contraction"
    if loop.is_elemental_op(op):
        return "loop"
    return op.name


def emit_op(program, main, index: int, op: ir.Operation) -> None:
    """Emit the kernel (or nothing, for constants and aliases) computing ``op``."""
    if op.name == "constant":
        return
    if op.name in host_call.EMITTERS:
        host_call.EMITTERS[op.name](program, main, index, op)
        return
    if op.name in control.EMITTERS:
        emitter = program.control_emitter(op.name) or control.EMITTERS[op.name]
        emitter(program, main, index, op)
        return
    kind = _kind(op)
    if kind in state.EMITTERS:
        state.EMITTERS[kind](program, main, index, op)
        return
    emitter = program.kernel_emitter(kind) or FAMILY_EMITTERS.get(kind) or SPECIAL_EMITTERS.get(kind)
    if emitter is None:
        raise CodegenError(f"no kernel for core op '{op.name}'")
    program.emit_shared(op, index, emitter)
