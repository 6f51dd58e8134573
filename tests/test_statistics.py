"""NumPy's order statistics and counting (lazytensor/statistics.py), einsum and linalg.norm, against NumPy
(and torch for einsum's gradients), on several dtypes, shapes, NaN, size-0 and non-contiguous inputs; on the
CPU and (LT_DEVICE=cuda TRITON_INTERPRET=1) on Triton."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import lazytensor as lt
from conftest import check, inputs, random_array
from lazytensor.kernels.ir import Contraction

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
