"""The inline math library of the LLVM backend (kernels/llvm/mathlib.py), and the functions lazytensor
composes of its functions (asin, acosh, sinh, hypot, ...: lazytensor/tensor.py), whose accuracy rests on it.

Accuracy is measured in ulps of the result's dtype against references computed in higher
precision: NumPy's float64 functions for float32 results, NumPy's x87 long double functions
(64-bit significand) for float64 results, and mpmath where neither has the function (float64
erf) or where the argument is a known worst case of the trigonometric reduction. The samples
cover the whole float range: random bit patterns and log-spaced magnitudes of both signs,
including subnormals, a dense sample of each function's interesting domain, the overflow,
underflow and branch thresholds with their neighbours, and exact special values (NaN, +-inf,
+-0.0). Separate tests check that kernels using these functions are vectorized.
"""
from __future__ import annotations

import re

import numpy as np
import pytest
import torch

import lazytensor as lt
from conftest import LAYOUTS, layout
from lazytensor.kernels.llvm import compile_kernel

FUNCTIONS = ["exp", "exp2", "expm1", "log", "log2", "log1p", "sin", "cos", "tan", "tanh", "erf"]
# atan2's (a function of its own here) and the functions lazytensor composes of it and of those above
# (lazytensor/tensor.py): their accuracy rests on this library's
COMPOSITES = ["atan", "asin", "acos", "asinh", "acosh", "atanh", "sinh", "cosh"]
BINARY = ["atan2", "hypot"]
NUMPY_NAMES = {"atan": "arctan", "asin": "arcsin", "acos": "arccos", "asinh": "arcsinh", "acosh": "arccosh",
               "atanh": "arctanh", "atan2": "arctan2"}
DTYPES = [np.float32, np.float64]

# The error bound each function is tested against, in ulps. The largest errors measured over
# ~10**7 samples per function and dtype are 0.76-1.0 ulp (float32 sin/cos/tan, evaluated in double, are
# correctly rounded but for double rounding: 0.5 ulp). float32 tanh is evaluated in float32 for speed (see
# kernels/llvm/mathlib.py): 0.95 ulp over every float32 where it is neither x nor +-1.
ULP_BOUND = {
    np.float32: {"exp": 1.25, "exp2": 1.25, "expm1": 1.0, "log": 1.0, "log2": 1.0, "log1p": 1.0,
                 "sin": 0.51, "cos": 0.51, "tan": 0.51, "tanh": 0.96, "erf": 1.25,
                 **dict.fromkeys(COMPOSITES + BINARY, 0.51)},  # computed in float64, rounded once
    np.float64: {"exp": 1.25, "exp2": 1.0, "expm1": 1.0, "log": 1.0, "log2": 1.0, "log1p": 1.0,
                 "sin": 1.0, "cos": 1.0, "tan": 1.25, "tanh": 1.0, "erf": 1.0,
                 "atan2": 0.7, "atan": 0.7, "asin": 1.15, "acos": 1.15, "asinh": 1.6, "acosh": 1.3, "atanh": 1.35,
                 "sinh": 1.8, "cosh": 1.8, "hypot": 0.8},
}

NAN, INF = np.nan, np.inf
LONGDOUBLE_IS_EXTENDED = np.finfo(np.longdouble).nmant >= 63

# Interesting domain of each function: where the result is neither trivially saturated nor
# trivially equal to x.
DOMAIN = {
    np.float32: {"exp": (-105, 90), "exp2": (-151, 129), "expm1": (-20, 90), "log": (0, 4), "log2": (0, 4),
                 "log1p": (-1, 4), "sin": (-20, 20), "cos": (-20, 20), "tan": (-20, 20), "tanh": (-10, 10),
                 "erf": (-5, 5), "sinh": (-90, 90), "cosh": (-90, 90)},
    np.float64: {"exp": (-746, 710), "exp2": (-1076, 1025), "expm1": (-40, 710), "log": (0, 4), "log2": (0, 4),
                 "log1p": (-1, 4), "sin": (-20, 20), "cos": (-20, 20), "tan": (-20, 20), "tanh": (-20, 20),
                 "erf": (-7, 7), "sinh": (-711, 711), "cosh": (-711, 711)},
}
for _domains in DOMAIN.values():
    _domains.update({"atan": (-10, 10), "asin": (-1, 1), "acos": (-1, 1), "asinh": (-10, 10), "acosh": (1, 10),
                     "atanh": (-1, 1)})

