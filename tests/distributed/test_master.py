"""tf.Session("grpc://...") against tfc's master: steps, variables on the task, errors."""
from __future__ import annotations

import collections
import socket
import threading
import time

import numpy as np
import pytest

import tfc.compat.v1 as tf
from tfc.distributed.client import Channel
from tfc.frontend import errors
from tfc.protos import master_pb2

from dist_helpers import free_port


def address(server) -> str:
    return server.target[len("grpc://"):]


def master_call(server, method, request, response_class, timeout=10):
    channel = Channel(address(server))
    try:
        return channel.call("MasterService", method, request, response_class, timeout)
    finally:
        channel.close()


@pytest.fixture
def graph():
    with tf.Graph().as_default() as g:
        yield g


def test_feeds_fetch_structures_and_targets(server, graph):
    x = tf.placeholder(tf.float32, [None, 2], name="x")
    w = tf.constant([[1.0, 2.0], [3.0, 4.0]], name="w")
    y = tf.matmul(x, w, name="y")
    total = tf.reduce_sum(y, name="total")
    label = tf.constant(["ab", "c"], name="label")
    flag = tf.reduce_all(tf.greater(y, 0.0))
    pair = collections.namedtuple("pair", "a b")
    with tf.Session(server.target) as sess:
        out = sess.run({"y": y, "t": (total, [x, "label:0"]), "p": pair(flag, y.op)}, {x: [[1, 1], [0, 2]]})
        assert out["y"].dtype == np.float32 and out["y"].tolist() == [[4.0, 6.0], [6.0, 8.0]]
        assert isinstance(out["t"], tuple) and isinstance(out["t"][0], np.float32) and out["t"][0] == 24.0
        assert out["t"][1][0].tolist() == [[1.0, 1.0], [0.0, 2.0]]  # a fed fetch: the fed value
        assert out["t"][1][1].tolist() == [b"ab", b"c"]
        assert isinstance(out["p"], pair) and out["p"].a is np.True_ and out["p"].b is None
        assert sess.run(total, feed_dict={"x:0": np.ones((3, 2), np.float32)}) == 30.0
        assert sess.run(w.op) is None
        assert sess.run([]) == []
        assert sess.stats["runs"] == 4


def test_variables_assign_extend_and_persistence(server, graph):
    v = tf.Variable([1.0, 2.0], name="persist_v")
    step = tf.assign_add(v, [10.0, 10.0], name="persist_step")
    with tf.Session(server.target) as sess:
        with pytest.raises(errors.FailedPreconditionError) as caught:
            sess.run(v)
        assert caught.value.message == "Attempting to use uninitialized value persist_v"
        assert caught.value.op is v.op  # the op, found in the client's graph
        sess.run(tf.global_variables_initializer())  # grows the graph: ExtendSession
        assert sess.run(step).tolist() == [11.0, 12.0]
        doubled = tf.identity(v * 2.0, name="persist_doubled")  # grows it again
        assert sess.run(doubled).tolist() == [22.0, 24.0]
    with tf.Session(server.target) as sess:  # a new session on the server sees the variable
        assert sess.run(v).tolist() == [11.0, 12.0]
    tf.Session.reset(server.target)
    with tf.Session(server.target) as sess:
        with pytest.raises(errors.FailedPreconditionError, match="uninitialized value persist_v"):
            sess.run(v)


def test_reset_clears_only_the_named_containers(server, graph):
    from tfc.frontend.ops.state_ops import variable_op_v2

    boxed = variable_op_v2([], tf.float32, name="boxed", container="box")
    plain = tf.Variable(2.0, name="plain")
    alias = variable_op_v2([], tf.float32, name="alias", shared_name="plain")  # the same variable
    tasks = server._server.resources
    with tf.Session(server.target) as sess:
        sess.run([tf.assign(boxed, 1.0), plain.initializer])
        assert sess.run(alias) == 2.0
    assert tasks.names()["box"] == ["boxed"] and "plain" in tasks.names()[""]
    tf.Session.reset(server.target, ["box"])
    with tf.Session(server.target) as sess:
        assert sess.run(plain) == 2.0
        with pytest.raises(errors.FailedPreconditionError, match="uninitialized value boxed"):
            sess.run(boxed)
    tf.Session.reset(server.target)
    assert "" not in tasks.names()


