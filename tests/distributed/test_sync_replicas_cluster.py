"""tf.train.SyncReplicasOptimizer across a tfc cluster, between-graph: a ps process, worker:1
in its own process and worker:0 in this one (the shared ``tfc_cluster``); two clients (one
per worker task, each with its own graph built with replica_device_setter) train with
MonitoredTrainingSession, the SyncReplicasOptimizer hook and StopAtStepHook. The gradients
meet in ConditionalAccumulators on the ps (shared by name across the two client sessions),
the chief's queue runner averages them, applies them and hands out tokens through
``sync_token_q`` on the ps, where each worker's step waits for its token.

The values are TensorFlow's: the same model and data as the single-process scenario of
tests/frontend/train/sync_scenarios.py, whose TF run is recorded in
tests/fixtures/sync_replicas.json (each update averages one gradient of each worker)."""
from __future__ import annotations

import json
import os
import sys
import threading
import time

import numpy as np
import pytest

import tfc.compat.v1 as tf

from dist_helpers import HERE

sys.path.insert(0, os.path.join(HERE, "..", "frontend", "train"))
import sync_scenarios as sc  # noqa: E402

FIXTURE = os.path.join(HERE, "..", "fixtures", "sync_replicas.json")
PREFIX = "sync_"  # the cluster is shared with other tests: names of our own


def _train(spec, index, target, chief_ready, out):
    try:
        with tf.Graph().as_default():
            with tf.device(tf.train.replica_device_setter(cluster=spec, worker_device=f"/job:worker/task:{index}")):
                model = sc.build_sync_model(tf, prefix=PREFIX)
            opt = model["opt"]
            probes = {"tokens": opt._sync_token_queue.size(),
                      "accumulated": [accumulator.num_accumulated() for accumulator, _ in opt._accumulator_list]}
            hooks = [opt.make_session_run_hook(index == 0, num_tokens=0),
                     tf.train.StopAtStepHook(last_step=sc.STEPS)]
            xs, ys = sc.worker_data(index)
            config = tf.ConfigProto(operation_timeout_in_ms=30000)
            losses, seen = [], []
            with tf.train.MonitoredTrainingSession(master=target, is_chief=(index == 0), hooks=hooks, config=config,
                                                   stop_grace_period_secs=1, log_step_count_steps=0,
                                                   save_summaries_steps=None, save_summaries_secs=None) as sess:
                if index == 0:
                    chief_ready.set()  # initialized: the other worker does not wait 30 s for the model
                while not sess.should_stop():
                    _, loss, step = sess.run([model["train_op"], model["loss"], model["global_step"]],
                                             {model["x"]: xs, model["y"]: ys})
                    losses.append(float(loss))
                    seen.append(int(step))
            out["losses"], out["seen"] = losses, seen
            if index == 0:
                with tf.Session(target, config=config) as plain:  # what the ps holds now
                    out["final"] = sc.to_json(plain.run({"w": model["w"], "b": model["b"],
                                                         "global_step": model["global_step"], **probes}))
    except BaseException as e:  # noqa: BLE001 - reported by the test
        import traceback

        out["error"] = f"{type(e).__name__}: {e}\n{traceback.format_exc()[-3000:]}"
        chief_ready.set()


def test_sync_replicas_between_graph_with_monitored_training_sessions(tfc_cluster):
    spec = tfc_cluster["spec"]
    targets = [tfc_cluster["master"].target, "grpc://" + spec["worker"][1]]
    with open(FIXTURE) as f:
        want = json.load(f)["sync_replicas_threads"]
    chief_ready = threading.Event()
    results = [{}, {}]
    started = time.monotonic()
    chief = threading.Thread(target=_train, args=(spec, 0, targets[0], chief_ready, results[0]), daemon=True)
    chief.start()
    assert chief_ready.wait(120)
    other = threading.Thread(target=_train, args=(spec, 1, targets[1], chief_ready, results[1]), daemon=True)
    other.start()
    for thread in (chief, other):
        thread.join(180)
    errors = [r["error"] for r in results if "error" in r]
    assert not errors, "\n".join(errors)
    assert time.monotonic() - started < 60

    # each worker ran one step per update, in lockstep, on the variables of that update
    for index in (0, 1):
        np.testing.assert_allclose(results[index]["losses"], want["losses"][index], rtol=1e-5)
        assert results[index]["seen"] == [0, 1, 2, 3]  # the global step each step read (TF reads it first)
    final = results[0]["final"]
    assert final["global_step"] == sc.STEPS
    np.testing.assert_allclose(final["w"], want["values"]["w"], rtol=1e-5)
    np.testing.assert_allclose(final["b"], want["values"]["b"], rtol=1e-5)
    assert final["tokens"] == 0 and final["accumulated"] == [0, 0]  # every token taken, no gradient left
    # closing the chief's session cancelled its queue runner, which waited for the next gradients on the ps
    deadline = time.monotonic() + 10
    while any(t.name.startswith("QueueRunnerThread-dummy_queue") and t.is_alive() for t in threading.enumerate()):
        assert time.monotonic() < deadline, "the chief's queue runner thread is still waiting"
        time.sleep(0.05)


def test_a_dequeue_waiting_on_the_ps_lets_other_clients_in_and_keeps_its_deadline(tfc_cluster):
    spec = tfc_cluster["spec"]
    targets = [tfc_cluster["master"].target, "grpc://" + spec["worker"][1]]
    with tf.Graph().as_default():
        with tf.device("/job:ps/task:0"):
            q = tf.FIFOQueue(3, tf.float32, shapes=[[]], shared_name="dist_q")
        dequeue = q.dequeue() * 2.0  # the dequeue goes where the queue is; the product here
        x = tf.placeholder(tf.float32, [])
        enqueue = q.enqueue(x)
        size = q.size()
        with tf.Session(targets[0]) as sess, tf.Session(targets[1]) as other:
            started = time.monotonic()
            with pytest.raises(tf.errors.DeadlineExceededError):
                sess.run(dequeue, options=tf.RunOptions(timeout_in_ms=300))
            assert time.monotonic() - started < 5.0
            got = {}
            waiter = threading.Thread(target=lambda: got.update(value=sess.run(dequeue)), daemon=True)
            waiter.start()
            time.sleep(0.3)  # the dequeue waits in a RunGraph on the ps; the ps serves the other client
            assert other.run(size) == 0
            other.run(enqueue, {x: 4.5})
            waiter.join(20)
            assert got == {"value": 9.0}
            assert sess.run(size) == 0
