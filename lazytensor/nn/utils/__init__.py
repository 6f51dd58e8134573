"""Gradient clipping, with PyTorch's names: `nn.utils.clip_grad_norm_` and `clip_grad_value_`; sequence padding
in `nn.utils.rnn`.

Both are lazy: the total norm and the scaled gradients are graph nodes, fused into the optimizer update that reads
them, and nothing is read back to the host (PyTorch's `error_if_nonfinite` would read the norm: here it is refused).
"""
from __future__ import annotations

import math
from collections.abc import Iterable

from ...tensor import Tensor
from . import rnn


def _with_grads(parameters: Tensor | Iterable[Tensor]) -> list[Tensor]:
    params = [parameters] if isinstance(parameters, Tensor) else list(parameters)
    return [p for p in params if p.grad is not None]


def clip_grad_norm_(parameters: Tensor | Iterable[Tensor], max_norm: float, norm_type: float = 2.0,
                    error_if_nonfinite: bool = False, foreach: bool | None = None) -> Tensor:
    """Scale the gradients of `parameters` together so that their total `norm_type`-norm (of all the gradients
    as one vector) is at most `max_norm`, in place (each `.grad` is rebound); returns the total norm before
    clipping, a 0-d tensor. As PyTorch's: the scale is `max_norm / (norm + 1e-6)`, capped at 1."""
    if error_if_nonfinite:
        raise NotImplementedError("clip_grad_norm_: error_if_nonfinite would read the norm back (a lazy "
                                  "computation cannot raise on its value); check the returned norm instead")
    from ...linalg import vector_norm
    from ...movement import stack
    grads = _with_grads(parameters)
    if not grads:
        from ...creation import zeros
        return zeros(())
    norms = stack([vector_norm(p.grad, ord=norm_type) for p in grads])
    total = vector_norm(norms, ord=norm_type) if not math.isinf(norm_type) else norms.max()
    scale = (max_norm / (total + 1e-6)).clip(None, 1.0)
    for p in grads:
        p.grad = (p.grad * scale.cast(p.grad.dtype)).cast(p.grad.dtype)
    return total


def clip_grad_value_(parameters: Tensor | Iterable[Tensor], clip_value: float, foreach: bool | None = None) -> None:
    """Clip every gradient of `parameters` to [-clip_value, clip_value], in place."""
    for p in _with_grads(parameters):
        p.grad = p.grad.clip(-clip_value, clip_value)


__all__ = ["clip_grad_norm_", "clip_grad_value_", "rnn"]
