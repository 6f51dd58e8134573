"""Learning-rate schedules, as `torch.optim.lr_scheduler`: each `step()` sets every parameter group's "lr" (a
Python scalar, so a kernel parameter: a schedule never recompiles a kernel), with PyTorch's formulas, recursive
where PyTorch's are, so the rates agree with PyTorch's to the last bit.

    opt = optim.SGD(model.parameters(), lr=0.1)
    sched = optim.lr_scheduler.CosineAnnealingLR(opt, T_max=100)
    for epoch in range(100):
        train(...); sched.step()

`OneCycleLR` also cycles the momentum (SGD's `momentum`, Adam's first beta) unless `cycle_momentum=False`.
`ReduceLROnPlateau.step(metric)` takes the metric as a number: reading a loss is the caller's `.item()`.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from .optimizers import Optimizer


class LRScheduler:
    """The base: `base_lrs` (each group's "initial_lr"), `last_epoch`, `step()`, `get_last_lr()`, and
    `state_dict()`/`load_state_dict()`. A schedule sets the rates of epoch 0 when it is made."""

    def __init__(self, optimizer: Optimizer, last_epoch: int = -1):
        self.optimizer = optimizer
        for group in optimizer.param_groups:
            if last_epoch == -1:
                group.setdefault("initial_lr", group["lr"])
            elif "initial_lr" not in group:
                raise KeyError("param 'initial_lr' is not specified in param_groups when resuming a schedule")
        self.base_lrs = [group["initial_lr"] for group in optimizer.param_groups]
        self.last_epoch = last_epoch
        self.step()

    def get_lr(self) -> list[float]:
        """The rates of `last_epoch`, from the groups' current ones (PyTorch's recursive form)."""
        raise NotImplementedError

    def get_last_lr(self) -> list[float]:
        return list(self._last_lr)

    def step(self) -> None:
        self.last_epoch += 1
        for group, lr in zip(self.optimizer.param_groups, self.get_lr()):
            group["lr"] = lr
        self._last_lr = [group["lr"] for group in self.optimizer.param_groups]

    def _lrs(self) -> list[float]:
        return [group["lr"] for group in self.optimizer.param_groups]

    def state_dict(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k != "optimizer" and not callable(v)}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)


class LambdaLR(LRScheduler):
    """lr = base_lr * lr_lambda(epoch) (one function, or one per group)."""

    def __init__(self, optimizer: Optimizer, lr_lambda: Callable[[int], float] | Sequence[Callable[[int], float]],
                 last_epoch: int = -1):
        n = len(optimizer.param_groups)
        self.lr_lambdas = list(lr_lambda) if isinstance(lr_lambda, (list, tuple)) else [lr_lambda] * n
        if len(self.lr_lambdas) != n:
            raise ValueError(f"LambdaLR: expected {n} lr_lambdas, got {len(self.lr_lambdas)}")
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        return [base * f(self.last_epoch) for base, f in zip(self.base_lrs, self.lr_lambdas)]

    def state_dict(self) -> dict[str, Any]:
        return {k: v for k, v in super().state_dict().items() if k != "lr_lambdas"}


class StepLR(LRScheduler):
    """lr multiplied by `gamma` every `step_size` epochs."""

    def __init__(self, optimizer: Optimizer, step_size: int, gamma: float = 0.1, last_epoch: int = -1):
        self.step_size, self.gamma = step_size, gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        if self.last_epoch == 0 or self.last_epoch % self.step_size != 0:
            return self._lrs()
        return [lr * self.gamma for lr in self._lrs()]


class MultiStepLR(LRScheduler):
    """lr multiplied by `gamma` at each epoch in `milestones` (by gamma**k at a milestone given k times)."""

    def __init__(self, optimizer: Optimizer, milestones: Sequence[int], gamma: float = 0.1, last_epoch: int = -1):
        self.milestones = sorted(milestones)
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        hits = self.milestones.count(self.last_epoch)
        return [lr * self.gamma ** hits for lr in self._lrs()] if hits else self._lrs()


class ExponentialLR(LRScheduler):
    """lr multiplied by `gamma` every epoch."""

    def __init__(self, optimizer: Optimizer, gamma: float, last_epoch: int = -1):
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        return self._lrs() if self.last_epoch == 0 else [lr * self.gamma for lr in self._lrs()]


class LinearLR(LRScheduler):
    """lr scaled by a factor going linearly from `start_factor` to `end_factor` over `total_iters` epochs."""

    def __init__(self, optimizer: Optimizer, start_factor: float = 1.0 / 3, end_factor: float = 1.0,
                 total_iters: int = 5, last_epoch: int = -1):
        if not 0 < start_factor <= 1 or not 0 <= end_factor <= 1:
            raise ValueError("LinearLR: start_factor must be in (0, 1] and end_factor in [0, 1]")
        self.start_factor, self.end_factor, self.total_iters = start_factor, end_factor, total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        if self.last_epoch == 0:
            return [lr * self.start_factor for lr in self._lrs()]
        if self.last_epoch > self.total_iters:
            return self._lrs()
        change = 1.0 + (self.end_factor - self.start_factor) / (
            self.total_iters * self.start_factor + (self.last_epoch - 1) * (self.end_factor - self.start_factor))
        return [lr * change for lr in self._lrs()]


class CosineAnnealingLR(LRScheduler):
    """lr annealed from its base to `eta_min` along half a cosine over `T_max` epochs (then back up, and so on)."""

    def __init__(self, optimizer: Optimizer, T_max: int, eta_min: float = 0.0, last_epoch: int = -1):
        self.T_max, self.eta_min = T_max, eta_min
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        t, period = self.last_epoch, self.T_max
        if t == 0:
            return self._lrs()
        if (t - 1 - period) % (2 * period) == 0:
            return [lr + (base - self.eta_min) * (1 - math.cos(math.pi / period)) / 2
                    for lr, base in zip(self._lrs(), self.base_lrs)]
        return [(1 + math.cos(math.pi * t / period)) / (1 + math.cos(math.pi * (t - 1) / period))
                * (lr - self.eta_min) + self.eta_min for lr in self._lrs()]


class OneCycleLR(LRScheduler):
    """The 1cycle policy (Smith): lr rises from max_lr / div_factor to max_lr over pct_start of the steps, then
    falls to max_lr / div_factor / final_div_factor (cosine or linear), stepped once per batch; the momentum
    cycles the other way between max_momentum and base_momentum (cycle_momentum)."""

    def __init__(self, optimizer: Optimizer, max_lr: float | Sequence[float], total_steps: int | None = None,
                 epochs: int | None = None, steps_per_epoch: int | None = None, pct_start: float = 0.3,
                 anneal_strategy: str = "cos", cycle_momentum: bool = True, base_momentum: float = 0.85,
                 max_momentum: float = 0.95, div_factor: float = 25.0, final_div_factor: float = 1e4,
                 three_phase: bool = False, last_epoch: int = -1):
        if total_steps is None:
            if epochs is None or steps_per_epoch is None:
                raise ValueError("OneCycleLR: give total_steps, or epochs and steps_per_epoch")
            total_steps = epochs * steps_per_epoch
        self.total_steps = total_steps
        self.anneal = _cos_anneal if anneal_strategy == "cos" else _linear_anneal
        n = len(optimizer.param_groups)
        max_lrs = list(max_lr) if isinstance(max_lr, (list, tuple)) else [max_lr] * n
        last = float(total_steps - 1)
        if three_phase:
            self.phases = [(float(pct_start * total_steps) - 1, "initial_lr", "max_lr", "max_momentum", "base_momentum"),
                           (float(2 * pct_start * total_steps) - 2, "max_lr", "initial_lr", "base_momentum",
                            "max_momentum"),
                           (last, "initial_lr", "min_lr", "max_momentum", "max_momentum")]
        else:
            self.phases = [(float(pct_start * total_steps) - 1, "initial_lr", "max_lr", "max_momentum", "base_momentum"),
                           (last, "max_lr", "min_lr", "base_momentum", "max_momentum")]
        self.cycle_momentum = cycle_momentum
        for group, top in zip(optimizer.param_groups, max_lrs):
            if last_epoch == -1:
                group["initial_lr"] = top / div_factor
                group["max_lr"], group["min_lr"] = top, group["initial_lr"] / final_div_factor
            if cycle_momentum:
                if "momentum" not in group and "betas" not in group:
                    raise ValueError("OneCycleLR: cycle_momentum needs an optimizer with momentum or betas")
                self.use_beta = "betas" in group
                group["max_momentum"], group["base_momentum"] = max_momentum, base_momentum
                if last_epoch == -1:
                    self._set_momentum(group, max_momentum)
        super().__init__(optimizer, last_epoch)

    def _set_momentum(self, group: dict[str, Any], value: float) -> None:
        if self.use_beta:
            group["betas"] = (value, *group["betas"][1:])
        else:
            group["momentum"] = value

    def get_lr(self) -> list[float]:
        step = self.last_epoch
        if step > self.total_steps:
            raise ValueError(f"OneCycleLR: stepped {step} times, past total_steps={self.total_steps}")
        lrs = []
        for group in self.optimizer.param_groups:
            start = 0.0
            for k, (end, lr0, lr1, m0, m1) in enumerate(self.phases):
                if step <= end or k == len(self.phases) - 1:
                    pct = (step - start) / (end - start)
                    lr = self.anneal(group[lr0], group[lr1], pct)
                    if self.cycle_momentum:
                        self._set_momentum(group, self.anneal(group[m0], group[m1], pct))
                    break
                start = end
            lrs.append(lr)
        return lrs


def _cos_anneal(start: float, end: float, pct: float) -> float:
    return end + (start - end) / 2.0 * (math.cos(math.pi * pct) + 1)


def _linear_anneal(start: float, end: float, pct: float) -> float:
    return (end - start) * pct + start


class ReduceLROnPlateau:
    """lr multiplied by `factor` once the metric given to `step(metric)` has not improved for `patience` epochs
    (by `threshold`, relative or absolute), then left alone for `cooldown` epochs; never below `min_lr`."""

    def __init__(self, optimizer: Optimizer, mode: str = "min", factor: float = 0.1, patience: int = 10,
                 threshold: float = 1e-4, threshold_mode: str = "rel", cooldown: int = 0,
                 min_lr: float | Sequence[float] = 0.0, eps: float = 1e-8):
        if factor >= 1.0:
            raise ValueError("ReduceLROnPlateau: factor should be < 1.0")
        if mode not in ("min", "max") or threshold_mode not in ("rel", "abs"):
            raise ValueError("ReduceLROnPlateau: mode is 'min' or 'max', threshold_mode 'rel' or 'abs'")
        self.optimizer, self.mode, self.factor, self.patience = optimizer, mode, factor, patience
        self.threshold, self.threshold_mode, self.cooldown, self.eps = threshold, threshold_mode, cooldown, eps
        n = len(optimizer.param_groups)
        self.min_lrs = list(min_lr) if isinstance(min_lr, (list, tuple)) else [min_lr] * n
        self.best = math.inf if mode == "min" else -math.inf
        self.num_bad_epochs, self.cooldown_counter, self.last_epoch = 0, 0, 0
        self._last_lr = [group["lr"] for group in optimizer.param_groups]

    def _better(self, a: float, best: float) -> bool:
        if self.mode == "min":
            return a < (best * (1.0 - self.threshold) if self.threshold_mode == "rel" else best - self.threshold)
        return a > (best * (self.threshold + 1.0) if self.threshold_mode == "rel" else best + self.threshold)

    def step(self, metrics: float) -> None:
        current = float(metrics)
        self.last_epoch += 1
        if self._better(current, self.best):
            self.best, self.num_bad_epochs = current, 0
        else:
            self.num_bad_epochs += 1
        if self.cooldown_counter > 0:
            self.cooldown_counter -= 1
            self.num_bad_epochs = 0
        if self.num_bad_epochs > self.patience:
            for group, floor in zip(self.optimizer.param_groups, self.min_lrs):
                new = max(group["lr"] * self.factor, floor)
                if group["lr"] - new > self.eps:
                    group["lr"] = new
            self.cooldown_counter, self.num_bad_epochs = self.cooldown, 0
        self._last_lr = [group["lr"] for group in self.optimizer.param_groups]

    def get_last_lr(self) -> list[float]:
        return list(self._last_lr)


__all__ = ["CosineAnnealingLR", "ExponentialLR", "LRScheduler", "LambdaLR", "LinearLR", "MultiStepLR", "OneCycleLR",
           "ReduceLROnPlateau", "StepLR"]
