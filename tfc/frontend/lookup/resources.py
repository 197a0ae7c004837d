"""The table resources behind TF 1.15's lookup ops, with the semantics of TF's kernels
(core/kernels/lookup_table_op.cc, initializable_lookup_table.cc, lookup_util.cc):
``HashTable`` (filled once by an initializer), ``MutableHashTable`` (of scalars or of
tensors), ``DenseHashTable`` (TF's MutableDenseHashTable: bucket arrays and its probing),
and the reading of vocabulary text files (TextFileLineIterator). Each session keeps its
tables by resource name (``resources()``), as a TF session's ResourceMgr does; they go
away when the session closes."""

from __future__ import annotations

import itertools
import math
import re
import threading
import weakref

import numpy as np

from .. import dtypes, errors
from ..ops.sharded_save_ops import _strings
from ..ops.string_hash_ops import hash64

_M64 = (1 << 64) - 1
_RESOURCES: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()  # session -> {resource name: table}
_NO_SESSION: dict = {}
# A handle's value names its session by a number (as TF's ResourceHandle names its device),
# so a function run away from the step (a tf.data map on a reader thread) finds the table.
_TOKENS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()  # session -> number
_SESSIONS: "weakref.WeakValueDictionary" = weakref.WeakValueDictionary()  # number -> session
_COUNTER = itertools.count(1)
_LOCK = threading.Lock()


def _current_session():
    from tfc.runtime.host import current_session

    return current_session()


def resources(session=None) -> dict:
    """The tables of ``session`` (default: the session running the step): {name: table}."""
    session = _current_session() if session is None else session
    if session is None:
        return _NO_SESSION
    with _LOCK:
        return _RESOURCES.setdefault(session, {})


def handle_value(name: str) -> bytes:
    """The value of a handle to the table ``name`` of the session running the step."""
    session = _current_session()
    token = 0
    if session is not None:
        with _LOCK:
            token = _TOKENS.get(session)
            if token is None:
                token = _TOKENS[session] = next(_COUNTER)
                _SESSIONS[token] = session
    return f"{name}@{token}".encode()


def tables_of_handle(value: bytes):
    """(resource name, the tables of its session) of a handle's value; a bare name (no
    session number) is looked up in the session running the step."""
    text = value.decode() if isinstance(value, bytes) else str(value)
    name, sep, token = text.rpartition("@")
    if not sep or not token.isdigit():
        return text, resources()
    if token == "0":
        return name, _NO_SESSION
    session = _SESSIONS.get(int(token))
    return name, ({} if session is None else resources(session))


def _release(session) -> None:
    with _LOCK:
        _RESOURCES.pop(session, None)


def register_release() -> None:
    from tfc.runtime.host import on_session_close

    on_session_close(_release)


def _shape_text(shape) -> str:
    """TensorShape::DebugString: ``[2,3]``."""
    return "[" + ",".join(str(d) for d in shape) + "]"


def _numpy_dtype(dtype):
    dtype = dtypes.as_dtype(dtype).base_dtype
    return object if dtype == dtypes.string else dtype.as_numpy_dtype


def _keys_of(values, dtype) -> list:
    """Hashable Python keys (bytes for strings) of an array's elements, flat."""
    if dtypes.as_dtype(dtype).base_dtype == dtypes.string:
        return list(_strings(values).reshape(-1))
    return np.asarray(values).reshape(-1).tolist()


def type_name(dtype) -> str:
    """TF's DataTypeString: ``float`` and ``double`` for float32 and float64."""
    dtype = dtypes.as_dtype(dtype).base_dtype
    return {dtypes.float32: "float", dtypes.float64: "double"}.get(dtype, dtype.name)


def _text(value) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


