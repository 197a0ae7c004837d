"""Contraction kernels for a GPU thread grid: dot and conv, alone or with a fused epilogue.

Same contract as the CPU's ``kernels/contraction.py`` (``emit(program, index, op)`` for a
``dot``, a ``conv`` or an output fusion holding one of them and an elementwise epilogue),
but shaped for a grid of threads instead of a few CPU cores: ``kernel.parallel_range``
declares many small independent *work items*, and the GPU runs one item per thread
(``begin = i, end = i + 1``; on the CPU the same kernel runs its items in a loop). The
body of an item is straight-line scalar code and loops: no calls but LLVM intrinsics
(``llvm.fma``), no heap, no thread pool, no globals; its accumulators are scalar
``alloca``s that SROA turns into registers.

Each item sums its outputs over the contracting index in increasing order (with one
``fma`` per step for floats), so results do not depend on the grid. f16 accumulates in
f32 and is rounded once, as the evaluator does (see ``kernels/accumulator.py``); integer
sums wrap in their own type, as numpy's do. The epilogue is evaluated per stored element
by a fresh ``Elemental`` whose ``overrides[core.result]`` is the (rounded) accumulator.
"""
from __future__ import annotations

import contextlib

from tfc import ir
from tfc.ir.dims import dim_ceildiv, dim_mul, dims_product

from ..kernel import Elemental, Index
from ..kernels.contraction import contraction_body, flat_offset, split_flat
from ..llvm_util import CodegenError, call_intrinsic, const_i64, counted_loop, if_then, register_type

TILE_M = 4  # rows of a dot's register tile
TILE_N = 4  # columns of a dot's register tile
TILE_O = 4  # output channels per conv work item


def emit(program, index: int, op: ir.Operation) -> None:
    """Emit and call the kernel computing ``op`` (a dot, a conv or an output fusion)."""
    core, root, leaves = contraction_body(op)
    what = f"'{op.name}'" + (f" ({core.name} output fusion)" if op is not core else "")
    for operand in core.operands:
        if operand not in leaves:
            raise CodegenError(f"GPU contraction {what}: the operands of a fused {core.name} must be "
                               "materialised buffers")
    if root.type.elem != core.result.type.elem:
        raise CodegenError(f"GPU contraction {what}: a {core.name} epilogue may not change the element type "
                           f"({core.result.type.elem.value} -> {root.type.elem.value})")
    if list(root.type.shape) != list(core.result.type.shape):
        raise CodegenError(f"GPU contraction {what}: the epilogue must keep the {core.name}'s shape "
                           f"({core.result.type} -> {root.type})")
    from . import gemm

    if gemm.applies(core):
        gemm.emit(program, index, op, core, root, leaves)
        return
    kernel, params = program.new_kernel(op, [op.result] + list(op.operands))
    kind = _TiledDot if core.name == "dot" else _DirectConv
    kind(kernel, core, root, leaves, kernel.pointer(op.result)).emit()
    program.call_kernel(kernel, params, index)


def _tile(extent, preferred: int) -> int:
    """The tile size along a dim of ``extent``: ``preferred``, or the extent when it is a
    smaller static number (a 1-row dot then wastes no lanes of its tile)."""
    if isinstance(extent, int):
        return max(1, min(preferred, extent))
    return preferred


class _Contraction:
    """What dot and conv kernels share: accumulators, the multiply-add, the epilogue."""

    def __init__(self, kernel, core, root, leaves, out):
        self.k = kernel
        self.core = core
        self.root = root
        self.leaves = leaves
        self.out = out
        self.elem = core.result.type.elem
        self.out_shape = kernel.shape(core.result.type)

    def accumulators(self, count: int) -> list:
        """``count`` scalar slots in the entry block (SROA promotes them to registers)."""
        return [self.k.pro.alloca(register_type(self.elem), name=f"acc{i}") for i in range(count)]

    def load(self, pointer, linear):
        """An operand element in registers (f16 widened to f32)."""
        return self.k.scalar.load(self.k.element_pointer(pointer, linear), self.elem)

    def multiply_add(self, slot, x, y) -> None:
        """``*slot += x * y``: one fused multiply-add for floats (f16 in f32: the product of
        two halves is exact in f32), wrapping integer arithmetic otherwise."""
        b = self.k.b
        acc = b.load(slot)
        total = call_intrinsic(b, "fma", x, y, acc) if self.elem.is_float else b.add(acc, b.mul(x, y))
        b.store(total, slot)

    def clamp(self, position, extent):
        """min(position, extent - 1): an index that is always safe to load from (callers
        only run when extent >= 1); tails load a valid element and discard its product."""
        b = self.k.b
        last = b.sub(extent, const_i64(1))
        return b.select(b.icmp_signed("<", position, extent), position, last)

    def store(self, slot, multi: list, linear) -> None:
        """Round the accumulator, apply the epilogue at ``multi`` and store it at ``linear``."""
        k = self.k
        value = k.b.load(slot)
        if self.elem is ir.ElemType.F16:
            value = k.scalar.convert(value, ir.ElemType.F32, ir.ElemType.F16)  # round once
        if self.root is not self.core.result:
            # A fresh Elemental per element: its memo must not reuse values computed in
            # another element's guarded block, which does not dominate this one.
            elemental = Elemental(k, self.leaves, {self.core.result: lambda index: value})
            value = elemental.gen(self.root, Index(k, self.out_shape, multi=multi, linear=linear))
        k.scalar.store(value, k.element_pointer(self.out, linear), self.root.type.elem)


