"""The client side: ``tf.Session("grpc://host:port")`` and the RPC helper every caller uses.

``RemoteSession`` is what a tfc Session delegates to when its target is ``grpc://``: the
Session keeps its own fetch handling (structures, feed checks and conversions, fed fetches;
tfc/runtime/session.py), and this object speaks TensorFlow's MasterService protocol to any
master, a tfc server or TensorFlow's: CreateSession at the first run (the whole graph),
ExtendSession when the graph grew since (only the new nodes and the graph version the master
gave), RunStep (feeds as NamedTensorProto, fetches and targets by name, RunOptions,
``store_errors_in_response_body``), ListDevices, CloseSession; ``reset`` sends Reset.

Every RPC has a deadline: ``ConfigProto.operation_timeout_in_ms`` when set (RunStep's is
also bounded by ``RunOptions.timeout_in_ms``, with a second of slack so the master's own
error arrives first); without it, 60 s for CreateSession / ExtendSession / ListDevices
(a master stuck discovering its workers, TF's "CreateSession still waiting" hang, becomes
a DeadlineExceededError), 10 s for CloseSession, 60 s for Reset, and none for RunStep (a
step may run for hours). Calls are fail-fast: a server that cannot be reached is an
UnavailableError at once (connection refused) or when gRPC's connection attempt gives up
(about 20 s), never a hang. Errors name the address and the RPC; a master's error
keeps its class and message (TF's trailing ``[[{{node NAME}}]]`` becomes the error's
``op``, as a local Session reports it).
"""
from __future__ import annotations

import logging
import random
import threading

from tfc.frontend import errors

from . import wire

logger = logging.getLogger("tfc")

CHANNEL_OPTIONS = [("grpc.max_send_message_length", -1), ("grpc.max_receive_message_length", -1)]
# Between the tasks of a cluster: a task that went away is dialed again within a second or two
# (gRPC's default reconnection backoff grows to two minutes), and a new channel to it has its
# own connection (gRPC shares them between channels by default, backoff included).
PEER_CHANNEL_OPTIONS = CHANNEL_OPTIONS + [("grpc.initial_reconnect_backoff_ms", 250),
                                          ("grpc.min_reconnect_backoff_ms", 250),
                                          ("grpc.max_reconnect_backoff_ms", 2000),
                                          ("grpc.use_local_subchannel_pool", 1)]
CONTROL_TIMEOUT_S = 60.0  # CreateSession, ExtendSession, ListDevices without operation_timeout_in_ms
CLOSE_TIMEOUT_S = 10.0  # CloseSession without operation_timeout_in_ms: closing must not hang
RELEASE_TIMEOUT_S = 2.0  # CloseSession from a dropped Session's __del__


CALL_THREADS = 256  # calls in flight at once through Channel.submit (a RunGraph waits for its step)


class _CallPool:
    """Threads making blocking calls for Channel.submit: started as needed (up to ``limit``),
    kept for the next calls, daemons (a call to a task that never answers must not hold up
    the interpreter's exit, as a ThreadPoolExecutor's threads would)."""

    def __init__(self, limit: int):
        import queue

        self._limit = limit
        self._queue = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._threads = 0
        self._idle = 0

    def submit(self, fn, *args, **kwargs):
        from concurrent.futures import Future

        future = Future()
        with self._lock:
            if self._idle:  # a waiting thread takes it: it is spoken for
                self._idle -= 1
                spawn = False
            else:  # every thread is busy (a RunGraph may wait for this very call): one more
                spawn = self._threads < self._limit
                self._threads += spawn
        self._queue.put((future, fn, args, kwargs))
        if spawn:
            threading.Thread(target=self._work, name="tfc-rpc", daemon=True).start()
        return future

    def _work(self) -> None:
        while True:
            future, fn, args, kwargs = self._queue.get()
            if future.set_running_or_notify_cancel():
                try:
                    result = fn(*args, **kwargs)
                except BaseException as e:  # noqa: BLE001 - handed to the future
                    future.set_exception(e)
                else:
                    future.set_result(result)
            with self._lock:
                self._idle += 1


