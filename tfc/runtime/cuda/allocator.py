"""A caching device-memory allocator over a ``Driver`` (alloc/free), like TF's BFC and PyTorch's
caching allocator in spirit: cuMemAlloc/cuMemFree are slow and synchronising, so freed blocks
are kept and handed out again.

* Sizes are rounded up to 256 bytes and then to a size class with four steps per power of two
  (1024, 1280, 1536, 1792, 2048, 2560, ...), so at most ~25% is wasted and blocks of nearby
  sizes are interchangeable. A free block is reused only for its own size class.
* A request that the cache cannot serve calls ``driver.alloc``; when that runs out of memory,
  every cached block is freed and the allocation tried once more.
* ``memory_limit`` caps the bytes held (in use + cached); beyond it ResourceExhaustedError
  ("OOM when allocating tensor of N bytes for <what> ... (limit L bytes ...)").
* ``allow_growth`` is kept for parity with GPUOptions and reported in ``stats()``, but both values
  behave the same: memory is taken from the driver on demand and ``memory_limit`` (if any) is a
  hard cap. TF's ``allow_growth=False`` pre-reserves the whole limit; this allocator reserves
  nothing up front.

Buffers come back through ``DeviceBuffer.release()`` or garbage collection. Both only queue the
block (a lock-free deque append, safe from ``__del__`` on any thread); the allocator files the
queued blocks under its lock at its next call.

Blocks are not synchronised with streams: a block released while a kernel still uses it may be
handed out again, so callers release buffers only after the work using them is ordered before
the next user (a single stream, or a synchronize).
"""
from __future__ import annotations

import collections
import threading
from typing import Dict, List, Optional

from tfc.frontend import errors

ALIGNMENT = 256
DIVISIONS = 4  # size classes per power of two


