"""tfc's WorkerService, driven the way TensorFlow's master drives a worker."""
from __future__ import annotations

import threading
import time

import numpy as np
import pytest

import tfc.compat.v1 as tf
from tfc.distributed import wire
from tfc.distributed.client import Channel
from tfc.distributed.rendezvous import make_key, parse_key
from tfc.frontend import errors
from tfc.protos import GraphDef, master_pb2, worker_pb2

from dist_helpers import free_port

CLIENT = "/job:local/replica:0/task:0/device:CPU:0"  # the device TF's master feeds and fetches from


def call(server, method, request, response_class, timeout=10):
    channel = Channel(server.target[len("grpc://"):])
    try:
        return channel.call("WorkerService", method, request, response_class, timeout)
    finally:
        channel.close()


def device_of(server) -> str:
    task = server._server.task
    return task.device


def incarnation_of(server) -> int:
    return server._server.task.incarnation


def recv_node(graph_def, name, tensor_name, dtype, send_device, incarnation, recv_device, client_terminated):
    node = graph_def.node.add(name=name, op="_Recv", device=recv_device)
    node.attr["tensor_type"].type = dtype
    node.attr["tensor_name"].s = tensor_name.encode()
    node.attr["send_device"].s = send_device.encode()
    node.attr["send_device_incarnation"].i = incarnation
    node.attr["recv_device"].s = recv_device.encode()
    node.attr["client_terminated"].b = client_terminated
    return make_key(send_device, incarnation, recv_device, tensor_name)


def send_node(graph_def, name, inp, tensor_name, dtype, send_device, incarnation, recv_device, client_terminated):
    node = graph_def.node.add(name=name, op="_Send", input=[inp], device=send_device)
    node.attr["T"].type = dtype
    node.attr["tensor_name"].s = tensor_name.encode()
    node.attr["send_device"].s = send_device.encode()
    node.attr["send_device_incarnation"].i = incarnation
    node.attr["recv_device"].s = recv_device.encode()
    node.attr["client_terminated"].b = client_terminated
    return make_key(send_device, incarnation, recv_device, tensor_name)


def const_node(graph_def, name, value, device):
    node = graph_def.node.add(name=name, op="Const", device=device)
    node.attr["dtype"].type = wire.datatype_enum(np.asarray(value).dtype)
    node.attr["value"].tensor.CopyFrom(wire.to_tensor_proto(np.asarray(value)))


def binary_node(graph_def, name, op, a, b, device, dtype=1):
    node = graph_def.node.add(name=name, op=op, input=[a, b], device=device)
    node.attr["T"].type = dtype


def scale_partition(server, factor=2.0, client_send=True):
    """x (fed by the client) * factor -> sent to the client (or to another task)."""
    device = device_of(server)
    graph_def = GraphDef()
    x_key = recv_node(graph_def, "_recv_x_0", "x:0", 1, CLIENT, 1, device, True)
    const_node(graph_def, "factor", np.float32(factor), device)
    binary_node(graph_def, "y", "Mul", "_recv_x_0", "factor", device)
    y_key = send_node(graph_def, "_send_y_0", "y", "y:0", 1, device, incarnation_of(server), CLIENT, client_send)
    return graph_def, x_key, y_key


def register(server, graph_def, handle="", created=False):
    response = call(server, "RegisterGraph", worker_pb2.RegisterGraphRequest(
        session_handle=handle, create_worker_session_called=created, graph_def=graph_def),
        worker_pb2.RegisterGraphResponse)
    return response.graph_handle


def run_graph(server, graph_handle, step_id, sends=(), recv_keys=(), handle="", created=False, in_body=False,
              timeout=30):
    request = worker_pb2.RunGraphRequest(session_handle=handle, create_worker_session_called=created,
                                         graph_handle=graph_handle, step_id=step_id, recv_key=list(recv_keys),
                                         store_errors_in_response_body=in_body)
    for key, value in sends:
        request.send.add().CopyFrom(wire.named_tensor(key, value))
    return call(server, "RunGraph", request, worker_pb2.RunGraphResponse, timeout)