# =====================================================================================
# Table resources
# =====================================================================================
class _Table:
    kind = "table"

    def __init__(self, key_dtype, value_dtype, value_shape=()):
        self.key_dtype = dtypes.as_dtype(key_dtype).base_dtype
        self.value_dtype = dtypes.as_dtype(value_dtype).base_dtype
        self.key_shape: tuple = ()
        self.value_shape = tuple(value_shape)

    def check_dtypes(self, op, key_dtype, value_dtype=None):
        have = [dtypes.resource, key_dtype] + ([value_dtype] if value_dtype is not None else [])
        want = [dtypes.resource, self.key_dtype] + ([self.value_dtype] if value_dtype is not None else [])
        have = [dtypes.as_dtype(d).base_dtype for d in have]
        if have != want:
            raise errors.InvalidArgumentError(None, op, "Signature mismatch, have: " + ", ".join(d.name for d in have)
                                              + " expected: " + ", ".join(d.name for d in want))

    def _check_insert_shapes(self, op, keys, values):
        """LookupInterface::CheckKeyAndValueTensorsHelper."""
        key_dims = len(self.key_shape)
        if tuple(keys.shape[len(keys.shape) - key_dims:]) != self.key_shape:
            raise errors.InvalidArgumentError(None, op, f"Input key shape {_shape_text(keys.shape)} must end with the "
                                                        f"table's key shape {_shape_text(self.key_shape)}")
        expected = tuple(keys.shape[:len(keys.shape) - key_dims]) + self.value_shape
        if tuple(values.shape) != expected:
            raise errors.InvalidArgumentError(None, op, f"Expected shape {_shape_text(expected)} for value, got "
                                                        f"{_shape_text(values.shape)}")

    def _default_for(self, op, keys, default):
        """The default value per key (LookupInterface::CheckFindArguments)."""
        outer = tuple(keys.shape[:len(keys.shape) - len(self.key_shape)])
        full = outer + self.value_shape
        if default.shape == self.value_shape:
            return outer, None, default[()] if default.ndim == 0 else default
        if default.shape == full:
            return outer, default.reshape((-1,) + self.value_shape), None
        raise errors.InvalidArgumentError(
            None, op, "default_value must either be a scalar or have the same shape as the key: expected "
                      f"{_shape_text(self.value_shape)} or {_shape_text(full)}, got {_shape_text(default.shape)}")

    def _output(self, shape):
        return np.empty(shape, dtype=_numpy_dtype(self.value_dtype))

    def insert(self, op, keys, values):
        raise errors.UnimplementedError(None, op, "Insert not supported by InitializableLookupTable implementations")

    def remove(self, op, keys):
        raise errors.UnimplementedError(None, op, "Remove not supported by InitializableLookupTable implementations")


class _DictTable(_Table):
    """Keys to values in a dict (insertion order stands in for the C++ map's order)."""

    def __init__(self, key_dtype, value_dtype, value_shape=()):
        super().__init__(key_dtype, value_dtype, value_shape)
        self.entries: dict = {}

    def size(self) -> int:
        return len(self.entries)

    def find(self, op, keys, default):
        outer, per_key_default, default = self._default_for(op, keys, default)
        flat = _keys_of(keys, self.key_dtype)
        out = self._output((len(flat),) + self.value_shape)
        for i, key in enumerate(flat):
            value = self.entries.get(key)
            if value is None:
                value = default if per_key_default is None else per_key_default[i]
            out[i] = value
        return out.reshape(outer + self.value_shape)

    def export(self, op):
        keys = np.empty((len(self.entries),), dtype=_numpy_dtype(self.key_dtype))
        values = self._output((len(self.entries),) + self.value_shape)
        for i, (key, value) in enumerate(self.entries.items()):
            keys[i] = key
            values[i] = value
        return keys, values

    def _pairs(self, keys, values):
        flat_values = np.asarray(values).reshape((-1,) + self.value_shape)
        return zip(_keys_of(keys, self.key_dtype), flat_values)


