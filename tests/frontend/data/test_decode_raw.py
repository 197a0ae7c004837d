"""tf.decode_raw (DecodeRaw, tfc/frontend/data/parsing.py) with TF 2.21's values and kernel
messages, and string constants that keep their trailing NUL bytes (numpy's fixed-width
strings drop them: raw bytes ending in zeros were cut short)."""
from __future__ import annotations

import numpy as np
import pytest

import tfc.compat.v1 as tf


def _run(value, out_type, **kwargs):
    with tf.Graph().as_default():
        decoded = tf.decode_raw(tf.constant(value), out_type, **kwargs)
        with tf.Session() as sess:
            return decoded, sess.run(decoded)


def test_values_and_shapes_as_tensorflow():
    decoded, value = _run([[np.array([1, 2], "<i4").tobytes()], [np.array([3, 4], "<i4").tobytes()]], tf.int32)
    assert (decoded.op.name, decoded.op.type, decoded.shape.as_list()) == ("DecodeRaw", "DecodeRaw", [2, 1, None])
    assert value.tolist() == [[[1, 2]], [[3, 4]]]  # the bytes end in NULs
    assert _run(np.array([1, 258], ">i2").tobytes(), tf.int16, little_endian=False)[1].tolist() == [1, 258]
    assert _run([b"abc", b"xyz"], tf.uint8)[1].tolist() == [[97, 98, 99], [120, 121, 122]]


@pytest.mark.parametrize("value, out_type, message", [
    (b"abcde", tf.float32, "Input to DecodeRaw has length 5 that is not a multiple of 4, the size of float"),
    ([b"abcd", b"ab"], tf.uint8, "DecodeRaw requires input strings to all be the same size, but element 1 has "
                                 "size 4 != 2"),
])
def test_errors_are_tensorflows(value, out_type, message):
    with pytest.raises(tf.errors.InvalidArgumentError) as info:
        _run(value, out_type)
    assert info.value.message.split("\n")[0] == message


def test_string_constants_keep_trailing_nul_bytes():
    with tf.Graph().as_default():
        strings = tf.constant([b"ab\x00\x00", b"c\x00"])
        scalar = tf.constant(b"xy\x00")
        with tf.Session() as sess:
            got = sess.run([strings, scalar])
    assert got[0].tolist() == [b"ab\x00\x00", b"c\x00"] and got[1] == b"xy\x00"
