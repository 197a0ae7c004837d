"""A graph-level fuzzer in the spirit of NNSmith: random well-typed TF1 programs, run
through the whole compiler and checked against the evaluator.

``generate(seed)`` builds a :class:`Program` (a list of :class:`~tfc.testing.fuzz_ops.Node`
s, see :mod:`tfc.testing.fuzz_ops`) from a seeded numpy generator: elementwise math with
broadcasting, reductions, softmax / layer-norm patterns, slices, transposes, reshapes,
reverses, concat, pad, tile, gathers, matmul, conv2d and pooling, over float32 (mostly)
and int32, with static and symbolic (placeholder ``None``) dims. A program is also TF1
Python source: the text :func:`source` prints is exactly what :func:`run_program`
executes, so a failure's reproducer is the program itself.

``run_program`` builds the graph, runs the fetches with ``Session.run`` (lowering, the
whole pass pipeline, LLVM codegen) and compares with :func:`tfc.ir.evaluate` on the
*unoptimised* lowered IR. Floats agree within a tolerance that grows with how much the
evaluator's own result moves when the feeds are perturbed by 1e-5 (relative): a sum
with cancellation or a ``floor`` at a boundary cannot tell rounding from a bug, a wrong
row can. NaN and infinity positions must match where they are stable; integers are exact.

``shrink(program)`` delta-debugs a failure: keep one fetch, bypass ops, cut subgraphs
into placeholders, make dims static, shrink shapes, simplify functions, for as long as
the program fails the same way. :func:`reproducer` prints the result as a runnable
script.
"""
from __future__ import annotations

import contextlib
import inspect
import time
from dataclasses import dataclass, field
from typing import Callable, Iterator, Optional

import numpy as np

from tfc.passes.lower import UnsupportedOpsError

from .fuzz_ops import (BINARY, DYNAMIC, FLOAT, INT, REDUCE_FLOAT, REDUCE_INT, UNARY, Invalid, Node, VType, broadcast,
                       code, infer, rand_call)

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


# =====================================================================================
# Generation
# =====================================================================================
SIZES = (1, 2, 3, 4, 5, 6)
SIZE_WEIGHTS = (0.12, 0.22, 0.24, 0.2, 0.12, 0.1)
WIDE_SIZES = (7, 8, 9, 15, 16, 17, 31, 33)  # vector widths and their remainders, for a last dim


class Gen:
    """The program being generated: its nodes and types, and the random choices."""

    def __init__(self, rng: np.random.Generator):
        self.rng = rng
        self.nodes: list = []
        self.types: list = []

    # -- choices ----------------------------------------------------------------------------
    def chance(self, p: float) -> bool:
        return bool(self.rng.random() < p)

    def choice(self, options, weights=None):
        options = list(options)
        if weights is not None:
            weights = np.asarray(weights, dtype=float) / np.sum(weights)
        return options[int(self.rng.choice(len(options), p=weights))]

    def int(self, low: int, high: int) -> int:
        """An int in [low, high]."""
        return int(self.rng.integers(low, high + 1))

    def seed(self) -> int:
        return int(self.rng.integers(0, 10**6))

    def size(self) -> int:
        return int(self.choice(SIZES, SIZE_WEIGHTS))

    def shape(self, rank: int) -> tuple:
        """Small dims; the last one sometimes wide (vector loops and their remainders)."""
        shape = [self.size() for _ in range(rank)]
        if rank and self.chance(0.2):
            shape[-1] = int(self.choice(WIDE_SIZES))
        return tuple(shape)

    def static_mask(self, rank: int) -> tuple:
        return tuple(not self.chance(0.25) for _ in range(rank))

    # -- building ---------------------------------------------------------------------------
    def add(self, kind: str, inputs=(), **params) -> int:
        node = Node(kind, tuple(inputs), params)
        t = infer(node, [self.types[i] for i in inputs])
        if t.size > MAX_ELEMENTS:
            raise Invalid(f"{kind} makes {t.size} elements")
        self.nodes.append(node)
        self.types.append(t)
        return len(self.nodes) - 1

    def leaf(self, dtype: str, shape: tuple, static=None, constant: Optional[bool] = None) -> int:
        if constant is None:
            constant = self.chance(0.2)
        special = dtype == FLOAT and self.chance(0.06)
        if constant:
            return self.add("constant", dtype=dtype, shape=tuple(shape), seed=self.seed(), special=special)
        if static is None:
            static = self.static_mask(len(shape))
        return self.add("placeholder", dtype=dtype, shape=tuple(shape), static=tuple(static), seed=self.seed(),
                        special=special)

    def pick(self, ok: Callable[[VType], bool], fresh: float = 0.15) -> Optional[int]:
        """An existing node whose type satisfies ``ok`` (recent ones preferred), or None."""
        candidates = [i for i, t in enumerate(self.types) if ok(t)]
        if not candidates or self.chance(fresh):
            return None
        weights = [2.0 ** (k / 2) for k in range(len(candidates))]
        return self.choice(candidates, weights)

    def value(self, ok: Callable[[VType], bool], dtype: str, rank: int, fresh: float = 0.15) -> int:
        """An existing value satisfying ``ok``, or a new leaf of ``dtype`` (of ``rank`` if
        that can satisfy ``ok``, else of some rank up to 4)."""
        i = self.pick(lambda t: t.dtype == dtype and ok(t), fresh)
        if i is not None:
            return i
        for r in [rank] + [self.int(0, 4) for _ in range(20)]:
            shape, static = self.shape(r), self.static_mask(r)
            if ok(VType(dtype, shape, static)):
                return self.leaf(dtype, shape, static)
        raise Invalid("no leaf shape satisfies the step")

    def any_value(self, ok=lambda t: True, fresh: float = 0.15) -> int:
        dtype = INT if self.chance(0.15) else FLOAT
        return self.value(ok, dtype, self.int(0, 3), fresh)


# -- steps: each adds a few nodes ------------------------------------------------------------------
def _unaries(dtype: str) -> list:
    return [name for name, (d, _, _) in UNARY.items() if d == dtype]


