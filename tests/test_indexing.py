"""Indexing by data (lazytensor/indexing.py): gathers, scatters, advanced and boolean indexing, writes,
nonzero. NumPy is the oracle for NumPy's indexing and functions, torch for PyTorch's gather and scatter
family and for gradients. Every case runs on the CPU and (LT_DEVICE=cuda TRITON_INTERPRET=1) on Triton."""
from __future__ import annotations

import re

import numpy as np
import pytest
import torch

import lazytensor as lt
from conftest import ALL_DTYPES, HALF_DTYPES, LAYOUTS, TORCH_DTYPES, check, inputs, layout, random_array
from lazytensor.kernels import bounds, ir
from lazytensor.kernels.ir import Scatter
from lazytensor.kernels.llvm import compile_kernel

DTYPES = ALL_DTYPES + HALF_DTYPES


def numpy_of(x: lt.Tensor) -> np.ndarray:
    """The values, 16-bit floats as float32 (exact), to index with NumPy."""
    return np.asarray(x.float().numpy() if x.dtype in HALF_DTYPES else x.numpy())


def check_numpy(got: lt.Tensor, want: np.ndarray, dtype: lt.DType) -> None:
    assert got.dtype == dtype, f"dtype {got.dtype} != {dtype}"
    np.testing.assert_array_equal(numpy_of(got), want)


# ---- NumPy's indexing ---------------------------------------------------------------------------------------

MASK = random_array((4, 5), lt.bool_, seed=3)
INDEXES = [
    [2, 0, 2], [[0, 3], [1, -1]], np.array([-4, 3]), (slice(None), [0, -1, 2]), ([0, 1], slice(None), 1),
    (1, slice(None), [0, 1]), (None, [0, 1], slice(None), [1, 2]), (Ellipsis, [0, 2]), ([[1], [2]], [0, 4]),
    ([0, 2], slice(3, None, -1)), (slice(None, None, -2), [1, 1]), MASK, (MASK, [5, 0, 2, 0, 1, 3][:1]), (0, MASK[0]),
    (slice(1, 3), MASK[0]), [True, False, True, False], np.array([], dtype=np.int64), [], (Ellipsis, [[2]]),
    (True,), (False, 1), (None, True, slice(None), 0),
]


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("index", range(len(INDEXES)))
def test_advanced_indexing_matches_numpy(index, dtype):
    idx = INDEXES[index]
    arr = random_array((4, 5, 6), dtype if dtype not in HALF_DTYPES else lt.float32, seed=index)
    for kind in LAYOUTS:
        x, _ = layout(arr, kind)
        x = x.cast(dtype)
        want = numpy_of(x)[idx]
        lt_idx = tuple(lt.asarray(i) if isinstance(i, np.ndarray) and i.dtype == np.bool_ else i
                       for i in (idx if isinstance(idx, tuple) else (idx,)))
        check_numpy(x[lt_idx], want, dtype)


def test_indexing_with_lazy_index_tensors_and_0d_indexes():
    arr = random_array((5, 4), lt.float32, seed=1)
    x = lt.asarray(arr)
    i = lt.asarray(np.array([4, 0, 2])) * 1  # computed, not realized: read in the gather's kernel
    check(x[i], arr[[4, 0, 2]])
    check(x[lt.asarray(np.array(3))], arr[3])
    check(x[lt.asarray(np.array(3)), [1, 2]], arr[3, [1, 2]])
    mask = x > 0  # a lazy mask: its count is computed first
    check(x[mask], arr[arr > 0])
    check(x[:, (x > 0).all(0)], arr[:, (arr > 0).all(0)])


def test_advanced_indexing_of_0d_and_empty_tensors():
    z = lt.asarray(np.array(2.5, np.float32))
    check(z[True], np.array(2.5, np.float32)[True])
    check(z[None, False], np.array(2.5, np.float32)[None, False])
    e = lt.zeros((0, 3))
    check(e[[]], np.zeros((0, 3), np.float32)[[]])
    check(e[:, [0, 2]], np.zeros((0, 2), np.float32))
    check(lt.zeros((3, 0))[[1, 2]], np.zeros((2, 0), np.float32))


def test_one_integer_array_index_is_a_take_along_its_axis():
    """`x[i]`, `x[:, i]`, `x[..., i]` with every other axis whole gather whole slices along the others, as
    `take` does (an embedding's rows, each read as one run of memory), with NumPy's values."""
    data = random_array((6, 5, 4), lt.float32, seed=40)
    x = lt.asarray(data)
    for index in (np.array([[3, -1], [0, 2]]), np.array(-2), np.zeros(0, np.int64), np.array([3, 3, 0])):
        i = lt.asarray(index)
        for axis, got, want in ((0, x[i], data[index]), (1, x[:, i], data[:, index]), (2, x[..., i], data[..., index]),
                                (1, x.transpose(2, 0, 1)[:, i], data.transpose(2, 0, 1)[:, index])):
            check(got, want)
        ours = [item.kernel.body_text() for item in lt.schedule(x[:, i])]
        assert ours == [item.kernel.body_text() for item in lt.schedule(x.take(i, axis=1))]


