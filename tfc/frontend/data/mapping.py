"""The transformations that call a traced function: ``map``, ``filter``, ``flat_map`` and
``interleave`` (see functions.py for how a function runs).

``map`` and ``filter`` hand a whole chunk to the function's batched graph when it has
one; otherwise they call it once per element and stack results of equal shapes.

``map(..., num_parallel_calls=n)`` (``AUTOTUNE``: one per CPU) runs the function on a
pool of ``n`` threads: the input is read ahead in pieces (a request for ``limit``
elements is cut into ``n`` pieces), up to ``n`` pieces are computed at once, and results
are handed out in input order (TF's ``deterministic=True``; an error comes out where its
element would have). The compiled function releases the GIL, so pieces really run in
parallel. ``interleave`` follows TF's InterleaveDatasetOp: ``cycle_length`` open inputs,
``block_length`` consecutive elements from each in turn, a finished one replaced by the
next input element's dataset in the same place of the cycle.

``interleave(..., num_parallel_calls=n)`` runs the same cycle with the input elements'
datasets read on a pool of ``n`` threads: each open element (and up to ``cycle_length``
upcoming ones, read ahead from the input) computes its next block of ``block_length``
elements in the background while the consumer hands out the current ones. With
``deterministic`` (the default) the consumer walks the cycle exactly as ``interleave``
does, so the order is the sequential one (TF's too); with ``deterministic=False`` it
moves on, at a block boundary, to an element whose block is ready instead of waiting.
``tf.data.experimental.parallel_interleave`` reads its elements the same way; with
``sloppy=False`` it walks TF's legacy cycle (_LegacyInterleaveIter), which differs from
``interleave`` only once finished elements leave places of the cycle empty.
"""
from __future__ import annotations

import collections
import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from .pipeline import Iter, Node, Reader, as_chunk, chunk_size, element, same_shapes


def _node(value) -> Node:
    """The pipeline node a dataset function returned (a 0-d variant array holds it)."""
    return value[()] if isinstance(value, np.ndarray) else value


class Map(Node):
    def __init__(self, input_node: Node, function, captured: list, num_parallel_calls=None, op=None):
        from .. import errors

        self.input, self.function, self.captured = input_node, function, list(captured)
        self.parallelism = 1
        if num_parallel_calls is not None:
            calls = int(num_parallel_calls)
            if calls <= 0 and calls != -1:  # -1: AUTOTUNE
                raise errors.InvalidArgumentError(None, op, "num_parallel_calls must be greater than zero.")
            self.parallelism = calls if calls > 0 else (os.cpu_count() or 1)

    def iterator(self):
        if self.parallelism > 1:
            return _ParallelMapIter(self)
        return _MapIter(self)


class _MapIter(Iter):
    def __init__(self, node: Map):
        self.node = node
        self.reader = Reader(node.input.iterator())
        self.ready = None  # an output computed ahead (its shapes differed from the chunk before it)

    def next_chunk(self, limit):
        if self.ready is not None:
            chunk, self.ready = self.ready, None
            return chunk
        chunk = self.reader.read(limit)
        if chunk is None:
            return None
        function, captured = self.node.function, self.node.captured
        n = chunk_size(chunk)
        if n > 1:
            out = function.call_batch(chunk, captured)
            if out is not None:
                return out
        results = []
        for i in range(n):
            result = function.call(element(chunk, i), captured)
            if results and not same_shapes(results[0], result):
                if i + 1 < n:
                    self.reader.unread([a[i + 1:] for a in chunk])
                self.ready = as_chunk([result])
                break
            results.append(result)
        return as_chunk(results)

    def close(self):
        self.reader.close()


class _Failed:
    """An element's error, handed out in its element's place."""

    def __init__(self, error: BaseException):
        self.error = error


def _map_piece(function, captured: list, chunk: list) -> list:
    """The function over a piece of the input: output chunks (one unless the outputs'
    shapes change inside the piece), and a _Failed in place of an element that failed."""
    n = chunk_size(chunk)
    if n > 1:
        try:
            out = function.call_batch(chunk, captured)
        except Exception:  # noqa: BLE001 - element by element, to find the one that fails
            out = None
        if out is not None:
            return [out]
    items, results = [], []
    for i in range(n):
        try:
            result = function.call(element(chunk, i), captured)
        except Exception as e:  # noqa: BLE001 - raised to the consumer in order
            if results:
                items.append(as_chunk(results))
                results = []
            items.append(_Failed(e))
            continue
        if results and not same_shapes(results[0], result):
            items.append(as_chunk(results))
            results = []
        results.append(result)
    if results:
        items.append(as_chunk(results))
    return items


