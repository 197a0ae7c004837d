"""The tf.data pipeline at run time: Python objects over numpy arrays.

A dataset op of the graph (TensorSliceDataset, BatchDatasetV2...) runs on the host and
returns a :class:`Node`: the description of its dataset, holding its input nodes and the
values of its tensor arguments. ``node.iterator()`` starts a fresh pass over it: an
:class:`Iter`.

Iterators hand out *chunks*, not single elements: a chunk is a list with one numpy array
per flat component, all with the same leading dimension n >= 1, holding n consecutive
elements of equal shapes. ``next_chunk(limit)`` returns at most ``limit`` elements, or
None at the end of the sequence. Sources slice chunks out of their arrays and
transformations work on whole chunks where they can (a batch of ``from_tensor_slices``
is one numpy copy, a vectorised ``map`` one compiled call), falling back to one element
per chunk where elements differ in shape.

Sources hand out read-only views of their arrays; whoever returns an element to the user
copies a read-only array (tfc/frontend/data/iterator.py), stages that build new arrays
(batch, shuffle, map) leave them writeable.

This module holds the protocol and the simple sources and transformations; batching,
shuffling, prefetching and the function-calling transformations have modules of their
own.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from .. import errors


class Node:
    """A dataset value (what a variant tensor holds at run time)."""

    def iterator(self) -> "Iter":
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"<tf.data {type(self).__name__}>"


class Iter:
    """One pass over a dataset."""

    def next_chunk(self, limit: int) -> Optional[list]:
        raise NotImplementedError

    def close(self) -> None:
        """Stop any background work (prefetch threads) of this pass."""


def chunk_size(chunk: list) -> int:
    return chunk[0].shape[0]


def element(chunk: list, index: int) -> list:
    """One element of a chunk: arrays (0-d ones too, so strings stay object arrays)."""
    return [a[index, ...] for a in chunk]


def read_only(array: np.ndarray) -> np.ndarray:
    view = array.view()
    view.flags.writeable = False
    return view


def as_chunk(elements: list) -> list:
    """Stack elements of equal shapes into one chunk."""
    return [np.stack([np.asarray(e[k]) for e in elements]) for k in range(len(elements[0]))]


def same_shapes(a: list, b: list) -> bool:
    return all(np.shape(x) == np.shape(y) for x, y in zip(a, b))


class Reader:
    """An iterator with a push-back buffer: ``read(limit)`` returns at most ``limit``
    elements, ``unread(chunk)`` puts elements back in front."""

    def __init__(self, it: Iter):
        self.it = it
        self.pending: list = []

    def read(self, limit: int) -> Optional[list]:
        if self.pending:
            chunk = self.pending.pop()
        else:
            chunk = self.it.next_chunk(limit)
            if chunk is None:
                return None
        if chunk_size(chunk) > limit:
            self.pending.append([a[limit:] for a in chunk])
            chunk = [a[:limit] for a in chunk]
        return chunk

    def unread(self, chunk: list) -> None:
        if chunk_size(chunk):
            self.pending.append(chunk)

    def close(self) -> None:
        self.it.close()


class _ListIter(Iter):
    """Chunks from a Python iterable of chunks."""

    def __init__(self, chunks):
        self._chunks = iter(chunks)
        self._pending = None

    def next_chunk(self, limit):
        chunk = self._pending if self._pending is not None else next(self._chunks, None)
        self._pending = None
        if chunk is None:
            return None
        if chunk_size(chunk) > limit:
            self._pending = [a[limit:] for a in chunk]
            chunk = [a[:limit] for a in chunk]
        return chunk


# -- sources ------------------------------------------------------------------------------------
class TensorSlices(Node):
    """``from_tensor_slices``: the rows of its components."""

    def __init__(self, components: list, op=None):
        self.components = [read_only(np.asarray(c)) for c in components]
        sizes = {c.shape[0] if c.ndim else None for c in self.components}
        if None in sizes:
            raise errors.InvalidArgumentError(None, op, "Unbatching a tensor is only supported for rank >= 1")
        if len(sizes) > 1:
            first = self.components[0].shape[0]
            other = next(c.shape[0] for c in self.components if c.shape[0] != first)
            raise errors.InvalidArgumentError(None, op, f"Dimensions {first} and {other} are not compatible")
        self.size = sizes.pop() if sizes else 0

    def iterator(self):
        return _SlicesIter(self)


class _SlicesIter(Iter):
    def __init__(self, node: TensorSlices):
        self.components = node.components
        self.size = node.size
        self.position = 0

    def next_chunk(self, limit):
        start = self.position
        if start >= self.size:
            return None
        stop = min(self.size, start + limit)
        self.position = stop
        return [c[start:stop] for c in self.components]


class Tensors(Node):
    """``from_tensors``: one element."""

    def __init__(self, components: list):
        self.chunk = [read_only(np.asarray(c)[None]) for c in components]

    def iterator(self):
        return _ListIter([self.chunk])


class Range(Node):
    """``range(start, stop, step)``: int64 scalars."""

    def __init__(self, start, stop, step, op=None, dtype=np.int64):
        self.start, self.stop, self.step = int(start), int(stop), int(step)
        self.dtype = dtype
        if self.step == 0:
            raise errors.InvalidArgumentError(None, op, "step must be a non-zero integer.")

    def iterator(self):
        return _RangeIter(self)


class _RangeIter(Iter):
    def __init__(self, node: Range):
        self.next = node.start
        self.stop = node.stop
        self.step = node.step
        self.dtype = node.dtype

    def next_chunk(self, limit):
        step = self.step
        remaining = -(-(self.stop - self.next) // step) if step > 0 else -(-(self.next - self.stop) // -step)
        if remaining <= 0:
            return None
        count = min(limit, remaining)
        values = self.next + step * np.arange(count, dtype=np.int64)
        self.next += step * count
        return [values.astype(self.dtype, copy=False)]


class Generator(Node):
    """``from_generator``: elements of a Python generator, converted to the declared types
    and checked against the declared shapes."""

    def __init__(self, function, args: list, structure, op=None):
        from . import structure as nest

        self.function = function
        self.args = args
        self.structure = structure
        self.specs = nest.flatten(structure)
        self.op = op

    def iterator(self):
        return _GeneratorIter(self)


class _GeneratorIter(Iter):
    def __init__(self, node: Generator):
        self.node = node
        self.generator = None

    def next_chunk(self, limit):
        from ..script_ops import _exception_status
        from . import structure as nest

        node = self.node
        try:
            if self.generator is None:
                self.generator = iter(node.function(*node.args))
            value = next(self.generator)
        except StopIteration:
            return None
        except errors.OpError:
            raise
        except Exception as e:  # noqa: BLE001 - TF's py_func error classes
            raise _exception_status(node.op, e) from None
        flat = nest.flatten(value) if nest.is_nested(node.structure) else [value]
        if not nest.same_structure(node.structure, value) and nest.is_nested(node.structure):
            raise errors.InvalidArgumentError(None, node.op, "TypeError: `generator` yielded an element that did not "
                                                            f"match the expected structure. The expected structure "
                                                            f"was {nest.types_of(node.structure)}, but the yielded "
                                                            f"element was {value}.")
        out = []
        for item, spec in zip(flat, node.specs):
            out.append(_converted(item, spec, node.op)[None])
        return out


def _converted(item, spec, op) -> np.ndarray:
    from .. import dtypes

    dtype = spec.dtype
    try:
        if dtype == dtypes.string:
            array = np.asarray(item, dtype=object)
            array = np.vectorize(lambda s: s.encode() if isinstance(s, str) else bytes(s), otypes=[object])(array) \
                if array.size else array
        else:
            array = np.array(item)  # a copy: the generator may reuse its arrays
            if array.dtype.kind in "OUS":
                raise TypeError("not numeric")
            array = array.astype(dtype.as_numpy_dtype, copy=False)
    except (TypeError, ValueError):
        raise errors.InvalidArgumentError(
            None, op, "TypeError: `generator` yielded an element that could not be converted to the expected type. "
                      f"The expected type was {dtype.name}, but the yielded element was {item}.") from None
    if not spec.shape.is_compatible_with(array.shape):
        raise errors.InvalidArgumentError(
            None, op, f"`generator` yielded an element of shape {array.shape} where an element of shape "
                      f"{spec.shape} was expected.")
    return array


# -- simple transformations -------------------------------------------------------------------
class Zip(Node):
    def __init__(self, inputs: list):
        self.inputs = inputs

    def iterator(self):
        return _ZipIter([Reader(node.iterator()) for node in self.inputs])


class _ZipIter(Iter):
    def __init__(self, readers):
        self.readers = readers
        self.done = False

    def next_chunk(self, limit):
        if self.done:
            return None
        parts = []
        count = limit
        for reader in self.readers:
            chunk = reader.read(count)
            if chunk is None:
                self.done = True
                return None
            count = min(count, chunk_size(chunk))
            parts.append(chunk)
        out = []
        for reader, chunk in zip(self.readers, parts):
            if chunk_size(chunk) > count:
                reader.unread([a[count:] for a in chunk])
            out.extend(a[:count] for a in chunk)
        return out

    def close(self):
        for reader in self.readers:
            reader.close()


class Concatenate(Node):
    def __init__(self, first: Node, second: Node):
        self.first, self.second = first, second

    def iterator(self):
        return _ConcatenateIter(self)


class _ConcatenateIter(Iter):
    def __init__(self, node):
        self.current = node.first.iterator()
        self.rest = node.second

    def next_chunk(self, limit):
        while True:
            chunk = self.current.next_chunk(limit)
            if chunk is not None or self.rest is None:
                return chunk
            self.current.close()
            self.current, self.rest = self.rest.iterator(), None

    def close(self):
        self.current.close()


class Repeat(Node):
    def __init__(self, input_node: Node, count: int):
        self.input, self.count = input_node, int(count)

    def iterator(self):
        return _RepeatIter(self)


class _RepeatIter(Iter):
    def __init__(self, node: Repeat):
        self.node = node
        self.epoch = 0
        self.current = node.input.iterator() if node.count != 0 else None
        self.produced = False

    def next_chunk(self, limit):
        while self.current is not None:
            chunk = self.current.next_chunk(limit)
            if chunk is not None:
                self.produced = True
                return chunk
            self.current.close()
            self.epoch += 1
            if (0 <= self.node.count <= self.epoch) or not self.produced:  # an empty input ends even repeat()
                self.current = None
                return None
            self.current = self.node.input.iterator()
            self.produced = False
        return None

    def close(self):
        if self.current is not None:
            self.current.close()


class Take(Node):
    def __init__(self, input_node: Node, count: int):
        self.input, self.count = input_node, int(count)

    def iterator(self):
        return _TakeIter(self.input.iterator(), self.count)


class _TakeIter(Iter):
    def __init__(self, it: Iter, count: int):
        self.reader = Reader(it)
        self.left = count if count >= 0 else None
        self.closed = False

    def next_chunk(self, limit):
        if self.left is None:
            return self.reader.read(limit)
        if self.left <= 0:
            if not self.closed:  # done: the input's pass ends now (TF resets it), a cache's too
                self.close()
            return None
        chunk = self.reader.read(min(limit, self.left))
        if chunk is not None:
            self.left -= chunk_size(chunk)
        return chunk

    def close(self):
        self.closed = True
        self.reader.close()


class Skip(Node):
    def __init__(self, input_node: Node, count: int):
        self.input, self.count = input_node, int(count)

    def iterator(self):
        return _SkipIter(self.input.iterator(), self.count)


class _SkipIter(Iter):
    def __init__(self, it: Iter, count: int):
        self.it = it
        self.to_skip = count  # < 0: everything

    def next_chunk(self, limit):
        while self.to_skip != 0:
            chunk = self.it.next_chunk(self.to_skip if self.to_skip > 0 else 1 << 20)
            if chunk is None:
                return None
            if self.to_skip > 0:
                self.to_skip -= chunk_size(chunk)
        return self.it.next_chunk(limit)

    def close(self):
        self.it.close()


class Cache(Node):
    """``cache()`` in memory: the first complete pass is recorded, later passes replay it
    (a pass left unfinished records nothing, as in TF). ``cache(filename)``: file_cache.py."""

    def __init__(self, input_node: Node):
        self.input = input_node
        self.chunks: Optional[list] = None

    def iterator(self):
        if self.chunks is not None:
            return _ListIter(self.chunks)
        return _CachingIter(self)


class _CachingIter(Iter):
    def __init__(self, node: Cache):
        self.node = node
        self.it = node.input.iterator()
        self.recorded: list = []

    def next_chunk(self, limit):
        chunk = self.it.next_chunk(limit)
        if chunk is None:
            if self.recorded is not None and self.node.chunks is None:
                self.node.chunks = self.recorded
            self.recorded = None
            return None
        if self.recorded is not None:
            self.recorded.append([read_only(a) for a in chunk])
        return chunk

    def close(self):
        self.it.close()


class Shard(Node):
    """``shard(num_shards, index)``: every num_shards-th element from ``index``."""

    def __init__(self, input_node: Node, num_shards: int, index: int):
        self.input, self.num_shards, self.index = input_node, int(num_shards), int(index)

    def iterator(self):
        return _ShardIter(self)


class _ShardIter(Iter):
    def __init__(self, node: Shard):
        self.it = node.input.iterator()
        self.num_shards = node.num_shards
        self.offset = node.index  # position of the next wanted element relative to the next chunk

    def next_chunk(self, limit):
        while True:
            chunk = self.it.next_chunk(limit * self.num_shards)
            if chunk is None:
                return None
            n = chunk_size(chunk)
            picked = np.arange(self.offset, n, self.num_shards)
            self.offset = (int(picked[-1]) + self.num_shards if picked.size else self.offset) - n
            if picked.size:
                return [a[picked] for a in chunk]

    def close(self):
        self.it.close()
