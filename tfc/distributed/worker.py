"""The worker service: TensorFlow's WorkerService on this task.

What a TF master sends a worker (grpc_worker_service_impl.cc's wire paths
``/tensorflow.WorkerService/<Method>``): GetStatus (this task's CPU device, with the task's
incarnation) -> CreateWorkerSession -> RegisterGraph (a partition; again for each new
feed/fetch signature) -> RunGraph -> CleanupGraph(step_id) -> RecvTensor ->
DeleteWorkerSession, and CleanupAll from the master's Reset. tfc's master sends the same
(to its own task in process, without RPCs or TensorProtos).

A registered graph is one partition of a step (tfc/distributed/stages.py): its ``_Recv``
nodes become placeholders and its ``_Send`` nodes fetches, and it runs in stages, each a
program compiled by tfc's Session machinery (TaskSession) on this task's variables, once
per stage and signature. The master feeds and fetches it through client-terminated
``_Recv`` / ``_Send`` nodes, keyed ``send_device;incarnation;recv_device;tensor_name;0:0``:
RunGraph's ``send`` carries the fed values by key and ``recv_key`` names the fetched ones.
A ``_Send`` to another task leaves its value in the step's rendezvous for that task's
RecvTensor, as soon as the stage computing it has run; a ``_Recv`` from another task is a
RecvTensor to it, all of them in flight at once from the start of RunGraph (a stage runs
when the tensors it needs have arrived). A failed RecvTensor names the task that could not
be reached; a RecvTensor for a key made for another incarnation of this task is TF's
AbortedError ("...was probably restarted").

Worker sessions: ``create_worker_session_called`` false (or an empty handle) is the legacy
session, on the task's shared resources; a session created with ``isolate_session_state``
has private ones.
"""
from __future__ import annotations

import queue
import random
import secrets
import threading
import time

from tfc.frontend import errors
from tfc.frontend.graph import Graph
from tfc.protos import worker_pb2

from . import tensor_coding, wire
from .master import import_nodes, merged_config
from .cluster import task_name
from .rendezvous import Rendezvous, parse_key
from .stages import analyse
from .resources import ResourceManager
from .task_session import TaskSession


class RegisteredGraph:
    """One RegisterGraph: the partition (its stages, recvs and sends; tfc/distributed/
    stages.py), imported into a graph that a TaskSession compiles and runs stage by stage."""

    def __init__(self, handle: str, graph_def, config, task, resources):
        self.handle = handle
        self.partition = analyse(graph_def, task)
        self.graph = Graph()
        import_nodes(self.graph, self.partition.graph_def)
        # the worker session owns the resources (and drops private ones when it is deleted):
        # deregistering one graph must not clear them
        self.session = TaskSession(self.graph, config, task, resources, private=False)
        self._config, self._task, self._resources = config, task, resources
        self._variants: dict = {}  # received step constants -> (graph, TaskSession) with them as Consts
        self._lock = threading.Lock()

    @property
    def remote_recvs(self) -> list:
        return self.partition.remote_recvs

    def client_values(self, sent: dict) -> dict:
        """Placeholder tensor -> the value the master sent for each client-terminated recv."""
        values = {}
        for placeholder, key, tensor_name in self.partition.client_recvs:
            value = sent.get(key)
            if value is None:
                value = _by_tensor_name(sent, tensor_name)
            if value is None:
                raise errors.InvalidArgumentError(None, None, f"RunGraph sent no value for the _Recv '{placeholder}' "
                                                              f"(rendezvous key {key})")
            values[placeholder + ":0"] = value
        return values

    def run_stage(self, stage, values: dict) -> None:
        """Run one stage on ``values`` (tensor name -> array), adding what it fetches."""
        for name, proto in stage.literals.items():
            values[name] = wire.to_ndarray(proto)
        if not stage.has_work:
            return
        session = self.session
        feeds = stage.feeds
        if stage.constants:
            session = self._variant({name: values[name] for name in stage.constants})
            feeds = [name for name in feeds if name not in stage.constants]
        results = session.run_step(stage.fetches, [(name, values[name]) for name in feeds], stage.targets)
        values.update(zip(stage.fetches, results))

    def _variant(self, constants: dict):
        """The partition with these received tensors as Consts (compiled like a local step,
        which knows them), one per distinct set of values."""
        key = tuple((name, value.dtype.str, value.shape, value.tobytes()) for name, value in sorted(constants.items()))
        with self._lock:
            found = self._variants.get(key)
            if found is None:
                graph_def = type(self.partition.graph_def)()
                graph_def.CopyFrom(self.partition.graph_def)
                by_name = {name.rpartition(":")[0]: value for name, value in constants.items()}
                for node in graph_def.node:
                    value = by_name.get(node.name)
                    if value is not None:
                        node.op = "Const"
                        node.attr["value"].tensor.CopyFrom(wire.to_tensor_proto(value, node.attr["dtype"].type))
                        for attr in [a for a in node.attr if a not in ("dtype", "value")]:
                            del node.attr[attr]
                graph = Graph()
                import_nodes(graph, graph_def)
                found = self._variants[key] = TaskSession(graph, self._config, self._task, self._resources,
                                                          private=False)
                found.resource_scope = self.session.resource_scope
            return found

    def close(self) -> None:
        self.session.close()
        with self._lock:
            variants = list(self._variants.values())
            self._variants.clear()
        for session in variants:
            session.close()


