"""`lt.linalg`: the array API standard's linear algebra extension (revision 2024.12).

Every function acts on the last axes (matrices in the last two, vectors in the last one unless an axis is
given) and broadcasts over the rest (a stack of matrices), as the standard asks.

The functions that need no factorization (norms, diagonal, trace, cross, the contractions) are compositions of
other ops, so they fuse like them: `lt.linalg.vector_norm(x - y)` is one kernel.

The factorizations (`cholesky`, `det`, `slogdet`, `inv`, `solve`, `eigh`, `eigvalsh`, `qr`, `svd`, `svdvals`) are
one graph op, `Op.LINALG`, naming a routine of `kernels/lapack.py`: a kernel of its own kind in the schedule
(`kernels.ir.LibraryCall`), which the CPU runs with LAPACK through NumPy on its buffers. The op's node holds every
result of a matrix one after another along its last axis, and each result is a view of it, so `eigh` runs once
for its eigenvalues and eigenvectors. Their gradient is one rule per routine (`vjp`), made of differentiable ops,
so higher derivatives follow. `pinv`, `matrix_rank`, `matrix_power` and the norms that need singular values are
compositions of them. They compute float32 and float64 in their dtype (LAPACK's float64 inside, as NumPy's), the
16-bit floats in float32, rounded back, and bools and integers in the default float (float32), the dtype of their
results, as `sqrt` and `vector_norm` do (NumPy's give float64 there). A device whose backend has no LAPACK (a GPU)
raises DeviceError when the op is recorded: no silent copy to the host. A matrix a routine fails on (a singular
one for `inv` and `solve`, one not positive definite for `cholesky`, no convergence) raises LinAlgError, a
ValueError as NumPy's, when it is realized, naming the matrix of the batch and the op's line; `det` and `slogdet`
of a singular matrix are 0 and (0, -inf), as NumPy's.
"""
from __future__ import annotations

import math
import operator
from collections.abc import Callable, Sequence
from typing import Any, Literal, NamedTuple

from .contraction import ContractionOps
from .creation import eye, tril, triu, zeros
from .device import get_device
from .dtypes import DType, finfo, promote
from .errors import DeviceError, LinAlgError, ShapeError
from .graph import Op
from .kernels import lapack
from .kernels.dtype import int32 as lapack_int
from .kernels.dtype import int64
from .movement import concat, normalize_axes, normalize_axis, stack
from .tensor import Tensor, broadcast_shapes, where


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
    if ord == 2:  # |x|**2 is x**2 for real x: the graph, kernel and time of `(x ** 2).sum(axis) ** 0.5`
        return (wide * wide).sum(axes, keepdims).sqrt().cast(out)
    size = wide.abs()
    if ord == math.inf:
        norm = size.max(axes, keepdims)
    elif ord == -math.inf:
        norm = size.min(axes, keepdims)
    elif ord == 0:
        norm = (size != 0).sum(axes, keepdims, dtype=wide.dtype)
    elif ord == 1:
        norm = size.sum(axes, keepdims)
    else:
        norm = (size ** ord).sum(axes, keepdims) ** (1 / ord)
    return norm.cast(out)


def matrix_norm(x: Tensor, /, *, keepdims: bool = False,
                ord: Literal["fro", "nuc", 1, -1, 2, -2] | float = "fro") -> Tensor:
    """The `ord`-norm of each matrix in the last two axes: 'fro' (the square root of the sum of squares),
    'nuc' (the sum of the singular values), 1 / -1 (the largest / smallest column sum of |x|), 2 / -2 (the
    largest / smallest singular value), inf / -inf (the largest / smallest row sum). A float result (the default
    float for integer input)."""
    if x.ndim < 2:
        raise ShapeError(f"matrix_norm: needs at least 2 dimensions, got a tensor of shape {x.shape}")
    if ord == "fro":
        return vector_norm(x, axis=(-2, -1), keepdims=keepdims)
    if ord in ("nuc", 2, -2):
        wide, out = x._widened()
        s = svdvals(wide)
        norm = s.sum(-1) if ord == "nuc" else s.max(-1) if ord == 2 else s.min(-1)
        return (norm.reshape(*norm.shape, 1, 1) if keepdims else norm).cast(out)
    if isinstance(ord, str) or ord not in _MATRIX_NORM_AXES:
        raise ValueError(f"matrix_norm: ord must be 'fro', 'nuc', 1, -1, 2, -2, inf or -inf, got {ord!r}")
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


