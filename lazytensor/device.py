"""Devices and the buffers that live on them.

A tensor lives on exactly one device: "cpu", or "cuda:N" ("cuda" is cuda:0).
The CPU device keeps data in NumPy arrays and compiles kernels with the LLVM
backend. A cuda device keeps data in GPU memory and compiles kernels with
Triton; with TRITON_INTERPRET=1 its one device, cuda:0, runs the same Triton
kernels in Triton's interpreter on the CPU (for testing). The default device is
LT_DEVICE, else cpu.

Nothing falls back to another device: asking for one that is not available
raises `DeviceError` saying why, and so does an op on tensors of two devices.
The CUDA backend is imported only when a cuda device is asked for, so the CPU
path never pays for importing triton.

Both devices cache memory: a buffer's memory is reused for a later buffer of the
same size once nothing references it any more (`HostMemoryPool` on the CPU, the
CUDA driver runtime's caching allocator on a GPU). `empty_cache()` gives it back.
"""
from __future__ import annotations

import contextlib
import ctypes
import itertools
import os
import re
import sys
import threading
import types
import weakref
from collections.abc import Callable, Mapping, Sequence
from functools import cache, partial
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from .dtypes import DType, bfloat16, float16, float32, float64, to_dtype, to_numpy_dtype
from .errors import DeviceError

if TYPE_CHECKING:
    from .kernels.ir import Kernel
    from .kernels.triton.targets import Allocation, Target


class Buffer:
    """`size` elements of `dtype` on `device`, contiguous, at address `ptr`."""

    # one is made for every kernel output: no instance dict; weakly referable (an export lives as long as its consumer)
    __slots__ = ("__weakref__", "device", "dtype", "ptr", "size")

    def __init__(self, device: str, dtype: DType, size: int, ptr: int):
        # ptr is read once: NumPy's ctypes lookup costs microseconds per launch
        self.device, self.dtype, self.size, self.ptr = device, dtype, size, ptr

    def numpy(self) -> np.ndarray:
        """The data as a flat host array."""
        raise NotImplementedError


class HostBuffer(Buffer):
    """A buffer in host memory, held by a NumPy array."""

    __slots__ = ("data",)

    def __init__(self, device: str, dtype: DType, data: np.ndarray):
        # the address of its memory: `ndarray.ctypes.data` costs a microsecond, a tenth of the realize of a small
        # cached kernel; a ctypes view of the first byte a quarter of that, where there is one (a writable array
        # with elements)
        try:
            ptr = _addressof(_first_byte(data))
        except (TypeError, ValueError, BufferError):  # read-only, or empty
            ptr = data.ctypes.data
        self.device, self.dtype, self.size, self.ptr, self.data = device, dtype, data.size, ptr, data

    def numpy(self) -> np.ndarray:
        """The array itself: no copy."""
        return self.data


_addressof, _first_byte = ctypes.addressof, ctypes.c_char.from_buffer

# Transparent huge pages are 2 MiB on x86-64 and on arm64 with 4 KiB base pages.
HUGE_PAGE = 2 << 20
# madvise's advice number for "back this range with transparent huge pages" (<sys/mman.h> on Linux).
_MADV_HUGEPAGE = 14


