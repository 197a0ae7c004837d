"""Shared-memory tiled GEMM: a dot (alone or with its epilogue fused) computed one output
tile per block of threads, a cooperative kernel (block.py).

The item kernel of contraction.py (``_TiledDot``) has each thread load its operands from
global memory for a 4 x 4 register tile: every element of A and B is read by many
threads, through the caches. Here a block of 256 threads (a 16 x 16 grid, ``ty``, ``tx``)
owns a ``BM x BN`` tile of the output and walks the contraction in steps of ``BK``:

1. load phase: the block copies the ``BM x BK`` slice of A and the ``BK x BN`` slice of B
   into shared memory (4 elements per thread each, neighbouring threads on neighbouring
   addresses of whichever operand dim is contiguous; positions past M, N or K load 0);
2. compute phase: each thread multiplies-adds its ``TM x TN`` register tile from shared
   memory, rows ``ty + 16 i`` and columns ``tx + 16 j``: a warp reads 16 consecutive
   columns (no bank conflicts) and broadcasts 2 rows;
3. after the last step, each thread applies the epilogue to its outputs and stores them
   (neighbouring threads on neighbouring columns: coalesced).

The two phases alternate in a uniform loop, each starting with a barrier. Each output
sums its products in increasing k with one fused multiply-add per step, as the item
kernel and the CPU do (the zero padding adds ``fma(0, 0, acc) == acc``), so results do
not depend on the tile shape or the grid. Tiles: 128 x 128 x 8 with 8 x 8 per thread,
or 64 x 64 x 16 with 4 x 4 per thread when M or N is under 128; shared memory rows are
padded by 4 elements.

Applies to f32 and f64 dots with one contracting dim on each side and M, N of at least
64 (or unknown while compiling); any batch and free dims. Others keep the item kernel.
"""
from __future__ import annotations

from tfc import ir
from tfc.ir.dims import dim_ceildiv, dim_mul, dims_product

from . import block
from ..llvm_util import const_i64, counted_loop, if_then, storage_type
from .contraction import _TiledDot

THREADS = 256
GRID = 16  # threads per row and per column of the block's 16 x 16 grid
PAD = 4  # elements after each shared-memory row
LARGE = (128, 128, 8, 8, 8)  # BM, BN, BK, TM, TN
SMALL = (64, 64, 16, 4, 4)
MIN_EXTENT = 64


def applies(core: ir.Operation) -> bool:
    if core.name != "dot" or core.result.type.elem not in (ir.ElemType.F32, ir.ElemType.F64):
        return False
    lhs, rhs = core.operands
    (lc, rc) = core.attrs["contract"]
    if len(lc) != 1 or len(rc) != 1:
        return False
    sizes = _free_sizes(core)
    return all(not isinstance(s, int) or s >= MIN_EXTENT for s in sizes)


def _free_sizes(core: ir.Operation) -> tuple:
    lhs, rhs = core.operands
    (lb, rb) = core.attrs.get("batch") or [[], []]
    (lc, rc) = core.attrs["contract"]
    m = dims_product([lhs.type.shape[d] for d in range(lhs.type.rank) if d not in lb and d not in lc])
    n = dims_product([rhs.type.shape[d] for d in range(rhs.type.rank) if d not in rb and d not in rc])
    return m, n


def tiles(core: ir.Operation) -> tuple:
    """(BM, BN, BK, TM, TN) for ``core``."""
    m, n = _free_sizes(core)
    small = any(isinstance(s, int) and s < LARGE[0] for s in (m, n))
    return SMALL if small else LARGE


def emit(program, index: int, op: ir.Operation, core: ir.Operation, root, leaves: dict) -> None:
    shape = tiles(core)
    BM, BN = shape[0], shape[1]
    m, n = _free_sizes(core)
    lhs, rhs = core.operands
    (lb, _) = core.attrs.get("batch") or [[], []]
    batch = dims_product([lhs.type.shape[d] for d in lb])
    (lc, _) = core.attrs["contract"]
    items = dims_product([batch, dim_ceildiv(m, BM), dim_ceildiv(n, BN)])
    work = dim_mul(BM * BN, lhs.type.shape[lc[0]])

    def describe(cooperative: block.Block) -> None:
        kernel = cooperative.k
        _SharedTiledDot(kernel, core, root, leaves, kernel.pointer(op.result), cooperative, shape).emit()

    block.emit(program, op, [op.result] + list(op.operands), index, THREADS, items, work, describe)


