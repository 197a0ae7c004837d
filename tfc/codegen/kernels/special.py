"""Kernels for the core ops that are neither elemental, reductions nor contractions:
``gather``, ``scatter_add``, ``argmax``/``argmin``, ``check`` (and ``call``, which the CPU
backend does not compile). Window ops live in ``windows.py``, ``rng`` in ``rng.py``;
``kernels/__init__.py`` dispatches to the ``EMITTERS`` of all three.

Indexing ops view their tensors as ``[outer, axis, inner]`` (the dims before the axis,
the axis, the dims after it), flattened to i64 extents computed once in the prologue,
so one loop nest serves every rank and every symbolic shape.
"""
from __future__ import annotations

import numpy as np
from llvmlite import ir as ll

from tfc import ir
from tfc import program_errors as checks

from ..llvm_util import I1, I32, I64, CodegenError, const_i64, counted_loop, if_then
from .accumulator import Accumulator


# -- shared helpers ------------------------------------------------------------------------
def extent(kernel, dims: list):
    """The product of some dims of a shape, as an i64 computed in the prologue."""
    total = const_i64(1)
    for d in dims:
        total = kernel.pro.mul(total, kernel.dim(d))
    return total


def split_at(kernel, t: ir.TensorType, axis: int) -> tuple:
    """(outer, axis extent, inner) of ``t`` viewed as ``[outer, axis, inner]``."""
    shape = list(t.shape)
    return extent(kernel, shape[:axis]), kernel.dim(shape[axis]), extent(kernel, shape[axis + 1:])


def load_index(kernel, value: ir.Value, linear):
    """Element ``linear`` of an i32/i64 indices tensor, sign-extended to i64."""
    elem = value.type.elem
    raw = kernel.scalar.load(kernel.element_pointer(kernel.pointer(value), linear), elem)
    return kernel.scalar.convert(raw, elem, ir.ElemType.I64)


def in_range(b: ll.IRBuilder, index, bound):
    """0 <= index < bound (i1)."""
    return b.and_(b.icmp_signed(">=", index, const_i64(0)), b.icmp_signed("<", index, bound))


# -- gather --------------------------------------------------------------------------------
def emit_gather(program, index: int, op: ir.Operation) -> None:
    """``params[outer, indices[j], inner]`` for every j; the indices are all checked first,
    so the error names the first bad position in row-major order (as the evaluator does)."""
    params, indices = op.operands
    axis = op.attrs["axis"]
    kernel, buffers = program.new_kernel(op, [op.result, params, indices])
    b = kernel.b
    outer, bound, inner = split_at(kernel, params.type, axis)
    count = kernel.numel(indices.type)
    _check_gather_indices(kernel, indices, count, bound)
    elem = op.result.type.elem
    source, out = kernel.pointer(params), kernel.pointer(op.result)
    with counted_loop(b, 0, outer, "o") as o:
        with counted_loop(b, 0, count, "j") as j:
            row = b.mul(b.add(b.mul(o, bound), load_index(kernel, indices, j)), inner)
            out_row = b.mul(b.add(b.mul(o, count), j), inner)
            with counted_loop(b, 0, inner, "i") as i:
                value = kernel.scalar.load(kernel.element_pointer(source, b.add(row, i)), elem)
                kernel.scalar.store(value, kernel.element_pointer(out, b.add(out_row, i)), elem)
    program.call_kernel(kernel, buffers, index, may_fail=True)


def _check_gather_indices(kernel, indices: ir.Value, count, bound) -> None:
    """Fill the error record (bound, position, value) and return GATHER_INDEX at the first
    index outside [0, bound)."""
    b = kernel.b
    with counted_loop(b, 0, count, "check") as j:
        value = load_index(kernel, indices, j)
        with if_then(b, b.not_(in_range(b, value, bound)), "bad_index"):
            fail(kernel, checks.GATHER_INDEX, {checks.BOUND: bound, checks.POSITION: j, checks.VALUE: value})


def fail(kernel, code: int, fields: dict) -> None:
    """Store ``fields`` (record slot -> i64) in the error record and return ``code``."""
    b = kernel.b
    for slot, value in fields.items():
        b.store(const_i64(value) if isinstance(value, int) else value, b.gep(kernel.err_arg, [const_i64(slot)]))
    b.ret(ll.Constant(I32, code))


