"""numpy semantics of every core op: the oracle for codegen tests and the engine of
constant folding (never the executor behind Session.run).

Entry points:

* :func:`evaluate` runs ``main`` of a Module (or a given Function) on numpy arguments.
* :func:`evaluate_op` evaluates one op on operand values (constant folding).

Conventions (see ``tfc/ir/ops.py`` for the ones fixed for every backend):

* Every result has exactly the op's element type and the shape of its result type with
  the symbols bound; the evaluator checks this after every op. i8 arithmetic wraps, f16
  stays f16.
* f16 arithmetic and transcendental functions are computed in f32 and rounded once; f16
  sums and products (``reduce``, ``reduce_window``, ``dot``, ``conv``, ``scatter_add``,
  ``select_and_scatter``) accumulate in f32. f32 is computed in f32, f64 in f64.
* Integer ``div``/``rem``/``pow`` and float -> int ``convert`` follow ops.py: no traps,
  no numpy warnings (everything runs under ``np.errstate(all="ignore")``).
* ``sign`` keeps the sign of zero and NaN (``sign(-0.0) == -0.0``), as XLA does.
* ``round_bf16`` works on the f32 bits (round to nearest even at bit 16), NaN unchanged.
* ``argmax``/``argmin`` and ``select_and_scatter`` pick the first extreme in row-major
  order, and NaN counts as the extreme (np.argmax semantics). Over an empty dim argmax
  and argmin yield 0. ``select_and_scatter`` never selects a padding position; a window
  made only of padding drops its source value.
* Results never alias the arguments, the refs or the operands.
* A failing ``check`` and an out-of-range ``gather`` index raise :class:`CheckFailure`
  with the code and record a compiled program returns and TF's message
  (tfc/program_errors.py); :func:`check_failure` is the ``check`` semantics on a value.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Mapping, Optional, Sequence

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from tfc import program_errors as checks

from . import philox
from .core import Block, Function, Module, Operation
from .dims import dim_eval
from .types import RefType, TensorType


class EvaluationError(ValueError):
    """An op that cannot be evaluated: bad arguments, an out-of-range gather index, ..."""


class CheckFailure(EvaluationError):
    """A run-time error of the program (a failing ``check``, an out-of-range ``gather``
    index): the code and error record a compiled program returns, the tf.errors class name
    (``error``) and TF's ``message``."""

    def __init__(self, code: int, record: list, label_values=None):
        self.code = code
        self.record = record
        self.error, self.message = checks.describe(code, record, label_values)
        super().__init__(self.message)


@dataclass
class _Context:
    env: dict  # symbol name -> int
    module: Optional[Module]
    host: Optional[Callable] = None  # host(op names, tensor names, arrays): what a host_call runs


# -- entry points ----------------------------------------------------------------------------
def evaluate(function_or_module, args: Sequence, *, state: Optional[Mapping] = None,
             host: Optional[Callable] = None) -> list:
    """Run ``main`` of a Module (or the given Function) and return its results.

    ``args`` has one entry per function argument: a numpy array for a tensor argument
    (its dtype and shape must match the type; the shape binds the symbols), and for a
    ``ref<...>`` argument the array that ``assign`` (and ``rng``, for its state) updates
    in place. ``state`` optionally supplies ref buffers by argument name hint (or index)
    for ref arguments whose ``args`` entry is ``None``: a variable store. ``host(op names,
    tensor names, arrays)`` is called where a ``host_call`` runs.
    Results are fresh arrays.
    """
    if isinstance(function_or_module, Module):
        module, function = function_or_module, function_or_module.main
    elif isinstance(function_or_module, Function):
        module, function = None, function_or_module
    else:
        raise TypeError(f"evaluate takes a Module or a Function, got {type(function_or_module).__name__}")
    values = _supply_refs(function, list(args), state or {})
    ctx = _Context(bind_symbols(function, values), module, host)
    return [np.array(r, copy=True) for r in _run_block(function.body, values, ctx)]


def evaluate_op(op: Operation, operand_values: Sequence, env: Optional[Mapping] = None, *,
                module: Optional[Module] = None) -> list:
    """Evaluate one op; ``env`` maps symbol names to ints (empty for static shapes).

    Fusion ops evaluate their region; ``call`` needs ``module``.
    """
    return _evaluate_op(op, list(operand_values), _Context(dict(env or {}), module))


def _arg_label(function: Function, i: int) -> str:
    hint = function.args[i].name_hint
    return f"argument {i} (%{hint})" if hint else f"argument {i}"


def _supply_refs(function: Function, args: list, state: Mapping) -> list:
    if len(args) != len(function.args):
        raise EvaluationError(f"@{function.name} takes {len(function.args)} arguments, got {len(args)}")
    for i, (arg, value) in enumerate(zip(function.args, args)):
        if value is None and isinstance(arg.type, RefType):
            for key in (arg.name_hint, i):
                if key is not None and key in state:
                    args[i] = state[key]
                    break
            else:
                raise EvaluationError(f"{_arg_label(function, i)}: no buffer given for {arg.type}")
    return args


