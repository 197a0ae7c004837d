"""The state tf.gradients keeps while it differentiates through v1 while loops: a port of
TensorFlow 1.15's control_flow_state.py (``_GradLoopState``, ``_ControlFlowState``,
``MaybeCreateControlFlowState``), building the same graph TF builds.

For every forward loop on the path between ``ys`` and ``xs``, tf.gradients makes one
:class:`GradLoopState`, which adds:

- to the forward loop, an iteration counter (``f_count``, WhileContext.AddForwardLoopCounter);
- a backprop while loop (frame ``gradients/<loop>/while_context``) running as many
  iterations (``b_count``, WhileContext.AddBackpropLoopCounter), inside which the gradients
  of the loop's ops are built;
- for every forward value the backprop loop needs, a stack (``f_acc``, a ``StackV2`` made
  outside the loops) pushed once per forward iteration (``StackPushV2``) and popped once
  per backprop iteration (``StackPopV2``), so iteration i of the backprop loop sees the
  value of forward iteration n - 1 - i. ``ControlTrigger`` ops (``f_sync``, ``b_sync``) and
  control edges order the pushes and the pops as TF orders them.

A value inside a cond inside the loop is pushed in the cond's branch and popped behind a
Switch on the cond's predicate (itself kept on a stack). Loops nested in loops keep their
iteration counts on the outer loop's stacks. tfc has no IndexedSlices, so TF's
IndexedSlices accumulator (AddBackpropIndexedSlicesAccumulator) has no counterpart; nor
does the XLA branch (stack sizes from ``maximum_iterations``): like non-XLA TF, every
stack gets ``max_size = -1`` and the compiler infers the capacity from the trip counts.
"""
from __future__ import annotations

from . import control_flow as cf
from . import dtypes
from .graph import Operation, colocate_with, control_dependencies
from .ops import array_ops
from .ops.constant_op import constant
from .stack_ops import control_trigger, stack_pop_v2, stack_push_v2, stack_v2
from .tensor_util import constant_value


