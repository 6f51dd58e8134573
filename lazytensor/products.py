"""NumPy's top-level products and traces, which differ from the array API's (`lt.linalg`) in the axes they take:
`trace` (of the first two axes, or those named), `inner` (over the last axes of both), `vdot` (of the flattened
tensors) and `kron` (the Kronecker product). Compositions of views, products and sums: they fuse as those do."""
from __future__ import annotations

from typing import Any

from .creation import asarray
from .errors import ShapeError
from .linalg import diagonal
from .movement import normalize_axis
from .tensor import Tensor


def trace(a: Any, offset: int = 0, axis1: int = 0, axis2: int = 1, dtype: Any = None) -> Tensor:
    """NumPy's trace: the sum of the `offset`-th diagonal of the matrices in `axis1` and `axis2` (the first two
    by default; `lt.linalg.trace` takes the last two), over the other axes in order. Dtypes as `sum`."""
    t = asarray(a)
    if t.ndim < 2:
        raise ShapeError(f"trace: needs at least 2 dimensions, got a tensor of shape {t.shape}")
    i, j = normalize_axis(axis1, t.ndim, "trace"), normalize_axis(axis2, t.ndim, "trace")
    if i == j:
        raise ValueError(f"trace: axis1 and axis2 cannot be the same, got {axis1} and {axis2}")
    rest = [k for k in range(t.ndim) if k not in (i, j)]
    return diagonal(t.permute(rest + [i, j]), offset=offset).sum(-1, dtype=dtype)


def inner(a: Any, b: Any, /) -> Tensor:
    """NumPy's inner: the sums of products over the last axes of a and b, of shape a.shape[:-1] + b.shape[:-1]
    (a product, where either is 0-d)."""
    x, y = asarray(a), asarray(b)
    if x.ndim == 0 or y.ndim == 0:
        return x * y
    if x.shape[-1] != y.shape[-1]:
        raise ShapeError(f"inner: the last axes differ, shapes {x.shape} and {y.shape}")
    return x.tensordot(y, ([-1], [-1]))


def vdot(a: Any, b: Any, /) -> Tensor:
    """NumPy's vdot (of real tensors): the dot product of the flattened tensors, which hold as many elements."""
    x, y = asarray(a).reshape(-1), asarray(b).reshape(-1)
    if x.shape != y.shape:
        raise ShapeError(f"vdot: the tensors hold {x.shape[0]} and {y.shape[0]} elements")
    return x.dot(y)


def kron(a: Any, b: Any, /) -> Tensor:
    """NumPy's Kronecker product: blocks of b scaled by each element of a, of shape a.shape * b.shape (the
    shorter shape padded with leading 1s)."""
    x, y = asarray(a), asarray(b)
    ndim = max(x.ndim, y.ndim)
    xs, ys = (1,) * (ndim - x.ndim) + x.shape, (1,) * (ndim - y.ndim) + y.shape
    interleaved_x = tuple(d for n in xs for d in (n, 1))
    interleaved_y = tuple(d for n in ys for d in (1, n))
    product = x.reshape(interleaved_x) * y.reshape(interleaved_y)
    return product.reshape(tuple(m * n for m, n in zip(xs, ys)))


__all__ = ["inner", "kron", "trace", "vdot"]
