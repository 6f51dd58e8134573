"""Random programs from a stream of choices.

Every decision the generator makes is one draw from `Choices`, which records it. A program is therefore a
function of its list of draws: replaying a list rebuilds the program, and a shorter list or smaller draws
give a smaller program that is still valid by construction. That is how shrink.py shrinks a failure (as
Hypothesis does, on the draws rather than on the program).

Each proposed step is checked by running its torch template on tensors of ones of the operands' shapes and
dtypes: what torch refuses is not proposed (the error fuzzer, errors.py, covers refusals), and the result's
shape and dtype are what later steps build on.
"""
from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from .ops import OPS, RANDOM_OPS
from .program import Input, Program, Step
from .reference import torch_function

FLOATS = ("float32", "float64", "float16", "bfloat16")
INTS = ("int8", "int16", "int32", "int64", "uint8")
DTYPES = ("bool", *INTS, *FLOATS)
TORCH = {name: getattr(torch, name) for name in DTYPES}


class Choices:
    """A stream of integer draws, from a seed or replayed from a record (clamped to each draw's range, and
    the lowest value once the record runs out)."""

    def __init__(self, seed: int | None = None, replay: Sequence[int] | None = None):
        self.rng = random.Random(seed)
        self.replay = list(replay) if replay is not None else None
        self.record: list[int] = []

    def int(self, lo: int, hi: int) -> int:
        """A draw in [lo, hi]; recorded as its offset from lo, so shrinking towards 0 simplifies."""
        if self.replay is not None:
            pos = len(self.record)
            offset = self.replay[pos] if pos < len(self.replay) else 0
            offset = min(max(offset, 0), hi - lo)
        else:
            offset = self.rng.randint(0, hi - lo)
        self.record.append(offset)
        return lo + offset

    def pick(self, seq: Sequence[Any]) -> Any:
        return seq[self.int(0, len(seq) - 1)]

    def flag(self, p: float) -> bool:
        """True with probability p; the draw 0 (what shrinking aims at) is False."""
        return self.int(0, 999) >= 1000 - round(p * 1000)

    def weighted(self, table: dict[Any, float]) -> Any:
        total = sum(table.values())
        r = self.int(0, 9999) * total / 10000
        for key, w in table.items():
            if r < w:
                return key
            r -= w
        return key


@dataclass
class Config:
    """What a mode lets the generator make."""

    max_steps: int = 14
    max_numel: int = 2048
    max_ndim: int = 5
    grad: bool = False         # float32/float64 programs of differentiable ops, for gradient checks
    random_ops: bool = True
    dtypes: tuple[str, ...] = DTYPES


@dataclass
class Value:
    name: str
    shape: tuple[int, ...]
    dtype: torch.dtype

    @property
    def ndim(self) -> int:
        return len(self.shape)


