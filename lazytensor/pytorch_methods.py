"""PyTorch's spellings of Tensor methods that NumPy and the array API spell otherwise or lack: `t()`, `bmm`,
`movedim`, `tril`/`triu` with `diagonal=`, `diagonal(offset, dim1, dim2)`, `diag`, `masked_fill`, `type`, `cuda`,
the in-place methods (`add_`, `mul_`, `zero_`, `copy_`, `clamp_`, ...) and `.data`.

In place means what it means everywhere in lazytensor: the tensor is rebound to the new value (see
`Tensor._inplace`); nothing writes a buffer another tensor reads. `.data` is the tensor's value without its autograd
history, and in-place methods applied to it rebind the tensor it came from (`p.data.add_(-lr * g)` updates `p`, as
in PyTorch), as does assigning to it (`p.data = new`).
"""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from . import dtypes
from .errors import DTypeError, ShapeError
from .movement import normalize_axis

if TYPE_CHECKING:
    from .autograd import GradFn, RemovableHandle
    from .random import Generator
    from .tensor import Tensor


class Extrema(NamedTuple):
    """`aminmax`'s result."""
    min: Tensor
    max: Tensor


class Histogram(NamedTuple):
    """`Tensor.histogram`'s result."""
    hist: Tensor
    bin_edges: Tensor


