"""A training loop fed by a tf.data iterator (from_tensor_slices -> map -> shuffle -> batch
-> repeat -> prefetch) trains exactly like the same loop fed the same batches by feed_dict."""
import numpy as np

import tfc.compat.v1 as tf

STEPS = 12
BATCH = 16


def _data():
    rng = np.random.RandomState(0)
    features = rng.randn(100, 8).astype(np.float32)
    labels = (features[:, 0] + features[:, 1] > 0).astype(np.int64)
    return features, labels


def _pipeline(features, labels):
    # the map compiles on the prefetch thread while the session compiles the training step
    return tf.data.Dataset.from_tensor_slices((features, labels)).map(lambda x, y: (x * 1.0, y)) \
        .shuffle(64, seed=3).batch(BATCH).repeat().prefetch(2)


def _model(x, y):
    rng = np.random.RandomState(1)  # the same initial weights in both graphs
    hidden = tf.layers.dense(x, 16, tf.nn.relu, name="hidden",
                             kernel_initializer=tf.constant_initializer(rng.randn(8, 16) * 0.3))
    logits = tf.layers.dense(hidden, 2, name="logits", kernel_initializer=tf.constant_initializer(rng.randn(16, 2)))
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
    return loss, tf.train.AdamOptimizer(0.01).minimize(loss)


def _weights(sess):
    return [sess.run(v) for v in tf.trainable_variables()]


def test_iterator_training_matches_feed_dict_training():
    features, labels = _data()
    with tf.Graph().as_default():  # the batches the pipeline makes
        element = _pipeline(features, labels).make_one_shot_iterator().get_next()
        with tf.Session() as sess:
            batches = [sess.run(element) for _ in range(STEPS)]
    assert [b[0].shape[0] for b in batches[:8]] == [16] * 6 + [4, 16]  # 100 examples: each epoch ends short
    assert not np.array_equal(batches[0][1], labels[:BATCH]) or not np.array_equal(batches[0][0], features[:BATCH])

    with tf.Graph().as_default():
        x, y = _pipeline(features, labels).make_one_shot_iterator().get_next()
        loss, train = _model(x, y)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            losses = [sess.run([loss, train])[0] for _ in range(STEPS)]
            from_iterator = _weights(sess)

    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 8])
        y = tf.placeholder(tf.int64, [None])
        loss, train = _model(x, y)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            fed_losses = [sess.run([loss, train], {x: bx, y: by})[0] for bx, by in batches]
            from_feeds = _weights(sess)

    np.testing.assert_allclose(losses, fed_losses, rtol=1e-6, atol=1e-7)
    for a, b in zip(from_iterator, from_feeds):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)
    assert losses[-1] < losses[0]
