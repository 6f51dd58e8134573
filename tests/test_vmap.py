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


def typed(shape: tuple[int, ...], dtype: lt.DType, seed: int = 0) -> tuple[lt.Tensor, torch.Tensor]:
    a = random_array(shape, dtype, seed)
    return lt.asarray(a), torch.tensor(a)


def gather_scatter(a, index):
    return a.gather(1, index).scatter_add(1, index, a)


# one function per family of primitives, each written with the methods both libraries share
PRIMITIVES = {
    "elementwise": lambda a, b: (a * b + a).abs() - b,
    "reduce": lambda a, b: (a * b).sum(0) + a.amax(-1, keepdim=True),
    "reshape_permute": lambda a, b: (a.T.reshape(-1) * b.reshape(-1)).reshape(a.shape[1], -1).permute(1, 0),
    "expand_flip": lambda a, b: a[:, :1].expand(a.shape).flip(0) * b.flip(-1),
    "slice_pad": lambda a, b: torch.nn.functional.pad(a[1::2, ::2], (1, 2)) if isinstance(a, torch.Tensor)
    else lt.nn.functional.pad(a[1::2, ::2], (1, 2)),
    "contraction": lambda a, b: a @ b.T,
    "gather_scatter": lambda a, b: gather_scatter(a, (b.abs() % a.shape[1]).long()),
    "sort_scan": lambda a, b: (a.sort(-1)[0] if isinstance(a, torch.Tensor) else a.sort(-1)).cumsum(0) + b,
}


@pytest.mark.parametrize("dtype", [lt.float32, lt.float64, lt.int64])
@pytest.mark.parametrize("name", sorted(PRIMITIVES))
def test_each_primitive_against_torch(dtype, name):
    f = PRIMITIVES[name]
    (x, tx), (y, ty) = typed((4, 6, 5), dtype), typed((6, 5, 4), dtype, seed=1)
    # x mapped on axis 0, y on its last axis, the result's batch axis last
    check(lt.vmap(f, in_axes=(0, -1), out_axes=-1)(x, y), torch.func.vmap(f, in_dims=(0, -1), out_dims=-1)(tx, ty))
    # y not mapped: broadcast to every example
    check(lt.vmap(f, in_axes=(1, None))(x.permute(1, 0, 2), y[..., 0]),
          torch.func.vmap(f, in_dims=(1, None))(tx.permute(1, 0, 2), ty[..., 0]))


@pytest.mark.parametrize("dtype", [lt.float32, lt.int64])
def test_zero_d_examples_noncontiguous_inputs_and_empty_batches(dtype):
    (x, tx), (y, ty) = typed((5, 3), dtype), typed((3, 5), dtype, seed=1)
    f = lambda a, b: a * 2 + b
    check(lt.vmap(f)(x[:, 1], y[1]), torch.func.vmap(f)(tx[:, 1], ty[1]))  # 0-d examples, strided views
    check(lt.vmap(f, in_axes=(0, 1))(x.T.T, y), torch.func.vmap(f, in_dims=(0, 1))(tx, ty))
    check(lt.vmap(lambda a: a.flip(0).sum())(x.T[::-1]), torch.func.vmap(lambda a: a.flip(0).sum())(tx.T.flip(0)))
    empty = lt.vmap(lambda a: (a * 2).sum(-1), out_axes=0)(x[:0])
    assert empty.shape == (0,) and empty.dtype == dtype


def test_graph_does_not_grow_with_the_mapped_size():
    def loss(w, x, y):
        return ((x @ w).tanh().sum() - y) ** 2

    w = lt.asarray(random_array((4, 3), lt.float32, 0))

    def nodes(n: int) -> int:
        xs, ys = lt.asarray(random_array((n, 4), lt.float32, 1)), lt.asarray(random_array((n,), lt.float32, 2))
        out = lt.vmap(lt.grad(loss), in_axes=(None, 0, 0))(w, xs, ys)
        return len(lt.graph.toposort([out.node]))

    assert nodes(2) == nodes(1000)


