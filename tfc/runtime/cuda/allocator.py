"""A caching device-memory allocator over a ``Driver`` (alloc/free), like TF's BFC and PyTorch's
caching allocator in spirit: cuMemAlloc/cuMemFree are slow and synchronising, so memory is
taken from the driver rarely and handed out again.

Two modes, as GPUOptions' ``allow_growth`` chooses:

* ``allow_growth=True`` (the default here; no reservation): blocks come from the driver on
  demand and are cached on release.

  - Sizes are rounded up to 256 bytes and then to a size class with four steps per power of
    two (1024, 1280, 1536, 1792, 2048, 2560, ...), so at most ~25% is wasted and blocks of
    nearby sizes are interchangeable. A free block is reused only for its own size class.
  - A request that the cache cannot serve calls ``driver.alloc``; when that runs out of
    memory, every cached block is freed and the allocation tried once more.
  - ``memory_limit`` caps the bytes held (in use + cached); beyond it ResourceExhaustedError
    ("OOM when allocating tensor of N bytes for <what> ... (limit L bytes ...)").

* ``allow_growth=False`` (TF's default for a session's GPUOptions): as TF's BFC allocator, the
  whole limit is reserved from the driver in one allocation, at the first ``allocate``, and
  every buffer is carved out of that reservation; the driver is never called again (and
  ``empty_cache`` keeps the reservation). The limit is ``memory_limit`` (from
  ``per_process_gpu_memory_fraction`` of the total memory), or, when none is given, nearly all
  memory as TF takes it: the device's free memory less TF's system reserve (225 MiB below
  2 GiB free, else 500 / 1050 / 1536 MiB for compute capability <= 6 / 7 / >= 8;
  ``default_reservation``).

  - Sizes are rounded up to 256 bytes (no size classes) and blocks start at multiples of 256
    from the reservation's start (cuMemAlloc's base is at least 256-aligned).
  - Free ranges are kept by address and by size: a request takes the smallest free range
    that fits (the lowest address among equals) and splits off the rest; a released block
    is merged with the free ranges on either side, so freed neighbours become one range
    again (fragmentation only lasts while the blocks between ranges are in use).
  - When no free range fits: ResourceExhaustedError in the same style, naming the
    reservation and the largest free range. A reservation the driver cannot give is the
    same error, for the request that triggered it.

Buffers come back through ``DeviceBuffer.release()`` or garbage collection. Both only queue the
block (a lock-free deque append, safe from ``__del__`` on any thread); the allocator files the
queued blocks under its lock at its next call.

Blocks are not synchronised with streams: a block released while a kernel still uses it may be
handed out again, so callers release buffers only after the work using them is ordered before
the next user (a single stream, or a synchronize).
"""
from __future__ import annotations

import bisect
import collections
import threading
from typing import Dict, List, Optional

from tfc.frontend import errors

ALIGNMENT = 256
DIVISIONS = 4  # size classes per power of two


MIB = 1 << 20


