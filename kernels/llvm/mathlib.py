"""Vectorizable float32/float64 transcendental functions, emitted as LLVM IR.

A call to the C library (`expf`, `sin`, ...) stops LLVM's loop vectorizer: it
cannot widen an opaque call. The functions here are emitted inline instead,
from instructions that all have vector forms: IEEE arithmetic, `llvm.fma`,
`llvm.rint`, `llvm.fabs`, `llvm.copysign`, integer bit manipulation through
`bitcast`, `select` instead of branches, and, for the trigonometric range
reduction of large arguments, loads from a constant table (vector gathers).

Every function follows the usual pattern of vector math libraries
(Cephes, fdlibm, SLEEF): an exact or extra-precise argument reduction to a
small interval, a minimax polynomial on that interval, a reconstruction, and
`select`s for the special values (NaN, infinities, signed zeros, overflow and
underflow thresholds). The code is our own; the polynomial coefficients were
fitted for this module with a Remez exchange (weighted by the relative error
of the final result, coefficients rounded to the working precision one at a
time with the rest re-fitted) and are accurate to a small fraction of an ulp.

sin, cos and tan are the exception to straight-line code: they have a cheap
reduction (Cody-Waite, for |x| < 2**30) and an expensive one (Payne-Hanek,
for larger |x|, inf and NaN), and straight-line vector code would pay for
both. So they are calls to module-internal functions that branch: per element
in the scalar function, per vector ("does any lane need the expensive
reduction?") in its vector variants, which the call names for LLVM's loop
vectorizer with the `vector-function-abi-variant` attribute. The runtime
inlines the variants into the vector loops after vectorization. The section
"sin, cos, tan" below has the details and the error analysis.

Accuracy: the largest errors measured over ~10**7 arguments per function and
dtype, spread over the whole range (random bit patterns, each function's
domain, small magnitudes), in ulps:

            exp  exp2 expm1  log  log2 log1p  sin   cos   tan  tanh  erf  atan2
  float32  1.00  0.87  0.81  0.83  0.82  0.83  0.50  0.50  0.50  0.95  0.99  0.50
  float64  0.99  0.81  0.82  0.81  0.76  0.82  0.77  0.77  0.99  0.73  0.85  0.64

(float32 tanh: every float32 in [2**-14, 9.5], each sign; it is evaluated in
float32, at float32's vector width, where double would make it 0.50 ulp in
1.6 times the time. Over every third finite float32, NumPy's float32 tanh is
within 1.37 ulp, XLA's (jax) 4.8, PyTorch's (SLEEF) 0.51. float64 erf over
~2*10**5 arguments only: its reference is mpmath. sin, cos, tan: also ~10**7
arguments log-spaced in [1/8, 2**31], where the reduction switches; the
table-driven reduction alone measured the same there. atan2: over ~4*10**6
pairs, against x87 long double atan2.)
tests/test_mathlib.py asserts bounds of 0.51 to 1.25 ulp per function, plus the
special values. No libm fallback is left. sin/cos/tan are accurate for every
finite argument, including the floats closest to multiples of pi/2: the cheap
reduction is exact enough for the worst case below 2**30, the table-driven one
has enough bits of 2/pi for the worst case of each precision.

FMA is assumed to be native (every x86-64 CPU with AVX2 has it); without it
`llvm.fma` becomes a correct but slow library call.
"""
from __future__ import annotations

import math
import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from functools import cache

from llvmlite import ir
from llvmlite.ir.instructions import CallInstrAttributes

from ..dtype import DType, float32, float64
from ..ir import Alu, Kernel, VOp
from ..legalize import ATAN_CONSTANTS, ATAN_FAR, ATAN_MID, ATAN_P, ATAN_TINY, SCALE_ABOVE, SCALE_BELOW

I1, I32, I64 = ir.IntType(1), ir.IntType(32), ir.IntType(64)


# ---- exact constants ----------------------------------------------------------------------------

# Bits of precision of the integer-scaled constants below: enough for the
# Payne-Hanek tables of float64 (exponents up to 971, plus ~200 bits of fraction).
_SCALE = 1400


