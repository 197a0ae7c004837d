"""Between-graph replication: one worker of a ps/worker cluster (run with tfc's python).

Usage: trainer.py CLUSTER_JSON TASK_INDEX CHECKPOINT_DIR LAST_STEP

Serves task worker:TASK_INDEX, builds the model with tf.train.replica_device_setter (its
variables on the ps task, its compute here) and trains it with
tf.train.MonitoredTrainingSession(master=server.target, is_chief=(TASK_INDEX == 0),
checkpoint_dir=..., hooks=[StopAtStepHook(last_step=LAST_STEP)]). Prints "READY" and the
variables on the ps (JSON) once its session is made (the chief initialized them, or
restored them from the latest checkpoint), waits for a line on stdin, trains until the hook stops it, then prints one JSON line: its steps, its first and
last loss, the global step it saw last, and the variables and global step on the ps after
its session closed (read with a plain Session)."""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))

import numpy as np  # noqa: E402

import tfc.compat.v1 as tf  # noqa: E402


def main():
    cluster = json.loads(sys.argv[1])
    index, checkpoint_dir, last_step = int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
    server = tf.train.Server(cluster, job_name="worker", task_index=index)
    rng = np.random.RandomState(index)
    xs = rng.rand(8, 3).astype(np.float32)
    ys = xs @ np.array([[1.0], [-2.0], [0.5]], np.float32) + 0.25
    with tf.device(tf.train.replica_device_setter(cluster=cluster, worker_device=f"/job:worker/task:{index}")):
        global_step = tf.train.get_or_create_global_step()
        w = tf.get_variable("w", [3, 1], initializer=tf.zeros_initializer())
        b = tf.get_variable("b", [1], initializer=tf.zeros_initializer())
        x = tf.placeholder(tf.float32, [None, 3], name="x")
        y = tf.placeholder(tf.float32, [None, 1], name="y")
        loss = tf.reduce_mean(tf.square(tf.matmul(x, w) + b - y), name="loss")
        train_op = tf.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=global_step)
    hooks = [tf.train.StopAtStepHook(last_step=last_step)]
    config = tf.ConfigProto(operation_timeout_in_ms=30000)
    losses, seen = [], 0
    with tf.train.MonitoredTrainingSession(master=server.target, is_chief=(index == 0),
                                           checkpoint_dir=checkpoint_dir, hooks=hooks, config=config,
                                           save_checkpoint_steps=10, save_summaries_steps=None,
                                           log_step_count_steps=0) as sess:
        with tf.Session(server.target, config=config) as plain:  # what the session starts from, on the ps
            start = plain.run({"w": w, "b": b, "global_step": global_step})
        print("READY", json.dumps({"w": start["w"].tolist(), "b": start["b"].tolist(),
                                   "global_step": int(start["global_step"])}), flush=True)
        sys.stdin.readline()
        while not sess.should_stop():
            _, value, seen = sess.run([train_op, loss, global_step], {x: xs, y: ys})
            losses.append(float(value))
    with tf.Session(server.target, config=config) as plain:  # the variables outlive the session on the ps
        values = plain.run({"w": w, "b": b, "global_step": global_step})
    print(json.dumps({"steps": len(losses), "first": losses[0] if losses else None,
                      "last": losses[-1] if losses else None, "seen": int(seen),
                      "w": values["w"].tolist(), "b": values["b"].tolist(),
                      "global_step": int(values["global_step"])}), flush=True)
    sys.stdin.read()  # serve (the other worker may still be using this task) until stdin closes
    server.stop()


if __name__ == "__main__":
    main()
