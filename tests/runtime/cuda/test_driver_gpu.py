"""The CUDA driver layer on a real GPU; every test is skipped where ``available()`` is False.

Runs with whichever binding ``driver()`` picks (TFC_CUDA_DRIVER=cuda-python|pycuda forces one).
"""
import threading

import numpy as np
import pytest

from tfc.frontend import errors
from tfc.runtime.cuda import CachingAllocator, available, driver

pytestmark = pytest.mark.skipif(not available(), reason="no CUDA device/driver")

# add_one(float* x, u64 n): x[i] += 1.0f for i < n, one thread per element.
ADD_ONE_PTX = r"""
.version 7.0
.target sm_80
.address_size 64

.visible .entry add_one(
    .param .u64 add_one_x,
    .param .u64 add_one_n
)
{
    .reg .pred  %p<2>;
    .reg .b32   %r<5>;
    .reg .f32   %f<3>;
    .reg .b64   %rd<8>;

    ld.param.u64        %rd1, [add_one_x];
    ld.param.u64        %rd2, [add_one_n];
    mov.u32             %r1, %ctaid.x;
    mov.u32             %r2, %ntid.x;
    mov.u32             %r3, %tid.x;
    mad.lo.u32          %r4, %r1, %r2, %r3;
    cvt.u64.u32         %rd3, %r4;
    setp.ge.u64         %p1, %rd3, %rd2;
    @%p1 bra            DONE;
    cvta.to.global.u64  %rd4, %rd1;
    shl.b64             %rd5, %rd3, 2;
    add.s64             %rd6, %rd4, %rd5;
    ld.global.f32       %f1, [%rd6];
    add.f32             %f2, %f1, 0f3F800000;
    st.global.f32       [%rd6], %f2;
DONE:
    ret;
}
"""

BAD_PTX = r"""
.version 7.0
.target sm_80
.address_size 64

.visible .entry broken(.param .u64 broken_x)
{
    ld.param.u64 %rd_undeclared, [broken_x];
    this_is_not_an_instruction;
    ret;
}
"""


@pytest.fixture(scope="module")
def drv():
    return driver()


@pytest.fixture(scope="module")
def add_one(drv):
    return drv.load_module(ADD_ONE_PTX, "add_one_test").function("add_one")


