"""One training step (forward, backward, optimizer update) of an MLP, a small CNN and a small transformer:
lazytensor, lazily and under `lt.jit`, against torch eager, torch.compile and jax.jit on the CPU (each when
installed: `pip install -e ".[bench]"`), in one run.

    python benchmarks/bench_train.py [--repeat 20] [--rounds 3] [--only mlp|cnn|gpt] [--threads N]

- MLP 784-512-512-10 (ReLU), batch 256, cross-entropy, Adam;
- the small CNN of examples/train_digits.py (conv 1->16 3x3, relu, maxpool 2, conv 16->32 3x3, relu,
  maxpool 2, dropout, linear 128->10) on 8x8 images, batch 64;
- the GPT of examples/gpt.py (2 pre-LayerNorm blocks of width 64, 4 heads of causal
  scaled_dot_product_attention, GELU MLP), 16 windows of 32 characters, gradient clipping, AdamW (no jax
  version).

Every contestant builds the same model with the same initialization scheme (not the same numbers) and
trains it on one fixed batch. Each contestant runs in a process of its own, so no library's idle worker
threads (torch's OpenMP threads spin after their work) take a core from another's; the contestants take
turns, a process each per round, for `--rounds` rounds, so that a slow spell of a shared machine does not
fall on one of them only. Prints the median over the rounds of each round's median time per step after
warm-up (compiling and scheduling excluded), lazytensor's kernels per step (`lt.stats().kernels_launched`), the first step's time
(schedule + compile), the ratio of lazytensor's time, lazy and jitted, to each peer's (below 1 is
faster), and each contestant's loss at its first and last step: a loss that does not go down marks a
broken step, and the script then exits with status 1. The jitted step is first checked against the lazy
one: the same losses and parameters, bit for bit, over its recorded and replayed steps (else status 1).
On a shared machine, torch's default OpenMP threads slow down by 10-100x when other processes compete
for the cores; `--threads 1` compares single threads.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

import lazytensor as lt
from lazytensor import nn, optim

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples"))
import gpt
import train_digits

TEXT = np.frombuffer(Path(gpt.__file__).read_bytes(), np.uint8).astype(np.int64)


def median_time(step: Callable[[], object], repeat: int) -> float:
    """The median time of `repeat` steps."""
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        step()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


GPT = {"blocks": 2, "vocab": 256, "width": 64, "heads": 4, "seq": 32}  # examples/gpt.py's defaults


def batches(kind: str, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    if kind == "mlp":
        return rng.random((256, 784), dtype=np.float32), rng.integers(0, 10, 256)
    if kind == "gpt":  # a batch of 16 windows of examples/gpt.py's own text, and their next characters
        return next(gpt.batches(TEXT, GPT["seq"], 16))
    return rng.random((64, 1, 8, 8), dtype=np.float32), rng.integers(0, 10, 64)


# ---- lazytensor -------------------------------------------------------------------------------------


def lazytensor_step(kind: str, x: np.ndarray, y: np.ndarray) -> tuple[Callable[[], float], Callable[[], object]]:
    lt.manual_seed(0)
    xb, yb = lt.asarray(x), lt.asarray(y)
    if kind == "gpt":
        model = gpt.gpt(lt, **GPT)
        opt = optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)

        def gpt_step() -> lt.Tensor:
            loss, _ = gpt.train_step(lt, model, opt, xb, yb, 1.0)
            lt.realize(loss, *model.parameters())
            return loss

        return gpt_step, model
    model = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10)) \
        if kind == "mlp" else train_digits.cnn()
    opt = optim.Adam(model.parameters(), lr=1e-3)

    def step() -> lt.Tensor:
        loss = nn.functional.cross_entropy(model(xb), yb)
        opt.zero_grad()
        loss.backward()
        opt.step()
        lt.realize(loss, *model.parameters())
        return loss

    return step, model


def jitted_step(kind: str, x: np.ndarray, y: np.ndarray, steps: int = 6) -> tuple[Callable[[], object], float]:
    """`lt.jit` of lazytensor's step and its first loss, after checking that its first `steps` steps
    (recorded, then replayed) give the lazy step's losses and parameters exactly, from the same random
    state (the CNN's dropout)."""
    step, model = lazytensor_step(kind, x, y)
    jstep, jmodel = lazytensor_step(kind, x, y)
    jstep = lt.jit(jstep)
    rng = lt.random.get_rng_state()
    expected = [(step().numpy(), [p.numpy().copy() for p in model.parameters()]) for _ in range(steps)]
    lt.random.set_rng_state(rng)
    for loss, params in expected:
        got = jstep().numpy()
        if not (np.array_equal(got, loss) and all(np.array_equal(p.numpy(), q) for p, q in zip(jmodel.parameters(),
                                                                                            params))):
            sys.exit(f"{kind}: the jitted step differs from the lazy one")
    if lt.stats().replays == 0:
        sys.exit(f"{kind}: the jitted step never replayed")
    return jstep, float(expected[0][0])


# ---- torch eager ------------------------------------------------------------------------------------


def torch_step(kind: str, x: np.ndarray, y: np.ndarray, compiled: bool = False) -> Callable[[], object] | None:
    """torch's step, eager or with its model under `torch.compile` (`compiled`)."""
    try:
        import torch
    except ImportError:
        return None
    torch.manual_seed(0)
    tn = torch.nn
    xb, yb = torch.from_numpy(x), torch.from_numpy(y)
    if kind == "gpt":
        model = gpt.gpt(torch, **GPT)
        opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)
        forward = torch.compile(model) if compiled else model

        def gpt_step() -> object:
            loss, _ = gpt.train_step(torch, forward, opt, xb, yb, 1.0)
            return loss.item()

        return gpt_step
    if kind == "mlp":
        model = tn.Sequential(tn.Linear(784, 512), tn.ReLU(), tn.Linear(512, 512), tn.ReLU(), tn.Linear(512, 10))
    else:
        model = tn.Sequential(tn.Conv2d(1, 16, 3, padding=1), tn.ReLU(), tn.MaxPool2d(2),
                              tn.Conv2d(16, 32, 3, padding=1), tn.ReLU(), tn.MaxPool2d(2),
                              tn.Flatten(), tn.Dropout(0.2), tn.Linear(128, 10))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    forward = torch.compile(model) if compiled else model

    def step() -> object:
        loss = tn.functional.cross_entropy(forward(xb), yb)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss.item()

    return step


