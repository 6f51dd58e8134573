"""Running a program on lazytensor and judging it: against the reference (forward), against torch's
autograd (gradients), and a jit replay against plain calls (bit for bit).

A problem raises `Failure`, whose `kind` (with the exception's type, for errors) is its signature: what
shrinking must keep failing. Kinds: `lt-error` (lazytensor raised on a valid program, or crashed reading
it), `dtype`, `shape`, `value` (outside the reference's bound while torch is inside it), `oracle` (torch too
is outside the bound: the reference's rules or a semantic difference, not counted against lazytensor),
`grad`, `jit`.
"""
from __future__ import annotations

import math
import traceback
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

import lazytensor as lt

from . import reference, semantics
from .ops import LT_DTYPE, lit
from .program import Program
from .reference import RVal


class Failure(Exception):
    """A finding: `kind` and `key` make its signature, `checks` the elements a repro asserts on."""

    def __init__(self, kind: str, message: str, key: str = "", checks: list[tuple] | None = None):
        super().__init__(f"{kind}{' ' + key if key else ''}: {message}")
        self.kind, self.key, self.message, self.checks = kind, key, message, checks or []

    @property
    def signature(self) -> tuple[str, str]:
        return self.kind, self.key


@dataclass
class Outcome:
    """What a passing run compared: elements checked, elements the reference left undetermined."""

    compared: int = 0
    unsure: int = 0
    oracle_notes: list[str] = field(default_factory=list)


TO_TORCH = '''def to_torch(t):
    """A realized lazytensor tensor as a torch tensor (bfloat16 through its exact float32 values)."""
    if t.dtype == lt.bfloat16:
        return torch.tensor(np.asarray(t.numpy(), dtype=np.float32)).to(torch.bfloat16)
    return torch.tensor(np.array(t.numpy()))
'''


def draws_source(prog: Program) -> str:
    """`lt_draws()`: the program's random draws made again on their own, from the same seed, as torch
    tensors. Counter-based generation makes them the bits the program's kernels drew."""
    lines = ["def lt_draws():", f"    lt.manual_seed({prog.seed})", "    R = ["]
    for step in prog.random_steps:
        if step.op == "dropout":
            dt = LT_DTYPE.get(step.params["dt"], f"lt.{step.params['dt']}")
            lines.append(f"        lt.rand({lit(tuple(step.params['shape']))}, dtype={dt}),")
        else:
            lines.append(f"        {step.source('lt')},")
    lines += ["    ]", "    lt.realize(*R)", "    return [to_torch(r) for r in R]"]
    return "\n".join(lines) + "\n"


def namespace() -> dict[str, Any]:
    ns: dict[str, Any] = {"lt": lt, "np": np, "torch": torch, "sem": semantics}
    exec(TO_TORCH, ns)  # noqa: S102
    return ns


def host(t: lt.Tensor) -> np.ndarray:
    """A lazytensor result as NumPy (bfloat16 as its float32 values), reading it (so realizing it)."""
    arr = t.numpy()
    return np.asarray(arr, dtype=np.float32) if t.dtype == lt.bfloat16 else np.array(arr)


def torch_inputs(prog: Program, ns: dict[str, Any]) -> dict[str, torch.Tensor]:
    D = {inp.name: inp.base() for inp in prog.inputs}
    return {inp.name: eval(prog.input_source(inp, "torch") + inp.view(), {**ns, "D": D})
            for inp in prog.inputs}


def bad_elements(got: np.ndarray, ref: RVal) -> np.ndarray:
    """A mask of the elements of `got` outside the reference's bound."""
    v = ref.val.double().numpy() if ref.is_float else ref.val.numpy()
    e = ref.err.numpy()
    if not ref.is_float:
        return (e != math.inf) & (got != v)
    g = got.astype(np.float64)
    with np.errstate(invalid="ignore"):
        finite = np.isfinite(v)
        ok = np.where(finite, np.abs(g - v) <= e, (g == v) | (np.isnan(g) & np.isnan(v)))
    return (e != math.inf) & ~ok


def _checks(name: str, got: np.ndarray, ref: RVal, bad: np.ndarray, theirs: np.ndarray) -> list[tuple]:
    """The first few bad elements as (output, index, lazytensor, reference, bound, torch)."""
    out = []
    for idx in list(zip(*np.nonzero(bad)))[:4] if got.ndim else [()]:
        idx = tuple(int(i) for i in idx)
        want = ref.val[idx].item() if ref.val.dim() else ref.val.item()
        out.append((name, idx, got[idx].item(), want, float(ref.err[idx]), theirs[idx].item()))
    return out