class HashTable(_DictTable):
    """An InitializableLookupTable (HashTable): filled once, by an initializer."""

    kind = "HashTable"

    def __init__(self, key_dtype, value_dtype):
        super().__init__(key_dtype, value_dtype)
        self.initialized = False

    def find(self, op, keys, default):
        if not self.initialized:
            raise errors.FailedPreconditionError(None, op, "Table not initialized.")
        return super().find(op, keys, default)

    def export(self, op):
        if not self.initialized:
            raise errors.AbortedError(None, op, "HashTable is not initialized.")
        return super().export(op)

    def initialize(self, op, pairs, total_size: int):
        """InitializableLookupTable::Initialize: a second initialization with as many
        entries is accepted (TF compares sizes only); HashTable::DoInsert refuses a key
        seen before with another value."""
        if self.initialized:
            if total_size != len(self.entries):
                raise errors.FailedPreconditionError(None, op, "Table was already initialized with different data.")
            return
        entries: dict = {}
        for key, value in pairs:
            value = value[()] if isinstance(value, np.ndarray) and value.ndim == 0 else value
            if key in entries:
                previous = entries[key]
                if previous != value:
                    raise errors.FailedPreconditionError(
                        None, op, f"HashTable has different value for same key. Key {_text(key)} has "
                                  f"{_text(_item(previous))} and trying to add value {_text(_item(value))}")
                continue
            entries[key] = value
        self.entries = entries
        self.initialized = True

    def import_values(self, op, keys, values):
        self._check_insert_shapes(op, keys, values)
        self.initialize(op, self._pairs(keys, values), int(np.asarray(keys).size))


def _item(value):
    return value.item() if isinstance(value, np.generic) else value


class MutableHashTable(_DictTable):
    """MutableHashTableOfScalars / MutableHashTableOfTensors."""

    kind = "MutableHashTable"

    def insert(self, op, keys, values):
        self._check_insert_shapes(op, keys, values)
        for key, value in self._pairs(keys, values):
            self.entries[key] = value.copy() if isinstance(value, np.ndarray) else value

    def remove(self, op, keys):
        for key in _keys_of(keys, self.key_dtype):
            self.entries.pop(key, None)

    def import_values(self, op, keys, values):
        self._check_insert_shapes(op, keys, values)
        self.entries = {}
        self.insert(op, keys, values)


