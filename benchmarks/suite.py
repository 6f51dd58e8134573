"""The CPU benchmark suite: every workload on lazytensor and on each installed peer, in one run.

    python benchmarks/suite.py [--quick] [--json results.json] [--only softmax,matmul]

Peers, when installed (`pip install -e ".[bench]"`; tinygrad's CPU backend also needs clang):
NumPy, torch eager, torch.compile, jax.jit, tinygrad. Every implementation's result is checked
against NumPy's before it is timed; a wrong one is reported and not timed. The machine's copy
bandwidth is measured in the same run (NumPy copying 2**24 float32 into a reused buffer), and
memory-bound workloads are reported as a percentage of it. Ratios are lazytensor's time over
the peer's: below 1 means lazytensor is faster. The contestants take turns, twice, with a pause
before each so that one's spinning worker threads do not slow the next; each keeps its best time.
Compare numbers only within one run: this machine is shared and moves 10-30% between runs.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

import lazytensor as lt

ROUNDS = 2            # every contestant is timed in turn this many times; its best counts
SETTLE_SECONDS = 0.3


def best_of(fn: Callable[[], object], repeat: int, warmup: int = 2) -> float:
    for _ in range(warmup):
        fn()
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


@dataclass
class Workload:
    name: str
    make: Callable[[np.random.Generator], list[np.ndarray]]
    bytes_moved: Callable[[list[np.ndarray]], int] | None = None   # memory-bound: report GB/s
    flops: Callable[[list[np.ndarray]], int] | None = None         # compute-bound: report GFLOP/s
    impls: dict[str, Callable[[list[np.ndarray]], Callable[[], object]]] = field(default_factory=dict)


def _peers() -> dict[str, object]:
    found: dict[str, object] = {}
    try:
        import torch
        found["torch"] = torch
    except ImportError:
        pass
    try:
        import jax
        import jax.numpy as jnp
        found["jax"] = (jax, jnp)
    except ImportError:
        pass
    try:
        import tinygrad
        found["tinygrad"] = tinygrad
    except ImportError:
        pass
    return found


def bound(fn: Callable[..., object], args: list) -> Callable[[], object]:
    """`fn(*args)` as a call of nothing: what the timer runs, with the inputs made beforehand."""
    return lambda: fn(*args)


def numpy_softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def build(quick: bool) -> list[Workload]:
    n = 1 << (20 if quick else 24)
    side = 1024 if quick else 4096
    peers = _peers()
    vec3 = lambda rng: [rng.random(n, dtype=np.float32) for _ in range(3)]
    square = lambda rng: [rng.standard_normal((side, side), dtype=np.float32)]

    def lt_fn(f):
        def prepare(arrays):
            ts = [lt.asarray(a) for a in arrays]
            return lambda: f(*ts).realize()
        return prepare

    def np_fn(f):
        return lambda arrays: (lambda: f(*arrays))

    def layernorm(x, xp_mean, xp_var, sqrt):
        m = xp_mean(x)
        return (x - m) / sqrt(xp_var(x) + 1e-5)

    workloads = [
        Workload("(x + y*z).sum()", vec3, bytes_moved=lambda a: 12 * a[0].size),
        Workload("exp(x)*y + sin(z)", vec3, bytes_moved=lambda a: 16 * a[0].size),
        Workload(f"softmax {side}x{side}", square, bytes_moved=lambda a: 8 * a[0].size),
        Workload(f"layernorm {side}x{side}", square, bytes_moved=lambda a: 8 * a[0].size),
    ]
    for size in ([256, 512] if quick else [512, 1024, 2048]):
        workloads.append(Workload(f"matmul f32 {size}",
                                  lambda rng, s=size: [rng.standard_normal((s, s), dtype=np.float32) for _ in range(2)],
                                  flops=lambda a: 2 * a[0].shape[0] ** 3))
    red, ew, sm, ln = workloads[:4]
    red.impls["lazytensor"] = lt_fn(lambda x, y, z: (x + y * z).sum())
    red.impls["numpy"] = np_fn(lambda x, y, z: (x + y * z).sum())
    ew.impls["lazytensor"] = lt_fn(lambda x, y, z: x.exp() * y + z.sin())
    ew.impls["numpy"] = np_fn(lambda x, y, z: np.exp(x) * y + np.sin(z))
    sm.impls["lazytensor"] = lt_fn(lambda x: x.softmax(-1))
    sm.impls["numpy"] = np_fn(numpy_softmax)
    ln.impls["lazytensor"] = lt_fn(lambda x: (x - x.mean(-1, keepdims=True)) / (x.var(-1, keepdims=True) + 1e-5).sqrt())
    ln.impls["numpy"] = np_fn(lambda x: (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5))
    for w in workloads[4:]:
        w.impls["lazytensor"] = lt_fn(lambda a, b: a @ b)
        w.impls["numpy"] = np_fn(lambda a, b: a @ b)

    if "torch" in peers:
        torch = peers["torch"]
        fns = {
            red.name: lambda x, y, z: (x + y * z).sum(),
            ew.name: lambda x, y, z: torch.exp(x) * y + torch.sin(z),
            sm.name: lambda x: torch.softmax(x, -1),
            ln.name: lambda x: torch.nn.functional.layer_norm(x, x.shape[-1:], eps=1e-5),
            **{w.name: (lambda a, b: a @ b) for w in workloads[4:]},
        }
        for w in workloads:
            f = fns[w.name]
            w.impls["torch eager"] = lambda arrays, f=f: bound(f, [torch.from_numpy(a) for a in arrays])
            compiled = torch.compile(f)
            w.impls["torch.compile"] = lambda arrays, c=compiled: bound(c, [torch.from_numpy(a) for a in arrays])
    if "jax" in peers:
        jax, jnp = peers["jax"]
        fns = {
            red.name: lambda x, y, z: (x + y * z).sum(),
            ew.name: lambda x, y, z: jnp.exp(x) * y + jnp.sin(z),
            sm.name: lambda x: jax.nn.softmax(x, -1),
            ln.name: lambda x: (x - x.mean(-1, keepdims=True)) / jnp.sqrt(x.var(-1, keepdims=True) + 1e-5),
            **{w.name: (lambda a, b: a @ b) for w in workloads[4:]},
        }
        for w in workloads:
            jf = jax.jit(fns[w.name])
            w.impls["jax.jit"] = lambda arrays, jf=jf: bound(lambda *ts: jf(*ts).block_until_ready(),
                                                             [jnp.asarray(a) for a in arrays])
    if "tinygrad" in peers:
        from tinygrad import Tensor as TT
        fns = {
            red.name: lambda x, y, z: (x + y * z).sum(),
            ew.name: lambda x, y, z: x.exp() * y + z.sin(),
            sm.name: lambda x: x.softmax(-1),
            ln.name: lambda x: x.layernorm(-1, eps=1e-5),
            **{w.name: (lambda a, b: a @ b) for w in workloads[4:]},
        }
        for w in workloads:
            f = fns[w.name]
            w.impls["tinygrad"] = lambda arrays, f=f: bound(lambda *ts: f(*ts).realize(),
                                                            [TT(a).realize() for a in arrays])
    return workloads


def to_numpy(result: object) -> np.ndarray:
    """Any implementation's result as a NumPy array (lazytensor, torch and tinygrad tensors have .numpy())."""
    return np.asarray(result.numpy() if hasattr(result, "numpy") else result)


