"""Neural-network functions (PyTorch's `torch.nn.functional`), built from lazytensor ops.

Everything here is ordinary lazy graph: a convolution is a sliding-window view
(movement ops only, so index arithmetic in the kernel that reads it) times the
weights, summed; pooling reduces the same view; losses are reductions. So they
fuse like anything else, and their gradients come from the primitive rules in
`lazytensor/autograd.py`, except the convolutions', which have their own backward (the
input gradient is a contraction like the forward, then a placement of each tap's terms;
see `nn/convolution.py`). Attention lives in `nn/attention.py`, padding and resizing in
`nn/resampling.py`; their names are this module's.
"""
from __future__ import annotations

import functools
import inspect
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from .. import dtypes, recipe
from ..autograd import custom_vjp, is_grad_enabled, no_grad
from ..creation import arange, asarray
from ..dtypes import get_default_dtype
from ..errors import DTypeError, ShapeError
from ..kernels.dtype import compute_dtype
from ..random import rand
from ..realize import compute_stale
from ..schedule import realize_with_next
from ..tensor import Tensor, where
from .attention import scaled_dot_product_attention
from .convolution import (
    _pair,
    _windows,
    conv1d,
    conv2d,
    conv3d,
    conv_transpose1d,
    conv_transpose2d,
    conv_transpose3d,
    fold,
    unfold,
)
from .resampling import affine_grid, grid_sample, interpolate, pad, pixel_shuffle, pixel_unshuffle

# ---- activations --------------------------------------------------------------------------------


def _float(x: Tensor) -> Tensor:
    return x if x.dtype.is_float else x.cast(get_default_dtype())


def _in_place_option(fn: Callable[..., Tensor]) -> Callable[..., Tensor]:
    """`fn` whose `inplace=True` (by keyword or in its place) writes the result into its first argument, as
    PyTorch's does, and returns that tensor: it is rebound to the result as `x += y` rebinds x (a leaf that
    requires grad refuses, as in PyTorch)."""
    at = list(inspect.signature(fn).parameters).index("inplace")

    @functools.wraps(fn)
    def applied(*args: Any, **kwargs: Any) -> Tensor:
        if len(args) > at:
            inplace, args = args[at], args[:at] + args[at + 1:]
        else:
            inplace = kwargs.pop("inplace", False)
        if not inplace:
            return fn(*args, **kwargs)
        return args[0]._inplace(lambda a, _: fn(a, *args[1:], **kwargs), None, f"{fn.__name__}_")
    return applied


def _in_place_twin(fn: Callable[..., Tensor]) -> Callable[..., Tensor]:
    """PyTorch's `F.<name>_`: `fn` with `inplace=True`."""
    def twin(*args: Any, **kwargs: Any) -> Tensor:
        return fn(*args, inplace=True, **kwargs)
    twin.__name__ = twin.__qualname__ = f"{fn.__name__}_"
    twin.__doc__ = f"`{fn.__name__}` written into its input (`inplace=True`)."
    return twin


@_in_place_option
def relu(x: Tensor, inplace: bool = False) -> Tensor:
    return x.relu()


@_in_place_option
def relu6(x: Tensor, inplace: bool = False) -> Tensor:
    """min(max(x, 0), 6) (`hardtanh(x, 0, 6)`)."""
    return hardtanh(x, 0.0, 6.0)


@_in_place_option
def hardtanh(x: Tensor, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False) -> Tensor:
    """x clamped to [min_val, max_val]; the gradient passes strictly inside and at NaN, as PyTorch's."""
    if min_val > max_val:
        raise ValueError(f"hardtanh: min_val {min_val} cannot be greater than max_val {max_val}")
    return where(x <= min_val, min_val, where(x >= max_val, max_val, x)).cast(x.dtype)


@_in_place_option
def leaky_relu(x: Tensor, negative_slope: float = 0.01, inplace: bool = False) -> Tensor:
    return where(x > 0, x, x * negative_slope)


