"""The driver layer on pycuda (``pycuda.driver``), the optional second binding.

pycuda raises its own exceptions (``pycuda.driver.Error`` and its MemoryError, LogicError,
LaunchError, RuntimeError) whose text is "<call> failed: <cuGetErrorString>" but that carry no
CUresult; ``PyCudaDriver._errors`` turns them into tfc errors (ResourceExhaustedError for
pycuda's MemoryError, InternalError otherwise) keeping pycuda's text.
"""
from __future__ import annotations

import contextlib
import threading
from typing import Optional, Sequence

from tfc.frontend import errors
from tfc.runtime.cuda._base import (
    Driver,
    Event,
    Function,
    Module,
    NoCudaDevice,
    Stream,
    dims3,
    host_bytes,
    kernel_not_found,
    module_load_error,
    oom_message,
    pack_kernel_args,
)


def import_binding():
    """``pycuda.driver``; NoCudaDevice when pycuda is not installed or cannot load libcuda."""
    try:
        import pycuda.driver as cuda
    except ModuleNotFoundError as exc:
        if (exc.name or "").split(".")[0] == "pycuda":
            raise NoCudaDevice.because("pycuda is not installed") from None
        raise NoCudaDevice.because(f"pycuda could not be imported ({exc})") from None
    except ImportError as exc:  # e.g. its extension cannot find libcuda.so.1
        raise NoCudaDevice.because(f"pycuda could not be imported ({exc})") from None
    return cuda


