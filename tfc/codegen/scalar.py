"""Scalar semantics of the core elementwise ops in LLVM IR.

Exactly the conventions of tfc/ir/ops.py (checked against the evaluator in tests):
integer division/remainder never trap (x/0 = -1, rem(x, 0) = x, INT_MIN/-1 = INT_MIN),
max/min propagate NaN, round is half-to-even, float->int converts saturate with NaN -> 0.
f16 values are held in f32 registers and rounded back to f16 after every operation, as
the evaluator does. pred is i1 in registers and a byte in memory.
"""
from __future__ import annotations

from llvmlite import ir as ll

from tfc.ir import ElemType

from . import mathlib
from .llvm_util import F16, F32, F64, I1, I32, CodegenError, call_intrinsic, intrinsic, register_type, storage_type

_LIBM_F32 = {"tanh": "tanhf", "expm1": "expm1f", "log1p": "log1pf", "erf": "erff", "atan2": "atan2f"}
_LIBM_F64 = {"tanh": "tanh", "expm1": "expm1", "log1p": "log1p", "erf": "erf", "atan2": "atan2"}
_COMPARE_FLOAT = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}


class Scalar:
    """Emits scalar code for one element type at a time with an IRBuilder."""

    def __init__(self, builder: ll.IRBuilder):
        self.b = builder

    # -- memory -----------------------------------------------------------------------------
    def load(self, pointer, elem: ElemType):
        value = self.b.load(pointer)
        if elem is ElemType.PRED:
            return self.b.icmp_unsigned("!=", value, ll.Constant(value.type, 0))
        if elem is ElemType.F16:
            return self.b.fpext(value, F32)
        return value

    def store(self, value, pointer, elem: ElemType) -> None:
        if elem is ElemType.PRED:
            value = self.b.zext(value, storage_type(elem))
        elif elem is ElemType.F16:
            value = self.b.fptrunc(value, F16)
        self.b.store(value, pointer)

    def constant(self, number, elem: ElemType):
        t = register_type(elem)
        if elem is ElemType.PRED:
            return ll.Constant(I1, 1 if number else 0)
        if elem.is_float:
            return ll.Constant(t, float(number))
        bits = elem.bits
        value = int(number) & ((1 << bits) - 1)
        return ll.Constant(t, value)

    def _round_f16(self, value, elem: ElemType):
        if elem is ElemType.F16:
            return self.b.fpext(self.b.fptrunc(value, F16), F32)
        return value

    # -- elementwise ops ------------------------------------------------------------------
    def unary(self, name: str, elem: ElemType, x):
        if elem.is_float:
            return self._round_f16(self._unary_float(name, elem, x), elem)
        return self._unary_int(name, elem, x)

    def _libm(self, name: str, elem: ElemType, *args):
        table = _LIBM_F64 if elem is ElemType.F64 else _LIBM_F32
        t = F64 if elem is ElemType.F64 else F32
        fn = intrinsic(self.b.module, table[name], t, [t] * len(args))
        return self.b.call(fn, list(args))

    def _unary_float(self, name: str, elem: ElemType, x):
        b = self.b
        one = ll.Constant(x.type, 1.0)
        if name == "neg":
            return b.fneg(x)
        if name == "abs":
            return call_intrinsic(b, "fabs", x)
        if name == "sign":
            zero = ll.Constant(x.type, 0.0)
            positive = b.select(b.fcmp_ordered(">", x, zero), one, x)
            return b.select(b.fcmp_ordered("<", x, zero), ll.Constant(x.type, -1.0), positive)
        inline = mathlib.emit_unary(b, name, x)
        if inline is not None:
            return inline
        if name in ("exp", "log", "sqrt", "sin", "cos", "floor", "ceil"):
            return call_intrinsic(b, name, x)
        if name == "round":
            return call_intrinsic(b, "roundeven", x)
        if name == "rsqrt":
            return b.fdiv(one, call_intrinsic(b, "sqrt", x))
        if name == "logistic":
            return b.fdiv(one, b.fadd(one, call_intrinsic(b, "exp", b.fneg(x))))
        if name in ("tanh", "expm1", "log1p", "erf"):
            return self._libm(name, elem, x)
        raise CodegenError(f"no float lowering for unary op '{name}'")

    def _unary_int(self, name: str, elem: ElemType, x):
        b = self.b
        zero = ll.Constant(x.type, 0)
        if name == "not":
            return b.not_(x)
        if name == "neg":
            return b.neg(x)
        if name == "abs":
            if not elem.is_signed:
                return x
            return b.select(b.icmp_signed("<", x, zero), b.neg(x), x)
        if name == "sign":
            positive = b.zext(b.icmp_signed(">", x, zero), x.type)
            negative = b.zext(b.icmp_signed("<", x, zero), x.type)
            return b.sub(positive, negative)
        raise CodegenError(f"no integer lowering for unary op '{name}'")

    def binary(self, name: str, elem: ElemType, x, y):
        if elem.is_float:
            return self._round_f16(self._binary_float(name, elem, x, y), elem)
        if elem is ElemType.PRED:
            return self._binary_pred(name, x, y)
        return self._binary_int(name, elem, x, y)

    def _binary_float(self, name: str, elem: ElemType, x, y):
        b = self.b
        if name == "add":
            return b.fadd(x, y)
        if name == "sub":
            return b.fsub(x, y)
        if name == "mul":
            return b.fmul(x, y)
        if name == "div":
            return b.fdiv(x, y)
        if name == "rem":
            return b.frem(x, y)
        if name == "pow":
            return call_intrinsic(b, "pow", x, y)
        if name == "max":
            return call_intrinsic(b, "maximum", x, y)
        if name == "min":
            return call_intrinsic(b, "minimum", x, y)
        if name == "atan2":
            return self._libm("atan2", elem, x, y)
        raise CodegenError(f"no float lowering for binary op '{name}'")

    def _binary_pred(self, name: str, x, y):
        if name in ("and", "mul", "min"):
            return self.b.and_(x, y)
        if name in ("or", "add", "max"):
            return self.b.or_(x, y)
        if name == "xor":
            return self.b.xor(x, y)
        raise CodegenError(f"no pred lowering for binary op '{name}'")

    def _binary_int(self, name: str, elem: ElemType, x, y):
        b = self.b
        signed = elem.is_signed
        if name == "add":
            return b.add(x, y)
        if name == "sub":
            return b.sub(x, y)
        if name == "mul":
            return b.mul(x, y)
        if name == "and":
            return b.and_(x, y)
        if name == "or":
            return b.or_(x, y)
        if name == "xor":
            return b.xor(x, y)
        if name == "max":
            return b.select(b.icmp_signed(">", x, y) if signed else b.icmp_unsigned(">", x, y), x, y)
        if name == "min":
            return b.select(b.icmp_signed("<", x, y) if signed else b.icmp_unsigned("<", x, y), x, y)
        if name in ("div", "rem"):
            return self._int_divide(name, signed, x, y)
        if name == "pow":
            return self._int_pow(elem, x, y)
        raise CodegenError(f"no integer lowering for binary op '{name}'")

    def _int_divide(self, name: str, signed: bool, x, y):
        b = self.b
        t = x.type
        zero = ll.Constant(t, 0)
        one = ll.Constant(t, 1)
        by_zero = b.icmp_unsigned("==", y, zero)
        if signed:
            int_min = ll.Constant(t, 1 << (t.width - 1))
            overflow = b.and_(b.icmp_signed("==", x, int_min), b.icmp_signed("==", y, ll.Constant(t, -1)))
            unsafe = b.or_(by_zero, overflow)
            safe_y = b.select(unsafe, one, y)
            if name == "div":
                q = b.sdiv(x, safe_y)
                return b.select(by_zero, ll.Constant(t, -1), b.select(overflow, int_min, q))
            r = b.srem(x, safe_y)
            return b.select(by_zero, x, b.select(overflow, zero, r))
        safe_y = b.select(by_zero, one, y)
        if name == "div":
            return b.select(by_zero, ll.Constant(t, -1), b.udiv(x, safe_y))
        return b.select(by_zero, x, b.urem(x, safe_y))

    def _int_pow(self, elem: ElemType, base, exponent):
        """Exponentiation by squaring over the exponent's bits (no loop: fixed width)."""
        b = self.b
        t = base.type
        one = ll.Constant(t, 1)
        zero = ll.Constant(t, 0)
        result = one
        power = base
        e = exponent
        for _ in range(t.width):
            bit = b.trunc(b.and_(e, one), I1)
            result = b.select(bit, b.mul(result, power), result)
            power = b.mul(power, power)
            e = b.lshr(e, one)
        if not elem.is_signed:
            return result
        negative = b.icmp_signed("<", exponent, zero)
        minus_one = ll.Constant(t, -1)
        # Negative exponent: 1 for base 1, +-1 for base -1, else 0.
        odd = b.trunc(b.and_(exponent, one), I1)
        for_minus_one = b.select(odd, minus_one, one)
        negative_result = b.select(b.icmp_signed("==", base, one), one,
                                   b.select(b.icmp_signed("==", base, minus_one), for_minus_one, zero))
        return b.select(negative, negative_result, result)

    def compare(self, direction: str, elem: ElemType, x, y):
        b = self.b
        op = _COMPARE_FLOAT[direction]
        if elem.is_float:
            if direction == "ne":
                return b.fcmp_unordered("!=", x, y)
            return b.fcmp_ordered(op, x, y)
        if elem.is_signed:
            return b.icmp_signed(op, x, y)
        return b.icmp_unsigned(op, x, y)

    def select(self, predicate, x, y):
        return self.b.select(predicate, x, y)

    # -- conversions ------------------------------------------------------------------------
    def convert(self, x, src: ElemType, dst: ElemType):
        b = self.b
        if src == dst:
            return x
        dst_t = register_type(dst)
        if dst is ElemType.PRED:
            if src.is_float:
                return b.fcmp_unordered("!=", x, ll.Constant(x.type, 0.0))
            return b.icmp_unsigned("!=", x, ll.Constant(x.type, 0))
        if src is ElemType.PRED:
            return b.uitofp(x, dst_t) if dst.is_float else b.zext(x, dst_t)
        if src.is_float and dst.is_float:
            if src is ElemType.F64 and dst is ElemType.F16:
                return b.fpext(b.fptrunc(_round_to_odd_f32(b, x), F16), F32)
            value = x
            if x.type != dst_t:
                value = b.fpext(x, dst_t) if _float_bits(dst_t) > _float_bits(x.type) else b.fptrunc(x, dst_t)
            return self._round_f16(value, dst)
        if src.is_float:
            storage = storage_type(dst)
            name = "fptosi.sat" if dst.is_signed else "fptoui.sat"
            fn = intrinsic(b.module, f"llvm.{name}.i{storage.width}.{_float_suffix(x.type)}", storage, [x.type])
            return b.call(fn, [x])
        if dst.is_float:
            value = b.sitofp(x, dst_t) if src.is_signed else b.uitofp(x, dst_t)
            return self._round_f16(value, dst)
        if dst_t.width == x.type.width:
            return x
        if dst_t.width < x.type.width:
            return b.trunc(x, dst_t)
        return b.sext(x, dst_t) if src.is_signed else b.zext(x, dst_t)


