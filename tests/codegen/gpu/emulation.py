"""Re-running the CPU backend's codegen tests on GPU programs: on the host emulation,
and (test_device_*.py, where a CUDA device is) on the GPU.

``rerun(cpu_tests, globals())`` copies a test module's tests into the calling module, and
``patch`` (from an autouse fixture there) makes every program they compile a GPU program,
run with small blocks and few of them, so every grid-stride loop takes several turns and
ends on a tail.
"""
import functools

from tfc import ir
from tfc.compiler import compile_module
from tfc.runtime.cuda.executable import LaunchConfig

SMALL_GRID = LaunchConfig(block=32, max_blocks=3)


def emulated(result):
    if result.executable is not None:
        result.executable.code.config = SMALL_GRID
    return result


@functools.lru_cache(maxsize=None)
def compiled_for_gpu(text: str):
    """helpers.compiled, for the GPU."""
    return emulated(compile_module(ir.parse(text), target="cuda", emulate=True, arch="sm_80"))


@functools.lru_cache(maxsize=None)
def compiled_on_device(text: str):
    """helpers.compiled, for the CUDA device."""
    return emulated(compile_module(ir.parse(text), target="cuda"))


def compile_module_for_gpu(module, *args, **kwargs):
    """compile_module, for the GPU (native=False stays an IR-only compile)."""
    if kwargs.get("native", True) is False:
        return compile_module(module, *args, **kwargs)
    return emulated(compile_module(module, *args, target="cuda", emulate=True, arch="sm_80", **kwargs))


def compile_module_on_device(module, *args, **kwargs):
    if kwargs.get("native", True) is False:
        return compile_module(module, *args, **kwargs)
    return emulated(compile_module(module, *args, target="cuda", **kwargs))


def rerun(cpu_tests, namespace: dict, skip=()) -> None:
    for name in dir(cpu_tests):
        if name.startswith("test_") and name not in skip:
            namespace[name] = getattr(cpu_tests, name)


def patch(monkeypatch, *modules, device: bool = False) -> None:
    """GPU programs for ``modules`` (and helpers): emulated, or with ``device`` on the GPU."""
    from .. import helpers

    for module in (helpers, *modules):
        if hasattr(module, "compiled"):
            monkeypatch.setattr(module, "compiled", compiled_on_device if device else compiled_for_gpu)
        if hasattr(module, "compile_module"):
            monkeypatch.setattr(module, "compile_module",
                                compile_module_on_device if device else compile_module_for_gpu)
