"""The oracle: each value of a program computed exactly (float64) with a bound on lazytensor's error.

Comparing a random graph's float32 (let alone float16) result with torch's under one fixed tolerance is
either too loose to find anything or fails wherever the graph is ill-conditioned (a difference of nearly
equal values, an exp of a large sum, a floor of something that lands near an integer). So every value
here is a pair: `val`, the exact result of the ops on the exact inputs (float64 for the float dtypes; the
dtype itself for integers and bools, which wrap as torch's do), and `err`, an upper bound on how far any
correct implementation's value may be from it. A bound of inf means the value is not determined (a
comparison of two values closer than their errors, an overflow in a 16-bit float that lazytensor may
compute in float32, a float cast to an integer out of its range); those elements are not compared.

The bounds are first-order-free: each op's rule bounds the result over the whole box of its operands'
possible values, plus its own rounding:

- `corners`: for ops monotone in each operand (add, exp, floor, max, comparisons, ...) the extremes over
  the box are at its corners, so evaluating the op there bounds it (steps such as floor give their jump);
  `corners_nonzero` first checks that no denominator's box holds 0;
- `lipschitz`, `even`, `tan`, `remainder`, `pow`, `equality`, `truth`: what they say, for the ops that are
  not monotone;
- reductions: the corners of the summed boxes plus the classic bound (n - 1) u sum|x| on a sum's rounding
  in any order (u of the dtype it accumulates in: float32 for the 16-bit floats); the composite ones
  (mean, var, softmax, logsumexp, ...) are composed from the primitive rules as lazytensor computes them;
- contractions: |A| E_B + E_A |B| + E_A E_B + k u |A||B| for a product summed over k terms.

An op's own rounding is `ulps` (ops.py) times the unit roundoff of the dtype it returns, relative to the
result, plus a subnormal step. Torch's own results must fall within the same bounds (check.py verifies
it on every program), which guards the rules themselves.
"""
from __future__ import annotations

import contextlib
import itertools
import math
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from . import semantics
from .ops import OPS, OpSpec
from .program import Program, Step, render

INF = math.inf
SCALARS = ("s", "t")  # parameters that take part in arithmetic (see ops.py)
DENOMINATOR = {"div": "b", "floordiv": "b", "div_s": "s", "floordiv_s": "s", "rdiv_s": "a", "rfloordiv_s": "a",
               "reciprocal": "a"}
# the (dividend, divisor) of the modulos and the (base, exponent) of the powers, by operand name
ROLES = {"mod": ("a", "b"), "mod_s": ("a", "s"), "rmod_s": ("s", "a"), "pow": ("a", "b"), "pow_s": ("a", "s"),
         "rpow_s": ("s", "a")}
LIPSCHITZ = {"sin": 1.0, "cos": 1.0, "gelu": 1.13, "gelu_tanh": 1.13, "silu": 1.1}
# x * (1 + erf(x / sqrt(2))) / 2 and its tanh form cancel for x < 0: their rounding is relative to x, not to
# the (small) result, in torch as in lazytensor
CANCELLING = ("gelu", "gelu_tanh")
MATH, BASIC = 8.0, 2.0


@dataclass
class RVal:
    """A value of the reference: exact value, error bound (float64, same shape), nominal dtype."""

    val: torch.Tensor
    err: torch.Tensor
    dtype: torch.dtype

    @property
    def is_float(self) -> bool:
        return self.dtype.is_floating_point


def unit(dtype: torch.dtype) -> float:
    """Unit roundoff: half the distance from 1 to the next float."""
    return torch.finfo(dtype).eps / 2


def compute_dtype(dtype: torch.dtype) -> torch.dtype:
    """The dtype lazytensor (and torch) accumulate and compute a float dtype in."""
    return torch.float32 if dtype in (torch.float16, torch.bfloat16) else dtype


def _subnormal(dtype: torch.dtype) -> float:
    return torch.finfo(dtype).smallest_normal * torch.finfo(dtype).eps


def _overflow(dtype: torch.dtype) -> float:
    """The magnitude from which round-to-nearest gives inf."""
    fi = torch.finfo(dtype)
    return fi.max + fi.max * fi.eps / 4


@contextlib.contextmanager
def float64_default() -> Iterator[None]:
    """Ops of integer tensors that make floats (exp, true division) make float64 inside the reference."""
    previous = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        yield
    finally:
        torch.set_default_dtype(previous)


def exact(value: torch.Tensor, dtype: torch.dtype) -> RVal:
    """An exactly known value (an input) of nominal `dtype`."""
    val = value.double() if dtype.is_floating_point else value.to(dtype)
    return RVal(val, torch.zeros(value.shape, dtype=torch.float64), dtype)


def _deviation(corner: torch.Tensor, center: torch.Tensor) -> torch.Tensor:
    """|corner - center|, where equal non-finite values (and two NaNs) do not deviate and any other
    difference with a NaN or an infinity is unbounded."""
    corner, center = corner.double(), center.double()
    same = (corner == center) | (corner.isnan() & center.isnan())
    d = torch.where(same, 0.0, (corner - center).abs())
    return torch.where(d.isnan(), INF, d)


