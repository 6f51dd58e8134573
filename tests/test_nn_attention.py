"""F.scaled_dot_product_attention and nn.MultiheadAttention against torch: outputs and gradients (inputs and
parameters), masks of both kinds, causal, grouped-query heads, views, empty edges; the scale and the mask
fused into the softmax's kernel."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import lazytensor as lt
from conftest import LAYOUTS, check, inputs, random_array
from lazytensor import nn

F = nn.functional
TF = torch.nn.functional
# float32 sums of different orders (the softmax's and the products') differ by a few ulps of the largest term
TOL = {lt.float32: {"rtol": 1e-4, "atol": 1e-5}, lt.float64: {}}


def both(arrs, fn_lt, fn_torch, dtype, seed=20, grad=True):
    """The function of the same data in both libraries, its value, then the gradients of every input from one
    random upstream gradient."""
    xs = [lt.asarray(a).requires_grad_(grad) for a in arrs]
    ts = [torch.tensor(a, requires_grad=grad) for a in arrs]
    out, tout = fn_lt(*xs), fn_torch(*ts)
    check(out, tout, **TOL[dtype])
    if grad:
        up = random_array(tuple(tout.shape), dtype, seed=seed)
        out.backward(lt.asarray(up))
        tout.backward(torch.tensor(up))
        for x, t in zip(xs, ts):
            check(x.grad, t.grad, **TOL[dtype])


SDPA = [  # (query shape, key length, value width, options)
    ((2, 3, 4, 8), 5, 6, {}),
    ((1, 1, 1, 4), 1, 4, {}),                       # batch 1, one query, one key
    ((3, 7, 5), 7, 5, {"is_causal": True}),         # no head axis
    ((2, 2, 4, 3), 6, 3, {"is_causal": True}),      # more keys than queries: the top-left triangle
    ((2, 2, 6, 3), 4, 5, {"is_causal": True}),      # more queries than keys
    ((2, 3, 4, 8), 5, 6, {"scale": 0.3}),
    ((4, 8), 6, 2, {}),                             # 2-d
]


@pytest.mark.parametrize("dtype", [lt.float32, lt.float64], ids=str)
@pytest.mark.parametrize("cfg", SDPA, ids=str)
def test_sdpa(cfg, dtype):
    qshape, s, ev, kw = cfg
    q = random_array(qshape, dtype, seed=1)
    k = random_array((*qshape[:-2], s, qshape[-1]), dtype, seed=2)
    v = random_array((*qshape[:-2], s, ev), dtype, seed=3)
    both((q, k, v), lambda *a: F.scaled_dot_product_attention(*a, **kw),
         lambda *a: TF.scaled_dot_product_attention(*a, **kw), dtype)


@pytest.mark.parametrize("dtype", [lt.float32, lt.float64], ids=str)
@pytest.mark.parametrize("kind", ["bool", "float", "bool-broadcast", "float-per-head", "row-masked"])
def test_sdpa_masks(kind, dtype):
    """Boolean masks keep where True, float masks add; a query whose keys are all masked gets zeros and a zero
    gradient, as torch's."""
    rng = np.random.default_rng(4)
    q, k, v = (random_array(s, dtype, seed=i) for i, s in enumerate([(2, 3, 4, 8), (2, 3, 5, 8), (2, 3, 5, 6)]))
    if kind == "bool":
        mask = rng.random((4, 5)) < 0.7
    elif kind == "bool-broadcast":
        mask = rng.random((2, 1, 1, 5)) < 0.7
        mask[..., 0] = True
    elif kind == "float":
        mask = random_array((4, 5), dtype, seed=5)
    elif kind == "float-per-head":
        mask = random_array((3, 4, 5), dtype, seed=6)
    else:
        mask = rng.random((2, 3, 4, 5)) < 0.6
        mask[:, :, 1] = False
        mask[0, 2, 3] = False
    both((q, k, v), lambda *a: F.scaled_dot_product_attention(*a, attn_mask=lt.asarray(mask)),
         lambda *a: TF.scaled_dot_product_attention(*a, attn_mask=torch.tensor(mask)), dtype)


