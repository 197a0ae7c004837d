"""More string ops of TF 1.15, as host ops (strings are no values of the compiled program):
StringLength, StringLower, StringUpper, StringStrip, Substr, RegexReplace,
StaticRegexReplace, RegexFullMatch, ReduceJoin, and tf.strings.format over the
StringFormat op of tfc/frontend/ops/logging_ops.py. Patterns are RE2's in TF; Python's
``re`` here (the same for the usual syntax; RE2's ``\\0``..``\\9`` rewrites are translated)."""
from __future__ import annotations

import re

import numpy as np

from .. import dtypes
from ..convert import convert_to_tensor
from ..errors import InvalidArgumentError
from ..graph import Tensor, name_scope
from ..op_helper import apply_op
from ..registry import Attr, OpType, ShapeError, register
from . import inference_context as ic
from . import logging_ops  # noqa: F401  (registers StringFormat)
from .sharded_save_ops import _bytes, _strings

_UNITS = ("BYTE", "UTF8_CHAR")
_ASCII_WHITESPACE = b" \t\n\v\f\r"


def _text(value) -> str:
    return value.decode("utf-8") if isinstance(value, bytes) else str(value)


def _unit(op):
    unit = _text(op._attrs["unit"])
    if unit not in _UNITS:
        raise InvalidArgumentError(None, op, f"Value for attr 'unit' of \"{unit}\" is not in the list of allowed "
                                             f"values: \"BYTE\", \"UTF8_CHAR\"")
    return unit


def _map(value, fn, out_dtype=object):
    strings = _strings(value)
    out = np.empty(strings.shape, dtype=out_dtype)
    for index, item in np.ndenumerate(strings):
        out[index] = fn(item)
    return out


def _utf8_starts(text: bytes) -> list:
    """Byte offsets where UTF-8 characters start (bytes that are no continuation byte)."""
    return [i for i, byte in enumerate(text) if byte & 0xC0 != 0x80]


@register
class StringLength(OpType):
    """Bytes, or UTF-8 characters, per string."""

    inputs = ["input: string"]
    outputs = ["output: int32"]
    attrs = {"unit": Attr("string", "BYTE")}
    host_only = True
    not_differentiable = True
    infer = ic.unchanged_shape

    def host(op, value):
        if _unit(op) == "BYTE":
            return [_map(value, len, np.int32)]
        return [_map(value, lambda s: len(_utf8_starts(s)), np.int32)]


def _case_op(name, ascii_fn, unicode_fn, doc):
    def host(op, value):
        encoding = _text(op._attrs["encoding"])
        if encoding == "":
            return [_map(value, ascii_fn)]
        if encoding.lower().replace("-", "") != "utf8":
            raise InvalidArgumentError(None, op, f"Could not create converter for input encoding: {encoding}")
        return [_map(value, lambda s: unicode_fn(s.decode("utf-8", "replace")).encode("utf-8"))]

    return type(name, (OpType,), {
        "__doc__": doc, "inputs": ["input: string"], "outputs": ["output: string"],
        "attrs": {"encoding": Attr("string", "")}, "host_only": True, "not_differentiable": True,
        "infer": ic.unchanged_shape, "host": host, "__module__": __name__})


# bytes.lower / bytes.upper change ASCII letters only, as absl::AsciiStrToLower / Upper
StringLower = register(_case_op("StringLower", bytes.lower, str.lower, "Lowercase (ASCII, or UTF-8 with encoding)."))
StringUpper = register(_case_op("StringUpper", bytes.upper, str.upper, "Uppercase (ASCII, or UTF-8 with encoding)."))


@register
class StringStrip(OpType):
    """Leading and trailing ASCII whitespace removed (absl::StripAsciiWhitespace)."""

    inputs = ["input: string"]
    outputs = ["output: string"]
    host_only = True
    not_differentiable = True
    infer = ic.unchanged_shape

    def host(op, value):
        return [_map(value, lambda s: s.strip(_ASCII_WHITESPACE))]


