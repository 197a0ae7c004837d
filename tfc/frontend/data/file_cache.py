"""``cache(filename)``: the cache on disk, in TensorFlow's layout (TF 2.x's CacheDatasetOp).

The first pass over a ``FileCache`` whose files do not exist yet *writes* them while it
hands the input's elements on; once such a pass reaches the end of its input the cache
is complete, and every later pass (a re-initialised iterator, the next epoch of
``repeat``, another session or process, TensorFlow itself) *reads* it instead of running
the input pipeline. Whether a pass reads or writes is decided when it starts, as in TF.

The files are a tensor bundle (tfc/frontend/checkpoint_format.py), as TF writes them:
``<filename>.index`` and ``<filename>.data-00000-of-00001``, one tensor per component of
each element under the key ``"%7d_%Nd" % (element, component)`` (N: the width of the
largest component number). A writing pass holds ``<filename>_0.lockfile`` ("Created at:
<unix time>") and writes the data to ``<filename>_0.data-00000-of-00001.tempstate<n>``; at
the end the data file is renamed into place, the index written, and the lockfile
removed. A pass left unfinished (``cache().take(k)``, an iterator re-initialised or
closed early) deletes its files and logs TF's warning: the partial contents are never
read back. Another pass that starts writing while the lockfile exists (a concurrent
caching iterator) fails with TF's ``AlreadyExistsError``.

Reading checks each tensor's dtype and shape against the dataset's (TF's
``InvalidArgumentError`` messages) and its CRC32C (``DataLossError``). Elements are read
in chunks: runs of elements whose components have one dtype and shape and evenly spaced
offsets (tfc writes each chunk component by component, TF element by element) are one
numpy gather and one vectorised CRC; other elements are read one tensor at a time.
"""
from __future__ import annotations

import logging
import mmap
import os
import time
import uuid

import numpy as np

from .. import dtypes, errors
from ..checkpoint_format import (HEADER_KEY, BundleReader, TableBuilder, _apply, _mask, _numpy_dtype,
                                 _unit_crcs, _zeros_operator, crc32c, data_filename, encode_tensor,
                                 index_filename)
from .pipeline import Iter, Node, as_chunk, chunk_size

logger = logging.getLogger("tfc")

MAX_ITEMS = 10000000  # TF's kMaxItems: the key's element number has len(str(MAX_ITEMS - 1)) digits
_ITEM_WIDTH = len(str(MAX_ITEMS - 1))
_PARTIAL_WARNING = ("The calling iterator did not fully read the dataset being cached. In order to avoid unexpected "
                    "truncation of the dataset, the partially cached contents of the dataset  will be discarded. This "
                    "can happen if you have an input pipeline similar to `dataset.cache().take(k).repeat()`. You "
                    "should use `dataset.take(k).cache().repeat()` instead.")
_TF_TYPE_NAMES = {"float32": "float", "float64": "double", "float16": "half"}


def lockfile_name(prefix: str) -> str:
    return f"{prefix}_0.lockfile"


def _type_name(dtype) -> str:
    return _TF_TYPE_NAMES.get(dtype.name, dtype.name)


def _shape_text(dims) -> str:
    """TF's PartialTensorShape::DebugString: ``[?,2]``, ``[]``, ``<unknown>``."""
    if dims is None:
        return "<unknown>"
    return "[" + ",".join("?" if d is None else str(d) for d in dims) + "]"


# -- CRC32C of many rows at once -----------------------------------------------------------------
_SMALL_ROW = 1 << 15


