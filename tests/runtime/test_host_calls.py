"""Host calls (tfc/runtime/host_calls.py): a tf.Print inside a tf.while_loop or a tf.cond
branch prints where the compiled program reaches it, with TF's text; errors raised on the
host side stop the step; a step loaded from the persistent step cache calls back too."""
from __future__ import annotations

import numpy as np
import pytest

import tfc.compat.v1 as tf
from tfc.frontend.ops import logging_ops


def _loop_graph(first_n=-1):
    x = tf.placeholder(tf.float32, [None], name="x")
    n = tf.placeholder(tf.int32, [], name="n")

    def body(i, acc):
        acc = tf.Print(acc, [i, acc], message="step ", first_n=first_n)
        return i + 1, acc * 2.0

    _, acc = tf.while_loop(lambda i, acc: i < n, body, [tf.constant(0), x])
    return x, n, acc


def test_print_in_a_while_loop_prints_every_iteration(capsys):
    with tf.Graph().as_default():
        x, n, acc = _loop_graph()
        with tf.Session() as sess:
            value = sess.run(acc, {x: [1.0, 2.0], n: 3})
            printed = capsys.readouterr().err
            sess.run(acc, {x: [5.0], n: 0})
            printed_none = capsys.readouterr().err
    np.testing.assert_array_equal(value, [8.0, 16.0])
    assert printed == "step [0][1 2]\nstep [1][2 4]\nstep [2][4 8]\n"  # what TF 2.21's tf.compat.v1 prints
    assert printed_none == ""


def test_first_n_counts_executions_across_iterations_and_runs(capsys):
    with tf.Graph().as_default():
        x, n, acc = _loop_graph(first_n=2)
        with tf.Session() as sess:
            sess.run(acc, {x: [1.0], n: 1})
            sess.run(acc, {x: [1.0], n: 3})
    assert capsys.readouterr().err == "step [0][1]\nstep [0][1]\n"


def test_print_in_a_cond_branch_prints_only_when_taken(capsys):
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None])
        p = tf.placeholder(tf.bool, [])
        out = tf.cond(p, lambda: tf.Print(x + 1, [x, "then"], message="taken: ", summarize=1), lambda: x - 1)
        with tf.Session() as sess:
            taken = sess.run(out, {x: [1.0, 2.0], p: True})
            first = capsys.readouterr().err
            other = sess.run(out, {x: [1.0, 2.0], p: False})
            second = capsys.readouterr().err
    np.testing.assert_array_equal(taken, [2.0, 3.0])
    np.testing.assert_array_equal(other, [0.0, 1.0])
    assert first == "taken: [1...][then]\n" and second == ""


def test_a_host_side_error_stops_the_step_and_the_session_goes_on(monkeypatch, capsys):
    calls = []

    def failing_write(stream, text):
        calls.append(text)
        if len(calls) == 2:
            raise OSError("stderr is gone")

    with tf.Graph().as_default():
        x, n, acc = _loop_graph()
        with tf.Session() as sess:
            monkeypatch.setattr(logging_ops, "_write", failing_write)
            with pytest.raises(OSError, match="stderr is gone"):
                sess.run(acc, {x: [1.0], n: 5})
            assert calls == ["step [0][1]\n", "step [1][2]\n"]
            monkeypatch.undo()
            np.testing.assert_array_equal(sess.run(acc, {x: [1.0], n: 2}), [4.0])
    assert capsys.readouterr().err == "step [0][1]\nstep [1][2]\n"


def test_a_step_from_the_persistent_cache_calls_back(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("TFC_CACHE_DIR", str(tmp_path))
    printed, stats = [], []
    for _ in range(2):
        with tf.Graph().as_default():
            x, n, acc = _loop_graph()
            with tf.Session() as sess:
                np.testing.assert_array_equal(sess.run(acc, {x: [1.0], n: 2}), [4.0])
                stats.append(sess.stats["step_cache_hits"])
        printed.append(capsys.readouterr().err)
    assert stats == [0, 1]
    assert printed == ["step [0][1]\nstep [1][2]\n"] * 2
