"""uint16, uint32 and uint64 as storage and in computation, every op family, against NumPy 2.

The oracle is NumPy 2 unless a test says otherwise: torch 2.13 stores these dtypes and converts them (`.to`),
sums them, and compares them for equality, but has no +, -, <, //, %, max, flip, ... for them and promotes
them with nothing. Where torch has the op (casts, sums, iinfo) it is asked too. lazytensor's semantics are
NumPy's for unsigned integers (wrapping arithmetic, 0 for a zero divisor), but for the documented differences
the tests spell out: an int tensor divided by an int tensor is float32, a float cast to an integer saturates (the IR's rule; NumPy's is undefined
out of range), and a signed integer with uint64 does not promote.

Data covers each dtype's whole range (the top bit set, the maximum), in the four layouts of `conftest.layout`,
with broadcasting, 0-d and size-0 shapes. Runs on the default device; under `LT_DEVICE=cuda TRITON_INTERPRET=1`
on the Triton backend.
"""
from __future__ import annotations

import math
import operator
import pickle

import numpy as np
import pytest
import torch

import lazytensor as lt
from conftest import ALL_DTYPES, LAYOUTS, WIDE_UNSIGNED_DTYPES, check, layout, random_array, to_torch_dtype
from lazytensor import dtypes

pytestmark = pytest.mark.parametrize("dtype", WIDE_UNSIGNED_DTYPES, ids=str)

SHAPES = [(5, 7), (3, 1, 4), (), (0, 3)]  # a matrix, one that broadcasts, 0-d, size 0


def full_range(shape: tuple[int, ...], dtype: lt.DType, seed: int = 0, nonzero: bool = False) -> np.ndarray:
    """Values of `dtype` over its whole range: the edges first (0, 1, the top bit alone and beside it, the
    maximum), then random ones, half of them small, so that sums, products and quotients are not all wrapped
    or 0. `nonzero`: 1 instead of 0 (divisors)."""
    info, top = np.iinfo(dtype.name), 1 << (dtype.bits - 1)
    rng = np.random.default_rng(seed)
    edges = np.array([0, 1, 2, 3, 7, top - 1, top, top + 1, info.max - 1, info.max], dtype.name)
    size = math.prod(shape)
    big = rng.integers(0, info.max, size, dtype.name, endpoint=True)
    small = rng.integers(0, 100, size).astype(dtype.name)
    flat = np.where(rng.random(size) < 0.5, small, big)
    flat[:min(size, edges.size)] = edges[:size]
    if nonzero:
        flat[flat == 0] = 1
    return flat.reshape(shape)


def views(arr: np.ndarray) -> list[lt.Tensor]:
    """`arr` as a lazytensor view of each of the LAYOUTS."""
    return [layout(arr, kind, oracle="numpy")[0] for kind in LAYOUTS]


# ---- the dtypes, NumPy and Python ----------------------------------------------------------------

def test_the_dtype_everywhere_its_named(dtype):
    np_type = getattr(np, dtype.name)
    for spelling in (dtype.name, np_type, np.dtype(np_type), np.dtype(np_type).str, dtype):
        assert dtypes.to_dtype(spelling) is dtype
    assert getattr(lt, dtype.name) is dtype and dtype == np_type and np.dtype(dtype) == np.dtype(np_type)
    assert lt.isdtype(dtype, "unsigned integer") and lt.isdtype(dtype, "integral") and lt.isdtype(dtype, "numeric")
    assert not lt.isdtype(dtype, "signed integer")
    assert lt.__array_namespace_info__().dtypes(kind="unsigned integer")[dtype.name] is dtype
    info, tinfo = lt.iinfo(dtype), torch.iinfo(to_torch_dtype(dtype))  # torch as the oracle
    assert (info.bits, info.min, info.max) == (tinfo.bits, tinfo.min, tinfo.max) == (dtype.bits, 0, 2**dtype.bits - 1)
    assert pickle.loads(pickle.dumps(dtype)) is dtype


