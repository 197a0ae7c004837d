"""String ops of TF 1.15 (tf.as_string, tf.string_to_number, tf.strings.join), as host ops:
a string tensor is no value of the compiled program, so they run in Python around it
(``tfc/runtime/host.py``) with the text TF's kernels produce."""
from __future__ import annotations

import re

import numpy as np

from . import inference_context as ic
from .. import dtypes
from ..errors import InvalidArgumentError
from ..op_helper import apply_op
from ..registry import Attr, OpType, register
from . import sharded_save_ops  # noqa: F401  (registers StringJoin)
from .sharded_save_ops import _strings


def _text(value) -> str:
    return value.decode("utf-8") if isinstance(value, bytes) else str(value)


@register
class AsString(OpType):
    """Each element as a string, with C printf formatting (TF's AsStringOp)."""

    inputs = ["input: T"]
    outputs = ["output: string"]
    attrs = {"T": Attr("type"), "precision": Attr("int", -1), "scientific": Attr("bool", False),
             "shortest": Attr("bool", False), "width": Attr("int", -1), "fill": Attr("string", "")}
    host_only = True
    not_differentiable = True
    infer = ic.unchanged_shape

    def host(op, value):
        attrs = op._attrs
        dtype = dtypes.as_dtype(attrs["T"]).base_dtype
        precision, width, fill = attrs["precision"], attrs["width"], _text(attrs["fill"])
        scientific, shortest = attrs["scientific"], attrs["shortest"]
        if len(fill) > 1:
            raise InvalidArgumentError(None, op, "Fill string must be one or fewer characters")
        if scientific and shortest:
            raise InvalidArgumentError(None, op, "Cannot select both scientific and shortest notation")
        fmt = "%"
        if fill:
            if fill not in " +-0#":
                raise InvalidArgumentError(None, op, f'Fill argument not supported: "{fill}"')
            fmt += fill
        if width > -1:
            fmt += str(width)
        if precision > -1:
            fmt += f".{precision}"
        array = np.asarray(value)
        out = np.empty(array.shape, dtype=object)
        if dtype.is_floating:
            fmt += "g" if shortest else "e" if scientific else "f"
            convert = float
        elif dtype.is_integer:
            if precision > -1 or scientific or shortest:
                raise InvalidArgumentError(None, op, f"Cannot select precision, scientific or shortest for "
                                                     f"type {dtype.name}")
            fmt += "d"
            convert = int
        elif dtype == dtypes.bool:
            for index, item in np.ndenumerate(array):
                out[index] = b"true" if item else b"false"
            return [out]
        else:
            raise InvalidArgumentError(None, op, f"Value for attr 'T' of {dtype.name} is not in the list of "
                                                 "allowed values")
        for index, item in np.ndenumerate(array):
            text = fmt % convert(item)
            out[index] = text.encode()
        return [out]


_INT = re.compile(r"\s*[+-]?\d+\s*")
_INT_RANGES = {dtypes.int32: (-2 ** 31, 2 ** 31 - 1), dtypes.int64: (-2 ** 63, 2 ** 63 - 1)}


@register
class StringToNumber(OpType):
    """Parses each string as a number of ``out_type`` (TF's StringToNumberOp)."""

    inputs = ["string_tensor: string"]
    outputs = ["output: out_type"]
    attrs = {"out_type": Attr("type", dtypes.float32)}
    host_only = True
    not_differentiable = True
    infer = ic.unchanged_shape

    def host(op, value):
        out_type = dtypes.as_dtype(op._attrs["out_type"]).base_dtype
        strings = _strings(value)
        out = np.empty(strings.shape, dtype=out_type.as_numpy_dtype)
        for index, item in np.ndenumerate(strings):
            text = item.decode("utf-8", "replace")
            try:
                if out_type.is_integer:
                    if not _INT.fullmatch(text):
                        raise ValueError
                    number = int(text)
                    low, high = _INT_RANGES[out_type]
                    if not low <= number <= high:
                        raise ValueError
                else:
                    if "_" in text:
                        raise ValueError
                    number = float(text)
                    if out_type == dtypes.float32 and np.isfinite(number) and abs(number) > np.finfo(np.float32).max:
                        raise ValueError
            except ValueError:
                raise InvalidArgumentError(None, op, "StringToNumberOp could not correctly convert string: "
                                           + text) from None
            out[index] = number
        return [out]


def as_string(input, precision=-1, scientific=False, shortest=False, width=-1, fill="", name=None):  # noqa: A002
    """tf.as_string / tf.strings.as_string."""
    return apply_op("AsString", [input], {"precision": precision, "scientific": scientific, "shortest": shortest,
                                          "width": width, "fill": fill}, name).outputs[0]


def string_to_number(string_tensor, out_type=dtypes.float32, name=None):
    """tf.string_to_number / tf.strings.to_number."""
    return apply_op("StringToNumber", [string_tensor], {"out_type": dtypes.as_dtype(out_type)}, name).outputs[0]


def to_number(input, out_type=dtypes.float32, name=None):  # noqa: A002
    return string_to_number(input, out_type, name)


def string_join(inputs, separator="", name=None):
    """tf.string_join / tf.strings.join."""
    return apply_op("StringJoin", [list(inputs)], {"separator": separator}, name).outputs[0]


TF_EXPORTS = {"as_string": as_string, "string_to_number": string_to_number, "string_join": string_join}
STRINGS_EXPORTS = {"as_string": as_string, "to_number": to_number, "join": string_join}
