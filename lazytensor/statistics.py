"""NumPy's order statistics, weighted means and counting: `median`, `quantile`, `percentile`, `average`,
`bincount`, `histogram`.

Order statistics sort along their axis (`sorting.py`) and read the sorted values at computed positions; a
NaN in a slice makes its result NaN, as NumPy's (NaN sorts last, so the slice's last value says). Counting
adds ones (or weights) into bins with a scatter (`indexing.py`). Where NumPy's result has a size the data
decides (`bincount`'s length, `histogram`'s range from the data's extremes), the data is read first (a
realize; a JitError inside `lt.jit`).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from . import dtypes
from .errors import DTypeError, ShapeError
from .movement import normalize_axes


def _tensor(x: Any) -> Any:
    from .creation import asarray
    from .tensor import Tensor
    return x if isinstance(x, Tensor) else asarray(x)


def _sorted_along(x: Any, axis: Any, name: str) -> tuple[Any, tuple[int, ...]]:
    """x's values sorted along one axis that stands for `axis` (the flattened axes it names, moved last), and
    the shape of the result without that axis."""
    t = _tensor(x)
    if t.dtype == dtypes.bool_ or not (t.dtype.is_float or t.dtype.is_int):
        raise DTypeError(f"{name}: needs real numbers, got {t.dtype.name}")
    axes = normalize_axes(axis, t.ndim, name)
    kept = [a for a in range(t.ndim) if a not in axes]
    rest = tuple(t.shape[a] for a in kept)
    if t.numel() == 0 and not rest:
        raise ValueError(f"{name}: of an empty tensor")
    return t.permute(kept + list(axes)).reshape(*rest, -1).sort(-1), rest


def _keep_dims(out: Any, t: Any, axis: Any, leading: int, name: str) -> Any:
    """`out` (leading axes, then the kept ones) with the reduced axes back as 1s (`keepdims`)."""
    axes = normalize_axes(axis, t.ndim, name)
    shape = out.shape[:leading] + tuple(1 if a in axes else n for a, n in enumerate(t.shape))
    return out.reshape(shape)


def quantile(x: Any, q: Any, axis: Any = None, *, method: str = "linear", keepdims: bool = False) -> Any:
    """NumPy's quantile with its default method 'linear' (also 'lower', 'higher', 'nearest', 'midpoint'): the
    value at position q * (n - 1) of the sorted slice, between its neighbours. `q` a number or a tensor of
    them in [0, 1]; the result has q's shape, then x's without `axis`, and NumPy's dtype: a float (float64
    for integers) where the method interpolates, x's own where it picks. NaN in a slice gives NaN."""
    from .creation import asarray
    from .tensor import Tensor, where
    s, rest = _sorted_along(x, axis, "quantile")
    n = s.shape[-1]
    qs = q if isinstance(q, Tensor) else asarray(np.asarray(q, dtype=np.float64), device=s.device)
    qt = qs.cast(dtypes.float64)
    position = qt.reshape(*qt.shape, *([1] * len(rest))) * (n - 1)  # of q's shape, then 1s for x's axes
    lo = position.floor()
    hi = (lo + 1).minimum(n - 1)  # NumPy's neighbour: the next element, even at a whole position
    if method == "lower":
        picks, frac = (lo, lo), None
    elif method == "higher":
        picks, frac = (position.ceil(), position.ceil()), None
    elif method == "nearest":  # NumPy rounds half to even
        picks, frac = (position.round(), position.round()), None
    elif method == "midpoint":  # halfway between the neighbours, or the element at a whole position
        picks, frac = (lo, hi), where(position == lo, 0.0, 0.5)
    elif method == "linear":
        picks, frac = (lo, hi), position - lo
    else:
        raise ValueError(f"quantile: method must be 'linear', 'lower', 'higher', 'nearest' or 'midpoint', "
                         f"got {method!r}")
    shape = (*qt.shape, *rest, 1)
    below, above = (s.broadcast_to((*qt.shape, *rest, n))._gather(
        len(shape) - 1, p.cast(dtypes.int64).unsqueeze(-1).broadcast_to(shape)).squeeze(-1) for p in picks)
    if frac is None:
        out = below
    else:
        # NumPy's dtype: x's float (float64 for integers), promoted with q's unless q is a Python number
        wide = s.dtype if s.dtype.is_float else dtypes.float64
        if not isinstance(q, (int, float)):
            wide = dtypes.promote(wide, qs.dtype if qs.dtype.is_float else dtypes.float64)
        # NumPy's lerp: the gap in x's dtype, then from the nearer end in the result's
        gap = (above - below).cast(wide)
        below, above = below.cast(wide), above.cast(wide)
        f = frac.broadcast_to(below.shape).cast(below.dtype)
        out = where(f >= 0.5, above - gap * (1 - f), below + gap * f)
    if s.dtype.is_float:
        out = where(s[..., -1].isnan(), np.nan, out).cast(out.dtype)
    if keepdims:
        out = _keep_dims(out, _tensor(x), axis, qt.ndim, "quantile")
    bad = (qt < 0) | (qt > 1) | qt.isnan()
    return out._checked(bad, "quantile: q must be in [0, 1]")


