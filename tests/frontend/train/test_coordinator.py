"""tf.train.Coordinator and LooperThread against TensorFlow's record and TF's code."""
from __future__ import annotations

import threading
import time

import pytest

import session_scenarios as sc
import tfc.compat.v1 as tf


def test_coordinator_matches_tf(tmp_path):
    got, want = sc.run(tf, "coordinator", tmp_path), sc.recorded("coordinator")
    assert got["join"] == ["ValueError", "first"]  # the first exception reported wins
    assert got["straggler"] == ["RuntimeError", "Coordinator stopped with threads still running: straggler"]
    assert got == want


def test_request_stop_after_join_raises_the_exception_at_once():
    coord = tf.train.Coordinator()
    coord.request_stop()
    coord.join([])
    with pytest.raises(KeyError):
        try:
            raise KeyError("late")
        except KeyError as e:
            coord.request_stop(e)


def test_join_waits_for_registered_threads_and_ignore_live_threads_logs(caplog):
    coord = tf.train.Coordinator()
    release = threading.Event()
    thread = threading.Thread(target=lambda: release.wait(5.0), name="slow")
    thread.start()
    coord.register_thread(thread)
    coord.request_stop()
    started = time.time()
    with caplog.at_level("INFO", logger="tensorflow"):
        coord.join(stop_grace_period_secs=0.05, ignore_live_threads=True)
    assert time.time() - started < 1.0
    assert "Coordinator stopped with threads still running: slow" in caplog.messages
    release.set()
    thread.join()


def test_stop_on_exception_with_clean_stop_types():
    coord = tf.train.Coordinator(clean_stop_exception_types=(StopIteration,))
    with coord.stop_on_exception():
        raise StopIteration
    assert coord.should_stop()
    coord.join([])  # a clean stop: nothing to raise


def test_wait_for_stop_times_out_then_returns_true():
    coord = tf.train.Coordinator()
    assert coord.wait_for_stop(0.01) is False
    threading.Timer(0.02, coord.request_stop).start()
    assert coord.wait_for_stop(2.0) is True


def test_looper_thread_on_a_timer_reports_exceptions():
    coord = tf.train.Coordinator()
    calls = []

    def target():
        calls.append(time.time())
        if len(calls) == 2:
            raise ValueError("from the looper")

    looper = tf.train.LooperThread.loop(coord, 0.01, target)
    with pytest.raises(ValueError, match="^from the looper$"):
        coord.join([looper])
    assert len(calls) == 2 and not looper.is_alive()


def test_looper_thread_needs_a_coordinator():
    with pytest.raises(ValueError, match="^'coord' argument must be a Coordinator: None$"):
        tf.train.LooperThread(None, 1.0)
