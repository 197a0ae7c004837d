"""TFRecord files: ``tf.io.TFRecordWriter``, ``tf_record_iterator`` and the reader behind
``TFRecordDataset``.

A record is framed as TensorFlow frames it: the length (uint64, little endian), the masked
CRC-32C of those 8 bytes, the data, the masked CRC-32C of the data. A file may be GZIP or
ZLIB compressed as a whole (``TFRecordOptions``). Reading errors are TF's
``DataLossError`` messages: ``corrupted record at N`` (a bad CRC: N is the record's
offset for its header, the data's offset for its data; a bad header at offset 0 adds
``(Is this even a TFRecord file?)``), ``truncated record at N' failed with Read less bytes
than requested`` (data cut short); a header cut short ends the file quietly, as in TF.
"""
from __future__ import annotations

import gzip
import io
import os
import struct
import zlib

from .. import errors
from ..crc32c import masked_crc32c


class TFRecordCompressionType:
    NONE = 0
    ZLIB = 1
    GZIP = 2


class TFRecordOptions:
    """Options of a TFRecord file (only the compression type matters to tfc)."""

    compression_type_map = {TFRecordCompressionType.ZLIB: "ZLIB", TFRecordCompressionType.GZIP: "GZIP",
                            TFRecordCompressionType.NONE: ""}

    def __init__(self, compression_type=None, flush_mode=None, input_buffer_size=None, output_buffer_size=None,
                 window_bits=None, compression_level=None, compression_method=None, mem_level=None,
                 compression_strategy=None):
        if isinstance(compression_type, int):
            compression_type = self.compression_type_map.get(compression_type, compression_type)
        self.compression_type = compression_type
        self.compression_level = compression_level

    @classmethod
    def get_compression_type_string(cls, options) -> str:
        if not options:
            return ""
        if isinstance(options, TFRecordOptions):
            return cls.get_compression_type_string(options.compression_type)
        if isinstance(options, int):
            return cls.compression_type_map[options]
        return compression_name(options)


def compression_name(value) -> str:
    """"", "ZLIB" or "GZIP" from a compression_type argument."""
    if value is None:
        return ""
    if isinstance(value, bytes):
        value = value.decode()
    if isinstance(value, int):
        return TFRecordOptions.compression_type_map[value]
    if isinstance(value, TFRecordOptions):
        return TFRecordOptions.get_compression_type_string(value)
    value = str(value)
    if value not in ("", "ZLIB", "GZIP"):
        raise errors.InvalidArgumentError(None, None, f"Unsupported compression_type: {value}.")
    return value


def encode(record: bytes) -> bytes:
    """One record, framed."""
    length = struct.pack("<Q", len(record))
    return length + struct.pack("<I", masked_crc32c(length)) + record + struct.pack("<I", masked_crc32c(record))


def open_file(path, compression: str = ""):
    """A binary file object for reading ``path``, decompressed (NotFoundError like TF's)."""
    path = os.fspath(path.decode() if isinstance(path, bytes) else path)
    try:
        raw = open(path, "rb")
    except FileNotFoundError:
        raise errors.NotFoundError(None, None, f"{path}; No such file or directory") from None
    except IsADirectoryError:
        raise errors.FailedPreconditionError(None, None, f"{path}; Is a directory") from None
    if compression == "GZIP":
        return gzip.GzipFile(fileobj=raw, mode="rb")
    if compression == "ZLIB":
        with raw:
            try:
                return io.BytesIO(zlib.decompress(raw.read()))
            except zlib.error as e:
                raise errors.DataLossError(None, None, f"{path}: zlib: {e}") from None
    return raw


def read_records(path, compression: str = ""):
    """The records of a TFRecord file, in order."""
    with open_file(path, compression) as f:
        offset = 0
        while True:
            header = f.read(12)
            if len(header) < 12:  # end of file (TF also ends quietly on a partial header)
                return
            if masked_crc32c(header[:8]) != struct.unpack("<I", header[8:])[0]:
                suffix = " (Is this even a TFRecord file?)" if offset == 0 else ""
                raise errors.DataLossError(None, None, f"corrupted record at {offset}{suffix}")
            (length,) = struct.unpack("<Q", header[:8])
            body = f.read(length + 4)
            if len(body) < length + 4:
                raise errors.DataLossError(None, None, f"truncated record at {offset}' failed with Read less bytes "
                                                       "than requested")
            data = body[:length]
            if masked_crc32c(data) != struct.unpack("<I", body[length:])[0]:
                raise errors.DataLossError(None, None, f"corrupted record at {offset + 12}")
            yield data
            offset += 16 + length


def tf_record_iterator(path, options=None):
    """tf.python_io.tf_record_iterator: the records of ``path`` (bytes), lazily."""
    return read_records(path, TFRecordOptions.get_compression_type_string(options))


class TFRecordWriter:
    """tf.io.TFRecordWriter / tf.python_io.TFRecordWriter: ``write(record)``, ``flush()``,
    ``close()``; a context manager. Uncompressed files are byte for byte TensorFlow's."""

    def __init__(self, path, options=None):
        compression = TFRecordOptions.get_compression_type_string(options)
        path = os.fspath(path.decode() if isinstance(path, bytes) else path)
        try:
            self._file = open(path, "wb")
        except FileNotFoundError:
            raise errors.NotFoundError(None, None, f"{path}; No such file or directory") from None
        level = getattr(options, "compression_level", None)
        level = 6 if level is None or level < 0 else level
        self._compressor = None
        if compression == "GZIP":
            self._compressor = zlib.compressobj(level, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
        elif compression == "ZLIB":
            self._compressor = zlib.compressobj(level, zlib.DEFLATED, zlib.MAX_WBITS)

    def write(self, record) -> None:
        if isinstance(record, str):
            record = record.encode()
        data = encode(bytes(record))
        self._file.write(self._compressor.compress(data) if self._compressor else data)

    def flush(self) -> None:
        if self._compressor is not None:
            self._file.write(self._compressor.flush(zlib.Z_SYNC_FLUSH))
        self._file.flush()

    def close(self) -> None:
        if self._file is None:
            return
        if self._compressor is not None:
            self._file.write(self._compressor.flush(zlib.Z_FINISH))
        self._file.close()
        self._file = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False
