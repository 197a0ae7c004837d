"""The _Send/_Recv pairs of a partitioned step, with the tensors that travel together packed.

A parameter server sends a worker every variable of a layer stack at the start of a step,
and gets every gradient back at its end: one RecvTensor call per tensor, each a gRPC round
trip with its threads and wake-ups, though they all become ready at the same moment. This
module packs the tensors one task sends another *at the same point of the step* into one
transfer: on the sender, each is flattened (``Reshape`` to ``[-1]``) and the pieces are
joined (``ConcatV2``) into one tensor, sent by one ``_Send``; on the receiver, one ``_Recv``
gets it, a ``SplitV`` cuts it up again and a ``Reshape`` per piece restores each shape,
under the name the consumers already use for that tensor's ``_Recv``.

Why it is safe: tensors are packed only when they have the same dtype, fully known static
shapes, and depend on the same set of tensors the sending task receives from others in
the step (``needs``: exactly what decides the stage of the sender's partition that computes
them, tfc/distributed/stages.py). So the packed tensor is ready when each of its pieces
would have been, and no receiver waits longer for any of them; there is no new dependency
between tasks, hence no new deadlock. A control edge between tasks travels as an empty
float tensor (TF's dummy Const), and packs with the float tensors of its stage. Transfers
marked as constants of the step (``_tfc_step_constant``) keep their own pair. The packed
partitions use only standard ops, so TensorFlow's workers run them too.

One exception keeps tfc's order of reads and writes: a variable's value sent as it is (the
variable, its ``read`` Identity, a ReadVariableOp) is taken after the sending stage's
program ran, so it shows the stage's updates (an ``assign_add`` with no order against the
read, as TensorFlow's ref variables would show most of the time); packed, it would be read
by the program at some point of it. Such a transfer travels alone when its stage writes
state (partition.py decides: ``alone``). A training step's parameters are read in a stage
that writes nothing (the updates wait for the gradients), so they still travel packed.
"""
from __future__ import annotations

from dataclasses import dataclass

from .stages import STEP_CONSTANT_ATTR

_DT_INT32 = 3


@dataclass
class Transfer:
    """One tensor sent from ``src`` to ``dst`` (tasks) in a step."""

    src: tuple
    dst: tuple
    input_text: str  # the sent tensor, as a node input on the sender ("op" or "op:1")
    dtype: int  # its DataType enum
    source_name: str  # the op that made it (names the transfer's nodes)
    recv_name: str  # the node on the receiver that gives it (the consumers' input)
    needs: frozenset  # the received tensors (recv names on ``src``) it depends on
    source_op: object  # the op that made it
    shape: object = None  # its static TensorShape, or None
    step_constant: bool = False
    alone: bool = False  # set for a variable's value read where its stage also writes state

    @property
    def group(self):
        """Transfers with the same group travel packed; None: alone."""
        if self.step_constant or self.alone or self.shape is None or not self.shape.is_fully_defined():
            return None
        return (self.src, self.dst, self.dtype, self.needs)


def emit(transfers: list, part, new_name, devices: dict, next_edge_id) -> None:
    """Add the nodes of ``transfers`` to the partitions: ``part(task)`` gives a task's
    PartitionGraph, ``new_name(prefix)`` a fresh node name, ``next_edge_id()`` the next
    edge number (TF's ``edge_<id>_<source>`` tensor names)."""
    groups: dict = {}
    alone = []
    for transfer in transfers:
        key = transfer.group
        if key is None:
            alone.append([transfer])
        else:
            groups.setdefault(key, []).append(transfer)
    pairs = alone + list(groups.values())
    for group in pairs:
        if len(group) == 1:
            only = group[0]
            _pair(only, only.input_text, only.recv_name, only.shape, part, new_name, devices, next_edge_id)
        else:
            _packed(group, part, new_name, devices, next_edge_id)


