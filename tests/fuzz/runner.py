"""One fuzz case from a seed or a record of draws, by check; shrinking a failing one; its repro script.

The checks:
- forward: a random program against the reference (reference.py), in whatever device and thread count
  the process runs with;
- grad: a float32/float64 program's gradients against torch autograd (check.run_grad);
- jit: `lt.jit` replays of a program against plain calls, bit for bit (check.run_jit);
- errors: a bad call (errors.py).
"""
from __future__ import annotations

import inspect
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from . import check, errors, gen, semantics
from .check import Failure, Outcome
from .ops import lit
from .program import Program, array_literal

CHECKS = ("forward", "grad", "jit", "errors")


def config(name: str, max_numel: int) -> gen.Config:
    """The generator's settings for a check (small tensors under Triton's interpreter: `max_numel`)."""
    if name == "grad":
        return gen.Config(grad=True, random_ops=False, max_numel=max_numel)
    return gen.Config(max_numel=max_numel)


def make(name: str, ch: gen.Choices, max_numel: int) -> Any:
    """The case a stream of draws makes for a check: a Program, or a BadCall."""
    if name == "errors":
        return errors.bad_call(ch)
    return gen.program(ch, config(name, max_numel))


def run(name: str, case: Any) -> Outcome:
    """Check a case; raises Failure."""
    if name == "errors":
        verdict = errors.run_bad_call(case)
        return Outcome(compared=1, oracle_notes=[verdict] if verdict == "torch accepts it" else [])
    return {"forward": check.run_forward, "grad": check.run_grad, "jit": check.run_jit}[name](case)


def attempt(name: str, record: list[int] | None, seed: int | None, max_numel: int
            ) -> tuple[Any, list[int], Outcome | Failure]:
    """Make and run the case of `record` (or of `seed`); returns it, its canonical record and the verdict."""
    ch = gen.Choices(seed, record)
    case = make(name, ch, max_numel)
    try:
        return case, ch.record, run(name, case)
    except Failure as f:
        return case, ch.record, f
    except Exception as e:  # noqa: BLE001  (the fuzzer's own bug: reported and shrunk like any finding)
        return case, ch.record, Failure("harness", f"{type(e).__name__}: {e}", type(e).__name__)


# ---- shrinking -------------------------------------------------------------------------------------------


@dataclass
class Shrunk:
    record: list[int]
    case: Any
    failure: Failure
    attempts: int = 0


