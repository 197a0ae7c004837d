"""How many times a TF1 while loop can iterate, read from its structure.

A compiled program keeps a loop's stacks (the forward values its gradient needs) in
buffers of fixed size, so the compiler must bound the loop's trip count. TF's loops that
have one are counted loops: a loop variable ``c`` starting at a value known when the
program is compiled, stepped by a known constant each iteration
(``NextIteration(Add(Identity(Switch(c)[1]), step))``), and a condition comparing it with a
known limit (``c < limit``: tf.while_loop's ``maximum_iterations`` is such a counter,
``iteration_counter < maximum_iterations``). A condition ``a and b`` (LogicalAnd) stops at
the first of the two, so either one's bound bounds it. Anything else is not bounded here
(None): a loop whose condition depends on the data it computes, with no counter beside it.

A bound is ``exact`` when the condition is the counter's comparison alone: the loop then
runs exactly that many times.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional

_COMPARES = {"Less": "<", "LessEqual": "<=", "Greater": ">", "GreaterEqual": ">="}
_MIRRORED = {"<": ">", "<=": ">=", ">": "<", ">=": "<="}


@dataclass(frozen=True)
class TripBound:
    count: object  # an int, or a symbolic dim (a dimension of a fed tensor)
    exact: bool


def trip_bound(loop_cond, static_scalar: Callable) -> Optional[TripBound]:
    """The bound of the loop whose LoopCond is ``loop_cond``; ``static_scalar(tensor)`` gives
    a tensor's value when known at compile time (an int or a symbolic dim), else None."""
    return _bound(loop_cond._inputs[0], static_scalar, exact=True)


def _bound(tensor, static_scalar, exact: bool) -> Optional[TripBound]:
    op = tensor.op
    if op.type == "Identity":
        return _bound(op._inputs[0], static_scalar, exact)
    if op.type == "LogicalAnd":
        bounds = [b for b in (_bound(t, static_scalar, False) for t in op._inputs) if b is not None]
        ints = [b for b in bounds if isinstance(b.count, int)]
        if ints:
            return min(ints, key=lambda b: b.count)
        return bounds[0] if bounds else None
    if op.type not in _COMPARES:
        return None
    relation = _COMPARES[op.type]
    left, right = op._inputs
    for counter_side, limit_side, rel in ((left, right, relation), (right, left, _MIRRORED[relation])):
        counter = _counter(counter_side, static_scalar)
        limit = static_scalar(limit_side)
        if counter is not None and limit is not None:
            count = _count(counter[0], counter[1], rel, limit)
            if count is not None:
                return TripBound(count, exact)
    return None


def _counter(tensor, static_scalar) -> Optional[tuple]:
    """(start, step) when ``tensor`` is a loop variable stepped by a known constant."""
    merge = tensor.op
    if merge.type != "Merge" or len(merge._inputs) != 2 or merge._inputs[1].op.type != "NextIteration":
        return None
    start = static_scalar(merge._inputs[0])
    if not isinstance(start, int):
        return None
    step_op = merge._inputs[1].op._inputs[0].op
    if step_op.type not in ("Add", "AddV2", "Sub"):
        return None
    for value_side, step_side in ((0, 1), (1, 0)) if step_op.type != "Sub" else ((0, 1),):
        if _is_switched(step_op._inputs[value_side], merge):
            step = static_scalar(step_op._inputs[step_side])
            if isinstance(step, int) and step != 0:
                return start, -step if step_op.type == "Sub" else step
    return None


def _is_switched(tensor, merge) -> bool:
    """``tensor`` is the loop variable ``merge`` as the body sees it (Switch output 1)."""
    while tensor.op.type == "Identity":
        tensor = tensor.op._inputs[0]
    return tensor.op.type == "Switch" and tensor.value_index == 1 and tensor.op._inputs[0].op is merge


def _count(start: int, step: int, relation: str, limit) -> object:
    """Iterations of ``for (c = start; c relation limit; c += step)``; None if unknown."""
    if not isinstance(limit, int):
        return limit if (start, step, relation) == (0, 1, "<") else None
    if step > 0 and relation in ("<", "<="):
        span = limit - start + (1 if relation == "<=" else 0)
        return max(0, -(-span // step))
    if step < 0 and relation in (">", ">="):
        span = start - limit + (1 if relation == ">=" else 0)
        return max(0, -(-span // -step))
    return None
