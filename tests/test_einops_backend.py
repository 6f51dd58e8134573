"""einops on tensors (`lazytensor/einops_backend.py`): its operations as users call them, against the same calls
on NumPy arrays, gradients against torch's, and their laziness (a rearrangement and a reduction are one kernel)."""
from __future__ import annotations

import io

import einops
import numpy as np
import pytest
import torch

import lazytensor as lt
from conftest import check

X = np.random.default_rng(0).standard_normal((2, 6, 4, 5)).astype(np.float32)

CALLS = [
    ("rearrange", "b c h w -> b (h w) c", {}),
    ("rearrange", "b (c1 c2) h w -> c2 b h (w c1)", {"c1": 3}),
    ("rearrange", "b c h w -> (b c) h w", {}),
    ("rearrange", "b c h w -> b c 1 h w ()", {}),
    ("rearrange", "... h w -> ... (w h)", {}),
    ("reduce", "b c h w -> b c", {"reduction": "mean"}),
    ("reduce", "b c (h h2) (w w2) -> b c h w", {"reduction": "max", "h2": 2, "w2": 5}),
    ("reduce", "b c h w -> c", {"reduction": "min"}),
    ("reduce", "b c h w -> b () () w", {"reduction": "sum"}),
    ("reduce", "b c h w -> h w", {"reduction": "prod"}),
    ("repeat", "b c h w -> b c (h h2) w", {"h2": 2}),
    ("repeat", "b c h w -> k b c h w", {"k": 3}),
]


@pytest.mark.parametrize("op, pattern, lengths", CALLS, ids=[f"{op}:{p}" for op, p, _ in CALLS])
def test_operations_match_numpys(op, pattern, lengths):
    fn = getattr(einops, op)
    got = fn(lt.asarray(X), pattern, **lengths)
    assert isinstance(got, lt.Tensor)
    check(got, fn(X, pattern, **lengths))


def test_logical_reductions_pack_and_einsum():
    t = lt.asarray(X)
    check(einops.reduce(t > 0, "b c h w -> b h", "any"), einops.reduce(X > 0, "b c h w -> b h", "any"))
    check(einops.reduce(t > -3, "b c h w -> c", "all"), einops.reduce(X > -3, "b c h w -> c", "all"))
    packed, shapes = einops.pack([t, t[:, :, 0]], "b c *")
    np_packed, np_shapes = einops.pack([X, X[:, :, 0]], "b c *")
    assert shapes == np_shapes
    check(packed, np_packed)
    first, second = einops.unpack(packed, shapes, "b c *")
    check(first, X)
    check(second, X[:, :, 0])
    check(einops.einsum(t, t, "b c h w, b c h w -> b c"), np.einsum("bchw,bchw->bc", X, X), rtol=1e-5)


def test_gradients_pass_through_as_torchs():
    t, tt = lt.asarray(X).requires_grad_(), torch.from_numpy(X).requires_grad_()
    for x in (t, tt):
        y = einops.rearrange(x, "b (c1 c2) h w -> b c2 (h w) c1", c1=2)
        y = einops.reduce(y, "b c2 hw c1 -> b c1", "max") * einops.repeat(x[:, 0, 0, 0], "b -> b k", k=2)
        y.sum().backward()
    check(t.grad, tt.grad.numpy())


def test_a_rearrangement_and_a_reduction_are_one_kernel():
    t = lt.asarray(X, device="cpu")
    y = einops.reduce(einops.rearrange(t, "b c h w -> b h w c") * 2, "b h w c -> b c", "sum")
    assert len(lt.explain(y, file=io.StringIO()).kernels) == 1
    check(y, (X * 2).sum((2, 3)), rtol=1e-5)


def test_backend_is_einops_own_choice_for_tensors():
    backend = einops._backends.get_backend(lt.zeros(1))
    assert backend.framework_name == "lazytensor"
    assert not backend.is_appropriate_type(X)
