"""Steps across tasks: what a master does with a step whose ops are on several tasks.

TensorFlow's master does it this way (master_session.cc), and so does tfc's:

1. placement (tfc/distributed/placer.py) of the step's pruned subgraph, once per feed /
   fetch / target signature;
2. each task the step uses is reached once per session: GetStatus (its incarnation, which
   goes into the rendezvous keys of what it sends) and CreateWorkerSession (the master's
   session handle; the session's ``isolate_session_state``);
3. the step is partitioned per task (tfc/distributed/partition.py: ``_Send``/``_Recv``
   pairs with TF's attrs and keys) and each partition registered on its task
   (RegisterGraph), again for each new signature; the task compiles it like a local step
   (tfc/distributed/stages.py) on the first RunGraph and keeps the program;
4. each step runs every partition at once (RunGraph with the step id; feeds go in the
   request of the task that consumes them, fetches come back in the response of the task
   that produces them), and the tasks exchange the rest among themselves (RecvTensor);
   then CleanupGraph(step id) on every task. (Fetches come back in RunGraph's response
   (``recv_key``), as TF 1.15's master gets them; both ends of a client-terminated key are
   the task's own device, the only keys a TF worker accepts there.)

The master's own task is reached in process (no RPC): its partition runs in the calling
thread, on the session's resources.

Failures are named and bounded. Every call has a deadline: the step's (RunOptions
``timeout_in_ms``, else ``operation_timeout_in_ms``) for RunGraph, at most 60 s for the
others. When a partition fails, the master cleans the step up on every task at once (what
waits for the failed task's tensors gets an error instead of waiting), then reports one
error: a task that cannot be reached (connection refused, or no answer to RunGraph by the
deadline nor to GetStatus right after) is an UnavailableError naming it (job/task and
address); one that answers GetStatus but did not finish its part in time is a
DeadlineExceededError naming it; a task that answers with a new incarnation was restarted
(its variables are gone) and is an AbortedError saying so (MonitoredTrainingSession then
makes a new session and restores); otherwise the error of the failing partition, as its
task reported it.
"""
from __future__ import annotations

import random
import threading
import time

from tfc.frontend import errors
from tfc.protos import worker_pb2
from tfc.protos.tensorflow_server_pb2 import ServerDef

from . import wire
from .cluster import task_device_name, task_name
from .partition import build

CONTROL_TIMEOUT_S = 60.0  # GetStatus, CreateWorkerSession, RegisterGraph without a step deadline
PROBE_TIMEOUT_S = 1.0  # GetStatus to a task whose call failed: dead, restarted, or fine?
DEADLINE_PROBE_TIMEOUT_S = 0.2  # the same after the step's deadline (within the client's margin)
CLEANUP_TIMEOUT_S = 10.0  # CleanupGraph, DeregisterGraph, DeleteWorkerSession (nobody waits for them)


def _remaining(deadline, cap=None):
    if deadline is None:
        return cap
    left = max(0.001, deadline - time.monotonic())
    return left if cap is None else min(left, cap)


class TaskLink:
    """A task of the cluster as one master session uses it."""

    def __init__(self, server, job: str, index: int):
        task = server.task
        self.job, self.index = job, index
        self.name = task_name(job, index, task.replica)
        self.device = task_device_name(job, index, task.replica)
        self.address = server.cluster.task_address(job, index)
        if isinstance(self.address, bytes):
            self.address = self.address.decode()
        self.local = (job, index) == (task.job, task.index)
        self.incarnation = task.incarnation if self.local else None
        self.session = None  # local: the WorkerSession; remote: True once CreateWorkerSession answered
        self._server = server

    @property
    def channel(self):
        return self._server.peer_channel(self.job, self.index)

    def unreachable(self) -> None:
        """A call found the task unavailable: dial it afresh next time."""
        if not self.local:
            self._server.reset_peer_channel(self.job, self.index)

    def describe(self) -> str:
        return f"{self.name} at {self.address}"


