"""Lowering the TensorArrayV3 ops: a TensorArray becomes a value.

A TensorArray's ``flow`` tensor stands for the whole array, an IR tensor of shape
``[size, *element_shape]``: a write or scatter makes a new array (``scatter_add`` into it:
TF lets each index be written once, so the element written over is still zero), a read or
gather reads one (``gather``), and a while loop carries the array where TF carries the
flow. The handle only says which array (its size and element type); it is not an IR
value. A new array's element shape is known from its first write or scatter: until then
its flow is a ``PendingArray``, and a loop that carries one learns the shape by lowering
its body once first (``lower_control.ControlFlowLowering.lower_loop``).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tfc import ir


@dataclass(eq=False)
class ArrayHandle:
    """What a TensorArray handle lowers to: the array's size (a dim) and element type."""

    size: object
    elem: ir.ElemType
    type: object = None  # not an IR value


@dataclass(eq=False)
class PendingArray:
    """The flow of an array nothing has been written to yet."""

    handle: ArrayHandle
    type: object = None  # not an IR value


def lower_tensor_array_op(ctx, op, *inputs):
    kind = op.type
    if kind.startswith("TensorList"):
        return _lower_tensor_list_op(ctx, op, *inputs)
    if kind == "TensorArrayV3":
        return _new_array(ctx, op, inputs[0])
    handle = inputs[0]
    if not isinstance(handle, ArrayHandle):
        ctx.fail(f"{kind} works on a TensorArray handle tfc cannot follow (it must come from a TensorArrayV3 of"
                 f" this graph, through while loops if any)")
    if kind == "TensorArraySizeV3":
        return _size_value(ctx, handle)
    if kind == "TensorArrayWriteV3":
        _, index, value, flow = inputs
        return _scatter(ctx, handle, flow, _reshape_index(ctx, index), ctx.reshape(value, (1, *value.type.shape)))
    if kind == "TensorArrayScatterV3":
        _, indices, value, flow = inputs
        return _scatter(ctx, handle, flow, indices, value)
    if kind == "TensorArrayReadV3":
        _, index, flow = inputs
        return ctx.b.value("gather", [_existing(ctx, op, flow), index], {"axis": 0})
    if kind == "TensorArrayGatherV3":
        _, indices, flow = inputs
        return ctx.b.value("gather", [_existing(ctx, op, flow), indices], {"axis": 0})
    ctx.fail(f"{kind} is not supported yet")


def _lower_tensor_list_op(ctx, op, *inputs):
    """TF 2's TensorLists: the list value is the array itself (no handle, no flow)."""
    kind = op.type
    if kind == "TensorListReserve":
        element_shape, count = inputs
        known = ctx.static_dims(count)
        if not known:
            ctx.fail("the size of a TensorList must be known when the program is compiled")
        handle = ArrayHandle(known[0], ctx.elem(op._attrs["element_dtype"]))
        shape = ctx.static_dims(element_shape)
        if shape is not None and all(isinstance(d, int) and d >= 0 for d in shape) and element_shape.type.shape:
            return zeros(ctx.b, ir.TensorType(handle.elem, (handle.size, *shape)))
        return PendingArray(handle)
    if kind == "TensorListFromTensor":
        return inputs[0]
    if kind == "TensorListGetItem":
        array, index, _ = inputs
        return ctx.b.value("gather", [_existing(ctx, op, array), index], {"axis": 0})
    if kind == "TensorListSetItem":
        array, index, item = inputs
        handle = array.handle if isinstance(array, PendingArray) else None
        if handle is None:
            return ctx.b.value("scatter_add", [array, _reshape_index(ctx, index), ctx.reshape(item, (1, *item.type.shape))],
                               {"axis": 0})
        return _scatter(ctx, handle, array, _reshape_index(ctx, index), ctx.reshape(item, (1, *item.type.shape)))
    if kind == "TensorListStack":
        return _existing(ctx, op, inputs[0])
    if kind == "TensorListLength":
        array = _existing(ctx, op, inputs[0])
        return _size_value(ctx, ArrayHandle(array.type.shape[0], array.type.elem))
    ctx.fail(f"{kind} is not supported yet")


def _new_array(ctx, op, size):
    known = ctx.static_dims(size)
    if not known:
        ctx.fail("the size of a TensorArray must be known when the program is compiled (a constant, or a"
                 " dimension of a fed tensor)")
    handle = ArrayHandle(known[0], ctx.elem(op._attrs["dtype"]))
    element = op._attrs.get("element_shape")
    if element is not None and element.is_fully_defined():
        shape = (handle.size, *element.as_list())
        return [handle, zeros(ctx.b, ir.TensorType(handle.elem, shape))]
    return [handle, PendingArray(handle)]


def _size_value(ctx, handle: ArrayHandle):
    if isinstance(handle.size, int):
        return ctx.constant(np.array(handle.size, np.int32))
    return ctx.from_static(np.array(handle.size, dtype=object), ir.ElemType.I32)


def _reshape_index(ctx, index):
    return ctx.reshape(index, (1,))


def _scatter(ctx, handle: ArrayHandle, flow, indices, value):
    if isinstance(flow, PendingArray):
        flow = zeros(ctx.b, ir.TensorType(handle.elem, (handle.size, *value.type.shape[1:])))
    return ctx.b.value("scatter_add", [flow, indices, value], {"axis": 0})


def _existing(ctx, op, flow):
    if isinstance(flow, PendingArray):
        ctx.fail(f"{op.type} reads a TensorArray nothing was written to")
    return flow


def zeros(builder: ir.Builder, t: ir.TensorType) -> ir.Value:
    scalar = ir.TensorType(t.elem, ())
    zero = builder.value("constant", [], {"value": np.zeros((), t.elem.np_dtype)}, scalar)
    return builder.value("broadcast", [zero], {"dims": []}, t) if t.shape else zero
