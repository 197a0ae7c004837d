"""``tfc.compile(fetches, feeds=[...])``: compile part of a graph once, call it many times.

The result exposes the optimised IR (``.module``, ``.ir(stage)``), the pass report and
fusion report, and is callable: feeds positionally in the order given (or by placeholder
name as keywords), results in the structure of ``fetches``. ``.save(dir)`` writes an
ahead-of-time artifact that ``tfc.load(dir)`` runs the same way without the compiler.

Calling it is thread-safe: calls run in parallel (the executable gives each call its own
buffers), except that a program updating state (RNG counters, assigned variables) runs
one call at a time, so every call sees and leaves consistent state.
"""
from __future__ import annotations

import threading
import time
from typing import Optional

import numpy as np

from tfc import ir
from tfc.frontend.graph import Operation, Tensor, get_default_graph
from tfc.runtime.fetch import FetchPlan, to_fetch_value


class CompiledGraph:
    def __init__(self, plan, feeds, lowered, result, stages, variable_values, session):
        self._plan = plan
        self.feeds = list(feeds)
        self.lowered = lowered
        self.result = result
        self._stages = stages
        self._variable_values = variable_values
        self._session = session
        self._rng_states: dict = {}
        self._state_lock = threading.Lock() if _updates_state(result.module.main) else None

    # -- inspection -------------------------------------------------------------------------
    @property
    def module(self) -> ir.Module:
        return self.result.module

    @property
    def report(self):
        return self.result.report

    def stages(self) -> list:
        return [name for name, _ in self._stages]

    def ir(self, stage: str = "final") -> str:
        """IR text after a stage: 'lower', a pass name ('cse.2', 'fusion'...) or 'final'."""
        if stage == "final":
            return str(self.module)
        for name, text in self._stages:
            if name == stage:
                return text
        raise KeyError(f"no stage {stage!r}; stages: {', '.join(self.stages())}")

    def fusion_report(self) -> str:
        return self.result.fusion_report()

    @property
    def ptx(self) -> str:
        """The PTX module of a program compiled with ``target="cuda"``."""
        return self.result.ptx

    @property
    def target(self) -> str:
        return self.result.target

    @property
    def timings(self) -> dict:
        """Seconds per compile phase: lowering, passes, LLVM IR emission, LLVM optimisation,
        machine code... (``timing_table()`` prints them with each pass and kernel)."""
        return dict(self.result.timings)

    def timing_table(self) -> str:
        return self.result.timing_table()

    def profile(self, reset: bool = False) -> str:
        """Time per kernel over the calls so far (compiled with ``profile=True``), slowest
        first; ``reset`` zeroes the counters afterwards."""
        executable = self.result.executable
        if executable is None or not hasattr(executable, "_profile"):
            raise RuntimeError("compile with tfc.compile(..., profile=True) to profile")
        rows = executable.profile()
        total = sum(row[3] for row in rows) or 1.0
        lines = [f"{'total ms':>9} {'calls':>6} {'mean us':>9} {'share':>6}  kernel: what it computes"]
        for name, what, calls, seconds in rows:
            mean = seconds / calls * 1e6 if calls else 0.0
            lines.append(f"{seconds * 1e3:9.3f} {calls:6d} {mean:9.1f} {seconds / total:6.1%}  {name}: {what}")
        if reset:
            executable.reset_profile()
        return "\n".join(lines)

    # -- ahead of time ------------------------------------------------------------------------
    def save(self, directory: str, name: str = "model", target_cpu: Optional[str] = None,
             target_features: Optional[str] = None, target: str = "cpu", arch: Optional[str] = None) -> dict:
        """Write an ahead-of-time artifact (shared library, C header, weights, manifest) to
        ``directory``; ``tfc.load(directory)`` runs it without the compiler. Variables must be
        frozen (``freeze_variables=True``). ``target_cpu``: the host (default) or a portable
        baseline such as "x86-64-v2" / "x86-64-v3". ``target="cuda"``: a GPU artifact (PTX,
        cubin, launch plan, constants, manifest) for ``arch``. Returns the manifest."""
        from tfc.codegen.aot import build_artifact

        if target == "cuda":
            from tfc.codegen.gpu.aot import build_gpu_artifact

            return build_gpu_artifact(self, directory, name=name, arch=arch)

        return build_artifact(self, directory, name=name, target_cpu=target_cpu, target_features=target_features)

    # -- calling ------------------------------------------------------------------------------
    def __call__(self, *args, **kwargs):
        if self.result.executable is None:
            raise RuntimeError("this graph was compiled with native=False (IR only); it cannot run")
        values = self._feed_values(args, kwargs)
        if self._state_lock is None:
            refs = [self._ref_value(slot) for slot in self.lowered.refs]
            outputs = self.result.executable.run(values + refs)
        else:
            with self._state_lock:
                refs = [self._ref_value(slot) for slot in self.lowered.refs]
                outputs = self.result.executable.run(values + refs)
        return self._plan.build([to_fetch_value(o) for o in outputs])

    def _feed_values(self, args, kwargs) -> list:
        if len(args) > len(self.feeds):
            raise TypeError(f"expected at most {len(self.feeds)} feed values, got {len(args)}")
        values = list(args)
        for tensor in self.feeds[len(args):]:
            for key in (tensor.name, tensor.op.name):
                if key in kwargs:
                    values.append(kwargs.pop(key))
                    break
            else:
                raise TypeError(f"missing a value for feed '{tensor.op.name}'")
        if kwargs:
            raise TypeError(f"unknown feeds: {', '.join(kwargs)}")
        out = []
        for tensor, value in zip(self.feeds, values):
            array = np.asarray(value, dtype=tensor.dtype.base_dtype.as_numpy_dtype, order="C")
            if not tensor.shape.is_compatible_with(array.shape):
                raise ValueError(f"Cannot feed value of shape {array.shape!r} for Tensor {tensor.name!r}, which has "
                                 f"shape {str(tensor.shape)!r}")
            out.append(array)
        return out

    def _ref_value(self, slot) -> np.ndarray:
        if slot.kind == "rng":
            return self._rng_states.setdefault(slot.name, np.zeros((), dtype=np.int64))
        if self._session is not None:
            value = self._session._variables.values.get(slot.name)
            if value is not None:
                return value
        value = self._variable_values.get(slot.name)
        if value is None:
            from tfc.frontend.errors import FailedPreconditionError

            raise FailedPreconditionError(None, slot.op, f"Attempting to use uninitialized value {slot.name}")
        return value


