"""`lt.cuda`: what PyTorch programs ask `torch.cuda` before they choose a device
(`device = "cuda" if lt.cuda.is_available() else "cpu"`), and the calls they make of it. A cuda device is a GPU that
the Triton backend compiles for, or Triton's interpreter under TRITON_INTERPRET=1 (one device, cuda:0)."""
from __future__ import annotations

from . import device as _device
from . import random as _random
from .kernels.triton import targets as _targets


def device_count() -> int:
    """How many cuda devices this process can use (0 where triton or a GPU is missing)."""
    return _targets.target_count()


def is_available() -> bool:
    """Whether there is a cuda device to put tensors on."""
    return device_count() > 0


def current_device() -> int:
    """The number of the default cuda device: the default device's (LT_DEVICE) where it is a GPU, else 0."""
    return _device.get_device().index or 0


def get_device_name(device: int | str | _device.Device | None = None) -> str:
    """What the cuda device is (the GPU's name and architecture, or Triton's interpreter)."""
    return _cuda(device).target.describe()


def synchronize(device: int | str | _device.Device | None = None) -> None:
    """Wait for the kernels queued on the cuda device (`lt.synchronize`)."""
    _cuda(device).synchronize()


def _cuda(device: int | str | _device.Device | None) -> _device.Device:
    """The cuda device PyTorch's functions mean: by number, by name, or the current one."""
    return _device.get_device(f"cuda:{device}" if isinstance(device, int) else device or f"cuda:{current_device()}")


def empty_cache() -> None:
    """Give the memory kept for reuse back (`lt.empty_cache`, every device's)."""
    _device.empty_cache()


def manual_seed(seed: int) -> None:
    """Seed the random stream: lazytensor's draws are the same bits on every device, so this is
    `lt.manual_seed` (PyTorch's `torch.cuda.manual_seed`)."""
    _random.manual_seed(seed)


manual_seed_all = manual_seed

__all__ = ["current_device", "device_count", "empty_cache", "get_device_name", "is_available", "manual_seed",
           "manual_seed_all", "synchronize"]
