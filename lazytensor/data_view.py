"""`t.data`: a tensor of t's value, without its autograd history, whose in-place changes rebind t too (PyTorch's
`p.data.add_(...)` and `p.data[i] = v` update p). (A basic index's result writes into what it views the same way:
see `Tensor._rebind`.)"""
from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any

from .tensor import Tensor


class DataView(Tensor):
    """`owner.data`: see the module docstring."""

    __slots__ = ("_owner",)

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled or copied, a plain tensor of its value (nothing it would rebind)."""
        rebuild, (_, node, requires_grad), state = super().__reduce__()
        return rebuild, (Tensor, node, requires_grad), state

    def __init__(self, owner: Tensor):
        super().__init__(owner.node)
        self._owner = weakref.ref(owner)

    def _rebind_owner(self) -> None:
        if (owner := self._owner()) is not None:
            owner._assign(self.node)

    def _inplace(self, fn: Callable[[Tensor, Any], Tensor], other: Any, op: str) -> Tensor:
        super()._inplace(fn, other, op)
        self._rebind_owner()
        return self

    def __setitem__(self, index: Any, value: Any) -> None:
        super().__setitem__(index, value)
        self._rebind_owner()
