"""Contractions: matmul, tensordot, dot, vecdot, outer.

A contraction is a broadcast product followed by a sum, so it fuses like any
other reduction: `(a[..., :, :, None] * b[..., None, :, :]).sum(-2)` is one
kernel, and casts or transposes of the operands cost no extra kernel.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from . import recipe
from .dtypes import bool_, promote
from .errors import DeviceError, DTypeError, ShapeError
from .helpers import prod
from .kernels.ir import ReduceOp
from .movement import normalize_axis

if TYPE_CHECKING:
    from .tensor import Tensor


def _common(a: Tensor, b: Tensor, op: str) -> tuple[Tensor, Tensor]:
    if a.device != b.device:
        raise DeviceError(f"{op}: tensors are on different devices: {a.device} and {b.device}")
    dtype = promote(a.dtype, b.dtype)
    if dtype == bool_:
        raise DTypeError(f"{op}: not supported for bool tensors")
    return a.cast(dtype), b.cast(dtype)


def _matmul(flags: tuple[tuple[int, ...]], scalars: tuple, a: Tensor, b: Tensor) -> tuple[Tensor]:
    """The matrix product of `a` and `b` (checked, of one dtype) over the broadcast `batch` of `flags`, as
    `recipe.apply_differentiable` takes it: a broadcast product summed over k."""
    batch, = flags
    a2 = a.reshape(1, *a.shape) if a.ndim == 1 else a
    b2 = b.reshape(*b.shape, 1) if b.ndim == 1 else b
    n, k, m = a2.shape[-2], a2.shape[-1], b2.shape[-1]
    lhs = a2.reshape(*a2.shape, 1).broadcast_to(*batch, n, k, m)
    rhs = b2.reshape(*b2.shape[:-2], 1, k, m).broadcast_to(*batch, n, k, m)
    out = (lhs * rhs)._reduce(ReduceOp.SUM, -2, False, "matmul")
    if a.ndim == 1:
        out = out.squeeze(-2)
    if b.ndim == 1:
        out = out.squeeze(-1)
    return (out,)


class ContractionOps:  # every Tensor is one (and only tensors): `isinstance(x, ContractionOps)` asks for a tensor of any subclass
    """Mixed into Tensor."""

    __slots__ = ()

    def matmul(self: Tensor, other: Tensor) -> Tensor:
        """Matrix product with NumPy's rules: batch axes broadcast, 1-d operands are vectors."""
        from .tensor import Tensor, broadcast_shapes
        if not isinstance(other, Tensor):
            other = self._like(other)
        if self.ndim == 0 or other.ndim == 0:
            raise ShapeError(f"matmul: operands must have at least one dimension, got shapes {self.shape} "
                             f"and {other.shape}")
        a, b = _common(self, other, "matmul")
        a_shape = (1, *a.shape) if a.ndim == 1 else a.shape
        b_shape = (*b.shape, 1) if b.ndim == 1 else b.shape
        if a_shape[-1] != b_shape[-2]:
            raise ShapeError(f"matmul: inner dimensions do not match: {self.shape} @ {other.shape} "
                             f"({a_shape[-1]} != {b_shape[-2]})")
        try:
            batch = broadcast_shapes(a_shape[:-2], b_shape[:-2], op="matmul")
        except ShapeError:  # name the operands the user passed, not their batch parts
            raise ShapeError(f"matmul: batch dimensions do not broadcast: {self.shape} @ {other.shape}") from None
        # a training step makes a dozen: one autograd record each, the graphs rebuilt (see `recipe`)
        return recipe.apply_differentiable(_matmul, (batch,), (), (a, b))

    __matmul__ = matmul

    def __rmatmul__(self: Tensor, other: Any) -> Tensor:
        return self._like(other).matmul(self)

    def tensordot(self: Tensor, other: Tensor, axes: int | Sequence[Sequence[int]] = 2) -> Tensor:
        """Sum of products over `axes`: the last N of self with the first N of other, or two lists."""
        a, b = _common(self, other, "tensordot")
        if isinstance(axes, int):
            if axes < 0 or axes > min(a.ndim, b.ndim):
                raise ShapeError(f"tensordot: cannot contract {axes} axes of shapes {a.shape} and {b.shape}")
            ax_a, ax_b = list(range(a.ndim - axes, a.ndim)), list(range(axes))
        else:
            ax_a, ax_b = ([x] if isinstance(x, int) else list(x) for x in axes)
            ax_a = [normalize_axis(x, a.ndim, "tensordot") for x in ax_a]
            ax_b = [normalize_axis(x, b.ndim, "tensordot") for x in ax_b]
        if len(ax_a) != len(ax_b) or any(a.shape[i] != b.shape[j] for i, j in zip(ax_a, ax_b)):
            raise ShapeError(f"tensordot: axes {ax_a} of shape {a.shape} do not match axes {ax_b} of shape {b.shape}")
        free_a = [i for i in range(a.ndim) if i not in ax_a]
        free_b = [i for i in range(b.ndim) if i not in ax_b]
        # every size spelled out: a -1 beside a size-0 axis (contracted or free) has no single answer
        m, n, k = (prod(x.shape[i] for i in axes) for x, axes in ((a, free_a), (b, free_b), (a, ax_a)))
        lhs = a.permute(free_a + ax_a).reshape(m, k)
        rhs = b.permute(ax_b + free_b).reshape(k, n)
        return lhs.matmul(rhs).reshape(*(a.shape[i] for i in free_a), *(b.shape[i] for i in free_b))

    def dot(self: Tensor, other: Any) -> Tensor:
        """NumPy's `dot`: the inner product of two 1-d tensors (PyTorch's `dot`), the matrix product of 2-d ones,
        a product with a 0-d one, else the sum over the last axis of `self` and the second-to-last of `other`
        (the last where it is 1-d): `dot(a, b)[i, j, k, m] = sum(a[i, j, :] * b[k, :, m])`."""
        other = other if isinstance(other, ContractionOps) else self._like(other)
        if self.ndim == 0 or other.ndim == 0:
            return self * other
        if self.ndim == 1 and other.ndim == 1 and self.shape != other.shape:
            raise ShapeError(f"dot: sizes differ: {self.shape[0]} and {other.shape[0]}")
        if self.ndim <= 2 and other.ndim <= 2:
            return self.matmul(other)
        return self.tensordot(other, ([-1], [-1 if other.ndim == 1 else -2]))

    def vecdot(self: Tensor, other: Tensor, axis: int = -1) -> Tensor:
        """Dot products along `axis`, broadcasting the other axes (array API). The vectors themselves must have
        one length, as in NumPy and the standard: a length-1 axis is not broadcast to the other's length."""
        a, b = _common(self, other, "vecdot")
        from .tensor import broadcast_shapes
        shape = broadcast_shapes(a.shape, b.shape, op="vecdot")
        ax = normalize_axis(axis, len(shape), "vecdot")
        lengths = [x.shape[ax - len(shape)] if x.ndim >= len(shape) - ax else 1 for x in (a, b)]
        if lengths[0] != lengths[1]:
            raise ShapeError(f"vecdot: the vectors along axis {axis} differ in length: shapes {a.shape} and {b.shape}")
        return (a * b)._reduce(ReduceOp.SUM, ax, False, "vecdot")

    def outer(self: Tensor, other: Tensor) -> Tensor:
        """`outer(a, b)[i, j] = a[i] * b[j]` over the flattened inputs."""
        return self.reshape(-1, 1) * other.reshape(1, -1)


