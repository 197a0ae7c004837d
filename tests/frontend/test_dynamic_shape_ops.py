"""Ops whose output size depends on the values (tfc/frontend/ops/dynamic_shape_ops.py,
tf.where, tf.setdiff1d): TF's values, dtypes and static shapes, and compiled ops consuming
them (the step runs in stages)."""
import numpy as np
import pytest

import tfc.compat.v1 as tf


@pytest.fixture(autouse=True)
def _graph():
    with tf.Graph().as_default():
        yield


def test_unique_keeps_the_order_of_first_occurrence():
    x = tf.placeholder(tf.int64, [None])
    y, idx = tf.unique(x)
    y2, idx2, count = tf.unique_with_counts(x, out_idx=tf.int64)
    assert (y.shape.as_list(), idx.shape.as_list(), idx.dtype, idx2.dtype) == ([None], [None], tf.int32, tf.int64)
    assert (y.op.type, y2.op.type, y.op.name) == ("Unique", "UniqueWithCounts", "Unique")
    with tf.Session() as sess:
        got = sess.run([y, idx, y2, count], {x: [8, 1, 8, 4, 4, 4, 7, 1]})
    assert [g.tolist() for g in got] == [[8, 1, 4, 7], [0, 1, 0, 2, 2, 2, 3, 1], [8, 1, 4, 7], [2, 2, 3, 1]]


def test_dynamic_partition_and_its_errors():
    data = tf.placeholder(tf.float32, [None, 2])
    ids = tf.placeholder(tf.int32, [None])
    parts = tf.dynamic_partition(data, ids, 3)
    assert [p.shape.as_list() for p in parts] == [[None, 2]] * 3
    with tf.Session() as sess:
        got = sess.run(parts, {data: np.arange(8, dtype=np.float32).reshape(4, 2), ids: [2, 0, 2, 1]})
        assert [g.tolist() for g in got] == [[[2.0, 3.0]], [[6.0, 7.0]], [[0.0, 1.0], [4.0, 5.0]]]
        with pytest.raises(tf.errors.InvalidArgumentError, match=r"partitions\[1\] = 3 is not in \[0, 3\)"):
            sess.run(parts, {data: np.zeros((2, 2), np.float32), ids: [0, 3]})


def test_boolean_mask_values_shapes_and_gradient():
    x = tf.placeholder(tf.float32, [None, 3])
    mask = tf.placeholder(tf.bool, [None])
    rows = tf.boolean_mask(x, mask)
    columns = tf.boolean_mask(x, tf.constant([True, False, True]), axis=1)
    cells = tf.boolean_mask(x, x > 1.0)
    # TF's static shapes: the gather along axis 1 of a mask's indices leaves [?, ?]
    assert (rows.shape.as_list(), columns.shape.as_list(), cells.shape.as_list()) == ([None, 3], [None, None], [None])
    grad = tf.gradients(tf.reduce_sum(tf.square(rows)), x)[0]
    xv = np.arange(12, dtype=np.float32).reshape(4, 3) / 4
    mv = np.array([True, False, False, True])
    with tf.Session() as sess:
        got = sess.run([rows, columns, cells, grad], {x: xv, mask: mv})
    np.testing.assert_array_equal(got[0], xv[mv])
    np.testing.assert_array_equal(got[1], xv[:, [0, 2]])
    np.testing.assert_array_equal(got[2], xv[xv > 1.0])
    np.testing.assert_array_equal(got[3], np.where(mv[:, None], 2 * xv, 0))
    with pytest.raises(ValueError, match="mask cannot be scalar"):
        tf.boolean_mask(x, True)


def test_setdiff1d_of_fed_values():
    x = tf.placeholder(tf.int32, [None])
    out, idx = tf.setdiff1d(x, [1, 3, 5])
    with tf.Session() as sess:
        got = sess.run([out, idx, tf.reduce_sum(out)], {x: [1, 2, 3, 4, 5, 6]})
    assert [got[0].tolist(), got[1].tolist(), int(got[2])] == [[2, 4, 6], [1, 3, 5], 12]