def mlp_loss(params, x, y):
    w1, b1, w2, b2 = params
    h = (x @ w1 + b1).relu()
    return ((h @ w2 + b2).log_softmax(-1) * y).sum().neg()


def test_per_example_gradients_of_an_mlp():
    shapes = [(6, 8), (8,), (8, 3), (3,)]
    params = [data(*s, seed=i) for i, s in enumerate(shapes)]
    (x, tx), (y, ty) = data(16, 6, seed=9), data(16, 3, seed=10)
    got = lt.vmap(lt.grad(mlp_loss), in_axes=(None, 0, 0))([p for p, _ in params], x, y)
    want = torch.func.vmap(torch.func.grad(mlp_loss), in_dims=(None, 0, 0))([t for _, t in params], tx, ty)
    for g, w in zip(got, want):
        check(g, w)


def test_grad_of_vmap_follows_autograd_records():
    (x, tx), (w, tw), (v, tv) = data(5, 4), data(4, 3, seed=1), data(4, seed=2)

    def f(lib, w, v):  # softmax and ** 2 have custom backwards; v reaches f as a closure, detached once
        mapped = lib.vmap if lib is lt else torch.func.vmap
        g = lambda r, w: (r @ w).softmax(-1).log().sum() + ((r * v.detach()) ** 2 * v).sum()
        return mapped(g, (0, None))(x if lib is lt else tx, w).sum()

    got = lt.grad(lambda w, v: f(lt, w, v), argnums=(0, 1))(w, v)
    want = torch.func.grad(lambda w, v: f(torch.func, w, v), argnums=(0, 1))(tw, tv)
    for g, e in zip(got, want):
        check(g, e)
    # a second derivative through vmap(grad)
    loss = lambda w, r: ((r @ w).tanh() ** 2).sum()
    check(lt.grad(lambda w: lt.vmap(lt.grad(loss), (None, 0))(w, x).sum())(w),
          torch.func.grad(lambda w: torch.func.vmap(torch.func.grad(loss), (None, 0))(w, tx).sum())(tw))


def test_reading_data_inside_fn_raises():
    x, _ = data(3, 2)
    for bad in (lambda a: a.sum().item(), lambda a: a[a > 0], lambda a: a if bool(a.sum() > 0) else -a,
                lambda a: (a * 2).realize()):
        with pytest.raises(lt.VmapError, match="test_vmap.py"):
            lt.vmap(bad)(x)

    def rebinds(a):
        a += 1
        return a

    with pytest.raises(lt.VmapError, match="rebinds"):
        lt.vmap(rebinds)(x.long())
    with pytest.raises(RuntimeError, match="in place"):  # a float stand-in is a leaf that requires grad
        lt.vmap(rebinds)(x)


def test_random_draws_are_shared_by_the_examples():
    x = lt.zeros((4, 3))
    out = lt.vmap(lambda a: a + lt.random.randn(3))(x).numpy()
    np.testing.assert_array_equal(out, np.broadcast_to(out[0], out.shape))


def test_out_axes_per_output_no_grad_and_jit_of_grad_of_vmap():
    (x, tx), (w, tw) = data(6, 4), data(4, 3, seed=1)
    f = lambda r, w: (r @ w, (r @ w).softmax(-1).log().sum())
    got, want = lt.vmap(f, (0, None), (1, 0))(x, w), torch.func.vmap(f, (0, None), (1, 0))(tx, tw)
    for g, e in zip(got, want):
        check(g, e)
    with lt.no_grad():
        assert not lt.vmap(lambda r: f(r, w)[1])(x.requires_grad_()).requires_grad
    step = lt.jit(lt.grad(lambda w: lt.vmap(f, (0, None))(x, w)[1].sum()))
    want = torch.func.grad(lambda w: torch.func.vmap(f, (0, None))(tx, w)[1].sum())(tw)
    for _ in range(3):
        check(step(w), want)
