"""Re-running the CPU backend's codegen tests on GPU programs (host emulation).

``rerun(cpu_tests, globals())`` copies a test module's tests into the calling module, and
``gpu_programs`` (an autouse fixture there) makes every program they compile a GPU
program run on the host emulation of its thread grids, with small blocks and few of
them, so every grid-stride loop takes several turns and ends on a tail.
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


def compile_module_for_gpu(module, *args, **kwargs):
    """compile_module, for the GPU (native=False stays an IR-only compile)."""
    if kwargs.get("native", True) is False:
        return compile_module(module, *args, **kwargs)
    return emulated(compile_module(module, *args, target="cuda", emulate=True, arch="sm_80", **kwargs))


def rerun(cpu_tests, namespace: dict, skip=()) -> None:
    for name in dir(cpu_tests):
        if name.startswith("test_") and name not in skip:
            namespace[name] = getattr(cpu_tests, name)


def patch(monkeypatch, *modules) -> None:
    from .. import helpers

    for module in (helpers, *modules):
        if hasattr(module, "compiled"):
            monkeypatch.setattr(module, "compiled", compiled_for_gpu)
        if hasattr(module, "compile_module"):
            monkeypatch.setattr(module, "compile_module", compile_module_for_gpu)