class _SharedTiledDot(_TiledDot):
    """``_TiledDot``'s operands, sizes and epilogue, computed a block tile at a time."""

    def __init__(self, kernel, core, root, leaves, out, cooperative: block.Block, shape: tuple):
        super().__init__(kernel, core, root, leaves, out)
        self.block = cooperative
        self.BM, self.BN, self.BK, self.TM, self.TN = shape
        # Which operand dim is contiguous decides how the threads spread over a slice.
        self.lhs_k_inner = self.lc[0] == core.operands[0].type.rank - 1
        self.rhs_k_inner = self.rc[0] == core.operands[1].type.rank - 1

    def emit(self) -> None:
        k, b, cooperative = self.k, self.k.b, self.block
        BM, BN, BK, TM, TN = self.BM, self.BN, self.BK, self.TM, self.TN
        s = self.sizes
        M, N, K = k.dim(s["M"]), k.dim(s["N"]), k.dim(s["K"])
        MT = k.pro.sdiv(k.pro.add(M, const_i64(BM - 1)), const_i64(BM))
        NT = k.pro.sdiv(k.pro.add(N, const_i64(BN - 1)), const_i64(BN))
        KT = k.pro.sdiv(k.pro.add(K, const_i64(BK - 1)), const_i64(BK))
        element = storage_type(self.elem)
        a_tile = cooperative.shared(element, BK * (BM + PAD))
        b_tile = cooperative.shared(element, BK * (BN + PAD))
        acc = cooperative.private(element, TM * TN)

        item = cooperative.item
        nt = b.srem(item, NT)
        rest = b.sdiv(item, NT)
        mt, batch = b.srem(rest, MT), b.sdiv(rest, MT)
        m0, n0 = b.mul(mt, const_i64(BM)), b.mul(nt, const_i64(BN))
        lbase = self.offset(batch, self.lshape, self.lstride, self.lb)
        rbase = self.offset(batch, self.rshape, self.rstride, self.rb)
        zero = k.scalar.constant(0, self.elem)

        with cooperative.phase() as tid:
            for slot in range(TM * TN):
                b.store(zero, acc.at(tid, slot))
        with cooperative.uniform_loop(0, KT, "kt") as kt:
            k0 = b.mul(kt, const_i64(BK))
            with cooperative.phase() as tid:
                self.load_slices(tid, m0, n0, k0, M, N, K, lbase, rbase, a_tile, b_tile)
            with cooperative.phase() as tid:
                ty, tx = b.udiv(tid, const_i64(GRID)), b.urem(tid, const_i64(GRID))
                with counted_loop(b, 0, BK, "kk") as kk:
                    a_row = b.mul(kk, const_i64(BM + PAD))
                    b_row = b.mul(kk, const_i64(BN + PAD))
                    xs = [b.load(b.gep(a_tile, [b.add(a_row, b.add(ty, const_i64(GRID * i)))])) for i in range(TM)]
                    ys = [b.load(b.gep(b_tile, [b.add(b_row, b.add(tx, const_i64(GRID * j)))])) for j in range(TN)]
                    for i, x in enumerate(xs):
                        for j, y in enumerate(ys):
                            self.multiply_add(acc.at(tid, i * TN + j), x, y)
        with cooperative.phase() as tid:
            self.store_tile(tid, acc, m0, n0, batch, M, N)

    def load_slices(self, tid, m0, n0, k0, M, N, K, lbase, rbase, a_tile, b_tile) -> None:
        """Copy A[m0:m0+BM, k0:k0+BK] and B[k0:k0+BK, n0:n0+BN] into the k-major tiles."""
        b = self.k.b
        BM, BN, BK = self.BM, self.BN, self.BK
        k_stride_a, k_stride_b = self.lstride[self.lc[0]], self.rstride[self.rc[0]]
        for part in range(BM * BK // THREADS):
            e = b.add(tid, const_i64(part * THREADS))
            r, c = _coordinates(b, e, BK, BM, self.lhs_k_inner)
            m, kk = b.add(m0, r), b.add(k0, c)
            offset = b.add(lbase, b.add(self.offset(self.clamp(m, M), self.lshape, self.lstride, self.lfree),
                                        b.mul(self.clamp(kk, K), k_stride_a)))
            self.store_loaded(self.lhs, offset, _inside(b, m, M, kk, K),
                              b.gep(a_tile, [b.add(b.mul(c, const_i64(BM + PAD)), r)]))
        for part in range(BN * BK // THREADS):
            e = b.add(tid, const_i64(part * THREADS))
            n, c = _coordinates(b, e, BK, BN, self.rhs_k_inner)
            column, kk = b.add(n0, n), b.add(k0, c)
            offset = b.add(rbase, b.add(self.offset(self.clamp(column, N), self.rshape, self.rstride, self.rfree),
                                        b.mul(self.clamp(kk, K), k_stride_b)))
            self.store_loaded(self.rhs, offset, _inside(b, column, N, kk, K),
                              b.gep(b_tile, [b.add(b.mul(c, const_i64(BN + PAD)), n)]))

    def store_loaded(self, operand, offset, inside, destination) -> None:
        b = self.k.b
        value = self.load(operand, offset)
        b.store(b.select(inside, value, self.k.scalar.constant(0, self.elem)), destination)

    def store_tile(self, tid, acc, m0, n0, batch, M, N) -> None:
        b = self.k.b
        ty, tx = b.udiv(tid, const_i64(GRID)), b.urem(tid, const_i64(GRID))
        bidx = self.split(batch, self.lshape, self.lb)
        orow = b.mul(batch, M)
        for i in range(self.TM):
            m = b.add(m0, b.add(ty, const_i64(GRID * i)))
            with if_then(b, b.icmp_signed("<", m, M), "row"):
                line = b.mul(b.add(orow, m), N)
                for j in range(self.TN):
                    n = b.add(n0, b.add(tx, const_i64(GRID * j)))
                    with if_then(b, b.icmp_signed("<", n, N), "col"):
                        multi = bidx + self.split(m, self.lshape, self.lfree) + self.split(n, self.rshape, self.rfree)
                        self.store(acc.at(tid, i * self.TN + j), multi, b.add(line, n))


def _coordinates(b, e, BK: int, extent: int, k_inner: bool) -> tuple:
    """(position along the free dim, position along k) of a slice's element ``e``: with k
    contiguous in memory neighbouring ``e`` walk k, else the free dim."""
    if k_inner:
        return b.udiv(e, const_i64(BK)), b.urem(e, const_i64(BK))
    return b.urem(e, const_i64(extent)), b.udiv(e, const_i64(extent))


def _inside(b, position, extent, kk, K):
    return b.and_(b.icmp_signed("<", position, extent), b.icmp_signed("<", kk, K))
