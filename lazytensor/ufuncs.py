"""NumPy's elementwise functions that are compositions of lazytensor's ops: `fmax`, `fmin`, `fmod`, `fabs`,
`deg2rad`/`radians`, `rad2deg`/`degrees`, `cbrt`, `sinc`, `heaviside`, `ldexp`, `modf`, `logaddexp2`,
`float_power`, `isposinf`, `isneginf`, `select` (and NumPy's other names for lazytensor's: `mod`, `power`, `true_divide`).

Their dtypes are lazytensor's promotion of the operands (a Python scalar is weak); the functions of floats give
integers and bools the default float, as `exp` does (NumPy's float64). The compositions are chosen so that no
step rounds where NumPy's C function does not: each result is NumPy's, but `cbrt`'s and `sinc`'s, within an ulp
of it (their library functions differ).
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from . import dtypes
from .creation import asarray
from .errors import DTypeError
from .tensor import Tensor, _is_scalar, where


def _pair(x1: Any, x2: Any, name: str, floats: bool = False) -> tuple[Tensor, Tensor]:
    """Two operands promoted together and broadcast (a Python scalar weak, on either side); with `floats`,
    integers and bools as the default float."""
    if not isinstance(x1, Tensor):
        x1 = Tensor._scalar(x1, dtypes.weak_result_type(x2.dtype, x1), x2.device, name) \
            if _is_scalar(x1) and isinstance(x2, Tensor) else asarray(x1)
    (a, b), _ = x1._float_operands([x2], name) if floats else x1._operands([x2], name)
    return a, b


def _float(x: Any) -> Tensor:
    t = asarray(x)
    return t if t.dtype.is_float else t.cast(dtypes.get_default_dtype())


def fmax(x1: Any, x2: Any, /) -> Tensor:
    """NumPy's fmax: the elementwise maximum, ignoring NaN (NaN only where both are); `maximum` propagates it."""
    return _ignoring_nan(x1, x2, largest=True)


def fmin(x1: Any, x2: Any, /) -> Tensor:
    """NumPy's fmin: the elementwise minimum, ignoring NaN (NaN only where both are); `minimum` propagates it."""
    return _ignoring_nan(x1, x2, largest=False)


def _ignoring_nan(x1: Any, x2: Any, largest: bool) -> Tensor:
    a, b = _pair(x1, x2, "fmax" if largest else "fmin")
    m = a.maximum(b) if largest else a.minimum(b)
    return where(b.isnan(), a, where(a.isnan(), b, m)) if m.dtype.is_float else m


def fmod(x1: Any, x2: Any, /) -> Tensor:
    """NumPy's fmod, C's: the remainder of the division truncated toward zero, of the dividend's sign (`remainder`
    is Python's, of the divisor's). A float's is the remainder of the magnitudes with x1's sign (exact: the
    magnitudes' remainders agree); an integer's by 0 is 0, as NumPy's."""
    a, b = _pair(x1, x2, "fmod")
    if a.dtype.is_float:
        return a.abs().remainder(b.abs()).copysign(a)
    r = a.remainder(b)
    if a.dtype.kind == "u" or a.dtype == dtypes.bool_:
        return r
    return where((r != 0) & ((r < 0) != (a < 0)), r - b, r)


def fabs(x: Any, /) -> Tensor:
    """NumPy's fabs: the absolute value as a float (integers and bools the default float)."""
    return _float(x).abs()


def deg2rad(x: Any, /) -> Tensor:
    """Degrees to radians: x * (pi / 180), the factor rounded as NumPy's (see `_ratio`)."""
    t = _float(x)
    return t * _ratio(math.pi, 180, t.dtype)


def rad2deg(x: Any, /) -> Tensor:
    """Radians to degrees: x * (180 / pi), the factor rounded as NumPy's (see `_ratio`)."""
    t = _float(x)
    return t * _ratio(180, math.pi, t.dtype)


def _ratio(a: float, b: float, dtype: dtypes.DType) -> float:
    """a / b as NumPy's C loops compute it for `dtype`: in float64 for float64, else in float32 (its 16-bit
    floats' loops are float32's)."""
    scalar = np.float64 if dtype == dtypes.float64 else np.float32
    return float(scalar(a) / scalar(b))


radians = deg2rad
degrees = rad2deg