# Thresholds where results overflow, underflow, saturate or switch formula.
THRESHOLDS = {
    np.float32: {"exp": [88.72283935546875, -103.97207708, -87.33654475, -16.6355323], "exp2": [128, -126, -149, -150],
                 "expm1": [88.72283935546875, -17.32868, -0.3465736, 0.3465736], "log": [1, 0.70710677],
                 "log2": [1, 0.70710677, 2], "log1p": [-1, -0.29289323, 0.41421357], "tanh": [1, 9.010913, 0.55],
                 "erf": [1, 3.9192059, 4]},
    np.float64: {"exp": [709.782712893384, -745.1332191019412, -708.3964185322641], "exp2": [1024, -1022, -1074, -1075],
                 "expm1": [709.782712893384, -37.42994775023705, -0.34657359027997264], "log": [1, 0.7071067811865476],
                 "log2": [1, 0.7071067811865476, 2], "log1p": [-1, -0.2928932188134524, 0.41421356237309515],
                 "tanh": [1, 19.061547465398498, 0.55], "erf": [1, 5.921587195794507, 6]},
}
for _limits in THRESHOLDS.values():  # where the composites switch formula, or overflow
    _limits.update({"atan": [7 / 16, 11 / 16, 1, 2**-64], "asin": [1, 0.5], "acos": [1, 0.5], "asinh": [2**14, 2**28],
                    "acosh": [1, 2, 2**14, 2**28], "atanh": [1, 0.5], "sinh": [1, 88, 709, 710.4758600739439],
                    "cosh": [0.34657359027997264, 88, 709, 710.4758600739439, 89.41598629223294]})

# Floats closest to a multiple of pi/2 (from the continued fraction of pi/2 * 2**-E, for every
# exponent): the hardest arguments for the sin/cos/tan range reduction. The first float64 one
# is 6381956970095103 * 2**797, at 2**-60.9 from a multiple of pi/2.
HARD_TRIG = {
    np.float32: ["0x1.f37c8ap+95", "0x1.47d0fep+34", "0x1.f37c8ap+96", "0x1.47d0fep+35", "0x1.f9cbe2p+7",
                 "0x1.f37c8ap+97", "0x1.32ede2p+85", "0x1.628d4cp+40", "0x1.130930p+76", "0x1.47d0fep+36"],
    np.float64: ["0x1.6ac5b262ca1ffp+849", "0x1.6c6cbc45dc8dep+5", "0x1.6ac5b262ca1ffp+850", "0x1.b951f1572eba5p+23",
                 "0x1.504cac51f1eafp+131", "0x1.6ac5b262ca1ffp+851", "0x1.e009c53148be1p+991",
                 "0x1.4c96c11134d36p+577", "0x1.cfe482285f8edp+860", "0x1.db41f3cb71d7bp+680"],
}

# The float closest to a multiple of pi/2 in each binade [2**E, 2**(E+1)), E = 0..30, as (significand,
# first E, last E): the hardest arguments of the Cody-Waite reduction, which serves |x| < 2**30 (its
# error analysis in kernels/llvm/mathlib.py rests on them), and of the Payne-Hanek one just above.
# Found per exponent from the convergents of the continued fraction of 2**(E-p+1) 2/pi (p the
# precision): every integer significand is a small combination of two consecutive convergent
# denominators, and the smallest distance among those combinations is the binade's minimum
# (checked by brute force over whole float32 binades).
HARD_SMALL_TRIG = {
    np.float32: [("0x1.921fb6", 0, 1), ("0x1.2d97c8", 2, 6), ("0x1.f9cbe2", 7, 10), ("0x1.17cc50", 11, 14),
                 ("0x1.9a48de", 15, 17), ("0x1.04ccbc", 18, 20), ("0x1.4ac55c", 21, 23), ("0x1.e768f6", 24, 24),
                 ("0x1.4665d2", 25, 27), ("0x1.08ecc2", 28, 28), ("0x1.27a94a", 29, 30)],
    np.float64: [("0x1.921fb54442d18", 0, 1), ("0x1.2d97c7f3321d2", 2, 3), ("0x1.dd85a7410f58d", 4, 4),
                 ("0x1.6c6cbc45dc8de", 5, 13), ("0x1.635e3d74befca", 14, 14), ("0x1.67e57cdd4dc54", 15, 15),
                 ("0x1.65a1dd290660f", 16, 16), ("0x1.bf9b3c6059d24", 17, 17), ("0x1.39c6fd67805a7", 18, 19),
                 ("0x1.9eb7148f354d6", 20, 22), ("0x1.b951f1572eba5", 23, 30)],
}
SMALL_REDUCTION_MAX = 2.0**30


