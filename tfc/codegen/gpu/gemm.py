"""Shared-memory tiled GEMM: a dot, or a conv as an implicit GEMM (alone or with its
epilogue fused), computed one output tile per block of threads, a cooperative kernel
(block.py).

The item kernels of contraction.py have each thread load its operands from global memory
for a small register tile: every element of A and B is read by many threads, through
the caches. Here a block of 256 threads (a 16 x 16 grid, ``ty``, ``tx``) owns a
``BM x BN`` tile of the output and walks the contraction in steps of ``BK``:

1. load phase: the block copies the ``BM x BK`` slice of A and the ``BK x BN`` slice of B
   into shared memory (neighbouring threads on neighbouring addresses of whichever
   operand dim is contiguous; positions past M, N or K, and a conv's padding, load 0);
2. compute phase: each thread multiplies-adds its ``TM x TN`` register tile from shared
   memory, rows ``ty + 16 i`` and columns ``tx + 16 j``: a warp reads 16 consecutive
   columns (no bank conflicts) and broadcasts 2 rows;
3. after the last step, each thread applies the epilogue to its outputs and stores them
   (neighbouring threads on neighbouring columns: coalesced).

The two phases alternate in a uniform loop, each starting with a barrier. Each output
sums its products in increasing k with one fused multiply-add per step, as the item
kernels do (the zero padding adds ``fma(0, w, acc) == acc`` for finite w), so results do
not depend on the tile shape or the grid. Tiles (BM x BN x BK, TM x TN per thread):
128 x 128 x 8 (8 x 8); 128 x 64 x 8 (8 x 4) when N is under 128; 64 x 64 x 16 (4 x 4)
when M is under 128; 128 x 32 x 8 (8 x 2) when N is under 64. Shared memory rows are
padded by 4 elements.

A product with few output tiles and a long contraction (a weight gradient summed over the
batch, a conv's filter gradient over every pixel) would leave most of the GPU idle, so its
k-tiles are split (``split_count``): each of ``parts`` blocks per tile sums a contiguous
range of them into a partial tile (raw, in a scratch buffer of the run), and a second
launch, an item per output element, adds the parts in order and applies the epilogue. The
order is fixed by the part count, so results still do not depend on the grid (they differ
in rounding from the unsplit order).

A conv (one feature group; any strides, padding, dilations) is the GEMM of M = output
pixels, N = output channels and K = window taps x input channels: A[m, kk] is the input
under pixel m's window (computed from the indices while loading: no im2col buffer), and
the filter is already the row-major ``[K, N]`` matrix B.

Applies to f16, f32 and f64 dots with one contracting dim on each side and such convs,
with M >= 64 and N >= 32 (or unknown while compiling), or narrower with a long
contraction (``_pays``): one thread per output would walk it alone (a 10-output dense
layer, a one-channel conv's filter gradient). f16 operands are widened to f32 as
they are loaded into shared memory; the sums are f32 (the partials of a split too) and
round once to f16 when stored, as the item kernels and the evaluator do. Others keep the
item kernels.
"""
from __future__ import annotations

from llvmlite import ir as ll

from tfc import ir
from tfc.ir.dims import dim_add, dim_ceildiv, dim_floordiv, dim_mul, dims_product

from . import block
from ..llvm_util import const_i64, counted_loop, if_then, register_type
from .contraction import _Contraction, _DirectConv, _TiledDot

THREADS = 256
GRID = 16  # threads per row and per column of the block's 16 x 16 grid
PAD = 4  # elements after each shared-memory row
LARGE = (128, 128, 8, 8, 8)  # BM, BN, BK, TM, TN
SMALL = (64, 64, 16, 4, 4)
NARROW = (128, 32, 8, 8, 2)  # 32 to 63 columns (a layer of 32 channels)
MEDIUM = (128, 64, 8, 8, 4)  # 64 to 127 columns over at least 128 rows (a layer of 64 channels)
MIN_ROWS, MIN_COLUMNS = 64, 32
TARGET_BLOCKS = 256  # blocks that fill a large GPU (132 SMs x 2 resident blocks of 256 threads)
SHARED_VECTOR_BYTES = 16  # a thread's consecutive rows / columns read from shared memory at once
MAX_SPLIT = 128  # parts of a split contraction
MIN_NARROW_DEPTH = 128  # contraction length from which a product under MIN_ROWS x MIN_COLUMNS may take tiles
MIN_NARROW_WORK = 1 << 20  # multiply-adds from which it does, when all its sizes are known
MIN_PART_TILES = 8  # k-tiles of a part at least (when K is known)