@pytest.mark.parametrize("kind", LAYOUTS)
def test_sdpa_of_views(kind):
    (_, q, tq), = [v for v in inputs((2, 3, 4, 6), lt.float64, seed=7) if v[0] == kind]
    (_, k, tk), = [v for v in inputs((2, 3, 5, 6), lt.float64, seed=8) if v[0] == kind]
    (_, v, tv), = [v for v in inputs((2, 3, 5, 6), lt.float64, seed=9) if v[0] == kind]
    q, k, v = (a.requires_grad_() for a in (q, k, v))
    tq, tk, tv = (a.requires_grad_() for a in (tq, tk, tv))
    out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    tout = TF.scaled_dot_product_attention(tq, tk, tv, is_causal=True)
    check(out, tout)
    up = random_array(tuple(tout.shape), lt.float64, seed=10)
    out.backward(lt.asarray(up))
    tout.backward(torch.tensor(up))
    for a, t in ((q, tq), (k, tk), (v, tv)):
        check(a.grad, t.grad)


@pytest.mark.parametrize("dtype", [lt.float32, lt.float64], ids=str)
@pytest.mark.parametrize("masked", [False, True])
def test_sdpa_grouped_query_heads(masked, dtype):
    q, k, v = (random_array(s, dtype, seed=i) for i, s in enumerate([(2, 6, 4, 8), (2, 2, 5, 8), (2, 2, 5, 3)]))
    mask = np.random.default_rng(11).random((6, 4, 5)) < 0.8 if masked else None

    def lt_fn(*a):
        return F.scaled_dot_product_attention(*a, attn_mask=None if mask is None else lt.asarray(mask),
                                              enable_gqa=True)

    def torch_fn(*a):
        return TF.scaled_dot_product_attention(*a, attn_mask=None if mask is None else torch.tensor(mask),
                                               enable_gqa=True)
    both((q, k, v), lt_fn, torch_fn, dtype)


def test_sdpa_empty_edges():
    """No queries: an empty result; no keys: every query is fully masked, zeros (torch's math gives the same)."""
    for (l, s) in ((0, 5), (4, 0)):
        q, k, v = np.ones((2, l, 3)), np.ones((2, s, 3)), np.ones((2, s, 4))
        out = F.scaled_dot_product_attention(*(lt.asarray(a) for a in (q, k, v)))
        check(out, np.zeros((2, l, 4)))


def test_sdpa_dropout_and_errors():
    q = lt.asarray(random_array((2, 4, 3), lt.float32, seed=12))
    check(F.scaled_dot_product_attention(q, q, q, dropout_p=1.0), np.zeros((2, 4, 3), np.float32))
    dropped = F.scaled_dot_product_attention(q, q, q, dropout_p=0.5).numpy()
    assert dropped.shape == (2, 4, 3) and np.isfinite(dropped).all()
    with pytest.raises(ValueError):
        F.scaled_dot_product_attention(q, q, q, attn_mask=lt.ones((4, 4), dtype=lt.bool_), is_causal=True)
    with pytest.raises(lt.ShapeError):
        F.scaled_dot_product_attention(q, q[..., :2], q)
    with pytest.raises(lt.ShapeError):
        F.scaled_dot_product_attention(q.reshape(1, 2, 4, 3)[:, :1].broadcast_to(1, 3, 4, 3), q.reshape(1, 2, 4, 3),
                                       q.reshape(1, 2, 4, 3), enable_gqa=True)  # 3 query heads over 2


def test_sdpa_scale_and_mask_fuse_into_the_softmax():
    """Three kernels: the scores' contraction, the softmax with the scale and the mask in its loads, the
    weights times v."""
    q, k, v = (lt.asarray(random_array((2, 3, 8, 16), lt.float32, seed=i)) for i in range(3))
    mask = lt.asarray(np.tril(np.ones((8, 8), bool)))
    for kw in ({"attn_mask": mask}, {"attn_mask": mask.cast(lt.float32).realize()}, {"is_causal": True}, {}):
        assert len(lt.schedule(F.scaled_dot_product_attention(q, k, v, scale=0.7, **kw))) == 3


def mha_pair(e, h, dtype, **kw):
    torch.manual_seed(0)
    tm = torch.nn.MultiheadAttention(e, h, dtype=torch.float64 if dtype == lt.float64 else torch.float32, **kw)
    m = nn.MultiheadAttention(e, h, dtype=dtype, **kw)
    m.load_state_dict({k: v.detach().numpy() for k, v in tm.state_dict().items()})
    return m, tm


