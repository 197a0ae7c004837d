"""Ahead-of-time artifacts give what Session.run and the JIT give: values, structure, dtypes, errors."""
from __future__ import annotations

import collections
import json
import os

import numpy as np
import pytest

import tfc
import tfc.compat.v1 as tf
from aot_helpers import build
from tfc.codegen.aot import AOTError
from tfc.frontend import errors


def test_mlp_matches_session_run_and_the_jit(mlp):
    model = tfc.load(mlp.directory)
    for batch in (1, 5, 64):
        x = np.random.RandomState(batch).randn(batch, 32).astype(np.float32)
        expected = mlp.reference(x)
        loaded = model(x)
        assert loaded.dtype == np.float32 and loaded.shape == (batch, 10)
        np.testing.assert_allclose(loaded, expected, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(loaded, mlp.exe(x), rtol=1e-5, atol=1e-6)


def test_cnn_matches_session_run_and_the_jit(cnn):
    model = tfc.load(cnn.directory)
    for batch in (1, 3):
        x = np.random.RandomState(batch).randn(batch, 12, 12, 1).astype(np.float32)
        loaded = model(x)
        assert loaded.shape == (batch, 10)
        np.testing.assert_allclose(loaded, cnn.reference(x), rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(loaded, cnn.exe(x), rtol=1e-5, atol=1e-6)


def test_weights_are_in_the_weights_file_not_in_the_library(mlp):
    with open(os.path.join(mlp.directory, "manifest.json")) as f:
        manifest = json.load(f)
    constants = manifest["weights"]["constants"]
    names = {c["name"] for c in constants}
    assert {"w1", "w2"} <= names  # frozen variables keep their names
    assert all(c["offset"] % 64 == 0 for c in constants)
    w1 = next(c for c in constants if c["name"] == "w1")
    raw = open(os.path.join(mlp.directory, "model.weights"), "rb").read()
    data = np.frombuffer(raw, dtype=np.float32, count=32 * 64, offset=64 + w1["offset"]).reshape(32, 64)
    np.testing.assert_array_equal(data, mlp.session.run(mlp.graph.get_tensor_by_name("w1:0")))
    library = open(os.path.join(mlp.directory, "libmodel.so"), "rb").read()
    assert data.tobytes()[:256] not in library


def test_fetch_structure_dtypes_scalars_and_keyword_feeds(tmp_path_factory):
    Pair = collections.namedtuple("Pair", "total count")

    def make():
        a = tf.placeholder(tf.float32, [None, 3], name="a")
        n = tf.placeholder(tf.int32, [None], name="n")
        total = tf.reduce_sum(a)
        fetches = {"pair": Pair(total, tf.size(n)), "rows": [a * 2.0, (tf.cast(n, tf.int64) + 1,)],
                   "flag": tf.reduce_any(a > 0.5)}
        return fetches, [a, n]

    built = build(tmp_path_factory, "structure", make)
    model = tfc.load(built.directory)
    a = np.arange(6, dtype=np.float32).reshape(2, 3) / 10
    n = np.array([4, 5, 6], dtype=np.int32)
    expected = built.reference(a, n)
    for got in (model(a, n), model(a=a, n=n), model(a, **{"n:0": n}), model([[0, .1, .2], [.3, .4, .5]], [4, 5, 6])):
        assert set(got) == {"pair", "rows", "flag"}
        assert type(got["pair"]).__name__ == "Pair" and got["pair"]._fields == ("total", "count")
        assert isinstance(got["pair"].total, np.float32) and got["pair"].total == pytest.approx(expected["pair"].total)
        assert isinstance(got["pair"].count, np.int32) and got["pair"].count == 3
        assert isinstance(got["rows"], list) and isinstance(got["rows"][1], tuple)
        assert got["rows"][1][0].dtype == np.int64
        np.testing.assert_array_equal(got["rows"][1][0], expected["rows"][1][0])
        np.testing.assert_allclose(got["rows"][0], expected["rows"][0])
        assert isinstance(got["flag"], np.bool_) and got["flag"] == expected["flag"]
    built.session.close()


def _error_of(fn, *args, **kwargs):
    try:
        fn(*args, **kwargs)
    except Exception as e:  # noqa: BLE001 - the test compares exceptions
        return type(e), str(e)
    raise AssertionError("no error")


def test_wrong_feeds_raise_the_jits_errors(mlp):
    model = tfc.load(mlp.directory)
    cases = [((np.zeros((2, 31), np.float32),), {}),  # static dim
             ((np.zeros((2, 32, 1), np.float32),), {}),  # rank
             ((), {}),  # missing feed
             ((np.zeros((1, 32), np.float32),), {"y": 1}),  # unknown keyword
             ((np.zeros((1, 32)), np.zeros(1)), {})]  # too many
    for args, kwargs in cases:
        jit = _error_of(mlp.exe, *args, **kwargs)
        loaded = _error_of(model, *args, **kwargs)
        assert loaded == jit
        assert issubclass(jit[0], (ValueError, TypeError))


def test_symbol_mismatch_between_feeds_is_an_invalid_argument_like_the_jit(tmp_path_factory):
    def make():
        a = tf.placeholder(tf.float32, [None], name="a")
        b = tf.placeholder(tf.float32, [None], name="b")
        return a + b, [a, b]

    built = build(tmp_path_factory, "broadcast", make)
    model = tfc.load(built.directory)
    np.testing.assert_allclose(model([1, 2], [3, 4]), [4, 6])
    jit = _error_of(built.exe, np.ones(2, np.float32), np.ones(3, np.float32))
    assert _error_of(model, np.ones(2, np.float32), np.ones(3, np.float32)) == jit
    assert jit[0] is errors.InvalidArgumentError and "Incompatible shapes" in jit[1]
    built.session.close()


def test_gather_index_errors_and_random_state_match_the_jit(tmp_path_factory):
    def make():
        table = tf.constant(np.arange(40, dtype=np.float32).reshape(10, 4))
        idx = tf.placeholder(tf.int32, [None], name="idx")
        noise = tf.random_uniform([3], seed=7)
        return [tf.gather(table, idx), noise], [idx]

    built = build(tmp_path_factory, "gather", make)
    model = tfc.load(built.directory)
    for _ in range(2):  # the random state advances the same way in both
        jit_rows, jit_noise = built.exe(np.array([1, 9], np.int32))
        rows, noise = model(np.array([1, 9], np.int32))
        np.testing.assert_array_equal(rows, jit_rows)
        np.testing.assert_array_equal(noise, jit_noise)
    jit = _error_of(built.exe, np.array([3, 10], np.int32))
    assert jit[0] is errors.InvalidArgumentError and "indices[1] = 10 is not in [0, 10)" in jit[1]
    assert _error_of(model, np.array([3, 10], np.int32)) == jit
    built.session.close()


def test_saving_needs_frozen_variables(tmp_path):
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 2], name="x")
        w = tf.Variable(np.ones((2, 2), np.float32), name="w")
        y = tf.matmul(x, w)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            exe = tfc.compile(y, feeds=[x], session=sess)
            with pytest.raises(AOTError, match="freeze_variables=True"):
                exe.save(str(tmp_path / "a"))


