"""The GPUs a session can place ops on: the CUDA device (ordinal 0), or with
``TFC_GPU_EMULATION=1`` the host emulation of GPU programs standing in for one (so the
session's GPU path, device-resident variables included, runs in tests without a GPU)."""
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


def emulated() -> bool:
    return os.environ.get(EMULATION_ENV) == "1"


def gpu_devices() -> list:
    """[GpuDevice] the in-process session may use (empty without a GPU)."""
    if emulated():
        return [GpuDevice(0, EMULATED_MEMORY, "tfc host emulation of a CUDA device")]
    from .driver import available, driver

    if not available():
        return []
    cuda = driver()
    major, minor = cuda.compute_capability()
    return [GpuDevice(0, cuda.total_memory(), f"device: 0, name: {cuda.device_name()}, "
                                              f"compute capability: {major}.{minor}")]
