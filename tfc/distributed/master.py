"""The master service: TensorFlow's MasterService on this task.

A client's session is a ``MasterSession``: the graph it sent (a tfc Graph, imported from
the GraphDef and grown by ExtendSession), its config (the server's default session config
merged with the client's). Each step (a feed / fetch / target signature) is placed once
(tfc/distributed/placer.py): a step whose ops are all on this task runs here on a
``TaskSession`` (tfc's Session machinery, on the task's variables); a step that spans tasks
is partitioned and run on each of them (tfc/distributed/cluster_steps.py). A step's limit
is RunOptions ``timeout_in_ms``, else ``operation_timeout_in_ms``, and ends a little before
the client's own RunStep deadline, so that the error naming what did not answer reaches it.

RPCs (grpc_master_service_impl.cc's wire paths ``/tensorflow.MasterService/<Method>``):
CreateSession, ExtendSession (only new nodes; ``current_graph_version`` must match),
RunStep (errors in the response body when the client asks, as TF's client does),
CloseSession, ListDevices (this task's CPU and the ones its peers report), Reset (closes
every session, clears the containers here and, best effort, on the other tasks),
MakeCallable / RunCallable / ReleaseCallable, and PartialRunSetup (UNIMPLEMENTED).
A session handle the master does not know is ABORTED "Session ... is not found.", as in TF.
"""
from __future__ import annotations

import secrets
import threading
import time

import numpy as np

from tfc.frontend import errors
from tfc.frontend.graph import Graph
from tfc.protos import master_pb2
from tfc.protos.config_pb2 import ConfigProto

from . import wire
from .resources import ResourceManager
from .task_session import TaskSession


PEER_TIMEOUT_S = 5.0  # Reset's CleanupAll and ListDevices' GetStatus to the other tasks


def import_nodes(graph, graph_def, extend: bool = False) -> None:
    """Add ``graph_def``'s nodes to ``graph`` under their own names; on ``extend`` they may use
    nodes the graph already has (as ExtendSession's do). A failure adds nothing."""
    from tfc.frontend.graph_io import _parse_input, _tensor_key, import_graph_def

    new = {node.name for node in graph_def.node}
    existing = graph._nodes_by_name
    duplicates = sorted(name for name in new if name in existing)
    if duplicates:
        raise errors.InvalidArgumentError(None, None, f"Duplicate node name in graph: '{duplicates[0]}'")
    input_map = {}
    if extend:
        for node in graph_def.node:
            for inp in node.input:
                source, index, is_control = _parse_input(inp)
                if source in new:
                    continue
                op = existing.get(source)
                if op is None:
                    raise errors.InvalidArgumentError(None, None, f"Node '{node.name}': Unknown input node '{inp}'")
                if is_control:
                    input_map[_tensor_key(inp)] = op
                else:
                    if index >= len(op.outputs):
                        raise errors.InvalidArgumentError(
                            None, None, f"Node '{node.name}': Connecting to invalid output {index} of source node "
                                        f"{source} which has {len(op.outputs)} outputs.")
                    input_map[_tensor_key(inp)] = op.outputs[index]
    with graph.as_default():
        try:
            import_graph_def(graph_def, input_map=input_map or None, name="")
        except ValueError as e:
            text = str(e)
            if text.startswith("Op type not registered"):
                raise errors.NotFoundError(None, None, text) from None
            raise errors.InvalidArgumentError(None, None, text) from None


CALL_MARGIN_S = 0.25  # a step ends this long before its RunStep's deadline: its error reaches the client


def _within_call(timeout_ms: int, context) -> int:
    """The step's limit (ms; 0: none): ``timeout_ms``, and no later than just before the client's
    RunStep deadline (the error naming what did not answer gets back before the client gives
    up on its own)."""
    remaining = wire.time_remaining(context)
    if remaining is None:
        return timeout_ms
    limit = max(1, int((remaining - CALL_MARGIN_S) * 1000))
    return min(timeout_ms, limit) if timeout_ms > 0 else limit


