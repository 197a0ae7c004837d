"""tf.random_shuffle and tf.multinomial / tf.random.categorical: graph structure as TF
1.15 builds it, permutations, seeding (same seeds: same stream in every session) and the
sampled distribution."""
import numpy as np

import tfc.compat.v1 as tf


def _runs(build, runs=3, graph_seed=5):
    with tf.Graph().as_default():
        tf.set_random_seed(graph_seed)
        t = build()
        with tf.Session() as sess:
            return [sess.run(t) for _ in range(runs)]


def test_random_shuffle_is_a_seeded_permutation_of_rows():
    value = np.arange(40, dtype=np.float32).reshape(10, 4)

    def build():
        return tf.random_shuffle(tf.constant(value), seed=3)

    first, second = _runs(build), _runs(build)
    for a, b in zip(first, second):
        np.testing.assert_array_equal(a, b)
    for out in first:
        assert sorted(out[:, 0].tolist()) == value[:, 0].tolist()
        np.testing.assert_array_equal(out, value[(out[:, 0] // 4).astype(int)])
    assert not all(np.array_equal(first[0], o) for o in first[1:])  # the state advances
    assert not np.array_equal(first[0], value)
    other = _runs(lambda: tf.random_shuffle(tf.constant(value), seed=4), runs=1)[0]
    assert not np.array_equal(other, first[0])


def test_random_shuffle_graph_and_small_inputs():
    with tf.Graph().as_default():
        t = tf.random_shuffle(tf.constant([1, 2, 3]), seed=1, name="shuf")
        assert t.op.name == "shuf" and t.op.type == "RandomShuffle"
        assert (t.op.get_attr("seed"), t.op.get_attr("seed2")) == (87654321, 1)
        scalar = tf.random.shuffle(tf.constant(7))
        single = tf.random_shuffle(tf.constant([[1, 2]]))
        with tf.Session() as sess:
            assert sorted(sess.run(t).tolist()) == [1, 2, 3]
            assert sess.run(scalar) == 7
            np.testing.assert_array_equal(sess.run(single), [[1, 2]])


def test_multinomial_graph():
    with tf.Graph().as_default():
        m = tf.multinomial(tf.zeros([2, 3]), 4, seed=2)
        c = tf.random.categorical(tf.zeros([2, 3]), 5, dtype=tf.int32)
        assert m.op.name == "multinomial/Multinomial" and m.dtype == tf.int64 and m.shape.as_list() == [2, 4]
        assert c.op.name == "categorical/Multinomial" and c.dtype == tf.int32 and c.shape.as_list() == [2, 5]


def test_multinomial_distribution_and_seeding():
    probs = np.array([[0.1, 0.2, 0.3, 0.4], [0.7, 0.0, 0.05, 0.25]])
    n = 20000

    def build():
        with np.errstate(divide="ignore"):
            logits = tf.constant(np.log(probs).astype(np.float32) + 3.0)
        return tf.multinomial(logits, n, seed=11)

    first, second = _runs(build, runs=2), _runs(build, runs=2)
    for a, b in zip(first, second):
        np.testing.assert_array_equal(a, b)
    assert not np.array_equal(first[0], first[1])
    samples = first[0]
    assert samples.shape == (2, n) and samples.dtype == np.int64
    assert samples.min() >= 0 and samples.max() < 4
    assert not np.any(samples[1] == 1)  # probability 0 (logit -inf)
    for row in range(2):
        freq = np.bincount(samples[row], minlength=4) / n
        np.testing.assert_allclose(freq, probs[row], atol=0.015)


def test_pinned_streams():
    """tfc's Philox streams for fixed seeds (not TF's kernels' streams): a change here
    changes every seeded program's results."""
    with tf.Graph().as_default():
        tf.set_random_seed(5)
        a = tf.random_shuffle(tf.range(8), seed=3)
        b = tf.multinomial(tf.zeros([1, 4]), 10, seed=3)
        with tf.Session() as sess:
            shuffled, sampled = sess.run([a, b])
    np.testing.assert_array_equal(shuffled, [6, 2, 5, 3, 1, 4, 7, 0])
    np.testing.assert_array_equal(sampled, [[0, 3, 2, 2, 1, 1, 0, 2, 2, 0]])
