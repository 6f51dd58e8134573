"""NumPy's order statistics, weighted means, correlations, counting and binning: `median`, `quantile`,
`percentile` (and their `nan` forms), `ptp`, `average`, `cov`, `corrcoef`, `bincount`, `histogram`, `digitize`,
`interp`.

Order statistics sort along their axis (`sorting.py`) and read the sorted values at computed positions, or,
where the positions are known before the data (`median`, a `quantile` of one number), select the values at them
with no sort of the whole slice; a NaN in a slice makes its result NaN, as NumPy's (NaN sorts last, so the
slice's last value says, or a test for one where there was no sort). Counting
adds ones (or weights) into bins with a scatter (`indexing.py`). Where NumPy's result has a size the data
decides (`bincount`'s length, `histogram`'s range from the data's extremes), the data is read first (a
realize; a JitError inside `lt.jit`).
"""
from __future__ import annotations

import functools
import math
import operator
from typing import Any

import numpy as np

from . import dtypes
from .errors import DTypeError, ShapeError
from .kernels.dtype import compute_dtype
from .kernels.ir import ReduceOp
from .movement import normalize_axes


def _tensor(x: Any) -> Any:
    from .creation import asarray
    from .tensor import Tensor
    return x if isinstance(x, Tensor) else asarray(x)


def _along(x: Any, axis: Any, name: str) -> tuple[Any, tuple[int, ...]]:
    """x's values along one axis that stands for `axis` (the flattened axes it names, moved last), and the
    shape of the result without that axis."""
    t = _tensor(x)
    if t.dtype == dtypes.bool_ or not (t.dtype.is_float or t.dtype.is_int):
        raise DTypeError(f"{name}: needs real numbers, got {t.dtype.name}")
    axes = normalize_axes(axis, t.ndim, name)
    kept = [a for a in range(t.ndim) if a not in axes]
    rest = tuple(t.shape[a] for a in kept)
    if t.numel() == 0 and not rest:
        raise ValueError(f"{name}: of an empty tensor")
    return t.permute(kept + list(axes)).reshape(*rest, -1), rest


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
    return _quantile(x, q, axis, method, keepdims, skip_nan=False)


def nanquantile(x: Any, q: Any, axis: Any = None, *, method: str = "linear", keepdims: bool = False) -> Any:
    """NumPy's nanquantile: `quantile` of each slice's values that are not NaN (NaN where all are)."""
    return _quantile(x, q, axis, method, keepdims, skip_nan=True)


def _quantile(x: Any, q: Any, axis: Any, method: str, keepdims: bool, skip_nan: bool) -> Any:
    """`quantile`, or with `skip_nan` `nanquantile`: NaN sorts last, so a slice's count of other values says
    where its NaNs start, and positions count within them."""
    from .creation import asarray
    from .tensor import Tensor, where
    name = "nanquantile" if skip_nan else "quantile"
    t, rest = _along(x, axis, name)
    n = t.shape[-1]
    # one q in range, NaN counted in: the positions are known (every method picks the floor or the one after)
    select = not skip_nan and isinstance(q, (int, float)) and 0 <= q <= 1 and n > 0
    first = math.floor(q * (n - 1)) if select else 0
    s = t._sorted_at((first, min(first + 1, n - 1))) if select else t.sort(-1)
    qs = q if isinstance(q, Tensor) else asarray(np.asarray(q, dtype=np.float64), device=s.device)
    qt = qs.cast(dtypes.float64)
    q_axes = qt.reshape(*qt.shape, *([1] * len(rest)))  # of q's shape, then 1s for x's axes
    count = (~s.isnan()).sum(-1) if skip_nan and s.dtype.is_float else None
    last = n - 1 if count is None else count - 1
    position = q_axes * last
    lo = position.floor()
    hi = (lo + 1).minimum(last)  # NumPy's neighbour: the next element, even at a whole position
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
        raise ValueError(f"{name}: method must be 'linear', 'lower', 'higher', 'nearest' or 'midpoint', "
                         f"got {method!r}")
    shape = (*qt.shape, *rest, 1)
    # a slice of NaNs alone has no position: any index reads, and the result is NaN
    below, above = (s.broadcast_to((*qt.shape, *rest, s.shape[-1]))._gather(
        len(shape) - 1, (p - first).broadcast_to(shape[:-1]).maximum(0).cast(dtypes.int64).unsqueeze(-1)).squeeze(-1)
        for p in picks)
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
        nan = count == 0 if count is not None else t.isnan().any(-1) if select else s[..., -1].isnan()
        out = where(nan, np.nan, out).cast(out.dtype)
    if keepdims:
        out = _keep_dims(out, _tensor(x), axis, qt.ndim, name)
    bad = (qt < 0) | (qt > 1) | qt.isnan()
    return out._checked(bad, f"{name}: q must be in [0, 1]")


