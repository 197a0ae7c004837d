"""tf.train.ClusterSpec and the ServerDef a tf.train.Server is built from.

``ClusterSpec`` behaves exactly as TensorFlow 1.15's (python/training/server_lib.py): built
from a dict of job name -> list of addresses or {task index: address}, from a
``ClusterDef`` (kept, not copied) or from another ``ClusterSpec``; ``as_dict`` gives lists
for dense jobs and dicts for sparse ones; equality compares the job -> {index: address}
mapping (with another ClusterSpec or a plain dict of that form).

Also here: the names of a task's device and the parsing of ``host:port`` addresses.
"""
from __future__ import annotations

from tfc.frontend import errors
from tfc.protos.cluster_pb2 import ClusterDef
from tfc.protos.tensorflow_server_pb2 import ServerDef

__all__ = ["ClusterSpec", "make_server_def", "task_device_name", "split_address"]


def _as_bytes(value, what: str) -> bytes:
    if isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode("utf-8")
    raise TypeError(what)


def _foreign_proto(value, full_name_suffix: str, cls):
    """A protobuf of another package (TensorFlow's own ``tensorflow.ClusterDef``...) with the
    same fields, reparsed as tfc's; None when ``value`` is not one."""
    descriptor = getattr(value, "DESCRIPTOR", None)
    if descriptor is None or not hasattr(value, "SerializeToString"):
        return None
    if not descriptor.full_name.endswith(full_name_suffix):
        return None
    return cls.FromString(value.SerializeToString())


class ClusterSpec:
    """Represents a cluster as a set of "tasks", organized into "jobs"."""

    def __init__(self, cluster):
        if isinstance(cluster, dict):
            self._cluster_spec = {}
            for job_name, tasks in cluster.items():
                if isinstance(tasks, (list, tuple)):
                    job_tasks = {i: task for i, task in enumerate(tasks)}
                elif isinstance(tasks, dict):
                    job_tasks = {int(i): task for i, task in tasks.items()}
                else:
                    raise TypeError("The tasks for job %r must be a list or a dictionary "
                                    "from integers to strings." % job_name)
                self._cluster_spec[job_name] = job_tasks
            self._make_cluster_def()
        elif isinstance(cluster, ClusterDef) or _foreign_proto(cluster, ".ClusterDef", ClusterDef) is not None:
            if not isinstance(cluster, ClusterDef):
                cluster = _foreign_proto(cluster, ".ClusterDef", ClusterDef)
            self._cluster_def = cluster
            self._cluster_spec = {}
            for job_def in self._cluster_def.job:
                self._cluster_spec[job_def.name] = {i: t for i, t in job_def.tasks.items()}
        elif isinstance(cluster, ClusterSpec):
            self._cluster_def = ClusterDef()
            self._cluster_def.MergeFrom(cluster.as_cluster_def())
            self._cluster_spec = {}
            for job_def in self._cluster_def.job:
                self._cluster_spec[job_def.name] = {i: t for i, t in job_def.tasks.items()}
        else:
            raise TypeError("`cluster` must be a dictionary mapping one or more job names to lists of network "
                            "addresses, or a `ClusterDef` protocol buffer")

    def __bool__(self):
        return bool(self._cluster_spec)

    __nonzero__ = __bool__

    def __eq__(self, other):
        return self._cluster_spec == other

    def __ne__(self, other):
        return self._cluster_spec != other

    __hash__ = None  # TF's ClusterSpec defines __eq__ only: unhashable

    def __repr__(self):
        key_values = self.as_dict()
        string_items = [repr(k) + ": " + repr(key_values[k]) for k in sorted(key_values)]
        return "ClusterSpec({" + ", ".join(string_items) + "})"

    def as_dict(self):
        """job name -> list of addresses (dense task indices) or {task index: address} (sparse)."""
        ret = {}
        for job in self.jobs:
            task_indices = self.task_indices(job)
            if len(task_indices) == 0:
                ret[job] = {}
                continue
            if max(task_indices) + 1 == len(task_indices):
                ret[job] = self.job_tasks(job)
            else:
                ret[job] = {i: self.task_address(job, i) for i in task_indices}
        return ret

    def as_cluster_def(self):
        """The ``ClusterDef`` protocol buffer of this cluster."""
        return self._cluster_def

    @property
    def jobs(self):
        return list(self._cluster_spec.keys())

    def num_tasks(self, job_name):
        try:
            job = self._cluster_spec[job_name]
        except KeyError:
            raise ValueError("No such job in cluster: %r" % job_name)
        return len(job)

    def task_indices(self, job_name):
        try:
            job = self._cluster_spec[job_name]
        except KeyError:
            raise ValueError("No such job in cluster: %r" % job_name)
        return list(sorted(job.keys()))

    def task_address(self, job_name, task_index):
        try:
            job = self._cluster_spec[job_name]
        except KeyError:
            raise ValueError("No such job in cluster: %r" % job_name)
        try:
            return job[task_index]
        except KeyError:
            raise ValueError("No task with index %r in job %r" % (task_index, job_name))

    def job_tasks(self, job_name):
        """A list indexed by task index (None where a sparse job has no task)."""
        try:
            job = self._cluster_spec[job_name]
        except KeyError:
            raise ValueError("No such job in cluster: %r" % job_name)
        ret = [None for _ in range(max(job.keys()) + 1)]
        for i, task in job.items():
            ret[i] = task
        return ret

    def _make_cluster_def(self):
        self._cluster_def = ClusterDef()
        for job_name, tasks in sorted(self._cluster_spec.items()):
            job_name = _as_bytes(job_name, "Job name %r must be bytes or unicode" % (job_name,))
            job_def = self._cluster_def.job.add()
            job_def.name = job_name
            for i, task_address in sorted(tasks.items()):
                task_address = _as_bytes(task_address, "Task address %r must be bytes or unicode" % (task_address,))
                job_def.tasks[i] = task_address