def hard_small_trig(dtype: type) -> np.ndarray:
    """The floats of HARD_SMALL_TRIG, in increasing order."""
    return np.array([float.fromhex(f"{m}p{e}") for m, lo, hi in HARD_SMALL_TRIG[dtype] for e in range(lo, hi + 1)],
                    dtype)


# ---- samples and references ---------------------------------------------------------------------


def neighbours(values: np.ndarray, steps: int = 3) -> np.ndarray:
    """`values` and the floats up to `steps` ulps either side of each."""
    out = [values]
    up, down = values.copy(), values.copy()
    with np.errstate(over="ignore"):  # the neighbour of the largest float is infinite (dropped later)
        for _ in range(steps):
            up, down = np.nextafter(up, INF), np.nextafter(down, -INF)
            out += [up, down]
    return np.concatenate(out)


def samples(name: str, dtype: type, n: int, seed: int = 0) -> np.ndarray:
    """Finite test arguments for `name` spread over the whole range of `dtype`."""
    rng = np.random.default_rng(seed)
    fi = np.finfo(dtype)
    if dtype == np.float32:
        bit_patterns = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32).view(np.float32)
    else:
        bit_patterns = rng.integers(0, 2**64, n, dtype=np.uint64, endpoint=False).view(np.float64)
    lo_exp, hi_exp = np.log10(float(fi.smallest_subnormal)), np.log10(float(fi.max))
    log_spaced = (rng.choice([-1.0, 1.0], n) * 10.0 ** rng.uniform(lo_exp, hi_exp, n)).astype(dtype)
    lo, hi = DOMAIN[dtype][name]
    domain = rng.uniform(lo, hi, n).astype(dtype)
    small = (rng.uniform(-1, 1, n // 4) * 10.0 ** rng.uniform(-10, 0, n // 4)).astype(dtype)
    subnormal = (rng.uniform(-1, 1, n // 16) * float(fi.tiny)).astype(dtype)
    edges = [0.0, float(fi.tiny), float(fi.smallest_subnormal), float(fi.max), 1.0, 0.5, 2.0]
    edges += THRESHOLDS[dtype].get(name, [])
    edges += [k * np.pi / 4 for k in range(1, 9)]
    special = neighbours(np.array(edges + [-v for v in edges], dtype=dtype))
    if name in ("sin", "cos", "tan"):
        special = np.concatenate([special, np.array([float.fromhex(h) for h in HARD_TRIG[dtype]], dtype)])
    x = np.concatenate([bit_patterns, log_spaced, domain, small, subnormal, special])
    return x[np.isfinite(x)]


def reference(name: str, x: np.ndarray) -> np.ndarray:
    """`name(x)` in more precision than x's dtype (float64 for float32 x, long double or
    mpmath for float64 x)."""
    with np.errstate(all="ignore"):
        if x.dtype == np.float32:
            if name == "erf":
                return torch.special.erf(torch.from_numpy(x.astype(np.float64))).numpy()
            return getattr(np, NUMPY_NAMES.get(name, name))(x.astype(np.float64))
        if not LONGDOUBLE_IS_EXTENDED:
            pytest.skip("float64 references need a long double wider than double")
        if name != "erf":
            return getattr(np, NUMPY_NAMES.get(name, name))(x.astype(np.longdouble))
    return mp_reference(name, x)


def mp_reference(name: str, x: np.ndarray) -> np.ndarray:
    """`name(x)` with mpmath at 40 digits, as long doubles (or doubles, rounded from 40 digits)."""
    mpmath = pytest.importorskip("mpmath")  # installed with torch (through sympy)
    fn = {"exp2": lambda v: mpmath.power(2, v), "log2": lambda v: mpmath.log(v, 2)}.get(name, getattr(mpmath, name))
    out = np.empty(x.shape, np.longdouble)
    with mpmath.workdps(40):
        for i, v in enumerate(x.tolist()):
            if name.startswith("log") and v <= (-1 if name == "log1p" else 0):
                out[i] = NAN if v < (-1 if name == "log1p" else 0) else -INF
                continue
            out[i] = np.longdouble(mpmath.nstr(fn(mpmath.mpf(v)), 30, strip_zeros=False))
    return out


def ulp_error(got: np.ndarray, ref: np.ndarray, dtype: type) -> np.ndarray:
    """|got - ref| in ulps of `dtype` at ref. A reference beyond the largest float must come
    out as an infinity of its sign; matching NaNs and infinities count as exact."""
    fi = np.finfo(dtype)
    ref = ref.astype(np.longdouble)
    got_wide = got.astype(np.longdouble)
    with np.errstate(all="ignore"):
        _, exponent = np.frexp(ref)  # ref = m 2**exponent, 1/2 <= |m| < 1 (exponent 0 for 0)
        exponent = np.where(ref == 0, fi.minexp, exponent.astype(np.int64) - 1)
        ulp = np.ldexp(np.longdouble(1), np.maximum(exponent, fi.minexp) - fi.nmant)
        err = np.abs(got_wide - ref) / ulp
    overflow = np.abs(ref) > np.longdouble(fi.max) * (1 + np.longdouble(2.0) ** -(fi.nmant + 2))
    err = np.where(overflow, np.where(np.isinf(got) & (np.sign(got) == np.sign(ref)), 0, INF), err)
    exact = (np.isnan(got) & np.isnan(ref)) | (got_wide == ref)
    err = np.where(exact, 0, err)
    return np.where(np.isnan(got) != np.isnan(ref), INF, err)


def evaluate(name: str, x: np.ndarray) -> np.ndarray:
    return getattr(lt.asarray(x, device="cpu"), name)().numpy()  # the LLVM library under test


# ---- accuracy -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.__name__)
@pytest.mark.parametrize("name", FUNCTIONS + COMPOSITES)
def test_max_ulp_error_over_the_whole_range(name, dtype):
    n = 2**15 if dtype == np.float32 else 2**14
    if dtype == np.float64 and name == "erf":
        n = 2**9  # mpmath reference: slow
    x = samples(name, dtype, n)
    got = evaluate(name, x)
    err = ulp_error(got, reference(name, x), dtype)
    worst = int(np.argmax(err))
    assert err[worst] <= ULP_BOUND[dtype][name], (f"{name}({x[worst]!r}) = {got[worst]!r}: {err[worst]:.3f} ulp "
                                     f"(reference {float(reference(name, x[worst:worst + 1])[0])!r})")


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.__name__)
@pytest.mark.parametrize("name", BINARY)
def test_max_ulp_error_of_atan2_and_hypot_over_the_whole_range(name, dtype):
    """Pairs of arguments from the whole range, of ratios near the switches of atan2's reduction (7/16, 11/16,
    1) and far from 1, and every pair of special values against NumPy's (C's) answers."""
    n = 2**14 if dtype == np.float32 else 2**13
    rng = np.random.default_rng(4)
    y = samples("atan", dtype, n, seed=5)
    ratios = np.concatenate([neighbours(np.array([7 / 16, 11 / 16, 1.0, 16 / 7, 16 / 11]), 2),
                             10.0 ** rng.uniform(-40, 40, y.size - 25)])
    with np.errstate(all="ignore"):
        x = (y * ratios.astype(dtype)) * rng.choice([-1.0, 1.0], y.size).astype(dtype)
    x = np.where(np.isfinite(x), x, dtype(1.5))
    wide = np.float64 if dtype == np.float32 else np.longdouble
    if dtype == np.float64 and not LONGDOUBLE_IS_EXTENDED:
        pytest.skip("float64 references need a long double wider than double")
    fn = getattr(np, NUMPY_NAMES.get(name, name))
    got = getattr(lt.asarray(y, device="cpu"), name)(lt.asarray(x, device="cpu")).numpy()
    err = ulp_error(got, fn(y.astype(wide), x.astype(wide)), dtype)
    worst = int(np.argmax(err))
    assert err[worst] <= ULP_BOUND[dtype][name], f"{name}({y[worst]!r}, {x[worst]!r}) = {got[worst]!r}: {err[worst]:.3f}"
    special = np.array([NAN, INF, -INF, 0.0, -0.0, 1.0, -1.0, float(np.finfo(dtype).max)], dtype)
    a, b = np.repeat(special, special.size), np.tile(special, special.size)
    got = getattr(lt.asarray(a, device="cpu"), name)(lt.asarray(b, device="cpu")).numpy()
    with np.errstate(over="ignore"):  # hypot(max, max) is inf
        want = fn(a.astype(wide), b.astype(wide)).astype(dtype)  # correctly rounded: NumPy's float32 pi/4 is not
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(np.signbit(got), np.signbit(want))


def test_float32_tanh_over_a_dense_sweep_and_in_mixed_vectors():
    """Every 64th float32 from 2**-14 (below it tanh x rounds to x) to 9.5 (above, to 1), each sign, and every
    float32 within 2**12 ulps of 1, where float32 tanh switches from its polynomial to exp. And a vector mixing
    them with NaN, infinities, signed zeros, subnormals and the largest floats gives what each element gives
    alone (the scalar remainder loop)."""
    bits = np.arange(np.float32(2**-14).view(np.uint32), np.float32(9.5).view(np.uint32), 64, dtype=np.uint32)
    one = np.float32(1).view(np.uint32)
    x = np.concatenate([bits, np.arange(one - 2**12, one + 2**12, dtype=np.uint32)]).view(np.float32)
    x = np.concatenate([x, -x])
    err = ulp_error(evaluate("tanh", x), reference("tanh", x), np.float32)
    assert err.max() <= ULP_BOUND[np.float32]["tanh"], (x[np.argmax(err)], err.max())
    fi = np.finfo(np.float32)
    edges = np.array([INF, -INF, 0.0, -0.0, fi.smallest_subnormal, -fi.tiny, fi.max, -fi.max, 9.010913, 20.0],
                     np.float32)
    mixed = np.concatenate([x[::4099], edges, [NAN]]).astype(np.float32)
    order = np.random.default_rng(5).permutation(len(mixed))
    got = np.empty_like(mixed)
    got[order] = evaluate("tanh", mixed[order])
    alone = np.concatenate([evaluate("tanh", mixed[i:i + 1]) for i in range(len(mixed))])
    np.testing.assert_array_equal(got, alone)
    np.testing.assert_array_equal(np.signbit(got[:-1]), np.signbit(mixed[:-1]))
    below_one = np.nextafter(np.float32(1), np.float32(0))  # 9.010913 is the last float32 whose tanh is not 1
    want = np.array([1, -1, 0.0, -0.0, fi.smallest_subnormal, -fi.tiny, 1, -1, below_one, 1], np.float32)
    np.testing.assert_array_equal(got[-len(edges) - 1:-1], want)
    assert np.isnan(got[-1])


@pytest.mark.parametrize("kind", LAYOUTS)
def test_float32_tanh_of_every_layout_and_odd_sizes(kind):
    """float32 tanh read through each layout, at sizes that leave vector remainders (and none), within its bound
    of the float64 reference, with the special values in the data; and of no elements."""
    for shape in ((37, 19), (1, 7), (0, 5)):
        arr = np.random.default_rng(27).standard_normal(shape).astype(np.float32) * 3
        arr.flat[:7] = [NAN, INF, -INF, 0.0, -0.0, 1.0, -1.0][:arr.size]
        x, t = layout(arr, kind)
        got = x.tanh().numpy()
        want = np.tanh(t.numpy().astype(np.float64))
        assert got.shape == want.shape and got.dtype == np.float32
        assert ulp_error(got, want, np.float32).max(initial=0) <= ULP_BOUND[np.float32]["tanh"]
        np.testing.assert_array_equal(np.signbit(got), np.signbit(want))


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.__name__)
@pytest.mark.parametrize("name", ["sin", "cos", "tan"])
def test_trig_at_the_hardest_reduction_arguments(name, dtype):
    """The closest floats to multiples of pi/2, of both signs, against 40-digit mpmath."""
    if dtype == np.float64 and not LONGDOUBLE_IS_EXTENDED:
        pytest.skip("float64 references need a long double wider than double")
    x = np.array([float.fromhex(h) for h in HARD_TRIG[dtype]], dtype)
    x = np.concatenate([x, -x])
    err = ulp_error(evaluate(name, x), mp_reference(name, x), dtype)
    assert err.max() <= ULP_BOUND[dtype][name], (x[np.argmax(err)], err.max())


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.__name__)
@pytest.mark.parametrize("name", ["sin", "cos", "tan"])
def test_trig_at_the_hardest_arguments_of_each_binade_around_the_reduction_switch(name, dtype):
    """The floats closest to multiples of pi/2 in every binade up to 2**31 (the cheap reduction
    below 2**30, the table-driven one above), of both signs, with their neighbours, and the floats
    around 2**30 itself, against 40-digit mpmath."""
    if dtype == np.float64 and not LONGDOUBLE_IS_EXTENDED:
        pytest.skip("float64 references need a long double wider than double")
    x = neighbours(np.concatenate([hard_small_trig(dtype), np.array([SMALL_REDUCTION_MAX], dtype)]), steps=2)
    x = np.concatenate([x, -x])
    assert (np.abs(x) < SMALL_REDUCTION_MAX).any() and (np.abs(x) >= SMALL_REDUCTION_MAX).any()
    err = ulp_error(evaluate(name, x), mp_reference(name, x), dtype)
    assert err.max() <= ULP_BOUND[dtype][name], (x[np.argmax(err)], err.max())


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.__name__)
@pytest.mark.parametrize("name", ["sin", "cos", "tan"])
def test_trig_on_vectors_mixing_both_reductions_and_special_values(name, dtype):
    """Lanes of one vector that take the cheap reduction, lanes that need the table-driven one
    (every 7th element 1e30, or beyond 2**30), NaN, infinities and signed zeros: each element
    comes out as it does on its own."""
    rng = np.random.default_rng(11)
    n = 4099  # the vector loop, then a remainder
    x = rng.uniform(-1e4, 1e4, n).astype(dtype)
    x[::7] = 1e30
    x[3::11] = -x[3::11]
    x[5::13] = rng.uniform(2**30, 2**31, len(x[5::13])).astype(dtype)
    x[::29] = hard_small_trig(dtype)[rng.integers(0, 31, len(x[::29]))]
    x[[10, 100, 1000, 2000, 3001]] = [NAN, INF, -INF, 0.0, -0.0]
    got = evaluate(name, x)
    alone = np.concatenate([evaluate(name, x[i:i + 1]) for i in range(0, n, 97)])  # the scalar function
    np.testing.assert_array_equal(got[::97], alone)
    specials = np.isin(np.arange(n), [10, 100, 1000, 2000, 3001])
    assert np.isnan(got[[10, 100, 1000]]).all()
    at_zeros = np.array([1.0, 1.0] if name == "cos" else [0.0, -0.0], dtype)
    np.testing.assert_array_equal(got[[2000, 3001]], at_zeros)
    np.testing.assert_array_equal(np.signbit(got[[2000, 3001]]), np.signbit(at_zeros))
    err = ulp_error(got[~specials], reference(name, x[~specials]), dtype)
    assert err.max() <= ULP_BOUND[dtype][name], (x[~specials][np.argmax(err)], err.max())


