"""NumPy's order statistics and counting (lazytensor/statistics.py), einsum and linalg.norm, against NumPy
(and torch for einsum's gradients), on several dtypes, shapes, NaN, size-0 and non-contiguous inputs; on the
CPU and (LT_DEVICE=cuda TRITON_INTERPRET=1) on Triton."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import lazytensor as lt
from conftest import check, inputs, layout, random_array
from lazytensor.kernels.ir import Contraction, Sort

METHODS = ["linear", "lower", "higher", "nearest", "midpoint"]
DEFAULT_DEVICE = lt.zeros(1).device  # LT_DEVICE, else cpu


@pytest.mark.parametrize("dtype", [lt.float32, lt.float64, lt.int32, lt.uint8], ids=str)
@pytest.mark.parametrize("axis", [None, 0, 1, (0, 2), -1])
def test_quantile_percentile_median_match_numpy(axis, dtype):
    for _, x, _ in inputs((4, 5, 6), dtype, seed=1):
        a = np.asarray(x.numpy())
        for q in [0.5, [0.0, 0.25, 1.0], np.array([[0.1], [0.9]])]:
            for method in METHODS:
                got = lt.quantile(x, q, axis=axis, method=method)
                want = np.quantile(a, q, axis=axis, method=method)
                check(got, want, rtol=1e-6)
        check(lt.percentile(x, [10, 90], axis=axis), np.percentile(a, [10, 90], axis=axis), rtol=1e-6)
        check(lt.percentile(x, 35, axis=axis), np.percentile(a, 35, axis=axis), rtol=1e-6)
        check(lt.median(x, axis=axis), np.median(a, axis=axis), rtol=1e-6)
        check(lt.median(x, axis=axis, keepdims=True), np.median(a, axis=axis, keepdims=True), rtol=1e-6)


def order_keys(shape: tuple[int, ...], dtype: lt.DType, seed: int) -> np.ndarray:
    """Few distinct values (ties), and for floats NaN in some slices, infinities and zeros of both signs."""
    rng = np.random.default_rng(seed)
    a = rng.integers(-40, 41, shape).astype(np.float64)
    if dtype.is_float:
        a[rng.random(shape) < 0.1] = -0.0
        a[rng.random(shape) < 0.05] = np.inf
        a[rng.random(shape) < 0.05] = -np.inf
        a[..., 0][rng.random(a[..., 0].shape) < 0.3] = np.nan
    return (a if dtype.is_signed or dtype.is_float else np.abs(a)).astype(
        np.float32 if dtype == lt.float16 else dtype.name)


@pytest.mark.parametrize("dtype", [lt.float32, lt.float64, lt.int32, lt.uint8, lt.float16], ids=str)
@pytest.mark.parametrize("shape,axis", [((4, 301), -1), ((300, 3), 0), ((1,), 0), ((5, 2), -1)], ids=str)
def test_median_and_one_quantile_select_with_no_sort(shape, axis, dtype):
    """The median and a quantile of one q select the values at their positions (an `ir.Sort` with `take`, no
    sort of the whole slice): rows the radix select takes several passes over, NaN, signed zeros, infinities,
    ties, contiguous or not; 16-bit floats sort (as float32 keys) and pick."""
    arr = order_keys(shape, dtype, seed=sum(shape))
    for x in (lt.asarray(arr).cast(dtype), lt.asarray(np.flip(arr, 0).copy()).cast(dtype).flip(0)):
        a = np.asarray(x.float().numpy() if dtype == lt.float16 else x.numpy())
        kernels = [item.kernel for item in lt.schedule(lt.median(x, axis=axis), lt.quantile(x, 0.3, axis=axis))]
        if dtype != lt.float16:
            assert all(k.take for k in kernels if isinstance(k, Sort)), [k.name for k in kernels]
        as_x = (lambda w: np.asarray(w).astype(np.float16)) if dtype == lt.float16 else np.asarray
        check(lt.median(x, axis=axis), as_x(np.median(a, axis=axis)))
        for q in (0.0, 0.3, 0.5, 1.0):
            for method in METHODS:
                check(lt.quantile(x, q, axis=axis, method=method),
                      as_x(np.quantile(a, q, axis=axis, method=method)))


def test_the_gradient_of_a_selected_quantile_goes_to_the_elements_it_picked():
    from test_autograd import check_grads
    arr = np.random.default_rng(6).standard_normal((3, 41)).astype(np.float32)
    check_grads(lambda x: lt.median(x, axis=1), lambda t: t.quantile(0.5, dim=1), [arr], kinds=("contiguous",
                                                                                                 "transposed"))
    check_grads(lambda x: lt.quantile(x, 0.3, axis=0), lambda t: t.quantile(0.3, dim=0), [arr[:, :40]])


def test_quantiles_with_nan_and_infinities_and_bad_q():
    a = np.array([[1.0, np.nan, 3.0], [np.inf, np.inf, -1.0], [-np.inf, 2.0, np.inf]], np.float32)
    for method in METHODS:
        check(lt.quantile(lt.asarray(a), [0.3, 0.5], axis=1, method=method),
              np.quantile(a, [0.3, 0.5], axis=1, method=method))
    check(lt.median(lt.asarray(np.array(2.5))), np.median(np.array(2.5)))
    with pytest.raises(IndexError, match=r"q must be in \[0, 1\]"):
        lt.quantile(lt.asarray(a), 1.5).numpy()
    with pytest.raises(ValueError):
        lt.median(lt.zeros(0))


@pytest.mark.parametrize("dtype", [lt.float32, lt.float64, lt.int16, lt.bool_], ids=str)
@pytest.mark.parametrize("axis", [None, 0, -1, (2, 0)], ids=str)
def test_average_matches_numpy(axis, dtype):
    """Weights of x's shape or of the reduced axes' (in `axis`'s order); integers give float32, lazytensor's
    default float, where NumPy's is float64."""
    rng = np.random.default_rng(4)
    as_float = (lambda r: r) if dtype.is_float else (lambda r: np.asarray(r).astype(np.float32))
    for _, x, _ in inputs((4, 5, 3), dtype, seed=5):
        a = np.asarray(x.numpy())
        full = rng.random(a.shape).astype(np.float32)
        check(lt.average(x, axis), as_float(np.average(a, axis)))
        check(lt.average(x, axis, lt.asarray(full), keepdims=True),
              as_float(np.average(a, axis, full, keepdims=True)))
        for got, want in zip(lt.average(x, axis, returned=True), np.average(a, axis, returned=True)):
            check(got, as_float(want))
        if axis is not None:
            along = rng.random(tuple(a.shape[i] for i in ((axis,) if isinstance(axis, int) else axis)))
            for got, want in zip(lt.average(x, axis, lt.asarray(along), returned=True),
                                 np.average(a, axis, along, returned=True)):
                check(got, np.asarray(want))  # float64 weights make the result float64
    with pytest.raises(lt.ShapeError, match="need an axis"):
        lt.average(lt.zeros(2, 3), weights=lt.ones(3))
    with pytest.raises(lt.ShapeError, match=r"expected \(2,\)"):
        lt.average(lt.zeros(2, 3), 0, weights=lt.ones(3))


@pytest.mark.parametrize("dtype", [lt.int64, lt.int32, lt.uint8, lt.int8], ids=str)
def test_bincount_matches_numpy(dtype):
    a = np.random.default_rng(2).integers(0, 9, 40).astype(dtype.name)
    w = np.random.default_rng(3).random(40)
    check(lt.bincount(lt.asarray(a)), np.bincount(a).astype(np.int64))
    check(lt.bincount(lt.asarray(a), minlength=20), np.bincount(a, minlength=20).astype(np.int64))
    check(lt.bincount(lt.asarray(a), weights=lt.asarray(w.astype(np.float32))), np.bincount(a, weights=w.astype(np.float32)))
    check(lt.bincount(lt.asarray(a[::-3])), np.bincount(a[::-3]).astype(np.int64))
    check(lt.bincount(lt.zeros(0, dtype=dtype), minlength=3), np.bincount(np.zeros(0, int), minlength=3).astype(np.int64))
    with pytest.raises(ValueError, match="negative"):
        lt.bincount(lt.asarray(np.array([1, -1])))


@pytest.mark.parametrize("dtype", [lt.float32, lt.float64, lt.int32], ids=str)
def test_histogram_matches_numpy(dtype):
    a = random_array((7, 9), dtype, seed=4)
    w = np.random.default_rng(5).random((7, 9))
    for bins, rng in [(10, None), (3, (-1.0, 2.0)), (np.array([-3.0, -1.0, 0.0, 0.5, 3.0]), None), (1, (5.0, 5.0))]:
        counts, edges = lt.histogram(lt.asarray(a), bins=bins, range=rng)
        want_counts, want_edges = np.histogram(a, bins=bins, range=rng)
        check(counts, want_counts.astype(np.int64))
        check(edges, want_edges)
        got_w, _ = lt.histogram(lt.asarray(a), bins=bins, range=rng, weights=lt.asarray(w), density=True)
        check(got_w, np.histogram(a, bins=bins, range=rng, weights=w, density=True)[0])



@pytest.mark.parametrize("case", ["float32 normal", "float16", "float32 far from 0", "int64 large", "float32 empty",
                                  "float64 one value", "int8 strided"])
def test_histogram_equal_bins_match_numpy_edge_for_edge(case):
    """Equal bins: the edges round as NumPy's linspace rounds them (float16, an empty input's float64
    linspace), every value lands in NumPy's bin (a value on an edge, the last edge, values off the range)."""
    rng = np.random.default_rng(7)
    a = {"float32 normal": rng.standard_normal(5000).astype(np.float32),
         "float16": rng.random(1000).astype(np.float16),
         "float32 far from 0": (1e4 + rng.random(3000)).astype(np.float32),
         "int64 large": rng.integers(-2**62, 2**62, 2000),
         "float32 empty": np.zeros(0, np.float32),
         "float64 one value": np.full(9, 2.5),
         "int8 strided": rng.integers(-100, 100, 600).astype(np.int8)[::3]}[case]
    x = lt.asarray(a)
    for bins, rng_ in [(10, None), (100, None), (777, None), (7, (-0.5, 0.7)), (4, (0, 3))]:
        counts, edges = lt.histogram(x, bins, rng_)
        want_counts, want_edges = np.histogram(a, bins, rng_)
        check(edges, want_edges)
        check(counts, want_counts.astype(np.int64))
    on_edges = np.histogram_bin_edges(a, 20) if a.size else np.zeros(0, a.dtype)
    if a.dtype.kind == "f":   # every edge a value: each lands in the bin the edge opens (the last one closes)
        b = np.concatenate([a, on_edges.astype(a.dtype)])
        check(lt.histogram(lt.asarray(b), 20)[0], np.histogram(b, 20)[0].astype(np.int64))


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "int64"])
def test_histogram_of_many_values_matches_numpy(dtype):
    """Enough values for the CPU's scatter loop to compute the bins in blocks, then a remainder; NaN and infinities
    (off every range) among them, a strided input, one value."""
    rng = np.random.default_rng(12)
    a = (rng.standard_normal(3 * 256 + 37) * 50).astype(dtype)
    if a.dtype.kind == "f":
        a[[3, 300, 700]] = [np.nan, np.inf, -np.inf]
    for b in (a, a[::-2], a[:1]):
        for bins, rng_ in [(100, (-60.0, 80.0)), (7, (-10.0, 10.0))] + ([(100, None)] if b.dtype.kind != "f" else []):
            check(lt.histogram(lt.asarray(b), bins, rng_)[0], np.histogram(b, bins, rng_)[0].astype(np.int64))
        w = rng.random(b.shape)
        check(lt.histogram(lt.asarray(b), 9, (-40.0, 40.0), weights=lt.asarray(w))[0],
              np.histogram(b, 9, (-40.0, 40.0), weights=w)[0])


