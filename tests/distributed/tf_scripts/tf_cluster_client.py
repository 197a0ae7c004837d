"""TensorFlow's client running a graph that spans tasks (run with TensorFlow's python).

Usage: tf_cluster_client.py TARGET [TARGET...]; prints one JSON line.

The graph: in-graph replication of a small linear model, its variables on /job:ps/task:0,
one tower on each of /job:worker/task:0 and /job:worker/task:1 (each computes its loss and
gradients on its half of the batch), the gradients averaged and applied on the ps. For each
TARGET ("" is TensorFlow's own in-process runtime), a session initializes the variables,
runs 4 training steps and reads the variables back; a second session on a server reads
them again (they live on the ps); a feed consumed on both workers and a string
tensor from the ps cross tasks too.
"""
import json
import sys

import numpy as np
import tensorflow as tf

tf.compat.v1.disable_v2_behavior()
v1 = tf.compat.v1


def build(placed: bool):
    ps = "/job:ps/task:0" if placed else None
    workers = ["/job:worker/task:0", "/job:worker/task:1"] if placed else [None, None]
    xs = np.arange(12, dtype=np.float32).reshape(4, 3) / 10.0
    ys = np.array([[1.0], [0.5], [-0.5], [2.0]], np.float32)
    with v1.device(ps):
        w = v1.Variable([[0.1], [-0.2], [0.3]], name="w")
        b = v1.Variable([0.05], name="b")
        label = tf.constant(["on", "ps"], name="label")
    scale = v1.placeholder(tf.float32, [], name="scale")
    opt = v1.train.GradientDescentOptimizer(0.2)
    tower_grads, losses = [], []
    for i, device in enumerate(workers):
        with v1.device(device), v1.name_scope(f"tower_{i}"):
            x = tf.constant(xs[2 * i:2 * i + 2])
            y = tf.constant(ys[2 * i:2 * i + 2])
            loss = tf.reduce_mean(tf.square(tf.matmul(x, w) + b - y)) * scale
            losses.append(loss)
            tower_grads.append(opt.compute_gradients(loss, [w, b]))
    with v1.device(ps):
        averaged = [(tf.add_n([g0, g1]) / 2.0, v) for (g0, v), (g1, _) in zip(*tower_grads)]
        train = opt.apply_gradients(averaged)
        total = tf.add_n(losses) / 2.0
    return w, b, label, scale, train, total


def run(target: str) -> dict:
    g = tf.Graph()
    with g.as_default():
        w, b, label, scale, train, total = build(placed=bool(target))
        init = v1.global_variables_initializer()
    config = v1.ConfigProto(operation_timeout_in_ms=30000)
    out = {}
    with v1.Session(target, graph=g, config=config) as sess:
        sess.run(init)
        out["losses"] = [float(sess.run([train, total], {scale: 1.0})[1]) for _ in range(4)]
        out["w"], out["b"] = [v.tolist() for v in sess.run([w, b])]
        out["label"] = [s.decode() for s in sess.run(label)]
    if target:  # a server's variables outlive the session (an in-process session's do not)
        with v1.Session(target, graph=g, config=config) as sess:
            out["persisted_w"] = sess.run(w).tolist()
    return out


def main():
    results = {target or "tf": run(target) for target in sys.argv[1:]}
    print(json.dumps(results), flush=True)


if __name__ == "__main__":
    main()
