"""Reduction kernels for a GPU thread grid: a ``reduce``, alone or as the root of an
input fusion.

The CPU kernel splits only a kept leading dim across threads (a reduction over dim 0,
a bias gradient, a loss, runs on one thread); here every output element is a work item:
the thread computing it sweeps the reduced dims in row-major order, computing each
element of the operand elementally (a fused producer is never stored), and stores the
result once. Neighbouring threads compute neighbouring outputs, so a reduction over
leading dims (``reduce_sum(x, 0)``) reads neighbouring addresses: coalesced.

When the output is small and the reduced extent large (a loss, a bias gradient over a
large batch) that leaves too few threads, so the work is split in two launches of one
op: ``SPLIT`` chunks of the reduced index space each reduce into a scratch buffer of
partials (``[SPLIT, outputs]``, a stage buffer of the run), then one thread per output
combines its partials in chunk order.

When the operand's innermost dim is reduced (``reduce_sum(x, -1)``, a row's max) one
thread per output would read its row alone, a stride apart from its neighbours, so with
enough outputs each output gets a block instead (a cooperative kernel, block.py): the
block's threads read the row side by side and combine their partials with warp shuffles.

All orders are fixed, so results do not depend on the grid; f16 accumulates in f32 and is
rounded once, as the evaluator does.
"""
from __future__ import annotations

from tfc import ir
from tfc.ir.dims import dim_ceildiv, dim_mul, dims_product

from . import block
from ..kernel import Elemental, Index
from ..kernels.reduction import combine, identity, reduction_body
from ..llvm_util import CodegenError, const_i64, counted_loop, register_type, storage_type

SPLIT_OUTPUTS_BELOW = 8192  # outputs (a static count) under which a large reduction is split
SPLIT_MIN_REDUCED = 1024  # reduced elements per output (static) from which splitting pays
SPLIT = 256  # chunks of a split reduction
ROW_BLOCKS_FROM = 128  # outputs (a static count) from which a row reduction runs a block per output


def emit(program, index: int, op: ir.Operation) -> None:
    reduce_op, leaves = reduction_body(op)
    if reduce_op is None or reduce_op.name != "reduce":
        raise CodegenError("an input fusion must yield a reduce")
    sweep = _Sweep(reduce_op, op)
    if _by_rows(sweep):
        _emit_rows(program, index, op, leaves, sweep)
    elif _split(sweep) and _innermost_reduced(sweep):
        _emit_split_rows(program, index, op, leaves, sweep)
    elif _split(sweep):
        _emit_split(program, index, op, leaves, sweep)
    else:
        _emit_direct(program, index, op, leaves, sweep)


class _Sweep:
    """The reduce's dims: kept (the output's) and reduced, with their extents."""

    def __init__(self, reduce_op: ir.Operation, op: ir.Operation):
        self.reduce_op = reduce_op
        self.operand = reduce_op.operands[0]
        self.kind = reduce_op.attrs["op"]
        self.elem = self.operand.type.elem
        self.acc_elem = ir.ElemType.F32 if self.elem is ir.ElemType.F16 else self.elem
        reduced = set(reduce_op.attrs["dims"])
        self.reduced = [d for d in range(self.operand.type.rank) if d in reduced]
        self.kept = [d for d in range(self.operand.type.rank) if d not in reduced]
        self.out_type = op.result.type
        self.outputs = dims_product([self.operand.type.shape[d] for d in self.kept])
        self.reduced_count = dims_product([self.operand.type.shape[d] for d in self.reduced])

    def full_index(self, kernel, kept_index: list, reduced_index: list) -> Index:
        multi = [None] * self.operand.type.rank
        for d, i in zip(self.kept, kept_index):
            multi[d] = i
        for d, i in zip(self.reduced, reduced_index):
            multi[d] = i
        return Index(kernel, kernel.shape(self.operand.type), multi=multi)

    def kept_shape(self, kernel) -> list:
        return [kernel.dim(self.operand.type.shape[d]) for d in self.kept]

    def reduced_shape(self, kernel) -> list:
        return [kernel.dim(self.operand.type.shape[d]) for d in self.reduced]


def _split(sweep: _Sweep) -> bool:
    if not isinstance(sweep.outputs, int) or sweep.outputs >= SPLIT_OUTPUTS_BELOW:
        return False
    count = sweep.reduced_count
    return not isinstance(count, int) or count >= SPLIT_MIN_REDUCED


def _accumulate(kernel, elemental: Elemental, sweep: _Sweep, kept_index: list, begin, end, acc_slot) -> None:
    """acc_slot (op)= operand at every reduced position r in [begin, end) (row-major)."""
    b = kernel.b
    shape = sweep.reduced_shape(kernel)
    with counted_loop(b, begin, end, "r") as r:
        reduced_index = kernel.delinearize(r, shape) if shape else []
        value = elemental.gen(sweep.operand, sweep.full_index(kernel, kept_index, reduced_index))
        b.store(combine(kernel, sweep.kind, sweep.elem, b.load(acc_slot), value), acc_slot)