def test_histogram_refuses_bins_narrower_than_the_dtype_resolves():
    a = (1e6 + np.arange(5)).astype(np.float32)
    with pytest.raises(ValueError, match="Too many bins"):
        np.histogram(a, 3, (1e6, 1e6 + 0.001))
    with pytest.raises(ValueError, match="too many bins"):
        lt.histogram(lt.asarray(a), 3, (1e6, 1e6 + 0.001))


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "float16"])
def test_histogramdd_and_histogram2d_match_numpy(dtype):
    rng = np.random.default_rng(11)
    pts = (rng.standard_normal((500, 3)) * 3).astype(dtype)
    pts[::7, 1] = pts[0, 1]  # ties
    w = rng.random(500)
    cases = [{}, {"bins": 4}, {"bins": (2, 5, 3)}, {"bins": [np.array([-2.0, 0.0, 0.5, 4.0]), 3, 2]},
             {"bins": 3, "range": [(-1, 1), None, (0, 2)]}, {"bins": (3, 3, 1), "range": [(0, 0), (-1, 5), (2, 2)]},
             {"bins": 5, "weights": w}, {"bins": (2, 3, 4), "density": True}, {"bins": 3, "weights": w, "density": True}]
    for kw in cases:
        want_hist, want_edges = np.histogramdd(pts, **kw)
        args = {k: (lt.asarray(v) if k == "weights" else v) for k, v in kw.items()}
        for sample in (lt.asarray(pts), [lt.asarray(pts[:, k]) for k in range(3)], lt.asarray(pts.T.copy()).T):
            hist, edges = lt.histogramdd(sample, **args)
            check(hist, want_hist)
            assert len(edges) == 3
            for e, want in zip(edges, want_edges):
                check(e, want)
    x, y = lt.asarray(pts[:, 0]), lt.asarray(pts[:, 2])
    for bins in (10, (3, 7), np.array([-5.0, 0.0, 1.0, 5.0]), [np.array([-1.0, 1.0]), 4]):
        want = np.histogram2d(pts[:, 0], pts[:, 2], bins)
        got = lt.histogram2d(x, y, bins)
        for g, e in zip(got, want):
            check(g, e)
    empty = np.zeros((0, 2), dtype)
    check(lt.histogramdd(lt.asarray(empty), 3)[0], np.histogramdd(empty, 3)[0])
    with pytest.raises(ValueError, match="entries of bins"):
        lt.histogramdd(lt.asarray(pts), (2, 3))


