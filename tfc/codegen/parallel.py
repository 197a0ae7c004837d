"""A persistent fork-join thread pool in LLVM IR: ``tfc_parallel_for(fn, ctx, count)``.

Calls ``fn(ctx, i)`` for i in [0, count), spread over the pool's threads and the caller.
Workers are created once (pthreads) and kept; after finishing a job they spin briefly
(so back-to-back kernels of one run dispatch in microseconds) and then sleep on a
condition variable (so an idle process uses no CPU). One job at a time: a caller that
finds the pool busy (another thread's program, or a nested call) runs its loop serially,
so it can never deadlock.

For JIT-compiled programs the pool lives in one runtime module compiled once per
process and registered as the symbol ``tfc_parallel_for``; ahead-of-time libraries get
their own copy emitted into the same module.
"""
from __future__ import annotations

import functools

from llvmlite import ir as ll

from tfc import ir

from .llvm_util import I8, I8P, I32, I64, const_i64, intrinsic

TASK_TYPE = ll.FunctionType(ll.VoidType(), [I8P, I64])
ENTRY_NAME = "tfc_parallel_for"
SIZE_NAME = "tfc_pool_set_size"
SIZE_GLOBAL = "tfc_pool_threads"
_SPIN = 2000
_INDEX_MASK = 0xFFFFFFFF  # the index half of the pool's ``next`` word


def declare_parallel_for(module: ll.Module) -> ll.Function:
    existing = module.globals.get(ENTRY_NAME)
    if existing is not None:
        return existing
    return ll.Function(module, ll.FunctionType(ll.VoidType(), [TASK_TYPE.as_pointer(), I8P, I64]), ENTRY_NAME)


def default_pool_size() -> int:
    """Threads for large kernels: TFC_NUM_THREADS, else the cores this process may use."""
    from tfc._env import default_pool_size as configured_pool_size

    return configured_pool_size()


