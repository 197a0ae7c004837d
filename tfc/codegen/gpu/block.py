"""Cooperative kernels: a work item run by a whole block of threads that share memory,
meet at barriers and exchange values with warp shuffles, emitted from one description for
the GPU and for its host emulation.

An item kernel (program.py) gives each thread items of its own; a cooperative kernel gives
each *block* an item (``item = ctaid.x, ctaid.x + nctaid.x, ...`` below the extent), and
the block's ``THREADS`` threads compute it together: a row of a softmax, the 128 x 128
output tile of a GEMM. The emitter writes the item as a sequence of:

* ``with block.phase() as tid:`` per-thread code (``tid`` < threads). Every phase starts
  with a barrier, so a phase sees every shared-memory write of the phases before it (of
  this item and the block's previous items) and no write of the phases after it;
* ``with block.uniform_loop(n) as i:`` a loop every thread runs the same number of times
  (the k-tiles of a GEMM), holding phases;
* ``block.warp_reduce(value, kind, elem)`` / ``block.block_reduce(...)``: every thread's
  ``value`` (a private slot) becomes the combination over its warp / the whole block;
* item-level code between them: uniform values (offsets, extents), the same in every thread.

Memory: ``block.shared(type, count)`` is one array per block; ``block.private(type,
count)`` one array per thread (values that live across phases, the accumulators).

Two lowerings of the same Python description (``Block(kernel, threads, target)``):

* ``"ptx"``: the kernel function is called by every thread of the block with its item and
  ``tid.x``; a phase is its body once; barriers are ``bar.sync 0``; shared arrays are
  ``addrspace(3)`` globals; private arrays are allocas (registers after SROA); a warp
  reduction is a butterfly of ``shfl.sync.bfly`` (all 32 lanes converge there: it is
  only emitted at item level, never inside a phase).
* ``"host"``: the function is called once per item and runs the whole block: a phase is a
  loop over ``tid``, one thread after the other; shared and private arrays (``threads x
  count``) are allocas; a warp reduction runs the same butterfly over the private slots,
  stage by stage. Each phase finishing before the next starts is what the barrier
  guarantees, so the emulation computes what the GPU computes, bit for bit: the butterfly
  combines the same pairs in the same order (and ``a + b == b + a`` exactly).

A phase whose threads read what other threads of the same phase write (a missing
barrier) races on the GPU; the emulation would hide it by running threads in order. With
``TFC_GPU_EMULATION_DESCENDING=1`` it runs them last to first, and the tests compare both
orders: a race shows as a difference.

Cooperative kernels cannot fail (no error status): a failing thread could not leave the
block without deadlocking the others at the next barrier.
"""
from __future__ import annotations

import contextlib
import os

from llvmlite import ir as ll

from ..kernels.reduction import combine, identity
from ..llvm_util import I32, I64, CodegenError, const_i64, counted_loop, if_then

WARP = 32
THREADS = 256  # a block's threads when nothing says fewer
SHUFFLE_STAGES = (16, 8, 4, 2, 1)  # butterfly lane distances
FULL_MASK = 0xFFFFFFFF
SHARED_ADDRSPACE = 3
DESCENDING_ENV = "TFC_GPU_EMULATION_DESCENDING"  # "1": the emulation runs a phase's threads last to first


class Private:
    """A per-thread array: ``at(tid, i)`` is a pointer to thread ``tid``'s element ``i``."""

    def __init__(self, block: "Block", element_type, count: int):
        self.block = block
        self.type = element_type
        self.count = count
        threads = 1 if block.target == "ptx" else block.threads
        self.base = block.k.pro.alloca(element_type, size=const_i64(threads * count))

    def at(self, tid, i=0):
        b = self.block.k.b
        i = const_i64(i) if isinstance(i, int) else i
        if self.block.target == "ptx":
            return b.gep(self.base, [i], inbounds=True)
        return b.gep(self.base, [b.add(b.mul(tid, const_i64(self.count)), i)], inbounds=True)