def test_histogramdd_leaves_out_nan_and_points_off_the_range():
    pts = np.array([[0.5, np.nan], [0.2, 0.3], [2.0, 0.5], [1.0, 1.0], [-0.1, 0.5], [0.0, 0.0]])
    want = np.histogramdd(pts, 2, range=[(0, 1), (0, 1)])
    got = lt.histogramdd(lt.asarray(pts), 2, range=[(0, 1), (0, 1)])
    check(got[0], want[0])
    check(lt.histogram_bin_edges(lt.asarray(pts[:, 0]), 4), np.histogram_bin_edges(pts[:, 0], 4))

EINSUMS = [
    ("ij,jk->ik", [(4, 5), (5, 6)]), ("bij,bjk->bik", [(3, 4, 5), (3, 5, 6)]), ("ij,jk", [(4, 5), (5, 6)]),
    ("ii->i", [(4, 4)]), ("ii", [(4, 4)]), ("ij->ji", [(4, 5)]), ("ij->", [(4, 5)]), ("i,i", [(7,), (7,)]),
    ("i,j->ij", [(3,), (4,)]), ("...ij,...jk", [(2, 3, 4, 5), (5, 6)]), ("bij,bjk,bkl->bil", [(2, 3, 4), (2, 4, 5), (2, 5, 3)]),
    ("ijk,ikl->jl", [(2, 3, 1), (2, 4, 5)]), ("i...->...", [(3, 4, 5)]), ("bhqd,bhkd->bhqk", [(2, 3, 4, 8), (2, 3, 5, 8)]),
]