# ---- special values -----------------------------------------------------------------------------------

F32_MAX, F64_MAX = float(np.finfo(np.float32).max), float(np.finfo(np.float64).max)

# (argument, expected result); expected zeros also check the sign bit.
SPECIAL = {
    "exp": [(NAN, NAN), (INF, INF), (-INF, 0.0), (0.0, 1.0), (-0.0, 1.0), (1000.0, INF), (-1000.0, 0.0)],
    "exp2": [(NAN, NAN), (INF, INF), (-INF, 0.0), (0.0, 1.0), (-0.0, 1.0), (10.0, 1024.0), (-3.0, 0.125),
             (5000.0, INF), (-5000.0, 0.0)],
    "expm1": [(NAN, NAN), (INF, INF), (-INF, -1.0), (0.0, 0.0), (-0.0, -0.0), (1000.0, INF), (-1000.0, -1.0)],
    "log": [(NAN, NAN), (INF, INF), (-INF, NAN), (0.0, -INF), (-0.0, -INF), (-1.0, NAN), (1.0, 0.0)],
    "log2": [(NAN, NAN), (INF, INF), (-INF, NAN), (0.0, -INF), (-0.0, -INF), (-1.0, NAN), (1.0, 0.0),
             (1024.0, 10.0), (0.125, -3.0)],
    "log1p": [(NAN, NAN), (INF, INF), (-INF, NAN), (-1.0, -INF), (-2.0, NAN), (0.0, 0.0), (-0.0, -0.0)],
    "sin": [(NAN, NAN), (INF, NAN), (-INF, NAN), (0.0, 0.0), (-0.0, -0.0)],
    "cos": [(NAN, NAN), (INF, NAN), (-INF, NAN), (0.0, 1.0), (-0.0, 1.0)],
    "tan": [(NAN, NAN), (INF, NAN), (-INF, NAN), (0.0, 0.0), (-0.0, -0.0)],
    "tanh": [(NAN, NAN), (INF, 1.0), (-INF, -1.0), (0.0, 0.0), (-0.0, -0.0), (50.0, 1.0), (-50.0, -1.0)],
    "erf": [(NAN, NAN), (INF, 1.0), (-INF, -1.0), (0.0, 0.0), (-0.0, -0.0), (10.0, 1.0), (-10.0, -1.0)],
}


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.__name__)
@pytest.mark.parametrize("name", FUNCTIONS)
def test_special_values(name, dtype):
    args, expected = (np.array(v, dtype) for v in zip(*SPECIAL[name]))
    got = evaluate(name, args)
    np.testing.assert_array_equal(got, expected, err_msg=f"{name} at {args}")
    np.testing.assert_array_equal(np.signbit(got[expected == 0]), np.signbit(expected[expected == 0]),
                                  err_msg=f"{name}: sign of zero")


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.__name__)
def test_overflow_and_underflow_thresholds(dtype):
    """The last finite / first infinite and the last nonzero / first zero results sit exactly
    where correct rounding puts them."""
    fi = np.finfo(dtype)
    big = np.log(np.longdouble(fi.max))  # exp overflows beyond this
    zero = np.log(np.longdouble(fi.smallest_subnormal) / 2)  # and rounds to 0 below this
    below_big = dtype(big) if dtype(big) < big else np.nextafter(dtype(big), dtype(0))
    above_zero = dtype(zero) if dtype(zero) > zero else np.nextafter(dtype(zero), dtype(0))
    x = np.array([below_big, np.nextafter(below_big, INF), above_zero, np.nextafter(above_zero, -INF)], dtype)
    got = evaluate("exp", x)
    assert np.isfinite(got[0]) and got[1] == INF
    assert got[2] == fi.smallest_subnormal and got[3] == 0
    got = evaluate("expm1", x[:2])
    assert np.isfinite(got[0]) and got[1] == INF
    # exp2: 2**emax overflows, 2**(min subnormal exponent - 1) is a tie that rounds to 0
    emax, emin_sub = fi.maxexp, fi.minexp - fi.nmant
    got = evaluate("exp2", np.array([np.nextafter(dtype(emax), dtype(0)), emax, emin_sub,
                                     np.nextafter(dtype(emin_sub - 1), dtype(0)), emin_sub - 1], dtype))
    assert np.isfinite(got[0]) and got[1] == INF
    assert got[2] == fi.smallest_subnormal and got[3] == fi.smallest_subnormal and got[4] == 0


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.__name__)
def test_subnormal_results_are_correctly_rounded(dtype):
    """exp and exp2 into the subnormal range: one rounding, so exact powers of two come out
    exact, against the reference elsewhere."""
    fi = np.finfo(dtype)
    k = np.arange(fi.minexp - fi.nmant, fi.minexp, dtype=np.int64)
    np.testing.assert_array_equal(evaluate("exp2", k.astype(dtype)), np.ldexp(dtype(1), k))
    x = np.linspace(np.log(float(fi.smallest_subnormal)), np.log(float(fi.tiny)), 4001).astype(dtype)
    err = ulp_error(evaluate("exp", x), reference("exp", x), dtype)
    assert err.max() <= ULP_BOUND[dtype]["exp"]


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.__name__)
def test_odd_functions_are_exactly_odd(dtype):
    x = samples("sin", dtype, 2**12, seed=3)
    for name in ("sin", "tan", "tanh", "erf", "atan", "asin", "asinh", "atanh", "sinh"):
        got, mirrored = evaluate(name, x), evaluate(name, -x)
        np.testing.assert_array_equal(mirrored, -got, err_msg=name)


