"""The graph fuzzer's programs: a list of catalogue nodes (:mod:`tfc.testing.fuzz_ops`)
and the fetches, printed as the TF1 source that builds the graph, with the feeds drawn
by :func:`rand`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np

from .fuzz_ops import Invalid, Node, code, infer, rand_call

MAX_ELEMENTS = 512  # per value: keeps compile and evaluation fast


def rand(seed, shape, dtype, special=False):
    """Feed and constant values: floats in [-2, 2] with 3 decimals (ties for max and
    argmax happen), ints in [-4, 4]; ``special`` puts NaN, +-inf and 0.0 in about 10%."""
    rng = np.random.default_rng(seed)
    if dtype == "int32":
        return rng.integers(-4, 5, shape).astype(np.int32)
    values = np.array(np.round(rng.uniform(-2.0, 2.0, shape), 3))
    if special:
        mask = rng.random(shape) < 0.1
        values[mask] = rng.choice([np.nan, np.inf, -np.inf, 0.0], int(mask.sum()))
    return np.asarray(values, dtype=np.float32)


# =====================================================================================
# Programs
# =====================================================================================
@dataclass(frozen=True)
class Program:
    nodes: tuple
    fetches: tuple
    seed: Optional[int] = None

    def types(self) -> list:
        """Every node's VType (raises Invalid)."""
        types: list = []
        for i, node in enumerate(self.nodes):
            if any(j >= i for j in node.inputs):
                raise Invalid("input after use")
            types.append(infer(node, [types[j] for j in node.inputs]))
        return types

    def valid(self) -> bool:
        """The program (and its second run, if it has one) is well typed and small."""
        programs = [self, self.second_run()] if self.has_second_run() else [self]
        for program in programs:
            try:
                types = program.types()
            except Invalid:
                return False
            if any(t.size > MAX_ELEMENTS for t in types):
                return False
        return True

    def has_second_run(self) -> bool:
        return any("rerun" in self.nodes[i].params for i in self.placeholders())

    def second_run(self) -> "Program":
        """The program as fed on its second run: placeholders at their ``rerun`` shapes."""
        nodes = tuple(n.with_params(shape=n.params["rerun"]) if "rerun" in n.params else n for n in self.nodes)
        return Program(nodes, self.fetches, self.seed)

    def without_second_run(self) -> "Program":
        nodes = tuple(Node(n.kind, n.inputs, {k: v for k, v in n.params.items() if k != "rerun"})
                      for n in self.nodes)
        return Program(nodes, self.fetches, self.seed)

    def live(self) -> "Program":
        """The nodes the fetches need, renumbered in order."""
        needed = set()
        stack = list(self.fetches)
        while stack:
            i = stack.pop()
            if i not in needed:
                needed.add(i)
                stack.extend(self.nodes[i].inputs)
        order = sorted(needed)
        index = {old: new for new, old in enumerate(order)}
        nodes = tuple(self.nodes[i].with_inputs(index[j] for j in self.nodes[i].inputs) for i in order)
        fetches = tuple(dict.fromkeys(index[f] for f in self.fetches))
        return Program(nodes, fetches, self.seed)

    def leaves(self) -> list:
        return [i for i, n in enumerate(self.nodes) if n.kind in ("placeholder", "constant")]

    def placeholders(self) -> list:
        return [i for i, n in enumerate(self.nodes) if n.kind == "placeholder"]


def source(program: Program) -> str:
    """The TF1 statements that build ``program``'s graph (``v0 = ...``)."""
    lines = []
    for i, node in enumerate(program.nodes):
        lines.append(f"v{i} = {code(node, [f'v{j}' for j in node.inputs])}")
    return "\n".join(lines) + "\n"


def feeds_source(program: Program, name: str = "feeds") -> str:
    items = [f"v{i}: {rand_call(program.nodes[i].params)}" for i in program.placeholders()]
    return name + " = {" + ", ".join(items) + "}\n"


def fetches_source(program: Program) -> str:
    return "fetches = [" + ", ".join(f"v{i}" for i in program.fetches) + "]\n"
