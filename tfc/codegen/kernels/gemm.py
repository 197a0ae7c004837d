"""A packed, register-blocked GEMM (BLIS-style) for f32 and f64, emitted as LLVM IR.

``C[m, n] = sum_k A[m, k] * B[k, n] + X[m, n]`` with A and B given by strides (so
transposed operands cost nothing: packing reads them in any order), C row-major with a
leading dimension, and an optional addend X (null: none; rows ``ldx`` apart, 0 for a bias
row) added where each task stores its first K block, on the core that computed the tile
(a dot's ``+ bias`` or ``+ accumulator`` epilogue). Loop structure (Goto/BLIS):

    for jc in N step NC:                    B block of KC x NC packed into NR-wide panels
      for pc in K step KC:
        pack B[pc:pc+KC, jc:jc+NC]
        for ic in M step MC:                A block of MC x KC packed into MR-tall panels
          pack A[ic:ic+MC, pc:pc+KC]
          for jr, ir over the panels:       the micro-kernel: an MR x NR tile of C held in
            micro-kernel                    MR * NR/VW vector registers, one FMA per
                                            (row, vector) per k, UNROLL k per loop trip
Edge tiles are computed in full (packing pads with zeros) and written through a small
stack tile; each tile's C rows are prefetched before its micro-kernel runs. Packing
buffers come from malloc once per call: packed B, and one packed-A block per thread,
which a task claims by flag (so a thread reuses the same, cache-warm buffer task after
task). When the columns are split between tasks (few rows: every task multiplies all of
them), A is packed once, whole, rather than by each task again, in the same parallel
phase as B's panels; and with a single row group each task packs the B panels of its
own columns. On one thread the work is one task (no split: full MC blocks).

Narrow N (fewer than NARROW_PANELS * NR columns, e.g. a dense layer with 10 outputs)
takes its own path: no A packing (an A panel would be used once or twice), B packed into
rows of N rounded up to VW, tasks over rows only, NR-wide tiles and then one VW-wide
tile of NARROW_MR_FACTOR * MR rows, partial columns stored through masked stores.
"""
from __future__ import annotations

from dataclasses import dataclass

from llvmlite import ir as ll

from tfc import ir

from ..llvm_util import F32, F64, I8P, I64, const_i64, counted_loop, if_then, intrinsic
from .gemv import emit_vector_paths
from ..parallel import TASK_TYPE, _pool_size_global, declare_parallel_for

TASKS_PER_THREAD = 8  # compute tasks per thread, for the pool's dynamic scheduling to balance
PARALLEL_FLOPS = 1 << 20  # below M*N*K this, tasks run on the calling thread
MIN_GROUP_PANELS = 4  # rows per task, in MR panels: each packed B panel is reused this often
PACKED_B_ELEMENTS = 1 << 22  # the packed copy of B: at most K x NC, or this many elements
# A whole packed copy of A (M x K, rounded up to MR rows) is made once, shared by the tasks,
# when it has at most this many elements; else each task packs its rows per K block.
SHARED_A_ELEMENTS = 1 << 22
UNROLL = 4  # rank-1 updates per trip of the micro-kernel's loop
# Fewer columns than this many NR panels take the narrow path (A read in place, see
# emit_narrow); a lone last panel of at most VW columns uses NARROW_MR_FACTOR * MR rows.
NARROW_PANELS = 2
NARROW_MR_FACTOR = 2
NARROW_UNROLL = 1  # in-place A rows: unrolling measured slower (more live addresses)


@dataclass(frozen=True)
class Blocking:
    vector_width: int  # elements per vector register
    nr_vectors: int  # NR = nr_vectors * vector_width
    mr: int
    kc: int
    mc: int
    nc: int

    @property
    def nr(self) -> int:
        return self.nr_vectors * self.vector_width


def blocking_for(elem: ir.ElemType, vector_bits: int) -> Blocking:
    lanes = vector_bits // (elem.nbytes * 8)
    if vector_bits >= 512:
        return Blocking(lanes, 2, 12, 256, 96, 2048)
    if vector_bits >= 256:
        return Blocking(lanes, 2, 6, 256, 96, 2048)
    return Blocking(lanes, 2, 4, 256, 64, 1024)


GEMM_ELEMS = (ir.ElemType.F32, ir.ElemType.F64)


def gemm_name(elem: ir.ElemType) -> str:
    return f"tfc_gemm_{elem.value}"


def gemm_function(module: ll.Module, elem: ir.ElemType) -> ll.Function:
    """The GEMM routine for ``elem`` as a program sees it: defined in the runtime module
    (compiled once per process, or emitted into an artifact), declared here."""
    name = gemm_name(elem)
    existing = module.globals.get(name)
    if existing is not None:
        return existing
    return ll.Function(module, _gemm_type(F32 if elem is ir.ElemType.F32 else F64), name)


def _gemm_type(t) -> ll.FunctionType:
    """(M, N, K, A, sam, sak, B, sbk, sbn, C, ldc, X, ldx): C = A·B + X, X (rows ldx apart,
    columns contiguous; ldx 0 repeats one row: a bias) or no X when null."""
    ptr = t.as_pointer()
    return ll.FunctionType(ll.VoidType(), [I64, I64, I64, ptr, I64, I64, ptr, I64, I64, ptr, I64, ptr, I64])


def emit_gemm(module: ll.Module, elem: ir.ElemType, vector_bits: int) -> ll.Function:
    """Define the GEMM routine for ``elem`` in ``module`` (the runtime module)."""
    return _GemmEmitter(module, elem, blocking_for(elem, vector_bits), gemm_name(elem)).fn


