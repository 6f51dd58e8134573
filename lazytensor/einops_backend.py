"""einops' backend for tensors: `einops.rearrange(t, "b c h w -> b (h w) c")`, `reduce`, `repeat`, `einsum`,
`pack`/`unpack` on a lazytensor tensor, as on a NumPy array or a torch tensor.

einops knows a framework by a subclass of its `AbstractBackend` whose `framework_name` module is imported; it
ships them for NumPy, torch, JAX, ... and has no registry a library could add itself to without defining one.
So where einops is installed, importing lazytensor defines `LazytensorBackend` (importing einops, a few
milliseconds); where it is not, nothing happens. Every method is a lazy op: a rearrangement is views, a
`repeat` a broadcast, and they fuse with what comes before and after.
"""
from __future__ import annotations

import importlib.util
from typing import Any

import numpy as np

from . import dtypes

if importlib.util.find_spec("einops") is not None:
    from einops._backends import AbstractBackend

    class LazytensorBackend(AbstractBackend):
        """einops' operations as lazytensor's ops (see the module's doc)."""

        framework_name = "lazytensor"

        def __init__(self) -> None:
            import lazytensor
            self.lt = lazytensor

        def is_appropriate_type(self, tensor: Any) -> bool:
            return isinstance(tensor, self.lt.Tensor)

        def from_numpy(self, x: np.ndarray) -> Any:
            # einops uses it in its tests only; as its torch backend, floats require grad there
            t = self.lt.asarray(x)
            return t.requires_grad_() if t.dtype.is_float else t

        def to_numpy(self, x: Any) -> np.ndarray:
            return x.numpy()

        def arange(self, start: int, stop: int) -> Any:
            return self.lt.arange(start, stop, dtype=dtypes.int64)

        def reduce(self, x: Any, operation: str, axes: tuple[int, ...]) -> Any:
            method = {"min": "amin", "max": "amax"}.get(operation, operation)
            if method not in ("amin", "amax", "sum", "mean", "prod", "any", "all"):
                raise NotImplementedError(f"einops: unknown reduction {operation!r}")
            return getattr(x, method)(axis=tuple(axes))

        def transpose(self, x: Any, axes: tuple[int, ...]) -> Any:
            return x.permute(*axes)

        def stack_on_zeroth_dimension(self, tensors: list) -> Any:
            return self.lt.stack(tensors)

        def add_axis(self, x: Any, new_position: int) -> Any:
            return self.lt.expand_dims(x, axis=new_position)

        def add_axes(self, x: Any, n_axes: int, pos2len: dict[int, int]) -> Any:
            # new axes broadcast (no copy), as torch's backend expands
            for position in sorted(pos2len):
                x = self.add_axis(x, position)
            return x.broadcast_to(tuple(pos2len.get(a, n) for a, n in enumerate(x.shape)))

        def tile(self, x: Any, repeats: tuple[int, ...]) -> Any:
            return self.lt.tile(x, tuple(repeats))

        def concat(self, tensors: list, axis: int) -> Any:
            return self.lt.concat(tensors, axis=axis)

        def is_float_type(self, x: Any) -> bool:
            return x.dtype.is_float

        def einsum(self, pattern: str, *x: Any) -> Any:
            return self.lt.einsum(pattern, *x)
