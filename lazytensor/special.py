"""Special functions, as PyTorch's `torch.special` and SciPy's `scipy.special` name them: `lgamma` (`gammaln`),
`digamma` (`psi`), `polygamma`, `erfinv`, `erfc`, `erfcx`, `ndtr`, `log_ndtr`, `ndtri`, the modified Bessel functions `i0`,
`i0e`, `i1`, `i1e`, `xlog1py`, and NumPy's integer `gcd`/`lcm` and float `frexp`; the
namespace `lt.special` also holds lazytensor's functions under `torch.special`'s names (`expit`, `ndtr`, ...).

Each is composed of lazytensor's elementwise ops (so both backends run it, fused with what surrounds it), in the
working precision of `Tensor._composite` (float64 for float32 and float64, float32 for the 16-bit floats) and
rounded once:
- lgamma: Lanczos' sum (g = 7, nine terms) from 1/2 up, the reflection formula below it (sin(pi x) of x's distance
  to the nearest integer, exact); +inf at the poles (0 and the negative integers) and at +-inf, as PyTorch.
- digamma and polygamma: the recurrence up to x + N, then the asymptotic (Euler-Maclaurin) series of
  log x / the Hurwitz zeta function; below 1/2 the reflection formula, whose n-th derivative of cot(pi x) is a
  polynomial in cot(pi x) (built here for each n). digamma is -inf at +0, +inf at -0 and NaN at the negative
  integers, as PyTorch.
- erfinv: Giles' single-precision approximation, then two Newton steps on erf(y) = x in the working precision:
  float64 results are accurate to about 1e-16 / (1 - |x|) relative (erf's rounding near 1 limits them).
- erfc, ndtr, log_ndtr: 1 - erf near 0; in the tails exp(-x**2) (the square an exact pair) times erfcx, a
  Chebyshev series over all x >= 0, so no tail loses digits to cancellation or to the rounded square.
- ndtri: sqrt 2 erfinv(2p - 1) in the central half (2p - 1 exact there); the tails Newton on log ndtr.
- i0, i1 and their scaled e**-|x| forms: the power series up to 18, the asymptotic series past it.
"""
from __future__ import annotations

import math
from functools import cache
from typing import Any

import numpy as np

from . import dtypes
from .creation import asarray
from .errors import DTypeError
from .tensor import Tensor, _two_product, _Working, where
from .ufuncs import _float, _pair

# Lanczos' coefficients for g = 7, n = 9 (Numerical Recipes' and Boost's choice: about 1e-15 relative in Gamma)
_LANCZOS_G = 7
_LANCZOS = (0.99999999999980993, 676.5203681218851, -1259.1392167224028, 771.32342877765313, -176.61502916214059,
            12.507343278686905, -0.13857109526572012, 9.9843695780195716e-6, 1.5056327351493116e-7)
_HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)
# the Bernoulli numbers B_2j, j = 1..8: digamma's asymptotic series is log x - 1/(2x) - sum B_2j / (2j x**2j)
_BERNOULLI = (1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66, -691 / 2730, 7 / 6, -3617 / 510)
_SHIFT = 10  # digamma's recurrence: x + 10 is past 10.5, where eight terms of the series reach 1e-17


def _near_integer(x: Tensor) -> Tensor:
    """x minus the nearest integer, in [-1/2, 1/2] (exact), with x's sign where it is 0 (so that cot(pi r) is
    +-inf on the side x is on)."""
    r = x - x.round()
    return where(r == 0, x * 0, r)


def _lgamma(w: _Working, x: Tensor) -> Tensor:
    def from_half(z: Tensor) -> Tensor:  # z >= 1/2
        series = _LANCZOS[0] + sum(c / (z + (k - 1)) for k, c in enumerate(_LANCZOS[1:], 1))
        t = z + (_LANCZOS_G - 0.5)
        return (z - 0.5) * t.log() - t + (series.log() + _HALF_LOG_2PI)

    below = x < 0.5
    up = from_half(where(below, 1 - x, x))
    # Gamma(x) Gamma(1 - x) = pi / sin(pi x)
    reflected = (math.pi / (_near_integer(x) * math.pi).sin().abs()).log() - up
    out = where(below, reflected, up)
    return where(x.isinf(), math.inf, out)


