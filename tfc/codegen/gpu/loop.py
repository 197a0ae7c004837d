"""Loop kernels for a GPU thread grid: one work item per output element.

The CPU's loop kernels (kernels/loop.py) split a non-elementwise result (a transpose, a
broadcast along rows, a concatenation) across threads by its first dim only, which on a
GPU leaves a few hundred threads for a batch of a few hundred. Here every element is a
work item whatever the shape: the item's row-major position is its index (the multi-index
is derived from it only where an op of the fusion needs one), so neighbouring threads
write neighbouring addresses. A transpose that moves the innermost dim goes through
shared memory instead (transpose.py), so its reads are neighbours too.
"""
from __future__ import annotations

from tfc import ir

from . import transpose
from ..kernel import Elemental, Index
from ..kernels.loop import kernel_body
from ..llvm_util import counted_loop


def emit(program, index: int, op: ir.Operation) -> None:
    if transpose.applies(op):  # through shared memory: coalesced on both sides
        transpose.emit(program, index, op)
        return
    root, leaves, members = kernel_body(op)
    kernel, params = program.new_kernel(op, [op.result] + list(op.operands))
    out_type = op.result.type
    out = kernel.pointer(op.result)
    shape = kernel.shape(out_type)
    begin, end = kernel.parallel_range(out_type.num_elements, max(1, len(members)))
    with counted_loop(kernel.b, begin, end, "i") as i:
        value = Elemental(kernel, leaves).gen(root, Index(kernel, shape, linear=i))
        kernel.scalar.store(value, kernel.element_pointer(out, i), out_type.elem)
    program.call_kernel(kernel, params, index)
