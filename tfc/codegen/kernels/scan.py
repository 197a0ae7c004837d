"""The kernel of ``scan`` (tfc/ir/ops.py): running sums and products along one dim.

The tensor is viewed as ``[outer, axis, inner]``; for each outer position the axis is
walked in order (backwards when ``reverse``), and each step combines the previous
output row with an input row across the whole inner extent, a loop LLVM vectorises.
Step k reads output k-1 as stored, so every step is rounded to the element type exactly
as the evaluator does it.
"""
from __future__ import annotations

from tfc import ir

from ..llvm_util import const_i64, counted_loop
from .special import split_at


def emit_scan(program, index: int, op: ir.Operation) -> None:
    (x,) = op.operands
    elem = x.type.elem
    kind = "add" if op.attrs["op"] == "sum" else "mul"
    exclusive, reverse = op.attrs.get("exclusive", False), op.attrs.get("reverse", False)
    kernel, buffers = program.new_kernel(op, [op.result, x])
    b, s = kernel.b, kernel.scalar
    outer, size, inner = split_at(kernel, x.type, op.attrs["dim"])
    source, out = kernel.pointer(x), kernel.pointer(op.result)
    identity = s.constant(0 if kind == "add" else 1, elem)
    last = b.sub(size, const_i64(1))

    def row(o, step):
        """The linear offset of [o, position of step k, 0]."""
        position = b.sub(last, step) if reverse else step
        return b.mul(b.add(b.mul(o, size), position), inner)

    with counted_loop(b, 0, outer, "o") as o:
        with counted_loop(b, 0, size, "k") as k:
            here = row(o, k)
            is_first = b.icmp_signed("==", k, const_i64(0))
            before = row(o, b.select(is_first, k, b.sub(k, const_i64(1))))
            with counted_loop(b, 0, inner, "i") as i:
                previous = s.load(kernel.element_pointer(out, b.add(before, i)), elem)
                previous = b.select(is_first, identity, previous)
                if exclusive:
                    addend = s.load(kernel.element_pointer(source, b.add(before, i)), elem)
                    value = b.select(is_first, identity, s.binary(kind, elem, previous, addend))
                else:
                    value = s.binary(kind, elem, previous, s.load(kernel.element_pointer(source, b.add(here, i)), elem))
                s.store(value, kernel.element_pointer(out, b.add(here, i)), elem)
    program.call_kernel(kernel, buffers, index)


EMITTERS = {"scan": emit_scan}