def _dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def run_forward(prog: Program) -> Outcome:
    """Run the program on lazytensor, then on torch and the reference; raise Failure on a difference."""
    ns = namespace()
    D = {inp.name: inp.base() for inp in prog.inputs}
    try:
        exec(prog.lt_source(), ns)  # noqa: S102
        results = ns["lt_program"](D)
        got = {n: host(t) for n, t in results.items()}
    except Exception as e:
        raise Failure("lt-error", _describe(e), type(e).__name__) from e
    draws = []
    if prog.random_steps:
        exec(draws_source(prog), ns)  # noqa: S102
        draws = ns["lt_draws"]()
    native, ref = reference.evaluate(prog, torch_inputs(prog, ns), draws)
    outcome = Outcome()
    op_of = {s.out: s.op for s in prog.steps}
    for name, arr in got.items():
        t = results[name]
        want = native[name]
        if t.dtype.name != _dtype_name(want.dtype):
            raise Failure("dtype", f"{name} is {t.dtype.name}, torch gives {_dtype_name(want.dtype)}", op_of[name],
                          [name])
        if arr.shape != tuple(want.shape):
            raise Failure("shape", f"{name} has shape {arr.shape}, torch gives {tuple(want.shape)}", op_of[name],
                          [name])
        r = ref[name]
        theirs = want.float().numpy() if want.dtype == torch.bfloat16 else want.detach().numpy()
        torch_bad = bad_elements(theirs, r)
        lt_bad = bad_elements(arr, r)
        if lt_bad.any():
            kind = "oracle" if (torch_bad & lt_bad).any() else "value"
            checks = _checks(name, arr, r, lt_bad, theirs)
            raise Failure(kind, f"{name}: {int(lt_bad.sum())} of {arr.size} elements outside the reference's "
                          f"bound, e.g. {checks[0]}", op_of[name], checks)
        if torch_bad.any():
            outcome.oracle_notes.append(f"torch outside the bound on {name}: {_checks(name, theirs, r, torch_bad, arr)[0]}")
        unsure = int((r.err == math.inf).sum())
        outcome.unsure += unsure
        outcome.compared += arr.size - unsure
    return outcome


def _describe(e: BaseException) -> str:
    frames = traceback.extract_tb(e.__traceback__)
    where = next((f"{f.filename.split('/')[-2]}/{f.filename.split('/')[-1]}:{f.lineno}" for f in reversed(frames)
                  if "/lazytensor/" in f.filename or "/kernels/" in f.filename), "?")
    return f"{type(e).__name__}: {e} (at {where})"


# ---- gradients -----------------------------------------------------------------------------------------

GRAD_PROBE_ULPS = 8  # how far (in units in the last place) the sensitivity probes move the inputs
GRAD_PROBES = 4


def gradient_weights(prog: Program, native: dict[str, torch.Tensor]) -> dict[str, np.ndarray]:
    """The weights of the scalar loss sum(output * W): fixed random values for each float output."""
    rng = np.random.default_rng(len(prog.steps))
    return {n: rng.uniform(-1, 1, tuple(native[n].shape)).astype(_dtype_name(native[n].dtype))
            for n in prog.outputs if native[n].dtype in (torch.float32, torch.float64)}


