"""The CPU device's caching allocator: buffers' memory is reused across realizes, never while referenced.

A freed block is reused for the next buffer of its size, but never while anything still reaches its
memory: a `.numpy()` view the user kept, a view of that view, a tensor sharing it through
`from_numpy`. Big blocks are huge-page aligned and advised to use huge pages.
"""
from __future__ import annotations

import gc
import importlib
import mmap
import re
import threading
from pathlib import Path

import numpy as np
import pytest

import lazytensor as lt
from lazytensor import device as device_module
from lazytensor.device import HUGE_PAGE, HostMemoryPool, advise_huge_pages, get_device

N = 1 << 16  # float32 elements: 256 KiB, big enough to be pooled
F32 = np.dtype(np.float32)


@pytest.fixture(autouse=True)
def _empty_pool():
    """Each test starts and ends with an empty CPU pool, so which block comes back is exact. Earlier tests'
    garbage cycles are collected first: collected mid-test, their buffers would join the pool."""
    gc.collect()
    lt.empty_cache()
    yield
    lt.empty_cache()


def cpu_pool() -> HostMemoryPool:
    return get_device("cpu").pool


def address(t: lt.Tensor) -> int:
    return t.numpy().ctypes.data


def compute(value: float, n: int = N) -> lt.Tensor:
    """A fresh buffer of n float32 holding `value`, computed by a kernel."""
    return (lt.zeros(n, device="cpu") + value).realize()


def test_a_dead_tensors_memory_is_reused_by_the_next_buffer_of_its_size():
    y = compute(1.0)
    p = address(y)
    del y
    assert cpu_pool().cached_bytes == N * 4
    z = compute(2.0)
    assert address(z) == p
    assert cpu_pool().cached_bytes == 0
    np.testing.assert_array_equal(z.numpy(), np.full(N, 2.0, np.float32))


def test_a_numpy_view_held_past_the_tensors_death_keeps_its_memory():
    y = compute(7.0)
    view = y.numpy()
    p = view.ctypes.data
    del y
    assert cpu_pool().cached_bytes == 0  # not free: the view still reads it
    others = [compute(float(i)) for i in range(4)]
    assert p not in [address(t) for t in others]
    np.testing.assert_array_equal(view, np.full(N, 7.0, np.float32))
    del view
    assert cpu_pool().cached_bytes == N * 4
    assert address(compute(3.0)) == p


@pytest.mark.parametrize("derive", [
    lambda a: a[1:],
    lambda a: a.reshape(2, -1).T,
    lambda a: np.asarray(a),
    lambda a: memoryview(a),
    lambda a: np.frombuffer(memoryview(a), dtype=np.int32),
    lambda a: np.lib.stride_tricks.as_strided(a, shape=(4,), strides=(8,)),
], ids=["slice", "reshape-transpose", "asarray", "memoryview", "frombuffer", "as_strided"])
def test_anything_derived_from_a_view_keeps_the_memory(derive):
    y = compute(5.0)
    derived = derive(y.numpy())
    p = address(y)
    del y
    assert cpu_pool().cached_bytes == 0
    others = [compute(1.0) for _ in range(3)]  # alive together: three blocks of the size
    assert p not in [address(t) for t in others]
    np.testing.assert_array_equal(np.asarray(derived).view(np.float32).reshape(-1)[:4], np.full(4, 5.0, np.float32))
    del derived
    assert cpu_pool().cached_bytes == N * 4


def test_a_tensor_sharing_the_memory_through_from_numpy_keeps_it():
    y = compute(4.0)
    shared = lt.from_numpy(y.numpy())
    p = address(y)
    del y
    others = [compute(1.0) for _ in range(3)]  # alive together: three blocks of the size
    assert p not in [address(t) for t in others]
    np.testing.assert_array_equal(shared.numpy(), np.full(N, 4.0, np.float32))
    del shared
    assert cpu_pool().cached_bytes == N * 4