_POOL: list = []
_POOL_LOCK = threading.Lock()


def _call_pool() -> _CallPool:
    with _POOL_LOCK:
        if not _POOL:
            _POOL.append(_CallPool(CALL_THREADS))
        return _POOL[0]


def _request_id() -> int:
    """A random non-zero 63-bit id: masters drop a request id they have seen (from any client)."""
    return random.getrandbits(63) | 1


def _serialize(message) -> bytes:
    return message.SerializeToString()


class Channel:
    """A gRPC channel to one task, calling TensorFlow's services by their wire paths."""

    def __init__(self, address: str, options=None):
        import grpc

        self.address = address
        self._grpc = grpc
        self._channel = grpc.insecure_channel(address, options=options or CHANNEL_OPTIONS)
        self._calls: dict = {}

    def _stub(self, service: str, method: str, response_class):
        """``response_class``: a protobuf message class, or a function decoding the bytes."""
        path = f"/tensorflow.{service}/{method}"
        deserialize = getattr(response_class, "FromString", response_class)
        stub = self._calls.get((path, deserialize))
        if stub is None:
            stub = self._calls[(path, deserialize)] = self._channel.unary_unary(
                path, request_serializer=_serialize, response_deserializer=deserialize)
        return stub

    def call(self, service: str, method: str, request, response_class, timeout=None):
        """``/tensorflow.<service>/<method>`` with ``timeout`` seconds (None: no deadline);
        a failure is the tf.errors class of its status, naming the address."""
        stub = self._stub(service, method, response_class)
        try:
            return stub(request, timeout=timeout)
        except self._grpc.RpcError as e:
            raise rpc_error(e, self.address, method, timeout) from None

    def future(self, service: str, method: str, request, response_class, timeout=None):
        """The same call, started: a grpc future (``result()`` raises grpc.RpcError; see
        ``rpc_error``), which ``cancel()`` cancels."""
        return self._stub(service, method, response_class).future(request, timeout=timeout)

    def submit(self, service: str, method: str, request, response_class, timeout=None):
        """The same call, made by a thread of a shared pool: a concurrent.futures.Future
        (``result()`` raises grpc.RpcError). Cheaper than a grpc future (which starts a
        thread to poll its channel when none runs), but not cancellable."""
        return _call_pool().submit(self._stub(service, method, response_class), request, timeout=timeout)

    def close(self) -> None:
        self._channel.close()


def rpc_error(e, address: str, method: str, timeout=None) -> errors.OpError:
    """The tf.errors exception for a failed RPC."""
    import grpc

    code = e.code() if hasattr(e, "code") else grpc.StatusCode.UNKNOWN
    details = (e.details() if hasattr(e, "details") else None) or ""
    value = code.value[0] if code is not None else errors.UNKNOWN
    if code == grpc.StatusCode.UNAVAILABLE:
        return errors.UnavailableError(None, None, f"{method} to grpc://{address} failed: the server is unavailable "
                                                   f"({details or 'no details'})")
    if code == grpc.StatusCode.DEADLINE_EXCEEDED and details in ("Deadline Exceeded", ""):
        limit = f" within {timeout * 1000:.0f} ms" if timeout is not None else ""
        return errors.DeadlineExceededError(None, None, f"{method} to grpc://{address} did not complete{limit} "
                                                        "(gRPC deadline: ConfigProto.operation_timeout_in_ms)")
    if code == grpc.StatusCode.CANCELLED and not details:
        details = f"{method} to grpc://{address} was cancelled"
    return wire.error_class(value)(None, None, details)


def _config_timeout(config) -> float | None:
    ms = int(getattr(config, "operation_timeout_in_ms", 0) or 0) if config is not None else 0
    return ms / 1000.0 if ms > 0 else None