def test_index_out_of_bounds_raises_at_the_realize_that_computes_it():
    x = lt.asarray(np.arange(6.0).reshape(2, 3))
    bad = x[[0, 5]]  # a list is data too: checked where it is computed
    with pytest.raises(IndexError, match=r"index: an index is outside \[-2, 2\) \(axis 0 of size 2\)"):
        bad.numpy()
    bad = x[lt.asarray(np.array([1, -3, 0]))]
    with pytest.raises(IndexError, match=r"index: an index is outside \[-2, 2\)"):
        bad.numpy()
    bad = x[lt.asarray(np.array([1, 0])), lt.asarray(np.array([0, 3]))]  # several arrays: one flat position
    with pytest.raises(IndexError, match="index: an index is out of bounds"):
        bad.numpy()
    with pytest.raises(IndexError, match="out of bounds"):
        x[0, 3]
    with pytest.raises(IndexError, match="boolean index"):
        x[lt.asarray(np.ones(3, bool))]
    with pytest.raises(IndexError, match="integers or booleans"):
        x[lt.asarray(np.array([0.0]))]


@pytest.mark.parametrize("index_dtype", ["uint8", "int8", "uint16", "int16", "uint32", "uint64"])
def test_narrow_and_unsigned_index_arrays_index_as_numpy(index_dtype):
    """An index of any integer dtype is range-checked against bounds that its dtype may not hold (-n for an
    unsigned index, n = 300 for an 8-bit one): x[i], x[:, i], x[i, j], take and gather as NumPy and torch."""
    data = random_array((2, 300), lt.float32, seed=41)
    x = lt.asarray(data)
    index = np.array([0, 5, 100, 1, 2], index_dtype)
    i = lt.asarray(index)
    rows = lt.asarray(index % 2)
    check(x[:, i], data[:, index])
    check(x[..., i], data[..., index])
    check(x[rows], data[index % 2])
    check(x[rows, i], data[index % 2, index])
    check(x.take(i, axis=1), data.take(index, axis=1))
    check(x.gather(1, i.reshape(1, 5)), data[:1, index[None]][0])
    with pytest.raises(IndexError, match=r"index: an index is outside \[-2, 2\)"):
        x[lt.asarray(np.array([0, 2], index_dtype))].numpy()


# ---- take, take_along_axis ----------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_take_matches_numpy(dtype):
    arr = random_array((3, 4, 5), lt.float32 if dtype in HALF_DTYPES else dtype, seed=4)
    for _, x, _ in inputs((3, 4, 5), lt.float32 if dtype in HALF_DTYPES else dtype, seed=4):
        x = x.cast(dtype)
        a = numpy_of(x)
        for axis, idx in [(None, [59, -1, 0]), (0, [2, 2, -3]), (1, np.array([[3, 0], [1, -4]])), (2, [4]),
                          (-1, np.array([], np.int64))]:
            check_numpy(lt.take(x, lt.asarray(np.asarray(idx, np.int64)), axis=axis), np.take(a, idx, axis=axis), dtype)
    assert arr.shape == (3, 4, 5)
    check(lt.take(lt.asarray(np.array(7, np.int32)), lt.asarray(np.array([0, 0]))), np.array([7, 7], np.int32))
    with pytest.raises(IndexError, match=r"take: an index is outside \[-4, 4\) \(axis 1 of size 4\)"):
        lt.take(lt.asarray(arr), lt.asarray(np.array([4])), axis=1).numpy()


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_long_gathers_match_numpy(dtype):
    """Gathers long enough that the CPU runs most of them as vector gathers (the output overlaps no input, which
    the kernel tells LLVM) and the rest one by one: every dtype, negative indexes, every layout of the source,
    strided and broadcast indexes, indexes of another int dtype, and none."""
    rng = np.random.default_rng(31)
    ids = rng.integers(-41, 41, 2 * 53)
    base = lt.float32 if dtype in HALF_DTYPES else dtype
    for _, x, _ in inputs((41, 3), base, seed=31):
        x = x.cast(dtype)
        a = numpy_of(x)
        strided = lt.asarray(ids)[::2]
        check_numpy(x[strided], a[ids[::2]], dtype)
        check_numpy(x[:, 1][lt.asarray(ids.astype(np.int16))], a[:, 1][ids], dtype)
        rows = np.broadcast_to(ids[:35, None] % 41, (35, 3))
        wide = lt.asarray(ids[:35] % 41).reshape(35, 1).broadcast_to((35, 3))
        check_numpy(lt.take_along_axis(x, wide, axis=0), np.take_along_axis(a, rows, 0), dtype)
        check_numpy(x[lt.asarray(np.array([], np.int64))], a[np.array([], np.int64)], dtype)


