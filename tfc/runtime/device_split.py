"""A session step split between devices (the CPU, GPU 0, GPU 1, ...): device stages run in order.

When the ops of a step (its compiled part: host ops run around it as usual) are placed on
several devices, or wholly on a GPU other than GPU 0 (tfc/runtime/device_placement.py),
the step becomes a ``SplitStep``:

- *free* ops are not placed in a stage: constants (a Const without control inputs) and
  variables (their ops, and ops that only forward their refs) are used again by every
  stage that needs them, so they never cross devices;
- the other ops go into device stages in a topological order with few stages: starting
  with each device in turn (the start giving fewest stages wins), a stage takes every op
  of its device whose inputs are ready, then the next device (in the order CPU, GPU 0,
  GPU 1, ...) with ready ops has its turn (for two devices, taking all that is ready is
  optimal; towers on several GPUs become one stage per GPU);
- each stage is lowered and compiled for its device (``cpu``, or ``cuda`` for its GPU: the
  program's device is that ordinal's) like a step of
  its own: fed the step's feeds it reads and the tensors it reads from earlier stages,
  fetching the step's fetches it computes and the tensors later stages read; the ops of
  earlier stages count as run (a control dependency on one is met); a stage is compiled
  at its first run, for the shapes (which dims are 1) of what it is fed;
- tensors cross devices only at the boundary edges: a CPU stage's tensor a GPU stage
  reads is uploaded once with that stage's arguments, a GPU stage's tensor a CPU stage
  or another GPU's stage reads (or a fetch) is downloaded once with its results (and
  uploaded again by the other GPU's stage: no peer-to-peer copies), and a GPU stage's
  tensor a later stage on the same GPU reads stays in device memory (the program's output
  buffer is passed as the later one's argument: no copy). ``stats["device_copies"]``
  counts the crossings;
- variables live where their ops are placed: a CPU stage uses the host value, a GPU stage
  its GPU's device copy (tfc/runtime/cuda/variables.py keeps them in step).

A tf.cond or while loop is placed on one device; one whose edges would still cross
stages (variables on both devices in one loop) is refused naming the edge.
"""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Optional


from tfc.frontend import dtypes, errors

from .device_placement import CPU, GPU, gpu_index, is_gpu

_STATE_OPS = ("VariableV2", "Variable", "VarHandleOp", "TemporaryVariable", "AutoReloadVariable")


def free_ops(ops) -> set:
    """The ops every stage may use again: constants, variables and what only forwards their refs."""
    free: set = set()
    for op in ops:  # topological
        if op.control_inputs:
            continue
        if op.type == "Const" or op.type in _STATE_OPS:
            free.add(op)
        elif op.outputs and all(t.dtype.is_ref_dtype or t.dtype.base_dtype == dtypes.resource for t in op.outputs) \
                and op.inputs and all(t.op in free for t in op.inputs) and not _stateful(op):
            free.add(op)
    return free


def _stateful(op) -> bool:
    from tfc.frontend.registry import is_registered, lookup_op_type

    return is_registered(op.type) and bool(getattr(lookup_op_type(op.type), "stateful", False))


def step_target(ops, placement: dict) -> str:
    """"cpu", "cuda" or "split": where a step of ``ops`` runs. A step whose placed (not free)
    ops are all on the CPU or all on GPU 0 runs there, as one program; all on another GPU,
    as one stage on it ("split"); with no such ops (constants and variables only), on GPU 0
    if any op is there, else on the CPU (which reads the variables' newest values)."""
    free = free_ops(ops)
    placed = {placement[op] for op in ops if op not in free}
    if len(placed) > 1 or (placed and placed != {CPU} and placed != {GPU}):
        return "split"
    if not placed:
        placed = set(placement.values())
    return "cuda" if GPU in placed else "cpu"


def _device_order(device: str) -> int:
    return -1 if device == CPU else gpu_index(device)