def cbrt(x: Any, /) -> Tensor:
    """The real cube root (negative for negative x): |x| ** (1/3) in float64 and one Newton step, within an ulp
    of NumPy's (exact for perfect cubes), x's sign; zeros, infinities and NaN as they are."""
    t = _float(x)
    wide = t.cast(dtypes.float64)
    magnitude = wide.abs()
    y = magnitude ** (1 / 3)
    y = y - (y * y * y - magnitude) / (3 * y * y)
    special = (magnitude == 0) | magnitude.isinf() | magnitude.isnan()
    return where(special, wide, y.copysign(wide)).cast(t.dtype)


def sinc(x: Any, /) -> Tensor:
    """The normalized sinc, sin(pi x) / (pi x), 1 at 0 (NumPy's)."""
    t = _float(x)
    y = math.pi * where(t == 0, 1.0e-20, t)
    return y.sin() / y


def heaviside(x1: Any, x2: Any, /) -> Tensor:
    """NumPy's heaviside step: 0 where x1 < 0, x2 where x1 == 0, 1 where x1 > 0, NaN where x1 is NaN."""
    a, b = _pair(x1, x2, "heaviside", floats=True)
    step = where(a < 0, 0, where(a > 0, 1, b)).cast(a.dtype)
    return where(a.isnan(), a, step)


def ldexp(x1: Any, x2: Any, /) -> Tensor:
    """x1 * 2**x2 for an integer x2 (x1 a float, integers the default float): by two powers of 2, each of
    which a float holds exactly, so that neither overflows where the result does not."""
    a = _float(x1)
    e = x2 if _is_scalar(x2) else asarray(x2)
    if isinstance(e, (float, bool)) or isinstance(e, Tensor) and not e.dtype.is_int:
        raise DTypeError(f"ldexp: the exponents must be integers, got {getattr(e, 'dtype', type(e).__name__)}")
    half = e // 2
    return a * _exp2(half, a) * _exp2(e - half, a)


def _exp2(e: Any, like: Tensor) -> Any:
    """2**e in like's dtype, for an integer tensor or number e."""
    return e.cast(like.dtype).exp2() if isinstance(e, Tensor) else 2.0 ** max(min(e, 2000), -2000)


def modf(x: Any, /) -> tuple[Tensor, Tensor]:
    """NumPy's modf: the fractional and integral parts, both of x's sign (integers the default float); an
    infinity's fractional part is 0."""
    t = _float(x)
    whole = t.trunc()
    return where(t.isinf(), 0.0, t - whole).copysign(t), whole


def logaddexp2(x1: Any, x2: Any, /) -> Tensor:
    """log2(2**x1 + 2**x2) without overflow: the larger plus log2(1 + 2**-|x1 - x2|) (x1 + 1 where they are
    equal, so two equal infinities give that infinity)."""
    a, b = _pair(x1, x2, "logaddexp2", floats=True)
    larger = a.maximum(b)
    out = larger + (-(a - b).abs()).exp2().log1p() * (1 / math.log(2))
    return where(a == b, a + 1, out)


def float_power(x1: Any, x2: Any, /) -> Tensor:
    """NumPy's float_power: x1 ** x2 in float64, whatever the operands' dtypes."""
    a, b = _pair(x1, x2, "float_power")
    return a.cast(dtypes.float64).pow(b.cast(dtypes.float64))


def isposinf(x: Any, /) -> Tensor:
    """Whether each element is +inf (false for integers and bools)."""
    t = asarray(x)
    return t.isinf() & ~t.signbit()


def isneginf(x: Any, /) -> Tensor:
    """Whether each element is -inf (false for integers and bools)."""
    t = asarray(x)
    return t.isinf() & t.signbit()


def select(condlist: Any, choicelist: Any, default: Any = 0) -> Tensor:
    """NumPy's select: from the first choice whose condition holds at each element (conditions bool, all
    broadcast together), else `default`; the choices' and the default's dtypes promoted."""
    conditions, choices = list(condlist), list(choicelist)
    if len(conditions) != len(choices):
        raise ValueError(f"select: {len(conditions)} conditions for {len(choices)} choices")
    conditions = [asarray(c) for c in conditions]
    if any(c.dtype != dtypes.bool_ for c in conditions):
        raise TypeError("select: the conditions must be bool tensors")
    out = default
    for condition, choice in reversed(list(zip(conditions, choices))):
        out = where(condition, choice, out)
    return out if isinstance(out, Tensor) else asarray(out)


__all__ = ["cbrt", "deg2rad", "degrees", "fabs", "float_power", "fmax", "fmin", "fmod", "heaviside", "isneginf",
           "isposinf", "ldexp", "logaddexp2", "modf", "rad2deg", "radians", "select", "sinc"]
