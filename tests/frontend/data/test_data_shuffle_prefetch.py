"""shuffle: deterministic given seeds (tfc's permutation, not TF's), reshuffling per epoch,
the sequential algorithm's order when run a chunk at a time; prefetch: a background
thread really runs ahead of the consumer."""
import time

import numpy as np
import pytest

import tfc.compat.v1 as tf
from tfc.frontend.data import pipeline, shuffle

from conftest import drain


def _order(make, sessions=1):
    with tf.Graph().as_default():
        element = make().make_one_shot_iterator().get_next()
        out = []
        for _ in range(sessions):
            with tf.Session() as sess:
                values = []
                try:
                    while True:
                        values.append(sess.run(element).item())
                except tf.errors.OutOfRangeError:
                    pass
                out.append(values)
    return out


def test_seeded_shuffle_is_deterministic_and_a_permutation():
    a, b = _order(lambda: tf.data.Dataset.range(50).shuffle(10, seed=4), sessions=2)
    assert a == b and sorted(a) == list(range(50)) and a != list(range(50))
    (c,) = _order(lambda: tf.data.Dataset.range(50).shuffle(10, seed=5))
    assert c != a
    for value_index, value in enumerate(a):  # an element leaves at most buffer_size - 1 places early
        assert value <= value_index + 9


def test_graph_seed_makes_shuffle_deterministic_and_no_seed_does_not():
    def seeded():
        tf.set_random_seed(7)
        return tf.data.Dataset.range(40).shuffle(40)

    assert _order(seeded) == _order(seeded)
    first, second = _order(lambda: tf.data.Dataset.range(40).shuffle(40), sessions=2)
    assert sorted(first) == sorted(second) == list(range(40)) and first != second


@pytest.mark.parametrize("reshuffle", [True, False])
def test_reshuffle_each_iteration(reshuffle):
    (values,) = _order(lambda: tf.data.Dataset.range(20).shuffle(20, seed=1, reshuffle_each_iteration=reshuffle)
                       .repeat(3))
    epochs = [values[i * 20:(i + 1) * 20] for i in range(3)]
    assert all(sorted(e) == list(range(20)) for e in epochs)
    assert (epochs[0] == epochs[1] == epochs[2]) is (not reshuffle)


def test_shuffle_graph():
    with tf.Graph().as_default() as graph:
        tf.data.Dataset.range(3).shuffle(2, seed=3)
        op = graph.get_operation_by_name("ShuffleDataset")
        assert [t.op.name for t in op.inputs] == ["RangeDataset", "buffer_size", "seed", "seed2"]
        assert op.get_attr("reshuffle_each_iteration") is True


@pytest.mark.parametrize("limit", [1, 3, 16])
def test_chunked_shuffle_is_the_sequential_algorithm(limit):
    """The vectorised exchange gives the order of TF's one-at-a-time algorithm for the same
    random draws."""
    node = shuffle.Shuffle(pipeline.TensorSlices([np.arange(60)]), 8, 11, 12, False)
    it = node.iterator()
    got = []
    while True:
        chunk = it.next_chunk(limit)
        if chunk is None:
            break
        got.extend(chunk[0].tolist())
    rng = np.random.Generator(np.random.PCG64([11, 12]))
    buffer, pending, expected = list(range(8)), list(range(8, 60)), []
    while pending:
        for slot in rng.integers(0, 8, size=min(limit, len(pending))):
            expected.append(buffer[slot])
            buffer[slot] = pending.pop(0)
    expected += [buffer[i] for i in rng.permutation(8)]
    assert got == expected


def test_shuffle_of_elements_of_different_shapes():
    with tf.Graph().as_default():
        dataset = tf.data.Dataset.from_generator(lambda: ([i] * i for i in range(12)), tf.int64,
                                                 tf.TensorShape([None])).shuffle(5, seed=2)
        got = [e[0].tolist() for e in drain(dataset)]
    assert sorted(got) == sorted([[i] * i for i in range(12)])


def test_prefetch_runs_ahead_of_the_consumer():
    produced = []

    def generator():
        for i in range(20):
            produced.append((i, time.perf_counter()))
            yield i

    with tf.Graph().as_default():
        element = tf.data.Dataset.from_generator(generator, tf.int64).prefetch(4).make_one_shot_iterator() \
            .get_next()
        with tf.Session() as sess:
            assert sess.run(element) == 0
            time.sleep(0.3)  # the step: meanwhile the prefetch thread fills its buffer
            ahead = len(produced)
            assert ahead >= 5, produced  # element 0, plus a full buffer of 4 made while we slept
            assert ahead <= 7  # bounded: the queue holds 4 (the thread waits with one more in hand)
            assert [sess.run(element) for _ in range(19)] == list(range(1, 20))


def test_without_prefetch_nothing_runs_ahead():
    produced = []

    def generator():
        for i in range(5):
            produced.append(i)
            yield i

    with tf.Graph().as_default():
        element = tf.data.Dataset.from_generator(generator, tf.int64).make_one_shot_iterator().get_next()
        with tf.Session() as sess:
            sess.run(element)
            time.sleep(0.05)
            assert produced == [0]


def test_prefetch_hands_over_errors_in_order():
    def generator():
        yield 1
        yield 2
        raise ValueError("boom")

    with tf.Graph().as_default():
        element = tf.data.Dataset.from_generator(generator, tf.int64).prefetch(2).make_one_shot_iterator() \
            .get_next()
        with tf.Session() as sess:
            assert [sess.run(element), sess.run(element)] == [1, 2]
            with pytest.raises(tf.errors.InvalidArgumentError, match="ValueError: boom"):
                sess.run(element)
            with pytest.raises(tf.errors.OutOfRangeError):
                sess.run(element)
