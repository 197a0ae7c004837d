"""tf.train.MonitoredTrainingSession / MonitoredSession / Scaffold against TensorFlow's record
(tests/fixtures/tf_monitored_session.json, written by tests/fixtures/make_tf_monitored_session.py
from the scenarios in session_scenarios.py)."""
from __future__ import annotations

import pytest

import numpy as np

import session_scenarios as sc
import tfc.compat.v1 as tf


def _close(got, want) -> bool:
    """Float32 training values: TF's to a relative 1e-6 (summation order may differ)."""
    return np.asarray(got).shape == np.asarray(want).shape and np.allclose(got, want, rtol=1e-6, atol=0)


@pytest.fixture(scope="module")
def mts(tmp_path_factory):
    return sc.run(tf, "mts_checkpoints", tmp_path_factory.mktemp("mts")), sc.recorded("mts_checkpoints")


def test_stop_at_step_hook_stops_at_tf_global_steps_with_tf_losses(mts):
    got, want = mts
    assert [s[0] for s in got["first"]["steps"]] == [1, 2, 3, 4, 5]
    assert _close(got["first"]["steps"], want["first"]["steps"])
    assert _close(got["second"]["steps"], want["second"]["steps"])


def test_checkpoint_saver_hook_writes_tfs_files_and_state_file(mts):
    got, want = mts
    assert "model.ckpt-5.index" in got["first"]["files"] and "graph.pbtxt" in got["first"]["files"]
    assert got["first"]["files"] == want["first"]["files"]
    assert got["first"]["state"] == want["first"]["state"]


def test_second_session_restores_step_5_and_max_to_keep_drops_model_ckpt_0(mts):
    got, want = mts
    assert got["second"]["steps"][0][0] == 6
    assert "model.ckpt-0.index" not in got["second"]["files"]
    assert got["second"]["files"] == want["second"]["files"]
    assert got["second"]["state"] == want["second"]["state"]
    assert _close(got["second"]["w"], want["second"]["w"])


def test_checkpointed_values_are_tfs(mts):
    got, want = mts
    assert got["first"]["global_step"] == want["first"]["global_step"] == 5
    assert _close(got["first"]["w"], want["first"]["w"])


def test_log_lines_are_tfs(mts):
    got, want = mts
    assert "INFO:Restoring parameters from <DIR>/train/model.ckpt-5" in got["second"]["logs"]
    assert "INFO:loss = 0.07051402, step = 3 (<t> sec)" in got["first"]["logs"]
    assert got["first"]["logs"] == want["first"]["logs"]
    assert got["second"]["logs"] == want["second"]["logs"]


def test_event_file_holds_tfs_events(mts):
    got, want = mts
    assert got["first"]["events"] == want["first"]["events"]


def test_global_step_read_tensor_is_tfs(mts):
    got, want = mts
    assert got["first"]["read_tensor"] == want["first"]["read_tensor"] == "global_step/add:0"


def test_defaults_save_at_creation_and_end(tmp_path):
    got, want = sc.run(tf, "mts_defaults", tmp_path), sc.recorded("mts_defaults")
    assert got["files"] == want["files"]
    assert got["state"] == want["state"]
    assert got["logs"] == want["logs"]
    assert got["events"] == want["events"]
    assert (got["global_step"], got["should_stop"]) == (want["global_step"], want["should_stop"]) == (3, False)


def test_worker_that_nobody_initializes_times_out_as_tf(tmp_path):
    got = sc.run(tf, "mts_worker_times_out", tmp_path)
    assert got == sc.recorded("mts_worker_times_out") == ["DeadlineExceededError",
                                                            "Session was not ready after waiting 0 secs."]


def test_scaffold_finalize_builds_tfs_ops(tmp_path):
    got, want = sc.run(tf, "scaffold", tmp_path), sc.recorded("scaffold")
    # tfc's Saver builds one layout for sharded and unsharded savers (tfc/frontend/saver.py):
    # its save tensor is save/control_dependency:0 where TF's sharded one has save/Identity:0.
    assert got["saver"][:1] + got["saver"][2:] == want["saver"][:1] + want["saver"][2:]
    del got["saver"], want["saver"]
    assert got == want
    assert got["ready_before"] == ["w", "global_step", "local"] and got["ready_after_local_init"] == []


