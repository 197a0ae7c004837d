"""Row fusions on the GPU (softmax, layer normalisation): one block of threads per row.

The CPU's row kernel (kernels/row.py) gives a row to a thread and walks it a few times;
on the GPU a thread per row reads its row alone, a row's length apart from its
neighbours (uncoalesced), and a few thousand rows do not fill the device. Here a row is a
block's work item (a cooperative kernel, block.py):

1. for each reduction of the fusion, in dependency order: every thread combines the
   operand at positions ``tid, tid + threads, ...`` of the row (neighbouring threads on
   neighbouring elements), computing it elementally with the results of the earlier
   reductions; then ``block_reduce`` leaves the row's result in every thread;
2. every thread computes and stores the root at its positions of the row.

Memory traffic is as on the CPU: the row is read once per reduction and once for the
root (from L2 after the first pass for rows that fit), and written once. f16 accumulates
in f32 and is rounded once, as the evaluator does. The combination order depends only
on the block size (fixed per kernel), not on the grid.

A thread's share of a row of static length (at most UNROLLED_SHARE elements: a 1024-wide
layer norm gives each of 256 threads 4) is written out element by element rather than
as a loop: the GPU issues in order, so in a loop each load waits for the previous
element's combination, while written out the loads go out together and the pass costs
about one memory latency. The elements combine in the loop's order (a position past the
row's end, in the last round, loads a clamped one and its combination is dropped), so the
results are the loop's bits.
"""
from __future__ import annotations

from tfc import ir
from tfc.ir.dims import dim_mul, dims_product

from . import block
from ..kernel import Elemental, Index
from ..kernels.reduction import combine, identity
from ..kernels.row import row_fusion_parts
from ..llvm_util import const_i64, if_then, register_type

UNROLLED_SHARE = 16  # elements of a row per thread up to which a pass is written out, not looped


def emit(program, index: int, op: ir.Operation) -> None:
    root, leaves, reductions, outer_dims, inner_dims = row_fusion_parts(op)
    row_count, row_size = dims_product(outer_dims), dims_product(inner_dims)
    threads = block.threads_for(row_size)

    def describe(cooperative: block.Block) -> None:
        _Row(cooperative, op, root, leaves, reductions, len(outer_dims), row_size).emit()

    block.emit(program, op, [op.result] + list(op.operands), index, threads, row_count,
               dim_mul(row_size, len(reductions) + 1), describe)


class _Row:
    def __init__(self, cooperative: block.Block, op, root, leaves: dict, reductions: list, outer_rank: int,
                 row_size):
        self.block = cooperative
        self.k = cooperative.k
        self.op = op
        self.root = root
        self.leaves = leaves
        self.reductions = reductions
        out_type = op.result.type
        self.shape = self.k.shape(out_type)
        self.outer_shape, self.inner_shape = self.shape[:outer_rank], self.shape[outer_rank:]
        self.row_length = self.k.numel(out_type.with_shape(out_type.shape[outer_rank:]))
        self.results: dict = {}  # reduce result -> (its per-thread slot, its element type)
        threads = cooperative.threads
        share = -(-row_size // threads) if isinstance(row_size, int) else None
        self.static_length = row_size if share is not None and 0 < share <= UNROLLED_SHARE else None

    def emit(self) -> None:
        k, b = self.k, self.k.b
        row = self.block.item
        self.outer = k.delinearize(row, self.outer_shape) if self.outer_shape else []
        self.base = b.mul(row, self.row_length)
        for reduce_op in self.reductions:
            self.reduce(reduce_op)
        out = k.pointer(self.op.result)
        with self.block.phase() as tid:
            if self.static_length is None:
                elemental = Elemental(k, self.leaves, self.overrides(tid))
                with self.block.strided(tid, self.row_length, "j") as j:
                    self.store_root(elemental, j, out)
                return
            whole, tail = self.rounds(tid)
            elemental = Elemental(k, self.leaves, self.overrides(tid))
            for j in whole:
                self.store_root(elemental, j, out)
            if tail is not None:
                with if_then(b, b.icmp_signed("<", tail, const_i64(self.static_length)), "tail"):
                    self.store_root(Elemental(k, self.leaves, self.overrides(tid)), tail, out)

    def store_root(self, elemental: Elemental, j, out) -> None:
        k = self.k
        position = self.position(j, self.shape)
        value = elemental.gen(self.root, position)
        k.scalar.store(value, k.element_pointer(out, position.linear()), self.op.result.type.elem)

    def rounds(self, tid) -> tuple:
        """A thread's positions in a row of static length: (those inside the row in every
        thread, the last round's position when the length is not a multiple of the
        block's threads, else None)."""
        b, threads, length = self.k.b, self.block.threads, self.static_length
        positions = [b.add(tid, const_i64(i * threads)) for i in range(-(-length // threads))]
        if length % threads:
            return positions[:-1], positions[-1]
        return positions, None

    def reduce(self, reduce_op) -> None:
        k, b = self.k, self.k.b
        kind = reduce_op.attrs["op"]
        operand = reduce_op.operands[0]
        acc_elem = ir.ElemType.F32 if operand.type.elem is ir.ElemType.F16 else operand.type.elem
        slot = self.block.private(register_type(acc_elem))
        shape = k.shape(operand.type)
        with self.block.phase() as tid:
            start = identity(kind, acc_elem, k.scalar)
            elemental = Elemental(k, self.leaves, self.overrides(tid))
            if self.static_length is None:
                b.store(start, slot.at(tid))
                with self.block.strided(tid, self.row_length, "rj") as j:
                    value = elemental.gen(operand, self.position(j, shape))
                    b.store(combine(k, kind, acc_elem, b.load(slot.at(tid)), value), slot.at(tid))
            else:
                whole, tail = self.rounds(tid)
                values = [elemental.gen(operand, self.position(j, shape)) for j in whole]
                if tail is not None:
                    inside = b.icmp_signed("<", tail, const_i64(self.static_length))
                    clamped = b.select(inside, tail, const_i64(self.static_length - 1))
                    last = elemental.gen(operand, self.position(clamped, shape))
                total = start
                for value in values:
                    total = combine(k, kind, acc_elem, total, value)
                if tail is not None:
                    total = b.select(inside, combine(k, kind, acc_elem, total, last), total)
                b.store(total, slot.at(tid))
        self.block.block_reduce(slot, kind, acc_elem)
        self.results[reduce_op.result] = (slot, operand.type.elem)

    def position(self, j, shape: list) -> Index:
        k = self.k
        multi = self.outer + (k.delinearize(j, self.inner_shape) if self.inner_shape else [])
        return Index(k, shape, multi=multi, linear=k.b.add(self.base, j))

    def overrides(self, tid) -> dict:
        """The finished reductions' values for thread ``tid`` (f16 results rounded once)."""
        k = self.k

        def reader(slot, elem):
            def read(index):
                value = k.b.load(slot.at(tid))
                return k.scalar._round_f16(value, elem) if elem is ir.ElemType.F16 else value

            return read

        return {value: reader(slot, elem) for value, (slot, elem) in self.results.items()}
