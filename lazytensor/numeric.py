"""NumPy's numerical routines of differences, sums of products and index arithmetic: `ediff1d`, `gradient`,
`trapezoid`, `convolve`, `correlate`, `polyval`, `polyfit`, `unravel_index`, `ravel_multi_index`. Compositions of slices,
gathers and elementwise ops (differentiable where those are), with NumPy's results and lazytensor's dtypes."""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from . import dtypes
from .creation import asarray, zeros_like
from .errors import ShapeError
from .movement import concat, normalize_axis
from .tensor import Tensor


def _along(x: Tensor, axis: int, start: int | None, stop: int | None) -> Tensor:
    """x[..., start:stop, ...] along `axis`."""
    index: list[Any] = [slice(None)] * x.ndim
    index[axis] = slice(start, stop)
    return x[tuple(index)]


def ediff1d(ary: Any, to_end: Any = None, to_begin: Any = None) -> Tensor:
    """NumPy's ediff1d: the differences of consecutive elements of the flattened tensor, `to_begin` before them
    and `to_end` after (flattened, in the tensor's dtype)."""
    flat = asarray(ary).reshape(-1)
    parts = [flat[1:] - flat[:-1]]
    if to_begin is not None:
        parts.insert(0, asarray(to_begin).reshape(-1).cast(flat.dtype))
    if to_end is not None:
        parts.append(asarray(to_end).reshape(-1).cast(flat.dtype))
    return concat(parts, 0) if len(parts) > 1 else parts[0]


def trapezoid(y: Any, x: Any = None, dx: float = 1.0, axis: int = -1) -> Tensor:
    """NumPy's trapezoid rule: the integral of y along `axis`, sampled at `x` (1-d along the axis, or of y's
    shape) or `dx` apart."""
    return _trapezoids(y, x, dx, axis, "trapezoid").sum(normalize_axis(axis, asarray(y).ndim, "trapezoid"))


def cumulative_trapezoid(y: Any, x: Any = None, *, dx: float | None = None, dim: int = -1) -> Tensor:
    """PyTorch's cumulative_trapezoid (SciPy's without `initial`): the running integral of y along `dim` by the
    trapezoid rule, one element fewer than y there."""
    a = normalize_axis(dim, asarray(y).ndim, "cumulative_trapezoid")
    return _trapezoids(y, x, 1.0 if dx is None else dx, a, "cumulative_trapezoid").cumsum(a)


def trapz(y: Any, x: Any = None, *, dx: float | None = None, dim: int = -1) -> Tensor:
    """PyTorch's trapz: `trapezoid` along `dim`."""
    return trapezoid(y, x, 1.0 if dx is None else dx, dim)


def _trapezoids(y: Any, x: Any, dx: float, axis: int, name: str) -> Tensor:
    """The trapezoids' areas between consecutive samples of y along `axis` (see `trapezoid`)."""
    t = asarray(y)
    a = normalize_axis(axis, t.ndim, name)
    if x is None:
        d: Any = dx
    else:
        xs = asarray(x)
        if xs.ndim == 1:
            d = (xs[1:] - xs[:-1]).reshape(tuple(-1 if k == a else 1 for k in range(t.ndim)))
        else:
            d = _along(xs, a, 1, None) - _along(xs, a, None, -1)
    return d * (_along(t, a, 1, None) + _along(t, a, None, -1)) / 2.0


def unwrap(p: Any, discont: float | None = None, axis: int = -1, *, period: float = 2 * math.pi) -> Tensor:
    """NumPy's unwrap: each jump between neighbours along `axis` larger than `discont` (at least period / 2) taken
    back into (-period / 2, period / 2] by adding multiples of `period` to all that follow (a phase's 2 pi jumps
    removed). Integers give the default float."""
    from .tensor import where
    x = asarray(p)
    x = x if x.dtype.is_float else x.cast(dtypes.get_default_dtype())
    a = normalize_axis(axis, x.ndim, "unwrap")
    step = _along(x, a, 1, None) - _along(x, a, None, -1)
    high = period / 2
    wrapped = (step + high) % period - high
    wrapped = where((wrapped == -high) & (step > 0), high, wrapped)
    correction = where(step.abs() < (high if discont is None else discont), 0.0, wrapped - step)
    return concat([_along(x, a, None, 1), _along(x, a, 1, None) + correction.cumsum(a)], a)