def recv_tensor(server, step_id, key, timeout=10):
    response = call(server, "RecvTensor", worker_pb2.RecvTensorRequest(step_id=step_id, rendezvous_key=key),
                    worker_pb2.RecvTensorResponse, timeout)
    return wire.to_ndarray(response.tensor)


def test_get_status_reports_the_task_cpu(server):
    status = call(server, "GetStatus", worker_pb2.GetStatusRequest(), worker_pb2.GetStatusResponse)
    (device,) = status.device_attributes
    assert (device.name, device.device_type, device.memory_limit) == (CLIENT, "CPU", 268435456)
    assert device.incarnation == incarnation_of(server) != 0
    listed = Channel(server.target[7:]).call("MasterService", "ListDevices", master_pb2.ListDevicesRequest(),
                                             master_pb2.ListDevicesResponse, 10)
    assert list(listed.local_device) == [device] and not listed.remote_device


def test_client_terminated_feeds_and_fetches(server):
    graph_def, x_key, y_key = scale_partition(server)
    handle = register(server, graph_def)
    response = run_graph(server, handle, 1, [(x_key, np.array([1.0, 2.5], np.float32))], [y_key])
    assert [named.name for named in response.recv] == [y_key]
    assert wire.to_ndarray(response.recv[0].tensor).tolist() == [2.0, 5.0]
    again = run_graph(server, handle, 2, [(x_key, np.ones((2, 2), np.float32))], [y_key])  # another shape
    assert wire.to_ndarray(again.recv[0].tensor).tolist() == [[2.0, 2.0], [2.0, 2.0]]
    with pytest.raises(errors.InvalidArgumentError, match=r"RunGraph sent no value for the _Recv 'tfc_recv_0'"):
        run_graph(server, handle, 3, [], [y_key])
    call(server, "DeregisterGraph", worker_pb2.DeregisterGraphRequest(graph_handle=handle),
         worker_pb2.DeregisterGraphResponse)
    with pytest.raises(errors.InvalidArgumentError, match=f"Graph handle is not found: {handle}"):
        run_graph(server, handle, 4, [(x_key, np.ones(2, np.float32))], [y_key])


def test_variables_live_on_the_task(server):
    device = device_of(server)
    init = GraphDef()
    var = init.node.add(name="worker_v", op="VariableV2", device=device)
    var.attr["dtype"].type = 1
    var.attr["shape"].shape.dim.add(size=2)
    const_node(init, "worker_v/initial", np.array([3.0, 4.0], np.float32), device)
    binary_node(init, "worker_v/Assign", "Assign", "worker_v", "worker_v/initial", device)
    read = GraphDef()
    read.node.add().CopyFrom(var)
    read.node.add(name="worker_v/read", op="Identity", input=["worker_v"], device=device).attr["T"].type = 1
    key = send_node(read, "_send_v", "worker_v/read", "worker_v/read:0", 1, device, 1, CLIENT, True)
    read_handle = register(server, read)
    failed = run_graph(server, read_handle, 10, [], [key], in_body=True)
    assert failed.status_code == errors.FAILED_PRECONDITION
    assert failed.status_error_message == "Attempting to use uninitialized value worker_v\n\t [[{{node worker_v}}]]"
    run_graph(server, register(server, init), 11)
    assert wire.to_ndarray(run_graph(server, read_handle, 12, [], [key]).recv[0].tensor).tolist() == [3.0, 4.0]
    with tf.Graph().as_default():  # a client session on the same task sees it too
        v = tf.Variable([0.0, 0.0], name="worker_v")
        with tf.Session(server.target) as sess:
            assert sess.run(v).tolist() == [3.0, 4.0]
    call(server, "CleanupAll", worker_pb2.CleanupAllRequest(), worker_pb2.CleanupAllResponse)
    with pytest.raises(errors.FailedPreconditionError, match="uninitialized value worker_v"):
        run_graph(server, read_handle, 13, [], [key])


