"""tf.gradients: the backward graph, built at the graph level as TensorFlow builds it.

Ops between ``ys`` and ``xs`` are visited in reverse dataflow order (an op when every
consumer on a path to ``ys`` has contributed its gradient); the gradients reaching each
output are summed (``AddN``), the op's registry entry ``gradient(op, *out_grads)`` builds
the gradients of its inputs under the name scope ``gradients/<op>_grad``. Unconnected
inputs get ``None``, as in TF.
"""
from __future__ import annotations

import collections
import enum

from . import dtypes
from .convert import convert_to_tensor
from .graph import Operation, Tensor, colocate_with, name_scope
from .registry import lookup_op_type


class UnconnectedGradients(enum.Enum):
    NONE = "none"
    ZERO = "zero"


def _trainable_dtype(dtype) -> bool:
    base = dtypes.as_dtype(dtype).base_dtype
    return base.is_floating or base.is_complex


def _reachable(from_ops, stop) -> set:
    """Ops on some path from ``from_ops`` forward (stopping at ``stop``)."""
    reached = set(from_ops)
    queue = collections.deque(from_ops)
    while queue:
        op = queue.popleft()
        for t in op.outputs:
            for consumer in t.consumers():
                if consumer not in reached and consumer not in stop:
                    reached.add(consumer)
                    queue.append(consumer)
    return reached


def _between(to_ops, from_ops, stop) -> set:
    """Ops both reachable from ``from_ops`` and leading to ``to_ops``."""
    forward = _reachable(from_ops, stop)
    between = set()
    queue = collections.deque(op for op in to_ops if op in forward)
    between.update(queue)
    while queue:
        op = queue.popleft()
        for t in op.inputs:
            producer = t.op
            if producer in forward and producer not in between:
                between.add(producer)
                queue.append(producer)
    return between


def _default_grad_ys(grad_ys, ys):
    out = []
    for i, (y, grad_y) in enumerate(zip(ys, grad_ys)):
        if grad_y is None:
            from .ops.array_ops import fill, shape
            from .ops.constant_op import constant

            if y.dtype.is_complex:
                raise TypeError(f"Gradients of complex tensors must set grad_ys (y.dtype = {y.dtype!r})")
            out.append(fill(shape(y), constant(1, dtype=y.dtype.base_dtype, name=f"grad_ys_{i}")))
        else:
            from .ops.array_ops import identity

            grad_y = convert_to_tensor(grad_y, dtype=y.dtype.base_dtype)
            out.append(identity(grad_y, name=f"grad_ys_{i}"))
    return out


def _aggregate(grads: dict, tensor):
    """The gradient of an output: None, the only one, or their AddN (made once)."""
    received = [g for g in grads.get(tensor, []) if g is not None]
    if not received:
        return None
    if len(received) == 1:
        return received[0]
    from .ops.math_ops import add_n

    with colocate_with(received[0].op, ignore_existing=True):  # TF's _MultiDeviceAddN (one device)
        total = add_n(received)
    grads[tensor] = [total]
    return total


