"""Running a GPU program: its plan's steps on a device, behind the CPU Executable's interface.

``GpuCode.entry(slots, dims)`` is what ``tfc.runtime.executable.Executable`` calls for a
CPU program (``slots``: host addresses of the arguments, outputs and error record;
``dims``: the shape symbols), so argument checking, symbol binding, output allocation and
error reporting are the CPU runtime's, unchanged. Per call it:

1. uploads the arguments and a control block (error record, status word, dims) to
   device memory kept between calls (``variables`` that live on the device are passed
   as device buffers instead, see ``bind_device_args``);
2. runs the plan: each launch on ``ceil(extent / block)`` blocks (at most
   ``max_blocks``: the grid functions stride; a cooperative kernel's launch on one block of
   its own size per item, at most ``max_blocks``), device copies, and ``if`` / ``while`` by
   reading their predicate byte back; after a launch that may fail it reads the status
   word and stops at the first failure (later kernels could read out of bounds);
3. downloads the outputs and the updated refs, and the error record on failure (with
   the device addresses an error message reads translated to host copies).

The device is either a CUDA device (``CudaDevice``: GPU ``ordinal`` through
tfc/runtime/cuda/driver.py, memory from that GPU's ``process_allocator``) or the host
emulation (``EmulatedDevice``: the same module compiled for the CPU, every thread of every
grid run in turn, standing in for GPU ``ordinal``), so all of this is tested without a GPU.
"""
from __future__ import annotations

import bisect
import collections
import ctypes
import json
import threading
import weakref
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from tfc import program_errors as checks
from tfc.frontend import errors
from tfc.codegen.gpu.plan import Copy, If, Launch

CONTROL_WORDS = checks.RECORD_SIZE + 1  # the error record, then the status word, then the dims


@dataclass(frozen=True)
class LaunchConfig:
    block: int = 256  # threads per block
    max_blocks: int = 1 << 16  # more items than block * max_blocks: the threads stride


class _Allocation:
    __slots__ = ("ptr", "nbytes", "handle")

    def __init__(self, ptr: int, nbytes: int, handle=None):
        self.ptr, self.nbytes, self.handle = ptr, nbytes, handle