class DenseHashTable(_Table):
    """MutableDenseHashTable: open addressing over power-of-two bucket arrays with TF's
    probing (index + 1, + 2, ...), growth (doubling past ``max_load_factor``) and export
    (the bucket arrays themselves, empty buckets holding ``empty_key``)."""

    kind = "MutableDenseHashTable"

    def __init__(self, op, key_dtype, value_dtype, value_shape, empty_key, deleted_key, num_buckets, max_load_factor):
        super().__init__(key_dtype, value_dtype, value_shape)
        if not 0 < max_load_factor < 1:
            raise errors.InvalidArgumentError(None, op, f"max_load_factor must be between 0 and 1, got: "
                                                        f"{max_load_factor:g}")
        if len(self.value_shape) > 1:
            raise errors.InvalidArgumentError(None, op, "Empty value must be a scalar or a vector, got shape "
                                                        + _shape_text(self.value_shape))
        empty_key, deleted_key = np.asarray(empty_key), np.asarray(deleted_key)
        if empty_key.ndim > 1:
            raise errors.InvalidArgumentError(None, op, "Empty key must be a scalar or a vector, got shape "
                                                        + _shape_text(empty_key.shape))
        if empty_key.shape != deleted_key.shape:
            raise errors.InvalidArgumentError(None, op, "Empty and deleted keys must have same shape, got shapes: "
                                                        f"{_shape_text(empty_key.shape)} and "
                                                        f"{_shape_text(deleted_key.shape)}")
        self.key_shape = tuple(empty_key.shape)
        self.key_size = int(np.prod(self.key_shape, dtype=np.int64))
        self.value_size = int(np.prod(self.value_shape, dtype=np.int64))
        self.empty_key = tuple(_keys_of(empty_key, self.key_dtype))
        self.deleted_key = tuple(_keys_of(deleted_key, self.key_dtype))
        if self.empty_key == self.deleted_key:
            raise errors.InvalidArgumentError(None, op, "Empty and deleted keys cannot be equal")
        self.max_load_factor = max_load_factor
        self._allocate(op, num_buckets)

    def _hash(self, key: tuple) -> int:
        def scalar(value):
            if isinstance(value, bytes):
                return hash64(value)
            return int(value) & _M64

        if len(key) == 1:
            return scalar(key[0])
        result = 0
        for value in key:  # Hash64Combine
            b = scalar(value)
            result = (result ^ ((b + 0x9E3779B97F4A7800 + (result << 10) + (result >> 4)) & _M64)) & _M64
        return result

    def _allocate(self, op, num_buckets: int):
        if num_buckets < 4 or num_buckets & (num_buckets - 1):
            raise errors.InvalidArgumentError(None, op, "Number of buckets must be at least 4 and a power of 2, got: "
                                                        f"{num_buckets}")
        self.num_buckets = num_buckets
        self.num_entries = 0
        self.keys = [self.empty_key] * num_buckets
        zero = b"" if self.value_dtype == dtypes.string else np.zeros((), _numpy_dtype(self.value_dtype))[()]
        self.values = [[zero] * self.value_size for _ in range(num_buckets)]

    def _rows(self, op, keys):
        """The keys as tuples of ``key_size`` elements (TF's key matrix)."""
        keys = np.asarray(keys, dtype=object if self.key_dtype == dtypes.string else None)
        count = 1 if keys.ndim == 0 else keys.shape[0]
        if keys.size != count * self.key_size:
            expected = _shape_text((count,) + self.key_shape)
            raise errors.InvalidArgumentError(None, op, f"Expected key shape {expected} got {_shape_text(keys.shape)}")
        flat = _keys_of(keys, self.key_dtype)
        return count, [tuple(flat[i * self.key_size:(i + 1) * self.key_size]) for i in range(count)]

    def _check_key(self, op, key):
        if key == self.empty_key:
            raise errors.InvalidArgumentError(None, op, "Using the empty_key as a table key is not allowed")
        if key == self.deleted_key:
            raise errors.InvalidArgumentError(None, op, "Using the deleted_key as a table key is not allowed")

    def size(self) -> int:
        return self.num_entries

    def find(self, op, keys, default):
        count, rows = self._rows(op, keys)
        default = np.asarray(default).reshape(-1)
        out = self._output((count, self.value_size))
        mask = self.num_buckets - 1
        for i, key in enumerate(rows):
            self._check_key(op, key)
            index, probes = self._hash(key) & mask, 0
            while True:
                if self.keys[index] == key:
                    out[i] = self.values[index]
                    break
                if self.keys[index] == self.empty_key:
                    out[i] = default if default.size == self.value_size else default[i * self.value_size:
                                                                                    (i + 1) * self.value_size]
                    break
                probes += 1
                index = (index + probes) & mask
                if probes >= self.num_buckets:
                    raise errors.InternalError(None, op, "Internal error in MutableDenseHashTable lookup")
        shape = tuple(np.asarray(keys).shape[:np.asarray(keys).ndim - len(self.key_shape)])
        return out.reshape(shape + self.value_shape)

    def insert(self, op, keys, values):
        count, _ = self._rows(op, keys)
        pending = self.num_entries + count
        if pending > self.num_buckets * self.max_load_factor:
            new = self.num_buckets
            while True:
                new <<= 1
                if not pending > new * self.max_load_factor:
                    break
            old_keys, old_values = self.keys, self.values
            self._allocate(op, new)
            self._insert_rows(op, old_keys, old_values, ignore_empty_and_deleted=True)
        self._insert_rows(op, self._rows(op, keys)[1], np.asarray(values).reshape(count, self.value_size).tolist()
                          if self.value_dtype != dtypes.string else
                          _strings(values).reshape(count, self.value_size).tolist(), ignore_empty_and_deleted=False)

    def _insert_rows(self, op, rows, values, ignore_empty_and_deleted):
        mask = self.num_buckets - 1
        for key, value in zip(rows, values):
            if key in (self.empty_key, self.deleted_key):
                if ignore_empty_and_deleted:
                    continue
                self._check_key(op, key)
            index, probes = self._hash(key) & mask, 0
            while True:
                if self.keys[index] == key:
                    self.values[index] = list(value)
                    break
                if self.keys[index] in (self.empty_key, self.deleted_key):
                    self.num_entries += 1
                    self.keys[index] = key
                    self.values[index] = list(value)
                    break
                probes += 1
                index = (index + probes) & mask
                if probes >= self.num_buckets:
                    raise errors.InternalError(None, op, "Internal error in MutableDenseHashTable insert")

    def remove(self, op, keys):
        _, rows = self._rows(op, keys)
        mask = self.num_buckets - 1
        for key in rows:
            self._check_key(op, key)
            index, probes = self._hash(key) & mask, 0
            while True:
                if self.keys[index] == key:
                    self.num_entries -= 1
                    self.keys[index] = self.deleted_key
                    break
                if self.keys[index] == self.empty_key:
                    break
                probes += 1
                index = (index + probes) & mask
                if probes >= self.num_buckets:
                    raise errors.InternalError(None, op, "Internal error in MutableDenseHashTable remove")

    def export(self, op):
        keys = np.empty((self.num_buckets, self.key_size), dtype=_numpy_dtype(self.key_dtype))
        values = self._output((self.num_buckets, self.value_size))
        for i in range(self.num_buckets):
            keys[i] = self.keys[i]
            values[i] = self.values[i]
        return keys, values

    def import_values(self, op, keys, values):
        keys = np.asarray(keys)
        expected = tuple(keys.shape[:-1]) + (self.value_size,)
        if np.asarray(values).shape != expected:
            raise errors.InvalidArgumentError(None, op, f"Expected shape {_shape_text(expected)} for value, got "
                                                        f"{_shape_text(np.asarray(values).shape)}")
        self.num_buckets = keys.shape[0]
        flat = _keys_of(keys, self.key_dtype)
        self.keys = [tuple(flat[i * self.key_size:(i + 1) * self.key_size]) for i in range(self.num_buckets)]
        self.values = [list(row) for row in np.asarray(values).reshape(self.num_buckets, self.value_size).tolist()]
        self.num_entries = sum(1 for k in self.keys if k not in (self.empty_key, self.deleted_key))


