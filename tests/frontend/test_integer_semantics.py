"""TF's integer semantics (values and messages checked against TensorFlow 2.21's
tf.compat.v1): division by zero and negative integer powers raise, integer means do not
overflow, argmax/argmin of an empty axis raises, sign(NaN) is NaN. Each holds for fed
(symbolic) shapes, static shapes and constants: a bad constant operation raises when the
graph runs, as in TF, not when it is compiled.
"""
import numpy as np
import pytest

import tfc.compat.v1 as tf
from tfc.frontend.errors import InternalError, InvalidArgumentError
from tfc.frontend.op_helper import apply_op

DIVISION = "Integer division by zero"
TRUNCATE = "Unexpected error in binary operator (only integer div and mod should have errors)"
POWER = "Integers to negative integer powers are not allowed"


def run(fetches, feeds=None):
    with tf.Session() as sess:
        return sess.run(fetches, feeds)


def raises(error, message, fetches, feeds=None):
    with pytest.raises(error) as caught:
        run(fetches, feeds)
    assert caught.value.message.rsplit(" (in '", 1)[0] == message


# -- division and remainder -----------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [tf.int32, tf.int64, tf.uint8])
def test_integer_division_by_zero_raises(dtype):
    with tf.Graph().as_default():
        x = tf.placeholder(dtype, [None])
        y = tf.placeholder(dtype, [None])
        feeds = {x: [7, 8], y: [2, 0]}
        raises(InvalidArgumentError, DIVISION, x // y, feeds)  # was: -1
        if dtype != tf.uint8:  # FloorMod takes no uint8 (TF 1.x)
            raises(InvalidArgumentError, DIVISION, x % y, feeds)  # was: x
        raises(InvalidArgumentError, DIVISION, apply_op("Div", [x, y], {}).outputs[0], feeds)
        np.testing.assert_array_equal(run(x // y, {x: [7, 8], y: [2, 3]}), [3, 2])


def test_truncating_division_by_zero_is_tfs_internal_error():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.int32, [None])
        y = tf.placeholder(tf.int32, [None])
        raises(InternalError, TRUNCATE, tf.truncatediv(x, y), {x: [7], y: [0]})
        raises(InternalError, TRUNCATE, tf.truncatemod(x, y), {x: [7], y: [0]})


def test_division_by_a_zero_constant_raises_when_run():
    with tf.Graph().as_default():
        quotient = tf.constant([7]) // tf.constant([0])
        remainder = tf.constant(7) % tf.constant(0)
        x = tf.placeholder(tf.int32, [None])
        by_zero = x // 0
        raises(InvalidArgumentError, DIVISION, quotient)
        raises(InvalidArgumentError, DIVISION, remainder)
        raises(InvalidArgumentError, DIVISION, by_zero, {x: [1]})
        assert run(by_zero, {x: np.zeros(0, np.int32)}).shape == (0,)  # no element to divide


def test_division_checks_only_divisors_that_are_used():
    """TF computes no element of an empty result, so nothing divides by the zero."""
    with tf.Graph().as_default():
        x = tf.placeholder(tf.int32, [None])
        y = tf.placeholder(tf.int32, [None])
        assert run(x // y, {x: np.zeros(0, np.int32), y: [0]}).shape == (0,)
        assert run(x % y, {x: np.zeros(0, np.int32), y: np.zeros(0, np.int32)}).shape == (0,)
        raises(InvalidArgumentError, DIVISION, x // y, {x: [5, 6], y: [0]})


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_int_min_divided_by_minus_one(dtype):
    low = np.iinfo(dtype).min
    with tf.Graph().as_default():
        x = tf.placeholder(tf.as_dtype(dtype), [None])
        y = tf.placeholder(tf.as_dtype(dtype), [None])
        out = run([x // y, x % y, tf.truncatediv(x, y), tf.truncatemod(x, y)], {x: [low], y: [-1]})
    for value, expected in zip(out, [low, 0, low, 0]):
        np.testing.assert_array_equal(value, np.array([expected], dtype))


# -- powers ----------------------------------------------------------------------------------------
def test_integer_to_a_negative_power_raises():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.int32, [None])
        e = tf.placeholder(tf.int32, [None])
        raises(InvalidArgumentError, POWER, tf.pow(x, e), {x: [2, 1], e: [1, -1]})  # was: 0 and 1
        raises(InvalidArgumentError, POWER, tf.pow(x, -1), {x: [0]})
        raises(InvalidArgumentError, POWER, tf.pow(tf.constant([2]), tf.constant([-1])))
        assert run(tf.pow(x, -1), {x: np.zeros(0, np.int32)}).shape == (0,)
        np.testing.assert_array_equal(run(tf.pow(x, e), {x: [2, -3], e: [10, 3]}), [1024, -27])


# -- means ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype, values, mean", [
    (np.uint8, [200, 200], 200),  # was 72: the sum wrapped in uint8
    (np.int32, [2 ** 31 - 1] * 2, 2 ** 31 - 1),  # was -1
    (np.int32, [-2 ** 31] * 2, -2 ** 31),
    (np.int32, [7, -8], 0),  # truncates toward zero
    (np.int8, [-128, -128, 1], -85),
    (np.int16, [30000, 30000], 30000),
    (np.int64, [2 ** 63 - 1] * 2, -1),  # int64 sums wrap in TF too
    (np.int64, [-2 ** 63] * 2, 0),
])
def test_integer_mean_does_not_overflow(dtype, values, mean):
    with tf.Graph().as_default():
        x = tf.placeholder(tf.as_dtype(dtype), [None])
        fed = run(tf.reduce_mean(x), {x: np.array(values, dtype)})
        constant = run(tf.reduce_mean(tf.constant(np.array(values, dtype))))
    for value in (fed, constant):
        assert value.dtype == dtype and value == dtype(mean)


def test_integer_mean_of_no_elements_is_zero():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.int32, [None])
        rows = tf.placeholder(tf.int32, [2, None])
        static = tf.placeholder(tf.int32, [0])
        assert run(tf.reduce_mean(x), {x: np.zeros(0, np.int32)}) == 0  # was -1
        np.testing.assert_array_equal(run(tf.reduce_mean(rows, axis=1), {rows: np.zeros((2, 0), np.int32)}), [0, 0])
        assert run(tf.reduce_mean(static), {static: np.zeros(0, np.int32)}) == 0
        assert run(tf.reduce_mean(tf.zeros([0], tf.int32))) == 0
        assert np.isnan(run(tf.reduce_mean(tf.placeholder_with_default(np.zeros(0, np.float32), [None]))))


# -- argmax / argmin ---------------------------------------------------------------------------------
@pytest.mark.parametrize("fn", [tf.argmax, tf.argmin])
def test_argmax_of_an_empty_axis_raises(fn):
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None])
        m = tf.placeholder(tf.float32, [None, None])
        static = tf.placeholder(tf.float32, [0])
        raises(InvalidArgumentError, "Reduction axis 0 is empty in shape [0]", fn(x, 0),
               {x: np.zeros(0, np.float32)})  # was: 0
        raises(InvalidArgumentError, "Reduction axis 1 is empty in shape [3,0]", fn(m, 1),
               {m: np.zeros((3, 0), np.float32)})
        raises(InvalidArgumentError, "Reduction axis 0 is empty in shape [0,3]", fn(m, 0),
               {m: np.zeros((0, 3), np.float32)})
        raises(InvalidArgumentError, "Reduction axis 0 is empty in shape [0]", fn(static, 0),
               {static: np.zeros(0, np.float32)})
        raises(InvalidArgumentError, "Reduction axis 0 is empty in shape [0]", fn(tf.zeros([0], tf.int32), 0))
        assert run(fn(m, 1), {m: np.zeros((0, 3), np.float32)}).shape == (0,)  # an empty result is fine
        assert run(fn(x, 0, output_type=tf.int32), {x: [1.0, 3.0, 2.0]}) == (1 if fn is tf.argmax else 0)


# -- sign -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_sign_of_nan_is_nan_and_zeros_are_positive(dtype):
    with tf.Graph().as_default():
        x = tf.placeholder(tf.as_dtype(dtype), [None])
        out = run(tf.sign(x), {x: np.array([np.nan, -0.0, 0.0, -np.inf, 1e-30], dtype)})
    np.testing.assert_array_equal(out, np.array([np.nan, 0, 0, -1, 1], dtype))
    assert not np.signbit(out[1])
