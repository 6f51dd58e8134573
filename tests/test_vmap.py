"""`lt.vmap` against torch.func.vmap: axes in and out, arguments not mapped, pytrees, nesting, and composed with
`lt.grad` (per-example gradients) and `lt.jit`."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import lazytensor as lt
from conftest import check, random_array

pytestmark = pytest.mark.fast


def data(*shape: int, seed: int = 0) -> tuple[lt.Tensor, torch.Tensor]:
    a = random_array(shape, lt.float64, seed)
    return lt.asarray(a), torch.tensor(a)


def test_axes_in_and_out():
    (x, tx), (y, ty) = data(4, 3), data(3, 4, seed=1)
    f = lambda a, b: (a.sin() * b).sum()
    check(lt.vmap(f, in_axes=(0, 1))(x, y), torch.func.vmap(f, in_dims=(0, 1))(tx, ty))
    g = lambda a, b: a[:, None] * b
    check(lt.vmap(g, in_axes=(0, None), out_axes=1)(x, y[0]), torch.func.vmap(g, in_dims=(0, None), out_dims=1)(tx, ty[0]))
    check(lt.vmap(lambda a: a.exp(), in_axes=-1)(x), torch.func.vmap(lambda a: a.exp(), in_dims=-1)(tx))


def test_pytrees_several_outputs_and_nesting():
    (x, tx), (y, ty) = data(2, 3, 5), data(2, 5, seed=2)
    f = lambda d: (d["a"] @ d["b"], d["b"].max())
    got, want = lt.vmap(f)({"a": x, "b": y}), torch.func.vmap(f)({"a": tx, "b": ty})
    for g, w in zip(got, want):
        check(g, w)
    inner = lambda v: (v * v).sum()
    check(lt.vmap(lt.vmap(inner))(x), torch.func.vmap(torch.func.vmap(inner))(tx))


def test_per_example_gradients_with_grad_and_jit():
    (w, tw), (xs, txs), (ys, tys) = data(3), data(8, 3, seed=3), data(8, seed=4)

    def loss(w, x, y):
        return ((x * w).sum() - y) ** 2

    per_example = lt.vmap(lt.grad(loss), in_axes=(None, 0, 0))
    want = torch.func.vmap(torch.func.grad(loss), in_dims=(None, 0, 0))(tw, txs, tys)
    check(per_example(w, xs, ys), want)
    jitted = lt.jit(per_example)
    for _ in range(3):
        check(jitted(w, xs, ys), want)


def test_errors():
    x, _ = data(3, 2)
    with pytest.raises(ValueError, match="one size"):
        lt.vmap(lambda a, b: a + b)(x, lt.zeros((2, 2)))
    with pytest.raises(ValueError, match="in_axes has"):
        lt.vmap(lambda a: a, in_axes=(0, 0))(x)
    with pytest.raises(ValueError, match="outside"):
        lt.vmap(lambda a: a, in_axes=2)(x)
    np.testing.assert_array_equal(lt.vmap(lambda a: a * 2)(x).numpy(), x.numpy() * 2)