def _as_tfc_proto(message, cls):
    """``message`` as tfc's protobuf class (TensorFlow's own RunOptions/ConfigProto parse too)."""
    if message is None or isinstance(message, cls):
        return message
    return cls.FromString(message.SerializeToString())


class RemoteSession:
    """The master-facing half of a ``grpc://`` Session."""

    def __init__(self, target: str, graph, config=None):
        from tfc.protos.config_pb2 import ConfigProto

        self.target = target
        self.address = target[len("grpc://"):].rstrip("/")
        self.graph = graph
        self.config = _as_tfc_proto(config, ConfigProto)
        self.timeout = _config_timeout(self.config)
        self._channel = None
        self._lock = threading.Lock()
        self.handle = None
        self.graph_version = 0  # the master's
        self._sent_version = 0  # graph.version when the graph was last sent

    def _channel_(self) -> Channel:
        if self._channel is None:
            self._channel = Channel(self.address)
        return self._channel

    def _call(self, method: str, request, response_class, timeout="default"):
        if timeout == "default":  # a step may run for hours; session management may not
            timeout = self.timeout or CONTROL_TIMEOUT_S
        from .server import local_server

        server = local_server(self.address)
        if server is not None:  # TF's LocalMaster: the master of this process, without gRPC
            return server.call_master(method, request, timeout)
        return self._channel_().call("MasterService", method, request, response_class, timeout)

    # -- the graph ------------------------------------------------------------------------------
    def _sync_graph(self) -> None:
        """CreateSession (first call) or ExtendSession (the graph grew) so the master has the graph."""
        from tfc.protos import master_pb2

        with self._lock:
            version = self.graph.version
            if self.handle is None:
                request = master_pb2.CreateSessionRequest(graph_def=self.graph.as_graph_def(), target=self.target)
                if self.config is not None:
                    request.config.CopyFrom(self.config)
                response = self._call("CreateSession", request, master_pb2.CreateSessionResponse)
                self.handle, self.graph_version = response.session_handle, response.graph_version
                self._sent_version = version
            elif version > self._sent_version:
                graph_def = self.graph.as_graph_def(from_version=self._sent_version)
                if len(graph_def.node):
                    request = master_pb2.ExtendSessionRequest(session_handle=self.handle, graph_def=graph_def,
                                                              current_graph_version=self.graph_version)
                    response = self._call("ExtendSession", request, master_pb2.ExtendSessionResponse)
                    self.graph_version = response.new_graph_version
                self._sent_version = version

    # -- steps ----------------------------------------------------------------------------------
    def partial_run_setup(self, fetch_names: list, feed_names: list, target_names: list) -> str:
        """PartialRunSetup: the master's handle for a partial run."""
        from tfc.protos import master_pb2

        self._sync_graph()
        request = master_pb2.PartialRunSetupRequest(session_handle=self.handle, feed=feed_names, fetch=fetch_names,
                                                    target=target_names, request_id=_request_id())
        return self._call("PartialRunSetup", request, master_pb2.PartialRunSetupResponse).partial_run_handle

    def run(self, plan, arrays: list, options=None, run_metadata=None, partial_run_handle: str = "") -> list:
        """The values of ``plan.computed`` (fetch values, as a local Session returns them);
        ``partial_run_handle``: a call of that partial run."""
        from tfc.protos import config_pb2, master_pb2
        from tfc.runtime.fetch import to_fetch_value

        self._sync_graph()
        request = master_pb2.RunStepRequest(session_handle=self.handle, store_errors_in_response_body=True,
                                            request_id=_request_id(), partial_run_handle=partial_run_handle)
        for feeder, array in zip(plan.feeders, arrays):
            request.feed.add(name=feeder.tensor.name,
                             tensor=wire.to_tensor_proto(array, feeder.dtype.as_datatype_enum))
        request.fetch.extend([t.name for t in plan.computed])
        request.target.extend([op.name for op in plan.fetch_plan.ops])
        timeout = self.timeout
        options = _as_tfc_proto(options, config_pb2.RunOptions)
        if options is not None:
            request.options.CopyFrom(options)
            if options.timeout_in_ms > 0:
                step_limit = options.timeout_in_ms / 1000.0 + 1.0
                timeout = step_limit if timeout is None else min(timeout, step_limit)
        response = self._call("RunStep", request, master_pb2.RunStepResponse, timeout)
        if response.status_code:
            raise self._error(response.status_code, response.status_error_message)
        if run_metadata is not None and response.HasField("metadata"):
            try:
                run_metadata.MergeFromString(response.metadata.SerializeToString())
            except AttributeError:
                pass
        by_name = {named.name: named.tensor for named in response.tensor}
        values = []
        for t in plan.computed:
            proto = by_name.get(t.name)
            if proto is None:
                raise errors.InternalError(None, None, f"RunStep from grpc://{self.address} returned no value for "
                                                       f"the fetch {t.name}")
            values.append(to_fetch_value(wire.to_ndarray(proto)))
        return values

    def _error(self, code: int, message: str) -> errors.OpError:
        text, node = wire.split_node_suffix(message)  # tfc's masters: the op's name trails the message
        if node is None:
            text, node = message, wire.node_name_in(message)  # TF's: it may be followed by logs
        op = self.graph._nodes_by_name.get(node) if node else None
        return wire.error_class(code)(None, op, text if op is not None else message)

    # -- devices, lifetime ----------------------------------------------------------------------
    def list_devices(self) -> list:
        from tfc.protos import master_pb2
        from tfc.runtime.session import _DeviceAttributes

        response = self._call("ListDevices", master_pb2.ListDevicesRequest(session_handle=self.handle or ""),
                              master_pb2.ListDevicesResponse)
        return [_DeviceAttributes(d.name, d.device_type, d.memory_limit, d.incarnation)
                for d in list(response.local_device) + list(response.remote_device)]

    def close(self, timeout=None) -> None:
        """CloseSession (errors are logged, not raised: a dead server must not mask the error
        that ended a ``with`` block) and drop the channel."""
        from tfc.protos import master_pb2

        with self._lock:
            handle, self.handle = self.handle, None
            channel, self._channel = self._channel, None
        try:
            if handle:
                self._close_on_master(channel, master_pb2.CloseSessionRequest(session_handle=handle),
                                      timeout or self.timeout or CLOSE_TIMEOUT_S)
        except errors.OpError as e:
            logger.info("tfc: closing the session on grpc://%s: %s", self.address, e)
        finally:
            if channel is not None:
                channel.close()

    def _close_on_master(self, channel, request, timeout) -> None:
        from tfc.protos import master_pb2

        from .server import local_server

        server = local_server(self.address)
        if server is not None:
            server.call_master("CloseSession", request, timeout)
            return
        temporary = channel is None  # the session never used gRPC (its master was local then)
        if temporary:
            channel = Channel(self.address)
        try:
            channel.call("MasterService", "CloseSession", request, master_pb2.CloseSessionResponse, timeout)
        finally:
            if temporary:
                channel.close()

    def release(self) -> None:
        """From a Session's __del__: close quietly, and briefly (the collector runs it)."""
        try:
            self.close(RELEASE_TIMEOUT_S)
        except Exception:  # noqa: BLE001 - interpreter shutdown and the like
            pass


def reset(target: str, containers=None, config=None) -> None:
    """tf.Session.reset: the master at ``target`` clears ``containers`` (the default one when
    empty) on every task of its cluster and closes its sessions."""
    from tfc.protos import config_pb2, master_pb2

    address = target[len("grpc://"):].rstrip("/")
    config = _as_tfc_proto(config, config_pb2.ConfigProto)
    names = [c.decode() if isinstance(c, bytes) else str(c) for c in (containers or [])]
    channel = Channel(address)
    try:
        channel.call("MasterService", "Reset", master_pb2.ResetRequest(container=names), master_pb2.ResetResponse,
                     _config_timeout(config) or CLOSE_TIMEOUT_S * 6)
    finally:
        channel.close()
