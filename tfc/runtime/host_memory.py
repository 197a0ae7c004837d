"""Keep large host allocations mapped between steps (glibc's malloc).

glibc serves an allocation of more than its mmap threshold (128 KiB at first, raised as
such blocks are freed, up to 32 MiB) with a fresh ``mmap``, and gives the top of a heap back
to the kernel once more than twice that is free. A step that makes and drops megabyte
tensors (gRPC messages of a parameter server, feeds, fetches) then pays a page fault per
4 KiB page on every run; in the between-graph benchmark that was a quarter of a task's CPU
time. TensorFlow avoids it with its own allocators. Here glibc is told to keep up to
``TRIM_BYTES`` free at the top of its heaps and to serve blocks below ``MMAP_BYTES`` from
them, so the pages stay mapped from one step to the next. The memory a process keeps is
bounded by what it once used at its peak plus ``TRIM_BYTES``.

Applied once per process, by a tfc server when it starts; ``TFC_MALLOC_TUNING=0`` leaves
malloc as it is. A C library other than glibc is left alone.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import threading

from tfc import _env

M_TRIM_THRESHOLD = -1
M_TOP_PAD = -2
M_MMAP_THRESHOLD = -3
TRIM_BYTES = 512 << 20
MMAP_BYTES = 32 << 20  # glibc refuses more (half its 64 MiB heaps)
TOP_PAD_BYTES = 64 << 20

_lock = threading.Lock()
_applied: list = []


def keep_large_allocations_mapped() -> bool:
    """Tune glibc's malloc as the module docstring says (once); True if it is tuned."""
    with _lock:
        if _applied:
            return _applied[0]
        _applied.append(_tune())
        return _applied[0]


def _tune() -> bool:
    if not _env.malloc_tuning():
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False  # not glibc
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    return all(mallopt(option, value) == 1 for option, value in
               ((M_MMAP_THRESHOLD, MMAP_BYTES), (M_TRIM_THRESHOLD, TRIM_BYTES), (M_TOP_PAD, TOP_PAD_BYTES)))
