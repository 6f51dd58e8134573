"""Padding, resizing, sampling and rearranging the spatial axes (PyTorch's `F.pad`, `F.interpolate`,
`F.affine_grid`, `F.grid_sample`, `F.pixel_shuffle`, `F.pixel_unshuffle`): each axis's map from output to input
positions is computed once, from the shapes; movement ops where it is one (a view, index arithmetic in the loads
of the kernel that reads it), a gather of the positions elsewhere. `grid_sample`'s positions come from data: lazy
ops of the grid, then one gather. Their gradients come from those ops' rules."""
from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..creation import asarray
from ..dtypes import int64
from ..errors import DTypeError, ShapeError
from ..movement import padded_along, stack, take_positions
from ..tensor import Tensor, where

# ---- pad ----------------------------------------------------------------------------------------------------


def pad(input: Tensor, pad: Sequence[int], mode: str = "constant", value: float | None = None) -> Tensor:
    """PyTorch's `F.pad`: `pad` lists (before, after) amounts for the last axis, then the one before, ... (up
    to every axis). Modes 'constant' (with `value`, 0 by default), 'reflect' (mirrored about the edge
    element, each amount below the axis's size), 'replicate' (the edge element repeated) and 'circular'
    (wrapped around, each amount at most the axis's size). A negative amount crops (first, in every mode, as
    PyTorch). The non-constant modes pad any number of the last axes (PyTorch: 1 to 3 of a 2-d to 5-d
    input)."""
    amounts = [int(p) for p in pad]
    if len(amounts) % 2 or len(amounts) // 2 > input.ndim:
        raise ValueError(f"pad: needs an even number of amounts, at most two per axis ({input.ndim} axes), got "
                         f"{tuple(amounts)}")
    if mode not in ("constant", "reflect", "replicate", "circular"):
        raise ValueError(f"pad: mode must be 'constant', 'reflect', 'replicate' or 'circular', got {mode!r}")
    if mode != "constant" and value is not None and value != 0:
        raise ValueError(f"pad: a value ({value}) only goes with mode='constant'")
    k = len(amounts) // 2
    pairs = [(0, 0)] * (input.ndim - k) + [(amounts[2 * i], amounts[2 * i + 1]) for i in reversed(range(k))]
    for axis, (before, after) in enumerate(pairs):
        if input.shape[axis] + before + after < 0:
            raise ShapeError(f"pad: amounts {(before, after)} leave a negative size of axis {axis} "
                             f"(size {input.shape[axis]})")
    x = input._shrink([(max(-b, 0), n - max(-a, 0), 1) for n, (b, a) in zip(input.shape, pairs)])
    grow = [(max(b, 0), max(a, 0)) for b, a in pairs]
    if mode == "constant":
        return x.pad(grow, value=0 if value is None else value)
    for axis, (before, after) in enumerate(grow):
        if before or after:
            n = x.shape[axis]
            if mode == "replicate" and n == 0 or max(before, after) > (n - 1 if mode == "reflect" else n):
                raise ShapeError(f"pad: {mode} padding of {(before, after)} along axis {axis} of size {n} needs "
                                 + ("a non-empty axis" if mode == "replicate" else
                                    f"amounts {'below' if mode == 'reflect' else 'at most'} the size"))
            x = padded_along(x, axis, before, after, _NUMPY_MODE[mode])
    return x


_NUMPY_MODE = {"reflect": "reflect", "replicate": "edge", "circular": "wrap"}  # PyTorch's names, NumPy's


# ---- interpolate ----------------------------------------------------------------------------------------------

_MODE_RANK = {"linear": 1, "bilinear": 2, "bicubic": 2, "trilinear": 3}


