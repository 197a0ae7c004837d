"""The ``rng`` kernel: Philox-4x32-10 counter-based random numbers in LLVM IR.

Bit for bit the algorithm of docs/IR.md ("Random numbers") and ``tfc/ir/philox.py``:
element ``j`` (row-major) in round ``r`` uses counter ``(j mod 2^32, j div 2^32,
state mod 2^32, r)`` and key ``(seed0 mod 2^32, seed1 mod 2^32)`` (read from a constant the
entry passes in, so kernels do not depend on seeds); the uniform /
Box-Muller / truncated-normal transforms follow, in f32 for f16 and f32 results and in
f64 for f64. The state is read from the ref before the loop and stored back plus one.
"""
from __future__ import annotations

import math

import numpy as np
from llvmlite import ir as ll

from tfc import ir
from tfc.ir import philox

from ..llvm_util import F32, F64, I32, I64, call_intrinsic, const_i64, counted_loop

TWO_PI_F32 = float(np.float32(2.0 * math.pi))  # the f32 nearest to 2 pi, as philox.py uses
TWO_PI_F64 = 2.0 * math.pi


def _i32(value: int):
    return ll.Constant(I32, value % 2**32)

def _mulhilo(b: ll.IRBuilder, multiplier: int, value) -> tuple:
    """(high, low) u32 halves of the 64-bit product ``multiplier * value``."""
    product = b.mul(b.zext(value, I64), const_i64(multiplier))
    return b.trunc(b.lshr(product, const_i64(32)), I32), b.trunc(product, I32)

def round_keys(b: ll.IRBuilder, key: tuple) -> list:
    """The ten rounds' (k0, k1) from the i32 key values ``key``: the Weyl sequence, once."""
    k0, k1 = key
    keys = [(k0, k1)]
    for _ in range(philox.PHILOX_ROUNDS - 1):
        k0 = b.add(k0, _i32(philox.PHILOX_W0))
        k1 = b.add(k1, _i32(philox.PHILOX_W1))
        keys.append((k0, k1))
    return keys

def philox4x32(b: ll.IRBuilder, counter: list, keys: list) -> list:
    """Ten Philox rounds over four i32 counter words under the rounds' keys (``round_keys``)."""
    c0, c1, c2, c3 = counter
    for k0, k1 in keys:
        hi0, lo0 = _mulhilo(b, int(philox.PHILOX_M0), c0)
        hi1, lo1 = _mulhilo(b, int(philox.PHILOX_M1), c2)
        c0, c1, c2, c3 = b.xor(b.xor(hi1, c1), k0), lo1, b.xor(b.xor(hi0, c3), k1), lo0
    return [c0, c1, c2, c3]

# -- bits to floats ------------------------------------------------------------------------
def _uniform24(b: ll.IRBuilder, word, plus_one: bool = False):
    """``((word >> 8) [+ 1]) * 2^-24`` in f32."""
    bits = b.lshr(word, _i32(8))
    if plus_one:
        bits = b.add(bits, _i32(1))
    return b.fmul(b.uitofp(bits, F32), ll.Constant(F32, 2.0 ** -24))

def _uniform53(b: ll.IRBuilder, hi, lo, plus_one: bool = False):
    """``(((hi << 21) ^ (lo >> 11)) [+ 1]) * 2^-53`` in f64 (the shifts in u64)."""
    bits = b.xor(b.shl(b.zext(hi, I64), const_i64(21)), b.lshr(b.zext(lo, I64), const_i64(11)))
    if plus_one:
        bits = b.add(bits, const_i64(1))
    return b.fmul(b.uitofp(bits, F64), ll.Constant(F64, 2.0 ** -53))

def uniform(b: ll.IRBuilder, x: list, wide: bool):
    return _uniform53(b, x[0], x[1]) if wide else _uniform24(b, x[0])