def run_grad(prog: Program) -> Outcome:
    """lazytensor's gradients against torch autograd's, in float64 from the same inputs.

    The bound is estimated, not derived: torch's own gradients in the program's dtype, and in float64 with
    rounding-sized noise (GRAD_PROBES times each: inputs moved by up to GRAD_PROBE_ULPS units in the last
    place, which breaks ties between them; every intermediate value scaled by 1 + d, |d| up to
    GRAD_PROBE_ULPS units of roundoff of the program's dtype, as Monte Carlo arithmetic emulates rounding)
    show how much rounding can move each gradient (much near a kink, a tie, a cancellation or a variance
    near 0). lazytensor's must lie within 4 times that spread plus 64 units of roundoff of the gradient's
    scale: its own magnitude plus the larger of the mean magnitudes of the input's gradient and of the
    loss's weights (a gradient whose terms cancel to 0 keeps a rounding of the size of the terms)."""
    ns = namespace()
    D = {inp.name: inp.base() for inp in prog.inputs}
    native, _ = reference.evaluate(prog, torch_inputs(prog, ns), [])
    weights = gradient_weights(prog, native)
    outcome = Outcome()
    if not weights or not prog.float_leaves():
        return outcome
    weighted = list(weights)
    exec(prog.torch_grad_source(weighted), ns)  # noqa: S102
    leaf_dtypes = {inp.name: TORCH_FLOAT[inp.dtype] for inp in prog.inputs if inp.dtype in TORCH_FLOAT}
    u = torch.finfo(max(leaf_dtypes.values(), key=lambda d: torch.finfo(d).eps)).eps / 2
    rng = np.random.default_rng(0)
    try:
        ref = ns["torch_grads"](D, weights, torch.float64)
        if ref is None:
            return outcome
        own = ns["torch_grads"](D, weights, None)
        spreads = {n: _gap(own[n], ref[n]) for n in ref}
        for _ in range(GRAD_PROBES):
            moved = {k: _nudged(v, rng) if k in leaf_dtypes else v for k, v in D.items()}
            probe = ns["torch_grads"](moved, weights, torch.float64)
            spreads = {n: torch.maximum(spreads[n], _gap(probe[n], ref[n])) for n in ref}
        exec(prog.torch_grad_source(weighted, jitter=True), ns)  # noqa: S102
        ns["jitter"] = _jitter(GRAD_PROBE_ULPS * u, torch.Generator().manual_seed(0))
        for _ in range(GRAD_PROBES):
            probe = ns["torch_grads"](D, weights, torch.float64)
            spreads = {n: torch.maximum(spreads[n], _gap(probe[n], ref[n])) for n in ref}
    except RuntimeError as e:  # torch has no derivative for one of the ops: no oracle for this program
        outcome.oracle_notes.append(f"torch cannot differentiate it: {e}")
        return outcome
    weight_scale = float(np.mean([np.abs(w).mean() for w in weights.values() if w.size] or [0.0]))
    exec(prog.lt_grad_source(weighted), ns)  # noqa: S102
    try:
        got = ns["lt_grads"](D, weights)
        got = {n: (host(g) if g is not None else None) for n, g in got.items()}
    except RuntimeError as e:
        # lazytensor refuses a backward that reaches no input but through ops without a gradient (sign,
        # comparisons), where torch gives zeros: documented (autograd.py), and checked to be that case
        if "no gradient reaches" in str(e) and all(g is None or not g.any() for g in ref.values()):
            return outcome
        raise Failure("lt-error", _describe(e), type(e).__name__) from e
    except Exception as e:
        raise Failure("lt-error", _describe(e), type(e).__name__) from e
    for name, g_ref in ref.items():
        r = torch.zeros(D[name].shape, dtype=torch.float64) if g_ref is None else g_ref.double()
        g = got[name]
        if g is None:
            g = np.zeros(r.shape)
        if g.shape != tuple(r.shape):
            raise Failure("grad", f"the gradient of {name} has shape {g.shape}, torch's {tuple(r.shape)}", "shape")
        r_np, spread = r.numpy(), spreads[name].numpy()
        finite = np.isfinite(r_np)
        scale = max(float(np.abs(r_np[finite]).mean()) if finite.any() else 0.0, weight_scale)
        tol = 4 * spread + 64 * u * (np.abs(np.where(finite, r_np, 0)) + scale)
        g64 = g.astype(np.float64)
        with np.errstate(invalid="ignore"):
            ok = np.where(finite, np.abs(g64 - r_np) <= tol, (g64 == r_np) | (np.isnan(g64) & np.isnan(r_np)))
        ok |= ~np.isfinite(spread)
        if not ok.all():
            idx = tuple(int(i) for i in np.argwhere(~ok)[0])
            checks = [(name, idx, float(g64[idx]), float(r_np[idx]), float(tol[idx]), float(own[name][idx])
                       if own[name] is not None else 0.0)]
            # the key tells failures apart (and shrinking keeps it): a non-finite gradient where torch's is
            # finite, the other way round, or both finite and apart
            key = "nonfinite" if not np.isfinite(g64[idx]) and finite[idx] else "finite" if not finite[idx] else ""
            raise Failure("grad", f"d loss / d {name}: {int((~ok).sum())} of {ok.size} elements outside the bound, "
                          f"e.g. {checks[0]}", key, checks)
        outcome.compared += int(np.isfinite(spread).sum())
        outcome.unsure += int((~np.isfinite(spread)).sum())
    return outcome


TORCH_FLOAT = {"float32": torch.float32, "float64": torch.float64}


def _jitter(scale: float, generator: torch.Generator):
    """`jitter(v)`: a float tensor scaled elementwise by 1 + d, d uniform in [-scale, scale], and the gradient
    that flows back through it by 1 + d' of its own: the backward's roundings too, where two terms cancel (the
    two of `y / y`'s gradient are exactly opposite for any forward noise, y / y being 1 at any y)."""
    def noise(like: torch.Tensor) -> torch.Tensor:
        return 1 + (torch.rand(like.shape, generator=generator, dtype=torch.float64).to(like.dtype) * 2 - 1) * scale

    class Jitter(torch.autograd.Function):
        @staticmethod
        def forward(ctx: Any, v: torch.Tensor) -> torch.Tensor:
            return v * noise(v)

        @staticmethod
        def backward(ctx: Any, g: torch.Tensor) -> torch.Tensor:
            return g * noise(g)

    def jitter(v: Any) -> Any:
        if not isinstance(v, torch.Tensor) or not v.is_floating_point():
            return v
        return Jitter.apply(v)
    return jitter


