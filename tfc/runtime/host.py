"""Host ops: the few graph ops that run in Python around the compiled program.

Some ops are not computation: they read or write files (SaveV2, RestoreV2), build
protocol buffers (summaries), or move strings. Their registry entries provide
``host(op, *input_values) -> [output values]``; an op runs on the host when its entry
says ``host_only`` or when it touches a string tensor (e.g. an Identity of a filename).

A step runs in three phases: host ops that depend only on feeds and constants run first
(their outputs are fed to the program, e.g. restored tensors), then the compiled
program, then host ops that consume its results (e.g. a save, a summary). A compiled op
that needs a late host op's result cannot be ordered this way and is an error that
names both.

An entry with ``host_effect`` (tf.Print) is compiled (an identity) and its ``host`` also
runs after the program, in graph order with the late host ops, on values the program
returns: printing is a host action after the step. Inside a tf.cond or tf.while_loop it
is a ``host_call`` of the program instead, run where the program reaches it
(``run_host_call``; tfc/runtime/host_calls.py).

An entry with ``host_fallback`` (tf.where's indices, tf.setdiff1d) is compiled when the
compiler can fold it (its values known while compiling), and runs on the host when the
lowering refuses it (values known only at run time: the session then plans the step
again with the op forced to the host). A compiled op that needs a late host op's result
makes the step run in stages (``HostPlan.middle``).
"""
from __future__ import annotations

import threading
from dataclasses import dataclass, field

import numpy as np

from tfc.frontend import dtypes
from tfc.frontend.registry import lookup_op_type
from tfc.passes.lower import prune


def runs_on_host(op, forced=frozenset()) -> bool:
    """``forced``: ops with a ``host_fallback`` the compiler could not lower in this step
    (tf.where of values known only at run time): they run on the host too."""
    if op in forced:
        return True
    entry = lookup_op_type(op.type)
    if getattr(entry, "host", None) is None or getattr(entry, "host_effect", False):
        return False
    if getattr(entry, "host_call_in_control_flow", False) and op._get_control_flow_context() is not None:
        return False  # compiled as a host_call of the program (tf.print in a branch or a loop)
    if getattr(entry, "host_only", False):
        return True
    tensors = list(op.inputs) + list(op.outputs)
    return any(t.dtype.base_dtype == dtypes.string for t in tensors)


class HostOpError(ValueError):
    """A compiled op depends on a host op that can only run after the program."""


@dataclass
class HostPlan:
    """How one step splits into host and compiled work."""

    early: list = field(default_factory=list)  # host ops run before the program, in order
    late: list = field(default_factory=list)  # host ops run after it, in order
    native_fetches: list = field(default_factory=list)  # tensors the program must return
    native_targets: list = field(default_factory=list)  # ops the program must run
    early_outputs: list = field(default_factory=list)  # host results fed to the program
    # host ops that compiled ops wait for (a py_func, tf.where's indices...): the step runs
    # in stages (Session._execute_staged); the other fields are then unused
    middle: list = field(default_factory=list)

    @property
    def trivial(self) -> bool:
        return not self.early and not self.late


def plan_step(fetch_tensors, target_ops, fed_tensors, forced_host=frozenset()) -> HostPlan:
    """Split what a run needs into early host ops, the program, and late host ops
    (``forced_host``: see ``runs_on_host``)."""
    fed = set(fed_tensors)
    needed = prune(fetch_tensors, target_ops, fed)
    host = [op for op in needed if runs_on_host(op, forced_host)]
    if host:  # a string Const that a compiled op reads (tf.Assert's message) is compiled: its value is known
        host_set, needed_set = set(host), set(needed)
        host = [op for op in host if not (op.type == "Const" and any(
            user in needed_set and user not in host_set for t in op.outputs for user in t.consumers()))]
    if host:  # a NoOp grouping host ops (tf.tables_initializer; a group of assignments and a queue's ops) is
        # done on the host, after its compiled control inputs (the program runs them)
        host_set = set(host)
        for op in needed:  # topological order; (a Const after a host op too: one a partition sends for a
            # control edge between tasks)
            if (op.type in ("NoOp", "Const") and not op.inputs and op.control_inputs
                    and any(c in host_set for c in op.control_inputs)):
                host.append(op)
                host_set.add(op)
        host = [op for op in needed if op in host_set]
    # (one inside a tf.cond or tf.while_loop is a host call of the program: see host_calls.py)
    effects = [op for op in needed if getattr(lookup_op_type(op.type), "host_effect", False)
               and op._get_control_flow_context() is None]
    if not host and not effects:
        return HostPlan(native_fetches=list(fetch_tensors), native_targets=list(target_ops))
    host_set, effect_set = set(host), set(effects)
    early, late = [], []
    early_set: set = set()
    for op in needed:  # topological order
        if op in effect_set:
            late.append(op)
            continue
        if op not in host_set:
            continue
        inputs_ready = all(t in fed or t.op in early_set or _is_constant(t.op) for t in op.inputs)
        controls_ready = all(c in early_set or _is_constant(c) for c in op.control_inputs)
        if inputs_ready and controls_ready:
            early.append(op)
            early_set.add(op)
        else:
            late.append(op)
    late_set = set(late) - effect_set  # an effect's outputs are the program's
    native_ops = [op for op in needed if op not in host_set and not (_is_constant(op) and _only_host_users(op, host_set))]
    middle = _middle_host_ops(native_ops, late_set)
    if middle:
        return HostPlan(middle=middle)
    plan = HostPlan(early=early, late=late)
    native_set = set(native_ops)
    early_outputs = []
    for op in native_ops:
        for t in op.inputs:
            if t.op in early_set and t not in early_outputs:
                early_outputs.append(t)
    plan.early_outputs = early_outputs
    wanted: list = []
    for t in fetch_tensors:
        if t.op in native_set and t not in fed and t not in wanted:
            wanted.append(t)
    for op in late:
        for t in op.inputs:  # a constant is read by run_host_ops (a string one is no program value)
            if t.op in native_set and t not in fed and t not in wanted and not _is_constant(t.op):
                wanted.append(t)
    plan.native_fetches = wanted
    targets = [op for op in target_ops if op in native_set]
    for op in late:
        targets.extend(c for c in op.control_inputs if c in native_set and c not in targets)
    plan.native_targets = targets
    return plan


