"""Contraction kernels: dot and conv, alone or with a fused elementwise epilogue.

The contraction accumulates into the output row by row (loop order m, k, n so the inner
loop runs along the output's contiguous dim and vectorises; or a dot product in a
register when the right operand is transposed), then the epilogue (bias, activation,
residual...) is applied to that row while it is hot in cache.
"""
from __future__ import annotations

import contextlib

from llvmlite import ir as ll

from tfc import ir
from tfc.ir.dims import dim_mul, dims_product

from ..kernel import Elemental, Index
from . import direct_conv
from ..llvm_util import F32, I8P, I64, CodegenError, const_i64, counted_loop, if_then, intrinsic, register_type

_FAST = ("contract",)


def contraction_body(op: ir.Operation) -> tuple:
    """(core dot/conv op, root value, {leaf: top-level value})."""
    if op.name == "fusion":
        region = op.regions[0]
        core = next(member for member in region.ops if member.name in ("dot", "conv"))
        return core, region.terminator.operands[0], dict(zip(region.args, op.operands))
    return op, op.result, {v: v for v in op.operands}


def emit(program, index: int, op: ir.Operation) -> None:
    core, root, leaves = contraction_body(op)
    for operand in core.operands:
        if operand not in leaves:
            raise CodegenError(f"the operands of a fused {core.name} must be materialised buffers")
    if root.type.elem != core.result.type.elem:
        raise CodegenError(f"a {core.name} epilogue may not change the element type")
    kernel, params = program.new_kernel(op, [op.result] + list(op.operands))
    out = kernel.pointer(op.result)
    elemental = Elemental(kernel, leaves)
    elemental.overrides[core.result] = lambda idx: kernel.scalar.load(
        kernel.element_pointer(out, idx.linear()), root.type.elem)
    epilogue = None if root is core.result else (elemental, root)
    conv_plan = direct_conv.plan(core, program.vector_bits) if core.name == "conv" else None
    if core.name == "dot":
        _Dot(kernel, core, leaves, out, epilogue).emit()
    elif conv_plan is not None:
        direct_conv.DirectConv(kernel, core, leaves, out, epilogue, conv_plan).emit()
    elif _Im2colConv.applies(core):
        _Im2colConv(kernel, core, leaves, out, epilogue).emit()
    else:
        _Conv(kernel, core, leaves, out, epilogue).emit()
    program.call_kernel(kernel, params, index)


def _strides(kernel, t: ir.TensorType) -> list:
    shape = kernel.shape(t)
    strides = [const_i64(1)] * len(shape)
    for i in range(len(shape) - 2, -1, -1):
        strides[i] = kernel.pro.mul(strides[i + 1], shape[i + 1])
    return strides


def split_flat(kernel, flat, shape: list, dims: list) -> list:
    """The per-dim indices of a flat (row-major) index over ``dims`` of an operand."""
    if len(dims) <= 1:
        return [flat] if dims else []
    return kernel.delinearize(flat, [shape[d] for d in dims])


def flat_offset(kernel, flat, shape: list, strides: list, dims: list):
    """The element offset, in an operand, of a flat index over some of its dims."""
    b = kernel.b
    total = const_i64(0)
    for index, d in zip(split_flat(kernel, flat, shape, dims), dims):
        total = b.add(total, b.mul(index, strides[d]))
    return total