def _emit_direct(program, index: int, op: ir.Operation, leaves: dict, sweep: _Sweep) -> None:
    """One work item per output element."""
    kernel, params = program.new_kernel(op, [op.result] + list(op.operands))
    b = kernel.b
    out = kernel.pointer(op.result)
    begin, end = kernel.parallel_range(sweep.outputs, sweep.reduced_count)
    acc_slot = kernel.pro.alloca(_register(sweep.acc_elem))
    with counted_loop(b, begin, end, "o") as o:
        shape = sweep.kept_shape(kernel)
        kept_index = kernel.delinearize(o, shape) if shape else []
        b.store(identity(sweep.kind, sweep.acc_elem, kernel.scalar), acc_slot)
        elemental = Elemental(kernel, leaves)
        _accumulate(kernel, elemental, sweep, kept_index, const_i64(0), kernel.dim(sweep.reduced_count), acc_slot)
        kernel.scalar.store(b.load(acc_slot), kernel.element_pointer(out, o), sweep.out_type.elem)
    program.call_kernel(kernel, params, index)


def _emit_split(program, index: int, op: ir.Operation, leaves: dict, sweep: _Sweep) -> None:
    """Partials of SPLIT chunks of the reduced space, then their combination."""
    from tfc.passes.buffer_assign import value_bytes

    partial_type = ir.TensorType(sweep.acc_elem, [SPLIT, sweep.outputs])
    scratch = program.scratch_buffer(value_bytes(partial_type))
    chunk = _chunk(sweep.reduced_count)

    kernel, params = program.new_kernel(op, [op.result] + list(op.operands), extra=(scratch,))
    b = kernel.b
    partials = _typed(kernel, kernel.param(scratch), sweep.acc_elem)
    begin, end = kernel.parallel_range(dim_mul(SPLIT, sweep.outputs), chunk)
    acc_slot = kernel.pro.alloca(_register(sweep.acc_elem))
    outputs = kernel.dim(sweep.outputs)
    total = kernel.dim(sweep.reduced_count)
    chunk_size = kernel.dim(chunk)
    with counted_loop(b, begin, end, "item") as item:
        part, o = b.sdiv(item, outputs), b.srem(item, outputs)
        shape = sweep.kept_shape(kernel)
        kept_index = kernel.delinearize(o, shape) if shape else []
        start = b.mul(part, chunk_size)
        stop = b.add(start, chunk_size)
        stop = b.select(b.icmp_signed(">", stop, total), total, stop)
        b.store(identity(sweep.kind, sweep.acc_elem, kernel.scalar), acc_slot)
        _accumulate(kernel, Elemental(kernel, leaves), sweep, kept_index, start, stop, acc_slot)
        kernel.scalar.store(b.load(acc_slot), kernel.element_pointer(partials, item), sweep.acc_elem)
    program.call_kernel(kernel, params, index)
    _emit_combination(program, index, op, sweep, scratch)


def _emit_combination(program, index: int, op: ir.Operation, sweep: _Sweep, scratch) -> None:
    """One thread per output combines its ``SPLIT`` partials in chunk order."""
    kernel, params = program.new_kernel(op, [op.result], extra=(scratch,))
    b = kernel.b
    partials = _typed(kernel, kernel.param(scratch), sweep.acc_elem)
    out = kernel.pointer(op.result)
    begin, end = kernel.parallel_range(sweep.outputs, SPLIT)
    acc_slot = kernel.pro.alloca(_register(sweep.acc_elem))
    outputs = kernel.dim(sweep.outputs)
    with counted_loop(b, begin, end, "o") as o:
        b.store(identity(sweep.kind, sweep.acc_elem, kernel.scalar), acc_slot)
        with counted_loop(b, 0, SPLIT, "part") as part:
            value = kernel.scalar.load(kernel.element_pointer(partials, b.add(b.mul(part, outputs), o)),
                                       sweep.acc_elem)
            b.store(combine(kernel, sweep.kind, sweep.acc_elem, b.load(acc_slot), value), acc_slot)
        kernel.scalar.store(b.load(acc_slot), kernel.element_pointer(out, o), sweep.out_type.elem)
    program.call_kernel(kernel, params, index)


