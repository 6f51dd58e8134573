"""Learning-rate schedules against torch.optim.lr_scheduler: the rates (and OneCycleLR's momentum) step for step,
and a schedule changes no kernel (the rate is a kernel parameter)."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import lazytensor as lt
from lazytensor import optim
from lazytensor.optim import lr_scheduler

pytestmark = pytest.mark.fast

SCHEDULES = {
    "StepLR": lambda m, o: m.StepLR(o, step_size=3, gamma=0.5),
    "MultiStepLR": lambda m, o: m.MultiStepLR(o, milestones=[2, 5, 5, 9], gamma=0.3),
    "ExponentialLR": lambda m, o: m.ExponentialLR(o, gamma=0.9),
    "LinearLR": lambda m, o: m.LinearLR(o, start_factor=0.25, end_factor=0.9, total_iters=6),
    "CosineAnnealingLR": lambda m, o: m.CosineAnnealingLR(o, T_max=5, eta_min=0.01),
    "LambdaLR": lambda m, o: m.LambdaLR(o, lr_lambda=[lambda e: 0.95 ** e, lambda e: 1 / (e + 1)]),
    "OneCycleLR": lambda m, o: m.OneCycleLR(o, max_lr=[0.5, 0.2], total_steps=20),
    "OneCycleLR three phases, linear": lambda m, o: m.OneCycleLR(o, max_lr=0.3, epochs=4, steps_per_epoch=5,
                                                                 three_phase=True, anneal_strategy="linear"),
}


def groups(library, opt_name: str):
    """An optimizer of two parameter groups in `library` (lazytensor or torch)."""
    zeros = (lambda s: lt.zeros(s).requires_grad_()) if library is lt else (lambda s: torch.zeros(s, requires_grad=True))
    params = [{"params": [zeros((3,))]}, {"params": [zeros((2, 2))], "lr": 0.05}]
    opt = {"SGD": lambda o: o.SGD(params, lr=0.1, momentum=0.9), "Adam": lambda o: o.Adam(params, lr=0.1)}[opt_name]
    return opt(optim if library is lt else torch.optim)


@pytest.mark.filterwarnings("ignore:Detected call of `lr_scheduler.step\\(\\)` before")  # torch's: no gradients here
@pytest.mark.parametrize("name", SCHEDULES)
@pytest.mark.parametrize("opt_name", ["SGD", "Adam"])
def test_rates_match_torch_step_for_step(name, opt_name):
    ours, theirs = groups(lt, opt_name), groups(torch, opt_name)
    a, b = SCHEDULES[name](lr_scheduler, ours), SCHEDULES[name](torch.optim.lr_scheduler, theirs)
    for _ in range(19):
        assert a.get_last_lr() == b.get_last_lr()
        for g, h in zip(ours.param_groups, theirs.param_groups):
            assert g["lr"] == h["lr"]
            assert g.get("momentum") == h.get("momentum") and tuple(g.get("betas", ())) == tuple(h.get("betas", ()))
        a.step()
        b.step()


def test_reduce_on_plateau_matches_torch():
    ours, theirs = groups(lt, "SGD"), groups(torch, "SGD")
    a = lr_scheduler.ReduceLROnPlateau(ours, factor=0.5, patience=2, cooldown=1, min_lr=[0.01, 0.02])
    b = torch.optim.lr_scheduler.ReduceLROnPlateau(theirs, factor=0.5, patience=2, cooldown=1, min_lr=[0.01, 0.02])
    for metric in [1.0, 0.9, 0.95, 0.95, 0.96, 0.97, 0.5, 0.6, 0.6, 0.6, 0.6, 0.6, 0.6, 0.6, 0.6]:
        a.step(metric)
        b.step(metric)
        assert a.get_last_lr() == b.get_last_lr()


def test_a_schedule_compiles_nothing_new():
    p = lt.asarray(np.ones(4, np.float32)).requires_grad_()
    opt = optim.SGD([p], lr=0.1)
    sched = lr_scheduler.CosineAnnealingLR(opt, T_max=10)
    for step in range(4):
        (p * p).sum().backward()
        opt.step()
        lt.realize(p)
        opt.zero_grad()
        sched.step()
        if step == 0:
            compiled = lt.stats().kernels_compiled
    assert lt.stats().kernels_compiled == compiled


def test_new_optimizers_match_torch():
    rng = np.random.default_rng(0)
    w0 = rng.standard_normal((4, 3)).astype(np.float32)
    configs = [(optim.RMSprop, torch.optim.RMSprop, {"lr": 0.01}),
               (optim.RMSprop, torch.optim.RMSprop, {"lr": 0.01, "momentum": 0.9, "centered": True,
                                                     "weight_decay": 0.1}),
               (optim.Adagrad, torch.optim.Adagrad, {"lr": 0.1}),
               (optim.Adagrad, torch.optim.Adagrad, {"lr": 0.1, "lr_decay": 0.05, "initial_accumulator_value": 0.2,
                                                     "weight_decay": 0.01, "maximize": True})]
    for ours_cls, torch_cls, kw in configs:
        p, q = lt.asarray(w0.copy()).requires_grad_(), torch.tensor(w0.copy(), requires_grad=True)
        a, b = ours_cls([p], **kw), torch_cls([q], **kw)
        for step in range(5):
            x = rng.standard_normal((2, 4)).astype(np.float32)
            loss_a = ((lt.asarray(x) @ p).tanh() ** 2).sum()
            loss_b = ((torch.tensor(x) @ q).tanh() ** 2).sum()
            a.zero_grad()
            b.zero_grad()
            loss_a.backward()
            loss_b.backward()
            a.step()
            b.step()
            np.testing.assert_allclose(p.numpy(), q.detach().numpy(), rtol=1e-5, atol=1e-6,
                                       err_msg=f"{ours_cls.__name__} {kw} step {step}")
