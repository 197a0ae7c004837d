"""The hooks of tfc/frontend/train/basic_session_run_hooks.py against TensorFlow's record
(LoggingTensorHook lines, NanTensorHook errors, SecondOrStepTimer) and TF's code."""
from __future__ import annotations

import time

import numpy as np
import pytest

import session_scenarios as sc
import tfc.compat.v1 as tf


def test_logging_tensor_hook_prints_tfs_lines(tmp_path):
    got, want = sc.run(tf, "logging_hooks", tmp_path), sc.recorded("logging_hooks")
    assert "INFO:step = 1, w = [[0.33]\n [0.43]]" in got["logs"]  # sorted tags, numpy's array text
    assert "INFO:loss = 1.0899999, small = [     0.   123456.79     -2.5 ]" in got["logs"]  # suppress=True
    assert got["logs"] == want["logs"]


def test_logging_tensor_hook_argument_errors_are_tfs(tmp_path):
    got, want = sc.run(tf, "logging_hooks", tmp_path), sc.recorded("logging_hooks")
    assert got["errors"] == want["errors"]
    assert got["errors"][1] == ["ValueError", "invalid every_n_iter=0."]


def test_nan_tensor_hook_raises_or_stops_as_tf(tmp_path):
    got, want = sc.run(tf, "nan_hooks", tmp_path), sc.recorded("nan_hooks")
    assert got["fail"]["error"] == ["NanLossDuringTrainingError", "NaN loss during training."]
    assert got == want


def test_second_or_step_timer_by_steps_and_by_50_ms(tmp_path):
    got, want = sc.run(tf, "timer", tmp_path), sc.recorded("timer")
    assert got["steps"] == [[0, None], [3, 3], [6, 3]]
    assert got["secs"] == [True, False, False, False, True]
    assert got == want


def test_logging_tensor_hook_every_n_secs_uses_the_timer(monkeypatch):
    from tfc.frontend.train import basic_session_run_hooks

    now = [1000.0]
    monkeypatch.setattr(basic_session_run_hooks.time, "time", lambda: now[0])
    lines = []
    monkeypatch.setattr(basic_session_run_hooks.logging, "info", lambda msg, *args: lines.append(msg % args))
    with tf.Graph().as_default():
        v = tf.constant(7, name="v")
        hook = tf.train.LoggingTensorHook({"v": v}, every_n_secs=10)
        with tf.train.MonitoredSession(hooks=[hook]) as sess:
            for advance in (0.0, 4.0, 5.0, 1.5, 3.0):
                now[0] += advance
                sess.run(v)
    # runs at t=1000 (first), 1004, 1009, 1010.5 (>= 10 s: logs, 10.5 s after), 1013.5
    assert [line for line in lines if line.startswith("v = ")] == ["v = 7", "v = 7 (10.500 sec)"]


def test_stop_at_step_hook_arguments():
    with pytest.raises(ValueError, match="^One of num_steps or last_step must be specified.$"):
        tf.train.StopAtStepHook()
    with pytest.raises(ValueError, match="^Only one of num_steps or last_step can be specified.$"):
        tf.train.StopAtStepHook(num_steps=1, last_step=2)


def test_summary_saver_hook_needs_exactly_one_of_scaffold_and_summary_op():
    with pytest.raises(ValueError, match="^Exactly one of scaffold or summary_op must be provided.$"):
        tf.train.SummarySaverHook(save_steps=1)


def test_step_counter_hook_needs_exactly_one_of_steps_and_secs():
    with pytest.raises(ValueError, match="^exactly one of every_n_steps and every_n_secs should be provided.$"):
        tf.train.StepCounterHook(every_n_steps=None)


def test_a_tensor_name_of_a_multi_output_op_is_ambiguous():
    from tfc.frontend.train.basic_session_run_hooks import _as_graph_element

    with tf.Graph().as_default():
        tf.split(tf.constant([1.0, 2.0]), 2, name="parts")
        tf.constant(1.0, name="one")
        assert _as_graph_element("one").name == "one:0"
        with pytest.raises(ValueError, match=r"^Name parts is ambiguous, as this `Operation` has multiple outputs"):
            _as_graph_element("parts")


def test_checkpoint_saver_hook_with_a_given_saver_and_save_secs(tmp_path):
    with tf.Graph().as_default():
        v = tf.Variable(2.0, name="v")
        global_step = tf.train.get_or_create_global_step()
        step = tf.assign_add(global_step, 1)
        saver = tf.train.Saver(max_to_keep=2)
        hook = tf.train.CheckpointSaverHook(str(tmp_path), save_secs=3600, saver=saver, checkpoint_basename="m")
        with tf.train.SingularMonitoredSession(hooks=[hook]) as sess:
            for _ in range(3):
                sess.run(step)
    # saved when the session was created (step 0) and at the end (step 3) only
    assert tf.train.get_checkpoint_state(str(tmp_path)).all_model_checkpoint_paths == [
        str(tmp_path / "m-0"), str(tmp_path / "m-3")]
    assert tf.train.load_variable(str(tmp_path / "m-3"), "v") == np.float32(2.0)


def test_final_ops_hook_reraises_out_of_range_error():
    class Raising:
        graph = None

        def run(self, *args, **kwargs):
            raise tf.errors.OutOfRangeError(None, None, "no more")

    hook = tf.train.FinalOpsHook({"x": 1})
    with pytest.raises(tf.errors.OutOfRangeError):
        hook.end(Raising())


def test_global_step_waiter_hook_waits_for_the_step():
    with tf.Graph().as_default():
        global_step = tf.train.get_or_create_global_step()
        step = tf.assign_add(global_step, 1)
        hook = tf.train.GlobalStepWaiterHook(wait_until_step=0)
        with tf.train.MonitoredSession(hooks=[hook]) as sess:
            started = time.time()
            sess.run(step)
            assert time.time() - started < 0.4  # wait_until_step=0: no wait (TF polls every 0.5 s)
            assert hook._worker_is_started
