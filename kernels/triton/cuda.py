"""The CUDA driver API through ctypes: devices, contexts, streams, memory and copies.

Why ctypes on libcuda: lazytensor needs device memory, copies, a stream and a
way to wait for it, and nothing else from CUDA. The driver API provides all of
it from libcuda.so.1, which ships with the NVIDIA driver itself, so every
machine that can run a kernel has it: no CUDA toolkit, no compiler, no torch or
cupy. It is also what Triton launches through, and using each device's primary
context means that the modules Triton loads and the memory allocated here live
in one context. Every bound function has its argument types declared, so that
ctypes converts (and checks) each call.

Every call first makes the device's primary context current on the calling
thread (cuCtxSetCurrent is per thread). All work for a device goes to one
stream, so it runs in order: a block freed to the caching allocator may be
handed to the next allocation at once, because whatever uses it next is queued
behind everything that used it before. Reading to the host waits for the
stream.
"""
from __future__ import annotations

import ctypes
import threading
from collections import defaultdict
from collections.abc import Callable
from contextvars import ContextVar

CUDA_SUCCESS = 0
CUDA_ERROR_INVALID_VALUE = 1
CUDA_ERROR_OUT_OF_MEMORY = 2
# What cuMemAlloc answers where there is no room: out of memory, or, for a size beyond what the device can
# address at all (2**60 bytes), an invalid value (the size is its only argument that can be wrong).
NO_ROOM = (CUDA_ERROR_OUT_OF_MEMORY, CUDA_ERROR_INVALID_VALUE)
CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16
CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75
CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76
CU_STREAM_NON_BLOCKING = 1
CU_EVENT_DISABLE_TIMING = 2

_int_p, _size_p, _ptr_p = ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ctypes.c_size_t), ctypes.POINTER(ctypes.c_void_p)
_dev_p = ctypes.POINTER(ctypes.c_uint64)
_CUdeviceptr, _CUstream, _CUcontext, _CUevent = ctypes.c_uint64, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p

# name: argument types (every function returns a CUresult). The _v2 names are what cuda.h's macros
# resolve to: the 64-bit-size entry points.
_PROTOTYPES: dict[str, list] = {
    "cuInit": [ctypes.c_uint],
    "cuGetErrorName": [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)],
    "cuGetErrorString": [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)],
    "cuDeviceGetCount": [_int_p],
    "cuDeviceGet": [_int_p, ctypes.c_int],
    "cuDeviceGetName": [ctypes.c_char_p, ctypes.c_int, ctypes.c_int],
    "cuDeviceGetAttribute": [_int_p, ctypes.c_int, ctypes.c_int],
    "cuDeviceTotalMem_v2": [_size_p, ctypes.c_int],
    "cuDevicePrimaryCtxRetain": [_ptr_p, ctypes.c_int],
    "cuCtxGetCurrent": [_ptr_p],
    "cuCtxSetCurrent": [_CUcontext],
    "cuStreamCreate": [_ptr_p, ctypes.c_uint],
    "cuStreamSynchronize": [_CUstream],
    "cuStreamWaitEvent": [_CUstream, _CUevent, ctypes.c_uint],
    "cuEventCreate": [_ptr_p, ctypes.c_uint],
    "cuEventRecord": [_CUevent, _CUstream],
    "cuEventDestroy_v2": [_CUevent],
    "cuMemAlloc_v2": [_dev_p, ctypes.c_size_t],
    "cuMemFree_v2": [_CUdeviceptr],
    "cuMemcpyHtoDAsync_v2": [_CUdeviceptr, ctypes.c_void_p, ctypes.c_size_t, _CUstream],
    "cuMemcpyDtoHAsync_v2": [ctypes.c_void_p, _CUdeviceptr, ctypes.c_size_t, _CUstream],
}


class CudaError(RuntimeError):
    """A CUDA driver call failed, or there is no driver; `code` is the CUresult (None: no driver)."""

    def __init__(self, message: str, code: int | None = None):
        super().__init__(message)
        self.code = code


