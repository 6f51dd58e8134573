"""Kernels generic over their outermost loop's size (`kernels/symbolic.py`, `LT_SYMBOLIC`): how many kernels a
program compiles over a range of batch sizes with and without them, and how fast a generic kernel runs beside
the one specialized for its size.

    python benchmarks/bench_symbolic.py [--sizes 256] [--repeat 10] [--rounds 3] [--only counts|speed] [--match S]

`counts`: each program of `PROGRAMS` runs at batch sizes 1..`--sizes` in a process of its own, with
`LT_SYMBOLIC` on and off and the persistent cache off (`LT_CACHE_DIR=`), and prints `lt.stats()`'s
kernels compiled and, of them, generic. `speed`: each idiom of `IDIOMS` is timed at its size in processes that
take turns for `--rounds` rounds, each first running the idiom at two smaller sizes: one specialized
(`LT_SYMBOLIC=0`), one whose size then runs the generic kernels (checked: it compiles nothing there), each size
after the first compiled as one that changed (a sequence's length: strides that are sizes read at runtime,
`symbolic.symbolized`); prints each one's
best time and their ratio (generic / specialized, below 1 is faster).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

import lazytensor as lt
from lazytensor import nn, optim
from lazytensor.kernels.llvm import runtime

f32 = np.float32


def mlp_step(batch: int, rng: np.random.Generator) -> None:
    """Two training steps of bench_train.py's MLP (784-512-512-10, cross-entropy, Adam) on a batch of `batch`."""
    lt.manual_seed(0)
    model = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))
    opt = optim.Adam(model.parameters(), lr=1e-3)
    xb, yb = lt.asarray(rng.random((batch, 784), dtype=f32)), lt.asarray(rng.integers(0, 10, batch))
    for _ in range(2):  # Adam's second step has its own graph
        loss = nn.functional.cross_entropy(model(xb), yb)
        opt.zero_grad()
        loss.backward()
        opt.step()
        lt.realize(loss, *model.parameters())


sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples"))
import gpt

BLOCK = gpt.gpt(lt, blocks=1, vocab=64, width=64, heads=4, seq=1).blocks[0]


def gpt_block(length: int, rng: np.random.Generator) -> None:
    """examples/gpt.py's block (width 64, 4 heads of causal attention, a GELU MLP) over 2 sequences of `length`."""
    BLOCK(lt.asarray(rng.standard_normal((2, length, 64), dtype=f32))).realize()


def layernorm(x: lt.Tensor) -> lt.Tensor:
    mean = x.mean(-1, keepdims=True)
    return (x - mean) / ((x - mean) ** 2).mean(-1, keepdims=True).add(1e-5).sqrt()


def causal_softmax(x: lt.Tensor) -> lt.Tensor:
    t = x.shape[-1]
    keep = lt.arange(t, device=x.device)[:, None] >= lt.arange(t, device=x.device)[None, :]
    return lt.where(keep, x, float("-inf")).softmax(-1)


def attention_grads(q: lt.Tensor, k: lt.Tensor, v: lt.Tensor) -> tuple[lt.Tensor, lt.Tensor, lt.Tensor]:
    """The gradients of `(o * o).sum()` with respect to q, k and v, for attention's output `o`."""
    q, k, v = (x.requires_grad_() for x in (q, k, v))
    o = (q @ k.transpose(-1, -2)).softmax(-1) @ v
    (o * o).sum().backward()
    return q.grad, k.grad, v.grad


def attention_dq(q: lt.Tensor, k: lt.Tensor, v: lt.Tensor) -> lt.Tensor:
    """`attention_grads`' gradient with respect to q: attention's forward and backward."""
    return attention_grads(q, k, v)[0]


PROGRAMS: dict[str, Callable[[int, np.random.Generator], None]] = {
    "(x*2+1).sum(-1), x of batch x 1000": lambda b, rng: (lt.asarray(rng.random((b, 1000), dtype=f32)) * 2 + 1)
    .sum(-1).realize(),
    "layernorm by hand, batch x 768": lambda b, rng: layernorm(lt.asarray(rng.random((b, 768), dtype=f32))).realize(),
    "MLP training step (bench_train.py), batch x 784": mlp_step,
    "(x*2).sum(0), x of batch x 1000": lambda b, rng: (lt.asarray(rng.random((b, 1000), dtype=f32)) * 2).sum(0)
    .realize(),
    "x.mean(), x of batch x 1000": lambda b, rng: lt.asarray(rng.random((b, 1000), dtype=f32)).mean().realize(),
    # the batch is the sequences' length: the attention's softmax, whose indexes hold it as strides, compiles once
    # (`symbolic.symbolized`), as do its batched products, with their epilogues (the backward's transposes)
    "GPT block forward (examples/gpt.py), 2 x batch x 64": gpt_block,
    "attention forward and backward, 2x4xbatchx32": lambda b, rng: lt.realize(
        *attention_grads(*(lt.asarray(rng.standard_normal((2, 4, b, 32), dtype=f32)) for _ in range(3)))),
}