def lgamma(x: Any, /) -> Tensor:
    """log |Gamma(x)| (PyTorch's `lgamma`, SciPy's `gammaln`): see the module for the method and special values."""
    return _float(x)._composite(_lgamma, lambda g, x: [g * digamma(x)], name="lgamma")


def _cot_derivative(n: int) -> tuple[float, ...]:
    """The coefficients, highest first, of the polynomial P with d^n/du^n cot(u) = P(cot u): cot' = -(1 + cot**2)."""
    p = np.polynomial.Polynomial([0.0, 1.0])
    for _ in range(n):
        p = p.deriv() * np.polynomial.Polynomial([-1.0, 0.0, -1.0])
    return tuple(float(c) for c in reversed(p.coef))


@cache
def _zeta_terms(n: int) -> tuple[int, float, tuple[float, ...]]:
    """For polygamma(n >= 1): the recurrence's length N, n!, and the Euler-Maclaurin coefficients
    B_2j / (2j)! * s (s + 1) ... (s + 2j - 2) of y**-(s + 2j - 1), s = n + 1."""
    s = n + 1
    terms, rising = [], 1.0
    for j, b in enumerate(_BERNOULLI, 1):
        rising *= s + 2 * j - 2 if j == 1 else (s + 2 * j - 3) * (s + 2 * j - 2)
        terms.append(b / math.factorial(2 * j) * rising)
    return _SHIFT + 2 * n, float(math.factorial(n)), tuple(terms)


def _polygamma_from_half(n: int, x: Tensor) -> Tensor:
    """polygamma(n, x) for x >= 1/2."""
    if n == 0:
        shifted = x + _SHIFT
        inv2 = 1 / (shifted * shifted)
        series = sum(b / (2 * j) * inv2 ** j for j, b in enumerate(_BERNOULLI, 1))
        tail = shifted.log() - 0.5 / shifted - series
        return tail - sum(1 / (x + k) for k in range(_SHIFT))
    length, factorial, terms = _zeta_terms(n)
    s = n + 1
    y = x + length
    inv = 1 / y
    # Hurwitz zeta(s, x): the first terms, then the integral, half the next term and the corrections
    head = sum((1 / (x + k)) ** s for k in range(length))
    tail = inv ** n / n + inv ** s * 0.5 + sum(c * inv ** (s + 2 * j + 1) for j, c in enumerate(terms))
    zeta = head + tail
    return zeta * (factorial if n % 2 else -factorial)


def _polygamma(n: int, x: Tensor) -> Tensor:
    below = x < 0.5
    up = _polygamma_from_half(n, where(below, 1 - x, x))
    # psi^(n)(x) = (-1)**n psi^(n)(1 - x) - pi**(n + 1) cot^(n)(pi x)
    cot = 1 / (_near_integer(x) * math.pi).tan()
    poly = _horner(_cot_derivative(n), cot)
    reflected = (up if n % 2 == 0 else -up) - poly * math.pi ** (n + 1)
    out = where(below, reflected, up)
    if n == 0:  # the negative integers are poles of no sign: NaN, as PyTorch (0's sign picks its infinity)
        out = where((x < 0) & (x == x.round()), math.nan, out)
        return where(x == math.inf, math.inf, where(x == -math.inf, math.nan, out))
    return where(x == math.inf, 0.0, where(x == -math.inf, math.nan, out))


def polygamma(n: int, x: Any, /) -> Tensor:
    """The n-th derivative of digamma (PyTorch's `polygamma(n, x)`, `n` a Python int >= 0)."""
    if not isinstance(n, (int, np.integer)) or isinstance(n, bool) or n < 0:
        raise ValueError(f"polygamma: n must be an integer >= 0, got {n!r}")
    n = int(n)
    return _float(x)._composite(lambda w, x: _polygamma(n, x), lambda g, x: [g * polygamma(n + 1, x)],
                                name="polygamma")


