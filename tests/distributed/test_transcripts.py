"""Replays of TensorFlow's recorded gRPC conversations (tests/fixtures/tf_grpc_transcripts.json,
made by tests/fixtures/make_tf_grpc_transcripts.py with TF 2.21): no TensorFlow needed.

- TensorFlow's client's requests, byte for byte, to tfc's master: the answers match what
  TensorFlow's master answered;
- tfc's client against a fake master answering with TensorFlow's master's recorded answers;
- TensorFlow's master's requests to a worker, replayed to tfc's worker (with a fake chief
  answering its RecvTensor calls from the record): the answers match TensorFlow's worker's.
"""
from __future__ import annotations

import os
from concurrent import futures

import pytest

import tfc.compat.v1 as tf
from tfc.distributed import wire
from tfc.distributed.client import Channel
from tfc.frontend import errors
from tfc.protos import master_pb2, worker_pb2

import transcripts
from dist_helpers import ROOT
from workloads import EXPECTED, tfc_client_workload

FIXTURE = os.path.join(ROOT, "tests", "fixtures", "tf_grpc_transcripts.json")


@pytest.fixture(scope="module")
def recorded():
    return transcripts.load(FIXTURE)


def messages(service_module, method):
    return getattr(service_module, f"{method}Request"), getattr(service_module, f"{method}Response")


def call_or_error(channel, service, method, request, response_class):
    try:
        return 0, channel.call(service, method, request, response_class, 30)
    except errors.OpError as e:
        return e.error_code, e


def assert_same_tensors(ours, theirs):
    """The same named tensors (TF's master answers them in its own order: clients match names)."""
    ours, theirs = sorted(ours, key=lambda t: t.name), sorted(theirs, key=lambda t: t.name)
    assert [t.name for t in ours] == [t.name for t in theirs]
    for a, b in zip(ours, theirs):
        assert a.tensor.dtype == b.tensor.dtype, a.name
        mine, tf_value = wire.to_ndarray(a.tensor), wire.to_ndarray(b.tensor)
        assert mine.shape == tf_value.shape and mine.tolist() == tf_value.tolist(), a.name


def test_tf_client_requests_on_tfc_master(recorded, server):
    channel = Channel(server.target[len("grpc://"):])
    handles: dict = {}
    checked = []
    try:
        for call in recorded["tf_client"]["calls"]:
            method = call["method"].rsplit("/", 1)[1]
            request_class, response_class = messages(master_pb2, method)
            request = request_class.FromString(transcripts.decode(call["request"]))
            theirs = response_class.FromString(transcripts.decode(call["response"]))
            if hasattr(request, "session_handle") and request.session_handle:
                request.session_handle = handles[request.session_handle]
            code, ours = call_or_error(channel, "MasterService", method, request, response_class)
            assert code == call["code"] == 0, (method, ours)
            if method == "CreateSession":
                handles[theirs.session_handle] = ours.session_handle
                assert ours.graph_version == theirs.graph_version
            elif method == "ExtendSession":
                assert ours.new_graph_version == theirs.new_graph_version
            elif method == "RunStep":
                assert request.store_errors_in_response_body
                assert ours.status_code == theirs.status_code
                if theirs.status_code:
                    assert ours.status_code == errors.FAILED_PRECONDITION
                    assert "Attempting to use uninitialized value tfclient_v" in ours.status_error_message
                    assert "Attempting to use uninitialized value tfclient_v" in theirs.status_error_message
                else:
                    assert_same_tensors(ours.tensor, theirs.tensor)
            elif method == "ListDevices":
                # TF's: the session's devices (its cluster's two tasks); ours: this one-task server's
                assert [d.name for d in theirs.local_device] == ["/job:chief/replica:0/task:0/device:CPU:0",
                                                                 "/job:worker/replica:0/task:0/device:CPU:0"]
                assert [(d.name, d.device_type) for d in ours.local_device] == \
                    [("/job:local/replica:0/task:0/device:CPU:0", "CPU")]
                assert not ours.remote_device and not theirs.remote_device
            else:
                assert ours == theirs  # CloseSession, Reset: empty answers
            checked.append(method)
    finally:
        channel.close()
    assert checked.count("RunStep") == 8 and checked.count("ExtendSession") == 1 and "Reset" in checked


def test_tfc_client_on_recorded_tf_master(recorded):
    calls = recorded["tfc_client"]["calls"]
    fake = transcripts.FakeServer(calls)
    try:
        assert tfc_client_workload(f"grpc://127.0.0.1:{fake.port}") == EXPECTED
    finally:
        fake.stop()
    assert [method for method, _ in fake.received] == [call["method"] for call in calls]
    first_run = master_pb2.RunStepRequest.FromString(fake.received[1][1])
    recorded_run = master_pb2.RunStepRequest.FromString(transcripts.decode(calls[1]["request"]))
    first_run.request_id = recorded_run.request_id = 0
    assert first_run == recorded_run  # tfc's client asks what it asked TensorFlow's master


