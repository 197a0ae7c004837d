"""tf.gradients: the backward graph, built at the graph level as TensorFlow builds it
(TF 1.15's gradients_util._GradientsHelper).

Ops between ``ys`` and ``xs`` (reachable from ``xs`` through trainable tensors, leading to
``ys``) are visited in reverse dataflow order (an op when every consumer on a path to
``ys`` has contributed its gradient); the gradients reaching each output are summed
(``AddN``), the op's registry entry ``gradient(op, *out_grads)`` builds the gradients of
its inputs under the name scope ``gradients/<op>_grad``. Unconnected inputs get ``None``,
as in TF.

Through v1 while loops, a loop state (tfc/frontend/control_flow_state.py) builds one
backprop loop per forward loop: the gradients of a loop's ops are built inside its
backprop WhileContext (entered around each op), a loop's Switch is visited twice (from
its Exit, then from its body), a loop's Exits wait for each other, and the Exits nothing
between ``ys`` and ``xs`` uses get zeros when the loop needs them.
"""
from __future__ import annotations

import collections
import enum

from . import dtypes
from .convert import convert_to_tensor
from .graph import Operation, Tensor, colocate_with, name_scope
from .python_gradients import gradient_entry


class UnconnectedGradients(enum.Enum):
    NONE = "none"
    ZERO = "zero"


def _is_trainable(tensor) -> bool:
    """TF's backprop_util.IsTrainable: gradients flow through float, complex, resource and
    variant tensors."""
    base = tensor.dtype.base_dtype
    return base.is_floating or base.is_complex or base in (dtypes.resource, dtypes.variant)


def _mark_reached_ops(from_ops) -> set:
    """TF's _MarkReachedOps: the ops reachable from ``from_ops`` through trainable tensors."""
    reached = set()
    queue = collections.deque(from_ops)
    while queue:
        op = queue.popleft()
        if op not in reached:
            reached.add(op)
            for output in op.outputs:
                if _is_trainable(output):
                    queue.extend(output.consumers())
    return reached


def _pending_count(to_ops, from_ops):
    """TF's _PendingCount: (the to_ops reachable from from_ops, op -> how many backprop
    inputs it waits for, the loop state: None without while loops). The ops between are
    found breadth first from ``to_ops``; the loop state adds every Exit of their loops."""
    from .control_flow_state import MaybeCreateControlFlowState

    reached_ops = _mark_reached_ops(from_ops)
    reachable_to_ops = {op for op in to_ops if op in reached_ops}
    between_ops = set()
    between_op_list = []
    queue = collections.deque(to_ops)
    while queue:
        op = queue.popleft()
        if op in reached_ops:
            between_ops.add(op)
            between_op_list.append(op)
            reached_ops.remove(op)
            for inp in op.inputs:
                queue.append(inp.op)
    loop_state = MaybeCreateControlFlowState(between_op_list, between_ops)
    pending_count = collections.defaultdict(int)
    for op in between_op_list:
        for x in op.inputs:
            if x.op in between_ops:
                pending_count[x.op] += 1
    return reachable_to_ops, pending_count, loop_state


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


def _set_grad(grads: dict, t, grad) -> None:
    """TF's _SetGrad: ``grads`` maps an op to one list of received gradients per output;
    an already aggregated gradient (a loop Switch's, visited twice) is replaced."""
    op = t.op
    op_grads = grads.get(op)
    if not op_grads:
        op_grads = [[] for _ in op.outputs]
        grads[op] = op_grads
    t_grads = op_grads[t.value_index]
    if isinstance(t_grads, list):
        t_grads.append(grad)
    else:
        from .control_flow import _is_loop_switch

        assert _is_loop_switch(op)
        op_grads[t.value_index] = grad


def _get_grads(grads: dict, op) -> list:
    if op in grads:
        return grads[op]
    return [[] for _ in op.outputs]


def _has_any_not_none_grads(grads: dict, op) -> bool:
    """TF's _HasAnyNotNoneGrads."""
    for out_grad in _get_grads(grads, op):
        if isinstance(out_grad, Tensor):
            return True
        if out_grad and isinstance(out_grad, list) and any(g is not None for g in out_grad):
            return True
    return False


def _aggregated_grads(grads: dict, op, loop_state) -> list:
    """TF's _AggregatedGrads: each output's gradient (None, the only one, or their AddN),
    stored back in ``grads``; a loop Switch's already aggregated gradient is kept."""
    from .control_flow import _is_loop_switch

    out_grads = _get_grads(grads, op)
    for i, out_grad in enumerate(out_grads):
        if loop_state is not None and isinstance(out_grad, Tensor):
            assert _is_loop_switch(op)
            continue
        if out_grad:
            if len(out_grad) < 2:
                out_grads[i] = out_grad[0]
            else:
                from .ops.math_ops import add_n

                with colocate_with(out_grad[0].op, ignore_existing=True):  # TF's _MultiDeviceAddN (one device)
                    out_grads[i] = add_n(out_grad)
        else:
            out_grads[i] = None
    return out_grads


