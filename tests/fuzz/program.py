"""A fuzzed program: inputs, a straight line of op steps, and how lazytensor realizes it.

The same program is rendered as lazytensor code and as torch code (each step from its op's templates in
ops.py), and run in-process from that text, so the code a repro script holds is exactly the code that ran.
The lazytensor rendering also says what the scheduler sees: which intermediates stay alive in variables
(and so are written when computed) and which are dropped (`del`), and which values are realized early, in
pieces, before the outputs are realized together.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .ops import LT_DTYPE, OPS, lit

LAYOUTS = ("contiguous", "transposed", "strided", "flipped", "offset", "broadcast")


@dataclass
class Input:
    """A realized input: `data` is its logical value (exact in `dtype`; bfloat16 as float32), seen through
    `layout`, a view of a realized base buffer (see `base`)."""

    name: str
    dtype: str
    layout: str
    data: np.ndarray
    broadcast_axis: int = -1  # the axis a "broadcast" layout expands
    labels: int = 0  # > 0: class indices below it (a loss's targets), which new data (lt.jit's calls) keeps

    def base(self) -> np.ndarray:
        """The array the buffer holds; the layout's view of it is `data`."""
        d = self.data
        if self.layout == "transposed":
            return np.ascontiguousarray(d.T)
        if self.layout == "strided":
            return np.repeat(d, 2, axis=-1)
        if self.layout == "flipped":
            return np.flip(d, -1).copy()
        if self.layout == "offset":
            return np.concatenate([np.zeros_like(d[:1]), d], axis=0)
        if self.layout == "broadcast":
            return np.take(d, [0], axis=self.broadcast_axis).copy()
        return d.copy()  # not ascontiguousarray, which makes a 0-d array 1-d

    def view(self) -> str:
        """The view of the base, as source that both libraries read the same way."""
        nd = self.data.ndim
        if self.layout == "transposed":
            return f".permute({lit(tuple(reversed(range(nd))))})"
        if self.layout == "strided":
            return "[..., ::2]"
        if self.layout == "flipped":
            return ".flip(-1)"
        if self.layout == "offset":
            return "[1:]"
        if self.layout == "broadcast":
            return f".expand({lit(tuple(self.data.shape))})"
        return ""


@dataclass
class Step:
    """`out = op(args, **params)`; `args` name earlier values."""

    out: str
    op: str
    args: tuple[str, ...]
    params: dict[str, Any] = field(default_factory=dict)

    def source(self, lib: str, jitter: bool = False) -> str:
        """This step's expression in lazytensor ('lt') or torch ('torch') code; with `jitter`, each use of an
        argument goes through `jitter` on its own (see `Program.torch_body`)."""
        template = getattr(OPS[self.op], lib)
        args = [f"jitter({a})" for a in self.args] if jitter else self.args
        return render(template, args, self.params)


def render(template: str, args: tuple[str, ...] | list[str], params: dict[str, Any]) -> str:
    fields = {k: lit(v) for k, v in params.items()}
    if "dt" in params:
        fields["dt_lt"] = LT_DTYPE.get(params["dt"], f"lt.{params['dt']}")
        fields["dt_torch"] = f"torch.{params['dt']}"
    fields.update(zip("abc", args))
    fields["xs"] = ", ".join(args)
    return template.format(**fields)


