"""Lowering TF's stack ops (StackV2, StackPushV2, StackPopV2): a stack becomes values.

TF 1.15 differentiates a while loop by pushing, in each forward iteration, the values the
backward loop needs onto stacks, and popping them in the backward loop, which runs the
iterations in reverse. A stack is a resource in TF; compiled, it is two values threaded
through the program: its contents, an array ``[capacity, *element]``, and its top, an
int32 (the number of values on it). A push writes row ``top`` and adds one (``scatter_add``
into a row nothing was written to: every push of a run gets its own row, as pops come only
after the pushes of the loop they belong to); a pop takes one and reads row ``top``.

Stack ops have effects TF orders with control edges, not data: no value of the graph
carries a stack from one op to the next. The control flow lowering
(``lower_control.ControlFlowLowering``) threads each stack through the loops and conds
whose ops push or pop it, as loop-carried values and branch results, in the order it
lowers ops (the graph's order). The contents are allocated at the entry of the outermost
loop that pushes: ``capacity`` is the largest number of pushes the loops can make (their
trip-count bounds, ``tfc/passes/loop_bounds.py``), the element type comes from the pushed
value (its static shape, or its type once the loop body is lowered).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np

from tfc import ir

from .lower_arrays import zeros

PUSH = "StackPushV2"
POP = "StackPopV2"
NEW = "StackV2"


@dataclass(eq=False)
class StackHandle:
    """What a stack handle lowers to: which stack (its StackV2 op)."""

    op: object
    type: object = None  # not an IR value


@dataclass(frozen=True)
class StackState:
    """A stack's values where the builder is: ``contents`` (None until allocated), ``top``.
    A stack pushed in an unrolled loop (lower_control's ``_unroll``: values of a different
    shape each iteration) is a list of the values on it instead: ``items``."""

    contents: Optional[ir.Value]
    top: ir.Value
    items: Optional[tuple] = None


@dataclass
class StackFacts:
    """What the pushes of a stack showed, wherever they were lowered: the element shape,
    and the value when every push pushes the same value known at compile time (TF pushes
    the shapes of forward tensors for the backward loop's BroadcastGradientArgs)."""

    element: Optional[tuple] = None
    static: Optional[np.ndarray] = None
    varies: bool = False


I32_SCALAR = ir.TensorType(ir.ElemType.I32, ())


# -- the ops -------------------------------------------------------------------------------------
def new_stack(ctx, op, max_size):
    if is_ordering_only(op):
        return StackHandle(op)
    ctx.stacks[op] = StackState(None, _int32(ctx, 0))
    ctx.stack_facts[op] = StackFacts()
    return StackHandle(op)


def stack_push(ctx, op, handle, value):
    if isinstance(handle, StackHandle) and is_ordering_only(handle.op):
        return value
    stack = _stack(ctx, op, handle)
    _learn(ctx, ctx.stack_facts[stack], value)
    state = ctx.stacks[stack]
    if state.items is not None:
        ctx.stacks[stack] = StackState(None, _add(ctx, state.top, 1), state.items + (value,))
        return value
    if state.contents is None:
        return value  # a loop body lowered once to learn the element type (see lower_control)
    row = ctx.reshape(value, (1, *value.type.shape))
    index = ctx.reshape(state.top, (1,))
    contents = ctx.b.value("scatter_add", [state.contents, index, row], {"axis": 0})
    ctx.stacks[stack] = StackState(contents, _add(ctx, state.top, 1))
    return value


def stack_pop(ctx, op, handle):
    if isinstance(handle, StackHandle) and is_ordering_only(handle.op):
        # Nothing reads the value: any value of the element type stands for it.
        return ctx.b.value("constant", [], {"value": np.zeros((), op._attrs["elem_type"].as_numpy_dtype)},
                           ir.TensorType(ctx.elem(op._attrs["elem_type"]), ()))
    stack = _stack(ctx, op, handle)
    state = ctx.stacks[stack]
    if state.items:
        ctx.stacks[stack] = StackState(None, _add(ctx, state.top, -1), state.items[:-1])
        return state.items[-1]
    if state.contents is None:
        ctx.fail(f"StackPopV2 '{op.name}' pops stack '{stack.name}' before anything was pushed onto it")
    top = _add(ctx, state.top, -1)
    ctx.stacks[stack] = StackState(state.contents, top)
    facts = ctx.stack_facts[stack]
    if facts.static is not None and not facts.varies:
        # Symbols unified since the push (a batch dim of two feeds) are renamed.
        return ctx.from_static(_canonical(ctx, facts.static), state.contents.type.elem)
    return ctx.b.value("gather", [state.contents, top], {"axis": 0})


def _canonical(ctx, array: np.ndarray) -> np.ndarray:
    if array.dtype != object:
        return array
    return np.vectorize(ctx.canon, otypes=[object])(array)


def _learn(ctx, facts: StackFacts, value) -> None:
    facts.element = tuple(value.type.shape)
    known = ctx.static(value)
    if known is None:
        facts.varies = True
    elif facts.static is None:
        facts.static = np.asarray(known)
    elif facts.static.shape != np.shape(known) or not all(a == b for a, b in zip(facts.static.reshape(-1),
                                                                                np.asarray(known).reshape(-1))):
        facts.varies = True


# -- used by lower_control -------------------------------------------------------------------
def stack_of(tensor):
    """The StackV2 op a handle tensor comes from (through Enter, Identity and Switch), or None."""
    while tensor.op.type != NEW:
        if tensor.op.type not in ("Enter", "RefEnter", "Identity", "Switch", "RefSwitch") or not tensor.op._inputs:
            return None
        tensor = tensor.op._inputs[0]
    return tensor.op


def touched_stacks(ops) -> list:
    """The stacks (StackV2 ops) that pushes or pops among ``ops`` work on, in order (not
    those only ordering ops: ``is_ordering_only``)."""
    out = []
    for op in ops:
        if op.type in (PUSH, POP):
            stack = stack_of(op._inputs[0])
            if stack is not None and stack not in out and not is_ordering_only(stack):
                out.append(stack)
    return out


def is_ordering_only(stack) -> bool:
    """Whether no op reads a value popped from ``stack`` (through Identity ops): TF's
    gradient of a TensorArray write pops the forward flow only to wait for it
    (``flow_out``, a control input). Compiled code needs no order, so such a stack holds
    nothing, and its pushes and pops do nothing."""
    return not any(_value_read(pop.outputs[0]) for pop in _handle_consumers(stack, POP))


def _value_read(tensor) -> bool:
    for consumer in tensor._consumers:
        if consumer.type != "Identity" or any(_value_read(t) for t in consumer.outputs):
            return True
    return False


def static_element(stack) -> Optional[tuple]:
    """The element shape every push of ``stack`` has in the graph, if fully defined."""
    shapes = set()
    for push in pushes_of(stack):
        shape = push._inputs[1].shape
        if not shape.is_fully_defined():
            return None
        shapes.add(tuple(shape.as_list()))
    return shapes.pop() if len(shapes) == 1 else None


def pushes_of(stack) -> list:
    """The StackPushV2 ops working on ``stack`` (its handle through Enters)."""
    return _handle_consumers(stack, PUSH)


def _handle_consumers(stack, op_type: str) -> list:
    """The ``op_type`` ops taking ``stack``'s handle (through Enter, Identity and Switch)."""
    out, pending, seen = [], [stack.outputs[0]], set()
    while pending:
        tensor = pending.pop()
        for consumer in tensor._consumers:
            if consumer in seen:
                continue
            seen.add(consumer)
            if consumer.type == op_type and consumer._inputs[0] is tensor:
                out.append(consumer)
            elif consumer.type in ("Enter", "RefEnter", "Identity", "Switch", "RefSwitch"):
                pending.extend(consumer.outputs)
    return out


def allocate(ctx, stack, capacity, element: tuple) -> None:
    """Give ``stack`` zero contents of ``capacity`` rows of ``element`` shape."""
    state = ctx.stacks[stack]
    shape = tuple(ctx.canon(d) for d in (capacity, *element))
    contents = zeros(ctx.b, ir.TensorType(ctx.elem(stack._attrs["elem_type"]), shape))
    ctx.stacks[stack] = StackState(contents, state.top)


def _stack(ctx, op, handle):
    if not isinstance(handle, StackHandle) or handle.op not in ctx.stacks:
        ctx.fail(f"{op.type} works on a stack handle tfc cannot follow (it must come from a StackV2 of this graph,"
                 f" through Enter ops)")
    return handle.op


def _int32(ctx, value: int) -> ir.Value:
    return ctx.b.value("constant", [], {"value": np.array(value, np.int32)}, I32_SCALAR)


def _add(ctx, value: ir.Value, step: int) -> ir.Value:
    return ctx.b.value("add", [value, _int32(ctx, step)])
