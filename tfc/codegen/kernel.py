"""A kernel: one LLVM function computing one top-level IR op, and its elemental emitter.

Kernel signature: ``i32 kernel(i8* noalias buf0, ..., i64* dims, i64* err)``. Each distinct
buffer the op touches is one parameter (so ``noalias`` is true); the program entry passes
them. The prologue block loads shape symbols and casts pointers; loops go after it.

``Elemental.gen(value, index)`` produces the scalar value of an IR value at an index,
recursively through elemental ops (XLA's elemental IR emitter): broadcasts, transposes,
slices, reshapes become index arithmetic; nothing in between is stored.
"""
from __future__ import annotations

from typing import Optional

from llvmlite import ir as ll

from tfc import ir
from tfc.ir.dims import Dim, SymExpr, ordered_terms

from .bf16 import emit_round_bf16
from .llvm_util import I1, I32, I64, I64P, I8P, CodegenError, const_i64, floor_div, register_type, storage_type
from .scalar import Scalar


class Kernel:
    """Builds one kernel function. ``params``: the distinct buffers, in order."""

    def __init__(self, program, name: str, params: list):
        self.program = program
        self.module = program.module
        self.params = params
        fn_type = ll.FunctionType(I32, [I8P] * len(params) + [I64P, I64P, I64, I64])
        self.fn = ll.Function(self.module, fn_type, name=name)
        self.fn.linkage = "internal"
        self.fn.attributes.add("noinline")  # LLVM's work stays linear in the number of kernels
        for arg in self.fn.args[:len(params)]:
            arg.add_attribute("noalias")
        self.dims_arg = self.fn.args[len(params)]
        self.err_arg = self.fn.args[len(params) + 1]
        self.begin_arg = self.fn.args[len(params) + 2]
        self.end_arg = self.fn.args[len(params) + 3]
        # Set by parallel_range(): the kernel's outermost loop may be split across threads.
        self.parallel_extent = None  # Dim: the loop's trip count
        self.work_per_index = 1  # Dim: elements computed per iteration (for the cost model)
        entry = self.fn.append_basic_block("entry")
        body = self.fn.append_basic_block("body")
        self.pro = ll.IRBuilder(entry)
        self._entry_branch = self.pro.branch(body)
        self.pro.position_before(self._entry_branch)
        self.b = ll.IRBuilder(body)
        self.scalar = Scalar(self.b)
        self._dims: dict = {}
        self._pointers: dict = {}

    # -- prologue values --------------------------------------------------------------------
    def dim(self, d: Dim):
        """An i64 holding dim ``d`` (computed once, in the prologue)."""
        if isinstance(d, int):
            return const_i64(d)
        key = str(d)
        if key not in self._dims:
            self._dims[key] = self._emit_dim(d)
        return self._dims[key]

    def _emit_dim(self, d: SymExpr):
        pro = self.pro
        total = const_i64(0)
        for monomial, coeff in ordered_terms(d):
            term = const_i64(coeff)
            for atom in monomial:
                if isinstance(atom, str):
                    factor = self.symbol(atom)
                else:
                    factor = floor_div(pro, self.dim(atom.num), self.dim(atom.den))
                term = pro.mul(term, factor)
            total = pro.add(total, term)
        return total

    def symbol(self, name: str):
        key = f"sym:{name}"
        if key not in self._dims:
            index = self.program.symbol_index[name]
            self._dims[key] = self.pro.load(self.pro.gep(self.dims_arg, [const_i64(index)]), name=name)
        return self._dims[key]

    def shape(self, t: ir.TensorType) -> list:
        return [self.dim(d) for d in t.shape]

    def pointer(self, value: ir.Value):
        """Typed pointer to the buffer of a top-level value (operand or result)."""
        if value in self._pointers:
            return self._pointers[value]
        param = self.params.index(self.program.buffer_of(value))
        elem = value.type.tensor.elem if isinstance(value.type, ir.RefType) else value.type.elem
        typed = self.pro.bitcast(self.fn.args[param], storage_type(elem).as_pointer())
        self._pointers[value] = typed
        return typed

    def param(self, buffer: tuple):
        """The i8* parameter of ``buffer`` (one of ``params``, e.g. ``Program.data_buffer``'s)."""
        return self.fn.args[self.params.index(buffer)]

    def parallel_range(self, extent, work_per_index=1) -> tuple:
        """(begin, end) of this kernel's share of an outermost loop of ``extent`` (a Dim).

        The program entry runs the kernel once over [0, extent), or splits that range over
        the thread pool when the work is large.
        """
        self.parallel_extent = extent
        self.work_per_index = work_per_index
        return self.begin_arg, self.end_arg

    # -- helpers ----------------------------------------------------------------------------
    def element_pointer(self, base, linear):
        return self.b.gep(base, [linear], inbounds=True)

    def linearize(self, index: list, shape: list):
        b = self.b
        if not index:
            return const_i64(0)
        linear = index[0]
        for i, d in zip(index[1:], shape[1:]):
            linear = b.add(b.mul(linear, d, flags=["nsw"]), i, flags=["nsw"])
        return linear

    def delinearize(self, linear, shape: list) -> list:
        b = self.b
        out = []
        for d in reversed(shape[1:]):
            out.append(b.srem(linear, d))
            linear = b.sdiv(linear, d)
        out.append(linear)
        return list(reversed(out))

    def numel(self, t: ir.TensorType):
        total = const_i64(1)
        for d in self.shape(t):
            total = self.pro.mul(total, d)
        return total

    def finish(self) -> None:
        if not self.b.block.is_terminated:
            self.b.ret(ll.Constant(I32, 0))


