"""Reductions and the ops built from them: sum, mean, max, argmax, var, softmax, cumsum, ...

Every reduction takes `axis` (an int, a tuple, or None for all axes) and
`keepdims`, with PyTorch's `dim` and `keepdim` accepted as aliases. Integer and
bool sums and products accumulate in int64, as in NumPy and PyTorch.
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from .dtypes import DType, bool_, default_float, default_int, to_dtype
from .errors import AxisError, ShapeError
from .graph import Op
from .helpers import prod
from .kernels.dtype import compute_dtype
from .kernels.ir import ReduceOp
from .movement import normalize_axes, normalize_axis

if TYPE_CHECKING:
    from .tensor import Tensor

# Past this length cumsum works in blocks, so its cost grows as n**1.5, not n**2.
CUMSUM_BLOCK = 256


def _pick(axis: Any, dim: Any) -> Any:
    return dim if axis is None else axis


class ReduceOps:
    """Mixed into Tensor."""

    __slots__ = ()

    def _reduce(self: Tensor, op: ReduceOp, axis: Any, keepdims: bool, name: str) -> Tensor:
        """Reduce over `axis`; an axis of size 0 gives the op's identity (0 for sums, False for any, ...)."""
        axes = normalize_axes(axis, self.ndim, name)
        if not axes:
            return self
        kept = tuple(1 if i in axes else n for i, n in enumerate(self.shape))
        out = self._derive(Op.REDUCE, kept, (op, axes))
        return out if keepdims else out.reshape(tuple(n for i, n in enumerate(self.shape) if i not in axes))

    def _extremum(self: Tensor, op: ReduceOp, axis: Any, keepdims: bool, name: str) -> Tensor:
        """max or min over `axis`, which must not be empty: -inf or the dtype's lowest value is no answer
        (any and all reduce bools with the same ops, but False and True are their true identities)."""
        axes = normalize_axes(axis, self.ndim, name)
        if any(self.shape[a] == 0 for a in axes):
            raise ShapeError(f"{name}: cannot reduce over an axis of size 0 (shape {self.shape}, axes {axes}): "
                             "the result has no identity")
        return self._reduce(op, axes, keepdims, name)

    def _shift(self: Tensor, axis: Any, name: str) -> Tensor:
        """The max over `axis` (kept as size 1), which softmax and friends subtract so exp cannot overflow.
        An empty axis has no max and nothing to protect, so 0 stands in for it."""
        axes = normalize_axes(axis, self.ndim, name)
        if any(self.shape[a] == 0 for a in axes):
            kept = tuple(1 if i in axes else n for i, n in enumerate(self.shape))
            return self._const(0, self.dtype, self.device).broadcast_to(kept)
        return self._reduce(ReduceOp.MAX, axes, True, name)

    def _widened(self: Tensor) -> tuple[Tensor, DType]:
        """This tensor in the dtype float reductions accumulate in (float32 for the 16-bit floats and the
        ints), and the dtype of the result (the float's own, float32 for ints). The ops built of several
        steps (mean, var, softmax, ...) compute in the first and round once to the second, at the end: a
        16-bit intermediate would be rounded wherever the scheduler writes it to memory (a mean's sum of
        30000 float16 values overflows before its division)."""
        x = self if self.dtype.is_float else self.cast(default_float)
        return x.cast(compute_dtype(x.dtype)), x.dtype

    def _accumulate_dtype(self: Tensor, dtype: Any) -> Tensor:
        if dtype is not None:
            return self.cast(to_dtype(dtype))
        return self if self.dtype.is_float else self.cast(default_int)

    def sum(self: Tensor, axis: Any = None, keepdims: bool = False, dtype: Any = None, *, dim: Any = None,
            keepdim: bool = False) -> Tensor:
        """Sum over `axis` (all axes by default)."""
        x = self._accumulate_dtype(dtype)
        return x._reduce(ReduceOp.SUM, _pick(axis, dim), keepdims or keepdim, "sum")

    def prod(self: Tensor, axis: Any = None, keepdims: bool = False, dtype: Any = None, *, dim: Any = None,
             keepdim: bool = False) -> Tensor:
        x = self._accumulate_dtype(dtype)
        return x._reduce(ReduceOp.PROD, _pick(axis, dim), keepdims or keepdim, "prod")

    def max(self: Tensor, axis: Any = None, keepdims: bool = False, *, dim: Any = None,
            keepdim: bool = False) -> Tensor:
        """The largest element over `axis` (values only, as NumPy; NaN wins)."""
        return self._extremum(ReduceOp.MAX, _pick(axis, dim), keepdims or keepdim, "max")

    def min(self: Tensor, axis: Any = None, keepdims: bool = False, *, dim: Any = None,
            keepdim: bool = False) -> Tensor:
        return self._extremum(ReduceOp.MIN, _pick(axis, dim), keepdims or keepdim, "min")

    amax = max
    amin = min

    def any(self: Tensor, axis: Any = None, keepdims: bool = False, *, dim: Any = None,
            keepdim: bool = False) -> Tensor:
        return self.cast(bool_)._reduce(ReduceOp.MAX, _pick(axis, dim), keepdims or keepdim, "any")

    def all(self: Tensor, axis: Any = None, keepdims: bool = False, *, dim: Any = None,
            keepdim: bool = False) -> Tensor:
        return self.cast(bool_)._reduce(ReduceOp.MIN, _pick(axis, dim), keepdims or keepdim, "all")

    def _count(self: Tensor, axis: Any, name: str) -> int:
        return prod(self.shape[a] for a in normalize_axes(axis, self.ndim, name))

    def mean(self: Tensor, axis: Any = None, keepdims: bool = False, dtype: Any = None, *, dim: Any = None,
             keepdim: bool = False) -> Tensor:
        """Arithmetic mean; integer input gives float32 (the default float)."""
        axis = _pick(axis, dim)
        x = self.cast(to_dtype(dtype)) if dtype is not None else self
        wide, out = x._widened()
        total = wide.sum(axis, keepdims or keepdim)
        return (total / wide._const(x._count(axis, "mean"), wide.dtype, wide.device)).cast(out)

    def var(self: Tensor, axis: Any = None, keepdims: bool = False, *, correction: float | None = None,
            ddof: float | None = None, dim: Any = None, keepdim: bool = False) -> Tensor:
        """Variance with `correction` (NumPy's `ddof`) subtracted from the count: 0 by default, as
        NumPy and the array API; pass correction=1 for PyTorch's default."""
        out, dtype = self._wide_var(_pick(axis, dim), keepdims or keepdim, correction, ddof, "var")
        return out.cast(dtype)

    def std(self: Tensor, axis: Any = None, keepdims: bool = False, *, correction: float | None = None,
            ddof: float | None = None, dim: Any = None, keepdim: bool = False) -> Tensor:
        """Standard deviation: the square root of `var` with the same arguments. Where it is 0 (a constant
        group) its gradient is 0, as PyTorch's: the square root's slope there is infinite, and the variance's
        is 0, whose product is NaN. The square root reads 1 there instead, so no NaN reaches the gradient."""
        out, dtype = self._wide_var(_pick(axis, dim), keepdims or keepdim, correction, ddof, "std")
        from .tensor import where
        zero = out == 0
        return where(zero, 0.0, where(zero, 1.0, out).sqrt()).cast(dtype)

    def _wide_var(self: Tensor, axis: Any, keepdims: bool, correction: float | None, ddof: float | None,
                  name: str) -> tuple[Tensor, DType]:
        """The variance in the widened dtype (see `_widened`), and the dtype it rounds to."""
        if correction is not None and ddof is not None and correction != ddof:
            raise ValueError(f"{name}: give correction or ddof, not both")
        corr = correction if correction is not None else ddof if ddof is not None else 0
        wide, out = self._widened()
        centered = wide - wide.mean(axis, keepdims=True)
        denom = max(0.0, self._count(axis, name) - corr)
        return (centered * centered).sum(axis, keepdims) / wide._const(denom, wide.dtype, wide.device), out

    def _arg(self: Tensor, op: ReduceOp, axis: int | None, keepdims: bool, name: str) -> Tensor:
        x = self.reshape(-1) if axis is None else self
        a = 0 if axis is None else normalize_axis(axis, self.ndim, name)
        if x.ndim == 0:
            x, a = x.reshape(1), 0
        n = x.shape[a]
        best = x._extremum(op, a, True, name)
        hit = (x == best) | (x != x)  # the first NaN wins, as PyTorch
        positions = x._iota_along(a).broadcast_to(x.shape)
        from .tensor import where
        first = where(hit, positions, n)._reduce(ReduceOp.MIN, a, True, name)
        if axis is None:
            return first.reshape(((1,) * self.ndim) if keepdims else ())
        return first if keepdims else first.squeeze(a)

    def argmax(self: Tensor, axis: int | None = None, keepdims: bool = False, *, dim: int | None = None,
               keepdim: bool = False) -> Tensor:
        """Index of the first largest element (over the flattened tensor when axis is None)."""
        return self._arg(ReduceOp.MAX, _pick(axis, dim), keepdims or keepdim, "argmax")

    def argmin(self: Tensor, axis: int | None = None, keepdims: bool = False, *, dim: int | None = None,
               keepdim: bool = False) -> Tensor:
        return self._arg(ReduceOp.MIN, _pick(axis, dim), keepdims or keepdim, "argmin")

    def _iota_along(self: Tensor, axis: int) -> Tensor:
        """int64 positions 0..n-1 along `axis`, shaped to broadcast against self."""
        from .tensor import Tensor
        n = self.shape[axis]
        iota = Tensor._make(Op.IOTA, default_int, (n,), (), device=self.device)
        return iota.reshape(tuple(n if i == axis else 1 for i in range(self.ndim)))

    def logsumexp(self: Tensor, axis: Any = None, keepdims: bool = False, *, dim: Any = None,
                  keepdim: bool = False) -> Tensor:
        """`log(sum(exp(x)))` without overflow. Its gradient is PyTorch's `exp(x - logsumexp(x))` (softmax):
        through the shifted sum it is `exp(x - shift) / sum`, and with an inf in the group the shift is 0, so
        large finite elements would give inf / inf = NaN, not 0."""
        axis = _pick(axis, dim)
        wide, out = self._widened()
        from .autograd import custom_vjp
        from .tensor import where

        def forward() -> Tensor:
            m = wide._shift(axis, "logsumexp")
            shift = where(m.isinf(), 0.0, m)  # all -inf stays -inf, and an inf gives inf, not inf - inf
            return (wide - shift).exp().sum(axis, keepdims=True).log() + shift

        lse = custom_vjp((wide,), forward, lambda g: (g * (wide - lse).exp(),))
        lse = lse.cast(out)
        return lse if keepdims or keepdim else lse.squeeze(normalize_axes(axis, self.ndim, "logsumexp"))

    def softmax(self: Tensor, axis: int = -1, *, dim: int | None = None) -> Tensor:
        """`exp(x) / sum(exp(x))` along `axis` (the last by default), computed stably."""
        axis = _pick(dim, axis) if dim is not None else axis
        wide, out = self._widened()
        e = (wide - wide._shift(axis, "softmax")).exp()
        return (e / e.sum(axis, keepdims=True)).cast(out)

    def log_softmax(self: Tensor, axis: int = -1, *, dim: int | None = None) -> Tensor:
        """`log(softmax(x))` as `(x - max) - log(sum(exp(x - max)))`. Not `x - logsumexp(x)`: for large x
        that subtracts two large, rounded numbers and loses the small difference."""
        axis = _pick(dim, axis) if dim is not None else axis
        wide, out = self._widened()
        shifted = wide - wide._shift(axis, "log_softmax")
        return (shifted - shifted.exp().sum(axis, keepdims=True).log()).cast(out)

    def cumsum(self: Tensor, axis: int | None = None, dtype: Any = None, *, dim: int | None = None) -> Tensor:
        """Running sum along `axis` (over the flattened tensor when axis is None, as NumPy; a 0-d tensor
        takes axis 0 or -1, as PyTorch). 16-bit floats accumulate in float32, each output rounded once."""
        axis = _pick(axis, dim)
        x = self._accumulate_dtype(dtype)
        if axis is None:
            x, axis = x.reshape(-1), 0
        if x.ndim == 0:  # its running sum is itself, along the one axis PyTorch lets it name
            if not isinstance(axis, int) or axis not in (0, -1):
                raise AxisError(f"cumsum: axis {axis!r} is out of bounds for a 0-d tensor (0 or -1)")
            return x
        a = normalize_axis(axis, x.ndim, "cumsum")
        wide = x.cast(compute_dtype(x.dtype))
        return wide.swapaxes(a, -1)._cumsum_last().swapaxes(a, -1).cast(x.dtype)

    def _cumsum_last(self: Tensor) -> Tensor:
        n = self.shape[-1]
        if n <= CUMSUM_BLOCK:
            # out[..., i] = sum over j <= i of x[..., j]: one reduction under a triangular mask
            from .tensor import where
            positions = self._iota_along(self.ndim - 1)
            i = positions.reshape(*positions.shape, 1)
            j = positions.reshape(*positions.shape[:-1], 1, n)
            below = where(j <= i, self.reshape(*self.shape[:-1], 1, n), 0)
            # _reduce, not sum: sum would widen an int32 (cumsum(dtype=int32)) to int64
            return below._reduce(ReduceOp.SUM, -1, False, "cumsum")
        block = math.isqrt(n - 1) + 1
        blocks = -(-n // block)
        pad = [(0, 0)] * (self.ndim - 1) + [(0, blocks * block - n)]
        tiles = self.pad(pad).reshape(*self.shape[:-1], blocks, block)
        inner = tiles._cumsum_last()
        totals = inner[..., -1]
        # Each block starts from the sum of the blocks before it, summed as such: not as the running
        # total less the block's own, where an inf in the block gives inf - inf and a large block erases
        # the smaller sum before it.
        before = totals[..., :-1]._cumsum_last().pad([(0, 0)] * (self.ndim - 1) + [(1, 0)])
        out = inner + before.unsqueeze(-1)
        return out.reshape(*self.shape[:-1], blocks * block)[..., :n]
