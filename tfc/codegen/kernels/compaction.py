"""Kernels for the scan ops ``compact`` and ``first_occurrence`` (tfc/ir/ops.py).

Each result element depends on the elements before it, so both run as one sequential
loop (a single task: no thread-pool split). They are the compiled half of the ops whose
output sizes depend on the values (tf.where, tf.unique, tf.dynamic_partition,
tf.setdiff1d: tfc/frontend/ops/bounded_kernels.py).

``first_occurrence`` keeps an open-addressing hash table of first positions (linear
probing, capacity a power of two at least twice n, from malloc and freed before the
kernel returns), so it is O(n) expected, like TF's Unique kernel's hash map. Values are
compared by value: floats hash their bits after adding +0.0 (so -0.0 and 0.0 share a
slot) and a NaN never matches, so each NaN is a first occurrence, as in TF.
"""
from __future__ import annotations

from llvmlite import ir as ll

from tfc import ir

from ..llvm_util import I1, I8P, I64, const_i64, counted_loop, if_then, intrinsic

_HASH_MULTIPLIER = 0x9E3779B97F4A7C15  # Fibonacci hashing: the golden ratio in 64 bits


def emit_compact(program, index: int, op: ir.Operation) -> None:
    """positions[k] = the k-th i with x[i] != 0; -1 after the last."""
    (x,) = op.operands
    kernel, buffers = program.new_kernel(op, [op.result, x])
    b, s = kernel.b, kernel.scalar
    count = kernel.numel(x.type)
    source, out = kernel.pointer(x), kernel.pointer(op.result)
    found = kernel.pro.alloca(I64)
    kernel.pro.store(const_i64(0), found)
    with counted_loop(b, 0, count, "i") as i:
        value = s.load(kernel.element_pointer(source, i), x.type.elem)
        with if_then(b, s.convert(value, x.type.elem, ir.ElemType.PRED), "nonzero"):
            k = b.load(found)
            b.store(i, kernel.element_pointer(out, k))
            b.store(b.add(k, const_i64(1)), found)
    with counted_loop(b, b.load(found), count, "pad") as j:
        b.store(const_i64(-1), kernel.element_pointer(out, j))
    program.call_kernel(kernel, buffers, index)


def _capacity(b: ll.IRBuilder, count):
    """The smallest power of two >= max(2 * count, 16)."""
    want = b.mul(count, const_i64(2))
    want = b.select(b.icmp_signed("<", want, const_i64(16)), const_i64(16), want)
    leading = b.call(intrinsic(b.module, "llvm.ctlz.i64", I64, [I64, I1]), [b.sub(want, const_i64(1)),
                                                                          ll.Constant(I1, 0)])
    return b.shl(const_i64(1), b.sub(const_i64(64), leading))


def _hash_bits(b: ll.IRBuilder, value, elem: ir.ElemType):
    """The value's bits as i64 (floats canonicalised: -0.0 becomes 0.0; f16 is held as f32)."""
    if elem is ir.ElemType.PRED:
        return b.zext(value, I64)
    if elem.is_float:
        value = b.fadd(value, ll.Constant(value.type, 0.0))
        width = 64 if isinstance(value.type, ll.DoubleType) else 32
        value = b.bitcast(value, ll.IntType(width))
    if value.type.width < 64:
        return b.zext(value, I64)
    return value


def _equal(b: ll.IRBuilder, x, y, elem: ir.ElemType):
    if elem.is_float:
        return b.fcmp_ordered("==", x, y)
    return b.icmp_unsigned("==", x, y)


def emit_first_occurrence(program, index: int, op: ir.Operation) -> None:
    """first[i] = the smallest j with x[j] == x[i] (a NaN is its own first occurrence)."""
    (x,) = op.operands
    elem = x.type.elem
    kernel, buffers = program.new_kernel(op, [op.result, x])
    b, s = kernel.b, kernel.scalar
    count = kernel.numel(x.type)
    source, out = kernel.pointer(x), kernel.pointer(op.result)
    capacity = _capacity(b, count)
    mask = b.sub(capacity, const_i64(1))
    malloc = intrinsic(kernel.module, "malloc", I8P, [I64])
    raw = b.call(malloc, [b.mul(capacity, const_i64(8))])
    table = b.bitcast(raw, I64.as_pointer())
    with counted_loop(b, 0, capacity, "clear") as slot:
        b.store(const_i64(-1), b.gep(table, [slot]))
    slot_var = kernel.pro.alloca(I64)
    with counted_loop(b, 0, count, "i") as i:
        value = s.load(kernel.element_pointer(source, i), elem)
        output = kernel.element_pointer(out, i)
        b.store(i, output)  # a NaN, and a value seen first here
        is_number = b.fcmp_ordered("ord", value, value) if elem.is_float else ll.Constant(I1, 1)
        with if_then(b, is_number, "number"):
            hashed = b.mul(_hash_bits(b, value, elem), const_i64(_HASH_MULTIPLIER))
            b.store(b.and_(b.lshr(hashed, const_i64(32)), mask), slot_var)
            probe = b.append_basic_block("probe")
            done = b.append_basic_block("probe.done")
            b.branch(probe)
            b.position_at_end(probe)
            slot = b.load(slot_var)
            entry = b.gep(table, [slot])
            held = b.load(entry)
            empty = b.icmp_signed("==", held, const_i64(-1))
            claim = b.append_basic_block("probe.claim")
            compare = b.append_basic_block("probe.compare")
            b.cbranch(empty, claim, compare)
            b.position_at_end(claim)
            b.store(i, entry)
            b.branch(done)
            b.position_at_end(compare)
            other = s.load(kernel.element_pointer(source, held), elem)
            same = _equal(b, other, value, elem)
            matched = b.append_basic_block("probe.match")
            advance = b.append_basic_block("probe.next")
            b.cbranch(same, matched, advance)
            b.position_at_end(matched)
            b.store(held, output)
            b.branch(done)
            b.position_at_end(advance)
            b.store(b.and_(b.add(slot, const_i64(1)), mask), slot_var)
            b.branch(probe)
            b.position_at_end(done)
    free = intrinsic(kernel.module, "free", ll.VoidType(), [I8P])
    b.call(free, [raw])
    program.call_kernel(kernel, buffers, index)


EMITTERS = {"compact": emit_compact, "first_occurrence": emit_first_occurrence}