@pytest.mark.parametrize("dtype", [lt.float32, lt.float64, lt.int64], ids=str)
@pytest.mark.parametrize("case", range(len(EINSUMS)))
def test_einsum_matches_numpy_and_differentiates_as_torch(case, dtype):
    spec, shapes = EINSUMS[case]
    arrays = [random_array(s, dtype, seed=10 + k) for k, s in enumerate(shapes)]
    got = lt.einsum(spec, *(lt.asarray(a) for a in arrays))
    check(got, np.einsum(spec, *arrays), rtol=1e-5, atol=1e-5)
    if dtype.is_float:
        ours = [lt.asarray(a).requires_grad_() for a in arrays]
        theirs = [torch.tensor(a, requires_grad=True) for a in arrays]
        up = random_array(tuple(got.shape), dtype, seed=30)
        (lt.einsum(spec, *ours) * lt.asarray(up)).sum().backward()
        (torch.einsum(spec, *theirs) * torch.tensor(up)).sum().backward()
        for o, t in zip(ours, theirs):
            check(o.grad, t.grad, rtol=1e-5, atol=1e-5)


def test_einsum_of_two_operands_is_one_contraction_and_errors_name_the_subscripts():
    x, y = (lt.asarray(random_array((4, 64, 64), lt.float32, seed=s)) for s in (1, 2))
    (item,) = lt.schedule(lt.einsum("bij,bjk->bik", x, y.transpose(0, 2, 1)))
    assert isinstance(item.kernel, Contraction)
    with pytest.raises(ValueError, match="do not fit"):
        lt.einsum("ij,jk->ik", x, y)
    with pytest.raises(lt.ShapeError, match="letter 'j'"):
        lt.einsum("ij,jk->ik", lt.zeros((2, 3)), lt.zeros((4, 2)))


