"""Reductions and the ops built from them: sum, mean, max, argmax, var, softmax, cumsum, ...

Every reduction takes `axis` (an int, a tuple, or None for all axes) and
`keepdims`, with PyTorch's `dim` and `keepdim` accepted as aliases. Integer and
bool sums and products accumulate in int64, as in NumPy and PyTorch, and
unsigned ones in uint64, as NumPy's and the array API's (PyTorch's int64 for
uint8 holds the same values; the standard asks for the unsigned dtype).
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from .autograd import is_grad_enabled
from .dtypes import DType, bool_, default_int, float32, float64, get_default_dtype, to_dtype, uint8, uint64
from .errors import AxisError, ShapeError
from .graph import Op, uniform_axes
from .helpers import prod
from .kernels.dtype import compute_dtype
from .kernels.ir import ReduceOp
from .movement import _pieces, concat, normalize_axes, normalize_axis

# Read by every reduction: an enum's member, read on its class, costs a call into Python on 3.11
_REDUCE, _RESHAPE = Op.REDUCE, Op.RESHAPE

if TYPE_CHECKING:
    from .tensor import Tensor

# Past this length a running fold written in ops (a product a gradient flows through, logcumsumexp) works in blocks,
# so its cost grows as n**1.5, not n**2.
CUMSUM_BLOCK = 256


def _pick(axis: Any, dim: Any) -> Any:
    return dim if axis is None else axis


def _keepdims_or_dtype(keepdims: Any, dtype: Any, name: str) -> tuple[bool, Any]:
    """(keepdims, dtype) of a reduction whose third positional argument is PyTorch's `keepdim` (a bool) or
    NumPy's `dtype` (`x.sum(0, np.float64)`): a dtype there is NumPy's."""
    if not isinstance(keepdims, (DType, np.dtype, type, str)):
        return bool(keepdims), dtype
    if dtype is not None:
        raise TypeError(f"{name}: got a dtype both as the third argument ({keepdims}) and as dtype= ({dtype})")
    return False, keepdims


def _unbiased(correction: float | None, unbiased: bool | None, name: str) -> float | None:
    """The correction PyTorch's older `unbiased=` flag asks for (1 or 0)."""
    if unbiased is None:
        return correction
    if correction is not None and correction != int(unbiased):
        raise ValueError(f"{name}: give correction or unbiased, not both")
    return int(unbiased)


class MinMax(NamedTuple):
    """`max(dim=)` / `min(dim=)`: PyTorch's pair of the values and the indices where they are."""

    values: Tensor
    indices: Tensor


