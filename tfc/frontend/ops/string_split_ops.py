"""tf.string_split (TF1: StringSplit, a set of delimiter characters, ``skip_empty``) and
tf.strings.split (TF1's strings_split_v1: StringSplitV2, Python's ``str.split`` with a
separator string and ``maxsplit``), each returning a SparseTensor of strings
[rows, longest row]. Host ops (strings are no values of the compiled program), with the
splitting rules of TF's kernels (core/kernels/string_split_op.cc).
"""
from __future__ import annotations

import numpy as np

from .. import dtypes
from ..errors import InvalidArgumentError
from ..graph import name_scope
from ..op_helper import apply_op
from ..registry import Attr, OpType, register
from ..sparse_tensor import SparseTensor
from . import inference_context as ic

_WHITESPACE = b" \t\n\v\f\r"


def _split_any(text: bytes, delimiter: bytes, skip_empty: bool) -> list:
    """StringSplit's Split: on any byte of ``delimiter`` (each byte when it is empty); an
    empty input has no tokens."""
    if not text:
        return []
    if not delimiter:
        return [text[i:i + 1] for i in range(len(text))]
    tokens, start = [], 0
    for i, byte in enumerate(text):
        if byte in delimiter:
            tokens.append(text[start:i])
            start = i + 1
    tokens.append(text[start:])
    return [t for t in tokens if t] if skip_empty else tokens


def _split_v2(text: bytes, sep: bytes, maxsplit: int) -> list:
    """StringSplitV2's SplitV2 (Python's str.split, as TF's kernel words it: with whitespace
    and a ``maxsplit`` reached, the rest after the whitespace is one more token, possibly empty)."""
    if maxsplit == 0:
        return [text]
    tokens = []
    if not sep:
        position, size = 0, len(text)
        while position < size and text[position] in _WHITESPACE:
            position += 1
        split = 0
        while position < size:
            end = position
            while end < size and text[end] not in _WHITESPACE:
                end += 1
            tokens.append(text[position:end])
            position = end
            while position < size and text[position] in _WHITESPACE:
                position += 1
            split += 1
            if 0 < maxsplit == split:
                tokens.append(text[position:])
                return tokens
        return tokens
    split = 0
    while True:
        found = text.find(sep)
        if found < 0:
            break
        tokens.append(text[:found])
        text = text[found + len(sep):]
        split += 1
        if 0 < maxsplit == split:
            break
    tokens.append(text)
    return tokens


def _sparse_strings(op, rows: list) -> list:
    indices = [[i, j] for i, tokens in enumerate(rows) for j in range(len(tokens))]
    values = np.empty(len(indices), dtype=object)
    values[:] = [t for tokens in rows for t in tokens]
    width = max((len(tokens) for tokens in rows), default=0)
    return [np.array(indices, dtype=np.int64).reshape(-1, 2), values, np.array([len(rows), width], np.int64)]


def _check_inputs(op, source, delimiter, what: str) -> list:
    source, delimiter = np.asarray(source, dtype=object), np.asarray(delimiter, dtype=object)
    if source.ndim != 1:
        raise InvalidArgumentError(None, op, f"input must be a vector, got shape: {_shape(source.shape)}")
    if delimiter.ndim != 0:
        raise InvalidArgumentError(None, op, f"{what} must be a scalar, got shape: {_shape(delimiter.shape)}")
    return [bytes(s) for s in source], bytes(delimiter[()])


def _shape(shape) -> str:
    return "[" + ",".join(str(d) for d in shape) + "]"


def _split_shape(ctx):
    ic.with_rank(ctx.input(0), 1)
    ic.with_rank(ctx.input(1), 0)
    return [[None, 2], [None], [2]]


