"""Session.partial_run_setup / partial_run: values, each op once across the calls, and TF
1.x's errors (checked against TensorFlow 2.21's tf.compat.v1 session)."""
from __future__ import annotations

import numpy as np
import pytest

import tfc.compat.v1 as tf
from tfc.frontend import errors


@pytest.fixture
def graph():
    with tf.Graph().as_default() as g:
        yield g


def model():
    a = tf.placeholder(tf.float32, shape=[], name="a")
    b = tf.placeholder(tf.float32, shape=[], name="b")
    c = tf.placeholder(tf.float32, shape=[], name="c")
    r1 = tf.add(a, b, name="r1")
    r2 = tf.multiply(r1, c, name="r2")
    v = tf.Variable(0.0, name="v")
    inc = tf.assign_add(v, 1.0, name="inc")
    r3 = r2 + inc
    return a, b, c, r1, r2, v, inc, r3


def test_values_and_tensorflows_errors(graph):
    a, b, c, r1, r2, v, inc, r3 = model()
    with tf.Session() as sess:
        sess.run(v.initializer)
        h = sess.partial_run_setup([r1, r2, r3], [a, b, c])
        assert isinstance(h, str)
        assert sess.partial_run(h, r1, feed_dict={a: 1, b: 2}) == 3.0
        with pytest.raises(errors.InvalidArgumentError, match=r"^The fetch r1:0 has already been fetched\.$"):
            sess.partial_run(h, r1, feed_dict={c: 3})
        with pytest.raises(errors.InvalidArgumentError, match=r"^The feed a:0 has already been fed\.$"):
            sess.partial_run(h, r2, feed_dict={a: 3})
        with pytest.raises(errors.InvalidArgumentError, match=r"^The fetch inc:0 was not specified in "
                                                              r"partial_run_setup\.$"):
            sess.partial_run(h, inc)
        with pytest.raises(TypeError, match=r"^Cannot interpret feed_dict key as Tensor: The name 'zz:0' refers to a "
                                            r"Tensor which does not exist\."):
            sess.partial_run(h, r2, feed_dict={"zz:0": 1})
        assert sess.partial_run(h, [r2, r3], feed_dict={c: 3}) == [9.0, 10.0]
        assert sess.run(v) == 1.0  # inc ran once
        with pytest.raises(errors.InvalidArgumentError, match=r"^Must run 'setup' before performing partial runs!$"):
            sess.partial_run(h, r2)  # every fetch is done: the partial run is over

        h2 = sess.partial_run_setup([r2], [a, b, c])
        with pytest.raises(errors.InvalidArgumentError,
                           match=r"^Fetch c:0 can't be computed from the feeds that have been fed so far\.$"):
            sess.partial_run(h2, r2, feed_dict={a: 1})
        h3 = sess.partial_run_setup([r1, r2], [a, b, c])
        assert sess.partial_run(h3, [r1], feed_dict={a: 1, b: 2}) == [3.0]
        assert sess.partial_run(h3, r2, feed_dict={c: 2}) == 6.0
        h4 = sess.partial_run_setup([r3], [a, b, c])
        assert sess.partial_run(h4, r3, feed_dict={a: 1, b: 1, c: 1}) == 4.0
        assert sess.run(v) == 2.0
        with pytest.raises(errors.InvalidArgumentError, match=r"^r1:0 is both fed and fetched\.$"):
            sess.partial_run_setup([r1], [r1])
        h5 = sess.partial_run_setup([r1, inc.op], [a, b])
        with pytest.raises(RuntimeError, match=r"partial_run\(\) requires empty `target_list`"):
            sess.partial_run(h5, [inc.op, r1], {a: 1, b: 1})


def test_each_op_runs_once_over_the_calls(graph):
    """A random draw and an update feed two fetches made in different calls: the second call
    uses the values of the first (carried), it does not draw or update again."""
    a = tf.placeholder(tf.float32, [3], name="a")
    b = tf.placeholder(tf.float32, [3], name="b")
    noise = tf.random_uniform([3], seed=1, name="noise")
    counter = tf.Variable(0, name="counter")
    bump = tf.assign_add(counter, 1)
    first = noise + a
    second = noise * b + tf.cast(bump, tf.float32)
    with tf.Session() as sess:
        sess.run(counter.initializer)
        h = sess.partial_run_setup([first, second, bump], [a, b])
        got_first = sess.partial_run(h, first, {a: np.zeros(3, np.float32)})
        got_second, count = sess.partial_run(h, [second, bump], {b: np.full(3, 2.0, np.float32)})
        np.testing.assert_allclose(got_second, 2.0 * got_first + 1.0, rtol=1e-6)
        assert count == 1 and sess.run(counter) == 1
        h = sess.partial_run_setup([first, second], [a, b])  # a new partial run draws anew
        again = sess.partial_run(h, first, {a: np.zeros(3, np.float32)})
        assert not np.allclose(again, got_first)
        sess.partial_run(h, second, {b: np.ones(3, np.float32)})
        assert sess.run(counter) == 2


def test_partial_runs_on_a_grpc_master(graph):
    """The master keeps the partial run (PartialRunSetup, then RunStep with its handle)."""
    a, b, c, r1, r2, v, inc, r3 = model()
    server = tf.train.Server.create_local_server()
    try:
        with tf.Session(server.target) as sess:
            sess.run(v.initializer)
            h = sess.partial_run_setup([r1, r2, r3], [a, b, c])
            assert sess.partial_run(h, r1, feed_dict={a: 1, b: 2}) == 3.0
            with pytest.raises(errors.InvalidArgumentError, match=r"^The fetch r1:0 has already been fetched\.$"):
                sess.partial_run(h, r1, feed_dict={c: 3})
            assert sess.partial_run(h, [r2, r3], feed_dict={c: 3}) == [9.0, 10.0]
            assert sess.run(v) == 1.0
            with pytest.raises(errors.InvalidArgumentError, match=r"^Must run 'setup' before performing partial"):
                sess.partial_run(h, r2)
    finally:
        server.stop()
