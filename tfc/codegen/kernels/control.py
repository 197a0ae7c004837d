"""``if`` and ``while`` in the program's entry: LLVM branches and loops around the kernels of
their regions. Control flow runs in the glue; kernels stay straight-line code.

Buffers (tfc/passes/buffer_assign.py): an if's region arguments are its captured operands'
buffers and its results have buffers of their own, written by the taken region's yield; a
while's loop state lives in its result buffers (the initial values are copied in, each
iteration's yield is copied back) and its invariants in their operands' buffers. Values
computed while emitting a region (buffer addresses, dims) stay inside that region's
blocks (``main.scope``), so nothing defined in one branch is used where it does not
dominate.
"""
from __future__ import annotations

from llvmlite import ir as ll

from tfc import ir

from ..llvm_util import I8


def emit_if(program, main, index: int, op: ir.Operation) -> None:
    b = main.b
    predicate = b.icmp_unsigned("!=", b.load(main.pointer(program.buffer_of(op.operands[0]))), ll.Constant(I8, 0))
    with b.if_else(predicate) as (then, otherwise):
        for region, branch in zip(op.regions, (then, otherwise)):
            with branch, main.scope():
                _emit_ops(program, main, index, region)
                _copy(program, main, region.ops[-1].operands, op.results)


def emit_while(program, main, index: int, op: ir.Operation) -> None:
    b = main.b
    carried = op.attrs["carried"]
    condition, body = op.regions
    state = list(op.results)
    _copy(program, main, op.operands[:carried], state)
    staging = _staging(program, main, body.ops[-1].operands, state)
    header = b.append_basic_block("while.cond")
    loop = b.append_basic_block("while.body")
    done = b.append_basic_block("while.end")
    b.branch(header)
    b.position_at_end(header)
    with main.scope():
        _emit_ops(program, main, index, condition)
        flag = b.load(main.pointer(program.buffer_of(condition.ops[-1].operands[0])))
        b.cbranch(b.icmp_unsigned("!=", flag, ll.Constant(I8, 0)), loop, done)
    b.position_at_end(loop)
    with main.scope():
        _emit_ops(program, main, index, body)
        _copy(program, main, body.ops[-1].operands, state, staging)
        b.branch(header)
    b.position_at_end(done)


def _emit_ops(program, main, index: int, region: ir.Block) -> None:
    from . import emit_op

    for inner in region.ops[:-1]:
        emit_op(program, main, program.op_index[inner], inner)  # errors name the op inside


def _staging(program, main, sources, destinations) -> dict:
    """Scratch buffers (allocated once, before the loop) for yielded values that live in
    another loop variable's buffer: copying one variable into the next must not overwrite a
    value still to be copied (``yield %b, %a`` swaps)."""
    targets = {program.buffer_of(d) for d in destinations}
    scratch = {}
    for k, (source, destination) in enumerate(zip(sources, destinations)):
        buffer = program.buffer_of(source)
        if buffer in targets and buffer != program.buffer_of(destination):
            size = main.bytes_of(source.type)
            scratch[k] = main.b.alloca(I8, size=size, name=f"while.stage{k}")
            scratch[k].align = 64
    return scratch


def _copy(program, main, sources, destinations, staging=None) -> None:
    """destination[k] = source[k] for each k (through ``staging``'s scratch where given)."""
    staging = staging or {}
    pairs = [(k, s, d) for k, (s, d) in enumerate(zip(sources, destinations))
             if program.buffer_of(s) != program.buffer_of(d)]
    for k, source, _ in pairs:
        if k in staging:
            main.memcpy(staging[k], main.pointer(program.buffer_of(source)), main.bytes_of(source.type))
    for k, source, destination in pairs:
        origin = staging[k] if k in staging else main.pointer(program.buffer_of(source))
        main.memcpy(main.pointer(program.buffer_of(destination)), origin, main.bytes_of(destination.type))


EMITTERS = {"if": emit_if, "while": emit_while}