def _binaries(dtype: str) -> list:
    return [name for name, (d, _, _) in BINARY.items() if d == dtype]


def step_unary(g: Gen) -> int:
    x = g.any_value()
    names = _unaries(g.types[x].dtype)
    weights = [0.2 if n in ("log", "is_nan") else 1.0 for n in names]
    return g.add("unary", [x], fn=g.choice(names, weights))


def _broadcast_variant(g: Gen, t: VType) -> tuple:
    """(shape, static) of a value that broadcasts against ``t``: leading dims dropped,
    some dims set to 1."""
    drop = g.int(0, t.rank) if g.chance(0.4) else 0
    shape = [1 if g.chance(0.25) else d for d in t.shape[drop:]]
    return tuple(shape), t.static[drop:]


def second_operand(g: Gen, x: int) -> Optional[int]:
    """Something to combine with ``x``: itself, a broadcast-compatible node, or a new leaf
    (None: a Python scalar)."""
    t = g.types[x]
    r = g.rng.random()
    if r < 0.2:
        return None
    if r < 0.3:
        return x
    if r < 0.6:
        def fits(u: VType) -> bool:
            try:
                return u.dtype == t.dtype and broadcast(t, u)[0] == t.shape
            except Invalid:
                return False
        y = g.pick(fits, fresh=0.0)
        if y is not None and y != x:
            return y
    shape, static = _broadcast_variant(g, t)
    return g.leaf(t.dtype, shape, static)


def _binary_fn(g: Gen, dtype: str) -> str:
    names = _binaries(dtype)
    weights = [0.3 if n in ("div", "atan2", "ieq_float", "gt_float") else 1.0 for n in names]
    return g.choice(names, weights)


def _combine(g: Gen, x: int, y: Optional[int], fn: Optional[str] = None) -> int:
    dtype = g.types[x].dtype
    fn = fn or _binary_fn(g, dtype)
    if y is None:
        scalar = g.choice([0.5, 2.0, -1.0, 0.0, 3.0]) if dtype == FLOAT else g.choice([1, 2, -3, 0])
        return g.add("binary", [x], fn=fn, scalar=scalar, scalar_first=g.chance(0.3))
    inputs = [x, y] if g.chance(0.5) else [y, x]
    return g.add("binary", inputs, fn=fn)


def step_binary(g: Gen) -> int:
    x = g.any_value()
    return _combine(g, x, second_operand(g, x))


def _axes(g: Gen, rank: int):
    """None, an int (maybe negative) or a tuple of distinct axes."""
    if rank == 0 or g.chance(0.15):
        return None
    if g.chance(0.6) or rank == 1:
        return g.int(-rank, rank - 1)
    count = g.int(1, rank)
    return tuple(int(a) for a in g.rng.choice(rank, count, replace=False))


def step_reduce(g: Gen) -> int:
    x = g.any_value(lambda t: t.rank >= 1)
    t = g.types[x]
    fns = REDUCE_FLOAT if t.dtype == FLOAT else REDUCE_INT
    fn = g.choice(fns, [1.0] * (len(fns) - 1) + [0.3]) if t.dtype == FLOAT else g.choice(fns)
    return g.add("reduce", [x], fn=fn, axis=_axes(g, t.rank), keepdims=g.chance(0.5))


def step_arg(g: Gen) -> int:
    x = g.any_value(lambda t: t.rank >= 1)
    rank = g.types[x].rank
    return g.add("arg", [x], fn=g.choice(["argmax", "argmin"]), axis=g.int(-rank, rank - 1))


def step_cumsum(g: Gen) -> int:
    """Along a static dim (along a symbolic one the compiler refuses, by design)."""
    x = g.any_value(lambda t: any(t.static))
    t = g.types[x]
    axis = g.choice([a for a in range(t.rank) if t.static[a]])
    return g.add("cumsum", [x], axis=axis - t.rank if g.chance(0.5) else axis, exclusive=g.chance(0.3),
                 reverse=g.chance(0.3))


def _float_value(g: Gen, min_rank: int = 1, max_rank: int = 3) -> int:
    return g.value(lambda t: min_rank <= t.rank <= max_rank, FLOAT, g.int(min_rank, max_rank))


def step_softmax(g: Gen) -> int:
    x = _float_value(g)
    rank = g.types[x].rank
    axis = -1 if g.chance(0.6) else g.int(-rank, rank - 1)
    fn = g.choice(["softmax", "log_softmax", "l2_normalize"], [1.0, 0.6, 0.3])
    return g.add("softmax", [x], fn=fn, axis=axis)


def step_manual_softmax(g: Gen) -> int:
    """exp(x - max(x)) / sum(exp(x - max(x))) over an axis, spelled out."""
    x = _float_value(g)
    axis = -1 if g.chance(0.6) else g.int(0, g.types[x].rank - 1)
    m = g.add("reduce", [x], fn="max", axis=axis, keepdims=True)
    e = g.add("unary", [g.add("binary", [x, m], fn="sub")], fn="exp")
    s = g.add("reduce", [e], fn="sum", axis=axis, keepdims=True)
    return g.add("binary", [e, s], fn="safe_div" if g.chance(0.3) else "div")


def step_layer_norm(g: Gen) -> int:
    """(x - mean) * rsqrt(var + 1) over the last axis."""
    x = _float_value(g)
    mean = g.add("reduce", [x], fn="mean", axis=-1, keepdims=True)
    centred = g.add("binary", [x, mean], fn="sub")
    var = g.add("reduce", [g.add("unary", [centred], fn="square")], fn="mean", axis=-1, keepdims=True)
    return g.add("binary", [centred, g.add("unary", [var], fn="rsqrt_abs1")], fn="mul")


