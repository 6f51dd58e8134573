"""F.pad, F.interpolate, F.pixel_shuffle / pixel_unshuffle and their modules against torch: values and
gradients on float32 and float64, views, batch 1 and empty batches; the integer enlargements are views."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import lazytensor as lt
from conftest import LAYOUTS, check, inputs, random_array
from lazytensor import nn
from lazytensor.errors import ShapeError

F = nn.functional
TF = torch.nn.functional
FLOATS = [lt.float32, lt.float64]
# float32: torch's weights multiply in another order (and its kernels may fuse a multiply-add)
TOL = {lt.float32: {"rtol": 1e-5, "atol": 1e-5}, lt.float64: {}}


def both(arr, fn_lt, fn_torch, dtype, seed=30):
    """fn of the same data in both libraries, then the input's gradient from one random upstream gradient."""
    x = lt.asarray(arr).requires_grad_(dtype.is_float)
    t = torch.tensor(arr, requires_grad=dtype.is_float)
    out, tout = fn_lt(x), fn_torch(t)
    check(out, tout, **TOL.get(dtype, {}))
    if dtype.is_float and tout.numel():
        up = random_array(tuple(tout.shape), dtype, seed=seed)
        out.backward(lt.asarray(up))
        tout.backward(torch.tensor(up))
        check(x.grad, t.grad, **TOL[dtype])


PADS = [  # (input shape, pad)
    ((2, 3, 6), (1, 2)),
    ((1, 3, 5, 7), (2, 1, 0, 3)),
    ((3, 5, 7), (4, 4, 4, 4)),
    ((1, 2, 4, 5, 6), (1, 1, 2, 2, 3, 3)),
    ((2, 3, 5, 7), (-1, 2, 2, -2)),          # crops first, then pads
    ((2, 4, 6), (0, 0)),
]


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("mode", ["constant", "reflect", "replicate", "circular"])
@pytest.mark.parametrize("cfg", PADS, ids=str)
def test_pad(cfg, mode, dtype):
    shape, amounts = cfg
    both(random_array(shape, dtype, seed=1), lambda x: F.pad(x, amounts, mode),
         lambda t: TF.pad(t, amounts, mode), dtype)


@pytest.mark.parametrize("kind", LAYOUTS)
@pytest.mark.parametrize("mode", ["constant", "reflect", "replicate", "circular"])
def test_pad_of_views(mode, kind):
    (_, x, t), = [v for v in inputs((2, 5, 6), lt.float64, seed=2) if v[0] == kind]
    x, t = x.requires_grad_(), t.requires_grad_()
    out, tout = F.pad(x, (2, 3, 1, 4), mode), TF.pad(t, (2, 3, 1, 4), mode)
    check(out, tout)
    up = random_array(tuple(tout.shape), lt.float64, seed=3)
    out.backward(lt.asarray(up))
    tout.backward(torch.tensor(up))
    check(x.grad, t.grad)


def test_pad_constant_values_integers_empty_and_errors():
    arr = random_array((2, 3, 4), lt.int32, seed=4)
    check(F.pad(lt.asarray(arr), (1, 2, 3, 0), value=7), TF.pad(torch.tensor(arr), (1, 2, 3, 0), value=7))
    check(F.pad(lt.asarray(arr), (1, 1, 1, 1, 1, 1)), TF.pad(torch.tensor(arr), (1, 1, 1, 1, 1, 1)))
    empty = np.zeros((0, 3, 4), np.float32)
    for mode in ("constant", "reflect", "replicate", "circular"):
        check(F.pad(lt.asarray(empty), (1, 2), mode), TF.pad(torch.tensor(empty), (1, 2), mode))
    check(F.pad(lt.asarray(np.zeros((2, 0), np.float32)), (1, 1)), np.zeros((2, 2), np.float32))
    with pytest.raises(lt.ShapeError):
        F.pad(lt.ones((1, 2, 3)), (3, 0), "reflect")
    with pytest.raises(lt.ShapeError):
        F.pad(lt.ones((1, 2, 3)), (0, 4), "circular")
    with pytest.raises(ValueError):
        F.pad(lt.ones((1, 2, 3)), (1, 2, 3))
    with pytest.raises(ValueError):
        F.pad(lt.ones((1, 2, 3)), (1, 1), "wrap")


INTERP = [  # (spatial input size, size or scale_factor options)
    ((5, 7), {"size": (10, 14)}),
    ((5, 7), {"size": (3, 4)}),
    ((5, 7), {"scale_factor": 2}),
    ((5, 7), {"scale_factor": 1.7}),
    ((5, 7), {"scale_factor": 1.7, "recompute_scale_factor": True}),
    ((6, 8), {"scale_factor": (0.5, 3)}),
    ((4, 4), {"size": (1, 9)}),
    ((1, 3), {"size": (4, 4)}),
]


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("mode", [("nearest", None), ("nearest-exact", None), ("bilinear", False), ("bilinear", True),
                                  ("bicubic", False), ("bicubic", True)], ids=str)