@register
class StringSplit(OpType):
    inputs = ["input: string", "delimiter: string"]
    outputs = ["indices: int64", "values: string", "shape: int64"]
    attrs = {"skip_empty": Attr("bool", True)}
    host_only = True
    not_differentiable = True

    def infer(op):
        return ic.run_shape_fn(op, _split_shape)

    def host(op, source, delimiter):
        source, delimiter = _check_inputs(op, source, delimiter, "delimiter")
        skip_empty = op._attrs["skip_empty"]
        return _sparse_strings(op, [_split_any(s, delimiter, skip_empty) for s in source])


@register
class StringSplitV2(OpType):
    inputs = ["input: string", "sep: string"]
    outputs = ["indices: int64", "values: string", "shape: int64"]
    attrs = {"maxsplit": Attr("int", -1)}
    host_only = True
    not_differentiable = True

    def infer(op):
        return ic.run_shape_fn(op, _split_shape)

    def host(op, source, sep):
        source, sep = _check_inputs(op, source, sep, "sep")
        maxsplit = op._attrs["maxsplit"]
        return _sparse_strings(op, [_split_v2(s, sep, maxsplit) for s in source])


def _sparse_result(indices, values, shape) -> SparseTensor:
    indices.set_shape([None, 2])
    values.set_shape([None])
    shape.set_shape([2])
    return SparseTensor(indices, values, shape)


def string_split(source, sep=None, skip_empty=True, delimiter=None, result_type="SparseTensor", name=None):
    """tf.string_split (TF1): each string of a vector split on any character of
    ``delimiter`` (default " "; "" splits into bytes), empty tokens dropped unless
    ``skip_empty`` is False; a SparseTensor [rows, longest row] of the tokens."""
    from ..convert import convert_to_tensor

    if result_type != "SparseTensor":
        if result_type == "RaggedTensor":
            raise NotImplementedError("tf.string_split(result_type='RaggedTensor'): tfc has no RaggedTensor yet")
        raise ValueError("result_type must be 'RaggedTensor' or 'SparseTensor'.")
    if delimiter is None:
        delimiter = sep
    with name_scope(name, "StringSplit", [source]):
        if delimiter is None:
            delimiter = " "
        delimiter = convert_to_tensor(delimiter, dtype=dtypes.string)
        source = convert_to_tensor(source, dtype=dtypes.string)
        indices, values, shape = apply_op("StringSplit", [source, delimiter],
                                          {"skip_empty": bool(skip_empty)}).outputs
        return _sparse_result(indices, values, shape)


def strings_split_v1(input=None, sep=None, maxsplit=-1, result_type="SparseTensor", source=None,  # noqa: A002
                     name=None):
    """tf.strings.split (TF1): each string split like Python's ``str.split(sep, maxsplit)``
    (``sep`` None: runs of whitespace, no empty tokens); a SparseTensor by default."""
    from ..convert import convert_to_tensor
    from .array_ops import expand_dims

    if input is None:
        input = source  # noqa: A001
    if result_type == "RaggedTensor":
        raise NotImplementedError("tf.strings.split(result_type='RaggedTensor'): tfc has no RaggedTensor yet")
    if result_type != "SparseTensor":
        raise ValueError("result_type must be 'RaggedTensor' or 'SparseTensor'.")
    with name_scope(name, "StringSplit", [input]):
        input = convert_to_tensor(input, dtype=dtypes.string, name="input")  # noqa: A001
        if input.shape.ndims == 0:
            input = expand_dims(input, 0)  # noqa: A001
        if input.shape.ndims is not None and input.shape.ndims != 1:
            raise NotImplementedError(f"tf.strings.split of a rank-{input.shape.ndims} tensor goes through a "
                                      "RaggedTensor in TensorFlow; tfc splits scalars and vectors only")
        sep = convert_to_tensor("" if sep is None else sep, dtype=dtypes.string)
        indices, values, shape = apply_op("StringSplitV2", [input, sep], {"maxsplit": int(maxsplit)}).outputs
        return _sparse_result(indices, values, shape)


TF_EXPORTS = {"string_split": string_split}
STRINGS_EXPORTS = {"split": strings_split_v1}
