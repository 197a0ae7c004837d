"""Run-time errors of compiled programs: the codes, the error record, and TF's messages.

One table for everyone: the evaluator raises these messages, codegen returns these codes
and fills the record, and both runtimes (``tfc.runtime.executable`` and the artifact
loader ``tfc.aot_runtime``) turn a code and its record back into the message. Standard
library and numpy only, so the loader can import it without the compiler.

A failing kernel returns its code (non-zero) and fills the error record, an
``int64[RECORD_SIZE]``; the program entry then stores the failing top-level op's index
in slot ``OP`` and returns the code. Slots:

  BOUND     the bound of the valid range (for SLICE_SIZE: dim - begin)
  OP        the index of the failing top-level op
  POSITION  the row-major position of the first bad element (SLICE_EMPTY_DIM: the size;
            LABEL: the number of labels)
  VALUE     the bad value
  EXTRA     the dimension a slice message names (LABEL: the address of the labels)
  RANK      the rank of the shape in DIMS (LABEL: the bytes of one label)
  DIMS...   that shape's dims (the first MAX_DIMS of them)

ASSERT (a ``check`` of kind ``assert``: tf.Assert and the ops whose message shows run-time
values) has its own layout: EXTRA is the address of the check's descriptor, a
NUL-terminated JSON object in the program's constant data (``assert_descriptor``: the
message's text pieces, ``summarize``, each run-time value's dtype and shape, ``null`` for
dims known only at run time), and DIMS... hold each value's address, then the values of
its ``null`` dims in order. The message is ``text[0] + S(value 0) + text[1] + ...`` where
S is TF's ``Tensor::SummarizeValue(summarize)`` (``summarize_value``).

What the ``check`` op verifies for each of its kinds is in tfc/ir/ops.py.
"""
from __future__ import annotations

import ctypes
import json
import math
from dataclasses import dataclass
from typing import Callable, Optional, Sequence

import numpy as np

BOUND, OP, POSITION, VALUE, EXTRA, RANK, DIMS = range(7)
RECORD_SIZE = 32
MAX_DIMS = RECORD_SIZE - DIMS

GATHER_INDEX = 1
SLICE_INDEX = 2
SLICE_BEGIN = 3
SLICE_SIZE = 4
SLICE_EMPTY_DIM = 5
SEGMENT_ID = 6
LABEL = 7
DIVISION_BY_ZERO = 8
BINARY_OP_ERROR = 9
NEGATIVE_POWER = 10
EMPTY_REDUCTION_AXIS = 11
ASSERT = 12


def _shape(record) -> list:
    rank = int(record[RANK])
    return [int(d) for d in record[DIMS:DIMS + min(rank, MAX_DIMS)]] + ["?"] * max(0, rank - MAX_DIMS)


def _shape_text(record) -> str:
    return "[" + ",".join(str(d) for d in _shape(record)) + "]"


def slice_debug_string(shape: Sequence, flat: int) -> str:
    """TF's SliceDebugString: the multi-index of a flat position ("" for rank 0)."""
    if not shape:
        return ""
    if len(shape) == 1 or "?" in shape:
        return f"[{flat}]"
    index = []
    for d in reversed(shape[1:]):
        index.append(flat % d if d else 0)
        flat = flat // d if d else flat
    index.append(flat)
    return "[" + ",".join(str(i) for i in reversed(index)) + "]"


def _gather_index(r, values) -> str:
    return f"indices[{r[POSITION]}] = {r[VALUE]} is not in [0, {r[BOUND]})"


def _slice_index(r, values) -> str:
    return f"slice index {r[VALUE]} of dimension {r[EXTRA]} out of bounds."


def _slice_begin(r, values) -> str:
    return f"Expected begin[{r[EXTRA]}] in [0, {r[BOUND]}], but got {r[VALUE]}"


def _slice_size(r, values) -> str:
    return f"Expected size[{r[EXTRA]}] in [0, {r[BOUND]}], but got {r[VALUE]}"


def _slice_empty_dim(r, values) -> str:
    axis = r[EXTRA]
    return (f"Expected begin[{axis}] == 0 (got {r[VALUE]}) and size[{axis}] == 0 (got {r[POSITION]}) when "
            f"input.dim_size({axis}) == 0")


def _segment_id(r, values) -> str:
    where = slice_debug_string(_shape(r), int(r[POSITION]))
    return f"segment_ids{where} = {r[VALUE]} is out of range [0, {r[BOUND]})"


def _label(r, values) -> str:
    if values is None:
        values = read_label_values(r)
    listed = " ".join(str(int(v)) for v in np.asarray(values).reshape(-1))
    return (f"Received a label value of {r[VALUE]} which is outside the valid range of [0, {r[BOUND]}).  "
            f"Label values: {listed}")


