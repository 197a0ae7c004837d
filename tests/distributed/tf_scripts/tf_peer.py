"""TensorFlow's side of the live interop tests (run with TensorFlow's python, not tfc's).

Usage: tf_peer.py CHIEF_PORT WORKER_ADDRESS
Starts a TensorFlow server, task 0 of job "chief" in the cluster {"chief": [localhost:
CHIEF_PORT], "worker": [WORKER_ADDRESS]} (the worker is a tfc server), prints
"READY grpc://localhost:CHIEF_PORT", then runs one command per stdin line (JSON) and
prints one JSON line per command:

- {"cmd": "client", "target": T}: TensorFlow's client runs a workload on the master at T
  (feeds, fetch structures, strings, variables initialised and assigned, graph growth,
  make_callable, list_devices, a partial run, an uninitialized-variable error, Session.reset);
- {"cmd": "on_worker"}: TensorFlow's client runs, on this TF master, a graph whose ops are
  placed on /job:worker/task:0 (the tfc worker): feeds cross from this task to the worker,
  variables live there, a fetch and a chief-side consumer cross back.
"""
import json
import sys

import numpy as np
import tensorflow as tf

tf.compat.v1.disable_v2_behavior()
v1 = tf.compat.v1


def error_info(e):
    return {"class": type(e).__name__, "message": e.message, "op": e.op.name if e.op is not None else None}


def client(target):
    out = {}
    g = tf.Graph()
    with g.as_default():
        x = v1.placeholder(tf.float32, [None, 2], name="x")
        v = v1.Variable([[1.0, 2.0], [3.0, 4.0]], name="tfclient_v")
        y = tf.matmul(x, v, name="y")
        total = tf.reduce_sum(y, name="total")
        bump = v1.assign_add(v, tf.ones([2, 2]), name="bump")
        words = tf.constant(["ab", "", "cde"], name="words")
        count = tf.constant(7, tf.int64, name="count")
        init = v1.global_variables_initializer()
    with v1.Session(target, graph=g) as sess:
        try:
            sess.run(y, {x: [[1.0, 1.0]]})
        except tf.errors.OpError as e:
            out["uninitialized"] = error_info(e)
        sess.run(init)
        got = sess.run({"y": y, "rest": [total, words, count, x]}, {x: [[1.0, 1.0], [2.0, 0.0]]})
        out["y"] = got["y"].tolist()
        out["total"] = float(got["rest"][0])
        out["words"] = [w.decode() for w in got["rest"][1]]
        out["count"] = [int(got["rest"][2]), str(got["rest"][2].dtype)]
        out["fed"] = got["rest"][3].tolist()
        out["bump"] = sess.run(bump).tolist()
        with g.as_default():
            z = tf.identity(v * 10.0, name="z")  # the graph grows: ExtendSession
        out["z"] = sess.run(z).tolist()
        call = sess.make_callable(total, [x])
        out["callable"] = float(call(np.ones((1, 2), np.float32)))
        out["devices"] = [d.name for d in sess.list_devices()]
        with g.as_default():
            pa = v1.placeholder(tf.float32, [], name="pr_a")
            pb = v1.placeholder(tf.float32, [], name="pr_b")
            first = tf.add(pa, 1.0, name="pr_first")
            second = tf.multiply(first, pb, name="pr_second")
        handle = sess.partial_run_setup([first, second], [pa, pb])
        out["partial_run"] = [float(sess.partial_run(handle, first, {pa: 2.0})),
                              float(sess.partial_run(handle, second, {pb: 3.0}))]
    with v1.Session(target, graph=g) as sess:
        out["persisted"] = sess.run(v).tolist()
    v1.Session.reset(target)
    with v1.Session(target, graph=g) as sess:
        try:
            sess.run(v)
        except tf.errors.OpError as e:
            out["after_reset"] = error_info(e)
    return out


def on_worker(target):
    out = {}
    g = tf.Graph()
    with g.as_default():
        with tf.device("/job:worker/task:0"):
            x = v1.placeholder(tf.float32, [None, 2], name="x")
            v = v1.Variable([[1.0, 2.0], [3.0, 4.0]], name="onworker_v")
            y = tf.matmul(x, v, name="y")
            bump = v1.assign_add(v, tf.ones([2, 2]), name="bump")
        with tf.device("/job:chief/task:0"):
            z = tf.reduce_sum(y * 2.0, name="z")
        init = v1.global_variables_initializer()
    with v1.Session(target, graph=g, config=v1.ConfigProto(operation_timeout_in_ms=30000)) as sess:
        try:
            sess.run(y, {x: [[1.0, 1.0]]})
        except tf.errors.OpError as e:
            out["uninitialized"] = error_info(e)
        sess.run(init)
        out["y"] = sess.run(y, {x: [[1.0, 1.0]]}).tolist()
        out["bump"] = sess.run(bump).tolist()
        out["z"] = float(sess.run(z, {x: [[1.0, 1.0]]}))
        out["devices"] = sorted(d.name for d in sess.list_devices())
    return out


def main():
    chief_port, worker_address = sys.argv[1], sys.argv[2]
    cluster = {"chief": [f"localhost:{chief_port}"], "worker": [worker_address]}
    server = tf.distribute.Server(cluster, job_name="chief", task_index=0)
    print("READY", f"grpc://localhost:{chief_port}", flush=True)
    for line in sys.stdin:
        command = json.loads(line)
        try:
            if command["cmd"] == "client":
                result = client(command["target"])
            elif command["cmd"] == "on_worker":
                result = on_worker(server.target)
            else:
                result = {"error": f"unknown command {command}"}
        except Exception as e:  # noqa: BLE001 - reported to the test
            result = {"error": f"{type(e).__name__}: {e}"}
        print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
