"""PyTorch's spellings (`lazytensor/pytorch_methods.py`, `lt.bmm`, `lt.baddbmm`, `lt.diag`, `nn.utils`), against
torch: several dtypes and layouts, 0-d and size-0 where the op takes them, gradients where it has one."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy import stats
from test_linalg import factorization

import lazytensor as lt
from conftest import ALL_DTYPES, FLOAT_DTYPES, LAYOUTS, TORCH_DTYPES, check, inputs, layout, random_array
from lazytensor import pytorch_methods
from lazytensor.errors import ShapeError

pytestmark = pytest.mark.fast


@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("shape", [(), (5,), (3, 4), (0, 3)])
def test_t(dtype, shape):
    for _, x, t in inputs(shape, dtype):
        check(x.t(), t.t())
    with pytest.raises(ShapeError, match="at most 2"):
        lt.zeros((2, 3, 4)).t()


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("shapes", [((2, 3, 4), (2, 4, 5)), ((1, 1, 1), (1, 1, 7)), ((3, 0, 2), (3, 2, 4))])
def test_bmm_and_baddbmm_with_gradients(dtype, shapes):
    a, b = (random_array(s, dtype, seed) for seed, s in enumerate(shapes))
    c = random_array((shapes[0][0], shapes[0][1], shapes[1][2]), dtype, 7)
    xa, xb, xc = (lt.asarray(v).requires_grad_() for v in (a, b, c))
    ta, tb, tc = (torch.tensor(v, requires_grad=True) for v in (a, b, c))
    check(lt.bmm(xa, xb), torch.bmm(ta, tb))
    got, want = lt.baddbmm(xc, xa, xb, beta=0.5, alpha=2.0), torch.baddbmm(tc, ta, tb, beta=0.5, alpha=2.0)
    check(got, want)
    got.sum().backward()
    want.sum().backward()
    for x, t in ((xa, ta), (xb, tb), (xc, tc)):
        check(x.grad, t.grad)
    with pytest.raises(ShapeError, match="bmm"):
        lt.bmm(lt.zeros((2, 3, 4)), lt.zeros((2, 3, 4)))


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_movedim_tril_triu_diagonal_diag(dtype):
    for _, x, t in inputs((3, 4, 5), dtype):
        check(x.movedim(0, -1), t.movedim(0, -1))
        check(lt.movedim(x, (0, 1), (2, 0)), torch.movedim(t, (0, 1), (2, 0)))
        for k in (-1, 0, 2):
            check(x.tril(k), t.tril(k))
            check(x.triu(diagonal=k), t.triu(diagonal=k))
            check(x.diagonal(k, 0, 2), t.diagonal(k, 0, 2))
            check(lt.diagonal(x, offset=k, dim1=-1, dim2=1), torch.diagonal(t, offset=k, dim1=-1, dim2=1))
    for _, v, t in inputs((4,), dtype):
        for k in (-2, 0, 1):
            check(lt.diag(v, k), torch.diag(t, k))
    for _, m, t in inputs((3, 5), dtype):
        for k in (-1, 0, 3, 6):
            check(m.diag(k), torch.diag(t, k))
    check(lt.diag(lt.zeros((0,), dtype=dtype)), torch.diag(torch.zeros(0, dtype=TORCH_DTYPES[dtype])))


def test_diagonal_and_diag_gradients():
    a = random_array((4, 3), lt.float32)
    x, t = lt.asarray(a).requires_grad_(), torch.tensor(a, requires_grad=True)
    (x.diagonal(1) * 3).sum().backward()
    (t.diagonal(1) * 3).sum().backward()
    check(x.grad, t.grad)
    v = random_array((3,), lt.float64)
    x, t = lt.asarray(v).requires_grad_(), torch.tensor(v, requires_grad=True)
    (lt.diag(x, -1) ** 2).sum().backward()
    (torch.diag(t, -1) ** 2).sum().backward()
    check(x.grad, t.grad)


@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("mask_shape", [(3, 4), (4,), (1, 4), ()])
def test_masked_fill(dtype, mask_shape):
    mask = random_array(mask_shape, lt.bool_, 3)
    value = True if dtype == lt.bool_ else 7
    for _, x, t in inputs((3, 4), dtype):
        check(x.masked_fill(lt.asarray(mask), value), t.masked_fill(torch.tensor(mask), value))
        check(lt.masked_fill(x, lt.asarray(mask), lt.asarray(np.array(value).astype(dtype.name))),
              t.masked_fill(torch.tensor(mask), torch.tensor(np.array(value).astype(dtype.name))))
    with pytest.raises(ShapeError):
        lt.zeros((4,)).masked_fill(lt.ones((3, 4), dtype=lt.bool_), 1.0)


def test_masked_fill_gradient():
    a, mask = random_array((3, 4), lt.float32), random_array((3, 4), lt.bool_, 1)
    x, t = lt.asarray(a).requires_grad_(), torch.tensor(a, requires_grad=True)
    (x.masked_fill(lt.asarray(mask), -1.0) * 2).sum().backward()
    (t.masked_fill(torch.tensor(mask), -1.0) * 2).sum().backward()
    check(x.grad, t.grad)


@pytest.mark.parametrize("dtype", [lt.float32, lt.float64, lt.int32, lt.int64])
def test_in_place_methods(dtype):
    for _, x, t in inputs((3, 4), dtype):
        other = random_array((4,), dtype, 5)
        x, t = x.clone(), t.clone()
        alias = x  # the same object afterwards, as in PyTorch
        x.add_(lt.asarray(other), alpha=2).mul_(3).sub_(1)
        t.add_(torch.tensor(other), alpha=2).mul_(3).sub_(1)
        assert x is alias
        check(x, t)
        x.clamp_(-10, 40)
        t.clamp_(-10, 40)
        check(x, t)
        if dtype.is_float:
            x.div_(4).pow_(2).neg_().addcmul_(lt.asarray(other), lt.asarray(other), value=0.5)
            t.div_(4).pow_(2).neg_().addcmul_(torch.tensor(other), torch.tensor(other), value=0.5)
            check(x, t)
        x.copy_(lt.asarray(other))
        t.copy_(torch.tensor(other))
        check(x, t)
        x.fill_(5)
        t.fill_(5)
        check(x, t)
        x.zero_()
        t.zero_()
        check(x, t)


def test_in_place_on_a_leaf_that_requires_grad_needs_no_grad():
    p = lt.ones(3).requires_grad_()
    with pytest.raises(RuntimeError, match="leaf"):
        p.add_(1)
    with lt.no_grad():
        p.add_(1)
    np.testing.assert_array_equal(p.numpy(), [2, 2, 2])
    assert p.requires_grad and p.is_leaf  # PyTorch's: a parameter updated under no_grad is still one


def test_the_tutorials_hand_written_sgd_loop_as_pytorchs():
    """"Learning PyTorch with examples": parameters updated under no_grad (`-=`, an item written), grads reset."""
    x = np.linspace(-1, 1, 50)
    y = np.sin(x)
    ours = [lt.asarray(np.full(2, 0.5)).requires_grad_() for _ in range(2)]
    theirs = [torch.tensor(np.full(2, 0.5), requires_grad=True) for _ in range(2)]
    for lib, (a, b), xs, ys in ((lt, ours, lt.asarray(x), lt.asarray(y)),
                                (torch, theirs, torch.tensor(x), torch.tensor(y))):
        for step in range(3):
            loss = ((a[0] + a[1] * xs + b[0] * xs ** 2 + b[1] * xs ** 3 - ys) ** 2).sum()
            loss.backward()
            with lib.no_grad():
                a -= 1e-3 * a.grad
                b.sub_(1e-3 * b.grad)
                if step == 1:
                    b[0] = 0.25
                a.grad = None
                b.grad = None
    for got, want in zip(ours, theirs):
        assert got.requires_grad and got.is_leaf
        check(got, want.detach())


def test_data_updates_the_tensor_it_came_from():
    p = lt.asarray(np.ones(3, np.float32)).requires_grad_()
    p.data.add_(lt.asarray(np.array([1, 2, 3], np.float32)), alpha=-0.5)  # an SGD step, PyTorch style
    p.data[0] = 7
    np.testing.assert_array_equal(p.numpy(), [7, 0, -0.5])
    assert p.requires_grad and p.data.grad is None and not p.data.requires_grad
    p.data = lt.zeros(3)
    np.testing.assert_array_equal(p.numpy(), [0, 0, 0])
    with pytest.raises(ShapeError):
        p.data = lt.zeros(4)


def test_type_cuda_and_inference_mode():
    x = lt.asarray(np.arange(3))
    assert x.type() == "lazytensor.int64" and x.type(lt.float32).dtype == lt.float32
    with lt.inference_mode():
        y = lt.ones(2).requires_grad_() * 2
    assert not y.requires_grad

    @lt.inference_mode()
    def f(a):
        return a * 3

    assert not f(lt.ones(2).requires_grad_()).requires_grad
    if "cuda:0" not in [d.name for d in lt.devices()]:
        with pytest.raises(lt.DeviceError):
            x.cuda()


@pytest.mark.parametrize("norm_type", [2.0, 1.0, float("inf")])
def test_clip_grad_norm_and_value(norm_type):
    shapes = [(3, 4), (4,), (2, 2)]
    grads = [random_array(s, lt.float32, k) * 5 for k, s in enumerate(shapes)]
    ps = [lt.zeros(s).requires_grad_() for s in shapes]
    ts = [torch.zeros(s, requires_grad=True) for s in shapes]
    for p, t, g in zip(ps, ts, grads):
        p.grad, t.grad = lt.asarray(g), torch.tensor(g)
    total = lt.nn.utils.clip_grad_norm_(ps, 2.5, norm_type)
    want = torch.nn.utils.clip_grad_norm_(ts, 2.5, norm_type)
    check(total, want)
    for p, t in zip(ps, ts):
        check(p.grad, t.grad)
    lt.nn.utils.clip_grad_value_(ps, 0.1)
    torch.nn.utils.clip_grad_value_(ts, 0.1)
    for p, t in zip(ps, ts):
        check(p.grad, t.grad)


@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("lengths,trailing", [((3, 1, 4), (2,)), ((2, 0, 5), ()), ((1,), (2, 3))], ids=str)
def test_pad_sequence(lengths, trailing, dtype):
    # the sequences' layouts rotate, so some are views
    seqs = [layout(random_array((n, *trailing), dtype, seed=n), LAYOUTS[k % len(LAYOUTS)])
            for k, n in enumerate(lengths)]
    grads = dtype.is_float
    xs = [x.requires_grad_(grads) for x, _ in seqs]
    ts = [t.detach().requires_grad_(grads) for _, t in seqs]
    for batch_first in (False, True):
        for side in ("right", "left"):
            out = lt.nn.utils.rnn.pad_sequence(xs, batch_first, padding_value=7, padding_side=side)
            tout = torch.nn.utils.rnn.pad_sequence(ts, batch_first, padding_value=7, padding_side=side)
            check(out, tout)
            if grads:
                up = random_array(tuple(tout.shape), dtype, seed=5)
                out.backward(lt.asarray(up))
                tout.backward(torch.tensor(up))
                for x, t in zip(xs, ts):
                    check(x.grad, t.grad)
                    x.grad, t.grad = None, None
    stacked = random_array((3, 4), dtype, seed=6)  # a tensor: its rows are the sequences
    check(lt.nn.utils.rnn.pad_sequence(lt.asarray(stacked)), torch.nn.utils.rnn.pad_sequence(torch.tensor(stacked)))


def test_pad_sequence_errors():
    with pytest.raises(ValueError, match="padding_side"):
        lt.nn.utils.rnn.pad_sequence([lt.zeros(2)], padding_side="middle")
    with pytest.raises(ShapeError, match="trailing"):
        lt.nn.utils.rnn.pad_sequence([lt.zeros((2, 3)), lt.zeros((2, 4))])
    with pytest.raises(ValueError, match="at least one"):
        lt.nn.utils.rnn.pad_sequence([])


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_dim_aliases_of_unsqueeze_cat_and_stack(dtype):
    for _, x, t in inputs((2, 3), dtype):
        check(x.unsqueeze(dim=1), t.unsqueeze(dim=1))
        check(lt.cat([x, x], dim=1), torch.cat([t, t], dim=1))
        check(lt.concat([x, x], dim=0), torch.cat([t, t], dim=0))
        check(lt.stack([x, x, x], dim=-1), torch.stack([t, t, t], dim=-1))
    with pytest.raises(TypeError, match="not both"):
        lt.zeros(3).unsqueeze(0, dim=0)


@pytest.mark.parametrize("pair", [(lt.float32, lt.int32), (lt.int64, lt.float64), (lt.int16, lt.float16),
                                  (lt.uint8, lt.int8), (lt.float16, lt.bfloat16)])
def test_view_as_a_dtype_of_the_same_size(pair):
    src, dst = pair
    for _, x, t in inputs((3, 4), src):
        check(x.view(dst), t.view(TORCH_DTYPES[dst]))
    with pytest.raises(ShapeError, match="differ in size"):
        lt.zeros(4).view(lt.float64)


@pytest.mark.parametrize("dtype", [lt.float32, lt.float64, lt.int32, lt.int64, lt.uint8])
def test_topk_and_kthvalue(dtype):
    for _, x, t in inputs((4, 7), dtype, seed=2):
        for dim in (0, -1):
            for k in (1, 3):
                for largest in (True, False):
                    got, want = x.topk(k, dim, largest), t.topk(k, dim, largest)
                    check(got.values, want.values)
                    check(x.gather(dim if dim >= 0 else x.ndim + dim, got.indices), want.values)  # ties: any index
                got, want = lt.kthvalue(x, k, dim, keepdim=True), torch.kthvalue(t, k, dim, keepdim=True)
                check(got.values, want.values)
                check(x.gather(dim if dim >= 0 else x.ndim + dim, got.indices), want.values)
    with pytest.raises(ShapeError, match="outside"):
        lt.zeros(3).topk(4)


def test_topk_gradient_and_nan():
    a = np.array([[1.0, np.nan, 3.0, 2.0], [4.0, -1.0, 0.5, 7.0]], np.float32)
    x, t = lt.asarray(a).requires_grad_(), torch.tensor(a, requires_grad=True)
    got, want = x.topk(2, 1), t.topk(2, 1)
    check(got.values, want.values)
    check(got.indices, want.indices)
    b = np.nan_to_num(a)
    x, t = lt.asarray(b).requires_grad_(), torch.tensor(b, requires_grad=True)
    (x.topk(2, 1).values * lt.asarray(np.array([1.0, 2.0], np.float32))).sum().backward()
    (t.topk(2, 1).values * torch.tensor([1.0, 2.0])).sum().backward()
    check(x.grad, t.grad)


@pytest.mark.parametrize("dtype", [lt.float32, lt.float64, lt.float16, lt.int32, lt.int64, lt.uint8, lt.int8])
@pytest.mark.parametrize("shape", [(), (1,), (6,), (4, 7), (2, 3, 4)])
def test_median_and_nanmedian(dtype, shape):
    """PyTorch's median: the lower middle value (lt.median, NumPy's, is the mean of the two), and along `dim`
    the values and the index of one element that has the value (ties: any)."""
    for _, x, t in inputs(shape, dtype, seed=5):
        check(x.median(), t.median())
        if dtype.is_float:
            check(x.nanmedian(), t.nanmedian())
        for dim in range(-len(shape), len(shape)) if shape else (0, -1):
            for keepdim in (False, True):
                for name in ("median", "nanmedian") if dtype.is_float else ("median",):
                    got, want = getattr(x, name)(dim, keepdim), getattr(t, name)(dim, keepdim)
                    check(got.values, want.values)
                    at = x.unsqueeze(0) if x.ndim == 0 else x
                    idx = got.indices if keepdim or x.ndim == 0 else got.indices.unsqueeze(dim)
                    picked = at.gather(dim % max(x.ndim, 1), idx.reshape(idx.shape or (1,)))
                    check(picked.reshape(got.values.shape), want.values)


def test_median_nan_empty_and_gradient():
    a = np.array([[3.0, np.nan, 1.0, np.nan], [2.0, 1.0, 4.0, 3.0], [np.nan] * 4, [5.0, np.nan, 2.0, 8.0]],
                 np.float32)
    x, t = lt.asarray(a), torch.tensor(a)
    for name in ("median", "nanmedian"):
        check(getattr(x, name)(), getattr(t, name)())
        got, want = getattr(x, name)(1), getattr(t, name)(1)
        check(got.values, want.values)
        if name == "median":  # the first NaN's (nanmedian's index of an all-NaN row is PyTorch's own)
            check(got.indices, want.indices)
        check(getattr(x.T, name)(0).values, getattr(t.T, name)(0).values)
    check(lt.median(lt.asarray(np.array([1.0, 2.0, 3.0, 4.0]))), np.median([1.0, 2.0, 3.0, 4.0]))  # NumPy's mean
    check(lt.zeros(0).median(), torch.zeros(0).median())
    check(lt.zeros((0, 3)).median(1).values, torch.zeros(0, 3).median(1).values)
    with pytest.raises(ShapeError, match="no elements"):
        lt.zeros((2, 0)).median(1)
    b = random_array((4, 5), lt.float32, 9)
    b[1, 2] = np.nan
    for name, args in (("median", ()), ("median", (1,)), ("nanmedian", (1,)), ("nanmedian", ()), ("median", (0,))):
        x, t = lt.asarray(b).requires_grad_(), torch.tensor(b, requires_grad=True)
        got, want = getattr(x, name)(*args), getattr(t, name)(*args)
        got, want = (got, want) if not args else (got.values, want.values)
        w = random_array(got.shape, lt.float32, 11)
        (got * lt.asarray(w)).sum().backward()
        (want * torch.tensor(w)).sum().backward()
        check(x.grad, t.grad)


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_repeat_interleave_and_masked_select(dtype):
    for _, x, t in inputs((3, 4), dtype, seed=3):
        check(x.repeat_interleave(2), t.repeat_interleave(2))
        check(lt.repeat_interleave(x, 3, dim=1), torch.repeat_interleave(t, 3, dim=1))
        counts = np.array([1, 0, 2])
        check(x.repeat_interleave(lt.asarray(counts), dim=0, output_size=3),
              t.repeat_interleave(torch.tensor(counts), dim=0, output_size=3))
        mask = random_array((3, 4), lt.bool_, 4)
        check(x.masked_select(lt.asarray(mask)), t.masked_select(torch.tensor(mask)))
        check(lt.masked_select(x, lt.asarray(mask[1])), torch.masked_select(t, torch.tensor(mask[1])))


@pytest.mark.parametrize("dtype", [lt.float32, lt.float64, lt.int32, lt.int64, lt.int8, lt.int16, lt.uint8, lt.float16,
                                   lt.bfloat16], ids=str)
@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce(dtype, reduce, include_self):
    """Every fold on every backend, duplicate indices: Triton's atomics, or its compare-and-swap loops (a
    product, a float's extrema, which propagate NaN)."""
    rng = np.random.default_rng(5)
    index = rng.integers(0, 4, (5, 3))
    data = lt.float32 if dtype == lt.bfloat16 else dtype  # NumPy has no bfloat16: made of float32 values
    src = random_array((5, 3), data, 6, low=-2, high=2)
    tdt = TORCH_DTYPES[dtype]
    for _, x, t in inputs((4, 3), data, seed=7, low=-2, high=2):
        got = x.cast(dtype).scatter_reduce(0, lt.asarray(index), lt.asarray(src).cast(dtype), reduce,
                                           include_self=include_self)
        want = t.to(tdt).scatter_reduce(0, torch.tensor(index), torch.tensor(src).to(tdt), reduce,
                                        include_self=include_self)
        check(got, want)
    if dtype.is_float:  # a NaN update wins an extremum, as a NaN already there does
        base, up = np.array([1.0, np.nan, 3.0], np.float32), np.array([np.nan, 5.0, -2.0, 7.0], np.float32)
        at = np.array([0, 1, 2, 2])
        got = lt.asarray(base).cast(dtype).scatter_reduce(0, lt.asarray(at), lt.asarray(up).cast(dtype), reduce,
                                                           include_self=include_self)
        want = torch.tensor(base).to(tdt).scatter_reduce(0, torch.tensor(at), torch.tensor(up).to(tdt), reduce,
                                                          include_self=include_self)
        check(got, want)


