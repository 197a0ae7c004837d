"""The pass manager: runs a pipeline of passes over a module, verifies between passes (or
once at the end), records time and op counts per pass, and calls a dump hook after each
pass.

A pipeline is a list of :class:`Pass` objects and :class:`FixedPoint` groups (passes run
in order repeatedly until none changes the module, capped). ``PIPELINES`` names the
pipelines the compiler and ``tfc dump-ir`` use::

    report = PassManager("simplify", dump=lambda stage, m: print(stage, m)).run(module)
    print(report.table())

Stage names (what the dump hook and the report see) are the pass names; a pass inside a
fixed-point group gets its iteration as a suffix: ``cse.2`` is CSE's run in the group's
second iteration.

Verification (``verify=``): ``"each"`` (or True, the default of this class) checks the
input and the module after every pass that changed it, naming the pass that broke it;
``"end"`` checks once, after the last pass (what the compiler does: verification is
linear but not free); False/"none" never. :func:`default_verify` is the compiler's
choice: ``"end"``, or ``"each"`` when the environment sets ``TFC_VERIFY_EACH=1`` (the
tests do; ``tfc dump-ir --verify-each`` does).

Work counting (``count_work=True``): each record's ``work`` is the number of Python
lines the pass executed inside the tfc package (a deterministic operation count, no
clock): tests compare it across input sizes to show that passes are linear.
"""
from __future__ import annotations

import contextlib
import gc
import os
import sys
import time
from dataclasses import dataclass, field
from typing import Callable, Optional, Sequence, Union

from tfc.ir.core import Module
from tfc.ir.verifier import VerifyError, verify

DumpHook = Callable[[str, Module], None]


class Pass:
    """A module-to-module rewrite. Subclasses set ``name`` and implement ``run``.

    ``run(module)`` rewrites the module in place and returns True if it changed anything.
    A pass may leave remarks for reports in ``self.notes`` (reset at each run).
    """

    name: str = "pass"

    def __init__(self):
        self.notes: list[str] = []

    def run(self, module: Module) -> bool:
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r}>"


class FixedPoint:
    """A named group of passes run in order, again and again, until an iteration in which
    none of them changes the module, at most ``max_iterations`` times.

    After a run, ``iterations`` says how many iterations ran and ``converged`` whether
    the last one changed nothing (False when the cap stopped the group).
    """

    def __init__(self, name: str, passes: Sequence[Pass], max_iterations: int = 8):
        if max_iterations < 1:
            raise ValueError("FixedPoint needs max_iterations >= 1")
        for p in passes:
            if not isinstance(p, Pass):
                raise TypeError(f"FixedPoint {name!r} holds passes only, got {p!r}")
        self.name = name
        self.passes = list(passes)
        self.max_iterations = max_iterations
        self.iterations = 0
        self.converged = False

    def __repr__(self) -> str:
        inner = ", ".join(p.name for p in self.passes)
        return f"<FixedPoint {self.name!r} [{inner}] max {self.max_iterations}>"


PipelineItem = Union[Pass, FixedPoint]


# -- report ----------------------------------------------------------------------------------
@dataclass
class PassRecord:
    """One pass execution."""

    name: str  # the pass's name
    stage: str  # the stage name: the pass name, with ".<iteration>" inside a FixedPoint
    changed: bool
    seconds: float
    ops_before: int
    ops_after: int
    notes: list = field(default_factory=list)
    group: Optional[str] = None  # the FixedPoint it ran in
    iteration: Optional[int] = None
    work: Optional[int] = None  # lines executed in tfc code (PassManager(count_work=True))


@dataclass
class PassReport:
    """Every pass execution of one :meth:`PassManager.run`, in order."""

    records: list = field(default_factory=list)
    total_seconds: float = 0.0
    iterations: dict = field(default_factory=dict)  # FixedPoint name -> iterations run
    converged: dict = field(default_factory=dict)  # FixedPoint name -> stopped by itself

    def __iter__(self):
        return iter(self.records)

    def __len__(self) -> int:
        return len(self.records)

    def __getitem__(self, index):
        return self.records[index]

    @property
    def changed(self) -> bool:
        return any(r.changed for r in self.records)

    def work(self) -> dict:
        """{pass name: total work over its executions} (with ``count_work=True``)."""
        totals: dict = {}
        for r in self.records:
            totals[r.name] = totals.get(r.name, 0) + (r.work or 0)
        return totals

    def notes(self) -> list:
        """Every note of every pass, prefixed with its stage."""
        return [f"{r.stage}: {note}" for r in self.records for note in r.notes]

    def table(self) -> str:
        """An aligned text table: pass, time in ms, ops before -> after, changed."""
        header = ("pass", "time ms", "ops", "changed")
        rows = [(r.stage, f"{r.seconds * 1e3:.3f}", f"{r.ops_before} -> {r.ops_after}",
                 "yes" if r.changed else "no") for r in self.records]
        first = self.records[0].ops_before if self.records else 0
        last = self.records[-1].ops_after if self.records else 0
        rows.append(("total", f"{self.total_seconds * 1e3:.3f}", f"{first} -> {last}",
                     "yes" if self.changed else "no"))
        widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
        right = (False, True, False, False)  # times align right, text left

        def line(row) -> str:
            cells = [cell.rjust(w) if r else cell.ljust(w) for cell, w, r in zip(row, widths, right)]
            return "  ".join(cells).rstrip()

        rule = "  ".join("-" * w for w in widths)
        return "\n".join([line(header), rule, *map(line, rows[:-1]), rule, line(rows[-1])]) + "\n"

    def summary(self) -> str:
        """One line per pass execution: ``cse.1: 12 -> 9 ops (changed)``."""
        lines = []
        for r in self.records:
            state = "changed" if r.changed else "unchanged"
            lines.append(f"{r.stage}: {r.ops_before} -> {r.ops_after} ops ({state})")
        return "\n".join(lines) + ("\n" if lines else "")


