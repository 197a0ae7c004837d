"""GPU benchmarks: tfc's GPU programs vs JAX (GPU) and CuPy, same run, same card.

    python -m benchmarks.gpu [--reps 20] [--only elementwise,matmul] [--json out.json] [--profile 8]
                             [--variant row-loops ...]

Each workload is a TF1 graph compiled with ``tfc.compile(..., target="cuda")``; it is run
once (inputs uploaded; the result checked against the same graph compiled for the CPU and
against JAX's), then ``replay()`` re-runs its plan on the data already on the device, as
the peers run on device arrays (a training step's replay updates its variables in device
memory). Times are medians of ``--reps`` synchronised steps, in ms. A workload that fails
is reported in its row (``error``) and the others still run.
Elementwise and layernorm also print the fraction of the card's copy bandwidth
(a device-to-device copy measured in the same run) their bytes would take.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import sys
import time
import traceback

import numpy as np

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")  # leave memory to tfc and CuPy


def _median_ms(step, reps: int) -> float:
    for _ in range(3):
        step()
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def _rng():
    return np.random.default_rng(0)


# -- workloads: (inputs, TF1 graph builder, JAX function, CuPy function or None, bytes moved) --------------
def elementwise():
    x = _rng().standard_normal(64 * 1024 * 1024).astype(np.float32)

    def graph(tf):
        t = tf.placeholder(tf.float32, [x.size], name="x")
        return [t], tf.tanh(t * 1.5 + 0.5) * tf.sigmoid(t) + t * t

    def jax_fn(jnp, jax, x):
        return jnp.tanh(x * 1.5 + 0.5) * jax.nn.sigmoid(x) + x * x

    def cupy_fn(cp):
        kernel = cp.ElementwiseKernel("float32 x", "float32 y",
                                      "y = tanhf(x * 1.5f + 0.5f) / (1.0f + expf(-x)) + x * x", "tfc_bench_ew")
        return kernel

    return [x], graph, jax_fn, cupy_fn, 2 * x.nbytes


def layernorm():
    rng = _rng()
    x = rng.standard_normal((16384, 1024)).astype(np.float32)
    gamma = (1 + 0.1 * rng.standard_normal(1024)).astype(np.float32)
    beta = (0.1 * rng.standard_normal(1024)).astype(np.float32)

    def graph(tf):
        t = tf.placeholder(tf.float32, [None, 1024], name="x")
        mean, var = tf.nn.moments(t, axes=[1], keep_dims=True)
        return [t], (t - mean) * tf.rsqrt(var + 1e-5) * tf.constant(gamma) + tf.constant(beta)

    def jax_fn(jnp, jax, x):
        mean = x.mean(axis=1, keepdims=True)
        var = ((x - mean) ** 2).mean(axis=1, keepdims=True)
        return (x - mean) * jax.lax.rsqrt(var + 1e-5) * gamma + beta

    return [x], graph, jax_fn, None, 2 * x.nbytes


def mlp():
    rng = _rng()
    sizes = (784, 512, 512, 10)
    x = rng.standard_normal((4096, 784)).astype(np.float32)
    params = [((rng.standard_normal((a, b)) / np.sqrt(a)).astype(np.float32), np.zeros(b, np.float32))
              for a, b in zip(sizes, sizes[1:])]

    def graph(tf):
        t = tf.placeholder(tf.float32, [None, 784], name="x")
        h = t
        for i, (w, b) in enumerate(params):
            h = tf.matmul(h, tf.constant(w)) + tf.constant(b)
            h = tf.nn.relu(h) if i < len(params) - 1 else tf.nn.softmax(h)
        return [t], h

    def jax_fn(jnp, jax, x):
        h = x
        for i, (w, b) in enumerate(params):
            h = jnp.dot(h, w, precision="highest") + b
            h = jax.nn.relu(h) if i < len(params) - 1 else jax.nn.softmax(h)
        return h

    return [x], graph, jax_fn, None, 0


def matmul():
    rng = _rng()
    a = rng.standard_normal((4096, 4096)).astype(np.float32)
    b = rng.standard_normal((4096, 4096)).astype(np.float32)

    def graph(tf):
        ta = tf.placeholder(tf.float32, [4096, 4096], name="a")
        tb = tf.placeholder(tf.float32, [4096, 4096], name="b")
        return [ta, tb], tf.matmul(ta, tb)

    def jax_fn(jnp, jax, a, b):
        return jnp.dot(a, b, precision="highest")

    def cupy_fn(cp):
        return cp.matmul

    return [a, b], graph, jax_fn, cupy_fn, 0


def cnn():
    rng = _rng()
    x = rng.standard_normal((256, 28, 28, 1)).astype(np.float32)
    w1 = (rng.standard_normal((5, 5, 1, 32)) * 0.2).astype(np.float32)
    w2 = (rng.standard_normal((5, 5, 32, 64)) * 0.05).astype(np.float32)
    wd = (rng.standard_normal((7 * 7 * 64, 10)) * 0.01).astype(np.float32)

    def graph(tf):
        t = tf.placeholder(tf.float32, [None, 28, 28, 1], name="x")
        h = tf.nn.max_pool(tf.nn.relu(tf.nn.conv2d(t, tf.constant(w1), [1, 1, 1, 1], "SAME")), [1, 2, 2, 1],
                           [1, 2, 2, 1], "SAME")
        h = tf.nn.max_pool(tf.nn.relu(tf.nn.conv2d(h, tf.constant(w2), [1, 1, 1, 1], "SAME")), [1, 2, 2, 1],
                           [1, 2, 2, 1], "SAME")
        return [t], tf.nn.softmax(tf.matmul(tf.reshape(h, [-1, 7 * 7 * 64]), tf.constant(wd)))

    def jax_fn(jnp, jax, x):
        def conv(h, w):
            return jax.lax.conv_general_dilated(h, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"),
                                                precision="highest")

        def pool(h):
            return jax.lax.reduce_window(h, -jnp.inf, jax.lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "SAME")

        h = pool(jax.nn.relu(conv(x, w1)))
        h = pool(jax.nn.relu(conv(h, w2)))
        return jax.nn.softmax(jnp.dot(h.reshape(-1, 7 * 7 * 64), wd, precision="highest"))

    return [x], graph, jax_fn, None, 0


def _sgd_step(jax, jnp, loss_fn, initial):
    """(loss, parameters after one SGD step, lr 0.1) of ``loss_fn`` at ``initial``: the JAX peer
    of a training workload."""
    ws = [jnp.asarray(w) for w in initial]
    loss, grads = jax.value_and_grad(loss_fn)(ws)
    return loss, [w - 0.1 * g for w, g in zip(ws, grads)]


def mlp_train():
    rng = _rng()
    sizes = (784, 512, 512, 10)
    x = rng.standard_normal((4096, 784)).astype(np.float32)
    labels = np.eye(10, dtype=np.float32)[rng.integers(0, 10, 4096)]
    initial = [(rng.standard_normal((a, b)) / np.sqrt(a)).astype(np.float32) for a, b in zip(sizes, sizes[1:])]

    def graph(tf):
        t = tf.placeholder(tf.float32, [None, 784], name="x")
        y = tf.placeholder(tf.float32, [None, 10], name="y")
        h = t
        for i, w in enumerate(initial):
            h = tf.matmul(h, tf.Variable(w, name=f"w{i}"))
            h = tf.nn.relu(h) if i < len(initial) - 1 else h
        loss = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits_v2(labels=y, logits=h))
        train = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
        return [t, y], (loss, train)

    def jax_fn(jnp, jax, x, y):
        def loss_fn(ws):
            h = x
            for i, w in enumerate(ws):
                h = jnp.dot(h, w, precision="highest")
                h = jax.nn.relu(h) if i < len(ws) - 1 else h
            return jnp.mean(-jnp.sum(y * jax.nn.log_softmax(h), axis=1))

        return _sgd_step(jax, jnp, loss_fn, initial)

    return [x, labels], graph, jax_fn, None, 0


def cnn_train():
    """One SGD step of the CNN above (batch 256, softmax cross entropy): the conv and dense
    layers' weight gradients are the split contractions of gpu/gemm.py."""
    rng = _rng()
    x = rng.standard_normal((256, 28, 28, 1)).astype(np.float32)
    labels = np.eye(10, dtype=np.float32)[rng.integers(0, 10, 256)]
    initial = [(rng.standard_normal((5, 5, 1, 32)) * 0.2).astype(np.float32),
               (rng.standard_normal((5, 5, 32, 64)) * 0.05).astype(np.float32),
               (rng.standard_normal((7 * 7 * 64, 10)) * 0.01).astype(np.float32)]

    def graph(tf):
        t = tf.placeholder(tf.float32, [None, 28, 28, 1], name="x")
        y = tf.placeholder(tf.float32, [None, 10], name="y")
        w1, w2, wd = [tf.Variable(w, name=f"w{i}") for i, w in enumerate(initial)]
        h = t
        for w in (w1, w2):
            h = tf.nn.max_pool(tf.nn.relu(tf.nn.conv2d(h, w, [1, 1, 1, 1], "SAME")), [1, 2, 2, 1], [1, 2, 2, 1],
                               "SAME")
        logits = tf.matmul(tf.reshape(h, [-1, 7 * 7 * 64]), wd)
        loss = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits_v2(labels=y, logits=logits))
        train = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
        return [t, y], (loss, train)

    def jax_fn(jnp, jax, x, y):
        def loss_fn(ws):
            h = x
            for w in ws[:2]:
                h = jax.lax.conv_general_dilated(h, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"),
                                                 precision="highest")
                h = jax.lax.reduce_window(jax.nn.relu(h), -jnp.inf, jax.lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "SAME")
            logits = jnp.dot(h.reshape(-1, 7 * 7 * 64), ws[2], precision="highest")
            return jnp.mean(-jnp.sum(y * jax.nn.log_softmax(logits), axis=1))

        return _sgd_step(jax, jnp, loss_fn, initial)

    return [x, labels], graph, jax_fn, None, 0