class GpuCode:
    """A loaded GPU program: ``entry(slots, dims) -> status`` (see the module docstring).

    ``arg_shapes`` / ``result_shapes``: per argument / result, (numpy dtype, [dim
    functions of the symbol values]); ``refs``: positions of the arguments the program
    may write (downloaded after the call)."""

    def __init__(self, device, plan: list, constants: Sequence[bytes], kernels: dict, arg_shapes: list,
                 result_shapes: list, refs: Sequence[int], arena_size, symbols: Sequence[str],
                 config: LaunchConfig = LaunchConfig()):
        from tfc.runtime.executable import _compile_dim

        self._device = device  # a device, or a function making one at the first call
        self.plan = plan
        self.kernels = kernels
        self.config = config
        self.arg_shapes = arg_shapes
        self.result_shapes = result_shapes
        self.refs = set(refs)
        self.arena_size = arena_size
        self.symbol_names = list(symbols)
        self.symbols = len(self.symbol_names)
        self._compile_dim = _compile_dim
        self._lock = threading.Lock()
        self._loaded = False
        self._constant_data = list(constants)
        self._constants: list = []  # their device allocations, uploaded at the first call
        self._buffers: dict = {}  # ("arg", i) / ("out", j) / "arena" / "control" / ("stage", n) -> _Allocation
        self._dim_functions: dict = {}
        self.device_args: dict = {}  # argument position -> device pointer (variables kept on the device)
        self.device_outputs: set = set()  # result positions left on the device (a later GPU stage reads them)

    @property
    def device(self):
        if not self._loaded:
            if callable(self._device):
                self._device = self._device()
            self._constants = [self._device.upload_constant(data) for data in self._constant_data]
            self._loaded = True
        return self._device

    # -- memory -------------------------------------------------------------------------------
    def _buffer(self, key, nbytes: int) -> _Allocation:
        """The device allocation for ``key``, (re)allocated when smaller than ``nbytes``."""
        current = self._buffers.get(key)
        if current is None or current.nbytes < nbytes:
            if current is not None:
                self.device.free(current)
            current = self._buffers[key] = self.device.alloc(max(nbytes, 1))
        return current

    def output_pointer(self, j: int) -> int:
        """The device address of result ``j`` of the last call (valid until the next call)."""
        return self._buffers[("out", j)].ptr

    def _evaluate(self, d, bound: tuple) -> int:
        """A dim's value for the call's symbol values."""
        if isinstance(d, int):
            return d
        fn = self._dim_functions.get(d)
        if fn is None:
            fn = self._dim_functions[d] = self._compile_dim(d, self.symbol_names)
        return int(fn(bound))

    # -- running ------------------------------------------------------------------------------
    def entry(self, slots, dims) -> int:
        with self._lock:
            return self._run(slots, dims)

    def _run(self, slots, dims) -> int:
        device = self.device  # (the first call loads the module and uploads the constants)
        bound = tuple(dims[i] for i in range(self.symbols))
        num_args, num_outputs = len(self.arg_shapes), len(self.result_shapes)
        pointers: dict = {}
        for i, (dtype, shape) in enumerate(self.arg_shapes):
            if i in self.device_args:
                pointers[("arg", i)] = self.device_args[i]
                continue
            nbytes = _nbytes(dtype, shape, bound)
            allocation = self._buffer(("arg", i), nbytes)
            device.upload(allocation.ptr, slots[i], nbytes)
            pointers[("arg", i)] = allocation.ptr
        for j, (dtype, shape) in enumerate(self.result_shapes):
            pointers[("out", j)] = self._buffer(("out", j), _nbytes(dtype, shape, bound)).ptr
        arena = self._buffer("arena", self._evaluate(self.arena_size, bound) + 64)
        arena_base = arena.ptr + (-arena.ptr % 64)
        control = self._buffer("control", (CONTROL_WORDS + max(1, self.symbols)) * 8)
        block = np.zeros(CONTROL_WORDS + max(1, self.symbols), dtype=np.int64)
        block[CONTROL_WORDS:CONTROL_WORDS + self.symbols] = bound
        device.upload(control.ptr, block.ctypes.data, block.nbytes)
        run = _Run(self, bound, pointers, arena_base, control.ptr)
        self._last_run = run
        status = run.steps(self.plan)
        device.synchronize()
        if status == 0:
            status = run.status()
        if status != 0:
            error_slot = num_args + num_outputs + 1  # after the arena's (the CPU entry's layout)
            record = np.frombuffer((ctypes.c_int64 * checks.RECORD_SIZE).from_address(slots[error_slot]),
                                   dtype=np.int64)
            device.download(record.ctypes.data, control.ptr, checks.RECORD_SIZE * 8)
            self._keep_alive = run.translate_addresses(status, record)
            return status
        for j, (dtype, shape) in enumerate(self.result_shapes):
            if j not in self.device_outputs:
                device.download(slots[num_args + j], pointers[("out", j)], _nbytes(dtype, shape, bound))
        for i in self.refs:
            if i not in self.device_args:
                dtype, shape = self.arg_shapes[i]
                device.download(slots[i], pointers[("arg", i)], _nbytes(dtype, shape, bound))
        return 0

    def replay(self) -> int:
        """Run the last call's plan again on the data already on the device (its arguments
        uploaded, its outputs left there) and wait for it: what benchmarks time, as a JAX
        or CuPy step on device arrays. Returns the status."""
        with self._lock:
            status = self._last_run.steps(self.plan)
            self.device.synchronize()
            return status

    def release(self) -> None:
        if not self._loaded:
            return
        for allocation in list(self._buffers.values()) + self._constants:
            self.device.free(allocation)
        self._buffers.clear()
        self._constants = []


