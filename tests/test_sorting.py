"""Sorting, searching and sets (lazytensor/sorting.py) against NumPy (stable sorts, searchsorted, unique)
and torch (descending order, PyTorch's sort), on every dtype, with NaN, signed zeros, ties, size 0 and
non-contiguous inputs; on the CPU and (LT_DEVICE=cuda TRITON_INTERPRET=1) on Triton."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import lazytensor as lt
from conftest import ALL_DTYPES, HALF_DTYPES, check, inputs, layout, random_array
from lazytensor.kernels import bounds
from lazytensor.kernels.ir import Sort
from lazytensor.kernels.llvm import runtime
from lazytensor.kernels.llvm.sort import RADIX_MIN_PER_DIGIT, radix

DTYPES = ALL_DTYPES + HALF_DTYPES


def keys(shape: tuple[int, ...], dtype: lt.DType, seed: int) -> np.ndarray:
    """Data with ties (few distinct values), and for floats NaN, infinities and both zeros."""
    rng = np.random.default_rng(seed)
    if dtype == lt.bool_:
        return rng.random(shape) < 0.5
    a = rng.integers(-4, 5, shape).astype(np.float64)
    if dtype.is_float:
        flat = a.reshape(-1)
        flat[rng.random(flat.size) < 0.15] = np.nan
        flat[rng.random(flat.size) < 0.1] = -0.0
        flat[rng.random(flat.size) < 0.05] = np.inf
        flat[rng.random(flat.size) < 0.05] = -np.inf
        return a.astype(np.float32 if dtype in HALF_DTYPES else dtype.name)
    return (a if dtype.is_signed else np.abs(a)).astype(dtype.name)


def as_numpy(x: lt.Tensor) -> np.ndarray:
    return np.asarray(x.float().numpy() if x.dtype in HALF_DTYPES else x.numpy())


def same_bits(got: lt.Tensor, want: np.ndarray) -> None:
    """`got` is `want` bit for bit: its dtype, and each -0.0, 0.0 and NaN payload where `want` has it."""
    g = got.numpy()
    assert g.dtype == want.dtype and g.shape == want.shape, (g.dtype, g.shape, want.dtype, want.shape)
    bits = np.dtype(f"u{max(1, want.dtype.itemsize)}")
    np.testing.assert_array_equal(g.view(bits), np.ascontiguousarray(want).view(bits))


def descending_order(a: np.ndarray, axis: int) -> np.ndarray:
    """NumPy's stable order, descending (NaN first, equal keys in their order)."""
    rev = np.flip(a, axis)
    return a.shape[axis] - 1 - np.flip(np.argsort(rev, axis=axis, kind="stable"), axis)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shape,axis", [((37,), 0), ((4, 9), 1), ((4, 9), 0), ((3, 5, 6), 1), ((0, 5), 1),
                                        ((5, 0), 1), ((1,), 0), ((2, 130), -1)])
def test_argsort_and_sort_match_numpy(shape, axis, dtype):
    arr = keys(shape, dtype, seed=sum(shape))
    for kind, x, _ in inputs(shape, lt.float32 if dtype in HALF_DTYPES else dtype, seed=0):
        x = lt.asarray(arr).cast(dtype) if kind == "contiguous" else \
            lt.asarray(np.flip(arr, -1).copy()).cast(dtype).flip(-1)
        a = as_numpy(x)
        want = np.argsort(a, axis=axis, kind="stable")
        check(x.argsort(axis=axis), want.astype(np.int64))
        check(lt.argsort(x, axis=axis, descending=True), descending_order(a, axis).astype(np.int64))
        got = lt.sort(x, axis=axis)
        assert got.dtype == x.dtype
        np.testing.assert_array_equal(as_numpy(got), np.take_along_axis(a, want, axis))
        if dtype not in HALF_DTYPES:
            same_bits(got, np.take_along_axis(a, want, axis))
            same_bits(lt.sort(x, axis=axis, descending=True), np.take_along_axis(a, descending_order(a, axis), axis))