@cache
def _libc_madvise() -> Callable[[int, int, int], int] | None:
    """libc's madvise, or None where there is none to call (not Linux, no libc found)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        madvise = ctypes.CDLL(None).madvise
    except (OSError, AttributeError):
        return None
    madvise.argtypes, madvise.restype = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int], ctypes.c_int
    return madvise


def advise_huge_pages(address: int, nbytes: int) -> None:
    """Ask Linux to back `nbytes` at `address` (both multiples of HUGE_PAGE) with transparent huge pages.

    It is a hint: a kernel without THP, or with THP off, refuses or ignores it, and then the memory
    simply stays in 4 KiB pages, so the result is not checked.
    """
    if (madvise := _libc_madvise()) is not None:
        madvise(address, nbytes, _MADV_HUGEPAGE)


def _default_pool_limit() -> int:
    """1 GiB, or an eighth of physical memory where that is less."""
    try:
        physical = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):  # no sysconf, or it does not know these names
        return 1 << 30
    return min(1 << 30, physical // 8)


def _bytes(n: int) -> str:
    """`n` bytes, readably: '1.00 EiB'."""
    for unit, shift in (("EiB", 60), ("PiB", 50), ("TiB", 40), ("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift:
            return f"{n / (1 << shift):.2f} {unit}"
    return f"{n} bytes"


def _out_of_memory(where: str, size: int, itemsize: int) -> MemoryError:
    """The error for `size` elements of `itemsize` bytes that `where` ('host', 'GPU') has no room for."""
    return MemoryError(f"out of {where} memory: cannot allocate {_bytes(size * itemsize)} ({size} elements of "
                       f"{itemsize} bytes each)")


class _Lent(weakref.ref):
    """A weak reference to the owner of a block the pool lent out, and the block (see `HostMemoryPool.array`)."""

    __slots__ = ("block",)


class HostMemoryPool:
    """Host memory for CPU buffers, reused across realizes: freed blocks are kept by byte size.

    Why: the first write to a fresh 4 KiB page faults into the kernel (about 1.5 us on a VM), so writing
    a fresh 64 MiB output costs several times writing a reused one. malloc keeps small freed blocks
    itself, but glibc gives big ones back to the kernel on free (from 128 KiB; once it has seen such
    frees, from up to 32 MiB), and the next buffer of that size faults in every page again.

    A block is reused only once nothing can reach its memory. The array a buffer hands out is made with
    `np.frombuffer` over an owner object (a ctypes array over the block) that is not an ndarray, so
    NumPy's view collapsing stops there: every view of the array, and every buffer-protocol export of
    those views, keeps the owner alive, and a finalizer on the owner returns the block when the last of
    them dies. Raw addresses (`Buffer.ptr`, `arr.ctypes.data`) are not references: they are valid only
    while the buffer or an array over its memory lives.

    Blocks of HUGE_PAGE or more are HUGE_PAGE-aligned, a multiple of it long, and advised to use huge
    pages, so that one fault maps 2 MiB. The pool keeps at most `limit` bytes; past that the oldest
    freed blocks are dropped. Requests smaller than `min_bytes` are not pooled: malloc recycles them
    without faults, and the finalizer's few microseconds would cost more than they save.
    """

    def __init__(self, limit: int, min_bytes: int = 64 << 10):
        self.limit, self.min_bytes = limit, min_bytes
        self.cached_bytes = 0  # in free blocks, ready to hand out
        self._lock = threading.Lock()
        self._free: dict[int, dict[int, np.ndarray]] = {}  # size -> {token: block}, last freed last
        self._age: dict[int, int] = {}                     # token -> size, oldest first
        self._tokens = itertools.count()
        # Blocks whose last reference died, waiting to be filed under the lock (see _give_back).
        self._returned: list[np.ndarray] = []
        # The weak references to the owners of the blocks lent out, by id: kept here till their owner dies
        self._lent: dict[int, _Lent] = {}

    @staticmethod
    def block_size(nbytes: int) -> int:
        """The size of the block that holds `nbytes`: rounded up to 64 bytes, or to HUGE_PAGE from there."""
        quantum = HUGE_PAGE if nbytes >= HUGE_PAGE else 64
        return -(-nbytes // quantum) * quantum

    def array(self, dtype: np.dtype, size: int) -> np.ndarray:
        """A flat array of `size` elements of `dtype` (uninitialized), on a pooled block when it is big enough.

        Where the memory is not there, the pool gives back the blocks it keeps and tries once more, then raises
        MemoryError saying how much was asked for."""
        nbytes = size * dtype.itemsize
        if nbytes < self.min_bytes:
            return np.empty(size, dtype=dtype)
        try:
            block = self._take(self.block_size(nbytes))
        except MemoryError:
            self.clear()
            try:
                block = self._take(self.block_size(nbytes))
            except MemoryError:
                raise _out_of_memory("host", size, dtype.itemsize) from None
        # Not a memoryview: np.frombuffer wraps one in a memoryview of its own, which would not keep ours alive.
        owner = (ctypes.c_char * block.nbytes).from_buffer(block)
        # A weak reference whose callback gives the block back, rather than a weakref.finalize: a third of the
        # cost to make and to run (no registry, no atexit hook: at exit the memory goes with the process)
        lent = _Lent(owner, self._owner_died)
        lent.block = block
        self._lent[id(lent)] = lent
        return np.frombuffer(owner, dtype=dtype, count=size)

    def _owner_died(self, lent: _Lent) -> None:
        """The callback of a lent block's owner: the block comes back."""
        del self._lent[id(lent)]
        self._give_back(lent.block)

    def clear(self) -> None:
        """Drop every free block: its memory goes back to the allocator it came from."""
        with self._lock:
            self._returned.clear()
            self._free.clear()
            self._age.clear()
            self.cached_bytes = 0

    def _give_back(self, block: np.ndarray) -> None:
        """A block's finalizer: file it now if the lock is free, else leave it for the next `_take`.

        A finalizer can run while this very thread holds the lock (a garbage collection inside `_take`),
        so waiting for the lock could deadlock.
        """
        self._returned.append(block)
        if self._lock.acquire(blocking=False):
            try:
                self._file_returned()
            finally:
                self._lock.release()

    def _take(self, size: int) -> np.ndarray:
        """A free block of `size` bytes, the one freed last (its lines may still be in cache), or a new one."""
        with self._lock:
            self._file_returned()
            if blocks := self._free.get(size):
                token, block = blocks.popitem()
                del self._age[token]
                self.cached_bytes -= size
                return block
        return self._new_block(size)

    @staticmethod
    def _new_block(size: int) -> np.ndarray:
        """`size` fresh bytes, 64-byte aligned (a cache line), or HUGE_PAGE-aligned and advised from HUGE_PAGE."""
        if size + HUGE_PAGE > sys.maxsize:  # NumPy raises ValueError for more bytes than an address space holds
            raise MemoryError
        if size < HUGE_PAGE:
            raw = np.empty(size + 63, dtype=np.uint8)
            start = -raw.ctypes.data % 64
            return raw[start:start + size]
        # np.empty aligns to 16 bytes: over-allocate by a huge page and start at the first aligned address
        # in it. The unused head and tail are never written, so they cost address space, not memory.
        raw = np.empty(size + HUGE_PAGE, dtype=np.uint8)
        start = -raw.ctypes.data % HUGE_PAGE
        block = raw[start:start + size]
        advise_huge_pages(block.ctypes.data, size)
        return block

    def _file_returned(self) -> None:
        """Move returned blocks into the free lists, then drop the oldest while over the limit. Holds the lock."""
        while self._returned:
            block = self._returned.pop()
            size = block.nbytes
            if size > self.limit:
                continue
            token = next(self._tokens)
            self._free.setdefault(size, {})[token] = block
            self._age[token] = size
            self.cached_bytes += size
        while self.cached_bytes > self.limit:
            token, size = next(iter(self._age.items()))
            del self._age[token]
            blocks = self._free[size]
            del blocks[token]
            if not blocks:
                del self._free[size]
            self.cached_bytes -= size


