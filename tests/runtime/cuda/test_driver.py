"""The CUDA driver layer without a GPU: driver selection and its failure messages, the mapping
of CUDA results to tfc errors, kernel-argument packing and host-buffer checks.

(No __init__.py in this folder on purpose: a package named ``cuda`` would shadow cuda-python.)
"""
import ctypes
import enum
import importlib.util
import pickle
import threading
import time

import numpy as np
import pytest

import tfc.runtime.cuda as cuda_pkg
from stub_driver import StubDriver
from tfc.frontend import errors
from tfc.runtime.cuda import NoCudaDevice, available, driver
from tfc.runtime.cuda.driver import (
    BACKENDS,
    CudaPythonDriver,
    Driver,
    PyCudaDriver,
    check_result,
    cuda_error,
    dims3,
    host_bytes,
    pack_kernel_args,
    reset_driver_cache,
)

PREFIX = "no CUDA device/driver was found"


@pytest.fixture(autouse=True)
def fresh_cache(monkeypatch):
    """Each test sees its own driver() outcome, and TFC_CUDA_DRIVER unset unless it sets it."""
    monkeypatch.delenv("TFC_CUDA_DRIVER", raising=False)
    reset_driver_cache()
    yield
    reset_driver_cache()


def _real_gpu() -> bool:
    return available()


# --- the package's public face ---------------------------------------------------------------


def test_package_exports():
    assert cuda_pkg.driver is driver and callable(driver)  # the function shadows the submodule
    for name in ("driver", "available", "NoCudaDevice", "CachingAllocator", "DeviceBuffer"):
        assert hasattr(cuda_pkg, name)
    assert issubclass(CudaPythonDriver, Driver) and issubclass(PyCudaDriver, Driver)
    assert CudaPythonDriver.name == "cuda-python" and PyCudaDriver.name == "pycuda"


def test_no_cuda_device_is_a_not_found_error():
    exc = NoCudaDevice(None, None, "no CUDA device/driver was found: because")
    assert isinstance(exc, errors.NotFoundError)
    assert exc.error_code == errors.NOT_FOUND
    assert exc.reason == "because"
    assert NoCudaDevice.because("x").message == f"{PREFIX}: x"
    assert NoCudaDevice(None, None, "bare reason").message == f"{PREFIX}: bare reason"
    again = pickle.loads(pickle.dumps(exc))
    assert type(again) is NoCudaDevice and again.message == exc.message


# --- driver() and available() on this machine ------------------------------------------------


def test_driver_raises_no_cuda_device_here():
    if _real_gpu():
        pytest.skip("a GPU is present")
    with pytest.raises(NoCudaDevice) as info:
        driver()
    assert str(info.value).startswith(PREFIX + ": ")
    assert len(info.value.reason) > 10  # says why


def test_available_is_false_without_a_gpu():
    if _real_gpu():
        pytest.skip("a GPU is present")
    assert available() is False
    assert available() is False  # cached, and still no exception


def test_forced_pycuda_names_pycuda(monkeypatch):
    if importlib.util.find_spec("pycuda") is not None:
        pytest.skip("pycuda is installed here")
    monkeypatch.setenv("TFC_CUDA_DRIVER", "pycuda")
    with pytest.raises(NoCudaDevice) as info:
        driver()
    message = info.value.message
    assert message.startswith(PREFIX)
    assert "pycuda is not installed" in message
    assert "TFC_CUDA_DRIVER=pycuda" in message


def test_forced_cuda_python_says_why(monkeypatch):
    if _real_gpu():
        pytest.skip("a GPU is present")
    monkeypatch.setenv("TFC_CUDA_DRIVER", "cuda-python")
    with pytest.raises(NoCudaDevice) as info:
        driver()
    message = info.value.message
    assert message.startswith(PREFIX)
    assert "cuda-python" in message
    if importlib.util.find_spec("cuda.bindings") is not None:
        assert "libcuda" in message or "cuInit" in message or "device" in message


def test_unknown_driver_choice(monkeypatch):
    monkeypatch.setenv("TFC_CUDA_DRIVER", "opencl")
    with pytest.raises(NoCudaDevice, match="TFC_CUDA_DRIVER='opencl' is not one of"):
        driver()
    assert available() is False