def _middle_host_ops(native_ops: list, late_set: set) -> list:
    """The late host ops a compiled op needs (an input or a control dependency), in
    graph order: their results exist only after a first program ran, so the step runs
    in stages. One inside a tf.cond or tf.while_loop cannot be staged: refused."""
    middle = []
    for op in native_ops:
        for t in op.inputs:
            if t.op in late_set and t.op not in middle:
                middle.append(t.op)
        for c in op.control_inputs:
            if c in late_set and c not in middle:
                middle.append(c)
    for host_op in middle:
        if host_op._get_control_flow_context() is not None:
            raise HostOpError(f"'{host_op.name}' ({host_op.type}) runs on the host and compiled ops need its "
                              "result, inside a tf.cond or tf.while_loop: tfc cannot run a step in stages there yet")
    return sorted(middle, key=lambda op: op._id)  # creation order is a topological order


def _is_constant(op) -> bool:
    """A Const available before anything runs (one under control dependencies is not)."""
    return op.type == "Const" and not op.control_inputs


def _only_host_users(op, host_set) -> bool:
    return all(consumer in host_set for t in op.outputs for consumer in t.consumers())


_RUNNING = threading.local()
_SESSION_RELEASERS: list = []


def on_session_close(callback) -> None:
    """Register ``callback(session)``, called when a session closes: host ops that keep
    per-session state (tf.data iterators and their prefetch threads) release it."""
    if callback not in _SESSION_RELEASERS:
        _SESSION_RELEASERS.append(callback)


def release_session_state(session) -> None:
    for callback in list(_SESSION_RELEASERS):
        callback(session)


def current_session():
    """The session whose step runs host ops now (a host op's per-session state, e.g. a lookup table)."""
    return getattr(_RUNNING, "session", None)


def run_host_ops(ops, values: dict, session=None) -> None:
    """Run host ops in order; ``values`` maps tensors to numpy values (updated)."""
    previous = current_session()
    _RUNNING.session = session
    try:
        _run_host_ops(ops, values)
    finally:
        _RUNNING.session = previous


def _run_host_ops(ops, values: dict) -> None:
    from tfc.frontend.tensor_util import const_op_value

    for op in ops:
        inputs = []
        for t in op.inputs:
            if t not in values and _is_constant(t.op):
                values[t] = const_op_value(t.op)
            inputs.append(values[t])
        if op.type == "NoOp":  # a group of host ops (see plan_step)
            continue
        if op.type == "Const":  # a constant after host ops (see plan_step)
            values[op.outputs[0]] = const_op_value(op)
            continue
        outputs = lookup_op_type(op.type).host(op, *inputs)
        outputs = [] if outputs is None else list(outputs)
        if len(outputs) != len(op.outputs):
            raise AssertionError(f"host op {op.type} returned {len(outputs)} values for {len(op.outputs)} outputs")
        for t, value in zip(op.outputs, outputs):
            values[t] = value if isinstance(value, np.ndarray) else np.asarray(value)


def run_host_call(ops: list, given: dict) -> None:
    """The host sides of ``ops``, in order, where a compiled program called back
    (``host_call``, see host_calls.py): ``given`` maps tensors to the values the program
    passed; other inputs are constants (string data of a tf.Print), read from the graph,
    outputs of the ops before (tf.print's StringFormat), or inputs the host side does not
    read (None). Their outputs are not the program's."""
    from tfc.frontend.tensor_util import const_op_value

    values = dict(given)
    for op in ops:
        inputs = []
        for t in op.inputs:
            if t in values:
                inputs.append(values[t])
            elif t.op.type == "Const":
                inputs.append(const_op_value(t.op))
            else:  # an input the host side does not read (tf.Print's passed-through value)
                inputs.append(None)
        outputs = lookup_op_type(op.type).host(op, *inputs)
        values.update(zip(op.outputs, [] if outputs is None else list(outputs)))