class CUDABuffer(Buffer):
    """A buffer in a cuda device's memory; its memory is reused once the buffer is garbage collected."""

    __slots__ = ("allocation", "target")

    def __init__(self, device: str, dtype: DType, size: int, allocation: Allocation, target: Target):
        super().__init__(device, dtype, size, allocation.ptr)
        self.allocation, self.target = allocation, target

    def numpy(self) -> np.ndarray:
        """A copy in host memory, made after all work queued on the device."""
        out = np.empty(self.size, dtype=to_numpy_dtype(self.dtype))
        self.target.download(self.allocation, out)
        return out


def _hold(buffer: Buffer) -> None:
    """The release of a window's memory (`Device.window`): nothing to give back, but the call holds `buffer`."""


class Device:
    """A place tensors live and kernels run: allocation, transfers and the kernel compiler."""

    name: str
    backend: str
    # whether the device's memory is host memory that the CPU reads at its address: the CPU's, and Triton's
    # interpreter's (torch CPU storage); DLPack shows it as CPU memory
    host_memory: bool
    # dtypes whose contractions (matmul, tensordot) the backend runs through its contraction template,
    # each with the dtype its operands enter the template in (the product accumulates in float32 or wider)
    contraction_dtypes: ClassVar[Mapping[DType, DType]] = {}
    batches = False  # whether `batch` runs several compiled kernels as one call
    # whether the contraction template evaluates its operands into panels before it multiplies (the CPU's): an
    # operand read through a view with a mask (a convolution's padded windows) then costs a mask per element
    # packed, where Triton's implicit GEMM masks a tile's loads; a convolution pads its input into a buffer first
    packs_operands = False
    library_calls = False  # whether the backend runs `kernels.ir.LibraryCall` (LAPACK's factorizations)

    def alloc(self, dtype: DType, size: int) -> Buffer:
        raise NotImplementedError

    def allocator(self, dtype: DType, size: int) -> Callable[[], Buffer]:
        """`alloc` of `dtype` and `size` made ready once, for a caller that allocates the same again and again (a
        cached schedule's launcher, its outputs at each realize): cheaper where the device can make it so."""
        return partial(self.alloc, dtype, size)

    def from_numpy(self, array: np.ndarray, dtype: DType | None = None) -> Buffer:
        """A buffer holding `array`; `dtype` says what it holds where its NumPy dtype does not (bfloat16 bits)."""
        raise NotImplementedError

    def copy_of(self, array: np.ndarray, dtype: DType | None = None) -> Buffer:
        """A buffer holding a copy of `array` (any layout), which later writes to `array` do not reach; `dtype` as
        `from_numpy`'s."""
        return self.from_numpy(np.array(array, copy=True, order="C"), dtype)

    def wrap(self, ptr: int, dtype: DType, size: int, release: Callable[[], None]) -> Buffer:
        """A buffer over `size` elements at `ptr` that lazytensor did not allocate (DLPack's import, which shares
        another library's memory); `release()` runs once no buffer or array uses the memory any more."""
        raise NotImplementedError

    def window(self, buffer: Buffer, offset: int, size: int) -> Buffer:
        """A buffer of `size` elements of `buffer` from element `offset` on, sharing its memory (a slice of a
        realized tensor: a slice taken at another offset is then the same graph, not another kernel); it keeps
        `buffer` alive."""
        raise NotImplementedError

    def copy_from(self, buffer: Buffer) -> Buffer:
        """A copy on this device of a buffer on another one (through host memory)."""
        return self.from_numpy(buffer.numpy(), buffer.dtype)

    def compile(self, kernel: Kernel, changed: frozenset[int] = frozenset()) -> tuple[Callable, bool]:
        """The compiled program for `kernel`, and whether this call compiled it (not a cache hit). `changed`: as
        `compile_all`'s, where it compiles."""
        raise NotImplementedError

    def compile_all(self, kernels: Sequence[Kernel], changed: frozenset[int] = frozenset()) -> list[Kernel]:
        """Compile the kernels not compiled yet (a schedule's, before it runs), side by side where the
        backend can; `compile` then finds them. Returns those it compiled (one of each body). A kernel that
        fails is left to `compile` where it runs, whose error names the op it is for. `changed`: sizes seen
        to change since the program was last scheduled (`Schedule.changed`), which a backend that compiles
        kernels generic over sizes compiles generic at once."""
        compiled = []
        for kernel in kernels:
            with contextlib.suppress(Exception):
                if self.compile(kernel, changed)[1]:
                    compiled.append(kernel)
        return compiled

    def batch(self, calls: Sequence[tuple[Any, Sequence[int], Sequence]], table_size: int) -> Any:
        """Compiled programs, each given with the positions of its buffers in a table of `table_size` buffer
        addresses and its scalar parameters, as one callable `run(table, {k: new params of program k})` that
        runs them all on such a table (where `batches`: a backend that can run kernels as one call)."""
        raise NotImplementedError

    def direct(self, program: Any, buffers: int) -> Callable[..., None] | None:
        """A compiled program's launches on tables of `buffers` buffer addresses, cheaper than its own call, for a
        caller that makes one launch at a time (a cached schedule's launcher, under the realize's lock):
        `call(*addresses, *parameters)`, made once; None where the backend has none for it (then the program's
        own call it is)."""
        return None

    def synchronize(self) -> None:
        """Wait until all work queued on this device has run."""

    def empty_cache(self) -> None:
        """Give the memory this device keeps for reuse back to the system (the memory of live buffers stays)."""

    def describe(self) -> str:
        return f"{self.name} ({self.backend})"

    def __repr__(self) -> str:
        return self.describe()

    @property
    def type(self) -> str:
        """'cpu' or 'cuda' (PyTorch's `torch.device.type`)."""
        return self.name.partition(":")[0]

    @property
    def index(self) -> int | None:
        """The GPU's number; None for the CPU (PyTorch's `torch.device.index`)."""
        return int(self.name.partition(":")[2]) if ":" in self.name else None


