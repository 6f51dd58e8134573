"""Idioms: array programs written the way NumPy and PyTorch tutorials and real code write them (norms,
activations, a hand-written layernorm, attention, losses, statistics along every axis, scans, arg-reductions,
gathers, masks, concatenation, transposes, integer arithmetic, powers, small and large sizes, an eager loop of
small realizes, matmul, convolution, a training step), in lazytensor, NumPy, torch eager, torch.compile and
jax.jit, in one run, to find lazytensor's performance cliffs.

    python benchmarks/bench_idioms.py [--repeat 5] [--threads N] [--only SUBSTRING] [--no-compile]

Each idiom is written once for every library where they spell it alike (its first argument is the library's
module: `lt`, `np`, `torch`, `jnp`) and apart where they do not; a contestant that cannot express an idiom is
left out ("-"). Every contestant's first result is checked against NumPy's (torch eager's where NumPy has no
such op) before it is timed (torch.compile and jax.jit compile then); a wrong result or an exception is printed
under the idiom's row, and lazytensor's counts as a failure. Prints each contestant's best time, lazytensor's
time over NumPy's and over the best peer's (below 1 is faster), and a flag where lazytensor is slower than
NumPy or takes more than 1.25x the best peer's time. Torch's threads are set to lazytensor's; jax runs with
float64 enabled. `--no-compile` skips torch.compile, which takes seconds to compile each idiom.

`--fifo` runs the process at real-time priority (SCHED_FIFO 1, which root or CAP_SYS_NICE may set; its threads and
processes inherit it): on a machine that other work keeps busy, every contestant's worker threads then get the
cores when it runs, as on a quiet machine. Without it, on this 2-core VM under a load of 5-6, lazytensor's pool
thread often got no core in time (it ran for 1% of 2000 launches of `x + 1` on 2**20 float32: their chunks fell to
the calling thread), and torch's and jax's threads were held up alike: two-thread ratios were those of whichever got
a core. Other processes get what the kernel's
real-time limit leaves them (5% of the cores by default) while it runs: keep such runs short (`--only`).
"""
from __future__ import annotations

import argparse
import math
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import numpy as np
from suite import SETTLE_SECONDS, best_of, mismatch, numpy_softmax, to_numpy  # benchmarks/ is on sys.path

import lazytensor as lt
from lazytensor import nn, optim

Prepare = Callable[[list[np.ndarray]], Callable[[], object]]   # the inputs -> a call that computes the idiom
CONTESTANTS = ["lazytensor", "numpy", "torch", "torch.compile", "jax.jit"]
SLOW_VS_PEER = 1.25
f32 = np.float32


@dataclass
class Idiom:
    name: str
    make: Callable[[np.random.Generator], list[np.ndarray]]
    runs: dict[str, Prepare]        # contestant -> how it prepares its run; a contestant left out cannot express it


def written(fn: Callable[..., object], **spelled: Callable[..., object] | None) -> dict[str, Prepare]:
    """The runs of an idiom written as `fn(xp, *inputs)` for every library's module `xp`; `spelled` gives a
    library's own spelling (keys lazytensor, numpy, torch, jax), None where it has none."""
    import torch
    f = {lib: spelled.get(lib, fn) for lib in ("lazytensor", "numpy", "torch", "jax")}
    runs: dict[str, Prepare] = {}
    if f["lazytensor"]:
        def lazy(arrays: list[np.ndarray], g: Callable[..., object] = f["lazytensor"]) -> Callable[[], object]:
            ts = [lt.asarray(a) for a in arrays]
            return lambda: g(lt, *ts).realize()
        runs["lazytensor"] = lazy
    if f["numpy"]:
        runs["numpy"] = lambda arrays, g=f["numpy"]: (lambda: g(np, *arrays))
    if f["torch"]:
        def eager(arrays: list[np.ndarray], g: Callable[..., object] = f["torch"]) -> Callable[[], object]:
            ts = [torch.from_numpy(a) for a in arrays]
            return lambda: g(torch, *ts)

        def compiled(arrays: list[np.ndarray], g: Callable[..., object] = f["torch"]) -> Callable[[], object]:
            c, ts = torch.compile(g, dynamic=False), [torch.from_numpy(a) for a in arrays]
            return lambda: c(torch, *ts)
        runs["torch"], runs["torch.compile"] = eager, compiled
    if f["jax"]:
        def jitted(arrays: list[np.ndarray], g: Callable[..., object] = f["jax"]) -> Callable[[], object]:
            import jax
            import jax.numpy as jnp
            j, ts = jax.jit(partial(g, jnp)), [jnp.asarray(a) for a in arrays]
            return lambda: j(*ts).block_until_ready()
        runs["jax.jit"] = jitted
    return runs