class _Dot:
    """A general dot: any number of batch, free and contracting dims. The lhs free dims
    flatten into rows ``m``, the rhs free dims into columns ``n`` (the output is
    ``[batch..., m, n]`` row-major); the contracting dims are a loop nest."""

    def __init__(self, kernel, core, leaves, out, epilogue):
        self.k = kernel
        self.core = core
        self.out = out
        self.epilogue = epilogue
        self.lhs_value, self.rhs_value = core.operands
        self.lhs = kernel.pointer(leaves[self.lhs_value])
        self.rhs = kernel.pointer(leaves[self.rhs_value])
        self.elem = core.result.type.elem
        (lb, rb) = core.attrs.get("batch") or [[], []]
        (lc, rc) = core.attrs["contract"]
        lhs_t, rhs_t = self.lhs_value.type, self.rhs_value.type
        self.lfree = [d for d in range(lhs_t.rank) if d not in lb and d not in lc]
        self.rfree = [d for d in range(rhs_t.rank) if d not in rb and d not in rc]
        self.lb, self.rb, self.lc, self.rc = list(lb), list(rb), list(lc), list(rc)
        self.lshape, self.rshape = kernel.shape(lhs_t), kernel.shape(rhs_t)
        self.lstride, self.rstride = _strides(kernel, lhs_t), _strides(kernel, rhs_t)
        self.M = self.extent(self.lshape, self.lfree)
        self.N = self.extent(self.rshape, self.rfree)
        self.n_contiguous = self.rfree == [rhs_t.rank - 1]
        self.out_shape = kernel.shape(core.result.type)

    def extent(self, shape: list, dims: list):
        total = const_i64(1)
        for d in dims:
            total = self.k.pro.mul(total, shape[d])
        return total

    def split(self, flat, shape: list, dims: list) -> list:
        return split_flat(self.k, flat, shape, dims)

    def offset(self, flat, shape: list, strides: list, dims: list):
        return flat_offset(self.k, flat, shape, strides, dims)

    def contraction(self, body, loffset, roffset, depth: int = 0) -> None:
        """Loops over the contracting dims; ``body(lhs offset, rhs offset)`` innermost."""
        b = self.k.b
        if depth == len(self.lc):
            body(loffset, roffset)
            return
        with counted_loop(b, 0, self.lshape[self.lc[depth]], f"k{depth}") as kk:
            lnext = b.add(loffset, b.mul(kk, self.lstride[self.lc[depth]]))
            rnext = b.add(roffset, b.mul(kk, self.rstride[self.rc[depth]]))
            self.contraction(body, lnext, rnext, depth + 1)

    def emit(self) -> None:
        self.batch_loops([], const_i64(0), const_i64(0), const_i64(0))

    @property
    def uses_gemm(self) -> bool:
        """f32/f64 with one contracting dim and at most one free dim per side: packed GEMM."""
        return (self.elem in (ir.ElemType.F32, ir.ElemType.F64) and len(self.lc) == 1
                and len(self.lfree) <= 1 and len(self.rfree) <= 1)

    def batch_loops(self, batch: list, lbase, rbase, obatch) -> None:
        b = self.k.b
        depth = len(batch)
        if depth == len(self.lb):
            if self.uses_gemm:
                self.gemm(batch, lbase, rbase, obatch)
            else:
                self.rows(batch, lbase, rbase, obatch)
            return
        with counted_loop(b, 0, self.lshape[self.lb[depth]], f"b{depth}") as i:
            lnext = b.add(lbase, b.mul(i, self.lstride[self.lb[depth]]))
            rnext = b.add(rbase, b.mul(i, self.rstride[self.rb[depth]]))
            onext = b.add(b.mul(obatch, self.lshape[self.lb[depth]]), i)
            self.batch_loops(batch + [i], lnext, rnext, onext)

    def gemm(self, batch, lbase, rbase, obatch) -> None:
        """One batch entry through the packed GEMM routine, then the epilogue row by row; an
        epilogue that adds a bias row or a tensor of the output's shape is the routine's
        addend instead (added by each task as it stores its tiles)."""
        from .gemm import gemm_function

        k, b = self.k, self.k.b
        zero = const_i64(0)
        sam = self.lstride[self.lfree[0]] if self.lfree else zero
        sbn = self.rstride[self.rfree[0]] if self.rfree else zero
        K = self.lshape[self.lc[0]]
        routine = gemm_function(k.module, self.elem)
        c = k.element_pointer(self.out, b.mul(obatch, b.mul(self.M, self.N)))
        addend = self.addend(obatch)
        x, ldx = addend if addend is not None else (ll.Constant(c.type, None), zero)
        b.call(routine, [self.M, self.N, K, k.element_pointer(self.lhs, lbase), sam, self.lstride[self.lc[0]],
                         k.element_pointer(self.rhs, rbase), self.rstride[self.rc[0]], sbn, c, self.N, x, ldx])
        if self.epilogue is not None and addend is None:
            with counted_loop(b, 0, self.M, "m") as m:
                orow = b.mul(b.add(b.mul(obatch, self.M), m), self.N)
                self.apply_epilogue(batch, m, orow)

    def addend(self, obatch):
        """(pointer, row stride) of X when the epilogue is ``dot + X`` with X a bias (a
        vector along the output's last dim, broadcast) or a tensor of the output's own
        shape, read from memory; else None."""
        if self.epilogue is None or len(self.rfree) != 1 or len(self.lfree) > 1:
            return None
        elemental, root = self.epilogue
        producer = root.defining_op
        if producer is None or producer.name != "add" or root.type != self.core.result.type:
            return None
        a, b_ = producer.operands
        other = b_ if a is self.core.result else a if b_ is self.core.result else None
        if other is None or other is self.core.result:
            return None
        k = self.k
        if other in elemental.leaves and other.type == root.type:
            return k.element_pointer(k.pointer(elemental.leaves[other]), k.b.mul(obatch, k.b.mul(self.M, self.N))), \
                self.N
        bias_op = other.defining_op
        if bias_op is not None and bias_op.name == "broadcast" and bias_op.attrs["dims"] == [root.type.rank - 1]:
            vector = bias_op.operands[0]
            if vector in elemental.leaves and vector.type.rank == 1:
                return k.pointer(elemental.leaves[vector]), const_i64(0)
        return None

    def rows(self, batch, lbase, rbase, obatch) -> None:
        k, b = self.k, self.k.b
        s = k.scalar
        zero = s.constant(0, self.elem)
        with counted_loop(b, 0, self.M, "m") as m:
            orow = b.mul(b.add(b.mul(obatch, self.M), m), self.N)
            lrow = b.add(lbase, self.offset(m, self.lshape, self.lstride, self.lfree))
            if self.n_contiguous and self.elem is not ir.ElemType.F16:
                with counted_loop(b, 0, self.N, "n0") as n:
                    s.store(zero, k.element_pointer(self.out, b.add(orow, n)), self.elem)

                def axpy(loffset, roffset) -> None:
                    a = s.load(k.element_pointer(self.lhs, loffset), self.elem)
                    with counted_loop(b, 0, self.N, "n") as n:
                        target = k.element_pointer(self.out, b.add(orow, n))
                        x = s.load(k.element_pointer(self.rhs, b.add(roffset, n)), self.elem)
                        s.store(self.mul_add(s.load(target, self.elem), a, x), target, self.elem)

                self.contraction(axpy, lrow, rbase)
            else:
                self.dot_products(lrow, rbase, orow)
            if self.epilogue is not None:
                self.apply_epilogue(batch, m, orow)

    def dot_products(self, lrow, rbase, orow) -> None:
        k, b = self.k, self.k.b
        s = k.scalar
        acc_type = register_type(self.elem)
        acc = k.pro.alloca(acc_type)

        def multiply_add(loffset, roffset) -> None:
            x = s.load(k.element_pointer(self.lhs, loffset), self.elem)
            y = s.load(k.element_pointer(self.rhs, roffset), self.elem)
            b.store(self.mul_add(b.load(acc), x, y, exact_f16=False), acc)

        with counted_loop(b, 0, self.N, "n") as n:
            b.store(s.constant(0, self.elem), acc)
            rcol = b.add(rbase, self.offset(n, self.rshape, self.rstride, self.rfree))
            self.contraction(multiply_add, lrow, rcol)
            s.store(b.load(acc), k.element_pointer(self.out, b.add(orow, n)), self.elem)

    def mul_add(self, acc, x, y, exact_f16: bool = True):
        b = self.k.b
        if self.elem.is_float:
            total = b.fadd(acc, b.fmul(x, y, flags=_FAST), flags=_FAST)
            return self.k.scalar._round_f16(total, self.elem) if exact_f16 else total
        return b.add(acc, b.mul(x, y))

    def apply_epilogue(self, batch: list, m, orow) -> None:
        k, b = self.k, self.k.b
        elemental, root = self.epilogue
        rows = self.split(m, self.lshape, self.lfree)
        with counted_loop(b, 0, self.N, "e") as n:
            multi = list(batch) + rows + self.split(n, self.rshape, self.rfree)
            index = Index(k, self.out_shape, multi=multi, linear=b.add(orow, n))
            value = elemental.gen(root, index)
            k.scalar.store(value, k.element_pointer(self.out, b.add(orow, n)), root.type.elem)