def _stage_order(ops: list, placement: dict, free: set) -> list:
    """[(device, [ops])]: the placed ops in device stages, as few as possible."""
    placed = [op for op in ops if op not in free]
    position = {op: i for i, op in enumerate(placed)}

    def earlier(source, op) -> bool:  # (a loop's back edge, NextIteration -> Merge, is not an order)
        return source in position and position[source] < position[op]

    preds = {op: {t.op for t in op.inputs if earlier(t.op, op)} | {c for c in op.control_inputs if earlier(c, op)}
             for op in placed}
    devices = sorted({placement[op] for op in placed}, key=_device_order)
    best = None
    for first in devices:
        remaining = {op: len(p) for op, p in preds.items()}
        consumers: dict = {op: [] for op in placed}
        for op, p in preds.items():
            for source in p:
                consumers[source].append(op)
        ready = {device: [] for device in devices}
        for op in placed:
            if not remaining[op]:
                ready[placement[op]].append(op)
        stages, turn, left, idle = [], devices.index(first), len(placed), 0
        while left:
            if idle > len(devices):  # cannot happen on a topological order; never loop forever
                raise errors.InternalError(None, None, "tfc could not order the step's ops in device stages")
            device = devices[turn]
            taken = []
            queue = ready[device]
            ready[device] = []
            while queue:
                op = queue.pop()
                taken.append(op)
                for consumer in consumers[op]:
                    remaining[consumer] -= 1
                    if not remaining[consumer]:
                        (queue if placement[consumer] == device else ready[placement[consumer]]).append(consumer)
            if taken:
                stages.append((device, sorted(taken, key=position.__getitem__)))
                left -= len(taken)
                idle = 0
            else:
                idle += 1
            turn = (turn + 1) % len(devices)
        if best is None or len(stages) < len(best):
            best = stages
    return best


@dataclass
class Stage:
    device: str  # CPU, GPU (GPU 0) or GPU:i
    ops: list
    inputs: list = field(default_factory=list)  # tensors fed: the step's feeds it reads, then earlier stages'
    fetches: list = field(default_factory=list)  # tensors it computes for later stages and the step's fetches
    targets: list = field(default_factory=list)
    ran: list = field(default_factory=list)  # ops run before it (earlier stages', the host's)
    resident_inputs: set = field(default_factory=set)  # input positions passed in device memory
    resident_outputs: set = field(default_factory=set)  # fetch positions only later stages on its GPU read
    device_read: set = field(default_factory=set)  # fetch positions a later stage on its GPU reads in device memory
    copies: int = 0  # tensors it receives from another device
    programs: dict = field(default_factory=dict)  # shape key -> CompiledStep

    @property
    def target(self) -> str:
        return "cuda" if is_gpu(self.device) else "cpu"

    @property
    def ordinal(self) -> int:
        """Its GPU's ordinal (0 for a CPU stage)."""
        return gpu_index(self.device) if is_gpu(self.device) else 0


class SplitStep:
    """A step of device stages; duck-types the session's CompiledStep (``target`` "split")."""

    target = "split"
    executable = None
    result = None

    def __init__(self, key, feeds: list, fetches: list, stages: list, crossings: list, initialized):
        self.key = key
        self.feeds = feeds
        self.fetches = fetches
        self.stages = stages
        self.crossings = crossings  # [(tensor, from device, to device)], one per copy of a step
        self.initialized = initialized
        self.refs: list = []
        self.read_refs: set = set()
        self.written_refs: set = set()
        self.written_variables: list = []
        self.timings: dict = {}
        self.lock = threading.Lock()

    def compiled_stages(self) -> list:
        return [program for stage in self.stages for program in stage.programs.values()]

    def run(self, session, arrays: list) -> list:
        values = dict(zip(self.feeds, arrays))
        pointers: dict = {}  # tensor -> device pointer of a GPU stage's output left on the device
        with self.lock:
            for stage in self.stages:
                self._run_stage(session, stage, values, pointers)
        session.stats["device_copies"] = session.stats.get("device_copies", 0) + len(self.crossings)
        return [values[t] for t in self.fetches]

    def _run_stage(self, session, stage: Stage, values: dict, pointers: dict) -> None:
        inputs = [values[t] for t in stage.inputs]
        shape_key = tuple([(a.dtype.str, tuple([d == 1 for d in a.shape])) for a in inputs])
        program = stage.programs.get(shape_key)
        if program is None:
            program = stage.programs[shape_key] = _compile_stage(session, self, stage, inputs)
        else:
            session.stats["cache_hits"] += 1
        device_args = {i: pointers[stage.inputs[i]] for i in stage.resident_inputs}
        outputs = session._call_step(program, inputs, device_args)
        values.update(zip(stage.fetches, outputs))
        if stage.device_read:
            for j in stage.device_read:
                pointers[stage.fetches[j]] = program.executable.code.output_pointer(j)


