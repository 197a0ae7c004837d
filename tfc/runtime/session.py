"""tf.Session and tf.InteractiveSession on compiled code.

Every ``run`` executes native code: the subgraph its fetches, targets and feeds need is
lowered, optimised and compiled once per distinct key (fetches, targets, fed tensors and
their dtypes, ranks and which unknown dims are 1), then reused — a new batch size does
not recompile. The session owns the variables' buffers (updated in place by the
programs) and the state of random ops.

With ``TFC_CACHE_DIR`` set, a compiled step is also kept on disk, keyed by its graph
(tfc/runtime/step_cache.py): a later session or process with the same step loads it
without lowering, passes or LLVM (``stats["step_cache_hits"]``).
"""
from __future__ import annotations

import collections.abc
import contextlib
import logging
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from tfc import ir
from tfc.codegen.bf16 import precision_of_config
from tfc.frontend import dtypes, errors
from tfc.frontend.device import full_device_name
from tfc.frontend.graph import Operation, Tensor, default_session_stack, get_default_graph
from tfc.frontend.registry import lookup_op_type
from tfc.frontend.sparse_tensor import SparseTensor, expand_feeds
from tfc.passes.lower import UnsupportedOpsError

from .executable import ShapeBindingError
from . import step_context
from .host import plan_step, run_host_ops
from .fast_run import MISS, fast_run_for
from .fetch import FetchPlan, to_fetch_value

logger = logging.getLogger("tfc")


@dataclass
class CompiledStep:
    """A compiled program for one cache key, and how to feed it."""

    key: tuple
    executable: object
    feeds: list  # fed tensors in argument order
    refs: list  # RefSlots in argument order (after the feeds)
    fetches: list  # fetched tensors in result order
    read_refs: set  # ref names whose old value the program reads
    written_refs: set  # ref names the program assigns
    result: object = None  # the CompileResult (IR, reports); None when loaded from the step cache
    timings: dict = field(default_factory=dict)  # seconds: CompileResult.timings, or step_cache_load
    lock: threading.Lock = field(default_factory=threading.Lock)
    written_variables: list = field(default_factory=list)  # [(argument position, variable name)]
    target: str = "cpu"  # or "cuda": a GPU program (its variables live in device memory)
    ordinal: int = 0  # a GPU program's GPU

    def __post_init__(self):
        self.written_variables = [(len(self.feeds) + i, slot.name) for i, slot in enumerate(self.refs)
                                  if slot.kind == "variable" and slot.name in self.written_refs]


class _Feeder:
    """Checks and converts values fed to one tensor (TF's feed rules)."""

    def __init__(self, key, tensor):
        self.key = key
        self.tensor = tensor
        self.dtype = tensor.dtype.base_dtype
        self.np_dtype = self.dtype.as_numpy_dtype
        self.is_string = self.dtype == dtypes.string
        self.check_int = self.dtype.is_integer
        shape = tensor.shape
        self.rank = shape.ndims
        self.known = [] if shape.dims is None else [(i, d.value) for i, d in enumerate(shape.dims)
                                                   if d.value is not None]

    def convert(self, value) -> np.ndarray:
        if type(value) is np.ndarray or isinstance(value, np.generic):  # the common case, checked cheaply
            return self._checked_shape(np.asarray(value, dtype=self.np_dtype, order="C")) if not self.is_string \
                else self._convert(value)
        return self._convert(value)

    def _convert(self, value) -> np.ndarray:
        if isinstance(value, Tensor) or hasattr(value, "_as_graph_element"):
            raise TypeError("The value of a feed cannot be a tf.Tensor object. Acceptable feed values include "
                            "Python scalars, strings, lists, numpy ndarrays, or TensorHandles. For reference, "
                            f"the tensor object was {value} which was passed to the feed with key {self.tensor}.")
        if self.check_int and type(value) is int and not _fits_integer(value, self.np_dtype):
            raise TypeError(f"Type of feed value {value} with type {type(value)} is not compatible with Tensor type "
                            f"{self.np_dtype}. Try explicitly setting the type of the feed tensor to a larger type "
                            "(e.g. int64).")
        array = np.asarray(value, dtype=self.np_dtype, order="C")
        if self.is_string:
            array = _as_bytes_array(array)
        return self._checked_shape(array)

    def fetched(self, value, array: np.ndarray) -> np.ndarray:
        """What fetching this fed tensor returns: the fed value as an array (TF: np.asarray of it
        with the tensor's numpy dtype; strings keep their Python type, 0-d stays an array)."""
        return np.asarray(value, dtype=object) if self.is_string else array

    def _checked_shape(self, array: np.ndarray) -> np.ndarray:
        shape = array.shape
        if self.rank is not None and (len(shape) != self.rank or
                                      (self.known and any(shape[i] != d for i, d in self.known))):
            raise ValueError(f"Cannot feed value of shape {shape!r} for Tensor {self.tensor.name!r}, which has "
                             f"shape {str(self.tensor.shape)!r}")
        return array


def _fits_integer(value: int, np_dtype) -> bool:
    """Whether a Python int converts to ``np_dtype`` unchanged (numpy 2 raises for one out of range)."""
    try:
        return np.asarray(value, dtype=np_dtype) == value
    except OverflowError:
        return False