# =====================================================================================
# Text files (lookup_util.cc: TextFileLineIterator)
# =====================================================================================
WHOLE_LINE = -2
LINE_NUMBER = -1
_INT = re.compile(rb"\s*[+-]?\d+\s*")
_INT_RANGES = {dtypes.int32: (-2 ** 31, 2 ** 31 - 1), dtypes.int64: (-2 ** 63, 2 ** 63 - 1)}


def _parse_field(op, token: bytes, line_number: int, dtype):
    if dtype == dtypes.string:
        return token
    if dtype in _INT_RANGES:
        low, high = _INT_RANGES[dtype]
        if _INT.fullmatch(token) and low <= int(token) <= high:
            return int(token)
        raise errors.InvalidArgumentError(None, op, f"Field {_text(token)} in line {line_number} is not a valid "
                                                    f"{dtype.name}.")
    if dtype in (dtypes.float32, dtypes.float64):
        name = "float" if dtype == dtypes.float32 else "double"
        try:
            if b"_" in token:
                raise ValueError
            value = float(token)
            if dtype == dtypes.float32 and math.isfinite(value) and abs(value) > float(np.finfo(np.float32).max):
                raise ValueError
        except ValueError:
            raise errors.InvalidArgumentError(None, op, f"Field {_text(token)} in line {line_number} is not a valid "
                                                        f"{name}.") from None
        return value
    raise errors.InvalidArgumentError(None, op, f"Data type {type_name(dtype)} not supported.")


