"""Ops with data-dependent output sizes on compiled kernels (tfc/frontend/ops/bounded_kernels.py):
values against numpy/TF semantics, one program per element type for every size, and the
graph ops (tf.where, tf.unique, tf.dynamic_partition, tf.setdiff1d) running on them."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import tfc.compat.v1 as tf
from tfc import ir
from tfc.frontend.ops import bounded_kernels as bk

DTYPES = [np.float32, np.float64, np.int32, np.int64, np.int8, np.uint8, np.bool_, np.float16]


def _values(dtype):
    if np.dtype(dtype).kind == "f":
        return st.sampled_from([0.0, -0.0, 1.0, -2.5, 3.0, np.nan, np.inf])
    if np.dtype(dtype).kind == "b":
        return st.booleans()
    return st.integers(0, 4)


def _reference_unique(x):
    """TF's Unique: a hash map keyed by value (so -0.0 == 0.0 and every NaN is new)."""
    values, index, counts, seen = [], [], [], {}
    for v in x.tolist():
        key = v + 0.0 if isinstance(v, float) else v
        if isinstance(v, float) and v != v:
            key = object()
        if key not in seen:
            seen[key] = len(values)
            values.append(v)
            counts.append(0)
        index.append(seen[key])
        counts[seen[key]] += 1
    return np.array(values, dtype=x.dtype), np.array(index, np.int64), np.array(counts, np.int64)


@settings(max_examples=30, deadline=None)
@given(data=st.data(), dtype=st.sampled_from(DTYPES))
def test_where_indices_match_argwhere(data, dtype):
    shape = data.draw(hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=5))
    x = data.draw(hnp.arrays(dtype, shape, elements=_values(dtype)))
    got = bk.where_indices(x)
    expected = np.argwhere(x != 0).astype(np.int64)
    assert got.dtype == np.int64 and got.shape == expected.shape
    np.testing.assert_array_equal(got, expected)


@settings(max_examples=30, deadline=None)
@given(data=st.data(), dtype=st.sampled_from(DTYPES[:-2]))
def test_unique_matches_tf_semantics(data, dtype):
    x = data.draw(hnp.arrays(dtype, data.draw(st.integers(0, 40)), elements=_values(dtype)))
    values, index, counts = bk.unique(x)
    want_values, want_index, want_counts = _reference_unique(x)
    np.testing.assert_array_equal(values, want_values)
    np.testing.assert_array_equal(index, want_index)
    np.testing.assert_array_equal(counts, want_counts)


@settings(max_examples=30, deadline=None)
@given(data=st.data(), dtype=st.sampled_from([np.float32, np.int32, np.int64]))
def test_setdiff1d_matches_tf_semantics(data, dtype):
    x = data.draw(hnp.arrays(dtype, data.draw(st.integers(0, 30)), elements=_values(dtype)))
    y = data.draw(hnp.arrays(dtype, data.draw(st.integers(0, 10)), elements=_values(dtype)))
    values, positions = bk.setdiff1d(x, y)
    keep = [i for i, v in enumerate(x.tolist()) if not any(v == w for w in y.tolist())]
    np.testing.assert_array_equal(positions, np.array(keep, np.int64))
    np.testing.assert_array_equal(values, x[keep])


@settings(max_examples=20, deadline=None)
@given(data=st.data(), count=st.integers(1, 4))
def test_dynamic_partition_matches_numpy(data, count):
    rows = data.draw(st.integers(0, 12))
    partitions = data.draw(hnp.arrays(np.int32, rows, elements=st.integers(0, count - 1)))
    values = np.arange(rows * 6, dtype=np.float32).reshape(rows, 2, 3)
    parts, placed = bk.dynamic_partition(values, partitions, count)
    assert placed == rows
    for p in range(count):
        np.testing.assert_array_equal(parts[p], values[partitions == p])
        assert parts[p].shape == (int(np.sum(partitions == p)), 2, 3)


def test_one_program_serves_every_size():
    bk.clear_cache()
    for size in (5, 17, 300, 2):
        x = np.arange(size, dtype=np.int32) % 3
        np.testing.assert_array_equal(bk.where_indices(x), np.argwhere(x != 0))
        np.testing.assert_array_equal(bk.unique(x)[0], [0, 1, 2][:min(size, 3)])
    assert sorted(key[0] for key in bk._KERNELS) == ["unique", "where"]


def test_programs_are_compiled_scans():
    bk.clear_cache()
    bk.where_indices(np.array([[1, 0], [0, 2]], np.int32))
    bk.unique(np.array([3, 1, 3], np.int64))
    printed = {key[0]: ir.print_module(kernel.module) for key, kernel in bk._KERNELS.items()}
    assert "compact" in printed["where"] and "first_occurrence" not in printed["where"]
    assert "first_occurrence" in printed["unique"] and "compact" in printed["unique"]


def test_graph_ops_on_fed_values():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None])
        masked = tf.boolean_mask(x, x > 0)
        total = tf.reduce_sum(masked * 2.0)
        y, idx = tf.unique(tf.cast(x, tf.int32))
        parts = tf.dynamic_partition(x, tf.cast(x > 0, tf.int32), 2)
        diff, diff_idx = tf.setdiff1d(tf.cast(x, tf.int32), tf.constant([1], tf.int32))
        with tf.Session() as sess:
            got = sess.run([masked, total, y, idx, parts, diff, diff_idx],
                           {x: np.array([1.0, -2.0, 3.0, 1.0, 0.0], np.float32)})
    np.testing.assert_array_equal(got[0], [1.0, 3.0, 1.0])
    assert got[1] == 10.0
    np.testing.assert_array_equal(got[2], [1, -2, 3, 0])
    np.testing.assert_array_equal(got[3], [0, 1, 2, 0, 3])
    np.testing.assert_array_equal(got[4][0], [-2.0, 0.0])
    np.testing.assert_array_equal(got[4][1], [1.0, 3.0, 1.0])
    np.testing.assert_array_equal(got[5], [-2, 3, 0])
    np.testing.assert_array_equal(got[6], [1, 2, 4])


def test_dynamic_partition_bad_index_is_tf_error():
    with tf.Graph().as_default():
        p = tf.placeholder(tf.int32, [None])
        parts = tf.dynamic_partition(tf.constant([1.0, 2.0, 3.0]), p, 2)
        with tf.Session() as sess:
            with pytest.raises(tf.errors.InvalidArgumentError, match=r"partitions\[2\] = 5 is not in \[0, 2\)"):
                sess.run(parts, {p: [0, 1, 5]})


def test_string_unique_stays_on_host():
    with tf.Graph().as_default():
        words = tf.placeholder(tf.string, [None])
        y, idx = tf.unique(words)
        with tf.Session() as sess:
            got_y, got_idx = sess.run([y, idx], {words: [b"b", b"a", b"b"]})
    assert list(got_y) == [b"b", b"a"] and list(got_idx) == [0, 1, 0]


def test_where_inside_a_loop_is_refused_with_the_reason():
    from tfc.passes.lower import UnsupportedOpsError

    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None])
        p = tf.placeholder(tf.bool, [])
        out = tf.cond(p, lambda: tf.reduce_sum(tf.boolean_mask(x, x > 0)), lambda: tf.constant(0.0))
        with tf.Session() as sess:
            with pytest.raises(UnsupportedOpsError, match=r"'cond/boolean_mask/Where' \(Where\) at .*: Where \(tf.where "
                                                          r"with only a condition\) inside a tf.cond or tf.while_loop"):
                sess.run(out, {x: [1.0, -1.0], p: True})