WORKLOADS = {"elementwise": elementwise, "layernorm": layernorm, "mlp": mlp, "matmul": matmul, "cnn": cnn,
             "mlp_train": mlp_train, "cnn_train": cnn_train}


def _copy_bandwidth(driver) -> float:
    """Bytes/s of a 1 GiB device-to-device copy (read + write counted)."""
    n = 1 << 30
    a, b = driver.alloc(n), driver.alloc(n)
    try:
        driver.memcpy_dtod(b, a, n)
        driver.synchronize()
        start = time.perf_counter()
        for _ in range(5):
            driver.memcpy_dtod(b, a, n)
        driver.synchronize()
        return 2 * n * 5 / (time.perf_counter() - start)
    finally:
        driver.free(a)
        driver.free(b)


def _narrow_items(gemm, row) -> list:
    return [(gemm, "_pays", lambda sizes: gemm._wide(sizes[:2]))]  # the rule before narrow tiles


# Earlier versions of tfc's GPU kernels, to time against the current ones in the same run
# (``--variant NAME``): (what it stands for, a function of the gpu.gemm and gpu.row modules
# giving the (module, attribute, earlier value) triples that make it).
VARIANTS = {
    "row-loops": ("rows walked as loops (gpu/row.py before its written-out shares)",
                  lambda gemm, row: [(row, "UNROLLED_SHARE", 0)]),
    "narrow-items": ("narrow products on the thread-per-output kernel (gpu/gemm.py before narrow tiles)",
                     _narrow_items),
    "split-32": ("split contractions in at most 32 parts (gpu/gemm.py before 128)",
                 lambda gemm, row: [(gemm, "MAX_SPLIT", 32)]),
    "scalar-shared": ("tile values read from shared memory one at a time, threads interleaved "
                      "(gpu/gemm.py before vector reads)", lambda gemm, row: [(gemm, "SHARED_VECTOR_BYTES", 0)]),
    "small-tiles": ("64 x 64 tiles where 128 x 64 ones are now (gpu/gemm.py before MEDIUM)",
                    lambda gemm, row: [(gemm, "MEDIUM", gemm.SMALL)]),
}