# ---- factorizations: library calls ---------------------------------------------------------------------


class EighResult(NamedTuple):
    """`eigh`'s result, as NumPy's: the eigenvalues (ascending) and the eigenvectors (as columns)."""

    eigenvalues: Tensor
    eigenvectors: Tensor


class QRResult(NamedTuple):
    """`qr`'s result, as NumPy's: Q with orthonormal columns and upper-triangular R, x = Q @ R."""

    Q: Tensor
    R: Tensor


class SlogdetResult(NamedTuple):
    """`slogdet`'s result, as NumPy's: the sign of the determinant (1, -1, or 0) and log of its absolute value."""

    sign: Tensor
    logabsdet: Tensor


class SVDResult(NamedTuple):
    """`svd`'s result, as NumPy's: x = U @ (S[..., None] * Vh), the singular values S in descending order."""

    U: Tensor
    S: Tensor
    Vh: Tensor


def _matrices(x: Tensor, name: str, square: bool = False) -> tuple[Tensor, DType]:
    """`x` as a factorization takes it (a stack of matrices, square where `square`, on a device whose backend
    has LAPACK), in the dtype it is computed in (float32 for the 16-bit floats and, as the default float, for
    bools and integers: `Tensor._widened`); and the dtype of the result."""
    if x.ndim < 2:
        raise ShapeError(f"{name}: needs a stack of matrices (at least 2 dimensions), got shape {x.shape}")
    if square and x.shape[-1] != x.shape[-2]:
        raise ShapeError(f"{name}: needs square matrices, got shape {x.shape} ({x.shape[-2]}x{x.shape[-1]} "
                         "matrices)")
    device = get_device(x.device)
    if not device.library_calls:
        raise DeviceError(f"linalg.{name}: {device.describe()} has no LAPACK to run it on (lazytensor runs "
                          f"factorizations on the CPU only); move the tensor there first: x.to('cpu')")
    return x._widened()


def _call(routine: str, *operands: Tensor) -> list[Tensor]:
    """Record the library call `routine` on the matrices of `operands` (checked by `_matrices`, of one batch
    shape): its results, each of the batch shape followed by its own."""
    shapes = tuple((x.shape[-2], x.shape[-1]) for x in operands)
    size = sum(math.prod(shape) for shape in lapack.result_shapes(routine, shapes))
    packed = Tensor._make(Op.LINALG, operands[0].dtype, (*operands[0].shape[:-2], size), operands, routine)
    return _unpack(packed, routine, shapes)


def _unpack(packed: Tensor, routine: str, shapes: tuple[tuple[int, int], ...]) -> list[Tensor]:
    """The results of `routine` (on operands of `shapes`) in a LINALG node's last axis, as views."""
    batch, results, start = packed.shape[:-1], [], 0
    for shape in lapack.result_shapes(routine, shapes):
        size = math.prod(shape)
        results.append(packed[..., start:start + size].reshape(*batch, *shape))
        start += size
    return results


def cholesky(x: Tensor, /, *, upper: bool = False) -> Tensor:
    """The Cholesky factor of each symmetric positive-definite matrix: the lower-triangular L with x = L @ L.mT,
    or with `upper` U = L.mT (x = U.mT @ U). Only the lower triangle of x is read, as NumPy and PyTorch do;
    LinAlgError for a matrix that is not positive definite."""
    wide, dtype = _matrices(x, "cholesky", square=True)
    (factor,) = _call("cholesky", wide)
    return factor.cast(dtype).mT if upper else factor.cast(dtype)


def det(x: Tensor, /) -> Tensor:
    """The determinant of each square matrix (through its LU factorization)."""
    wide, dtype = _matrices(x, "det", square=True)
    return _call("det", wide)[0].cast(dtype)