def build(key, ops: list, placement: dict, fetches: list, targets: list, fed: list, ran: list,
          initialized) -> SplitStep:
    """The device stages of a step of ``ops`` (lowering's pruned ops, topological)."""
    from tfc.distributed.placer import ENTER_OPS, SWITCH_OPS, inside_control_flow
    from tfc.passes.lower import prune

    free = free_ops(ops)
    order = _stage_order(ops, placement, free)
    stages = [Stage(device, stage_ops) for device, stage_ops in order]
    stage_of = {op: i for i, stage in enumerate(stages) for op in stage.ops}
    fed_set = set(fed)
    inside = inside_control_flow(ops)
    fetch_set = set(fetches)
    readers: dict = {}  # tensor -> the stages reading it from another stage

    def check_edge(source, op) -> None:
        if source in inside or (op in inside and op.type not in SWITCH_OPS and op.type not in ENTER_OPS):
            inner = source if source in inside else op
            raise errors.UnimplementedError(
                None, op, f"The edge from '{source.name}' ({placement[source]}) to '{op.name}' ({placement[op]}) "
                          f"crosses between device stages inside a while loop or a tf.cond branch ('{inner.name}'): "
                          "tfc runs such control flow on one device; place the loop (or the cond), the variables "
                          "it uses and its inputs on one device")

    for index, stage in enumerate(stages):
        inputs: dict = {}
        for op in stage.ops:
            for t in op.inputs:
                if t in fed_set:
                    inputs.setdefault(t, None)
                    continue
                source = t.op
                where = stage_of.get(source)
                if where is None or where == index:
                    continue
                check_edge(source, op)
                if t.dtype.base_dtype == dtypes.resource:
                    raise errors.UnimplementedError(
                        None, op, f"'{op.name}' ({placement[op]}) reads the resource handle '{t.name}' made on "
                                  f"another device stage ({placement[source]}): tfc cannot split this step between "
                                  "the CPU and the GPU; place them on one device")
                inputs.setdefault(t, None)
                readers.setdefault(t, set()).add(index)
            for c in op.control_inputs:
                where = stage_of.get(c)
                if where is not None and where != index:
                    check_edge(c, op)
                    if c not in stages[where].targets:
                        stages[where].targets.append(c)
        stage.inputs = [t for t in fed if t in inputs] + [t for t in inputs if t not in fed_set]
    for t, reading in readers.items():
        producer = stages[stage_of[t.op]]
        if t not in producer.fetches:
            producer.fetches.append(t)
    # the step's fetches and targets: computed by their op's stage (a free op's: the last stage of its device)
    last = {stage.device: i for i, stage in enumerate(stages)}
    for t in fetches:
        if t in fed_set:
            continue
        where = stage_of.get(t.op)
        if where is None:
            where = last.get(placement.get(t.op), len(stages) - 1)
        if t not in stages[where].fetches:
            stages[where].fetches.append(t)
    for op in targets:
        where = stage_of.get(op)
        if where is not None and op not in stages[where].targets:
            stages[where].targets.append(op)
    crossings = []
    before = list(ran)
    for index, stage in enumerate(stages):
        stage.ran = list(before)
        before.extend(stage.ops)
        for position, t in enumerate(stage.inputs):
            if t in fed_set:
                continue
            producer = stages[stage_of[t.op]]
            if producer.device != stage.device:
                crossings.append((t, producer.device, stage.device))
                stage.copies += 1
            elif is_gpu(stage.device):  # (the same GPU: the buffer stays in its memory)
                stage.resident_inputs.add(position)
        if is_gpu(stage.device):
            for j, t in enumerate(stage.fetches):
                later = readers.get(t, ())
                if any(stages[i].device == stage.device for i in later):
                    stage.device_read.add(j)
                    if t not in fetch_set and all(stages[i].device == stage.device for i in later):
                        stage.resident_outputs.add(j)
        # an op of another stage this one would compute again (through an edge no feed cuts) runs twice: refuse
        own = set(stage.ops)
        for op in prune(stage.fetches, stage.targets, stage.inputs + stage.ran):
            if op not in own and op not in free:
                raise errors.UnimplementedError(
                    None, op, f"'{op.name}' ({placement[op]}) would run in two device stages of the step: tfc "
                              "cannot split this step between the CPU and the GPU; place its ops on one device")
    return SplitStep(key, list(fed), list(fetches), stages, crossings, initialized)


