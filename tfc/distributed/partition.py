"""Partitioning a placed step per task, as TensorFlow's graph_partition.cc does.

Given a step's ops (the pruned subgraph of its fetches, targets and feeds) and the task of
each (tfc/distributed/placer.py), ``build`` makes one GraphDef per task:

- every node keeps its NodeDef (its attrs as the client sent them), with its device set to
  the task's CPU and its colocation attrs dropped (placement is done); a constant (a Const
  without control inputs) is copied to each task that uses it instead of being sent at
  every step;
- every data edge between tasks becomes a ``_Send`` on the producer's task and a
  ``_Recv`` on the consumer's, one per (tensor, receiving task) — tensors one task sends
  another at the same point of the step travel packed in one (tfc/distributed/transfers.py)
  — with TF's attrs:
  ``tensor_name`` ``edge_<id>_<source node>``, ``send_device``,
  ``send_device_incarnation`` (the producer's task incarnation, as its GetStatus
  reported it), ``recv_device``, ``client_terminated`` false, ``T`` / ``tensor_type``
  (and the tensor's static shape as ``_output_shapes``: the receiver compiles with it);
- every control edge between tasks becomes, as in TF, a dummy Const (an empty float
  tensor, with the control edge from the source) sent to the consumer's task, whose
  ``_Recv`` is a control input of the consumer;
- a fed tensor is received, on each task that consumes it, by a client-terminated
  ``_Recv`` named ``_recv_<tensor>`` (tensor_name: the tensor's name, sent by the master
  in RunGraph); a fetched tensor is sent by a client-terminated ``_Send`` named
  ``_send_<tensor>`` on its producer's task (returned in RunGraph's response). Both ends
  of their keys are that task's device: a TF worker takes a fed tensor only from its own
  device and gives a fetched one only to it (its rendezvous checks), as TF's master
  feeds and fetches on its own device.

Rendezvous keys are TF's: ``src_device;incarnation(16 hex);dst_device;tensor_name;0:0``.
An edge between tasks inside a while loop or a tf.cond branch (a frame, or a tensor that
may be dead) is an UnimplementedError naming it: such a graph has to keep the loop (or the
cond) on one task.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from tfc.frontend import errors
from tfc.frontend.tensor_shape import TensorShape
from tfc.protos.graph_pb2 import GraphDef

from .placer import SWITCH_OPS as _SWITCH, ENTER_OPS as _ENTER, inside_control_flow
from .rendezvous import make_key
from .transfers import Transfer, emit as emit_transfers, int64 as _int64, set_shape as _set_shape

# Ops whose value a local step compiles as a constant (the session answers them): received
# from another task, they stay constants of the receiving program (tfc/distributed/stages.py).
STEP_CONSTANT_OPS = ("IsVariableInitialized",)
_NO_NEEDS = frozenset()
_EMPTY_VECTOR = TensorShape([0])  # what a control edge between tasks sends (TF's dummy Const)



@dataclass
class PartitionGraph:
    """One task's share of a step."""

    task: tuple  # (job, task index)
    device: str
    graph_def: GraphDef = field(default_factory=GraphDef)
    feeds: list = field(default_factory=list)  # [(feed position, rendezvous key)]: sent in RunGraph
    fetches: list = field(default_factory=list)  # [(fetch position, rendezvous key)]: RunGraph's recv_key


def tensor_input(tensor) -> str:
    index = tensor.value_index
    return tensor.op.name if index == 0 else f"{tensor.op.name}:{index}"


def _flat(name: str) -> str:
    return name.replace(":", "_")