def _nudged(values: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Each element moved by 1 to GRAD_PROBE_ULPS units in the last place of its dtype, up or down at random:
    ties between inputs break (either way), as rounding inside a computation may break them."""
    out = np.array(values)
    steps = rng.integers(1, GRAD_PROBE_ULPS + 1, out.shape)
    toward = np.where(rng.random(out.shape) < 0.5, -np.inf, np.inf).astype(out.dtype)
    for k in range(1, GRAD_PROBE_ULPS + 1):
        out = np.where(steps >= k, np.nextafter(out, toward), out)
    return out


def _gap(a: torch.Tensor | None, b: torch.Tensor | None) -> torch.Tensor:
    """|a - b| elementwise in float64 (None is a zero gradient); inf where one is not finite and they differ."""
    if a is None and b is None:
        return torch.zeros(())
    a = torch.zeros_like(b, dtype=torch.float64) if a is None else a.double()
    b = torch.zeros_like(a, dtype=torch.float64) if b is None else b.double()
    same = (a == b) | (a.isnan() & b.isnan())
    d = torch.where(same, 0.0, (a - b).abs())
    return torch.where(d.isnan(), math.inf, d)


# ---- lt.jit ------------------------------------------------------------------------------------------------

JIT_CALLS = 5


def jit_inputs(prog: Program, call: int) -> dict[str, np.ndarray]:
    """New base arrays for the call: the inputs' shapes and dtypes, other values (class labels in range)."""
    from .gen import make_values
    rng = np.random.default_rng(1000 + call)
    out = {}
    for inp in prog.inputs:
        base = inp.base()
        if not call:
            out[inp.name] = base
        elif inp.labels:
            out[inp.name] = rng.integers(0, inp.labels, base.shape)
        else:
            out[inp.name] = make_values(rng, base.shape, inp.dtype, "plain")
    return out


def realized(outputs: dict[str, lt.Tensor]) -> dict[str, np.ndarray]:
    """A call's outputs realized together, as lt.jit realizes them at the end of a call, then read. Read one
    at a time, a 16-bit output read before another computed from it is rounded in between (where realized
    together the other computes from its float32 value): other bits, both right (README, dtypes)."""
    lt.realize(*outputs.values())
    return {n: host(t) for n, t in outputs.items()}


def run_jit(prog: Program) -> Outcome:
    """`lt.jit(lt_step)` called JIT_CALLS times on new data against `lt_step` called plainly: bit for bit."""
    ns = namespace()
    exec(prog.lt_jit_source(), ns)  # noqa: S102
    step = ns["lt_step"]
    datas = [jit_inputs(prog, i) for i in range(JIT_CALLS)]

    def tensors(data: dict[str, np.ndarray]) -> dict[str, lt.Tensor]:
        return {inp.name: lt.asarray(data[inp.name], dtype=lt.bfloat16 if inp.dtype == "bfloat16" else None)
                for inp in prog.inputs}

    try:
        lt.manual_seed(prog.seed)
        plain = [realized(step(tensors(d))) for d in datas]
    except Exception as e:
        raise Failure("lt-error", _describe(e), type(e).__name__) from e
    lt.manual_seed(prog.seed)
    jitted = lt.jit(step)
    replays = lt.stats().replays
    for call, d in enumerate(datas):
        try:
            got = realized(jitted(tensors(d)))
        except Exception as e:
            raise Failure("jit", f"call {call}: {_describe(e)}", type(e).__name__) from e
        for name, want in plain[call].items():
            have = got[name]
            if have.dtype != want.dtype or have.shape != want.shape or have.tobytes() != want.tobytes():
                diff = np.argwhere(have != want) if have.shape == want.shape else []
                where = tuple(int(i) for i in diff[0]) if len(diff) else ()
                raise Failure("jit", f"call {call} ({lt.stats().replays - replays} replays so far): {name} differs "
                              f"from the plain call at {where}: {have[where] if len(diff) else have.dtype} != "
                              f"{want[where] if len(diff) else want.dtype}", "", [(call, name, where)])
    return Outcome(compared=sum(a.size for out in plain for a in out.values()), unsure=0,
                   oracle_notes=[f"replays: {lt.stats().replays - replays}"])
