"""The environment variables tfc reads, each parsed in one place: a bad value is an error
that names the variable (a leaf module: the artifact loader uses it without the compiler)."""
from __future__ import annotations

import os
from typing import Optional

NUM_THREADS = "TFC_NUM_THREADS"
CACHE_DIR = "TFC_CACHE_DIR"
MALLOC_TUNING = "TFC_MALLOC_TUNING"


class EnvironmentVariableError(ValueError):
    """A tfc environment variable holds a value tfc cannot use."""


def num_threads() -> Optional[int]:
    """TFC_NUM_THREADS: the threads large kernels split over, or None when it is unset or empty."""
    text = os.environ.get(NUM_THREADS, "").strip()
    if not text:
        return None
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise EnvironmentVariableError(f"{NUM_THREADS}={text!r}: expected a positive whole number of threads")
    return value


def default_pool_size() -> int:
    """Threads for large kernels: TFC_NUM_THREADS, else the cores this process may use."""
    configured = num_threads()
    if configured is not None:
        return configured
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:
        return max(1, os.cpu_count() or 1)


def cache_dir() -> Optional[str]:
    """TFC_CACHE_DIR: the folder of the persistent compile cache (made when missing), or None."""
    directory = os.environ.get(CACHE_DIR)
    if not directory:
        return None
    if os.path.exists(directory) and not os.path.isdir(directory):
        raise EnvironmentVariableError(f"{CACHE_DIR}={directory!r} is not a folder (it names a file); point it at a "
                                       "folder for compiled code, or unset it")
    return directory


def malloc_tuning() -> bool:
    """TFC_MALLOC_TUNING: 0 leaves glibc's malloc as it is in a process running a tfc server
    (tfc/runtime/host_memory.py); 1 (or unset) tunes it."""
    text = os.environ.get(MALLOC_TUNING, "").strip()
    if text in ("", "1"):
        return True
    if text == "0":
        return False
    raise EnvironmentVariableError(f"{MALLOC_TUNING}={text!r}: expected 0 or 1")