def _chunk(count):
    """Reduced elements per chunk: ceil(count / SPLIT)."""
    if isinstance(count, int):
        return max(1, -(-count // SPLIT))
    return dim_ceildiv(count, SPLIT)


def _register(elem: ir.ElemType):
    return register_type(elem)


def _typed(kernel, raw, elem: ir.ElemType):
    return kernel.pro.bitcast(raw, storage_type(elem).as_pointer())


def _innermost_reduced(sweep: _Sweep) -> bool:
    """Is the operand's innermost dim reduced? Then a thread per output (or per chunk)
    would read its elements alone, a stride apart from its neighbours: uncoalesced."""
    return sweep.operand.type.rank - 1 in sweep.reduced


def _by_rows(sweep: _Sweep) -> bool:
    """Reduce each output with a block of threads (``_emit_rows``)? When the innermost dim
    is reduced and there are enough outputs to fill the GPU with blocks."""
    if not _innermost_reduced(sweep):
        return False
    return not isinstance(sweep.outputs, int) or sweep.outputs >= ROW_BLOCKS_FROM


def _emit_rows(program, index: int, op: ir.Operation, leaves: dict, sweep: _Sweep) -> None:
    """One block per output element: its threads sweep the reduced positions ``tid, tid +
    threads, ...`` (neighbouring threads on neighbouring elements), then combine their
    partials with warp shuffles and shared memory (block.py's ``block_reduce``). The
    combination order is fixed by the block size, so results do not depend on the grid."""
    threads = block.threads_for(sweep.reduced_count)

    def describe(cooperative: block.Block) -> None:
        kernel = cooperative.k
        b = kernel.b
        out = kernel.pointer(op.result)
        shape = sweep.kept_shape(kernel)
        kept_index = kernel.delinearize(cooperative.item, shape) if shape else []
        acc = cooperative.private(_register(sweep.acc_elem))
        with cooperative.phase() as tid:
            _accumulate_strided(cooperative, Elemental(kernel, leaves), sweep, kept_index, tid, acc.at(tid))
        cooperative.block_reduce(acc, sweep.kind, sweep.acc_elem)
        with cooperative.first_thread() as tid:
            kernel.scalar.store(b.load(acc.at(tid)), kernel.element_pointer(out, cooperative.item),
                                sweep.out_type.elem)

    block.emit(program, op, [op.result] + list(op.operands), index, threads, sweep.outputs, sweep.reduced_count,
               describe)


def _accumulate_strided(cooperative, elemental: Elemental, sweep: _Sweep, kept_index: list, first, slot,
                        stop=None) -> None:
    """slot := the combination of the operand at reduced positions first, first + threads,
    ... below ``stop`` (default: the reduced count)."""
    kernel = cooperative.k
    b = kernel.b
    shape = sweep.reduced_shape(kernel)
    b.store(identity(sweep.kind, sweep.acc_elem, kernel.scalar), slot)
    stop = kernel.dim(sweep.reduced_count) if stop is None else stop
    with cooperative.strided(first, stop) as r:
        reduced_index = kernel.delinearize(r, shape) if shape else []
        value = elemental.gen(sweep.operand, sweep.full_index(kernel, kept_index, reduced_index))
        b.store(combine(kernel, sweep.kind, sweep.acc_elem, b.load(slot), value), slot)


def _emit_split_rows(program, index: int, op: ir.Operation, leaves: dict, sweep: _Sweep) -> None:
    """``_emit_split`` with a block per chunk (a loss, a full sum: the innermost dim is
    reduced): block ``part * outputs + o`` reduces chunk ``part`` of output ``o``, its
    threads reading the chunk side by side, into the partials; then the combination."""
    from tfc.passes.buffer_assign import value_bytes

    scratch = program.scratch_buffer(value_bytes(ir.TensorType(sweep.acc_elem, [SPLIT, sweep.outputs])))
    chunk = _chunk(sweep.reduced_count)
    threads = block.threads_for(chunk)

    def describe(cooperative: block.Block) -> None:
        kernel = cooperative.k
        b = kernel.b
        partials = _typed(kernel, kernel.param(scratch), sweep.acc_elem)
        item = cooperative.item
        outputs = kernel.dim(sweep.outputs)
        part, o = b.sdiv(item, outputs), b.srem(item, outputs)
        shape = sweep.kept_shape(kernel)
        kept_index = kernel.delinearize(o, shape) if shape else []
        start = b.mul(part, kernel.dim(chunk))
        stop = b.add(start, kernel.dim(chunk))
        total = kernel.dim(sweep.reduced_count)
        stop = b.select(b.icmp_signed(">", stop, total), total, stop)
        acc = cooperative.private(_register(sweep.acc_elem))
        with cooperative.phase() as tid:
            _accumulate_strided(cooperative, Elemental(kernel, leaves), sweep, kept_index, b.add(start, tid),
                                acc.at(tid), stop)
        cooperative.block_reduce(acc, sweep.kind, sweep.acc_elem)
        with cooperative.first_thread() as tid:
            kernel.scalar.store(b.load(acc.at(tid)), kernel.element_pointer(partials, item), sweep.acc_elem)

    block.emit(program, op, [op.result] + list(op.operands), index, threads, dim_mul(SPLIT, sweep.outputs), chunk,
               describe, extra=(scratch,))
    _emit_combination(program, index, op, sweep, scratch)