class GradLoopState:
    """TF's _GradLoopState: one forward while loop and the backprop loop built for it.

    ``forward_context`` / ``grad_context``: the two WhileContexts; ``forward_index``: the
    forward counter's NextIteration (the count of the next iteration); ``grad_index``: the
    backprop counter's NextIteration (of the decremented count, the backprop body's pivot);
    ``outer_grad_state``: the state of the enclosing loop (nested loops), or None;
    ``history_map``: forward tensor name -> the tensor standing for it in the backprop loop
    (a stack pop, a loop invariant's Enter, a constant's copy); ``switch_map``: forward loop
    Switch op -> its backprop Merge (``b_switch``); ``unused_exits`` / ``deferred_exits`` /
    ``pending_exits_count``: how tf.gradients tracks which of the loop's Exits received a
    gradient before it starts the backprop loop.
    """

    def __init__(self, forward_ctxt, outer_grad_state):
        self._outer_grad_state = outer_grad_state
        self._forward_sync = None
        self._grad_sync = None
        self._history_map: dict = {}
        self._switch_map: dict = {}
        self._unused_exits: list = []
        self._deferred_exits: list = []
        self._forward_loop_exits = list(forward_ctxt.loop_exits)
        self._pending_exits_count = len(forward_ctxt.loop_exits)
        if outer_grad_state is not None:
            outer_forward_ctxt = outer_grad_state.forward_context
        else:
            outer_forward_ctxt = forward_ctxt.outer_context

        # The forward loop counter.
        with forward_ctxt._graph.as_default():
            if outer_forward_ctxt is not None:
                outer_forward_ctxt.Enter()
            cnt, forward_index = forward_ctxt.AddForwardLoopCounter(outer_grad_state)
            if outer_forward_ctxt is not None:
                outer_forward_ctxt.Exit()
        self._forward_context = forward_ctxt
        self._forward_index = forward_index

        # The backprop loop and its counter.
        if outer_grad_state is not None:
            # A nested loop: the iteration count of each of its runs, kept by the outer loop.
            outer_forward_ctxt.AddName(cnt.name)
            history_cnt = outer_grad_state.AddForwardAccumulator(cnt)
            outer_grad_ctxt = outer_grad_state.grad_context
            outer_grad_ctxt.Enter()
            self._grad_context = self._new_grad_context(forward_ctxt)
            real_cnt = outer_grad_state.AddBackpropAccumulatedValue(history_cnt, cnt)
            self._grad_index = self._grad_context.AddBackpropLoopCounter(real_cnt, outer_grad_state)
            outer_grad_ctxt.Exit()
        else:
            if outer_forward_ctxt is not None:
                outer_forward_ctxt.Enter()
            self._grad_context = self._new_grad_context(forward_ctxt)
            self._grad_index = self._grad_context.AddBackpropLoopCounter(cnt, outer_grad_state)
            if outer_forward_ctxt is not None:
                outer_forward_ctxt.Exit()

    def _new_grad_context(self, forward_ctxt):
        """The backprop loop's WhileContext (made in the current context; its frame is named
        after the forward loop's, in the gradients scope)."""
        return cf.WhileContext(maximum_iterations=forward_ctxt.maximum_iterations,
                               parallel_iterations=forward_ctxt.parallel_iterations,
                               back_prop=forward_ctxt.back_prop, swap_memory=forward_ctxt.swap_memory,
                               name=forward_ctxt.name, grad_state=self)

    @property
    def outer_grad_state(self):
        return self._outer_grad_state

    @property
    def forward_context(self):
        return self._forward_context

    @property
    def forward_index(self):
        return self._forward_index

    @property
    def forward_sync(self) -> Operation:
        """A ControlTrigger (``f_sync``) in the forward loop ordering the pushes made in a
        cond of the loop before the next iteration's counter (made on first use)."""
        if self._forward_sync is None:
            with control_dependencies(None):
                self._forward_sync = control_trigger(name="f_sync")
            self._forward_sync._set_control_flow_context(self._forward_context)
            self._forward_index.op._add_control_input(self._forward_sync)
        return self._forward_sync

    @property
    def grad_context(self):
        return self._grad_context

    @property
    def grad_index(self):
        return self._grad_index

    @property
    def grad_sync(self) -> Operation:
        """A ControlTrigger (``b_sync``) in the backprop loop ordering its pops before the
        next iteration's counter (made on first use)."""
        if self._grad_sync is None:
            with control_dependencies(None):
                self._grad_sync = control_trigger(name="b_sync")
            self._grad_sync._set_control_flow_context(self._grad_context)
            self._grad_index.op._add_control_input(self._grad_sync)
            if self._grad_context.outer_context is not None:
                self._grad_context.outer_context.AddInnerOp(self._grad_sync)
        return self._grad_sync

    @property
    def history_map(self) -> dict:
        return self._history_map

    @property
    def switch_map(self) -> dict:
        return self._switch_map

    @property
    def unused_exits(self) -> list:
        return self._unused_exits

    @property
    def deferred_exits(self) -> list:
        return self._deferred_exits

    @property
    def forward_loop_exits(self) -> list:
        return self._forward_loop_exits

    @property
    def pending_exits_count(self) -> int:
        return self._pending_exits_count

    @pending_exits_count.setter
    def pending_exits_count(self, cnt: int) -> None:
        self._pending_exits_count = cnt

    def AddForwardAccumulator(self, value, dead_branch=False):  # noqa: N802
        """TF's AddForwardAccumulator: a stack (``f_acc``, made in the context tf.gradients
        was called in) onto which the forward loop pushes ``value`` every iteration, the
        push made where ``value`` is (in the loop, or in a cond branch of the loop; for
        ``dead_branch``, the zeros of a cond's untaken branch, in the branch though built
        outside it). Returns the stack's handle."""
        with self._forward_index.graph.as_default():
            curr_ctxt = self._forward_index.graph._get_control_flow_context()
            with control_dependencies(None):
                if curr_ctxt is not None:
                    curr_ctxt.Enter()
                with colocate_with(value):
                    max_size = constant(-1, dtypes.int32)
                    acc = stack_v2(max_size=max_size, elem_type=value.dtype.base_dtype, name="f_acc").outputs[0]
                if curr_ctxt is not None:
                    curr_ctxt.Exit()

                enter_acc = self.forward_context.AddValue(acc)
                swap_enabled = self.forward_context.swap_memory
                value_ctxt = cf.get_output_context(value.op)
                if value_ctxt is self.forward_context:
                    self.forward_context.Enter()
                    push = stack_push_v2(enter_acc, value, swap_memory=swap_enabled)
                    self.forward_context.Exit()
                    # The push comes before the next iteration's counter.
                    self.forward_index.op._add_control_input(push)
                else:
                    if not isinstance(value_ctxt, cf.CondContext):
                        raise TypeError(f"value_ctxt is not a CondContext: {value_ctxt}")
                    if dead_branch:
                        value_ctxt.outer_context.Enter()
                        push = stack_push_v2(enter_acc, value, swap_memory=swap_enabled)
                        value_ctxt.outer_context.Exit()
                        push._set_control_flow_context(value_ctxt)
                    else:
                        value_ctxt.Enter()
                        push = stack_push_v2(enter_acc, value, swap_memory=swap_enabled)
                        value_ctxt.Exit()
                    self.forward_sync._add_control_input(push)
                # The push comes after this iteration's counter.
                add_op = self.forward_index.op.inputs[0].op
                push._add_control_input(add_op)
                return acc

    def AddBackpropAccumulatedValue(self, history_value, value, dead_branch=False):  # noqa: N802
        """TF's AddBackpropAccumulatedValue: the pop (in the backprop loop) of the stack
        ``history_value`` that keeps ``value``; behind a Switch on the cond's predicate
        when ``value`` is in a cond of the loop (the untaken branch for ``dead_branch``)."""
        history_ctxt = history_value.op._control_flow_context
        cond_ctxt = None
        value_ctxt = value.op._control_flow_context
        while value_ctxt is not None and value_ctxt is not history_ctxt:
            if isinstance(value_ctxt, cf.CondContext):
                cond_ctxt = value_ctxt
                break
            value_ctxt = value_ctxt.outer_context
        with control_dependencies(None):
            self.grad_context.Enter()
            if cond_ctxt is not None:
                grad_state = self
                pred = None
                while pred is None and grad_state is not None:
                    pred = grad_state.history_map.get(cond_ctxt.pred.name)
                    grad_state = grad_state.outer_grad_state
                if pred is None:
                    pred = cond_ctxt.pred
                branch = (1 - cond_ctxt.branch) if dead_branch else cond_ctxt.branch
                history_value = cf._SwitchRefOrTensor(history_value, pred)[branch]
            pop = stack_pop_v2(history_value, value.dtype.base_dtype).outputs[0]
            pop.set_shape(value.get_shape())
            self.grad_context.Exit()
        if self.grad_context.parallel_iterations > 1:
            # The pops come before the next backprop iteration's counter.
            self.grad_sync._add_control_input(pop.op)
        return pop

    def GetRealValue(self, value):  # noqa: N802
        """TF's GetRealValue: what stands for the forward tensor ``value`` in the backprop
        loop (called there): a loop invariant entered into the backprop loop, a copy of a
        constant, or the pop of a stack the forward loop pushes ``value`` onto (made once
        per value, kept in ``history_map``)."""
        assert value.op.type not in ("Variable", "VariableV2")
        real_value = self._history_map.get(value.name)
        if real_value is None:
            cur_value = value
            cur_grad_state = self
            history_value = None
            while True:
                enter_op = cf.get_loop_constant_enter(cur_value)
                if enter_op is not None:
                    # A loop invariant: look at what entered the loop.
                    cur_value = enter_op.inputs[0]
                    cur_grad_state = cur_grad_state.outer_grad_state
                    if cur_grad_state is None:
                        # Outside every loop being differentiated: enter it as it is.
                        real_value = self._grad_context.AddValue(cur_value)
                        break
                elif cur_value.op.type == "Const":
                    real_value = constant(constant_value(cur_value), dtype=cur_value.dtype)
                    break
                else:
                    self._grad_context.Exit()
                    history_value = cur_grad_state.AddForwardAccumulator(cur_value)
                    self._grad_context.Enter()
                    break
            if real_value is None:
                real_value = cur_grad_state.AddBackpropAccumulatedValue(history_value, cur_value)
                if cur_grad_state is not self:
                    real_value = self._grad_context.AddValue(real_value)
            self._history_map[value.name] = real_value
        return real_value


