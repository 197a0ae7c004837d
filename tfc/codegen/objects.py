"""Object files from LLVM IR text, several at once on a small thread pool.

llvmlite runs every call into LLVM under one process-wide lock, because by default its
modules live in LLVM's global context, which is not thread-safe. A unit compiled here gets
its own LLVMContext and its own TargetMachine, which LLVM does allow on concurrent threads,
so the long calls (parsing, the optimisation pipeline, code generation) go to llvmlite's C
functions without that lock. ctypes releases the GIL during them: two cores compile two
units at once while Python goes on. The short calls (creating and disposing objects) keep
the lock. Where llvmlite does not expose its C functions as this module expects (another
version), ``unlocked`` is False and every call takes the lock: units then compile one at a
time, with the same result.
"""
from __future__ import annotations

import concurrent.futures
import ctypes
import functools
import os
import threading
import time

import llvmlite.binding as llvm
from llvmlite.binding import ffi

from .target import Target

_HEAVY = ("LLVMPY_ParseAssembly", "LLVMPY_VerifyModule", "LLVMPY_RunNewModulePassManager",
          "LLVMPY_TargetMachineEmitToMemory")


@functools.lru_cache(maxsize=None)
def _unlocked_functions() -> dict:
    """name -> llvmlite's C function without its lock (argtypes as llvmlite declared them),
    or {} when this llvmlite is laid out differently."""
    raw_library = getattr(ffi.lib, "_lib", None)
    functions = {}
    for name in _HEAVY:
        locked = getattr(ffi.lib, name, None)  # declares argtypes/restype on first use
        raw = getattr(raw_library, name, None) if raw_library is not None else None
        if locked is None or raw is None or getattr(locked, "_cfn", None) is not raw:
            return {}
        functions[name] = raw
    return functions


def unlocked() -> bool:
    """Whether units compile in parallel (see the module docstring)."""
    return bool(_unlocked_functions())


def _call(name: str, *args):
    raw = _unlocked_functions().get(name)
    return raw(*args) if raw is not None else getattr(ffi.lib, name)(*args)


def compile_object(llvm_ir: str, target: Target, opt_level: int) -> tuple:
    """(object file, seconds per phase) of one module, parsed and verified in a context of
    its own. ``opt_level`` 2 or 3: LLVM's -O2/-O3 pipeline (vectorisers on), then
    instruction selection at -O3; 0: glue, straight to fast instruction selection and
    register allocation."""
    from .jit import pass_builder

    timings = {}
    started = time.perf_counter()
    context = llvm.create_context()
    try:
        with ffi.OutputString() as error:
            pointer = _call("LLVMPY_ParseAssembly", context, ctypes.c_char_p(llvm_ir.encode()), error)
            if error:
                if pointer:
                    llvm.ModuleRef(pointer, context).close()
                raise RuntimeError(f"LLVM IR parsing error\n{error}")
        module = llvm.ModuleRef(pointer, context)
        try:
            with ffi.OutputString() as error:
                if _call("LLVMPY_VerifyModule", module, error):
                    raise RuntimeError(str(error))
            machine = target.target_machine(opt=3 if opt_level else 0, jit=True)
            module.triple = target.triple
            module.data_layout = str(machine.target_data)
            timings["llvm_parse"] = time.perf_counter() - started
            started = time.perf_counter()
            if opt_level:
                builder = pass_builder(machine, opt_level)
                _call("LLVMPY_RunNewModulePassManager", builder.getModulePassManager(), module, builder)
            timings["llvm_opt"] = time.perf_counter() - started
            started = time.perf_counter()
            with ffi.OutputString() as error:
                buffer = _call("LLVMPY_TargetMachineEmitToMemory", machine, module, 1, error)
                if not buffer:
                    raise RuntimeError(str(error))
            try:
                payload = ctypes.string_at(ffi.lib.LLVMPY_GetBufferStart(buffer), ffi.lib.LLVMPY_GetBufferSize(buffer))
                timings["llvm_codegen"] = time.perf_counter() - started
                return payload, timings
            finally:
                ffi.lib.LLVMPY_DisposeMemoryBuffer(buffer)
        finally:
            module.close()
    finally:
        context.close()


_pool_lock = threading.Lock()
_pool: list = []  # the one executor, created on first use


def _forget_pool_in_child() -> None:
    """A forked child has none of the parent's threads: it starts a pool of its own."""
    global _pool_lock
    _pool_lock = threading.Lock()
    _pool.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool_in_child)


def compile_pool() -> concurrent.futures.ThreadPoolExecutor:
    """The compile threads: one per core this process may use (at most 8), or one when
    units cannot compile in parallel."""
    with _pool_lock:
        if not _pool:
            workers = min(8, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1)
            _pool.append(concurrent.futures.ThreadPoolExecutor(max(1, workers) if unlocked() else 1,
                                                               thread_name_prefix="tfc-llvm"))
        return _pool[0]
