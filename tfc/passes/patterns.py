"""Small helpers shared by the simplification passes.

- effects: :func:`is_removable` / :func:`is_pure` say which ops a pass may delete,
  merge or fold;
- constants: :func:`splat_scalar` sees through ``broadcast`` to the scalar a value is
  made of, :func:`is_constant_like` says whether a value is (a broadcast of) a constant;
- a forward sweep over a block (:func:`sweep_function`) that lets a pass replace each op
  by new ops and/or existing values, moving the uses through the use lists (a cost per
  use, not per op of the function), so that a pass is linear in the size of the function;
- :func:`attr_key`: a hashable deep key of an op's attributes (for CSE).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Optional

import numpy as np

from tfc.ir.core import Block, Function, Module, Operation, Value
from tfc.ir.dims import SymExpr
from tfc.ir.ops import PURE, READ, op_effect
from tfc.ir.printer import is_splat

# Ops that are never pure for a pass's purposes: structure (terminators) and calls
# (a callee may assign variables or draw random numbers).
_NEVER_PURE = frozenset({"return", "yield", "call"})


# -- effects ---------------------------------------------------------------------------------
def is_pure(op: Operation) -> bool:
    """A pure op: no memory effect, not a terminator, not a call.

    Fusion ops are pure: the verifier allows only pure ops inside their regions. ``if`` and
    ``while`` are as pure as the ops in their regions.
    """
    return op.name not in _NEVER_PURE and op_effect(op) == PURE


def is_removable(op: Operation) -> bool:
    """An op that may be deleted when none of its results is used: pure ops and
    ``read`` (reading a ref has no observable effect). Never ``assign``/``rng``."""
    return is_pure(op) or (op.name not in _NEVER_PURE and op_effect(op) == READ)


# -- constants -------------------------------------------------------------------------------
def constant_array(value: Value) -> Optional[np.ndarray]:
    """The stored array of a value defined by ``constant`` (possibly a 1-element splat)."""
    op = value.defining_op
    if op is None or op.name != "constant":
        return None
    array = op.attrs.get("value")
    return array if isinstance(array, np.ndarray) else None


def splat_scalar(value: Value):
    """The single element a value is made of, or None.

    True for a ``constant`` whose elements are all equal and for a ``broadcast`` (any
    number of them) of such a constant. Empty tensors have no splat value.
    """
    op = value.defining_op
    while op is not None and op.name == "broadcast":
        op = op.operands[0].defining_op
    if op is None or op.name != "constant":
        return None
    array = op.attrs.get("value")
    if not isinstance(array, np.ndarray) or array.size == 0:
        return None
    first = array.reshape(-1)[0]
    if array.size == 1 or bool(np.all(array == first)):
        return first
    return None


def splat_equals(value: Value, number) -> bool:
    """True when ``value`` is a splat (see :func:`splat_scalar`) equal to ``number``."""
    scalar = splat_scalar(value)
    return scalar is not None and bool(scalar == number)


def is_constant_like(value: Value) -> bool:
    """A ``constant``, or a shape op (broadcast, reshape) of one."""
    op = value.defining_op
    while op is not None and op.name in ("broadcast", "reshape"):
        op = op.operands[0].defining_op
    return op is not None and op.name == "constant"


def compact_constant(array: np.ndarray) -> np.ndarray:
    """A constant's value as it is best stored: a 0-d array for a splat, else a C-ordered copy."""
    if array.size > 1 and is_splat(array):
        return np.array(array.reshape(-1)[0], dtype=array.dtype)
    return np.array(array, order="C", copy=True)  # owned, contiguous, writeable


def is_identity_perm(perm) -> bool:
    return list(perm) == list(range(len(perm)))


# -- commutative operand order ---------------------------------------------------------------
COMMUTATIVE = frozenset({"add", "mul", "max", "min", "and", "or", "xor"})
COMMUTATIVE_COMPARE = frozenset({"eq", "ne"})
_LAST = (1 << 62, 0)


def is_commutative(op: Operation) -> bool:
    if op.name == "compare":
        return op.attrs.get("dir") in COMMUTATIVE_COMPARE
    if op.name in ("max", "min") and op.results[0].type.elem.is_float:
        return False  # max(-0.0, 0.0) is the first operand (numpy, TF's CPU kernels): order matters
    return op.name in COMMUTATIVE