# ---- jax.jit -------------------------------------------------------------------------------------------


def jax_step(kind: str, x: np.ndarray, y: np.ndarray) -> Callable[[], object] | None:
    """torch's model and Adam (lr 1e-3, betas 0.9 and 0.999, eps 1e-8) written out in jax, one jitted step (the
    MLP and the CNN; not the GPT)."""
    if kind == "gpt":
        return None
    try:
        import jax
        import jax.numpy as jnp
    except ImportError:
        return None
    rng = np.random.default_rng(0)

    def uniform(shape: tuple[int, ...], fan_in: int) -> object:
        b = 1 / np.sqrt(fan_in)
        return jnp.asarray(rng.uniform(-b, b, shape).astype(np.float32))

    if kind == "mlp":
        sizes = [(784, 512), (512, 512), (512, 10)]
        params = [(uniform((i, o), i), uniform((o,), i)) for i, o in sizes]

        def forward(params, xb, key):  # key: the MLP has no dropout
            h = xb
            for k, (w, b) in enumerate(params):
                h = h @ w + b
                if k < len(params) - 1:
                    h = jax.nn.relu(h)
            return h
    else:
        params = [(uniform((16, 1, 3, 3), 9), uniform((16,), 9)), (uniform((32, 16, 3, 3), 144), uniform((32,), 144)),
                  (uniform((128, 10), 128), uniform((10,), 128))]

        def conv(h, w, b):
            out = jax.lax.conv_general_dilated(h, w, (1, 1), ((1, 1), (1, 1)),
                                               dimension_numbers=("NCHW", "OIHW", "NCHW"))
            return out + b.reshape(1, -1, 1, 1)

        def pool(h):
            return jax.lax.reduce_window(h, -jnp.inf, jax.lax.max, (1, 1, 2, 2), (1, 1, 2, 2), "VALID")

        def dropout(h, key, p=0.2):
            """nn.Dropout(p) in training mode: zero each value with probability p, scale the rest by 1/(1-p)."""
            return jnp.where(jax.random.bernoulli(key, 1 - p, h.shape), h / (1 - p), 0.0)

        def forward(params, xb, key):
            h = pool(jax.nn.relu(conv(xb, *params[0])))
            h = pool(jax.nn.relu(conv(h, *params[1])))
            h = dropout(h.reshape(h.shape[0], -1), key)
            return h @ params[2][0] + params[2][1]

    def loss_fn(params, xb, yb, key):
        logp = jax.nn.log_softmax(forward(params, xb, key))
        return -jnp.mean(jnp.take_along_axis(logp, yb[:, None], axis=1))

    @jax.jit
    def train_step(params, m, v, t, key, xb, yb):
        key, dropout_key = jax.random.split(key)  # fresh dropout masks each step
        loss, grads = jax.value_and_grad(loss_fn)(params, xb, yb, dropout_key)
        t = t + 1
        m = jax.tree_util.tree_map(lambda m, g: 0.9 * m + 0.1 * g, m, grads)
        v = jax.tree_util.tree_map(lambda v, g: 0.999 * v + 0.001 * g * g, v, grads)
        def update(p, m, v):
            return p - 1e-3 / (1 - 0.9 ** t) * m / (jnp.sqrt(v / (1 - 0.999 ** t)) + 1e-8)
        params = jax.tree_util.tree_map(update, params, m, v)
        return params, m, v, t, key, loss

    state = {"params": params, "m": jax.tree_util.tree_map(jnp.zeros_like, params),
             "v": jax.tree_util.tree_map(jnp.zeros_like, params), "t": jnp.asarray(0.0),
             "key": jax.random.PRNGKey(0)}
    xb, yb = jnp.asarray(x), jnp.asarray(y)

    def step() -> object:
        p, m, v, t, key, loss = train_step(state["params"], state["m"], state["v"], state["t"], state["key"], xb, yb)
        state.update(params=p, m=m, v=v, t=t, key=key)
        return float(loss)

    return step