def _update_pending_and_enqueue_ready(grads: dict, op, queue, pending_count, loop_state) -> None:
    """TF's _UpdatePendingAndEnqueueReady: an input's op is ready when every consumer has
    given its gradient (a loop Switch: at each visit). A loop's Exits wait for each other:
    when the last one is ready, those with a gradient are queued and, if any, the others
    too with zeros (``unused_exits``)."""
    from .control_flow import _is_loop_exit, _is_loop_switch

    for x in op.inputs:
        pending_count[x.op] -= 1
        ready = pending_count[x.op] == 0
        if loop_state is not None and not ready:
            ready = pending_count[x.op] > 0 and _is_loop_switch(x.op)
        if ready:
            if _is_loop_exit(x.op):
                grad_state = loop_state.GetGradState(x.op, before=False)
                grad_state.deferred_exits.append(x)
                grad_state.pending_exits_count -= 1
                if grad_state.pending_exits_count == 0:
                    has_not_none_grad = False
                    for y in grad_state.deferred_exits:
                        if _has_any_not_none_grads(grads, y.op):
                            has_not_none_grad = True
                            queue.append(y.op)
                        else:
                            grad_state.unused_exits.append(y)
                    if has_not_none_grad:
                        for y in grad_state.unused_exits:
                            if _is_trainable(y):
                                _set_grad(grads, y, loop_state.ZerosLikeForExit(y))
                            queue.append(y.op)
                    else:
                        for y in grad_state.unused_exits:
                            queue.append(y.op)
            else:
                queue.append(x.op)


def _raise_no_grad_wrt_initial_loop_val_error(op, from_ops):
    """TF's _RaiseNoGradWrtInitialLoopValError: gradients() called in a loop body reached
    the loop's Switch (the x is the initial value of a loop variable, or behind it)."""
    target_op = None
    queue = collections.deque([op])
    visited = set()
    while queue:
        curr_op = queue.popleft()
        if curr_op in visited:
            continue
        visited.add(curr_op)
        if curr_op in from_ops:
            target_op = curr_op
            break
        queue.extend(t.op for t in curr_op.inputs)
    raise ValueError(f"Cannot compute gradient inside while loop with respect to op '{target_op.name}'. We do not "
                     f"support taking the gradient wrt or through the initial value of a loop variable. Gradients "
                     f"can be computed through loop invariants or wrt the input parameters to the loop body.")