def finish(val: torch.Tensor, dev: torch.Tensor, dtype: torch.dtype, ulps: float, inner: bool = False) -> RVal:
    """The result of an op of nominal `dtype`: its rounding added to `dev`, overflow decided, and an
    integer or bool result that might deviate at all marked undetermined. An `inner` step of a composite
    (var's sum of squares) only might overflow: another algorithm (torch's Welford) avoids it."""
    dev = torch.broadcast_to(dev.double(), val.shape)
    if not dtype.is_floating_point:
        return RVal(val.to(dtype), torch.where(dev > 0, INF, 0.0), dtype)
    val = val.double()
    finite = val.isfinite()
    mag = torch.where(finite, val.abs() + dev, 0.0)
    err = dev + ulps * (unit(dtype) * mag + _subnormal(dtype))
    err = torch.where(err.isnan(), INF, err)
    limit = _overflow(dtype)
    over = finite & (val.abs() - err >= limit)
    band = finite & (val.abs() + err >= limit) & ~over
    if inner or dtype in (torch.float16, torch.bfloat16):  # lazytensor may keep a 16-bit value in float32
        err = torch.where(over | band, INF, err)
    else:
        val = torch.where(over, torch.copysign(torch.full_like(val, INF), val), val)
        err = torch.where(over, 0.0, torch.where(band, INF, err))
    return RVal(val, err, dtype)


# ---- the elementwise rules -----------------------------------------------------------------------


@dataclass
class Operand:
    """An elementwise operand: a tensor value or a Python scalar, with the error it computes with."""

    val: Any
    err: Any  # a tensor, or a float for a scalar
    name: str  # 'a', 'b', 'c' or the scalar's parameter name


def _conversion_error(val: Any, src_float: bool, to: torch.dtype) -> Any:
    """The rounding of an integer (tensor or scalar) or a float scalar into the float dtype `to`."""
    if not to.is_floating_point:
        return 0.0
    rounded = torch.as_tensor(val, dtype=torch.float64).to(to).double()
    exactly = rounded == torch.as_tensor(val, dtype=torch.float64)
    # a scalar beyond a 16-bit dtype's range: torch (and NumPy) round it to inf, lazytensor computes with
    # its float32 value; either is accepted
    bound = torch.where(rounded.isinf(), INF, torch.as_tensor(val, dtype=torch.float64).abs() * unit(to))
    if src_float and not isinstance(val, torch.Tensor):
        return 0.0 if bool(exactly) else float(bound)
    out = torch.where(exactly, 0.0, bound)
    return float(out) if not isinstance(val, torch.Tensor) else out


def operands(step: Step, env: dict[str, RVal], native: dict[str, torch.Tensor]) -> tuple[list[Operand], torch.dtype]:
    """The step's operands (tensors, then its arithmetic scalars) and the dtype they compute in."""
    out_dtype = native[step.out].dtype
    compute = out_dtype
    if not out_dtype.is_floating_point:  # a comparison's operands compute in their promoted dtype
        compute = torch.bool
        for a in step.args:
            compute = torch.promote_types(compute, native[a].dtype)
        for s in SCALARS:
            compute = _weak(compute, step.params[s]) if s in step.params else compute
    ops = []
    for name, arg in zip("abc", step.args):
        v = env[arg]
        err = v.err
        if not v.is_float and compute.is_floating_point:
            err = err + _conversion_error(v.val, False, compute)
        ops.append(Operand(v.val, err, name))
    for s in SCALARS:
        if s in step.params:
            value = step.params[s]
            err = _conversion_error(value, isinstance(value, float), compute) if not isinstance(value, bool) else 0.0
            ops.append(Operand(value, err, s))
    return ops, compute


def _weak(dtype: torch.dtype, scalar: Any) -> torch.dtype:
    """lazytensor's (and torch's) dtype of a tensor combined with a Python scalar (dtypes.result_type)."""
    if isinstance(scalar, bool) or isinstance(scalar, int) and dtype != torch.bool:
        return dtype
    if isinstance(scalar, int):
        return torch.int64
    return dtype if dtype.is_floating_point else torch.float32


def _call(fn: Callable, ops: Sequence[Operand], values: Sequence[Any]) -> torch.Tensor:
    tensors = [v for o, v in zip(ops, values) if o.name in "abc"]
    scalars = {f"_{o.name}": v for o, v in zip(ops, values) if o.name in SCALARS}
    return torch.as_tensor(fn(*tensors, **scalars))


def _unsure_mask(ops: Sequence[Operand], shape: torch.Size) -> torch.Tensor:
    """Elements where some operand is undetermined."""
    mask = torch.zeros(shape, dtype=torch.bool)
    for o in ops:
        if isinstance(o.err, torch.Tensor):
            mask |= torch.broadcast_to(o.err == INF, shape)
    return mask


def corner_deviation(fn: Callable, ops: Sequence[Operand], center: torch.Tensor) -> torch.Tensor:
    """The largest deviation from `center` of `fn` over the corners of the operands' error boxes."""
    moving = [i for i, o in enumerate(ops) if _nonzero(o.err)]
    dev = torch.zeros(center.shape, dtype=torch.float64)
    for signs in itertools.product((-1.0, 1.0), repeat=len(moving)):
        values = [o.val for o in ops]
        for i, sign in zip(moving, signs):
            o = ops[i]
            err = torch.where(o.err == INF, 0.0, o.err) if isinstance(o.err, torch.Tensor) else o.err
            base = o.val.double() if isinstance(o.val, torch.Tensor) else float(o.val)
            values[i] = base + sign * err
        dev = torch.maximum(dev, _deviation(_call(fn, ops, values), center))
    return torch.where(_unsure_mask(ops, center.shape), INF, dev)


def _nonzero(err: Any) -> bool:
    return bool((err > 0).any()) if isinstance(err, torch.Tensor) else err > 0


def _crosses_zero(o: Operand) -> Any:
    """Where the operand's box holds 0 without being exactly 0 (a sign or a pole that may flip)."""
    v = o.val.double() if isinstance(o.val, torch.Tensor) else torch.tensor(float(o.val))
    return (o.err > 0) & (v.abs() <= o.err)