class PyCudaDriver(Driver):
    """Device ``ordinal`` through pycuda, on its primary context (as ``pycuda.autoprimaryctx``)."""

    name = "pycuda"

    def __init__(self, ordinal: int = 0):
        super().__init__(ordinal)
        self._cuda = cuda = import_binding()
        try:
            cuda.init()
            count = cuda.Device.count()
            if ordinal >= count:
                raise NoCudaDevice.because(f"pycuda found {count} device(s), GPU:{ordinal} asked for")
            self._device = cuda.Device(ordinal)
            self._context = self._device.retain_primary_context()
        except NoCudaDevice:
            raise
        except Exception as exc:
            raise NoCudaDevice.because(f"pycuda could not open the device ({type(exc).__name__}: {exc})") from None
        self._allocations: dict = {}  # ptr -> pycuda DeviceAllocation (freed by free())
        self._lock = threading.Lock()

    # -- plumbing ----------------------------------------------------------------------------

    @contextlib.contextmanager
    def _errors(self, what: str):
        """Turn pycuda's exceptions raised inside the block into tfc errors."""
        try:
            yield
        except errors.OpError:
            raise
        except self._cuda.MemoryError as exc:
            raise errors.ResourceExhaustedError(None, None, f"{what}: {exc} (CUDA_ERROR_OUT_OF_MEMORY)") from exc
        except Exception as exc:
            raise errors.InternalError(None, None, f"{what}: {type(exc).__name__}: {exc}") from exc

    def _make_current(self) -> None:
        # pycuda keeps a per-thread context stack; push the primary context onto this thread's.
        with self._errors("making the CUDA context current"):
            self._context.push()

    def _leave_current(self) -> None:
        with self._errors("popping the CUDA context"):
            self._context.pop()

    # -- device facts ------------------------------------------------------------------------

    def device_name(self) -> str:
        with self._errors("reading the device name"):
            return self._device.name()

    def compute_capability(self) -> "tuple[int, int]":
        with self._errors("reading the compute capability"):
            major, minor = self._device.compute_capability()
        return int(major), int(minor)

    def total_memory(self) -> int:
        with self._errors("reading the device memory size"):
            return int(self._device.total_memory())

    def free_memory(self) -> int:
        self._ensure_context()
        with self._errors("reading the free device memory"):
            return int(self._cuda.mem_get_info()[0])

    def device_count(self) -> int:
        with self._errors("counting CUDA devices"):
            return int(self._cuda.Device.count())

    # -- code --------------------------------------------------------------------------------

    def load_module(self, ptx: str, name: str) -> Module:
        self._ensure_context()
        image = ptx.encode() if isinstance(ptx, str) else bytes(ptx)
        if not image.endswith(b"\0"):
            image += b"\0"
        log = {"error": ""}

        def keep_log(_ok, _info, error):
            log["error"] = error.split("\0", 1)[0]

        try:
            with self._errors(f"loading PTX module {name!r}"):
                handle = self._cuda.module_from_buffer(image, options=[], message_handler=keep_log)
        except errors.OpError as exc:
            raise module_load_error(exc, name, log["error"]) from None
        return Module(self, name, handle)

    def _module_function(self, module: Module, kernel_name: str):
        self._ensure_context()
        try:
            return module.handle.get_function(kernel_name)
        except self._cuda.LogicError as exc:  # "cuModuleGetFunction failed: named symbol not found"
            raise kernel_not_found(module, kernel_name, str(exc)) from None
        except Exception as exc:
            raise errors.InternalError(
                None, None, f"looking up kernel {kernel_name!r}: {type(exc).__name__}: {exc}") from exc

    def launch(self, function: Function, grid, block, args: Sequence[int], shared_bytes: int = 0,
               stream: Optional[Stream] = None, what: str = "") -> None:
        self._ensure_context()
        label = f"launch of kernel {function.name}" + (f" for {what}" if what else "")
        values = pack_kernel_args(args).ints  # validated, as unsigned 64-bit
        grid3, block3 = dims3(grid, f"{label}: grid"), dims3(block, f"{label}: block")
        fn = function.handle
        with self._errors(label):
            if getattr(function, "_pycuda_arity", None) != len(values):
                fn.prepare("Q" * len(values))  # every argument is one 64-bit slot
                function._pycuda_arity = len(values)
            if stream is None:
                fn.prepared_call(grid3, block3, *values, shared_size=int(shared_bytes))
            else:
                fn.prepared_async_call(grid3, block3, stream.native, *values, shared_size=int(shared_bytes))

    # -- memory ------------------------------------------------------------------------------

    def alloc(self, nbytes: int) -> int:
        if nbytes == 0:
            return 0
        self._ensure_context()
        try:
            allocation = self._cuda.mem_alloc(int(nbytes))
        except self._cuda.MemoryError as exc:
            raise errors.ResourceExhaustedError(
                None, None, oom_message(nbytes, self.device, f"{exc} (CUDA_ERROR_OUT_OF_MEMORY)")) from None
        except Exception as exc:
            raise errors.InternalError(
                None, None, f"allocating {nbytes} bytes on {self.device}: {type(exc).__name__}: {exc}") from exc
        ptr = int(allocation)
        with self._lock:
            self._allocations[ptr] = allocation
        return ptr

    def free(self, ptr: int) -> None:
        if not ptr:
            return
        with self._lock:
            allocation = self._allocations.pop(ptr, None)
        if allocation is None:
            raise errors.InvalidArgumentError(None, None, f"free of {ptr:#x}, which this driver did not allocate")
        self._ensure_context()
        with self._errors(f"freeing device memory at {ptr:#x}"):
            allocation.free()

    def memcpy_htod(self, dst: int, src, nbytes: Optional[int] = None) -> None:
        view = host_bytes(src, nbytes, writable=False, what="memcpy_htod")
        if view.size:
            self._ensure_context()
            with self._errors(f"copying {view.size} bytes to the device"):
                self._cuda.memcpy_htod(dst, view)

    def memcpy_dtoh(self, dst, src: int, nbytes: Optional[int] = None) -> None:
        view = host_bytes(dst, nbytes, writable=True, what="memcpy_dtoh")
        if view.size:
            self._ensure_context()
            with self._errors(f"copying {view.size} bytes from the device"):
                self._cuda.memcpy_dtoh(view, src)

    def memcpy_dtod(self, dst: int, src: int, nbytes: int) -> None:
        if nbytes:
            self._ensure_context()
            with self._errors(f"copying {nbytes} bytes on the device"):
                self._cuda.memcpy_dtod(dst, src, int(nbytes))

    def memset_d8(self, ptr: int, value: int, nbytes: int) -> None:
        if nbytes:
            self._ensure_context()
            with self._errors(f"setting {nbytes} bytes on the device"):
                self._cuda.memset_d8(ptr, int(value) & 0xFF, int(nbytes))

    def synchronize(self) -> None:
        self._ensure_context()
        with self._errors(f"synchronizing {self.device}"):
            self._cuda.Context.synchronize()

    # -- streams and events ------------------------------------------------------------------

    def create_stream(self) -> Stream:
        self._ensure_context()
        with self._errors("creating a stream"):
            return Stream(self, self._cuda.Stream())

    def _stream_handle(self, native) -> int:
        return int(native.handle)

    def _stream_synchronize(self, stream: Stream) -> None:
        self._ensure_context()
        with self._errors("synchronizing a stream"):
            stream.native.synchronize()

    def create_event(self) -> Event:
        self._ensure_context()
        with self._errors("creating an event"):
            return Event(self, self._cuda.Event())

    def _event_record(self, event: Event, stream: Optional[Stream]) -> None:
        self._ensure_context()
        with self._errors("recording an event"):
            event.native.record(None if stream is None else stream.native)

    def _event_synchronize(self, event: Event) -> None:
        self._ensure_context()
        with self._errors("waiting for an event"):
            event.native.synchronize()

    def _event_elapsed_ms(self, start: Event, end: Event) -> float:
        self._ensure_context()
        with self._errors("timing two events"):
            return float(start.native.time_till(end.native))
