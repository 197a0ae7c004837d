"""The caching allocator against a fake in-memory driver: size classes, reuse, the OOM retry
after emptying the cache, memory_limit, stats, and from_gpu_options."""
import gc
import threading

import pytest

from tfc.frontend import errors
from tfc.protos import ConfigProto, GPUOptions
from tfc.runtime.cuda import CachingAllocator, DeviceBuffer
from tfc.runtime.cuda.allocator import ALIGNMENT, from_gpu_options, size_class


class FakeDriver:
    """Hands out fake device pointers from a pool of ``capacity`` bytes; logs alloc/free."""

    device = "/device:GPU:0"

    def __init__(self, capacity=1 << 20, total=1 << 30):
        self.capacity = capacity
        self.total = total
        self.live = {}  # ptr -> nbytes
        self.allocs = []
        self.frees = []
        self._next = 0x7000_0000

    def alloc(self, nbytes):
        if sum(self.live.values()) + nbytes > self.capacity:
            raise errors.ResourceExhaustedError(
                None, None, f"OOM when allocating tensor of {nbytes} bytes on /device:GPU:0: fake")
        ptr = self._next
        self._next += nbytes + 4096
        self.live[ptr] = nbytes
        self.allocs.append(nbytes)
        return ptr

    def free(self, ptr):
        del self.live[ptr]
        self.frees.append(ptr)

    def total_memory(self):
        return self.total


def test_size_classes():
    assert size_class(0) == 256
    assert size_class(1) == 256
    assert size_class(256) == 256
    assert size_class(257) == 512
    assert size_class(1000) == 1024
    assert size_class(1025) == 1280
    assert size_class(1300) == 1536
    assert size_class(5000) == 5120
    assert size_class(1 << 20) == 1 << 20
    assert size_class((1 << 20) + 1) == (1 << 20) + (1 << 18)
    for n in list(range(0, 5000, 37)) + [10**6, 10**8 + 3]:
        c = size_class(n)
        assert c >= n and c % ALIGNMENT == 0
        assert c <= max(ALIGNMENT, 1.25 * n + ALIGNMENT)  # at most ~25% waste
        assert size_class(c) == c  # a class is its own class


def test_allocate_reuses_a_released_block_of_the_same_class():
    drv = FakeDriver()
    alloc = CachingAllocator(drv)
    a = alloc.allocate(1000, what="a")
    assert isinstance(a, DeviceBuffer)
    assert (a.nbytes, a.size, int(a)) == (1000, 1024, a.ptr)
    ptr = a.ptr
    a.release()
    a.release()  # idempotent
    assert a.released
    b = alloc.allocate(900, what="b")  # same class: 1024
    assert b.ptr == ptr
    assert drv.allocs == [1024]
    c = alloc.allocate(2000)  # another class: a new block
    assert c.ptr != ptr and drv.allocs == [1024, 2048]


def test_garbage_collected_buffers_come_back():
    drv = FakeDriver()
    alloc = CachingAllocator(drv)
    ptr = alloc.allocate(4096).ptr  # the buffer itself is dropped at once
    gc.collect()
    assert alloc.stats()["cached"] == 4096
    assert alloc.allocate(4096).ptr == ptr
    assert len(drv.allocs) == 1


def test_stats_and_empty_cache():
    drv = FakeDriver()
    alloc = CachingAllocator(drv)
    a = alloc.allocate(300)  # 512
    b = alloc.allocate(1024)  # 1024
    s = alloc.stats()
    assert (s["in_use"], s["cached"], s["peak"], s["allocations"]) == (1536, 0, 1536, 2)
    a.release()
    s = alloc.stats()
    assert (s["in_use"], s["cached"], s["peak"]) == (1024, 512, 1536)
    alloc.empty_cache()
    assert alloc.stats()["cached"] == 0
    assert a.ptr not in drv.live and b.ptr in drv.live
    b.release()
    alloc.allocate(10)
    s = alloc.stats()
    assert s["allocations"] == 3 and s["driver_allocations"] == 3 and s["peak"] == 1536
    assert s["limit"] is None and s["allow_growth"] is True


def test_device_oom_empties_the_cache_and_retries_once():
    drv = FakeDriver(capacity=4096)
    alloc = CachingAllocator(drv)
    for buf in [alloc.allocate(1024) for _ in range(3)]:  # 3 KiB cached in the 1024 class
        buf.release()
    assert alloc.stats()["cached"] == 3072
    big = alloc.allocate(2048)  # device has 1 KiB free: OOM, free the cache, retry
    assert big.size == 2048
    assert len(drv.frees) == 3
    assert alloc.stats()["cached"] == 0