def _division_by_zero(r, values) -> str:
    return "Integer division by zero"


def _binary_op_error(r, values) -> str:
    return "Unexpected error in binary operator (only integer div and mod should have errors)"


def _negative_power(r, values) -> str:
    return "Integers to negative integer powers are not allowed"


def _empty_reduction_axis(r, values) -> str:
    return f"Reduction axis {r[EXTRA]} is empty in shape {_shape_text(r)}"


def _assert(r, values) -> str:
    """tf.Assert's message: the descriptor's text pieces around the summarized values
    (``values``: (text, summarize, arrays) from the evaluator, else read where the record
    says they are)."""
    if values is None:
        values = read_assert_values(r)
    text, summarize, arrays = values
    pieces = [text[0]]
    for array, after in zip(arrays, text[1:]):
        pieces += [summarize_value(array, summarize), after]
    return "".join(pieces)


@dataclass(frozen=True)
class ErrorCode:
    code: int
    name: str  # the C header's <PREFIX>_ERROR_<name>
    error: str  # the tf.errors class raised
    summary: str  # the manifest's description
    message: Callable  # (record, label values or None) -> TF's message


_TABLE = [
    ErrorCode(GATHER_INDEX, "GATHER_INDEX", "InvalidArgumentError", "gather index out of range", _gather_index),
    ErrorCode(SLICE_INDEX, "SLICE_INDEX", "InvalidArgumentError", "slice index out of bounds", _slice_index),
    ErrorCode(SLICE_BEGIN, "SLICE_BEGIN", "InvalidArgumentError", "slice begin out of range", _slice_begin),
    ErrorCode(SLICE_SIZE, "SLICE_SIZE", "InvalidArgumentError", "slice size out of range", _slice_size),
    ErrorCode(SLICE_EMPTY_DIM, "SLICE_EMPTY_DIM", "InvalidArgumentError", "slice of an empty dimension",
              _slice_empty_dim),
    ErrorCode(SEGMENT_ID, "SEGMENT_ID", "InvalidArgumentError", "segment id out of range", _segment_id),
    ErrorCode(LABEL, "LABEL", "InvalidArgumentError", "label out of range", _label),
    ErrorCode(DIVISION_BY_ZERO, "DIVISION_BY_ZERO", "InvalidArgumentError", "integer division by zero",
              _division_by_zero),
    ErrorCode(BINARY_OP_ERROR, "BINARY_OP_ERROR", "InternalError", "integer truncating division by zero",
              _binary_op_error),
    ErrorCode(NEGATIVE_POWER, "NEGATIVE_POWER", "InvalidArgumentError", "integer to a negative power",
              _negative_power),
    ErrorCode(EMPTY_REDUCTION_AXIS, "EMPTY_REDUCTION_AXIS", "InvalidArgumentError", "argmax/argmin of an empty axis",
              _empty_reduction_axis),
    ErrorCode(ASSERT, "ASSERT", "InvalidArgumentError", "assertion failed (tf.Assert)", _assert),
]
CODES = {entry.code: entry for entry in _TABLE}


def new_record() -> list:
    return [0] * RECORD_SIZE


def describe(code: int, record: Sequence[int], label_values=None) -> Optional[tuple]:
    """(tf.errors class name, TF's message) for a code and its filled record, or None for
    an unknown code. LABEL lists the labels: ``label_values``, else read where the record
    says they are (the failed program's buffers are still alive when it returns); ASSERT
    formats ``label_values`` = (text, summarize, arrays), else what the record points at."""
    entry = CODES.get(int(code))
    if entry is None:
        return None
    record = [int(v) for v in record]
    return entry.error, entry.message(record, label_values)


def read_label_values(record: Sequence[int]) -> np.ndarray:
    """The labels a LABEL record points at (int32 or int64, by the element size)."""
    count, address, size = int(record[POSITION]), int(record[EXTRA]), int(record[RANK])
    dtype = np.int64 if size == 8 else np.int32
    if count <= 0 or address == 0:
        return np.zeros(0, dtype)
    raw = (ctypes.c_char * (count * size)).from_address(address)
    return np.frombuffer(bytes(raw), dtype=dtype)


# -- ASSERT: the descriptor, the values, TF's formatting -----------------------------------------
def assert_descriptor(text: Sequence[str], summarize: int, values: Sequence[tuple]) -> bytes:
    """The NUL-terminated descriptor of an ``assert`` check: its text pieces, summarize,
    and per run-time value (numpy dtype string, dims with ``None`` for run-time dims)."""
    data = {"text": list(text), "summarize": int(summarize),
            "values": [[str(dtype), [None if d is None else int(d) for d in dims]] for dtype, dims in values]}
    return json.dumps(data, separators=(",", ":")).encode() + b"\0"


