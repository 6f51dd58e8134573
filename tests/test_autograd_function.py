"""`lt.autograd.Function` against `torch.autograd.Function`: each Function below is written once, for either
base class, and run by both; values and gradients (first and second order) compared, on float32 and float64,
0-d, size-0 and non-contiguous inputs."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import lazytensor as lt
from conftest import FLOAT_DTYPES, check, check_two_orders, inputs, random_array

pytestmark = pytest.mark.fast


def legendre(base):
    """PyTorch's tutorial Function (P3, its input saved)."""
    class LegendrePolynomial3(base):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return 0.5 * (5 * x ** 3 - 3 * x)

        @staticmethod
        def backward(ctx, g):
            x, = ctx.saved_tensors
            return g * 1.5 * (5 * x ** 2 - 1)
    return LegendrePolynomial3


def exp_saving_output(base):
    class Exp(base):
        @staticmethod
        def forward(ctx, x):
            y = x.exp()
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, g):
            y, = ctx.saved_tensors
            return g * y
    return Exp


def scale_and_total(base, materialize=True):
    """Two outputs, a non-tensor argument, and `needs_input_grad` consulted."""
    class ScaleAndTotal(base):
        @staticmethod
        def forward(ctx, x, k, w):
            ctx.k = k
            ctx.set_materialize_grads(materialize)
            ctx.save_for_backward(x, w)
            return x * w * k, (x * w).sum(-1)

        @staticmethod
        def backward(ctx, g_scaled, g_total):
            x, w = ctx.saved_tensors
            gx = gw = None
            if g_scaled is not None:
                gx, gw = g_scaled * w * ctx.k, g_scaled * x * ctx.k
            if g_total is not None:
                tx, tw = g_total[..., None] * w, g_total[..., None] * x
                gx, gw = (tx if gx is None else gx + tx), (tw if gw is None else gw + tw)
            return (gx if ctx.needs_input_grad[0] else None), None, (gw if ctx.needs_input_grad[2] else None)
    return ScaleAndTotal


def both(make, *args, **kwargs):
    return make(lt.autograd.Function, *args, **kwargs), make(torch.autograd.Function, *args, **kwargs)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("shape", [(), (3, 4), (0, 5)])
@pytest.mark.parametrize("make", [legendre, exp_saving_output])
def test_first_and_second_order(make, shape, dtype):
    """The Function's backward is what runs, on every layout; with create_graph its gradient is differentiated
    again, through the saved input or the saved output."""
    ours, theirs = both(make)
    for _, x, tx in inputs(shape, dtype, seed=3, low=-1, high=1):
        x, tx = x.requires_grad_(), tx.requires_grad_()
        check_two_orders(ours.apply(x), theirs.apply(tx), x, tx)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("used", ["both", "scaled", "total"])
@pytest.mark.parametrize("materialize", [True, False])
def test_two_outputs_one_backward(used, materialize, dtype):
    """Both outputs' gradients reach one call of backward (an unused output's as zeros, or None without
    materialize); a non-tensor argument gets None; an argument that needs no grad is left out."""
    ours, theirs = both(scale_and_total, materialize)
    arr, warr = random_array((3, 4), dtype, seed=4), random_array((3, 4), dtype, seed=5)
    x, tx = lt.asarray(arr).requires_grad_(), torch.tensor(arr, requires_grad=True)
    w, tw = lt.asarray(warr), torch.tensor(warr)
    (s, t), (ts, tt) = ours.apply(x, 2.5, w), theirs.apply(tx, 2.5, tw)
    check(s, ts)
    check(t, tt)
    pick = {"both": lambda a, b: (a.sin().sum() + (b * b).sum()), "scaled": lambda a, b: a.sin().sum(),
            "total": lambda a, b: (b * b).sum()}[used]
    pick(s, t).backward()
    pick(ts, tt).backward()
    check(x.grad, tx.grad)
    assert w.grad is None


def test_setup_context_spelling():
    """PyTorch 2's spelling: forward without ctx, then setup_context(ctx, inputs, output)."""
    def make(base):
        class Mul(base):
            @staticmethod
            def forward(x, y):
                return x * y

            @staticmethod
            def setup_context(ctx, inputs, output):
                ctx.save_for_backward(*inputs)

            @staticmethod
            def backward(ctx, g):
                x, y = ctx.saved_tensors
                return g * y, g * x
        return Mul
    ours, theirs = both(make)
    a, b = random_array((2, 3), lt.float32, seed=6), random_array((2, 3), lt.float32, seed=7)
    x, y = lt.asarray(a).requires_grad_(), lt.asarray(b).requires_grad_()
    tx, ty = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
    ours.apply(x, y).sum().backward()
    theirs.apply(tx, ty).sum().backward()
    check(x.grad, tx.grad)
    check(y.grad, ty.grad)


