"""Direct convolution: an implicit GEMM whose micro-kernel reads the input where it lies.

For a conv over an NHWC input and an HWIO filter, one row of output (n, oh) is computed
panel by panel. A panel is MR consecutive output pixels by NV vectors of output channels,
accumulated in MR * NV vector registers:

    acc[i][v] += window[kh, (ow0 + i) * sw * C + j]  *  w[kh, j, col0 + v*VW : +VW]

over kh and j = kw * C + c. For one kh, the (kw, c) range a pixel reads is contiguous in
NHWC memory, so the j loop is one stream per pixel at a fixed distance from the first,
and the filter is read as it lies (HWIO is the [K, O] matrix of the GEMM). Before a row
is computed, the KH input rows it needs are copied with their zero padding into a small
per-task window buffer [KH, Wp, C] — KH * Wp * C elements moved for 2 * OW * O * KH * KW * C
flops — so the micro-kernel has no bounds checks. No im2col buffer, no packing; the
epilogue runs on each output row while it is hot in cache; rows are split across threads.

Applies to 2-D f32/f64 convs without feature groups or input dilation, with unit width
dilation, a static output width and output channels a static multiple of the vector
width (the register blocking depends on those two); the other sizes may be symbolic, as
the input channels are in a filter gradient, where they are the batch. Other convs use
the im2col or the plain loop kernels (contraction.py).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional

from llvmlite import ir as ll

from tfc import ir
from tfc.ir.dims import dim_mul, dims_product

from ..kernel import Index
from ..llvm_util import F32, F64, I8P, I64, const_i64, counted_loop, intrinsic

MAX_PANEL_PIXELS = 16  # beyond this the broadcast loads, not the FMAs, limit a panel
CACHED_FILTER_BYTES = 1 << 20  # larger filters are streamed: one kh at a time over many rows


@dataclass(frozen=True)
class ConvPlan:
    vector_width: int  # elements per vector register
    nv: int  # vectors of output channels per panel
    mr: int  # output pixels per panel
    panels: int  # panels per output row; the last one has last_mr pixels
    last_mr: int


def plan(core: ir.Operation, vector_bits: int) -> Optional[ConvPlan]:
    """The register blocking for ``core``, or None when the direct kernel does not apply."""
    x_type, w_type = (v.type for v in core.operands)
    out_type = core.result.type
    if out_type.rank != 4:  # two spatial dims only
        return None
    elem = out_type.elem
    if elem not in (ir.ElemType.F32, ir.ElemType.F64) or core.attrs.get("groups", 1) != 1:
        return None
    if list(core.attrs.get("lhs_dilation") or [1, 1]) != [1, 1]:
        return None
    if (core.attrs.get("rhs_dilation") or [1, 1])[1] != 1:
        return None
    if not all(isinstance(d, int) and d > 0 for d in out_type.shape[2:]):
        return None
    lanes = vector_bits // (elem.nbytes * 8)
    out_channels, out_width = out_type.shape[3], out_type.shape[2]
    if lanes < 2 or out_channels % lanes:
        return None
    registers = 32 if vector_bits >= 512 else 16
    nv = 2 if (out_channels // lanes) % 2 == 0 else 1
    cap = min(MAX_PANEL_PIXELS, (registers - nv - 2) // nv)
    panels = math.ceil(out_width / cap)
    mr = math.ceil(out_width / panels)
    return ConvPlan(lanes, nv, mr, panels, out_width - (panels - 1) * mr)


class DirectConv:
    def __init__(self, kernel, core, leaves, out, epilogue, conv_plan: ConvPlan):
        self.k = kernel
        self.core = core
        self.out = out
        self.epilogue = epilogue
        self.plan = conv_plan
        x_value, w_value = core.operands
        self.x = kernel.pointer(leaves[x_value])
        self.w = kernel.pointer(leaves[w_value])
        self.t = F32 if core.result.type.elem is ir.ElemType.F32 else F64
        self.size = core.result.type.elem.nbytes
        self.vec = ll.VectorType(self.t, conv_plan.vector_width)
        self.fma = intrinsic(kernel.module, f"llvm.fma.v{conv_plan.vector_width}{'f32' if self.t == F32 else 'f64'}",
                             self.vec, [self.vec] * 3)
        pro = kernel.pro
        _, self.H, self.W, self.C = kernel.shape(x_value.type)  # i64 values (constants when static)
        self.KH, self.KW, _, _ = kernel.shape(w_value.type)
        _, self.OH, _, _ = kernel.shape(core.result.type)
        self.OW, self.O = core.result.type.shape[2:]  # static (the plan requires it)
        self.sh, self.sw = list(core.attrs.get("strides") or [1, 1])
        padding = [list(p) for p in (core.attrs.get("padding") or [[0, 0], [0, 0]])]
        self.pad_top, self.pad_left = padding[0][0], padding[1][0]
        self.dh = (core.attrs.get("rhs_dilation") or [1, 1])[0]
        # Wp: the input columns a row of output reads; a window row holds Wp * C elements
        self.window_width = pro.add(const_i64((self.OW - 1) * self.sw), self.KW)
        self.window_row = pro.mul(self.window_width, self.C)
        self.depth = pro.mul(self.KW, self.C)  # the j range: (kw, c)
        self.pixel_step = pro.mul(const_i64(self.sw), self.C)  # window elements between output pixels

    def emit(self) -> None:
        k, b = self.k, self.k.b
        out_type = self.core.result.type
        w_shape = self.core.operands[1].type.shape
        work = dims_product([self.OW, self.O, w_shape[0], w_shape[1], w_shape[2]])
        begin, end = k.parallel_range(dim_mul(out_type.shape[0], out_type.shape[1]), work)
        stream = self.streams_filter()
        window_rows = const_i64(1) if stream else self.KH
        window_bytes = b.mul(b.mul(window_rows, self.window_row), const_i64(self.size))
        aligned_alloc = intrinsic(k.module, "aligned_alloc", I8P, [I64, I64])
        free = intrinsic(k.module, "free", ll.VoidType(), [I8P])
        rounded = b.and_(b.add(window_bytes, const_i64(64)), const_i64(-64))  # a multiple of 64, never 0
        raw = b.call(aligned_alloc, [const_i64(64), rounded])
        window = b.bitcast(raw, self.t.as_pointer())
        if stream:
            # kh outermost: the filter rows of one kh stay in cache across this task's rows;
            # the output accumulates across kh.
            with counted_loop(b, 0, self.KH, "skh") as kh:
                with counted_loop(b, begin, end, "nh") as nh:
                    self.output_row(window, nh, kh, const_i64(1), b.icmp_signed("!=", kh, const_i64(0)))
            if self.epilogue is not None:
                with counted_loop(b, begin, end, "enh") as nh:
                    self.apply_epilogue(nh)
        else:
            with counted_loop(b, begin, end, "nh") as nh:
                self.output_row(window, nh, const_i64(0), self.KH, ll.Constant(ll.IntType(1), 0))
                if self.epilogue is not None:
                    self.apply_epilogue(nh)
        b.call(free, [raw])

    def streams_filter(self) -> bool:
        """Whether the filter is too large (or of unknown size) to be re-read from cache for
        every output row: then kh is the outermost loop."""
        w_shape = self.core.operands[1].type.shape
        if not all(isinstance(d, int) for d in w_shape):
            return True
        return w_shape[0] * w_shape[1] * w_shape[2] * w_shape[3] * self.size > CACHED_FILTER_BYTES

    def output_row(self, window, nh, kh_first, kh_count, accumulate) -> None:
        """Row nh = (n, oh) of the output: its sums over filter rows [kh_first, +kh_count),
        added to what the row holds when ``accumulate``."""
        b = self.k.b
        n = b.sdiv(nh, self.OH)
        oh = b.srem(nh, self.OH)
        self.fill_window(window, n, oh, kh_first, kh_count)
        row_base = b.mul(nh, const_i64(self.OW * self.O))
        nr = self.plan.nv * self.plan.vector_width
        with counted_loop(b, 0, self.O // nr, "cp") as column_panel:
            col0 = b.mul(column_panel, const_i64(nr))
            full_panels = self.plan.panels - (0 if self.plan.last_mr == self.plan.mr else 1)
            with counted_loop(b, 0, full_panels, "px") as panel:
                ow0 = b.mul(panel, const_i64(self.plan.mr))
                self.micro_kernel(window, ow0, self.plan.mr, col0, row_base, kh_first, kh_count, accumulate)
            if self.plan.last_mr != self.plan.mr:
                ow0 = const_i64((self.plan.panels - 1) * self.plan.mr)
                self.micro_kernel(window, ow0, self.plan.last_mr, col0, row_base, kh_first, kh_count, accumulate)

    def fill_window(self, window, n, oh, kh_first, kh_count) -> None:
        """window[r, q, c] = x[n, oh*sh - pad_top + (kh_first + r)*dh, q - pad_left, c] for
        r < kh_count, 0 outside the input."""
        b = self.k.b
        zero = ll.Constant(self.t, 0.0)
        row_size = self.window_row
        left = b.mul(_min(b, const_i64(self.pad_left), self.window_width), self.C)  # left padding
        room = b.sub(self.window_width, const_i64(self.pad_left))
        copied = b.mul(_max(b, const_i64(0), _min(b, self.W, room)), self.C)  # read from the input
        with counted_loop(b, 0, kh_count, "wkh") as r:
            kh = b.add(kh_first, r)
            ih = b.add(b.sub(b.mul(oh, const_i64(self.sh)), const_i64(self.pad_top)), b.mul(kh, const_i64(self.dh)))
            inside = b.and_(b.icmp_signed(">=", ih, const_i64(0)), b.icmp_signed("<", ih, self.H))
            row = b.mul(r, row_size)
            with b.if_else(inside) as (then, otherwise):
                with then:
                    self._fill(window, row, const_i64(0), left, zero)
                    source = b.mul(b.add(b.mul(n, self.H), ih), b.mul(self.W, self.C))
                    with counted_loop(b, 0, copied, "wcp") as e:
                        value = b.load(b.gep(self.x, [b.add(source, e)], inbounds=True))
                        b.store(value, b.gep(window, [b.add(b.add(row, left), e)], inbounds=True))
                    self._fill(window, row, b.add(left, copied), row_size, zero)
                with otherwise:
                    self._fill(window, row, const_i64(0), row_size, zero)

    def _fill(self, window, row, start, stop, value) -> None:
        b = self.k.b
        with counted_loop(b, start, stop, "wz") as e:
            b.store(value, b.gep(window, [b.add(row, e)], inbounds=True))

    def micro_kernel(self, window, ow0, pixels: int, col0, row_base, kh_first, kh_count, accumulate) -> None:
        """out[row, ow0 + i, col0 + v*VW ...] (+)= the panel's sums over the window rows, for
        i < pixels, v < NV."""
        b, p = self.k.b, self.plan
        vec_ptr = self.vec.as_pointer()
        zero = ll.Constant(self.vec, [0.0] * p.vector_width)
        accumulators = b.alloca(ll.ArrayType(self.vec, pixels * p.nv))  # promoted to registers by SROA
        slots = [b.gep(accumulators, [const_i64(0), const_i64(i)], inbounds=True) for i in range(pixels * p.nv)]
        targets = []
        for i in range(pixels):
            pixel_row = b.add(row_base, b.mul(b.add(ow0, const_i64(i)), const_i64(self.O)))
            for v in range(p.nv):
                target = b.gep(self.out, [b.add(pixel_row, b.add(col0, const_i64(v * p.vector_width)))], inbounds=True)
                targets.append(b.bitcast(target, vec_ptr))
        for slot, target in zip(slots, targets):
            b.store(b.select(accumulate, b.load(target, align=self.size), zero), slot)
        undefined = ll.Constant(self.vec, ll.Undefined)
        splat_mask = ll.Constant(ll.VectorType(ll.IntType(32), p.vector_width), [0] * p.vector_width)
        with counted_loop(b, 0, kh_count, "ukh") as r:
            kh = b.add(kh_first, r)
            a_base = b.add(b.mul(r, self.window_row), b.mul(ow0, self.pixel_step))
            w_base = b.add(b.mul(b.mul(kh, self.depth), const_i64(self.O)), col0)
            with counted_loop(b, 0, self.depth, "uj") as j:
                w_row = b.add(w_base, b.mul(j, const_i64(self.O)))
                columns = [b.load(b.bitcast(b.gep(self.w, [b.add(w_row, const_i64(v * p.vector_width))],
                                                  inbounds=True), vec_ptr), align=self.size)
                           for v in range(p.nv)]
                a_column = b.add(a_base, j)
                for i in range(pixels):
                    offset = b.add(a_column, b.mul(const_i64(i), self.pixel_step))
                    scalar = b.load(b.gep(window, [offset], inbounds=True))
                    splat = b.shuffle_vector(b.insert_element(undefined, scalar, const_i64(0)), undefined, splat_mask)
                    for v in range(p.nv):
                        slot = slots[i * p.nv + v]
                        b.store(b.call(self.fma, [splat, columns[v], b.load(slot)]), slot)
        for slot, target in zip(slots, targets):
            b.store(b.load(slot), target, align=self.size)

    def apply_epilogue(self, nh) -> None:
        k, b = self.k, self.k.b
        elemental, root = self.epilogue
        n = b.sdiv(nh, self.OH)
        oh = b.srem(nh, self.OH)
        row_base = b.mul(nh, const_i64(self.OW * self.O))
        shape = k.shape(self.core.result.type)
        with counted_loop(b, 0, self.OW, "eow") as ow:
            pixel_row = b.add(row_base, b.mul(ow, const_i64(self.O)))
            with counted_loop(b, 0, self.O, "eo") as o:
                linear = b.add(pixel_row, o)
                index = Index(k, shape, multi=[n, oh, ow, o], linear=linear)
                k.scalar.store(elemental.gen(root, index), k.element_pointer(self.out, linear), root.type.elem)


def _min(b: ll.IRBuilder, x, y):
    return b.select(b.icmp_signed("<", x, y), x, y)


def _max(b: ll.IRBuilder, x, y):
    return b.select(b.icmp_signed(">", x, y), x, y)
