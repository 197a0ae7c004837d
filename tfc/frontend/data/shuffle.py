"""``shuffle(buffer_size, seed, reshuffle_each_iteration)`` at run time.

TF's algorithm: fill a buffer with the first ``buffer_size`` elements; then each output is
a uniformly drawn buffer slot, refilled with the next input element; once the input is
exhausted the rest of the buffer comes out in random order. tfc runs it a chunk at a
time on numpy arrays: for k steps it draws k slots at once, and the element a step
outputs is the last one written to its slot before it (an earlier step's input, or the
buffer's), found with one sort; the outputs are then gathered with one fancy index. The
sequence is the sequential algorithm's for the same draws. Elements that differ in shape
use a Python list as the buffer instead.

Random numbers come from numpy's PCG64 seeded with (seed, seed2) and, with
``reshuffle_each_iteration``, the number of passes started so far: the same seeds give
the same orders, each pass (epoch under ``repeat``) a new one, but not TensorFlow's
permutation. Without seeds the orders differ from run to run, as in TF.

Shuffling ``from_tensor_slices`` directly shuffles row numbers instead (the same draws,
the same order) and gathers each output chunk from the source arrays in one step.
"""
from __future__ import annotations

import numpy as np

from .. import errors
from .pipeline import Iter, Node, Range, Reader, TensorSlices, chunk_size, element


class Shuffle(Node):
    def __init__(self, input_node: Node, buffer_size: int, seed: int, seed2: int, reshuffle: bool, op=None):
        self.input = input_node
        self.buffer_size = int(buffer_size)
        if self.buffer_size <= 0:
            raise errors.InvalidArgumentError(None, op, "buffer_size must be greater than zero or UNKNOWN_CARDINALITY")
        if seed == 0 and seed2 == 0:  # no seed: nondeterministic, as TF
            seed, seed2 = (int(s) for s in np.random.SeedSequence().generate_state(2))
        self.seeds = [int(seed) & 0xFFFFFFFFFFFFFFFF, int(seed2) & 0xFFFFFFFFFFFFFFFF]
        self.reshuffle = bool(reshuffle)
        self.passes = 0

    def new_rng(self) -> np.random.Generator:
        if self.reshuffle:
            self.passes += 1
            return np.random.Generator(np.random.PCG64(self.seeds + [self.passes]))
        return np.random.Generator(np.random.PCG64(self.seeds))

    def iterator(self):
        if isinstance(self.input, TensorSlices):  # shuffle row numbers, gather the rows once
            return _GatherIter(_ShuffleIter(self, Range(0, self.input.size, 1)), self.input.components)
        return _ShuffleIter(self)


class _GatherIter(Iter):
    """``from_tensor_slices(...).shuffle(...)``: the shuffle runs on row numbers (the same
    draws, so the same order as shuffling the rows) and each output chunk is one gather
    from the source arrays, instead of copying every row into the buffer and out again."""

    def __init__(self, rows: Iter, components: list):
        self.rows = rows
        self.components = components

    def next_chunk(self, limit):
        chunk = self.rows.next_chunk(limit)
        if chunk is None:
            return None
        index = chunk[0]
        return [c[index] for c in self.components]

    def close(self):
        self.rows.close()


