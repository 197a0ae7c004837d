"""A registered partition as tfc runs it: a program per stage, between the tensors it receives.

A partition (RegisterGraph's GraphDef) holds ``_Recv`` nodes (tensors fed by the master:
``client_terminated``, or sent by other tasks in the same step) and ``_Send`` nodes
(tensors for the master, or for other tasks). Before the graph is imported, each
``_Recv`` becomes a Placeholder (named ``tfc_recv_N``: a graph op's name may not start
with "_") and each ``_Send`` a fetch of its input, so the partition compiles with tfc's
Session machinery like any local step: a Recv is an input of the compiled program, a
Send an output.

A partition may receive tensors that depend on what it sends in the same step: the ps
partition of a training step sends the variables' values to the workers and receives the
gradients computed from them. It cannot run as one program, so it runs in stages. Each op
depends on a set of received tensors (the remote ``_Recv`` nodes upstream of it, through
data and control edges). Each set that a send to another task depends on is a stage: it
runs as soon as those tensors have arrived, computes what its sends need (and what earlier
stages did not), and publishes them at once, so the tasks waiting for them go on; a last
stage runs the rest once everything has arrived. Stages run in order of their sets
(smaller first), each a compiled program of its own (cached like any step). What a stage
computes for a later one (a tensor crossing stages) is fetched by the earlier stage and
fed to the later one, so no op runs twice; a control edge between stages is dropped
(stages run in order); constants, variables and the handles of queues and accumulators are
simply used again; a fetched Const needs no program.

A partition that sends nothing to other tasks before it has received everything (a
worker's tower, or a partition that receives nothing) is one stage: one program.

Received tensors marked as constants of the step (``_tfc_step_constant``: what tfc's master
sets on an IsVariableInitialized answer, which a local step compiles as a constant) are
compiled as Consts: the stage has a program per distinct value (tfc/distributed/worker.py).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from tfc.frontend import errors
from tfc.protos.graph_pb2 import GraphDef

from .rendezvous import make_key

RECV_OPS = ("_Recv", "_HostRecv")
SEND_OPS = ("_Send", "_HostSend")
# Ops a later stage may run again rather than receive from an earlier one: they compute
# nothing (a variable op is its buffer; a constant is its value).
_REUSABLE_OPS = ("Const", "VariableV2", "Variable", "VarHandleOp", "TemporaryVariable")
_VARIABLE_OPS = ("VariableV2", "Variable", "VarHandleOp", "TemporaryVariable")
_EMPTY = frozenset()
# A _Recv attr (tfc's; TF ignores attrs starting with "_"): the tensor is a constant of the
# step for the program receiving it (an IsVariableInitialized answer, which a local step
# compiles as a constant, e.g. in a ready op's boolean_mask): the receiving stage is
# compiled once per value received.
STEP_CONSTANT_ATTR = "_tfc_step_constant"


@dataclass
class Stage:
    """One program of a partition: it runs once every received tensor of ``needs`` arrived."""

    needs: frozenset  # placeholder names of the remote recvs this stage depends on
    feeds: list = field(default_factory=list)  # tensor names fed: recv placeholders, tensors of earlier stages
    fetches: list = field(default_factory=list)  # tensor names fetched: sent values, tensors for later stages
    targets: list = field(default_factory=list)  # op names run for their effect
    publish: list = field(default_factory=list)  # indices of the sends published after this stage
    constants: list = field(default_factory=list)  # fed recv tensors compiled as constants of the step
    literals: dict = field(default_factory=dict)  # tensor name -> TensorProto: fetched Consts (no program)

    @property
    def has_work(self) -> bool:
        return bool(self.fetches or self.targets)


@dataclass
class Send:
    tensor: str  # the tensor sent ("name:index")
    key: str  # its rendezvous key
    client_terminated: bool
    from_feed: bool = False  # the tensor is a recv placeholder's (forwarded as it came)


@dataclass
class Partition:
    graph_def: GraphDef  # without _Send/_Recv: recvs are placeholders
    client_recvs: list  # [(placeholder name, rendezvous key, tensor name)]: fed by RunGraph's ``send``
    remote_recvs: list  # [(placeholder name, rendezvous key, (job, task index))]: RecvTensor from that task
    sends: list  # [Send]
    stages: list  # [Stage], in the order they may run


def _attr(node, name: str, kind: str, default=None):
    if name not in node.attr:
        return default
    value = getattr(node.attr[name], kind)
    return value.decode() if isinstance(value, bytes) else value


def _split(inp: str) -> tuple:
    """(source node, output index, is_control) of a NodeDef input."""
    if inp.startswith("^"):
        return inp[1:], 0, True
    source, _, index = inp.partition(":")
    return source, int(index) if index else 0, False


def _tensor(source: str, index: int) -> str:
    return f"{source}:{index}"


def _key_of(node) -> str:
    return make_key(_attr(node, "send_device", "s", ""), _attr(node, "send_device_incarnation", "i", 0),
                    _attr(node, "recv_device", "s", ""), _attr(node, "tensor_name", "s", ""))


def analyse(graph_def, task) -> Partition:
    """The partition's graph without _Send/_Recv, its recvs and sends, and its stages."""
    from tfc.frontend.device import DeviceSpec

    names = {node.name for node in graph_def.node}
    renamed: dict = {}
    for node in graph_def.node:
        if node.op in RECV_OPS:
            new_name = f"tfc_recv_{len(renamed)}"
            while new_name in names:
                new_name += "_"
            renamed[node.name] = new_name
    sends_nodes = []
    dropped = set()
    client_recvs, remote_recvs = [], []
    remote = set()
    step_constants = set()
    kept = []  # [(NodeDef, [(source, index, is_control)])]
    for node in graph_def.node:
        if node.op in SEND_OPS:
            sends_nodes.append(node)
            dropped.add(node.name)
            continue
        if node.op in RECV_OPS:
            tensor_name = _attr(node, "tensor_name", "s", "")
            send_device = _attr(node, "send_device", "s", "")
            key = _key_of(node)
            placeholder = GraphDef().node.add(name=renamed[node.name], op="Placeholder", device=node.device)
            placeholder.attr["dtype"].type = node.attr["tensor_type"].type
            shapes = node.attr["_output_shapes"].list.shape if "_output_shapes" in node.attr else ()
            if len(shapes) == 1:  # what the sender knows statically (tfc's masters say it)
                placeholder.attr["shape"].shape.CopyFrom(shapes[0])
            if _attr(node, "client_terminated", "b", False):
                client_recvs.append((placeholder.name, key, tensor_name))
            else:
                spec = DeviceSpec.from_string(send_device)
                sender = (spec.job if spec.job is not None else task.job, spec.task if spec.task is not None else 0)
                if not task.has_task(*sender):
                    raise errors.InvalidArgumentError(None, None, f"_Recv node '{node.name}' receives "
                                                                  f"'{tensor_name}' from {send_device}, which is not "
                                                                  "a task of the cluster")
                remote_recvs.append((placeholder.name, key, sender))
                remote.add(placeholder.name)
                if _attr(node, STEP_CONSTANT_ATTR, "b", False):
                    step_constants.add(placeholder.name + ":0")
            kept.append((placeholder, []))
            continue
        kept.append((node, None))
    placeholders = set(renamed.values())
    # inputs, with recvs renamed and sends' control edges dropped
    graph: dict = {}
    order = []
    for node, inputs in kept:
        if inputs is None:
            inputs = []
            for inp in node.input:
                source, index, control = _split(inp)
                if control and source in dropped:
                    continue
                inputs.append((renamed.get(source, source), index, control))
        graph[node.name] = (node, inputs)
        order.append(node.name)
    needs = _needs(graph, order, remote)
    reusable = {name for name, (node, inputs) in graph.items()
                if node.op in _VARIABLE_OPS or (not inputs and (node.op in _REUSABLE_OPS or _names_resource(node.op)))}

    sends = []
    send_needs = []
    for node in sends_nodes:
        data = [_split(inp) for inp in node.input if not inp.startswith("^")]
        if len(data) != 1:
            raise errors.InvalidArgumentError(None, None, f"_Send node '{node.name}' has {len(data)} inputs")
        source, index, _ = data[0]
        source = renamed.get(source, source)
        if source not in graph:
            raise errors.InvalidArgumentError(None, None, f"_Send node '{node.name}': unknown input '{node.input[0]}'")
        need = set(needs[source])
        for inp in node.input:
            if inp.startswith("^"):
                other = renamed.get(inp[1:], inp[1:])
                if other in needs:
                    need |= needs[other]
        sends.append(Send(_tensor(source, index), _key_of(node), bool(_attr(node, "client_terminated", "b", False)),
                          from_feed=source in placeholders))
        send_needs.append(frozenset(need))

    # Stages: one per set of received tensors that sends to other tasks depend on (those
    # must go out as soon as they can: another task may need them to send what this one
    # receives), and a last one, once everything has arrived, for the rest. An op runs in
    # the first stage whose sends need it, else in the last one.
    final = frozenset(remote)
    early = {need for send, need in zip(sends, send_needs) if not send.client_terminated} - {final}
    ordered = sorted(early, key=lambda s: (len(s), sorted(s))) + [final]
    stages = {key: Stage(key) for key in ordered}
    rank = {key: i for i, key in enumerate(ordered)}
    stage_of: dict = {}
    for key in ordered[:-1]:  # a fetch computable in an earlier stage goes out with it, as TF's
        stack = [send.tensor.rpartition(":")[0] for send, need in zip(sends, send_needs)  # _Send runs
                 if need == key and not send.from_feed]  # when its input is ready (global_step before its update)
        while stack:
            name = stack.pop()
            if name in stage_of or name in placeholders or name not in graph:
                continue
            stage_of[name] = key
            stack.extend(source for source, _, _ in graph[name][1])
    for name in order:
        if name not in placeholders:
            stage_of.setdefault(name, final)

    out = GraphDef()
    out.versions.CopyFrom(graph_def.versions)
    if graph_def.HasField("library"):
        out.library.CopyFrom(graph_def.library)
    consumed_in_stage = set()
    fed_in: dict = {}  # stage key -> set of tensors fed
    fetched_in: dict = {}  # stage key -> set of tensors fetched
    for name in order:
        node, inputs = graph[name]
        copy = out.node.add()
        copy.CopyFrom(node)
        if name in placeholders:
            del copy.input[:]
            continue
        stage = stage_of[name]
        new_inputs = []
        for source, index, control in inputs:
            text = ("^" + source) if control else (source if index == 0 else f"{source}:{index}")
            if source not in graph:  # left for the importer to report
                new_inputs.append(text)
                continue
            if source in placeholders:
                if not control:  # a recv as a control input: the stages order it
                    fed_in.setdefault(stage, set()).add(_tensor(source, 0))
                    new_inputs.append(text)
                continue
            if stage_of[source] == stage:
                consumed_in_stage.add(source)
                new_inputs.append(text)
                continue
            if rank[stage_of[source]] > rank[stage]:  # (the cones above make this impossible)
                raise errors.InternalError(None, None, f"Partition stages: '{name}' would run before its input "
                                                       f"'{source}'")
            if control:
                continue  # an earlier stage runs it
            new_inputs.append(text)
            if source in reusable:
                consumed_in_stage.add(source)  # used again: nothing crosses
                continue
            tensor = _tensor(source, index)
            fetched_in.setdefault(stage_of[source], set()).add(tensor)
            fed_in.setdefault(stage, set()).add(tensor)
        del copy.input[:]
        copy.input.extend(new_inputs)
    for position, (send, need) in enumerate(zip(sends, send_needs)):
        stages[need if need in stages else final].publish.append(position)
        if not send.from_feed:
            source = send.tensor.rpartition(":")[0]
            fetched_in.setdefault(stage_of[source], set()).add(send.tensor)
    for name in order:
        if name in placeholders or name in reusable or name in consumed_in_stage:
            continue
        stages[stage_of[name]].targets.append(name)
    for key, stage in stages.items():
        fetched = sorted(fetched_in.get(key, ()))
        for tensor in fetched:  # a Const sent as it is (e.g. a learning rate) needs no program
            node, inputs = graph[tensor.rpartition(":")[0]]
            if node.op == "Const" and not inputs and tensor.endswith(":0") and "value" in node.attr:
                stage.literals[tensor] = node.attr["value"].tensor
        stage.fetches = [tensor for tensor in fetched if tensor not in stage.literals]
        stage.feeds = sorted(fed_in.get(key, ()))
        stage.constants = [name for name in stage.feeds if name in step_constants]
    return Partition(out, client_recvs, remote_recvs, sends, [stages[key] for key in ordered])