class _RunPlan:
    """Everything about a run that depends only on its fetch structure and feed keys."""

    def __init__(self, session, fetches, feed_dict: dict):
        graph = session._graph
        self.fetch_plan = FetchPlan(graph, fetches)
        self.single_tensor = self.fetch_plan.structure == ("tensor", 0)
        self.feeders = [_Feeder(key, _feed_tensor(graph, key)) for key in feed_dict]
        self.fed = [f.tensor for f in self.feeders]
        # [(IsVariableInitialized op, variable name)]: the session answers them (see _run_native).
        self.initialized_checks = _initialized_checks(self.fetch_plan.tensors, self.fetch_plan.ops, self.fed)
        feed_position = {t: i for i, t in reversed(list(enumerate(self.fed)))}
        # A fetched tensor that is fed is answered from the feed, as in TF: nothing computes it.
        self.fed_fetches = [(i, feed_position[t]) for i, t in enumerate(self.fetch_plan.tensors) if t in feed_position]
        self.computed_positions = [i for i, t in enumerate(self.fetch_plan.tensors) if t not in feed_position]
        self.computed = [self.fetch_plan.tensors[i] for i in self.computed_positions]
        tensors, ops = self.computed, self.fetch_plan.ops
        self.nothing_to_do = not tensors and not ops
        self.fast = None  # a FastRun, after the first run (tfc/runtime/fast_run.py)
        self.fast_considered = False
        if session._remote is not None:  # a grpc:// session: the master plans and runs the step
            self.host, self.native_feed_positions, self.native_feeds, self.steps = None, [], [], {}
            return
        self.forced_host: frozenset = frozenset()
        self.plan_host()

    def plan_host(self) -> None:
        """How the step splits into host ops and compiled programs (again when ops are
        forced to the host: see ``runs_on_host``)."""
        tensors, ops = self.computed, self.fetch_plan.ops
        self.host = plan_step(tensors, ops, self.fed, self.forced_host) if not self.nothing_to_do else None
        native_inputs = self.fed + (list(self.host.early_outputs) if self.host else [])
        if self.host is not None and (self.host.native_fetches or self.host.native_targets):
            used = set(_used_feeds(self.host.native_fetches, self.host.native_targets, dict.fromkeys(native_inputs)))
        else:
            used = set()
        self.native_feed_positions = [i for i, t in enumerate(native_inputs) if t in used]
        self.native_feeds = [native_inputs[i] for i in self.native_feed_positions]
        self.steps: dict = {}  # which unknown dims are 1 -> CompiledStep


def _feed_tensor(graph, key):
    try:
        tensor = graph.as_graph_element(key, allow_tensor=True, allow_operation=False)
    except (TypeError, ValueError, KeyError) as e:
        text = e.args[0] if isinstance(e, KeyError) and e.args else e
        raise TypeError(f"Cannot interpret feed_dict key as Tensor: {text}") from None
    if not isinstance(tensor, Tensor):
        raise TypeError(f"Cannot interpret feed_dict key as Tensor: {key!r}")
    return tensor


def _structure_key(fetches):
    """A hashable key for a fetch structure (None when it has no cheap one)."""
    kind = type(fetches)
    if kind is Tensor or kind is str or isinstance(fetches, Operation) or hasattr(fetches, "_as_graph_element"):
        return fetches
    if kind is list or kind is tuple:
        items = tuple(_structure_key(f) for f in fetches)
        return None if None in items else (kind, items)
    if kind is dict:
        items = tuple((k, _structure_key(v)) for k, v in fetches.items())
        return None if any(v is None for _, v in items) else (kind, items)
    if kind is SparseTensor:
        return (kind, fetches.indices, fetches.values, fetches.dense_shape)
    return None


class VariableStore:
    """The session's variable buffers by variable op name; None until initialised. Values a
    GPU step left newer in device memory are copied back when read (``SyncedValues``)."""

    def __init__(self):
        from .cuda.variables import SyncedValues

        self.values: dict = SyncedValues()

    def is_initialized(self, name: str) -> bool:
        return self.values.get(name) is not None


