"""Placing a local step's ops on the session's devices (the CPU and the GPUs), by TF's rules.

The in-process counterpart of tfc/distributed/placer.py (which places ops on tasks):

- an op's requested device (``tf.device``) must exist: a GPU the process lacks, or another
  job, is TF's "Cannot assign a device" InvalidArgumentError listing the devices there
  are, unless ``allow_soft_placement`` (then the op goes to the CPU);
- an op on /gpu:i runs on GPU i; ops without a requested device go to GPU 0 when the
  step has an op on a GPU (TF puts them on the highest-priority device), else to the
  CPU; a step with no op on a GPU is placed wholly on the CPU without further ado;
- colocation groups (``_class`` attrs, ``tf.colocate_with``) are placed together; an op
  consuming a ref (Assign, ApplyGradientDescent, a variable's ``read`` Identity...) or a
  resource handle goes where the ref's producer (the variable) is, its own request
  dropped (TF's ColocateResourceOrRefEdge); a colocation group asking for two devices is
  TF's "Cannot colocate nodes" error (incompatible types, or ids for two GPUs);
- a tf.cond (its Switches, branches and Merges) and a while loop (the ops of its frame)
  go to one device: that of the variables they use, else of their first op (tfc's device
  stages exchange plain tensors, not dead ones or per-iteration frames);
- an op with no GPU kernel goes to the CPU, and so does its group: an op type declares
  ``gpu_kernel = False`` in the registry; a print inside a cond or a loop (a host call of
  the program) has none. Explicitly on the GPU, such an op is TF's "Could not satisfy
  explicit device specification" error unless ``allow_soft_placement``.

``place(ops, gpus, soft)`` answers {op: device}: "CPU", "GPU" (GPU 0) or "GPU:i" (GPU i,
i > 0: ``gpu(i)``, ``gpu_index``); ``full_name`` gives TF's name.
"""
from __future__ import annotations

from tfc.frontend import dtypes, errors
from tfc.distributed.placer import find_root, resolve_by_root
from tfc.frontend.device import DeviceSpec, full_device_name

CPU, GPU = "CPU", "GPU"  # GPU: GPU 0; GPU i > 0 is "GPU:i"
_STATE_OPS = ("VariableV2", "Variable", "VarHandleOp", "TemporaryVariable", "AutoReloadVariable")


def gpu(index: int) -> str:
    """The placed device of GPU ``index``."""
    return GPU if index == 0 else f"GPU:{index}"


def is_gpu(device) -> bool:
    return device is not None and device.startswith(GPU)


def gpu_index(device: str) -> int:
    """The ordinal of a placed GPU device ("GPU" -> 0, "GPU:i" -> i)."""
    return 0 if device == GPU else int(device[4:])


def full_name(device: str) -> str:
    """TF's full name of a placed device ("CPU", "GPU" or "GPU:i")."""
    return gpu_name(gpu_index(device)) if is_gpu(device) else full_device_name("")


def gpu_name(index: int) -> str:
    return f"/job:localhost/replica:0/task:0/device:GPU:{index}"


def requests_gpu(op) -> bool:
    return "GPU" in (op.device or "").upper()


def has_gpu_kernel(op, inside_flow: bool) -> bool:
    """Whether the GPU backend compiles ``op`` (``inside_flow``: in a cond or a loop)."""
    from tfc.frontend.registry import is_registered, lookup_op_type

    if not is_registered(op.type):
        return True
    entry = lookup_op_type(op.type)
    if not getattr(entry, "gpu_kernel", True):
        return False
    return not (inside_flow and getattr(entry, "host_call_in_control_flow", False))


def requested(op, gpus: int, soft: bool):
    """The device ``op`` asks for: CPU, gpu(i) or None (no request); raises TF's error for a
    device that does not exist (the CPU instead under soft placement)."""
    spec = DeviceSpec.from_string(op.device)
    on_gpu = spec.device_type == "GPU" and (spec.device_index or 0) < gpus
    valid = spec.device_type in (None, "CPU") or on_gpu
    if not valid or spec.job not in (None, "localhost"):
        if not soft:
            available = ", ".join([full_device_name("")] + [gpu_name(i) for i in range(gpus)])
            raise errors.InvalidArgumentError(
                None, op, f"Cannot assign a device for operation {op.name}: {{{{node {op.name}}}}} was explicitly "
                          f"assigned to {op.device} but available devices are [ {available} ]. Make sure the "
                          "device specification refers to a valid device.")
        return CPU
    if on_gpu:
        return gpu(spec.device_index or 0)
    return None if spec.device_type is None else CPU


