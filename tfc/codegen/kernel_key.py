"""The structural key of a top-level op: equal keys emit the same kernel function.

Deep models repeat the same layer many times; their fusions differ only in names,
locations and which buffers they read. The key holds everything kernel emission looks
at: op names, attributes (constants by their bytes), result types with their symbolic
dims (types compare by value: equal elements and canonical dims), the operand types, the dataflow inside regions, and which of the op's results and
operands share a buffer (an in-place update is a different kernel). It leaves out
locations and buffer assignment attributes. ``Program`` calls the kernel emitted for the
first op of a key for every later one, and with ``TFC_CHECK_KERNEL_SHARING=1`` (the test
suite) emits every op anyway and checks that the texts agree.
"""
from __future__ import annotations

import numpy as np

from tfc import ir
from tfc.ir.dims import SymExpr, dim_str

IGNORED_ATTRS = frozenset({"_buf"})


def kernel_key(op: ir.Operation, buffers: list) -> tuple:
    """The key of ``op``; ``buffers``: the buffers of its results then its operands."""
    sharing = tuple(buffers.index(buffer) for buffer in buffers)
    return _op_key(op, {}), tuple(v.type for v in op.operands), sharing


def _op_key(op: ir.Operation, numbering: dict) -> tuple:
    operands = tuple(numbering.get(v, -1) for v in op.operands)
    attrs = tuple(sorted((name, _attr_key(value)) for name, value in op.attrs.items() if name not in IGNORED_ATTRS))
    results = tuple(op.result_types)
    regions = tuple(_block_key(region) for region in op.regions)
    return op.name, operands, attrs, results, regions


def _block_key(block: ir.Block) -> tuple:
    numbering = {arg: i for i, arg in enumerate(block.args)}
    ops = []
    for op in block.ops:
        ops.append(_op_key(op, numbering))
        for result in op.results:
            numbering[result] = len(numbering)
    return tuple(arg.type for arg in block.args), tuple(ops)


def _attr_key(value):
    if isinstance(value, np.ndarray):
        return "array", value.dtype.str, value.shape, value.tobytes()
    if isinstance(value, (list, tuple)):
        return tuple(_attr_key(v) for v in value)
    if isinstance(value, SymExpr):
        return "dim", dim_str(value)
    if isinstance(value, (float, np.floating)):
        return "float", float(value).hex()
    return type(value).__name__, repr(value)