def test_sort_0d_and_pytorch_spelling():
    check(lt.asarray(np.array(3.0)).argsort(), np.array(0, np.int64))
    arr = keys((3, 8), lt.float32, seed=1)
    values, indices = lt.asarray(arr).sort(dim=1, descending=True)
    tv, ti = torch.tensor(arr).sort(dim=1, descending=True, stable=True)
    check(values, tv)
    check(indices, ti)


def test_a_sort_is_a_kernel_on_the_device_that_sorts_the_values_themselves():
    """The values alone (NumPy's sort) are the kernel's output; PyTorch's (values, indices) are the positions
    and a gather of the keys by them."""
    x = lt.asarray(np.random.default_rng(2).random((4, 50), dtype=np.float32))
    items = lt.schedule((x * 2).sort(axis=1))
    kinds = [type(item.kernel).__name__ for item in items]
    assert kinds == ["Kernel", "Sort"], kinds  # the keys computed, sorted
    sort = items[1].kernel
    assert (sort.rows, sort.n, sort.descending, sort.values, sort.buffers[0].dtype) == (4, 50, False, True, lt.float32)
    items = lt.schedule(*(x * 2).sort(dim=1))
    kinds = [type(item.kernel).__name__ for item in items]
    assert kinds.count("Sort") == 1 and len(items) == 3, kinds  # the keys computed, sorted, gathered
    (sort,) = [item.kernel for item in items if isinstance(item.kernel, Sort)]
    assert (sort.values, sort.buffers[0].dtype) == (False, lt.int64)


def test_the_gradient_of_sorted_values_goes_back_where_each_was():
    from test_autograd import check_grads
    arr = keys((3, 40), lt.float32, seed=4)
    arr[np.isnan(arr)] = 2.0
    check_grads(lambda x: lt.sort(x, axis=1), lambda t: t.sort(dim=1, stable=True)[0], [arr],
                kinds=("contiguous", "transposed"))
    check_grads(lambda x: lt.sort(x, axis=0, descending=True),
                lambda t: t.sort(dim=0, descending=True, stable=True)[0], [arr])


def test_large_rows_sort():
    rng = np.random.default_rng(3)
    a = rng.standard_normal(5000).astype(np.float32)
    a[rng.integers(0, 5000, 500)] = 0.5  # ties
    check(lt.asarray(a).argsort(), np.argsort(a, kind="stable").astype(np.int64))


def radix_keys(n: int, dtype: lt.DType, seed: int) -> np.ndarray:
    """Four rows of `n` keys (the radix sort's cases): few distinct values, the dtype's extremes among them
    (ties); all equal (no digit to move); any values (any bit pattern of a float: NaN of either sign and any
    payload, subnormals); and ties that differ in one or two digits (an odd number of passes)."""
    rng = np.random.default_rng(seed)
    if dtype == lt.bool_:
        return np.stack([rng.random(n) < 0.5, np.ones(n, bool), rng.random(n) < 0.9, rng.random(n) < 0.1])
    storage = np.dtype(np.float32 if dtype in HALF_DTYPES else dtype.name)
    if dtype.is_float:
        tiny = np.finfo(storage).smallest_subnormal
        special = np.array([np.nan, -np.nan, 0.0, -0.0, np.inf, -np.inf, tiny, -tiny, np.finfo(storage).max,
                            -np.finfo(storage).max, 1.0, -1.0, 1.5], storage)
        bits = np.dtype(f"u{storage.itemsize}")
        anything = rng.integers(0, np.iinfo(bits).max, n, dtype=bits, endpoint=True).view(storage)
        near = (1 + rng.integers(0, 40, n) / 64).astype(storage)
    else:
        info = np.iinfo(storage)
        special = np.array([info.min, info.min + 1, info.max, info.max - 1, 0, 1, info.max // 2, info.max // 2 + 1,
                            *([-1, -2] if dtype.is_signed else [])], storage)
        anything = rng.integers(info.min, info.max, n, dtype=storage, endpoint=True)
        near = rng.integers(0, 40, n).astype(storage) * (3 if dtype.itemsize == 1 else 257)
    return np.stack([rng.choice(special, n), np.full(n, special[3]), anything, near])