def interpolate(input: Tensor, size: Any = None, scale_factor: Any = None, mode: str = "nearest",
                align_corners: bool | None = None, recompute_scale_factor: bool | None = None,
                antialias: bool = False) -> Tensor:
    """PyTorch's `F.interpolate` of an (N, C, *spatial) input with 1 to 3 spatial axes, to `size` or by
    `scale_factor`, in mode 'nearest', 'nearest-exact', 'linear', 'bilinear', 'bicubic' or 'trilinear', with
    PyTorch's source positions (computed as it does, in float32 for the ratios, the opmath type for the
    weights). Axis by axis, the last first: where an axis's positions are a view (the same size, an integer
    enlargement in 'nearest', an integer reduction) they are movement ops; elsewhere gathers of the
    positions, and the interpolating modes weigh 2 ('linear') or 4 ('bicubic') of them. 'area' is adaptive
    average pooling to the output size. antialias is not supported."""
    if antialias:
        raise NotImplementedError("interpolate: antialias is not supported")
    if mode not in ("nearest", "nearest-exact", "area", *_MODE_RANK):
        raise NotImplementedError(f"interpolate: mode {mode!r} is not supported (nearest, nearest-exact, area, "
                                  "linear, bilinear, bicubic, trilinear)")
    nd = input.ndim - 2
    if nd not in (1, 2, 3) or (mode in _MODE_RANK and _MODE_RANK[mode] != nd):
        need = f"{_MODE_RANK[mode] + 2}-d" if mode in _MODE_RANK else "3-d to 5-d"
        raise ValueError(f"interpolate: mode {mode!r} needs a {need} input (N, C, *spatial), got shape {input.shape}")
    if mode in ("nearest", "nearest-exact", "area") and align_corners is not None:
        raise ValueError("interpolate: align_corners only goes with the interpolating modes (linear, bilinear, "
                         "bicubic, trilinear)")
    if (size is None) == (scale_factor is None):
        raise ValueError("interpolate: give either size or scale_factor")
    spatial = input.shape[2:]
    if size is not None:
        out = [int(size)] * nd if isinstance(size, int) else [int(s) for s in size]
        scales: list[float | None] = [None] * nd
    else:
        factors = [float(scale_factor)] * nd if isinstance(scale_factor, (int, float)) else \
            [float(s) for s in scale_factor]
        out = [math.floor(n * f) for n, f in zip(spatial, factors)]
        scales = [None] * nd if recompute_scale_factor else list(factors)
    if len(out) != nd or len(scales) != nd:
        raise ValueError(f"interpolate: size or scale_factor needs {nd} values for input of shape {input.shape}")
    if any(o <= 0 for o in out) or any(n <= 0 for n in spatial):
        raise ShapeError(f"interpolate: input spatial size {spatial} and output size {tuple(out)} must be positive")
    if mode == "area":
        from .functional import _adaptive_avg_pool
        return _adaptive_avg_pool(input, out, nd, "interpolate")
    if mode in _MODE_RANK and not input.dtype.is_float:
        raise DTypeError(f"interpolate: mode {mode!r} needs a floating input, got {input.dtype.name}")
    x = input
    opmath = np.float64 if x.dtype.name == "float64" else np.float32
    for i in reversed(range(nd)):
        x = _resample_axis(x, 2 + i, out[i], scales[i], mode, bool(align_corners), opmath)
    return x


def _ratio(n_in: int, n_out: int, scale: float | None, align_corners: bool, opmath: type) -> np.floating:
    """PyTorch's `area_pixel_compute_scale`: input positions per output position."""
    if align_corners:
        return opmath(n_in - 1) / opmath(n_out - 1) if n_out > 1 else opmath(0)
    return opmath(1.0 / scale) if scale is not None and scale > 0 else opmath(n_in) / opmath(n_out)


