"""Bad calls: shapes that do not fit, axes out of range or repeated, dtypes an op does not take.

Each case is one call on tensors of random shapes (seen through a random view), written for lazytensor
and for torch. Where torch raises, lazytensor must raise too, at the call (nothing compiled or launched:
errors point at the user's line), an exception of the documented kind (ShapeError and AxisError are
ValueErrors, AxisError an IndexError as NumPy's, DTypeError a TypeError), whose message names the op,
and never a crash (AttributeError, KeyError, AssertionError, ZeroDivisionError, a KernelError...).
Where lazytensor refuses by design what torch accepts (NumPy's rules: Python ints out of an integer
dtype's range, negative pad widths, squeezing an axis that is not 1), the case says so and torch is not
asked.
"""
from __future__ import annotations

import builtins
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

import lazytensor as lt

from .check import Failure
from .gen import Choices
from .ops import lit


@dataclass
class BadCall:
    """A call that must fail: `lt` and `torch` are expressions over the inputs `x0`, `x1`, ..."""

    title: str
    inputs: list[tuple[tuple[int, ...], str, str]]  # (shape, dtype, view applied to it)
    lt: str
    torch: str | None  # None: lazytensor refuses by design what torch accepts
    expect: str        # the lazytensor exception class (an attribute of lt, or a builtin)
    names: tuple[str, ...]  # words the message must hold (one of them): the op's name

    def source(self, lib: str) -> list[str]:
        """Statements making the inputs, for `lib` ('lt' or 'torch')."""
        lines = []
        for i, (shape, dtype, view) in enumerate(self.inputs):
            spelled = ("lt.bool_" if dtype == "bool" else f"lt.{dtype}") if lib == "lt" else f"torch.{dtype}"
            lines.append(f"x{i} = {lib}.ones({lit(shape)}, dtype={spelled}){view}")
        return lines


CRASHES = (AttributeError, KeyError, AssertionError, ZeroDivisionError, UnboundLocalError, NameError,
           RecursionError, lt.KernelError, NotImplementedError, OverflowError)


def _shape(ch: Choices, ndim: int | None = None) -> tuple[int, ...]:
    ndim = ch.int(1, 4) if ndim is None else ndim
    return tuple(ch.pick([1, 2, 3, 4, 5]) for _ in range(ndim))


def _view(ch: Choices, shape: tuple[int, ...]) -> tuple[tuple[int, ...], str]:
    """A base shape and a view of it that has `shape` (the bad call meets a lazy view, not a buffer)."""
    form = ch.weighted({"none": 3, "transpose": 1, "slice": 1})
    if form == "transpose" and len(shape) >= 2:
        return tuple(reversed(shape)), f".permute({lit(tuple(reversed(range(len(shape)))))})"
    if form == "slice" and shape:
        return shape[:-1] + (shape[-1] * 2,), "[..., ::2]"
    return shape, ""


def _input(ch: Choices, shape: tuple[int, ...], dtype: str = "float32") -> tuple[tuple[int, ...], str, str]:
    base, view = _view(ch, shape)
    return base, dtype, view


def _clash_wide(shape: tuple[int, ...], ch: Choices) -> tuple[int, ...]:
    """A shape that does not broadcast with `shape`: one of its axes wider than 1 made one longer."""
    wide = [i for i, n in enumerate(shape) if n > 1]
    if not wide:
        return shape[:-1] + (2,) if len(shape) else (2,)
    i = ch.pick(wide)
    out = list(shape)
    out[i] = shape[i] + 1
    return tuple(out)


def _binary(ch: Choices) -> BadCall:
    a = _shape(ch)
    if all(n == 1 for n in a):
        a = a[:-1] + (3,)
    b = _clash_wide(a, ch)
    op, name = ch.pick([("{0} + {1}", "add"), ("{0} * {1}", "multiply"), ("{0} < {1}", "less"),
                        ("{0} - {1}", "subtract"), ("{0} / {1}", "divide"), ("{0} == {1}", "equal")])
    text = op.format("x0", "x1")
    return BadCall(f"{name}: shapes that do not broadcast", [_input(ch, a), _input(ch, b)], text, text,
                   "ShapeError", (name,))