def bind_symbols(function: Function, args: Sequence) -> dict:
    """Check argument dtypes/shapes against the types and bind the shape symbols."""
    env: dict = {}
    for i, (arg, value) in enumerate(zip(function.args, args)):
        label = _arg_label(function, i)
        is_ref = isinstance(arg.type, RefType)
        t = arg.type.tensor if is_ref else arg.type
        if not isinstance(value, np.ndarray) and (is_ref or not isinstance(value, np.generic)):
            raise EvaluationError(f"{label}: expected a numpy array for {arg.type}, got {type(value).__name__}")
        if value.dtype != t.elem.np_dtype or value.ndim != t.rank:
            raise EvaluationError(f"{label}: expected {arg.type}, got a {value.dtype} array of shape {value.shape}")
        for d, n in zip(t.shape, value.shape):
            if not isinstance(d, int) and d.is_symbol():
                name = next(iter(d.symbols()))
                if env.setdefault(name, n) != n:
                    raise EvaluationError(f"{label}: symbol {name} is {env[name]} elsewhere but {n} here "
                                          f"(shape {value.shape} for {arg.type})")
    for i, (arg, value) in enumerate(zip(function.args, args)):
        t = arg.type.tensor if isinstance(arg.type, RefType) else arg.type
        try:
            expected = tuple(dim_eval(d, env) for d in t.shape)
        except KeyError as e:
            raise EvaluationError(f"{_arg_label(function, i)}: symbol {e.args[0]} in {t} is not bound by "
                                  f"any argument's plain dim") from None
        if expected != tuple(np.shape(value)):
            raise EvaluationError(f"{_arg_label(function, i)}: expected {arg.type} = shape {expected}, "
                                  f"got shape {np.shape(value)}")
    return env


# -- the interpreter loop --------------------------------------------------------------------
def _run_block(block: Block, arg_values: Sequence, ctx: _Context) -> list:
    """Evaluate a block's ops in order; return the values its terminator names."""
    values = {arg: np.asarray(v) if not isinstance(v, np.ndarray) else v
              for arg, v in zip(block.args, arg_values)}
    for op in block.ops:
        try:
            operands = [values[v] for v in op.operands]
        except KeyError:
            raise EvaluationError(f"'{op.name}' uses a value defined outside its block or later") from None
        if op.name in ("return", "yield"):
            return operands
        for value, result in zip(op.results, _evaluate_op(op, operands, ctx)):
            values[value] = result
    raise EvaluationError("block has no terminator")


def _evaluate_op(op: Operation, operands: list, ctx: _Context) -> list:
    handler = _HANDLERS.get(op.name)
    if handler is None:
        raise EvaluationError(f"no evaluation rule for op '{op.name}'")
    try:
        with np.errstate(all="ignore"):
            raw = handler(op, operands, ctx)
    except EvaluationError:
        raise
    except Exception as exc:  # a malformed op: report it with its location
        raise EvaluationError(f"evaluating '{op.name}'{_where(op)}: {exc}") from exc
    results = [] if raw is None else list(raw) if isinstance(raw, (list, tuple)) else [raw]
    if len(results) != len(op.results):
        raise EvaluationError(f"'{op.name}' produced {len(results)} results for {len(op.results)}")
    return [_checked(op, i, np.asarray(r), operands, ctx) for i, r in enumerate(results)]


def _where(op: Operation) -> str:
    return f" at {op.loc}" if op.loc is not None else ""


def _checked(op: Operation, i: int, value: np.ndarray, operands: list, ctx: _Context) -> np.ndarray:
    """Make sure result ``i`` has the op's type and does not alias an operand."""
    t = op.results[i].type
    t = t.tensor if isinstance(t, RefType) else t
    shape = _shape(t, ctx)
    if value.dtype != t.elem.np_dtype or value.shape != shape:
        raise EvaluationError(f"evaluator bug: '{op.name}' result {i} is a {value.dtype} array of shape "
                              f"{value.shape}, expected {t} = {shape}")
    if any(isinstance(x, np.ndarray) and np.may_share_memory(value, x) for x in operands):
        value = value.copy()
    return value


def _shape(t: TensorType, ctx: _Context) -> tuple:
    try:
        return tuple(dim_eval(d, ctx.env) for d in t.shape)
    except KeyError as e:
        raise EvaluationError(f"symbol {e.args[0]} in {t} is not bound") from None


def _result(op: Operation, ctx: _Context, i: int = 0) -> tuple:
    """(shape, numpy dtype) of result ``i``."""
    t = op.results[i].type
    return _shape(t, ctx), t.elem.np_dtype


def _dims(values, ctx: _Context) -> list:
    try:
        return [dim_eval(d, ctx.env) for d in values]
    except KeyError as e:
        raise EvaluationError(f"symbol {e.args[0]} is not bound") from None


# -- numeric helpers -------------------------------------------------------------------------
F16, F32, F64 = np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64)


def _compute_dtype(dtype) -> np.dtype:
    """f16 computes (and accumulates) in f32; everything else in itself."""
    return F32 if np.dtype(dtype) == F16 else np.dtype(dtype)


def _in_compute(fn: Callable) -> Callable:
    """Lift a numpy function of same-dtype arrays so that f16 is computed in f32."""
    def apply(*xs):
        dtype = xs[0].dtype
        compute = _compute_dtype(dtype)
        return np.asarray(fn(*(x.astype(compute) for x in xs))).astype(dtype)

    return apply


