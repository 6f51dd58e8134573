"""Parameter initialization, as `torch.nn.init`: the same distributions (not the same bits).

Each function replaces the tensor's value (rebinding its node, under no_grad) with
numbers drawn inside a kernel by `lazytensor.random` (or fixed ones: `eye_`, `dirac_`),
realizes it at once (a parameter read by a matmul must not redraw its random numbers
per use), and returns the tensor.
"""
from __future__ import annotations

import math

from ..autograd import no_grad
from ..creation import arange, eye
from ..linalg import diagonal, qr
from ..random import Generator, rand, randn
from ..special import erfinv
from ..tensor import Tensor


def _set(t: Tensor, value: Tensor) -> Tensor:
    with no_grad():
        t.node = value.cast(t.dtype).node
    return t.realize()


def calculate_gain(nonlinearity: str, param: float | None = None) -> float:
    """The recommended gain for a nonlinearity (PyTorch's table)."""
    linear = {"linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
              "conv_transpose3d", "sigmoid"}
    if nonlinearity in linear:
        return 1.0
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        slope = 0.01 if param is None else float(param)
        return math.sqrt(2.0 / (1 + slope ** 2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"calculate_gain: unsupported nonlinearity {nonlinearity!r}")


def _calculate_fan_in_and_fan_out(t: Tensor) -> tuple[int, int]:
    if t.ndim < 2:
        raise ValueError("fan in and fan out can not be computed for a tensor with fewer than 2 dimensions")
    receptive = math.prod(t.shape[2:])
    return t.shape[1] * receptive, t.shape[0] * receptive


def _fan(t: Tensor, mode: str) -> int:
    fan_in, fan_out = _calculate_fan_in_and_fan_out(t)
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"mode must be 'fan_in' or 'fan_out', got {mode!r}")
    return fan_in if mode == "fan_in" else fan_out


def uniform_(t: Tensor, a: float = 0.0, b: float = 1.0, generator: Generator | None = None) -> Tensor:
    return _set(t, rand(t.shape, dtype=t.dtype, device=t.device, generator=generator) * (b - a) + a)


def normal_(t: Tensor, mean: float = 0.0, std: float = 1.0, generator: Generator | None = None) -> Tensor:
    return _set(t, randn(t.shape, dtype=t.dtype, device=t.device, generator=generator) * std + mean)


def constant_(t: Tensor, val: float) -> Tensor:
    return _set(t, t._scalar(val, t.dtype, t.device, shape=t.shape))


def zeros_(t: Tensor) -> Tensor:
    return constant_(t, 0.0)


def ones_(t: Tensor) -> Tensor:
    return constant_(t, 1.0)


def xavier_uniform_(t: Tensor, gain: float = 1.0, generator: Generator | None = None) -> Tensor:
    fan_in, fan_out = _calculate_fan_in_and_fan_out(t)
    bound = gain * math.sqrt(6.0 / (fan_in + fan_out))
    return uniform_(t, -bound, bound, generator)


def xavier_normal_(t: Tensor, gain: float = 1.0, generator: Generator | None = None) -> Tensor:
    fan_in, fan_out = _calculate_fan_in_and_fan_out(t)
    return normal_(t, 0.0, gain * math.sqrt(2.0 / (fan_in + fan_out)), generator)


def kaiming_uniform_(t: Tensor, a: float = 0.0, mode: str = "fan_in", nonlinearity: str = "leaky_relu",
                     generator: Generator | None = None) -> Tensor:
    bound = calculate_gain(nonlinearity, a) * math.sqrt(3.0 / _fan(t, mode))
    return uniform_(t, -bound, bound, generator)


def kaiming_normal_(t: Tensor, a: float = 0.0, mode: str = "fan_in", nonlinearity: str = "leaky_relu",
                    generator: Generator | None = None) -> Tensor:
    return normal_(t, 0.0, calculate_gain(nonlinearity, a) / math.sqrt(_fan(t, mode)), generator)


def trunc_normal_(t: Tensor, mean: float = 0.0, std: float = 1.0, a: float = -2.0, b: float = 2.0,
                  generator: Generator | None = None) -> Tensor:
    """Normal(mean, std) truncated to [a, b], by the inverse CDF of a uniform draw (as PyTorch)."""

    def cdf(x: float) -> float:
        return (1.0 + math.erf(x / math.sqrt(2.0))) / 2.0

    lo, hi = cdf((a - mean) / std), cdf((b - mean) / std)
    u = rand(t.shape, dtype=t.dtype, device=t.device, generator=generator) * (2 * hi - 2 * lo) + (2 * lo - 1)
    x = erfinv(u) * math.sqrt(2)  # the normal quantile of (u + 1) / 2
    return _set(t, (x * std + mean).clip(a, b))


def eye_(t: Tensor) -> Tensor:
    """The identity matrix in a 2-d tensor (ones on the main diagonal of a rectangular one), as PyTorch's."""
    if t.ndim != 2:
        raise ValueError(f"eye_: only 2-d tensors are supported, got shape {t.shape}")
    return _set(t, eye(t.shape[0], t.shape[1], dtype=t.dtype, device=t.device))


def dirac_(t: Tensor, groups: int = 1) -> Tensor:
    """The Dirac delta in a 3-, 4- or 5-d convolution weight (out, in, *kernel), as PyTorch's: a 1 at the kernel's
    centre where output channel o of each of the `groups` blocks equals input channel i, so the convolution keeps
    as many of its input channels as it has outputs per group."""
    if t.ndim not in (3, 4, 5):
        raise ValueError(f"dirac_: only 3-, 4- or 5-d tensors are supported, got shape {t.shape}")
    if t.shape[0] % groups:
        raise ValueError(f"dirac_: dim 0 ({t.shape[0]}) must be divisible by groups ({groups})")

    def along(axis: int) -> Tensor:
        return arange(t.shape[axis], device=t.device).reshape([-1 if d == axis else 1 for d in range(t.ndim)])

    delta = along(0) % (t.shape[0] // groups) == along(1)
    for axis in range(2, t.ndim):
        delta = delta & (along(axis) == t.shape[axis] // 2)
    return _set(t, delta)


def orthogonal_(t: Tensor, gain: float = 1.0, generator: Generator | None = None) -> Tensor:
    """A (semi-)orthogonal matrix times `gain`, as PyTorch's: the Q of the QR of a normal draw, its columns' signs
    those of R's diagonal (uniform over the orthogonal matrices); a tensor of more than 2 dimensions is its
    (shape[0], rest) flattening. Its rows are orthonormal where they are fewer, else its columns. The QR is
    LAPACK's, on the CPU: the result moves to the tensor's device."""
    if t.ndim < 2:
        raise ValueError(f"orthogonal_: only tensors of 2 or more dimensions are supported, got shape {t.shape}")
    if t.numel() == 0:
        return t
    rows = t.shape[0]
    cols = t.numel() // rows
    draw = randn((rows, cols), dtype=t.dtype, device="cpu", generator=generator)
    q, r = qr(draw.T if rows < cols else draw)
    q = q * diagonal(r).sign()
    return _set(t, ((q.T if rows < cols else q).reshape(t.shape) * gain).to(t.device))


__all__ = [
    "calculate_gain",
    "constant_",
    "dirac_",
    "eye_",
    "kaiming_normal_",
    "kaiming_uniform_",
    "normal_",
    "ones_",
    "orthogonal_",
    "trunc_normal_",
    "uniform_",
    "xavier_normal_",
    "xavier_uniform_",
    "zeros_",
]
