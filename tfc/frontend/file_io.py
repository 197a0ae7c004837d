"""Files: ``tf.gfile`` / ``tf.io.gfile`` and the graph ops ``ReadFile``, ``WriteFile``,
``MatchingFiles`` (``tf.io.read_file``, ``write_file``, ``matching_files``).

TF1 scripts reach for ``tf.gfile`` for their boilerplate (``if not tf.gfile.Exists(dir):
tf.gfile.MakeDirs(dir)``, ``tf.gfile.GFile(path)`` to read a vocabulary). tfc serves the
local file system (paths and ``file://`` URLs) with TF's semantics and errors, checked
against TF 2.21 (``tests/fixtures/file_io.json``): a missing file is ``NotFoundError`` with
TF's message, copying or renaming onto an existing file without ``overwrite`` is
``AlreadyExistsError``, ``MakeDirs`` and ``MkDir`` of an existing directory succeed.
Other schemes (``gs://``, ``hdfs://``...) are ``UnimplementedError``.

The three ops are host ops (strings; tfc/runtime/host.py) run around the compiled step.
"""
from __future__ import annotations

import glob as _glob
import os
import shutil
from dataclasses import dataclass

import numpy as np

from .errors import AlreadyExistsError, NotFoundError, UnimplementedError
from .op_helper import apply_op
from .registry import OpType, register
from .tensor_shape import TensorShape


def _local(path) -> str:
    """The local path of ``path`` (bytes or str; ``file://`` stripped)."""
    path = path.decode() if isinstance(path, bytes) else os.fspath(path)
    if path.startswith("file://"):
        return path[len("file://"):]
    scheme, sep, _ = path.partition("://")
    if sep and scheme.isalnum():
        raise UnimplementedError(None, None, f"File system scheme '{scheme}' not implemented (file: '{path}')")
    return path


def _not_found(path: str) -> NotFoundError:
    return NotFoundError(None, None, f"{path}; No such file or directory")


# -- tf.gfile / tf.io.gfile ----------------------------------------------------------------------
class GFile:
    """tf.gfile.GFile: a file object (``read``/``readline``/iteration/``write``/``seek``/
    ``tell``/``size``/``flush``/``close``, a context manager), text unless the mode has
    ``b``; opened lazily, so a missing file fails on first use, as in TF."""

    def __init__(self, name, mode="r"):
        self.name = name
        self.mode = mode
        self._path = _local(name)
        self._file = None

    def _handle(self):
        if self._file is None:
            if "r" in self.mode and not os.path.exists(self._path):
                raise _not_found(self._path)
            binary = "b" in self.mode
            self._file = open(self._path, self.mode if binary else self.mode.replace("t", ""),
                              **({} if binary else {"encoding": "utf-8", "newline": ""}))
        return self._file

    def read(self, n=-1):
        return self._handle().read(n)

    def readline(self):
        return self._handle().readline()

    def readlines(self):
        return self._handle().readlines()

    def write(self, data):
        handle = self._handle()
        if "b" not in self.mode and isinstance(data, bytes):
            data = data.decode("utf-8")
        handle.write(data)

    def seek(self, offset=None, whence=0, position=None):
        return self._handle().seek(position if position is not None else offset, whence)

    def tell(self):
        return self._handle().tell()

    def size(self):
        return os.stat(self._path).st_size

    def flush(self):
        if self._file is not None:
            self._file.flush()

    def close(self):
        if self._file is not None:
            self._file.close()
            self._file = None

    def __iter__(self):
        return iter(self._handle())

    def __next__(self):
        return next(self._handle())

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False


FastGFile = GFile
Open = GFile


@dataclass
class FileStatistics:
    """tf.gfile.Stat's answer."""

    length: int
    mtime_nsec: int
    is_directory: bool


def Exists(filename) -> bool:  # noqa: N802 - TF's names
    return os.path.exists(_local(filename))


def IsDirectory(dirname) -> bool:  # noqa: N802
    return os.path.isdir(_local(dirname))


def ListDirectory(dirname) -> list:  # noqa: N802
    path = _local(dirname)
    if not os.path.isdir(path):
        raise NotFoundError(None, None, f"Could not find directory {path}")
    return os.listdir(path)


def MakeDirs(dirname) -> None:  # noqa: N802
    os.makedirs(_local(dirname), exist_ok=True)


def MkDir(dirname) -> None:  # noqa: N802
    path = _local(dirname)
    if os.path.isdir(path):
        return
    if not os.path.isdir(os.path.dirname(os.path.abspath(path))):
        raise _not_found(path)
    os.mkdir(path)


def Glob(filename) -> list:  # noqa: N802
    return sorted(_glob.glob(_local(filename)))


def Remove(filename) -> None:  # noqa: N802
    path = _local(filename)
    if not os.path.isfile(path):
        raise _not_found(path)
    os.remove(path)