class _PoolEmitter:
    def __init__(self, module: ll.Module):
        self.m = module
        self.g = {}
        size = ll.GlobalVariable(module, I64, name=SIZE_GLOBAL)
        size.initializer = ll.Constant(I64, 1)
        self.g["size"] = size
        for name, t, init in (("mutex", ll.ArrayType(I8, 64), None), ("cond", ll.ArrayType(I8, 64), None),
                              ("dispatch", ll.ArrayType(I8, 64), None), ("threads", I64, 0),
                              ("gen", I64, 0), ("count", I64, 0), ("next", I64, 0), ("remaining", I64, 0),
                              ("fn", TASK_TYPE.as_pointer(), None), ("ctx", I8P, None)):
            glob = ll.GlobalVariable(module, t, name=f"tfc.pool.{name}")
            glob.linkage = "internal"
            glob.initializer = ll.Constant(t, None) if init is None else ll.Constant(t, init)
            glob.align = 64
            self.g[name] = glob
        self.mutex_lock = intrinsic(module, "pthread_mutex_lock", I32, [I8P])
        self.mutex_unlock = intrinsic(module, "pthread_mutex_unlock", I32, [I8P])
        self.mutex_trylock = intrinsic(module, "pthread_mutex_trylock", I32, [I8P])
        self.cond_wait = intrinsic(module, "pthread_cond_wait", I32, [I8P, I8P])
        self.cond_broadcast = intrinsic(module, "pthread_cond_broadcast", I32, [I8P])
        self.pause = intrinsic(module, "llvm.x86.sse2.pause", ll.VoidType(), [])
        self.sched_yield = intrinsic(module, "sched_yield", I32, [])
        worker_type = ll.FunctionType(I8P, [I8P])
        self.create = intrinsic(module, "pthread_create", I32,
                                [I64.as_pointer(), I8P, worker_type.as_pointer(), I8P])
        self.detach = intrinsic(module, "pthread_detach", I32, [I64])
        self.run_jobs = self._emit_run_jobs()
        self.worker = self._emit_worker(worker_type)
        self._emit_set_size()
        self._emit_parallel_for()

    def ptr(self, name: str, b: ll.IRBuilder):
        glob = self.g[name]
        return b.bitcast(glob, I8P) if isinstance(glob.value_type, ll.ArrayType) else glob

    def _emit_run_jobs(self) -> ll.Function:
        """Claim and run indices of the current job until none are left.

        ``next`` holds (job tag << 32) | next index. A claim is a compare-and-swap that
        succeeds only while the tag is the job this thread read its task, context and
        count for, and the index is below that count: a thread that wakes late can never
        claim (and lose, or run with the wrong task) an index of a later job. The caller
        closes a job (index field all ones) before overwriting its fields."""
        fn = ll.Function(self.m, ll.FunctionType(ll.VoidType(), []), "tfc.pool.run_jobs")
        fn.linkage = "internal"
        b = ll.IRBuilder(fn.append_basic_block("entry"))
        tag = b.shl(b.load_atomic(self.g["gen"], "seq_cst", 8), const_i64(32))
        task = b.load_atomic(self.g["fn"], "unordered", 8)
        ctx = b.load_atomic(self.g["ctx"], "unordered", 8)
        count = b.load_atomic(self.g["count"], "seq_cst", 8)
        loop = fn.append_basic_block("claim")
        try_claim = fn.append_basic_block("claim.try")
        run = fn.append_basic_block("run")
        done = fn.append_basic_block("done")
        b.branch(loop)
        b.position_at_end(loop)
        current = b.load_atomic(self.g["next"], "seq_cst", 8)
        index = b.and_(current, const_i64(_INDEX_MASK))
        same_job = b.icmp_unsigned("==", b.and_(current, const_i64(~_INDEX_MASK)), tag)
        b.cbranch(b.and_(same_job, b.icmp_unsigned("<", index, count)), try_claim, done)
        b.position_at_end(try_claim)
        exchanged = b.cmpxchg(self.g["next"], current, b.add(current, const_i64(1)), "seq_cst", "seq_cst")
        b.cbranch(b.extract_value(exchanged, 1), run, loop)
        b.position_at_end(run)
        b.call(task, [ctx, index])
        b.atomic_rmw("sub", self.g["remaining"], const_i64(1), "seq_cst")
        b.branch(loop)
        b.position_at_end(done)
        b.ret_void()
        return fn

    def _emit_worker(self, worker_type) -> ll.Function:
        fn = ll.Function(self.m, worker_type, "tfc.pool.worker")
        fn.linkage = "internal"
        entry = fn.append_basic_block("entry")
        b = ll.IRBuilder(entry)
        seen = b.alloca(I64)
        spins = b.alloca(I64)
        b.store(const_i64(0), seen)
        spin_head = fn.append_basic_block("spin")
        spin_body = fn.append_basic_block("spin.body")
        sleep = fn.append_basic_block("sleep")
        sleep_check = fn.append_basic_block("sleep.check")
        sleep_wait = fn.append_basic_block("sleep.wait")
        woke = fn.append_basic_block("woke")
        work = fn.append_basic_block("work")
        b.store(const_i64(0), spins)
        b.branch(spin_head)
        # Spin: a new generation means a new job.
        b.position_at_end(spin_head)
        generation = b.load_atomic(self.g["gen"], "seq_cst", 8)
        changed = b.icmp_signed("!=", generation, b.load(seen))
        b.cbranch(changed, work, spin_body)
        b.position_at_end(spin_body)
        b.call(self.pause, [])
        count = b.add(b.load(spins), const_i64(1))
        b.store(count, spins)
        b.cbranch(b.icmp_signed("<", count, const_i64(_SPIN)), spin_head, sleep)
        # Sleep on the condition variable until the generation changes.
        b.position_at_end(sleep)
        b.call(self.mutex_lock, [self.ptr("mutex", b)])
        b.branch(sleep_check)
        b.position_at_end(sleep_check)
        generation = b.load_atomic(self.g["gen"], "seq_cst", 8)
        b.cbranch(b.icmp_signed("==", generation, b.load(seen)), sleep_wait, woke)
        b.position_at_end(sleep_wait)
        b.call(self.cond_wait, [self.ptr("cond", b), self.ptr("mutex", b)])
        b.branch(sleep_check)
        b.position_at_end(woke)
        b.call(self.mutex_unlock, [self.ptr("mutex", b)])
        b.branch(work)
        b.position_at_end(work)
        b.store(b.load_atomic(self.g["gen"], "seq_cst", 8), seen)
        b.call(self.run_jobs, [])
        b.store(const_i64(0), spins)
        b.branch(spin_head)
        return fn

    def _emit_set_size(self) -> None:
        fn = ll.Function(self.m, ll.FunctionType(ll.VoidType(), [I64]), SIZE_NAME)
        b = ll.IRBuilder(fn.append_basic_block("entry"))
        b.store(fn.args[0], self.g["size"])
        b.ret_void()

    def _emit_parallel_for(self) -> None:
        fn = ll.Function(self.m, ll.FunctionType(ll.VoidType(), [TASK_TYPE.as_pointer(), I8P, I64]), ENTRY_NAME)
        task, ctx, count = fn.args
        b = ll.IRBuilder(fn.append_basic_block("entry"))
        spins = b.alloca(I64)
        serial = fn.append_basic_block("serial")
        try_pool = fn.append_basic_block("try")
        pooled = fn.append_basic_block("pooled")
        size = b.load(self.g["size"])
        small = b.or_(b.icmp_signed("<=", count, const_i64(1)), b.icmp_signed("<=", size, const_i64(1)))
        b.cbranch(small, serial, try_pool)
        b.position_at_end(try_pool)
        busy = b.call(self.mutex_trylock, [self.ptr("dispatch", b)])
        b.cbranch(b.icmp_signed("!=", busy, ll.Constant(I32, 0)), serial, pooled)
        # Serial: run every index here.
        b.position_at_end(serial)
        with _loop(b, count) as index:
            b.call(task, [ctx, index])
        b.ret_void()
        # Pooled: start missing workers, publish the job, work, wait for the others.
        b.position_at_end(pooled)
        self._start_workers(b, size)
        b.call(self.mutex_lock, [self.ptr("mutex", b)])
        generation = b.load_atomic(self.g["gen"], "seq_cst", 8)
        closed = b.or_(b.shl(generation, const_i64(32)), const_i64(_INDEX_MASK))
        b.store_atomic(closed, self.g["next"], "seq_cst", 8)
        b.store_atomic(task, self.g["fn"], "unordered", 8)
        b.store_atomic(ctx, self.g["ctx"], "unordered", 8)
        b.store_atomic(count, self.g["count"], "seq_cst", 8)
        b.store_atomic(count, self.g["remaining"], "seq_cst", 8)
        following = b.add(generation, const_i64(1))
        b.store_atomic(b.shl(following, const_i64(32)), self.g["next"], "seq_cst", 8)
        b.store_atomic(following, self.g["gen"], "seq_cst", 8)
        b.call(self.cond_broadcast, [self.ptr("cond", b)])
        b.call(self.mutex_unlock, [self.ptr("mutex", b)])
        b.store(const_i64(0), spins)
        b.call(self.run_jobs, [])
        # Wait for the indices other threads claimed: spin briefly, then yield the core
        # between looks (a worker holding an index may be descheduled when the machine has
        # more runnable threads than cores; spinning then would only keep it off the core).
        wait = fn.append_basic_block("wait")
        wait_body = fn.append_basic_block("wait.body")
        wait_yield = fn.append_basic_block("wait.yield")
        wait_pause = fn.append_basic_block("wait.pause")
        finish = fn.append_basic_block("finish")
        b.branch(wait)
        b.position_at_end(wait)
        left = b.load_atomic(self.g["remaining"], "seq_cst", 8)
        b.cbranch(b.icmp_signed("==", left, const_i64(0)), finish, wait_body)
        b.position_at_end(wait_body)
        count_spins = b.add(b.load(spins), const_i64(1))
        b.store(count_spins, spins)
        b.cbranch(b.icmp_signed(">", count_spins, const_i64(_SPIN)), wait_yield, wait_pause)
        b.position_at_end(wait_yield)
        b.call(self.sched_yield, [])
        b.branch(wait)
        b.position_at_end(wait_pause)
        b.call(self.pause, [])
        b.branch(wait)
        b.position_at_end(finish)
        b.call(self.mutex_unlock, [self.ptr("dispatch", b)])
        b.ret_void()

    def _start_workers(self, b: ll.IRBuilder, size) -> None:
        handle = b.alloca(I64)
        want = b.sub(size, const_i64(1))
        head = b.append_basic_block("spawn")
        body = b.append_basic_block("spawn.body")
        done = b.append_basic_block("spawn.done")
        b.branch(head)
        b.position_at_end(head)
        have = b.load(self.g["threads"])
        b.cbranch(b.icmp_signed("<", have, want), body, done)
        b.position_at_end(body)
        b.call(self.create, [handle, ll.Constant(I8P, None), self.worker, ll.Constant(I8P, None)])
        b.call(self.detach, [b.load(handle)])
        b.store(b.add(have, const_i64(1)), self.g["threads"])
        b.branch(head)
        b.position_at_end(done)


