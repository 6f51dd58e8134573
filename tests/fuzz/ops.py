"""The fuzzer's op table: each op as a line of lazytensor code, a line of torch code, and an error rule.

A template names its tensor operands `{a}`, `{b}`, `{c}` (a list of them: `{xs}`) and its parameters by
name; parameters are rendered as Python literals (`lit`). `{dt_lt}` and `{dt_torch}` are the dtype
parameter `dt` spelled for each library. Scalars that take part in arithmetic are the parameters `s` and
`t`: the reference (reference.py) perturbs them by a rounding of the dtype they compute in.

`rule` says how reference.py bounds lazytensor's error on the op (see its docstring); `ulps` is the rounding
an op may add, in units of the result dtype's unit roundoff: 0 for exact ops (movement, comparisons,
max, floor), 2 for correctly rounded arithmetic (two, since the 16-bit floats may round through float32),
8 for the math functions (lazytensor's own polynomials, documented within about 1 ulp, and Triton's).
"""
from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class OpSpec:
    """One op the fuzzer can emit."""

    name: str
    lt: str
    torch: str
    rule: str
    ulps: float = 0.0
    grad: bool = True  # usable in gradient programs (float in, float out, differentiable or zero gradient)


def lit(value: object) -> str:
    """A parameter as Python source that both libraries read the same way."""
    if isinstance(value, float):
        if math.isnan(value):
            return "float('nan')"
        if math.isinf(value):
            return "float('inf')" if value > 0 else "float('-inf')"
        return f"({value!r})" if math.copysign(1.0, value) < 0 else repr(value)
    if isinstance(value, int) and not isinstance(value, bool) and value < 0:
        return f"({value!r})"  # `-2 ** x` is `-(2 ** x)`
    if isinstance(value, slice):
        return f"slice({lit(value.start)}, {lit(value.stop)}, {lit(value.step)})"
    if value is Ellipsis:
        return "..."
    if isinstance(value, tuple):
        inner = ", ".join(lit(v) for v in value)
        return f"({inner},)" if len(value) == 1 else f"({inner})"
    if isinstance(value, list):
        return "[" + ", ".join(lit(v) for v in value) + "]"
    return repr(value)


LT_DTYPE = {"bool": "lt.bool_"}  # lazytensor's spelling where it is not `lt.<name>`

MATH, BASIC = 8.0, 2.0

