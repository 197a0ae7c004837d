"""Sliding-window kernels: ``reduce_window`` (pooling) and ``select_and_scatter`` (its
gradient for max pooling).

Both visit every window in row-major order of the windows' grid, and every position of
a window in row-major order; window position ``w`` of window ``o`` reads input element
``o * stride + w - low`` along each dim, or padding when that falls outside the input.
Padding is the reduction's identity, so it is simply skipped; ``select_and_scatter``
never selects it.

Pooling layouts (no window, stride or padding on the first and last dims: NHWC pooling)
take a faster path with the same results: batch entries split across threads, and the
last dim (channels) innermost, contiguous and vectorised — the window's positions are
visited once per output pixel, not once per output element.
"""
from __future__ import annotations

from llvmlite import ir as ll

from tfc import ir

from tfc.ir.dims import dims_product

from ..llvm_util import I1, I64, const_i64, counted_loop, if_then
from .accumulator import Accumulator
from .reduction import combine, identity
from .special import beats, in_range


def nest(kernel, extents: list, body, name: str, prefix: list = None) -> None:
    """Row-major loops over ``extents`` (ints or i64 values); ``body(multi_index)``."""
    prefix = prefix or []
    depth = len(prefix)
    if depth == len(extents):
        body(prefix)
        return
    with counted_loop(kernel.b, 0, extents[depth], f"{name}{depth}") as i:
        nest(kernel, extents, body, name, prefix + [i])


class Windows:
    """The window geometry of a window op over an operand of type ``t``."""

    def __init__(self, kernel, op: ir.Operation, t: ir.TensorType):
        rank = t.rank
        self.k = kernel
        self.window = list(op.attrs["window"])
        self.strides = list(op.attrs.get("strides") or [1] * rank)
        self.low = [p[0] for p in (op.attrs.get("padding") or [[0, 0]] * rank)]
        self.in_shape = kernel.shape(t)

    def visit(self, window_index: list, body) -> None:
        """``body(input multi-index, input linear index)`` for each non-padding position
        of the window at ``window_index``, in row-major window order."""
        def position(offsets: list) -> None:
            b = self.k.b
            coordinates = []
            inside = ll.Constant(I1, 1)
            for o, w, stride, low, size in zip(window_index, offsets, self.strides, self.low, self.in_shape):
                c = b.add(b.mul(o, const_i64(stride)), b.sub(w, const_i64(low)))
                inside = b.and_(inside, in_range(b, c, size))
                coordinates.append(c)
            with if_then(b, inside, "inside"):
                body(coordinates, self.k.linearize(coordinates, self.in_shape))

        nest(self.k, self.window, position, "w")


def pools_channels(op: ir.Operation, t: ir.TensorType) -> bool:
    """Whether the first and last dims are untouched by the window (NHWC-style pooling) and
    the elements are f32/f64: the channel-vectorised, batch-parallel path applies."""
    rank = t.rank
    window = list(op.attrs["window"])
    strides = list(op.attrs.get("strides") or [1] * rank)
    padding = [list(p) for p in (op.attrs.get("padding") or [[0, 0]] * rank)]
    untouched = all(window[d] == 1 and strides[d] == 1 and padding[d] == [0, 0] for d in (0, rank - 1))
    return rank >= 3 and untouched and t.elem in (ir.ElemType.F32, ir.ElemType.F64)


class ChannelRows:
    """Loops of the pooling path: batch entries (parallel), output pixels, window positions;
    rows of C contiguous channels at each."""

    def __init__(self, kernel, windows: Windows, grid_type: ir.TensorType):
        self.k = kernel
        self.windows = windows
        self.grid_shape = kernel.shape(grid_type)  # the windows' grid: output / source shape
        self.channels = self.grid_shape[-1]
        work = dims_product(list(grid_type.shape[1:]) + windows.window)
        self.begin, self.end = kernel.parallel_range(grid_type.shape[0], work)

    def pixels(self, body) -> None:
        """``body(n, pixel multi-index without n and c, grid row offset)`` for this task's pixels."""
        k = self.k
        with counted_loop(k.b, self.begin, self.end, "pn") as n:
            def pixel(middle: list) -> None:
                body(n, middle, k.linearize([n] + middle + [const_i64(0)], self.grid_shape))

            nest(k, self.grid_shape[1:-1], pixel, "pp")

    def positions(self, n, middle: list, body) -> None:
        """``body(input row offset)`` for each in-bounds window position of a pixel."""
        k, w = self.k, self.windows
        window_index = [n] + middle + [const_i64(0)]

        def position(offsets: list) -> None:
            b = k.b
            coordinates = [n]
            inside = ll.Constant(I1, 1)
            for axis, offset in enumerate(offsets, start=1):
                c = b.add(b.mul(window_index[axis], const_i64(w.strides[axis])), b.sub(offset, const_i64(w.low[axis])))
                inside = b.and_(inside, in_range(b, c, w.in_shape[axis]))
                coordinates.append(c)
            with if_then(b, inside, "inside"):
                body(k.linearize(coordinates + [const_i64(0)], w.in_shape))

        nest(k, w.window[1:-1], position, "pw")


