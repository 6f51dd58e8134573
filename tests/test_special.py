"""Special functions (`lazytensor.special`): lgamma, digamma, polygamma, erfinv, xlog1py, entr against torch and
SciPy; gcd, lcm and frexp against NumPy; over dtypes, special values, broadcasting, 0-d, size 0 and views."""
from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.special
import torch

import lazytensor as lt
from conftest import check, random_array
from lazytensor import special

# points that test the branches and special values: poles, the reflection's side, the series' start, huge and tiny
POINTS = np.array([0.0, -0.0, -1.0, -2.5, -7.3, -0.5, 1e-300, 1e-8, 0.1, 0.49999, 0.5, 0.5000001, 1.0, 1.4616321449683622,
                   2.0, 3.7, 9.9, 10.7, 25.3, 1e5, 1e300, -1e20, math.inf, -math.inf, math.nan])


def sample(dtype: lt.DType) -> np.ndarray:
    """The points (those the dtype holds) and random values across [-20, 20] and (0, 1e4)."""
    wide = np.concatenate([POINTS, random_array((300,), lt.float64, seed=1, low=-20, high=20),
                           10 ** random_array((100,), lt.float64, seed=2, low=-4, high=4)])
    with np.errstate(over="ignore"):
        return wide.astype(dtype.name)


@pytest.mark.parametrize("dtype", [lt.float64, lt.float32, lt.float16])
@pytest.mark.parametrize("name", ["lgamma", "digamma"])
def test_lgamma_and_digamma_match_torch(name, dtype):
    arr = sample(dtype)
    check(getattr(lt, name)(lt.asarray(arr)), getattr(torch, name)(torch.tensor(arr)))


def test_lgamma_and_digamma_of_bfloat16_integers_0d_and_empty():
    arr = np.array([0.5, 3.0, -2.5, 7.25], np.float32)
    x, t = lt.asarray(arr).astype(lt.bfloat16), torch.tensor(arr).bfloat16()
    check(x.lgamma(), t.lgamma())
    check(x.digamma(), t.digamma())
    ints = np.array([1, 2, 5, 30])
    check(lt.lgamma(lt.asarray(ints)), torch.lgamma(torch.tensor(ints)))  # the default float, as torch
    check(lt.asarray(np.float64(4.5)).digamma(), torch.tensor(4.5, dtype=torch.float64).digamma())
    check(lt.asarray(np.zeros((0, 3))).lgamma(), torch.zeros((0, 3), dtype=torch.float64).lgamma())


def test_digamma_poles_are_torchs():
    """-inf at +0, +inf at -0, NaN at the negative integers and -inf, inf at inf."""
    arr = np.array([0.0, -0.0, -1.0, -4.0, -1e20, -math.inf, math.inf])
    check(lt.digamma(lt.asarray(arr)), torch.digamma(torch.tensor(arr)))


@pytest.mark.parametrize("n", [1, 2, 3, 7])
def test_polygamma_matches_scipy(n):
    """Against SciPy (torch's trigamma is 5e-10 off in float64): both sides of 1/2 and huge x; the poles and
    infinities aside (torch and SciPy disagree there)."""
    arr = np.concatenate([POINTS[np.isfinite(POINTS) & ((POINTS > 0) | (POINTS != np.round(POINTS)))],
                          random_array((200,), lt.float64, seed=3, low=-9.9, high=30)])
    check(lt.polygamma(n, lt.asarray(arr)), scipy.special.polygamma(n, arr))
    with np.errstate(over="ignore"):  # 1e300 is inf in float32, and polygamma(7) of the smallest too
        arr32 = arr.astype(np.float32)
        expected = scipy.special.polygamma(n, arr32.astype(np.float64)).astype(np.float32)
    check(lt.asarray(arr32).polygamma(n), expected)
    with pytest.raises(ValueError, match="n must be an integer >= 0"):
        lt.polygamma(-1, lt.asarray(arr))


def test_gradients_of_lgamma_digamma_and_erfinv_are_torchs():
    arr = random_array((4, 5), lt.float64, seed=4, low=0.2, high=6)
    for name in ("lgamma", "erfinv"):
        values = arr if name == "lgamma" else arr / 7
        x, t = lt.asarray(values).requires_grad_(), torch.tensor(values, requires_grad=True)
        getattr(lt, name)(x).sum().backward()
        getattr(torch, name)(t).sum().backward()
        check(x.grad, t.grad)
    x = lt.asarray(arr).requires_grad_()
    lt.digamma(x).sum().backward()
    check(x.grad, scipy.special.polygamma(1, arr))  # torch's trigamma is 5e-10 off
    x = lt.asarray(arr).requires_grad_()
    lt.polygamma(2, x).sum().backward()
    check(x.grad, scipy.special.polygamma(3, arr))