def _self_transforms(g: Gen, s: int) -> list:
    """Transformed versions of ``s`` that broadcast against ``s`` (as builders)."""
    t = g.types[s]
    rows = t.shape[0]
    out = []
    if t.rank >= 2 and t.shape[-1] == t.shape[-2]:
        perm = tuple(range(t.rank - 2)) + (t.rank - 1, t.rank - 2)
        out.append(lambda: g.add("transpose", [s], perm=perm if g.chance(0.5) or t.rank > 2 else None))
    out.append(lambda: g.add("getitem", [s], items=(("index", g.int(-rows, rows - 1)),)))
    k = g.int(0, rows - 1)
    if t.static[0]:
        out.append(lambda: g.add("getitem", [s], items=(("range", k, k + 1, None),)))
    out.append(lambda: g.add("getitem", [s], items=(("range", None, None, -1),)))
    out.append(lambda: g.add("reverse", [s], axes=(g.int(0, t.rank - 1),)))
    if t.rank >= 2 and t.static[1]:
        c = g.int(0, t.shape[1] - 1)
        out.append(lambda: g.add("getitem", [s], items=(("range", None, None, None), ("range", c, c + 1, None))))
    if rows >= 2 and t.static[0]:
        out.append(lambda: g.add("concat", [g.add("getitem", [s], items=(("range", 1, None, None),)),
                                            g.add("getitem", [s], items=(("range", None, 1, None),))], axis=0))
    out.append(lambda: g.add("reduce", [s], fn=g.choice(["sum", "max", "mean"]), axis=0, keepdims=g.chance(0.5)))
    return out


def step_self_combine(g: Gen) -> int:
    """``s = x - reduce(x, axis, keepdims)`` (or a softmax of x), combined with a
    transposed / sliced / reversed / shifted copy of itself: the pattern that row fusion
    once got wrong."""
    def square_ok(t: VType) -> bool:
        return t.rank in (2, 3) and (t.shape[-1] == t.shape[-2] or g.chance(0.5))

    x = g.pick(lambda t: t.dtype == FLOAT and square_ok(t), fresh=0.5)
    if x is None:
        n = g.int(2, 5)
        shape = (n, n) if g.chance(0.6) else (g.int(1, 5), n)
        if g.chance(0.2):
            shape = (g.int(1, 3),) + shape
        x = g.leaf(FLOAT, shape)
    t = g.types[x]
    axis = g.choice([-1, t.rank - 1, 0]) if g.chance(0.8) else g.int(0, t.rank - 1)
    if g.chance(0.25):
        s = g.add("softmax", [x], fn="softmax", axis=axis)
    else:
        r = g.add("reduce", [x], fn=g.choice(["max", "sum", "mean", "min"]), axis=axis, keepdims=True)
        s = g.add("binary", [x, r], fn=g.choice(["sub", "sub", "mul", "add"]))
    if g.chance(0.3):
        s = g.add("unary", [s], fn=g.choice(["exp", "tanh", "square", "neg"]))
    other = g.choice(_self_transforms(g, s))()
    fn = g.choice(["add", "sub", "mul", "maximum"])
    return g.add("binary", [s, other] if g.chance(0.7) else [other, s], fn=fn)


def step_transpose(g: Gen) -> int:
    x = g.any_value(lambda t: t.rank >= 2)
    rank = g.types[x].rank
    perm = None if g.chance(0.2) else tuple(int(a) for a in g.rng.permutation(rank))
    return g.add("transpose", [x], perm=perm)


def _factorise(g: Gen, n: int, parts: int) -> list:
    """``parts`` factors whose product is ``n`` (in random order)."""
    factors = []
    for _ in range(parts - 1):
        divisors = [d for d in range(1, n + 1) if n % d == 0]
        d = g.choice(divisors)
        factors.append(d)
        n //= d
    factors.append(n)
    g.rng.shuffle(factors)
    return [int(f) for f in factors]


def step_reshape(g: Gen) -> int:
    x = g.any_value(lambda t: t.size > 1 or g.chance(0.2))
    t = g.types[x]
    static_product = int(np.prod([d for d, s in zip(t.shape, t.static) if s]))
    if t.fully_static:
        target = _factorise(g, t.size, g.int(1, 4))
        if g.chance(0.4):
            target[g.int(0, len(target) - 1)] = -1
    else:
        divisors = [d for d in range(1, static_product + 1) if static_product % d == 0]
        target = _factorise(g, g.choice(divisors), g.int(0, 2))
        target.insert(g.int(0, len(target)), -1)
    return g.add("reshape", [x], shape=tuple(target))


def step_expand_squeeze(g: Gen) -> int:
    x = g.any_value()
    t = g.types[x]
    ones = [i for i in range(t.rank) if t.shape[i] == 1 and t.static[i]]
    if ones and g.chance(0.5):
        return g.add("squeeze", [x], axes=(g.choice(ones),))
    return g.add("expand_dims", [x], axis=g.int(-t.rank - 1, t.rank))


def step_reverse(g: Gen) -> int:
    x = g.any_value(lambda t: t.rank >= 1)
    rank = g.types[x].rank
    count = g.int(1, rank)
    return g.add("reverse", [x], axes=tuple(int(a) for a in g.rng.choice(rank, count, replace=False)))


def _slice_item(g: Gen, n: int, static: bool) -> tuple:
    """One index expression for a dim of size ``n``; over an unknown dim only those whose
    length is linear in the dim (``:``, ``::-1``, ``a:``, ``:-a``, an index)."""
    if g.chance(0.25):
        return ("index", g.int(-n, n - 1))
    if not static:
        return g.choice([("range", None, None, None), ("range", None, None, -1), ("range", g.int(0, n - 1), None, None),
                         ("range", None, -g.int(1, n - 1), None) if n > 1 else ("range", None, None, None)])
    start = g.int(-n, n - 1) if g.chance(0.7) else None
    stop = g.int(-n, n) if g.chance(0.6) else None
    step = g.choice([None, 1, 2, -1, -2, 3], [3, 1, 1, 1, 0.5, 0.5])
    if _slice_length(n, start, stop, step) == 0:
        return ("range", None, None, step)
    return ("range", start, stop, step)


def _slice_length(n, start, stop, step) -> int:
    return len(range(*slice(start, stop, step).indices(n)))


