"""tf.io.decode_csv / tf.decode_csv: the DecodeCSV op (TF 1.15's OpDef; kernel semantics
and messages of core/kernels/decode_csv_op.cc), a host op (it parses strings) run around
the compiled step or inside a tf.data map function.

Each record splits at ``field_delim``; with ``use_quote_delim`` a field in double quotes may
hold the delimiter and ``""`` stands for a quote. Output k has the records' shape and the
dtype of ``record_defaults[k]``: an empty field (or ``na_value``) takes that default, and a
default with no elements makes the field required. ``select_cols`` keeps only those
columns (increasing indices).
"""
from __future__ import annotations

import numpy as np

from .. import dtypes
from ..convert import convert_to_tensor
from ..errors import InvalidArgumentError
from ..graph import get_default_graph, name_scope
from ..registry import Attr, OpType, register

_TYPES = (dtypes.float32, dtypes.float64, dtypes.int32, dtypes.int64, dtypes.string)
_INT_RANGES = {dtypes.int32: (-2**31, 2**31 - 1), dtypes.int64: (-2**63, 2**63 - 1)}


def _text(value) -> str:
    return value.decode("utf-8") if isinstance(value, bytes) else str(value)


def _split(op, record: str, delim: str, use_quotes: bool, index: int) -> list:
    """The fields of one record (TF's ExtractFields: an empty record has none)."""
    if not record:
        return []
    if not use_quotes:
        return record.split(delim)
    fields, i, n = [], 0, len(record)
    while True:
        if i < n and record[i] == '"':
            field, i = [], i + 1
            while True:
                if i >= n:
                    raise InvalidArgumentError(None, op, f"Quoted field has to end with quote followed by delim or "
                                                         f"end of record {index}")
                if record[i] == '"':
                    if i + 1 < n and record[i + 1] == '"':
                        field.append('"')
                        i += 2
                        continue
                    i += 1
                    break
                field.append(record[i])
                i += 1
            if i < n and record[i] != delim:
                raise InvalidArgumentError(None, op, f"Quote inside a string has to be escaped by another quote in "
                                                     f"record {index}")
            fields.append("".join(field))
        else:
            end = record.find(delim, i)
            end = n if end < 0 else end
            fields.append(record[i:end])
            i = end
        if i >= n:
            return fields
        i += 1  # the delimiter
        if i == n:
            fields.append("")
            return fields


def _parse(op, text: str, dtype, field: int, record: int):
    if dtype == dtypes.string:
        return text.encode("utf-8")
    try:
        if dtype.is_integer:
            value = int(text.strip(), 10)
            low, high = _INT_RANGES[dtype]
            if not low <= value <= high:
                raise ValueError(text)
            return value
        return float(text)
    except ValueError:
        kind = "float" if dtype.is_floating and dtype == dtypes.float32 else \
            "double" if dtype.is_floating else dtype.name
        raise InvalidArgumentError(None, op, f"Field {field} in record {record} is not a valid {kind}: {text}") \
            from None


def _decode_csv_host(op, records, *defaults):
    attrs = op._attrs
    out_types = [dtypes.as_dtype(t) for t in attrs["OUT_TYPE"]]
    delim, na_value = _text(attrs["field_delim"]), _text(attrs["na_value"])
    use_quotes, select = attrs["use_quote_delim"], list(attrs["select_cols"] or [])
    records = np.asarray(records, dtype=object)
    flat = [_text(r) for r in records.reshape(-1)]
    columns = [[] for _ in out_types]
    for index, record in enumerate(flat):
        fields = _split(op, record, delim, use_quotes, index)
        if select:
            if select[-1] >= len(fields):
                raise InvalidArgumentError(None, op, f"Expect {select[-1] + 1} fields but have {len(fields)} in "
                                                     f"record {index}")
            fields = [fields[c] for c in select]
        elif len(fields) != len(out_types):
            raise InvalidArgumentError(None, op, f"Expect {len(out_types)} fields but have {len(fields)} in record "
                                                 f"{index}")
        for k, (text, dtype) in enumerate(zip(fields, out_types)):
            if text == "" or (na_value and text == na_value):
                default = np.asarray(defaults[k]).reshape(-1)
                if default.size == 0:
                    raise InvalidArgumentError(None, op, f"Field {k} is required but missing in record {index}!")
                columns[k].append(default[0])
            else:
                columns[k].append(_parse(op, text, dtype, k, index))
    outputs = []
    for column, dtype in zip(columns, out_types):
        np_dtype = object if dtype == dtypes.string else dtype.as_numpy_dtype
        outputs.append(np.array(column, dtype=np_dtype).reshape(records.shape))
    return outputs


@register
class DecodeCSV(OpType):
    inputs = ["records: string", "record_defaults: OUT_TYPE"]
    outputs = ["output: OUT_TYPE"]
    attrs = {"OUT_TYPE": Attr("list(type)", allowed=_TYPES), "field_delim": Attr("string", ","),
             "use_quote_delim": Attr("bool", True), "na_value": Attr("string", ""),
             "select_cols": Attr("list(int)", [])}
    host_only = True
    not_differentiable = True

    def infer(op):
        records = op._inputs[0].shape
        return [records] * len(op._attrs["OUT_TYPE"])

    host = staticmethod(_decode_csv_host)


def decode_csv(records, record_defaults, field_delim=",", use_quote_delim=True, name=None, na_value="",
               select_cols=None):
    """tf.io.decode_csv (TF 1.15): one tensor per column, shaped like ``records``."""
    if select_cols is not None:
        if any(select_cols[i] >= select_cols[i + 1] for i in range(len(select_cols) - 1)):
            raise ValueError("select_cols is not strictly increasing.")
        if select_cols and select_cols[0] < 0:
            raise ValueError("select_cols contains negative values.")
        if len(select_cols) != len(record_defaults):
            raise ValueError("Length of select_cols and record_defaults do not match.")
    with name_scope(name, "DecodeCSV", [records]) as scope:
        records = convert_to_tensor(records, dtype=dtypes.string, name="records")
        defaults = [convert_to_tensor(d, name=f"record_defaults_{i}") for i, d in enumerate(record_defaults)]
        for d in defaults:
            if d.dtype.base_dtype not in _TYPES:
                raise TypeError(f"record_defaults must be float32, float64, int32, int64 or string, got {d.dtype}")
        attrs = {"OUT_TYPE": [d.dtype.base_dtype for d in defaults], "field_delim": field_delim,
                 "use_quote_delim": use_quote_delim, "na_value": na_value, "select_cols": list(select_cols or [])}
        return list(get_default_graph().create_op("DecodeCSV", [records] + defaults, name=scope, attrs=attrs).outputs)


TF_EXPORTS = {"decode_csv": decode_csv}
IO_EXPORTS = {"decode_csv": decode_csv}