class _Run:
    """One call's plan interpreter."""

    def __init__(self, code: GpuCode, bound: tuple, pointers: dict, arena_base: int, control: int):
        self.code = code
        self.device = code.device
        self.bound = bound
        self.pointers = pointers
        self.arena_base = arena_base
        self.control = control
        self.status_ptr = control + checks.RECORD_SIZE * 8
        self.dims_ptr = control + CONTROL_WORDS * 8

    def pointer(self, buffer: tuple) -> int:
        kind = buffer[0]
        if kind in ("arg", "out"):
            return self.pointers[buffer]
        if kind == "arena":
            return self.arena_base + self.code._evaluate(buffer[1], self.bound)
        if kind == "const":
            return self.code._constants[buffer[1]].ptr
        if kind == "stage":
            return self.code._buffer(("stage", buffer[1]), self.code._evaluate(buffer[2], self.bound)).ptr
        raise ValueError(f"unknown buffer {buffer}")

    def steps(self, steps: list) -> int:
        for step in steps:
            status = self.step(step)
            if status != 0:
                return status
        return 0

    def step(self, step) -> int:
        if isinstance(step, Launch):
            return self.launch(step)
        if isinstance(step, Copy):
            size = self.code._evaluate(step.size, self.bound)
            if size:
                self.device.copy(self.pointer(step.destination), self.pointer(step.source), size)
            return 0
        if isinstance(step, If):
            return self.steps(step.then if self.predicate(step.predicate) else step.otherwise)
        while True:
            status = self.steps(step.condition)
            if status != 0 or not self.predicate(step.predicate):
                return status
            status = self.steps(step.body)
            if status != 0:
                return status

    def predicate(self, buffer: tuple) -> bool:
        flag = np.zeros(1, dtype=np.uint8)
        self.device.download(flag.ctypes.data, self.pointer(buffer), 1)
        return bool(flag[0])

    def launch(self, step: Launch) -> int:
        extent = 1 if step.extent is None else self.code._evaluate(step.extent, self.bound)
        if extent <= 0:
            return 0
        config = self.code.config
        if step.block is not None:  # a cooperative kernel: its block size, one item per block
            block, blocks = step.block, min(extent, config.max_blocks)
        else:
            block = config.block if step.extent is not None else 1
            block = min(block, max(32, -(-extent // 32) * 32)) if step.extent is not None else 1
            blocks = min(-(-extent // block), config.max_blocks)
        args = [self.pointer(b) for b in step.buffers] + [self.dims_ptr, self.control, extent, self.status_ptr,
                                                          step.site]
        self.device.launch(step.kernel, blocks, block, args, step.what)
        if step.may_fail:
            return self.status()
        return 0

    def status(self) -> int:
        word = np.zeros(1, dtype=np.int64)
        self.device.download(word.ctypes.data, self.status_ptr, 8)
        return int(word[0])

    def translate_addresses(self, status: int, record: np.ndarray) -> list:
        """Error records of LABEL and ASSERT hold device addresses (the labels, the assert's
        descriptor and values): replace them by host copies (returned: keep them alive
        until the message is made)."""
        kept = []

        def host_copy(address: int) -> int:
            base, size = self._allocation_of(address)
            if base is None:
                return 0
            data = np.zeros(size - (address - base) + 1, dtype=np.uint8)
            self.device.download(data.ctypes.data, address, size - (address - base))
            kept.append(data)
            return data.ctypes.data

        if status == checks.LABEL:
            record[checks.EXTRA] = host_copy(int(record[checks.EXTRA]))
        elif status == checks.ASSERT:
            record[checks.EXTRA] = host_copy(int(record[checks.EXTRA]))
            text = ctypes.string_at(int(record[checks.EXTRA])).decode() if record[checks.EXTRA] else "{}"
            count = len(json.loads(text).get("values", []))
            for i in range(count):
                record[checks.DIMS + i] = host_copy(int(record[checks.DIMS + i]))
        return kept

    def _allocation_of(self, address: int) -> tuple:
        candidates = list(self.code._buffers.values()) + list(self.code._constants)
        for allocation in candidates:
            if allocation.ptr <= address < allocation.ptr + allocation.nbytes:
                return allocation.ptr, allocation.nbytes
        for pointer in self.code.device_args.values():
            if pointer == address:
                return pointer, 1 << 20
        return None, 0


def _nbytes(dtype, shape: list, bound: tuple) -> int:
    count = 1
    for fn in shape:
        count *= fn(bound)
    return count * np.dtype(dtype).itemsize


# -- devices ---------------------------------------------------------------------------------------
class _EmulatedMemory:
    """Which emulated GPU each live emulated allocation belongs to (address ranges), so the
    emulation of several GPUs can refuse a kernel or copy touching another GPU's memory (on
    real GPUs without peer access such a pointer is invalid)."""

    def __init__(self):
        self._lock = threading.Lock()
        self._starts: list = []  # sorted
        self._ranges: dict = {}  # start -> (end, ordinal)

    def add(self, start: int, nbytes: int, ordinal: int, array) -> None:
        with self._lock:
            if start not in self._ranges:
                bisect.insort(self._starts, start)
            self._ranges[start] = (start + nbytes, ordinal)
        weakref.finalize(array, self._remove, start)

    def _remove(self, start: int) -> None:
        with self._lock:
            if self._ranges.pop(start, None) is not None:
                self._starts.remove(start)

    def owner(self, address: int):
        """The ordinal whose allocation holds ``address`` (its end included), or None."""
        with self._lock:
            i = bisect.bisect_right(self._starts, address) - 1
            if i >= 0:
                end, ordinal = self._ranges[self._starts[i]]
                if address <= end:
                    return ordinal
        return None


_EMULATED_MEMORY = _EmulatedMemory()


class EmulatedDevice:
    """The host emulation: device memory is host memory; a launch calls the kernel's host
    entry, which runs every thread of the grid in turn (tfc/codegen/gpu/program.py).

    ``ordinal``: the emulated GPU it stands in for. With more than one emulated GPU
    (``TFC_GPU_EMULATION=N``, N > 1) its allocations are tagged with it, and a launch or
    copy given memory of another GPU (or memory that is not device memory) is an
    InternalError naming both: what a real GPU would fault on. ``launch_counts`` counts
    the launches per ordinal over the process (tests read it)."""

    launch_counts: "collections.Counter" = collections.Counter()

    def __init__(self, code, kernels: dict, ordinal: int = 0):
        from .devices import emulated_count

        self.code = code  # jit.CompiledCode of the module compiled for the host
        self.ordinal = ordinal
        self.checked = emulated_count() > 1
        self._entries = {}
        self._buffer_counts = dict(kernels)
        from tfc.codegen.gpu.program import HOST_PREFIX

        for name, buffers in kernels.items():
            address = code.engine.get_function_address(HOST_PREFIX + name)
            signature = ctypes.CFUNCTYPE(None, *([ctypes.c_uint64] * (buffers + 6)))
            self._entries[name] = signature(address)
        self.launches: list = []  # (kernel, blocks, block, extent) of every launch (tests read it)

    def alloc(self, nbytes: int) -> _Allocation:
        array = np.zeros(nbytes + 64, dtype=np.uint8)
        address = array.ctypes.data
        allocation = _Allocation(address + (-address % 64), nbytes, array)
        if self.checked:
            _EMULATED_MEMORY.add(allocation.ptr, nbytes, self.ordinal, array)
        return allocation

    def _check(self, address: int, what: str) -> None:
        owner = _EMULATED_MEMORY.owner(address)
        if owner != self.ordinal:
            where = "host memory" if owner is None else f"memory of /device:GPU:{owner}"
            raise errors.InternalError(
                None, None, f"{what} on the emulated /device:GPU:{self.ordinal} was given {where} "
                            f"(address {address:#x})")

    def free(self, allocation: _Allocation) -> None:
        allocation.handle = None

    def upload_constant(self, data: bytes) -> _Allocation:
        allocation = self.alloc(len(data))
        ctypes.memmove(allocation.ptr, data, len(data))
        return allocation

    def upload(self, destination: int, source: int, nbytes: int) -> None:
        if self.checked:
            self._check(destination, "an upload")
        ctypes.memmove(destination, source, nbytes)

    def download(self, destination: int, source: int, nbytes: int) -> None:
        if self.checked:
            self._check(source, "a download")
        ctypes.memmove(destination, source, nbytes)

    def copy(self, destination: int, source: int, nbytes: int) -> None:
        if self.checked:
            self._check(destination, "a device copy")
            self._check(source, "a device copy")
        ctypes.memmove(destination, source, nbytes)

    def launch(self, kernel: str, blocks: int, block: int, args: list, what: str = "") -> None:
        if self.checked:  # the buffers, the dims, the control block and the status word
            for address in args[:self._buffer_counts[kernel]] + [args[-5], args[-4], args[-2]]:
                self._check(address, f"kernel {kernel} ({what})")
        self.launches.append((kernel, blocks, block, args[-3]))
        EmulatedDevice.launch_counts[self.ordinal] += 1
        self._entries[kernel](*[a & 0xFFFFFFFFFFFFFFFF for a in args], blocks * block)

    def synchronize(self) -> None:
        pass


class CudaDevice:
    """A CUDA device (GPU ``ordinal``) through tfc.runtime.cuda.driver: the PTX module loaded
    once, memory from that device's caching allocator."""

    def __init__(self, ptx: str, kernels: dict, name: str = "tfc", allocator=None, ordinal: int = 0):
        from .driver import driver

        self.ordinal = ordinal
        self.driver = driver(ordinal) if ordinal else driver()
        self.module = self.driver.load_module(ptx, name)
        self.functions = {kernel: self.module.function(kernel) for kernel in kernels}
        self.allocator = allocator or process_allocator(ordinal=ordinal)

    def alloc(self, nbytes: int) -> _Allocation:
        buffer = self.allocator.allocate(nbytes)
        return _Allocation(buffer.ptr, nbytes, buffer)

    def free(self, allocation: _Allocation) -> None:
        if allocation.handle is not None:
            allocation.handle.release()
            allocation.handle = None

    def upload_constant(self, data: bytes) -> _Allocation:
        allocation = self.alloc(len(data))
        if data:
            host = np.frombuffer(data, dtype=np.uint8)
            self.driver.memcpy_htod(allocation.ptr, host, len(data))
        return allocation

    def upload(self, destination: int, source: int, nbytes: int) -> None:
        if nbytes:
            self.driver.memcpy_htod(destination, _host_view(source, nbytes), nbytes)

    def download(self, destination: int, source: int, nbytes: int) -> None:
        if nbytes:
            self.driver.memcpy_dtoh(_host_view(destination, nbytes), source, nbytes)

    def copy(self, destination: int, source: int, nbytes: int) -> None:
        self.driver.memcpy_dtod(destination, source, nbytes)

    def launch(self, kernel: str, blocks: int, block: int, args: list, what: str = "") -> None:
        self.driver.launch(self.functions[kernel], (blocks, 1, 1), (block, 1, 1), args,
                           what=f"kernel {kernel} ({what})")

    def synchronize(self) -> None:
        self.driver.synchronize()


_process_allocator: dict = {}  # ordinal -> the caching allocator of that GPU (TF's GPUProcessState)
_process_allocator_lock = threading.Lock()


def process_allocator(gpu_options=None, ordinal: int = 0):
    """The process's caching allocator of GPU ``ordinal``, made at its first call from
    ``gpu_options`` (a ConfigProto's: per_process_gpu_memory_fraction, allow_growth). As in
    TF, the options of the first session that uses a GPU hold for the process."""
    with _process_allocator_lock:
        allocator = _process_allocator.get(ordinal)
        if allocator is None:
            from .allocator import from_gpu_options
            from .driver import driver

            allocator = _process_allocator[ordinal] = from_gpu_options(driver(ordinal) if ordinal else driver(),
                                                                       gpu_options)
        return allocator


def _host_view(address: int, nbytes: int) -> np.ndarray:
    return np.ctypeslib.as_array((ctypes.c_uint8 * nbytes).from_address(address))


def emulated_device(module_text: str, kernels: dict, ordinal: int = 0) -> EmulatedDevice:
    """Compile a GPU program's host-emulation module (``GpuProgram.module_text("host")``) to
    stand in for GPU ``ordinal``."""
    from tfc.codegen.jit import compile_ir

    from tfc.codegen.gpu.program import HOST_PREFIX

    if not kernels:
        return EmulatedDevice(None, {}, ordinal)
    entry = HOST_PREFIX + next(iter(kernels))
    # no IR passes: programs are small in the emulation, and its LLVM time is the tests' time
    return EmulatedDevice(compile_ir(module_text, entry_name=entry, use_cache=False, ir_passes=False), kernels,
                          ordinal)


def gpu_executable(function, program, device, op_names: Sequence[str], constraints=(), source_ops=None,
                   config: LaunchConfig = LaunchConfig()):
    """An Executable (tfc.runtime.executable) whose code is ``program`` run on ``device``."""
    from tfc.passes.buffer_assign import arena_bytes
    from tfc.runtime.executable import Executable, Signature, _compile_dim

    signature = Signature.from_function(function)
    symbols = program.symbols
    arg_shapes = [(elem.np_dtype, [_compile_dim(d, symbols) for d in shape])
                  for _, elem, shape, _ in signature.args]
    result_shapes = [(elem.np_dtype, [_compile_dim(d, symbols) for d in shape]) for elem, shape in signature.results]
    refs = [i for i, (_, _, _, is_ref) in enumerate(signature.args) if is_ref]
    code = GpuCode(device, program.plan, program.constants, program.kernels, arg_shapes, result_shapes, refs,
                   arena_bytes(function), symbols, config)
    return Executable(function, code, symbols, 0, op_names, constraints, source_ops)