class Block:
    """Emits one cooperative kernel for ``target`` ("ptx" or "host"); see the module
    docstring. ``kernel.begin_arg`` is the item; on the GPU ``kernel.end_arg`` is the thread."""

    def __init__(self, kernel, threads: int, target: str):
        if threads % WARP or not 0 < threads <= 1024:
            raise CodegenError(f"a block has a multiple of {WARP} threads up to 1024, not {threads}")
        if target not in ("ptx", "host"):
            raise CodegenError(f"unknown cooperative kernel target {target!r}")
        self.k = kernel
        self.threads = threads
        self.target = target
        self.item = kernel.begin_arg
        self._in_phase = False
        self._shared: dict = {}  # name -> the array (see ``shared``)
        self.descending = target == "host" and os.environ.get(DESCENDING_ENV) == "1"

    # -- memory ---------------------------------------------------------------------------------
    def shared(self, element_type, count: int):
        """A generic pointer to ``count`` elements of block-shared memory, distinct from the
        kernel's other arrays. On the GPU: a module-level ``addrspace(3)`` array named by its
        type, size and ordinal in the kernel (each launch gets its own copy of the arrays its
        kernel uses, so kernels can use the same names); on the host an alloca per name, so
        both lowerings alias exactly the same arrays."""
        array_type = ll.ArrayType(element_type, count)
        name = f"tfc.shared.{_type_name(element_type)}x{count}.{len(self._shared)}"
        if self.target == "host":
            array = self.k.pro.alloca(array_type)
            self._shared[name] = array
            return self.k.pro.gep(array, [const_i64(0), const_i64(0)], inbounds=True)
        module = self.k.module
        array = module.globals.get(name)
        if array is None:
            array = ll.GlobalVariable(module, array_type, name=name, addrspace=SHARED_ADDRSPACE)
            array.linkage = "internal"
            array.initializer = ll.Constant(array_type, ll.Undefined)
            array.align = 16
        self._shared[name] = array
        first = self.k.pro.gep(array, [const_i64(0), const_i64(0)], inbounds=True)
        return self.k.pro.addrspacecast(first, element_type.as_pointer())

    def private(self, element_type, count: int = 1) -> Private:
        return Private(self, element_type, count)

    def load_consecutive(self, pointer, count: int, align: int) -> list:
        """The ``count`` elements from ``pointer`` on (shared memory aligned to ``align``
        bytes, the run's size): on the GPU one vector load (``ld.shared.v4`` for four f32),
        on the host scalar loads of the same values."""
        b = self.k.b
        if self.target == "host" or count == 1:
            return [b.load(b.gep(pointer, [const_i64(i)], inbounds=True)) for i in range(count)]
        vector_type = ll.VectorType(pointer.type.pointee, count)
        vector = b.load(b.bitcast(pointer, vector_type.as_pointer()), align=align)
        return [b.extract_element(vector, ll.Constant(I32, i)) for i in range(count)]

    # -- structure ------------------------------------------------------------------------------
    @contextlib.contextmanager
    def phase(self, name: str = "tid"):
        """Per-thread code; yields the thread's index (i64)."""
        if self._in_phase:
            raise CodegenError("cooperative kernel: phases do not nest")
        self.barrier()
        self._in_phase = True
        try:
            if self.target == "ptx":
                yield self.k.end_arg
            else:
                with counted_loop(self.k.b, 0, self.threads, name) as turn:
                    yield self.k.b.sub(const_i64(self.threads - 1), turn) if self.descending else turn
        finally:
            self._in_phase = False

    @contextlib.contextmanager
    def first_thread(self):
        """Code for thread 0 alone, without a barrier: it may read only thread 0's private
        slots (a reduction's total) and write memory no other phase of the kernel reads."""
        self._item_level("a first-thread section")
        b = self.k.b
        self._in_phase = True
        try:
            if self.target == "host":
                yield const_i64(0)
            else:
                with if_then(b, b.icmp_signed("==", self.k.end_arg, const_i64(0)), "thread0"):
                    yield self.k.end_arg
        finally:
            self._in_phase = False

    @contextlib.contextmanager
    def uniform_loop(self, start, stop, name: str = "u", step=1):
        """A loop every thread of the block runs alike (item level only)."""
        self._item_level("a uniform loop")
        with counted_loop(self.k.b, start, stop, name, step) as index:
            yield index

    def barrier(self) -> None:
        self._item_level("a barrier")
        if self.target == "ptx":
            b = self.k.b
            fn = _declare(b.module, "llvm.nvvm.barrier0", ll.VoidType(), [])
            b.call(fn, [])

    def _item_level(self, what: str) -> None:
        if self._in_phase:
            raise CodegenError(f"cooperative kernel: {what} inside a phase")

    # -- warp and block reductions ----------------------------------------------------------------
    def warp_reduce(self, slot: Private, kind: str, elem, index: int = 0) -> None:
        """Each thread's ``slot[index]`` := the ``kind`` combination of its warp's values
        (every lane gets the same value)."""
        self._item_level("a warp reduction")
        b = self.k.b
        if self.target == "ptx":
            pointer = slot.at(None, index)
            value = b.load(pointer)
            for distance in SHUFFLE_STAGES:
                other = _shuffle_xor(b, value, distance)
                value = combine(self.k, kind, elem, value, other)
            b.store(value, pointer)
            return
        scratch = self.k.pro.alloca(slot.type, size=const_i64(WARP))
        with counted_loop(b, 0, self.threads // WARP, "warp") as warp:
            first = b.mul(warp, const_i64(WARP))
            for distance in SHUFFLE_STAGES:
                with counted_loop(b, 0, WARP, "lane") as lane:
                    partner = b.xor(lane, const_i64(distance))
                    mine = b.load(slot.at(b.add(first, lane), index))
                    other = b.load(slot.at(b.add(first, partner), index))
                    b.store(combine(self.k, kind, elem, mine, other), b.gep(scratch, [lane]))
                with counted_loop(b, 0, WARP, "lane") as lane:
                    b.store(b.load(b.gep(scratch, [lane])), slot.at(b.add(first, lane), index))

    def block_reduce(self, slot: Private, kind: str, elem, index: int = 0) -> None:
        """Each thread's ``slot[index]`` := the ``kind`` combination over the block: warp
        reductions, the warps' results through shared memory, and every warp reducing those
        (so every thread ends with the total, and no broadcast is needed)."""
        self.warp_reduce(slot, kind, elem, index)
        warps = self.threads // WARP
        if warps == 1:
            return
        b = self.k.b
        partials = self.shared(slot.type, warps)
        with self.phase() as tid:
            lane = b.and_(tid, const_i64(WARP - 1))
            with if_then(b, b.icmp_signed("==", lane, const_i64(0)), "lane0"):
                warp = b.lshr(tid, const_i64(5))
                b.store(b.load(slot.at(tid, index)), b.gep(partials, [warp]))
        with self.phase() as tid:
            lane = b.and_(tid, const_i64(WARP - 1))
            safe = b.select(b.icmp_signed("<", lane, const_i64(warps)), lane, const_i64(0))
            value = b.load(b.gep(partials, [safe]))
            value = b.select(b.icmp_signed("<", lane, const_i64(warps)), value,
                             identity(kind, elem, self.k.scalar))
            b.store(value, slot.at(tid, index))
        self.warp_reduce(slot, kind, elem, index)

    def strided(self, tid, extent, name: str = "r"):
        """``for (r = tid; r < extent; r += threads)``: a thread's share of a row, with
        neighbouring threads on neighbouring elements (coalesced)."""
        return counted_loop(self.k.b, tid, extent, name, step=self.threads)


def _declare(module: ll.Module, name: str, return_type, arg_types):
    fn = module.globals.get(name)
    if fn is None:
        fn = ll.Function(module, ll.FunctionType(return_type, arg_types), name=name)
    return fn


def _type_name(t) -> str:
    return str(t).replace(" ", "").replace("[", "a").replace("]", "").replace("x", "_")


def _shuffle_xor(b: ll.IRBuilder, value, distance: int):
    """``value`` of the lane ``lane ^ distance`` (shfl.sync.bfly), for any scalar type:
    32-bit floats and ints directly, narrower ints widened, 64-bit ones in two halves."""
    t = value.type
    module = b.module
    args = [ll.Constant(I32, FULL_MASK), None, ll.Constant(I32, distance), ll.Constant(I32, WARP - 1)]
    if isinstance(t, ll.FloatType):
        fn = _declare(module, "llvm.nvvm.shfl.sync.bfly.f32", t, [I32, t, I32, I32])
        args[1] = value
        return b.call(fn, args)
    fn = _declare(module, "llvm.nvvm.shfl.sync.bfly.i32", I32, [I32, I32, I32, I32])
    if isinstance(t, ll.IntType) and t.width <= 32:
        args[1] = value if t.width == 32 else b.zext(value, I32)
        moved = b.call(fn, args)
        return moved if t.width == 32 else b.trunc(moved, t)
    if isinstance(t, ll.DoubleType) or (isinstance(t, ll.IntType) and t.width == 64):
        bits = b.bitcast(value, I64) if isinstance(t, ll.DoubleType) else value
        halves = []
        for shift in (0, 32):
            args[1] = b.trunc(b.lshr(bits, ll.Constant(I64, shift)), I32)
            halves.append(b.zext(b.call(fn, args), I64))
        bits = b.or_(halves[0], b.shl(halves[1], ll.Constant(I64, 32)))
        return b.bitcast(bits, t) if isinstance(t, ll.DoubleType) else bits
    raise CodegenError(f"no warp shuffle for {t}")


def threads_for(length) -> int:
    """Threads per block for rows of ``length`` elements: the next power of two between a
    warp and ``THREADS`` for a static length, else ``THREADS``."""
    if not isinstance(length, int):
        return THREADS
    threads = WARP
    while threads < min(length, THREADS):
        threads *= 2
    return threads


def emit(program, op, values: list, index: int, threads: int, items, work_per_item, describe,
         extra: tuple = ()) -> None:
    """Emit ``op``'s cooperative kernel, ``describe(block)``, for the GPU and the host, and
    launch it over ``items`` (a dim) blocks of ``threads``; ``values`` and ``extra``: the IR
    values (outputs first) and scratch buffers whose buffers are its params, as
    ``Program.new_kernel``'s."""
    kernels = []
    for target in ("ptx", "host"):
        kernel, params = program.new_kernel(op, values, extra=extra)
        describe(Block(kernel, threads, target))
        kernels.append(kernel)
    kernels[0].parallel_range(items, work_per_item)
    program.call_cooperative(kernels[0], kernels[1], params, index, threads)