def test_isolate_session_state_keeps_variables_private(server, graph):
    v = tf.Variable(5.0, name="isolated_v")
    config = tf.ConfigProto(isolate_session_state=True)
    with tf.Session(server.target, config=config) as private:
        private.run(v.initializer)
        assert private.run(v) == 5.0
        with tf.Session(server.target) as shared:
            with pytest.raises(errors.FailedPreconditionError, match="uninitialized value isolated_v"):
                shared.run(v)
    assert "isolated_v" not in server._server.resources.names().get("", [])


def test_ops_on_other_tasks_and_devices():
    ps_port = free_port()
    s = tf.train.Server({"worker": ["localhost:0"], "ps": [f"localhost:{ps_port}"]}, job_name="worker", task_index=0)
    try:
        with tf.Graph().as_default():
            with tf.device("/job:ps/task:0"):
                far = tf.constant(1.0, name="far")
            with tf.device("/job:worker/task:0/cpu:0"):
                near = tf.add(far, 1.0, name="near")
            with tf.device("/job:nowhere"):
                lost = tf.constant(2.0, name="lost")
            with tf.device("/gpu:0"):
                gpu = tf.constant(3.0, name="gpu")
            here = tf.constant(4.0, name="here")
            with tf.Session(s.target) as sess:
                assert sess.run(here) == 4.0
                started = time.monotonic()
                with pytest.raises(errors.UnavailableError) as caught:
                    sess.run(near)  # far is on the ps, which is not up
                assert time.monotonic() - started < 10
                assert caught.value.message.startswith(f"/job:ps/replica:0/task:0 at localhost:{ps_port} is "
                                                       "unavailable: GetStatus failed")
                with pytest.raises(errors.InvalidArgumentError, match=r"Cannot assign a device for operation lost: "
                                                                      r"\{\{node lost\}\} was explicitly assigned to "
                                                                      r"/job:nowhere but available devices are \[ "
                                                                      r"/job:ps/replica:0/task:0/device:CPU:0, "
                                                                      r"/job:worker/replica:0/task:0/device:CPU:0 \]"):
                    sess.run(lost)
                with pytest.raises(errors.InvalidArgumentError, match="Cannot assign a device for operation gpu"):
                    sess.run(gpu)
            with tf.Session(s.target, config=tf.ConfigProto(allow_soft_placement=True)) as sess:
                assert sess.run([lost, gpu]) == [2.0, 3.0]
            devices = tf.Session(s.target).list_devices()
            assert [(d.name, d.device_type) for d in devices] == [("/job:worker/replica:0/task:0/device:CPU:0",
                                                                   "CPU")]  # ps is not up: skipped
    finally:
        s.stop()


def test_errors_from_steps_keep_their_class(server, graph):
    x = tf.placeholder(tf.float32, [None], name="x")
    reshaped = tf.reshape(x, [2, 2])
    with tf.Session(server.target) as sess:
        with pytest.raises(ValueError, match=r"Cannot feed value of shape \(2, 2\) for Tensor 'x:0', which has "
                                             r"shape '\(\?,\)'"):
            sess.run(reshaped, {x: np.zeros((2, 2))})  # checked by the client, as locally
        with pytest.raises(errors.InvalidArgumentError) as remote:
            sess.run(reshaped, {x: [1.0, 2.0, 3.0]})
    with tf.Session() as local_sess:
        with pytest.raises(errors.InvalidArgumentError) as local:
            local_sess.run(reshaped, {x: [1.0, 2.0, 3.0]})
    assert remote.value.message == local.value.message
    with tf.Session(server.target) as sess:
        with pytest.raises(errors.InvalidArgumentError, match="You must feed a value for placeholder tensor 'x'"):
            sess.run(reshaped)


def test_run_options_timeout(server, graph):
    x = tf.placeholder(tf.float32, name="x")
    y = tf.sin(x) * 3.0
    with tf.Session(server.target) as sess:
        with pytest.raises(errors.DeadlineExceededError, match=r"The step did not finish within 1 ms"):
            sess.run(y, {x: 1.0}, options=tf.RunOptions(timeout_in_ms=1))  # compiling alone takes longer
        time.sleep(0.2)
        assert sess.run(y, {x: 0.0}, options=tf.RunOptions(timeout_in_ms=20000)) == 0.0