def test_sends_to_other_tasks_wait_in_the_rendezvous(server):
    graph_def, x_key, y_key = scale_partition(server, 3.0, client_send=False)
    handle = register(server, graph_def)
    early = {}
    waiter = threading.Thread(target=lambda: early.setdefault("value", recv_tensor(server, 21, y_key)))
    waiter.start()  # RecvTensor before the RunGraph that produces its value
    time.sleep(0.2)
    assert waiter.is_alive()
    response = run_graph(server, handle, 21, [(x_key, np.float32(2.0))], [])
    assert len(response.recv) == 0
    waiter.join(10)
    assert early["value"][()] == 6.0
    assert recv_tensor(server, 21, y_key)[()] == 6.0
    with pytest.raises(errors.DeadlineExceededError):
        recv_tensor(server, 22, y_key, timeout=0.3)
    late = {}

    def wait_for_cleanup():
        try:
            recv_tensor(server, 23, y_key)
        except errors.OpError as e:
            late["error"] = e

    waiter = threading.Thread(target=wait_for_cleanup)
    waiter.start()
    time.sleep(0.2)
    call(server, "CleanupGraph", worker_pb2.CleanupGraphRequest(step_id=23), worker_pb2.CleanupGraphResponse)
    waiter.join(10)
    assert isinstance(late["error"], errors.AbortedError) and "Step 23 was cleaned up" in late["error"].message
    call(server, "CleanupGraph", worker_pb2.CleanupGraphRequest(step_id=21), worker_pb2.CleanupGraphResponse)
    with pytest.raises(errors.AbortedError, match="Step 21 was cleaned up on /job:local/replica:0/task:0"):
        recv_tensor(server, 21, y_key)  # a late receiver fails at once


def test_a_failed_step_aborts_its_receivers(server):
    device = device_of(server)
    graph_def = GraphDef()
    x_key = recv_node(graph_def, "_recv_x", "x:0", 1, CLIENT, 1, device, True)
    shape = graph_def.node.add(name="shape", op="Const", device=device)
    shape.attr["dtype"].type = 3
    shape.attr["value"].tensor.CopyFrom(wire.to_tensor_proto(np.array([2, 2], np.int32)))
    reshape = graph_def.node.add(name="r", op="Reshape", input=["_recv_x", "shape"], device=device)
    reshape.attr["T"].type = 1
    reshape.attr["Tshape"].type = 3
    key = send_node(graph_def, "_send_r", "r", "r:0", 1, device, incarnation_of(server),
                    "/job:other/replica:0/task:0/device:CPU:0", False)
    handle = register(server, graph_def)
    response = run_graph(server, handle, 31, [(x_key, np.ones(3, np.float32))], [], in_body=True)
    assert response.status_code == errors.INVALID_ARGUMENT
    with pytest.raises(errors.InvalidArgumentError) as caught:
        recv_tensor(server, 31, key)
    assert caught.value.message == response.status_error_message


def test_worker_sessions(server):
    graph_def, x_key, y_key = scale_partition(server)
    with pytest.raises(errors.AbortedError, match=r"^Session handle is not found: nope\. Possibly this worker "
                                                  r'\("/job:local/replica:0/task:0"\) just restarted\.$'):
        register(server, graph_def, "nope", True)
    call(server, "CreateWorkerSession", worker_pb2.CreateWorkerSessionRequest(session_handle="ws1",
                                                                              isolate_session_state=True),
         worker_pb2.CreateWorkerSessionResponse)
    handle = register(server, graph_def, "ws1", True)
    response = run_graph(server, handle, 41, [(x_key, np.float32(4.0))], [y_key], "ws1", True)
    assert wire.to_ndarray(response.recv[0].tensor)[()] == 8.0
    with pytest.raises(errors.InvalidArgumentError, match="Graph handle is not found"):
        run_graph(server, handle, 42, [(x_key, np.float32(4.0))], [y_key])  # not the legacy session's
    call(server, "DeleteWorkerSession", worker_pb2.DeleteWorkerSessionRequest(session_handle="ws1"),
         worker_pb2.DeleteWorkerSessionResponse)
    with pytest.raises(errors.AbortedError, match="Session handle is not found: ws1"):
        run_graph(server, handle, 43, [(x_key, np.float32(4.0))], [y_key], "ws1", True)
    for method, request, response_class in [("Logging", worker_pb2.LoggingRequest(), worker_pb2.LoggingResponse),
                                            ("Tracing", worker_pb2.TracingRequest(), worker_pb2.TracingResponse)]:
        assert call(server, method, request, response_class) == response_class()