def test_hook_and_scaffold_ops_are_tfs_graph(tmp_path):
    got, want = sc.run(tf, "scaffold_graph", tmp_path), sc.recorded("scaffold_graph")
    names = [op[0] for op in got]
    assert {"global_step/cond/Switch", "global_step/add", "report_uninitialized_variables/boolean_mask/GatherV2",
            "concat", "concat_1", "group_deps", "group_deps_1", "init_all_tables"} <= set(names)
    assert got == want


@pytest.fixture(scope="module")
def misc(tmp_path_factory):
    return sc.run(tf, "hooks_misc", tmp_path_factory.mktemp("misc")), sc.recorded("hooks_misc")


def test_hooks_are_called_in_tfs_order_with_listeners(misc):
    got, want = misc
    assert got["hooks"]["calls"] == want["hooks"]["calls"]
    assert got["hooks"]["calls"][-2:] == ["end", "listener.end 3"]


def test_feed_fn_and_final_ops_hooks(misc):
    got, want = misc
    assert got["hooks"]["values"] == want["hooks"]["values"] == [[2.0, 1], [4.0, 2], [6.0, 3]]
    assert got["hooks"]["final"]["step"] == want["hooks"]["final"]["step"] == 3
    assert _close(got["hooks"]["final"]["w"], want["hooks"]["final"]["w"])


def test_listener_stop_summaries_and_step_counter_match_tf(misc):
    got, want = misc
    assert got["hooks"]["logs"] == want["hooks"]["logs"]
    assert got["hooks"]["files"] == want["hooks"]["files"]
    assert got["hooks"]["events"] == want["hooks"]["events"]


def test_recoverable_session_recreates_the_session_after_aborted_error(misc):
    got, want = misc
    assert got["recovery"] == want["recovery"]
    assert got["recovery"]["calls"] == ["after_create_session 0", "after_create_session 0"]


def test_run_step_fn(misc):
    got, want = misc
    assert got["step_fn"] == want["step_fn"]
    assert got["step_fn"]["seen"] == [0, 1]


# -- behaviour checked against TF's code directly ----------------------------------------------
def _graph():
    x = tf.constant([[1.0, 2.0]])
    w = tf.get_variable("w", [2, 1], initializer=tf.constant_initializer(0.5))
    global_step = tf.train.get_or_create_global_step()
    train_op = tf.train.GradientDescentOptimizer(0.1).minimize(tf.reduce_sum(tf.matmul(x, w)),
                                                               global_step=global_step)
    return w, global_step, train_op


def test_close_twice_raises_and_unfinalizes_the_graph():
    with tf.Graph().as_default() as graph:
        _graph()
        sess = tf.train.MonitoredSession()
        assert graph.finalized
        sess.close()
        assert not graph.finalized and sess.should_stop()
        with pytest.raises(RuntimeError, match="^Session is already closed.$"):
            sess.close()


def test_run_after_a_hook_requested_stop_raises():
    with tf.Graph().as_default():
        w, global_step, train_op = _graph()
        with tf.train.MonitoredSession(hooks=[tf.train.StopAtStepHook(last_step=1)]) as sess:
            sess.run(train_op)
            assert sess.should_stop()
            with pytest.raises(RuntimeError, match="^Run called even after should_stop requested.$"):
                sess._sess._sess._sess.run(train_op)  # the _HookedSession (MonitoredSession.run would stop earlier)


def test_a_feed_from_a_hook_and_the_user_conflicts():
    with tf.Graph().as_default():
        p = tf.placeholder(tf.float32, [])
        doubled = p * 2.0
        hook = tf.train.FeedFnHook(lambda: {p: 1.0})
        with tf.train.MonitoredSession(hooks=[hook]) as sess:
            assert sess.run(doubled) == 2.0
            with pytest.raises(RuntimeError, match=r"^Same tensor is fed by a SessionRunHook and user\. Conflict"):
                sess.run(doubled, feed_dict={p: 3.0})