def gradients(ys, xs, grad_ys=None, name="gradients", colocate_gradients_with_ops=False, gate_gradients=False,
              aggregation_method=None, stop_gradients=None,
              unconnected_gradients=UnconnectedGradients.NONE):
    """Symbolic derivatives of sum(ys) with respect to each of xs."""
    del colocate_gradients_with_ops, aggregation_method
    ys = list(ys) if isinstance(ys, (list, tuple)) else [ys]
    xs = list(xs) if isinstance(xs, (list, tuple)) else [xs]
    stop_gradients = list(stop_gradients or [])
    if grad_ys is None:
        grad_ys = [None] * len(ys)
    grad_ys = list(grad_ys) if isinstance(grad_ys, (list, tuple)) else [grad_ys]
    if len(grad_ys) != len(ys):
        raise ValueError(f"Passed {len(grad_ys)} grad_ys for {len(ys)} ys")
    values = ys + xs + stop_gradients + [g for g in grad_ys if g is not None]
    with name_scope(name, "gradients", [v for v in values if isinstance(v, Tensor)]):
        ys = [convert_to_tensor(y, name="y") for y in ys]
        xs = [convert_to_tensor(x, name="x", as_ref=True) for x in xs]
        stop_tensors = [convert_to_tensor(s) for s in stop_gradients]
        grad_ys = _default_grad_ys(grad_ys, ys)
        to_ops = [y.op for y in ys]
        from_ops = [x.op for x in xs]
        stop_ops = {t.op for t in stop_tensors}
        between = _between(to_ops, from_ops, stop_ops)
        pending = _pending_counts(between)
        grads: dict = collections.defaultdict(list)  # tensor -> received gradients
        for y, g in zip(ys, grad_ys):
            grads[y].append(g)
        queue = collections.deque()
        for op in dict.fromkeys(to_ops):
            if pending.get(op, 0) == 0 and op in between:
                queue.append(op)
        stop_ops |= _ops_without_reachable_inputs(from_ops, pending)
        done = set()
        while queue:
            op = queue.popleft()
            if op in done:
                continue
            done.add(op)
            out_grads = [_aggregate(grads, t) for t in op.outputs]
            in_grads = [None] * len(op.inputs)
            if any(g is not None for g in out_grads) and op not in stop_ops:
                in_grads = _op_gradients(op, out_grads, gate_gradients)
            for t_in, g in zip(op.inputs, in_grads):
                if g is not None:
                    if isinstance(g, Tensor):
                        try:
                            g.set_shape(t_in.get_shape())
                        except ValueError:
                            raise ValueError(
                                f"Incompatible shapes between op input and calculated input gradient.  Forward "
                                f"operation: {op.name}.  Input index: {op.inputs.index(t_in)}. Original input "
                                f"shape: {t_in.shape}.  Calculated input gradient shape: {g.shape}") from None
                    grads[t_in].append(g)
            for t_in in op.inputs:
                producer = t_in.op
                if producer in pending:
                    pending[producer] -= 1
                    if pending[producer] == 0 and producer in between:
                        queue.append(producer)
        out = []
        for x in xs:
            g = _aggregate(grads, x) if x in grads else None
            if g is None and unconnected_gradients == UnconnectedGradients.ZERO:
                from .ops.array_ops import zeros_like

                g = zeros_like(x)
            out.append(g)
        return out


def _ops_without_reachable_inputs(from_ops, pending: dict) -> set:
    """TF's _StopOps: an x whose inputs do not depend on any x is not differentiated."""
    return {op for op in from_ops if all(t.op not in pending for t in op.inputs)}


def _pending_counts(between: set) -> dict:
    """How many consumers in ``between`` each op must hear from before it is visited."""
    pending: dict = {op: 0 for op in between}
    for op in between:
        for t in op.inputs:
            if t.op in between:
                pending[t.op] += 1
    return pending


def _op_gradients(op: Operation, out_grads: list, gate_gradients: bool) -> list:
    entry = lookup_op_type(op.type)
    if entry.not_differentiable:
        return [None] * len(op.inputs)
    if entry.gradient is None:
        raise LookupError(f"No gradient defined for operation '{op.name}' (op type: {op.type})")
    for i, g in enumerate(out_grads):
        if g is None and _trainable_dtype(op.outputs[i].dtype):
            from .control_flow import zeros_like_outside_loop

            out_grads[i] = zeros_like_outside_loop(op, i)
    with name_scope(op.name + "_grad"):
        in_grads = entry.gradient(op, *out_grads)
        in_grads = list(in_grads) if isinstance(in_grads, (list, tuple)) else [in_grads]
        if len(in_grads) != len(op.inputs):
            raise ValueError(f"Num gradients {len(in_grads)} generated for op {op.node_def.name} do not match num "
                             f"inputs {len(op.inputs)}")
        if gate_gradients and sum(g is not None for g in in_grads) > 1:
            from .ops.control_flow_ops import tuple as grad_tuple

            gated = grad_tuple([g for g in in_grads if g is not None])
            it = iter(gated)
            in_grads = [next(it) if g is not None else None for g in in_grads]
    return in_grads


TF_EXPORTS = ["gradients"]
