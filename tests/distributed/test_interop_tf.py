"""Live interop with TensorFlow (2.21, its venv; skipped without it): TF's client on a tfc
server, tfc's client on a TF server, and a TF master driving a tfc worker.

One TensorFlow process (tf_scripts/tf_peer.py) serves task chief:0 of the cluster
{"chief": [TF], "worker": [tfc, this process]} and runs TF's client on command."""
from __future__ import annotations

import json
import os

import numpy as np
import pytest

import tfc.compat.v1 as tf
from tfc.frontend import errors

from dist_helpers import HERE, TF_PYTHON, free_port, read_log, requires_tf, start_process, stop_process

pytestmark = requires_tf


@pytest.fixture(scope="module")
def cluster():
    chief_port, worker_port = free_port(), free_port()
    spec = {"chief": [f"localhost:{chief_port}"], "worker": [f"localhost:{worker_port}"]}
    worker = tf.train.Server(spec, job_name="worker", task_index=0)
    peer, chief_target = start_process(TF_PYTHON, os.path.join(HERE, "tf_scripts", "tf_peer.py"), chief_port,
                                       f"localhost:{worker_port}")
    try:
        yield worker, chief_target, peer
    finally:
        stop_process(peer)
        worker.stop()


def ask(peer, **command):
    peer.stdin.write(json.dumps(command) + "\n")
    peer.stdin.flush()
    line = peer.stdout.readline()
    assert line, f"the TensorFlow peer died: {read_log(peer)}"
    result = json.loads(line)
    assert "error" not in result, result["error"]
    return result


def test_tf_client_on_a_tfc_server(cluster):
    worker, _, peer = cluster
    out = ask(peer, cmd="client", target=worker.target)
    assert out["uninitialized"]["class"] == "FailedPreconditionError"
    assert "Attempting to use uninitialized value tfclient_v" in out["uninitialized"]["message"]
    assert out["uninitialized"]["op"] == "tfclient_v"  # TF's client found the op the message names
    assert out["y"] == [[4.0, 6.0], [2.0, 4.0]]
    assert out["total"] == 16.0
    assert out["words"] == ["ab", "", "cde"]
    assert out["count"] == [7, "int64"]
    assert out["fed"] == [[1.0, 1.0], [2.0, 0.0]]
    assert out["bump"] == [[2.0, 3.0], [4.0, 5.0]]
    assert out["z"] == [[20.0, 30.0], [40.0, 50.0]]
    assert out["callable"] == 14.0
    assert out["partial_run"] == [3.0, 9.0]  # PartialRunSetup, then RunSteps with its handle
    assert out["devices"] == ["/job:worker/replica:0/task:0/device:CPU:0", "/job:chief/replica:0/task:0/device:CPU:0"]
    assert out["persisted"] == [[2.0, 3.0], [4.0, 5.0]]  # a second TF session sees the task's variable
    assert out["after_reset"]["class"] == "FailedPreconditionError"


def test_tfc_client_on_a_tf_server(cluster):
    _, chief_target, _ = cluster
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 2], name="x")
        v = tf.Variable([[1.0, 2.0], [3.0, 4.0]], name="tfc_on_tf_v")
        y = tf.matmul(x, v, name="y")
        bump = tf.assign_add(v, tf.ones([2, 2]))
        words = tf.constant(["ab", "", "cde"], name="words")
        with tf.Session(chief_target) as sess:
            with pytest.raises(errors.FailedPreconditionError) as caught:
                sess.run(y, {x: [[1.0, 1.0]]})
            assert "Attempting to use uninitialized value tfc_on_tf_v" in caught.value.message
            assert caught.value.op.name == "tfc_on_tf_v/read"  # TF's message names it
            sess.run(tf.global_variables_initializer())
            out = sess.run({"y": y, "w": words, "fed": x}, {x: [[1.0, 1.0]]})
            assert out["y"].tolist() == [[4.0, 6.0]] and out["y"].dtype == np.float32
            assert out["w"].tolist() == [b"ab", b"", b"cde"]  # TF's master sends strings as tensor_content
            assert out["fed"].tolist() == [[1.0, 1.0]]
            assert sess.run(bump).tolist() == [[2.0, 3.0], [4.0, 5.0]]
            doubled = tf.identity(v * 2.0)  # ExtendSession on TF's master
            assert sess.run(doubled).tolist() == [[4.0, 6.0], [8.0, 10.0]]
            devices = sorted(d.name for d in sess.list_devices())
            assert devices == ["/job:chief/replica:0/task:0/device:CPU:0",
                               "/job:worker/replica:0/task:0/device:CPU:0"]
        with tf.Session(chief_target) as sess:
            assert sess.run(v).tolist() == [[2.0, 3.0], [4.0, 5.0]]
        tf.Session.reset(chief_target)
        with tf.Session(chief_target) as sess:
            with pytest.raises(errors.FailedPreconditionError, match="uninitialized value tfc_on_tf_v"):
                sess.run(v)


def test_tf_master_drives_a_tfc_worker(cluster):
    worker, _, peer = cluster
    out = ask(peer, cmd="on_worker")
    assert out["uninitialized"]["class"] == "FailedPreconditionError"
    assert "Attempting to use uninitialized value onworker_v" in out["uninitialized"]["message"]
    assert out["y"] == [[4.0, 6.0]]  # x crossed from the chief (RecvTensor by tfc), y came back
    assert out["bump"] == [[2.0, 3.0], [4.0, 5.0]]
    assert out["z"] == 28.0  # the chief's consumer received y from tfc's rendezvous (RecvTensor to tfc)
    assert out["devices"] == ["/job:chief/replica:0/task:0/device:CPU:0",
                              "/job:worker/replica:0/task:0/device:CPU:0"]
    assert "onworker_v" in worker._server.resources.names()[""]  # the variable lives on the tfc task