def test_make_callable_and_interactive_session(server, graph):
    x = tf.placeholder(tf.int32, [2], name="x")
    y = x * 3
    sess = tf.InteractiveSession(server.target)
    try:
        call = sess.make_callable(y, [x])
        assert call(np.array([1, 2], np.int32)).tolist() == [3, 6]
        assert y.eval({x: [2, 3]}).tolist() == [6, 9]
    finally:
        sess.close()


def test_raw_master_rpcs(server, graph):
    tf.constant(1.0, name="one")
    created = master_call(server, "CreateSession",
                          master_pb2.CreateSessionRequest(graph_def=graph.as_graph_def()),
                          master_pb2.CreateSessionResponse)
    handle = created.session_handle
    assert created.graph_version == 0
    with pytest.raises(errors.AbortedError, match=r"^Current version is 0 but caller expected 3\.$"):
        master_call(server, "ExtendSession", master_pb2.ExtendSessionRequest(session_handle=handle,
                                                                              current_graph_version=3),
                    master_pb2.ExtendSessionResponse)
    setup = master_call(server, "PartialRunSetup", master_pb2.PartialRunSetupRequest(session_handle=handle,
                                                                                     fetch=["one:0"]),
                        master_pb2.PartialRunSetupResponse)
    step = master_pb2.RunStepRequest(session_handle=handle, fetch=["one:0"], partial_run_handle=setup.partial_run_handle)
    assert master_call(server, "RunStep", step, master_pb2.RunStepResponse).tensor[0].name == "one:0"
    with pytest.raises(errors.InvalidArgumentError, match="Must run 'setup' before performing partial runs!"):
        master_call(server, "RunStep", step, master_pb2.RunStepResponse)  # its only fetch is done
    missing = master_pb2.RunStepRequest(session_handle=handle, fetch=["missing:0"])
    with pytest.raises(errors.InvalidArgumentError, match="missing:0"):  # in the gRPC status
        master_call(server, "RunStep", missing, master_pb2.RunStepResponse)
    missing.store_errors_in_response_body = True  # in the response
    response = master_call(server, "RunStep", missing, master_pb2.RunStepResponse)
    assert response.status_code == errors.INVALID_ARGUMENT and "missing:0" in response.status_error_message
    ok = master_call(server, "RunStep", master_pb2.RunStepRequest(session_handle=handle, fetch=["one:0"]),
                     master_pb2.RunStepResponse)
    assert ok.status_code == 0 and ok.tensor[0].name == "one:0"
    master_call(server, "CloseSession", master_pb2.CloseSessionRequest(session_handle=handle),
                master_pb2.CloseSessionResponse)
    gone = master_pb2.RunStepRequest(session_handle=handle, fetch=["one:0"], store_errors_in_response_body=True)
    response = master_call(server, "RunStep", gone, master_pb2.RunStepResponse)
    assert (response.status_code, response.status_error_message) == (errors.ABORTED,
                                                                     f"Session {handle} is not found.")
    with pytest.raises(errors.UnimplementedError):  # a method TF's master has and tfc's does not serve
        Channel(address(server)).call("MasterService", "NoSuchMethod", master_pb2.ResetRequest(),
                                      master_pb2.ResetResponse, 5)


def test_reset_closes_open_sessions(server, graph):
    c = tf.constant(7.0, name="seven")
    sess = tf.Session(server.target)
    assert sess.run(c) == 7.0
    tf.Session.reset(server.target)
    with pytest.raises(errors.AbortedError, match=r"^Session [0-9a-f]+ is not found\.$"):
        sess.run(c)
    sess.close()


def test_unknown_op_types_are_not_found(server):
    from tfc.protos import GraphDef

    graph_def = GraphDef()
    graph_def.node.add(name="n", op="NoSuchOpType")
    with pytest.raises(errors.NotFoundError, match="NoSuchOpType"):
        master_call(server, "CreateSession", master_pb2.CreateSessionRequest(graph_def=graph_def),
                    master_pb2.CreateSessionResponse)


def test_unreachable_server_is_unavailable_at_once(graph):
    c = tf.constant(1.0)
    port = free_port()
    started = time.monotonic()
    with tf.Session(f"grpc://localhost:{port}") as sess:
        with pytest.raises(errors.UnavailableError, match=rf"^CreateSession to grpc://localhost:{port} failed: "
                                                          "the server is unavailable"):
            sess.run(c)
    with pytest.raises(errors.UnavailableError, match=f"Reset to grpc://localhost:{port}"):
        tf.Session.reset(f"grpc://localhost:{port}")
    assert time.monotonic() - started < 10


