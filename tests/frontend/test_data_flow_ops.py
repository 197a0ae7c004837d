"""Queues and conditional accumulators that block: a dequeue released by another thread's
enqueue, close -> OutOfRangeError, deadlines -> DeadlineExceededError, a closed session ->
CancelledError; QueueRunner threads feeding the main thread (tfc/frontend/data_flow_ops.py,
tfc/runtime/step_context.py, tfc/frontend/train/queue_runner.py). The values and messages
that need no second thread are checked against TensorFlow's in
tests/frontend/train/test_sync_replicas.py."""
from __future__ import annotations

import threading
import time

import numpy as np
import pytest

import tfc.compat.v1 as tf


def later(delay, fn, *args):
    """Run ``fn(*args)`` in a thread after ``delay`` seconds; the thread keeps its result or error."""
    thread = threading.Thread(target=lambda: _keep(thread, delay, fn, args), daemon=True)
    thread.result = thread.error = None
    thread.start()
    return thread


def _keep(thread, delay, fn, args):
    time.sleep(delay)
    try:
        thread.result = fn(*args)
    except Exception as e:  # noqa: BLE001 - looked at by the test
        thread.error = e


def test_dequeue_waits_for_an_enqueue_from_another_thread_and_other_runs_go_on():
    with tf.Graph().as_default():
        q = tf.FIFOQueue(2, tf.float32, shapes=[[]], shared_name="q")
        x = tf.placeholder(tf.float32, [])
        enqueue = q.enqueue(x)
        doubled = q.dequeue() * 2.0
        size = q.size()
        other = tf.constant([1.0, 2.0]) * 3.0
        with tf.Session() as sess:
            sess.run(other)  # (compiled before the clock starts)
            seen = []
            # while the main thread waits in the dequeue, the session serves other runs
            probe = later(0.1, lambda: seen.append((sess.run(size), sess.run(other).tolist())))
            feeder = later(0.4, sess.run, enqueue, {x: 3.5})
            started = time.monotonic()
            assert sess.run(doubled) == 7.0
            assert time.monotonic() - started >= 0.35
            feeder.join(5)
            probe.join(5)
            assert feeder.error is None and probe.error is None
            assert seen == [(0, [3.0, 6.0])]


def test_close_releases_a_waiting_dequeue_with_out_of_range_and_tf_message():
    with tf.Graph().as_default():
        q = tf.FIFOQueue(2, tf.int32, shapes=[[]], shared_name="tokens")
        dequeue = q.dequeue()
        close = q.close()
        with tf.Session() as sess:
            closer = later(0.2, sess.run, close)
            with pytest.raises(tf.errors.OutOfRangeError) as info:
                sess.run(dequeue)
            closer.join(5)
            assert info.value.message == ("FIFOQueue 'tokens' is closed and has insufficient elements "
                                          "(requested 1, current size 0)")
            assert info.value.op is dequeue.op


def test_anonymous_queue_names_follow_tf():
    with tf.Graph().as_default():
        q = tf.FIFOQueue(2, tf.int32, shapes=[[]])
        dequeue = q.dequeue_many(2)
        with tf.Session() as sess:
            sess.run(q.close())
            with pytest.raises(tf.errors.OutOfRangeError) as info:
                sess.run(dequeue)
    message = info.value.message
    number = message.split("'")[1].split("_")[1]
    assert message == (f"FIFOQueue '_{number}_fifo_queue' is closed and has insufficient elements "
                       "(requested 2, current size 0)")


def test_deadlines_end_a_waiting_dequeue():
    with tf.Graph().as_default():
        q = tf.FIFOQueue(2, tf.int32, shapes=[[]])
        dequeue = q.dequeue()
        accumulator = tf.ConditionalAccumulator(tf.float32, shape=[1])
        take = accumulator.take_grad(1)
        with tf.Session() as sess:
            started = time.monotonic()
            with pytest.raises(tf.errors.DeadlineExceededError) as info:
                sess.run(dequeue, options=tf.RunOptions(timeout_in_ms=150))
            assert 0.14 <= time.monotonic() - started < 2.0
            assert info.value.message == "Timed out waiting for notification"
            with pytest.raises(tf.errors.DeadlineExceededError):
                sess.run(take, options=tf.RunOptions(timeout_in_ms=50))
        with tf.Session(config=tf.ConfigProto(operation_timeout_in_ms=100)) as sess:
            started = time.monotonic()
            with pytest.raises(tf.errors.DeadlineExceededError):
                sess.run(dequeue)
            assert 0.09 <= time.monotonic() - started < 2.0