def size_class(nbytes: int) -> int:
    """The block size that serves a request of ``nbytes`` (a multiple of 256, >= 256)."""
    n = max(ALIGNMENT, -(-nbytes // ALIGNMENT) * ALIGNMENT)
    step = max(ALIGNMENT, (1 << (n.bit_length() - 1)) // DIVISIONS)
    return -(-n // step) * step


class DeviceBuffer:
    """``nbytes`` of device memory at ``ptr`` (an int; ``int(buffer)`` gives it too), inside a
    block of ``size`` bytes. ``release()`` (idempotent) or garbage collection returns it."""

    __slots__ = ("ptr", "nbytes", "size", "_owner", "__weakref__")

    def __init__(self, owner: "CachingAllocator", ptr: int, nbytes: int, size: int):
        self.ptr = ptr
        self.nbytes = nbytes
        self.size = size
        self._owner = [owner]  # list.pop is atomic: exactly one release wins

    @property
    def released(self) -> bool:
        return not self._owner

    def release(self) -> None:
        """Give the block back to the allocator's cache; later calls do nothing."""
        try:
            owner = self._owner.pop()
        except IndexError:
            return
        owner._returned.append((self.ptr, self.size))

    def __del__(self):
        try:
            self.release()
        except Exception:  # interpreter shutdown: nothing left to return it to
            pass

    def __int__(self) -> int:
        return self.ptr

    def __repr__(self):
        state = "released" if self.released else "live"
        return f"<DeviceBuffer {self.nbytes} bytes at {self.ptr:#x} ({state})>"


class CachingAllocator:
    """Device memory from ``driver`` in size classes, cached on release (see module docstring)."""

    def __init__(self, driver, memory_limit: Optional[int] = None, allow_growth: bool = True):
        if memory_limit is not None and memory_limit < 0:
            raise errors.InvalidArgumentError(None, None, f"memory_limit must be >= 0, got {memory_limit}")
        self.driver = driver
        self.memory_limit = memory_limit
        self.allow_growth = allow_growth
        self._lock = threading.Lock()
        self._free: Dict[int, List[int]] = {}  # size class -> cached block pointers
        self._returned: "collections.deque[tuple[int, int]]" = collections.deque()
        self._in_use = 0  # bytes (whole blocks) handed out
        self._cached = 0  # bytes in self._free
        self._peak = 0  # most bytes in use at once
        self._allocations = 0  # allocate() calls served
        self._driver_allocations = 0  # driver.alloc calls made

    # -- public ------------------------------------------------------------------------------

    def allocate(self, nbytes: int, what: str = "") -> DeviceBuffer:
        """A buffer of at least ``nbytes``; ResourceExhaustedError when it cannot be had."""
        if nbytes < 0:
            raise errors.InvalidArgumentError(None, None, f"cannot allocate {nbytes} bytes for {what or 'a tensor'}")
        size = size_class(nbytes)
        with self._lock:
            self._file_returned()
            ptr = self._take_cached(size)
            if ptr is None:
                ptr = self._alloc_new(size, nbytes, what)
            self._in_use += size
            self._peak = max(self._peak, self._in_use)
            self._allocations += 1
        return DeviceBuffer(self, ptr, nbytes, size)

    def stats(self) -> dict:
        """Bytes ``in_use``, ``cached`` and their ``peak``; counts of ``allocations`` served and
        ``driver_allocations`` made; the ``limit`` and ``allow_growth`` setting."""
        with self._lock:
            self._file_returned()
            return {
                "in_use": self._in_use,
                "cached": self._cached,
                "peak": self._peak,
                "allocations": self._allocations,
                "driver_allocations": self._driver_allocations,
                "limit": self.memory_limit,
                "allow_growth": self.allow_growth,
            }

    def empty_cache(self) -> None:
        """Free every cached (unused) block back to the driver."""
        with self._lock:
            self._file_returned()
            self._release_cached()

    # -- internals (called with the lock held) ----------------------------------------------

    def _file_returned(self) -> None:
        """Move blocks queued by DeviceBuffer.release() into the cache."""
        while self._returned:
            ptr, size = self._returned.popleft()
            self._free.setdefault(size, []).append(ptr)
            self._in_use -= size
            self._cached += size

    def _take_cached(self, size: int) -> Optional[int]:
        blocks = self._free.get(size)
        if not blocks:
            return None
        self._cached -= size
        return blocks.pop()

    def _release_cached(self) -> None:
        blocks, self._free, self._cached = self._free, {}, 0
        for ptrs in blocks.values():
            for ptr in ptrs:
                self.driver.free(ptr)

    def _alloc_new(self, size: int, nbytes: int, what: str) -> int:
        limit = self.memory_limit
        if limit is not None and self._in_use + self._cached + size > limit:
            self._release_cached()
            if self._in_use + size > limit:
                raise self._oom(nbytes, what, f"the allocator's memory limit would be exceeded by a {size}-byte block")
        try:
            ptr = self.driver.alloc(size)
        except errors.ResourceExhaustedError as first:
            if not self._cached:
                raise self._oom(nbytes, what, f"the device is out of memory ({first.message})") from first
            self._release_cached()  # give the cached blocks back and try once more
            try:
                ptr = self.driver.alloc(size)
            except errors.ResourceExhaustedError as second:
                raise self._oom(nbytes, what, f"the device is out of memory even after emptying the cache "
                                              f"({second.message})") from second
        self._driver_allocations += 1
        return ptr

    def _oom(self, nbytes: int, what: str, why: str) -> errors.ResourceExhaustedError:
        limit = f"limit {self.memory_limit} bytes" if self.memory_limit is not None else "no limit set"
        device = getattr(self.driver, "device", "the GPU")
        return errors.ResourceExhaustedError(
            None, None,
            f"OOM when allocating tensor of {nbytes} bytes for {what or 'an unnamed tensor'} on {device} "
            f"by allocator tfc_caching_allocator: {why} ({limit}, {self._in_use} bytes in use, "
            f"{self._cached} cached)")


def from_gpu_options(driver, gpu_options=None) -> CachingAllocator:
    """A CachingAllocator set up from a ConfigProto's ``gpu_options`` (tfc.protos.GPUOptions):
    ``per_process_gpu_memory_fraction`` > 0 caps memory at that fraction of the device's total
    memory; ``allow_growth`` is passed through. No options: no limit, allow_growth=True."""
    if gpu_options is None:
        return CachingAllocator(driver)
    fraction = float(gpu_options.per_process_gpu_memory_fraction)
    limit = int(fraction * driver.total_memory()) if fraction > 0 else None
    return CachingAllocator(driver, memory_limit=limit, allow_growth=bool(gpu_options.allow_growth))