def test_silent_peer_hits_the_operation_deadline(graph):
    c = tf.constant(1.0)
    with socket.socket() as silent:  # accepts connections, never speaks HTTP/2
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        port = silent.getsockname()[1]
        config = tf.ConfigProto(operation_timeout_in_ms=300)
        started = time.monotonic()
        with tf.Session(f"grpc://127.0.0.1:{port}", config=config) as sess:
            with pytest.raises(errors.DeadlineExceededError, match=rf"^CreateSession to grpc://127.0.0.1:{port} did "
                                                                   r"not complete within 300 ms"):
                sess.run(c)
        assert time.monotonic() - started < 5


def test_concurrent_sessions(server):
    results = {}

    def work(i):
        with tf.Graph().as_default():
            x = tf.placeholder(tf.float32, [3], name="x")
            y = tf.reduce_sum(x * float(i))
            with tf.Session(server.target) as sess:
                results[i] = [sess.run(y, {x: [1.0, 2.0, 3.0]}) for _ in range(3)]

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert results == {i: [6.0 * i] * 3 for i in range(4)}


def test_training_matches_a_local_session(server, graph):
    x = tf.constant([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], name="tx")
    target = tf.constant([[1.0], [2.0], [3.0]], name="ty")
    w = tf.Variable([[0.1], [0.2]], name="train_w")
    b = tf.Variable([0.0], name="train_b")
    loss = tf.reduce_mean(tf.square(tf.matmul(x, w) + b - target))
    train = tf.train.GradientDescentOptimizer(0.05).minimize(loss)
    init = tf.global_variables_initializer()

    def losses(sess):
        sess.run(init)
        return [sess.run([train, loss])[1] for _ in range(5)] + [sess.run(w).tolist()]

    with tf.Session(server.target, config=tf.ConfigProto(isolate_session_state=True)) as remote:
        remote_losses = losses(remote)
    with tf.Session() as local:
        assert remote_losses == losses(local)  # the same compiled steps, bit for bit


def test_closed_sessions_and_stopped_servers(graph):
    c = tf.constant(3.0, name="c3")
    s = tf.train.Server.create_local_server()
    sess = tf.Session(s.target)
    assert sess.run(c) == 3.0
    s.stop()
    with pytest.raises(errors.UnavailableError, match=rf"^RunStep to {s.target} failed: the server is unavailable"):
        sess.run(c)
    sess.close()  # CloseSession fails quietly
    with pytest.raises(RuntimeError, match="Attempted to use a closed Session."):
        sess.run(c)


def test_extend_with_a_duplicate_node_is_refused(server, graph):
    tf.constant(1.0, name="dup")
    handle = master_call(server, "CreateSession", master_pb2.CreateSessionRequest(graph_def=graph.as_graph_def()),
                         master_pb2.CreateSessionResponse).session_handle
    with pytest.raises(errors.InvalidArgumentError, match=r"^Duplicate node name in graph: 'dup'$"):
        master_call(server, "ExtendSession", master_pb2.ExtendSessionRequest(
            session_handle=handle, graph_def=graph.as_graph_def(), current_graph_version=0),
            master_pb2.ExtendSessionResponse)
    master_call(server, "CloseSession", master_pb2.CloseSessionRequest(session_handle=handle),
                master_pb2.CloseSessionResponse)


def test_a_client_in_the_servers_process_calls_its_master_without_grpc(server, graph):
    """TF's LocalMaster: the session's calls reach the master in this process directly (no
    channel is opened), with the same errors and results as over gRPC."""
    x = tf.placeholder(tf.float32, [2], name="x")
    y = tf.multiply(x, 3.0, name="y")
    bad = tf.check_numerics(tf.log(x), "log of x")
    sess = tf.Session(server.target)
    assert sess.run(y, {x: [1.0, 2.0]}).tolist() == [3.0, 6.0]
    with pytest.raises(errors.InvalidArgumentError, match="log of x : Tensor had NaN values") as caught:
        sess.run(bad, {x: [-1.0, 1.0]})
    assert caught.value.op is bad.op
    assert sess._remote._channel is None
    handle = sess._remote.handle
    sess.close()
    with pytest.raises(errors.AbortedError, match=f"Session {handle} is not found"):  # closed on the master
        master_call(server, "CloseSession", master_pb2.CloseSessionRequest(session_handle=handle),
                    master_pb2.CloseSessionResponse)
