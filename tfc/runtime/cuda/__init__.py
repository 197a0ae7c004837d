"""tfc's GPU driver layer: the CUDA driver API (through cuda-python or pycuda) and a caching
device-memory allocator.

    from tfc.runtime.cuda import driver, available, CachingAllocator
    if available():
        drv = driver()
        fn = drv.load_module(ptx, "fusion_3").function("fusion_3")
        drv.launch(fn, grid, block, [buf.ptr, n], what="fusion_3 for op add")

``driver(ordinal)`` is GPU ``ordinal``'s driver (``driver()``: GPU 0); each GPU has its own
caching allocator (``executable.process_allocator(ordinal=...)``).

Note: ``tfc.runtime.cuda.driver`` is the *function* here (the package attribute shadows the
submodule of the same name); import the submodule's other names with
``from tfc.runtime.cuda.driver import CudaPythonDriver, ...``.
"""
from tfc.runtime.cuda.allocator import CachingAllocator, DeviceBuffer, from_gpu_options
from tfc.runtime.cuda.driver import NoCudaDevice, available, driver

__all__ = ["driver", "available", "NoCudaDevice", "CachingAllocator", "DeviceBuffer", "from_gpu_options"]