@pytest.mark.parametrize("dtype", [lt.float32, lt.float64, lt.float16])
def test_erfinv_matches_torch(dtype):
    """float64 away from +-1, where erf's rounding limits it (see the module); every float32 and float16."""
    inside = random_array((500,), lt.float64, seed=5, low=-1, high=1)
    if dtype == lt.float64:
        inside = inside[np.abs(inside) <= 0.999]
    arr = np.concatenate([inside, [0.0, -0.0, 1.0, -1.0, 1.5, -3.0, math.nan, 1e-30, 0.5]]).astype(dtype.name)
    check(lt.erfinv(lt.asarray(arr)), torch.erfinv(torch.tensor(arr)))


def test_erfinv_of_a_transposed_view_and_in_place():
    arr = random_array((3, 4), lt.float32, seed=6, low=-0.99, high=0.99)
    check(lt.asarray(arr).T.erfinv(), torch.tensor(arr).T.erfinv())
    x = lt.asarray(arr)
    x.erfinv_()
    check(x, torch.tensor(arr).erfinv())


# the tails where 1 - erf(x) or 1 - ndtr(x) would be all rounding error: within 3e-13 of SciPy's (its own error),
# down to the smallest normal result (SciPy flushes the subnormal ones to 0)
ERFC_POINTS = np.array([0.0, -0.0, 1e-300, 0.49, 0.5, 0.51, 0.7071, 0.7072, 1.0, -1.0, 3.75, 5.0, 9.8, 15.0, 26.5,
                        28.0, -5.0, 1e10, 1e300, math.inf, -math.inf, math.nan])
NORMAL_POINTS = np.array([0.0, -0.0, 0.7, -0.7, 0.71, -0.71, 1.0, -1.0, -1.01, 2.0, -5.0, -20.0, -37.0, 8.0, 30.0,
                          -1e3, -1e10, -1e160, math.inf, -math.inf, math.nan])
TAILS = {"erfc": (lt.erfc, torch.erfc, scipy.special.erfc, ERFC_POINTS, (-6.0, 26.5)),
         "erfcx": (special.erfcx, torch.special.erfcx, scipy.special.erfcx, ERFC_POINTS, (-26.0, 30.0)),
         "ndtr": (special.ndtr, torch.special.ndtr, scipy.special.ndtr, NORMAL_POINTS, (-37.0, 9.0)),
         "log_ndtr": (special.log_ndtr, torch.special.log_ndtr, scipy.special.log_ndtr, NORMAL_POINTS,
                      (-200.0, 37.0))}


@pytest.mark.parametrize("name", list(TAILS))
def test_erfc_ndtr_and_log_ndtr_keep_their_tails(name):
    ours, theirs, scipys, points, (low, high) = TAILS[name]
    arr = np.concatenate([points, random_array((400,), lt.float64, seed=9, low=low, high=high)])
    with np.errstate(over="ignore"):
        check(ours(lt.asarray(arr)), scipys(arr), rtol=3e-13, atol=0)
    assert 0 < abs(ours(lt.asarray(np.array([10.0 if name == "erfc" else -14.0]))).item()) < math.inf  # not 1 - erf
    with np.errstate(over="ignore"):
        narrow = arr.astype(np.float32)
    for dtype in (lt.float32, lt.float16, lt.bfloat16):
        x, t = lt.asarray(narrow).astype(dtype), torch.tensor(narrow).to(TORCH_OF[dtype])
        # the 16-bit floats as torch's float32 rounded once (torch has no half log_ndtr), as lazytensor computes them
        check(ours(x), theirs(t.float()).to(t.dtype))


def test_ndtri_inverts_ndtr_down_to_the_smallest_subnormal():
    arr = np.concatenate([[0.0, 1.0, 0.5, 0.25, 0.75, 0.2499, 0.7501, 5e-324, 1e-300, 1e-20, 1 - 2 ** -53, 2 ** -54,
                           -0.1, 1.1, math.inf, math.nan], random_array((300,), lt.float64, seed=10, low=0, high=1),
                          10 ** random_array((200,), lt.float64, seed=11, low=-300, high=0)])
    check(special.ndtri(lt.asarray(arr)), scipy.special.ndtri(arr), rtol=1e-14, atol=0)
    narrow = arr.astype(np.float32)
    check(special.ndtri(lt.asarray(narrow)), torch.special.ndtri(torch.tensor(narrow)))


