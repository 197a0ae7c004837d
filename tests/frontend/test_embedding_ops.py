"""tf.nn.embedding_lookup against TensorFlow (fixture: tests/fixtures/make_tf_embedding.py):
the forward graph op for op, the lookups (plain and clipped by max_norm) and the gradient
with respect to the parameters."""
from __future__ import annotations

import importlib.util
import json
import os

import numpy as np
import pytest

import tfc.compat.v1 as tf

FIXTURES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fixtures")
spec = importlib.util.spec_from_file_location("make_tf_embedding", os.path.join(FIXTURES, "make_tf_embedding.py"))
make = importlib.util.module_from_spec(spec)
spec.loader.exec_module(make)
with open(os.path.join(FIXTURES, "embedding.json")) as f:
    FIXTURE = json.load(f)


def test_the_graph_and_the_values_are_tensorflows():
    with tf.Graph().as_default():
        ids, forward, fetches = make.lookups(tf)
        assert forward == FIXTURE["ops"]
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            got = sess.run(fetches, {ids: make.IDS})
    for value, expected in zip(got, FIXTURE["values"]):
        np.testing.assert_allclose(value, np.array(expected, np.float32), rtol=1e-6, atol=1e-6)


def test_sharded_parameters_say_they_are_not_implemented():
    # (tf.nn.embedding_lookup_sparse: tests/frontend/test_sparse_ops.py)
    with tf.Graph().as_default():
        shards = [tf.ones([5, 2]), tf.ones([5, 2])]
        with pytest.raises(NotImplementedError, match="over 2 sharded parameter tensors"):
            tf.nn.embedding_lookup(shards, [1, 2])
        ids = tf.SparseTensor([[0, 0]], tf.constant([1], tf.int64), [1, 1])
        with pytest.raises(NotImplementedError, match="over 2 sharded parameter tensors"):
            tf.nn.embedding_lookup_sparse(shards, ids, None)
