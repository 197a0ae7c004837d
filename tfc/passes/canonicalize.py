"""Canonicalize: algebraic simplification and a canonical operand order.

Rewrites (``c`` is a splat constant or a broadcast of one, see ``patterns.splat_scalar``):

- ``x + scatter_add(0, i, u)`` -> ``scatter_add(x, i, u)`` (either operand order); a
  ``scatter_add`` into zeros of every row in order (indices the constant 0..n-1) is the
  updates, a ``gather`` of every row in order is its operand;
- identities: ``x*1``, ``1*x``, ``x+0``, ``0+x``, ``x-0``, ``x/1`` -> ``x`` (any numeric
  type); ``and(x, true)``, ``or(x, false)`` -> ``x`` (pred); ``x*0`` -> ``0`` for integer
  types only (for floats ``inf*0`` and ``nan*0`` are NaN);
- involutions: ``neg(neg x)``, ``not(not x)`` -> ``x``;
- shape ops: a transpose of a transpose composes (identity -> ``x``); a transpose with
  the identity permutation, a reshape to the operand's own type, a broadcast to its own
  type with identity dims, a convert to the same type, a slice covering the whole
  operand with stride 1, a pad with all-zero padding, a concatenate of one operand and a
  reduce over no dims are all ``x``; a reshape of a reshape is one reshape; a broadcast
  of a broadcast is one broadcast (dims composed);
- ``select`` with a splat-constant predicate (or two equal branches) -> the chosen one;
- commutative ops (add mul max min and or xor, compare eq/ne) put non-constants first,
  ordered by their position in the function, constants second, so that CSE sees ``a+b``
  and ``b+a`` alike.

Why it is safe: every replacement value has exactly the replaced result's type (checked
before each rewrite) and the same elements for every input, with two exceptions: one that
XLA shares, ``x + 0.0`` for ``x = -0.0`` gives ``+0.0`` where the rewrite keeps ``-0.0``;
and a scatter_add into ``x`` of rows with repeated indices adds them to ``x`` one by one
rather than to each other first (the order of a scatter's additions is unspecified).
Ops with effects (read, assign, rng), calls and terminators are never rewritten; they
only appear as operands. Fusion regions are simplified like function bodies. New ops
keep the location of the op they replace.

The pass sweeps each block forward once; an op's operands are final when it is visited
and each rewrite result is simplified again at once, so one sweep reaches the fixed point
(a new op takes the position of the op it replaces, so the operand order is stable too).
A run costs one visit per op: linear. Ops it replaces are erased; their operands may
become dead, which DCE removes.
"""
from __future__ import annotations

from typing import Optional, Union

import numpy as np

from tfc.ir.core import Function, Module, Operation, Value

from .manager import Pass
from .patterns import (Rewrite, constant_array, is_commutative, is_identity_perm, is_pure,
                       order_commutative_operands, replace_by_values, splat_equals, splat_scalar, sweep_function)

# What a pattern returns: None (no match), the op itself (changed in place), an existing
# value (replaces the op's result) or a new op (replaces the op, simplified again).
Outcome = Union[None, Operation, Value]


class Canonicalize(Pass):
    name = "canonicalize"

    def __init__(self, max_sweeps: int = 1):
        super().__init__()
        self.max_sweeps = max_sweeps
        self._position: dict = {}

    def run(self, module: Module) -> bool:
        self.notes = []
        changed = False
        for func in module.functions.values():
            for _ in range(self.max_sweeps):
                self._position = _positions(func)
                if not sweep_function(func, self._visit):
                    break
                changed = True
        self._position = {}
        return changed

    # -- driver ------------------------------------------------------------------------------
    def _visit(self, op: Operation) -> Optional[Rewrite]:
        """Apply patterns to ``op`` (and to whatever replaces it) until none matches."""
        if not is_pure(op) or len(op.results) != 1:
            return None
        current, changed = op, False
        for _ in range(64):  # each step shrinks or reorders; the cap is a safety net
            outcome = self._apply(current)
            if outcome is None:
                break
            changed = True
            if isinstance(outcome, Value):
                _discard(current, op)
                return replace_by_values([outcome])
            if outcome is not current:
                _discard(current, op)
                self._position[outcome.result] = self._position[op.result]
                current = outcome
        if not changed:
            return None
        return Rewrite([current], [current.result])

    def _apply(self, op: Operation) -> Outcome:
        rule = _RULES.get(op.name)
        outcome = rule(op) if rule is not None else None
        if outcome is None and is_commutative(op):
            outcome = op if order_commutative_operands(op, self._position) else None
        if isinstance(outcome, Value) and outcome.type != op.result.type:
            return None  # never change a type
        return outcome


