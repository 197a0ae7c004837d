"""Eager-mode overhead: the cost of one small op run eagerly, and of a training step run
op by op, as a defun (one compiled program) and as a graph-mode session step.

    python -m benchmarks.eager_overhead
    python -m benchmarks.eager_overhead --peer-python /tmp/tfvenv/bin/python,/tmp/jaxvenv/bin/python
    python -m benchmarks.eager_overhead --json eager.json

Per-op rows: ``x + y`` on two 4-element float32 tensors (tfc's eager operator, ``tf.add``
through the TF1 wrapper, and numpy's ``+`` on arrays), then the peers measured in their
own Python (``--peer-python``: TensorFlow 2.x eager ``x + y``; JAX ``x + y`` on device
arrays, op by op, each result waited for). Each number is the median over ``--rounds``
rounds of the mean over ``--calls`` calls.

Training rows: one Adam step of an MLP (64-128-128-10, relu, softmax cross entropy, batch
32): tfc eager op by op (GradientTape + apply_gradients), tfc ``tfe.defun`` of that step
(traced once, one program), tfc graph mode (``sess.run(train_op, feed_dict)``), and, with
TensorFlow as a peer, TF eager and ``tf.function``. Nothing here runs on a GPU.

Input-pipeline rows: the same step with its batches from ``tf.data``
(``from_tensor_slices((X, Y)).batch(32).repeat()`` over 64 batches): eager, the defun step
called on ``next(iterator)`` of ``for x, y in dataset`` (EagerTensors); graph mode,
``sess.run(train_op)`` with x, y from a one-shot iterator's ``get_next()`` (TF:
``tf.function`` on ``next(iter(dataset))``).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

from .timing import per_call_median

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

SIZES = (64, 128, 128, 10)
BATCH = 32


def _time(fn, calls: int, rounds: int) -> float:
    """Median over rounds of the mean seconds per call."""
    return per_call_median(fn, calls, rounds, warmup=min(calls, 200))


def _data():
    import numpy as np

    rng = np.random.RandomState(0)
    x = rng.randn(BATCH, SIZES[0]).astype(np.float32)
    labels = np.eye(SIZES[-1], dtype=np.float32)[rng.randint(0, SIZES[-1], BATCH)]
    weights = []
    for fan_in, fan_out in zip(SIZES[:-1], SIZES[1:]):
        weights.append((rng.uniform(-1, 1, (fan_in, fan_out)) * np.sqrt(6 / (fan_in + fan_out))).astype(np.float32))
        weights.append(np.zeros(fan_out, np.float32))
    return x, labels, weights


def _mlp_loss(tf, params, x, labels):
    h = x
    for i in range(0, len(params), 2):
        h = tf.matmul(h, params[i]) + params[i + 1]
        if i + 2 < len(params):
            h = tf.nn.relu(h)
    return tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits_v2(labels=labels, logits=h))


# -- tfc ---------------------------------------------------------------------------------------
def tfc_results(calls: int, rounds: int, steps: int) -> dict:
    import numpy as np

    import tfc.compat.v1 as tf
    import tfc.contrib.eager as tfe
    from tfc.frontend.eager import context

    out = {}
    with context.eager_mode():
        x = tf.constant([1., 2., 3., 4.])
        y = tf.constant([5., 6., 7., 8.])
        out["tfc eager x + y"] = _time(lambda: x + y, calls, rounds)
        out["tfc eager tf.add(x, y)"] = _time(lambda: tf.add(x, y), calls, rounds)
        out["tfc eager tf.tanh(x)"] = _time(lambda: tf.tanh(x), calls, rounds)
        xn, yn = x.numpy(), y.numpy()
        out["numpy x + y"] = _time(lambda: xn + yn, calls, rounds)
        data, labels, weights = _data()
        xs, ls = tf.constant(data), tf.constant(labels)
        for mode in ("eager", "defun"):
            params = [tf.Variable(w) for w in weights]
            opt = tf.train.AdamOptimizer(1e-3)

            def step():
                with tf.GradientTape() as tape:
                    loss = _mlp_loss(tf, params, xs, ls)
                grads = tape.gradient(loss, params)
                opt.apply_gradients(zip(grads, params))
                return loss

            run = tfe.defun(step) if mode == "defun" else step
            out[f"tfc {mode} Adam step (MLP {'-'.join(map(str, SIZES))}, batch {BATCH})"] = \
                _time(run, steps, rounds)
        params = [tf.Variable(w) for w in weights]
        opt = tf.train.AdamOptimizer(1e-3)

        @tfe.defun
        def data_step(x, y):
            with tf.GradientTape() as tape:
                loss = _mlp_loss(tf, params, x, y)
            grads = tape.gradient(loss, params)
            opt.apply_gradients(zip(grads, params))
            return loss

        batches = iter(_dataset(tf))
        out["tfc defun Adam step, batches from tf.data (for x, y in dataset)"] = \
            _time(lambda: data_step(*next(batches)), steps, rounds)
    with tf.Graph().as_default():
        params = [tf.Variable(w) for w in weights]
        xp = tf.placeholder(tf.float32, [None, SIZES[0]])
        lp = tf.placeholder(tf.float32, [None, SIZES[-1]])
        train = tf.train.AdamOptimizer(1e-3).minimize(_mlp_loss(tf, params, xp, lp))
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            feed = {xp: data, lp: labels}
            out[f"tfc graph Adam step (MLP {'-'.join(map(str, SIZES))}, batch {BATCH})"] = \
                _time(lambda: sess.run(train, feed), steps, rounds)
    with tf.Graph().as_default():
        params = [tf.Variable(w) for w in weights]
        xs, ls = tf.data.make_one_shot_iterator(_dataset(tf)).get_next()
        train = tf.train.AdamOptimizer(1e-3).minimize(_mlp_loss(tf, params, xs, ls))
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            out["tfc graph Adam step, batches from tf.data (one-shot iterator)"] = \
                _time(lambda: sess.run(train), steps, rounds)
    del np
    return out


def _dataset(tf, batches: int = 64):
    """64 batches of the step's data (each a shifted copy), batched and repeated."""
    import numpy as np

    data, labels, _ = _data()
    x = np.concatenate([np.roll(data, i, axis=0) for i in range(batches)])
    y = np.concatenate([np.roll(labels, i, axis=0) for i in range(batches)])
    return tf.data.Dataset.from_tensor_slices((x, y)).batch(BATCH).repeat()