def test_memory_from_numpy_is_the_users_and_never_pooled():
    a = np.arange(N, dtype=np.float32)
    t = lt.from_numpy(a)
    np.testing.assert_array_equal((t + 1).numpy(), a + 1)  # the result's block is pooled when it dies
    assert cpu_pool().cached_bytes == N * 4
    del t
    assert cpu_pool().cached_bytes == N * 4
    np.testing.assert_array_equal(a, np.arange(N, dtype=np.float32))


def test_results_are_right_in_reused_memory_full_of_garbage():
    """Reused memory is not zeroed: every kernel must write all of its output, accumulators included."""
    rng = np.random.default_rng(0)
    x, a, b = (rng.standard_normal(shape).astype(np.float32) for shape in [(N, 4), (256, 64), (64, 256)])
    t, ta, tb = (lt.asarray(v, device="cpu") for v in (x, a, b))
    for _ in range(2):
        compute(float("nan"))  # dies at once: its NaN-filled block is the next one of its size
        np.testing.assert_allclose(t.sum(axis=1).numpy(), x.sum(axis=1), rtol=1e-5, atol=1e-5)
        compute(float("nan"))
        np.testing.assert_allclose((ta @ tb).numpy(), a @ b, rtol=1e-5, atol=1e-4)  # 256 x 256: N elements
        compute(float("nan"), n=4 * N)
        np.testing.assert_array_equal((t * 2).numpy(), x * 2)


def test_a_realize_loop_alternates_between_two_blocks():
    x = lt.arange(N, dtype=lt.float32, device="cpu").realize()
    seen = set()
    for i in range(6):
        y = (x + i).realize()
        seen.add(address(y))
        assert y.numpy()[5] == 5 + i
    assert len(seen) == 2  # the new output is allocated while the last one is still alive


def test_a_schedule_run_kernel_by_kernel_reuses_the_memory_of_its_dead_intermediates(monkeypatch):
    """A schedule whose outputs pass BATCH_MAX_BYTES runs kernel by kernel, each intermediate's memory going
    back to the pool once its last reader has run (a smaller one runs as one batch and holds them all)."""
    monkeypatch.setattr(importlib.import_module("lazytensor.realize"), "BATCH_MAX_BYTES", 4 * N)
    fresh = []
    new_block = HostMemoryPool._new_block
    monkeypatch.setattr(HostMemoryPool, "_new_block", staticmethod(lambda size: fresh.append(size) or new_block(size)))
    x = lt.arange(N, dtype=lt.float32, device="cpu").realize()  # held: a realize would write it anyway
    fresh.clear()
    y = x
    for i in range(6):  # six kernels in one schedule, each reading only the one before
        y = (y * 2 + i).contiguous()
    expected = np.arange(N, dtype=np.float32)
    for i in range(6):
        expected = expected * 2 + i
    np.testing.assert_array_equal(y.numpy(), expected)
    assert len(fresh) == 2  # each intermediate's block serves the kernel after next


def test_blocks_are_kept_by_size():
    pool = HostMemoryPool(limit=1 << 30)
    a = pool.array(F32, N)
    p = a.ctypes.data
    del a
    b = pool.array(F32, 2 * N)
    assert b.ctypes.data != p
    assert pool.cached_bytes == N * 4
    c = pool.array(np.dtype(np.int32), N)  # another dtype of the same byte size takes it
    assert c.ctypes.data == p and c.dtype == np.int32 and c.shape == (N,)


def test_sizes_round_up_to_64_bytes_and_to_huge_pages_from_there():
    assert HostMemoryPool.block_size(100_000) == 100_032
    assert HostMemoryPool.block_size(HUGE_PAGE) == HUGE_PAGE
    assert HostMemoryPool.block_size(HUGE_PAGE + 1) == 2 * HUGE_PAGE
    pool = HostMemoryPool(limit=1 << 30)
    a = pool.array(F32, 25_000)  # 100,000 bytes
    p = a.ctypes.data
    del a
    b = pool.array(F32, 25_001)  # 100,004 bytes: the same 100,032-byte block
    assert b.ctypes.data == p and b.shape == (25_001,)