def gradients(ys, xs, grad_ys=None, name="gradients", colocate_gradients_with_ops=False, gate_gradients=False,
              aggregation_method=None, stop_gradients=None,
              unconnected_gradients=UnconnectedGradients.NONE):
    """Symbolic derivatives of sum(ys) with respect to each of xs (TF's _GradientsHelper,
    with its loop state for v1 while loops: tfc/frontend/control_flow_state.py)."""
    del colocate_gradients_with_ops, aggregation_method
    from .control_flow import _is_switch, zeros_like_outside_loop
    from .graph import get_default_graph

    if getattr(get_default_graph(), "_is_eager", False):  # TF 1.x's message (tfc/frontend/eager)
        raise RuntimeError("tf.gradients is not supported when eager execution is enabled. Use tf.GradientTape "
                           "instead.")

    ys = list(ys) if isinstance(ys, (list, tuple)) else [ys]
    xs = list(xs) if isinstance(xs, (list, tuple)) else [xs]
    stop_gradients = list(stop_gradients or [])
    if grad_ys is None:
        grad_ys = [None] * len(ys)
    grad_ys = list(grad_ys) if isinstance(grad_ys, (list, tuple)) else [grad_ys]
    if len(grad_ys) != len(ys):
        raise ValueError(f"Passed {len(grad_ys)} grad_ys for {len(ys)} ys")
    try:
        unconnected_gradients = UnconnectedGradients(unconnected_gradients)
    except ValueError:
        raise ValueError(f"Unknown value for unconnected_gradients: '{unconnected_gradients}'") from None
    values = ys + xs + stop_gradients + [g for g in grad_ys if g is not None]
    with name_scope(name, "gradients", [v for v in values if isinstance(v, Tensor)]):
        ys = [convert_to_tensor(y, name="y") for y in ys]
        xs = [convert_to_tensor(x, name="x", as_ref=True) for x in xs]
        stop_tensors = [convert_to_tensor(s) for s in stop_gradients]
        grad_ys = _default_grad_ys(grad_ys, ys)
        to_ops = [y.op for y in ys]
        from_ops = [x.op for x in xs]
        reachable_to_ops, pending_count, loop_state = _pending_count(to_ops, from_ops)
        grads: dict = {}  # op -> per output, the list of gradients received (then their sum)
        for y, grad_y in zip(ys, grad_ys):
            _set_grad(grads, y, grad_y)
        queue = collections.deque()
        to_ops_set = set()
        for op in to_ops:
            if pending_count[op] == 0 and op not in to_ops_set and op in reachable_to_ops:
                to_ops_set.add(op)
                queue.append(op)
        if loop_state is not None:
            for y in loop_state.ProcessUnusedLoopExits(pending_count, to_ops_set):
                if _is_trainable(y):
                    _set_grad(grads, y, loop_state.ZerosLikeForExit(y))
                    queue.append(y.op)
        stop_ops = _stop_ops(from_ops, [t.op for t in stop_tensors], pending_count)
        while queue:
            op = queue.popleft()
            if loop_state is not None:
                loop_state.EnterGradWhileContext(op, before=True)
            out_grads = _aggregated_grads(grads, op, loop_state)
            if loop_state is not None:
                loop_state.ExitGradWhileContext(op, before=True)
            has_out_grads = any(g is not None for g in out_grads)
            entry = None
            if has_out_grads and op not in stop_ops:
                # TF's ops.get_gradient_function: tf.RegisterGradient's functions (under the op's
                # gradient_override_map type), then the op registry; None: not differentiable.
                entry = gradient_entry(op)
            if loop_state is not None:
                loop_state.EnterGradWhileContext(op, before=False)
            ctxt = op._control_flow_context
            if (_is_switch(op) and ctxt is not None and ctxt.IsWhileContext()
                    and ctxt is get_default_graph()._get_control_flow_context()):
                _raise_no_grad_wrt_initial_loop_val_error(op, from_ops)
            if entry is not None and has_out_grads:
                for i, out_grad in enumerate(out_grads):
                    if out_grad is None and _is_trainable(op.outputs[i]):
                        if loop_state is not None:
                            out_grads[i] = loop_state.ZerosLikeV1WhileLoop(op, i)
                        else:
                            out_grads[i] = zeros_like_outside_loop(op, i)
                in_grads = _op_gradients(op, entry, out_grads, gate_gradients)
            else:
                in_grads = [None] * len(op.inputs)
            for i, (t_in, in_grad) in enumerate(zip(op.inputs, in_grads)):
                if in_grad is not None:
                    if isinstance(in_grad, Tensor) and t_in.dtype != dtypes.resource:
                        try:
                            in_grad.set_shape(t_in.get_shape())
                        except ValueError:
                            raise ValueError(
                                f"Incompatible shapes between op input and calculated input gradient.  Forward "
                                f"operation: {op.name}.  Input index: {i}. Original input shape: {t_in.shape}.  "
                                f"Calculated input gradient shape: {in_grad.shape}") from None
                    _set_grad(grads, t_in, in_grad)
            if loop_state is not None:
                loop_state.ExitGradWhileContext(op, before=False)
            _update_pending_and_enqueue_ready(grads, op, queue, pending_count, loop_state)
    if loop_state is not None:
        loop_state.PostProcessing()
    out = []
    for x in xs:
        g = _get_grad(grads, x)
        if g is None and unconnected_gradients == UnconnectedGradients.ZERO:
            from .ops.array_ops import zeros_like

            g = zeros_like(x)
        out.append(g)
    return out


def _get_grad(grads: dict, t):
    """TF's _GetGrad: the aggregated gradient of ``t``, or None."""
    op_grads = grads.get(t.op)
    if not op_grads:
        return None
    t_grad = op_grads[t.value_index]
    assert not isinstance(t_grad, list), "gradients list should have been aggregated by now."
    return t_grad


def _stop_ops(from_ops, stop_gradient_ops, pending_count) -> set:
    """TF's _StopOps: an x whose inputs do not depend on any x is not differentiated, nor is
    any of ``stop_gradients``."""
    stop_ops = set()
    for op in from_ops:
        if all(pending_count[inp.op] <= 0 for inp in op.inputs):
            stop_ops.add(op)
    stop_ops.update(stop_gradient_ops)
    return stop_ops


def _op_gradients(op: Operation, entry, out_grads: list, gate_gradients: bool) -> list:
    """The entry's gradient function under ``<op>_grad`` (TF's name scope), checked."""
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