def percentile(x: Any, q: Any, axis: Any = None, *, method: str = "linear", keepdims: bool = False) -> Any:
    """NumPy's percentile: `quantile` of q / 100 (q in [0, 100])."""
    from .tensor import Tensor
    qs = q / 100 if isinstance(q, (Tensor, int, float)) else np.asarray(q, dtype=np.float64) / 100
    return quantile(x, qs, axis, method=method, keepdims=keepdims)


def median(x: Any, axis: Any = None, *, keepdims: bool = False) -> Any:
    """NumPy's median: the middle of each sorted slice (the mean of the two middle values for an even
    count); NaN where the slice holds one."""
    return quantile(x, 0.5, axis, keepdims=keepdims)


def average(x: Any, axis: Any = None, weights: Any = None, returned: bool = False, *,
            keepdims: bool = False) -> Any:
    """NumPy's average: the mean over `axis`, or with `weights` the sum of `x * weights` over the sum of the
    weights. The weights have x's shape, or the shape of the axes reduced (`axis` given: `x.shape[axis]` for
    one), laid along them. Integers and bools give the default float, as `mean`. With `returned`, also the sum
    of the weights (the count without them), of the result's shape. A sum of weights of 0 gives the division's
    inf or NaN (NumPy raises ZeroDivisionError, which a lazy result cannot without reading the weights)."""
    from .dtypes import default_float, promote
    t = _tensor(x)
    if weights is None:
        avg = t.mean(axis, keepdims=keepdims)
        total = avg._const(t._count(axis, "average"), avg.dtype, avg.device).broadcast_to(avg.shape)
        return (avg, total) if returned else avg
    w = _tensor(weights).to(t.device)
    if w.shape != t.shape:
        if axis is None:
            raise ShapeError(f"average: weights of shape {w.shape} for x of shape {t.shape} need an axis")
        axes = normalize_axes(axis, t.ndim, "average")
        given = (axis,) if isinstance(axis, int) else tuple(axis)
        along = tuple(t.shape[a % t.ndim] for a in given)
        if w.shape != along:
            raise ShapeError(f"average: weights of shape {w.shape} for the axes {given} of x of shape {t.shape}, "
                             f"expected {along}")
        order = sorted(range(len(given)), key=lambda i: given[i] % t.ndim)
        w = w.permute(order).reshape(tuple(n if a in axes else 1 for a, n in enumerate(t.shape)))
    dt = promote(t.dtype, w.dtype)
    dt = dt if dt.is_float else default_float
    t, w = t.cast(dt), w.cast(dt)
    total = w.broadcast_to(t.shape).sum(axis, keepdims=keepdims)
    avg = (t * w).sum(axis, keepdims=keepdims) / total
    return (avg, total) if returned else avg


