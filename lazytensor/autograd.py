"""Reverse-mode automatic differentiation on the lazy graph.

Every Tensor made by an op on a tensor that requires grad remembers that op
(`Tensor._ctx`: the primitive graph op, its argument, and its source tensors).
Gradients are built from these records with one vector-Jacobian product rule
per primitive op, as ordinary lazy tensors: the backward pass fuses like any
other computation.
"""
from __future__ import annotations

import contextlib
import threading
from typing import Iterator

_state = threading.local()


def is_grad_enabled() -> bool:
    """False inside `no_grad()`: ops then record nothing for autograd."""
    return getattr(_state, "enabled", True)


@contextlib.contextmanager
def no_grad() -> Iterator[None]:
    """Run a block without recording operations for autograd (inference, optimizer updates)."""
    previous = is_grad_enabled()
    _state.enabled = False
    try:
        yield
    finally:
        _state.enabled = previous


@contextlib.contextmanager
def enable_grad() -> Iterator[None]:
    previous = is_grad_enabled()
    _state.enabled = True
    try:
        yield
    finally:
        _state.enabled = previous
