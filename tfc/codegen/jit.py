"""JIT compilation: LLVM IR text -> optimised (-O3, host CPU) machine code via MCJIT.

Optional persistent cache: with ``TFC_CACHE_DIR`` set, the object file MCJIT produces is
stored there, keyed by the hash of the LLVM IR, the target (triple, CPU, features), the
kind of object (MCJIT or a position-independent AOT object) and the compiler versions
(tfc, llvmlite, LLVM). A later process with the same key skips optimisation and code
generation: the object is added to an empty MCJIT engine (``add_object_file``), which
links it against the process (and ``llvm.add_symbol``) like a freshly compiled one.
Entries are written atomically (a temp file, then ``os.replace``), so processes can
share the folder; an entry that fails its checksum is ignored and rewritten.
"""
from __future__ import annotations

import collections
import ctypes
import hashlib
import os
import re
import tempfile
import threading
import time
from dataclasses import dataclass, field
from typing import Optional

import llvmlite.binding as llvm

from .target import Target, host_target

ENTRY_SIGNATURE = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_int64))

CACHE_ENV = "TFC_CACHE_DIR"
CACHE_FORMAT = 1  # bump when what goes into an object changes without the LLVM IR changing (pipeline...)
_CACHE_MAGIC = b"TFCOBJ1\n"


def optimize(module, target_machine, speed_level: int = 3) -> None:
    """Run LLVM's default -O<speed_level> pipeline (loop and SLP vectorisers on)."""
    options = llvm.create_pipeline_tuning_options(speed_level=speed_level)
    options.loop_vectorization = True
    options.slp_vectorization = True
    builder = llvm.create_pass_builder(target_machine, options)
    builder.getModulePassManager().run(module, builder)


# -- the persistent object cache ----------------------------------------------------------------
def cache_dir() -> Optional[str]:
    """The cache folder (``TFC_CACHE_DIR``), or None when caching is off."""
    from tfc._env import cache_dir as configured_cache_dir

    return configured_cache_dir()


def compiler_version() -> str:
    import llvmlite

    import tfc

    return f"tfc {tfc.__version__}; llvmlite {llvmlite.__version__}; llvm " \
           f"{'.'.join(map(str, llvm.llvm_version_info))}; cache format {CACHE_FORMAT}"


def cache_key(llvm_ir: str, target: Target, kind: str) -> str:
    """sha256 of (compiler version, object kind, target, LLVM IR)."""
    h = hashlib.sha256()
    for part in (compiler_version(), kind, target.triple, target.cpu, target.features):
        h.update(part.encode())
        h.update(b"\0")
    h.update(llvm_ir.encode())
    return h.hexdigest()


def _cache_path(directory: str, key: str, suffix: str = ".o") -> str:
    return os.path.join(directory, f"{key}{suffix}")


def cache_load(key: str, directory: Optional[str] = None, suffix: str = ".o") -> Optional[bytes]:
    """The cached object for ``key``, or None (missing, unreadable or corrupt). ``suffix``
    names other kinds of entry (``.step``: tfc/runtime/step_cache.py), checked alike."""
    directory = directory or cache_dir()
    if not directory:
        return None
    try:
        with open(_cache_path(directory, key, suffix), "rb") as f:
            data = f.read()
    except OSError:
        return None
    head = len(_CACHE_MAGIC) + 32
    if len(data) < head or not data.startswith(_CACHE_MAGIC):
        return None
    payload = data[head:]
    if hashlib.sha256(payload).digest() != data[len(_CACHE_MAGIC):head]:
        return None
    return payload


def cache_store(key: str, payload: bytes, directory: Optional[str] = None, suffix: str = ".o") -> None:
    """Write an entry atomically; failures (read-only folder, full disk) are ignored."""
    directory = directory or cache_dir()
    if not directory:
        return
    try:
        os.makedirs(directory, exist_ok=True)
        fd, temp = tempfile.mkstemp(prefix=".tmp-", dir=directory)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(_CACHE_MAGIC + hashlib.sha256(payload).digest() + payload)
            os.replace(temp, _cache_path(directory, key, suffix))
        except BaseException:
            try:
                os.unlink(temp)
            except OSError:
                pass
            raise
    except OSError:
        pass


# -- compiling ----------------------------------------------------------------------------------
@dataclass
class CompiledCode:
    """Machine code kept alive with its engine; ``entry`` is the ctypes entry point."""

    engine: object
    entry: object
    timings: dict = field(default_factory=dict)
    optimized_ir: str = ""
    cached: bool = False  # loaded from the persistent cache
    object_key: Optional[str] = None  # the persistent cache's key of this code's object file, when it has one


# -- the in-process code cache ------------------------------------------------------------------
# Every run of LLVM's optimiser leaks ~70 KB inside llvmlite 0.50 (LLVMPY_CreatePassBuilder
# allocates a PassInstrumentationCallbacks that nothing frees, and each run registers callbacks
# in it), so compiling the same program again (a new Session on the same graph) must not go
# back to LLVM. Without TFC_CACHE_DIR (whose object files are loaded without the optimiser),
# recently compiled code is kept here and shared: an LRU bounded in entries (an engine holds
# ~0.75 MB besides its code: target machine, MCJIT state) and in LLVM IR bytes (it keeps its
# module, so the IR's size stands for the rest).
MEMORY_CACHE_ENTRIES = 16
MEMORY_CACHE_IR_BYTES = 32 << 20
_memory_cache: "collections.OrderedDict[str, tuple]" = collections.OrderedDict()
_memory_cache_lock = threading.Lock()
_MUTABLE_GLOBAL = re.compile(r'^@[^=\n]+= (?!external\b)[^"\n]*\bglobal\b', re.MULTILINE)