@pytest.mark.parametrize("dtype", [lt.float32, lt.int64, lt.bool_, lt.float16], ids=str)
def test_take_along_axis_matches_numpy(dtype):
    base = lt.float32 if dtype in HALF_DTYPES else dtype
    for _, x, _ in inputs((4, 6), base, seed=5):
        x = x.cast(dtype)
        a = numpy_of(x)
        order = np.argsort(random_array((4, 6), lt.float32, seed=6), axis=1)
        check_numpy(lt.take_along_axis(x, lt.asarray(order), axis=1), np.take_along_axis(a, order, 1), dtype)
        rows = np.array([[3], [-1]])  # broadcast along axis 1, negative from the end
        check_numpy(x.take_along_axis(lt.asarray(rows[:, :1][:1]), axis=0), np.take_along_axis(a, rows[:1], 0), dtype)
        cols = np.array([[0, 5, -6]])
        check_numpy(x.take_along_axis(lt.asarray(cols), axis=-1), np.take_along_axis(a, np.broadcast_to(cols, (4, 3)), -1),
                    dtype)


# ---- writes ---------------------------------------------------------------------------------------------------

WRITES = [
    (1, 9.0), ((slice(None), 2), [1.0, 2.0, 3.0, 4.0]), ((slice(None, None, -2), slice(1, 4)), 7.0),
    (([0, 3],), [[1.0], [2.0]]), (([0, 0, 2], [1, 1, 4]), [5.0, 6.0, 7.0]), ((Ellipsis, [1, -1]), -3.0),
    ((slice(1, 3), [0, 2]), 8.0), (None, 1.0), ((None, 2), 4.0),
]


@pytest.mark.parametrize("dtype", [lt.float32, lt.float64, lt.int32, lt.uint8, lt.bool_, lt.bfloat16], ids=str)
@pytest.mark.parametrize("case", range(len(WRITES)))
def test_setitem_matches_numpy(case, dtype):
    index, value = WRITES[case]
    base = lt.float32 if dtype in HALF_DTYPES else dtype
    for kind in LAYOUTS:
        x, _ = layout(random_array((4, 5), base, seed=case), kind)
        x = x.cast(dtype)
        want = numpy_of(x).copy()
        want[index] = np.asarray(value).astype(want.dtype)
        x[index] = value
        check_numpy(x, want, dtype)


def test_setitem_with_masks_tensors_and_repeated_indices():
    arr = random_array((4, 5), lt.float32, seed=7)
    x = lt.asarray(arr.copy())
    want = arr.copy()
    x[x > 1] = 0.0
    want[want > 1] = 0.0
    check(x, want)
    mask = arr < -1
    x[lt.asarray(mask)] = lt.arange(int(mask.sum()), dtype=lt.float32)  # values in order, as NumPy
    want[mask] = np.arange(mask.sum(), dtype=np.float32)
    check(x, want)
    x[lt.asarray(np.array([1, 1, 1]))] = lt.asarray(np.array([[1.0], [2.0], [3.0]], np.float32))
    want[[1, 1, 1]] = [[1.0], [2.0], [3.0]]  # the last of repeated writes stays
    check(x, want)
    rows = lt.asarray(np.array([3, 0]))
    x[rows, 1:3] = x[rows, 1:3] * 10  # reads the old values, then writes
    want[[3, 0], 1:3] *= 10
    check(x, want)
    for flag in (True, False):  # 0-d masks, lazy: written where they hold, without reading them first
        x[1, lt.asarray(flag), 2:] = lt.asarray(np.array([-1.0, -2.0, -3.0], np.float32))
        want[1, np.array(flag), 2:] = [-1.0, -2.0, -3.0]
        check(x, want)
    z = lt.asarray(np.float32(2.5))
    z[lt.asarray(False)] = 1.0
    z[lt.asarray(True)] = z + 1
    z[lt.asarray(False)] = lt.zeros(0)  # as x[x > 0] = x[x > 0] * 2 of a 0-d x where it is not (array-api-extra)
    check(z, np.array(3.5, np.float32))
    with pytest.raises(lt.ShapeError, match=r"cannot broadcast a value of shape \(0,\) to \(1,\)"):
        z[lt.asarray(True)] = lt.zeros(0)
    with pytest.raises(lt.ShapeError, match=r"cannot broadcast a value of shape \(0,\) to \(1,\)"):
        x[0:1, 0] = lt.zeros(0)


def test_a_mask_axis_of_zero_selects_nothing_along_any_axis():
    """NumPy's (and the array API tests'): a boolean index's axis of 0 matches an indexed axis of any size."""
    for shape, mask_shape in (((1,), (0,)), ((5,), (0,)), ((2, 3), (2, 0)), ((2, 3), (0, 3)), ((2, 3, 4), (0,))):
        arr = random_array(shape, lt.float32, seed=1)
        mask = np.zeros(mask_shape, bool)
        check(lt.asarray(arr)[lt.asarray(mask)], arr[mask])
        x = lt.asarray(arr.copy())
        x[lt.asarray(mask)] = 7.0
        check(x, arr)
    for shape, mask_shape in (((5,), (3,)), ((2, 3), (2, 2))):
        with pytest.raises(IndexError, match="does not match the indexed axes"):
            lt.zeros(shape)[lt.zeros(mask_shape, dtype=lt.bool_)]
        with pytest.raises(IndexError, match="does not match the indexed axes"):
            lt.zeros(shape)[lt.zeros(mask_shape, dtype=lt.bool_)] = 1.0


