"""Matrix-vector products inside the GEMM routine: M == 1 or N == 1.

The packed GEMM computes MR x NR tiles: with one row (a batch of one through a dense
layer) or one column (a layer with one output) it fills one row or lane of each tile and
packs operands it then reads once. These paths read the operands in place instead, in one
of two loop shapes, chosen at run time from the strides:

- **dot**: each output element is a dot product of two contiguous vectors (A's row and
  B's column with N == 1 and A row-major; A's row and B's column with M == 1 and B
  column-major). Four vector accumulators, a vector tail, a scalar tail, a horizontal sum.
- **axpy**: the output vector is contiguous and each step of K adds a scalar times a
  contiguous vector to it (M == 1 and B row-major: C += A[k] * B[k, :]; N == 1 and A
  column-major: C += B[k] * A[:, k]). The output (at most a few thousand elements) stays in
  the L1 cache; its elements sum in K order, as the scalar loop would, four steps of K
  per load and store of it.

The addend X (bias or tensor, ``ldx`` apart) is added as the GEMM adds it: dot results get
it after their sum; axpy outputs start from it. Other strides (a strided vector) fall
through to the general routine.

These products move each operand element once, so they are bound by memory; one core
does not draw all the bandwidth there is, so a large product (at least
``PARALLEL_ELEMENTS`` matrix elements) is split over the thread pool: the outputs are
cut into contiguous ranges, one task per range (a dot per output, or the axpy over its
slice of the output vector, all of K), which changes no summation order.
"""
from __future__ import annotations

from llvmlite import ir as ll

from ..llvm_util import I64, const_i64, counted_loop, if_then
from ..parallel import _pool_size_global

ACCUMULATORS = 4  # independent vector sums in a dot product (hide the FMA latency)
AXPY_DEPTH = 4  # steps of K per pass over the output vector in the axpy shape
PARALLEL_ELEMENTS = 1 << 19  # matrix elements from which a product is split over the pool
TASKS_PER_THREAD = 4


def emit_vector_paths(gemm) -> None:
    """In the GEMM routine being emitted (``gemm``: its _GemmEmitter, builder after the
    empty and K == 0 checks), the four matrix-vector cases, each returning when it applies."""
    _VectorPaths(gemm).emit()