def test_numpy_round_trip_and_python_values(dtype):
    arr = full_range((4, 5), dtype)
    x = lt.asarray(arr)
    assert x.dtype is dtype and x.numpy().dtype == arr.dtype
    np.testing.assert_array_equal(x.numpy(), arr)
    np.testing.assert_array_equal(np.asarray(x), arr)
    assert x.tolist() == arr.tolist()  # Python ints, exact above 2**63 too
    top = x[1, 4]  # the maximum
    assert top.item() == int(top) == 2**dtype.bits - 1 and type(top.item()) is int
    assert f"{top}" == str(2**dtype.bits - 1)
    assert str(2**dtype.bits - 1) in repr(x) and f"dtype={dtype.name}" in repr(x)
    np.testing.assert_array_equal(lt.asarray(arr[:, ::-2]).numpy(), arr[:, ::-2])  # a non-contiguous NumPy array
    shared = arr.copy()
    y = lt.from_numpy(shared)
    shared[0, 0] = 5
    assert y[0, 0].item() == 5
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(x)).numpy(), arr)
    np.testing.assert_array_equal(np.from_dlpack(lt.asarray(arr, device="cpu")), arr)
    assert lt.asarray(arr.tolist(), dtype=dtype).tolist() == arr.tolist()


def test_python_ints_outside_the_range_raise(dtype):
    """As NumPy 2 refuses them (torch too): a wrapped value would be a wrong one."""
    x = lt.zeros(3, dtype=dtype)
    for bad in (-1, 2**dtype.bits):
        for make in (lambda v: x + v, lambda v: lt.asarray([v], dtype=dtype), lambda v: lt.asarray([v, 2**63 + 1],
                     dtype=dtype), lambda v: lt.full((2,), v, dtype=dtype)):
            with pytest.raises(lt.DTypeError, match=f"out of bounds for {dtype.name}"):
                make(bad)


def test_creation(dtype):
    top = 2**dtype.bits - 1
    check(lt.zeros(2, 3, dtype=dtype), np.zeros((2, 3), dtype.name))
    check(lt.ones(4, dtype=dtype), np.ones(4, dtype.name))
    check(lt.full((3,), top, dtype=dtype), np.full(3, top, dtype.name))
    check(lt.full_like(lt.zeros(2, dtype=dtype), 7), np.full(2, 7, dtype.name))
    check(lt.zeros_like(lt.zeros(2, dtype=lt.float32), dtype=dtype), np.zeros(2, dtype.name))
    check(lt.eye(3, 4, k=1, dtype=dtype), np.eye(3, 4, k=1, dtype=dtype.name))
    check(lt.arange(0, 300, 7, dtype=dtype), np.arange(0, 300, 7, dtype=dtype.name))
    check(lt.arange(top, top - 20, -3, dtype=dtype), np.arange(top, top - 20, -3, dtype=dtype.name))  # from the top
    check(lt.linspace(0, 60, 7, dtype=dtype), np.linspace(0, 60, 7).astype(dtype.name))
    check(lt.arange(0, dtype=dtype), np.arange(0, dtype=dtype.name))


def test_randint(dtype):
    """Draws are the int64 ones, converted, moved up by `low` in the dtype (the oracle: lazytensor's own int64
    draws)."""
    lt.manual_seed(3)
    k = lt.randint(5, 1000, (20000,), dtype=dtype)
    lt.manual_seed(3)
    wide = lt.randint(5, 1000, (20000,))
    assert k.dtype is dtype
    check(k, wide.numpy().astype(dtype.name))
    assert k.numpy().min() == 5 and k.numpy().max() == 999
    top = 2**dtype.bits  # the top of the range, beyond int64's for uint64
    lt.manual_seed(4)
    high = lt.randint(top - 1000, top, (20000,), dtype=dtype)
    lt.manual_seed(4)
    check(high, lt.randint(0, 1000, (20000,)).numpy().astype(dtype.name) + dtype.dtype.type(top - 1000))


# ---- casts ------------------------------------------------------------------------------------------