def digamma(x: Any, /) -> Tensor:
    """The logarithmic derivative of Gamma (PyTorch's `digamma`, SciPy's `psi`): see the module."""
    return polygamma(0, x)


# Giles' single-precision approximation of erfinv, in w = -log(1 - x**2): below 5, and its square root's above
_ERFINV_CENTRAL = (2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087, -0.00125372503,
                   -0.00417768164, 0.246640727, 1.50140941)
_ERFINV_TAIL = (-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773, -0.0076224613,
                0.00943887047, 1.00167406, 2.83297682)
_TWO_OVER_SQRT_PI = 2 / math.sqrt(math.pi)


def _horner(coefficients: tuple[float, ...], t: Tensor) -> Tensor:
    """The polynomial of `coefficients` (highest first) at t."""
    out: Any = coefficients[0]
    for c in coefficients[1:]:
        out = out * t + c
    return out


def _erfinv(w: _Working, x: Tensor) -> Tensor:
    a = x.abs()
    logs = -((1 - a) * (1 + a)).log()
    central = _horner(_ERFINV_CENTRAL, logs - 2.5)
    tail = _horner(_ERFINV_TAIL, logs.sqrt() - 3)
    y = where(logs < 5, central, tail) * a
    for _ in range(2):  # Newton on erf(y) = a: each step doubles the digits
        y = y - (y.erf() - a) / ((-y * y).exp() * _TWO_OVER_SQRT_PI)
    y = where(a == 1, math.inf, where(a > 1, math.nan, y))
    return y.copysign(x)


def erfinv(x: Any, /) -> Tensor:
    """The inverse of erf on (-1, 1): +-inf at +-1, NaN outside [-1, 1] (see the module for its accuracy)."""
    def backward(g: Tensor, x: Tensor) -> list[Tensor]:
        y = erfinv(x)
        return [g * (y * y).exp() * (math.sqrt(math.pi) / 2)]

    return _float(x)._composite(_erfinv, backward, name="erfinv")


# Chebyshev coefficients of (1 + 2x) erfcx(x) in t = (x - 3.75) / (x + 3.75), which maps [0, inf] onto [-1, 1]
# (Shepherd and Laframboise's form of erfc): interpolated at 90 Chebyshev points from mpmath's erfc at 40 digits;
# the next term is below 1e-19.
_ERFCX_SCALE = 3.75
_ERFCX = (1.1775789345674017, -0.004590054580646478, -0.08424913336651792, 0.05920993999819189,
          -0.026658668435305753, 0.009074997670705265, -0.002413163540417608, 0.0004907758365258086,
          -6.916973302501207e-05, 4.13902798607301e-06, 7.74038306619849e-07, -2.1886401049234397e-07,
          1.076499946567091e-08, 4.521959811218287e-09, -7.754400208831351e-10, -6.318088340886684e-11,
          2.86879501093067e-11, 1.9455868545777347e-13, -9.65469674843344e-13, 3.25254814814874e-14,
          3.3478119482868056e-14, -1.864562880419313e-15, -1.2507950530688648e-15, 7.418235256624043e-17,
          5.068148904796111e-17, -2.237056659436e-18, -2.187342944303018e-18)
_SQRT_HALF = math.sqrt(0.5)
_SQRT_2_OVER_PI = math.sqrt(2 / math.pi)


def _chebyshev(coefficients: tuple[float, ...], t: Tensor) -> Tensor:
    """The Chebyshev series sum c_k T_k(t) (Clenshaw's recurrence), t in [-1, 1]."""
    b1: Any = 0.0
    b2: Any = 0.0
    for c in reversed(coefficients[1:]):
        b1, b2 = t * 2 * b1 - b2 + c, b1
    return t * b1 - b2 + coefficients[0]


