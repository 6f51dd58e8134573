"""lazytensor's documented semantics where they differ from torch's API, written with torch ops.

The torch side of the fuzzer's programs calls these where lazytensor deliberately follows NumPy (or
offers what torch lacks), so that the oracle computes what lazytensor promises rather than what torch
happens to do. Each function names the rule it implements. The repro scripts copy the source of the ones
they use, so they must stay plain torch (no imports beyond torch).
"""
from __future__ import annotations

import torch


def index(x: torch.Tensor, items: tuple) -> torch.Tensor:
    """`x[items]` with NumPy's negative slice steps (torch's slices take positive steps only): an axis
    sliced with a negative step is flipped, then sliced from the mirrored start with the positive step."""
    out_items, flips, axis = [], [], 0
    for it in items:
        if it is None:
            out_items.append(None)
            continue
        if it is Ellipsis:
            used = sum(1 for i in items if i is not None and i is not Ellipsis)
            axis_after = axis + x.dim() - used
            out_items.append(Ellipsis)
            axis = axis_after
            continue
        if isinstance(it, slice) and it.step is not None and it.step < 0:
            n = x.shape[axis]
            start, stop, step = it.indices(n)
            length = len(range(start, stop, step))
            flips.append(axis)
            first = n - 1 - start
            out_items.append(slice(first, first + (length - 1) * -step + 1 if length else first, -step))
        else:
            out_items.append(it)
        axis += 1
    return (x.flip(flips) if flips else x)[tuple(out_items)]


def sigmoid(x: torch.Tensor) -> torch.Tensor:
    """torch's sigmoid with its slope computed as `e / (1 + e)**2` of `e = exp(-|x|)`, correctly rounded where the
    sigmoid saturates; torch's backward takes `s * (1 - s)`, whose `1 - s` keeps one or two digits there (grad seed
    2312989: 1.3767e-14 at x = 31.92 in float64, where the slope is 1.36777e-14 and lazytensor's is)."""
    class Sigmoid(torch.autograd.Function):
        @staticmethod
        def forward(ctx, t):
            ctx.save_for_backward(t)
            return t.sigmoid()

        @staticmethod
        def backward(ctx, g):
            (t,) = ctx.saved_tensors
            e = (-t.abs()).exp()
            return g * (e / (1 + e) ** 2)

    return Sigmoid.apply(x)