def _substr_shape(c):
    input_shape = c.input(0)
    pos_shape = c.input(1)
    len_shape = c.input(2)
    if pos_shape is not None and len_shape is not None:
        ic.merge(pos_shape, len_shape)
    return [(dtypes.string, ic.broadcast(input_shape, pos_shape))]


@register
class Substr(OpType):
    """``len`` bytes (or UTF-8 characters) from ``pos`` (negative: from the end), per string,
    ``pos`` and ``len`` broadcast against the input (TF's SubstrOp)."""

    inputs = ["input: string", "pos: T", "len: T"]
    outputs = ["output: string"]
    attrs = {"T": Attr("type", allowed=(dtypes.int32, dtypes.int64)), "unit": Attr("string", "BYTE")}
    host_only = True
    not_differentiable = True

    def infer(op):
        return ic.run_shape_fn(op, _substr_shape)

    def host(op, value, pos, length):
        unit = _unit(op)
        strings = _strings(value)
        pos, length = np.asarray(pos), np.asarray(length)
        if pos.shape != length.shape:
            raise InvalidArgumentError(None, op, f"pos and len should have the same shape, got: "
                                                 f"{ic.debug_string(list(pos.shape))} vs. "
                                                 f"{ic.debug_string(list(length.shape))}")
        try:
            shape = np.broadcast_shapes(strings.shape, pos.shape)
        except ValueError:
            raise InvalidArgumentError(None, op, f"Incompatible shapes: {list(strings.shape)} vs. "
                                                 f"{list(pos.shape)}") from None
        strings = np.broadcast_to(strings, shape)
        pos, length = np.broadcast_to(pos, shape), np.broadcast_to(length, shape)
        out = np.empty(shape, dtype=object)
        for flat, index in enumerate(np.ndindex(*shape)):
            text, p, n = strings[index], int(pos[index]), int(length[index])
            if unit == "BYTE":
                starts, size = None, len(text)
            else:
                starts = _utf8_starts(text)
                size = len(starts)
            if p > size or p < -size:
                where = "" if shape == () else f" at index {flat}"
                raise InvalidArgumentError(None, op, f"pos {p} out of range for string b'"
                                                     f"{text.decode('utf-8', 'replace')}'{where}")
            if p < 0:
                p += size
            end = min(size, p + max(n, 0))
            if starts is None:
                out[index] = text[p:end]
            else:
                bounds = starts + [len(text)]
                out[index] = text[bounds[p]:bounds[end]]
        return [out]


def _rewrite_fn(rewrite: bytes):
    """RE2's rewrite string (``\\0``..``\\9``, ``\\\\``) as a function of a match."""
    pieces, i = [], 0
    while i < len(rewrite):
        byte = rewrite[i:i + 1]
        if byte == b"\\" and i + 1 < len(rewrite):
            nxt = rewrite[i + 1:i + 2]
            if nxt.isdigit():
                pieces.append(int(nxt))
            else:
                pieces.append(nxt)
            i += 2
            continue
        pieces.append(byte)
        i += 1

    def fn(match):
        return b"".join(match.group(p) or b"" if isinstance(p, int) else p for p in pieces)

    return fn


def _regex_replace(op, value, pattern, rewrite, replace_global):
    try:
        compiled = re.compile(_bytes(pattern))
    except re.error as e:
        raise InvalidArgumentError(None, op, f"Invalid pattern: {_text(_bytes(pattern))}, error: {e}") from None
    fn = _rewrite_fn(_bytes(rewrite))
    count = 0 if replace_global else 1
    return [_map(value, lambda s: compiled.sub(fn, s, count=count))]


@register
class StaticRegexReplace(OpType):
    inputs = ["input: string"]
    outputs = ["output: string"]
    attrs = {"pattern": Attr("string"), "rewrite": Attr("string"), "replace_global": Attr("bool", True)}
    host_only = True
    not_differentiable = True
    infer = ic.unchanged_shape

    def host(op, value):
        return _regex_replace(op, value, op._attrs["pattern"], op._attrs["rewrite"], op._attrs["replace_global"])


def _scalar_string(op, value, what):
    array = np.asarray(value, dtype=object)
    if array.shape != ():
        raise InvalidArgumentError(None, op, f"{what} must be scalar, but received {list(array.shape)}")
    return _bytes(array.item())


