"""Where Triton kernels run: a CUDA GPU, or Triton's interpreter on the CPU.

A `Target` owns memory (allocate, copy in, copy out, wait), turns a buffer
address into the argument object Triton's launcher takes, and sets up a launch.
`open_target(i)` gives the target for device cuda:i, or raises `Unavailable`
saying why there is none; nothing here falls back to another target.

With TRITON_INTERPRET=1 the one device, cuda:0, is Triton's interpreter, which
runs kernels with NumPy on the CPU and takes its tensor arguments as torch CPU
tensors (it reads their storage through torch's API). lazytensor itself never
imports torch: whoever wants the interpreter (the test suite) registers a
storage provider with `set_interpreter_storage`.
"""
from __future__ import annotations

import ctypes
import importlib.metadata
import importlib.util
import os
import sys
import weakref
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Any

import numpy as np

from ..dtype import DType
from . import cuda

MIN_TRITON = (3, 6)

StorageProvider = Callable[[int], Any]
_storage_provider: StorageProvider | None = None


class Unavailable(RuntimeError):
    """No Triton target can be opened for the device asked for; the message says why."""


def set_interpreter_storage(provider: StorageProvider | None) -> None:
    """Register what holds memory under TRITON_INTERPRET=1: `provider(nbytes)` returns a contiguous torch CPU
    uint8 tensor of `nbytes` bytes (whose `data_ptr()` is its address), or raises MemoryError where the memory
    is not there. None unregisters it."""
    global _storage_provider
    _storage_provider = provider


def interpreting() -> bool:
    """Whether TRITON_INTERPRET is set, read as Triton reads it."""
    return os.environ.get("TRITON_INTERPRET", "").strip().lower() in ("1", "true", "on", "yes", "y")


class Allocation:
    """`nbytes` of device memory at `ptr`, given back when the Allocation is garbage collected."""

    def __init__(self, ptr: int, nbytes: int, release: Callable[[], None] | None):
        self.ptr, self.nbytes = ptr, nbytes
        if release is not None:
            weakref.finalize(self, release)


class DevicePointer:
    """A pointer argument as Triton's launcher takes one: `data_ptr()` and an element `dtype` it can name."""

    __slots__ = ("dtype", "ptr")

    def __init__(self, ptr: int, dtype: DType):
        self.ptr, self.dtype = ptr, dtype

    def data_ptr(self) -> int:
        return self.ptr


class Target(ABC):
    key: str           # "cuda:0", or "interpreter"
    interpreted: bool  # kernels run in Triton's interpreter: nothing to compile ahead of the launch
    processors: int    # programs of a launch run this many at a time, or more (a GPU's SMs)

    @abstractmethod
    def describe(self) -> str:
        """The backend and hardware, for `lt.devices()`."""

    @abstractmethod
    def alloc(self, nbytes: int) -> Allocation: ...

    @abstractmethod
    def upload(self, dst: Allocation, src: np.ndarray) -> None:
        """Copy a contiguous host array into `dst`."""

    @abstractmethod
    def download(self, src: Allocation, dst: np.ndarray) -> None:
        """Copy `src` into a contiguous host array, after all work queued before."""

    @abstractmethod
    def synchronize(self) -> None:
        """Wait for all work queued on this target."""

    @abstractmethod
    def kernel_arg(self, ptr: int, dtype: DType) -> object:
        """What a kernel takes for the buffer at `ptr`, read as elements of `dtype`."""

    @abstractmethod
    def launching(self) -> AbstractContextManager[None]:
        """The context a launch (or a compile ahead of one) runs in."""

    def window(self, allocation: Allocation, offset: int, nbytes: int, release: Callable[[], None]) -> Allocation:
        """`nbytes` of `allocation`'s memory from byte `offset` on; `release()` runs when the window goes."""
        return Allocation(allocation.ptr + offset, nbytes, release)

    def empty_cache(self) -> None:
        """Give memory kept for reuse back to the driver; a target that keeps none has nothing to do."""

    @property
    def stream(self) -> int:
        """The CUstream handle launches queue on (0: the interpreter's, which has none)."""
        return 0

    def activate(self) -> None:
        """Make the device current on the calling thread, for a launch through a compiled kernel's launcher,
        which takes its stream as an argument (`launching` also answers Triton's questions about the launch)."""


class CudaTarget(Target):
    interpreted = False

    def __init__(self, gpu: cuda.GPU):
        self.gpu = gpu
        self.key = f"cuda:{gpu.index}"
        self.processors = gpu.multiprocessors

    def describe(self) -> str:
        major, minor = self.gpu.capability
        return f"triton, {self.gpu.name}, sm_{major}{minor}, {self.gpu.total_memory / 2**30:.0f} GiB"

    def alloc(self, nbytes: int) -> Allocation:
        if nbytes == 0:
            return Allocation(0, 0, None)
        ptr, size = self.gpu.allocator.allocate(nbytes)
        return Allocation(ptr, nbytes, lambda: self.gpu.allocator.release(ptr, size))

    def upload(self, dst: Allocation, src: np.ndarray) -> None:
        if src.nbytes:
            self.gpu.upload(dst.ptr, src.ctypes.data, src.nbytes)

    def download(self, src: Allocation, dst: np.ndarray) -> None:
        if dst.nbytes:
            self.gpu.download(dst.ctypes.data, src.ptr, dst.nbytes)

    def synchronize(self) -> None:
        self.gpu.synchronize()

    def empty_cache(self) -> None:
        self.gpu.allocator.empty_cache()

    def kernel_arg(self, ptr: int, dtype: DType) -> object:
        return DevicePointer(ptr, dtype)

    @property
    def stream(self) -> int:
        return self.gpu.stream

    def activate(self) -> None:
        self.gpu.activate()

    @contextmanager
    def launching(self) -> Iterator[None]:
        self.gpu.activate()
        token = cuda.launching.set(self.gpu)
        try:
            yield
        finally:
            cuda.launching.reset(token)