# -- check ---------------------------------------------------------------------------------
def emit_check(program, index: int, op: ir.Operation) -> None:
    """Verify the operand as ops.py says for the check's kind; on failure fill the record
    (tfc/program_errors.py) and return the code. Element checks first scan without branching
    (a vectorisable any/min/max), and look for the first bad element only when one exists."""
    if op.attrs["kind"] == "assert":
        _emit_assert(program, index, op)
        return
    x = op.operands[0]
    kernel, buffers = program.new_kernel(op, [x])
    unless_empty = op.attrs.get("unless_empty")
    if unless_empty is not None:
        empty = kernel.b.icmp_signed("==", extent(kernel, unless_empty), const_i64(0))
        with if_then(kernel.b, empty, "nothing_to_check"):
            kernel.b.ret(ll.Constant(I32, 0))
    _CHECKS[op.attrs["kind"]](kernel, op, x)
    program.call_kernel(kernel, buffers, index, may_fail=True)


def _bound(kernel, op: ir.Operation):
    return kernel.dim(op.attrs["bound"][0])


def _shape_fields(kernel, t: ir.TensorType) -> dict:
    fields = {checks.RANK: t.rank}
    for i, d in enumerate(t.shape[:checks.MAX_DIMS]):
        fields[checks.DIMS + i] = kernel.dim(d)
    return fields


def _any(kernel, x: ir.Value, count, is_bad):
    """Whether ``is_bad`` holds for some element (i1), by a branch-free scan."""
    b = kernel.b
    found = kernel.pro.alloca(I1, name="found")
    b.store(ll.Constant(I1, 0), found)
    with counted_loop(b, 0, count, "scan") as j:
        b.store(b.or_(b.load(found), is_bad(load_index(kernel, x, j))), found)
    return b.load(found)


def _check_all(code: int):
    def check(kernel, op: ir.Operation, x: ir.Value) -> None:
        """Fail with ``code`` (a message without values) when some element is bad."""
        b = kernel.b
        bad = _ELEMENT_TESTS[op.attrs["kind"]]
        with if_then(b, _any(kernel, x, kernel.numel(x.type), lambda v: bad(b, v)), "bad"):
            fail(kernel, code, {})

    return check


_ELEMENT_TESTS = {
    "divisor": lambda b, v: b.icmp_signed("==", v, const_i64(0)),
    "truncate_divisor": lambda b, v: b.icmp_signed("==", v, const_i64(0)),
    "exponent": lambda b, v: b.icmp_signed("<", v, const_i64(0)),
}


def _check_segment_ids(kernel, op: ir.Operation, x: ir.Value) -> None:
    """Every id below the bound; the first one that is not is reported with the ids' shape."""
    b = kernel.b
    bound, count = _bound(kernel, op), kernel.numel(x.type)
    with if_then(b, _any(kernel, x, count, lambda v: b.icmp_signed(">=", v, bound)), "bad"):
        with counted_loop(b, 0, count, "find") as j:
            value = load_index(kernel, x, j)
            with if_then(b, b.icmp_signed(">=", value, bound), "first"):
                fields = {checks.BOUND: bound, checks.POSITION: j, checks.VALUE: value}
                fail(kernel, checks.SEGMENT_ID, {**fields, **_shape_fields(kernel, x.type)})


def _check_labels(kernel, op: ir.Operation, x: ir.Value) -> None:
    """All labels in [0, bound): the min and max decide, and TF reports the min when it
    is negative, else the max. The record points at the labels (the message lists them)."""
    b = kernel.b
    bound, count = _bound(kernel, op), kernel.numel(x.type)
    low, high = kernel.pro.alloca(I64, name="low"), kernel.pro.alloca(I64, name="high")
    b.store(const_i64(0), low)
    b.store(const_i64(0), high)
    with counted_loop(b, 0, count, "scan") as j:
        value = load_index(kernel, x, j)
        b.store(b.select(b.icmp_signed("<", value, b.load(low)), value, b.load(low)), low)
        b.store(b.select(b.icmp_signed(">", value, b.load(high)), value, b.load(high)), high)
    low, high = b.load(low), b.load(high)
    negative = b.icmp_signed("<", low, const_i64(0))
    bad = b.or_(negative, b.icmp_signed(">=", high, bound))
    with if_then(b, b.and_(bad, b.icmp_signed(">", count, const_i64(0))), "bad"):
        address = b.ptrtoint(kernel.pointer(x), I64)
        fail(kernel, checks.LABEL, {checks.BOUND: bound, checks.VALUE: b.select(negative, low, high),
                                    checks.POSITION: count, checks.EXTRA: address, checks.RANK: x.type.elem.nbytes})


def _check_slice_index(kernel, op: ir.Operation, x: ir.Value) -> None:
    b = kernel.b
    bound, value = _bound(kernel, op), load_index(kernel, x, const_i64(0))
    with if_then(b, b.not_(in_range(b, value, bound)), "bad"):
        fail(kernel, checks.SLICE_INDEX, {checks.BOUND: bound, checks.VALUE: value, checks.EXTRA: op.attrs["axis"]})