@pytest.mark.parametrize("dtype", [lt.float64, lt.float32, lt.float16])
def test_a_python_number_written_into_a_float_tensor_is_rounded_once_to_its_dtype(dtype):
    """16777217.0 is exact in float64 and not in float32: it is not rounded through float32 on its way."""
    want = np.zeros(4, dtype.name)
    x = lt.zeros(4, dtype=dtype)
    for index, value in ((1, 16777217.0), ((), 3), (lt.asarray(np.array([True, False, False, True])), 2.5e-8)):
        x[index] = value
        want[index if not isinstance(index, lt.Tensor) else index.numpy()] = value
        check(x, want)


def test_a_write_changes_the_tensor_not_the_views_taken_before():
    x = lt.asarray(np.arange(6.0).reshape(2, 3))
    alias, row, t = x, x[0], x.T
    x[0, 0] = 100.0
    assert alias is x and alias.numpy()[0, 0] == 100
    check(row, np.array([0.0, 1.0, 2.0]))
    check(t, np.arange(6.0).reshape(2, 3).T)


def test_setitem_errors_and_leaves():
    x = lt.zeros((2, 3))
    with pytest.raises(lt.ShapeError):
        x[0] = lt.ones(4)
    with pytest.raises(lt.ShapeError):
        x[[0, 1]] = lt.ones((3, 2))
    w = lt.ones(3).requires_grad_()
    with pytest.raises(RuntimeError, match="leaf"):
        w[0] = 2.0
    with lt.no_grad():
        w[0] = 2.0
    check(w.detach(), np.array([2.0, 1.0, 1.0], np.float32))


def test_setitem_gradients_match_torch():
    arr, vals = random_array((4, 3), lt.float64, seed=8), random_array((2, 3), lt.float64, seed=9)
    x, v = lt.asarray(arr).requires_grad_(), lt.asarray(vals).requires_grad_()
    tx, tv = torch.tensor(arr, requires_grad=True), torch.tensor(vals, requires_grad=True)
    y, ty = x * 2, tx * 2
    y[[2, 0]] = v * v
    ty[[2, 0]] = tv * tv
    y[:, 1] = 0.5
    ty[:, 1] = 0.5
    up = random_array((4, 3), lt.float64, seed=10)
    (y * lt.asarray(up)).sum().backward()
    (ty * torch.tensor(up)).sum().backward()
    check(x.grad, tx.grad)
    check(v.grad, tv.grad)


# ---- PyTorch's gather and scatter family ----------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_gather_and_index_select_match_torch(dtype):
    base = lt.float32 if dtype in HALF_DTYPES else dtype
    idx = np.random.default_rng(11).integers(0, 5, (3, 2, 4))
    for _, x, t in inputs((4, 5, 6), base, seed=12):
        if dtype in HALF_DTYPES:
            x, t = x.cast(dtype), t.to({lt.float16: torch.float16, lt.bfloat16: torch.bfloat16}[dtype])
        check(x.gather(1, lt.asarray(idx)), t.gather(1, torch.tensor(idx)))
        check(x.gather(0, lt.asarray(idx % 4)), t.gather(0, torch.tensor(idx % 4)))
        check(x.index_select(2, lt.asarray(np.array([5, 0, 5]))), t.index_select(2, torch.tensor([5, 0, 5])))
    with pytest.raises(IndexError, match=r"gather: an index is outside \[0, 5\)"):
        x.gather(1, lt.asarray(idx - 1)).numpy()
    with pytest.raises(lt.ShapeError):
        x.gather(1, lt.asarray(np.zeros((5, 2, 4), np.int64)))


@pytest.mark.parametrize("dtype", [lt.float32, lt.float64, lt.int32, lt.int64, lt.int8, lt.uint8, lt.float16,
                                   lt.bfloat16], ids=str)
def test_scatter_family_matches_torch(dtype):
    tdt = {lt.float16: torch.float16, lt.bfloat16: torch.bfloat16}.get(dtype)
    base_arr = random_array((5, 4), lt.float32 if tdt else dtype, seed=13)
    src_arr = random_array((6, 4), lt.float32 if tdt else dtype, seed=14)
    idx = np.random.default_rng(15).integers(0, 5, (6, 3))
    x, s = lt.asarray(base_arr).cast(dtype), lt.asarray(src_arr).cast(dtype)
    t, ts = torch.tensor(base_arr), torch.tensor(src_arr)
    if tdt:
        t, ts = t.to(tdt), ts.to(tdt)
    check(x.scatter_add(0, lt.asarray(idx), s), t.scatter_add(0, torch.tensor(idx), ts))
    unique = np.stack([np.random.default_rng(16 + c).permutation(5)[:4] for c in range(3)], axis=1)
    check(x.scatter(0, lt.asarray(unique), s), t.scatter(0, torch.tensor(unique), ts))
    check(x.scatter(1, lt.asarray(idx[:5, :2] % 4), 3), t.scatter(1, torch.tensor(idx[:5, :2] % 4), 3))
    rows = np.array([4, 0, 4, 1, 0, 2])
    check(x.index_add(0, lt.asarray(rows), s), t.index_add(0, torch.tensor(rows), ts))
    if dtype.is_float:
        check(x.index_add(0, lt.asarray(rows), s, alpha=2.0), t.index_add(0, torch.tensor(rows), ts, alpha=2.0))
    with pytest.raises(IndexError, match="scatter_add: an index is outside"):
        x.scatter_add(0, lt.asarray(idx + 1), s).numpy()


