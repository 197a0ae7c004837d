"""Split an emitted program module into compile units: the entry, and one unit per kernel.

The entry unit (``tfc_main`` and the kernels' parallel tasks) is glue: buffer addresses and
one call per top-level op, linear in the program's size. It is compiled without LLVM's IR
pipeline and with fast instruction selection. Each kernel gets a unit of its own, at the
level its op asks for (``Program.kernel_levels``: -O3 for reductions, -O2 otherwise). Units compile separately (several at once, and kernels while the rest of the program
is still being emitted: objects.py, jit.UnitBuild), and each unit's object is cached by
the hash of its text, so a model whose layers share kernels, or a changed graph, compiles
only kernels not seen before.

Why the split is safe: kernels and the entry interact only through calls, and no function
body changes. What changes is linkage (a function the entry calls becomes external) and
names: every kernel function is renamed ``tfc.<hash>.<its name without the kN prefix>``,
the hash taken over its text with its own name blanked, consistently in every unit.
Equal kernels of different programs then have equal names and equal objects. A unit copies the constant globals it reads (read-only data) and declares what it calls.
Kernels call no other function of the module (only declared ones: intrinsics, the
runtime); a module whose kernels do, or touch a mutable global of the module, is not split.
"""
from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Optional

from llvmlite import ir as ll

_REFERENCE = re.compile(r'@"([^"]+)"|@([-\w.$]+)')
_METADATA_REFERENCE = re.compile(r"!(\d+)\b")
_KERNEL_PREFIX = re.compile(r"^k\d+\.")


@dataclass(frozen=True)
class Unit:
    name: str  # the entry's name, or the unit's first kernel's symbol
    text: str  # a complete LLVM module
    opt_level: int  # LLVM's -O2/-O3 pipeline then instruction selection (kernels), or 0: glue


def _references(text: str) -> set:
    return {quoted or bare for quoted, bare in _REFERENCE.findall(text)}


def _declaration(define_text: str) -> str:
    """``declare`` for a function defined by ``define_text`` (its first line, attributes dropped)."""
    header = define_text.split("\n", 1)[0]
    header = header[:header.rindex(")") + 1]
    header = re.sub(r"^define\s+(internal\s+|private\s+)?", "declare ", header)
    return header


def _rename(text: str, names: dict) -> str:
    def replace(match):
        name = match.group(1) or match.group(2)
        new = names.get(name)
        return f'@"{new}"' if new is not None else match.group(0)

    return _REFERENCE.sub(replace, text)


