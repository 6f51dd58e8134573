"""NumPy's reductions that ignore NaN: `nansum`, `nanprod`, `nanmean`, `nanvar`, `nanstd`, `nanmax`, `nanmin`,
`nanargmax`, `nanargmin`, `nancumsum`, `nancumprod` (`nanmedian`, `nanquantile` and `nanpercentile` sort, with the
order statistics in `statistics.py`).

Each is its plain reduction of the tensor with its NaNs replaced by the reduction's identity (0 for sums, 1 for
products, -inf for a maximum), so it fuses as the plain one does. A slice of NaNs alone gives NumPy's results:
0 for a sum, 1 for a product, NaN for a mean, a variance or an extremum, and an error for an argmax. Integers and
bools hold no NaN: their results are the plain reductions'.
"""
from __future__ import annotations

from typing import Any

from .creation import asarray
from .tensor import Tensor, where


def _filled(x: Any, value: float) -> Tensor:
    """x with its NaNs replaced by `value`."""
    t = asarray(x)
    return where(t.isnan(), value, t) if t.dtype.is_float else t


def nansum(a: Any, axis: Any = None, dtype: Any = None, keepdims: bool = False) -> Tensor:
    """NumPy's nansum: the sum over `axis` of the values that are not NaN (0 for a slice of NaNs; dtypes as
    `sum`)."""
    return _filled(a, 0.0).sum(axis, keepdims, dtype)


def nanprod(a: Any, axis: Any = None, dtype: Any = None, keepdims: bool = False) -> Tensor:
    """NumPy's nanprod: the product over `axis` of the values that are not NaN (1 for a slice of NaNs)."""
    return _filled(a, 1.0).prod(axis, keepdims, dtype)


def nancumsum(a: Any, axis: int | None = None, dtype: Any = None) -> Tensor:
    """NumPy's nancumsum: the running sum along `axis` (the flattened tensor where None), NaNs counted as 0."""
    return _filled(a, 0.0).cumsum(axis, dtype)


def nancumprod(a: Any, axis: int | None = None, dtype: Any = None) -> Tensor:
    """NumPy's nancumprod: the running product along `axis` (the flattened tensor where None), NaNs counted as 1."""
    return _filled(a, 1.0).cumprod(axis, dtype)


def _nan_moments(t: Tensor, axis: Any) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """Where a float tensor is not NaN; its values in its widened dtype, NaNs 0; their count and their mean
    over `axis`, its axes kept as 1s to broadcast against the tensor."""
    wide, _ = t._widened()
    present = ~wide.isnan()
    values = where(present, wide, 0.0)
    count = present.sum(axis, keepdims=True).cast(wide.dtype)
    return present, values, count, values.sum(axis, keepdims=True) / count


def nanmean(a: Any, axis: Any = None, dtype: Any = None, keepdims: bool = False) -> Tensor:
    """NumPy's nanmean: the mean over `axis` of the values that are not NaN (NaN for a slice of NaNs); integers
    give the default float, as `mean`."""
    t = asarray(a)
    t = t.cast(dtype) if dtype is not None else t
    if not t.dtype.is_float:
        return t.mean(axis, keepdims)
    *_, mean = _nan_moments(t, axis)
    return _drop_kept(mean, t, axis, keepdims).cast(t.dtype)


def nanvar(a: Any, axis: Any = None, dtype: Any = None, *, ddof: float = 0, keepdims: bool = False) -> Tensor:
    """NumPy's nanvar: the variance over `axis` of the values that are not NaN, their count less `ddof` the
    divisor (NaN where that is not positive, as for a slice of NaNs); integers as `var`."""
    t = asarray(a)
    t = t.cast(dtype) if dtype is not None else t
    if not t.dtype.is_float:
        return t.var(axis, keepdims, correction=ddof)
    present, values, count, mean = _nan_moments(t, axis)
    deviation = where(present, values - mean, 0.0)
    dof = count - ddof
    var = where(dof > 0, (deviation * deviation).sum(axis, keepdims=True) / dof, float("nan"))
    return _drop_kept(var, t, axis, keepdims).cast(t.dtype)


def nanstd(a: Any, axis: Any = None, dtype: Any = None, *, ddof: float = 0, keepdims: bool = False) -> Tensor:
    """NumPy's nanstd: the square root of `nanvar` with the same arguments."""
    return nanvar(a, axis, dtype, ddof=ddof, keepdims=keepdims).sqrt()


def _drop_kept(out: Tensor, t: Tensor, axis: Any, keepdims: bool) -> Tensor:
    """A result computed with the reduced axes kept as 1s, without them unless `keepdims`."""
    from .movement import normalize_axes
    if keepdims:
        return out
    axes = normalize_axes(axis, t.ndim, "nan reduction")
    return out.reshape(tuple(n for i, n in enumerate(out.shape) if i not in axes))


def _nan_extremum(a: Any, axis: Any, keepdims: bool, largest: bool) -> Tensor:
    t = asarray(a)
    if not t.dtype.is_float:
        return t.max(axis, keepdims) if largest else t.min(axis, keepdims)
    filled = _filled(t, float("-inf") if largest else float("inf"))
    extremum = filled.max(axis, keepdims) if largest else filled.min(axis, keepdims)
    return where(t.isnan().all(axis, keepdims), float("nan"), extremum).cast(t.dtype)


def nanmax(a: Any, axis: Any = None, keepdims: bool = False) -> Tensor:
    """NumPy's nanmax: the largest value over `axis` that is not NaN (NaN for a slice of NaNs)."""
    return _nan_extremum(a, axis, keepdims, largest=True)


def nanmin(a: Any, axis: Any = None, keepdims: bool = False) -> Tensor:
    """NumPy's nanmin: the smallest value over `axis` that is not NaN (NaN for a slice of NaNs)."""
    return _nan_extremum(a, axis, keepdims, largest=False)


def _nan_arg(a: Any, axis: int | None, keepdims: bool, largest: bool) -> Tensor:
    t = asarray(a)
    name = "nanargmax" if largest else "nanargmin"
    if not t.dtype.is_float:
        return t.argmax(axis, keepdims) if largest else t.argmin(axis, keepdims)
    filled = _filled(t, float("-inf") if largest else float("inf"))
    index = filled.argmax(axis, keepdims) if largest else filled.argmin(axis, keepdims)
    # NumPy raises ValueError for a slice of NaNs; a lazy result raises when it is computed
    return index._checked(t.isnan().all(axis), f"{name}: All-NaN slice encountered")


def nanargmax(a: Any, axis: int | None = None, keepdims: bool = False) -> Tensor:
    """NumPy's nanargmax: the index of the first largest value over `axis` that is not NaN (of the flattened
    tensor where None). A slice of NaNs alone has none: computing the result raises IndexError."""
    return _nan_arg(a, axis, keepdims, largest=True)


def nanargmin(a: Any, axis: int | None = None, keepdims: bool = False) -> Tensor:
    """NumPy's nanargmin: the index of the first smallest value over `axis` that is not NaN (see `nanargmax`)."""
    return _nan_arg(a, axis, keepdims, largest=False)


__all__ = ["nanargmax", "nanargmin", "nancumprod", "nancumsum", "nanmax", "nanmean", "nanmin", "nanprod", "nanstd",
           "nansum", "nanvar"]