@pytest.mark.parametrize("dtype", [lt.float32, lt.float64, lt.int32, lt.int64, lt.int8, lt.uint8, lt.float16], ids=str)
def test_scatter_multiply(dtype):
    """Folding by a product: the CPU's serial updates do it, Triton a compare-and-swap loop (no atomic product)."""
    x, t = lt.asarray(np.array([1, 2, 3])).cast(dtype), torch.tensor([1, 2, 3]).to(TORCH_DTYPES[dtype])
    at, up = np.array([2, 2, 0, 2]), np.array([2, 5, -1, 3])
    got = x.scatter(0, lt.asarray(at), lt.asarray(up).cast(dtype), reduce="multiply")
    check(got, t.scatter(0, torch.tensor(at), torch.tensor(up).to(t.dtype), reduce="multiply"))


def test_gather_and_scatter_gradients_match_torch():
    arr, src = random_array((4, 5), lt.float64, seed=17), random_array((3, 5), lt.float64, seed=18)
    idx = np.array([[0, 1, 3, 3, 2], [3, 3, 0, 1, 1], [2, 0, 0, 0, 3]])
    x, s = lt.asarray(arr).requires_grad_(), lt.asarray(src).requires_grad_()
    tx, ts = torch.tensor(arr, requires_grad=True), torch.tensor(src, requires_grad=True)
    up = random_array((4, 5), lt.float64, seed=19)
    out = x.gather(0, lt.asarray(idx)).sum() + (x.scatter_add(0, lt.asarray(idx), s * s) * lt.asarray(up)).sum()
    tout = tx.gather(0, torch.tensor(idx)).sum() + (tx.scatter_add(0, torch.tensor(idx), ts * ts) * torch.tensor(up)).sum()
    out.backward()
    tout.backward()
    check(x.grad, tx.grad)
    check(s.grad, ts.grad)
    x.grad, tx.grad = None, None
    (x.scatter(0, lt.asarray(idx[:1]), 2.0) * lt.asarray(up)).sum().backward()
    (tx.scatter(0, torch.tensor(idx[:1]), 2.0) * torch.tensor(up)).sum().backward()
    check(x.grad, tx.grad)


# ---- data-dependent shapes ------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [lt.float32, lt.int32, lt.bool_, lt.uint8], ids=str)
def test_nonzero_and_argwhere_match_numpy(dtype):
    for shape in [(7,), (3, 4), (2, 3, 5), (0, 3)]:
        for _, x, _ in inputs(shape, dtype, seed=20):
            a = np.asarray(x.numpy())
            mask = a > 0 if dtype != lt.bool_ else a
            x = x * (x > 0) if dtype != lt.bool_ else x
            got = x.nonzero(as_tuple=True)
            for g, w in zip(got, np.nonzero(mask)):
                check(g, w.astype(np.int64))
            check(x.argwhere(), np.argwhere(mask).astype(np.int64))
            check(x.nonzero(), np.argwhere(mask).astype(np.int64))
    check(lt.nonzero(lt.zeros(4))[0], np.zeros(0, np.int64))
    with pytest.raises(lt.ShapeError):
        lt.asarray(np.array(1.0)).nonzero()


@pytest.mark.parametrize("dtype", [lt.float32, lt.float64, lt.int8, lt.bool_], ids=str)
def test_compactions_by_random_masks(dtype):
    """`x[mask]` on masks as unpredictable as data, long enough for vector loops, on every layout
    (the CPU's scatter stores without a branch: see below)."""
    for shape in [(1,), (1000,), (37, 29)]:
        for _, x, t in inputs(shape, dtype, seed=3):
            mask, tmask = (x, t) if dtype == lt.bool_ else (x > 0, t > 0)
            check(x[mask], t[tmask])
            check(x[~mask], t[~tmask])
            check(x.reshape(-1)[mask.reshape(-1)] * 2, t.reshape(-1)[tmask.reshape(-1)] * 2)


@pytest.mark.parametrize("checked", [False, True])
def test_a_scatter_stores_without_a_branch_on_its_mask(monkeypatch, checked):
    """A compaction's mask is as unpredictable as the data: the stores it turns off go to a slot of the
    function's own, the address a select, not a branch; they touch nothing of the buffers (no fault when
    checked)."""
    monkeypatch.setattr(bounds, "CHECK", checked)
    a = np.random.default_rng(2).standard_normal(1000).astype(np.float32)
    x = lt.asarray(a, device="cpu")
    (scatter,) = [i.kernel for i in lt.schedule(lt.nonzero(x > 0)[0]) if isinstance(i.kernel, Scatter)]
    program, _ = compile_kernel(scatter)
    assert re.search(r"select i1 %[\w.]+, ptr", program.optimized_ir), program.optimized_ir
    np.testing.assert_array_equal(x[x > 0].numpy(), a[a > 0])