class _Driver:
    """libcuda.so.1, initialized, with typed entry points."""

    def __init__(self) -> None:
        try:
            self.lib = ctypes.CDLL("libcuda.so.1")
        except OSError as e:
            raise CudaError(f"no NVIDIA driver: libcuda.so.1 could not be loaded ({e})") from None
        for name, argtypes in _PROTOTYPES.items():
            fn = getattr(self.lib, name)
            fn.argtypes, fn.restype = argtypes, ctypes.c_int
        self.check(self.lib.cuInit(0), "cuInit")

    def check(self, result: int, what: str) -> None:
        if result == CUDA_SUCCESS:
            return
        name, text = ctypes.c_char_p(), ctypes.c_char_p()
        self.lib.cuGetErrorName(result, ctypes.byref(name))
        self.lib.cuGetErrorString(result, ctypes.byref(text))
        label = (name.value or b"CUDA_ERROR").decode()
        raise CudaError(f"{what} failed: {label}: {(text.value or b'unknown error').decode()}", result)

    def call(self, name: str, *args: object) -> None:
        self.check(getattr(self.lib, name)(*args), name)


_driver: _Driver | None = None
_driver_lock = threading.Lock()


def driver() -> _Driver:
    """The loaded and initialized driver; raises CudaError if this machine has none."""
    global _driver
    with _driver_lock:
        if _driver is None:
            _driver = _Driver()
    return _driver


def device_count() -> int:
    count = ctypes.c_int()
    driver().call("cuDeviceGetCount", ctypes.byref(count))
    return count.value


