"""tf.train.ClusterSpec and the ServerDef of tf.train.Server, as TF 1.15's server_lib.py."""
from __future__ import annotations

import pytest

import tfc.compat.v1 as tf
from tfc.distributed.cluster import make_server_def, split_address, task_device_name
from tfc.frontend import errors
from tfc.protos import ClusterDef, ConfigProto, ServerDef


def test_from_dict_of_lists():
    spec = tf.train.ClusterSpec({"worker": ["w0:2222", "w1:2222"], "ps": ["ps0:2222"]})
    assert spec.jobs == ["worker", "ps"]
    assert spec.num_tasks("worker") == 2 and spec.num_tasks("ps") == 1
    assert spec.task_indices("worker") == [0, 1]
    assert spec.task_address("worker", 1) == "w1:2222"
    assert spec.job_tasks("worker") == ["w0:2222", "w1:2222"]
    assert spec.as_dict() == {"worker": ["w0:2222", "w1:2222"], "ps": ["ps0:2222"]}
    assert bool(spec) and not bool(tf.train.ClusterSpec({}))
    assert repr(spec) == "ClusterSpec({'ps': ['ps0:2222'], 'worker': ['w0:2222', 'w1:2222']})"


def test_cluster_def_sorted_by_job_and_task():
    spec = tf.train.ClusterSpec({"worker": {3: "w3:1", 1: "w1:1"}, "ps": ("ps0:1",)})
    cluster_def = spec.as_cluster_def()
    assert isinstance(cluster_def, ClusterDef)
    assert [job.name for job in cluster_def.job] == ["ps", "worker"]
    assert dict(cluster_def.job[1].tasks) == {1: "w1:1", 3: "w3:1"}


def test_sparse_jobs():
    spec = tf.train.ClusterSpec({"worker": {1: "w1:2222", "3": "w3:2222"}, "ps": ["ps0:2222"]})
    assert spec.task_indices("worker") == [1, 3]
    assert spec.num_tasks("worker") == 2
    assert spec.job_tasks("worker") == [None, "w1:2222", None, "w3:2222"]
    assert spec.as_dict() == {"worker": {1: "w1:2222", 3: "w3:2222"}, "ps": ["ps0:2222"]}
    assert tf.train.ClusterSpec({"a": {}}).as_dict() == {"a": {}}


def test_from_cluster_def_keeps_it_and_from_cluster_spec_copies():
    cluster_def = tf.train.ClusterSpec({"worker": ["w0:1", "w1:1"]}).as_cluster_def()
    spec = tf.train.ClusterSpec(cluster_def)
    assert spec.as_cluster_def() is cluster_def
    assert spec.as_dict() == {"worker": ["w0:1", "w1:1"]}
    copy = tf.train.ClusterSpec(spec)
    assert copy.as_cluster_def() is not cluster_def and copy.as_cluster_def() == cluster_def
    assert copy == spec and not (copy != spec)


def test_equality_with_specs_and_dicts():
    a = tf.train.ClusterSpec({"worker": ["w0:1"]})
    assert a == tf.train.ClusterSpec({"worker": {0: "w0:1"}})
    assert a == {"worker": {0: "w0:1"}}
    assert a != tf.train.ClusterSpec({"worker": ["w0:2"]})
    with pytest.raises(TypeError):
        hash(a)


def test_errors():
    spec = tf.train.ClusterSpec({"worker": ["w0:1"]})
    with pytest.raises(ValueError, match=r"^No such job in cluster: 'ps'$"):
        spec.num_tasks("ps")
    with pytest.raises(ValueError, match=r"^No such job in cluster: 'ps'$"):
        spec.task_indices("ps")
    with pytest.raises(ValueError, match=r"^No such job in cluster: 'ps'$"):
        spec.job_tasks("ps")
    with pytest.raises(ValueError, match=r"^No task with index 3 in job 'worker'$"):
        spec.task_address("worker", 3)
    with pytest.raises(TypeError, match=r"The tasks for job 'worker' must be a list or a dictionary"):
        tf.train.ClusterSpec({"worker": "w0:1"})
    with pytest.raises(TypeError, match=r"^`cluster` must be a dictionary mapping"):
        tf.train.ClusterSpec(["w0:1"])
    with pytest.raises(TypeError, match=r"^Task address 5 must be bytes or unicode$"):
        tf.train.ClusterSpec({"worker": [5]})


def test_make_server_def():
    config = ConfigProto(operation_timeout_in_ms=5)
    server_def = make_server_def({"worker": ["w0:1", "w1:1"]}, job_name="worker", task_index=1, config=config)
    assert isinstance(server_def, ServerDef)
    assert (server_def.job_name, server_def.task_index, server_def.protocol) == ("worker", 1, "grpc")
    assert server_def.default_session_config.operation_timeout_in_ms == 5
    assert dict(server_def.cluster.job[0].tasks) == {0: "w0:1", 1: "w1:1"}
    single = make_server_def({"local": ["localhost:0"]})
    assert (single.job_name, single.task_index) == ("local", 0)
    with pytest.raises(ValueError, match=r"^Must specify an explicit `job_name`\.$"):
        make_server_def({"a": ["x:1"], "b": ["y:1"]})
    with pytest.raises(ValueError, match=r"^Must specify an explicit `task_index`\.$"):
        make_server_def({"a": ["x:1", "y:1"]})
    with pytest.raises(TypeError, match=r"^Could not convert `server_or_cluster_def`"):
        make_server_def(42)
    overridden = make_server_def(server_def, job_name="worker", task_index=0, protocol="grpc+verbs")
    assert (overridden.task_index, overridden.protocol) == (0, "grpc+verbs")
    assert make_server_def(tf.train.ClusterSpec({"a": ["x:1"]})).job_name == "a"


def test_names_and_addresses():
    assert task_device_name("ps", 2) == "/job:ps/replica:0/task:2/device:CPU:0"
    assert split_address("localhost:2222") == ("localhost", 2222)
    assert split_address("[::1]:5") == ("::1", 5)
    with pytest.raises(errors.InvalidArgumentError, match=r'Could not parse port for local server from "w0"'):
        split_address("w0")


def test_train_namespace_has_the_protos():
    assert tf.train.ClusterDef is ClusterDef and tf.train.ServerDef is ServerDef
    assert tf.train.JobDef().name == ""