@pytest.mark.parametrize("reduce", ["sum", "prod", "amax", "amin"])  # PyTorch has no mean of bools
def test_scatter_reduce_of_bools(reduce):
    base, at, up = random_array((4, 3), lt.bool_, 1), np.random.default_rng(2).integers(0, 4, (6, 3)), \
        random_array((6, 3), lt.bool_, 3)
    for include_self in (True, False):
        got = lt.asarray(base).scatter_reduce(0, lt.asarray(at), lt.asarray(up), reduce, include_self=include_self)
        check(got, torch.tensor(base).scatter_reduce(0, torch.tensor(at), torch.tensor(up), reduce,
                                                     include_self=include_self))


def test_scatter_reduce_of_many_updates_into_few_elements():
    """Thousands of updates into 3 elements, so that many lanes of a block fold into one element at once."""
    rng = np.random.default_rng(3)
    index = rng.integers(0, 3, 5000)
    src = rng.uniform(0.999, 1.001, 5000)
    for reduce in ("prod", "amax", "amin"):
        got = lt.ones(3, dtype=lt.float64).scatter_reduce(0, lt.asarray(index), lt.asarray(src), reduce)
        want = torch.ones(3, dtype=torch.float64).scatter_reduce(0, torch.tensor(index), torch.tensor(src), reduce)
        check(got, want)
    ints = rng.integers(-3, 4, 5000).astype(np.int32)
    got = lt.ones(3, dtype=lt.int32).scatter_reduce(0, lt.asarray(index), lt.asarray(ints), "prod")
    check(got, torch.ones(3, dtype=torch.int32).scatter_reduce(0, torch.tensor(index), torch.tensor(ints), "prod"))