def elementwise(step: Step, fn: Callable, env: dict[str, RVal], native: dict[str, torch.Tensor]) -> RVal:
    """An elementwise op by its rule."""
    spec: OpSpec = OPS[step.op]
    ops, _ = operands(step, env, native)
    out_dtype = native[step.out].dtype
    center = _call(fn, ops, [o.val for o in ops])
    rule = spec.rule
    if rule in ("corners", "corners_nonzero"):
        dev = corner_deviation(fn, ops, center)
        if rule == "corners_nonzero":
            denom = next(o for o in ops if o.name == DENOMINATOR[step.op])
            dev = torch.where(torch.broadcast_to(torch.as_tensor(_crosses_zero(denom)), center.shape), INF, dev)
    elif rule == "lipschitz":
        a = ops[0]
        dev = torch.clamp(LIPSCHITZ[step.op] * torch.broadcast_to(a.err, center.shape),
                          max=2.0 if step.op in ("sin", "cos") else INF)
        if step.op in CANCELLING:
            dev = dev + spec.ulps * unit(out_dtype) * torch.where(a.val.isfinite(), a.val.double().abs(), 0.0)
        dev = torch.where(a.err == INF, INF, dev)
    elif rule == "even":
        a = ops[0]
        mag = a.val.double().abs()
        lo, hi = (mag - a.err).clamp(min=0), mag + a.err
        dev = torch.maximum(_deviation(fn(lo), center), _deviation(fn(hi), center))
        dev = torch.where((a.err == INF) | (a.err > 0) & mag.isnan(), INF, dev)
    elif rule == "tan":
        a = ops[0]
        x = a.val.double()
        turns_lo, turns_hi = torch.floor((x - a.err) / math.pi - 0.5), torch.floor((x + a.err) / math.pi - 0.5)
        dev = torch.where(turns_lo != turns_hi, INF, corner_deviation(fn, ops, center))
    elif rule == "remainder":
        dev = _remainder_deviation(_roles(step, ops), center)
    elif rule == "pow":
        dev = _pow_deviation(fn, _roles(step, ops), ops, center, compute_dtype(out_dtype))
    elif rule == "equality":
        a, b = ops[0], ops[1]
        av = a.val.double() if isinstance(a.val, torch.Tensor) else torch.tensor(float(a.val))
        bv = b.val.double() if isinstance(b.val, torch.Tensor) else torch.tensor(float(b.val))
        total = a.err + b.err
        dev = torch.where(torch.as_tensor((total > 0) & ((av - bv).abs() <= total)), INF, 0.0)
        dev = torch.where(_unsure_mask(ops, center.shape), INF, torch.broadcast_to(dev, center.shape))
    elif rule == "truth":
        dev = torch.zeros(center.shape, dtype=torch.float64)
        for o in ops:
            flip = _crosses_zero(o) | (o.err == INF) if isinstance(o.val, torch.Tensor) and o.val.is_floating_point() \
                else torch.as_tensor(o.err == INF)
            dev = torch.where(torch.broadcast_to(flip, center.shape), INF, dev)
    elif rule in ("exact", "nanflag"):
        dev = torch.where(_unsure_mask(ops, center.shape), INF, 0.0)
    elif rule == "where":
        return _where(step, ops, center, out_dtype)
    else:
        raise AssertionError(f"no elementwise rule {rule}")
    return finish(center, dev, out_dtype, spec.ulps if out_dtype.is_floating_point else 0.0)


def _roles(step: Step, ops: Sequence[Operand]) -> list[Operand]:
    """The operands of a modulo or a power in their roles' order (see ROLES)."""
    by_name = {o.name: o for o in ops}
    return [by_name[name] for name in ROLES[step.op]]


def _remainder_deviation(ops: Sequence[Operand], center: torch.Tensor) -> torch.Tensor:
    """a % b = a - q b for q = floor(a / b): linear in a and b while q stays put over the box."""
    a, b = ops[0], ops[1]
    av = a.val.double() if isinstance(a.val, torch.Tensor) else torch.tensor(float(a.val))
    bv = b.val.double() if isinstance(b.val, torch.Tensor) else torch.tensor(float(b.val))
    ea, eb = torch.as_tensor(a.err, dtype=torch.float64), torch.as_tensor(b.err, dtype=torch.float64)
    if not (_nonzero(ea) or _nonzero(eb)):
        return torch.where(_unsure_mask(ops, center.shape), INF, torch.zeros(center.shape, dtype=torch.float64))
    quotients = [torch.floor((av + sa * ea) / (bv + sb * eb)) for sa in (-1, 1) for sb in (-1, 1)]
    steady = (bv.abs() > eb) & torch.stack([torch.broadcast_to(q == quotients[0], center.shape)
                                            for q in quotients]).all(0)
    dev = ea + quotients[0].abs() * eb
    dev = torch.where(steady & dev.isfinite(), dev, INF)
    return torch.where(_unsure_mask(ops, center.shape), INF, torch.broadcast_to(dev, center.shape))