def test_pooled_arrays_are_writable_and_aligned():
    pool = HostMemoryPool(limit=1 << 30)
    small, big = pool.array(F32, N), pool.array(F32, HUGE_PAGE // 4 + 1)
    assert small.flags.writeable and small.ctypes.data % 64 == 0
    assert big.flags.writeable and big.ctypes.data % HUGE_PAGE == 0
    big[:] = 1.0  # the whole array is usable memory
    assert big.sum() == big.size


@pytest.mark.parametrize("make", [
    lambda: np.arange(3 * N, dtype=np.float32)[1:N + 1],                  # a NumPy array at 4 bytes past 16
    lambda: np.arange(4 * N, dtype=np.int64).reshape(2 * N, 2)[::2, ::-1],  # not contiguous
    lambda: np.arange(HUGE_PAGE + 1, dtype=np.float16),
    lambda: np.arange(N, dtype=np.float32).tolist(),
], ids=["offset", "strided", "float16", "list"])
def test_asarray_copies_into_pooled_memory(make):
    """asarray's copy lands in the pool's memory, aligned as a kernel's output is (NumPy's arrays start at 16
    bytes, and a kernel's 64-byte vector loads across two cache lines ran a sum 1.4x slower)."""
    data = make()
    x, expected = lt.asarray(data, device="cpu"), np.array(data)
    assert x.node.buffer.ptr % (HUGE_PAGE if expected.nbytes >= HUGE_PAGE else 64) == 0
    if isinstance(data, np.ndarray):
        data[...] = 7  # a later write to the source does not reach the tensor
    np.testing.assert_array_equal(x.numpy(), expected)


def test_big_blocks_are_advised_to_use_huge_pages(monkeypatch):
    advised = []
    monkeypatch.setattr(device_module, "advise_huge_pages", lambda ptr, nbytes: advised.append((ptr, nbytes)))
    pool = HostMemoryPool(limit=1 << 30)
    pool.array(F32, N)
    assert advised == []  # under a huge page
    big = pool.array(F32, 3 * HUGE_PAGE // 4 + 5)
    assert advised == [(big.ctypes.data, 4 * HUGE_PAGE)]
    del big
    pool.array(F32, 3 * HUGE_PAGE // 4 + 1)  # reuses the block: advised once, when it was made
    assert len(advised) == 1


@pytest.mark.skipif(not Path("/sys/kernel/mm/transparent_hugepage/enabled").exists(),
                    reason="needs Linux with transparent huge pages")
def test_advise_huge_pages_marks_the_range_for_huge_pages():
    region = mmap.mmap(-1, 2 * HUGE_PAGE)
    try:
        base = np.frombuffer(region, dtype=np.uint8).ctypes.data
        start = base + (-base % HUGE_PAGE)
        advise_huge_pages(start, HUGE_PAGE)
        assert "hg" in vm_flags(start)  # the kernel's mark for MADV_HUGEPAGE
    finally:
        region.close()


def vm_flags(start: int) -> list[str]:
    """The VmFlags of this process's mapping that starts at `start` (/proc/self/smaps)."""
    mapping = None
    for line in Path("/proc/self/smaps").read_text().splitlines():
        if (m := re.match(r"([0-9a-f]+)-[0-9a-f]+ ", line)) is not None:
            mapping = int(m[1], 16)
        elif line.startswith("VmFlags:") and mapping == start:
            return line.split()[1:]
    raise AssertionError(f"no mapping starts at {start:#x}")


def test_advise_huge_pages_is_silent_where_madvise_fails():
    advise_huge_pages(1, HUGE_PAGE)  # unaligned: madvise fails with EINVAL, and it is only a hint


def test_the_pool_keeps_at_most_its_limit_dropping_the_oldest_first():
    pool = HostMemoryPool(limit=2 * N * 4)
    a, b, c = (pool.array(F32, N) for _ in range(3))
    pb, pc = b.ctypes.data, c.ctypes.data
    del a, b, c
    assert pool.cached_bytes == 2 * N * 4
    first, second = pool.array(F32, N), pool.array(F32, N)
    assert (first.ctypes.data, second.ctypes.data) == (pc, pb)  # the last freed comes back first
    assert pool.cached_bytes == 0  # and `a`, the oldest, was dropped


def test_a_block_bigger_than_the_limit_is_not_kept():
    pool = HostMemoryPool(limit=N * 4 - 1)
    pool.array(F32, N)  # dies at once
    assert pool.cached_bytes == 0


def test_small_arrays_come_from_numpy_and_are_not_pooled():
    pool = HostMemoryPool(limit=1 << 30)
    a = pool.array(F32, 10)
    assert a.flags.owndata
    del a
    assert pool.cached_bytes == 0


def test_empty_cache_gives_the_free_blocks_back():
    y, z = compute(1.0), compute(2.0, n=2 * N)
    del y, z
    assert cpu_pool().cached_bytes == 3 * N * 4
    lt.empty_cache()
    assert cpu_pool().cached_bytes == 0


def test_threads_never_share_a_live_block():
    pool = HostMemoryPool(limit=4 * N * 4)
    errors: list[str] = []

    def work(k: int) -> None:
        for _ in range(200):
            a = pool.array(F32, N)
            a.fill(k)
            b = pool.array(F32, N)
            b.fill(-k)
            if not (a == k).all() or not (b == -k).all():
                errors.append(f"thread {k} saw another's writes")
            del a, b

    threads = [threading.Thread(target=work, args=(k,)) for k in range(1, 5)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert pool.cached_bytes <= pool.limit


def test_a_host_buffer_has_its_arrays_address():
    """The address a CPU buffer gives kernels is its array's, whatever the array: read-only, empty, pooled."""
    cpu = get_device("cpu")
    read_only = np.arange(5.0)
    read_only.flags.writeable = False
    for array in (read_only, np.arange(3, dtype=np.int32), np.zeros(0, np.float32), np.arange(6.0)[::2]):
        buffer = cpu.from_numpy(array)
        assert buffer.ptr == buffer.numpy().ctypes.data
        np.testing.assert_array_equal(buffer.numpy(), array)
    for size in (0, 1, 1 << 16):
        buffer = cpu.alloc(lt.float32, size)
        assert buffer.ptr == buffer.numpy().ctypes.data and buffer.size == size


def test_device_and_cuda_answer_as_pytorchs_tutorials_ask():
    """`device = lt.device("cuda" if lt.cuda.is_available() else "cpu")`, then `.to(device)` and `device=`: the
    same answers as `lt.devices()` gives, on the CPU and under Triton's interpreter."""
    gpus = [d for d in lt.devices() if d.type == "cuda"]
    assert lt.cuda.is_available() == bool(gpus) and lt.cuda.device_count() == len(gpus)
    device = lt.device("cuda" if lt.cuda.is_available() else "cpu")
    assert device is get_device("cuda:0" if gpus else "cpu")
    assert lt.ones(2).to(device).device == device.name == lt.zeros(2, device=device).device
    assert (lt.device("cpu").type, lt.device("cpu").index) == ("cpu", None)
    if gpus:
        assert lt.device("cuda", 0) is gpus[0] and (gpus[0].type, gpus[0].index) == ("cuda", 0)
        assert lt.cuda.get_device_name(0) == gpus[0].target.describe() and lt.cuda.current_device() == 0
        lt.cuda.synchronize()
    lt.cuda.manual_seed(4)
    first = lt.rand(3).numpy()
    lt.manual_seed(4)
    np.testing.assert_array_equal(lt.rand(3).numpy(), first)
    with pytest.raises(lt.DeviceError, match="unknown device"):
        lt.device("tpu")