class Index:
    """An element position: a multi-index (list of i64) and/or a row-major linear index."""

    def __init__(self, kernel: Kernel, shape: list, multi: Optional[list] = None, linear=None):
        self.kernel = kernel
        self.shape = shape
        self._multi = multi
        self._linear = linear

    def multi(self) -> list:
        if self._multi is None:
            self._multi = self.kernel.delinearize(self._linear, self.shape)
        return self._multi

    def linear(self):
        if self._linear is None:
            self._linear = self.kernel.linearize(self._multi, self.shape)
        return self._linear

    def key(self) -> tuple:
        if self._multi is not None:
            return tuple(id(v) for v in self._multi)
        return ("linear", id(self._linear))


class Elemental:
    """Scalar values of IR values at an index, for one kernel body.

    ``leaves`` maps IR values that live in memory (fusion region arguments, or the op's
    top-level operands) to the top-level values whose buffers hold them.
    """

    def __init__(self, kernel: Kernel, leaves: dict, overrides: Optional[dict] = None):
        self.k = kernel
        self.leaves = leaves
        self.overrides = overrides or {}  # value -> fn(index) giving its scalar
        self._memo: dict = {}

    def gen(self, value: ir.Value, index: Index):
        key = (value, index.key())
        if key not in self._memo:
            self._memo[key] = self._gen(value, index)
        return self._memo[key]

    def load(self, value: ir.Value, index: Index):
        top = self.leaves[value]
        pointer = self.k.pointer(top)
        elem = top.type.tensor.elem if isinstance(top.type, ir.RefType) else top.type.elem
        linear = const_i64(0) if value.type.rank == 0 else index.linear()
        return self.k.scalar.load(self.k.element_pointer(pointer, linear), elem)

    def _gen(self, value: ir.Value, index: Index):
        if value in self.overrides:
            return self.overrides[value](index)
        if value in self.leaves:
            return self.load(value, index)
        op = value.defining_op
        if op is None:
            raise CodegenError(f"value {value} is not available in this kernel")
        handler = getattr(self, f"_op_{op.name}", None)
        if handler is not None:
            return handler(op, index)
        info = ir.CORE_OPS[op.name]
        if info.category == "elementwise":
            return self._elementwise(op, index)
        raise CodegenError(f"'{op.name}' cannot be computed elementally")

    def _operand_index(self, value: ir.Value, multi: list) -> Index:
        return Index(self.k, self.k.shape(value.type), multi=multi)

    def _same_index(self, value: ir.Value, index: Index) -> Index:
        return index

    # -- elementwise ----------------------------------------------------------------------
    def _elementwise(self, op: ir.Operation, index: Index):
        s = self.k.scalar
        elem = op.operands[0].type.elem
        args = [self.gen(v, index) for v in op.operands]
        if op.name == "compare":
            return s.compare(op.attrs["dir"], elem, *args)
        if op.name == "select":
            return s.select(*args)
        if op.name == "convert":
            return s.convert(args[0], elem, op.result.type.elem)
        if op.name == "round_bf16":
            return emit_round_bf16(self.k.b, args[0])
        if len(args) == 1:
            return s.unary(op.name, elem, args[0])
        return s.binary(op.name, elem, *args)

    # -- generators -----------------------------------------------------------------------
    def _op_constant(self, op: ir.Operation, index: Index):
        array = op.attrs["value"]
        elem = op.result.type.elem
        if array.size == 1:
            return self.k.scalar.constant(array.reshape(-1)[0].item(), elem)
        pointer = self.k.program.constant_pointer(op, self.k)
        return self.k.scalar.load(self.k.element_pointer(pointer, index.linear()), elem)

    def _op_iota(self, op: ir.Operation, index: Index):
        position = index.multi()[op.attrs["dim"]]
        return self.k.scalar.convert(position, ir.ElemType.I64, op.result.type.elem)

    def _op_dims(self, op: ir.Operation, index: Index):
        values = [self.k.dim(d) for d in op.attrs["values"]]
        position = index.linear()
        result = values[-1]
        for i in range(len(values) - 2, -1, -1):
            result = self.k.b.select(self.k.b.icmp_signed("==", position, const_i64(i)), values[i], result)
        return self.k.scalar.convert(result, ir.ElemType.I64, op.result.type.elem)

    # -- index remapping ------------------------------------------------------------------
    def _op_broadcast(self, op: ir.Operation, index: Index):
        operand = op.operands[0]
        if operand.type.rank == 0:
            return self.gen(operand, Index(self.k, [], multi=[]))
        multi = index.multi()
        sub = []
        for i, result_dim in enumerate(op.attrs["dims"]):
            sub.append(const_i64(0) if operand.type.shape[i] == 1 else multi[result_dim])
        return self.gen(operand, self._operand_index(operand, sub))

    def _op_reshape(self, op: ir.Operation, index: Index):
        operand = op.operands[0]
        return self.gen(operand, Index(self.k, self.k.shape(operand.type), linear=index.linear()))

    def _op_transpose(self, op: ir.Operation, index: Index):
        operand = op.operands[0]
        multi = index.multi()
        sub = [None] * len(multi)
        for result_dim, operand_dim in enumerate(op.attrs["perm"]):
            sub[operand_dim] = multi[result_dim]
        return self.gen(operand, self._operand_index(operand, sub))

    def _op_slice(self, op: ir.Operation, index: Index):
        operand = op.operands[0]
        b = self.k.b
        strides = op.attrs.get("stride") or [1] * operand.type.rank
        sub = []
        for i, (start, stride) in enumerate(zip(op.attrs["start"], strides)):
            position = index.multi()[i]
            if stride != 1:
                position = b.mul(position, const_i64(stride), flags=["nsw"])
            if start != 0:
                position = b.add(position, self.k.dim(start), flags=["nsw"])
            sub.append(position)
        return self.gen(operand, self._operand_index(operand, sub))

    def _op_reverse(self, op: ir.Operation, index: Index):
        operand = op.operands[0]
        b = self.k.b
        shape = self.k.shape(operand.type)
        sub = list(index.multi())
        for d in op.attrs["dims"]:
            sub[d] = b.sub(b.sub(shape[d], const_i64(1)), sub[d])
        return self.gen(operand, self._operand_index(operand, sub))

    def _op_dynamic_slice(self, op: ir.Operation, index: Index):
        operand, starts = op.operands[0], op.operands[1:]
        b = self.k.b
        shape = self.k.shape(operand.type)
        sub = []
        for i, (start_value, size) in enumerate(zip(starts, op.attrs["sizes"])):
            start = self.gen(start_value, Index(self.k, [], multi=[]))
            start = self.k.scalar.convert(start, start_value.type.elem, ir.ElemType.I64)
            limit = b.sub(shape[i], self.k.dim(size))
            start = b.select(b.icmp_signed("<", start, const_i64(0)), const_i64(0), start)
            start = b.select(b.icmp_signed(">", start, limit), limit, start)
            sub.append(b.add(start, index.multi()[i]))
        return self.gen(operand, self._operand_index(operand, sub))

    def _op_pad(self, op: ir.Operation, index: Index):
        operand, pad_value = op.operands
        b = self.k.b
        shape = self.k.shape(operand.type)
        interior = op.attrs.get("interior") or [0] * operand.type.rank
        inside = ll.Constant(I1, 1)
        sub = []
        for i, (low, inner) in enumerate(zip(op.attrs["low"], interior)):
            shifted = b.sub(index.multi()[i], const_i64(low))
            if inner:
                step = const_i64(inner + 1)
                on_grid = b.icmp_signed("==", b.srem(shifted, step), const_i64(0))
                shifted = b.sdiv(shifted, step)
                inside = b.and_(inside, on_grid)
            inside = b.and_(inside, b.icmp_signed(">=", shifted, const_i64(0)))
            inside = b.and_(inside, b.icmp_signed("<", shifted, shape[i]))
            clamped = b.select(b.icmp_signed("<", shifted, const_i64(0)), const_i64(0), shifted)
            last = b.sub(shape[i], const_i64(1))
            clamped = b.select(b.icmp_signed(">", clamped, last), last, clamped)
            clamped = b.select(b.icmp_signed("<", clamped, const_i64(0)), const_i64(0), clamped)
            sub.append(clamped)
        fill = self.gen(pad_value, Index(self.k, [], multi=[]))
        if any(d == 0 for d in operand.type.shape):
            return fill
        value = self.gen(operand, self._operand_index(operand, sub))
        return b.select(inside, value, fill)

    def _op_concatenate(self, op: ir.Operation, index: Index):
        b = self.k.b
        axis = op.attrs["dim"]
        multi = index.multi()
        position = multi[axis]
        result = None
        offset = const_i64(0)
        pieces = []
        for operand in op.operands:
            size = self.k.dim(operand.type.shape[axis])
            local = b.sub(position, offset)
            last = b.sub(size, const_i64(1))
            clamped = b.select(b.icmp_signed(">", local, last), last, local)
            clamped = b.select(b.icmp_signed("<", clamped, const_i64(0)), const_i64(0), clamped)
            sub = list(multi)
            sub[axis] = clamped
            pieces.append((offset, size, operand, sub))
            offset = b.add(offset, size)
        for start, size, operand, sub in reversed(pieces):
            if operand.type.shape[axis] == 0:
                continue
            value = self.gen(operand, self._operand_index(operand, sub))
            if result is None:
                result = value
            else:
                result = b.select(b.icmp_signed("<", position, b.add(start, size)), value, result)
        if result is None:
            raise CodegenError("concatenate of empty operands has no elements to compute")
        return result


def register_of(elem: ir.ElemType):
    return register_type(elem)
