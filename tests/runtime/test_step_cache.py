"""The persistent step cache (TFC_CACHE_DIR, tfc/runtime/step_cache.py): a Session step
keyed by its graph, loaded without lowering, passes or LLVM by a later session or process."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

import tfc
import tfc.compat.v1 as tf
from tfc.codegen import jit
from tfc.frontend import errors
from tfc.runtime import step_cache
from tfc.runtime.executable import Executable

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

TRAIN = """
import json, sys
import numpy as np
import tfc.compat.v1 as tf

tf.set_random_seed(7)
x = tf.placeholder(tf.float32, [None, 8], name="x")
y = tf.placeholder(tf.int32, [None], name="y")
h = x
for i in range(3):
    h = tf.layers.dense(h, 8, activation=tf.nn.relu)
    m, v = tf.nn.moments(h, [1], keep_dims=True)
    h = (h - m) / tf.sqrt(v + 1e-5)
logits = tf.layers.dense(h, 4)
loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
train = tf.train.AdamOptimizer(1e-2).minimize(loss)
dropped = tf.nn.dropout(h, rate=0.5)
rs = np.random.RandomState(0)
feed = {x: rs.rand(5, 8).astype(np.float32), y: rs.randint(0, 4, 5)}
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    losses = [sess.run([loss, train], feed)[0].tolist() for _ in range(3)]
    out = {"losses": losses, "dropped": sess.run(dropped, feed).tolist(), "stats": sess.stats}
