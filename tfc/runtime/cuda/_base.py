"""The binding-neutral half of the CUDA driver layer.

It holds what both bindings (cuda-python, pycuda) share: the mapping of CUDA results to tfc
errors, the packing of kernel arguments, the host-buffer checks, and the abstract ``Driver``
with the small ``Module``/``Function``/``Stream``/``Event`` objects it hands out. Nothing here
imports a binding, so it loads (and is tested) on machines without a GPU.
"""
from __future__ import annotations

import abc
import ctypes
import threading
from typing import Callable, Optional, Sequence

import numpy as np

from tfc.frontend import errors

CUDA_SUCCESS = 0
CUDA_ERROR_OUT_OF_MEMORY = 2
CUDA_ERROR_NOT_FOUND = 500

NO_DEVICE_PREFIX = "no CUDA device/driver was found"

_U64_MASK = (1 << 64) - 1


class NoCudaDevice(errors.NotFoundError):
    """No usable CUDA driver or device: the binding is missing, libcuda is missing, or 0 GPUs.

    Built like every tfc error, ``NoCudaDevice(node_def, op, message)``; a message that does not
    start with "no CUDA device/driver was found" gets that prefix. ``because(reason)`` builds one
    from a bare reason, which it keeps in ``.reason``.
    """

    def __init__(self, node_def, op, message, *args, **kwargs):
        if not message.startswith(NO_DEVICE_PREFIX):
            message = f"{NO_DEVICE_PREFIX}: {message}"
        super().__init__(node_def, op, message)
        self.reason = message[len(NO_DEVICE_PREFIX):].lstrip(": ")

    @classmethod
    def because(cls, reason: str) -> "NoCudaDevice":
        return cls(None, None, f"{NO_DEVICE_PREFIX}: {reason}")

    def __reduce__(self):
        return type(self), (self.node_def, None, self.message)


# ---------------------------------------------------------------------------------------------
# CUDA results -> tfc errors


def cuda_error(result, what: str, call: str = "", name: Optional[str] = None,
               description: Optional[str] = None) -> errors.OpError:
    """The tfc error for a failed driver call: ResourceExhaustedError for out-of-memory,
    InternalError otherwise. ``result`` is a CUresult (enum or int); ``name`` is its
    cuGetErrorName text when the caller could get it, else the enum's own name is used."""
    code = int(result)
    if not name:
        name = getattr(result, "name", None) or f"CUresult({code})"
    message = f"{what}: {call + ' returned ' if call else ''}{name}"
    if description:
        message += f" ({description})"
    cls = errors.ResourceExhaustedError if code == CUDA_ERROR_OUT_OF_MEMORY else errors.InternalError
    return cls(None, None, message)


Describe = Callable[[object], "tuple[Optional[str], Optional[str]]"]


def check_result(ret, what: str, call: str = "", describe: Optional[Describe] = None):
    """Unwrap a cuda-python return value, raising the tfc error when it carries a failure.

    cuda-python returns either a bare CUresult or a tuple ``(CUresult, *outputs)``. On success
    this gives None, the single output, or the tuple of outputs; on failure it raises
    ``cuda_error`` (``describe(result)`` supplies ``(name, description)`` if given).
    """
    if isinstance(ret, tuple):
        result, values = ret[0], ret[1:]
    else:
        result, values = ret, ()
    if int(result) != CUDA_SUCCESS:
        name, description = describe(result) if describe is not None else (None, None)
        raise cuda_error(result, what, call, name, description)
    if not values:
        return None
    return values[0] if len(values) == 1 else values


def oom_message(nbytes: int, device: str, detail: str, what: str = "") -> str:
    """TensorFlow's wording for a failed device allocation."""
    target = f" for {what}" if what else ""
    return f"OOM when allocating tensor of {nbytes} bytes{target} on {device}: {detail}"


# ---------------------------------------------------------------------------------------------
# Kernel arguments, launch dimensions, host buffers


class KernelArgs:
    """Kernel arguments packed for cuLaunchKernel: each one a 64-bit slot, and ``address``, the
    address of the array of pointers to those slots (the ``kernelParams`` the driver reads), or
    0 when there are no arguments. Keep the object alive until the launch call returns."""

    __slots__ = ("values", "pointers", "address", "ints")

    def __init__(self, args: Sequence[int]):
        ints = [_as_u64(a, i) for i, a in enumerate(args)]
        n = len(ints)
        self.ints = ints
        self.values = (ctypes.c_uint64 * max(n, 1))(*ints)
        base = ctypes.addressof(self.values)
        self.pointers = (ctypes.c_void_p * max(n, 1))(*(base + 8 * i for i in range(n)))
        self.address = ctypes.addressof(self.pointers) if n else 0