def step_getitem(g: Gen) -> int:
    x = g.any_value(lambda t: t.rank >= 1)
    t = g.types[x]
    used = g.int(1, t.rank)
    items = [_slice_item(g, t.shape[i], t.static[i]) for i in range(used)]
    if g.chance(0.2):
        items.insert(g.int(0, len(items)), ("new",))
    if used < t.rank and g.chance(0.3):
        items.append(("ellipsis",))
        last = t.rank - 1
        items.append(_slice_item(g, t.shape[last], t.static[last]))
    return g.add("getitem", [x], items=tuple(items))


def step_slice(g: Gen) -> int:
    x = g.any_value(lambda t: t.rank >= 1)
    t = g.types[x]
    begin, size = [], []
    for n, s in zip(t.shape, t.static):
        b = g.int(0, n - 1)
        begin.append(b)
        size.append(-1 if not s or g.chance(0.3) else g.int(1, n - b))
    return g.add("slice", [x], begin=tuple(begin), size=tuple(size))


def step_concat(g: Gen) -> int:
    x = g.any_value(lambda t: t.rank >= 1)
    t = g.types[x]
    axis = g.int(-t.rank, t.rank - 1)
    a = axis % t.rank
    others = []
    for _ in range(g.int(1, 2)):
        if g.chance(0.35):
            others.append(x)
        else:
            shape = list(t.shape)
            shape[a] = g.size()
            others.append(g.leaf(t.dtype, tuple(shape), t.static))
    return g.add("concat", [x] + others, axis=axis)


def step_stack(g: Gen) -> int:
    x = g.any_value()
    t = g.types[x]
    y = x if g.chance(0.4) else g.leaf(t.dtype, t.shape, t.static)
    return g.add("stack", [x, y], axis=g.int(-t.rank - 1, t.rank))


def step_pad(g: Gen) -> int:
    x = g.any_value(lambda t: t.rank >= 1)
    t = g.types[x]
    mode = g.choice(["CONSTANT", "REFLECT", "SYMMETRIC"], [3, 1, 1])
    limit = {"CONSTANT": 2, "REFLECT": 0, "SYMMETRIC": 1}[mode]
    pads = tuple((g.int(0, min(2, n - 1 + limit)), g.int(0, min(2, n - 1 + limit))) if mode != "CONSTANT"
                 else (g.int(0, 2), g.int(0, 2)) for n in t.shape)
    params = {"pads": pads, "mode": mode}
    if mode == "CONSTANT" and g.chance(0.4):
        params["value"] = 1.5 if t.dtype == FLOAT else 2
    return g.add("pad", [x], **params)


def step_tile(g: Gen) -> int:
    x = g.any_value(lambda t: 1 <= t.rank and t.size <= 64)
    rank = g.types[x].rank
    return g.add("tile", [x], multiples=tuple(g.int(1, 3) for _ in range(rank)))


def step_gather(g: Gen) -> int:
    x = g.any_value(lambda t: t.rank >= 1)
    t = g.types[x]
    axis = g.int(-t.rank, t.rank - 1)
    n = t.shape[axis]
    if g.chance(0.35):
        idx = g.value(lambda u: u.rank <= 2, INT, g.int(0, 2))
        return g.add("gather", [x, idx], axis=axis, modulus=g.int(1, n))
    count = g.int(1, 4)
    indices = tuple(g.int(0, n - 1) for _ in range(count))
    if g.chance(0.2):
        indices = (indices, tuple(g.int(0, n - 1) for _ in range(count)))
    elif g.chance(0.1):
        indices = indices[0]
    return g.add("gather", [x], axis=axis, indices=indices)


def step_split(g: Gen) -> int:
    x = g.any_value(lambda t: any(t.static) and t.rank >= 1)
    t = g.types[x]
    axes = [i for i in range(t.rank) if t.static[i]]
    axis = g.choice(axes)
    n = t.shape[axis]
    if g.chance(0.4):
        return g.add("split", [x], fn="unstack", axis=axis, num=n, index=g.int(0, n - 1))
    num = g.choice([d for d in range(1, n + 1) if n % d == 0])
    return g.add("split", [x], fn="split", axis=axis, num=num, index=g.int(0, num - 1))


def step_broadcast_to(g: Gen) -> int:
    x = g.any_value(lambda t: t.fully_static and t.rank <= 3)
    t = g.types[x]
    lead = tuple(g.size() for _ in range(g.int(0, 1)))
    shape = lead + tuple(g.size() if d == 1 else d for d in t.shape)
    return g.add("broadcast_to", [x], shape=shape)


def step_matmul(g: Gen) -> int:
    a = g.value(lambda t: t.rank in (2, 3), FLOAT, g.choice([2, 2, 3]))
    t = g.types[a]
    ta, tb = g.chance(0.25), g.chance(0.25)
    k = t.shape[-2] if ta else t.shape[-1]
    ks = t.static[-2] if ta else t.static[-1]
    n = g.size()
    shape = t.shape[:-2] + ((n, k) if tb else (k, n))
    static = t.static[:-2] + ((True, ks) if tb else (ks, True))
    b = g.pick(lambda u: u.dtype == FLOAT and u.shape == shape, fresh=0.5)
    if b is None:
        b = g.leaf(FLOAT, shape, static)
    return g.add("matmul", [a, b], ta=ta, tb=tb)


def _image(g: Gen) -> int:
    x = g.pick(lambda t: t.dtype == FLOAT and t.rank == 4 and t.static[3] and t.shape[3] <= 4)
    if x is not None:
        return x
    shape = (g.int(1, 2), g.int(2, 6), g.int(2, 6), g.int(1, 3))
    static = (not g.chance(0.3), not g.chance(0.3), not g.chance(0.2), True)
    return g.leaf(FLOAT, shape, static, constant=False)