def test_matches_torch_on_a_typical_range():
    """Sanity check against torch's own implementations (which are ~1 ulp themselves)."""
    rng = np.random.default_rng(7)
    for dtype in DTYPES:
        x = rng.uniform(-3, 3, 10000).astype(dtype)
        for name in FUNCTIONS:
            arg = np.abs(x) + 0.1 if name.startswith("log") else x
            np.testing.assert_allclose(evaluate(name, arg), getattr(torch, name)(torch.from_numpy(arg)).numpy(),
                                       rtol=4 * np.finfo(dtype).eps, atol=0, err_msg=f"{name} {dtype.__name__}")


# ---- vectorization --------------------------------------------------------------------------------------


def loop_bodies(asm: str) -> list[list[str]]:
    """The instructions of every loop, in layout order from its first block's label to the
    conditional jump back to it: the blocks of each iteration's usual path. Blocks it branches
    out to and that return with a plain `jmp` (the rare path, placed after the loop) are not in it."""
    lines = [ln.strip() for ln in asm.splitlines()]
    labels: dict[str, int] = {}
    bodies = []
    for i, ln in enumerate(lines):
        if label := re.match(r"(\.LBB\d+_\d+):", ln):
            labels[label.group(1)] = i
        elif (jump := re.fullmatch(r"j(?!mp)\w+\s+(\.LBB\d+_\d+)", ln)) and jump.group(1) in labels:
            bodies.append([x for x in lines[labels[jump.group(1)] + 1:i + 1] if x and not x.startswith((".", "#"))])
    return bodies