def test_casts_to_and_from_every_dtype(dtype):
    """Between integers they wrap, from bools 0 or 1, to floats they round to nearest (torch's conversions,
    which it has for these dtypes, and NumPy's); float values in range truncate (torch's), every layout."""
    arr = full_range((6, 5), dtype)
    everything = [*ALL_DTYPES, *WIDE_UNSIGNED_DTYPES, lt.float16, lt.bfloat16]
    sources = {d: random_array((6, 5), d, 1, low=0, high=1000) for d in ALL_DTYPES} | \
        {d: full_range((6, 5), d, 1) for d in WIDE_UNSIGNED_DTYPES}  # negative floats: the next test
    for kind, x in zip(LAYOUTS, views(arr)):
        for other in everything:
            check(x.cast(other), torch.tensor(arr).to(to_torch_dtype(other)), rtol=0, atol=0)
            if other in (lt.float32, lt.float64):
                check(x.cast(other), arr.astype(other.name), rtol=0, atol=0)
        for other, data in sources.items():
            src = layout(data, kind, oracle="numpy")[0]
            check(src.cast(dtype), torch.tensor(data).to(to_torch_dtype(dtype)))
            check(src.cast(dtype), data.astype(dtype.name))


def test_large_values_round_to_nearest_even(dtype):
    """To float32 and float64: ties between two floats go to the even one, anything above a tie up; the
    oracle is Python's exact integers (and NumPy's conversion)."""
    bits = dtype.bits
    cases = {  # value: its float32, its float64
        2**bits - 1: (float(2**bits) if bits > 24 else float(2**bits - 1), float(2**bits - 1) if bits <= 53
                      else float(2**bits)),
    }
    if bits == 64:
        cases.update({
            2**63 + 2**39: (2.0**63, float(2**63 + 2**39)),  # a tie in float32, to the even 2**63; exact in float64
            2**63 + 2**39 + 1: (2.0**63 + 2**40, float(2**63 + 2**39)),  # just above the tie: up
            2**63 + 3 * 2**39: (2.0**63 + 2**41, float(2**63 + 3 * 2**39)),  # a tie, to the even 2**63 + 2**41
            2**53 + 1: (2.0**53, 2.0**53), 2**64 - 2**10: (2.0**64, 2.0**64),  # float64's ties
            2**64 - 2**11: (2.0**64, 2.0**64 - 2**11),
        })
    if bits == 32:
        cases.update({2**31 + 2**7: (2.0**31, float(2**31 + 2**7)), 2**31 + 3 * 2**7: (2.0**31 + 2**9,
                                                                                      float(2**31 + 3 * 2**7))})
    values = np.array(list(cases), dtype.name)
    x = lt.asarray(values)
    for k, f in enumerate((lt.float32, lt.float64)):
        expected = np.array([c[k] for c in cases.values()], f.name)
        check(x.cast(f), expected, rtol=0, atol=0)
        check(x.cast(f), values.astype(f.name), rtol=0, atol=0)


def test_floats_outside_the_range_saturate(dtype):
    """The IR's rule (NumPy's and torch's conversions are undefined there): truncate, saturate to the int64
    range, or to [-2**63, 2**64 - 1] for uint64, NaN to 0, then wrap. So -1.0 is the maximum (as for uint8),
    and uint64 takes 1e19 exactly. The oracle: Python's integers."""
    values = [math.nan, math.inf, -math.inf, -1.0, -1.7, 1e19, 2e19, -1e19, 2.0**63, 2.0**64, 3e9, -3e9, 70000.0,
              65535.9, 1e30]
    top = 2**63 - 1 if dtype is not lt.uint64 else 2**64 - 1

    def rule(v: float) -> int:
        saturated = 0 if math.isnan(v) else -2**63 if v <= -2.0**63 else top if v >= top else int(v)
        return saturated % 2**dtype.bits

    for f in (lt.float32, lt.float64):
        data = np.array(values, f.name)
        expected = np.array([rule(float(v)) for v in data], dtype.name)
        for x in views(data[None, :].repeat(2, 0)):
            check(x.cast(dtype), np.broadcast_to(expected, (2, len(values))))
        with np.errstate(over="ignore"):  # to inf
            half = data.astype(np.float32).astype(np.float16)  # rounded through float32, as the IR rounds
        check(lt.asarray(data).cast(lt.float16).cast(dtype), np.array([rule(float(v)) for v in half], dtype.name))


# ---- elementwise ----------------------------------------------------------------------------------

def safe_divisor(op):
    """NumPy's floor division and remainder by 0 give 0 (as lazytensor), with a warning."""
    def fn(a, b):
        with np.errstate(divide="ignore", over="ignore"):
            return op(a, b)
    return fn


