"""PyTorch's spellings of Tensor methods that NumPy and the array API spell otherwise or lack: `t()`, `bmm`,
`movedim`, `tril`/`triu` with `diagonal=`, `diagonal(offset, dim1, dim2)`, `diag`, `masked_fill`, `type`, `cuda`,
the in-place methods (`add_`, `mul_`, `zero_`, `copy_`, `clamp_`, ...) and `.data`.

In place means what it means everywhere in lazytensor: the tensor is rebound to the new value (see
`Tensor._inplace`); nothing writes a buffer another tensor reads. `.data` is the tensor's value without its autograd
history, and in-place methods applied to it rebind the tensor it came from (`p.data.add_(-lr * g)` updates `p`, as
in PyTorch), as does assigning to it (`p.data = new`).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from . import dtypes
from .errors import ShapeError
from .movement import normalize_axis

if TYPE_CHECKING:
    from .autograd import RemovableHandle
    from .tensor import Tensor


class PyTorchOps:
    """The methods of the module docstring, mixed into Tensor."""

    def t(self: Tensor) -> Tensor:
        """The transpose of a tensor of at most 2 dimensions (PyTorch's `t()`; `.mT` for batches)."""
        if self.ndim > 2:
            raise ShapeError(f"t: expects a tensor of at most 2 dimensions, got shape {self.shape} (use .mT or "
                             "transpose(dim0, dim1))")
        return self.permute(*reversed(range(self.ndim)))

    def bmm(self: Tensor, other: Tensor) -> Tensor:
        """Batched matrix product of two 3-d tensors, (b, n, m) @ (b, m, p), without broadcasting (PyTorch's)."""
        if self.ndim != 3 or other.ndim != 3 or self.shape[0] != other.shape[0] or self.shape[2] != other.shape[1]:
            raise ShapeError(f"bmm: expects (b, n, m) and (b, m, p) tensors, got shapes {self.shape} and {other.shape}")
        return self @ other

    def movedim(self: Tensor, source: int | tuple[int, ...], destination: int | tuple[int, ...]) -> Tensor:
        """PyTorch's name of `moveaxis`."""
        return self.moveaxis(source, destination)

    def tril(self: Tensor, diagonal: int = 0) -> Tensor:
        """The lower triangle of each matrix in the last two axes, from `diagonal` down; zeros above."""
        from .creation import tril
        return tril(self, k=diagonal)

    def triu(self: Tensor, diagonal: int = 0) -> Tensor:
        """The upper triangle of each matrix in the last two axes, from `diagonal` up; zeros below."""
        from .creation import triu
        return triu(self, k=diagonal)

    def diagonal(self: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
        """The `offset`-th diagonal of the matrices in axes `dim1` and `dim2`, as the last axis (PyTorch's;
        `lt.linalg.diagonal` takes the last two axes). A view: no data moves."""
        from .linalg import diagonal
        a, b = normalize_axis(dim1, self.ndim, "diagonal"), normalize_axis(dim2, self.ndim, "diagonal")
        if a == b:
            raise ShapeError(f"diagonal: dim1 and dim2 are the same axis ({dim1}, {dim2})")
        return diagonal(self.moveaxis((a, b), (-2, -1)), offset=offset)

    def diag(self: Tensor, diagonal: int = 0) -> Tensor:
        """A 1-d tensor as the `diagonal`-th diagonal of a square matrix (zeros elsewhere); the `diagonal`-th
        diagonal of a 2-d tensor (PyTorch's and NumPy's `diag`)."""
        from .creation import arange
        from .tensor import where
        if self.ndim == 2:
            return self.diagonal(diagonal)
        if self.ndim != 1:
            raise ShapeError(f"diag: expects a 1-d or 2-d tensor, got shape {self.shape}")
        n = self.shape[0] + abs(diagonal)
        index = arange(n, device=self.device)
        on = (index.reshape(1, n) - index.reshape(n, 1)) == diagonal
        if diagonal >= 0:  # row i holds v[i]
            values = self.pad([(0, diagonal)]).reshape(n, 1)
        else:  # column j holds v[j]
            values = self.pad([(0, -diagonal)]).reshape(1, n)
        return where(on, values, 0).cast(self.dtype)

    def masked_fill(self: Tensor, mask: Any, value: Any) -> Tensor:
        """`value` where `mask` holds, this tensor elsewhere (mask broadcast to this tensor's shape)."""
        from .tensor import broadcast_shapes, where
        mask = mask if isinstance(mask, type(self)) else self._like(mask)
        if mask.dtype != dtypes.bool_:
            raise TypeError(f"masked_fill: the mask must be bool, got {mask.dtype.name}")
        if mask.ndim > self.ndim or broadcast_shapes(mask.shape, self.shape, op="masked_fill") != self.shape:
            raise ShapeError(f"masked_fill: a mask of shape {mask.shape} does not broadcast to {self.shape}")
        fill = value.cast(self.dtype) if isinstance(value, type(self)) else value
        if isinstance(fill, type(self)) and fill.ndim:
            raise ShapeError(f"masked_fill: the value must be a scalar or 0-d tensor, got shape {fill.shape}")
        return where(mask, fill, self).cast(self.dtype)

    def repeat_interleave(self: Tensor, repeats: Any, dim: int | None = None, *,
                          output_size: int | None = None) -> Tensor:
        """Each element repeated `repeats` times in a row along `dim` (the flattened tensor where None), or a
        count per element: PyTorch's repeat_interleave, NumPy's `repeat` (`lt.repeat`). With counts, the
        length is their sum, read first unless `output_size` gives it."""
        from .movement import repeat
        out = repeat(self, repeats, dim)
        if output_size is not None and out.shape[0 if dim is None else dim] != output_size:
            raise ShapeError(f"repeat_interleave: output_size={output_size}, but the repeats sum to "
                             f"{out.shape[0 if dim is None else dim]}")
        return out

    def masked_select(self: Tensor, mask: Any) -> Tensor:
        """The entries where `mask` (broadcast with this tensor) holds, as a 1-d tensor (its length depends on
        the data, which is read)."""
        from .tensor import broadcast_shapes
        mask = mask if isinstance(mask, type(self)) else self._like(mask)
        shape = broadcast_shapes(self.shape, mask.shape, op="masked_select")
        return self.broadcast_to(shape)[mask.broadcast_to(shape)]

    def type(self: Tensor, dtype: Any = None) -> Any:
        """This tensor cast to `dtype`; with none, its dtype's name (`'lazytensor.float32'`)."""
        return f"lazytensor.{self.dtype.name}" if dtype is None else self.cast(dtype)

    def cuda(self: Tensor, device: Any = None) -> Tensor:
        """This tensor on a GPU (`cuda`, or `cuda:N` for an int `device`)."""
        return self.to(f"cuda:{device}" if isinstance(device, int) else device or "cuda")

    # ---- in place -----------------------------------------------------------------------------------------

    def add_(self: Tensor, other: Any, *, alpha: Any = 1) -> Tensor:
        return self._inplace(lambda a, b: a + (b if alpha == 1 else b * alpha), other, "add_")

    def sub_(self: Tensor, other: Any, *, alpha: Any = 1) -> Tensor:
        return self._inplace(lambda a, b: a - (b if alpha == 1 else b * alpha), other, "sub_")

    def mul_(self: Tensor, other: Any) -> Tensor:
        return self._inplace(lambda a, b: a * b, other, "mul_")

    def div_(self: Tensor, other: Any) -> Tensor:
        return self._inplace(lambda a, b: a / b, other, "div_")

    def pow_(self: Tensor, other: Any) -> Tensor:
        return self._inplace(lambda a, b: a ** b, other, "pow_")

    def neg_(self: Tensor) -> Tensor:
        return self._inplace(lambda a, _: -a, None, "neg_")

    def addcmul_(self: Tensor, t1: Any, t2: Any, *, value: Any = 1) -> Tensor:
        return self._inplace(lambda a, _: a + t1 * t2 * value, None, "addcmul_")

    def addcdiv_(self: Tensor, t1: Any, t2: Any, *, value: Any = 1) -> Tensor:
        return self._inplace(lambda a, _: a + t1 / t2 * value, None, "addcdiv_")

    def clamp_(self: Tensor, min: Any = None, max: Any = None) -> Tensor:
        return self._inplace(lambda a, _: a.clip(min, max), None, "clamp_")

    clip_ = clamp_

    def fill_(self: Tensor, value: Any) -> Tensor:
        from .creation import full_like
        return self._inplace(lambda a, v: v.cast(a.dtype).broadcast_to(a.shape) if isinstance(v, type(self))
                             else full_like(a, v), value, "fill_")

    def zero_(self: Tensor) -> Tensor:
        return self.fill_(0)

    def fill_diagonal_(self: Tensor, fill_value: Any, wrap: bool = False) -> Tensor:
        """`fill_value` on the main diagonal (the elements whose indices are all equal) of a 2-d tensor or
        one whose sides are all equal; with `wrap`, a tall matrix's diagonal restarts every `columns + 1` rows, as
        PyTorch's and NumPy's."""
        from .creation import arange
        from .tensor import where
        if self.ndim < 2 or self.ndim > 2 and len(set(self.shape)) != 1:
            raise ShapeError(f"fill_diagonal_: needs a 2-d tensor or one whose sides are all equal, got shape "
                             f"{self.shape}")
        rows, cols = self.shape[0], self.shape[1]
        i = arange(rows, device=self.device).reshape(rows, *([1] * (self.ndim - 1)))
        if wrap and self.ndim == 2:
            i = i % (cols + 1)
        on = i == arange(cols, device=self.device).reshape(cols, *([1] * (self.ndim - 2)))
        for axis in range(2, self.ndim):
            on = on & (i == arange(self.shape[axis], device=self.device).reshape(-1, *([1] * (self.ndim - 1 - axis))))
        return self._inplace(lambda a, _: where(on, fill_value, a).cast(a.dtype), None, "fill_diagonal_")

    def copy_(self: Tensor, src: Any) -> Tensor:
        """Take `src`'s values (broadcast to this tensor's shape, cast to its dtype, moved to its device)."""
        def copied(a: Tensor, s: Any) -> Tensor:
            s = s if isinstance(s, type(self)) else a._like(s)
            return s.to(a.device).cast(a.dtype).broadcast_to(a.shape)
        return self._inplace(copied, src, "copy_")

    # ---- autograd hooks ----------------------------------------------------------------------------------

    def register_hook(self: Tensor, hook: Callable[[Tensor], Tensor | None]) -> RemovableHandle:
        """Run `hook(gradient)` each time the gradient with respect to this tensor is computed; what it returns,
        if not None, replaces the gradient (passed on, and kept in `.grad` of a leaf). A handle whose
        `remove()` unregisters it. PyTorch's."""
        from .autograd import register_hook
        return register_hook(self, hook)

    def retain_grad(self: Tensor) -> None:
        """Keep this non-leaf tensor's gradient in `.grad` when `backward` computes it (a leaf's is kept)."""
        from .autograd import retain_grad
        retain_grad(self)

    @property
    def is_leaf(self: Tensor) -> bool:
        """Whether no recorded op made this tensor: it requires no grad, or it was made to require grad."""
        return self._ctx is None

    # ---- .data ----------------------------------------------------------------------------------------------

    @property
    def data(self: Tensor) -> Tensor:
        """This tensor's value without autograd history; in-place methods on it rebind this tensor."""
        from .data_view import DataView  # at call time: it subclasses Tensor, whose module imports this one
        return DataView(self)

    @data.setter
    def data(self: Tensor, value: Tensor) -> None:
        if value.shape != self.shape:
            raise ShapeError(f"data: cannot set a tensor of shape {self.shape} to one of shape {value.shape}")
        self.node = value.node


# PyTorch's in-place twins of out-of-place methods: `x.exp_()` rebinds x to `x.exp()` (see the module's doc)
IN_PLACE_OF = ("abs", "exp", "expm1", "log", "log1p", "log2", "sqrt", "rsqrt", "square", "sin", "cos", "tan", "tanh",
               "sigmoid", "relu", "floor", "ceil", "round", "trunc", "frac", "sign", "reciprocal", "clamp_min",
               "clamp_max", "masked_fill", "masked_scatter", "scatter", "scatter_add", "scatter_reduce", "index_add",
               "index_fill", "index_copy", "index_put", "lerp", "fmod", "remainder", "nan_to_num", "tril", "triu",
               "logical_not", "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not", "hypot",
               "atan2", "copysign", "erf", "exp2", "logit", "xlogy", "cumsum", "cumprod")


def _in_place(name: str) -> Callable[..., Tensor]:
    def method(self: Tensor, *args: Any, **kwargs: Any) -> Tensor:
        return self._inplace(lambda a, _: getattr(a, name)(*args, **kwargs), None, f"{name}_")
    method.__name__ = method.__qualname__ = f"{name}_"
    method.__doc__ = f"`{name}` in place: this tensor rebound to `self.{name}(...)` (PyTorch's `{name}_`)."
    return method


def add_in_place_methods(cls: type) -> None:
    """Give `cls` (Tensor) the in-place twin of each method of `IN_PLACE_OF` it has and that has none yet."""
    for name in IN_PLACE_OF:
        if hasattr(cls, name) and not hasattr(cls, f"{name}_"):
            setattr(cls, f"{name}_", _in_place(name))