def looped(body: Callable[[object], object], steps: int) -> dict[str, Prepare]:
    """An eager loop: `x = body(x)` `steps` times, each step's result computed before the next starts."""
    import torch

    def loop(convert: Callable[[np.ndarray], object],
             wrap: Callable[[Callable[[object], object]], Callable[[object], object]]) -> Prepare:
        def prepare(arrays: list[np.ndarray]) -> Callable[[], object]:
            start, step = convert(arrays[0]), wrap(body)

            def run() -> object:
                x = start
                for _ in range(steps):
                    x = step(x)
                return x
            return run
        return prepare

    def jitted(arrays: list[np.ndarray]) -> Callable[[], object]:
        import jax
        import jax.numpy as jnp
        def blocking(f: Callable[[object], object]) -> Callable[[object], object]:
            j = jax.jit(f)
            return lambda x: j(x).block_until_ready()
        return loop(jnp.asarray, blocking)(arrays)

    return {"lazytensor": loop(lt.asarray, lambda f: (lambda x: f(x).realize())),
            "numpy": loop(np.asarray, lambda f: f),
            "torch": loop(torch.from_numpy, lambda f: f),
            "torch.compile": loop(torch.from_numpy, lambda f: torch.compile(f, dynamic=False)),
            "jax.jit": jitted}


def sliced_loop(indexes: Callable[[tuple[int, ...]], list[tuple[slice, ...]]]) -> dict[str, Prepare]:
    """`relu(x[index] @ w).sum()` read on the host for each index of `indexes(x.shape)`, as a training loop reads
    its loss: the slices at every offset are one program, not one each."""
    import torch

    def loop(convert: Callable[[np.ndarray], object], step: Callable[[object, object], float]) -> Prepare:
        def prepare(arrays: list[np.ndarray]) -> Callable[[], object]:
            x, w = (convert(a) for a in arrays)
            return lambda: [step(x[index], w) for index in indexes(x.shape)]
        return prepare

    def jitted(arrays: list[np.ndarray]) -> Callable[[], object]:
        import jax
        import jax.numpy as jnp
        j = jax.jit(lambda xb, w: jnp.maximum(xb @ w, 0).sum())
        return loop(jnp.asarray, lambda xb, w: float(j(xb, w)))(arrays)

    def compiled(arrays: list[np.ndarray]) -> Callable[[], object]:
        c = torch.compile(lambda xb, w: (xb @ w).relu().sum(), dynamic=False)
        return loop(torch.from_numpy, lambda xb, w: c(xb, w).item())(arrays)

    return {"lazytensor": loop(lt.asarray, lambda xb, w: (xb @ w).relu().sum().item()),
            "numpy": loop(np.asarray, lambda xb, w: float(np.maximum(xb @ w, 0).sum())),
            "torch": loop(torch.from_numpy, lambda xb, w: (xb @ w).relu().sum().item()),
            "torch.compile": compiled, "jax.jit": jitted}


def minibatches(batch: int) -> dict[str, Prepare]:
    """A pass over x's rows in minibatches `x[i:i + batch]` (`sliced_loop`)."""
    return sliced_loop(lambda shape: [np.s_[i:i + batch] for i in range(0, shape[0], batch)])


def column_windows(width: int) -> dict[str, Prepare]:
    """A window of `width` columns sliding over x's columns one at a time, `x[:, i:i + width]` (`sliced_loop`): a
    convolution over time written as a loop, a crop at every offset."""
    return sliced_loop(lambda shape: [np.s_[:, i:i + width] for i in range(shape[1] - width + 1)])