@pytest.mark.parametrize("dtype", DTYPES + [lt.uint16, lt.uint32, lt.uint64], ids=str)
def test_radix_sort_of_long_rows_matches_numpy(dtype):
    """Rows long enough for the CPU's radix sort: every key dtype, its extremes, NaN, zeros of both signs and
    infinities, many ties (stability), all-equal rows, ascending and descending."""
    arr = radix_keys(600, dtype, seed=10)
    x = lt.asarray(arr).cast(dtype)
    (sort,) = [item.kernel for item in lt.schedule(x.argsort()) if isinstance(item.kernel, Sort)]
    assert radix(sort)
    a = as_numpy(x)
    want = np.argsort(a, axis=1, kind="stable")
    check(x.argsort(), want.astype(np.int64))
    check(lt.argsort(x, descending=True), descending_order(a, 1).astype(np.int64))
    np.testing.assert_array_equal(as_numpy(lt.sort(x)), np.take_along_axis(a, want, 1))
    if dtype not in HALF_DTYPES:
        same_bits(lt.sort(x), np.take_along_axis(a, want, 1))
        same_bits(lt.sort(x, descending=True), np.take_along_axis(a, descending_order(a, 1), 1))


@pytest.mark.parametrize("dtype", [lt.int8, lt.uint16, lt.float32, lt.int64], ids=str)
def test_rows_either_side_of_the_radix_threshold_shared_among_threads(dtype, monkeypatch):
    """Rows one key short of the radix sort's threshold (merge sorted), at it and one past it, many of them
    shared among three threads, checked: every address the radix sort makes from its counts is tested."""
    monkeypatch.setattr(bounds, "CHECK", True)
    monkeypatch.setenv("LT_NUM_THREADS", "3")
    monkeypatch.setattr(runtime, "PARALLEL_MIN_WORK", 1)
    least = RADIX_MIN_PER_DIGIT * dtype.itemsize
    for n in (least - 1, least, least + 1):
        arr = np.concatenate([radix_keys(n, dtype, seed=n)] * 50)
        x = lt.asarray(arr).cast(dtype)
        (sort,) = [item.kernel for item in lt.schedule(x.argsort()) if isinstance(item.kernel, Sort)]
        assert radix(sort) == (n >= least)
        check(x.argsort(), np.argsort(arr, axis=1, kind="stable").astype(np.int64))
        same_bits(x.sort(), np.take_along_axis(arr, np.argsort(arr, axis=1, kind="stable"), 1))
        same_bits(x.sort(descending=True), np.take_along_axis(arr, descending_order(arr, 1), 1))
        check(lt.argsort(x, descending=True), descending_order(arr, 1).astype(np.int64))


@pytest.mark.parametrize("dtype", DTYPES + [lt.uint16, lt.uint64], ids=str)
def test_topk_of_long_rows_is_the_stable_sorts_first_k(dtype, monkeypatch):
    """k far below the row's length: the partial sort (`Sort.first`: on the CPU a heap of the k best) gives the
    stable sort's first k positions, and their values bit for bit: every key dtype, its extremes, NaN, zeros of
    both signs, ties, and rows already in either order (where every key enters the heap); along either axis,
    transposed, shared among threads and checked."""
    monkeypatch.setattr(bounds, "CHECK", True)
    monkeypatch.setenv("LT_NUM_THREADS", "3")
    monkeypatch.setattr(runtime, "PARALLEL_MIN_WORK", 1)
    rows = radix_keys(300, dtype, seed=12)
    arr = np.concatenate([rows, np.sort(rows, 1), np.sort(rows, 1)[:, ::-1]])
    x = lt.asarray(arr).cast(dtype)
    a = as_numpy(x)
    for k in (1, 5, 18):
        for largest in (True, False):
            order = (descending_order(a, 1) if largest else np.argsort(a, axis=1, kind="stable"))[:, :k]
            got = x.topk(k, largest=largest)
            assert [item.kernel.first for item in lt.schedule(got.indices) if isinstance(item.kernel, Sort)] == [k]
            check(got.indices, order.astype(np.int64))
            if dtype not in HALF_DTYPES:
                same_bits(got.values, np.take_along_axis(arr, order, 1))
            column = lt.asarray(np.ascontiguousarray(arr.T)).cast(dtype).topk(k, dim=0, largest=largest)
            check(column.indices, order.T.astype(np.int64))
    with pytest.raises(ValueError, match="first"):
        Sort("", (), 2, 4, False, first=5)