def lowest(dtype) -> object:
    """The identity of max: -inf for floats, the minimum for integers."""
    dtype = np.dtype(dtype)
    return -np.inf if dtype.kind == "f" else np.iinfo(dtype).min


def highest(dtype) -> object:
    """The identity of min: +inf for floats, the maximum for integers."""
    dtype = np.dtype(dtype)
    return np.inf if dtype.kind == "f" else np.iinfo(dtype).max


def convert_array(x: np.ndarray, dtype) -> np.ndarray:
    """``convert``: saturating float -> int with NaN -> 0, -> pred is ``x != 0``,
    pred -> number 0/1, int -> int wraps, everything else rounds to nearest."""
    dtype = np.dtype(dtype)
    with np.errstate(all="ignore"):
        if dtype == np.bool_:
            return np.asarray(x != 0)
        if x.dtype.kind == "f" and dtype.kind in "iu":
            return _saturating_float_to_int(x, dtype)
        return x.astype(dtype)


def _saturating_float_to_int(x: np.ndarray, dtype: np.dtype) -> np.ndarray:
    info = np.iinfo(dtype)
    lo, hi = float(info.min), float(info.max) + 1.0  # both exact powers of two (or 0)
    t = np.trunc(x.astype(np.float64))
    inside = (t >= lo) & (t < hi)  # False for NaN
    result = np.where(inside, t, 0.0).astype(dtype)
    result = np.where(t >= hi, info.max, result)
    return np.where(t < lo, info.min, result).astype(dtype)


# -- elementwise -----------------------------------------------------------------------------
def _erf(x: np.ndarray) -> np.ndarray:
    return np.vectorize(math.erf, otypes=[np.float64])(x.astype(np.float64)).astype(x.dtype)


def _logistic(x: np.ndarray) -> np.ndarray:
    """1 / (1 + exp(-x)), written so that neither branch overflows."""
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1 / (1 + e), e / (1 + e))


def _rsqrt(x: np.ndarray) -> np.ndarray:
    return np.reciprocal(np.sqrt(x))


def _sign(x: np.ndarray) -> np.ndarray:
    if x.dtype.kind != "f":
        return np.sign(x)
    one = np.ones_like(x)
    return np.where(x > 0, one, np.where(x < 0, -one, x))  # keeps +-0 and NaN


def _not(x: np.ndarray) -> np.ndarray:
    return np.logical_not(x) if x.dtype == np.bool_ else np.invert(x)


def _round_bf16(x: np.ndarray) -> np.ndarray:
    """f32 -> the nearest bfloat16 value, as f32: add 0x7FFF plus the lowest kept bit (ties
    to even) to the bits, then clear the low 16. Overflow carries into the exponent (the
    largest finite values become +-inf); NaN passes unchanged (the carry could turn a NaN
    with a small payload into inf)."""
    x = np.array(x, dtype=np.float32, order="C")  # (ascontiguousarray would make 0-d 1-d)
    bits = x.view(np.uint32).astype(np.uint64)  # no uint32 wraparound for NaN bits
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000).astype(np.uint32).view(np.float32)
    return np.where(np.isnan(x), x, rounded)


UNARY_FUNCTIONS: dict[str, Callable] = {
    "exp": _in_compute(np.exp), "expm1": _in_compute(np.expm1), "log": _in_compute(np.log),
    "log1p": _in_compute(np.log1p), "sqrt": _in_compute(np.sqrt), "rsqrt": _in_compute(_rsqrt),
    "tanh": _in_compute(np.tanh), "logistic": _in_compute(_logistic), "erf": _erf,
    "sin": _in_compute(np.sin), "cos": _in_compute(np.cos), "floor": np.floor, "ceil": np.ceil,
    "round": np.rint, "neg": np.negative, "abs": np.abs, "sign": _sign, "not": _not,
    "round_bf16": _round_bf16,
}