def _pow_deviation(fn: Callable, roles: Sequence[Operand], ops: Sequence[Operand], center: torch.Tensor,
                   dtype: torch.dtype) -> torch.Tensor:
    """a ** b is monotone in each argument over a box of positive bases, and over a box of negative bases
    with an exact integer exponent; elsewhere it is undetermined unless nothing moves.

    A negative integer exponent may be computed as 1 / a ** -b in `dtype` (torch and lazytensor both do
    for small ones), where a ** -b overflows to inf below a result of 1 / (dtype's largest): there the
    result may be 0."""
    base, expo = roles
    bv = base.val.double() if isinstance(base.val, torch.Tensor) else torch.tensor(float(base.val))
    ev = expo.val.double() if isinstance(expo.val, torch.Tensor) else torch.tensor(float(expo.val))
    dev = corner_deviation(fn, ops, center)
    if dtype.is_floating_point:
        reciprocal = (ev < 0) & (ev == ev.round()) & (center.double().abs() * _overflow(dtype) <= 1)
        dev = torch.where(reciprocal, torch.maximum(dev, center.double().abs()), dev)
    if not (_nonzero(base.err) or _nonzero(expo.err)):
        return dev
    positive = bv - base.err > 0
    negative_integral = (bv + base.err < 0) & (torch.as_tensor(expo.err) == 0) & (ev == ev.round())
    return torch.where(torch.broadcast_to(positive | negative_integral, center.shape), dev, INF)


def _where(step: Step, ops: Sequence[Operand], center: torch.Tensor, out_dtype: torch.dtype) -> RVal:
    """An undetermined condition may pick either branch."""
    cond, x, y = ops[0], ops[1], ops[2]
    shape = center.shape

    def side(o: Operand) -> tuple[torch.Tensor, torch.Tensor]:
        v = o.val.double() if isinstance(o.val, torch.Tensor) else torch.tensor(float(o.val), dtype=torch.float64)
        return torch.broadcast_to(v, shape), torch.broadcast_to(torch.as_tensor(o.err, dtype=torch.float64), shape)

    (xv, xe), (yv, ye) = side(x), side(y)
    c = torch.broadcast_to(cond.val.bool(), shape)
    unsure = torch.broadcast_to(torch.as_tensor(cond.err) == INF, shape)
    dev = torch.where(c, xe, ye)
    either = torch.maximum(xe, ye) + _deviation(xv, yv)
    dev = torch.where(unsure, either, dev)
    if out_dtype.is_floating_point:
        return finish(center, dev, out_dtype, 0.0)
    return finish(center, dev, out_dtype, 0.0)


def cast(step: Step, env: dict[str, RVal], native: dict[str, torch.Tensor]) -> RVal:
    """A cast: floats round (and overflow) into a float dtype, truncate into an integer one (undetermined
    out of its range or for NaN, where torch's result is undefined) and test != 0 into bool."""
    src = env[step.args[0]]
    to = native[step.out].dtype
    v, e = src.val, src.err
    if to == torch.bool:
        if src.is_float:
            flip = ((e > 0) & (v.abs() <= e)) | (e == INF)
            return RVal(v != 0, torch.where(flip, INF, 0.0), to)
        return RVal(v.bool(), torch.where(e > 0, INF, 0.0), to)
    if to.is_floating_point:
        vd = v.double()
        if not src.is_float:
            e = e + _conversion_error(vd, False, to)
        return finish(vd, e, to, BASIC if src.is_float else 0.0)
    if src.is_float:
        info = torch.iinfo(to)
        t_lo, t_hi = torch.trunc(v - e), torch.trunc(v + e)
        bad = ~v.isfinite() | (t_lo != t_hi) | (e == INF) | (v.trunc() < info.min) | (v.trunc() > info.max)
        out = torch.where(bad, 0.0, v.trunc()).to(torch.int64).to(to)
        return RVal(out, torch.where(bad, INF, 0.0), to)
    return RVal(v.to(to), torch.where(e > 0, INF, 0.0), to)


# ---- reductions ------------------------------------------------------------------------------------


def _axes(axis: Any, ndim: int) -> tuple[int, ...]:
    if axis is None:
        return tuple(range(ndim))
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    return tuple(a % ndim for a in axes) if ndim else ()


def _count(shape: torch.Size, axes: tuple[int, ...]) -> int:
    return math.prod(shape[a] for a in axes)