def _round_to_odd_f32(b: ll.IRBuilder, x):
    """f64 -> f32 rounding to odd (truncate, then set the last bit when inexact): rounding
    that to f16 gives the correctly rounded f64 -> f16 (one rounding, as numpy), with no
    double-rounding error (f32 keeps 13 more bits than f16). A direct ``fptrunc double to
    half`` is a libcall (__truncdfhf2) on x86 without AVX512-FP16, which MCJIT cannot
    resolve."""
    nearest = b.fptrunc(x, F32)
    back = b.fpext(nearest, F64)
    inexact = b.fcmp_ordered("!=", back, x)
    rounded_away = b.fcmp_ordered(">", call_intrinsic(b, "fabs", back), call_intrinsic(b, "fabs", x))
    bits = b.bitcast(nearest, I32)
    toward_zero = b.select(b.and_(inexact, rounded_away), b.sub(bits, ll.Constant(I32, 1)), bits)
    odd = b.select(inexact, b.or_(toward_zero, ll.Constant(I32, 1)), toward_zero)
    return b.bitcast(odd, F32)


def _float_bits(t) -> int:
    return {F16: 16, F32: 32, F64: 64}[t] if t in (F16, F32, F64) else 0


def _float_suffix(t) -> str:
    return "f64" if t == F64 else "f32" if t == F32 else "f16"