def step_conv(g: Gen) -> int:
    x = _image(g)
    channels = g.types[x].shape[3]
    k = g.int(1, 3)
    w = g.leaf(FLOAT, (k, k, channels, g.int(1, 4)), (True,) * 4, constant=g.chance(0.7))
    stride, dilation = (g.int(1, 2), 1) if g.chance(0.8) else (1, 2)
    padding = g.choice(["SAME", "VALID"])
    return g.add("conv2d", [x, w], stride=_window_stride(g, x, padding, stride), dilation=dilation, padding=padding)


def _window_stride(g: Gen, x: int, padding: str, stride: int) -> int:
    """``stride``, or 1 where SAME padding over a symbolic spatial dim would need the
    dim's size (the compiler refuses that, by design)."""
    return 1 if padding == "SAME" and not all(g.types[x].static[1:3]) else stride


def step_pool(g: Gen) -> int:
    x = _image(g)
    padding = g.choice(["SAME", "VALID"])
    return g.add("pool", [x], fn=g.choice(["max_pool", "avg_pool"]), k=g.int(1, 3),
                 stride=_window_stride(g, x, padding, g.int(1, 3)), padding=padding)


def step_bias_add(g: Gen) -> int:
    x = _float_value(g, 2, 4)
    channels = g.types[x].shape[-1]
    return g.add("bias_add", [x, g.leaf(FLOAT, (channels,), constant=g.chance(0.6))])


def step_dynamic_shape(g: Gen) -> int:
    """Shapes as values: tf.fill / zeros_like / broadcast_to / reshape to ``tf.shape(x)``."""
    x = g.any_value(lambda t: t.rank >= 1)
    t = g.types[x]
    fn = g.choice(list(DYNAMIC))
    if fn == "fill":
        return g.add("dynamic", [x], fn=fn)
    if fn == "reshape_like":  # to a shape with symbolic dims tfc refuses ("cannot prove ... fits"), by design
        if not t.fully_static:
            raise Invalid("reshape to the shape of a value with symbolic dims")
        y = g.pick(lambda u: u.size == t.size and u.shape != t.shape and u.fully_static, fresh=0.0)
        y = y if y is not None else g.leaf(FLOAT, (t.size,), constant=True)
        return g.add("dynamic", [x, y], fn=fn)
    shape, static = _broadcast_variant(g, t)
    return g.add("dynamic", [x, g.leaf(t.dtype if fn == "zeros_like" else FLOAT, shape, static)], fn=fn)


NOT_DIFFERENTIABLE = {"floor", "ceil", "round", "sign", "to_int", "to_float", "is_nan", "gt_float", "ieq_float",
                      "argmax", "argmin"}


def _differentiable_paths(g: Gen, y: int) -> list:
    """The float placeholders that ``y`` depends on through differentiable ops only."""
    found, stack, seen = [], [y], set()
    while stack:
        i = stack.pop()
        if i in seen:
            continue
        seen.add(i)
        node, t = g.nodes[i], g.types[i]
        if t.dtype != FLOAT or node.kind in ("arg", "gradient") or node.params.get("fn") in NOT_DIFFERENTIABLE:
            continue
        if node.kind == "reduce" and node.params["fn"] == "prod" and not g.types[node.inputs[0]].fully_static:
            continue  # its gradient is a cumprod along a symbolic dim, which tfc refuses by design
        if node.kind == "placeholder":
            found.append(i)
        if node.kind == "gather":
            stack.append(node.inputs[0])
        elif node.kind == "dynamic":
            stack.extend(node.inputs[1:])  # tf.shape(x) carries no gradient to x
        else:
            stack.extend(node.inputs)
    return sorted(found)


def step_gradient(g: Gen, y: Optional[int] = None) -> int:
    """d sum(y * w) / dx for a float placeholder x that y depends on (w: a constant)."""
    if y is None:
        y = g.pick(lambda t: t.dtype == FLOAT and t.fully_static and t.rank >= 1, fresh=0.0)
    if y is None or not (g.types[y].dtype == FLOAT and g.types[y].fully_static and g.types[y].rank >= 1):
        raise Invalid("no static float value to differentiate")
    sources = _differentiable_paths(g, y)
    if not sources:
        raise Invalid("no placeholder reaches the value through differentiable ops")
    w = g.leaf(FLOAT, g.types[y].shape, constant=True)
    return g.add("gradient", [y, w, g.choice(sources)])


STEPS = {
    step_unary: 3.0, step_binary: 4.0, step_reduce: 3.0, step_self_combine: 5.0, step_softmax: 1.2,
    step_manual_softmax: 0.8, step_layer_norm: 0.8, step_transpose: 1.5, step_reshape: 1.5, step_getitem: 2.0,
    step_slice: 0.8, step_reverse: 1.0, step_concat: 1.5, step_stack: 0.5, step_pad: 1.0, step_tile: 0.8,
    step_gather: 1.0, step_split: 0.6, step_broadcast_to: 0.5, step_expand_squeeze: 0.6, step_matmul: 1.5,
    step_conv: 1.0, step_pool: 0.8, step_bias_add: 0.5, step_arg: 0.5, step_cumsum: 0.5,
    step_dynamic_shape: 0.8, step_gradient: 1.5,
}


def generate(seed: int, max_steps: int = 5) -> Program:
    """A random program of 1..``max_steps`` steps (a step adds one to six nodes)."""
    g = Gen(np.random.default_rng(seed))
    steps, weights = list(STEPS), list(STEPS.values())
    made: list = []
    for _ in range(g.int(1, max_steps)):
        for _attempt in range(5):
            mark = len(g.nodes)
            try:
                made.append(g.choice(steps, weights)(g))
                break
            except Invalid:
                del g.nodes[mark:], g.types[mark:]
    if not made:
        made.append(g.add("unary", [g.leaf(FLOAT, (2, 3))], fn="tanh"))
    finals = [step_self_combine] if g.chance(0.3) else []
    finals += [lambda g: step_gradient(g, made[-1])] if g.chance(0.25) else []
    for final in finals:
        mark = len(g.nodes)
        try:
            made.append(final(g))
        except Invalid:
            del g.nodes[mark:], g.types[mark:]
    used = {j for node in g.nodes for j in node.inputs}
    sinks = [i for i in made[:-1] if i not in used]
    fetches = [made[-1]] + [int(i) for i in g.rng.permutation(sinks)[:2]]
    inner = [i for i in range(len(g.nodes) - 1) if g.nodes[i].kind not in ("placeholder", "constant")]
    if inner and g.chance(0.2):
        fetches.append(g.choice(inner))
    return _with_second_run(g, Program(tuple(g.nodes), tuple(fetches), seed).live())