# name -> (the inputs at `rows` rows, the idiom); the rows are each idiom's outermost output loop or a reduction's
# loop (a column reduction's batch, the elements of a full reduction). Column and full reductions whose work
# splits into partial reductions (from `runtime.SPLIT_MIN_WORK`, 2**21 terms) specialize: these are below it.
IDIOMS: dict[str, tuple[Callable[[np.random.Generator, int], list[np.ndarray]], Callable[..., lt.Tensor], int]] = {
    "(x*y+z).sum(-1) 4096x4096": (lambda rng, n: [rng.standard_normal((n, 4096), dtype=f32) for _ in range(3)],
                                  lambda x, y, z: (x * y + z).sum(-1), 4096),
    "x.softmax(-1) 4096x1024": (lambda rng, n: [rng.standard_normal((n, 1024), dtype=f32)],
                                lambda x: x.softmax(-1), 4096),
    "layernorm by hand 4096x1024": (lambda rng, n: [rng.standard_normal((n, 1024), dtype=f32)], layernorm, 4096),
    "sigmoid 1/(1 + exp(-x)) 2**22": (lambda rng, n: [rng.standard_normal(n, dtype=f32)],
                                      lambda x: 1 / (1 + (-x).exp()), 1 << 22),
    "x*2+1 2**22": (lambda rng, n: [rng.standard_normal(n, dtype=f32)], lambda x: x * 2 + 1, 1 << 22),
    "g.sum(0) 256x512 (bias gradient)": (lambda rng, n: [rng.standard_normal((n, 512), dtype=f32)],
                                         lambda g: g.sum(0), 256),
    "x.mean(axis=0) 256x4096": (lambda rng, n: [rng.standard_normal((n, 4096), dtype=f32)],
                                lambda x: x.mean(axis=0), 256),
    "x.argmax(axis=0) 256x4096": (lambda rng, n: [rng.standard_normal((n, 4096), dtype=f32)],
                                  lambda x: x.argmax(axis=0), 256),
    "(x ** 2).sum() 1000": (lambda rng, n: [rng.standard_normal(n, dtype=f32)], lambda x: (x ** 2).sum(), 1000),
    "((p - y)**2).mean() 1024x1024": (lambda rng, n: [rng.standard_normal((n, 1024), dtype=f32) for _ in range(2)],
                                      lambda p, y: ((p - y) ** 2).mean(), 1024),
    # contractions whose m, k or n is the batch (`gemm.generic_pack_kernels`)
    "x @ w.T 256x1024x1024 (a linear layer)": (
        lambda rng, n: [rng.standard_normal((n, 1024), dtype=f32), rng.standard_normal((1024, 1024), dtype=f32)],
        lambda x, w: x @ w.T, 256),
    "relu(x @ w + b) 256x512x512": (
        lambda rng, n: [rng.standard_normal((n, 512), dtype=f32), rng.standard_normal((512, 512), dtype=f32),
                        rng.standard_normal(512, dtype=f32)],
        lambda x, w, b: (x @ w + b).relu(), 256),
    "x.T @ g 784x512 over 256 (a weight gradient)": (
        lambda rng, n: [rng.standard_normal((n, 784), dtype=f32), rng.standard_normal((n, 512), dtype=f32)],
        lambda x, g: x.T @ g, 256),
    "x @ w.T + b 256x512, 10 columns (logits)": (
        lambda rng, n: [rng.standard_normal((n, 512), dtype=f32), rng.standard_normal((10, 512), dtype=f32),
                        rng.standard_normal(10, dtype=f32)],
        lambda x, w, b: x @ w.T + b, 256),
    "relu(x @ w + b) + r 4x256x256 -> 1024 (an MLP over sequences)": (
        lambda rng, n: [rng.standard_normal((4, n, 256), dtype=f32), rng.standard_normal((256, 1024), dtype=f32),
                        rng.standard_normal(1024, dtype=f32), rng.standard_normal((4, n, 1024), dtype=f32)],
        lambda x, w, b, r: (x @ w + b).relu() + r, 256),
    # kernels whose strides and inner loops are the length t (`symbolic.symbolized`): attention's softmax statistics
    "causal softmax 2x4xtxt, t = 256": (lambda rng, n: [rng.standard_normal((2, 4, n, n), dtype=f32)],
                                        lambda x: causal_softmax(x), 256),
    "(h, t, t) transposed * 2 + 1, 8x512x512": (lambda rng, n: [rng.standard_normal((8, n, n), dtype=f32)],
                                                lambda x: x.transpose(1, 2) * 2 + 1, 512),
    "w @ x.T 64x512 over 256": (
        lambda rng, n: [rng.standard_normal((64, 512), dtype=f32), rng.standard_normal((n, 512), dtype=f32)],
        lambda w, x: w @ x.T, 256),
    # attention's kernels over a length t: the softmax's max and sum over its 2*4*t rows of t (a reduction's loop
    # names t), batched products with an epilogue (a multiply and add, a transpose), the whole backward
    "softmax 2x4xtxt, t = 128": (lambda rng, n: [rng.standard_normal((2, 4, n, n), dtype=f32)],
                                 lambda x: x.softmax(-1), 128),
    "(p @ v) * r + 1, 8xtxt @ 8xtx64, t = 128": (
        lambda rng, n: [rng.standard_normal((8, n, n), dtype=f32), rng.standard_normal((8, n, 64), dtype=f32),
                        rng.standard_normal((8, n, 64), dtype=f32)],
        lambda p, v, r: (p @ v) * r + 1, 128),
    "(g.T @ p).T, 8x64xt @ 8xtxt, t = 128": (
        lambda rng, n: [rng.standard_normal((8, n, 64), dtype=f32), rng.standard_normal((8, n, n), dtype=f32)],
        lambda g, p: (g.transpose(-1, -2) @ p).transpose(-1, -2), 128),
    "attention's dq, 2x4xtx32, t = 128": (
        lambda rng, n: [rng.standard_normal((2, 4, n, 32), dtype=f32) for _ in range(3)], attention_dq, 128),
}


