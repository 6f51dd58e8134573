"""conv1d, conv3d, the transposed convolutions, unfold and fold and their modules against torch: values and
the input, weight and bias gradients on float32 and float64, with stride, padding, output_padding, dilation
and groups, unbatched inputs, views, padding modes, second-order gradients."""
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


def data(shape, dtype, seed):
    """float32 data of small integers, so that every sum is exact in any order (random floats of both signs
    cancel, and the libraries' orders then differ by more than float32's tolerance)."""
    arr = random_array(shape, dtype, seed=seed)
    return arr.round() if dtype == lt.float32 else arr


def both(fn_lt, fn_torch, arrs, dtype, seed=40):
    """fn of the same arrays in both libraries (None passes through), then every array's gradient from one
    random upstream gradient."""
    xs = [None if a is None else lt.asarray(a).requires_grad_() for a in arrs]
    ts = [None if a is None else torch.tensor(a, requires_grad=True) for a in arrs]
    out, tout = fn_lt(*xs), fn_torch(*ts)
    check(out, tout)
    up = data(tuple(tout.shape), dtype, seed)
    out.backward(lt.asarray(up))
    tout.backward(torch.tensor(up))
    for x, t in zip(xs, ts):
        if x is not None:
            check(x.grad, t.grad)


CONV1D = [  # (in, out, kernel, stride, padding, dilation, groups, length)
    (3, 4, 3, 1, 0, 1, 1, 9),
    (4, 6, 3, 2, 1, 1, 2, 10),
    (2, 4, 2, 3, 2, 2, 2, 11),
    (4, 4, 3, 1, "same", 2, 4, 7),
    (1, 2, 5, 1, "valid", 1, 1, 5),
]


