"""State ops: VariableV2, Assign, AssignAdd, AssignSub, IsVariableInitialized."""
from __future__ import annotations

import numpy as np

from .. import dtypes
from ..op_helper import apply_op
from ..registry import Attr, OpType, ShapeError, register
from ..tensor_shape import TensorShape


def _merge_shapes(a: TensorShape, b: TensorShape) -> TensorShape:
    try:
        return a.merge_with(b)
    except ValueError:
        if a.ndims is not None and b.ndims is not None and a.ndims != b.ndims:
            raise ShapeError(f"Shapes must be equal rank, but are {a.ndims} and {b.ndims}") from None
        for da, db in zip(a.dims, b.dims):
            if da.value is not None and db.value is not None and da.value != db.value:
                raise ShapeError(f"Dimension 0 in both shapes must be equal, but are {da.value} and {db.value}. "
                                 f"Shapes are {_text(a)} and {_text(b)}.") from None
        raise


def _text(shape: TensorShape) -> str:
    return "[" + ",".join("?" if d is None else str(d) for d in shape.as_list()) + "]"


@register
class VariableV2(OpType):
    outputs = ["ref: Ref(dtype)"]
    attrs = {"shape": Attr("shape"), "dtype": Attr("type"), "container": Attr("string", ""),
             "shared_name": Attr("string", "")}
    stateful = True
    not_differentiable = True

    def infer(op):
        return [op._attrs["shape"]]


def _stored_value(ctx, ref, value):
    """``value`` with the variable's exact type (symbolic dims unified with its static ones)."""
    target = ref.type.tensor
    if value.type.rank != target.rank:
        ctx.fail(f"cannot store a value of rank {value.type.rank} in a variable of type {target}")
    for mine, theirs in zip(target.shape, value.type.shape):
        ctx.unify(mine, theirs, (target.shape, value.type.shape))
    return value


@register
class Assign(OpType):
    inputs = ["ref: Ref(T)", "value: T"]
    outputs = ["output_ref: Ref(T)"]
    attrs = {"T": Attr("type"), "validate_shape": Attr("bool", True), "use_locking": Attr("bool", True)}
    stateful = True
    not_differentiable = True  # TF's state_grad.py

    def infer(op):
        ref, value = op.inputs
        if not op._attrs["validate_shape"]:
            return [value.shape]
        return [_merge_shapes(ref.shape, value.shape)]

    def lower(ctx, op, ref, value):
        target = ref.type.tensor
        if op._attrs["validate_shape"] and value.type.rank != target.rank:  # TF's run-time error, for a fed rank
            from ..errors import InvalidArgumentError

            raise InvalidArgumentError(None, op, "Assign requires shapes of both tensors to match. lhs shape= "
                                                 f"{_ir_shape_text(target)} rhs shape= {_ir_shape_text(value.type)}")
        ctx.b.op("assign", [ref, _stored_value(ctx, ref, value)])
        return ref


def _ir_shape_text(tensor_type) -> str:
    return "[" + ",".join(str(d) if isinstance(d, int) else "?" for d in tensor_type.shape) + "]"


def _lower_update(core_op: str):
    def lower(ctx, op, ref, value):
        current = ctx.b.value("read", [ref])
        updated = ctx.elementwise(core_op, current, _stored_value(ctx, ref, value))
        ctx.b.op("assign", [ref, updated])
        return ref

    return lower


def _update_shape(op):
    ref, value = op.inputs
    _merge_shapes(ref.shape, value.shape)
    return [ref.shape]


@register
class AssignAdd(OpType):
    inputs = ["ref: Ref(T)", "value: T"]
    outputs = ["output_ref: Ref(T)"]
    attrs = {"T": Attr("type"), "use_locking": Attr("bool", False)}
    stateful = True
    not_differentiable = True  # TF's state_grad.py
    infer = _update_shape
    lower = _lower_update("add")


@register
class AssignSub(OpType):
    inputs = ["ref: Ref(T)", "value: T"]
    outputs = ["output_ref: Ref(T)"]
    attrs = {"T": Attr("type"), "use_locking": Attr("bool", False)}
    stateful = True
    not_differentiable = True  # TF's state_grad.py
    infer = _update_shape
    lower = _lower_update("sub")


# IsVariableInitialized is answered by the session that runs it (it owns the variables'
# buffers): while it compiles a step, tfc/runtime/session.py puts its answers here, and
# each answer lowers to a constant of that step (the session compiles one step per
# combination of answers), so what depends on it folds (a ready op's boolean_mask).
def _lower_is_variable_initialized(ctx, op, ref):
    answers = ctx.initialized
    if op not in answers:
        ctx.fail("IsVariableInitialized is answered by the tf.Session that runs it; it cannot be compiled alone")
    return ctx.constant(np.array(bool(answers[op])))


@register
class IsVariableInitialized(OpType):
    inputs = ["ref: Ref(dtype)"]
    outputs = ["is_initialized: bool"]
    attrs = {"dtype": Attr("type")}
    stateful = True
    not_differentiable = True

    def infer(op):
        return [TensorShape([])]

    lower = _lower_is_variable_initialized


def variable_op_v2(shape, dtype, name="Variable", container="", shared_name=""):
    from ..graph import get_default_graph

    return get_default_graph().create_op(
        "VariableV2", [], name=name,
        attrs={"shape": TensorShape(shape), "dtype": dtypes.as_dtype(dtype), "container": container,
               "shared_name": shared_name}).outputs[0]


def _require_ref(ref, what: str):
    from ..convert import convert_to_tensor

    tensor = convert_to_tensor(ref, as_ref=True)
    if not tensor.dtype.is_ref_dtype:
        raise TypeError(f"'{what}' Op requires that input 'ref' be a mutable tensor (e.g.: a tf.Variable)")
    return tensor


def assign(ref, value, validate_shape=None, use_locking=None, name=None):
    """tf.assign: store ``value`` in the variable ``ref``; returns the new value."""
    attrs = {}
    if validate_shape is not None:
        attrs["validate_shape"] = validate_shape
    if use_locking is not None:
        attrs["use_locking"] = use_locking
    return apply_op("Assign", [_require_ref(ref, "Assign"), value], attrs, name).outputs[0]


def assign_add(ref, value, use_locking=None, name=None):
    attrs = {} if use_locking is None else {"use_locking": use_locking}
    return apply_op("AssignAdd", [_require_ref(ref, "AssignAdd"), value], attrs, name).outputs[0]


def assign_sub(ref, value, use_locking=None, name=None):
    attrs = {} if use_locking is None else {"use_locking": use_locking}
    return apply_op("AssignSub", [_require_ref(ref, "AssignSub"), value], attrs, name).outputs[0]


def is_variable_initialized(ref, name=None):
    return apply_op("IsVariableInitialized", [_require_ref(ref, "IsVariableInitialized")], {}, name).outputs[0]


TF_EXPORTS = ["assign", "assign_add", "assign_sub", "is_variable_initialized"]