class PassVerificationError(VerifyError):
    """The IR does not verify after a pass (or, with ``pass_name`` None, before any; with
    ``stage`` "end", after the whole pipeline when only the end was verified)."""

    def __init__(self, error: VerifyError, pass_name: Optional[str], stage: Optional[str]):
        self.error = error
        self.pass_name = pass_name
        self.stage = stage
        self.problem = error.problem
        self.op = error.op
        self.function = error.function
        self.loc = error.loc
        if pass_name is None and stage == "end":
            head = ("the module does not verify after the pass pipeline (verify each pass to find the one"
                    " that broke it: TFC_VERIFY_EACH=1 or tfc dump-ir --verify-each)")
        elif pass_name is None:
            head = "the input module does not verify (before any pass)"
        else:
            head = f"pass '{pass_name}' (stage {stage}) produced invalid IR"
        ValueError.__init__(self, f"{head}:\n{error}")


# -- the manager -----------------------------------------------------------------------------
class PassManager:
    """Runs a pipeline (a list of passes and FixedPoint groups, or a name in PIPELINES).

    ``verify``: True or "each": check the module before the first pass and after every
    pass that changed it; a failure raises :class:`PassVerificationError` naming the pass.
    "end": check once after the last pass. False or "none": never.
    ``dump(stage_name, module)``: called after every pass execution.
    ``count_work``: record each pass's work (see the module docstring).
    """

    def __init__(self, pipeline: Union[str, Sequence[PipelineItem]], verify: Union[bool, str] = True,
                 dump: Optional[DumpHook] = None, count_work: bool = False):
        if isinstance(pipeline, str):
            if pipeline not in PIPELINES:
                raise KeyError(f"unknown pipeline {pipeline!r} (known: {', '.join(sorted(PIPELINES))})")
            pipeline = PIPELINES[pipeline]()
        for item in pipeline:
            if not isinstance(item, (Pass, FixedPoint)):
                raise TypeError(f"a pipeline holds passes and FixedPoint groups, got {item!r}")
        self.pipeline = list(pipeline)
        self.verify_mode = _verify_mode(verify)
        self.verify = self.verify_mode == "each"  # verify between passes
        self.dump = dump
        self.count_work = count_work

    def run(self, module: Module) -> PassReport:
        report = PassReport()
        start = time.perf_counter()
        if self.verify:
            self._verify(module, None, None)
        for item in self.pipeline:
            if isinstance(item, FixedPoint):
                self._run_fixed_point(item, module, report)
            else:
                self._run_pass(item, item.name, module, report)
        if self.verify_mode == "end":
            self._verify(module, None, "end")
        report.total_seconds = time.perf_counter() - start
        return report

    def _run_fixed_point(self, group: FixedPoint, module: Module, report: PassReport) -> None:
        group.iterations = 0
        group.converged = False
        for iteration in range(1, group.max_iterations + 1):
            group.iterations = iteration
            changed = False
            for p in group.passes:
                record = self._run_pass(p, f"{p.name}.{iteration}", module, report)
                record.group, record.iteration = group.name, iteration
                changed |= record.changed
            if not changed:
                group.converged = True
                break
        report.iterations[group.name] = group.iterations
        report.converged[group.name] = group.converged

    def _run_pass(self, p: Pass, stage: str, module: Module, report: PassReport) -> PassRecord:
        p.notes = []
        # The previous pass's count, unless something (a dump hook?) may have changed the module.
        last = report.records[-1] if report.records and self.dump is None else None
        before = last.ops_after if last is not None else module.op_count()
        counter = WorkCounter() if self.count_work else None
        start = time.perf_counter()
        try:
            if counter is not None:
                with counter:
                    changed = bool(p.run(module))
            else:
                changed = bool(p.run(module))
        except Exception as exc:
            if hasattr(exc, "add_note"):  # Python 3.11+
                exc.add_note(f"(while running pass '{p.name}', stage {stage})")
            raise
        seconds = time.perf_counter() - start
        record = PassRecord(p.name, stage, changed, seconds, before, module.op_count(), list(p.notes))
        record.work = counter.lines if counter is not None else None
        report.records.append(record)
        if changed and self.verify:
            self._verify(module, p.name, stage)
        if self.dump is not None:
            self.dump(stage, module)
        return record

    @staticmethod
    def _verify(module: Module, pass_name: Optional[str], stage: Optional[str]) -> None:
        try:
            verify(module)
        except VerifyError as error:
            raise PassVerificationError(error, pass_name, stage) from error