def merged_config(default: ConfigProto, requested) -> ConfigProto:
    config = ConfigProto()
    config.CopyFrom(default)
    if requested is not None:
        config.MergeFrom(requested)
    return config


class MasterSession:
    """One client session: its graph, config, the TaskSession running its steps on this task,
    and the steps across tasks (ClusterSteps)."""

    def __init__(self, handle: str, server, graph_def, config: ConfigProto):
        from .cluster_steps import ClusterSteps

        self.handle = handle
        self.config = config
        self.server = server
        self.graph = Graph()
        import_nodes(self.graph, graph_def)
        self.graph_version = 0
        self.private = bool(config.isolate_session_state)
        self.resources = ResourceManager() if self.private else server.resources
        self.session = TaskSession(self.graph, config, server.task, self.resources, private=self.private)
        self.session.resource_scope = handle  # (the worker sessions of this session use the same handle)
        self.cluster = ClusterSteps(self, server)
        self.lock = threading.RLock()
        self.callables: dict = {}
        self._next_callable = 0
        self._plans: dict = {}  # (fetches, feed names, targets) -> StepPlan, or None: the step is on this task
        self.partial_runs: dict = {}  # partial run handle -> PartialRun

    def extend(self, graph_def, current_version: int) -> int:
        with self.lock:
            if current_version != self.graph_version:
                raise errors.AbortedError(None, None, f"Current version is {self.graph_version} but caller "
                                                      f"expected {current_version}.")
            if len(graph_def.node):
                import_nodes(self.graph, graph_def, extend=True)
            self.graph_version += 1
            return self.graph_version

    def plan(self, fetches, feed_names, targets):
        """The placed step of this signature: None when it runs on this task alone."""
        key = (tuple(fetches), tuple(feed_names), tuple(targets))
        try:
            return self._plans[key]
        except KeyError:
            pass
        with self.lock:
            plan, final = self._make_plan(fetches, feed_names, targets)
            if final:
                self._plans[key] = plan
            return plan

    def _make_plan(self, fetches, feed_names, targets) -> tuple:
        """(plan or None, whether the answer holds for the session's lifetime)."""
        from tfc.passes.lower import prune

        from .cluster_steps import StepPlan
        from .placer import place

        graph = self.graph
        try:
            fetch_tensors = [graph.as_graph_element(n, allow_tensor=True, allow_operation=False) for n in fetches]
            fed = [graph.as_graph_element(n, allow_tensor=True, allow_operation=False) for n in feed_names]
            target_ops = [graph.as_graph_element(n, allow_tensor=False, allow_operation=True) for n in targets]
        except Exception:  # noqa: BLE001 - the TaskSession reports bad names as a local Session does
            return None, False
        fed_set = set(fed)
        computed = [t for t in fetch_tensors if t not in fed_set]
        if not computed and not target_ops:
            return None, True
        ops = prune(computed, target_ops, fed)
        placement = place(ops, graph, self.server.task, bool(self.config.allow_soft_placement))
        own = (self.server.task.job, self.server.task.index)
        if all(where == own for where in placement.values()):
            return None, True
        return StepPlan(fetch_tensors, fed, target_ops, ops, placement), True

    def run(self, fetches, feeds, targets, timeout_ms: int) -> list:
        """Run a step (with a limit of ``timeout_ms`` when positive: DeadlineExceededError after it;
        the step itself cannot be interrupted and finishes in the background). A step whose ops
        are all on this task runs here; one that spans tasks runs on each of them."""
        plan = self.plan(fetches, [name for name, _ in feeds], targets)
        if plan is None:
            from tfc.runtime import step_context

            deadline = time.monotonic() + timeout_ms / 1000.0 if timeout_ms > 0 else None

            def step():  # (a dequeue waiting in it lets go of the lock, and ends at the deadline)
                with self.lock, step_context.step(deadline, lock=self.lock):
                    return self.session.run_step(fetches, feeds, targets)
            slack = 0.0
        else:
            deadline = time.monotonic() + timeout_ms / 1000.0 if timeout_ms > 0 else None
            values = [value for _, value in feeds]

            def step():
                return self.cluster.run(plan, values, deadline)
            slack = 0.5  # the calls' own deadlines (which name the task) come first
        if timeout_ms <= 0:
            return step()
        outcome: dict = {}
        done = threading.Event()

        def bounded():
            try:
                outcome["values"] = step()
            except BaseException as e:  # noqa: BLE001 - handed to the caller
                outcome["error"] = e
            finally:
                done.set()

        threading.Thread(target=bounded, name=f"tfc-step-{self.handle[:8]}", daemon=True).start()
        if not done.wait(timeout_ms / 1000.0 + slack):
            raise errors.DeadlineExceededError(None, None, f"The step did not finish within {timeout_ms} ms "
                                                           "(RunOptions.timeout_in_ms / operation_timeout_in_ms)")
        if "error" in outcome:
            raise outcome["error"]
        return outcome["values"]

    def partial_run(self, handle: str, fetches, feeds, targets, timeout_ms: int) -> list:
        """One call of a partial run (tfc/runtime/partial_run.py) set up by PartialRunSetup."""
        with self.lock:
            run = self.partial_runs.get(handle)
        if run is None:
            raise errors.InvalidArgumentError(None, None, "Must run 'setup' before performing partial runs!")
        if targets:
            raise errors.InvalidArgumentError(None, None, "A partial run call takes no targets (tfc's master)")
        run.session.timeout_ms = timeout_ms
        try:
            return run.run(fetches, dict(feeds))
        finally:
            if run.done:
                with self.lock:
                    self.partial_runs.pop(handle, None)

    def close(self) -> None:
        with self.lock:
            self.partial_runs.clear()
            self.cluster.close()
            self.session.close()
            self.callables.clear()