def test_einsum_of_small_matrices_runs_matmuls_kernel():
    """A batch of products too small for the template is a plain reduction, whose innermost loop is the product's
    last axis: as matmul's, the output's last letter where an operand holds it last, else the summed letter."""
    x, y = (lt.asarray(random_array((64, 8, 8), lt.float32, seed=s)) for s in (3, 4))
    (ours,), (matmul,) = lt.schedule(lt.einsum("bij,bjk->bik", x, y)), lt.schedule(x @ y)
    assert ours.kernel.body_text() == matmul.kernel.body_text()
    (ours,), (vecdot,) = lt.schedule(lt.einsum("bij,bij->bi", x, y)), lt.schedule(lt.vecdot(x, y))
    assert ours.kernel.body_text() == vecdot.kernel.body_text()


@pytest.mark.parametrize("ord", [None, 1, -1, 2, -2, np.inf, -np.inf, "fro", "nuc", 0, 3])
def test_linalg_norm_matches_numpy(ord):
    a = random_array((3, 4, 5), lt.float64, seed=6)
    singular_values = ord in (2, -2, "nuc")  # of matrices: an SVD, which runs on the CPU only
    for axis in [None, 1, -1, (0, 2), (2, 0)]:
        if axis is None and ord is not None:
            continue
        if (isinstance(axis, tuple) and ord in (0, 3)) or (isinstance(axis, int) and ord in ("fro", "nuc")):
            continue  # not norms NumPy defines for that many axes
        if isinstance(axis, tuple) and singular_values and DEFAULT_DEVICE != "cpu":
            with pytest.raises(lt.DeviceError, match="svdvals"):
                lt.linalg.norm(lt.asarray(a), ord=ord, axis=axis)
            continue
        for keepdims in (False, True):
            check(lt.linalg.norm(lt.asarray(a), ord=ord, axis=axis, keepdims=keepdims),
                  np.linalg.norm(a, ord=ord, axis=axis, keepdims=keepdims))
    if ord not in (0, 3) and (DEFAULT_DEVICE == "cpu" or not singular_values):
        check(lt.linalg.norm(lt.asarray(a[0]), ord=ord), np.linalg.norm(a[0], ord=ord))
    vector_ord = None if ord in ("fro", "nuc") else ord  # matrix norms only
    check(lt.linalg.norm(lt.asarray(a[0, 0]), ord=vector_ord), np.linalg.norm(a[0, 0], ord=vector_ord))