def test_data_dependent_shapes_inside_jit_are_an_error():
    @lt.jit
    def f(x):
        return x[x > 0]

    with pytest.raises(lt.JitError, match="reads a tensor's data"):
        f(lt.asarray(np.array([1.0, -1.0])))


# ---- how it runs ------------------------------------------------------------------------------------------------

def test_a_gather_is_a_load_in_its_reader_kernel():
    """`(table[ids] * 2).sum(1)`: one kernel that loads the rows it picks (the table is not copied), and one
    that checks the indexes."""
    table = lt.asarray(random_array((1000, 16), lt.float32, seed=21))
    ids = lt.asarray(np.array([5, 999, 5, 0]))
    out = (table[ids] * 2).sum(1)
    flag, item = sorted(lt.schedule(out), key=lambda it: it.outputs[0].dtype != lt.bool_)
    assert flag.outputs[0].numel == 1 and "gather" in str(item.kernel) and item.outputs[0].shape == (4, 1)
    check(out, (random_array((1000, 16), lt.float32, seed=21)[[5, 999, 5, 0]] * 2).sum(1))


@pytest.mark.parametrize("index", ["take", "rows", "negative"])
def test_a_gathers_positions_are_computed_with_constants(index):
    """The position arithmetic of an index (wrapping negative indexes, strides, a slice's start and step) uses
    constants of the shapes, not kernel parameters, and the gather reads element 0 where an index is outside
    (one select, no clamp): the loop per element stays short, which keeps many of a random gather's loads in
    flight (3x in a C model of it). Values as NumPy's."""
    data = random_array((300, 7), lt.float32, seed=24)
    ids = np.array([5, -1, 299, 0, -300, 17])
    x, i = lt.asarray(data), lt.asarray(ids)
    out, want = {"take": (x.take(i, axis=0), data.take(ids, axis=0)),
                 "rows": (x[i, 1:6:2], data[ids, 1:6:2]),
                 "negative": (x[i], data[ids])}[index]
    (item,) = [it for it in lt.schedule(out) if it.outputs[0].dtype != lt.bool_]
    assert not item.kernel.params
    assert not any(v.op is ir.VOp.ALU and v.arg in (ir.Alu.MIN, ir.Alu.MAX) for v in item.kernel.values())
    check(out, want)


def test_rows_picked_by_arange_need_no_range_check_of_it():
    """`x[arange(n), y]` (a cross-entropy's picked logits): `arange(n)` is the iota, inside the axis by how it is
    made, so only y's range is checked (one flag reduction over y, none over the iota) and its positions are
    not wrapped; an arange longer than the axis is still checked. Values as NumPy's."""
    data, ids = random_array((5, 7), lt.float32, seed=25), np.array([6, 0, -1, 3, -7])
    x, y = lt.asarray(data), lt.asarray(ids)
    out = x[lt.arange(5), y]
    checks = [v for item in lt.schedule(out) for v in item.kernel.values()
              if v.op is ir.VOp.REDUCE and v.dtype == lt.bool_]
    assert len(checks) == 1 and all(v.op is not ir.VOp.INDEX for v in ir.toposort([checks[0]]))
    check(out, data[np.arange(5), ids])
    check(x[lt.arange(3), 1:3], data[np.arange(3), 1:3])
    with pytest.raises(IndexError, match=r"index: an index is outside \[-7, 7\) \(axis 1 of size 7\)"):
        x[:, lt.arange(8)].numpy()


def test_a_scatter_is_one_kernel_that_computes_its_updates():
    x = lt.asarray(random_array((6, 4), lt.float32, seed=22))
    u = lt.asarray(random_array((3, 4), lt.float32, seed=23))
    out = (x + 1).scatter_add(0, lt.asarray(np.array([[5] * 4, [0] * 4, [5] * 4])), u.exp())
    item, flag = sorted(lt.schedule(out), key=lambda it: it.outputs[0].dtype == lt.bool_)
    assert isinstance(item.kernel, Scatter) and "exp" in str(item.kernel.updates) and flag.outputs[0].numel == 1
    want = random_array((6, 4), lt.float32, seed=22) + 1
    np.add.at(want, [5, 0, 5], np.exp(random_array((3, 4), lt.float32, seed=23)))
    check(out, want)


def test_embedding_sized_gather_and_its_gradient():
    """The rows of a table of 50,000 picked by token ids, and the gradient added back into those rows."""
    rng = np.random.default_rng(24)
    table, ids = rng.standard_normal((50_000, 8)).astype(np.float32), rng.integers(0, 50_000, (4, 7))
    w = lt.asarray(table).requires_grad_()
    tw = torch.tensor(table, requires_grad=True)
    out, tout = w[lt.asarray(ids)], tw[torch.tensor(ids)]
    check(out, tout)
    (out * 3).sum().backward()
    (tout * 3).sum().backward()
    check(w.grad, tw.grad)


