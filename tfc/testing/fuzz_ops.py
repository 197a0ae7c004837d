"""The graph fuzzer's op catalogue.

A fuzzed program is a list of :class:`Node` s. Each node has a *kind* (a key of
:data:`KINDS`), the indices of its input nodes and a dict of parameters. A kind knows
two things about its nodes:

* ``infer(params, input_types) -> VType``: the node's type, or :class:`Invalid` when
  the parameters do not fit the inputs (the shrinker changes shapes and inputs blindly
  and relies on this to reject what no longer makes sense);
* ``code(params, input_names) -> str``: the TF1 Python expression that builds the node
  (``tf`` is ``tfc.compat.v1``; ``rand`` is :func:`tfc.testing.fuzz.rand`).

A :class:`VType` holds the *run-time* shape (what the feeds will have) and, per dim,
whether the TF graph knows it statically: a placeholder's ``None`` dims are unknown,
and unknown-ness propagates. ``static`` is never more than TF knows, so a node that
needs a static dim (``tf.split``, a convolution's channels) can rely on it.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable

FLOAT, INT = "float32", "int32"


class Invalid(Exception):
    """The parameters of a node do not fit its inputs."""


@dataclass(frozen=True)
class VType:
    dtype: str
    shape: tuple
    static: tuple
    ones: tuple = ()  # per dim: unknown to TF, but a placeholder's dim fed as 1 (the Session specialises it)

    def specialised_one(self, i: int) -> bool:
        return bool(self.ones) and self.ones[i]

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def fully_static(self) -> bool:
        return all(self.static)

    def dims_text(self) -> str:
        return "[" + ", ".join(str(d) if s else "None" for d, s in zip(self.shape, self.static)) + "]"


@dataclass(frozen=True)
class Node:
    kind: str
    inputs: tuple = ()
    params: dict = field(default_factory=dict, hash=False, compare=False)

    def with_inputs(self, inputs) -> "Node":
        return Node(self.kind, tuple(inputs), self.params)

    def with_params(self, **changes) -> "Node":
        return Node(self.kind, self.inputs, {**self.params, **changes})


@dataclass(frozen=True)
class Kind:
    infer: Callable
    code: Callable
    leaf: bool = False


def _require(condition: bool, why: str) -> None:
    if not condition:
        raise Invalid(why)


def _axis(axis: int, rank: int) -> int:
    _require(-rank <= axis < rank, f"axis {axis} out of range for rank {rank}")
    return axis % rank


def _all_axes(axes, rank: int) -> list:
    if axes is None:
        return list(range(rank))
    normalised = sorted({_axis(a, rank) for a in (axes if isinstance(axes, (list, tuple)) else [axes])})
    _require(len(normalised) == len(axes if isinstance(axes, (list, tuple)) else [axes]), "repeated axis")
    return normalised


def _float(t: VType) -> None:
    _require(t.dtype == FLOAT, f"needs float32, got {t.dtype}")


def _same_dtype(*types) -> str:
    _require(len({t.dtype for t in types}) == 1, "operands of different dtypes")
    return types[0].dtype


def broadcast(*types: VType) -> tuple:
    """(shape, static) of numpy broadcasting; unknown wherever any operand's dim is.

    A symbolic dim computed from others (``s0-3``, ``2*s0``) that is 1 at run time must not
    broadcast against a larger dim: tfc compiles symbolic dims as equal (it raises
    "Incompatible shapes" where TF would broadcast), a documented limitation."""
    rank = max(t.rank for t in types)
    shape, static = [], []
    for i in range(rank):
        dims = [(t.shape[t.rank - rank + i], t.static[t.rank - rank + i]) for t in types if t.rank - rank + i >= 0]
        sizes = {d for d, _ in dims if d != 1}
        _require(len(sizes) <= 1, f"cannot broadcast {[t.shape for t in types]}")
        if sizes:
            _require(all(t.static[t.rank - rank + i] or t.specialised_one(t.rank - rank + i)
                         for t in types if t.rank - rank + i >= 0 and t.shape[t.rank - rank + i] == 1),
                     "a derived symbolic dim of run-time size 1 would broadcast")
        shape.append(sizes.pop() if sizes else 1)
        static.append(all(s for _, s in dims))
    return tuple(shape), tuple(static)


# -- leaves ------------------------------------------------------------------------------------
def _infer_leaf(p, *inputs):
    _require(not inputs, "a leaf has no inputs")
    _require(all(d >= 1 for d in p["shape"]), "empty dims are not generated")
    static = p.get("static", (True,) * len(p["shape"]))
    if "rerun" in p:  # the shape fed on a second run: other sizes for the unknown dims only
        rerun = p["rerun"]
        _require(len(rerun) == len(p["shape"]) and all(d >= 1 for d in rerun), "bad rerun shape")
        _require(all(r == d for r, d, s in zip(rerun, p["shape"], static) if s), "rerun changes a static dim")
    ones = tuple(not s and d == 1 for d, s in zip(p["shape"], static))
    return VType(p["dtype"], tuple(p["shape"]), tuple(static), ones)


def rand_call(p) -> str:
    special = ", special=True" if p.get("special") else ""
    return f"rand({p['seed']}, {tuple(p['shape'])!r}, {p['dtype']!r}{special})"


def _code_placeholder(p, names):
    t = _infer_leaf(p)
    return f"tf.placeholder(tf.{t.dtype}, {t.dims_text()})"


def _code_constant(p, names):
    return f"tf.constant({rand_call(p)})"


# -- elementwise ----------------------------------------------------------------------------------
# name -> (input dtype, output dtype, template over {x})
UNARY = {
    "neg": (FLOAT, FLOAT, "tf.negative({x})"), "abs": (FLOAT, FLOAT, "tf.abs({x})"),
    "square": (FLOAT, FLOAT, "tf.square({x})"), "tanh": (FLOAT, FLOAT, "tf.tanh({x})"),
    "sigmoid": (FLOAT, FLOAT, "tf.sigmoid({x})"), "exp": (FLOAT, FLOAT, "tf.exp({x})"),
    "sin": (FLOAT, FLOAT, "tf.sin({x})"), "cos": (FLOAT, FLOAT, "tf.cos({x})"),
    "relu": (FLOAT, FLOAT, "tf.nn.relu({x})"), "relu6": (FLOAT, FLOAT, "tf.nn.relu6({x})"),
    "elu": (FLOAT, FLOAT, "tf.nn.elu({x})"), "softplus": (FLOAT, FLOAT, "tf.nn.softplus({x})"),
    "softsign": (FLOAT, FLOAT, "tf.nn.softsign({x})"), "leaky_relu": (FLOAT, FLOAT, "tf.nn.leaky_relu({x}, 0.2)"),
    "floor": (FLOAT, FLOAT, "tf.floor({x})"), "ceil": (FLOAT, FLOAT, "tf.ceil({x})"),
    "round": (FLOAT, FLOAT, "tf.round({x})"), "sign": (FLOAT, FLOAT, "tf.sign({x})"),
    "erf": (FLOAT, FLOAT, "tf.erf({x})"), "expm1": (FLOAT, FLOAT, "tf.expm1({x})"),
    "sqrt_abs": (FLOAT, FLOAT, "tf.sqrt(tf.abs({x}))"), "log1p_abs": (FLOAT, FLOAT, "tf.log1p(tf.abs({x}))"),
    "rsqrt_abs1": (FLOAT, FLOAT, "tf.rsqrt(tf.abs({x}) + 1.0)"),
    "recip_abs1": (FLOAT, FLOAT, "tf.reciprocal(tf.abs({x}) + 1.0)"),
    "log": (FLOAT, FLOAT, "tf.log({x})"),
    "ineg": (INT, INT, "tf.negative({x})"), "iabs": (INT, INT, "tf.abs({x})"),
    "isquare": (INT, INT, "tf.square({x})"),
    "to_int": (FLOAT, INT, "tf.cast(tf.floor({x} * 2.0), tf.int32)"),
    "to_float": (INT, FLOAT, "tf.cast({x}, tf.float32)"),
    "is_nan": (FLOAT, FLOAT, "tf.cast(tf.is_nan({x}), tf.float32)"),
}


def _infer_unary(p, x):
    in_dtype, out_dtype, _ = UNARY[p["fn"]]
    _require(x.dtype == in_dtype, f"{p['fn']} needs {in_dtype}")
    return VType(out_dtype, x.shape, x.static, x.ones)


def _code_unary(p, names):
    return UNARY[p["fn"]][2].format(x=names[0])


# name -> (operand dtype, result dtype, template over {a} and {b})
BINARY = {
    "add": (FLOAT, FLOAT, "{a} + {b}"), "sub": (FLOAT, FLOAT, "{a} - {b}"), "mul": (FLOAT, FLOAT, "{a} * {b}"),
    "maximum": (FLOAT, FLOAT, "tf.maximum({a}, {b})"), "minimum": (FLOAT, FLOAT, "tf.minimum({a}, {b})"),
    "sqdiff": (FLOAT, FLOAT, "tf.squared_difference({a}, {b})"),
    "safe_div": (FLOAT, FLOAT, "{a} / (tf.abs({b}) + 1.0)"),
    "div": (FLOAT, FLOAT, "{a} / {b}"),
    "where_gt": (FLOAT, FLOAT, "tf.where_v2({a} > {b}, {a}, {b} * 0.5)"),
    "gt_float": (FLOAT, FLOAT, "tf.cast(tf.greater({a}, {b}), tf.float32)"),
    "pow": (FLOAT, FLOAT, "tf.pow(tf.abs({a}) + 0.5, tf.tanh({b}))"),
    "atan2": (FLOAT, FLOAT, "tf.atan2({a}, {b})"),
    "iadd": (INT, INT, "{a} + {b}"), "isub": (INT, INT, "{a} - {b}"), "imul": (INT, INT, "{a} * {b}"),
    "imaximum": (INT, INT, "tf.maximum({a}, {b})"), "iminimum": (INT, INT, "tf.minimum({a}, {b})"),
    "floordiv": (INT, INT, "tf.floordiv({a}, tf.abs({b}) + 1)"),
    "floormod": (INT, INT, "tf.floormod({a}, tf.abs({b}) + 1)"),
    "truncatediv": (INT, INT, "tf.truncatediv({a}, tf.abs({b}) + 1)"),
    "ieq_float": (INT, FLOAT, "tf.cast(tf.equal({a}, {b}), tf.float32)"),
}


def _scalar_type(p, dtype: str) -> VType:
    return VType(dtype, (), ())


def _infer_binary(p, *inputs):
    in_dtype, out_dtype, _ = BINARY[p["fn"]]
    _require(len(inputs) == (1 if "scalar" in p else 2), "binary arity")
    types = list(inputs) + ([_scalar_type(p, in_dtype)] if "scalar" in p else [])
    _require(all(t.dtype == in_dtype for t in types), f"{p['fn']} needs {in_dtype}")
    shape, static = broadcast(*types)
    return VType(out_dtype, shape, static)


def _code_binary(p, names):
    names = list(names)
    if "scalar" in p:
        names.append(repr(p["scalar"]))
        if p.get("scalar_first"):
            names.reverse()
    return BINARY[p["fn"]][2].format(a=names[0], b=names[1])


# -- reductions and normalisations ----------------------------------------------------------
REDUCE_FLOAT = ("sum", "max", "min", "mean", "prod")
REDUCE_INT = ("sum", "max", "min")


def _infer_reduce(p, x):
    _require(p["fn"] in (REDUCE_FLOAT if x.dtype == FLOAT else REDUCE_INT), f"reduce_{p['fn']} on {x.dtype}")
    axes = _all_axes(p["axis"], x.rank)
    shape, static = [], []
    for i, (d, s) in enumerate(zip(x.shape, x.static)):
        if i not in axes:
            shape.append(d)
            static.append(s)
        elif p["keepdims"]:
            shape.append(1)
            static.append(True)
    return VType(x.dtype, tuple(shape), tuple(static))


def _code_reduce(p, names):
    axis = list(p["axis"]) if isinstance(p["axis"], tuple) else p["axis"]
    return f"tf.reduce_{p['fn']}({names[0]}, axis={axis!r}, keepdims={p['keepdims']})"


def _infer_arg(p, x):
    _require(x.rank >= 1, "argmax of a scalar")
    axis = _axis(p["axis"], x.rank)
    return VType(INT, x.shape[:axis] + x.shape[axis + 1:], x.static[:axis] + x.static[axis + 1:])


def _code_arg(p, names):
    return f"tf.{p['fn']}({names[0]}, axis={p['axis']}, output_type=tf.int32)"


def _infer_cumsum(p, x):
    _require(x.rank >= 1, "cumsum of a scalar")
    _axis(p["axis"], x.rank)
    return x


def _code_cumsum(p, names):
    return f"tf.cumsum({names[0]}, axis={p['axis']}, exclusive={p['exclusive']}, reverse={p['reverse']})"


def _infer_softmax(p, x):
    _float(x)
    _require(x.rank >= 1, "softmax of a scalar")
    _axis(p["axis"], x.rank)
    return x


def _code_softmax(p, names):
    if p["fn"] == "l2_normalize":
        return f"tf.nn.l2_normalize({names[0]}, axis={p['axis']})"
    return f"tf.nn.{p['fn']}({names[0]}, axis={p['axis']})"


# -- shape manipulation ------------------------------------------------------------------------
def _infer_transpose(p, x):
    perm = p["perm"] if p["perm"] is not None else tuple(reversed(range(x.rank)))
    _require(sorted(perm) == list(range(x.rank)), f"perm {perm} for rank {x.rank}")
    ones = tuple(x.specialised_one(i) for i in perm)
    return VType(x.dtype, tuple(x.shape[i] for i in perm), tuple(x.static[i] for i in perm), ones)


def _code_transpose(p, names):
    if p["perm"] is None:
        return f"tf.transpose({names[0]})"
    return f"tf.transpose({names[0]}, {list(p['perm'])!r})"


def _infer_reshape(p, x):
    target = list(p["shape"])
    _require(target.count(-1) <= 1 and all(d == -1 or d >= 1 for d in target), f"bad target {target}")
    known = math.prod(d for d in target if d != -1)
    if -1 in target:
        _require(x.size % known == 0, f"cannot reshape {x.shape} to {target}")
        target[target.index(-1)] = x.size // known
    _require(math.prod(target) == x.size, f"cannot reshape {x.shape} to {target}")
    static = tuple(d != -1 or x.fully_static for d in p["shape"])
    return VType(x.dtype, tuple(target), static)


def _code_reshape(p, names):
    return f"tf.reshape({names[0]}, {list(p['shape'])!r})"


def _infer_expand_dims(p, x):
    axis = p["axis"]
    _require(-x.rank - 1 <= axis <= x.rank, "expand_dims axis")
    axis %= x.rank + 1
    return VType(x.dtype, x.shape[:axis] + (1,) + x.shape[axis:], x.static[:axis] + (True,) + x.static[axis:])


def _code_expand_dims(p, names):
    return f"tf.expand_dims({names[0]}, {p['axis']})"


def _infer_squeeze(p, x):
    axes = _all_axes(list(p["axes"]), x.rank)
    _require(all(x.shape[a] == 1 and x.static[a] for a in axes), "squeeze of a dim that is not a static 1")
    keep = [i for i in range(x.rank) if i not in axes]
    return VType(x.dtype, tuple(x.shape[i] for i in keep), tuple(x.static[i] for i in keep))


def _code_squeeze(p, names):
    return f"tf.squeeze({names[0]}, {list(p['axes'])!r})"


def _infer_reverse(p, x):
    _all_axes(list(p["axes"]), x.rank)
    return x


def _code_reverse(p, names):
    return f"tf.reverse({names[0]}, {list(p['axes'])!r})"


def _slice_length(n: int, start, stop, step) -> int:
    return len(range(*slice(start, stop, step).indices(n)))


def _infer_getitem(p, x):
    shape, static, dim = [], [], 0
    items = p["items"]
    explicit = sum(1 for item in items if item[0] in ("index", "range"))
    for item in items:
        if item[0] == "new":
            shape.append(1)
            static.append(True)
        elif item[0] == "ellipsis":
            count = x.rank - explicit
            _require(count >= 0, "too many indices")
            shape.extend(x.shape[dim:dim + count])
            static.extend(x.static[dim:dim + count])
            dim += count
        else:
            _require(dim < x.rank, "too many indices")
            n = x.shape[dim]
            if item[0] == "index":
                _require(-n <= item[1] < n, f"index {item[1]} out of range for {n}")
            else:
                _, start, stop, step = item
                length = _slice_length(n, start, stop, step)
                _require(length >= 1, "empty slice")
                shape.append(length)
                static.append(x.static[dim])
            dim += 1
    if not any(item[0] == "ellipsis" for item in items):
        shape.extend(x.shape[dim:])
        static.extend(x.static[dim:])
    return VType(x.dtype, tuple(shape), tuple(static))


def _item_text(item) -> str:
    if item[0] == "new":
        return "tf.newaxis"
    if item[0] == "ellipsis":
        return "..."
    if item[0] == "index":
        return str(item[1])
    _, start, stop, step = item
    text = f"{'' if start is None else start}:{'' if stop is None else stop}"
    return text + (f":{step}" if step is not None else "")


def _code_getitem(p, names):
    return f"{names[0]}[{', '.join(_item_text(i) for i in p['items'])}]"


def _infer_slice(p, x):
    begin, size = p["begin"], p["size"]
    _require(len(begin) == len(size) == x.rank, "slice rank")
    shape = []
    for b, s, n in zip(begin, size, x.shape):
        length = n - b if s == -1 else s
        _require(0 <= b and length >= 1 and b + length <= n, f"slice {b}+{s} of {n}")
        shape.append(length)
    static = tuple(st if s == -1 else True for st, s in zip(x.static, size))
    return VType(x.dtype, tuple(shape), static)


def _code_slice(p, names):
    return f"tf.slice({names[0]}, {list(p['begin'])!r}, {list(p['size'])!r})"


def _infer_concat(p, *inputs):
    _require(len(inputs) >= 2, "concat of one")
    dtype = _same_dtype(*inputs)
    rank = inputs[0].rank
    _require(rank >= 1 and all(t.rank == rank for t in inputs), "concat ranks")
    axis = _axis(p["axis"], rank)
    shape, static = list(inputs[0].shape), list(inputs[0].static)
    for i in range(rank):
        if i == axis:
            shape[i] = sum(t.shape[i] for t in inputs)
        else:
            _require(all(t.shape[i] == shape[i] for t in inputs), "concat dims differ")
        static[i] = all(t.static[i] for t in inputs)
    return VType(dtype, tuple(shape), tuple(static))


def _code_concat(p, names):
    return f"tf.concat([{', '.join(names)}], {p['axis']})"


def _infer_stack(p, *inputs):
    dtype = _same_dtype(*inputs)
    first = inputs[0]
    _require(all(t.shape == first.shape for t in inputs), "stack shapes differ")
    axis = p["axis"]
    _require(-first.rank - 1 <= axis <= first.rank, "stack axis")
    axis %= first.rank + 1
    static = tuple(all(t.static[i] for t in inputs) for i in range(first.rank))
    return VType(dtype, first.shape[:axis] + (len(inputs),) + first.shape[axis:],
                 static[:axis] + (True,) + static[axis:])


def _code_stack(p, names):
    return f"tf.stack([{', '.join(names)}], axis={p['axis']})"


def _infer_pad(p, x):
    pads = p["pads"]
    _require(len(pads) == x.rank, "paddings rank")
    limit = {"CONSTANT": None, "REFLECT": 0, "SYMMETRIC": 1}[p["mode"]]
    for (lo, hi), n in zip(pads, x.shape):
        _require(lo >= 0 and hi >= 0, "negative padding")
        if limit is not None:
            _require(max(lo, hi) <= n - 1 + limit, f"{p['mode']} padding {lo},{hi} of {n}")
    shape = tuple(n + lo + hi for (lo, hi), n in zip(pads, x.shape))
    return VType(x.dtype, shape, x.static)


def _code_pad(p, names):
    pads = [list(pair) for pair in p["pads"]]
    if p["mode"] == "CONSTANT":
        value = p.get("value", 0)
        return f"tf.pad({names[0]}, {pads!r}, constant_values={value!r})"
    return f"tf.pad({names[0]}, {pads!r}, mode={p['mode']!r})"


def _infer_tile(p, x):
    _require(len(p["multiples"]) == x.rank and all(m >= 1 for m in p["multiples"]), "tile multiples")
    return VType(x.dtype, tuple(d * m for d, m in zip(x.shape, p["multiples"])), x.static)


def _code_tile(p, names):
    return f"tf.tile({names[0]}, {list(p['multiples'])!r})"


def _infer_gather(p, x, *index_node):
    _require(x.rank >= 1, "gather from a scalar")
    axis = _axis(p["axis"], x.rank)
    n = x.shape[axis]
    if index_node:
        (idx,) = index_node
        _require(idx.dtype == INT, "gather indices must be int32")
        _require(1 <= p["modulus"] <= n, "gather modulus out of range")
        idx_shape, idx_static = idx.shape, idx.static
    else:
        indices = p["indices"]
        flat = list(_flatten(indices))
        _require(flat and all(0 <= i < n for i in flat), f"gather indices {indices} for a dim of {n}")
        idx_shape = _nested_shape(indices)
        idx_static = (True,) * len(idx_shape)
    return VType(x.dtype, x.shape[:axis] + idx_shape + x.shape[axis + 1:],
                 x.static[:axis] + idx_static + x.static[axis + 1:])


def _flatten(nested):
    if isinstance(nested, (list, tuple)):
        for item in nested:
            yield from _flatten(item)
    else:
        yield nested


def _nested_shape(nested) -> tuple:
    if isinstance(nested, (list, tuple)):
        return (len(nested),) + (_nested_shape(nested[0]) if nested else ())
    return ()


def _listify(nested):
    return [_listify(i) for i in nested] if isinstance(nested, (list, tuple)) else nested


def _code_gather(p, names):
    if len(names) == 2:
        return f"tf.gather({names[0]}, tf.floormod({names[1]}, {p['modulus']}), axis={p['axis']})"
    return f"tf.gather({names[0]}, {_listify(p['indices'])!r}, axis={p['axis']})"


def _infer_split(p, x):
    _require(x.rank >= 1, "split of a scalar")
    axis = _axis(p["axis"], x.rank)
    _require(x.static[axis], "split needs a static dim")
    n, num = x.shape[axis], p["num"]
    _require(num >= 1 and n % num == 0 and 0 <= p["index"] < num, f"split {n} in {num}")
    if p["fn"] == "unstack":
        _require(num == n, "unstack count")
        return VType(x.dtype, x.shape[:axis] + x.shape[axis + 1:], x.static[:axis] + x.static[axis + 1:])
    return VType(x.dtype, x.shape[:axis] + (n // num,) + x.shape[axis + 1:], x.static)


def _code_split(p, names):
    if p["fn"] == "unstack":
        return f"tf.unstack({names[0]}, axis={p['axis']})[{p['index']}]"
    return f"tf.split({names[0]}, {p['num']}, axis={p['axis']})[{p['index']}]"


def _infer_broadcast_to(p, x):
    target = VType(x.dtype, tuple(p["shape"]), (True,) * len(p["shape"]))
    _require(target.rank >= x.rank, "broadcast_to a lower rank")
    shape, _ = broadcast(x, target)
    _require(shape == target.shape, f"cannot broadcast {x.shape} to {target.shape}")
    return target


def _code_broadcast_to(p, names):
    return f"tf.broadcast_to({names[0]}, {list(p['shape'])!r})"


# -- contractions, convolutions, pooling ------------------------------------------------------------
def _infer_matmul(p, a, b):
    _float(a)
    _float(b)
    _require(a.rank == b.rank and a.rank in (2, 3), "matmul ranks")
    _require(a.shape[:-2] == b.shape[:-2], "matmul batch dims")
    m, k = (a.shape[-1], a.shape[-2]) if p["ta"] else (a.shape[-2], a.shape[-1])
    k2, n = (b.shape[-1], b.shape[-2]) if p["tb"] else (b.shape[-2], b.shape[-1])
    _require(k == k2, f"matmul inner dims {k} != {k2}")
    ms = a.static[-1] if p["ta"] else a.static[-2]
    ns = b.static[-2] if p["tb"] else b.static[-1]
    batch_static = tuple(x and y for x, y in zip(a.static[:-2], b.static[:-2]))
    return VType(FLOAT, a.shape[:-2] + (m, n), batch_static + (ms, ns))


def _code_matmul(p, names):
    flags = "".join([", transpose_a=True" if p["ta"] else "", ", transpose_b=True" if p["tb"] else ""])
    return f"tf.matmul({names[0]}, {names[1]}{flags})"


def _window_out(n: int, k: int, stride: int, dilation: int, padding: str) -> int:
    if padding == "SAME":
        return -(-n // stride)
    effective = (k - 1) * dilation + 1
    _require(n >= effective, f"window {effective} larger than {n}")
    return (n - effective) // stride + 1


def _infer_conv(p, x, w):
    _float(x)
    _float(w)
    _require(x.rank == 4 and w.rank == 4, "conv2d ranks")
    _require(x.static[3] and x.shape[3] == w.shape[2], "conv2d channels")
    _require(p["stride"] == 1 or p["dilation"] == 1, "strides and dilations together")
    h = _window_out(x.shape[1], w.shape[0], p["stride"], p["dilation"], p["padding"])
    wd = _window_out(x.shape[2], w.shape[1], p["stride"], p["dilation"], p["padding"])
    return VType(FLOAT, (x.shape[0], h, wd, w.shape[3]), x.static[:3] + (True,))


def _code_conv(p, names):
    s, d = p["stride"], p["dilation"]
    dil = f", dilations=[1, {d}, {d}, 1]" if d != 1 else ""
    return f"tf.nn.conv2d({names[0]}, {names[1]}, strides=[1, {s}, {s}, 1], padding={p['padding']!r}{dil})"


def _infer_pool(p, x):
    _float(x)
    _require(x.rank == 4, "pooling needs rank 4")
    k, s = p["k"], p["stride"]
    h = _window_out(x.shape[1], k, s, 1, p["padding"])
    w = _window_out(x.shape[2], k, s, 1, p["padding"])
    return VType(FLOAT, (x.shape[0], h, w, x.shape[3]), x.static)


def _code_pool(p, names):
    k, s = p["k"], p["stride"]
    return f"tf.nn.{p['fn']}({names[0]}, [1, {k}, {k}, 1], [1, {s}, {s}, 1], {p['padding']!r})"


def _infer_bias_add(p, x, b):
    _float(x)
    _float(b)
    _require(x.rank >= 2 and b.rank == 1 and b.shape[0] == x.shape[-1], "bias_add shapes")
    return x


def _code_bias_add(p, names):
    return f"tf.nn.bias_add({names[0]}, {names[1]})"


# -- shapes as values, gradients ----------------------------------------------------------------
DYNAMIC = {
    "fill": "tf.fill(tf.shape({x}), 1.5)",
    "zeros_like": "tf.zeros_like({x}) + {y}",
    "broadcast_like": "tf.broadcast_to({y}, tf.shape({x}))",
    "reshape_like": "tf.reshape({y}, tf.shape({x}))",
}


def _infer_dynamic(p, x, *rest):
    fn = p["fn"]
    if fn == "fill":
        _require(not rest, "fill takes one input")
        return VType(FLOAT, x.shape, x.static)
    (y,) = rest
    _require(x.dtype == y.dtype or fn == "reshape_like", "operands of different dtypes")
    if fn == "reshape_like":
        _require(x.size == y.size, "reshape to a shape of another size")
        return VType(y.dtype, x.shape, x.static)
    shape, static = broadcast(x, y)
    _require(shape == x.shape, f"{y.shape} does not broadcast to {x.shape}")
    return VType(y.dtype if fn == "broadcast_like" else x.dtype, x.shape,
                 x.static if fn == "broadcast_like" else static)


def _code_dynamic(p, names):
    return DYNAMIC[p["fn"]].format(x=names[0], y=names[1] if len(names) > 1 else "")


def _infer_gradient(p, y, w, x):
    _float(y)
    _float(x)
    _require(w.shape == y.shape and w.dtype == FLOAT, "gradient weights must have the output's shape")
    return x


def _code_gradient(p, names):
    return f"tf.gradients(tf.reduce_sum({names[0]} * {names[1]}), {names[2]})[0]"


# -- control flow -----------------------------------------------------------------------------
# Predicates are maxima (exact on every backend, so compiled and evaluated runs take the
# same branch); loop bodies apply a bounded unary op a fixed number of times.
def _infer_cond(p, x, pred):
    for fn in (p["fn_true"], p["fn_false"]):
        in_dtype, out_dtype, _ = UNARY[fn]
        _require(in_dtype == x.dtype and out_dtype == x.dtype, f"{fn} must keep {x.dtype}")
    _require(pred.size > 0, "the predicate needs elements")
    return x


def _code_cond(p, names):
    x, pred = names
    then = UNARY[p["fn_true"]][2].format(x=x)
    other = UNARY[p["fn_false"]][2].format(x=x)
    return f"tf.cond(tf.reduce_max(tf.cast({pred}, tf.float32)) > 0.5, lambda: {then}, lambda: {other})"


def _infer_loop(p, x):
    in_dtype, out_dtype, _ = UNARY[p["fn"]]
    _require(in_dtype == x.dtype and out_dtype == x.dtype, f"{p['fn']} must keep {x.dtype}")
    return x


def _code_loop(p, names):
    body = UNARY[p["fn"]][2].format(x="v")
    return f"tf.while_loop(lambda i, v: i < {p['count']}, lambda i, v: (i + 1, {body}), [tf.constant(0), {names[0]}])[1]"


KINDS = {
    "cond": Kind(_infer_cond, _code_cond),
    "loop": Kind(_infer_loop, _code_loop),
    "dynamic": Kind(_infer_dynamic, _code_dynamic),
    "gradient": Kind(_infer_gradient, _code_gradient),
    "placeholder": Kind(_infer_leaf, _code_placeholder, leaf=True),
    "constant": Kind(_infer_leaf, _code_constant, leaf=True),
    "unary": Kind(_infer_unary, _code_unary),
    "binary": Kind(_infer_binary, _code_binary),
    "reduce": Kind(_infer_reduce, _code_reduce),
    "arg": Kind(_infer_arg, _code_arg),
    "cumsum": Kind(_infer_cumsum, _code_cumsum),
    "softmax": Kind(_infer_softmax, _code_softmax),
    "transpose": Kind(_infer_transpose, _code_transpose),
    "reshape": Kind(_infer_reshape, _code_reshape),
    "expand_dims": Kind(_infer_expand_dims, _code_expand_dims),
    "squeeze": Kind(_infer_squeeze, _code_squeeze),
    "reverse": Kind(_infer_reverse, _code_reverse),
    "getitem": Kind(_infer_getitem, _code_getitem),
    "slice": Kind(_infer_slice, _code_slice),
    "concat": Kind(_infer_concat, _code_concat),
    "stack": Kind(_infer_stack, _code_stack),
    "pad": Kind(_infer_pad, _code_pad),
    "tile": Kind(_infer_tile, _code_tile),
    "gather": Kind(_infer_gather, _code_gather),
    "split": Kind(_infer_split, _code_split),
    "broadcast_to": Kind(_infer_broadcast_to, _code_broadcast_to),
    "matmul": Kind(_infer_matmul, _code_matmul),
    "conv2d": Kind(_infer_conv, _code_conv),
    "pool": Kind(_infer_pool, _code_pool),
    "bias_add": Kind(_infer_bias_add, _code_bias_add),
}


def infer(node: Node, input_types: list) -> VType:
    """The type of ``node`` given its inputs' types (raises :class:`Invalid`)."""
    try:
        return KINDS[node.kind].infer(node.params, *input_types)
    except (KeyError, IndexError, TypeError) as e:
        raise Invalid(f"{node.kind}: {e}") from None


def code(node: Node, input_names: list) -> str:
    return KINDS[node.kind].code(node.params, input_names)