def _where(ch: Choices) -> BadCall:
    a = _shape(ch)
    if all(n == 1 for n in a):
        a = a[:-1] + (3,)
    c = _clash_wide(a, ch)
    return BadCall("where: a condition that does not broadcast", [_input(ch, c, "bool"), _input(ch, a)],
                   "lt.where(x0, x1, 0.0)", "torch.where(x0, x1, 0.0)", "ShapeError", ("where",))


def _matmul(ch: Choices) -> BadCall:
    form = ch.pick(["inner", "scalar", "batch"])
    if form == "inner":
        n, k, m = ch.int(1, 4), ch.int(1, 4), ch.int(1, 4)
        shapes = [(n, k), (k + ch.int(1, 2), m)]
    elif form == "scalar":
        shapes = [(), (ch.int(1, 3),)]
    else:
        shapes = [(2, 3, 4), (3, 4, 2)]
    return BadCall(f"matmul: {form} dimensions", [_input(ch, s) for s in shapes], "x0 @ x1", "x0 @ x1",
                   "ShapeError", ("matmul",))


AXIS_OPS: list[tuple[str, str, str]] = [
    ("sum", "x0.sum(axis={axis})", "x0.sum(dim={axis})"),
    ("mean", "x0.mean(axis={axis})", "x0.mean(dim={axis})"),
    ("max", "x0.max(axis={axis})", "x0.amax(dim={axis})"),
    ("argmax", "x0.argmax(axis={axis})", "x0.argmax(dim={axis})"),
    ("softmax", "x0.softmax({axis})", "x0.softmax({axis})"),
    ("log_softmax", "x0.log_softmax({axis})", "x0.log_softmax({axis})"),
    ("cumsum", "x0.cumsum({axis})", "x0.cumsum({axis})"),
    ("var", "x0.var(axis={axis})", "x0.var(dim={axis})"),
    ("logsumexp", "x0.logsumexp(axis={axis})", "x0.logsumexp(dim={axis})"),
    ("flip", "x0.flip({axis})", "x0.flip({axis})"),
    ("unsqueeze", "x0.unsqueeze({axis})", "x0.unsqueeze({axis})"),
    ("swapaxes", "x0.swapaxes({axis}, 0)", "x0.swapaxes({axis}, 0)"),
    ("flatten", "x0.flatten({axis})", "x0.flatten({axis})"),
    ("concat", "lt.concat([x0, x0], axis={axis})", "torch.cat([x0, x0], dim={axis})"),
    ("stack", "lt.stack([x0, x0], axis={axis})", "torch.stack([x0, x0], dim={axis})"),
    ("split", "x0.split(1, dim={axis})", "x0.split(1, dim={axis})"),
    ("chunk", "x0.chunk(2, dim={axis})", "x0.chunk(2, dim={axis})"),
]


def _axis(ch: Choices) -> BadCall:
    """An axis out of range (or, where a tuple is taken, repeated)."""
    name, lt_call, torch_call = ch.pick(AXIS_OPS)
    shape = _shape(ch)
    nd = len(shape) + (1 if name in ("unsqueeze", "stack") else 0)
    repeated = name in ("sum", "mean", "max", "var", "logsumexp", "flip") and ch.flag(0.4)
    if repeated:
        a = ch.int(0, len(shape) - 1)
        axis: Any = (a, a - len(shape))
        title = f"{name}: a repeated axis"
    else:
        axis = nd + ch.int(0, 2) if ch.flag(0.5) else -nd - 1 - ch.int(0, 2)
        title = f"{name}: an axis out of range"
    return BadCall(title, [_input(ch, shape)], lt_call.format(axis=lit(axis)), torch_call.format(axis=lit(axis)),
                   "AxisError", (name, "axis", "dim"))