def test_topk_of_long_rows_differentiates_as_torch():
    a = random_array((3, 90), lt.float64, seed=13)
    x, t = lt.asarray(a).requires_grad_(), torch.tensor(a, requires_grad=True)
    got = x.topk(4)
    assert [item.kernel.first for item in lt.schedule(got.indices) if isinstance(item.kernel, Sort)] == [4]
    (got.values * lt.asarray(np.arange(4.0))).sum().backward()
    (t.topk(4).values * torch.arange(4.0, dtype=torch.float64)).sum().backward()
    check(x.grad, t.grad)


@pytest.mark.parametrize("dtype", [lt.float32, lt.float64, lt.int32, lt.int64, lt.uint8, lt.float16], ids=str)
@pytest.mark.parametrize("side", ["left", "right"])
def test_searchsorted_matches_numpy(side, dtype):
    base = lt.float32 if dtype in HALF_DTYPES else dtype
    sorted_ = np.sort(keys((23,), dtype, seed=4))
    queries = keys((5, 6), dtype, seed=5)
    got = lt.searchsorted(lt.asarray(sorted_).cast(dtype), lt.asarray(queries).cast(dtype), side=side)
    check(got, np.searchsorted(sorted_, queries, side=side).astype(np.int64))
    perm = np.random.default_rng(6).permutation(23)
    shuffled = sorted_[perm]
    sorter = np.argsort(shuffled, kind="stable")
    got = lt.searchsorted(lt.asarray(shuffled), lt.asarray(queries), side=side, sorter=lt.asarray(sorter))
    check(got, np.searchsorted(shuffled, queries, side=side, sorter=sorter).astype(np.int64))
    check(lt.searchsorted(lt.zeros(0, dtype=base), lt.asarray(queries)), np.zeros((5, 6), np.int64))


@pytest.mark.parametrize("dtype", [lt.float32, lt.float64, lt.int64, lt.int8, lt.uint8, lt.bool_], ids=str)
def test_unique_functions_match_numpy(dtype):
    for shape in [(17,), (4, 6), (0,), (1,)]:
        arr = keys(shape, dtype, seed=7)
        for kind, x, _ in inputs(shape, dtype, seed=7):
            x = lt.asarray(arr) if kind == "contiguous" else lt.asarray(arr.T.copy()).T if arr.ndim == 2 else x
            a = np.asarray(x.numpy())
            values, index, inverse, counts = np.unique(a, return_index=True, return_inverse=True, return_counts=True,
                                                       equal_nan=False)
            got = lt.unique_all(x)
            np.testing.assert_array_equal(got.values.numpy(), values)
            np.testing.assert_array_equal(got.indices.numpy(), index)
            np.testing.assert_array_equal(got.inverse_indices.numpy(), inverse.reshape(a.shape))
            np.testing.assert_array_equal(got.counts.numpy(), counts)
            np.testing.assert_array_equal(lt.unique_values(x).numpy(), values)
            assert lt.unique_counts(x).counts.dtype == lt.int64
            np.testing.assert_array_equal(lt.unique_inverse(x).inverse_indices.numpy(), inverse.reshape(a.shape))