class ReduceOps:  # every Tensor is one (and only tensors): `isinstance(x, ReduceOps)` asks for a tensor of any subclass
    """Mixed into Tensor."""

    __slots__ = ()

    def _reduce(self: Tensor, op: ReduceOp, axis: Any, keepdims: bool, name: str) -> Tensor:
        """Reduce over `axis`; an axis of size 0 gives the op's identity (0 for sums, False for any, ...). Along
        the axes it keeps where every element is the same (`graph.uniform_axes`) one slice is reduced, unless a
        gradient is recorded through it."""
        axes = normalize_axes(axis, self.ndim, name)
        if not axes:
            return self
        kept = tuple(1 if i in axes else n for i, n in enumerate(self.shape))
        # only where no gradient is recorded through it: a leaf that requires grad and holds one value everywhere
        # (jvp's zero cotangent) has elements that vary apart, and one slice would take its whole gradient
        if not (self.requires_grad and is_grad_enabled()) and (flat := uniform_axes(self._node).difference(axes)):
            # the same result all along these axes: one slice reduced, broadcast (a gradient of ones times an
            # expanded operand, `(x @ w).sum()`'s, was reduced again for every row of x: 347 -> 1 ms at 4096x1024 @
            # 1024x1024), written by a kernel of its own (read through the broadcast, it was computed in the
            # reader's outer loop, one element at a time: w's gradient, x's column sums, 34 -> 0.4 ms)
            one = self._shrink([(0, 1 if i in flat else n, 1) for i, n in enumerate(self.shape)])
            out = one._derive(_REDUCE, tuple(1 if i in flat else n for i, n in enumerate(kept)), (op, axes))
            out = out.contiguous().broadcast_to(kept)
        else:
            out = self._derive(_REDUCE, kept, (op, axes))
        if keepdims:
            return out
        dropped = tuple(n for i, n in enumerate(self.shape) if i not in axes)
        return out._derive(_RESHAPE, dropped, dropped)  # a shape of the same elements: reshape's checks hold

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
        x = self if self.dtype.is_float else self.cast(get_default_dtype())
        return x.cast(compute_dtype(x.dtype)), x.dtype

    def _accumulate_dtype(self: Tensor, dtype: Any) -> Tensor:
        """This tensor in the dtype its sums and products accumulate in: `dtype` if given, else a float's own,
        int64 for the bools and signed integers, uint64 for the unsigned (see the module docstring)."""
        if dtype is not None:
            return self.cast(to_dtype(dtype))
        if self.dtype.is_float:
            return self
        return self.cast(uint64 if self.dtype.kind == "u" else default_int)

    def sum(self: Tensor, axis: Any = None, keepdims: bool = False, dtype: Any = None, *, dim: Any = None,
            keepdim: bool = False) -> Tensor:
        """Sum over `axis` (all axes by default)."""
        keepdims, dtype = _keepdims_or_dtype(keepdims, dtype, "sum")
        x = self._accumulate_dtype(dtype)
        return x._reduce(ReduceOp.SUM, _pick(axis, dim), keepdims or keepdim, "sum")

    def prod(self: Tensor, axis: Any = None, keepdims: bool = False, dtype: Any = None, *, dim: Any = None,
             keepdim: bool = False) -> Tensor:
        keepdims, dtype = _keepdims_or_dtype(keepdims, dtype, "prod")
        x = self._accumulate_dtype(dtype)
        return x._reduce(ReduceOp.PROD, _pick(axis, dim), keepdims or keepdim, "prod")

    def max(self: Tensor, axis: Any = None, keepdims: bool = False, *, dim: Any = None,
            keepdim: bool | None = None) -> Tensor | MinMax:
        """The largest element over `axis` (values only, as NumPy; NaN wins). With PyTorch's spellings, `dim=`
        instead of the axis or `keepdim=` beside one axis (`output.max(1, keepdim=True)[1]`), PyTorch's result:
        `(values, indices)`, the indices those of the first largest (`argmax`). A tensor in place of the axis is
        PyTorch's `max(input, other)`: the elementwise `maximum`."""
        return self._min_max(ReduceOp.MAX, axis, keepdims, dim, keepdim, "max")

    def min(self: Tensor, axis: Any = None, keepdims: bool = False, *, dim: Any = None,
            keepdim: bool | None = None) -> Tensor | MinMax:
        """The smallest element over `axis`; with `dim=` or `keepdim=`, `(values, indices)` (see `max`)."""
        return self._min_max(ReduceOp.MIN, axis, keepdims, dim, keepdim, "min")

    def _min_max(self: Tensor, op: ReduceOp, axis: Any, keepdims: bool, dim: Any, keepdim: bool | None,
                 name: str) -> Tensor | MinMax:
        if isinstance(axis, ReduceOps):  # PyTorch's max(input, other): the elementwise extremum
            return self.maximum(axis) if op is ReduceOp.MAX else self.minimum(axis)
        values = self._extremum(op, _pick(axis, dim), keepdims or bool(keepdim), name)
        if dim is None and (keepdim is None or not isinstance(axis, int)):
            return values
        dim = axis if dim is None else dim
        keepdim = bool(keepdim)
        if not isinstance(dim, int):
            raise TypeError(f"{name}: dim= (PyTorch's spelling, which returns values and indices) takes one axis, "
                            f"got {dim!r}; use axis= for several")
        arg = self.argmax if op is ReduceOp.MAX else self.argmin
        return MinMax(values, arg(dim, keepdims or keepdim))

    def amax(self: Tensor, axis: Any = None, keepdims: bool = False, *, dim: Any = None,
             keepdim: bool = False) -> Tensor:
        """The largest element over `axis` (values only, with `dim=` too, as PyTorch's amax)."""
        return self._extremum(ReduceOp.MAX, _pick(axis, dim), keepdims or keepdim, "amax")

    def amin(self: Tensor, axis: Any = None, keepdims: bool = False, *, dim: Any = None,
             keepdim: bool = False) -> Tensor:
        return self._extremum(ReduceOp.MIN, _pick(axis, dim), keepdims or keepdim, "amin")

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
        keepdims, dtype = _keepdims_or_dtype(keepdims, dtype, "mean")
        axis = _pick(axis, dim)
        x = self.cast(to_dtype(dtype)) if dtype is not None else self
        wide, result_dtype = x._widened()
        total = wide.sum(axis, keepdims or keepdim)
        return (total / wide._const(x._count(axis, "mean"), wide.dtype, wide.device)).cast(result_dtype)

    def var(self: Tensor, axis: Any = None, keepdims: bool = False, *, correction: float | None = None,
            ddof: float | None = None, dim: Any = None, keepdim: bool = False, dtype: Any = None,
            unbiased: bool | None = None) -> Tensor:
        """Variance with `correction` (NumPy's `ddof`) subtracted from the count: 0 by default, as
        NumPy and the array API; pass correction=1 (or PyTorch's older `unbiased=True`) for PyTorch's default.
        `dtype` casts the input first."""
        x = self.cast(to_dtype(dtype)) if dtype is not None else self
        correction = _unbiased(correction, unbiased, "var")
        variance, result_dtype = x._wide_var(_pick(axis, dim), keepdims or keepdim, correction, ddof, "var")
        return variance.cast(result_dtype)

    def std(self: Tensor, axis: Any = None, keepdims: bool = False, *, correction: float | None = None,
            ddof: float | None = None, dim: Any = None, keepdim: bool = False, dtype: Any = None,
            unbiased: bool | None = None) -> Tensor:
        """Standard deviation: the square root of `var` with the same arguments. Where it is 0 (a constant
        group) its gradient is 0, as PyTorch's: the square root's slope there is infinite, and the variance's
        is 0, whose product is NaN. The square root reads 1 there instead, so no NaN reaches the gradient."""
        x = self.cast(to_dtype(dtype)) if dtype is not None else self
        correction = _unbiased(correction, unbiased, "std")
        variance, result_dtype = x._wide_var(_pick(axis, dim), keepdims or keepdim, correction, ddof, "std")
        from .tensor import where
        zero = variance == 0
        return where(zero, 0.0, where(zero, 1.0, variance).sqrt()).cast(result_dtype)

    def var_mean(self: Tensor, axis: Any = None, keepdims: bool = False, *, correction: float | None = None,
                 ddof: float | None = None, dim: Any = None, keepdim: bool = False, dtype: Any = None,
                 unbiased: bool | None = None) -> tuple[Tensor, Tensor]:
        """`(var, mean)` over the same axes (PyTorch's `var_mean`). The correction defaults to 0, as `var`'s;
        pass correction=1 (or `unbiased=True`) for PyTorch's default."""
        return (self.var(axis, keepdims, correction=correction, ddof=ddof, dim=dim, keepdim=keepdim, dtype=dtype,
                         unbiased=unbiased),
                self.mean(axis, keepdims, dtype, dim=dim, keepdim=keepdim))

    def std_mean(self: Tensor, axis: Any = None, keepdims: bool = False, *, correction: float | None = None,
                 ddof: float | None = None, dim: Any = None, keepdim: bool = False, dtype: Any = None,
                 unbiased: bool | None = None) -> tuple[Tensor, Tensor]:
        """`(std, mean)` over the same axes (PyTorch's `std_mean`), the correction 0 by default as `var_mean`'s."""
        return (self.std(axis, keepdims, correction=correction, ddof=ddof, dim=dim, keepdim=keepdim, dtype=dtype,
                         unbiased=unbiased),
                self.mean(axis, keepdims, dtype, dim=dim, keepdim=keepdim))

    def _wide_var(self: Tensor, axis: Any, keepdims: bool, correction: float | None, ddof: float | None,
                  name: str) -> tuple[Tensor, DType]:
        """The variance in the widened dtype (see `_widened`), and the dtype it rounds to."""
        if correction is not None and ddof is not None and correction != ddof:
            raise ValueError(f"{name}: give correction or ddof, not both")
        corr = correction if correction is not None else ddof if ddof is not None else 0
        from .autograd import custom_vjp
        wide, out = self._widened()
        if wide.dtype == float32:
            # in float64, as PyTorch's CPU reductions: the squares of float32 deviations overflow from 1.8e19
            # on, where the standard deviation is still a float32 (the grad fuzzer's seed 932677)
            wide = wide.cast(float64)
        denom = wide._const(max(0.0, self._count(axis, name) - corr), wide.dtype, wide.device)
        axes = normalize_axes(axis, wide.ndim, name)
        kept = tuple(1 if d in axes else n for d, n in enumerate(wide.shape))

        def forward() -> Tensor:
            centered = wide - wide.mean(axis, keepdims=True)
            return (centered * centered).sum(axis, keepdims) / denom

        def backward(g: Tensor) -> tuple[Tensor]:
            # PyTorch's 2 (x - mean) / n: through the mean the gradient is 0 exactly, but an infinite g makes
            # it inf - inf
            return ((wide - wide.mean(axis, keepdims=True)) * (g.reshape(kept) * 2 / denom),)

        return custom_vjp((wide,), forward, backward), out

    def _arg(self: Tensor, op: ReduceOp, axis: int | None, keepdims: bool, name: str) -> Tensor:
        x = self.reshape(-1) if axis is None else self
        a = 0 if axis is None else normalize_axis(axis, self.ndim, name)
        if x.ndim == 0:
            x, a = x.reshape(1), 0
        n = x.shape[a]
        best = x._extremum(op, a, True, name)
        hit = (x == best) | x.isnan()  # the first NaN wins, as PyTorch
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
        from .creation import _iota
        n = self.shape[axis]
        return _iota(n, self.device).reshape(tuple(n if i == axis else 1 for i in range(self.ndim)))

    def logsumexp(self: Tensor, axis: Any = None, keepdims: bool = False, *, dim: Any = None,
                  keepdim: bool = False) -> Tensor:
        """`log(sum(exp(x)))` without overflow. Its gradient is PyTorch's `exp(x - logsumexp(x))` (softmax):
        through the shifted sum it is `exp(x - shift) / sum`, and with an inf in the group the shift is 0, so
        large finite elements would give inf / inf = NaN, not 0."""
        axis = _pick(axis, dim)
        wide, out = self._widened()
        from . import recipe
        from .autograd import custom_vjp

        axes = normalize_axes(axis, wide.ndim, "logsumexp")
        lse = custom_vjp((wide,), lambda: recipe.apply(_logsumexp, axes, _LOGSUMEXP_SCALARS, (wide,))[0],
                         lambda g, lse: (g * (wide - lse).exp(),), takes_result=True)
        lse = lse.cast(out)
        return lse if keepdims or keepdim else lse.squeeze(axes)

    def softmax(self: Tensor, axis: int = -1, *, dim: int | None = None) -> Tensor:
        """`exp(x) / sum(exp(x))` along `axis` (the last by default), computed stably. Its gradient is PyTorch's
        `y (g - sum(g y))`: through the max it subtracts, a rounding residue of the terms would reach the
        maximal elements (the grad fuzzer's seed 950589, through log_softmax)."""
        axis = _pick(dim, axis) if dim is not None else axis
        wide, out = self._widened()
        from . import recipe
        from .autograd import custom_vjp

        y = custom_vjp((wide,), lambda: recipe.apply(_softmax, (axis,), (), (wide,))[0],
                       lambda g, y: (y * (g - (g * y).sum(axis, keepdims=True)),), takes_result=True)
        return y.cast(out)

    def log_softmax(self: Tensor, axis: int = -1, *, dim: int | None = None) -> Tensor:
        """`log(softmax(x))` as `(x - max) - log(sum(exp(x - max)))`. Not `x - logsumexp(x)`: for large x
        that subtracts two large, rounded numbers and loses the small difference. Its gradient is PyTorch's
        `g - exp(y) sum(g)` (see softmax)."""
        axis = _pick(dim, axis) if dim is not None else axis
        wide, out = self._widened()
        from . import recipe
        from .autograd import custom_vjp

        y = custom_vjp((wide,), lambda: recipe.apply(_log_softmax, (axis,), (), (wide,))[0],
                       lambda g, y: (g - y.exp() * g.sum(axis, keepdims=True),), takes_result=True)
        return y.cast(out)

    def cumsum(self: Tensor, axis: int | None = None, dtype: Any = None, *, dim: int | None = None) -> Tensor:
        """Running sum along `axis` (over the flattened tensor when axis is None, as NumPy; a 0-d tensor
        takes axis 0 or -1, as PyTorch). 16-bit floats accumulate in float32, each output rounded once."""
        return self._cumulative(ReduceOp.SUM, _pick(axis, dim), dtype, "cumsum")

    def cumprod(self: Tensor, axis: int | None = None, dtype: Any = None, *, dim: int | None = None) -> Tensor:
        """Running product along `axis`, with the axes and dtypes of `cumsum`."""
        return self._cumulative(ReduceOp.PROD, _pick(axis, dim), dtype, "cumprod")

    def _cumulative(self: Tensor, op: ReduceOp, axis: int | None, dtype: Any, name: str) -> Tensor:
        """The running SUM or PROD along `axis`: cumsum's and cumprod's conventions (see `cumsum`)."""
        x = self._accumulate_dtype(dtype)
        if axis is None:
            x, axis = x.reshape(-1), 0
        if x.ndim == 0:  # its running sum or product is itself, along the one axis PyTorch lets it name
            if not isinstance(axis, int) or axis not in (0, -1):
                raise AxisError(f"{name}: axis {axis!r} is out of bounds for a 0-d tensor (0 or -1)")
            return x
        a = normalize_axis(axis, x.ndim, name)
        return x.cast(compute_dtype(x.dtype))._scan(op, a).cast(x.dtype)

    def _scan(self: Tensor, op: ReduceOp, axis: int = -1) -> Tensor:
        """The running fold by `op` along `axis`: a scan (a kernel of its own kind) where the tensor lies,
        its axis counted from the end (a batch put in front keeps it), but a product a gradient may flow
        through in ops autograd knows (a scan's gradient is a running sum's): along the last axis, a short row as
        a reduction under a triangular mask, a long one in blocks. The masked reduction fuses with what computes
        the row, but folds n/2 terms per element: rows of 8 ran 16x, of 256 44x the scan's time (4M float32)."""
        a = normalize_axis(axis, self.ndim, "scan") - self.ndim
        n, identity = self.shape[a], op.identity(self.dtype)
        if self.dtype == bool_:  # folded as bytes (a running any or all): the scans take numbers
            return self.cast(uint8)._scan(op, a).cast(bool_)
        if (wide := compute_dtype(self.dtype)) != self.dtype:  # a 16-bit float's cummax: exact in float32
            return self.cast(wide)._scan(op, a).cast(self.dtype)
        if op is not ReduceOp.PROD or not self.requires_grad:
            from .tensor import Tensor
            return Tensor._make(Op.SCAN, self.dtype, self.shape, (self,), (op, a))
        if a != -1:
            return self.swapaxes(a, -1)._scan(op).swapaxes(a, -1)
        if n <= CUMSUM_BLOCK:
            # out[..., i] = op over j <= i of x[..., j]: one reduction under a triangular mask
            from .tensor import where
            positions = self._iota_along(self.ndim - 1)
            i = positions.reshape(*positions.shape, 1)
            j = positions.reshape(*positions.shape[:-1], 1, n)
            below = where(j <= i, self.reshape(*self.shape[:-1], 1, n), identity)
            # _reduce, not prod: prod would widen an int32 (cumprod(dtype=int32)) to int64
            return below._reduce(op, -1, False, f"running {op.value}")
        block = math.isqrt(n - 1) + 1
        blocks = -(-n // block)
        pad = [(0, 0)] * (self.ndim - 1) + [(0, blocks * block - n)]
        tiles = self.pad(pad, value=identity).reshape(*self.shape[:-1], blocks, block)
        inner = tiles._scan(op)
        totals = inner[..., -1]
        # Each block starts from the product of the blocks before it, computed as such: not as the running total
        # divided by the block's own, which a zero in the block makes NaN.
        before = totals[..., :-1]._scan(op).pad([(0, 0)] * (self.ndim - 1) + [(1, 0)], value=identity)
        return (inner * before.unsqueeze(-1)).reshape(*self.shape[:-1], blocks * block)[..., :n]

    def logcumsumexp(self: Tensor, dim: int | None = None, *, axis: int | None = None) -> Tensor:
        """PyTorch's logcumsumexp: `log(cumsum(exp(x)))` along `dim` without overflow or underflow: each output
        is a `logsumexp` of its prefix (under a triangular mask for a short row; a long one in blocks, each
        block's prefixes joined with the blocks' before it by `logaddexp`). Floats; integers as the default
        float."""
        a = _pick(axis, dim)
        if a is None:
            raise TypeError("logcumsumexp: missing the axis (dim=)")
        x = self if self.dtype.is_float else self.cast(get_default_dtype())
        if x.ndim == 0:
            normalize_axis(a, 1, "logcumsumexp")
            return x
        a = normalize_axis(a, x.ndim, "logcumsumexp")
        return x.moveaxis(a, -1)._logcumsumexp_last().moveaxis(-1, a)

    def _logcumsumexp_last(self: Tensor) -> Tensor:
        from .tensor import where
        n = self.shape[-1]
        if n <= CUMSUM_BLOCK:
            positions = self._iota_along(self.ndim - 1)
            below = positions.reshape(*positions.shape[:-1], 1, n) <= positions.reshape(*positions.shape, 1)
            return where(below, self.reshape(*self.shape[:-1], 1, n), -math.inf).logsumexp(-1)
        block = math.isqrt(n - 1) + 1
        blocks = -(-n // block)
        tiles = self.pad([(0, 0)] * (self.ndim - 1) + [(0, blocks * block - n)], value=-math.inf)
        inner = tiles.reshape(*self.shape[:-1], blocks, block)._logcumsumexp_last()
        before = inner[..., :-1, -1]._logcumsumexp_last().pad([(0, 0)] * (self.ndim - 1) + [(1, 0)], value=-math.inf)
        out = inner.logaddexp(before.unsqueeze(-1))
        return out.reshape(*self.shape[:-1], blocks * block)[..., :n]

    def cummax(self: Tensor, dim: int | None = None, *, axis: int | None = None) -> MinMax:
        """PyTorch's cummax: the running maximum along `dim` and, for each, the position of the last element
        equal to it (a NaN, once one is seen, as PyTorch's)."""
        return self._running_extremum(ReduceOp.MAX, _pick(axis, dim), "cummax")

    def cummin(self: Tensor, dim: int | None = None, *, axis: int | None = None) -> MinMax:
        """PyTorch's cummin: the running minimum along `dim` and the positions (see `cummax`)."""
        return self._running_extremum(ReduceOp.MIN, _pick(axis, dim), "cummin")

    def _running_extremum(self: Tensor, op: ReduceOp, axis: int | None, name: str) -> MinMax:
        from .tensor import where
        if axis is None:
            raise TypeError(f"{name}: missing the axis (dim=)")
        if self.ndim == 0:
            normalize_axis(axis, 1, name)
            return MinMax(self, self._const(0, default_int, self.device))
        a = normalize_axis(axis, self.ndim, name)
        running = self._scan(op, a)
        positions = self._iota_along(a)
        # a position holds the running extremum where it equals it (or is NaN): the last such one so far is the index
        reached = self == running if not self.dtype.is_float else (self == running) | self.isnan()
        index = where(reached, positions, 0)._scan(ReduceOp.MAX, a)
        values = self._gather(a, index)  # the element itself: its gradient goes where it came from
        return MinMax(values, index)

    def cumulative_sum(self: Tensor, axis: int | None = None, *, dtype: Any = None,
                       include_initial: bool = False) -> Tensor:
        """The array API's running sum: as `cumsum`, but axis None only for a 1-d tensor, and with
        `include_initial` the sum of no elements (0) first, so the axis grows by one."""
        return self._array_api_cumulative(ReduceOp.SUM, axis, dtype, include_initial, "cumulative_sum")

    def cumulative_prod(self: Tensor, axis: int | None = None, *, dtype: Any = None,
                        include_initial: bool = False) -> Tensor:
        """The array API's running product: as `cumprod`, but axis None only for a 1-d tensor, and with
        `include_initial` the product of no elements (1) first, so the axis grows by one."""
        return self._array_api_cumulative(ReduceOp.PROD, axis, dtype, include_initial, "cumulative_prod")

    def _array_api_cumulative(self: Tensor, op: ReduceOp, axis: int | None, dtype: Any, include_initial: bool,
                              name: str) -> Tensor:
        if self.ndim == 0:
            raise ShapeError(f"{name}: needs at least one dimension, got a 0-d tensor")
        if axis is None:
            if self.ndim > 1:
                raise AxisError(f"{name}: axis is required for a tensor of dimension {self.ndim}")
            axis = 0
        a = normalize_axis(axis, self.ndim, name)
        out = self._cumulative(op, a, dtype, name)
        if not include_initial:
            return out
        pads = [(0, 0)] * self.ndim
        pads[a] = (1, 0)
        return out.pad(pads, value=op.identity(out.dtype))

    def count_nonzero(self: Tensor, axis: Any = None, keepdims: bool = False) -> Tensor:
        """The number of elements that are not zero (nor False) over `axis`, as int64 (NaN counts)."""
        return (self != 0).sum(axis, keepdims, dtype=default_int)

    def diff(self: Tensor, n: int = 1, axis: int = -1, prepend: Tensor | None = None, append: Tensor | None = None,
             *, dim: int | None = None) -> Tensor:
        """The `n`-th forward difference along `axis` (PyTorch's `dim=` too), `out[i] = x[i + 1] - x[i]` repeated
        n times, after joining `prepend` and `append` to x along that axis; bool tensors give `x[i + 1] != x[i]`,
        as NumPy. Positional arguments in NumPy's and PyTorch's order: `diff(x, 2)` is the second difference."""
        if dim is not None:
            axis = dim
        if self.ndim == 0:
            raise ShapeError("diff: needs at least one dimension, got a 0-d tensor")
        if n < 0:
            raise ValueError(f"diff: n must be non-negative, got {n}")
        a = normalize_axis(axis, self.ndim, "diff")
        x = concat([t for t in (prepend, self, append) if t is not None], a)
        for _ in range(n):
            size = x.shape[a]
            later, earlier = _pieces(x, [(min(1, size), size), (0, max(size - 1, 0))], a)
            x = later != earlier if x.dtype == bool_ else later - earlier
        return x


# The forward graphs of softmax and its kin, as `recipe.apply` takes them: recorded once per structure (axis,
# dtype, shape) and rebuilt after, a few microseconds instead of some seventy of recording through the ops.

def _softmax(flags: tuple[int], scalars: tuple, x: Tensor) -> tuple[Tensor]:
    (axis,) = flags
    e = (x - x._shift(axis, "softmax")).exp()
    return (e / e.sum(axis, keepdims=True),)


def _log_softmax(flags: tuple[int], scalars: tuple, x: Tensor) -> tuple[Tensor]:
    (axis,) = flags
    shifted = x - x._shift(axis, "log_softmax")
    return (shifted - shifted.exp().sum(axis, keepdims=True).log(),)


# `_logsumexp`'s scalars: distinct objects, each the recipe's scalar of its place
_LOGSUMEXP_SCALARS = (math.inf, 0.0)


def _logsumexp(axes: tuple[int, ...], scalars: tuple[float, float], x: Tensor) -> tuple[Tensor]:
    """An infinite shift is 0: all -inf stays -inf, and an inf gives inf, not inf - inf."""
    from .tensor import where
    inf, zero = scalars
    m = x._shift(axes, "logsumexp")
    shift = where(m.abs() == inf, zero, m)
    return ((x - shift).exp().sum(axes, keepdims=True).log() + shift,)