def _strides(kernel, shape: list) -> list:
    """Row-major strides (i64, in the prologue) of a buffer of ``shape`` (i64 values)."""
    strides = [const_i64(1)] * len(shape)
    for i in range(len(shape) - 2, -1, -1):
        strides[i] = kernel.pro.mul(strides[i + 1], shape[i + 1])
    return strides


class _TiledDot(_Contraction):
    """Any dot (batch, contracting and free dims as ``_Dot`` in kernels/contraction.py
    reads ``batch`` and ``contract``): the lhs free dims flatten into rows ``m < M``, the
    rhs free dims into columns ``n < N``, the contracting dims into ``k``, and the output
    is ``[batch..., M, N]`` row-major.

    Work item ``i`` owns a TM x TN register tile: ``i = (batch * MT + mt) * NT + nt``
    with MT = ceil(M / TM), NT = ceil(N / TN); its rows are ``mt*TM + r`` (r < TM) and
    its columns ``nt + c*NT`` (c < TN). The column tiles interleave, so consecutive items
    (neighbouring threads of a warp) own neighbouring columns: for a contiguous rhs their
    loads of ``rhs[k, n]`` and stores of ``out[m, n]`` hit consecutive addresses
    (coalesced), while they share (broadcast) the TM lhs loads of each step. Every output
    element belongs to exactly one item: column n is ``nt = n mod NT, c = n div NT``, and
    ``c < TN`` because ``n < N <= TN * NT``.

    Per step of k the item loads TM lhs and TN rhs elements for TM * TN multiply-adds.
    Rows past M and columns past N (the tails) load a clamped, valid row or column and
    are not stored, so the inner loop has no branches."""

    def __init__(self, kernel, core, root, leaves, out):
        super().__init__(kernel, core, root, leaves, out)
        lhs, rhs = core.operands
        self.lhs = kernel.pointer(leaves[lhs])
        self.rhs = kernel.pointer(leaves[rhs])
        (lb, rb) = core.attrs.get("batch") or [[], []]
        (lc, rc) = core.attrs["contract"]
        self.lb, self.rb, self.lc, self.rc = list(lb), list(rb), list(lc), list(rc)
        self.lfree = [d for d in range(lhs.type.rank) if d not in lb and d not in lc]
        self.rfree = [d for d in range(rhs.type.rank) if d not in rb and d not in rc]
        self.lshape, self.rshape = kernel.shape(lhs.type), kernel.shape(rhs.type)
        self.lstride, self.rstride = _strides(kernel, self.lshape), _strides(kernel, self.rshape)
        # The batch, row, column and contraction extents as dims (ints when static).
        self.sizes = {name: dims_product(t.shape[d] for d in dims) for name, t, dims in
                      (("B", lhs.type, lb), ("M", lhs.type, self.lfree), ("N", rhs.type, self.rfree),
                       ("K", lhs.type, lc))}
        self.TM, self.TN = _tile(self.sizes["M"], TILE_M), _tile(self.sizes["N"], TILE_N)

    def split(self, flat, shape: list, dims: list) -> list:
        return split_flat(self.k, flat, shape, dims)

    def offset(self, flat, shape: list, strides: list, dims: list):
        return flat_offset(self.k, flat, shape, strides, dims)

    def emit(self) -> None:
        k, b = self.k, self.k.b
        TM, TN = self.TM, self.TN
        s = self.sizes
        M, N = k.dim(s["M"]), k.dim(s["N"])
        MT = k.pro.sdiv(k.pro.add(M, const_i64(TM - 1)), const_i64(TM))
        NT = k.pro.sdiv(k.pro.add(N, const_i64(TN - 1)), const_i64(TN))
        items = dims_product([s["B"], dim_ceildiv(s["M"], TM), dim_ceildiv(s["N"], TN)])
        begin, end = k.parallel_range(items, dim_mul(TM * TN, s["K"]))
        acc = self.accumulators(TM * TN)
        zero = k.scalar.constant(0, self.elem)
        with counted_loop(b, begin, end, "item") as item:
            nt = b.srem(item, NT)
            rest = b.sdiv(item, NT)
            mt, batch = b.srem(rest, MT), b.sdiv(rest, MT)
            bidx = self.split(batch, self.lshape, self.lb)
            lbase = self.offset(batch, self.lshape, self.lstride, self.lb)
            rbase = self.offset(batch, self.rshape, self.rstride, self.rb)
            rows = [b.add(b.mul(mt, const_i64(TM)), const_i64(r)) for r in range(TM)]
            cols = [b.add(nt, b.mul(NT, const_i64(c))) for c in range(TN)]
            lrows = [b.add(lbase, self.offset(self.clamp(m, M), self.lshape, self.lstride, self.lfree)) for m in rows]
            rcols = [b.add(rbase, self.offset(self.clamp(n, N), self.rshape, self.rstride, self.rfree)) for n in cols]
            for slot in acc:
                b.store(zero, slot)

            def step(loffset, roffset) -> None:
                xs = [self.load(self.lhs, b.add(row, loffset)) for row in lrows]
                ys = [self.load(self.rhs, b.add(col, roffset)) for col in rcols]
                for r, x in enumerate(xs):
                    for c, y in enumerate(ys):
                        self.multiply_add(acc[r * TN + c], x, y)

            self.contraction(step, const_i64(0), const_i64(0))
            orow = b.mul(batch, M)
            for r, m in enumerate(rows):
                with if_then(b, b.icmp_signed("<", m, M), "row"):
                    line = b.mul(b.add(orow, m), N)
                    for c, n in enumerate(cols):
                        with if_then(b, b.icmp_signed("<", n, N), "col"):
                            multi = bidx + self.split(m, self.lshape, self.lfree) + \
                                self.split(n, self.rshape, self.rfree)
                            self.store(acc[r * TN + c], multi, b.add(line, n))

    def contraction(self, step, loffset, roffset, depth: int = 0) -> None:
        """Loops over the contracting dims (the first outermost: the flat k increases);
        ``step(lhs offset, rhs offset)`` innermost."""
        b = self.k.b
        if depth == len(self.lc):
            step(loffset, roffset)
            return
        with counted_loop(b, 0, self.lshape[self.lc[depth]], f"k{depth}") as kk:
            lnext = b.add(loffset, b.mul(kk, self.lstride[self.lc[depth]]))
            rnext = b.add(roffset, b.mul(kk, self.rstride[self.rc[depth]]))
            self.contraction(step, lnext, rnext, depth + 1)