def compile(fetches, feeds=(), graph=None, session=None, freeze_variables: bool = False, native: bool = True,
            profile: bool = False, target: str = "cpu", arch: Optional[str] = None, emulate: bool = False,
            precision: str = "f32"):
    """Compile what ``fetches`` need, with ``feeds`` (placeholders) as the arguments.

    ``native=False`` runs the pass pipeline only (IR inspection; the result is not callable).
    ``profile=True`` times every kernel call; ``.profile()`` tabulates where the time went.
    ``target="cuda"``: compile for an NVIDIA GPU of architecture ``arch`` ("sm_80",
    "sm_90"...; default: the device's, else sm_80); ``.ptx`` is the PTX module. Calls run on
    the GPU, or raise NotFoundError ("no CUDA device/driver was found...") without one;
    ``emulate=True`` runs the GPU program's thread grids on the host instead (tests).
    ``precision``: "f32" (default) or "bf16": the operands of every matmul and convolution
    (their gradients' too) are rounded to bfloat16 and the products accumulated in f32,
    everything else stays f32 (TF's oneDNN auto-mixed-precision numerics; tfc has no
    native bf16 kernels, so this changes accuracy, not speed: tfc/codegen/bf16.py).
    """
    from tfc.codegen.bf16 import check_precision
    from tfc.compiler import compile_module
    from tfc.passes.lower import FeedSpec, lower_graph

    check_precision(precision)

    graph = graph or _graph_of(fetches) or get_default_graph()
    plan = FetchPlan(graph, fetches)
    feeds = [graph.as_graph_element(f, allow_tensor=True, allow_operation=False) for f in feeds]
    specs = []
    for tensor in feeds:
        if tensor.shape.ndims is None:
            raise ValueError(f"feed {tensor.name} has unknown rank: give the placeholder a shape to compile it")
        specs.append(FeedSpec(tensor, tensor.dtype.base_dtype,
                              tuple(-1 if d is None else d for d in tensor.shape.as_list())))
    started = time.perf_counter()
    lowered = lower_graph(plan.tensors, plan.ops, specs)
    lowering_seconds = time.perf_counter() - started
    if freeze_variables:
        _freeze(lowered, session)
    stages = [("lower", str(lowered.module))]
    result = compile_module(lowered.module, dump=lambda name, module: stages.append((name, str(module))),
                            constraints=lowered.constraints, native=native, profile=profile, target=target,
                            arch=arch, emulate=emulate, precision=precision)
    result.timings = {"lowering": lowering_seconds, **result.timings}
    return CompiledGraph(plan, feeds, lowered, result, stages, {}, None if freeze_variables else session)