class _Conv:
    """A conv over k >= 1 spatial dims (input [N, S1..Sk, C], filter [K1..Kk, Cg, O]), any
    groups, strides, padding and dilations: for each output pixel, its channels accumulate
    over the window positions (in row-major order, those in the padding or between
    lhs-dilated input elements skipped), the group's input channels and its outputs."""

    def __init__(self, kernel, core, leaves, out, epilogue):
        self.k = kernel
        self.core = core
        self.out = out
        self.epilogue = epilogue
        x_value, w_value = core.operands
        self.x = kernel.pointer(leaves[x_value])
        self.w = kernel.pointer(leaves[w_value])
        self.elem = core.result.type.elem
        self.xs = kernel.shape(x_value.type)
        self.ws = kernel.shape(w_value.type)
        self.os = kernel.shape(core.result.type)
        self.spatial = len(self.xs) - 2
        attrs = core.attrs
        self.strides = list(attrs.get("strides") or [1] * self.spatial)
        self.padding = [list(p) for p in (attrs.get("padding") or [[0, 0]] * self.spatial)]
        self.lhs_dil = list(attrs.get("lhs_dilation") or [1] * self.spatial)
        self.rhs_dil = list(attrs.get("rhs_dilation") or [1] * self.spatial)
        self.groups = attrs.get("groups", 1)
        self.row = None  # for f16: the output row being accumulated, in f32

    def slot(self, orow, channel) -> tuple:
        """(pointer, element type) where output channel ``channel`` of a row accumulates."""
        if self.row is not None:
            return self.k.b.gep(self.row, [channel], inbounds=True), ir.ElemType.F32
        return self.k.element_pointer(self.out, self.k.b.add(orow, channel)), self.elem

    def outer_range(self, stack: contextlib.ExitStack) -> tuple:
        """Loops over the output pixels: (n, [o1..ok]); the first two dims (n, o1) are the
        kernel's parallel range."""
        k, b = self.k, self.k.b
        out_type = self.core.result.type
        w_type = self.core.operands[1].type
        work = dims_product(list(out_type.shape[2:]) + list(w_type.shape[:-1]))
        begin, end = k.parallel_range(dim_mul(out_type.shape[0], out_type.shape[1]), work)
        nh = stack.enter_context(counted_loop(b, begin, end, "nh"))
        n, first = b.sdiv(nh, self.os[1]), b.srem(nh, self.os[1])
        positions = [first]
        for axis in range(1, self.spatial):
            positions.append(stack.enter_context(counted_loop(b, 0, self.os[1 + axis], f"o{axis}")))
        return n, positions

    def emit(self) -> None:
        k, b = self.k, self.k.b
        s = k.scalar
        O = self.os[-1]
        groups = const_i64(self.groups)
        out_per_group = k.pro.sdiv(O, groups)
        in_per_group = self.ws[-2]
        zero = s.constant(0, self.elem)
        if self.elem is ir.ElemType.F16:  # accumulate in f32 and round once, as the evaluator does
            self.row = k.pro.alloca(F32, size=O)
        with contextlib.ExitStack() as pixels:
            n, positions = self.outer_range(pixels)
            orow = b.mul(k.linearize([n] + positions, self.os[:-1]), O)
            with counted_loop(b, 0, O, "z") as o:
                s.store(zero, *self.slot(orow, o))
            with contextlib.ExitStack() as window:
                inputs, taps = [], []
                for axis in range(self.spatial):
                    tap = window.enter_context(counted_loop(b, 0, self.ws[axis], f"k{axis}"))
                    index, valid = self.input_coordinate(positions[axis], tap, axis)
                    window.enter_context(if_then(b, valid, f"in{axis}"))
                    inputs.append(index)
                    taps.append(tap)
                self.accumulate(n, inputs, taps, orow, groups, in_per_group, out_per_group)
            if self.row is not None:
                with counted_loop(b, 0, O, "round") as o:
                    s.store(s.load(*self.slot(orow, o)), k.element_pointer(self.out, b.add(orow, o)), self.elem)
            if self.epilogue is not None:
                elemental, root = self.epilogue
                with counted_loop(b, 0, O, "e") as o:
                    index = Index(k, self.os, multi=[n] + positions + [o], linear=b.add(orow, o))
                    k.scalar.store(elemental.gen(root, index), k.element_pointer(self.out, b.add(orow, o)),
                                   root.type.elem)

    def input_coordinate(self, out_position, window_position, axis: int):
        """(input index, in-range flag) for an output position and a window offset."""
        b = self.k.b
        dilated = b.add(b.sub(b.mul(out_position, const_i64(self.strides[axis])), const_i64(self.padding[axis][0])),
                        b.mul(window_position, const_i64(self.rhs_dil[axis])))
        size = self.xs[1 + axis]
        if self.lhs_dil[axis] == 1:
            index = dilated
            valid = b.and_(b.icmp_signed(">=", index, const_i64(0)), b.icmp_signed("<", index, size))
            return index, valid
        step = const_i64(self.lhs_dil[axis])
        on_grid = b.icmp_signed("==", b.srem(dilated, step), const_i64(0))
        index = b.sdiv(dilated, step)
        valid = b.and_(on_grid, b.and_(b.icmp_signed(">=", dilated, const_i64(0)), b.icmp_signed("<", index, size)))
        return index, valid

    def input_offset(self, n, inputs):
        """The element offset of input pixel (n, i1..ik)'s first channel."""
        return self.k.b.mul(self.k.linearize([n] + list(inputs), self.xs[:-1]), self.xs[-1])

    def accumulate(self, n, inputs, taps, orow, groups, in_per_group, out_per_group) -> None:
        k, b = self.k, self.k.b
        s = k.scalar
        O = self.os[-1]
        xrow = self.input_offset(n, inputs)
        wbase = b.mul(k.linearize(list(taps), self.ws[:self.spatial]), b.mul(in_per_group, O))
        with counted_loop(b, 0, groups, "g") as g:
            cbase = b.mul(g, in_per_group)
            obase = b.mul(g, out_per_group)
            with counted_loop(b, 0, in_per_group, "ci") as ci:
                a = s.load(k.element_pointer(self.x, b.add(xrow, b.add(cbase, ci))), self.elem)
                wrow = b.add(wbase, b.mul(ci, O))
                with counted_loop(b, 0, out_per_group, "co") as co:
                    channel = b.add(obase, co)
                    target, elem = self.slot(orow, channel)
                    weight = s.load(k.element_pointer(self.w, b.add(wrow, channel)), self.elem)
                    total = b.fadd(s.load(target, elem), b.fmul(a, weight, flags=_FAST), flags=_FAST)
                    s.store(total, target, elem)