def test_out_of_range_error_closes_the_session_quietly_and_runs_end():
    ended = []

    class End(tf.train.SessionRunHook):
        def end(self, session):
            ended.append(True)

    with tf.Graph().as_default():
        with tf.train.MonitoredSession(hooks=[End()]) as sess:
            raise tf.errors.OutOfRangeError(None, None, "done")
    assert ended == [True] and sess.should_stop()


def test_an_error_skips_end_and_propagates():
    ended = []

    class End(tf.train.SessionRunHook):
        def end(self, session):
            ended.append(True)

    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="^inside$"):
            with tf.train.MonitoredSession(hooks=[End()]):
                raise ValueError("inside")
    assert ended == []


def test_singular_monitored_session_gives_the_raw_session_and_restores(tmp_path):
    with tf.Graph().as_default():
        w, global_step, train_op = _graph()
        with tf.train.SingularMonitoredSession(checkpoint_dir=str(tmp_path)) as sess:
            assert isinstance(sess.raw_session(), tf.Session)
            sess.run(train_op)
            saver = tf.get_collection(tf.GraphKeys.SAVERS)[0]  # the Scaffold's
            saver.save(sess.raw_session(), str(tmp_path / "model.ckpt"), global_step=global_step)
    with tf.Graph().as_default():
        w, global_step, train_op = _graph()
        with tf.train.SingularMonitoredSession(checkpoint_dir=str(tmp_path)) as sess:
            assert sess.run(global_step) == 1


@pytest.mark.parametrize("creator", ["chief", "worker"])
def test_session_creators_make_sessions_on_their_master(monkeypatch, creator):
    from tfc.frontend.train import session_manager

    made = []

    def new_session(target, graph, config):
        made.append((target, graph, config))
        return tf.Session("", graph=graph, config=config)

    monkeypatch.setattr(session_manager, "_new_session", new_session)
    config = tf.ConfigProto(allow_soft_placement=True)
    with tf.Graph().as_default() as graph:
        _graph()
        if creator == "chief":
            sess = tf.train.MonitoredTrainingSession(master="grpc://ps0:2222", config=config)
        else:
            # A worker waits for the chief: here nobody initializes, so the wait times out at once.
            with pytest.raises(tf.errors.DeadlineExceededError):
                tf.train.MonitoredTrainingSession(master="grpc://ps0:2222", is_chief=False, config=config,
                                                  max_wait_secs=0)
            sess = None
    assert made and all(m == ("grpc://ps0:2222", graph, config) for m in made)
    if sess is not None:
        sess.close()


def test_checkpoint_saver_hook_with_saver_and_scaffold_is_an_error(tmp_path):
    with pytest.raises(ValueError, match="^You cannot provide both saver and scaffold.$"):
        tf.train.CheckpointSaverHook(str(tmp_path), save_steps=1, saver=object(), scaffold=object())


def test_hooks_need_a_global_step():
    with tf.Graph().as_default():
        tf.Variable(1.0)
        with pytest.raises(RuntimeError, match="^Global step should be created to use StopAtStepHook.$"):
            tf.train.StopAtStepHook(num_steps=1).begin()


def test_train_namespace_exports_the_session_utilities():
    for name in ("Coordinator", "LooperThread", "SessionRunHook", "SessionRunArgs", "SessionRunContext",
                 "SessionRunValues", "StopAtStepHook", "CheckpointSaverHook", "CheckpointSaverListener",
                 "LoggingTensorHook", "NanTensorHook", "NanLossDuringTrainingError", "SummarySaverHook",
                 "StepCounterHook", "FinalOpsHook", "FeedFnHook", "GlobalStepWaiterHook", "SecondOrStepTimer",
                 "Scaffold", "SessionManager", "SessionCreator", "ChiefSessionCreator", "WorkerSessionCreator",
                 "MonitoredSession", "SingularMonitoredSession", "MonitoredTrainingSession", "Supervisor"):
        assert callable(getattr(tf.train, name)), name
    assert tf.train.SessionRunArgs("x") == ("x", None, None)