def gradient(f: Any, *varargs: Any, axis: Any = None, edge_order: int = 1) -> Any:
    """NumPy's gradient: central differences inside, one-sided ones of order `edge_order` (1 or 2) at the ends,
    along each axis of `axis` (all by default), the samples `varargs` apart: one spacing for all axes, one per
    axis, each a number or the 1-d coordinates along it. A tensor for one axis, else a tuple; integers give the
    default float (NumPy's float64)."""
    t = asarray(f)
    if not t.dtype.is_float:
        t = t.cast(dtypes.get_default_dtype())
    axes = tuple(range(t.ndim)) if axis is None else \
        tuple(normalize_axis(a, t.ndim, "gradient") for a in ((axis,) if isinstance(axis, int) else axis))
    if len(varargs) == 0:
        spacings: Sequence[Any] = [1.0] * len(axes)
    elif len(varargs) == 1 and (not isinstance(varargs[0], (Tensor, list, tuple)) or asarray(varargs[0]).ndim == 0):
        spacings = [varargs[0]] * len(axes)
    elif len(varargs) == len(axes):
        spacings = varargs
    else:
        raise TypeError(f"gradient: give one spacing or one per axis ({len(axes)}), got {len(varargs)}")
    if edge_order not in (1, 2):
        raise ValueError(f"gradient: edge_order must be 1 or 2, got {edge_order}")
    out = tuple(_gradient_along(t, a, h, edge_order) for a, h in zip(axes, spacings))
    return out[0] if len(out) == 1 else out


def _gradient_along(t: Tensor, a: int, h: Any, edge_order: int) -> Tensor:
    n = t.shape[a]
    if n < edge_order + 1:
        raise ValueError(f"gradient: an axis of {n} elements is too short for edge_order {edge_order}: it needs "
                         f"{edge_order + 1} at least")

    def part(start: int | None, stop: int | None) -> Tensor:
        return _along(t, a, start, stop)

    def shaped(d: Tensor) -> Tensor:
        return d.reshape(tuple(-1 if k == a else 1 for k in range(t.ndim)))

    if isinstance(h, (Tensor, list, tuple)) and asarray(h).ndim == 1:
        x = asarray(h)
        if x.shape[0] != n:
            raise ShapeError(f"gradient: the coordinates hold {x.shape[0]} values along an axis of {n}")
        x = x if x.dtype.is_float else x.cast(dtypes.get_default_dtype())
        steps = x[1:] - x[:-1]
        d1, d2 = shaped(steps[:-1]), shaped(steps[1:])  # the steps before and after each inner point
        inner = (-d2 / (d1 * (d1 + d2)) * part(None, -2) + (d2 - d1) / (d1 * d2) * part(1, -1)
                 + d1 / (d2 * (d1 + d2)) * part(2, None))
        if edge_order == 1:
            begin = (part(1, 2) - part(0, 1)) / steps[0]
            end = (part(-1, None) - part(-2, -1)) / steps[-1]
        else:
            d1, d2 = steps[0], steps[1]
            begin = (-(2 * d1 + d2) / (d1 * (d1 + d2)) * part(0, 1) + (d1 + d2) / (d1 * d2) * part(1, 2)
                     - d1 / (d2 * (d1 + d2)) * part(2, 3))
            d1, d2 = steps[-2], steps[-1]
            end = (d2 / (d1 * (d1 + d2)) * part(-3, -2) - (d2 + d1) / (d1 * d2) * part(-2, -1)
                   + (2 * d2 + d1) / (d2 * (d1 + d2)) * part(-1, None))
    else:
        h = asarray(h).reshape(()) if isinstance(h, (Tensor, list, tuple)) else h
        inner = (part(2, None) - part(None, -2)) / (2.0 * h)
        if edge_order == 1:
            begin = (part(1, 2) - part(0, 1)) / h
            end = (part(-1, None) - part(-2, -1)) / h
        else:
            begin = -1.5 / h * part(0, 1) + 2.0 / h * part(1, 2) - 0.5 / h * part(2, 3)
            end = 0.5 / h * part(-3, -2) - 2.0 / h * part(-2, -1) + 1.5 / h * part(-1, None)
    return concat([begin, inner, end], a).cast(t.dtype)


