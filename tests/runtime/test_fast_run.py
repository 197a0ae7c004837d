"""Session.run's repeated-run fast path (tfc/runtime/fast_run.py): same values and errors
as the general path, and it declines every run that is not a plain repeat."""
from __future__ import annotations

import threading

import numpy as np
import pytest

import tfc.compat.v1 as tf


def _plan(session):
    (plan,) = session._run_plans.values()
    return plan


def _fast_calls(plan) -> int:
    return plan.fast.context.runs if plan.fast is not None else 0


def test_a_repeated_scalar_run_takes_the_fast_path_and_returns_fresh_scalars():
    with tf.Graph().as_default():
        a = tf.placeholder(tf.float32, [], name="a")
        b = tf.placeholder(tf.float32, [], name="b")
        total = tf.add(a, b, name="sum")
        with tf.Session() as sess:
            first = sess.run(total, {a: np.float32(1.25), b: np.float32(-0.5)})
            plan = _plan(sess)
            assert plan.fast is not None and _fast_calls(plan) == 0
            second = sess.run(total, {a: np.float32(2.0), b: np.float32(3.0)})
            third = sess.run(total, {a: 4.5, b: np.array(1.0, np.float32)})  # a Python float: converted
            assert _fast_calls(plan) == 2
            assert (first, second, third) == (np.float32(0.75), np.float32(5.0), np.float32(5.5))
            assert type(first) is np.float32 and type(second) is np.float32
            assert sess.stats["runs"] == 3 and sess.stats["compiles"] == 1


def test_a_feed_of_a_wrong_shape_gets_tf_error_and_the_fast_path_still_works():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 3], name="x")
        y = tf.reduce_sum(x * 2.0, axis=1)
        with tf.Session() as sess:
            ones = np.ones((2, 3), np.float32)
            np.testing.assert_array_equal(sess.run(y, {x: ones}), [6.0, 6.0])
            with pytest.raises(ValueError, match=r"Cannot feed value of shape \(2, 4\) for Tensor 'x:0', which has "
                                                 r"shape '\(\?, 3\)'"):
                sess.run(y, {x: np.ones((2, 4), np.float32)})
            np.testing.assert_array_equal(sess.run(y, {x: np.full((5, 3), 2.0, np.float32)}), [12.0] * 5)
            plan = sess._run_plans[(y, (x,))]
            assert _fast_calls(plan) == 1  # (5, 3): another shape, same compiled step


def test_a_batch_of_one_compiles_its_own_step_and_the_fast_path_declines_it():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 2], name="x")
        y = x - tf.reduce_mean(x, axis=0)
        with tf.Session() as sess:
            data = np.array([[1.0, 2.0], [3.0, 6.0]], np.float32)
            np.testing.assert_array_equal(sess.run(y, {x: data}), [[-1.0, -2.0], [1.0, 2.0]])
            np.testing.assert_array_equal(sess.run(y, {x: data[:1]}), [[0.0, 0.0]])
            np.testing.assert_array_equal(sess.run(y, {x: data[:1]}), [[0.0, 0.0]])
            np.testing.assert_array_equal(sess.run(y, {x: data}), [[-1.0, -2.0], [1.0, 2.0]])
            plan = _plan(sess)
            assert len(plan.steps) == 2 and _fast_calls(plan) == 1


def test_variables_updated_on_the_fast_path_are_the_sessions():
    with tf.Graph().as_default():
        counter = tf.Variable(0.0, name="counter")
        step = tf.assign_add(counter, 1.5)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            values = [sess.run(step) for _ in range(4)]
            assert values == [1.5, 3.0, 4.5, 6.0]
            assert _fast_calls(sess._run_plans[(step, ())]) == 3
            assert sess.run(counter) == 6.0


def test_fetch_structures_and_kept_feed_buffers_do_not_leak_between_runs():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [4], name="x")
        total = tf.reduce_sum(x)
        doubled = x * 2.0
        with tf.Session() as sess:
            outputs = []
            for k in range(3):
                outputs.append(sess.run({"total": total, "pair": (doubled, total)}, {x: np.arange(4, dtype=np.float32) + k}))
            assert [o["total"] for o in outputs] == [6.0, 10.0, 14.0]
            np.testing.assert_array_equal(outputs[0]["pair"][0], [0.0, 2.0, 4.0, 6.0])
            np.testing.assert_array_equal(outputs[2]["pair"][0], [4.0, 6.0, 8.0, 10.0])
            assert outputs[1]["pair"][1] == 10.0 and isinstance(outputs[1]["pair"], tuple)