@pytest.mark.parametrize("cfg", INTERP, ids=str)
def test_interpolate_2d(cfg, mode, dtype):
    spatial, kw = cfg
    name, corners = mode
    kw = {**kw, "align_corners": corners}
    both(random_array((2, 3, *spatial), dtype, seed=5), lambda x: F.interpolate(x, mode=name, **kw),
         lambda t: TF.interpolate(t, mode=name, **kw), dtype)


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("cfg", [("linear", (1, 2, 7), {"size": 12}), ("linear", (2, 1, 9), {"scale_factor": 0.4}),
                                 ("nearest", (2, 2, 5), {"scale_factor": 3}),
                                 ("trilinear", (1, 2, 3, 4, 5), {"size": (5, 2, 7)}),
                                 ("nearest", (1, 2, 3, 4, 5), {"scale_factor": (2, 1.5, 0.5)}),
                                 ("nearest-exact", (2, 1, 3, 4, 2), {"size": (4, 3, 5)})], ids=str)
def test_interpolate_1d_and_3d(cfg, dtype):
    mode, shape, kw = cfg
    for corners in ((None,) if mode.startswith("nearest") else (False, True)):
        opts = {**kw, "mode": mode, "align_corners": corners}
        both(random_array(shape, dtype, seed=6), lambda x, o=opts: F.interpolate(x, **o),
             lambda t, o=opts: TF.interpolate(t, **o), dtype)


@pytest.mark.parametrize("kind", LAYOUTS)
def test_interpolate_of_views(kind):
    (_, x, t), = [v for v in inputs((1, 2, 5, 6), lt.float64, seed=7) if v[0] == kind]
    x, t = x.requires_grad_(), t.requires_grad_()
    out = F.interpolate(x, size=(8, 4), mode="bilinear")
    tout = TF.interpolate(t, size=(8, 4), mode="bilinear")
    check(out, tout)
    up = random_array(tuple(tout.shape), lt.float64, seed=8)
    out.backward(lt.asarray(up))
    tout.backward(torch.tensor(up))
    check(x.grad, t.grad)


def test_interpolate_nearest_of_integers_empty_batch_and_errors():
    arr = random_array((2, 3, 4, 5), lt.int64, seed=9)
    # torch's nearest takes no int64 on the CPU: its result of the same values as float64
    check(F.interpolate(lt.asarray(arr), scale_factor=1.5),
          TF.interpolate(torch.tensor(arr).double(), scale_factor=1.5).long())
    empty = np.zeros((0, 3, 4, 5), np.float32)
    check(F.interpolate(lt.asarray(empty), size=(7, 3), mode="bilinear"),
          TF.interpolate(torch.tensor(empty), size=(7, 3), mode="bilinear"))
    with pytest.raises(ValueError):
        F.interpolate(lt.ones((1, 1, 4, 4)), size=3, mode="nearest", align_corners=True)
    with pytest.raises(ValueError):
        F.interpolate(lt.ones((1, 1, 4)), size=3, mode="bilinear")
    with pytest.raises(ValueError):
        F.interpolate(lt.ones((1, 1, 4)), size=3, scale_factor=2)
    with pytest.raises(lt.DTypeError):
        F.interpolate(lt.ones((1, 1, 4), dtype=lt.int32), size=3, mode="linear")
    with pytest.raises(NotImplementedError):
        F.interpolate(lt.ones((1, 1, 4, 4)), size=3, mode="lanczos")


def test_integer_enlargement_and_reduction_are_views():
    """Nearest by 2 and 3, and a reduction by 2, read the input through index arithmetic: one kernel with
    the scale after it, no gather."""
    x = lt.asarray(random_array((2, 3, 6, 8), lt.float32, seed=10))
    for kw in ({"scale_factor": 2}, {"scale_factor": (3, 1)}, {"size": (3, 4)}):
        (item,) = lt.schedule(F.interpolate(x, **kw) * 2)
        assert "gather" not in str(item)


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("shape,r", [((2, 12, 3, 4), 2), ((1, 9, 2, 2), 3), ((3, 2, 4, 2, 5), 1), ((8, 1, 1), 2)],
                         ids=str)