TORCH_OF = {lt.float32: torch.float32, lt.float16: torch.float16, lt.bfloat16: torch.bfloat16}
BESSEL = {"i0": (lt.i0, torch.special.i0, scipy.special.i0), "i0e": (special.i0e, torch.special.i0e, scipy.special.i0e),
          "i1": (special.i1, torch.special.i1, scipy.special.i1), "i1e": (special.i1e, torch.special.i1e, scipy.special.i1e)}


@pytest.mark.parametrize("name", list(BESSEL))
def test_bessel_functions_match_scipy_and_torch(name):
    """Both sides of the split between the power and the asymptotic series (18) and the exponent's range. At
    +-inf the limits: SciPy's and torch's i0 and i1 give NaN there."""
    ours, theirs, scipys = BESSEL[name]
    finite = np.concatenate([[0.0, -0.0, 1e-300, 17.99, 18.0, 18.01, -18.01, 700.0, 713.0, -713.0, 1e10, 1e300,
                              math.nan], random_array((300,), lt.float64, seed=12, low=-40, high=40),
                             random_array((50,), lt.float64, seed=13, low=-800, high=800)])
    with np.errstate(over="ignore"):
        check(ours(lt.asarray(finite)), scipys(finite), rtol=3e-15, atol=0)
        narrow = finite.astype(np.float32)
    for dtype in (lt.float32, lt.float16):
        with np.errstate(over="ignore"):
            held = narrow[~np.isinf(narrow.astype(dtype.name))]
        x, t = lt.asarray(held).astype(dtype), torch.tensor(held).to(TORCH_OF[dtype])
        check(ours(x), theirs(t))
    limits = {"i0": [math.inf, math.inf], "i0e": [0.0, 0.0], "i1": [math.inf, -math.inf], "i1e": [0.0, -0.0]}
    check(ours(lt.asarray([math.inf, -math.inf])), np.array(limits[name], np.float32))


def test_erfc_and_i0_methods_in_place_views_ints_0d_and_empty():
    arr = random_array((3, 4), lt.float32, seed=14, low=-4, high=4)
    x, t = lt.asarray(arr), torch.tensor(arr)
    check(x.T.erfc(), t.T.erfc())
    check(x[:, ::2].i0(), t[:, ::2].i0())
    check(special.erfc(x.T), torch.special.erfc(t.T))
    y = lt.asarray(arr)
    y.erfc_()
    check(y, t.erfc())
    y = lt.asarray(arr)
    y.i0_()
    check(y, t.i0())
    ints = np.array([-2, 0, 3])
    for ours, theirs in ((lt.erfc, torch.erfc), (lt.i0, torch.i0), (special.ndtr, torch.special.ndtr),
                         (special.i1e, torch.special.i1e)):
        check(ours(ints), theirs(torch.tensor(ints)))  # the default float, as torch
        check(ours(lt.asarray(np.float64(0.75))), theirs(torch.tensor(0.75, dtype=torch.float64)))
        check(ours(lt.zeros((0, 2))), theirs(torch.zeros((0, 2))))
    check(lt.i0(lt.asarray(arr)), np.i0(arr.astype(np.float64)).astype(np.float32))


GRADIENTS = {"erfc": (lt.erfc, torch.erfc, (-3, 3)), "erfcx": (special.erfcx, torch.special.erfcx, (-3, 10)), "ndtr": (special.ndtr, torch.special.ndtr, (-5, 5)),
             "log_ndtr": (special.log_ndtr, torch.special.log_ndtr, (-30, 5)),
             "ndtri": (special.ndtri, torch.special.ndtri, (0.001, 0.999)),
             "i0": (lt.i0, torch.special.i0, (-30, 30)), "i0e": (special.i0e, torch.special.i0e, (-30, 30)),
             "i1": (special.i1, torch.special.i1, (-30, 30)), "i1e": (special.i1e, torch.special.i1e, (-30, 30))}


@pytest.mark.parametrize("name", list(GRADIENTS))
def test_gradients_of_erfc_normal_and_bessel_functions_are_torchs(name):
    ours, theirs, (low, high) = GRADIENTS[name]
    arr = random_array((4, 5), lt.float64, seed=15, low=low, high=high)
    if name.startswith("i1"):
        arr[0, 0] = 0.0  # the limit 1/2 there
    x, t = lt.asarray(arr).requires_grad_(), torch.tensor(arr, requires_grad=True)
    ours(x).sum().backward()
    theirs(t).sum().backward()
    check(x.grad, t.grad)


