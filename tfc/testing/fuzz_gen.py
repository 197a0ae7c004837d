"""The graph fuzzer's generator: ``generate(seed)`` builds a random well-typed
:class:`~tfc.testing.fuzz_program.Program` from a seeded numpy generator, one *step* at a
time (a step adds one to six nodes: an elementwise op with broadcasting, a reduction, a
softmax or layer-norm pattern, a value combined with a transformed copy of itself, a
slice, a convolution, a gradient...), and may give it a second run at other sizes of its
symbolic dims. Steps avoid what tfc declines by design (documented "cannot compile"
cases), so such refusals stay rare.
"""
from __future__ import annotations

from typing import Callable, Optional

import numpy as np

from .fuzz_ops import (BINARY, DYNAMIC, FLOAT, INT, REDUCE_FLOAT, REDUCE_INT, UNARY, Invalid, Node, VType, broadcast,
                       infer)
from .fuzz_program import MAX_ELEMENTS, Program

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
    """Along any dim, static or symbolic (a core scan)."""
    x = g.any_value(lambda t: t.rank >= 1)
    t = g.types[x]
    axis = g.int(0, t.rank - 1)
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
        if t.dtype != FLOAT or node.kind in ("arg", "gradient") or node.params.get("fn") in NOT_DIFFERENTIABLE \
                or (node.kind == "cond" and {node.params["fn_true"], node.params["fn_false"]} & NOT_DIFFERENTIABLE):
            continue
        if node.kind == "placeholder":
            found.append(i)
        if node.kind in ("gather", "cond"):
            stack.append(node.inputs[0])  # (a cond's predicate carries no gradient)
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


BOUNDED_UNARIES = ("tanh", "sin", "cos", "sigmoid", "neg", "abs", "softsign", "ineg", "iabs")


def _same_type_unaries(dtype: str, names=None) -> list:
    names = names or list(UNARY)
    return [name for name in names if UNARY[name][0] == dtype and UNARY[name][1] == dtype]


def step_cond(g: Gen) -> int:
    """tf.cond on a maximum of another value, applying a unary op in each branch."""
    x = g.any_value()
    fns = _same_type_unaries(g.types[x].dtype)
    if not fns:
        raise Invalid("no unary op keeps this dtype")
    pred = g.any_value()
    return g.add("cond", [x, pred], fn_true=g.choice(fns), fn_false=g.choice(fns))


def step_loop(g: Gen) -> int:
    """tf.while_loop applying a bounded unary op 0-3 times."""
    x = g.any_value()
    fns = _same_type_unaries(g.types[x].dtype, BOUNDED_UNARIES)
    if not fns:
        raise Invalid("no bounded unary op keeps this dtype")
    return g.add("loop", [x], fn=g.choice(fns), count=g.int(0, 3))


STEPS = {
    step_unary: 3.0, step_binary: 4.0, step_reduce: 3.0, step_self_combine: 5.0, step_softmax: 1.2,
    step_manual_softmax: 0.8, step_layer_norm: 0.8, step_transpose: 1.5, step_reshape: 1.5, step_getitem: 2.0,
    step_slice: 0.8, step_reverse: 1.0, step_concat: 1.5, step_stack: 0.5, step_pad: 1.0, step_tile: 0.8,
    step_gather: 1.0, step_split: 0.6, step_broadcast_to: 0.5, step_expand_squeeze: 0.6, step_matmul: 1.5,
    step_conv: 1.0, step_pool: 0.8, step_bias_add: 0.5, step_arg: 0.5, step_cumsum: 0.5,
    step_dynamic_shape: 0.8, step_gradient: 1.5, step_cond: 1.0, step_loop: 1.0,
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
