"""File datasets: ``TextLineDataset``, ``TFRecordDataset``, ``FixedLengthRecordDataset``.

Each is one op of the graph taking the file names (a string scalar or vector), as TF
1.x's readers did before they became a ``flat_map`` over a dataset of file names; files
are read in order, lazily, a chunk of lines or records at a time. A missing file is TF's
``NotFoundError``; a corrupt TFRecord is a ``DataLossError`` (records.py).
"""
from __future__ import annotations

import numpy as np

from .. import dtypes, errors
from ..convert import convert_to_tensor
from ..graph import get_default_graph
from ..registry import register
from . import records
from . import structure as nest
from .dataset import Dataset, _int64
from .eager import executing_eagerly, run_dataset_op
from .dataset_ops import _DatasetOp, variant
from .pipeline import Iter, Node

_DEFAULT_BUFFER = 256 * 1024


def _file_names(value) -> list:
    return [f.decode() if isinstance(f, bytes) else str(f) for f in np.asarray(value, dtype=object).reshape(-1)]


def _strings(items: list) -> np.ndarray:
    out = np.empty(len(items), dtype=object)
    out[:] = items
    return out


class _FileIter(Iter):
    """Chunks of the items (lines, records) of a list of files, read lazily."""

    def __init__(self, files: list, items_of):
        self.files = iter(files)
        self.items_of = items_of
        self.current = None

    def next_chunk(self, limit):
        while True:
            if self.current is None:
                name = next(self.files, None)
                if name is None:
                    return None
                self.current = self.items_of(name)
            batch = []
            for item in self.current:
                batch.append(item)
                if len(batch) >= limit:
                    break
            if batch:
                return [_strings(batch)]
            self.current = None


class TextLines(Node):
    def __init__(self, files: list, compression: str):
        self.files, self.compression = files, compression

    def iterator(self):
        return _FileIter(self.files, self._lines)

    def _lines(self, name):
        with records.open_file(name, self.compression) as f:
            for line in f:
                if line.endswith(b"\n"):
                    line = line[:-1]
                    if line.endswith(b"\r"):
                        line = line[:-1]
                yield line


class TFRecords(Node):
    def __init__(self, files: list, compression: str):
        self.files, self.compression = files, compression

    def iterator(self):
        return _FileIter(self.files, lambda name: records.read_records(name, self.compression))


class FixedLengthRecords(Node):
    def __init__(self, files, header_bytes, record_bytes, footer_bytes, compression, op=None):
        self.files, self.compression, self.op = files, compression, op
        self.header, self.record, self.footer = int(header_bytes), int(record_bytes), int(footer_bytes)
        if self.record <= 0:
            raise errors.InvalidArgumentError(None, op, f"record_bytes must be > 0 but it is {self.record}")

    def iterator(self):
        return _FileIter(self.files, self._records)

    def _records(self, name):
        with records.open_file(name, self.compression) as f:
            data = f.read()
        body = len(data) - self.header - self.footer
        if body % self.record:
            raise errors.InvalidArgumentError(
                None, self.op, f"Excluding the header ({self.header} bytes) and footer ({self.footer} bytes), input "
                               f"file \"{name}\" has body length {body} bytes, which is not an exact multiple of the "
                               f"record length ({self.record} bytes).")
        for start in range(self.header, self.header + body, self.record):
            yield data[start:start + self.record]


# -- ops --------------------------------------------------------------------------------------
def _compression(op, value) -> str:
    try:
        return records.compression_name(np.asarray(value, dtype=object)[()])
    except errors.OpError as e:
        raise errors.InvalidArgumentError(None, op, e.message) from None


@register
class _TextLineDatasetOp(_DatasetOp):
    type_name = "TextLineDataset"
    inputs = ["filenames: string", "compression_type: string", "buffer_size: int64"]
    attrs = {}

    def host(op, filenames, compression_type, buffer_size):
        return [variant(TextLines(_file_names(filenames), _compression(op, compression_type)))]


@register
class _TFRecordDatasetOp(_DatasetOp):
    type_name = "TFRecordDataset"
    inputs = ["filenames: string", "compression_type: string", "buffer_size: int64"]
    attrs = {}

    def host(op, filenames, compression_type, buffer_size):
        return [variant(TFRecords(_file_names(filenames), _compression(op, compression_type)))]


@register
class _FixedLengthRecordDatasetOp(_DatasetOp):
    type_name = "FixedLengthRecordDatasetV2"
    inputs = ["filenames: string", "header_bytes: int64", "record_bytes: int64", "footer_bytes: int64",
              "buffer_size: int64", "compression_type: string"]
    attrs = {}

    def host(op, filenames, header_bytes, record_bytes, footer_bytes, buffer_size, compression_type):
        return [variant(FixedLengthRecords(_file_names(filenames), header_bytes, record_bytes, footer_bytes,
                                           _compression(op, compression_type), op))]


# -- the Python classes -----------------------------------------------------------------------------
def _reader(op_type: str, inputs: list) -> tuple:
    graph = get_default_graph()
    if executing_eagerly(graph):  # the op runs now (eager.py)
        return run_dataset_op(op_type, inputs, {}, op_type)[0], nest.Spec(dtypes.string, [])
    op = graph.create_op(op_type, inputs, name=op_type)
    return op.outputs[0], nest.Spec(dtypes.string, [])


def _filenames(filenames):
    tensor = convert_to_tensor(filenames, dtype=dtypes.string, name="filenames")
    if tensor.shape.ndims is not None and tensor.shape.ndims > 1:
        raise TypeError("`filenames` must be a `tf.Tensor` of dtype `tf.string` and rank <= 1")
    return tensor


class TextLineDataset(Dataset):
    """The lines of text files (without their line endings)."""

    def __init__(self, filenames, compression_type=None, buffer_size=None):
        inputs = [_filenames(filenames),
                  convert_to_tensor(compression_type or "", dtype=dtypes.string, name="compression_type"),
                  _int64(_DEFAULT_BUFFER if buffer_size is None else buffer_size, "buffer_size")]
        super().__init__(*_reader("TextLineDataset", inputs), "TextLineDataset")


class TFRecordDataset(Dataset):
    """The records of TFRecord files."""

    def __init__(self, filenames, compression_type=None, buffer_size=None, num_parallel_reads=None):
        inputs = [_filenames(filenames),
                  convert_to_tensor(records.compression_name(compression_type), dtype=dtypes.string,
                                    name="compression_type"),
                  _int64(_DEFAULT_BUFFER if buffer_size is None else buffer_size, "buffer_size")]
        super().__init__(*_reader("TFRecordDataset", inputs), "TFRecordDataset")


class FixedLengthRecordDataset(Dataset):
    """Fixed-length records of binary files."""

    def __init__(self, filenames, record_bytes, header_bytes=None, footer_bytes=None, buffer_size=None,
                 compression_type=None, num_parallel_reads=None):
        inputs = [_filenames(filenames), _int64(header_bytes or 0, "header_bytes"),
                  _int64(record_bytes, "record_bytes"), _int64(footer_bytes or 0, "footer_bytes"),
                  _int64(_DEFAULT_BUFFER if buffer_size is None else buffer_size, "buffer_size"),
                  convert_to_tensor(records.compression_name(compression_type), dtype=dtypes.string,
                                    name="compression_type")]
        super().__init__(*_reader("FixedLengthRecordDatasetV2", inputs),
                         "FixedLengthRecordDataset")