def _read_lines(op, filename: str):
    """The file's lines as TF's InputBuffer::ReadLine gives them (a trailing '\\r' cut),
    each with the byte position after it."""
    try:
        with open(filename, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        raise errors.NotFoundError(None, op, f"{filename}; No such file or directory") from None
    except IsADirectoryError:
        raise errors.FailedPreconditionError(None, op, f"{filename}; Is a directory") from None
    except OSError as e:
        raise errors.UnknownError(None, op, f"{filename}; {e.strerror}") from None
    if not data:  # TF 2's reader of an empty file
        raise errors.OutOfRangeError(None, op, "Read less bytes than requested")
    lines, start = [], 0
    while start < len(data):
        end = data.find(b"\n", start)
        stop = len(data) if end < 0 else end + 1
        line = data[start:stop].rstrip(b"\n")
        if line.endswith(b"\r"):
            line = line[:-1]
        lines.append((line, stop))
        start = stop
    return lines


def text_file_entries(op, filename: str, key_dtype, value_dtype, key_index: int, value_index: int,
                      vocab_size: int, delimiter: str, offset: int = 0):
    """(pairs, total size) of a text file for a table, or TF's error."""
    if len(delimiter.encode()) != 1:
        raise errors.InvalidArgumentError(None, op, "delimiter should be only 1 char")
    key_dtype, value_dtype = dtypes.as_dtype(key_dtype).base_dtype, dtypes.as_dtype(value_dtype).base_dtype
    if key_index == LINE_NUMBER and key_dtype != dtypes.int64:
        raise errors.InvalidArgumentError(None, op, "Key index for line number requires table key dtype of int64, "
                                                    f"got {type_name(key_dtype)}")
    if key_index == WHOLE_LINE and not key_dtype.is_integer and key_dtype != dtypes.string:
        raise errors.InvalidArgumentError(None, op, "Key index for whole line requires string or integer table key, "
                                                    f"got {type_name(key_dtype)}")
    if value_index == LINE_NUMBER and value_dtype != dtypes.int64:
        raise errors.InvalidArgumentError(None, op, "Value index for line number requires table value dtype of "
                                                    f"int64, got {type_name(value_dtype)}")
    if value_index == WHOLE_LINE and not value_dtype.is_integer and value_dtype != dtypes.string:
        raise errors.InvalidArgumentError(None, op, "Value index for whole line requires table value dtype of "
                                                    f"integer or string, got {type_name(value_dtype)}")
    lines = _read_lines(op, filename)
    total = len(lines) if vocab_size == -1 else vocab_size
    split = max(key_index, value_index) >= 0
    sep = delimiter.encode()
    pairs = []
    for number, (line, position) in enumerate(lines):
        if number >= total:
            break  # TF: "Truncated ... before its end" (a warning)
        if not line:
            raise errors.InvalidArgumentError(None, op, f"Invalid content in {filename}: empty line found at position "
                                                        f"{position}.")
        tokens = line.split(sep) if split else []
        if split and len(tokens) < max(key_index, value_index) + 1:
            raise errors.InvalidArgumentError(
                None, op, f"Invalid number of columns in {filename} line {number} ({_text(line)}) : expected at "
                          f"least {max(key_index, value_index) + 1} got {len(tokens)}")

        def field(index, dtype):
            if index == LINE_NUMBER:
                return number + offset
            return _parse_field(op, line if index == WHOLE_LINE else tokens[index], number, dtype)

        pairs.append((field(key_index, key_dtype), field(value_index, value_dtype)))
    if len(pairs) < total:
        raise errors.InvalidArgumentError(None, op, f"Invalid vocab_size in {filename}: expected {total} but got "
                                                    f"{len(pairs)}")
    return pairs, total