def _check_slice_begin(kernel, op: ir.Operation, x: ir.Value) -> None:
    """TF's Slice validation of one dim: begin in [0, dim], size in [0, dim - begin], and
    both 0 when the dim is empty (the evaluator's _slice_begin_failure)."""
    b = kernel.b
    dim, begin, size = _bound(kernel, op), load_index(kernel, x, const_i64(0)), kernel.dim(op.attrs["size"][0])
    zero, axis = const_i64(0), op.attrs["axis"]
    empty = b.icmp_signed("==", dim, zero)
    nonzero = b.or_(b.icmp_signed("!=", begin, zero), b.icmp_signed("!=", size, zero))
    with if_then(b, b.and_(empty, nonzero), "empty_dim"):
        fail(kernel, checks.SLICE_EMPTY_DIM, {checks.VALUE: begin, checks.POSITION: size, checks.EXTRA: axis})
    begin_ok = b.and_(b.icmp_signed(">=", begin, zero), b.icmp_signed("<=", begin, dim))
    with if_then(b, b.not_(begin_ok), "bad_begin"):
        fail(kernel, checks.SLICE_BEGIN, {checks.BOUND: dim, checks.VALUE: begin, checks.EXTRA: axis})
    room = b.sub(dim, begin)
    size_ok = b.and_(b.icmp_signed(">=", size, zero), b.icmp_signed("<=", size, room))
    with if_then(b, b.not_(size_ok), "bad_size"):
        fail(kernel, checks.SLICE_SIZE, {checks.BOUND: room, checks.VALUE: size, checks.EXTRA: axis})


def _check_reduction_axis(kernel, op: ir.Operation, x: ir.Value) -> None:
    b = kernel.b
    axis = op.attrs.get("axis", 0)
    with if_then(b, b.icmp_signed("==", kernel.dim(x.type.shape[axis]), const_i64(0)), "empty"):
        fail(kernel, checks.EMPTY_REDUCTION_AXIS, {checks.EXTRA: axis, **_shape_fields(kernel, x.type)})


def _emit_assert(program, index: int, op: ir.Operation) -> None:
    """When the condition is false: the record points at the check's descriptor (constant
    data of the program) and at each value's buffer, followed by the values' run-time dims
    (tfc/program_errors.py), and the kernel returns ASSERT."""
    cond, values = op.operands[0], list(op.operands[1:])
    shapes = [[d if isinstance(d, int) else None for d in v.type.shape] for v in values]
    runtime_dims = [d for v in values for d in v.type.shape if not isinstance(d, int)]
    if len(values) + len(runtime_dims) > checks.MAX_DIMS:
        raise CodegenError(f"check assert: {len(values)} values with {len(runtime_dims)} run-time dims do not fit "
                           f"the error record ({checks.MAX_DIMS} slots)")
    descriptor = checks.assert_descriptor(op.attrs["text"], op.attrs.get("summarize", 3),
                                          [(v.type.elem.np_dtype.str, shape) for v, shape in zip(values, shapes)])
    data = program.data_buffer(np.frombuffer(descriptor, dtype=np.uint8))
    kernel, buffers = program.new_kernel(op, [cond, *values], extra=(data,))
    b = kernel.b
    holds = kernel.scalar.load(kernel.pointer(cond), cond.type.elem)
    with if_then(b, b.not_(holds), "failed"):
        fields = {checks.EXTRA: b.ptrtoint(kernel.param(data), I64)}
        for i, v in enumerate(values):
            fields[checks.DIMS + i] = b.ptrtoint(kernel.pointer(v), I64)
        for j, d in enumerate(runtime_dims):
            fields[checks.DIMS + len(values) + j] = kernel.dim(d)
        fail(kernel, checks.ASSERT, fields)
    program.call_kernel(kernel, buffers, index, may_fail=True)


_CHECKS = {
    "divisor": _check_all(checks.DIVISION_BY_ZERO), "truncate_divisor": _check_all(checks.BINARY_OP_ERROR),
    "exponent": _check_all(checks.NEGATIVE_POWER), "segment_id": _check_segment_ids, "label": _check_labels,
    "slice_index": _check_slice_index, "slice_begin": _check_slice_begin, "reduction_axis": _check_reduction_axis,
}


