"""``interleave(..., num_parallel_calls=n, deterministic=...)`` and
``tf.data.experimental.parallel_interleave``: the input elements' datasets read on a
thread pool, in TensorFlow 2.21's order (tests/fixtures/data_extra.json, made by
tests/fixtures/make_tf_data_extra.py), TF's argument errors, elements really computed
at the same time, an element's error raised in its place."""
import json
import os
import threading

import numpy as np
import pytest

import tfc.compat.v1 as tf
from tfc.frontend.eager import context

from conftest import drain

FIXTURE = os.path.join(os.path.dirname(__file__), "..", "..", "fixtures", "data_extra.json")
with open(FIXTURE) as _f:
    TF = json.load(_f)
CASES = TF["interleave"]["cases"]


def _source():
    return tf.data.Dataset.from_tensor_slices(np.array(TF["interleave"]["lengths"], np.int64))


def _inner(n):
    return tf.data.Dataset.range(n).map(lambda x: x + 100 * n)


def _graph_values(ds) -> list:
    return [int(e[0]) for e in drain(ds)]


@pytest.mark.parametrize("name", sorted(CASES))
def test_parallel_order_matches_tensorflow_graph(name):
    case = CASES[name]
    cycle, block, calls = case["cycle_length"], case["block_length"], case["num_parallel_calls"]
    assert case["parallel"] == case["sequential"] == case["graph_parallel"]
    with tf.Graph().as_default() as graph:
        ds = _source().interleave(_inner, cycle_length=cycle, block_length=block, num_parallel_calls=calls)
        assert [op.type for op in graph.get_operations() if op.type.endswith(("Dataset", "DatasetV2"))][-1] == \
            "ParallelInterleaveDatasetV2"
        assert _graph_values(ds) == case["parallel"]
    with tf.Graph().as_default() as graph:
        ds = _source().apply(tf.data.experimental.parallel_interleave(_inner, cycle_length=cycle, block_length=block))
        assert graph.get_operations()[-1].type == "ParallelInterleaveDataset"
        assert _graph_values(ds) == case["legacy"]
    with tf.Graph().as_default():
        sloppy = _graph_values(_source().interleave(_inner, cycle_length=cycle, block_length=block,
                                                    num_parallel_calls=calls, deterministic=False))
        legacy_sloppy = _graph_values(_source().apply(tf.data.experimental.parallel_interleave(
            _inner, cycle_length=cycle, block_length=block, sloppy=True)))
    assert sorted(sloppy) == case["sorted_sloppy"]
    assert sorted(legacy_sloppy) == case["sorted_legacy_sloppy"]
    for values in (sloppy, legacy_sloppy):  # each input element's own elements stay in order
        for n in set(TF["interleave"]["lengths"]):
            own = [v for v in values if v // 100 == n]
            assert own == sorted(own)


@pytest.mark.parametrize("name", ["c3_b2_p3", "c4_b3_p2"])
def test_parallel_order_matches_tensorflow_eager(name):
    case = CASES[name]
    with context.eager_mode():
        ds = _source().interleave(_inner, cycle_length=case["cycle_length"], block_length=case["block_length"],
                                  num_parallel_calls=case["num_parallel_calls"])
        assert [int(v) for v in ds] == case["parallel"]
        assert [int(v) for v in ds] == case["parallel"]  # a second pass: the same order


@pytest.mark.parametrize("name", sorted(TF["interleave_errors"]))
def test_argument_errors_match_tensorflow(name):
    case = TF["interleave_errors"][name]
    with tf.Graph().as_default():
        scope = {"tf": tf, "np": np}
        exec(case["code"], scope)
        nxt = tf.data.make_one_shot_iterator(scope["ds"]).get_next()
        with tf.Session() as sess:
            with pytest.raises(getattr(tf.errors, case["error"])) as info:
                sess.run(nxt)
    assert info.value.message == case["message"]


def test_cycle_elements_are_read_at_the_same_time():
    """Three elements' generators meet at a barrier: it breaks (after 10 s) unless all
    three run at once on the pool; the order is still the sequential one."""
    barrier = threading.Barrier(3, timeout=10)
    threads = set()

    def generator():
        threads.add(threading.current_thread().name)
        barrier.wait()
        yield 7

    for deterministic in (None, False):
        barrier.reset()
        threads.clear()
        with tf.Graph().as_default():
            ds = tf.data.Dataset.range(3).interleave(
                lambda x: tf.data.Dataset.from_generator(generator, tf.int64).map(lambda g: g * 10 + x),
                cycle_length=3, num_parallel_calls=3, deterministic=deterministic)
            values = _graph_values(ds)
        assert (values if deterministic is None else sorted(values)) == [70, 71, 72]
        assert len(threads) == 3 and all(t.startswith("tfc-data-interleave") for t in threads)


def test_element_error_comes_in_its_place():
    with tf.Graph().as_default():
        ds = tf.data.Dataset.from_tensor_slices(np.array([1.0, 2.0, 0.0, 4.0], np.float32)).interleave(
            lambda x: tf.data.Dataset.from_tensors(x).map(lambda v: tf.debugging.check_numerics(1.0 / v, "inverse")),
            cycle_length=2, num_parallel_calls=2)
        nxt = tf.data.make_one_shot_iterator(ds).get_next()
        with tf.Session() as sess:
            assert sess.run(nxt) == 1.0 and sess.run(nxt) == 0.5
            with pytest.raises(tf.errors.InvalidArgumentError, match="inverse"):
                sess.run(nxt)


def test_closing_mid_pass_stops_the_pool():
    """Re-initialising the iterator after a few elements closes the pass: its pool is
    shut down, and the new pass starts from the first element."""
    with tf.Graph().as_default():
        ds = tf.data.Dataset.range(50).interleave(lambda x: tf.data.Dataset.range(x), cycle_length=4,
                                                  num_parallel_calls=4)
        it = tf.data.make_initializable_iterator(ds)
        nxt = it.get_next()
        with tf.Session() as sess:
            before = threading.active_count()
            sess.run(it.initializer)
            first = [int(sess.run(nxt)) for _ in range(6)]
            sess.run(it.initializer)
            again = [int(sess.run(nxt)) for _ in range(6)]
        with tf.Graph().as_default():
            sequential = _graph_values(tf.data.Dataset.range(50).interleave(lambda x: tf.data.Dataset.range(x),
                                                                             cycle_length=4).take(6))
        assert first == again == sequential
    for _ in range(100):
        if threading.active_count() <= before + 4:  # the first pass's workers are gone
            break
        threading.Event().wait(0.02)
    assert threading.active_count() <= before + 4
