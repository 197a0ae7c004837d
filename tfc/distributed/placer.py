"""Placing a step's ops on the tasks of the cluster, by TensorFlow's rules (placer.cc).

A master places the ops its step needs (the pruned subgraph of the fetches, targets and
feeds) before it partitions them per task:

- an op's requested device (``op.device``, what ``tf.device`` / ``replica_device_setter``
  set) is merged with the master's task: a request without a job is for the master's
  job and task, one without a task index is for the master's task when the job is the
  master's, else for the job's first task;
- colocation groups (``_class`` attrs ``loc:@name``, what ``tf.colocate_with`` writes)
  are placed together: their members' requests are merged, and requests that disagree
  (two jobs, two tasks) are TF's "Cannot colocate nodes" InvalidArgumentError;
- an op that consumes a ref input (Assign, ApplyGradientDescent, IsVariableInitialized...)
  is placed with the op producing the ref (the variable), and its own request is ignored
  where they disagree (TF's ColocateResourceOrRefEdge); so is an op using the handle of a
  queue or an accumulator (host resources: their handle names them in their task);
- a tf.cond (its Switches, branch ops and Merges) and a while loop (the ops of its frame)
  are placed on one task, the task of the variables they use when they use some (else of
  their first op): tfc's tasks exchange plain tensors, not the dead tensors and frames of
  control flow spanning devices that TF's executor handles (e.g. the global step's
  ``initialized_value()`` cond, whose RefSwitch is on the ps, runs on the ps);
- a device no task of the cluster has (another job, a task index the job lacks, a GPU) is
  TF's "Cannot assign a device" InvalidArgumentError, unless ``allow_soft_placement``
  (then the op runs on the master's task, on its CPU).

The answer is a task ``(job, task index)`` per op.
"""
from __future__ import annotations

from tfc.frontend import errors
from tfc.frontend.device import DeviceSpec
from tfc.frontend.dtypes import resource as _RESOURCE

_TASK_FIELDS = ("job", "replica", "task")
ENTER_OPS = ("Enter", "RefEnter")
EXIT_OPS = ("Exit", "RefExit")
SWITCH_OPS = ("Switch", "RefSwitch")
MERGE_OPS = ("Merge", "RefMerge")
# Ops that hold state: what is colocated with them stays with them.
_STATE_OPS = ("VariableV2", "Variable", "VarHandleOp", "TemporaryVariable", "AutoReloadVariable")


class _Group:
    """A colocation group (union-find node): its members and their merged request."""

    __slots__ = ("parent", "spec", "members", "requested_by", "pinned")

    def __init__(self, spec: DeviceSpec, op):
        self.parent = self
        self.spec = spec
        self.members = [op]
        self.requested_by = op if _has_task_fields(spec) else None
        self.pinned = op.type in _STATE_OPS  # a variable: where it is decides


def _is_host_resource(op) -> bool:
    """A host op making a resource handle (a queue, an accumulator, a hash table)."""
    from tfc.frontend.registry import is_registered, lookup_op_type

    return not op._inputs and is_registered(op.type) and bool(getattr(lookup_op_type(op.type), "host_only", False))


def _has_task_fields(spec: DeviceSpec) -> bool:
    return any(getattr(spec, f) is not None for f in _TASK_FIELDS)


def find_root(group):
    """The root of ``group``'s union-find tree (any object with a ``parent``), compressing the path."""
    root = group
    while root.parent is not root:
        root = root.parent
    while group.parent is not root:
        group.parent, group = root, group.parent
    return root


def resolve_by_root(ops, groups: dict, resolve) -> dict:
    """{op: resolve(root of its group)}, ``resolve`` called once per root."""
    resolved: dict = {}
    out = {}
    for op in ops:
        root = find_root(groups[op])
        if root not in resolved:
            resolved[root] = resolve(root)
        out[op] = resolved[root]
    return out


def _conflict(a: DeviceSpec, b: DeviceSpec):
    """The first task field on which two (partial) device requests disagree, or None."""
    for field in _TASK_FIELDS:
        x, y = getattr(a, field), getattr(b, field)
        if x is not None and y is not None and x != y:
            return field
    return None


def _merged(a: DeviceSpec, b: DeviceSpec) -> DeviceSpec:
    out = a.copy()
    for field in _TASK_FIELDS:
        if getattr(out, field) is None:
            setattr(out, field, getattr(b, field))
    if out.device_type is None:
        out.device_type, out.device_index = b.device_type, b.device_index
    return out


def _spec_of(op) -> DeviceSpec:
    try:
        return DeviceSpec.from_string(op.device)
    except ValueError as e:
        raise errors.InvalidArgumentError(None, op, f"Malformed device specification '{op.device}' in node "
                                                    f"{op.name}: {e}") from None


def ref_input_positions(op) -> set:
    """The positions of ``op``'s inputs that its op type declares as refs (``Ref(T)``)."""
    from tfc.frontend.registry import is_registered, lookup_op_type

    if not is_registered(op.type):
        return set()
    entry = lookup_op_type(op.type)
    positions, index = set(), 0
    for spec in entry.input_specs:
        count = op._attrs.get(spec.number_attr, 1) if spec.number_attr else 1
        if spec.is_ref:
            positions.update(range(index, index + count))
        index += count
    return positions