@pytest.mark.parametrize("accumulate", [False, True])
@pytest.mark.parametrize("dtype", [lt.float32, lt.int64, lt.float16])
def test_index_put_is_torchs(dtype, accumulate):
    """Integer index tensors (repeated positions: the last write stays, or the sum), broadcast values, masks,
    0-d indexes, views; index_put_ rebinds."""
    rows, cols = np.array([0, 2, 0, 1]), np.array([[1], [3]])  # broadcast to (2, 4), (0, 1) twice
    mask = random_array((3, 4), lt.bool_, seed=40)
    for kind, x, t in inputs((3, 4), dtype, seed=41):
        values = random_array((2, 4), dtype, seed=42)
        cases = [((rows, cols), values), ((rows,), random_array((4,), dtype, seed=43)), ((mask,), values[0, 0]),
                 ((np.array(1), cols[0]), values[0, :1]), ((rows, cols), values[0, 0])]
        for index, v in cases:
            ours = x.index_put(tuple(lt.asarray(i) for i in index), lt.asarray(v), accumulate)
            check(ours, t.index_put(tuple(torch.tensor(i) for i in index), torch.tensor(v), accumulate))
        y, u = x.copy(), t.clone()
        y.index_put_((lt.asarray(rows), lt.asarray(cols)), lt.asarray(values), accumulate=accumulate)
        u.index_put_((torch.tensor(rows), torch.tensor(cols)), torch.tensor(values), accumulate=accumulate)
        check(y, u)


def test_index_put_gradients_size_0_and_errors():
    arr, values = random_array((3, 4), lt.float64, seed=44), random_array((2, 2), lt.float64, seed=45)
    rows, cols = np.array([0, 2, 0, 1]), np.array([[1], [3]])  # [0, 2] with cols: (2, 2) positions
    for accumulate in (False, True):
        x, v = lt.asarray(arr).requires_grad_(), lt.asarray(values).requires_grad_()
        t, u = torch.tensor(arr, requires_grad=True), torch.tensor(values, requires_grad=True)
        out = x.index_put((lt.asarray(np.array([0, 2])), lt.asarray(cols)), v, accumulate)
        expected = t.index_put((torch.tensor([0, 2]), torch.tensor(cols)), u, accumulate)
        check(out, expected)
        (out * out).sum().backward()
        (expected * expected).sum().backward()
        check(x.grad, t.grad)
        check(v.grad, u.grad)
    empty = np.zeros(0, np.int64)
    check(lt.index_put(lt.asarray(arr), (lt.asarray(empty),), lt.asarray(1.0), True),
          torch.tensor(arr).index_put((torch.tensor(empty),), torch.tensor(1.0, dtype=torch.float64), True))
    with pytest.raises(lt.ShapeError):
        lt.asarray(arr).index_put((lt.asarray(rows),), lt.asarray(values), True)  # (2, 2) into (4, 4)
    with pytest.raises(IndexError):
        lt.asarray(arr).index_put((lt.asarray(np.array([5])),), lt.asarray(1.0), True).numpy()
    with pytest.raises(IndexError):
        lt.asarray(arr).index_put((), lt.asarray(1.0))


@pytest.mark.parametrize("accumulate", [False, True])
@pytest.mark.parametrize("dtype", [lt.float32, lt.int32, lt.float64])
def test_put_is_torchs(dtype, accumulate):
    """Positions in the tensor read as 1-d (negative from the end, repeated: the last write, or the sum), index and
    source of other shapes with one element count, views; put_ rebinds; gradients; errors."""
    index = np.array([[0, -1, 5], [7, 0, 3]])
    for kind, x, t in inputs((3, 4), dtype, seed=46):
        source = random_array((3, 2), dtype, seed=47)
        check(x.put(lt.asarray(index), lt.asarray(source), accumulate),
              t.put(torch.tensor(index), torch.tensor(source), accumulate))
        y, u = x.copy(), t.clone()
        y.put_(index.ravel().tolist(), lt.asarray(source), accumulate=accumulate)
        u.put_(torch.tensor(index.ravel()), torch.tensor(source), accumulate=accumulate)
        check(y, u)
    zero_d, one = lt.asarray(np.float64(2.0)), torch.tensor(2.0, dtype=torch.float64)
    check(zero_d.put(lt.asarray(np.array([0])), lt.asarray(np.array([5.0])), accumulate),
          one.put(torch.tensor([0]), torch.tensor([5.0], dtype=torch.float64), accumulate))
    arr, values = random_array((2, 3), lt.float64, seed=48), random_array((2,), lt.float64, seed=49)
    x, v = lt.asarray(arr).requires_grad_(), lt.asarray(values).requires_grad_()
    t, w = torch.tensor(arr, requires_grad=True), torch.tensor(values, requires_grad=True)
    out, expected = x.put(lt.asarray(np.array([4, 1])), v, accumulate), t.put(torch.tensor([4, 1]), w, accumulate)
    (out * out).sum().backward()
    (expected * expected).sum().backward()
    check(x.grad, t.grad)
    check(v.grad, w.grad)
    with pytest.raises(lt.ShapeError, match="as many elements"):
        lt.asarray(arr).put(lt.asarray(np.array([0, 1])), lt.asarray(np.ones(3)))
    with pytest.raises(IndexError):
        lt.asarray(arr).put(lt.asarray(np.array([6])), lt.asarray(np.ones(1)), accumulate).numpy()


