"""Reductions against the torch oracle: sum, mean, prod, max/min, argmax/argmin, var/std, any/all,
logsumexp, softmax, log_softmax and cumsum, over every kind of axis argument, dtype, layout and size."""
from __future__ import annotations

import importlib
import math
import warnings

import numpy as np
import pytest
import torch

import lazytensor as lt
from conftest import ALL_DTYPES, LAYOUTS, check, inputs, layout, random_array, sized, to_torch_dtype
from lazytensor.kernels import ir

SHAPE = (3, 4, 5)
# (axis, keepdims): None, ints (negative too), tuples (unsorted, negative, all axes) and the empty tuple,
# each with keepdims on and off.
AXES = [(None, False), (None, True), (0, True), (1, False), (-1, True), ((0, 2), False), ((2, -3), True),
        ((-1, 0, 1), False), ((), False), ((), True)]


def rotating_layout(case) -> str:
    """One of the non-contiguous layouts, picked by the case's position in AXES."""
    return LAYOUTS[1 + AXES.index(case) % (len(LAYOUTS) - 1)]


def torch_dims(axis, ndim: int):
    """The `dim` torch needs for `axis`: torch has no None for every reduction, so spell out all axes."""
    return tuple(range(ndim)) if axis is None else axis


def torch_prod(t: torch.Tensor, axis, keepdim: bool) -> torch.Tensor:
    """torch.prod takes one dim at a time: reduce the axes one by one (keeping them), then drop them."""
    dims = sorted(d % t.ndim for d in ((axis,) if isinstance(axis, int) else torch_dims(axis, t.ndim)))
    out = t
    for d in dims:
        out = out.prod(d, keepdim=True)
    if out.dtype != torch.int64 and not out.dtype.is_floating_point:
        out = out.to(torch.int64)
    return out if keepdim else out.reshape([n for i, n in enumerate(out.shape) if i not in dims])


