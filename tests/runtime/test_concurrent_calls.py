"""Compiled programs called from several threads at once: every output right, no crash.

Each call has its own slots, dims, arena and error record (tfc/runtime/executable.py,
tfc/aot_runtime.py). Threads feed different values and batch sizes (so the arena each
call needs differs) and compare every output with numpy; some calls index out of range
and must get their own error message. The same for a `tfc.compile` result, the artifact
`tfc.load` reads and a Session; and a program with RNG state draws, over threads, what
sequential calls draw. Each body runs in a child process under a deadline: a shared arena
showed up as wrong values, `malloc(): invalid size`, `double free` and segfaults.
"""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

CHILD = r'''
import sys, tempfile, threading
import numpy as np
import tfc
import tfc.compat.v1 as tf

THREADS, CALLS = 4, 60
W = np.random.RandomState(0).randn(24, 40).astype(np.float32) * 0.3
P = np.arange(8 * 3, dtype=np.float32).reshape(8, 3)

graph = tf.Graph()
with graph.as_default():
    x = tf.placeholder(tf.float32, [None, 24], name="x")
    i = tf.placeholder(tf.int32, [None], name="i")
    h = tf.tanh(tf.matmul(x, tf.constant(W))) * 2.0 + 1.0
    y = tf.nn.softmax(h)
    s = tf.reduce_sum(y * x[:, :1], axis=1)
    g = tf.gather(tf.constant(P), i) * 2.0
    compiled = tfc.compile([y, s, g], feeds=[x, i])
if sys.argv[1] == "aot":
    directory = tempfile.mkdtemp()
    compiled.save(directory)
    model = tfc.load(directory)
elif sys.argv[1] == "session":
    session = tf.Session(graph=graph)

    def model(xv, iv):
        return session.run([y, s, g], {x: xv, i: iv})
else:
    model = compiled


def reference(xv, iv):
    hv = np.tanh(xv.astype(np.float64) @ W) * 2.0 + 1.0
    e = np.exp(hv - hv.max(1, keepdims=True))
    p = e / e.sum(1, keepdims=True)
    return p, (p * xv[:, :1]).sum(1), P[iv] * 2.0


problems = []


def worker(t):
    rng = np.random.RandomState(100 + t)
    for c in range(CALLS):
        n = 1 + (t * 37 + c * 11) % 97  # batch size: 1..97, a different sequence per thread
        m = 1 + (t + c) % 9
        xv = rng.randn(n, 24).astype(np.float32)
        iv = rng.randint(0, 8, size=m).astype(np.int32)
        if c % 5 == t % 5:  # a bad index at a position and value only this call uses
            iv = np.zeros(t + 1, np.int32)
            iv[t] = 1000 * (t + 1) + c
            try:
                model(xv, iv)
                problems.append(f"thread {t} call {c}: no error")
            except Exception as e:
                expected = f"indices[{t}] = {1000 * (t + 1) + c} is not in [0, 8)"
                if expected not in str(e):
                    problems.append(f"thread {t} call {c}: {e} (expected {expected})")
            continue
        got = model(xv, iv)
        for k, (a, b) in enumerate(zip(got, reference(xv, iv))):
            if a.shape != b.shape or not np.allclose(a, b, rtol=1e-4, atol=1e-5):
                problems.append(f"thread {t} call {c} (batch {n}): output {k} is wrong")


threads = [threading.Thread(target=worker, args=(t,)) for t in range(THREADS)]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
runs = {"aot": lambda: model.runs, "session": lambda: session.stats["runs"],
        "jit": lambda: compiled.result.executable.runs}[sys.argv[1]]()
print("\n".join(problems[:10]) if problems else f"ok {THREADS}x{CALLS} runs={runs}")
'''


def run_child(mode: str, code: str = CHILD) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, "-c", code, mode], capture_output=True, text=True, env=env, timeout=120)


@pytest.mark.parametrize("mode", ["jit", "aot", "session"])
def test_threads_calling_one_program_get_their_own_results_and_errors(mode):
    done = run_child(mode)
    assert done.returncode == 0, f"child exited with {done.returncode}: {done.stderr[-2000:]}"
    # Every call reaches the compiled code (the bad indices are found there), none is lost.
    assert done.stdout.strip() == "ok 4x60 runs=240", done.stdout[-2000:]


RANDOM_CHILD = r'''
import sys, tempfile, threading
import tfc
import tfc.compat.v1 as tf

THREADS, CALLS = 4, 50


def build():
    graph = tf.Graph()
    with graph.as_default():
        tf.set_random_seed(3)
        return tfc.compile(tf.reduce_sum(tf.random_uniform([256, 64], seed=5), axis=1))


sequential = build()
expected = sorted(tuple(sequential()) for _ in range(THREADS * CALLS))
threaded = build()
if sys.argv[1] == "aot":
    directory = tempfile.mkdtemp()
    threaded.save(directory)
    threaded = tfc.load(directory)
draws = []


def worker():
    for _ in range(CALLS):
        draws.append(tuple(threaded()))


threads = [threading.Thread(target=worker) for _ in range(THREADS)]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
print("ok" if sorted(draws) == expected else f"draws differ: {len(set(draws))} distinct of {len(draws)}")
'''


@pytest.mark.parametrize("mode", ["jit", "aot"])
def test_threads_calling_a_random_program_draw_what_sequential_calls_draw(mode):
    """A program with RNG state advances it once per call, whatever the threads: the 200
    threaded draws are the 200 draws of 200 sequential calls (no repeats, none skipped)."""
    done = run_child(mode, RANDOM_CHILD)
    assert done.returncode == 0, f"child exited with {done.returncode}: {done.stderr[-2000:]}"
    assert done.stdout.strip() == "ok", done.stdout[-2000:]