class PyTorchOps:  # every Tensor is one (and only tensors): `isinstance(x, PyTorchOps)` asks for a tensor of any subclass
    """The methods of the module docstring, mixed into Tensor."""

    def t(self: Tensor) -> Tensor:
        """The transpose of a tensor of at most 2 dimensions (PyTorch's `t()`; `.mT` for batches)."""
        if self.ndim > 2:
            raise ShapeError(f"t: expects a tensor of at most 2 dimensions, got shape {self.shape} (use .mT or "
                             "transpose(dim0, dim1))")
        return self.permute(*reversed(range(self.ndim)))

    def bmm(self: Tensor, other: Tensor) -> Tensor:
        """Batched matrix product of two 3-d tensors, (b, n, m) @ (b, m, p), without broadcasting (PyTorch's)."""
        if self.ndim != 3 or other.ndim != 3 or self.shape[0] != other.shape[0] or self.shape[2] != other.shape[1]:
            raise ShapeError(f"bmm: expects (b, n, m) and (b, m, p) tensors, got shapes {self.shape} and {other.shape}")
        return self @ other

    def movedim(self: Tensor, source: int | tuple[int, ...], destination: int | tuple[int, ...]) -> Tensor:
        """PyTorch's name of `moveaxis`."""
        return self.moveaxis(source, destination)

    def tril(self: Tensor, diagonal: int = 0) -> Tensor:
        """The lower triangle of each matrix in the last two axes, from `diagonal` down; zeros above."""
        from .creation import tril
        return tril(self, k=diagonal)

    def triu(self: Tensor, diagonal: int = 0) -> Tensor:
        """The upper triangle of each matrix in the last two axes, from `diagonal` up; zeros below."""
        from .creation import triu
        return triu(self, k=diagonal)

    def diagonal(self: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
        """The `offset`-th diagonal of the matrices in axes `dim1` and `dim2`, as the last axis (PyTorch's;
        `lt.linalg.diagonal` takes the last two axes). A view: no data moves."""
        from .linalg import diagonal
        a, b = normalize_axis(dim1, self.ndim, "diagonal"), normalize_axis(dim2, self.ndim, "diagonal")
        if a == b:
            raise ShapeError(f"diagonal: dim1 and dim2 are the same axis ({dim1}, {dim2})")
        return diagonal(self.moveaxis((a, b), (-2, -1)), offset=offset)

    def diag(self: Tensor, diagonal: int = 0, *, k: int | None = None) -> Tensor:
        """A 1-d tensor as the `diagonal`-th diagonal of a square matrix (zeros elsewhere); the `diagonal`-th
        diagonal of a 2-d tensor (PyTorch's and NumPy's `diag`, whose name for `diagonal` is `k`)."""
        diagonal = diagonal if k is None else k
        from .creation import arange
        from .tensor import where
        if self.ndim == 2:
            return self.diagonal(diagonal)
        if self.ndim != 1:
            raise ShapeError(f"diag: expects a 1-d or 2-d tensor, got shape {self.shape}")
        n = self.shape[0] + abs(diagonal)
        index = arange(n, device=self.device)
        on = (index.reshape(1, n) - index.reshape(n, 1)) == diagonal
        if diagonal >= 0:  # row i holds v[i]
            values = self.pad([(0, diagonal)]).reshape(n, 1)
        else:  # column j holds v[j]
            values = self.pad([(0, -diagonal)]).reshape(1, n)
        return where(on, values, 0).cast(self.dtype)

    def masked_fill(self: Tensor, mask: Any, value: Any) -> Tensor:
        """`value` where `mask` holds, this tensor elsewhere (mask broadcast to this tensor's shape)."""
        from .tensor import broadcast_shapes, where
        mask = mask if isinstance(mask, PyTorchOps) else self._like(mask)
        if mask.dtype != dtypes.bool_:
            raise TypeError(f"masked_fill: the mask must be bool, got {mask.dtype.name}")
        if mask.ndim > self.ndim or broadcast_shapes(mask.shape, self.shape, op="masked_fill") != self.shape:
            raise ShapeError(f"masked_fill: a mask of shape {mask.shape} does not broadcast to {self.shape}")
        fill = value.cast(self.dtype) if isinstance(value, PyTorchOps) else value
        if isinstance(fill, PyTorchOps) and fill.ndim:
            raise ShapeError(f"masked_fill: the value must be a scalar or 0-d tensor, got shape {fill.shape}")
        return where(mask, fill, self).cast(self.dtype)

    def repeat_interleave(self: Tensor, repeats: Any, dim: int | None = None, *,
                          output_size: int | None = None) -> Tensor:
        """Each element repeated `repeats` times in a row along `dim` (the flattened tensor where None), or a
        count per element: PyTorch's repeat_interleave, NumPy's `repeat` (`lt.repeat`). With counts, the
        length is their sum, read first unless `output_size` gives it."""
        from .movement import repeat
        out = repeat(self, repeats, dim)
        if output_size is not None and out.shape[0 if dim is None else dim] != output_size:
            raise ShapeError(f"repeat_interleave: output_size={output_size}, but the repeats sum to "
                             f"{out.shape[0 if dim is None else dim]}")
        return out

    def masked_select(self: Tensor, mask: Any) -> Tensor:
        """The entries where `mask` (broadcast with this tensor) holds, as a 1-d tensor (its length depends on
        the data, which is read)."""
        from .tensor import broadcast_shapes
        mask = mask if isinstance(mask, PyTorchOps) else self._like(mask)
        shape = broadcast_shapes(self.shape, mask.shape, op="masked_select")
        return self.broadcast_to(shape)[mask.broadcast_to(shape)]

    def type(self: Tensor, dtype: Any = None) -> Any:
        """This tensor cast to `dtype`; with none, its dtype's name (`'lazytensor.float32'`)."""
        return f"lazytensor.{self.dtype.name}" if dtype is None else self.cast(dtype)

    def unique(self: Tensor, sorted: bool = True, return_inverse: bool = False, return_counts: bool = False,
               dim: int | None = None) -> Any:
        """The distinct values in ascending order (always sorted), and as asked the index of each element's value
        among them (this tensor's shape) and each value's count: PyTorch's `unique` of the flattened tensor."""
        from .sorting import unique
        if dim is not None:
            raise ValueError("unique: dim= is not supported; unique values are over the flattened tensor")
        return unique(self, return_inverse=return_inverse, return_counts=return_counts)

    def cov(self: Tensor, *, correction: int = 1, fweights: Tensor | None = None,
            aweights: Tensor | None = None) -> Tensor:
        """The covariance of the variables in the rows (observations in the columns), PyTorch's `cov`."""
        from .statistics import cov
        return cov(self, ddof=correction, fweights=fweights, aweights=aweights)

    def diagflat(self: Tensor, offset: int = 0) -> Tensor:
        """The flattened tensor as the `offset`-th diagonal of a square matrix."""
        from .creation import diagflat
        return diagflat(self, offset)

    def vdot(self: Tensor, other: Tensor) -> Tensor:
        """The dot product of two 1-d tensors."""
        from .products import vdot
        return vdot(self, other)

    def histogram(self: Tensor, bins: Any = 100, *, range: tuple[float, float] | None = None,
                  weight: Tensor | None = None, density: bool = False) -> Any:
        """(hist, bin_edges) of the flattened tensor, hist in this tensor's dtype: PyTorch's `histogram`
        (`lt.histogram`'s bins)."""
        from .statistics import histogram
        hist, edges = histogram(self, bins, range=range, density=density, weights=weight)
        return Histogram(hist.cast(self.dtype), edges)

    def angle(self: Tensor) -> Tensor:
        """The argument of each (real) element: pi where negative, 0 elsewhere, NaN where NaN (PyTorch's)."""
        from .tensor import where
        x = self if self.dtype.is_float else self.cast(dtypes.get_default_dtype())
        return where(x.isnan(), x, (x < 0).cast(x.dtype) * math.pi)

    def prelu(self: Tensor, weight: Tensor) -> Tensor:
        """`nn.functional.prelu`."""
        from .nn.functional import prelu
        return prelu(self, weight)

    def hardshrink(self: Tensor, lambd: float = 0.5) -> Tensor:
        """`nn.functional.hardshrink`."""
        from .nn.functional import hardshrink
        return hardshrink(self, lambd)

    def byte(self: Tensor) -> Tensor:
        return self.cast(dtypes.uint8)

    def char(self: Tensor) -> Tensor:
        return self.cast(dtypes.int8)

    def short(self: Tensor) -> Tensor:
        return self.cast(dtypes.int16)

    @property
    def is_cuda(self: Tensor) -> bool:
        """Whether this tensor lives on a GPU."""
        return self.device.startswith("cuda")

    @property
    def is_cpu(self: Tensor) -> bool:
        return self.device == "cpu"

    def get_device(self: Tensor) -> int:
        """The GPU's index of a tensor on a GPU, -1 on the CPU (PyTorch's)."""
        return int(self.device.partition(":")[2] or 0) if self.is_cuda else -1

    def is_same_size(self: Tensor, other: Tensor) -> bool:
        return self.shape == other.shape

    def is_nonzero(self: Tensor) -> bool:
        """The truth of a one-element tensor (reads it); an error for any other size."""
        if math.prod(self.shape) != 1:
            raise RuntimeError(f"is_nonzero: needs a tensor of one element, got shape {self.shape}")
        return bool(self.reshape(()).item())

    def cuda(self: Tensor, device: Any = None) -> Tensor:
        """This tensor on a GPU (`cuda`, or `cuda:N` for an int `device`)."""
        return self.to(f"cuda:{device}" if isinstance(device, int) else device or "cuda")

    # ---- shapes, dtypes and new tensors like this one ----------------------------------------------------

    def expand_as(self: Tensor, other: Tensor) -> Tensor:
        """This tensor broadcast to `other`'s shape (a view)."""
        return self.expand(*other.shape)

    def view_as(self: Tensor, other: Tensor) -> Tensor:
        """This tensor reshaped to `other`'s shape."""
        return self.view(*other.shape)

    def reshape_as(self: Tensor, other: Tensor) -> Tensor:
        """This tensor reshaped to `other`'s shape."""
        return self.reshape(other.shape)

    def type_as(self: Tensor, other: Tensor) -> Tensor:
        """This tensor cast to `other`'s dtype."""
        return self.cast(other.dtype)

    def unflatten(self: Tensor, dim: int, sizes: Sequence[int]) -> Tensor:
        """Axis `dim` split into axes of `sizes` (one of them may be -1)."""
        a = normalize_axis(dim, self.ndim, "unflatten")
        return self.reshape(*self.shape[:a], *sizes, *self.shape[a + 1:])

    def unbind(self: Tensor, dim: int = 0) -> tuple[Tensor, ...]:
        """The slices along `dim`, that axis removed (the array API's `unstack`)."""
        from .movement import unstack
        return unstack(self, dim)

    def select(self: Tensor, dim: int, index: int) -> Tensor:
        """The slice at `index` along `dim`, that axis removed (`x.select(1, i)` is `x[:, i]`)."""
        a = normalize_axis(dim, self.ndim, "select")
        if not -self.shape[a] <= index < self.shape[a]:
            raise IndexError(f"select: index {index} is out of range for axis {dim} of size {self.shape[a]}")
        return self[(slice(None),) * a + (index,)]

    def narrow_copy(self: Tensor, dim: int, start: int, length: int) -> Tensor:
        """`narrow`'s slice as a tensor of its own."""
        return self.narrow(dim, start, length).clone()

    def sum_to_size(self: Tensor, *size: Any) -> Tensor:
        """The sum of this tensor down to `size`, a shape it broadcasts from (the reverse of `expand`)."""
        shape = tuple(size[0]) if len(size) == 1 and not isinstance(size[0], int) else tuple(size)
        lead = self.ndim - len(shape)
        if lead < 0 or any(s not in (1, n) for s, n in zip(shape, self.shape[lead:])):
            raise ShapeError(f"sum_to_size: size {shape} is not expandable to the tensor's shape {self.shape}")
        axes = tuple(range(lead)) + tuple(lead + i for i, s in enumerate(shape) if s == 1 and self.shape[lead + i] != 1)
        return self.sum(axes, keepdims=True).reshape(shape) if axes else self

    def is_floating_point(self: Tensor) -> bool:
        """Whether the dtype is a float."""
        return self.dtype.is_float

    def is_complex(self: Tensor) -> bool:
        """Always False: lazytensor has no complex dtypes."""
        return False

    def is_signed(self: Tensor) -> bool:
        """Whether the dtype holds negative numbers (the floats and the signed integers)."""
        return self.dtype.is_float or self.dtype.is_signed

    def is_contiguous(self: Tensor, memory_format: Any = None) -> bool:
        """True: a tensor's values read as row-major whatever view made it (`view`, `reshape` and every op take
        any tensor; where a view's values are laid out is the scheduler's choice, see `contiguous`), so code that
        asks before calling `view` or `contiguous` goes the direct way."""
        return True

    def stride(self: Tensor, dim: int | None = None) -> tuple[int, ...] | int:
        """The row-major strides of this shape, in elements (what `is_contiguous` promises), or one axis's."""
        strides, step = [], 1
        for n in reversed(self.shape):
            strides.append(step)
            step *= max(n, 1)
        strides.reverse()
        return tuple(strides) if dim is None else strides[normalize_axis(dim, self.ndim, "stride")]

    def element_size(self: Tensor) -> int:
        """Bytes per element."""
        return self.dtype.itemsize

    def nelement(self: Tensor) -> int:
        """The number of elements (`numel`)."""
        return self.numel()

    def ndimension(self: Tensor) -> int:
        """The number of axes (`ndim`)."""
        return self.ndim

    def _new(self: Tensor, make: Callable[..., Tensor], size: tuple[Any, ...], dtype: Any, device: Any,
             requires_grad: bool, *args: Any) -> Tensor:
        shape = tuple(size[0]) if len(size) == 1 and not isinstance(size[0], int) else tuple(size)
        return make(shape, *args, dtype=self.dtype if dtype is None else dtype,
                    device=self.device if device is None else device, requires_grad=requires_grad)

    def new_zeros(self: Tensor, *size: Any, dtype: Any = None, device: Any = None,
                  requires_grad: bool = False) -> Tensor:
        """Zeros of `size`, of this tensor's dtype and device unless given."""
        from .creation import zeros
        return self._new(zeros, size, dtype, device, requires_grad)

    def new_ones(self: Tensor, *size: Any, dtype: Any = None, device: Any = None,
                 requires_grad: bool = False) -> Tensor:
        """Ones of `size`, of this tensor's dtype and device unless given."""
        from .creation import ones
        return self._new(ones, size, dtype, device, requires_grad)

    def new_empty(self: Tensor, *size: Any, dtype: Any = None, device: Any = None,
                  requires_grad: bool = False) -> Tensor:
        """An uninitialized tensor of `size`, of this tensor's dtype and device unless given."""
        from .creation import empty
        return self._new(empty, size, dtype, device, requires_grad)

    def new_full(self: Tensor, size: Any, fill_value: Any, *, dtype: Any = None, device: Any = None,
                 requires_grad: bool = False) -> Tensor:
        """`fill_value` in a tensor of `size`, of this tensor's dtype and device unless given."""
        from .creation import full
        return self._new(full, (size,), dtype, device, requires_grad, fill_value)

    def new_tensor(self: Tensor, data: Any, *, dtype: Any = None, device: Any = None,
                   requires_grad: bool = False) -> Tensor:
        """A copy of `data`, of this tensor's dtype and device unless given (PyTorch's `new_tensor`)."""
        from .creation import asarray
        source = data.detach() if isinstance(data, PyTorchOps) else data
        return asarray(source, dtype=self.dtype if dtype is None else dtype,
                       device=self.device if device is None else device, copy=True, requires_grad=requires_grad)

    # ---- elementwise ------------------------------------------------------------------------------------

    def clamp_min(self: Tensor, min: Any) -> Tensor:
        """`clamp(min=min)`."""
        return self.clip(min, None)

    def clamp_max(self: Tensor, max: Any) -> Tensor:
        """`clamp(max=max)`."""
        return self.clip(None, max)

    def lerp(self: Tensor, end: Any, weight: Any) -> Tensor:
        """`self + weight * (end - self)`, computed from `end` where |weight| >= 0.5 as PyTorch does (exact at
        weight 1)."""
        from .tensor import where
        diff = end - self
        if not isinstance(weight, PyTorchOps):
            return self + diff * weight if abs(weight) < 0.5 else end - diff * (1 - weight)
        return where(weight.abs() < 0.5, self + diff * weight, end - diff * (1 - weight))

    def logit(self: Tensor, eps: float | None = None) -> Tensor:
        """log(p / (1 - p)), with p clamped to [eps, 1 - eps] when `eps` is given."""
        p = self._float_operands([], "logit")[0][0]
        p = p if eps is None else p.clip(eps, 1 - eps)
        return (p / (1 - p)).log()

    def bernoulli(self: Tensor, p: float | None = None, *, generator: Generator | None = None) -> Tensor:
        """PyTorch's bernoulli: 1 with probability `p` (each element's own value where p is None), else 0, in
        this tensor's dtype."""
        from .random import rand
        probability = self if p is None else float(p)
        dtype = self.dtype if self.dtype.is_float else None
        return (rand(self.shape, dtype=dtype, device=self.device, generator=generator) < probability).cast(self.dtype)

    def multinomial(self: Tensor, num_samples: int, replacement: bool = False, *,
                    generator: Generator | None = None) -> Tensor:
        """`lt.multinomial(self, num_samples, replacement)`."""
        from .random import multinomial
        return multinomial(self, num_samples, replacement, generator=generator)

    def polygamma(self: Tensor, n: int) -> Tensor:
        """`lt.polygamma(n, self)`: the n-th derivative of digamma (PyTorch's argument order)."""
        from .special import polygamma
        return polygamma(n, self)

    def xlogy(self: Tensor, other: Any) -> Tensor:
        """self * log(other), 0 where self is 0 (and other is not NaN)."""
        from .tensor import where
        (x, y), dtype = self._float_operands([other], "xlogy")  # a Python number weak, as PyTorch's
        return where((x == 0) & ~y.isnan(), 0, x * y.log()).cast(dtype)

    def frac(self: Tensor) -> Tensor:
        """The fractional part, `x - trunc(x)`, with the sign of x (of a float tensor, as PyTorch's)."""
        if not self.dtype.is_float:
            raise DTypeError(f"frac: expects a float tensor, got {self.dtype.name}")
        return self - self.trunc()

    def sgn(self: Tensor) -> Tensor:
        """`sign` (PyTorch's name that extends to complex numbers, which lazytensor has not)."""
        return self.sign()

    def fix(self: Tensor) -> Tensor:
        """`trunc`."""
        return self.trunc()

    def multiply(self: Tensor, other: Any) -> Tensor:
        """`self * other`."""
        return self * other

    def subtract(self: Tensor, other: Any, *, alpha: Any = 1) -> Tensor:
        """`self - alpha * other`."""
        return self - (other if alpha == 1 else other * alpha)

    def divide(self: Tensor, other: Any, *, rounding_mode: str | None = None) -> Tensor:
        """`self / other`; rounded toward zero with `rounding_mode="trunc"`, down with `"floor"` (integers stay
        integers then), as PyTorch's `div`."""
        if rounding_mode is None:
            return self / other
        if rounding_mode == "floor":
            return self // other
        if rounding_mode == "trunc":
            out = (self / other).trunc()
            kind = dtypes.promote(self.dtype, other.dtype) if isinstance(other, PyTorchOps) else self.dtype
            return out if out.dtype.is_float and kind.is_float else out.cast(kind)
        raise ValueError(f"divide: rounding_mode must be None, 'trunc' or 'floor', got {rounding_mode!r}")

    def true_divide(self: Tensor, other: Any) -> Tensor:
        """`self / other` (a float result)."""
        return self / other

    # ---- products -------------------------------------------------------------------------------------

    def mm(self: Tensor, mat2: Tensor) -> Tensor:
        """The product of two matrices, (n, m) @ (m, p), without broadcasting."""
        if self.ndim != 2 or mat2.ndim != 2 or self.shape[1] != mat2.shape[0]:
            raise ShapeError(f"mm: expects (n, m) and (m, p) matrices, got shapes {self.shape} and {mat2.shape}")
        return self @ mat2

    def mv(self: Tensor, vec: Tensor) -> Tensor:
        """The product of a matrix and a vector, (n, m) @ (m,)."""
        if self.ndim != 2 or vec.ndim != 1 or self.shape[1] != vec.shape[0]:
            raise ShapeError(f"mv: expects an (n, m) matrix and an (m,) vector, got shapes {self.shape} and "
                             f"{vec.shape}")
        return self @ vec

    def ger(self: Tensor, vec2: Tensor) -> Tensor:
        """`outer`."""
        return self.outer(vec2)

    def addmm(self: Tensor, mat1: Tensor, mat2: Tensor, *, beta: Any = 1, alpha: Any = 1) -> Tensor:
        """`beta * self + alpha * (mat1 @ mat2)` (self broadcast to the product's shape; ignored at beta 0)."""
        return _scaled_sum(self, mat1.mm(mat2), beta, alpha)

    def addmv(self: Tensor, mat: Tensor, vec: Tensor, *, beta: Any = 1, alpha: Any = 1) -> Tensor:
        """`beta * self + alpha * (mat @ vec)`."""
        return _scaled_sum(self, mat.mv(vec), beta, alpha)

    def addr(self: Tensor, vec1: Tensor, vec2: Tensor, *, beta: Any = 1, alpha: Any = 1) -> Tensor:
        """`beta * self + alpha * outer(vec1, vec2)`."""
        if vec1.ndim != 1 or vec2.ndim != 1:
            raise ShapeError(f"addr: expects two vectors, got shapes {vec1.shape} and {vec2.shape}")
        return _scaled_sum(self, vec1.outer(vec2), beta, alpha)

    def baddbmm(self: Tensor, batch1: Tensor, batch2: Tensor, *, beta: Any = 1, alpha: Any = 1) -> Tensor:
        """`beta * self + alpha * (batch1 @ batch2)` for (b, n, m) and (b, m, p) batches."""
        return _scaled_sum(self, batch1.bmm(batch2), beta, alpha)

    def addbmm(self: Tensor, batch1: Tensor, batch2: Tensor, *, beta: Any = 1, alpha: Any = 1) -> Tensor:
        """`beta * self + alpha * sum_b(batch1[b] @ batch2[b])`."""
        return _scaled_sum(self, batch1.bmm(batch2).sum(0), beta, alpha)

    def norm(self: Tensor, p: Any = "fro", dim: Any = None, keepdim: bool = False, dtype: Any = None) -> Tensor:
        """The `p`-norm over `dim` (all axes where None): "fro" is the 2-norm of the entries, "nuc" the
        nuclear norm of the matrices in two axes `dim`."""
        from .linalg import matrix_norm, vector_norm
        x = self if dtype is None else self.cast(dtype)
        x = x if x.dtype.is_float else x.cast(dtypes.get_default_dtype())
        if p == "nuc":
            axes = (-2, -1) if dim is None else tuple(dim)
            out = matrix_norm(x.moveaxis(axes, (-2, -1)), ord="nuc", keepdims=keepdim)
            return out.moveaxis((-2, -1), axes) if keepdim else out
        axis = tuple(dim) if isinstance(dim, (list, tuple)) else dim
        return vector_norm(x, axis=axis, keepdims=keepdim, ord=2 if p in ("fro", None) else p)

    def dist(self: Tensor, other: Tensor, p: float = 2) -> Tensor:
        """The `p`-norm of `self - other`."""
        return (self - other).norm(p)

    def renorm(self: Tensor, p: float, dim: int, maxnorm: float) -> Tensor:
        """Each slice along `dim` whose `p`-norm exceeds `maxnorm` scaled down to norm `maxnorm` (PyTorch's,
        with its 1e-7 guard in the divisor)."""
        from .tensor import where
        a = normalize_axis(dim, self.ndim, "renorm")
        norms = self.norm(p, tuple(i for i in range(self.ndim) if i != a), keepdim=True)
        return self * where(norms > maxnorm, maxnorm / (norms + 1e-7), 1.0).cast(self.dtype)

    def diag_embed(self: Tensor, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:
        """Matrices with the last axis's vectors on their `offset`-th diagonal, in the new axes `dim1`, `dim2`."""
        from .creation import arange
        from .tensor import where
        ndim = self.ndim + 1
        a, b = normalize_axis(dim1, ndim, "diag_embed"), normalize_axis(dim2, ndim, "diag_embed")
        if a == b:
            raise ShapeError(f"diag_embed: dim1 and dim2 are the same axis ({dim1}, {dim2})")
        n = self.shape[-1] + abs(offset)
        index = arange(n, device=self.device)
        on = (index.reshape(1, n) - index.reshape(n, 1)) == offset
        if offset >= 0:  # row i holds v[i]
            values = self.pad([(0, 0)] * (self.ndim - 1) + [(0, offset)]).unsqueeze(-1)
        else:  # column j holds v[j]
            values = self.pad([(0, 0)] * (self.ndim - 1) + [(0, -offset)]).unsqueeze(-2)
        out = where(on, values, 0).cast(self.dtype)
        return out.moveaxis((-2, -1), (a, b))

    # ---- reductions, windows, indexing ------------------------------------------------------------------

    def aminmax(self: Tensor, *, dim: int | None = None, keepdim: bool = False) -> Extrema:
        """The minimum and the maximum (over `dim`, or all), as a (min, max) pair."""
        return Extrema(self.amin(dim, keepdim), self.amax(dim, keepdim))

    def take_along_dim(self: Tensor, indices: Tensor, dim: int | None = None) -> Tensor:
        """`take_along_axis` along `dim`, the indices broadcast against this tensor (both flattened where
        `dim` is None)."""
        from .tensor import broadcast_shapes
        if dim is None:
            return self.reshape(-1).take_along_axis(indices.reshape(-1), axis=0)
        a = normalize_axis(dim, self.ndim, "take_along_dim")
        if indices.ndim != self.ndim:
            raise ShapeError(f"take_along_dim: indices of shape {indices.shape} for a tensor of shape {self.shape}")
        shape = broadcast_shapes(self.shape[:a] + (1,) + self.shape[a + 1:],
                                 indices.shape[:a] + (1,) + indices.shape[a + 1:], op="take_along_dim")
        source = self.broadcast_to(shape[:a] + (self.shape[a],) + shape[a + 1:])
        return source.take_along_axis(indices.broadcast_to(shape[:a] + (indices.shape[a],) + shape[a + 1:]), axis=a)

    def msort(self: Tensor) -> Tensor:
        """The values sorted along the first axis."""
        return self.sort(0).values

    def unfold(self: Tensor, dimension: int, size: int, step: int) -> Tensor:
        """The windows of `size` along `dimension`, `step` apart, as a new last axis (that axis holds the
        windows' count)."""
        from .creation import arange
        a = normalize_axis(dimension, self.ndim, "unfold") if self.ndim else 0
        length = self.shape[a] if self.ndim else 1
        if size > length or step <= 0 or size < 0:
            raise ShapeError(f"unfold: size {size} and step {step} do not fit axis {dimension} of size {length}")
        count = (length - size) // step + 1
        index = (arange(count, device=self.device).reshape(count, 1) * step
                 + arange(size, device=self.device).reshape(1, size)).reshape(-1)
        x = self if self.ndim else self.reshape(1)
        windows = x.index_select(a, index).unflatten(a, (count, size))
        return windows.moveaxis(a + 1, -1) if self.ndim else windows.reshape(size)

    def index_fill(self: Tensor, dim: int, index: Any, value: Any) -> Tensor:
        """`value` in the slices along `dim` that `index` (a 0-d or 1-d integer tensor) names."""
        from .creation import arange
        from .tensor import where
        index = index if isinstance(index, PyTorchOps) else self._like(index)
        a = normalize_axis(dim, self.ndim, "index_fill") if self.ndim else 0
        n = self.shape[a] if self.ndim else 1
        hit = (arange(n, device=self.device).reshape(n, 1) == index.reshape(1, -1) % max(n, 1)).any(1)
        mask = hit.reshape((n,) + (1,) * (self.ndim - a - 1)) if self.ndim else hit.reshape(())
        fill = value.cast(self.dtype) if isinstance(value, PyTorchOps) else value
        return where(mask, fill, self).cast(self.dtype)

    def index_copy(self: Tensor, dim: int, index: Any, source: Tensor) -> Tensor:
        """This tensor with the slices along `dim` that `index` names replaced by `source`'s slices."""
        index = index if isinstance(index, PyTorchOps) else self._like(index)
        a = normalize_axis(dim, self.ndim, "index_copy")
        shape = (1,) * a + (index.numel(),) + (1,) * (self.ndim - a - 1)
        return self.scatter(a, index.reshape(shape).broadcast_to(source.shape), source.cast(self.dtype))

    def adjoint(self: Tensor) -> Tensor:
        """The conjugate transpose of the matrices in the last two axes (PyTorch's; a view): `.mT`, as
        lazytensor's dtypes are real."""
        return self.mT

    def addcmul(self: Tensor, tensor1: Any, tensor2: Any, *, value: Any = 1) -> Tensor:
        """`self + value * tensor1 * tensor2` (PyTorch's, broadcast and promoted; an optimizer's update)."""
        return self + value * tensor1 * tensor2

    def addcdiv(self: Tensor, tensor1: Any, tensor2: Any, *, value: Any = 1) -> Tensor:
        """`self + value * tensor1 / tensor2` (PyTorch's, a true division: integer tensor1 and tensor2 are an
        error, as PyTorch's)."""
        if all(isinstance(t, PyTorchOps) and not t.dtype.is_float for t in (tensor1, tensor2)):
            raise DTypeError(f"addcdiv: integer division of {tensor1.dtype.name} by {tensor2.dtype.name} is not "
                             "supported (use true division of float tensors)")
        return self + value * tensor1 / tensor2

    def masked_scatter(self: Tensor, mask: Any, source: Any) -> Tensor:
        """This tensor with `source`'s elements, in order, where `mask` (broadcast to this shape) is true (PyTorch's):
        the k-th true element takes source's k-th (source read as 1-d; a realize raises IndexError where the mask
        is true more often than source has elements)."""
        from .tensor import where
        mask = (mask if isinstance(mask, PyTorchOps) else self._like(mask)).broadcast_to(self.shape).reshape(-1)
        if mask.dtype != dtypes.bool_:
            raise DTypeError(f"masked_scatter: the mask must be bool, got {mask.dtype.name}")
        flat = (source if isinstance(source, PyTorchOps) else self._like(source)).reshape(-1).cast(self.dtype)
        n = flat.shape[0]
        if n == 0:
            return self._checked(mask.any(), "masked_scatter: the mask is true where source has no elements")
        ranks = mask.cast(dtypes.int64).cumsum(0)
        taken = flat._gather(0, (ranks - 1).clip(0, n - 1))
        out = where(mask, taken, self.reshape(-1)).reshape(self.shape)
        return out._checked(ranks[-1:] > n, f"masked_scatter: the mask is true more often than source's {n} "
                                            "elements") if mask.shape[0] else out

    def select_scatter(self: Tensor, src: Any, dim: int, index: int) -> Tensor:
        """This tensor with `src` in place of `self.select(dim, index)` (PyTorch's; out of place)."""
        a = normalize_axis(dim, self.ndim, "select_scatter")
        return self._placed((slice(None),) * a + (index,), src)

    def slice_scatter(self: Tensor, src: Any, dim: int = 0, start: int | None = None, end: int | None = None,
                      step: int = 1) -> Tensor:
        """This tensor with `src` in place of its slice `start:end:step` along `dim` (PyTorch's; out of place)."""
        a = normalize_axis(dim, self.ndim, "slice_scatter")
        return self._placed((slice(None),) * a + (slice(start, end, step),), src)

    def diagonal_scatter(self: Tensor, src: Any, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
        """This tensor with `src` in place of `self.diagonal(offset, dim1, dim2)` (PyTorch's; out of place)."""
        from .creation import arange
        a, b = normalize_axis(dim1, self.ndim, "diagonal_scatter"), normalize_axis(dim2, self.ndim, "diagonal_scatter")
        if a == b:
            raise ShapeError(f"diagonal_scatter: dim1 and dim2 are the same axis ({dim1}, {dim2})")
        moved = self.moveaxis((a, b), (-2, -1))
        length = self.diagonal(offset, a, b).shape[-1]
        rows, cols = (arange(length, device=self.device) + max(k, 0) for k in (-offset, offset))
        return moved._placed((Ellipsis, rows, cols), src).moveaxis((-2, -1), (a, b))

    def _placed(self: Tensor, index: tuple[Any, ...], src: Any) -> Tensor:
        """A copy of this tensor with `src` written at `index`, whose shape it must have (the `*_scatter` ops)."""
        out = self.copy()
        target = out[index].shape
        shape = src.shape if isinstance(src, PyTorchOps) else self._like(src).shape
        if shape != target:
            raise ShapeError(f"expected src of shape {target}, got {shape}")
        out[index] = src
        return out

    # ---- linear algebra (PyTorch's method names for `lt.linalg`) ------------------------------------------

    def inverse(self: Tensor) -> Tensor:
        """`linalg.inv`."""
        from .linalg import inv
        return inv(self)

    def det(self: Tensor) -> Tensor:
        """`linalg.det`."""
        from .linalg import det
        return det(self)

    def logdet(self: Tensor) -> Tensor:
        """log(det) of the matrices in the last two axes: NaN for a negative determinant, -inf for a zero one."""
        from .linalg import slogdet
        from .tensor import where
        sign, logabs = slogdet(self)
        return where(sign < 0, float("nan"), logabs)

    def slogdet(self: Tensor) -> Any:
        """`linalg.slogdet`: the sign and the log of the absolute value of the determinant."""
        from .linalg import slogdet
        return slogdet(self)

    def pinverse(self: Tensor, rcond: float = 1e-15) -> Tensor:
        """`linalg.pinv` with singular values up to `rcond` times the largest dropped."""
        from .linalg import pinv
        return pinv(self, rtol=rcond)

    def matrix_power(self: Tensor, n: int) -> Tensor:
        """`linalg.matrix_power`."""
        from .linalg import matrix_power
        return matrix_power(self, n)

    def cholesky(self: Tensor, upper: bool = False) -> Tensor:
        """`linalg.cholesky`."""
        from .linalg import cholesky
        return cholesky(self, upper=upper)

    def qr(self: Tensor, some: bool = True) -> Any:
        """`linalg.qr`, reduced (or complete where `some` is False)."""
        from .linalg import qr
        return qr(self, mode="reduced" if some else "complete")

    def svd(self: Tensor, some: bool = True, compute_uv: bool = True) -> Any:
        """(U, S, V) with `self = U diag(S) V^T` (V, not `linalg.svd`'s Vh); reduced where `some`. Without
        `compute_uv`, U and V are zeros, as PyTorch's."""
        from .creation import zeros_like
        from .linalg import SVDResult, svd
        u, s, vh = svd(self, full_matrices=not some)
        v = vh.mT
        return SVDResult(u, s, v) if compute_uv else SVDResult(zeros_like(u), s, zeros_like(v))

    def cross(self: Tensor, other: Tensor, dim: int | None = None) -> Tensor:
        """The cross product along `dim` (where None, the first axis of size 3, as PyTorch's `torch.cross`)."""
        from .linalg import cross
        from .tensor import broadcast_shapes
        if dim is None:
            shape = broadcast_shapes(self.shape, other.shape, op="cross")
            dim = next((i for i, n in enumerate(shape) if n == 3), -1)
        return cross(self, other, axis=dim)

    # ---- in place -----------------------------------------------------------------------------------------

    def add_(self: Tensor, other: Any, *, alpha: Any = 1) -> Tensor:
        return self._inplace(lambda a, b: a + (b if alpha == 1 else b * alpha), other, "add_")

    def sub_(self: Tensor, other: Any, *, alpha: Any = 1) -> Tensor:
        return self._inplace(lambda a, b: a - (b if alpha == 1 else b * alpha), other, "sub_")

    def mul_(self: Tensor, other: Any) -> Tensor:
        return self._inplace(lambda a, b: a * b, other, "mul_")

    def div_(self: Tensor, other: Any) -> Tensor:
        return self._inplace(lambda a, b: a / b, other, "div_")

    def pow_(self: Tensor, other: Any) -> Tensor:
        return self._inplace(lambda a, b: a ** b, other, "pow_")

    def neg_(self: Tensor) -> Tensor:
        return self._inplace(lambda a, _: -a, None, "neg_")

    def addcmul_(self: Tensor, t1: Any, t2: Any, *, value: Any = 1) -> Tensor:
        return self._inplace(lambda a, _: a + t1 * t2 * value, None, "addcmul_")

    def addcdiv_(self: Tensor, t1: Any, t2: Any, *, value: Any = 1) -> Tensor:
        return self._inplace(lambda a, _: a + t1 / t2 * value, None, "addcdiv_")

    def clamp_(self: Tensor, min: Any = None, max: Any = None) -> Tensor:
        return self._inplace(lambda a, _: a.clip(min, max), None, "clamp_")

    clip_ = clamp_

    def fill_(self: Tensor, value: Any) -> Tensor:
        from .creation import full_like
        return self._inplace(lambda a, v: v.cast(a.dtype).broadcast_to(a.shape) if isinstance(v, PyTorchOps)
                             else full_like(a, v), value, "fill_")

    def zero_(self: Tensor) -> Tensor:
        return self.fill_(0)

    def fill_diagonal_(self: Tensor, fill_value: Any, wrap: bool = False) -> Tensor:
        """`fill_value` on the main diagonal (the elements whose indices are all equal) of a 2-d tensor or
        one whose sides are all equal; with `wrap`, a tall matrix's diagonal restarts every `columns + 1` rows, as
        PyTorch's and NumPy's. `fill_value` may also be an array (NumPy's `fill_diagonal`): its values, flattened,
        go along the diagonal in turn, repeated where they run out."""
        from .creation import arange, asarray
        from .tensor import where
        if self.ndim < 2 or self.ndim > 2 and len(set(self.shape)) != 1:
            raise ShapeError(f"fill_diagonal_: needs a 2-d tensor or one whose sides are all equal, got shape "
                             f"{self.shape}")
        # NumPy's definition: the diagonal is every `step`-th element of the flattened tensor, `step` the sum of
        # its strides; without `wrap` a tall matrix's stops after its last column
        cols = self.shape[1]
        step = sum(cols ** axis for axis in range(self.ndim))
        end = self.size if wrap or self.ndim > 2 else min(self.size, cols * cols)
        flat = arange(self.size, device=self.device).reshape(self.shape)
        on = (flat % step == 0) & (flat < end)
        if not isinstance(fill_value, (bool, int, float, complex)):
            values = asarray(fill_value, device=self.device).reshape(-1)
            if values.size == 0:
                return self
            fill_value = values.take(flat // step % values.size)
        return self._inplace(lambda a, _: where(on, fill_value, a).cast(a.dtype), None, "fill_diagonal_")

    def copy_(self: Tensor, src: Any) -> Tensor:
        """Take `src`'s values (broadcast to this tensor's shape, cast to its dtype, moved to its device)."""
        def copied(a: Tensor, s: Any) -> Tensor:
            s = s if isinstance(s, PyTorchOps) else a._like(s)
            return s.to(a.device).cast(a.dtype).broadcast_to(a.shape)
        return self._inplace(copied, src, "copy_")

    def squeeze_(self: Tensor, dim: Any = None) -> Tensor:
        """`squeeze` in place: this tensor rebound to `self.squeeze(dim)` (PyTorch's `squeeze_`)."""
        return self._reshaped_in_place(self.squeeze(dim), "squeeze_")

    def unsqueeze_(self: Tensor, dim: int) -> Tensor:
        """`unsqueeze` in place (PyTorch's `unsqueeze_`)."""
        return self._reshaped_in_place(self.unsqueeze(dim), "unsqueeze_")

    def t_(self: Tensor) -> Tensor:
        """`t` in place (PyTorch's `t_`)."""
        return self._reshaped_in_place(self.t(), "t_")

    def transpose_(self: Tensor, dim0: int, dim1: int) -> Tensor:
        """`transpose(dim0, dim1)` in place (PyTorch's `transpose_`, `swapaxes_`, `swapdims_`)."""
        return self._reshaped_in_place(self.swapaxes(dim0, dim1), "transpose_")

    swapaxes_ = swapdims_ = transpose_

    def _reshaped_in_place(self: Tensor, result: Tensor, op: str) -> Tensor:
        """This tensor rebound to `result`, a view of it of another shape (PyTorch's in-place view ops change
        the tensor's shape; the leaf rule is `_inplace`'s). Under `no_grad` a non-leaf is cut off from its
        record, which has the old shape."""
        from .autograd import is_grad_enabled
        self._check_modifiable(op)
        if self._ctx is not None and not is_grad_enabled():
            self.detach_()
        self._rebind(result)
        return self

    def detach_(self: Tensor) -> Tensor:
        """Cut this tensor off from autograd, in place: it becomes a leaf that requires no grad."""
        self._ctx, self.requires_grad = None, False
        return self

    # ---- random fills, in place (PyTorch's; the stream is `lt.manual_seed`'s) ---------------------------

    def uniform_(self: Tensor, from_: float = 0.0, to: float = 1.0, *, generator: Generator | None = None) -> Tensor:
        """Values drawn uniformly from [from_, to)."""
        from .random import uniform
        return self._drawn(lambda a: uniform(from_, to, a.shape, dtype=a.dtype, device=a.device, generator=generator),
                           "uniform_")

    def normal_(self: Tensor, mean: float = 0.0, std: float = 1.0, *, generator: Generator | None = None) -> Tensor:
        """Values drawn from the normal distribution of `mean` and `std`."""
        from .random import normal
        return self._drawn(lambda a: normal(mean, std, a.shape, dtype=a.dtype, device=a.device, generator=generator),
                           "normal_")

    def log_normal_(self: Tensor, mean: float = 1.0, std: float = 2.0, *,
                    generator: Generator | None = None) -> Tensor:
        """`exp` of values drawn from the normal distribution of `mean` and `std`."""
        from .random import normal
        return self._drawn(lambda a: normal(mean, std, a.shape, dtype=a.dtype, device=a.device,
                                            generator=generator).exp(), "log_normal_")

    def exponential_(self: Tensor, lambd: float = 1.0, *, generator: Generator | None = None) -> Tensor:
        """Values drawn from the exponential distribution of rate `lambd`: `-log(1 - u) / lambd`."""
        return self._drawn(lambda a: (1 - _unit(a, generator)).log() * (-1 / lambd), "exponential_")

    def cauchy_(self: Tensor, median: float = 0.0, sigma: float = 1.0, *,
                generator: Generator | None = None) -> Tensor:
        """Values drawn from the Cauchy distribution: `median + sigma * tan(pi * (u - 1/2))`."""
        return self._drawn(lambda a: ((_unit(a, generator) - 0.5) * math.pi).tan() * sigma + median, "cauchy_")

    def geometric_(self: Tensor, p: float, *, generator: Generator | None = None) -> Tensor:
        """The number of Bernoulli(`p`) trials up to the first success (1, 2, ...): `ceil(log(u) / log(1 - p))`
        of u in (0, 1]."""
        if not 0 < p < 1:
            raise ValueError(f"geometric_: p must be in (0, 1), got {p}")
        return self._drawn(lambda a: ((1 - _unit(a, generator)).log() / math.log1p(-p)).ceil().clip(1, None),
                           "geometric_")

    def bernoulli_(self: Tensor, p: Any = 0.5, *, generator: Generator | None = None) -> Tensor:
        """1 with probability `p` (a float, or a tensor of probabilities broadcast to this shape), else 0."""
        return self._drawn(lambda a: _unit(a, generator) < (p.broadcast_to(a.shape) if isinstance(p, PyTorchOps)
                                                            else p), "bernoulli_")

    def random_(self: Tensor, from_: int = 0, to: int | None = None, *, generator: Generator | None = None) -> Tensor:
        """Integers drawn uniformly from [from_, to); `random_(n)` from [0, n). Without a bound, from 0 to the
        largest integer the dtype holds exactly (2**24 for float32, 2**53 for float64, the dtype's largest
        integer, capped at 2**63 - 2), as PyTorch's."""
        from .random import randint
        if to is None and from_ != 0:
            from_, to = 0, from_
        if to is None:
            dt = self.dtype
            to = (1 << dtypes.finfo(dt).digits) + 1 if dt.is_float else \
                2 if dt == dtypes.bool_ else min(dtypes.iinfo(dt).max, (1 << 63) - 2) + 1

        def drawn(a: Tensor) -> Tensor:
            k = randint(from_, to, a.shape, dtype=dtypes.int64, device=a.device, generator=generator)
            return k != 0 if a.dtype == dtypes.bool_ else k
        return self._drawn(drawn, "random_")

    def _drawn(self: Tensor, draw: Callable[[Tensor], Tensor], op: str) -> Tensor:
        """This tensor rebound to `draw(self)` in its dtype, by `_inplace`'s rules."""
        return self._inplace(lambda a, _: draw(a), None, op)

    # ---- autograd hooks ----------------------------------------------------------------------------------

    def register_hook(self: Tensor, hook: Callable[[Tensor], Tensor | None]) -> RemovableHandle:
        """Run `hook(gradient)` each time the gradient with respect to this tensor is computed; what it returns,
        if not None, replaces the gradient (passed on, and kept in `.grad` of a leaf). A handle whose
        `remove()` unregisters it. PyTorch's."""
        from .autograd import register_hook
        return register_hook(self, hook)

    def retain_grad(self: Tensor) -> None:
        """Keep this non-leaf tensor's gradient in `.grad` when `backward` computes it (a leaf's is kept)."""
        from .autograd import retain_grad
        retain_grad(self)

    @property
    def grad_fn(self: Tensor) -> GradFn | None:
        """The autograd record that made this tensor (PyTorch's `grad_fn`: `MulBackward`, ...), None for a
        leaf or a tensor made with no grad recorded."""
        from .autograd import GradFn
        return None if self._ctx is None else GradFn(self._ctx)

    @property
    def is_leaf(self: Tensor) -> bool:
        """Whether no recorded op made this tensor: it requires no grad, or it was made to require grad."""
        return self._ctx is None

    # ---- .data ----------------------------------------------------------------------------------------------

    @property
    def data(self: Tensor) -> Tensor:
        """This tensor's value without autograd history; in-place methods on it rebind this tensor."""
        from .data_view import DataView  # at call time: it subclasses Tensor, whose module imports this one
        return DataView(self)

    @data.setter
    def data(self: Tensor, value: Tensor) -> None:
        if value.shape != self.shape:
            raise ShapeError(f"data: cannot set a tensor of shape {self.shape} to one of shape {value.shape}")
        self.node = value.node


# PyTorch's in-place twins of out-of-place methods: `x.exp_()` rebinds x to `x.exp()` (see the module's doc)
IN_PLACE_OF = ("abs", "exp", "expm1", "log", "log1p", "log2", "sqrt", "rsqrt", "square", "sin", "cos", "tan", "tanh",
               "sigmoid", "relu", "floor", "ceil", "round", "trunc", "frac", "sign", "reciprocal", "clamp_min",
               "clamp_max", "masked_fill", "masked_scatter", "scatter", "scatter_add", "scatter_reduce", "index_add",
               "index_fill", "index_copy", "index_put", "put", "addcmul", "addcdiv", "lerp", "fmod", "remainder",
               "nan_to_num", "tril", "triu", "logical_not", "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not", "hypot",
               "atan2", "copysign", "erf", "exp2", "logit", "xlogy", "cumsum", "cumprod", "lgamma", "digamma",
               "polygamma", "erfinv", "erfc", "i0", "gcd", "lcm", "acos", "acosh", "asin", "asinh", "atan", "atanh",
               "arccos", "arccosh", "arcsin", "arcsinh", "arctan", "arctanh", "arctan2", "sinh", "cosh", "log10",
               "deg2rad", "rad2deg", "sinc", "fix", "ldexp", "heaviside", "nextafter", "negative", "subtract",
               "multiply", "divide", "true_divide", "floor_divide", "absolute", "sgn", "logical_and", "logical_or",
               "logical_xor", "bitwise_left_shift", "bitwise_right_shift", "addmm", "addmv", "addbmm", "baddbmm",
               "addr", "renorm", "eq", "ne", "lt", "le", "gt", "ge", "greater", "greater_equal", "less",
               "less_equal", "not_equal")


def _unit(like: Tensor, generator: Generator | None) -> Tensor:
    """Uniform values in [0, 1) of `like`'s shape and device: float64 for a float64 tensor, else float32, since a
    16-bit float's steps of 2**-11 near 1 would cut the tails of the laws drawn from u (randn's rule)."""
    from .random import rand
    return rand(like.shape, dtype=dtypes.float64 if like.dtype == dtypes.float64 else dtypes.float32,
                device=like.device, generator=generator)


def _in_place(name: str) -> Callable[..., Tensor]:
    def method(self: Tensor, *args: Any, **kwargs: Any) -> Tensor:
        return self._inplace(lambda a, _: getattr(a, name)(*args, **kwargs), None, f"{name}_")
    method.__name__ = method.__qualname__ = f"{name}_"
    method.__doc__ = f"`{name}` in place: this tensor rebound to `self.{name}(...)` (PyTorch's `{name}_`)."
    return method


# PyTorch's methods that are a lazytensor function of the same semantics with the tensor first (NumPy's
# functions); PyTorch's keyword spellings are read as NumPy's (`KEYWORDS`)
METHOD_OF = {name: name for name in ("fmod", "fmax", "fmin", "ldexp", "heaviside", "deg2rad", "rad2deg", "sinc",
                                     "logaddexp2", "float_power", "isneginf", "isposinf", "nansum", "nanmean",
                                     "nanquantile", "quantile", "rot90", "fliplr", "flipud", "hsplit", "vsplit",
                                     "dsplit", "trace", "kron", "inner", "corrcoef", "bincount", "lgamma",
                                     "digamma", "erfinv", "erfc", "i0", "gcd", "lcm", "frexp", "histc")}
METHOD_OF["tensor_split"] = "array_split"
KEYWORDS = {"dim": "axis", "keepdim": "keepdims", "dims": "axes", "interpolation": "method"}


def _method_of(function: str, name: str) -> Callable[..., Any]:
    def method(self: Tensor, *args: Any, **kwargs: Any) -> Any:
        import lazytensor
        return getattr(lazytensor, function)(self, *args, **{KEYWORDS.get(k, k): v for k, v in kwargs.items()})
    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"PyTorch's `{name}`: `lt.{function}(self, ...)`, with `dim=`/`keepdim=` read as `axis=`/`keepdims=`."
    return method


def add_pytorch_methods(cls: type) -> None:
    """Give `cls` (Tensor) the methods of `METHOD_OF` and the in-place twin of each method of `IN_PLACE_OF` it
    has, where it has none of that name yet."""
    for name, function in METHOD_OF.items():
        if not hasattr(cls, name):
            setattr(cls, name, _method_of(function, name))
    for name in IN_PLACE_OF:
        if hasattr(cls, name) and not hasattr(cls, f"{name}_"):
            setattr(cls, f"{name}_", _in_place(name))


def _scaled_sum(input: Tensor, product: Tensor, beta: Any, alpha: Any) -> Tensor:
    """`beta * input + alpha * product`, input broadcast to the product's shape; at beta 0 input is not read
    (its NaNs do not propagate), as PyTorch's addmm family."""
    from .tensor import broadcast_shapes
    if broadcast_shapes(input.shape, product.shape, op="addmm") != product.shape:
        raise ShapeError(f"an input of shape {input.shape} does not broadcast to the product's {product.shape}")
    scaled = product if alpha == 1 else product * alpha
    if beta == 0:
        return scaled
    return scaled + (input if beta == 1 else input * beta)