def crc32c_rows(rows: np.ndarray) -> np.ndarray:
    """The CRC32C of each row of a (m, L) uint8 array (as ``crc32c(row.tobytes())``).

    The raw CRC (zero register, no final XOR) is linear in the data and unchanged by
    leading zero bytes: each row is left-padded to whole 256-byte units, the units' raw
    CRCs computed in one gather (checkpoint_format._unit_crcs) and merged with the
    zero-run operators; then ``crc = Z_L(0xFFFFFFFF) ^ raw ^ 0xFFFFFFFF``."""
    m, length = rows.shape
    if m == 0:
        return np.zeros(0, dtype=np.uint32)
    if length >= _SMALL_ROW:
        return np.array([crc32c(row.tobytes()) for row in rows], dtype=np.uint32)
    units = -(-length // 256) if length else 0
    init = _apply(_zeros_operator(length), np.array([0xFFFFFFFF], dtype=np.uint32))[0]
    if units == 0:
        return np.full(m, init ^ np.uint32(0xFFFFFFFF), dtype=np.uint32)
    padded = np.zeros((m, units * 256), dtype=np.uint8)
    padded[:, units * 256 - length:] = rows
    unit_crcs = _unit_crcs(padded.reshape(m * units, 256)).reshape(m, units)
    raw = unit_crcs[:, units - 1].copy()
    for j in range(units - 1):
        raw ^= _apply(_zeros_operator(256 * (units - 1 - j)), unit_crcs[:, j])
    return raw ^ init ^ np.uint32(0xFFFFFFFF)


_MASK_DELTA = np.uint32(0xA282EAD8)


def _mask_many(crcs: np.ndarray) -> np.ndarray:
    crcs = crcs.astype(np.uint32)
    return ((crcs >> np.uint32(15)) | (crcs << np.uint32(17))) + _MASK_DELTA


def _unmask_many(masked: np.ndarray) -> np.ndarray:
    rotated = masked.astype(np.uint32) - _MASK_DELTA
    return (rotated >> np.uint32(17)) | (rotated << np.uint32(15))


# -- the dataset -----------------------------------------------------------------------------------
class FileCache(Node):
    def __init__(self, input_node: Node, filename: str, types: list, shapes: list, op=None):
        self.input = input_node
        self.prefix = filename
        self.types = [dtypes.as_dtype(t).base_dtype for t in types]
        self.shapes = [None if s.ndims is None else s.as_list() for s in shapes]
        self.op = op
        count = len(self.types)
        self.key_format = f"{{:{_ITEM_WIDTH}d}}_{{:{len(str(max(count - 1, 0)))}d}}"

    def iterator(self):
        if os.path.isfile(index_filename(self.prefix)):
            return _CacheReaderIter(self)
        return _CacheWriterIter(self)


class _CacheWriterIter(Iter):
    """The first pass: the input's elements handed on and written to the bundle."""

    def __init__(self, node: FileCache):
        self.node = node
        self.it = node.input.iterator()
        self.file = None  # the temporary data file, once the first element is asked for
        self.lock_path = None
        self.data_path = None
        self.entries: list = []  # (key bytes, BundleEntryProto bytes)
        self.count = 0
        self.offset = 0
        self.finished = False

    def _start(self) -> None:
        node = self.node
        lock = lockfile_name(node.prefix)
        try:
            fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            try:
                with open(lock) as f:
                    contents = f.read()
            except OSError:
                contents = ""
            raise errors.AlreadyExistsError(
                None, node.op, "There appears to be a concurrent caching iterator running - cache lockfile already "
                               f"exists ('{lock}'). If you are sure no other running TF computations are using this "
                               "cache prefix, delete the lockfile and re-initialize the iterator. Lockfile contents: "
                               f"{contents}") from None
        except FileNotFoundError:
            raise errors.NotFoundError(None, node.op, f"{lock}; No such file or directory") from None
        except PermissionError:
            raise errors.PermissionDeniedError(None, node.op, f"{lock}; Permission denied") from None
        with os.fdopen(fd, "w") as f:
            f.write(f"Created at: {int(time.time())}")
        self.lock_path = lock
        self.data_path = f"{data_filename(node.prefix + '_0')}.tempstate{uuid.uuid4().int & (2**63 - 1)}"
        self.file = open(self.data_path, "wb")

    def next_chunk(self, limit):
        if self.finished:
            return None
        if self.file is None:
            self._start()
        chunk = self.it.next_chunk(limit)
        if chunk is None:
            self._finish()
            return None
        self._write(chunk)
        return chunk

    def _write(self, chunk: list) -> None:
        from tfc.protos import BundleEntryProto

        node = self.node
        n = chunk_size(chunk)
        if self.count + n > MAX_ITEMS:
            raise errors.InvalidArgumentError(None, node.op, f"Upstream iterator is producing more than {MAX_ITEMS} "
                                                             "items, which is more than the cache limit.")
        key_format = node.key_format
        for k, (array, dtype) in enumerate(zip(chunk, node.types)):
            shape = array.shape[1:]
            if dtype == dtypes.string:
                pieces, crcs = [], []
                for i in range(n):
                    raw, crc = encode_tensor(array[i], dtype)
                    pieces.append(raw)
                    crcs.append(crc)
                sizes = [len(p) for p in pieces]
                data = b"".join(pieces)
            else:
                rows = np.ascontiguousarray(array, dtype=_numpy_dtype(dtype)).reshape(n, -1).view(np.uint8)
                crcs = crc32c_rows(rows).tolist()
                sizes = [rows.shape[1]] * n
                data = rows.tobytes()
            self.file.write(data)
            template = BundleEntryProto(dtype=dtype.as_datatype_enum, shard_id=0)
            template.shape.SetInParent()
            for dim in shape:
                template.shape.dim.add(size=int(dim))
            offset = self.offset
            for i in range(n):
                template.offset = offset
                template.size = sizes[i]
                template.crc32c = _mask(crcs[i])
                self.entries.append((key_format.format(self.count + i, k).encode(), template.SerializeToString()))
                offset += sizes[i]
            self.offset = offset
        self.count += n

    def _finish(self) -> None:
        from ..checkpoint_format import atomic_write
        from tfc.protos import BundleHeaderProto

        node = self.node
        self.file.close()
        self.file = None
        try:
            if self.count:
                os.replace(self.data_path, data_filename(node.prefix))
            else:  # TF writes no data file for an empty dataset
                os.remove(self.data_path)
            self.data_path = None
            header = BundleHeaderProto(num_shards=1, endianness=BundleHeaderProto.LITTLE)
            header.version.producer = 1
            table = TableBuilder()
            table.add(HEADER_KEY, header.SerializeToString())
            self.entries.sort(key=lambda entry: entry[0])
            for key, value in self.entries:
                table.add(key, value)
            atomic_write(index_filename(node.prefix), table.finish())
        finally:
            self.entries = []
            self.finished = True
            self._remove_lock()
        self.it.close()

    def _remove_lock(self) -> None:
        if self.lock_path is not None:
            try:
                os.remove(self.lock_path)
            except OSError:
                pass
            self.lock_path = None

    def close(self):
        if self.file is not None:  # an unfinished pass: its partial contents are discarded
            logger.warning(_PARTIAL_WARNING)
            self.file.close()
            self.file = None
            try:
                os.remove(self.data_path)
            except OSError:
                pass
            self.data_path = None
            self.entries = []
            self._remove_lock()
        self.finished = True
        self.it.close()

    def __del__(self):
        try:
            if self.file is not None:
                self.close()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass


class _MappedReader(BundleReader):
    """BundleReader over a memory-mapped data file (a cache may be larger than memory)."""

    def _data_file(self, shard_id: int):
        data = self._data.get(shard_id)
        if data is None:
            path = data_filename(self.prefix, shard_id, self.num_shards)
            try:
                with open(path, "rb") as f:
                    data = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) if os.fstat(f.fileno()).st_size \
                        else b""
            except FileNotFoundError:
                raise errors.NotFoundError(None, None, f"{path}; No such file or directory") from None
            self._data[shard_id] = data
        return data