def _discard(candidate: Operation, visited: Operation) -> None:
    """A rewrite built ``candidate`` and then replaced it before it was placed: erase it,
    so that it does not stay a user of its operands (the visited op is the sweep's)."""
    if candidate is not visited:
        candidate.drop_references()


def _positions(func: Function) -> dict:
    """Value -> a sortable position: arguments first, then results in block order.
    Values of different blocks (a fusion region) never meet as operands of one op."""
    position: dict = {}
    blocks = [func.body] + [region for op in func.walk() for region in op.regions]
    for block in blocks:
        for arg in block.args:
            position[arg] = (-1, arg.index)
        for i, op in enumerate(block.ops):
            for result in op.results:
                position[result] = (i, result.index)
    return position


def _new_op(like: Operation, name: str, operand: Value, attrs: dict) -> Operation:
    """A single-result op replacing ``like``: same result type and location."""
    return Operation(name, [operand], [like.result.type], attrs, loc=like.loc)


def _producer(value: Value, name: str) -> Optional[Operation]:
    op = value.defining_op
    return op if op is not None and op.name == name else None


# -- elementwise -----------------------------------------------------------------------------
def _either_side(op: Operation, number) -> Optional[Value]:
    """The other operand when one operand of a binary op is the splat ``number``."""
    a, b = op.operands
    if splat_equals(b, number):
        return a
    if splat_equals(a, number):
        return b
    return None


def _add(op: Operation) -> Outcome:
    kept = _either_side(op, 0)
    if kept is not None:
        return kept
    return _add_of_scatter_into_zeros(op)


def _is_every_row_in_order(indices: Value, rows) -> bool:
    """``indices`` is the constant [0, 1, ..., rows - 1]."""
    array = constant_array(indices)
    return (array is not None and array.ndim == 1 and isinstance(rows, int) and array.shape[0] == rows
            and bool(np.array_equal(array, np.arange(rows))))


def _gather(op: Operation) -> Outcome:
    """A gather along the first dim of every row in order is its operand (TF's
    TensorArray stack of a whole array)."""
    operand, indices = op.operands
    if op.attrs["axis"] == 0 and operand.type.rank >= 1 and _is_every_row_in_order(indices, operand.type.shape[0]):
        return operand
    return None


def _scatter_add(op: Operation) -> Outcome:
    """A scatter_add into zeros of every row in order is the updates (TF's TensorArray
    unstack of a whole array)."""
    operand, indices, updates = op.operands
    if op.attrs["axis"] == 0 and splat_equals(operand, 0) and updates.type == op.result.type \
            and _is_every_row_in_order(indices, operand.type.shape[0]):
        return updates
    return None


def _add_of_scatter_into_zeros(op: Operation) -> Outcome:
    """``x + scatter_add(0, i, u)`` -> ``scatter_add(x, i, u)``: the rows scattered into zeros
    added to ``x`` are the rows scattered into ``x``, touching only the rows indexed instead
    of all of ``x`` (TF's gradients of TensorArray reads in a loop write one row of a new
    zero array per iteration and add it to an accumulator)."""
    for scattered, other in (op.operands, reversed(op.operands)):
        inner = _producer(scattered, "scatter_add")
        if inner is not None and splat_equals(inner.operands[0], 0) and other.type == op.result.type:
            return Operation("scatter_add", [other, *inner.operands[1:]], [op.result.type], dict(inner.attrs),
                             loc=op.loc)
    return None


