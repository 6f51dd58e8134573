"""Tensors whose in-place changes reach the tensor they were taken from, as far as lazy values can be views:

- `t.data`: t's value without its autograd history, whose in-place changes rebind t too (PyTorch's
  `p.data.add_(...)` and `p.data[i] = v` update p);
- `x[i]` of a basic index (ints, slices, None, `...`), NumPy's and PyTorch's view: written in place (`x[i][j] = v`,
  `row = x[0]; row += 1`, `for row in x: row[0] = 1`), it writes its new value into x at i too (and on up, where x
  is such a view itself). Only that way: a write to x does not reach a view taken before it, which keeps its value
  (a lazy tensor's value is fixed when it is made; NumPy's and PyTorch's views share memory both ways)."""
from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any

from .graph import hold
from .tensor import Tensor


class _View(Tensor):
    """A tensor whose in-place changes reach another; pickled or copied, a plain tensor of its value."""

    __slots__ = ()

    def __reduce__(self) -> tuple[Any, ...]:
        rebuild, (_, node, requires_grad), state = super().__reduce__()
        return rebuild, (Tensor, node, requires_grad), state


class DataView(_View):
    """`owner.data`: see the module docstring."""

    __slots__ = ("_owner",)

    def __init__(self, owner: Tensor):
        super().__init__(owner.node)
        self._owner = weakref.ref(owner)

    def _rebind_owner(self) -> None:
        if (owner := self._owner()) is not None:
            owner.node = self.node

    def _inplace(self, fn: Callable[[Tensor, Any], Tensor], other: Any, op: str) -> Tensor:
        super()._inplace(fn, other, op)
        self._rebind_owner()
        return self

    def __setitem__(self, index: Any, value: Any) -> None:
        super().__setitem__(index, value)
        self._rebind_owner()


class IndexView(_View):
    """`base[index]` of a basic index: see the module docstring."""

    __slots__ = ("_base", "_index")

    def _rebind(self, out: Tensor) -> None:
        base = self._base
        if base is None or out.shape != self.shape:  # an in-place view op (`squeeze_`): the values stay
            self._base = None
            super()._rebind(out)
            return
        base._check_modifiable("an in-place write to a view")
        super()._rebind(out)
        base[self._index] = self


def index_view(view: Tensor, base: Tensor, index: tuple[Any, ...]) -> IndexView:
    """`view` (`base[index]`, just made) as an IndexView of base."""
    made = IndexView.__new__(IndexView)
    made._node, made.requires_grad, made.grad, made._ctx, made._source = \
        view._node, view.requires_grad, None, view._ctx, None
    made._base, made._index = base, index
    hold(made, view._node)
    return made