def _updates_state(function: ir.Function) -> bool:
    """Whether the program writes a ref argument (assigns a variable or advances an RNG)."""
    return any(op.name in ("assign", "rng") for op in function.walk())


def _graph_of(fetches) -> Optional[object]:
    items = fetches if isinstance(fetches, (list, tuple)) else [fetches]
    for item in items:
        graph = getattr(item, "graph", None)
        if graph is not None and isinstance(item, (Tensor, Operation)):
            return graph
    return None


def _freeze(lowered, session) -> None:
    """Replace variable reads by constants holding their current values in ``session``."""
    from tfc.frontend.errors import FailedPreconditionError

    if session is None:
        from tfc.frontend.graph import get_default_session

        session = get_default_session()
    function = lowered.function
    kept = []
    for slot, arg in zip(lowered.refs, function.args[len(lowered.feeds):]):
        if slot.kind != "variable":
            kept.append((slot, arg))
            continue
        value = None if session is None else session._variables.values.get(slot.name)
        if value is None:
            raise FailedPreconditionError(None, slot.op, f"Attempting to use uninitialized value {slot.name}"
                                                         " (freeze_variables needs a session holding its value)")
        _replace_ref_with_constant(function, arg, value, slot.name)
    lowered.refs = [slot for slot, _ in kept]


def _replace_ref_with_constant(function: ir.Function, arg: ir.Value, value: np.ndarray, name=None) -> None:
    body = function.body
    constant = ir.Operation("constant", [], [arg.type.tensor], {"value": np.array(value, copy=True)},
                            loc=ir.Location(name=name) if name else None)
    body.insert(0, constant)
    _replace_reads(arg, constant.result, arg.name_hint)
    body.args.remove(arg)
    for i, a in enumerate(body.args):
        a.index = i


def _replace_reads(ref: ir.Value, value: ir.Value, name) -> None:
    """Every read of ``ref`` becomes ``value``; an ``if``/``while`` passing ``ref`` into its
    regions gets ``value`` instead, and its region arguments become tensors whose reads
    are replaced the same way."""
    for user, index in list(ref.uses):
        if user.name == "read":
            user.result.replace_all_uses_with(value)
            user.parent.remove(user)
        elif user.name in ("assign", "rng") and index == 0:
            raise ValueError(f"cannot freeze variable {name}: the program assigns it")
        elif user.name in ("if", "while"):
            user.operands[index] = value
            position = index - 1 if user.name == "if" else index
            for region in user.regions:
                inner = region.args[position]
                inner.type = value.type
                _replace_reads(inner, inner, name)
        else:
            raise ValueError(f"cannot freeze variable {name}: '{user.name}' uses it")
