"""A GPU program's launch plan: what the host does, step by step, to run one program.

A CPU program's entry is LLVM code that calls its kernels; a GPU program's entry is this
plan, run by the host (tfc/runtime/cuda/executable.py): launches of the module's
kernels, device-to-device copies (variable reads and writes, loop state), and ``if`` /
``while`` steps whose predicate the host reads back from device memory (as TF's GPU
executor does for a loop's condition).

Buffers: ``("arg", i)`` (argument i), ``("out", j)`` (result j), ``("arena", offset)`` (in
the run's temp arena), ``("const", k)`` (the program's k-th constant, uploaded once when
the program is loaded) and ``("stage", n, size)`` (a loop's staging scratch). Sizes,
offsets and extents are dims (ints or symbolic expressions of the program's shape
symbols), evaluated on the host at run time.

A plan is plain data (``to_json`` / ``from_json``), so an ahead-of-time artifact carries it
beside its PTX and runs without the compiler.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional, Union

from tfc.ir.dims import Dim


@dataclass
class Launch:
    """Run kernel ``kernel`` (the PTX entry's name) over ``extent`` work items (None: one
    item, a serial kernel) on ``buffers`` (its pointer parameters, in order). ``site`` is
    the op's index (for errors); ``may_fail``: the kernel can report an error, so the host
    checks the status before anything that reads its results."""

    kernel: str
    buffers: list
    extent: Optional[Dim]
    site: int
    may_fail: bool = False
    what: str = ""  # the op it computes, for launch errors and profiles
    block: Optional[int] = None  # a cooperative kernel's threads per block (block.py): one item per block


@dataclass
class Copy:
    """destination <- source, ``size`` bytes (device to device)."""

    destination: tuple
    source: tuple
    size: Dim


@dataclass
class If:
    predicate: tuple  # the buffer of the i1 (one byte)
    then: list = field(default_factory=list)
    otherwise: list = field(default_factory=list)


@dataclass
class While:
    """``before`` runs once; then: ``condition`` steps, read ``predicate``, stop if false,
    else ``body`` steps, again."""

    condition: list = field(default_factory=list)
    predicate: Optional[tuple] = None
    body: list = field(default_factory=list)


Step = Union[Launch, Copy, If, While]


class PlanBuilder:
    """What the CPU emitters of reads, assigns and copies call on the program's entry
    (``main``: ``pointer``, ``bytes_of``, ``memcpy``, ``scope``), recording plan steps."""

    def __init__(self, program):
        self.program = program
        self.steps: list = []
        self._stages = 0

    def pointer(self, buffer: tuple) -> tuple:
        return self.program.plan_buffer(buffer)

    def bytes_of(self, t) -> Dim:
        from tfc import ir
        from tfc.passes.buffer_assign import value_bytes

        return value_bytes(t.tensor if isinstance(t, ir.RefType) else t)

    def memcpy(self, destination: tuple, source: tuple, size: Dim) -> None:
        """(``destination`` and ``source`` come from ``pointer``: plan buffers.)"""
        if destination != source:
            self.steps.append(Copy(destination, source, size))

    def stage(self, size: Dim) -> tuple:
        """A scratch buffer of ``size`` bytes for the run (a loop's staging copy)."""
        self._stages += 1
        return ("stage", self._stages, size)

    def record(self, steps: list):
        """Steps emitted while the returned context is open go to ``steps``."""
        return _Recording(self, steps)


class _Recording:
    def __init__(self, builder: PlanBuilder, steps: list):
        self.builder = builder
        self.steps = steps

    def __enter__(self):
        self.saved = self.builder.steps
        self.builder.steps = self.steps
        return self.steps

    def __exit__(self, *exc):
        self.builder.steps = self.saved


# -- plain data --------------------------------------------------------------------------------
def _buffer_json(buffer: tuple) -> list:
    from tfc.runtime.executable import _dim_json

    kind = buffer[0]
    if kind == "arena":
        return [kind, _dim_json(buffer[1])]
    if kind == "stage":
        return [kind, buffer[1], _dim_json(buffer[2])]
    return list(buffer)


def _buffer_from_json(data: list) -> tuple:
    from tfc.runtime.executable import dim_from_json

    kind = data[0]
    if kind == "arena":
        return (kind, dim_from_json(data[1]))
    if kind == "stage":
        return (kind, int(data[1]), dim_from_json(data[2]))
    if kind not in ("arg", "out", "const"):
        raise ValueError(f"unknown buffer kind {kind!r} in a launch plan")
    return (kind, int(data[1]))


def to_json(steps: list) -> list:
    from tfc.runtime.executable import _dim_json

    out = []
    for step in steps:
        if isinstance(step, Launch):
            out.append({"launch": step.kernel, "buffers": [_buffer_json(b) for b in step.buffers],
                        "extent": None if step.extent is None else _dim_json(step.extent), "site": step.site,
                        "may_fail": step.may_fail, "what": step.what, "block": step.block})
        elif isinstance(step, Copy):
            out.append({"copy": [_buffer_json(step.destination), _buffer_json(step.source)],
                        "size": _dim_json(step.size)})
        elif isinstance(step, If):
            out.append({"if": _buffer_json(step.predicate), "then": to_json(step.then),
                        "else": to_json(step.otherwise)})
        else:
            out.append({"while": _buffer_json(step.predicate), "condition": to_json(step.condition),
                        "body": to_json(step.body)})
    return out


def from_json(data: list) -> list:
    from tfc.runtime.executable import dim_from_json

    steps: list = []
    for item in data:
        if "launch" in item:
            extent = None if item["extent"] is None else dim_from_json(item["extent"])
            steps.append(Launch(item["launch"], [_buffer_from_json(b) for b in item["buffers"]], extent,
                                int(item["site"]), bool(item["may_fail"]), item.get("what", ""),
                                item.get("block")))
        elif "copy" in item:
            destination, source = item["copy"]
            steps.append(Copy(_buffer_from_json(destination), _buffer_from_json(source),
                              dim_from_json(item["size"])))
        elif "if" in item:
            steps.append(If(_buffer_from_json(item["if"]), from_json(item["then"]), from_json(item["else"])))
        else:
            steps.append(While(from_json(item["condition"]), _buffer_from_json(item["while"]),
                               from_json(item["body"])))
    return steps
