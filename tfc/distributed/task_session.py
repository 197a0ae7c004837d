"""Running steps on this task: a tfc Session over a graph that arrived over the wire.

The master (a client's RunStep) and the worker (a registered graph's RunGraph) both run
their steps with ``TaskSession``: tfc's own Session machinery (run plans, fetch handling,
host ops, compilation and its caches, the variables' buffers; tfc/runtime/session.py) with
three differences:

- variables live in the task's ResourceManager (by container and shared name), so they
  outlive the session and other sessions on the task see them (unless the session
  isolates its state);
- placement is the master's (tfc/distributed/placer.py: a step whose ops are on several
  tasks is partitioned, and each task runs its part): a device that no task has is TF's
  "Cannot assign a device" InvalidArgumentError, unless soft placement is on;
- fetches, feeds and targets are graph names (``b:0``, ``init``), as they come in RPCs.
"""
from __future__ import annotations

import sys
from dataclasses import dataclass

import numpy as np

from tfc.frontend import errors
from tfc.frontend.device import DeviceSpec
from tfc.runtime.session import BaseSession

from .cluster import ClusterSpec, task_device_name, task_name
from .resources import ResourceManager, VariableValues


@dataclass
class TaskInfo:
    """Who this task is in its cluster."""

    job: str
    index: int
    cluster: ClusterSpec
    incarnation: int
    replica: int = 0

    @property
    def name(self) -> str:
        return task_name(self.job, self.index, self.replica)

    @property
    def device(self) -> str:
        return task_device_name(self.job, self.index, self.replica)

    def has_task(self, job, index) -> bool:
        """Whether the cluster has a task matching this (partial) job / task index."""
        jobs = [job] if job is not None else self.cluster.jobs
        for name in jobs:
            try:
                indices = self.cluster.task_indices(name)
            except ValueError:
                continue
            if index is None or index in indices:
                return True
        return False


class TaskSession(BaseSession):
    """A Session whose steps run on this task, on the task's variables."""

    resource_scope = None  # the client session's handle: its queues without a shared name are its own

    def __init__(self, graph, config, task: TaskInfo, resources: ResourceManager, private: bool = False):
        super().__init__("", graph, config)
        self._task = task
        self._private = private
        self._variables.values = VariableValues(resources, graph, private)

    def run_step(self, fetch_names, feeds, target_names) -> list:
        """Run one step: ``feeds`` is a list of (tensor name, array); returns one array per fetch."""
        fetch_names, target_names = list(fetch_names), list(target_names)
        feed_dict = dict(feeds) if feeds else None
        values = self.run(fetch_names + target_names, feed_dict)
        return [np.asarray(v) for v in values[:len(fetch_names)]]

    def _check_placement(self, ops) -> None:
        task = self._task
        config = self._config
        soft = bool(getattr(config, "allow_soft_placement", False))
        log = bool(getattr(config, "log_device_placement", False))
        for op in ops:
            device = op.device
            if device:
                spec = DeviceSpec.from_string(device)
                elsewhere = ((spec.job is not None and spec.job != task.job)
                             or (spec.task is not None and spec.task != task.index)
                             or (spec.replica is not None and spec.replica != task.replica))
                if elsewhere and task.has_task(spec.job, spec.task) and (spec.replica in (None, 0)):
                    elsewhere = False  # the master placed it here (a colocation, a ref input: placer.py)
                bad_type = spec.device_type not in (None, "CPU")
                if (elsewhere or bad_type) and not soft:
                    raise errors.InvalidArgumentError(
                        None, op, f"Cannot assign a device for operation {op.name}: {{{{node {op.name}}}}} was "
                                  f"explicitly assigned to {device} but available devices are [ {task.device} ]. "
                                  "Make sure the device specification refers to a valid device.")
            if log and op not in self._logged_ops:
                self._logged_ops.add(op)
                print(f"{op.name}: ({op.type}): {task.device}", file=sys.stderr)

    def close(self) -> None:
        super().close()  # the variables' clear() leaves shared containers alone