def test_variables_read_inside_a_cond_and_a_loop_freeze_into_the_artifact(tmp_path_factory):
    # The reads sit in the regions of the ``if`` and the ``while`` (the ref is passed in).
    def make():
        x = tf.placeholder(tf.float32, [3], name="x")
        p = tf.placeholder(tf.bool, [], name="p")
        s = tf.Variable(2.0, name="s")
        t = tf.Variable(0.5, name="t")
        branch = tf.cond(p, lambda: x * s, lambda: x - t)
        _, looped = tf.while_loop(lambda i, v: i < 3, lambda i, v: (i + 1, v * s + t), [tf.constant(0), x])
        return [branch, looped], [x, p]

    built = build(tmp_path_factory, "frozen_cond", make)
    loaded = tfc.load(built.directory)
    value = np.array([1.0, -2.0, 0.5], np.float32)
    looped = value
    for _ in range(3):
        looped = looped * 2.0 + 0.5
    for taken, branch in ((True, value * 2.0), (False, value - 0.5)):
        got = loaded(value, taken)
        np.testing.assert_allclose(got[0], branch)
        np.testing.assert_allclose(got[1], looped)
        np.testing.assert_allclose(built.exe(value, taken)[0], branch)


def test_no_linker_is_a_clear_error_and_leaves_the_object(tmp_path, monkeypatch, mlp):
    import tfc.codegen.aot as aot

    monkeypatch.setattr(aot, "find_linker", lambda: None)
    with pytest.raises(AOTError, match="no system linker found"):
        mlp.exe.save(str(tmp_path / "nolink"))
    assert (tmp_path / "nolink" / "program.o").read_bytes()[:4] == b"\x7fELF"


def test_program_external_constants_option():
    """Program(external_constants=True): big constants through the weights slot, small ones embedded."""
    from tfc.codegen.program import Program
    from tfc.compiler import compile_module
    from tfc.passes.lower import FeedSpec, lower_graph

    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 100], name="x")
        big = np.random.RandomState(0).randn(100).astype(np.float32)
        small = np.array([1.0, 2.0, 3.0, 4.0], np.float32)
        y = tf.tanh(x * big) + tf.reduce_sum(tf.constant(small) * 2.0)
        lowered = lower_graph([y], [], [FeedSpec(x, tf.float32, (-1, 100))])
    compile_module(lowered.module, native=False)
    function = lowered.module.main
    jit = Program(function)
    jit_ir = jit.emit()
    assert jit.weights_slot is None and jit.num_slots == jit.error_slot + 1 and jit.weights_layout() == []
    program = Program(function, external_constants=True)
    text = program.emit()
    assert program.weights_slot == program.error_slot + 1 == program.num_slots - 1
    layout = program.weights_layout()
    assert len(layout) == 1 and layout[0]["nbytes"] == 400 and layout[0]["offset"] == 0
    blob = program.weights_blob()
    np.testing.assert_array_equal(np.frombuffer(blob[:400], np.float32), big)
    assert len(blob) % 64 == 0
    assert big.tobytes()[:64].hex() not in text.replace("\\", "").lower()
    assert text.count("private constant") < jit_ir.count("private constant")
