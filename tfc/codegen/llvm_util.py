"""Small llvmlite helpers: LLVM types for IR element types, counted loops, intrinsics."""
from __future__ import annotations

import contextlib

from llvmlite import ir as ll

from tfc.ir import ElemType

class CodegenError(Exception):
    """An IR construct this backend cannot compile (the message says which and why)."""


I1 = ll.IntType(1)
I8 = ll.IntType(8)
I32 = ll.IntType(32)
I64 = ll.IntType(64)
F16 = ll.HalfType()
F32 = ll.FloatType()
F64 = ll.DoubleType()
VOID = ll.VoidType()
I8P = I8.as_pointer()
I64P = I64.as_pointer()

_STORAGE = {
    ElemType.F16: F16, ElemType.F32: F32, ElemType.F64: F64, ElemType.I8: I8, ElemType.I16: ll.IntType(16),
    ElemType.I32: I32, ElemType.I64: I64, ElemType.U8: I8, ElemType.PRED: I8,
}


def storage_type(elem: ElemType):
    """How an element is stored in memory (pred as a byte, like numpy's bool)."""
    return _STORAGE[elem]


def register_type(elem: ElemType):
    """How an element is held in registers (pred as i1, f16 computed in f32)."""
    if elem is ElemType.PRED:
        return I1
    if elem is ElemType.F16:
        return F32
    return _STORAGE[elem]


def const_i64(value: int):
    return ll.Constant(I64, int(value))


def floor_div(b: ll.IRBuilder, numerator, denominator):
    """Python's ``//`` on i64 (rounds toward -inf; ``sdiv`` truncates toward zero), as dim
    expressions like ``(s0-2)//2+1`` mean it."""
    zero = const_i64(0)
    quotient = b.sdiv(numerator, denominator)
    remainder = b.srem(numerator, denominator)
    signs_differ = b.icmp_signed("!=", b.icmp_signed("<", remainder, zero), b.icmp_signed("<", denominator, zero))
    inexact = b.icmp_signed("!=", remainder, zero)
    return b.sub(quotient, b.zext(b.and_(inexact, signs_differ), I64))


def interleave_hint(module: ll.Module, count: int):
    """Loop metadata asking LLVM's vectoriser to interleave ``count`` vector iterations
    (one self-referential loop ID per module and count, so equal kernels keep equal text)."""
    hints = module.__dict__.setdefault("_tfc_interleave_hints", {})
    if count not in hints:
        setting = module.add_metadata([ll.MetaDataString(module, "llvm.loop.interleave.count"), ll.Constant(I32, count)])
        loop_id = module.add_metadata([setting])
        loop_id.operands = (loop_id, setting)  # a loop ID names itself first
        hints[count] = loop_id
    return hints[count]


@contextlib.contextmanager
def counted_loop(b: ll.IRBuilder, start, stop, name: str = "i", step=1, hint=None):
    """``for (i = start; i < stop; i += step)``; yields the induction variable. ``step``
    is an int or a positive i64 value; ``hint``: loop metadata for the back edge."""
    start = const_i64(start) if isinstance(start, int) else start
    stop = const_i64(stop) if isinstance(stop, int) else stop
    preheader = b.block
    header = b.append_basic_block(f"{name}.head")
    body = b.append_basic_block(f"{name}.body")
    exit_block = b.append_basic_block(f"{name}.exit")
    b.branch(header)
    b.position_at_end(header)
    index = b.phi(I64, name=name)
    index.add_incoming(start, preheader)
    b.cbranch(b.icmp_signed("<", index, stop), body, exit_block)
    b.position_at_end(body)
    yield index
    step = const_i64(step) if isinstance(step, int) else step
    following = b.add(index, step, name=f"{name}.next", flags=["nsw"])
    index.add_incoming(following, b.block)
    back_edge = b.branch(header)
    if hint is not None:
        back_edge.set_metadata("llvm.loop", hint)
    b.position_at_end(exit_block)


@contextlib.contextmanager
def if_then(b: ll.IRBuilder, condition, name: str = "if"):
    then_block = b.append_basic_block(f"{name}.then")
    end_block = b.append_basic_block(f"{name}.end")
    b.cbranch(condition, then_block, end_block)
    b.position_at_end(then_block)
    yield
    if not b.block.is_terminated:
        b.branch(end_block)
    b.position_at_end(end_block)


def intrinsic(module: ll.Module, name: str, return_type, arg_types):
    """Declare (once) and return an LLVM intrinsic or C library function."""
    existing = module.globals.get(name)
    if existing is not None:
        return existing
    fn_type = ll.FunctionType(return_type, list(arg_types))
    return ll.Function(module, fn_type, name=name)


def type_suffix(t) -> str:
    if isinstance(t, ll.FloatType):
        return "f32"
    if isinstance(t, ll.DoubleType):
        return "f64"
    if isinstance(t, ll.HalfType):
        return "f16"
    return f"i{t.width}"


def call_intrinsic(b: ll.IRBuilder, base: str, *args, return_type=None):
    """Call ``llvm.<base>.<type>`` with the type of the first argument."""
    t = args[0].type
    fn = intrinsic(b.module, f"llvm.{base}.{type_suffix(t)}", return_type or t, [a.type for a in args])
    return b.call(fn, list(args))