def bincount(x: Any, weights: Any = None, minlength: int = 0) -> Any:
    """NumPy's bincount: how many times each value 0, 1, ..., max(x) occurs in the 1-d non-negative integer
    x (at least `minlength` bins), or the sum of the `weights` at each. The length depends on the data:
    x's extremes are read first (negative values are a ValueError then, as NumPy's)."""
    from .creation import zeros
    t = _tensor(x)
    if t.ndim != 1:
        raise ShapeError(f"bincount: x must be 1-d, got shape {t.shape}")
    if t.dtype.is_float or t.dtype == dtypes.bool_:
        raise DTypeError(f"bincount: x must hold integers, got {t.dtype.name}")
    if minlength < 0:
        raise ValueError(f"bincount: minlength must be non-negative, got {minlength}")
    from .tensor import realize
    low, high = (t.min(), t.max()) if t.numel() else (None, None)
    if low is not None:
        realize(low, high)
        if int(low.item()) < 0:
            raise ValueError("bincount: x must have no negative elements")
    length = max(minlength, int(high.item()) + 1 if high is not None else 0)
    index = t.cast(dtypes.int64)
    if weights is None:
        updates = index * 0 + 1
        base = zeros(length, dtype=dtypes.int64, device=t.device)
    else:
        w = _tensor(weights)
        if w.shape != t.shape:
            raise ShapeError(f"bincount: weights of shape {w.shape} for x of shape {t.shape}")
        updates = w.cast(dtypes.float64)  # NumPy's
        base = zeros(length, dtype=dtypes.float64, device=t.device)
    from .kernels.ir import ReduceOp
    return base._scatter(0, index, updates, ReduceOp.SUM)


def histogram(x: Any, bins: Any = 10, range: tuple[float, float] | None = None, density: bool = False,
              weights: Any = None) -> tuple[Any, Any]:
    """NumPy's histogram: the counts (or summed weights, or densities) of x's values in `bins` equal bins
    over `range` (x's extremes, read first, when None), or in the bins between the given edges; every bin
    is closed on the left and open on the right but the last, closed on both sides. Returns (counts,
    edges); values outside the range are left out."""
    from .creation import arange
    from .sorting import searchsorted
    from .tensor import realize, where
    t = _tensor(x).reshape(-1)
    if isinstance(bins, int):
        if bins < 1:
            raise ValueError(f"histogram: bins must be positive, got {bins}")
        if range is None:
            if t.numel():
                low_t, high_t = t.min(), t.max()
                realize(low_t, high_t)
                low, high = float(low_t.item()), float(high_t.item())
            else:
                low, high = 0.0, 1.0
        else:
            low, high = (float(v) for v in range)
        if not (np.isfinite(low) and np.isfinite(high)):
            raise ValueError(f"histogram: the range ({low}, {high}) is not finite")
        if low > high:
            raise ValueError(f"histogram: max must be larger than min in range, got ({low}, {high})")
        if low == high:
            low, high = low - 0.5, high + 0.5
        # NumPy's edges, rounding for rounding: `linspace` in x's float dtype from x's extremes (in float64
        # from a given range, or for integers), then x's float dtype (float64 for integers)
        edge_dtype = t.dtype if t.dtype.is_float else dtypes.float64
        work = edge_dtype if range is None else dtypes.float64
        scalar = dtypes.to_numpy_dtype(work).type
        step = float((scalar(high) - scalar(low)) / scalar(bins))
        within = arange(bins + 1, device=t.device).cast(work) * step + low
        edges = where(arange(bins + 1, device=t.device) == bins, high, within).cast(edge_dtype)
    else:
        edges = _tensor(bins)
        if edges.ndim != 1 or edges.shape[0] < 2:
            raise ValueError(f"histogram: bin edges must be a 1-d sequence of at least 2, got shape {edges.shape}")
    n_bins = edges.shape[0] - 1
    values = t.cast(dtypes.float64)
    slot = searchsorted(edges, values, side="right") - 1
    last = edges[-1]
    slot = where(values == last, n_bins - 1, slot)  # the last bin holds its right edge
    inside = (values >= edges[0]) & (values <= last)
    slot = where(inside, slot, n_bins)  # outside: written nowhere
    from .creation import zeros
    from .kernels.ir import ReduceOp
    if weights is None:
        counts = zeros(n_bins, dtype=dtypes.int64, device=t.device)._scatter(0, slot, slot * 0 + 1, ReduceOp.SUM)
    else:
        w = _tensor(weights).reshape(-1)
        if w.shape != t.shape:
            raise ShapeError(f"histogram: weights of shape {w.shape} for x of {t.shape[0]} elements")
        counts = zeros(n_bins, dtype=dtypes.float64, device=t.device)._scatter(0, slot, w.cast(dtypes.float64),
                                                                              ReduceOp.SUM)
    if density:
        widths = edges[1:] - edges[:-1]
        counts = counts.cast(dtypes.float64) / widths / counts.sum()  # NumPy's order of rounding
    return counts, edges


__all__ = ["average", "bincount", "histogram", "median", "percentile", "quantile"]
