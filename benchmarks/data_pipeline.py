"""A training step fed by tf.data against the same step fed by feed_dict.

    python -m benchmarks.data_pipeline
    python -m benchmarks.data_pipeline --peer-python /tmp/tfvenv/bin/python   # TensorFlow graph mode too
    python -m benchmarks.data_pipeline --json data.json

The step: one SGD step (lr 0.1) of the MLP 784-512-512-10 (relu, softmax cross entropy)
on batches of 256 from in-memory arrays (``--examples`` rows of random data). Rows, for
tfc and, where TensorFlow is importable here or in ``--peer-python``, TF graph mode
(``tf.compat.v1``, the same code):

- ``feed_dict``: ``sess.run(train, {x: batch, y: labels})`` over batches made beforehand
  (the step alone);
- ``tf.data``: ``sess.run(train)`` with x, y from
  ``from_tensor_slices((X, Y)).shuffle(10000).batch(256).repeat().prefetch(2)`` (a one-shot
  iterator), the pipeline running on its prefetch thread during the step;
- ``get_next alone``: ``sess.run(next_element)`` of that pipeline (its throughput);
- ``map sequential`` / ``map num_parallel_calls=N``: ``sess.run`` of a batch (32) of a
  pipeline whose ``map`` does real work per element (six 96x96 matmul + tanh layers, not
  vectorisable, so one compiled call per element), without and with
  ``num_parallel_calls`` (``--map-threads``, default: the CPU count); "map speedup" is
  their ratio (the compiled calls release the GIL, so the pool runs them on several
  cores at once; expect about min(N, free cores)).

Each time is the median over ``--rounds`` of the mean over ``--steps`` steps; "pipeline
share" is (tf.data - feed_dict) / tf.data: the part of a step the input pipeline adds.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

SIZES = (784, 512, 512, 10)
BATCH = 256


def _time(fn, steps: int, rounds: int) -> float:
    for _ in range(max(3, steps // 5)):
        fn()
    samples = []
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(steps):
            fn()
        samples.append((time.perf_counter() - start) / steps)
    return statistics.median(samples)


def _data(examples: int):
    import numpy as np

    rng = np.random.RandomState(0)
    features = rng.rand(examples, SIZES[0]).astype(np.float32)
    labels = rng.randint(0, SIZES[-1], examples).astype(np.int64)
    weights = []
    for fan_in, fan_out in zip(SIZES[:-1], SIZES[1:]):
        weights.append((rng.uniform(-1, 1, (fan_in, fan_out)) * np.sqrt(6 / (fan_in + fan_out))).astype(np.float32))
        weights.append(np.zeros(fan_out, np.float32))
    return features, labels, weights


def _train_op(tf, weights, x, y):
    params = [tf.Variable(w) for w in weights]
    h = x
    for i in range(0, len(params), 2):
        h = tf.matmul(h, params[i]) + params[i + 1]
        if i + 2 < len(params):
            h = tf.nn.relu(h)
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=h))
    return tf.train.GradientDescentOptimizer(0.1).minimize(loss)


def measure(tf, label: str, examples: int, steps: int, rounds: int, config=None) -> dict:
    """The three rows for one framework (``tf``: its TF1 API)."""
    import numpy as np

    features, labels, weights = _data(examples)
    out = {}
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, SIZES[0]])
        y = tf.placeholder(tf.int64, [None])
        train = _train_op(tf, weights, x, y)
        order = np.random.RandomState(1).permutation(examples)
        batches = [(features[order[i:i + BATCH]], labels[order[i:i + BATCH]])
                   for i in range(0, examples - BATCH + 1, BATCH)][:64]
        position = [0]

        def fed_step():
            bx, by = batches[position[0] % len(batches)]
            position[0] += 1
            sess.run(train, {x: bx, y: by})

        with tf.Session(config=config) as sess:
            sess.run(tf.global_variables_initializer())
            out[f"{label} feed_dict step"] = _time(fed_step, steps, rounds)
    with tf.Graph().as_default():
        dataset = tf.data.Dataset.from_tensor_slices((features, labels)).shuffle(10000, seed=1).batch(BATCH) \
            .repeat().prefetch(2)
        x, y = tf.data.make_one_shot_iterator(dataset).get_next()
        train = _train_op(tf, weights, x, y)
        with tf.Session(config=config) as sess:
            sess.run(tf.global_variables_initializer())
            out[f"{label} tf.data step"] = _time(lambda: sess.run(train), steps, rounds)
            out[f"{label} get_next alone"] = _time(lambda: sess.run((x, y)), steps, rounds)
    return out


MAP_SIZE = 96
MAP_LAYERS = 6
MAP_BATCH = 32


def measure_map(tf, label: str, steps: int, rounds: int, threads: int, config=None) -> dict:
    """A batch of a pipeline whose map does per-element work, sequential and parallel."""
    import numpy as np

    rng = np.random.RandomState(2)
    w = ((rng.rand(MAP_SIZE, MAP_SIZE) - 0.5) / 10).astype(np.float32)
    images = rng.rand(256, MAP_SIZE, MAP_SIZE).astype(np.float32)

    def work(x):
        for _ in range(MAP_LAYERS):
            x = tf.tanh(tf.matmul(x, w))
        return tf.reduce_sum(x, axis=1)

    out = {}
    for calls, name in ((None, "map sequential"), (threads, f"map num_parallel_calls={threads}")):
        with tf.Graph().as_default():
            dataset = tf.data.Dataset.from_tensor_slices(images).map(work, num_parallel_calls=calls) \
                .batch(MAP_BATCH).repeat()
            batch = tf.data.make_one_shot_iterator(dataset).get_next()
            with tf.Session(config=config) as sess:
                out[f"{label} {name}"] = _time(lambda: sess.run(batch), steps, rounds)
    return out


def tfc_results(examples: int, steps: int, rounds: int, threads: int = 0) -> dict:
    import tfc.compat.v1 as tf

    out = measure(tf, "tfc", examples, steps, rounds)
    out.update(measure_map(tf, "tfc", steps, rounds, threads or os.cpu_count() or 1))
    return out


def tf_results(examples: int, steps: int, rounds: int) -> dict:
    from benchmarks import peers

    tf2 = peers.import_tensorflow()
    tf = tf2.compat.v1
    tf.disable_eager_execution()
    config = peers.tf_session_config(tf)
    out = measure(tf, "TF graph", examples, steps, rounds, config)
    out.update(measure_map(tf, "TF graph", steps, rounds, os.cpu_count() or 1, config))
    return out


def _peer(python: str, args) -> dict:
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    command = [python, "-m", "benchmarks.data_pipeline", "--child", "--examples", str(args.examples),
               "--steps", str(args.steps), "--rounds", str(args.rounds)]
    proc = subprocess.run(command, capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=root), cwd=root)
    if proc.returncode == 0 and proc.stdout.strip():
        return json.loads(proc.stdout.strip().splitlines()[-1])
    print(f"({python}: no TensorFlow results: {proc.stderr.strip().splitlines()[-1:]})", file=sys.stderr)
    return {}


def summary(results: dict) -> dict:
    """Steps per second and the pipeline's share of a step, per framework."""
    out = {}
    for label in ("tfc", "TF graph"):
        fed, piped = results.get(f"{label} feed_dict step"), results.get(f"{label} tf.data step")
        if fed and piped:
            out[label] = {"feed_dict steps/s": 1 / fed, "tf.data steps/s": 1 / piped,
                          "pipeline share": max(0.0, (piped - fed) / piped),
                          "get_next alone steps/s": 1 / results[f"{label} get_next alone"]}
        sequential = results.get(f"{label} map sequential")
        parallel = [v for k, v in results.items() if k.startswith(f"{label} map num_parallel_calls=")]
        if sequential and parallel:
            out.setdefault(label, {})["map speedup"] = sequential / parallel[0]
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.data_pipeline", description=__doc__.split("\n\n")[0])
    parser.add_argument("--examples", type=int, default=20000, help="rows of the in-memory data set")
    parser.add_argument("--steps", type=int, default=50, help="steps per round")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--map-threads", type=int, default=0, help="num_parallel_calls of the map rows (0: CPUs)")
    parser.add_argument("--peer-python", default="", help="comma-separated Pythons with TensorFlow")
    parser.add_argument("--json", default=None, help="write the results here")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(tf_results(args.examples, args.steps, args.rounds)))
        return 0
    from benchmarks import peers

    results = tfc_results(args.examples, args.steps, args.rounds, args.map_threads)
    if peers.is_installed("tf_graph"):
        results.update(tf_results(args.examples, args.steps, args.rounds))
    for python in filter(None, args.peer_python.split(",")):
        results.update(_peer(python, args))
    width = max(len(name) for name in results)
    for name, seconds in results.items():
        print(f"{name.ljust(width)}  {seconds * 1e3:8.3f} ms  {1 / seconds:8.1f} steps/s")
    shares = summary(results)
    for label, row in shares.items():
        if "pipeline share" in row:
            print(f"{label}: pipeline share of a step {row['pipeline share']:.1%} (feed_dict "
                  f"{row['feed_dict steps/s']:.1f} steps/s, tf.data {row['tf.data steps/s']:.1f} steps/s)")
        if "map speedup" in row:
            print(f"{label}: parallel map speedup {row['map speedup']:.2f}x ({os.cpu_count()} CPUs)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"seconds": results, "summary": shares}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