def quiet(fn, *args, **kwargs):
    """torch warns when var's divisor is <= 0; the value it returns is still the oracle."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return fn(*args, **kwargs)


def _as_float(t: torch.Tensor) -> torch.Tensor:
    return t if t.dtype.is_floating_point else t.to(torch.float32)


# name: (lazytensor call, torch call, random_array range). Torch has no mean/var/logsumexp for ints, so the
# oracle casts to float32, which is what lazytensor promises (integer input gives the default float).
REDUCERS = {
    "sum": (lambda x, a, k: x.sum(a, keepdims=k), lambda t, a, k: torch.sum(t, dim=a, keepdim=k), {}),
    "prod": (lambda x, a, k: x.prod(a, keepdims=k), torch_prod, {"low": 0.5, "high": 1.5}),
    "max": (lambda x, a, k: x.max(a, keepdims=k), lambda t, a, k: torch.amax(t, dim=a, keepdim=k), {}),
    "min": (lambda x, a, k: x.min(a, keepdims=k), lambda t, a, k: torch.amin(t, dim=a, keepdim=k), {}),
    "amax": (lambda x, a, k: x.amax(a, keepdims=k), lambda t, a, k: torch.amax(t, dim=a, keepdim=k), {}),
    "amin": (lambda x, a, k: x.amin(a, keepdims=k), lambda t, a, k: torch.amin(t, dim=a, keepdim=k), {}),
    "mean": (lambda x, a, k: x.mean(a, keepdims=k), lambda t, a, k: torch.mean(_as_float(t), dim=a, keepdim=k), {}),
    # torch.any/all keep uint8 for uint8 input; lazytensor (like NumPy) always gives bool, so ask torch about
    # the truth values.
    "any": (lambda x, a, k: x.any(a, keepdims=k), lambda t, a, k: torch.any(t.bool(), dim=a, keepdim=k), {}),
    "all": (lambda x, a, k: x.all(a, keepdims=k), lambda t, a, k: torch.all(t.bool(), dim=a, keepdim=k), {}),
    "var": (lambda x, a, k: x.var(a, keepdims=k),
            lambda t, a, k: torch.var(_as_float(t), dim=a, keepdim=k, correction=0), {}),
    "std": (lambda x, a, k: x.std(a, keepdims=k),
            lambda t, a, k: torch.std(_as_float(t), dim=a, keepdim=k, correction=0), {}),
    "logsumexp": (lambda x, a, k: x.logsumexp(a, keepdims=k),
                  lambda t, a, k: torch.logsumexp(t, dim=a, keepdim=k), {}),
}


def expected_reduce(name: str, t: torch.Tensor, axis, keepdims: bool) -> torch.Tensor:
    if axis == ():
        # NumPy semantics: reducing over no axes is the identity (torch would reduce over all of them); only
        # the result dtype changes as it would for a real reduction.
        dtype = torch_ref_dtype(name, t)
        if name in ("var", "std"):
            return torch.zeros_like(t, dtype=dtype)
        return t.to(dtype)
    return unsigned_accumulation(REDUCERS[name][1](t, torch_dims(axis, t.ndim), keepdims), t)


def unsigned_accumulation(result: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
    """torch's sum, product or running one of `t`, in the dtype lazytensor's accumulates unsigned integers
    in: uint64, NumPy's and the array API's (torch's int64 holds the same values)."""
    unsigned = t.dtype in (torch.uint8, torch.uint16, torch.uint32, torch.uint64)
    return result.to(torch.uint64) if unsigned and result.dtype == torch.int64 else result


def torch_ref_dtype(name: str, t: torch.Tensor) -> torch.dtype:
    probe = unsigned_accumulation(REDUCERS[name][1](t.reshape(-1)[:1], 0, False), t)
    return probe.dtype


@pytest.mark.parametrize("axis,keepdims", AXES, ids=str)
@pytest.mark.parametrize("name", [n for n in REDUCERS if n not in ("amax", "amin")])
def test_reduce_axes_float32(name, axis, keepdims):
    # every case runs contiguous and one non-contiguous layout, rotating through them over the axes, so each
    # op meets every layout without compiling every combination.
    fn, _, kw = REDUCERS[name]
    arr = random_array(SHAPE, lt.float32, seed=1, **kw)
    for kind in ("contiguous", rotating_layout((axis, keepdims))):
        x, t = layout(arr, kind)
        check(fn(x, axis, keepdims), expected_reduce(name, t, axis, keepdims))


@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("name", ["sum", "max", "prod"])
def test_reduction_of_a_tensor_uniform_along_a_kept_axis_reduces_one_slice(name, keepdims):
    """A reduction over a tensor whose elements are the same along an axis it keeps (an operand expanded along
    it, times ones) reduces one slice and broadcasts it: its kernel writes 5 values, not 5 x 6. Against NumPy."""
    a = random_array((5, 1, 7), lt.float32, seed=3)
    x = lt.asarray(a) * lt.ones((5, 6, 7))
    got = getattr(x, name)(axis=2, keepdims=keepdims)
    (red,) = [item for item in lt.schedule(got) if name in str(item.kernel)]
    assert red.outputs[0].numel == 5
    check(got, getattr(np.broadcast_to(a, (5, 6, 7)), name)(axis=2, keepdims=keepdims))


def test_gradient_through_a_reduction_of_a_uniform_leaf_reaches_every_element():
    """A leaf that requires grad and holds one value everywhere (jvp's zero cotangent) is reduced whole where the
    gradient is recorded: its elements vary apart, so each gets its own gradient. Against torch."""
    w = random_array((4,), lt.float64, seed=4)
    u, tu = lt.zeros((3, 4), dtype=lt.float64).requires_grad_(), torch.zeros(3, 4, dtype=torch.float64,
                                                                            requires_grad=True)
    (u.sum(0) * lt.asarray(w)).sum().backward()
    ((tu.sum(0) * torch.tensor(w)).sum()).backward()
    check(u.grad, tu.grad)
    x, tx = lt.ones((3, 4), dtype=lt.float64).requires_grad_(), torch.ones(3, 4, dtype=torch.float64,
                                                                          requires_grad=True)
    gx, = lt.autograd.gradients((x * x).sum(1).sum(), x, create_graph=True)
    tgx, = torch.autograd.grad((tx * tx).sum(1).sum(), tx, create_graph=True)
    check(gx, tgx)


def test_reduction_of_padded_ones_is_not_taken_as_uniform():
    """A padding's zeros make a broadcast of one value differ along the padded axis (avg_pool2d's counts of the
    elements in each window, with count_include_pad=False)."""
    x = lt.ones((3, 4)).pad(((1, 2), (0, 0)))
    check(x.sum(1), np.pad(np.ones((3, 4), np.float32), ((1, 2), (0, 0))).sum(1))


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
@pytest.mark.parametrize("name", ["sum", "prod", "max", "min", "mean", "any", "all"])
def test_reduce_dtypes(name, dtype):
    # bool and signed sums and products accumulate in int64 (torch's dtype), unsigned ones in uint64 (NumPy's
    # and the array API's; torch's is int64); mean of ints is float32. (2, 3) keeps integer products inside
    # int64. The index arithmetic does not depend on the dtype, so one non-contiguous layout is enough here
    # (test_reduce_axes_float32 runs them all).
    fn, _, kw = REDUCERS[name]
    arr = random_array((2, 3), dtype, seed=2, **(kw if dtype.is_float else {}))
    for kind, axis in (("contiguous", None), ("flipped", 1)):
        x, t = layout(arr, kind)
        check(fn(x, axis, False), expected_reduce(name, t, axis, False))


def test_amax_amin_are_max_min():
    for kind, x, t in inputs(SHAPE, lt.float32, seed=30):
        check(x.amax((0, 2), keepdims=True), torch.amax(t, dim=(0, 2), keepdim=True))
        check(x.amin(-1), torch.amin(t, dim=-1))
    check(lt.amax(x), torch.amax(t))


@pytest.mark.parametrize("dtype", [lt.int8, lt.uint8, lt.int32, lt.float64], ids=str)
def test_sum_dtype_argument(dtype):
    x, t = layout(random_array((4, 5), lt.int16, seed=3), "transposed")
    check(x.sum(1, dtype=dtype), torch.sum(t.to(to_torch_dtype(dtype)), dim=1, dtype=to_torch_dtype(dtype)))
    check(x.prod(0, dtype=lt.float64), torch.prod(t, dim=0, dtype=torch.float64))
    check(x.mean(dtype=lt.float64), torch.mean(t.to(torch.float64)))


def test_int_sums_do_not_overflow_small_dtypes():
    # 1000 * 100 does not fit in int8 or uint8; the int64 (uint64) accumulator holds it exactly.
    for dtype, value in ((lt.int8, 100), (lt.uint8, 200), (lt.int16, 30000), (lt.int32, 2**31 - 1)):
        arr = np.full(1000, value, dtype=dtype.name)
        got = lt.asarray(arr).sum()
        check(got, unsigned_accumulation(torch.tensor(arr).sum(), torch.tensor(arr)))
        assert got.item() == 1000 * value
    bools = np.arange(300) % 3 == 0
    check(lt.asarray(bools).sum(), torch.tensor(bools).sum())
    assert lt.asarray(bools).sum().item() == 100


def test_torch_aliases_dim_keepdim():
    for kind, x, t in inputs(SHAPE, lt.float32, seed=4):
        check(x.sum(dim=1, keepdim=True), t.sum(dim=1, keepdim=True))
        check(x.sum(dim=(0, 2)), t.sum(dim=(0, 2)))
        check(x.mean(dim=-1, keepdim=True), t.mean(dim=-1, keepdim=True))
        check(x.amax(dim=0), t.amax(dim=0))
        check(x.amin(dim=(0, 2), keepdim=True), t.amin(dim=(0, 2), keepdim=True))
        for got, want in ((x.max(dim=0), t.max(dim=0)), (x.min(dim=2, keepdim=True), t.min(dim=2, keepdim=True))):
            values, indices = got  # PyTorch's spelling, PyTorch's result
            check(values, want.values)
            check(indices, want.indices)
        check(x.max(0), t.amax(0))  # positional and axis=: NumPy's, values only
        check(x.min(axis=2), t.amin(2))
        check(x.prod(dim=1), t.prod(dim=1))
        check(x.argmax(dim=1, keepdim=True), t.argmax(dim=1, keepdim=True))
        check(x.argmin(dim=-1), t.argmin(dim=-1))
        check(x.var(dim=1, keepdim=True, correction=1), t.var(dim=1, keepdim=True, correction=1))
        check(x.std(dim=(0, 1)), t.std(dim=(0, 1), correction=0))
        check(x.any(dim=0), t.any(dim=0))
        check(x.all(dim=2, keepdim=True), t.all(dim=2, keepdim=True))
        check(x.logsumexp(dim=1, keepdim=True), t.logsumexp(dim=1, keepdim=True))
        check(x.softmax(dim=0), t.softmax(dim=0))
        check(x.log_softmax(dim=1), t.log_softmax(dim=1))
        check(x.cumsum(dim=2), t.cumsum(dim=2))


def test_function_forms():
    arr = random_array(SHAPE, lt.float32, seed=5)
    t = torch.tensor(arr)
    check(lt.sum(arr, axis=1), t.sum(1))
    check(lt.mean(arr, axis=(0, 2), keepdims=True), t.mean((0, 2), keepdim=True))
    check(lt.max(arr), t.amax())
    check(lt.amin(arr, 0), t.amin(0))
    check(lt.argmax(arr, axis=2), t.argmax(2))
    check(lt.var(arr, axis=0, ddof=1), t.var(0, correction=1))
    check(lt.logsumexp(arr, axis=-1), t.logsumexp(-1))
    check(lt.softmax(arr, axis=1), t.softmax(1))
    check(lt.cumsum(arr, axis=0), t.cumsum(0))
    check(lt.prod(arr, axis=2), t.prod(2))


# ---- argmax / argmin ------------------------------------------------------------------------------------


@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("axis", [None, 0, 1, -1])
@pytest.mark.parametrize("name", ["argmax", "argmin"])
def test_argmax_argmin_ties_first_occurrence(name, axis, keepdims):
    # values in 0..3 on a 3x4x5 grid: every row has ties, and the first occurrence must win.
    arr = np.random.default_rng(6).integers(0, 4, SHAPE).astype(np.float32)
    for kind in ("contiguous", "transposed", "strided", "flipped"):
        x, t = layout(arr, kind)
        got = getattr(x, name)(axis, keepdims=keepdims)
        check(got, getattr(torch, name)(t, dim=axis, keepdim=keepdims))


@pytest.mark.parametrize("dtype", [lt.int8, lt.uint8, lt.int32, lt.int64, lt.float64], ids=str)
def test_argmax_argmin_dtypes(dtype):
    arr = random_array((5, 6), dtype, seed=7)
    for kind, axes in (("contiguous", (None, 0)), ("transposed", (1,))):
        x, t = layout(arr, kind)
        for axis in axes:
            check(x.argmax(axis), torch.argmax(t, dim=axis))
            check(x.argmin(axis), torch.argmin(t, dim=axis))


def test_argmax_bool_matches_numpy():
    # torch has no argmax for bool; NumPy's answer (first True / first False) is the expectation.
    arr = np.array([[False, True, True], [False, False, False], [True, False, True]])
    x = lt.asarray(arr)
    for axis in (None, 0, 1):
        check(x.argmax(axis), np.argmax(arr, axis=axis))
        check(x.argmin(axis), np.argmin(arr, axis=axis))


def test_argmax_argmin_nan_as_torch():
    nan, inf = math.nan, math.inf
    arr = np.array([[1.0, nan, 3.0, nan, 3.0],
                    [-inf, 2.0, inf, inf, 0.0],
                    [nan, nan, nan, nan, nan],
                    [0.0, -0.0, 0.0, -1.0, -1.0]], dtype=np.float32)
    for kind in ("contiguous", "transposed", "strided", "flipped"):
        x, t = layout(arr, kind)
        for axis in (None, 0, 1):
            check(x.argmax(axis), torch.argmax(t, dim=axis))
            check(x.argmin(axis), torch.argmin(t, dim=axis))
        check(x.max(1), torch.amax(t, dim=1))
        check(x.min(0), torch.amin(t, dim=0))
        check(x.max(), torch.amax(t))


def test_argmax_keepdims_axis_none_and_0d():
    arr = random_array((2, 3, 4), lt.float32, seed=8)
    x, t = lt.asarray(arr), torch.tensor(arr)
    check(x.argmax(keepdims=True), torch.argmax(t, dim=None, keepdim=True))
    check(x.argmin(None, True), torch.argmin(t, dim=None, keepdim=True))
    z = lt.asarray(np.float32(2.5))
    check(z.argmax(), torch.argmax(torch.tensor(2.5)))
    check(z.argmin(keepdims=True), torch.argmin(torch.tensor(2.5), keepdim=True))


@pytest.mark.parametrize("dtype", [lt.float32, lt.float64, lt.int32, lt.uint8, lt.bool_], ids=str)
def test_argmax_argmin_along_long_rows(dtype):
    # rows of several of the blocks a CPU kernel searches for the first extremum (`first_hit`): ties
    # across blocks, the extremum or a NaN in the first, a middle or the last element
    n = 300
    arr = random_array((8, n), dtype, seed=9)
    if dtype != lt.bool_:
        arr = arr % 4
        for row, at in enumerate((0, 127, 128, 129, n - 1)):
            arr[row, at] = 9 if row % 2 else 0
    if dtype.is_float:
        arr[5, [200, 150]], arr[6, 129], arr[7, n - 1] = math.nan, math.inf, -math.inf
    oracle = "numpy" if dtype == lt.bool_ else "torch"
    for kind in ("contiguous", "strided", "flipped"):
        x, t = layout(arr, kind, oracle)
        for name in ("argmax", "argmin"):
            for axis in (1, -1, None):
                expected = (getattr(np, name)(t, axis=axis) if oracle == "numpy"
                            else getattr(torch, name)(t, dim=axis))
                check(getattr(x, name)(axis), expected)


def test_argmax_rejects_tuple_axis():
    x = lt.asarray(random_array((2, 3), lt.float32))
    with pytest.raises(TypeError):
        x.argmax((0, 1))


# ---- var / std ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("correction", [0, 1, 2])
@pytest.mark.parametrize("axis", [None, 0, -1, (0, 2)], ids=str)
def test_var_std_correction(axis, correction):
    arr = random_array(SHAPE, lt.float32, seed=9)
    for kind in ("contiguous", "strided"):
        x, t = layout(arr, kind)
        dims = torch_dims(axis, 3)
        check(x.var(axis, correction=correction), torch.var(t, dim=dims, correction=correction))
        check(x.std(axis, ddof=correction, keepdims=True),
              torch.std(t, dim=dims, correction=correction, keepdim=True))


def test_var_std_defaults_and_dtypes():
    arr64 = random_array((4, 7), lt.float64, seed=10)
    x, t = lt.asarray(arr64), torch.tensor(arr64)
    check(x.var(), torch.var(t, correction=0))  # default correction is 0, as NumPy
    check(x.std(0), torch.std(t, dim=0, correction=0))
    check(x.var(1), np.var(arr64, axis=1))
    check(x.std(ddof=1), np.std(arr64, ddof=1))
    for kind, xi, ti in inputs((4, 7), lt.int32, seed=11):
        check(xi.var(1), torch.var(ti.to(torch.float32), dim=1, correction=0))
        check(xi.std(correction=1), torch.std(ti.to(torch.float32), correction=1))


def test_std_gradient_where_std_is_zero():
    # found by the fuzzer: a constant group's std is 0, where sqrt's slope is infinite and the variance's 0:
    # NaN; PyTorch's std gradient is 0 there
    arr = np.array([[2.0, 2.0, 2.0], [1.0, 3.0, 2.0]], dtype=np.float32)
    for correction in (0, 1):
        x, t = lt.asarray(arr).requires_grad_(), torch.tensor(arr, requires_grad=True)
        x.std(axis=1, correction=correction).sum().backward()
        t.std(dim=1, correction=correction).sum().backward()
        check(x.grad, t.grad)
    x, t = lt.asarray(arr[:1, :1]).requires_grad_(), torch.tensor(arr[:1, :1], requires_grad=True)
    x.std().backward()
    t.std(correction=0).backward()
    check(x.grad, t.grad)


@pytest.mark.parametrize("dtype", [lt.float32, lt.float64, lt.int32])
@pytest.mark.parametrize("axis", [None, 1, (0, -1)], ids=str)
def test_var_mean_and_std_mean(axis, dtype):
    for kind, x, t in inputs((3, 4, 5), dtype, seed=12):
        tf = _as_float(t)
        dims = torch_dims(axis, 3)
        for ours, theirs in ((lt.var_mean, torch.var_mean), (lt.std_mean, torch.std_mean)):
            for correction in (0, 1):
                for got, expected in zip(ours(x, dim=axis, correction=correction, keepdim=True),
                                         theirs(tf, dim=dims, correction=correction, keepdim=True), strict=True):
                    check(got, expected)
        spread, mean = x.var_mean(axis, unbiased=True)
        expected_spread, expected_mean = torch.var_mean(tf, dim=dims, unbiased=True)
        check(spread, expected_spread)
        check(mean, expected_mean)
    spread, mean = lt.std_mean(random_array((4, 6), dtype, seed=13), 0)  # correction 0 by default, as lt.std
    arr = random_array((4, 6), dtype, seed=13).astype(np.float64 if dtype == lt.float64 else np.float32)
    check(spread, np.std(arr, axis=0))
    check(mean, np.mean(arr, axis=0))


def test_var_mean_of_zero_d_and_empty():
    zero_d = torch.tensor(2.5)
    for got, expected in zip(lt.var_mean(lt.asarray(2.5)), torch.var_mean(zero_d, correction=0), strict=True):
        check(got, expected)
    empty = torch.zeros((0, 3))
    for got, expected in zip(lt.std_mean(lt.zeros((0, 3)), dim=1, correction=1),
                             quiet(torch.std_mean, empty, dim=1, correction=1), strict=True):
        check(got, expected)
    for got, expected in zip(lt.var_mean(lt.zeros((0, 3)), dim=0), quiet(torch.var_mean, empty, dim=0, correction=0),
                             strict=True):
        check(got, expected)


def test_var_mean_gradient():
    arr = random_array((3, 5), lt.float64, seed=14)
    x, t = lt.asarray(arr).requires_grad_(), torch.tensor(arr, requires_grad=True)
    spread, mean = x.std_mean(1, correction=1)
    (spread * mean).sum().backward()
    expected_spread, expected_mean = torch.std_mean(t, dim=1, correction=1)
    (expected_spread * expected_mean).sum().backward()
    check(x.grad, t.grad)


def test_var_correction_at_least_count():
    # torch clamps the divisor at 0: 0/0 gives nan (one element), positive/0 gives inf.
    x = lt.asarray(np.array([[1.0, 2.0], [3.0, 3.0]], dtype=np.float32))
    t = torch.tensor([[1.0, 2.0], [3.0, 3.0]])
    check(x.var(1, correction=3), quiet(torch.var, t, dim=1, correction=3))
    check(x[:, :1].var(1, correction=1), quiet(torch.var, t[:, :1], dim=1, correction=1))
    check(x[:, :1].std(1, ddof=1), quiet(torch.std, t[:, :1], dim=1, correction=1))


def test_var_correction_and_ddof_conflict():
    x = lt.asarray(random_array((3,), lt.float32))
    with pytest.raises(ValueError):
        x.var(correction=1, ddof=0)
    check(x.var(correction=1, ddof=1), torch.var(torch.tensor(random_array((3,), lt.float32)), correction=1))


# ---- any / all ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [lt.bool_, lt.uint8, lt.int64, lt.float32], ids=str)
def test_any_all_with_zeros(dtype):
    # rows that are all zero, all nonzero and mixed, along every axis
    arr = np.zeros((4, 3, 5), dtype=dtype.name)
    arr[1] = 1
    arr[2, :, ::2] = 1
    arr[3, 1] = 1
    arr[:, 2, 4] = 1
    if dtype.is_float:
        arr[0, 0, :2] = [math.nan, -0.0]  # NaN is true, -0.0 is false
        arr[1, 0, 0] = -0.0
    for kind, axes in (("contiguous", (None, 0, -1, (0, 2))), ("flipped", (-1, (0, 2)))):
        x, t = layout(arr, kind)
        for axis in axes:
            dims = torch_dims(axis, 3)
            check(x.any(axis), torch.any(t.bool(), dim=dims))
            check(x.all(axis, keepdims=True), torch.all(t.bool(), dim=dims, keepdim=True))


# ---- logsumexp / softmax / log_softmax --------------------------------------------------------------------


def test_logsumexp_large_values_do_not_overflow():
    arr = np.array([[1000.0, 1000.0, 999.0], [-1000.0, -1001.0, -1000.5], [0.0, 88.0, 89.0]], dtype=np.float32)
    for kind in ("contiguous", "transposed", "flipped"):
        x, t = layout(arr, kind)
        for axis in (0, 1, None):
            check(x.logsumexp(axis), torch.logsumexp(t, dim=torch_dims(axis, 2)))


def test_logsumexp_infinities_and_nan():
    inf, nan = math.inf, math.nan
    arr = np.array([[-inf, -inf, -inf], [inf, 1.0, 2.0], [nan, 1.0, 2.0], [-inf, 0.0, 1.0]], dtype=np.float64)
    x, t = lt.asarray(arr), torch.tensor(arr)
    check(x.logsumexp(1), torch.logsumexp(t, 1))
    check(x.logsumexp(1, keepdims=True), torch.logsumexp(t, 1, keepdim=True))
    check(x[3:].logsumexp(), torch.logsumexp(t[3:], (0, 1)))


def test_logsumexp_gradient_with_an_infinity_beside_large_values():
    # found by the fuzzer: with an inf in the group the shift is 0, and exp(500) / exp(inf) was inf / inf = NaN
    # for the finite elements; PyTorch's gradient exp(x - logsumexp(x)) is 0 there
    arr = np.array([[1.0, 2.0], [math.inf, 500.0], [-3.0, 4.0]], dtype=np.float32)
    x, t = lt.asarray(arr).requires_grad_(), torch.tensor(arr, requires_grad=True)
    (x.logsumexp(0) * lt.asarray([1.0, 2.0])).sum().backward()
    (t.logsumexp(0) * torch.tensor([1.0, 2.0])).sum().backward()
    check(x.grad, t.grad)


def test_logsumexp_second_derivative():
    arr = random_array((3, 4), lt.float64, seed=4)
    x, t = lt.asarray(arr).requires_grad_(), torch.tensor(arr, requires_grad=True)
    gx, = lt.gradients(x.logsumexp(1).sum(), [x], create_graph=True)
    tg, = torch.autograd.grad(t.logsumexp(1).sum(), t, create_graph=True)
    check(lt.gradients((gx * gx).sum(), [x])[0], torch.autograd.grad((tg * tg).sum(), t)[0])


def test_logsumexp_int_gives_float32():
    arr = random_array((3, 4), lt.int64, seed=13) // 10
    x, t = lt.asarray(arr), torch.tensor(arr)
    check(x.logsumexp(1), torch.logsumexp(t, 1))
    check(x.logsumexp(), torch.logsumexp(t, (0, 1)))


@pytest.mark.parametrize("axis", [0, 1, -1, -3])
@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
def test_softmax_axes(name, axis):
    arr = random_array(SHAPE, lt.float32, seed=14)
    for kind in ("contiguous", LAYOUTS[1 + axis % 3]):
        x, t = layout(arr, kind)
        check(getattr(x, name)(axis), getattr(torch, name)(t, dim=axis))
    arr = random_array((2, 3, 4), lt.float64, seed=15)
    check(getattr(lt.asarray(arr), name)(axis), getattr(torch, name)(torch.tensor(arr), dim=axis))


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
def test_softmax_default_axis_and_stability(name):
    arr = np.array([[1000.0, 999.0, 998.0], [-1000.0, -1000.0, -999.0], [50.0, 0.0, -50.0]], dtype=np.float32)
    for kind in ("contiguous", "transposed", "flipped"):
        x, t = layout(arr, kind)
        check(getattr(x, name)(), getattr(torch, name)(t, dim=-1))
        check(getattr(lt, name)(x, 0), getattr(torch, name)(t, dim=0))


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
def test_softmax_infinities_and_nan_as_torch(name):
    inf, nan = math.inf, math.nan
    # masked (-inf) entries get probability 0; all-masked, +inf and NaN rows give NaN, as in torch.
    arr = np.array([[-inf, 1.0, 2.0], [-inf, -inf, -inf], [inf, 1.0, 2.0], [nan, 1.0, 2.0], [-inf, -inf, 0.0]],
                   dtype=np.float32)
    x, t = lt.asarray(arr), torch.tensor(arr)
    check(getattr(x, name)(1), getattr(torch, name)(t, dim=1))


def nan_rows(cols: int) -> np.ndarray:
    """Rows with NaN first, in the middle, last, everywhere, beside infinities, and none: long enough that a
    backend reduces them in vectors, with a tail."""
    inf, nan = math.inf, math.nan
    arr = random_array((9, cols), lt.float64, seed=21)
    arr[0, 0] = arr[1, cols // 2] = arr[2, -1] = nan
    arr[3] = nan
    arr[4, [1, -2]] = inf, nan
    arr[5, [3, 7]] = nan, -inf
    arr[6, :] = -inf
    arr[7, 5] = inf
    return arr


@pytest.mark.parametrize("dtype", [lt.float32, lt.float64, lt.float16, lt.bfloat16], ids=str)
def test_max_min_propagate_nan_from_any_position(dtype):
    for cols in (8, 100, 1027):
        base = nan_rows(cols)
        for kind in LAYOUTS:
            x, t = layout(base, kind)
            x, t = x.cast(dtype), t.to(to_torch_dtype(dtype))
            for axis in (1, None):
                check(x.max(axis), torch.amax(t, dim=axis))
                check(x.min(axis), torch.amin(t, dim=axis))
            check(x.argmax(1), torch.argmax(t, dim=1))


@pytest.mark.parametrize("dtype", [lt.float32, lt.float64, lt.float16, lt.bfloat16], ids=str)
@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
def test_softmax_long_rows_with_nan_and_infinities_as_torch(name, dtype):
    base = nan_rows(300)
    for kind in LAYOUTS:
        x, t = layout(base, kind)
        x, t = x.cast(dtype), t.to(to_torch_dtype(dtype))
        check(getattr(x, name)(1), getattr(torch, name)(t, dim=1))


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
def test_softmax_int_gives_float32(name):
    arr = random_array((3, 5), lt.int32, seed=16) // 10
    x, t = lt.asarray(arr), torch.tensor(arr)
    check(getattr(x, name)(1), getattr(torch, name)(t.to(torch.float32), dim=1))


def test_softmax_sums_to_one():
    x = lt.asarray(random_array((6, 40), lt.float64, seed=17, low=-20, high=20))
    np.testing.assert_allclose(x.softmax(1).sum(1).numpy(), np.ones(6), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(x.log_softmax(0).exp().sum(0).numpy(), np.ones(40), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("dtype", [lt.float16, lt.bfloat16], ids=str)
def test_half_mean_var_and_max_written_to_memory_divide_in_float32_and_round_once(dtype):
    """A 16-bit mean, var or softmax's max that the scheduler writes to memory (its reader reduces along
    another axis) accumulates and divides in float32 and rounds once, as torch: a row's sum of 30000
    float16 values in [2, 4) is past float16's range, which its mean is not."""
    tdtype = to_torch_dtype(dtype)
    arr = np.random.default_rng(31).uniform(2, 4, (4, 30000)).astype(np.float32)
    x, t = lt.asarray(arr).cast(dtype), torch.tensor(arr).to(tdtype)
    centered, var = x - x.mean(-1, keepdims=True), x - x.var(-1, keepdims=True)
    assert len(lt.schedule(centered.max(0))) == len(lt.schedule(var.max(0))) == 2  # the mean and var are written
    check(centered.max(0), (t - t.mean(-1, keepdim=True)).amax(0))
    check(var.max(0), (t - t.var(-1, correction=0, keepdim=True)).amax(0))
    check((x - x.std(-1, keepdims=True)).max(0), (t - t.std(-1, correction=0, keepdim=True)).amax(0))
    equal = lt.full((70000, 3), 1.5, dtype=dtype)  # the sum of exp is 70000: past float16's range
    expected = torch.full((70000, 3), 1.5, dtype=tdtype)
    check(equal.log_softmax(0), torch.log_softmax(expected, 0))
    check(equal.softmax(0), torch.softmax(expected, 0))
    # exact, not torch's: torch's float16 logsumexp adds the exponentials in float16 and overflows
    check(equal.logsumexp(0), torch.full((3,), 1.5 + math.log(70000), dtype=tdtype))


# ---- cumsum ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("axis", [0, 1, -1, 2, -3])
def test_cumsum_axes(axis):
    for kind, x, t in inputs(SHAPE, lt.float32, seed=18):
        check(x.cumsum(axis), torch.cumsum(t, dim=axis))


def test_cumsum_axis_none_flattens():
    for kind, x, t in inputs((3, 4), lt.float32, seed=19):
        check(x.cumsum(), torch.cumsum(t.reshape(-1), dim=0))
        check(lt.cumsum(x), np.cumsum(t.numpy()))


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_cumsum_dtypes(dtype):
    # ints and bools accumulate in int64, like torch, unsigned ints in uint64.
    arr = random_array((4, 6), dtype, seed=20)
    x, t = layout(arr, "contiguous")
    check(x.cumsum(1), unsigned_accumulation(torch.cumsum(t, dim=1), t))
    x, t = layout(arr, "transposed")
    check(x.cumsum(0), unsigned_accumulation(torch.cumsum(t, dim=0), t))


def test_cumsum_dtype_argument():
    x, t = layout(random_array((3, 5), lt.int8, seed=21), "transposed")
    check(x.cumsum(0, dtype=lt.float64), torch.cumsum(t, dim=0, dtype=torch.float64))
    check(x.cumsum(1, dtype=lt.int32), torch.cumsum(t, dim=1, dtype=torch.int32))


def test_cumsum_0d_and_1():
    check(lt.asarray(np.float32(2.5)).cumsum(0), torch.cumsum(torch.tensor(2.5), 0))
    check(lt.asarray(np.float32(2.5)).cumsum(), np.cumsum(np.float32(2.5)))
    check(lt.asarray(np.array([7], dtype=np.int16)).cumsum(0), torch.cumsum(torch.tensor([7], dtype=torch.int16), 0))


@pytest.mark.parametrize("n", [256, 257, 1000])
def test_cumsum_long_axes_scan_path(n):
    # past CUMSUM_BLOCK (256) elements cumsum is a scan, a kernel of its own kind (a long row cut into
    # chunks across threads). Integer-valued floats keep every partial sum exact, so a different summation
    # order cannot change the float32 answer: any difference is an indexing bug.
    ints = np.random.default_rng(22).integers(-100, 100, (3, n))
    x, t = layout(ints.astype(np.float32), "contiguous")
    check(x.cumsum(1), torch.cumsum(t, dim=1))
    x, t = layout(ints.astype(np.float32), "transposed")
    check(x.T.cumsum(0), torch.cumsum(t.T, dim=0))
    x, t = layout(ints, "flipped")
    check(x.cumsum(-1), torch.cumsum(t, dim=-1))
    # random float64 data: the blocked sums differ from torch's sequential ones only by rounding.
    arr = random_array((2, n), lt.float64, seed=23)
    check(lt.asarray(arr).cumsum(-1), torch.cumsum(torch.tensor(arr), dim=-1))


@pytest.mark.parametrize("n", [257, 1000, *sized([70_000], [2500])])
def test_cumsum_past_a_block_adds_the_blocks_before_without_subtracting(n):
    """Each output is a sum of the elements up to it: an inf leaves the outputs before it finite, a -inf
    after it makes NaN only from there, and a huge element does not erase the sum before it (a block's
    offset was the running total less the block's own: inf - inf, and (s + 1e30) - 1e30 = 0).
    70000 elements are a row the CPU's scan cuts into chunks, with offsets of the chunks before (2500, three
    blocks of the GPU's scan, under Triton's interpreter)."""
    arr = np.ones((2, n), np.float32)
    arr[0, n // 2], arr[0, n - 2] = np.inf, -np.inf
    arr[1, n // 3] = 1e30
    for kind in ("contiguous", "flipped"):
        x, t = layout(arr, kind)
        check(x.cumsum(1), torch.cumsum(t, 1), rtol=0, atol=0)
    half = np.arange(n, dtype=np.float32) % 7
    x, t = lt.asarray(half).cast(lt.float16), torch.tensor(half).half()
    check(x.cumsum(0), torch.cumsum(t, 0))  # accumulated in float32, each output rounded once


def test_cumsum_of_a_0d_tensor_takes_axis_0_or_minus_1():
    x, t = lt.asarray(np.float32(2.5)), torch.tensor(2.5)
    for axis in (0, -1):
        check(x.cumsum(axis), torch.cumsum(t, axis))
    for axis in (1, -2, 5):
        with pytest.raises(lt.AxisError, match="0-d"):
            x.cumsum(axis)
        with pytest.raises(IndexError):
            torch.cumsum(t, axis)


@pytest.mark.parametrize("n", [2, 8, 256])
def test_a_short_running_fold_is_a_scan_too(n):
    """A masked reduction over the row folds n/2 terms per element (rows of 256: 44x the scan's time); only a
    product a gradient flows through is written in ops autograd differentiates."""
    arr = random_array((5, n), lt.float32, seed=27, low=0.5, high=1.5)
    x, t = lt.asarray(arr), torch.tensor(arr)
    for ours, theirs in ((x.cumsum(1), t.cumsum(1)), (x.cumprod(1), t.cumprod(1)), (x.cummax(1)[0], t.cummax(1)[0])):
        assert type(lt.schedule(ours)[0].kernel) is ir.Scan
        check(ours, theirs)
    w = lt.asarray(arr).requires_grad_()
    assert all(type(i.kernel) is not ir.Scan for i in lt.schedule(w.cumprod(1)))


@pytest.mark.parametrize("dtype", sized([lt.float32, lt.float64, lt.int32, lt.int64], [lt.float32, lt.int64]), ids=str)
@pytest.mark.parametrize("shape", sized([(19, 300), (8, 2), (7, 300), (3, 300), (19, 1), (19, 0), (0, 5)],
                                            [(19, 9), (3, 5), (19, 0)]))
def test_rows_scanned_side_by_side_match_torch(shape, dtype):
    """The CPU folds whole rows of a scan side by side, 8 at a time, then the rows left in blocks of 4 and 2
    (`kernels/llvm/scan.py`): 19 rows are blocks of 8, 8 and 2 and a row alone, 7 rows 4, 2 and 1. Each row still
    folds in order; a NaN takes over its row's cummax from where it is, and the rows beside it stay as they were."""
    for kind, x, t in inputs(shape, dtype, seed=46, low=0.5, high=1.5):
        check(x.cumsum(1), torch.cumsum(t, 1))
        check(x.cumprod(1), torch.cumprod(t, 1))
        for ours, theirs in (*zip(x.cummax(1), torch.cummax(t, 1)), *zip(x.cummin(1), torch.cummin(t, 1))):
            check(ours, theirs)
    if dtype.is_float and shape[0] > 1 and shape[1] > 2:
        arr = eighths(random_array(shape, dtype, seed=47))  # exact running sums, whatever order torch adds in
        arr[1, 2] = arr[shape[0] - 1, shape[1] - 1] = np.nan
        check(lt.asarray(arr).cummax(1)[0], torch.cummax(torch.tensor(arr), 1)[0])
        check(lt.asarray(arr).cumsum(1), torch.cumsum(torch.tensor(arr), 1))


def test_a_fold_along_an_inner_axis_is_one_scan_where_the_tensor_lies():
    """cumsum, cumprod, cummax and cummin along an axis before the last fold each lane of the axes after it where
    the tensor lies: one Scan kernel over the (rows, n, lanes) array, not the axis moved last by a copy, scanned,
    and moved back by another copy (2 of the 3 passes over the data)."""
    x = lt.asarray(random_array((6, 50, 70), lt.float32, seed=42), device="cpu")
    for ours, rows, n, lanes in ((x.cumsum(1), 6, 50, 70), (x.cumprod(0), 1, 6, 3500), (x.cumsum(-1), 300, 70, 1)):
        (scan,) = [item.kernel for item in lt.schedule(ours)]
        assert type(scan) is ir.Scan and (scan.rows, scan.n, scan.inner) == (rows, n, lanes)
    # the running extremum, then the last position that reached it: two scans, both where the tensor lies
    scans = [item.kernel for item in lt.schedule(x.cummax(1)[1]) if type(item.kernel) is ir.Scan]
    assert [(scan.rows, scan.n, scan.inner) for scan in scans] == [(6, 50, 70)] * 2


def eighths(arr: np.ndarray) -> np.ndarray:
    """`arr`, floats rounded to multiples of 1/8."""
    return np.round(arr * 8) / 8 if arr.dtype.kind == "f" else arr


@pytest.mark.parametrize("dtype", [lt.float32, lt.float64, lt.int32, lt.int64])
@pytest.mark.parametrize("shape, axis", sized([((4, 33, 70), 1), ((300, 129), 0)], [((3, 40, 35), 1), ((70, 33), 0)])
                         + [((2, 3, 5, 7), -3), ((3, 0, 4), 1), ((1, 700, 3), 1), ((5, 1, 9), 1), ((2, 3, 1), 1)])
def test_folds_along_inner_axes_match_numpy_and_torch(shape, axis, dtype):
    # floats in eighths: every running sum is exact in the dtype, whatever order a backend adds in (the CPU folds
    # one element after another, a GPU block by a tree)
    arr = eighths(random_array(shape, dtype, seed=43))
    for kind in ("contiguous", "transposed", "flipped"):
        x, t = layout(arr, kind)
        check(x.cumsum(axis), np.cumsum(arr, axis))
        for ours, theirs in zip(x.cummax(axis), torch.cummax(t, axis)):
            check(ours, theirs)
        for ours, theirs in zip(x.cummin(axis), torch.cummin(t, axis)):
            check(ours, theirs)
    if dtype.is_float:
        check(lt.asarray(arr).cumprod(axis), np.cumprod(arr, axis))
        x = lt.asarray(arr).requires_grad_()
        up = eighths(random_array(shape, dtype, seed=44))
        (x.cumsum(axis) * lt.asarray(up)).sum().backward()
        check(x.grad, np.flip(np.cumsum(np.flip(up, axis), axis), axis))  # the running sum of up from the end


def test_a_fold_along_a_broadcast_axis_matches_numpy():
    """The scan reads its source from a buffer: a broadcast (stride 0) source is realized first, lanes and all."""
    arr = random_array((5, 1, 8), lt.float64, seed=45)
    x = lt.asarray(arr).broadcast_to((5, 6, 8))
    check(x.cumsum(1), np.cumsum(np.broadcast_to(arr, (5, 6, 8)), 1))


def test_long_cumsum_is_one_scan_and_differentiates_as_torch():
    arr = random_array((4, 3000), lt.float64, seed=25)
    x, t = lt.asarray(arr).requires_grad_(), torch.tensor(arr, requires_grad=True)
    items = lt.schedule(x.cumsum(1) * 2)
    assert [type(i.kernel).__name__ for i in items] == ["Scan", "Kernel"]
    up = random_array((4, 3000), lt.float64, seed=26)
    (x.cumsum(1) * lt.asarray(up)).sum().backward()
    (torch.cumsum(t, 1) * torch.tensor(up)).sum().backward()
    check(x.grad, t.grad)


def test_cumsum_long_flattened():
    arr = np.random.default_rng(24).integers(0, 50, (25, 40)).astype(np.int32)
    x, t = layout(arr, "transposed")
    check(x.cumsum(), torch.cumsum(t.reshape(-1), 0))


# ---- 0-d and size-0 ----------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["sum", "prod", "max", "min", "mean", "any", "all", "var", "std", "logsumexp"])
def test_reduce_0d(name):
    # a 0-d tensor has no axes: reducing over all of them (None) is reducing over none (()), which leaves
    # the value (var and std: 0) in the reduction's dtype.
    fn = REDUCERS[name][0]
    for dtype in (lt.float32, lt.int32):
        arr = np.array(3, dtype=dtype.name)
        x, t = lt.asarray(arr), torch.tensor(arr)
        for axis in (None, ()):
            for keepdims in (False, True):
                check(fn(x, axis, keepdims), expected_reduce(name, t, (), False))


def test_reduce_empty_axis_gives_identity():
    arr = np.zeros((3, 0, 2), dtype=np.float32)
    x, t = lt.asarray(arr), torch.tensor(arr)
    check(x.sum(1), t.sum(1))
    check(x.sum(), t.sum())
    check(x.sum((0, 1), keepdims=True), t.sum((0, 1), keepdim=True))
    check(x.prod(1), t.prod(1))
    check(x.mean(1), t.mean(1))  # 0/0: nan, as torch
    check(x.var(1), quiet(t.var, 1, correction=0))
    check(x.any(1), t.any(1))
    check(x.all(1), t.all(1))
    check(x.any(), t.any())
    check(x.all(), t.all())
    check(x.logsumexp(1), torch.logsumexp(t, 1))  # log(0): -inf
    check(x.cumsum(1), t.cumsum(1))
    ints = lt.asarray(np.zeros((0, 4), dtype=np.int8))
    check(ints.sum(0), torch.zeros(4, dtype=torch.int64))
    check(ints.sum(), torch.tensor(0))
    check(ints.prod(0), torch.ones(4, dtype=torch.int64))


def test_reduce_over_nonempty_axis_of_empty_tensor():
    arr = np.zeros((0, 3), dtype=np.float32)
    x, t = lt.asarray(arr), torch.tensor(arr)
    check(x.sum(1), t.sum(1))
    check(x.max(1), t.amax(1))
    check(x.min(1, keepdims=True), t.amin(1, keepdim=True))
    check(x.argmax(1), t.argmax(1))
    check(x.var(1), t.var(1, correction=0))
    check(x.softmax(1), t.softmax(1))
    check(x.log_softmax(-1), t.log_softmax(-1))
    check(x.softmax(0), t.softmax(0))  # the reduced axis is empty, so is the result
    check(x.cumsum(1), t.cumsum(1))


@pytest.mark.parametrize("name", ["max", "min", "amax", "amin", "argmax", "argmin"])
def test_max_over_empty_axis_raises(name):
    x = lt.asarray(np.zeros((3, 0), dtype=np.float32))
    with pytest.raises(lt.ShapeError):
        getattr(x, name)(1)
    with pytest.raises(lt.ShapeError):
        getattr(x, name)()
    with pytest.raises(ValueError):  # ShapeError is a ValueError, as NumPy raises
        getattr(x, name)(axis=-1)


def test_reduce_of_broadcast_view():
    # the reduction reads an expanded view, so its value is the same for every index along the broadcast
    # axis and does not read that output loop (the scheduler once looped forever on such kernels)
    for kind in ("contiguous", "flipped"):
        x, t = layout(random_array((1, 3, 2), lt.float32, seed=31), kind)
        check(x.expand(2, 3, 2).sum(1), t.expand(2, 3, 2).sum(1))
        check(x.broadcast_to(4, 3, 2).max(-2), t.expand(4, 3, 2).amax(-2))
        check(x.expand(2, 3, 2).mean(1, keepdims=True), t.expand(2, 3, 2).mean(1, keepdim=True))
        check(x.expand(3, 3, 2).softmax(1), t.expand(3, 3, 2).softmax(1))


# ---- bad axes -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("axis", [3, -4, (0, 3), (0, 0), (1, -2), 100])
@pytest.mark.parametrize("name", ["sum", "prod", "max", "mean", "var", "any", "logsumexp"])
def test_bad_axes_raise_axis_error(name, axis):
    x = lt.asarray(random_array(SHAPE, lt.float32))
    with pytest.raises(lt.AxisError):
        getattr(x, name)(axis)


@pytest.mark.parametrize("name", ["argmax", "argmin", "softmax", "log_softmax", "cumsum"])
def test_bad_single_axis_raises_axis_error(name):
    x = lt.asarray(random_array(SHAPE, lt.float32))
    for axis in (3, -4):
        with pytest.raises(lt.AxisError) as info:
            getattr(x, name)(axis)
        assert isinstance(info.value, IndexError) and isinstance(info.value, ValueError)


def test_axis_error_is_index_and_value_error():
    x = lt.asarray(random_array((2, 3), lt.float32))
    with pytest.raises(IndexError):
        x.sum(2)
    with pytest.raises(ValueError):
        x.mean(-3)
    with pytest.raises(lt.AxisError):
        x.sum(dim=5)


# ---- larger sizes ---------------------------------------------------------------------------------------


def test_large_float32_sum():
    # torch and lazytensor add 100k float32 values in different orders, so their float32 results differ by
    # more than rounding of the final answer; the float64 sum (computed by NumPy) is the reference instead.
    arr = random_array((100_000,), lt.float32, seed=25)
    check(lt.asarray(arr).sum(), np.float32(arr.astype(np.float64).sum()))
    pos = random_array((100_000,), lt.float32, seed=26, low=0, high=1)
    check(lt.asarray(pos).sum(), np.float32(pos.astype(np.float64).sum()))
    check(lt.asarray(pos).mean(), np.float32(pos.astype(np.float64).mean()))


def test_large_exact_reductions():
    arr = np.random.default_rng(27).integers(-1000, 1000, 100_000).astype(np.int32)
    x, t = lt.asarray(arr), torch.tensor(arr)
    check(x.sum(), t.sum())
    check(x.max(), t.amax())
    check(x.min(), t.amin())
    check(x.argmax(), t.argmax())  # ties among the +-999s: the first one wins
    check(x.argmin(), t.argmin())
    f = random_array((100_000,), lt.float32, seed=28)
    xf, tf = lt.asarray(f), torch.tensor(f)
    check(xf.max(), tf.amax())
    check(xf.argmin(), tf.argmin())


def test_large_2d_reductions():
    arr = random_array((1000, 100), lt.float64, seed=29)
    for kind in ("contiguous", "transposed"):
        x, t = layout(arr, kind)
        check(x.sum(0), t.sum(0))
        check(x.mean(1), t.mean(1))
        check(x.var(0, correction=1), t.var(0, correction=1))
        check(x.softmax(0), t.softmax(0))
        check(x.logsumexp(1), t.logsumexp(1))
        check(x.argmax(0), t.argmax(0))



def column_data(name: str, dtype: lt.DType, shape: tuple[int, ...]) -> np.ndarray:
    """Data whose reductions every summation order gets exactly: float sums of multiples of 1/8, integer
    products of small factors (their wrap-around in int64 is the same in any order)."""
    rng = np.random.default_rng(5)
    if name == "prod" and dtype.is_float:
        return random_array(shape, dtype, seed=5, **REDUCERS["prod"][2])
    if name == "prod" and dtype != lt.bool_:
        return rng.choice([-2, -1, 1, 2, 3] if dtype.is_signed else [1, 2, 3], shape).astype(dtype.name)
    if dtype.is_float:
        return (rng.integers(-24, 24, shape) / 8).astype(dtype.name)
    return random_array(shape, dtype, seed=5)


# Column reductions: the reduced axes lie outside an innermost axis that is kept and contiguous, so the CPU
# kernel streams rows into a block of accumulators. 1100 columns make several blocks and a partial one.
@pytest.mark.parametrize("dtype", [lt.float32, lt.float64, lt.int32, lt.int64, lt.uint8, lt.bool_], ids=str)
@pytest.mark.parametrize("name", ["sum", "prod", "max", "min"])
@pytest.mark.parametrize("shape,axis", [((37, 1100), 0), ((5, 9, 300), 1), ((6, 7, 70), (0, 1)), ((300, 2, 5), 0)],
                         ids=str)
def test_column_reductions(name, dtype, shape, axis):
    fn = REDUCERS[name][0]
    arr = column_data(name, dtype, shape)
    for kind in LAYOUTS:
        x, t = layout(arr, kind)
        check(fn(x, axis, False), expected_reduce(name, t, axis, False))


@pytest.mark.parametrize("dtype", [lt.float32, lt.float64, lt.int32, lt.int64], ids=str)
@pytest.mark.parametrize("v_shape", [(300,), (1, 300), (3, 300)], ids=str)
def test_vector_matrix_products_stream_the_matrix(monkeypatch, dtype, v_shape):
    """`v @ w` with a few rows in v (too few for the contraction template) folds w's rows into a block of
    accumulators (`render.column_reductions`): v's element is the same for the whole row. Walking w's columns
    instead took 72 ms for a vector times a 4096 x 4096 float32 matrix, 2.3 ms so."""
    from lazytensor.kernels.llvm.render import column_reductions
    for name in ("_cache", "_templates", "_shapes_seen"):  # no history: a batch that grew would take the template
        monkeypatch.setattr(importlib.import_module("lazytensor.schedule"), name, {})
    v, tv = layout(column_data("sum", dtype, v_shape), "contiguous")
    cpu = lt.asarray(column_data("sum", dtype, v_shape), device="cpu")
    (item,) = lt.schedule(cpu @ lt.asarray(column_data("sum", dtype, (300, 1100)), device="cpu"))
    assert column_reductions(item.kernel) is not None
    for kind in LAYOUTS:
        w, tw = layout(column_data("sum", dtype, (300, 1100)), kind)
        check(v @ w, tv @ tw)


# Row reductions: the reduced axis is innermost and contiguous, rows of at least ROW_BLOCK_MIN_TERMS terms: the CPU
# kernel folds ROW_BLOCK rows side by side. 13 rows make 3 blocks and one row after them, 3 rows no block.
@pytest.mark.parametrize("dtype", [lt.float32, lt.float64, lt.int32, lt.int64, lt.uint8, lt.bool_], ids=str)
@pytest.mark.parametrize("name", ["sum", "prod", "max", "min", "any", "mean", "var", "argmax"])
@pytest.mark.parametrize("shape", [(13, 300), (3, 300), (2, 6, 256)], ids=str)
def test_row_reductions(name, dtype, shape):
    arr = column_data(name, dtype, shape)
    for kind in LAYOUTS:
        x, t = layout(arr, kind)
        if name == "argmax":
            check(x.argmax(-1), (t.to(torch.uint8) if dtype == lt.bool_ else t).argmax(-1))  # torch's has no bool
        elif name not in ("mean", "var") or dtype.is_float:
            check(REDUCERS[name][0](x, -1, False), expected_reduce(name, t, -1, False))


@pytest.mark.parametrize("threads", ["1", "3"])
@pytest.mark.parametrize("dtype", [lt.float32, lt.float64, lt.int32], ids=str)
def test_matrix_vector_products_fold_rows_side_by_side(monkeypatch, threads, dtype):
    """`w @ v`, a row reduction over a matrix: ROW_BLOCK rows folded in one loop (`render.emit_row_blocks`), which
    streams that many rows from memory at once (a 64 MiB float32 matrix: 3.1 -> 1.9 ms on one Zen 3 core), then
    the rows after the last block one at a time; a thread's share of rows starts anywhere. The rendered kernel
    holds the block loop where rows are long enough (`ROW_BLOCK_MIN_TERMS`), and not where they are short
    (a softmax's rows of 10, `x.sum(-1)` of a 1000 x 10 matrix)."""
    from lazytensor.kernels.llvm import runtime
    monkeypatch.setenv("LT_NUM_THREADS", threads)
    for rows, cols in ((203, 1000), (1000, 10)):
        w, v = column_data("sum", dtype, (rows, cols)), column_data("sum", dtype, (cols,))
        got = lt.asarray(w, device="cpu") @ lt.asarray(v, device="cpu")
        (item,) = lt.schedule(got)
        program, _ = runtime.compile_kernel(item.kernel)
        assert ("o0_rows_head" in program.llvm_ir) == (cols >= 256)
        check(got, torch.from_numpy(w) @ torch.from_numpy(v))


@pytest.mark.parametrize("dtype", [lt.float32, lt.float64, lt.int32, lt.uint8], ids=str)
@pytest.mark.parametrize("name", ["sum", "prod", "max", "min", "mean"])
def test_column_reductions_fold_rows_four_at_a_time(name, dtype):
    """A column reduction over at least ROW_BLOCK_MIN_TERMS rows folds ROW_BLOCK rows at a time into its block of
    accumulators, in order (as many streams from memory: `v @ w` of a 4096 x 4096 float32 matrix, 3.6 -> 2.2 ms on
    one core), then the rows after the last four one at a time: 259 rows leave 3. The rendered kernel holds the
    loop over blocks of rows; values against torch in every layout."""
    from lazytensor.kernels.llvm import runtime
    if name == "mean" and not dtype.is_float:
        return
    arr = column_data(name, dtype, (259, 70))
    (item,) = lt.schedule(REDUCERS[name][0](lt.asarray(arr, device="cpu"), 0, False))
    assert "r0_rows_head" in runtime.compile_kernel(item.kernel)[0].llvm_ir
    for kind in LAYOUTS:
        x, t = layout(arr, kind)
        check(REDUCERS[name][0](x, 0, False), expected_reduce(name, t, 0, False))


@pytest.mark.parametrize("shape", [(5, 4), (1, 5, 4), (9, 3), (17, 5), (100, 3)], ids=str)
def test_column_all_and_any_of_transcendental_comparisons(shape):
    """Found by the fuzzer (forward seed 921912): `x.exp().all(0)` over 5 rows of 4 columns was false where
    every value is true. LLVM 22's loop and SLP vectorizers together miscompiled the column accumulators'
    logic on i1; it runs on their bytes."""
    for kind, x, t in inputs(shape, lt.float32, seed=38):
        for axis in range(len(shape)):
            for c in (-10.0, 0.5):
                check((x.exp() > c).all(axis), (t.exp() > c).all(axis))
                check((x.exp2() > c).any(axis), (t.exp2() > c).any(axis))
            check(x.exp().all(axis), t.exp().bool().all(axis))


def test_column_mean_and_bias_gradient():
    arr = column_data("sum", lt.float32, (256, 130))
    x, t = layout(arr, "contiguous")
    check(x.mean(0), t.mean(0))
    check((x * 2 + 1).sum(0) / 4, (t * 2 + 1).sum(0) / 4)
    bias, tb = layout(column_data("sum", lt.float32, (130,)), "contiguous")
    check(((x + bias) * x).max(0) + bias, ((t + tb) * t).amax(0) + tb)  # the reduction reads a per-column value
    bias.requires_grad = True
    tb.requires_grad_(True)
    ((x + bias).relu() * x).sum().backward()
    ((t + tb).relu() * t).sum().backward()
    check(bias.grad, tb.grad)


# Column reductions that read other reductions: each of the innermost scope's reductions streams the rows in
# turn, what it reads of an earlier one (a mean, a max) staged once per column. 1100 columns make several
# blocks and a partial one; a (1, n) input, size-1 axes and broadcast operands exercise the loops' shapes.
@pytest.mark.parametrize("dtype", [lt.float32, lt.float64, lt.int32], ids=str)
@pytest.mark.parametrize("shape", [(37, 1100), (5, 9, 300), (300, 2, 5), (1, 7), (6, 1, 3)], ids=str)
def test_nested_column_reductions(dtype, shape):
    for kind, x, t in inputs(shape, dtype, seed=40):
        tf = _as_float(t)
        check(x.var(0), tf.var(0, unbiased=False))
        check(x.std(0, correction=1), quiet(tf.std, 0, unbiased=True))
        check(x.argmax(0), t.argmax(0))
        check(x.argmin(0, keepdims=True), t.argmin(0, keepdim=True))
        if dtype.is_float:
            check(x.softmax(0), t.softmax(0))
            check(x.logsumexp(0), t.logsumexp(0))
            check((x - x.mean(0)) / x.std(0), (t - t.mean(0)) / t.std(0, unbiased=False))
            check(x.var((0, 1)), t.var((0, 1), unbiased=False))


def test_column_arg_reductions_of_ties_nans_and_signed_zeros():
    """The first index of the extremum in every column; a NaN is the extremum, its first one wins."""
    arr = np.zeros((40, 1030), np.float32)
    arr[[3, 9, 30], 5] = 2.0
    arr[[7, 20], 6] = np.nan
    arr[12, 7], arr[4, 8] = -0.0, -1.0
    arr[:, 9] = -np.inf
    arr[39, 1029] = np.inf
    for kind in LAYOUTS:
        x, t = layout(arr, kind)
        for axis in (0, -2):
            check(x.argmax(axis), t.argmax(axis))
            check(x.argmin(axis), t.argmin(axis))
            check(x.max(axis), t.amax(axis))
            check(x.softmax(axis), t.softmax(axis))


def ieee_extremum(arr: np.ndarray, maximum: bool) -> np.ndarray:
    """IEEE 754's maximum or minimum down the columns (LLVM's `llvm.maximum`, the IR's MAX): NaN wherever a
    column holds one, and a zero extremum +0.0 for the maximum (-0.0 for the minimum) where the column holds it."""
    with np.errstate(invalid="ignore"):
        out = (arr.max(0) if maximum else arr.min(0)).astype(arr.dtype)
    tie = np.where(maximum, ~np.signbit(arr), np.signbit(arr)) & (arr == 0)
    out[(out == 0) & tie.any(0)] = 0.0 if maximum else -0.0
    out[(out == 0) & ~tie.any(0)] = -0.0 if maximum else 0.0
    out[np.isnan(arr).any(0)] = np.nan
    return out


@pytest.mark.parametrize("dtype", [lt.float32, lt.float64], ids=str)
def test_column_max_min_in_blocks_of_columns_keep_nan_and_the_order_of_zeros(dtype):
    """Down columns, in blocks of columns whose rows fold several at a time: a NaN refolds its block exactly, a
    zero extremum has the sign of the zero that wins a tie (as `llvm.maximum`), infinities; every block, the
    rows left over, the columns left over and strided inputs, against IEEE's maximum and minimum."""
    rng = np.random.default_rng(45)
    arr = rng.standard_normal((263, 2 * 2048 + 37)).astype(dtype.name)
    arr[:, 1], arr[:, 2], arr[:, 3] = -0.0, 0.0, -0.0
    arr[100, 2], arr[262, 3], arr[0, 4097] = -0.0, 0.0, -np.inf
    arr[:, 5] = np.abs(arr[:, 5]) * -0.0
    arr[261, 2100], arr[17, 4100], arr[9, 4120] = np.nan, np.inf, np.nan
    arr[:, 4121] = -np.inf
    for part in (arr, arr[:, 2040:2050]):
        for kind in LAYOUTS:
            x, _ = layout(part, kind, oracle="numpy")
            for maximum in (True, False):
                got, want = (x.max(0) if maximum else x.min(0)).numpy(), ieee_extremum(part, maximum)
                np.testing.assert_array_equal(got, want)
                np.testing.assert_array_equal(np.signbit(got), np.signbit(want))


def test_column_statistics_of_float32_accumulate_in_float64():
    """A large common offset: a float32 two-pass variance would lose the small spread to rounding."""
    arr = (1e4 + random_array((3000, 70), lt.float32, seed=41, low=0, high=1e-2)).astype(np.float32)
    x, t = layout(arr, "contiguous")
    check(x.var(0), t.double().var(0, unbiased=False).float())
    check(x.std(0), t.double().std(0, unbiased=False).float())


def test_column_reductions_of_size_0_and_0_d():
    for shape in [(0, 5), (4, 0), (0, 0)]:
        x, t = layout(random_array(shape, lt.float32, seed=42), "contiguous")
        check(x.sum(0), t.sum(0))
        check(quiet(x.var, 0), quiet(t.var, 0, unbiased=False))
        if shape[0]:
            check(x.softmax(0), t.softmax(0))
            check(x.argmax(0), t.argmax(0))
    x, t = layout(np.array(2.5, np.float32), "contiguous")
    check(x.var(), t.var(unbiased=False))
    check(x.argmax(), t.argmax())


# ---- cumprod, the array API's cumulative_sum / cumulative_prod -----------------------------------------


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_cumprod(dtype, axis):
    # bools and ints accumulate in int64, like torch, unsigned ints in uint64; small factors keep the products
    # from wrapping
    for kind, x, t in inputs((3, 6), dtype, seed=30, low=-2, high=2):
        check(x.cumprod(axis), unsigned_accumulation(torch.cumprod(t, dim=axis), t))
        check(lt.cumprod(x, axis), unsigned_accumulation(torch.cumprod(t, dim=axis), t))


def test_cumprod_axis_none_0d_size_0_and_dtype():
    arr = random_array((3, 4), lt.float64, seed=31, low=-1.5, high=1.5)
    check(lt.asarray(arr).cumprod(), np.cumprod(arr))
    check(lt.asarray(np.float32(2.5)).cumprod(0), torch.cumprod(torch.tensor(2.5), 0))
    check(lt.zeros(2, 0).cumprod(1), torch.cumprod(torch.zeros(2, 0), 1))
    x, t = layout(random_array((3, 5), lt.int8, seed=32, low=-3, high=3), "transposed")
    check(x.cumprod(0, dtype=lt.float64), torch.cumprod(t, dim=0, dtype=torch.float64))


@pytest.mark.parametrize("n", [257, 1000])
def test_cumprod_long_axes(n):
    # factors of +-1 and +-2 with at most a few dozen 2s in a row: every product is exact in float64, so a
    # different order of multiplication cannot change the answer; any difference is an indexing bug. A scan,
    # or in blocks where a gradient may flow through it.
    rng = np.random.default_rng(33)
    arr = rng.choice([1.0, -1.0, 1.0, -1.0, 2.0, 0.5], (2, n))
    for kind in ("contiguous", "flipped"):
        x, t = layout(arr, kind)
        check(x.cumprod(1), torch.cumprod(t, 1), rtol=0, atol=0)
        check(x.requires_grad_().cumprod(1), torch.cumprod(t, 1), rtol=0, atol=0)
    ints = rng.choice([1, -1], (2, n))
    check(lt.asarray(ints).cumprod(-1), torch.cumprod(torch.tensor(ints), -1))
    kinds = [type(item.kernel) for item in lt.schedule(lt.asarray(arr).cumprod(1))]
    assert kinds == [ir.Scan]


@pytest.mark.parametrize("shape, low, high", [((3, 5), 0.5, 2), ((2, 600), 0.9, 1.1)])  # a short row, a long one
def test_cumprod_gradient(shape, low, high):
    arr = random_array(shape, lt.float64, seed=34, low=low, high=high)
    x, t = lt.asarray(arr).requires_grad_(), torch.tensor(arr, requires_grad=True)
    up = random_array(shape, lt.float64, seed=35)
    x.cumprod(1).backward(lt.asarray(up))
    t.cumprod(1).backward(torch.tensor(up))
    check(x.grad, t.grad)


@pytest.mark.parametrize("name", ["cumulative_sum", "cumulative_prod"])
@pytest.mark.parametrize("dtype", [lt.float32, lt.float64, lt.int32, lt.uint8, lt.bool_], ids=str)
def test_cumulative_sum_and_prod(name, dtype):
    running = {"cumulative_sum": np.cumsum, "cumulative_prod": np.cumprod}[name]
    identity = {"cumulative_sum": 0, "cumulative_prod": 1}[name]
    for kind, x, t in inputs((3, 4), dtype, seed=36, low=-2, high=2):
        arr = t.numpy()
        expected = running(arr, axis=1)  # NumPy's dtypes: int64 for bools and ints, uint64 for unsigned ints
        check(getattr(lt, name)(x, axis=1), expected)
        check(getattr(x, name)(axis=-2), running(arr, axis=0))
        initial = np.concatenate([np.full((3, 1), identity, expected.dtype), expected], axis=1)
        check(getattr(lt, name)(x, axis=1, include_initial=True), initial)
    vector = random_array((5,), lt.float64, seed=37)
    check(getattr(lt, name)(lt.asarray(vector)), running(vector))  # axis None: a 1-d tensor's only axis
    check(getattr(lt, name)(lt.zeros(0), include_initial=True), np.array([identity], np.float32))
    check(getattr(lt, name)(lt.asarray(vector), dtype=lt.float32), running(vector.astype(np.float32)))


def test_cumulative_sum_needs_an_axis_past_1d_and_a_dimension():
    with pytest.raises(lt.AxisError, match="axis is required"):
        lt.cumulative_sum(lt.zeros(2, 3))
    with pytest.raises(lt.ShapeError, match="0-d"):
        lt.cumulative_prod(lt.asarray(1.0))


# ---- count_nonzero and diff ------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
@pytest.mark.parametrize("axis,keepdims", [(None, False), (0, True), ((0, 2), False), (-1, False)])
def test_count_nonzero(dtype, axis, keepdims):
    arr = random_array(SHAPE, dtype, seed=38)
    arr = np.where(np.random.default_rng(38).random(SHAPE) < 0.5, 0, arr).astype(arr.dtype)  # half of them zero
    for kind in LAYOUTS:
        x, t = layout(arr, kind)
        expected = np.asarray(np.count_nonzero(t.numpy(), axis, keepdims=keepdims), np.int64)
        check(x.count_nonzero(axis, keepdims), expected)
        check(lt.count_nonzero(x, axis, keepdims), expected)


def test_count_nonzero_counts_nan_and_negative_zero_as_they_are():
    x = lt.asarray([0.0, -0.0, np.nan, np.inf, 1e-45])
    check(x.count_nonzero(), torch.count_nonzero(torch.tensor([0.0, -0.0, np.nan, np.inf, 1e-45])))
    check(lt.zeros(3, 0).count_nonzero(1), np.zeros(3, np.int64))
    check(lt.asarray(np.float32(2.0)).count_nonzero(), np.int64(1))


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
@pytest.mark.parametrize("axis,n", [(-1, 1), (0, 1), (1, 2), (-1, 5), (0, 0)])
def test_diff(dtype, axis, n):
    for kind, x, t in inputs((4, 5), dtype, seed=39):
        check(lt.diff(x, axis=axis, n=n), torch.diff(t, n=n, dim=axis))
        check(x.diff(n, axis), np.diff(t.numpy(), n, axis))
        check(x.diff(n, dim=axis), torch.diff(t, n, axis))


def test_diff_prepend_append_and_sizes():
    arr = random_array((3, 4), lt.int32, seed=40)
    before, after = random_array((3, 1), lt.int32, seed=41), random_array((3, 2), lt.int32, seed=42)
    got = lt.diff(lt.asarray(arr), prepend=lt.asarray(before), append=lt.asarray(after))
    check(got, np.diff(arr, prepend=before, append=after))
    check(lt.diff(lt.zeros(0)), np.diff(np.zeros(0, np.float32)))
    check(lt.diff(lt.ones(1)), np.diff(np.ones(1, np.float32)))
    check(lt.diff(lt.asarray([1, 5]).cast(lt.uint8)), np.diff(np.array([1, 5], np.uint8)))  # wraps as NumPy
    with pytest.raises(lt.ShapeError, match="0-d"):
        lt.diff(lt.asarray(1.0))
    with pytest.raises(ValueError, match="non-negative"):
        lt.diff(lt.ones(3), n=-1)


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_max_and_min_with_dim_give_values_and_indices_as_pytorch(dtype):
    for _, x, t in inputs((4, 5, 3), dtype, seed=11):
        for d in (0, -1):
            for keep in (False, True):
                for ours, theirs in ((x.max(dim=d, keepdim=keep), t.max(dim=d, keepdim=keep)),
                                     (x.min(dim=d, keepdim=keep), t.min(dim=d, keepdim=keep))):
                    check(ours.values, theirs.values)
                    check(ours.indices, theirs.indices)
    with pytest.raises(TypeError, match="one axis"):
        lt.zeros((2, 3)).max(dim=(0, 1))


def test_max_with_an_axis_and_keepdim_is_pytorchs_too():
    """`output.max(1, keepdim=True)[1]` (PyTorch's MNIST example): keepdim= is PyTorch's spelling, so the result is
    PyTorch's (values, indices); NumPy's spellings (an axis alone, keepdims=) give the values."""
    for _, x, t in inputs((4, 5), lt.float32, seed=13):
        for keep in (False, True):
            check(x.max(1, keepdim=keep)[1], t.max(1, keepdim=keep)[1])
            check(x.min(0, keepdim=keep).values, t.min(0, keepdim=keep).values)
        check(x.max(1), t.amax(1))
        check(x.max(1, keepdims=True), t.amax(1, keepdim=True))


def test_var_and_std_take_pytorchs_unbiased():
    for _, x, t in inputs((4, 6), lt.float64, seed=12):
        check(x.var(unbiased=True), t.var(unbiased=True))
        check(x.std(dim=1, unbiased=False, keepdim=True), t.std(dim=1, unbiased=False, keepdim=True))
    with pytest.raises(ValueError, match="not both"):
        lt.ones(3).var(correction=0, unbiased=True)