def mismatch(result: object, reference: np.ndarray, rtol: float = 1e-4) -> str | None:
    """How `result` differs from the `reference`, or None where it agrees up to float32 rounding (or `rtol`).

    The tolerance is relative to the largest reference value, so that summing 2**24 numbers in another
    order passes and softmax's tiny probabilities are still checked."""
    got = to_numpy(result)
    if got.shape != reference.shape:
        return f"shape {got.shape}, expected {reference.shape}"
    scale = float(np.abs(reference).max())
    error = float(np.abs(got.astype(np.float64) - reference).max())
    return None if error <= rtol * scale else f"max abs error {error:.3g} (largest value {scale:.3g})"


def copy_bandwidth(n: int, repeat: int) -> float:
    src = np.random.default_rng(1).random(n, dtype=np.float32)
    dst = np.empty_like(src)
    return 8 * n / best_of(lambda: np.copyto(dst, src), repeat)


def report(name: str, times: dict[str, float], bytes_moved: int | None, flops: int | None, bandwidth: float,
           flop_unit: tuple[str, float] = ("GFLOP/s", 1e9)) -> list[dict]:
    """Print a line per contestant (time, rate, % of the copy bandwidth for memory-bound workloads, and
    lazytensor's time over the contestant's) and return the same as rows for --json."""
    rows = []
    for impl, t in times.items():
        if bytes_moved:
            rate, unit, pct = bytes_moved / t / 1e9, "GB/s", f"{100 * bytes_moved / t / bandwidth:.0f}%"
        else:
            rate, unit, pct = flops / t / flop_unit[1], flop_unit[0], ""
        lt_time = times.get("lazytensor", float("nan"))
        ratio = f"{lt_time / t:.2f}" if "lazytensor" in times and impl != "lazytensor" else ""
        print(f"{name:24}{impl:15}{t * 1e3:9.3f}ms{rate:9.1f} {unit:<7}{pct:>10}{ratio:>11}")
        rows.append({"workload": name, "impl": impl, "seconds": t, "rate": rate, "unit": unit,
                     "ratio_lt_over_impl": lt_time / t})
    return rows