CONTESTANTS = ("lazytensor", "lazytensor jit", "torch eager", "torch.compile", "jax.jit")
TITLES = {"mlp": "MLP 784-512-512-10, batch 256, Adam", "cnn": "small CNN on 1x8x8, batch 64, Adam",
          "gpt": "GPT of examples/gpt.py (2 blocks, width 64, 4 heads, SDPA), 16 x 32 tokens, AdamW"}


def contestant(kind: str, name: str, repeat: int) -> dict | None:
    """Time one contestant in this process: its median step after warm-up, its first and last loss, and for
    lazytensor its kernels per step and the first step's time; None if its library is not installed."""
    x, y = batches(kind, np.random.default_rng(0))
    found: dict = {}
    if name == "lazytensor":
        step, _ = lazytensor_step(kind, x, y)
        t0 = time.perf_counter()
        found["first_loss"] = step().item()
        found["first_seconds"] = time.perf_counter() - t0
        step()  # Adam's second step has its own graph (the moments exist now)
        step()
        lt.reset_stats()
        step()
        found["kernels"] = lt.stats().kernels_launched
        lt.reset_stats()
    elif name == "lazytensor jit":
        step, found["first_loss"] = jitted_step(kind, x, y)
    else:
        step = torch_step(kind, x, y, name == "torch.compile") if name.startswith("torch") else jax_step(kind, x, y)
        if step is None:
            return None
        found["first_loss"] = float(step())  # jax.jit and torch.compile compile here
        step()  # warm-up
        step()
    found["seconds"] = median_time(step, repeat)
    found["compiled"] = lt.stats().kernels_compiled
    found["last_loss"] = float(step())
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=20, help="timed steps per contestant and round")
    parser.add_argument("--only", choices=["mlp", "cnn", "gpt"], default=None)
    parser.add_argument("--rounds", type=int, default=3, help="rounds of one process per contestant")
    parser.add_argument("--threads", type=int, default=None,
                        help="threads for lazytensor and torch (LT_NUM_THREADS, torch.set_num_threads; "
                             "jax.jit keeps XLA's own); default: theirs")
    parser.add_argument("--contestant", nargs=2, metavar=("KIND", "NAME"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.threads is not None:
        os.environ["LT_NUM_THREADS"] = str(args.threads)  # read when the first parallel kernel runs
        try:
            import torch
            torch.set_num_threads(args.threads)
        except ImportError:
            pass
    if args.contestant:
        print(json.dumps(contestant(*args.contestant, args.repeat)))
        return
    broken: list[str] = []
    for kind in [args.only] if args.only else ["mlp", "cnn", "gpt"]:
        runs: dict[str, list[dict]] = {name: [] for name in CONTESTANTS}
        for _ in range(args.rounds):
            for name in CONTESTANTS:
                command = [sys.executable, __file__, "--contestant", kind, name, "--repeat", str(args.repeat)]
                if args.threads is not None:
                    command += ["--threads", str(args.threads)]
                done = subprocess.run(command, capture_output=True, text=True, check=False)
                if done.returncode != 0:
                    sys.exit(f"{kind}, {name}: {done.stderr.strip()}")
                if (found := json.loads(done.stdout)) is not None:
                    runs[name].append(found)
        runs = {name: found for name, found in runs.items() if found}
        times = {name: statistics.median(r["seconds"] for r in found) for name, found in runs.items()}
        ours, jitted = times["lazytensor"], times["lazytensor jit"]
        lazy = runs["lazytensor"][0]
        print(f"{TITLES[kind]}: median over {args.rounds} rounds of each contestant's median of {args.repeat} steps")
        print(f"  lazytensor: {lazy['kernels']} kernels/step, first step {lazy['first_seconds']:.1f} s (schedule + "
              f"compile), {lazy['compiled']} kernels compiled after warm-up")
        print(f"  {'':16}{'ms/step':>10}{'lazytensor / peer':>20}{'jit / peer':>12}{'loss first -> last':>24}")
        for name, t in times.items():
            ratio = "" if name == "lazytensor" else f"{ours / t:.2f}x"
            jit_ratio = "" if name == "lazytensor jit" else f"{jitted / t:.2f}x"
            first, last = runs[name][0]["first_loss"], runs[name][0]["last_loss"]
            loss = f"{first:.4f} -> {last:.4f}"
            if not last < first:  # also catches NaN
                broken.append(f"{kind} {name}")
                loss += "  (not decreasing!)"
            print(f"  {name:16}{t * 1e3:10.2f}{ratio:>20}{jit_ratio:>12}{loss:>24}")
    if broken:
        sys.exit(f"the loss did not go down for: {', '.join(broken)}")


if __name__ == "__main__":
    main()
