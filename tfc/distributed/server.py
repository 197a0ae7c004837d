"""tf.train.Server: one gRPC server per task, serving TensorFlow's MasterService and
WorkerService at their wire paths (``/tensorflow.MasterService/<Method>``,
``/tensorflow.WorkerService/<Method>``, registered as generic handlers: the ``package
tensorflow.grpc`` stubs' paths are never what TensorFlow calls).

The server binds its task's port when it is created (a port in use is an error there,
naming the address; ``grpc.so_reuseport`` is off, so a second server cannot silently share
a port): to the loopback interface when the cluster spec names this task ``localhost`` (or
a loopback address), else to every interface. ``start()`` starts serving; ``join()``
blocks until the server stops. TensorFlow has no way to stop a server (tensorflow#11872):
tfc's ``Server.stop()`` does (it is tfc's own API). Like TF's, a server that its program
drops keeps serving until the process ends (tfc keeps a reference), and the process's
exit stops it.
"""
from __future__ import annotations

import errno
import logging
import random
import socket
import threading
import time
from concurrent import futures

from tfc.frontend import errors
from tfc.runtime import host_memory
from tfc.protos import device_attributes_pb2, master_pb2, worker_pb2

from . import wire
from .cluster import ClusterSpec, make_server_def, split_address
from .resources import ResourceManager
from .task_session import TaskInfo

logger = logging.getLogger("tfc")

SERVER_OPTIONS = [("grpc.so_reuseport", 0), ("grpc.max_send_message_length", -1),
                  ("grpc.max_receive_message_length", -1)]
MAX_WORKERS = 128  # RPCs served at once: a RunGraph holds one while its step waits for other tasks
CPU_MEMORY_LIMIT = 268435456  # what TF's CPU device reports
_LOOPBACK = ("localhost", "127.0.0.1", "::1", "ip6-localhost")

_MASTER_METHODS = {
    "CreateSession": (master_pb2.CreateSessionRequest, master_pb2.CreateSessionResponse),
    "ExtendSession": (master_pb2.ExtendSessionRequest, master_pb2.ExtendSessionResponse),
    "PartialRunSetup": (master_pb2.PartialRunSetupRequest, master_pb2.PartialRunSetupResponse),
    "RunStep": (master_pb2.RunStepRequest, master_pb2.RunStepResponse),
    "CloseSession": (master_pb2.CloseSessionRequest, master_pb2.CloseSessionResponse),
    "ListDevices": (master_pb2.ListDevicesRequest, master_pb2.ListDevicesResponse),
    "Reset": (master_pb2.ResetRequest, master_pb2.ResetResponse),
    "MakeCallable": (master_pb2.MakeCallableRequest, master_pb2.MakeCallableResponse),
    "RunCallable": (master_pb2.RunCallableRequest, master_pb2.RunCallableResponse),
    "ReleaseCallable": (master_pb2.ReleaseCallableRequest, master_pb2.ReleaseCallableResponse),
}
_WORKER_METHODS = {
    "GetStatus": (worker_pb2.GetStatusRequest, worker_pb2.GetStatusResponse),
    "CreateWorkerSession": (worker_pb2.CreateWorkerSessionRequest, worker_pb2.CreateWorkerSessionResponse),
    "DeleteWorkerSession": (worker_pb2.DeleteWorkerSessionRequest, worker_pb2.DeleteWorkerSessionResponse),
    "RegisterGraph": (worker_pb2.RegisterGraphRequest, worker_pb2.RegisterGraphResponse),
    "DeregisterGraph": (worker_pb2.DeregisterGraphRequest, worker_pb2.DeregisterGraphResponse),
    "RunGraph": (worker_pb2.RunGraphRequest, worker_pb2.RunGraphResponse),
    "CleanupGraph": (worker_pb2.CleanupGraphRequest, worker_pb2.CleanupGraphResponse),
    "CleanupAll": (worker_pb2.CleanupAllRequest, worker_pb2.CleanupAllResponse),
    "RecvTensor": (worker_pb2.RecvTensorRequest, worker_pb2.RecvTensorResponse),
    "Logging": (worker_pb2.LoggingRequest, worker_pb2.LoggingResponse),
    "Tracing": (worker_pb2.TracingRequest, worker_pb2.TracingResponse),
}

