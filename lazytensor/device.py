"""Devices and the buffers that live on them.

A tensor lives on exactly one device. The CPU device keeps data in NumPy
arrays and compiles kernels with the LLVM backend. Nothing falls back to
another device: asking for one that is not available raises `DeviceError`.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Callable

import numpy as np

from .dtypes import DType, to_dtype, to_numpy_dtype
from .errors import DeviceError


@dataclass(eq=False)
class Buffer:
    """`size` elements of `dtype` on `device`, contiguous."""

    device: str
    dtype: DType
    size: int
    data: np.ndarray
    ptr: int = 0  # the data's address, read once: NumPy's ctypes lookup costs microseconds per launch

    def __post_init__(self) -> None:
        self.ptr = self.data.ctypes.data

    def numpy(self) -> np.ndarray:
        return self.data


class Device:
    """A place tensors live and kernels run: allocation, transfers and the kernel compiler."""

    name: str
    backend: str

    def alloc(self, dtype: DType, size: int) -> Buffer:
        raise NotImplementedError

    def from_numpy(self, array: np.ndarray) -> Buffer:
        raise NotImplementedError

    def compile(self, kernel) -> tuple[Callable, bool]:
        """The compiled program for `kernel`, and whether this call compiled it (not a cache hit)."""
        raise NotImplementedError

    def describe(self) -> str:
        return f"{self.name} ({self.backend})"

    def __repr__(self) -> str:
        return self.describe()


class CPUDevice(Device):
    name = "cpu"
    backend = "llvm"

    def alloc(self, dtype: DType, size: int) -> Buffer:
        return Buffer(self.name, dtype, size, np.empty(size, dtype=to_numpy_dtype(dtype)))

    def from_numpy(self, array: np.ndarray) -> Buffer:
        data = np.ascontiguousarray(array).reshape(-1)
        return Buffer(self.name, to_dtype(data.dtype), data.size, data)

    def compile(self, kernel):
        from .kernels.llvm import compile_kernel
        return compile_kernel(kernel)

    def describe(self) -> str:
        return f"cpu (llvm, {os.cpu_count()} cores)"


_devices: dict[str, Device] = {"cpu": CPUDevice()}


def canonical(name: str | Device | None) -> str:
    """The canonical device name: 'cpu' or 'cuda:N'. None means the default device (LT_DEVICE, else cpu)."""
    if isinstance(name, Device):
        return name.name
    if name is None:
        name = os.environ.get("LT_DEVICE", "cpu")
    name = str(name).strip().lower()
    if name == "cuda":
        name = "cuda:0"
    return name


def get_device(name: str | Device | None = None) -> Device:
    key = canonical(name)
    if key in _devices:
        return _devices[key]
    if key.startswith("cuda"):
        raise DeviceError(f"device '{key}' is not available: lazytensor's CUDA backend is not installed here")
    raise DeviceError(f"unknown device '{key}' (available: {', '.join(_devices)})")


def devices() -> list[Device]:
    """The devices available in this process, each with the backend that compiles for it."""
    return list(_devices.values())