def per_sample_sgd() -> dict[str, Prepare]:
    """The numpy-tutorials' "deep learning on MNIST from scratch" loop: one sample at a time through a 784-100-10
    ReLU network, its hit read on the host, the weights updated by hand-written backpropagation (without the
    tutorial's dropout, whose draws differ between libraries). The result is the last layer's weights."""
    import torch

    def step(xp: object, outer: Callable, image: object, label: object, w1: object, w2: object) -> tuple:
        """One sample's forward and update: the new weights and the hit."""
        pre = image @ w1
        hidden = (pre >= 0) * pre  # the tutorial's relu
        out = hidden @ w2
        delta = label - out
        hit = xp.argmax(out) == xp.argmax(label)
        return w1 + 0.005 * outer(image, (w2 @ delta) * (hidden > 0)), w2 + 0.005 * outer(hidden, delta), hit

    def loop(convert: Callable[[np.ndarray], object], fn: Callable[..., tuple]) -> Prepare:
        def prepare(arrays: list[np.ndarray]) -> Callable[[], object]:
            images, labels, w1_0, w2_0 = (convert(a) for a in arrays)

            def run() -> object:
                w1, w2, hits = w1_0, w2_0, 0
                for i in range(images.shape[0]):
                    w1, w2, hit = fn(images[i], labels[i], w1, w2)
                    hits += int(hit)
                return w2
            return run
        return prepare

    def jitted(arrays: list[np.ndarray]) -> Callable[[], object]:
        import jax
        import jax.numpy as jnp
        return loop(jnp.asarray, jax.jit(partial(step, jnp, jnp.outer)))(arrays)

    def compiled(arrays: list[np.ndarray]) -> Callable[[], object]:
        return loop(torch.from_numpy, torch.compile(partial(step, torch, torch.outer), dynamic=False))(arrays)

    return {"lazytensor": loop(lt.asarray, partial(step, lt, lt.outer)),
            "numpy": loop(np.asarray, partial(step, np, np.outer)),
            "torch": loop(torch.from_numpy, partial(step, torch, torch.outer)),
            "torch.compile": compiled, "jax.jit": jitted}