_LIVE: set = set()  # running TaskServers (a dropped tf.train.Server keeps serving, as in TF)
_LIVE_LOCK = threading.Lock()
_EXIT_HOOK = []


def _stop_all_at_exit() -> None:
    with _LIVE_LOCK:
        servers = list(_LIVE)
    for server in servers:
        try:
            server.stop(0)
        except Exception:  # noqa: BLE001 - exiting anyway
            pass


def _register_exit_hook() -> None:
    """Stop every server before the interpreter joins its threads (a RecvTensor waiting in a
    gRPC thread would otherwise hold up the exit)."""
    if _EXIT_HOOK:
        return
    _EXIT_HOOK.append(True)
    register = getattr(threading, "_register_atexit", None)
    if register is not None:
        register(_stop_all_at_exit)
    else:  # pragma: no cover - Python < 3.9
        import atexit

        atexit.register(_stop_all_at_exit)


def local_server(address: str):
    """The running TaskServer of this process that ``address`` reaches, or None: a client in
    the same process calls its master without gRPC (TF's LocalMaster)."""
    try:
        host, port = split_address(address)
    except errors.InvalidArgumentError:
        return None
    with _LIVE_LOCK:
        for server in _LIVE:
            if server.port == port and not server.stopped and (host.lower() in _LOOPBACK or host == server.host):
                return server
    return None


class _LocalCall:
    """What a service method reads of its gRPC context, for a call made within the process."""

    def __init__(self, timeout):
        self._deadline = None if timeout is None else time.monotonic() + timeout

    def time_remaining(self):
        return None if self._deadline is None else max(0.0, self._deadline - time.monotonic())

    def is_active(self) -> bool:
        return True


def _guarded(name: str, method, task_name: str):
    """A gRPC handler: errors become the RPC's status (tf.errors keep their code)."""

    def handle(request, context):
        try:
            return method(request, context)
        except Exception as e:  # noqa: BLE001 - every failure is reported to the caller
            code, message = wire.status_of(e)
            if code == errors.INTERNAL:
                logger.exception("tfc: %s on %s failed", name, task_name)
        context.abort(wire.grpc_code(code), message)

    return handle


def _serialize_response(response) -> bytes:
    """A handler's answer: a message, or its bytes already (tensor_coding's RecvTensor answers)."""
    return response if isinstance(response, bytes) else response.SerializeToString()


def _generic_handler(grpc, service: str, implementation, methods: dict, task_name: str):
    handlers = {}
    for name, (request_class, response_class) in methods.items():
        handlers[name] = grpc.unary_unary_rpc_method_handler(
            _guarded(f"{service}.{name}", getattr(implementation, name), task_name),
            request_deserializer=request_class.FromString, response_serializer=_serialize_response)
    return grpc.method_handlers_generic_handler(f"tensorflow.{service}", handlers)


