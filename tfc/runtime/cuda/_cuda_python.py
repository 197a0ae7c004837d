"""The driver layer on NVIDIA's cuda-python bindings (``cuda.bindings.driver``).

Every binding call goes through ``CudaPythonDriver._call``: the binding returns a CUresult or a
``(CUresult, *outputs)`` tuple, which ``check_result`` turns into the outputs or a tfc error; an
exception from the binding itself (a bad argument type, a missing libcuda) becomes an
InternalError too, so nothing binding-specific leaks out.
"""
from __future__ import annotations

from typing import Optional, Sequence

from tfc.frontend import errors
from tfc.runtime.cuda._base import (
    CUDA_ERROR_NOT_FOUND,
    CUDA_ERROR_OUT_OF_MEMORY,
    CUDA_SUCCESS,
    Driver,
    Event,
    Function,
    Module,
    NoCudaDevice,
    Stream,
    check_result,
    dims3,
    host_bytes,
    kernel_not_found,
    module_load_error,
    oom_message,
    pack_kernel_args,
)

JIT_LOG_BYTES = 32768


def import_binding():
    """The cuda-python driver module (``cuda.bindings.driver``, or ``cuda.cuda`` before 12.6);
    NoCudaDevice when cuda-python is not installed."""
    try:
        from cuda.bindings import driver as cu
    except ImportError:
        try:
            from cuda import cuda as cu  # cuda-python < 12.6
        except ImportError as exc:
            raise NoCudaDevice.because(f"cuda-python is not installed ({exc})") from None
    return cu


def describe_result(cu, result) -> "tuple[Optional[str], Optional[str]]":
    """(cuGetErrorName, cuGetErrorString) of a CUresult, falling back to the enum's name when
    the driver cannot be asked (no libcuda, or an unknown code)."""
    name = description = None
    try:
        err, raw = cu.cuGetErrorName(result)
        if int(err) == CUDA_SUCCESS and raw:
            name = raw.decode(errors="replace")
        err, raw = cu.cuGetErrorString(result)
        if int(err) == CUDA_SUCCESS and raw:
            description = raw.decode(errors="replace")
    except Exception:  # the driver library itself may be missing
        pass
    return name or getattr(result, "name", None), description


