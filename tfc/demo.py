"""``tfc demo``: build a small TF1 model, show what the compiler does, run it natively,
check it against numpy and time both."""
from __future__ import annotations

import contextlib
import statistics
import time

import numpy as np


def _interleaved_medians(fns: list, repeat: int = 30) -> list:
    """Median seconds of each function, timed in turns (one run of each per round), so a
    change of load on a busy machine touches them alike."""
    for fn in fns:
        fn()
    times = [[] for _ in fns]
    for _ in range(repeat):
        for fn, samples in zip(fns, times):
            start = time.perf_counter()
            fn()
            samples.append(time.perf_counter() - start)
    return [statistics.median(samples) for samples in times]


_OPENBLAS_SETTERS = ("scipy_openblas_set_num_threads64_", "scipy_openblas_set_num_threads",
                     "openblas_set_num_threads64_", "openblas_set_num_threads")
_OPENBLAS_GETTERS = ("scipy_openblas_get_num_threads64_", "scipy_openblas_get_num_threads",
                     "openblas_get_num_threads64_", "openblas_get_num_threads")


def _numpy_openblas():
    """(set_num_threads, get_num_threads) of the OpenBLAS numpy loaded, or None (another
    BLAS, or a platform without /proc/self/maps)."""
    import ctypes

    try:
        with open("/proc/self/maps") as maps:
            paths = {line.split()[-1] for line in maps if "openblas" in line.lower() and "/" in line}
    except OSError:
        return None
    for path in sorted(paths):
        try:
            library = ctypes.CDLL(path)
        except OSError:
            continue
        setter = next((getattr(library, n) for n in _OPENBLAS_SETTERS if hasattr(library, n)), None)
        getter = next((getattr(library, n) for n in _OPENBLAS_GETTERS if hasattr(library, n)), None)
        if setter is not None and getter is not None:
            setter.argtypes, setter.restype = [ctypes.c_int], None
            getter.argtypes, getter.restype = [], ctypes.c_int
            return setter, getter
    return None


@contextlib.contextmanager
def numpy_blas_threads(count: int):
    """numpy's OpenBLAS limited to ``count`` threads inside the block (yields the count in
    force, or None where numpy's BLAS cannot be told)."""
    blas = _numpy_openblas()
    if blas is None:
        yield None
        return
    setter, getter = blas
    before = getter()
    setter(count)
    try:
        yield getter()
    finally:
        setter(before)


def _numpy_mlp(x, w1, b1, w2, b2):
    h = np.maximum(x @ w1 + b1, 0)
    logits = h @ w2 + b2
    e = np.exp(logits - logits.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def run_demo() -> int:
    import tfc
    import tfc.compat.v1 as tf
    from tfc.codegen.parallel import default_pool_size

    rng = np.random.default_rng(0)
    weights = {
        "w1": rng.standard_normal((784, 256)).astype(np.float32) * 0.05,
        "b1": rng.standard_normal(256).astype(np.float32) * 0.1,
        "w2": rng.standard_normal((256, 10)).astype(np.float32) * 0.05,
        "b2": rng.standard_normal(10).astype(np.float32) * 0.1,
    }
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float32, [None, 784], name="x")
        with tf.variable_scope("mlp"):
            w1 = tf.Variable(weights["w1"], name="w1")
            b1 = tf.Variable(weights["b1"], name="b1")
            w2 = tf.Variable(weights["w2"], name="w2")
            b2 = tf.Variable(weights["b2"], name="b2")
            hidden = tf.nn.relu(tf.matmul(x, w1) + b1)
            probabilities = tf.nn.softmax(tf.matmul(hidden, w2) + b2, name="probabilities")
        init = tf.global_variables_initializer()

    print("tfc demo: a 784-256-10 MLP (relu, softmax) built with the TF1 API")
    print(f"  graph: {len(graph.get_operations())} TF ops\n")

    with tf.Session(graph=graph) as sess:
        sess.run(init)
        compiled = tfc.compile(probabilities, feeds=[x], session=sess)
        print("pass pipeline (ops before -> after each pass):")
        print("  " + compiled.report.table().replace("\n", "\n  "))
        print("\nfusions:")
        print("  " + compiled.fusion_report().replace("\n", "\n  "))
        print("\nthe optimised program:")
        print("  " + compiled.ir("final").replace("\n", "\n  "))

        batch = rng.standard_normal((256, 784)).astype(np.float32)
        start = time.perf_counter()
        result = sess.run(probabilities, {x: batch})
        first_run = time.perf_counter() - start
        expected = _numpy_mlp(batch, *(weights[k] for k in ("w1", "b1", "w2", "b2")))
        error = float(np.abs(result - expected).max())
        ok = np.allclose(result, expected, rtol=1e-4, atol=1e-6)
        print(f"\nnative result vs numpy: max abs difference {error:.2e} -> {'OK' if ok else 'MISMATCH'}")
        print(f"first session.run (compile + run): {first_run * 1e3:.1f} ms")

        threads = default_pool_size()
        with numpy_blas_threads(threads) as blas_threads:
            tfc_time, numpy_time = _interleaved_medians([
                lambda: sess.run(probabilities, {x: batch}),
                lambda: _numpy_mlp(batch, *(weights[k] for k in ("w1", "b1", "w2", "b2")))])
        blas = f"{blas_threads} BLAS threads" if blas_threads is not None else "its BLAS's own threads"
        print(f"\nbatch 256, median of 30 runs, in turns (tfc: {threads} threads; numpy: {blas}):")
        print(f"  tfc session.run   {tfc_time * 1e3:8.3f} ms")
        print(f"  numpy             {numpy_time * 1e3:8.3f} ms")
        print(f"  ratio (numpy/tfc) {numpy_time / tfc_time:8.2f}x")
        stats = sess.cache_stats()
        print(f"\nsession: {stats['runs']} runs, {stats['compiles']} compilations")
    return 0 if ok else 1
