"""TF's stack ops (StackV2, StackPushV2, StackPopV2, StackCloseV2) and ControlTrigger.

TF 1.15's gradient of a while loop keeps the forward values the backward loop needs on
stacks: a ``StackV2`` (``f_acc``) made outside the loops, a ``StackPushV2`` in the forward
loop (one push per iteration) and a ``StackPopV2`` in the backward loop, which runs the
iterations in reverse; ``ControlTrigger`` ops (``f_sync``/``b_sync``) order pushes and
pops. Graphs that TensorFlow writes for training with loops hold exactly these ops.

Compiled, a stack is not a resource: its contents are a value ``[capacity, *element]``
and its top an int32, threaded through the loops and conds that push or pop
(``tfc/passes/lower_stacks.py``).
"""
from __future__ import annotations

from . import dtypes
from .op_helper import apply_op
from .registry import Attr, OpType, lowering_in, register
from .tensor_shape import unknown_shape


def _lowering(name: str):
    """The entry's lowering: ``tfc.passes.lower_stacks.<name>``."""
    return lowering_in("tfc.passes.lower_stacks", name)


@register
class StackV2(OpType):
    """A new empty stack of ``elem_type`` values (``max_size`` < 0: unbounded)."""

    inputs = ["max_size: int32"]
    outputs = ["handle: resource"]
    attrs = {"elem_type": Attr("type"), "stack_name": Attr("string", "")}
    stateful = True
    not_differentiable = True

    def infer(op):
        """TF's TwoElementOutput: a stack handle is a vector of 2."""
        return [[2]]

    lower = _lowering("new_stack")


@register
class StackPushV2(OpType):
    """Push ``elem``; the output is ``elem`` itself."""

    inputs = ["handle: resource", "elem: T"]
    outputs = ["output: T"]
    attrs = {"T": Attr("type"), "swap_memory": Attr("bool", False)}
    stateful = True
    not_differentiable = True

    def infer(op):
        return [op._inputs[1].shape]

    lower = _lowering("stack_push")


@register
class StackPopV2(OpType):
    """Pop the value pushed last."""

    inputs = ["handle: resource"]
    outputs = ["elem: elem_type"]
    attrs = {"elem_type": Attr("type")}
    stateful = True
    not_differentiable = True

    def infer(op):
        return [unknown_shape()]

    lower = _lowering("stack_pop")


@register
class StackCloseV2(OpType):
    inputs = ["handle: resource"]
    outputs = []
    stateful = True
    not_differentiable = True

    def lower(ctx, op, *inputs):
        return []


@register
class ControlTrigger(OpType):
    """Does nothing; like NoOp, it only carries control edges (TF runs it even when its
    inputs are dead, which compiled control flow has no notion of)."""

    not_differentiable = True

    def lower(ctx, op):
        return []


def stack_v2(max_size, elem_type, stack_name: str = "", name=None):
    """gen_data_flow_ops.stack_v2."""
    return apply_op("StackV2", [max_size], {"elem_type": dtypes.as_dtype(elem_type).base_dtype,
                                            "stack_name": stack_name}, name=name or "StackV2")


def stack_push_v2(handle, elem, swap_memory: bool = False, name=None):
    """gen_data_flow_ops.stack_push_v2."""
    return apply_op("StackPushV2", [handle, elem], {"swap_memory": swap_memory}, name=name or "StackPushV2")


def stack_pop_v2(handle, elem_type, name=None):
    """gen_data_flow_ops.stack_pop_v2."""
    return apply_op("StackPopV2", [handle], {"elem_type": dtypes.as_dtype(elem_type).base_dtype},
                    name=name or "StackPopV2")


def control_trigger(name=None):
    """control_flow_ops.control_trigger."""
    return apply_op("ControlTrigger", [], name=name or "ControlTrigger")