class _VectorPaths:
    def __init__(self, gemm):
        self.g = gemm
        self.t = gemm.t
        self.vec = gemm.vec
        self.lanes = gemm.vec.count
        self.one = const_i64(1)

    @property
    def b(self) -> ll.IRBuilder:
        return self.g.b  # the GEMM routine's builder, or a task function's while one is built

    def emit(self) -> None:
        g, b = self.g, self.b
        self.x_slot = b.alloca(self.t)  # made once per call (an alloca in a loop would grow the stack)
        n_is_1 = b.icmp_signed("==", g.N, self.one)
        m_is_1 = b.icmp_signed("==", g.M, self.one)
        paths = [
            ("rows_dot", b.and_(n_is_1, b.and_(self.unit(g.sak), self.unit(g.sbk))), lambda: g.M, self.rows_dot),
            ("columns_dot", b.and_(m_is_1, b.and_(self.unit(g.sak), self.unit(g.sbk))), lambda: g.N,
             self.columns_dot),
            ("rows_axpy", b.and_(n_is_1, b.and_(self.unit(g.sam), b.icmp_signed("==", g.ldc, self.one))),
             lambda: g.M, self.rows_axpy),
            ("columns_axpy", b.and_(m_is_1, self.unit(g.sbn)), lambda: g.N, self.columns_axpy),
        ]
        tasks = {name: self.task(name, length, body) for name, _, length, body in paths}
        for name, applies, length, body in paths:
            with if_then(b, applies, f"gemv_{name}"):
                self.run(length(), body, tasks[name])
                b.ret_void()

    # -- the four shapes, over outputs [start, stop) ----------------------------------------
    def rows_dot(self, start, stop) -> None:
        g, b = self.g, self.b
        with counted_loop(b, start, stop, "gm") as m:
            self.store_dot(m, g.at(g.A, b.mul(m, g.sam)), g.B, b.mul(m, g.ldc), b.mul(m, g.ldx))

    def columns_dot(self, start, stop) -> None:
        g, b = self.g, self.b
        with counted_loop(b, start, stop, "gn") as n:
            self.store_dot(n, g.A, g.at(g.B, b.mul(n, g.sbn)), n, n)

    def rows_axpy(self, start, stop) -> None:
        g, b = self.g, self.b
        self.axpy(start, stop, g.ldx, lambda k: g.at(g.B, b.mul(k, g.sbk)), lambda k: g.at(g.A, b.mul(k, g.sak)))

    def columns_axpy(self, start, stop) -> None:
        g, b = self.g, self.b
        self.axpy(start, stop, self.one, lambda k: g.at(g.A, b.mul(k, g.sak)), lambda k: g.at(g.B, b.mul(k, g.sbk)))

    # -- splitting over the pool ------------------------------------------------------------
    def run(self, length, body, task) -> None:
        """``body(0, length)`` on this thread, or in ranges of outputs on the pool when the
        matrix has at least PARALLEL_ELEMENTS elements and the pool more than one thread."""
        g, b = self.g, self.b
        threads = b.load(_pool_size_global(g.module))
        large = b.icmp_signed(">=", b.mul(length, g.K), const_i64(PARALLEL_ELEMENTS))
        split = b.and_(large, b.icmp_signed(">", threads, self.one))
        with b.if_else(split) as (then, otherwise):
            with then:
                wanted = b.mul(threads, const_i64(TASKS_PER_THREAD))
                chunk = b.sdiv(b.add(length, b.sub(wanted, self.one)), wanted)
                chunk = b.mul(b.sdiv(b.add(chunk, const_i64(self.lanes - 1)), const_i64(self.lanes)),
                              const_i64(self.lanes))  # whole vectors per task
                count = b.sdiv(b.add(length, b.sub(chunk, self.one)), chunk)
                ctx = b.alloca(self.ctx_type)
                g.store_fields(ctx, list(g.fn.args) + [chunk, length])
                g.run_tasks(task, ctx, count, ll.Constant(ll.IntType(1), 1))
            with otherwise:
                body(const_i64(0), length)

    def task(self, name: str, length, body) -> ll.Function:
        """``task(ctx, t)``: ``body`` over outputs [t * chunk, min((t + 1) * chunk, length)),
        with the GEMM's arguments read from the context."""
        g = self.g
        self.ctx_type = ll.LiteralStructType([arg.type for arg in g.fn.args] + [I64, I64])
        saved = (g.b, g.M, g.N, g.K, g.A, g.sam, g.sak, g.B, g.sbk, g.sbn, g.C, g.ldc, g.X, g.ldx, self.x_slot
                 if hasattr(self, "x_slot") else None)
        fn, fields = g.task_function(f"gemv_{name}", self.ctx_type)
        (g.M, g.N, g.K, g.A, g.sam, g.sak, g.B, g.sbk, g.sbn, g.C, g.ldc, g.X, g.ldx, chunk, total) = fields
        b = self.b
        self.x_slot = b.alloca(self.t)
        start = b.mul(fn.args[1], chunk)
        stop = b.add(start, chunk)
        body(start, b.select(b.icmp_signed("<", stop, total), stop, total))
        b.ret_void()
        (g.b, g.M, g.N, g.K, g.A, g.sam, g.sak, g.B, g.sbk, g.sbn, g.C, g.ldc, g.X, g.ldx, self.x_slot) = saved
        return fn

    def unit(self, stride):
        return self.b.icmp_signed("==", stride, self.one)

    # -- pieces --------------------------------------------------------------------------
    def load_vector(self, pointer):
        return self.b.load(self.b.bitcast(pointer, self.vec.as_pointer()), align=self.g.size)

    def store_vector(self, value, pointer) -> None:
        self.b.store(value, self.b.bitcast(pointer, self.vec.as_pointer()), align=self.g.size)

    def addend(self, offset):
        """X[offset], or 0 without an addend."""
        g, b = self.g, self.b
        slot = self.x_slot
        b.store(ll.Constant(self.t, 0.0), slot)
        with if_then(b, b.not_(b.icmp_unsigned("==", g.X, ll.Constant(g.X.type, None))), "gemv_x"):
            b.store(b.load(g.at(g.X, offset)), slot)
        return b.load(slot)

    def store_dot(self, index, x, y, c_offset, x_offset) -> None:
        """C[c_offset] = sum_k x[k] * y[k] + X[x_offset] (x, y contiguous, K long)."""
        g, b = self.g, self.b
        step = self.lanes * ACCUMULATORS
        blocked = b.mul(b.sdiv(g.K, const_i64(step)), const_i64(step))
        vectors = b.mul(b.sdiv(g.K, const_i64(self.lanes)), const_i64(self.lanes))
        zero = ll.Constant(self.vec, [0.0] * self.lanes)

        def block(k, sums):
            return [b.call(g.fma, [self.load_vector(g.at(x, b.add(k, const_i64(j * self.lanes)))),
                                   self.load_vector(g.at(y, b.add(k, const_i64(j * self.lanes)))), total])
                    for j, total in enumerate(sums)]

        sums = carried_loop(b, const_i64(0), blocked, step, [zero] * ACCUMULATORS, block, "gk")
        (total,) = carried_loop(b, blocked, vectors, self.lanes, [sums[0]], lambda k, carried: [
            b.call(g.fma, [self.load_vector(g.at(x, k)), self.load_vector(g.at(y, k)), carried[0]])], "gkv")
        for other in sums[1:]:
            total = b.fadd(total, other)
        scalar = b.extract_element(total, ll.Constant(ll.IntType(32), 0))
        for lane in range(1, self.lanes):
            scalar = b.fadd(scalar, b.extract_element(total, ll.Constant(ll.IntType(32), lane)))
        (scalar,) = carried_loop(b, vectors, g.K, 1, [scalar], lambda k, carried: [
            b.fadd(carried[0], b.fmul(b.load(g.at(x, k)), b.load(g.at(y, k))))], "gks")
        b.store(b.fadd(scalar, self.addend(x_offset)), g.at(g.C, c_offset))

    def axpy(self, start, stop, x_stride, scale_at, vector_at) -> None:
        """C[i] = X[i * x_stride] (or 0), then C[i] += *scale_at(k) * vector_at(k)[i] for each
        k in order, for i in [start, stop) (C contiguous). Steps of K go AXPY_DEPTH at a
        time, so C is loaded and stored once per AXPY_DEPTH of them."""
        g, b = self.g, self.b
        with counted_loop(b, start, stop, "gi") as i:
            b.store(self.addend(b.mul(i, x_stride)), g.at(g.C, i))
        output = g.at(g.C, start)
        length = b.sub(stop, start)
        deep = b.mul(b.sdiv(g.K, const_i64(AXPY_DEPTH)), const_i64(AXPY_DEPTH))
        with counted_loop(b, 0, deep, "gk", step=AXPY_DEPTH) as k:
            steps = [b.add(k, const_i64(d)) if d else k for d in range(AXPY_DEPTH)]
            self.axpy_steps(output, length, [(b.load(scale_at(step)), g.at(vector_at(step), start))
                                             for step in steps])
        with counted_loop(b, deep, g.K, "gkt") as k:
            self.axpy_steps(output, length, [(b.load(scale_at(k)), g.at(vector_at(k), start))])

    def axpy_steps(self, output, length, terms: list) -> None:
        """output[0:length] += sum of scale * row[0:length] over ``terms`` [(scale, row)],
        added in order."""
        g, b = self.g, self.b
        splat_mask = ll.Constant(ll.VectorType(ll.IntType(32), self.lanes), [0] * self.lanes)
        splats = [b.shuffle_vector(b.insert_element(ll.Constant(self.vec, ll.Undefined), scale,
                                                    ll.Constant(ll.IntType(32), 0)),
                                   ll.Constant(self.vec, ll.Undefined), splat_mask) for scale, _ in terms]
        vectors = b.mul(b.sdiv(length, const_i64(self.lanes)), const_i64(self.lanes))
        with counted_loop(b, 0, vectors, "gv", step=self.lanes) as i:
            target = g.at(output, i)
            total = self.load_vector(target)
            for splat, (_, row) in zip(splats, terms):
                total = b.call(g.fma, [splat, self.load_vector(g.at(row, i)), total])
            self.store_vector(total, target)
        fma = self.scalar_fma()
        with counted_loop(b, vectors, length, "gt") as i:
            target = g.at(output, i)
            total = b.load(target)
            for scale, row in terms:
                total = b.call(fma, [scale, b.load(g.at(row, i)), total])
            b.store(total, target)

    def scalar_fma(self):
        from ..llvm_util import intrinsic

        name = "llvm.fma.f32" if self.t == ll.FloatType() else "llvm.fma.f64"
        return intrinsic(self.g.module, name, self.t, [self.t] * 3)


def carried_loop(b: ll.IRBuilder, start, stop, step: int, initial: list, body, name: str) -> list:
    """``for (k = start; k < stop; k += step) values = body(k, values)``, the values carried
    by phis (the runtime module skips LLVM's IR passes, so a value kept in an alloca would
    stay in memory); returns the final values."""
    preheader = b.block
    header = b.append_basic_block(f"{name}.head")
    body_block = b.append_basic_block(f"{name}.body")
    done = b.append_basic_block(f"{name}.exit")
    b.branch(header)
    b.position_at_end(header)
    k = b.phi(I64, name=name)
    k.add_incoming(start, preheader)
    carried = [b.phi(value.type) for value in initial]
    for phi, value in zip(carried, initial):
        phi.add_incoming(value, preheader)
    b.cbranch(b.icmp_signed("<", k, stop), body_block, done)
    b.position_at_end(body_block)
    updated = body(k, carried)
    k.add_incoming(b.add(k, const_i64(step), flags=["nsw"]), b.block)
    for phi, value in zip(carried, updated):
        phi.add_incoming(value, b.block)
    b.branch(header)
    b.position_at_end(done)
    return carried