@pytest.mark.parametrize("dtype", [lt.float32, lt.float64, lt.int64, lt.uint8, lt.bool_], ids=str)
def test_numpys_unique_with_its_options(dtype):
    """`lt.unique` is NumPy's: the tuple it asks for, NaNs one value (equal_nan=True, NumPy's default) or each
    its own, the inverse of x's shape."""
    for shape in [(17,), (4, 6), (0,), (1,)]:
        arr = keys(shape, dtype, seed=8)
        for kind, x, _ in inputs(shape, dtype, seed=8):
            x = lt.asarray(arr) if kind == "contiguous" else lt.asarray(arr.T.copy()).T if arr.ndim == 2 else x
            a = np.asarray(x.numpy())
            for equal_nan in (True, False):
                expected = np.unique(a, return_index=True, return_inverse=True, return_counts=True, equal_nan=equal_nan)
                got = lt.unique(x, return_index=True, return_inverse=True, return_counts=True, equal_nan=equal_nan)
                for g, e in zip(got, expected, strict=True):
                    check(g, e)
            check(lt.unique(x), np.unique(a))
            for g, e in zip(lt.unique(x, return_counts=True), np.unique(a, return_counts=True), strict=True):
                check(g, e)


def test_sort_and_argsort_of_the_flattened_tensor():
    arr = keys((4, 6), lt.float32, seed=9)
    x = lt.asarray(arr).T
    check(lt.sort(x, axis=None), np.sort(arr.T, axis=None))
    check(x.argsort(axis=None), np.argsort(arr.T, axis=None, kind="stable"))
    check(lt.argsort(x, axis=None, descending=True), descending_order(arr.T.reshape(-1), 0).astype(np.int64))


def test_unique_counts_each_nan_and_one_zero():
    a = np.array([np.nan, 0.0, -0.0, np.nan, 1.0], np.float32)
    got = lt.unique_counts(lt.asarray(a))
    np.testing.assert_array_equal(got.values.numpy(), [0.0, 1.0, np.nan, np.nan])
    np.testing.assert_array_equal(got.counts.numpy(), [2, 1, 1, 1])


@pytest.mark.parametrize("dtype", [lt.float32, lt.int32, lt.int8, lt.float64], ids=str)
def test_isin_matches_numpy(dtype):
    a, b = keys((4, 7), dtype, seed=8), keys((9,), dtype, seed=9)
    for invert in (False, True):
        check(lt.isin(lt.asarray(a), lt.asarray(b), invert=invert), np.isin(a, b, invert=invert))
    check(lt.isin(lt.asarray(a), lt.zeros(0, dtype=dtype)), np.zeros((4, 7), bool))
    check(lt.isin(lt.asarray(np.array([1, 2, 7])), lt.asarray(np.array([[7.0, 2.5]]))), np.array([False, False, True]))


def test_sorting_inside_jit():
    """A sort has no data-dependent shape: it is recorded and replayed; unique's is, an error."""
    @lt.jit
    def f(x):
        return lt.sort(x * 2), x.argsort()

    for seed in range(4):
        a = random_array((3, 11), lt.float32, seed=seed)
        values, order = f(lt.asarray(a))
        np.testing.assert_array_equal(values.numpy(), np.sort(a * 2))
        np.testing.assert_array_equal(order.numpy(), np.argsort(a, kind="stable"))
    assert lt.stats().replays > 0

    @lt.jit
    def g(x):
        return lt.unique_values(x)

    with pytest.raises(lt.JitError):
        g(lt.asarray(np.array([1.0, 1.0])))


# ---- NumPy's set operations, lexsort and partition --------------------------------------------------------------


