"""tf.train.Server: binding, targets, lifetime."""
from __future__ import annotations

import socket
import threading
import time

import pytest

import tfc.compat.v1 as tf
from tfc.distributed import server as server_module
from tfc.frontend import errors

from dist_helpers import free_port


def test_local_server_target_and_server_def():
    s = tf.train.Server.create_local_server()
    try:
        port = int(s.target.rsplit(":", 1)[1])
        assert s.target == f"grpc://localhost:{port}" and port > 0
        assert (s.server_def.job_name, s.server_def.task_index, s.server_def.protocol) == ("local", 0, "grpc")
        assert dict(s.server_def.cluster.job[0].tasks) == {0: "localhost:0"}
        with socket.create_connection(("127.0.0.1", port), timeout=2):
            pass  # it listens on the loopback interface
    finally:
        s.stop()


def test_port_in_use_is_an_error_naming_the_address():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(errors.UnknownError, match=rf"Could not start gRPC server for task "
                                                      rf"/job:worker/replica:0/task:0 .* on localhost:{port}"):
            tf.train.Server({"worker": [f"localhost:{port}"]})


def test_two_servers_cannot_share_a_port_and_stop_frees_it():
    port = free_port()
    first = tf.train.Server({"worker": [f"localhost:{port}"]})
    with pytest.raises(errors.UnknownError, match=f"localhost:{port}"):
        tf.train.Server({"worker": [f"localhost:{port}"]})
    first.stop()
    first.stop()  # idempotent
    with pytest.raises(errors.FailedPreconditionError, match="has been stopped and cannot be started again"):
        first.start()
    again = tf.train.Server({"worker": [f"localhost:{port}"]})
    assert again.target == f"grpc://localhost:{port}"
    again.stop()


def test_join_returns_when_the_server_stops():
    s = tf.train.Server.create_local_server()
    joined = threading.Event()
    thread = threading.Thread(target=lambda: (s.join(), joined.set()), daemon=True)
    thread.start()
    time.sleep(0.05)
    assert not joined.is_set()
    s.stop()
    assert joined.wait(5)


def test_bad_definitions():
    with pytest.raises(errors.InvalidArgumentError, match=r"^Task 2 was not defined in job worker$"):
        tf.train.Server({"worker": ["localhost:0"]}, job_name="worker", task_index=2)
    with pytest.raises(errors.UnimplementedError, match=r"protocol 'grpc\+verbs': tfc serves 'grpc' only"):
        tf.train.Server({"worker": ["localhost:0"]}, protocol="grpc+verbs")
    with pytest.raises(errors.InvalidArgumentError, match=r'Could not parse port for local server from "nohost"'):
        tf.train.Server({"worker": ["nohost"]})


def test_unstarted_server_is_not_kept_and_a_dropped_started_one_keeps_serving():
    unstarted = tf.train.Server.create_local_server(start=False)
    assert unstarted._server not in server_module._LIVE
    unstarted.stop()
    task = tf.train.Server.create_local_server()._server  # the Server object is dropped at once
    assert task in server_module._LIVE and not task.stopped
    task.stop()
    assert task not in server_module._LIVE


def test_session_config_reaches_the_server_def():
    config = tf.ConfigProto(operation_timeout_in_ms=1234)
    s = tf.train.Server.create_local_server(config=config, start=False)
    assert s.server_def.default_session_config.operation_timeout_in_ms == 1234
    s.stop()