# ---- NumPy's nan-functions, ptp, cov, corrcoef, digitize, interp ---------------------------------------------


def with_nans(shape: tuple[int, ...], dtype: lt.DType, seed: int) -> np.ndarray:
    """random_array's data in [-1.5, 1.5) (products stay in range), floats with NaNs, infinities and, along the
    last axis, a slice of NaNs alone."""
    arr = random_array(shape, dtype, seed, low=-1.5, high=1.5)
    if dtype.is_float:
        arr[np.random.default_rng(seed).random(shape) < 0.3] = np.nan
        arr[(0,) * arr.ndim] = np.inf
        arr[(1,) * arr.ndim] = -np.inf
        arr[(1,) * (arr.ndim - 1)] = np.nan
    return arr


def numpys_dtype(name: str, expected: np.ndarray, dtype: lt.DType) -> np.ndarray:
    """NumPy's result as lazytensor's dtypes give it: the mean, variance and deviation of integers and bools
    are the default float (NumPy's float64)."""
    if name in ("nanmean", "nanvar", "nanstd") and not dtype.is_float:
        return np.asarray(expected).astype(np.float32)
    return expected


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("dtype", [lt.float32, lt.int32, lt.bool_], ids=str)
def test_nan_reductions_match_numpy(dtype):
    """On a non-contiguous view (float64 and contiguous tensors: tests/test_interop.py's cases)."""
    arr = with_nans((3, 4, 5), dtype, seed=11)
    names = ["nansum", "nanprod", "nanmax", "nanmin"]
    if dtype != lt.bool_:
        names += ["nanmean", "nanvar", "nanstd", "nanmedian"]
    x, _ = layout(arr, "transposed", oracle="numpy")
    for axis in [None, 0, (0, 2)]:
        for name in names:
            want = getattr(np, name)(arr, axis=axis, keepdims=axis == 0)
            check(getattr(lt, name)(x, axis=axis, keepdims=axis == 0), numpys_dtype(name, want, dtype))
    check(lt.nanvar(x, axis=1, ddof=1), numpys_dtype("nanvar", np.nanvar(arr, axis=1, ddof=1), dtype))
    check(np.nanstd(x, axis=2, ddof=4), numpys_dtype("nanstd", np.nanstd(arr, axis=2, ddof=4), dtype))
    check(lt.nancumsum(x), np.nancumsum(arr))
    check(np.nancumprod(x, 1), np.nancumprod(arr, 1))
    clear = arr[[0, 2]]  # no slice of NaNs alone along the last axis
    check(lt.nanargmax(lt.asarray(clear)), np.nanargmax(clear))
    check(np.nanargmin(lt.asarray(clear), -1, keepdims=True), np.nanargmin(clear, -1, keepdims=True))
    if dtype.is_float:
        for method in ("linear", "nearest", "midpoint"):
            check(lt.nanquantile(x, [0.2, 0.75], axis=-1, method=method),
                  np.nanquantile(arr, [0.2, 0.75], axis=-1, method=method))
        check(np.nanpercentile(x, 40, axis=(0, 1), keepdims=True),
              np.nanpercentile(arr, 40, axis=(0, 1), keepdims=True))


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_nan_reductions_of_nans_alone_and_of_nothing():
    nans = lt.asarray(np.full((2, 3), np.nan, np.float32))
    check(lt.nansum(nans, axis=1), np.zeros(2, np.float32))
    check(lt.nanprod(nans), np.float32(1))
    for name in ("nanmean", "nanvar", "nanstd", "nanmax", "nanmin", "nanmedian"):
        check(getattr(lt, name)(nans, axis=0), np.full(3, np.nan, np.float32))
    with pytest.raises(IndexError, match="All-NaN slice"):
        lt.nanargmax(nans, axis=1).numpy()
    empty = np.zeros((0, 3), np.float32)
    check(lt.nansum(lt.asarray(empty), axis=0), np.nansum(empty, axis=0))
    check(lt.nanmean(lt.asarray(empty), axis=0), np.nanmean(empty, axis=0))
    check(lt.nanmax(lt.asarray(np.float64(np.nan))), np.nanmax(np.float64(np.nan)))
    check(lt.nansum(lt.asarray(np.float32(2.5))), np.nansum(np.float32(2.5)))