def _compile_stage(session, split: SplitStep, stage: Stage, arrays: list):
    from tfc.compiler import compile_module
    from tfc.passes.lower import FeedSpec, lower_graph

    from .session import CompiledStep, _ref_accesses

    started = time.perf_counter()
    specs = [FeedSpec(t, t.dtype.base_dtype, a.shape) for t, a in zip(stage.inputs, arrays)]
    lowered = lower_graph(stage.fetches, stage.targets, specs, rng_seeds=session._rng_seed,
                          initialized=split.initialized, ran=stage.ran)
    read_refs, written_refs = _ref_accesses(lowered.function)
    if is_gpu(stage.device):
        from .cuda.devices import emulated

        if not emulated():
            from .cuda.executable import process_allocator

            process_allocator(getattr(session._config, "gpu_options", None), ordinal=stage.ordinal)
        result = compile_module(lowered.module, constraints=lowered.constraints, target="cuda", emulate=emulated(),
                                precision=session._precision, device_ordinal=stage.ordinal)
        result.executable.code.device_outputs = set(stage.resident_outputs)
    else:
        result = compile_module(lowered.module, constraints=lowered.constraints, precision=session._precision)
    result.executable.op_resolver = session._graph._nodes_by_name.get
    session.stats["compiles"] += 1
    timings = dict(result.timings)
    timings["stage_compile"] = time.perf_counter() - started
    return CompiledStep(split.key, result.executable, lowered.feeds, lowered.refs, lowered.fetches, read_refs,
                        written_refs, result, timings, target=stage.target, ordinal=stage.ordinal)


def describe(step: SplitStep) -> str:
    """The stages, one a line (for logs and errors)."""
    lines = []
    for i, stage in enumerate(step.stages):
        lines.append(f"stage {i} on the {stage.device}: {len(stage.ops)} ops, {len(stage.inputs)} inputs "
                     f"({stage.copies} from other devices), {len(stage.fetches)} outputs")
    return "\n".join(lines)


def placement_of(session, ops) -> Optional[dict]:
    """{op: CPU, GPU or GPU:i} as the session places ``ops`` (no logging)."""
    from .cuda.devices import gpu_devices
    from .device_placement import place, requests_gpu

    soft = bool(getattr(session._config, "allow_soft_placement", False))
    gpus = len(gpu_devices()) if any(requests_gpu(op) for op in ops) else 0
    return place(ops, gpus, soft)