class BaseSession:
    _remote = None  # a grpc:// session's client (tfc/distributed/client.py)

    def __init__(self, target: str = "", graph=None, config=None):
        if graph is None:
            graph = get_default_graph()
        self._graph = graph
        self._target = target.decode() if isinstance(target, bytes) else (target or "")
        self._config = config
        self._precision = precision_of_config(config)  # "bf16": dot/conv operands rounded (tfc/codegen/bf16.py)
        self._closed = False
        self._variables = VariableStore()
        self._rng_states: dict = {}
        self._rng_seeds: dict = {}
        self._cache: dict = {}
        self._run_plans: dict = {}
        self._partial_runs: dict = {}  # handle -> PartialRun
        self._last_key_by_fetches: dict = {}
        self._logged_ops: set = set()
        self._lock = threading.RLock()
        # compiles: steps built (compiled, or loaded from the persistent step cache: step_cache_hits)
        self.stats = {"runs": 0, "compiles": 0, "cache_hits": 0, "step_cache_hits": 0}
        if self._target.startswith("grpc://"):
            from tfc.distributed.client import RemoteSession

            self._remote = RemoteSession(self._target, graph, config)
        elif self._target and not self._target.startswith("local"):
            raise errors.UnimplementedError(None, None, f"Session target '{self._target}': tfc runs sessions in "
                                                        "process ('') or on a server ('grpc://host:port')")
        self._default_session_context = None
        self._default_graph_context = None

    # -- properties -------------------------------------------------------------------------
    @property
    def graph(self):
        return self._graph

    @property
    def graph_def(self):
        return self._graph.as_graph_def()

    @property
    def sess_str(self) -> str:
        return self._target

    def list_devices(self) -> list:
        if self._remote is not None:
            return self._remote.list_devices()
        from .cuda.devices import gpu_devices

        return [_DeviceAttributes(full_device_name(""), "CPU")] + [
            _DeviceAttributes(_gpu_name(gpu.index), "GPU", gpu.memory_bytes) for gpu in gpu_devices()]

    @staticmethod
    def reset(target, containers=None, config=None) -> None:
        """Clear the resource containers (variables) on the server at ``target`` ("grpc://...") and
        close its sessions (TF's Session.reset). In-process sessions own their variables: nothing to
        do for them."""
        target = target.decode() if isinstance(target, bytes) else (target or "")
        if target.startswith("grpc://"):
            from tfc.distributed.client import reset

            reset(target, containers, config)

    # -- lifetime ---------------------------------------------------------------------------
    def close(self) -> None:
        """Release what the session holds: compiled programs (also reachable from the run plans),
        variable buffers and random states."""
        self._closed = True
        if self._remote is not None:
            self._remote.close()
        self._cache.clear()
        self._run_plans.clear()
        self._last_key_by_fetches.clear()
        self._variables.values.clear()
        self._rng_states.clear()
        from .host import release_session_state

        release_session_state(self)  # host ops' per-session state (tf.data iterators and their threads)

    @contextlib.contextmanager
    def as_default(self):
        stack = default_session_stack()
        stack.append(self)
        try:
            yield self
        finally:
            _remove(stack, self)

    def __enter__(self):
        if self._default_graph_context is not None:
            raise RuntimeError("Session context managers are not re-entrant. Use `Session.as_default()` if you "
                               "want to enter a session multiple times.")
        self._default_graph_context = self._graph.as_default()
        self._default_session_context = self.as_default()
        self._default_graph_context.__enter__()
        return self._default_session_context.__enter__()

    def __exit__(self, exc_type, exc_value, traceback) -> None:
        self._default_session_context.__exit__(exc_type, exc_value, traceback)
        self._default_graph_context.__exit__(exc_type, exc_value, traceback)
        self._default_session_context = None
        self._default_graph_context = None
        self.close()

    def __del__(self):
        self._closed = True
        if self._remote is not None:
            self._remote.release()

    # -- run ----------------------------------------------------------------------------------
    def _cancelled(self):
        """Why a step of this session waiting in a host op (a dequeue) must stop, or None."""
        return "the session was closed" if self._closed else None

    def run(self, fetches, feed_dict=None, options=None, run_metadata=None):
        if self._closed:
            raise RuntimeError("Attempted to use a closed Session.")
        if feed_dict and type(feed_dict) is not dict and not isinstance(feed_dict, collections.abc.Mapping):
            raise TypeError("FlattenDictItems: 'dict' must be a dictionary or collection.Mapping type object, "
                            f"instead of '{type(feed_dict).__name__}'.")
        keys = tuple(feed_dict) if feed_dict else ()
        structure = _structure_key(fetches)
        # Plans are keyed by feed keys without SparseTensors (they were expanded), so a plan
        # found under these keys means there is nothing to expand.
        plan = self._run_plans.get((structure, keys)) if structure is not None else None
        if plan is None:
            feed_dict = expand_feeds(feed_dict)  # a SparseTensor key feeds its three tensors
            keys = tuple(feed_dict) if feed_dict else ()
            plan = self._run_plans.get((structure, keys)) if structure is not None else None
        if plan is None:
            plan = _RunPlan(self, fetches, feed_dict or {})
            if structure is not None:
                self._run_plans[(structure, keys)] = plan
        elif plan.fast is not None and options is None and run_metadata is None:
            result = plan.fast(self, feed_dict)
            if result is not MISS:
                return result
        arrays = [feeder.convert(value) for feeder, value in zip(plan.feeders, feed_dict.values())] \
            if feed_dict else []
        if self._remote is not None:
            self.stats["runs"] += 1
            values = self._remote.run(plan, arrays, options, run_metadata) if not plan.nothing_to_do else []
        else:
            if options is None or not getattr(options, "timeout_in_ms", 0):
                with self._lock:  # (a dequeue waiting in a step lets go of it: tfc/runtime/step_context.py)
                    values = self._execute(plan, arrays)
            else:
                with self._lock, step_context.step(step_context.deadline_from(options)):
                    values = self._execute(plan, arrays)
        if plan.fed_fetches:
            values = _with_fed_fetches(plan, values, list(feed_dict.values()), arrays)
        if not plan.fast_considered:  # later runs like this one take the fast path (fast_run.py)
            plan.fast_considered = True
            plan.fast = fast_run_for(self, plan)
        if plan.single_tensor:
            return values[0]
        return plan.fetch_plan.build(values)

    def partial_run_setup(self, fetches, feeds=None):
        """A handle for a step run in pieces by ``partial_run`` (tfc/runtime/partial_run.py)."""
        from .partial_run import PartialRun

        if self._closed:
            raise RuntimeError("Attempted to use a closed Session.")
        if self._remote is not None:  # the master keeps the partial run
            plan = FetchPlan(self._graph, fetches)
            feed_names = [_feed_tensor(self._graph, key).name for key in (feeds or [])]
            return self._remote.partial_run_setup([t.name for t in plan.tensors], feed_names,
                                                  [op.name for op in plan.ops])
        run = PartialRun(self, fetches, feeds)
        self._partial_runs[run.handle] = run
        return run.handle

    def partial_run(self, handle, fetches, feed_dict=None):
        """Feed some of the setup's feeds and fetch some of its fetches; each op of the step
        runs at most once over the calls."""
        if self._closed:
            raise RuntimeError("Attempted to use a closed Session.")
        if self._remote is not None:
            plan = _RunPlan(self, fetches, feed_dict or {})
            if plan.fetch_plan.ops:
                raise RuntimeError("partial_run() requires empty `target_list`. Received: target_list="
                                   f"{plan.fetch_plan.ops} (non-empty)")
            arrays = [feeder.convert(value) for feeder, value in zip(plan.feeders, (feed_dict or {}).values())]
            values = self._remote.run(plan, arrays, partial_run_handle=handle)
            if plan.fed_fetches:
                values = _with_fed_fetches(plan, values, list(feed_dict.values()), arrays)
            return values[0] if plan.single_tensor else plan.fetch_plan.build(values)
        run = self._partial_runs.get(handle)
        if run is None:
            raise errors.InvalidArgumentError(None, None, "Must run 'setup' before performing partial runs!")
        try:
            return run.run(fetches, feed_dict)
        finally:
            if run.done:
                self._partial_runs.pop(handle, None)

    def make_callable(self, fetches, feed_list=None, accept_options=False):
        feed_list = list(feed_list or [])

        def call(*args, **kwargs):
            if len(args) != len(feed_list):
                raise TypeError(f"Expected {len(feed_list)} feed values, got {len(args)}")
            return self.run(fetches, dict(zip(feed_list, args)))

        return call

    def _execute(self, plan: "_RunPlan", arrays: list) -> list:
        self.stats["runs"] += 1
        if plan.nothing_to_do:
            return []
        if plan.host.middle:
            return self._execute_staged(plan, arrays)
        try:
            return self._execute_planned(plan, arrays)
        except UnsupportedOpsError as e:
            fallback = {op for op, _ in e.failures if getattr(lookup_op_type(op.type), "host_fallback", False)
                        and op._get_control_flow_context() is None}
            if not fallback or len(fallback) != len(e.failures) or fallback <= plan.forced_host:
                raise
            plan.forced_host = plan.forced_host | fallback  # what the compiler refused runs on the host
            plan.plan_host()
            self.stats["runs"] -= 1
            ran = getattr(e, "host_values", None)
            if ran:  # host ops already ran (one may have consumed input): hand their results on
                results = self.run(list(plan.computed) + list(plan.fetch_plan.ops), feed_dict=ran)
                return [to_fetch_value(v) for v in results[:len(plan.computed)]]
            return self._execute(plan, arrays)

    def _execute_planned(self, plan: "_RunPlan", arrays: list) -> list:
        if plan.host.trivial:
            return [to_fetch_value(v) for v in self._run_native(plan, arrays)]
        values = dict(zip(plan.fed, arrays))
        run_host_ops(plan.host.early, values, self)
        native_arrays = list(arrays)
        for t in plan.host.early_outputs:
            native_arrays.append(np.asarray(values[t], dtype=t.dtype.base_dtype.as_numpy_dtype, order="C"))
        if plan.host.native_fetches or plan.host.native_targets:
            try:
                outputs = self._run_native(plan, native_arrays)
            except UnsupportedOpsError as e:
                e.host_values = values if plan.host.early else None
                raise
            values.update(zip(plan.host.native_fetches, outputs))
        run_host_ops(plan.host.late, values, self)
        return [to_fetch_value(_host_value(t, values)) for t in plan.computed]

    def _execute_staged(self, plan: "_RunPlan", arrays: list) -> list:
        """A step whose compiled ops need results of host ops (``HostPlan.middle``: a
        py_func, tf.where's indices, tf.unique...) runs in stages, each a step of its own:
        for each such host op in graph order, one step computes every tensor that flows
        from what can run now into what must wait for it (its inputs among them), then
        the host op runs; a last step computes the fetches and targets with all of those
        fed. Stateful ops (random, assignments, py_funcs) and what depends on them run
        once: their values are fed to the later stages. Stateless ones are computed again
        where a later stage needs them, so shapes stay known to the compiler (a fed
        ``tf.shape`` would be a value known only at run time)."""
        from tfc.passes.lower import prune

        from .host import HostOpError

        outer = getattr(_STAGING, "done", None) or set()
        again = [op for op in plan.host.middle if op in outer]
        if again:  # only control edges lead to it: a later stage cannot be told it ran
            raise HostOpError(f"'{again[0].name}' ({again[0].type}) runs on the host and compiled ops depend on it "
                              "through control dependencies only: tfc cannot run it before them in a step of "
                              "stages (make them depend on one of its outputs, or run it in a step of its own)")
        values = dict(zip(plan.fed, arrays))
        tensors, targets = plan.computed, plan.fetch_plan.ops
        needed = prune(tensors, targets, plan.fed)
        stateful = _after_stateful(needed)
        done: set = set()  # ops an earlier stage ran for their effect (a host op's control inputs)
        for index, host_op in enumerate(plan.host.middle):
            waiting = _downstream(plan.host.middle[index:], needed)
            crossing = [t for op in needed if op not in waiting for t in op.outputs
                        if t not in values and _feedable(t) and (op in stateful or op in plan.host.middle)
                        and any(consumer in waiting for consumer in t.consumers())]
            # fetches that need no later host op are computed now (a loss fetched with a train op
            # that waits in a dequeue is the loss before the wait, as in TF)
            crossing += [t for t in tensors if t not in values and t not in crossing and t.op not in waiting
                         and _feedable(t)]
            for t in host_op.inputs:  # what it reads; a resource handle (a queue's) is made here again
                if t in values or t in crossing:
                    continue
                if _is_host_handle(t):
                    run_host_ops([t.op], values, self)
                else:
                    crossing.append(t)
            # what it waits for (the gradients a dequeue waits behind) runs first, once
            controls = [op for op in host_op.control_inputs if op not in done and op in needed]
            if crossing or controls:
                results = self.run(crossing + controls, feed_dict=_stage_feeds(values))
                values.update(zip(crossing, results[:len(crossing)]))
                done.update(controls)
            run_host_ops([host_op], values, self)
            done.add(host_op)
        _STAGING.done = outer | done
        try:
            results = self.run(list(tensors) + list(targets), feed_dict=_stage_feeds(values))
        finally:
            _STAGING.done = outer
        return [to_fetch_value(v) for v in results[:len(tensors)]]

    def _run_native(self, plan: "_RunPlan", arrays: list) -> list:
        if plan.native_feed_positions:
            used = [arrays[i] for i in plan.native_feed_positions]
            shape_key = tuple([tuple([d == 1 for d in a.shape]) for a in used])
        else:
            used, shape_key = [], ()
        answers = None
        if plan.initialized_checks:  # a step per combination of answers (they are its constants)
            answers = tuple(self._variables.is_initialized(name) for _, name in plan.initialized_checks)
            shape_key = (shape_key, answers)
        step = plan.steps.get(shape_key)
        if step is None:
            feeds = dict(zip(plan.native_feeds, used))
            step = self._compile_step(plan, feeds, answers)
            plan.steps[shape_key] = step
        else:
            self.stats["cache_hits"] += 1
        if step.target == "split":  # device stages (tfc/runtime/device_split.py)
            return step.run(self, used)
        return self._call_step(step, used)

    def _call_step(self, step: CompiledStep, used: list, device_args: Optional[dict] = None) -> list:
        """Run one compiled program on its feeds ``used`` and the session's refs; a GPU
        program's ``device_args`` (argument position -> device pointer) are read in place."""
        args = used + [self._ref_buffer(slot, step) for slot in step.refs] if step.refs else used
        with step.lock:
            if step.target == "cuda":
                self._bind_device_variables(step, args, len(step.feeds), device_args)
            try:
                outputs = step.executable.run(args)
            except ShapeBindingError as e:
                raise errors.InvalidArgumentError(None, None, str(e)) from None
        values = self._variables.values
        synced = getattr(values, "devices", None)  # GPUs holding copies (a worker's values have none)
        for position, name in step.written_variables:
            values[name] = args[position]
            if step.target == "cuda":
                values.written_on_device(step.ordinal, name, args[position])
            elif synced:
                values.written_on_host(name)
        return outputs

    def _bind_device_variables(self, step: CompiledStep, args: list, first_ref: int,
                               device_args: Optional[dict] = None) -> None:
        """Point the GPU program at the device copies of the step's variables on its GPU
        (uploading those whose host value is newer, or that another GPU wrote last): they
        stay in device memory between runs."""
        code = step.executable.code
        values = self._variables.values
        values.on(step.ordinal, code.device)
        code.device_args = {first_ref + i: values.pointer(step.ordinal, slot.name, args[first_ref + i])
                            for i, slot in enumerate(step.refs) if slot.kind == "variable"}
        if device_args:
            code.device_args.update(device_args)

    def _compile_step(self, plan: "_RunPlan", feeds: dict, answers: Optional[tuple] = None) -> CompiledStep:
        fetches, targets = plan.host.native_fetches, plan.host.native_targets
        key = self._key(fetches, targets, plan.native_feeds, feeds)
        initialized = None
        if answers is not None:
            key += (answers,)
            initialized = {op: answer for (op, _), answer in zip(plan.initialized_checks, answers)}
        step = self._cache.get(key)
        if step is None:
            step = self._compile(key, fetches, targets, plan.native_feeds, feeds, initialized, ran=_ran_before(plan))
            self._cache[key] = step
        return step

    def _key(self, fetch_tensors, target_ops, fed, feeds) -> tuple:
        feed_key = tuple((t, feeds[t].dtype.str, tuple(d == 1 for d in feeds[t].shape)) for t in fed)
        return (tuple(fetch_tensors), tuple(target_ops), feed_key, self._precision)

    def _ref_buffer(self, slot, step: CompiledStep) -> np.ndarray:
        if slot.kind == "rng":
            if slot.name not in self._rng_states:
                self._rng_states[slot.name] = np.zeros((), dtype=np.int64)
            return self._rng_states[slot.name]
        values = self._variables.values
        value = values.unsynced(slot.name) if step.target == "cuda" else values.get(slot.name)
        if value is None:
            if slot.name in step.read_refs:
                raise errors.FailedPreconditionError(
                    None, slot.op, f"Attempting to use uninitialized value {slot.name}")
            value = np.empty(tuple(slot.type.shape), dtype=slot.type.elem.np_dtype)
        return value

    # -- compilation -------------------------------------------------------------------------
    def _compile(self, key, fetch_tensors, target_ops, fed, feeds, initialized=None, ran=()) -> CompiledStep:
        """``initialized``: {IsVariableInitialized op: answer}, constants of this step (such a
        step is not kept in the persistent step cache)."""
        from tfc.codegen.jit import cache_dir
        from tfc.compiler import compile_module
        from tfc.passes.lower import FeedSpec, lower_graph

        self._log_recompile(key)
        step_key = None
        if cache_dir() and not initialized:
            from . import step_cache

            with step_cache.gc_paused():
                step_key, pruned = step_cache.step_key(fetch_tensors, target_ops, fed, feeds, self._rng_seed,
                                                       precision=self._precision)
                step = self._cached_step(step_key, key, pruned, fetch_tensors, target_ops, fed) \
                    if step_key is not None else None
            if step is not None:
                return step
        specs = [FeedSpec(t, t.dtype.base_dtype, feeds[t].shape) for t in fed]
        lowered = lower_graph(fetch_tensors, target_ops, specs, rng_seeds=self._rng_seed, initialized=initialized,
                              ran=ran)  # (a control dependency on a host op run before the program is met)
        target = self._check_placement(lowered.ops)
        if target == "split":  # ops on the CPU and on the GPU: device stages (tfc/runtime/device_split.py)
            from . import device_split

            started = time.perf_counter()
            step = device_split.build(key, lowered.ops, device_split.placement_of(self, lowered.ops), fetch_tensors,
                                      target_ops, fed, list(ran), initialized)
            step.timings = {"split": time.perf_counter() - started}
            logger.info("tfc: the step for [%s] runs in device stages:\n%s",
                        ", ".join(t.name for t in list(fetch_tensors) + list(target_ops)),
                        device_split.describe(step))
            return step
        read_refs, written_refs = _ref_accesses(lowered.function)
        if target == "cuda":
            from .cuda.devices import emulated

            if not emulated():
                from .cuda.executable import process_allocator

                process_allocator(getattr(self._config, "gpu_options", None))  # the first session's options
            step_key = None  # the persistent step cache keeps CPU programs
            result = compile_module(lowered.module, constraints=lowered.constraints, target="cuda",
                                    emulate=emulated(), precision=self._precision)
        else:
            result = compile_module(lowered.module, constraints=lowered.constraints, precision=self._precision)
        result.executable.op_resolver = self._graph._nodes_by_name.get
        self.stats["compiles"] += 1
        step = CompiledStep(key, result.executable, lowered.feeds, lowered.refs, lowered.fetches, read_refs,
                            written_refs, result, dict(result.timings), target=target)
        if step_key is not None:
            with step_cache.gc_paused():
                _store_step(step_key, step, target_ops)
        return step

    def _cached_step(self, step_key: str, key, pruned, fetch_tensors, target_ops, fed) -> Optional[CompiledStep]:
        """The step stored under ``step_key`` by an earlier compile (this process or another),
        or None: no entry, or one that does not fit (it is then compiled and rewritten)."""
        from . import step_cache

        started = time.perf_counter()
        entry = step_cache.load(step_key)
        if entry is None:
            return None
        if self._check_placement(pruned) != "cpu":  # what lowering would have checked
            return None  # a GPU step: compiled for the GPU, not kept in the step cache
        try:
            step = self._step_from_entry(key, entry, fetch_tensors, target_ops, fed)
        except Exception as e:  # noqa: BLE001 - an entry that cannot be rebuilt is compiled again
            logger.info("tfc: ignoring the cached step %s: %s: %s", step_key, type(e).__name__, e)
            return None
        if step is not None:
            step.timings = {"step_cache_load": time.perf_counter() - started}
            self.stats["compiles"] += 1
            self.stats["step_cache_hits"] += 1
        return step

    def _step_from_entry(self, key, entry: tuple, fetch_tensors, target_ops, fed) -> Optional[CompiledStep]:
        from tfc.codegen import jit
        from tfc.codegen.parallel import link_runtime
        from tfc.passes.lower import RefSlot, _tensor_hint, ir_elem

        from .executable import Executable

        description, blobs = entry
        mapping = description["step"]
        if (mapping["feeds"] != [t.name for t in fed] or mapping["fetches"] != [t.name for t in fetch_tensors]
                or mapping["targets"] != [op.name for op in target_ops]):
            return None
        nodes = self._graph._nodes_by_name
        refs = []
        for kind, name, elem, shape, op_name, seed in mapping["refs"]:
            op = nodes.get(op_name)
            seed = tuple(int(s) for s in seed)
            if op is None or kind not in ("variable", "rng") or (kind == "variable" and name != op_name):
                return None
            if kind == "rng" and tuple(self._rng_seed(op)) != seed:
                return None
            refs.append(RefSlot(kind, name, ir.TensorType(ir.ElemType(elem), tuple(int(d) for d in shape)), op, seed))
        objects = [blobs[name] for name in sorted((n for n in blobs if n.startswith("object.")),
                                                  key=lambda n: int(n.split(".")[1]))]
        link_runtime(objects)  # the symbols the objects link against
        code = jit.load_object(objects, description["entry"]) if objects else None
        if code is None:
            return None
        executable = Executable.from_description(description["executable"], code, nodes.get, blobs.get("fast_path"))
        arg_types = [(spec.name, spec.elem, spec.is_ref) for spec in executable.args]
        expected = [(_tensor_hint(t), ir_elem(t.dtype), False) for t in fed] + \
            [(slot.name, slot.type.elem, True) for slot in refs]
        if arg_types != expected or len(executable.outputs) != len(fetch_tensors):
            return None
        return CompiledStep(key, executable, list(fed), refs, list(fetch_tensors), set(mapping["read_refs"]),
                            set(mapping["written_refs"]), None)

    def _rng_seed(self, op) -> tuple:
        seed = op._attrs.get("seed", 0) or 0
        seed2 = op._attrs.get("seed2", 0) or 0
        if seed or seed2:
            return int(seed), int(seed2)
        if op.name not in self._rng_seeds:
            generator = np.random.default_rng()
            self._rng_seeds[op.name] = (int(generator.integers(1, 2**31)), int(generator.integers(1, 2**31)))
        return self._rng_seeds[op.name]

    def _log_recompile(self, key) -> None:
        fetches = key[0] + key[1]
        previous = self._last_key_by_fetches.get(fetches)
        self._last_key_by_fetches[fetches] = key
        names = ", ".join(getattr(f, "name", str(f)) for f in fetches)
        if previous is None:
            logger.info("tfc: compiling a step for [%s]", names)
            return
        changes = []
        old_feeds = {t: rest for t, *rest in previous[2]}
        for t, dtype, ones in key[2]:
            if t not in old_feeds:
                changes.append(f"new feed {t.name}")
            elif old_feeds[t] != [dtype, ones]:
                old_dtype, old_ones = old_feeds[t]
                if old_dtype != dtype:
                    changes.append(f"feed {t.name} dtype {old_dtype} -> {dtype}")
                elif len(old_ones) != len(ones):
                    changes.append(f"feed {t.name} rank {len(old_ones)} -> {len(ones)}")
                else:
                    changes.append(f"feed {t.name} size-1 dims {old_ones} -> {ones}")
        for t in old_feeds:
            if t not in {k[0] for k in key[2]}:
                changes.append(f"feed {t.name} dropped")
        logger.info("tfc: recompiling the step for [%s]: %s", names, "; ".join(changes) or "key changed")

    def _check_placement(self, ops) -> str:
        """Where the step runs: "cpu", "cuda" (one program on GPU 0) or "split" (device
        stages: tfc/runtime/device_split.py; a step wholly on another GPU is one stage).

        TF's rules (tfc/runtime/device_placement.py): an op on a device that does not exist
        is an error naming the devices there are, unless ``allow_soft_placement`` (then it
        runs on the CPU); ops without a device go to the GPU when the step has an op on it;
        ops pinned to the CPU, and ops with no GPU kernel, run on the CPU; the consumers of
        a variable's ref go where it is. ``log_device_placement`` prints each op's device."""
        from .cuda.devices import gpu_devices
        from .device_placement import full_name, place, requests_gpu
        from .device_split import step_target

        config = self._config
        soft = bool(getattr(config, "allow_soft_placement", False))
        log = bool(getattr(config, "log_device_placement", False))
        gpus = len(gpu_devices()) if any(requests_gpu(op) for op in ops) else 0
        placement = place(ops, gpus, soft)
        target = step_target(ops, placement)
        if log:
            for op, device in placement.items():
                if op not in self._logged_ops:
                    self._logged_ops.add(op)
                    print(f"{op.name}: ({op.type}): {full_name(device)}", file=sys.stderr)
        return target

    # -- introspection ---------------------------------------------------------------------
    def cache_stats(self) -> dict:
        return dict(self.stats, entries=len(self._cache))

    def compiled_steps(self) -> list:
        return list(self._cache.values())