class _DirectConv(_Contraction):
    """A conv over k >= 1 spatial dims: a channels-last input ``[N, S1..Sk, C]`` and a
    filter ``[K1..Kk, Cg, O]``, with strides, padding, input (lhs) and filter (rhs)
    dilations and feature groups (``O / groups`` output channels per group read ``Cg``
    input channels each), as ``_Conv`` in kernels/contraction.py computes it, with the
    same index math.

    Work item ``i`` computes TO output channels of one output pixel:
    ``i = linear(n, o1..ok) * OC + oc`` with OC = ceil(O / TO), channels
    ``oc + t*OC`` (t < TO; each channel in exactly one item, as the dot's columns).
    Neighbouring threads own neighbouring channels: their filter loads ``w[k1..kk, ci, o]``
    and output stores are coalesced, and without groups they share the input load.

    The item sums over the window positions in row-major order (those whose input
    coordinate falls in the padding or between dilated input elements are skipped: they
    contribute zero) and the group's input channels, in that order. Channels past O load
    a clamped channel and are not stored."""

    def __init__(self, kernel, core, root, leaves, out):
        super().__init__(kernel, core, root, leaves, out)
        x, w = core.operands
        self.x = kernel.pointer(leaves[x])
        self.w = kernel.pointer(leaves[w])
        self.xs, self.ws = kernel.shape(x.type), kernel.shape(w.type)
        self.spatial = len(self.xs) - 2
        attrs = core.attrs
        self.strides = list(attrs.get("strides") or [1] * self.spatial)
        self.padding = [list(p) for p in (attrs.get("padding") or [[0, 0]] * self.spatial)]
        self.lhs_dil = list(attrs.get("lhs_dilation") or [1] * self.spatial)
        self.rhs_dil = list(attrs.get("rhs_dilation") or [1] * self.spatial)
        self.groups = attrs.get("groups", 1)
        self.TO = _tile(core.result.type.shape[-1], TILE_O)

    def emit(self) -> None:
        k, b = self.k, self.k.b
        TO = self.TO
        O = self.out_shape[-1]
        Cg = self.ws[-2]
        out_t, w_t = self.core.result.type, self.core.operands[1].type
        OC = k.pro.sdiv(k.pro.add(O, const_i64(TO - 1)), const_i64(TO))
        out_per_group = k.pro.sdiv(O, const_i64(self.groups))
        items = dims_product(list(out_t.shape[:-1]) + [dim_ceildiv(out_t.shape[-1], TO)])
        begin, end = k.parallel_range(items, dims_product([TO] + list(w_t.shape[:-1])))
        acc = self.accumulators(TO)
        zero = k.scalar.constant(0, self.elem)
        with counted_loop(b, begin, end, "item") as item:
            oc, pixel = b.srem(item, OC), b.sdiv(item, OC)
            pixel_index = k.delinearize(pixel, self.out_shape[:-1])  # [n, o1..ok]
            n, positions = pixel_index[0], pixel_index[1:]
            channels = [b.add(oc, b.mul(OC, const_i64(t))) for t in range(TO)]
            safe = [self.clamp(o, O) for o in channels]
            # The first input channel each output channel reads (its group's).
            if self.groups == 1:
                bases = [const_i64(0)] * TO
            else:
                bases = [b.mul(b.sdiv(o, out_per_group), Cg) for o in safe]
            for slot in acc:
                b.store(zero, slot)
            with contextlib.ExitStack() as window:
                inputs, taps = [], []
                for axis in range(self.spatial):
                    tap = window.enter_context(counted_loop(b, 0, self.ws[axis], f"k{axis}"))
                    index, valid = self.input_coordinate(positions[axis], tap, axis)
                    window.enter_context(if_then(b, valid, f"in{axis}"))
                    inputs.append(index)
                    taps.append(tap)
                xrow = b.mul(k.linearize([n] + inputs, self.xs[:-1]), self.xs[-1])
                wbase = b.mul(k.linearize(taps, self.ws[:self.spatial]), b.mul(Cg, O))
                with counted_loop(b, 0, Cg, "ci") as ci:
                    loaded = {}
                    wrow = b.add(wbase, b.mul(ci, O))
                    for t in range(TO):
                        if id(bases[t]) not in loaded:
                            loaded[id(bases[t])] = self.load(self.x, b.add(xrow, b.add(bases[t], ci)))
                        weight = self.load(self.w, b.add(wrow, safe[t]))
                        self.multiply_add(acc[t], loaded[id(bases[t])], weight)
            pixel_base = b.mul(pixel, O)
            for t, o in enumerate(channels):
                with if_then(b, b.icmp_signed("<", o, O), "chan"):
                    self.store(acc[t], pixel_index + [o], b.add(pixel_base, o))

    def input_coordinate(self, out_position, window_position, axis: int):
        """(input index, in-range flag) of an output position and a window offset, as
        ``_Conv.input_coordinate``: ``dilated = out * stride - pad_low + window * rhs_dil``
        lies on the lhs-dilated input, whose real elements sit at multiples of lhs_dil."""
        b = self.k.b
        dilated = b.add(b.sub(b.mul(out_position, const_i64(self.strides[axis])), const_i64(self.padding[axis][0])),
                        b.mul(window_position, const_i64(self.rhs_dil[axis])))
        size = self.xs[1 + axis]
        if self.lhs_dil[axis] == 1:
            valid = b.and_(b.icmp_signed(">=", dilated, const_i64(0)), b.icmp_signed("<", dilated, size))
            return dilated, valid
        step = const_i64(self.lhs_dil[axis])
        on_grid = b.icmp_signed("==", b.srem(dilated, step), const_i64(0))
        index = b.sdiv(dilated, step)
        valid = b.and_(on_grid, b.and_(b.icmp_signed(">=", dilated, const_i64(0)), b.icmp_signed("<", index, size)))
        return index, valid