def read_assert_values(record: Sequence[int]) -> tuple:
    """(text, summarize, arrays) of a failed ``assert`` check, read from memory: the
    descriptor and the values' buffers (still alive when the program has returned)."""
    descriptor = json.loads(ctypes.string_at(int(record[EXTRA])).decode())
    slot = DIMS + len(descriptor["values"])
    arrays = []
    for i, (dtype, dims) in enumerate(descriptor["values"]):
        shape = []
        for d in dims:
            if d is None:
                d, slot = int(record[slot]), slot + 1
            shape.append(d)
        dtype = np.dtype(dtype)
        count = math.prod(shape)
        address = int(record[DIMS + i])
        raw = ctypes.string_at(address, count * dtype.itemsize) if count and address else b""
        arrays.append(np.frombuffer(raw, dtype=dtype).reshape(shape))
    return descriptor["text"], descriptor["summarize"], arrays


def summarize_value(value, max_entries: int = 3) -> str:
    """TF 1.15's ``Tensor::SummarizeValue(max_entries)`` (what tf.Assert prints): at most
    ``max_entries`` elements (all when negative) in row-major order, nested brackets for
    rank >= 2 (``[1 2][3...]...``), "..." when elements were left out; bools as 1/0,
    floats as TF's FloatToBuffer/DoubleToBuffer, strings C-escaped."""
    array = np.asarray(value)
    flat = array.reshape(-1)
    count = flat.size
    if max_entries < 0:
        max_entries = count
    limit = min(max_entries, count)
    element = _element_formatter(array.dtype)
    if array.ndim == 0:
        text = " ".join(element(flat[i]) for i in range(limit))
        return text + ("..." if count > limit else "")
    out: list = []
    _print_one_dim(0, array.shape, limit, flat, [0], out, element)
    return "".join(out) + ("..." if count > limit else "")


def _print_one_dim(dim: int, shape, limit: int, flat, position: list, out: list, element) -> None:
    """PrintOneDim of TF's tensor.cc."""
    if position[0] >= limit:
        return
    size = shape[dim]
    if dim == len(shape) - 1:
        for i in range(size):
            if position[0] >= limit:
                if dim != 0 and i < size:
                    out.append("...")
                return
            if i > 0:
                out.append(" ")
            out.append(element(flat[position[0]]))
            position[0] += 1
        return
    for _ in range(size):
        opened = position[0] < limit
        if opened:
            out.append("[")
        _print_one_dim(dim + 1, shape, limit, flat, position, out, element)
        if position[0] < limit or opened:
            out.append("]")


def _element_formatter(dtype: np.dtype) -> Callable:
    if dtype == np.bool_:
        return lambda v: "1" if v else "0"
    if dtype.kind == "f":
        if dtype == np.float64:
            return lambda v: _float_text(float(v), 15, 17, float)
        return lambda v: _float_text(float(v), 6, 9, np.float32)  # float16 prints as its float value
    if dtype.kind in "iu":
        return lambda v: str(int(v))
    if dtype.kind in "OSU":
        return _object_text
    return lambda v: "?"


def _object_text(value) -> str:
    """A string element C-escaped (bytes as they are, text as UTF-8); anything else as str."""
    if isinstance(value, str):
        return c_escape(value.encode())
    if isinstance(value, (bytes, bytearray, np.bytes_)):
        return c_escape(bytes(value))
    if isinstance(value, (bool, np.bool_)):
        return "1" if value else "0"
    return str(value)


def _float_text(value: float, digits: int, more_digits: int, parse) -> str:
    """TF's FloatToBuffer (digits 6, else 9) / DoubleToBuffer (15, else 17): the shorter
    form when it reads back as the same value."""
    if math.isnan(value):
        return "-nan" if math.copysign(1.0, value) < 0 else "nan"
    text = "%.*g" % (digits, value)
    if math.isinf(value) or parse(text) == parse(value):
        return text
    return "%.*g" % (more_digits, value)


def c_escape(data: bytes) -> str:
    """TF's CEscape: \\n \\r \\t \\" \\' \\\\ and octal escapes for bytes that are not
    printable ASCII."""
    out = []
    for byte in data:
        ch = chr(byte)
        if ch in _C_ESCAPES:
            out.append(_C_ESCAPES[ch])
        elif byte >= 0x80 or not 0x20 <= byte < 0x7F:
            out.append("\\%03o" % byte)
        else:
            out.append(ch)
    return "".join(out)


_C_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t", '"': '\\"', "'": "\\'", "\\": "\\\\"}
