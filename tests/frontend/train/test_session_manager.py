"""tf.train.SessionManager and the ready op it runs (report_uninitialized_variables:
IsVariableInitialized answered by the session, boolean_mask of the names' strings on the
host) against TensorFlow's record."""
from __future__ import annotations

import pytest

import session_scenarios as sc
import tfc.compat.v1 as tf


@pytest.fixture(scope="module")
def managed(tmp_path_factory):
    return sc.run(tf, "session_manager", tmp_path_factory.mktemp("sm")), sc.recorded("session_manager")


def test_prepare_session_errors_are_tfs(managed):
    got, want = managed
    assert got["no_init"] == want["no_init"]
    assert got["partial_init"] == want["partial_init"] == [
        "RuntimeError", "Init operations did not make model ready.  Init op: init_a, init fn: None, "
                        "local_init_op: None, error: Variables not initialized: b"]


def test_wait_for_session_times_out_as_tf(managed):
    got, want = managed
    assert got["wait"] == want["wait"] == ["DeadlineExceededError", "Session was not ready after waiting 0 secs."]


def test_recover_session_and_restoring_prepare_session(managed):
    got, want = managed
    assert got["recovered"] == want["recovered"] == [True, 5.0]
    assert got["not_recovered"] == want["not_recovered"] == [False, ["a", "b"]]
    assert got["prepared_from_checkpoint"] == want["prepared_from_checkpoint"] == [1.0, 5.0, []]
    assert got["logs"] == want["logs"]


def test_string_ops_of_a_ready_op_and_is_variable_initialized(tmp_path):
    got, want = sc.run(tf, "string_ops", tmp_path), sc.recorded("string_ops")
    assert got["gather_bad"] == "indices[1] = 6 is not in [0, 6)"
    assert got["is_variable_initialized"] == [False, True]
    assert got == want


def test_report_uninitialized_variables_builds_tfs_graph_and_compiles_once_per_answer():
    with tf.Graph().as_default() as graph:
        a = tf.Variable(1.0, name="a")
        tf.Variable(2, name="b")
        ready = tf.report_uninitialized_variables()
        assert ready.name == "report_uninitialized_variables/boolean_mask/GatherV2:0"
        assert ready.device == "/device:CPU:0"
        types = [op.type for op in graph.get_operations() if op.name.startswith("report_uninitialized_variables/")]
        assert types[:5] == ["IsVariableInitialized", "IsVariableInitialized", "Pack", "LogicalNot", "Const"]
        with tf.Session() as sess:
            assert sess.run(ready).tolist() == [b"a", b"b"]
            assert sess.run(ready).tolist() == [b"a", b"b"]
            compiles = sess.stats["compiles"]
            sess.run(a.initializer)
            assert sess.run(ready).tolist() == [b"b"]
            assert sess.stats["compiles"] == compiles + 2  # the initializer, and the ready op for the new answers


def test_is_variable_initialized_cannot_be_compiled_without_a_session():
    import tfc

    with tf.Graph().as_default():
        v = tf.Variable(1.0)
        with pytest.raises(Exception, match="IsVariableInitialized is answered by the tf.Session"):
            tfc.compile([tf.is_variable_initialized(v)])


def test_ready_for_local_init_op_without_local_init_op_is_an_error():
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="^If you pass a ready_for_local_init_op you must also pass a "):
            tf.train.SessionManager(ready_for_local_init_op=tf.constant([], tf.string))