def test_device_oom_after_the_retry_raises_tf_style():
    drv = FakeDriver(capacity=4096)
    alloc = CachingAllocator(drv)
    keep = alloc.allocate(3000)  # 3072 in use
    alloc.allocate(512).release()  # 512 cached
    with pytest.raises(errors.ResourceExhaustedError) as info:
        alloc.allocate(2048, what="op dense/MatMul")
    message = info.value.message
    assert message.startswith("OOM when allocating tensor of 2048 bytes for op dense/MatMul")
    assert "out of memory even after emptying the cache" in message
    assert "no limit set" in message
    assert keep.ptr in drv.live
    assert alloc.stats()["cached"] == 0  # the retry gave the cache back


def test_device_oom_with_nothing_cached_does_not_retry():
    drv = FakeDriver(capacity=1024)
    alloc = CachingAllocator(drv)
    with pytest.raises(errors.ResourceExhaustedError, match="OOM when allocating tensor of 5000 bytes"):
        alloc.allocate(5000)
    assert drv.allocs == []


def test_memory_limit_is_a_hard_cap():
    drv = FakeDriver(capacity=1 << 30)
    alloc = CachingAllocator(drv, memory_limit=4096)
    a = alloc.allocate(2048, what="a")
    b = alloc.allocate(1024, what="b")
    with pytest.raises(errors.ResourceExhaustedError) as info:
        alloc.allocate(2048, what="op c")
    message = info.value.message
    assert "OOM when allocating tensor of 2048 bytes for op c" in message
    assert "(limit 4096 bytes" in message
    b.release()  # 1024 cached: in use + cached + 2048 would be 5120 > 4096
    c = alloc.allocate(1500)  # 1536 class: the cache is emptied to make room
    assert alloc.stats()["in_use"] == 2048 + 1536 and alloc.stats()["cached"] == 0
    del a, c


def test_allow_growth_false_still_caps_and_grows_on_demand():
    drv = FakeDriver()
    alloc = CachingAllocator(drv, memory_limit=2048, allow_growth=False)
    assert drv.allocs == []  # nothing reserved up front
    held = alloc.allocate(2048)
    with pytest.raises(errors.ResourceExhaustedError, match="limit 2048 bytes"):
        alloc.allocate(1)
    assert alloc.stats()["allow_growth"] is False
    held.release()


def test_invalid_arguments():
    with pytest.raises(errors.InvalidArgumentError):
        CachingAllocator(FakeDriver(), memory_limit=-1)
    with pytest.raises(errors.InvalidArgumentError):
        CachingAllocator(FakeDriver()).allocate(-5)


def test_from_gpu_options():
    drv = FakeDriver(total=8 << 30)
    options = GPUOptions(per_process_gpu_memory_fraction=0.25, allow_growth=True)
    alloc = from_gpu_options(drv, options)
    assert alloc.memory_limit == 2 << 30 and alloc.allow_growth is True
    config = ConfigProto()
    config.gpu_options.allow_growth = False
    alloc = from_gpu_options(drv, config.gpu_options)  # fraction 0: no limit
    assert alloc.memory_limit is None and alloc.allow_growth is False
    assert from_gpu_options(drv).memory_limit is None


def test_concurrent_allocate_and_release():
    drv = FakeDriver(capacity=1 << 30)
    alloc = CachingAllocator(drv)
    failures = []

    def work():
        try:
            for i in range(300):
                bufs = [alloc.allocate(256 * (1 + (i + j) % 7)) for j in range(4)]
                for b in bufs:
                    b.release()
        except Exception as exc:  # pragma: no cover - reported below
            failures.append(exc)

    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures
    s = alloc.stats()
    assert s["in_use"] == 0 and s["allocations"] == 8 * 300 * 4
    assert s["cached"] == sum(drv.live.values())  # every live driver block is in the cache
    alloc.empty_cache()
    assert drv.live == {}


def test_the_process_allocator_takes_the_first_sessions_gpu_options(monkeypatch):
    import sys

    from tfc.runtime.cuda import executable

    cuda_driver = sys.modules["tfc.runtime.cuda.driver"]  # (the package's ``driver`` is the function)

    fake = FakeDriver(capacity=1 << 30, total=1 << 20)
    monkeypatch.setattr(cuda_driver, "driver", lambda: fake)
    monkeypatch.setattr(executable, "_process_allocator", [])
    options = ConfigProto(gpu_options=GPUOptions(per_process_gpu_memory_fraction=0.25)).gpu_options
    first = executable.process_allocator(options)
    assert executable.process_allocator(None) is first  # later options do not change it
    assert first.stats()["limit"] == (1 << 20) // 4
    with pytest.raises(errors.ResourceExhaustedError, match="OOM when allocating tensor of"):
        first.allocate((1 << 20) // 2, what="a variable")