def convolve(a: Any, v: Any, mode: str = "full") -> Tensor:
    """NumPy's discrete linear convolution of two 1-d tensors: 'full' (every overlap, len(a) + len(v) - 1),
    'same' (the length of the longer, centred) or 'valid' (full overlaps only)."""
    x, w = asarray(a), asarray(v)
    if x.ndim != 1 or w.ndim != 1:
        raise ShapeError(f"convolve: needs two 1-d tensors, got shapes {x.shape} and {w.shape}")
    if x.shape[0] == 0 or w.shape[0] == 0:
        raise ValueError("convolve: a and v must not be empty")
    if w.shape[0] > x.shape[0]:
        x, w = w, x
    n, m = x.shape[0], w.shape[0]
    if mode not in ("full", "same", "valid"):
        raise ValueError(f"convolve: mode must be 'full', 'same' or 'valid', got {mode!r}")
    padded = x.pad([(m - 1, m - 1)])
    from .creation import arange
    windows = arange(n + m - 1, device=x.device).reshape(-1, 1) + arange(m, device=x.device).reshape(1, -1)
    full = (padded[windows] * w.flip(0)).sum(1)
    if mode == "same":
        return full[(m - 1) // 2:(m - 1) // 2 + n]
    return full[m - 1:n] if mode == "valid" else full


def correlate(a: Any, v: Any, mode: str = "valid") -> Tensor:
    """NumPy's cross-correlation of two 1-d real tensors: `convolve(a, v[::-1], mode)`, reversed from the
    correlation of v with a where v is the longer, as NumPy's."""
    x, w = asarray(a), asarray(v)
    if x.ndim != 1 or w.ndim != 1:
        raise ShapeError(f"correlate: needs two 1-d tensors, got shapes {x.shape} and {w.shape}")
    if w.shape[0] > x.shape[0]:
        return convolve(w, x.flip(0), mode).flip(0)
    return convolve(x, w.flip(0), mode)


def polyval(p: Any, x: Any) -> Tensor:
    """NumPy's polyval: the polynomial of coefficients `p` (highest power first) at x, by Horner's rule."""
    coefficients, t = asarray(p), asarray(x)
    if coefficients.ndim != 1:
        raise ShapeError(f"polyval: the coefficients must be 1-d, got shape {coefficients.shape}")
    y = zeros_like(t)
    for k in range(coefficients.shape[0]):
        y = y * t + coefficients[k]
    return y


def polyfit(x: Any, y: Any, deg: int, rcond: float | None = None, full: bool = False, w: Any = None,
            cov: bool = False) -> Any:
    """NumPy's polyfit: the coefficients (highest power first) of the degree-`deg` polynomial nearest to the
    points (x, y) in least squares, for a 1-d y or for each column of a 2-d one; weights `w` multiply the
    residuals. As NumPy computes it: the Vandermonde matrix's columns scaled to unit norm, then `linalg.lstsq`
    (so LAPACK's, on the CPU). `full=True` also gives the residuals, the rank, the singular values and rcond.
    NumPy's warning for a rank-deficient fit would read the rank from the data: none is given (compare the rank
    from `full=True`); `cov=True` is not supported."""
    from .creation import vander
    from .linalg import lstsq
    if cov:
        raise TypeError("polyfit: cov=True is not supported")
    order = int(deg) + 1
    if order < 1:
        raise ValueError(f"polyfit: the degree must be non-negative, got {deg}")
    xs, ys = asarray(x), asarray(y)
    dt = dtypes.promote(xs.dtype, ys.dtype)
    dt = dt if dt.is_float else dtypes.get_default_dtype()
    xs, ys = xs.cast(dt), ys.cast(dt)
    if xs.ndim != 1 or xs.shape[0] == 0:
        raise ShapeError(f"polyfit: x must be a non-empty 1-d tensor, got shape {xs.shape}")
    if ys.ndim not in (1, 2) or ys.shape[0] != xs.shape[0]:
        raise ShapeError(f"polyfit: y must be 1-d or 2-d with x's {xs.shape[0]} rows, got shape {ys.shape}")
    if rcond is None:
        rcond = xs.shape[0] * dtypes.finfo(dt).eps
    lhs, rhs = vander(xs, order), ys
    if w is not None:
        weights = asarray(w).cast(dt)
        if weights.shape != xs.shape:
            raise ShapeError(f"polyfit: w must have x's shape {xs.shape}, got {weights.shape}")
        lhs = lhs * weights[:, None]
        rhs = rhs * (weights if rhs.ndim == 1 else weights[:, None])
    scale = (lhs * lhs).sum(0).sqrt()
    c, residuals, rank, singular = lstsq(lhs / scale, rhs, rcond)
    c = c / (scale if c.ndim == 1 else scale[:, None])
    return (c, residuals, rank, singular, rcond) if full else c


def unravel_index(indices: Any, shape: Sequence[int]) -> tuple[Tensor, ...]:
    """NumPy's unravel_index: the int64 coordinates, one tensor per axis of `shape`, of flat row-major indices
    into a tensor of that shape. An index outside [0, size) raises IndexError when the result is computed."""
    index = asarray(indices)
    if not index.dtype.is_int:
        raise TypeError(f"unravel_index: the indices must be integers, got {index.dtype.name}")
    index = index.cast(dtypes.int64)
    dims = tuple(int(n) for n in (shape if isinstance(shape, (tuple, list)) else (shape,)))
    size = 1
    for n in dims:
        size *= n
    index = index._checked((index < 0) | (index >= size), f"unravel_index: an index is out of bounds for size {size}")
    out = []
    stride = size
    for n in dims:
        stride //= max(n, 1)
        out.append(index // stride % n if n else index * 0)
    return tuple(out)


def ravel_multi_index(multi_index: Sequence[Any], dims: Sequence[int], mode: str = "raise") -> Tensor:
    """NumPy's ravel_multi_index: the flat row-major int64 indices of coordinates (one integer tensor per axis of
    `dims`, broadcast together). A coordinate outside its axis raises IndexError when the result is computed
    (mode 'raise'), wraps ('wrap') or is clipped ('clip')."""
    coords = [asarray(c) for c in multi_index]
    shape = tuple(int(n) for n in dims)
    if len(coords) != len(shape):
        raise ValueError(f"ravel_multi_index: {len(coords)} coordinates for {len(shape)} dimensions")
    if mode not in ("raise", "wrap", "clip"):
        raise ValueError(f"ravel_multi_index: mode must be 'raise', 'wrap' or 'clip', got {mode!r}")
    flat: Any = 0
    bad: Any = None
    for c, n in zip(coords, shape):
        if not c.dtype.is_int:
            raise TypeError(f"ravel_multi_index: the coordinates must be integers, got {c.dtype.name}")
        c = c.cast(dtypes.int64)
        if mode == "wrap":
            c = c % n
        elif mode == "clip":
            c = c.clip(0, n - 1)
        else:
            outside = (c < 0) | (c >= n)
            bad = outside if bad is None else bad | outside
        flat = flat * n + c
    out = asarray(flat)
    return out._checked(bad, "ravel_multi_index: invalid entry in coordinates array") if bad is not None else out


__all__ = ["convolve", "correlate", "cumulative_trapezoid", "ediff1d", "gradient", "polyval", "ravel_multi_index",
           "trapezoid", "trapz", "unravel_index", "unwrap"]