def training_step() -> dict[str, Prepare]:
    """One SGD step (lr 0.1) of an MLP 784-256-10 with ReLU and cross-entropy, written as each library's
    tutorials write it, from the same initial weights; the result is the last layer's updated weight."""
    import torch

    def lazy(arrays: list[np.ndarray]) -> Callable[[], object]:
        x, y, *params = arrays
        model = nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 10))
        model.load_state_dict(dict(zip(["0.weight", "0.bias", "2.weight", "2.bias"], map(lt.asarray, params))))
        opt, xb, yb = optim.SGD(model.parameters(), lr=0.1), lt.asarray(x), lt.asarray(y)

        def step() -> lt.Tensor:
            loss = nn.functional.cross_entropy(model(xb), yb)
            opt.zero_grad()
            loss.backward()
            opt.step()
            lt.realize(loss, *model.parameters())
            return model[2].weight
        return step

    def eager(arrays: list[np.ndarray], compile_model: bool = False) -> Callable[[], object]:
        x, y, *params = (torch.from_numpy(a) for a in arrays)
        model = torch.nn.Sequential(torch.nn.Linear(784, 256), torch.nn.ReLU(), torch.nn.Linear(256, 10))
        model.load_state_dict(dict(zip(["0.weight", "0.bias", "2.weight", "2.bias"], params)))
        opt, forward = torch.optim.SGD(model.parameters(), lr=0.1), torch.compile(model) if compile_model else model

        def step() -> object:
            loss = torch.nn.functional.cross_entropy(forward(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            return model[2].weight.detach()
        return step

    def jitted(arrays: list[np.ndarray]) -> Callable[[], object]:
        import jax
        import jax.numpy as jnp
        x, y, *init = (jnp.asarray(a) for a in arrays)

        def loss(params: list, x: object, y: object) -> object:
            w1, b1, w2, b2 = params
            logits = jax.nn.relu(x @ w1.T + b1) @ w2.T + b2
            return -jnp.take_along_axis(jax.nn.log_softmax(logits), y[:, None], 1).mean()

        update = jax.jit(lambda params, x, y: [p - 0.1 * g for p, g in zip(params, jax.grad(loss)(params, x, y))])
        state = [init]

        def step() -> object:
            state[0] = update(state[0], x, y)
            return state[0][2].block_until_ready()
        return step

    return {"lazytensor": lazy, "torch": eager, "torch.compile": partial(eager, compile_model=True), "jax.jit": jitted}


# ---- the idioms --------------------------------------------------------------------------------------------


class _Jax:
    """jax, imported when an idiom's jax spelling first runs: the tests run the idioms where jax is not installed."""

    def __getattr__(self, name: str) -> object:
        import jax
        return getattr(jax, name)


jax = _Jax()


def normal(*shapes: tuple[int, ...], dtype: type = f32) -> Callable[[np.random.Generator], list[np.ndarray]]:
    return lambda rng: [rng.standard_normal(s).astype(dtype) for s in shapes]


def gelu(xp: object, x: object) -> object:
    return 0.5 * x * (1 + xp.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))


def sigmoid(xp: object, x: object) -> object:
    return 1 / (1 + xp.exp(-x))


def layernorm(xp: object, x: object, g: object, b: object) -> object:
    m = x.mean(-1, keepdims=True)
    v = ((x - m) ** 2).mean(-1, keepdims=True)
    return (x - m) / xp.sqrt(v + 1e-5) * g + b


def numpy_cross_entropy(xp: object, logits: np.ndarray, y: np.ndarray) -> np.ndarray:
    m = logits.max(-1)
    lse = m + np.log(np.exp(logits - m[:, None]).sum(-1))
    return (lse - logits[np.arange(len(y)), y]).mean()


def statistics_idioms(d: Callable[[int], int]) -> list[Idiom]:
    """mean, var, std and max along axis 0, axis 1 and both, float32; var in float64 too (dimensions through `d`,
    see `idioms`)."""
    out = []
    for dtype, ops in ((f32, ("mean", "var", "std", "max")), (np.float64, ("var",))):
        for op in ops:
            for axis in (0, 1, None):
                call = f"x.{op}({'' if axis is None else f'axis={axis}'})"
                torch_op = {"var": lambda xp, x, a=axis: x.var(axis=a, correction=0),
                            "std": lambda xp, x, a=axis: x.std(axis=a, correction=0),
                            "max": lambda xp, x, a=axis: x.amax(axis=a)}
                out.append(Idiom(f"{call} {np.dtype(dtype).name} 2048x4096",
                                 normal((d(2048), d(4096)), dtype=dtype),
                                 written(lambda xp, x, o=op, a=axis: getattr(x, o)(axis=a),
                                         **({"torch": torch_op[op]} if op in torch_op else {}))))
    return out


def idioms(scale: int = 1) -> list[Idiom]:
    """The idioms at their benchmark sizes, or with every dimension divided by `scale` (down to 4 at least, a
    smaller dimension kept): the small copies are what the tests check on every backend. The names keep the
    full sizes."""
    def d(n: int) -> int:
        return max(min(n, 4), n // scale)
    big, small = d(d(1 << 22)), d(1000)
    vec = normal((big,))
    positive = lambda rng: [rng.random(big, dtype=f32) + 0.5]
    ints = lambda rng: [rng.integers(-1000, 1000, big).astype(np.int32), rng.integers(1, 100, big).astype(np.int32)]
    labels = lambda rng: [rng.standard_normal((d(4096), d(1000)), dtype=f32), rng.integers(0, d(1000), d(4096))]
    return [
        Idiom("np.linalg.norm(x, axis=-1) 4096x1024", normal((d(4096), d(1024))),
              written(lambda xp, x: xp.linalg.norm(x, axis=-1), torch=lambda xp, x: xp.linalg.norm(x, dim=-1))),
        Idiom("(x**2).sum(-1)**0.5 4096x1024", normal((d(4096), d(1024))),
              written(lambda xp, x: (x ** 2).sum(-1) ** 0.5)),
        Idiom("np.linalg.norm(x) 2**22", vec, written(lambda xp, x: xp.linalg.norm(x))),
        Idiom("GELU (tanh, x**3) 2**22", vec, written(gelu)),
        Idiom("softplus log(1 + exp(x)) 2**22", vec, written(lambda xp, x: xp.log(1 + xp.exp(x)))),
        Idiom("sigmoid 1/(1 + exp(-x)) 2**22", vec, written(sigmoid)),
        Idiom("relu np.maximum(x, 0) 2**22", vec,
              written(lambda xp, x: xp.maximum(x, 0), torch=lambda xp, x: xp.relu(x))),
        Idiom("np.where(x > 0, x, 0.01 * x) 2**22", vec, written(lambda xp, x: xp.where(x > 0, x, 0.01 * x))),
        Idiom("x[x > 0] 2**22", vec, written(lambda xp, x: x[x > 0], jax=None)),
        Idiom("layernorm ((x - m)**2).mean(-1) 8192x1024", normal((d(8192), d(1024)), (d(1024),), (d(1024),)),
              written(layernorm)),
        Idiom("softmax(q @ k.T / 8) @ v 8x1024x64", normal(*[(d(8), d(1024), d(64))] * 3),
              written(lambda xp, q, k, v: (q @ k.swapaxes(-1, -2) / 8).softmax(-1) @ v,
                      numpy=lambda xp, q, k, v: numpy_softmax(q @ k.transpose(0, 2, 1) / 8) @ v,
                      torch=lambda xp, q, k, v: xp.softmax(q @ k.transpose(-2, -1) / 8, -1) @ v,
                      jax=lambda xp, q, k, v: jax.nn.softmax(q @ k.swapaxes(-1, -2) / 8, -1) @ v)),
        Idiom("x.softmax(axis=0) 4096x4096", normal((d(4096), d(4096))),
              written(lambda xp, x: x.softmax(axis=0), numpy=lambda xp, x: numpy_softmax(x.T).T,
                      torch=lambda xp, x: x.softmax(0), jax=lambda xp, x: jax.nn.softmax(x, axis=0))),
        Idiom("np.exp(x) / np.exp(x).sum(-1, keepdims) 4096x1024", normal((d(4096), d(1024))),
              written(lambda xp, x: xp.exp(x) / xp.exp(x).sum(-1, keepdims=True))),
        Idiom("MSE ((p - y)**2).mean() 2**22", normal((big,), (big,)), written(lambda xp, p, y: ((p - y) ** 2).mean())),
        Idiom("cross-entropy by hand (logsumexp) 4096x1000", labels,
              written(lambda xp, x, y: (x.logsumexp(-1) - x[xp.arange(x.shape[0]), y]).mean(),
                      numpy=numpy_cross_entropy,
                      torch=lambda xp, x, y: (xp.logsumexp(x, -1) - x[xp.arange(len(y)), y]).mean(),
                      jax=lambda xp, x, y: (jax.nn.logsumexp(x, -1) - x[xp.arange(len(y)), y]).mean())),
        Idiom("F.cross_entropy(x, y) 4096x1000", labels,
              written(lambda xp, x, y: nn.functional.cross_entropy(x, y), numpy=None,
                      torch=lambda xp, x, y: xp.nn.functional.cross_entropy(x, y),
                      jax=lambda xp, x, y: -xp.take_along_axis(jax.nn.log_softmax(x), y[:, None], 1).mean())),
        *statistics_idioms(d),
        Idiom("x - x.mean(axis=0) 2048x4096", normal((d(2048), d(4096))), written(lambda xp, x: x - x.mean(axis=0))),
        Idiom("(x - x.mean(0)) / x.std(0) 2048x4096", normal((d(2048), d(4096))),
              written(lambda xp, x: (x - x.mean(0)) / x.std(0),
                      torch=lambda xp, x: (x - x.mean(0)) / x.std(0, correction=0))),
        Idiom("np.cumsum(x, axis=-1) 1024x4096", normal((d(1024), d(4096))),
              written(lambda xp, x: xp.cumsum(x, axis=-1))),
        Idiom("np.cumsum(x, axis=0) 1024x4096", normal((d(1024), d(4096))),
              written(lambda xp, x: xp.cumsum(x, axis=0))),
        Idiom("np.cumsum(x, axis=-1) 16384x256", normal((d(16384), d(256))),
              written(lambda xp, x: xp.cumsum(x, axis=-1))),
        Idiom("np.cumsum(x, axis=1) 64x256x256", normal((d(64), d(256), d(256))),
              written(lambda xp, x: xp.cumsum(x, axis=1))),
        Idiom("np.cumprod(x, axis=-1) 512x2048", lambda rng: [(rng.random((d(512), d(2048))) * 0.02 + 0.99).astype(f32)],
              written(lambda xp, x: xp.cumprod(x, axis=-1), torch=lambda xp, x: xp.cumprod(x, -1))),
        Idiom("global average pool x.mean((2, 3)) 32x64x56x56", normal((d(32), d(64), d(56), d(56))),
              written(lambda xp, x: x.mean((2, 3)))),
        Idiom("batch-norm statistics x.var((0, 2, 3)) 32x64x56x56", normal((d(32), d(64), d(56), d(56))),
              written(lambda xp, x: x.var((0, 2, 3)), torch=lambda xp, x: x.var((0, 2, 3), correction=0))),
        Idiom("(x * 255).astype(uint8) 2**22", lambda rng: [rng.random(big, dtype=f32)],
              written(lambda xp, x: (x * 255).astype(xp.uint8), torch=lambda xp, x: (x * 255).to(xp.uint8))),
        Idiom("x.astype(int32) 2**22", lambda rng: [rng.random(big, dtype=f32) * 2000 - 1000],
              written(lambda xp, x: x.astype(xp.int32), torch=lambda xp, x: x.to(xp.int32))),
        Idiom("x.argmax(axis=0) 2048x4096", normal((d(2048), d(4096))), written(lambda xp, x: x.argmax(axis=0))),
        Idiom("x.argmax(axis=1) 2048x4096", normal((d(2048), d(4096))), written(lambda xp, x: x.argmax(axis=1))),
        Idiom("x[idx] 2**20 of 2**22", lambda rng: [rng.standard_normal(big, dtype=f32),
                                                    rng.integers(0, big, d(d(1 << 20)))], written(lambda xp, x, i: x[i])),
        Idiom("embedding rows E[tokens] 50000x128, 64x128 tokens",
              lambda rng: [rng.standard_normal((d(50000), d(128)), dtype=f32), rng.integers(0, d(50000), (d(64), d(128)))],
              written(lambda xp, e, t: e[t])),
        Idiom("np.histogram(x, 100) 2**20", normal((d(1 << 20),)),
              written(lambda xp, x: xp.histogram(x, 100)[0], torch=None)),
        Idiom("np.searchsorted(edges, x) 2**20 in 1000",
              lambda rng: [np.sort(rng.standard_normal(d(1000))).astype(f32), rng.standard_normal(d(1 << 20), dtype=f32)],
              written(lambda xp, a, v: xp.searchsorted(a, v))),
        Idiom("x.topk(10) of rows 4096x1000", normal((d(4096), d(1000))),
              written(lambda xp, x: x.topk(min(10, x.shape[-1])).values, numpy=None,
                      jax=lambda xp, x: jax.lax.top_k(x, min(10, x.shape[-1]))[0])),
        Idiom("np.clip(x, -1, 1) 2**22", vec, written(lambda xp, x: xp.clip(x, -1, 1))),
        Idiom("np.concatenate([a, b]) 2x 2048x4096", normal((d(2048), d(4096)), (d(2048), d(4096))),
              written(lambda xp, a, b: xp.concatenate([a, b]), torch=lambda xp, a, b: xp.cat([a, b]))),
        Idiom("np.stack([a, b, c], -1) 3x 1024x1024", normal(*[(d(1024), d(1024))] * 3),
              written(lambda xp, a, b, c: xp.stack([a, b, c], -1))),
        Idiom("x.T.contiguous() 4096x4096", normal((d(4096), d(4096))),
              written(lambda xp, x: x.T.contiguous(), numpy=lambda xp, x: np.ascontiguousarray(x.T),
                      jax=lambda xp, x: x.T)),
        Idiom("(a * 3 + b) % 7 int32 2**22", ints, written(lambda xp, a, b: (a * 3 + b) % 7)),
        Idiom("a // b int32 2**22", ints, written(lambda xp, a, b: a // b)),
        Idiom("((a[:, None] - b[None])**2).sum(-1) 512x1024x64", normal((d(512), d(64)), (d(1024), d(64))),
              written(lambda xp, a, b: ((a[:, None] - b[None]) ** 2).sum(-1))),
        Idiom("x[:, None] * y[None, :] 4096x4096", normal((d(4096),), (d(4096),)),
              written(lambda xp, x, y: x[:, None] * y[None, :])),
        Idiom("one-hot (y[:, None] == arange(1000)) 4096", lambda rng: [rng.integers(0, 1000, d(4096))],
              written(lambda xp, y: (y[:, None] == xp.arange(1000)).astype(xp.float32),
                      torch=lambda xp, y: (y[:, None] == xp.arange(1000)).float())),
        Idiom("(x ** 2).sum() 2**22", vec, written(lambda xp, x: (x ** 2).sum())),
        Idiom("x ** 0.5 2**22", positive, written(lambda xp, x: x ** 0.5)),
        Idiom("x ** 3 - x 2**22", vec, written(lambda xp, x: x ** 3 - x)),
        Idiom("x ** 3 - x 1000", normal((small,)), written(lambda xp, x: x ** 3 - x)),
        Idiom("(x ** 2).sum() 1000", normal((small,)), written(lambda xp, x: (x ** 2).sum())),
        Idiom("sigmoid 1/(1 + exp(-x)) 1000", normal((small,)), written(sigmoid)),
        Idiom("softmax of 1000", normal((small,)),
              written(lambda xp, x: x.softmax(-1), numpy=lambda xp, x: numpy_softmax(x),
                      torch=lambda xp, x: x.softmax(-1), jax=lambda xp, x: jax.nn.softmax(x))),
        Idiom("loop: 100x realize (x * 0.99 + 1) of 1000", normal((small,)), looped(lambda x: x * 0.99 + 1, 100)),
        Idiom("minibatch loop: relu(x[i:i + 64] @ w).sum() read, 4096x256 @ 256x64",
              normal((d(4096), d(256)), (d(256), d(64))), minibatches(d(64))),
        Idiom("column window loop: relu(x[:, i:i + 64] @ w).sum() read, 1024x127 @ 64x64",
              normal((d(1024), d(64) + d(63)), (d(64), d(64))), column_windows(d(64))),
        Idiom("per-sample SGD loop (numpy-tutorials MNIST), 64 samples, 784-100-10, float64",
              lambda rng: [rng.random((d(64), 784)), np.eye(10)[rng.integers(0, 10, d(64))],
                           0.2 * rng.random((784, 100)) - 0.1, 0.2 * rng.random((100, 10)) - 0.1],
              per_sample_sgd()),
        Idiom("relu(x @ w + b) 256x1024x1024", normal((d(256), d(1024)), (d(1024), d(1024)), (d(1024),)),
              written(lambda xp, x, w, b: xp.maximum(x @ w + b, 0), torch=lambda xp, x, w, b: xp.relu(x @ w + b))),
        Idiom("batched a @ b 64x128x128", normal(*[(d(64), d(128), d(128))] * 2), written(lambda xp, a, b: a @ b)),
        Idiom("v @ w (one sample through a layer) 4096x4096", normal((d(4096),), (d(4096), d(4096))),
              written(lambda xp, v, w: v @ w)),
        Idiom("w @ v 4096x4096", normal((d(4096), d(4096)), (d(4096),)), written(lambda xp, w, v: w @ v)),
        Idiom("x @ w, 3 rows 3x1024x1024", normal((d(3), d(1024)), (d(1024), d(1024))), written(lambda xp, x, w: x @ w)),
        Idiom("conv2d 16x64x56x56, 64 3x3 filters", lambda rng: normal((d(16), d(64), d(56), d(56)))(rng) + [
                  (rng.standard_normal((d(64), d(64), d(3), d(3))) / 24).astype(f32)],
              written(lambda xp, x, w: nn.functional.conv2d(x, w, padding=1), numpy=None,
                      torch=lambda xp, x, w: xp.nn.functional.conv2d(x, w, padding=1),
                      jax=lambda xp, x, w: jax.lax.conv_general_dilated(x, w, (1, 1), ((1, 1), (1, 1))))),
        Idiom("F.log_softmax(x, -1) 4096x1000", normal((d(4096), d(1000))),
              written(lambda xp, x: nn.functional.log_softmax(x, -1), numpy=None,
                      torch=lambda xp, x: xp.nn.functional.log_softmax(x, -1),
                      jax=lambda xp, x: jax.nn.log_softmax(x, -1))),
        Idiom("conv1d 16x64x1024, 64 filters of 5", lambda rng: normal((d(16), d(64), d(1024)))(rng) + [
                  (rng.standard_normal((d(64), d(64), 5)) / 16).astype(f32)],
              written(lambda xp, x, w: nn.functional.conv1d(x, w, padding=2), numpy=None,
                      torch=lambda xp, x, w: xp.nn.functional.conv1d(x, w, padding=2),
                      jax=lambda xp, x, w: jax.lax.conv_general_dilated(x, w, (1,), ((2, 2),)))),
        Idiom("MLP 784-256-10 training step, batch 128, SGD",
              lambda rng: [rng.random((d(128), 784), dtype=f32), rng.integers(0, 10, d(128)),
                           (rng.standard_normal((256, 784)) / 28).astype(f32), np.zeros(256, f32),
                           (rng.standard_normal((10, 256)) / 16).astype(f32), np.zeros(10, f32)],
              training_step()),
    ]


# ---- running and reporting ---------------------------------------------------------------------------------


def show(seconds: float) -> str:
    return f"{seconds * 1e6:.0f}us" if seconds < 1e-3 else f"{seconds * 1e3:.2f}ms"


def first_words(e: Exception) -> str:
    return f"{type(e).__name__}: {' '.join(str(e).split())[:150]}"


def run_idiom(idiom: Idiom, contestants: list[str], repeat: int) -> tuple[dict[str, float], dict[str, str]]:
    """Each contestant's best time, and what went wrong with those that failed or computed a wrong result;
    the reference is NumPy's result (torch eager's where NumPy cannot express the idiom)."""
    import torch
    torch.compiler.reset()      # each idiom compiles afresh: no recompile limit shared with the last idiom's
    arrays = idiom.make(np.random.default_rng(0))
    runs, results, problems = {}, {}, {}
    for name in [c for c in ("numpy", "torch") if c in contestants] + contestants:   # the reference first
        if name not in idiom.runs or name in results or name in problems:
            continue
        try:
            runs[name] = idiom.runs[name](arrays)
            results[name] = runs[name]()
        except Exception as e:  # noqa: BLE001 (a contestant that fails is reported in the table, not fatal)
            problems[name] = first_words(e)
            runs.pop(name, None)
    reference = next((to_numpy(results[c]).astype(np.float64) for c in ("numpy", "torch") if c in results), None)
    for name, result in results.items():
        if reference is not None and (wrong := mismatch(result, reference)) is not None:
            problems[name] = f"wrong result: {wrong}"
            del runs[name]
    times = {}
    for name, run in runs.items():
        time.sleep(SETTLE_SECONDS)    # let the last contestant's spinning worker threads go idle
        times[name] = best_of(run, repeat)
    return times, problems


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--threads", type=int, default=None, help="LT_NUM_THREADS and torch's threads")
    parser.add_argument("--only", default="", help="run the idioms whose name contains this")
    parser.add_argument("--no-compile", action="store_true", help="skip torch.compile")
    parser.add_argument("--fifo", action="store_true", help="run at real-time priority (see the docstring)")
    args = parser.parse_args()
    if args.threads:
        os.environ["LT_NUM_THREADS"] = str(args.threads)
    if args.fifo:  # before any thread starts: each inherits it
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(1))
    import jax
    import torch

    from lazytensor.kernels.llvm.runtime import num_threads
    torch.set_num_threads(num_threads())
    jax.config.update("jax_enable_x64", True)
    contestants = [c for c in CONTESTANTS if not (args.no_compile and c == "torch.compile")]
    selected = [i for i in idioms() if args.only in i.name]
    print(f"{'idiom':52}" + "".join(f"{c:>14}" for c in contestants) + f"{'lt/numpy':>10}{'lt/best':>9}  flag")
    flagged, failed = [], []
    for idiom in selected:
        times, problems = run_idiom(idiom, contestants, args.repeat)
        cells = [show(times[c]) if c in times else "FAILED" if c in problems else "-" for c in contestants]
        peers = [t for c, t in times.items() if c != "lazytensor"]
        flag = ""
        if "lazytensor" in times:
            ours = times["lazytensor"]
            vs_numpy = f"{ours / times['numpy']:.2f}x" if "numpy" in times else ""
            vs_best = f"{ours / min(peers):.2f}x" if peers else ""
            reasons = (["> numpy"] if "numpy" in times and ours > times["numpy"] else []) + \
                      ([f"> {SLOW_VS_PEER}x best"] if peers and ours > SLOW_VS_PEER * min(peers) else [])
            flag = ", ".join(reasons)
        else:
            vs_numpy = vs_best = ""
            flag = "LAZYTENSOR FAILED"
            failed.append(idiom.name)
        if flag and "lazytensor" in times:
            flagged.append(idiom.name)
        print(f"{idiom.name:52}" + "".join(f"{c:>14}" for c in cells) + f"{vs_numpy:>10}{vs_best:>9}  {flag}",
              flush=True)
        for c, problem in problems.items():
            print(f"    {c}: {problem}", flush=True)
    print(f"\n{len(selected)} idioms: {len(flagged)} flagged (slower than NumPy or over {SLOW_VS_PEER}x the best "
          f"peer), {len(failed)} failed in lazytensor")


if __name__ == "__main__":
    main()
