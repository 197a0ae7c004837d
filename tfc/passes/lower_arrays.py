"""Lowering the TensorArrayV3 ops: a TensorArray becomes a value.

A TensorArray's ``flow`` tensor stands for the whole array, an IR tensor of shape
``[size, *element_shape]``: a write or scatter makes a new array (``scatter_add`` into it:
TF lets each index be written once, so the element written over is still zero), a read or
gather reads one (``gather``), and a while loop carries the array where TF carries the
flow. The handle only says which array (its size and element type); it is not an IR
value. A new array's element shape is known from its first write or scatter: until then
its flow is a ``PendingArray``, and a loop that carries one learns the shape by lowering
its body once first (``lower_control.ControlFlowLowering.lower_loop``). TF 2's TensorList
ops are the same with the list value as the array. Each op's registry entry
(tfc/frontend/tensor_array.py) names its function here.
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
    # A gradient array whose ops get the array's own flow, not a gradient flow: writes
    # start from zeros, reads read zeros (see ``array_grad``).
    fresh: bool = False


@dataclass(eq=False)
class PendingArray:
    """The flow of an array nothing has been written to yet."""

    handle: ArrayHandle
    type: object = None  # not an IR value


# -- TensorArrayV3 ops: (handle, ..., flow) in, a new flow out -------------------------------
def new_array(ctx, op, size):
    """TensorArrayV3: the handle, and zeros (or a pending array) as the first flow."""
    return _new_array(ctx, op, size)


def array_size(ctx, op, handle, flow):
    return _size_value(ctx, _handle(ctx, op, handle))


def array_write(ctx, op, handle, index, value, flow):
    return _scatter(ctx, _flow(ctx, op, handle, flow), _reshape_index(ctx, index), _as_row(ctx, value))


def array_scatter(ctx, op, handle, indices, value, flow):
    return _scatter(ctx, _flow(ctx, op, handle, flow), indices, value)


def array_read(ctx, op, handle, index, flow):
    return ctx.b.value("gather", [_existing(ctx, op, _flow(ctx, op, handle, flow)), index], {"axis": 0})


def array_gather(ctx, op, handle, indices, flow):
    return ctx.b.value("gather", [_existing(ctx, op, _flow(ctx, op, handle, flow)), indices], {"axis": 0})


def array_grad(ctx, op, handle, flow):
    """TensorArrayGradV3: the gradient array of ``handle``. TF makes one per array and
    source, shared by every op that names it, and threads its writes with flows (the
    gradient array's ops take ``gradient_flow``, an Identity of this op's ``flow_in``).
    Compiled, a flow stands for the gradients written along it, summed where TF sums
    flows: a gradient flow coming in (the gradient of a write or scatter, about to read)
    is that array; the array's own flow (the gradient of a read or gather, about to write)
    starts a new one, zeros: the handle says which (``fresh``)."""
    _handle(ctx, op, handle)
    fresh = _is_forward_flow(op._inputs[1])
    return [ArrayHandle(handle.size, handle.elem, fresh=fresh), flow]


# -- TF 2's TensorList ops: the list value is the array itself (no handle, no flow) -------------
def list_reserve(ctx, op, element_shape, count):
    known = ctx.static_dims(count)
    if not known:
        ctx.fail("the size of a TensorList must be known when the program is compiled")
    handle = ArrayHandle(known[0], ctx.elem(op._attrs["element_dtype"]))
    shape = ctx.static_dims(element_shape)
    if shape is not None and all(isinstance(d, int) and d >= 0 for d in shape) and element_shape.type.shape:
        return zeros(ctx.b, ir.TensorType(handle.elem, (handle.size, *shape)))
    return PendingArray(handle)


def list_from_tensor(ctx, op, tensor, element_shape):
    return tensor


def list_get_item(ctx, op, array, index, element_shape):
    return ctx.b.value("gather", [_existing(ctx, op, array), index], {"axis": 0})


def list_set_item(ctx, op, array, index, item):
    return _scatter(ctx, array, _reshape_index(ctx, index), _as_row(ctx, item))


def list_stack(ctx, op, array, element_shape):
    return _existing(ctx, op, array)


def list_length(ctx, op, array):
    array = _existing(ctx, op, array)
    return _size_value(ctx, ArrayHandle(array.type.shape[0], array.type.elem))


# -- helpers ----------------------------------------------------------------------------------
def _handle(ctx, op, handle) -> ArrayHandle:
    if not isinstance(handle, ArrayHandle):
        ctx.fail(f"{op.type} works on a TensorArray handle tfc cannot follow (it must come from a TensorArrayV3"
                 f" of this graph, through while loops if any)")
    return handle


def _flow(ctx, op, handle, flow):
    """The array an op on ``handle`` works on: ``flow``, or zeros for a fresh gradient array."""
    if not _handle(ctx, op, handle).fresh:
        return flow
    if isinstance(flow, PendingArray):
        return PendingArray(handle)
    return zeros(ctx.b, flow.type)


def _as_row(ctx, value):
    """``value`` as the one row a write scatters: shape (1, *value.shape)."""
    return ctx.reshape(value, (1, *value.type.shape))


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


def _scatter(ctx, flow, indices, value):
    """``value``'s rows added at ``indices`` of the array ``flow`` (zeros when pending)."""
    if isinstance(flow, PendingArray):
        flow = zeros(ctx.b, ir.TensorType(flow.handle.elem, (flow.handle.size, *value.type.shape[1:])))
    return ctx.b.value("scatter_add", [flow, indices, value], {"axis": 0})


def _existing(ctx, op, flow):
    if isinstance(flow, PendingArray):
        ctx.fail(f"{op.type} reads a TensorArray nothing was written to")
    return flow


_FLOW_PASS_THROUGH = frozenset({"Identity", "Enter", "RefEnter", "Exit", "RefExit", "Switch", "RefSwitch", "Merge",
                                "RefMerge", "NextIteration", "RefNextIteration"})


def _is_forward_flow(tensor) -> bool:
    """Whether ``tensor`` is the flow of an array itself (made by a TensorArrayV3, through
    writes, loops and stacks) rather than a gradient flow."""
    from .lower_stacks import pushes_of, stack_of

    while True:
        op = tensor.op
        if op.type == "TensorArrayV3":
            return True
        if op.type in ("TensorArrayWriteV3", "TensorArrayScatterV3"):
            if _handle_source(op._inputs[0]).type == "TensorArrayGradV3":
                return False  # a write into a gradient array
            tensor = op._inputs[3]
        elif op.type in _FLOW_PASS_THROUGH:
            tensor = op._inputs[0]
        elif op.type == "StackPopV2" and stack_of(op._inputs[0]) is not None and pushes_of(stack_of(op._inputs[0])):
            tensor = pushes_of(stack_of(op._inputs[0]))[0]._inputs[1]
        else:
            return False


def _handle_source(tensor):
    """The op making a handle (through Enter and Identity ops)."""
    while tensor.op.type in ("Enter", "RefEnter", "Identity") and tensor.op._inputs:
        tensor = tensor.op._inputs[0]
    return tensor.op


def zeros(builder: ir.Builder, t: ir.TensorType) -> ir.Value:
    scalar = ir.TensorType(t.elem, ())
    zero = builder.value("constant", [], {"value": np.zeros((), t.elem.np_dtype)}, scalar)
    return builder.value("broadcast", [zero], {"dims": []}, t) if t.shape else zero