@_in_place_option
def elu(x: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """x above 0, alpha (exp(x) - 1) at or below; a NaN takes the first branch, and its gradient (1), as in
    PyTorch's scalar code (its vectorized code gives NaN, so torch's depends on the element's position)."""
    return where(x <= 0, (x.minimum(0.0)).expm1() * alpha, x)


def sigmoid(x: Tensor) -> Tensor:
    """`1 / (1 + exp(-x))` computed from `exp(-|x|)`, which cannot overflow: finite gradients everywhere
    (through `1 / (1 + exp(-x))` itself, x < -88 in float32 gives 0 * inf = NaN)."""
    x = _float(x)
    e = where(x >= 0, -x, x).exp()  # exp(-|x|), with the slope of the branch taken at 0 (abs has none)
    s = (e + 1).reciprocal()
    return where(x >= 0, s, e * s)


def tanh(x: Tensor) -> Tensor:
    return x.tanh()


@_in_place_option
def silu(x: Tensor, inplace: bool = False) -> Tensor:
    """x * sigmoid(x) (swish), differentiated as PyTorch's `s (1 + x (1 - s))`: through the product, the
    gradient of a large x times sigmoid's slope of 0 is inf * 0, NaN (the grad fuzzer's seed 940209)."""
    x = _float(x)

    def backward(g: Tensor) -> tuple[Tensor]:
        s = sigmoid(x)
        return (g * s * (x * (1 - s) + 1),)

    return custom_vjp((x,), lambda: x * sigmoid(x), backward)


def gelu(x: Tensor, approximate: str = "none") -> Tensor:
    """x * Phi(x), with the erf (exact) or the tanh approximation, as PyTorch, differentiated as its
    derivative (through the product, the terms are inf * 0 for a large x; see silu)."""
    if approximate not in ("none", "tanh"):
        raise ValueError(f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")
    x = _float(x)
    beta, kappa = math.sqrt(2 / math.pi), 0.044715
    if approximate == "tanh":
        def tanh_inner() -> Tensor:
            return ((x + x * x * x * kappa) * beta).tanh()

        def forward() -> Tensor:
            return x * 0.5 * (tanh_inner() + 1)

        def backward(g: Tensor) -> tuple[Tensor]:
            t = tanh_inner()
            sech2 = 1 - t * t
            # sech^2 is 0 (|x| > 9 in float32) long before x^2 overflows: the term is 0 there, not 0 * inf (but
            # NaN at an infinite x, as PyTorch's)
            slope = where(sech2 == 0, x * 0, x * 0.5 * sech2 * beta * (x * x * (3 * kappa) + 1))
            return (g * ((t + 1) * 0.5 + slope),)
    else:
        def erf_plus_1() -> Tensor:
            return (x * (1 / math.sqrt(2))).erf() + 1

        def forward() -> Tensor:
            return x * 0.5 * erf_plus_1()

        def backward(g: Tensor) -> tuple[Tensor]:
            pdf = (x * x * -0.5).exp() * (beta / 2)
            return (g * (erf_plus_1() * 0.5 + x * pdf),)

    return custom_vjp((x,), forward, backward)


def softplus(x: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    """log(1 + exp(beta x)) / beta, linear above `threshold` (as PyTorch). The exponential reads 0 where the
    linear branch is taken (no overflow, no 0 * inf in the gradient) and x elsewhere, a NaN too: its gradient
    is NaN, as PyTorch's."""
    bx = x * beta
    safe = where(bx > threshold, 0.0, bx)
    return where(bx > threshold, x, safe.exp().log1p() / beta)


def softmax(x: Tensor, dim: int = -1, dtype: Any = None) -> Tensor:
    """exp(x) / sum(exp(x)) along `dim` (a 0-d x is its own axis, as PyTorch's)."""
    x = x.cast(dtype) if dtype is not None else x
    return x.reshape(1).softmax(dim).reshape(()) if x.ndim == 0 else x.softmax(dim)


def log_softmax(x: Tensor, dim: int = -1, dtype: Any = None) -> Tensor:
    """log(softmax(x)) along `dim`, computed stably (a 0-d x is its own axis, as PyTorch's)."""
    x = x.cast(dtype) if dtype is not None else x
    return x.reshape(1).log_softmax(dim).reshape(()) if x.ndim == 0 else x.log_softmax(dim)


def softmin(x: Tensor, dim: int = -1, dtype: Any = None) -> Tensor:
    """softmax(-x)."""
    return softmax(-x, dim, dtype)


@_in_place_option
def hardsigmoid(x: Tensor, inplace: bool = False) -> Tensor:
    """relu6(x + 3) / 6; the gradient is 1/6 strictly inside (-3, 3)."""
    x = _float(x)
    return where(x <= -3, 0.0, where(x >= 3, 1.0, x / 6 + 0.5))


@_in_place_option
def hardswish(x: Tensor, inplace: bool = False) -> Tensor:
    """x relu6(x + 3) / 6; the gradient is 0 up to -3 and 1 from 3 on, as PyTorch's."""
    x = _float(x)
    return where(x <= -3, 0.0, where(x >= 3, x, x * (x + 3) / 6))


def hardshrink(x: Tensor, lambd: float = 0.5) -> Tensor:
    """x where |x| > lambd, 0 elsewhere."""
    return where((x >= -lambd) & (x <= lambd), 0, x).cast(x.dtype)


def softshrink(x: Tensor, lambd: float = 0.5) -> Tensor:
    """x - lambd above lambd, x + lambd below -lambd, 0 between."""
    if lambd < 0:
        raise ValueError(f"softshrink: lambd must be at least 0, got {lambd}")
    return where(x > lambd, x - lambd, where(x < -lambd, x + lambd, 0)).cast(x.dtype)


def tanhshrink(x: Tensor) -> Tensor:
    """x - tanh(x)."""
    return x - x.tanh()


def softsign(x: Tensor) -> Tensor:
    """x / (1 + |x|)."""
    return x / (x.abs() + 1)


@_in_place_option
def threshold(x: Tensor, threshold: float, value: float, inplace: bool = False) -> Tensor:
    """x where x > threshold, `value` elsewhere."""
    return where(x > threshold, x, value).cast(x.dtype)


def logsigmoid(x: Tensor) -> Tensor:
    """log(sigmoid(x)), computed as -softplus(-x): no overflow, no log(0)."""
    return -softplus(-_float(x))


@_in_place_option
def mish(x: Tensor, inplace: bool = False) -> Tensor:
    """x tanh(softplus(x))."""
    x = _float(x)
    return x * softplus(x).tanh()


_SELU_ALPHA, _SELU_SCALE = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946


@_in_place_option
def selu(x: Tensor, inplace: bool = False) -> Tensor:
    """scale * elu(x, alpha) with the self-normalizing constants."""
    return elu(_float(x), _SELU_ALPHA) * _SELU_SCALE


@_in_place_option
def celu(x: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """x above 0, alpha (exp(x / alpha) - 1) at or below."""
    if alpha == 0:
        raise ValueError("celu: alpha must not be 0")
    x = _float(x)
    return where(x <= 0, (x.minimum(0.0) / alpha).expm1() * alpha, x)


def glu(x: Tensor, dim: int = -1) -> Tensor:
    """a * sigmoid(b) for the halves a, b of x along `dim`."""
    if x.ndim == 0 or x.shape[dim] % 2:
        raise ShapeError(f"glu: axis {dim} of shape {x.shape} must have an even size")
    a, b = x.chunk(2, dim)
    return a * sigmoid(b)


def prelu(x: Tensor, weight: Tensor) -> Tensor:
    """x above 0, weight * x elsewhere; `weight` has one slope, or one per channel (axis 1; axis 0 of a
    1-d input)."""
    if weight.ndim > 1 or weight.numel() not in (1, x.shape[1] if x.ndim >= 2 else x.numel() if x.ndim else 1):
        raise ShapeError(f"prelu: {weight.numel()} slopes for an input of shape {x.shape}: expected 1 or one "
                         "per channel (axis 1)")
    w = weight.reshape(()) if weight.numel() == 1 else weight.reshape((-1,) + (1,) * (x.ndim - 2))
    return where(x > 0, x, w * x)


@_in_place_option
def rrelu(x: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False,
          inplace: bool = False) -> Tensor:
    """leaky_relu with a slope drawn uniformly from [lower, upper] per element when training, their mean
    otherwise."""
    if not training:
        return leaky_relu(x, (lower + upper) / 2)
    x = _float(x)
    slope = rand(x.shape, dtype=x.dtype, device=x.device) * (upper - lower) + lower
    return where(x >= 0, x, x * slope)


# ---- linear layers ------------------------------------------------------------------------------


def linear(x: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """x @ weight.T + bias (weight is (out_features, in_features), as PyTorch)."""
    # one autograd record, the graphs rebuilt (see `recipe`): a model's layers make it again at every step
    return recipe.apply_differentiable(_linear, (), (), (x, weight, bias))


def _linear(flags: tuple, scalars: tuple, x: Tensor, weight: Tensor, bias: Tensor | None) -> tuple[Tensor]:
    """`linear`, as `recipe.apply_differentiable` takes it."""
    out = x.matmul(weight.T)
    return (out if bias is None else out + bias,)


def bilinear(input1: Tensor, input2: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """x1^T W[o] x2 + b[o] for each output o (weight is (out, in1, in2), as PyTorch)."""
    from ..contraction import einsum
    if weight.ndim != 3 or input1.shape[-1] != weight.shape[1] or input2.shape[-1] != weight.shape[2]:
        raise ShapeError(f"bilinear: a weight of shape {weight.shape} for inputs of shapes {input1.shape} and "
                         f"{input2.shape}")
    out = einsum("...i,oij,...j->...o", input1, weight, input2)
    return out if bias is None else out + bias


# ---- distances -----------------------------------------------------------------------------------


def _norm(x: Tensor, p: float, dim: int, keepdim: bool) -> Tensor:
    from ..linalg import vector_norm
    return vector_norm(_float(x), axis=dim, keepdims=keepdim, ord=p)


def normalize(input: Tensor, p: float = 2.0, dim: int = 1, eps: float = 1e-12, out: None = None) -> Tensor:
    """x divided by its p-norm along `dim` (at least eps)."""
    return input / _norm(input, p, dim, True).maximum(eps)


def cosine_similarity(x1: Tensor, x2: Tensor, dim: int = 1, eps: float = 1e-8) -> Tensor:
    """The cosine of the angle between x1 and x2 along `dim` (broadcast), each norm at least eps, as
    PyTorch's (which divides each vector by its norm before the dot product)."""
    n1, n2 = _norm(x1, 2, dim, True).maximum(eps), _norm(x2, 2, dim, True).maximum(eps)
    return ((x1 / n1) * (x2 / n2)).sum(dim)


def pairwise_distance(x1: Tensor, x2: Tensor, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False) -> Tensor:
    """The p-norm of x1 - x2 + eps along the last axis."""
    diff = x1 - x2 + eps
    return _norm(diff, p, -1, keepdim) if diff.ndim else diff.abs()


def pdist(input: Tensor, p: float = 2.0) -> Tensor:
    """The p-norm distances between the rows of an (n, m) input, for each pair i < j in row order."""
    if input.ndim != 2:
        raise ShapeError(f"pdist: expects a 2-d input, got shape {input.shape}")
    i, j = np.triu_indices(input.shape[0], 1)
    rows = asarray(i, device=input.device), asarray(j, device=input.device)
    return _norm(input.index_select(0, rows[0]) - input.index_select(0, rows[1]), p, -1, False)


def cdist(x1: Tensor, x2: Tensor, p: float = 2.0, compute_mode: str | None = None) -> Tensor:
    """The p-norm distance between each row of x1 (..., P, M) and each row of x2 (..., R, M): (..., P, R), the
    batch axes broadcast (PyTorch's `cdist`; p = 0 counts the coordinates that differ, inf takes the largest
    difference). Always from the differences, one reduction over P R M terms that fuses into a kernel, never
    PyTorch's |a|**2 + |b|**2 - 2 a.b for large P or R, which cancels (so `compute_mode` changes nothing); at
    p = 2 the gradient where two rows are equal is 0, as PyTorch's."""
    if p < 0:
        raise ValueError(f"cdist: p must be >= 0, got {p}")
    if x1.ndim < 2 or x2.ndim < 2 or x1.shape[-1] != x2.shape[-1]:
        raise ShapeError(f"cdist: expects (..., P, M) and (..., R, M) tensors, got shapes {x1.shape} and {x2.shape}")
    diff = _float(x1).unsqueeze(-2) - _float(x2).unsqueeze(-3)
    if diff.shape[-1] == 0:  # no coordinates: every distance 0 (inf's max would have nothing to reduce)
        return diff.sum(-1)
    if p != 2:
        return _norm(diff, p, -1, False)
    wide, out = diff._widened()
    squares = (wide * wide).sum(-1)
    # the square root's slope at 0 is infinite and the squares' 0: their product NaN, where PyTorch gives 0
    zero = squares == 0
    return where(zero, 0.0, where(zero, 1.0, squares).sqrt()).cast(out)


def channel_shuffle(input: Tensor, groups: int) -> Tensor:
    """The channels (axis 1) of (N, C, ...) regrouped: channel g * (C / groups) + k moves to k * groups + g."""
    if input.ndim < 3 or input.shape[1] % groups:
        raise ShapeError(f"channel_shuffle: {groups} groups for an input of shape {input.shape} (expected at "
                         "least 3 axes and channels divisible into the groups)")
    n, c = input.shape[:2]
    return input.reshape(n, groups, c // groups, *input.shape[2:]).swapaxes(1, 2).reshape(input.shape)


def _pool_geometry(x: Tensor, kernel_size: Any, stride: Any, padding: Any, dilation: Any, ceil_mode: bool,
                   nd: int, name: str) -> tuple[tuple[int, ...], ...]:
    """Kernel, stride, padding, dilation over the last `nd` axes, and the padding past the end that the last
    window needs under ceil_mode."""
    if x.ndim not in (nd + 1, nd + 2):
        raise ShapeError(f"{name}: expected a {nd + 1}-d or {nd + 2}-d input, got shape {x.shape}")
    k = _pair(kernel_size, nd, name)
    s = _pair(stride, nd, name) if stride is not None and stride != () and stride != [] else k
    p = _pair(padding, nd, name)
    d = _pair(dilation, nd, name)
    if any(2 * pi > ki for pi, ki in zip(p, k)):
        raise ValueError(f"{name}: padding {p} should be at most half the kernel size {k}")
    extra = []
    for n, ki, si, pi, di in zip(x.shape[-nd:], k, s, p, d):
        span = n + 2 * pi - di * (ki - 1) - 1
        o = (-(-span // si) if ceil_mode else span // si) + 1
        if ceil_mode and (o - 1) * si >= n + pi:  # the last window must start inside the input or left pad
            o -= 1
        extra.append(max(0, (o - 1) * si + di * (ki - 1) + 1 - (n + 2 * pi)))
    return k, s, p, d, tuple(extra)


def _max_pool(x: Tensor, kernel_size: Any, stride: Any, padding: Any, dilation: Any, ceil_mode: bool,
              return_indices: bool, nd: int, name: str) -> Any:
    """The maximum of each window over the last `nd` axes (padding counts as -inf). The gradient of a window
    goes to its first maximum, or to its last NaN, as PyTorch's (whose loop takes a larger value or any NaN);
    the indices (int64, flat over each input plane) name that element too."""
    k, s, p, d, extra = _pool_geometry(x, kernel_size, stride, padding, dilation, ceil_mode, nd, name)
    low = -math.inf if x.dtype.is_float else False if x.dtype == dtypes.bool_ else \
        int(np.iinfo(dtypes.to_numpy_dtype(x.dtype)).min)
    flags = ((0, 0),) * (x.ndim - nd) + tuple((pi, pi + e) for pi, e in zip(p, extra)), k, s, d
    grad = is_grad_enabled() and x.requires_grad
    if not return_indices:
        # one autograd record, the graphs rebuilt (see `recipe`): a CNN pools at every step
        return recipe.apply_differentiable(_max_picked, flags, (low, *_MAX_POOL_SCALARS), (x,)) if grad else \
            recipe.apply(_max_of_windows, flags, (low,), (x,))[0]
    win = _pooled_windows(flags, low, x)
    with no_grad():
        pos = _picked_place(flags, _MAX_POOL_SCALARS[0], x, win)
    out = _picked(win, pos, _MAX_POOL_SCALARS[1]) if grad else win.max(-1)
    with no_grad():
        tap, flat, plane = pos.squeeze(-1), None, 1
        for i in reversed(range(nd)):
            n_out = win.shape[win.ndim - 1 - nd + i]
            at = arange(n_out, device=x.device).reshape(n_out, *[1] * (nd - 1 - i))
            coord = at * s[i] - p[i] + (tap // math.prod(k[i + 1:])) % k[i] * d[i]
            flat = coord * plane if flat is None else flat + coord * plane
            plane *= x.shape[x.ndim - nd + i]
    return out, flat


# what `_max_picked` compares with and fills with: distinct objects, each the recipe's scalar of its place
_MAX_POOL_SCALARS = (-1, -0.0)


def _pooled_windows(flags: tuple, low: Any, x: Tensor) -> Tensor:
    """The windows of (pads, kernel, stride, dilation) `flags` over `x` padded with `low`: (..., *out, taps)."""
    pads, k, s, d = flags
    nd = len(k)
    win = _windows(x.pad(pads, value=low) if any(a or b for a, b in pads) else x, k, s, d)
    return win.reshape(*win.shape[:-nd], math.prod(k))


def _picked_place(flags: tuple, none: int, x: Tensor, win: Tensor) -> Tensor:
    """Where in each of the windows `win` of `x` (`_pooled_windows`) the element PyTorch picks is: its first
    maximum, or its last NaN (keeping the axis). `none` is -1, a scalar of the caller's."""
    pads, k, s, d = flags
    nd, taps = len(k), win.shape[-1]
    positions = _iota(taps, x.device)
    first_max = win == win.max(-1, keepdims=True)
    if any(a or b for a, b in pads):  # a window whose inputs all equal the padding's value picks its first input
        inside = x._const(True, dtypes.bool_, x.device).broadcast_to(x.shape[-nd:]).pad(pads[-nd:])
        first_max = first_max & _windows(inside, k, s, d).reshape(*win.shape[-nd - 1:-1], taps)
    pos = where(first_max, positions, x._const(taps, positions.dtype, x.device)).min(-1, keepdims=True)
    if not x.dtype.is_float:
        return pos
    last_nan = where(win.isnan(), positions, none).max(-1, keepdims=True)
    return where(last_nan > none, last_nan, pos)


def _picked(win: Tensor, pos: Tensor, zero: float) -> Tensor:
    """The element of each window at `pos` alone, so that the gradient of the window's sum goes to it: `zero` (-0.0)
    elsewhere adds nothing to any value (nor turns a -0.0 maximum into +0.0), and the sum is the maximum exactly."""
    return where(pos == _iota(win.shape[-1], win.device), win, zero).sum(-1)


def _max_of_windows(flags: tuple, scalars: tuple, x: Tensor) -> tuple[Tensor]:
    """Max pooling's result where no gradient is recorded, as `recipe.apply` takes it (`scalars`: the padding's
    value)."""
    return (_pooled_windows(flags, scalars[0], x).max(-1),)


def _max_picked(flags: tuple, scalars: tuple, x: Tensor) -> tuple[Tensor]:
    """Max pooling's result as the sum of the element PyTorch picks in each window (`_picked`), as
    `recipe.apply_differentiable` takes it (`scalars`: the padding's value, then `_MAX_POOL_SCALARS`)."""
    low, none, zero = scalars
    win = _pooled_windows(flags, low, x)
    with no_grad():
        pos = _picked_place(flags, none, x, win)
    return (_picked(win, pos, zero),)


def max_pool1d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0, dilation: Any = 1,
               ceil_mode: bool = False, return_indices: bool = False) -> Any:
    """Max pooling over the last axis of (N, C, L) or (C, L); see max_pool2d."""
    return _max_pool(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices, 1, "max_pool1d")


def max_pool2d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0, dilation: Any = 1,
               ceil_mode: bool = False, return_indices: bool = False) -> Any:
    """The maximum of each window of (N, C, H, W) or (C, H, W) (padding counts as -inf); with
    return_indices, also where each maximum is (int64, h * W + w, PyTorch's choice among equal elements)."""
    return _max_pool(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices, 2, "max_pool2d")


def max_pool3d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0, dilation: Any = 1,
               ceil_mode: bool = False, return_indices: bool = False) -> Any:
    """Max pooling over the last three axes of (N, C, D, H, W) or (C, D, H, W); see max_pool2d."""
    return _max_pool(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices, 3, "max_pool3d")


def _max_unpool(x: Tensor, indices: Tensor, kernel_size: Any, stride: Any, padding: Any, output_size: Any,
                nd: int, name: str) -> Tensor:
    """Each element of x written at its index (flat over each output plane), zeros elsewhere: max pooling's
    partial inverse. The plane's size is output_size, or (n - 1) stride - 2 padding + kernel."""
    k = _pair(kernel_size, nd, name)
    s = _pair(stride, nd, name) if stride is not None else k
    p = _pair(padding, nd, name)
    if x.ndim not in (nd + 1, nd + 2) or indices.shape != x.shape:
        raise ShapeError(f"{name}: expected a {nd + 1}-d or {nd + 2}-d input and indices of its shape, got "
                         f"{x.shape} and {indices.shape}")
    if indices.dtype.is_float or indices.dtype == dtypes.bool_:
        raise DTypeError(f"{name}: indices must be integers, got {indices.dtype.name}")
    if output_size is None:
        size = tuple((n - 1) * si - 2 * pi + ki for n, si, pi, ki in zip(x.shape[-nd:], s, p, k))
    else:
        size = tuple(int(v) for v in output_size)[-nd:]
        if len(size) != nd:
            raise ValueError(f"{name}: output_size needs {nd} sizes, got {output_size!r}")
    lead = x.shape[:-nd]
    plane = math.prod(size)
    flat_idx = indices.cast(dtypes.int64).reshape(*lead, -1)
    out = x._const(0, x.dtype, x.device).broadcast_to((*lead, plane))
    out = out._scatter(len(lead), flat_idx, x.reshape(*lead, -1), None)
    bad = (flat_idx < 0) | (flat_idx >= plane)
    return out.reshape(*lead, *size)._checked(bad, f"{name}: an index is outside the output plane of size {size}")


def max_unpool1d(input: Tensor, indices: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,
                 output_size: Any = None) -> Tensor:
    """max_pool1d's partial inverse (PyTorch's `F.max_unpool1d`); see max_unpool2d."""
    return _max_unpool(input, indices, kernel_size, stride, padding, output_size, 1, "max_unpool1d")


def max_unpool2d(input: Tensor, indices: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,
                 output_size: Any = None) -> Tensor:
    """max_pool2d's partial inverse (PyTorch's `F.max_unpool2d`): each value written at its index (flat over
    the (H, W) plane of the output), zeros elsewhere; the gradient of a value is the output's gradient where
    it was written."""
    return _max_unpool(input, indices, kernel_size, stride, padding, output_size, 2, "max_unpool2d")


def max_unpool3d(input: Tensor, indices: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,
                 output_size: Any = None) -> Tensor:
    """max_pool3d's partial inverse (PyTorch's `F.max_unpool3d`); see max_unpool2d."""
    return _max_unpool(input, indices, kernel_size, stride, padding, output_size, 3, "max_unpool3d")


def _avg_pool(x: Tensor, kernel_size: Any, stride: Any, padding: Any, ceil_mode: bool, count_include_pad: bool,
              divisor_override: int | None, nd: int, name: str) -> Tensor:
    """The mean of each window over the last `nd` axes; the padding counts unless count_include_pad=False (as
    PyTorch)."""
    k, s, p, d, extra = _pool_geometry(x, kernel_size, stride, padding, 1, ceil_mode, nd, name)
    x = _float(x)
    lead = [(0, 0)] * (x.ndim - nd)
    axes = tuple(range(-nd, 0))
    total = _windows(x.pad(lead + [(pi, pi + e) for pi, e in zip(p, extra)]), k, s, d).sum(axes)
    if divisor_override is not None:
        return total / float(divisor_override)
    if not any(extra) and (count_include_pad or not any(p)):
        return total / float(math.prod(k))
    # windows that reach past the input: count what they cover (the padding too if count_include_pad)
    spatial = x.shape[-nd:]
    if count_include_pad:
        ones = x._const(1, x.dtype, x.device).broadcast_to(tuple(n + 2 * pi for n, pi in zip(spatial, p)))
        ones = ones.pad([(0, e) for e in extra])
    else:
        ones = x._const(1, x.dtype, x.device).broadcast_to(spatial).pad([(pi, pi + e) for pi, e in zip(p, extra)])
    counts = _windows(ones, k, s, d).sum(axes)
    return total / counts


def avg_pool1d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0, ceil_mode: bool = False,
               count_include_pad: bool = True) -> Tensor:
    """The mean of each window over the last axis of (N, C, L) or (C, L)."""
    return _avg_pool(input, kernel_size, stride, padding, ceil_mode, count_include_pad, None, 1, "avg_pool1d")


def avg_pool2d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0, ceil_mode: bool = False,
               count_include_pad: bool = True, divisor_override: int | None = None) -> Tensor:
    """The mean of each window; the padding counts unless count_include_pad=False (as PyTorch)."""
    return _avg_pool(input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override, 2,
                     "avg_pool2d")


def avg_pool3d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0, ceil_mode: bool = False,
               count_include_pad: bool = True, divisor_override: int | None = None) -> Tensor:
    """The mean of each window over the last three axes of (N, C, D, H, W) or (C, D, H, W)."""
    return _avg_pool(input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override, 3,
                     "avg_pool3d")


def _adaptive_avg_pool(x: Tensor, output_size: Any, nd: int, name: str) -> Tensor:
    """The mean of PyTorch's adaptive windows over the last `nd` axes: output i of an axis of n averages
    inputs floor(i n / o) to ceil((i + 1) n / o). Axis by axis: a window that tiles the axis is a view and a
    mean; overlapping or uneven ones a product with the (o, n) matrix of each window's 1 / length."""
    if x.ndim not in (nd + 1, nd + 2):
        raise ShapeError(f"{name}: expected a {nd + 1}-d or {nd + 2}-d input, got shape {x.shape}")
    sizes = (output_size,) * nd if isinstance(output_size, int) or output_size is None else tuple(output_size)
    if len(sizes) != nd:
        raise ValueError(f"{name}: expected an int or {nd} sizes, got {output_size!r}")
    x = _float(x)
    for i, o in enumerate(sizes):
        axis, n = x.ndim - nd + i, x.shape[x.ndim - nd + i]
        o = n if o is None else int(o)
        if o <= 0 or n == 0:
            raise ShapeError(f"{name}: output size {o} and input size {n} must be positive")
        if n % o == 0:
            x = x.reshape(*x.shape[:axis], o, n // o, *x.shape[axis + 1:]).mean(axis + 1)
            continue
        start, stop = (np.arange(o) * n) // o, -((-(np.arange(o) + 1) * n) // o)
        cols = np.arange(n)
        window = (cols >= start[:, None]) & (cols < stop[:, None])
        mat = asarray((window / (stop - start)[:, None]).astype(dtypes.to_numpy_dtype(x.dtype)), device=x.device)
        x = x.swapaxes(axis, -1).matmul(mat.T).swapaxes(axis, -1)
    return x


def adaptive_avg_pool1d(input: Tensor, output_size: Any) -> Tensor:
    """Average pooling of (N, C, L) or (C, L) to `output_size` (PyTorch's adaptive windows)."""
    return _adaptive_avg_pool(input, output_size, 1, "adaptive_avg_pool1d")


def adaptive_avg_pool2d(input: Tensor, output_size: Any) -> Tensor:
    """Average pooling of (N, C, H, W) or (C, H, W) to `output_size` (an int, a pair, None keeps a size):
    PyTorch's adaptive windows, global pooling with 1."""
    return _adaptive_avg_pool(input, output_size, 2, "adaptive_avg_pool2d")


def adaptive_avg_pool3d(input: Tensor, output_size: Any) -> Tensor:
    """Average pooling of (N, C, D, H, W) or (C, D, H, W) to `output_size` (PyTorch's adaptive windows)."""
    return _adaptive_avg_pool(input, output_size, 3, "adaptive_avg_pool3d")


def _adaptive_max_pool(x: Tensor, output_size: Any, return_indices: bool, nd: int, name: str) -> Tensor:
    """The maximum of PyTorch's adaptive windows (see `_adaptive_avg_pool`), axis by axis: each axis's windows
    gathered into a new axis, the shorter ones repeating their last input (which leaves the maximum as it is),
    then reduced."""
    if return_indices:
        raise NotImplementedError(f"{name}: return_indices=True is not supported")
    if x.ndim not in (nd + 1, nd + 2):
        raise ShapeError(f"{name}: expected a {nd + 1}-d or {nd + 2}-d input, got shape {x.shape}")
    sizes = (output_size,) * nd if isinstance(output_size, int) or output_size is None else tuple(output_size)
    if len(sizes) != nd:
        raise ValueError(f"{name}: expected an int or {nd} sizes, got {output_size!r}")
    for i, o in enumerate(sizes):
        axis, n = x.ndim - nd + i, x.shape[x.ndim - nd + i]
        o = n if o is None else int(o)
        if o <= 0 or n == 0:
            raise ShapeError(f"{name}: output size {o} and input size {n} must be positive")
        start, stop = (np.arange(o) * n) // o, -((-(np.arange(o) + 1) * n) // o)
        width = int((stop - start).max())
        taps = np.minimum(start[:, None] + np.arange(width), stop[:, None] - 1).reshape(-1)
        x = x.index_select(axis, asarray(taps, device=x.device)).unflatten(axis, (o, width)).max(axis + 1)
    return x


def adaptive_max_pool1d(input: Tensor, output_size: Any, return_indices: bool = False) -> Tensor:
    """Max pooling of (N, C, L) or (C, L) to `output_size` (PyTorch's adaptive windows)."""
    return _adaptive_max_pool(input, output_size, return_indices, 1, "adaptive_max_pool1d")


def adaptive_max_pool2d(input: Tensor, output_size: Any, return_indices: bool = False) -> Tensor:
    """Max pooling of (N, C, H, W) or (C, H, W) to `output_size` (an int, a pair, None keeps a size)."""
    return _adaptive_max_pool(input, output_size, return_indices, 2, "adaptive_max_pool2d")


def _lp_pool(x: Tensor, norm_type: float, kernel_size: Any, stride: Any, ceil_mode: bool, nd: int,
             name: str) -> Tensor:
    """(sum of x^p over each window)^(1/p), as PyTorch computes it: an average pool of x^p times the window's
    size, its sign kept."""
    k = _pair(kernel_size, nd, name)
    mean = _avg_pool(_float(x) ** norm_type, k, stride, 0, ceil_mode, True, None, nd, name)
    return (mean.sign() * mean.abs().relu() * math.prod(k)) ** (1.0 / norm_type)


def lp_pool1d(input: Tensor, norm_type: float, kernel_size: Any, stride: Any = None,
              ceil_mode: bool = False) -> Tensor:
    """The p-norm of each window over the last axis of (N, C, L) or (C, L)."""
    return _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, 1, "lp_pool1d")


def lp_pool2d(input: Tensor, norm_type: float, kernel_size: Any, stride: Any = None,
              ceil_mode: bool = False) -> Tensor:
    """The p-norm of each window over the last two axes of (N, C, H, W) or (C, H, W)."""
    return _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, 2, "lp_pool2d")


# ---- normalization ------------------------------------------------------------------------------


def layer_norm(x: Tensor, normalized_shape: Any, weight: Tensor | None = None, bias: Tensor | None = None,
               eps: float = 1e-5) -> Tensor:
    """Normalize over the last len(normalized_shape) axes (biased variance), then scale and shift."""
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    if tuple(x.shape[x.ndim - len(shape):]) != shape:
        raise ShapeError(f"layer_norm: normalized_shape {shape} does not match the end of the input shape "
                         f"{x.shape}")
    axes = tuple(range(x.ndim - len(shape), x.ndim))
    # one autograd record, the graphs rebuilt (see `recipe`): a transformer normalizes twice a block at every step
    return recipe.apply_differentiable(_layer_norm, (axes, _norm_dtype(x, weight, bias)), (float(eps),),
                                       (x, weight, bias))


def _layer_norm(flags: tuple, scalars: tuple, x: Tensor, weight: Tensor | None, bias: Tensor | None) \
        -> tuple[Tensor]:
    """`layer_norm` over (axes, result dtype) `flags` with (eps,) `scalars`, as `recipe.apply_differentiable` takes
    it: its backward is the one autograd's rules make for these ops."""
    axes, out_dtype = flags
    eps, = scalars
    centered, _, var = _statistics(x, axes)
    out = centered * (var + eps).rsqrt()
    if weight is not None:
        out = out * weight
    return ((out if bias is None else out + bias).cast(out_dtype),)


def _statistics(x: Tensor, axes: tuple[int, ...]) -> tuple[Tensor, Tensor, Tensor]:
    """x - mean, the mean and the biased variance over `axes` (kept), in the dtype reductions accumulate
    in (float32 for the 16-bit floats), as torch computes them: a mean rounded to 16 bits loses the digits
    that x - mean keeps (a bfloat16 row around 100 with a spread of 1 would be normalized by a mean off by
    up to 0.25)."""
    wide = x.cast(compute_dtype(x.dtype)) if x.dtype.is_float else x
    mean = wide.mean(axes, keepdims=True)
    centered = wide - mean
    return centered, mean, (centered * centered).mean(axes, keepdims=True)


def _norm_dtype(x: Tensor, *others: Tensor | None) -> dtypes.DType:
    """A normalization's result dtype: the input's (float32 for integers) with its weight's and bias's."""
    out = x.dtype if x.dtype.is_float else get_default_dtype()
    for t in others:
        out = out if t is None else dtypes.promote(out, t.dtype)
    return out


def batch_norm(x: Tensor, running_mean: Tensor | None, running_var: Tensor | None,
               weight: Tensor | None = None, bias: Tensor | None = None, training: bool = False,
               momentum: float | None = 0.1, eps: float = 1e-5,
               num_batches_tracked: Tensor | None = None) -> Tensor:
    """Batch normalization over axis 1 of (N, C, ...). Training normalizes with the batch statistics and
    updates the running ones lazily (realized with the next schedule that runs); evaluation uses the
    running statistics."""
    if x.ndim < 2:
        raise ShapeError(f"batch_norm: expected at least 2 dimensions (N, C, ...), got shape {x.shape}")
    c = x.shape[1]
    axes = (0, *range(2, x.ndim))
    bshape = (1, c) + (1,) * (x.ndim - 2)
    if training or running_mean is None:
        count = x.numel() // c
        if count <= 1:
            raise ValueError(f"batch_norm: expected more than 1 value per channel when training, got input "
                             f"of shape {x.shape}")
        centered, mean, var = _statistics(x, axes)
        if training and running_mean is not None and running_var is not None:
            with no_grad():
                compute_stale(running_mean, running_var)
                if num_batches_tracked is not None:
                    num_batches_tracked.node = (num_batches_tracked + 1).node
                factor: Any = momentum
                if momentum is None:  # a cumulative average: 1 / (batches seen), kept lazy
                    factor = 1.0 if num_batches_tracked is None else \
                        num_batches_tracked.cast(running_mean.dtype).reciprocal()
                m, v = Tensor(mean.node).reshape(c), Tensor(var.node).reshape(c)
                running_mean.node = (running_mean * (1 - factor) + m * factor).cast(running_mean.dtype).node
                unbiased = v * (count / (count - 1))
                running_var.node = (running_var * (1 - factor) + unbiased * factor).cast(running_var.dtype).node
                realize_with_next(*(t for t in (running_mean, running_var, num_batches_tracked) if t is not None))
        out = centered * (var + eps).rsqrt()
        dtype = _norm_dtype(x, weight, bias)
    else:
        wide = x.cast(compute_dtype(x.dtype)) if x.dtype.is_float else x
        out = (wide - running_mean.reshape(bshape)) * (running_var.reshape(bshape) + eps).rsqrt()
        dtype = _norm_dtype(x, weight, bias, running_mean, running_var)
    if weight is not None:
        out = out * weight.reshape(bshape)
    return (out if bias is None else out + bias.reshape(bshape)).cast(dtype)


def group_norm(x: Tensor, num_groups: int, weight: Tensor | None = None, bias: Tensor | None = None,
               eps: float = 1e-5) -> Tensor:
    n, c = x.shape[:2]
    if c % num_groups:
        raise ShapeError(f"group_norm: {c} channels do not divide into {num_groups} groups")
    # the group's size spelled out: -1 cannot be inferred from an empty batch
    centered, _, var = _statistics(x.reshape(n, num_groups, c // num_groups * math.prod(x.shape[2:])), (2,))
    out = (centered * (var + eps).rsqrt()).reshape(x.shape)
    bshape = (1, c) + (1,) * (x.ndim - 2)
    if weight is not None:
        out = out * weight.reshape(bshape)
    return (out if bias is None else out + bias.reshape(bshape)).cast(_norm_dtype(x, weight, bias))


def rms_norm(input: Tensor, normalized_shape: Any, weight: Tensor | None = None, eps: float | None = None) -> Tensor:
    """x / sqrt(mean(x^2) + eps) over the last len(normalized_shape) axes, times `weight`, as PyTorch's
    `F.rms_norm`: computed in the dtype reductions accumulate in (float32 for the 16-bit floats), rounded to
    the input's dtype before the weight multiplies; `eps` defaults to that compute dtype's machine epsilon."""
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    if tuple(input.shape[input.ndim - len(shape):]) != shape or len(shape) > input.ndim:
        raise ShapeError(f"rms_norm: normalized_shape {shape} does not match the end of the input shape "
                         f"{input.shape}")
    x = _float(input)
    wide = x.cast(compute_dtype(x.dtype))
    if eps is None:
        eps = float(np.finfo(dtypes.to_numpy_dtype(wide.dtype)).eps)
    axes = tuple(range(x.ndim - len(shape), x.ndim))
    out = (wide * ((wide * wide).mean(axes, keepdims=True) + eps).rsqrt()).cast(x.dtype)
    return out if weight is None else out * weight


def instance_norm(input: Tensor, running_mean: Tensor | None = None, running_var: Tensor | None = None,
                  weight: Tensor | None = None, bias: Tensor | None = None, use_input_stats: bool = True,
                  momentum: float = 0.1, eps: float = 1e-5) -> Tensor:
    """Normalize each channel of each sample (N, C, ...) over its spatial axes, then scale and shift per
    channel. With running statistics, their update (lazy, as batch_norm's) takes the batch's mean of the
    instances' statistics; `use_input_stats=False` normalizes with the running ones."""
    if input.ndim < 3:
        raise ShapeError(f"instance_norm: expected at least 3 dimensions (N, C, ...), got shape {input.shape}")
    c = input.shape[1]
    bshape = (1, c) + (1,) * (input.ndim - 2)
    if not use_input_stats:
        if running_mean is None or running_var is None:
            raise ValueError("instance_norm: use_input_stats=False needs running_mean and running_var")
        return batch_norm(input, running_mean, running_var, weight, bias, False, momentum, eps)
    axes = tuple(range(2, input.ndim))
    count = math.prod(input.shape[2:])
    centered, mean, var = _statistics(input, axes)
    if running_mean is not None and running_var is not None:
        with no_grad():
            compute_stale(running_mean, running_var)
            m = Tensor(mean.node).reshape(input.shape[:2]).mean(0)
            unbiased = Tensor(var.node).reshape(input.shape[:2]).mean(0) * (count / max(count - 1, 1))
            running_mean.node = (running_mean * (1 - momentum) + m * momentum).cast(running_mean.dtype).node
            running_var.node = (running_var * (1 - momentum) + unbiased * momentum).cast(running_var.dtype).node
            realize_with_next(running_mean, running_var)
    out = centered * (var + eps).rsqrt()
    if weight is not None:
        out = out * weight.reshape(bshape)
    return (out if bias is None else out + bias.reshape(bshape)).cast(_norm_dtype(input, weight, bias))


def local_response_norm(input: Tensor, size: int, alpha: float = 1e-4, beta: float = 0.75,
                        k: float = 1.0) -> Tensor:
    """x / (k + alpha * mean(x^2 over `size` neighbouring channels, zeros past the ends))^beta, the
    channels being axis 1 of (N, C, ...)."""
    if input.ndim < 3:
        raise ShapeError(f"local_response_norm: expected at least 3 dimensions (N, C, ...), got shape "
                         f"{input.shape}")
    x = _float(input)
    square = (x * x).pad([(0, 0), (size // 2, (size - 1) // 2)] + [(0, 0)] * (x.ndim - 2))
    div = square.unfold(1, size, 1).mean(-1)
    return x / (div * alpha + k) ** beta


# ---- embedding, dropout -------------------------------------------------------------------------


def one_hot(labels: Tensor, num_classes: int = -1) -> Tensor:
    """int64 one-hot encoding along a new last axis."""
    if labels.dtype.is_float or labels.dtype == dtypes.bool_:
        raise DTypeError(f"one_hot: labels must be integers, got {labels.dtype.name}")
    labels = labels.cast(dtypes.int64)  # the range checks' bounds may not fit a narrow dtype
    if num_classes < 0:
        num_classes = int(labels.max().item()) + 1
    classes = _iota(num_classes, labels.device)
    out = (labels.reshape(*labels.shape, 1) == classes).cast(dtypes.int64)
    return out._checked((labels < 0) | (labels >= num_classes),
                        f"one_hot: a label is outside [0, {num_classes}) (num_classes={num_classes})")


def _iota(n: int, device: str) -> Tensor:
    return arange(n, device=device)


def embedding(indices: Tensor, weight: Tensor, padding_idx: int | None = None) -> Tensor:
    """Rows of `weight` picked by integer `indices`: a gather, so the kernel that reads them loads just those
    rows, and the gradient adds into just those rows (none to `padding_idx`'s row)."""
    if indices.dtype.is_float or indices.dtype == dtypes.bool_:
        raise DTypeError(f"embedding: indices must be integers, got {indices.dtype.name}")
    vocab, dim = weight.shape
    w = weight
    if padding_idx is not None:
        pad = padding_idx % vocab
        w = where((_iota(vocab, weight.device) == pad).reshape(vocab, 1), Tensor(weight.node), weight)
    pos, bad = w._positions(indices, 0, "embedding", False)
    k = pos.numel()
    rows = w._gather(0, pos.reshape(k, 1).broadcast_to((k, dim))).reshape(*indices.shape, dim)
    return rows._checked(bad, f"embedding: an index is outside [0, {vocab}) (a table of {vocab} rows)")


def embedding_bag(input: Tensor, weight: Tensor, offsets: Tensor | None = None, max_norm: float | None = None,
                  norm_type: float = 2, scale_grad_by_freq: bool = False, mode: str = "mean",
                  sparse: bool = False, per_sample_weights: Tensor | None = None,
                  include_last_offset: bool = False, padding_idx: int | None = None) -> Tensor:
    """The sum, mean or max of the rows of `weight` in each bag: the rows of a 2-d `input`, or the runs of a
    1-d `input` that `offsets` start (an empty bag gives zeros). Rows at `padding_idx` are left out;
    `per_sample_weights` scale the rows (mode 'sum')."""
    if mode not in ("sum", "mean", "max"):
        raise ValueError(f"embedding_bag: mode must be 'sum', 'mean' or 'max', got {mode!r}")
    if max_norm is not None or scale_grad_by_freq or sparse:
        raise NotImplementedError("embedding_bag: max_norm, scale_grad_by_freq and sparse are not supported")
    if per_sample_weights is not None and mode != "sum":
        raise ValueError("embedding_bag: per_sample_weights needs mode='sum'")
    if input.ndim == 2:
        if offsets is not None:
            raise ValueError("embedding_bag: offsets must be None for a 2-d input")
        bags = input.shape[0]
        bag_of = arange(bags, device=input.device).reshape(bags, 1).broadcast_to(input.shape).reshape(-1)
        input = input.reshape(-1)
        per_sample_weights = None if per_sample_weights is None else per_sample_weights.reshape(-1)
    elif input.ndim == 1 and offsets is not None and offsets.ndim == 1:
        starts = offsets[:-1] if include_last_offset else offsets
        bags = starts.shape[0]
        # the bag of each position: how many bags start at or before it, less one
        bag_of = (arange(input.shape[0], device=input.device).reshape(-1, 1) >= starts.reshape(1, -1)).cast(
            dtypes.int64).sum(1) - 1
    else:
        raise ShapeError(f"embedding_bag: expects a 2-d input, or a 1-d input with 1-d offsets; got shapes "
                         f"{input.shape} and {None if offsets is None else offsets.shape}")
    rows = embedding(input, weight)
    used = (input != padding_idx) if padding_idx is not None else None
    if per_sample_weights is not None:
        rows = rows * per_sample_weights.reshape(-1, 1)
    member = bag_of.reshape(1, -1) == arange(bags, device=input.device).reshape(-1, 1)   # (bags, positions)
    if used is not None:
        member = member & used.reshape(1, -1)
    if mode == "max":
        low = where(member.unsqueeze(-1), rows.unsqueeze(0), -math.inf).max(1)
        return where(member.any(1, keepdims=True), low, 0.0).cast(weight.dtype)
    total = member.cast(weight.dtype) @ rows
    if mode == "sum":
        return total
    return total / member.cast(weight.dtype).sum(1, keepdims=True).maximum(1)


@_in_place_option
def dropout(x: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zero each element with probability p and scale the rest by 1 / (1 - p). The mask is drawn inside
    the kernel that applies it (counter-based random numbers), so a forward pass spends no memory on it.
    The backward reads it from a buffer of its own (a byte per element), computed once for the forward
    and the backward: each of its kernels would otherwise draw its random numbers again (some ten
    integer multiplications per element), once per element of a window behind a max pool."""
    if not 0 <= p <= 1:
        raise ValueError(f"dropout: p must be in [0, 1], got {p}")
    if not training or p == 0:
        return x
    if p == 1:
        return x * 0.0
    keep = rand(x.shape, dtype=x.dtype if x.dtype.is_float else None, device=x.device) >= p
    scale = 1.0 / (1.0 - p)

    def backward(g: Tensor) -> tuple[Tensor]:
        return (where(keep.contiguous(), g * scale, 0.0),)

    return custom_vjp((x,), lambda: where(keep, x * scale, 0.0), backward)


def _feature_dropout(x: Tensor, p: float, training: bool, nd: int, name: str) -> Tensor:
    """Whole channels zeroed with probability p, the rest scaled by 1 / (1 - p): one draw per (sample,
    channel) of (N, C, *nd axes), or per channel of an unbatched (C, *nd axes)."""
    if not 0 <= p <= 1:
        raise ValueError(f"{name}: p must be in [0, 1], got {p}")
    if x.ndim not in (nd + 1, nd + 2):
        raise ShapeError(f"{name}: expected a {nd + 1}-d or {nd + 2}-d input, got shape {x.shape}")
    if not training or p == 0:
        return x
    if p == 1:
        return x * 0.0
    lead = x.ndim - nd
    keep = rand(x.shape[:lead] + (1,) * nd, dtype=x.dtype if x.dtype.is_float else None, device=x.device) >= p
    return where(keep, x * (1.0 / (1.0 - p)), 0.0)


@_in_place_option
def dropout1d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Channel dropout of (N, C, L) or (C, L)."""
    return _feature_dropout(input, p, training, 1, "dropout1d")


@_in_place_option
def dropout2d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Channel dropout of (N, C, H, W) or (C, H, W)."""
    return _feature_dropout(input, p, training, 2, "dropout2d")


@_in_place_option
def dropout3d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Channel dropout of (N, C, D, H, W) or (C, D, H, W)."""
    return _feature_dropout(input, p, training, 3, "dropout3d")


@_in_place_option
def alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False, inplace: bool = False) -> Tensor:
    """SELU's dropout: each element set with probability p to SELU's negative saturation, then an affine map
    that keeps a zero mean and unit variance (PyTorch's constants)."""
    if not 0 <= p <= 1:
        raise ValueError(f"alpha_dropout: p must be in [0, 1], got {p}")
    if not training or p == 0:
        return input
    if p == 1:
        return input * 0.0
    alpha = _SELU_ALPHA * _SELU_SCALE
    a = 1.0 / math.sqrt((alpha * alpha * p + 1) * (1 - p))
    keep = rand(input.shape, dtype=input.dtype if input.dtype.is_float else None, device=input.device) >= p
    return where(keep, input * a, 0.0) + where(keep, alpha * a * p, alpha * a * p - alpha * a)


def gumbel_softmax(logits: Tensor, tau: float = 1.0, hard: bool = False, eps: float = 1e-10,
                   dim: int = -1) -> Tensor:
    """softmax((logits + g) / tau) for Gumbel noise g; with `hard`, the one-hot of its maximum, whose gradient
    is the soft sample's (the straight-through estimator)."""
    x = _float(logits)
    uniform = rand(x.shape, dtype=x.dtype, device=x.device)
    gumbels = -(-(1 - uniform).log()).log()  # -log of an exponential sample: 1 - u is in (0, 1]
    soft = ((x + gumbels) / tau).softmax(dim)
    if not hard:
        return soft
    axis = dim % x.ndim if x.ndim else 0
    positions = arange(x.shape[axis] if x.ndim else 1, device=x.device).reshape((-1,) + (1,) * (x.ndim - axis - 1))
    one_hot_max = (soft.argmax(axis, keepdims=True) == positions).cast(x.dtype) if x.ndim else soft * 0 + 1
    return one_hot_max - soft.detach() + soft


# ---- losses ------------------------------------------------------------------------------------


def _legacy_reduction(size_average: bool | None, reduce: bool | None, reduction: str) -> str:
    """PyTorch's deprecated `size_average` and `reduce` as the `reduction` they stand for (either given
    overrides `reduction`, as PyTorch's): not reduced where reduce is False, else summed where size_average is
    False, else the mean."""
    if size_average is None and reduce is None:
        return reduction
    if reduce is False:
        return "none"
    return "sum" if size_average is False else "mean"


def _reduce_loss(loss: Tensor, reduction: str, name: str) -> Tensor:
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    if reduction == "none":
        return loss
    raise ValueError(f"{name}: reduction must be 'mean', 'sum' or 'none', got {reduction!r}")


def mse_loss(input: Tensor, target: Tensor, reduction: str = "mean") -> Tensor:
    diff = input - target
    return _reduce_loss(diff * diff, reduction, "mse_loss")


def l1_loss(input: Tensor, target: Tensor, reduction: str = "mean") -> Tensor:
    return _reduce_loss((input - target).abs(), reduction, "l1_loss")


def huber_loss(input: Tensor, target: Tensor, reduction: str = "mean", delta: float = 1.0) -> Tensor:
    """0.5 d^2 where d = |input - target| < delta, delta (d - 0.5 delta) elsewhere."""
    d = (input - target).abs()
    return _reduce_loss(where(d < delta, d * d * 0.5, (d - 0.5 * delta) * delta), reduction, "huber_loss")


def smooth_l1_loss(input: Tensor, target: Tensor, size_average: bool | None = None, reduce: bool | None = None,
                   reduction: str = "mean", beta: float = 1.0) -> Tensor:
    """0.5 d^2 / beta where d = |input - target| < beta, d - 0.5 beta elsewhere (l1_loss at beta 0)."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if beta < 0:
        raise ValueError(f"smooth_l1_loss: beta must be at least 0, got {beta}")
    d = (input - target).abs()
    loss = d if beta == 0 else where(d < beta, d * d * (0.5 / beta), d - 0.5 * beta)
    return _reduce_loss(loss, reduction, "smooth_l1_loss")


def kl_div(input: Tensor, target: Tensor, size_average: bool | None = None, reduce: bool | None = None, reduction: str = "mean",
           log_target: bool = False) -> Tensor:
    """target (log target - input) for log-probabilities `input` (0 where target is 0); 'batchmean' divides
    the sum by the batch size (axis 0), the mathematically right mean."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if log_target:
        loss = target.exp() * (target - input)
    else:
        loss = target.xlogy(target) - target * input
    if reduction == "batchmean":
        return loss.sum() / (input.shape[0] if input.ndim else 1)
    return _reduce_loss(loss, reduction, "kl_div")


def poisson_nll_loss(input: Tensor, target: Tensor, log_input: bool = True, full: bool = False,
                     size_average: bool | None = None, eps: float = 1e-8, reduce: bool | None = None,
                     reduction: str = "mean") -> Tensor:
    """exp(input) - target input (or input - target log(input + eps) for rates), with Stirling's term of
    log(target!) for targets above 1 when `full`."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    loss = input.exp() - target * input if log_input else input - target * (input + eps).log()
    if full:
        t = _float(target)
        safe = where(t > 1, t, 1.0)
        loss = loss + where(t > 1, safe * safe.log() - safe + (safe * (2 * math.pi)).log() * 0.5, 0.0)
    return _reduce_loss(loss, reduction, "poisson_nll_loss")


def gaussian_nll_loss(input: Tensor, target: Tensor, var: Tensor | float, full: bool = False, eps: float = 1e-6,
                      reduction: str = "mean") -> Tensor:
    """0.5 (log var + (input - target)^2 / var) (+ 0.5 log 2 pi when `full`); var is clamped to eps, the
    clamp passing the gradient through as PyTorch's (which clamps outside autograd). var has input's shape, or
    one axis fewer (the last), or a last axis of 1."""
    if not isinstance(var, Tensor):
        if var < 0:
            raise ValueError("gaussian_nll_loss: var has a negative entry")
        var = input._const(var, input.dtype, input.device)
    elif var.shape != input.shape and var.ndim == input.ndim - 1 and var.shape == input.shape[:-1]:
        var = var.unsqueeze(-1)
    elif var.shape != input.shape and not (var.ndim == input.ndim and var.shape[:-1] == input.shape[:-1]
                                           and var.shape[-1] == 1):
        raise ShapeError(f"gaussian_nll_loss: var of shape {var.shape} for an input of shape {input.shape}")
    clamped = var + (var.maximum(eps) - var).detach()
    diff = input - target
    loss = (clamped.log() + diff * diff / clamped) * 0.5
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce_loss(loss, reduction, "gaussian_nll_loss")


def hinge_embedding_loss(input: Tensor, target: Tensor, margin: float = 1.0, size_average: bool | None = None,
                         reduce: bool | None = None, reduction: str = "mean") -> Tensor:
    """input where target is 1, max(0, margin - input) where it is -1 (both terms for other targets, as
    PyTorch's)."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    loss = where(target != 1, (margin - input).relu(), 0.0) + where(target != -1, input, 0.0)
    return _reduce_loss(loss, reduction, "hinge_embedding_loss")


def margin_ranking_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0.0,
                        size_average: bool | None = None, reduce: bool | None = None, reduction: str = "mean") -> Tensor:
    """max(0, -target (input1 - input2) + margin)."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    return _reduce_loss((-target * (input1 - input2) + margin).relu(), reduction, "margin_ranking_loss")


def soft_margin_loss(input: Tensor, target: Tensor, size_average: bool | None = None, reduce: bool | None = None,
                     reduction: str = "mean") -> Tensor:
    """log(1 + exp(-target input))."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    return _reduce_loss((-target * input).exp().log1p(), reduction, "soft_margin_loss")


def multilabel_soft_margin_loss(input: Tensor, target: Tensor, weight: Tensor | None = None,
                                size_average: bool | None = None, reduce: bool | None = None, reduction: str = "mean") -> Tensor:
    """The binary cross-entropy of each class's logit, averaged over the classes (axis 1) of (N, C)."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    loss = -(target * logsigmoid(input) + (1 - target) * logsigmoid(-input))
    if weight is not None:
        loss = loss * weight
    loss = loss.mean(-1) if input.ndim else loss
    return _reduce_loss(loss, reduction, "multilabel_soft_margin_loss")


def cosine_embedding_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0.0,
                          size_average: bool | None = None, reduce: bool | None = None, reduction: str = "mean") -> Tensor:
    """1 - cos(x1, x2) where target is 1, max(0, cos(x1, x2) - margin) where it is -1 (PyTorch's cosine, with
    1e-12 added to each squared norm)."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    dim = 1 if input1.ndim == 2 else 0
    dot = (input1 * input2).sum(dim)
    cos = dot / (((input1 * input1).sum(dim) + 1e-12) * ((input2 * input2).sum(dim) + 1e-12)).sqrt()
    loss = where(target == 1, 1 - cos, 0.0) + where(target == -1, (cos - margin).relu(), 0.0)
    return _reduce_loss(loss, reduction, "cosine_embedding_loss")


def triplet_margin_loss(anchor: Tensor, positive: Tensor, negative: Tensor, margin: float = 1.0, p: float = 2,
                        eps: float = 1e-6, swap: bool = False, size_average: bool | None = None, reduce: bool | None = None,
                        reduction: str = "mean") -> Tensor:
    """max(0, margin + d(anchor, positive) - d(anchor, negative)) with `pairwise_distance` d; with `swap`,
    the negative's distance is the smaller of d(anchor, negative) and d(positive, negative)."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    d_pos = pairwise_distance(anchor, positive, p, eps)
    d_neg = pairwise_distance(anchor, negative, p, eps)
    if swap:
        d_neg = d_neg.minimum(pairwise_distance(positive, negative, p, eps))
    return _reduce_loss((d_pos - d_neg + margin).relu(), reduction, "triplet_margin_loss")


def multi_margin_loss(input: Tensor, target: Tensor, p: int = 1, margin: float = 1.0, weight: Tensor | None = None,
                      size_average: bool | None = None, reduce: bool | None = None, reduction: str = "mean") -> Tensor:
    """The mean over classes i != y of max(0, margin - x[y] + x[i])^p (times weight[y]), for (N, C) or (C,)
    scores and class targets y."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if p not in (1, 2):
        raise ValueError(f"multi_margin_loss: only p = 1 and p = 2 are supported, got {p}")
    x = input if input.ndim == 2 else input.reshape(1, -1)
    y = target.reshape(-1)
    c = x.shape[1]
    hit = _class_mask(y, c, (1, c))
    picked = where(hit, x, 0.0).sum(1, keepdims=True)
    terms = where(hit, 0.0, (x - picked + margin).relu())
    terms = terms * terms if p == 2 else terms
    if weight is not None:
        terms = terms * where(hit, weight.reshape(1, c), 0.0).sum(1, keepdims=True)
    loss = terms.sum(1) / c
    return _reduce_loss(loss if input.ndim == 2 else loss.reshape(target.shape), reduction, "multi_margin_loss")


def binary_cross_entropy_with_logits(input: Tensor, target: Tensor, weight: Tensor | None = None,
                                     reduction: str = "mean", pos_weight: Tensor | None = None) -> Tensor:
    """-[pos_weight * y log sigmoid(x) + (1 - y) log(1 - sigmoid(x))], computed stably."""
    log_sig = -softplus(-input)      # log sigmoid(x)
    log_not = -softplus(input)       # log(1 - sigmoid(x))
    pos = target * log_sig if pos_weight is None else target * pos_weight * log_sig
    loss = -(pos + (1 - target) * log_not)
    if weight is not None:
        loss = loss * weight
    return _reduce_loss(loss, reduction, "binary_cross_entropy_with_logits")


def binary_cross_entropy(input: Tensor, target: Tensor, weight: Tensor | None = None,
                         reduction: str = "mean") -> Tensor:
    """-[y log p + (1 - y) log(1 - p)] with the logs clamped at -100, as PyTorch."""
    loss = -(target * input.log().maximum(-100.0) + (1 - target) * (1 - input).log().maximum(-100.0))
    if weight is not None:
        loss = loss * weight
    return _reduce_loss(loss, reduction, "binary_cross_entropy")


def _class_mask(target: Tensor, n_classes: int, class_dim_shape: tuple[int, ...]) -> Tensor:
    """bool (N, C, d1, ...): target == class, with the class axis at position 1."""
    classes = _iota(n_classes, target.device).reshape(class_dim_shape)
    return target.unsqueeze(1) == classes


def nll_loss(input: Tensor, target: Tensor, weight: Tensor | None = None, ignore_index: int = -100,
             reduction: str = "mean") -> Tensor:
    """-input[i, target[i]] (times weight[target[i]]) for log-probabilities `input` of shape (N, C) or
    (N, C, d1, ...); the mean divides by the summed weights of the targets not ignored, as PyTorch."""
    return _nll(input, target, weight, ignore_index, reduction, "nll_loss")[0]


def _nll(logp: Tensor, target: Tensor, weight: Tensor | None, ignore_index: int, reduction: str,
         name: str) -> tuple[Tensor, Tensor, Tensor]:
    if target.dtype.is_float or target.dtype == dtypes.bool_:
        raise DTypeError(f"{name}: targets must be class indices (integers), got {target.dtype.name}; "
                         "probability targets are not supported")
    target = target.cast(dtypes.int64)  # ignore_index and the class count may not fit a narrow dtype
    if logp.ndim == 1:
        logp, target = logp.unsqueeze(0), target.reshape(1)
    if logp.ndim < 2 or target.shape != (logp.shape[0],) + logp.shape[2:]:
        raise ShapeError(f"{name}: input of shape {logp.shape} needs targets of shape "
                         f"{(logp.shape[0],) + logp.shape[2:]}, got {target.shape}")
    c = logp.shape[1]
    valid = target != ignore_index                             # (N, ...)
    # logp[y] read where it lies (0 outside [0, c), as for an ignore_index there): a class mask summed over the
    # classes read each row of logp once more
    picked = logp._gather(1, target.unsqueeze(1)).squeeze(1)
    w_picked = None if weight is None else weight._gather(0, target.reshape(-1)).reshape(target.shape)  # w[y]
    if w_picked is not None:
        picked = picked * w_picked
    loss = where(valid, -picked, 0.0)._checked(valid & ((target < 0) | (target >= c)),
                                               f"{name}: a target is outside [0, {c}) ({c} classes)"
                                               + (f" and is not ignore_index={ignore_index}" if ignore_index < 0
                                                  or ignore_index >= c else ""))
    if w_picked is None:
        denom = valid.cast(logp.dtype).sum()
    else:
        denom = where(valid, w_picked, 0.0).sum()  # the weights of the targets (0 for ignored)
    if reduction == "mean":
        return loss.sum() / denom, valid, denom
    return _reduce_loss(loss, reduction, name), valid, denom


def cross_entropy(input: Tensor, target: Tensor, weight: Tensor | None = None,
                  ignore_index: int = -100, reduction: str = "mean", label_smoothing: float = 0.0) -> Tensor:
    """log_softmax over axis 1, then the negative log-likelihood of integer class targets; with
    `label_smoothing` e, (1 - e) * nll + e * (the mean over classes of -log p), as PyTorch. A float `target` of
    the input's shape holds class probabilities (PyTorch's soft targets): -sum_c weight_c * target_c * log p_c per
    sample, smoothed to (1 - e) * target + e / C; its mean divides by the number of samples, as PyTorch's."""
    if not 0.0 <= label_smoothing <= 1.0:
        raise ValueError(f"cross_entropy: label_smoothing must be in [0, 1], got {label_smoothing}")
    x = _float(input)
    class_dim = 1 if x.ndim >= 2 else 0
    logp = x.log_softmax(class_dim)
    if isinstance(target, Tensor) and target.dtype.is_float:
        if target.shape != x.shape:
            raise ShapeError(f"cross_entropy: probability targets must have the input's shape {x.shape}, got "
                             f"{target.shape}")
        c = x.shape[class_dim]
        probs = target * (1 - label_smoothing) + label_smoothing / c if label_smoothing else target
        if weight is not None:
            probs = probs * weight.reshape((c,) + (1,) * (x.ndim - class_dim - 1))
        return _reduce_loss(-(logp * probs).sum(class_dim), reduction, "cross_entropy")
    nll, valid, denom = _nll(logp, target, weight, ignore_index, reduction, "cross_entropy")
    if label_smoothing == 0.0:
        return nll
    if logp.ndim == 1:
        logp = logp.unsqueeze(0)
    c = logp.shape[1]
    cshape = (1, c) + (1,) * (logp.ndim - 2)
    weighted = logp if weight is None else logp * weight.reshape(cshape)
    smooth = where(valid, -weighted.sum(1), 0.0)
    if reduction == "mean":
        smooth = smooth.sum() / denom
    else:
        smooth = _reduce_loss(smooth, reduction, "cross_entropy")
    return nll * (1 - label_smoothing) + smooth * (label_smoothing / c)


relu_ = _in_place_twin(relu)
elu_ = _in_place_twin(elu)
celu_ = _in_place_twin(celu)
selu_ = _in_place_twin(selu)
leaky_relu_ = _in_place_twin(leaky_relu)
hardtanh_ = _in_place_twin(hardtanh)
threshold_ = _in_place_twin(threshold)
rrelu_ = _in_place_twin(rrelu)


__all__ = [
    "adaptive_avg_pool1d",
    "adaptive_avg_pool2d",
    "adaptive_avg_pool3d",
    "adaptive_max_pool1d",
    "adaptive_max_pool2d",
    "affine_grid",
    "alpha_dropout",
    "avg_pool1d",
    "avg_pool2d",
    "avg_pool3d",
    "batch_norm",
    "bilinear",
    "binary_cross_entropy",
    "binary_cross_entropy_with_logits",
    "cdist",
    "celu",
    "celu_",
    "channel_shuffle",
    "conv1d",
    "conv2d",
    "conv3d",
    "conv_transpose1d",
    "conv_transpose2d",
    "conv_transpose3d",
    "cosine_embedding_loss",
    "cosine_similarity",
    "cross_entropy",
    "dropout",
    "dropout1d",
    "dropout2d",
    "dropout3d",
    "elu",
    "elu_",
    "embedding",
    "embedding_bag",
    "fold",
    "gaussian_nll_loss",
    "gelu",
    "glu",
    "grid_sample",
    "group_norm",
    "gumbel_softmax",
    "hardshrink",
    "hardsigmoid",
    "hardswish",
    "hardtanh",
    "hardtanh_",
    "hinge_embedding_loss",
    "huber_loss",
    "instance_norm",
    "interpolate",
    "kl_div",
    "l1_loss",
    "layer_norm",
    "leaky_relu",
    "leaky_relu_",
    "linear",
    "local_response_norm",
    "log_softmax",
    "logsigmoid",
    "lp_pool1d",
    "lp_pool2d",
    "margin_ranking_loss",
    "max_pool1d",
    "max_pool2d",
    "max_pool3d",
    "max_unpool1d",
    "max_unpool2d",
    "max_unpool3d",
    "mish",
    "mse_loss",
    "multi_margin_loss",
    "multilabel_soft_margin_loss",
    "nll_loss",
    "normalize",
    "one_hot",
    "pad",
    "pairwise_distance",
    "pdist",
    "pixel_shuffle",
    "pixel_unshuffle",
    "poisson_nll_loss",
    "prelu",
    "relu",
    "relu6",
    "relu_",
    "rms_norm",
    "rrelu",
    "rrelu_",
    "scaled_dot_product_attention",
    "selu",
    "selu_",
    "sigmoid",
    "silu",
    "smooth_l1_loss",
    "soft_margin_loss",
    "softmax",
    "softmin",
    "softplus",
    "softshrink",
    "softsign",
    "tanh",
    "tanhshrink",
    "threshold",
    "threshold_",
    "triplet_margin_loss",
    "unfold",
]
