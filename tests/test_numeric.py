"""NumPy's numerical routines (lazytensor/numeric.py): ediff1d, gradient, trapezoid, convolve, correlate, polyval,
unravel_index, ravel_multi_index, against NumPy (and torch's gradients), over dtypes, layouts, 0-d and size-0
inputs; on the CPU and (LT_DEVICE=cuda TRITON_INTERPRET=1) on Triton."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import lazytensor as lt
from conftest import check, layout, random_array


@pytest.mark.parametrize("dtype", [lt.float32, lt.float64, lt.int32], ids=str)
def test_differences_and_integrals_match_numpy(dtype):
    as_float = (lambda r: r) if dtype.is_float else (lambda r: np.asarray(r).astype(np.float32))
    coords = np.cumsum(random_array((6,), lt.float64, seed=71, low=0.1, high=1.0))
    x, a = layout(random_array((4, 6), dtype, seed=72), "transposed", oracle="numpy")  # contiguous: test_interop.py
    check(lt.ediff1d(x), np.ediff1d(a))
    check(lt.ediff1d(x, to_end=x[0, :2], to_begin=7), np.ediff1d(a, to_end=a[0, :2], to_begin=7))
    for edge_order in (1, 2):
        for got, want in zip(lt.gradient(x, edge_order=edge_order), np.gradient(a, edge_order=edge_order)):
            check(got, as_float(want))
        check(lt.gradient(x, 0.5, axis=-1, edge_order=edge_order),
              as_float(np.gradient(a, 0.5, axis=-1, edge_order=edge_order)))
        for got, want in zip(lt.gradient(x, 2.0, lt.asarray(coords), edge_order=edge_order),
                             np.gradient(a, 2.0, coords, edge_order=edge_order)):
            check(got, as_float(want).astype(got.dtype.name), rtol=2e-6 if dtype != lt.float64 else None)
    check(lt.trapezoid(x), as_float(np.trapezoid(a)))
    check(lt.trapezoid(x, dx=0.25, axis=0), as_float(np.trapezoid(a, dx=0.25, axis=0)))
    check(lt.trapezoid(x, lt.asarray(coords)), np.trapezoid(a, coords))  # float64: x's coordinates promote
    check(lt.polyval(lt.asarray([2, -1, 3]), x), np.polyval(np.array([2, -1, 3]), a).astype(x.dtype.name)
          if dtype.is_float else np.polyval(np.array([2, -1, 3]), a))
    with pytest.raises(ValueError, match="too short"):
        lt.gradient(lt.zeros(2), edge_order=2)
    check(lt.ediff1d(lt.asarray(np.float32(3))), np.ediff1d(np.float32(3)))


@pytest.mark.parametrize("dtype", [lt.float32, lt.float64, lt.int64], ids=str)
@pytest.mark.parametrize("mode", ["full", "same", "valid"])
def test_convolve_and_correlate_match_numpy(dtype, mode):
    for n, m in ((7, 3), (3, 7), (1, 4)):
        a, v = random_array((n,), dtype, seed=73), random_array((m,), dtype, seed=74)
        check(lt.convolve(lt.asarray(a), lt.asarray(v), mode), np.convolve(a, v, mode))
        check(lt.correlate(lt.asarray(a), lt.asarray(v), mode), np.correlate(a, v, mode))
        check(np.convolve(lt.asarray(a)[::-1], v, mode), np.convolve(a[::-1], v, mode))
    with pytest.raises(ValueError):
        lt.convolve(lt.zeros(0), lt.zeros(3))


def test_convolve_gradient_matches_torch():
    a, v = random_array((8,), lt.float64, seed=75), random_array((3,), lt.float64, seed=76)
    x, w = lt.asarray(a).requires_grad_(), lt.asarray(v).requires_grad_()
    t, u = torch.tensor(a, requires_grad=True), torch.tensor(v, requires_grad=True)
    (lt.convolve(x, w, "valid") ** 2).sum().backward()
    (torch.nn.functional.conv1d(t.reshape(1, 1, -1), u.flip(0).reshape(1, 1, -1)) ** 2).sum().backward()
    check(x.grad, t.grad)
    check(w.grad, u.grad)


def test_flat_and_multi_indices_match_numpy():
    flat = np.array([[0, 17, 29], [5, 6, 11]])
    for got, want in zip(lt.unravel_index(lt.asarray(flat), (5, 6)), np.unravel_index(flat, (5, 6))):
        check(got, want)
    for got, want in zip(lt.unravel_index(lt.asarray(7), (2, 1, 4)), np.unravel_index(7, (2, 1, 4))):
        check(got, want)
    coords = (np.array([0, 4, 7, -1]), np.array([5, 1, 2, 9]))
    valid = (coords[0][:2], coords[1][:2])
    check(lt.ravel_multi_index(tuple(lt.asarray(c) for c in valid), (5, 6)), np.ravel_multi_index(valid, (5, 6)))
    for mode in ("wrap", "clip"):
        check(lt.ravel_multi_index(tuple(lt.asarray(c) for c in coords), (5, 6), mode=mode),
              np.ravel_multi_index(coords, (5, 6), mode=mode))
    with pytest.raises(IndexError, match="out of bounds"):
        lt.unravel_index(lt.asarray([30]), (5, 6))[0].numpy()
    with pytest.raises(IndexError, match="invalid entry"):
        lt.ravel_multi_index(tuple(lt.asarray(c) for c in coords), (5, 6)).numpy()
    check(lt.unravel_index(lt.zeros(0, dtype=lt.int64), (3,))[0], np.unravel_index(np.zeros(0, np.int64), (3,))[0])


@pytest.mark.parametrize("dtype", [lt.float32, lt.float64, lt.int32])
def test_trapz_and_cumulative_trapezoid_are_torchs(dtype):
    """Along each axis, with dx, with samples 1-d or of y's shape, views, size 1 along the axis."""
    for kind in ("contiguous", "transposed", "flipped"):
        x, t = layout(random_array((4, 5), dtype, seed=30), kind)
        samples = np.cumsum(random_array((5,), lt.float64, seed=31, low=0.1, high=1.0))
        for dim in (0, -1):
            check(lt.trapz(x, dim=dim), torch.trapz(t, dim=dim))
            check(lt.cumulative_trapezoid(x, dx=0.5, dim=dim), torch.cumulative_trapezoid(t, dx=0.5, dim=dim))
        check(lt.trapz(x, lt.asarray(samples)), torch.trapz(t, torch.tensor(samples)))
        check(lt.cumulative_trapezoid(x, lt.asarray(samples)), torch.cumulative_trapezoid(t, torch.tensor(samples)))
    one = random_array((3, 1), lt.float64, seed=32)
    check(lt.cumulative_trapezoid(lt.asarray(one)), torch.cumulative_trapezoid(torch.tensor(one)))
    check(lt.trapz(lt.asarray(one)), torch.trapz(torch.tensor(one)))


