"""``batch``, ``padded_batch``, ``unbatch`` and ``window`` at run time (see pipeline.py for chunks).

A batch is read as whole chunks: slicing 128 rows out of ``from_tensor_slices`` arrays is
one numpy copy, and chunks of single elements are concatenated in one call. Errors are
TF's: elements of different shapes cannot be batched, padding cannot shrink an element,
unbatching needs the same batch size in every component.

A window is a dataset per component: its element chunk holds one ``variant`` (object)
array per component, each item a :class:`WindowValues` node over the window's values.
"""
from __future__ import annotations

import numpy as np

from .. import errors
from .pipeline import Iter, Node, Reader, _ListIter, chunk_size, element, read_only


def _shape_text(shape) -> str:
    return "[" + ",".join(str(d) for d in shape) + "]"


class Batch(Node):
    def __init__(self, input_node: Node, batch_size: int, drop_remainder: bool, op=None):
        self.input = input_node
        self.batch_size = int(batch_size)
        self.drop_remainder = bool(drop_remainder)
        self.op = op
        if self.batch_size <= 0:
            raise errors.InvalidArgumentError(None, op, "Batch size must be greater than zero.")

    def iterator(self):
        return _BatchIter(self)


class _BatchIter(Iter):
    def __init__(self, node: Batch):
        self.node = node
        self.reader = Reader(node.input.iterator())

    def next_chunk(self, limit):
        size = self.node.batch_size
        parts, count = [], 0
        while count < size:
            chunk = self.reader.read(size - count)
            if chunk is None:
                break
            parts.append(chunk)
            count += chunk_size(chunk)
        if count == 0 or (self.node.drop_remainder and count < size):
            return None
        return [batch[None] for batch in _concatenate(parts, self.node.op)]

    def close(self):
        self.reader.close()


def _concatenate(parts: list, op) -> list:
    """One array per component from chunks (a single chunk is copied only if it is a source's
    read-only view: arrays that stages made are handed on)."""
    if len(parts) == 1:
        return [a if a.flags.writeable else np.array(a) for a in parts[0]]
    out = []
    for k in range(len(parts[0])):
        first = parts[0][k].shape[1:]
        seen = 0
        for part in parts:
            if part[k].shape[1:] != first:
                raise errors.InvalidArgumentError(
                    None, op, f"Cannot batch tensors with different shapes in component {k}. First element had "
                              f"shape {_shape_text(first)} and element {seen} had shape "
                              f"{_shape_text(part[k].shape[1:])}.")
            seen += part[k].shape[0]
        out.append(np.concatenate([part[k] for part in parts]))
    return out


class PaddedBatch(Node):
    def __init__(self, input_node: Node, batch_size: int, padded_shapes: list, padding_values: list,
                 drop_remainder: bool, op=None):
        self.input = input_node
        self.batch_size = int(batch_size)
        self.padded_shapes = [[int(d) for d in np.asarray(s).reshape(-1)] for s in padded_shapes]
        self.padding_values = [np.asarray(v) for v in padding_values]
        self.drop_remainder = bool(drop_remainder)
        self.op = op
        if self.batch_size <= 0:
            raise errors.InvalidArgumentError(None, op, "Batch size must be greater than zero.")

    def iterator(self):
        return _PaddedBatchIter(self)


class _PaddedBatchIter(Iter):
    def __init__(self, node: PaddedBatch):
        self.node = node
        self.reader = Reader(node.input.iterator())

    def next_chunk(self, limit):
        node = self.node
        elements = []
        while len(elements) < node.batch_size:
            chunk = self.reader.read(node.batch_size - len(elements))
            if chunk is None:
                break
            elements.extend(element(chunk, i) for i in range(chunk_size(chunk)))
        if not elements or (node.drop_remainder and len(elements) < node.batch_size):
            return None
        return [self._pad([e[k] for e in elements], k)[None] for k in range(len(elements[0]))]

    def _pad(self, values: list, component: int) -> np.ndarray:
        node = self.node
        padded = node.padded_shapes[component]
        for value in values:
            if value.ndim != len(padded):
                raise errors.InvalidArgumentError(
                    None, node.op, f"The padded shape {_shape_text(padded)} of component {component} does not "
                                   f"have the rank of its elements, {_shape_text(value.shape)}")
        target = [d if d >= 0 else max(v.shape[i] for v in values) for i, d in enumerate(padded)]
        fill = node.padding_values[component]
        out = np.full([len(values)] + target, fill, dtype=values[0].dtype)
        for i, value in enumerate(values):
            if any(s > t for s, t in zip(value.shape, target)):
                raise errors.DataLossError(None, node.op, "Attempted to pad to a smaller size than the input element.")
            out[(i,) + tuple(slice(0, s) for s in value.shape)] = value
        return out

    def close(self):
        self.reader.close()