print(json.dumps(out))
"""


def _run_process(cache: str) -> dict:
    env = dict(os.environ, TFC_CACHE_DIR=cache)
    result = subprocess.run([sys.executable, "-c", TRAIN], capture_output=True, text=True, cwd=ROOT, env=env,
                            timeout=300)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_a_second_process_loads_every_step_and_gets_identical_results(tmp_path):
    first = _run_process(str(tmp_path))
    second = _run_process(str(tmp_path))
    assert first["stats"]["step_cache_hits"] == 0 and first["stats"]["compiles"] == 3
    assert second["stats"]["step_cache_hits"] == 3 and second["stats"]["compiles"] == 3  # init, train, dropout
    assert second["losses"] == first["losses"] and second["dropped"] == first["dropped"]
    assert len([f for f in os.listdir(tmp_path) if f.endswith(step_cache.SUFFIX)]) == 3


# -- in one process: every new session starts with an empty in-memory cache ---------------------
@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TFC_CACHE_DIR", str(tmp_path))
    return tmp_path


def _entries(directory) -> list:
    return sorted(f for f in os.listdir(directory) if f.endswith(step_cache.SUFFIX))


def _run(build, feed_values=None, fetch=None):
    """Build a fresh graph, run it in a fresh session: (value, session stats)."""
    with tf.Graph().as_default():
        fetches, feeds = build()
        with tf.Session() as sess:
            feed = dict(zip(feeds, feed_values)) if feed_values is not None else None
            value = sess.run(fetches if fetch is None else fetch(fetches), feed)
            return value, dict(sess.stats)


X = np.arange(6, dtype=np.float32).reshape(2, 3) / 7


def _model(constant=1.0, transpose_b=False, shape=(None, 3), dtype=tf.float32, seed=1, fetch_both=False):
    def build():
        x = tf.placeholder(dtype, list(shape), name="x")
        w = tf.constant(np.arange(9).reshape(3, 3) * constant, dtype=dtype)
        mm = tf.matmul(x, w, transpose_b=transpose_b)
        noise = tf.cast(tf.random_uniform([3], seed=seed), dtype)
        out = tf.reduce_sum(mm * 2.0 + noise, axis=1)
        return ([out, mm] if fetch_both else out), [x]
    return build


VARIANTS = {
    "constant": (_model(constant=2.0), [X]),
    "attr": (_model(transpose_b=True), [X]),
    "static shape": (_model(shape=(2, 3)), [X]),
    "fetch": (_model(fetch_both=True), [X]),
    "feed dtype": (_model(dtype=tf.float64), [X.astype(np.float64)]),
    "seed": (_model(seed=2), [X]),
    "fed shape (a dim of 1)": (_model(), [X[:1]]),
}


def test_the_same_graph_hits_and_every_change_misses(cache, monkeypatch):
    base, stats = _run(_model(), [X])
    assert stats["step_cache_hits"] == 0 and len(_entries(cache)) == 1
    again, stats = _run(_model(), [X])
    assert stats["step_cache_hits"] == 1 and stats["compiles"] == 1
    np.testing.assert_array_equal(again, base)
    for name, (build, values) in VARIANTS.items():
        value, stats = _run(build, values)
        assert stats["step_cache_hits"] == 0, name
        monkeypatch.delenv("TFC_CACHE_DIR")
        expected, _ = _run(build, values)
        monkeypatch.setenv("TFC_CACHE_DIR", str(cache))
        for got, want in zip(value if isinstance(value, list) else [value],
                             expected if isinstance(expected, list) else [expected]):
            np.testing.assert_array_equal(got, want, err_msg=name)
        value, stats = _run(build, values)  # stored by the miss
        assert stats["step_cache_hits"] == 1, name
    assert len(_entries(cache)) == 1 + len(VARIANTS)


def test_a_step_with_unseeded_random_ops_is_not_stored(cache):
    def build():
        return tf.random_uniform([4]) + tf.constant(1.0), []

    first, stats = _run(build)
    second, stats = _run(build)
    assert stats["step_cache_hits"] == 0 and _entries(cache) == []
    assert not np.array_equal(first, second)  # each session draws its own seeds, as in TF


@pytest.mark.parametrize("damage", ["flip a byte", "truncate", "valid checksum, not an entry"])
def test_a_damaged_entry_is_ignored_and_rewritten(cache, damage):
    base, _ = _run(_model(), [X])
    (name,) = _entries(cache)
    path = cache / name
    data = path.read_bytes()
    if damage == "flip a byte":
        path.write_bytes(data[:len(data) // 2] + bytes([data[len(data) // 2] ^ 0xFF]) + data[len(data) // 2 + 1:])
    elif damage == "truncate":
        path.write_bytes(data[:-100])
    else:
        jit.cache_store(name[:-len(step_cache.SUFFIX)], b"TFCSTEP1" + b"\xff" * 64, suffix=step_cache.SUFFIX)
    value, stats = _run(_model(), [X])
    assert stats["step_cache_hits"] == 0
    np.testing.assert_array_equal(value, base)
    assert step_cache.load(name[:-len(step_cache.SUFFIX)]) is not None  # rewritten
    value, stats = _run(_model(), [X])
    assert stats["step_cache_hits"] == 1
    np.testing.assert_array_equal(value, base)


def _error_of(build, feed_values, init=False):
    with tf.Graph().as_default():
        fetch, feeds = build()
        with tf.Session() as sess:
            if init:
                sess.run(tf.global_variables_initializer())
            with pytest.raises(Exception) as info:
                sess.run(fetch, dict(zip(feeds, feed_values)))
            return info.value, dict(sess.stats)


def _same_error_uncached(monkeypatch, cache, build, feed_values, error):
    monkeypatch.delenv("TFC_CACHE_DIR")
    try:
        expected, _ = _error_of(build, feed_values)
    finally:
        monkeypatch.setenv("TFC_CACHE_DIR", str(cache))
    assert type(error) is type(expected) and error.message == expected.message
    assert getattr(error, "op", None) is not None and error.op.name == expected.op.name


def test_run_time_errors_of_a_cached_step_name_the_op(cache, monkeypatch):
    def build():
        p = tf.placeholder(tf.int32, [], name="p")
        return tf.constant([1.0, 2.0, 3.0])[p], [p]

    value, stats = _run(build, [1])
    assert value == 2.0 and stats["step_cache_hits"] == 0
    error, stats = _error_of(build, [5])
    assert stats["step_cache_hits"] == 1
    assert isinstance(error, errors.InvalidArgumentError)
    assert "slice index 5 of dimension 0 out of bounds." in error.message
    assert error.op is not None and error.op.name == "strided_slice"
    _same_error_uncached(monkeypatch, cache, build, [5], error)


def test_uninitialized_variables_fail_the_same_on_a_hit(cache, monkeypatch):
    def build():
        v = tf.Variable([1.0, 2.0], name="v")
        return v * 2.0, []

    with tf.Graph().as_default():
        fetch, _ = build()
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            assert sess.run(fetch).tolist() == [2.0, 4.0]
    error, stats = _error_of(build, [])
    assert stats["step_cache_hits"] == 1
    assert isinstance(error, errors.FailedPreconditionError)
    assert error.message == "Attempting to use uninitialized value v"
    _same_error_uncached(monkeypatch, cache, build, [], error)
    # Initialised, the cached steps (init and the product) run.
    with tf.Graph().as_default():
        fetch, _ = build()
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            assert sess.run(fetch).tolist() == [2.0, 4.0]
            assert sess.stats["step_cache_hits"] == 2


def test_feed_shape_errors_are_the_same_on_a_hit(cache, monkeypatch):
    def build():
        a = tf.placeholder(tf.float32, [None], name="a")
        b = tf.placeholder(tf.float32, [None], name="b")
        return a + b, [a, b]

    value, _ = _run(build, [[1.0, 2.0, 3.0], [1.0, 1.0, 1.0]])
    assert value.tolist() == [2.0, 3.0, 4.0]
    error, stats = _error_of(build, [[1.0, 2.0, 3.0], [1.0, 1.0, 1.0, 1.0]])  # the program assumes equal sizes
    assert stats["step_cache_hits"] == 1
    assert isinstance(error, errors.InvalidArgumentError) and "Incompatible shapes" in error.message
    _same_error_uncached(monkeypatch, cache, build, [[1.0, 2.0, 3.0], [1.0, 1.0, 1.0, 1.0]], error)

    def build_static():
        a = tf.placeholder(tf.float32, [3], name="a")
        return a * 2.0, [a]

    _run(build_static, [[1.0, 2.0, 3.0]])
    with tf.Graph().as_default():
        fetch, (a,) = build_static()
        with tf.Session() as sess:
            with pytest.raises(ValueError, match=r"Cannot feed value of shape \(2,\) for Tensor 'a:0'"):
                sess.run(fetch, {a: [1.0, 2.0]})
            assert sess.run(fetch, {a: [1.0, 2.0, 3.0]}).tolist() == [2.0, 4.0, 6.0]
            assert sess.stats["step_cache_hits"] == 1


def test_a_graph_edited_after_a_run_is_keyed_again(cache):
    """A second session on the same (mutated) graph: set_shape and a new control input change the key."""
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, None, name="x")
        y = x * 3.0
        with tf.Session() as sess:
            assert sess.run(y, {x: [1.0, 2.0]}).tolist() == [3.0, 6.0]
        x.set_shape([2])
        with tf.Session() as sess:
            assert sess.run(y, {x: [1.0, 2.0]}).tolist() == [3.0, 6.0]
            assert sess.stats["step_cache_hits"] == 0
    assert len(_entries(cache)) == 2


def test_executables_round_trip_through_their_description():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 8], name="x")
        w = tf.constant(np.arange(64, dtype=np.float32).reshape(8, 8) / 64)
        compiled = tfc.compile(tf.tanh(tf.matmul(x, w)) * 3.0, feeds=[x])
    original = compiled.result.executable
    description = json.loads(json.dumps(original.describe()))
    x = np.random.RandomState(0).randn(3, 8).astype(np.float32)
    for fast_path in (original.fast_path_code(), None, b"\0" * 40):  # reused, recompiled, ignored
        copy = Executable.from_description(description, original.code, fast_path=fast_path)
        assert copy.function is None and copy.symbols == original.symbols
        assert copy._fast.__code__.co_code == original._fast.__code__.co_code
        np.testing.assert_array_equal(copy.run([x])[0], original.run([x])[0])
        assert copy.signature.locations == original.signature.locations