def test_enqueue_waits_on_a_full_queue_and_cancel_pending_enqueues():
    with tf.Graph().as_default():
        q = tf.FIFOQueue(1, tf.int32, shapes=[[]])
        x = tf.placeholder(tf.int32, [])
        enqueue = q.enqueue(x)
        dequeue = q.dequeue()
        cancel = q.close(cancel_pending_enqueues=True)
        with tf.Session() as sess:
            sess.run(enqueue, {x: 1})
            taker = later(0.2, sess.run, dequeue)
            started = time.monotonic()
            sess.run(enqueue, {x: 2})  # waits for room
            assert time.monotonic() - started >= 0.15
            taker.join(5)
            assert taker.result == 1
            canceller = later(0.2, sess.run, cancel)
            with pytest.raises(tf.errors.CancelledError) as info:
                sess.run(enqueue, {x: 3})
            canceller.join(5)
            assert info.value.message == "Enqueue operation was cancelled"
            assert sess.run(dequeue) == 2  # what was in the queue stays
            assert sess.run(q.is_closed())


def test_closing_the_session_cancels_a_waiting_dequeue():
    with tf.Graph().as_default():
        q = tf.FIFOQueue(1, tf.int32, shapes=[[]])
        dequeue = q.dequeue()
        sess = tf.Session()
        waiter = later(0.0, sess.run, dequeue)
        time.sleep(0.2)
        sess.close()
        waiter.join(5)
        assert not waiter.is_alive()
        assert isinstance(waiter.error, tf.errors.CancelledError)
        assert waiter.error.message == "Dequeue operation was cancelled: the session was closed"


def test_take_grad_waits_for_enough_gradients():
    with tf.Graph().as_default():
        accumulator = tf.ConditionalAccumulator(tf.float32, shape=[2])
        grad = tf.placeholder(tf.float32, [2])
        apply = accumulator.apply_grad(grad, local_step=0)
        take = accumulator.take_grad(2)
        with tf.Session() as sess:
            taker = later(0.0, sess.run, take)
            sess.run(apply, {grad: [1.0, 2.0]})
            time.sleep(0.2)
            assert taker.is_alive()  # one gradient of the two
            sess.run(apply, {grad: [2.0, 6.0]})
            taker.join(5)
            assert taker.error is None
            np.testing.assert_array_equal(taker.result, [1.5, 4.0])
            assert sess.run(accumulator.num_accumulated()) == 0


def test_shared_queues_must_agree():
    with tf.Graph().as_default():
        a = tf.FIFOQueue(3, tf.int32, shared_name="sq")
        b = tf.FIFOQueue(4, tf.int32, shared_name="sq", name="b")
        c = tf.FIFOQueue(3, tf.float32, shared_name="sq", name="c")
        with tf.Session() as sess:
            sess.run(a.enqueue(5))
            with pytest.raises(tf.errors.InvalidArgumentError) as info:
                sess.run(b.size())
            assert info.value.message == "Shared queue 'sq' has capacity 3 but requested capacity was 4"
            with pytest.raises(tf.errors.InvalidArgumentError) as info:
                sess.run(c.size())
            assert info.value.message == ("Shared queue 'sq' has component types int32 but requested component "
                                          "types were float32")
        with tf.Session() as sess:  # each session has its own queues
            assert sess.run(a.size()) == 0


def test_enqueue_many_checks_its_batch():
    with tf.Graph().as_default():
        q = tf.FIFOQueue(5, [tf.int32, tf.string], shapes=[[2], []])
        numbers = tf.placeholder(tf.int32, [None, None])
        words = tf.placeholder(tf.string, [None])
        enqueue = q.enqueue_many([numbers, words])
        with tf.Session() as sess:
            with pytest.raises(tf.errors.InvalidArgumentError) as info:
                sess.run(enqueue, {numbers: [[1, 2], [3, 4]], words: ["a"]})
            assert info.value.message == ("All input tensors must have the same size in the 0th dimension. "
                                          "Component 0 has 2, and component 1 has 1")
            with pytest.raises(tf.errors.InvalidArgumentError) as info:
                sess.run(enqueue, {numbers: [[1, 2, 3]], words: ["a"]})
            assert info.value.message == "Shape mismatch in tuple component 0. Expected [1,2], got [1,3]"
            sess.run(enqueue, {numbers: [[1, 2], [3, 4]], words: ["a", "b"]})
            got = sess.run(q.dequeue_many(2))
            assert got[0].tolist() == [[1, 2], [3, 4]] and got[1].tolist() == [b"a", b"b"]


