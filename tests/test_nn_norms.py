"""nn.GroupNorm, F.rms_norm and nn.RMSNorm against torch: values, input and parameter gradients on float32 and
float64 (and the 16-bit floats' forward), batch 1, views, an empty batch."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import lazytensor as lt
from conftest import HALF_DTYPES, LAYOUTS, TORCH_DTYPES, check, inputs, random_array
from lazytensor import nn

F = nn.functional
TF = torch.nn.functional
FLOATS = [lt.float32, lt.float64]
TOL = {lt.float32: {"rtol": 1e-5, "atol": 1e-5}, lt.float64: {}}


def module_pair(name, *args, dtype, **kw):
    tm = getattr(torch.nn, name)(*args, **kw, dtype=TORCH_DTYPES[dtype])
    with torch.no_grad():
        for p in tm.parameters():  # not the initial ones and zeros, so that a mix-up shows
            p.copy_(torch.randn(p.shape, generator=torch.Generator().manual_seed(p.numel())))
    m = getattr(nn, name)(*args, **kw, dtype=dtype)
    m.load_state_dict({k: v.detach().numpy() for k, v in tm.state_dict().items()})
    return m, tm


def run(m, tm, arr, dtype):
    x, t = lt.asarray(arr).requires_grad_(), torch.tensor(arr, requires_grad=True)
    out, tout = m(x), tm(t)
    check(out, tout, **TOL[dtype])
    if not tout.numel():
        return
    up = random_array(tuple(tout.shape), dtype, seed=60)
    out.backward(lt.asarray(up))
    tout.backward(torch.tensor(up))
    check(x.grad, t.grad, **TOL[dtype])
    tparams = dict(tm.named_parameters())
    for name, p in m.named_parameters():
        check(p.grad, tparams[name].grad, **TOL[dtype])


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("cfg", [(3, 6, (2, 6, 4, 5), True), (1, 4, (1, 4, 3), True), (3, 6, (3, 6), False),
                                 (2, 4, (2, 4, 2, 3, 2), True), (2, 4, (0, 4, 3), True)], ids=str)
def test_group_norm_module(cfg, dtype):
    groups, channels, shape, affine = cfg
    m, tm = module_pair("GroupNorm", groups, channels, dtype=dtype, affine=affine, eps=1e-4)
    run(m, tm, random_array(shape, dtype, seed=1), dtype)


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("cfg", [(5, (3, 5), {}), ((4, 5), (2, 3, 4, 5), {"eps": 1e-3}),
                                 (6, (1, 6), {"elementwise_affine": False}), (3, (0, 3), {})], ids=str)
def test_rms_norm_module(cfg, dtype):
    shape_, shape, kw = cfg
    m, tm = module_pair("RMSNorm", shape_, dtype=dtype, **kw)
    run(m, tm, random_array(shape, dtype, seed=2), dtype)


@pytest.mark.parametrize("kind", LAYOUTS)
def test_rms_norm_and_group_norm_of_views(kind):
    (_, x, t), = [v for v in inputs((2, 4, 6), lt.float64, seed=3) if v[0] == kind]
    w = random_array((6,), lt.float64, seed=4)
    lw, tw = lt.asarray(w).requires_grad_(), torch.tensor(w, requires_grad=True)
    x, t = x.requires_grad_(), t.requires_grad_()
    out = F.rms_norm(x, (6,), lw) + F.group_norm(x, 2)
    tout = TF.rms_norm(t, (6,), tw) + TF.group_norm(t, 2)
    check(out, tout)
    up = random_array((2, 4, 6), lt.float64, seed=5)
    out.backward(lt.asarray(up))
    tout.backward(torch.tensor(up))
    check(x.grad, t.grad)
    check(lw.grad, tw.grad)


@pytest.mark.parametrize("dtype", HALF_DTYPES, ids=str)
def test_rms_norm_of_16_bit_floats_computes_in_float32(dtype):
    """A row around 300 with a small spread: its mean square in float32, eps float32's, rounded once."""
    arr = (300 + random_array((3, 64), lt.float32, seed=6)).astype(np.float32)
    w = random_array((64,), lt.float32, seed=7)
    x, lw = lt.asarray(arr).cast(dtype), lt.asarray(w).cast(dtype)
    t, tw = torch.tensor(arr).to(TORCH_DTYPES[dtype]), torch.tensor(w).to(TORCH_DTYPES[dtype])
    check(F.rms_norm(x, 64, lw), TF.rms_norm(t, (64,), tw))
    check(F.rms_norm(x, 64), TF.rms_norm(t, (64,)))