class _ShuffleIter(Iter):
    def __init__(self, node: Shuffle, input_node: Node = None):
        self.reader = Reader((input_node or node.input).iterator())
        self.rng = node.new_rng()
        self.size = node.buffer_size
        self.buffer = None  # one array per component (array mode), capacity grows up to size
        self.items = None  # list of elements (list mode)
        self.count = 0
        self.exhausted = False
        self.order = None  # the drain order once the input is exhausted
        self.drained = 0
        self.ready: list = []  # outputs computed ahead (list mode)

    # -- filling -------------------------------------------------------------------------
    def _fill(self) -> None:
        while self.count < self.size:
            chunk = self.reader.read(self.size - self.count)
            if chunk is None:
                self.exhausted = True
                return
            self._append(chunk)

    def _fits(self, chunk) -> bool:
        return self.items is None and (self.buffer is None or all(
            a.shape[1:] == b.shape[1:] and a.dtype == b.dtype for a, b in zip(chunk, self.buffer)))

    def _append(self, chunk) -> None:
        n = chunk_size(chunk)
        if not self._fits(chunk):
            self._to_list_mode()
        if self.items is not None:
            self.items.extend(element(chunk, i) for i in range(n))
            self.count += n
            return
        if self.buffer is None or self.count + n > self.buffer[0].shape[0]:
            capacity = min(self.size, max(self.count + n, 2 * (self.count + n), 64))
            grown = [np.empty((capacity,) + a.shape[1:], dtype=a.dtype) for a in chunk]
            if self.buffer is not None:
                for new, old in zip(grown, self.buffer):
                    new[:self.count] = old[:self.count]
            self.buffer = grown
        for b, a in zip(self.buffer, chunk):
            b[self.count:self.count + n] = a
        self.count += n

    def _to_list_mode(self) -> None:
        """Elements of different shapes: the buffer becomes a list of elements."""
        if self.items is not None:
            return
        self.items = [] if self.buffer is None else [[b[i].copy() for b in self.buffer] for i in range(self.count)]
        self.buffer = None

    # -- output ----------------------------------------------------------------------------
    def next_chunk(self, limit):
        if self.ready:
            return _single(self.ready.pop(0))
        if not self.exhausted and self.count < self.size:
            self._fill()
        if not self.exhausted:
            chunk = self.reader.read(limit if self.items is None else 1)
            if chunk is None:
                self.exhausted = True
            elif self._fits(chunk):
                return self._exchange(chunk)
            else:
                self._to_list_mode()
                self.ready = self._exchange_items(chunk)
                return _single(self.ready.pop(0))
        return self._drain(limit)

    def _exchange(self, incoming: list) -> list:
        """k steps of draw-output-refill with the buffer full, vectorised."""
        n = chunk_size(incoming)
        slots = self.rng.integers(0, self.count, size=n)
        order = np.argsort(slots, kind="stable")
        sorted_slots = slots[order]
        same_as_previous = np.zeros(n, dtype=bool)
        same_as_previous[1:] = sorted_slots[1:] == sorted_slots[:-1]
        previous = np.full(n, -1)
        previous[order[same_as_previous]] = order[np.flatnonzero(same_as_previous) - 1]
        from_input = previous >= 0
        out = []
        refilled = from_input.any()
        for b, a in zip(self.buffer, incoming):
            values = b[slots]  # one gather; the few slots refilled within the chunk are patched
            if refilled:
                values[from_input] = a[previous[from_input]]
            out.append(values)
        last = np.ones(n, dtype=bool)
        last[:-1] = sorted_slots[1:] != sorted_slots[:-1]
        for b, a in zip(self.buffer, incoming):
            b[sorted_slots[last]] = a[order[last]]
        return out

    def _exchange_items(self, incoming: list) -> list:
        """The same steps on the list buffer, one element at a time."""
        n = chunk_size(incoming)
        slots = self.rng.integers(0, self.count, size=n)
        out = []
        for step in range(n):
            slot = int(slots[step])
            out.append(self.items[slot])
            self.items[slot] = element(incoming, step)
        return out

    def _drain(self, limit):
        if self.order is None:
            self.order = self.rng.permutation(self.count)
            self.drained = 0
        if self.drained >= len(self.order):
            return None
        if self.items is not None:
            self.drained += 1
            return _single(self.items[self.order[self.drained - 1]])
        take = self.order[self.drained:self.drained + limit]
        self.drained += len(take)
        return [b[take] for b in self.buffer]

    def close(self):
        self.reader.close()


def _single(item: list) -> list:
    return [np.asarray(a)[None] for a in item]