def floor_divide(a, b):
    """Python's floor division; an integer divisor of 0 gives 0 (lazytensor follows NumPy, torch raises);
    a float operand that is infinite, or a float divisor of 0, gives `floor(a / b)` (the array API's;
    torch gives NaN for `inf // 2` and -1 for `-1 // inf`)."""
    if _integral(a, b):
        return _by_nonzero(a, b, lambda x, y: x // y)
    quotient = a / b
    special = torch.as_tensor(a).isinf() | torch.as_tensor(b).isinf() | (torch.as_tensor(b) == 0)
    return torch.where(special, quotient.floor(), a // b)


def sign(x: torch.Tensor) -> torch.Tensor:
    """-1, 0 or 1; NaN for NaN (NumPy and the array API; torch gives 0)."""
    return torch.where(x.isnan(), x, x.sign()) if x.is_floating_point() else x.sign()


def prod_all(x: torch.Tensor) -> torch.Tensor:
    """The product of all elements as the product along the flattened tensor, the same value, with torch's
    gradient along an axis: for the whole tensor torch's backward gives 0 everywhere where two elements are 0,
    whatever infinity is among them, where along an axis it gives the others' product, NaN for 0 times inf
    (`[0, 0, inf, 2]`: 0, 0, 0, 0 against NaN, NaN, 0, NaN; grad seed 2411621), which lazytensor gives for both."""
    return x.reshape(-1).prod(0)


def remainder(a, b):
    """Python's modulo (the sign of the divisor); an integer divisor of 0 gives 0 (as NumPy; torch raises)."""
    return _by_nonzero(a, b, lambda x, y: x % y)


def _by_nonzero(a, b, op):
    """`op(a, b)`, with 0 where an integer divisor is 0, in the dtype `op(a, b)` has."""
    if not _integral(a, b):
        return op(a, b)
    if not isinstance(b, torch.Tensor):
        return op(a, b) if b != 0 else op(a, 1) * 0
    zero = b == 0
    return torch.where(zero, 0, op(a, torch.where(zero, torch.ones_like(b), b)))


def _integral(a, b) -> bool:
    """Whether `a op b` computes in an integer (or bool) dtype."""
    return not torch.result_type(a, b).is_floating_point


def as_float(x: torch.Tensor) -> torch.Tensor:
    """The input of mean, var, softmax, logsumexp...: an integer or bool tensor becomes float32 (lazytensor's
    default float), where torch refuses integers."""
    return x if x.is_floating_point() else x.float()


def pad(x: torch.Tensor, pairs: tuple, value) -> torch.Tensor:
    """NumPy's pad with one (before, after) pair per axis, first axis first (torch's F.pad takes them last
    axis first); the value takes the tensor's dtype, as both libraries do."""
    flat = [w for before_after in reversed(pairs) for w in before_after]
    return torch.nn.functional.pad(x, flat, value=value)


def amax(x: torch.Tensor, dim=None, keepdim: bool = False) -> torch.Tensor:
    """torch.amax, whose gradient lazytensor shares as amax does among the elements equal to the maximum, but
    where the maximum is NaN among the NaNs it came from (torch's is NaN everywhere there: 0/0)."""
    return _extremum(x, dim, keepdim, torch.amax)


def amin(x: torch.Tensor, dim=None, keepdim: bool = False) -> torch.Tensor:
    """torch.amin with lazytensor's gradient where the minimum is NaN (see amax)."""
    return _extremum(x, dim, keepdim, torch.amin)


def _extremum(x: torch.Tensor, dim, keepdim: bool, reduce) -> torch.Tensor:
    dims = tuple(range(x.dim())) if dim is None or dim == () else (dim,) if isinstance(dim, int) else tuple(dim)

    class Extremum(torch.autograd.Function):
        @staticmethod
        def forward(ctx, t):
            out = reduce(t, dim=dims, keepdim=True)
            ctx.save_for_backward(t, out)
            return out if keepdim else out.squeeze(dims)

        @staticmethod
        def backward(ctx, g):
            t, out = ctx.saved_tensors
            hit = (t == out) | (t.isnan() & out.isnan()) if t.is_floating_point() else t == out
            hit = hit.to(t.dtype)
            g = g if keepdim else g.reshape(out.shape)
            return hit * g / hit.sum(dim=dims, keepdim=True)

    return Extremum.apply(x)


def elu(x: torch.Tensor) -> torch.Tensor:
    """torch's elu with the gradient of torch's scalar code at NaN, `x <= 0 ? alpha exp(x) : 1` (1: the NaN
    passes the upstream gradient, as relu's); torch's vectorized code, which runs on all but a tensor's tail,
    gives NaN there (grad seed 970397: NaN from 16 float64 elements on, 1 below), so torch's result depends on
    an element's position."""
    class Elu(torch.autograd.Function):
        @staticmethod
        def forward(ctx, t):
            ctx.save_for_backward(t)
            return torch.nn.functional.elu(t)

        @staticmethod
        def backward(ctx, g):
            (t,) = ctx.saved_tensors
            return torch.where(t <= 0, g * t.clamp(max=0).exp(), g)

    return Elu.apply(x)


def layer_norm(x: torch.Tensor, shape: tuple, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    """torch's layer_norm (the biased variance, eps 1e-5 under the square root, float32 statistics for the 16-bit
    floats) written as the ops it is made of, so that its gradient is theirs: torch's fused backward rounds where
    the gradient is exactly 0, over one element, where `x - mean` is 0 whatever x (grad seed 2241: -2.8e-14 in
    float64 where lazytensor gives 0)."""
    axes = tuple(range(x.dim() - len(shape), x.dim()))
    wide = x.float() if x.dtype in (torch.float16, torch.bfloat16) else x
    centered = wide - wide.mean(dim=axes, keepdim=True)
    out = centered * (centered * centered).mean(dim=axes, keepdim=True).add(1e-5).rsqrt()
    return (out * weight + bias).to(torch.promote_types(x.dtype, torch.promote_types(weight.dtype, bias.dtype)))