def slogdet(x: Tensor, /) -> SlogdetResult:
    """The sign and the natural log of the absolute value of each square matrix's determinant, which stays finite
    where the determinant would overflow; (0, -inf) for a singular matrix."""
    wide, dtype = _matrices(x, "slogdet", square=True)
    sign, logabsdet = _call("slogdet", wide)
    return SlogdetResult(sign.cast(dtype), logabsdet.cast(dtype))


def inv(x: Tensor, /) -> Tensor:
    """The inverse of each square matrix; LinAlgError for a singular one."""
    wide, dtype = _matrices(x, "inv", square=True)
    return _call("inv", wide)[0].cast(dtype)


def solve(x1: Tensor, x2: Tensor, /) -> Tensor:
    """The solution of `x1 @ x = x2` for each square matrix of x1: x2 is a stack of M x K matrices whose stack
    shape broadcasts with x1's, or one vector of length M (only when it is 1-d, as the standard says), solved
    with each matrix of x1. The dtype is the two's promotion; LinAlgError for a singular matrix."""
    a, dtype = _matrices(x1, "solve", square=True)
    m = x1.shape[-1]
    vector = x2.ndim == 1
    if not vector and x2.ndim < 2 or x2.shape[-1 if vector else -2] != m:
        raise ShapeError(f"solve: x2 must be a vector of length {m} or a stack of matrices of {m} rows, to go with "
                         f"x1 of shape {x1.shape}; got shape {x2.shape}")
    b, dtype2 = _matrices(x2.reshape(m, 1) if vector else x2, "solve")
    wide = promote(a.dtype, b.dtype)
    batch = x1.shape[:-2] if vector else broadcast_shapes(x1.shape[:-2], x2.shape[:-2], op="solve")
    a = a.cast(wide).broadcast_to(*batch, m, m)
    b = b.cast(wide).broadcast_to(*batch, m, b.shape[-1])
    (solution,) = _call("solve", a, b)
    return (solution[..., 0] if vector else solution).cast(promote(dtype, dtype2))


def eigh(x: Tensor, /) -> EighResult:
    """The eigenvalues (ascending) and orthonormal eigenvectors (columns) of each symmetric matrix, from its lower
    triangle, as NumPy's and PyTorch's (an eigenvector's sign is LAPACK's choice)."""
    wide, dtype = _matrices(x, "eigh", square=True)
    values, vectors = _call("eigh", wide)
    return EighResult(values.cast(dtype), vectors.cast(dtype))


def eigvalsh(x: Tensor, /) -> Tensor:
    """The eigenvalues of each symmetric matrix, ascending (from its lower triangle)."""
    wide, dtype = _matrices(x, "eigvalsh", square=True)
    return _call("eigvalsh", wide)[0].cast(dtype)


def qr(x: Tensor, /, *, mode: Literal["reduced", "complete"] = "reduced") -> QRResult:
    """The QR factorization of each M x N matrix: Q with orthonormal columns and upper-triangular R, x = Q @ R;
    'reduced' gives Q M x K and R K x N (K = min(M, N)), 'complete' Q M x M and R M x N."""
    if mode not in ("reduced", "complete"):
        raise ValueError(f"qr: mode must be 'reduced' or 'complete', got {mode!r}")
    wide, dtype = _matrices(x, "qr")
    q, r = _call(f"qr_{mode}", wide)
    return QRResult(q.cast(dtype), r.cast(dtype))


def svd(x: Tensor, /, *, full_matrices: bool = True) -> SVDResult:
    """The singular value decomposition of each M x N matrix: x = U @ (S[..., None] * Vh), the singular values S
    (K = min(M, N) of them) in descending order; U is M x M and Vh N x N with `full_matrices`, else M x K and
    K x N. The singular vectors' signs are LAPACK's choice."""
    wide, dtype = _matrices(x, "svd")
    u, s, vh = _call("svd_full" if full_matrices else "svd_reduced", wide)
    return SVDResult(u.cast(dtype), s.cast(dtype), vh.cast(dtype))


def svdvals(x: Tensor, /) -> Tensor:
    """The singular values of each matrix, in descending order (without the singular vectors)."""
    wide, dtype = _matrices(x, "svdvals")
    return _call("svdvals", wide)[0].cast(dtype)