@contextlib.contextmanager
def _variant(name: str):
    """Compile with ``VARIANTS[name]``'s settings in place."""
    from tfc.codegen.gpu import gemm, row

    changes = []
    for module, attribute, value in VARIANTS[name][1](gemm, row):
        changes.append((module, attribute, getattr(module, attribute)))
        setattr(module, attribute, value)
    try:
        yield
    finally:
        for module, attribute, value in reversed(changes):
            setattr(module, attribute, value)


def _measure_variant(name: str, variant: str, reps: int, tfc, tf) -> dict:
    """tfc's row for workload ``name`` compiled as ``variant``."""
    row = {"workload": name, "variant": variant}
    with _variant(variant):
        _measure_tfc(name, WORKLOADS[name](), row, reps, tfc, tf)
    return row


def run(names, reps: int, json_path=None, profile: int = 0, variants=()) -> list:
    import tfc
    import tfc.compat.v1 as tf
    from tfc.runtime.cuda import driver

    cuda = driver()
    bandwidth = _copy_bandwidth(cuda)
    print(f"device: {cuda.device_name()}, copy bandwidth {bandwidth / 1e12:.2f} TB/s")
    try:
        import jax
        import jax.numpy as jnp
    except ImportError:
        jax = jnp = None
    try:
        import cupy as cp
    except ImportError:
        cp = None
    rows = []
    for name in names:
        row = {"workload": name}
        try:
            _measure(name, row, reps, tfc, tf, jax, jnp, cp, bandwidth, profile)
        except Exception as exc:  # one workload's failure is reported in its row; the others still run
            traceback.print_exc()
            row["error"] = f"{type(exc).__name__}: {exc}"[:2000]
        rows.append(row)
        print(json.dumps(row), flush=True)
        for variant in variants:
            try:
                rows.append(_measure_variant(name, variant, reps, tfc, tf))
            except Exception as exc:  # noqa: BLE001 - reported in its row
                traceback.print_exc()
                rows.append({"workload": name, "variant": variant, "error": f"{type(exc).__name__}: {exc}"[:2000]})
            print(json.dumps(rows[-1]), flush=True)
        if json_path:
            with open(json_path, "w") as f:
                json.dump(rows, f, indent=1)
    return rows