@pytest.mark.parametrize("dtype", [lt.int32, lt.float32, lt.uint8], ids=str)
def test_set_operations_lexsort_and_partition_match_numpy(dtype):
    a = random_array((4, 6), dtype, seed=81) // (1 if dtype.is_float else 7)
    b = np.concatenate([a[0, :3], random_array((5,), dtype, seed=82)])
    if dtype.is_float:
        b = np.append(b, np.nan).astype(dtype.name)
    x, arr = layout(a, "transposed", oracle="numpy")  # contiguous tensors: tests/test_interop.py's cases
    check(lt.union1d(x, lt.asarray(b)), np.union1d(arr, b))
    check(lt.intersect1d(x, lt.asarray(b)), np.intersect1d(arr, b))
    check(lt.setdiff1d(x, lt.asarray(b)), np.setdiff1d(arr, b))
    check(lt.setdiff1d(x, lt.asarray(b[:0])), np.setdiff1d(arr, b[:0]))
    check(lt.lexsort([x[0], x[1], x[2]]), np.lexsort([arr[0], arr[1], arr[2]]))
    check(lt.lexsort(x, axis=0), np.lexsort(arr, axis=0))
    for kth, axis in ((2, -1), ([0, 3], 0), (-1, None)):
        want = np.partition(arr, kth, axis=axis)
        got = lt.partition(x, kth, axis=axis)
        # NumPy leaves the order on either side of the kth values unspecified: the kth values are what a
        # partition promises
        picked, along = np.atleast_1d(kth), -1 if axis is None else axis
        np.testing.assert_array_equal(np.take(got.numpy(), picked, along), np.take(want, picked, along))
        order = lt.argpartition(x, kth, axis=axis).numpy()
        arranged = np.take_along_axis(arr.reshape(-1) if axis is None else arr, order, along)
        np.testing.assert_array_equal(np.take(arranged, picked, along), np.take(want, picked, along))
    with pytest.raises(ValueError, match="kth"):
        lt.partition(lt.asarray(a), 6)


@pytest.mark.parametrize("right", [False, True])
def test_bucketize_is_torchs(right):
    boundaries = np.array([-1.0, 0.0, 0.0, 1.5, 2.0], np.float32)
    for kind, x, t in inputs((3, 4), lt.float32, seed=30):
        rounded, t_rounded = x.round(), t.round().contiguous()  # values on the boundaries too (torch warns of views)
        check(lt.bucketize(rounded, boundaries, right=right), torch.bucketize(t_rounded, torch.tensor(boundaries),
                                                                             right=right))
        check(lt.bucketize(x, lt.asarray(boundaries), right=right, out_int32=True),
              torch.bucketize(t.contiguous(), torch.tensor(boundaries), right=right, out_int32=True))
    ints = np.array([[0, 5, 2], [-3, 1, 9]])
    check(lt.bucketize(ints, [0, 2, 4], right=right), torch.bucketize(torch.tensor(ints), torch.tensor([0, 2, 4]),
                                                                      right=right))
    check(lt.bucketize(lt.asarray(1.5), boundaries, right=right),
          torch.bucketize(torch.tensor(1.5), torch.tensor(boundaries), right=right))
    check(lt.bucketize(lt.zeros((0, 2)), boundaries), torch.bucketize(torch.zeros((0, 2)), torch.tensor(boundaries)))
    check(lt.bucketize(lt.asarray([1.0, float("nan")]), lt.zeros(0)),
          torch.bucketize(torch.tensor([1.0, float("nan")]), torch.zeros(0)))


def check_all(got, expected):
    assert len(got) == len(expected)
    for ours, theirs in zip(got, expected, strict=True):
        check(ours, theirs)


@pytest.mark.parametrize("dtype", [lt.float32, lt.int64, lt.bool_, lt.float16])
def test_unique_consecutive_is_torchs(dtype):
    arr = np.round(random_array((4, 6), lt.float32, seed=31, low=-1, high=1)).astype(dtype.name)
    arr[1] = arr[0]  # equal consecutive rows too
    for kind in ("contiguous", "transposed", "flipped"):
        x, t = layout(arr, kind)
        check(lt.unique_consecutive(x), torch.unique_consecutive(t))
        check_all(x.unique_consecutive(return_inverse=True, return_counts=True),
                  torch.unique_consecutive(t, return_inverse=True, return_counts=True))
        for dim in (0, 1, -1):
            check_all(lt.unique_consecutive(x, return_counts=True, dim=dim),
                      torch.unique_consecutive(t, return_counts=True, dim=dim))
            # torch's positional return_inverse returns the counts: by keyword
            check_all(x.unique_consecutive(True, dim=dim), torch.unique_consecutive(t, return_inverse=True, dim=dim))