BINARY = {  # name: the op on either library's arrays
    "add": operator.add, "sub": operator.sub, "mul": operator.mul, "floordiv": safe_divisor(operator.floordiv),
    "mod": safe_divisor(operator.mod), "lt": operator.lt, "le": operator.le, "gt": operator.gt, "ge": operator.ge,
    "eq": operator.eq, "ne": operator.ne, "and": operator.and_, "or": operator.or_, "xor": operator.xor,
    "maximum": lambda a, b: np.maximum(a, b) if isinstance(a, np.ndarray) else a.maximum(b),
    "minimum": lambda a, b: np.minimum(a, b) if isinstance(a, np.ndarray) else a.minimum(b),
    "where": lambda a, b: np.where(a > b, a, b) if isinstance(a, np.ndarray) else lt.where(a > b, a, b),
}


@pytest.mark.parametrize("name", list(BINARY))
def test_binary_ops(dtype, name):
    """Every layout of the first operand against the next layout of the second, full-range data (unsigned
    comparisons and division of values with the top bit set), and the SHAPES with broadcasting."""
    op = BINARY[name]
    a, b = full_range((5, 7), dtype, 1), full_range((5, 7), dtype, 2)[::-1].copy()
    b[0] = 0  # a zero divisor
    for i, kind in enumerate(LAYOUTS):
        x, y = layout(a, kind, "numpy")[0], layout(b, LAYOUTS[(i + 1) % len(LAYOUTS)], "numpy")[0]
        check(op(x, y), op(a, b))
    for shape in SHAPES:
        a, b = full_range(shape, dtype, 3), full_range(shape[-1:], dtype, 4)
        check(op(lt.asarray(a), lt.asarray(b)), op(a, b))
        check(op(lt.asarray(b), lt.asarray(a)), op(b, a))


def test_power(dtype):
    """Integer powers by squaring, wrapping: NumPy's. A Python exponent is a constant's bits' squarings, a
    tensor one runs over all of its bits."""
    a = full_range((4, 6), dtype, 5)
    e = np.arange(24, dtype=dtype.name).reshape(4, 6) * 3
    e[0, :3] = [2**dtype.bits - 1, 2**(dtype.bits - 1), 64]
    for x in views(a):
        check(x ** lt.asarray(e), a ** e)
    check(lt.asarray(a) ** 3, a ** 3)
    check(lt.asarray(a) ** 0, a ** 0)
    check(3 ** lt.asarray(e), dtype.dtype.type(3) ** e)
    check(lt.asarray(a).square(), a * a)


UNARY = {  # name: (lazytensor, NumPy)
    "neg": (operator.neg, np.negative),  # wraps: -1 is the maximum
    "positive": (operator.pos, np.positive),
    "abs": (abs, np.abs), "invert": (operator.invert, np.invert), "sign": (lambda x: x.sign(), np.sign),
    "floor": (lambda x: x.floor(), np.floor), "ceil": (lambda x: x.ceil(), np.ceil),
    "trunc": (lambda x: x.trunc(), np.trunc), "round": (lambda x: x.round(), np.round),
    "relu": (lambda x: x.relu(), lambda a: np.maximum(a, 0)),
    "isnan": (lambda x: x.isnan(), np.isnan), "isfinite": (lambda x: x.isfinite(), np.isfinite),
    "logical_not": (lambda x: x.logical_not(), np.logical_not),
    "clip": (lambda x: x.clip(5, 2**(x.dtype.bits - 1)), lambda a: np.clip(a, 5, 2**(a.dtype.itemsize * 8 - 1))),
    "scalars": (lambda x: (x * 3 + 2**(x.dtype.bits - 1)) // 5 % 1000, lambda a: (a * 3 + 2**(a.itemsize * 8 - 1)) // 5
                % 1000),
    "scalar_left": (lambda x: 7 - x, lambda a: 7 - a),
    "compare_top": (lambda x: x >= 2**(x.dtype.bits - 1), lambda a: a >= 2**(a.itemsize * 8 - 1)),
    "count_nonzero": (lt.count_nonzero, np.count_nonzero),
}


@pytest.mark.parametrize("name", list(UNARY))
def test_unary_ops(dtype, name):
    ours, numpy_op = UNARY[name]
    for shape in SHAPES:
        a = full_range(shape, dtype, 6)
        for x in views(a):
            with np.errstate(over="ignore"):
                check(ours(x), numpy_op(a))