def _erfcx(a: Tensor) -> Tensor:
    """exp(a**2) erfc(a) for a >= 0 (+inf included), to a few ulps: no cancellation anywhere."""
    finite = where(a.isinf(), _ERFCX_SCALE, a)
    scaled = _chebyshev(_ERFCX, (finite - _ERFCX_SCALE) / (finite + _ERFCX_SCALE)) / (finite * 2 + 1)
    return where(a.isinf(), 0.0, scaled)


def _square(w: _Working, x: Tensor) -> tuple[Tensor, Tensor]:
    """x**2 as hi + lo exactly (lo 0 where hi overflows): exp(-x**2) of the rounded square would be off by
    x**2 ulps."""
    hi, lo = _two_product(w, x, x)
    return hi, where(hi.isfinite(), lo, 0.0)


def _exp_neg_square(w: _Working, x: Tensor, scale: float) -> Tensor:
    """exp(-scale x**2) (scale 1 or 1/2, exact on the two parts) to an ulp for any x."""
    hi, lo = _square(w, x)
    return (-hi * scale).exp() * (1 - lo * scale)


def _erfc(w: _Working, x: Tensor) -> Tensor:
    a = x.abs()
    tail = _exp_neg_square(w, a, 1.0) * _erfcx(a)
    return where(a < 0.5, 1 - x.erf(), where(x > 0, tail, 2 - tail))


def erfc(x: Any, /) -> Tensor:
    """The complementary error function 1 - erf(x), with no cancellation: its relative error stays a few ulps
    far into the tail (erfc(26) is 5.7e-296), as PyTorch's and SciPy's."""
    return _float(x)._composite(_erfc, lambda g, x: [g * (-x * x).exp() * -_TWO_OVER_SQRT_PI], name="erfc")


def _erfcx_everywhere(w: _Working, x: Tensor) -> Tensor:
    """erfcx of any x: left of 0, 2 exp(x**2) (the square an exact pair) less erfcx(|x|), which is at most 1."""
    a = x.abs()
    hi, lo = _square(w, a)
    return where(x < 0, hi.exp() * (1 + lo) * 2 - _erfcx(a), _erfcx(a))


def erfcx(x: Any, /) -> Tensor:
    """The scaled complementary error function exp(x**2) erfc(x) (PyTorch's and SciPy's `erfcx`): about
    1 / (x sqrt(pi)) far right, with neither overflow nor cancellation; inf far left, where exp(x**2) overflows."""
    return _float(x)._composite(_erfcx_everywhere, lambda g, x: [g * (x * 2 * erfcx(x) - _TWO_OVER_SQRT_PI)],
                                name="erfcx")


def _lower_tail(w: _Working, x: Tensor) -> Tensor:
    """ndtr(-|x|), the smaller tail: exp(-x**2 / 2) erfcx(|x| / sqrt 2) / 2."""
    a = x.abs()
    return _exp_neg_square(w, a, 0.5) * _erfcx(a * _SQRT_HALF) * 0.5


def _ndtr(w: _Working, x: Tensor) -> Tensor:
    tail = _lower_tail(w, x)
    return where(x.abs() < _SQRT_HALF, (x * _SQRT_HALF).erf() * 0.5 + 0.5, where(x < 0, tail, 1 - tail))


def ndtr(x: Any, /) -> Tensor:
    """The standard normal distribution function, the area under the Gaussian left of x (PyTorch's and SciPy's
    `ndtr`); each tail to a few ulps relative (ndtr(-37) is 5.7e-300)."""
    return _float(x)._composite(_ndtr, lambda g, x: [g * (x * x * -0.5).exp() * (0.5 * _SQRT_2_OVER_PI)],
                                name="ndtr")


def _log_ndtr_left(w: _Working, x: Tensor) -> Tensor:
    """log ndtr(x) for x <= 0, as log(erfcx(-x / sqrt 2) / 2) - x**2 / 2: finite down to where x**2 overflows."""
    hi, lo = _square(w, x)
    return (_erfcx(-x * _SQRT_HALF) * 0.5).log() - hi * 0.5 - lo * 0.5