class CPUDevice(Device):
    name = "cpu"
    backend = "llvm"
    host_memory = True
    # The template's micro-kernel is float32 and float64: 16-bit operands widen while they are packed.
    contraction_dtypes: ClassVar[Mapping[DType, DType]] = {float32: float32, float64: float64, float16: float32,
                                                           bfloat16: float32}
    batches = True
    packs_operands = True
    library_calls = True  # NumPy's LAPACK, on the buffers' memory

    def __init__(self) -> None:
        self.pool = HostMemoryPool(_default_pool_limit())

    def alloc(self, dtype: DType, size: int) -> Buffer:
        return HostBuffer(self.name, dtype, self.pool.array(to_numpy_dtype(dtype), size))

    def allocator(self, dtype: DType, size: int) -> Callable[[], Buffer]:
        npd = to_numpy_dtype(dtype)
        if size * npd.itemsize >= self.pool.min_bytes:
            return partial(self.alloc, dtype, size)
        name, empty = self.name, np.empty

        def small() -> Buffer:  # below the pool's smallest: no pool, nor its checks
            return HostBuffer(name, dtype, empty(size, npd))
        return small

    def from_numpy(self, array: np.ndarray, dtype: DType | None = None) -> Buffer:
        data = np.ascontiguousarray(array).reshape(-1)
        return HostBuffer(self.name, dtype or to_dtype(data.dtype), data)

    def copy_of(self, array: np.ndarray, dtype: DType | None = None) -> Buffer:
        # Into a block of the pool, as a kernel's output: from 64 KiB on aligned to a cache line (to 2 MiB from
        # 2 MiB), where NumPy's arrays start at 16 bytes and a kernel's 64-byte vector loads would each span two
        # lines (a sum of 8 MiB of float32 ran 1.4x slower on them).
        buffer = self.alloc(dtype or to_dtype(array.dtype), array.size)
        np.copyto(buffer.numpy().reshape(array.shape), array, casting="no")
        return buffer

    def wrap(self, ptr: int, dtype: DType, size: int, release: Callable[[], None]) -> Buffer:
        # As the memory pool's blocks (see HostMemoryPool): the array is made over an owner object that is not
        # an ndarray, so every view of it keeps the owner alive, and `release` runs when the owner dies.
        npd = to_numpy_dtype(dtype)
        owner = (ctypes.c_char * (size * npd.itemsize)).from_address(ptr)
        weakref.finalize(owner, release).atexit = False  # at exit the memory goes with the process
        return HostBuffer(self.name, dtype, np.frombuffer(owner, dtype=npd, count=size))

    def window(self, buffer: Buffer, offset: int, size: int) -> Buffer:
        return HostBuffer(self.name, buffer.dtype, buffer.numpy()[offset:offset + size])  # a view holds its base

    def compile(self, kernel: Kernel, changed: frozenset[int] = frozenset()) -> tuple[Callable, bool]:
        from .kernels.llvm import compile_kernel
        return compile_kernel(kernel)  # `changed` is `compile_all`'s own here, which compiles side by side

    def compile_all(self, kernels: Sequence[Kernel], changed: frozenset[int] = frozenset()) -> list[Kernel]:
        from .kernels.llvm import compile_kernels
        return compile_kernels(kernels, changed)

    def batch(self, calls: Sequence[tuple[Any, Sequence[int], Sequence]], table_size: int) -> Any:
        from .kernels.llvm import Batch
        return Batch(calls, table_size)

    def direct(self, program: Any, buffers: int) -> Callable[..., None] | None:
        return program.direct(buffers)

    def empty_cache(self) -> None:
        self.pool.clear()

    def describe(self) -> str:
        return f"cpu (llvm, {os.cpu_count()} cores)"


