"""`lt.linalg`: the array API standard's linear algebra extension, the parts that need no decomposition.

Every function acts on the last axes (matrices in the last two, vectors in the last one unless an axis is
given) and broadcasts over the rest, as the standard asks. They are compositions of other ops, so they fuse
like them: `lt.linalg.vector_norm(x - y)` is one kernel. The functions that need a factorization (`inv`,
`solve`, `svd`, `eigh`, `cholesky`, `qr`, `det`, the nuclear and 2-norms, ...) are not here yet.
"""
from __future__ import annotations

import math
from typing import Any, Literal

from .contraction import ContractionOps
from .errors import ShapeError
from .movement import normalize_axes, normalize_axis, stack
from .tensor import Tensor, broadcast_shapes


def matmul(x1: Tensor, x2: Tensor, /) -> Tensor:
    """The matrix product with NumPy's rules (`x1 @ x2`)."""
    return ContractionOps.matmul(x1, x2)


def tensordot(x1: Tensor, x2: Tensor, /, *, axes: int | tuple[Any, Any] = 2) -> Tensor:
    """Sum of products over `axes`: the last N of x1 with the first N of x2, or two lists of axes."""
    return ContractionOps.tensordot(x1, x2, axes)


def vecdot(x1: Tensor, x2: Tensor, /, *, axis: int = -1) -> Tensor:
    """Dot products along `axis`, broadcasting the other axes."""
    return ContractionOps.vecdot(x1, x2, axis)


def outer(x1: Tensor, x2: Tensor, /) -> Tensor:
    """`outer(a, b)[i, j] = a[i] * b[j]` of two 1-d tensors."""
    if x1.ndim != 1 or x2.ndim != 1:
        raise ShapeError(f"outer: needs two 1-d tensors, got shapes {x1.shape} and {x2.shape}")
    return ContractionOps.outer(x1, x2)


def matrix_transpose(x: Tensor, /) -> Tensor:
    """The matrices in the last two axes transposed (`x.mT`)."""
    return x.mT


def diagonal(x: Tensor, /, *, offset: int = 0) -> Tensor:
    """The `offset`-th diagonal of each matrix in the last two axes (above the main one for offset > 0), as a
    view: the matrix flattened, where consecutive diagonal elements lie `columns + 1` apart."""
    if x.ndim < 2:
        raise ShapeError(f"diagonal: needs at least 2 dimensions, got a tensor of shape {x.shape}")
    *batch, rows, cols = x.shape
    start = offset if offset >= 0 else -offset * cols
    length = max(0, min(rows, cols - offset) if offset >= 0 else min(rows + offset, cols))
    stride = cols + 1
    flat = x.reshape(*batch, rows * cols).pad([(0, 0)] * len(batch) + [(0, stride)])
    return flat[..., start:start + length * stride].reshape(*batch, length, stride)[..., 0]


def trace(x: Tensor, /, *, offset: int = 0, dtype: Any = None) -> Tensor:
    """The sum of the `offset`-th diagonal of each matrix in the last two axes (dtypes as `sum`)."""
    return diagonal(x, offset=offset).sum(-1, dtype=dtype)


def vector_norm(x: Tensor, /, *, axis: int | tuple[int, ...] | None = None, keepdims: bool = False,
                ord: float = 2) -> Tensor:
    """The `ord`-norm of the vectors along `axis` (all elements with axis None): `sum(|x|**ord)**(1/ord)`,
    the largest |x| for inf, the smallest for -inf, the count of nonzeros for 0. A float result (the
    default float for integer input); 16-bit floats are computed in float32 and rounded once."""
    wide, out = x._widened()
    axes = normalize_axes(axis, x.ndim, "vector_norm")
    size = wide.abs()
    if ord == math.inf:
        norm = size.max(axes, keepdims)
    elif ord == -math.inf:
        norm = size.min(axes, keepdims)
    elif ord == 0:
        norm = (size != 0).sum(axes, keepdims, dtype=wide.dtype)
    elif ord == 1:
        norm = size.sum(axes, keepdims)
    elif ord == 2:
        norm = (size * size).sum(axes, keepdims).sqrt()
    else:
        norm = (size ** ord).sum(axes, keepdims) ** (1 / ord)
    return norm.cast(out)