MHA = [  # (embed dim, heads, options, query length, key length, batch (0: unbatched))
    (8, 2, {}, 4, 5, 3),
    (8, 2, {"batch_first": True}, 4, 4, 1),
    (6, 3, {"bias": False}, 3, 5, 2),
    (8, 4, {"kdim": 5, "vdim": 3, "batch_first": True}, 4, 6, 2),
    (8, 2, {}, 4, 5, 0),
    (8, 2, {"add_bias_kv": True}, 4, 5, 3),
    (8, 2, {"add_zero_attn": True, "batch_first": True}, 4, 5, 2),
    (8, 4, {"add_bias_kv": True, "add_zero_attn": True, "kdim": 5, "vdim": 3}, 3, 4, 2),
]


@pytest.mark.parametrize("dtype", [lt.float32, lt.float64], ids=str)
@pytest.mark.parametrize("masks", ["none", "bool", "float"])
@pytest.mark.parametrize("cfg", MHA, ids=str)
def test_multihead_attention(cfg, masks, dtype):
    e, h, kw, n_l, n_s, n = cfg
    m, tm = mha_pair(e, h, dtype, **kw)
    batch_first = kw.get("batch_first", False)

    def shape(length, dim):
        if n == 0:
            return (length, dim)
        return (n, length, dim) if batch_first else (length, n, dim)
    arrs = [random_array(shape(n_l, e), dtype, seed=1), random_array(shape(n_s, kw.get("kdim", e)), dtype, seed=2),
            random_array(shape(n_s, kw.get("vdim", e)), dtype, seed=3)]
    rng = np.random.default_rng(5)
    opts_lt: dict = {}
    opts_t: dict = {}
    if masks != "none":
        kpm = rng.random((max(n, 1), n_s) if n else (n_s,)) < 0.3
        kpm[..., 0] = False
        am = rng.random((n_l, n_s)) < 0.3
        am[:, 1] = False
        if masks == "float":
            kpm, am = np.where(kpm, -np.inf, 0.5).astype(dtype.name), random_array((n_l, n_s), dtype, seed=6)
        opts_lt = {"key_padding_mask": lt.asarray(kpm), "attn_mask": lt.asarray(am)}
        opts_t = {"key_padding_mask": torch.tensor(kpm), "attn_mask": torch.tensor(am)}
    for average in (True, False):
        xs = [lt.asarray(a).requires_grad_() for a in arrs]
        ts = [torch.tensor(a, requires_grad=True) for a in arrs]
        out, w = m(*xs, average_attn_weights=average, **opts_lt)
        tout, tw = tm(*ts, average_attn_weights=average, **opts_t)
        check(out, tout, **TOL[dtype])
        check(w, tw, **TOL[dtype])
        up = random_array(tuple(tout.shape), dtype, seed=7)
        upw = random_array(tuple(tw.shape), dtype, seed=8)
        ((out * lt.asarray(up)).sum() + (w * lt.asarray(upw)).sum()).backward()
        ((tout * torch.tensor(up)).sum() + (tw * torch.tensor(upw)).sum()).backward()
        for x, t in zip(xs, ts):
            check(x.grad, t.grad, **TOL[dtype])
        tparams = dict(tm.named_parameters())
        for name, p in m.named_parameters():
            check(p.grad, tparams[name].grad, **TOL[dtype])
            p.grad = None
            tparams[name].grad = None


def test_multihead_attention_3d_mask_no_weights_and_parameters():
    m, tm = mha_pair(8, 2, lt.float64, batch_first=True)
    assert [n for n, _ in m.named_parameters()] == [n for n, _ in tm.named_parameters()]
    q = random_array((3, 4, 8), lt.float64, seed=1)
    am = np.random.default_rng(2).random((6, 4, 4)) < 0.3
    am[..., 0] = False
    out, w = m(*(lt.asarray(q),) * 3, need_weights=False, attn_mask=lt.asarray(am))
    tout, _ = tm(*(torch.tensor(q),) * 3, need_weights=False, attn_mask=torch.tensor(am))
    assert w is None
    check(out, tout)
    with pytest.raises(ValueError):
        nn.MultiheadAttention(8, 3)
    with pytest.raises(ValueError):
        m(*(lt.asarray(q),) * 3, is_causal=True)