def _forwards_refs(op) -> bool:
    """An op passing a ref on (RefIdentity, RefSwitch, RefMerge...; TF1's Identity of a variable)."""
    from tfc.frontend.registry import is_registered, lookup_op_type

    if any(t.dtype.is_ref_dtype for t in op.outputs):
        return True
    return is_registered(op.type) and bool(getattr(lookup_op_type(op.type), "forwards_refs", False))


class _Group:
    __slots__ = ("parent", "request", "members", "pinned", "requested_by")

    def __init__(self, op, request):
        self.parent = self
        self.request = request
        self.members = [op]
        self.pinned = op.type in _STATE_OPS
        self.requested_by = op if request is not None else None


def place(ops, gpus: int, soft: bool) -> dict:
    """{op: CPU, GPU or GPU:i} for a step's ``ops`` (topological) with ``gpus`` GPUs."""
    requests = {op: requested(op, gpus, soft) for op in ops}
    if not any(is_gpu(r) for r in requests.values()):
        return dict.fromkeys(ops, CPU)
    from tfc.distributed.placer import inside_control_flow, ref_input_positions

    groups = {op: _Group(op, requests[op]) for op in ops}

    def union(a: _Group, b: _Group, ref_edge: bool = False, flow: bool = False) -> None:
        ra, rb = find_root(a), find_root(b)
        if ra is rb:
            return
        if ra.request is not None and rb.request is not None and ra.request != rb.request:
            if ref_edge:  # the consumer of a ref goes where the ref is
                rb.request = ra.request
            elif flow:  # a cond or loop goes where its variables are (else where its first op is)
                if ra.pinned and rb.pinned:
                    return  # the split names the edge that cannot cross devices
                if rb.pinned:
                    ra.request = rb.request
                else:
                    rb.request = ra.request
            elif soft:
                rb.request = ra.request
            else:
                first, second = ra.requested_by or ra.members[0], rb.requested_by or rb.members[0]
                what = "ids" if is_gpu(ra.request) and is_gpu(rb.request) else "types"
                raise errors.InvalidArgumentError(
                    None, second, f"Cannot colocate nodes {{{{colocation_node {first.name}}}}} and "
                                  f"{{{{colocation_node {second.name}}}}}: Cannot merge devices with incompatible "
                                  f"{what}: '{first.device}' and '{second.device}'")
        rb.parent = ra
        if ra.request is None:
            ra.request = rb.request
        ra.members.extend(rb.members)
        ra.pinned = ra.pinned or rb.pinned
        if ra.requested_by is None:
            ra.requested_by = rb.requested_by

    by_name = {op.name: op for op in ops}
    for op in ops:
        for entry in op.colocation_groups():
            name = entry[5:].decode() if isinstance(entry, bytes) else entry[5:]
            other = by_name.get(name)
            if other is not None and other is not op:
                union(groups[other], groups[op])
    for op in ops:
        positions = ref_input_positions(op) if op._inputs else ()
        for position in positions:
            if position < len(op._inputs) and op._inputs[position].op in groups:
                union(groups[op._inputs[position].op], groups[op], ref_edge=True)
        forwards = _forwards_refs(op)
        for t in op._inputs:  # a handle's users, and what forwards a ref (RefSwitch, a variable's read)
            if t.op in groups and (t.dtype.base_dtype == dtypes.resource or (forwards and t.dtype.is_ref_dtype)):
                union(groups[t.op], groups[op], ref_edge=True)
    inside = inside_control_flow(ops)
    for op in ops:
        if inside:
            for source in [t.op for t in op._inputs] + list(op._control_inputs):
                if source in inside and source in groups:
                    union(groups[source], groups[op], flow=True)
    return resolve_by_root(ops, groups, lambda root: _resolve(root, soft, inside))


def _resolve(root: _Group, soft: bool, inside: set) -> str:
    lacking = next((op for op in root.members if not has_gpu_kernel(op, op in inside)), None)
    if lacking is None:
        return root.request or GPU  # no request: GPU 0, as TF places ops when there is a GPU
    if is_gpu(root.request) and not soft:
        op = root.requested_by or lacking
        raise errors.InvalidArgumentError(
            None, lacking, f"Cannot assign a device for operation {lacking.name}: Could not satisfy explicit device "
                           f"specification '{op.device}' because no supported kernel for GPU devices is available.")
    return CPU