@register
class RegexReplace(OpType):
    inputs = ["input: string", "pattern: string", "rewrite: string"]
    outputs = ["output: string"]
    attrs = {"replace_global": Attr("bool", True)}
    host_only = True
    not_differentiable = True

    def infer(op):
        def fn(c):
            ic.with_rank(c.input(1), 0)
            ic.with_rank(c.input(2), 0)
            return [(dtypes.string, c.input(0))]
        return ic.run_shape_fn(op, fn)

    def host(op, value, pattern, rewrite):
        return _regex_replace(op, value, _scalar_string(op, pattern, "Pattern"),
                              _scalar_string(op, rewrite, "Rewrite"), op._attrs["replace_global"])


@register
class RegexFullMatch(OpType):
    inputs = ["input: string", "pattern: string"]
    outputs = ["output: bool"]
    host_only = True
    not_differentiable = True

    def infer(op):
        def fn(c):
            ic.with_rank(c.input(1), 0)
            return [(dtypes.bool, c.input(0))]
        return ic.run_shape_fn(op, fn)

    def host(op, value, pattern):
        pattern = _scalar_string(op, pattern, "Pattern")
        try:
            compiled = re.compile(pattern)
        except re.error as e:
            raise InvalidArgumentError(None, op, f"Invalid pattern: {_text(pattern)}, error: {e}") from None
        return [_map(value, lambda s: compiled.fullmatch(s) is not None, np.bool_)]


def _reduce_join_shape(c):
    input_shape = c.input(0)
    indices = c.input_tensor(1)
    keep_dims = c.attr("keep_dims")
    if input_shape is None or indices is None:
        return [(dtypes.string, None)]
    rank = len(input_shape)
    axes = _normalize_axes(np.asarray(indices).reshape(-1), rank, ShapeError)
    if keep_dims:
        return [(dtypes.string, [1 if i in axes else d for i, d in enumerate(input_shape)])]
    return [(dtypes.string, [d for i, d in enumerate(input_shape) if i not in axes])]


def _normalize_axes(indices, rank, error, duplicates_fail=False):
    """The axes in range [0, rank); a duplicate fails where the kernel runs (TF's shape
    function lets it pass)."""
    axes = []
    for raw in indices:
        axis = int(raw)
        if not -rank <= axis < rank:
            raise error(f"Invalid reduction dimension {axis} for input with {rank} dimensions.")
        normalized = axis + rank if axis < 0 else axis
        if normalized in axes:
            if duplicates_fail:
                raise error(f"Duplicate reduction dimension {axis}")
            continue
        axes.append(normalized)
    return axes


@register
class ReduceJoin(OpType):
    """Joins the strings along ``reduction_indices``: the first index listed varies fastest."""

    inputs = ["inputs: string", "reduction_indices: int32"]
    outputs = ["output: string"]
    attrs = {"keep_dims": Attr("bool", False), "separator": Attr("string", "")}
    host_only = True
    not_differentiable = True

    def infer(op):
        return ic.run_shape_fn(op, _reduce_join_shape)

    def host(op, value, indices):
        strings = _strings(value)
        rank = strings.ndim

        def error(message):
            return InvalidArgumentError(None, op, message)

        axes = _normalize_axes(np.asarray(indices).reshape(-1), rank, error, duplicates_fail=True)
        kept = [i for i in range(rank) if i not in axes]
        order = list(reversed(axes))  # the last listed index is the outermost
        moved = np.transpose(strings, kept + order)
        kept_shape = [strings.shape[i] for i in kept]
        flat = moved.reshape(kept_shape + [-1]) if axes else moved.reshape(kept_shape + [1])
        separator = _bytes(op._attrs["separator"])
        out = np.empty(kept_shape, dtype=object)
        for index in np.ndindex(*kept_shape):
            out[index] = separator.join(flat[index])
        if op._attrs["keep_dims"]:
            out = out.reshape([1 if i in axes else strings.shape[i] for i in range(rank)])
        return [out]