def _cutoff(s: Tensor, rtol: float | Tensor | None, x: Tensor, dtype: DType) -> Tensor:
    """The threshold at or below which a singular value counts as zero: `rtol` (a number, or one per matrix of
    x's stack; by default max(M, N) times the machine epsilon of `dtype`, the float dtype of x's results) times
    the largest singular value."""
    if rtol is None:
        rtol = max(x.shape[-2:]) * finfo(dtype).eps
    elif isinstance(rtol, Tensor):
        rtol = rtol.cast(s.dtype)[..., None]
    return s.max(-1, keepdims=True) * rtol


def pinv(x: Tensor, /, *, rtol: float | Tensor | None = None) -> Tensor:
    """The Moore-Penrose pseudo-inverse of each M x N matrix (N x M), from its SVD: the singular values at or below
    `rtol` times the largest (by default max(M, N) * eps of the result's dtype) count as zero."""
    wide, dtype = _matrices(x, "pinv")
    m, n = x.shape[-2:]
    if min(m, n) == 0:
        return zeros((*x.shape[:-2], n, m), dtype=dtype, device=x.device)
    u, s, vh = svd(wide, full_matrices=False)
    large = s > _cutoff(s, rtol, x, dtype)
    # 1 / s only where it is used: the gradient of a reciprocal of 0 would be NaN, even where not selected
    inverse = where(large, 1 / where(large, s, 1), 0)
    return (vh.mT @ (inverse[..., None] * u.mT)).cast(dtype)


def matrix_rank(x: Tensor, /, *, rtol: float | Tensor | None = None) -> Tensor:
    """The rank of each M x N matrix (int64): how many singular values exceed `rtol` times the largest (by default
    max(M, N) * eps of x's float dtype, float32 for integers)."""
    wide, dtype = _matrices(x, "matrix_rank")
    if min(x.shape[-2:]) == 0:
        return zeros(x.shape[:-2], dtype=int64, device=x.device)
    s = svdvals(wide)
    return (s > _cutoff(s, rtol, x, dtype)).sum(-1)


def matrix_power(x: Tensor, n: int, /) -> Tensor:
    """Each square matrix to the integer power `n`: by repeated squaring (matmuls), the identity for n = 0, the
    inverse's power for n < 0 (a float result: the default float for integers, as `inv`)."""
    n = operator.index(n)
    if x.ndim < 2 or x.shape[-1] != x.shape[-2]:
        raise ShapeError(f"matrix_power: needs a stack of square matrices, got shape {x.shape}")
    if n == 0:
        return eye(x.shape[-1], dtype=x.dtype, device=x.device).broadcast_to(x.shape)
    base = inv(x) if n < 0 else x
    n, power = abs(n), None
    while True:
        if n & 1:
            power = base if power is None else power @ base
        n >>= 1
        if not n:
            return power
        base = base @ base


def multi_dot(arrays: Sequence[Tensor], /) -> Tensor:
    """NumPy's multi_dot: the product of the matrices in order, multiplied in the order that costs the fewest
    multiplications (NumPy's choice, by the same dynamic programme); a first 1-d tensor is a row, a last one a
    column, and their axes are left out of the result."""
    ts = list(arrays)
    if len(ts) < 2:
        raise ValueError(f"multi_dot: needs at least 2 tensors, got {len(ts)}")
    first_vector, last_vector = ts[0].ndim == 1, ts[-1].ndim == 1
    ts[0] = ts[0].reshape(1, -1) if first_vector else ts[0]
    ts[-1] = ts[-1].reshape(-1, 1) if last_vector else ts[-1]
    if any(t.ndim != 2 for t in ts):
        raise ShapeError(f"multi_dot: needs matrices (1-d first and last), got shapes {[t.shape for t in ts]}")
    sizes = [ts[0].shape[0]] + [t.shape[1] for t in ts]
    n = len(ts)
    cost = [[0] * n for _ in range(n)]
    split = [[0] * n for _ in range(n)]
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            cost[i][j], split[i][j] = min((cost[i][k] + cost[k + 1][j] + sizes[i] * sizes[k + 1] * sizes[j + 1], k)
                                          for k in range(i, j))

    def product(i: int, j: int) -> Tensor:
        return ts[i] if i == j else product(i, split[i][j]) @ product(split[i][j] + 1, j)

    out = product(0, n - 1)
    if first_vector and last_vector:
        return out.reshape(())
    return out.reshape(-1) if first_vector or last_vector else out