def applies(core: ir.Operation) -> bool:
    if core.result.type.elem not in (ir.ElemType.F16, ir.ElemType.F32, ir.ElemType.F64):
        return False
    if core.name == "conv":
        return core.attrs.get("groups", 1) == 1 and _pays(_conv_sizes(core))
    if core.name != "dot":
        return False
    (lc, rc) = core.attrs["contract"]
    return len(lc) == 1 and len(rc) == 1 and _pays(_dot_sizes(core))


def _wide(sizes) -> bool:
    """At least MIN_ROWS x MIN_COLUMNS outputs (or unknown while compiling)."""
    m, n = sizes
    return all(not isinstance(s, int) or s >= least for s, least in ((m, MIN_ROWS), (n, MIN_COLUMNS)))


def _pays(sizes) -> bool:
    """Tiles pay for a product at least MIN_ROWS x MIN_COLUMNS, and for a narrower one with
    a long contraction (a dense layer of 10 outputs, the filter gradient of a conv on one
    input channel: a thread per output would walk it alone): an unknown one (over the
    batch), or one of MIN_NARROW_DEPTH or more with a batch of rows or MIN_NARROW_WORK
    multiply-adds."""
    m, n, k, batch = sizes
    if _wide((m, n)):
        return True
    if not isinstance(k, int):
        return True
    if k < MIN_NARROW_DEPTH:
        return False
    if not all(isinstance(s, int) for s in (m, n, batch)):
        return True
    return m * n * k * batch >= MIN_NARROW_WORK


def _dot_sizes(core: ir.Operation) -> tuple:
    """(M, N, K, batch) of a dot: its lhs and rhs free dims, contraction and batch sizes."""
    lhs, rhs = core.operands
    (lb, rb) = core.attrs.get("batch") or [[], []]
    (lc, rc) = core.attrs["contract"]
    m = dims_product([lhs.type.shape[d] for d in range(lhs.type.rank) if d not in lb and d not in lc])
    n = dims_product([rhs.type.shape[d] for d in range(rhs.type.rank) if d not in rb and d not in rc])
    return m, n, lhs.type.shape[lc[0]], dims_product([lhs.type.shape[d] for d in lb])


def _conv_sizes(core: ir.Operation) -> tuple:
    """(M, N, K, 1) of a conv as an implicit GEMM: output pixels, output channels, and
    window taps times input channels."""
    out_shape, filter_shape = core.result.type.shape, core.operands[1].type.shape
    return dims_product(out_shape[:-1]), out_shape[-1], dims_product(filter_shape[:-1]), 1


def tiles(core: ir.Operation) -> tuple:
    """(BM, BN, BK, TM, TN) for ``core``."""
    m, n = (_conv_sizes(core) if core.name == "conv" else _dot_sizes(core))[:2]
    if isinstance(m, int) and m < SMALL[0]:
        return SMALL
    if isinstance(n, int) and n < SMALL[1]:
        return NARROW
    if isinstance(m, int) and m < LARGE[0]:
        return SMALL
    if isinstance(n, int) and n < LARGE[1]:
        return MEDIUM
    return LARGE