def _by_tensor_name(sent: dict, tensor_name: str):
    """The value sent under a key whose edge name is ``tensor_name`` (when the master spelled
    the devices of the key differently), if exactly one matches."""
    found = [value for key, value in sent.items() if key.split(";")[3:4] == [tensor_name]]
    return found[0] if len(found) == 1 else None


class _Receiver:
    """The RecvTensor calls of one RunGraph, all in flight at once (gRPC futures: no thread
    waits on them); ``next()`` gives the received tensors in the order they arrive."""

    def __init__(self, worker, step_id: int, remote_recvs: list, deadline, is_active):
        self._queue: queue.Queue = queue.Queue()
        self._futures = []
        self._deadline = deadline
        self._is_active = is_active
        self._server = worker.server
        self._left = len(remote_recvs)
        task = worker.server.task
        timeout = None if deadline is None else max(0.0, deadline - time.monotonic())
        for placeholder, key, (job, index) in remote_recvs:
            if (job, index) == (task.job, task.index):  # from this task's own rendezvous
                threading.Thread(target=self._local, args=(worker, step_id, placeholder, key, timeout),
                                 name="tfc-recv-local", daemon=True).start()
                continue
            request = worker_pb2.RecvTensorRequest(step_id=step_id, rendezvous_key=key,
                                                   request_id=random.getrandbits(63) | 1)
            channel = worker.server.peer_channel(job, index)
            future = channel.future("WorkerService", "RecvTensor", request,
                                    tensor_coding.parse_recv_tensor_response, timeout)
            where = (task_name(job, index, task.replica), channel.address, timeout, (job, index))
            future.add_done_callback(lambda f, p=placeholder, k=key, w=where: self._queue.put((p, k, f, w)))
            self._futures.append(future)

    def _local(self, worker, step_id, placeholder, key, timeout):
        try:
            self._queue.put((placeholder, key, worker.rendezvous.recv(step_id, key, timeout, self._is_active), None))
        except Exception as e:  # noqa: BLE001 - handed to next()
            self._queue.put((placeholder, key, e, None))

    def next(self) -> tuple:
        """(placeholder name, array) of the next tensor received; the RecvTensor's error, a
        DeadlineExceededError at the step's deadline, CancelledError when the caller left."""
        import grpc

        if self._left <= 0:
            raise errors.InternalError(None, None, "RunGraph: a stage waits for a tensor that no _Recv receives")
        self._left -= 1
        while True:
            wait = 1.0
            if self._deadline is not None:
                wait = min(wait, max(0.0, self._deadline - time.monotonic()) + 0.05)
            try:
                placeholder, key, outcome, where = self._queue.get(timeout=wait)
            except queue.Empty:
                if self._deadline is not None and time.monotonic() >= self._deadline:
                    raise errors.DeadlineExceededError(None, None, "RunGraph: the step's deadline passed while "
                                                                   "waiting for tensors from other tasks") from None
                if self._is_active is not None and not self._is_active():
                    raise errors.CancelledError(None, None, "RunGraph was cancelled (the master went away)") from None
                continue
            if where is None:  # this task's own rendezvous
                if isinstance(outcome, Exception):
                    raise outcome
                return placeholder, outcome
            name, address, timeout, peer = where
            try:
                response = outcome.result()
            except grpc.RpcError as e:
                if e.code() == grpc.StatusCode.UNAVAILABLE:
                    self._server.reset_peer_channel(*peer)
                raise _recv_error(e, name, address, key, timeout) from None
            if response.is_dead:
                raise errors.UnimplementedError(None, None, f"RecvTensor {key}: a dead tensor (an untaken cond "
                                                            "branch) crossed tasks; tfc's worker does not support it")
            return placeholder, response.array

    def cancel(self) -> None:
        for future in self._futures:
            future.cancel()