# -- peers (each in its own Python) ------------------------------------------------------------
def tf_results(calls: int, rounds: int, steps: int) -> dict:
    import tensorflow as tf2

    tf = tf2.compat.v1
    out = {}
    x = tf.constant([1., 2., 3., 4.])
    y = tf.constant([5., 6., 7., 8.])
    out["TF eager x + y"] = _time(lambda: x + y, calls, rounds)
    out["TF eager tf.add(x, y)"] = _time(lambda: tf.add(x, y), calls, rounds)
    out["TF eager tf.tanh(x)"] = _time(lambda: tf.tanh(x), calls, rounds)
    data, labels, weights = _data()
    xs, ls = tf.constant(data), tf.constant(labels)
    for mode in ("eager", "tf.function"):
        params = [tf2.Variable(w) for w in weights]
        opt = tf.train.AdamOptimizer(1e-3)

        def step():
            with tf.GradientTape() as tape:
                loss = _mlp_loss(tf, params, xs, ls)
            grads = tape.gradient(loss, params)
            opt.apply_gradients(zip(grads, params))
            return loss

        run = tf2.function(step) if mode == "tf.function" else step
        out[f"TF {mode} Adam step (MLP {'-'.join(map(str, SIZES))}, batch {BATCH})"] = _time(run, steps, rounds)
    params = [tf2.Variable(w) for w in weights]
    opt = tf.train.AdamOptimizer(1e-3)

    @tf2.function
    def data_step(x, y):
        with tf.GradientTape() as tape:
            loss = _mlp_loss(tf, params, x, y)
        grads = tape.gradient(loss, params)
        opt.apply_gradients(zip(grads, params))
        return loss

    batches = iter(_dataset(tf))
    out["TF tf.function Adam step, batches from tf.data (for x, y in dataset)"] = \
        _time(lambda: data_step(*next(batches)), steps, rounds)
    return out


def jax_results(calls: int, rounds: int, steps: int) -> dict:
    import jax.numpy as jnp

    x = jnp.array([1., 2., 3., 4.], dtype=jnp.float32)
    y = jnp.array([5., 6., 7., 8.], dtype=jnp.float32)
    return {"JAX op-by-op x + y": _time(lambda: (x + y).block_until_ready(), calls, rounds),
            "JAX op-by-op jnp.tanh(x)": _time(lambda: jnp.tanh(x).block_until_ready(), calls, rounds)}


def _peer(python: str, args) -> dict:
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    results = {}
    for child in ("tf", "jax"):
        env = dict(os.environ, PYTHONPATH=root)
        command = [python, "-m", "benchmarks.eager_overhead", "--child", child, "--calls", str(args.calls),
                   "--rounds", str(args.rounds), "--steps", str(args.steps)]
        proc = subprocess.run(command, capture_output=True, text=True, env=env, cwd=root)
        if proc.returncode == 0 and proc.stdout.strip():
            results.update(json.loads(proc.stdout.strip().splitlines()[-1]))
    return results


def _format(seconds: float) -> str:
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds * 1e6:.2f} us"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.eager_overhead", description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=20000, help="calls per round (per-op rows)")
    parser.add_argument("--steps", type=int, default=50, help="calls per round (training rows)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--peer-python", default="", help="comma-separated Pythons with TensorFlow / JAX")
    parser.add_argument("--json", default=None, help="write the results here")
    parser.add_argument("--child", choices=("tf", "jax"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        try:
            results = (tf_results if args.child == "tf" else jax_results)(args.calls, args.rounds, args.steps)
        except ImportError:
            results = {}
        print(json.dumps(results))
        return 0
    results = tfc_results(args.calls, args.rounds, args.steps)
    for python in filter(None, args.peer_python.split(",")):
        results.update(_peer(python, args))
    width = max(len(name) for name in results)
    for name, seconds in results.items():
        print(f"{name.ljust(width)}  {_format(seconds):>10}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