@pytest.mark.parametrize("dtype", [lt.float32, lt.float64])
def test_unwrap_is_numpys(dtype):
    """Phases wrapped into [-pi, pi) along either axis, a discont, another period (degrees), a jump of exactly half
    a period, size 1 and 0 along the axis."""
    phase = np.cumsum(random_array((6, 40), lt.float64, seed=33, low=-1.5, high=1.5), axis=1)
    wrapped = ((phase + np.pi) % (2 * np.pi) - np.pi).astype(dtype.name)
    for kind in ("contiguous", "transposed", "flipped"):
        x, t = layout(wrapped, kind)
        for axis in (-1, 0):
            check(lt.unwrap(x, axis=axis), np.unwrap(t.numpy(), axis=axis))
        check(lt.unwrap(x, discont=4.0), np.unwrap(t.numpy(), discont=4.0))
    degrees = np.array([0.0, 170.0, -170.0, 10.0, 190.0, 10.0], dtype.name)
    check(lt.unwrap(lt.asarray(degrees), period=360.0), np.unwrap(degrees, period=360.0))
    for edge in (wrapped[:, :1], wrapped[:, :0]):
        check(lt.unwrap(lt.asarray(edge)), np.unwrap(edge))


@pytest.mark.parametrize("dtype", [lt.float64, lt.float32, lt.int64], ids=str)
def test_polyfit_matches_numpy(dtype):
    """NumPy's polyfit: 1-d and 2-d y, weights, `full=True`'s residuals, rank and singular values; a float32 fit
    stays float32 (NumPy's gives float64); the CPU only (lstsq is LAPACK's)."""
    if lt.device.get_device().type != "cpu":
        with pytest.raises(lt.DeviceError):
            lt.polyfit(lt.arange(5.0), lt.arange(5.0), 1).numpy()
        return
    x = np.linspace(-2, 3, 20) if dtype.is_float else np.arange(-8, 12)
    y = (3 * x ** 2 - x + 1 + random_array((20,), lt.float64, 5)).astype(np.float64)
    x, y = x.astype(dtype.name), (y if dtype.is_float else np.round(y)).astype(dtype.name)
    tolerance = {} if dtype == lt.float64 else {"rtol": 1e-4, "atol": 1e-4}  # ints fit in the default float
    for deg in (0, 1, 2, 5):
        got = lt.polyfit(lt.asarray(x), lt.asarray(y), deg)
        np.testing.assert_allclose(got.numpy(), np.polyfit(x, y, deg), **tolerance)
        assert got.dtype == (dtype if dtype.is_float else lt.float32)
    two = np.stack([y, 2 * y - 1], 1)
    w = np.linspace(0.5, 1.5, 20).astype(x.dtype if dtype.is_float else np.float64)
    np.testing.assert_allclose(lt.polyfit(x, two, 3, w=w).numpy(), np.polyfit(x, two, 3, w=w), **tolerance)
    ours, theirs = lt.polyfit(x, y, 1, full=True), np.polyfit(x, y, 1, full=True)
    for a, b in zip(ours[1:4], theirs[1:4]):
        np.testing.assert_allclose(np.asarray(a.numpy() if isinstance(a, lt.Tensor) else a), b, rtol=1e-3)
    with pytest.raises(lt.ShapeError, match="x must be"):
        lt.polyfit(lt.zeros((2, 2)), lt.zeros(2), 1)
    with pytest.raises(TypeError, match="cov"):
        lt.polyfit(x, y, 1, cov=True)