@dataclass
class Program:
    """Inputs, steps, the outputs that are compared, and the realization plan of the lazytensor side.

    `early` are values realized (`lt.realize`) right after they are computed; `dropped` are intermediates
    deleted after their last use (the others stay alive in variables, and are compared too); `pieces` is
    how the outputs are realized at the end: each inner list in one `lt.realize` call, in order."""

    inputs: list[Input]
    steps: list[Step]
    outputs: list[str]
    early: list[str] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)
    pieces: list[list[str]] = field(default_factory=list)
    seed: int = 0  # lt.manual_seed before the program, when it draws random numbers

    @property
    def random_steps(self) -> list[Step]:
        return [s for s in self.steps if OPS[s.op].rule in ("random", "dropout")]

    def kept(self) -> list[str]:
        """Every value the lazytensor side returns: the outputs, and the intermediates it keeps alive."""
        names = [s.out for s in self.steps if s.out not in self.dropped]
        return [n for n in names if n in self.outputs] + [n for n in names if n not in self.outputs]

    def input_source(self, inp: Input, lib: str, leaf: bool = False) -> str:
        """The expression that makes an input from its base array `D[name]`."""
        base = f"D[{inp.name!r}]"
        if lib == "lt":
            dt = ", dtype=lt.bfloat16" if inp.dtype == "bfloat16" else ""
            made = f"lt.asarray({base}{dt})" + (".requires_grad_()" if leaf else "")
        else:
            made = f"torch.tensor({base})" + (".to(torch.bfloat16)" if inp.dtype == "bfloat16" else "")
            made += ".requires_grad_()" if leaf else ""
        return made

    def lt_body(self, inputs: str = "data", indent: str = "    ") -> list[str]:
        """The lazytensor statements (inputs, steps, early realizes, dels) before the outputs' realize.

        `inputs` says where the inputs come from: "data" (made from the base arrays `D`, after seeding the
        generator), "leaves" (the same, as leaves that require grad where they are float) or "args" (the
        realized base tensors `B` a jitted function is given)."""
        lines = []
        if self.random_steps and inputs != "args":
            lines.append(f"lt.manual_seed({self.seed})")
        for inp in self.inputs:
            if inputs == "args":
                lines.append(f"{inp.name} = B[{inp.name!r}]{inp.view()}")
            elif inputs == "leaves" and inp.dtype.startswith("float"):
                lines.append(f"{inp.name}_leaf = {self.input_source(inp, 'lt', leaf=True)}")
                lines.append(f"{inp.name} = {inp.name}_leaf{inp.view()}")
            else:
                lines.append(f"{inp.name} = {self.input_source(inp, 'lt')}{inp.view()}")
        last_use = self._last_uses()
        for i, step in enumerate(self.steps):
            lines.append(f"{step.out} = {step.source('lt')}")
            if step.out in self.early:
                lines.append(f"lt.realize({step.out})")
            dead = [n for n, last in last_use.items() if last == i and n in self.dropped]
            if dead:
                lines.append("del " + ", ".join(dead))
        return [indent + line for line in lines]

    def _last_uses(self) -> dict[str, int]:
        """The index of the step that reads each value last (its own step when nothing reads it)."""
        last: dict[str, int] = {}
        for i, step in enumerate(self.steps):
            last[step.out] = i
            for a in step.args:
                last[a] = i
        return last

    def torch_body(self, leaves: bool = False, indent: str = "    ", jitter: bool = False) -> list[str]:
        """The torch statements; with `leaves`, float inputs are leaves that require grad, in `dtype` (the
        program's own dtype, or float64 for the gradient check's reference); with `jitter`, each step's
        value, and each use of one, goes through `jitter` (the gradient check's rounding noise): a value
        read twice is rounded apart, as a fused kernel recomputes it per reader, so terms that cancel exactly
        (the two of `y / y`'s gradient) cancel only to the rounding of their size, as they do in float32."""
        lines = []
        for inp in self.inputs:
            if leaves and inp.dtype.startswith("float"):
                lines.append(f"{inp.name}_leaf = torch.tensor(D[{inp.name!r}], dtype=dtype).requires_grad_()")
                lines.append(f"{inp.name} = {inp.name}_leaf{inp.view()}")
                if jitter:  # after the view: the copies a broadcast makes are rounded apart too
                    lines.append(f"{inp.name} = jitter({inp.name})")
            else:
                lines.append(f"{inp.name} = {self.input_source(inp, 'torch')}{inp.view()}")
        for step in self.steps:
            lines.append(f"{step.out} = {step.source('torch', jitter)}")
            if jitter:
                lines.append(f"{step.out} = jitter({step.out})")
        return [indent + line for line in lines]

    def lt_source(self) -> str:
        """`lt_program(D)`: the lazytensor side, returning the values it keeps by name."""
        kept = self.kept()
        lines = ["def lt_program(D):", *self.lt_body()]
        lines += [f"    lt.realize({', '.join(piece)})" for piece in self.pieces]
        lines.append("    return {" + ", ".join(f"{n!r}: {n}" for n in kept) + "}")
        return "\n".join(lines) + "\n"

    def torch_source(self) -> str:
        """`torch_program(D, R)`: the torch side (`R`: the random draws, see check.py)."""
        kept = self.kept()
        lines = ["def torch_program(D, R):", *self.torch_body()]
        lines.append("    return {" + ", ".join(f"{n!r}: {n}" for n in kept) + "}")
        return "\n".join(lines) + "\n"

    def lt_jit_source(self) -> str:
        """`lt_step(B)`: the lazytensor side as a function of realized inputs, for `lt.jit`."""
        kept = self.kept()
        lines = ["def lt_step(B):", *self.lt_body("args")]
        lines += [f"    lt.realize({', '.join(piece)})" for piece in self.pieces]
        lines.append("    return {" + ", ".join(f"{n!r}: {n}" for n in kept) + "}")
        return "\n".join(lines) + "\n"

    def float_leaves(self) -> list[str]:
        return [inp.name for inp in self.inputs if inp.dtype.startswith("float")]

    def lt_grad_source(self, weighted: list[str]) -> str:
        """`lt_grads(D, W)`: the gradients of sum(output * W[output]) over `weighted` for the float inputs."""
        lines = ["def lt_grads(D, W):", *self.lt_body("leaves")]
        loss = " + ".join(f"({n} * lt.asarray(W[{n!r}])).sum()" for n in weighted)
        lines += [f"    loss = {loss}", "    loss.backward()"]
        grads = ", ".join(f"{n!r}: {n}_leaf.grad" for n in self.float_leaves())
        lines += [f"    grads = {{{grads}}}", "    lt.realize(*[g for g in grads.values() if g is not None])",
                  "    return grads"]
        return "\n".join(lines) + "\n"

    def torch_grad_source(self, weighted: list[str], jitter: bool = False) -> str:
        """`torch_grads(D, W, dtype)`: torch's gradients, its float inputs in `dtype`; None where the loss
        does not depend on them."""
        lines = ["def torch_grads(D, W, dtype):", *self.torch_body(leaves=True, jitter=jitter)]
        loss = " + ".join(f"({n} * torch.tensor(W[{n!r}]).to({n}.dtype)).sum()" for n in weighted)
        leaves = ", ".join(f"{n}_leaf" for n in self.float_leaves())
        lines += [f"    loss = {loss}", "    if not loss.requires_grad:", "        return None",
                  f"    leaves = [{leaves}]",
                  "    grads = torch.autograd.grad(loss, leaves, allow_unused=True)",
                  f"    return dict(zip({self.float_leaves()!r}, grads))"]
        return "\n".join(lines) + "\n"

    def size(self) -> int:
        """How big the program is, for shrinking: steps, then elements."""
        return len(self.steps) * 10**6 + sum(i.data.size for i in self.inputs)

    def describe(self) -> str:
        return self.lt_source()


def array_literal(arr: np.ndarray) -> str:
    """Source for an exact copy of `arr` (any size, NaN and infinities included)."""
    shape = lit(tuple(arr.shape))
    hexed = np.ascontiguousarray(arr).tobytes().hex()
    return f"np.frombuffer(bytes.fromhex('{hexed}'), dtype=np.{arr.dtype.name}).reshape({shape}).copy()"