def _verify_mode(verify: Union[bool, str, None]) -> str:
    if verify is True or verify == "each":
        return "each"
    if verify is False or verify is None or verify == "none":
        return "none"
    if verify == "end":
        return "end"
    raise ValueError(f"verify must be True, False, 'each', 'end' or 'none', got {verify!r}")


VERIFY_EACH_ENV = "TFC_VERIFY_EACH"


def default_verify() -> str:
    """The compiler's verification: "each" when ``TFC_VERIFY_EACH`` is 1/true/yes, else "end"."""
    flag = os.environ.get(VERIFY_EACH_ENV, "").strip().lower()
    return "each" if flag in ("1", "true", "yes", "on") else "end"


@contextlib.contextmanager
def gc_paused():
    """Python's cyclic garbage collector off while compiling (its state restored after).

    Lowering, the passes and code emission allocate objects in proportion to the program,
    and the IR is made of reference cycles (an op and its results, use lists); every
    automatic full collection meanwhile rescans the whole heap (the user's graph, the IR),
    which costs ~30-40% of the passes' time on a 100-layer model. Cyclic garbage made
    meanwhile (erased ops) is collected by the next automatic collection after it."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


class WorkCounter:
    """Counts the Python lines executed in the tfc package while active (a context manager).

    A deterministic measure of work for complexity tests: a pass that rescans a function
    per op executes ~n^2 lines on n ops, a linear one ~n. Tracing makes code ~10-50x
    slower; it is for tests and investigations, never on by default. Nested counters are
    not supported (the innermost one wins while it is active)."""

    def __init__(self, prefix: Optional[str] = None):
        import tfc

        self.prefix = prefix or os.path.dirname(os.path.abspath(tfc.__file__))
        self.lines = 0
        self._previous = None
        self._files: dict = {}

    def _counts(self, filename: str) -> bool:
        counted = self._files.get(filename)
        if counted is None:
            counted = self._files[filename] = filename.startswith(self.prefix)
        return counted

    def _local(self, frame, event, arg):
        if event == "line":
            self.lines += 1
        return self._local

    def _global(self, frame, event, arg):
        return self._local if self._counts(frame.f_code.co_filename) else None

    def __enter__(self) -> "WorkCounter":
        self._previous = sys.gettrace()
        sys.settrace(self._global)
        return self

    def __exit__(self, *exc) -> None:
        sys.settrace(self._previous)


def run_pipeline(module: Module, pipeline: Union[str, Sequence[PipelineItem]] = "default",
                 **options) -> PassReport:
    """Shorthand: ``PassManager(pipeline, **options).run(module)``."""
    return PassManager(pipeline, **options).run(module)


def folder_dump(folder: str) -> DumpHook:
    """A dump hook writing each stage to ``folder/NNNN.<stage>.tfcir`` (NNNN counts from 1)."""
    os.makedirs(folder, exist_ok=True)
    counter = [0]

    def dump(stage: str, module: Module) -> None:
        counter[0] += 1
        path = os.path.join(folder, f"{counter[0]:04d}.{stage}.tfcir")
        with open(path, "w", encoding="utf-8") as f:
            f.write(str(module))

    return dump


# -- pipelines -------------------------------------------------------------------------------
def simplify_pipeline(max_iterations: int = 8) -> list:
    """Canonicalize, constant folding, branch inlining, CSE, DCE and loop DCE to a fixed point
    (capped)."""
    from .canonicalize import Canonicalize
    from .const_fold import ConstFold
    from .cse import CSE
    from .dce import DCE
    from .inline_branches import InlineBranches
    from .loop_dce import LoopDCE

    return [FixedPoint("simplify", [Canonicalize(), ConstFold(), InlineBranches(), CSE(), DCE(), LoopDCE()],
                       max_iterations)]


def default_pipeline(precision: str = "f32") -> list:
    """What the compiler runs after lowering (DESIGN.md, "Passes").

    ``precision="bf16"`` appends the rounding of contraction operands to bfloat16
    (tfc/passes/bf16_precision.py) after simplification (which has folded transposes into
    the contractions, so the operands rounded are the ones the kernels read), constant
    folding of the roundings of constants (frozen weights) and DCE of what they replace."""
    pipeline = []
    pipeline += simplify_pipeline()
    if precision == "bf16":
        from .bf16_precision import Bf16Precision
        from .const_fold import ConstFold
        from .dce import DCE

        pipeline += [Bf16Precision(), ConstFold(), DCE()]
    elif precision != "f32":
        from tfc.codegen.bf16 import check_precision

        check_precision(precision)
    # fusion, simplify again and buffer assignment are appended here, one line each.
    return pipeline


PIPELINES: dict[str, Callable[[], list]] = {
    "none": lambda: [],
    "simplify": simplify_pipeline,
    "default": default_pipeline,
    "default_bf16": lambda: default_pipeline("bf16"),
}