def matrix_norm(x: Tensor, /, *, keepdims: bool = False,
                ord: Literal["fro", 1, -1] | float = "fro") -> Tensor:
    """The `ord`-norm of each matrix in the last two axes: 'fro' (the square root of the sum of squares),
    1 / -1 (the largest / smallest column sum of |x|), inf / -inf (the largest / smallest row sum). The
    norms that need singular values ('nuc', 2, -2) raise NotImplementedError."""
    if x.ndim < 2:
        raise ShapeError(f"matrix_norm: needs at least 2 dimensions, got a tensor of shape {x.shape}")
    if ord == "fro":
        return vector_norm(x, axis=(-2, -1), keepdims=keepdims)
    if isinstance(ord, str) or ord not in _MATRIX_NORM_AXES:
        if ord in ("nuc", 2, -2):
            raise NotImplementedError(f"matrix_norm: ord={ord!r} needs singular values, which lazytensor does "
                                      "not compute yet")
        raise ValueError(f"matrix_norm: ord must be 'fro', 1, -1, inf or -inf, got {ord!r}")
    summed, picked = _MATRIX_NORM_AXES[ord]
    wide, out = x._widened()
    lines = wide.abs().sum(summed, keepdims=True)
    norm = lines.max(picked, keepdims=True) if ord > 0 else lines.min(picked, keepdims=True)
    return (norm if keepdims else norm.reshape(x.shape[:-2])).cast(out)


# matrix_norm's induced norms: the axis |x| is summed over (-2: column sums), then the one whose largest
# (ord > 0) or smallest sum is the norm
_MATRIX_NORM_AXES = {1: (-2, -1), -1: (-2, -1), math.inf: (-1, -2), -math.inf: (-1, -2)}


def norm(x: Tensor, ord: Any = None, axis: int | tuple[int, int] | None = None, keepdims: bool = False) -> Tensor:
    """NumPy's `linalg.norm`: with `axis` an int (or x 1-d), a vector norm (`vector_norm`, ord None is 2);
    with two axes (or x 2-d), a matrix norm over them (`matrix_norm`, ord None is 'fro'); with neither,
    ord None, the 2-norm of every element."""
    if axis is None and (ord is None or x.ndim > 2):
        if ord is not None:
            raise ValueError(f"norm: ord={ord!r} needs a 1-d or 2-d tensor, or axis, got shape {x.shape}")
        out = vector_norm(x, axis=None, keepdims=keepdims)
        return out
    axes = tuple(range(x.ndim)) if axis is None else (axis,) if isinstance(axis, int) else tuple(axis)
    if len(axes) == 1:
        return vector_norm(x, axis=axes[0], keepdims=keepdims, ord=2 if ord is None else ord)
    if len(axes) != 2:
        raise ValueError(f"norm: axis must name one or two axes, got {axis!r}")
    a, b = (normalize_axis(i, x.ndim, "norm") for i in axes)  # in order: rows, then columns
    if a == b:
        raise ValueError(f"norm: the two axes are the same: {axis!r}")
    moved = x.moveaxis((a, b), (-2, -1))
    out = matrix_norm(moved, ord="fro" if ord is None else ord)
    if not keepdims:
        return out
    return out.reshape(tuple(1 if i in (a, b) else n for i, n in enumerate(x.shape)))


def cross(x1: Tensor, x2: Tensor, /, *, axis: int = -1) -> Tensor:
    """The cross product of 3-vectors along `axis` (which must have size 3 in both), broadcasting the rest."""
    shape = broadcast_shapes(x1.shape, x2.shape, op="cross")
    a = normalize_axis(axis, len(shape), "cross")
    if x1.shape[a - len(shape)] != 3 or x2.shape[a - len(shape)] != 3:
        raise ShapeError(f"cross: axis {axis} must have size 3 in both, got shapes {x1.shape} and {x2.shape}")
    u, v = (t.broadcast_to(shape).moveaxis(a, 0) for t in (x1, x2))
    components = [u[1] * v[2] - u[2] * v[1], u[2] * v[0] - u[0] * v[2], u[0] * v[1] - u[1] * v[0]]
    return stack(components, a)


__all__ = ["cross", "diagonal", "matmul", "matrix_norm", "matrix_transpose", "norm", "outer", "tensordot", "trace",
           "vecdot", "vector_norm"]