def _mul(op: Operation) -> Outcome:
    kept = _either_side(op, 1)
    if kept is not None:
        return kept
    if op.result.type.elem.is_int:
        for operand in op.operands:
            if splat_equals(operand, 0):
                return operand  # the zero itself
    return None


def _right_identity(number):
    def rule(op: Operation) -> Outcome:
        return op.operands[0] if splat_equals(op.operands[1], number) else None

    return rule


def _pred_identity(number: bool):
    def rule(op: Operation) -> Outcome:
        return _either_side(op, number) if op.result.type.elem.is_pred else None

    return rule


def _involution(op: Operation) -> Outcome:
    inner = _producer(op.operands[0], op.name)
    return inner.operands[0] if inner is not None else None


def _select(op: Operation) -> Outcome:
    pred, on_true, on_false = op.operands
    if on_true is on_false:
        return on_true
    choice = splat_scalar(pred)
    if choice is None:
        return None
    return on_true if bool(choice) else on_false


def _convert(op: Operation) -> Outcome:
    x = op.operands[0]
    return x if x.type == op.result.type else None


# -- shape ops -------------------------------------------------------------------------------
def _transpose(op: Operation) -> Outcome:
    perm = list(op.attrs["perm"])
    x = op.operands[0]
    if is_identity_perm(perm):
        return x
    inner = _producer(x, "transpose")
    if inner is None:
        return None
    inner_perm = list(inner.attrs["perm"])
    composed = [inner_perm[p] for p in perm]
    source = inner.operands[0]
    if is_identity_perm(composed):
        return source
    return _new_op(op, "transpose", source, {"perm": composed})


def _reshape(op: Operation) -> Outcome:
    x = op.operands[0]
    if x.type == op.result.type:
        return x
    inner = _producer(x, "reshape")
    if inner is None:
        return None
    return _new_op(op, "reshape", inner.operands[0], {})


def _broadcast(op: Operation) -> Outcome:
    x = op.operands[0]
    dims = list(op.attrs["dims"])
    if x.type == op.result.type and is_identity_perm(dims):
        return x
    inner = _producer(x, "broadcast")
    if inner is None:
        return None
    composed = [dims[d] for d in inner.attrs["dims"]]
    return _new_op(op, "broadcast", inner.operands[0], {"dims": composed})


def _slice(op: Operation) -> Outcome:
    x = op.operands[0]
    stride = op.attrs.get("stride") or [1] * x.type.rank
    whole = (all(s == 0 for s in op.attrs["start"]) and list(op.attrs["limit"]) == list(x.type.shape)
             and all(k == 1 for k in stride))
    return x if whole else None


def _pad(op: Operation) -> Outcome:
    interior = op.attrs.get("interior") or []
    if any(op.attrs["low"]) or any(op.attrs["high"]) or any(interior):
        return None
    return op.operands[0]


def _concatenate(op: Operation) -> Outcome:
    return op.operands[0] if len(op.operands) == 1 else None


def _reduce(op: Operation) -> Outcome:
    return op.operands[0] if not op.attrs["dims"] else None


_RULES = {
    "add": _add,
    "mul": _mul,
    "sub": _right_identity(0),
    "div": _right_identity(1),
    "and": _pred_identity(True),
    "or": _pred_identity(False),
    "neg": _involution,
    "not": _involution,
    "select": _select,
    "convert": _convert,
    "transpose": _transpose,
    "reshape": _reshape,
    "broadcast": _broadcast,
    "slice": _slice,
    "pad": _pad,
    "concatenate": _concatenate,
    "reduce": _reduce,
    "gather": _gather,
    "scatter_add": _scatter_add,
}