class _PartialRunner:
    """A MasterSession as a PartialRun drives a session: its graph, and steps by tensors."""

    def __init__(self, master_session: MasterSession):
        self.master_session = master_session
        self.graph = master_session.graph
        self.timeout_ms = 0

    def run(self, fetches: list, feed_dict: dict) -> list:
        from tfc.frontend.graph import Tensor

        tensors = [f for f in fetches if isinstance(f, Tensor)]
        targets = [f.name for f in fetches if not isinstance(f, Tensor)]
        feeds = [(tensor.name, np.asarray(value)) for tensor, value in feed_dict.items()]
        values = self.master_session.run([t.name for t in tensors], feeds, targets, self.timeout_ms)
        return list(values) + [None] * len(targets)


class MasterService:
    """The MasterService RPCs of one task (``server``: the TaskServer)."""

    def __init__(self, server):
        self.server = server
        self._lock = threading.Lock()
        self._sessions: dict = {}

    # -- sessions ---------------------------------------------------------------------------------
    def _session(self, handle: str) -> MasterSession:
        with self._lock:
            session = self._sessions.get(handle)
        if session is None:
            raise errors.AbortedError(None, None, f"Session {handle} is not found.")
        return session

    def CreateSession(self, request, context):
        config = merged_config(self.server.default_session_config,
                               request.config if request.HasField("config") else None)
        handle = secrets.token_hex(8)
        session = MasterSession(handle, self.server, request.graph_def, config)
        with self._lock:
            self._sessions[handle] = session
        return master_pb2.CreateSessionResponse(session_handle=handle, graph_version=session.graph_version)

    def ExtendSession(self, request, context):
        session = self._session(request.session_handle)
        version = session.extend(request.graph_def, request.current_graph_version)
        return master_pb2.ExtendSessionResponse(new_graph_version=version)

    def PartialRunSetup(self, request, context):
        from tfc.runtime.partial_run import PartialRun

        session = self._session(request.session_handle)
        fetches = list(request.fetch) + list(request.target)
        run = PartialRun(_PartialRunner(session), fetches, list(request.feed))
        with session.lock:
            session.partial_runs[run.handle] = run
        return master_pb2.PartialRunSetupResponse(partial_run_handle=run.handle)

    def RunStep(self, request, context):
        response = master_pb2.RunStepResponse()
        try:
            session = self._session(request.session_handle)
            feeds = [(named.name, wire.to_ndarray(named.tensor)) for named in request.feed]
            timeout_ms = request.options.timeout_in_ms or session.config.operation_timeout_in_ms
            fetches = list(request.fetch)
            if request.partial_run_handle:
                values = session.partial_run(request.partial_run_handle, fetches, feeds, list(request.target),
                                             _within_call(int(timeout_ms), context))
            else:
                values = session.run(fetches, feeds, list(request.target), _within_call(int(timeout_ms), context))
            for name, value in zip(fetches, values):
                response.tensor.add(name=name, tensor=wire.to_tensor_proto(value))
        except Exception as e:  # noqa: BLE001 - reported in the response or as the RPC's status
            if not request.store_errors_in_response_body:
                raise
            code, message = wire.status_of(e)
            del response.tensor[:]
            response.status_code = code
            response.status_error_message = message
        return response

    def CloseSession(self, request, context):
        with self._lock:
            session = self._sessions.pop(request.session_handle, None)
        if session is None:
            raise errors.AbortedError(None, None, f"Session {request.session_handle} is not found.")
        session.close()
        return master_pb2.CloseSessionResponse()

    def ListDevices(self, request, context):
        """This task's device and the ones the other tasks report; for a session, all of them
        in ``local_device`` (as TF's MasterSession lists a session's devices), else the others
        in ``remote_device``."""
        if request.session_handle:
            self._session(request.session_handle)
        response = master_pb2.ListDevicesResponse()
        response.local_device.add().CopyFrom(self.server.device_attributes())
        others = response.local_device if request.session_handle else response.remote_device
        for attributes in self.server.peer_devices(PEER_TIMEOUT_S):
            others.add().CopyFrom(attributes)
        return response

    def Reset(self, request, context):
        with self._lock:
            sessions = list(self._sessions.values())
            self._sessions.clear()
        for session in sessions:
            session.close()
        containers = list(request.container)
        self.server.resources.cleanup(containers)
        self.server.cleanup_peers(containers, PEER_TIMEOUT_S)
        return master_pb2.ResetResponse()

    # -- callables ---------------------------------------------------------------------------------
    def MakeCallable(self, request, context):
        session = self._session(request.session_handle)
        options = request.options
        if len(options.tensor_connection):
            raise errors.UnimplementedError(None, None, "CallableOptions.tensor_connection is not supported by "
                                                        "tfc's master")
        with session.lock:
            handle = session._next_callable
            session._next_callable += 1
            session.callables[handle] = (list(options.feed), list(options.fetch), list(options.target),
                                         int(options.run_options.timeout_in_ms))
        return master_pb2.MakeCallableResponse(handle=handle)

    def RunCallable(self, request, context):
        session = self._session(request.session_handle)
        found = session.callables.get(request.handle)
        if found is None:
            raise errors.InvalidArgumentError(None, None, f"No such callable handle: {request.handle}")
        feed_names, fetches, targets, timeout_ms = found
        if len(request.feed) != len(feed_names):
            raise errors.InvalidArgumentError(None, None, f"Expected {len(feed_names)} feed tensors, but got "
                                                          f"{len(request.feed)}")
        feeds = [(name, wire.to_ndarray(proto)) for name, proto in zip(feed_names, request.feed)]
        values = session.run(fetches, feeds, targets,
                             _within_call(timeout_ms or int(session.config.operation_timeout_in_ms), context))
        response = master_pb2.RunCallableResponse()
        for value in values:
            response.fetch.add().CopyFrom(wire.to_tensor_proto(value))
        return response

    def ReleaseCallable(self, request, context):
        session = self._session(request.session_handle)
        with session.lock:
            if session.callables.pop(request.handle, None) is None:
                raise errors.InvalidArgumentError(None, None, f"No such callable handle: {request.handle}")
        return master_pb2.ReleaseCallableResponse()

    # -- the server ----------------------------------------------------------------------------------
    def close_all(self) -> None:
        with self._lock:
            sessions = list(self._sessions.values())
            self._sessions.clear()
        for session in sessions:
            session.close()

    def session_count(self) -> int:
        with self._lock:
            return len(self._sessions)