@pytest.mark.parametrize("dtype", [lt.float32, lt.int64, lt.bool_])
def test_numpys_flatnonzero_extract_compress_and_delete(dtype):
    arr = random_array((3, 4), dtype, seed=50)
    condition = random_array((3, 4), lt.bool_, seed=51)
    for kind, x, t in inputs((3, 4), dtype, seed=50):
        a = t.numpy()
        check(lt.flatnonzero(x), np.flatnonzero(a))
        check(lt.extract(lt.asarray(condition), x), np.extract(condition, a))
        for cond, axis in (([1, 0, 1], 0), ([0, 1, 1, 0], 1), ([1, 0, 0, 1, 1], None), ([0, 1], -1), ([], 0)):
            check(lt.compress(np.array(cond, bool), x, axis), np.compress(np.array(cond, bool), a, axis))
        for obj, axis in ((1, 0), ([0, -1], 1), (slice(1, None, 2), 1), ([1, 5, 11], None), (np.array([], int), 0),
                          (np.array([True, False, True]), 0)):
            check(lt.delete(x, obj, axis), np.delete(a, obj, axis))
    check(lt.delete(lt.asarray(arr), lt.asarray(np.array([2])), 1), np.delete(arr, [2], 1))
    check(lt.flatnonzero(lt.asarray(arr[:0])), np.flatnonzero(arr[:0]))
    with pytest.raises(IndexError):
        lt.compress(np.ones(4, bool), lt.asarray(arr), 0)
    with pytest.raises(IndexError):
        lt.delete(lt.asarray(arr), 3, 0)


@pytest.mark.parametrize("dtype", [lt.float32, lt.int32, lt.bool_])
def test_numpys_trim_zeros_ix_and_put_along_axis(dtype):
    line = random_array((9,), dtype, seed=52)
    line[:2], line[-3:] = 0, 0
    box = np.zeros((5, 6), line.dtype)
    box[1:3, 2:5] = random_array((2, 3), dtype, seed=53)
    box[1, 2] = 1
    for trim in ("fb", "f", "b", "BF"):
        check(lt.trim_zeros(lt.asarray(line), trim), np.trim_zeros(line, trim))
        check(lt.trim_zeros(lt.asarray(box), trim), np.trim_zeros(box, trim))
        check(lt.trim_zeros(lt.asarray(box), trim, axis=1), np.trim_zeros(box, trim, axis=1))
    check(lt.trim_zeros(lt.asarray(np.zeros(4, line.dtype))), np.trim_zeros(np.zeros(4, line.dtype)))
    with pytest.raises(ValueError):
        lt.trim_zeros(lt.asarray(line), "x")
    for kind, x, t in inputs((4, 5), dtype, seed=54):
        a = t.numpy()
        rows, cols = np.array([3, 0, -1]), np.array([True, False, True, True, False])
        check(x[lt.ix_(rows, cols)], a[np.ix_(rows, cols)])
        assert [i.shape for i in lt.ix_(rows, [], cols)] == [(3, 1, 1), (1, 0, 1), (1, 1, 3)]
        values = random_array((4, 2), dtype, seed=55)
        for indices, axis, v in ((np.array([[0, 4], [1, -1], [2, 2], [3, 0]]), 1, values),
                                 (np.array([[1, 0, 3, 2, 1]]), 0, values[0, 0]), (np.array([19, 0, -2]), None, values[:3, 0])):
            y, expected = x.copy(), a.copy()
            assert lt.put_along_axis(y, lt.asarray(indices), lt.asarray(v), axis) is None
            np.put_along_axis(expected, indices, v, axis)
            check(y, expected)
    with pytest.raises(lt.ShapeError):
        lt.ix_(np.zeros((2, 2), int))
    with pytest.raises(TypeError, match="written in place"):
        lt.put_along_axis(np.zeros(3), lt.asarray([0]), 1.0, 0)
    with pytest.raises(IndexError):
        y = lt.zeros((2, 3))
        lt.put_along_axis(y, lt.asarray([[3], [0]]), 1.0, 1)
        y.numpy()


@pytest.mark.parametrize("dtype", [lt.float32, lt.int64])
def test_a_range_indexes_as_an_integer_array_as_torch(dtype):
    """`logp[range(n), y]` (PyTorch's "what is torch.nn really" tutorial's nll) and ranges anywhere an integer
    array goes, reading and writing."""
    a = random_array((4, 6), dtype, 3)
    y = np.array([1, 5, 0, 2])
    x, t = lt.asarray(a), torch.tensor(a)
    for index in [(range(4), y), (range(1, 4, 2),), (slice(None), range(5, 0, -2)), (range(0),), (range(-1, -5, -1),)]:
        theirs = t[tuple(torch.tensor(i) if isinstance(i, np.ndarray) else i for i in index)]
        check(x[index], theirs)
    x[range(2), [0, 1]] = -1
    t[range(2), [0, 1]] = -1
    check(x, t)
