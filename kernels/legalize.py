"""Legalization: the ops whose semantics are a library's, rewritten into the core ops a machine has.

The IR promises Python's floor division and modulo (0 for a zero divisor), NumPy's shifts by any count,
NaN-propagating MAX and MIN, round half to even, saturating float-to-int casts, 16-bit floats rounded to
nearest even, logical arithmetic on bools (`ir.py`, `reference.py`). No machine has those as instructions;
each is a few instructions of a machine's. `legalize(kernel, native)` rewrites every op a backend does not declare
`native` into core ops, so that each semantic is written once, here, and a backend renders:

- the arithmetic, comparisons, selects and bit operations of C on its integers and floats: NEG NOT ABS
  RECIP SQRT FLOOR CEIL, ADD SUB MUL DIV, TRUNCDIV and REM (C's `/` and `%`, `fmod`), SHL and SHR, the
  comparisons, AND OR XOR WHERE, and EXP EXP2 LOG LOG2 SIN COS ERF (its math library's; EXPM1, LOG1P,
  TANH, TAN, ATAN2 and float POW are rewritten into these, in float64, where a backend has no better);
- CAST between integers (wrapping), from integers to floats, between float32 and float64, and from a
  float to int64 or int32 for values in its range; BITCAST between types of one size.

A backend declares native the library ops it renders faster than their rewriting (LLVM's `roundeven`,
`maximum`, saturating `fptosi` and math library; a GPU's float16 conversions), as keys of `RULES`:
`(Alu, operand dtype)` for ALU ops, `(source dtype, target dtype)` for casts. Every other key of `RULES`
is rewritten, operands first, and the rewriting's own library ops are rewritten in turn unless native.

The rewritings are the ones the backends had each written for themselves, and for a constant divisor
or exponent the usual compiler ones (no guard, so the machine turns the division into a multiply; only
the exponent's squarings). The float-to-int cast is the one rewriting that keeps its op: it guards a CAST
to int64 so that the machine's conversion sees only values in range, and so runs once on a kernel: a
backend legalizes each kernel where it enters it, before its own passes (splitting, packing) derive others.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from decimal import Decimal, getcontext, localcontext

from .dtype import (
    DType,
    bfloat16,
    bool_,
    float16,
    float32,
    float64,
    int8,
    int16,
    int32,
    int64,
    uint8,
    uint16,
    uint32,
    uint64,
    wrap,
)
from .ir import (
    COMPARISONS,
    Alu,
    Contraction,
    Kernel,
    LibraryCall,
    Scan,
    Scatter,
    Sort,
    Store,
    Value,
    VOp,
    alu,
    bitcast,
    cast,
    const,
    toposort,
)

Key = tuple[Alu, DType] | tuple[DType, DType]
INTS = (int8, int16, int32, int64, uint8, uint16, uint32, uint64)
FLOATS = (float32, float64)
HALF_FLOATS = (float16, bfloat16)
SIGN_BIT = {float32: -2**31, float64: -2**63}  # as the signed integer of the float's size
BITS_OF = {float32: int32, float64: int64}


def legalize(kernel: Kernel | Contraction | Scatter | Sort | Scan | LibraryCall, native: frozenset[Key]) \
        -> Kernel | Contraction | Scatter | Sort | Scan | LibraryCall:
    """`kernel` with every op of `RULES` that is not in `native` rewritten into core ops (same name); a sort,
    a scan and a library call have no ops but their own."""
    if isinstance(kernel, (Sort, Scan, LibraryCall)):
        return kernel
    if isinstance(kernel, Contraction):
        a, bv = legalize_values([kernel.a, kernel.bv], native)
        epilogue = None if kernel.epilogue is None else legalize(kernel.epilogue, native)
        return Contraction(kernel.name, kernel.buffers, kernel.params, kernel.vars, a, bv, epilogue, kernel.symbols)
    if isinstance(kernel, Scatter):
        return Scatter(kernel.name, kernel.buffers, kernel.params, legalize(kernel.base, native),
                       legalize(kernel.updates, native), kernel.distinct)
    roots = [v for s in kernel.stores for v in s.roots()]
    values = iter(legalize_values(roots, native))
    stores = tuple(Store(s.buf, s.index, next(values)) if s.at is None else
                   Store(s.buf, s.index, next(values), next(values), next(values), s.combine) for s in kernel.stores)
    if stores == kernel.stores:
        return kernel
    return Kernel(kernel.name, kernel.buffers, kernel.params, kernel.loops, stores, kernel.extents, kernel.symbols)


def legalize_values(roots: list[Value], native: frozenset[Key]) -> list[Value]:
    """`roots` with every op of `RULES` that is not in `native` rewritten into core ops."""
    rewriter = _Rewriter(native)
    new: dict[int, Value] = {}
    for v in toposort(roots):
        srcs = tuple(new[id(s)] for s in v.srcs)
        if v.op is VOp.ALU:
            new[id(v)] = rewriter.alu(v.arg, v.dtype, *srcs)
        elif v.op is VOp.CAST:
            new[id(v)] = rewriter.cast(srcs[0], v.dtype)
        else:
            new[id(v)] = Value(v.op, v.dtype, srcs, v.arg)
    return [new[id(r)] for r in roots]


Rule = Callable[..., Value]  # rule(rewriter, *operands) -> the op's value in core ops


class _Rewriter:
    """Builds values, rewriting each op of `RULES` not in `native` as it is built."""

    def __init__(self, native: frozenset[Key]):
        self.native = native

    def alu(self, op: Alu, dtype: DType, *srcs: Value) -> Value:
        key = (op, srcs[-1].dtype)
        if key in RULES and key not in self.native:
            return RULES[key](self, *srcs)
        return alu(op, dtype, *srcs)

    def cast(self, x: Value, dtype: DType) -> Value:
        key = (x.dtype, dtype)
        if key in RULES and key not in self.native:
            return RULES[key](self, x)
        return cast(x, dtype)

    def __call__(self, op: Alu, *srcs: Value) -> Value:
        """`op` on `srcs`, its dtype theirs (bool for a comparison)."""
        return self.alu(op, bool_ if op in COMPARISONS else srcs[-1].dtype, *srcs)

    # ---- small words for the rules ----

    def where(self, cond: Value, a: Value | float, b: Value | float) -> Value:
        dtype = a.dtype if isinstance(a, Value) else b.dtype
        return self(Alu.WHERE, cond, self.of(a, dtype), self.of(b, dtype))

    @staticmethod
    def of(x: Value | bool | float, dtype: DType) -> Value:
        """`x`, or the constant `x` of `dtype` (a float's as a float: 0 and 0.0 are one constant)."""
        if isinstance(x, Value):
            return x
        return const(float(x) if dtype.is_float else x, dtype)

    def binary(self, op: Alu, a: Value | float, b: Value | float) -> Value:
        dtype = a.dtype if isinstance(a, Value) else b.dtype
        return self(op, self.of(a, dtype), self.of(b, dtype))

    def copysign(self, magnitude: Value, sign: Value) -> Value:
        """`magnitude` with the sign bit of `sign`, by bits (floats)."""
        dt = magnitude.dtype
        bits, word = SIGN_BIT[dt], BITS_OF[dt]
        kept = self.binary(Alu.AND, bitcast(magnitude, word), ~bits)
        return bitcast(self(Alu.OR, kept, self.binary(Alu.AND, bitcast(sign, word), bits)), dt)

    def signed_zero(self, sign: Value) -> Value:
        """0.0 with the sign bit of `sign`, by bits (floats)."""
        dt = sign.dtype
        return bitcast(self.binary(Alu.AND, bitcast(sign, BITS_OF[dt]), SIGN_BIT[dt]), dt)

    def signbit(self, x: Value) -> Value:
        return self.binary(Alu.CMPLT, bitcast(x, BITS_OF[x.dtype]), 0)


# ---- bools: logic -----------------------------------------------------------------------------------

def _bool_rules() -> dict[Key, Rule]:
    def logic(op: Alu) -> Rule:
        return lambda r, a, b: r(op, a, b)

    def negated_first(op: Alu) -> Rule:  # a < b is ~a & b; a <= b is ~a | b
        return lambda r, a, b: r(op, r(Alu.NOT, a), b)

    return {
        (Alu.ADD, bool_): logic(Alu.OR), (Alu.SUB, bool_): logic(Alu.XOR), (Alu.MUL, bool_): logic(Alu.AND),
        (Alu.MAX, bool_): logic(Alu.OR), (Alu.MIN, bool_): logic(Alu.AND),
        (Alu.FLOORDIV, bool_): logic(Alu.AND),  # b is 0 or 1: a // 1 is a, and a zero divisor gives 0
        (Alu.MOD, bool_): lambda r, a, b: const(False, bool_),
        (Alu.POW, bool_): lambda r, a, b: r(Alu.OR, a, r(Alu.NOT, b)),  # a ** 0 is 1, a ** 1 is a
        (Alu.CMPLT, bool_): negated_first(Alu.AND), (Alu.CMPLE, bool_): negated_first(Alu.OR),
        **{(op, bool_): _identity for op in (Alu.NEG, Alu.ABS, Alu.FLOOR, Alu.CEIL, Alu.ROUND, Alu.TRUNC)},
    }


# ---- integers: floor division, modulo, powers ----------------------------------------------------------

def _constant(v: Value) -> int | None:
    """An integer constant's value, wrapped to its dtype as the IR reads constants; None for a non-constant."""
    return wrap(int(v.arg), v.dtype) if v.op is VOp.CONST else None


def _int_floordiv(r: _Rewriter, a: Value, b: Value) -> Value:
    """Python's floor division; 0 for a zero divisor; MIN // -1 wraps to MIN (C's division would trap)."""
    signed = a.dtype.is_signed
    if (d := _constant(b)) is not None:
        if d == 0:
            return const(0, a.dtype)
        if d == -1 and signed:
            return r(Alu.NEG, a)
        q = r(Alu.TRUNCDIV, a, b)
        if not signed:
            return q
        rem = r(Alu.REM, a, b)
        inexact_down = r.binary(Alu.CMPLT, rem, 0) if d > 0 else r.binary(Alu.CMPLT, 0, rem)
        return r.where(inexact_down, r.binary(Alu.SUB, q, 1), q)
    zero = r.binary(Alu.CMPEQ, b, 0)
    if not signed:
        return r.where(zero, 0, r(Alu.TRUNCDIV, a, r.where(zero, 1, b)))
    minus_one = r.binary(Alu.CMPEQ, b, -1)
    safe = r.where(r(Alu.OR, zero, minus_one), 1, b)
    q, rem = r(Alu.TRUNCDIV, a, safe), r(Alu.REM, a, safe)
    q = r.where(_signs_differ(r, rem, safe), r.binary(Alu.SUB, q, 1), q)
    return r.where(zero, 0, r.where(minus_one, r(Alu.NEG, a), q))


def _int_mod(r: _Rewriter, a: Value, b: Value) -> Value:
    """Python's modulo (the divisor's sign); 0 for a zero divisor."""
    signed = a.dtype.is_signed
    if (d := _constant(b)) is not None:
        if d == 0 or d == -1 and signed:
            return const(0, a.dtype)
        rem = r(Alu.REM, a, b)
        if not signed:
            return rem
        wrong_sign = r.binary(Alu.CMPLT, rem, 0) if d > 0 else r.binary(Alu.CMPLT, 0, rem)
        return r.where(wrong_sign, r(Alu.ADD, rem, b), rem)
    zero = r.binary(Alu.CMPEQ, b, 0)
    if not signed:
        return r.where(zero, 0, r(Alu.REM, a, r.where(zero, 1, b)))
    undefined = r(Alu.OR, zero, r.binary(Alu.CMPEQ, b, -1))  # x % -1 is 0, and MIN % -1 would trap
    safe = r.where(undefined, 1, b)
    rem = r(Alu.REM, a, safe)
    return r.where(undefined, 0, r.where(_signs_differ(r, rem, safe), r(Alu.ADD, rem, safe), rem))


def _signs_differ(r: _Rewriter, rem: Value, divisor: Value) -> Value:
    """A nonzero remainder of the other sign than the divisor: truncation rounded up, not down."""
    return r(Alu.AND, r.binary(Alu.CMPNE, rem, 0),
             r(Alu.CMPNE, r.binary(Alu.CMPLT, rem, 0), r.binary(Alu.CMPLT, divisor, 0)))


def _int_pow(r: _Rewriter, base: Value, exp: Value) -> Value:
    """Exponentiation by squaring over the exponent's bits, wrapping; a negative exponent truncates
    `1 / base**-exp` toward zero, leaving only bases 1 and -1. A constant exponent squares only as
    often as its bits need."""
    dt = base.dtype
    one = const(1, dt)
    if (e := _constant(exp)) is not None and e >= 0:
        result, square = one, base
        while e:
            if e & 1:
                result = r(Alu.MUL, result, square) if result is not one else square
            e >>= 1
            if e:
                square = r(Alu.MUL, square, square)
        return result
    result, square, bits = one, base, exp
    # a signed exponent's sign bit only says it is negative, which the inverse below handles
    for step in range(dt.bits - dt.is_signed):
        odd = r.binary(Alu.CMPNE, r.binary(Alu.AND, bits, 1), 0)
        result = r.where(odd, r(Alu.MUL, result, square), result)
        if step < dt.bits - dt.is_signed - 1:
            square, bits = r(Alu.MUL, square, square), r.binary(Alu.SHR, bits, 1)
    if not dt.is_signed:
        return result
    odd = r.binary(Alu.CMPNE, r.binary(Alu.AND, exp, 1), 0)
    minus_one_to_exp = r.where(odd, -1, one)
    inverse = r.where(r.binary(Alu.CMPEQ, base, 1), one,
                      r.where(r.binary(Alu.CMPEQ, base, -1), minus_one_to_exp, 0))
    return r.where(r.binary(Alu.CMPLT, exp, 0), inverse, result)


def _identity(r: _Rewriter, x: Value) -> Value:
    return x


def _shift(op: Alu) -> Rule:
    """NumPy's shift (`op`: LSHIFT or RSHIFT) by any count: the machine's SHL or SHR where the count is in
    [0, bits), its precondition; elsewhere (a negative count too, which NumPy reads as unsigned) every bit
    is shifted out, which leaves 0, or -1 where a negative value is shifted right (its sign fills it)."""
    machine = Alu.SHL if op is Alu.LSHIFT else Alu.SHR

    def rule(r: _Rewriter, x: Value, by: Value) -> Value:
        bits = x.dtype.bits
        inside = r.binary(Alu.CMPLT, by, bits)
        if x.dtype.is_signed:
            inside = r(Alu.AND, r.binary(Alu.CMPLE, 0, by), inside)
        shifted = r(machine, x, r.where(inside, by, 0))
        spilled = r.binary(Alu.SHR, x, bits - 1) if op is Alu.RSHIFT and x.dtype.is_signed else const(0, x.dtype)
        return r.where(inside, shifted, spilled)
    return rule


def _int_rules() -> dict[Key, Rule]:
    rules: dict[Key, Rule] = {}
    for dt in INTS:
        rules.update({(Alu.FLOORDIV, dt): _int_floordiv, (Alu.MOD, dt): _int_mod, (Alu.POW, dt): _int_pow,
                      (Alu.LSHIFT, dt): _shift(Alu.LSHIFT), (Alu.RSHIFT, dt): _shift(Alu.RSHIFT)})
        rules.update({(op, dt): _identity for op in (Alu.FLOOR, Alu.CEIL, Alu.ROUND, Alu.TRUNC)})
        if not dt.is_signed:
            rules[(Alu.ABS, dt)] = _identity
    return rules


# ---- floats: floor division, modulo, rounding, NaN-propagating extrema ------------------------------------

def _float_mod(r: _Rewriter, a: Value, b: Value) -> Value:
    """Python's remainder, the divisor's sign (see `reference._float_mod`): fmod, then b added where the signs
    differ; a zero takes b's sign."""
    rem = r(Alu.REM, a, b)
    rem = r.where(_signs_differ(r, rem, b), r(Alu.ADD, rem, b), rem)
    return r.where(r.binary(Alu.CMPEQ, rem, 0.0), r.copysign(rem, b), rem)


def _float_floordiv(r: _Rewriter, a: Value, b: Value) -> Value:
    """Float floor division (see `reference._float_floordiv`): `a - fmod(a, b)` is a multiple of b, so its
    quotient is exact where `floor(a / b)` could round up across an integer; an infinite operand or a zero
    divisor gives `floor(a / b)`."""
    mod = r(Alu.REM, a, b)
    div = r(Alu.DIV, r(Alu.SUB, a, mod), b)
    div = r.where(_signs_differ(r, mod, b), r.binary(Alu.SUB, div, 1.0), div)
    floor = r(Alu.FLOOR, div)
    floor = r.where(r.binary(Alu.CMPLT, 0.5, r(Alu.SUB, div, floor)), r.binary(Alu.ADD, floor, 1.0), floor)
    quotient = r(Alu.DIV, a, b)
    out = r.where(r.binary(Alu.CMPEQ, div, 0.0), r.signed_zero(quotient), floor)
    infinite = r(Alu.OR, r.binary(Alu.CMPEQ, r(Alu.ABS, a), float("inf")),
                 r.binary(Alu.CMPEQ, r(Alu.ABS, b), float("inf")))
    return r.where(r(Alu.OR, infinite, r.binary(Alu.CMPEQ, b, 0.0)), r(Alu.FLOOR, quotient), out)


def _round_half_even(r: _Rewriter, x: Value) -> Value:
    """To the nearest integer, ties to even; the sign of x kept, also for zeros (round(-0.4) is -0.0)."""
    floor = r(Alu.FLOOR, x)
    frac = r(Alu.SUB, x, floor)
    half = r(Alu.FLOOR, r.binary(Alu.MUL, floor, 0.5))
    odd = r.binary(Alu.CMPNE, r(Alu.SUB, floor, r.binary(Alu.MUL, half, 2.0)), 0.0)
    up = r(Alu.OR, r.binary(Alu.CMPLT, 0.5, frac), r(Alu.AND, r.binary(Alu.CMPEQ, frac, 0.5), odd))
    rounded = r.where(up, r.binary(Alu.ADD, floor, 1.0), floor)
    finite = r(Alu.CMPEQ, frac, frac)  # inf - inf and NaN: x is its own rounding
    return r.where(finite, r.copysign(rounded, x), x)


def _trunc(r: _Rewriter, x: Value) -> Value:
    return r.where(r.binary(Alu.CMPLT, x, 0.0), r(Alu.CEIL, x), r(Alu.FLOOR, x))


def _extremum(op: Alu) -> Rule:
    """IEEE 754-2019 maximum (minimum): NaN wins, and of two zeros +0.0 (-0.0)."""
    def rule(r: _Rewriter, a: Value, b: Value) -> Value:
        beats = r(Alu.CMPLT, b, a) if op is Alu.MAX else r(Alu.CMPLT, a, b)
        negative = r.signbit(a)
        zero_wins = r(Alu.NOT, negative) if op is Alu.MAX else negative
        pick_a = r(Alu.OR, r(Alu.OR, r(Alu.CMPNE, a, a), beats), r(Alu.AND, r(Alu.CMPEQ, a, b), zero_wins))
        return r(Alu.WHERE, pick_a, a, b)
    return rule


def _float_rules() -> dict[Key, Rule]:
    rules: dict[Key, Rule] = {}
    for dt in FLOATS:
        rules.update({(Alu.FLOORDIV, dt): _float_floordiv, (Alu.MOD, dt): _float_mod,
                      (Alu.ROUND, dt): _round_half_even, (Alu.TRUNC, dt): _trunc,
                      (Alu.MAX, dt): _extremum(Alu.MAX), (Alu.MIN, dt): _extremum(Alu.MIN)})
    return rules


# ---- math functions a backend's library may lack: computed in float64 ----------------------------------
# Kahan's formulas and C's pow from exp, log, exp2, log2, sin, cos in float64, so that a float32 result is
# correctly rounded (a float64 one is within a few ulps). A backend with a math library of its own declares
# them native.

def _in_float64(fn: Rule) -> Rule:
    """`fn` of its operands widened to float64, rounded back to their dtype."""
    return lambda r, *xs: r.cast(fn(r, *(r.cast(x, float64) for x in xs)), xs[0].dtype)


def _expm1(r: _Rewriter, y: Value) -> Value:
    """Kahan's expm1: the rounding error of u = exp(y) cancels in (u - 1) / log(u)."""
    u = r(Alu.EXP, y)
    um1 = r.binary(Alu.SUB, u, 1.0)
    near_zero = r.where(r.binary(Alu.CMPEQ, u, 1.0), y, r(Alu.MUL, r(Alu.DIV, um1, r(Alu.LOG, u)), y))
    return r.where(r.binary(Alu.CMPEQ, um1, -1.0), -1.0,
                   r.where(r.binary(Alu.CMPEQ, u, float("inf")), u, near_zero))


def _log1p(r: _Rewriter, y: Value) -> Value:
    """Kahan's log1p: the rounding error of u = 1 + y cancels in log(u) / (u - 1)."""
    u = r.binary(Alu.ADD, 1.0, y)
    near_zero = r.where(r.binary(Alu.CMPEQ, u, 1.0), y,
                        r(Alu.MUL, r(Alu.LOG, u), r(Alu.DIV, y, r.binary(Alu.SUB, u, 1.0))))
    return r.where(r.binary(Alu.CMPEQ, u, float("inf")), u, near_zero)


def _tanh(r: _Rewriter, x: Value) -> Value:
    """tanh(a) = expm1(2a) / (expm1(2a) + 2), accurate near 0; tanh(20) rounds to 1 in float64."""
    a = r.cast(r(Alu.ABS, x), float64)
    t = r(Alu.EXPM1, r.binary(Alu.MUL, 2.0, r.where(r.binary(Alu.CMPLT, 20.0, a), 20.0, a)))
    return r.copysign(r.cast(r(Alu.DIV, t, r.binary(Alu.ADD, t, 2.0)), x.dtype), x)


def _tan(r: _Rewriter, y: Value) -> Value:
    return r(Alu.DIV, r(Alu.SIN, y), r(Alu.COS, y))


def _float_pow(r: _Rewriter, a: Value, b: Value) -> Value:
    """C's pow, as exp2(y * log2|x|) with C's special cases. A float32 operand goes through float64, which
    leaves its result correctly rounded; a float64 one takes log2|x| and the product y * log2|x| as
    double-double numbers (`_log2_double_double`), since exp2 multiplies the product's rounding error by
    up to |y log2 x| (hundreds of ulps in plain float64), and small integer powers by squaring, so that
    x ** 2 is x * x."""
    x, y = r.cast(a, float64), r.cast(b, float64)
    if a.dtype != float64:
        result = r(Alu.EXP2, r(Alu.MUL, y, r(Alu.LOG2, r(Alu.ABS, x))))
    else:
        result = _exp2_of_product(r, y, r(Alu.ABS, x))
        small = r(Alu.AND, r(Alu.CMPEQ, r(Alu.FLOOR, y), y), r.binary(Alu.CMPLE, r(Alu.ABS, y), 64.0))
        e = cast(r.where(small, r(Alu.ABS, y), 0.0), int64)  # not `r.cast`: 0 to 64 converts exactly
        p, square = const(1.0, float64), x
        for _ in range(7):
            p = r.where(r.binary(Alu.CMPNE, r.binary(Alu.AND, e, 1), 0), r(Alu.MUL, p, square), p)
            square, e = r(Alu.MUL, square, square), r.binary(Alu.SHR, e, 1)
        p = r.where(r.binary(Alu.CMPLT, y, 0.0), r.binary(Alu.DIV, 1.0, p), p)
        exact = r(Alu.OR, r.binary(Alu.CMPLE, 0.0, y), r.binary(Alu.CMPLT, 0.0, r(Alu.ABS, p)))
        result = r.where(r(Alu.AND, small, exact), p, result)  # 1 / overflow is 0: exp2's underflow is right
    y_int = r(Alu.CMPEQ, r(Alu.FLOOR, y), y)
    y_odd = r(Alu.AND, y_int, r.binary(Alu.CMPEQ, r(Alu.SUB, y, r.binary(
        Alu.MUL, 2.0, r(Alu.FLOOR, r.binary(Alu.MUL, y, 0.5)))), 1.0))
    result = r.where(y_odd, r.copysign(result, x), result)
    negative_finite = r(Alu.AND, r.binary(Alu.CMPLT, x, 0.0), r.binary(Alu.CMPLT, float("-inf"), x))
    result = r.where(r(Alu.AND, negative_finite, r(Alu.NOT, y_int)), float("nan"), result)
    one = r(Alu.OR, r(Alu.OR, r.binary(Alu.CMPEQ, y, 0.0), r.binary(Alu.CMPEQ, x, 1.0)),
            r(Alu.AND, r.binary(Alu.CMPEQ, x, -1.0), r.binary(Alu.CMPEQ, r(Alu.ABS, y), float("inf"))))
    return r.cast(r.where(one, 1.0, result), a.dtype)


# Double-double arithmetic (Dekker's): a number as an unevaluated sum hi + lo of two float64s. Exact only
# where the backend computes each operation as written, rounding each once: no multiply and add contracted
# into one fused instruction (the LLVM backend contracts none, the Triton backend is told not to).

def _split(r: _Rewriter, a: Value) -> tuple[Value, Value]:
    """a = hi + lo exactly, each of at most 26 significant bits (|a| below 2**996)."""
    t = r.binary(Alu.MUL, 134217729.0, a)  # 2**27 + 1
    hi = r(Alu.SUB, t, r(Alu.SUB, t, a))
    return hi, r(Alu.SUB, a, hi)


def _two_product(r: _Rewriter, a: Value, b: Value) -> tuple[Value, Value]:
    """a * b = p + e exactly (p the rounded product)."""
    p = r(Alu.MUL, a, b)
    (ah, al), (bh, bl) = _split(r, a), _split(r, b)
    e = r(Alu.ADD, r(Alu.ADD, r(Alu.ADD, r(Alu.SUB, r(Alu.MUL, ah, bh), p), r(Alu.MUL, ah, bl)), r(Alu.MUL, al, bh)),
          r(Alu.MUL, al, bl))
    return p, e


def _two_sum(r: _Rewriter, a: Value, b: Value) -> tuple[Value, Value]:
    """a + b = s + e exactly (s the rounded sum)."""
    s = r(Alu.ADD, a, b)
    bb = r(Alu.SUB, s, a)
    return s, r(Alu.ADD, r(Alu.SUB, a, r(Alu.SUB, s, bb)), r(Alu.SUB, b, bb))


def _decimal_double_double(v: Decimal) -> tuple[float, float]:
    hi = float(v)
    return hi, float(v - Decimal(hi))


def _log2_constants() -> tuple[tuple[float, float], dict[int, tuple[float, float]]]:
    """2 / ln 2, and log2(1 + j/8) for the reduction points j of `_log2_double_double`, as double-doubles."""
    with localcontext() as ctx:
        ctx.prec = 50
        ln2 = Decimal(2).ln()
        return (_decimal_double_double(2 / ln2),
                {j: _decimal_double_double((1 + Decimal(j) / 8).ln() / ln2) for j in range(-2, 5) if j})


TWO_OVER_LN2, LOG2_POINTS = _log2_constants()


def _log2_double_double(r: _Rewriter, ax: Value) -> tuple[Value, Value]:
    """log2(ax) = hi + lo for a positive finite float64 ax, to about 2**-64 of its magnitude.

    ax = 2**e * m with m in [0.75, 1.5) (read off its bits; a subnormal scaled by 2**54 first), m near the
    point c = 1 + j/8 (|m / c - 1| <= 1/12), and log2(m / c) = (2 / ln 2) atanh(s) for s = (m - c) / (m + c):
    s and its first term as double-doubles, the rest of the series (below 2**-9 of it) in float64. Near 1,
    c is 1 and log2(c) is 0, so the result is as accurate relative to log2(ax) however small that is."""
    subnormal = r.binary(Alu.CMPLT, ax, 2.0 ** -1022)
    bits = bitcast(r.where(subnormal, r.binary(Alu.MUL, ax, 2.0 ** 54), ax), int64)
    m = bitcast(r.binary(Alu.OR, r.binary(Alu.AND, bits, (1 << 52) - 1), 1023 << 52), float64)  # [1, 2)
    big = r.binary(Alu.CMPLE, 1.5, m)
    m = r.where(big, r.binary(Alu.MUL, m, 0.5), m)
    e = r.binary(Alu.SUB, r.binary(Alu.SHR, bits, 52), 1023)
    e = r(Alu.ADD, e, r.where(big, const(1, int64), r.where(subnormal, const(-54, int64), const(0, int64))))
    j = r(Alu.FLOOR, r.binary(Alu.ADD, r.binary(Alu.MUL, r.binary(Alu.SUB, m, 1.0), 8.0), 0.5))
    c = r.binary(Alu.ADD, 1.0, r.binary(Alu.MUL, j, 0.125))
    num = r(Alu.SUB, m, c)  # exact: c / 2 <= m <= 2c
    u_hi, u_lo = _two_sum(r, m, c)
    s_hi = r(Alu.DIV, num, u_hi)
    p, pe = _two_product(r, s_hi, u_hi)
    s_lo = r(Alu.DIV, r(Alu.SUB, r(Alu.SUB, r(Alu.SUB, num, p), pe), r(Alu.MUL, s_hi, u_lo)), u_hi)
    k_hi, k_lo = (const(v, float64) for v in TWO_OVER_LN2)
    main, main_lo = _two_product(r, k_hi, s_hi)
    main_lo = r(Alu.ADD, main_lo, r(Alu.ADD, r(Alu.MUL, k_hi, s_lo), r(Alu.MUL, k_lo, s_hi)))
    s2 = r(Alu.MUL, s_hi, s_hi)
    series = const(1 / 17, float64)
    for d in (15, 13, 11, 9, 7, 5, 3):
        series = r.binary(Alu.ADD, 1 / d, r(Alu.MUL, s2, series))
    tail = r(Alu.MUL, r(Alu.MUL, r(Alu.MUL, k_hi, s_hi), s2), series)
    point_hi, point_lo = const(0.0, float64), const(0.0, float64)
    for point, (hi, lo) in LOG2_POINTS.items():
        at = r.binary(Alu.CMPEQ, j, float(point))
        point_hi, point_lo = r.where(at, hi, point_hi), r.where(at, lo, point_lo)
    hi, lo = _two_sum(r, r.cast(e, float64), point_hi)
    hi, lo2 = _two_sum(r, hi, main)
    lo = r(Alu.ADD, r(Alu.ADD, r(Alu.ADD, r(Alu.ADD, lo, lo2), point_lo), main_lo), tail)
    return _two_sum(r, hi, lo)


def _exp2_of_product(r: _Rewriter, y: Value, ax: Value) -> Value:
    """2 ** (y * log2(ax)) for float64 y and ax >= 0 (or NaN), within about an ulp: the product taken as a
    double-double t + dt, and 2 ** (t + dt) = 2**t (1 + dt ln 2) to well below an ulp."""
    finite = r(Alu.AND, r.binary(Alu.CMPLT, 0.0, ax), r.binary(Alu.CMPLT, ax, float("inf")))
    log_hi, log_lo = _log2_double_double(r, r.where(finite, ax, 1.0))
    log_hi = r.where(finite, log_hi, r(Alu.LOG2, ax))  # -inf, inf or NaN, with no low part
    log_lo = r.where(finite, log_lo, 0.0)
    # |y| above 2**990 overflows or underflows whatever x is (|log2 x| >= 2**-53): clamped, it splits exactly
    bound = 2.0 ** 990
    clamped = r.where(r.binary(Alu.CMPLT, bound, y), bound, r.where(r.binary(Alu.CMPLT, y, -bound), -bound, y))
    t = r(Alu.MUL, y, log_hi)
    _, dt = _two_product(r, clamped, log_hi)
    dt = r(Alu.ADD, dt, r(Alu.MUL, clamped, log_lo))
    # 2 ** (t - 1) * 2 near the top of the range, so that a t just below 1024 that rounded up to it overflows
    # only if t + dt does (t - 1 is exact there)
    big = r.binary(Alu.CMPLT, 1000.0, t)
    power = r(Alu.EXP2, r.where(big, r.binary(Alu.SUB, t, 1.0), t))
    refined = r(Alu.MUL, r(Alu.ADD, power, r(Alu.MUL, power, r.binary(Alu.MUL, dt, math.log(2)))),
                r.where(big, const(2.0, float64), 1.0))
    # past the range (or infinite, or NaN) the power is inf, 0 or NaN, where dt may be NaN (inf - inf)
    outside = r.where(r.binary(Alu.CMPLT, 0.0, t), float("inf"), r.where(r.binary(Alu.CMPLT, t, 0.0), 0.0, t))
    return r.where(r.binary(Alu.CMPLT, r(Alu.ABS, t), 1025.0), refined, outside)


# ---- atan2: the inverse trigonometric functions' primitive ----------------------------------------------
# The reduction of fdlibm's atan: for t = n / d in [0, 1] (the smaller of |x| and |y| over the larger),
# atan t = atan c + atan((t - c) / (1 + t c)) with c = 0, 1/2 or 1 as t is below 7/16, below 11/16 or
# above, which leaves an argument of at most 7/16 for a polynomial. Its numerator n - c d is exact (by
# Sterbenz's lemma), its denominator and quotient are carried as double-doubles, and so is the angle through
# pi/2 - angle (|y| > |x|) and pi - angle (x negative), so that it is rounded once at the end: within about
# half an ulp in float64. The LLVM backend's mathlib computes the same with fused multiply-adds.

# atan r = r + r**3 P(r**2) on |r| <= 7/16, relative error below 2**-57 (Chebyshev interpolation of
# (atan r - r) / r**3 in r**2, in 50-digit arithmetic, the coefficients rounded to float64)
ATAN_P: tuple[float, ...] = (
    -0.3333333333333333, 0.1999999999999941, -0.14285714285566806, 0.11111111096645038, -0.09090908355602592,
    0.07692285554889286, -0.06666241923359964, 0.05876946456755061, -0.05216679739313656, 0.04492259293193656,
    -0.033128134256069586, 0.014773184616983806)
ATAN_MID, ATAN_FAR = 7 / 16, 11 / 16  # where the reduction point c moves to 1/2, then 1


def _decimal_atan(x: Decimal) -> Decimal:
    """atan x for |x| <= 1/2 by its series, to the context's precision."""
    total, power, k = Decimal(0), x, 1
    while abs(power) > Decimal(10) ** -(getcontext().prec + 2):
        total += power / k
        power, k = -power * x * x, k + 2
    return total


def _atan_constants() -> dict[str, tuple[float, float]]:
    """atan(1/2), pi/4, pi/2 and pi as double-doubles (pi by Machin's formula)."""
    with localcontext() as ctx:
        ctx.prec = 50
        pi = 16 * _decimal_atan(Decimal(1) / 5) - 4 * _decimal_atan(Decimal(1) / 239)
        values = {"atan_half": _decimal_atan(Decimal(1) / 2), "quarter_pi": pi / 4, "half_pi": pi / 2, "pi": pi}
        return {name: _decimal_double_double(v) for name, v in values.items()}


ATAN_CONSTANTS = _atan_constants()
SCALE_ABOVE, SCALE_BELOW = 2.0 ** 900, 2.0 ** -900  # where atan2 scales |x| and |y| by 2**-200 or 2**200
# Below this t the exact products of the quotient's remainder may underflow (n below 2**-969, with d above
# 2**-900 once scaled), and the quotient alone is the correctly rounded angle: its correction is dropped.
ATAN_TINY = 2.0 ** -64


def _atan2(r: _Rewriter, y: Value, x: Value) -> Value:
    """C's atan2 of float64 y and x (see above): Dekker's exact products stand in for fused multiply-adds."""
    ax, ay = r(Alu.ABS, x), r(Alu.ABS, y)
    swap = r(Alu.CMPLT, ax, ay)  # the angle is pi/2 - atan(|x| / |y|)
    n, d = r.where(swap, ax, ay), r.where(swap, ay, ax)
    # both zeros make the angle 0 (before its quadrant), an infinite d 0, or pi/4 of two infinities
    infinite = r.binary(Alu.CMPEQ, d, math.inf)
    n = r.where(infinite, r.where(r.binary(Alu.CMPEQ, n, math.inf), r.of(1.0, float64), 0.0), n)
    d = r.where(r(Alu.OR, infinite, r.binary(Alu.CMPEQ, d, 0.0)), 1.0, d)
    # powers of two that keep the exact products below from overflowing or underflowing (an n scaled
    # into the subnormals is below 2**-1000 of d: its angle underflows anyway)
    scale = r.where(r.binary(Alu.CMPLT, SCALE_ABOVE, d), 2.0 ** -200,
                    r.where(r.binary(Alu.CMPLT, d, SCALE_BELOW), r.of(2.0 ** 200, float64), 1.0))
    n, d = r(Alu.MUL, n, scale), r(Alu.MUL, d, scale)
    t = r(Alu.DIV, n, d)
    far, mid = r.binary(Alu.CMPLE, ATAN_FAR, t), r.binary(Alu.CMPLE, ATAN_MID, t)
    # (t - c) / (1 + t c) as (n - c d) / (d + c n), doubled for c = 1/2
    num = r.where(far, r(Alu.SUB, n, d), r.where(mid, r(Alu.SUB, r.binary(Alu.MUL, 2.0, n), d), n))
    den_hi, den_lo = _two_sum(r, r.where(far, n, r.where(mid, r.binary(Alu.MUL, 2.0, d), d)),
                              r.where(far, d, r.where(mid, n, 0.0)))
    q = r(Alu.DIV, num, den_hi)
    p, pe = _two_product(r, q, den_hi)
    q_lo = r(Alu.DIV, r(Alu.SUB, r(Alu.SUB, r(Alu.SUB, num, p), pe), r(Alu.MUL, q, den_lo)), den_hi)
    q_lo = r.where(r.binary(Alu.CMPLT, t, ATAN_TINY), 0.0, q_lo)
    z = r(Alu.MUL, q, q)
    poly = const(ATAN_P[-1], float64)
    for c in reversed(ATAN_P[:-1]):
        poly = r.binary(Alu.ADD, c, r(Alu.MUL, z, poly))
    # atan(q + q_lo) = q + q z P(z) + q_lo / (1 + z), after atan c
    tail = r(Alu.ADD, r(Alu.MUL, r(Alu.MUL, q, z), poly), r(Alu.DIV, q_lo, r.binary(Alu.ADD, 1.0, z)))
    (far_hi, far_lo), (mid_hi, mid_lo) = ATAN_CONSTANTS["quarter_pi"], ATAN_CONSTANTS["atan_half"]
    hi, lo = _two_sum(r, r.where(far, far_hi, r.where(mid, r.of(mid_hi, float64), 0.0)), q)
    lo = r(Alu.ADD, lo, r(Alu.ADD, r.where(far, far_lo, r.where(mid, r.of(mid_lo, float64), 0.0)), tail))
    for flip, constant in ((swap, "half_pi"), (r.signbit(x), "pi")):  # the angle from the other axis
        c_hi, c_lo = ATAN_CONSTANTS[constant]
        f_hi, f_lo = _two_sum(r, const(c_hi, float64), r(Alu.NEG, hi))
        hi, lo = r.where(flip, f_hi, hi), r.where(flip, r(Alu.ADD, f_lo, r.binary(Alu.SUB, c_lo, lo)), lo)
    angle = r.copysign(r(Alu.ADD, hi, lo), y)
    return r.where(r(Alu.OR, r(Alu.CMPNE, x, x), r(Alu.CMPNE, y, y)), r(Alu.ADD, x, y), angle)


def _math_rules() -> dict[Key, Rule]:
    rules: dict[Key, Rule] = {}
    for dt in FLOATS:
        rules.update({(Alu.EXPM1, dt): _in_float64(_expm1), (Alu.LOG1P, dt): _in_float64(_log1p),
                      (Alu.TANH, dt): _tanh, (Alu.TAN, dt): _in_float64(_tan), (Alu.POW, dt): _float_pow,
                      (Alu.ATAN2, dt): _in_float64(_atan2)})
    return rules


# ---- casts ---------------------------------------------------------------------------------------------

def _through(middle: DType, dst: DType) -> Rule:
    return lambda r, x: r.cast(r.cast(x, middle), dst)


def _to_bool(r: _Rewriter, x: Value) -> Value:
    return r.binary(Alu.CMPNE, x, 0)  # unordered for floats: NaN is true


def _from_bool(dst: DType) -> Rule:
    return lambda r, x: r.where(x, r.of(1, dst), r.of(0, dst))


def _float_to_int64(r: _Rewriter, x: Value) -> Value:
    """Truncation toward zero, saturated to the int64 range (NaN gives 0): the conversion sees only values
    in range, where every machine's agrees."""
    limit = float(2**63)  # exact in every float type; -2**63 is the least int64
    big, small = r.binary(Alu.CMPLE, limit, x), r.binary(Alu.CMPLE, x, -limit)
    outside = r(Alu.OR, r(Alu.OR, big, small), r(Alu.CMPNE, x, x))
    inside = cast(r.where(outside, 0.0, x), int64)  # not `r.cast`: this is the guarded conversion itself
    return r.where(big, const(2**63 - 1, int64), r.where(small, const(-2**63, int64), inside))


def _float_to_int32(r: _Rewriter, x: Value) -> Value:
    """As to int64, then wrapped to 32 bits, with no conversion to int64, which a machine may lack for vectors
    (AVX2 converts eight float32s to int32s in one instruction, to int64s one at a time: a float32 array to
    int32 ran 4.6 times as long as a copy). Below 2**31 in magnitude x converts as an int32; from there to 2**63,
    trunc(x) less the multiple of 2**32 below it (exact: each step is an integer the float type holds), shifted
    into int32's range to convert, then back by wrapping; beyond, the low bits of int64's limits; NaN gives 0."""
    magnitude = r(Alu.ABS, x)
    small = r.binary(Alu.CMPLT, magnitude, 2.0**31)  # false for NaN
    near = cast(r.where(small, x, 0.0), int32)  # not `r.cast`: the guarded conversions themselves
    t = r(Alu.TRUNC, x)
    low = r(Alu.SUB, t, r.binary(Alu.MUL, r(Alu.FLOOR, r.binary(Alu.MUL, t, 2.0**-32)), 2.0**32))  # [0, 2**32)
    middle = r(Alu.AND, r(Alu.NOT, small), r.binary(Alu.CMPLT, magnitude, 2.0**63))
    far = r.binary(Alu.ADD, cast(r.where(middle, r.binary(Alu.SUB, low, 2.0**31), 0.0), int32), -2**31)
    beyond = r.where(r.binary(Alu.CMPLE, 2.0**63, x), const(-1, int32), const(0, int32))  # 2**63 - 1's, -2**63's
    return r.where(small, near, r.where(middle, far, beyond))


def _float32_to_8_bits(dst: DType) -> Rule:
    """The low 8 bits of `_float_to_int32`'s, without its part from 2**31 to 2**63: there a float32 is a multiple of
    2**8 (its 24 significant bits end there), so those bits are 0. What is left converts the values below 2**31
    with one vector instruction: `(x * 255).astype(uint8)` of 2**22 float32 ran about 1.1x as long with the part kept.
    (A float64 has bits below 2**8 up to 2**52: it converts through int32.)"""
    def rule(r: _Rewriter, x: Value) -> Value:
        small = r.binary(Alu.CMPLT, r(Alu.ABS, x), 2.0**31)  # false for NaN
        near = cast(r.where(small, x, 0.0), int32)  # not `r.cast`: the guarded conversion itself
        beyond = r.where(r.binary(Alu.CMPLE, 2.0**63, x), const(-1, int32), const(0, int32))  # 2**63 - 1's low bits
        return r.cast(r.where(small, near, beyond), dst)
    return rule


def _float_to_uint64(r: _Rewriter, x: Value) -> Value:
    """As to int64, then wrapped, but from 2**63 up, where uint64 holds what int64 does not: there x - 2**63
    (exact) converts, saturated to 2**63 - 1 (2**64 and up give 2**64 - 1), and 2**63 is added back."""
    high = r.binary(Alu.CMPLE, 2.0**63, x)
    low = r.cast(r.cast(r(Alu.SUB, x, r.where(high, const(2.0**63, x.dtype), 0.0)), int64), uint64)
    return r(Alu.ADD, low, r.where(high, const(2**63, uint64), const(0, uint64)))


def _bfloat16_to_float32(r: _Rewriter, x: Value) -> Value:
    """bfloat16 is the top half of a float32: widen by moving its bits up."""
    return bitcast(r.binary(Alu.SHL, r.cast(bitcast(x, int16), int32), 16), float32)


def _float32_to_bfloat16(r: _Rewriter, x: Value) -> Value:
    """To nearest even by an integer add into the top half; a NaN stays a (quiet) NaN, which the carry
    could make inf. Arithmetic shifts leave the same low 16 bits as logical ones."""
    w = bitcast(x, int32)
    top = r.binary(Alu.SHR, w, 16)
    rounded = r.binary(Alu.SHR, r(Alu.ADD, w, r.binary(Alu.ADD, r.binary(Alu.AND, top, 1), 0x7FFF)), 16)
    bits = r.where(r(Alu.CMPNE, x, x), r.binary(Alu.OR, top, 0x40), rounded)
    return bitcast(r.cast(bits, int16), bfloat16)


def _float16_to_float32(r: _Rewriter, x: Value) -> Value:
    """After Maratyszcza's FP16 library: a normal number (or inf, NaN) is its bits moved into float32's
    fields and scaled by 2**-112; a subnormal one is its mantissa in float32's, less an offset."""
    h = r.cast(bitcast(x, int16), int32)  # sign-extended: negative where the sign bit is set
    magnitude = r.binary(Alu.AND, h, 0x7FFF)
    normal = r.binary(Alu.MUL, bitcast(r.binary(Alu.ADD, r.binary(Alu.SHL, magnitude, 13), 0xE0 << 23), float32),
                      2.0 ** -112)
    subnormal = r.binary(Alu.SUB, bitcast(r.binary(Alu.OR, magnitude, 126 << 23), float32), 0.5)
    bits = r.where(r.binary(Alu.CMPLT, magnitude, 1 << 10), bitcast(subnormal, int32), bitcast(normal, int32))
    return bitcast(r(Alu.OR, r.binary(Alu.AND, h, -2**31), bits), float32)


def _float32_to_float16(r: _Rewriter, x: Value) -> Value:
    """After Maratyszcza's FP16 library: float32 addition does the rounding. |x| scaled by 2**112 * 2**-110
    overflows to inf where float16 would; adding a power of two chosen by x's exponent (at least 2**-14's)
    leaves the rounded float16 exponent and mantissa in the low bits of the sum."""
    w = bitcast(x, int32)
    magnitude = r.binary(Alu.AND, w, 0x7FFFFFFF)
    scaled = r.binary(Alu.MUL, r.binary(Alu.MUL, bitcast(magnitude, float32), 2.0 ** 112), 2.0 ** -110)
    exponent = r.binary(Alu.MAX, r.binary(Alu.SHR, magnitude, 23), 113)
    bias = bitcast(r.binary(Alu.SHL, r.binary(Alu.ADD, exponent, 15), 23), float32)
    rounded = bitcast(r(Alu.ADD, bias, scaled), int32)  # positive: its shifts are logical
    nonsign = r(Alu.ADD, r.binary(Alu.AND, r.binary(Alu.SHR, rounded, 13), 0x7C00), r.binary(Alu.AND, rounded, 0x0FFF))
    bits = r.where(r.binary(Alu.CMPLT, 0x7F800000, magnitude), const(0x7E00, int32), nonsign)  # NaN
    sign = r.binary(Alu.AND, r.binary(Alu.SHR, w, 16), 0x8000)
    return bitcast(r.cast(r(Alu.OR, sign, bits), int16), float16)


def _cast_rules() -> dict[Key, Rule]:
    everything = (bool_, *INTS, *FLOATS, *HALF_FLOATS)
    rules: dict[Key, Rule] = {}
    for src in everything:
        for dst in everything:
            if src == dst:
                continue
            if (src in HALF_FLOATS and dst != float32) or (dst in HALF_FLOATS and src != float32):
                rules[(src, dst)] = _through(float32, dst)  # 16-bit floats round through float32, as PyTorch's
            elif dst == bool_:
                rules[(src, dst)] = _to_bool
            elif src == bool_:
                rules[(src, dst)] = _from_bool(dst)
            elif src.is_float and dst.is_int:
                rules[(src, dst)] = _float_to_int64 if dst == int64 else _float_to_uint64 if dst == uint64 \
                    else _float_to_int32 if dst == int32 \
                    else _float32_to_8_bits(dst) if src == float32 and dst.bits == 8 \
                    else _through(int32, dst)  # then wrap
    rules.update({(bfloat16, float32): _bfloat16_to_float32, (float32, bfloat16): _float32_to_bfloat16,
                  (float16, float32): _float16_to_float32, (float32, float16): _float32_to_float16})
    return rules


RULES: dict[Key, Rule] = {**_bool_rules(), **_int_rules(), **_float_rules(), **_math_rules(), **_cast_rules()}


def keys(ops: Iterable[Alu], dtypes: Iterable[DType]) -> set[Key]:
    """The keys of `ops` on each of `dtypes`, for a backend's native set."""
    dtypes = tuple(dtypes)
    return {(op, dt) for op in ops for dt in dtypes}