def test_float_results_are_float32(dtype):
    """`/` and the float functions give float32, as an int dtype does: the values converted to float32 first
    (the oracle: NumPy in float32)."""
    a, b = full_range((4, 5), dtype, 7), full_range((4, 5), dtype, 8, nonzero=True)
    fa, fb = a.astype(np.float32), b.astype(np.float32)
    for x in views(a):
        check(x / lt.asarray(b), fa / fb)
        check(x.sqrt(), np.sqrt(fa))
        with np.errstate(over="ignore"):  # to inf
            check((x % 100).exp(), np.exp((a % 100).astype(np.float32)))
        check(x * 0.5, fa * np.float32(0.5))
        check(x.mean(0), a.astype(np.float64).mean(0).astype(np.float32))
    check(lt.asarray(a).isclose(lt.asarray(b)), np.isclose(a, b))


def test_mixed_dtypes_promote_by_the_array_api_table(dtype):
    """With every other dtype: the promoted dtype (`lt.promote`), the values as NumPy computes them in it; a
    signed integer with uint64 raises."""
    a = full_range((3, 4), dtype, 9)
    for other in [*ALL_DTYPES, *WIDE_UNSIGNED_DTYPES]:
        b = full_range((3, 4), other, 10) if other in WIDE_UNSIGNED_DTYPES else random_array((3, 4), other, 10)
        x, y = lt.asarray(a), lt.asarray(b)
        if dtype is lt.uint64 and other.is_signed and other.is_int:
            with pytest.raises(lt.DTypeError, match="no integer dtype holds both"):
                x + y
            continue
        common = lt.promote(dtype, other)
        wa, wb = a.astype(common.name), b.astype(common.name)
        for op in (operator.add, operator.mul, operator.lt):
            check(op(x, y), op(wa, wb))
            check(op(y, x), op(wb, wa))


# ---- movement ---------------------------------------------------------------------------------------

MOVEMENT = {  # name: (lazytensor, NumPy), on a (4, 6) array
    "transpose": (lambda x: x.T, lambda a: a.T), "reshape": (lambda x: x.reshape(3, 8), lambda a: a.reshape(3, 8)),
    "flip": (lambda x: x.flip(0), lambda a: a[::-1]), "slice": (lambda x: x[1:, ::-2], lambda a: a[1:, ::-2]),
    "broadcast": (lambda x: x[:, None, :].broadcast_to((4, 2, 6)), lambda a: np.broadcast_to(a[:, None], (4, 2, 6))),
    "pad": (lambda x: x.pad(((1, 0), (0, 2)), value=2**x.dtype.bits - 1),
            lambda a: np.pad(a, ((1, 0), (0, 2)), constant_values=np.iinfo(a.dtype).max)),
    "concat": (lambda x: lt.concat([x, x[::-1]], axis=1), lambda a: np.concatenate([a, a[::-1]], axis=1)),
    "stack": (lambda x: lt.stack([x, x.T.T]), lambda a: np.stack([a, a])),
    "roll": (lambda x: lt.roll(x, 2, axis=1), lambda a: np.roll(a, 2, axis=1)),
    "tile": (lambda x: lt.tile(x, (2, 1)), lambda a: np.tile(a, (2, 1))),
    "repeat": (lambda x: lt.repeat(x, 2, axis=0), lambda a: np.repeat(a, 2, axis=0)),
    "triu": (lambda x: lt.triu(x, k=1), lambda a: np.triu(a, k=1)),
    "diff": (lambda x: lt.diff(x, axis=1), lambda a: np.diff(a, axis=1)),  # wraps, as NumPy's
    "contiguous": (lambda x: x.T.contiguous(), lambda a: a.T),
}


@pytest.mark.parametrize("name", list(MOVEMENT))
def test_movement_ops(dtype, name):
    ours, numpy_op = MOVEMENT[name]
    a = full_range((4, 6), dtype, 11)
    for x in views(a):
        check(ours(x), numpy_op(a))


# ---- reductions ---------------------------------------------------------------------------------------