def split_count(core: ir.Operation):
    """Parts (a dim; 1: none) the contraction of ``core`` is split into. A product with few
    output tiles and a long contraction (a weight gradient: 784 x 512 summed over the batch;
    a conv's filter gradient, over every pixel of the batch) would leave most of the GPU
    idle with a block per tile, so its k-tiles are shared out between up to MAX_SPLIT
    blocks per tile, towards TARGET_BLOCKS blocks, each part at least MIN_PART_TILES k-tiles
    deep. For a narrow product (under MIN_ROWS x MIN_COLUMNS) with a known contraction and
    a tile count known only at run time (an unknown batch of rows: a 10-output dense
    layer), the parts are ``(T + 2c) // (2c + T // limit)``
    for c tiles: about the limit for one tile, fewer as c grows, 1 from c >= T / 2."""
    BM, BN, BK = tiles(core)[:3]
    m, n, k, batch = _conv_sizes(core) if core.name == "conv" else _dot_sizes(core)
    count = dims_product([batch, dim_ceildiv(m, BM), dim_ceildiv(n, BN)])
    limit = MAX_SPLIT if not isinstance(k, int) else min(MAX_SPLIT, k // (BK * MIN_PART_TILES))
    if limit <= 1:
        return 1
    if isinstance(count, int):
        return 1 if count >= TARGET_BLOCKS else min(limit, -(-TARGET_BLOCKS // count))
    if not isinstance(k, int) or _wide((m, n)):
        return 1
    twice = dim_mul(2, count)
    return dim_floordiv(dim_add(TARGET_BLOCKS, twice), dim_add(twice, TARGET_BLOCKS // limit))


def emit(program, index: int, op: ir.Operation, core: ir.Operation, root, leaves: dict) -> None:
    shape = tiles(core)
    BM, BN = shape[0], shape[1]
    m, n, k, batch = _conv_sizes(core) if core.name == "conv" else _dot_sizes(core)
    parts = split_count(core)
    items = dims_product([batch, dim_ceildiv(m, BM), dim_ceildiv(n, BN), parts])
    kind = _SharedTiledConv if core.name == "conv" else _SharedTiledDot
    values = [op.result] + list(op.operands)
    partials = None
    if parts != 1:
        from tfc.passes.buffer_assign import value_bytes

        wide = ir.ElemType.F32 if core.result.type.elem is ir.ElemType.F16 else core.result.type.elem
        partials = program.scratch_buffer(dim_mul(value_bytes(core.result.type.with_elem(wide)), parts))

    def describe(cooperative: block.Block) -> None:
        kernel = cooperative.k
        tiled = kind(kernel, core, root, leaves, kernel.pointer(op.result), cooperative, shape)
        tiled.split_contraction(parts, None if partials is None else kernel.param(partials))
        tiled.emit()

    extra = () if partials is None else (partials,)
    block.emit(program, op, values, index, THREADS, items, dim_mul(BM * BN, k), describe, extra=extra)
    if partials is not None:
        kernel, params = program.new_kernel(op, values, extra=extra)
        _PartialSums(kernel, core, root, leaves, kernel.pointer(op.result), parts, kernel.param(partials)).emit()
        program.call_kernel(kernel, params, index)


class _BlockTiles:
    """The block-tile GEMM over an A (``M x K``) and a B (``K x N``) that subclasses
    address: ``matrix_sizes()`` (M, N, K as i64), ``start(batch)`` (item-level setup),
    ``lhs_address(m, kk)`` / ``rhs_address(n, kk)`` (the element's offset and a flag, or
    None, saying whether it lies in the operand: called with positions clamped into
    range, so the offset of a valid element is safe to load), ``output(m, n)`` (the
    epilogue's multi-index and the linear offset). Mixed into the item kernels' classes,
    whose ``load``, ``multiply_add`` and ``store`` (epilogue) it uses."""

    def setup_tiles(self, cooperative: block.Block, shape: tuple, lhs_k_inner: bool, rhs_k_inner: bool) -> None:
        self.block = cooperative
        self.BM, self.BN, self.BK, self.TM, self.TN = shape
        # Which operand dim is contiguous decides how the threads spread over a slice.
        self.lhs_k_inner, self.rhs_k_inner = lhs_k_inner, rhs_k_inner
        self.parts, self.partials = 1, None

    def split_contraction(self, parts, partials) -> None:
        """Compute part ``item % parts`` of the k-tiles into ``partials`` (raw i8* scratch:
        ``[parts, outputs]``), no epilogue, instead of whole tiles (``parts == 1``)."""
        self.parts = parts
        if partials is not None:
            self.partials = self.k.pro.bitcast(partials, register_type(self.elem).as_pointer())

    def emit(self) -> None:
        k, b, cooperative = self.k, self.k.b, self.block
        BM, BN, BK, TM, TN = self.BM, self.BN, self.BK, self.TM, self.TN
        M, N, K = self.matrix_sizes()
        MT = k.pro.sdiv(k.pro.add(M, const_i64(BM - 1)), const_i64(BM))
        NT = k.pro.sdiv(k.pro.add(N, const_i64(BN - 1)), const_i64(BN))
        KT = k.pro.sdiv(k.pro.add(K, const_i64(BK - 1)), const_i64(BK))
        element = register_type(self.elem)  # f16 widened to f32 when loaded
        a_tile = cooperative.shared(element, BK * (BM + PAD))
        b_tile = cooperative.shared(element, BK * (BN + PAD))
        acc = cooperative.private(element, TM * TN)

        item = cooperative.item
        parts = k.dim(self.parts)
        part, item = b.srem(item, parts), b.sdiv(item, parts)
        nt = b.srem(item, NT)
        rest = b.sdiv(item, NT)
        mt, batch = b.srem(rest, MT), b.sdiv(rest, MT)
        m0, n0 = b.mul(mt, const_i64(BM)), b.mul(nt, const_i64(BN))
        self.start(batch)
        zero = k.scalar.constant(0, self.elem)
        depth = k.pro.sdiv(k.pro.add(KT, k.pro.sub(parts, const_i64(1))), parts)  # k-tiles per part
        first = b.mul(part, depth)
        last = b.add(first, depth)
        last = b.select(b.icmp_signed("<", last, KT), last, KT)

        with cooperative.phase() as tid:
            for slot in range(TM * TN):
                b.store(zero, acc.at(tid, slot))
        with cooperative.uniform_loop(first, last, "kt") as kt:
            k0 = b.mul(kt, const_i64(BK))
            with cooperative.phase() as tid:
                self.load_slice(tid, m0, k0, M, K, BM, self.lhs_k_inner, self.lhs_address, self.lhs, a_tile)
                self.load_slice(tid, n0, k0, N, K, BN, self.rhs_k_inner, self.rhs_address, self.rhs, b_tile)
            with cooperative.phase() as tid:
                ty, tx = b.udiv(tid, const_i64(GRID)), b.urem(tid, const_i64(GRID))
                with counted_loop(b, 0, BK, "kk") as kk:
                    a_row = b.gep(a_tile, [b.mul(kk, const_i64(BM + PAD))])
                    b_row = b.gep(b_tile, [b.mul(kk, const_i64(BN + PAD))])
                    xs = self.tile_values(a_row, ty, TM, BM)
                    ys = self.tile_values(b_row, tx, TN, BN)
                    for i, x in enumerate(xs):
                        for j, y in enumerate(ys):
                            self.multiply_add(acc.at(tid, i * TN + j), x, y)
        with cooperative.phase() as tid:
            self.store_tile(tid, acc, m0, n0, M, N, part)

    def register_bytes(self) -> int:
        """Bytes of an element in shared memory and registers (f16 is widened to f32)."""
        return (ir.ElemType.F32 if self.elem is ir.ElemType.F16 else self.elem).nbytes

    def tile_values(self, row, thread, count: int, span: int) -> list:
        """A thread's ``count`` values of a shared-memory tile row (of ``span``): its
        positions (``_positions``) in runs of consecutive ones, each run one load."""
        size = self.register_bytes()
        run = _run_length(count, size)
        values = []
        for first in _positions(thread, count, span, run, self.k.b)[::run]:
            values += self.block.load_consecutive(self.k.b.gep(row, [first]), run, run * size)
        return values

    def load_slice(self, tid, first, k0, extent, K, span: int, k_inner: bool, address, operand, tile) -> None:
        """Copy the operand's ``span x BK`` slice at (first, k0) into the k-major ``tile``;
        positions past ``extent`` or K hold 0."""
        b = self.k.b
        for part in range(span * self.BK // THREADS):
            e = b.add(tid, const_i64(part * THREADS))
            position, c = _coordinates(b, e, self.BK, span, k_inner)
            free, kk = b.add(first, position), b.add(k0, c)
            inside = b.and_(b.icmp_signed("<", free, extent), b.icmp_signed("<", kk, K))
            offset, valid = address(self.clamp(free, extent), self.clamp(kk, K))
            if valid is not None:
                inside = b.and_(inside, valid)
                offset = b.select(valid, offset, const_i64(0))
            value = self.load(operand, offset)
            b.store(b.select(inside, value, self.k.scalar.constant(0, self.elem)),
                    b.gep(tile, [b.add(b.mul(c, const_i64(span + PAD)), position)]))

    def store_tile(self, tid, acc, m0, n0, M, N, part) -> None:
        """Each output of the thread: through the epilogue, or (split) raw into its part's
        row of the partials."""
        b = self.k.b
        outputs = self.k.numel(self.core.result.type)
        ty, tx = b.udiv(tid, const_i64(GRID)), b.urem(tid, const_i64(GRID))
        size = self.register_bytes()
        rows = _positions(ty, self.TM, self.BM, _run_length(self.TM, size), b)
        columns = _positions(tx, self.TN, self.BN, _run_length(self.TN, size), b)
        for i in range(self.TM):
            m = b.add(m0, rows[i])
            with if_then(b, b.icmp_signed("<", m, M), "row"):
                for j in range(self.TN):
                    n = b.add(n0, columns[j])
                    with if_then(b, b.icmp_signed("<", n, N), "col"):
                        multi, linear = self.output(m, n)
                        if self.partials is None:
                            self.store(acc.at(tid, i * self.TN + j), multi, linear)
                        else:
                            target = b.gep(self.partials, [b.add(b.mul(part, outputs), linear)])
                            b.store(b.load(acc.at(tid, i * self.TN + j)), target)


class _PartialSums(_Contraction):
    """The second launch of a split contraction: an item per output element sums its
    ``parts`` partials in part order and applies the epilogue (``_Contraction.store``)."""

    def __init__(self, kernel, core, root, leaves, out, parts, partials):
        super().__init__(kernel, core, root, leaves, out)
        self.parts = parts
        self.partials = kernel.pro.bitcast(partials, register_type(self.elem).as_pointer())

    def emit(self) -> None:
        k, b = self.k, self.k.b
        outputs = k.numel(self.core.result.type)
        slot = self.accumulators(1)[0]
        begin, end = k.parallel_range(self.core.result.type.num_elements, self.parts)
        with counted_loop(b, begin, end, "e") as e:
            b.store(b.load(b.gep(self.partials, [e])), slot)
            with counted_loop(b, 1, k.dim(self.parts), "part") as part:
                partial = b.load(b.gep(self.partials, [b.add(e, b.mul(part, outputs))]))
                b.store(b.fadd(b.load(slot), partial), slot)
            self.store(slot, k.delinearize(e, self.out_shape), e)


class _SharedTiledDot(_BlockTiles, _TiledDot):
    """A dot: ``_TiledDot``'s operands, strides, sizes and epilogue."""

    def __init__(self, kernel, core, root, leaves, out, cooperative: block.Block, shape: tuple):
        _TiledDot.__init__(self, kernel, core, root, leaves, out)
        self.setup_tiles(cooperative, shape, self.lc[0] == core.operands[0].type.rank - 1,
                         self.rc[0] == core.operands[1].type.rank - 1)

    def matrix_sizes(self) -> tuple:
        return tuple(self.k.dim(self.sizes[name]) for name in ("M", "N", "K"))

    def start(self, batch) -> None:
        self.batch = batch
        self.lbase = self.offset(batch, self.lshape, self.lstride, self.lb)
        self.rbase = self.offset(batch, self.rshape, self.rstride, self.rb)

    def lhs_address(self, m, kk) -> tuple:
        b = self.k.b
        offset = b.add(self.offset(m, self.lshape, self.lstride, self.lfree), b.mul(kk, self.lstride[self.lc[0]]))
        return b.add(self.lbase, offset), None

    def rhs_address(self, n, kk) -> tuple:
        b = self.k.b
        offset = b.add(self.offset(n, self.rshape, self.rstride, self.rfree), b.mul(kk, self.rstride[self.rc[0]]))
        return b.add(self.rbase, offset), None

    def output(self, m, n) -> tuple:
        b = self.k.b
        M, N = self.k.dim(self.sizes["M"]), self.k.dim(self.sizes["N"])
        multi = self.split(self.batch, self.lshape, self.lb) + self.split(m, self.lshape, self.lfree) + \
            self.split(n, self.rshape, self.rfree)
        return multi, b.add(b.mul(b.add(b.mul(self.batch, M), m), N), n)


class _SharedTiledConv(_BlockTiles, _DirectConv):
    """A conv (one feature group) as an implicit GEMM: A[m, kk] is the input under output
    pixel m's window at tap and channel kk (0 in the padding, between dilated elements),
    B[kk, n] the filter, which is already a row-major ``[taps * C, O]`` matrix."""

    def __init__(self, kernel, core, root, leaves, out, cooperative: block.Block, shape: tuple):
        _DirectConv.__init__(self, kernel, core, root, leaves, out)
        self.setup_tiles(cooperative, shape, True, False)
        self.lhs, self.rhs = self.x, self.w
        self.pixel_shape = self.out_shape[:-1]
        self.tap_shape = self.ws[:self.spatial] + [self.xs[-1]]

    def matrix_sizes(self) -> tuple:
        k = self.k
        M = k.dim(dims_product(self.core.result.type.shape[:-1]))
        K = k.dim(dims_product(self.core.operands[1].type.shape[:-1]))
        return M, self.out_shape[-1], K

    def start(self, batch) -> None:
        pass

    def lhs_address(self, m, kk) -> tuple:
        k, b = self.k, self.k.b
        pixel = k.delinearize(m, self.pixel_shape)  # [n, o1..ok]
        tap = k.delinearize(kk, self.tap_shape)  # [k1..kk, c]
        inputs, valid = [], ll.Constant(ll.IntType(1), 1)
        for axis in range(self.spatial):
            index, inside = self.input_coordinate(pixel[1 + axis], tap[axis], axis)
            inputs.append(index)
            valid = b.and_(valid, inside)
        offset = b.add(b.mul(k.linearize([pixel[0]] + inputs, self.xs[:-1]), self.xs[-1]), tap[-1])
        return offset, valid

    def rhs_address(self, n, kk) -> tuple:
        b = self.k.b
        return b.add(b.mul(kk, self.out_shape[-1]), n), None

    def output(self, m, n) -> tuple:
        b = self.k.b
        return self.k.delinearize(m, self.pixel_shape) + [n], b.add(b.mul(m, self.out_shape[-1]), n)


def _run_length(count: int, size: int) -> int:
    """Consecutive positions (of ``size`` bytes) a thread reads at once: SHARED_VECTOR_BYTES'
    worth, at most ``count`` (1: the threads interleave one position apart)."""
    run = max(1, min(count, SHARED_VECTOR_BYTES // size))
    return run if count % run == 0 else 1


def _positions(thread, count: int, span: int, run: int, b) -> list:
    """The ``count`` positions (i64) a thread (0..GRID-1) owns along a tile side of ``span``
    (= GRID * count): runs of ``run`` consecutive positions, the GRID threads' runs side
    by side, then the next runs ``span * run / count`` further on. A warp's run loads then
    read one contiguous stretch of shared memory (no bank conflicts) and its stores write
    one contiguous stretch of the output; with ``run`` 1 the threads interleave."""
    stride = span * run // count
    first = b.mul(thread, const_i64(run))
    return [b.add(first, const_i64((j // run) * stride + j % run)) for j in range(count)]


def _coordinates(b, e, BK: int, extent: int, k_inner: bool) -> tuple:
    """(position along the free dim, position along k) of a slice's element ``e``: with k
    contiguous in memory neighbouring ``e`` walk k, else the free dim."""
    if k_inner:
        return b.udiv(e, const_i64(BK)), b.urem(e, const_i64(BK))
    return b.urem(e, const_i64(extent)), b.udiv(e, const_i64(extent))