class _ParallelMapIter(Iter):
    """``num_parallel_calls``: pieces of the input mapped on a thread pool, in order."""

    def __init__(self, node: Map):
        self.node = node
        self.reader = Reader(node.input.iterator())
        self.pool = ThreadPoolExecutor(max_workers=node.parallelism, thread_name_prefix="tfc-data-map")
        self.pending: collections.deque = collections.deque()  # futures, in input order
        self.ready: collections.deque = collections.deque()  # output chunks, in order
        self.end_of_input = False

    def _fill(self, limit: int) -> None:
        node = self.node
        piece = max(1, -(-limit // node.parallelism))
        while not self.end_of_input and len(self.pending) < node.parallelism:
            chunk = self.reader.read(piece)
            if chunk is None:
                self.end_of_input = True
                return
            self.pending.append(self.pool.submit(_map_piece, node.function, node.captured, chunk))

    def next_chunk(self, limit):
        if not self.ready:
            self._fill(limit)
            if not self.pending:
                return None
            future = self.pending.popleft()
            self._fill(limit)  # keep the pool busy while this piece finishes
            self.ready.extend(future.result())
        chunk = self.ready.popleft()
        if isinstance(chunk, _Failed):  # an element's error, where the element would have been
            raise chunk.error
        if chunk_size(chunk) > limit:
            self.ready.appendleft([a[limit:] for a in chunk])
            chunk = [a[:limit] for a in chunk]
        return chunk

    def close(self):
        for future in self.pending:
            future.cancel()
        self.pending.clear()
        self.pool.shutdown(wait=False)
        self.reader.close()

    def __del__(self):
        try:
            self.pool.shutdown(wait=False)
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass


class Filter(Node):
    def __init__(self, input_node: Node, predicate, captured: list):
        self.input, self.predicate, self.captured = input_node, predicate, list(captured)

    def iterator(self):
        return _FilterIter(self)


class _FilterIter(Iter):
    def __init__(self, node: Filter):
        self.node = node
        self.reader = Reader(node.input.iterator())

    def next_chunk(self, limit):
        predicate, captured = self.node.predicate, self.node.captured
        while True:
            chunk = self.reader.read(limit)
            if chunk is None:
                return None
            n = chunk_size(chunk)
            keep = predicate.call_batch(chunk, captured) if n > 1 else None
            if keep is not None:
                keep = np.asarray(keep[0], dtype=bool).reshape(n)
            else:
                keep = np.array([bool(predicate.call(element(chunk, i), captured)[0]) for i in range(n)])
            if keep.all():
                return chunk
            if keep.any():
                return [a[keep] for a in chunk]

    def close(self):
        self.reader.close()


class FlatMap(Node):
    def __init__(self, input_node: Node, function, captured: list):
        self.input, self.function, self.captured = input_node, function, list(captured)

    def iterator(self):
        return _FlatMapIter(self)


class _FlatMapIter(Iter):
    def __init__(self, node: FlatMap):
        self.node = node
        self.reader = Reader(node.input.iterator())
        self.current = None

    def next_chunk(self, limit):
        while True:
            if self.current is not None:
                chunk = self.current.next_chunk(limit)
                if chunk is not None:
                    return chunk
                self.current.close()
                self.current = None
            item = self.reader.read(1)
            if item is None:
                return None
            dataset = self.node.function.call(element(item, 0), self.node.captured)[0]
            self.current = _node(dataset).iterator()

    def close(self):
        if self.current is not None:
            self.current.close()
        self.reader.close()


class Interleave(Node):
    def __init__(self, input_node: Node, function, captured: list, cycle_length: int, block_length: int, op=None):
        from .. import errors

        self.input, self.function, self.captured = input_node, function, list(captured)
        self.cycle_length = int(cycle_length) if int(cycle_length) > 0 else (os.cpu_count() or 1)
        self.block_length = int(block_length)
        if int(cycle_length) == 0 or int(cycle_length) < -1:
            raise errors.InvalidArgumentError(None, op, "cycle_length must be greater than zero.")
        if self.block_length <= 0:
            raise errors.InvalidArgumentError(None, op, "block_length must be greater than zero.")

    def iterator(self):
        return _InterleaveIter(self)


class _InterleaveIter(Iter):
    def __init__(self, node: Interleave):
        self.node = node
        self.reader = Reader(node.input.iterator())
        self.current = [None] * node.cycle_length
        self.cycle_index = 0
        self.block_index = 0
        self.end_of_input = False
        self.open = 0

    def _advance_cycle(self):
        self.block_index = 0
        self.cycle_index = (self.cycle_index + 1) % self.node.cycle_length

    def _open_next(self):
        """The iterator over the next input element's dataset (None at the end of the input)."""
        item = self.reader.read(1)
        if item is None:
            return None
        dataset = self.node.function.call(element(item, 0), self.node.captured)[0]
        return _node(dataset).iterator()

    def _choose_slot(self) -> None:
        """At a block boundary: where to read next (the sequential order: stay)."""

    def next_chunk(self, limit):
        node = self.node
        while not self.end_of_input or self.open > 0:
            if self.block_index == 0:
                self._choose_slot()
            it = self.current[self.cycle_index]
            if it is not None:
                chunk = it.next_chunk(min(limit, node.block_length - self.block_index))
                if chunk is not None:
                    self.block_index += chunk_size(chunk)
                    if self.block_index == node.block_length:
                        self._advance_cycle()
                    return chunk
                it.close()
                self.current[self.cycle_index] = None
                self.open -= 1
                self._advance_cycle()
            elif not self.end_of_input:
                it = self._open_next()
                if it is None:
                    self.end_of_input = True
                else:
                    self.current[self.cycle_index] = it
                    self.open += 1
            else:
                self._advance_cycle()
        return None

    def close(self):
        for it in self.current:
            if it is not None:
                it.close()
        self.reader.close()


class ParallelInterleave(Interleave):
    """``interleave(..., num_parallel_calls)``: TF's ParallelInterleaveDatasetV4 checks; the
    legacy ``parallel_interleave`` (LegacyParallelInterleaveDatasetV2) has its own."""

    def __init__(self, input_node: Node, function, captured: list, cycle_length: int, block_length: int,
                 num_parallel_calls: int, deterministic: bool = True, op=None, legacy: bool = False,
                 prefetch_input_elements: int = -1):
        from .. import errors

        cycle_length, block_length = int(cycle_length), int(block_length)
        if legacy:
            if cycle_length <= 0:
                raise errors.InvalidArgumentError(None, op, "`cycle_length` must be > 0")
            if block_length <= 0:
                raise errors.InvalidArgumentError(None, op, "`block_length` must be > 0")
            calls = cycle_length
        else:
            if cycle_length <= 0 and cycle_length != -1:
                raise errors.InvalidArgumentError(None, op, "`cycle_length` must be `tf.data.AUTOTUNE` or greater "
                                                            f"than 0 but is {cycle_length}")
            if block_length <= 0:
                raise errors.InvalidArgumentError(None, op, "`block_length` must be > 0")
            calls = int(num_parallel_calls)
            if calls <= 0 and calls != -1:
                raise errors.InvalidArgumentError(None, op, "num_parallel_calls must be greater than zero.")
            if cycle_length != -1 and calls > cycle_length:
                raise errors.InvalidArgumentError(
                    None, op, "If `cycle_length` is set to a fixed value, `num_parallel_calls` must be either "
                              "`tf.data.AUTOTUNE` or a value less than or equal to `cycle_length`. However, "
                              f"`num_parallel_calls` is {calls} and `cycle_length` is {cycle_length}")
        super().__init__(input_node, function, captured, cycle_length, block_length, op)
        self.parallelism = calls if calls > 0 else self.cycle_length
        self.deterministic = bool(deterministic)
        self.prefetch = int(prefetch_input_elements) if int(prefetch_input_elements) >= 0 else self.cycle_length
        self.legacy = legacy

    def iterator(self):
        if self.legacy and self.deterministic:
            return _LegacyInterleaveIter(self)
        return _ParallelInterleaveIter(self)


class _Element(Iter):
    """One input element's dataset, read a block at a time on the pool (one block ahead of
    the consumer); the consumer side is an Iter."""

    def __init__(self, node: ParallelInterleave, args: list, pool: ThreadPoolExecutor):
        self.node = node
        self.args = args
        self.pool = pool
        self.it = None  # the element's dataset iterator, made on the pool
        self.closed = False
        self.ready: collections.deque = collections.deque()  # chunks of blocks already read
        self.ended = False
        self.error = None
        self.future = pool.submit(self._block)

    def _block(self):
        """On the pool: the next block (opening the dataset first); (chunks, ended, error)."""
        node = self.node
        chunks, count = [], 0
        try:
            if self.it is None:
                dataset = node.function.call(self.args, node.captured)[0]
                self.it = _node(dataset).iterator()
            while count < node.block_length and not self.closed:
                chunk = self.it.next_chunk(node.block_length - count)
                if chunk is None:
                    return chunks, True, None
                chunks.append(chunk)
                count += chunk_size(chunk)
            return chunks, False, None
        except BaseException as e:  # noqa: BLE001 - raised to the consumer in order
            return chunks, True, e

    def is_ready(self) -> bool:
        return bool(self.ready) or self.future is None or self.future.done()

    def next_chunk(self, limit):
        while not self.ready:
            if self.error is not None:
                error, self.error = self.error, None
                raise error
            if self.future is None:
                return None
            chunks, ended, error = self.future.result()
            self.ready.extend(chunks)
            self.error = error
            self.future = None if ended or self.closed else self.pool.submit(self._block)
        chunk = self.ready.popleft()
        if chunk_size(chunk) > limit:
            self.ready.appendleft([a[limit:] for a in chunk])
            chunk = [a[:limit] for a in chunk]
        return chunk

    def _close_iterator(self, _future=None) -> None:
        if self.it is not None:
            self.it.close()
            self.it = None

    def close(self):
        self.closed = True
        future, self.future = self.future, None
        if future is None or future.cancel() or future.done():
            self._close_iterator()
        else:  # a block is being read: close once it is done
            future.add_done_callback(self._close_iterator)


class _ParallelInterleaveIter(_InterleaveIter):
    def __init__(self, node: ParallelInterleave):
        super().__init__(node)
        self.pool = ThreadPoolExecutor(max_workers=node.parallelism, thread_name_prefix="tfc-data-interleave")
        self.upcoming: collections.deque = collections.deque()  # elements read ahead, in input order
        self.input_done = False

    def _top_up(self) -> None:
        while not self.input_done and len(self.upcoming) < max(1, self.node.prefetch):
            item = self.reader.read(1)
            if item is None:
                self.input_done = True
                return
            self.upcoming.append(_Element(self.node, element(item, 0), self.pool))

    def _open_next(self):
        self._top_up()
        if not self.upcoming:
            return None
        it = self.upcoming.popleft()
        self._top_up()
        return it

    def _choose_slot(self) -> None:
        if self.node.deterministic:
            return
        current = self.current[self.cycle_index]
        if current is None or current.is_ready():
            return
        cycle = self.node.cycle_length
        for step in range(1, cycle):  # sloppy: the next open element whose block is ready
            index = (self.cycle_index + step) % cycle
            other = self.current[index]
            if other is not None and other.is_ready():
                self.cycle_index = index
                return

    def close(self):
        for it in list(self.current) + list(self.upcoming):
            if it is not None:
                it.close()
        self.current = [None] * self.node.cycle_length
        self.upcoming.clear()
        self.pool.shutdown(wait=False)
        self.reader.close()

    def __del__(self):
        try:
            self.pool.shutdown(wait=False)
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass


class _LegacyInterleaveIter(Iter):
    """``parallel_interleave(sloppy=False)``: TF's legacy ParallelInterleaveDataset cycle. It
    starts ``cycle_length`` elements and stages ``prefetch_input_elements`` more; a finished
    element is replaced at once by the oldest staged one (the next input element is staged
    behind it) and the cycle moves on. Unlike ``interleave``, when a finished element leaves
    its place empty (nothing left to stage), the next element continues the block count
    (TF does so when that element's outputs are already buffered, its usual state)."""

    def __init__(self, node: ParallelInterleave):
        self.node = node
        self.reader = Reader(node.input.iterator())
        self.pool = ThreadPoolExecutor(max_workers=node.parallelism, thread_name_prefix="tfc-data-interleave")
        self.slots = None  # the cycle: _Element or None
        self.staging: collections.deque = collections.deque()
        self.input_done = False
        self.next_index = 0
        self.block_count = 0

    def _read_input(self):
        if self.input_done:
            return None
        item = self.reader.read(1)
        if item is None:
            self.input_done = True
            return None
        return _Element(self.node, element(item, 0), self.pool)

    def _start(self) -> None:
        self.slots = []
        for _ in range(self.node.cycle_length + max(0, self.node.prefetch)):
            started = self._read_input()
            if started is None:
                break
            if len(self.slots) < self.node.cycle_length:
                self.slots.append(started)
            else:
                self.staging.append(started)

    def next_chunk(self, limit):
        if self.slots is None:
            self._start()
        node = self.node
        while True:
            size = len(self.slots)
            replaced = False
            for i in range(size):
                index = (self.next_index + i) % size
                current = self.slots[index]
                if current is None:
                    continue
                chunk = current.next_chunk(min(limit, node.block_length - self.block_count))
                if chunk is not None:
                    self.next_index = index
                    self.block_count += chunk_size(chunk)
                    if self.block_count == node.block_length:
                        self.next_index = (index + 1) % size
                        self.block_count = 0
                    return chunk
                current.close()  # finished: the oldest staged element takes its place
                self.slots[index] = None
                staged = self._read_input()
                if staged is not None:
                    self.staging.append(staged)
                if self.staging:
                    self.slots[index] = self.staging.popleft()
                    self.next_index = (index + 1) % size
                    self.block_count = 0
                    replaced = True
                    break
            if not replaced:
                return None

    def close(self):
        for it in list(self.slots or []) + list(self.staging):
            if it is not None:
                it.close()
        self.slots = []
        self.staging.clear()
        self.pool.shutdown(wait=False)
        self.reader.close()

    def __del__(self):
        try:
            self.pool.shutdown(wait=False)
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass
