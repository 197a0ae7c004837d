"""The caching allocator against a fake in-memory driver: size classes, reuse, the OOM retry
after emptying the cache, memory_limit, stats, from_gpu_options, and allow_growth=False's
up-front reservation (one driver allocation of the limit, best-fit sub-allocation with merged
free ranges, exhaustion)."""
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


class FakeGpu(FakeDriver):
    """A FakeDriver reporting free memory and a compute capability, as the real drivers do."""

    def __init__(self, capacity, total, free, major=9):
        super().__init__(capacity, total)
        self.free = free
        self.major = major

    def free_memory(self):
        return self.free

    def compute_capability(self):
        return (self.major, 0)


def test_allow_growth_false_reserves_the_limit_in_one_driver_allocation():
    drv = FakeDriver()
    alloc = CachingAllocator(drv, memory_limit=10_000, allow_growth=False)
    assert drv.allocs == [] and alloc.stats()["reserved"] == 0  # reserved at the first allocation
    a = alloc.allocate(1000, what="a")  # 1024 (256-aligned, no size classes)
    assert drv.allocs == [10_000]  # exactly the limit
    base = next(iter(drv.live))
    b = alloc.allocate(300, what="b")  # 512
    c = alloc.allocate(2000, what="c")  # 2048
    assert (a.ptr, b.ptr, c.ptr) == (base, base + 1024, base + 1536)
    assert (a.size, b.size, c.size) == (1024, 512, 2048)
    s = alloc.stats()
    assert (s["reserved"], s["in_use"], s["cached"], s["limit"]) == (9984, 3584, 9984 - 3584, 10_000)
    b.release()
    d = alloc.allocate(400)  # the freed 512-byte hole is the best fit
    assert d.ptr == base + 1024
    for buf in (a, c, d):
        buf.release()
    alloc.empty_cache()  # keeps the reservation
    assert drv.frees == [] and len(drv.live) == 1
    s = alloc.stats()
    assert (s["in_use"], s["cached"], s["driver_allocations"], s["allocations"], s["peak"]) == (0, 9984, 1, 4, 3584)
    whole = alloc.allocate(9984)  # the freed neighbours merged back into one range
    assert whole.ptr == base and drv.allocs == [10_000]


def test_allow_growth_false_best_fit_and_fragmentation():
    drv = FakeDriver()
    alloc = CachingAllocator(drv, memory_limit=16 * 256, allow_growth=False)
    blocks = [alloc.allocate(256 * n, what=str(n)) for n in (1, 2, 3, 4, 6)]  # 16 units, all in use
    base = blocks[0].ptr
    assert [b.ptr - base for b in blocks] == [0, 256, 768, 1536, 2560]
    blocks[1].release()  # free: [256, 768) (2 units)
    blocks[3].release()  # free: [1536, 2560) (4 units)
    # 6 units are free in two ranges (2 and 4): a block of 3 fits only the 4-unit one
    three = alloc.allocate(3 * 256)
    assert three.ptr == base + 1536
    two = alloc.allocate(2 * 256)  # the 2-unit range is the smallest that fits
    assert two.ptr == base + 256
    with pytest.raises(errors.ResourceExhaustedError) as info:
        alloc.allocate(512, what="op big")  # 1 unit free (at 2304)
    message = info.value.message
    assert message.startswith("OOM when allocating tensor of 512 bytes for op big on /device:GPU:0 "
                              "by allocator tfc_caching_allocator: no free block of 512 bytes in the 4096 bytes "
                              "reserved with allow_growth=False (largest free block 256 bytes) (limit 4096 bytes, "
                              "3840 bytes in use, 256 cached)")
    one = alloc.allocate(1)
    assert one.ptr == base + 2304
    # free the middle blocks: their ranges merge with each other and with their free neighbours
    for b in (two, blocks[2], three, one):
        b.release()
    assert alloc.allocate(9 * 256).ptr == base + 256  # [256, 2560): one range of 9 units
    assert drv.allocs == [4096] and drv.frees == []


def test_allow_growth_false_exhaustion_and_a_reservation_the_device_cannot_give():
    alloc = CachingAllocator(FakeDriver(), memory_limit=2048, allow_growth=False)
    held = alloc.allocate(2048)
    with pytest.raises(errors.ResourceExhaustedError, match=r"no free block of 256 bytes in the 2048 bytes reserved "
                                                            r"with allow_growth=False \(largest free block 0 bytes\)"):
        alloc.allocate(1)
    assert alloc.stats()["allow_growth"] is False
    held.release()
    assert alloc.allocate(1).ptr == held.ptr
    drv = FakeDriver(capacity=4096)
    alloc = CachingAllocator(drv, memory_limit=8192, allow_growth=False)
    with pytest.raises(errors.ResourceExhaustedError) as info:
        alloc.allocate(100, what="op x")
    assert info.value.message.startswith("OOM when allocating tensor of 100 bytes for op x on /device:GPU:0 by "
                                         "allocator tfc_caching_allocator: the device cannot reserve the 8192 "
                                         "bytes of allow_growth=False (OOM when allocating tensor of 8192 bytes")
    assert drv.live == {}


def test_allow_growth_false_without_a_limit_reserves_nearly_all_memory():
    gib = 1 << 30
    drv = FakeGpu(capacity=1 << 40, total=141 * gib, free=140 * gib, major=9)
    alloc = CachingAllocator(drv, allow_growth=False)
    assert alloc.memory_limit == 140 * gib - 1536 * (1 << 20)  # TF's system reserve for sm_80+
    alloc.allocate(1)
    assert drv.allocs == [140 * gib - 1536 * (1 << 20)]
    assert CachingAllocator(FakeGpu(1, 16 * gib, 10 * gib, major=7), allow_growth=False).memory_limit == \
        10 * gib - 1050 * (1 << 20)
    assert CachingAllocator(FakeGpu(1, 16 * gib, 10 * gib, major=6), allow_growth=False).memory_limit == \
        10 * gib - 500 * (1 << 20)
    assert CachingAllocator(FakeGpu(1, 2 * gib, gib, major=9), allow_growth=False).memory_limit == \
        gib - 225 * (1 << 20)
    # a driver without free_memory / compute_capability: its total memory
    assert CachingAllocator(FakeDriver(total=4 * gib), allow_growth=False).memory_limit == 4 * gib - 1536 * (1 << 20)


def test_allow_growth_false_concurrent_allocate_and_release():
    drv = FakeDriver(capacity=1 << 30)
    alloc = CachingAllocator(drv, memory_limit=1 << 20, allow_growth=False)
    _hammer(alloc, threads=4, rounds=200, disjoint=True)
    s = alloc.stats()
    assert (s["in_use"], s["cached"], s["driver_allocations"]) == (0, 1 << 20, 1)
    assert alloc.allocate(1 << 20).ptr == next(iter(drv.live))  # everything merged back


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
    config.gpu_options.allow_growth = True
    alloc = from_gpu_options(drv, config.gpu_options)  # fraction 0, growth: no limit
    assert alloc.memory_limit is None and alloc.allow_growth is True
    config.gpu_options.allow_growth = False
    alloc = from_gpu_options(drv, config.gpu_options)  # fraction 0, no growth: nearly all memory (TF)
    assert alloc.memory_limit == (8 << 30) - 1536 * (1 << 20) and alloc.allow_growth is False
    assert drv.allocs == []  # reserved at the first allocation
    config.gpu_options.per_process_gpu_memory_fraction = 0.5
    alloc = from_gpu_options(drv, config.gpu_options)
    assert alloc.memory_limit == 4 << 30 and alloc.stats()["reserved"] == 0
    assert from_gpu_options(drv).memory_limit is None


def _hammer(alloc, threads: int, rounds: int, disjoint: bool) -> None:
    """``threads`` threads each allocate 4 buffers and release them, ``rounds`` times
    (``disjoint``: checking the 4 never overlap); no thread may fail."""
    failures = []

    def work():
        try:
            for i in range(rounds):
                bufs = [alloc.allocate(256 * (1 + (i + j) % 7)) for j in range(4)]
                if disjoint:
                    spans = sorted((b.ptr, b.ptr + b.size) for b in bufs)
                    assert all(end <= start for (_, end), (start, _) in zip(spans, spans[1:]))
                for b in bufs:
                    b.release()
        except Exception as exc:  # pragma: no cover - reported below
            failures.append(exc)

    workers = [threading.Thread(target=work) for _ in range(threads)]
    for t in workers:
        t.start()
    for t in workers:
        t.join()
    assert not failures


def test_concurrent_allocate_and_release():
    drv = FakeDriver(capacity=1 << 30)
    alloc = CachingAllocator(drv)
    _hammer(alloc, threads=8, rounds=300, disjoint=False)
    s = alloc.stats()
    assert s["in_use"] == 0 and s["allocations"] == 8 * 300 * 4
    assert s["cached"] == sum(drv.live.values())  # every live driver block is in the cache
    alloc.empty_cache()
    assert drv.live == {}


def test_the_process_allocator_takes_the_first_sessions_gpu_options(monkeypatch):
    import sys

    from tfc.runtime.cuda import executable

    cuda_driver = sys.modules["tfc.runtime.cuda.driver"]  # (the package's ``driver`` is the function)

    fakes = {0: FakeDriver(capacity=1 << 30, total=1 << 20), 1: FakeDriver(capacity=1 << 30, total=1 << 22)}
    monkeypatch.setattr(cuda_driver, "driver", lambda ordinal=0: fakes[ordinal])
    monkeypatch.setattr(executable, "_process_allocator", {})
    options = ConfigProto(gpu_options=GPUOptions(per_process_gpu_memory_fraction=0.25)).gpu_options
    first = executable.process_allocator(options)
    assert executable.process_allocator(None) is first  # later options do not change it
    assert first.stats()["limit"] == (1 << 20) // 4
    with pytest.raises(errors.ResourceExhaustedError, match="OOM when allocating tensor of"):
        first.allocate((1 << 20) // 2, what="a variable")
    # each GPU has its own allocator, made from the options of the first session using that GPU
    half = ConfigProto(gpu_options=GPUOptions(per_process_gpu_memory_fraction=0.5)).gpu_options
    second = executable.process_allocator(half, ordinal=1)
    assert second is not first and executable.process_allocator(options, ordinal=1) is second
    assert second.stats()["limit"] == (1 << 22) // 2
    assert executable.process_allocator(ordinal=0) is first
