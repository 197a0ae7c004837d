"""Sliding-window kernels for a GPU thread grid: ``reduce_window`` (pooling) and
``select_and_scatter`` (max pooling's gradient), one work item per output element.

``reduce_window``: the item reduces its window (kernels/windows.py's geometry: padding
is skipped, f16 accumulates in f32 and is rounded once).

``select_and_scatter`` is a scatter on the CPU (each source element is added where its
window's first maximum is), which threads cannot share without atomics. Here it is a
gather: the item for input position ``p`` visits, in row-major order, the windows that
contain ``p`` (along each dim the windows ``o`` with ``o*stride - low <= p <
o*stride - low + window``), finds each one's first maximum as the CPU does, and adds the
window's source element when that is ``p``. The additions into one position happen in
the same order as the scatter's (row-major source order), so results are identical.
"""
from __future__ import annotations

from llvmlite import ir as ll

from tfc import ir
from tfc.ir.dims import dims_product

from ..kernels.reduction import combine, identity
from ..kernels.special import beats
from ..kernels.windows import Windows
from ..llvm_util import I1, I64, const_i64, counted_loop, floor_div, if_then


def emit_reduce_window(program, index: int, op: ir.Operation) -> None:
    x = op.operands[0]
    kernel, buffers = program.new_kernel(op, [op.result, x])
    b, s = kernel.b, kernel.scalar
    kind, elem = op.attrs["op"], x.type.elem
    windows = Windows(kernel, op, x.type)
    source, out = kernel.pointer(x), kernel.pointer(op.result)
    out_shape = kernel.shape(op.result.type)
    acc_slot = kernel.pro.alloca(identity(kind, elem, s).type)

    def accumulate(coordinates, linear) -> None:
        value = s.load(kernel.element_pointer(source, linear), elem)
        b.store(combine(kernel, kind, elem, b.load(acc_slot), value), acc_slot)

    begin, end = kernel.parallel_range(op.result.type.num_elements, dims_product(windows.window))
    with counted_loop(b, begin, end, "o") as o:
        b.store(identity(kind, elem, s), acc_slot)
        windows.visit(kernel.delinearize(o, out_shape), accumulate)
        s.store(b.load(acc_slot), kernel.element_pointer(out, o), elem)
    program.call_kernel(kernel, buffers, index)


def emit_select_and_scatter(program, index: int, op: ir.Operation) -> None:
    x, source = op.operands
    kernel, buffers = program.new_kernel(op, [op.result, x, source])
    b, s = kernel.b, kernel.scalar
    elem = x.type.elem
    acc_elem = ir.ElemType.F32 if elem is ir.ElemType.F16 else elem
    windows = Windows(kernel, op, x.type)
    values, gradients, out = kernel.pointer(x), kernel.pointer(source), kernel.pointer(op.result)
    source_shape = kernel.shape(source.type)
    sum_slot = kernel.pro.alloca(s.constant(0, acc_elem).type)
    found_slot = kernel.pro.alloca(I1)
    best_slot = kernel.pro.alloca(s.constant(0, elem).type)
    position_slot = kernel.pro.alloca(I64)

    def candidate(coordinates, linear) -> None:
        value = s.load(kernel.element_pointer(values, linear), elem)
        found, best = b.load(found_slot), b.load(best_slot)
        take = b.or_(b.not_(found), beats(b, ">", elem, value, best))
        b.store(b.select(take, value, best), best_slot)
        b.store(b.select(take, linear, b.load(position_slot)), position_slot)
        b.store(ll.Constant(I1, 1), found_slot)

    def window(p_linear, window_index: list) -> None:
        b.store(ll.Constant(I1, 0), found_slot)
        b.store(const_i64(0), position_slot)
        windows.visit(window_index, candidate)
        chosen = b.and_(b.load(found_slot), b.icmp_signed("==", b.load(position_slot), p_linear))
        with if_then(b, chosen, "selected"):
            gradient = s.load(kernel.element_pointer(gradients, kernel.linearize(window_index, source_shape)), elem)
            b.store(s.binary("add", acc_elem, b.load(sum_slot), s.convert(gradient, elem, acc_elem)), sum_slot)

    def containing(p_multi: list, p_linear, prefix: list) -> None:
        """Windows containing p, row-major: along dim d, o in [first, last] clamped."""
        d = len(prefix)
        if d == len(p_multi):
            window(p_linear, prefix)
            return
        stride, low, size = windows.strides[d], windows.low[d], windows.window[d]
        shifted = b.add(p_multi[d], const_i64(low))  # p + low = o*stride + w, 0 <= w < size
        first = floor_div(b, b.add(b.sub(shifted, const_i64(size)), const_i64(stride)), const_i64(stride))
        first = b.select(b.icmp_signed("<", first, const_i64(0)), const_i64(0), first)
        last = b.add(floor_div(b, shifted, const_i64(stride)), const_i64(1))
        bound = source_shape[d]
        last = b.select(b.icmp_signed(">", last, bound), bound, last)
        with counted_loop(b, first, last, f"win{d}") as o:
            containing(p_multi, p_linear, prefix + [o])

    x_shape = kernel.shape(x.type)
    begin, end = kernel.parallel_range(x.type.num_elements, dims_product(windows.window))
    with counted_loop(b, begin, end, "p") as p:
        b.store(s.constant(0, acc_elem), sum_slot)
        containing(kernel.delinearize(p, x_shape), p, [])
        s.store(b.load(sum_slot), kernel.element_pointer(out, p), elem)
    program.call_kernel(kernel, buffers, index)


EMITTERS = {"reduce_window": emit_reduce_window, "select_and_scatter": emit_select_and_scatter}