def normal(b: ll.IRBuilder, x: list, wide: bool):
    """Box-Muller: ``sqrt(-2 log u1) * cos(2 pi u2)`` (f64 when ``wide``, else f32)."""
    if wide:
        u1, u2, t = _uniform53(b, x[0], x[1], plus_one=True), _uniform53(b, x[2], x[3]), F64
    else:
        u1, u2, t = _uniform24(b, x[0], plus_one=True), _uniform24(b, x[1]), F32
    two_pi = ll.Constant(t, TWO_PI_F64 if wide else TWO_PI_F32)
    radius = call_intrinsic(b, "sqrt", b.fmul(ll.Constant(t, -2.0), call_intrinsic(b, "log", u1)))
    return b.fmul(radius, call_intrinsic(b, "cos", b.fmul(two_pi, u2)))

# -- the kernel ----------------------------------------------------------------------------
class _Generator:
    """Emits the value of one element ``j`` for a distribution and result type."""

    def __init__(self, b: ll.IRBuilder, dist: str, elem: ir.ElemType, keys: list, state32):
        self.b = b
        self.dist = dist
        self.wide = elem is ir.ElemType.F64
        self.keys = keys
        self.state32 = state32

    def bits(self, j, round_index) -> list:
        b = self.b
        counter = [b.trunc(j, I32), b.trunc(b.lshr(j, const_i64(32)), I32), self.state32, round_index]
        return philox4x32(b, counter, self.keys)

    def value(self, j):
        if self.dist == "uniform":
            return uniform(self.b, self.bits(j, _i32(0)), self.wide)
        if self.dist == "normal":
            return normal(self.b, self.bits(j, _i32(0)), self.wide)
        return self.truncated_normal(j)

    def truncated_normal(self, j):
        """The normal of the first round whose ``|z| < 2``; 0 after 16 rejected rounds."""
        b = self.b
        t = F64 if self.wide else F32
        entry = b.block
        head = b.append_basic_block("round.head")
        body = b.append_basic_block("round.body")
        done = b.append_basic_block("round.done")
        b.branch(head)
        b.position_at_end(head)
        round_index = b.phi(I32, name="round")
        round_index.add_incoming(_i32(0), entry)
        b.cbranch(b.icmp_unsigned("<", round_index, _i32(philox.TRUNCATED_NORMAL_ROUNDS)), body, done)
        b.position_at_end(body)
        z = normal(b, self.bits(j, round_index), self.wide)
        accepted = b.fcmp_ordered("<", call_intrinsic(b, "fabs", z), ll.Constant(t, philox.TRUNCATION_BOUND))
        body_end = b.block
        round_index.add_incoming(b.add(round_index, _i32(1)), body_end)
        b.cbranch(accepted, done, head)
        b.position_at_end(done)
        result = b.phi(t, name="truncated")
        result.add_incoming(ll.Constant(t, 0.0), head)
        result.add_incoming(z, body_end)
        return result

def emit_rng(program, index: int, op: ir.Operation) -> None:
    """The key is data (a constant the entry passes in), not code: random ops that differ
    only in their seeds (a model's initializers) share one kernel."""
    state = op.operands[0]
    key = program.data_buffer(np.array(philox.rng_key(op.attrs["seed"]), dtype=np.uint32))
    kernel, buffers = program.new_kernel(op, [op.result, state], extra=[key])
    b = kernel.b
    elem = op.result.type.elem
    key_pointer = kernel.pro.bitcast(kernel.param(key), I32.as_pointer())
    key_words = (kernel.pro.load(key_pointer), kernel.pro.load(kernel.pro.gep(key_pointer, [const_i64(1)])))
    keys = round_keys(kernel.pro, key_words)
    state_pointer = kernel.pointer(state)
    before = b.load(state_pointer, name="state")
    generator = _Generator(b, op.attrs["dist"], elem, keys, b.trunc(before, I32))
    out = kernel.pointer(op.result)
    with counted_loop(b, 0, kernel.numel(op.result.type), "j") as j:
        kernel.scalar.store(generator.value(j), kernel.element_pointer(out, j), elem)
    b.store(b.add(before, const_i64(1)), state_pointer)
    program.call_kernel(kernel, buffers, index)

EMITTERS = {"rng": emit_rng}