def _pair(transfer: Transfer, input_text: str, recv_name: str, shape, part, new_name, devices,
          next_edge_id) -> None:
    src_device, src_incarnation = devices[transfer.src]
    dst_device = devices[transfer.dst][0]
    tensor_name = f"edge_{next_edge_id()}_{transfer.source_name}"
    send = part(transfer.src).graph_def.node.add(name=new_name(transfer.source_name), op="_Send", device=src_device)
    send.input.append(input_text)
    recv = part(transfer.dst).graph_def.node.add(name=recv_name, op="_Recv", device=dst_device)
    for node in (send, recv):
        node.attr["tensor_name"].s = tensor_name.encode()
        node.attr["send_device"].s = src_device.encode()
        node.attr["send_device_incarnation"].i = int64(src_incarnation)
        node.attr["recv_device"].s = dst_device.encode()
        node.attr["client_terminated"].b = False
    send.attr["T"].type = transfer.dtype
    recv.attr["tensor_type"].type = transfer.dtype
    if transfer.step_constant:
        recv.attr[STEP_CONSTANT_ATTR].b = True
    set_shape(recv, shape)


def _int32_const(graph_def, name: str, device: str, values, vector: bool = True):
    """A Const int32 node: the vector ``values``, or (``vector`` false) the scalar ``values``."""
    node = graph_def.node.add(name=name, op="Const", device=device)
    node.attr["dtype"].type = _DT_INT32
    tensor = node.attr["value"].tensor
    tensor.dtype = _DT_INT32
    if vector:
        tensor.tensor_shape.dim.add(size=len(values))
        tensor.int_val.extend(values)
    else:
        tensor.int_val.append(values)
    return node


def _packed(group: list, part, new_name, devices: dict, next_edge_id) -> None:
    from tfc.frontend.tensor_shape import TensorShape

    first = group[0]
    dtype = first.dtype
    src_device = devices[first.src][0]
    dst_device = devices[first.dst][0]
    sender = part(first.src).graph_def
    receiver = part(first.dst).graph_def
    prefix = new_name(f"tfc_pack_{first.source_name}")
    flat_shape = _int32_const(sender, f"{prefix}/flat_shape", src_device, [-1])
    pieces = []
    for i, transfer in enumerate(group):
        flat = sender.node.add(name=f"{prefix}/flat_{i}", op="Reshape", device=src_device)
        flat.input.extend([transfer.input_text, flat_shape.name])
        flat.attr["T"].type = dtype
        flat.attr["Tshape"].type = _DT_INT32
        pieces.append(flat.name)
    axis = _int32_const(sender, f"{prefix}/axis", src_device, 0, vector=False)
    concat = sender.node.add(name=f"{prefix}/concat", op="ConcatV2", device=src_device)
    concat.input.extend(pieces + [axis.name])
    concat.attr["N"].i = len(pieces)
    concat.attr["T"].type = dtype
    concat.attr["Tidx"].type = _DT_INT32
    sizes = [t.shape.num_elements() for t in group]
    received = f"{prefix}/recv"
    _pair(first, concat.name, received, TensorShape([sum(sizes)]), part, new_name, devices, next_edge_id)
    split_sizes = _int32_const(receiver, f"{prefix}/sizes", dst_device, sizes)
    split_axis = _int32_const(receiver, f"{prefix}/split_axis", dst_device, 0, vector=False)
    split = receiver.node.add(name=f"{prefix}/split", op="SplitV", device=dst_device)
    split.input.extend([received, split_sizes.name, split_axis.name])
    split.attr["num_split"].i = len(group)
    split.attr["T"].type = dtype
    split.attr["Tlen"].type = _DT_INT32
    for i, transfer in enumerate(group):
        dims = [int(d) for d in transfer.shape.as_list()]
        shape = _int32_const(receiver, f"{prefix}/shape_{i}", dst_device, dims)
        piece = receiver.node.add(name=transfer.recv_name, op="Reshape", device=dst_device)
        piece.input.extend([split.name if i == 0 else f"{split.name}:{i}", shape.name])
        piece.attr["T"].type = dtype
        piece.attr["Tshape"].type = _DT_INT32


def set_shape(recv, shape) -> None:
    """The static shape of what a _Recv receives, as ``_output_shapes`` (TF's attr for it):
    the receiving task compiles with it, as a local step knows it."""
    if shape is not None and shape.dims is not None:
        recv.attr["_output_shapes"].list.shape.add().CopyFrom(shape.as_proto())


def int64(value: int) -> int:
    value = int(value) & 0xFFFFFFFFFFFFFFFF
    return value - (1 << 64) if value >= (1 << 63) else value
