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


def pass_builder(target_machine, speed_level: int = 3):
    """A pass builder for LLVM's default -O<speed_level> pipeline (loop and SLP vectorisers on)."""
    options = llvm.create_pipeline_tuning_options(speed_level=speed_level)
    options.loop_vectorization = True
    options.slp_vectorization = True
    return llvm.create_pass_builder(target_machine, options)


def optimize(module, target_machine, speed_level: int = 3) -> None:
    """Run LLVM's default -O<speed_level> pipeline on ``module``."""
    builder = pass_builder(target_machine, speed_level)
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
    object_keys: list = field(default_factory=list)  # the persistent cache's keys of this code's object files
    units: tuple = (1, 1)  # (compile units, units compiled by LLVM rather than found in a cache)
    unit_seconds: list = field(default_factory=list)  # (unit name, LLVM seconds) of the units compiled


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
            code = load_object(payload, entry_name, target)
            if code is not None:
                code.object_keys = [key]
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
        code.object_keys = [key]
    if memory_key is not None:
        _memory_store(memory_key, entry_name, code, len(llvm_ir))
    return code


def load_object(payload, entry_name: str = "tfc_main", target: Target = None) -> Optional[CompiledCode]:
    """An engine running an object file MCJIT made (``CompiledCode.object_keys``' entries; one
    payload, or a list of them, linked together), or None when they do not provide
    ``entry_name``. Symbols the objects import from the JIT runtime must be registered
    first (``tfc.codegen.parallel.jit_runtime()``)."""
    payloads = [payload] if isinstance(payload, (bytes, bytearray)) else list(payload)
    code = _link(payloads, entry_name, target or host_target())
    if code is not None:
        code.timings = {"cache_load": code.timings["llvm_link"]}
        code.cached = True
    return code


def _link(payloads: list, entry_name: str, target: Target) -> Optional[CompiledCode]:
    """One MCJIT engine with ``payloads`` loaded and linked, or None without ``entry_name``."""
    start = time.perf_counter()
    machine = target.target_machine(opt=3, jit=True)
    empty = llvm.parse_assembly("")
    empty.triple = target.triple
    empty.data_layout = str(machine.target_data)
    engine = llvm.create_mcjit_compiler(empty, machine)
    for payload in payloads:
        engine.add_object_file(llvm.ObjectFileRef.from_data(payload))
    engine.finalize_object()
    address = engine.get_function_address(entry_name)
    if not address:
        return None
    return CompiledCode(engine, ENTRY_SIGNATURE(address), {"llvm_link": time.perf_counter() - start})


# -- programs compiled as separate units (units.py) ---------------------------------------------
# Unit objects compiled in this process, by cache key: a later program with some of the same
# kernels (another graph of the same layers, a changed graph) compiles only the others.
UNIT_CACHE_BYTES = 64 << 20
_unit_objects: "collections.OrderedDict[str, bytes]" = collections.OrderedDict()
_unit_objects_lock = threading.Lock()


def _unit_kind(unit) -> str:
    return f"unit-O{unit.opt_level}"


def _unit_lookup(key: str) -> Optional[bytes]:
    with _unit_objects_lock:
        payload = _unit_objects.get(key)
        if payload is not None:
            _unit_objects.move_to_end(key)
        return payload


def _unit_store(key: str, payload: bytes) -> None:
    with _unit_objects_lock:
        _unit_objects[key] = payload
        total = sum(len(p) for p in _unit_objects.values())
        while total > UNIT_CACHE_BYTES and len(_unit_objects) > 1:
            _, dropped = _unit_objects.popitem(last=False)
            total -= len(dropped)


def clear_unit_cache() -> None:
    with _unit_objects_lock:
        _unit_objects.clear()