class _loop:
    """A small counted loop for the pool's own code (0 <= i < count)."""

    def __init__(self, b: ll.IRBuilder, count):
        self.b = b
        self.count = count

    def __enter__(self):
        b = self.b
        self.pre = b.block
        self.head = b.append_basic_block("l.head")
        self.body = b.append_basic_block("l.body")
        self.exit = b.append_basic_block("l.exit")
        b.branch(self.head)
        b.position_at_end(self.head)
        self.index = b.phi(I64)
        self.index.add_incoming(const_i64(0), self.pre)
        b.cbranch(b.icmp_signed("<", self.index, self.count), self.body, self.exit)
        b.position_at_end(self.body)
        return self.index

    def __exit__(self, *exc):
        b = self.b
        following = b.add(self.index, const_i64(1))
        self.index.add_incoming(following, b.block)
        b.branch(self.head)
        b.position_at_end(self.exit)
        return False


def kernel_task(program, main, kernel, pointers: list, extent, status_slot) -> tuple:
    """A task function running ``kernel`` on one chunk of [0, extent), and its context.

    Context: [buffer pointers..., dims, error record, status pointer, extent, chunk] as i64s.
    Chunks are sized so each thread gets a few of them (load balance) of at least
    ``MIN_CHUNK_WORK`` elements of work.
    """
    b = main.b
    slots = len(pointers) + 5
    ctx = b.alloca(ll.ArrayType(I64, slots))
    values = [b.ptrtoint(p, I64) for p in pointers]
    values += [b.ptrtoint(main.dims, I64), b.ptrtoint(main.error_record, I64), b.ptrtoint(status_slot, I64)]
    pool = b.load(_pool_size_global(program.module))
    pieces = b.mul(pool, const_i64(4))
    chunk = b.sdiv(b.add(extent, b.sub(pieces, const_i64(1))), pieces)
    chunk = b.select(b.icmp_signed("<", chunk, const_i64(1)), const_i64(1), chunk)
    values += [extent, chunk]
    for i, value in enumerate(values):
        b.store(value, b.gep(ctx, [const_i64(0), const_i64(i)]))
    tasks = b.sdiv(b.add(extent, b.sub(chunk, const_i64(1))), chunk)
    return _task_function(program.module, kernel, len(pointers)), b.bitcast(ctx, I8P), tasks