# -- scatter_add ---------------------------------------------------------------------------
def emit_scatter_add(program, index: int, op: ir.Operation) -> None:
    """The operand, plus ``updates[outer, j, inner]`` added at ``[outer, indices[j], inner]``
    in order of j (out-of-range indices are skipped)."""
    operand, indices, updates = op.operands
    axis = op.attrs["axis"]
    kernel, buffers = program.new_kernel(op, [op.result, operand, indices, updates])
    b, s = kernel.b, kernel.scalar
    outer, bound, inner = split_at(kernel, operand.type, axis)
    count = kernel.numel(indices.type)
    elem = op.result.type.elem
    acc = Accumulator(kernel, kernel.pointer(op.result), elem, kernel.numel(op.result.type))
    in_place = program.buffer_of(op.result) == program.buffer_of(operand) and acc.scratch is None
    if not in_place:  # in place (a loop updating its own state, buffer_assign.py): the values are there
        source = kernel.pointer(operand)
        with counted_loop(b, 0, acc.count, "init") as i:
            acc.store(i, s.load(kernel.element_pointer(source, i), elem))
    update_values = kernel.pointer(updates)
    with counted_loop(b, 0, outer, "o") as o:
        with counted_loop(b, 0, count, "j") as j:
            position = load_index(kernel, indices, j)
            with if_then(b, in_range(b, position, bound), "valid"):
                row = b.mul(b.add(b.mul(o, bound), position), inner)
                update_row = b.mul(b.add(b.mul(o, count), j), inner)
                with counted_loop(b, 0, inner, "i") as i:
                    value = s.load(kernel.element_pointer(update_values, b.add(update_row, i)), elem)
                    acc.add(b.add(row, i), value)
    acc.finish()
    program.call_kernel(kernel, buffers, index)


# -- argmax / argmin -----------------------------------------------------------------------
def emit_arg_reduce(program, index: int, op: ir.Operation) -> None:
    """The first position of the extreme along ``dim`` (NaN counts as the extreme; an
    empty dim gives 0), for every [outer, inner] position."""
    x = op.operands[0]
    kernel, buffers = program.new_kernel(op, [op.result, x])
    b = kernel.b
    outer, size, inner = split_at(kernel, x.type, op.attrs["dim"])
    elem = x.type.elem
    source, out = kernel.pointer(x), kernel.pointer(op.result)
    best_slot = kernel.pro.alloca(kernel.scalar.constant(0, elem).type)
    position_slot = kernel.pro.alloca(I64)
    with counted_loop(b, 0, outer, "o") as o:
        with counted_loop(b, 0, inner, "i") as i:
            base = b.add(b.mul(b.mul(o, size), inner), i)
            b.store(const_i64(0), position_slot)
            with if_then(b, b.icmp_signed(">", size, const_i64(0)), "nonempty"):
                b.store(kernel.scalar.load(kernel.element_pointer(source, base), elem), best_slot)
                with counted_loop(b, 1, size, "d") as d:
                    value = kernel.scalar.load(kernel.element_pointer(source, b.add(base, b.mul(d, inner))), elem)
                    best = b.load(best_slot)
                    better = beats(b, ">" if op.name == "argmax" else "<", elem, value, best)
                    b.store(b.select(better, value, best), best_slot)
                    b.store(b.select(better, d, b.load(position_slot)), position_slot)
            result_elem = op.result.type.elem
            result = kernel.scalar.convert(b.load(position_slot), ir.ElemType.I64, result_elem)
            kernel.scalar.store(result, kernel.element_pointer(out, b.add(b.mul(o, inner), i)), result_elem)
    program.call_kernel(kernel, buffers, index)


def beats(b: ll.IRBuilder, direction: str, elem: ir.ElemType, value, best):
    """Does ``value`` replace ``best``: strictly ``value <direction> best``, where NaN beats
    every number and a NaN ``best`` is never replaced (the first NaN wins)?"""
    if elem.is_float:
        best_is_number = b.fcmp_ordered("ord", best, best)
        return b.and_(best_is_number, b.fcmp_unordered(direction, value, best))
    if elem.is_signed:
        return b.icmp_signed(direction, value, best)
    return b.icmp_unsigned(direction, value, best)


# -- call ----------------------------------------------------------------------------------
def emit_call(program, index: int, op: ir.Operation) -> None:
    """Refused: the CPU backend compiles one function per program, so calls must be inlined first."""
    callee = str(op.attrs.get("callee", "?")).lstrip("@")
    raise CodegenError(f"call @{callee}: the CPU backend compiles a single function; inline the callee "
                       f"into @{program.function.name} before code generation")


EMITTERS = {"gather": emit_gather, "scatter_add": emit_scatter_add, "argmax": emit_arg_reduce,
            "argmin": emit_arg_reduce, "check": emit_check, "call": emit_call}