# -- functions --------------------------------------------------------------------------------
def string_length(input, name=None, unit="BYTE"):  # noqa: A002
    """tf.strings.length."""
    return apply_op("StringLength", [input], {"unit": unit}, name).outputs[0]


def lower(input, encoding="", name=None):  # noqa: A002
    return apply_op("StringLower", [input], {"encoding": encoding}, name).outputs[0]


def upper(input, encoding="", name=None):  # noqa: A002
    return apply_op("StringUpper", [input], {"encoding": encoding}, name).outputs[0]


def strip(input, name=None):  # noqa: A002
    """tf.strings.strip / tf.string_strip."""
    return apply_op("StringStrip", [input], {}, name).outputs[0]


def substr(input, pos, len, name=None, unit="BYTE"):  # noqa: A002
    """tf.strings.substr / tf.substr."""
    return apply_op("Substr", [input, pos, len], {"unit": unit}, name).outputs[0]


def _is_static_string(x):
    return isinstance(x, (str, bytes))


def regex_replace(input, pattern, rewrite, replace_global=True, name=None):  # noqa: A002
    """StaticRegexReplace when pattern and rewrite are Python strings, else RegexReplace."""
    if _is_static_string(pattern) and _is_static_string(rewrite):
        return apply_op("StaticRegexReplace", [input], {"pattern": pattern, "rewrite": rewrite,
                                                        "replace_global": bool(replace_global)}, name).outputs[0]
    return apply_op("RegexReplace", [input, pattern, rewrite], {"replace_global": bool(replace_global)},
                    name).outputs[0]


def regex_full_match(input, pattern, name=None):  # noqa: A002
    if _is_static_string(pattern):
        return apply_op("StaticRegexFullMatch", [input], {"pattern": pattern}, name).outputs[0]
    return apply_op("RegexFullMatch", [input, pattern], {}, name).outputs[0]


def reduce_join(inputs, axis=None, keep_dims=None, separator="", name=None, reduction_indices=None, keepdims=None):
    """tf.reduce_join / tf.strings.reduce_join (TF 1.15's reduce_join with its deprecated names)."""
    from . import math_ops
    from .array_ops import rank as _rank

    if axis is not None and reduction_indices is not None:
        raise ValueError("Cannot specify both 'axis' and 'reduction_indices'.")
    if keep_dims is not None and keepdims is not None:
        raise ValueError("Cannot specify both 'keep_dims' and 'keepdims'.")
    axis = reduction_indices if axis is None else axis
    keepdims = bool(keep_dims if keepdims is None else keepdims)
    with name_scope(None, "ReduceJoin", [inputs, axis]):
        inputs_t = convert_to_tensor(inputs)
        if axis is None:
            if inputs_t.shape.ndims is not None:
                axis = convert_to_tensor(np.arange(inputs_t.shape.ndims - 1, -1, -1, dtype=np.int32))
            else:
                axis = math_ops.range(_rank(inputs_t) - 1, -1, -1)
        return apply_op("ReduceJoin", [inputs_t, axis], {"keep_dims": keepdims, "separator": separator},
                        name).outputs[0]


def string_format(template, inputs, placeholder="{}", summarize=3, name=None):
    """tf.strings.format: one StringFormat op."""
    if isinstance(inputs, (Tensor,)) or not isinstance(inputs, (list, tuple)):
        inputs = [inputs]
    if template.count(placeholder) != len(inputs):
        raise ValueError(f"{template.count(placeholder)} placeholder(s) in template does not match "
                         f"{len(inputs)} tensor(s) provided as input")
    from .logging_ops import _create_with_list

    return _create_with_list("StringFormat", [], "inputs", list(inputs), "T",
                             {"template": template, "placeholder": placeholder, "summarize": summarize},
                             name)[0]


TF_EXPORTS = {"string_strip": strip, "substr": substr, "regex_replace": regex_replace, "reduce_join": reduce_join}
STRINGS_EXPORTS = {"length": string_length, "lower": lower, "upper": upper, "strip": strip, "substr": substr,
                   "regex_replace": regex_replace, "regex_full_match": regex_full_match, "reduce_join": reduce_join,
                   "format": string_format}