def _with_second_run(g: Gen, program: Program) -> Program:
    """``program`` with a second run at other sizes of its placeholders' unknown dims (the
    compiled program is reused for them), when some choice of sizes keeps it valid."""
    unknown = sorted({d for i in program.placeholders()
                      for d, s in zip(program.nodes[i].params["shape"], program.nodes[i].params["static"]) if not s})
    if not unknown or not g.chance(0.7):
        return program
    for _attempt in range(4):
        sizes = {d: g.size() for d in unknown}
        nodes = list(program.nodes)
        for i in program.placeholders():
            p = nodes[i].params
            if not all(p["static"]):
                rerun = tuple(d if s else sizes[d] for d, s in zip(p["shape"], p["static"]))
                nodes[i] = nodes[i].with_params(rerun=rerun)
        candidate = Program(tuple(nodes), program.fetches, program.seed)
        if candidate.valid():
            return candidate
    return program


# =====================================================================================
# Running and comparing
# =====================================================================================
@contextlib.contextmanager
def parallel_everywhere():
    """Compile every kernel to split its work over the thread pool, however small (the
    chunking code otherwise runs only on large tensors)."""
    from tfc.codegen import program as codegen_program

    saved = codegen_program.PARALLEL_WORK
    codegen_program.PARALLEL_WORK = 1
    try:
        yield
    finally:
        codegen_program.PARALLEL_WORK = saved


@dataclass
class Outcome:
    """``kind``: "ok"; "refused" (lowering raised UnsupportedOpsError: tfc declines the
    graph with its documented "cannot compile" error, e.g. a symbolic dim it cannot prove
    equal to another); the failures: "mismatch" (compiled != evaluator), "run"
    (Session.run raised), "oracle" (lowering or evaluating the unoptimised IR raised
    anything else), "build" (building the graph raised), "shape" (a static or evaluated
    shape disagrees with the program's types)."""

    kind: str
    detail: str = ""
    error: str = ""  # the exception's type, for errors
    expected: list = field(default_factory=list)
    got: list = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.kind == "ok"

    @property
    def failed(self) -> bool:
        return self.kind not in ("ok", "refused")

    @property
    def signature(self) -> str:
        return f"{self.kind}:{self.error}" if self.error else self.kind


def _error_outcome(kind: str, e: BaseException) -> Outcome:
    message = " ".join(line.strip() for line in str(e).strip().splitlines()[:3])
    return Outcome(kind, f"{type(e).__name__}: {message}"[:400], type(e).__name__)


def build(program: Program):
    """(graph, namespace) with the program's graph built by executing its source."""
    import tfc.compat.v1 as tf

    graph = tf.Graph()
    namespace = {"tf": tf, "np": np, "rand": rand}
    with graph.as_default():
        exec(compile(source(program), "<fuzz program>", "exec"), namespace)
    return graph, namespace


def _feed_values(program: Program, namespace: dict) -> dict:
    feeds = {}
    for i in program.placeholders():
        p = program.nodes[i].params
        feeds[namespace[f"v{i}"]] = rand(p["seed"], p["shape"], p["dtype"], p.get("special", False))
    return feeds


def _check_static_shapes(program: Program, types: list, namespace: dict) -> Optional[str]:
    for i, t in enumerate(types):
        tensor = namespace[f"v{i}"]
        if tensor is None:
            return f"v{i} is None"
        if tensor.dtype.base_dtype.name != t.dtype:
            return f"v{i}: graph dtype {tensor.dtype.name}, expected {t.dtype}"
        dims = tensor.shape.as_list() if tensor.shape.ndims is not None else None
        if dims is None or len(dims) != t.rank:
            return f"v{i}: graph shape {tensor.shape} for a value of shape {t.shape}"
        for d, (n, known) in enumerate(zip(t.shape, t.static)):
            if dims[d] is not None and dims[d] != n:
                return f"v{i}: graph shape {tensor.shape} for a value of shape {t.shape}"
            if known and dims[d] is None:
                return f"v{i}: graph shape {tensor.shape} does not know dim {d} (= {n})"
    return None


def oracle(fetches: list, feeds: dict, perturb: int = 2) -> tuple:
    """(results, perturbed results): the evaluator on the unoptimised lowered IR, once on
    ``feeds`` and ``perturb`` times on float feeds scaled by 1 + 1e-5 * N(0, 1)."""
    from tfc.ir import evaluate
    from tfc.passes.lower import FeedSpec, lower_graph

    specs = [FeedSpec(t, t.dtype.base_dtype, np.shape(v)) for t, v in feeds.items()]
    lowered = lower_graph(fetches, (), specs)
    args = [feeds[t] for t in lowered.feeds]
    expected = evaluate(lowered.module, [a.copy() for a in args])
    rng = np.random.default_rng(0)
    perturbed = []
    if any(a.dtype.kind == "f" for a in args):
        for _ in range(perturb):
            moved = [(a * (1 + 1e-5 * rng.standard_normal(a.shape))).astype(a.dtype) if a.dtype.kind == "f" else a
                     for a in args]
            with np.errstate(all="ignore"):
                perturbed.append(evaluate(lowered.module, moved))
    return expected, perturbed


RTOL, ATOL, NOISE_FACTOR = 1e-4, 1e-5, 10.0


def _value_class(a: np.ndarray) -> np.ndarray:
    """0 finite, 1 NaN, 2 +inf, 3 -inf."""
    return np.where(np.isnan(a), 1, np.where(np.isposinf(a), 2, np.where(np.isneginf(a), 3, 0)))