def test_sums_and_products(dtype):
    """In uint64, as NumPy's (the oracle) and the array API's; torch's sums are int64, of the same bits."""
    acc = "uint64"
    for shape in SHAPES:
        a = full_range(shape, dtype, 12)
        wide = a.astype(acc)
        for x in views(a):
            for axis in (None, -1, 0) if a.ndim else (None,):
                check(x.sum(axis), wide.sum(axis, dtype=acc))
                check(x.prod(axis), wide.prod(axis, dtype=acc))
                check(x.cumsum(axis if axis is not None else None), wide.cumsum(axis, dtype=acc))
                check(x.cumprod(axis), wide.cumprod(axis, dtype=acc))
            check(x.sum(-1 if a.ndim else None, keepdims=True), wide.sum(-1 if a.ndim else None, keepdims=True))
            torch_sum = torch.tensor(a).sum()  # int64 for every one of them
            assert x.sum().numpy().view(np.int64) == torch_sum.item()
    a = full_range((5, 3), dtype, 13)
    check(lt.asarray(a).sum(0, dtype=dtype), a.sum(0, dtype=dtype.name))  # in the dtype itself, wrapping
    a = full_range((2, 7), dtype, 14)
    check(lt.cumulative_sum(lt.asarray(a), axis=1, include_initial=True),
          np.concatenate([np.zeros((2, 1), acc), a.astype(acc).cumsum(1)], axis=1))


def test_max_min_argmax(dtype):
    """Unsigned order: a value with the top bit set is large, not negative."""
    for shape in [(5, 7), (3, 1, 4), (), (1, 9)]:
        a = full_range(shape, dtype, 15)
        for x in views(a):
            check(x.max(), a.max())
            check(x.min(), a.min())
            check(x.argmax(), np.argmax(a))
            check(x.argmin(), np.argmin(a))
            if a.ndim:
                check(x.max(-1, keepdims=True), a.max(-1, keepdims=True))
                check(x.amin(0), a.min(0))
                check(x.argmax(-1), np.argmax(a, -1))
                check(x.argmin(0), np.argmin(a, 0))
    empty = lt.asarray(np.zeros((0, 3), dtype.name))
    check(empty.max(1), np.zeros(0, dtype.name))
    with pytest.raises(ValueError):
        empty.max(0)


def test_long_reductions(dtype):
    """Rows longer than any block: split across threads on the CPU, looped in blocks by Triton."""
    a = full_range((1 << 18,), dtype, 20)
    x = lt.asarray(a)
    acc = "uint64"
    check(x.sum(), a.sum(dtype=acc))
    check(x.max(), a.max())
    check(x.min(), a.min())
    check(x.argmax(), np.argmax(a))
    check(x.reshape(64, -1).sum(1), a.reshape(64, -1).sum(1, dtype=acc))


def test_any_all_var_std(dtype):
    a = full_range((4, 6), dtype, 16) % 1000  # squares of its deviations that float32 holds
    a[1] = 0
    for x in views(a):
        check(x.any(1), a.any(1))
        check(x.all(0), a.all(0))
        check(x.var(1), a.astype(np.float64).var(1).astype(np.float32), rtol=1e-5)
        check(x.std(0, correction=1), a.astype(np.float64).std(0, ddof=1).astype(np.float32), rtol=1e-5)


# ---- contractions -------------------------------------------------------------------------------------

def test_matmul(dtype):
    """Integer matmuls are plain reductions in the operands' dtype, wrapping (NumPy's too)."""
    a, b = full_range((5, 9), dtype, 17), full_range((9, 4), dtype, 18)
    for x in views(a):
        y = layout(b, "transposed", "numpy")[0]
        check(x @ y, a @ b)
    c = full_range((3, 5, 9), dtype, 19)
    check(lt.asarray(c) @ lt.asarray(b), c @ b)  # batched
    check(lt.asarray(a) @ lt.asarray(b[:, 0]), a @ b[:, 0])  # matrix-vector
    check(lt.vecdot(lt.asarray(a), lt.asarray(a[::-1].copy())), np.vecdot(a, a[::-1]))
    check(lt.tensordot(lt.asarray(c), lt.asarray(a), axes=([1, 2], [0, 1])), np.tensordot(c, a, axes=([1, 2], [0, 1])))
    empty = lt.asarray(np.zeros((2, 0), dtype.name))
    check(empty @ empty.T, np.zeros((2, 2), dtype.name))