def percentile(x: Any, q: Any, axis: Any = None, *, method: str = "linear", keepdims: bool = False) -> Any:
    """NumPy's percentile: `quantile` of q / 100 (q in [0, 100])."""
    return quantile(x, _fraction(q), axis, method=method, keepdims=keepdims)


def nanpercentile(x: Any, q: Any, axis: Any = None, *, method: str = "linear", keepdims: bool = False) -> Any:
    """NumPy's nanpercentile: `nanquantile` of q / 100 (q in [0, 100])."""
    return nanquantile(x, _fraction(q), axis, method=method, keepdims=keepdims)


def _fraction(q: Any) -> Any:
    """A percentage as a fraction (a Python number stays one, so it keeps the result's dtype)."""
    from .tensor import Tensor
    return q / 100 if isinstance(q, (Tensor, int, float)) else np.asarray(q, dtype=np.float64) / 100


def median(x: Any, axis: Any = None, *, keepdims: bool = False) -> Any:
    """NumPy's median: the middle of each sorted slice (the mean of the two middle values for an even
    count, so infinities give what a mean of them does); NaN where the slice holds one."""
    return _median(x, axis, keepdims, skip_nan=False)


def nanmedian(x: Any, axis: Any = None, *, keepdims: bool = False) -> Any:
    """NumPy's nanmedian: `median` of each slice's values that are not NaN (NaN where all are; PyTorch's
    `Tensor.nanmedian` picks the lower middle value instead)."""
    return _median(x, axis, keepdims, skip_nan=True)