class Unbatch(Node):
    def __init__(self, input_node: Node, op=None):
        self.input = input_node
        self.op = op

    def iterator(self):
        return _UnbatchIter(self)


class _UnbatchIter(Iter):
    def __init__(self, node: Unbatch):
        self.op = node.op
        self.reader = Reader(node.input.iterator())

    def next_chunk(self, limit):
        while True:
            chunk = self.reader.read(max(1, limit))
            if chunk is None:
                return None
            if any(a.ndim < 2 for a in chunk):
                raise errors.InvalidArgumentError(None, self.op,
                                                  "Input element must have a non-scalar value in each component.")
            sizes = [a.shape[1] for a in chunk]
            if len(set(sizes)) > 1:
                other = next(i for i, s in enumerate(sizes) if s != sizes[0])
                raise errors.InvalidArgumentError(
                    None, self.op, f"Input element must have the same batch size in each component. Component 0 "
                                   f"had size {sizes[0]} but component {other} had size {sizes[other]}.")
            n = chunk_size(chunk) * sizes[0]
            if n:
                return [a.reshape((n,) + a.shape[2:]) for a in chunk]

    def close(self):
        self.reader.close()


class Window(Node):
    """``window(size, shift, stride, drop_remainder)``, as TF's WindowDatasetOp: a buffer of
    ``(size - 1) * stride + 1`` input elements; each window takes every ``stride``-th of
    them, then the buffer drops ``shift`` elements (reading past the buffer's end when
    ``shift`` is larger). Without ``drop_remainder`` the last windows may be short."""

    def __init__(self, input_node: Node, size: int, shift: int, stride: int, drop_remainder: bool, op=None):
        self.input = input_node
        self.size, self.shift, self.stride = int(size), int(shift), int(stride)
        self.drop_remainder = bool(drop_remainder)
        for name, value in (("Window size", self.size), ("Window shift", self.shift),
                            ("Window stride", self.stride)):
            if value <= 0:
                raise errors.InvalidArgumentError(None, op, f"{name} must be greater than zero.")

    def iterator(self):
        return _WindowIter(self)


class WindowValues(Node):
    """One component of one window: its values as chunks (one chunk when their shapes agree)."""

    def __init__(self, values: list):
        self.count = len(values)
        if values and all(v.shape == values[0].shape for v in values):
            self.chunks = [[read_only(np.stack(values))]]
        else:
            self.chunks = [[read_only(np.asarray(v)[None])] for v in values]

    def iterator(self):
        return _ListIter(self.chunks)

    def __repr__(self) -> str:
        return f"<tf.data window of {self.count} elements>"


class _WindowIter(Iter):
    def __init__(self, node: Window):
        self.node = node
        self.reader = Reader(node.input.iterator())
        self.buffer: list = []  # elements (lists of arrays), oldest first
        self.exhausted = False
        self.target = (node.size - 1) * node.stride + 1

    def _read(self, count: int) -> list:
        """Up to ``count`` more input elements (fewer at the end of the input)."""
        out = []
        while len(out) < count and not self.exhausted:
            chunk = self.reader.read(count - len(out))
            if chunk is None:
                self.exhausted = True
                self.reader.close()
                break
            out.extend(element(chunk, i) for i in range(chunk_size(chunk)))
        return out

    def _skip(self, count: int) -> None:
        while count > 0 and not self.exhausted:
            chunk = self.reader.read(count)
            if chunk is None:
                self.exhausted = True
                self.reader.close()
                return
            count -= chunk_size(chunk)

    def next_chunk(self, limit):
        node = self.node
        if len(self.buffer) < self.target:
            self.buffer.extend(self._read(self.target - len(self.buffer)))
        if not self.buffer or (node.drop_remainder and len(self.buffer) < self.target):
            return None
        picked = self.buffer[::node.stride][:node.size]
        if node.shift >= len(self.buffer):
            self._skip(node.shift - len(self.buffer))
            self.buffer = []
        else:
            del self.buffer[:node.shift]
        out = []
        for k in range(len(picked[0])):
            item = np.empty((1,), dtype=object)
            item[0] = WindowValues([e[k] for e in picked])
            out.append(item)
        return out

    def close(self):
        self.reader.close()