def cond(x: Tensor, p: Any = None) -> Tensor:
    """NumPy's condition number of each matrix: the ratio of its largest to its smallest singular value (p None or
    2; -2 the inverse), or `matrix_norm(x, p) * matrix_norm(inv(x), p)` for the other norms ('fro', 'nuc', 1, -1,
    inf, -inf), of square matrices. A singular matrix's is inf, as NumPy's (its inverse would raise)."""
    if p is None or p in (2, -2):
        s = svdvals(x)
        large, small = s[..., 0], s[..., -1]
        return large / small if p != -2 else small / large
    wide, dtype = _matrices(x, "cond", square=True)
    singular = det(wide) == 0
    safe = where(singular[..., None, None], _eye_like(wide), wide)
    ratio = matrix_norm(safe, ord=p) * matrix_norm(inv(safe), ord=p)
    return where(singular, math.inf, ratio).cast(dtype)


class LstsqResult(NamedTuple):
    """`lstsq`'s results, in NumPy's order."""

    x: Tensor
    residuals: Tensor
    rank: Tensor
    s: Tensor


def lstsq(a: Tensor, b: Tensor, rcond: float | None = None) -> LstsqResult:
    """NumPy's least-squares solution of `a @ x = b` for an M x N matrix a: x = pinv(a) @ b, the singular values at
    or below `rcond` times the largest counting as zero (by default max(M, N) * eps, NumPy's); the sums of the
    squared residuals per column of b (shape (K,), (1,) for a vector b), empty unless the rank is N < M (where
    M > N, the rank is read to know: a realize, a JitError inside `lt.jit`); the rank (int32, NumPy's); a's
    singular values."""
    if a.ndim != 2 or b.ndim not in (1, 2) or b.shape[0] != a.shape[0]:
        raise ShapeError(f"lstsq: needs an M x N matrix and M or M x K right-hand sides, got shapes {a.shape} and "
                         f"{b.shape}")
    m, n = a.shape
    x = pinv(a, rtol=rcond) @ b
    rank = matrix_rank(a, rtol=rcond).cast(lapack_int)
    residuals = zeros((0,), dtype=x.dtype, device=x.device)
    if m > n > 0 and int(rank.item()) == n:
        difference = b - a @ x
        residuals = (difference * difference).sum(0).reshape(-1)
    return LstsqResult(x, residuals, rank, svdvals(a))


def tensorinv(a: Tensor, ind: int = 2) -> Tensor:
    """NumPy's tensorinv: the inverse of `a` as a linear map from its last axes to its first `ind` ones, of
    shape a.shape[ind:] + a.shape[:ind] (their sizes' products must agree)."""
    if ind <= 0:
        raise ValueError(f"tensorinv: ind must be positive, got {ind}")
    rows, cols = a.shape[:ind], a.shape[ind:]
    if math.prod(rows) != math.prod(cols):
        raise ShapeError(f"tensorinv: the first {ind} axes {rows} and the others {cols} hold different sizes")
    return inv(a.reshape(math.prod(rows), -1)).reshape(*cols, *rows)


def tensorsolve(a: Tensor, b: Tensor, axes: Sequence[int] | None = None) -> Tensor:
    """NumPy's tensorsolve: x with `tensordot(a, x, x.ndim) == b`, x of shape a.shape[b.ndim:]; `axes` first moves
    those axes of a to the end."""
    if axes is not None:
        order = [k for k in range(a.ndim) if k not in {normalize_axis(i, a.ndim, "tensorsolve") for i in axes}]
        a = a.permute(order + [normalize_axis(i, a.ndim, "tensorsolve") for i in axes])
    x_shape = a.shape[b.ndim:]
    rows, cols = math.prod(a.shape[:b.ndim]), math.prod(x_shape)
    if rows != cols:
        raise ShapeError(f"tensorsolve: a of shape {a.shape} is not square as a map onto b of shape {b.shape}")
    return solve(a.reshape(rows, cols), b.reshape(rows)).reshape(x_shape)