def operand_order_key(value: Value, position: dict) -> tuple:
    """The canonical order of a commutative op's operands: non-constants first, by
    ``position`` (value -> a sortable position in the block), constants second."""
    return (is_constant_like(value), position.get(value, _LAST))


def order_commutative_operands(op: Operation, position: dict) -> bool:
    """Swap a commutative binary op's operands into canonical order; True if swapped."""
    a, b = op.operands
    if operand_order_key(b, position) < operand_order_key(a, position):
        op.operands = [b, a]
        return True
    return False


# -- forward sweep with replacement ----------------------------------------------------------
@dataclass
class Rewrite:
    """What replaces a visited op: ``ops`` are placed where it was (the visited op itself
    may be among them: it was changed in place), and ``values[i]`` replaces its result i
    in every later use."""

    ops: list = field(default_factory=list)
    values: list = field(default_factory=list)


Visit = Callable[[Operation], Optional[Rewrite]]


def sweep_module(module: Module, visit: Visit) -> bool:
    """:func:`sweep_function` over every function; True if anything changed."""
    changed = False
    for func in module.functions.values():
        changed |= sweep_function(func, visit)
    return changed


def sweep_function(func: Function, visit: Visit) -> bool:
    return sweep_block(func.body, visit)


def sweep_block(block: Block, visit: Visit) -> bool:
    """Visit every op of ``block`` in order (regions first, inner to outer).

    ``visit`` returns None to keep the op unchanged, or a :class:`Rewrite`: its ops take
    the visited op's place, each of the op's results is replaced in all its uses by the
    matching value (through the use lists: the cost is the number of uses), and the op is
    erased. Every op is visited once and no op is looked at twice, so a sweep is linear in
    the size of the block. Later ops thus always have final operands when visited, and use
    lists are exact at every visit. Region values never escape their region.
    """
    changed = False
    old_ops, block.ops = block.ops, []
    for op in old_ops:
        for region in op.regions:
            changed |= sweep_block(region, visit)
        outcome = visit(op)
        if outcome is None:
            block.ops.append(op)
            continue
        changed = True
        op.parent = None
        kept_itself = False
        for new_op in outcome.ops:
            kept_itself |= new_op is op
            block.append(new_op)
        for old, new in zip(op.results, outcome.values):
            if old is not new:
                old.replace_all_uses_with(new)
        if not kept_itself:
            op.drop_references()
    return changed


def replace_by_values(values: list) -> Rewrite:
    """Drop the visited op; its results become ``values``."""
    return Rewrite([], list(values))


# -- attribute keys --------------------------------------------------------------------------
def attr_key(value):
    """A hashable key with deep equality: arrays by dtype, shape and bytes; SymExprs by
    their own equality; lists and tuples element by element; floats by their bits (so
    ``-0.0`` and ``0.0`` differ and NaN equals NaN)."""
    if value is None:
        return None
    if isinstance(value, (bool, np.bool_)):
        return ("bool", bool(value))
    if isinstance(value, (int, np.integer)):
        return ("int", int(value))
    if isinstance(value, (float, np.floating)):
        return ("float", float(value).hex())
    if isinstance(value, str):
        return ("str", value)
    if isinstance(value, SymExpr):
        return ("dim", value)
    if isinstance(value, np.ndarray):
        contiguous = np.asarray(value, order="C")
        return ("array", contiguous.dtype.str, contiguous.shape, contiguous.tobytes())
    if isinstance(value, (list, tuple)):
        return ("list", tuple(attr_key(v) for v in value))
    if isinstance(value, dict):
        return ("dict", tuple(sorted((k, attr_key(v)) for k, v in value.items())))
    return ("other", type(value).__name__, repr(value))


def attrs_key(attrs: dict) -> tuple:
    """The key of a whole attribute dict (keys sorted; None-valued entries dropped, as
    the printer drops them: an absent optional attribute equals an explicit None)."""
    return tuple(sorted((k, attr_key(v)) for k, v in attrs.items() if v is not None))