def aligned_size(nbytes: int) -> int:
    """``nbytes`` rounded up to a multiple of 256 (at least 256): a reserved block's size."""
    return max(ALIGNMENT, -(-nbytes // ALIGNMENT) * ALIGNMENT)


def min_system_memory(available: int, cc_major: int) -> int:
    """The device memory TF leaves to the system when it takes "all" of it
    (``MinSystemMemory`` in TF's gpu_device.cc)."""
    if available < (1 << 31):
        return 225 * MIB
    if cc_major <= 6:
        return 500 * MIB
    if cc_major <= 7:
        return 1050 * MIB
    return 1536 * MIB


def default_reservation(driver) -> int:
    """What ``allow_growth=False`` reserves without a memory fraction: the free memory less
    ``min_system_memory`` (a driver without ``free_memory`` / ``compute_capability``: its
    total memory, capability 8)."""
    available = driver.free_memory() if hasattr(driver, "free_memory") else driver.total_memory()
    major = driver.compute_capability()[0] if hasattr(driver, "compute_capability") else 8
    return max(0, int(available) - min_system_memory(int(available), int(major)))


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
        if not allow_growth and memory_limit is None:
            memory_limit = default_reservation(driver)
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
        # allow_growth=False: the reservation (made at the first allocate) and its free ranges,
        # as offsets from its base: by start, by end, and (size, start) sorted for best fit.
        self._base: Optional[int] = None
        self._reserved = 0  # bytes usable in the reservation (the limit, rounded down to 256)
        self._hole_size: Dict[int, int] = {}  # start -> size
        self._hole_start: Dict[int, int] = {}  # end -> start
        self._holes: List[tuple] = []  # sorted (size, start)

    # -- public ------------------------------------------------------------------------------

    def allocate(self, nbytes: int, what: str = "") -> DeviceBuffer:
        """A buffer of at least ``nbytes``; ResourceExhaustedError when it cannot be had."""
        if nbytes < 0:
            raise errors.InvalidArgumentError(None, None, f"cannot allocate {nbytes} bytes for {what or 'a tensor'}")
        with self._lock:
            self._file_returned()
            if self.allow_growth:
                size = size_class(nbytes)
                ptr = self._take_cached(size)
                if ptr is None:
                    ptr = self._alloc_new(size, nbytes, what)
            else:
                size = aligned_size(nbytes)
                ptr = self._take_reserved(size, nbytes, what)
            self._in_use += size
            self._peak = max(self._peak, self._in_use)
            self._allocations += 1
        return DeviceBuffer(self, ptr, nbytes, size)

    def stats(self) -> dict:
        """Bytes ``in_use``, ``cached`` (held but free: cached blocks, or the reservation's free
        ranges) and the ``peak`` in use; counts of ``allocations`` served and
        ``driver_allocations`` made; the ``limit``, the bytes ``reserved`` up front (0 until
        the first allocate, and with allow_growth) and the ``allow_growth`` setting."""
        with self._lock:
            self._file_returned()
            return {
                "in_use": self._in_use,
                "cached": self._cached,
                "peak": self._peak,
                "allocations": self._allocations,
                "driver_allocations": self._driver_allocations,
                "limit": self.memory_limit,
                "reserved": self._reserved,
                "allow_growth": self.allow_growth,
            }

    def empty_cache(self) -> None:
        """Free every cached (unused) block back to the driver (allow_growth=False: nothing;
        the reservation is kept, as TF keeps its region)."""
        with self._lock:
            self._file_returned()
            self._release_cached()

    # -- internals (called with the lock held) ----------------------------------------------

    def _file_returned(self) -> None:
        """Move blocks queued by DeviceBuffer.release() into the cache (or the reservation)."""
        while self._returned:
            ptr, size = self._returned.popleft()
            if self._base is None:
                self._free.setdefault(size, []).append(ptr)
            else:
                self._add_hole(ptr - self._base, size)
            self._in_use -= size
            self._cached += size

    # -- the reservation (allow_growth=False) --------------------------------------------------

    def _take_reserved(self, size: int, nbytes: int, what: str) -> int:
        """The start of the smallest free range of at least ``size`` bytes, split."""
        if self._base is None:
            self._reserve(nbytes, what)
        at = bisect.bisect_left(self._holes, (size, -1))
        if at == len(self._holes):
            largest = self._holes[-1][0] if self._holes else 0
            raise self._oom(nbytes, what, f"no free block of {size} bytes in the {self._reserved} bytes reserved "
                                          f"with allow_growth=False (largest free block {largest} bytes)")
        hole, start = self._holes[at]
        self._remove_hole(start, hole)
        if hole > size:
            self._insert_hole(start + size, hole - size)
        self._cached -= size
        return self._base + start

    def _reserve(self, nbytes: int, what: str) -> None:
        """One driver allocation of the whole limit."""
        limit = self.memory_limit
        try:
            base = self.driver.alloc(limit) if limit >= ALIGNMENT else None
        except errors.ResourceExhaustedError as exc:
            raise self._oom(nbytes, what, f"the device cannot reserve the {limit} bytes of allow_growth=False "
                                          f"({exc.message})") from exc
        if base is None:
            raise self._oom(nbytes, what, "the memory limit leaves nothing to reserve with allow_growth=False")
        self._driver_allocations += 1
        self._base = base
        self._reserved = limit // ALIGNMENT * ALIGNMENT
        self._insert_hole(0, self._reserved)
        self._cached += self._reserved

    def _add_hole(self, start: int, size: int) -> None:
        """Free ``[start, start + size)``, merged with the free ranges around it."""
        end = start + size
        after = self._hole_size.get(end)
        if after is not None:
            self._remove_hole(end, after)
            size += after
        before = self._hole_start.get(start)
        if before is not None:
            self._remove_hole(before, start - before)
            size += start - before
            start = before
        self._insert_hole(start, size)

    def _insert_hole(self, start: int, size: int) -> None:
        self._hole_size[start] = size
        self._hole_start[start + size] = start
        bisect.insort(self._holes, (size, start))

    def _remove_hole(self, start: int, size: int) -> None:
        del self._hole_size[start]
        del self._hole_start[start + size]
        del self._holes[bisect.bisect_left(self._holes, (size, start))]

    def _take_cached(self, size: int) -> Optional[int]:
        blocks = self._free.get(size)
        if not blocks:
            return None
        self._cached -= size
        return blocks.pop()

    def _release_cached(self) -> None:
        if self._base is not None:  # the reservation stays
            return
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
    memory; ``allow_growth`` is passed through (False: that limit, or without a fraction nearly
    all memory, is reserved at the first allocation). No options: no limit, allow_growth=True."""
    if gpu_options is None:
        return CachingAllocator(driver)
    fraction = float(gpu_options.per_process_gpu_memory_fraction)
    limit = int(fraction * driver.total_memory()) if fraction > 0 else None
    return CachingAllocator(driver, memory_limit=limit, allow_growth=bool(gpu_options.allow_growth))