def task_error(link: TaskLink, method: str, e, timeout=None) -> errors.OpError:
    """The error of a call to ``link`` that did not complete (a grpc.RpcError), naming the task."""
    import grpc

    from .client import rpc_error

    code = e.code() if hasattr(e, "code") else None
    details = (e.details() if hasattr(e, "details") else "") or ""
    if code == grpc.StatusCode.UNAVAILABLE:
        link.unreachable()
        return errors.UnavailableError(None, None, f"{link.describe()} is unavailable: {method} failed "
                                                   f"({details or 'no details'})")
    if code == grpc.StatusCode.DEADLINE_EXCEEDED and details in ("Deadline Exceeded", ""):
        limit = f" within {timeout * 1000:.0f} ms" if timeout is not None else ""
        return errors.DeadlineExceededError(None, None, f"{link.describe()} did not complete {method}{limit} "
                                                        "(RunOptions.timeout_in_ms / operation_timeout_in_ms)")
    if code == grpc.StatusCode.CANCELLED and not details:
        return errors.CancelledError(None, None, f"{method} to {link.describe()} was cancelled")
    return rpc_error(e, link.address, method, timeout)


class StepPlan:
    """A placed step (one feed / fetch / target signature) and its registered partitions."""

    def __init__(self, fetch_tensors: list, fed: list, target_ops: list, ops: list, placement: dict):
        self.fed = fed
        self.target_ops = target_ops
        self.ops = ops
        self.placement = placement
        fed_position = {t: i for i, t in enumerate(fed)}
        self.fetch_feeds = [fed_position.get(t) for t in fetch_tensors]  # per fetch: the feed answering it
        unique: dict = {}
        self.fetch_slots = []  # per fetch: its position among the unique computed fetches (or None)
        for t, feed in zip(fetch_tensors, self.fetch_feeds):
            if feed is not None:
                self.fetch_slots.append(None)
                continue
            self.fetch_slots.append(unique.setdefault(t, len(unique)))
        self.computed = list(unique)
        self.tasks = sorted(set(placement.values()))
        self.lock = threading.Lock()
        self.generation = None  # the session's generation when registered
        self.parts: dict = {}  # task -> PartitionGraph
        self.handles: dict = {}  # task -> graph handle
        self.fetch_keys: dict = {}  # computed position -> (task, key)


