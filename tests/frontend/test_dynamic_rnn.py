"""tf.nn.dynamic_rnn / bidirectional_dynamic_rnn: TensorFlow's graph op for op, and its
values, for LSTM, GRU (time major) and a bidirectional basic RNN (fixtures:
tests/fixtures/make_tf_dynamic_rnn.py, made with TF 2.21 in TF1 mode)."""
from __future__ import annotations

import importlib.util
import json
import os

import numpy as np
import pytest

import tfc.compat.v1 as tf

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURES = os.path.join(HERE, "fixtures")


def _programs():
    spec = importlib.util.spec_from_file_location("make_tf_dynamic_rnn",
                                                  os.path.join(FIXTURES, "make_tf_dynamic_rnn.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.PROGRAMS


PROGRAMS = _programs()
with open(os.path.join(FIXTURES, "dynamic_rnn.json")) as f:
    GRAPHS = json.load(f)
VALUES = np.load(os.path.join(FIXTURES, "dynamic_rnn.npz"))


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_the_graph_and_the_values_are_tensorflows(name):
    build, _ = PROGRAMS[name]
    with tf.Graph().as_default() as graph:
        x, fetches = build(tf)
        assert [[op.name, op.type] for op in graph.get_operations()] == GRAPHS[name]
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            for i, v in enumerate(tf.trainable_variables()):
                sess.run(v.assign(VALUES[f"{name}/var{i}"]))
            got = sess.run(fetches, {x: VALUES[f"{name}/x"]})
    for i, value in enumerate(got):
        np.testing.assert_allclose(value, VALUES[f"{name}/out{i}"], rtol=1e-5, atol=1e-6, err_msg=f"{name} out{i}")


def test_the_loop_is_one_native_while():
    from tfc.passes.lower import FeedSpec, lower_graph

    with tf.Graph().as_default():
        x, (out, _, _) = PROGRAMS["lstm"][0](tf)
        lowered = lower_graph([out], (), [FeedSpec(x, x.dtype, (2, 5, 3))])
    assert [op.name for op in lowered.module.main.walk()].count("while") == 1