def own_incarnations(request, theirs: int, ours: int) -> None:
    """TF's worker's incarnation (what TF's master learnt from its GetStatus) -> tfc's worker's,
    in the partitions' _Send attrs and in RecvTensor keys (tfc's worker, like TF's, refuses a
    key made for another incarnation of itself)."""
    from tfc.distributed.rendezvous import make_key, parse_key
    from tfc.distributed.partition import _int64

    if isinstance(request, worker_pb2.RegisterGraphRequest):
        for node in request.graph_def.node:
            attr = node.attr.get("send_device_incarnation")
            if attr is not None and attr.i & 0xFFFFFFFFFFFFFFFF == theirs and b"/job:worker/" in node.attr[
                    "send_device"].s:
                attr.i = _int64(ours)
    elif isinstance(request, worker_pb2.RecvTensorRequest):
        src, incarnation, dst, name, frame_iter = parse_key(request.rendezvous_key)
        if incarnation == theirs and src.startswith("/job:worker/"):
            request.rendezvous_key = make_key(src, ours, dst, name, frame_iter)


def test_tf_master_requests_on_tfc_worker(recorded):
    record = recorded["tf_master"]
    chief_answers, by_edge = {}, {}
    for call in record["to_chief"]:
        request = worker_pb2.RecvTensorRequest.FromString(transcripts.decode(call["request"]))
        chief_answers[(request.step_id, request.rendezvous_key)] = transcripts.decode(call["response"])
        by_edge[request.rendezvous_key] = transcripts.decode(call["response"])

    def chief(method, data):
        """The chief's recorded answers; a step whose RecvTensor TF's worker never sent (it failed
        first) gets the value the client fed in every step."""
        assert method == "/tensorflow.WorkerService/RecvTensor", method
        request = worker_pb2.RecvTensorRequest.FromString(data)
        return chief_answers.get((request.step_id, request.rendezvous_key), by_edge[request.rendezvous_key])

    fake_chief = transcripts.FakeServer(responder=chief)
    worker = tf.train.Server({"chief": [f"localhost:{fake_chief.port}"], "worker": ["localhost:0"]},
                             job_name="worker", task_index=0)
    channel = Channel(worker.target[len("grpc://"):])
    graph_handles: dict = {}
    pending: list = []
    compared = []

    def compare(method, code, ours, call, response_class):
        assert code == call["code"], (method, ours)
        if code:
            return
        theirs = response_class.FromString(transcripts.decode(call["response"]))
        if method == "GetStatus":
            assert [(d.name, d.device_type) for d in ours.device_attributes] == \
                [(d.name, d.device_type) for d in theirs.device_attributes]
        elif method == "RegisterGraph":
            graph_handles[theirs.graph_handle] = ours.graph_handle
        elif method == "RunGraph":
            assert ours.status_code == theirs.status_code
            if theirs.status_code:
                assert "Attempting to use uninitialized value onworker_v" in ours.status_error_message
            assert_same_tensors(ours.recv, theirs.recv)
        elif method == "RecvTensor":
            assert ours.tensor.dtype == theirs.tensor.dtype and not ours.is_dead
            assert wire.to_ndarray(ours.tensor).tolist() == wire.to_ndarray(theirs.tensor).tolist()
        else:
            assert ours == theirs
        compared.append(method)

    try:
        with futures.ThreadPoolExecutor(max_workers=4) as pool:
            theirs_incarnation = None  # TF's worker's, from the recorded GetStatus (the first call)
            for call in record["to_worker"]:
                method = call["method"].rsplit("/", 1)[1]
                request_class, response_class = messages(worker_pb2, method)
                request = request_class.FromString(transcripts.decode(call["request"]))
                if getattr(request, "graph_handle", ""):
                    request.graph_handle = graph_handles[request.graph_handle]
                if method == "GetStatus":
                    recorded_status = worker_pb2.GetStatusResponse.FromString(transcripts.decode(call["response"]))
                    theirs_incarnation = recorded_status.device_attributes[0].incarnation
                own_incarnations(request, theirs_incarnation, worker._server.task.incarnation)
                if method == "RecvTensor":  # may come before the RunGraph that produces it
                    pending.append((call, pool.submit(call_or_error, channel, "WorkerService", method, request,
                                                      response_class)))
                    continue
                if method == "CleanupGraph":
                    for recv_call, future in pending:
                        code, ours = future.result(30)
                        compare("RecvTensor", code, ours, recv_call, worker_pb2.RecvTensorResponse)
                    pending.clear()
                code, ours = call_or_error(channel, "WorkerService", method, request, response_class)
                compare(method, code, ours, call, response_class)
    finally:
        channel.close()
        worker.stop()
        fake_chief.stop()
    assert compared.count("RunGraph") == 5 and compared.count("RecvTensor") == 3
    # the fed x, received from the chief in each step that feeds it (in the first step the variable's
    # read fails first: its RecvTensor may be cancelled before it is sent)
    assert len(fake_chief.received) in (2, 3)
    assert record["result"]["y"] == [[4.0, 6.0]] and record["result"]["z"] == 28.0
