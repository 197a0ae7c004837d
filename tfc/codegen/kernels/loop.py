"""Loop kernels: a loop fusion, or a single elemental op, computed element by element.

When every member works on the output's own index (elementwise ops on equal shapes and
scalars), one flat loop over the elements is emitted: the shape LLVM vectorises best.
A result that concatenates along the first dim is written block by block, one flat loop
per operand; along a later dim, piece by piece, one loop nest per operand. Otherwise a row-major loop nest provides the multi-index.

A flat loop computing inline transcendental functions (mathlib: exp, tanh...) over
``INTERLEAVE_FROM`` elements or more asks LLVM to interleave ``INTERLEAVE`` vector
iterations. Each element's chain of dependent
multiply-adds is long (~100 cycles for tanh and a logistic), and the out-of-order core
finds independent work only among nearby instructions: on the Zen 3 here, the
elementwise benchmark's loop (with the earlier two-branch tanh) went from 36.5 to 28.7
cycles per 8 elements with 4 (2: 32-34, 6: 28.6, 8: 28-35), measured on the loop's own
machine code (``python -m benchmarks.loop_interleave``).
"""
from __future__ import annotations

from tfc import ir
from tfc.ir.dims import dim_mul, dims_product
from tfc.ir.ops import CORE_OPS

from ..kernel import Elemental, Index
from ..llvm_util import const_i64, counted_loop, interleave_hint
from ..mathlib import INLINE_FUNCTIONS

INDEX_OPS = {"broadcast", "reshape", "transpose", "slice", "pad", "concatenate", "reverse", "dynamic_slice",
             "iota", "dims", "constant"}
INTERLEAVE = 4
INTERLEAVE_FROM = 16384  # elements


def is_elemental_op(op: ir.Operation) -> bool:
    info = CORE_OPS.get(op.name)
    return info is not None and (info.category == "elementwise" or op.name in INDEX_OPS)


def kernel_body(op: ir.Operation) -> tuple:
    """(root value, {leaf value: top-level value}, member ops) of a loop kernel."""
    if op.name == "fusion":
        region = op.regions[0]
        leaves = dict(zip(region.args, op.operands))
        return region.terminator.operands[0], leaves, region.ops[:-1]
    return op.result, {v: v for v in op.operands}, [op]


def _flat(root, members, leaves) -> bool:
    shape = root.type.shape
    for member in members:
        if member.name == "constant" and member.attrs["value"].size == 1:
            continue
        if member.name == "broadcast" and member.operands[0].type.rank == 0:
            continue
        if CORE_OPS[member.name].category != "elementwise" or member.result.type.shape != shape:
            return False
    return all(leaf.type.rank == 0 or leaf.type.shape == shape for leaf in leaves)


def emit(program, index: int, op: ir.Operation) -> None:
    root, leaves, members = kernel_body(op)
    kernel, params = program.new_kernel(op, [op.result] + list(op.operands))
    elemental = Elemental(kernel, leaves)
    out = kernel.pointer(op.result)
    out_type = op.result.type
    shape = kernel.shape(out_type)
    elem = out_type.elem
    cost = max(1, len(members))
    if _flat(root, members, leaves):
        begin, end = kernel.parallel_range(out_type.num_elements, cost)
        hint = long_chain_hint(kernel, members, out_type.num_elements, INTERLEAVE_FROM)
        with counted_loop(kernel.b, begin, end, "i", hint=hint) as i:
            value = elemental.gen(root, Index(kernel, shape, linear=i))
            kernel.scalar.store(value, kernel.element_pointer(out, i), elem)
    elif _concatenation_of_rows(root):
        begin, end = kernel.parallel_range(out_type.num_elements, cost)
        _concatenate_blocks(kernel, elemental, root.defining_op, out, begin, end)
    elif _concatenation_after_rows(root):
        concat = root.defining_op
        begin, end = kernel.parallel_range(out_type.shape[0], dim_mul(dims_product(out_type.shape[1:]), cost))
        with counted_loop(kernel.b, begin, end, "d0") as i:
            _concatenate_pieces(kernel, elemental, concat, out, shape, i)
    elif out_type.rank == 0:
        _nest(kernel, shape, [], lambda multi: _store(kernel, elemental, root, out, shape, multi, elem))
    else:
        inner = dims_product(out_type.shape[1:])
        begin, end = kernel.parallel_range(out_type.shape[0], dim_mul(inner, cost))
        with counted_loop(kernel.b, begin, end, "d0") as i:
            _nest(kernel, shape, [i], lambda multi: _store(kernel, elemental, root, out, shape, multi, elem))
    program.call_kernel(kernel, params, index)