def test_a_value_the_general_path_refuses_is_refused_on_a_repeat_too():
    with tf.Graph().as_default():
        small = tf.placeholder(tf.int8, [], name="small")
        y = small + 1
        with tf.Session() as sess:
            assert sess.run(y, {small: 3}) == 4
            assert sess.run(y, {small: 4}) == 5
            with pytest.raises(TypeError, match="Type of feed value 300 with type <class 'int'> is not compatible "
                                                "with Tensor type <class 'numpy.int8'>"):
                sess.run(y, {small: 300})
            with pytest.raises(ValueError, match="Cannot feed value of shape"):
                sess.run(y, {small: np.int8([1, 2])})
            assert sess.run(y, {small: np.int8(6)}) == 7


def test_threads_sharing_a_session_get_their_own_results():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float64, [], name="x")
        y = x * x + 1.0
        with tf.Session() as sess:
            sess.run(y, {x: 0.0})
            failures = []

            def worker(offset):
                for i in range(300):
                    value = float(offset + i)
                    if sess.run(y, {x: value}) != value * value + 1.0:
                        failures.append(value)

            threads = [threading.Thread(target=worker, args=(1000 * k,)) for k in range(4)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            assert failures == []
            assert sess.stats["runs"] == 1201


def test_a_closed_session_refuses_a_repeat():
    with tf.Graph().as_default():
        a = tf.placeholder(tf.float32, [])
        y = a + 1.0
        sess = tf.Session()
        assert sess.run(y, {a: 1.0}) == 2.0
        assert sess.run(y, {a: 2.0}) == 3.0
        sess.close()
        with pytest.raises(RuntimeError, match="Attempted to use a closed Session."):
            sess.run(y, {a: 3.0})


def _without_checked_binding(plan):
    """Make the checked feed binding fail loudly: a run that succeeds took the direct call."""
    def refuse(feed_dict):
        raise AssertionError("the checked feed binding ran")
    plan.fast._bind_feeds = refuse


def test_a_repeat_with_exact_scalars_is_a_direct_call():
    with tf.Graph().as_default():
        a = tf.placeholder(tf.float32, [], name="a")
        n = tf.placeholder(tf.int32, [], name="n")
        pair = [a * 2.0, n + 1]
        with tf.Session() as sess:
            sess.run(pair, {a: np.float32(1.0), n: np.int32(1)})
            sess.run(pair, {a: np.float32(2.0), n: np.int32(2)})
            plan = _plan(sess)
            assert plan.fast.direct_ready
            _without_checked_binding(plan)
            results = [sess.run(pair, {a: np.float32(k), n: np.int32(k)}) for k in (3, 4, 5)]
            assert results == [[6.0, 4], [8.0, 5], [10.0, 6]]
            assert [type(v) for v in results[0]] == [np.float32, np.int32]
            assert _fast_calls(plan) == 4 and sess.stats["runs"] == 5
            same = sess.run(pair, {a: np.array(1.5, np.float32), n: np.array(7, np.int32)})  # 0-d arrays
            assert same == [3.0, 8]


def test_values_the_direct_call_does_not_take_go_the_checked_way_with_tfs_errors():
    with tf.Graph().as_default():
        a = tf.placeholder(tf.float32, [], name="a")
        y = a + 1.0
        with tf.Session() as sess:
            sess.run(y, {a: np.float32(1.0)})
            sess.run(y, {a: np.float32(1.0)})
            assert sess.run(y, {a: 2.5}) == 3.5  # a Python float: converted
            assert sess.run(y, {a: np.float64(0.5)}) == 1.5  # another type: converted
            with pytest.raises(ValueError, match=r"Cannot feed value of shape \(1,\) for Tensor 'a:0', which has "
                                                 r"shape '\(\)'"):
                sess.run(y, {a: np.ones(1, np.float32)})
            assert sess.run(y, {a: np.float32(4.0)}) == 5.0 and _plan(sess).fast.direct_ready


def test_a_failing_direct_call_raises_the_programs_error():
    with tf.Graph().as_default():
        a = tf.placeholder(tf.float32, [], name="a")
        b = tf.placeholder(tf.float32, [], name="b")
        ratio = tf.check_numerics(a / b, "ratio")
        with tf.Session() as sess:
            sess.run(ratio, {a: np.float32(1.0), b: np.float32(2.0)})
            assert sess.run(ratio, {a: np.float32(3.0), b: np.float32(2.0)}) == 1.5
            _without_checked_binding(_plan(sess))
            with pytest.raises(tf.errors.InvalidArgumentError, match="ratio : Tensor had Inf values"):
                sess.run(ratio, {a: np.float32(1.0), b: np.float32(0.0)})
            assert sess.run(ratio, {a: np.float32(1.0), b: np.float32(4.0)}) == 0.25


def test_a_fetch_without_feeds_repeats():
    with tf.Graph().as_default():
        c = tf.placeholder_with_default(np.float32(2.0), [], name="c")
        y = c * 3.0
        with tf.Session() as sess:
            assert [sess.run(y) for _ in range(4)] == [6.0] * 4