def make_server_def(server_or_cluster_def, job_name=None, task_index=None, protocol=None, config=None) -> ServerDef:
    """TF's ``_make_server_def``: a ``ServerDef`` from a ServerDef, ClusterDef, ClusterSpec or dict."""
    foreign = _foreign_proto(server_or_cluster_def, ".ServerDef", ServerDef)
    if foreign is not None:
        server_or_cluster_def = foreign
    server_def = ServerDef()
    if isinstance(server_or_cluster_def, ServerDef):
        server_def.MergeFrom(server_or_cluster_def)
        if job_name is not None:
            server_def.job_name = job_name
        if task_index is not None:
            server_def.task_index = task_index
        if protocol is not None:
            server_def.protocol = protocol
        if config is not None:
            server_def.default_session_config.MergeFrom(_config_proto(config))
    else:
        try:
            cluster_spec = ClusterSpec(server_or_cluster_def)
        except TypeError:
            raise TypeError("Could not convert `server_or_cluster_def` to a `tf.train.ServerDef` or "
                            "`tf.train.ClusterSpec`.")
        if job_name is None:
            if len(cluster_spec.jobs) == 1:
                job_name = cluster_spec.jobs[0]
            else:
                raise ValueError("Must specify an explicit `job_name`.")
        if task_index is None:
            task_indices = cluster_spec.task_indices(job_name)
            if len(task_indices) == 1:
                task_index = task_indices[0]
            else:
                raise ValueError("Must specify an explicit `task_index`.")
        if protocol is None:
            protocol = "grpc"
        server_def = ServerDef(cluster=cluster_spec.as_cluster_def(), job_name=job_name, task_index=task_index,
                               protocol=protocol)
        if config is not None:
            server_def.default_session_config.MergeFrom(_config_proto(config))
    return server_def


def _config_proto(config):
    from tfc.protos.config_pb2 import ConfigProto

    if isinstance(config, ConfigProto):
        return config
    foreign = _foreign_proto(config, ".ConfigProto", ConfigProto)
    if foreign is None:
        raise TypeError(f"config must be a tf.ConfigProto, got {type(config).__name__}")
    return foreign


def task_name(job: str, task: int, replica: int = 0) -> str:
    return f"/job:{job}/replica:{replica}/task:{task}"


def task_device_name(job: str, task: int, replica: int = 0, device_type: str = "CPU", index: int = 0) -> str:
    return f"{task_name(job, task, replica)}/device:{device_type}:{index}"


def split_address(address: str) -> tuple:
    """``host:port`` -> (host, port); brackets around an IPv6 host are removed. A port that
    is not a number is an InvalidArgumentError naming the address (as TF's GrpcServer)."""
    text = address.decode() if isinstance(address, bytes) else str(address)
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit():
        raise errors.InvalidArgumentError(None, None, f'Could not parse port for local server from "{text}"')
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    return host, int(port)