def DeleteRecursively(dirname) -> None:  # noqa: N802
    path = _local(dirname)
    if not os.path.exists(path):
        raise NotFoundError(None, None, f"{path} not found")
    if os.path.isdir(path):
        shutil.rmtree(path)
    else:
        os.remove(path)


def Copy(oldpath, newpath, overwrite=False) -> None:  # noqa: N802
    source, target = _local(oldpath), _local(newpath)
    if not os.path.exists(source):
        raise _not_found(source)
    if os.path.exists(target) and not overwrite:
        raise AlreadyExistsError(None, None, "file already exists")
    shutil.copyfile(source, target)


def Rename(oldname, newname, overwrite=False) -> None:  # noqa: N802
    source, target = _local(oldname), _local(newname)
    if not os.path.exists(source):
        raise _not_found(source)
    if os.path.exists(target) and not overwrite:
        raise AlreadyExistsError(None, None, "file already exists")
    os.replace(source, target)


def Stat(filename) -> FileStatistics:  # noqa: N802
    path = _local(filename)
    if not os.path.exists(path):
        raise _not_found(path)
    info = os.stat(path)
    return FileStatistics(info.st_size, info.st_mtime_ns, os.path.isdir(path))


def Walk(top, in_order=True):  # noqa: N802
    """(directory, subdirectories, files) from ``top`` down (``in_order``) or up."""
    path = _local(top)
    if not os.path.isdir(path):
        return
    for directory, subdirectories, files in os.walk(path, topdown=in_order):
        yield directory, list(subdirectories), list(files)


def join(path, *paths) -> str:
    return os.path.join(path, *paths)


def get_registered_schemes() -> list:
    return ["file", ""]


GFILE_EXPORTS = {name: globals()[name] for name in (
    "Copy", "DeleteRecursively", "Exists", "FastGFile", "GFile", "Glob", "IsDirectory", "ListDirectory",
    "MakeDirs", "MkDir", "Open", "Remove", "Rename", "Stat", "Walk")}
IO_GFILE_EXPORTS = {
    "GFile": GFile, "copy": Copy, "exists": Exists, "get_registered_schemes": get_registered_schemes, "glob": Glob,
    "isdir": IsDirectory, "join": join, "listdir": ListDirectory, "makedirs": MakeDirs, "mkdir": MkDir,
    "remove": Remove, "rename": Rename, "rmtree": DeleteRecursively, "stat": Stat, "walk": Walk,
}


# -- the graph ops ---------------------------------------------------------------------------------
def _scalar_text(value) -> str:
    value = np.asarray(value, dtype=object).reshape(-1)[0]
    return value.decode() if isinstance(value, bytes) else str(value)


@register
class ReadFile(OpType):
    inputs = ["filename: string"]
    outputs = ["contents: string"]
    attrs = {}
    host_only = True
    not_differentiable = True

    def infer(op):
        return [TensorShape([])]

    def host(op, filename):
        path = _local(_scalar_text(filename))
        if not os.path.isfile(path):
            raise NotFoundError(None, op, f"{path}; No such file or directory")
        with open(path, "rb") as f:
            return [np.array(f.read(), dtype=object)]


@register
class WriteFile(OpType):
    inputs = ["filename: string", "contents: string"]
    outputs = []
    attrs = {}
    host_only = True
    stateful = True
    not_differentiable = True

    def infer(op):
        return []

    def host(op, filename, contents):
        path = _local(_scalar_text(filename))
        directory = os.path.dirname(path)
        if directory:
            os.makedirs(directory, exist_ok=True)  # TF's WriteFile creates the parent directories
        data = np.asarray(contents, dtype=object).reshape(-1)[0]
        with open(path, "wb") as f:
            f.write(data if isinstance(data, bytes) else str(data).encode())
        return []


@register
class MatchingFiles(OpType):
    inputs = ["pattern: string"]
    outputs = ["filenames: string"]
    attrs = {}
    host_only = True
    not_differentiable = True

    def infer(op):
        return [TensorShape([None])]

    def host(op, pattern):
        patterns = [p.decode() if isinstance(p, bytes) else str(p) for p in np.asarray(pattern, dtype=object).reshape(-1)]
        found = sorted({name for p in patterns for name in _glob.glob(_local(p))})
        return [np.array([name.encode() for name in found], dtype=object)]


def read_file(filename, name=None):
    """tf.io.read_file / tf.read_file."""
    return apply_op("ReadFile", [filename], name=name).outputs[0]


def write_file(filename, contents, name=None):
    """tf.io.write_file / tf.write_file: the WriteFile op."""
    return apply_op("WriteFile", [filename, contents], name=name)


def matching_files(pattern, name=None):
    """tf.io.matching_files / tf.matching_files."""
    return apply_op("MatchingFiles", [pattern], name=name).outputs[0]


TF_EXPORTS = {"read_file": read_file, "write_file": write_file, "matching_files": matching_files}
IO_EXPORTS = {"read_file": read_file, "write_file": write_file, "matching_files": matching_files}
