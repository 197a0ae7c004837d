"""The core op set: one table, one entry per op (operands, attributes, result-type rule).

TF's hundreds of op types lower into these few dozen (HLO-sized) ops. Each entry says
how many operands the op takes, which attributes it needs (with their kinds, used by the
verifier and the parser), how its result types follow from its operands and attributes
(``infer``; ``None`` when the result type is part of the op, as for ``reshape``), extra
checks (``check``), its memory effect, and its category (what fusion may do with it).

Semantics that numpy leaves open are fixed here, identically for the evaluator and every
backend:
- integer ``div`` truncates toward zero; ``x / 0 == -1`` and ``rem(x, 0) == x``;
  ``INT_MIN / -1 == INT_MIN`` and ``rem(INT_MIN, -1) == 0`` (XLA's choice: no traps).
- float ``rem`` is C's fmod. Integer ``pow`` with a negative exponent is 0 except for
  bases 1 and -1.
- ``max``/``min`` propagate NaN. ``round`` rounds half to even.
- ``round_bf16`` (f32 only) rounds to the nearest bfloat16 value, ties to even, keeping
  NaN, infinities and signed zeros; finite values past bf16's range become +-inf.
- ``convert`` float -> int truncates toward zero and saturates; NaN converts to 0.
  Anything -> pred is ``x != 0``.
- ``gather``/``scatter_add``/``dynamic_slice`` check indices; an out-of-range gather
  index is a run-time error (InvalidArgumentError), ``scatter_add`` skips it and
  dynamic_slice clamps (as XLA). Frontends that must raise where XLA clamps or skips (TF's
  CPU kernels) put a ``check`` before the op.
- ``check %x {kind, ...}`` has no results: it verifies ``x`` when it runs and fails the
  program with TF's error (codes and messages: tfc/program_errors.py). It is never removed,
  merged, folded or fused. Kinds (``bound``, ``size``: one dim each; integer ``x``):
    slice_index     the scalar x in [0, bound); message names dimension ``axis``
    slice_begin     tf.slice on dim ``axis``: the scalar begin x in [0, bound] and the
                    static ``size`` in [0, bound - x] (both 0 when bound is 0)
    segment_id      every x < bound (negative ids are allowed: they are dropped)
    label           every x in [0, bound) (i32/i64 x; the message lists all of x)
    divisor         every x != 0 ("Integer division by zero")
    truncate_divisor  every x != 0 (TF's TruncateDiv/TruncateMod: an InternalError)
    exponent        every x >= 0
    reduction_axis  dim ``axis`` of x (any element type) is not 0
    assert          ``check %cond, %v0, %v1... {kind="assert", text=[t0, t1, ...], summarize=n}``:
                    the scalar pred ``cond`` is true; else the message is
                    ``t0 + S(v0) + t1 + S(v1) + ...`` (one more text piece than values; S is
                    TF's SummarizeValue of at most ``summarize`` elements, all when
                    negative): tf.Assert, whose constant data the frontend formats into the
                    text, and any op whose error shows run-time values
  Only ``assert`` takes more than one operand.
  With ``unless_empty`` (dims), nothing is checked when their product is 0 (x is only
  used to compute a tensor of that shape: TF checks only elements it computes).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Optional, Sequence

from .dims import Dim, dim_add, dim_ceildiv, dim_floordiv, dim_mul, dim_sub, dims_product
from .types import ElemType, RefType, TensorType, Type


class IRTypeError(ValueError):
    """Operand or attribute types that an op does not accept."""


# Attribute kinds: how the verifier checks an attribute and the parser reads it.
INT, INTS, DIMS, BOOL, STR, FLOAT, DENSE, CALLEE, INT_PAIRS, DIM_LIST, STRS = (
    "int", "ints", "dims", "bool", "str", "float", "dense", "callee", "int_pairs", "dim_list", "strs")

PURE, READ, WRITE, CHECK = "pure", "read", "write", "check"  # CHECK: may fail the program


@dataclass(frozen=True)
class OpInfo:
    name: str
    arity: Optional[int]  # None: variadic
    attrs: dict = field(default_factory=dict)  # required: name -> kind
    optional: dict = field(default_factory=dict)  # name -> (kind, default)
    infer: Optional[Callable] = None  # (operand_types, attrs) -> [result types]
    check: Optional[Callable] = None  # (operand_types, attrs, result_types) -> None / raise
    effect: str = PURE
    category: str = "other"
    min_arity: int = 0
    choices: dict = field(default_factory=dict)  # str attr -> allowed values

    def attr(self, attrs: dict, name: str):
        if name in attrs:
            return attrs[name]
        return self.optional[name][1]


CORE_OPS: dict[str, OpInfo] = {}


def _register(info: OpInfo) -> OpInfo:
    CORE_OPS[info.name] = info
    return info


def op_info(name: str) -> OpInfo:
    try:
        return CORE_OPS[name]
    except KeyError:
        raise IRTypeError(f"unknown core op '{name}'") from None


def _tensor(t: Type, what: str) -> TensorType:
    if not isinstance(t, TensorType):
        raise IRTypeError(f"{what} must be a tensor, got {t}")
    return t


def _same_types(types: Sequence[Type], what: str) -> TensorType:
    first = _tensor(types[0], f"{what} operand 0")
    for i, t in enumerate(types[1:], 1):
        if t != first:
            raise IRTypeError(f"{what} operands must have identical types, got {first} and {t} (operand {i})")
    return first


def _require_elem(t: TensorType, ok: Callable[[ElemType], bool], what: str, kinds: str):
    if not ok(t.elem):
        raise IRTypeError(f"{what} takes {kinds} elements, got {t}")


def _is_numeric(e: ElemType) -> bool:
    return not e.is_pred


def _is_float(e: ElemType) -> bool:
    return e.is_float


def _is_int_or_pred(e: ElemType) -> bool:
    return e.is_int or e.is_pred


def _is_signed_or_float(e: ElemType) -> bool:
    return e.is_float or e.is_signed


def _check_axis(axis: int, rank: int, what: str):
    if not 0 <= axis < rank:
        raise IRTypeError(f"{what}: axis {axis} out of range for rank {rank}")


def _check_perm(perm, rank: int, what: str):
    if sorted(perm) != list(range(rank)):
        raise IRTypeError(f"{what}: {list(perm)} is not a permutation of {rank} dims")


# -- elementwise ---------------------------------------------------------------------------
UNARY_FLOAT = ("exp", "expm1", "log", "log1p", "sqrt", "rsqrt", "tanh", "logistic", "erf",
               "sin", "cos", "floor", "ceil", "round")
UNARY_NUMERIC = ("neg", "abs", "sign")
UNARY_OPS = UNARY_FLOAT + UNARY_NUMERIC + ("not",)
BINARY_NUMERIC = ("add", "sub", "mul", "div", "rem", "pow", "max", "min")
BINARY_LOGICAL = ("and", "or", "xor")
BINARY_OPS = BINARY_NUMERIC + BINARY_LOGICAL + ("atan2",)
COMPARE_DIRECTIONS = ("eq", "ne", "lt", "le", "gt", "ge")


def _unary_rule(name: str, ok, kinds: str):
    def infer(types, attrs):
        t = _tensor(types[0], name)
        _require_elem(t, ok, name, kinds)
        return [t]

    return infer


for _name in UNARY_FLOAT:
    _register(OpInfo(_name, 1, infer=_unary_rule(_name, _is_float, "float"), category="elementwise"))
for _name in ("neg", "sign"):
    _register(OpInfo(_name, 1, infer=_unary_rule(_name, _is_signed_or_float, "signed or float"),
                     category="elementwise"))
_register(OpInfo("abs", 1, infer=_unary_rule("abs", _is_numeric, "numeric"), category="elementwise"))
_register(OpInfo("not", 1, infer=_unary_rule("not", _is_int_or_pred, "int or pred"), category="elementwise"))


def _is_f32(e: ElemType) -> bool:
    return e is ElemType.F32


# round_bf16: f32 -> f32, each element rounded to the nearest bfloat16 value (8 significand
# bits; ties to even; NaN stays NaN (its bits pass unchanged), infinities stay, values that
# round past the largest bf16 become +-inf, denormals round like the rest). The result is
# still an f32 tensor: what a bf16 x bf16 -> f32 contraction reads when its operands are
# rounded this way (tfc/passes/bf16_precision.py inserts it).
_register(OpInfo("round_bf16", 1, infer=_unary_rule("round_bf16", _is_f32, "f32"), category="elementwise"))


def _binary_rule(name: str, ok, kinds: str):
    def infer(types, attrs):
        t = _same_types(types, name)
        _require_elem(t, ok, name, kinds)
        return [t]

    return infer


for _name in BINARY_NUMERIC:
    _register(OpInfo(_name, 2, infer=_binary_rule(_name, _is_numeric, "numeric"), category="elementwise"))
for _name in BINARY_LOGICAL:
    _register(OpInfo(_name, 2, infer=_binary_rule(_name, _is_int_or_pred, "int or pred"), category="elementwise"))
_register(OpInfo("atan2", 2, infer=_binary_rule("atan2", _is_float, "float"), category="elementwise"))


def _infer_compare(types, attrs):
    t = _same_types(types, "compare")
    return [t.with_elem(ElemType.PRED)]


_register(OpInfo("compare", 2, attrs={"dir": STR}, infer=_infer_compare, category="elementwise",
                 choices={"dir": COMPARE_DIRECTIONS}))


def _infer_select(types, attrs):
    pred = _tensor(types[0], "select predicate")
    value = _same_types(types[1:], "select")
    if pred.elem is not ElemType.PRED or pred.shape != value.shape:
        raise IRTypeError(f"select predicate must be pred with the values' shape, got {pred} for {value}")
    return [value]


_register(OpInfo("select", 3, infer=_infer_select, category="elementwise"))


def _check_convert(types, attrs, results):
    src = _tensor(types[0], "convert operand")
    dst = _tensor(results[0], "convert result")
    if src.shape != dst.shape:
        raise IRTypeError(f"convert keeps the shape: {src} -> {dst}")


_register(OpInfo("convert", 1, check=_check_convert, category="elementwise"))


# -- generators ----------------------------------------------------------------------------
def _check_constant(types, attrs, results):
    import numpy as np

    value = attrs["value"]
    t = _tensor(results[0], "constant result")
    if not t.is_static:
        raise IRTypeError(f"constant must have a static type, got {t}")
    if not isinstance(value, np.ndarray) or value.dtype != t.elem.np_dtype:
        raise IRTypeError(f"constant value must be a {t.elem} array")
    if value.shape != tuple(t.shape) and value.size != 1:
        raise IRTypeError(f"constant value of shape {value.shape} does not match {t}")


_register(OpInfo("constant", 0, attrs={"value": DENSE}, check=_check_constant, category="generator"))


def _check_iota(types, attrs, results):
    t = _tensor(results[0], "iota result")
    _check_axis(attrs["dim"], t.rank, "iota")
    _require_elem(t, _is_numeric, "iota", "numeric")


_register(OpInfo("iota", 0, attrs={"dim": INT}, check=_check_iota, category="generator"))


def _check_dims(types, attrs, results):
    t = _tensor(results[0], "dims result")
    if t.elem not in (ElemType.I32, ElemType.I64) or t.shape != (len(attrs["values"]),):
        raise IRTypeError(f"dims yields i32[n] or i64[n] with n = number of values, got {t}")


_register(OpInfo("dims", 0, attrs={"values": DIMS}, check=_check_dims, category="generator"))


# -- shape ops -----------------------------------------------------------------------------
def _check_broadcast(types, attrs, results):
    src = _tensor(types[0], "broadcast operand")
    dst = _tensor(results[0], "broadcast result")
    dims = list(attrs["dims"])
    if src.elem != dst.elem:
        raise IRTypeError(f"broadcast keeps the element type: {src} -> {dst}")
    if len(dims) != src.rank or any(b <= a for a, b in zip(dims, dims[1:])):
        raise IRTypeError(f"broadcast dims {dims} must be increasing, one per operand dim of {src}")
    for i, d in enumerate(dims):
        _check_axis(d, dst.rank, "broadcast")
        if src.shape[i] != 1 and src.shape[i] != dst.shape[d]:
            raise IRTypeError(f"broadcast: operand dim {i} ({src.shape[i]}) cannot become result dim {d} of {dst}")


_register(OpInfo("broadcast", 1, attrs={"dims": INTS}, check=_check_broadcast, category="shape"))


def _check_reshape(types, attrs, results):
    src = _tensor(types[0], "reshape operand")
    dst = _tensor(results[0], "reshape result")
    if src.elem != dst.elem or src.num_elements != dst.num_elements:
        raise IRTypeError(f"reshape must keep element type and count: {src} -> {dst}")


_register(OpInfo("reshape", 1, check=_check_reshape, category="shape"))


def _infer_transpose(types, attrs):
    t = _tensor(types[0], "transpose")
    perm = list(attrs["perm"])
    _check_perm(perm, t.rank, "transpose")
    return [t.with_shape([t.shape[p] for p in perm])]


_register(OpInfo("transpose", 1, attrs={"perm": INTS}, infer=_infer_transpose, category="shape"))


def _infer_slice(types, attrs):
    t = _tensor(types[0], "slice")
    start, limit = list(attrs["start"]), list(attrs["limit"])
    stride = list(attrs.get("stride") or [1] * t.rank)
    if not (len(start) == len(limit) == len(stride) == t.rank):
        raise IRTypeError(f"slice needs start/limit/stride for each of the {t.rank} dims")
    shape = []
    for s, l, k in zip(start, limit, stride):
        if not isinstance(k, int) or k <= 0:
            raise IRTypeError(f"slice strides must be positive integers, got {stride}")
        extent = dim_sub(l, s)
        if isinstance(extent, int) and extent < 0:
            raise IRTypeError(f"slice limit {l} is below start {s}")
        shape.append(dim_ceildiv(extent, k))
    return [t.with_shape(shape)]


_register(OpInfo("slice", 1, attrs={"start": DIMS, "limit": DIMS}, optional={"stride": (INTS, None)},
                 infer=_infer_slice, category="shape"))


def _infer_dynamic_slice(types, attrs):
    t = _tensor(types[0], "dynamic_slice")
    sizes = list(attrs["sizes"])
    if len(types) != 1 + t.rank or len(sizes) != t.rank:
        raise IRTypeError(f"dynamic_slice of {t} needs {t.rank} scalar start indices and {t.rank} sizes")
    for i, index_type in enumerate(types[1:]):
        index_type = _tensor(index_type, "dynamic_slice index")
        if index_type.rank != 0 or not index_type.elem.is_int:
            raise IRTypeError(f"dynamic_slice start index {i} must be an integer scalar, got {index_type}")
    return [t.with_shape(sizes)]


_register(OpInfo("dynamic_slice", None, min_arity=1, attrs={"sizes": DIMS}, infer=_infer_dynamic_slice,
                 category="shape"))


def _infer_concatenate(types, attrs):
    first = _tensor(types[0], "concatenate")
    axis = attrs["dim"]
    _check_axis(axis, first.rank, "concatenate")
    total: Dim = 0
    for i, t in enumerate(types):
        t = _tensor(t, "concatenate operand")
        if t.elem != first.elem or t.rank != first.rank or any(
                a != b for j, (a, b) in enumerate(zip(t.shape, first.shape)) if j != axis):
            raise IRTypeError(f"concatenate operand {i} ({t}) does not match {first} outside dim {axis}")
        total = dim_add(total, t.shape[axis])
    shape = list(first.shape)
    shape[axis] = total
    return [first.with_shape(shape)]


_register(OpInfo("concatenate", None, min_arity=1, attrs={"dim": INT}, infer=_infer_concatenate,
                 category="shape"))


def _infer_pad(types, attrs):
    t = _tensor(types[0], "pad")
    pad_value = _tensor(types[1], "pad value")
    if pad_value.rank != 0 or pad_value.elem != t.elem:
        raise IRTypeError(f"pad value must be a {t.elem} scalar, got {pad_value}")
    low, high = list(attrs["low"]), list(attrs["high"])
    interior = list(attrs.get("interior") or [0] * t.rank)
    if not (len(low) == len(high) == len(interior) == t.rank):
        raise IRTypeError(f"pad needs low/high/interior for each of the {t.rank} dims")
    shape = []
    for d, lo, hi, inner in zip(t.shape, low, high, interior):
        if inner < 0:
            raise IRTypeError("pad interior must be >= 0")
        size = dim_add(dim_add(d, lo), hi)
        if inner:
            size = dim_add(size, dim_mul(dim_sub(d, 1), inner)) if d != 0 else size
        if isinstance(size, int) and size < 0:
            raise IRTypeError(f"pad makes a negative dimension from {t}")
        shape.append(size)
    return [t.with_shape(shape)]


_register(OpInfo("pad", 2, attrs={"low": INTS, "high": INTS}, optional={"interior": (INTS, None)},
                 infer=_infer_pad, category="shape"))


def _infer_reverse(types, attrs):
    t = _tensor(types[0], "reverse")
    for d in attrs["dims"]:
        _check_axis(d, t.rank, "reverse")
    return [t]


_register(OpInfo("reverse", 1, attrs={"dims": INTS}, infer=_infer_reverse, category="shape"))


# -- indexing ------------------------------------------------------------------------------
def _gathered_shape(params: TensorType, indices: TensorType, axis: int) -> list:
    return list(params.shape[:axis]) + list(indices.shape) + list(params.shape[axis + 1:])


def _infer_gather(types, attrs):
    params = _tensor(types[0], "gather params")
    indices = _tensor(types[1], "gather indices")
    axis = attrs["axis"]
    _check_axis(axis, params.rank, "gather")
    if indices.elem not in (ElemType.I32, ElemType.I64):
        raise IRTypeError(f"gather indices must be i32 or i64, got {indices}")
    return [params.with_shape(_gathered_shape(params, indices, axis))]


_register(OpInfo("gather", 2, attrs={"axis": INT}, infer=_infer_gather, category="gather"))


def _infer_scatter_add(types, attrs):
    operand = _tensor(types[0], "scatter_add operand")
    indices = _tensor(types[1], "scatter_add indices")
    updates = _tensor(types[2], "scatter_add updates")
    axis = attrs["axis"]
    _check_axis(axis, operand.rank, "scatter_add")
    if indices.elem not in (ElemType.I32, ElemType.I64):
        raise IRTypeError(f"scatter_add indices must be i32 or i64, got {indices}")
    expected = _gathered_shape(operand, indices, axis)
    if updates.elem != operand.elem or list(updates.shape) != expected:
        raise IRTypeError(f"scatter_add updates must be {operand.with_shape(expected)}, got {updates}")
    return [operand]


_register(OpInfo("scatter_add", 3, attrs={"axis": INT}, infer=_infer_scatter_add, category="scatter"))


# -- scans: ops whose result at one position depends on the elements before it ------------
# ``compact %x : T[n] -> i64[n]``: the positions of x's nonzero elements in increasing
# order, then -1 for the rest (the count is a reduce of ``x != 0``). With it a program
# computes an op whose output size depends on the values (tf.where's indices, a
# boolean_mask, a dynamic_partition) into a buffer of the bound n, and reports the count.
# ``first_occurrence %x : T[n] -> i64[n]``: for each i, the smallest j with x[j] == x[i]
# (by value: -0.0 equals 0.0; NaN equals nothing, so each NaN is its own first occurrence),
# as tf.unique's hash map sees values.
def _infer_scan(name):
    def infer(types, attrs):
        t = _tensor(types[0], name)
        if t.rank != 1:
            raise IRTypeError(f"{name} takes a vector, got {t}")
        return [TensorType(ElemType.I64, tuple(t.shape))]

    return infer


_register(OpInfo("compact", 1, infer=_infer_scan("compact"), category="scan"))


# ``scan %x {op, dim, exclusive, reverse}``: the running sum or product of x along ``dim``,
# in order (from the end when ``reverse``), each step rounded to the element type (f16
# adds in f32, then rounds, as every f16 op); ``exclusive`` shifts by one, starting from
# the identity (tf.cumsum / tf.cumprod).
def _infer_cumulative(types, attrs):
    t = _tensor(types[0], "scan")
    _check_axis(attrs["dim"], t.rank, "scan")
    _require_elem(t, _is_numeric, "scan", "numeric")
    return [t]


_register(OpInfo("scan", 1, attrs={"op": STR, "dim": INT}, optional={"exclusive": (BOOL, False),
                                                                       "reverse": (BOOL, False)},
                 infer=_infer_cumulative, category="scan", choices={"op": ("sum", "prod")}))
_register(OpInfo("first_occurrence", 1, infer=_infer_scan("first_occurrence"), category="scan"))


# -- reductions ----------------------------------------------------------------------------
REDUCE_KINDS = ("sum", "prod", "max", "min", "and", "or")


def _infer_reduce(types, attrs):
    t = _tensor(types[0], "reduce")
    dims = list(attrs["dims"])
    for d in dims:
        _check_axis(d, t.rank, "reduce")
    if len(set(dims)) != len(dims):
        raise IRTypeError(f"reduce dims {dims} repeat")
    kind = attrs["op"]
    if kind in ("and", "or") and t.elem is not ElemType.PRED:
        raise IRTypeError(f"reduce {kind} takes pred elements, got {t}")
    if kind not in ("and", "or") and t.elem is ElemType.PRED:
        raise IRTypeError(f"reduce {kind} takes numeric elements, got {t}")
    return [t.with_shape([s for i, s in enumerate(t.shape) if i not in dims])]


_register(OpInfo("reduce", 1, attrs={"op": STR, "dims": INTS}, infer=_infer_reduce, category="reduction",
                 choices={"op": REDUCE_KINDS}))


def _check_arg_reduce(name):
    def check(types, attrs, results):
        t = _tensor(types[0], name)
        _check_axis(attrs["dim"], t.rank, name)
        _require_elem(t, _is_numeric, name, "numeric")
        r = _tensor(results[0], f"{name} result")
        expected = [s for i, s in enumerate(t.shape) if i != attrs["dim"]]
        if r.elem not in (ElemType.I32, ElemType.I64) or list(r.shape) != expected:
            raise IRTypeError(f"{name} of {t} over dim {attrs['dim']} yields i32/i64{expected}, got {r}")

    return check


_register(OpInfo("argmax", 1, attrs={"dim": INT}, check=_check_arg_reduce("argmax"), category="reduction"))
_register(OpInfo("argmin", 1, attrs={"dim": INT}, check=_check_arg_reduce("argmin"), category="reduction"))


# -- contractions --------------------------------------------------------------------------
def _infer_dot(types, attrs):
    lhs = _tensor(types[0], "dot lhs")
    rhs = _tensor(types[1], "dot rhs")
    if lhs.elem != rhs.elem or lhs.elem is ElemType.PRED:
        raise IRTypeError(f"dot operands must share a numeric element type, got {lhs} and {rhs}")
    (lb, rb) = attrs.get("batch") or [[], []]
    (lc, rc) = attrs["contract"]
    if len(lb) != len(rb) or len(lc) != len(rc):
        raise IRTypeError("dot batch/contract dims must pair up")
    for dims, t in ((list(lb) + list(lc), lhs), (list(rb) + list(rc), rhs)):
        if len(set(dims)) != len(dims):
            raise IRTypeError(f"dot dims {dims} repeat")
        for d in dims:
            _check_axis(d, t.rank, "dot")
    for a, b in list(zip(lb, rb)) + list(zip(lc, rc)):
        if lhs.shape[a] != rhs.shape[b]:
            raise IRTypeError(f"dot: lhs dim {a} ({lhs.shape[a]}) != rhs dim {b} ({rhs.shape[b]}) in {lhs}, {rhs}")
    lhs_free = [i for i in range(lhs.rank) if i not in lb and i not in lc]
    rhs_free = [i for i in range(rhs.rank) if i not in rb and i not in rc]
    shape = [lhs.shape[i] for i in lb] + [lhs.shape[i] for i in lhs_free] + [rhs.shape[i] for i in rhs_free]
    return [lhs.with_shape(shape)]


_register(OpInfo("dot", 2, attrs={"contract": INT_PAIRS}, optional={"batch": (INT_PAIRS, None)},
                 infer=_infer_dot, category="contraction"))


def window_output_dim(size: Dim, window: int, stride: int, low: int, high: int,
                      base_dilation: int = 1, window_dilation: int = 1) -> Dim:
    """Output extent of a sliding window: floor((dilated + low + high - dilated_window) / stride) + 1."""
    dilated = dim_add(dim_mul(dim_sub(size, 1), base_dilation), 1) if base_dilation != 1 else size
    span = (window - 1) * window_dilation + 1
    room = dim_sub(dim_add(dilated, low + high), span)
    if isinstance(room, int) and room < 0:
        return 0
    return dim_add(dim_floordiv(room, stride), 1)


def _infer_conv(types, attrs):
    """conv over k >= 1 spatial dims: input [N, S1..Sk, C] (channels last), filter
    [K1..Kk, C / groups, O]; strides, padding, lhs_dilation and rhs_dilation have one
    entry per spatial dim."""
    x = _tensor(types[0], "conv input")
    w = _tensor(types[1], "conv filter")
    k = x.rank - 2
    if k < 1 or w.rank != x.rank or x.elem != w.elem or not x.elem.is_float:
        raise IRTypeError(f"conv takes a float channels-last input [N, spatial..., C] and a filter "
                          f"[spatial..., C, O] of one type and rank, got {x} and {w}")
    strides = list(attrs.get("strides") or [1] * k)
    padding = [list(p) for p in (attrs.get("padding") or [[0, 0]] * k)]
    lhs_dil = list(attrs.get("lhs_dilation") or [1] * k)
    rhs_dil = list(attrs.get("rhs_dilation") or [1] * k)
    if not (len(strides) == len(padding) == len(lhs_dil) == len(rhs_dil) == k):
        raise IRTypeError(f"conv over {k} spatial dims needs {k} strides, paddings and dilations, got "
                          f"strides={strides} padding={padding} lhs_dilation={lhs_dil} rhs_dilation={rhs_dil}")
    groups = attrs.get("groups", 1)
    if groups < 1 or (isinstance(x.shape[-1], int) and x.shape[-1] != w.shape[-2] * groups) or (
            isinstance(w.shape[-1], int) and w.shape[-1] % groups):
        raise IRTypeError(f"conv: input channels {x.shape[-1]} must equal filter in-channels {w.shape[-2]}"
                          f" x groups {groups}")
    out = [x.shape[0]]
    for i in range(k):
        out.append(window_output_dim(x.shape[1 + i], w.shape[i], strides[i], padding[i][0], padding[i][1],
                                     lhs_dil[i], rhs_dil[i]))
    out.append(w.shape[-1])
    return [x.with_shape(out)]


_register(OpInfo("conv", 2, optional={"strides": (INTS, None), "padding": (INT_PAIRS, None),
                                      "lhs_dilation": (INTS, None), "rhs_dilation": (INTS, None),
                                      "groups": (INT, 1)},
                 infer=_infer_conv, category="contraction"))


def _window_attrs(t: TensorType, attrs, name: str):
    window = list(attrs["window"])
    strides = list(attrs.get("strides") or [1] * t.rank)
    padding = [list(p) for p in (attrs.get("padding") or [[0, 0]] * t.rank)]
    if not (len(window) == len(strides) == len(padding) == t.rank):
        raise IRTypeError(f"{name} needs window/strides/padding for each of the {t.rank} dims of {t}")
    return window, strides, padding


def _infer_reduce_window(types, attrs):
    t = _tensor(types[0], "reduce_window")
    window, strides, padding = _window_attrs(t, attrs, "reduce_window")
    _require_elem(t, _is_numeric, "reduce_window", "numeric")
    return [t.with_shape([window_output_dim(d, k, s, lo, hi)
                          for d, k, s, (lo, hi) in zip(t.shape, window, strides, padding)])]


_register(OpInfo("reduce_window", 1, attrs={"op": STR, "window": INTS},
                 optional={"strides": (INTS, None), "padding": (INT_PAIRS, None)},
                 infer=_infer_reduce_window, category="window", choices={"op": ("max", "min", "sum")}))


def _infer_select_and_scatter(types, attrs):
    x = _tensor(types[0], "select_and_scatter operand")
    source = _tensor(types[1], "select_and_scatter source")
    window, strides, padding = _window_attrs(x, attrs, "select_and_scatter")
    expected = [window_output_dim(d, k, s, lo, hi) for d, k, s, (lo, hi) in zip(x.shape, window, strides, padding)]
    if source.elem != x.elem or list(source.shape) != expected:
        raise IRTypeError(f"select_and_scatter source must be {x.with_shape(expected)}, got {source}")
    return [x]


_register(OpInfo("select_and_scatter", 2, attrs={"window": INTS},
                 optional={"strides": (INTS, None), "padding": (INT_PAIRS, None)},
                 infer=_infer_select_and_scatter, category="window"))


# -- run-time checks ------------------------------------------------------------------------
CHECK_KINDS = ("slice_index", "slice_begin", "segment_id", "label", "divisor", "truncate_divisor", "exponent",
               "reduction_axis", "assert")
_BOUNDED_CHECKS = ("slice_index", "slice_begin", "segment_id", "label")


def _infer_check(types, attrs):
    t = _tensor(types[0], "check operand")
    kind = attrs["kind"]
    if kind == "assert":
        return _infer_assert(types, attrs)
    if len(types) != 1:
        raise IRTypeError(f"check {kind} takes one operand, got {len(types)}")
    if kind == "reduction_axis":
        _check_axis(attrs.get("axis", 0), t.rank, "check reduction_axis")
        return []
    if not t.elem.is_int:
        raise IRTypeError(f"check {kind} takes integer values, got {t}")
    if kind in _BOUNDED_CHECKS and len(attrs.get("bound") or []) != 1:
        raise IRTypeError(f"check {kind} needs one bound dim, got {attrs.get('bound')}")
    if kind == "label" and t.elem not in (ElemType.I32, ElemType.I64):
        raise IRTypeError(f"check label takes i32 or i64 labels, got {t}")
    if kind in ("slice_index", "slice_begin") and t.rank != 0:
        raise IRTypeError(f"check {kind} takes a scalar index, got {t}")
    if kind == "slice_begin" and len(attrs.get("size") or []) != 1:
        raise IRTypeError(f"check slice_begin needs one size dim, got {attrs.get('size')}")
    return []


def _infer_assert(types, attrs):
    cond = _tensor(types[0], "check assert condition")
    if cond.elem != ElemType.PRED or cond.rank != 0:
        raise IRTypeError(f"check assert takes a pred[] condition, got {cond}")
    for i, t in enumerate(types[1:], 1):
        _tensor(t, f"check assert value {i}")
    text = attrs.get("text")
    if text is None or len(text) != len(types):
        raise IRTypeError(f"check assert needs {len(types)} text pieces (one more than its {len(types) - 1} values), "
                          f"got {None if text is None else len(text)}")
    return []


_register(OpInfo("check", None, attrs={"kind": STR},
                 optional={"bound": (DIMS, None), "size": (DIMS, None), "axis": (INT, 0),
                           "unless_empty": (DIMS, None), "text": (STRS, None), "summarize": (INT, 3)},
                 infer=_infer_check, effect=CHECK, category="check", choices={"kind": CHECK_KINDS},
                 min_arity=1))


# -- state ---------------------------------------------------------------------------------
RNG_DISTRIBUTIONS = ("uniform", "normal", "truncated_normal")


def _check_rng(types, attrs, results):
    state = types[0]
    if not isinstance(state, RefType) or state.tensor != TensorType(ElemType.I64, ()):
        raise IRTypeError(f"rng state must be ref<i64[]>, got {state}")
    r = _tensor(results[0], "rng result")
    _require_elem(r, _is_float, "rng", "float")
    seed = list(attrs["seed"])
    if len(seed) != 2:
        raise IRTypeError("rng seed is a pair of integers")


_register(OpInfo("rng", 1, attrs={"dist": STR, "seed": INTS}, check=_check_rng, effect=WRITE,
                 category="rng", choices={"dist": RNG_DISTRIBUTIONS}))


def _infer_read(types, attrs):
    if not isinstance(types[0], RefType):
        raise IRTypeError(f"read takes a ref, got {types[0]}")
    return [types[0].tensor]


_register(OpInfo("read", 1, infer=_infer_read, effect=READ, category="state"))


def _infer_assign(types, attrs):
    ref, value = types
    if not isinstance(ref, RefType) or ref.tensor != value:
        raise IRTypeError(f"assign stores a {getattr(ref, 'tensor', ref)} value into a ref of the same type, got {value}")
    return []


_register(OpInfo("assign", 2, infer=_infer_assign, effect=WRITE, category="state"))


# -- host calls -----------------------------------------------------------------------------
# ``host_call %x... {ops=["a", ...], tensors=["t:0", ...]}`` has no results: when it runs,
# the program calls back into its runtime with the operands' values, which runs the host
# side of the graph ops ``ops`` in order (their registry entries' ``host``), operand k
# being the value of graph tensor ``tensors[k]`` (other inputs are string constants the
# runtime reads from the graph, outputs of the ops before, or inputs the host side does
# not read). So ops that are not computation (tf.Print; tf.print's StringFormat and
# PrintV2) run where the program reaches them: inside a branch or a loop, once per
# iteration, in order with the kernels around it. Never
# removed, merged, moved or folded (a write effect); not compiled ahead of time (there is
# no Python to call) nor for the GPU.
def _infer_host_call(types, attrs):
    for i, t in enumerate(types):
        _tensor(t, f"host_call operand {i}")
    if len(attrs.get("tensors") or []) != len(types):
        raise IRTypeError(f"host_call names {len(attrs.get('tensors') or [])} tensors for {len(types)} operands")
    if not attrs.get("ops"):
        raise IRTypeError("host_call names no ops")
    return []


_register(OpInfo("host_call", None, attrs={"ops": STRS, "tensors": STRS}, infer=_infer_host_call, effect=WRITE,
                 category="host"))


# -- structure -----------------------------------------------------------------------------
FUSION_KINDS = ("loop", "input", "output", "row")

_register(OpInfo("fusion", None, attrs={"kind": STR}, category="fusion", choices={"kind": FUSION_KINDS}))
_register(OpInfo("call", None, attrs={"callee": CALLEE}, category="call"))
_register(OpInfo("return", None, infer=lambda types, attrs: [], category="terminator"))
_register(OpInfo("yield", None, infer=lambda types, attrs: [], category="terminator"))


# -- control flow ---------------------------------------------------------------------------
# ``if %pred, %x...`` has two regions (then, else), each with one argument per captured
# operand ``%x...`` and a ``yield`` of the results. ``while %v... {carried=n}`` has a
# condition region (yields one pred[]) and a body region (yields the n carried values);
# both take every operand as an argument: the first n are the loop-carried values (the
# initial values, then what the body yielded), the rest are loop invariants. The results
# are the carried values when the condition yields false. Regions see nothing from outside
# but their arguments. Result types are written out; the verifier checks the regions.
CONTROL_FLOW = frozenset({"if", "while"})

_register(OpInfo("if", None, min_arity=1, category="control"))
_register(OpInfo("while", None, attrs={"carried": INT}, category="control"))

_EFFECT_RANK = {PURE: 0, READ: 1, CHECK: 2, WRITE: 3}


def op_effect(op) -> str:
    """An op's memory effect; for ``if``/``while``, the strongest effect of any op in their
    regions (a call counts as a write)."""
    if op.name not in CONTROL_FLOW:
        return effect_of(op.name)
    strongest = PURE
    for region in op.regions:
        for inner in region.ops:
            effect = WRITE if inner.name == "call" else op_effect(inner)
            if _EFFECT_RANK[effect] > _EFFECT_RANK[strongest]:
                strongest = effect
    return strongest


# -- entry points --------------------------------------------------------------------------
def infer_result_types(name: str, operand_types: Sequence[Type], attrs: dict) -> list:
    """Result types for an op whose types follow from operands and attributes."""
    info = op_info(name)
    check_arity(info, len(operand_types))
    if info.infer is None:
        raise IRTypeError(f"'{name}' needs its result type given explicitly")
    return info.infer(list(operand_types), attrs)


def check_arity(info: OpInfo, count: int) -> None:
    if info.arity is not None and count != info.arity:
        raise IRTypeError(f"'{info.name}' takes {info.arity} operands, got {count}")
    if info.arity is None and count < info.min_arity:
        raise IRTypeError(f"'{info.name}' takes at least {info.min_arity} operands, got {count}")


def is_elementwise(name: str) -> bool:
    return name in CORE_OPS and CORE_OPS[name].category == "elementwise"


def effect_of(name: str) -> str:
    return CORE_OPS[name].effect if name in CORE_OPS else PURE


def numel(t: TensorType) -> Dim:
    return dims_product(t.shape)


def all_op_names() -> list:
    return sorted(CORE_OPS)


def attr_kinds(name: str) -> dict:
    info = op_info(name)
    kinds = dict(info.attrs)
    kinds.update({k: v[0] for k, v in info.optional.items()})
    return kinds