class ClusterSteps:
    """The multi-task steps of one master session (``session``: its MasterSession)."""

    def __init__(self, session, server):
        self.session = session
        self.server = server
        self.handle = session.handle
        self.links: dict = {}
        self.generation = 0  # bumped when a task restarted: every partition is registered again
        self._lock = threading.Lock()
        self._connect_lock = threading.Lock()
        self._closed = False

    # -- tasks ----------------------------------------------------------------------------------
    def link(self, task) -> TaskLink:
        with self._lock:
            found = self.links.get(task)
            if found is None:
                found = self.links[task] = TaskLink(self.server, *task)
            return found

    def _connect(self, tasks, deadline) -> None:
        """GetStatus (the incarnation) and CreateWorkerSession on the tasks not reached yet (once:
        a second CreateWorkerSession would drop the graphs registered in the first)."""
        with self._connect_lock:
            self._connect_locked(tasks, deadline)

    def _connect_locked(self, tasks, deadline) -> None:
        links = [self.link(task) for task in tasks]
        for link in links:
            if link.local and link.session is None:
                link.session = self.server.worker.open_session(self.handle, self.session.resources,
                                                               self.session.config)
        todo = [link for link in links if not link.local and link.session is None]
        if not todo:
            return
        timeout = _remaining(deadline, CONTROL_TIMEOUT_S)
        calls = [(link, link.channel.submit("WorkerService", "GetStatus", worker_pb2.GetStatusRequest(),
                                            worker_pb2.GetStatusResponse, timeout)) for link in todo]
        for link, future in calls:
            try:
                status = future.result()
            except Exception as e:  # noqa: BLE001 - a grpc.RpcError
                error = task_error(link, "GetStatus", e, timeout)
                if error.error_code == errors.DEADLINE_EXCEEDED:
                    link.unreachable()
                    error = errors.UnavailableError(None, None, f"{link.describe()} is unreachable: it did not "
                                                                f"answer GetStatus within {timeout * 1000:.0f} ms")
                raise error from None
            incarnation = status.device_attributes[0].incarnation if status.device_attributes else 0
            if link.incarnation is not None and incarnation != link.incarnation:
                raise self._restarted(link, incarnation)
            link.incarnation = incarnation
        config = self.session.config
        timeout = _remaining(deadline, CONTROL_TIMEOUT_S)
        calls = []
        for link in todo:
            server_def = ServerDef(cluster=self.server.cluster.as_cluster_def(), job_name=link.job,
                                   task_index=link.index, protocol="grpc")
            server_def.default_session_config.CopyFrom(config)
            request = worker_pb2.CreateWorkerSessionRequest(
                session_handle=self.handle, server_def=server_def,
                isolate_session_state=bool(config.isolate_session_state), master_task=self.server.task.name,
                master_incarnation=_int64(self.server.task.incarnation))
            calls.append((link, link.channel.submit("WorkerService", "CreateWorkerSession", request,
                                                    worker_pb2.CreateWorkerSessionResponse, timeout)))
        for link, future in calls:
            try:
                future.result()
            except Exception as e:  # noqa: BLE001 - a grpc.RpcError
                raise task_error(link, "CreateWorkerSession", e, timeout) from None
            link.session = True

    def _restarted(self, link: TaskLink, incarnation: int) -> errors.AbortedError:
        """The task answered with a new incarnation: its state is gone. Every partition is
        registered again at the next step (the keys name incarnations)."""
        old = link.incarnation
        with self._lock:
            link.incarnation = incarnation
            link.session = None
            self.generation += 1
        return errors.AbortedError(
            None, None, f"{link.describe()} was restarted: its incarnation changed from {old & (2**64 - 1):016x} to "
                        f"{incarnation & (2**64 - 1):016x}, and the state it held (variables) is lost. Create a new "
                        "session, and initialize or restore the model (MonitoredTrainingSession does it)")

    def _probe(self, link: TaskLink, error=None, timeout: float = PROBE_TIMEOUT_S, unanswered: str = ""):
        """After a failed call (``error``; ``unanswered``: what the task did not answer in time):
        the error naming a restarted task, or a dead or unreachable one (``error`` itself when
        it says so already), else None."""
        if link.local:
            return None
        try:
            status = link.channel.call("WorkerService", "GetStatus", worker_pb2.GetStatusRequest(),
                                       worker_pb2.GetStatusResponse, timeout)
        except errors.UnavailableError as e:
            link.unreachable()
            if error is not None and error.error_code == errors.UNAVAILABLE:
                return error
            return errors.UnavailableError(None, None, f"{link.describe()} is unavailable: {e.message}")
        except errors.DeadlineExceededError:
            link.unreachable()
            what = f"{unanswered}, nor " if unanswered else ""
            return errors.UnavailableError(None, None, f"{link.describe()} is unreachable: it did not complete "
                                                       f"{what}GetStatus within {timeout * 1000:.0f} ms")
        except errors.OpError:
            return None
        incarnation = status.device_attributes[0].incarnation if status.device_attributes else 0
        if link.incarnation is not None and incarnation != link.incarnation:
            return self._restarted(link, incarnation)
        return None

    # -- registration ---------------------------------------------------------------------------
    def _register(self, plan: StepPlan, deadline) -> None:
        with plan.lock:
            if plan.generation == self.generation and plan.handles:
                return
            stale = dict(plan.handles)
            self._connect(plan.tasks, deadline)
            generation = self.generation
            devices = {task: (self.links[task].device, self.links[task].incarnation) for task in plan.tasks}
            parts = build(self.session.graph, plan.ops, plan.placement, plan.computed, plan.fed, devices,
                          plan.target_ops)
            handles: dict = {}
            timeout = _remaining(deadline, CONTROL_TIMEOUT_S)
            calls = []
            for where, part in parts.items():
                link = self.links[where]
                if link.local:
                    handles[where] = self.server.worker.register(link.session, part.graph_def, self.session.config)
                    continue
                request = worker_pb2.RegisterGraphRequest(session_handle=self.handle,
                                                          create_worker_session_called=True,
                                                          graph_def=part.graph_def, config_proto=self.session.config)
                calls.append((where, link, link.channel.submit("WorkerService", "RegisterGraph", request,
                                                               worker_pb2.RegisterGraphResponse, timeout)))
            failure = None
            for where, link, future in calls:
                try:
                    handles[where] = future.result().graph_handle
                except Exception as e:  # noqa: BLE001 - a grpc.RpcError
                    if failure is None:
                        failure = task_error(link, "RegisterGraph", e, timeout)
                        if failure.error_code in (errors.UNAVAILABLE, errors.ABORTED):
                            failure = self._probe(link, failure) or failure
            if failure is not None:
                self._deregister(handles)
                raise failure
            self._deregister(stale)
            plan.parts, plan.handles, plan.generation = parts, handles, generation
            plan.fetch_keys = {}
            for where, part in parts.items():
                for position, key in part.fetches:
                    plan.fetch_keys[position] = (where, key)

    def _deregister(self, handles: dict) -> None:
        for where, handle in handles.items():
            link = self.links.get(where)
            if link is None or link.session is None:
                continue
            if link.local:
                self.server.worker.deregister(link.session, handle)
                continue
            request = worker_pb2.DeregisterGraphRequest(session_handle=self.handle, create_worker_session_called=True,
                                                        graph_handle=handle)
            link.channel.submit("WorkerService", "DeregisterGraph", request, worker_pb2.DeregisterGraphResponse,
                                CLEANUP_TIMEOUT_S)  # nobody waits for the answer

    # -- steps ----------------------------------------------------------------------------------
    def run(self, plan: StepPlan, feed_values: list, deadline) -> list:
        """One step of ``plan`` with these feed values; one array per fetch."""
        self._register(plan, deadline)
        step_id = random.getrandbits(63) | 1
        failures: list = []  # [(link, error, how)]: how is "step" (its part failed), else the call did not
        # complete (how: the call's timeout)
        aborted = threading.Event()

        def abort():
            if not aborted.is_set():
                aborted.set()
                self._cleanup(plan, step_id)

        calls = []
        local = None
        for where, part in plan.parts.items():
            link = self.links[where]
            if link.local:
                local = (link, part)
                continue
            request = worker_pb2.RunGraphRequest(session_handle=self.handle, create_worker_session_called=True,
                                                 graph_handle=plan.handles[where], step_id=step_id,
                                                 store_errors_in_response_body=True,
                                                 request_id=random.getrandbits(63) | 1)
            for position, key in part.feeds:
                request.send.add(name=key, tensor=wire.to_tensor_proto(
                    feed_values[position], plan.fed[position].dtype.base_dtype.as_datatype_enum))
            request.recv_key.extend(key for _, key in part.fetches)
            timeout = _remaining(deadline)
            future = link.channel.submit("WorkerService", "RunGraph", request, worker_pb2.RunGraphResponse, timeout)
            future.add_done_callback(lambda f: abort() if _failed(f) else None)
            calls.append((link, future, timeout))
        received: dict = {}
        if local is not None:
            link, part = local
            try:
                graph = self.server.worker.graph(link.session, plan.handles[(link.job, link.index)])
                sent = {key: feed_values[position] for position, key in part.feeds}
                received.update(self.server.worker.execute(graph, step_id, sent, deadline))
            except Exception as e:  # noqa: BLE001 - the step's error, reported below
                if not isinstance(e, errors.OpError):
                    code, message = wire.status_of(e)
                    e = wire.error_class(code)(None, None, message)
                failures.append((link, e, "step"))
                abort()
        for link, future, timeout in calls:
            try:
                response = future.result()
            except Exception as e:  # noqa: BLE001 - a grpc.RpcError: the call did not complete
                failures.append((link, task_error(link, "RunGraph", e, timeout), timeout))
                continue
            if response.status_code:
                failures.append((link, wire.error_class(response.status_code)(None, None,
                                                                               response.status_error_message),
                                 "step"))
                continue
            for named in response.recv:
                received[named.name] = wire.to_ndarray(named.tensor)
        if not aborted.is_set():
            self._cleanup(plan, step_id)
        if failures:
            raise self._step_error(failures)
        out = []
        for feed, slot in zip(plan.fetch_feeds, plan.fetch_slots):
            if feed is not None:
                out.append(feed_values[feed])
                continue
            _, key = plan.fetch_keys[slot]
            out.append(received[key])
        return out

    def _cleanup(self, plan: StepPlan, step_id: int) -> None:
        """CleanupGraph(step id) on every task of the step (nobody waits for the answers)."""
        for where in plan.parts:
            link = self.links[where]
            if link.local:
                self.server.worker.rendezvous.cleanup(step_id)
                continue
            link.channel.submit("WorkerService", "CleanupGraph", worker_pb2.CleanupGraphRequest(step_id=step_id),
                                worker_pb2.CleanupGraphResponse, CLEANUP_TIMEOUT_S)  # nobody waits for the answer

    def _step_error(self, failures: list) -> errors.OpError:
        """The error a failed step reports: a task that did not answer (probed: dead, or
        restarted), a task that lost the session's state (restarted), else the first error
        that is not a consequence of another (a step cleaned up, a cancelled receive)."""
        for link, error, how in failures:
            if how != "step":  # the call did not complete (``how``: its timeout)
                if error.error_code == errors.UNAVAILABLE:
                    return self._probe(link, error) or error
                if error.error_code == errors.DEADLINE_EXCEEDED and how is not None:  # a task that does not
                    return self._probe(link, error, DEADLINE_PROBE_TIMEOUT_S,  # answer at all is unreachable
                                       f"RunGraph within {how * 1000:.0f} ms") or error
                return error
        for link, error, how in failures:
            message = error.message
            if (error.error_code == errors.ABORTED and "Session handle is not found" in message) or \
                    (error.error_code == errors.INVALID_ARGUMENT and "Graph handle is not found" in message) or \
                    (error.error_code == errors.ABORTED and "expects a different device incarnation" in message):
                restarted = self._probe(link)
                if restarted is not None:
                    return restarted
        derived = []
        for link, error, how in failures:
            if _is_consequence(error):
                derived.append(error)
                continue
            return error
        return derived[0]

    def close(self) -> None:
        """Drop the worker sessions of this master session (nobody waits for remote answers)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            links = list(self.links.values())
        for link in links:
            if link.session is None:
                continue
            if link.local:
                self.server.worker.close_session(self.handle)
            elif not self.server.stopped:
                link.channel.submit("WorkerService", "DeleteWorkerSession",
                                    worker_pb2.DeleteWorkerSessionRequest(session_handle=self.handle),
                                    worker_pb2.DeleteWorkerSessionResponse, CLEANUP_TIMEOUT_S)
            link.session = None


def _failed(future) -> bool:
    try:
        return bool(future.result().status_code)
    except Exception:  # noqa: BLE001 - the call failed
        return True


def _is_consequence(error) -> bool:
    """An error a step gets because another part of it failed first."""
    message = error.message
    return (isinstance(error, errors.CancelledError)
            or (isinstance(error, errors.AbortedError) and "was cleaned up" in message))


def _int64(value: int) -> int:
    value = int(value) & 0xFFFFFFFFFFFFFFFF
    return value - (1 << 64) if value >= (1 << 63) else value