def test_non_differentiable_outputs():
    """An output marked non-differentiable, and an integer output, take no gradient and require none."""
    def make(base):
        class SplitFloor(base):
            @staticmethod
            def forward(ctx, x):
                low = x.floor()
                ctx.mark_non_differentiable(low)
                return x - low, low, x.argmax(-1)

            @staticmethod
            def backward(ctx, g_frac, g_low, g_arg):
                return g_frac
        return SplitFloor
    ours, theirs = both(make)
    arr = random_array((3, 5), lt.float64, seed=8)
    x, tx = lt.asarray(arr).requires_grad_(), torch.tensor(arr, requires_grad=True)
    (frac, low, arg), (tfrac, tlow, targ) = ours.apply(x), theirs.apply(tx)
    assert (frac.requires_grad, low.requires_grad, arg.requires_grad) == (True, False, False)
    assert (tfrac.requires_grad, tlow.requires_grad, targ.requires_grad) == (True, False, False)
    check(low, tlow)
    check(arg, targ)
    (frac * frac).sum().backward()
    (tfrac * tfrac).sum().backward()
    check(x.grad, tx.grad)


def test_broadcast_gradient_is_summed():
    """A gradient of the shape the argument broadcasts to is summed back to the argument's shape, as PyTorch's."""
    def make(base):
        class AddRow(base):
            @staticmethod
            def forward(ctx, x, row):
                return x + row

            @staticmethod
            def backward(ctx, g):
                return g, g
        return AddRow
    ours, theirs = both(make)
    a, r = random_array((4, 3), lt.float32, seed=9), random_array((3,), lt.float32, seed=10)
    x, row = lt.asarray(a).requires_grad_(), lt.asarray(r).requires_grad_()
    tx, trow = torch.tensor(a, requires_grad=True), torch.tensor(r, requires_grad=True)
    (ours.apply(x, row) * x).sum().backward()
    (theirs.apply(tx, trow) * tx).sum().backward()
    check(row.grad, trow.grad)
    check(x.grad, tx.grad)


def test_grad_fn_and_no_grad():
    """`grad_fn` is named by the Function's class, as PyTorch's; under no_grad, or with no input that requires
    grad, apply records nothing."""
    ours, theirs = both(legendre)
    x, tx = lt.ones(3, requires_grad=True), torch.ones(3, requires_grad=True)
    assert ours.apply(x).grad_fn.name() == theirs.apply(tx).grad_fn.name() == "LegendrePolynomial3Backward"
    with lt.no_grad():
        assert not ours.apply(x).requires_grad
    assert not ours.apply(lt.ones(3)).requires_grad


def test_saved_input_keeps_its_value():
    """A saved input changed in place after apply: the backward reads the value it saved (PyTorch refuses the
    change instead; both give the gradient at the value apply saw)."""
    ours, theirs = both(legendre)
    arr = random_array((4,), lt.float32, seed=11, low=-1, high=1)
    x, tx = lt.asarray(arr).requires_grad_(), torch.tensor(arr, requires_grad=True)
    h = x * 1
    y = ours.apply(h)
    h += 1
    y.sum().backward()
    theirs.apply(tx * 1).sum().backward()
    check(x.grad, tx.grad)


def test_wrong_gradients_are_clear_errors():
    def make(count, shape):
        class Bad(lt.autograd.Function):
            @staticmethod
            def forward(ctx, x, y):
                return x * y

            @staticmethod
            def backward(ctx, g):
                return (lt.ones(shape),) * count
        return Bad
    x, y = lt.ones(3, requires_grad=True), lt.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"Bad.backward returned 1 gradients, forward took 2 arguments"):
        make(1, (3,)).apply(x, y).sum().backward()
    with pytest.raises(RuntimeError, match=r"gradient of shape \(1,\) for argument 0 of shape \(3,\)"):
        make(2, (1,)).apply(x, y).sum().backward()
    np.testing.assert_array_equal(make(3, (3,)).apply(x, y).numpy(), np.ones(3))  # forward alone is fine