@cache
def _pi_scaled() -> int:
    """floor(pi * 2**_SCALE) (up to the last bit), from Machin's formula in integer arithmetic:
    pi = 16 atan(1/5) - 4 atan(1/239)."""
    guard = 40
    one = 1 << (_SCALE + guard)

    def atan_inv(n: int) -> int:
        total, term, k, sign = 0, one // n, 1, 1
        while term:
            total += sign * (term // k)
            term //= n * n
            k += 2
            sign = -sign
        return total

    return (16 * atan_inv(5) - 4 * atan_inv(239)) >> guard


@cache
def _ln2_scaled() -> int:
    """floor(ln 2 * 2**_SCALE) (up to the last bit), from ln 2 = sum 1 / (k 2**k)."""
    guard = 40
    one = 1 << (_SCALE + guard)
    return sum((one >> k) // k for k in range(1, _SCALE + guard)) >> guard


@cache
def _pi() -> Fraction:
    return Fraction(_pi_scaled(), 1 << _SCALE)


@cache
def _ln2() -> Fraction:
    return Fraction(_ln2_scaled(), 1 << _SCALE)


@cache
def _log2e() -> Fraction:
    return 1 / _ln2()


@cache
def _round(x: Fraction, bits: int) -> float:
    """`x` rounded to nearest (ties to even) with `bits` significant bits, as an exact float."""
    if x == 0:
        return 0.0
    e = abs(x.numerator).bit_length() - abs(x.denominator).bit_length()
    if abs(x) < Fraction(2) ** e:
        e -= 1  # now 2**e <= |x| < 2**(e+1)
    unit = Fraction(2) ** (e - bits + 1)
    return float(round(x / unit) * unit)


@cache
def _split(x: Fraction, bits: int, parts: int) -> tuple[float, ...]:
    """`x` as an unevaluated sum of `parts` floats of at most `bits` significant bits each."""
    out = []
    for _ in range(parts):
        out.append(_round(x, bits))
        x -= Fraction(out[-1])
    return tuple(out)


# ---- floating-point formats -------------------------------------------------------------------------


@dataclass(frozen=True)
class _Format:
    """An IEEE binary format and the integer type of the same width."""

    bits: int
    mant: int  # explicit mantissa bits
    ftype: ir.Type
    itype: ir.IntType

    @property
    def precision(self) -> int:
        return self.mant + 1

    @property
    def bias(self) -> int:
        return (1 << (self.bits - self.mant - 2)) - 1

    def round(self, x: Fraction) -> float:
        return _round(x, self.precision)


F32 = _Format(32, 23, ir.FloatType(), I32)
F64 = _Format(64, 52, ir.DoubleType(), I64)


def _mangle(t: ir.Type) -> str:
    """A type as LLVM writes it in the names of overloaded intrinsics (f64, v8f32, v8p0)."""
    if isinstance(t, ir.VectorType):
        return f"v{t.count}{_mangle(t.element)}"
    return "p0" if isinstance(t, ir.PointerType) else t.intrinsic_name


def _intrinsic(module: ir.Module, name: str, fnty: ir.FunctionType, overloads: Sequence[ir.Type] = ()) -> ir.Function:
    """The intrinsic `name` for the overloaded types `overloads` (default: the first argument's),
    as in `llvm.fma.v8f32`: llvmlite's `declare_intrinsic` cannot name vector overloads."""
    full = ".".join([name, *(_mangle(t) for t in overloads or fnty.args[:1])])
    return module.globals.get(full) or ir.Function(module, fnty, full)


class _Emit:
    """Arithmetic on one float format, every helper rendering to vectorizable instructions; on
    scalars, or on vectors of `lanes` elements."""

    def __init__(self, b: ir.IRBuilder, fmt: _Format, lanes: int = 0):
        self.b, self.fmt, self.lanes = b, fmt, lanes
        self.t, self.it = self.of(fmt.ftype), self.of(fmt.itype)

    def of(self, scalar: ir.Type) -> ir.Type:
        """`scalar`, or a vector of it when this emitter works on vectors."""
        return ir.VectorType(scalar, self.lanes) if self.lanes else scalar

    # constants and intrinsics
    def c(self, value: float | Fraction) -> ir.Constant:
        return ir.Constant(self.t, self.fmt.round(Fraction(value)) if isinstance(value, Fraction) else value)

    def ci(self, value: int) -> ir.Constant:
        return ir.Constant(self.it, value)

    def call(self, name: str, *args: ir.Value) -> ir.Value:
        fnty = ir.FunctionType(self.t, [self.t] * len(args))
        return self.b.call(_intrinsic(self.b.module, name, fnty), list(args))

    def fma(self, a: ir.Value, x: ir.Value, y: ir.Value) -> ir.Value:
        """a * x + y with one rounding."""
        return self.call("llvm.fma", a, x, y)

    def rint(self, x: ir.Value) -> ir.Value:
        """Round to the nearest integer, ties to even (the default rounding mode)."""
        return self.call("llvm.rint", x)

    def fabs(self, x: ir.Value) -> ir.Value:
        return self.call("llvm.fabs", x)

    def copysign(self, x: ir.Value, sign: ir.Value) -> ir.Value:
        return self.call("llvm.copysign", x, sign)

    # arithmetic
    def add(self, x: ir.Value, y: ir.Value) -> ir.Value:
        return self.b.fadd(x, y)

    def sub(self, x: ir.Value, y: ir.Value) -> ir.Value:
        return self.b.fsub(x, y)

    def mul(self, x: ir.Value, y: ir.Value) -> ir.Value:
        return self.b.fmul(x, y)

    def div(self, x: ir.Value, y: ir.Value) -> ir.Value:
        return self.b.fdiv(x, y)

    def neg(self, x: ir.Value) -> ir.Value:
        return self.b.fneg(x)

    def poly(self, x: ir.Value, coeffs: Sequence[float]) -> ir.Value:
        """sum coeffs[k] * x**k by Horner's rule with fused multiply-adds."""
        acc: ir.Value = self.c(coeffs[-1])
        for k in reversed(coeffs[:-1]):
            acc = self.fma(acc, x, self.c(k))
        return acc

    # comparisons and selection
    def cmp(self, op: str, x: ir.Value, y: ir.Value) -> ir.Value:
        """Ordered comparison: false when either side is NaN."""
        return self.b.fcmp_ordered(op, x, y)

    def isnan(self, x: ir.Value) -> ir.Value:
        return self.b.fcmp_unordered("uno", x, x)

    def select(self, cond: ir.Value, x: ir.Value, y: ir.Value) -> ir.Value:
        return self.b.select(cond, x, y)

    def clamp(self, x: ir.Value, lo: float, hi: float) -> ir.Value:
        """x limited to [lo, hi]; NaN becomes lo (so no NaN reaches a float-to-int conversion,
        which would be poison). The ordered-compare-and-select is one max/min instruction on x86."""
        x = self.select(self.cmp(">", x, self.c(lo)), x, self.c(lo))
        return self.select(self.cmp("<", x, self.c(hi)), x, self.c(hi))

    # bits
    def to_bits(self, x: ir.Value) -> ir.Value:
        return self.b.bitcast(x, self.it)

    def from_bits(self, i: ir.Value) -> ir.Value:
        return self.b.bitcast(i, self.t)

    def to_int(self, x: ir.Value) -> ir.Value:
        """An integral float (|x| < 2**31) as an integer of the format's width. The conversion
        goes through i32, which has a vector instruction even without AVX-512."""
        n = self.b.fptosi(x, self.of(I32))
        return n if self.fmt.itype is I32 else self.b.sext(n, self.it)

    def pow2(self, k: ir.Value) -> ir.Value:
        """2**k for an integer k in the normal exponent range, built from its bits."""
        return self.from_bits(self.b.shl(self.b.add(k, self.ci(self.fmt.bias)), self.ci(self.fmt.mant)))

    def ldexp(self, y: ir.Value, k: ir.Value) -> ir.Value:
        """y * 2**k for |k| up to twice the exponent range. The two factors are normal powers of
        two, so the first product is exact and the second rounds once: a correctly rounded
        subnormal result, or a clean overflow to infinity."""
        k1 = self.b.ashr(k, self.ci(1))
        return self.mul(self.mul(y, self.pow2(k1)), self.pow2(self.b.sub(k, k1)))

    # error-free transformations
    def two_sum(self, a: ir.Value, b: ir.Value) -> tuple[ir.Value, ir.Value]:
        """(s, e) with s = fl(a + b) and s + e = a + b exactly (Knuth)."""
        s = self.add(a, b)
        bv = self.sub(s, a)
        av = self.sub(s, bv)
        return s, self.add(self.sub(a, av), self.sub(b, bv))

    def fast_two_sum(self, a: ir.Value, b: ir.Value) -> tuple[ir.Value, ir.Value]:
        """(s, e) with s + e = a + b exactly, provided |a| >= |b| or a == 0 (Dekker)."""
        s = self.add(a, b)
        return s, self.sub(b, self.sub(s, a))

    def two_prod(self, a: ir.Value, b: ir.Value) -> tuple[ir.Value, ir.Value]:
        """(p, e) with p = fl(a * b) and p + e = a * b exactly."""
        p = self.mul(a, b)
        return p, self.fma(a, b, self.neg(p))


# ---- polynomial coefficients ----------------------------------------------------------------------
# Fitted offline (Remez exchange in 80-digit arithmetic); the interval and the quantity each
# approximates are given with it. Keyed by the float width the polynomial is evaluated in.

# e**r = 1 + r + r**2 Q(r) on |r| <= ln(2)/2, relative error of e**r
EXP_Q: dict[int, tuple[float, ...]] = {
    32: (0.4999999403953552, 0.16666516661643982, 0.04166810214519501, 0.00836919154971838,
         0.0013838871382176876),
    64: (0.5000000000000011, 0.16666666666666438, 0.04166666666652578, 0.008333333333473698,
         0.0013888888944871153, 0.00019841269560725536, 2.4801491730011756e-05,
         2.755752999555895e-06, 2.76307634820767e-07, 2.5020390233894454e-08),
}
# 2**r = 1 + r P(r) on |r| <= 1/2, relative error of 2**r
EXP2_P: dict[int, tuple[float, ...]] = {
    32: (0.6931472420692444, 0.24022655189037323, 0.05550272762775421, 0.009617065079510212,
         0.0013417720329016447, 0.0001582458062330261),
    64: (0.6931471805599453, 0.2402265069591007, 0.05550410866482338, 0.00961812910763023,
         0.0013333558146033108, 0.00015403530388885775, 1.5252734167313642e-05,
         1.32154913343527e-06, 1.0177932096495121e-07, 7.0529480197676954e-09,
         4.473345372574385e-10, 2.8730836587257175e-11),
}
# e**r - 1 = r + r**2 Q(r) on |r| <= ln(2)/2, relative error of e**r - 1
EXPM1_Q: dict[int, tuple[float, ...]] = {
    32: (0.5, 0.1666666567325592, 0.04166646674275398, 0.008333643898367882, 0.001393503276631236,
         0.00019662325212266296),
    64: (0.5000000000000001, 0.1666666666666667, 0.041666666666649095, 0.00833333333332864,
         0.0013888888897487508, 0.0001984126986515293, 2.4801570176307307e-05,
         2.755726691007404e-06, 2.757207430651505e-07, 2.510086103724915e-08,
         1.6308680591422445e-09),
}
# tanh a = a + a**3 P(a**2) on |a| <= 1, relative error of tanh below 2**-27.6 (fitted by Lawson's weighted
# least squares rather than Remez, in double, each coefficient rounded to float32 with the rest refitted)
TANH_P: tuple[float, ...] = (-0.33333295583724976, 0.13332346081733704, -0.053879838436841965, 0.021486632525920868,
                             -0.007945920340716839, 0.0023011411540210247, -0.00035836739698424935)
# 2 atanh(s) = 2 s + s z R(z), z = s**2 <= (3 - 2 sqrt(2))**2, relative error of log(1+f)
LOG_R: dict[int, tuple[float, ...]] = {
    32: (0.6666666269302368, 0.40000972151756287, 0.2849879264831543, 0.24278856813907623),
    64: (0.6666666666666735, 0.3999999999940935, 0.2857142874368666, 0.2222219842896374,
         0.18183572354427444, 0.15313832233378338, 0.14798257315784638),
}
# sin r = r + r**3 S(r**2) on |r| <= pi/4 (float32 evaluates in double)
SIN_S: dict[int, tuple[float, ...]] = {
    32: (-0.1666666664079688, 0.00833332930482176, -0.00019839312262673526, 2.7181215622376325e-06),
    64: (-0.1666666666666663, 0.00833333333332184, -0.00019841269829358533, 2.7557313538518516e-06,
         -2.5050734390284653e-08, 1.589543336658652e-10),
}
# sin r = r + r**3 S(r**2) on |r| <= pi/2 (1 + 2**-20), in double: the float32 sin and cos of
# the cheap reduction; relative error of sin r below 2**-34
SIN_S_HALF_PI: tuple[float, ...] = (
    -0.16666666664532123, 0.008333332374779538, -0.00019841002341154128, 2.7531112037002214e-06,
    -2.3974641236464027e-08)
# cos r = 1 - r**2/2 + r**4 C(r**2) on |r| <= pi/4 (float32 evaluates in double)
COS_C: dict[int, tuple[float, ...]] = {
    32: (0.041666666619492004, -0.0013888883500120079, 2.4799460164223472e-05,
         -2.7205754890700237e-07),
    64: (0.041666666666666595, -0.0013888888888873342, 2.480158728900208e-05,
         -2.75573142170391e-07, 2.087570539614482e-09, -1.1358749252666661e-11),
}
# erf x = x + x P(x**2) on |x| <= 1, relative error of erf
ERF_SMALL: dict[int, tuple[float, ...]] = {
    32: (0.12837916612625122, -0.3761262595653534, 0.11283578723669052, -0.026853347197175026,
         0.005187162198126316, -0.0007997853099368513, 7.806903886375949e-05),
    64: (0.12837916709551256, -0.37612638903183343, 0.11283791670936952, -0.026866170641959602,
         0.005223977596741741, -0.0008548325485381068, 0.00012055280511025198,
         -1.492446597351935e-05, 1.6444155340506707e-06, -1.618403225905197e-07,
         1.3616894426198813e-08, -7.608204376104361e-10),
}
# erfc x = t exp(Q(t - tc) - x**2), t = 2/(2 + x), on 1 <= x <= 4 (float32) or 6
# (float64), weighted by erfc(x) / erf(x): the relative error of erf
ERF_LARGE: dict[int, tuple[float, ...]] = {
    32: (-0.6717945337295532, 1.3452693223953247, 0.19063962996006012, -0.39597633481025696,
         -0.025617361068725586),
    64: (-0.7274922853522043, 1.3276012289349421, 0.23442498153088098, -0.34412908970731326,
         -0.21311759085111803, 0.24359228669663982, 0.19619535128774956, -0.26571411314531257,
         -0.17052664319408287, 0.3523999422653472, 0.07998321424461338, -0.47254232774816385,
         0.2909667529218917),
}
ERF_SPLIT = 1.0
ERF_TC: dict[int, float] = {32: 0.5, 64: 0.4583333333333333}  # ~(t(1) + t(top)) / 2

# ---- exp, exp2, expm1 ---------------------------------------------------------------------------------
# Cody-Waite reduction x = n ln2 + r, |r| <= ln(2)/2, with ln2 in two parts: with an FMA,
# x - n*ln2_hi is exact (n < 2**11 and the result is small), so r carries only the rounding of
# the second step. The result 2**n * e**r is scaled by `ldexp`, which rounds once, also into the
# subnormal range. The clamps keep n in range and turn NaN into a number (NaN is restored at
# the end); they lie beyond the overflow and underflow thresholds, so those thresholds come
# out of the arithmetic itself.

_EXP_CLAMP = {32: (-104.0, 89.0), 64: (-746.0, 710.0)}
_EXP2_CLAMP = {32: (-151.0, 129.0), 64: (-1076.0, 1025.0)}
_EXPM1_CLAMP = {32: (-20.0, 89.5), 64: (-40.0, 710.5)}  # e**lo - 1 rounds to -1


def _exp_reduce(m: _Emit, x: ir.Value) -> tuple[ir.Value, ir.Value]:
    """(n, r) with x = n ln2 + r, n integral (as a float), |r| <= ln(2)/2 (plus rounding)."""
    n = m.rint(m.mul(x, m.c(_log2e())))
    hi, lo = _split(_ln2(), m.fmt.precision, 2)
    r = m.fma(n, m.c(-hi), x)
    return n, m.fma(n, m.c(-lo), r)


def _exp_parts(m: _Emit, x: ir.Value) -> tuple[ir.Value, ir.Value]:
    """(n, e**r) with e**x = 2**n e**r, n integral (as a float), for x already inside the clamp range (no NaN)."""
    n, r = _exp_reduce(m, x)
    return n, m.add(m.fma(m.mul(r, r), m.poly(r, EXP_Q[m.fmt.bits]), r), m.c(1.0))


def _exp_core(m: _Emit, x: ir.Value) -> ir.Value:
    """e**x for x already inside the clamp range (no NaN)."""
    n, p = _exp_parts(m, x)
    return m.ldexp(p, m.to_int(n))


def exp(m: _Emit, x: ir.Value) -> ir.Value:
    """e**x."""
    y = _exp_core(m, m.clamp(x, *_EXP_CLAMP[m.fmt.bits]))
    return m.select(m.isnan(x), x, y)


def exp2(m: _Emit, x: ir.Value) -> ir.Value:
    """2**x: the reduction x = n + r is exact."""
    xc = m.clamp(x, *_EXP2_CLAMP[m.fmt.bits])
    n = m.rint(xc)
    r = m.sub(xc, n)  # exact
    y = m.ldexp(m.fma(r, m.poly(r, EXP2_P[m.fmt.bits]), m.c(1.0)), m.to_int(n))
    return m.select(m.isnan(x), x, y)


def _expm1_parts(m: _Emit, x: ir.Value) -> tuple[ir.Value, ir.Value]:
    """e**x - 1 as an unevaluated sum head + tail (|tail| <~ ulp(head)), for x already inside
    the clamp range (no NaN). The tail carries what rounding r and the polynomial lost: with a
    single rounded e**r - 1, the reconstruction below doubles its error when n = 1."""
    b, fmt = m.b, m.fmt
    n = m.rint(m.mul(x, m.c(_log2e())))
    hi, lo = _split(_ln2(), fmt.precision, 2)
    r, r_lo = m.two_sum(m.fma(n, m.c(-hi), x), m.neg(m.mul(n, m.c(lo))))  # x - n ln2
    t = m.mul(m.mul(r, r), m.poly(r, EXPM1_Q[fmt.bits]))
    qh, ql = m.fast_two_sum(r, t)  # e**r - 1 = qh + ql exactly, |t| < |r|
    # e**(r + r_lo) - 1 = (e**r - 1) + r_lo e**r + O(r_lo**2), and e**r ~ 1 + r is plenty here
    ql = m.add(ql, m.fma(r_lo, r, r_lo))
    k = m.to_int(n)
    # 2**k e**r - 1 = (s1 - 1) + s1 q with s1 = 2**k, summed exactly into head + tail; s1 - 1 is
    # exact for -p <= k <= p. For k < -2 the result is near -1: there (-1) + s1 (q + 1) is as
    # good, and exact where s1 - 1 is not. For k > p the 1 moves into the tail, below the
    # head's last bit. Huge k is split off into s2 so that s1 stays finite.
    cap = m.ci(fmt.bias - 1)
    k1 = b.select(b.icmp_signed(">", k, cap), cap, k)
    s1, s2 = m.pow2(k1), m.pow2(b.sub(k, k1))
    far, huge = b.icmp_signed("<", k, m.ci(-2)), b.icmp_signed(">", k, m.ci(fmt.precision))
    first = m.select(far, m.c(-1.0), m.select(huge, s1, m.sub(s1, m.c(1.0))))
    head, err = m.two_sum(first, m.mul(s1, m.select(far, m.add(qh, m.c(1.0)), qh)))
    tail = m.add(m.fma(s1, ql, err), m.select(huge, m.c(-1.0), m.c(0.0)))
    return m.mul(head, s2), m.mul(tail, s2)


def expm1(m: _Emit, x: ir.Value) -> ir.Value:
    """e**x - 1, accurate near 0."""
    head, tail = _expm1_parts(m, m.clamp(x, *_EXPM1_CLAMP[m.fmt.bits]))
    y = m.add(head, tail)
    y = m.select(m.cmp("==", x, m.c(0.0)), x, y)  # -0.0 stays -0.0
    return m.select(m.isnan(x), x, y)


# ---- log, log2, log1p -----------------------------------------------------------------------------
# fdlibm-style: x = 2**k (1 + f) with 1 + f in [sqrt(1/2), sqrt(2)), f exact; then with
# s = f / (2 + f), log(1 + f) = 2 atanh(s) = f - hfsq + s (hfsq + R(s**2)), hfsq = f*f/2, where
# the minimax polynomial R is a small correction. k ln2 uses a `ln2_hi` with trailing zero bits,
# so that k * ln2_hi is exact.


def _bits_of(value: float, fmt: _Format) -> int:
    if fmt.bits == 32:
        return struct.unpack("<I", struct.pack("<f", value))[0]
    return struct.unpack("<Q", struct.pack("<d", value))[0]


def _decompose(m: _Emit, x: ir.Value) -> tuple[ir.Value, ir.Value]:
    """(k, f) with x = 2**k (1 + f), 1 + f in [c, 2c), c ~ sqrt(1/2); x positive and normal.

    Subtracting the bits of c moves the mantissas below c into the next binade, so one
    arithmetic shift yields k, and removing k from the exponent field leaves 1 + f."""
    b, fmt = m.b, m.fmt
    off = _bits_of(fmt.round(Fraction(0.7071067811865476)), fmt)
    i = m.to_bits(x)
    k = b.ashr(b.sub(i, m.ci(off)), m.ci(fmt.mant))
    one_plus_f = m.from_bits(b.sub(i, b.shl(k, m.ci(fmt.mant))))
    return b.sitofp(k, m.t), m.sub(one_plus_f, m.c(1.0))  # exact (Sterbenz)


def _log1p_terms(m: _Emit, f: ir.Value) -> tuple[ir.Value, ir.Value]:
    """(hfsq, s (hfsq + R)): log(1 + f) = f - hfsq + s (hfsq + R), both terms small against f."""
    s = m.div(f, m.add(f, m.c(2.0)))
    z = m.mul(s, s)
    big_r = m.mul(z, m.poly(z, LOG_R[m.fmt.bits]))
    hfsq = m.mul(m.mul(f, f), m.c(0.5))
    return hfsq, m.mul(s, m.add(hfsq, big_r))


def _ln2_hi_lo(fmt: _Format) -> tuple[float, float]:
    """ln 2 split so that k * hi is exact for every exponent k of the format."""
    kbits = 11 if fmt.bits == 64 else 8
    hi = _round(_ln2(), fmt.precision - kbits)
    return hi, fmt.round(_ln2() - Fraction(hi))


def _log_from(m: _Emit, k: ir.Value, f: ir.Value, extra: ir.Value | None = None) -> ir.Value:
    """k ln2 + log(1 + f) (+ extra, a tiny correction), rounded once at the end."""
    hi, lo = _ln2_hi_lo(m.fmt)
    hfsq, corr = _log1p_terms(m, f)
    small = m.mul(k, m.c(lo))
    if extra is not None:
        small = m.add(small, extra)
    tail = m.sub(m.sub(hfsq, m.add(corr, small)), f)
    return m.sub(m.mul(k, m.c(hi)), tail)


def _log_specials(m: _Emit, x: ir.Value, y: ir.Value, pole: float) -> ir.Value:
    """+inf at +inf, -inf at the pole, NaN below the pole or for NaN."""
    inf = float("inf")
    y = m.select(m.cmp("==", x, m.c(inf)), m.c(inf), y)
    y = m.select(m.cmp("==", x, m.c(pole)), m.c(-inf), y)
    return m.select(m.b.fcmp_unordered("<", x, m.c(pole)), m.c(float("nan")), y)


def _log_reduce(m: _Emit, x: ir.Value) -> tuple[ir.Value, ir.Value]:
    """`_decompose` extended to subnormal x, which are first scaled into the normal range."""
    shift = m.fmt.precision + 1
    min_normal = 2.0 ** (1 - m.fmt.bias)
    tiny = m.cmp("<", x, m.c(min_normal))
    k, f = _decompose(m, m.select(tiny, m.mul(x, m.c(2.0 ** shift)), x))
    return m.add(k, m.select(tiny, m.c(-float(shift)), m.c(0.0))), f


def log(m: _Emit, x: ir.Value) -> ir.Value:
    """Natural logarithm."""
    k, f = _log_reduce(m, x)
    return _log_specials(m, x, _log_from(m, k, f), 0.0)


def log2(m: _Emit, x: ir.Value) -> ir.Value:
    """Base-2 logarithm, exact at powers of two."""
    k, f = _log_reduce(m, x)
    hfsq, corr = _log1p_terms(m, f)
    # log(1 + f) as hi + lo: hi = f - hfsq, and its rounding error recovered exactly
    # (f - hi is exact by Sterbenz), so that the multiplication by log2(e) keeps full precision.
    hi = m.sub(f, hfsq)
    lo = m.add(m.sub(m.sub(f, hi), hfsq), corr)
    l2e_hi, l2e_lo = _split(_log2e(), m.fmt.precision, 2)
    ph, pe = m.two_prod(hi, m.c(l2e_hi))
    pl = m.add(pe, m.fma(lo, m.c(l2e_hi), m.mul(hi, m.c(l2e_lo))))
    # k + ph exactly as w + err: |k| >= 1 > |ph| unless k == 0.
    w, err = m.fast_two_sum(k, ph)
    return _log_specials(m, x, m.add(w, m.add(err, pl)), 0.0)


def log1p(m: _Emit, x: ir.Value) -> ir.Value:
    """log(1 + x), accurate near 0."""
    # u = fl(1 + x) loses the low bits of x; c (exact, by TwoSum) puts them back as log(u + c)
    # = log(u) + c/u. u >= 2**-p whenever x > -1, so u is normal.
    u, c = m.two_sum(m.c(1.0), x)
    k, f = _decompose(m, u)
    y = _log_from(m, k, f, m.div(c, u))
    y = m.select(m.cmp("==", x, m.c(0.0)), x, y)  # -0.0 stays -0.0
    return _log_specials(m, x, y, -1.0)


# ---- tanh, erf ------------------------------------------------------------------------------------


def tanh(m: _Emit, x: ir.Value) -> ir.Value:
    """Hyperbolic tangent."""
    if m.fmt.bits == 32:
        return _tanh_f32(m, x)
    # fdlibm's split: for |x| < 1, tanh = -t / (t + 2) with t = expm1(-2|x|) (no cancellation);
    # above, tanh = 1 - 2 / (t + 2) with t = expm1(2|x|). One expm1 serves both branches, and it
    # comes as head + tail, so the quotient is formed to near double the working precision
    # (a plain t / (t + 2) would add up to ~2 ulps).
    ax = m.fabs(x)
    big = m.cmp(">=", ax, m.c(1.0))
    cap = 20.0 if m.fmt.bits == 32 else 40.0  # tanh rounds to 1 well before
    two_x = m.mul(m.clamp(ax, 0.0, cap), m.c(2.0))
    th, tl = _expm1_parts(m, m.select(big, two_x, m.neg(two_x)))
    nh, nl = m.select(big, m.c(2.0), m.neg(th)), m.select(big, m.c(0.0), m.neg(tl))
    dh, de = m.two_sum(th, m.c(2.0))
    dl = m.add(de, tl)
    q0 = m.div(nh, dh)
    residual = m.fma(m.neg(q0), dl, m.add(m.fma(m.neg(q0), dh, nh), nl))  # n - q0 d
    q = m.add(q0, m.div(residual, dh))
    y = m.copysign(m.select(big, m.sub(m.c(1.0), q), q), x)
    return m.select(m.isnan(x), x, y)


def _tanh_f32(m: _Emit, x: ir.Value) -> ir.Value:
    """tanh of a float32, in float32, so that a loop of it runs at float32's vector width (evaluated in double,
    the loop ran at half of it, with twice the vector divisions, for 0.50 ulp rather than 0.95).
    a = |x| <= 1: a + a**3 P(a**2), the leading a exact. Above, 1 - 2 / (e**2a + 1): tanh >= 3/4 there, so
    2 / (e**2a + 1) <= 1/4 brings a quarter of its relative error to the result, and exp's error stays well
    under an ulp of tanh."""
    ax = m.fabs(x)
    z = m.mul(ax, ax)
    near_zero = m.fma(m.mul(z, ax), m.poly(z, TANH_P), ax)
    # tanh rounds to 1 from 9.0109, and NaN becomes 19 here (no NaN reaches the float-to-int conversion; it
    # is kept by the compare below), so 0 <= n <= 28 and 2**n goes straight into e**r's exponent field
    n, e_r = _exp_parts(m, m.mul(m.select(m.cmp("<", ax, m.c(9.5)), ax, m.c(9.5)), m.c(2.0)))
    e = m.from_bits(m.b.add(m.to_bits(e_r), m.b.shl(m.to_int(n), m.ci(m.fmt.mant))))
    far = m.sub(m.c(1.0), m.div(m.c(2.0), m.add(e, m.c(1.0))))
    return m.copysign(m.select(m.cmp(">", ax, m.c(1.0)), far, near_zero), x)  # NaN: near_zero keeps it


def erf(m: _Emit, x: ir.Value) -> ir.Value:
    """The error function."""
    # |x| < 1: erf = x + x P(x**2) (odd minimax polynomial; the leading x is exact).
    # 1 <= |x| < b: erf = 1 - erfc, erfc(x) = t exp(Q(t - tc) - x**2), t = 2 / (2 + x), where
    #   Q(t) ~ log(erfc(x) e**(x**2) / t) is smooth in t (the substitution of the classic
    #   Chebyshev fit of erfc, as in Numerical Recipes' erfcc); the polynomial is weighted by the
    #   error it causes in erf, not erfc.
    # |x| >= b: erf rounds to +-1 (b = 4 for float32, 6 for float64).
    # Near x = 1 erfc is a sixth of erf, so its error must stay near 1 ulp: t, x**2 and the
    # exponent are carried as head + tail, leaving the rounding of exp and of the product.
    bits = m.fmt.bits
    ax = m.fabs(x)
    small = m.fma(ax, m.poly(m.mul(ax, ax), ERF_SMALL[bits]), ax)
    xb = m.clamp(ax, ERF_SPLIT, 4.0 if bits == 32 else 6.0)
    den, den_err = m.two_sum(xb, m.c(2.0))
    th = m.div(m.c(2.0), den)
    tl = m.div(m.fma(m.neg(th), den_err, m.fma(m.neg(th), den, m.c(2.0))), den)  # 2/(2 + x) - th
    c0, c1, *rest = ERF_LARGE[bits]
    u = m.sub(th, m.c(ERF_TC[bits]))  # exact (Sterbenz)
    slope = m.mul(u, m.poly(u, [c1, *rest]))  # Q(t - tc) - c0, small
    zh, zl = m.two_prod(xb, xb)
    a, a_err = m.two_sum(m.c(c0), m.neg(zh))
    ah, b_err = m.two_sum(a, slope)
    # exponent = ah + al; the tail of t moves Q by Q'(u) tl ~ c1 tl
    al = m.fma(m.c(c1), tl, m.sub(m.add(a_err, b_err), zl))
    e = _exp_core(m, ah)
    erfc = m.fma(th, e, m.mul(e, m.fma(th, al, tl)))  # (th + tl) e**ah (1 + al)
    large = m.sub(m.c(1.0), erfc)
    y = m.copysign(m.select(m.cmp("<", ax, m.c(ERF_SPLIT)), small, large), x)
    return m.select(m.isnan(x), x, y)


# ---- sin, cos, tan ------------------------------------------------------------------------------------
# Reduction x = (n + f) pi/2, |f| <= 1/2, then sin and cos of r = f pi/2 (|r| <= pi/4) are minimax
# polynomials and the quadrant n mod 4 picks and negates them. Two reductions, chosen per call:
#
# |x| < _SMALL_MAX (2**30): Cody-Waite, n = rint(x 2/pi), r = x - n C1 - n C2 (- n C3), with pi/2 =
#   C1 + C2 + C3 + ... in 53-bit pieces. x - n C1 is exact in one FMA (x and n C1 are multiples of
#   2**-53 and the difference is below 1), and so are n C2 (TwoProd) and the TwoSum that subtracts
#   it. What is left is below n 2**-105 (float32 works in double and stops after C2: its error is
#   the FMA's rounding and n C3 < 2**-76). The floats below 2**30 closest to a multiple of pi/2 are
#   2**-27.8 away for float32 and 2**-60.5 for float64 (from the continued fraction of 2**E 2/pi
#   for each exponent E; tests/test_mathlib.py lists one per exponent), so r keeps a relative error
#   below 2**-48 (float32) and 2**-66 (float64): nothing of note in the result.
# Larger |x|, inf and NaN: a Payne-Hanek scheme. With |x| = M 2**E (M the integer significand),
#   only 2**E 2/pi modulo 4 matters for n mod 4 and f, because M is an integer. That residue U_E is
#   tabulated per exponent (a few doubles, loaded per lane), and M U_E is formed with error-free
#   products and sums. float32 works in double: a double-double U_E makes the residue accurate to
#   ~2**-79, far below the closest approach of a float32 to a multiple of pi/2. float64 needs
#   ~2**-115 (the closest double is ~2**-61 from a multiple of pi/2), so U_E comes in four 53-bit
#   slices at fixed bit positions: that makes the products and partial sums of the leading slices
#   exact, the rest is summed as a double-double, and the residue ends as a double-double.
# float32 evaluates the polynomials in double, leaving only the final rounding to float32; float64
# takes the double-double argument into them.
#
# float32 sin and cos below _SMALL_MAX skip the quadrants: with k = 2n (sin) or 2n + 1 (cos), x - k
# pi/2 = r lies in [-pi/2, pi/2] and the result is +-sin r, one polynomial of r and a sign taken from
# the parity of n. The reduction of k is the same Cody-Waite step in double (k is no larger than n
# above), on x itself, so the sign of x needs no special care.
#
# The choice is a branch, not a `select`, so vector code pays for the large reduction only when a
# lane needs it: sin, cos and tan are calls to internal functions whose call sites name vector
# variants of them (the `vector-function-abi-variant` attribute, VFABI names
# `_ZGV_LLVM_N<lanes>v_<scalar>(<vector>)`). LLVM's loop vectorizer widens such a call into a call
# of the variant of its vectorization factor. Each variant reduces and evaluates the whole vector
# the cheap way, then, only if any lane has |x| >= _SMALL_MAX or is not finite, calls the rare
# path: a `noinline` function that does both reductions and lets each lane take its own. The
# scalar function (the loop's remainder, unvectorized loops) does the same per element. It is
# `noinline`, so that the call survives until the vectorizer; the variants are kept alive until
# then by `llvm.compiler.used` and are `alwaysinline`, for the inliner that the runtime runs after
# its optimization pipeline. The rare path stays out of line: the vector loop keeps only the cheap
# path and a branch, which spares registers and compile time.

_SMALL_MAX = 2.0**30
_VARIANT_LANES = {32: (4, 8, 16), 64: (2, 4, 8)}  # every factor the vectorizer may pick on AVX2 and AVX-512
_RED_EMIN = {32: -24, 64: -53}  # exponent E of the smallest |x| >= pi/4
_RED_EMAX = {32: 127 - 23, 64: 1023 - 52}


@dataclass(frozen=True)
class _Reduced:
    """|x| = (quadrant + r / (pi/2)) pi/2 modulo 2 pi, with r = rh (a double: float32 works in
    double) or r = rh + rl (float64, a double-double)."""

    quadrant: ir.Value
    rh: ir.Value
    rl: ir.Value | None


@cache
def _two_over_pi_scaled() -> int:
    """floor(2/pi * 2**_SCALE) (up to the last bit)."""
    return (1 << (2 * _SCALE + 1)) // _pi_scaled()


@cache
def _reduction_table(bits: int) -> tuple[float, ...]:
    """U_E = 2**E 2/pi mod 4 for E in [_RED_EMIN, _RED_EMAX], flattened: per exponent two doubles
    hi + lo (float32), or four 53-bit slices holding the bits 2**1..2**-51, 2**-52..2**-104,
    2**-105..2**-157 and 2**-158..2**-210 (float64)."""
    t, scale = _two_over_pi_scaled(), _SCALE
    out: list[float] = []
    for e in range(_RED_EMIN[bits], _RED_EMAX[bits] + 1):
        u = (t << e) % (4 << scale) if e >= 0 else t >> -e  # U_E * 2**scale
        if bits == 32:
            hi = u / (1 << scale)  # int / int rounds correctly
            num, den = hi.as_integer_ratio()
            out += [hi, (u - (num << scale) // den) / (1 << scale)]
            continue
        for k, lsb in enumerate((51, 104, 157, 210)):
            shift = scale - lsb
            piece = (u + (1 << (shift - 1))) >> shift if k == 3 else u >> shift  # last one rounded
            out.append(math.ldexp(piece, -lsb))  # exact: at most 53 bits
            u -= piece << shift
    return tuple(out)


@cache
def _table_text(bits: int) -> str:
    """The table as LLVM constant text, formatted once per process (it is large)."""
    values = _reduction_table(bits)
    return "[" + ", ".join(f"double 0x{struct.unpack('<Q', struct.pack('<d', v))[0]:016X}"
                           for v in values) + "]"


def _table(b: ir.IRBuilder, bits: int) -> ir.GlobalVariable:
    """The reduction table as a private constant of the current module."""
    module, name = b.module, f"__lazytensor_rempio2_f{bits}"
    gv = module.globals.get(name)
    if gv is None:
        typ = ir.ArrayType(ir.DoubleType(), len(_reduction_table(bits)))
        gv = ir.GlobalVariable(module, typ, name)
        gv.linkage = "private"
        gv.global_constant = True
        gv.initializer = ir.FormattedConstant(typ, _table_text(bits))
    return gv


def _load_residues(m: _Emit, ax_bits: ir.Value, count: int) -> list[ir.Value]:
    """The `count` table doubles for the exponent of |x| (from the bits of |x|): loads, or gathers
    for vectors. The index is clamped, so lanes that take the other reduction stay in bounds."""
    b, fmt = m.b, m.fmt
    bits = fmt.bits
    idx = b.sub(b.lshr(ax_bits, m.ci(fmt.mant)), m.ci(fmt.bias + fmt.mant + _RED_EMIN[bits]))
    last = m.ci(_RED_EMAX[bits] - _RED_EMIN[bits])
    idx = b.select(b.icmp_signed("<", idx, m.ci(0)), m.ci(0), idx)
    idx = b.select(b.icmp_signed(">", idx, last), last, idx)
    i64 = m.of(I64)
    base = b.mul(idx if fmt.itype is I64 else b.zext(idx, i64), ir.Constant(i64, count))
    table = _table(b, bits)
    if not m.lanes:
        return [b.load(b.gep(table, [b.add(base, I64(k))], source_etype=ir.DoubleType(), inbounds=True),
                       typ=ir.DoubleType()) for k in range(count)]
    # A GEP from a vector of pointers yields a vector of pointers (llvmlite types it by its base).
    tables = ir.Constant(ir.VectorType(ir.PointerType(), m.lanes), [table] * m.lanes)
    t = m.of(ir.DoubleType())
    mask_t = m.of(I1)
    gather = _intrinsic(b.module, "llvm.masked.gather", ir.FunctionType(t, [tables.type, I32, mask_t, t]),
                        [t, tables.type])
    return [b.call(gather, [b.gep(tables, [b.add(base, ir.Constant(i64, k))], source_etype=ir.DoubleType(),
                                  inbounds=True), I32(8), ir.Constant(mask_t, 1), ir.Constant(t, ir.Undefined)])
            for k in range(count)]


def _significand(m: _Emit, ax_bits: ir.Value) -> ir.Value:
    """The integer significand M of a normal |x| as a float of the same format, made by giving
    the mantissa bits the exponent of 2**mant (no int-to-float conversion)."""
    fmt = m.fmt
    mantissa = m.b.and_(ax_bits, m.ci((1 << fmt.mant) - 1))
    return m.from_bits(m.b.or_(mantissa, m.ci((fmt.bias + fmt.mant) << fmt.mant)))


def _double(m: _Emit) -> _Emit:
    """An emitter of doubles for the lanes of `m`."""
    return _Emit(m.b, F64, m.lanes)


def _reduce_small(m: _Emit, ax: ir.Value) -> _Reduced:
    """Cody-Waite reduction of |x| < _SMALL_MAX (see above); |x| < pi/4 comes out unchanged."""
    c1, c2, c3 = _split(_pi() / 2, 53, 3)
    if m.fmt.bits == 32:
        d = _double(m)
        xd = m.b.fpext(ax, d.t)
        n = d.rint(d.mul(xd, d.c(2 / _pi())))
        return _Reduced(m.to_int(n), d.fma(n, d.c(-c2), d.fma(n, d.c(-c1), xd)), None)
    n = m.rint(m.mul(ax, m.c(2 / _pi())))
    h2, l2 = m.two_prod(n, m.c(c2))
    s, e = m.two_sum(m.fma(n, m.c(-c1), ax), m.neg(h2))
    rl = m.fma(n, m.c(-c3), m.sub(e, l2))
    rh, rl = m.fast_two_sum(s, rl)  # |s| >= 2**-61 > |rl| below _SMALL_MAX
    return _Reduced(m.to_int(n), rh, rl)


def _reduce_large_f32(m: _Emit, ax: ir.Value) -> _Reduced:
    """Payne-Hanek reduction of a finite float32 |x| >= pi/4, in double."""
    d = _double(m)
    bits = m.to_bits(ax)
    u0, u1 = _load_residues(m, bits, 2)
    mant = m.b.fpext(_significand(m, bits), d.t)
    h0, l0 = d.two_prod(mant, u0)
    a0 = d.fma(d.rint(d.mul(h0, d.c(0.25))), d.c(-4.0), h0)  # h0 mod 4, exact
    s, e = d.two_sum(a0, l0)
    n = d.rint(s)
    f = d.add(d.sub(s, n), d.fma(mant, u1, e))
    return _Reduced(m.to_int(n), d.mul(f, d.c(_pi() / 2)), None)


def _reduce_large_f64(d: _Emit, ax: ir.Value) -> _Reduced:
    """Payne-Hanek reduction of a finite float64 |x| >= pi/4 to a double-double r."""
    bits = d.to_bits(ax)
    u = _load_residues(d, bits, 4)
    mant = _significand(d, bits)  # < 2**53
    # Slice 0 (bits down to 2**-51): M u0 = h0 + l0 exactly; h0 mod 4 and the fractions of h0 and
    # l0 are exact, and so is their sum (both multiples of 2**-51, |sum| <= 1).
    h0, l0 = d.two_prod(mant, u[0])
    a0 = d.fma(d.rint(d.mul(h0, d.c(0.25))), d.c(-4.0), h0)
    i0, i1 = d.rint(a0), d.rint(l0)
    acc = d.add(d.sub(a0, i0), d.sub(l0, i1))
    i2 = d.rint(acc)
    acc = d.sub(acc, i2)
    # Slice 1 (|M u1| < 4): its fraction joins the accumulator through an exact TwoSum.
    h1, l1 = d.two_prod(mant, u[1])
    i3 = d.rint(h1)
    s, e = d.two_sum(acc, d.sub(h1, i3))
    i4 = d.rint(s)
    s = d.sub(s, i4)
    # Everything else is below 2**-50: sum it as a double-double, exactly down to ~2**-103.
    h2, l2 = d.two_prod(mant, u[2])
    p, pe = d.two_sum(l1, h2)
    p, qe = d.two_sum(p, e)
    low = d.add(d.add(pe, qe), d.fma(mant, u[3], l2))
    fh, fe = d.two_sum(s, p)
    fl = d.add(fe, low)
    i5 = d.rint(fh)
    fh, fl = d.two_sum(d.sub(fh, i5), fl)
    n = d.add(d.add(d.add(i0, i1), d.add(i2, i3)), d.add(i4, i5))
    # r = f pi/2 in double-double.
    p0, p1 = _split(_pi() / 2, 53, 2)
    rh, re = d.two_prod(fh, d.c(p0))
    rl = d.add(re, d.fma(fh, d.c(p1), d.mul(fl, d.c(p0))))
    rh, rl = d.fast_two_sum(rh, rl)
    return _Reduced(d.to_int(n), rh, rl)


_ROUNDER = 1.5 * 2.0**52  # adding it rounds a double below 2**51 to an integer, kept in the low bits


def _sin_or_cos_f32(m: _Emit, x: ir.Value, which: Alu) -> ir.Value:
    """sin or cos (`which`) of a float32 |x| < _SMALL_MAX as +-sin r (see above), in double."""
    d, b = _double(m), m.b
    xd = b.fpext(x, d.t)
    if which is Alu.SIN:
        t = d.fma(xd, d.c(1 / _pi()), d.c(_ROUNDER))
    else:
        t = d.add(d.fma(xd, d.c(1 / _pi()), d.c(-0.5)), d.c(_ROUNDER))
    n = d.sub(t, d.c(_ROUNDER))
    k = d.add(n, n) if which is Alu.SIN else d.fma(n, d.c(2.0), d.c(1.0))
    c1, c2, _ = _split(_pi() / 2, 53, 3)
    r = d.fma(k, d.c(-c2), d.fma(k, d.c(-c1), xd))
    z = d.mul(r, r)
    y = d.mul(r, d.fma(z, d.poly(z, SIN_S_HALF_PI), d.c(1.0)))  # r (1 + z S): sin(-0.0) stays -0.0
    # sin x = (-1)**n sin r; cos x = (-1)**(n + 1) sin r
    sign = b.shl(d.to_bits(t), d.ci(63))
    if which is Alu.COS:
        sign = b.xor(sign, d.ci(1 << 63))
    return b.fptrunc(d.from_bits(b.xor(d.to_bits(y), sign)), m.t)


def _sin_cos_f32(d: _Emit, r: ir.Value) -> tuple[ir.Value, ir.Value]:
    """(sin r, cos r) in double, |r| <= pi/4, accurate far beyond float32."""
    z = d.mul(r, r)
    s = d.fma(d.mul(r, z), d.poly(z, SIN_S[32]), r)
    c = d.fma(d.mul(z, z), d.poly(z, COS_C[32]), d.fma(z, d.c(-0.5), d.c(1.0)))
    return s, c


def _sin_cos_f64(d: _Emit, rh: ir.Value, rl: ir.Value) -> tuple[tuple[ir.Value, ir.Value], tuple[ir.Value, ir.Value]]:
    """sin and cos of rh + rl (|rh| <= pi/4, |rl| <= ulp(rh)), each as an unevaluated sum
    head + tail whose rounding is the only error left of note."""
    z = d.mul(rh, rh)
    # sin(rh + rl) = rh + rh**3 S(z) + rl (1 - z/2)
    s_tail = d.fma(d.mul(z, rh), d.poly(z, SIN_S[64]), d.fma(d.mul(z, d.c(-0.5)), rl, rl))
    # cos(rh + rl) = 1 - z/2 + z**2 C(z) - rh rl, with the rounding of 1 - z/2 recovered
    hz = d.mul(z, d.c(0.5))
    w = d.sub(d.c(1.0), hz)
    c_tail = d.add(d.sub(d.sub(d.c(1.0), w), hz), d.fma(d.mul(z, z), d.poly(z, COS_C[64]), d.neg(d.mul(rh, rl))))
    return (rh, s_tail), (w, c_tail)


def _quadrant_bit(b: ir.IRBuilder, q: ir.Value, bit: int) -> ir.Value:
    return b.icmp_unsigned("!=", b.and_(q, ir.Constant(q.type, bit)), ir.Constant(q.type, 0))


def _flip_sign_like(m: _Emit, y: ir.Value, x: ir.Value) -> ir.Value:
    """y with its sign flipped where x is negative (odd functions computed on |x|)."""
    b = m.b
    sign = b.and_(m.to_bits(x), m.ci(1 << (m.fmt.bits - 1)))
    return m.from_bits(b.xor(m.to_bits(y), sign))


def _evaluate(m: _Emit, x: ir.Value, ax: ir.Value, red: _Reduced, which: Alu) -> ir.Value:
    """sin, cos or tan (`which`) of x from the reduction of |x|: both polynomials, picked by quadrant."""
    b = m.b
    if red.rl is None:
        d = _double(m)
        s, c = _sin_cos_f32(d, red.rh)
        sh, sl, ch, cl = s, None, c, None
    else:
        d = m
        (sh, sl), (ch, cl) = _sin_cos_f64(m, red.rh, red.rl)
    odd, half = _quadrant_bit(b, red.quadrant, 1), _quadrant_bit(b, red.quadrant, 2)

    def total(h: ir.Value, l: ir.Value | None) -> ir.Value:
        return h if l is None else d.add(h, l)

    if which is Alu.TAN:
        # tan = sin r / cos r, or -cos r / sin r in odd quadrants
        nh, dh = d.select(odd, d.neg(ch), sh), d.select(odd, sh, ch)
        if sl is None:
            y = d.div(nh, dh)
        else:
            # divide the head + tail pairs, then correct the quotient by the residual
            nl, dl = d.select(odd, d.neg(cl), sl), d.select(odd, sl, cl)
            den = d.add(dh, dl)
            q0 = d.div(d.add(nh, nl), den)
            res = d.fma(d.neg(q0), dl, d.add(d.fma(d.neg(q0), dh, nh), nl))
            y = d.add(q0, d.div(res, den))
        negate = None
    elif which is Alu.SIN:
        y = d.select(odd, total(ch, cl), total(sh, sl))
        negate = half
    else:
        y = d.select(odd, total(sh, sl), total(ch, cl))
        negate = b.xor(half, odd)  # quadrants 1 and 2
    if negate is not None:
        y = d.select(negate, d.neg(y), y)
    if d is not m:
        y = b.fptrunc(y, m.t)
    if which is not Alu.COS:
        y = _flip_sign_like(m, y, x)
    # sin, cos, tan of +-inf and NaN are NaN
    return m.select(b.fcmp_unordered("==", ax, m.c(float("inf"))), m.sub(x, x), y)


def _keep_alive(module: ir.Module, fn: ir.Function) -> None:
    """Add `fn` to the module's `llvm.compiler.used`, so that no pass deletes it while nothing calls it.
    The array grows in place: with opaque pointers only its length is in the global's type."""
    used = module.globals.get("llvm.compiler.used")
    if used is None:
        used = ir.GlobalVariable(module, ir.ArrayType(ir.PointerType(), 0), "llvm.compiler.used")
        used.linkage, used.section = "appending", "llvm.metadata"
        members: list[ir.Value] = []
    else:
        members = list(used.initializer.constant)
    members.append(fn)
    used.value_type = ir.ArrayType(ir.PointerType(), len(members))
    used.initializer = ir.Constant(used.value_type, members)


def _define(module: ir.Module, name: str, fmt: _Format, lanes: int, inlining: str) -> tuple[_Emit, ir.Value]:
    """A new internal function from a value (lanes == 0) or vector of `fmt` to another, without side
    effects (`inlining`: "noinline" or "alwaysinline"): an emitter at its entry, and its argument."""
    m = _Emit(ir.IRBuilder(), fmt, lanes)
    fn = ir.Function(module, ir.FunctionType(m.t, [m.t]), name)
    fn.linkage = "internal"
    for attr in ("nounwind", "readnone", inlining):
        fn.attributes.add(attr)
    m.b.position_at_end(fn.append_basic_block("entry"))
    return m, fn.args[0]


def _needs_large(m: _Emit, ax: ir.Value) -> ir.Value:
    """Where |x| is beyond the cheap reduction (inf and NaN included)."""
    return m.b.fcmp_unordered(">=", ax, m.c(_SMALL_MAX))


def _trig_name(which: Alu, fmt: _Format, lanes: int) -> str:
    return f"__lazytensor_{which.label}_f{fmt.bits}" + (f"_x{lanes}" if lanes else "")


def _trig_large_function(module: ir.Module, which: Alu, fmt: _Format, lanes: int) -> ir.Function:
    """`which` for any arguments: both reductions, each lane taking its own (the rare path)."""
    name = _trig_name(which, fmt, lanes) + "_large"
    if (fn := module.globals.get(name)) is not None:
        return fn
    m, x = _define(module, name, fmt, lanes, "noinline")
    ax = m.fabs(x)
    small = _reduce_small(m, ax)
    big = _reduce_large_f32(m, ax) if m.fmt.bits == 32 else _reduce_large_f64(m, ax)
    large = _needs_large(m, ax)
    red = _Reduced(*(None if u is None else m.select(large, v, u)
                     for u, v in zip((small.quadrant, small.rh, small.rl), (big.quadrant, big.rh, big.rl))))
    m.b.ret(_evaluate(m, x, ax, red, which))
    return m.b.function


def _trig_function(module: ir.Module, which: Alu, fmt: _Format, lanes: int) -> ir.Function:
    """The module's internal function computing `which` on one value (lanes == 0) or a vector:
    the cheap reduction and the polynomials, then a call of the rare path if any lane needs it."""
    name = _trig_name(which, fmt, lanes)
    if (fn := module.globals.get(name)) is not None:
        return fn
    m, x = _define(module, name, fmt, lanes, "alwaysinline" if lanes else "noinline")
    b = m.b
    if lanes:
        _keep_alive(module, b.function)
    ax = m.fabs(x)
    if m.fmt.bits == 32 and which is not Alu.TAN:
        y = _sin_or_cos_f32(m, x, which)
    else:
        y = _evaluate(m, x, ax, _reduce_small(m, ax), which)
    large = _needs_large(m, ax)
    if lanes:
        large = b.call(_intrinsic(module, "llvm.vector.reduce.or", ir.FunctionType(I1, [large.type])), [large])
    cheap = b.block
    with b.if_then(large, likely=False):
        y_large = b.call(_trig_large_function(module, which, fmt, lanes), [x])
        rare = b.block
    result = b.phi(m.t)
    result.add_incoming(y, cheap)
    result.add_incoming(y_large, rare)
    b.ret(result)
    return b.function


class _CallAttributes(CallInstrAttributes):
    """Call-site attributes that may include LLVM string attributes (`"key"="value"`), which
    llvmlite renders as given but does not accept."""

    def add(self, name: str) -> None:
        if name.startswith('"'):
            set.add(self, name)
        else:
            super().add(name)


def _trig(m: _Emit, x: ir.Value, which: Alu) -> ir.Value:
    """A call of the scalar function for `which`, naming its vector variants for the vectorizer."""
    module = m.b.module
    scalar = _trig_function(module, which, m.fmt, 0)
    variants = ",".join(f"_ZGV_LLVM_N{lanes}v_{scalar.name}({_trig_function(module, which, m.fmt, lanes).name})"
                        for lanes in _VARIANT_LANES[m.fmt.bits])
    call = m.b.call(scalar, [x])
    call.attributes = _CallAttributes([f'"vector-function-abi-variant"="{variants}"'])
    return call


def sin(m: _Emit, x: ir.Value) -> ir.Value:
    """Sine, for every finite x."""
    return _trig(m, x, Alu.SIN)


def cos(m: _Emit, x: ir.Value) -> ir.Value:
    """Cosine, for every finite x."""
    return _trig(m, x, Alu.COS)


def tan(m: _Emit, x: ir.Value) -> ir.Value:
    """Tangent, for every finite x."""
    return _trig(m, x, Alu.TAN)


# ---- atan2 --------------------------------------------------------------------------------------------
# The algorithm, its polynomial and its constants are legalization's (`legalize._atan2`, which Triton runs in
# core ops): the reduction of t = min(|x|, |y|) / max(|x|, |y|) to |q| <= 7/16 by atan c = 0, atan 1/2 or
# pi/4, the quotient q and the angle carried as double-doubles through pi/2 - angle and pi - angle, rounded
# once. Here a fused multiply-add gives the quotient's remainder exactly, where legalization needs Dekker's
# product. float32 runs the float64 code on its widened operands: one more rounding, of a result good to
# about half a float64 ulp.


def atan2(m: _Emit, y: ir.Value, x: ir.Value) -> ir.Value:
    """The angle of the point (x, y), in [-pi, pi], with C's special values."""
    if m.fmt.bits == 64:
        return _atan2_double(m, y, x)
    d = _double(m)
    return m.b.fptrunc(_atan2_double(d, m.b.fpext(y, d.t), m.b.fpext(x, d.t)), m.t)


def _atan2_double(d: _Emit, y: ir.Value, x: ir.Value) -> ir.Value:
    b = d.b
    ax, ay = d.fabs(x), d.fabs(y)
    swap = d.cmp("<", ax, ay)  # the angle is pi/2 - atan(|x| / |y|)
    n, den = d.select(swap, ax, ay), d.select(swap, ay, ax)
    # both zeros make the angle 0 (before its quadrant), an infinite den 0, or pi/4 of two infinities
    infinite = d.cmp("==", den, d.c(math.inf))
    n = d.select(infinite, d.select(d.cmp("==", n, d.c(math.inf)), d.c(1.0), d.c(0.0)), n)
    den = d.select(b.or_(infinite, d.cmp("==", den, d.c(0.0))), d.c(1.0), den)
    # powers of two that keep the remainder below exact (no overflow of 2 den + n, no underflow)
    scale = d.select(d.cmp("<", d.c(SCALE_ABOVE), den), d.c(2.0 ** -200),
                     d.select(d.cmp("<", den, d.c(SCALE_BELOW)), d.c(2.0 ** 200), d.c(1.0)))
    n, den = d.mul(n, scale), d.mul(den, scale)
    t = d.div(n, den)
    far, mid = d.cmp("<=", d.c(ATAN_FAR), t), d.cmp("<=", d.c(ATAN_MID), t)
    zero = d.c(0.0)
    # (t - c) / (1 + t c) as (n - c den) / (den + c n), doubled for c = 1/2: the numerator is exact
    num = d.select(far, d.sub(n, den), d.select(mid, d.sub(d.add(n, n), den), n))
    den_hi, den_lo = d.two_sum(d.select(far, n, d.select(mid, d.add(den, den), den)),
                               d.select(far, den, d.select(mid, n, zero)))
    q = d.div(num, den_hi)
    q_lo = d.div(d.sub(d.fma(d.neg(q), den_hi, num), d.mul(q, den_lo)), den_hi)
    q_lo = d.select(d.cmp("<", t, d.c(ATAN_TINY)), zero, q_lo)
    z = d.mul(q, q)
    # atan(q + q_lo) = q + q z P(z) + q_lo / (1 + z), after atan c
    tail = d.fma(d.mul(q, z), d.poly(z, ATAN_P), d.div(q_lo, d.add(d.c(1.0), z)))
    (far_hi, far_lo), (mid_hi, mid_lo) = ATAN_CONSTANTS["quarter_pi"], ATAN_CONSTANTS["atan_half"]
    hi, lo = d.two_sum(d.select(far, d.c(far_hi), d.select(mid, d.c(mid_hi), zero)), q)
    lo = d.add(lo, d.add(d.select(far, d.c(far_lo), d.select(mid, d.c(mid_lo), zero)), tail))
    negative_x = b.icmp_signed("<", d.to_bits(x), d.ci(0))
    for flip, constant in ((swap, "half_pi"), (negative_x, "pi")):  # the angle from the other axis
        c_hi, c_lo = ATAN_CONSTANTS[constant]
        f_hi, f_lo = d.two_sum(d.c(c_hi), d.neg(hi))
        hi, lo = d.select(flip, f_hi, hi), d.select(flip, d.add(f_lo, d.sub(d.c(c_lo), lo)), lo)
    angle = d.copysign(d.add(hi, lo), y)
    return d.select(b.fcmp_unordered("uno", x, y), d.add(x, y), angle)


# ---- dispatch -------------------------------------------------------------------------------------------

_FUNCTIONS: dict[Alu, Callable[..., ir.Value]] = {
    Alu.EXP: exp, Alu.EXP2: exp2, Alu.EXPM1: expm1, Alu.LOG: log, Alu.LOG2: log2, Alu.LOG1P: log1p,
    Alu.SIN: sin, Alu.COS: cos, Alu.TAN: tan, Alu.TANH: tanh, Alu.ERF: erf, Alu.ATAN2: atan2,
}

SUPPORTED: frozenset[Alu] = frozenset(_FUNCTIONS)


def supports(op: Alu, dtype: DType) -> bool:
    """Whether `emit` renders `op` on `dtype`."""
    return op in _FUNCTIONS and dtype in (float32, float64)


# the float32 functions evaluated in double and rounded once (sin, cos and tan's reduction and
# polynomial; atan2): a loop of them holds doubles
IN_DOUBLE: frozenset[Alu] = frozenset({Alu.SIN, Alu.COS, Alu.TAN, Alu.ATAN2})


def in_double(kernel: Kernel) -> bool:
    """Whether `kernel` computes a float32 function in double (`IN_DOUBLE`)."""
    return any(v.op is VOp.ALU and v.arg in IN_DOUBLE and v.dtype == float32 for v in kernel.values())


def wide(kernel: Kernel) -> bool:
    """Whether `kernel` computes any of the functions here: it compiles for the widest vectors (see
    `compiler.features`)."""
    return any(v.op is VOp.ALU and supports(v.arg, v.dtype) for v in kernel.values())


def emit(op: Alu, builder: ir.IRBuilder, args: Sequence[ir.Value], dtype: DType) -> ir.Value:
    """Emit `op(*args)` for float32 or float64 scalar operands at the builder's position."""
    if not supports(op, dtype):
        raise NotImplementedError(f"mathlib has no {op.label} for {dtype}")
    return _FUNCTIONS[op](_Emit(builder, F32 if dtype == float32 else F64), *args)