def _sum(v: RVal, axis: Any, keep: bool, acc: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    """A float sum's exact value and error bound before its final rounding (v is float64)."""
    axes = _axes(axis, v.val.dim())
    val, err = v.val, torch.where(v.err == INF, 0.0, v.err)
    center = val.sum(dim=axes, keepdim=keep) if axes else val
    dev = torch.zeros(center.shape, dtype=torch.float64)
    for sign in (-1.0, 1.0):
        corner = (val + sign * err).sum(dim=axes, keepdim=keep) if axes else val + sign * err
        dev = torch.maximum(dev, _deviation(corner, center))
    n = _count(val.shape, axes)
    mags = torch.where(val.isfinite(), val.abs(), 0.0)
    spread = (mags.sum(dim=axes, keepdim=keep) if axes else mags) * max(n - 1, 0) * unit(acc)
    unsure = (v.err == INF).double()
    unsure = (unsure.sum(dim=axes, keepdim=keep) if axes else unsure) > 0
    dev = torch.where(center.isfinite(), dev + spread, dev)
    return center, torch.where(unsure, INF, dev)


def _as_compute(v: RVal, compute: torch.dtype) -> RVal:
    """An operand in the float dtype an op computes in (integers converted, with their rounding)."""
    if v.is_float:
        return RVal(v.val.double(), v.err, v.dtype)
    return RVal(v.val.double(), v.err + _conversion_error(v.val.double(), False, compute), compute)


def _binary(fn: Callable, a: RVal, b: RVal | float, dtype: torch.dtype, ulps: float) -> RVal:
    """An op inside a composite: corner bounds, rounding in `dtype` (without the overflow of 16-bit)."""
    ops = [Operand(a.val, a.err, "a")]
    ops.append(Operand(b.val, b.err, "b") if isinstance(b, RVal) else Operand(b, 0.0, "s"))
    call = (lambda x, y=None, _s=None: fn(x, y if y is not None else _s))
    center = _call(call, ops, [o.val for o in ops])
    return finish(center, corner_deviation(call, ops, center), dtype, ulps, inner=True)


def _unary(fn: Callable, a: RVal, dtype: torch.dtype, ulps: float) -> RVal:
    ops = [Operand(a.val, a.err, "a")]
    center = fn(a.val)
    return finish(center, corner_deviation(fn, ops, center), dtype, ulps, inner=True)


def _max(v: RVal, axes: tuple[int, ...]) -> RVal:
    """max over axes, kept (monotone: the corners bound it); 0 over an empty axis, as lazytensor shifts."""
    if _count(v.val.shape, axes) == 0:
        shape = tuple(1 if i in axes else n for i, n in enumerate(v.val.shape))
        return RVal(torch.zeros(shape, dtype=torch.float64), torch.zeros(shape, dtype=torch.float64), v.dtype)
    center = v.val.amax(dim=axes, keepdim=True)
    err = torch.where(v.err == INF, 0.0, v.err)
    dev = torch.maximum(_deviation((v.val + err).amax(dim=axes, keepdim=True), center),
                        _deviation((v.val - err).amax(dim=axes, keepdim=True), center))
    unsure = (v.err == INF).amax(dim=axes, keepdim=True) if axes else v.err == INF
    return RVal(center, torch.where(unsure, INF, dev), v.dtype)


def reduction(step: Step, fn: Callable, env: dict[str, RVal], native: dict[str, torch.Tensor]) -> RVal:
    """The reductions and the composites built from them."""
    spec = OPS[step.op]
    src = env[step.args[0]]
    out_dtype = native[step.out].dtype
    p = step.params
    axis, keep = p.get("axis"), p.get("keep", False)
    if spec.rule == "sum":
        if not out_dtype.is_floating_point:
            return RVal(fn(src.val).to(out_dtype), torch.where(fn(src.err) > 0, INF, 0.0), out_dtype)
        center, dev = _sum(_as_compute(src, out_dtype), axis, keep, compute_dtype(out_dtype))
        return finish(center, dev, out_dtype, BASIC)
    if spec.rule == "prod":
        return _prod(src, fn, out_dtype)
    if spec.rule == "extremum":  # monotone in each element: the corners bound it, an undetermined one too
        center = fn(src.val)
        if not src.is_float:
            lowest, highest = (False, True) if src.dtype == torch.bool else \
                (torch.iinfo(src.dtype).min, torch.iinfo(src.dtype).max)
            moved = [fn(torch.where(src.err > 0, torch.tensor(v, dtype=src.dtype), src.val)) for v in (lowest, highest)]
            return RVal(center, torch.where((moved[0] != center) | (moved[1] != center), INF, 0.0), out_dtype)
        dev = torch.maximum(_deviation(fn(src.val + src.err), center), _deviation(fn(src.val - src.err), center))
        return finish(center, dev, out_dtype, 0.0)
    if spec.rule == "boolreduce":
        truth = src.val != 0
        flip = ((src.err > 0) & (src.val.double().abs() <= src.err)) | (src.err == INF)
        lo, hi = fn(truth & ~flip), fn(truth | flip)
        return RVal(fn(truth), torch.where(lo != hi, INF, 0.0), out_dtype)
    if spec.rule == "argext":
        return _argext(step, fn, src, out_dtype)
    if spec.rule == "cumsum":
        return _cumsum(src, p["axis"], out_dtype)
    x = _as_compute(src, out_dtype)
    acc = compute_dtype(out_dtype)
    axes = _axes(axis, x.val.dim())
    if spec.rule == "mean":
        total, dev = _sum(x, axis, keep, acc)
        s = finish(total, dev, acc, BASIC, inner=True)
        return _final(_binary(torch.div, s, float(_count(x.val.shape, axes)), acc, BASIC), out_dtype)
    if spec.rule in ("var", "std"):
        mean_total, mean_dev = _sum(x, axes, True, acc)
        n = float(_count(x.val.shape, axes))
        m = _binary(torch.div, finish(mean_total, mean_dev, acc, BASIC, inner=True), n, acc, BASIC)
        centered = _binary(torch.sub, x, m, acc, BASIC)
        sq = _binary(torch.mul, centered, centered, acc, BASIC)
        total, dev = _sum(sq, axes, keep, acc)
        var = _binary(torch.div, finish(total, dev, acc, BASIC, inner=True),
                      max(0.0, _count(x.val.shape, axes) - p["corr"]), acc, BASIC)
        return _final(var if spec.rule == "var" else _unary(torch.sqrt, var, acc, BASIC), out_dtype)
    if spec.rule in ("softmax", "log_softmax", "logsumexp"):
        return _softmaxes(spec.rule, x, axis, keep, acc, out_dtype)
    raise AssertionError(f"no reduction rule {spec.rule}")


def _final(v: RVal, dtype: torch.dtype) -> RVal:
    """A composite's result rounded once into its dtype (from float32, for the 16-bit floats)."""
    return finish(v.val, v.err, dtype, BASIC if dtype != compute_dtype(dtype) else 0.0)


def _softmaxes(rule: str, x: RVal, axis: Any, keep: bool, acc: torch.dtype, out_dtype: torch.dtype) -> RVal:
    """softmax, log_softmax and logsumexp as lazytensor's reduce.py computes them."""
    axes = _axes(axis, x.val.dim())
    m = _max(x, axes)
    if rule == "logsumexp":
        m = RVal(torch.where(m.val.isinf(), 0.0, m.val), torch.where(m.val.isinf(), 0.0, m.err), m.dtype)
    shifted = _binary(torch.sub, x, m, acc, BASIC)
    e = _unary(torch.exp, shifted, acc, MATH)
    total, dev = _sum(e, axes, True, acc)
    s = finish(total, dev, acc, BASIC, inner=True)
    if rule == "softmax":
        return _final(_binary(torch.div, e, s, acc, BASIC), out_dtype)
    log_s = _unary(torch.log, s, acc, MATH)
    if rule == "log_softmax":
        return _final(_binary(torch.sub, shifted, log_s, acc, BASIC), out_dtype)
    lse = _binary(torch.add, log_s, m, acc, BASIC)
    if not keep:
        lse = RVal(lse.val.squeeze(axes) if axes else lse.val, lse.err.squeeze(axes) if axes else lse.err, lse.dtype)
    return _final(lse, out_dtype)


def _prod(src: RVal, fn: Callable, out_dtype: torch.dtype) -> RVal:
    """|prod(x + d) - prod(x)| <= prod(|x| + E) - prod(|x|), plus (n - 1) roundings of the product;
    undetermined where the order of the products decides."""
    center = fn(src.val)
    if not out_dtype.is_floating_point:  # undetermined where some factor is: the product of "exact" is 0
        return RVal(center.to(out_dtype), torch.where(fn((src.err == 0).double()) == 0, INF, 0.0), out_dtype)
    x = _as_compute(src, out_dtype)
    mags = x.val.abs()
    err = torch.where(x.err == INF, 0.0, x.err)
    n = max(src.val.numel() // max(center.numel(), 1), 1)
    base = fn(mags)
    dev = fn(mags + err) - base + (n - 1) * unit(compute_dtype(out_dtype)) * base
    exact_inputs = fn((err == 0).double()) == 1
    dev = torch.where(center.double().isfinite(), dev, torch.where(exact_inputs, 0.0, INF))
    unsure = fn((x.err != INF).double()) == 0
    # where a partial product can overflow and the whole does not, the order decides: inf, NaN (inf * 0)
    # or the finite product
    limit = _overflow(compute_dtype(out_dtype))
    unsure |= (fn(torch.clamp(mags + err, min=1.0)) >= limit) & (center.double().abs() < limit)
    return finish(center.double(), torch.where(unsure | dev.isnan(), INF, dev), out_dtype, BASIC)


def _argext(step: Step, fn: Callable, src: RVal, out_dtype: torch.dtype) -> RVal:
    """argmax/argmin: determined where one element is surely the extremum, or where the candidates are
    exact ties (the first wins), or where a NaN is (the first NaN wins, as PyTorch)."""
    center = fn(src.val)
    axis = step.params.get("axis")
    v = src.val.double() * (1 if step.op == "argmax" else -1)
    e = src.err
    if axis is None or v.dim() == 0:
        v, e, ax = v.reshape(-1), e.reshape(-1), 0
    else:
        ax = axis % v.dim()
    nan = v.isnan()
    lo = torch.where(nan, -INF, v - e)
    hi = torch.where(nan, -INF, v + e)
    top = lo.amax(dim=ax, keepdim=True)
    candidate = hi >= top
    ties_exact = (candidate & (e > 0)).sum(dim=ax) == 0
    several = candidate.sum(dim=ax) > 1
    unsure = (e == INF).any(dim=ax) | (~nan.any(dim=ax) & several & ~ties_exact)
    return RVal(center, torch.where(unsure, INF, 0.0).reshape(center.shape), out_dtype)


def _cumsum(src: RVal, axis: int, out_dtype: torch.dtype) -> RVal:
    """Each prefix is a sum of at most n terms: (n + 2) u sum|x| covers lazytensor's blocked order too."""
    if src.val.dim() == 0:
        return src if src.dtype == out_dtype else RVal(src.val.to(out_dtype) if not out_dtype.is_floating_point
                                                       else src.val, src.err, out_dtype)
    if not out_dtype.is_floating_point:
        return RVal(src.val.cumsum(axis).to(out_dtype), torch.where(src.err.cumsum(axis) > 0, INF, 0.0), out_dtype)
    x = _as_compute(src, out_dtype)
    n = x.val.shape[axis]
    center = x.val.cumsum(axis)
    err = torch.where(x.err == INF, 0.0, x.err)
    dev = torch.maximum(_deviation((x.val + err).cumsum(axis), center), _deviation((x.val - err).cumsum(axis), center))
    mags = torch.where(x.val.isfinite(), x.val.abs(), 0.0).cumsum(axis)
    dev = torch.where(center.isfinite(), dev + (n + 2) * unit(compute_dtype(out_dtype)) * mags, dev)
    dev = torch.where((x.err == INF).double().cumsum(axis) > 0, INF, dev)
    return finish(center, dev, out_dtype, BASIC)


# ---- pooling, normalization, losses ------------------------------------------------------------------------


def nn_composite(step: Step, fn: Callable, env: dict[str, RVal], native: dict[str, torch.Tensor]) -> RVal:
    """max pooling (monotone in each element), average pooling (linear), and layer norm and the losses as
    lazytensor's nn/functional.py composes them."""
    rule = OPS[step.op].rule
    out_dtype = native[step.out].dtype
    srcs = [env[a] for a in step.args]
    if rule == "pool_max":
        x = srcs[0]
        center = fn(x.val)
        if not x.is_float:
            return RVal(center, torch.where(fn(x.err) > 0, INF, 0.0), out_dtype)
        err = torch.where(x.err == INF, 0.0, x.err)
        dev = torch.maximum(_deviation(fn(x.val + err), center), _deviation(fn(x.val - err), center))
        return finish(center, torch.where(fn(x.err) == INF, INF, dev), out_dtype, 0.0)
    acc = compute_dtype(out_dtype)
    xs = [_as_compute(s, out_dtype) if s.is_float or i == 0 else s for i, s in enumerate(srcs)]
    if rule == "pool_avg":
        x = xs[0]
        center = fn(x.val)
        err = torch.where(x.err == INF, 0.0, x.err)
        dev = torch.maximum(_deviation(fn(x.val + err), center), _deviation(fn(x.val - err), center))
        terms = math.prod(step.params["kernel"]) if isinstance(step.params["kernel"], tuple) \
            else step.params["kernel"] ** 2
        mags = fn(torch.where(x.val.isfinite(), x.val.abs(), 0.0))
        dev = torch.where(center.isfinite(), dev + terms * unit(acc) * mags, dev)
        return finish(center, torch.where(fn((x.err == INF).double()) > 0, INF, dev), out_dtype, BASIC)
    if rule == "layer_norm":
        x, w, b = xs
        axes = tuple(range(x.val.dim() - len(step.params["shape"]), x.val.dim()))
        n = float(_count(x.val.shape, axes))
        mean = _binary(torch.div, finish(*_sum(x, axes, True, acc), acc, BASIC, inner=True), n, acc, BASIC)
        centered = _binary(torch.sub, x, mean, acc, BASIC)
        sq = _binary(torch.mul, centered, centered, acc, BASIC)
        var = _binary(torch.div, finish(*_sum(sq, axes, True, acc), acc, BASIC, inner=True), n, acc, BASIC)
        inv = _unary(torch.rsqrt, _binary(torch.add, var, 1e-5, acc, BASIC), acc, MATH)
        out = _binary(torch.mul, _binary(torch.mul, centered, inv, acc, BASIC), w, acc, BASIC)
        return _final(_binary(torch.add, out, b, acc, BASIC), out_dtype)
    if rule == "mse_loss":
        diff = _binary(torch.sub, xs[0], xs[1], acc, BASIC)
        return _final(_reduced(_binary(torch.mul, diff, diff, acc, BASIC), step.params["reduction"], acc), out_dtype)
    logp = _softmaxes("log_softmax", xs[0], 1, True, acc, acc)
    index = srcs[1].val.long().unsqueeze(1)
    picked = RVal(-logp.val.gather(1, index).squeeze(1), logp.err.gather(1, index).squeeze(1), acc)
    return _final(_reduced(picked, step.params["reduction"], acc), out_dtype)


def _reduced(v: RVal, reduction: str, acc: torch.dtype) -> RVal:
    """A loss's reduction: none, sum or mean over every element."""
    if reduction == "none":
        return v
    total, dev = _sum(v, None, False, acc)
    s = finish(total, dev, acc, BASIC, inner=True)
    return s if reduction == "sum" else _binary(torch.div, s, float(v.val.numel()), acc, BASIC)


# ---- movement, contractions, random numbers ------------------------------------------------------------------


def movement(step: Step, fn: Callable, env: dict[str, RVal], native: dict[str, torch.Tensor]) -> RVal:
    """Movement ops move the errors with the values (a pad's value is rounded into the dtype)."""
    out_dtype = native[step.out].dtype
    srcs = [env[a] for a in step.args]
    if out_dtype.is_floating_point:
        vals = [s.val.double() for s in srcs]
        errs = [s.err + (0.0 if s.is_float else _conversion_error(s.val.double(), False, out_dtype)) for s in srcs]
    else:
        vals, errs = [s.val.to(out_dtype) for s in srcs], [s.err for s in srcs]
    if OPS[step.op].rule == "pad":
        pairs, value = step.params["pairs"], step.params["s"]
        val = semantics.pad(vals[0], pairs, value)
        fill = _conversion_error(value, isinstance(value, float), out_dtype) if out_dtype.is_floating_point else 0.0
        err = semantics.pad(errs[0], pairs, float(fill))
        if out_dtype.is_floating_point:
            val = semantics.pad(vals[0], pairs, float(torch.tensor(value).to(out_dtype)))
        return RVal(val, err, out_dtype)
    if out_dtype.is_floating_point:  # an integer made float may overflow a 16-bit float
        return finish(fn(*vals), fn(*errs), out_dtype, 0.0)
    return RVal(fn(*vals), fn(*errs), out_dtype)


def contraction(step: Step, fn: Callable, env: dict[str, RVal], native: dict[str, torch.Tensor]) -> RVal:
    """A sum of products over k terms: |A| E_B + E_A |B| + E_A E_B + k u |A||B| (+ a bias's error, and in a
    16-bit dtype the product's rounding to it before the bias is added, as torch's addmm rounds it)."""
    out_dtype = native[step.out].dtype
    srcs = [env[a] for a in step.args]
    if not out_dtype.is_floating_point:
        center = fn(*[s.val.to(out_dtype) for s in srcs])
        unsure = fn(*[(s.err > 0).to(out_dtype) for s in srcs])
        return RVal(center, torch.where(unsure != 0, INF, 0.0), out_dtype)
    xs = [_as_compute(s, out_dtype) for s in srcs]
    vals = [x.val for x in xs]
    errs = [torch.where(x.err == INF, 0.0, x.err) for x in xs]
    mags = [v.abs() for v in vals]
    center = fn(*vals)
    zero_bias = [torch.zeros_like(vals[2])] if len(xs) == 3 else []
    a, b = mags[0], mags[1]
    ea, eb = errs[0], errs[1]
    dev = fn(a, eb, *zero_bias) + fn(ea, b, *zero_bias) + fn(ea, eb, *zero_bias)
    terms = fn(torch.ones_like(a), torch.ones_like(b), *zero_bias)
    dev = dev + terms * unit(compute_dtype(out_dtype)) * fn(a, b, *zero_bias)
    if len(xs) == 3:
        dev = dev + fn(torch.zeros_like(a), torch.zeros_like(b), errs[2])
        dev = dev + unit(compute_dtype(out_dtype)) * fn(torch.zeros_like(a), torch.zeros_like(b), mags[2])
        if compute_dtype(out_dtype) != out_dtype:  # the product may be stored as 16 bits before the bias joins
            dev = dev + unit(out_dtype) * fn(a, b, *zero_bias)
    moving = fn(*[(x.err > 0).double() for x in xs[:2]], *zero_bias) + fn(
        (xs[0].err > 0).double(), torch.ones_like(b), *zero_bias) + fn(torch.ones_like(a), (xs[1].err > 0).double(),
                                                                        *zero_bias)
    unsure = fn(*[(x.err == INF).double() for x in xs[:2]], *zero_bias) + fn(
        (xs[0].err == INF).double(), torch.ones_like(b), *zero_bias) + fn(torch.ones_like(a),
                                                                          (xs[1].err == INF).double(), *zero_bias)
    if len(xs) == 3:
        unsure = unsure + fn(torch.zeros_like(a), torch.zeros_like(b), (xs[2].err == INF).double())
    dev = torch.where(center.isfinite(), dev, torch.where(moving > 0, INF, 0.0))
    dev = torch.where((unsure > 0) | dev.isnan(), INF, dev)
    return finish(center, dev, out_dtype, BASIC)


def random_draw(step: Step, draws: Sequence[torch.Tensor]) -> RVal:
    """A random draw is what lazytensor draws on its own (check.py); randn's transcendental math may round
    differently inside another kernel."""
    value = draws[step.params["k"]]
    if not value.dtype.is_floating_point:
        return exact(value, value.dtype)
    v = exact(value, value.dtype)
    return finish(v.val, v.err, value.dtype, OPS[step.op].ulps)


def dropout(step: Step, env: dict[str, RVal], native: dict[str, torch.Tensor], draws: Sequence[torch.Tensor]) -> RVal:
    src = env[step.args[0]]
    keep = draws[step.params["k"]].double() >= step.params["p"]
    scaled = _binary(torch.mul, _as_compute(src, native[step.out].dtype), step.params["scale"],
                     native[step.out].dtype, BASIC)
    return RVal(torch.where(keep, scaled.val, 0.0), torch.where(keep, scaled.err, 0.0), scaled.dtype)


# ---- running a program -------------------------------------------------------------------------------------


def torch_function(step: Step, namespace: dict[str, Any]) -> Callable:
    """The step's torch template as a function of its operands (and of its arithmetic scalars)."""
    names = [f"_x{i}" for i in range(len(step.args))]
    params = {k: v for k, v in step.params.items() if k not in SCALARS}
    scalars = [s for s in SCALARS if s in step.params]
    text = render(OPS[step.op].torch, names, {**params, **{s: _Name(f"_{s}") for s in scalars}})
    args = ", ".join(names + [f"_{s}=None" for s in scalars])
    return eval(f"lambda {args}: {text}", namespace)


class _Name(str):
    """A parameter rendered as a variable name rather than a literal."""

    def __repr__(self) -> str:
        return str(self)


def evaluate(program: Program, inputs: dict[str, torch.Tensor], draws: Sequence[torch.Tensor]
             ) -> tuple[dict[str, torch.Tensor], dict[str, RVal]]:
    """Run the program in torch (each step as its template, in the inputs' own dtypes) and in the reference.

    Returns both: torch's results (the dtypes and shapes lazytensor must match) and the reference values."""
    namespace = {"torch": torch, "sem": semantics, "R": list(draws)}
    native: dict[str, torch.Tensor] = {}
    env: dict[str, RVal] = {}
    for inp in program.inputs:
        native[inp.name] = inputs[inp.name]
        env[inp.name] = exact(inputs[inp.name].double() if inputs[inp.name].is_floating_point()
                              else inputs[inp.name], inputs[inp.name].dtype)
    for step in program.steps:
        fn = torch_function(step, namespace)
        with warnings.catch_warnings():  # var() with correction >= the count: NaN or inf, as intended
            warnings.simplefilter("ignore")
            native[step.out] = torch.as_tensor(fn(*[native[a] for a in step.args],
                                                  **{f"_{s}": step.params[s] for s in SCALARS if s in step.params}))
        with float64_default():
            env[step.out] = reference_step(step, fn, env, native, draws)
    return native, env


def reference_step(step: Step, fn: Callable, env: dict[str, RVal], native: dict[str, torch.Tensor],
                   draws: Sequence[torch.Tensor]) -> RVal:
    rule = OPS[step.op].rule
    if rule == "cast":
        out = cast(step, env, native)
    elif rule in ("move", "pad"):
        out = movement(step, fn, env, native)
    elif rule == "contract":
        out = contraction(step, fn, env, native)
    elif rule == "random":
        out = random_draw(step, draws)
    elif rule == "dropout":
        out = dropout(step, env, native, draws)
    elif rule in ("pool_max", "pool_avg", "layer_norm", "mse_loss", "cross_entropy"):
        out = nn_composite(step, fn, env, native)
    elif rule in ("sum", "prod", "extremum", "boolreduce", "argext", "mean", "var", "std", "logsumexp", "softmax",
                  "log_softmax", "cumsum"):
        out = reduction(step, fn, env, native)
    else:
        out = elementwise(step, fn, env, native)
    want = native[step.out]
    if tuple(out.val.shape) != tuple(want.shape):
        raise AssertionError(f"reference: {step.op} gave shape {tuple(out.val.shape)}, torch {tuple(want.shape)}")
    return RVal(out.val, out.err.double(), want.dtype)
