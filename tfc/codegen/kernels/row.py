"""Row kernels: a row fusion (reductions over trailing dims + elementwise work on the
same rows), e.g. softmax or layer normalisation, in one pass over each row.

For each row (the leading dims, split across threads): every reduction of the fusion
is computed in dependency order into a register (a reduction may use the results of
earlier ones: the variance uses the mean), then the root is computed and stored along
the row. A row is read a few times but stays in L1/L2 between the passes, so memory
traffic is one read and one write of the tensor.
"""
from __future__ import annotations

from tfc import ir
from tfc.ir.dims import dims_product

from ..kernel import Elemental, Index
from ..llvm_util import CodegenError, counted_loop, register_type
from .loop import long_chain_hint
from .reduction import combine, identity

INTERLEAVE_FROM_ROW = 256  # elements per row


def row_fusion_parts(op: ir.Operation) -> tuple:
    """(root, {region arg: operand}, reductions, outer dims, inner dims) of a row fusion:
    its rows are its result's ``inner dims`` (those the reductions reduce)."""
    region = op.regions[0]
    root = region.terminator.operands[0]
    leaves = dict(zip(region.args, op.operands))
    reductions = [member for member in region.ops[:-1] if member.name == "reduce"]
    if not reductions:
        raise CodegenError("a row fusion holds at least one reduction")
    out_type = op.result.type
    row_dims = len(reductions[0].attrs["dims"])
    return (root, leaves, reductions, out_type.shape[:out_type.rank - row_dims],
            out_type.shape[out_type.rank - row_dims:])


def emit(program, index: int, op: ir.Operation) -> None:
    root, leaves, reductions, outer_dims, inner_dims = row_fusion_parts(op)
    kernel, params = program.new_kernel(op, [op.result] + list(op.operands))
    out_type = op.result.type
    shape = kernel.shape(out_type)
    outer_shape, inner_shape = shape[:len(outer_dims)], shape[len(outer_dims):]
    row_length = kernel.numel(out_type.with_shape(inner_dims))
    row_elements = dims_product(inner_dims)
    begin, end = kernel.parallel_range(dims_product(outer_dims), row_elements * (len(reductions) + 1))
    b = kernel.b
    out = kernel.pointer(op.result)
    results: dict = {}  # reduce result value -> alloca holding the current row's value
    overrides = {r.result: _scalar_reader(kernel, results, r.result) for r in reductions}
    with counted_loop(b, begin, end, "row") as row:
        outer = kernel.delinearize(row, outer_shape) if outer_shape else []
        base = b.mul(row, row_length)
        for reduce_op in reductions:
            _reduce_row(kernel, leaves, overrides, reduce_op, results, outer, inner_shape, row_length, base,
                        row_elements)
        elemental = Elemental(kernel, leaves, overrides)
        with counted_loop(b, 0, row_length, "j", hint=_hint(kernel, op.regions[0].ops, row_elements)) as j:
            multi = outer + (kernel.delinearize(j, inner_shape) if inner_shape else [])
            position = Index(kernel, shape, multi=multi, linear=b.add(base, j))
            kernel.scalar.store(elemental.gen(root, position), kernel.element_pointer(out, position.linear()),
                                out_type.elem)
    program.call_kernel(kernel, params, index)


def _hint(kernel, members, row_elements):
    """Interleaving for a loop along a long row computing inline transcendental functions,
    as kernels/loop.py's flat loops (softmax over 1024 columns: the sum of exps 6.7 -> 5.8
    ms on one core for 4096 rows; the results move by an ulp: partial sums regroup)."""
    return long_chain_hint(kernel, members, row_elements, INTERLEAVE_FROM_ROW)


def _members_of(value) -> list:
    """The ops computing ``value`` inside its region (up to the region's arguments)."""
    members, pending = [], [value]
    while pending:
        op = pending.pop().defining_op
        if op is not None and op not in members:
            members.append(op)
            pending += list(op.operands)
    return members


def _scalar_reader(kernel, results: dict, value):
    def read(index):
        return kernel.b.load(results[value])

    return read


def _reduce_row(kernel, leaves, overrides, reduce_op, results, outer, inner_shape, row_length, base,
                row_elements) -> None:
    """Reduce one row of ``reduce_op``'s operand into a register (an alloca)."""
    b = kernel.b
    kind = reduce_op.attrs["op"]
    operand = reduce_op.operands[0]
    elem = operand.type.elem
    # f16 accumulates in f32 and is rounded once, as the evaluator does.
    acc_elem = ir.ElemType.F32 if elem is ir.ElemType.F16 else elem
    slot = kernel.pro.alloca(register_type(acc_elem))
    b.store(identity(kind, acc_elem, kernel.scalar), slot)
    elemental = Elemental(kernel, leaves, overrides)
    shape = kernel.shape(operand.type)
    with counted_loop(b, 0, row_length, "rj", hint=_hint(kernel, _members_of(operand), row_elements)) as j:
        multi = outer + (kernel.delinearize(j, inner_shape) if inner_shape else [])
        position = Index(kernel, shape, multi=multi, linear=b.add(base, j))
        value = elemental.gen(operand, position)
        b.store(combine(kernel, kind, acc_elem, b.load(slot), value), slot)
    if elem is ir.ElemType.F16:
        b.store(kernel.scalar._round_f16(b.load(slot), elem), slot)
    results[reduce_op.result] = slot