class CudaPythonDriver(Driver):
    """Device ``ordinal`` through cuda-python, on its primary context (shared with cuBLAS/CuPy)."""

    name = "cuda-python"

    def __init__(self, ordinal: int = 0):
        super().__init__(ordinal)
        self._cu = cu = import_binding()
        try:
            ret = cu.cuInit(0)
        except Exception as exc:  # cuda-bindings 13: DynamicLibNotFoundError; 12: RuntimeError
            raise NoCudaDevice.because(
                f"cuda-python could not load the CUDA driver library libcuda.so.1 "
                f"({type(exc).__name__}: {exc})") from None
        result = ret[0] if isinstance(ret, tuple) else ret
        if int(result) != CUDA_SUCCESS:
            raise NoCudaDevice.because(f"cuInit returned {describe_result(cu, result)[0]}")
        try:
            count = self._call("cuDeviceGetCount", "counting CUDA devices")
            if ordinal >= count:
                raise NoCudaDevice.because(f"cuDeviceGetCount found {count} device(s), GPU:{ordinal} asked for")
            self._device = self._call("cuDeviceGet", "opening the device", ordinal)
            self._context = self._call("cuDevicePrimaryCtxRetain", "retaining the primary context", self._device)
        except NoCudaDevice:
            raise
        except errors.OpError as exc:
            raise NoCudaDevice.because(exc.message) from None

    # -- plumbing ----------------------------------------------------------------------------

    def _describe(self, result):
        return describe_result(self._cu, result)

    def _raw(self, fn_name: str, what: str, *args):
        """``cu.<fn_name>(*args)`` as the binding returns it; an exception the binding raises
        (a bad argument, a missing library) becomes an InternalError."""
        try:
            return getattr(self._cu, fn_name)(*args)
        except Exception as exc:
            raise errors.InternalError(
                None, None, f"{what}: {fn_name} raised {type(exc).__name__}: {exc}") from exc

    def _call(self, fn_name: str, what: str, *args):
        """Call ``cu.<fn_name>(*args)``; its outputs, or the tfc error for its failure."""
        return check_result(self._raw(fn_name, what, *args), what, fn_name, self._describe)

    def _make_current(self) -> None:
        self._call("cuCtxSetCurrent", "making the CUDA context current", self._context)

    def _cu_stream(self, stream: Optional[Stream]):
        return self._cu.CUstream(0) if stream is None else stream.native

    # -- device facts ------------------------------------------------------------------------

    def device_name(self) -> str:
        raw = self._call("cuDeviceGetName", "reading the device name", 256, self._device)
        return raw.split(b"\0", 1)[0].decode(errors="replace")

    def compute_capability(self) -> "tuple[int, int]":
        attr = self._cu.CUdevice_attribute
        major = self._call("cuDeviceGetAttribute", "reading the compute capability",
                           attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, self._device)
        minor = self._call("cuDeviceGetAttribute", "reading the compute capability",
                           attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, self._device)
        return int(major), int(minor)

    def total_memory(self) -> int:
        return int(self._call("cuDeviceTotalMem", "reading the device memory size", self._device))

    def free_memory(self) -> int:
        self._ensure_context()
        free, _total = self._call("cuMemGetInfo", "reading the free device memory")
        return int(free)

    def device_count(self) -> int:
        return int(self._call("cuDeviceGetCount", "counting CUDA devices"))

    # -- code --------------------------------------------------------------------------------

    def load_module(self, ptx: str, name: str) -> Module:
        self._ensure_context()
        image = ptx.encode() if isinstance(ptx, str) else bytes(ptx)
        if not image.endswith(b"\0"):
            image += b"\0"  # cuModuleLoadDataEx reads PTX as a NUL-terminated string
        log = bytearray(JIT_LOG_BYTES)
        jit = self._cu.CUjit_option
        options = [jit.CU_JIT_ERROR_LOG_BUFFER, jit.CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES]
        try:
            handle = self._call("cuModuleLoadDataEx", f"loading PTX module {name!r}",
                                image, len(options), options, [log, len(log)])
        except errors.OpError as exc:
            text = bytes(log).split(b"\0", 1)[0].decode(errors="replace")
            raise module_load_error(exc, name, text) from None
        return Module(self, name, handle)

    def _module_function(self, module: Module, kernel_name: str):
        self._ensure_context()
        what = f"looking up kernel {kernel_name!r} in module {module.name!r}"
        ret = self._raw("cuModuleGetFunction", what, module.handle, kernel_name.encode())
        if int(ret[0]) == CUDA_ERROR_NOT_FOUND:
            raise kernel_not_found(module, kernel_name, "cuModuleGetFunction returned CUDA_ERROR_NOT_FOUND")
        return check_result(ret, what, "cuModuleGetFunction", self._describe)

    def launch(self, function: Function, grid, block, args: Sequence[int], shared_bytes: int = 0,
               stream: Optional[Stream] = None, what: str = "") -> None:
        self._ensure_context()
        label = f"launch of kernel {function.name}" + (f" for {what}" if what else "")
        packed = pack_kernel_args(args)
        gx, gy, gz = dims3(grid, f"{label}: grid")
        bx, by, bz = dims3(block, f"{label}: block")
        self._call("cuLaunchKernel", label, function.handle, gx, gy, gz, bx, by, bz,
                   int(shared_bytes), self._cu_stream(stream), packed.address or None, 0)

    # -- memory ------------------------------------------------------------------------------

    def alloc(self, nbytes: int) -> int:
        """``nbytes`` of device memory (0 bytes: the null pointer, no call)."""
        if nbytes == 0:
            return 0
        self._ensure_context()
        what = f"allocating {nbytes} bytes on {self.device}"
        ret = self._raw("cuMemAlloc", what, int(nbytes))
        if int(ret[0]) == CUDA_ERROR_OUT_OF_MEMORY:
            raise errors.ResourceExhaustedError(
                None, None, oom_message(nbytes, self.device, "cuMemAlloc returned CUDA_ERROR_OUT_OF_MEMORY"))
        return int(check_result(ret, what, "cuMemAlloc", self._describe))

    def free(self, ptr: int) -> None:
        if ptr:
            self._ensure_context()
            self._call("cuMemFree", f"freeing device memory at {ptr:#x}", ptr)

    def memcpy_htod(self, dst: int, src, nbytes: Optional[int] = None) -> None:
        view = host_bytes(src, nbytes, writable=False, what="memcpy_htod")
        if view.size:
            self._ensure_context()
            self._call("cuMemcpyHtoD", f"copying {view.size} bytes to the device", dst, view.ctypes.data, view.size)

    def memcpy_dtoh(self, dst, src: int, nbytes: Optional[int] = None) -> None:
        view = host_bytes(dst, nbytes, writable=True, what="memcpy_dtoh")
        if view.size:
            self._ensure_context()
            self._call("cuMemcpyDtoH", f"copying {view.size} bytes from the device", view.ctypes.data, src, view.size)

    def memcpy_dtod(self, dst: int, src: int, nbytes: int) -> None:
        if nbytes:
            self._ensure_context()
            self._call("cuMemcpyDtoD", f"copying {nbytes} bytes on the device", dst, src, int(nbytes))

    def memset_d8(self, ptr: int, value: int, nbytes: int) -> None:
        if nbytes:
            self._ensure_context()
            self._call("cuMemsetD8", f"setting {nbytes} bytes on the device", ptr, int(value) & 0xFF, int(nbytes))

    def synchronize(self) -> None:
        self._ensure_context()
        self._call("cuCtxSynchronize", f"synchronizing {self.device}")

    # -- streams and events ------------------------------------------------------------------

    def create_stream(self) -> Stream:
        self._ensure_context()
        return Stream(self, self._call("cuStreamCreate", "creating a stream", 0))

    def _stream_handle(self, native) -> int:
        return int(native)

    def _stream_synchronize(self, stream: Stream) -> None:
        self._ensure_context()
        self._call("cuStreamSynchronize", "synchronizing a stream", stream.native)

    def create_event(self) -> Event:
        self._ensure_context()
        return Event(self, self._call("cuEventCreate", "creating an event", 0))

    def _event_record(self, event: Event, stream: Optional[Stream]) -> None:
        self._ensure_context()
        self._call("cuEventRecord", "recording an event", event.native, self._cu_stream(stream))

    def _event_synchronize(self, event: Event) -> None:
        self._ensure_context()
        self._call("cuEventSynchronize", "waiting for an event", event.native)

    def _event_elapsed_ms(self, start: Event, end: Event) -> float:
        self._ensure_context()
        return float(self._call("cuEventElapsedTime", "timing two events", start.native, end.native))