def test_a_partition_receives_from_another_task():
    ps_port, worker_port = free_port(), free_port()
    cluster = {"ps": [f"localhost:{ps_port}"], "worker": [f"localhost:{worker_port}"]}
    ps = tf.train.Server(cluster, job_name="ps", task_index=0)
    worker = tf.train.Server(cluster, job_name="worker", task_index=0)
    try:
        ps_device, worker_device = device_of(ps), device_of(worker)
        ps_graph = GraphDef()
        const_node(ps_graph, "c", np.array([1.0, 2.0], np.float32), ps_device)
        edge = send_node(ps_graph, "_send_c", "c", "edge_1_c", 1, ps_device, incarnation_of(ps), worker_device,
                         False)
        worker_graph = GraphDef()
        assert recv_node(worker_graph, "_recv_c", "edge_1_c", 1, ps_device, incarnation_of(ps), worker_device,
                         False) == edge
        binary_node(worker_graph, "sum", "Add", "_recv_c", "_recv_c", worker_device)
        out = send_node(worker_graph, "_send_sum", "sum", "sum:0", 1, worker_device, 1, CLIENT, True)
        ps_handle, worker_handle = register(ps, ps_graph), register(worker, worker_graph)
        result = {}
        consumer = threading.Thread(target=lambda: result.setdefault("r", run_graph(worker, worker_handle, 51,
                                                                                    [], [out])))
        consumer.start()  # it waits for the ps's tensor
        time.sleep(0.2)
        run_graph(ps, ps_handle, 51)
        consumer.join(20)
        assert wire.to_ndarray(result["r"].recv[0].tensor).tolist() == [2.0, 4.0]
    finally:
        worker.stop()
        ps.stop()


def test_rendezvous_keys():
    key = make_key("/job:ps/replica:0/task:0/device:CPU:0", 0x1234,
                   "/job:worker/replica:0/task:0/device:CPU:0", "edge_4_v/read")
    assert key == ("/job:ps/replica:0/task:0/device:CPU:0;0000000000001234;"
                   "/job:worker/replica:0/task:0/device:CPU:0;edge_4_v/read;0:0")
    assert parse_key(key) == ("/job:ps/replica:0/task:0/device:CPU:0", 0x1234,
                              "/job:worker/replica:0/task:0/device:CPU:0", "edge_4_v/read", (0, 0))
    assert make_key("a", -1, "b", "e").split(";")[1] == "ffffffffffffffff"
    with pytest.raises(errors.InvalidArgumentError, match="Invalid rendezvous key: a;b"):
        parse_key("a;b")


def test_recv_tensor_refuses_a_key_for_another_incarnation(server):
    """TF's worker: a key naming this task's device with another incarnation was made for an
    earlier process of the task (it restarted since the master learnt its incarnation)."""
    stale = make_key(device_of(server), incarnation_of(server) + 2, "/job:other/replica:0/task:0/device:CPU:0",
                     "edge_1_x")
    with pytest.raises(errors.AbortedError) as caught:
        recv_tensor(server, 61, stale)
    own = incarnation_of(server) & 0xFFFFFFFFFFFFFFFF
    assert caught.value.message == (f"RecvTensor expects a different device incarnation: {own + 2} vs. {own}. Your "
                                    "worker job (\"/job:local/replica:0/task:0\") was probably restarted. Check your "
                                    "worker job for the reason why it was restarted.")
    other = make_key("/job:other/replica:0/task:0/device:CPU:0", 5, device_of(server), "edge_2_x")
    with pytest.raises(errors.DeadlineExceededError):  # another task's key: waited for, as before
        recv_tensor(server, 61, other, timeout=0.3)