def shrink(name: str, record: list[int], failure: Failure, max_numel: int, seconds: float = 300.0,
           fails: Callable[[list[int]], tuple[Any, list[int], Failure] | None] | None = None) -> Shrunk:
    """A smaller record whose case fails with the same signature: blocks of draws deleted, then draws
    lowered (towards each one's simplest value), until no pass helps or `seconds` run out.

    `fails` runs a candidate and returns (case, canonical record, failure) when it fails alike; by default
    in this process (a crash's candidates run in a subprocess instead, see __main__)."""
    def in_process(rec: list[int]) -> tuple[Any, list[int], Failure] | None:
        case, canon, verdict = attempt(name, rec, None, max_numel)
        return (case, canon, verdict) if isinstance(verdict, Failure) and verdict.signature == failure.signature \
            else None

    fails = fails or in_process
    deadline = time.monotonic() + seconds
    best = fails(record)
    if best is None:  # not reproducible from its record (it depends on earlier cases in the process)
        case, _, _ = attempt(name, record, None, max_numel)
        return Shrunk(record, case, failure)
    shrunk = Shrunk(best[1], best[0], best[2])

    tried: set[tuple[int, ...]] = set()

    def better(candidate: list[int]) -> bool:
        if time.monotonic() > deadline or tuple(candidate) in tried:
            return False
        tried.add(tuple(candidate))
        shrunk.attempts += 1
        got = fails(candidate)
        if got is None or (len(got[1]), got[1]) >= (len(shrunk.record), shrunk.record):
            return False
        shrunk.record, shrunk.case, shrunk.failure = got[1], got[0], got[2]
        return True

    improved = True
    while improved and time.monotonic() < deadline:
        improved = False
        size = max(len(shrunk.record) // 2, 1)
        while size >= 1:
            i = 0
            while i < len(shrunk.record):
                rec = shrunk.record
                if better(rec[:i] + rec[i + size:]) or better(rec[:i] + [0] * len(rec[i:i + size]) + rec[i + size:]):
                    improved = True
                else:
                    i += size
            size //= 2
        for i in range(len(shrunk.record)):
            for lower in (0, shrunk.record[i] // 2, shrunk.record[i] - 1) if i < len(shrunk.record) else ():
                if 0 <= lower < shrunk.record[i] and better(shrunk.record[:i] + [lower] + shrunk.record[i + 1:]):
                    improved = True
                    break
    return shrunk


# ---- repro scripts --------------------------------------------------------------------------------------


HEADER = '''"""{title}

Found by the differential fuzzer (tests/fuzz): {command}
{message}

Run it with `python {filename}`{env}. It exits with an AssertionError while the bug is there.
"""
import types

import numpy as np
import torch

import lazytensor as lt
'''


def _semantics_source() -> str:
    """The torch side's helpers (semantics.py), as a namespace `sem`."""
    funcs = [f for _, f in inspect.getmembers(semantics, inspect.isfunction) if f.__module__ == semantics.__name__]
    body = "\n\n".join(inspect.getsource(f) for f in funcs)
    names = ", ".join(f"{f.__name__}={f.__name__}" for f in funcs)
    return f"{body}\n\nsem = types.SimpleNamespace({names})\n"


def repro(name: str, shrunk: Shrunk, command: str, filename: str, env: str) -> str:
    """A standalone script reproducing a failure of check `name`."""
    f = shrunk.failure
    head = HEADER.format(title=f"{name}: {f.kind} {f.key}".strip(), command=command, message=str(f)[:2000],
                         filename=filename, env=f" with {env}" if env else "")
    if name == "errors":
        return head + _errors_body(shrunk.case, f)
    prog: Program = shrunk.case
    data = "D = {\n" + "".join(f"    {inp.name!r}: {array_literal(inp.base())},\n" for inp in prog.inputs) + "}\n"
    parts = [head, _semantics_source(), check.TO_TORCH, data]
    if name == "forward":
        parts += [prog.lt_source(), check.draws_source(prog) if prog.random_steps else "", prog.torch_source(),
                  _forward_tail(prog, f)]
    elif name == "grad":
        parts += [_grad_body(prog, f)]
    else:
        parts += [prog.lt_jit_source(), _jit_tail(prog, f)]
    return "\n\n".join(p for p in parts if p) + "\n"


def _forward_tail(prog: Program, f: Failure) -> str:
    draws = "R = lt_draws()\n" if prog.random_steps else "R = []\n"
    lines = [draws + "want = torch_program(D, R)", "got = lt_program(D)  # raises here for an lt-error",
             "for name, t in got.items():",
             "    print(name, t.dtype, t.shape, 'torch:', want[name].dtype, tuple(want[name].shape))"]
    if f.kind in ("dtype", "shape"):
        lines += [f"t, w = got[{f.checks[0]!r}], want[{f.checks[0]!r}]",
                  "assert t.dtype.name == str(w.dtype).removeprefix('torch.') and t.shape == tuple(w.shape)"]
    elif f.checks:
        lines.append("# (output, index, lazytensor's value then, exact value, error bound, torch's value then): the\n"
                     "# exact value is float64 arithmetic on the exact inputs, the bound the most a correct\n"
                     "# implementation may round away from it (tests/fuzz/reference.py)")
        lines.append(f"CHECKS = {lit(list(f.checks))}")
        lines += ["for name, idx, _, exact, bound, _ in CHECKS:",
                  "    value = float(np.asarray(got[name].float().numpy())[idx])",
                  "    theirs = float(want[name].double()[idx])",
                  "    print(f'{name}{list(idx)}: lazytensor {value!r}, torch {theirs!r}, exact {exact!r} +- {bound!r}')",
                  "for name, idx, _, exact, bound, _ in CHECKS:",
                  "    value = float(np.asarray(got[name].float().numpy())[idx])",
                  "    assert abs(value - exact) <= bound or (value != value and exact != exact) or value == exact, name"]
    return "\n".join(lines) + "\n"


def _grad_body(prog: Program, f: Failure) -> str:
    ns = check.namespace()
    native, _ = check.reference.evaluate(prog, check.torch_inputs(prog, ns), [])
    weights = check.gradient_weights(prog, native)
    w = "W = {\n" + "".join(f"    {k!r}: {array_literal(v)},\n" for k, v in weights.items()) + "}\n"
    lines = [w, prog.lt_grad_source(list(weights)), prog.torch_grad_source(list(weights)),
             "want = torch_grads(D, W, torch.float64)", "got = lt_grads(D, W)  # raises here for an lt-error",
             "for name in want:", "    print(name, 'lazytensor', got[name].numpy() if got[name] is not None else None)",
             "    print(name, 'torch (float64)', want[name])"]
    if f.checks:
        lines += [(f"CHECKS = {lit(list(f.checks))}  # (input, index, lazytensor's then, torch float64's, bound, "
                   "torch's own dtype's)"),
                  "for name, idx, _, exact, bound, _ in CHECKS:",
                  "    value = float(got[name].numpy()[idx])",
                  ("    assert abs(value - exact) <= bound or (value != value and exact != exact) or value == exact, "
                   "(name, idx, value, exact)")]
    return "\n".join(lines) + "\n"


def _jit_tail(prog: Program, f: Failure) -> str:
    datas = [check.jit_inputs(prog, i) for i in range(check.JIT_CALLS)]
    lits = "DATAS = [\n" + "".join("    {" + ", ".join(f"{k!r}: {array_literal(v)}" for k, v in d.items()) + "},\n"
                                   for d in datas) + "]\n"
    bf16 = [inp.name for inp in prog.inputs if inp.dtype == "bfloat16"]
    lines = [lits, f"BF16 = {bf16!r}",
             "def tensors(d):",
             "    return {k: lt.asarray(v, dtype=lt.bfloat16 if k in BF16 else None) for k, v in d.items()}",
             "def host(t):",
             "    a = t.numpy()",
             "    return np.asarray(a, dtype=np.float32) if t.dtype == lt.bfloat16 else np.array(a)",
             "def realized(out):  # together, as lt.jit realizes a call's outputs",
             "    lt.realize(*out.values())",
             "    return {k: host(t) for k, t in out.items()}",
             f"lt.manual_seed({prog.seed})",
             "plain = [realized(lt_step(tensors(d))) for d in DATAS]",
             f"lt.manual_seed({prog.seed})", "jitted = lt.jit(lt_step)",
             "for call, d in enumerate(DATAS):",
             "    got = realized(jitted(tensors(d)))  # raises here for a jit error",
             "    for k, want in plain[call].items():",
             "        assert got[k].tobytes() == want.tobytes(), (call, k, got[k], want)",
             "print('replays:', lt.stats().replays)"]
    return "\n".join(lines) + "\n"


def _errors_body(case: errors.BadCall, f: Failure) -> str:
    lines = ["\n".join(case.source("torch"))]
    if case.torch is not None:
        lines += ["try:", f"    {case.torch}", "except Exception as e:", "    print('torch raises', type(e).__name__, e)",
                  "else:", "    print('torch accepts it')"]
    lines += ["\n".join(case.source("lt")), "try:", f"    {case.lt}", "except Exception as e:",
              "    print('lazytensor raises', type(e).__name__, e)",
              f"    expected = getattr(lt, {case.expect!r}, None) or getattr(__builtins__, {case.expect!r}, None)",
              "    assert isinstance(e, expected) and lt.stats().kernels_launched == 0, 'not the documented error'",
              "else:", "    raise AssertionError('lazytensor accepted it')"]
    return "\n".join(lines) + "\n"


@dataclass
class Tally:
    """What a run did, by check."""

    cases: int = 0
    compared: int = 0
    unsure: int = 0
    seconds: float = 0.0
    failures: dict[tuple[str, str], int] = field(default_factory=dict)
    notes: int = 0

    def add(self, verdict: Outcome | Failure, seconds: float) -> None:
        self.cases += 1
        self.seconds += seconds
        if isinstance(verdict, Failure):
            self.failures[verdict.signature] = self.failures.get(verdict.signature, 0) + 1
        else:
            self.compared += verdict.compared
            self.unsure += verdict.unsure
            self.notes += len(verdict.oracle_notes)

    def line(self, name: str) -> str:
        fails = ", ".join(f"{k}{' ' + s if s else ''} x{n}" for (k, s), n in self.failures.items()) or "none"
        return (f"{name}: {self.cases} cases in {self.seconds:.0f} s, {self.compared} elements compared, "
                f"{self.unsure} undetermined, {self.notes} notes; failures: {fails}")