def test_xlog1py_entr_and_expit_match_torch():
    x = np.array([0.0, 0.0, 1.0, 2.5, -1.0])
    y = np.array([-1.0, math.nan, 2.0, 0.5, -0.5])
    check(special.xlog1py(lt.asarray(x), lt.asarray(y)), torch.special.xlog1py(torch.tensor(x), torch.tensor(y)))
    check(special.xlog1py(2, lt.asarray(y.astype(np.float32))), torch.special.xlog1py(2, torch.tensor(y).float()))
    e = np.array([0.0, 0.5, 1.0, -1.0, math.inf, math.nan])
    check(special.entr(lt.asarray(e)), torch.special.entr(torch.tensor(e)))
    check(special.expit(lt.asarray(e)), torch.special.expit(torch.tensor(e)))
    check(special.gammaln(lt.asarray(e[:3] + 1)), torch.special.gammaln(torch.tensor(e[:3] + 1)))
    check(special.log_softmax(lt.asarray(x), 0), torch.special.log_softmax(torch.tensor(x), 0))


INT_DTYPES = [lt.int8, lt.int16, lt.int32, lt.int64, lt.uint8, lt.uint32]


@pytest.mark.parametrize("dtype", INT_DTYPES)
def test_gcd_and_lcm_match_numpy(dtype):
    info = np.iinfo(dtype.name)
    a = random_array((7, 30), dtype, seed=7)
    b = random_array((1, 30), dtype, seed=8)  # broadcast
    edges = np.array([0, 0, 1, info.max, info.min, info.min, 12, 0], dtype.name)
    other = np.array([0, 5, info.max, info.max, 0, info.min, 18, info.min], dtype.name)
    for x, y in ((a, b), (edges, other), (a.T, b.T)):
        with np.errstate(over="ignore"):
            check(lt.gcd(lt.asarray(x), lt.asarray(y)), np.gcd(x, y))
            check(lt.lcm(lt.asarray(x), lt.asarray(y)), np.lcm(x, y))


def test_gcd_takes_the_fibonacci_worst_case_and_python_numbers_and_refuses_floats():
    fib = [1, 1]
    while fib[-1] < 2 ** 62:
        fib.append(fib[-1] + fib[-2])
    a, b = np.array(fib[1:], np.int64), np.array(fib[:-1], np.int64)  # consecutive: the most steps
    check(lt.gcd(lt.asarray(a), lt.asarray(b)), np.gcd(a, b))
    check(np.gcd(lt.asarray(np.array([12, 18], np.int16)), 8), np.gcd(np.array([12, 18], np.int16), 8))
    check(lt.asarray(np.array([4, 6])).lcm(lt.asarray(np.array([6, 4]))), np.lcm([4, 6], [6, 4]))
    with pytest.raises(lt.DTypeError, match="gcd: integer operands only"):
        lt.gcd(lt.asarray(np.array([1.5])), 2)
    with pytest.raises(lt.DTypeError):
        lt.lcm(lt.asarray(np.array([True])), lt.asarray(np.array([False])))


@pytest.mark.parametrize("dtype", [lt.float16, lt.float32, lt.float64])
def test_frexp_matches_numpy(dtype):
    info = np.finfo(dtype.name)
    arr = np.concatenate([random_array((50,), lt.float64, seed=9, low=-1e4, high=1e4).astype(dtype.name),
                          np.array([0.0, -0.0, 1.0, -3.5, info.tiny, info.tiny / 8, info.smallest_subnormal, info.max,
                                    -info.max, np.inf, -np.inf, np.nan], dtype.name)])
    mantissa, exponent = lt.frexp(lt.asarray(arr))
    expected_m, expected_e = np.frexp(arr)
    check(mantissa, expected_m)
    check(exponent, expected_e)
    m2, e2 = np.frexp(lt.asarray(arr.reshape(2, -1)).T)  # NumPy's call, on a view
    check(m2, expected_m.reshape(2, -1).T)
    check(e2, expected_e.reshape(2, -1).T)


def test_frexp_of_bfloat16_is_torchs():
    arr = np.array([1e-40, 3.0, -0.1, 0.0, 1e38], np.float32)
    m, e = lt.asarray(arr).astype(lt.bfloat16).frexp()
    tm, te = torch.frexp(torch.tensor(arr).bfloat16())
    check(m, tm)
    check(e, te)