def test_norm_errors():
    with pytest.raises(ValueError):
        nn.GroupNorm(4, 6)
    with pytest.raises(lt.ShapeError):
        nn.GroupNorm(2, 6)(lt.ones((2, 4, 3)))
    with pytest.raises(lt.ShapeError):
        F.rms_norm(lt.ones((2, 4)), (3,))


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("cfg", [(6, (4, 3, 6), {}), ((3, 4), (2, 3, 4), {"eps": 1e-3}), (6, (1, 6), {}),
                                 (5, (2, 5), {"elementwise_affine": False}), (5, (3, 5), {"bias": False}),
                                 (4, (4,), {}), (4, (0, 4), {})], ids=str)
def test_layer_norm_module(cfg, dtype):
    shape_, shape, kw = cfg
    m, tm = module_pair("LayerNorm", shape_, dtype=dtype, **kw)
    run(m, tm, random_array(shape, dtype, seed=8), dtype)


def test_layer_norm_gradient_with_an_infinite_weight():
    """An infinite weight makes every input gradient of its rows NaN, as torch's (fuzzer, grad seed 2611581: a
    backward formula of its own gave inf for some)."""
    x, w, b = (random_array((5, 2), lt.float32, seed=s) for s in (12, 13, 14))
    w[3, 1] = np.inf
    lx, tx = lt.asarray(x).requires_grad_(), torch.tensor(x, requires_grad=True)
    up = random_array((5, 2), lt.float32, seed=15)
    (F.layer_norm(lx, (5, 2), lt.asarray(w), lt.asarray(b)) * lt.asarray(up)).sum().backward()
    (TF.layer_norm(tx, (5, 2), torch.tensor(w), torch.tensor(b)) * torch.tensor(up)).sum().backward()
    check(lx.grad, tx.grad)


@pytest.mark.parametrize("kind", LAYOUTS)
def test_layer_norm_of_views_and_of_a_weight_without_a_bias(kind):
    (_, x, t), = [v for v in inputs((2, 4, 6), lt.float64, seed=9) if v[0] == kind]
    w, b = random_array((6,), lt.float64, seed=10), random_array((6,), lt.float64, seed=11)
    lw, tw = lt.asarray(w).requires_grad_(), torch.tensor(w, requires_grad=True)
    lb, tb = lt.asarray(b), torch.tensor(b)  # a bias that needs no gradient
    x, t = x.requires_grad_(), t.requires_grad_()
    out = F.layer_norm(x, (6,), lw, lb) * F.layer_norm(x, (6,), lw)
    tout = TF.layer_norm(t, (6,), tw, tb) * TF.layer_norm(t, (6,), tw)
    check(out, tout)
    up = random_array((2, 4, 6), lt.float64, seed=12)
    out.backward(lt.asarray(up))
    tout.backward(torch.tensor(up))
    check(x.grad, t.grad)
    check(lw.grad, tw.grad)
    assert lb.grad is None


def test_layer_norm_second_order_gradients():
    """The backward's ops are recorded under create_graph: the gradient's own gradient, for x and the weight."""
    arr, w = random_array((3, 5), lt.float64, seed=13), random_array((5,), lt.float64, seed=14)
    x, lw = lt.asarray(arr).requires_grad_(), lt.asarray(w).requires_grad_()
    t, tw = torch.tensor(arr, requires_grad=True), torch.tensor(w, requires_grad=True)
    gx, = lt.autograd.gradients((F.layer_norm(x, 5, lw) ** 3).sum(), [x], create_graph=True)
    tgx, = torch.autograd.grad((TF.layer_norm(t, (5,), tw) ** 3).sum(), [t], create_graph=True)
    check(gx, tgx)
    (gx * gx).sum().backward()
    (tgx * tgx).sum().backward()
    check(x.grad, t.grad)
    check(lw.grad, tw.grad)


@pytest.mark.parametrize("dtype", HALF_DTYPES, ids=str)
def test_layer_norm_gradients_of_16_bit_floats(dtype):
    """Computed in float32 and rounded once to the input's dtype: against float64's, rounded (torch's own 16-bit
    gradients round on the way and are further off)."""
    arr, w = random_array((4, 16), lt.float32, seed=15), random_array((16,), lt.float32, seed=16)
    tdtype = TORCH_DTYPES[dtype]
    t, tw = (torch.tensor(a).to(tdtype).double().requires_grad_() for a in (arr, w))
    x, lw = (lt.asarray(a).cast(dtype).requires_grad_() for a in (arr, w))
    up = random_array((4, 16), lt.float32, seed=17)
    F.layer_norm(x, 16, lw).backward(lt.asarray(up).cast(dtype))
    TF.layer_norm(t, (16,), tw).backward(torch.tensor(up).to(tdtype).double())
    check(x.grad, t.grad.to(tdtype))
    check(lw.grad, tw.grad.to(tdtype))