def einsum(subscripts: str, *operands: Tensor) -> Tensor:
    """NumPy's and PyTorch's einsum: `'ij,jk->ik'`, implicit outputs (`'ij,jk'`: the letters used once, in
    order), `...` for leading axes that broadcast, and a letter repeated within one operand for its diagonal.

    Each operand becomes a view over every letter (its repeated letters' diagonal taken, its axes permuted,
    the letters it lacks broadcast), and the operands are multiplied and summed pairwise, left to right,
    summing out each letter as soon as no operand after needs it: so a pair is a sum over a product whose
    operands each ignore the other's free letters, which the scheduler hands to the contraction template
    (`'bij,bjk->bik'` is one batched matmul kernel)."""
    from .tensor import Tensor
    if not operands:
        raise ValueError("einsum: needs at least one operand")
    operands = tuple(t if isinstance(t, Tensor) else _as_tensor(t) for t in operands)
    spec = subscripts.replace(" ", "")
    inputs, arrow, output = spec.partition("->")
    terms = inputs.split(",")
    if len(terms) != len(operands):
        raise ValueError(f"einsum: {len(terms)} operand subscripts in {subscripts!r} for {len(operands)} operands")
    ellipsis_rank = max((t.ndim - len(term.replace("...", "")) for term, t in zip(terms, operands) if "..." in term),
                        default=0)
    dots = "".join(chr(0x3B1 + i) for i in range(ellipsis_rank))  # letters of their own for the axes of `...`
    letters = []
    for term, t in zip(terms, operands):
        names = term.replace("...", dots[ellipsis_rank - (t.ndim - len(term.replace("...", ""))):]
                             if "..." in term else "")
        if len(names) != t.ndim or not all(c.isalpha() for c in names):
            raise ValueError(f"einsum: subscripts {term!r} do not fit an operand of shape {t.shape}")
        letters.append(names)
    if arrow:
        out = output.replace("...", dots)
    else:
        counts = Counter("".join(letters))
        out = dots + "".join(sorted(c for c in counts if counts[c] == 1 and c not in dots))
    sizes: dict[str, int] = {}
    for names, t in zip(letters, operands):
        for c, n in zip(names, t.shape):
            if sizes.setdefault(c, n) != n and n != 1 and sizes[c] != 1:
                raise ShapeError(f"einsum: letter {c!r} stands for sizes {sizes[c]} and {n}")
            sizes[c] = max(sizes[c], n)
    if len(set(out)) != len(out) or any(c not in sizes for c in out):
        raise ValueError(f"einsum: the output {output!r} repeats a letter or names one no operand has")
    summed = "".join(c for c in sizes if c not in out)
    # The product's last axis is the one its kernel's innermost loop runs along: the output's last letter where an
    # operand holds it last, as matmul's (b read along its rows in `'bij,bjk->bik'`), else the summed letters
    # (`'ij,ij->i'` reads both operands along j). Products too small for the template run as that loop nest: 8x8
    # ones, j last, took 4.5 times matmul's time.
    last_read = bool(out) and any(names.endswith(out[-1]) for names in letters)
    everything = out[:-1] + summed + out[-1] if last_read else out + summed
    views = [_over(t, names, everything) for t, names in zip(operands, letters)]
    result, needed_by = views[0], [set(n) for n in letters]
    for k in range(1, len(views)):
        result = result * views[k]
        result = _sum_unneeded(result, everything, set(out).union(*needed_by[k + 1:]))
    return _sum_unneeded(result, everything, set(out)).reshape(tuple(sizes[c] for c in out))


