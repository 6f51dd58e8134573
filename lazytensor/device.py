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
"""
from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING, Callable

import numpy as np

from .dtypes import DType, to_dtype, to_numpy_dtype
from .errors import DeviceError

if TYPE_CHECKING:
    from .kernels.ir import Kernel
    from .kernels.triton.targets import Allocation, Target


class Buffer:
    """`size` elements of `dtype` on `device`, contiguous, at address `ptr`."""

    def __init__(self, device: str, dtype: DType, size: int, ptr: int):
        # ptr is read once: NumPy's ctypes lookup costs microseconds per launch
        self.device, self.dtype, self.size, self.ptr = device, dtype, size, ptr

    def numpy(self) -> np.ndarray:
        """The data as a flat host array."""
        raise NotImplementedError


class HostBuffer(Buffer):
    """A buffer in host memory, held by a NumPy array."""

    def __init__(self, device: str, dtype: DType, data: np.ndarray):
        super().__init__(device, dtype, data.size, data.ctypes.data)
        self.data = data

    def numpy(self) -> np.ndarray:
        """The array itself: no copy."""
        return self.data


class CUDABuffer(Buffer):
    """A buffer in a cuda device's memory; its memory is reused once the buffer is garbage collected."""

    def __init__(self, device: str, dtype: DType, size: int, allocation: Allocation, target: Target):
        super().__init__(device, dtype, size, allocation.ptr)
        self.allocation, self.target = allocation, target

    def numpy(self) -> np.ndarray:
        """A copy in host memory, made after all work queued on the device."""
        out = np.empty(self.size, dtype=to_numpy_dtype(self.dtype))
        self.target.download(self.allocation, out)
        return out


class Device:
    """A place tensors live and kernels run: allocation, transfers and the kernel compiler."""

    name: str
    backend: str

    def alloc(self, dtype: DType, size: int) -> Buffer:
        raise NotImplementedError

    def from_numpy(self, array: np.ndarray) -> Buffer:
        raise NotImplementedError

    def copy_from(self, buffer: Buffer) -> Buffer:
        """A copy on this device of a buffer on another one (through host memory)."""
        return self.from_numpy(buffer.numpy())

    def compile(self, kernel: Kernel) -> tuple[Callable, bool]:
        """The compiled program for `kernel`, and whether this call compiled it (not a cache hit)."""
        raise NotImplementedError

    def synchronize(self) -> None:
        """Wait until all work queued on this device has run."""

    def describe(self) -> str:
        return f"{self.name} ({self.backend})"

    def __repr__(self) -> str:
        return self.describe()


class CPUDevice(Device):
    name = "cpu"
    backend = "llvm"

    def alloc(self, dtype: DType, size: int) -> Buffer:
        return HostBuffer(self.name, dtype, np.empty(size, dtype=to_numpy_dtype(dtype)))

    def from_numpy(self, array: np.ndarray) -> Buffer:
        data = np.ascontiguousarray(array).reshape(-1)
        return HostBuffer(self.name, to_dtype(data.dtype), data)

    def compile(self, kernel: Kernel) -> tuple[Callable, bool]:
        from .kernels.llvm import compile_kernel
        return compile_kernel(kernel)

    def describe(self) -> str:
        return f"cpu (llvm, {os.cpu_count()} cores)"


class CUDADevice(Device):
    """A cuda device: a GPU, or Triton's interpreter (TRITON_INTERPRET=1); kernels are compiled with Triton."""

    def __init__(self, name: str, target: Target):
        self.name, self.target = name, target
        self.backend = "triton-interpreter" if target.interpreted else "triton"

    def alloc(self, dtype: DType, size: int) -> Buffer:
        return CUDABuffer(self.name, dtype, size, self.target.alloc(size * dtype.itemsize), self.target)

    def from_numpy(self, array: np.ndarray) -> Buffer:
        data = np.ascontiguousarray(array).reshape(-1)
        buffer = self.alloc(to_dtype(data.dtype), data.size)
        self.target.upload(buffer.allocation, data)
        return buffer

    def compile(self, kernel: Kernel) -> tuple[Callable, bool]:
        from .kernels.triton.runtime import compile_kernel
        return compile_kernel(kernel, self.target)

    def synchronize(self) -> None:
        self.target.synchronize()

    def describe(self) -> str:
        return f"{self.name} ({self.target.describe()})"


_cpu = CPUDevice()
# cuda devices by name and by whether TRITON_INTERPRET was set when they were opened
_cuda: dict[tuple[str, bool], CUDADevice] = {}


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
    return _cuda[cache_key]


def devices() -> list[Device]:
    """The devices available in this process, each with the backend that compiles for it."""
    from .kernels.triton import targets
    return [_cpu, *(get_device(f"cuda:{i}") for i in range(targets.target_count()))]