def test_nan_reductions_gradients_match_torch():
    arr = random_array((4, 5), lt.float64, seed=12)
    arr[[0, 1, 1, 3], [2, 2, 4, 0]] = np.nan  # no slice of NaNs alone: there torch's gradient is NaN, lazytensor's 0
    for name, axis in (("nansum", 1), ("nanmean", 0), ("nanmean", None)):
        x = lt.asarray(arr).requires_grad_()
        t = torch.tensor(arr, requires_grad=True)
        dims = () if axis is None else (axis,)
        (getattr(lt, name)(x, axis=axis) * 2).sum().backward()
        (getattr(torch, name)(t, dim=dims) * 2).sum().backward()
        check(x.grad, t.grad)


def test_median_of_infinities_is_numpys_mean_of_the_middle():
    for values in ([-np.inf, -1.0, np.inf], [1.0, np.inf], [-np.inf, np.inf, 2.0, 3.0], [np.inf, np.nan, 1.0]):
        arr = np.array(values)
        check(lt.median(lt.asarray(arr)), np.median(arr))
        check(lt.nanmedian(lt.asarray(arr)), np.nanmedian(arr))
    ints = np.array([[3, 1, 4, 1], [5, 9, 2, 6]], np.int16)
    check(lt.median(lt.asarray(ints), axis=1), np.median(ints, axis=1))
    check(lt.nanmedian(lt.asarray(ints), axis=0, keepdims=True), np.nanmedian(ints, axis=0, keepdims=True))


@pytest.mark.parametrize("dtype", [lt.float32, lt.float64, lt.int32], ids=str)
def test_cov_corrcoef_ptp_match_numpy(dtype):
    """float32 and integers give float32, lazytensor's (NumPy's cov is float64 at least)."""
    as_float = (lambda r: r) if dtype == lt.float64 else (lambda r: np.asarray(r).astype(np.float32))
    fw, aw = np.array([1, 2, 0, 3, 1, 1]), np.linspace(0.5, 2.0, 6)
    for kind in ("contiguous", "strided"):
        x, a = layout(random_array((3, 6), dtype, seed=13), kind, oracle="numpy")
        y = lt.asarray(a[::-1].copy())
        check(lt.cov(x), as_float(np.cov(a)))
        check(lt.cov(x, y, bias=True), as_float(np.cov(a, a[::-1], bias=True)))
        check(lt.cov(x.T, rowvar=False, ddof=2), as_float(np.cov(a.T, rowvar=False, ddof=2)))
        check(lt.cov(x, fweights=fw, aweights=aw), as_float(np.cov(a, fweights=fw, aweights=aw)))
        check(lt.cov(x[0]), as_float(np.cov(a[0])))
        check(lt.corrcoef(x), as_float(np.corrcoef(a)))
        check(lt.corrcoef(x[0], x[1]), as_float(np.corrcoef(a[0], a[1])))
        check(lt.ptp(x), np.ptp(a))
        check(lt.ptp(x, axis=1, keepdims=True), np.ptp(a, axis=1, keepdims=True))
    wraps = np.array([-100, 100, 3], np.int8)
    check(lt.ptp(lt.asarray(wraps)), np.ptp(wraps))  # NumPy's wraps in int8
    with pytest.raises(lt.DTypeError):
        lt.ptp(lt.asarray([True, False]))


