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

What the ``check`` op verifies for each of its kinds is in tfc/ir/ops.py.
"""
from __future__ import annotations

import ctypes
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
]
CODES = {entry.code: entry for entry in _TABLE}


def new_record() -> list:
    return [0] * RECORD_SIZE


def describe(code: int, record: Sequence[int], label_values=None) -> Optional[tuple]:
    """(tf.errors class name, TF's message) for a code and its filled record, or None for
    an unknown code. LABEL lists the labels: ``label_values``, else read where the record
    says they are (the failed program's buffers are still alive when it returns)."""
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