class CUDADevice(Device):
    """A cuda device: a GPU, or Triton's interpreter (TRITON_INTERPRET=1); kernels are compiled with Triton."""

    # tl.dot takes 16-bit operands as they are, on the tensor cores
    contraction_dtypes: ClassVar[Mapping[DType, DType]] = {float32: float32, float64: float64, float16: float16,
                                                           bfloat16: bfloat16}

    def __init__(self, name: str, target: Target):
        self.name, self.target = name, target
        self.backend = "triton-interpreter" if target.interpreted else "triton"
        self.host_memory = target.interpreted

    def alloc(self, dtype: DType, size: int) -> Buffer:
        try:
            allocation = self.target.alloc(size * dtype.itemsize)
        except MemoryError:
            raise _out_of_memory("host" if self.target.interpreted else "GPU", size, dtype.itemsize) from None
        return CUDABuffer(self.name, dtype, size, allocation, self.target)

    def from_numpy(self, array: np.ndarray, dtype: DType | None = None) -> Buffer:
        data = np.ascontiguousarray(array).reshape(-1)
        buffer = self.alloc(dtype or to_dtype(data.dtype), data.size)
        self.target.upload(buffer.allocation, data)
        return buffer

    def copy_of(self, array: np.ndarray, dtype: DType | None = None) -> Buffer:
        return self.from_numpy(array, dtype)  # the upload is the copy

    def wrap(self, ptr: int, dtype: DType, size: int, release: Callable[[], None]) -> Buffer:
        from .kernels.triton.targets import Allocation  # a cuda device is open: its backend is imported

        def done() -> None:  # the kernels queued on the memory have read it before its owner takes it back
            self.target.synchronize()
            release()

        return CUDABuffer(self.name, dtype, size, Allocation(ptr, size * dtype.itemsize, done), self.target)

    def window(self, buffer: Buffer, offset: int, size: int) -> Buffer:
        # no synchronization when it goes, unlike `wrap`'s: the memory is `buffer`'s, kept until then, and reused
        # only by kernels queued after every reader of the window on the one stream
        itemsize = buffer.dtype.itemsize
        allocation = self.target.window(buffer.allocation, offset * itemsize, size * itemsize, partial(_hold, buffer))
        return CUDABuffer(self.name, buffer.dtype, size, allocation, self.target)

    def compile(self, kernel: Kernel, changed: frozenset[int] = frozenset()) -> tuple[Callable, bool]:
        from .kernels.triton.runtime import compile_kernel
        return compile_kernel(kernel, self.target, changed=changed)

    def synchronize(self) -> None:
        self.target.synchronize()

    def empty_cache(self) -> None:
        self.target.empty_cache()

    def describe(self) -> str:
        return f"{self.name} ({self.target.describe()})"