@dataclass
class Builder:
    """The program being generated: its inputs, steps and values."""

    ch: Choices
    cfg: Config
    float_dtype: str
    inputs: list[Input] = field(default_factory=list)
    steps: list[Step] = field(default_factory=list)
    values: list[Value] = field(default_factory=list)
    draws: list[torch.Tensor] = field(default_factory=list)
    counter: int = 0

    # ---- values ----

    def fresh(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def dtype(self) -> str:
        """A dtype for a new input: mostly the program's float dtype."""
        if self.cfg.grad:
            return self.float_dtype
        table = {self.float_dtype: 8.0, **{d: 0.6 for d in self.cfg.dtypes}}
        return self.ch.weighted(table)

    def new_input(self, shape: tuple[int, ...], dtype: str | None = None, labels: int = 0) -> Value:
        """A new realized input (`labels`: class indices below it, laid out contiguously)."""
        if labels:
            name = self.fresh("x")
            data = np.random.default_rng(self.ch.int(0, 2**31)).integers(0, labels, shape)
            self.inputs.append(Input(name, "int64", "contiguous", data, labels=labels))
            self.values.append(Value(name, tuple(data.shape), torch.int64))
            return self.values[-1]
        dtype = dtype or self.dtype()
        if self.cfg.grad and dtype != "bool":
            dtype = self.float_dtype
        layouts = ["contiguous"]
        if len(shape) >= 2:
            layouts.append("transposed")
        if len(shape) >= 1:
            layouts += ["strided", "flipped"]
            if shape[0] >= 1:
                layouts.append("offset")
        wide = [i for i, n in enumerate(shape) if n > 1]
        if wide:
            layouts.append("broadcast")
        layout = layouts[0] if self.ch.flag(0.5) is False else self.ch.pick(layouts)
        axis = self.ch.pick(wide) if layout == "broadcast" else -1
        data = make_data(self.ch, shape, dtype, axis)
        name = self.fresh("x")
        self.inputs.append(Input(name, dtype, layout, data, axis))
        value = Value(name, shape, TORCH[dtype])
        self.values.append(value)
        return value

    def shape(self, ndim: int | None = None) -> tuple[int, ...]:
        """A small shape: sizes 1 and 0 included, 0-d tensors too."""
        ndim = self.ch.weighted({0: 1, 1: 3, 2: 4, 3: 3, 4: 1.5, 5: 0.5}) if ndim is None else ndim
        sizes = {1: 3, 2: 3, 3: 3, 4: 2, 5: 2, 7: 1, 8: 1, 16: 0.7, 33: 0.3, 0: 0.25}
        shape = tuple(self.ch.weighted(sizes) for _ in range(ndim))
        while math.prod(shape) > self.cfg.max_numel // 4:
            shape = tuple(max(1, n // 2) for n in shape)
        return shape

    def operand(self, want: Callable[[Value], bool] = lambda v: True) -> Value | None:
        """An existing value, the latest more often (so chains fuse), that `want` accepts."""
        fits = [v for v in self.values if want(v)]
        if not fits:
            return None
        if self.ch.flag(0.45):
            return fits[-1]
        return self.ch.pick(fits)

    def add(self, op: str, args: Sequence[Value], params: dict[str, Any]) -> Value | None:
        """Add the step if torch accepts it on tensors of ones and its result is small enough."""
        step = Step(self.fresh("v"), op, tuple(a.name for a in args), params)
        if documented_difference(op, args, params) or op in ELEMENTWISE and _mixes_zero_dim(op, args):
            return None
        probes = [torch.ones(a.shape, dtype=a.dtype) for a in args]
        scalars = {f"_{s}": params[s] for s in ("s", "t") if s in params}
        try:
            fn = torch_function(step, {"torch": torch, "sem": _sem(), "R": self.draws})
            out = torch.as_tensor(fn(*probes, **scalars))
        except Exception:  # noqa: BLE001  (torch refuses this combination: propose another)
            return None
        if any(0 in a.shape for a in args) and _empty_dtype_differs(fn, args, scalars, out.dtype):
            return None
        if out.numel() > self.cfg.max_numel or out.dim() > self.cfg.max_ndim:
            return None
        if self.cfg.grad and not out.dtype.is_floating_point and out.dtype != torch.bool:
            return None
        if self.cfg.grad and out.dtype.is_floating_point and not any(a.dtype.is_floating_point for a in args):
            return None  # a float made from bools would stay float32 in the float64 reference
        self.steps.append(step)
        value = Value(step.out, tuple(out.shape), out.dtype)
        self.values.append(value)
        return value


def _empty_dtype_differs(fn: Callable, args: Sequence[Value], scalars: dict[str, Any], dtype: torch.dtype) -> bool:
    """Whether torch gives the op on empty tensors another dtype than on filled ones (float32 @ bool of
    size 0 is bool, where the same with elements raises): torch is no oracle for those."""
    try:
        filled = torch.as_tensor(fn(*[torch.ones(tuple(max(n, 1) for n in a.shape), dtype=a.dtype) for a in args],
                                    **scalars))
    except Exception:  # noqa: BLE001  (the sizes no longer fit together: nothing to compare)
        return True
    return filled.dtype != dtype


def _sem() -> Any:
    from . import semantics
    return semantics


def documented_difference(op: str, args: Sequence[Value], params: dict[str, Any]) -> bool:
    """Whether lazytensor differs from torch by design on this call, so torch is no oracle for it.

    lazytensor refuses (errors.py checks that it raises clearly there): arithmetic without a bool meaning on
    bools (subtract, floor divide, modulo, power), contractions of bools, and Python ints that an integer
    dtype cannot hold (NumPy 2; torch wraps them). It computes otherwise (NumPy's results): the square of
    bools is bool (torch: int64), average pooling of integers is float (torch: truncated integers), sums and
    products of unsigned integers are uint64 (the array API's; torch: int64)."""
    dtypes = [a.dtype for a in args]
    promoted = dtypes[0] if dtypes else torch.bool
    for d in dtypes[1:]:
        promoted = torch.promote_types(promoted, d)
    scalars = [params[s] for s in ("s", "t") if s in params]
    if op in ELEMENTWISE_SCALAR and promoted.is_floating_point is False and promoted != torch.bool:
        info = torch.iinfo(promoted)  # each scalar meets the tensor's integer dtype (clip: one bound at a time)
        if any(isinstance(s, int) and not isinstance(s, bool) and not info.min <= s <= info.max for s in scalars):
            return True
    for s in scalars:
        if isinstance(s, float) and not promoted.is_floating_point:
            promoted = torch.float32
        elif isinstance(s, int) and not isinstance(s, bool) and promoted == torch.bool:
            promoted = torch.int64
    base = op.removesuffix("_s").removeprefix("r") if op.endswith("_s") else op
    if promoted == torch.bool and base in ("sub", "floordiv", "mod", "pow", "neg"):
        return True
    if promoted == torch.bool and op in ("matmul", "tensordot", "outer", "linear", "conv2d", "conv2d_bias"):
        return True
    if op == "avg_pool2d" and not promoted.is_floating_point:
        return True
    if op in ("sum", "prod", "prod_all", "cumsum") and promoted == torch.uint8:
        return True
    return promoted == torch.bool and op == "square"


ELEMENTWISE_SCALAR = {"add_s", "rsub_s", "mul_s", "div_s", "rdiv_s", "floordiv_s", "rfloordiv_s", "mod_s", "rmod_s",
                      "pow_s", "rpow_s", "lt_s", "ge_s", "eq_s", "clip_s", "clip_min_s", "where_s", "pad"}
ELEMENTWISE = {"add", "sub", "mul", "div", "floordiv", "mod", "pow", "maximum", "minimum", "lt", "le", "gt", "ge",
               "eq", "ne", "logical_and", "logical_or", "logical_xor", "bitwise_and", "bitwise_or", "bitwise_xor",
               "where", "where_s", "clip"}


def _mixes_zero_dim(op: str, args: Sequence[Value]) -> bool:
    """torch promotes a 0-d tensor with a dimensioned one like a scalar (int8[3] + int64[] computes in int8,
    int8[] >= uint8[3] in uint8); lazytensor, as NumPy 2, promotes their dtypes. A documented difference,
    not generated: elementwise ops on 0-d and dimensioned operands of different dtypes are not proposed."""
    operands = args[1:] if op in ("where", "where_s") else args
    if all(a.ndim for a in operands) or all(not a.ndim for a in operands):
        return False
    return len({a.dtype for a in operands}) > 1


# ---- data ---------------------------------------------------------------------------------------------

SPECIALS = (0.0, -0.0, math.inf, -math.inf, math.nan, 1e4, -6e4, 1e-6, 3e-8, 1e30, -1e-30, 2.5, -0.5)


def make_data(ch: Choices, shape: tuple[int, ...], dtype: str, broadcast_axis: int = -1) -> np.ndarray:
    """Values exact in `dtype` (bfloat16 as float32): small floats, sometimes scaled, integral (ties and
    exact comparisons) or sprinkled with special values (signed zeros, infinities, NaN, huge, subnormal);
    small integers, sometimes the dtype's extremes."""
    rng = np.random.default_rng(ch.int(0, 2**31))
    kind = ch.weighted({"plain": 6, "integral": 1.5, "special": 1.5, "scaled": 1})
    if broadcast_axis >= 0:
        small = list(shape)
        small[broadcast_axis] = 1
        return np.broadcast_to(make_values(rng, tuple(small), dtype, kind), shape).copy()
    return make_values(rng, shape, dtype, kind)


def make_values(rng: np.random.Generator, shape: tuple[int, ...], dtype: str, kind: str) -> np.ndarray:
    if dtype == "bool":
        return rng.random(shape) < 0.5
    if dtype in INTS:
        info = np.iinfo(dtype)
        lo, hi = (0, 100) if dtype == "uint8" else (-50, 50)
        out = rng.integers(lo, hi, shape)
        if kind == "special":
            picks = np.array([info.min, info.max, 0, -1 if dtype != "uint8" else 1, info.min + 1])
            mask = rng.random(shape) < 0.3
            out = np.where(mask, rng.choice(picks, shape), out)
        return out.astype(dtype)
    if kind == "integral":
        values = rng.integers(-4, 5, shape).astype(np.float64)
    else:
        values = rng.uniform(-3, 3, shape)
        if kind == "scaled":
            values = values * rng.choice([1e-3, 1e3, 30.0])
        if kind == "special":
            mask = rng.random(shape) < 0.2
            values = np.where(mask, rng.choice(np.array(SPECIALS), shape), values)
    if dtype == "bfloat16":
        return torch.tensor(values, dtype=torch.float64).to(torch.bfloat16).float().numpy()
    with np.errstate(over="ignore"):
        return values.astype(dtype)


# ---- proposals: one per kind of op -----------------------------------------------------------------------

UNARY = ["neg", "abs", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sqrt", "rsqrt", "sin", "cos", "tan",
         "tanh", "erf", "sigmoid", "reciprocal", "relu", "square", "sign", "floor", "ceil", "round", "round_decimals",
         "trunc", "isnan", "isinf", "isfinite", "logical_not", "bitwise_not", "gelu", "gelu_tanh", "silu",
         "softplus", "leaky_relu", "elu", "cast", "contiguous", "clone"]
BINARY = ["add", "sub", "mul", "div", "floordiv", "mod", "pow", "maximum", "minimum", "lt", "le", "gt", "ge", "eq",
          "ne", "logical_and", "logical_or", "logical_xor", "bitwise_and", "bitwise_or", "bitwise_xor"]
SCALAR = ["add_s", "rsub_s", "mul_s", "div_s", "rdiv_s", "floordiv_s", "rfloordiv_s", "mod_s", "rmod_s", "pow_s",
          "rpow_s", "lt_s", "ge_s", "eq_s", "clip_s", "clip_min_s"]
REDUCE = ["sum", "prod", "prod_all", "mean", "max", "min", "max_all", "any", "all", "argmax", "argmin", "var", "std",
          "logsumexp", "softmax", "log_softmax", "cumsum"]
MOVE = ["reshape", "permute", "swapaxes", "mT", "broadcast_to", "expand", "unsqueeze", "squeeze", "flatten", "index",
        "flip", "pad", "concat", "stack", "split", "chunk", "np_split", "repeat"]
CONTRACT = ["matmul", "tensordot", "outer", "vecdot", "linear", "conv2d", "conv2d_bias"]
NN = ["max_pool2d", "avg_pool2d", "layer_norm", "mse_loss", "cross_entropy"]

SCALAR_VALUES = {"pow_s": [2, 3, 0.5, -0.5, -1, -2, 1.5, 0, 1, 2.5, -3, 1.0],
                 "rpow_s": [2, 2.0, 0.5, 10, 1.5, -2.0],
                 "default": [0, 1, 2, 3, -1, -2, 7, 100, 0.5, 2.5, -1.5, 1e-3, 3.0, 0.0, -0.0, 1e10, True, 0.1]}


def propose(b: Builder) -> Value | None:
    """One step (or a small pattern of steps) of a random kind."""
    ops = {"unary": 3.0, "binary": 3.0, "scalar": 2.0, "where": 1.0, "reduce": 2.5, "reduce_back": 1.0,
           "move": 3.0, "contract": 1.2, "nn": 0.6}
    if b.cfg.random_ops:
        ops["random"] = 0.4
    kind = b.ch.weighted(ops)
    return PROPOSALS[kind](b)


def _unary(b: Builder) -> Value | None:
    op = b.ch.pick([o for o in UNARY if not b.cfg.grad or OPS[o].grad])
    a = b.operand()
    if a is None:
        return None
    params: dict[str, Any] = {}
    if op == "round_decimals":
        params["decimals"] = b.ch.pick([-1, 1, 2])
    elif op == "leaky_relu":
        params["s"] = b.ch.pick([0.01, 0.2])
    elif op == "cast":
        params["dt"] = b.ch.pick(FLOATS[:2] if b.cfg.grad else DTYPES)
        if b.cfg.grad and params["dt"] != b.float_dtype:
            return None
    return b.add(op, [a], params)


def _broadcastable(shape: tuple[int, ...], b: Builder) -> tuple[int, ...]:
    """A shape that broadcasts against `shape`: the same, with sizes set to 1, fewer or more axes."""
    form = b.ch.weighted({"same": 4, "ones": 2, "suffix": 1.5, "lead": 0.7, "scalar": 0.5})
    if form == "same":
        return shape
    if form == "ones":
        return tuple(1 if b.ch.flag(0.5) else n for n in shape)
    if form == "suffix":
        return shape[b.ch.int(0, len(shape)):]
    if form == "lead" and len(shape) < b.cfg.max_ndim:
        return (b.ch.pick([1, 2, 3]),) + shape
    return ()


def _partner(b: Builder, a: Value, dtype: str | None = None) -> Value | None:
    """A second operand that broadcasts with `a`: an existing value, or a new input."""
    def fits(v: Value) -> bool:
        try:
            torch.broadcast_shapes(v.shape, a.shape)
        except RuntimeError:
            return False
        return v is not a or b.ch.flag(0.3)
    if b.ch.flag(0.5):
        found = b.operand(fits)
        if found is not None:
            return found
    return b.new_input(_broadcastable(a.shape, b), dtype)


def _binary(b: Builder) -> Value | None:
    op = b.ch.pick([o for o in BINARY if not b.cfg.grad or OPS[o].grad])
    a = b.operand()
    if a is None:
        return None
    other = _partner(b, a)
    if other is None:
        return None
    return b.add(op, [a, other] if b.ch.flag(0.8) else [other, a], {})


def _scalar(b: Builder) -> Value | None:
    op = b.ch.pick([o for o in SCALAR if not b.cfg.grad or OPS[o].grad])
    a = b.operand()
    if a is None:
        return None
    s = b.ch.pick(SCALAR_VALUES.get(op, SCALAR_VALUES["default"]))
    params: dict[str, Any] = {"s": s}
    if op == "clip_s":
        params["t"] = b.ch.pick([1, 2.5, -0.5, 0, 4.0])
    return b.add(op, [a], params)


def _where(b: Builder) -> Value | None:
    a = b.operand()
    if a is None:
        return None
    if b.ch.flag(0.3):
        lo = b.new_input(_broadcastable(a.shape, b), _name(a.dtype))
        hi = _partner(b, a)
        return b.add("clip", [a, lo, hi], {}) if hi is not None else None
    cond = b.operand(lambda v: v.dtype == torch.bool and _broadcasts(v.shape, a.shape))
    if cond is None or b.ch.flag(0.4):
        cond = b.new_input(_broadcastable(a.shape, b), "bool")
    if b.ch.flag(0.35):
        return b.add("where_s", [cond, a], {"s": b.ch.pick([0.0, 1, -2.5, math.inf, 0.5])})
    other = _partner(b, a)
    if other is None:
        return None
    return b.add("where", [cond, a, other] if b.ch.flag(0.5) else [cond, other, a], {})


def _broadcasts(x: tuple[int, ...], y: tuple[int, ...]) -> bool:
    try:
        torch.broadcast_shapes(x, y)
    except RuntimeError:
        return False
    return True


def _axis_param(b: Builder, ndim: int, many: bool, none: bool) -> Any:
    """An axis: None, an int (negative too) or a tuple of distinct ints."""
    if ndim == 0:
        return None
    forms = {"int": 4.0}
    if none:
        forms["none"] = 1.0
    if many and ndim > 1:
        forms["tuple"] = 2.0
    form = b.ch.weighted(forms)
    if form == "none":
        return None
    if form == "int":
        axis = b.ch.int(0, ndim - 1)
        return axis - ndim if b.ch.flag(0.3) else axis
    axes = [i for i in range(ndim) if b.ch.flag(0.5)] or [b.ch.int(0, ndim - 1)]
    return tuple(a - ndim if b.ch.flag(0.3) else a for a in axes)


def _reduce(b: Builder, op: str | None = None, a: Value | None = None, keep: bool | None = None) -> Value | None:
    op = op or b.ch.pick([o for o in REDUCE if not b.cfg.grad or OPS[o].grad])
    a = a or b.operand()
    if a is None:
        return None
    params: dict[str, Any] = {}
    if op in ("softmax", "log_softmax", "cumsum"):
        if a.ndim == 0:
            if op != "cumsum":
                return None
            params["axis"] = b.ch.pick([0, -1])
        else:
            params["axis"] = _axis_param(b, a.ndim, many=False, none=False)
    elif op not in ("prod_all", "max_all"):
        many = op not in ("prod", "argmax", "argmin")
        none = op not in ("prod", "logsumexp") and a.ndim > 0
        if a.ndim == 0 and op in ("prod", "logsumexp"):
            return None
        params["axis"] = _axis_param(b, a.ndim, many, none)
        params["keep"] = keep if keep is not None else b.ch.flag(0.4)
        if op in ("var", "std"):
            params["corr"] = b.ch.pick([0, 1])
    return b.add(op, [a], params)


def _reduce_back(b: Builder) -> Value | None:
    """A reduction kept and broadcast back against its input: x - x.mean(axis), x / x.sum(axis), ..."""
    a = b.operand(lambda v: v.ndim > 0)
    if a is None:
        return None
    red = _reduce(b, b.ch.pick(["sum", "mean", "max", "min", "logsumexp", "var", "std", "prod"]), a, keep=True)
    if red is None:
        return None
    op = b.ch.pick(["sub", "div", "mul", "add", "lt", "maximum"])
    return b.add(op, [a, red], {})


def _reshape_target(b: Builder, shape: tuple[int, ...]) -> tuple[int, ...]:
    """Another shape of as many elements: the sizes' prime factors regrouped, 1s added or removed."""
    n = math.prod(shape)
    if n == 0:
        return tuple(b.ch.pick([0, 1, 2]) if i else 0 for i in range(b.ch.int(1, 3)))
    factors = []
    m = n
    for p in (2, 3, 5, 7, 11, 13):
        while m % p == 0:
            factors.append(p)
            m //= p
    if m > 1:
        factors.append(m)
    ndim = b.ch.int(0 if n == 1 else 1, min(b.cfg.max_ndim, max(len(factors), 1) + 1))
    out = [1] * max(ndim, 1)
    for f in factors:
        out[b.ch.int(0, len(out) - 1)] *= f
    out = out if ndim else []
    if out and b.ch.flag(0.3):
        out[b.ch.int(0, len(out) - 1)] = -1
    return tuple(out)


def _index_items(b: Builder, shape: tuple[int, ...]) -> tuple[Any, ...]:
    items: list[Any] = []
    for n in shape:
        form = b.ch.weighted({"all": 2, "slice": 4, "int": 1.2 if n else 0, "none": 0.5})
        if form == "none":
            items.append(None)
        if form == "int":
            i = b.ch.int(0, n - 1)
            items.append(i - n if b.ch.flag(0.3) else i)
        elif form == "all" or form == "none":
            items.append(slice(None))
        else:
            step = b.ch.pick([1, 2, 3, -1, -2, None])
            start = b.ch.pick([None, 0, 1, -1, 2, n])
            stop = b.ch.pick([None, n, -1, 1, 3, 0])
            items.append(slice(start, stop, step))
    if items and b.ch.flag(0.25):
        cut = b.ch.int(0, len(items))
        items = items[:cut] + [Ellipsis]
    return tuple(items)


def _move(b: Builder) -> Value | None:
    op = b.ch.pick(MOVE)
    a = b.operand()
    if a is None:
        return None
    nd, shape = a.ndim, a.shape
    params: dict[str, Any] = {}
    args = [a]
    if op == "reshape":
        params["shape"] = _reshape_target(b, shape)
    elif op == "permute":
        params["perm"] = tuple(i - nd if b.ch.flag(0.2) else i for i in _permutation(b, nd))
    elif op in ("swapaxes", "flatten"):
        if nd == 0:
            return None
        i, j = b.ch.int(-nd, nd - 1), b.ch.int(-nd, nd - 1)
        if op == "flatten" and i % nd > j % nd:
            i, j = j, i
        params.update(i=i, j=j)
    elif op in ("broadcast_to", "expand"):
        lead = tuple(b.ch.pick([1, 2, 3]) for _ in range(b.ch.int(0, 2)))
        grown = tuple(b.ch.pick([n, 2, 3]) if n == 1 else n for n in shape)
        if op == "expand":
            grown = tuple(-1 if n == m and b.ch.flag(0.4) else m for n, m in zip(shape, grown))
        params["shape"] = lead + grown
    elif op == "unsqueeze":
        params["i"] = b.ch.int(-nd - 1, nd)
    elif op == "squeeze":
        ones = [i for i, n in enumerate(shape) if n == 1]
        if not ones:
            return None
        params["i"] = b.ch.pick(ones) - (nd if b.ch.flag(0.3) else 0)
    elif op == "index":
        params["items"] = _index_items(b, shape)
    elif op == "flip":
        if nd == 0:
            return None
        params["axes"] = tuple(i for i in range(nd) if b.ch.flag(0.5)) or (b.ch.int(-nd, nd - 1),)
    elif op == "pad":
        params["pairs"] = tuple((b.ch.int(0, 2), b.ch.int(0, 2)) for _ in range(nd))
        params["s"] = b.ch.pick([0, 0.0, 1.5, -1, 2, True])
    elif op in ("concat", "stack"):
        if nd == 0 and op == "concat":
            return None
        axis = b.ch.int(0, nd - 1 if op == "concat" else nd)
        params["i"] = axis - (nd + (op == "stack")) if b.ch.flag(0.3) else axis
        for _ in range(b.ch.int(1, 2)):
            other = list(shape)
            if op == "concat":
                other[axis] = b.ch.pick([0, 1, 2, 3, shape[axis]])
            args.append(b.new_input(tuple(other), b.ch.pick([None, None, None, "int32", "float16"])))
        perm = _permutation(b, len(args))
        args = [args[i] for i in perm]
    elif op == "np_split":
        if nd == 0:
            return None
        axis = b.ch.int(0, nd - 1)
        n = shape[axis]
        params["i"] = axis - nd if b.ch.flag(0.3) else axis
        if b.ch.flag(0.5):
            params["sections"] = b.ch.pick([d for d in range(1, 5) if n % d == 0] or [1])
            pieces = params["sections"]
        else:
            params["sections"] = sorted(b.ch.int(0, n) for _ in range(b.ch.int(1, 2)))
            pieces = len(params["sections"]) + 1
        params["k"] = b.ch.int(0, pieces - 1)
    elif op in ("split", "chunk"):
        if nd == 0:
            return None
        axis = b.ch.int(0, nd - 1)
        n = shape[axis]
        params["i"] = axis
        if op == "chunk":
            params["n"] = b.ch.int(1, 4)
            pieces = len(torch.ones(shape).chunk(params["n"], axis))
        elif b.ch.flag(0.5):
            params["sizes"] = b.ch.int(1, max(n, 1))
            pieces = max(-(-n // params["sizes"]), 1)
        else:
            cut = b.ch.int(0, n)
            params["sizes"] = [cut, n - cut]
            pieces = 2
        params["k"] = b.ch.int(0, pieces - 1)
    elif op == "repeat":
        params["shape"] = tuple(b.ch.pick([1, 1, 2, 3]) for _ in range(nd + b.ch.int(0, 1)))
    elif op == "mT" and nd < 2:
        return None
    return b.add(op, args, params)


def _permutation(b: Builder, n: int) -> list[int]:
    rest = list(range(n))
    return [rest.pop(b.ch.int(0, len(rest) - 1)) for _ in range(n)]


def _contract(b: Builder) -> Value | None:
    op = b.ch.weighted({"matmul": 5, "tensordot": 1, "outer": 0.5, "vecdot": 0.5, "linear": 1.5, "conv2d": 1.2,
                        "conv2d_bias": 0.6})
    dt = None if b.ch.flag(0.8) else b.dtype()
    if op == "matmul":
        a = b.operand(lambda v: v.ndim >= 1)
        if a is None or b.ch.flag(0.3):
            a = b.new_input(b.shape(b.ch.int(1, 3)), dt)
        k = a.shape[-1]
        form = b.ch.weighted({"matrix": 4, "vector": 1, "batched": 1.5})
        m = b.ch.pick([1, 2, 3, 5, 8, 16, 0])
        if form == "vector":
            other = (k,)
        elif form == "matrix":
            other = (k, m)
        else:
            other = a.shape[:-2][b.ch.int(0, max(a.ndim - 2, 0)):] + (k, m) if a.ndim > 2 else \
                (b.ch.pick([1, 2, 3]), k, m)
        rhs = b.new_input(other, dt or _name(a.dtype))
        return b.add("matmul", [a, rhs], {})
    if op == "tensordot":
        a = b.operand(lambda v: v.ndim >= 1) or b.new_input(b.shape(2), dt)
        n = b.ch.int(0, min(a.ndim, 2))
        rest = tuple(b.ch.pick([1, 2, 3]) for _ in range(b.ch.int(0, 2)))
        rhs = b.new_input(a.shape[a.ndim - n:] + rest, dt or _name(a.dtype))
        return b.add("tensordot", [a, rhs], {"axes": n})
    if op == "vecdot":
        a = b.operand(lambda v: v.ndim >= 1 and v.dtype.is_floating_point) or b.new_input(b.shape(2), dt)
        if not a.ndim:
            return None
        # the contracted axis has one length in both (NumPy and the array API broadcast only the others)
        i = b.ch.int(-a.ndim, -1)
        other = list(_broadcastable(a.shape, b))
        other = [1] * max(0, -i - len(other)) + other
        other[i] = a.shape[i]
        rhs = b.new_input(tuple(other), _name(a.dtype))
        return b.add("vecdot", [a, rhs], {"i": i})
    if op == "outer":
        x, y = b.new_input((b.ch.int(0, 6),), dt), b.new_input((b.ch.int(1, 6),), dt)
        return b.add("outer", [x, y], {})
    if op == "linear":
        a = b.operand(lambda v: v.ndim >= 1 and v.dtype.is_floating_point) or b.new_input(b.shape(2), dt)
        out = b.ch.pick([1, 3, 4, 8])
        w = b.new_input((out, a.shape[-1]), _name(a.dtype))
        bias = b.new_input((out,), _name(a.dtype))
        return b.add("linear", [a, w, bias], {})
    groups = b.ch.pick([1, 1, 2])
    cin = groups * b.ch.pick([1, 2, 3])
    cout = groups * b.ch.pick([1, 2])
    kh, kw = b.ch.pick([1, 2, 3]), b.ch.pick([1, 2, 3])
    size = (b.ch.pick([1, 2]), cin, b.ch.pick([3, 4, 5, 7]), b.ch.pick([3, 4, 6]))
    a = b.operand(lambda v: v.shape == size)
    if a is None:
        a = b.new_input(size, dt)
    w = b.new_input((cout, cin // groups, kh, kw), _name(a.dtype))
    stride = b.ch.pick([1, 2, (1, 2)])
    padding = b.ch.pick([0, 1, (2, 0)] + (["same"] if stride == 1 else []))
    if op == "conv2d_bias":
        bias = b.new_input((cout,), _name(a.dtype))
        return b.add("conv2d_bias", [a, w, bias], {"stride": stride, "padding": padding})
    return b.add("conv2d", [a, w], {"stride": stride, "padding": padding, "dilation": b.ch.pick([1, 2]),
                                    "groups": groups})


def _nn(b: Builder) -> Value | None:
    """Pooling, layer norm and losses."""
    op = b.ch.pick(NN)
    dt = None if b.ch.flag(0.8) else b.dtype()
    if op in ("max_pool2d", "avg_pool2d"):
        a = b.operand(lambda v: v.ndim in (3, 4) and min(v.shape[-2:]) >= 3)
        if a is None:
            a = b.new_input((b.ch.pick([1, 2]), b.ch.pick([1, 3]), b.ch.pick([3, 4, 5, 7]), b.ch.pick([3, 4, 6])), dt)
        kernel = b.ch.pick([1, 2, 3, (2, 3)])
        k = kernel if isinstance(kernel, tuple) else (kernel, kernel)
        params: dict[str, Any] = {"kernel": kernel, "stride": b.ch.pick([None, 1, 2, (2, 1)]),
                                  "padding": (b.ch.int(0, k[0] // 2), b.ch.int(0, k[1] // 2)), "ceil": b.ch.flag(0.3)}
        if op == "max_pool2d":
            params["dilation"] = b.ch.pick([1, 1, 2])
        else:
            params["include"] = b.ch.flag(0.6)
        return b.add(op, [a], params)
    if op == "layer_norm":
        a = b.operand(lambda v: v.ndim >= 1 and v.dtype.is_floating_point) or b.new_input(b.shape(2), dt)
        shape = a.shape[a.ndim - b.ch.int(1, min(a.ndim, 2)):]
        w, bias = b.new_input(shape, _name(a.dtype)), b.new_input(shape, _name(a.dtype))
        return b.add("layer_norm", [a, w, bias], {"shape": shape})
    reduction = b.ch.pick(["mean", "sum", "none"])
    if op == "mse_loss":
        a = b.operand(lambda v: v.dtype.is_floating_point) or b.new_input(b.shape(), dt)
        return b.add("mse_loss", [a, b.new_input(a.shape, _name(a.dtype))], {"reduction": reduction})
    n, c = b.ch.pick([1, 2, 4, 8]), b.ch.pick([1, 2, 3, 5, 10])
    extra = (b.ch.pick([2, 3]),) if b.ch.flag(0.25) else ()
    logits = b.operand(lambda v: v.shape == (n, c) + extra and v.dtype.is_floating_point) or \
        b.new_input((n, c) + extra, dt if dt in FLOATS else None)
    target = b.new_input((n,) + extra, labels=c)
    return b.add("cross_entropy", [logits, target], {"reduction": reduction})


def _name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def _random(b: Builder) -> Value | None:
    op = b.ch.pick(RANDOM_OPS)
    k = len(b.draws)
    if op == "dropout":
        a = b.operand(lambda v: v.dtype.is_floating_point)
        if a is None:
            return None
        p = b.ch.pick([0.25, 0.5, 0.75])
        b.draws.append(torch.ones(a.shape, dtype=a.dtype))
        out = b.add("dropout", [a], {"p": p, "scale": 1.0 / (1.0 - p), "k": k, "shape": a.shape, "dt": _name(a.dtype)})
    else:
        like = b.operand()
        shape = like.shape if like is not None and b.ch.flag(0.7) else b.shape()
        if op == "randint":
            dt = b.ch.pick(["int64", "int32", "int16", "uint8"])
            lo, hi = b.ch.pick([(0, 10), (-5, 5), (0, 2), (3, 200)])
            if dt == "uint8":
                lo = max(lo, 0)
            b.draws.append(torch.ones(shape, dtype=TORCH[dt]))
            out = b.add("randint", [], {"lo": lo, "hi": hi, "shape": shape, "dt": dt, "k": k})
        else:
            dt = b.ch.pick(FLOATS)
            b.draws.append(torch.ones(shape, dtype=TORCH[dt]))
            out = b.add(op, [], {"shape": shape, "dt": dt, "k": k})
    if out is None:
        b.draws.pop()
    return out


PROPOSALS: dict[str, Callable[[Builder], Value | None]] = {
    "unary": _unary, "binary": _binary, "scalar": _scalar, "where": _where, "reduce": _reduce,
    "reduce_back": _reduce_back, "move": _move, "contract": _contract, "nn": _nn, "random": _random}


def program(ch: Choices, cfg: Config) -> Program:
    """A random program: inputs, 1 to `cfg.max_steps` steps, outputs and a realization plan."""
    float_dtype = ch.weighted({"float32": 5, "float64": 2, **({} if cfg.grad else {"float16": 1.5, "bfloat16": 1.5})})
    b = Builder(ch, cfg, float_dtype)
    for _ in range(ch.int(1, 2)):
        b.new_input(b.shape())
    for _ in range(max(ch.int(1, cfg.max_steps), ch.int(1, cfg.max_steps))):  # longer programs fuse more
        for _attempt in range(6):
            if propose(b) is not None:
                break
    if not b.steps:
        b.add("neg" if b.values[0].dtype != torch.bool else "logical_not", [b.values[0]], {})
    names = [s.out for s in b.steps]
    outputs = [names[-1]] + [n for n in names[:-1] if ch.flag(0.25)]
    early = [n for n in names[:-1] if ch.flag(0.08)]
    dropped = [n for n in names if n not in outputs and ch.flag(0.6)]
    order = _permutation(b, len(outputs))
    shuffled = [outputs[i] for i in order]
    pieces: list[list[str]] = []
    for name in shuffled:
        if pieces and ch.flag(0.6):
            pieces[-1].append(name)
        else:
            pieces.append([name])
    return Program(b.inputs, b.steps, outputs, early, dropped, pieces, seed=ch.int(0, 1000))
