"""Models as people train them, step for step against torch: the small GPT of examples/gpt.py (token and
position embeddings, pre-LayerNorm causal attention, a GELU MLP, cross-entropy, a hand-written
gradient-norm clip, AdamW), the same code on both libraries, with the same weights.

They check what the scheduler decides on whole training steps (fusion across the forward pass, the
backward pass and the update; nodes that live tensors hold; optimizer state that rides on the next
realize), and that what `lt.schedule` shows is what `lt.realize` runs.
"""
from __future__ import annotations

import importlib
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

import lazytensor as lt
from lazytensor.graph import toposort

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples"))
from gpt import gpt, train_step

VOCAB, WIDTH, HEADS, SEQ, BATCH = 16, 16, 2, 8, 4


def models(blocks: int) -> tuple[lt.nn.Module, torch.nn.Module]:
    """The GPT of examples/gpt.py on both libraries, with torch's initial weights in both."""
    torch.manual_seed(0)
    tmodel = gpt(torch, blocks, VOCAB, WIDTH, HEADS, SEQ)
    torch.nn.init.normal_(tmodel.pos, std=0.02)
    model = gpt(lt, blocks, VOCAB, WIDTH, HEADS, SEQ)
    model.load_state_dict({k: v.detach().numpy() for k, v in tmodel.state_dict().items()})
    return model, tmodel


@pytest.mark.parametrize("blocks", [1, 2])
def test_a_small_gpt_trains_step_for_step_as_torch(blocks):
    model, tmodel = models(blocks)
    # Adam's step is m / (sqrt(v) + eps): where a gradient is as small as float32's rounding of the larger
    # ones (a unit GELU leaves nearly off), a tiny eps makes the step a ratio of two rounding errors. An eps
    # well above that keeps every step a function of the gradient, comparable between two libraries.
    opt = lt.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.1, eps=1e-6)
    topt = torch.optim.AdamW(tmodel.parameters(), lr=1e-2, weight_decay=0.1, eps=1e-6)
    rng = np.random.default_rng(0)
    params, tparams = list(model.parameters()), list(tmodel.parameters())
    for _ in range(3):
        idx, targets = rng.integers(0, VOCAB, (BATCH, SEQ)), rng.integers(0, VOCAB, (BATCH * SEQ,))
        loss, logits = train_step(lt, model, opt, lt.asarray(idx), lt.asarray(targets), 0.5)
        lt.realize(loss, *params)
        tloss, tlogits = train_step(torch, tmodel, topt, torch.from_numpy(idx), torch.from_numpy(targets), 0.5)
        np.testing.assert_allclose(loss.item(), tloss.item(), rtol=1e-5)
        np.testing.assert_allclose(logits.numpy(), tlogits.detach().numpy(), rtol=1e-4, atol=1e-5)
        for (name, p), tp in zip(model.named_parameters(), tparams):
            largest = np.abs(tp.grad.numpy()).max()  # float32 sums are exact to their largest term's rounding
            np.testing.assert_allclose(p.grad.numpy(), tp.grad.numpy(), rtol=1e-4, atol=1e-5 * largest, err_msg=name)
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
    model, _ = models(2)  # which realizes its initial weights (`nn.init`): schedules of their own, not watched
    planned, lowered = [], []
    pass_down, lower = schedule_module._Planner.pass_down, schedule_module.lower
    monkeypatch.setattr(schedule_module._Planner, "pass_down",
                        lambda self, node, uses: planned.append(node) or pass_down(self, node, uses))
    monkeypatch.setattr(schedule_module, "lower", lambda *a, **k: lowered.append(a[0]) or lower(*a, **k))
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


def spatial_transformer(lib: Any) -> Any:
    """PyTorch's Spatial Transformer Networks tutorial's model, smaller (20x20 images, fewer channels, no
    dropout, whose draws differ between the libraries), built with `lib` (lazytensor or torch): a localisation
    net predicts an affine map, initialised to the identity, whose grid resamples the input for a small CNN."""
    nn, F = lib.nn, lib.nn.functional

    class Net(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv1, self.conv2 = nn.Conv2d(1, 6, 5), nn.Conv2d(6, 8, 3)
            self.fc = nn.Linear(8 * 3 * 3, 10)
            self.localization = nn.Sequential(nn.Conv2d(1, 4, 5), nn.MaxPool2d(2), nn.ReLU(True),
                                              nn.Conv2d(4, 6, 3), nn.MaxPool2d(2), nn.ReLU(True))
            self.fc_loc = nn.Sequential(nn.Linear(6 * 3 * 3, 16), nn.ReLU(True), nn.Linear(16, 3 * 2))

        def stn(self, x: Any) -> Any:
            theta = self.fc_loc(self.localization(x).reshape(-1, 6 * 3 * 3)).reshape(-1, 2, 3)
            return F.grid_sample(x, F.affine_grid(theta, x.shape, align_corners=False), align_corners=False)

        def forward(self, x: Any) -> Any:
            x = self.stn(x)
            x = F.relu(F.max_pool2d(self.conv1(x), 2))
            x = F.relu(F.max_pool2d(self.conv2(x), 2))
            return F.log_softmax(self.fc(x.reshape(-1, 8 * 3 * 3)), dim=1)

    return Net()


def test_a_spatial_transformer_trains_step_for_step_as_torch():
    torch.manual_seed(1)
    tmodel = spatial_transformer(torch)
    with torch.no_grad():  # the tutorial's start: the identity map
        tmodel.fc_loc[2].weight.zero_()
        tmodel.fc_loc[2].bias.copy_(torch.tensor([1, 0, 0, 0, 1, 0], dtype=torch.float32))
    model = spatial_transformer(lt)
    model.load_state_dict({k: v.detach().numpy() for k, v in tmodel.state_dict().items()})
    opt = lt.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    topt = torch.optim.SGD(tmodel.parameters(), lr=0.05, momentum=0.9)
    rng = np.random.default_rng(2)
    for _ in range(3):
        images = rng.standard_normal((4, 1, 20, 20)).astype(np.float32)
        labels = rng.integers(0, 10, (4,))
        losses = []
        for lib, net, optimizer in ((lt, model, opt), (torch, tmodel, topt)):
            optimizer.zero_grad()
            loss = lib.nn.functional.nll_loss(net(lib.asarray(images)), lib.asarray(labels))
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
        np.testing.assert_allclose(losses[0], losses[1], rtol=1e-5)
        for (name, p), tp in zip(model.named_parameters(), tmodel.parameters()):
            largest = np.abs(tp.grad.numpy()).max()  # float32 sums are exact to their largest term's rounding
            np.testing.assert_allclose(p.grad.numpy(), tp.grad.numpy(), rtol=1e-4, atol=1e-5 * largest, err_msg=name)
            np.testing.assert_allclose(p.numpy(), tp.detach().numpy(), rtol=1e-4, atol=1e-5, err_msg=name)