def _as_u64(arg, index: int) -> int:
    """One kernel argument as the bits of a 64-bit slot: a device pointer or an i64/u64 int
    (negative values become their two's complement, as a c_int64 would store them)."""
    try:
        value = int(arg)
    except (TypeError, ValueError):
        raise errors.InvalidArgumentError(
            None, None, f"kernel argument {index} is {type(arg).__name__}, not a 64-bit integer") from None
    if not -(1 << 63) <= value <= _U64_MASK:
        raise errors.InvalidArgumentError(None, None, f"kernel argument {index} = {value} does not fit 64 bits")
    return value & _U64_MASK


def pack_kernel_args(args: Sequence[int]) -> KernelArgs:
    """Pack 64-bit kernel arguments (device pointers, i64 ints) for cuLaunchKernel."""
    return KernelArgs(args)


def dims3(dims, what: str) -> "tuple[int, int, int]":
    """A grid or block shape as three positive ints; an int or a shorter tuple is padded with 1."""
    if isinstance(dims, int):
        dims = (dims,)
    dims = tuple(int(d) for d in dims)
    if not 1 <= len(dims) <= 3 or any(d < 1 for d in dims):
        raise errors.InvalidArgumentError(None, None, f"{what} must be 1 to 3 positive ints, got {dims}")
    return dims + (1,) * (3 - len(dims))


def host_bytes(array, nbytes: Optional[int], writable: bool, what: str) -> np.ndarray:
    """The first ``nbytes`` (default: all) bytes of a C-contiguous host array, as a uint8 view.

    A source that is not C-contiguous is copied (the copy only lives for the synchronous call);
    a destination must be C-contiguous and writable, since the bytes land in it.
    """
    if not isinstance(array, np.ndarray):
        array = np.frombuffer(array, dtype=np.uint8) if not writable else np.asarray(memoryview(array))
    if not array.flags.c_contiguous:
        if writable:
            raise errors.InvalidArgumentError(None, None, f"{what}: the host array must be C-contiguous")
        array = np.ascontiguousarray(array)
    if writable and not array.flags.writeable:
        raise errors.InvalidArgumentError(None, None, f"{what}: the host array is read-only")
    flat = array.reshape(-1).view(np.uint8)
    if nbytes is None:
        return flat
    if not 0 <= nbytes <= flat.size:
        raise errors.InvalidArgumentError(
            None, None, f"{what}: {nbytes} bytes asked for, the host array holds {flat.size}")
    return flat[:nbytes]


# ---------------------------------------------------------------------------------------------
# Objects the driver hands out


class Function:
    """A kernel in a loaded module; ``handle`` is the binding's CUfunction."""

    def __init__(self, module: "Module", name: str, handle):
        self.module = module
        self.name = name
        self.handle = handle

    def __repr__(self):
        return f"<Function {self.name} of {self.module.name}>"


class Module:
    """A loaded (JIT-compiled) PTX module; ``function(name)`` finds a kernel in it, once."""

    def __init__(self, driver: "Driver", name: str, handle):
        self.driver = driver
        self.name = name
        self.handle = handle
        self._functions: "dict[str, Function]" = {}

    def function(self, kernel_name: str) -> Function:
        """The kernel ``kernel_name``; NotFoundError naming it when the module has none."""
        fn = self._functions.get(kernel_name)
        if fn is None:
            fn = Function(self, kernel_name, self.driver._module_function(self, kernel_name))
            self._functions[kernel_name] = fn
        return fn

    def __repr__(self):
        return f"<Module {self.name} ({self.driver.name})>"


class Stream:
    """A CUDA stream; ``handle`` is its CUstream as an int (0 would be the default stream)."""

    def __init__(self, driver: "Driver", native):
        self.driver = driver
        self.native = native
        self.handle = driver._stream_handle(native)

    def synchronize(self) -> None:
        self.driver._stream_synchronize(self)


class Event:
    """A CUDA event for timing: ``record`` on a stream, ``synchronize``, ``elapsed_ms``."""

    def __init__(self, driver: "Driver", native):
        self.driver = driver
        self.native = native

    def record(self, stream: Optional[Stream] = None) -> None:
        self.driver._event_record(self, stream)

    def synchronize(self) -> None:
        self.driver._event_synchronize(self)

    @staticmethod
    def elapsed_ms(start: "Event", end: "Event") -> float:
        """Milliseconds between two recorded (and completed) events."""
        return start.driver._event_elapsed_ms(start, end)


