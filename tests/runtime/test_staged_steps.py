"""Steps whose compiled ops need a host op's result run in stages
(Session._execute_staged): each op runs once, stateful ones included, and the values flow
between the stages as feeds."""
import numpy as np
import pytest

import tfc.compat.v1 as tf


@pytest.fixture(autouse=True)
def _graph():
    with tf.Graph().as_default():
        yield


def test_a_random_value_before_and_after_a_py_func_is_drawn_once():
    x = tf.placeholder(tf.float32, [3])
    r = tf.random_uniform([3], seed=1)
    w = tf.py_func(lambda a, b: a * 2 + b, [x * 3.0, r], tf.float32)
    y = w + 1.0 + r
    with tf.Session() as sess:
        rv, wv, yv = sess.run([r, w, y], {x: [1.0, 2.0, 3.0]})
    np.testing.assert_allclose(wv, np.array([6.0, 12.0, 18.0]) + rv, rtol=1e-6)
    np.testing.assert_allclose(yv, wv + 1 + rv, rtol=1e-6)


def test_a_variable_update_after_a_host_op_happens_once_per_run():
    x = tf.placeholder(tf.float32, [None])
    counter = tf.Variable(0.0)
    total = tf.Variable(0.0)
    kept = tf.boolean_mask(x, x > 0)  # Where on the host, the gather compiled
    with tf.control_dependencies([tf.assign_add(counter, 1.0)]):
        update = tf.assign_add(total, tf.reduce_sum(kept))
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for values in ([1.0, -2.0, 3.0], [-1.0, 5.0]):
            sess.run(update, {x: values})
        assert sess.run([counter, total]) == [2.0, 9.0]


def test_two_host_ops_in_a_chain():
    x = tf.placeholder(tf.float32, [None])
    first = tf.py_func(lambda a: a + 1, [x * 2.0], tf.float32)
    second = tf.py_func(lambda a: a * 10, [tf.sqrt(first)], tf.float32)
    out = second - 1.0
    with tf.Session() as sess:
        got = sess.run(out, {x: [0.0, 1.5, 4.0]})
    np.testing.assert_allclose(got, np.sqrt(np.array([0.0, 3.0, 8.0]) + 1) * 10 - 1, rtol=1e-6)


def test_a_host_op_whose_result_compiled_ops_need_inside_a_loop_is_refused():
    x = tf.placeholder(tf.float32, [2])

    def body(i, v):
        changed = tf.py_func(lambda a: a + 1, [v], tf.float32)
        changed.set_shape([2])
        return i + 1, changed * 2.0

    loop = tf.while_loop(lambda i, v: i < 2, body, [0, x])
    with tf.Session() as sess:
        with pytest.raises(Exception, match="inside a tf.cond or tf.while_loop"):
            sess.run(loop, {x: [1.0, 2.0]})


def test_an_early_host_op_runs_once_when_the_compiler_sends_where_to_the_host():
    """The first run compiles, finds tf.where's condition known only at run time, and
    plans the step again with Where on the host: the py_func that ran before the program
    (it reads only a feed) must not run twice."""
    calls = []

    def source(n):
        calls.append(int(n))
        return np.arange(int(n), dtype=np.float32) - 2.0

    n = tf.placeholder(tf.int32, [])
    x = tf.py_func(source, [n], tf.float32)
    x.set_shape([None])
    positive = tf.reduce_sum(tf.gather(x, tf.squeeze(tf.where(x > 0.0), 1)))
    with tf.Session() as sess:
        assert sess.run(positive, {n: 5}) == 3.0  # [-2, -1, 0, 1, 2]: 1 + 2
        assert sess.run(positive, {n: 6}) == 6.0
    assert calls == [5, 6]