# ---- the gradients of the library calls ----------------------------------------------------------------


def vjp(routine: str, srcs: Sequence[Tensor], out: Tensor, g: Tensor) -> list[Tensor | None]:
    """The gradients of a LINALG node's sources (autograd's rule for `Op.LINALG`), from the gradient `g` of its
    results `out`, both laid out as the node holds them. The rules are PyTorch's (its `FunctionsManual.cpp`), for
    real matrices; a result the loss does not use has a gradient of zeros, which adds nothing (see `_quotient`)."""
    if any(s.numel() == 0 for s in srcs):
        return [zeros(s.shape, dtype=s.dtype, device=s.device) for s in srcs]
    shapes = tuple((s.shape[-2], s.shape[-1]) for s in srcs)
    return _VJP[routine](srcs, _unpack(out, routine, shapes), _unpack(g, routine, shapes))


def _quotient(num: Tensor, den: Tensor) -> Tensor:
    """num / den, and 0 where num is 0: PyTorch leaves out the terms of a result the loss does not use (a zero
    gradient here), which would divide by 0 where eigenvalues or singular values repeat or vanish."""
    return where(num == 0, 0, num / where(num == 0, 1, den))


def _eye_like(x: Tensor) -> Tensor:
    return eye(x.shape[-1], dtype=x.dtype, device=x.device)


def _inv_vjp(srcs: Sequence[Tensor], out: list[Tensor], g: list[Tensor]) -> list[Tensor | None]:
    (xi,), (gxi,) = out, g
    return [-(xi.mT @ gxi @ xi.mT)]


def _solve_vjp(srcs: Sequence[Tensor], out: list[Tensor], g: list[Tensor]) -> list[Tensor | None]:
    a, _ = srcs
    (x,), (gx,) = out, g
    gb = solve(a.mT, gx)
    return [-(gb @ x.mT), gb]


def _det_vjp(srcs: Sequence[Tensor], out: list[Tensor], g: list[Tensor]) -> list[Tensor | None]:
    (d,), (gd,) = out, g
    return [(gd * d)[..., None, None] * inv(srcs[0]).mT]


def _slogdet_vjp(srcs: Sequence[Tensor], out: list[Tensor], g: list[Tensor]) -> list[Tensor | None]:
    _, glogabsdet = g  # the sign is piecewise constant
    return [glogabsdet[..., None, None] * inv(srcs[0]).mT]


def _cholesky_vjp(srcs: Sequence[Tensor], out: list[Tensor], g: list[Tensor]) -> list[Tensor | None]:
    # gA = L^-T phi(L^T gL) L^-1, phi the lower triangle with its diagonal halved; then symmetrized
    (lower,), (gl,) = out, g
    p = lower.mT @ gl
    phi = tril(p) - 0.5 * p * _eye_like(p)
    ga = solve(lower.mT, solve(lower.mT, phi).mT).mT
    return [0.5 * (ga + ga.mT)]


def _eigh_vjp(srcs: Sequence[Tensor], out: list[Tensor], g: list[Tensor]) -> list[Tensor | None]:
    # gA = V (diag(gw) + skew(V^T gV) / E) V^T, E[i, j] = w[j] - w[i] off the diagonal
    (w, v), (gw, gv) = out, g
    vtgv = v.mT @ gv
    skew = 0.5 * (vtgv - vtgv.mT)  # its diagonal is 0: gw's place
    inner = _quotient(skew, w[..., None, :] - w[..., :, None]) + _eye_like(vtgv) * gw[..., None, :]
    return [v @ inner @ v.mT]


def _eigvalsh_vjp(srcs: Sequence[Tensor], out: list[Tensor], g: list[Tensor]) -> list[Tensor | None]:
    v = eigh(srcs[0]).eigenvectors
    return [(v * g[0][..., None, :]) @ v.mT]


