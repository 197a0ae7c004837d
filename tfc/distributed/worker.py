"""The worker service: TensorFlow's WorkerService on this task, for graphs wholly on it.

What a TF master sends a worker (grpc_worker_service_impl.cc's wire paths
``/tensorflow.WorkerService/<Method>``): GetStatus (this task's CPU device, with the task's
incarnation) -> CreateWorkerSession -> RegisterGraph (a partition; again for each new
feed/fetch signature) -> RunGraph -> CleanupGraph(step_id) -> RecvTensor ->
DeleteWorkerSession, and CleanupAll from the master's Reset.

A registered graph here is one partition that needs nothing from other tasks. The master
feeds and fetches it through client-terminated ``_Recv`` / ``_Send`` nodes, keyed
``send_device;incarnation;recv_device;tensor_name;0:0``: RunGraph's ``send`` carries the
fed values by key and ``recv_key`` names the fetched ones. Before the graph is imported,
each ``_Recv`` becomes a Placeholder (named ``tfc_recv_N``: a graph op's name may not start
with "_") and each ``_Send`` a fetch of its input; the step then runs on this task's
variables with tfc's Session machinery (TaskSession). A ``_Send`` to another task (not
client-terminated) leaves its value in the step's rendezvous for that task's RecvTensor. A
``_Recv`` from another task (how a TF master feeds a worker: from the master's own task)
is fetched with RecvTensor from the sending task before the partition runs, so a partition
whose received tensors depend on its own sent ones in the same step (a cycle between
tasks) is not supported in this version.

Worker sessions: ``create_worker_session_called`` false (or an empty handle) is the legacy
session, on the task's shared resources; a session created with ``isolate_session_state``
has private ones.
"""
from __future__ import annotations

import random
import secrets
import threading
import time
from concurrent import futures

from tfc.frontend import errors
from tfc.frontend.graph import Graph
from tfc.protos import worker_pb2
from tfc.protos.graph_pb2 import GraphDef

from . import wire
from .master import import_nodes, merged_config
from .rendezvous import Rendezvous, make_key
from .resources import ResourceManager
from .task_session import TaskSession


_RECV_OPS = ("_Recv", "_HostRecv")
_SEND_OPS = ("_Send", "_HostSend")


class RegisteredGraph:
    """One RegisterGraph: the imported partition and how RunGraph feeds and fetches it."""

    def __init__(self, handle: str, graph_def, config, task, resources, private: bool):
        self.handle = handle
        rewritten, self.recvs, self.remote_recvs, self.sends, self.targets = _rewrite_partition(graph_def, task)
        self.graph = Graph()
        import_nodes(self.graph, rewritten)
        self.session = TaskSession(self.graph, config, task, resources, private=private)
        self.lock = threading.Lock()

    def run(self, sent: dict, received: dict) -> dict:
        """Run the partition on the values ``sent`` by the master (rendezvous key -> array) and
        ``received`` from other tasks (placeholder name -> array); returns {key: value} of
        every _Send."""
        feeds = [(placeholder + ":0", received[placeholder]) for placeholder, _, _ in self.remote_recvs]
        for placeholder, key, tensor_name in self.recvs:
            value = sent.get(key)
            if value is None:
                value = _by_tensor_name(sent, tensor_name)
            if value is None:
                raise errors.InvalidArgumentError(None, None, f"RunGraph sent no value for the _Recv '{placeholder}' "
                                                              f"(rendezvous key {key})")
            feeds.append((placeholder + ":0", value))
        fetches = [tensor for tensor, _, _ in self.sends]
        with self.lock:
            values = self.session.run_step(fetches, feeds, self.targets)
        return {key: value for (_, key, _), value in zip(self.sends, values)}

    def close(self) -> None:
        self.session.close()


def _by_tensor_name(sent: dict, tensor_name: str):
    """The value sent under a key whose edge name is ``tensor_name`` (when the master spelled
    the devices of the key differently), if exactly one matches."""
    found = [value for key, value in sent.items() if key.split(";")[3:4] == [tensor_name]]
    return found[0] if len(found) == 1 else None


def _attr(node, name: str, kind: str, default=None):
    if name not in node.attr:
        return default
    value = getattr(node.attr[name], kind)
    return value.decode() if isinstance(value, bytes) else value


def _rewrite_partition(graph_def, task) -> tuple:
    """(GraphDef without _Send/_Recv, client-terminated recvs [(placeholder name, key, tensor
    name)], recvs from tasks [(placeholder name, key, (job, task index))], sends [(fetched
    tensor, key, client_terminated)], [target op names])."""
    from tfc.frontend.device import DeviceSpec

    from tfc.frontend.graph_io import _parse_input

    out = GraphDef()
    out.versions.CopyFrom(graph_def.versions)
    if graph_def.HasField("library"):
        out.library.CopyFrom(graph_def.library)
    recvs, remote_recvs, sends, dropped = [], [], [], set()
    # _Recv nodes become Placeholders named tfc_recv_N (a graph op's name may not start with "_")
    names = {node.name for node in graph_def.node}
    renamed: dict = {}
    for node in graph_def.node:
        if node.op in _RECV_OPS:
            new_name = f"tfc_recv_{len(renamed)}"
            while new_name in names:
                new_name += "_"
            renamed[node.name] = new_name
    for node in graph_def.node:
        if node.op in _SEND_OPS:
            key = make_key(_attr(node, "send_device", "s", ""), _attr(node, "send_device_incarnation", "i", 0),
                           _attr(node, "recv_device", "s", ""), _attr(node, "tensor_name", "s", ""))
            data = [inp for inp in node.input if not inp.startswith("^")]
            if len(data) != 1:
                raise errors.InvalidArgumentError(None, None, f"_Send node '{node.name}' has {len(data)} inputs")
            source, index, _ = _parse_input(data[0])
            sends.append((f"{source}:{index}", key, bool(_attr(node, "client_terminated", "b", False))))
            dropped.add(node.name)
            continue
        if node.op in _RECV_OPS:
            tensor_name = _attr(node, "tensor_name", "s", "")
            send_device = _attr(node, "send_device", "s", "")
            key = make_key(send_device, _attr(node, "send_device_incarnation", "i", 0),
                           _attr(node, "recv_device", "s", ""), tensor_name)
            placeholder = out.node.add(name=renamed[node.name], op="Placeholder", device=node.device)
            placeholder.attr["dtype"].type = node.attr["tensor_type"].type
            placeholder.input.extend([inp for inp in node.input if inp.startswith("^")])
            if _attr(node, "client_terminated", "b", False):
                recvs.append((placeholder.name, key, tensor_name))
                continue
            spec = DeviceSpec.from_string(send_device)
            sender = (spec.job if spec.job is not None else task.job, spec.task if spec.task is not None else 0)
            if not task.has_task(*sender):
                raise errors.InvalidArgumentError(None, None, f"_Recv node '{node.name}' receives '{tensor_name}' "
                                                              f"from {send_device}, which is not a task of the cluster")
            remote_recvs.append((placeholder.name, key, sender))
            continue
        out.node.add().CopyFrom(node)
    consumed = set()
    for node in out.node:
        kept = [_renamed_input(inp, renamed) for inp in node.input if not (inp.startswith("^") and inp[1:] in dropped)]
        if kept != list(node.input):
            del node.input[:]
            node.input.extend(kept)
        for inp in kept:
            consumed.add(_parse_input(inp)[0])
    placeholders = {name for name, _, _ in recvs + remote_recvs}
    targets = [node.name for node in out.node if node.name not in consumed and node.name not in placeholders]
    return out, recvs, remote_recvs, sends, targets


def _renamed_input(inp: str, renamed: dict) -> str:
    if not renamed:
        return inp
    control = inp.startswith("^")
    source, colon, index = (inp[1:] if control else inp).partition(":")
    new = renamed.get(source)
    if new is None:
        return inp
    return ("^" if control else "") + new + colon + index


class WorkerSession:
    def __init__(self, handle: str, resources: ResourceManager, private: bool, config=None):
        self.handle = handle
        self.resources = resources
        self.private = private
        self.config = config
        self.graphs: dict = {}
        self.lock = threading.Lock()

    def close(self) -> None:
        with self.lock:
            graphs = list(self.graphs.values())
            self.graphs.clear()
        for graph in graphs:
            graph.close()
        if self.private:
            self.resources.cleanup(None)


class WorkerService:
    """The WorkerService RPCs of one task (``server``: the TaskServer)."""

    def __init__(self, server):
        self.server = server
        self.rendezvous = Rendezvous(server.task.name)
        self._lock = threading.Lock()
        self._legacy = WorkerSession("", server.resources, private=False)
        self._sessions: dict = {}

    def _session(self, handle: str, created: bool) -> WorkerSession:
        if not created or not handle:
            return self._legacy
        with self._lock:
            session = self._sessions.get(handle)
        if session is None:
            raise errors.AbortedError(None, None, f"Session handle is not found: {handle}. Possibly this worker "
                                                  f"(\"{self.server.task.name}\") just restarted.")
        return session

    def GetStatus(self, request, context):
        response = worker_pb2.GetStatusResponse()
        response.device_attributes.add().CopyFrom(self.server.device_attributes())
        return response

    def CreateWorkerSession(self, request, context):
        private = bool(request.isolate_session_state)
        session = WorkerSession(request.session_handle, ResourceManager() if private else self.server.resources,
                                private, request.server_def.default_session_config)
        with self._lock:
            old = self._sessions.get(request.session_handle)
            self._sessions[request.session_handle] = session
        if old is not None:
            old.close()
        return worker_pb2.CreateWorkerSessionResponse()

    def DeleteWorkerSession(self, request, context):
        with self._lock:
            session = self._sessions.pop(request.session_handle, None)
        if session is not None:
            session.close()
        return worker_pb2.DeleteWorkerSessionResponse()

    def RegisterGraph(self, request, context):
        session = self._session(request.session_handle, request.create_worker_session_called)
        config = merged_config(self.server.default_session_config,
                               request.config_proto if request.HasField("config_proto") else session.config)
        handle = secrets.token_hex(8)
        graph = RegisteredGraph(handle, request.graph_def, config, self.server.task, session.resources,
                                session.private)
        with session.lock:
            session.graphs[handle] = graph
        return worker_pb2.RegisterGraphResponse(graph_handle=handle)

    def DeregisterGraph(self, request, context):
        session = self._session(request.session_handle, request.create_worker_session_called)
        with session.lock:
            graph = session.graphs.pop(request.graph_handle, None)
        if graph is None:
            raise errors.InvalidArgumentError(None, None, f"Graph handle is not found: {request.graph_handle}")
        graph.close()
        return worker_pb2.DeregisterGraphResponse()

    def RunGraph(self, request, context):
        response = worker_pb2.RunGraphResponse()
        try:
            if request.is_partial:
                raise errors.UnimplementedError(None, None, "Partial runs are not supported by tfc's worker")
            session = self._session(request.session_handle, request.create_worker_session_called)
            with session.lock:
                graph = session.graphs.get(request.graph_handle)
            if graph is None:
                raise errors.InvalidArgumentError(None, None, f"Graph handle is not found: {request.graph_handle}")
            sent = {named.name: wire.to_ndarray(named.tensor) for named in request.send}
            received = self._receive(request.step_id, graph.remote_recvs, context)
            values = graph.run(sent, received)
            client_keys = set()
            for tensor, key, client_terminated in graph.sends:
                if client_terminated:
                    client_keys.add(key)
                else:
                    self.rendezvous.send(request.step_id, key, values[key])
            for key in request.recv_key:
                if key not in values:
                    raise errors.InvalidArgumentError(None, None, f"RunGraph: the graph sends no tensor under the "
                                                                  f"key {key}")
                response.recv.add(name=key, tensor=wire.to_tensor_proto(values[key]))
        except Exception as e:  # noqa: BLE001 - reported in the response or as the RPC's status
            code, message = wire.status_of(e)
            self.rendezvous.abort(request.step_id, wire.error_class(code), message)
            if not request.store_errors_in_response_body:
                raise
            del response.recv[:]
            response.status_code = code
            response.status_error_message = message
        return response

    def _receive(self, step_id: int, remote_recvs: list, context) -> dict:
        """The tensors a partition receives from other tasks (RecvTensor to each sender, all at
        once; this task's own from its rendezvous): placeholder name -> array. Everything is
        received before the partition runs, so a partition whose received tensors depend on
        its own sent ones in the same step (a cycle between tasks) is not supported."""
        if not remote_recvs:
            return {}
        timeout = wire.time_remaining(context)
        is_active = context.is_active if context is not None else None
        task = self.server.task

        def receive(item):
            placeholder, key, (job, index) = item
            if (job, index) == (task.job, task.index):
                return placeholder, self.rendezvous.recv(step_id, key, timeout, is_active)
            request = worker_pb2.RecvTensorRequest(step_id=step_id, rendezvous_key=key,
                                                   request_id=random.getrandbits(63) | 1)
            response = self.server.peer_channel(job, index).call("WorkerService", "RecvTensor", request,
                                                                 worker_pb2.RecvTensorResponse, timeout)
            if response.is_dead:
                raise errors.UnimplementedError(None, None, f"RecvTensor {key}: a dead tensor (an untaken cond "
                                                            "branch) crossed tasks; tfc's worker does not support it")
            return placeholder, wire.to_ndarray(response.tensor)

        if len(remote_recvs) == 1:
            return dict([receive(remote_recvs[0])])
        with futures.ThreadPoolExecutor(max_workers=min(8, len(remote_recvs))) as pool:
            return dict(pool.map(receive, remote_recvs))

    def CleanupGraph(self, request, context):
        self.rendezvous.cleanup(request.step_id)
        return worker_pb2.CleanupGraphResponse()

    def CleanupAll(self, request, context):
        self.server.resources.cleanup(list(request.container))
        return worker_pb2.CleanupAllResponse()

    def RecvTensor(self, request, context):
        timeout = wire.time_remaining(context)
        value = self.rendezvous.recv(request.step_id, request.rendezvous_key, timeout,
                                     context.is_active if context is not None else None)
        return worker_pb2.RecvTensorResponse(tensor=wire.to_tensor_proto(value), is_dead=False,
                                             send_start_micros=int(time.time() * 1e6))

    def Logging(self, request, context):
        return worker_pb2.LoggingResponse()

    def Tracing(self, request, context):
        return worker_pb2.TracingResponse()

    def close_all(self) -> None:
        self.rendezvous.stop(f"The server of {self.server.task.name} stopped")
        with self._lock:
            sessions = list(self._sessions.values())
            self._sessions.clear()
        for session in sessions + [self._legacy]:
            session.close()