@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
def test_scatter_reduce_gradient(reduce):
    index = np.array([[0, 1], [0, 1], [2, 0]])
    a, s = random_array((3, 2), lt.float64, 8), random_array((3, 2), lt.float64, 9)
    x, xs = lt.asarray(a).requires_grad_(), lt.asarray(s).requires_grad_()
    t, ts = torch.tensor(a, requires_grad=True), torch.tensor(s, requires_grad=True)
    (x.scatter_reduce(0, lt.asarray(index), xs, reduce) ** 2).sum().backward()
    (t.scatter_reduce(0, torch.tensor(index), ts, reduce) ** 2).sum().backward()
    check(x.grad, t.grad)
    check(xs.grad, ts.grad)


def test_scatter_prod_gradient_with_zeros():
    """A product's gradient where factors are 0: one zero update (the others' product), two (0), a zero base."""
    base, src = np.array([2.0, 0.0, 3.0, 1.5]), np.array([0.0, 4.0, 0.0, 0.0, 5.0, -1.0, 2.0])
    at = np.array([0, 0, 2, 2, 1, 3, 1])
    for include_self in (True, False):
        x, xs = lt.asarray(base).requires_grad_(), lt.asarray(src).requires_grad_()
        t, ts = torch.tensor(base, requires_grad=True), torch.tensor(src, requires_grad=True)
        w = np.arange(1.0, 5.0)
        (x.scatter_reduce(0, lt.asarray(at), xs, "prod", include_self=include_self) * lt.asarray(w)).sum().backward()
        (t.scatter_reduce(0, torch.tensor(at), ts, "prod", include_self=include_self) * torch.tensor(w)).sum().backward()
        check(x.grad, t.grad)
        check(xs.grad, ts.grad)


