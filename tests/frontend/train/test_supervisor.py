"""tf.train.Supervisor against TensorFlow's record: managed_session without services, with
summary_computed and an explicit save; restoring from that logdir; the default services
(a checkpoint at the start, none at the end); an exception raised inside."""
from __future__ import annotations

import numpy as np
import pytest

import session_scenarios as sc
import tfc.compat.v1 as tf
from tfc.frontend import tf_logging


@pytest.fixture(scope="module")
def supervised(tmp_path_factory):
    tf_logging._warned_deprecations.discard("Supervisor.__init__")  # TF warns once per process
    return sc.run(tf, "supervisor", tmp_path_factory.mktemp("sv")), sc.recorded("supervisor")


def test_managed_session_values_and_should_stop(supervised):
    got, want = supervised
    assert got["first"]["values"] == want["first"]["values"] == [False, 1, 2, 3, True]


def test_saved_files_and_state_file_are_tfs(supervised):
    got, want = supervised
    assert got["first"]["path"] == want["first"]["path"] == "<DIR>/sv/model.ckpt-3"
    assert got["first"]["files"] == want["first"]["files"]
    assert got["first"]["state"] == want["first"]["state"]


def test_supervisor_gathers_tfs_ops(supervised):
    got, want = supervised
    for key in ("save_path", "global_step", "ready_op", "init_op", "summary_op"):
        assert got["first"][key] == want["first"][key], key


def test_log_lines_and_deprecation_warning_are_tfs(supervised):
    got, want = supervised
    assert got["first"]["logs"][0].startswith("WARNING:From session_scenarios.py:")
    assert got["first"]["logs"] == want["first"]["logs"]
    assert got["restored"]["logs"] == want["restored"]["logs"]


def test_events_start_summary_stop(supervised):
    got, want = supervised
    assert got["first"]["events"] == want["first"]["events"]


def test_second_supervisor_restores_the_logdir(supervised):
    got, want = supervised
    assert got["restored"]["values"][0] == want["restored"]["values"][0] == 3
    assert np.allclose(got["restored"]["values"][1], want["restored"]["values"][1], rtol=1e-6, atol=0)


def test_standard_services_checkpoint_at_the_start_only(supervised):
    got, want = supervised
    assert got["services"] == want["services"]
    assert "model.ckpt-0.index" in got["services"]["files"]


def test_an_exception_inside_managed_session_is_reraised(supervised):
    got, want = supervised
    assert got["exception"] == want["exception"] == [["ValueError", "boom"], True]


def test_summary_computed_needs_a_writer():
    with tf.Graph().as_default():
        tf.Variable(1.0)
        sv = tf.train.Supervisor(logdir=None)
        with pytest.raises(RuntimeError, match="^Writing a summary requires a summary writer.$"):
            sv.summary_computed(None, b"")


def test_seed_000_supervisor_program_runs_as_in_tf(tmp_path):
    tf_logging._warned_deprecations.discard("Supervisor.__init__")
    # sv.stop() after managed_session's own stop writes to the closed writer: TF warns too.
    with pytest.warns(UserWarning, match="^Attempting to use a closed FileWriter"):
        got = sc.run(tf, "supervisor_seed", tmp_path)
    want = sc.recorded("supervisor_seed")
    assert got["printed"][0] == "步驟: 10, loss: 142.81369018554688"
    assert got["printed"] == want["printed"]
    assert got["files"] == want["files"]  # the checkpoint thread's model.ckpt-0, no final save
    assert got["state"] == want["state"]
    assert got["logs"] == want["logs"]
    assert (got["summary_op"], got["global_step"]) == (None, "Variable:0")