def compare(expected: np.ndarray, got, perturbed: list) -> Optional[str]:
    """None when ``got`` agrees with ``expected``; else what differs (see the module doc)."""
    got = np.asarray(got)
    if got.dtype != expected.dtype:
        return f"dtype {got.dtype}, expected {expected.dtype}"
    if got.shape != expected.shape:
        return f"shape {got.shape}, expected {expected.shape}"
    if expected.dtype.kind != "f":
        unstable = np.zeros(expected.shape, bool)
        for p in perturbed:
            unstable |= p != expected
        bad = (got != expected) & ~unstable
    else:
        e, g = expected.astype(np.float64), got.astype(np.float64)
        e_class = _value_class(e)
        unstable = np.zeros(e.shape, bool)
        noise = np.zeros(e.shape)
        with np.errstate(all="ignore"):
            for p in perturbed:
                p = p.astype(np.float64)
                unstable |= _value_class(p) != e_class
                noise = np.maximum(noise, np.where(e_class == 0, np.abs(p - e), 0.0))
            tolerance = ATOL + RTOL * np.abs(e) + NOISE_FACTOR * np.nan_to_num(noise)
            close = np.abs(g - e) <= tolerance
        bad = np.where(e_class == 0, ~close, _value_class(g) != e_class) & ~unstable
    if not bad.any():
        return None
    positions = np.argwhere(bad)[:4]
    shown = ", ".join(f"{tuple(int(i) for i in pos)}: {got[tuple(pos)]!r} != {expected[tuple(pos)]!r}"
                      for pos in positions)
    return f"{int(bad.sum())} of {bad.size} elements differ ({shown})"


def run_program(program: Program) -> Outcome:
    """Run ``program`` compiled and on the evaluator, and compare (then, if the program has
    a second run, the same on the second run's feeds, in the same session)."""
    import tfc.compat.v1 as tf

    try:
        graph, namespace = build(program)
    except Exception as e:  # noqa: BLE001 - any failure to build a valid program is a finding
        return _error_outcome("build", e)
    problem = _check_static_shapes(program, program.types(), namespace)
    if problem:
        return Outcome("shape", problem)
    runs = [program, program.second_run()] if program.has_second_run() else [program]
    with tf.Session(graph=graph) as session:
        for k, run in enumerate(runs):
            outcome = _run_once(run, namespace, session, "" if k == 0 else "second run (feeds2): ")
            if not outcome.ok:
                return outcome
    return outcome


def _run_once(program: Program, namespace: dict, session, label: str) -> Outcome:
    types = program.types()
    fetches = [namespace[f"v{i}"] for i in program.fetches]
    feeds = _feed_values(program, namespace)
    try:
        expected, perturbed = oracle(fetches, feeds)
    except UnsupportedOpsError as e:
        return _error_outcome("refused", e)
    except Exception as e:  # noqa: BLE001
        return _error_outcome("oracle", e)
    for i, value in zip(program.fetches, expected):
        if value.shape != types[i].shape or value.dtype != np.dtype(types[i].dtype):
            return Outcome("shape", f"{label}v{i}: the evaluator gives {value.dtype}{list(value.shape)}, expected "
                                    f"{types[i].dtype}{list(types[i].shape)}")
    try:
        got = [np.asarray(x) for x in session.run(fetches, feeds)]
    except Exception as e:  # noqa: BLE001
        outcome = _error_outcome("run", e)
        outcome.detail = label + outcome.detail
        outcome.expected = expected
        return outcome
    for k, (i, e, g) in enumerate(zip(program.fetches, expected, got)):
        problem = compare(e, g, [p[k] for p in perturbed])
        if problem:
            return Outcome("mismatch", f"{label}v{i}: {problem}", "", expected, got)
    return Outcome("ok", expected=expected, got=got)


# =====================================================================================
# Shrinking
# =====================================================================================
def _redirect(program: Program, old: int, new: int) -> Program:
    nodes = tuple(n.with_inputs(new if j == old else j for j in n.inputs) for n in program.nodes)
    fetches = tuple(new if f == old else f for f in program.fetches)
    return Program(nodes, fetches, program.seed)


def _replace(program: Program, i: int, node: Node) -> Program:
    nodes = program.nodes[:i] + (node,) + program.nodes[i + 1:]
    return Program(nodes, program.fetches, program.seed)


def _placeholder_for(t: VType, seed: int) -> Node:
    return Node("placeholder", (), {"dtype": t.dtype, "shape": t.shape, "static": t.static, "seed": seed})


SIMPLER_FN = {"unary": ("neg", "ineg", "abs"), "binary": ("add", "iadd", "mul"), "reduce": ("sum",),
              "softmax": ("softmax",), "pool": ("max_pool",)}


def candidates(program: Program) -> Iterator[Program]:
    """Smaller or simpler variants of ``program``, most promising first."""
    if len(program.fetches) > 1:
        for f in program.fetches:
            yield Program(program.nodes, (f,), program.seed)
    if program.has_second_run():
        yield program.without_second_run()
    types = program.types()
    inner = [i for i, n in enumerate(program.nodes) if n.inputs]
    for i in reversed(inner):
        for j in dict.fromkeys(program.nodes[i].inputs):
            yield _redirect(program, i, j)
    for i in inner:
        yield _replace(program, i, _placeholder_for(types[i], 1000 + i))
    yield from _leaf_simplifications(program)
    yield from _shape_shrinks(program)
    for i in inner:
        node = program.nodes[i]
        for fn in SIMPLER_FN.get(node.kind, ()):
            if node.params.get("fn") not in SIMPLER_FN[node.kind] and fn != node.params.get("fn"):
                yield _replace(program, i, node.with_params(fn=fn))
        for key in ("keepdims", "exclusive", "reverse", "ta", "tb", "scalar_first", "special"):
            if node.params.get(key):
                yield _replace(program, i, node.with_params(**{key: False}))