# -- reduce_window -------------------------------------------------------------------------
def emit_reduce_window(program, index: int, op: ir.Operation) -> None:
    """Each output element reduces its window in a register (f16 in f32, rounded once)."""
    x = op.operands[0]
    if pools_channels(op, x.type):
        return _pool_channels(program, index, op)
    kernel, buffers = program.new_kernel(op, [op.result, x])
    b, s = kernel.b, kernel.scalar
    kind, elem = op.attrs["op"], x.type.elem
    windows = Windows(kernel, op, x.type)
    source, out = kernel.pointer(x), kernel.pointer(op.result)
    out_shape = kernel.shape(op.result.type)
    acc_slot = kernel.pro.alloca(identity(kind, elem, s).type)

    def accumulate(coordinates, linear) -> None:
        value = s.load(kernel.element_pointer(source, linear), elem)
        b.store(combine(kernel, kind, elem, b.load(acc_slot), value), acc_slot)

    def output_element(multi: list) -> None:
        b.store(identity(kind, elem, s), acc_slot)
        windows.visit(multi, accumulate)
        s.store(b.load(acc_slot), kernel.element_pointer(out, kernel.linearize(multi, out_shape)), elem)

    nest(kernel, out_shape, output_element, "o")
    program.call_kernel(kernel, buffers, index)


def _pool_channels(program, index: int, op: ir.Operation) -> None:
    """out[n, pixel, :] = identity, then combined with each in-bounds window row of x."""
    x = op.operands[0]
    kernel, buffers = program.new_kernel(op, [op.result, x])
    b, s = kernel.b, kernel.scalar
    kind, elem = op.attrs["op"], x.type.elem
    rows = ChannelRows(kernel, Windows(kernel, op, x.type), op.result.type)
    source, out = kernel.pointer(x), kernel.pointer(op.result)

    def pixel(n, middle, out_row) -> None:
        with counted_loop(b, 0, rows.channels, "pi") as c:
            s.store(identity(kind, elem, s), kernel.element_pointer(out, b.add(out_row, c)), elem)

        def position(in_row) -> None:
            with counted_loop(b, 0, rows.channels, "pc") as c:
                target = kernel.element_pointer(out, b.add(out_row, c))
                value = s.load(kernel.element_pointer(source, b.add(in_row, c)), elem)
                s.store(combine(kernel, kind, elem, s.load(target, elem), value), target, elem)

        rows.positions(n, middle, position)

    rows.pixels(pixel)
    program.call_kernel(kernel, buffers, index)


# -- select_and_scatter --------------------------------------------------------------------
def emit_select_and_scatter(program, index: int, op: ir.Operation) -> None:
    """Zeros shaped like x; each source element is added at its window's first maximum
    (NaN is the maximum; padding never wins; an all-padding window adds nothing). The
    adds happen in row-major source order, f16 accumulating in f32, as in the evaluator."""
    x, source = op.operands
    if pools_channels(op, x.type):
        return _scatter_channels(program, index, op)
    kernel, buffers = program.new_kernel(op, [op.result, x, source])
    b, s = kernel.b, kernel.scalar
    elem = x.type.elem
    windows = Windows(kernel, op, x.type)
    values, gradients = kernel.pointer(x), kernel.pointer(source)
    source_shape = kernel.shape(source.type)
    acc = Accumulator(kernel, kernel.pointer(op.result), elem, kernel.numel(x.type))
    with counted_loop(b, 0, acc.count, "zero") as i:
        acc.store(i, s.constant(0, acc.elem))
    found_slot = kernel.pro.alloca(I1)
    best_slot = kernel.pro.alloca(s.constant(0, elem).type)
    position_slot = kernel.pro.alloca(I64)

    def candidate(coordinates, linear) -> None:
        value = s.load(kernel.element_pointer(values, linear), elem)
        found, best = b.load(found_slot), b.load(best_slot)
        take = b.or_(b.not_(found), beats(b, ">", elem, value, best))
        b.store(b.select(take, value, best), best_slot)
        b.store(b.select(take, linear, b.load(position_slot)), position_slot)
        b.store(ll.Constant(I1, 1), found_slot)

    def scatter(multi: list) -> None:
        b.store(ll.Constant(I1, 0), found_slot)
        b.store(const_i64(0), position_slot)
        windows.visit(multi, candidate)
        with if_then(b, b.load(found_slot), "selected"):
            gradient = s.load(kernel.element_pointer(gradients, kernel.linearize(multi, source_shape)), elem)
            acc.add(b.load(position_slot), gradient)

    nest(kernel, source_shape, scatter, "s")
    acc.finish()
    program.call_kernel(kernel, buffers, index)