def long_chain_hint(kernel, members, elements, from_elements: int):
    """The interleave hint for a loop whose ``members`` compute inline transcendental
    functions over ``elements`` >= ``from_elements`` (or a count known only at run time:
    enough to repay the longer compile, ~60 ms more for the benchmark's tanh and
    logistic); else None."""
    large = not isinstance(elements, int) or elements >= from_elements
    if large and any(member.name in INLINE_FUNCTIONS for member in members):
        return interleave_hint(kernel.b.module, INTERLEAVE)
    return None


def _concatenation_of_rows(root) -> bool:
    """The kernel's result is a concatenate along its first dim."""
    producer = root.defining_op
    return producer is not None and producer.name == "concatenate" and producer.attrs["dim"] == 0


def _concatenate_blocks(kernel, elemental, concat, out, begin, end) -> None:
    """Elements [begin, end) of a concatenation along the first dim: each operand is one
    contiguous block of the result, computed by a flat loop of its own over the part of
    [begin, end) it covers (no element chooses between the operands; each loop reads one
    operand, and vectorises as that operand's own expression would)."""
    b = kernel.b
    offset = const_i64(0)
    for operand in concat.operands:
        piece = kernel.shape(operand.type)
        size = kernel.numel(operand.type)
        stop = b.add(offset, size)
        low = b.select(b.icmp_signed(">", begin, offset), begin, offset)
        high = b.select(b.icmp_signed("<", end, stop), end, stop)
        own = Elemental(kernel, elemental.leaves, dict(elemental.overrides))
        with counted_loop(b, low, high, "block") as i:
            value = own.gen(operand, Index(kernel, piece, linear=b.sub(i, offset)))
            kernel.scalar.store(value, kernel.element_pointer(out, i), concat.result.type.elem)
        offset = stop


def _concatenation_after_rows(root) -> bool:
    """The kernel's result is a concatenate along a dim after the first."""
    producer = root.defining_op
    return producer is not None and producer.name == "concatenate" and producer.attrs["dim"] >= 1


def _concatenate_pieces(kernel, elemental, concat, out, shape, row) -> None:
    """Row ``row`` of a concatenation: one loop nest per operand over its own extent,
    storing at its offset, so that no element chooses between the operands (the loops
    vectorise as the operands' own expressions would)."""
    b, dim = kernel.b, concat.attrs["dim"]
    offset = None
    for operand in concat.operands:
        piece = kernel.shape(operand.type)
        # Each piece's loop nest computes its own values (one piece's do not dominate the next).
        own = Elemental(kernel, elemental.leaves, dict(elemental.overrides))

        def store(multi, operand=operand, start=offset, own=own):
            at = list(multi)
            if start is not None:
                at[dim] = b.add(multi[dim], start)
            value = own.gen(operand, Index(kernel, piece, multi=multi))
            kernel.scalar.store(value, kernel.element_pointer(out, Index(kernel, shape, multi=at).linear()),
                                concat.result.type.elem)

        _nest(kernel, piece, [row], store)
        offset = piece[dim] if offset is None else b.add(offset, piece[dim])


def _store(kernel, elemental, root, out, shape, multi, elem) -> None:
    index = Index(kernel, shape, multi=multi)
    value = elemental.gen(root, index)
    kernel.scalar.store(value, kernel.element_pointer(out, index.linear()), elem)


def _nest(kernel, shape: list, prefix: list, body) -> None:
    depth = len(prefix)
    if depth == len(shape):
        body(prefix)
        return
    with counted_loop(kernel.b, 0, shape[depth], f"d{depth}") as i:
        _nest(kernel, shape, prefix + [i], body)