def _downstream(roots: list, needed: list) -> set:
    """``roots`` and every op of ``needed`` (in topological order) that depends on one of
    them, through data or control edges."""
    reached = set(roots)
    for op in needed:
        if op not in reached and (any(t.op in reached for t in op.inputs)
                                  or any(c in reached for c in op.control_inputs)):
            reached.add(op)
    return reached


def _after_stateful(needed: list) -> set:
    """The ops of ``needed`` (topological) that are stateful or depend on one."""
    from tfc.frontend.registry import lookup_op_type

    reached = set()
    for op in needed:
        if getattr(lookup_op_type(op.type), "stateful", False) or any(t.op in reached for t in op.inputs):
            reached.add(op)
    return reached


def _feedable(tensor) -> bool:
    """A value one stage can hand the next by feeding it (not a variable's ref or a
    resource handle, whose consumers need the variable itself; not a constant)."""
    dtype = tensor.dtype
    return not dtype.is_ref_dtype and dtype.base_dtype != dtypes.resource and tensor.op.type != "Const"


_STAGING = threading.local()  # .done: the host ops the stages of the thread's staged steps ran


def _is_host_handle(tensor) -> bool:
    """A resource handle made by a host op of its own (a queue's, an accumulator's): a stage
    makes it again rather than receiving it (it names the resource, which the session keeps)."""
    from .host import runs_on_host

    return tensor.dtype.base_dtype == dtypes.resource and not tensor.op.inputs and runs_on_host(tensor.op)


