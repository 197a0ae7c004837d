"""TensorArrays lowered as values (tfc/passes/lower_arrays.py) and the loops of tf.map_fn,
tf.scan, tf.foldl and tf.foldr compiled end to end, against numpy (TF's graphs for these
are checked node by node in tests/frontend/test_control_flow_graph.py)."""
from __future__ import annotations

import numpy as np
import pytest

import tfc.compat.v1 as tf
from tfc.passes.lower import UnsupportedOpsError

X = np.arange(12, dtype=np.float32).reshape(4, 3) / 10
V = np.array([1, 2, 3, 4, 5], np.float32)


def _run(fetch, feeds):
    with tf.Session() as sess:
        return sess.run(fetch, feeds)


def test_a_tensor_array_unstacked_read_and_stacked():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [4, 3], name="x")
        ta = tf.TensorArray(tf.float32, size=4).unstack(x)
        row, whole = _run([ta.read(2), ta.stack()], {x: X})
    np.testing.assert_array_equal(row, X[2])
    np.testing.assert_array_equal(whole, X)


def test_writes_at_python_and_tensor_indices():
    with tf.Graph().as_default():
        i = tf.placeholder(tf.int32, [], name="i")
        ta = tf.TensorArray(tf.float32, size=3, element_shape=[2])
        ta = ta.write(0, [1.0, 2.0]).write(i, [5.0, 6.0])
        got = _run(ta.stack(), {i: 2})
    np.testing.assert_array_equal(got, [[1, 2], [0, 0], [5, 6]])


@pytest.mark.parametrize("rows", [4, 1, 0])
def test_map_fn_over_an_unknown_number_of_rows(rows):
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 3], name="x")
        y = tf.map_fn(lambda r: tf.tanh(r) * 2.0, x)
        got = _run(y, {x: X[:rows]})
    assert got.shape == (rows, 3)
    np.testing.assert_allclose(got, np.tanh(X[:rows]) * 2.0, rtol=1e-6)


def test_map_fn_over_a_tuple_with_other_result_dtypes():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 3], name="x")
        k = tf.placeholder(tf.int32, [None], name="k")
        sums, doubled = tf.map_fn(lambda e: (tf.reduce_sum(e[0]), e[1] * 2), (x, k), dtype=(tf.float32, tf.int32))
        got_sums, got_doubled = _run([sums, doubled], {x: X, k: np.array([1, 2, 3, 4], np.int32)})
    np.testing.assert_allclose(got_sums, X.sum(axis=1), rtol=1e-6)
    np.testing.assert_array_equal(got_doubled, [2, 4, 6, 8])
    assert got_doubled.dtype == np.int32


def test_scan_forward_backward_and_with_an_initializer():
    with tf.Graph().as_default():
        v = tf.placeholder(tf.float32, [5], name="v")
        fetches = [tf.scan(lambda a, e: a + e, v), tf.scan(lambda a, e: a + e, v, reverse=True),
                   tf.scan(lambda a, e: a * e, v, initializer=tf.constant(1.0))]
        running, backward, products = _run(fetches, {v: V})
    np.testing.assert_array_equal(running, np.cumsum(V))
    np.testing.assert_array_equal(backward, np.cumsum(V[::-1])[::-1])
    np.testing.assert_array_equal(products, np.cumprod(V))


def test_folds_left_and_right():
    with tf.Graph().as_default():
        v = tf.placeholder(tf.float32, [5], name="v")
        x = tf.placeholder(tf.float32, [None, 3], name="x")
        fetches = [tf.foldl(lambda a, e: a * 10.0 + e, v), tf.foldr(lambda a, e: a * 10.0 + e, v),
                   tf.foldl(lambda a, r: a + r, x, initializer=tf.zeros([3]))]
        left, right, rows = _run(fetches, {v: V, x: X})
    assert left == pytest.approx(12345.0)
    assert right == pytest.approx(54321.0)
    np.testing.assert_allclose(rows, X.sum(axis=0), rtol=1e-6)


def test_reading_an_array_nothing_was_written_to_is_refused_naming_the_op():
    with tf.Graph().as_default():
        ta = tf.TensorArray(tf.float32, size=3)
        value = ta.read(1, name="early_read")
        with pytest.raises(UnsupportedOpsError, match="'early_read' .*reads a TensorArray nothing was written to"):
            _run(value, {})
