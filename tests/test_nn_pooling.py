"""Max and average pooling over 1 to 3 axes, max pooling's indices and max_unpool, and their modules, against
torch: values, indices and gradients on float32 and float64, ties, NaN, -inf beside the padding, views."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import lazytensor as lt
from conftest import LAYOUTS, check, inputs, random_array
from lazytensor import nn

F = nn.functional
TF = torch.nn.functional
FLOATS = [lt.float32, lt.float64]


def grads_match(x, t, out, tout, dtype, seed=50):
    up = random_array(tuple(tout.shape), dtype, seed=seed)
    out.backward(lt.asarray(up))
    tout.backward(torch.tensor(up))
    check(x.grad, t.grad)


POOLS = [  # (spatial axes, input shape, kernel, stride, padding, dilation, ceil_mode)
    (1, (2, 3, 9), 3, 2, 1, 1, False),
    (1, (1, 2, 10), 4, None, 2, 2, True),
    (1, (3, 7), 2, 1, 0, 1, False),
    (2, (2, 3, 7, 6), 3, 2, 1, 1, True),
    (2, (1, 2, 8, 9), (2, 3), (2, 1), (1, 0), (2, 1), False),
    (2, (2, 5, 5), 2, None, 0, 1, False),
    (3, (1, 2, 4, 5, 6), 2, 2, 1, 1, False),
    (3, (2, 1, 5, 4, 4), (3, 2, 2), (2, 1, 2), (1, 0, 1), 1, True),
]


def _pools(nd):
    return (F.max_pool1d, F.max_pool2d, F.max_pool3d)[nd - 1], (TF.max_pool1d, TF.max_pool2d, TF.max_pool3d)[nd - 1]


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("cfg", POOLS, ids=str)
def test_max_pool_with_indices(cfg, dtype):
    nd, shape, k, s, p, d, ceil = cfg
    ours, theirs = _pools(nd)
    # few distinct values: ties inside windows, where the first maximum is the one picked
    arr = random_array(shape, dtype, seed=1).round()
    x, t = lt.asarray(arr).requires_grad_(), torch.tensor(arr, requires_grad=True)
    out, idx = ours(x, k, s, p, d, ceil, return_indices=True)
    tout, tidx = theirs(t, k, s, p, d, ceil, return_indices=True)
    check(out, tout)
    check(idx, tidx)
    grads_match(x, t, out, tout, dtype)
    check(ours(lt.asarray(arr), k, s, p, d, ceil), tout)  # without indices or gradients


def test_max_pool_indices_with_nan_and_infinities_beside_the_padding():
    """The last NaN of a window; in a window of -inf and padding, its first input element (as torch's)."""
    arr = np.array([[[-np.inf, -np.inf, 1.0, np.nan, 2.0, np.nan, -np.inf, 5.0, -np.inf]]])
    for k, s, p in ((3, 2, 1), (4, 1, 2), (2, 2, 1)):
        x, t = lt.asarray(arr).requires_grad_(), torch.tensor(arr, requires_grad=True)
        out, idx = F.max_pool1d(x, k, s, p, return_indices=True)
        tout, tidx = TF.max_pool1d(t, k, s, p, return_indices=True)
        check(out, tout)
        check(idx, tidx)
        out.sum().backward()
        tout.sum().backward()
        check(x.grad, t.grad)


def test_max_pool_of_integers_with_indices():
    arr = random_array((2, 3, 6, 5), lt.int32, seed=2)
    out, idx = F.max_pool2d(lt.asarray(arr), 3, 2, 1, return_indices=True)
    tout, tidx = TF.max_pool2d(torch.tensor(arr).double(), 3, 2, 1, return_indices=True)  # torch: floats only
    check(out, tout.int())
    check(idx, tidx)


@pytest.mark.parametrize("kind", LAYOUTS)
def test_max_pool3d_and_avg_pool1d_of_views(kind):
    (_, x, t), = [v for v in inputs((1, 2, 4, 5, 6), lt.float64, seed=3) if v[0] == kind]
    x, t = x.requires_grad_(), t.requires_grad_()
    out, idx = F.max_pool3d(x, 2, 1, 1, return_indices=True)
    tout, tidx = TF.max_pool3d(t, 2, 1, 1, return_indices=True)
    check(out, tout)
    check(idx, tidx)
    grads_match(x, t, out, tout, lt.float64)
    (_, x, t), = [v for v in inputs((2, 3, 9), lt.float64, seed=4) if v[0] == kind]
    x, t = x.requires_grad_(), t.requires_grad_()
    out, tout = F.avg_pool1d(x, 3, 2, 1), TF.avg_pool1d(t, 3, 2, 1)
    check(out, tout)
    grads_match(x, t, out, tout, lt.float64)


AVG = [  # (spatial axes, input shape, kernel, stride, padding, ceil_mode, count_include_pad, divisor_override)
    (1, (2, 3, 9), 3, 2, 1, False, True, None),
    (1, (1, 2, 10), 4, 3, 2, True, False, None),
    (1, (3, 8), 2, None, 0, False, True, None),
    (3, (1, 2, 4, 5, 6), 2, 2, 1, False, True, None),
    (3, (2, 1, 5, 4, 5), (3, 2, 2), (2, 1, 2), (1, 0, 1), True, False, None),
    (3, (1, 1, 4, 4, 4), 2, 2, 0, False, True, 3),
]


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("cfg", AVG, ids=str)
def test_avg_pool_1d_and_3d(cfg, dtype):
    nd, shape, k, s, p, ceil, include, divisor = cfg
    arr = random_array(shape, dtype, seed=5)
    x, t = lt.asarray(arr).requires_grad_(), torch.tensor(arr, requires_grad=True)
    if nd == 1:
        out, tout = F.avg_pool1d(x, k, s, p, ceil, include), TF.avg_pool1d(t, k, s, p, ceil, include)
    else:
        out = F.avg_pool3d(x, k, s, p, ceil, include, divisor)
        tout = TF.avg_pool3d(t, k, s, p, ceil, include, divisor)
    check(out, tout)
    grads_match(x, t, out, tout, dtype)


UNPOOL = [  # (spatial axes, input shape, kernel, stride, padding, output size)
    (1, (2, 3, 8), 2, None, 0, None),
    (1, (1, 2, 9), 3, 2, 1, (1, 2, 9)),
    (2, (2, 3, 6, 7), 2, 2, 0, (6, 7)),
    (2, (1, 2, 7, 7), 3, 2, 1, None),
    (2, (3, 4, 4), 2, None, 0, None),
    (3, (1, 2, 4, 4, 6), 2, None, 0, None),
]


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("cfg", UNPOOL, ids=str)
def test_max_unpool(cfg, dtype):
    nd, shape, k, s, p, size = cfg
    ours_pool, theirs_pool = _pools(nd)
    ours = (F.max_unpool1d, F.max_unpool2d, F.max_unpool3d)[nd - 1]
    theirs = (TF.max_unpool1d, TF.max_unpool2d, TF.max_unpool3d)[nd - 1]
    arr = random_array(shape, dtype, seed=6)
    _, idx = ours_pool(lt.asarray(arr), k, s, p, return_indices=True)
    tpooled, tidx = theirs_pool(torch.tensor(arr), k, s, p, return_indices=True)
    vals = random_array(tuple(tpooled.shape), dtype, seed=7)
    x, t = lt.asarray(vals).requires_grad_(), torch.tensor(vals, requires_grad=True)
    out, tout = ours(x, idx, k, s, p, size), theirs(t, tidx, k, s, p, size)
    check(out, _unpool_in_order(vals, idx.numpy(), tout.shape, nd))
    grads_match(x, t, out, tout, dtype)


def _unpool_in_order(vals: np.ndarray, idx: np.ndarray, shape: tuple[int, ...], nd: int) -> np.ndarray:
    """max_unpool written element by element in row-major order, so of repeated indexes (overlapping
    windows) the last write stays, as lazytensor defines it. PyTorch leaves that order open: its CPU kernel
    keeps the last in 2.13 and the first in 2.11."""
    planes = int(np.prod(shape[:-nd]))
    out = np.zeros((planes, int(np.prod(shape[-nd:]))), vals.dtype)
    for plane, (v, i) in enumerate(zip(vals.reshape(planes, -1), idx.reshape(planes, -1))):
        for value, at in zip(v, i):
            out[plane, at] = value
    return out.reshape(shape)


def test_max_unpool_index_out_of_range_raises():
    with pytest.raises(IndexError):
        F.max_unpool2d(lt.ones((1, 1, 2, 2)), lt.asarray(np.array([[[[0, 1], [2, 16]]]])), 2).numpy()
    with pytest.raises(lt.ShapeError):
        F.max_unpool2d(lt.ones((1, 1, 2, 2)), lt.zeros((1, 1, 2, 1), dtype=lt.int64), 2)


def test_pooling_modules():
    arr = random_array((2, 3, 6, 6), lt.float64, seed=8)
    pool, tpool = nn.MaxPool2d(2, return_indices=True), torch.nn.MaxPool2d(2, return_indices=True)
    unpool, tunpool = nn.MaxUnpool2d(2), torch.nn.MaxUnpool2d(2)
    (out, idx), (tout, tidx) = pool(lt.asarray(arr)), tpool(torch.tensor(arr))
    check(idx, tidx)
    check(unpool(out, idx, output_size=(2, 3, 6, 6)), tunpool(tout, tidx, output_size=(2, 3, 6, 6)))
    arr1, arr3 = random_array((2, 3, 8), lt.float64, seed=9), random_array((1, 2, 4, 4, 4), lt.float64, seed=10)
    pairs = [(nn.MaxPool1d(3, 2, 1), torch.nn.MaxPool1d(3, 2, 1), arr1), (nn.AvgPool1d(2), torch.nn.AvgPool1d(2), arr1),
             (nn.MaxPool3d(2), torch.nn.MaxPool3d(2), arr3),
             (nn.AvgPool3d(3, 1, 1, count_include_pad=False), torch.nn.AvgPool3d(3, 1, 1, count_include_pad=False),
              arr3)]
    for m, tm, a in pairs:
        check(m(lt.asarray(a)), tm(torch.tensor(a)))
    (o1, i1), (t1, ti1) = nn.MaxPool1d(2, return_indices=True)(lt.asarray(arr1)), \
        torch.nn.MaxPool1d(2, return_indices=True)(torch.tensor(arr1))
    check(nn.MaxUnpool1d(2)(o1, i1), torch.nn.MaxUnpool1d(2)(t1, ti1))
    (o3, i3), (t3, ti3) = nn.MaxPool3d(2, return_indices=True)(lt.asarray(arr3)), \
        torch.nn.MaxPool3d(2, return_indices=True)(torch.tensor(arr3))
    check(nn.MaxUnpool3d(2)(o3, i3), torch.nn.MaxUnpool3d(2)(t3, ti3))


ADAPTIVE = [  # (spatial axes, input shape, output size)
    (1, (2, 3, 10), 4),
    (1, (3, 7), 7),
    (2, (2, 3, 7, 9), (3, 4)),
    (2, (1, 2, 8, 6), (4, None)),
    (2, (2, 2, 5, 5), 1),
    (2, (1, 1, 3, 4), (5, 6)),            # larger than the input: overlapping windows
    (3, (1, 2, 5, 6, 7), (2, 3, 3)),
]


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("cfg", ADAPTIVE, ids=str)
def test_adaptive_avg_pool(cfg, dtype):
    nd, shape, size = cfg
    ours = (F.adaptive_avg_pool1d, F.adaptive_avg_pool2d, F.adaptive_avg_pool3d)[nd - 1]
    theirs = (TF.adaptive_avg_pool1d, TF.adaptive_avg_pool2d, TF.adaptive_avg_pool3d)[nd - 1]
    arr = random_array(shape, dtype, seed=11)
    x, t = lt.asarray(arr).requires_grad_(), torch.tensor(arr, requires_grad=True)
    # a mean of means: float32 rounds in another order than torch's sum over the window
    tol = {"rtol": 1e-5, "atol": 1e-6} if dtype == lt.float32 else {}
    out, tout = ours(x, size), theirs(t, size)
    check(out, tout, **tol)
    up = random_array(tuple(tout.shape), dtype, seed=12)
    out.backward(lt.asarray(up))
    tout.backward(torch.tensor(up))
    check(x.grad, t.grad, **tol)
    m = (nn.AdaptiveAvgPool1d, nn.AdaptiveAvgPool2d, nn.AdaptiveAvgPool3d)[nd - 1](size)
    tm = (torch.nn.AdaptiveAvgPool1d, torch.nn.AdaptiveAvgPool2d, torch.nn.AdaptiveAvgPool3d)[nd - 1](size)
    check(m(lt.asarray(arr)), tm(torch.tensor(arr)), **tol)


@pytest.mark.parametrize("cfg", [((2, 3, 7, 9), {"size": (3, 4)}), ((1, 2, 4, 6), {"scale_factor": 0.5}),
                                 ((1, 2, 10), {"size": 3}), ((1, 1, 3, 4, 5), {"size": (2, 6, 5)})], ids=str)
def test_interpolate_area(cfg):
    shape, kw = cfg
    arr = random_array(shape, lt.float64, seed=13)
    x, t = lt.asarray(arr).requires_grad_(), torch.tensor(arr, requires_grad=True)
    out, tout = F.interpolate(x, mode="area", **kw), TF.interpolate(t, mode="area", **kw)
    check(out, tout)
    grads_match(x, t, out, tout, lt.float64)