def _permute(ch: Choices) -> BadCall:
    shape = _shape(ch, ch.int(2, 4))
    perm = list(range(len(shape)))
    form = ch.pick(["repeat", "short", "range"])
    if form == "repeat":
        perm[1] = perm[0]
    elif form == "short":
        perm = perm[:-1]
    else:
        perm[-1] = len(shape) + ch.int(0, 2)
    return BadCall(f"permute: {form}", [_input(ch, shape)], f"x0.permute({lit(tuple(perm))})",
                   f"x0.permute({lit(tuple(perm))})", "AxisError", ("permute",))


def _reshape(ch: Choices) -> BadCall:
    shape = _shape(ch)
    n = 1
    for s in shape:
        n *= s
    form = ch.pick(["size", "two", "infer"])
    if form == "size":
        target: tuple[int, ...] = (n + ch.int(1, 3),)
    elif form == "two":
        target = (-1, -1)
    else:
        target = (-1, n + 1) if n > 1 else (-1, 0)
    return BadCall(f"reshape: {form}", [_input(ch, shape)], f"x0.reshape({lit(target)})", f"x0.reshape({lit(target)})",
                   "ShapeError", ("reshape",))


def _broadcast_to(ch: Choices) -> BadCall:
    shape = _shape(ch)
    if all(n == 1 for n in shape):
        shape = shape[:-1] + (3,)
    target = _clash_wide(shape, ch)
    if ch.flag(0.3):
        target = target[1:] if len(shape) > 1 else target
    return BadCall("broadcast_to: a shape it does not broadcast to", [_input(ch, shape)],
                   f"x0.broadcast_to({lit(target)})", f"x0.broadcast_to({lit(target)})", "ShapeError",
                   ("broadcast_to",))


def _index(ch: Choices) -> BadCall:
    shape = _shape(ch)
    if ch.flag(0.5):
        axis = ch.int(0, len(shape) - 1)
        i = shape[axis] + ch.int(0, 2) if ch.flag(0.5) else -shape[axis] - 1
        items = (slice(None),) * axis + (i,)
        title = "index: out of range"
    else:
        items = (0,) * (len(shape) + 1)
        title = "index: too many indices"
    text = f"x0[{lit(items)}]"
    return BadCall(title, [_input(ch, shape)], text, text, "IndexError", ("index", "indices"))


def _dtype(ch: Choices) -> BadCall:
    form = ch.pick(["bitwise", "invert", "negative", "bool_sub", "bool_matmul_torch"])
    shape = _shape(ch)
    if form == "bitwise":
        op, name = ch.pick([("&", "bitwise_and"), ("|", "bitwise_or"), ("^", "bitwise_xor")])
        return BadCall(f"{name} of floats", [_input(ch, shape), _input(ch, shape)], f"x0 {op} x1", f"x0 {op} x1",
                       "DTypeError", (name, "bitwise"))
    if form == "invert":
        return BadCall("bitwise_not of a float", [_input(ch, shape)], "~x0", "~x0", "DTypeError", ("bitwise_not",))
    if form == "negative":
        return BadCall("negative of a bool", [_input(ch, shape, "bool")], "-x0", "-x0", "DTypeError", ("negative",))
    if form == "bool_sub":
        return BadCall("subtract of bools", [_input(ch, shape, "bool"), _input(ch, shape, "bool")], "x0 - x1",
                       "x0 - x1", "DTypeError", ("subtract",))
    return BadCall("floor_divide of bools", [_input(ch, shape, "bool"), _input(ch, shape, "bool")], "x0 // x1",
                   None, "DTypeError", ("floor_divide",))