def _as_tensor(x: Any) -> Tensor:
    from .creation import asarray
    return asarray(x)


def _over(t: Tensor, names: str, everything: str) -> Tensor:
    """`t` (its axes named by `names`) as a view whose axes are the letters of `everything`, in order: the
    diagonal of a repeated letter, size 1 for the letters it lacks (the products broadcast them)."""
    while len(set(names)) < len(names):  # a repeated letter: the diagonal of its first two axes
        c = next(c for c in names if names.count(c) > 1)
        i, j = names.index(c), names.index(c, names.index(c) + 1)
        order = [a for a in range(t.ndim) if a not in (i, j)] + [i, j]
        from .linalg import diagonal
        t = diagonal(t.permute(order))
        names = "".join(names[a] for a in order[:-2]) + c
    order = sorted(range(len(names)), key=lambda a: everything.index(names[a]))
    t = t.permute(order)
    names = "".join(names[a] for a in order)
    return t.reshape(tuple(t.shape[names.index(c)] if c in names else 1 for c in everything))


def _sum_unneeded(t: Tensor, everything: str, needed: set[str]) -> Tensor:
    """`t` summed (keeping the axes, size 1) over the letters nothing later needs."""
    axes = tuple(i for i, c in enumerate(everything) if c not in needed and t.shape[i] != 1)
    return t._reduce(ReduceOp.SUM, axes, True, "einsum") if axes else t