class _CacheReaderIter(Iter):
    """A later pass: the elements read back from the bundle, in order."""

    def __init__(self, node: FileCache):
        self.node = node
        self.reader = None
        self.keys = None
        self.position = 0  # the next entry

    def _open(self) -> None:
        try:
            self.reader = _MappedReader(self.node.prefix)
        except errors.OpError as e:
            raise type(e)(None, self.node.op, e.message) from None
        self.keys = self.reader.keys()

    def _check(self, k: int, entry) -> None:
        node = self.node
        expected = node.types[k]
        got = dtypes.as_dtype(entry.dtype)
        if got != expected:
            raise errors.InvalidArgumentError(None, node.op, f"Data type mismatch at component {k}: expected "
                                                             f"{_type_name(expected)} but got {_type_name(got)}.")
        dims = [int(d.size) for d in entry.shape.dim]
        want = node.shapes[k]
        if want is not None and (len(want) != len(dims) or any(w is not None and w != d for w, d in zip(want, dims))):
            raise errors.InvalidArgumentError(None, node.op, f"Incompatible shapes at component {k}: expected "
                                              f"{_shape_text(want)} but got {_shape_text(dims)}.")

    def next_chunk(self, limit):
        if self.reader is None:
            self._open()
        node = self.node
        components = len(node.types)
        left = (len(self.keys) - self.position) // components
        if left <= 0:
            if self.position < len(self.keys):
                raise errors.DataLossError(None, node.op, f"tfc: the cache {node.prefix} ends inside an element "
                                                          f"({len(self.keys) - self.position} of its {components} "
                                                          "components)")
            return None
        n = min(limit, left)
        keys = self.keys
        start = self.position

        def row(i):
            return [self.reader.entry(keys[start + i * components + k]) for k in range(components)]

        entries = [row(0)]
        for k in range(components):
            self._check(k, entries[0][k])
        self._extend_uniform_run(entries, n, row)
        run = len(entries)
        if run > 1:
            chunk = [self._gather(k, [entries[i][k] for i in range(run)],
                                  [keys[start + i * components + k] for i in range(run)])
                     for k in range(components)]
            self.position += run * components
            return chunk
        values = [self._lookup(keys[start + k], k) for k in range(components)]
        self.position += components
        return as_chunk([values])

    @staticmethod
    def _extend_uniform_run(entries: list, n: int, row) -> None:
        """Append to ``entries`` (the first element's) the entries of the next elements while
        every component keeps its dtype and shape and its offsets stay evenly spaced
        (numeric components only), up to ``n`` elements."""
        first = entries[0]
        if any(dtypes.as_dtype(e.dtype) == dtypes.string for e in first):
            return
        shapes = [list(e.shape.dim) for e in first]
        steps = [None] * len(first)
        for i in range(1, n):
            current = row(i)
            for k, e in enumerate(current):
                if e.dtype != first[k].dtype or list(e.shape.dim) != shapes[k] or e.shard_id != first[k].shard_id:
                    return
                step = e.offset - entries[i - 1][k].offset
                if step < e.size or (steps[k] is not None and step != steps[k]):
                    return
                steps[k] = step
            entries.append(current)

    def _gather(self, k: int, entries: list, keys: list) -> np.ndarray:
        """Component ``k`` of a uniform run of elements: one gather, one vectorised CRC."""
        node = self.node
        n = len(entries)
        first = entries[0]
        dtype = dtypes.as_dtype(first.dtype)
        shape = tuple(int(d.size) for d in first.shape.dim)
        size = first.size
        np_dtype = _numpy_dtype(dtype, self.reader.big_endian)
        count = int(np.prod(shape, dtype=np.int64)) if shape else 1
        if size != count * np_dtype.itemsize:  # corrupt: the per-tensor reader names the problem
            return as_chunk([[self._lookup(key, k)] for key in keys])[0]
        data = self.reader._data_file(first.shard_id)
        step = entries[1].offset - first.offset
        end = first.offset + (n - 1) * step + size
        path = data_filename(node.prefix)
        if first.offset < 0 or end > len(data):
            raise errors.DataLossError(None, node.op, f"Unable to read checkpoint file {path}: the file is truncated "
                                                      f"or does not match its index: key {keys[-1]} needs bytes up to "
                                                      f"{end} but the file has {len(data)} bytes")
        buffer = np.frombuffer(data, dtype=np.uint8, count=end - first.offset, offset=first.offset)
        if step == size:
            rows = buffer.reshape(n, size).copy()
        else:
            rows = np.lib.stride_tricks.as_strided(buffer, (n, size), (step, 1)).copy()
        del buffer
        stored = _unmask_many(np.array([e.crc32c for e in entries], dtype=np.uint32))
        computed = crc32c_rows(rows)
        bad = np.flatnonzero(stored != computed)
        if bad.size:
            i = int(bad[0])
            raise errors.DataLossError(None, node.op, f"Unable to read checkpoint file {path}: Checksum does not "
                                                      f"match for key {keys[i]}: stored {int(stored[i]):08d} vs. "
                                                      f"calculated on the restored bytes {int(computed[i])}")
        values = rows.view(np_dtype).reshape((n,) + shape)
        native = np_dtype.newbyteorder("=")
        return values if values.dtype == native else values.astype(native)

    def _lookup(self, key: str, k: int) -> np.ndarray:
        self._check(k, self.reader.entry(key))
        try:
            return self.reader.lookup(key)
        except errors.OpError as e:
            raise type(e)(None, self.node.op, e.message) from None

    def close(self):
        if self.reader is not None:
            for data in self.reader._data.values():
                if isinstance(data, mmap.mmap):
                    try:
                        data.close()
                    except BufferError:  # arrays still view it: the mapping goes with them
                        pass
            self.reader = None
