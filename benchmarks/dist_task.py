"""One task of the distributed benchmark (benchmarks/distributed.py), in its own process.

    python -m benchmarks.dist_task tfc|tf CLUSTER_JSON JOB INDEX SIZES BATCH

Runs under tfc's Python (``tfc``) or TensorFlow's (``tf``, with PYTHONPATH=this checkout; it
imports nothing of tfc). Serves task JOB:INDEX, prints ``READY``, then answers commands
read from stdin, one per line, each with one JSON line on stdout:

- ``reset`` / ``report`` (every task): zero / report the CPU time this process used (all
  threads, user + system) and the tensor bytes it decoded off the wire since the reset (tfc only: a counter around ``tfc.distributed.wire.to_ndarray``,
  split into ``task`` (RunGraph / RecvTensor between tasks; RecvTensor answers are counted around
  ``tensor_coding.parse_recv_tensor_response``) and ``client`` (RunStep
  feeds and fetches between a client and its master)); TF reports null.
- ``init`` (worker 0): builds nothing more, runs the variables' initializer.
- ``steps N``: N training steps, each timed (``sess.run([train_op, loss], feed_dict)``).

The model (workers): a between-graph MLP (SIZES, e.g. 784,512,512,10, relu, softmax cross
entropy, SGD lr 0.01) built under ``tf.train.replica_device_setter``: the variables on
/job:ps/task:0, the compute on this worker; a fixed random batch of BATCH per worker.
"""
from __future__ import annotations

import json
import os
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("GRPC_VERBOSITY", "ERROR")

COUNTS = {"task": 0, "client": 0}
CPU_AT_RESET = [0.0]


def cpu_seconds() -> float:
    """User + system CPU time of this process (all its threads) so far."""
    import resource

    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def import_framework(name: str):
    if name == "tfc":
        import tfc.compat.v1 as tf
        from tfc.distributed import tensor_coding, wire

        decode = wire.to_ndarray

        def counted(proto):
            array = decode(proto)
            caller = sys._getframe(1).f_code
            if caller.co_name != "run_stage":  # a stage's literal constants: not a transfer
                key = "client" if caller.co_filename.endswith(("client.py", "master.py")) else "task"
                COUNTS[key] += array.nbytes
            return array

        wire.to_ndarray = counted  # the modules call wire.to_ndarray(...) through the module
        parse = tensor_coding.parse_recv_tensor_response

        def counted_answer(data):
            answer = parse(data)
            COUNTS["task"] += answer.array.nbytes
            return answer

        tensor_coding.parse_recv_tensor_response = counted_answer
        return tf, True
    import tensorflow.compat.v1 as tf

    tf.disable_v2_behavior()
    return tf, False


def build(tf, cluster, index: int, sizes, batch: int):
    import numpy as np

    with tf.device(tf.train.replica_device_setter(cluster=cluster, worker_device=f"/job:worker/task:{index}")):
        x = tf.placeholder(tf.float32, [batch, sizes[0]], name="x")
        y = tf.placeholder(tf.float32, [batch, sizes[-1]], name="y")
        h = x
        for i, (m, n) in enumerate(zip(sizes[:-1], sizes[1:])):
            w = tf.get_variable(f"w{i}", [m, n], initializer=tf.random_uniform_initializer(-(6 / (m + n)) ** 0.5,
                                                                                          (6 / (m + n)) ** 0.5, seed=i))
            b = tf.get_variable(f"b{i}", [n], initializer=tf.zeros_initializer())
            h = tf.matmul(h, w) + b
            if i < len(sizes) - 2:
                h = tf.nn.relu(h)
        loss = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits_v2(labels=y, logits=h))
        train_op = tf.train.GradientDescentOptimizer(0.01).minimize(loss)
    rng = np.random.RandomState(index)
    xs = rng.rand(batch, sizes[0]).astype(np.float32)
    ys = np.eye(sizes[-1], dtype=np.float32)[rng.randint(0, sizes[-1], batch)]
    return {x: xs, y: ys}, train_op, loss


def main(argv) -> int:
    framework, cluster, job, index = argv[0], json.loads(argv[1]), argv[2], int(argv[3])
    sizes, batch = [int(s) for s in argv[4].split(",")], int(argv[5])
    tf, counting = import_framework(framework)
    server = tf.train.Server(cluster, job_name=job, task_index=index)
    sess = feed = train_op = loss = None
    if job == "worker":
        feed, train_op, loss = build(tf, cluster, index, sizes, batch)
        init = tf.global_variables_initializer()
        sess = tf.Session(server.target, config=tf.ConfigProto(operation_timeout_in_ms=120000))
    print("READY", flush=True)
    for line in sys.stdin:
        command = line.split()
        if not command:
            continue
        if command[0] == "reset":
            COUNTS.update(task=0, client=0)
            CPU_AT_RESET[0] = cpu_seconds()
            reply = {"ok": True}
        elif command[0] == "report":
            reply = dict(COUNTS) if counting else {"task": None, "client": None}
            reply["cpu_s"] = cpu_seconds() - CPU_AT_RESET[0]
        elif command[0] == "init":
            sess.run(init)
            reply = {"ok": True}
        elif command[0] == "steps":
            times, losses = [], []
            for _ in range(int(command[1])):
                start = time.perf_counter()
                _, value = sess.run([train_op, loss], feed)
                times.append(time.perf_counter() - start)
                losses.append(float(value))
            reply = {"times": times, "losses": losses}
        elif command[0] == "quit":
            break
        else:
            reply = {"error": f"unknown command {command[0]!r}"}
        print(json.dumps(reply), flush=True)
    if sess is not None:
        sess.close()
    if hasattr(server, "stop"):
        server.stop()  # tfc's own; TF's server ends with the process
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