_cpu = CPUDevice()
# cuda devices by name and by whether TRITON_INTERPRET was set when they were opened
_cuda: dict[tuple[str, bool], CUDADevice] = {}
_interpreting: Callable[[], bool] | None = None  # the backend's `targets.interpreting`, once a cuda device is open


def canonical(name: str | Device | None) -> str:
    """The canonical device name: 'cpu' or 'cuda:N'. None means the default device (LT_DEVICE, else cpu)."""
    if isinstance(name, Device):
        return name.name
    if name is None:
        name = os.environ.get("LT_DEVICE") or "cpu"
    name = str(name).strip().lower()
    if name == "cuda":
        return "cuda:0"
    if (m := re.fullmatch(r"cuda:(\d+)", name)) is not None:
        return f"cuda:{int(m[1])}"
    return name


def get_device(name: str | Device | None = None) -> Device:
    """The device called `name`; raises DeviceError if it does not exist here, saying why."""
    global _interpreting
    if name == "cpu":  # every launch asks: the common case skips parsing
        return _cpu
    # so does every launch on a GPU, by canonical name (importing the backend again costs as much as the rest)
    if isinstance(name, str) and _interpreting is not None and (hit := _cuda.get((name, _interpreting()))):
        return hit
    key = canonical(name)
    if key == "cpu":
        return _cpu
    if (m := re.fullmatch(r"cuda:(\d+)", key)) is None:
        raise DeviceError(f"unknown device '{key}' (devices are 'cpu' and 'cuda:N'; available here: "
                          f"{', '.join(d.name for d in devices())})")
    from .kernels.triton import targets
    cache_key = (key, targets.interpreting())
    if cache_key not in _cuda:
        try:
            _cuda[cache_key] = CUDADevice(key, targets.open_target(int(m[1])))
        except targets.Unavailable as e:
            raise DeviceError(f"device '{key}' is not available: {e}") from None
        _interpreting = targets.interpreting
    return _cuda[cache_key]