def test_cov_gradient_matches_torch():
    arr = random_array((3, 7), lt.float64, seed=14)
    aw = np.linspace(0.5, 2.0, 7)
    x, t = lt.asarray(arr).requires_grad_(), torch.tensor(arr, requires_grad=True)
    (lt.cov(x, aweights=aw) ** 2).sum().backward()
    (torch.cov(t, aweights=torch.tensor(aw)) ** 2).sum().backward()
    check(x.grad, t.grad)


@pytest.mark.parametrize("dtype", [lt.float32, lt.float64, lt.int64], ids=str)
def test_digitize_and_interp_match_numpy(dtype):
    x = np.array([-4, -1, 0, 0.5, 1, 2.5, 3, 9], np.float64).astype(dtype.name)
    if dtype.is_float:
        x = np.append(x, [np.nan, np.inf, -np.inf]).astype(dtype.name)
    bins = np.array([-1.0, 0.0, 0.0, 1.0, 3.0])
    for right in (False, True):
        check(lt.digitize(lt.asarray(x), lt.asarray(bins), right=right), np.digitize(x, bins, right=right))
        check(lt.digitize(lt.asarray(x), lt.asarray(bins[::-1].copy()), right=right),
              np.digitize(x, bins[::-1], right=right))
    check(lt.digitize(lt.asarray(x[:0]), lt.asarray(bins)), np.digitize(x[:0], bins))
    xp, fp = np.array([-1.0, 0.0, 0.5, 3.0]), np.array([2.0, -1.0, np.inf, 4.0])
    want = np.interp(x, xp, fp)
    want_ends = np.interp(x, xp, fp, left=-7.0, right=7.0)
    check(lt.interp(lt.asarray(x), lt.asarray(xp), lt.asarray(fp)), want)  # float64: the floats promoted
    check(lt.interp(lt.asarray(x), lt.asarray(xp), lt.asarray(fp), left=-7.0, right=7.0), want_ends)
    check(lt.interp(lt.asarray(np.float64(0.25)), lt.asarray(xp[:1]), lt.asarray(fp[:1])),
          np.interp(np.float64(0.25), xp[:1], fp[:1]))


@pytest.mark.parametrize("dtype", [lt.float32, lt.float64, lt.float16])
@pytest.mark.parametrize("bins, lo, hi", [(100, 0, 0), (7, -1.0, 2.5), (3, 0, 0), (5, 1.0, 1.0)], ids=str)
def test_histc_matches_torch(dtype, bins, lo, hi):
    """Over the data's extremes (min == max), over a range that leaves values out, over a range of one point
    (widened by 1 each way); a transposed input, and one of equal values."""
    arr = random_array((6, 9), dtype, seed=41)
    same = np.full(4, 2.0, dtype.name)
    for x, t in (layout(arr, "transposed"), (lt.asarray(same), torch.tensor(same))):
        t = t.to(torch.float32 if dtype == lt.float16 else t.dtype)  # torch's CPU histc has no float16
        expected = torch.histc(t, bins=bins, min=lo, max=hi)
        check(lt.histc(x, bins=bins, min=lo, max=hi), expected.to(torch.float16) if dtype == lt.float16 else expected)
    check(lt.histc(lt.asarray(np.zeros(0, np.float32)), bins=4), torch.histc(torch.zeros(0), bins=4))
    with pytest.raises(lt.DTypeError):
        lt.histc(lt.asarray(np.arange(3)))
