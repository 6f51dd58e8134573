"""Elementwise ops against torch: arithmetic, comparisons, bitwise and logical ops, math functions,
rounding, where/clip, with every dtype, broadcasting, 0-d and size-0 shapes, non-contiguous views,
weak-scalar promotion, in-place operators and IEEE special values.

Where lazytensor deliberately follows NumPy rather than torch (integer division by zero gives 0
instead of raising), the test asserts NumPy's exact result.
"""
from __future__ import annotations

import math
import operator

import numpy as np
import pytest
import torch
from test_mathlib import LONGDOUBLE_IS_EXTENDED, ulp_error

import lazytensor as lt
from conftest import (
    ALL_DTYPES,
    FLOAT_DTYPES,
    HALF_DTYPES,
    INT_DTYPES,
    LAYOUTS,
    check,
    inputs,
    layout,
    random_array,
    to_torch_dtype,
)
from lazytensor.graph import Op

NAN, INF = math.nan, math.inf
SPECIALS = [NAN, INF, -INF, -0.0, 0.0, 1.0, -1.0, 0.5, -0.5, 1.5, -2.5, 2.5, 3.0, 1e-8, 100.0, -100.0]


# maximum(-0.0, 0.0) may give either zero: torch itself answers differently on its broadcast and
# contiguous paths. For these ops only the value of a signed-zero tie is checked, not its sign.
ZERO_TIE_OPS = {"maximum", "minimum", "relu"}


def check_signs(got: lt.Tensor, expected: torch.Tensor, exact: bool = False) -> None:
    """`check` (`exact`: to the last bit), plus the sign bit of every non-NaN float element (so -0.0 must match
    -0.0)."""
    check(got, expected, *((0, 0) if exact else ()))
    if got.dtype.is_float:
        g, e = got.numpy(), expected.numpy()
        both = ~np.isnan(e)
        np.testing.assert_array_equal(np.signbit(g)[both], np.signbit(e)[both], err_msg="sign bits differ")


def paired_layouts(a: np.ndarray, b: np.ndarray, every: int = 1):
    """(kind, x, tx, y, ty) for each layout of `a`, paired with the next layout for `b`.

    `every=2` keeps the pairs (contiguous, transposed) and (strided, flipped): every layout is
    still read once, with half the kernels."""
    for i, kind in enumerate(LAYOUTS[::every]):
        x, tx = layout(a, kind)
        y, ty = layout(b, LAYOUTS[(i * every + 1) % len(LAYOUTS)])
        yield kind, x, tx, y, ty


def ints_without_zero(shape, dtype, seed):
    arr = random_array(shape, dtype, seed)
    arr[arr == 0] = 1
    return arr


# ---- binary arithmetic -----------------------------------------------------------------------

BINARY = {
    "add": operator.add, "sub": operator.sub, "mul": operator.mul, "truediv": operator.truediv,
    "floordiv": operator.floordiv, "mod": operator.mod, "pow": operator.pow,
}
BOOL_UNSUPPORTED = {"sub", "floordiv", "mod", "pow"}  # torch refuses these for two bool tensors too


def binary_operands(name: str, dtype: lt.DType, shape=(3, 4)) -> tuple[np.ndarray, np.ndarray]:
    a = random_array(shape, dtype, seed=1)
    if name == "pow" and dtype.is_float:
        return random_array(shape, dtype, 1, low=0.1, high=3), random_array(shape, dtype, 2, low=-3, high=3)
    if name == "pow" and dtype.is_int:
        return a, np.random.default_rng(2).integers(0, 4, shape).astype(dtype.name)
    if name in ("floordiv", "mod", "truediv") and dtype.is_int:
        return a, ints_without_zero(shape, dtype, 2)  # torch raises for integer division by zero
    return a, random_array(shape, dtype, seed=2)


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
@pytest.mark.parametrize("name", list(BINARY))
def test_binary(name, dtype):
    fn = BINARY[name]
    a, b = binary_operands(name, dtype)
    for _, x, tx, y, ty in paired_layouts(a, b, every=2):
        if dtype == lt.bool_ and name in BOOL_UNSUPPORTED:
            with pytest.raises(lt.DTypeError):
                fn(x, y)
        else:
            check(fn(x, y), fn(tx, ty))


@pytest.mark.parametrize("name,method", [("add", "add"), ("sub", "sub"), ("mul", "mul"), ("truediv", "div"),
                                         ("floordiv", "floor_divide"), ("mod", "remainder"), ("pow", "pow")])
def test_binary_named_methods_and_functions(name, method):
    a, b = binary_operands(name, lt.float64, (4,))
    x, y = lt.asarray(a), lt.asarray(b)
    expected = BINARY[name](torch.tensor(a), torch.tensor(b))
    check(getattr(x, method)(y), expected)
    check(getattr(lt, {"truediv": "divide", "sub": "subtract", "mul": "multiply"}.get(name, method))(a, y), expected)


@pytest.mark.parametrize("da,db", [(lt.int8, lt.uint8), (lt.int32, lt.float64), (lt.bool_, lt.int8),
                                   (lt.uint8, lt.float32), (lt.int64, lt.float32), (lt.bool_, lt.float64),
                                   (lt.int16, lt.int32), (lt.float32, lt.float64), (lt.uint8, lt.int64)], ids=str)
def test_binary_mixed_dtypes(da, db):
    a, b = random_array((2, 3), da, 1), random_array((3,), db, 2)
    x, y, tx, ty = lt.asarray(a), lt.asarray(b), torch.tensor(a), torch.tensor(b)
    check(x + y, tx + ty)
    check(y * x, ty * tx)
    check(x / y, tx / ty)
    check(x < y, tx < ty)
    check(x.maximum(y), torch.maximum(tx, ty))


def test_integer_overflow_wraps():
    x = lt.asarray(np.array([100, -100, 127, -128], np.int8))
    t = torch.tensor([100, -100, 127, -128], dtype=torch.int8)
    check(x * 3, t * 3)
    check(x + 100, t + 100)
    check(x - 100, t - 100)
    u, tu = lt.asarray(np.array([0, 1, 255], np.uint8)), torch.tensor([0, 1, 255], dtype=torch.uint8)
    check(u - 2, tu - 2)
    check(u + 1, tu + 1)
    check(-u, -tu)


# ---- reflected operators and weak Python scalars ------------------------------------------------

REFLECTED = {
    "radd": lambda s, x: s + x, "rsub": lambda s, x: s - x, "rmul": lambda s, x: s * x,
    "rtruediv": lambda s, x: s / x, "rfloordiv": lambda s, x: s // x, "rmod": lambda s, x: s % x,
    "rpow": lambda s, x: s ** x,
}


@pytest.mark.parametrize("dtype", [lt.int8, lt.int64, lt.uint8, lt.float32, lt.float64], ids=str)
@pytest.mark.parametrize("name", list(REFLECTED))
def test_reflected_scalar(name, dtype):
    fn = REFLECTED[name]
    if name == "rpow":
        arr = np.random.default_rng(3).integers(0, 4, (2, 3)).astype(dtype.name)
    else:
        arr = ints_without_zero((2, 3), dtype, 3) if dtype.is_int else random_array((2, 3), dtype, 3)
    for scalar, kind in ((7, "contiguous"), (2.5, "transposed")):
        x, t = layout(arr, kind)
        check(fn(scalar, x), fn(scalar, t))
    if dtype.is_signed:
        check(fn(-7, lt.asarray(arr)), fn(-7, torch.tensor(arr)))


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
@pytest.mark.parametrize("scalar", [True, 3, 2.5], ids=["bool", "int", "float"])
def test_weak_scalar_promotion(dtype, scalar):
    arr = random_array((5,), dtype, 4)
    x, t = lt.asarray(arr), torch.tensor(arr)
    check(x + scalar, t + scalar)
    check(scalar * x, scalar * t)
    check(x / scalar, t / scalar)
    check(x == scalar, t == scalar)


@pytest.mark.parametrize("dtype,scalar,expected", [
    (lt.float32, 2.5, lt.float32), (lt.float64, 2.5, lt.float64), (lt.int32, 2.5, lt.float32),
    (lt.uint8, 2.5, lt.float32), (lt.int8, 1, lt.int8), (lt.uint8, 200, lt.uint8), (lt.bool_, 1, lt.int64),
    (lt.bool_, True, lt.bool_), (lt.bool_, 1.5, lt.float32), (lt.int16, True, lt.int16),
    (lt.float32, 10 ** 30, lt.float32)], ids=str)
def test_weak_scalar_result_dtype(dtype, scalar, expected):
    x = lt.asarray(random_array((3,), dtype, 5))
    assert (x + scalar).dtype == expected
    assert (scalar + x).dtype == expected


def test_true_division_of_ints_is_float32():
    a, b = np.array([7, -7, 1, 0], np.int64), np.array([2, 2, 3, 5], np.int64)
    out = lt.asarray(a) / lt.asarray(b)
    assert out.dtype == lt.float32
    check(out, torch.tensor(a) / torch.tensor(b))
    check(lt.asarray(a.astype(np.int8)) / 4, torch.tensor(a.astype(np.int8)) / 4)


def test_int8_plus_uint8_is_int16():
    a, b = np.array([-128, 127, 5], np.int8), np.array([255, 255, 0], np.uint8)
    out = lt.asarray(a) + lt.asarray(b)
    assert out.dtype == lt.int16
    check(out, torch.tensor(a) + torch.tensor(b))


def test_bool_plus_int_is_int64():
    b = np.array([True, False, True])
    out = lt.asarray(b) + 1
    assert out.dtype == lt.int64
    check(out, torch.tensor(b) + 1)


@pytest.mark.parametrize("dtype,value", [(lt.uint8, 300), (lt.uint8, -1), (lt.int8, 128), (lt.int8, -129),
                                         (lt.int16, 40000), (lt.int32, 2 ** 31), (lt.int64, 2 ** 63)], ids=str)
