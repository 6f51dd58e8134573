"""Models as people train them, step for step against torch: a small GPT (token and position embeddings,
pre-LayerNorm causal attention, a GELU MLP, cross-entropy, a hand-written gradient-norm clip, AdamW),
written the way a PyTorch tutorial writes it, with the same weights in both.

They check what the scheduler decides on whole training steps (fusion across the forward pass, the
backward pass and the update; nodes that live tensors hold; optimizer state that rides on the next
realize), and that what `lt.schedule` shows is what `lt.realize` runs.
"""
from __future__ import annotations

import importlib
import math

import numpy as np
import pytest
import torch

import lazytensor as lt
from lazytensor import nn
from lazytensor.graph import toposort
from lazytensor.nn import functional as F

VOCAB, WIDTH, HEADS, SEQ, BATCH = 16, 16, 2, 8, 4


class Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(WIDTH), nn.LayerNorm(WIDTH)
        # no bias: the keys' would have a zero gradient (softmax ignores a shift), which Adam turns into noise
        self.qkv, self.proj = nn.Linear(WIDTH, 3 * WIDTH, bias=False), nn.Linear(WIDTH, WIDTH)
        self.fc1, self.fc2 = nn.Linear(WIDTH, 4 * WIDTH), nn.Linear(4 * WIDTH, WIDTH)

    def forward(self, x: lt.Tensor, mask: lt.Tensor) -> lt.Tensor:
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, -1)
        q, k, v = (z.reshape(b, t, HEADS, d // HEADS).transpose(1, 2) for z in (q, k, v))
        att = lt.where(mask, q @ k.transpose(-1, -2) / math.sqrt(d // HEADS), float("-inf")).softmax(-1)
        x = x + self.proj((att @ v).transpose(1, 2).reshape(b, t, d))
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))


class GPT(nn.Module):
    def __init__(self, blocks: int) -> None:
        super().__init__()
        self.emb = nn.Embedding(VOCAB, WIDTH)
        self.pos = nn.Parameter(lt.zeros(SEQ, WIDTH))
        self.blocks = nn.ModuleList([Block() for _ in range(blocks)])
        self.ln, self.head = nn.LayerNorm(WIDTH), nn.Linear(WIDTH, VOCAB)
        self.mask = lt.asarray(np.tril(np.ones((SEQ, SEQ), bool)))

    def forward(self, idx: lt.Tensor) -> lt.Tensor:
        x = self.emb(idx) + self.pos
        for block in self.blocks:
            x = block(x, self.mask)
        return self.head(self.ln(x))


class TorchBlock(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.ln1, self.ln2 = torch.nn.LayerNorm(WIDTH), torch.nn.LayerNorm(WIDTH)
        self.qkv, self.proj = torch.nn.Linear(WIDTH, 3 * WIDTH, bias=False), torch.nn.Linear(WIDTH, WIDTH)
        self.fc1, self.fc2 = torch.nn.Linear(WIDTH, 4 * WIDTH), torch.nn.Linear(4 * WIDTH, WIDTH)

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, -1)
        q, k, v = (z.reshape(b, t, HEADS, d // HEADS).transpose(1, 2) for z in (q, k, v))
        att = torch.where(mask, q @ k.transpose(-1, -2) / math.sqrt(d // HEADS), float("-inf")).softmax(-1)
        x = x + self.proj((att @ v).transpose(1, 2).reshape(b, t, d))
        return x + self.fc2(torch.nn.functional.gelu(self.fc1(self.ln2(x))))


class TorchGPT(torch.nn.Module):
    def __init__(self, blocks: int) -> None:
        super().__init__()
        self.emb = torch.nn.Embedding(VOCAB, WIDTH)
        self.pos = torch.nn.Parameter(torch.randn(SEQ, WIDTH) * 0.02)
        self.blocks = torch.nn.ModuleList([TorchBlock() for _ in range(blocks)])
        self.ln, self.head = torch.nn.LayerNorm(WIDTH), torch.nn.Linear(WIDTH, VOCAB)
        self.register_buffer("mask", torch.tril(torch.ones(SEQ, SEQ, dtype=torch.bool)))

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        x = self.emb(idx) + self.pos
        for block in self.blocks:
            x = block(x, self.mask)
        return self.head(self.ln(x))


def models(blocks: int) -> tuple[GPT, TorchGPT]:
    torch.manual_seed(0)
    tmodel = TorchGPT(blocks)
    model = GPT(blocks)
    model.load_state_dict({k: v.detach().numpy() for k, v in tmodel.state_dict().items() if k != "mask"})
    return model, tmodel


def clip_scale(squares: lt.Tensor | torch.Tensor, max_norm: float = 0.5) -> lt.Tensor | torch.Tensor:
    """The hand-written clip's factor, min(1, max_norm / norm), from the sum of the gradients' squares."""
    return (max_norm / (squares.sqrt() + 1e-6)).clip(max=1.0)


@pytest.mark.parametrize("blocks", [1, 2])
def test_a_small_gpt_trains_step_for_step_as_torch(blocks):
    model, tmodel = models(blocks)
    opt = lt.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.1)
    topt = torch.optim.AdamW(tmodel.parameters(), lr=1e-2, weight_decay=0.1)
    rng = np.random.default_rng(0)
    params, tparams = list(model.parameters()), list(tmodel.parameters())
    for step in range(3):
        idx, targets = rng.integers(0, VOCAB, (BATCH, SEQ)), rng.integers(0, VOCAB, (BATCH * SEQ,))
        logits = model(lt.asarray(idx))
        loss = F.cross_entropy(logits.reshape(BATCH * SEQ, VOCAB), lt.asarray(targets))
        opt.zero_grad()
        loss.backward()
        scale = clip_scale(sum((p.grad ** 2).sum() for p in params))
        for p in params:
            p.grad = p.grad * scale
        opt.step()
        lt.realize(loss, *params)

        tlogits = tmodel(torch.from_numpy(idx))
        tloss = torch.nn.functional.cross_entropy(tlogits.reshape(BATCH * SEQ, VOCAB), torch.from_numpy(targets))
        topt.zero_grad()
        tloss.backward()
        with torch.no_grad():
            tscale = clip_scale(sum((p.grad ** 2).sum() for p in tparams))
            for p in tparams:
                p.grad.mul_(tscale)
        topt.step()
        np.testing.assert_allclose(loss.item(), tloss.item(), rtol=1e-5)
        np.testing.assert_allclose(logits.numpy(), tlogits.detach().numpy(), rtol=1e-4, atol=1e-5)
        for (name, p), tp in zip(model.named_parameters(), tparams):
            np.testing.assert_allclose(p.numpy(), tp.detach().numpy(), rtol=1e-4, atol=1e-5, err_msg=name)


def test_the_schedule_shows_what_realize_runs_pending_state_included():
    """After `opt.step()` the moments and the step count ride on the next realize: `lt.schedule` of the
    same tensors lists those kernels too, and realize launches exactly its kernels."""
    model, _ = models(1)
    opt = lt.optim.AdamW(model.parameters(), lr=1e-2)
    params = list(model.parameters())
    idx = lt.asarray(np.random.default_rng(0).integers(0, VOCAB, (BATCH, SEQ)))
    for _ in range(2):
        loss = model(idx).sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
        shown = lt.schedule(loss, *params)
        state = [t for s in opt.state.values() for t in s.values()]
        assert all(any(n is t.node for item in shown for n in item.outputs) for t in state if not t.is_realized)
        lt.reset_stats()
        lt.realize(loss, *params)
        assert lt.stats().kernels_launched == len(shown)
        assert all(t.is_realized for t in state)


def test_each_node_is_planned_once_and_each_kernel_lowered_once(monkeypatch):
    """The scheduler decides on the graph, from the outputs down, and lowers each kernel once: it never
    lowers a candidate region to look at it, which made a two-block transformer's schedule take minutes."""
    schedule_module = importlib.import_module("lazytensor.schedule")
    planned, lowered = [], []
    pass_down, lower = schedule_module._Planner.pass_down, schedule_module.lower
    monkeypatch.setattr(schedule_module._Planner, "pass_down",
                        lambda self, node, uses: planned.append(node) or pass_down(self, node, uses))
    monkeypatch.setattr(schedule_module, "lower", lambda *a, **k: lowered.append(a[0]) or lower(*a, **k))
    model, _ = models(2)
    opt = lt.optim.AdamW(model.parameters())
    loss = model(lt.asarray(np.random.default_rng(0).integers(0, VOCAB, (BATCH, SEQ)))).sum()
    loss.backward()
    opt.step()
    sched = lt.schedule(loss, *model.parameters())
    nodes = {id(n) for n in toposort([schedule_module.storage(n) for n in sched.requested])}
    replanned = len(planned) - len({id(n) for n in planned})  # a view planned again as a kernel of its own
    assert {id(n) for n in planned} <= nodes and replanned <= len(sched)
    merged = sum(len(item.outputs) > 1 for item in sched)
    assert len(lowered) <= len(sched) + merged