def packed_fp(body: list[str]) -> int:
    """Packed floating-point arithmetic instructions on 256- or 512-bit registers."""
    return sum(bool(re.match(r"v(fn?m(add|sub)\w*|mul|add|sub|div)p[sd]\s", ln) and re.search(r"%[yz]mm", ln))
               for ln in body)


def vector_loop(tensor: lt.Tensor) -> list[str]:
    """The vector loop of the kernel computing `tensor` (the loop with the most packed arithmetic;
    LLVM also keeps a scalar loop for the remainder), after checking that the kernel calls no
    function but LLVM intrinsics and its own (no libm)."""
    program, _ = compile_kernel(lt.schedule(tensor)[0].kernel)
    callees = re.findall(r"\b(?:call|declare)\b[^@\n]*@\"?([\w.$]+)", program.optimized_ir)
    assert all(c.startswith(("llvm.", "__lazytensor_")) for c in callees), callees
    bodies = loop_bodies(program.assembly)
    assert bodies, "no loop found"
    return max(bodies, key=packed_fp)


def assert_vectorized(tensor: lt.Tensor) -> None:
    body = vector_loop(tensor)
    assert not any(ln.startswith("call") for ln in body), "\n".join(body)
    assert packed_fp(body) >= 10, "\n".join(body)