def _resample_axis(x: Tensor, axis: int, n_out: int, scale: float | None, mode: str, align_corners: bool,
                   opmath: type) -> Tensor:
    n_in = x.shape[axis]
    dst = np.arange(n_out, dtype=opmath)
    if mode.startswith("nearest"):
        if mode == "nearest" and n_out in (n_in, 2 * n_in):  # PyTorch's shortcuts, whatever the scale
            return take_positions(x, axis, np.arange(n_out) * n_in // n_out)
        ratio = np.float32(1.0 / scale) if scale is not None and scale > 0 else np.float32(n_in) / np.float32(n_out)
        offset = np.float32(0.5 if mode == "nearest-exact" else 0.0)
        src = np.floor((np.arange(n_out, dtype=np.float32) + offset) * ratio).astype(np.int64)
        return take_positions(x, axis, np.minimum(src, n_in - 1))
    ratio = _ratio(n_in, n_out, scale, align_corners, opmath)
    real = ratio * dst if align_corners else ratio * (dst + opmath(0.5)) - opmath(0.5)
    if mode == "bicubic":
        first = np.floor(real)
        weights = _cubic_weights((real - first).astype(opmath))
        taps = [np.clip(first.astype(np.int64) - 1 + j, 0, n_in - 1) for j in range(4)]
    else:
        real = np.maximum(real, opmath(0))
        first = np.minimum(np.floor(real).astype(np.int64), n_in - 1)
        lam = np.clip(real - first.astype(opmath), 0, 1).astype(opmath)
        weights = [1 - lam, lam]
        taps = [first, first + (first < n_in - 1)]
    total = None
    for w, idx in zip(weights, taps):
        shape = [1] * x.ndim
        shape[axis] = n_out
        term = take_positions(x, axis, idx) * asarray(w.astype(x.dtype.name), device=x.device).reshape(shape)
        total = term if total is None else total + term
    return total


def _cubic_weights(t: Any) -> list[Any]:
    """PyTorch's `get_cubic_upsample_coefficients` (Keys' kernel, a = -0.75) of the fractions `t` in [0, 1), a
    NumPy array or a Tensor: the weights of the taps at floor - 1, floor, floor + 1 and floor + 2."""
    a = -0.75

    def near(v: Any) -> Any:  # |v| <= 1
        return ((a + 2) * v - (a + 3)) * v * v + 1

    def far(v: Any) -> Any:  # 1 < |v| < 2
        return ((a * v - 5 * a) * v + 8 * a) * v - 4 * a

    return [far(t + 1), near(t), near(1 - t), far(2 - t)]


# ---- grid sampling ----------------------------------------------------------------------------------------------


def affine_grid(theta: Tensor, size: Sequence[int], align_corners: bool | None = None) -> Tensor:
    """PyTorch's `F.affine_grid`: the sampling grid (N, H, W, 2) (or (N, D, H, W, 3)) that the affine maps
    `theta` (N, 2, 3) (or (N, 3, 4)) make of the output `size` (N, C, H, W) (or (N, C, D, H, W)): each
    output position's normalized coordinates (x, y[, z], 1), from -1 to 1 (the pixels' centres where not
    align_corners, a step in from the edges), times theta's rows. A product by a constant base grid, so its
    gradient w.r.t. theta is the product's."""
    size = tuple(int(n) for n in size)
    nd = len(size) - 2
    if nd not in (2, 3) or not theta.dtype.is_float or theta.shape != (size[0], nd, nd + 1):
        raise ShapeError(f"affine_grid: needs a size of 4 or 5 values (N, C, *spatial) and a floating theta of "
                         f"shape (N, {max(nd, 2)}, {max(nd, 2) + 1}); got size {size}, theta of shape {theta.shape} "
                         f"({theta.dtype.name})")
    if min(size[2:]) <= 0:
        raise ShapeError(f"affine_grid: the spatial size {size[2:]} must be positive")
    dtype = np.float64 if theta.dtype.name == "float64" else np.float32
    axes = [_steps_from_neg_one(n, bool(align_corners), dtype) for n in reversed(size[2:])]  # x: the last axis
    base = np.stack([*np.meshgrid(*axes[::-1], indexing="ij")[::-1], np.ones(size[2:], dtype)], axis=-1)
    base = asarray(base.reshape(1, -1, nd + 1).astype(theta.dtype.name), device=theta.device)
    return (base @ theta.mT).reshape(size[0], *size[2:], nd)


def _steps_from_neg_one(n: int, align_corners: bool, dtype: type) -> np.ndarray:
    """PyTorch's `linspace_from_neg_one`, rounded as its CPU linspace rounds (from -1 up to the middle, from 1
    down after it, each a fused multiply-add of a step rounded to `dtype`), then scaled in to the pixels'
    centres: a float32 identity map's positions are then PyTorch's to the bit (whole pixels where they should
    be, where bilinear's gradient w.r.t. the grid steps)."""
    if n <= 1:
        return np.zeros(1, dtype)
    i = np.arange(n, dtype=np.float64)
    step = np.float64(dtype(2) / dtype(n - 1))  # a float32 step times i is exact in float64: one rounding
    steps = np.where(i < n // 2, -1 + step * i, 1 - step * (n - 1 - i)).astype(dtype)
    return steps if align_corners else (steps * dtype(n - 1) / dtype(n)).astype(dtype)


_GRID_MODES = ("bilinear", "nearest", "bicubic")
_GRID_PADDING = ("zeros", "border", "reflection")


def grid_sample(input: Tensor, grid: Tensor, mode: str = "bilinear", padding_mode: str = "zeros",
                align_corners: bool | None = None) -> Tensor:
    """PyTorch's `F.grid_sample`: the (N, C, H, W) input (or (N, C, D, H, W)) read at the normalized
    positions of `grid` (N, H_out, W_out, 2) (or (N, D_out, H_out, W_out, 3)), (x, y[, z]) in [-1, 1] from
    edge to edge (align_corners: from centre to centre), in mode 'bilinear' (trilinear in 5-d), 'nearest'
    (halves to even) or 'bicubic' (4-d only); positions outside read zeros, the edge ('border') or the
    input mirrored at its edges ('reflection'). One gather of every tap's flattened position (clamped into
    the input; a tap outside contributes nothing), weighed by lazy ops of the grid: it differentiates
    w.r.t. both input and grid as PyTorch (a coordinate clamped to the border has gradient 0). A NaN or
    infinite grid coordinate reads nothing (0 there), where PyTorch's kernels give NaN or an edge."""
    nd = input.ndim - 2
    if mode not in _GRID_MODES or padding_mode not in _GRID_PADDING:
        raise ValueError(f"grid_sample: mode must be one of {_GRID_MODES} and padding_mode one of {_GRID_PADDING}, "
                         f"got {mode!r}, {padding_mode!r}")
    if nd not in (2, 3) or grid.ndim != nd + 2 or grid.shape[0] != input.shape[0] or grid.shape[-1] != nd:
        raise ShapeError(f"grid_sample: needs a 4-d or 5-d input and a grid (N, *out, {max(nd, 2)}) of its batch; "
                         f"got input {input.shape}, grid {grid.shape}")
    if mode == "bicubic" and nd != 2:
        raise ValueError("grid_sample: mode 'bicubic' needs a 4-d input")
    if not input.dtype.is_float or grid.dtype != input.dtype:
        raise DTypeError(f"grid_sample: needs a floating input and a grid of its dtype, got {input.dtype.name} and "
                         f"{grid.dtype.name}")
    if min(input.shape[2:]) <= 0:
        raise ShapeError(f"grid_sample: the input's spatial size {input.shape[2:]} must be positive")
    n, c, *spatial = input.shape
    out = grid.shape[1:-1]
    align = bool(align_corners)
    # per spatial axis (x, the last, first, as the grid names them): its taps' positions and weights
    axis_taps = []
    for d in reversed(range(nd)):
        size = spatial[d]
        real = _unnormalized(grid[..., nd - 1 - d], size, align)
        if mode == "bicubic":
            first = real.floor()
            taps = [_padded(first + (j - 1), size, padding_mode, align) for j in range(4)]
            axis_taps.append(list(zip(taps, _cubic_weights(real - first))))
            continue
        real = _padded(real, size, padding_mode, align)
        if mode == "nearest":
            axis_taps.append([(real.round(), None)])
        else:
            first = real.floor()
            axis_taps.append([(first, first + 1 - real), (first + 1, real - first)])
    positions, inside, weights = [], [], []
    for combo in itertools.product(*axis_taps):  # x varies slowest, as PyTorch multiplies the weights
        flat, ok, weight = None, None, None
        for (pos, w), d in zip(combo, reversed(range(nd))):
            within = (pos >= 0) & (pos <= spatial[d] - 1)  # false for NaN
            stride = math.prod(spatial[d + 1:])
            term = where(within, pos, 0).cast(int64) * stride
            flat = term if flat is None else flat + term
            ok = within if ok is None else ok & within
            weight = w if weight is None else weight * w
        positions.append(flat)
        inside.append(ok)
        weights.append(weight)
    k, cells = len(positions), math.prod(out)
    index = stack(positions, axis=1).reshape(n, 1, k * cells).broadcast_to((n, c, k * cells))
    values = input.reshape(n, c, math.prod(spatial))._gather(2, index).reshape(n, c, k, *out)
    if weights[0] is not None:
        values = values * stack(weights, axis=1).reshape(n, 1, k, *out)
    return where(stack(inside, axis=1).reshape(n, 1, k, *out), values, 0).sum(axis=2)


def _unnormalized(coord: Tensor, size: int, align_corners: bool) -> Tensor:
    """PyTorch's `grid_sampler_unnormalize`: a coordinate in [-1, 1] as a position along an axis of `size`."""
    if align_corners:
        return (coord + 1) / 2 * (size - 1)
    return ((coord + 1) * size - 1) / 2


def _padded(real: Tensor, size: int, padding_mode: str, align_corners: bool) -> Tensor:
    """PyTorch's `compute_coordinates`: a position moved into the axis by `padding_mode` ('zeros' leaves it).
    Its clamp gives gradient 0 where it clamps, the edges included, and keeps NaN, as PyTorch's."""
    if padding_mode == "zeros":
        return real
    if padding_mode == "reflection":
        if align_corners:
            real = _reflected(real, 0, 2 * (size - 1))
        else:
            real = _reflected(real, -1, 2 * size - 1)
    return where(real <= 0, 0, where(real >= size - 1, size - 1, real))


def _reflected(real: Tensor, twice_low: int, twice_high: int) -> Tensor:
    """PyTorch's `reflect_coordinates`: `real` mirrored at low and high until it falls between them."""
    if twice_low == twice_high:
        return real * 0
    low, span = twice_low / 2, (twice_high - twice_low) / 2
    real = (real - low).abs()
    extra = real.fmod(span)
    even = ((real / span).floor().fmod(2)) == 0
    return where(even, extra + low, span - extra + low)


# ---- pixel shuffle ----------------------------------------------------------------------------------------------


def pixel_shuffle(input: Tensor, upscale_factor: int) -> Tensor:
    """(*, C r^2, H, W) -> (*, C, H r, W r): channel c r^2 + i r + j goes to pixel (h r + i, w r + j). A view."""
    r = int(upscale_factor)
    if input.ndim < 3 or r <= 0 or input.shape[-3] % (r * r):
        raise ShapeError(f"pixel_shuffle: input of shape {input.shape} needs at least 3 dimensions and channels "
                         f"divisible by upscale_factor^2 = {r * r}")
    *lead, c, h, w = input.shape
    nl = len(lead)
    x = input.reshape(*lead, c // (r * r), r, r, h, w)
    x = x.permute(*range(nl), nl, nl + 3, nl + 1, nl + 4, nl + 2)
    return x.reshape(*lead, c // (r * r), h * r, w * r)


def pixel_unshuffle(input: Tensor, downscale_factor: int) -> Tensor:
    """(*, C, H r, W r) -> (*, C r^2, H, W), pixel_shuffle's inverse. A view."""
    r = int(downscale_factor)
    if input.ndim < 3 or r <= 0 or input.shape[-2] % r or input.shape[-1] % r:
        raise ShapeError(f"pixel_unshuffle: input of shape {input.shape} needs at least 3 dimensions and a height "
                         f"and width divisible by downscale_factor = {r}")
    *lead, c, h, w = input.shape
    nl = len(lead)
    x = input.reshape(*lead, c, h // r, r, w // r, r)
    x = x.permute(*range(nl), nl, nl + 2, nl + 4, nl + 1, nl + 3)
    return x.reshape(*lead, c * r * r, h // r, w // r)