class TaskServer:
    """The gRPC server of one task and the state its services share."""

    def __init__(self, server_def):
        import grpc

        from .master import MasterService
        from .worker import WorkerService

        protocol = server_def.protocol or "grpc"
        if protocol != "grpc":
            raise errors.UnimplementedError(None, None, f"Server protocol '{protocol}': tfc serves 'grpc' only")
        self.server_def = server_def
        host_memory.keep_large_allocations_mapped()
        self.cluster = ClusterSpec(server_def.cluster)
        job, index = server_def.job_name, server_def.task_index
        try:
            address = self.cluster.task_address(job, index)
        except ValueError:
            raise errors.InvalidArgumentError(None, None, f"Task {index} was not defined in job {job}") from None
        host, port = split_address(address)
        self.host = host
        if server_def.port:
            port = server_def.port
        self.address = address
        self.task = TaskInfo(job, index, self.cluster, random.getrandbits(63) | 1, int(server_def.replica))
        self.default_session_config = server_def.default_session_config
        self.resources = ResourceManager()
        self._stopped = threading.Event()
        self._started = False
        self._lock = threading.Lock()
        self._peer_channels: dict = {}
        self._grpc = grpc.server(futures.ThreadPoolExecutor(max_workers=MAX_WORKERS,
                                                            thread_name_prefix=f"tfc-{job}-{index}"),
                                 options=SERVER_OPTIONS)
        self.port = self._bind(host, port)
        self.master = MasterService(self)
        self.worker = WorkerService(self)
        self._grpc.add_generic_rpc_handlers((
            _generic_handler(grpc, "MasterService", self.master, _MASTER_METHODS, self.task.name),
            _generic_handler(grpc, "WorkerService", self.worker, _WORKER_METHODS, self.task.name)))

    def _bind(self, host: str, port: int) -> int:
        """Bind the task's port; loopback hosts bind 127.0.0.1 (and ::1 where IPv6 is up)."""
        where = f"{host}:{port}"
        describe = f"task {self.task.name} of the cluster spec"
        if host.lower() in _LOOPBACK:
            bound = self._add_port(f"127.0.0.1:{port}", where, describe)
            if _ipv6_loopback_free(bound, where, describe):
                try:
                    self._grpc.add_insecure_port(f"[::1]:{bound}")
                except RuntimeError:
                    pass
            return bound
        return self._add_port(f"0.0.0.0:{port}", where, describe)

    def _add_port(self, bind_address: str, where: str, describe: str) -> int:
        try:
            bound = self._grpc.add_insecure_port(bind_address)
        except RuntimeError:
            bound = 0
        if not bound:
            raise errors.UnknownError(None, None, f"Could not start gRPC server for {describe} on {where} (bound to "
                                                  f"{bind_address}): the address is already in use or cannot be "
                                                  "bound")
        return bound

    def call_master(self, method: str, request, timeout=None):
        """MasterService.<method> called from this process, with the deadline ``timeout`` (s);
        an error is the tf.errors class and message a gRPC caller would get."""
        try:
            return getattr(self.master, method)(request, _LocalCall(timeout))
        except Exception as e:  # noqa: BLE001 - as _guarded reports it
            code, message = wire.status_of(e)
            raise wire.error_class(code)(None, None, message) from None

    # -- lifetime ---------------------------------------------------------------------------------
    def start(self) -> None:
        with self._lock:
            if self._stopped.is_set():
                raise errors.FailedPreconditionError(None, None, f"The server of {self.task.name} has been stopped "
                                                                 "and cannot be started again")
            if self._started:
                return
            self._grpc.start()
            self._started = True
        with _LIVE_LOCK:
            _LIVE.add(self)
        _register_exit_hook()

    def join(self) -> None:
        while not self._stopped.wait(1.0):
            pass

    def stop(self, grace=None) -> None:
        with self._lock:
            if self._stopped.is_set():
                return
            self._stopped.set()
        self.worker.close_all()  # wakes RecvTensor waiters first, so stopping does not wait on them
        self._grpc.stop(grace).wait()
        self.master.close_all()
        self.resources.cleanup(None)
        with self._lock:
            channels = list(self._peer_channels.values())
            self._peer_channels.clear()
        for channel in channels:
            channel.close()
        with _LIVE_LOCK:
            _LIVE.discard(self)

    @property
    def stopped(self) -> bool:
        return self._stopped.is_set()

    # -- what the services share ------------------------------------------------------------------
    def device_attributes(self):
        return device_attributes_pb2.DeviceAttributes(name=self.task.device, device_type="CPU",
                                                      memory_limit=CPU_MEMORY_LIMIT,
                                                      incarnation=self.task.incarnation)

    def peer_channel(self, job: str, index: int):
        """A channel to another task (kept for the server's lifetime, or until a call through
        it finds the task unavailable: ``reset_peer_channel``)."""
        from .client import PEER_CHANNEL_OPTIONS, Channel

        with self._lock:
            channel = self._peer_channels.get((job, index))
            if channel is None:
                channel = self._peer_channels[(job, index)] = Channel(self.cluster.task_address(job, index),
                                                                      PEER_CHANNEL_OPTIONS)
            return channel

    def reset_peer_channel(self, job: str, index: int) -> None:
        """Forget the channel to a task that could not be reached: the next call dials it at
        once (a task restarted on its address is reached without waiting for gRPC's
        reconnection backoff). The old channel is closed once its calls are done."""
        with self._lock:
            channel = self._peer_channels.pop((job, index), None)
        if channel is not None:
            closer = threading.Timer(30.0, channel.close)
            closer.daemon = True
            closer.start()

    def peers(self) -> list:
        """[(job, task index, address)] of the cluster's other tasks."""
        out = []
        for job in self.cluster.jobs:
            for index in self.cluster.task_indices(job):
                if (job, index) != (self.task.job, self.task.index):
                    out.append((job, index, self.cluster.task_address(job, index)))
        return out

    def _each_peer(self, method: str, request, response_class, timeout: float) -> list:
        """Call ``method`` on every other task at once; [(job, index, response or error)]."""
        from .client import Channel

        peers = self.peers()
        if not peers:
            return []

        def call(peer):
            job, index, address = peer
            channel = Channel(address)
            try:
                return job, index, channel.call("WorkerService", method, request, response_class, timeout)
            except errors.OpError as e:
                return job, index, e
            finally:
                channel.close()

        with futures.ThreadPoolExecutor(max_workers=min(8, len(peers))) as pool:
            return list(pool.map(call, peers))

    def peer_devices(self, timeout: float) -> list:
        """The devices the other tasks report (GetStatus); unreachable tasks are skipped."""
        out = []
        for job, index, result in self._each_peer("GetStatus", worker_pb2.GetStatusRequest(),
                                                  worker_pb2.GetStatusResponse, timeout):
            if isinstance(result, Exception):
                logger.warning("tfc: ListDevices on %s: task /job:%s/task:%d did not answer GetStatus: %s",
                               self.task.name, job, index, result)
                continue
            out.extend(result.device_attributes)
        return out

    def cleanup_peers(self, containers: list, timeout: float) -> None:
        """CleanupAll(containers) on the other tasks (best effort, as TF's master does)."""
        for job, index, result in self._each_peer("CleanupAll", worker_pb2.CleanupAllRequest(container=containers),
                                                  worker_pb2.CleanupAllResponse, timeout):
            if isinstance(result, Exception):
                logger.warning("tfc: Reset on %s: CleanupAll on /job:%s/task:%d failed: %s",
                               self.task.name, job, index, result)


