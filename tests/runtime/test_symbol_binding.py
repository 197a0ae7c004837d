"""Output shapes computed from many shape symbols (s1, s3, s10...): the fuzzer's find."""
from __future__ import annotations

import numpy as np

import tfc.compat.v1 as tf
from tfc.runtime.executable import _rename_symbols


def test_symbols_are_renamed_at_once_not_one_after_another():
    names = {"s1": "s0", "s3": "s1", "s10": "s3"}
    assert _rename_symbols("s10+s3*s1", names) == "s3+s1*s0"
    assert _rename_symbols("(s10-1)//2", {"s10": "v[3]"}) == "(v[3]-1)//2"


def test_a_second_shape_pattern_gets_its_own_output_shape():
    # The second run recompiles (other dims are 1) with symbols s1, s3, s7, s10, s11, s12;
    # the concat's batch dim s10 was read as s3 and then as s1: shape (3, 7, 3, 3).
    with tf.Graph().as_default():
        a = tf.placeholder(tf.float32, [None, None, 4])
        b = tf.placeholder(tf.float32, [None, None, 4])
        biggest = tf.maximum(a, b)
        parts = [tf.placeholder(tf.float32, [None, None, None, None]) for _ in range(3)]
        joined = tf.concat(parts, 1)
        with tf.Session() as sess:
            for batch, rows, sizes, width in ((3, 4, (3, 1, 4), 1), (3, 1, (3, 3, 1), 3)):
                feeds = {a: np.ones((batch, rows, 4), np.float32), b: np.full((batch, rows, 4), 2, np.float32)}
                pieces = [np.full((5 if width == 1 else 2, n, 3, width), i, np.float32) for i, n in enumerate(sizes)]
                feeds.update(zip(parts, pieces))
                got_joined, got_biggest = sess.run([joined, biggest], feeds)
                np.testing.assert_array_equal(got_joined, np.concatenate(pieces, 1))
                np.testing.assert_array_equal(got_biggest, np.full((batch, rows, 4), 2, np.float32))
