"""``map(..., num_parallel_calls=n)``: the function runs on a pool of n threads (pieces of
the input in flight at once), results come out in input order, an element's error comes
out in its place and the elements after it still come; graph mode (eager mode's are in
tests/frontend/eager/test_eager_data.py). Expected values from numpy."""
import threading

import numpy as np
import pytest

import tfc.compat.v1 as tf
from tfc.frontend.data.dataset_ops import functions_of

from conftest import drain

W = (np.random.RandomState(0).rand(8, 8).astype(np.float32) - 0.5)
IMAGES = np.random.RandomState(1).rand(37, 8, 8).astype(np.float32)


def _work(tf_module, x):
    """Not vectorisable (matmul): one compiled call per element."""
    return tf_module.reduce_sum(tf_module.tanh(tf_module.matmul(x, W)), axis=1)


def _expected():
    return np.tanh(IMAGES @ W).sum(axis=2)


@pytest.mark.parametrize("calls", [None, 1, 3, tf.data.experimental.AUTOTUNE])
def test_order_and_values_per_element(calls):
    with tf.Graph().as_default():
        ds = tf.data.Dataset.from_tensor_slices(IMAGES).map(lambda x: _work(tf, x), num_parallel_calls=calls)
        one_by_one = np.stack([e[0] for e in drain(ds)])
        batched = np.concatenate([e[0] for e in drain(ds.batch(5))])
    np.testing.assert_allclose(one_by_one, _expected(), rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(batched, one_by_one)


def test_runs_on_the_pool_threads():
    with tf.Graph().as_default() as graph:
        ds = tf.data.Dataset.from_tensor_slices(IMAGES).map(lambda x: _work(tf, x), num_parallel_calls=4).batch(16)
        (function,) = [f for f in functions_of(graph).values() if hasattr(f, "call")]
        threads, original = set(), function.call

        def recording(components, captured):
            threads.add(threading.current_thread().name)
            return original(components, captured)

        function.call = recording
        got = np.concatenate([e[0] for e in drain(ds)])
    np.testing.assert_allclose(got, _expected(), rtol=1e-5, atol=1e-6)
    assert threads and all(name.startswith("tfc-data-map") for name in threads)
    assert len(threads) >= 2


def test_vectorised_function_with_parallel_calls_and_a_constant_output():
    with tf.Graph().as_default():
        ds = tf.data.Dataset.range(23).map(lambda x: (x * x, tf.constant(7)), num_parallel_calls=4).batch(10)
        got = drain(ds)
    assert [e[0].tolist() for e in got] == [[i * i for i in range(k, min(k + 10, 23))] for k in (0, 10, 20)]
    assert [e[1].tolist() for e in got] == [[7] * 10, [7] * 10, [7] * 3]


def test_an_error_comes_out_in_its_place():
    with tf.Graph().as_default():
        values = np.array([1., 2., 0., 4., 5.], np.float32)
        ds = tf.data.Dataset.from_tensor_slices(values).map(
            lambda x: tf.debugging.check_numerics(1.0 / x, "inverse"), num_parallel_calls=2)
        next_element = ds.make_one_shot_iterator().get_next()
        with tf.Session() as sess:
            assert sess.run(next_element) == 1.0
            assert sess.run(next_element) == 0.5
            with pytest.raises(tf.errors.InvalidArgumentError, match="inverse : Tensor had Inf values"):
                sess.run(next_element)
            assert sess.run(next_element) == 0.25
            assert sess.run(next_element) == 0.2
            with pytest.raises(tf.errors.OutOfRangeError):
                sess.run(next_element)


def test_num_parallel_calls_must_be_positive_or_autotune():
    with tf.Graph().as_default():
        ds = tf.data.Dataset.range(3).map(lambda x: x, num_parallel_calls=0)
        assert ds._variant_tensor.op.type == "ParallelMapDataset"
        with pytest.raises(tf.errors.InvalidArgumentError, match="num_parallel_calls must be greater than zero"):
            drain(ds)