def _ipv6_loopback_free(port: int, where: str, describe: str) -> bool:
    """Whether [::1]:port can be bound too (False where IPv6 is off); an error when another
    process holds it (a client dialing "localhost" would reach that process first)."""
    if not socket.has_ipv6:
        return False
    try:
        probe = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
    except OSError:
        return False
    try:
        # as gRPC binds: a port whose old connections linger in TIME_WAIT (a task restarted
        # on its port) is free; one that another process listens on is not
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        probe.bind(("::1", port))
    except OSError as e:
        if e.errno == errno.EADDRINUSE:
            raise errors.UnknownError(None, None, f"Could not start gRPC server for {describe} on {where}: "
                                                  f"[::1]:{port} is already in use") from None
        return False
    finally:
        probe.close()
    return True


class Server:
    """tf.train.Server (tf.distribute.Server): an in-process server for one task of a cluster."""

    def __init__(self, server_or_cluster_def, job_name=None, task_index=None, protocol=None, config=None,
                 start=True):
        self._server_def = make_server_def(server_or_cluster_def, job_name, task_index, protocol, config)
        self._server = TaskServer(self._server_def)
        if start:
            self.start()

    def start(self) -> None:
        """Start serving (idempotent)."""
        self._server.start()

    def join(self) -> None:
        """Block until the server stops (with TF, forever; with tfc, until ``stop()``)."""
        self._server.join()

    def stop(self, grace=None) -> None:
        """tfc's own (TensorFlow has no way to stop a server, #11872): stop serving, cancel the
        RPCs in flight (after ``grace`` seconds, if given), close the sessions and drop the
        task's variables. The port is free again afterwards; a stopped server cannot restart."""
        self._server.stop(grace)

    @property
    def server_def(self):
        return self._server_def

    @property
    def target(self) -> str:
        """``grpc://localhost:PORT``: what ``tf.Session(target)`` connects to."""
        return f"grpc://localhost:{self._server.port}"

    @staticmethod
    def create_local_server(config=None, start=True) -> "Server":
        """A single-task cluster on a port the OS picks (TF 1.15: job "local")."""
        return Server({"local": ["localhost:0"]}, protocol="grpc", config=config, start=start)

    def __repr__(self) -> str:
        return f"<tf.train.Server {self._server.task.name} at {self.target}>"