def _log_ndtr(w: _Working, x: Tensor) -> Tensor:
    # right of -1 ndtr is at least 0.16: its log, or log1p of the upper tail where that is small
    right = where(x > 0, (-_lower_tail(w, x)).log1p(), _ndtr(w, x).log())
    return where(x < -1, _log_ndtr_left(w, x.minimum(0)), right)


def log_ndtr(x: Any, /) -> Tensor:
    """log ndtr(x), accurate in both tails: -x**2 / 2 - log(-x sqrt(2 pi)) + ... far left, where ndtr underflows
    (PyTorch's and SciPy's `log_ndtr`)."""
    def backward(g: Tensor, x: Tensor) -> list[Tensor]:
        # the Gaussian over ndtr, in logs: both underflow far left
        return [g * (x * x * -0.5 - log_ndtr(x)).exp() * (0.5 * _SQRT_2_OVER_PI)]

    return _float(x)._composite(_log_ndtr, backward, name="log_ndtr")


# Abramowitz and Stegun 26.2.23: the normal quantile's tail to 4.5e-4, in t = sqrt(-2 log q)
_NDTRI_NUMERATOR = (0.010328, 0.802853, 2.515517)
_NDTRI_DENOMINATOR = (0.001308, 0.189269, 1.432788, 1.0)


def _ndtri(w: _Working, p: Tensor) -> Tensor:
    # the central half: sqrt 2 erfinv(2p - 1), where 2p - 1 is exact
    central = _erfinv(w, p * 2 - 1) * math.sqrt(2)
    # the tails, q the smaller of p and 1 - p (exact): A&S's estimate, then Newton on log ndtr(x) = log q, which
    # is nearly linear there; each step squares the error (4.5e-4, 3e-7, 2e-13, below an ulp)
    q = p.minimum(1 - p)
    log_q = where(q > 0, q, 1.0).log()
    t = (log_q * -2).sqrt()
    x = _horner(_NDTRI_NUMERATOR, t) / _horner(_NDTRI_DENOMINATOR, t) - t
    for _ in range(3):
        # d log ndtr / dx = pdf / ndtr = sqrt(2 / pi) / erfcx(-x / sqrt 2)
        x = x - (_log_ndtr_left(w, x) - log_q) * _erfcx(-x * _SQRT_HALF) / _SQRT_2_OVER_PI
    tail = where(p > 0.5, -x, x)
    out = where((p >= 0.25) & (p <= 0.75), central, tail)
    out = where(q == 0, where(p > 0.5, math.inf, -math.inf), out)
    return where((p >= 0) & (p <= 1), out, math.nan)


def ndtri(p: Any, /) -> Tensor:
    """The inverse of `ndtr` (the standard normal quantile, PyTorch's and SciPy's `ndtri`): -inf at 0, inf at 1,
    NaN outside [0, 1]; a few ulps relative in float64 down to the smallest subnormal p."""
    def backward(g: Tensor, p: Tensor) -> list[Tensor]:
        x = ndtri(p)
        return [g * (x * x * 0.5).exp() * math.sqrt(2 * math.pi)]

    return _float(p)._composite(_ndtri, backward, name="ndtri")


# The modified Bessel functions I0 and I1: their power series up to _BESSEL_SPLIT (45 terms reach an ulp there),
# the asymptotic series e**x / sqrt(2 pi x) sum (-1)**k a_k(nu) / x**k past it (30 terms: 3e-16 at the split)
_BESSEL_SPLIT = 18.0


@cache
def _bessel_terms(nu: int) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """I_nu's coefficients, highest first: of its power series in (x/2)**2 (over (x/2)**nu), and of its
    asymptotic series in 1/x (over e**x / sqrt(2 pi x))."""
    power = tuple(1 / (math.factorial(k) * math.factorial(k + nu)) for k in range(45))
    asymptotic = [1.0]
    for j in range(1, 30):
        asymptotic.append(asymptotic[-1] * ((2 * j - 1) ** 2 - 4 * nu * nu) / (8 * j))
    return power[::-1], tuple(asymptotic[::-1])