def test_unique_consecutive_of_nans_0d_and_empty():
    x = np.array([1.0, 1.0, np.nan, np.nan, 2.0, 2.0, 1.0])
    check_all(lt.unique_consecutive(x, return_inverse=True, return_counts=True),
              torch.unique_consecutive(torch.tensor(x), return_inverse=True, return_counts=True))
    check_all(lt.unique_consecutive(lt.asarray(3.0), return_inverse=True, return_counts=True),
              torch.unique_consecutive(torch.tensor(3.0), return_inverse=True, return_counts=True))
    for dim in (None, 0):
        check_all(lt.unique_consecutive(lt.zeros((0, 3)), return_inverse=True, return_counts=True, dim=dim),
                  torch.unique_consecutive(torch.zeros((0, 3)), return_inverse=True, return_counts=True, dim=dim))
    # torch raises for these: three empty slices are equal, one run
    check_all(lt.unique_consecutive(lt.zeros((0, 3)), return_inverse=True, return_counts=True, dim=1),
              (np.zeros((0, 1), np.float32), np.zeros(3, np.int64), np.array([3])))


@pytest.mark.parametrize("dtype", [lt.int32, lt.float32, lt.float64, lt.bool_])
def test_mode_is_torchs(dtype):
    """Values and indices: the smallest of the most frequent values, at its last occurrence (PyTorch's CPU)."""
    arr = random_array((5, 7, 3), lt.int32, seed=32).__mod__(4).astype(dtype.name)
    for kind in ("contiguous", "transposed", "strided"):
        x, t = layout(arr, kind)
        for dim in (0, 1, -1):
            check_all(x.mode(dim), t.mode(dim))
            check_all(lt.mode(x, dim=dim, keepdim=True), torch.mode(t, dim=dim, keepdim=True))
    check_all(lt.mode(lt.asarray([[3, 1, 1, 3, 2, 1, 3]])), torch.mode(torch.tensor([[3, 1, 1, 3, 2, 1, 3]])))
    check_all(lt.asarray(np.float32(2.5)).mode(), torch.tensor(2.5).mode())
    # each NaN counts once (torch's mode of this is 1: its NaNs disturb its count)
    check_all(lt.mode(np.array([2.0, np.nan, np.nan, 1.0, 2.0])), (np.float64(2.0), np.int64(4)))
    check_all(lt.mode(np.array([np.nan, np.nan, 1.0])), (np.float64(1.0), np.int64(2)))
    check_all(lt.mode(lt.zeros((0, 3)), 1), torch.mode(torch.zeros((0, 3)), 1))
    with pytest.raises(lt.ShapeError):
        lt.mode(lt.zeros((2, 0)), 1)


def test_mode_gradient_goes_to_the_index():
    arr = np.array([[1.0, 2.0, 1.0, 3.0], [4.0, 4.0, 5.0, 5.0]])
    x, t = lt.asarray(arr).requires_grad_(), torch.tensor(arr, requires_grad=True)
    (lt.mode(x).values * lt.asarray([2.0, 3.0])).sum().backward()
    (torch.mode(t).values * torch.tensor([2.0, 3.0])).sum().backward()
    check(x.grad, t.grad)


@pytest.mark.parametrize("dtype", [lt.int32, lt.float64, lt.uint8])
def test_numpys_setxor1d_and_in1d(dtype):
    a, b = random_array((4, 5), dtype, seed=90, low=0, high=9), random_array((7,), dtype, seed=91, low=0, high=9)
    for kind, x, t in inputs((4, 5), dtype, seed=90):
        check(lt.setxor1d(x, lt.asarray(b)), np.setxor1d(t.numpy(), b))
        check(lt.in1d(x, lt.asarray(b)), np.isin(t.numpy().ravel(), b))
        check(lt.in1d(x, lt.asarray(b), invert=True), np.isin(t.numpy().ravel(), b, invert=True))
    check(lt.setxor1d(lt.asarray(a), lt.asarray(a[:0])), np.setxor1d(a, a[:0]))
    check(lt.setxor1d(lt.asarray(a), lt.asarray(a)), np.setxor1d(a, a))
