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
"""
from __future__ import annotations

import collections
import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from .pipeline import Iter, Node, Reader, as_chunk, chunk_size, element, same_shapes


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
            self.current = dataset.iterator()

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

    def next_chunk(self, limit):
        node = self.node
        while not self.end_of_input or self.open > 0:
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
                item = self.reader.read(1)
                if item is None:
                    self.end_of_input = True
                else:
                    dataset = node.function.call(element(item, 0), node.captured)[0]
                    self.current[self.cycle_index] = dataset.iterator()
                    self.open += 1
            else:
                self._advance_cycle()
        return None

    def close(self):
        for it in self.current:
            if it is not None:
                it.close()
        self.reader.close()