def _recv_error(e, name: str, address: str, key: str, timeout) -> errors.OpError:
    """A RecvTensor that failed: a task that cannot be reached is named (job/task and address);
    an error the sending task reports (its step failed) keeps its class and message."""
    import grpc

    from .client import rpc_error

    code = e.code() if hasattr(e, "code") else None
    details = (e.details() if hasattr(e, "details") else "") or ""
    edge = key.split(";")[3] if key.count(";") == 4 else key
    if code == grpc.StatusCode.UNAVAILABLE:
        return errors.UnavailableError(None, None, f"{name} at {address} is unavailable: RecvTensor of {edge} "
                                                   f"failed ({details or 'no details'})")
    if code == grpc.StatusCode.DEADLINE_EXCEEDED and details in ("Deadline Exceeded", ""):
        return errors.DeadlineExceededError(None, None, f"{name} at {address} did not send {edge} before the "
                                                        "step's deadline")
    return rpc_error(e, address, "RecvTensor", timeout)


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
        return worker_pb2.RegisterGraphResponse(graph_handle=self.register(session, request.graph_def, config))

    def register(self, session: "WorkerSession", graph_def, config) -> str:
        handle = secrets.token_hex(8)
        graph = RegisteredGraph(handle, graph_def, config, self.server.task, session.resources)
        graph.session.resource_scope = session.handle  # its queues without a shared name: the client session's
        with session.lock:
            session.graphs[handle] = graph
        return handle

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
            graph = self.graph(session, request.graph_handle)
            sent = {named.name: wire.to_ndarray(named.tensor) for named in request.send}
            timeout = wire.time_remaining(context)
            deadline = None if timeout is None else time.monotonic() + timeout
            values = self.execute(graph, request.step_id, sent, deadline,
                                  context.is_active if context is not None else None)
            for key in request.recv_key:
                if key not in values:
                    raise errors.InvalidArgumentError(None, None, f"RunGraph: the graph sends no tensor under the "
                                                                  f"key {key}")
                response.recv.add(name=key, tensor=wire.to_tensor_proto(values[key]))
        except Exception as e:  # noqa: BLE001 - reported in the response or as the RPC's status
            code, message = wire.status_of(e)
            self.rendezvous.abort(request.step_id, wire.error_class(code), message)  # (again: harmless)
            if not request.store_errors_in_response_body:
                raise
            del response.recv[:]
            response.status_code = code
            response.status_error_message = message
        return response

    def graph(self, session: "WorkerSession", graph_handle: str) -> RegisteredGraph:
        with session.lock:
            graph = session.graphs.get(graph_handle)
        if graph is None:
            raise errors.InvalidArgumentError(None, None, f"Graph handle is not found: {graph_handle}")
        return graph

    def execute(self, graph: RegisteredGraph, step_id: int, sent: dict, deadline=None, is_active=None) -> dict:
        """Run a registered partition for step ``step_id``: its stages, each as soon as the
        tensors it needs have arrived from the other tasks, publishing what it sends to
        other tasks in this task's rendezvous as soon as it is computed. ``sent``: the
        master's values by rendezvous key; returns {key: value} of the client-terminated
        sends. A failure aborts the step's rendezvous here (its receivers get the error)."""
        from tfc.runtime import step_context

        partition = graph.partition
        # a stage waiting in a host op (a queue's dequeue, an accumulator's take_grad) ends at the
        # step's deadline, or when the master that sent the RunGraph went away
        cancelled = (lambda: None if is_active() else "the master cancelled the step") if is_active else None
        try:
            with step_context.step(deadline, cancelled):
                return self._execute(graph, partition, step_id, sent, deadline, is_active)
        except BaseException as e:
            code, message = wire.status_of(e)
            self.rendezvous.abort(step_id, wire.error_class(code), message)
            raise

    def _execute(self, graph, partition, step_id, sent, deadline, is_active) -> dict:
        receiver = None
        try:
            values = graph.client_values(sent)
            arrived: set = set()
            outputs: dict = {}
            pending = list(partition.stages)
            if partition.remote_recvs:
                receiver = _Receiver(self, step_id, partition.remote_recvs, deadline, is_active)
            while pending:
                ran = False
                for stage in list(pending):
                    if stage.needs <= arrived:
                        graph.run_stage(stage, values)
                        for position in stage.publish:
                            send = partition.sends[position]
                            value = values[send.tensor]
                            if send.client_terminated:
                                outputs[send.key] = value
                            else:
                                self.rendezvous.send(step_id, send.key, value)
                        pending.remove(stage)
                        ran = True
                if pending and not ran:
                    if receiver is None:
                        raise errors.InternalError(None, None, "RunGraph: a stage waits for tensors nobody sends")
                    placeholder, value = receiver.next()
                    values[placeholder + ":0"] = value
                    arrived.add(placeholder)
            return outputs
        finally:
            if receiver is not None:
                receiver.cancel()

    def CleanupGraph(self, request, context):
        self.rendezvous.cleanup(request.step_id)
        return worker_pb2.CleanupGraphResponse()

    def CleanupAll(self, request, context):
        self.server.resources.cleanup(list(request.container))
        return worker_pb2.CleanupAllResponse()

    def RecvTensor(self, request, context):
        self._check_incarnation(request.rendezvous_key)
        timeout = wire.time_remaining(context)
        value = self.rendezvous.recv(request.step_id, request.rendezvous_key, timeout,
                                     context.is_active if context is not None else None)
        return tensor_coding.recv_tensor_response(value, int(time.time() * 1e6))

    def _check_incarnation(self, key: str) -> None:
        """TF's worker: a key from this task's device with another incarnation was made for a
        previous process of this task (it restarted since the master learnt its incarnation)."""
        from tfc.frontend.device import DeviceSpec

        src_device, incarnation, _, _, _ = parse_key(key)
        try:
            spec = DeviceSpec.from_string(src_device)
        except ValueError:
            return
        task = self.server.task
        if spec.job != task.job or spec.task != task.index or spec.replica not in (None, task.replica):
            return
        own = task.incarnation & 0xFFFFFFFFFFFFFFFF
        if incarnation != own:
            raise errors.AbortedError(None, None, f"RecvTensor expects a different device incarnation: {incarnation} "
                                                  f"vs. {own}. Your worker job (\"{task.name}\") was probably "
                                                  "restarted. Check your worker job for the reason why it was "
                                                  "restarted.")

    def Logging(self, request, context):
        return worker_pb2.LoggingResponse()

    def Tracing(self, request, context):
        return worker_pb2.TracingResponse()

    # -- for this task's own master (in process: no RPC, no TensorProto) ---------------------------
    def open_session(self, handle: str, resources: ResourceManager, config=None) -> "WorkerSession":
        """The worker session of a master session on this task, on that session's resources
        (which the master session owns: closing this one leaves them alone)."""
        session = WorkerSession(handle, resources, private=False, config=config)
        with self._lock:
            old = self._sessions.get(handle)
            self._sessions[handle] = session
        if old is not None:
            old.close()
        return session

    def close_session(self, handle: str) -> None:
        with self._lock:
            session = self._sessions.pop(handle, None)
        if session is not None:
            session.close()

    def deregister(self, session: "WorkerSession", graph_handle: str) -> None:
        with session.lock:
            graph = session.graphs.pop(graph_handle, None)
        if graph is not None:
            graph.close()

    def close_all(self) -> None:
        self.rendezvous.stop(f"The server of {self.server.task.name} stopped")
        with self._lock:
            sessions = list(self._sessions.values())
            self._sessions.clear()
        for session in sessions + [self._legacy]:
            session.close()