def _round_size(nbytes: int) -> int:
    """Round up to 512 bytes, and above that to one of four sizes per power of two (at most 25% waste),
    so that blocks of nearby sizes are interchangeable in the cache."""
    if nbytes <= 512:
        return 512
    step = max(512, (1 << (nbytes - 1).bit_length()) // 8)
    return -(-nbytes // step) * step


class CachingAllocator:
    """Keeps freed blocks by size and hands them out again.

    cuMemAlloc and cuMemFree are slow (cuMemFree synchronizes the device), and a
    realize loop allocates every output anew; caching makes that free. When an
    allocation fails the cache is released and the allocation tried once more.
    """

    def __init__(self, malloc: Callable[[int], int], free: Callable[[int], None]):
        self._malloc, self._free = malloc, free
        self._cache: defaultdict[int, list[int]] = defaultdict(list)
        # Reentrant: `release` runs from buffers' finalizers, which a garbage collection may start while
        # this thread holds the lock inside `allocate`; each critical section stays consistent under that.
        self._lock = threading.RLock()
        self.cached_bytes = 0
        self.allocated_bytes = 0

    def allocate(self, nbytes: int) -> tuple[int, int]:
        """A block of at least `nbytes`: its address and its size (what `release` takes back). Where the GPU
        has no room even after the cached blocks are given back, MemoryError."""
        size = _round_size(nbytes)
        with self._lock:
            if self._cache[size]:
                self.cached_bytes -= size
                self.allocated_bytes += size
                return self._cache[size].pop(), size
        try:
            ptr = self._malloc(size)
        except CudaError as e:
            if e.code not in NO_ROOM:
                raise
            self.empty_cache()
            try:
                ptr = self._malloc(size)
            except CudaError as again:
                if again.code not in NO_ROOM:
                    raise
                raise MemoryError from None
        with self._lock:
            self.allocated_bytes += size
        return ptr, size

    def release(self, ptr: int, size: int) -> None:
        with self._lock:
            self._cache[size].append(ptr)
            self.cached_bytes += size
            self.allocated_bytes -= size

    def empty_cache(self) -> None:
        """Return every cached block to the driver."""
        with self._lock:
            blocks = [ptr for ptrs in self._cache.values() for ptr in ptrs]
            self._cache.clear()
            self.cached_bytes = 0
        for ptr in blocks:
            self._free(ptr)


class GPU:
    """One CUDA device: its primary context, the stream all its work goes to, and its memory."""

    def __init__(self, index: int):
        d = driver()
        self.index = index
        self._device = ctypes.c_int()
        d.call("cuDeviceGet", ctypes.byref(self._device), index)
        self._context = ctypes.c_void_p()
        d.call("cuDevicePrimaryCtxRetain", ctypes.byref(self._context), self._device)
        self.activate()
        self._stream = ctypes.c_void_p()
        d.call("cuStreamCreate", ctypes.byref(self._stream), CU_STREAM_NON_BLOCKING)
        name = ctypes.create_string_buffer(256)
        d.call("cuDeviceGetName", name, len(name), self._device)
        self.name = name.value.decode()
        self.capability = (self._attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR),
                           self._attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR))
        self.multiprocessors = self._attribute(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
        total = ctypes.c_size_t()
        d.call("cuDeviceTotalMem_v2", ctypes.byref(total), self._device)
        self.total_memory = total.value
        self.allocator = CachingAllocator(self._malloc, self._free)

    def _attribute(self, attribute: int) -> int:
        value = ctypes.c_int()
        driver().call("cuDeviceGetAttribute", ctypes.byref(value), attribute, self._device)
        return value.value

    @property
    def stream(self) -> int:
        """The CUstream handle, as Triton's launcher takes it."""
        return self._stream.value or 0

    def activate(self) -> None:
        """Make this device's primary context current on the calling thread."""
        current = ctypes.c_void_p()
        driver().call("cuCtxGetCurrent", ctypes.byref(current))
        if current.value != self._context.value:
            driver().call("cuCtxSetCurrent", self._context)

    def _malloc(self, nbytes: int) -> int:
        self.activate()
        ptr = ctypes.c_uint64()
        driver().call("cuMemAlloc_v2", ctypes.byref(ptr), nbytes)
        return ptr.value

    def _free(self, ptr: int) -> None:
        self.activate()
        driver().call("cuMemFree_v2", ptr)

    def upload(self, dst: int, src: int, nbytes: int) -> None:
        """Copy host memory at `src` to the device. The copy is queued on the stream; the driver stages
        pageable host memory before returning, so the source may be reused at once."""
        self.activate()
        driver().call("cuMemcpyHtoDAsync_v2", dst, src, nbytes, self._stream)

    def download(self, dst: int, src: int, nbytes: int) -> None:
        """Copy device memory at `src` to the host, after all queued work; returns when it has arrived."""
        self.activate()
        driver().call("cuMemcpyDtoHAsync_v2", dst, src, nbytes, self._stream)
        self.synchronize()

    def synchronize(self) -> None:
        """Wait until everything queued on this device's stream has run."""
        self.activate()
        driver().call("cuStreamSynchronize", self._stream)

    def order_before(self, stream: int) -> None:
        """Make the work queued from now on to `stream`, another library's CUstream handle (1 and 2 are CUDA's
        legacy and per-thread default streams), wait for everything queued on this device's stream so far.
        An event recorded here and waited for there orders the two streams on the GPU, without blocking the
        host (DLPack's handover of memory from one stream to another)."""
        self.activate()
        event = ctypes.c_void_p()
        driver().call("cuEventCreate", ctypes.byref(event), CU_EVENT_DISABLE_TIMING)
        try:
            driver().call("cuEventRecord", event, self._stream)
            driver().call("cuStreamWaitEvent", stream, event, 0)
        finally:  # the driver keeps the event until the wait queued on it has happened
            driver().call("cuEventDestroy_v2", event)


_gpus: dict[int, GPU] = {}
_gpus_lock = threading.Lock()


def gpu(index: int) -> GPU:
    """The device `index` (opened once per process)."""
    with _gpus_lock:
        if index not in _gpus:
            _gpus[index] = GPU(index)
        return _gpus[index]


# The GPU a lazytensor launch is running on, while it runs: Triton asks its driver for the current
# device and stream, and lazytensor's driver (see runtime.py) answers from here.
launching: ContextVar[GPU | None] = ContextVar("launching", default=None)