def _stage_feeds(values: dict) -> dict:
    """What a stage of a staged step is fed: the values so far, but resource handles (a
    later stage makes them again) and variables' refs (their consumers need the variable)."""
    return {t: v for t, v in values.items() if t.dtype.base_dtype != dtypes.resource and not t.dtype.is_ref_dtype}


def _ran_before(plan: "_RunPlan") -> list:
    """The ops whose effects precede the program: the early host ops, and ops whose outputs
    are all fed (a later stage of a staged step: a control dependency on one is met)."""
    fed = set(plan.fed)
    return list(plan.host.early) + [op for op in {t.op: None for t in plan.fed}
                                    if op.outputs and all(t in fed for t in op.outputs)]


def _with_fed_fetches(plan: "_RunPlan", computed: list, fed_values: list, arrays: list) -> list:
    """The values of every fetched tensor: computed ones, and fed ones from their feeds."""
    out = [None] * len(plan.fetch_plan.tensors)
    for position, value in zip(plan.computed_positions, computed):
        out[position] = value
    for position, feed in plan.fed_fetches:
        out[position] = plan.feeders[feed].fetched(fed_values[feed], arrays[feed])
    return out


def _initialized_checks(fetch_tensors, target_ops, fed) -> list:
    """[(IsVariableInitialized op the run needs, the name of its variable)]."""
    from tfc.passes.lower import prune

    if not fetch_tensors and not target_ops:
        return []
    checks = []
    for op in prune(fetch_tensors, target_ops, fed):
        if op.type == "IsVariableInitialized":
            source = op.inputs[0].op
            while source.type in ("Identity", "RefIdentity") and source.inputs:
                source = source.inputs[0].op
            checks.append((op, source.name))
    return checks