def _qr_vjp(srcs: Sequence[Tensor], out: list[Tensor], g: list[Tensor]) -> list[Tensor | None]:
    (q, r), (gq, gr) = out, g
    m, n = srcs[0].shape[-2:]
    if q.shape[-1] > n:  # complete Q's extra columns are not functions of x
        raise NotImplementedError(f"qr: no gradient with mode='complete' for matrices of more rows than columns, "
                                  f"as PyTorch's; got {m}x{n} matrices (mode='reduced' has one)")
    if m < n:  # x = [X | Y], X = Q R1 square, R2 = Q^T Y: Y's gradient is Q gR2, and R2's adds Y gR2^T to gQ's
        y, gr2 = srcs[0][..., m:], gr[..., m:]
        return [concat([_qr_tall_vjp(q, r[..., :m], gq + y @ gr2.mT, gr[..., :m]), q @ gr2], -1)]
    return [_qr_tall_vjp(q, r, gq, gr)]


def _qr_tall_vjp(q: Tensor, r: Tensor, gq: Tensor, gr: Tensor) -> Tensor:
    """The gradient of x = Q R with at least as many rows as columns (R square):
    gA = (gQ + Q copyltu(gR R^T - Q^T gQ)) R^-T, copyltu(X) = triu(X) mirrored below, its diagonal once."""
    upper = triu(gr @ r.mT - q.mT @ gq)
    b = gq + q @ (upper + upper.mT - upper * _eye_like(upper))
    return solve(r, b.mT).mT


def _svd_vjp(srcs: Sequence[Tensor], out: list[Tensor], g: list[Tensor]) -> list[Tensor | None]:
    # PyTorch's svd_backward on the reduced SVD (the full one's extra singular vectors are not determined by A)
    (u, s, vh), (gu, gs, gvh) = out, g
    m, n = srcs[0].shape[-2:]
    k = s.shape[-1]
    u, gu, vh, gvh = u[..., :k], gu[..., :k], vh[..., :k, :], gvh[..., :k, :]
    utgu, vtgv = u.mT @ gu, vh @ gvh.mT
    utgu, vtgv = utgu - utgu.mT, vtgv - vtgv.mT
    s2 = s * s  # the numerator's diagonal is 0: gs's place
    ga = _quotient(utgu * s[..., None, :] + s[..., :, None] * vtgv, s2[..., None, :] - s2[..., :, None])
    ga = ga + _eye_like(ga) * gs[..., None, :]
    if m > n:  # [U gA + (I - U U^T) gU S^-1] Vh
        gus = _quotient(gu, s[..., None, :])
        return [(u @ ga + gus - u @ (u.mT @ gus)) @ vh]
    if m < n:  # U [gA Vh + S^-1 gVh (I - V Vh)]
        sgvh = _quotient(gvh, s[..., :, None])
        return [u @ (ga @ vh + sgvh - (sgvh @ vh.mT) @ vh)]
    return [u @ ga @ vh]


def _svdvals_vjp(srcs: Sequence[Tensor], out: list[Tensor], g: list[Tensor]) -> list[Tensor | None]:
    u, _, vh = svd(srcs[0], full_matrices=False)
    return [(u * g[0][..., None, :]) @ vh]


_VJP: dict[str, Callable[[Sequence[Tensor], list[Tensor], list[Tensor]], list[Tensor | None]]] = {
    "cholesky": _cholesky_vjp, "det": _det_vjp, "slogdet": _slogdet_vjp, "inv": _inv_vjp, "solve": _solve_vjp,
    "eigh": _eigh_vjp, "eigvalsh": _eigvalsh_vjp, "qr_reduced": _qr_vjp, "qr_complete": _qr_vjp,
    "svd_reduced": _svd_vjp, "svd_full": _svd_vjp, "svdvals": _svdvals_vjp,
}


__all__ = ["LinAlgError", "LstsqResult", "cholesky", "cond", "cross", "det", "diagonal", "eigh", "eigvalsh", "inv",
           "lstsq", "matmul", "matrix_norm", "matrix_power", "matrix_rank", "matrix_transpose", "multi_dot", "norm", "outer",
           "pinv", "qr", "slogdet", "solve", "svd", "svdvals", "tensordot", "tensorinv", "tensorsolve", "trace", "vecdot",
           "vector_norm"]
