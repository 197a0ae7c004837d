"""TensorFlow and tfc clusters, steps across tasks:

- TensorFlow's client runs a graph spanning a tfc cluster's tasks (in-graph replication,
  variables on the ps) and gets TensorFlow's own numbers — live where TensorFlow is installed,
  and replayed from tests/fixtures/tf_cluster_transcripts.json (recorded by
  tests/fixtures/make_tf_cluster_transcripts.py) everywhere;
- tfc's master runs a step with TensorFlow's server as its ps: TensorFlow's worker takes
  tfc's partitions (their _Send/_Recv pairs and keys) and trains the variables it holds.
"""
from __future__ import annotations

import json
import os

import numpy as np

import tfc.compat.v1 as tf
from tfc.distributed import wire
from tfc.distributed.client import Channel
from tfc.protos import master_pb2

import transcripts
from dist_helpers import HERE, ROOT, TF_PYTHON, free_port, requires_tf, run_json, start_process, stop_process

FIXTURE = os.path.join(ROOT, "tests", "fixtures", "tf_cluster_transcripts.json")
CLIENT = os.path.join(HERE, "tf_scripts", "tf_cluster_client.py")


def assert_like_tensorflow(ours: dict, theirs: dict) -> None:
    """The tfc cluster's numbers against TensorFlow's own runtime's (float32 rounding apart)."""
    np.testing.assert_allclose(ours["losses"], theirs["losses"], rtol=1e-5)
    np.testing.assert_allclose(ours["w"], theirs["w"], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(ours["b"], theirs["b"], rtol=1e-5, atol=1e-6)
    assert ours["losses"][-1] < ours["losses"][0]
    assert ours["label"] == theirs["label"] == ["on", "ps"]
    assert ours["persisted_w"] == ours["w"]  # a second session saw the ps's variables


def test_recorded_tf_client_runs_a_multi_task_graph_on_a_tfc_cluster(tfc_cluster):
    record = transcripts.load(FIXTURE)["tf_cluster_client"]
    assert_like_tensorflow(record["result"]["tfc"], record["result"]["tf"])
    channel = Channel(tfc_cluster["master"].target[len("grpc://"):])
    handles: dict = {}
    replayed = []
    try:
        for call in record["calls"]:
            method = call["method"].rsplit("/", 1)[1]
            request_class = getattr(master_pb2, f"{method}Request")
            response_class = getattr(master_pb2, f"{method}Response")
            request = request_class.FromString(transcripts.decode(call["request"]))
            recorded = response_class.FromString(transcripts.decode(call["response"]))
            if getattr(request, "session_handle", ""):
                request.session_handle = handles[request.session_handle]
            ours = channel.call("MasterService", method, request, response_class, 60)
            if method == "CreateSession":
                handles[recorded.session_handle] = ours.session_handle
                devices = {node.device for node in request.graph_def.node}
                assert {"/job:ps/task:0", "/job:worker/task:0", "/job:worker/task:1"} <= devices
            elif method == "RunStep":
                assert ours.status_code == recorded.status_code == 0, ours.status_error_message
                assert sorted(t.name for t in ours.tensor) == sorted(t.name for t in recorded.tensor)
                theirs = {t.name: wire.to_ndarray(t.tensor) for t in recorded.tensor}
                for named in ours.tensor:
                    value = wire.to_ndarray(named.tensor)
                    if value.dtype == object:
                        assert value.tolist() == theirs[named.name].tolist()
                    else:
                        np.testing.assert_allclose(value, theirs[named.name], rtol=1e-6)
            replayed.append(method)
    finally:
        channel.close()
    assert replayed.count("RunStep") >= 7 and replayed.count("CreateSession") == 2


@requires_tf
def test_tf_client_runs_a_multi_task_graph_on_a_tfc_cluster(tfc_cluster):
    result = run_json(TF_PYTHON, CLIENT, tfc_cluster["master"].target, "")
    assert_like_tensorflow(result[tfc_cluster["master"].target], result["tf"])


@requires_tf
def test_tfc_master_with_a_tensorflow_ps():
    ports = [free_port(), free_port()]
    spec = {"ps": [f"localhost:{ports[0]}"], "worker": [f"localhost:{ports[1]}"]}
    ps, _ = start_process(TF_PYTHON, os.path.join(HERE, "tf_scripts", "tf_task.py"), json.dumps(spec), "ps", 0)
    worker = tf.train.Server(spec, job_name="worker", task_index=0)
    try:
        with tf.Graph().as_default():
            with tf.device("/job:ps/task:0"):
                w = tf.Variable([[1.0], [2.0]], name="tfps_w")
                words = tf.constant(["a", "bc"], name="tfps_words")
            x = tf.placeholder(tf.float32, [None, 2], name="tfps_x")
            with tf.device("/job:ps/task:0"):
                shifted = tf.add(x, 1.0, name="tfps_shifted")  # a feed that TensorFlow's worker consumes
            loss = tf.reduce_sum(tf.square(tf.matmul(x, w)), name="tfps_loss")
            train = tf.train.GradientDescentOptimizer(0.01).minimize(loss)
            with tf.Session(worker.target, config=tf.ConfigProto(operation_timeout_in_ms=20000)) as sess:
                sess.run(tf.global_variables_initializer())
                losses = [sess.run([train, loss], {x: [[1.0, 1.0]]})[1] for _ in range(3)]
                values = sess.run({"w": w, "words": words, "shifted": shifted}, {x: [[1.0, 2.0]]})
        with tf.Graph().as_default():  # the same steps on one process
            w_local = tf.Variable([[1.0], [2.0]])
            x_local = tf.placeholder(tf.float32, [None, 2])
            loss_local = tf.reduce_sum(tf.square(tf.matmul(x_local, w_local)))
            train_local = tf.train.GradientDescentOptimizer(0.01).minimize(loss_local)
            with tf.Session() as sess:
                sess.run(tf.global_variables_initializer())
                expected = [sess.run([train_local, loss_local], {x_local: [[1.0, 1.0]]})[1] for _ in range(3)]
                expected_w = sess.run(w_local)
        np.testing.assert_allclose(losses, expected, rtol=1e-6)
        np.testing.assert_allclose(values["w"], expected_w, rtol=1e-6)
        assert values["words"].tolist() == [b"a", b"bc"] and values["shifted"].tolist() == [[2.0, 3.0]]
    finally:
        worker.stop()
        stop_process(ps)

