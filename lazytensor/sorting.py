"""Sorting, searching sorted data, and sets: `sort`, `argsort`, `lexsort`, `partition`, `searchsorted`, `bucketize`,
`unique`, `unique_*`, `unique_consecutive`, `mode`, `isin`, `union1d`, `intersect1d`, `setdiff1d`.

One graph op does the sorting (`Op.SORT`): the stable order of each row of keys along the last axis, as
int64 positions, or the keys themselves in that order, a kernel of its own kind (`kernels.ir.Sort`: a radix
sort on the CPU, a sorting network on a GPU) on the tensor's device. Everything else is gathers, scans and
scatters around it (`indexing.py`): `sort` sorts the values themselves where it is asked for them alone (and
gathers the keys in their order where PyTorch's `dim=` asks for the positions too), `searchsorted` is a binary search of gathers fused into one
kernel, `unique` and `unique_*` mark where a sorted run starts and count, `isin` searches a sorted copy.

Order: stable (equal keys keep their order); NaN after every number (first, descending), as NumPy and
PyTorch; -0.0 equals 0.0. `unique_*` treat each NaN as distinct (NaN != NaN), as the array API says, and
`unique` all NaNs as one value by default, as NumPy's. Their size is the data's: the count is read first (a
realize; a JitError inside `lt.jit`).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

from . import dtypes
from .errors import ShapeError
from .graph import Op
from .kernels.ir import ReduceOp
from .movement import normalize_axis

if TYPE_CHECKING:
    from .tensor import Tensor


# topk takes a partial sort (a heap of the k best, `ir.Sort.first`) for k up to this, from rows this many times
# as long as k: its pass costs about a compare per element where a sort costs several passes; where every
# element enters the heap (a row in the order it wants: ascending for the largest) each costs log2(k) steps.
PARTIAL_MAX_K = 128
PARTIAL_MIN_RATIO = 16


def _keys(x: Tensor) -> Tensor:
    """x as keys the sort takes, in the same order: bools as uint8, 16-bit floats as float32 (exactly)."""
    if x.dtype == dtypes.bool_:
        return x.cast(dtypes.uint8)
    if x.dtype in (dtypes.float16, dtypes.bfloat16):
        return x.cast(dtypes.float32)
    return x


class SortingOps:
    """The Tensor's sorting methods (mixed into `Tensor`)."""

    def argsort(self: Tensor, axis: int | None = -1, descending: bool = False, stable: bool = True, *,
                dim: int | None = None) -> Tensor:
        """The int64 positions that sort `axis` (PyTorch's `dim=` too; None: the flattened tensor, as NumPy),
        stable whatever `stable` says (equal keys keep their order); `descending` puts the largest first. NaN
        sorts after every number (first, descending)."""
        from .creation import zeros
        from .tensor import Tensor
        if axis is None and dim is None:
            return self.reshape(-1).argsort(0, descending, stable)
        if self.ndim == 0:
            return zeros((), dtype=dtypes.int64, device=self.device)
        a = normalize_axis(axis if dim is None else dim, self.ndim, "argsort")
        keys = _keys(self).moveaxis(a, -1)
        order = Tensor._make(Op.SORT, dtypes.int64, keys.shape, (keys,), (bool(descending), False, (), 0))
        return order.moveaxis(-1, a)

    def sort(self: Tensor, axis: int | None = -1, descending: bool = False, stable: bool = True, *,
             dim: int | None = None) -> Any:
        """The values sorted along `axis` (see `argsort` for the order; None: the flattened tensor, as NumPy): the
        array API's and NumPy's result. Spelled PyTorch's way, with `dim=`, it is PyTorch's `(values, indices)`."""
        from .tensor import Tensor
        if axis is None and dim is None:
            return self.reshape(-1).sort(0, descending, stable)
        if dim is None and self.ndim and _keys(self) is self:
            # the values alone: the kernel sorts the keys themselves, with no positions to carry nor gather by
            a = normalize_axis(axis, self.ndim, "sort")
            keys = self.moveaxis(a, -1)
            return Tensor._make(Op.SORT, self.dtype, keys.shape, (keys,), (bool(descending), True, (), 0)).moveaxis(-1, a)
        order = self.argsort(axis, descending, stable, dim=dim)
        values = self if self.ndim == 0 else self._gather(normalize_axis(axis if dim is None else dim, self.ndim,
                                                                         "sort"), order)
        return values if dim is None else Sorted(values, order)


    def _sorted_at(self: Tensor, positions: tuple[int, ...]) -> Tensor:
        """The values an ascending sort of the last axis puts at `positions` (each in [0, n)), in a last axis of
        their own: a selection, with no sort of the whole row where the kernel can select its keys."""
        from .tensor import Tensor
        if _keys(self) is not self:
            return self.sort(-1)[..., list(positions)]
        shape = (*self.shape[:-1], len(positions))
        return Tensor._make(Op.SORT, self.dtype, shape, (self,), (False, True, tuple(positions), 0))

    def topk(self: Tensor, k: int, dim: int = -1, largest: bool = True, sorted: bool = True) -> Sorted:
        """PyTorch's topk: the `k` largest (`largest=False`: smallest) entries along `dim` and their indices, in
        order (largest first), a stable sort's: of equal values the first comes first. NaN counts as the
        largest."""
        if self.ndim == 0:  # the element and index 0, for k 0 or 1, as PyTorch
            if k > 1:
                raise ShapeError(f"topk: k={k} is more than the 1 element of a 0-d tensor")
            return Sorted(self, self._like(0).cast(dtypes.int64))
        a = normalize_axis(dim, self.ndim, "topk")
        if not 0 <= k <= self.shape[a]:
            raise ShapeError(f"topk: k={k} is outside [0, {self.shape[a]}] (the size of dim {dim})")
        if 0 < k <= PARTIAL_MAX_K and k * PARTIAL_MIN_RATIO <= self.shape[a]:
            # a partial sort: the k first of each row's order, no sort of the whole row
            from .tensor import Tensor
            keys = _keys(self).moveaxis(a, -1)
            order = Tensor._make(Op.SORT, dtypes.int64, (*keys.shape[:-1], k), (keys,), (bool(largest), False, (), k))
            indices = order.moveaxis(-1, a)
            return Sorted(self._gather(a, indices), indices)
        values, indices = self.sort(dim=a, descending=largest)
        return Sorted(values.narrow(a, 0, k), indices.narrow(a, 0, k))

    def kthvalue(self: Tensor, k: int, dim: int = -1, keepdim: bool = False) -> Sorted:
        """PyTorch's kthvalue: the `k`-th smallest entry (1-based) along `dim` and its index."""
        if self.ndim == 0:
            if k != 1:
                raise ShapeError(f"kthvalue: k={k} is outside [1, 1] for a 0-d tensor")
            return Sorted(self, self._like(0).cast(dtypes.int64))
        a = normalize_axis(dim, self.ndim, "kthvalue")
        if not 1 <= k <= self.shape[a]:
            raise ShapeError(f"kthvalue: k={k} is outside [1, {self.shape[a]}] (the size of dim {dim})")
        values, indices = self.sort(dim=a)
        pick = (lambda t: t.narrow(a, k - 1, 1)) if keepdim else (lambda t: t.narrow(a, k - 1, 1).squeeze(a))
        return Sorted(pick(values), pick(indices))

    def median(self: Tensor, dim: int | None = None, keepdim: bool = False) -> Any:
        """PyTorch's median: of all elements (`dim` None), the lower of the two middle values (not their mean,
        as NumPy's `lt.median`), as a 0-d tensor; along `dim`, `(values, indices)`. NaN where the slice holds
        one (along `dim`, the index of its first NaN). The gradient goes to the selected element."""
        return self._middle(dim, keepdim, skip_nan=False)

    def nanmedian(self: Tensor, dim: int | None = None, keepdim: bool = False) -> Any:
        """PyTorch's nanmedian: `median` of the values that are not NaN (NaN only where all are)."""
        return self._middle(dim, keepdim, skip_nan=True)

    def _middle(self: Tensor, dim: int | None, keepdim: bool, skip_nan: bool) -> Any:
        """The lower middle element of each sorted slice along `dim` (all elements where None) and its
        position. NaN sorts last, so the slice's non-NaN count says where its NaNs start: `median` picks the
        first NaN where there is one, `nanmedian` the middle of the values before it."""
        name = "nanmedian" if skip_nan else "median"
        if dim is None:
            if self.numel() == 0 and self.dtype.is_float:  # PyTorch's NaN, of no element
                return self._const(float("nan"), self.dtype, self.device)
            return self.reshape(-1)._middle(0, False, skip_nan).values
        if self.ndim == 0:
            normalize_axis(dim, 1, name)
            return Sorted(self, self._like(0).cast(dtypes.int64))
        a = normalize_axis(dim, self.ndim, name)
        n = self.shape[a]
        if n == 0:
            raise ShapeError(f"{name}: dim {dim} has no elements (shape {self.shape})")
        values, indices = self.sort(dim=a)
        if not self.dtype.is_float:
            position: Any = (n - 1) // 2
        else:
            numbers = (~self.isnan()).sum(a, keepdims=True)
            position = ((numbers - 1) // 2).maximum(0) if skip_nan else \
                _where(numbers == n, (n - 1) // 2, numbers)

        def pick(t: Tensor) -> Tensor:
            return t.narrow(a, position, 1) if isinstance(position, int) else t._gather(a, position)
        out = Sorted(pick(values), pick(indices))
        return out if keepdim else Sorted(out.values.squeeze(a), out.indices.squeeze(a))

    def mode(self: Tensor, dim: int = -1, keepdim: bool = False) -> Sorted:
        """PyTorch's mode: the most frequent value along `dim` (the smallest of those equally frequent; each NaN
        counts once, as NaN != NaN) and the index of its last occurrence, as PyTorch's CPU gives it; the gradient
        goes to that element. A stable sort, then the longest run of equal values: its end is the first maximum
        of the distance from each sorted element back to the start of its run."""
        if self.ndim == 0:
            normalize_axis(dim, 1, "mode")
            return Sorted(self, self._like(0).cast(dtypes.int64))
        a = normalize_axis(dim, self.ndim, "mode")
        if self.shape[a] == 0:
            raise ShapeError(f"mode: dim {dim} has no elements (shape {self.shape})")
        values, order = self.sort(dim=a)
        positions = values._iota_along(a)
        starts = (positions == 0) | (values != values.roll(1, a))
        run_start = _where(starts, positions, 0)._scan(ReduceOp.MAX, a)
        end = (positions - run_start).argmax(a, keepdims=True)
        out = Sorted(values._gather(a, end), order._gather(a, end))
        return out if keepdim else Sorted(out.values.squeeze(a), out.indices.squeeze(a))

    def unique_consecutive(self: Tensor, return_inverse: bool = False, return_counts: bool = False,
                           dim: int | None = None) -> Any:
        """PyTorch's unique_consecutive: the first element of each run of equal consecutive elements of the
        flattened tensor (or, along `dim`, of equal slices), and, as asked, in this order, for each element (slice)
        the number of its run (the input's shape; along `dim`, 1-d) and the runs' lengths. Each NaN is its own
        run, as PyTorch's. Its size is the data's: the count of runs is read first, as `unique`'s."""
        if dim is None:
            rows = self.reshape(-1)
        else:
            a = normalize_axis(dim, self.ndim, "unique_consecutive")
            rows = self.moveaxis(a, 0)
        starts, run = _run_starts(rows, "unique_consecutive")
        values = rows.index_select(0, starts)
        extra = []
        if return_inverse:
            extra.append(run.reshape(self.shape) if dim is None else run)
        if return_counts:
            extra.append(_run_lengths(starts, rows.shape[0]))
        values = values if dim is None else values.moveaxis(0, a)
        return (values, *extra) if extra else values


class Sorted(NamedTuple):
    """PyTorch's `sort(dim=...)` result: the sorted values and their positions."""

    values: Tensor
    indices: Tensor


def _where(cond: Tensor, a: Any, b: Any) -> Tensor:
    from .tensor import where
    return where(cond, a, b)


def _nan_last_less(a: Tensor, b: Tensor) -> Tensor:
    """a before b in the sort's order (NaN after every number)."""
    if not a.dtype.is_float:
        return a < b
    return (a < b) | (b.isnan() & ~a.isnan())


def searchsorted(x1: Any, x2: Any, /, side: str = "left", sorter: Any = None) -> Tensor:
    """The array API's searchsorted: for each element of `x2`, the position in the 1-d ascending `x1` (or
    `x1` taken in the order `sorter` gives) where it would go: before equal elements (`side='left'`) or
    after them ('right'). int64, of x2's shape; NaN counts as larger than every number. A binary search:
    ceil(log2(n + 1)) steps, each a gather from x1, all in one kernel."""
    from .creation import asarray, full
    from .tensor import Tensor, where
    if side not in ("left", "right"):
        raise ValueError(f"searchsorted: side must be 'left' or 'right', got {side!r}")
    a = x1 if isinstance(x1, Tensor) else asarray(x1)
    if a.ndim != 1:
        raise ShapeError(f"searchsorted: x1 must be 1-d, got shape {a.shape}")
    if sorter is not None:
        a = a.take(sorter)
    q = x2 if isinstance(x2, Tensor) else asarray(x2, device=a.device)
    dtype = dtypes.promote(a.dtype, q.dtype)
    a, q = a.cast(dtype), q.cast(dtype)
    n = a.shape[0]
    lo = full(q.shape, 0, dtype=dtypes.int64, device=a.device)
    hi = full(q.shape, n, dtype=dtypes.int64, device=a.device)
    for _ in range(n.bit_length()):
        mid = (lo + hi) // 2
        at = a._gather(0, mid.reshape(-1).minimum(max(n - 1, 0))).reshape(q.shape) if n else q
        # left: the first position whose element is not before q; right: the first after q
        go_right = _nan_last_less(at, q) if side == "left" else ~_nan_last_less(q, at)
        go_right = go_right & (mid < n)
        lo, hi = where(go_right, mid + 1, lo), where(go_right, hi, mid)
    return lo


def bucketize(input: Any, boundaries: Any, *, out_int32: bool = False, right: bool = False) -> Tensor:
    """For each element of `input`, the index of its bucket among the 1-d ascending `boundaries` (PyTorch's
    `bucketize`): the first boundary at or above it, or with `right=True` the first above it. int64, or int32
    with `out_int32=True`; `searchsorted(boundaries, input)` with the sides named the other way round."""
    positions = searchsorted(boundaries, input, side="right" if right else "left")
    return positions.cast(dtypes.int32) if out_int32 else positions


class UniqueAll(NamedTuple):
    values: Tensor
    indices: Tensor
    inverse_indices: Tensor
    counts: Tensor


class UniqueCounts(NamedTuple):
    values: Tensor
    counts: Tensor


class UniqueInverse(NamedTuple):
    values: Tensor
    inverse_indices: Tensor


class _Runs(NamedTuple):
    """A flattened tensor sorted, and its runs of equal values."""

    order: Tensor     # positions in x of the sorted elements
    values: Tensor    # the first value of each run, in order
    starts: Tensor    # where each run starts in the sorted order
    run: Tensor       # for each sorted element, the number of its run (int64)


def _runs(x: Any, name: str, equal_nan: bool = False) -> _Runs:
    """x (flattened) sorted, and where its runs of equal values start: the count of runs is read (a realize),
    then the starts are found (a scatter of each start to its run's number). NaNs make one run with
    `equal_nan` (they sort last, together), else one each."""
    from .creation import asarray
    from .tensor import Tensor
    t = x if isinstance(x, Tensor) else asarray(x)
    flat = t.reshape(-1)
    order = flat.argsort()
    s = flat._gather(0, order).contiguous()  # read at several places below: gathered once
    starts, run = _run_starts(s, name, equal_nan)
    return _Runs(order, s._gather(0, starts), starts, run)


def _run_starts(s: Tensor, name: str, equal_nan: bool = False) -> tuple[Tensor, Tensor]:
    """Where the runs of equal rows (along axis 0; elements of a 1-d `s`) start, the count of runs read (a
    realize), and for each row the number of its run (int64)."""
    from .creation import arange, zeros
    from .indexing import _flat_nonzero
    n = s.shape[0]
    if n == 0:
        empty = zeros(0, dtype=dtypes.int64, device=s.device)
        return empty, empty
    first = arange(n, device=s.device) == 0
    starts_mask = first
    if n > 1:
        before = s.roll(1, 0)
        new_value = s != before  # NaN != NaN: each NaN its own run, unless equal_nan
        if equal_nan:
            new_value = new_value & ~(s.isnan() & before.isnan())
        starts_mask = first | new_value.reshape(n, new_value.numel() // n).any(1)
    run = starts_mask.cast(dtypes.int64).cumsum(0) - 1
    return _flat_nonzero(starts_mask, name), run


def unique(x: Any, /, return_index: bool = False, return_inverse: bool = False, return_counts: bool = False, *,
           equal_nan: bool = True) -> Any:
    """NumPy's unique: the distinct values of x (flattened), sorted, and, as asked, in this order, the flat position
    in x of each one's first occurrence, each element's position among them (x's shape, as NumPy 2) and their
    counts (a tuple where any is asked). NaNs are one value with `equal_nan` (NumPy's default), else each its
    own, as `unique_values` (the array API's)."""
    r = _runs(x, "unique", equal_nan)
    extra = []
    if return_index:
        extra.append(r.order._gather(0, r.starts))
    if return_inverse:
        extra.append(_inverse(r, x))
    if return_counts:
        extra.append(_counts(r))
    return (r.values, *extra) if extra else r.values


def unique_values(x: Any, /) -> Tensor:
    """The distinct values of x, sorted (1-d; each NaN distinct)."""
    return _runs(x, "unique_values").values


def unique_counts(x: Any, /) -> UniqueCounts:
    """The distinct values of x, sorted, and how many times each occurs."""
    r = _runs(x, "unique_counts")
    return UniqueCounts(r.values, _counts(r))


def unique_inverse(x: Any, /) -> UniqueInverse:
    """The distinct values of x, sorted, and for each element of x the position of its value among them (of
    x's shape)."""
    r = _runs(x, "unique_inverse")
    return UniqueInverse(r.values, _inverse(r, x))


def unique_all(x: Any, /) -> UniqueAll:
    """The distinct values, the (flattened) position in x of each one's first occurrence, each element's
    position among the values (x's shape) and the counts."""
    r = _runs(x, "unique_all")
    return UniqueAll(r.values, r.order._gather(0, r.starts), _inverse(r, x), _counts(r))


def _counts(r: _Runs) -> Tensor:
    return _run_lengths(r.starts, r.order.numel())


def _run_lengths(starts: Tensor, n: int) -> Tensor:
    """The length of each run of n elements, from where the runs start."""
    ends = starts.roll(-1) if starts.numel() else starts
    if starts.numel():
        from .creation import arange
        from .tensor import where
        last = arange(starts.numel(), device=starts.device) == starts.numel() - 1
        ends = where(last, n, ends)
    return ends - starts


def _inverse(r: _Runs, x: Any) -> Tensor:
    from .creation import asarray, zeros
    from .tensor import Tensor
    shape = x.shape if isinstance(x, Tensor) else asarray(x).shape
    n = r.order.numel()
    return zeros(n, dtype=dtypes.int64, device=r.order.device)._scatter(0, r.order, r.run, None,
                                                                        distinct=True).reshape(shape)


def isin(x1: Any, x2: Any, /, *, invert: bool = False) -> Tensor:
    """Whether each element of x1 is among the elements of x2 (or, `invert`, is not): x2 sorted once, then
    a binary search (`searchsorted`) for each element of x1. NaN is in no tensor (NaN != NaN)."""
    from .creation import asarray
    from .tensor import Tensor
    a = x1 if isinstance(x1, Tensor) else asarray(x1)
    b = x2 if isinstance(x2, Tensor) else asarray(x2, device=a.device)
    flat = b.reshape(-1)
    n = flat.numel()
    if n == 0:
        from .creation import full
        return full(a.shape, invert, dtype=dtypes.bool_, device=a.device)
    dtype = dtypes.promote(a.dtype, b.dtype)
    s = flat.cast(dtype).sort()
    pos = searchsorted(s, a.cast(dtype)).minimum(n - 1)
    found = s._gather(0, pos.reshape(-1)).reshape(a.shape) == a.cast(dtype)
    return ~found if invert else found


def _flat(x: Any) -> Tensor:
    from .creation import asarray
    return asarray(x).reshape(-1)


def union1d(ar1: Any, ar2: Any, /) -> Tensor:
    """NumPy's union1d: the sorted unique values in either tensor (flattened; the dtypes promoted)."""
    from .movement import concat
    return unique(concat([_flat(ar1), _flat(ar2)], 0))


def intersect1d(ar1: Any, ar2: Any, /, assume_unique: bool = False) -> Tensor:
    """NumPy's intersect1d: the sorted unique values in both tensors (flattened; the dtypes promoted). Its
    length is the data's: it is read (a JitError inside `lt.jit`)."""
    a, b = _flat(ar1), _flat(ar2)
    values = unique(a).cast(dtypes.promote(a.dtype, b.dtype))
    return values[isin(values, b)]


def setdiff1d(ar1: Any, ar2: Any, /, assume_unique: bool = False) -> Tensor:
    """NumPy's setdiff1d: the sorted unique values of ar1 that are not in ar2 (flattened; ar1's dtype). Its
    length is the data's: it is read (a JitError inside `lt.jit`)."""
    values = unique(_flat(ar1))
    return values[isin(values, _flat(ar2), invert=True)]


def setxor1d(ar1: Any, ar2: Any, /, assume_unique: bool = False) -> Tensor:
    """NumPy's setxor1d: the sorted unique values in exactly one of the tensors (flattened; the dtypes promoted).
    Its length is the data's: it is read (a JitError inside `lt.jit`)."""
    a, b = _flat(ar1), _flat(ar2)
    dtype = dtypes.promote(a.dtype, b.dtype)
    ua, ub = unique(a).cast(dtype), unique(b).cast(dtype)
    return union1d(ua[isin(ua, ub, invert=True)], ub[isin(ub, ua, invert=True)])


def in1d(ar1: Any, ar2: Any, assume_unique: bool = False, invert: bool = False) -> Tensor:
    """NumPy's in1d (`isin` of the flattened ar1)."""
    return isin(_flat(ar1), ar2, invert=invert)


def lexsort(keys: Any, axis: int = -1) -> Tensor:
    """NumPy's lexsort: the int64 order that sorts by the last key, then ties by the one before, ... (stable
    sorts from the first key to the last). `keys` a sequence of tensors of one shape, or a tensor whose first
    axis runs over them."""
    from .creation import asarray
    from .tensor import Tensor
    ks = [asarray(k) for k in (keys.unbind(0) if isinstance(keys, Tensor) else keys)]
    if not ks:
        raise TypeError("lexsort: needs at least one key")
    if any(k.shape != ks[0].shape for k in ks):
        raise ShapeError(f"lexsort: the keys must have one shape, got {[k.shape for k in ks]}")
    if ks[0].ndim == 0:
        raise ShapeError("lexsort: cannot sort 0-d keys")
    order = ks[0].argsort(axis)
    for k in ks[1:]:
        order = order.take_along_axis(k.take_along_axis(order, axis=axis).argsort(axis), axis=axis)
    return order


def _kth_checked(x: Tensor, kth: Any, axis: int | None, name: str) -> None:
    n = x.numel() if axis is None else x.shape[normalize_axis(axis, x.ndim, name)]
    for k in (kth if isinstance(kth, (list, tuple)) else [kth]):
        if not -n <= int(k) < n:
            raise ValueError(f"{name}: kth {k} is out of bounds for an axis of {n}")


def partition(a: Any, kth: Any, axis: int | None = -1) -> Tensor:
    """NumPy's partition: the values along `axis` (the flattened tensor where None) rearranged so that the
    `kth` ones are where a sort puts them, smaller ones before and larger after. A sort is such an arrangement,
    and it is the one given (NumPy's order within the two sides is unspecified, and differs)."""
    from .creation import asarray
    x = asarray(a)
    _kth_checked(x, kth, axis, "partition")
    return x.sort(axis)


def argpartition(a: Any, kth: Any, axis: int | None = -1) -> Tensor:
    """NumPy's argpartition: the int64 indices that `partition` the tensor (its stable sorting order; see
    `partition`)."""
    from .creation import asarray
    x = asarray(a)
    _kth_checked(x, kth, axis, "argpartition")
    return x.argsort(axis)


__all__ = [
    "Sorted",
    "SortingOps",
    "UniqueAll",
    "UniqueCounts",
    "UniqueInverse",
    "argpartition",
    "in1d",
    "intersect1d",
    "isin",
    "lexsort",
    "partition",
    "searchsorted",
    "setdiff1d",
    "setxor1d",
    "union1d",
    "unique_all",
    "unique_counts",
    "unique_inverse",
    "unique_values",
]