def _leaf_simplifications(program: Program) -> Iterator[Program]:
    for i in program.leaves():
        node = program.nodes[i]
        p = node.params
        if node.kind == "constant":
            yield _replace(program, i, Node("placeholder", (), {**p, "static": (True,) * len(p["shape"])}))
        if p.get("special"):
            yield _replace(program, i, node.with_params(special=False))
        if node.kind == "placeholder" and not all(p["static"]):
            yield _replace(program, i, node.with_params(static=(True,) * len(p["shape"])))


def _with_shape(node: Node, shape: tuple) -> Node:
    return node.with_params(shape=tuple(shape))


def _shape_shrinks(program: Program) -> Iterator[Program]:
    leaves = program.leaves()
    sizes = sorted({d for i in leaves for d in program.nodes[i].params["shape"] if d > 1}, reverse=True)
    for d in sizes:
        for smaller in dict.fromkeys([1, d // 2, d - 1]):
            if 1 <= smaller < d:
                nodes = list(program.nodes)
                for i in leaves:
                    shape = nodes[i].params["shape"]
                    nodes[i] = _with_shape(nodes[i], tuple(smaller if x == d else x for x in shape))
                yield Program(tuple(nodes), program.fetches, program.seed)
    for i in leaves:
        shape = program.nodes[i].params["shape"]
        for axis, d in enumerate(shape):
            for smaller in dict.fromkeys([1, d - 1]):
                if 1 <= smaller < d:
                    new_shape = shape[:axis] + (smaller,) + shape[axis + 1:]
                    yield _replace(program, i, _with_shape(program.nodes[i], new_shape))


def shrink(program: Program, fails: Callable[[Program], bool], max_runs: int = 300,
           max_seconds: float = 60.0) -> Program:
    """The smallest variant of ``program`` found for which ``fails`` holds (greedy: take the
    first candidate that still fails, start over, until none does or the budget is spent)."""
    deadline = time.monotonic() + max_seconds
    tried: set = set()
    runs = 0
    current = program.live()
    improved = True
    while improved and runs < max_runs and time.monotonic() < deadline:
        improved = False
        for candidate in candidates(current):
            candidate = candidate.live()
            if not candidate.valid():
                continue
            key = source(candidate) + feeds_source(candidate) + fetches_source(candidate) + \
                (feeds_source(candidate.second_run()) if candidate.has_second_run() else "")
            if key in tried:
                continue
            tried.add(key)
            runs += 1
            if fails(candidate):
                current, improved = candidate, True
                break
            if runs >= max_runs or time.monotonic() >= deadline:
                break
    return current


def same_failure(outcome: Outcome) -> Callable[[Program], bool]:
    """A ``fails`` predicate for :func:`shrink`: the program fails with the same signature."""
    def fails(candidate: Program) -> bool:
        try:
            return run_program(candidate).signature == outcome.signature
        except Exception:  # noqa: BLE001 - a candidate that crashes the harness is not the same failure
            return False
    return fails


# =====================================================================================
# Reproducers and campaigns
# =====================================================================================
def _array_text(values: list) -> str:
    with np.printoptions(precision=6, threshold=64, linewidth=100):
        return "\n".join(f"#   {line}" for v in values for line in repr(np.asarray(v)).splitlines())


def reproducer(program: Program, outcome: Outcome, parallel: bool = False) -> str:
    """A runnable TF1 script that shows the failure."""
    lines = [f"# tfc graph fuzzer: {outcome.signature}" + (f" (seed {program.seed})" if program.seed is not None
                                                           else ""),
             f"# {outcome.detail}",
             "import numpy as np",
             "import tfc.compat.v1 as tf",
             "",
             "",
             inspect.getsource(rand).rstrip(),
             "",
             "",
             source(program).rstrip(),
             feeds_source(program).rstrip()]
    if program.has_second_run():
        lines.append(feeds_source(program.second_run(), "feeds2").rstrip())
    lines.append(fetches_source(program).rstrip())
    if parallel:
        lines += ["from tfc.testing.fuzz import parallel_everywhere  # every kernel split over the thread pool",
                  "with parallel_everywhere(), tf.Session() as sess:"]
    else:
        lines.append("with tf.Session() as sess:")
    lines.append("    print(sess.run(fetches, feeds))")
    if program.has_second_run():
        lines.append("    print(sess.run(fetches, feeds2))")
    if outcome.expected:
        lines.append("# expected (tfc.ir.evaluate on the unoptimised IR):")
        lines.append(_array_text(outcome.expected))
    if outcome.got:
        lines.append("# got (Session.run):")
        lines.append(_array_text(outcome.got))
    return "\n".join(lines) + "\n"


@dataclass
class Failure:
    seed: int
    outcome: Outcome
    program: Program
    parallel: bool = False
    shrunk: Optional[Program] = None
    shrunk_outcome: Optional[Outcome] = None

    def report(self) -> str:
        if self.shrunk is not None:
            return reproducer(self.shrunk, self.shrunk_outcome, self.parallel)
        return reproducer(self.program, self.outcome, self.parallel)


def _mode(parallel: bool):
    return parallel_everywhere() if parallel else contextlib.nullcontext()


def check_seed(seed: int, max_steps: int = 5, parallel: bool = False) -> tuple:
    """(program, outcome) for the program of ``seed`` (``parallel``: compiled under
    :func:`parallel_everywhere`)."""
    program = generate(seed, max_steps)
    with _mode(parallel):
        return program, run_program(program)


def shrink_failure(failure: Failure, max_runs: int = 300, max_seconds: float = 60.0) -> Failure:
    with _mode(failure.parallel):
        shrunk = shrink(failure.program, same_failure(failure.outcome), max_runs, max_seconds)
        failure.shrunk, failure.shrunk_outcome = shrunk, run_program(shrunk)
    return failure


def fingerprint(failure: Failure) -> tuple:
    """What makes two failures the same for de-duplication: the signature and the kinds of
    ops (with their functions) in the shrunk program."""
    program = failure.shrunk or failure.program
    ops = sorted({n.kind + (f".{n.params['fn']}" if "fn" in n.params else "") for n in program.nodes
                  if n.kind not in ("placeholder", "constant")})
    return (failure.outcome.signature, tuple(ops))