class _GemmEmitter:
    def __init__(self, module: ll.Module, elem: ir.ElemType, blocking: Blocking, name: str):
        self.t = F32 if elem is ir.ElemType.F32 else F64
        self.size = elem.nbytes
        self.bk = blocking
        self.vec = ll.VectorType(self.t, blocking.vector_width)
        self.fn = ll.Function(module, _gemm_type(self.t), name=name)
        for index in (3, 6):
            self.fn.args[index].add_attribute("noalias")
        (self.M, self.N, self.K, self.A, self.sam, self.sak, self.B, self.sbk, self.sbn, self.C, self.ldc, self.X,
         self.ldx) = self.fn.args
        self.b = ll.IRBuilder(self.fn.append_basic_block("entry"))
        self.module = module
        self.fma = intrinsic(module, f"llvm.fma.v{blocking.vector_width}{'f32' if self.t == F32 else 'f64'}",
                             self.vec, [self.vec] * 3)
        suffix = f"v{blocking.vector_width}{'f32' if self.t == F32 else 'f64'}"
        mask_type = ll.VectorType(ll.IntType(1), blocking.vector_width)
        self.masked_load = intrinsic(module, f"llvm.masked.load.{suffix}.p0", self.vec,
                                     [self.vec.as_pointer(), ll.IntType(32), mask_type, self.vec])
        self.masked_store = intrinsic(module, f"llvm.masked.store.{suffix}.p0", ll.VoidType(),
                                      [self.vec, self.vec.as_pointer(), ll.IntType(32), mask_type])
        self.emit()

    # -- small helpers ------------------------------------------------------------------
    def imin(self, a, b):
        return self.b.select(self.b.icmp_signed("<", a, b), a, b)

    def malloc(self, elements: int):
        return self.malloc_dynamic(const_i64(elements))

    def malloc_dynamic(self, elements):
        """A 64-byte aligned buffer of ``elements`` (an i64 value; the size is rounded up
        to a multiple of 64 bytes as aligned_alloc requires)."""
        malloc = intrinsic(self.b.module, "aligned_alloc", I8P, [I64, I64])
        size = self.b.mul(elements, const_i64(self.size))
        size = self.b.and_(self.b.add(size, const_i64(63)), const_i64(-64))
        raw = self.b.call(malloc, [const_i64(64), size])
        return self.b.bitcast(raw, self.t.as_pointer())

    def free(self, pointer) -> None:
        free = intrinsic(self.b.module, "free", ll.VoidType(), [I8P])
        self.b.call(free, [self.b.bitcast(pointer, I8P)])

    def at(self, base, offset):
        return self.b.gep(base, [offset], inbounds=True)

    # -- structure ----------------------------------------------------------------------
    def emit(self) -> None:
        """The driver: narrow N goes to ``emit_narrow``; else per block of NC columns, pack
        all of B, and on the first block all of A when it is shared (one parallel phase
        for both), then multiply (one parallel phase of row block x column chunk tasks,
        each over all of K)."""
        b, bk = self.b, self.bk
        self.pack_task = self._emit_pack_task()
        self.pack_a_task = self._emit_pack_a_task()
        self.compute_task = self._emit_compute_task()
        self.narrow_task = self._emit_narrow_task()
        self.prepare_task = self._emit_prepare_task()
        with if_then(b, b.icmp_signed("==", b.mul(self.M, self.N), const_i64(0)), "empty"):
            b.ret_void()
        with if_then(b, b.icmp_signed("==", self.K, const_i64(0)), "k0"):
            self.zero_c()
            b.ret_void()
        emit_vector_paths(self)  # M == 1 or N == 1 with contiguous vectors: gemv.py
        flops = b.mul(b.mul(self.M, self.N), self.K)
        parallel = b.icmp_signed(">=", flops, const_i64(PARALLEL_FLOPS))
        threads = b.select(parallel, b.load(_pool_size_global(self.module)), const_i64(1))
        threads = b.select(b.icmp_signed("<", threads, const_i64(1)), const_i64(1), threads)
        with if_then(b, b.icmp_signed("<", self.N, const_i64(NARROW_PANELS * bk.nr)), "narrow"):
            self.emit_narrow(threads, parallel)
            b.ret_void()
        block_width = self.block_width()
        packed_b = self.malloc_dynamic(b.mul(self.K, block_width))
        pack_ctx = b.alloca(self.pack_ctx_type)
        compute_ctx = b.alloca(self.compute_ctx_type)
        k_blocks = b.sdiv(b.add(self.K, const_i64(bk.kc - 1)), const_i64(bk.kc))
        row_panels = b.sdiv(b.add(self.M, const_i64(bk.mr - 1)), const_i64(bk.mr))
        # On one thread the tasks only split the work (smaller blocks, less reuse of each
        # packed panel): want one, and let MC alone bound the row groups.
        tasks_wanted = b.select(b.icmp_signed("==", threads, const_i64(1)), const_i64(1),
                                b.mul(threads, const_i64(TASKS_PER_THREAD)))
        row_groups = self.row_groups(row_panels, tasks_wanted)
        shared_a, packed_a, pack_a_ctx = self.shared_a(row_panels, row_groups, tasks_wanted)
        a_panels = b.select(b.icmp_signed("!=", shared_a, const_i64(0)), row_panels, const_i64(0))
        prepare_ctx = b.alloca(self.prepare_ctx_type)
        # One packed-A buffer per thread (unused when A is packed whole), claimed by flag.
        slot_flags = b.alloca(I64, size=threads)
        with counted_loop(b, 0, threads, "sf") as s:
            b.store(const_i64(0), self.at(slot_flags, s))
        slot_buffers = self.malloc_dynamic(b.select(b.icmp_signed("!=", shared_a, const_i64(0)), const_i64(1),
                                                    b.mul(threads, const_i64(bk.mc * bk.kc))))
        with counted_loop(b, 0, self.N, "jc", step=block_width) as jc:
            nc = self.imin(block_width, b.sub(self.N, jc))
            panels = b.sdiv(b.add(nc, const_i64(bk.nr - 1)), const_i64(bk.nr))
            padded = b.mul(panels, const_i64(bk.nr))
            # One row group: each column chunk's B panels are used by one task only, which
            # packs them itself (no separate phase, and they stay in that core's cache).
            b_in_task = b.icmp_signed("==", row_groups, const_i64(1))
            # One packing phase: the B panels of this block, and on the first block the
            # panels of a shared A too.
            self.store_fields(pack_ctx, [self.K, self.B, self.sbk, self.sbn, packed_b, jc, nc, panels, padded])
            a_tasks = b.select(b.icmp_signed("==", jc, const_i64(0)), a_panels, const_i64(0))
            b_tasks = b.select(b_in_task, const_i64(0), b.mul(k_blocks, panels))
            packs = b.add(a_tasks, b_tasks)
            with if_then(b, b.icmp_signed(">", packs, const_i64(0)), "pack"):
                self.store_fields(prepare_ctx, [b.bitcast(pack_a_ctx, I8P), a_tasks, b.bitcast(pack_ctx, I8P)])
                self.run_tasks(self.prepare_task, prepare_ctx, packs, parallel)
            chunk = self.column_chunk(row_groups, nc, tasks_wanted)
            n_chunks = b.sdiv(b.add(nc, b.sub(chunk, const_i64(1))), chunk)
            self.store_fields(compute_ctx, [self.M, self.K, self.A, self.sam, self.sak, self.C, self.ldc, packed_b,
                                            jc, nc, padded, n_chunks, chunk, row_panels, row_groups, packed_a,
                                            shared_a, self.B, self.sbk, self.sbn, b.zext(b_in_task, I64), self.X,
                                            self.ldx, slot_flags, threads, slot_buffers])
            self.run_tasks(self.compute_task, compute_ctx, b.mul(row_groups, n_chunks), parallel)
        self.free(packed_b)
        self.free(packed_a)
        self.free(slot_buffers)
        b.ret_void()

    # -- narrow N ----------------------------------------------------------------------
    def emit_narrow(self, threads, parallel) -> None:
        """C = A·B + X for N < NARROW_PANELS * NR (a dense layer with a few outputs).

        With one or two column panels an A panel would be used once or twice, so packing A
        (a copy of all of it, the bulk of the memory traffic here) does not pay: the
        micro-kernel broadcasts A's elements straight from its rows. B is packed whole
        into rows of W (N rounded up to VW, zeros past N), and each task takes a range of
        rows, all columns and all of K at once (no K blocks: one store per tile, with the
        addend). Columns go in NR-wide panels while more than VW are left, then one
        VW-wide panel of NARROW_MR_FACTOR * MR rows (as many accumulators, so the FMA
        latency stays hidden with one vector per row)."""
        b, vw = self.b, self.bk.vector_width
        width = b.mul(b.sdiv(b.add(self.N, const_i64(vw - 1)), const_i64(vw)), const_i64(vw))
        packed = self.malloc_dynamic(b.mul(self.K, width))
        with counted_loop(b, 0, self.K, "nbk") as k:
            with counted_loop(b, 0, width, "nbj") as j:
                inside = b.icmp_signed("<", j, self.N)
                safe = b.select(inside, j, const_i64(0))
                value = b.load(self.at(self.B, b.add(b.mul(k, self.sbk), b.mul(safe, self.sbn))))
                value = b.select(inside, value, ll.Constant(self.t, 0.0))
                b.store(value, self.at(packed, b.add(b.mul(k, width), j)))
        unit = self.narrow_row_unit()
        units = b.sdiv(b.add(self.M, const_i64(unit - 1)), const_i64(unit))
        tasks = self.imin(units, b.mul(threads, const_i64(TASKS_PER_THREAD)))
        ctx = b.alloca(self.narrow_ctx_type)
        self.store_fields(ctx, [self.M, self.N, self.K, self.A, self.sam, self.sak, packed, width, self.C,
                                self.ldc, self.X, self.ldx, units, tasks])
        self.run_tasks(self.narrow_task, ctx, tasks, parallel)
        self.free(packed)

    def narrow_row_unit(self) -> int:
        """Rows per unit of work shared out between narrow tasks: a multiple of both
        kernels' MR."""
        return NARROW_MR_FACTOR * self.bk.mr

    def _emit_narrow_task(self) -> ll.Function:
        """narrow(ctx, t): rows [first, last) of task t (whole units of
        ``narrow_row_unit``, shared out evenly), every column, all of K."""
        bk, ptr, outer = self.bk, self.t.as_pointer(), self.b
        vw, nr = bk.vector_width, bk.nr
        self.narrow_ctx_type = ll.LiteralStructType([I64, I64, I64, ptr, I64, I64, ptr, I64, ptr, I64, ptr, I64,
                                                     I64, I64])
        fn, fields = self.task_function("narrow", self.narrow_ctx_type)
        b = self.b
        (M, N, K, self.A, self.sam, self.sak, packed, width, self.C, self.ldc, self.X, self.ldx, units,
         tasks) = fields
        index, unit = fn.args[1], const_i64(self.narrow_row_unit())
        first = b.mul(b.sdiv(b.mul(index, units), tasks), unit)
        last = self.imin(b.mul(b.sdiv(b.mul(b.add(index, const_i64(1)), units), tasks), unit), M)
        # Wide panels while more than VW columns are left (partial ones masked), then at
        # most one panel of VW columns or fewer.
        wide = b.sdiv(b.add(b.sub(N, const_i64(vw)), const_i64(nr - 1)), const_i64(nr))
        wide = b.select(b.icmp_signed("<", wide, const_i64(0)), const_i64(0), wide)
        tile = b.alloca(self.vec, size=const_i64(max(bk.mr * bk.nr_vectors, NARROW_MR_FACTOR * bk.mr)))
        with counted_loop(b, 0, wide, "nw") as panel:
            self.narrow_panel(b.mul(panel, const_i64(nr)), bk.nr_vectors, bk.mr, first, last, N, K, packed, width,
                              tile)
        rest = b.mul(wide, const_i64(nr))
        with if_then(b, b.icmp_signed("<", rest, N), "nlast"):
            self.narrow_panel(rest, 1, NARROW_MR_FACTOR * bk.mr, first, last, N, K, packed, width, tile)
        b.ret_void()
        self.b = outer
        self.A, self.sam, self.sak, self.C, self.ldc = (self.fn.args[3], self.fn.args[4], self.fn.args[5],
                                                        self.fn.args[9], self.fn.args[10])
        self.X, self.ldx = self.fn.args[11], self.fn.args[12]
        return fn

    def narrow_panel(self, col0, nv, mr, first, last, N, K, packed, width, tile) -> None:
        """Rows [first, last) times the nv * VW columns from col0 (those past N masked
        off): mr-row tiles, the A elements read in place (rows past ``last`` read row
        ``last - 1`` again, and are not stored); the accumulators go through ``tile`` (on
        the stack) to the stores."""
        b, vw = self.b, self.bk.vector_width
        with counted_loop(b, first, last, "nr", step=mr) as row0:
            rows = self.imin(const_i64(mr), b.sub(last, row0))
            starts = [self.at(self.A, b.mul(self.imin(b.add(row0, const_i64(i)), b.sub(last, const_i64(1))),
                                            self.sam))
                      for i in range(mr)]
            packed_row = self.at(packed, col0)

            def a_elements(k):
                offset = b.mul(k, self.sak)
                return [self.at(start, offset) for start in starts]

            acc = self.rank1_updates(mr, nv, K, a_elements, lambda k: self.at(packed_row, b.mul(k, width)),
                                     NARROW_UNROLL)
            for i, row_acc in enumerate(acc):
                for v, value in enumerate(row_acc):
                    b.store(value, self.at(tile, const_i64(i * nv + v)))
            full = b.icmp_signed("<=", b.add(col0, const_i64(nv * vw)), N)
            with b.if_else(full) as (then, otherwise):
                with then:
                    self.store_rows(tile, nv, row0, rows, col0, None)
                with otherwise:
                    self.store_rows(tile, nv, row0, rows, col0, self.column_masks(col0, nv, N))

    def column_masks(self, col0, nv, N) -> list:
        """Per vector v of a panel from col0: the lanes whose column is below N."""
        b, vw = self.b, self.bk.vector_width
        lanes = ll.VectorType(I64, vw)
        splat_mask = ll.Constant(ll.VectorType(ll.IntType(32), vw), [0] * vw)

        def splat(value):
            inserted = b.insert_element(ll.Constant(lanes, ll.Undefined), value, const_i64(0))
            return b.shuffle_vector(inserted, ll.Constant(lanes, ll.Undefined), splat_mask)

        bound = splat(N)
        return [b.icmp_signed("<", b.add(splat(b.add(col0, const_i64(v * vw))), ll.Constant(lanes, list(range(vw)))),
                              bound) for v in range(nv)]

    def store_rows(self, tile, nv, row0, rows, col0, masks) -> None:
        """C[row0 + i, col0 + v*VW ...] = tile[i*nv + v] (+ X there) for i below ``rows``
        (a loop: one copy of the code whatever the tile's height); with ``masks``, only the
        lanes they select are read and written."""
        b, vw = self.b, self.bk.vector_width
        vec_ptr = self.vec.as_pointer()
        has_x = self.has_addend()
        x_base = b.select(has_x, self.X, self.C)  # never offset from null
        x_stride = b.select(has_x, self.ldx, self.ldc)
        with counted_loop(b, 0, rows, "nrow") as i:
            row = b.add(row0, i)
            for v in range(nv):
                value = b.load(self.at(tile, b.add(b.mul(i, const_i64(nv)), const_i64(v))))
                column = b.add(col0, const_i64(v * vw))
                target = b.bitcast(self.at(self.C, b.add(b.mul(row, self.ldc), column)), vec_ptr)
                source = b.bitcast(self.at(x_base, b.add(b.mul(row, x_stride), column)), vec_ptr)
                if masks is None:
                    extra = b.load(source, align=self.size)
                else:
                    extra = b.call(self.masked_load, [source, ll.Constant(ll.IntType(32), self.size), masks[v],
                                                      ll.Constant(self.vec, None)])
                value = b.select(has_x, b.fadd(value, extra), value)
                if masks is None:
                    b.store(value, target, align=self.size)
                else:
                    b.call(self.masked_store, [value, target, ll.Constant(ll.IntType(32), self.size), masks[v]])

    def shared_a(self, row_panels, row_groups, tasks_wanted):
        """(shared, packed, context): when the column chunks per row group would make
        several tasks pack the same rows (few rows) and A fits SHARED_A_ELEMENTS, all of A
        is packed once, before the compute tasks, one pack_a task per MR panel (in the
        first packing phase, with B's panels: Ap[(panel*K + k)*MR + i]); ``packed`` is
        then that copy, else a one-element dummy for ``free``; ``context`` is pack_a's."""
        b, bk = self.b, self.bk
        elements = b.mul(b.mul(row_panels, const_i64(bk.mr)), self.K)
        shares = b.icmp_signed("<", row_groups, tasks_wanted)
        fits = b.icmp_signed("<=", elements, const_i64(SHARED_A_ELEMENTS))
        shared = b.and_(shares, fits)
        packed = self.malloc_dynamic(b.select(shared, elements, const_i64(1)))
        ctx = b.alloca(self.pack_a_ctx_type)
        self.store_fields(ctx, [self.M, self.K, self.A, self.sam, self.sak, packed])
        return b.zext(shared, I64), packed, ctx

    def _emit_prepare_task(self) -> ll.Function:
        """prepare(ctx, t): the packing phase: pack_a task t for t below the count of A
        panels, else pack (B) task t minus that count; one phase (one wait for the
        threads) for both."""
        outer = self.b
        self.prepare_ctx_type = ll.LiteralStructType([I8P, I64, I8P])
        fn, (a_ctx, a_tasks, b_ctx) = self.task_function("prepare", self.prepare_ctx_type)
        b, index = self.b, fn.args[1]
        with b.if_else(b.icmp_signed("<", index, a_tasks)) as (pack_a, pack_b):
            with pack_a:
                b.call(self.pack_a_task, [a_ctx, index])
            with pack_b:
                b.call(self.pack_task, [b_ctx, b.sub(index, a_tasks)])
        b.ret_void()
        self.b = outer
        return fn

    def block_width(self):
        """Columns packed at once: NC, fewer when K is so deep that K x NC would not fit
        PACKED_B_ELEMENTS (never fewer than one panel)."""
        b, nr = self.b, self.bk.nr
        fitting = b.mul(b.sdiv(b.sdiv(const_i64(PACKED_B_ELEMENTS), self.K), const_i64(nr)), const_i64(nr))
        width = self.imin(const_i64(self.bk.nc), fitting)
        width = b.select(b.icmp_signed("<", width, const_i64(nr)), const_i64(nr), width)
        n_rounded = b.mul(b.sdiv(b.add(self.N, const_i64(nr - 1)), const_i64(nr)), const_i64(nr))
        return self.imin(width, n_rounded)

    def row_groups(self, row_panels, tasks_wanted):
        """Row tasks: MR-row panels shared out evenly into groups of at most MC rows, and
        as many groups as tasks wanted (one per panel at most). Splitting rows first packs
        each A panel once; columns are split only when rows run out."""
        b, bk = self.b, self.bk
        panels_per_block = bk.mc // bk.mr
        fewest = b.sdiv(b.add(row_panels, const_i64(panels_per_block - 1)), const_i64(panels_per_block))
        most = b.sdiv(row_panels, const_i64(MIN_GROUP_PANELS))
        groups = self.imin(tasks_wanted, most)
        return b.select(b.icmp_signed(">", groups, fewest), groups, fewest)

    def column_chunk(self, row_groups, nc, tasks_wanted):
        """Columns per compute task (a multiple of NR): all of them when the row groups
        alone make the tasks wanted, else narrower chunks to make up the count."""
        b, nr = self.b, self.bk.nr
        wanted_chunks = b.sdiv(b.add(tasks_wanted, b.sub(row_groups, const_i64(1))), row_groups)
        width = b.sdiv(b.add(nc, b.sub(wanted_chunks, const_i64(1))), wanted_chunks)
        width = b.mul(b.sdiv(b.add(width, const_i64(nr - 1)), const_i64(nr)), const_i64(nr))
        return b.select(b.icmp_signed("<", width, const_i64(nr)), const_i64(nr), width)

    def run_tasks(self, task, ctx, count, parallel) -> None:
        b = self.b
        raw_ctx = b.bitcast(ctx, I8P)
        with b.if_else(parallel) as (then, otherwise):
            with then:
                b.call(declare_parallel_for(self.module), [task, raw_ctx, count])
            with otherwise:
                with counted_loop(b, 0, count, "t") as t:
                    b.call(task, [raw_ctx, t])

    def store_fields(self, ctx, values) -> None:
        for i, value in enumerate(values):
            self.b.store(value, self.b.gep(ctx, [ll.Constant(ll.IntType(32), 0), ll.Constant(ll.IntType(32), i)]))

    def task_function(self, suffix: str, ctx_type):
        """A task function and its context fields, with ``self.b`` building its body."""
        fn = ll.Function(self.module, TASK_TYPE, name=f"{self.fn.name}.{suffix}")
        fn.linkage = "internal"
        b = self.b = ll.IRBuilder(fn.append_basic_block("entry"))
        ctx = b.bitcast(fn.args[0], ctx_type.as_pointer())
        fields = [b.load(b.gep(ctx, [ll.Constant(ll.IntType(32), 0), ll.Constant(ll.IntType(32), i)]))
                  for i in range(len(ctx_type.elements))]
        return fn, fields

    def _emit_pack_task(self) -> ll.Function:
        """pack(ctx, t): one NR-wide panel of one KC-deep block of B into the packed block.

        Packed layout: K block p starts at p * KC * padded; within it, the pack_b layout."""
        bk, ptr, outer = self.bk, self.t.as_pointer(), self.b
        self.pack_ctx_type = ll.LiteralStructType([I64, ptr, I64, I64, ptr, I64, I64, I64, I64])
        fn, fields = self.task_function("pack", self.pack_ctx_type)
        b = self.b
        K, self.B, self.sbk, self.sbn, packed_b, jc, nc, panels, padded = fields
        index = fn.args[1]
        pc = b.mul(b.sdiv(index, panels), const_i64(bk.kc))
        panel = b.srem(index, panels)
        kc = self.imin(const_i64(bk.kc), b.sub(K, pc))
        self.pack_b_panel(self.at(packed_b, b.mul(pc, padded)), panel, pc, jc, kc, nc)
        b.ret_void()
        self.b = outer
        self.B, self.sbk, self.sbn = self.fn.args[6], self.fn.args[7], self.fn.args[8]
        return fn

    def _emit_pack_a_task(self) -> ll.Function:
        """pack_a(ctx, t): MR-row panel t of A, over all of K, into the shared packed A."""
        bk, ptr, outer = self.bk, self.t.as_pointer(), self.b
        self.pack_a_ctx_type = ll.LiteralStructType([I64, I64, ptr, I64, I64, ptr])
        fn, fields = self.task_function("pack_a", self.pack_a_ctx_type)
        b = self.b
        M, K, self.A, self.sam, self.sak, packed = fields
        row0 = b.mul(fn.args[1], const_i64(bk.mr))
        rows = self.imin(const_i64(bk.mr), b.sub(M, row0))
        self.pack_a(self.at(packed, b.mul(row0, K)), row0, const_i64(0), rows, K)
        b.ret_void()
        self.b = outer
        self.A, self.sam, self.sak = self.fn.args[3], self.fn.args[4], self.fn.args[5]
        return fn

    def _emit_compute_task(self) -> ll.Function:
        """compute(ctx, t): one MC-row block times one column chunk, over every K block:
        pack the A block (unless A is packed whole already), run the micro-kernel over the
        chunk's tiles."""
        bk, ptr, outer = self.bk, self.t.as_pointer(), self.b
        self.compute_ctx_type = ll.LiteralStructType([I64, I64, ptr, I64, I64, ptr, I64, ptr] + [I64] * 7
                                                     + [ptr, I64, ptr, I64, I64, I64, ptr, I64, I64.as_pointer(),
                                                        I64, ptr])
        fn, fields = self.task_function("compute", self.compute_ctx_type)
        b = self.b
        (M, K, self.A, self.sam, self.sak, self.C, self.ldc, packed_b, jc, nc, padded, n_chunks, width, row_panels,
         row_groups, shared_a, is_shared, self.B, self.sbk, self.sbn, b_in_task, self.X, self.ldx, slot_flags,
         slot_count, slot_buffers) = fields
        shared = b.icmp_signed("!=", is_shared, const_i64(0))
        packs_b = b.icmp_signed("!=", b_in_task, const_i64(0))
        index = fn.args[1]
        group = b.sdiv(index, n_chunks)
        first_panel = b.sdiv(b.mul(group, row_panels), row_groups)
        last_panel = b.sdiv(b.mul(b.add(group, const_i64(1)), row_panels), row_groups)
        ic = b.mul(first_panel, const_i64(bk.mr))
        mc = b.sub(self.imin(b.mul(last_panel, const_i64(bk.mr)), M), ic)
        col_start = b.mul(b.srem(index, n_chunks), width)
        col_stop = self.imin(b.add(col_start, width), nc)
        tile = b.alloca(self.t, size=const_i64(bk.mr * bk.nr))
        slot, packed_a = self.claim_a_buffer(shared, slot_flags, slot_count, slot_buffers)
        with counted_loop(b, 0, K, "pc", step=bk.kc) as pc:
            kc = self.imin(const_i64(bk.kc), b.sub(K, pc))
            first = b.icmp_signed("==", pc, const_i64(0))
            with if_then(b, b.not_(shared), "pack_block"):
                self.pack_a(packed_a, ic, pc, mc, kc)
            with if_then(b, packs_b, "pack_b_chunk"):
                first_b = b.sdiv(col_start, const_i64(bk.nr))
                last_b = b.sdiv(b.add(col_stop, const_i64(bk.nr - 1)), const_i64(bk.nr))
                with counted_loop(b, first_b, last_b, "pbc") as panel:
                    self.pack_b_panel(self.at(packed_b, b.mul(pc, padded)), panel, pc, jc, kc, nc)
            # Shared: panel p of this K block starts at (p*K + pc)*MR; else at p*kc*MR.
            a_block = b.select(shared, self.at(shared_a, b.add(b.mul(ic, K), b.mul(pc, const_i64(bk.mr)))), packed_a)
            a_stride = b.select(shared, K, kc)
            self.macro_kernel(a_block, a_stride, self.at(packed_b, b.mul(pc, padded)), tile, ic, jc, mc, nc, kc,
                              first, col_start, col_stop)
        self.release_a_buffer(slot, packed_a, slot_flags)
        b.ret_void()
        self.b = outer
        self.A, self.sam, self.sak, self.C, self.ldc = (self.fn.args[3], self.fn.args[4], self.fn.args[5],
                                                        self.fn.args[9], self.fn.args[10])
        self.B, self.sbk, self.sbn = self.fn.args[6], self.fn.args[7], self.fn.args[8]
        self.X, self.ldx = self.fn.args[11], self.fn.args[12]
        return fn

    def claim_a_buffer(self, shared, flags, count, buffers):
        """(slot, buffer) for a task's packed A block (MC x KC): the first of the call's
        ``count`` buffers whose flag this task turns from 0 to 1 (so a thread reuses one
        buffer, warm in its cache, task after task), or, should more tasks run at once
        than there are slots (workers started for a bigger pool), slot -1 and a buffer
        of its own from malloc. Neither when A is packed whole (``shared``: slot -2)."""
        b, bk = self.b, self.bk
        chosen = b.alloca(I64)
        pointer = b.alloca(self.t.as_pointer())
        b.store(const_i64(-2), chosen)
        b.store(buffers, pointer)
        with if_then(b, b.not_(shared), "claim"):
            b.store(const_i64(-1), chosen)
            with counted_loop(b, 0, count, "slot") as s:
                with if_then(b, b.icmp_signed("<", b.load(chosen), const_i64(0)), "try_slot"):
                    swap = b.cmpxchg(self.at(flags, s), const_i64(0), const_i64(1), "acquire", "monotonic")
                    with if_then(b, b.extract_value(swap, 1), "got_slot"):
                        b.store(s, chosen)
                        b.store(self.at(buffers, b.mul(s, const_i64(bk.mc * bk.kc))), pointer)
            with if_then(b, b.icmp_signed("==", b.load(chosen), const_i64(-1)), "own_buffer"):
                b.store(self.malloc(bk.mc * bk.kc), pointer)
        return b.load(chosen), b.load(pointer)

    def release_a_buffer(self, slot, buffer, flags) -> None:
        """Give back what ``claim_a_buffer`` handed out."""
        b = self.b
        with if_then(b, b.icmp_signed(">=", slot, const_i64(0)), "release_slot"):
            b.store_atomic(const_i64(0), self.at(flags, slot), "release", 8)
        with if_then(b, b.icmp_signed("==", slot, const_i64(-1)), "free_own"):
            self.free(buffer)

    def zero_c(self) -> None:
        """K = 0: C = X, or zeros."""
        b = self.b
        with counted_loop(b, 0, self.M, "zm") as m:
            with counted_loop(b, 0, self.N, "zn") as n:
                value = self.addend(ll.Constant(self.t, 0.0), m, n)
                b.store(value, self.at(self.C, b.add(b.mul(m, self.ldc), n)))

    def has_addend(self):
        return self.b.icmp_unsigned("!=", self.b.ptrtoint(self.X, I64), const_i64(0))

    def addend(self, value, row, column):
        """``value`` + X[row, column] when there is an X (scalars)."""
        b = self.b
        safe = b.select(self.has_addend(), self.X, self.C)  # never dereference null
        extra = b.load(self.at(safe, b.add(b.mul(row, self.ldx), column)))
        return b.select(self.has_addend(), b.fadd(value, extra), value)

    # -- packing ------------------------------------------------------------------------
    def pack_b_panel(self, packed, panel, pc, jc, kc, nc) -> None:
        """Bp[(panel*kc + k)*NR + j] = B[pc+k, jc+panel*NR+j] (0 beyond nc).

        A full panel of a row-major B is vector copies; of a transposed B (contiguous
        along k), vector loads along k transposed in registers; others go element by
        element.
        """
        b, bk = self.b, self.bk
        nr = bk.nr
        vec_ptr = self.vec.as_pointer()
        column0 = b.mul(panel, const_i64(nr))
        full = b.icmp_signed("<=", b.add(column0, const_i64(nr)), nc)
        contiguous = b.and_(full, b.icmp_signed("==", self.sbn, const_i64(1)))
        k_contiguous = b.and_(full, b.icmp_signed("==", self.sbk, const_i64(1)))
        with b.if_else(contiguous) as (then, otherwise):
            with then:
                with counted_loop(b, 0, kc, "pbv") as k:
                    source = b.add(b.mul(b.add(pc, k), self.sbk), b.add(jc, column0))
                    destination = b.mul(b.add(b.mul(panel, kc), k), const_i64(nr))
                    for v in range(bk.nr_vectors):
                        offset = const_i64(v * bk.vector_width)
                        value = b.load(b.bitcast(self.at(self.B, b.add(source, offset)), vec_ptr), align=self.size)
                        target = b.bitcast(self.at(packed, b.add(destination, offset)), vec_ptr)
                        b.store(value, target, align=self.size * bk.vector_width)
            with otherwise:
                with b.if_else(k_contiguous) as (transposed, other):
                    with transposed:
                        self._pack_b_transposed(packed, panel, column0, pc, jc, kc, nc)
                    with other:
                        self._pack_b_elements(packed, panel, column0, pc, jc, kc, nc, const_i64(0))

    def _pack_b_transposed(self, packed, panel, column0, pc, jc, kc, nc) -> None:
        """A full panel of a B whose k runs are contiguous (a transposed operand): for each
        VW-deep step of k, one vector load per column (VW values of k), transposed in
        VW x VW register blocks into VW rows of the panel; the last kc % VW rows go element
        by element."""
        b, bk = self.b, self.bk
        vw, nr = bk.vector_width, bk.nr
        vec_ptr = self.vec.as_pointer()
        steps = b.sdiv(kc, const_i64(vw))
        with counted_loop(b, 0, steps, "pbt") as step:
            k0 = b.mul(step, const_i64(vw))
            columns = []
            for j in range(nr):
                source = b.add(b.mul(b.add(jc, b.add(column0, const_i64(j))), self.sbn), b.add(pc, k0))
                columns.append(b.load(b.bitcast(self.at(self.B, source), vec_ptr), align=self.size))
            for v in range(bk.nr_vectors):
                rows = _transpose_in_registers(b, columns[v * vw:(v + 1) * vw])
                for k, row in enumerate(rows):
                    destination = b.mul(b.add(b.mul(panel, kc), b.add(k0, const_i64(k))), const_i64(nr))
                    target = b.bitcast(self.at(packed, b.add(destination, const_i64(v * vw))), vec_ptr)
                    b.store(row, target, align=self.size * vw)
        self._pack_b_elements(packed, panel, column0, pc, jc, kc, nc, b.mul(steps, const_i64(vw)))

    def _pack_b_elements(self, packed, panel, column0, pc, jc, kc, nc, k_start) -> None:
        b, nr = self.b, self.bk.nr
        with counted_loop(b, k_start, kc, "pbk") as k:
            row = b.mul(b.add(pc, k), self.sbk)
            destination = b.mul(b.add(b.mul(panel, kc), k), const_i64(nr))
            for j in range(nr):
                column = b.add(column0, const_i64(j))
                inside = b.icmp_signed("<", column, nc)
                safe = b.select(inside, column, const_i64(0))
                source = b.add(row, b.mul(b.add(jc, safe), self.sbn))
                value = b.load(self.at(self.B, source))
                value = b.select(inside, value, ll.Constant(self.t, 0.0))
                b.store(value, self.at(packed, b.add(destination, const_i64(j))))

    def pack_a(self, packed, ic, pc, mc, kc) -> None:
        """Ap[(panel*kc + k)*MR + i] = A[ic+panel*MR+i, pc+k] (0 beyond mc)."""
        b, mr = self.b, self.bk.mr
        panels = b.sdiv(b.add(mc, const_i64(mr - 1)), const_i64(mr))
        with counted_loop(b, 0, panels, "pa") as panel:
            row0 = b.mul(panel, const_i64(mr))
            full = b.icmp_signed("<=", b.add(row0, const_i64(mr)), mc)
            with b.if_else(full) as (then, otherwise):
                with then:
                    offsets = [b.mul(b.add(ic, b.add(row0, const_i64(i))), self.sam) for i in range(mr)]
                    with b.if_else(b.icmp_signed("==", self.sak, const_i64(1))) as (rows_contiguous, other):
                        with rows_contiguous:
                            start = self._pack_a_transposed(packed, panel, pc, kc, offsets)
                            self._pack_a_rows(packed, panel, pc, kc, [(None, o) for o in offsets], start)
                        with other:
                            self._pack_a_rows(packed, panel, pc, kc, [(None, o) for o in offsets])
                with otherwise:
                    rows = []
                    for i in range(mr):
                        row = b.add(row0, const_i64(i))
                        inside = b.icmp_signed("<", row, mc)
                        safe = b.select(inside, row, const_i64(0))
                        rows.append((inside, b.mul(b.add(ic, safe), self.sam)))
                    self._pack_a_rows(packed, panel, pc, kc, rows)

    def _pack_a_transposed(self, packed, panel, pc, kc, offsets):
        """A full panel of an A whose rows are contiguous along k (row-major): per VW-deep
        step of k, one vector load per row, transposed in VW x VW register blocks (rows
        past MR repeat row 0), and per k one VW-wide store per block of VW rows at
        Ap[(panel*kc + k)*MR + block start]. A block reaching past MR writes a few lanes
        into the next k's slot, which a later store overwrites: so steps run only while
        another k follows them (k0 + VW < kc), never past the panel. Returns the first k
        left for the element loop."""
        b, bk = self.b, self.bk
        vw, mr = bk.vector_width, bk.mr
        vec_ptr = self.vec.as_pointer()
        steps = b.sdiv(b.sub(kc, const_i64(1)), const_i64(vw))
        blocks = [[i if i < mr else 0 for i in range(start, start + vw)] for start in range(0, mr, vw)]
        with counted_loop(b, 0, steps, "pat") as step:
            k0 = b.mul(step, const_i64(vw))
            column = b.add(pc, k0)
            loaded = {}
            for i in sorted({i for block in blocks for i in block}):
                pointer = b.bitcast(self.at(self.A, b.add(offsets[i], column)), vec_ptr)
                loaded[i] = b.load(pointer, align=self.size)
            transposed = [_transpose_in_registers(b, [loaded[i] for i in block]) for block in blocks]
            for k in range(vw):
                row = b.mul(b.add(b.mul(panel, kc), b.add(k0, const_i64(k))), const_i64(mr))
                for block_index, block in enumerate(transposed):
                    target = self.at(packed, b.add(row, const_i64(block_index * vw)))
                    b.store(block[k], b.bitcast(target, vec_ptr), align=self.size)
        return b.mul(steps, const_i64(vw))

    def _pack_a_rows(self, packed, panel, pc, kc, rows, k_start=None) -> None:
        b, mr = self.b, self.bk.mr
        with counted_loop(b, const_i64(0) if k_start is None else k_start, kc, "pak") as k:
            column = b.mul(b.add(pc, k), self.sak)
            destination = b.mul(b.add(b.mul(panel, kc), k), const_i64(mr))
            for i, (inside, row_offset) in enumerate(rows):
                value = b.load(self.at(self.A, b.add(row_offset, column)))
                if inside is not None:
                    value = b.select(inside, value, ll.Constant(self.t, 0.0))
                b.store(value, self.at(packed, b.add(destination, const_i64(i))))

    # -- compute ------------------------------------------------------------------------
    def macro_kernel(self, packed_a, a_stride, packed_b, tile, ic, jc, mc, nc, kc, first, col_start,
                     col_stop) -> None:
        """The column panels of [col_start, col_stop) (multiples of NR) times the A panels
        (panel p at ``packed_a + p * a_stride * MR``)."""
        b, bk = self.b, self.bk
        first_panel = b.sdiv(col_start, const_i64(bk.nr))
        last_panel = b.sdiv(b.add(col_stop, const_i64(bk.nr - 1)), const_i64(bk.nr))
        a_panels = b.sdiv(b.add(mc, const_i64(bk.mr - 1)), const_i64(bk.mr))
        with counted_loop(b, first_panel, last_panel, "jr") as jr:
            b_panel = self.at(packed_b, b.mul(b.mul(jr, kc), const_i64(bk.nr)))
            col0 = b.mul(jr, const_i64(bk.nr))
            cols = self.imin(const_i64(bk.nr), b.sub(nc, col0))
            with counted_loop(b, 0, a_panels, "ir") as ir_:
                a_panel = self.at(packed_a, b.mul(b.mul(ir_, a_stride), const_i64(bk.mr)))
                row0 = b.mul(ir_, const_i64(bk.mr))
                rows = self.imin(const_i64(bk.mr), b.sub(mc, row0))
                c_tile = self.at(self.C, b.add(b.mul(b.add(ic, row0), self.ldc), b.add(jc, col0)))
                self.prefetch_tile(c_tile, rows)
                acc = self.micro_kernel(a_panel, b_panel, kc)
                x_base = b.select(self.has_addend(), self.X, self.C)  # never offset from null
                x_tile = self.at(x_base, b.add(b.mul(b.add(ic, row0), self.ldx), b.add(jc, col0)))
                self.store_tile(acc, c_tile, tile, rows, cols, first, x_tile)

    def prefetch_tile(self, c_tile, rows) -> None:
        """Ask for the C tile's lines (first and last element of each row inside it) ahead
        of the micro-kernel, so its loads and stores at the end do not wait on memory."""
        b, bk = self.b, self.bk
        prefetch = intrinsic(self.module, "llvm.prefetch.p0", ll.VoidType(), [I8P] + [ll.IntType(32)] * 3)
        flags = [ll.Constant(ll.IntType(32), value) for value in (1, 3, 1)]  # write, keep in L1, data
        for i in range(bk.mr):
            row = self.at(c_tile, b.mul(b.select(b.icmp_signed("<", const_i64(i), rows), const_i64(i),
                                                 const_i64(0)), self.ldc))
            for offset in (0, bk.nr - 1):
                b.call(prefetch, [b.bitcast(self.at(row, const_i64(offset)), I8P)] + flags)

    def micro_kernel(self, a_panel, b_panel, kc) -> list:
        """MR x NV accumulator vectors after kc rank-1 updates of packed panels."""
        bk = self.bk
        return self.rank1_updates(
            bk.mr, bk.nr_vectors, kc,
            lambda k: self.consecutive(self.at(a_panel, self.b.mul(k, const_i64(bk.mr))), bk.mr),
            lambda k: self.at(b_panel, self.b.mul(k, const_i64(bk.nr))))

    def consecutive(self, pointer, count) -> list:
        """Pointers to ``count`` elements from ``pointer`` on."""
        return [pointer] + [self.at(pointer, const_i64(i)) for i in range(1, count)]

    def rank1_updates(self, mr, nv, kc, a_elements, b_row, unroll=None) -> list:
        """``mr`` x ``nv`` accumulator vectors after kc rank-1 updates, k in [0, kc):
        acc[i][v] += A(i, k) * B(k, v-th vector), where ``a_elements(k)`` gives the mr
        pointers to A(i, k) and ``b_row(k)`` the pointer to the row's first vector (the
        next ones follow it). A loop doing ``unroll`` (UNROLL) updates per trip (less loop
        overhead between the FMAs), then one for the kc % unroll left."""
        unroll = unroll or UNROLL
        zero = ll.Constant(self.vec, [0.0] * self.bk.vector_width)
        acc = [[zero] * nv for _ in range(mr)]
        whole = self.b.mul(self.b.sdiv(kc, const_i64(unroll)), const_i64(unroll))
        acc = self._rank1_loop(acc, a_elements, b_row, const_i64(0), whole, unroll)
        return self._rank1_loop(acc, a_elements, b_row, whole, kc, 1)

    def _rank1_loop(self, initial, a_elements, b_row, start, stop, unroll) -> list:
        """The accumulators after the rank-1 updates k in [start, stop) (stop - start a
        multiple of ``unroll``), ``unroll`` per trip; phis carry them."""
        b, vw = self.b, self.bk.vector_width
        mr, nv = len(initial), len(initial[0])
        preheader = b.block
        header = b.append_basic_block("uk.head")
        body = b.append_basic_block("uk.body")
        done = b.append_basic_block("uk.exit")
        b.branch(header)
        b.position_at_end(header)
        k = b.phi(I64, name="uk")
        k.add_incoming(start, preheader)
        acc = [[b.phi(self.vec) for _ in range(nv)] for _ in range(mr)]
        for row, first in zip(acc, initial):
            for phi, value in zip(row, first):
                phi.add_incoming(value, preheader)
        b.cbranch(b.icmp_signed("<", k, stop), body, done)
        b.position_at_end(body)
        vec_ptr = self.vec.as_pointer()
        splat_mask = ll.Constant(ll.VectorType(ll.IntType(32), vw), [0] * vw)
        updated = acc
        for u in range(unroll):
            step = b.add(k, const_i64(u)) if u else k
            row = b_row(step)
            columns = [b.load(b.bitcast(self.at(row, const_i64(v * vw)), vec_ptr), align=self.size)
                       for v in range(nv)]
            following_acc = []
            for i, pointer in enumerate(a_elements(step)):
                scalar = b.load(pointer)
                splat = b.shuffle_vector(b.insert_element(ll.Constant(self.vec, ll.Undefined), scalar, const_i64(0)),
                                         ll.Constant(self.vec, ll.Undefined), splat_mask)
                following_acc.append([b.call(self.fma, [splat, columns[v], updated[i][v]]) for v in range(nv)])
            updated = following_acc
        following = b.add(k, const_i64(unroll), flags=["nsw"])
        k.add_incoming(following, b.block)
        for i in range(mr):
            for v in range(nv):
                acc[i][v].add_incoming(updated[i][v], b.block)
        b.branch(header)
        b.position_at_end(done)
        return acc

    def store_tile(self, acc, c_tile, tile, rows, cols, first, x_tile) -> None:
        """C tile = acc (+ the X tile when there is an X) on the first K block, else C tile +
        acc; partial tiles via ``tile``."""
        b, bk = self.b, self.bk
        vec_ptr = self.vec.as_pointer()
        full = b.and_(b.icmp_signed("==", rows, const_i64(bk.mr)), b.icmp_signed("==", cols, const_i64(bk.nr)))
        with_x = b.and_(first, self.has_addend())
        overwrite = b.and_(first, b.not_(with_x))  # C = acc: nothing to read
        with b.if_else(b.and_(full, overwrite)) as (plain, other):
            with plain:
                for i in range(bk.mr):
                    row = self.at(c_tile, b.mul(const_i64(i), self.ldc))
                    for v in range(bk.nr_vectors):
                        pointer = b.bitcast(self.at(row, const_i64(v * bk.vector_width)), vec_ptr)
                        b.store(acc[i][v], pointer, align=self.size)
            with other:
                self._store_tile_adding(acc, c_tile, tile, rows, cols, first, x_tile, full, with_x)

    def _store_tile_adding(self, acc, c_tile, tile, rows, cols, first, x_tile, full, with_x) -> None:
        """store_tile's other cases: a full tile plus X or C, or a partial tile."""
        b, bk = self.b, self.bk
        vec_ptr = self.vec.as_pointer()
        with b.if_else(full) as (then, otherwise):
            with then:
                for i in range(bk.mr):
                    row = self.at(c_tile, b.mul(const_i64(i), self.ldc))
                    x_row = self.at(x_tile, b.mul(const_i64(i), self.ldx))
                    for v in range(bk.nr_vectors):
                        pointer = b.bitcast(self.at(row, const_i64(v * bk.vector_width)), vec_ptr)
                        x_pointer = b.bitcast(self.at(x_row, const_i64(v * bk.vector_width)), vec_ptr)
                        base = b.select(with_x, x_pointer, pointer)  # X on the first block, else C
                        old = b.load(base, align=self.size)
                        b.store(b.fadd(old, acc[i][v]), pointer, align=self.size)
            with otherwise:
                for i in range(bk.mr):
                    for v in range(bk.nr_vectors):
                        offset = const_i64(i * bk.nr + v * bk.vector_width)
                        pointer = b.bitcast(self.at(tile, offset), vec_ptr)
                        b.store(acc[i][v], pointer, align=self.size)
                with counted_loop(b, 0, rows, "ti") as i:
                    with counted_loop(b, 0, cols, "tj") as j:
                        source = b.load(self.at(tile, b.add(b.mul(i, const_i64(bk.nr)), j)))
                        target = self.at(c_tile, b.add(b.mul(i, self.ldc), j))
                        x_element = self.at(x_tile, b.add(b.mul(i, self.ldx), j))
                        old = b.load(b.select(with_x, x_element, target))
                        b.store(b.select(b.and_(first, b.not_(with_x)), source, b.fadd(old, source)), target)


def _transpose_in_registers(b: ll.IRBuilder, rows: list) -> list:
    """The transpose of an n x n block held as n vectors of n lanes (n a power of two):
    log2(n) butterfly stages of two shuffles per pair of rows."""
    n = len(rows)
    span = 1
    while span < n:
        rows = list(rows)
        mixed = list(rows)
        for i in range(n):
            if (i // span) % 2:
                continue
            low = [lane if (lane // span) % 2 == 0 else n + lane - span for lane in range(n)]
            high = [lane + span if (lane // span) % 2 == 0 else n + lane for lane in range(n)]
            mixed[i] = b.shuffle_vector(rows[i], rows[i + span], _lanes(low))
            mixed[i + span] = b.shuffle_vector(rows[i], rows[i + span], _lanes(high))
        rows = mixed
        span *= 2
    return rows


def _lanes(indices: list):
    return ll.Constant(ll.VectorType(ll.IntType(32), len(indices)), indices)