def _task_function(module: ll.Module, kernel, count: int) -> ll.Function:
    existing = module.globals.get(kernel.fn.name + ".task")
    if existing is not None:  # a deduplicated kernel called from several places
        return existing
    fn = ll.Function(module, TASK_TYPE, name=kernel.fn.name + ".task")
    fn.linkage = "internal"
    b = ll.IRBuilder(fn.append_basic_block("entry"))
    ctx = b.bitcast(fn.args[0], I64.as_pointer())
    fields = [b.load(b.gep(ctx, [const_i64(i)])) for i in range(count + 5)]
    pointers = [b.inttoptr(v, I8P) for v in fields[:count]]
    dims = b.inttoptr(fields[count], I64.as_pointer())
    record = b.inttoptr(fields[count + 1], I64.as_pointer())
    status_slot = b.inttoptr(fields[count + 2], I32.as_pointer())
    extent, chunk = fields[count + 3], fields[count + 4]
    begin = b.mul(fn.args[1], chunk)
    end = b.add(begin, chunk)
    end = b.select(b.icmp_signed(">", end, extent), extent, end)
    status = b.call(kernel.fn, pointers + [dims, record, begin, end])
    failed = b.icmp_signed("!=", status, ll.Constant(I32, 0))
    with b.if_then(failed):
        b.store(status, status_slot)
    b.ret_void()
    return fn


def _pool_size_global(module: ll.Module):
    """The pool size as seen by programs: an external i64 (``tfc_pool_threads``)."""
    existing = module.globals.get(SIZE_GLOBAL)
    if existing is not None:
        return existing
    glob = ll.GlobalVariable(module, I64, name=SIZE_GLOBAL)
    glob.linkage = "external"
    return glob


def emit_pool(module: ll.Module) -> None:
    """Add the pool (``tfc_parallel_for``, ``tfc_pool_set_size``) to ``module``."""
    _PoolEmitter(module)


