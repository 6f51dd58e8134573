"""`lt.autograd.functional` (vjp, jvp, jacobian, hessian) against torch.autograd.functional: one and several inputs
and outputs, float32 and float64, and an input the output does not depend on."""
from __future__ import annotations

import pytest
import torch

import lazytensor as lt
from conftest import FLOAT_DTYPES, check, random_array

pytestmark = pytest.mark.fast
F = lt.autograd.functional
TF = torch.autograd.functional

FUNCTIONS = {  # (ours, torch's), each of two inputs of shapes (3, 2) and (3, 2)
    "elementwise": (lambda x, y: (x.sin() * y).sum(0), lambda x, y: (x.sin() * y).sum(0)),
    "matmul": (lambda x, y: x.exp() @ y.T, lambda x, y: x.exp() @ y.T),
    "two outputs": (lambda x, y: (x * y, (x ** 2).sum()), lambda x, y: (x * y, (x ** 2).sum())),
    "unused input": (lambda x, y: x.tanh().sum(1), lambda x, y: x.tanh().sum(1)),
}


def pair(dtype, seed=0):
    a, b = random_array((3, 2), dtype, seed, -1, 1), random_array((3, 2), dtype, seed + 1, -1, 1)
    return (lt.asarray(a), lt.asarray(b)), (torch.tensor(a), torch.tensor(b))


def check_tree(got, want):
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want)
        for g, w in zip(got, want):
            check_tree(g, w)
    else:
        check(got, want.detach())


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("name", FUNCTIONS)
def test_jacobian(dtype, name):
    ours, theirs = FUNCTIONS[name]
    (x, y), (tx, ty) = pair(dtype)
    check_tree(F.jacobian(ours, (x, y)), TF.jacobian(theirs, (tx, ty)))
    check_tree(F.jacobian(lambda a: ours(a, y), x), TF.jacobian(lambda a: theirs(a, ty), tx))


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("name", FUNCTIONS)
def test_vjp_and_jvp(dtype, name):
    ours, theirs = FUNCTIONS[name]
    (x, y), (tx, ty) = pair(dtype)
    outs = theirs(tx, ty)
    cot = tuple(torch.tensor(random_array(tuple(o.shape), dtype, 5 + k)) for k, o in enumerate(outs)) \
        if isinstance(outs, tuple) else torch.tensor(random_array(tuple(outs.shape), dtype, 5))
    lt_cot = tuple(lt.asarray(c.numpy()) for c in cot) if isinstance(cot, tuple) else lt.asarray(cot.numpy())
    check_tree(F.vjp(ours, (x, y), lt_cot), TF.vjp(theirs, (tx, ty), cot))
    (u, w), (tu, tw) = pair(dtype, seed=9)
    check_tree(F.jvp(ours, (x, y), (u, w)), TF.jvp(theirs, (tx, ty), (tu, tw)))


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_hessian(dtype):
    (x, y), (tx, ty) = pair(dtype)
    check_tree(F.hessian(lambda a: (a ** 3).sum() * a.sum(), x), TF.hessian(lambda a: (a ** 3).sum() * a.sum(), tx))
    check_tree(F.hessian(lambda a, b: (a.sin() * b).sum(), (x, y)),
               TF.hessian(lambda a, b: (a.sin() * b).sum(), (tx, ty)))


def test_defaults_and_errors():
    x = lt.asarray(random_array((), lt.float64, 3))
    tx = torch.tensor(x.numpy())
    check_tree(F.vjp(lambda a: a.exp(), x), TF.vjp(lambda a: a.exp(), tx))
    check_tree(F.jvp(lambda a: a.exp(), x), TF.jvp(lambda a: a.exp(), tx))
    with pytest.raises(ValueError, match="one element"):
        F.vjp(lambda a: a * 2, lt.ones(3))
    with pytest.raises(TypeError, match="tensor"):
        F.jacobian(lambda a: a, [1.0])