def count(name: str, sizes: int) -> dict:
    """In this process: the program `name` at batch sizes 1..`sizes`; the kernels compiled and, of them, generic."""
    rng = np.random.default_rng(0)
    lt.reset_stats()
    for b in range(1, sizes + 1):
        PROGRAMS[name](b, rng)
    s = lt.stats()
    return {"compiled": s.kernels_compiled, "generic": s.kernels_generic}


def speed(name: str, repeat: int) -> tuple[float, float]:
    """In this process: the best times of idiom `name`'s kernels at its size, run by the programs specialized for
    them and by the generic ones (made by compiling the idiom at two smaller sizes first), taking turns on the
    same buffers; the times of its kernels summed."""
    make, fn, n = IDIOMS[name]
    rng = np.random.default_rng(0)
    kernels = {rows: [item.kernel for item in lt.schedule(fn(*map(lt.asarray, make(rng, rows))))]
               for rows in (n - 2, n - 1, n)}
    for k in kernels[n - 2]:  # the first specializes
        runtime.compile_kernel(k)
    for rows in (n - 1, n):  # the second compiles the generic kernels, the size seen to change (`_changed_sizes`)
        runtime.compile_kernels(kernels[rows], changed=frozenset({rows}))
    specialized, generic = 0.0, 0.0
    for k in kernels[n]:
        program = runtime.compile_kernel(k)[0]
        if program.generic_over is None:
            sys.exit(f"{name}: {k.name} does not run generic")
        os.environ["LT_SYMBOLIC"] = "0"
        own = runtime._built(runtime._builder(k, False))[0]
        del os.environ["LT_SYMBOLIC"]
        arrays = [rng.standard_normal(b.size).astype(b.dtype.name) for b in k.buffers if not b.scratch]
        table, params = [a.ctypes.data for a in arrays], [1.0] * len(k.params)
        best = {id(own): float("inf"), id(program): float("inf")}
        for i in range(repeat):
            for p in (own, program) if i % 2 else (program, own):  # each goes first half the time
                t0 = time.perf_counter()
                p(table, params)
                best[id(p)] = min(best[id(p)], time.perf_counter() - t0)
        specialized += best[id(own)]
        generic += best[id(program)]
    return specialized, generic


def child(args: list[str], env: dict[str, str]) -> object:
    done = subprocess.run([sys.executable, str(Path(__file__)), *args], capture_output=True, text=True,
                          env={**os.environ, "LT_CACHE_DIR": "", **env}, check=False)
    if done.returncode != 0:
        sys.exit(done.stderr.strip())
    return json.loads(done.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, default=256, help="batch sizes 1..SIZES for the counts")
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--only", choices=["counts", "speed"], default=None)
    parser.add_argument("--match", default="", help="only the programs and idioms whose names hold this")
    parser.add_argument("--count", help=argparse.SUPPRESS)
    parser.add_argument("--speed", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.count:
        print(json.dumps(count(args.count, args.sizes)))
        return
    if args.speed:
        print(json.dumps(speed(args.speed, args.repeat)))
        return
    if args.only in (None, "counts"):
        print(f"kernels compiled over batch sizes 1..{args.sizes} (of them generic), LT_SYMBOLIC=0 -> on")
        for name in (name for name in PROGRAMS if args.match in name):
            off, on = (child(["--count", name, "--sizes", str(args.sizes)], {"LT_SYMBOLIC": flag}) for flag in "01")
            print(f"  {name:<50} {off['compiled']:>6} -> {on['compiled']:>4} ({on['generic']} generic)")
    if args.only in (None, "speed"):
        print(f"best of {args.repeat} runs taking turns, best of {args.rounds} processes: specialized, generic (ms), "
              "generic / specialized")
        for name in (name for name in IDIOMS if args.match in name):
            times = [child(["--speed", name, "--repeat", str(args.repeat)], {}) for _ in range(args.rounds)]
            special, generic = min(t[0] for t in times), min(t[1] for t in times)
            print(f"  {name:<40} {special * 1e3:9.3f} {generic * 1e3:9.3f} {generic / special:8.3f}")


if __name__ == "__main__":
    main()
