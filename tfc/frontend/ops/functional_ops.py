"""TF2's functional control flow as it appears in GraphDefs: If, StatelessIf, While and
StatelessWhile, whose branches, condition and body are functions of the GraphDef's
library (``then_branch``/``else_branch``, ``cond``/``body`` func attrs).

The ops are graph nodes like any other (shapes from their ``output_shapes`` attr, as TF's
shape functions take them); their bodies are instantiated as graphs of their own by
``tfc.frontend.function_library`` and lowered into the IR's ``if``/``while`` regions by
``tfc/passes/lower_control.py``, which handles these ops as whole constructs (so their
per-op ``lower`` is never called: it says so if it is).
"""
from __future__ import annotations

from ..registry import Attr, OpType, register
from ..tensor_shape import unknown_shape


def _shapes_from_attr(op) -> list:
    shapes = op._attrs.get("output_shapes") or []
    count = len(op.outputs) if op.outputs else len(_out_types(op))
    if len(shapes) != count:
        return [unknown_shape()] * count
    return list(shapes)


def _out_types(op) -> list:
    return op._attrs.get("Tout") or op._attrs.get("T") or []


def _lowered_as_a_whole(ctx, op, *inputs):
    ctx.fail(f"{op.type} is lowered as a whole construct with its function bodies; it was reached on its own")


class _If(OpType):
    inputs = ["cond: Tcond", "input: Tin"]
    outputs = ["output: Tout"]
    attrs = {"Tcond": Attr("type"), "Tin": Attr("list(type)"), "Tout": Attr("list(type)"),
             "then_branch": Attr("func"), "else_branch": Attr("func"),
             "output_shapes": Attr("list(shape)", [])}
    infer = _shapes_from_attr
    lower = _lowered_as_a_whole


@register
class If(_If):
    """Runs ``then_branch`` or ``else_branch`` on ``input`` (may have side effects)."""


@register
class StatelessIf(_If):
    """If whose branches have no side effects."""


class _While(OpType):
    inputs = ["input: T"]
    outputs = ["output: T"]
    attrs = {"T": Attr("list(type)"), "cond": Attr("func"), "body": Attr("func"),
             "output_shapes": Attr("list(shape)", []), "parallel_iterations": Attr("int", 10)}
    infer = _shapes_from_attr
    lower = _lowered_as_a_whole


@register
class While(_While):
    """Loop variables through ``body`` while ``cond`` holds."""


@register
class StatelessWhile(_While):
    """While whose condition and body have no side effects."""