def _names_resource(op_type: str) -> bool:
    """A host op making the handle of a queue or an accumulator: each stage makes it again (it
    names the resource, which the task keeps)."""
    from tfc.frontend.registry import is_registered, lookup_op_type

    if not is_registered(op_type):
        return False
    entry = lookup_op_type(op_type)
    return bool(getattr(entry, "host_only", False)) and not entry.inputs and \
        [spec.fixed_dtype for spec in entry.output_specs] == ["resource"]


def _needs(graph: dict, order: list, remote: set) -> dict:
    """node name -> frozenset of the remote recv placeholders it depends on (through data and
    control edges; loops reach a fixpoint)."""
    consumers: dict = {name: [] for name in order}
    pending = {}
    for name in order:
        _, inputs = graph[name]
        sources = {source for source, _, _ in inputs if source in graph}
        pending[name] = len(sources)
        for source in sources:
            consumers[source].append(name)
    ready = [name for name in order if pending[name] == 0]
    needs: dict = {}
    done = []
    while ready:
        name = ready.pop()
        done.append(name)
        _, inputs = graph[name]
        need = _EMPTY
        for source, _, _ in inputs:
            found = needs.get(source)
            if found:
                need = need | found
        if name in remote:
            need = need | {name}
        needs[name] = frozenset(need)
        for consumer in consumers[name]:
            pending[consumer] -= 1
            if pending[consumer] == 0:
                ready.append(consumer)
    if len(done) < len(order):  # cycles (while loops): iterate to the fixpoint
        rest = [name for name in order if name not in needs]
        for name in rest:
            needs[name] = frozenset({name}) if name in remote else _EMPTY
        changed = True
        while changed:
            changed = False
            for name in rest:
                _, inputs = graph[name]
                need = needs[name]
                for source, _, _ in inputs:
                    found = needs.get(source)
                    if found and not found <= need:
                        need = need | found
                if need != needs[name]:
                    needs[name] = frozenset(need)
                    changed = True
        # what depends on a loop node depends on its fixpoint too
        changed = True
        while changed:
            changed = False
            for name in order:
                _, inputs = graph[name]
                need = needs[name]
                for source, _, _ in inputs:
                    found = needs.get(source)
                    if found and not found <= need:
                        need = need | found
                if need != needs[name]:
                    needs[name] = frozenset(need)
                    changed = True
    return needs