class ControlFlowState:
    """TF's _ControlFlowState: forward WhileContext -> its GradLoopState, for one
    tf.gradients call."""

    def __init__(self):
        self._map: dict = {}

    def GetGradState(self, op, before: bool):  # noqa: N802
        """The GradLoopState of the loop ``op`` is in (for an Exit ``before`` its gradient
        is built: the loop outside it), or None."""
        if before and cf._is_loop_exit(op):
            forward_ctxt = op._control_flow_context.outer_context
            if forward_ctxt is not None:
                forward_ctxt = forward_ctxt.GetWhileContext()
        else:
            forward_ctxt = cf.get_while_context(op)
        if forward_ctxt is not None:
            return self._map.get(forward_ctxt)
        return None

    def ProcessUnusedLoopExits(self, pending_count, to_ops_set) -> list:  # noqa: N802
        """TF's ProcessUnusedLoopExits: the Exits of the loops whose gradient is nothing
        (no consumer between ys and xs) are "unused"; when every Exit of a loop is known
        at this point, its unused ones are returned (they get zeros if the loop needs
        them). A loop's Enters get a pending count of at least 1."""
        loop_exits = []
        for grad_state in self._map.values():
            for y in grad_state.forward_loop_exits:
                if pending_count[y.op] == 0:
                    grad_state.pending_exits_count -= 1
                    if y.op not in to_ops_set:
                        grad_state.unused_exits.append(y)
                    if grad_state.pending_exits_count == 0:
                        loop_exits.extend(grad_state.unused_exits)
            for y in grad_state.forward_context.loop_enters:
                if pending_count[y.op] == 0:
                    pending_count[y.op] = 1
        return loop_exits

    def EnterGradWhileContext(self, op, before: bool) -> None:  # noqa: N802
        grad_state = self.GetGradState(op, before)
        if grad_state is not None:
            grad_state.grad_context.Enter()

    def ExitGradWhileContext(self, op, before: bool) -> None:  # noqa: N802
        grad_state = self.GetGradState(op, before)
        if grad_state is not None:
            grad_state.grad_context.Exit()

    def AddWhileContext(self, op, between_op_list: list, between_ops: set) -> None:  # noqa: N802
        """TF's AddWhileContext: a GradLoopState for the loop of the Exit ``op`` (once per
        loop); every Exit of the loop joins the ops between ys and xs."""
        forward_ctxt = cf.get_while_context(op)
        grad_state = self._map.get(forward_ctxt)
        if grad_state is None:
            outer_forward_ctxt = forward_ctxt.outer_context
            if outer_forward_ctxt is not None:
                outer_forward_ctxt = outer_forward_ctxt.GetWhileContext()
            outer_grad_state = None
            if outer_forward_ctxt is not None:
                outer_grad_state = self._map.get(outer_forward_ctxt)
            grad_state = GradLoopState(forward_ctxt, outer_grad_state)
            self._map[forward_ctxt] = grad_state
            for loop_exit in grad_state.forward_loop_exits:
                if loop_exit.op not in between_ops:
                    between_ops.add(loop_exit.op)
                    between_op_list.append(loop_exit.op)

    def ZerosLikeForExit(self, val):  # noqa: N802
        """TF's ZerosLikeForExit: the zero gradient of an unused Exit ``val`` (static
        shape: zeros of it; else of the runtime shape, kept on the outer loop's stack for
        a nested loop)."""
        val_shape = val.get_shape()
        forward_ctxt = val.op._control_flow_context
        outer_forward_ctxt = forward_ctxt.outer_context
        if outer_forward_ctxt is not None:
            outer_forward_ctxt = outer_forward_ctxt.GetWhileContext()
        outer_grad_state = None
        if outer_forward_ctxt is not None:
            outer_grad_state = self._map.get(outer_forward_ctxt)
        if outer_grad_state is not None:
            if val_shape.is_fully_defined():
                outer_grad_state.grad_context.Enter()
                result = array_ops.zeros(val_shape.as_list(), val.dtype)
                outer_grad_state.grad_context.Exit()
            else:
                forward_ctxt.outer_context.Enter()
                shape = array_ops.shape_internal(val, optimize=False)
                forward_ctxt.outer_context.Exit()
                history_shape = outer_grad_state.AddForwardAccumulator(shape)
                outer_grad_ctxt = outer_grad_state.grad_context
                outer_grad_ctxt.Enter()
                real_shape = outer_grad_state.AddBackpropAccumulatedValue(history_shape, shape)
                result = array_ops.zeros(real_shape, val.dtype)
                outer_grad_ctxt.Exit()
        elif val_shape.is_fully_defined():
            result = array_ops.zeros(val_shape.as_list(), val.dtype)
        else:
            result = array_ops.zeros_like(val, optimize=False)
        return result

    def ZerosLikeV1WhileLoop(self, op, index: int):  # noqa: N802
        """TF's ZerosLikeV1WhileLoop: the zero gradient of output ``index`` of ``op``,
        called in the backprop loop of ``op``'s loop: a constant for a static shape (behind
        a Switch on the popped predicate for a cond's Switch), else zeros of the runtime
        shape kept on a stack. None for a loop's Switch; ops outside the loops being
        differentiated get ``zeros_like_outside_loop``."""
        if cf._is_loop_switch(op):
            return None
        dead_branch = cf._is_switch(op)
        forward_ctxt = cf.get_while_context(op)
        grad_state = self._map.get(forward_ctxt)
        if grad_state is None:
            return cf.zeros_like_outside_loop(op, index)
        op_ctxt = op._control_flow_context
        val = op.outputs[index]
        shape = val.get_shape()
        if shape.is_fully_defined():
            result = constant(0, shape=shape.as_list(), dtype=val.dtype)
            if dead_branch:
                pred = grad_state.history_map.get(op_ctxt.pred.name)
                branch = op_ctxt.branch
                result = cf._SwitchRefOrTensor(result, pred)[1 - branch]
        else:
            if dead_branch:
                pred = op_ctxt.pred
                branch = op_ctxt.branch
                op_ctxt.outer_context.Enter()
                val = cf._SwitchRefOrTensor(op.inputs[0], pred)[1 - branch]
                zeros_shape = array_ops.shape_internal(val, optimize=False)
                op_ctxt.outer_context.Exit()
                val.op._set_control_flow_context(op_ctxt)
                zeros_shape.op._set_control_flow_context(op_ctxt)
            else:
                op_ctxt.Enter()
                zeros_shape = array_ops.shape_internal(val, optimize=False)
                op_ctxt.Exit()
            grad_state.grad_context.Exit()
            history_zeros_shape = grad_state.AddForwardAccumulator(zeros_shape, dead_branch=dead_branch)
            grad_state.grad_context.Enter()
            shape = grad_state.AddBackpropAccumulatedValue(history_zeros_shape, zeros_shape, dead_branch)
            result = array_ops.zeros(shape, val.dtype)
        return result

    def PostProcessing(self) -> None:  # noqa: N802
        """TF's PostProcessing: a backprop Merge whose two inputs are still the same tensor
        (the loop variable's next value does not depend on its value) takes zeros from the
        second iteration on."""
        for grad_state in self._map.values():
            for b_merge in grad_state.switch_map.values():
                if b_merge.op.inputs[0] is b_merge.op.inputs[1]:
                    dtype = b_merge.op.inputs[0].dtype
                    shape = b_merge.op.inputs[0].get_shape()
                    if shape.is_fully_defined():
                        grad_state.grad_context.Enter()
                        grad_val = constant(0, dtype=dtype, shape=shape.as_list())
                        next_grad_val = cf._NextIteration(grad_val)
                        grad_state.grad_context.Exit()
                    else:
                        outer_grad_ctxt = grad_state.grad_context.outer_context
                        if outer_grad_ctxt is not None:
                            outer_grad_ctxt.Enter()
                        enter_grad_op = b_merge.op.inputs[0].op
                        enter_grad = enter_grad_op.inputs[0]
                        grad_shape = array_ops.shape_internal(enter_grad, optimize=False)
                        grad_val = array_ops.zeros(grad_shape)
                        if outer_grad_ctxt is not None:
                            outer_grad_ctxt.Exit()
                        grad_state.grad_context.Enter()
                        next_grad_val = cf._NextIteration(grad_val)
                        grad_state.grad_context.Exit()
                    b_merge.op._update_input(1, next_grad_val)


def MaybeCreateControlFlowState(between_op_list: list, between_ops: set):  # noqa: N802
    """TF's MaybeCreateControlFlowState: a ControlFlowState when a loop's Exit is between
    ys and xs (one GradLoopState per loop, made in the order the Exits are met), else None.
    Adds the loops' other Exits to ``between_op_list`` / ``between_ops`` (and visits them)."""
    loop_state = None
    index = 0
    while index < len(between_op_list):  # the list grows as loops add their Exits
        op = between_op_list[index]
        if cf._is_loop_exit(op):
            if loop_state is None:
                loop_state = ControlFlowState()
            loop_state.AddWhileContext(op, between_op_list, between_ops)
        index += 1
    return loop_state
