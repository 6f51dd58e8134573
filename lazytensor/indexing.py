"""Indexing by data: gathers and scatters, NumPy's advanced and boolean indexing, and the ops built on them.

Two graph ops carry all of it. A gather (`Op.GATHER`) reads its source along one axis at positions an int64
tensor gives: the kernel that reads it loads the source there, so the source is never copied. A scatter
(`Op.SCATTER`) writes updates (or adds them) into a copy of its base at such positions: a kernel of its own
whose loop over the updates fuses what computes them. `x[i]` with arrays, `take`, `take_along_axis`,
PyTorch's `gather` and `index_select`, `x[i] = v`, `scatter`, `scatter_add`, `index_add`, `index_put` and the
gradients of each other are index arithmetic around these two.

An index that comes from data is checked where it is computed: outside its axis, the realize that computes
the result raises IndexError naming the op and the user's line (NumPy's functions and `x[i]` count negative
indexes from the end, PyTorch's `gather` and scatter family do not). Whatever the index, no kernel reads or
writes outside a buffer: a gather reads 0 there, a scatter skips it.

Where the data decides the shape (boolean masks, `nonzero`), the count is computed first (a realize), then
the positions; inside `lt.jit` that read is a JitError.

Writing. A tensor's data is never changed in place: `x[i] = v` makes `x` hold a new tensor that equals the
old one but at `i`. So every name bound to that Python object sees the write, as in NumPy and PyTorch, but a
tensor taken from `x` before (a slice `x[1:]`, a view, `x.T`) keeps the values it had, on every device
(in NumPy and PyTorch a view shares the memory and sees the write). The other way does reach: a basic index's
result written in place (`x[0][1] = v`, `row = x[0]; row += 1`) writes into x too (`Tensor._rebind`).
"""
from __future__ import annotations

import functools
import operator
import weakref
from typing import TYPE_CHECKING, Any

import numpy as np

from . import dtypes
from .errors import DTypeError, ShapeError
from .graph import Op
from .helpers import prod
from .kernels.ir import Alu, ReduceOp
from .movement import normalize_axis

if TYPE_CHECKING:
    from .tensor import Tensor


def _tensor_index(x: Tensor, index: Any, name: str) -> Tensor:
    """`index` (a tensor, list or NumPy array of integers) as an integer tensor on x's device."""
    from .creation import asarray
    from .tensor import Tensor
    t = index if isinstance(index, Tensor) else asarray(index, device=x.device)
    if t.device != x.device:
        from .errors import DeviceError
        raise DeviceError(f"{name}: the index is on {t.device}, the tensor on {x.device}")
    if t.numel() == 0 and t.dtype.is_float:  # an empty list is an empty index (NumPy makes it float64)
        t = t.cast(dtypes.int64)
    if t.dtype.is_float or t.dtype == dtypes.bool_:
        raise DTypeError(f"{name}: indices must be integers, got {t.dtype.name}")
    return t


def _position(like: Tensor, value: int) -> Tensor:
    """`value`, a number of the shapes (a length, a stride), as an int64 constant of the kernels that compute
    positions with `like`, not a kernel parameter as a user's scalar is: the index arithmetic folds (a stride
    of 1, a wrap by a known length), which keeps a gather's loop short, and so keeps many of its loads in
    flight."""
    return like._scalar_operand(value, dtypes.int64, "index", like.shape, True)


def _scaled(positions: Tensor, stride: int) -> Tensor:
    """`positions` times `stride` (a constant, see `_position`); the positions themselves for a stride of 1 (the
    last axis's), which is no node to build."""
    return positions if stride == 1 else positions * _position(positions, stride)


def _wrapped(index: Tensor, n: int) -> Tensor:
    """int64 positions of `index` along an axis of `n`, negative ones counted from the end."""
    # its ops made as they are (int64 operands of one shape), not through the operators' and `where`'s promotion
    # and broadcasting: an embedding's lookup builds this on every call (17 -> 12us of its 80us)
    i = index.cast(dtypes.int64)
    negative = i._alu(Alu.CMPLT, dtypes.bool_, _position(i, 0))
    return negative._alu(Alu.WHERE, dtypes.int64, i._alu(Alu.ADD, dtypes.int64, _position(i, n)), i)


def _inside(index: Tensor, n: int) -> bool:
    """Whether `index` holds positions along an axis of `n` by how it is made, not by its data: `arange(k)` for
    k <= n (the iota, `creation.arange`), as in `x[arange(n), y]`, needs neither a wrap of negative positions nor a
    range check."""
    return index.node.op is Op.IOTA and index.numel() <= n


def _outside(index: Tensor, positions: Tensor, n: int) -> Tensor:
    """Where `index` is not a position along an axis of `n`, given its int64 `positions` (`_wrapped`'s, where
    negative indexes count from the end): one unsigned comparison of the positions, in which a negative one is
    more than 2**63. A uint64 index is compared as it is: as int64 its top half is negative, which a wrap brings
    inside."""
    if index.dtype == dtypes.uint64:
        return index >= n
    return positions.cast(dtypes.uint64) >= n


def _range_message(name: str, n: int, axis: int, negative: bool) -> str:
    low = -n if negative else 0
    return f"{name}: an index is outside [{low}, {n}) (axis {axis} of size {n})"