class UnitBuild:
    """One program's units on their way to machine code: ``add`` a unit as soon as it is
    complete (its object comes from the in-process unit cache, the persistent cache
    (``TFC_CACHE_DIR``), or LLVM on the compile threads: objects.py), then ``link`` them
    into one MCJIT engine. Timings: ``llvm_units`` (how long ``link`` waited for the
    threads), ``llvm_link``, and the threads' seconds summed over units: ``unit_parse``,
    ``unit_opt``, ``unit_codegen``. ``CompiledCode.units``: (units, compiled by LLVM);
    ``CompiledCode.unit_seconds``: (unit name, seconds) of each unit LLVM compiled."""

    def __init__(self, target: Target = None, use_cache: bool = True):
        self.target = target or host_target()
        self.use_cache = use_cache
        self.directory = cache_dir() if use_cache else None
        self.units: list = []
        self.keys: list = []
        self.objects: list = []  # bytes, or a Future of (bytes, timings)
        self.disk_seconds = None  # loading objects from the persistent cache

    def add(self, unit) -> None:
        from .objects import compile_object, compile_pool

        key = cache_key(unit.text, self.target, _unit_kind(unit))
        payload = _unit_lookup(key) if self.use_cache else None
        if payload is not None and self.directory and not os.path.exists(_cache_path(self.directory, key)):
            cache_store(key, payload, self.directory)  # compiled before the folder was set
        if payload is None and self.directory:
            started = time.perf_counter()
            payload = cache_load(key, self.directory)
            if payload is not None:
                self.disk_seconds = (self.disk_seconds or 0.0) + time.perf_counter() - started
                _unit_store(key, payload)
        if payload is None:
            payload = compile_pool().submit(compile_object, unit.text, self.target, unit.opt_level)
        self.units.append(unit)
        self.keys.append(key)
        self.objects.append(payload)

    def link(self, entry_name: str) -> CompiledCode:
        """The engine running the units (the entry among them): waits for their objects."""
        program_key = hashlib.sha256("\0".join(self.keys).encode()).hexdigest()
        entry = next(unit for unit in self.units if unit.name == entry_name)
        shareable = self.use_cache and not self.directory and _MUTABLE_GLOBAL.search(entry.text) is None
        started = time.perf_counter()
        timings = {"unit_parse": 0.0, "unit_opt": 0.0, "unit_codegen": 0.0}
        unit_seconds = []
        payloads = []
        for unit, key, payload in zip(self.units, self.keys, self.objects):
            if not isinstance(payload, bytes):
                payload, unit_timings = payload.result()
                unit_seconds.append((unit.name, sum(unit_timings.values())))
                for phase, seconds in unit_timings.items():
                    timings[phase.replace("llvm_", "unit_")] += seconds
                if self.use_cache:
                    _unit_store(key, payload)
                    if self.directory:
                        cache_store(key, payload, self.directory)
            payloads.append(payload)
        timings["llvm_units"] = time.perf_counter() - started
        if shareable:
            code = _memory_lookup(program_key, entry_name)
            if code is not None:
                return code
        code = _link(payloads, entry_name, self.target)
        if code is None:
            raise RuntimeError(f"entry point {entry_name} was not compiled")
        code.timings = dict(timings, llvm_link=code.timings["llvm_link"])
        if self.disk_seconds is not None:
            code.timings["cache_load"] = self.disk_seconds
        code.units = (len(self.units), len(unit_seconds))
        code.cached = not unit_seconds  # every object came from a cache
        code.unit_seconds = unit_seconds
        if self.directory:
            code.object_keys = list(self.keys)
        if shareable:
            _memory_store(program_key, entry_name, code, sum(len(unit.text) for unit in self.units))
        return code


def compile_units(units: list, entry_name: str = "tfc_main", target: Target = None,
                  use_cache: bool = True) -> CompiledCode:
    """Compile a program split into units (``units.split_program``), the longest first."""
    build = UnitBuild(target, use_cache)
    for unit in sorted(units, key=lambda unit: -len(unit.text)):
        build.add(unit)
    return build.link(entry_name)