def _int_div_rem(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Truncating quotient and remainder with ops.py's rules for 0 and INT_MIN / -1."""
    zero = y == 0
    if x.dtype.kind == "i":
        overflow = (x == np.iinfo(x.dtype).min) & (y == -1)
    else:
        overflow = np.zeros(x.shape, dtype=bool)
    safe = np.where(zero | overflow, np.ones_like(y), y)
    rem = np.fmod(x, safe)  # C's %, sign of the dividend
    quotient = (x - rem) // safe  # exact division
    quotient = np.where(zero, np.array(-1).astype(x.dtype), quotient)  # all ones (255 for u8)
    rem = np.where(zero, x, rem)
    return quotient.astype(x.dtype), rem.astype(x.dtype)


def _div(x, y):
    return _int_div_rem(x, y)[0] if x.dtype.kind in "iu" else _in_compute(np.divide)(x, y)


def _rem(x, y):
    return _int_div_rem(x, y)[1] if x.dtype.kind in "iu" else _in_compute(np.fmod)(x, y)


def _int_pow(base: np.ndarray, exponent: np.ndarray) -> np.ndarray:
    """Repeated squaring with wraparound; a negative exponent gives 0 except for bases
    1 (-> 1) and -1 (-> +-1 by the exponent's parity)."""
    dtype = base.dtype
    negative = exponent < 0
    e = np.where(negative, 0, exponent).astype(np.int64)
    result, square = np.ones_like(base), base.copy()
    while np.any(e > 0):
        result = np.where(e & 1, result * square, result).astype(dtype)
        square = (square * square).astype(dtype)
        e = e >> 1
    inverse = np.where(base == 1, 1, 0).astype(dtype)
    if dtype.kind == "i":
        odd = (exponent & 1).astype(bool)
        inverse = np.where(base == -1, np.where(odd, -1, 1), inverse).astype(dtype)
    return np.where(negative, inverse, result).astype(dtype)


def _pow(x, y):
    return _int_pow(x, y) if x.dtype.kind in "iu" else _in_compute(np.power)(x, y)


def _arith(fn: Callable) -> Callable:
    """add/sub/mul: numpy wraps integers; f16 goes through f32."""
    return lambda x, y: fn(x, y) if x.dtype.kind in "iub" else _in_compute(fn)(x, y)


BINARY_FUNCTIONS: dict[str, Callable] = {
    "add": _arith(np.add), "sub": _arith(np.subtract), "mul": _arith(np.multiply),
    "div": _div, "rem": _rem, "pow": _pow, "max": np.maximum, "min": np.minimum,
    "and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor,
    "atan2": _in_compute(np.arctan2),
}

COMPARE_FUNCTIONS: dict[str, Callable] = {
    "eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal,
    "gt": np.greater, "ge": np.greater_equal,
}


def _eval_unary(op, xs, ctx):
    return np.asarray(UNARY_FUNCTIONS[op.name](xs[0])).astype(xs[0].dtype)


def _eval_binary(op, xs, ctx):
    return np.asarray(BINARY_FUNCTIONS[op.name](xs[0], xs[1])).astype(xs[0].dtype)


def _eval_compare(op, xs, ctx):
    return np.asarray(COMPARE_FUNCTIONS[op.attrs["dir"]](xs[0], xs[1]))


def _eval_select(op, xs, ctx):
    return np.where(xs[0], xs[1], xs[2])


def _eval_convert(op, xs, ctx):
    return convert_array(xs[0], _result(op, ctx)[1])


# -- generators ------------------------------------------------------------------------------
def _eval_constant(op, xs, ctx):
    shape, dtype = _result(op, ctx)
    value = np.asarray(op.attrs["value"]).astype(dtype)
    if value.shape != shape:
        value = np.broadcast_to(value.reshape(()), shape)
    return np.array(value, copy=True)


def _eval_iota(op, xs, ctx):
    shape, dtype = _result(op, ctx)
    axis = op.attrs["dim"]
    counts = np.arange(shape[axis], dtype=np.int64).reshape([-1 if i == axis else 1 for i in range(len(shape))])
    return np.broadcast_to(counts, shape).astype(dtype)


def _eval_dims(op, xs, ctx):
    return np.array(_dims(op.attrs["values"], ctx), dtype=np.int64).astype(_result(op, ctx)[1])


# -- shape ops -------------------------------------------------------------------------------
def _eval_broadcast(op, xs, ctx):
    x = xs[0]
    shape = _result(op, ctx)[0]
    view = [1] * len(shape)
    for i, d in enumerate(op.attrs["dims"]):
        view[d] = x.shape[i]
    return np.broadcast_to(x.reshape(view), shape).copy()


def _eval_reshape(op, xs, ctx):
    return xs[0].reshape(_result(op, ctx)[0])


def _eval_transpose(op, xs, ctx):
    return np.transpose(xs[0], op.attrs["perm"])


def _eval_slice(op, xs, ctx):
    x = xs[0]
    start, limit = _dims(op.attrs["start"], ctx), _dims(op.attrs["limit"], ctx)
    stride = op.attrs.get("stride") or [1] * x.ndim
    return x[tuple(slice(s, l, k) for s, l, k in zip(start, limit, stride))]


def _eval_dynamic_slice(op, xs, ctx):
    x, starts = xs[0], [int(s) for s in xs[1:]]
    sizes = _dims(op.attrs["sizes"], ctx)
    index = []
    for start, size, extent in zip(starts, sizes, x.shape):
        start = min(max(start, 0), extent - size)  # clamp so the window fits (XLA)
        index.append(slice(start, start + size))
    return x[tuple(index)]


def _eval_concatenate(op, xs, ctx):
    return np.concatenate(xs, axis=op.attrs["dim"])


def pad_array(x: np.ndarray, value, low: Sequence[int], high: Sequence[int],
              interior: Optional[Sequence[int]] = None) -> np.ndarray:
    """XLA pad: ``interior`` copies of ``value`` between elements, then ``low``/``high``
    at the edges; a negative edge crops. Source element ``j`` of a dim lands at
    ``low + j * (interior + 1)`` when that is inside the result."""
    interior = list(interior or [0] * x.ndim)
    shape = [d + lo + hi + max(d - 1, 0) * k for d, lo, hi, k in zip(x.shape, low, high, interior)]
    if any(d < 0 for d in shape):
        raise EvaluationError(f"pad of shape {x.shape} with low={list(low)} high={list(high)} "
                              f"interior={interior} has a negative size")
    out = np.full(shape, value, dtype=x.dtype)
    src, dst = [], []
    for d, lo, k, size in zip(x.shape, low, interior, shape):
        step = k + 1
        first = max(0, -(lo // step))  # ceil(-lo / step): first j with lo + j*step >= 0
        last = min(d - 1, (size - 1 - lo) // step)
        if last < first:
            return out
        src.append(slice(first, last + 1))
        dst.append(slice(lo + first * step, lo + last * step + 1, step))
    out[tuple(dst)] = x[tuple(src)]
    return out


def _eval_pad(op, xs, ctx):
    return pad_array(xs[0], xs[1][()], op.attrs["low"], op.attrs["high"], op.attrs.get("interior"))


def _eval_reverse(op, xs, ctx):
    return np.flip(xs[0], axis=tuple(op.attrs["dims"]))


# -- indexing --------------------------------------------------------------------------------
def _eval_gather(op, xs, ctx):
    params, indices = xs
    axis = op.attrs["axis"]
    extent = params.shape[axis]
    bad = np.flatnonzero((indices < 0) | (indices >= extent))
    if bad.size:
        record = checks.new_record()
        record[checks.BOUND], record[checks.POSITION] = extent, int(bad[0])
        record[checks.VALUE] = int(indices.flat[int(bad[0])])
        raise CheckFailure(checks.GATHER_INDEX, record)
    return np.take(params, indices.astype(np.intp), axis=axis)


def _eval_scatter_add(op, xs, ctx):
    operand, indices, updates = xs
    axis = op.attrs["axis"]
    index = indices.reshape(-1).astype(np.int64)
    valid = (index >= 0) & (index < operand.shape[axis])  # out-of-range updates are skipped
    compute = _compute_dtype(operand.dtype)
    out = operand.astype(compute)
    flat_updates = updates.reshape(operand.shape[:axis] + (index.size,) + operand.shape[axis + 1:])
    rows = np.moveaxis(flat_updates, axis, 0)[valid].astype(compute)
    np.add.at(np.moveaxis(out, axis, 0), index[valid], rows)
    return out.astype(operand.dtype)


# -- scans ----------------------------------------------------------------------------------
def _eval_compact(op, xs, ctx):
    (x,) = xs
    positions = np.flatnonzero(x != 0)
    out = np.full(x.shape, -1, dtype=np.int64)
    out[:positions.size] = positions
    return out


def _eval_first_occurrence(op, xs, ctx):
    (x,) = xs
    if x.size == 0:
        return np.zeros(x.shape, dtype=np.int64)
    kwargs = {"equal_nan": False} if x.dtype.kind == "f" else {}
    _, first, inverse = np.unique(x, return_index=True, return_inverse=True, **kwargs)
    return first[inverse.reshape(-1)].astype(np.int64)


def _eval_scan(op, xs, ctx):
    (x,) = xs
    attrs = op.attrs
    combine = np.add if attrs["op"] == "sum" else np.multiply
    moved = np.moveaxis(x, attrs["dim"], 0)
    if attrs.get("reverse", False):
        moved = moved[::-1]
    out = np.empty_like(moved)
    running = np.full(moved.shape[1:], 0 if attrs["op"] == "sum" else 1, dtype=x.dtype)
    with np.errstate(all="ignore"):
        for k in range(moved.shape[0]):
            if attrs.get("exclusive", False):
                out[k] = running
                running = combine(running, moved[k], dtype=x.dtype)
            else:
                running = combine(running, moved[k], dtype=x.dtype)
                out[k] = running
    if attrs.get("reverse", False):
        out = out[::-1]
    return np.ascontiguousarray(np.moveaxis(out, 0, attrs["dim"]))


def _eval_host_call(op, xs, ctx):
    """The host side of a host_call runs only when the caller gave ``host`` (its values are
    the program's either way: a host_call has no results)."""
    if ctx.host is not None:
        ctx.host(list(op.attrs["ops"]), list(op.attrs["tensors"]), [np.array(x, copy=True) for x in xs])


# -- run-time checks -------------------------------------------------------------------------
def _eval_check(op, xs, ctx):
    if op.attrs["kind"] == "assert":
        failure = assert_failure(xs, op.attrs)
    else:
        failure = check_failure(xs[0], op.attrs, ctx.env)
    if failure is not None:
        raise failure
    return None


def check_failure(x: np.ndarray, attrs: Mapping, env: Optional[Mapping] = None) -> Optional[CheckFailure]:
    """What ``check`` with ``attrs`` reports for the value ``x`` (None: it passes)."""
    env = dict(env or {})
    unless_empty = attrs.get("unless_empty")
    if unless_empty is not None and math.prod(dim_eval(d, env) for d in unless_empty) == 0:
        return None
    kind = attrs["kind"]
    bound = dim_eval(attrs["bound"][0], env) if attrs.get("bound") else None
    record = checks.new_record()
    if kind == "reduction_axis":
        return _empty_axis_failure(x, attrs.get("axis", 0), record)
    flat = x.reshape(-1).astype(np.int64)
    if kind in _ELEMENT_CHECKS:
        code, is_bad = _ELEMENT_CHECKS[kind]
        return CheckFailure(code, record) if is_bad(flat).any() else None
    if kind == "segment_id":
        return _first_bad(flat >= bound, flat, x.shape, bound, checks.SEGMENT_ID, record)
    if kind == "label":
        return _label_failure(flat, x.dtype, bound, record)
    if kind == "slice_index":
        value = int(flat[0])
        if 0 <= value < bound:
            return None
        record[checks.BOUND], record[checks.VALUE], record[checks.EXTRA] = bound, value, attrs.get("axis", 0)
        return CheckFailure(checks.SLICE_INDEX, record)
    if kind == "slice_begin":
        return _slice_begin_failure(int(flat[0]), dim_eval(attrs["size"][0], env), bound, attrs.get("axis", 0),
                                    record)
    raise EvaluationError(f"unknown check kind {kind!r}")


def assert_failure(xs: Sequence[np.ndarray], attrs: Mapping) -> Optional[CheckFailure]:
    """What ``check`` of kind ``assert`` reports for the condition ``xs[0]`` and the values
    ``xs[1:]`` (None: the condition holds)."""
    if bool(np.asarray(xs[0])):
        return None
    return CheckFailure(checks.ASSERT, checks.new_record(),
                        label_values=(list(attrs["text"]), attrs.get("summarize", 3), list(xs[1:])))


_ELEMENT_CHECKS = {
    "divisor": (checks.DIVISION_BY_ZERO, lambda v: v == 0),
    "truncate_divisor": (checks.BINARY_OP_ERROR, lambda v: v == 0),
    "exponent": (checks.NEGATIVE_POWER, lambda v: v < 0),
}


def _put_shape(record: list, shape) -> None:
    record[checks.RANK] = len(shape)
    for i, d in enumerate(list(shape)[:checks.MAX_DIMS]):
        record[checks.DIMS + i] = int(d)


def _empty_axis_failure(x: np.ndarray, axis: int, record: list) -> Optional[CheckFailure]:
    if x.shape[axis] != 0:
        return None
    record[checks.EXTRA] = axis
    _put_shape(record, x.shape)
    return CheckFailure(checks.EMPTY_REDUCTION_AXIS, record)


def _first_bad(bad: np.ndarray, flat: np.ndarray, shape, bound: int, code: int, record: list):
    positions = np.flatnonzero(bad)
    if not positions.size:
        return None
    position = int(positions[0])
    record[checks.BOUND], record[checks.POSITION], record[checks.VALUE] = bound, position, int(flat[position])
    _put_shape(record, shape)
    return CheckFailure(code, record)


def _label_failure(flat: np.ndarray, dtype, bound: int, record: list) -> Optional[CheckFailure]:
    """TF reports the smallest label when one is negative, else the largest."""
    if not flat.size:
        return None
    low, high = int(flat.min()), int(flat.max())
    if low >= 0 and high < bound:
        return None
    record[checks.BOUND], record[checks.VALUE] = bound, low if low < 0 else high
    record[checks.POSITION], record[checks.RANK] = flat.size, np.dtype(dtype).itemsize
    return CheckFailure(checks.LABEL, record, label_values=flat)


def _slice_begin_failure(begin: int, size: int, dim: int, axis: int, record: list) -> Optional[CheckFailure]:
    """TF's Slice validation of one dimension."""
    record[checks.EXTRA], record[checks.VALUE] = axis, begin
    if dim == 0:
        if begin == 0 and size == 0:
            return None
        record[checks.POSITION] = size
        return CheckFailure(checks.SLICE_EMPTY_DIM, record)
    if not 0 <= begin <= dim:
        record[checks.BOUND] = dim
        return CheckFailure(checks.SLICE_BEGIN, record)
    if not 0 <= size <= dim - begin:
        record[checks.BOUND], record[checks.VALUE] = dim - begin, size
        return CheckFailure(checks.SLICE_SIZE, record)
    return None


# -- reductions ------------------------------------------------------------------------------
def _eval_reduce(op, xs, ctx):
    x = xs[0]
    kind, axes = op.attrs["op"], tuple(op.attrs["dims"])
    return reduce_array(x, kind, axes)


def reduce_array(x: np.ndarray, kind: str, axes: tuple) -> np.ndarray:
    """``reduce`` of ``x`` over ``axes``; the result keeps x's element type."""
    if kind in ("sum", "prod"):
        fn = np.sum if kind == "sum" else np.prod
        compute = _compute_dtype(x.dtype)
        return np.asarray(fn(x, axis=axes, dtype=compute)).astype(x.dtype)
    if kind == "max":
        return np.asarray(np.max(x, axis=axes, initial=lowest(x.dtype)))
    if kind == "min":
        return np.asarray(np.min(x, axis=axes, initial=highest(x.dtype)))
    if kind == "and":
        return np.asarray(np.all(x, axis=axes))
    if kind == "or":
        return np.asarray(np.any(x, axis=axes))
    raise EvaluationError(f"unknown reduce op {kind!r}")


def _arg_reduce(fn: Callable) -> Callable:
    def evaluate(op, xs, ctx):
        x, axis = xs[0], op.attrs["dim"]
        shape, dtype = _result(op, ctx)
        if x.shape[axis] == 0:
            return np.zeros(shape, dtype=dtype)
        return fn(x, axis=axis).astype(dtype)  # first index; NaN wins

    return evaluate


# -- contractions ----------------------------------------------------------------------------
def _eval_dot(op, xs, ctx):
    lhs, rhs = xs
    lb, rb = op.attrs.get("batch") or [[], []]
    lc, rc = op.attrs["contract"]
    lf = [i for i in range(lhs.ndim) if i not in lb and i not in lc]
    rf = [i for i in range(rhs.ndim) if i not in rb and i not in rc]
    out_shape = [lhs.shape[i] for i in list(lb) + lf] + [rhs.shape[i] for i in rf]
    sizes = [int(np.prod([t.shape[i] for i in dims], dtype=np.int64))
             for t, dims in ((lhs, lb), (lhs, lf), (lhs, lc), (rhs, rf))]
    batch, m, k, n = sizes
    compute = _compute_dtype(lhs.dtype)
    a = np.transpose(lhs, list(lb) + lf + list(lc)).reshape(batch, m, k).astype(compute)
    b = np.transpose(rhs, list(rb) + list(rc) + rf).reshape(batch, k, n).astype(compute)
    return np.matmul(a, b).astype(lhs.dtype).reshape(out_shape)


def windows(x: np.ndarray, window: Sequence[int], strides: Sequence[int],
            dilation: Optional[Sequence[int]] = None) -> np.ndarray:
    """Sliding windows over every dim of ``x``: shape ``out + window`` where
    ``out[i] = (x.shape[i] - span[i]) // strides[i] + 1`` and ``span`` is the dilated
    window extent (0 windows when the span does not fit)."""
    dilation = list(dilation or [1] * x.ndim)
    spans = [(w - 1) * d + 1 for w, d in zip(window, dilation)]
    out = [(n - s) // k + 1 if n >= s else 0 for n, s, k in zip(x.shape, spans, strides)]
    if 0 in out or 0 in spans:
        return np.zeros(tuple(out) + tuple(window), dtype=x.dtype)
    view = sliding_window_view(x, spans)
    index = tuple(slice(None, None, k) for k in strides) + tuple(slice(None, None, d) for d in dilation)
    return view[index]


def _eval_conv(op, xs, ctx):
    x, w = xs
    attrs = op.attrs
    k = x.ndim - 2  # spatial dims
    strides = list(attrs.get("strides") or [1] * k)
    padding = [list(p) for p in (attrs.get("padding") or [[0, 0]] * k)]
    lhs_dilation = list(attrs.get("lhs_dilation") or [1] * k)
    rhs_dilation = list(attrs.get("rhs_dilation") or [1] * k)
    groups = attrs.get("groups", 1)
    compute = _compute_dtype(x.dtype)
    x = pad_array(x.astype(compute), 0, [0] + [p[0] for p in padding] + [0],
                  [0] + [p[1] for p in padding] + [0], [0] + [d - 1 for d in lhs_dilation] + [0])
    window, cg, out_channels = list(w.shape[:k]), w.shape[k], w.shape[k + 1]
    # (N, O1..Ok, C, K1..Kk): windows over the spatial dims only (size 1, stride 1 elsewhere).
    patches = windows(x, [1] + window + [1], [1] + strides + [1], [1] + rhs_dilation + [1])
    patches = patches[(slice(None),) * (k + 2) + (0,) + (slice(None),) * k + (0,)]
    n, spatial = patches.shape[0], patches.shape[1:k + 1]
    patches = patches.reshape((n,) + spatial + (groups, cg) + tuple(window))
    kernel = w.astype(compute).reshape(tuple(window) + (cg, groups, out_channels // groups))
    letters = "abdefhijklmpqrstuvxyz"
    outs, taps = letters[:k], letters[k:2 * k]
    out = np.einsum(f"n{outs}gc{taps},{taps}cgo->n{outs}go", patches, kernel, optimize=True)
    return out.reshape((n,) + spatial + (out_channels,)).astype(op.results[0].type.elem.np_dtype)


def _window_attrs(op, rank: int):
    strides = list(op.attrs.get("strides") or [1] * rank)
    padding = [list(p) for p in (op.attrs.get("padding") or [[0, 0]] * rank)]
    return list(op.attrs["window"]), strides, [p[0] for p in padding], [p[1] for p in padding]


def _eval_reduce_window(op, xs, ctx):
    x = xs[0]
    kind = op.attrs["op"]
    window, strides, low, high = _window_attrs(op, x.ndim)
    identity = {"max": lowest(x.dtype), "min": highest(x.dtype), "sum": 0}[kind]
    patches = windows(pad_array(x, identity, low, high), window, strides)
    axes = tuple(range(x.ndim, 2 * x.ndim))
    return reduce_array(patches, kind, axes)


def _eval_select_and_scatter(op, xs, ctx):
    x, source = xs
    window, strides, low, high = _window_attrs(op, x.ndim)
    values = windows(pad_array(x, lowest(x.dtype), low, high), window, strides)
    valid = windows(pad_array(np.ones(x.shape, bool), False, low, high), window, strides)
    count = int(np.prod(values.shape[:x.ndim], dtype=np.int64))
    size = int(np.prod(window, dtype=np.int64))
    values, valid = values.reshape(count, size), valid.reshape(count, size)
    best = np.max(np.where(valid, values, lowest(x.dtype)), axis=1, initial=lowest(x.dtype))[:, None]
    same = values == best
    if x.dtype.kind == "f":
        same |= np.isnan(values) & np.isnan(best)  # NaN is the maximum
    hit = valid & same  # padding never wins
    chosen = hit.argmax(axis=1)  # first hit in row-major window order
    has_hit = hit.any(axis=1)
    out_pos = np.unravel_index(np.arange(count)[has_hit], source.shape)
    win_pos = np.unravel_index(chosen[has_hit], window)
    coords = tuple(o * s + p - lo for o, s, p, lo in zip(out_pos, strides, win_pos, low))
    compute = _compute_dtype(x.dtype)
    out = np.zeros(x.shape, dtype=compute)
    np.add.at(out, coords, source.reshape(-1)[has_hit].astype(compute))
    return out.astype(x.dtype)


# -- state -----------------------------------------------------------------------------------
def _eval_rng(op, xs, ctx):
    state = xs[0]
    shape, dtype = _result(op, ctx)
    before = int(state[()])
    values = philox.rng_values(op.attrs["dist"], shape, dtype, op.attrs["seed"], before)
    state[...] = (before + 1 + 2**63) % 2**64 - 2**63  # int64 wraparound
    return values


def _eval_read(op, xs, ctx):
    return np.array(xs[0], copy=True)


def _eval_assign(op, xs, ctx):
    ref, value = xs
    if not ref.flags.writeable:
        raise EvaluationError(f"assign{_where(op)}: the ref buffer is read-only")
    ref[...] = value
    return None


# -- structure -------------------------------------------------------------------------------
def _eval_fusion(op, xs, ctx):
    if len(op.regions) != 1:
        raise EvaluationError(f"fusion must have one region, has {len(op.regions)}")
    return _run_block(op.regions[0], xs, ctx)


def _eval_if(op, xs, ctx):
    region = op.regions[0] if bool(np.asarray(xs[0])) else op.regions[1]
    return [np.array(v, copy=True) for v in _run_block(region, xs[1:], ctx)]


def _eval_while(op, xs, ctx):
    """The carried values are copies: the loop never writes into its operands."""
    carried_count = op.attrs["carried"]
    condition, body = op.regions
    carried = [np.array(v, copy=True) for v in xs[:carried_count]]
    invariants = list(xs[carried_count:])
    while bool(np.asarray(_run_block(condition, carried + invariants, ctx)[0])):
        carried = [np.array(v, copy=True) for v in _run_block(body, carried + invariants, ctx)]
    return carried


def _eval_call(op, xs, ctx):
    callee = str(op.attrs["callee"]).lstrip("@")
    if ctx.module is None:
        raise EvaluationError(f"call @{callee}: no module to find the callee in (evaluate the module, "
                              f"or pass module= to evaluate_op)")
    if callee not in ctx.module.functions:
        raise EvaluationError(f"call @{callee}: no such function in the module")
    function = ctx.module.functions[callee]
    if len(xs) != len(function.args):
        raise EvaluationError(f"call @{callee} passes {len(xs)} arguments for {len(function.args)}")
    inner = _Context(bind_symbols(function, xs), ctx.module, ctx.host)
    return _run_block(function.body, xs, inner)


def _eval_terminator(op, xs, ctx):
    raise EvaluationError(f"'{op.name}' is a terminator: evaluate the block that holds it")


_HANDLERS: dict[str, Callable] = {
    **{name: _eval_unary for name in UNARY_FUNCTIONS},
    **{name: _eval_binary for name in BINARY_FUNCTIONS},
    "compare": _eval_compare, "select": _eval_select, "convert": _eval_convert,
    "constant": _eval_constant, "iota": _eval_iota, "dims": _eval_dims,
    "broadcast": _eval_broadcast, "reshape": _eval_reshape, "transpose": _eval_transpose,
    "slice": _eval_slice, "dynamic_slice": _eval_dynamic_slice, "concatenate": _eval_concatenate,
    "pad": _eval_pad, "reverse": _eval_reverse, "gather": _eval_gather, "scatter_add": _eval_scatter_add,
    "compact": _eval_compact, "first_occurrence": _eval_first_occurrence, "host_call": _eval_host_call,
    "scan": _eval_scan,
    "reduce": _eval_reduce, "argmax": _arg_reduce(np.argmax), "argmin": _arg_reduce(np.argmin),
    "dot": _eval_dot, "conv": _eval_conv, "reduce_window": _eval_reduce_window,
    "select_and_scatter": _eval_select_and_scatter, "rng": _eval_rng, "read": _eval_read,
    "assign": _eval_assign, "fusion": _eval_fusion, "call": _eval_call, "check": _eval_check,
    "if": _eval_if, "while": _eval_while,
    "return": _eval_terminator, "yield": _eval_terminator,
}