def build(graph, ops, placement: dict, fetches: list, feeds: list, devices: dict, targets=()) -> dict:
    """{task: PartitionGraph} for a step. ``ops``: its pruned ops (topological order);
    ``placement``: op -> task; ``fetches``: the computed fetches (tensors, each once);
    ``feeds``: fed tensors; ``devices``: task -> (device name, incarnation); ``targets``:
    the ops run for their effect."""
    from tfc.frontend.graph_io import GRAPH_DEF_VERSION, GRAPH_DEF_VERSION_MIN_CONSUMER

    fed = {t: i for i, t in enumerate(feeds)}
    parts: dict = {}
    taken = set(graph._nodes_by_name)
    counter = [0]
    edge_ids = [0]

    def part(task) -> PartitionGraph:
        found = parts.get(task)
        if found is None:
            found = parts[task] = PartitionGraph(task, devices[task][0])
            found.graph_def.versions.producer = GRAPH_DEF_VERSION
            found.graph_def.versions.min_consumer = GRAPH_DEF_VERSION_MIN_CONSUMER
        return found

    def new_name(prefix: str) -> str:
        while True:
            name = f"{prefix}/_{counter[0]}"
            counter[0] += 1
            if name not in taken:
                taken.add(name)
                return name

    pending: list = []  # Transfer: emitted (packed where they travel together) at the end
    needs: dict = {}  # op -> the recv names on its task it depends on (its stage there)

    def transfer(src_task, dst_task, input_text: str, dtype: int, source_name: str, source_op,
                 step_constant=False, shape=None) -> str:
        """A tensor sent from src_task to dst_task; the name of what gives it on dst_task."""
        recv_name = new_name(source_name)
        pending.append(Transfer(src_task, dst_task, input_text, dtype, source_name, recv_name,
                                needs.get(source_op, _NO_NEEDS), source_op, shape, step_constant))
        return recv_name

    def next_edge_id() -> int:
        edge_ids[0] += 1
        return edge_ids[0] - 1

    flow = inside_control_flow(ops)
    sent: dict = {}  # (tensor, task) -> recv name there
    controls: dict = {}  # (op, task) -> recv name there
    client_recvs: dict = {}  # (fed tensor, task) -> recv name there

    def check_edge(src_op, dst_op):
        if src_op in flow or (dst_op in flow and dst_op.type not in _SWITCH and dst_op.type not in _ENTER):
            inner = src_op if src_op in flow else dst_op
            raise errors.UnimplementedError(
                None, dst_op, f"The edge from '{src_op.name}' ({_task_text(placement[src_op])}) to '{dst_op.name}' "
                              f"({_task_text(placement[dst_op])}) crosses tasks inside a while loop or a tf.cond "
                              f"branch ('{inner.name}'): tfc partitions such control flow on one task only; place "
                              "the loop (or the cond) on one task")

    # A constant used on other tasks is copied there rather than sent at every step (the same
    # node, the same value); it stays on its own task only where it is used or fetched there.
    constant_tasks: dict = {}
    for op in ops:
        if op.type == "Const" and not op._control_inputs:
            constant_tasks.setdefault(op, set())
    if constant_tasks:
        fetched_ops = {t.op for t in fetches} | set(targets)
        for op in ops:
            for tensor in op._inputs:
                if tensor.op in constant_tasks and tensor not in fed:
                    constant_tasks[tensor.op].add(placement[op])
        for const in constant_tasks:
            if const in fetched_ops:
                constant_tasks[const].add(placement[const])

    def emit(op, task):
        node = part(task).graph_def.node.add()
        node.CopyFrom(op.node_def)
        node.device = devices[task][0]
        if "_class" in node.attr:
            del node.attr["_class"]
        return node

    for op in ops:
        if op in constant_tasks:
            for task in sorted(constant_tasks[op]):
                emit(op, task)
            continue
        task = placement[op]
        node = emit(op, task)
        del node.input[:]
        op_needs = set()
        for tensor in op._inputs:
            position = fed.get(tensor)
            if position is not None:
                name = client_recvs.get((tensor, task))
                if name is None:
                    name = client_recvs[(tensor, task)] = f"_recv_{_flat(tensor.name)}"
                    recv = part(task).graph_def.node.add(name=name, op="_Recv", device=devices[task][0])
                    recv.attr["tensor_type"].type = tensor.dtype.base_dtype.as_datatype_enum
                    recv.attr["tensor_name"].s = tensor.name.encode()
                    device, incarnation = devices[task]
                    recv.attr["send_device"].s = device.encode()
                    recv.attr["send_device_incarnation"].i = _int64(incarnation)
                    recv.attr["recv_device"].s = device.encode()
                    recv.attr["client_terminated"].b = True
                    _set_shape(recv, tensor.shape)
                    part(task).feeds.append((position, make_key(device, incarnation, device, tensor.name)))
                node.input.append(name)
                continue
            src_task = placement[tensor.op]
            if src_task == task or tensor.op in constant_tasks:
                node.input.append(tensor_input(tensor))
                op_needs.update(needs.get(tensor.op, _NO_NEEDS))
                continue
            check_edge(tensor.op, op)
            name = sent.get((tensor, task))
            if name is None:
                name = sent[(tensor, task)] = transfer(src_task, task, tensor_input(tensor),
                                                       tensor.dtype.base_dtype.as_datatype_enum, tensor.op.name,
                                                       tensor.op, tensor.op.type in STEP_CONSTANT_OPS, tensor.shape)
            node.input.append(name)
            op_needs.add(name)
        for control in op._control_inputs:
            src_task = placement[control]
            if src_task == task:
                node.input.append("^" + control.name)
                op_needs.update(needs.get(control, _NO_NEEDS))
                continue
            check_edge(control, op)
            name = controls.get((control, task))
            if name is None:
                dummy = part(src_task).graph_def.node.add(name=new_name(control.name), op="Const",
                                                          device=devices[src_task][0])
                dummy.input.append("^" + control.name)
                dummy.attr["dtype"].type = 1
                dummy.attr["value"].tensor.dtype = 1
                dummy.attr["value"].tensor.tensor_shape.dim.add(size=0)
                name = controls[(control, task)] = transfer(src_task, task, dummy.name, 1, control.name, control,
                                                            shape=_EMPTY_VECTOR)
            node.input.append("^" + name)
            op_needs.add(name)
        needs[op] = frozenset(op_needs)
    writing_stages = {(placement[op], needs[op]) for op in ops if op in needs and _writes_state(op)}
    for transfer_ in pending:
        if (transfer_.src, transfer_.needs) in writing_stages and _reads_variable(transfer_.source_op):
            transfer_.alone = True
    emit_transfers(pending, part, new_name, devices, next_edge_id)
    for position, tensor in enumerate(fetches):
        if tensor is None:
            continue
        task = placement[tensor.op]
        device, incarnation = devices[task]
        send = part(task).graph_def.node.add(name=f"_send_{_flat(tensor.name)}", op="_Send", device=device)
        send.input.append(tensor_input(tensor))
        send.attr["T"].type = tensor.dtype.base_dtype.as_datatype_enum
        send.attr["tensor_name"].s = tensor.name.encode()
        send.attr["send_device"].s = device.encode()
        send.attr["send_device_incarnation"].i = _int64(incarnation)
        send.attr["recv_device"].s = device.encode()
        send.attr["client_terminated"].b = True
        part(task).fetches.append((position, make_key(device, incarnation, device, tensor.name)))
    return parts


_VARIABLE_OPS = ("VariableV2", "Variable", "VarHandleOp", "TemporaryVariable", "ReadVariableOp")


def _reads_variable(op) -> bool:
    """``op``'s value is a variable's as it is (the variable, its ``read`` Identity, a
    ReadVariableOp): a send takes it after the stage's program ran."""
    if op.type in _VARIABLE_OPS:
        return True
    return op.type == "Identity" and bool(op._inputs) and op._inputs[0].op.type in _VARIABLE_OPS


def _writes_state(op) -> bool:
    """``op`` changes a variable: it takes a ref input (Assign, Apply*, Scatter*...) or writes
    a resource variable."""
    from .placer import ref_input_positions

    kind = op.type
    if kind.startswith(("ResourceApply", "ResourceSparseApply", "ResourceScatter")) or \
            (kind.startswith("Assign") and kind.endswith("VariableOp")):
        return True
    return bool(ref_input_positions(op))


def _task_text(task) -> str:
    return f"/job:{task[0]}/task:{task[1]}"
