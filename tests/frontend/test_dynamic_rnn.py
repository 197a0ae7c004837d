"""tf.nn.dynamic_rnn / bidirectional_dynamic_rnn: TensorFlow's graph op for op (names, types,
inputs), and its values, for LSTM, GRU (time major) and a bidirectional basic RNN, with and
without ``sequence_length`` (fixtures: tests/fixtures/make_tf_dynamic_rnn.py, made with TF
2.21 in TF1 mode)."""
from __future__ import annotations

import importlib.util
import json
import os

import numpy as np
import pytest

import tfc.compat.v1 as tf

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURES = os.path.join(HERE, "fixtures")


def _fixture_module():
    spec = importlib.util.spec_from_file_location("make_tf_dynamic_rnn",
                                                  os.path.join(FIXTURES, "make_tf_dynamic_rnn.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


FIXTURE = _fixture_module()  # the program builders; TensorFlow is imported only by its main()
PROGRAMS = FIXTURE.PROGRAMS
with open(os.path.join(FIXTURES, "dynamic_rnn.json")) as f:
    GRAPHS = json.load(f)
VALUES = np.load(os.path.join(FIXTURES, "dynamic_rnn.npz"))


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_the_graph_and_the_values_are_tensorflows(name):
    build, _ = PROGRAMS[name]
    with tf.Graph().as_default() as graph:
        x, fetches = build(tf)
        assert FIXTURE.record(graph) == GRAPHS[name]
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            for i, v in enumerate(tf.trainable_variables()):
                sess.run(v.assign(VALUES[f"{name}/var{i}"]))
            got = sess.run(fetches, FIXTURE.feeds(graph, name, x, VALUES))
    for i, value in enumerate(got):
        np.testing.assert_allclose(value, VALUES[f"{name}/out{i}"], rtol=1e-5, atol=1e-6, err_msg=f"{name} out{i}")


def test_the_loop_is_one_native_while():
    from tfc.passes.lower import FeedSpec, lower_graph

    with tf.Graph().as_default():
        x, (out, _, _) = PROGRAMS["lstm"][0](tf)
        lowered = lower_graph([out], (), [FeedSpec(x, x.dtype, (2, 5, 3))])
    assert [op.name for op in lowered.module.main.walk()].count("while") == 1


# -- sequence_length ------------------------------------------------------------------------------
def test_the_fixture_covers_sequence_length():
    """What the comparison above checks: TF's CheckSeqLen behind an Assert, the Selects of
    _rnn_step in the loop, ReverseSequence for the backward direction."""
    nodes = {name: (kind, inputs) for name, kind, inputs in GRAPHS["lstm_sequence_length"]}
    assert nodes["model/rnn/sequence_length"] == ("Identity", ["seq_len:0"])
    assert nodes["model/rnn/CheckSeqLen"] == ("Identity", ["model/rnn/sequence_length:0",
                                                           "^model/rnn/Assert/Assert"])
    assert nodes["model/rnn/Assert/Assert"][0] == "Assert"
    assert nodes["model/rnn/while/Select"] == ("Select", ["model/rnn/while/GreaterEqual:0",
                                                          "model/rnn/while/Select/Enter:0",
                                                          "model/rnn/while/basic_lstm_cell/Mul_2:0"])
    assert nodes["model/rnn/while/GreaterEqual/Enter"] == ("Enter", ["model/rnn/CheckSeqLen:0"])
    assert GRAPHS["gru_sequence_length_int64_time_major"][2][:2] == ["model/rnn/Cast", "Cast"]
    reversed_ = [n for n in GRAPHS["bidirectional_sequence_length"] if n[1] == "ReverseSequence"]
    assert [n[0] for n in reversed_] == ["model/bidirectional_rnn/bw/ReverseSequence", "model/ReverseSequence"]
    static = [n for n in GRAPHS["static_bidirectional_sequence_length"] if n[1] == "ReverseSequence"]
    assert [(n[0], n[2]) for n in static] == [
        ("model/bidirectional_rnn/bw/ReverseSequence", ["model/bidirectional_rnn/bw/stack:0", "seq_len:0"]),
        ("model/ReverseSequence", ["model/stack:0", "seq_len:0"])]


def _run_lstm(lengths, x_value, batch=None):
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [batch, 5, 3], name="x")
        seq_len = tf.placeholder(tf.int32, [None], name="seq_len")
        with tf.variable_scope("model", initializer=tf.zeros_initializer()):
            cell = tf.nn.rnn_cell.BasicLSTMCell(4)
            out, state = tf.nn.dynamic_rnn(cell, x, sequence_length=seq_len, dtype=tf.float32)
            plain, plain_state = tf.nn.dynamic_rnn(cell, x, dtype=tf.float32, scope="rnn")
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            for i, v in enumerate(tf.trainable_variables()):
                sess.run(v.assign(VALUES[f"lstm_sequence_length/var{i}"]))
            return sess.run([out, state.h, plain], {x: x_value, seq_len: lengths})


@pytest.mark.parametrize("batch", [None, 3])
def test_outputs_are_zero_and_the_state_is_kept_past_each_length(batch):
    """Row b's outputs are the plain rnn's up to lengths[b] and zeros after; its final state
    is the output at lengths[b] - 1 (the zero state for length 0)."""
    lengths = np.array([5, 2, 0], np.int32)
    x_value = VALUES["lstm_sequence_length/x"]
    out, h, plain = _run_lstm(lengths, x_value, batch)
    for b, length in enumerate(lengths):
        np.testing.assert_allclose(out[b, :length], plain[b, :length], rtol=1e-6, atol=1e-7)
        np.testing.assert_array_equal(out[b, length:], np.zeros_like(out[b, length:]))
        np.testing.assert_allclose(h[b], plain[b, length - 1] if length else np.zeros(4), rtol=1e-6, atol=1e-7)


def test_a_wrong_sequence_length_is_an_invalid_argument():
    """A sequence_length vector not batch_size long fails the run (TF: CheckSeqLen's Assert;
    tfc: the program's shape check on the same dims, before it runs)."""
    with pytest.raises(tf.errors.InvalidArgumentError):
        _run_lstm(np.array([1, 2], np.int32), VALUES["lstm_sequence_length/x"])
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"argument 'seq_len' dim 0 is 2, but the program "
                                                             r"needs 3"):
        _run_lstm(np.array([1, 2], np.int32), VALUES["lstm_sequence_length/x"], batch=3)


def test_sequence_length_must_be_a_vector():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [2, 5, 3])
        with pytest.raises(ValueError, match=r"^sequence_length must be a vector of length batch_size, but saw "
                                             r"shape: \(2, 1\)$"):
            tf.nn.dynamic_rnn(tf.nn.rnn_cell.BasicRNNCell(2), x, sequence_length=tf.ones([2, 1], tf.int32),
                              dtype=tf.float32)