def _scaled_bessel(nu: int, x: Tensor) -> Tensor:
    """e**-|x| I_nu(x) (SciPy's `i0e`, `i1e`)."""
    power, asymptotic = _bessel_terms(nu)
    a = x.abs()
    near = where(a > _BESSEL_SPLIT, 0.0, a)
    series = _horner(power, near * near * 0.25) * (-near).exp()
    if nu == 1:
        series = series * near * 0.5
    far = where(a > _BESSEL_SPLIT, a, _BESSEL_SPLIT)
    expansion = _horner(asymptotic, 1 / far) / (far * (2 * math.pi)).sqrt()
    out = where(a > _BESSEL_SPLIT, expansion, series)
    return out.copysign(x) if nu == 1 else out


def _bessel(nu: int, x: Tensor) -> Tensor:
    """I_nu(x) = e**|x| i_nu e(x): inf past the exponent's range, as PyTorch's (-inf for I1 left of it)."""
    return where(x.isinf(), x if nu == 1 else x.abs(), _scaled_bessel(nu, x) * x.abs().exp())


def i0(x: Any, /) -> Tensor:
    """The modified Bessel function of the first kind of order 0 (PyTorch's `i0`, NumPy's `np.i0`)."""
    return _float(x)._composite(lambda w, x: _bessel(0, x), lambda g, x: [g * i1(x)], name="i0")


def i0e(x: Any, /) -> Tensor:
    """e**-|x| i0(x), which neither overflows nor loses accuracy for large |x| (PyTorch's and SciPy's)."""
    return _float(x)._composite(lambda w, x: _scaled_bessel(0, x), lambda g, x: [g * (i1e(x) - x.sign() * i0e(x))],
                                name="i0e")


def i1(x: Any, /) -> Tensor:
    """The modified Bessel function of the first kind of order 1 (PyTorch's and SciPy's), odd in x."""
    def backward(g: Tensor, x: Tensor) -> list[Tensor]:
        # i0(x) - i1(x) / x, 1/2 at 0
        at_zero = x == 0
        return [g * where(at_zero, 0.5, i0(x) - i1(x) / where(at_zero, 1.0, x))]

    return _float(x)._composite(lambda w, x: _bessel(1, x), backward, name="i1")


def i1e(x: Any, /) -> Tensor:
    """e**-|x| i1(x) (PyTorch's and SciPy's)."""
    def backward(g: Tensor, x: Tensor) -> list[Tensor]:
        # i0e(x) - i1e(x) (sign(x) + 1 / x), 1/2 at 0
        at_zero = x == 0
        return [g * where(at_zero, 0.5, i0e(x) - i1e(x) * (x.sign() + 1 / where(at_zero, 1.0, x)))]

    return _float(x)._composite(lambda w, x: _scaled_bessel(1, x), backward, name="i1e")


def xlog1py(x: Any, y: Any, /) -> Tensor:
    """x * log1p(y), 0 where x is 0 (unless y is NaN), as PyTorch's and SciPy's."""
    a, b = _pair(x, y, "xlog1py", floats=True)
    return where((a == 0) & ~b.isnan(), 0.0, a * b.log1p())


# Euclid's algorithm needs at most this many steps for operands of this many bits (the Fibonacci numbers are its
# worst case: F(k) > 2**bits past k = 1.44 bits + 2)
def _euclid_steps(bits: int) -> int:
    return int(1.4405 * bits) + 3


def _integers(x1: Any, x2: Any, name: str) -> tuple[Tensor, Tensor]:
    a, b = _pair(x1, x2, name)
    if not a.dtype.is_int:
        raise DTypeError(f"{name}: integer operands only, got {a.dtype.name}")
    return a, b


def gcd(x1: Any, x2: Any, /) -> Tensor:
    """The greatest common divisor of |x1| and |x2| (NumPy's: 0 for gcd(0, 0); the most negative integer's
    magnitude wraps as NumPy's does)."""
    a, b = _integers(x1, x2, "gcd")
    # Euclid on the magnitudes (a floor remainder keeps |r| < |b| also where the most negative integer's stays
    # negative)
    a, b = a.abs(), b.abs()
    for _ in range(_euclid_steps(8 * a.dtype.itemsize)):
        zero = b == 0
        a, b = where(zero, a, b), where(zero, 0, a.remainder(where(zero, 1, b)))
    return a.abs()