@pytest.mark.parametrize("dtype", [lt.float32, lt.float64, lt.int32, lt.int64, lt.bool_])
@pytest.mark.parametrize("n", [5, 300])  # a masked reduction per element, a scan
def test_cummax_and_cummin(dtype, n):
    a = random_array((3, n), dtype, 13)
    if dtype.is_float:
        a = np.round(a)  # ties
        a[1, n // 2] = np.nan
    for _, x, t in layouts(a):
        for dim in (0, 1, -1):
            for ours, theirs in ((x.cummax(dim), t.cummax(dim)), (lt.cummin(x, dim=dim), torch.cummin(t, dim))):
                check(ours.values, theirs.values)
                check(ours.indices, theirs.indices)


def test_cummax_gradient():
    a = np.array([[1.0, 3.0, 2.0, 3.0, 5.0], [0.5, 0.2, 0.7, 0.1, 0.9]])
    x, t = lt.asarray(a).requires_grad_(), torch.tensor(a, requires_grad=True)
    (x.cummax(1).values * lt.asarray(np.arange(5.0))).sum().backward()
    (t.cummax(1).values * torch.arange(5.0, dtype=torch.float64)).sum().backward()
    check(x.grad, t.grad)


def layouts(a: np.ndarray):
    from conftest import LAYOUTS, layout
    for kind in LAYOUTS:
        x, t = layout(a, kind)
        yield kind, x, t


@pytest.mark.parametrize("dtype", [lt.float32, lt.float64])
@pytest.mark.parametrize("n", [6, 400])  # masked logsumexps, blocks joined by logaddexp
def test_logcumsumexp(dtype, n):
    a = random_array((3, n), dtype, 14, -20, 20)
    a[0, 0], a[0, 1], a[2, 3] = -1000, 5, -np.inf  # no underflow to -inf at the start of a row
    for _, x, t in layouts(a):
        for dim in (0, 1, -1):
            check(x.logcumsumexp(dim), t.logcumsumexp(dim))
    check(lt.logcumsumexp(lt.asarray(np.arange(5)), dim=0), torch.logcumsumexp(torch.arange(5.0), 0))


def test_logcumsumexp_gradient():
    a = random_array((2, 300), lt.float64, 15)
    x, t = lt.asarray(a).requires_grad_(), torch.tensor(a, requires_grad=True)
    (x.logcumsumexp(1) * lt.asarray(np.linspace(0, 1, 300))).sum().backward()
    (t.logcumsumexp(1) * torch.linspace(0, 1, 300, dtype=torch.float64)).sum().backward()
    check(x.grad, t.grad)


def _inplace(method: str, *args):
    """A PyTorch in-place method on a non-leaf (a copy of the input), whose gradient flows through it."""
    def run(x):
        y = x * 1
        getattr(y, method)(*(a(x) if callable(a) else a for a in args))
        return y
    return run


_IDX = np.array([2, 0, 2, 3])
_MASK = random_array((4, 5), lt.bool_, 22)
# Issue 19's PyTorch ops with no gradient test elsewhere: (lazytensor, torch) on a (4, 5) float64 input
ISSUE19_GRADS = {
    "index_select": (lambda x: x.index_select(0, lt.asarray(_IDX)), lambda t: t.index_select(0, torch.tensor(_IDX))),
    "masked_select": (lambda x: x.masked_select(lt.asarray(_MASK)), lambda t: t.masked_select(torch.tensor(_MASK))),
    "cummin": (lambda x: x.cummin(1).values, lambda t: t.cummin(1).values),
    "kthvalue": (lambda x: x.kthvalue(2, 0).values, lambda t: t.kthvalue(2, 0).values),
    "tril": (lambda x: x.tril(-1), lambda t: t.tril(-1)),
    "triu": (lambda x: x.triu(1), lambda t: t.triu(1)),
    "roll": (lambda x: x.roll((1, -2), (0, 1)), lambda t: t.roll((1, -2), (0, 1))),
    "repeat_interleave": (lambda x: x.repeat_interleave(2, dim=1), lambda t: t.repeat_interleave(2, dim=1)),
    "repeat_interleave_counts": (lambda x: x.repeat_interleave(lt.asarray(np.array([1, 0, 3, 2])), dim=0),
                                 lambda t: t.repeat_interleave(torch.tensor([1, 0, 3, 2]), dim=0)),
    "cat_dim": (lambda x: lt.cat([x, x * 2], dim=1), lambda t: torch.cat([t, t * 2], dim=1)),
    "stack_dim": (lambda x: lt.stack([x, x.exp()], dim=1), lambda t: torch.stack([t, t.exp()], dim=1)),
    "unsqueeze_dim": (lambda x: x.unsqueeze(dim=1) * 2, lambda t: t.unsqueeze(dim=1) * 2),
    "var_unbiased": (lambda x: x.var(1, unbiased=True), lambda t: t.var(1, unbiased=True)),
    "std_unbiased": (lambda x: x.std(dim=0, unbiased=True), lambda t: t.std(dim=0, unbiased=True)),
    "t": (lambda x: x.t() * 3, lambda t: t.t() * 3),
    "movedim": (lambda x: x.reshape(2, 2, 5).movedim(0, 2), lambda t: t.reshape(2, 2, 5).movedim(0, 2)),
    "add_": (_inplace("add_", lambda x: x.exp()), _inplace("add_", lambda t: t.exp())),
    "mul_": (_inplace("mul_", lambda x: x.sin()), _inplace("mul_", lambda t: t.sin())),
    "clamp_": (_inplace("clamp_", -1.0, 1.0), _inplace("clamp_", -1.0, 1.0)),
    "copy_": (_inplace("copy_", lambda x: x * x), _inplace("copy_", lambda t: t * t)),
    "zero_": (lambda x: _inplace("zero_")(x) + x, lambda t: _inplace("zero_")(t) + t),
    "type": (lambda x: x.type(lt.float32) * 2, lambda t: t.type(torch.float32) * 2),
}


@pytest.mark.parametrize("name", list(ISSUE19_GRADS))
def test_gradients_of_pytorch_ops(name):
    """Values and gradients against torch's, on a contiguous input and a non-contiguous one."""
    from test_autograd import check_grads, two_layouts
    f, g = ISSUE19_GRADS[name]
    check_grads(f, g, [random_array((4, 5), lt.float64, seed=21)], kinds=two_layouts(list(ISSUE19_GRADS).index(name)))


def _in_place_arguments(lib):
    """Arguments of each in-place twin (`IN_PLACE_OF`) in PyTorch's or our library, and the input's kind."""
    tensor = (lambda v: torch.tensor(v)) if lib is torch else (lambda v: lt.asarray(np.array(v)))
    index = tensor(np.array([[0, 1, 2], [2, 1, 0]]))
    other = tensor(np.full((2, 3), 0.5, np.float32))
    return {
        "masked_fill": (tensor(np.array([[True, False, True], [False, False, True]])), -1.0),
        "scatter": (1, index, other), "scatter_add": (1, index, other),
        "scatter_reduce": (1, index, other, "amax"), "index_add": (0, tensor(np.array([1, 0])), other),
        "index_copy": (0, tensor(np.array([1, 0])), other),
        "masked_scatter": (tensor(np.array([[True, False, True], [False, False, True]])), other),
        "addcmul": (other, other), "addcdiv": (other, other + 1),
        "index_put": ((tensor(np.array([1, 0, 1])), tensor(np.array([2, 0, 2]))), tensor(np.full(3, 0.5, np.float32))),
        "put": (tensor(np.array([5, 0, -2])), tensor(np.full(3, 0.5, np.float32))),
        "lerp": (other, 0.25), "fmod": (0.3,), "remainder": (0.3,), "hypot": (other,), "atan2": (other,),
        "copysign": (-other,), "xlogy": (other,), "cumsum": (1,), "cumprod": (0,), "clamp_min": (0.2,),
        "clamp_max": (0.2,), "index_fill": (1, tensor(np.array([0, 2])), 7.0),
        "bitwise_and": (3,), "bitwise_or": (3,), "bitwise_xor": (3,), "polygamma": (1,),
        "gcd": (tensor(np.array([[4, 6, 9], [2, 3, 5]])),), "lcm": (tensor(np.array([[4, 6, 9], [2, 3, 5]])),),
        **{n: (other,) for n in ("arctan2", "heaviside", "nextafter", "subtract", "multiply", "divide", "true_divide",
                                 "floor_divide", "logical_and", "logical_or", "logical_xor", "eq", "ne", "lt", "le",
                                 "gt", "ge", "greater", "greater_equal", "less", "less_equal", "not_equal")},
        "ldexp": (tensor(np.array([[1, -2, 0], [3, 1, 2]])),), "bitwise_left_shift": (2,),
        "bitwise_right_shift": (1,), "renorm": (2, 0, 0.8),
        "addmm": (tensor(np.linspace(-1, 1, 8, dtype=np.float32).reshape(2, 4)), tensor(np.ones((4, 3), np.float32))),
        "addbmm": (tensor(np.linspace(-1, 1, 40, dtype=np.float32).reshape(5, 2, 4)),
                   tensor(np.ones((5, 4, 3), np.float32))),
        "addr": (tensor(np.array([0.5, -1], np.float32)), tensor(np.array([1, 2, 3], np.float32))),
        "addmv": (tensor(np.linspace(-1, 1, 9, dtype=np.float32).reshape(3, 3)),
                  tensor(np.array([1, 2, 3], np.float32))),
        "baddbmm": (tensor(np.linspace(-1, 1, 40, dtype=np.float32).reshape(5, 2, 4)),
                    tensor(np.ones((5, 4, 3), np.float32))),
    }


def test_in_place_twins_are_pytorchs_names():
    assert [n for n in pytorch_methods.IN_PLACE_OF if not hasattr(torch.Tensor, f"{n}_")] == []


@pytest.mark.parametrize("name", [n for n in pytorch_methods.IN_PLACE_OF if hasattr(lt.Tensor, n)])
def test_in_place_twins_rebind_as_pytorchs(name):
    integer = name.startswith("bitwise") or name in ("logical_not", "gcd", "lcm")
    values = np.array([[1, 2, 3], [4, 5, 6]]) if integer else np.array([[0.1, 0.7, 0.2], [0.9, 0.4, 0.5]],
                                                                        np.float32)
    if name in ("addmv", "baddbmm"):  # a vector, a batch of matrices
        values = np.linspace(0.1, 0.9, 3 if name == "addmv" else 30, dtype=np.float32).reshape(
            (3,) if name == "addmv" else (5, 2, 3))
    ours, theirs = lt.asarray(values), torch.tensor(values)
    if name == "logical_not":
        ours, theirs = ours > 2, theirs > 2
    before = ours.detach()
    got = getattr(ours, f"{name}_")(*_in_place_arguments(lt).get(name, ()))
    want = getattr(theirs, f"{name}_")(*_in_place_arguments(torch).get(name, ()))
    assert got is ours
    check(ours, want.numpy())
    check(before, values if name != "logical_not" else values > 2)  # another handle on the old value keeps it


@pytest.mark.parametrize("name, args", [("squeeze_", ()), ("squeeze_", (1,)), ("unsqueeze_", (-1,)), ("t_", ()),
                                        ("transpose_", (0, 2)), ("swapaxes_", (2, 1)), ("swapdims_", (0, 1))])
def test_in_place_view_ops_change_the_shape_as_pytorchs(name, args):
    values = random_array((3, 1, 2) if name != "t_" else (3, 2), lt.float64, 1)
    leaf, tleaf = lt.asarray(values).requires_grad_(), torch.tensor(values, requires_grad=True)
    ours, theirs = leaf * 2, tleaf * 2
    got, want = getattr(ours, name)(*args), getattr(theirs, name)(*args)
    assert got is ours
    check(ours, want)
    (ours * lt.arange(ours.size, dtype=lt.float64).reshape(ours.shape)).sum().backward()
    (theirs * torch.arange(theirs.numel(), dtype=torch.float64).reshape(theirs.shape)).sum().backward()
    check(leaf.grad, tleaf.grad)
    with pytest.raises(RuntimeError, match="leaf"):
        getattr(leaf, name)(*args)


def test_detach_in_place_makes_a_leaf_without_grad():
    x = lt.ones(3).requires_grad_()
    y = x * 2
    assert y.detach_() is y and not y.requires_grad and y.is_leaf
    check(y, np.full(3, 2, np.float32))


@pytest.mark.parametrize("dtype", [lt.float32, lt.float64, lt.float16])
def test_random_fills_follow_their_distributions(dtype):
    """Each fill of 20000 values against its distribution (Kolmogorov-Smirnov, at a fixed seed), in the tensor's
    dtype, rebinding the tensor."""
    n = 20000
    ours = lt.zeros(n, dtype=dtype)
    lt.manual_seed(5)
    cases = [("uniform_", (-2.0, 3.0), stats.uniform(-2, 5)), ("normal_", (1.0, 2.0), stats.norm(1, 2)),
             ("exponential_", (4.0,), stats.expon(scale=0.25)), ("cauchy_", (1.0, 0.5), stats.cauchy(1, 0.5)),
             ("log_normal_", (0.5, 0.25), stats.lognorm(0.25, scale=np.exp(0.5)))]
    for name, args, law in cases:
        assert getattr(ours, name)(*args) is ours and ours.dtype == dtype
        values = ours.numpy().astype(np.float64)
        assert stats.kstest(values, law.cdf).pvalue > 1e-3 if dtype != lt.float16 else \
            stats.kstest(values, law.cdf).statistic < 0.01, name  # float16 rounds the values by up to 2**-11
    drawn = ours.geometric_(0.25).numpy()
    assert drawn.min() >= 1 and np.all(drawn == np.round(drawn))
    assert abs(drawn.mean() - 4) < 6 * np.sqrt(12 / n)  # mean 1/p, variance (1 - p)/p**2
    hits = ours.bernoulli_(0.3).numpy()
    assert set(np.unique(hits)) == {0, 1} and abs(hits.mean() - 0.3) < 6 * np.sqrt(0.21 / n)
    probabilities = lt.asarray(np.array([0.0, 1.0], np.float32))
    check(lt.zeros((3, 2), dtype=dtype).bernoulli_(probabilities), np.tile(np.array([0, 1], dtype.name), (3, 1)))


@pytest.mark.parametrize("dtype", [lt.float16, lt.bfloat16])
def test_random_fills_of_16_bit_floats_keep_the_tails(dtype):
    """u is drawn in float32, not in the tensor's dtype: from a float16 u the exponential stops at -log(2**-11) =
    7.62, where 200000 draws of rate 1 pass 9 about 25 times (none with probability e**-25); Cauchy's values come
    as far out as its law puts them."""
    lt.manual_seed(7)
    x = lt.zeros(200000, dtype=dtype)
    assert float(x.exponential_().max().item()) > 9
    assert float(x.cauchy_().abs().max().item()) > 20000  # P(|X| > 20000) = 3.2e-5 a draw: about 6 of 200000
    hits = x.bernoulli_(0.001).numpy().astype(np.float64)
    assert abs(hits.mean() - 0.001) < 6 * np.sqrt(0.001 / 200000)


@pytest.mark.parametrize("dtype", [lt.float32, lt.float64, lt.int8, lt.int64, lt.uint8, lt.bool_])
def test_random_integers_fill_the_range_asked(dtype):
    lt.manual_seed(3)
    x = lt.zeros(5000, dtype=dtype)
    ranges = [((), (0, {lt.float32: 2 ** 24, lt.float64: 2 ** 53, lt.int8: 127, lt.int64: 2 ** 63 - 2,
                        lt.uint8: 255, lt.bool_: 1}[dtype])), ((2,), (0, 1)), ((1, 2), (1, 1))]
    if dtype != lt.bool_:
        ranges += [((10,), (0, 9)), ((-5, 7) if dtype.is_signed else (5, 17), (-5, 6) if dtype.is_signed else (5, 16))]
    for args, (low, high) in ranges:
        values = x.random_(*args).numpy()
        assert x.dtype == dtype and values.min() >= low and values.max() <= high
        if high - low < 100:  # every value drawn
            assert set(np.unique(values).astype(np.int64)) == set(range(low, high + 1))
        else:
            assert values.max() > low + (high - low) // 2


def test_random_fills_are_seeded_and_keep_the_leaf_rule():
    lt.manual_seed(11)
    a = lt.zeros(6).normal_().numpy()
    lt.manual_seed(11)
    np.testing.assert_array_equal(lt.zeros(6).normal_().numpy(), a)
    p = lt.zeros(3).requires_grad_()
    with pytest.raises(RuntimeError, match="leaf"):
        p.uniform_()
    with lt.no_grad():
        p.uniform_(2, 3)
    assert np.all(p.numpy() >= 2) and p.requires_grad
    with pytest.raises(ValueError, match="geometric_"):
        lt.zeros(2).geometric_(1.5)


def test_casts_and_device_queries_as_pytorchs():
    values = np.array([[-3.7, 0.0, 200.5], [1.5, -129.0, 7.0]], np.float32)
    for name in ("byte", "char", "short"):
        check(getattr(lt.asarray(values)[:, :2] * 0 + 5, name)(), getattr(torch.tensor(values)[:, :2] * 0 + 5, name)())
    x, t = lt.zeros((2, 3), device="cpu"), torch.zeros((2, 3))
    assert (x.is_cuda, x.is_cpu, x.get_device(), x.is_same_size(lt.ones((2, 3))), x.is_same_size(lt.ones(3))) == \
        (t.is_cuda, t.is_cpu, t.get_device(), t.is_same_size(torch.ones((2, 3))), t.is_same_size(torch.ones(3)))
    if lt.zeros(1).device.startswith("cuda"):  # the tests' default device a GPU
        assert (lt.zeros(1).is_cuda, lt.zeros(1).is_cpu, lt.zeros(1, device="cuda:0").get_device()) == (True, False, 0)
    for v in (0.0, -2.0, float("nan")):
        assert lt.asarray([[v]]).is_nonzero() == torch.tensor([[v]]).is_nonzero()
    with pytest.raises(RuntimeError, match="one element"):
        lt.zeros(2).is_nonzero()


@pytest.mark.parametrize("dtype", [lt.float32, lt.float64, lt.int32, lt.int64])
@pytest.mark.parametrize("shape", [(), (7,), (3, 4), (0, 3)])
def test_unique_histogram_angle_and_friends_as_pytorchs(dtype, shape):
    for _, x, t in inputs(shape, dtype):
        if dtype.is_float:
            x, t = x.round(), t.round()  # repeated values
        for got, want in zip(x.unique(return_inverse=True, return_counts=True),
                             t.unique(return_inverse=True, return_counts=True)):
            check(got, want)
        check(x.unique(), t.unique())
        check(x.angle(), t.angle())
        check(x.diagflat(1), t.diagflat(1))
        if dtype.is_float:
            check(x.hardshrink(1.5), t.hardshrink(1.5))
            if len(shape) == 2 and shape[0]:
                check(x.cov(), t.cov())
                check(x.cov(correction=0), t.cov(correction=0))
            if x.size:
                for bins, lo_hi in ((5, None), (3, (-1.0, 2.0))):
                    got, want = x.histogram(bins, range=lo_hi), t.histogram(bins, range=lo_hi)
                    check(got.hist, want.hist)
                    check(got.bin_edges, want.bin_edges)
    if len(shape) == 1:
        a, b = random_array(shape, dtype, 1), random_array(shape, dtype, 2)
        check(lt.asarray(a).vdot(lt.asarray(b)), torch.tensor(a).vdot(torch.tensor(b)))
    with pytest.raises(ValueError, match="dim"):
        lt.zeros(3).unique(dim=0)
    nan = np.array([np.nan, -1.0, 2.0, -0.0], np.float32)
    check(lt.asarray(nan).angle(), torch.tensor(nan).angle())
    w = np.array([0.25], np.float32)
    check(lt.asarray(nan).prelu(lt.asarray(w)), torch.tensor(nan).prelu(torch.tensor(w)))


def test_fill_diagonal_and_max_of_two_tensors_as_pytorchs():
    for shape, wrap in [((4, 3), False), ((7, 3), True), ((3, 5), True), ((3, 3, 3), False)]:
        ours, theirs = lt.zeros(*shape), torch.zeros(*shape)
        ours.fill_diagonal_(2.5, wrap=wrap)
        theirs.fill_diagonal_(2.5, wrap=wrap)
        check(ours, theirs.numpy())
    with pytest.raises(lt.ShapeError, match="sides"):
        lt.zeros(2, 3, 3).fill_diagonal_(1.0)
    a = np.array([[1.0, -2.0], [np.nan, 4.0]], np.float32)
    check(lt.max(lt.asarray(a), lt.asarray(-a)), torch.max(torch.tensor(a), torch.tensor(-a)).numpy())
    check(lt.asarray(a).min(lt.asarray(-a)), torch.tensor(a).min(torch.tensor(-a)).numpy())


def test_shape_dtype_queries_and_new_tensors():
    for dtype in (lt.float32, lt.int8, lt.uint8, lt.bool_):
        x, t = lt.zeros((2, 3), dtype=dtype), torch.zeros((2, 3), dtype=TORCH_DTYPES[dtype])
        assert (x.is_floating_point(), x.is_complex(), x.is_signed(), x.element_size(), x.nelement(),
                x.ndimension()) == (t.is_floating_point(), t.is_complex(), t.is_signed(), t.element_size(),
                                    t.nelement(), t.ndimension())
        for got, want in ((x.new_zeros(4, 2), t.new_zeros(4, 2)), (x.new_ones((3,)), t.new_ones((3,))),
                          (x.new_full((2, 2), 1), t.new_full((2, 2), 1)), (x.new_tensor([1, 0]), t.new_tensor([1, 0])),
                          (x.new_zeros((), dtype=lt.int64), t.new_zeros((), dtype=torch.int64))):
            check(got, want)
        assert x.new_empty(0, 3).shape == (0, 3) and x.new_empty([2]).dtype == dtype
    assert x.new_ones(2, dtype=lt.float64, requires_grad=True).requires_grad


@pytest.mark.parametrize("dtype", [lt.float32, lt.int64, lt.bool_])
def test_as_methods_unbind_unflatten_select_sum_to_size(dtype):
    other_lt, other_t = lt.zeros((2, 3, 4), dtype=lt.float64), torch.zeros((2, 3, 4), dtype=torch.float64)
    for _, x, t in inputs((3, 4), dtype):
        check(x.expand_as(other_lt), t.expand_as(other_t))
        check(x.reshape_as(other_lt[0].mT), t.reshape_as(other_t[0].mT))
        check(x.view_as(other_lt[0]), t.contiguous().view_as(other_t[0]))
        check(x.type_as(other_lt), t.type_as(other_t))
        for got, want in zip(x.unbind(1), t.unbind(1)):
            check(got, want)
        check(x.unflatten(1, (2, -1)), t.unflatten(1, (2, -1)))
        check(x.select(0, -1), t.select(0, -1))
        check(lt.narrow_copy(x, 1, 1, 2), torch.narrow_copy(t, 1, 1, 2))
        if dtype != lt.bool_:
            check(x.sum_to_size(1, 4), t.sum_to_size(1, 4))
            check(x.sum_to_size((3, 1)), t.sum_to_size((3, 1)))
            check(x.sum_to_size(4), t.sum_to_size(4))
    assert lt.unbind(lt.zeros((0, 2))) == ()
    with pytest.raises(ShapeError, match="sum_to_size"):
        lt.zeros((3, 4)).sum_to_size(2, 4)
    with pytest.raises(IndexError):
        lt.zeros((3, 4)).select(1, 4)


# name: (lazytensor, torch, the shapes of the random arguments, their range)
ELEMENTWISE = {
    "clamp_min": (lambda x: x.clamp_min(-1.0), lambda t: t.clamp_min(-1.0), [(3, 4)], {}),
    "clamp_max": (lambda x, y: lt.clamp_max(x, y), lambda t, u: torch.clamp_max(t, u), [(3, 4), (4,)], {}),
    "lerp": (lambda x, y: x.lerp(y, 0.7), lambda t, u: t.lerp(u, 0.7), [(3, 4), (4,)], {}),
    "lerp_tensor": (lambda x, y, w: lt.lerp(x, y, w), lambda t, u, v: torch.lerp(t, u, v), [(3, 1), (4,), (3, 4)],
                    {}),
    "logit": (lambda x: x.logit(), lambda t: t.logit(), [(3, 4)], {"low": 0.05, "high": 0.95}),
    "logit_eps": (lambda x: lt.logit(x, 0.2), lambda t: torch.logit(t, 0.2), [(5,)], {"low": 0.05, "high": 0.95}),
    "xlogy": (lambda x, y: x.xlogy(y), lambda t, u: t.xlogy(u), [(3, 4), (4,)], {"low": 0.1, "high": 3}),
    "frac": (lambda x: x.frac(), lambda t: t.frac(), [(3, 4)], {}),
    "divide": (lambda x, y: x.divide(y), lambda t, u: t.divide(u), [(3, 4), ()], {"low": 0.5, "high": 3}),
    "subtract": (lambda x, y: x.subtract(y, alpha=2), lambda t, u: t.subtract(u, alpha=2), [(3, 4), (3, 1)], {}),
    "multiply": (lambda x, y: x.multiply(y), lambda t, u: t.multiply(u), [(), (2, 3)], {}),
    "mm": (lambda a, b: a.mm(b), lambda a, b: a.mm(b), [(3, 4), (4, 2)], {}),
    "mv": (lambda a, b: lt.mv(a, b), lambda a, b: torch.mv(a, b), [(3, 4), (4,)], {}),
    "addmm": (lambda c, a, b: c.addmm(a, b, beta=0.5, alpha=2), lambda c, a, b: c.addmm(a, b, beta=0.5, alpha=2),
              [(2,), (3, 4), (4, 2)], {}),
    "addmv": (lambda c, a, b: lt.addmv(c, a, b), lambda c, a, b: torch.addmv(c, a, b), [(3,), (3, 4), (4,)], {}),
    "addr": (lambda c, a, b: c.addr(a, b, alpha=3), lambda c, a, b: c.addr(a, b, alpha=3), [(3, 1), (3,), (2,)],
             {}),
    "addbmm": (lambda c, a, b: c.addbmm(a, b, beta=2), lambda c, a, b: c.addbmm(a, b, beta=2),
               [(3, 2), (5, 3, 4), (5, 4, 2)], {}),
    "ger": (lambda a, b: a.ger(b), lambda a, b: a.ger(b), [(3,), (4,)], {}),
    "norm": (lambda x: x.norm(), lambda t: t.norm(), [(3, 4)], {}),
    "norm_dim": (lambda x: x.norm(1, dim=1, keepdim=True), lambda t: t.norm(1, dim=1, keepdim=True), [(3, 4)], {}),
    "norm_inf": (lambda x: x.norm(float("inf"), (0, 1)), lambda t: t.norm(float("inf"), (0, 1)), [(3, 4)], {}),
    "dist": (lambda x, y: x.dist(y, 3), lambda t, u: t.dist(u, 3), [(3, 4), (4,)], {}),
    "renorm": (lambda x: x.renorm(2, 0, 3.0), lambda t: t.renorm(2, 0, 3.0), [(3, 4)], {}),
    "diag_embed": (lambda x: x.diag_embed(), lambda t: t.diag_embed(), [(2, 3)], {}),
    "diag_embed_offset": (lambda x: lt.diag_embed(x, -1, 0, 2), lambda t: torch.diag_embed(t, -1, 0, 2), [(2, 3)],
                          {}),
    "unfold": (lambda x: x.unfold(1, 2, 1), lambda t: t.unfold(1, 2, 1), [(3, 5)], {}),
    "unfold_step": (lambda x: x.unfold(0, 2, 2), lambda t: t.unfold(0, 2, 2), [(5, 2)], {}),
    "take_along_dim": (lambda x: x.take_along_dim(lt.asarray([[0], [2], [1]]), 1),
                       lambda t: t.take_along_dim(torch.tensor([[0], [2], [1]]), 1), [(3, 4)], {}),
    "take_along_dim_flat": (lambda x: lt.take_along_dim(x, lt.asarray([5, 0])),
                            lambda t: torch.take_along_dim(t.contiguous(), torch.tensor([5, 0])), [(3, 4)], {}),
    "index_fill": (lambda x: x.index_fill(1, lt.asarray([0, 3]), -2.0),
                   lambda t: t.index_fill(1, torch.tensor([0, 3]), -2.0), [(3, 4)], {}),
    "index_copy": (lambda x, s: x.index_copy(0, lt.asarray([2, 0]), s),
                   lambda t, s: t.index_copy(0, torch.tensor([2, 0]), s), [(3, 4), (2, 4)], {}),
    "matrix_power": (lambda x: x.matrix_power(3), lambda t: t.matrix_power(3), [(3, 3)], {}),
    "cross": (lambda x, y: x.cross(y), lambda t, u: torch.cross(t, u, dim=0), [(3, 4), (3, 4)], {}),
    "aminmax": (lambda x: lt.stack(x.aminmax(dim=1)), lambda t: torch.stack(t.aminmax(dim=1)), [(3, 4)], {}),
}


# the methods that run a LAPACK factorization (on the CPU only)
FACTORIZATIONS = {
    "inverse": (lambda x: x.inverse(), lambda t: t.inverse(), [(2, 3, 3)], {}),
    "norm_nuc": (lambda x: x.norm("nuc"), lambda t: t.norm("nuc"), [(3, 4)], {}),
    "det": (lambda x: x.det(), lambda t: t.det(), [(3, 3)], {}),
    "logdet": (lambda x: (x @ x.mT).logdet(), lambda t: (t @ t.mT).logdet(), [(3, 3)], {}),
    "pinverse": (lambda x: x.pinverse(), lambda t: t.pinverse(), [(3, 2)], {}),
    "cholesky": (lambda x: (x @ x.mT + lt.eye(3)).cholesky(upper=True),
                 lambda t: (t @ t.mT + torch.eye(3)).cholesky(upper=True), [(3, 3)], {}),
}


@pytest.mark.parametrize("name", [*ELEMENTWISE, *(pytest.param(n, marks=factorization) for n in FACTORIZATIONS)])
def test_methods_against_torch_with_gradients(name):
    from test_autograd import check_grads
    f, g, shapes, rng = ELEMENTWISE.get(name) or FACTORIZATIONS[name]
    arrays = [random_array(s, lt.float64, seed, **rng) for seed, s in enumerate(shapes)]
    check_grads(f, g, arrays, kinds=("transposed",) if len(shapes[0]) > 1 else ("contiguous",))
    check(f(*(lt.asarray(a.astype(np.float32)) for a in arrays)),
          g(*(torch.tensor(a.astype(np.float32)) for a in arrays)), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("dtype", [lt.int64, lt.uint8, lt.bool_])
def test_integer_methods_keep_torch_dtypes(dtype):
    for kind in ("transposed",):
        x, t = layout(random_array((3, 4), dtype), kind)
        check(x.clamp_min(2), t.clamp_min(2))
        check(x.index_fill(0, lt.asarray(1), 1), t.index_fill(0, torch.tensor(1), 1))
        check(lt.stack(lt.aminmax(x)), torch.stack(torch.aminmax(t)))
        check(x.unfold(1, 3, 1), t.unfold(1, 3, 1))
        check(x.diag_embed(1), t.diag_embed(1))
        check(x.take_along_dim(lt.asarray([[1, 0]]), 1), t.take_along_dim(torch.tensor([[1, 0]]), 1))
        if dtype != lt.bool_:
            check(x.xlogy(3), t.xlogy(3))
            check(x.logit(), t.logit())
            check(x.mm(x.mT), t.mm(t.mT))
            check(x.norm(), t.float().norm())
            nonzero = x + (x == 0).cast(dtype)
            for mode in ("trunc", "floor"):
                check(x.divide(nonzero, rounding_mode=mode), t.divide(t + (t == 0).to(t.dtype), rounding_mode=mode))
            check(x.true_divide(2), t.true_divide(2))


@factorization
def test_factorization_methods_edge_cases():
    check(lt.asarray([[1.0, 2.0], [2.0, 4.0]]).logdet(), torch.tensor([[1.0, 2.0], [2.0, 4.0]]).logdet())
    check(lt.asarray([[0.0, 1.0], [1.0, 0.0]]).logdet(), torch.tensor([[0.0, 1.0], [1.0, 0.0]]).logdet())
    u, s, v = lt.asarray(random_array((4, 3), lt.float64)).svd()
    check(u @ lt.diag(s) @ v.mT, torch.tensor(random_array((4, 3), lt.float64)))
    q, r = lt.asarray(random_array((4, 3), lt.float64)).qr(some=False)
    assert q.shape == (4, 4) and r.shape == (4, 3)


def test_method_edge_cases():
    nan = lt.asarray([[float("nan"), 1.0]])
    check(lt.zeros((2, 2)).addmm(nan.mT, lt.ones((1, 2)), beta=0), torch.ones(2, 1) @ torch.ones(1, 2) * 0 + 1 *
          torch.tensor([[float("nan")], [1.0]]) @ torch.ones(1, 2))
    check(nan.addmm(lt.ones((1, 3)), lt.ones((3, 2)), beta=0), torch.full((1, 2), 3.0))
    check(lt.xlogy(lt.asarray([0.0, 0.0, 1.0]), lt.asarray([0.0, float("nan"), 0.0])),
          torch.xlogy(torch.tensor([0.0, 0.0, 1.0]), torch.tensor([0.0, float("nan"), 0.0])))
    check(lt.zeros((0, 3)).unfold(1, 2, 1), torch.zeros(0, 3).unfold(1, 2, 1))
    check(lt.asarray(5.0).unfold(0, 1, 1), torch.tensor(5.0).unfold(0, 1, 1))
    check(lt.zeros((0, 2)).norm(), torch.zeros(0, 2).norm())
    check(lt.zeros((2, 0)).diag_embed(), torch.zeros(2, 0).diag_embed())
    for bad in (lambda: lt.zeros((2, 3)).mm(lt.zeros(3)), lambda: lt.zeros((2, 3)).mv(lt.zeros((3, 1))),
                lambda: lt.zeros(3).unfold(0, 4, 1), lambda: lt.zeros(2).addmm(lt.zeros((3, 2)), lt.zeros((2, 3)))):
        with pytest.raises(ShapeError):
            bad()
    with pytest.raises(ValueError, match="rounding_mode"):
        lt.ones(2).divide(2, rounding_mode="round")
    with pytest.raises(lt.DTypeError, match="frac"):
        lt.ones(2, dtype=lt.int32).frac()


def test_pytorchs_names_of_functions_and_methods_that_call_numpys():
    a = np.array([[1.0, np.nan, 3.0], [4.0, 5.0, -6.0]], np.float32)
    x, t = lt.asarray(a), torch.tensor(a)
    for name in ("mul", "div", "eq", "ne", "gt", "ge", "lt", "le"):
        check(getattr(lt, name)(x, 2.0), getattr(torch, name)(t, 2.0).numpy())
    check(lt.neg(x), torch.neg(t).numpy())
    check(lt.t(x), torch.t(t).numpy())
    check(lt.norm(lt.nan_to_num(x)), torch.norm(torch.nan_to_num(t)).numpy())
    assert lt.numel(x) == torch.numel(t) and lt.is_tensor(x) and not lt.is_tensor(a) and lt.is_floating_point(x)
    check(lt.tensor_split(x, 2, dim=1)[1], torch.tensor_split(t, 2, dim=1)[1].numpy())
    check(lt.chunk(x, 2, dim=0)[1], torch.chunk(t, 2, dim=0)[1].numpy())
    check(lt.broadcast_tensors(x, x[:1])[1], torch.broadcast_tensors(t, t[:1])[1].numpy())
    check(x.nansum(dim=1), t.nansum(dim=1).numpy())
    check(x.nanmean(dim=0, keepdim=True), t.nanmean(dim=0, keepdim=True).numpy())
    f = lt.nan_to_num(x)
    check(f.quantile(0.25, dim=1, interpolation="lower"), torch.nan_to_num(t).quantile(0.25, dim=1, interpolation="lower").numpy())
    check(f.fmod(2.5), torch.nan_to_num(t).fmod(2.5).numpy())
    check(f.rot90(1, dims=(0, 1)), torch.nan_to_num(t).rot90(1, dims=(0, 1)).numpy())
    check(f.kron(f), torch.nan_to_num(t).kron(torch.nan_to_num(t)).numpy())
    check(f[:, :2].trace(), torch.nan_to_num(t)[:, :2].trace().numpy())
    check(f.tensor_split([1], dim=1)[1], torch.nan_to_num(t).tensor_split([1], dim=1)[1].numpy())


def test_xlogy_and_logit_keep_a_half_tensors_dtype_beside_a_python_number():
    a = np.array([0.0, 0.5, 2.0], np.float16)
    got, want = lt.asarray(a).xlogy(2.5), torch.tensor(a).xlogy(2.5)
    assert got.dtype == lt.float16 and want.dtype == torch.float16
    check(got, want.numpy())
    check(lt.asarray(a[:2]).logit(eps=0.1), torch.tensor(a[:2]).logit(eps=0.1).numpy())


@pytest.mark.parametrize("dtype", [lt.float32, lt.float64, lt.int32])
def test_addcmul_and_addcdiv_are_torchs(dtype):
    """Broadcast operands, views, `value`; integer addcdiv is an error, as torch's."""
    for kind, x, t in inputs((3, 4), dtype, seed=60):
        a, b = random_array((4,), dtype, seed=61), random_array((3, 1), dtype, seed=62, low=1, high=5)
        check(x.addcmul(lt.asarray(a), lt.asarray(b), value=2), t.addcmul(torch.tensor(a), torch.tensor(b), value=2))
        check(lt.addcmul(x, lt.asarray(a), lt.asarray(b)), torch.addcmul(t, torch.tensor(a), torch.tensor(b)))
        if dtype.is_float:
            check(x.addcdiv(lt.asarray(a), lt.asarray(b), value=0.5),
                  t.addcdiv(torch.tensor(a), torch.tensor(b), value=0.5))
        else:
            with pytest.raises(lt.DTypeError):
                x.addcdiv(lt.asarray(a), lt.asarray(b))
    zero_d = np.float64(1.5)
    check(lt.addcmul(lt.asarray(zero_d), lt.asarray(zero_d), lt.asarray(zero_d)),
          torch.addcmul(*(torch.tensor(zero_d),) * 3))
    y, u = lt.asarray(np.ones((0, 2))), torch.ones(0, 2, dtype=torch.float64)
    check(y.addcdiv_(y, y + 1), u.addcdiv_(u, u + 1))


@pytest.mark.parametrize("dtype", [lt.float32, lt.int64, lt.bool_])
def test_masked_scatter_is_torchs(dtype):
    """Source's elements in order where the mask (broadcast) is true; a short source is an IndexError of the
    realize; gradients as torch's."""
    mask = random_array((3, 4), lt.bool_, seed=63)
    for kind, x, t in inputs((3, 4), dtype, seed=64):
        source = random_array((2, 7), dtype, seed=65)
        check(x.masked_scatter(lt.asarray(mask), lt.asarray(source)),
              t.masked_scatter(torch.tensor(mask), torch.tensor(source)))
        row = mask[0]  # broadcast along the rows
        check(lt.masked_scatter(x, lt.asarray(row), lt.asarray(source)),
              t.masked_scatter(torch.tensor(row), torch.tensor(source)))
    x = lt.asarray(random_array((3, 4), dtype, seed=66))
    with pytest.raises(IndexError, match="more often"):
        x.masked_scatter(lt.asarray(np.ones((3, 4), bool)), lt.asarray(random_array((5,), dtype, seed=67))).numpy()
    with pytest.raises(IndexError):
        x.masked_scatter(lt.asarray(np.ones((3, 4), bool)), lt.asarray(np.zeros(0, np.float32))).numpy()
    check(x.masked_scatter(lt.asarray(np.zeros((3, 4), bool)), lt.asarray(np.zeros(0, np.float32)).cast(dtype)),
          torch.tensor(x.numpy()))
    if dtype == lt.float32:
        arr, src = random_array((3, 4), lt.float64, seed=68), random_array((12,), lt.float64, seed=69)
        a, s = lt.asarray(arr).requires_grad_(), lt.asarray(src).requires_grad_()
        ta, ts = torch.tensor(arr, requires_grad=True), torch.tensor(src, requires_grad=True)
        out, expected = a.masked_scatter(lt.asarray(mask), s), ta.masked_scatter(torch.tensor(mask), ts)
        (out * out).sum().backward()
        (expected * expected).sum().backward()
        check(a.grad, ta.grad)
        check(s.grad, ts.grad)


@pytest.mark.parametrize("dtype", [lt.float32, lt.int16])
def test_select_slice_and_diagonal_scatter_are_torchs(dtype):
    for kind, x, t in inputs((4, 5, 3), dtype, seed=70):
        row = random_array((4, 3), dtype, seed=71)
        check(x.select_scatter(lt.asarray(row), 1, -2), t.select_scatter(torch.tensor(row), 1, -2))
        part = random_array((4, 2, 3), dtype, seed=72)
        check(lt.slice_scatter(x, lt.asarray(part), 1, 1, None, 3), torch.slice_scatter(t, torch.tensor(part), 1, 1, None, 3))
        rows = random_array((3, 5, 2), dtype, seed=80).transpose(2, 1, 0)  # a non-contiguous src
        check(x.slice_scatter(lt.asarray(rows), 0, 2), t.slice_scatter(torch.tensor(rows), 0, 2))
        for offset, dims in ((0, (0, 1)), (2, (0, 1)), (-1, (2, 0)), (1, (-1, 1))):
            shape = tuple(t.diagonal(offset, *dims).shape)
            diag = random_array(shape, dtype, seed=73)
            check(x.diagonal_scatter(lt.asarray(diag), offset, *dims), t.diagonal_scatter(torch.tensor(diag), offset, *dims))
    with pytest.raises(ShapeError, match="expected src of shape"):
        lt.zeros((3, 4)).select_scatter(lt.zeros(3), 0, 0)
    arr, src = random_array((3, 4), lt.float64, seed=74), random_array((3,), lt.float64, seed=75)
    a, s = lt.asarray(arr).requires_grad_(), lt.asarray(src).requires_grad_()
    ta, ts = torch.tensor(arr, requires_grad=True), torch.tensor(src, requires_grad=True)
    out, expected = a.diagonal_scatter(s, 1), ta.diagonal_scatter(ts, 1)
    (out * out).sum().backward()
    (expected * expected).sum().backward()
    check(a.grad, ta.grad)
    check(s.grad, ts.grad)


def test_block_diag_isreal_swapdims_and_pdist_are_torchs():
    blocks = [random_array((2, 3), lt.float32, seed=76), random_array((4,), lt.int32, seed=77), np.float32(2.5),
              np.zeros((0, 2), np.float32), np.zeros((2, 0), np.float32)]
    check(lt.block_diag(*map(lt.asarray, blocks)), torch.block_diag(*map(torch.tensor, blocks)))
    check(lt.block_diag(), torch.block_diag())
    with pytest.raises(ShapeError):
        lt.block_diag(lt.zeros((1, 2, 3)))
    for kind, x, t in inputs((3, 4), lt.int32, seed=78):
        check(lt.isreal(x), torch.isreal(t))
        check(lt.iscomplex(x), np.iscomplex(t.numpy()))
        check(lt.swapdims(x, 0, 1), torch.swapdims(t, 0, 1))
    for kind, x, t in inputs((5, 3), lt.float64, seed=79):
        check(lt.pdist(x), torch.pdist(t))


def test_adjoint_and_chain_matmul_are_torchs():
    for kind, x, t in inputs((2, 3, 4), lt.float64, seed=81):
        check(x.adjoint(), t.adjoint())
        check(lt.adjoint(x), torch.adjoint(t))
    mats = [random_array(s, lt.float64, seed=82 + k) for k, s in enumerate([(3, 5), (5, 2), (2, 4), (4, 6)])]
    check(lt.chain_matmul(*map(lt.asarray, mats)), torch.chain_matmul(*map(torch.tensor, mats)))
    check(lt.chain_matmul(lt.asarray(mats[0])), torch.chain_matmul(torch.tensor(mats[0])))
    with pytest.raises(ShapeError):
        lt.chain_matmul(lt.zeros((2, 3, 3)), lt.zeros((3, 3)))


@pytest.mark.parametrize("shape", [(2, 3, 4), (), (0, 3), (3, 0, 2), (5,)])
def test_stride_is_row_major_as_torch_of_a_contiguous_tensor(shape):
    ours, theirs = lt.zeros(shape), torch.zeros(shape)
    assert ours.stride() == theirs.stride() and ours.is_contiguous()
    assert [ours.stride(d) for d in range(-len(shape), len(shape))] == \
        [theirs.stride(d) for d in range(-len(shape), len(shape))]
    # any view reads as row-major: code that checks before `view` takes the direct way
    assert ours.mT.is_contiguous() if len(shape) >= 2 else ours.flip(0).is_contiguous() if shape else True