@pytest.mark.filterwarnings("ignore:Using padding='same'")
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("cfg", CONV1D, ids=str)
def test_conv1d(cfg, dtype):
    cin, cout, k, s, p, d, g, n = cfg
    arrs = [data((2, cin, n), dtype, 1), data((cout, cin // g, k), dtype, 2), data((cout,), dtype, 3)]
    both(lambda x, w, b: F.conv1d(x, w, b, s, p, d, g), lambda x, w, b: TF.conv1d(x, w, b, s, p, d, g), arrs, dtype)


CONV3D = [  # (in, out, kernel, stride, padding, dilation, groups, input D, H, W)
    (2, 3, 2, 1, 0, 1, 1, (3, 4, 5)),
    (4, 4, (2, 3, 1), (1, 2, 1), (1, 0, 1), (2, 1, 1), 2, (5, 6, 3)),
    (2, 2, 3, 2, 1, 1, 2, (4, 5, 5)),
]


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("cfg", CONV3D, ids=str)
def test_conv3d(cfg, dtype):
    cin, cout, k, s, p, d, g, size = cfg
    kernel = (k,) * 3 if isinstance(k, int) else k
    arrs = [data((1, cin, *size), dtype, 4), data((cout, cin // g, *kernel), dtype, 5), data((cout,), dtype, 6)]
    both(lambda x, w, b: F.conv3d(x, w, b, s, p, d, g), lambda x, w, b: TF.conv3d(x, w, b, s, p, d, g), arrs, dtype)


OF_A_SUM = [  # (spatial axes, input shape, weight shape, stride, padding, dilation, groups)
    (1, (2, 4, 9), (6, 2, 3), 2, 1, 1, 2),
    (2, (2, 3, 7, 6), (4, 3, 3, 3), 1, 1, 1, 1),
    (2, (1, 4, 6, 7), (4, 1, 3, 2), (2, 1), (0, 1), (1, 2), 4),
    (2, (2, 5, 6, 6), (3, 5, 1, 1), 1, 0, 1, 1),
    (3, (2, 2, 4, 5, 4), (3, 2, 2, 3, 2), 1, 1, 1, 1),
]


@pytest.mark.parametrize("reduce", ["sum", "mean"])
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("cfg", OF_A_SUM, ids=str)
def test_conv_gradients_of_a_sum_read_no_buffer_of_the_output_gradient(cfg, dtype, reduce):
    """`conv(x, w).sum().backward()` (and `.mean()`): the output's gradient is one value broadcast, which the
    backward reads as that value, not from a buffer of it. The weight gradient then sums the windows once per
    input channel and tap, reading the input alone, and the input gradient sums each tap's weights once, reading
    the weights alone; each sum is written once, at its own size (a buffer of ones made each product a reduction
    loading it for every output channel: 16x64x56x56 k3, 7 s one thread, 15 ms now). Against torch."""
    nd, xs, ws, s, p, d, g = cfg
    ours, theirs = (F.conv1d, F.conv2d, F.conv3d)[nd - 1], (TF.conv1d, TF.conv2d, TF.conv3d)[nd - 1]
    x, w = data(xs, dtype, 10), data(ws, dtype, 11)
    lx, lw = lt.asarray(x).requires_grad_(), lt.asarray(w).requires_grad_()
    tx, tw = torch.tensor(x, requires_grad=True), torch.tensor(w, requires_grad=True)
    y = ours(lx, lw, None, s, p, d, g)
    getattr(y, reduce)().backward()
    getattr(theirs(tx, tw, None, s, p, d, g), reduce)().backward()
    for grad, source in ((lw.grad, lx), (lx.grad, lw)):
        sched = lt.schedule(grad)
        assert all(n.shape != y.shape for item in sched for n in item.outputs)
        assert all(n.numel <= w.size for item in sched if "sum" in str(item.kernel) for n in item.outputs)
        written = {id(n) for item in sched for n in item.outputs}
        assert {id(n) for item in sched for n in item.inputs if id(n) not in written} == {id(source.node)}
    check(lw.grad, tw.grad)
    check(lx.grad, tx.grad)


TRANSPOSED = [  # (spatial axes, in, out, kernel, stride, padding, output_padding, groups, dilation, input size)
    (1, 3, 4, 3, 1, 0, 0, 1, 1, 5),
    (1, 4, 6, 3, 2, 1, 1, 2, 1, 6),
    (1, 2, 2, 2, 3, 2, 2, 1, 2, 4),
    (2, 3, 4, 3, 1, 0, 0, 1, 1, 5),
    (2, 4, 6, (3, 2), (2, 3), (1, 0), (1, 2), 2, 1, 4),
    (2, 2, 4, 3, 2, 2, 0, 2, (2, 1), 5),
    (2, 1, 1, 1, 1, 0, 0, 1, 1, 3),
    (3, 2, 3, 2, 2, 0, 1, 1, 1, 3),
    (3, 4, 2, 3, (1, 2, 1), 1, 0, 2, 1, 3),
]


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("cfg", TRANSPOSED, ids=str)
def test_conv_transpose(cfg, dtype):
    nd, cin, cout, k, s, p, op, g, d, n = cfg
    kernel = (k,) * nd if isinstance(k, int) else k
    arrs = [data((2, cin, *(n,) * nd), dtype, 7), data((cin, cout // g, *kernel), dtype, 8), data((cout,), dtype, 9)]
    ours = (F.conv_transpose1d, F.conv_transpose2d, F.conv_transpose3d)[nd - 1]
    theirs = (TF.conv_transpose1d, TF.conv_transpose2d, TF.conv_transpose3d)[nd - 1]
    both(lambda x, w, b: ours(x, w, b, s, p, op, g, d), lambda x, w, b: theirs(x, w, b, s, p, op, g, d), arrs, dtype)
    both(lambda x, w: ours(x, w, None, s, p, op, g, d), lambda x, w: theirs(x, w, None, s, p, op, g, d),
         [a[0] for a in arrs[:1]] + arrs[1:2], dtype)  # unbatched, no bias


@pytest.mark.parametrize("kind", LAYOUTS)
def test_conv1d_and_conv_transpose2d_of_views(kind):
    for fn, tfn, xs, ws, kw in ((F.conv1d, TF.conv1d, (2, 3, 9), (4, 3, 3), {"stride": 2, "padding": 1}),
                                (F.conv_transpose2d, TF.conv_transpose2d, (2, 3, 4, 5), (3, 2, 3, 3),
                                 {"stride": 2, "padding": 1, "output_padding": 1})):
        (_, x, tx), = [v for v in inputs(xs, lt.float64, seed=10) if v[0] == kind]
        (_, w, tw), = [v for v in inputs(ws, lt.float64, seed=11) if v[0] == kind]
        x, w, tx, tw = x.requires_grad_(), w.requires_grad_(), tx.requires_grad_(), tw.requires_grad_()
        out, tout = fn(x, w, **kw), tfn(tx, tw, **kw)
        check(out, tout)
        up = random_array(tuple(tout.shape), lt.float64, seed=12)
        out.backward(lt.asarray(up))
        tout.backward(torch.tensor(up))
        check(x.grad, tx.grad)
        check(w.grad, tw.grad)


def test_conv_transpose_second_order_gradients():
    x, w = random_array((2, 4, 5, 4), lt.float64, seed=13), random_array((4, 3, 3, 2), lt.float64, seed=14)

    def run(conv, grad, a, b):
        out = conv(a, b, None, 2, 1, 1, 1, 1)
        gx, gw = grad((out ** 2).sum(), (a, b))
        return grad((gx ** 3).sum() + (gw * gw).sum(), (a, b))

    got = run(F.conv_transpose2d, lambda f, v: lt.autograd.gradients(f, v, create_graph=True),
              *(lt.asarray(a).requires_grad_() for a in (x, w)))
    expected = run(TF.conv_transpose2d, lambda f, v: torch.autograd.grad(f, v, create_graph=True),
                   *(torch.tensor(a, requires_grad=True) for a in (x, w)))
    for g, t in zip(got, expected):
        check(g, t, rtol=1e-10)


def test_conv_empty_batch_and_errors():
    x = np.zeros((0, 2, 6), np.float32)
    w = random_array((3, 2, 3), lt.float32, seed=15)
    check(F.conv1d(lt.asarray(x), lt.asarray(w)), TF.conv1d(torch.tensor(x), torch.tensor(w)))
    check(F.conv_transpose1d(lt.asarray(x), lt.asarray(w.transpose(1, 0, 2).copy())),
          TF.conv_transpose1d(torch.tensor(x), torch.tensor(w.transpose(1, 0, 2).copy())))
    with pytest.raises(lt.ShapeError):
        F.conv1d(lt.ones((1, 3, 5)), lt.ones((2, 2, 3)))
    with pytest.raises(lt.ShapeError):
        F.conv3d(lt.ones((1, 2, 5, 5)), lt.ones((2, 2, 3, 3, 3)))
    with pytest.raises(ValueError):
        F.conv_transpose1d(lt.ones((1, 2, 5)), lt.ones((2, 2, 3)), stride=2, output_padding=2)
    with pytest.raises(lt.ShapeError):
        F.conv_transpose2d(lt.ones((1, 3, 5, 5)), lt.ones((2, 2, 3, 3)))


MODULES = [  # (module name, positional arguments, keyword arguments, input shape)
    ("Conv1d", (3, 4, 3), {"stride": 2, "padding": 1}, (2, 3, 9)),
    ("Conv1d", (4, 4, 3), {"padding": 2, "padding_mode": "reflect", "groups": 2}, (1, 4, 7)),
    ("Conv2d", (2, 4, 3), {"padding": "same", "padding_mode": "circular"}, (2, 2, 5, 6)),
    ("Conv2d", (2, 3, (3, 2)), {"padding": (1, 2), "padding_mode": "replicate", "dilation": 2}, (1, 2, 6, 6)),
    ("Conv3d", (2, 2, 2), {"stride": (1, 2, 1), "padding": 1, "bias": False}, (1, 2, 3, 4, 3)),
    ("ConvTranspose1d", (3, 4, 3), {"stride": 2, "padding": 1, "output_padding": 1}, (2, 3, 5)),
    ("ConvTranspose2d", (4, 2, 3), {"stride": 2, "groups": 2, "dilation": 2}, (1, 4, 3, 4)),
    ("ConvTranspose3d", (2, 3, 2), {"stride": 2, "bias": False}, (1, 2, 2, 3, 2)),
]


@pytest.mark.parametrize("cfg", MODULES, ids=str)
def test_conv_modules(cfg):
    name, args, kw, shape = cfg
    torch.manual_seed(2)
    tm = getattr(torch.nn, name)(*args, **kw, dtype=torch.float64)
    m = getattr(nn, name)(*args, **kw, dtype=lt.float64)
    assert [n for n, _ in m.named_parameters()] == [n for n, _ in tm.named_parameters()]
    for (_, p), (_, tp) in zip(m.named_parameters(), tm.named_parameters()):
        assert p.shape == tuple(tp.shape)
    m.load_state_dict({k: v.detach().numpy() for k, v in tm.state_dict().items()})
    arr = random_array(shape, lt.float64, seed=16)
    x, t = lt.asarray(arr).requires_grad_(), torch.tensor(arr, requires_grad=True)
    out, tout = m(x), tm(t)
    check(out, tout)
    up = random_array(tuple(tout.shape), lt.float64, seed=17)
    out.backward(lt.asarray(up))
    tout.backward(torch.tensor(up))
    check(x.grad, t.grad)
    tparams = dict(tm.named_parameters())
    for pname, p in m.named_parameters():
        check(p.grad, tparams[pname].grad)


def test_conv_transpose_module_output_size_and_initialization():
    m, tm = nn.ConvTranspose2d(3, 2, 3, stride=2, padding=1), torch.nn.ConvTranspose2d(3, 2, 3, stride=2, padding=1)
    m.load_state_dict({k: v.detach().numpy() for k, v in tm.state_dict().items()})
    arr = random_array((1, 3, 4, 4), lt.float32, seed=18)
    check(m(lt.asarray(arr), output_size=(8, 8)), tm(torch.tensor(arr), output_size=(8, 8)), rtol=1e-5, atol=1e-5)
    bound = 1 / np.sqrt(2 * 9)  # fan_in of the weight (in, out / groups, kH, kW) is out / groups * kH * kW
    fresh = nn.ConvTranspose2d(3, 2, 3).weight.numpy()
    assert np.abs(fresh).max() <= bound and np.abs(fresh).max() > bound / 2
    with pytest.raises(ValueError):
        nn.ConvTranspose2d(3, 2, 3, padding_mode="reflect")


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("cfg", [((2, 3, 6, 7), 3, 1, 0, 1), ((1, 2, 8, 8), (2, 3), 2, 1, (2, 1)),
                                 ((2, 5, 5), 2, 1, 1, 2), ((1, 1, 4, 4), 2, 2, 0, 1)], ids=str)
def test_unfold_and_fold(cfg, dtype):
    shape, k, d, p, s = cfg
    both(lambda x: F.unfold(x, k, d, p, s), lambda t: TF.unfold(t, k, d, p, s), [data(shape, dtype, 19)], dtype)
    cols = tuple(TF.unfold(torch.zeros(shape), k, d, p, s).shape)
    both(lambda x: F.fold(x, shape[-2:], k, d, p, s), lambda t: TF.fold(t, shape[-2:], k, d, p, s),
         [data(cols, dtype, 20)], dtype)
    m, tm = nn.Fold(shape[-2:], k, d, p, s), torch.nn.Fold(shape[-2:], k, d, p, s)
    arr = data(cols, dtype, 21)
    check(m(lt.asarray(arr)), tm(torch.tensor(arr)))
    arr = data(shape, dtype, 22)
    check(nn.Unfold(k, d, p, s)(lt.asarray(arr)), torch.nn.Unfold(k, d, p, s)(torch.tensor(arr)))
    with pytest.raises(lt.ShapeError):
        F.fold(lt.ones((1, 5, 4)), (4, 4), 2)