def test_random_shuffle_queue_keeps_min_after_dequeue_until_closed():
    with tf.Graph().as_default():
        q = tf.RandomShuffleQueue(10, 2, tf.int32, shapes=[[]], seed=3)
        enqueue = q.enqueue_many([[10, 11, 12, 13]])
        dequeue = q.dequeue()
        orders = []
        for _ in range(2):
            with tf.Session() as sess:
                sess.run(enqueue)
                first = [sess.run(dequeue), sess.run(dequeue)]
                with pytest.raises(tf.errors.DeadlineExceededError):  # two are kept for mixing
                    sess.run(dequeue, options=tf.RunOptions(timeout_in_ms=50))
                sess.run(q.close())
                orders.append(first + [sess.run(dequeue), sess.run(dequeue)])
        assert sorted(orders[0]) == [10, 11, 12, 13]
        assert orders[0] == orders[1]  # seeded: the same order in every session


def test_queue_runner_feeds_the_main_thread_until_its_source_closes():
    with tf.Graph().as_default():
        source = tf.FIFOQueue(10, tf.int32, shapes=[[]], name="source")
        fill = source.enqueue_many([[1, 2, 3, 4, 5]])
        close_source = source.close()
        q = tf.FIFOQueue(2, tf.int32, shapes=[[]], name="q")
        runner = tf.train.QueueRunner(q, [q.enqueue(source.dequeue() * 10)])
        tf.train.add_queue_runner(runner)
        dequeue = q.dequeue()
        assert tf.get_collection(tf.GraphKeys.QUEUE_RUNNERS) == [runner]
        assert runner.close_op.type == "QueueCloseV2" and runner.cancel_op.get_attr("cancel_pending_enqueues")
        with tf.Session() as sess:
            sess.run([fill, close_source])
            coord = tf.train.Coordinator()
            threads = tf.train.start_queue_runners(sess, coord)
            assert len(threads) == 2  # the enqueue thread and the one closing the queue on stop
            got = [sess.run(dequeue) for _ in range(5)]
            with pytest.raises(tf.errors.OutOfRangeError):  # the runner closed q when source ran out
                sess.run(dequeue)
            coord.request_stop()
            coord.join(threads, stop_grace_period_secs=5)
            assert got == [10, 20, 30, 40, 50]
            assert runner.exceptions_raised == []


def test_queue_runner_reports_errors_and_stops_on_request():
    with tf.Graph().as_default():
        q = tf.FIFOQueue(3, tf.float32, shapes=[[]])
        counter = tf.Variable(0.0)
        runner = tf.train.QueueRunner(q, [q.enqueue(counter.assign_add(1.0))])
        bad = tf.FIFOQueue(3, tf.float32, shapes=[[2]])
        failing = tf.train.QueueRunner(bad, [bad.enqueue(tf.placeholder(tf.float32, [2]))])
        with tf.Session() as sess:
            sess.run(counter.initializer)
            coord = tf.train.Coordinator()
            threads = runner.create_threads(sess, coord, start=True)
            assert runner.create_threads(sess, coord) == []  # already running in this session
            got = [sess.run(q.dequeue()) for _ in range(4)]
            assert got == [1.0, 2.0, 3.0, 4.0]
            coord.request_stop()  # the close thread cancels the enqueue waiting on the full queue
            coord.join(threads, stop_grace_period_secs=5)
            assert not any(t.is_alive() for t in threads)
            coord = tf.train.Coordinator()
            threads = failing.create_threads(sess, coord, start=True)
            with pytest.raises(tf.errors.InvalidArgumentError, match="You must feed a value for placeholder"):
                coord.join(threads, stop_grace_period_secs=5)