def _launch_add_one(drv, fn, ptr, n, stream=None):
    threads = 256
    drv.launch(fn, ((n + threads - 1) // threads,), (threads,), [ptr, n], stream=stream, what="test op add_one")


def test_device_facts(drv):
    assert drv.device_count() >= 1
    assert isinstance(drv.device_name(), str) and drv.device_name()
    major, minor = drv.compute_capability()
    assert major >= 5 and minor >= 0
    assert drv.total_memory() >= drv.free_memory() > 0


def test_alloc_memcpy_roundtrip(drv):
    x = np.random.default_rng(0).standard_normal((37, 11)).astype(np.float32)
    ptr = drv.alloc(x.nbytes)
    try:
        drv.memcpy_htod(ptr, x)
        y = np.empty_like(x)
        drv.memcpy_dtoh(y, ptr)
        np.testing.assert_array_equal(x, y)
        other = drv.alloc(x.nbytes)
        drv.memcpy_dtod(other, ptr, x.nbytes)
        z = np.zeros_like(x)
        drv.memcpy_dtoh(z, other, 16)  # only the first 16 bytes
        np.testing.assert_array_equal(z.reshape(-1)[:4], x.reshape(-1)[:4])
        assert not z.reshape(-1)[4:].any()
        drv.free(other)
    finally:
        drv.free(ptr)


def test_memset(drv):
    ptr = drv.alloc(1000)
    try:
        drv.memset_d8(ptr, 0xAB, 1000)
        drv.memset_d8(ptr, 0, 10)
        out = np.empty(1000, np.uint8)
        drv.memcpy_dtoh(out, ptr)
        assert not out[:10].any() and (out[10:] == 0xAB).all()
    finally:
        drv.free(ptr)


def test_load_and_launch_ptx(drv, add_one):
    n = 1000  # not a multiple of the block: the bounds check matters
    x = np.arange(n, dtype=np.float32)
    ptr = drv.alloc(x.nbytes + 64)
    try:
        drv.memset_d8(ptr, 0, x.nbytes + 64)
        drv.memcpy_htod(ptr, x)
        _launch_add_one(drv, add_one, ptr, n)
        _launch_add_one(drv, add_one, ptr, n)
        drv.synchronize()
        out = np.empty(n + 16, np.float32)
        drv.memcpy_dtoh(out, ptr)
        np.testing.assert_array_equal(out[:n], x + 2.0)
        assert not out[n:].any()  # nothing written past n
    finally:
        drv.free(ptr)


def test_launch_from_another_thread(drv, add_one):
    x = np.zeros(64, np.float32)
    ptr = drv.alloc(x.nbytes)
    failures = []

    def work():
        try:
            drv.memcpy_htod(ptr, x)
            _launch_add_one(drv, add_one, ptr, 64)
            drv.synchronize()
        except Exception as exc:
            failures.append(exc)

    t = threading.Thread(target=work)
    t.start()
    t.join()
    try:
        assert not failures, failures
        out = np.empty_like(x)
        drv.memcpy_dtoh(out, ptr)
        assert (out == 1.0).all()
    finally:
        drv.free(ptr)


def test_stream_and_event_timing(drv, add_one):
    n = 1 << 20
    ptr = drv.alloc(4 * n)
    try:
        drv.memset_d8(ptr, 0, 4 * n)
        stream = drv.create_stream()
        start, end = drv.create_event(), drv.create_event()
        start.record(stream)
        for _ in range(10):
            _launch_add_one(drv, add_one, ptr, n, stream=stream)
        end.record(stream)
        end.synchronize()
        ms = type(start).elapsed_ms(start, end)
        assert 0.0 < ms < 10_000
        stream.synchronize()
        out = np.empty(n, np.float32)
        drv.memcpy_dtoh(out, ptr)
        assert (out == 10.0).all()
        # default-stream events work too
        a, b = drv.create_event(), drv.create_event()
        a.record()
        b.record()
        b.synchronize()
        assert type(a).elapsed_ms(a, b) >= 0.0
    finally:
        drv.free(ptr)


def test_bad_ptx_raises_internal_error_with_the_jit_log(drv):
    with pytest.raises(errors.InternalError) as info:
        drv.load_module(BAD_PTX, "fusion_bad")
    message = info.value.message
    assert "fusion_bad" in message
    assert "JIT error log:" in message
    log = message.split("JIT error log:", 1)[1].strip()
    assert log and log != "(empty)"
    assert "error" in log.lower()


def test_missing_kernel_is_not_found(drv):
    module = drv.load_module(ADD_ONE_PTX, "add_one_again")
    with pytest.raises(errors.NotFoundError, match="no_such_kernel"):
        module.function("no_such_kernel")


def test_bad_launch_names_the_op_and_the_cuda_error(drv, add_one):
    with pytest.raises(errors.InternalError) as info:
        drv.launch(add_one, (1,), (4096,), [0, 0], what="op bad/launch")  # 4096 threads > 1024
    message = info.value.message
    assert "add_one" in message and "op bad/launch" in message
    assert "CUDA_ERROR_INVALID_VALUE" in message or "invalid" in message.lower()


def test_device_oom_is_resource_exhausted(drv):
    with pytest.raises(errors.ResourceExhaustedError, match="OOM when allocating tensor of"):
        drv.alloc(1 << 50)  # a petabyte


def test_caching_allocator_on_the_device(drv, add_one):
    alloc = CachingAllocator(drv)
    a = alloc.allocate(4000, what="test a")
    ptr = a.ptr
    drv.memcpy_htod(a.ptr, np.zeros(1000, np.float32))
    _launch_add_one(drv, add_one, a.ptr, 1000)
    out = np.empty(1000, np.float32)
    drv.memcpy_dtoh(out, a.ptr)
    assert (out == 1.0).all()
    a.release()
    b = alloc.allocate(3900, what="test b")
    assert b.ptr == ptr
    b.release()
    alloc.empty_cache()
    assert alloc.stats()["cached"] == 0 and alloc.stats()["in_use"] == 0