def test_fused_transcendental_kernel_is_vectorized():
    rng = np.random.default_rng(0)
    x, y, z = (lt.asarray(rng.standard_normal(4096).astype(np.float32), device="cpu") for _ in range(3))
    assert_vectorized(x.exp() * y + z.sin())


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.__name__)
def test_every_function_vectorizes(dtype):
    x = lt.asarray(np.random.default_rng(1).uniform(0.5, 2, 4096).astype(dtype), device="cpu")
    total = x.exp()
    for name in FUNCTIONS[1:]:
        total = total + getattr(x, name)()
    assert_vectorized(total)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.__name__)
def test_atan2_and_the_composites_vectorize(dtype):
    """atan2 is straight-line code (selects, no branch), and so are the functions composed of it and the others."""
    x = lt.asarray(np.random.default_rng(1).uniform(0.5, 2, 4096).astype(dtype), device="cpu")
    assert_vectorized(x.atan2(x + 1))
    assert_vectorized(x.asin() + x.acosh() + x.sinh() + x.hypot(x * 3))


def test_sin_loop_is_vectorized_and_leaves_the_large_reduction_out_of_line():
    """The vector loop of `sin` over a contiguous float32 array reduces with vector arithmetic
    only: the table-driven reduction (a call, table loads) sits outside it, behind a branch."""
    x = lt.asarray(np.random.default_rng(2).uniform(0, 1, 4096).astype(np.float32), device="cpu")
    body = vector_loop(x.sin())
    assert not any(ln.startswith("call") for ln in body), "\n".join(body)
    assert packed_fp(body) >= 10, "\n".join(body)
    assert not any(re.match(r"(vmovs[sd]|vpextr|vpinsr|vgather)\w*\s", ln) for ln in body), "\n".join(body)
    assert any(re.match(r"j(?!mp)\w+\s", ln) for ln in body[:-1]), "no branch around the large reduction"