def _as_bytes_array(array: np.ndarray) -> np.ndarray:
    """String feeds hold bytes, as TensorFlow returns them."""
    out = np.empty(array.shape, dtype=object)
    for index, item in np.ndenumerate(array):
        out[index] = item.encode() if isinstance(item, str) else bytes(item)
    return out


def _used_feeds(fetch_tensors, target_ops, feeds: dict) -> list:
    """The fed tensors the compiled program reads (others do not shape its key)."""
    from tfc.passes.lower import prune

    if not feeds:
        return []
    used = {t for t in fetch_tensors if t in feeds}
    for op in prune(fetch_tensors, target_ops, list(feeds)):
        used.update(t for t in op.inputs if t in feeds)
    return [t for t in feeds if t in used]


def _host_value(tensor, values: dict):
    if tensor not in values and tensor.op.type == "Const":
        from tfc.frontend.tensor_util import const_op_value

        return const_op_value(tensor.op)
    return values[tensor]


def _store_step(step_key: str, step: CompiledStep, target_ops) -> None:
    """Keep a compiled step in the persistent step cache (tfc/runtime/step_cache.py)."""
    from . import step_cache

    if any(slot.kind == "rng" and not (slot.op._attrs.get("seed") or slot.op._attrs.get("seed2"))
           for slot in step.refs):
        return  # the session drew this random op's seeds: no other session would hit
    objects = step_cache.objects_of(step.executable.code)
    if objects is None:
        return
    mapping = {"feeds": [t.name for t in step.feeds], "fetches": [t.name for t in step.fetches],
               "targets": [op.name for op in target_ops],
               "refs": [[slot.kind, slot.name, slot.type.elem.value, [int(d) for d in slot.type.shape], slot.op.name,
                         [int(s) for s in slot.seed]] for slot in step.refs],
               "read_refs": sorted(step.read_refs), "written_refs": sorted(step.written_refs)}
    step_cache.store(step_key, {"entry": "tfc_main", "executable": step.executable.describe(), "step": mapping},
                     {**{f"object.{i}": obj for i, obj in enumerate(objects)},
                      "fast_path": step.executable.fast_path_code()})