def _median(x: Any, axis: Any, keepdims: bool, skip_nan: bool) -> Any:
    """NumPy's median: the middle element, or the mean of the two middle ones, of each sorted slice (of its
    values that are not NaN, with `skip_nan`), as NumPy's `mean` of them: the sum over the count, not quantile's
    interpolation (which is NaN between an infinity and a number). A float (float64 for integers)."""
    from .tensor import where
    name = "nanmedian" if skip_nan else "median"
    t, _ = _along(x, axis, name)
    n = t.shape[-1]
    select = not (skip_nan and t.dtype.is_float) and n > 0  # the middle positions are known: select them
    s = t._sorted_at(((n - 1) // 2, n // 2)) if select else t.sort(-1)
    count = (~s.isnan()).sum(-1, keepdims=True) if skip_nan and s.dtype.is_float else None
    if select:
        lo, hi = s[..., 0], s[..., 1]
        odd = n % 2 == 1
    elif count is None:
        lo, hi = s[..., (n - 1) // 2], s[..., n // 2]
        odd = n % 2 == 1
    else:
        lo, hi = (s._gather(s.ndim - 1, i.maximum(0)).squeeze(-1) for i in ((count - 1) // 2, count // 2))
        odd = (count % 2 == 1).squeeze(-1)
    wide = s.dtype if s.dtype.is_float else dtypes.float64
    work = compute_dtype(wide)  # NumPy's mean of 16-bit floats adds in float32
    middle = (lo.cast(work) + hi.cast(work)) / 2
    out = where(odd, lo.cast(work), middle).cast(wide)
    if s.dtype.is_float:
        empty = count.squeeze(-1) == 0 if count is not None else t.isnan().any(-1) if select else s[..., -1].isnan()
        out = where(empty, np.nan, out).cast(wide)
    return _keep_dims(out, _tensor(x), axis, 0, name) if keepdims else out


def average(x: Any, axis: Any = None, weights: Any = None, returned: bool = False, *,
            keepdims: bool = False) -> Any:
    """NumPy's average: the mean over `axis`, or with `weights` the sum of `x * weights` over the sum of the
    weights. The weights have x's shape, or the shape of the axes reduced (`axis` given: `x.shape[axis]` for
    one), laid along them. Integers and bools give the default float, as `mean`. With `returned`, also the sum
    of the weights (the count without them), of the result's shape. A sum of weights of 0 gives the division's
    inf or NaN (NumPy raises ZeroDivisionError, which a lazy result cannot without reading the weights)."""
    from .dtypes import get_default_dtype, promote
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
    dt = dt if dt.is_float else get_default_dtype()
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


def histc(input: Any, bins: int = 100, min: float = 0, max: float = 0) -> Any:
    """PyTorch's histc: the counts of input's values in `bins` equal bins over [min, max] (over the data's
    extremes where min == max, widened by 1 each way where those are equal too), in input's float dtype;
    values outside are left out, the last bin closed on both sides. Lazy: the extremes are read in the kernel."""
    from .tensor import where
    t = _tensor(input).reshape(-1)
    if not t.dtype.is_float:
        raise DTypeError(f"histc: input must be floats, got {t.dtype.name}")
    if bins <= 0:
        raise ValueError(f"histc: bins must be positive, got {bins}")
    if min > max:
        raise ValueError(f"histc: min {min} is above max {max}")
    wide = t.cast(dtypes.float64)
    if min == max and t.numel():
        lo, hi = wide.min(), wide.max()
        lo, hi = where(lo == hi, lo - 1, lo), where(lo == hi, hi + 1, hi)
    else:
        lo = wide._const(float(min), dtypes.float64, t.device)
        hi = wide._const(float(max) + (min == max), dtypes.float64, t.device)
    position = ((wide - lo) / (hi - lo) * bins).floor().cast(dtypes.int64)
    position = where(wide == hi, bins - 1, position)  # the last bin holds its right edge
    inside = (wide >= lo) & (wide <= hi)
    from .creation import zeros
    counts = zeros(bins, dtype=dtypes.int64, device=t.device)
    if t.numel():
        one = t._const(1, dtypes.int64, t.device).broadcast_to(t.shape)
        counts = counts._scatter(0, where(inside, position, bins), one, ReduceOp.SUM)
    return counts.cast(t.dtype)


def histogram(x: Any, bins: Any = 10, range: tuple[float, float] | None = None, density: bool = False,
              weights: Any = None) -> tuple[Any, Any]:
    """NumPy's histogram: the counts (or summed weights, or densities) of x's values in `bins` equal bins
    over `range` (x's extremes, read first, when None), or in the bins between the given edges; every bin
    is closed on the left and open on the right but the last, closed on both sides. Returns (counts,
    edges); values outside the range are left out."""
    t = _tensor(x).reshape(-1)
    edges, equal = _edges(t, bins, range, "histogram")
    slot = _slots(t.cast(dtypes.float64), edges, equal)
    n_bins = edges.shape[0] - 1
    from .creation import zeros
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


def histogram_bin_edges(a: Any, bins: Any = 10, range: tuple[float, float] | None = None,
                        weights: Any = None) -> Any:
    """NumPy's histogram_bin_edges: the edges `histogram(a, bins, range)` counts between (`weights` does not
    change them)."""
    return _edges(_tensor(a).reshape(-1), bins, range, "histogram_bin_edges")[0]


def histogramdd(sample: Any, bins: Any = 10, range: Any = None, density: bool | None = None,
                weights: Any = None) -> tuple[Any, list[Any]]:
    """NumPy's histogramdd: the counts (float64; or summed weights, or densities) of the N points of `sample`
    (an (N, D) tensor, or D sequences of N coordinates) in a D-dimensional grid of bins, and the D arrays of
    edges. `bins` is, per dimension or for all, a count of equal bins (over `range[i]`, or the coordinates'
    extremes, read first) or the edges; each bin is closed on the left and open on the right but the last,
    closed on both sides; points outside are left out."""
    from .creation import asarray, zeros
    from .movement import stack
    from .tensor import Tensor, where
    if isinstance(sample, Tensor) and sample.ndim == 2:
        points = sample
    elif isinstance(sample, (list, tuple)):
        points = stack([_tensor(c).reshape(-1) for c in sample], axis=-1)
    else:
        points = asarray(sample).reshape(-1, 1) if _tensor(sample).ndim <= 1 else _tensor(sample)
    if points.ndim != 2:
        raise ShapeError(f"histogramdd: sample must be (N, D) or D sequences, got shape {points.shape}")
    n, d = points.shape
    if d == 0:
        raise ShapeError("histogramdd: the points have no coordinates (sample of shape (N, 0))")
    per_dim = [bins] * d if _bin_count(bins) is not None else list(bins)
    if len(per_dim) != d:
        raise ValueError(f"histogramdd: {len(per_dim)} entries of bins for points of {d} dimensions")
    if range is not None and len(range) != d:
        raise ValueError(f"histogramdd: {len(range)} entries of range for points of {d} dimensions")
    given = [None] * d if range is None else list(range)
    if n and any(_bin_count(b) is not None and r is None for b, r in zip(per_dim, given)):
        from .tensor import realize
        wide = points.cast(dtypes.float32) if points.dtype == dtypes.bfloat16 else points
        lows, highs = wide.min(0), wide.max(0)
        realize(lows, highs)
        lows, highs = lows.numpy(), highs.numpy()
    edges, slots, sizes = [], [], []
    for i, b in enumerate(per_dim):
        coordinate = points[:, i]
        if (count := _bin_count(b)) is not None:
            if count < 1:
                raise ValueError(f"histogramdd: bins[{i}] must be positive, got {count}")
            extremes = (lows[i], highs[i]) if given[i] is None and n else None
            low, high = _outer_edges(given[i], extremes, "histogramdd")
            grid = np.linspace(low, high, count + 1)
            edge = asarray(grid, device=points.device)
            equal = (float(low), float(high)) if np.all(grid[:-1] < grid[1:]) else None
        else:
            edge, equal = _given_edges(b, f"histogramdd: bins[{i}]"), None
        edges.append(edge)
        slots.append(_slots(coordinate.cast(dtypes.float64), edge, equal))
        sizes.append(edge.shape[0] - 1)
    total = math.prod(sizes)
    flat = slots[0] * 0
    outside = flat != 0
    for slot, size in zip(slots, sizes):
        flat, outside = flat * size + slot, outside | (slot == size)
    flat = where(outside, total, flat)
    w = (flat * 0 + 1).cast(dtypes.float64) if weights is None else _tensor(weights).reshape(-1).cast(dtypes.float64)
    if w.shape != (n,):
        raise ShapeError(f"histogramdd: weights of shape {w.shape} for {n} points")
    hist = zeros(total, dtype=dtypes.float64, device=points.device)._scatter(0, flat, w, ReduceOp.SUM).reshape(sizes)
    if density:
        whole = hist.sum()
        for i, edge in enumerate(edges):
            hist = hist / (edge[1:] - edge[:-1]).reshape((1,) * i + (-1,) + (1,) * (d - i - 1))
        hist = hist / whole
    return hist, edges


def histogram2d(x: Any, y: Any, bins: Any = 10, range: Any = None, density: bool | None = None,
                weights: Any = None) -> tuple[Any, Any, Any]:
    """NumPy's histogram2d: `histogramdd` of the points (x[k], y[k]); `bins` is a count or edges for both, or a
    pair of those. Returns (counts, x's edges, y's edges)."""
    pair = _bin_count(bins) is not None or len(bins) == 2
    hist, edges = histogramdd([x, y], bins if pair else [bins, bins], range, density, weights)
    return hist, edges[0], edges[1]


def _outer_edges(given: Any, extremes: tuple[Any, Any] | None, name: str) -> tuple[Any, Any]:
    """NumPy's outer edges of equal bins: the given range, else the data's extremes (host scalars of its dtype),
    else (0, 1) for no data; widened by a half each way where they are equal."""
    low, high = given if given is not None else extremes if extremes is not None else (0, 1)
    if not (np.isfinite(low) and np.isfinite(high)):
        raise ValueError(f"{name}: the range ({low}, {high}) is not finite")
    if low > high:
        raise ValueError(f"{name}: max must be larger than min in range, got ({low}, {high})")
    return (low - 0.5, high + 0.5) if low == high else (low, high)


def _bin_count(bins: Any) -> int | None:
    """`bins` as a count of equal bins (a Python or NumPy integer), or None (edges)."""
    if isinstance(bins, (list, tuple)):
        return None
    try:
        return operator.index(bins) if np.ndim(bins) == 0 else None
    except TypeError:
        return None


def _given_edges(bins: Any, what: str) -> Any:
    edges = _tensor(bins)
    if edges.ndim != 1 or edges.shape[0] < 2:
        raise ValueError(f"{what}: bin edges must be a 1-d sequence of at least 2, got shape {edges.shape}")
    return edges


def _edges(t: Any, bins: Any, range: tuple[float, float] | None, name: str) -> tuple[Any, tuple[float, float] | None]:
    """histogram's edges for the flat `t`, and for `bins` equal bins their outer edges (None for given edges).
    Equal bins are NumPy's: its `linspace` on the host, in the type NumPy picks from the outer edges and t's
    dtype (float64 for integers), so that each edge rounds as NumPy's does; bins narrower than that type
    resolves are an error, as NumPy's."""
    if (count := _bin_count(bins)) is None:
        return _given_edges(bins, name), None
    bins = count
    if bins < 1:
        raise ValueError(f"{name}: bins must be positive, got {bins}")
    from .creation import asarray
    from .tensor import realize
    host = np.dtype(np.float32) if t.dtype == dtypes.bfloat16 else dtypes.to_numpy_dtype(t.dtype)
    extremes = None
    if range is None and t.numel():
        low_t, high_t = t.min(), t.max()
        realize(low_t, high_t)
        extremes = host.type(low_t.item()), host.type(high_t.item())
    low, high = _outer_edges(range, extremes, name)
    edge_type = np.result_type(low, high, np.empty(0, host))
    if not np.issubdtype(edge_type, np.floating):
        edge_type = np.result_type(edge_type, float)
    edges = np.linspace(low, high, bins + 1, dtype=edge_type)
    if np.any(edges[:-1] >= edges[1:]):
        raise ValueError(f"{name}: too many bins for the data range: cannot make {bins} bins of nonzero "
                         f"width between {low} and {high} in {edge_type}")
    edge_dtype = t.dtype if t.dtype.is_float else dtypes.float64
    return asarray(edges, device=t.device).cast(edge_dtype), (float(low), float(high))


def _slots(values: Any, edges: Any, equal: tuple[float, float] | None) -> Any:
    """The bin of each value (float64) among the ascending `edges`, each bin closed on the left and open on the
    right but the last, closed on both sides; the number of bins for values outside the edges (and NaN).
    For equal bins from `equal`'s low to high edge (strictly ascending edges), NumPy's algorithm, no search:
    the bin the value's scaled distance from the low edge says, moved by one where that lands beside the edge
    the value is on (the rounding of the distance and of the edges)."""
    from .sorting import searchsorted
    from .tensor import where
    n_bins, last = edges.shape[0] - 1, edges[-1]
    if equal is None:
        slot = searchsorted(edges, values, side="right") - 1
        slot = where(values == last, n_bins - 1, slot)
    else:
        low, high = equal
        slot = ((values - low) * (n_bins / (high - low))).cast(dtypes.int64).maximum(0).minimum(n_bins - 1)
        slot = slot - (values < edges._gather(0, slot)).cast(dtypes.int64)
        slot = slot + ((values >= edges._gather(0, slot + 1)) & (slot != n_bins - 1)).cast(dtypes.int64)
    return where((values >= edges[0]) & (values <= last), slot, n_bins)


def ptp(a: Any, axis: Any = None, keepdims: bool = False) -> Any:
    """NumPy's ptp ("peak to peak"): the maximum less the minimum over `axis`, in a's dtype (integers wrap,
    as NumPy's; NaN where a slice holds one)."""
    t = _tensor(a)
    if t.dtype == dtypes.bool_:
        raise DTypeError("ptp: the difference of bools is undefined (NumPy's subtract refuses them)")
    return t.max(axis, keepdims) - t.min(axis, keepdims)


def cov(m: Any, y: Any = None, rowvar: bool = True, bias: bool = False, ddof: int | None = None,
        fweights: Any = None, aweights: Any = None, *, dtype: Any = None) -> Any:
    """NumPy's covariance matrix of the variables in the rows of m (columns where not `rowvar`), y's rows added
    as more variables: the sums of the products of the deviations from each variable's mean, over the count less
    `ddof` (1, or 0 with `bias`). `fweights` (integer repeat counts) and `aweights` (relative weights) weight the
    observations as NumPy's. One variable gives a 0-d result. Integers and bools give the default float, as
    `mean` (NumPy's float64); a count of observations at or below ddof gives inf or NaN, as NumPy's."""
    from .movement import concat
    x = _tensor(m)
    if x.ndim > 2:
        raise ShapeError(f"cov: m has more than 2 dimensions, shape {x.shape}")
    dt = dtypes.to_dtype(dtype) if dtype is not None else x.dtype if x.dtype.is_float else dtypes.get_default_dtype()
    x = x.reshape(1, -1) if x.ndim < 2 else x if rowvar else x.T
    if y is not None:
        other = _tensor(y)
        if other.ndim > 2:
            raise ShapeError(f"cov: y has more than 2 dimensions, shape {other.shape}")
        other = other.reshape(1, -1) if other.ndim < 2 else other if rowvar else other.T
        dt = dtypes.promote(dt, other.dtype) if other.dtype.is_float else dt
        x = concat([x.cast(dt), other.cast(dt)], 0)
    x = x.cast(dt)
    ddof = (0 if bias else 1) if ddof is None else ddof
    n = x.shape[1]
    weights = None
    for w, name in ((fweights, "fweights"), (aweights, "aweights")):
        if w is not None:
            w = _tensor(w)
            if w.ndim != 1 or w.shape[0] != n:
                raise ShapeError(f"cov: {name} must be 1-d of the {n} observations, got shape {w.shape}")
            weights = w.cast(dt) if weights is None else weights * w.cast(dt)
    if weights is None:
        mean = x.mean(1, keepdims=True)
        factor = n - ddof
    else:
        total = weights.sum()
        mean = (x * weights).sum(1, keepdims=True) / total
        factor = total - ddof if aweights is None else \
            total - ddof * (weights * _tensor(aweights).cast(dt)).sum() / total
    deviation = x - mean
    weighted = deviation if weights is None else deviation * weights
    c = (weighted @ deviation.T) / factor
    return (c.reshape(()) if c.shape == (1, 1) else c).cast(dt)


def corrcoef(x: Any, y: Any = None, rowvar: bool = True, *, dtype: Any = None) -> Any:
    """NumPy's Pearson correlation coefficients: `cov` over the square roots of the products of the variances,
    clipped to [-1, 1]."""
    c = cov(x, y, rowvar, dtype=dtype)
    if c.ndim == 0:
        return c / c
    d = c.diagonal().sqrt()
    return (c / d.reshape(-1, 1) / d.reshape(1, -1)).clip(-1, 1)


def digitize(x: Any, bins: Any, right: bool = False) -> Any:
    """NumPy's digitize: the index of the bin of each value of x in the 1-d monotonic `bins`: i with
    bins[i-1] <= x < bins[i] for increasing bins (bins[i-1] < x <= bins[i] with `right`), the mirror for
    decreasing ones; 0 and len(bins) beyond either end. int64. Which way the bins run is not read: both
    searches are made, and bins[0] <= bins[-1] picks one (bins that are not monotonic, which NumPy refuses,
    are not detected)."""
    from .sorting import searchsorted
    from .tensor import where
    t, edges = _tensor(x), _tensor(bins)
    if edges.ndim != 1:
        raise ShapeError(f"digitize: bins must be 1-d, got shape {edges.shape}")
    side = "left" if right else "right"
    increasing = searchsorted(edges, t, side=side)
    if edges.shape[0] < 2:
        return increasing
    decreasing = edges.shape[0] - searchsorted(edges.flip(0), t, side=side)
    return where(edges[0] <= edges[-1], increasing, decreasing)


def interp(x: Any, xp: Any, fp: Any, left: Any = None, right: Any = None) -> Any:
    """NumPy's one-dimensional linear interpolation: at each x, the line between the points (xp[j], fp[j]) and
    (xp[j+1], fp[j+1]) around it, `xp` increasing; fp[0] (or `left`) before xp[0], fp[-1] (or `right`) after
    xp[-1], and fp[j] at a point of xp itself, with NumPy's formula and its fallbacks at infinite slopes. The
    dtype: of x, xp and fp, floats promoted together (integers and bools the default float)."""
    from .sorting import searchsorted
    from .tensor import where
    t, xs, ys = _tensor(x), _tensor(xp), _tensor(fp)
    if xs.ndim != 1 or ys.ndim != 1 or xs.shape != ys.shape:
        raise ShapeError(f"interp: xp and fp must be 1-d of one length, got shapes {xs.shape} and {ys.shape}")
    if xs.shape[0] == 0:
        raise ValueError("interp: xp and fp are empty")
    floats = [u.dtype for u in (t, xs, ys) if u.dtype.is_float]
    dt = functools.reduce(dtypes.promote, floats) if floats else dtypes.get_default_dtype()
    t, xs, ys = t.cast(dt), xs.cast(dt), ys.cast(dt)
    n = xs.shape[0]
    j = (searchsorted(xs, t, side="right") - 1).clip(0, max(n - 2, 0))
    x0, y0 = xs[j], ys[j]
    x1, y1 = xs[(j + 1).clip(0, n - 1)], ys[(j + 1).clip(0, n - 1)]
    slope = (y1 - y0) / (x1 - x0)
    out = slope * (t - x0) + y0
    out = where(out.isnan(), slope * (t - x1) + y1, out)  # NumPy's fallbacks where the slope is infinite
    out = where(out.isnan() & (y0 == y1), y0, out)
    out = where(t == x0, y0, out)
    out = where(t == xs[-1], ys[-1], where(t > xs[-1], ys[-1] if right is None else right, out))
    out = where(t < xs[0], ys[0] if left is None else left, out)
    return where(t.isnan(), t, out).cast(dt)


__all__ = ["average", "bincount", "corrcoef", "cov", "digitize", "histogram", "interp", "median", "nanmedian",
           "nanpercentile", "nanquantile", "percentile", "ptp", "quantile"]