def lcm(x1: Any, x2: Any, /) -> Tensor:
    """The least common multiple of |x1| and |x2| (NumPy's: 0 where either is 0; wrapped where it does not fit)."""
    a, b = _integers(x1, x2, "lcm")
    d = gcd(a, b)
    return where(d == 0, 0, a.abs() // where(d == 0, 1, d) * b.abs())  # wrapping past the dtype as NumPy's


# float dtype -> (its bits' integer dtype, mantissa bits, exponent bias)
_LAYOUT = {dtypes.float16: (dtypes.int16, 10, 15), dtypes.bfloat16: (dtypes.int16, 7, 127),
           dtypes.float32: (dtypes.int32, 23, 127), dtypes.float64: (dtypes.int64, 52, 1023)}


def frexp(x: Any, /) -> tuple[Tensor, Tensor]:
    """(mantissa, exponent) with x = mantissa * 2**exponent, |mantissa| in [0.5, 1) (NumPy's and PyTorch's
    `frexp`; the exponent int32): 0, inf and NaN are their own mantissa with exponent 0; subnormals
    normalized. Integers are frexp of the default float."""
    t = _float(x)
    word, bits, bias = _LAYOUT[t.dtype]
    # a subnormal scaled by 2**bits is normal: its exponent is read there, less bits
    tiny = (t != 0) & (t.abs() < dtypes.finfo(t.dtype).smallest_normal)
    scaled = where(tiny, t * float(2 ** bits), t)
    raw = scaled._bitcast(word)
    field = (raw >> bits) & ((1 << (8 * t.dtype.itemsize - 1 - bits)) - 1)
    special = (t == 0) | t.isinf() | t.isnan()
    exponent = where(special, 0, field - (bias - 1) - where(tiny, bits, 0)).cast(dtypes.int32)
    exponent_mask = ((1 << (8 * t.dtype.itemsize - 1 - bits)) - 1) << bits
    mantissa = ((raw & ~exponent_mask) | ((bias - 1) << bits))._bitcast(t.dtype)
    return where(special, t, mantissa), exponent


def entr(x: Any, /) -> Tensor:
    """-x log x for x > 0, 0 at 0, -inf below 0 (PyTorch's and SciPy's `entr`)."""
    t = _float(x)
    return where(t > 0, -t * t.log(), where(t == 0, 0.0, where(t < 0, -math.inf, t)))


def expit(x: Any, /) -> Tensor:
    """The logistic sigmoid, 1 / (1 + exp(-x))."""
    return _float(x).sigmoid()


def _of_method(name: str) -> Any:
    def function(x: Any, /, *args: Any, **kwargs: Any) -> Any:
        return getattr(asarray(x), name)(*args, **kwargs)
    function.__name__ = function.__qualname__ = name
    function.__doc__ = f"`x.{name}(...)`, under `torch.special`'s name."
    return function


# torch.special's names for lazytensor's functions
gammaln, psi = lgamma, digamma
erf, exp2, expm1, log1p, logit, xlogy, sinc, round, logsumexp, softmax, log_softmax = map(
    _of_method, ("erf", "exp2", "expm1", "log1p", "logit", "xlogy", "sinc", "round", "logsumexp", "softmax",
                 "log_softmax"))

__all__ = ["digamma", "entr", "erf", "erfc", "erfcx", "erfinv", "exp2", "expit", "expm1", "frexp", "gammaln", "gcd", "i0",
           "i0e", "i1", "i1e", "lcm", "lgamma", "log1p", "log_ndtr", "log_softmax", "logit", "logsumexp", "ndtr", "ndtri",
           "polygamma", "psi", "round", "sinc", "softmax", "xlog1py", "xlogy"]