class Splitter:
    """Builds the units of one program's module: ``kernel_unit`` for each kernel as soon as
    it is complete (so it can compile while the rest is emitted), ``finish`` at the end:
    any kernel not handed out yet, then the entry unit (the entry, the tasks it passes to
    the thread pool, everything that is not a kernel). ``failed`` once a kernel calls a
    function of the module or touches a mutable global of it (the module then compiles
    whole)."""

    def __init__(self, module: ll.Module, entry_name: str, levels: Optional[dict] = None):
        self.module = module
        self.entry_name = entry_name
        self.levels = levels if levels is not None else {}  # kernel name -> LLVM level (default 3)
        self.renamed: dict = {}  # kernel's name in the module -> its unit's symbol
        self.failed = False

    def kernel_unit(self, fn: ll.Function) -> Optional[Unit]:
        """The unit of kernel ``fn`` (its body complete), or None once ``failed``."""
        if self.failed:
            return None
        text, metadata = self._own_metadata(str(fn))
        blank = _rename(text, {fn.name: "tfc.unit"})
        digest = hashlib.sha256(blank.encode()).hexdigest()[:20]
        symbol = f"tfc.{digest}.{_KERNEL_PREFIX.sub('', fn.name)}"
        self.renamed[fn.name] = symbol
        text = re.sub(r"^define\s+(internal|private)\s+", "define ", _rename(text, self.renamed), count=1)
        head = self._externals(_references(text) - {symbol})
        if head is None:
            self.failed = True
            return None
        return Unit(symbol, self._module_text(head, [text], metadata), self.levels.get(fn.name, 3))

    def _own_metadata(self, text: str) -> tuple:
        """``text`` with the metadata nodes it refers to (branch weights, loop hints)
        renumbered from !0 in order of first use, and those nodes' definitions: a kernel's
        text then does not depend on what else its module holds metadata for."""
        nodes = {node.name: node for node in self.module.metadata}
        order: dict = {}
        pending = _METADATA_REFERENCE.findall(text)
        while pending:
            name = pending.pop(0)
            if name in order or name not in nodes:
                continue
            order[name] = str(len(order))
            pending += [operand.name for operand in nodes[name].operands if isinstance(operand, ll.MDValue)]

        def renumber(piece: str) -> str:
            return _METADATA_REFERENCE.sub(lambda m: "!" + order.get(m.group(1), m.group(1)), piece)

        definitions = [renumber(str(nodes[name])) for name in order]
        return renumber(text), definitions

    def finish(self) -> Optional[list]:
        """The units not handed out yet: kernels never passed to ``kernel_unit`` (functions
        named kN.*, not tasks), then the entry unit; None once ``failed``."""
        late = [value for value in self.module.globals.values()
                if isinstance(value, ll.Function) and value.blocks and value.name not in self.renamed
                and _KERNEL_PREFIX.match(value.name) and not value.name.endswith(".task")]
        units = [self.kernel_unit(fn) for fn in late]
        entry = self._entry_unit()
        if self.failed or entry is None:
            return None
        return units + [entry]

    def _entry_unit(self) -> Optional[Unit]:
        """The entry and every function that is not a kernel."""
        pieces = []
        defined = set()
        for value in self.module.globals.values():
            if isinstance(value, ll.Function) and value.blocks and value.name not in self.renamed:
                pieces.append(_rename(str(value), self.renamed))
                defined.add(value.name)
        if self.entry_name not in defined:
            return None
        used = set()
        for piece in pieces:
            used |= _references(piece)
        head = []
        kernels = {symbol: name for name, symbol in self.renamed.items()}
        for name in sorted(used - defined):
            if name in kernels:
                head.append(_declaration(_rename(str(self.module.globals[kernels[name]]), self.renamed)))
            elif name in self.module.globals:
                head.append(str(self.module.globals[name]))
        return Unit(self.entry_name, self._module_text(head, pieces), 0)

    def _module_text(self, head: list, functions: list, metadata: Optional[list] = None) -> str:
        """A module: identified types, ``head``, ``functions``, and ``metadata`` (by default
        the module's, when the functions refer to any: branch weights, loop hints)."""
        types = [t.get_declaration() for t in self.module.get_identified_types().values()]
        if metadata is None:
            metadata = []
            if any("!" in text for text in functions):
                metadata = [f"!{name} = !{{ {', '.join(o.get_reference() for o in node.operands)} }}"
                            for name, node in self.module.namedmetadata.items()]
                metadata += [str(node) for node in self.module.metadata]
        return "\n".join(types + head + functions + metadata) + "\n"

    def _externals(self, names: set) -> Optional[list]:
        """What a kernel unit needs from outside: declarations, copies of constant globals."""
        head = []
        for name in sorted(names):
            value = self.module.globals.get(name)
            if name in self.renamed.values() or value is None:
                return None  # a kernel calling another kernel, or an unknown symbol
            if isinstance(value, ll.Function):
                if value.blocks:
                    return None
                head.append(str(value))
            elif isinstance(value, ll.GlobalVariable):
                defined = value.initializer is not None and value.linkage != "external"
                if defined and not value.global_constant:
                    return None  # a mutable global shared with the entry: keep one module
                head.append(str(value))
        return head


def split_program(module: ll.Module, entry_name: str, levels: Optional[dict] = None) -> Optional[list]:
    """The units of an emitted module (its kernels: functions named kN.*, not tasks; the
    entry last), or None when it cannot be split. ``levels``: as ``Splitter``'s."""
    units = Splitter(module, entry_name, levels).finish()
    if units is None:
        return None
    seen = set()
    distinct = []
    for unit in units:
        if unit.name not in seen:
            seen.add(unit.name)
            distinct.append(unit)
    return distinct