_OPS = [
    # ---- unary elementwise ----
    OpSpec("neg", "-{a}", "-{a}", "corners"),
    OpSpec("abs", "{a}.abs()", "{a}.abs()", "even"),
    OpSpec("exp", "{a}.exp()", "{a}.exp()", "corners", MATH),
    OpSpec("exp2", "{a}.exp2()", "{a}.exp2()", "corners", MATH),
    OpSpec("expm1", "{a}.expm1()", "{a}.expm1()", "corners", MATH),
    OpSpec("log", "{a}.log()", "{a}.log()", "corners", MATH),
    OpSpec("log2", "{a}.log2()", "{a}.log2()", "corners", MATH),
    OpSpec("log10", "{a}.log10()", "{a}.log10()", "corners", MATH),
    OpSpec("log1p", "{a}.log1p()", "{a}.log1p()", "corners", MATH),
    OpSpec("sqrt", "{a}.sqrt()", "{a}.sqrt()", "corners", BASIC),
    OpSpec("rsqrt", "{a}.rsqrt()", "{a}.rsqrt()", "corners", MATH),
    OpSpec("sin", "{a}.sin()", "{a}.sin()", "lipschitz", MATH),
    OpSpec("cos", "{a}.cos()", "{a}.cos()", "lipschitz", MATH),
    OpSpec("tan", "{a}.tan()", "{a}.tan()", "tan", MATH),
    OpSpec("tanh", "{a}.tanh()", "{a}.tanh()", "corners", MATH),
    OpSpec("erf", "{a}.erf()", "{a}.erf()", "corners", MATH),
    OpSpec("sigmoid", "{a}.sigmoid()", "sem.sigmoid({a})", "corners", MATH),
    OpSpec("reciprocal", "{a}.reciprocal()", "{a}.reciprocal()", "corners_nonzero", BASIC),
    OpSpec("relu", "{a}.relu()", "{a}.relu()", "corners"),
    OpSpec("square", "{a}.square()", "{a}.square()", "even", BASIC),
    OpSpec("sign", "{a}.sign()", "sem.sign({a})", "corners"),
    OpSpec("floor", "{a}.floor()", "{a}.floor()", "corners"),
    OpSpec("ceil", "{a}.ceil()", "{a}.ceil()", "corners"),
    OpSpec("round", "{a}.round()", "{a}.round()", "corners"),
    OpSpec("round_decimals", "{a}.round(decimals={decimals})", "{a}.round(decimals={decimals})", "corners", BASIC),
    OpSpec("trunc", "{a}.trunc()", "{a}.trunc()", "corners"),
    OpSpec("isnan", "{a}.isnan()", "{a}.isnan()", "nanflag"),
    OpSpec("isinf", "{a}.isinf()", "{a}.isinf()", "nanflag"),
    OpSpec("isfinite", "{a}.isfinite()", "{a}.isfinite()", "nanflag"),
    OpSpec("logical_not", "{a}.logical_not()", "{a}.logical_not()", "truth"),
    OpSpec("bitwise_not", "~{a}", "~{a}", "exact", grad=False),
    OpSpec("gelu", "lt.nn.functional.gelu({a})", "torch.nn.functional.gelu({a})", "lipschitz", MATH),
    OpSpec("gelu_tanh", "lt.nn.functional.gelu({a}, approximate='tanh')",
           "torch.nn.functional.gelu({a}, approximate='tanh')", "lipschitz", MATH),
    OpSpec("silu", "lt.nn.functional.silu({a})", "torch.nn.functional.silu({a})", "lipschitz", MATH),
    OpSpec("softplus", "lt.nn.functional.softplus({a})", "torch.nn.functional.softplus({a})", "corners", MATH),
    OpSpec("leaky_relu", "lt.nn.functional.leaky_relu({a}, {s})", "torch.nn.functional.leaky_relu({a}, {s})",
           "corners", BASIC),
    OpSpec("elu", "lt.nn.functional.elu({a})", "sem.elu({a})", "corners", MATH),
    OpSpec("cast", "{a}.cast({dt_lt})", "{a}.to({dt_torch})", "cast"),
    OpSpec("contiguous", "{a}.contiguous()", "{a}.contiguous()", "move"),
    OpSpec("clone", "{a}.clone()", "{a}.clone()", "move"),
    # ---- binary elementwise, tensor with tensor ----
    OpSpec("add", "{a} + {b}", "{a} + {b}", "corners", BASIC),
    OpSpec("sub", "{a} - {b}", "{a} - {b}", "corners", BASIC),
    OpSpec("mul", "{a} * {b}", "{a} * {b}", "corners", BASIC),
    OpSpec("div", "{a} / {b}", "{a} / {b}", "corners_nonzero", BASIC),
    OpSpec("floordiv", "{a} // {b}", "sem.floor_divide({a}, {b})", "corners_nonzero", BASIC, grad=False),
    OpSpec("mod", "{a} % {b}", "sem.remainder({a}, {b})", "remainder", BASIC, grad=False),
    OpSpec("pow", "{a} ** {b}", "{a} ** {b}", "pow", MATH),
    OpSpec("maximum", "{a}.maximum({b})", "torch.maximum({a}, {b})", "corners"),
    OpSpec("minimum", "{a}.minimum({b})", "torch.minimum({a}, {b})", "corners"),
    OpSpec("lt", "{a} < {b}", "{a} < {b}", "corners"),
    OpSpec("le", "{a} <= {b}", "{a} <= {b}", "corners"),
    OpSpec("gt", "{a} > {b}", "{a} > {b}", "corners"),
    OpSpec("ge", "{a} >= {b}", "{a} >= {b}", "corners"),
    OpSpec("eq", "{a} == {b}", "{a} == {b}", "equality"),
    OpSpec("ne", "{a} != {b}", "{a} != {b}", "equality"),
    OpSpec("logical_and", "{a}.logical_and({b})", "{a}.logical_and({b})", "truth"),
    OpSpec("logical_or", "{a}.logical_or({b})", "{a}.logical_or({b})", "truth"),
    OpSpec("logical_xor", "{a}.logical_xor({b})", "{a}.logical_xor({b})", "truth"),
    OpSpec("bitwise_and", "{a} & {b}", "{a} & {b}", "exact", grad=False),
    OpSpec("bitwise_or", "{a} | {b}", "{a} | {b}", "exact", grad=False),
    OpSpec("bitwise_xor", "{a} ^ {b}", "{a} ^ {b}", "exact", grad=False),
    # ---- binary elementwise, tensor with a Python scalar (weak) ----
    OpSpec("add_s", "{a} + {s}", "{a} + {s}", "corners", BASIC),
    OpSpec("rsub_s", "{s} - {a}", "{s} - {a}", "corners", BASIC),
    OpSpec("mul_s", "{a} * {s}", "{a} * {s}", "corners", BASIC),
    OpSpec("div_s", "{a} / {s}", "{a} / {s}", "corners_nonzero", BASIC),
    OpSpec("rdiv_s", "{s} / {a}", "{s} / {a}", "corners_nonzero", BASIC),
    OpSpec("floordiv_s", "{a} // {s}", "sem.floor_divide({a}, {s})", "corners_nonzero", BASIC, grad=False),
    OpSpec("rfloordiv_s", "{s} // {a}", "sem.floor_divide({s}, {a})", "corners_nonzero", BASIC, grad=False),
    OpSpec("mod_s", "{a} % {s}", "sem.remainder({a}, {s})", "remainder", BASIC, grad=False),
    OpSpec("rmod_s", "{s} % {a}", "sem.remainder({s}, {a})", "remainder", BASIC, grad=False),
    OpSpec("pow_s", "{a} ** {s}", "{a} ** {s}", "pow", MATH),
    OpSpec("rpow_s", "{s} ** {a}", "{s} ** {a}", "pow", MATH),
    OpSpec("lt_s", "{a} < {s}", "{a} < {s}", "corners"),
    OpSpec("ge_s", "{a} >= {s}", "{a} >= {s}", "corners"),
    OpSpec("eq_s", "{a} == {s}", "{a} == {s}", "equality"),
    OpSpec("clip_s", "{a}.clip({s}, {t})", "{a}.clamp({s}, {t})", "corners"),
    OpSpec("clip_min_s", "{a}.clip(min={s})", "{a}.clamp(min={s})", "corners"),
    # ---- ternary ----
    OpSpec("where", "lt.where({a}, {b}, {c})", "torch.where({a}, {b}, {c})", "where"),
    OpSpec("where_s", "lt.where({a}, {b}, {s})", "torch.where({a}, {b}, {s})", "where"),
    OpSpec("clip", "{a}.clip({b}, {c})", "torch.clamp({a}, {b}, {c})", "corners"),
    # ---- reductions ----
    OpSpec("sum", "{a}.sum(axis={axis}, keepdims={keep})", "{a}.sum(dim={axis}, keepdim={keep})", "sum"),
    OpSpec("prod", "{a}.prod(axis={axis}, keepdims={keep})", "{a}.prod(dim={axis}, keepdim={keep})", "prod"),
    OpSpec("prod_all", "{a}.prod()", "sem.prod_all({a})", "prod"),
    OpSpec("mean", "{a}.mean(axis={axis}, keepdims={keep})", "sem.as_float({a}).mean(dim={axis}, keepdim={keep})",
           "mean"),
    OpSpec("max", "{a}.max(axis={axis}, keepdims={keep})", "sem.amax({a}, dim={axis}, keepdim={keep})", "extremum"),
    OpSpec("min", "{a}.min(axis={axis}, keepdims={keep})", "sem.amin({a}, dim={axis}, keepdim={keep})", "extremum"),
    OpSpec("max_all", "{a}.max()", "sem.amax({a})", "extremum"),
    OpSpec("any", "{a}.any(axis={axis}, keepdims={keep})", "{a}.bool().any(dim={axis}, keepdim={keep})", "boolreduce",
           grad=False),
    OpSpec("all", "{a}.all(axis={axis}, keepdims={keep})", "{a}.bool().all(dim={axis}, keepdim={keep})", "boolreduce",
           grad=False),
    OpSpec("argmax", "{a}.argmax(axis={axis}, keepdims={keep})", "{a}.argmax(dim={axis}, keepdim={keep})", "argext",
           grad=False),
    OpSpec("argmin", "{a}.argmin(axis={axis}, keepdims={keep})", "{a}.argmin(dim={axis}, keepdim={keep})", "argext",
           grad=False),
    OpSpec("var", "{a}.var(axis={axis}, keepdims={keep}, correction={corr})",
           "sem.as_float({a}).var(dim={axis}, keepdim={keep}, correction={corr})", "var"),
    OpSpec("std", "{a}.std(axis={axis}, keepdims={keep}, correction={corr})",
           "sem.as_float({a}).std(dim={axis}, keepdim={keep}, correction={corr})", "std"),
    OpSpec("logsumexp", "{a}.logsumexp(axis={axis}, keepdims={keep})",
           "sem.as_float({a}).logsumexp(dim={axis}, keepdim={keep})", "logsumexp"),
    OpSpec("softmax", "{a}.softmax({axis})", "sem.as_float({a}).softmax({axis})", "softmax"),
    OpSpec("log_softmax", "{a}.log_softmax({axis})", "sem.as_float({a}).log_softmax({axis})", "log_softmax"),
    OpSpec("cumsum", "{a}.cumsum({axis})", "{a}.cumsum({axis})", "cumsum"),
    # ---- movement ----
    OpSpec("reshape", "{a}.reshape({shape})", "{a}.reshape({shape})", "move"),
    OpSpec("permute", "{a}.permute({perm})", "{a}.permute({perm})", "move"),
    OpSpec("swapaxes", "{a}.swapaxes({i}, {j})", "{a}.swapaxes({i}, {j})", "move"),
    OpSpec("mT", "{a}.mT", "{a}.mT", "move"),
    OpSpec("broadcast_to", "{a}.broadcast_to({shape})", "{a}.broadcast_to({shape})", "move"),
    OpSpec("expand", "{a}.expand({shape})", "{a}.expand({shape})", "move"),
    OpSpec("unsqueeze", "{a}.unsqueeze({i})", "{a}.unsqueeze({i})", "move"),
    OpSpec("squeeze", "{a}.squeeze({i})", "{a}.squeeze({i})", "move"),
    OpSpec("flatten", "{a}.flatten({i}, {j})", "{a}.flatten({i}, {j})", "move"),
    OpSpec("index", "{a}[{items}]", "sem.index({a}, {items})", "move"),
    OpSpec("flip", "{a}.flip({axes})", "{a}.flip({axes})", "move"),
    OpSpec("pad", "{a}.pad({pairs}, value={s})", "sem.pad({a}, {pairs}, {s})", "pad"),
    OpSpec("concat", "lt.concat([{xs}], axis={i})", "torch.cat([{xs}], dim={i})", "move"),
    OpSpec("stack", "lt.stack([{xs}], axis={i})", "torch.stack([{xs}], dim={i})", "move"),
    OpSpec("split", "{a}.split({sizes}, dim={i})[{k}]", "{a}.split({sizes}, dim={i})[{k}]", "move"),
    OpSpec("chunk", "{a}.chunk({n}, dim={i})[{k}]", "{a}.chunk({n}, dim={i})[{k}]", "move"),
    OpSpec("repeat", "{a}.repeat({shape})", "{a}.repeat({shape})", "move"),
    OpSpec("np_split", "lt.split({a}, {sections}, axis={i})[{k}]", "torch.tensor_split({a}, {sections}, dim={i})[{k}]",
           "move"),
    # ---- pooling, normalization, losses (composites of the ops above) ----
    OpSpec("max_pool2d", "lt.nn.functional.max_pool2d({a}, {kernel}, stride={stride}, padding={padding}, "
           "dilation={dilation}, ceil_mode={ceil})", "torch.nn.functional.max_pool2d({a}, {kernel}, stride={stride}, "
           "padding={padding}, dilation={dilation}, ceil_mode={ceil})", "pool_max"),
    OpSpec("avg_pool2d", "lt.nn.functional.avg_pool2d({a}, {kernel}, stride={stride}, padding={padding}, "
           "ceil_mode={ceil}, count_include_pad={include})", "torch.nn.functional.avg_pool2d({a}, {kernel}, "
           "stride={stride}, padding={padding}, ceil_mode={ceil}, count_include_pad={include})", "pool_avg"),
    OpSpec("layer_norm", "lt.nn.functional.layer_norm({a}, {shape}, {b}, {c})",
           "sem.layer_norm({a}, {shape}, {b}, {c})", "layer_norm"),
    OpSpec("mse_loss", "lt.nn.functional.mse_loss({a}, {b}, reduction={reduction})",
           "torch.nn.functional.mse_loss({a}, {b}, reduction={reduction})", "mse_loss"),
    OpSpec("cross_entropy", "lt.nn.functional.cross_entropy({a}, {b}, reduction={reduction})",
           "torch.nn.functional.cross_entropy({a}, {b}, reduction={reduction})", "cross_entropy"),
    # ---- contractions ----
    OpSpec("matmul", "{a} @ {b}", "{a} @ {b}", "contract"),
    OpSpec("tensordot", "{a}.tensordot({b}, axes={axes})", "torch.tensordot({a}, {b}, dims={axes})", "contract"),
    OpSpec("outer", "{a}.outer({b})", "torch.outer({a}, {b})", "contract"),
    OpSpec("vecdot", "{a}.vecdot({b}, axis={i})", "torch.linalg.vecdot({a}, {b}, dim={i})", "contract"),
    OpSpec("linear", "lt.nn.functional.linear({a}, {b}, {c})", "torch.nn.functional.linear({a}, {b}, {c})",
           "contract"),
    OpSpec("conv2d", "lt.nn.functional.conv2d({a}, {b}, stride={stride}, padding={padding}, dilation={dilation}, "
           "groups={groups})", "torch.nn.functional.conv2d({a}, {b}, stride={stride}, padding={padding}, "
           "dilation={dilation}, groups={groups})", "contract"),
    OpSpec("conv2d_bias", "lt.nn.functional.conv2d({a}, {b}, {c}, stride={stride}, padding={padding})",
           "torch.nn.functional.conv2d({a}, {b}, {c}, stride={stride}, padding={padding})", "contract"),
    # ---- random numbers: the torch side reads the draws lazytensor makes on its own (see check.py) ----
    OpSpec("rand", "lt.rand({shape}, dtype={dt_lt})", "R[{k}]", "random", grad=False),
    OpSpec("randn", "lt.randn({shape}, dtype={dt_lt})", "R[{k}]", "random", MATH, grad=False),
    OpSpec("randint", "lt.randint({lo}, {hi}, {shape}, dtype={dt_lt})", "R[{k}]", "random", grad=False),
    OpSpec("dropout", "lt.nn.functional.dropout({a}, {p})", "torch.where(R[{k}] >= {p}, {a} * {scale}, 0.0)",
           "dropout"),
]

OPS: dict[str, OpSpec] = {op.name: op for op in _OPS}
RANDOM_OPS = ("rand", "randn", "randint", "dropout")