def devices() -> list[Device]:
    """The devices available in this process, each with the backend that compiles for it."""
    from .kernels.triton import targets
    return [_cpu, *(get_device(f"cuda:{i}") for i in range(targets.target_count()))]


def empty_cache() -> None:
    """Give the memory every device opened so far keeps for reuse back to the system, as
    `torch.cuda.empty_cache()` does. The memory of live buffers (and of arrays over it) stays."""
    for device in (_cpu, *_cuda.values()):
        device.empty_cache()


def synchronize(device: str | Device | None = None) -> None:
    """Wait until every kernel and copy queued on `device` (default: the default device) has finished.

    Realizing on a GPU queues its kernels and returns: time GPU work with a `synchronize()` before
    reading the clock, as with `torch.cuda.synchronize()`. Reading data (`numpy()`, `item()`) waits by
    itself. On the CPU kernels run before `realize()` returns, so this returns at once."""
    get_device(device).synchronize()


class _CallableModule(types.ModuleType):
    """This module, which `lt.device` names, called as PyTorch's `torch.device`: `lt.device("cuda")`,
    `lt.device("cuda", 1)`, `lt.device("cpu")` are those devices, which `to` and every `device=` take."""

    def __call__(self, type: str | Device, index: int | None = None) -> Device:
        return get_device(type if index is None else f"{type}:{index}")


sys.modules[__name__].__class__ = _CallableModule