# ---------------------------------------------------------------------------------------------
# The driver interface


_CURRENT = threading.local()  # .driver: the Driver whose context is current on the thread


class Driver(abc.ABC):
    """One GPU seen through one binding. Device pointers are Python ints.

    Every call makes the device's primary context current on the calling thread first (once per
    thread: Python threads may call in). Failures raise tfc errors, never binding exceptions.
    """

    name = "abstract"

    def __init__(self, ordinal: int = 0):
        self.ordinal = ordinal

    @property
    def device(self) -> str:
        """The TensorFlow name of the device, for messages."""
        return f"/device:GPU:{self.ordinal}"

    def _ensure_context(self) -> None:
        """Make this device's context current on the calling thread, unless it is already
        (with several GPUs, a thread calling into another device's driver switches)."""
        previous = getattr(_CURRENT, "driver", None)
        if previous is not self:
            if previous is not None:
                previous._leave_current()
            self._make_current()
            _CURRENT.driver = self

    @abc.abstractmethod
    def _make_current(self) -> None:
        """Make the primary context current on the calling thread."""

    def _leave_current(self) -> None:
        """Undo ``_make_current`` before another device's context becomes current (a binding
        keeping a context stack pops it; cuda-python's cuCtxSetCurrent needs nothing)."""

    # device facts
    @abc.abstractmethod
    def device_name(self) -> str: ...

    @abc.abstractmethod
    def compute_capability(self) -> "tuple[int, int]": ...

    @abc.abstractmethod
    def total_memory(self) -> int: ...

    @abc.abstractmethod
    def free_memory(self) -> int: ...

    @abc.abstractmethod
    def device_count(self) -> int: ...

    # code
    @abc.abstractmethod
    def load_module(self, ptx: str, name: str) -> Module:
        """JIT-load PTX; InternalError naming ``name`` with the JIT error log on failure."""

    @abc.abstractmethod
    def launch(self, function: Function, grid, block, args: Sequence[int], shared_bytes: int = 0,
               stream: Optional[Stream] = None, what: str = "") -> None:
        """Launch ``function`` (asynchronously) with 64-bit arguments."""

    # memory
    @abc.abstractmethod
    def alloc(self, nbytes: int) -> int: ...

    @abc.abstractmethod
    def free(self, ptr: int) -> None: ...

    @abc.abstractmethod
    def memcpy_htod(self, dst: int, src, nbytes: Optional[int] = None) -> None: ...

    @abc.abstractmethod
    def memcpy_dtoh(self, dst, src: int, nbytes: Optional[int] = None) -> None: ...

    @abc.abstractmethod
    def memcpy_dtod(self, dst: int, src: int, nbytes: int) -> None: ...

    @abc.abstractmethod
    def memset_d8(self, ptr: int, value: int, nbytes: int) -> None: ...

    @abc.abstractmethod
    def synchronize(self) -> None: ...

    # streams and events
    @abc.abstractmethod
    def create_stream(self) -> Stream: ...

    @abc.abstractmethod
    def create_event(self) -> Event: ...

    # hooks for Module/Stream/Event
    @abc.abstractmethod
    def _module_function(self, module: Module, kernel_name: str): ...

    @abc.abstractmethod
    def _stream_handle(self, native) -> int: ...

    @abc.abstractmethod
    def _stream_synchronize(self, stream: Stream) -> None: ...

    @abc.abstractmethod
    def _event_record(self, event: Event, stream: Optional[Stream]) -> None: ...

    @abc.abstractmethod
    def _event_synchronize(self, event: Event) -> None: ...

    @abc.abstractmethod
    def _event_elapsed_ms(self, start: Event, end: Event) -> float: ...

    def __repr__(self):
        return f"<{type(self).__name__} {self.device}>"


def kernel_not_found(module: Module, kernel_name: str, detail: str) -> errors.NotFoundError:
    return errors.NotFoundError(
        None, None, f"kernel {kernel_name!r} not found in module {module.name!r}: {detail}")


def module_load_error(err: errors.OpError, name: str, log: str) -> errors.OpError:
    """The error for a PTX module that did not load: names the module and carries the JIT log."""
    log = log.strip() or "(empty)"
    message = err.message if repr(name) in err.message else f"loading PTX module {name!r}: {err.message}"
    return type(err)(None, None, f"{message}\nJIT error log:\n{log}")