def emit_runtime(module: ll.Module, vector_bits: int) -> None:
    """Everything programs call but do not define: the pool and the GEMM routines.

    The JIT compiles this once per process (``jit_runtime``); an ahead-of-time artifact
    gets it emitted into its own module, for the artifact's target.
    """
    from .kernels.gemm import GEMM_ELEMS, emit_gemm

    emit_pool(module)
    for elem in GEMM_ELEMS:
        emit_gemm(module, elem, vector_bits)


RUNTIME_SYMBOLS = (ENTRY_NAME, "tfc_gemm_f32")


@functools.lru_cache(maxsize=None)
def jit_runtime():
    """Compile the runtime once per process and make its symbols resolvable by programs:
    the pool and the f32 GEMM. The GEMMs of other element types are compiled when a
    program first needs one (``link_runtime``): most programs never call the f64 one, and
    it is a third of the runtime's compile time."""
    import ctypes

    import llvmlite.binding as llvm

    from .kernels.gemm import emit_gemm
    from .target import host_target

    size = default_pool_size()  # a bad TFC_NUM_THREADS fails before anything is compiled
    module = ll.Module(name="tfc_runtime")
    emit_pool(module)
    emit_gemm(module, ir.ElemType.F32, host_target().vector_bits)
    code = _compile_runtime_module(module)
    for name in RUNTIME_SYMBOLS:
        llvm.add_symbol(name, code.engine.get_function_address(name))
    llvm.add_symbol(SIZE_GLOBAL, code.engine.get_global_value_address(SIZE_GLOBAL))
    set_size = ctypes.CFUNCTYPE(None, ctypes.c_int64)(code.engine.get_function_address(SIZE_NAME))
    set_size(size)
    return code


@functools.lru_cache(maxsize=None)
def _jit_gemm(elem):
    """The GEMM routine for ``elem`` compiled on its own (it calls the pool of ``jit_runtime``)."""
    import llvmlite.binding as llvm

    from .kernels.gemm import emit_gemm, gemm_name
    from .target import host_target

    jit_runtime()
    module = ll.Module(name=f"tfc_runtime_{gemm_name(elem)}")
    emit_gemm(module, elem, host_target().vector_bits)
    code = _compile_runtime_module(module, entry_name=gemm_name(elem))
    llvm.add_symbol(gemm_name(elem), code.engine.get_function_address(gemm_name(elem)))
    return code


def _compile_runtime_module(module: ll.Module, entry_name: str = SIZE_NAME):
    from .jit import compile_ir

    # Straight to code generation: the runtime is written already blocked and unrolled, and
    # LLVM's IR pipeline adds ~0.6 s here for no measured speed (1024^3 f32 GEMM: 127 GFLOP/s
    # per core either way).
    return compile_ir(str(module), entry_name=entry_name, ir_passes=False)


def gemm_address(elem) -> int:
    """The address of the runtime's GEMM routine for ``elem`` (compiled if not yet)."""
    from .kernels.gemm import gemm_name

    code = jit_runtime() if gemm_name(elem) in RUNTIME_SYMBOLS else _jit_gemm(elem)
    return code.engine.get_function_address(gemm_name(elem))


def link_runtime(references) -> None:
    """Make every runtime symbol a program refers to resolvable. ``references``: the names
    it uses (an ``ll.Module``'s globals), or its object files (bytes: an undefined symbol's
    name is in the object's string table)."""
    from .kernels.gemm import GEMM_ELEMS, gemm_name

    jit_runtime()
    for elem in GEMM_ELEMS:
        name = gemm_name(elem)
        if name in RUNTIME_SYMBOLS:
            continue
        if isinstance(references, ll.Module):
            used = name in references.globals
        else:
            used = any(name.encode() in blob for blob in references)
        if used:
            _jit_gemm(elem)


def pool_size() -> int:
    """Threads the JIT runtime's pool splits large kernels over (the caller included)."""
    import ctypes

    code = jit_runtime()
    return ctypes.c_int64.from_address(code.engine.get_global_value_address(SIZE_GLOBAL)).value


def set_pool_size(threads: int) -> int:
    """Resize the JIT runtime's pool (more workers start on the next parallel kernel; with
    1, kernels run on the calling thread). Returns the previous size."""
    import ctypes

    if threads < 1:
        raise ValueError(f"the pool needs at least 1 thread, got {threads}")
    previous = pool_size()
    code = jit_runtime()
    ctypes.CFUNCTYPE(None, ctypes.c_int64)(code.engine.get_function_address(SIZE_NAME))(threads)
    return previous
