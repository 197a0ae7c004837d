"""``prefetch(buffer_size)``: a background thread runs the input pipeline ahead of the
consumer into a bounded queue of ``buffer_size`` elements, so that producing the next
batch (slicing, shuffling, a compiled ``map``) overlaps the training step: the compiled
step releases the GIL while it runs.

The thread starts with the pass (the iterator's initializer, or a one-shot iterator's
first use) and stops at the end of its input, on an error (handed to the consumer in
order, as TF reports it), or when the pass is closed (re-initialisation, session close).
``AUTOTUNE`` prefetches ``AUTOTUNE_BUFFER`` elements; 0 prefetches nothing.
"""
from __future__ import annotations

import queue
import threading

from .pipeline import Iter, Node, Reader

AUTOTUNE_BUFFER = 4
_END = object()


class Prefetch(Node):
    def __init__(self, input_node: Node, buffer_size: int):
        self.input = input_node
        self.buffer_size = AUTOTUNE_BUFFER if int(buffer_size) < 0 else int(buffer_size)

    def iterator(self):
        if self.buffer_size == 0:
            return self.input.iterator()
        return _PrefetchIter(self.input.iterator(), self.buffer_size)


class _Failure:
    def __init__(self, error: BaseException):
        self.error = error


class _PrefetchIter(Iter):
    def __init__(self, it: Iter, buffer_size: int):
        self.it = it
        self.queue: queue.Queue = queue.Queue(maxsize=buffer_size)
        self.stop = threading.Event()
        self.pending = None
        self.finished = False
        self.thread = threading.Thread(target=self._produce, name="tfc-data-prefetch", daemon=True)
        self.thread.start()

    def _produce(self) -> None:
        reader = Reader(self.it)
        try:
            while not self.stop.is_set():
                chunk = reader.read(1)
                if not self._put(_END if chunk is None else chunk) or chunk is None:
                    return
        except BaseException as e:  # noqa: BLE001 - handed to the consumer
            self._put(_Failure(e))
        finally:
            self.it.close()

    def _put(self, item) -> bool:
        while not self.stop.is_set():
            try:
                self.queue.put(item, timeout=0.05)
                return True
            except queue.Full:
                continue
        return False

    def next_chunk(self, limit):
        if self.finished:
            return None
        item = self.queue.get()
        if item is _END:
            self.finished = True
            return None
        if isinstance(item, _Failure):
            self.finished = True
            raise item.error
        return item

    def close(self):
        self.stop.set()
        self.finished = True