def overhead(repeat: int, device: str = "cpu") -> float:
    """Seconds per realize of a one-kernel graph of tiny tensors whose kernel is cached (on a GPU, the
    host's time to launch it: the kernels queue up and are waited for once)."""
    y, z = (lt.asarray(np.ones(16, np.float32), device=device) for _ in range(2))
    xs = [lt.asarray(np.full(16, i, np.float32), device=device) for i in range(repeat + 1)]
    (xs[0] + y * z).sum().realize()
    pending = [(x + y * z).sum() for x in xs[1:]]
    lt.synchronize(device)
    t0 = time.perf_counter()
    for p in pending:
        p.realize()
    lt.synchronize(device)
    return (time.perf_counter() - t0) / repeat


_COLD_COMPILE = """
import time
t0 = time.perf_counter()
import numpy as np, lazytensor as lt, lazytensor.kernels.llvm
t1 = time.perf_counter()
x, y, z = (lt.asarray(np.ones(1 << 16, np.float32)) for _ in range(3))
t2 = time.perf_counter()
(x + y * z).sum().realize()
print(t1 - t0, time.perf_counter() - t2)
"""


def cold_compile(repeat: int) -> tuple[float, float]:
    """Seconds, in a fresh process, to import lazytensor with its LLVM backend, and then for the first
    realize of `(x + y*z).sum()`: scheduling, LLVM IR, optimization and machine code, with nothing
    compiled before it (each the best of `repeat` processes)."""
    runs = [subprocess.run([sys.executable, "-c", _COLD_COMPILE], check=True, capture_output=True, text=True)
            for _ in range(repeat)]
    imports, compiles = zip(*(map(float, r.stdout.split()) for r in runs))
    return min(imports), min(compiles)


def parse_args(doc: str, repeat: int) -> argparse.Namespace:
    """The options every benchmark suite takes."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, for a smoke run")
    parser.add_argument("--repeat", type=int, default=repeat)
    parser.add_argument("--only", default="", help="comma-separated substrings of workload names")
    parser.add_argument("--json", default="", help="also write the results to this file")
    return parser.parse_args()


def main() -> None:
    args = parse_args(__doc__, repeat=10)

    bandwidth = copy_bandwidth(1 << (20 if args.quick else 24), args.repeat)
    rows = []
    print(f"copy bandwidth: {bandwidth / 1e9:.1f} GB/s   ({lt.devices()[0].describe()})")
    print(f"{'workload':24}{'impl':15}{'time':>11}{'rate':>16}{'% copy bw':>11}{'lt / impl':>11}")
    for w in build(args.quick):
        if args.only and not any(s in w.name for s in args.only.split(",")):
            continue
        arrays = w.make(np.random.default_rng(0))
        reference = to_numpy(w.impls["numpy"](arrays)())
        runs = {}
        for impl, prepare in w.impls.items():
            try:
                run = prepare(arrays)
                if (wrong := mismatch(run(), reference)) is not None:
                    print(f"{w.name:24}{impl:15}  wrong result: {wrong}")
                    continue
                runs[impl] = run
            except Exception as e:  # noqa: BLE001 (a peer that cannot run a workload is reported, not fatal)
                print(f"{w.name:24}{impl:15}  failed: {type(e).__name__}: {str(e)[:60]}")
        times = {impl: float("inf") for impl in runs}
        for _ in range(ROUNDS):
            for impl, run in runs.items():
                # OpenBLAS's and XLA's worker threads spin for a while after their work: let the previous
                # contestant's threads go idle before timing the next one on the same cores
                time.sleep(SETTLE_SECONDS)
                times[impl] = min(times[impl], best_of(run, args.repeat))
        rows += report(w.name, times, w.bytes_moved and w.bytes_moved(arrays), w.flops and w.flops(arrays), bandwidth)
    per_realize = overhead(2000)
    print(f"per-realize overhead (one cached kernel, tiny tensors): {per_realize * 1e6:.1f} us")
    rows.append({"workload": "per-realize overhead", "impl": "lazytensor", "seconds": per_realize})
    imports, cold = cold_compile(3)
    print(f"cold compile of (x + y*z).sum() (first realize in a fresh process): {cold * 1e3:.1f} ms, "
          f"after {imports * 1e3:.0f} ms to import lazytensor and its LLVM backend")
    rows += [{"workload": "cold compile", "impl": "lazytensor", "seconds": cold},
             {"workload": "import", "impl": "lazytensor", "seconds": imports}]
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"copy_bandwidth_gbs": bandwidth / 1e9, "results": rows}, f, indent=1)


if __name__ == "__main__":
    main()
