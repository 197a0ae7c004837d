"""``scatter_add`` for a GPU thread grid: one work item per element of the updates,
adding into the output with an atomic add.

The CPU kernel (kernels/special.py's ``emit_scatter_add``) adds the updates one after the
other in a single loop: on the GPU that is one thread, and an embedding gradient (many
rows of a large table) would run serially. Here the op is two launches:

1. *init*: the output starts as the operand, copied one element per item (skipped when
   the output is the operand's own buffer: a loop updating its state in place);
2. *add*: item ``t`` of ``outer * count * inner`` (the updates viewed as
   ``[outer, count, inner]``, row-major, so ``t`` is also the update's linear index) is
   ``(o, j, i)``; it loads ``indices[j]`` and, when it lies in ``[0, bound)``, adds
   ``updates[t]`` at ``[o, indices[j], i]`` of the output with ``atomicrmw`` (``fadd``
   for floats, ``add`` for integers: wrapping, as numpy's); out-of-range indices are
   skipped, as by the CPU kernel and the evaluator (ops.py: frontends that must raise,
   e.g. ``unsorted_segment_sum``'s ids past ``num_segments``, put a ``check`` before the
   op, which runs as its own kernel). pred results are an ``or``: a true update stores 1
   (an atomic store; every writer writes the same byte).

Neighbouring threads take neighbouring ``i``: their loads of the updates and their
atomics on one row hit consecutive addresses.

f16 accumulates in f32, as the evaluator does (and as ``Accumulator`` does on the CPU):
the init kernel widens the operand into an f32 scratch buffer of the run (a plan stage
buffer), the add kernel adds in f32, and a third launch rounds the scratch into the f16
output once per element. So no f16 atomics are needed, and the sums round once.

Like TF's GPU kernel (``atomicAdd``), the order in which duplicate indices add up is not
fixed, so float sums may differ in their last bits between runs; integer sums are exact.
The host emulation runs the items one at a time, in grid order.
"""
from __future__ import annotations

from llvmlite import ir as ll

from tfc import ir
from tfc.ir.dims import dims_product

from ..kernels.special import in_range, load_index, split_at
from ..llvm_util import CodegenError, counted_loop, if_then, storage_type

F32 = ir.ElemType.F32
F16 = ir.ElemType.F16
ORDERING = "monotonic"  # relaxed, as CUDA's atomicAdd


def emit(program, index: int, op: ir.Operation) -> None:
    """Emit and launch the kernels of ``op`` (a scatter_add)."""
    operand, indices, updates = op.operands
    elem = op.result.type.elem
    if not (elem.is_float or elem.is_int or elem is ir.ElemType.PRED):
        raise CodegenError(f"GPU scatter_add: unsupported element type {elem.value}")
    if elem is F16:
        from tfc.passes.buffer_assign import value_bytes

        scratch = program.scratch_buffer(value_bytes(ir.TensorType(F32, list(op.result.type.shape))))
        _copy(program, index, op, operand, F16, scratch, F32)
        _add(program, index, op, scratch, F32)
        _copy(program, index, op, scratch, F32, op.result, F16)
        return
    if program.buffer_of(op.result) != program.buffer_of(operand):
        _copy(program, index, op, operand, elem, op.result, elem)
    _add(program, index, op, op.result, elem)


def _copy(program, index: int, op: ir.Operation, source, source_elem, destination, destination_elem) -> None:
    """``destination[e] = source[e]`` for every element of the result, one item each;
    ``source``/``destination``: an IR value of the op or a scratch buffer (a tuple)."""
    values = [v for v in (destination, source) if isinstance(v, ir.Value)]
    extra = tuple(v for v in (destination, source) if not isinstance(v, ir.Value))
    kernel, params = program.new_kernel(op, values, extra=extra)
    b, s = kernel.b, kernel.scalar
    to, start = _pointer(kernel, destination, destination_elem), _pointer(kernel, source, source_elem)
    begin, end = kernel.parallel_range(op.result.type.num_elements)
    with counted_loop(b, begin, end, "e") as e:
        value = s.load(kernel.element_pointer(start, e), source_elem)
        s.store(value, kernel.element_pointer(to, e), destination_elem)
    program.call_kernel(kernel, params, index)


def _add(program, index: int, op: ir.Operation, target, elem: ir.ElemType) -> None:
    """One item per update element, added atomically at its position of ``target``."""
    operand, indices, updates = op.operands
    axis = op.attrs["axis"]
    if isinstance(target, ir.Value):
        kernel, params = program.new_kernel(op, [target, indices, updates])
    else:
        kernel, params = program.new_kernel(op, [indices, updates], extra=(target,))
    b, s = kernel.b, kernel.scalar
    outer, bound, inner = split_at(kernel, operand.type, axis)
    count = kernel.numel(indices.type)
    shape = operand.type.shape
    items = dims_product(list(shape[:axis]) + list(indices.type.shape) + list(shape[axis + 1:]))
    out = _pointer(kernel, target, elem)
    update_values = kernel.pointer(updates)
    update_elem = updates.type.elem
    begin, end = kernel.parallel_range(items)
    with counted_loop(b, begin, end, "item") as item:
        i, rest = b.srem(item, inner), b.sdiv(item, inner)
        j, o = b.srem(rest, count), b.sdiv(rest, count)
        position = load_index(kernel, indices, j)
        with if_then(b, in_range(b, position, bound), "valid"):
            linear = b.add(b.mul(b.add(b.mul(o, bound), position), inner), i)
            value = s.load(kernel.element_pointer(update_values, item), update_elem)
            atomic_add(kernel, kernel.element_pointer(out, linear), value, elem)
    program.call_kernel(kernel, params, index)


def atomic_add(kernel, pointer, value, elem: ir.ElemType) -> None:
    """``*pointer += value`` atomically (``value`` in registers of ``elem``; not f16)."""
    b = kernel.b
    if elem is ir.ElemType.PRED:
        with if_then(b, value, "true"):
            b.store_atomic(ll.Constant(storage_type(elem), 1), pointer, ORDERING, 1)
    elif elem.is_float:
        if elem is F16:
            raise CodegenError("GPU scatter_add: f16 adds go through an f32 scratch buffer")
        b.atomic_rmw("fadd", pointer, value, ORDERING)
    else:
        b.atomic_rmw("add", pointer, value, ORDERING)


def _pointer(kernel, target, elem: ir.ElemType):
    """The typed pointer to an op value's buffer or to a scratch buffer's."""
    if isinstance(target, ir.Value):
        return kernel.pointer(target)
    return kernel.pro.bitcast(kernel.param(target), storage_type(elem).as_pointer())

