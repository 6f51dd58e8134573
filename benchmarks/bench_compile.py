"""What the first step of a model costs before it runs: scheduling, lowering and compiling, separately,
against torch.compile's and jax.jit's compile time for the same model (each when installed).

    python benchmarks/bench_compile.py [--only mlp,cnn,gpt1,gpt2,gpt4,gpt12,chain,loop] [--peers]

Every case runs in a fresh process (no compiled kernel or schedule is cached from another case):
- `mlp`: 784-512-512-10 (ReLU), batch 256, cross-entropy, Adam (as bench_train.py);
- `cnn`: the small CNN of examples/train_digits.py, batch 64, Adam;
- `gptN`: the GPT of examples/gpt.py with N blocks (width 256, 4 heads, sequence 64, batch 8,
  vocabulary 512): token and position embeddings, pre-LayerNorm causal attention and a GELU MLP per
  block, a final LayerNorm and head, cross-entropy, a hand-written gradient-norm clip (to 1.0) and
  AdamW; the same code on torch (jax.jit runs the same model written with jax.numpy);
- `chain`: elementwise chains of 100 to 10,000 ops on 4096 floats, scheduled (and lowered) only;
- `loop`: `a = a * 0.99 + 0.01; a.sum().item()` 200 times, never realizing `a` explicitly.

For the models: the graph-building time of the first step (forward, backward, update), then its
realize split into scheduling, lowering and compiling (`lt.stats()`), the kernels it launches and
compiles, and the third step (the second reads optimizer state the first made: from the third on,
every schedule and kernel is cached). For the chains: scheduling and lowering time, and scheduling per
graph node. With `--peers`, torch.compile and jax.jit compile the
same training step of the MLP and the GPTs (its first call, minus a later call's time).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples"))
from gpt import gpt, train_step

VOCAB, WIDTH, HEADS, SEQ, BATCH = 512, 256, 4, 64, 8
CHAINS = (100, 300, 1000, 3000, 10000)


# ---- lazytensor ------------------------------------------------------------------------------------


def lt_gpt(blocks: int):
    import lazytensor as lt
    model = gpt(lt, blocks, VOCAB, WIDTH, HEADS, SEQ)
    opt = lt.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.1)
    rng = np.random.default_rng(0)
    idx = lt.asarray(rng.integers(0, VOCAB, (BATCH, SEQ)))
    targets = lt.asarray(rng.integers(0, VOCAB, (BATCH * SEQ,)))
    return lambda: train_step(lt, model, opt, idx, targets, 1.0)[0], list(model.parameters())


def lt_mlp_or_cnn(kind: str):
    import train_digits

    import lazytensor as lt
    from lazytensor import nn, optim
    rng = np.random.default_rng(0)
    if kind == "mlp":
        model = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))
        x, y = rng.random((256, 784), dtype=np.float32), rng.integers(0, 10, 256)
    else:
        model = train_digits.cnn()
        x, y = rng.random((64, 1, 8, 8), dtype=np.float32), rng.integers(0, 10, 64)
    opt = optim.Adam(model.parameters(), lr=1e-3)
    xb, yb = lt.asarray(x), lt.asarray(y)
    params = list(model.parameters())

    def step():
        loss = nn.functional.cross_entropy(model(xb), yb)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss

    return step, params


def run_lazytensor_model(name: str) -> dict:
    import lazytensor as lt
    step, params = lt_gpt(int(name[3:])) if name.startswith("gpt") else lt_mlp_or_cnn(name)
    lt.realize(*params)
    lt.reset_stats()
    t0 = time.perf_counter()
    loss = step()
    built = time.perf_counter() - t0
    t1 = time.perf_counter()
    lt.realize(loss, *params)
    first = time.perf_counter() - t1 + built
    s = lt.stats()  # a snapshot: the first step's counts
    first_loss = loss.item()
    lt.realize(step(), *params)  # the second step has optimizer state to read: a new structure
    t2 = time.perf_counter()
    loss = step()
    lt.realize(loss, *params)
    third = time.perf_counter() - t2
    return {"case": name, "build_s": built, "schedule_s": s.schedule_seconds, "lower_s": s.lower_seconds,
            "compile_s": s.compile_seconds, "first_step_s": first, "third_step_s": third,
            "kernels": s.kernels_launched, "compiled": s.kernels_compiled, "loss": first_loss}


def run_chain() -> list[dict]:
    import lazytensor as lt
    from lazytensor.graph import toposort
    out = []
    for n in CHAINS:
        x = lt.asarray(np.random.default_rng(0).random(4096, dtype=np.float32))
        y = x
        for i in range(n):
            y = (y * 1.0001, y + 0.5, y.abs(), y - 0.25)[i % 4]
        nodes = len(toposort([y.node]))
        sched = lt.schedule(y)
        out.append({"case": f"chain{n}", "nodes": nodes, "kernels": len(sched), "schedule_s": sched.plan_seconds,
                    "lower_s": sched.lower_seconds, "us_per_node": sched.plan_seconds / nodes * 1e6})
    return out


def run_loop(iterations: int = 200) -> dict:
    import lazytensor as lt
    a = lt.asarray(np.random.default_rng(0).random(1000, dtype=np.float32))
    times = []
    for _ in range(iterations):
        t0 = time.perf_counter()
        a = a * 0.99 + 0.01
        a.sum().item()
        times.append(time.perf_counter() - t0)
    return {"case": "loop", "first5_ms": [round(t * 1e3, 2) for t in times[:5]],
            "median_10_100_us": float(np.median(times[10:100])) * 1e6,
            "median_100_200_us": float(np.median(times[100:])) * 1e6,
            "compiled": lt.stats().kernels_compiled, "total_s": sum(times)}


# ---- peers -----------------------------------------------------------------------------------------


def torch_step(name: str):
    import torch
    import torch.nn as tnn
    import torch.nn.functional as tF
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    if name != "mlp":
        model = gpt(torch, int(name[3:]), VOCAB, WIDTH, HEADS, SEQ)
        x = torch.from_numpy(rng.integers(0, VOCAB, (BATCH, SEQ)))
        y = torch.from_numpy(rng.integers(0, VOCAB, (BATCH * SEQ,)))
        opt = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.1)
        return lambda: train_step(torch, model, opt, x, y, 1.0)[0]
    model = tnn.Sequential(tnn.Linear(784, 512), tnn.ReLU(), tnn.Linear(512, 512), tnn.ReLU(), tnn.Linear(512, 10))
    x, y = torch.from_numpy(rng.random((256, 784), dtype=np.float32)), torch.from_numpy(rng.integers(0, 10, 256))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)

    def mlp_step():
        loss = tF.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss

    return mlp_step


def run_torch_compile(name: str) -> dict:
    import torch
    step = torch.compile(torch_step(name))
    t0 = time.perf_counter()
    step()
    first = time.perf_counter() - t0
    step()
    t1 = time.perf_counter()
    step()
    later = time.perf_counter() - t1
    return {"case": name, "peer": "torch.compile", "first_step_s": first, "compile_s": first - later}


def run_jax(name: str) -> dict:
    import jax
    import jax.numpy as jnp
    rng = np.random.default_rng(0)
    key = jax.random.PRNGKey(0)

    def dense(key, n_in, n_out):
        bound = 1 / n_in ** 0.5
        return {"w": jax.random.uniform(key, (n_in, n_out), minval=-bound, maxval=bound), "b": jnp.zeros(n_out)}

    def layer_norm(p, x):
        m = x.mean(-1, keepdims=True)
        v = ((x - m) ** 2).mean(-1, keepdims=True)
        return (x - m) / jnp.sqrt(v + 1e-5) * p["g"] + p["b"]

    def xent(logits, y):
        return -jnp.take_along_axis(jax.nn.log_softmax(logits), y[:, None], 1).mean()

    if name == "mlp":
        keys = jax.random.split(key, 3)
        params = [dense(keys[0], 784, 512), dense(keys[1], 512, 512), dense(keys[2], 512, 10)]
        x, y = jnp.asarray(rng.random((256, 784), dtype=np.float32)), jnp.asarray(rng.integers(0, 10, 256))

        def loss_fn(params):
            h = x
            for i, p in enumerate(params):
                h = h @ p["w"] + p["b"]
                h = jax.nn.relu(h) if i < 2 else h
            return xent(h, y)
        clip = False
    else:
        blocks = int(name[3:])
        keys = iter(jax.random.split(key, 4 + 4 * blocks))
        ln = lambda: {"g": jnp.ones(WIDTH), "b": jnp.zeros(WIDTH)}
        params = {"emb": jax.random.normal(next(keys), (VOCAB, WIDTH)),
                  "pos": jax.random.normal(next(keys), (SEQ, WIDTH)) * 0.02,
                  "blocks": [{"ln1": ln(), "ln2": ln(), "qkv": dense(next(keys), WIDTH, 3 * WIDTH),
                              "proj": dense(next(keys), WIDTH, WIDTH), "fc1": dense(next(keys), WIDTH, 4 * WIDTH),
                              "fc2": dense(next(keys), 4 * WIDTH, WIDTH)} for _ in range(blocks)],
                  "ln": ln(), "head": dense(next(keys), WIDTH, VOCAB)}
        x = jnp.asarray(rng.integers(0, VOCAB, (BATCH, SEQ)))
        y = jnp.asarray(rng.integers(0, VOCAB, (BATCH * SEQ,)))
        mask = jnp.tril(jnp.ones((SEQ, SEQ), bool))

        def loss_fn(params):
            h = params["emb"][x] + params["pos"]
            for p in params["blocks"]:
                a = layer_norm(p["ln1"], h) @ p["qkv"]["w"] + p["qkv"]["b"]
                q, k, v = (z.reshape(BATCH, SEQ, HEADS, WIDTH // HEADS).transpose(0, 2, 1, 3)
                           for z in jnp.split(a, 3, -1))
                att = jax.nn.softmax(jnp.where(mask, q @ k.transpose(0, 1, 3, 2) / (WIDTH // HEADS) ** 0.5,
                                               -jnp.inf), -1)
                h = h + (att @ v).transpose(0, 2, 1, 3).reshape(BATCH, SEQ, WIDTH) @ p["proj"]["w"] + p["proj"]["b"]
                m = jax.nn.gelu(layer_norm(p["ln2"], h) @ p["fc1"]["w"] + p["fc1"]["b"], approximate=False)
                h = h + m @ p["fc2"]["w"] + p["fc2"]["b"]
            logits = layer_norm(params["ln"], h) @ params["head"]["w"] + params["head"]["b"]
            return xent(logits.reshape(BATCH * SEQ, VOCAB), y)
        clip = True

    state = (params, jax.tree.map(jnp.zeros_like, params), jax.tree.map(jnp.zeros_like, params), 0)

    @jax.jit
    def train_step(state):
        params, m, v, t = state
        loss, grads = jax.value_and_grad(loss_fn)(params)
        if clip:
            norm = jnp.sqrt(sum((g ** 2).sum() for g in jax.tree.leaves(grads)))
            grads = jax.tree.map(lambda g: g * jnp.minimum(1.0 / (norm + 1e-6), 1.0), grads)
        t = t + 1
        m = jax.tree.map(lambda m, g: 0.9 * m + 0.1 * g, m, grads)
        v = jax.tree.map(lambda v, g: 0.999 * v + 0.001 * g * g, v, grads)
        params = jax.tree.map(lambda p, m, v: p - 3e-4 * (m / (1 - 0.9 ** t) / (jnp.sqrt(v / (1 - 0.999 ** t))
                                                                                  + 1e-8) + 0.1 * p), params, m, v)
        return loss, (params, m, v, t)

    t0 = time.perf_counter()
    loss, state = train_step(state)
    loss.block_until_ready()
    first = time.perf_counter() - t0
    t1 = time.perf_counter()
    loss, state = train_step(state)
    loss.block_until_ready()
    later = time.perf_counter() - t1
    return {"case": name, "peer": "jax.jit", "first_step_s": first, "compile_s": first - later}


# ---- driver ----------------------------------------------------------------------------------------


def child(case: str, peer: str | None) -> None:
    if peer == "torch":
        result: object = run_torch_compile(case)
    elif peer == "jax":
        result = run_jax(case)
    elif case == "chain":
        result = run_chain()
    elif case == "loop":
        result = run_loop()
    else:
        result = run_lazytensor_model(case)
    print("RESULT " + json.dumps(result))


def in_fresh_process(case: str, peer: str | None = None) -> object | None:
    """Run a case in a new process, cold: torch.compile's on-disk caches (Inductor's compiled graphs and
    kernels, which outlive a process) go to an empty directory of its own."""
    cmd = [sys.executable, __file__, "--child", case] + (["--peer", peer] if peer else [])
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=cache, TRITON_CACHE_DIR=cache)
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    if proc.returncode != 0 or not lines:
        print(f"  {case} ({peer or 'lazytensor'}) failed:\n{proc.stderr[-2000:]}", file=sys.stderr)
        return None
    return json.loads(lines[-1][len("RESULT "):])


def installed(module: str) -> bool:
    import importlib.util
    return importlib.util.find_spec(module) is not None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", default="mlp,cnn,gpt1,gpt2,gpt4,gpt12,chain,loop")
    parser.add_argument("--peers", action="store_true", help="also time torch.compile and jax.jit")
    parser.add_argument("--json", help="write every result to this file")
    parser.add_argument("--child")
    parser.add_argument("--peer")
    args = parser.parse_args()
    if args.child:
        child(args.child, args.peer)
        return
    cases = args.only.split(",")
    results = []
    models = [c for c in cases if c in ("mlp", "cnn") or c.startswith("gpt")]
    if models:
        print(f"{'model':<7} {'build':>8} {'schedule':>9} {'lower':>8} {'compile':>8} {'first step':>11} "
              f"{'kernels':>8} {'compiled':>9} {'3rd step':>9}")
    for case in models:
        r = in_fresh_process(case)
        if r is None:
            continue
        results.append(r)
        print(f"{case:<7} {r['build_s']:7.3f}s {r['schedule_s']:8.3f}s {r['lower_s']:7.3f}s {r['compile_s']:7.2f}s "
              f"{r['first_step_s']:10.2f}s {r['kernels']:8d} {r['compiled']:9d} {r['third_step_s'] * 1e3:7.1f}ms")
    if args.peers:
        peers = [p for p, module in (("torch", "torch"), ("jax", "jax")) if installed(module)]
        for case in (c for c in models if c != "cnn"):
            for peer in peers:
                r = in_fresh_process(case, peer)
                if r is not None:
                    results.append(r)
                    print(f"{case:<7} {r['peer']:<14} first step {r['first_step_s']:7.2f}s, "
                          f"compile {r['compile_s']:7.2f}s")
    if "chain" in cases:
        rows = in_fresh_process("chain") or []
        results.extend(rows)
        print(f"\n{'chain':<11} {'nodes':>6} {'kernels':>8} {'schedule':>9} {'per node':>9} {'lower':>8}")
        for r in rows:
            print(f"{r['case']:<11} {r['nodes']:6d} {r['kernels']:8d} {r['schedule_s'] * 1e3:7.1f}ms "
                  f"{r['us_per_node']:7.1f}us {r['lower_s'] * 1e3:6.1f}ms")
    if "loop" in cases and (r := in_fresh_process("loop")) is not None:
        results.append(r)
        print(f"\nlazy loop, 200 iterations: {r['total_s']:.2f}s, {r['compiled']} kernels compiled; first five "
              f"{r['first5_ms']} ms; median {r['median_10_100_us']:.0f}us (iterations 10-100), "
              f"{r['median_100_200_us']:.0f}us (100-200)")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