def test_pixel_shuffle_and_unshuffle(shape, r, dtype):
    both(random_array(shape, dtype, seed=11), lambda x: F.pixel_shuffle(x, r), lambda t: TF.pixel_shuffle(t, r),
         dtype)
    out_shape = (*shape[:-3], shape[-3] // (r * r), shape[-2] * r, shape[-1] * r)
    both(random_array(out_shape, dtype, seed=12), lambda x: F.pixel_unshuffle(x, r),
         lambda t: TF.pixel_unshuffle(t, r), dtype)
    with pytest.raises(lt.ShapeError):
        F.pixel_shuffle(lt.ones((1, 3, 2, 2)), 2)


def test_resampling_modules():
    arr = random_array((2, 4, 3, 5), lt.float64, seed=13)
    pairs = [(nn.Upsample(scale_factor=2, mode="bilinear"), torch.nn.Upsample(scale_factor=2, mode="bilinear")),
             (nn.Upsample(size=(4, 4)), torch.nn.Upsample(size=(4, 4))),
             (nn.UpsamplingNearest2d(scale_factor=3), torch.nn.UpsamplingNearest2d(scale_factor=3)),
             (nn.UpsamplingBilinear2d(size=(5, 6)), torch.nn.UpsamplingBilinear2d(size=(5, 6))),
             (nn.PixelShuffle(2), torch.nn.PixelShuffle(2)),
             (nn.PixelUnshuffle(1), torch.nn.PixelUnshuffle(1))]
    for m, tm in pairs:
        both(arr, m, tm, lt.float64)


PAD_MODULES = [(f"{kind}Pad{d}d", d) for kind in ("Zero", "Constant", "Reflection", "Replication", "Circular")
               for d in (1, 2, 3)]


@pytest.mark.parametrize(("name", "dims"), PAD_MODULES, ids=str)
def test_padding_modules(name, dims):
    """nn.*Pad1d/2d/3d against torch's: one amount for every side (batched) and one per side (unbatched),
    values and gradients; the wrong rank, or the wrong count of amounts, is an error."""
    args = (lambda p: (p, 2.5)) if name.startswith("Constant") else (lambda p: (p,))
    for padding, shape in ((2, (2, 3) + (7,) * dims), (tuple(range(1, 2 * dims + 1)), (3,) + (7,) * dims)):
        ours, theirs = getattr(nn, name)(*args(padding)), getattr(torch.nn, name)(*args(padding))
        both(random_array(shape, lt.float64, seed=dims), ours, theirs, lt.float64)
    with pytest.raises(ShapeError, match=f"{dims + 1}-d or {dims + 2}-d"):
        ours(lt.zeros(*(4,) * (dims + 3)))
    with pytest.raises(ValueError, match="amounts"):
        getattr(nn, name)(*args((1,) * (2 * dims + 1)))


# ---- affine_grid, grid_sample ---------------------------------------------------------------------------------

def sample_both(x, t, grid_arr, dtype, seed=40, **kw):
    """grid_sample of the same input and grid in both libraries: values, then the gradients w.r.t. the input
    and the grid from one random upstream gradient. x, t: the input (any layout), not yet requiring grad."""
    x, t = x.requires_grad_(), t.requires_grad_()
    g = lt.asarray(grid_arr).requires_grad_()
    tg = torch.tensor(grid_arr, requires_grad=True)
    out, tout = F.grid_sample(x, g, **kw), TF.grid_sample(t, tg, **kw)
    check(out, tout, **TOL[dtype])
    if tout.numel():
        up = random_array(tuple(tout.shape), dtype, seed=seed)
        out.backward(lt.asarray(up))
        tout.backward(torch.tensor(up))
        check(x.grad, t.grad, **TOL[dtype])
        if kw.get("mode") == "nearest":  # no path from the grid to the output: torch's gradient is zeros
            assert g.grad is None and not tg.grad.any()
        else:
            # a sum of taps' differences that cancel: float32 is good to eps times the largest (torch's own
            # float32 grid gradient is 3.7e-5 from its float64 one where the largest is 52)
            tol = {"rtol": 1e-5, "atol": 1e-5 + 2e-6 * float(tg.grad.abs().max())} if dtype == lt.float32 else {}
            check(g.grad, tg.grad, **tol)


def random_grid(n, out, dtype, seed):
    """Normalized coordinates, about a third of them outside [-1, 1]."""
    return random_array((n, *out, 2 if len(out) == 2 else 3), dtype, seed=seed, low=-1.5, high=1.5)


SAMPLES_2D = [((2, 3, 5, 6), (4, 7)), ((1, 1, 4, 3), (6, 8)), ((3, 2, 7, 8), (2, 3))]  # (input, output size)


@pytest.mark.parametrize("align_corners", [False, True])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("mode", ["bilinear", "nearest", "bicubic"])
def test_grid_sample_2d(mode, padding_mode, align_corners):
    # the shapes and dtypes rotate through the cases, so each meets every one without multiplying them
    case = ["bilinear", "nearest", "bicubic"].index(mode) + 3 * ["zeros", "border", "reflection"].index(padding_mode)
    shape, out = SAMPLES_2D[case % 3]
    dtype = FLOATS[(case + align_corners) % 2]
    arr = random_array(shape, dtype, seed=case)
    sample_both(lt.asarray(arr), torch.tensor(arr), random_grid(shape[0], out, dtype, 50 + case), dtype, mode=mode,
                padding_mode=padding_mode, align_corners=align_corners)


@pytest.mark.parametrize("align_corners", [False, True])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
def test_grid_sample_3d(mode, padding_mode, align_corners):
    dtype = FLOATS[align_corners]
    arr = random_array((2, 2, 3, 4, 5), dtype, seed=9)
    sample_both(lt.asarray(arr), torch.tensor(arr), random_grid(2, (2, 3, 4), dtype, 11), dtype, mode=mode,
                padding_mode=padding_mode, align_corners=align_corners)


@pytest.mark.parametrize("kind", LAYOUTS)
def test_grid_sample_of_views(kind):
    (_, x, t), = [v for v in inputs((2, 3, 5, 6), lt.float64, seed=12) if v[0] == kind]
    sample_both(x, t, random_grid(2, (3, 4), lt.float64, 13), lt.float64, align_corners=False)
    grid = random_grid(2, (4, 3), lt.float64, 14)  # a transposed grid
    g, tg = lt.asarray(grid).permute(0, 2, 1, 3), torch.tensor(grid).permute(0, 2, 1, 3)
    check(F.grid_sample(lt.asarray(x.numpy()), g, padding_mode="border", align_corners=True),
          TF.grid_sample(torch.tensor(x.numpy()), tg, padding_mode="border", align_corners=True))


def test_grid_sample_empty_batch_non_finite_grid_and_errors():
    sample_both(lt.zeros((0, 2, 4, 5)), torch.zeros((0, 2, 4, 5)), np.zeros((0, 3, 3, 2), np.float32), lt.float32,
                align_corners=False)
    # a NaN or infinite coordinate reads nothing: no position outside the input is gathered
    x = lt.asarray(np.arange(1, 13, dtype=np.float32).reshape(1, 1, 3, 4))
    grid = lt.asarray(np.array([[[[np.nan, 0.2], [0.1, np.inf], [-np.inf, 0.3], [0.5, 0.5]]]], np.float32))
    for mode in ("bilinear", "nearest", "bicubic"):
        for padding_mode in ("zeros", "reflection"):
            got = F.grid_sample(x, grid, mode, padding_mode, align_corners=False).numpy().ravel()
            assert (got[:3] == 0).all() and np.isfinite(got[3]), (mode, padding_mode, got)
    with pytest.raises(ValueError, match="bicubic"):
        F.grid_sample(lt.zeros((1, 1, 2, 2, 2)), lt.zeros((1, 1, 1, 1, 3)), mode="bicubic")
    with pytest.raises(ShapeError):
        F.grid_sample(lt.zeros((1, 1, 2, 2)), lt.zeros((1, 2, 2, 3)))
    with pytest.raises(ValueError, match="padding_mode"):
        F.grid_sample(lt.zeros((1, 1, 2, 2)), lt.zeros((1, 2, 2, 2)), padding_mode="circular")


@pytest.mark.parametrize("align_corners", [False, True])
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("size", [(2, 3, 4, 5), (1, 1, 1, 6), (2, 1, 3, 2, 4)], ids=str)
def test_affine_grid(size, dtype, align_corners):
    nd = len(size) - 2
    arr = random_array((size[0], nd, nd + 1), dtype, seed=15)
    both(arr, lambda th: F.affine_grid(th, size, align_corners=align_corners),
         lambda th: TF.affine_grid(th, size, align_corners=align_corners), dtype)


def test_affine_grid_of_the_identity_is_torchs_to_the_bit():
    """Its positions are whole pixels, where bilinear's gradient w.r.t. the grid steps: a rounding apart, a
    spatial transformer's first step (at the identity, as PyTorch's tutorial starts) would differ."""
    for n in (5, 7, 20, 64):
        for align_corners in (False, True):
            theta = np.array([[[1, 0, 0], [0, 1, 0]]], np.float32)
            got = F.affine_grid(lt.asarray(theta), (1, 1, n, n + 1), align_corners=align_corners).numpy()
            want = TF.affine_grid(torch.tensor(theta), (1, 1, n, n + 1), align_corners=align_corners).numpy()
            np.testing.assert_array_equal(got, want)
