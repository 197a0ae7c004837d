"""The GPUs a session can place ops on: every CUDA device the driver reports (ordinals 0,
1, ...), or with ``TFC_GPU_EMULATION=N`` (N >= 1) N GPUs stood in for by the host
emulation of GPU programs (so the session's GPU path, device-resident variables and
stages on several GPUs included, runs in tests without a GPU). Each emulated GPU has its
own memory as far as the emulation can tell: a kernel reading memory of another one is an
error (tfc/runtime/cuda/executable.py: ``EmulatedDevice``)."""
from __future__ import annotations

import os
from dataclasses import dataclass

EMULATION_ENV = "TFC_GPU_EMULATION"
EMULATED_MEMORY = 1 << 30


@dataclass(frozen=True)
class GpuDevice:
    index: int
    memory_bytes: int
    description: str


def emulated_count() -> int:
    """How many GPUs ``TFC_GPU_EMULATION`` asks the emulation to stand in for (0: none)."""
    text = os.environ.get(EMULATION_ENV, "").strip()
    return int(text) if text.isdigit() else 0


def emulated() -> bool:
    return emulated_count() > 0


def gpu_devices() -> list:
    """[GpuDevice] the in-process session may use, by ordinal (empty without a GPU)."""
    count = emulated_count()
    if count:
        return [GpuDevice(i, EMULATED_MEMORY, "tfc host emulation of a CUDA device") for i in range(count)]
    from .driver import available, driver

    if not available():
        return []
    out = []
    for ordinal in range(driver().device_count()):
        cuda = driver(ordinal)
        major, minor = cuda.compute_capability()
        out.append(GpuDevice(ordinal, cuda.total_memory(), f"device: {ordinal}, name: {cuda.device_name()}, "
                                                           f"compute capability: {major}.{minor}"))
    return out