def test_fill_diagonal_in_place_as_numpy():
    for shape, wrap in (((4, 4), False), ((7, 3), False), ((7, 3), True), ((3, 7), True), ((3, 3, 3), False)):
        a = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
        x = lt.asarray(a)
        assert lt.fill_diagonal(x, -1, wrap=wrap) is None
        np.fill_diagonal(a, -1, wrap=wrap)
        check(x, a)
        y, b = lt.zeros(shape), np.zeros(shape, np.float32)
        np.fill_diagonal(y, 5, wrap=wrap)  # NumPy's own call, on a tensor
        np.fill_diagonal(b, 5, wrap=wrap)
        check(y, b)
        for values in ([1.5, 2.5], np.arange(5.0), [[1, 2], [3, 4]], np.array(7.0), []):
            c = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
            z = lt.asarray(c)
            lt.fill_diagonal(z, values, wrap=wrap)  # an array's values go along the diagonal in turn, repeated
            np.fill_diagonal(c, values, wrap=wrap)
            check(z, c)


def test_fill_diagonal_of_a_view_writes_its_base_as_numpy():
    # the SVD tutorial's `for j in range(3): np.fill_diagonal(Sigma[j, :, :], s[j])`
    s = np.arange(12.0).reshape(3, 4)
    sigma, expected = lt.zeros((3, 4, 5), dtype=lt.float64), np.zeros((3, 4, 5))
    for j in range(3):
        lt.fill_diagonal(sigma[j, :, :], lt.asarray(s[j]))
        np.fill_diagonal(expected[j, :, :], s[j])
    check(sigma, expected)
