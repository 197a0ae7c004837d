"""tf.train.replica_device_setter and its ps strategies (TF 1.15's
python/training/device_setter.py, and tf.contrib.training's GreedyLoadBalancingStrategy,
RandomStrategy and byte_size_load_fn, offered in tf.train by tfc).

``replica_device_setter`` returns a device function for ``tf.device``: ops whose type is a
ps op type (variables, hash tables...) go to a ps task (``ps_strategy`` picks which:
round robin by default), every other op to ``worker_device``; with ``merge_devices`` the
op's own device fields win over the ones the function fills in.
"""
from __future__ import annotations

import hashlib
import logging

import numpy as np

from tfc.frontend.device import DeviceSpec

logger = logging.getLogger("tfc")

STANDARD_PS_OPS = ("Variable", "VariableV2", "AutoReloadVariable", "MutableHashTable", "MutableHashTableV2",
                   "MutableHashTableOfTensors", "MutableHashTableOfTensorsV2", "MutableDenseHashTable",
                   "MutableDenseHashTableV2", "VarHandleOp", "BoostedTreesEnsembleResourceHandleOp",
                   "BoostedTreesQuantileStreamResourceHandleOp", "ResourceConditionalAccumulator",
                   "DecisionTreeResource")


class _RoundRobinStrategy:
    """The next ps task index, in round-robin order."""

    def __init__(self, num_tasks):
        self._num_tasks = num_tasks
        self._next_task = 0

    def __call__(self, unused_op):
        task = self._next_task
        self._next_task = (self._next_task + 1) % self._num_tasks
        return task


class _ReplicaDeviceChooser:
    """Chooses the device of each op in replicated training (see replica_device_setter)."""

    def __init__(self, ps_tasks, ps_device, worker_device, merge_devices, ps_ops, ps_strategy):
        self._ps_tasks = ps_tasks
        self._ps_device = ps_device
        self._worker_device = worker_device
        self._merge_devices = merge_devices
        self._ps_ops = ps_ops
        self._ps_strategy = ps_strategy

    def device_function(self, op):
        """The device of ``op``."""
        # Unless merge_devices is off and the op has a device, merging below is what to do.
        if not self._merge_devices and op.device:
            return op.device
        current_device = DeviceSpec.from_string(op.device or "")
        # The ps device is used for the ps ops whenever there is one and ps_tasks is non-zero;
        # its task is set (by ps_strategy) only if its job is not changed by the op's own.
        op_type = op.op if hasattr(op, "op") and isinstance(op.op, str) else op.type  # a NodeDef, or an Operation
        if self._ps_tasks and self._ps_device and op_type in self._ps_ops:
            ps_device = DeviceSpec.from_string(self._ps_device)
            current_job, ps_job = current_device.job, ps_device.job
            if ps_job and (not current_job or current_job == ps_job):
                ps_device.task = self._ps_strategy(op)
            return ps_device.make_merged_spec(current_device).to_string()
        worker_device = DeviceSpec.from_string(self._worker_device or "")
        return worker_device.make_merged_spec(current_device).to_string()


def replica_device_setter(ps_tasks=0, ps_device="/job:ps", worker_device="/job:worker", merge_devices=True,
                          cluster=None, ps_ops=None, ps_strategy=None):
    """A device function for ``tf.device`` when building a graph for replicas.

    ``cluster`` (a ClusterSpec, dict or ClusterDef) gives the number of ps tasks (then
    ``ps_tasks`` is ignored); with neither, or no ps job in the cluster, the answer is None
    (no device function). Only ``ps_ops`` (default: STANDARD_PS_OPS, the variable and table
    op types) go to the ps tasks, placed by ``ps_strategy`` (default: round robin over the
    ps tasks; e.g. ``GreedyLoadBalancingStrategy``); everything else goes to
    ``worker_device``. TypeError if ``ps_strategy`` is not callable."""
    if cluster is not None:
        from .cluster import ClusterSpec

        cluster_spec = cluster.as_dict() if isinstance(cluster, ClusterSpec) else ClusterSpec(cluster).as_dict()
        ps_job_name = DeviceSpec.from_string(ps_device).job
        if ps_job_name not in cluster_spec or cluster_spec[ps_job_name] is None:
            return None
        ps_tasks = len(cluster_spec[ps_job_name])
    if ps_tasks == 0:
        return None
    if ps_ops is None:
        ps_ops = list(STANDARD_PS_OPS)
    if not merge_devices:
        logger.warning("DEPRECATION: It is recommended to set merge_devices=true in replica_device_setter")
    if ps_strategy is None:
        ps_strategy = _RoundRobinStrategy(ps_tasks)
    if not callable(ps_strategy):
        raise TypeError("ps_strategy must be callable")
    chooser = _ReplicaDeviceChooser(ps_tasks, ps_device, worker_device, merge_devices, ps_ops, ps_strategy)
    return chooser.device_function


class RandomStrategy:
    """A ps task index for each op, chosen by hashing its name (tf.contrib.training's)."""

    def __init__(self, num_ps_replicas, seed=0):
        self._num_ps_replicas = num_ps_replicas
        self._seed = seed

    def __call__(self, op):
        key = "%s_%d" % (op.name, self._seed)
        key = key.encode("utf-8")
        # Use MD5 instead of Python's built-in hash() to get consistent outputs across runs.
        n = int(hashlib.md5(key).hexdigest(), 16)
        return int(n % self._num_ps_replicas)


class GreedyLoadBalancingStrategy:
    """Places each ps op on the ps task with the least load so far (tf.contrib.training's).

    ``load_fn(op)`` is the load an op adds (``byte_size_load_fn``: its variable's bytes);
    the least loaded task takes the op (the first one on ties). This is a heuristic: the
    result depends on the order the ops are created in."""

    def __init__(self, num_tasks, load_fn):
        self._num_tasks = num_tasks
        self._load_fn = load_fn
        self._ps_loads = np.zeros(num_tasks)

    def __call__(self, op):
        task = int(np.argmin(self._ps_loads))
        self._ps_loads[task] += self._load_fn(op)
        return task


def byte_size_load_fn(op):
    """The byte size of a single-output op's output (a variable's value): its shape (the
    ``shape`` attr where the output's is not fully known) times its element size."""
    from tfc.frontend.tensor_shape import TensorShape

    if len(op.outputs) != 1:
        raise ValueError("Op %s must have a single output" % op.name)
    output = op.outputs[0]
    elem_size = output.dtype.base_dtype.size
    shape = output.get_shape()
    if not shape.is_fully_defined():
        # Scalar variables are created with an unknown output shape in TF (their shape attr is
        # set right after).
        shape = TensorShape(op.get_attr("shape"))
    shape.assert_is_fully_defined()
    return shape.num_elements() * elem_size
