"""A small GPT, written the way a PyTorch tutorial writes it, that runs on lazytensor or on torch unchanged.

    python examples/gpt.py                          # a character model of this file, 2 blocks, 300 steps
    python examples/gpt.py --blocks 4 --steps 1000

`gpt(lib, ...)` builds the model from a library's namespace (`lazytensor` or `torch`): token and
position embeddings, pre-LayerNorm blocks of causal self-attention and a GELU MLP, a final LayerNorm
and a linear head. `benchmarks/bench_compile.py` and `tests/test_models.py` train it on both
libraries. The training step below is the usual one: cross-entropy, backward, a hand-written clip of
the gradients' norm, AdamW; each step is lazy until `lt.realize(loss, *params)`.
"""
from __future__ import annotations

import argparse
import math
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

        def forward(self, x: Any, mask: Any) -> Any:
            b, t, d = x.shape
            q, k, v = self.qkv(self.ln1(x)).split(d, -1)
            q, k, v = (z.reshape(b, t, heads, d // heads).transpose(1, 2) for z in (q, k, v))
            att = lib.where(mask, q @ k.transpose(-1, -2) / math.sqrt(d // heads), float("-inf")).softmax(-1)
            x = x + self.proj((att @ v).transpose(1, 2).reshape(b, t, d))
            return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))

    class GPT(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.emb = nn.Embedding(vocab, width)
            self.pos = nn.Parameter(lib.zeros(seq, width))
            self.blocks = nn.ModuleList([Block() for _ in range(blocks)])
            self.ln, self.head = nn.LayerNorm(width), nn.Linear(width, vocab)
            self.mask = lib.asarray(np.tril(np.ones((seq, seq), bool)))

        def forward(self, idx: Any) -> Any:
            x = self.emb(idx) + self.pos
            for block in self.blocks:
                x = block(x, self.mask)
            return self.head(self.ln(x))

    return GPT()


def clip_scale(squares: Any, max_norm: float) -> Any:
    """The factor of a gradient-norm clip, min(1, max_norm / norm), from the sum of the gradients' squares."""
    return (max_norm / (squares.sqrt() + 1e-6)).clip(max=1.0)


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
    rng = np.random.default_rng(0)
    t0 = time.perf_counter()
    for step in range(args.steps):
        starts = rng.integers(0, len(text) - args.seq - 1, args.batch)
        idx = np.stack([text[s:s + args.seq] for s in starts])
        targets = np.stack([text[s + 1:s + args.seq + 1] for s in starts]).reshape(-1)
        logits = model(lt.asarray(idx)).reshape(-1, 256)
        loss = lt.nn.functional.cross_entropy(logits, lt.asarray(targets))
        opt.zero_grad()
        loss.backward()
        scale = clip_scale(sum((p.grad ** 2).sum() for p in params), 1.0)
        for p in params:
            p.grad = p.grad * scale
        opt.step()
        lt.realize(loss, *params)
        if step % 50 == 0 or step == args.steps - 1:
            print(f"step {step:4d}  loss {loss.item():.3f}  ({time.perf_counter() - t0:.1f} s)")


if __name__ == "__main__":
    main()