def _compiled(tfc, tf, graph_fn, target: str):
    """(program, is_training, compile seconds) of a workload's graph for ``target``, in a new
    graph (and, for training steps, a new session with freshly initialised variables)."""
    graph = tf.Graph()
    with graph.as_default():
        feeds, fetch = graph_fn(tf)
        training = isinstance(fetch, tuple)
        started = time.perf_counter()
        if training:
            session = tf.Session()
            session.run(tf.global_variables_initializer())
            program = tfc.compile(list(fetch), feeds=feeds, target=target, session=session)
        else:
            program = tfc.compile(fetch, feeds=feeds, target=target)
        return program, training, time.perf_counter() - started


def _launch_profile(code, top: int) -> list:
    """The ``top`` slowest launches of one replay of ``code``'s plan, each timed alone
    (synchronised before and after, so launch latency is in every figure), with the total
    and the launch count first: where a workload's GPU time goes."""
    device = code.device
    launch = device.launch
    launches = []

    def timed(kernel, blocks, block, args, what=""):
        device.synchronize()
        start = time.perf_counter()
        launch(kernel, blocks, block, args, what)
        device.synchronize()
        launches.append((time.perf_counter() - start, kernel, blocks, block, what))

    device.launch = timed
    try:
        code.replay()
    finally:
        del device.launch
    launches.sort(key=lambda item: -item[0])
    total = sum(item[0] for item in launches)
    lines = [f"{len(launches)} launches, {total * 1e3:.3f} ms timed one by one"]
    for seconds, kernel, blocks, block, what in launches[:top]:
        lines.append(f"{seconds * 1e3:9.3f} ms  {kernel}  grid {blocks} x {block}  {what}")
    return lines


def _max_rel_err(ours, theirs) -> float:
    theirs = np.asarray(theirs, dtype=np.float64)
    scale = max(1e-30, float(np.abs(theirs).max()))
    return float(np.abs(np.asarray(ours, dtype=np.float64) - theirs).max() / scale)


def _measure_tfc(name, workload, row, reps, tfc, tf, profile=0):
    """Compile, run and time ``workload`` (``WORKLOADS[name]()``) on the GPU and check it
    against the CPU compile, into ``row``; returns the GPU result (a training step's loss)."""
    inputs, graph_fn = workload[:2]
    program, training, row["compile_s"] = _compiled(tfc, tf, graph_fn, "cuda")
    result = program(*inputs)
    ours = result[0] if training else result
    code = program.result.executable.code
    row["tfc_ms"] = _median_ms(code.replay, reps)
    if profile:
        print(f"{name}: " + "\n    ".join(_launch_profile(code, profile)), flush=True)
    cpu_result = _compiled(tfc, tf, graph_fn, "cpu")[0](*inputs)
    row["max_rel_err_vs_cpu"] = _max_rel_err(ours, cpu_result[0] if training else cpu_result)
    return ours, training


def _measure(name, row, reps, tfc, tf, jax, jnp, cp, bandwidth, profile=0) -> None:
    workload = WORKLOADS[name]()
    inputs, _, jax_fn, cupy_fn, moved = workload
    ours, training = _measure_tfc(name, workload, row, reps, tfc, tf, profile)
    if jax is not None:
        device_inputs = [jax.device_put(a) for a in inputs]
        jitted = jax.jit(lambda *a: jax_fn(jnp, jax, *a))
        reference = jitted(*device_inputs)
        row["jax_ms"] = _median_ms(lambda: jax.block_until_ready(jitted(*device_inputs)), reps)
        row["max_rel_err_vs_jax"] = _max_rel_err(ours, reference[0] if training else reference)
    if cp is not None and cupy_fn is not None:
        device_inputs = [cp.asarray(a) for a in inputs]
        fn = cupy_fn(cp)
        row["cupy_ms"] = _median_ms(lambda: (fn(*device_inputs), cp.cuda.Device().synchronize()), reps)
    if moved:
        row["bandwidth_limit_ms"] = moved / bandwidth * 1e3


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.gpu", description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--only", help="comma-separated workloads (default: all)")
    parser.add_argument("--json", help="write the rows to this file")
    parser.add_argument("--profile", type=int, default=0, metavar="N",
                        help="also print each workload's N slowest kernel launches")
    parser.add_argument("--variant", action="append", choices=sorted(VARIANTS),
                        help="also time tfc compiled as this earlier version (repeatable): "
                             + "; ".join(f"{k}: {v[0]}" for k, v in VARIANTS.items()))
    args = parser.parse_args(argv)
    names = args.only.split(",") if args.only else list(WORKLOADS)
    run(names, args.reps, args.json, args.profile, args.variant or ())
    return 0


if __name__ == "__main__":
    sys.exit(main())