def _shareable(llvm_ir: str) -> bool:
    """Code with no mutable global of its own (e.g. profile counters) can serve several callers."""
    return len(llvm_ir) <= MEMORY_CACHE_IR_BYTES and _MUTABLE_GLOBAL.search(llvm_ir) is None


def _memory_lookup(key: str, entry_name: str) -> Optional[CompiledCode]:
    start = time.perf_counter()
    with _memory_cache_lock:
        found = _memory_cache.get((key, entry_name))
        if found is None:
            return None
        _memory_cache.move_to_end((key, entry_name))
    code = found[0]
    return CompiledCode(code.engine, code.entry, {"memory_cache": time.perf_counter() - start}, "", True)


def _memory_store(key: str, entry_name: str, code: CompiledCode, size: int) -> None:
    with _memory_cache_lock:
        _memory_cache[(key, entry_name)] = (code, size)
        _memory_cache.move_to_end((key, entry_name))
        total = sum(entry[1] for entry in _memory_cache.values())
        while len(_memory_cache) > MEMORY_CACHE_ENTRIES or total > MEMORY_CACHE_IR_BYTES:
            _, (_, dropped) = _memory_cache.popitem(last=False)
            total -= dropped


def clear_memory_cache() -> None:
    """Forget the in-process code (engines are freed once no executable uses them)."""
    with _memory_cache_lock:
        _memory_cache.clear()


def compile_ir(llvm_ir: str, entry_name: str = "tfc_main", target: Target = None,
               keep_optimized_ir: bool = False, use_cache: bool = True, ir_passes: bool = True) -> CompiledCode:
    """Optimise (unless ``ir_passes`` is False: code already in the shape it should run, like
    the hand-blocked GEMM, goes straight to instruction selection) and load ``llvm_ir``."""
    target = target or host_target()
    key = memory_key = None
    if use_cache and not keep_optimized_ir and cache_dir():
        key = cache_key(llvm_ir, target, "mcjit" if ir_passes else "mcjit-codegen-only")
        payload = cache_load(key)
        if payload is not None:
            code = _load_object(payload, entry_name, target)
            if code is not None:
                code.object_key = key
                return code
    elif use_cache and not keep_optimized_ir and _shareable(llvm_ir):
        memory_key = cache_key(llvm_ir, target, "mcjit" if ir_passes else "mcjit-codegen-only")
        code = _memory_lookup(memory_key, entry_name)
        if code is not None:
            return code
    timings = {}
    start = time.perf_counter()
    module = llvm.parse_assembly(llvm_ir)
    module.verify()
    timings["llvm_parse"] = time.perf_counter() - start
    machine = target.target_machine(opt=3, jit=True)
    module.triple = target.triple
    module.data_layout = str(machine.target_data)
    start = time.perf_counter()
    if ir_passes:
        optimize(module, machine)
    timings["llvm_opt"] = time.perf_counter() - start
    start = time.perf_counter()
    engine = llvm.create_mcjit_compiler(module, machine)
    if os.environ.get("TFC_PERF"):
        engine.enable_jit_events()
    objects = []
    if key is not None:
        engine.set_object_cache(lambda _module, buffer: objects.append(bytes(buffer)), None)
    engine.finalize_object()
    timings["llvm_codegen"] = time.perf_counter() - start
    address = engine.get_function_address(entry_name)
    if not address:
        raise RuntimeError(f"entry point {entry_name} was not compiled")
    stored = key is not None and len(objects) == 1
    if stored:
        cache_store(key, objects[0])
    entry = ENTRY_SIGNATURE(address)
    code = CompiledCode(engine, entry, timings, str(module) if keep_optimized_ir else "")
    if stored:
        code.object_key = key
    if memory_key is not None:
        _memory_store(memory_key, entry_name, code, len(llvm_ir))
    return code


def load_object(payload: bytes, entry_name: str = "tfc_main", target: Target = None) -> Optional[CompiledCode]:
    """An engine running an object file MCJIT made (``CompiledCode.object_key``'s entry), or
    None when it does not provide ``entry_name``. Symbols the object imports from the JIT
    runtime must be registered first (``tfc.codegen.parallel.jit_runtime()``)."""
    return _load_object(payload, entry_name, target or host_target())


def _load_object(payload: bytes, entry_name: str, target: Target) -> Optional[CompiledCode]:
    """An engine running a cached object file, or None when it does not provide the entry."""
    start = time.perf_counter()
    machine = target.target_machine(opt=3, jit=True)
    empty = llvm.parse_assembly("")
    empty.triple = target.triple
    empty.data_layout = str(machine.target_data)
    engine = llvm.create_mcjit_compiler(empty, machine)
    engine.add_object_file(llvm.ObjectFileRef.from_data(payload))
    engine.finalize_object()
    address = engine.get_function_address(entry_name)
    if not address:
        return None
    return CompiledCode(engine, ENTRY_SIGNATURE(address), {"cache_load": time.perf_counter() - start}, "", True)