class _Im2colConv(_Conv):
    """f32/f64 convs without feature groups as one GEMM per image: the image's patches
    are unrolled into rows (im2col, ``[O1*..*Ok, K1*..*Kk*C]`` in a per-call buffer), and
    the filter already is the ``[K1*..*Kk*C, O]`` matrix. Images are split across threads."""

    @staticmethod
    def applies(core) -> bool:
        return core.result.type.elem in (ir.ElemType.F32, ir.ElemType.F64) and core.attrs.get("groups", 1) == 1

    def emit(self) -> None:
        from .gemm import gemm_function

        k, b = self.k, self.k.b
        O = self.os[-1]
        out_type = self.core.result.type
        w_type = self.core.operands[1].type
        rows = const_i64(1)
        for d in self.os[1:-1]:
            rows = k.pro.mul(rows, d)
        depth = self.xs[-1]
        for d in self.ws[:self.spatial]:
            depth = k.pro.mul(depth, d)
        work = dims_product(list(out_type.shape[1:]) + list(w_type.shape[:-1]))
        begin, end = k.parallel_range(out_type.shape[0], work)
        t = register_type(self.elem)
        malloc = intrinsic(k.module, "malloc", I8P, [I64])
        free = intrinsic(k.module, "free", ll.VoidType(), [I8P])
        size = k.pro.mul(k.pro.mul(rows, depth), const_i64(self.elem.nbytes))
        raw = b.call(malloc, [b.select(b.icmp_signed("==", size, const_i64(0)), const_i64(1), size)])
        patches = b.bitcast(raw, t.as_pointer())
        with counted_loop(b, begin, end, "img") as n:
            self.unroll_patches(patches, n, depth)
            image_out = k.element_pointer(self.out, b.mul(b.mul(n, rows), O))
            b.call(gemm_function(k.module, self.elem), [rows, O, depth, patches, depth, const_i64(1), self.w, O,
                                                        const_i64(1), image_out, O,
                                                        ll.Constant(image_out.type, None), const_i64(0)])
            if self.epilogue is not None:
                self.apply_epilogue(n, rows)
        b.call(free, [raw])

    def unroll_patches(self, patches, n, depth) -> None:
        """patches[linear(o1..ok), linear(k1..kk)*C + c] = x[n, i1..ik, c] or 0 outside."""
        k, b = self.k, self.k.b
        C = self.xs[-1]
        zero = ll.Constant(register_type(self.elem), 0.0)
        with contextlib.ExitStack() as loops:
            positions = [loops.enter_context(counted_loop(b, 0, self.os[1 + axis], f"po{axis}"))
                         for axis in range(self.spatial)]
            row = b.mul(k.linearize(positions, self.os[1:-1]), depth)
            inputs, taps, valid = [], [], ll.Constant(ll.IntType(1), 1)
            for axis in range(self.spatial):
                tap = loops.enter_context(counted_loop(b, 0, self.ws[axis], f"pk{axis}"))
                index, inside = self.input_coordinate(positions[axis], tap, axis)
                inputs.append(index)
                taps.append(tap)
                valid = b.and_(valid, inside)
            target = b.add(row, b.mul(k.linearize(taps, self.ws[:self.spatial]), C))
            source = self.input_offset(n, inputs)
            with b.if_else(valid) as (inside, outside):
                with inside:
                    with counted_loop(b, 0, C, "pc") as c:
                        value = b.load(k.element_pointer(self.x, b.add(source, c)))
                        b.store(value, b.gep(patches, [b.add(target, c)], inbounds=True))
                with outside:
                    with counted_loop(b, 0, C, "pz") as c:
                        b.store(zero, b.gep(patches, [b.add(target, c)], inbounds=True))

    def apply_epilogue(self, n, rows) -> None:
        k, b = self.k, self.k.b
        O = self.os[-1]
        elemental, root = self.epilogue
        with counted_loop(b, 0, rows, "er") as r:
            orow = b.mul(b.add(b.mul(n, rows), r), O)
            positions = k.delinearize(r, self.os[1:-1]) if self.spatial > 1 else [r]
            with counted_loop(b, 0, O, "e") as o:
                index = Index(k, self.os, multi=[n] + positions + [o], linear=b.add(orow, o))
                k.scalar.store(elemental.gen(root, index), k.element_pointer(self.out, b.add(orow, o)),
                               root.type.elem)