class InterpreterTarget(Target):
    """Triton's interpreter: memory is host memory in storage from the registered provider."""

    key = "interpreter"
    interpreted = True
    processors = 1  # it runs the programs of a grid one after the other

    def __init__(self, provider: StorageProvider):
        self.provider = provider
        self.storage: dict[int, Any] = {}  # address -> the storage object the interpreter needs
        self.windows: dict[int, int] = {}  # address inside a storage -> how many windows start there

    def describe(self) -> str:
        return "triton interpreter, on the CPU"

    def alloc(self, nbytes: int) -> Allocation:
        if nbytes == 0:
            return Allocation(0, 0, None)
        if nbytes > sys.maxsize:  # more than an address space holds
            raise MemoryError
        storage = self.provider(nbytes)
        ptr = storage.data_ptr()
        self.storage[ptr] = storage
        return Allocation(ptr, nbytes, lambda: self.storage.pop(ptr))

    def window(self, allocation: Allocation, offset: int, nbytes: int, release: Callable[[], None]) -> Allocation:
        ptr = allocation.ptr + offset
        if ptr in self.storage and ptr not in self.windows:  # a storage's own start: the interpreter reads that
            return Allocation(ptr, nbytes, release)
        self.storage.setdefault(ptr, self.storage[allocation.ptr][offset:])  # the storage's view from there on
        self.windows[ptr] = self.windows.get(ptr, 0) + 1

        def done() -> None:
            if (left := self.windows.pop(ptr) - 1) > 0:
                self.windows[ptr] = left
            else:
                del self.storage[ptr]
            release()
        return Allocation(ptr, nbytes, done)

    def upload(self, dst: Allocation, src: np.ndarray) -> None:
        ctypes.memmove(dst.ptr, src.ctypes.data, src.nbytes)

    def download(self, src: Allocation, dst: np.ndarray) -> None:
        ctypes.memmove(dst.ctypes.data, src.ptr, dst.nbytes)

    def synchronize(self) -> None:
        """The interpreter runs each kernel to completion before the launch returns."""

    def kernel_arg(self, ptr: int, dtype: DType) -> object:
        from triton.runtime.jit import TensorWrapper  # interpreting means triton is in use
        return TensorWrapper(self.storage[ptr], dtype)

    @contextmanager
    def launching(self) -> Iterator[None]:
        # NumPy warns where a GPU silently gives inf, NaN or wraps (and masked lanes compute garbage)
        with np.errstate(all="ignore"):
            yield


def _require_triton() -> None:
    if importlib.util.find_spec("triton") is None:
        raise Unavailable("triton is not installed (pip install 'triton>=3.6')")
    try:
        version = importlib.metadata.version("triton")
    except importlib.metadata.PackageNotFoundError:  # a source build without metadata: its version is unknown
        return
    numbers = tuple(int(part) for part in version.split(".")[:2] if part.isdigit())
    if numbers < MIN_TRITON:
        raise Unavailable(f"lazytensor needs triton>={'.'.join(map(str, MIN_TRITON))}, found triton {version}")


def _require_triton_mode() -> None:
    """Triton decides when it is imported whether its own library (tl.sum, ...) runs interpreted."""
    standard = sys.modules.get("triton.language.standard")
    if standard is not None and (type(standard.sum).__name__ == "InterpretedFunction") != interpreting():
        raise Unavailable(f"triton was imported with TRITON_INTERPRET {'unset' if interpreting() else 'set'}, and "
                          "Triton reads it once, at import: set it before anything imports triton")


def open_target(index: int) -> Target:
    """The target for device cuda:`index`; raises Unavailable with the reason when there is none."""
    _require_triton()
    if interpreting():
        if _storage_provider is None:
            raise Unavailable("TRITON_INTERPRET=1 runs kernels in Triton's interpreter, which needs torch CPU "
                              "tensors to hold memory, and no storage provider is registered (see "
                              "lazytensor.kernels.triton.targets.set_interpreter_storage)")
        if index != 0:
            raise Unavailable("under TRITON_INTERPRET=1 there is one device, cuda:0 (Triton's interpreter)")
        _require_triton_mode()
        return InterpreterTarget(_storage_provider)
    try:
        count = cuda.device_count()
    except cuda.CudaError as e:
        raise Unavailable(str(e)) from None
    if index >= count:
        raise Unavailable(f"this machine has {count} CUDA device{'s' if count != 1 else ''}"
                          + (f" (cuda:0 to cuda:{count - 1})" if count > 1 else " (cuda:0)" if count else ""))
    _require_triton_mode()
    return CudaTarget(cuda.gpu(index))


def target_count() -> int:
    """How many cuda devices `open_target` can open here (0 where none can be)."""
    try:
        open_target(0)
    except Unavailable:
        return 0
    return 1 if interpreting() else cuda.device_count()