def _concat(ch: Choices) -> BadCall:
    form = ch.pick(["shapes", "zero_dim", "stack", "ndim"])
    if form == "zero_dim":
        return BadCall("concat: 0-d tensors", [_input(ch, ()), _input(ch, ())], "lt.concat([x0, x1])",
                       "torch.cat([x0, x1])", "ShapeError", ("concat",))
    shape = _shape(ch, ch.int(1, 3))
    if form == "ndim":
        other = shape + (2,)
    else:
        other = _clash_wide(shape, ch) if form == "stack" else _clash_outside(ch, shape)
    if form == "stack":
        return BadCall("stack: different shapes", [_input(ch, shape), _input(ch, other)], "lt.stack([x0, x1])",
                       "torch.stack([x0, x1])", "ShapeError", ("stack",))
    return BadCall(f"concat: {form}", [_input(ch, shape), _input(ch, other)], "lt.concat([x0, x1], axis=0)",
                   "torch.cat([x0, x1], dim=0)", "ShapeError", ("concat",))


def _clash_outside(ch: Choices, shape: tuple[int, ...]) -> tuple[int, ...]:
    """A shape that differs from `shape` outside axis 0 (or has another number of axes)."""
    if len(shape) == 1:
        return shape + (2,)
    axis = ch.int(1, len(shape) - 1)
    out = list(shape)
    out[axis] += 1
    return tuple(out)


def _split(ch: Choices) -> BadCall:
    shape = _shape(ch)
    n = shape[0]
    sizes = [n, 1] if ch.flag(0.5) else [max(n - 2, 0)]
    return BadCall("split: sizes that do not add up", [_input(ch, shape)], f"x0.split({lit(sizes)}, dim=0)",
                   f"x0.split({lit(sizes)}, dim=0)", "ShapeError", ("split",))


def _empty_reduce(ch: Choices) -> BadCall:
    shape = list(_shape(ch))
    axis = ch.int(0, len(shape) - 1)
    shape[axis] = 0
    name, lt_call, torch_call = ch.pick([("max", "x0.max(axis={a})", "x0.amax(dim={a})"),
                                         ("min", "x0.min(axis={a})", "x0.amin(dim={a})"),
                                         ("argmax", "x0.argmax(axis={a})", "x0.argmax(dim={a})"),
                                         ("max", "x0.max()", "x0.max()")])
    return BadCall(f"{name}: over an empty axis", [(tuple(shape), "float32", "")], lt_call.format(a=axis),
                   torch_call.format(a=axis), "ShapeError", (name,))


def _conv(ch: Choices) -> BadCall:
    form = ch.pick(["channels", "weight", "groups"])
    x = (1, ch.pick([2, 3, 4]), 5, 5)
    if form == "channels":
        w = (2, x[1] + 1, 3, 3)
        groups = 1
    elif form == "weight":
        w = (2, x[1], 3)
        groups = 1
    else:
        w = (3, x[1], 3, 3)
        groups = 2
    return BadCall(f"conv2d: {form}", [_input(ch, x), _input(ch, w)],
                   f"lt.nn.functional.conv2d(x0, x1, groups={groups})",
                   f"torch.nn.functional.conv2d(x0, x1, groups={groups})", "ShapeError", ("conv2d",))


def _tensordot(ch: Choices) -> BadCall:
    a = (ch.int(1, 4), ch.int(2, 5))  # torch broadcasts a contracted axis of size 1; NumPy does not
    b = (a[1] + 1, 2)
    return BadCall("tensordot: axes that differ", [_input(ch, a), _input(ch, b)], "x0.tensordot(x1, axes=1)",
                   "torch.tensordot(x0, x1, dims=1)", "ShapeError", ("tensordot",))