def place(ops, graph, task, soft: bool = False) -> dict:
    """{op: (job, task index)} for ``ops`` (a step's pruned subgraph) on the cluster of
    ``task`` (the master's TaskInfo); raises InvalidArgumentError as TF's placer does."""
    groups: dict = {}

    def group_of(op) -> _Group:
        found = groups.get(op)
        if found is None:
            found = groups[op] = _Group(_spec_of(op), op)
        return found

    def union(a: _Group, b: _Group, ref_edge: bool = False, flow: bool = False) -> None:
        ra, rb = find_root(a), find_root(b)
        if ra is rb:
            return
        field = _conflict(ra.spec, rb.spec)
        if field is not None:
            if ref_edge:  # the consumer of a ref goes where the ref is: its own request is dropped
                rb.spec = ra.spec.copy()
            elif flow:  # a cond or loop goes where its variables are (else where its first op is)
                if ra.pinned and rb.pinned:
                    return  # the partitioner names the edge that cannot cross
                if rb.pinned:
                    ra.spec = rb.spec.copy()
                else:
                    rb.spec = ra.spec.copy()
            elif soft:
                rb.spec = ra.spec.copy()
            else:
                first, second = ra.requested_by or ra.members[0], rb.requested_by or rb.members[0]
                raise errors.InvalidArgumentError(
                    None, second, f"Cannot colocate nodes {{{{colocation_node {first.name}}}}} and "
                                  f"{{{{colocation_node {second.name}}}}}: Cannot merge devices with incompatible "
                                  f"{field}s: '{first.device}' and '{second.device}'")
        rb.parent = ra
        ra.spec = _merged(ra.spec, rb.spec)
        ra.members.extend(rb.members)
        ra.pinned = ra.pinned or rb.pinned
        if ra.requested_by is None:
            ra.requested_by = rb.requested_by

    nodes = graph._nodes_by_name
    for op in ops:
        own = group_of(op)
        for entry in op.colocation_groups():
            name = entry[5:].decode() if isinstance(entry, bytes) else entry[5:]
            if name == op.name:
                continue
            other = nodes.get(name)
            if other is None:
                raise errors.InvalidArgumentError(None, op, f"Node '{op.name}' expects to be colocated with unknown "
                                                            f"node '{name}'")
            union(group_of(other), own)
    for op in ops:
        positions = ref_input_positions(op) if op._inputs else ()
        for position in positions:
            if position < len(op._inputs):
                union(group_of(op._inputs[position].op), group_of(op), ref_edge=True)
        for t in op._inputs:  # a queue's or an accumulator's ops go where it is (its handle names it there)
            if t.dtype.base_dtype == _RESOURCE and _is_host_resource(t.op):
                union(group_of(t.op), group_of(op), ref_edge=True)
    # A tf.cond (its Switches, branches and Merge) or a while loop (its frame) runs on one
    # task: their tensors may be dead or per iteration, which a _Send/_Recv pair cannot carry.
    inside = inside_control_flow(ops)
    if inside:
        members = set(ops)
        for op in ops:
            for source in [t.op for t in op._inputs] + list(op._control_inputs):
                if source in inside and source in members:
                    union(group_of(source), group_of(op), flow=True)

    return resolve_by_root(ops, groups, lambda root: _resolve(root, task, soft))


def _resolve(root: _Group, task, soft: bool) -> tuple:
    spec = root.spec
    job = spec.job if spec.job is not None else task.job
    if spec.task is not None:
        index = spec.task
    elif job == task.job:
        index = task.index
    else:
        try:
            indices = task.cluster.task_indices(job)
        except ValueError:
            indices = []
        index = indices[0] if indices else 0
    valid = task.has_task(job, index) and spec.replica in (None, task.replica) \
        and spec.device_type in (None, "CPU") and (spec.device_index in (None, 0) or spec.device_type is None)
    if valid:
        return job, index
    if soft:
        if task.has_task(job, index) and spec.replica in (None, task.replica):
            return job, index  # a GPU request on a task that has only a CPU
        return task.job, task.index
    op = root.requested_by or root.members[0]
    raise errors.InvalidArgumentError(
        None, op, f"Cannot assign a device for operation {op.name}: {{{{node {op.name}}}}} was explicitly assigned "
                  f"to {op.device} but available devices are [ {', '.join(cluster_devices(task))} ]. Make sure the "
                  "device specification refers to a valid device.")


def cluster_devices(task) -> list:
    """The CPU device of every task of the cluster, sorted."""
    from .cluster import task_device_name

    out = []
    for job in task.cluster.jobs:
        for index in task.cluster.task_indices(job):
            out.append(task_device_name(job, index, task.replica))
    return sorted(out)


def inside_control_flow(ops) -> set:
    """The ops whose output may not cross tasks as a plain _Send/_Recv pair: ops inside a
    while loop's frame (per-iteration tensors), and ops of a tf.cond branch (a Switch and
    what follows it up to its Merge: their tensors may be dead)."""
    frame: dict = {}
    parent: dict = {}
    level: dict = {}  # how many Switches (not yet merged) an op's output is behind
    inside = set()
    for _ in range(2):  # a second pass settles what a loop's back edge reaches
        for op in ops:
            sources = [t.op for t in op._inputs] + list(op._control_inputs)
            known = [frame[s] for s in sources if s in frame]
            outer = known[0] if known else None
            if op.type in ENTER_OPS:
                name = op._attrs.get("frame_name")
                name = name.decode() if isinstance(name, bytes) else name
                parent.setdefault(name, outer)
                frame[op] = name
            elif op.type in EXIT_OPS:
                frame[op] = parent.get(outer) if outer is not None else None
            else:
                frame[op] = outer
            depth = max([level.get(s, 0) for s in sources] or [0])
            if op.type in MERGE_OPS or op.type in EXIT_OPS:
                depth = max(0, depth - 1)
            if op.type in SWITCH_OPS:
                depth += 1
            level[op] = depth
            if frame[op] is not None or depth > 0 or op.type in ENTER_OPS:
                inside.add(op)
    return inside