def _tiles_exactly(op: ir.Operation) -> bool:
    """Whether the windows tile the operand: strides equal to the window, no padding, and
    each dim the source's times the window (every element in exactly one window)."""
    x, source = op.operands
    window = list(op.attrs["window"])
    padding = op.attrs.get("padding") or [[0, 0]] * len(window)
    strides = list(op.attrs.get("strides") or [1] * len(window))
    return strides == window and all(low == 0 and high == 0 for low, high in padding) and all(
        d == s if w == 1 else isinstance(d, int) and isinstance(s, int) and d == s * w
        for d, s, w in zip(x.type.shape, source.type.shape, window))


def _scatter_channels(program, index: int, op: ir.Operation) -> None:
    """Per batch entry: zero its part of the result, then for each window (row-major), one
    pass over its rows finds every channel's maximum, and a second adds the source row at
    each channel's first position holding it. Both passes run along contiguous channels
    (vector loads, compares and blends; no per-channel indirect stores). The first position
    holding the maximum is the one the first-maximum rule selects: an earlier equal value
    would have been kept as the maximum; a NaN maximum is the first NaN.

    Windows that tile the operand exactly (a 2x2/2 pool of an even-sized image) write each
    element once, the gradient or 0: no zeroing pass, no read of the result."""
    x, source = op.operands
    kernel, buffers = program.new_kernel(op, [op.result, x, source])
    b, s = kernel.b, kernel.scalar
    elem = x.type.elem
    rows = ChannelRows(kernel, Windows(kernel, op, x.type), source.type)
    values, gradients, out = kernel.pointer(x), kernel.pointer(source), kernel.pointer(op.result)
    tiles = _tiles_exactly(op)
    if not tiles:
        per_entry = kernel.numel(x.type.with_shape(x.type.shape[1:]))
        with counted_loop(b, b.mul(rows.begin, per_entry), b.mul(rows.end, per_entry), "sz") as i:
            s.store(s.constant(0, elem), kernel.element_pointer(out, i), elem)
    best = kernel.pro.alloca(s.constant(0, elem).type, size=rows.channels)
    taken = kernel.pro.alloca(ll.IntType(8), size=rows.channels)
    found_slot = kernel.pro.alloca(I1)

    def window(n, middle, source_row) -> None:
        b.store(ll.Constant(I1, 0), found_slot)

        def maximum(in_row) -> None:
            found = b.load(found_slot)
            with counted_loop(b, 0, rows.channels, "sc") as c:
                value = s.load(kernel.element_pointer(values, b.add(in_row, c)), elem)
                best_slot = b.gep(best, [c], inbounds=True)
                current = b.load(best_slot)
                take = b.or_(b.not_(found), beats(b, ">", elem, value, current))
                b.store(b.select(take, value, current), best_slot)
            b.store(ll.Constant(I1, 1), found_slot)

        def scatter(in_row) -> None:
            with counted_loop(b, 0, rows.channels, "sa") as c:
                value = s.load(kernel.element_pointer(values, b.add(in_row, c)), elem)
                maximum_value = b.load(b.gep(best, [c], inbounds=True))
                taken_slot = b.gep(taken, [c], inbounds=True)
                already = b.icmp_unsigned("!=", b.load(taken_slot), ll.Constant(ll.IntType(8), 0))
                both_nan = b.and_(b.fcmp_unordered("uno", value, value),
                                  b.fcmp_unordered("uno", maximum_value, maximum_value))
                holds = b.or_(b.fcmp_ordered("==", value, maximum_value), both_nan)
                hit = b.and_(b.not_(already), holds)
                target = kernel.element_pointer(out, b.add(in_row, c))
                gradient = s.load(kernel.element_pointer(gradients, b.add(source_row, c)), elem)
                if tiles:
                    s.store(b.select(hit, gradient, s.constant(0, elem)), target, elem)
                else:
                    old = s.load(target, elem)
                    s.store(b.select(hit, b.fadd(old, gradient), old), target, elem)
                b.store(b.zext(b.or_(already, hit), ll.IntType(8)), taken_slot)

        rows.positions(n, middle, maximum)
        with if_then(b, b.load(found_slot), "selected"):
            with counted_loop(b, 0, rows.channels, "st") as c:
                b.store(ll.Constant(ll.IntType(8), 0), b.gep(taken, [c], inbounds=True))
            rows.positions(n, middle, scatter)

    rows.pixels(window)
    program.call_kernel(kernel, buffers, index)


EMITTERS = {"reduce_window": emit_reduce_window, "select_and_scatter": emit_select_and_scatter}