class IndexingOps:  # every Tensor is one (and only tensors): `isinstance(x, IndexingOps)` asks for a tensor of any subclass
    """The Tensor's methods that index by data (mixed into `Tensor`)."""

    # ---- the two primitives ------------------------------------------------------------------------

    def _gather(self: Tensor, axis: int, index: Tensor) -> Tensor:
        """out[i] = self[i with i[axis] = index[i]], of index's shape (int64, of self's rank, no longer than
        self along any other axis); 0 where the index is outside the axis (check it: see `_positions`)."""
        from .tensor import Tensor
        if self.shape[axis] == 0 and index.numel():
            raise IndexError(f"gather: axis {axis} has no elements to index")
        return Tensor._make(Op.GATHER, self.dtype, index.shape, (self, index), axis)

    def _scatter(self: Tensor, axis: int, index: Tensor, updates: Tensor, combine: ReduceOp | None,
                 distinct: bool = False) -> Tensor:
        """self, with each update u at i written (with `combine`: folded) at i with i[axis] = index[i]; index
        (int64) and updates of one shape, of self's rank, no longer than self along any other axis. Updates
        at one place land in row-major order: the last one stays (or the fold is in that order). An index
        outside the axis writes nothing. `distinct` promises that no two updates write one element (as
        where the indexes are ranks), so they may land side by side, on every thread."""
        from .tensor import Tensor
        if index.numel() == 0:
            return self
        if combine is not None and self.dtype.itemsize < 4:
            # folded in 32-bit words, which machines fold atomically: 16-bit floats in float32, rounded once
            # (as every 16-bit computation here), bools and small integers in int32 (wrapping alike)
            wide = dtypes.float32 if self.dtype.is_float else dtypes.int32
            return self.cast(wide)._scatter(axis, index, updates.cast(wide), combine, distinct).cast(self.dtype)
        return Tensor._make(Op.SCATTER, self.dtype, self.shape, (self, index, updates.cast(self.dtype)),
                            (axis, combine, distinct))

    def _positions(self: Tensor, index: Any, axis: int, name: str, negative: bool) -> tuple[Tensor, Tensor]:
        """The int64 positions `index` names along `axis` (negative ones from the end where `negative`), and
        where it is outside the axis (a result that uses them is `_checked` against it)."""
        t = _tensor_index(self, index, name)
        n = self.shape[axis]
        positions = _wrapped(t, n) if negative else t.cast(dtypes.int64)
        return positions, _outside(t, positions, n)

    # ---- NumPy and the array API ------------------------------------------------------------------

    def take(self: Tensor, indices: Any, /, axis: int | None = None) -> Tensor:
        """Elements at `indices` along `axis` (of the flattened tensor where axis is None): the axis is
        replaced by the indices' shape. Negative indices count from the end (NumPy, the array API)."""
        x = self.reshape(-1) if axis is None else self
        return x._take(indices, 0 if axis is None else normalize_axis(axis, self.ndim, "take"), "take")

    def _take(self: Tensor, indices: Any, a: int, name: str) -> Tensor:
        """`take` along axis `a`, its range errors named `name`: a gather of whole slices along the other axes,
        each index read once per slice (`x[i]` of rows reads each row as one run of memory)."""
        pos, bad = self._positions(indices, a, name, True)
        k = pos.numel()
        spread = (*self.shape[:a], k, *self.shape[a + 1:])
        index = pos.reshape(tuple(k if d == a else 1 for d in range(self.ndim))).broadcast_to(spread)
        out = self._gather(a, index).reshape((*self.shape[:a], *pos.shape, *self.shape[a + 1:]))
        return out._checked(bad, _range_message(name, self.shape[a], a, True))

    def take_along_axis(self: Tensor, indices: Any, /, axis: int = -1) -> Tensor:
        """`out[..., j, ...] = x[..., indices[..., j, ...], ...]` along `axis`: indices of x's rank,
        broadcast against x along the other axes (NumPy, the array API; negative indices from the end)."""
        a = normalize_axis(axis, self.ndim, "take_along_axis")
        t = _tensor_index(self, indices, "take_along_axis")
        if t.ndim != self.ndim:
            raise ShapeError(f"take_along_axis: indices of {t.ndim} dimensions for a tensor of {self.ndim}")
        from .tensor import broadcast_shapes
        rest = broadcast_shapes(*(tuple(1 if d == a else n for d, n in enumerate(s)) for s in (self.shape, t.shape)),
                                op="take_along_axis")
        pos, bad = self._positions(t, a, "take_along_axis", True)
        src = self.broadcast_to(tuple(self.shape[a] if d == a else n for d, n in enumerate(rest)))
        index = pos.broadcast_to(tuple(t.shape[a] if d == a else n for d, n in enumerate(rest)))
        return src._gather(a, index)._checked(bad, _range_message("take_along_axis", self.shape[a], a, True))

    # ---- PyTorch ------------------------------------------------------------------------------------

    def gather(self: Tensor, dim: int, index: Any) -> Tensor:
        """PyTorch's gather: `out[i][j][k] = self[index[i][j][k]][j][k]` (dim 0): index of self's rank and no
        longer than self along the other axes; its values in [0, size of dim)."""
        a = normalize_axis(dim, self.ndim, "gather")
        t = _tensor_index(self, index, "gather")
        if t.ndim != self.ndim or any(m > n for d, (m, n) in enumerate(zip(t.shape, self.shape)) if d != a):
            raise ShapeError(f"gather: index of shape {t.shape} does not fit a tensor of shape {self.shape} along "
                             f"the axes other than {a} (same rank, no longer)")
        pos, bad = self._positions(t, a, "gather", False)
        return self._gather(a, pos)._checked(bad, _range_message("gather", self.shape[a], a, False))

    def index_select(self: Tensor, dim: int, index: Any) -> Tensor:
        """PyTorch's index_select: the entries at the 1-d `index` along `dim` (in [0, size of dim))."""
        a = normalize_axis(dim, self.ndim, "index_select")
        t = _tensor_index(self, index, "index_select")
        if t.ndim > 1:
            raise ShapeError(f"index_select: the index must be 1-d, got shape {t.shape}")
        _, bad = self._positions(t, a, "index_select", False)
        return self.take(t.cast(dtypes.int64), axis=a)._checked(
            bad, _range_message("index_select", self.shape[a], a, False))

    def scatter(self: Tensor, dim: int, index: Any, src: Any, reduce: str | None = None) -> Tensor:
        """PyTorch's scatter (out of place): self with `src[i][j][k]` written at `[index[i][j][k]][j][k]`
        (dim 0); `src` a tensor (at least index's shape) or a scalar; `reduce` 'add' or 'multiply'. Where
        several land on one element the last one (row-major) stays; PyTorch leaves that unspecified."""
        combine = {None: None, "add": ReduceOp.SUM, "multiply": ReduceOp.PROD}.get(reduce, "?")
        if combine == "?":
            raise ValueError(f"scatter: reduce must be 'add' or 'multiply', got {reduce!r}")
        return self._scatter_like(dim, index, src, combine, "scatter")

    def scatter_add(self: Tensor, dim: int, index: Any, src: Any) -> Tensor:
        """PyTorch's scatter_add (out of place): self with `src[i][j][k]` added at `[index[i][j][k]][j][k]`."""
        return self._scatter_like(dim, index, src, ReduceOp.SUM, "scatter_add")

    def _scatter_like(self: Tensor, dim: int, index: Any, src: Any, combine: ReduceOp | None, name: str) -> Tensor:
        from .tensor import Tensor
        a = normalize_axis(dim, self.ndim, name)
        t = _tensor_index(self, index, name)
        if t.ndim != self.ndim or any(m > n for d, (m, n) in enumerate(zip(t.shape, self.shape)) if d != a):
            raise ShapeError(f"{name}: index of shape {t.shape} does not fit a tensor of shape {self.shape} along "
                             f"the axes other than {a} (same rank, no longer)")
        values = src if isinstance(src, Tensor) else self._like(src) if not isinstance(src, (bool, int, float)) \
            else Tensor._scalar(src, self.dtype, self.device, name, t.shape)
        if values.ndim != t.ndim or any(m > n for m, n in zip(t.shape, values.shape)):
            raise ShapeError(f"{name}: src of shape {values.shape} is smaller than the index {t.shape}")
        values = values._shrink([(0, m, 1) for m in t.shape])
        pos, bad = self._positions(t, a, name, False)
        return self._scatter(a, pos, values, combine)._checked(bad, _range_message(name, self.shape[a], a, False))

    def scatter_reduce(self: Tensor, dim: int, index: Any, src: Tensor, reduce: str, *,
                       include_self: bool = True) -> Tensor:
        """PyTorch's scatter_reduce (out of place): each `src[i][j][k]` folded into `[index[i][j][k]][j][k]` (dim
        0) by `reduce`, 'sum', 'prod', 'mean', 'amax' or 'amin'; with `include_self=False` an element that
        updates reach is folded from them alone (its own value left out), others keep theirs. 'mean' of
        integers rounds down, as PyTorch's."""
        combine = {"sum": ReduceOp.SUM, "prod": ReduceOp.PROD, "mean": ReduceOp.SUM, "amax": ReduceOp.MAX,
                   "amin": ReduceOp.MIN}.get(reduce)
        if combine is None:
            raise ValueError(f"scatter_reduce: reduce must be 'sum', 'prod', 'mean', 'amax' or 'amin', got {reduce!r}")
        from .creation import full_like, zeros_like
        from .tensor import where
        base = self
        if not include_self or reduce == "mean":
            counts = zeros_like(self, dtype=dtypes.int64)._scatter_like(dim, index, 1, ReduceOp.SUM, "scatter_reduce")
        if not include_self:
            base = where(counts > 0, full_like(self, combine.identity(self.dtype)), self)
        out = base._scatter_like(dim, index, src, combine, "scatter_reduce")
        if reduce != "mean":
            return out
        count = (counts + int(include_self)).clip(1, None).cast(self.dtype)
        mean = out // count if not self.dtype.is_float else out / count
        return mean if include_self else where(counts > 0, mean, self)

    def index_add(self: Tensor, dim: int, index: Any, source: Any, *, alpha: float = 1) -> Tensor:
        """PyTorch's index_add (out of place): self with `alpha * source` added at the 1-d `index` along `dim`
        (repeated indices add up)."""
        a = normalize_axis(dim, self.ndim, "index_add")
        t = _tensor_index(self, index, "index_add")
        if t.ndim > 1:
            raise ShapeError(f"index_add: the index must be 1-d, got shape {t.shape}")
        values = source if alpha == 1 else source * alpha
        shape = (*self.shape[:a], t.numel(), *self.shape[a + 1:])
        if tuple(values.shape) != shape:
            raise ShapeError(f"index_add: source of shape {values.shape}, expected {shape}")
        pos, bad = self._positions(t.reshape(-1), a, "index_add", False)
        spread = pos.reshape(tuple(t.numel() if d == a else 1 for d in range(self.ndim))).broadcast_to(shape)
        return self._scatter(a, spread, values, ReduceOp.SUM)._checked(
            bad, _range_message("index_add", self.shape[a], a, False))

    def index_put(self: Tensor, indices: tuple[Any, ...], values: Any, accumulate: bool = False) -> Tensor:
        """PyTorch's index_put (out of place): self with `values` (broadcast, cast to self's dtype) written where
        `x[indices]` points, `indices` a tuple of integer or boolean index tensors; of repeated positions the last
        write stays, or with `accumulate` the values add up there."""
        items = tuple(indices)
        if not items:
            raise IndexError("index_put: indices must hold at least one index tensor")
        out = self.copy()
        if not accumulate:
            out[items] = values
            return out
        expanded = _expanded(self, items)
        from .tensor import Tensor, broadcast_shapes
        flat, shape, bad = _flat_positions(self, expanded, "index_put")
        v = values if isinstance(values, Tensor) else self._like(values)
        broadcast_shapes(v.shape, shape, op="index_put")
        updates = v.cast(self.dtype).broadcast_to(shape).reshape(-1)
        summed = self.reshape(-1)._scatter(0, flat.reshape(-1), updates, ReduceOp.SUM).reshape(self.shape)
        return summed if bad is None else summed._checked(bad, "index_put: an index is out of bounds")

    def put(self: Tensor, index: Any, source: Any, accumulate: bool = False) -> Tensor:
        """PyTorch's put (out of place): self, read as 1-d, with `source`'s elements written at the positions
        `index` holds (negative count from the end; the two may have any shapes, of one element count); of
        repeated positions the last write stays, or with `accumulate` the values add up there."""
        from .tensor import Tensor
        idx = _tensor_index(self, index, "put")
        src = source if isinstance(source, Tensor) else self._like(source)
        if idx.numel() != src.numel():
            raise ShapeError(f"put: index and source must have as many elements, got shapes {idx.shape} and "
                             f"{src.shape}")
        flat = self.reshape(-1).index_put((idx.reshape(-1),), src.reshape(-1), accumulate)
        return flat.reshape(self.shape)

    # ---- x[index] and x[index] = value ------------------------------------------------------------------

    def __getitem__(self: Tensor, index: Any) -> Tensor:
        """NumPy's indexing: ints (negative too), slices with any step, None and `...` are views; integer
        arrays (tensors, lists, NumPy arrays) and boolean masks index by data (advanced indexing), with
        NumPy's rules: the index arrays broadcast together, and their axes take the place of the indexed
        ones where these are next to each other (an int among them counts as one), else come first (PyTorch
        keeps an int's place: `x[1, :, [0, 1]]` is (2, 6) here, (6, 2) there)."""
        if isinstance(index, IndexingOps) and index.dtype.is_int and self.ndim:  # `x[i]`, an embedding's rows
            return self._take(index, 0, "index")
        items = _expanded(self, index)
        if not any(_is_array(it) for it in items):
            view = _basic_view(self, items)
            if view is not self:  # written in place, it writes self (`Tensor._rebind`); a plain tensor it only
                # refers to, so that holding the view does not make the scheduler write self; a view or `t.data`
                # it keeps, a temporary that a chained write (`t[0][1][2] = v`) goes through
                keep = getattr(self, "_view", None) is not None or type(self) is not type(view)
                view._view = (self if keep else weakref.ref(self), items)
            return view
        if all(it.ndim == 0 and it.dtype == dtypes.bool_ for it in items if _is_array(it)):
            return _scalar_masked(self, items)
        arrays = [a for a, it in enumerate(items) if _is_array(it)]
        if len(arrays) == 1 and items[arrays[0]].dtype != dtypes.bool_ and \
                all(it == slice(None) for it in items if not _is_array(it)):  # one integer array: `x[i]`, `x[:, i]`
            return self._take(items[arrays[0]], arrays[0], "index")
        flat, shape, bad = _flat_positions(self, items, "index")
        out = self.reshape(-1)._gather(0, flat.reshape(-1)).reshape(shape)
        return out if bad is None else out._checked(bad, "index: an index is out of bounds")

    def __setitem__(self: Tensor, index: Any, value: Any) -> None:
        """`x[index] = value`: x becomes a new tensor equal to the old but where `index` points, which holds
        `value` broadcast to what `x[index]` would be (cast to x's dtype). Tensors taken from x before keep
        the values they had (see the module docstring). With several writes to one element (repeated
        indices), the last one stays, as NumPy's."""
        from .autograd import is_grad_enabled
        from .tensor import Tensor, where
        if self.requires_grad and self._ctx is None and is_grad_enabled():
            raise RuntimeError("a leaf tensor that requires grad cannot be written in place (x[i] = v); write it "
                               "under lt.no_grad() or write a copy")
        items = _expanded(self, index)
        if (type(value) is float or type(value) is int) and self.dtype.kind == "f":  # exact in a float64 tensor
            v = Tensor._scalar(value, self.dtype, self.device, "index assignment")
        else:
            v = value if isinstance(value, Tensor) else self._like(value)
        if not any(_is_array(it) for it in items):
            out = _basic_written(self, items, v)
        elif all(it.ndim == 0 and it.dtype == dtypes.bool_ for it in items if _is_array(it)):
            # only 0-d masks (`x[True] = v`): a new axis each, of 1 where it holds, of 0 where not. A value that
            # fits the first is written where they all hold, without reading them; else they must not hold
            # (`x[False] = empty`), which is read
            if _fits(v.shape, _basic_view(self, tuple(None if _is_array(it) else it for it in items)).shape):
                masks = [it for it in items if _is_array(it)]
                written = _basic_written(self, tuple(None if _is_array(it) else it for it in items), v)
                out = where(functools.reduce(operator.and_, masks), written, self)
            elif _fits(v.shape, _scalar_masked(self, items).shape):
                out = self
            else:
                raise ShapeError(f"index assignment: cannot broadcast a value of shape {v.shape} to "
                                 f"{_scalar_masked(self, items).shape}")
        elif (mask := _leading_mask(self, items)) is not None and v.ndim <= self.ndim - mask.ndim + (v.ndim > 0) \
                and _broadcasts(v.shape, self.shape[mask.ndim:]):
            out = where(mask.reshape(*mask.shape, *([1] * (self.ndim - mask.ndim))), v.cast(self.dtype), self)
        else:
            flat, shape, bad = _flat_positions(self, items, "index assignment")
            from .tensor import broadcast_shapes
            broadcast_shapes(v.shape, shape, op="index assignment")
            updates = v.cast(self.dtype).broadcast_to(shape).reshape(-1)
            out = self.reshape(-1)._scatter(0, flat.reshape(-1), updates, None).reshape(self.shape)
            out = out if bad is None else out._checked(bad, "index assignment: an index is out of bounds")
        self._rebind(out)

    # ---- data-dependent shapes --------------------------------------------------------------------------

    def nonzero(self: Tensor, *, as_tuple: bool = False) -> Any:
        """The indices of the nonzero (true) elements in row-major order. Its size depends on the data, so the
        count is computed first (a realize; a JitError inside `lt.jit`). The array API's (and NumPy's) form is
        a tuple of int64 index tensors, one per axis, that `lt.nonzero` gives and `as_tuple=True` asks for;
        the method's default is PyTorch's (count, ndim) tensor."""
        if self.ndim == 0:
            raise ShapeError("nonzero: a 0-d tensor has no axes to index (use x.reshape(1))")
        flat = _flat_nonzero(self, "nonzero")
        coords, stride = [], 1
        for n in reversed(self.shape):
            coords.append((flat // stride) % n if n != 1 else flat * 0)
            stride *= n
        coords.reverse()
        if as_tuple:
            return tuple(coords)
        from .movement import stack
        return stack(coords, axis=-1)

    def argwhere(self: Tensor) -> Tensor:
        """NumPy's argwhere: the (count, ndim) indices of the nonzero elements (see `nonzero`)."""
        return self.reshape(1).nonzero() if self.ndim == 0 else self.nonzero()


# ---- parsing an index ------------------------------------------------------------------------------------

def _is_array(it: Any) -> bool:
    """Whether an index item indexes by data: a tensor, a list, a NumPy array (not a NumPy scalar), a bool."""
    from .tensor import Tensor
    return isinstance(it, (Tensor, list, bool, np.bool_)) or (isinstance(it, np.ndarray) and it.ndim > 0) or \
        (isinstance(it, np.ndarray) and it.dtype == np.bool_)


def _expanded(x: Tensor, index: Any) -> tuple[Any, ...]:
    """The items of `index` with `...` replaced by the full slices it stands for, the missing trailing ones
    added, lists, ranges and NumPy arrays as tensors, and each item checked."""
    from .tensor import Tensor
    items = index if isinstance(index, tuple) else (index,)
    out = []
    for it in items:
        if isinstance(it, (list, np.ndarray)) and not (isinstance(it, np.ndarray) and it.ndim == 0 and
                                                       it.dtype != np.bool_):
            it = _tensor_list(x, it)
        elif isinstance(it, (bool, np.bool_)):
            it = _tensor_list(x, np.array(bool(it)))
        elif isinstance(it, range):  # an integer array, as NumPy's and torch's: `logp[range(n), y]`
            from .creation import arange
            it = arange(it.start, it.stop, it.step, dtype=dtypes.int64, device=x.device)
        elif not (it is None or it is Ellipsis or isinstance(it, (slice, Tensor)) or hasattr(it, "__index__")):
            raise TypeError(f"invalid index {it!r}: use ints, slices, None, ..., integer arrays or boolean masks")
        if isinstance(it, Tensor) and it.dtype.is_float:
            raise IndexError(f"indices must be integers or booleans, got a {it.dtype.name} tensor")
        out.append(it)
    if sum(it is Ellipsis for it in out) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    used = sum(_consumed(it) for it in out)
    if used > x.ndim:
        raise IndexError(f"too many indices for a tensor of dimension {x.ndim}: {used} were given")
    if (i := next((i for i, it in enumerate(out) if it is Ellipsis), None)) is not None:
        out[i:i + 1] = [slice(None)] * (x.ndim - used)
    else:
        out += [slice(None)] * (x.ndim - used)
    return tuple(out)


def _tensor_list(x: Tensor, data: Any) -> Tensor:
    from .creation import asarray
    arr = np.asarray(data)
    if arr.dtype == object:
        raise IndexError(f"invalid index {data!r}: a list index must hold integers or booleans")
    if arr.size == 0 and arr.dtype == np.float64:  # [] is an empty integer index, as NumPy takes it
        arr = arr.astype(np.int64)
    return asarray(arr, device=x.device)


def _consumed(it: Any) -> int:
    """How many axes of the tensor an item indexes: none for None and `...`, a mask's rank for a mask."""
    from .tensor import Tensor
    if it is None or it is Ellipsis:
        return 0
    if isinstance(it, Tensor) and it.dtype == dtypes.bool_:
        return it.ndim
    return 1


def _basic_view(x: Tensor, items: tuple[Any, ...]) -> Tensor:
    """Ints, slices and None as a view: a strided shrink, a flip for the negative steps, a reshape. The shrink
    first, on x itself: a realized x's is then a window on its buffer (`MovementOps._shrink`)."""
    flips, ranges, shape = _basic_ranges(x, items)
    view = x._shrink(ranges)
    return (view.flip(flips) if flips else view).reshape(tuple(shape))


def _basic_ranges(x: Tensor, items: tuple[Any, ...]) -> tuple[list[int], list[tuple[int, int, int]], list[int]]:
    """For ints, slices and None (one per axis but the None): the axes to flip (negative steps), the
    (start, stop, step) of the elements each axis keeps, in x's order (step > 0), and the shape of the view."""
    ranges, flips, shape = [], [], []
    axis = 0
    for it in items:
        if it is None:
            shape.append(1)
            continue
        n = x.shape[axis]
        if isinstance(it, slice):
            start, stop, step = it.indices(n)
            length = len(range(start, stop, step))
            if step < 0:
                flips.append(axis)
                start, step = (start + (length - 1) * step if length else 0), -step
            ranges.append((start, start + (length - 1) * step + 1 if length else start, step))
            shape.append(length)
        else:
            i = int(it.__index__())
            if not -n <= i < n:
                raise IndexError(f"index {i} is out of bounds for axis {axis} with size {n}")
            ranges.append((i % n, i % n + 1, 1))
        axis += 1
    return flips, ranges, shape


def _fits(shape: tuple[int, ...], to: tuple[int, ...]) -> bool:
    """Whether `shape` broadcasts to exactly `to` (a size-1 axis of `to` takes no size 0)."""
    return len(shape) <= len(to) and all(a in (1, b) for a, b in zip(reversed(shape), reversed(to)))


def _basic_written(x: Tensor, items: tuple[Any, ...], v: Tensor) -> Tensor:
    """x with `v` written where the ints, slices and None of `items` point: `v` and a mask placed back at
    those elements (the gradient of a slice is that placement), and a select."""
    from .autograd import unshrink
    from .creation import ones
    from .tensor import where
    flips, ranges, shape = _basic_ranges(x, items)
    if not _fits(v.shape, tuple(shape)):
        raise ShapeError(f"index assignment: cannot broadcast a value of shape {v.shape} to {tuple(shape)}")
    region = tuple((stop - start + step - 1) // step if stop > start else 0 for start, stop, step in ranges)
    placed = v.cast(x.dtype).broadcast_to(tuple(shape)).reshape(region)
    if flips:
        placed = placed.flip(flips)
    inside = ones(region, dtype=dtypes.bool_, device=x.device)
    placed, inside = (unshrink(t, x.shape, ranges) for t in (placed, inside))
    return where(inside, placed, x)


def _scalar_masked(x: Tensor, items: tuple[Any, ...]) -> Tensor:
    """An index whose only masks are 0-d (`x[True]`, `x[None, False]`): each adds an axis, of 1 where it is
    true and of 0 where it is false, as NumPy's."""
    from .tensor import Tensor
    view = _basic_view(x, tuple(None if isinstance(it, Tensor) else it for it in items))
    emptied, axis = [], 0
    for it in items:
        if isinstance(it, Tensor) and not bool(it.item()):
            emptied.append(axis)
        axis += it is None or isinstance(it, (Tensor, slice))
    return view[tuple(slice(0, 0) if a in emptied else slice(None) for a in range(view.ndim))]


def _leading_mask(x: Tensor, items: tuple[Any, ...]) -> Tensor | None:
    """The boolean mask of an index that is one mask over x's leading axes and full slices after it."""
    from .tensor import Tensor
    first = items[0]
    if not (isinstance(first, Tensor) and first.dtype == dtypes.bool_ and first.ndim > 0):
        return None
    # another shape (one that does not match, or an axis of 0 that selects nothing) takes the general path
    if tuple(first.shape) != x.shape[:first.ndim]:
        return None
    return first if all(isinstance(it, slice) and it == slice(None) for it in items[1:]) else None


def _broadcasts(shape: tuple[int, ...], to: tuple[int, ...]) -> bool:
    """Whether a value of `shape` broadcasts to the elements a leading mask selects, each of shape `to`: to `to`,
    or with one leading axis of 1 more (of the selected elements' count)."""
    return _fits(shape[1:] if len(shape) == len(to) + 1 and shape[0] == 1 else shape, to)


def _flat_positions(x: Tensor, items: tuple[Any, ...], name: str) \
        -> tuple[Tensor, tuple[int, ...], Tensor | None]:
    """For an index with arrays: the row-major position in x of each element of `x[index]` (int64, of that
    shape, computed from the indexes), the shape, and where an index is out of bounds (None where every index
    is inside by how it is made: masks, `arange`, ints checked now).

    Masks become the index arrays of their true elements (`nonzero`); the index arrays (and the ints among
    them) broadcast together; their axes replace theirs in place if they stand next to each other, else
    come first (NumPy's rules)."""
    from .creation import _iota
    from .tensor import Tensor, broadcast_shapes
    parts: list[tuple[str, Any, int]] = []  # (kind, item, axis of x)
    axis = 0
    for it in items:
        if it is None:
            parts.append(("new", None, -1))
        elif isinstance(it, Tensor) and it.dtype == dtypes.bool_:
            if it.ndim == 0:  # True adds an axis of 1, False one of 0, as NumPy
                parts.append(("new", it, -1))
                continue
            indexed = x.shape[axis:axis + it.ndim]
            # a mask axis of 0 selects nothing along any axis (NumPy's, and the array API tests')
            if len(indexed) != it.ndim or any(k not in (n, 0) for k, n in zip(it.shape, indexed)):
                raise IndexError(f"{name}: boolean index of shape {it.shape} does not match the indexed axes "
                                 f"{indexed}")
            # its true elements' row-major positions over its axes: x's flat offset is that times the stride
            # of its last axis, as the axes are consecutive (NumPy's index arrays of them, combined)
            axis += it.ndim
            parts.append(("mask", _flat_nonzero(it, name), axis - 1))
        elif isinstance(it, Tensor):
            parts.append(("array", it, axis))
            axis += 1
        elif isinstance(it, slice):
            parts.append(("slice", it, axis))
            axis += 1
        else:
            parts.append(("int", int(it.__index__()), axis))
            axis += 1
    adv = [i for i, (kind, _, _) in enumerate(parts) if kind in ("array", "mask", "int")]
    together = adv == list(range(adv[0], adv[-1] + 1))
    b = broadcast_shapes(*(tuple(parts[i][1].shape) for i in adv if parts[i][0] != "int"), op=name)
    before = [i for i in range(len(parts)) if together and i < adv[0]]
    after = [i for i in range(len(parts)) if i not in adv and i not in before]
    dims = [_length(x, parts[i]) for i in before] + list(b) + [_length(x, parts[i]) for i in after]
    place = {i: r for r, i in enumerate(before)} | {i: len(before) + len(b) + r for r, i in enumerate(after)}
    strides = [prod(x.shape[a + 1:]) for a in range(x.ndim)]
    # the sum of the parts' offsets and the or of their range checks, each None until a part has one: no node
    # for a 0 added or a False or'ed
    flat: Tensor | None = None
    bad: Tensor | None = None
    for i, (kind, it, a) in enumerate(parts):
        if kind == "new":
            continue
        n = x.shape[a]
        if kind == "int":
            if not -n <= it < n:
                raise IndexError(f"{name}: index {it} is out of bounds for axis {a} with size {n}")
            offset = Tensor._const((it % n) * strides[a], dtypes.int64, x.device)
            flat = offset if flat is None else flat + offset
        elif kind in ("array", "mask"):  # its axes align with the trailing ones of the broadcast index shape
            lead, tail = len(before) + len(b) - it.ndim, len(dims) - len(before) - len(b)
            known = kind == "mask" or _inside(it, n)  # a mask's positions are inside by construction
            wrapped = it if known else _wrapped(it, n)
            offset = wrapped.reshape((1,) * lead + tuple(it.shape) + (1,) * tail)
            offset = _scaled(offset, strides[a])
            flat = offset if flat is None else flat + offset
            if not known:
                outside = _outside(it, wrapped, n).any()
                bad = outside if bad is None else bad | outside
        else:
            start, _, step = it.indices(n)
            shape = [1] * len(dims)
            shape[place[i]] = dims[place[i]]
            along = _iota(dims[place[i]], x.device)
            along = (along * _position(along, step) + _position(along, start)).reshape(shape)
            offset = _scaled(along, strides[a])
            flat = offset if flat is None else flat + offset
    assert flat is not None  # an index with arrays has a part that is not a new axis
    return flat.broadcast_to(tuple(dims)), tuple(dims), bad


def _length(x: Tensor, part: tuple[str, Any, int]) -> int:
    """The length of the result's axis that a slice or a new axis gives."""
    kind, it, a = part
    if kind == "new":
        return 0 if it is not None and not bool(it.item()) else 1
    return len(range(*it.indices(x.shape[a])))


def _flat_nonzero(x: Tensor, name: str) -> Tensor:
    """The row-major positions (int64) of x's nonzero elements, in order: each true element's rank among the
    true ones (a running count, in int32 where the count fits: half the memory to scan) is where its position
    goes, a scatter. The running count's last element, read first, is the count."""
    from .creation import arange, zeros
    from .tensor import where
    mask = (x != 0).reshape(-1)
    n = mask.numel()
    if n == 0:
        return zeros(0, dtype=dtypes.int64, device=x.device)
    ranks = mask.cumsum(0, dtype=dtypes.int32 if n < 2**31 else dtypes.int64)  # live: written once, read twice
    count = int(ranks[-1].item())
    target = where(mask, ranks - 1, count).cast(dtypes.int64)  # a false element goes past the end: written nowhere
    return zeros(count, dtype=dtypes.int64, device=x.device)._scatter(0, target, arange(n, device=x.device), None,
                                                                     distinct=True)


def nonzero(x: Any) -> tuple[Tensor, ...]:
    """The array API's (and NumPy's) nonzero: a tuple of int64 index tensors, one per axis, of the nonzero
    (true) elements in row-major order (see `Tensor.nonzero`)."""
    from .creation import asarray
    from .tensor import Tensor
    return (x if isinstance(x, Tensor) else asarray(x)).nonzero(as_tuple=True)


def flatnonzero(a: Any) -> Tensor:
    """NumPy's flatnonzero: the int64 positions of the nonzero elements of the flattened tensor."""
    from .creation import asarray
    return asarray(a).reshape(-1).nonzero(as_tuple=True)[0]


def extract(condition: Any, arr: Any) -> Tensor:
    """NumPy's extract: the elements of the flattened `arr` where the flattened `condition` is nonzero."""
    from .creation import asarray
    return asarray(arr).reshape(-1).take(flatnonzero(condition))


def compress(condition: Any, a: Any, axis: int | None = None) -> Tensor:
    """NumPy's compress: the slices of `a` along `axis` (of the flattened `a` where None) whose entries of the
    1-d `condition` are nonzero; a condition shorter than the axis drops the slices past it."""
    from .creation import asarray
    x, kept = asarray(a), asarray(condition)
    if kept.ndim != 1:
        raise ShapeError(f"compress: condition must be 1-d, got shape {kept.shape}")
    x = x.reshape(-1) if axis is None else x
    n = x.shape[normalize_axis(0 if axis is None else axis, x.ndim, "compress")]
    if kept.shape[0] > n:
        raise IndexError(f"compress: condition has {kept.shape[0]} entries, the axis only {n}")
    return x.take(kept.nonzero(as_tuple=True)[0], axis=0 if axis is None else axis)


def delete(arr: Any, obj: Any, axis: int | None = None) -> Tensor:
    """NumPy's delete: `arr` without the slices along `axis` (of the flattened `arr` where None) that `obj` names:
    an int, a slice, or integers or a boolean mask (read on the host)."""
    from .creation import asarray
    from .tensor import Tensor
    x = asarray(arr)
    x = x.reshape(-1) if axis is None else x
    a = 0 if axis is None else normalize_axis(axis, x.ndim, "delete")
    keep = np.ones(x.shape[a], bool)
    keep[obj.numpy() if isinstance(obj, Tensor) else obj] = False
    return x.take(asarray(np.flatnonzero(keep), device=x.device), axis=a)


def trim_zeros(filt: Any, trim: str = "fb", axis: Any = None) -> Tensor:
    """NumPy's trim_zeros: `filt` without its leading ('f') and trailing ('b') zeros along `axis` (every axis where
    None: the smallest box holding every nonzero element); where the nonzero elements are is read on the host."""
    from .creation import asarray
    from .movement import normalize_axes
    x, ends = asarray(filt), trim.lower()
    if not set(ends) <= {"f", "b"}:
        raise ValueError(f"trim_zeros: trim must hold only 'f' and 'b', got {trim!r}")
    nonzero_at = (x != 0).numpy()
    index: list[Any] = [slice(None)] * x.ndim
    for a in range(x.ndim) if axis is None else normalize_axes(axis, x.ndim, "trim_zeros"):
        found = np.flatnonzero(nonzero_at.any(axis=tuple(k for k in range(x.ndim) if k != a)))
        start, stop = (int(found[0]), int(found[-1]) + 1) if found.size else (0, 0)
        index[a] = slice(start if "f" in ends else None, stop if "b" in ends else None)
    return x[tuple(index)]


def ix_(*args: Any) -> tuple[Tensor, ...]:
    """NumPy's ix_: 1-d integer (or boolean, read as their nonzero positions) sequences as index tensors shaped to
    index the cross product: the k-th of n along axis k, size 1 along the others (`x[lt.ix_(rows, cols)]`)."""
    from .creation import asarray
    out = []
    for k, arg in enumerate(args):
        t = asarray(arg)
        if t.ndim != 1:
            raise ShapeError(f"ix_: each index must be 1-d, got shape {t.shape} at position {k}")
        if t.dtype == dtypes.bool_:
            t = t.nonzero(as_tuple=True)[0]
        elif t.dtype.is_float and t.numel() == 0:
            t = t.cast(dtypes.int64)
        out.append(t.reshape((1,) * k + (t.shape[0],) + (1,) * (len(args) - k - 1)))
    return tuple(out)


def put_along_axis(arr: Tensor, indices: Any, values: Any, axis: int | None) -> None:
    """NumPy's put_along_axis: `values` (broadcast) written into `arr` at `indices` along `axis`, the indices
    broadcast against arr along the other axes (None: arr flattened, indices 1-d). arr is rebound in place, as
    `x[i] = v` rebinds x; negative indices count from the end, one past the bounds is an IndexError."""
    from .creation import arange
    from .tensor import Tensor
    if not isinstance(arr, Tensor):
        raise TypeError(f"put_along_axis: arr must be a lazytensor Tensor (it is written in place), got "
                        f"{type(arr).__name__}")

    def written(x: Tensor, _: Any) -> Tensor:
        flat = x.reshape(-1) if axis is None else x
        a = 0 if axis is None else normalize_axis(axis, flat.ndim, "put_along_axis")
        t = _tensor_index(flat, indices, "put_along_axis")
        if t.ndim != flat.ndim:
            raise ShapeError(f"put_along_axis: indices of {t.ndim} dimensions for a tensor of {flat.ndim}")
        index = tuple(t if d == a else arange(n, device=flat.device).reshape(tuple(-1 if k == d else 1
                                                                                   for k in range(flat.ndim)))
                      for d, n in enumerate(flat.shape))
        out = flat.copy()
        out[index] = values
        return out.reshape(x.shape)

    arr._inplace(written, None, "put_along_axis")


__all__ = ["IndexingOps", "compress", "delete", "extract", "flatnonzero", "ix_", "nonzero", "put_along_axis",
           "trim_zeros"]