class _Failing:
    opened = 0

    def __init__(self):
        type(self).opened += 1
        raise NoCudaDevice.because("fake binding has no device")


class _Working(StubDriver):
    opened = 0

    def __init__(self):
        super().__init__(0)
        time.sleep(0.05)  # widen the race window
        type(self).opened += 1

    def device_count(self):
        return 1


def test_failure_is_cached(monkeypatch):
    _Failing.opened = 0
    monkeypatch.setitem(BACKENDS, "cuda-python", _Failing)
    monkeypatch.setitem(BACKENDS, "pycuda", _Failing)
    for _ in range(5):
        with pytest.raises(NoCudaDevice, match="fake binding has no device"):
            driver()
    assert _Failing.opened == 2  # once per binding, not once per call


def test_auto_falls_back_to_pycuda_and_caches_one_driver_across_threads(monkeypatch):
    _Failing.opened = 0
    _Working.opened = 0
    monkeypatch.setitem(BACKENDS, "cuda-python", _Failing)
    monkeypatch.setitem(BACKENDS, "pycuda", _Working)
    seen = []
    threads = [threading.Thread(target=lambda: seen.append(driver())) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(seen) == 8 and all(d is seen[0] for d in seen)
    assert _Working.opened == 1 and _Failing.opened == 1
    assert available() is True


def test_forced_choice_skips_the_other_binding(monkeypatch):
    _Working.opened = 0
    monkeypatch.setitem(BACKENDS, "cuda-python", _Working)
    monkeypatch.setitem(BACKENDS, "pycuda", _Failing)
    monkeypatch.setenv("TFC_CUDA_DRIVER", "pycuda")
    with pytest.raises(NoCudaDevice, match=r"fake binding has no device \(TFC_CUDA_DRIVER=pycuda\)"):
        driver()
    assert _Working.opened == 0


def test_unexpected_binding_exception_becomes_no_cuda_device(monkeypatch):
    def explode():
        raise OSError("libcuda.so.1: cannot open shared object file")

    monkeypatch.setitem(BACKENDS, "cuda-python", explode)
    monkeypatch.setenv("TFC_CUDA_DRIVER", "cuda-python")
    with pytest.raises(NoCudaDevice, match="libcuda.so.1: cannot open shared object file"):
        driver()


# --- CUresult -> tfc error ----------------------------------------------------------------------


class FakeCUresult(enum.IntEnum):
    CUDA_SUCCESS = 0
    CUDA_ERROR_INVALID_VALUE = 1
    CUDA_ERROR_OUT_OF_MEMORY = 2
    CUDA_ERROR_LAUNCH_FAILED = 719


def test_check_result_unwraps_outputs():
    assert check_result(FakeCUresult.CUDA_SUCCESS, "x") is None
    assert check_result((FakeCUresult.CUDA_SUCCESS,), "x") is None
    assert check_result((FakeCUresult.CUDA_SUCCESS, 42), "x") == 42
    assert check_result((FakeCUresult.CUDA_SUCCESS, 1, 2), "x") == (1, 2)


def test_check_result_maps_errors():
    with pytest.raises(errors.ResourceExhaustedError, match="CUDA_ERROR_OUT_OF_MEMORY"):
        check_result((FakeCUresult.CUDA_ERROR_OUT_OF_MEMORY, None), "allocating", "cuMemAlloc")
    with pytest.raises(errors.InternalError) as info:
        check_result(FakeCUresult.CUDA_ERROR_LAUNCH_FAILED, "launch of kernel k for op a/b", "cuLaunchKernel")
    assert info.value.message == "launch of kernel k for op a/b: cuLaunchKernel returned CUDA_ERROR_LAUNCH_FAILED"
    assert not isinstance(info.value, errors.ResourceExhaustedError)


def test_check_result_prefers_the_drivers_own_name_and_text():
    def describe(result):
        return "CUDA_ERROR_INVALID_VALUE", "invalid argument"

    with pytest.raises(errors.InternalError, match=r"cuMemcpyHtoD returned CUDA_ERROR_INVALID_VALUE \(invalid argument\)"):
        check_result((1, None), "copying", "cuMemcpyHtoD", describe)


def test_cuda_error_for_plain_ints_and_unknown_codes():
    assert isinstance(cuda_error(2, "x"), errors.ResourceExhaustedError)
    err = cuda_error(999, "doing it", "cuFoo")
    assert isinstance(err, errors.InternalError)
    assert err.message == "doing it: cuFoo returned CUresult(999)"


def test_real_cuda_python_results_map_without_a_driver():
    spec = importlib.util.find_spec("cuda.bindings")
    if spec is None:
        pytest.skip("cuda-python is not installed")
    from cuda.bindings import driver as cu

    from tfc.runtime.cuda._cuda_python import describe_result

    name, _ = describe_result(cu, cu.CUresult.CUDA_ERROR_OUT_OF_MEMORY)
    assert name == "CUDA_ERROR_OUT_OF_MEMORY"  # from cuGetErrorName, or the enum without libcuda
    with pytest.raises(errors.ResourceExhaustedError, match="CUDA_ERROR_OUT_OF_MEMORY"):
        check_result((cu.CUresult.CUDA_ERROR_OUT_OF_MEMORY, None), "alloc", "cuMemAlloc",
                     lambda r: describe_result(cu, r))
    with pytest.raises(errors.InternalError, match="CUDA_ERROR_INVALID_PTX"):
        check_result((cu.CUresult.CUDA_ERROR_INVALID_PTX, None), "load", "cuModuleLoadDataEx")


# --- kernel arguments, dims, host buffers -----------------------------------------------------


def _slot(packed, i):
    pointer = ctypes.cast(packed.pointers, ctypes.POINTER(ctypes.c_void_p))[i]
    return ctypes.c_uint64.from_address(pointer).value


def test_pack_kernel_args_gives_addresses_of_64_bit_slots():
    packed = pack_kernel_args([0x7F00_0000_1000, 5, -1, np.int64(-2), np.uint64(7)])
    assert packed.address == ctypes.addressof(packed.pointers)
    assert [_slot(packed, i) for i in range(5)] == [0x7F00_0000_1000, 5, 2**64 - 1, 2**64 - 2, 7]
    assert ctypes.c_int64.from_address(
        ctypes.cast(packed.pointers, ctypes.POINTER(ctypes.c_void_p))[2]).value == -1


def test_pack_kernel_args_edge_cases():
    assert pack_kernel_args([]).address == 0
    with pytest.raises(errors.InvalidArgumentError, match="does not fit 64 bits"):
        pack_kernel_args([2**64])
    with pytest.raises(errors.InvalidArgumentError, match="not a 64-bit integer"):
        pack_kernel_args([1.5j])


def test_dims3():
    assert dims3(128, "block") == (128, 1, 1)
    assert dims3((4, 2), "grid") == (4, 2, 1)
    with pytest.raises(errors.InvalidArgumentError):
        dims3((0,), "grid")
    with pytest.raises(errors.InvalidArgumentError):
        dims3((1, 1, 1, 1), "grid")


def test_host_bytes_checks():
    a = np.arange(10, dtype=np.float32)
    assert host_bytes(a, None, False, "x").size == 40
    assert host_bytes(a, 8, True, "x").ctypes.data == a.ctypes.data
    with pytest.raises(errors.InvalidArgumentError, match="holds 40"):
        host_bytes(a, 41, False, "x")
    strided = np.arange(20, dtype=np.float32)[::2]
    assert host_bytes(strided, None, False, "x").size == 40  # a source is copied
    with pytest.raises(errors.InvalidArgumentError, match="C-contiguous"):
        host_bytes(strided, None, True, "x")
    frozen = np.zeros(4)
    frozen.flags.writeable = False
    with pytest.raises(errors.InvalidArgumentError, match="read-only"):
        host_bytes(frozen, None, True, "x")


def test_module_load_error_names_the_module_and_carries_the_log():
    from tfc.runtime.cuda._base import module_load_error

    err = cuda_error(218, "loading PTX module 'fusion_7'", "cuModuleLoadDataEx")
    out = module_load_error(err, "fusion_7", "ptxas application ptx input, line 3; error   : bad\n")
    assert isinstance(out, errors.InternalError)
    assert out.message.count("fusion_7") == 1
    assert out.message.endswith("JIT error log:\nptxas application ptx input, line 3; error   : bad")
    bare = module_load_error(errors.InternalError(None, None, "LogicError: boom"), "fusion_8", "")
    assert bare.message == "loading PTX module 'fusion_8': LogicError: boom\nJIT error log:\n(empty)"