def _ref_accesses(function: ir.Function) -> tuple:
    """(refs whose old value is read, refs that are written), by argument name."""
    read, written = set(), set()
    first_access: dict = {}
    for op in function.body.ops:
        if op.name in ("read", "assign", "rng") and op.operands and isinstance(op.operands[0].type, ir.RefType):
            name = op.operands[0].name_hint
            first_access.setdefault(name, op.name)
            if op.name in ("assign", "rng"):
                written.add(name)
    for name, first in first_access.items():
        if first != "assign":
            read.add(name)
    return read, written


def _remove(stack: list, item) -> None:
    if stack and stack[-1] is item:
        stack.pop()
    elif item in stack:
        stack.remove(item)


def _gpu_name(index: int) -> str:
    return f"/job:localhost/replica:0/task:0/device:GPU:{index}"


@dataclass
class _DeviceAttributes:
    name: str
    device_type: str
    memory_limit_bytes: int = 268435456
    incarnation: int = 0


class Session(BaseSession):
    """tf.Session: ``with tf.Session() as sess: sess.run(...)``."""


class InteractiveSession(BaseSession):
    """A session that installs itself (and its graph) as the default until closed."""

    def __init__(self, target: str = "", graph=None, config=None):
        super().__init__(target, graph, config)
        self._interactive_session = self.as_default()
        self._interactive_session.__enter__()
        self._interactive_graph = self._graph.as_default()
        self._interactive_graph.__enter__()

    def close(self) -> None:
        super().close()
        if self._interactive_graph is not None:
            self._interactive_graph.__exit__(None, None, None)
            self._interactive_graph = None
        if self._interactive_session is not None:
            self._interactive_session.__exit__(None, None, None)
            self._interactive_session = None

    _interactive_graph = None
    _interactive_session = None