def _scalar(ch: Choices) -> BadCall:
    form = ch.pick(["power", "range", "pad", "squeeze", "arange", "zeros"])
    shape = _shape(ch)
    if form == "power":
        return BadCall("power: an integer tensor to a negative integer", [_input(ch, shape, "int32")], "x0 ** -1",
                       "x0 ** -1", "ValueError", ("power",))
    if form == "range":
        value = ch.pick([300, -1, 1 << 40])
        return BadCall("add: a Python int out of the dtype's range (NumPy 2)", [_input(ch, shape, "uint8")],
                       f"x0 + {lit(value)}", None, "DTypeError", ("uint8", "out of bounds"))
    if form == "pad":
        return BadCall("pad: a negative width (torch crops)", [_input(ch, shape)],
                       f"x0.pad({lit(((-1, 0),) + ((0, 0),) * (len(shape) - 1))})", None, "ValueError", ("pad",))
    if form == "squeeze":
        shape = shape[:-1] + (2,)
        return BadCall("squeeze: an axis that is not 1 (NumPy; torch leaves it)", [_input(ch, shape)], "x0.squeeze(-1)",
                       None, "ShapeError", ("squeeze",))
    if form == "arange":
        return BadCall("arange: step 0", [], "lt.arange(0, 5, 0)", "torch.arange(0, 5, 0)", "ValueError", ("arange",))
    return BadCall("zeros: a negative size", [], "lt.zeros(2, -1)", "torch.zeros(2, -1)", "ValueError", ("zeros",))


def _reading(ch: Choices) -> BadCall:
    form = ch.pick(["item", "bool", "backward"])
    shape = _shape(ch)
    shape = shape[:-1] + (shape[-1] + 1,)
    if form == "item":
        return BadCall("item: more than one element", [_input(ch, shape)], "x0.item()", "x0.item()", "ValueError",
                       ("item",))
    if form == "bool":
        return BadCall("bool: more than one element", [_input(ch, shape)], "bool(x0)", "bool(x0)", "ValueError",
                       ("ambiguous",))
    return BadCall("backward: a non-scalar without a gradient", [_input(ch, shape)],
                   "(x0.requires_grad_() * 2).backward()", "(x0.requires_grad_() * 2).backward()", "RuntimeError",
                   ("backward", "scalar"))


CASES: dict[str, Callable[[Choices], BadCall]] = {
    "binary": _binary, "where": _where, "matmul": _matmul, "axis": _axis, "permute": _permute, "reshape": _reshape,
    "broadcast_to": _broadcast_to, "index": _index, "dtype": _dtype, "concat": _concat, "split": _split,
    "empty_reduce": _empty_reduce, "conv2d": _conv, "tensordot": _tensordot, "scalar": _scalar, "reading": _reading,
}


def bad_call(ch: Choices) -> BadCall:
    return CASES[ch.pick(list(CASES))](ch)


def _run(lines: list[str], expr: str, ns: dict[str, Any]) -> None:
    exec("\n".join(lines + [f"_ = {expr}"]), ns)  # noqa: S102


def run_bad_call(case: BadCall) -> str:
    """Check one bad call; returns what torch raised (or 'refused by design'), raises Failure otherwise."""
    if case.torch is not None:
        try:
            _run(case.source("torch"), case.torch, {"torch": torch})
        except Exception as e:  # noqa: BLE001
            torch_error = type(e).__name__
        else:
            return "torch accepts it"  # not a bad call after all (the generator's shapes were compatible)
    else:
        torch_error = "refused by design"
    ns = {"lt": lt}
    exec("\n".join(case.source("lt")), ns)  # noqa: S102
    compiled, launched = lt.stats().kernels_compiled, lt.stats().kernels_launched
    expected = getattr(lt, case.expect, None) or getattr(builtins, case.expect)
    try:
        exec(f"_ = {case.lt}", ns)  # noqa: S102
    except Exception as e:
        if isinstance(e, CRASHES) or not isinstance(e, expected):
            raise Failure("error-kind", f"{case.title}: lazytensor raised {type(e).__name__}: {e} (expected "
                          f"{case.expect}; torch raised {torch_error})", type(e).__name__, [case]) from e
        message = str(e).lower()
        if not any(word.lower() in message for word in case.names):
            raise Failure("error-message", f"{case.title}: the message does not name the op ({case.names}): {e}",
                          case.title, [case]) from e
        after = lt.stats()
        if after.kernels_compiled != compiled or after.kernels_launched != launched:
            raise Failure("error-late", f"{case.title}: a kernel ran before the error ({e})", case.title, [case])
        return torch_error
    raise Failure("error-missing", f"{case.title}: lazytensor accepted it (torch raised {torch_error})", case.title,
                  [case])
