"""A small GPT, written the way a PyTorch tutorial writes it, that runs on lazytensor or on torch unchanged.

    python examples/gpt.py                          # a character model of this file, 2 blocks, 300 steps
    python examples/gpt.py --blocks 4 --steps 1000

`gpt(lib, ...)` builds the model from a library's namespace (`lazytensor` or `torch`): token and
position embeddings, pre-LayerNorm blocks of causal self-attention (`scaled_dot_product_attention`) and a
GELU MLP, a final LayerNorm and a linear head. `benchmarks/bench_compile.py`, `benchmarks/bench_train.py` and
`tests/test_models.py` train it on both libraries. The training step below is the usual one: cross-entropy,
backward, a hand-written clip of the gradients' norm, AdamW; `main` runs it under `lt.jit` on this file's own
text, with a progress bar: the mean loss of the last 20 steps goes from 5.75 to about 1.5 in 300 steps
(about 4 s on 2 cores).
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np


def gpt(lib: ModuleType, blocks: int, vocab: int, width: int, heads: int, seq: int) -> Any:
    """The model, built with `lib` (lazytensor or torch)."""
    nn, F = lib.nn, lib.nn.functional

    class Block(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(width), nn.LayerNorm(width)
            # no bias on q, k, v (nanoGPT's choice): the keys' would get a zero gradient, since softmax
            # ignores a shift, and Adam would turn it into noise
            self.qkv, self.proj = nn.Linear(width, 3 * width, bias=False), nn.Linear(width, width)
            self.fc1, self.fc2 = nn.Linear(width, 4 * width), nn.Linear(4 * width, width)

        def forward(self, x: Any) -> Any:
            b, t, d = x.shape
            q, k, v = self.qkv(self.ln1(x)).split(d, -1)
            q, k, v = (z.reshape(b, t, heads, d // heads).transpose(1, 2) for z in (q, k, v))
            att = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.proj(att.transpose(1, 2).reshape(b, t, d))
            return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))

    class GPT(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.emb = nn.Embedding(vocab, width)
            self.pos = nn.Parameter(lib.zeros(seq, width))
            self.blocks = nn.ModuleList([Block() for _ in range(blocks)])
            self.ln, self.head = nn.LayerNorm(width), nn.Linear(width, vocab)

        def forward(self, idx: Any) -> Any:
            x = self.emb(idx) + self.pos
            for block in self.blocks:
                x = block(x)
            return self.head(self.ln(x))

    return GPT()


def clip_scale(squares: Any, max_norm: float) -> Any:
    """The factor of a gradient-norm clip, min(1, max_norm / norm), from the sum of the gradients' squares."""
    return (max_norm / (squares.sqrt() + 1e-6)).clip(max=1.0)


def train_step(lib: ModuleType, model: Any, opt: Any, idx: Any, targets: Any, max_norm: float) -> tuple[Any, Any]:
    """One training step as either library writes it: cross-entropy of the next token at every position,
    backward, the gradients scaled to a norm of at most `max_norm`, the optimizer's step. Returns the
    loss and the logits (lazy on lazytensor until realized)."""
    logits = model(idx)
    loss = lib.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets)
    opt.zero_grad()
    loss.backward()
    params = list(model.parameters())
    scale = clip_scale(sum((p.grad ** 2).sum() for p in params), max_norm)
    for p in params:
        p.grad = p.grad * scale
    opt.step()
    return loss, logits


def batches(text: np.ndarray, seq: int, batch: int, seed: int = 0) -> Any:
    """Random windows of the text: (inputs, next-token targets), forever."""
    rng = np.random.default_rng(seed)
    while True:
        starts = rng.integers(0, len(text) - seq - 1, batch)
        yield np.stack([text[s:s + seq] for s in starts]), np.stack([text[s + 1:s + seq + 1] for s in starts]).ravel()


def main() -> None:
    import lazytensor as lt
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--blocks", type=int, default=2)
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--seq", type=int, default=32)
    parser.add_argument("--batch", type=int, default=16)
    args = parser.parse_args()
    text = np.frombuffer(Path(__file__).read_bytes(), np.uint8).astype(np.int64)
    model = gpt(lt, args.blocks, 256, 64, 4, args.seq)
    params = list(model.parameters())
    opt = lt.optim.AdamW(params, lr=3e-3, weight_decay=0.01)
    step = lt.jit(lambda idx, targets: train_step(lt, model, opt, idx, targets, 1.0)[0])
    data = batches(text, args.seq, args.batch)
    t0, recent = time.perf_counter(), []
    live = sys.stdout.isatty()
    for k in range(args.steps):
        idx, targets = next(data)
        loss = step(lt.asarray(idx), lt.asarray(targets))
        recent = [*recent[-19:], loss]
        if live or k == args.steps - 1 or k % 100 == 0:
            mean = float(np.mean([r.item() for r in recent]))
            bar = "#" * (24 * (k + 1) // args.steps)
            start, end = ("\r" if live else ""), ("" if live and k < args.steps - 1 else "\n")
            print(f"{start}[{bar:<24}] step {k + 1:4d}/{args.steps}  loss {mean:.3f} (last 20)  "
                  f"{time.perf_counter() - t0:5.1f} s", end=end, flush=True)


if __name__ == "__main__":
    main()