def test_python_int_out_of_range_raises(dtype, value):
    x = lt.asarray(random_array((3,), dtype, 6))
    for fn in (lambda: x + value, lambda: value + x, lambda: x * value, lambda: x - value, lambda: x // value):
        with pytest.raises(lt.DTypeError):
            fn()


def test_python_int_at_the_edges_of_the_range_is_accepted():
    u = lt.asarray(np.array([0, 1], np.uint8))
    check(u + 255, torch.tensor([0, 1], dtype=torch.uint8) + 255)
    i = lt.asarray(np.array([0, -1], np.int8))
    check(i + (-128), torch.tensor([0, -1], dtype=torch.int8) + (-128))
    check(i + 127, torch.tensor([0, -1], dtype=torch.int8) + 127)


def test_python_float_overflowing_float32_is_inf():
    x = lt.asarray([1.0, -1.0])
    check(x * 1e300, torch.tensor([1.0, -1.0]) * 1e300)


# ---- in-place operators ------------------------------------------------------------------------

INPLACE_OK = [
    ("iadd", lt.float32, "f64"), ("iadd", lt.int8, "i64"), ("isub", lt.uint8, 5), ("imul", lt.int32, 3),
    ("itruediv", lt.float32, 2), ("itruediv", lt.float64, "f32"), ("ifloordiv", lt.int8, -3),
    ("imod", lt.int16, 4), ("ipow", lt.int64, 2), ("ipow", lt.float32, 0.5), ("iand", lt.int8, 6),
    ("ior", lt.bool_, True), ("ixor", lt.int64, "i32"), ("iadd", lt.float64, 1), ("imul", lt.int64, True),
    ("iadd", lt.float32, "i64"), ("isub", lt.int16, "u8"),
]
INPLACE = {
    "iadd": operator.iadd, "isub": operator.isub, "imul": operator.imul, "itruediv": operator.itruediv,
    "ifloordiv": operator.ifloordiv, "imod": operator.imod, "ipow": operator.ipow, "iand": operator.iand,
    "ior": operator.ior, "ixor": operator.ixor,
}
SHORT = {"f64": lt.float64, "f32": lt.float32, "i64": lt.int64, "i32": lt.int32, "u8": lt.uint8}


def _operand(other, seed=8):
    """A Python scalar as is, or a (2, 3) tensor pair of the dtype a short name gives."""
    if not isinstance(other, str):
        return other, other
    arr = random_array((2, 3), SHORT[other], seed)
    if SHORT[other].is_int:
        arr[arr == 0] = 1
    return lt.asarray(arr), torch.tensor(arr)


@pytest.mark.parametrize("name,dtype,other", INPLACE_OK, ids=str)
def test_inplace_keeps_dtype(name, dtype, other):
    arr = random_array((2, 3), dtype, 7, low=0.5, high=3)
    x, t = lt.asarray(arr), torch.tensor(arr)
    y, ty = _operand(other)
    before = x
    x = INPLACE[name](x, y)
    t = INPLACE[name](t, ty)
    assert x is before
    assert x.dtype == dtype
    check(x, t)


@pytest.mark.parametrize("name,dtype,other", [
    ("iadd", lt.int64, 1.5), ("isub", lt.int32, "f32"), ("itruediv", lt.int64, 2), ("itruediv", lt.int8, "i64"),
    ("imul", lt.uint8, 0.5), ("iadd", lt.bool_, 1), ("iand", lt.bool_, "i64"), ("ipow", lt.int16, 0.5),
    ("ifloordiv", lt.int32, 2.0), ("iadd", lt.int8, 300), ("iadd", lt.uint8, -1)], ids=str)
def test_inplace_raises_when_the_result_dtype_cannot_be_held(name, dtype, other):
    x = lt.asarray(random_array((2, 3), dtype, 7))
    y, _ = _operand(other)
    with pytest.raises(lt.DTypeError):
        INPLACE[name](x, y)
    assert x.dtype == dtype  # the failed op left x alone


def test_inplace_broadcasts_other_but_not_self():
    x, t = lt.asarray(random_array((2, 3), lt.float32, 1)), torch.tensor(random_array((2, 3), lt.float32, 1))
    row = random_array((3,), lt.float32, 2)
    x += lt.asarray(row)
    t += torch.tensor(row)
    check(x, t)
    small = lt.asarray(row)
    with pytest.raises(lt.ShapeError):
        small += x


def test_inplace_on_an_alias_rebinds_the_same_object():
    x = lt.asarray([1, 2, 3])
    alias = x
    x *= 2
    assert alias is x
    check(alias, torch.tensor([2, 4, 6]))


# ---- integer floor division and modulo ----------------------------------------------------------

@pytest.mark.parametrize("dtype", [lt.int8, lt.int16, lt.int32, lt.int64], ids=str)
def test_int_floordiv_mod_negative_operands_follow_python(dtype):
    a = np.repeat(np.arange(-7, 8), 6).astype(dtype.name)
    b = np.tile(np.array([-3, -2, -1, 1, 2, 3]), 15).astype(dtype.name)
    x, y = lt.asarray(a), lt.asarray(b)
    expected_div = np.array([int(p) // int(q) for p, q in zip(a, b)], dtype.name)
    expected_mod = np.array([int(p) % int(q) for p, q in zip(a, b)], dtype.name)
    check(x // y, expected_div)
    check(x % y, expected_mod)
    check(x // y, torch.tensor(a) // torch.tensor(b))
    check(x % y, torch.tensor(a) % torch.tensor(b))
    for q in (-3, 2, 5):
        check(x // q, np.array([int(p) // q for p in a], dtype.name))
        check(x % q, np.array([int(p) % q for p in a], dtype.name))
        check(q // y, np.array([q // int(p) for p in b], dtype.name))
        check(q % y, np.array([q % int(p) for p in b], dtype.name))


@pytest.mark.parametrize("dtype", INT_DTYPES, ids=str)
def test_int_division_by_zero_gives_zero(dtype):
    """NumPy's documented integer behaviour (torch raises instead): x // 0 == 0 and x % 0 == 0."""
    a = random_array((7,), dtype, 9)
    x = lt.asarray(a)
    zeros = np.zeros(7, dtype.name)
    check(x // lt.asarray(zeros), zeros)
    check(x % lt.asarray(zeros), zeros)
    check(x // 0, zeros)
    check(x % 0, zeros)
    mixed = np.array([0, 3, 0, 2, 0, 5, 0], dtype.name)
    expected_div = np.array([0 if q == 0 else int(p) // int(q) for p, q in zip(a, mixed)], dtype.name)
    expected_mod = np.array([0 if q == 0 else int(p) % int(q) for p, q in zip(a, mixed)], dtype.name)
    check(x // lt.asarray(mixed), expected_div)
    check(x % lt.asarray(mixed), expected_mod)


@pytest.mark.parametrize("dtype", [lt.int8, lt.int16, lt.int32, lt.int64], ids=str)
def test_int_min_divided_by_minus_one_wraps(dtype):
    lo = np.iinfo(dtype.name).min
    x = lt.asarray(np.array([lo, lo + 1, -1], dtype.name))
    m = lt.asarray(np.array([-1, -1, -1], dtype.name))
    check(x // m, np.array([lo, -(lo + 1), 1], dtype.name))
    check(x % m, np.zeros(3, dtype.name))


@pytest.mark.parametrize("dtype", INT_DTYPES, ids=str)
@pytest.mark.parametrize("shape", [(), (0,), (5, 7)], ids=str)
def test_int_division_by_a_python_scalar_is_a_constant_of_the_kernel(dtype, shape):
    """A Python int divisor is baked into the kernel (one kernel per divisor, which lets the compiler divide
    by multiplying), with Python's floor semantics on every layout; a float divisor stays a parameter."""
    lo, hi = (np.iinfo(dtype.name).min, np.iinfo(dtype.name).max)
    divisors = [1, 2, 7, 100, hi] + ([-1, -7, -128, lo] if dtype.is_signed else [0])
    for kind, x, t in inputs(shape, dtype):
        for q in divisors:
            check(x // q, t // q if q else torch.zeros_like(t))
            check(x % q, t % q if q else torch.zeros_like(t))
    extremes = np.unique(np.array([lo, lo + 1, -1, 0, 1, hi - 1, hi]).astype(dtype.name))
    wrap = lambda values: np.array([(v - lo) % (hi - lo + 1) + lo for v in values]).astype(dtype.name)  # MIN // -1
    for q in divisors:
        check(lt.asarray(extremes) // q, wrap([int(p) // q if q else 0 for p in extremes]))
        check(lt.asarray(extremes) % q, wrap([int(p) % q if q else 0 for p in extremes]))
    x = lt.asarray(random_array((4, 3), dtype))
    for quotient in (x // 7, x % 7, (x + x[0]) % 7):
        (item,) = lt.schedule(quotient)
        assert item.kernel.params == ()
    (item,) = lt.schedule(x.cast(lt.float32) % 7)
    assert item.kernel.params == (lt.float32,)


def test_uint8_floordiv_mod_large_values():
    a = np.array([255, 254, 200, 7, 0, 128], np.uint8)
    b = np.array([2, 255, 3, 200, 9, 128], np.uint8)
    check(lt.asarray(a) // lt.asarray(b), torch.tensor(a) // torch.tensor(b))
    check(lt.asarray(a) % lt.asarray(b), torch.tensor(a) % torch.tensor(b))
    check(lt.asarray(a) // 7, torch.tensor(a) // 7)
    check(lt.asarray(a) % 7, torch.tensor(a) % 7)


# ---- integer and float powers -------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [lt.int8, lt.int32, lt.int64], ids=str)
def test_int_pow_grid_including_negative_exponents(dtype):
    base = np.repeat(np.arange(-3, 4), 7).astype(dtype.name)
    exp = np.tile(np.arange(-3, 4), 7).astype(dtype.name)
    check(lt.asarray(base) ** lt.asarray(exp), torch.tensor(base) ** torch.tensor(exp))
    check(lt.asarray(base) ** 3, torch.tensor(base) ** 3)
    check(lt.asarray(base) ** 0, torch.tensor(base) ** 0)


def test_int_pow_large_exponent_wraps_like_torch():
    base = np.array([2, 3, -2, 7], np.int64)
    exp = np.array([62, 39, 63, 30], np.int64)
    check(lt.asarray(base) ** lt.asarray(exp), torch.tensor(base) ** torch.tensor(exp))
    b8 = base.astype(np.int8)
    check(lt.asarray(b8) ** 9, torch.tensor(b8) ** 9)


def test_int_to_negative_python_int_power_raises():
    with pytest.raises(ValueError):
        lt.asarray([1, 2, 3]) ** -1
    check(lt.asarray([1.0, 2.0, 4.0]) ** -1, torch.tensor([1.0, 2.0, 4.0]) ** -1)


def test_pow_promotion():
    i = np.array([1, 2, 3], np.int32)
    check(lt.asarray(i) ** 2.5, torch.tensor(i) ** 2.5)
    check(2.5 ** lt.asarray(i), 2.5 ** torch.tensor(i))
    check(2 ** lt.asarray(i), 2 ** torch.tensor(i))
    b = np.array([True, False])
    check(lt.asarray(b) ** 2, torch.tensor(b) ** 2)
    check(2 ** lt.asarray(b), 2 ** torch.tensor(b))


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
def test_pow_to_a_python_scalar_has_torchs_special_values(dtype):
    """torch raises a float tensor to the Python scalars 0.5, -0.5, 2, 3, -1 and -2 with sqrt, rsqrt, x*x,
    x*x*x, 1/x and 1/(x*x), so `(-inf) ** 0.5` is NaN (C's pow: inf), `(-0.0) ** -0.5` is -inf and
    `1e20 ** -2` in float32 is 0; other scalars (a negative base to a non-integer power is NaN, zero to a
    negative power inf), tensor exponents and scalar bases take C's pow. The 16-bit floats compute in
    float32, so they follow float32 (as torch's CUDA kernels; its CPU float16 one takes pow for all)."""
    bases = np.array(SPECIALS + [1e20, -1e20, -3.0, 2.0, 1e-30], np.float64)
    for s in (0.5, -0.5, 2, 3, -1, -2, 2.0, 0.25, -0.75, 1.5, 0, 1, -3, 0.001):
        x, t = lt.asarray(bases.astype(dtype.name)), torch.tensor(bases.astype(dtype.name))
        check_signs(x ** s, t ** s)
        check_signs(x ** lt.full((), s, dtype=dtype), t ** torch.tensor(s, dtype=t.dtype))
        check_signs(s ** x, s ** t)
        half_dtype = lt.float16 if dtype == lt.float32 else lt.bfloat16
        h, th = x.cast(half_dtype), t.to(to_torch_dtype(half_dtype))
        check_signs((h ** s).float(), (th.float() ** s).to(th.dtype).float())


# ---- unary ops ------------------------------------------------------------------------------------

FLOAT_UNARY = {  # name: (torch function, data range)
    "exp": (torch.exp, (-3, 3)), "exp2": (torch.exp2, (-3, 3)), "expm1": (torch.expm1, (-1, 1)),
    "log": (torch.log, (0.1, 5)), "log2": (torch.log2, (0.1, 5)), "log10": (torch.log10, (0.1, 5)),
    "log1p": (torch.log1p, (-0.9, 3)), "sqrt": (torch.sqrt, (0, 5)), "rsqrt": (torch.rsqrt, (0.1, 5)),
    "sin": (torch.sin, (-4, 4)), "cos": (torch.cos, (-4, 4)), "tan": (torch.tan, (-1.4, 1.4)),
    "tanh": (torch.tanh, (-4, 4)), "sigmoid": (torch.sigmoid, (-8, 8)), "erf": (torch.erf, (-3, 3)),
    "reciprocal": (torch.reciprocal, (0.25, 4)), "asin": (torch.asin, (-1, 1)), "acos": (torch.acos, (-1, 1)),
    "atan": (torch.atan, (-6, 6)), "asinh": (torch.asinh, (-6, 6)), "acosh": (torch.acosh, (1, 6)),
    "atanh": (torch.atanh, (-1, 1)), "sinh": (torch.sinh, (-4, 4)), "cosh": (torch.cosh, (-4, 4)),
}


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
@pytest.mark.parametrize("name", list(FLOAT_UNARY))
def test_float_unary(name, dtype):
    tfn, (low, high) = FLOAT_UNARY[name]
    for kind, x, t in inputs((3, 4), dtype, seed=10, low=low, high=high):
        if kind in ("contiguous", "flipped"):  # the other layouts are read by the same ops in other tests
            check(getattr(x, name)(), tfn(t))
    if name == "reciprocal":  # negative inputs too
        x, t = layout(random_array((5,), dtype, 11, low=-4, high=-0.25), "contiguous")
        check(x.reciprocal(), t.reciprocal())


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
@pytest.mark.parametrize("name", list(FLOAT_UNARY))
def test_float_unary_of_a_transposed_read(name, dtype):
    """f(x.T) and f(x).T + 1 walk tiles (CPU) that copy the transposed read and compute rows of vectors: whole and
    partial tiles, special values among the data, a batch of matrices, no elements."""
    tfn, (low, high) = FLOAT_UNARY[name]
    arr = random_array((37, 50), dtype, 13, low=low, high=high)
    arr.flat[::7] = np.resize(np.array(SPECIALS, dtype.name), arr.flat[::7].shape)
    x, t = lt.asarray(arr), torch.tensor(arr)
    check_signs(getattr(x.T, name)(), tfn(t.T))
    check_signs(getattr(x, name)().T + 1, tfn(t).T + 1)
    x, t = layout(random_array((3, 20, 33), dtype, 14, low=low, high=high), "contiguous")
    check(getattr(x.permute(0, 2, 1), name)(), tfn(t.permute(0, 2, 1)))
    x, t = layout(random_array((0, 40), dtype, 15), "contiguous")
    check(getattr(x.T, name)(), tfn(t.T))


@pytest.mark.parametrize("dtype", [lt.int8, lt.int32, lt.int64, lt.uint8, lt.bool_, lt.float64], ids=str)
@pytest.mark.parametrize("shape", [(37, 50), (16, 16), (2, 70, 17)], ids=str)
def test_elementwise_on_transposed_reads(shape, dtype):
    """Integer, bool and float arithmetic reading one operand transposed (copied into a tile array first) beside
    another read as stored, and a cast of a transposed read."""
    a, b = random_array(shape, dtype, 16), random_array(shape[:-2] + shape[:-3:-1], dtype, 17)
    x, tx, y, ty = lt.asarray(a), torch.tensor(a), lt.asarray(b), torch.tensor(b)
    if dtype == lt.bool_:
        check(x ^ y.mT, tx ^ ty.mT)
        check(x.mT & ~y, tx.mT & ~ty)
    else:
        check(x * 3 + y.mT, tx * 3 + ty.mT)
        check((x.mT - y) // 7 if dtype.is_int else x.mT * y, (tx.mT - ty) // 7 if dtype.is_int else tx.mT * ty)
    check(x.mT.cast(lt.float32), tx.mT.to(torch.float32))


@pytest.mark.parametrize("dtype", [lt.int32, lt.bool_], ids=str)
@pytest.mark.parametrize("name", list(FLOAT_UNARY))
def test_float_unary_of_ints_gives_float32(name, dtype):
    arr = np.array([1, 2, 3, 4], dtype.name) if dtype != lt.bool_ else np.array([True, False, True, True])
    x = lt.asarray(arr)
    out = getattr(x, name)()
    assert out.dtype == lt.float32
    check(out, FLOAT_UNARY[name][0](torch.tensor(arr)))


@pytest.mark.parametrize("name", ["add", "subtract", "multiply", "divide", "pow", "maximum", "atan2", "hypot",
                                  "copysign", "nextafter", "bitwise_left_shift", "less"])
def test_module_functions_take_a_python_scalar_first_as_weak(name):
    """`lt.f(scalar, x)` is `f` of the scalar at x's dtype (array API 2024.12): a float16 tensor stays float16,
    an int8 one int8 (shifts and integer functions), where a 0-d default-dtype array would promote it."""
    shift = name.startswith("bitwise")
    arr = random_array((2, 3), lt.int8, 80, low=0, high=7) if shift else random_array((2, 3), lt.float16, 80)
    x, t = lt.asarray(arr), torch.tensor(arr)
    for scalar in ((1, 3) if shift else (2.5, -1, 0.0)):
        got = getattr(lt, name)(scalar, x)
        assert got.dtype == (lt.bool_ if name == "less" else x.dtype)
        (check if shift else check_signs)(got, getattr(torch, name)(torch.full_like(t, scalar), t))


def test_module_functions_take_lists():
    check(lt.exp([0.0, 1.0]), torch.exp(torch.tensor([0.0, 1.0])))
    check(lt.logical_xor([0.0, 1.0], lt.asarray([1, 1])), torch.logical_xor(torch.tensor([0.0, 1.0]),
                                                                           torch.tensor([1, 1])))
    check(lt.sqrt([4, 9]), torch.sqrt(torch.tensor([4, 9])))
    check(lt.abs([-1, 2]), torch.abs(torch.tensor([-1, 2])))
    check(lt.maximum([1, 5], lt.asarray([3, 2])), torch.maximum(torch.tensor([1, 5]), torch.tensor([3, 2])))


@pytest.mark.parametrize("dtype", [lt.float32, lt.float64, lt.int32])
def test_module_functions_write_into_out_as_torch(dtype):
    """`lt.f(..., out=t)` rebinds t to the result, as torch's `out=` writes it (a wider or same-kind dtype holds it,
    a float result does not go into integers, the shape must match) and NumPy's one-tensor tuple."""
    a, b = random_array((3, 4), dtype, 6), random_array((4,), dtype, 7)
    ta, tb = torch.tensor(a), torch.tensor(b)
    for name in ("mul", "add", "maximum", "matmul", "abs"):
        args, targs = ((a, b.reshape(4, 1)), (ta, tb.reshape(4, 1))) if name == "matmul" else \
            (((a,), (ta,)) if name == "abs" else ((a, b), (ta, tb)))
        out = lt.zeros((3, 1) if name == "matmul" else (3, 4), dtype=lt.float64)
        handle = out
        got = getattr(lt, name)(*[lt.asarray(v) for v in args], out=out)
        assert got is handle and out.dtype == lt.float64
        check(out, getattr(torch, name)(*targs).double())  # torch's out= of another dtype: computed, then cast
    out = lt.zeros((3, 4), dtype=dtype)
    assert lt.multiply(lt.asarray(a), 2, out=(out,)) is out
    check(out, ta * 2)
    if dtype == lt.int32:
        with pytest.raises(lt.DTypeError, match="out="):
            lt.sqrt(lt.asarray(a), out=out)  # torch: "result type Float can't be cast to the desired output type Int"
    with pytest.raises(lt.ShapeError, match="out="):
        lt.add(lt.asarray(a), lt.asarray(b), out=lt.zeros(4, dtype=dtype))
    leaf = lt.zeros((3, 4), dtype=lt.float32).requires_grad_()
    with pytest.raises(RuntimeError, match="leaf"):
        lt.exp(lt.ones((3, 4)), out=leaf)


SAME_DTYPE_UNARY = {  # name: (lazytensor, torch)
    "neg": (operator.neg, operator.neg), "abs": (abs, abs), "square": (lambda x: x.square(), torch.square),
    # NaN's sign is NaN, as NumPy and the array API (torch.sign gives 0)
    "sign": (lambda x: x.sign(), lambda t: torch.where(t.isnan(), t, torch.sign(t))), "relu": (lambda x: x.relu(), torch.relu),
    "floor": (lambda x: x.floor(), torch.floor), "ceil": (lambda x: x.ceil(), torch.ceil),
    "round": (lambda x: x.round(), torch.round), "trunc": (lambda x: x.trunc(), torch.trunc),
}


@pytest.mark.parametrize("dtype", [d for d in ALL_DTYPES if d != lt.bool_], ids=str)
@pytest.mark.parametrize("name", list(SAME_DTYPE_UNARY))
def test_same_dtype_unary(name, dtype):
    fn, tfn = SAME_DTYPE_UNARY[name]
    arr = random_array((3, 4), dtype, 12)
    for kind in ("transposed", "strided"):
        x, t = layout(arr, kind)
        out = fn(x)
        assert out.dtype == dtype
        check(out, tfn(t))


def test_unary_on_bool():
    arr = np.array([True, False, True])
    x, t = lt.asarray(arr), torch.tensor(arr)
    check(x.sign(), t.sign())
    check(~x, ~t)
    check(x.logical_not(), t.logical_not())
    check(abs(x), arr)  # NumPy: abs of a bool array is itself
    with pytest.raises(lt.DTypeError):
        _ = -x
    with pytest.raises(lt.DTypeError):
        x.relu()


def test_rounding_ops_keep_int_dtypes():
    arr = np.array([-3, 0, 7], np.int16)
    x, t = lt.asarray(arr), torch.tensor(arr)
    for name in ("floor", "ceil", "round", "trunc"):
        out = getattr(x, name)()
        assert out.dtype == lt.int16
        check(out, getattr(t, name)())


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
def test_round_half_to_even(dtype):
    arr = np.array([0.5, 1.5, 2.5, 3.5, -0.5, -1.5, -2.5, 0.49999997, 0.5000001, -0.4, 1e15 + 0.5, 4.5],
                   dtype.name)
    check_signs(lt.asarray(arr).round(), torch.tensor(arr).round())
    np.testing.assert_array_equal(lt.asarray(arr).round().numpy(), np.round(arr))


@pytest.mark.parametrize("decimals", [1, 2, -1])
def test_round_decimals(decimals):
    arr = np.array([1.2345, -2.675, 125.0, 0.05, 15.0, 33.333], np.float64)
    check(lt.asarray(arr).round(decimals), torch.tensor(arr).round(decimals=decimals))


# ---- special values -------------------------------------------------------------------------------

UNARY_SPECIAL = {**{name: (lambda x, n=name: getattr(x, n)(), tfn) for name, (tfn, _) in FLOAT_UNARY.items()},
                 **SAME_DTYPE_UNARY}


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
@pytest.mark.parametrize("name", list(UNARY_SPECIAL))
def test_unary_special_values(name, dtype):
    fn, tfn = UNARY_SPECIAL[name]
    arr = np.array(SPECIALS, dtype.name)
    (check if name in ZERO_TIE_OPS else check_signs)(fn(lt.asarray(arr)), tfn(torch.tensor(arr)))



def method_or_torch(name: str):
    """`a.name(b)` for lazytensor tensors, `torch.name(a, b)` for torch's."""
    return lambda a, b: getattr(a, name)(b) if isinstance(a, lt.Tensor) else getattr(torch, name)(a, b)


FLOAT_BINARY = ["atan2", "hypot", "copysign", "nextafter"]  # functions of two floats (integers promote)
EXACT = {"copysign", "nextafter"}  # functions of the bits: the same bits as torch's
BINARY_SPECIAL = {**{k: v for k, v in BINARY.items()}, **{name: method_or_torch(name) for name in FLOAT_BINARY},
                  "maximum": method_or_torch("maximum"), "minimum": method_or_torch("minimum"),
                  "lt": operator.lt, "le": operator.le, "eq": operator.eq, "ne": operator.ne,
                  "gt": operator.gt, "ge": operator.ge}
BINARY_SPECIAL_VALUES = [NAN, INF, -INF, -0.0, 0.0, 1.0, -1.0, 2.0, -2.0, 0.5, 7.5, -7.5, 3.0]


def standard_floordiv(a, b):
    """Float `//` where the array API, NumPy and PyTorch disagree, the standard's (README, "The array API
    standard"): floor(a / b) of or by an infinity, or by zero; PyTorch's (NumPy's) elsewhere."""
    if isinstance(a, lt.Tensor):
        return a // b
    return torch.where(a.isinf() | b.isinf() | (b == 0), torch.floor(a / b), torch.floor_divide(a, b))


def standard_mod(a, b):
    """Float `%`: a zero has the divisor's sign (Python, NumPy, the array API; PyTorch keeps the dividend's)."""
    if isinstance(a, lt.Tensor):
        return a % b
    r = torch.remainder(a, b)
    return torch.where(r == 0, torch.copysign(r, b), r)


BINARY_SPECIAL.update(floordiv=standard_floordiv, mod=standard_mod)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
@pytest.mark.parametrize("name", list(BINARY_SPECIAL))
def test_binary_special_values(name, dtype):
    """Every pair of special values (an outer product through broadcasting)."""
    fn = BINARY_SPECIAL[name]
    vals = np.array(BINARY_SPECIAL_VALUES, dtype.name)
    a, b = vals[:, None], vals[None, :]
    (check if name in ZERO_TIE_OPS else check_signs)(fn(lt.asarray(a), lt.asarray(b)),
                                                     fn(torch.tensor(a), torch.tensor(b)))


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
def test_maximum_minimum_propagate_nan(dtype):
    a = np.array([NAN, 1.0, NAN, -INF, 2.0], dtype.name)
    b = np.array([1.0, NAN, NAN, NAN, -1.0], dtype.name)
    x, y, tx, ty = lt.asarray(a), lt.asarray(b), torch.tensor(a), torch.tensor(b)
    for got, exp in ((x.maximum(y), torch.maximum(tx, ty)), (y.maximum(x), torch.maximum(ty, tx)),
                     (x.minimum(y), torch.minimum(tx, ty)), (lt.minimum(y, x), torch.minimum(ty, tx))):
        check(got, exp)
        np.testing.assert_array_equal(np.isnan(got.numpy()), [True, True, True, True, False])
    check(x.maximum(0.0), torch.maximum(tx, torch.tensor(0.0, dtype=tx.dtype)))


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_maximum_minimum(dtype):
    a, b = random_array((3, 4), dtype, 13), random_array((3, 4), dtype, 14)
    (_, x, tx, y, ty), (_, x2, tx2, y2, ty2) = paired_layouts(a, b, every=2)
    check(x.maximum(y), torch.maximum(tx, ty))
    check(x2.minimum(y2), torch.minimum(tx2, ty2))
    check(x.maximum(y[0]), torch.maximum(tx, ty[0]))  # broadcast


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
def test_isnan_isinf_isfinite(dtype):
    arr = np.array(SPECIALS, dtype.name)
    x, t = lt.asarray(arr), torch.tensor(arr)
    check(x.isnan(), t.isnan())
    check(x.isinf(), t.isinf())
    check(x.isfinite(), t.isfinite())
    check(lt.isnan(arr), t.isnan())


@pytest.mark.parametrize("dtype", [lt.bool_, lt.int8, lt.int64, lt.uint8], ids=str)
def test_isnan_isinf_isfinite_of_ints(dtype):
    arr = random_array((2, 3), dtype, 15)
    x, t = lt.asarray(arr), torch.tensor(arr)
    check(x.isnan(), t.isnan())
    check(x.isinf(), t.isinf())
    check(x.isfinite(), t.isfinite())


# ---- comparisons -----------------------------------------------------------------------------------

COMPARISONS = {"lt": operator.lt, "le": operator.le, "gt": operator.gt, "ge": operator.ge, "eq": operator.eq,
               "ne": operator.ne}


def small_values(shape, dtype, seed):
    """Values from a tiny range, so that equal pairs are common."""
    if dtype == lt.bool_:
        return random_array(shape, dtype, seed)
    lo = 0 if dtype == lt.uint8 else -2
    return np.random.default_rng(seed).integers(lo, 3, shape).astype(dtype.name)


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
@pytest.mark.parametrize("name", list(COMPARISONS))
def test_comparison(name, dtype):
    fn = COMPARISONS[name]
    a, b = small_values((3, 4), dtype, 16), small_values((3, 4), dtype, 17)
    (_, x, tx, y, ty), (_, x2, tx2, y2, ty2) = paired_layouts(a, b, every=2)
    out = fn(x, y)
    assert out.dtype == lt.bool_
    check(out, fn(tx, ty))
    check(getattr(x2, name)(y2), getattr(tx2, name)(ty2))


@pytest.mark.parametrize("dtype", [lt.bool_, lt.int8, lt.uint8, lt.int64, lt.float64], ids=str)
@pytest.mark.parametrize("name", list(COMPARISONS))
def test_comparison_with_scalar(name, dtype):
    fn = COMPARISONS[name]
    a = small_values((5,), dtype, 18)
    x, t = lt.asarray(a), torch.tensor(a)
    check(fn(x, 1), fn(t, 1))
    check(fn(1, x), fn(1, t))  # reflected: Python swaps to the mirrored comparison


def test_comparison_with_scalars_of_other_kinds():
    i = np.array([1, 2, 3], np.int32)
    x, t = lt.asarray(i), torch.tensor(i)
    check(x < 2.5, t < 2.5)
    check(x == 2.0, t == 2.0)
    check(x >= True, t >= True)
    f = lt.asarray([0.1, 0.2, 0.3])
    check(f == 0.1, torch.tensor([0.1, 0.2, 0.3]) == 0.1)  # 0.1 is rounded to float32 first, as torch
    check(lt.less([1, 5], 3), torch.tensor([1, 5]) < 3)
    check(lt.not_equal([1, 5], 5), torch.tensor([1, 5]) != 5)


def test_comparison_mixed_signedness():
    a = np.array([-1, 0, 100, -128], np.int8)
    b = np.array([255, 0, 99, 128], np.uint8)
    for fn in COMPARISONS.values():
        check(fn(lt.asarray(a), lt.asarray(b)), fn(torch.tensor(a), torch.tensor(b)))


# ---- bitwise and logical ops -----------------------------------------------------------------------

BITWISE = {"and": operator.and_, "or": operator.or_, "xor": operator.xor}


@pytest.mark.parametrize("dtype", [lt.bool_, *INT_DTYPES], ids=str)
@pytest.mark.parametrize("name", list(BITWISE))
def test_bitwise(name, dtype):
    fn = BITWISE[name]
    a, b = random_array((3, 4), dtype, 18), random_array((3, 4), dtype, 19)
    for kind, x, tx, y, ty in paired_layouts(a, b, every=2):
        check(fn(x, y), fn(tx, ty))
    x, t = lt.asarray(a), torch.tensor(a)
    scalar = True if dtype == lt.bool_ else 6
    check(fn(scalar, x), fn(scalar, t))


@pytest.mark.parametrize("dtype", [lt.bool_, *INT_DTYPES], ids=str)
def test_bitwise_not(dtype):
    for _, x, t in list(inputs((3, 4), dtype, 20))[:2]:
        check(~x, ~t)
        check(x.bitwise_not(), torch.bitwise_not(t))


def test_bitwise_negative_and_mixed():
    a = np.array([-1, -128, 127, 0x55], np.int8)
    b = np.array([0x0F, -1, -2, 0x33], np.int16)
    check(lt.asarray(a) & lt.asarray(b), torch.tensor(a) & torch.tensor(b))
    check(lt.asarray(a) ^ -1, torch.tensor(a) ^ -1)
    bools = np.array([True, False, True, False])
    check(lt.asarray(bools) | lt.asarray(a), torch.tensor(bools) | torch.tensor(a))
    check(lt.asarray(bools) & 3, torch.tensor(bools) & 3)


def test_bitwise_on_floats_raises():
    x = lt.asarray([1.0, 2.0])
    for fn in (lambda: x & x, lambda: x | 1, lambda: 1 ^ x, lambda: ~x, lambda: lt.asarray([1, 2]) & x):
        with pytest.raises(lt.DTypeError):
            fn()


LOGICAL = {"logical_and": torch.logical_and, "logical_or": torch.logical_or, "logical_xor": torch.logical_xor}


@pytest.mark.parametrize("dtype", [lt.bool_, lt.int8, lt.float32, lt.float64], ids=str)
@pytest.mark.parametrize("name", list(LOGICAL))
def test_logical(name, dtype):
    if dtype.is_float:
        a = np.array([[0.0, -0.0, NAN, 1.5], [0.0, 2.0, -INF, 0.0]], dtype.name)
        b = np.array([[0.0, 3.0, 0.0, NAN], [-1.0, 0.0, 0.0, 0.5]], dtype.name)
    else:
        a, b = small_values((2, 4), dtype, 21), small_values((2, 4), dtype, 22)
    for kind, x, tx, y, ty in paired_layouts(a, b, every=2):
        out = getattr(x, name)(y)
        assert out.dtype == lt.bool_
        check(out, LOGICAL[name](tx, ty))
    x, t = lt.asarray(a), torch.tensor(a)
    check(getattr(x, name)(0), LOGICAL[name](t, torch.tensor(0)))
    check(getattr(x, name)(2.5), LOGICAL[name](t, torch.tensor(2.5)))
    mixed = random_array((4,), lt.int64, 23)
    check(getattr(x, name)(lt.asarray(mixed)), LOGICAL[name](t, torch.tensor(mixed)))


@pytest.mark.parametrize("dtype", [lt.bool_, lt.int8, lt.uint8, lt.float32, lt.float64], ids=str)
def test_logical_not(dtype):
    arr = np.array([0.0, -0.0, NAN, 1.5, -INF], dtype.name) if dtype.is_float else small_values((5,), dtype, 24)
    for _, x, t in ((k, *layout(arr, k)) for k in ("contiguous", "flipped")):
        check(x.logical_not(), t.logical_not())
    check(lt.logical_not(arr), torch.logical_not(torch.tensor(arr)))


# ---- where and clip ---------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_where(dtype):
    cond = random_array((3, 4), lt.bool_, 25)
    a, b = random_array((3, 4), dtype, 26), random_array((3, 4), dtype, 27)
    c, tc = layout(cond, "transposed")
    for kind, x, tx, y, ty in paired_layouts(a, b, every=2):
        check(lt.where(c, x, y), torch.where(tc, tx, ty))
        check(x.where(c, y), tx.where(tc, ty))


def test_where_broadcasting_and_scalars():
    cond = np.array([[True], [False], [True]])
    a = random_array((1, 4), lt.float32, 28)
    c, tc, x, tx = lt.asarray(cond), torch.tensor(cond), lt.asarray(a), torch.tensor(a)
    check(lt.where(c, x, 0.5), torch.where(tc, tx, 0.5))
    check(lt.where(c, -1.0, x), torch.where(tc, -1.0, tx))
    check(lt.where(c, 1.0, 0), torch.where(tc, 1.0, 0))
    check(lt.where(c, 1, 0), torch.where(tc, 1, 0))
    check(lt.where(c, True, False), torch.where(tc, True, False))
    check(lt.where(True, x, 0.5), torch.where(torch.tensor(True), tx, 0.5))  # a Python bool condition
    i = np.array([1, 2, 3, 4], np.int32)
    check(lt.where(c, lt.asarray(i), 2.5), torch.where(tc, torch.tensor(i), 2.5))
    check(lt.where(c, lt.asarray(i), 7), torch.where(tc, torch.tensor(i), 7))
    i8, f64 = np.array([1, -2, 3, -4], np.int8), random_array((3, 1), lt.float64, 29)
    check(lt.where(c, lt.asarray(i8), lt.asarray(f64)), torch.where(tc, torch.tensor(i8), torch.tensor(f64)))


def test_where_condition_of_other_dtypes_and_lists():
    cond = np.array([0, 2, -1, 0], np.int64)
    x, y = np.array([1.0, 2.0, 3.0, 4.0], np.float32), np.array([-1.0, -2.0, -3.0, -4.0], np.float32)
    expected = torch.where(torch.tensor(cond) != 0, torch.tensor(x), torch.tensor(y))
    check(lt.where(lt.asarray(cond), lt.asarray(x), lt.asarray(y)), expected)
    check(lt.where([False, True, True, False], lt.asarray(x), lt.asarray(y)), expected)
    fcond = np.array([0.0, NAN, -0.5, -0.0], np.float32)
    check(lt.where(lt.asarray(fcond), lt.asarray(x), lt.asarray(y)), expected)


def test_where_of_a_condition_alone_is_nonzero():
    """NumPy's shorthand: `where(condition)` is `nonzero(condition)`."""
    cond = random_array((3, 4), lt.bool_, 31)
    got = lt.where(lt.asarray(cond))
    assert isinstance(got, tuple) and len(got) == 2
    for g, e in zip(got, np.where(cond), strict=True):
        check(g, e)
    with pytest.raises(TypeError, match="both x and y, or neither"):
        lt.where(lt.asarray(cond), 1.0)


def test_where_does_not_leak_nan_from_the_branch_not_taken():
    x = lt.asarray([4.0, -1.0, 0.0])
    out = lt.where(x > 0, x.sqrt(), 0.0)
    check(out, torch.tensor([2.0, 0.0, 0.0]))
    out = lt.where(x != 0, 1.0 / x, 0.0)
    check(out, torch.tensor([0.25, -1.0, 0.0]))


@pytest.mark.parametrize("dtype", [lt.int8, lt.int64, lt.uint8, lt.float32, lt.float64], ids=str)
def test_clip(dtype):
    for _, x, t in list(inputs((3, 4), dtype, 30))[::3]:
        check(x.clip(2, 20), t.clamp(2, 20))
        check(x.clip(min=5), t.clamp(min=5))
        check(x.clamp(max=5), t.clamp(max=5))
        check(x.clip(20, 5), t.clamp(20, 5))  # min > max: every element is max


def test_clip_with_tensor_bounds_and_promotion():
    arr = random_array((3, 4), lt.float32, 31)
    lo, hi = random_array((4,), lt.float32, 32, low=-3, high=0), random_array((3, 1), lt.float32, 33, low=0, high=3)
    x, t = lt.asarray(arr), torch.tensor(arr)
    check(x.clip(lt.asarray(lo), lt.asarray(hi)), torch.clamp(t, torch.tensor(lo), torch.tensor(hi)))
    check(lt.clip(arr, lt.asarray(lo)), torch.clamp(t, min=torch.tensor(lo)))
    i = np.array([1, 5, -3], np.int64)
    check(lt.asarray(i).clip(0.5, 2.5), torch.clamp(torch.tensor(i), 0.5, 2.5))
    check(lt.clamp(lt.asarray(i), 0, 2), torch.clamp(torch.tensor(i), 0, 2))
    nan = np.array([NAN, 1.0, -5.0], np.float32)
    check(lt.asarray(nan).clip(-1.0, 0.5), torch.tensor(nan).clamp(-1.0, 0.5))
    unclipped = lt.clip(x)  # no bounds: the values, a new tensor (the array API's rule; torch raises)
    assert unclipped is not x
    check(unclipped, t)


def test_clip_with_tensor_bounds_differentiates_as_torch_clamp_at_ties():
    # found by the fuzzer: through maximum and minimum a tie (x == min, x == max, min == max) split the
    # gradient between x and the bound; torch.clamp gives it to x, and to max where min > max
    x = np.array([1.0, 0.0, 2.0, -1.0, 3.0, 1.0, 1.0, 2.0, 0.0, np.nan, 1.0], dtype=np.float32)
    lo = np.array([0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 2.0, 2.0, 2.0, 0.0, np.nan], dtype=np.float32)
    hi = np.array([2.0, 2.0, 2.0, 2.0, 2.0, 1.0, 0.0, 0.0, 0.0, 2.0, 2.0], dtype=np.float32)
    w = np.arange(1, 12, dtype=np.float32)
    for bounds in ((0, 1), (0, None), (None, 1)):
        ours = [lt.asarray(a).requires_grad_() for a in (x, lo, hi)]
        theirs = [torch.tensor(a, requires_grad=True) for a in (x, lo, hi)]
        pick = [None if b is None else i + 1 for i, b in enumerate(bounds)]
        (ours[0].clip(*[None if p is None else ours[p] for p in pick]) * lt.asarray(w)).sum().backward()
        (torch.clamp(theirs[0], *[None if p is None else theirs[p] for p in pick]) * torch.tensor(w)).sum().backward()
        for o, t in zip(ours, theirs):
            check(o.grad if o.grad is not None else lt.zeros(11), t.grad if t.grad is not None else torch.zeros(11))


# ---- broadcasting, 0-d and size-0 shapes ----------------------------------------------------------

BROADCAST_SHAPES = [((3, 1), (1, 4)), ((5,), (2, 3, 5)), ((2, 1, 4), (3, 1)), ((), (2, 3)), ((1,), (4,)),
                    ((2, 3), (2, 3)), ((1, 1), ()), ((4, 1, 1), (1, 2, 3))]


@pytest.mark.parametrize("dtype", [lt.float32, lt.float64, lt.int32], ids=str)
@pytest.mark.parametrize("sa,sb", BROADCAST_SHAPES, ids=str)
def test_broadcasting(sa, sb, dtype):
    a, b = random_array(sa, dtype, 34), random_array(sb, dtype, 35)
    x, y, tx, ty = lt.asarray(a), lt.asarray(b), torch.tensor(a), torch.tensor(b)
    check(x + y, tx + ty)
    check(y * x, ty * tx)
    check(x - y, tx - ty)
    check(x < y, tx < ty)
    cond = random_array(sb, lt.bool_, 36)
    check(lt.where(lt.asarray(cond), x, y), torch.where(torch.tensor(cond), tx, ty))
    assert lt.broadcast_shapes(sa, sb) == tuple(torch.broadcast_shapes(sa, sb))


def test_broadcasting_noncontiguous():
    b = random_array((3,), lt.float64, 38)
    for _, x, tx in inputs((4, 3), lt.float64, 37):
        for kind in ("strided", "flipped"):
            y, ty = layout(b, kind)
            check(x * y - 1, tx * ty - 1)


@pytest.mark.parametrize("sa,sb", [((3,), (4,)), ((2, 3), (3, 2)), ((2, 0), (3,)), ((0,), (2,))], ids=str)
def test_broadcasting_mismatch_raises(sa, sb):
    x, y = lt.zeros(sa), lt.zeros(sb)
    with pytest.raises(lt.ShapeError):
        x + y
    with pytest.raises(ValueError):  # ShapeError is a ValueError
        lt.where(lt.zeros(sa, dtype=lt.bool_), x, y)


@pytest.mark.parametrize("dtype", [lt.int32, lt.float32, lt.bool_], ids=str)
def test_zero_dim(dtype):
    a, b = random_array((), dtype, 39), random_array((), dtype, 40)
    x, y, tx, ty = lt.asarray(a), lt.asarray(b), torch.tensor(a), torch.tensor(b)
    assert x.shape == ()
    check(x * y, tx * ty)
    check(x + y, tx + ty)
    check(x == y, tx == ty)
    check(x.exp(), tx.exp())
    check(x.logical_not(), tx.logical_not())
    check(lt.where(x != y, x, y), torch.where(tx != ty, tx, ty))
    row = random_array((3,), dtype, 41)
    check(x + lt.asarray(row), tx + torch.tensor(row))
    if dtype != lt.bool_:
        check(-x, -tx)
        check(x * 2, tx * 2)
        check(x.maximum(y), torch.maximum(tx, ty))


@pytest.mark.parametrize("shape", [(0,), (2, 0, 3)], ids=str)
@pytest.mark.parametrize("dtype", [lt.int64, lt.float32, lt.bool_], ids=str)
def test_size_zero(shape, dtype):
    a = random_array(shape, dtype, 42)
    x, t = lt.asarray(a), torch.tensor(a)
    check(x + x, t + t)
    check(x * 2, t * 2)
    check(x == 1, t == 1)
    check(x.sqrt(), t.sqrt())
    check(x / x, t / t)
    check(lt.where(x != 0, x, x), torch.where(t != 0, t, t))
    check(x.logical_not(), t.logical_not())
    check(x.isnan(), t.isnan())
    if dtype != lt.bool_:
        check(-x, -t)
        check(x // x, t // t)
        check(x.maximum(x), torch.maximum(t, t))
        check(x.clip(0, 1), t.clamp(0, 1))


@pytest.mark.parametrize("sa,sb", [((2, 0, 3), (3,)), ((0,), (1,)), ((2, 0, 3), (1, 1, 1)), ((0, 1), (1, 4)),
                                   ((2, 0, 3), ())], ids=str)
def test_size_zero_broadcasting(sa, sb):
    a, b = random_array(sa, lt.float32, 43), random_array(sb, lt.float32, 44)
    x, y, tx, ty = lt.asarray(a), lt.asarray(b), torch.tensor(a), torch.tensor(b)
    check(x + y, tx + ty)
    check(y * x, ty * tx)
    check(x > y, tx > ty)


def test_ops_chain_in_one_kernel_match_torch():
    """A longer fused expression over non-contiguous inputs, mixing dtypes and scalars."""
    for (_, x, tx), (_, y, ty) in zip(inputs((3, 4), lt.float32, 45), inputs((3, 4), lt.int32, 46)):
        got = ((x * 2 - y) / 3).exp().clip(0.1, 4) + (y % 3 == 0) * x.abs().sqrt()
        exp = ((tx * 2 - ty) / 3).exp().clamp(0.1, 4) + (ty % 3 == 0) * tx.abs().sqrt()
        check(got, exp)


def test_binary_results_of_constant_tensors():
    """zeros/ones (constants folded into the kernel) combine with the same dtypes and values as torch."""
    pairs = [(lt.int8, lt.uint8), (lt.bool_, lt.bool_), (lt.int32, lt.int64), (lt.uint8, lt.float64)]
    for da, db in pairs:
        x, y = lt.zeros(2, dtype=da), lt.ones(2, dtype=db)
        tx, ty = torch.zeros(2, dtype=to_torch_dtype(da)), torch.ones(2, dtype=to_torch_dtype(db))
        for fn in (operator.add, operator.mul, operator.truediv, operator.lt):
            check(fn(x, y), fn(tx, ty))


# ---- positive, logaddexp, real / imag / conj, isclose / allclose ------------------------------------


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_positive_is_a_new_tensor_of_the_same_values(dtype):
    for kind, x, t in inputs((3, 4), dtype, seed=90):
        for got in (lt.positive(x), +x, x.positive()):
            assert got is not x
            check(got, t if dtype == lt.bool_ else torch.positive(t))
    x = lt.asarray([1, 2])
    y = +x
    y += 1  # rebinds y, not x
    check(x, np.array([1, 2]))


@pytest.mark.parametrize("dtype", FLOAT_DTYPES + [lt.int32, lt.uint8], ids=str)
@pytest.mark.parametrize("shapes", [((3, 4), (3, 4)), ((3, 1), (4,)), ((), (2, 3)), ((0, 3), (1, 3))], ids=str)
def test_logaddexp(dtype, shapes):
    arrays = [random_array(s, dtype, seed=91 + i, low=-30, high=30) for i, s in enumerate(shapes)]
    for kind in LAYOUTS:
        (x, tx), (y, ty) = layout(arrays[0], kind), layout(arrays[1], "contiguous")
        if not dtype.is_float:  # torch has no integer logaddexp; lazytensor's is the float32 one
            tx, ty = tx.float(), ty.float()
        check(lt.logaddexp(x, y), torch.logaddexp(tx, ty))
        check(x.logaddexp(y), torch.logaddexp(tx, ty))


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
def test_logaddexp_special_values_and_scalars(dtype):
    grid = np.array(SPECIALS + [1e30, -1e30, 700.0], dtype.name)
    a, b = np.meshgrid(grid, grid)
    got = lt.logaddexp(lt.asarray(a), lt.asarray(b))
    check(got, torch.logaddexp(torch.tensor(a), torch.tensor(b)))
    two = torch.tensor(2.0, dtype=to_torch_dtype(dtype))
    check(lt.logaddexp(lt.asarray(a), 2.0), torch.logaddexp(torch.tensor(a), two))
    with np.errstate(invalid="ignore"):  # NumPy warns of its NaN inputs
        check(lt.logaddexp(0.5, lt.asarray(b)), np.logaddexp(np.array(0.5, b.dtype), b))


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_real_imag_conj_of_real_tensors(dtype):
    for kind, x, t in inputs((2, 3), dtype, seed=93):
        arr = t.numpy()
        check(lt.real(x), np.real(arr))
        check(lt.conj(x), np.conj(arr) if dtype != lt.bool_ else arr)
        check(lt.imag(x), np.imag(arr))
        check(x.real(), torch.real(t))
        assert lt.real(x) is not x and lt.conj(x) is not x
    check(lt.imag(lt.zeros(0, 2)), np.zeros((0, 2), np.float32))


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
@pytest.mark.parametrize("tol", [{}, {"rtol": 0.1, "atol": 0.0}, {"rtol": 0.0, "atol": 1.0}], ids=str)
def test_isclose(dtype, tol):
    a = random_array((4, 5), dtype, seed=94)
    b = random_array((4, 5), dtype, seed=95)
    b = np.where(np.random.default_rng(96).random((4, 5)) < 0.3, a, b).astype(a.dtype)  # some equal
    for kind in LAYOUTS:
        (x, tx), (y, ty) = layout(a, kind), layout(b, kind)
        check(lt.isclose(x, y, **tol), np.isclose(a, b, **tol))
        if dtype.is_float:
            check(x.isclose(y, **tol), torch.isclose(tx, ty, **tol))
        check(lt.isclose(x, y[0], **tol), np.isclose(a, b[0], **tol))  # broadcasting
    assert lt.allclose(lt.asarray(a), lt.asarray(a), **tol) is True
    assert lt.allclose(lt.asarray(a), lt.asarray(b), **tol) == bool(np.allclose(a, b, **tol))


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
@pytest.mark.parametrize("equal_nan", [False, True])
def test_isclose_special_values(dtype, equal_nan):
    grid = np.array(SPECIALS + [1.0 + 1e-6, 1e-9], dtype.name)
    a, b = np.meshgrid(grid, grid)
    got = lt.isclose(lt.asarray(a), lt.asarray(b), equal_nan=equal_nan)
    check(got, torch.isclose(torch.tensor(a), torch.tensor(b), equal_nan=equal_nan))
    check(got, np.isclose(a, b, equal_nan=equal_nan))
    assert lt.allclose(lt.asarray([np.nan, 1.0]), lt.asarray([np.nan, 1.0]), equal_nan=equal_nan) == equal_nan


def test_isclose_of_ints_does_not_wrap_and_takes_scalars():
    a, b = np.array([-128, 127, 100], np.int8), np.array([127, -128, 101], np.int8)
    check(lt.isclose(lt.asarray(a), lt.asarray(b), atol=2), np.isclose(a, b, atol=2))
    check(lt.isclose(lt.asarray([1.0, 1.1]), 1.0, rtol=0.05), np.isclose(np.float32([1.0, 1.1]), 1.0, rtol=0.05))
    check(lt.isclose(lt.asarray(np.float32(2.0)), lt.asarray(np.float32(2.0))), np.isclose(2.0, 2.0))
    check(lt.isclose(lt.zeros(0), lt.zeros(0)), np.zeros(0, bool))


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_nan_to_num(dtype):
    base = random_array((4, 6), dtype, seed=97)
    if dtype.is_float:
        base.reshape(-1)[:6] = [np.nan, np.inf, -np.inf, -0.0, np.nan, np.inf]
    for kind in LAYOUTS:
        x, t = layout(base, kind)
        check(lt.nan_to_num(x), np.nan_to_num(base))
        check(x.nan_to_num(), torch.nan_to_num(t))
        if dtype.is_float:
            check(x.nan_to_num(1.5, posinf=7.0, neginf=-2.0), torch.nan_to_num(t, 1.5, posinf=7.0, neginf=-2.0))
            check(lt.nan_to_num(x, copy=False, nan=-1.0), np.nan_to_num(base, copy=True, nan=-1.0))
    check(lt.nan_to_num(lt.asarray(np.float32(np.nan))), np.nan_to_num(np.float32(np.nan)))
    check(lt.nan_to_num(lt.zeros(0, 3)), np.zeros((0, 3), np.float32))


def test_nan_to_num_passes_the_gradient_where_it_keeps_the_value():
    arr = np.array([1.0, np.nan, np.inf, -2.0, -np.inf])
    x, t = lt.asarray(arr).requires_grad_(), torch.tensor(arr, requires_grad=True)
    (x.nan_to_num() * lt.arange(5.0)).sum().backward()
    (t.nan_to_num() * torch.arange(5.0)).sum().backward()
    check(x.grad, t.grad)


def test_cross_at_the_top_level_as_numpys():
    a, b = random_array((5, 3), lt.float32, seed=98), random_array((5, 3), lt.float32, seed=99)
    check(lt.cross(lt.asarray(a), lt.asarray(b)), np.cross(a, b))
    check(lt.cross(lt.asarray(a.T.copy()), lt.asarray(b.T.copy()), axis=0), np.cross(a.T, b.T, axis=0))


# ---- inverse trigonometric and hyperbolic functions, hypot, the sign bit, shifts ----------------------

COMPOSITES = ["asin", "acos", "atan", "asinh", "acosh", "atanh", "sinh", "cosh"]  # unary, composed of IR ops


def composite_arguments(name: str, dtype: np.dtype, n: int = 2048, seed: int = 0) -> np.ndarray:
    """Finite arguments over the whole range of `dtype`, densest where `name` is interesting: its domain, the
    ends of it (1 - 10**-k for the inverse functions), small magnitudes and, for sinh and cosh, overflow."""
    rng = np.random.default_rng(seed)
    fi = np.finfo(dtype)
    magnitudes = rng.choice([-1.0, 1.0], n) * 10.0 ** rng.uniform(np.log10(float(fi.smallest_subnormal)),
                                                                  np.log10(float(fi.max)), n)
    small = rng.choice([-1.0, 1.0], n) * 10.0 ** rng.uniform(-20, 0, n)
    low, high = FLOAT_UNARY[name][1]
    domain = rng.uniform(low, high, n)
    edges = rng.choice([-1.0, 1.0], n) * (1 - 10.0 ** rng.uniform(-17, 0, n)) if high == 1 else \
        1 + 10.0 ** rng.uniform(-17, 1, n) if name == "acosh" else \
        rng.choice([-1.0, 1.0], n) * rng.uniform(0.9, 1.0, n) * np.log(float(fi.max)) * 1.01
    with np.errstate(over="ignore"):
        x = np.concatenate([magnitudes, small, domain, edges, [0.0, -0.0, 1.0, -1.0, 2.0]]).astype(dtype)
    return x[np.isfinite(x)]


def assert_within_ulps_of(got: np.ndarray, reference: np.ndarray, dtype: np.dtype, ulps: float, what: str) -> None:
    err = ulp_error(got, reference, dtype)
    worst = int(np.argmax(err))
    assert err[worst] <= ulps, f"{what}: {err[worst]:.3f} ulps at element {worst}: {got[worst]!r}, reference " \
                               f"{reference[worst]!r}"


# float32: computed in float64 and rounded once (correctly rounded but for rare double roundings), on either
# backend. float64: the bound of every backend: the LLVM math library's are tighter (tests/test_mathlib.py),
# Triton's legalized float64 expm1 and log1p are within 2 ulps, and a composition adds about one.
COMPOSITE_ULPS = {np.float32: 0.51, np.float64: 3.0}


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=lambda d: d.__name__)
@pytest.mark.parametrize("name", COMPOSITES + ["atan2", "hypot"])
def test_math_functions_within_their_ulp_bounds(name, dtype):
    if dtype == np.float64 and not LONGDOUBLE_IS_EXTENDED:
        pytest.skip("float64 references need a long double wider than double")
    wide = np.float64 if dtype == np.float32 else np.longdouble
    with np.errstate(all="ignore"):
        if name in COMPOSITES:
            x = composite_arguments(name, dtype)
            got = getattr(lt.asarray(x), name)().numpy()
            want = NUMPY_NAMES[name](x.astype(wide))
        else:
            y = composite_arguments("atan", dtype)
            x = np.roll(y, 5) * np.random.default_rng(1).choice([1.0, 1e-3, 1e3], y.size).astype(dtype)
            got = getattr(lt.asarray(y), name)(lt.asarray(x)).numpy()
            want = NUMPY_NAMES[name](y.astype(wide), x.astype(wide))
    assert_within_ulps_of(got, want, dtype, COMPOSITE_ULPS[dtype], name)


NUMPY_NAMES = {"asin": np.arcsin, "acos": np.arccos, "atan": np.arctan, "asinh": np.arcsinh, "acosh": np.arccosh,
               "atanh": np.arctanh, "sinh": np.sinh, "cosh": np.cosh, "atan2": np.arctan2, "hypot": np.hypot}


@pytest.mark.parametrize("dtype", HALF_DTYPES, ids=str)
@pytest.mark.parametrize("name", COMPOSITES + FLOAT_BINARY)
def test_math_functions_of_16_bit_floats_round_once(name, dtype):
    """Computed in float32 and rounded once where stored: torch's float32 result rounded to the dtype (the
    bit functions, exact in any dtype, against torch's own in the dtype)."""
    low, high = FLOAT_UNARY[name][1] if name in COMPOSITES else (-4, 4)
    a = torch.tensor(random_array((4, 5), lt.float32, 60, low=low, high=high)).to(to_torch_dtype(dtype))
    b = torch.tensor(random_array((5,), lt.float32, 61, low=-4, high=4)).to(to_torch_dtype(dtype))
    x, y = lt.asarray(a.float().numpy()).cast(dtype), lt.asarray(b.float().numpy()).cast(dtype)
    tfn = getattr(torch, name)
    if name in COMPOSITES:
        check(getattr(x, name)(), tfn(a.float()).to(a.dtype))
    elif name in EXACT:
        check_signs(getattr(x, name)(y).float(), tfn(a, b).float(), exact=True)
    else:
        check(getattr(x, name)(y), tfn(a.float(), b.float()).to(a.dtype))
    assert getattr(lt, name)(x, y).dtype == dtype if name in FLOAT_BINARY else getattr(lt, name)(x).dtype == dtype


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
@pytest.mark.parametrize("name", FLOAT_BINARY)
def test_float_binary_functions(name, dtype):
    a, b = random_array((3, 4), dtype, 62), random_array((3, 4), dtype, 63)
    exact = name in EXACT
    for _, x, tx, y, ty in paired_layouts(a, b, every=2):
        check_signs(getattr(lt, name)(x, y), getattr(torch, name)(tx, ty), exact)
        check_signs(getattr(x, name)(y), getattr(torch, name)(tx, ty), exact)
    x, t = lt.asarray(a), torch.tensor(a)
    for scalar in (2.5, -3, 0.0):  # weak Python scalars keep the tensor's dtype
        check_signs(getattr(x, name)(scalar), getattr(torch, name)(t, torch.tensor(scalar, dtype=t.dtype)), exact)


@pytest.mark.parametrize("name", FLOAT_BINARY)
def test_float_binary_functions_promote_and_broadcast(name):
    """Integers and bools promote to the default float (torch takes only floats for some); mixed floats to the
    wider; shapes broadcast, 0-d and size-0 ones included."""
    i, f64 = random_array((2, 3), lt.int32, 64), random_array((3,), lt.float64, 65)
    tfn = getattr(torch, name)
    check_signs(getattr(lt, name)(lt.asarray(i), lt.asarray(i[::-1].copy())),
                tfn(torch.tensor(i).float(), torch.tensor(i[::-1].copy()).float()))
    check_signs(getattr(lt, name)(lt.asarray(i > 0), lt.asarray(f64)), tfn(torch.tensor(i > 0).double(),
                                                                          torch.tensor(f64)))
    f32 = random_array((2, 1), lt.float32, 66)
    check_signs(getattr(lt, name)(lt.asarray(f32), lt.asarray(f64)), tfn(torch.tensor(f32).double(), torch.tensor(f64)))
    for sa, sb in [((3, 1), (1, 4)), ((), (2, 3)), ((2, 0, 3), (3,)), ((0,), (1,))]:
        a, b = random_array(sa, lt.float32, 67), random_array(sb, lt.float32, 68)
        check_signs(getattr(lt, name)(lt.asarray(a), lt.asarray(b)), tfn(torch.tensor(a), torch.tensor(b)))


@pytest.mark.parametrize("name", COMPOSITES)
def test_composites_on_0d_size_0_and_views(name):
    low, high = FLOAT_UNARY[name][1]
    for shape in [(), (0,), (2, 0, 3)]:
        a = random_array(shape, lt.float64, 69, low=low, high=high)
        check_signs(getattr(lt, name)(lt.asarray(a)), getattr(torch, name)(torch.tensor(a)))
    for kind, x, t in inputs((3, 4), lt.float32, seed=70, low=low, high=high):
        if kind in ("transposed", "strided"):
            check(getattr(lt, name)(x), getattr(torch, name)(t))
    numpy_name = "arc" + name[1:] if name.startswith("a") else name  # the alias: arcsin for asin
    check(getattr(lt, numpy_name)([0.5]), getattr(torch, name)(torch.tensor([0.5])))


NEGATIVE_NAN = float(np.copysign(np.nan, -1.0))
SIGN_VALUES = [NAN, NEGATIVE_NAN, INF, -INF, 0.0, -0.0, 1.5, -1.5, 5e-324, -5e-324, 1e-40, -1e-40]


@pytest.mark.parametrize("dtype", FLOAT_DTYPES + HALF_DTYPES, ids=str)
def test_signbit(dtype):
    """The sign bit, of -0.0 and of NaNs too (NumPy says; torch agrees but makes no negative NaNs in tests)."""
    values = np.array(SIGN_VALUES, np.float64)
    x = lt.asarray(values).cast(dtype)
    np.testing.assert_array_equal(x.signbit().numpy(), np.signbit(values))
    # computed in the same kernel; the sign of a NaN that arithmetic makes is not specified (IEEE 754 6.3: a GPU
    # makes the canonical, positive NaN of x * 2)
    number = ~np.isnan(values)
    np.testing.assert_array_equal(lt.signbit(x * 2).numpy()[number], np.signbit(values)[number])
    for kind, v, t in inputs((3, 4), lt.float64, seed=71):
        if kind != "contiguous":
            check(v.cast(dtype).signbit(), torch.signbit(t.to(to_torch_dtype(dtype))))


@pytest.mark.parametrize("dtype", INT_DTYPES + [lt.bool_], ids=str)
def test_signbit_of_integers_and_bools(dtype):
    arr = random_array((3, 4), dtype, 72)
    check(lt.signbit(lt.asarray(arr)), torch.signbit(torch.tensor(arr)))


@pytest.mark.parametrize("dtype", FLOAT_DTYPES + [lt.float16], ids=str)
def test_copysign_takes_the_sign_bit_of_nans_and_zeros(dtype):
    """|x| with y's sign bit, NaN magnitudes and NaN signs included (the array API's special cases)."""
    values = np.array(SIGN_VALUES, dtype.name)
    x, y = values[:, None], values[None, :]
    got = lt.copysign(lt.asarray(x), lt.asarray(y)).numpy()
    want = np.copysign(x, y)
    np.testing.assert_array_equal(got, want)  # NaN where NaN
    np.testing.assert_array_equal(np.signbit(got), np.signbit(want))


@pytest.mark.parametrize("dtype", FLOAT_DTYPES + [lt.float16], ids=str)
def test_nextafter_steps_to_the_next_float(dtype):
    """One ulp toward y, C's answers (torch's; NumPy's float16 one gives x where x == y): through zero to the
    smallest subnormal, from the largest float to infinity and back, y itself where x == y (signed zeros:
    nextafter(-0.0, 0.0) is 0.0, the array API's special case), NaN for NaN."""
    fi = np.finfo(dtype.name)
    values = np.array([NAN, INF, -INF, 0.0, -0.0, 1.0, -1.0, float(fi.max), -float(fi.max), float(fi.tiny),
                       float(fi.smallest_subnormal), -float(fi.smallest_subnormal), 3.0], dtype.name)
    x, y = values[:, None], values[None, :]
    check_signs(lt.nextafter(lt.asarray(x), lt.asarray(y)), torch.nextafter(torch.tensor(x), torch.tensor(y)), True)
    if dtype != lt.float16:
        with np.errstate(over="ignore"):  # NumPy warns of the step to infinity
            check_signs(lt.asarray(x).nextafter(lt.asarray(y)), torch.tensor(np.nextafter(x, y)), True)


@pytest.mark.parametrize("dtype", INT_DTYPES, ids=str)
def test_shifts_follow_numpy_for_every_count(dtype):
    """Counts past the width and negative ones shift every bit out (0, or -1 for a negative value shifted
    right), as NumPy and torch; in range, C's shifts (arithmetic right shifts of signed values)."""
    info = np.iinfo(dtype.name)
    values = np.array([v for v in (info.min, info.min + 1, -100, -7, -1, 0, 1, 7, 100, info.max)
                       if info.min <= v <= info.max], dtype.name)
    counts = np.array([c for c in range(-3, info.bits + 4) if info.min <= c <= info.max] + [info.max], dtype.name)
    x, n = values[:, None], counts[None, :]
    for name, numpy_fn, operator_fn in (("bitwise_left_shift", np.left_shift, operator.lshift),
                                        ("bitwise_right_shift", np.right_shift, operator.rshift)):
        want = numpy_fn(x, n)
        check(getattr(lt, name)(lt.asarray(x), lt.asarray(n)), want)
        check(operator_fn(lt.asarray(x), lt.asarray(n)), want)
        inside = (n >= 0) & (n < info.bits)
        np.testing.assert_array_equal(want[:, inside[0]], getattr(torch, name)(torch.tensor(x), torch.tensor(
            n[:, inside[0]])).numpy())
        for shift in (0, 3, info.bits - 1):  # Python ints: weak, the tensor's dtype
            check(operator_fn(lt.asarray(values), shift), numpy_fn(values, np.array(shift, dtype.name)))


def test_shift_operators_reflect_promote_and_update_in_place():
    a = np.array([1, -5, 100, 7], np.int8)
    x, t = lt.asarray(a), torch.tensor(a)
    check(3 << x.abs(), 3 << t.abs())
    check(-100 >> lt.asarray(np.array([0, 1, 7, 8], np.int64)), np.right_shift(np.int64(-100), [0, 1, 7, 8]))
    wide = lt.asarray(a) << lt.asarray(np.array([1, 2, 3, 4], np.int32))
    assert wide.dtype == lt.int32
    check(wide, torch.tensor(a) << torch.tensor([1, 2, 3, 4], dtype=torch.int32))
    y = lt.asarray(a)
    alias = y
    y <<= 2
    y >>= 1
    assert y is alias and y.dtype == lt.int8
    check(y, (t << 2) >> 1)
    check(lt.asarray(np.array([200, 1], np.uint8)) >> 7, np.array([1, 0], np.uint8))  # logical: unsigned


@pytest.mark.parametrize("a,b", [([1, 2], 1.5), ([1.0], 1), ([True], np.array([True]))], ids=["float", "float array",
                                                                                          "bools"])
def test_shifts_need_integers(a, b):
    """Floats and two bools are refused; a bool and an integer promote to the integer (NumPy's `True << 1`)."""
    x, y = lt.asarray(a), lt.asarray(b) if isinstance(b, np.ndarray) else b
    with pytest.raises(lt.DTypeError, match="shifts need integer tensors"):
        x << y
    with pytest.raises(lt.DTypeError):
        lt.bitwise_right_shift(x, y)
    check(lt.asarray([True, False]) << 1, np.array([True, False]) << 1)


SCALAR_FORMS = {
    "add": lambda x, s: x + s, "radd": lambda x, s: s + x, "sub": lambda x, s: x - s, "rsub": lambda x, s: s - x,
    "mul": lambda x, s: x * s, "rmul": lambda x, s: s * x, "div": lambda x, s: x / s, "rdiv": lambda x, s: s / x,
    "pow": lambda x, s: x ** s, "rpow": lambda x, s: s ** x, "floordiv": lambda x, s: x // s,
    "mod": lambda x, s: x % s, "lt": lambda x, s: x < s, "gt": lambda x, s: x > s, "ge": lambda x, s: x >= s,
    "eq": lambda x, s: x == s, "maximum": lambda x, s: x.maximum(s) if isinstance(x, lt.Tensor) else torch.maximum(
        x, torch.tensor(s, dtype=x.dtype)),
}


@pytest.mark.parametrize("form", sorted(SCALAR_FORMS))
@pytest.mark.parametrize("scalar", [2, -1.5, 0.75])
@pytest.mark.parametrize("dtype", [lt.float32, lt.float64, lt.float16])
def test_a_float_tensor_and_a_python_number_match_torch_with_gradients(form, scalar, dtype):
    """The commonest op of a training step (`_binary`'s own path for it): each operator, either side, an int or
    a float, values and dtype as torch's, and the gradient through it."""
    f = SCALAR_FORMS[form]
    arr = random_array((3, 5), dtype, low=0.5, high=3)
    x = lt.asarray(arr).requires_grad_()
    t = torch.tensor(arr, requires_grad=True)
    check(f(x, scalar), f(t, scalar))
    if form not in ("lt", "gt", "ge", "eq", "floordiv", "mod"):
        f(x, scalar).sum().backward()
        f(t, scalar).sum().backward()
        check(x.grad, t.grad)


def test_a_python_number_on_an_empty_or_zero_dim_float_tensor():
    for shape in [(0, 3), ()]:
        x = lt.asarray(np.ones(shape, np.float32))
        check(x * 2 + 1.5, np.ones(shape, np.float32) * 2 + 1.5)


def test_a_python_number_operand_has_its_ops_user_line():
    """The scalar's node and its op's are made in one user call: both name that line (`lt.explain` shows each
    node's), which is found once for both."""
    import inspect
    x = lt.asarray(np.ones(4, np.float32))
    y = x * 3.0
    line = inspect.currentframe().f_lineno - 1
    scalar = y.node.srcs[1]
    assert scalar.op is Op.SCALAR and scalar.arg == 3.0
    assert y.node.origin == scalar.origin == f"{__file__}:{line}"


@pytest.mark.parametrize("form", ["add", "sub", "mul", "div", "pow", "maximum", "lt", "gt"])
def test_two_float_tensors_of_one_shape_match_torch_with_gradients(form):
    """`_binary`'s own path for two float tensors of one dtype and shape: values and dtype as torch's, either side
    requiring grad, and `greater` (a less-than with its operands swapped) in the order written."""
    ops = {"add": operator.add, "sub": operator.sub, "mul": operator.mul, "div": operator.truediv,
           "pow": operator.pow, "maximum": lambda a, b: a.maximum(b) if isinstance(a, lt.Tensor) else torch.maximum(a, b),
           "lt": operator.lt, "gt": operator.gt}
    f = ops[form]
    a, b = random_array((4, 3), lt.float32, seed=1, low=0.5, high=2), random_array((4, 3), lt.float32, seed=2)
    for needs in [(True, False), (False, True), (True, True)]:
        x, y = lt.asarray(a).requires_grad_(needs[0]), lt.asarray(b).requires_grad_(needs[1])
        s, t = torch.tensor(a, requires_grad=needs[0]), torch.tensor(b, requires_grad=needs[1])
        check(f(x, y), f(s, t))
        if form not in ("lt", "gt"):
            f(x, y).sum().backward()
            f(s, t).sum().backward()
            for got, want in ((x, s), (y, t)):
                assert (got.grad is None) == (want.grad is None)
                if want.grad is not None:
                    check(got.grad, want.grad)


# ---- NumPy's elementwise functions of lazytensor's ops (lazytensor/ufuncs.py) ----------------------------------

UFUNC_SPECIALS = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -2.5, 7.0, 1e-30, -1e30])
UNARY_UFUNCS = ["fabs", "deg2rad", "rad2deg", "degrees", "radians", "cbrt", "sinc", "isposinf", "isneginf"]
BINARY_UFUNCS = ["fmax", "fmin", "fmod", "heaviside", "logaddexp2", "float_power", "mod", "true_divide", "power"]
FLOAT_RESULTS = {"fabs", "deg2rad", "rad2deg", "degrees", "radians", "cbrt", "sinc", "heaviside", "logaddexp2",
                 "true_divide"}


def as_lazytensors(name: str, expected, dtype: lt.DType):
    """NumPy's result in lazytensor's dtype: a float function of integers gives the default float (NumPy's
    float64); 16-bit floats compare as NumPy's float32 results rounded."""
    if name in FLOAT_RESULTS and not dtype.is_float:
        return np.asarray(expected).astype(np.float32)
    return expected


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("dtype", [lt.float32, lt.float64, lt.int32], ids=str)
def test_numpys_elementwise_functions_match_numpy(dtype):
    arr = random_array((3, 4), dtype, seed=21)
    other = random_array((4,), dtype, seed=22)  # broadcast against arr
    if dtype.is_float:
        arr[0] = UFUNC_SPECIALS[:4].astype(dtype.name)
        arr[1] = UFUNC_SPECIALS[4:8].astype(dtype.name)
        other[:] = UFUNC_SPECIALS[[1, 0, 4, 9]].astype(dtype.name)
    elif dtype.is_int:
        other[other == 0] = 3  # NumPy's integer fmod, mod by 0 warns; lazytensor's is 0, as NumPy's result
    x, a = layout(arr, "flipped", oracle="numpy")  # contiguous tensors: tests/test_interop.py's cases
    for name in UNARY_UFUNCS:
        got = getattr(lt, name)(x)
        want = as_lazytensors(name, getattr(np, name)(a), dtype)
        check(got, want, rtol=2e-7 if got.dtype == lt.float32 else 4e-16)  # cbrt and sinc: an ulp or so
    for name in BINARY_UFUNCS:
        if name == "power" and dtype.is_int:
            continue
        want = as_lazytensors(name, getattr(np, name)(a, other), dtype)
        check(getattr(np, name)(x, other), want, rtol=2e-7 if dtype == lt.float32 else None)
    frac, whole = lt.modf(x)
    want_frac, want_whole = np.modf(a)
    check(frac, as_lazytensors("fabs", want_frac, dtype))
    check(whole, as_lazytensors("fabs", want_whole, dtype))
    assert np.array_equal(np.signbit(frac.numpy()), np.signbit(want_frac))
    exponents = np.array([3, -1, 0, 200], np.int32)
    check(lt.ldexp(x, lt.asarray(exponents)), as_lazytensors("fabs", np.ldexp(a, exponents), dtype))
    check(lt.fmax(2.5, lt.asarray(np.float32(np.nan))), np.fmax(np.float32(2.5), np.float32(np.nan)))
    empty = lt.zeros((0, 4), dtype=dtype)
    assert lt.fmin(empty, lt.asarray(other)).shape == (0, 4) and lt.cbrt(lt.asarray(arr[0, 0])).shape == ()


def test_fmod_of_integers_keeps_the_dividends_sign_and_extremes():
    a = np.array([-7, 7, -7, 7, -128, 127, 0], np.int8)
    b = np.array([2, -2, -2, 2, -1, 5, 3], np.int8)
    check(lt.fmod(lt.asarray(a), lt.asarray(b)), np.fmod(a, b))
    u = np.array([7, 200, 0], np.uint8)
    check(lt.fmod(lt.asarray(u), lt.asarray(np.array([2, 7, 5], np.uint8))), np.fmod(u, np.array([2, 7, 5], np.uint8)))
    big = np.array([1e300, 3.0, -5.5e-310], np.float64)
    check(lt.fmod(lt.asarray(big), lt.asarray(np.array([7.0, np.inf, 2e-310]))), np.fmod(big, [7.0, np.inf, 2e-310]))
    with pytest.raises(lt.DTypeError):
        lt.ldexp(lt.asarray([1.0]), lt.asarray([1.5]))
    flags = np.array([True, False])
    check(lt.isposinf(lt.asarray(flags)), np.isposinf(flags))
    check(lt.isneginf(lt.asarray(flags)), np.isneginf(flags))


@pytest.mark.parametrize("name", ["fmax", "fmod", "logaddexp2", "float_power", "deg2rad", "sinc"])
def test_numpys_elementwise_functions_gradients_match_torch(name):
    arr, other = random_array((3, 4), lt.float64, seed=23, low=0.2), random_array((4,), lt.float64, seed=24, low=0.2)
    unary = name in ("deg2rad", "sinc")
    x, y = lt.asarray(arr).requires_grad_(), lt.asarray(other).requires_grad_()
    t, u = torch.tensor(arr, requires_grad=True), torch.tensor(other, requires_grad=True)
    if unary:
        getattr(lt, name)(x).sum().backward()
        getattr(torch, name)(t).sum().backward()
    else:
        (getattr(lt, name)(x, y) * 3).sum().backward()
        (getattr(torch, name)(t, u) * 3).sum().backward()
        check(y.grad, u.grad)
    check(x.grad, t.grad)


@pytest.mark.parametrize("dtype", [lt.int8, lt.int32, lt.uint8, lt.float64])
def test_numpys_other_names(dtype):
    """divmod, around, invert, left_shift, right_shift as NumPy's; array_equal, array_equiv, ndim, shape, size."""
    for kind, x, t in inputs((3, 4), dtype, seed=95):
        a = t.numpy()
        b = random_array((4,), dtype, seed=96, low=1, high=7)
        quotient, rest = lt.divmod(x, lt.asarray(b))
        want_q, want_r = np.divmod(a, b)
        check(quotient, want_q)
        check(rest, want_r)
        if dtype.is_float:
            check(lt.around(x * 10.0, 1), np.around(a * 10.0, 1))
        else:
            check(lt.invert(x), np.invert(a))
            check(lt.left_shift(x, 2), np.left_shift(a, np.array(2, a.dtype)))
            check(lt.right_shift(x, 1), np.right_shift(a, np.array(1, a.dtype)))
        assert lt.array_equal(x, lt.asarray(a.copy())) and not lt.array_equal(x, x[:2])
        assert lt.array_equiv(x[:1], lt.asarray(np.broadcast_to(a[:1], (3, 4)).copy()))
        assert not lt.array_equiv(x, x[:, :3]) and not lt.array_equiv(x, lt.asarray(a + 1))
        assert (lt.ndim(x), lt.shape(x), lt.size(x), lt.size(x, 1)) == (2, (3, 4), 12, 4)
    nan = lt.asarray(np.array([1.0, np.nan]))
    assert not lt.array_equal(nan, nan) and lt.array_equal(nan, nan, equal_nan=True)
    assert (lt.ndim(2.5), lt.shape([[1, 2, 3]]), lt.size([])) == (0, (1, 3), 0)
