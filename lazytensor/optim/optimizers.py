"""Optimizers (PyTorch's `torch.optim`): SGD (momentum, Nesterov, weight decay), Adam, AdamW, RMSprop, Adagrad.

A step is lazy. `step()` builds each parameter's update from its (lazy)
gradient, under no_grad, and rebinds the parameter to the result
(`p.node = new.node`: the Parameter object a model holds stays the same). The
state (momentum buffers, Adam's moments) is rebound the same way and is
realized with the next schedule that runs, so

    loss.backward(); opt.step()
    lt.realize(loss, *model.parameters())

computes the forward pass, the backward pass and the update of every parameter
and of its state in one schedule: each gradient is computed once and read by
the kernels that update that parameter's state and value. Hyperparameters are
Python scalars, so kernel parameters: a learning-rate schedule never recompiles
a kernel. Adam's step count is state too, a 0-d float64 tensor (torch's
`capturable` Adam), and its bias corrections are computed in the kernels, so a
step that `lt.jit` replays advances them without running Python; parameters
that step together share one step count, which one kernel updates.
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..autograd import no_grad
from ..creation import asarray, full
from ..dtypes import float64
from ..schedule import realize_with_next
from ..tensor import Tensor


class Optimizer:
    """Holds parameter groups (`param_groups`, each a dict with "params" and hyperparameters) and
    per-parameter state (`state`, keyed by the parameter's id)."""

    def __init__(self, params: Iterable[Any], defaults: dict[str, Any]):
        self.defaults = dict(defaults)
        self.param_groups: list[dict[str, Any]] = []
        self.state: dict[int, dict[str, Any]] = {}
        groups = list(params)
        if not groups:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        for g in groups:
            self.add_param_group(g)

    def add_param_group(self, group: dict[str, Any]) -> None:
        params = group["params"]
        params = [params] if isinstance(params, Tensor) else list(params)
        seen = {id(p) for g in self.param_groups for p in g["params"]}
        for p in params:
            if not isinstance(p, Tensor):
                raise TypeError(f"optimizer: parameters must be Tensors, got {type(p).__name__}")
            if not p.dtype.is_float:
                raise TypeError(f"optimizer: can only optimize floating-point tensors, got {p.dtype.name}")
            if id(p) in seen:
                raise ValueError("optimizer: a parameter appears in more than one group")
            seen.add(id(p))
        full = {**self.defaults, **group, "params": params}
        self.param_groups.append(full)

    def zero_grad(self, set_to_none: bool = True) -> None:
        for g in self.param_groups:
            for p in g["params"]:
                if set_to_none or p.grad is None:
                    p.grad = None
                else:
                    p.grad = p.grad * 0.0

    def step(self) -> None:
        """Update every parameter that has a gradient (lazily: see the module docstring)."""
        with no_grad():
            pending: list[Tensor] = []
            for group in self.param_groups:
                for p in group["params"]:
                    if p.grad is None:
                        continue
                    st = self.state.setdefault(id(p), {})
                    new = self._update(p, p.grad, st, group)
                    p.node = new.cast(p.dtype).node
                    pending.append(p)
                    pending.extend(v for v in st.values() if isinstance(v, Tensor))
            realize_with_next(*pending)

    def _update(self, p: Tensor, grad: Tensor, state: dict[str, Any], group: dict[str, Any]) -> Tensor:
        raise NotImplementedError

    def state_dict(self) -> dict[str, Any]:
        """The state by parameter position (not identity) and the groups' hyperparameters, as PyTorch."""
        index: dict[int, int] = {}
        groups = []
        for g in self.param_groups:
            ids = []
            for p in g["params"]:
                index.setdefault(id(p), len(index))
                ids.append(index[id(p)])
            groups.append({**{k: v for k, v in g.items() if k != "params"}, "params": ids})
        state = {index[k]: {n: (Tensor(v.node) if isinstance(v, Tensor) else v) for n, v in s.items()}
                 for k, s in self.state.items() if k in index}
        return {"state": state, "param_groups": groups}

    def __getstate__(self) -> dict[str, Any]:
        """Pickling and deep copies key the state by each parameter's position in the groups: the copy's
        parameters are new objects, whose ids the old ones do not name."""
        position = {id(p): i for i, p in enumerate(p for g in self.param_groups for p in g["params"])}
        return {**self.__dict__, "state": {position[k]: s for k, s in self.state.items() if k in position}}

    def __setstate__(self, state: dict[str, Any]) -> None:
        params = [p for g in state["param_groups"] for p in g["params"]]
        self.__dict__.update({**state, "state": {id(params[i]): s for i, s in state["state"].items()}})

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        params = [p for g in self.param_groups for p in g["params"]]
        for g, saved in zip(self.param_groups, state_dict["param_groups"]):
            g.update({k: v for k, v in saved.items() if k != "params"})
        self.state = {}
        for i, s in state_dict["state"].items():
            p = params[int(i)]
            self.state[id(p)] = {n: (asarray(v if isinstance(v, Tensor) else v.numpy() if hasattr(v, "numpy") else v,
                                             dtype=p.dtype) if n != "step" else _step_count(float(v), p.device))
                                 for n, v in s.items()}


def _step_count(value: float, device: str) -> Tensor:
    """A step count as a 0-d float64 tensor; equal counts on one device are one graph node, so the
    parameters that step together have their counts advanced by one kernel."""
    return full((), value, dtype=float64, device=device)


def _check(value: float, name: str, low: float = 0.0) -> float:
    if not value >= low:
        raise ValueError(f"invalid {name}: {value}")
    return value


class SGD(Optimizer):
    """Stochastic gradient descent, as torch.optim.SGD:

        g = grad + weight_decay * p
        buf = g (first step), then momentum * buf + (1 - dampening) * g
        g = g + momentum * buf (nesterov) or buf
        p = p - lr * g           (p + lr * g with maximize=True)
    """

    def __init__(self, params: Iterable[Any], lr: float = 1e-3, momentum: float = 0.0, dampening: float = 0.0,
                 weight_decay: float = 0.0, nesterov: bool = False, maximize: bool = False):
        _check(lr, "learning rate")
        _check(momentum, "momentum")
        _check(weight_decay, "weight_decay")
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("SGD: Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, {"lr": lr, "momentum": momentum, "dampening": dampening,
                                  "weight_decay": weight_decay, "nesterov": nesterov, "maximize": maximize})

    def _update(self, p: Tensor, grad: Tensor, state: dict[str, Any], group: dict[str, Any]) -> Tensor:
        g = -grad if group["maximize"] else grad
        if group["weight_decay"]:
            g = g + p * group["weight_decay"]
        momentum = group["momentum"]
        if momentum:
            buf = state.get("momentum_buffer")
            buf = Tensor(g.node) if buf is None else buf * momentum + g * (1 - group["dampening"])
            state["momentum_buffer"] = buf
            g = g + buf * momentum if group["nesterov"] else buf
        return p - g * group["lr"]


class Adam(Optimizer):
    """Adam (Kingma & Ba), as torch.optim.Adam, with L2 weight decay added to the gradient:

        g = grad + weight_decay * p
        m = m + (1 - beta1) * (g - m);  v = beta2 * v + (1 - beta2) * g * g
        p = p - lr / (1 - beta1**t) * m / (sqrt(v) / sqrt(1 - beta2**t) + eps)

    amsgrad=True uses the running maximum of v."""

    decoupled = False

    def __init__(self, params: Iterable[Any], lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0.0, amsgrad: bool = False, maximize: bool = False):
        _check(lr, "learning rate")
        _check(eps, "epsilon")
        if not (0.0 <= betas[0] < 1.0 and 0.0 <= betas[1] < 1.0):
            raise ValueError(f"invalid betas: {betas}")
        _check(weight_decay, "weight_decay")
        super().__init__(params, {"lr": lr, "betas": tuple(betas), "eps": eps, "weight_decay": weight_decay,
                                  "amsgrad": amsgrad, "maximize": maximize})
        self._terms: dict[tuple, tuple[Tensor, Tensor, Tensor]] = {}

    def step(self) -> None:
        try:
            super().step()
        finally:  # the terms serve one step: kept, they would be tensors held past it (and written)
            self._terms.clear()

    def __getstate__(self) -> dict[str, Any]:
        return {**super().__getstate__(), "_terms": {}}  # the last step's terms: rebuilt by the next step

    def _step_terms(self, count: Tensor | None, device: str, dtype: Any, group: dict[str, Any]) \
            -> tuple[Tensor, Tensor, Tensor]:
        """The new step count, sqrt(1 - beta2**t) and lr / (1 - beta1**t), in float64 and rounded once to
        `dtype`, as Python floats would be. Built once per step for the parameters sharing a step count."""
        key = (None if count is None else count.node, device, dtype, group["lr"], group["betas"])
        if (terms := self._terms.get(key)) is None:
            beta1, beta2 = group["betas"]
            t = _step_count(1.0, device) if count is None else count + 1
            terms = self._terms[key] = (t, (1 - beta2 ** t).sqrt().cast(dtype),
                                        (group["lr"] / (1 - beta1 ** t)).cast(dtype))
        return terms

    def _update(self, p: Tensor, grad: Tensor, state: dict[str, Any], group: dict[str, Any]) -> Tensor:
        beta1, beta2 = group["betas"]
        lr, wd = group["lr"], group["weight_decay"]
        g = -grad if group["maximize"] else grad
        if wd:
            if self.decoupled:
                p = p * (1 - lr * wd)
            else:
                g = g + p * wd
        step, bias2_sqrt, step_size = self._step_terms(state.get("step"), p.device, grad.dtype, group)
        state["step"] = Tensor(step.node)
        m = state.get("exp_avg")
        v = state.get("exp_avg_sq")
        m = g * (1 - beta1) if m is None else m + (g - m) * (1 - beta1)
        v = g * g * (1 - beta2) if v is None else v * beta2 + g * g * (1 - beta2)
        state["exp_avg"], state["exp_avg_sq"] = m, v
        if group["amsgrad"]:
            vmax = state.get("max_exp_avg_sq")
            vmax = v if vmax is None else vmax.maximum(v)
            state["max_exp_avg_sq"] = vmax
            v = vmax
        denom = v.sqrt() / bias2_sqrt + group["eps"]
        return p - (m / denom) * step_size


class AdamW(Adam):
    """Adam with decoupled weight decay (Loshchilov & Hutter), as torch.optim.AdamW:
    p = p * (1 - lr * weight_decay) before the Adam step. weight_decay defaults to 0.01."""

    decoupled = True

    def __init__(self, params: Iterable[Any], lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 1e-2, amsgrad: bool = False, maximize: bool = False):
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, maximize)


class RMSprop(Optimizer):
    """RMSprop (Hinton), as torch.optim.RMSprop:

        g = grad + weight_decay * p
        s = alpha * s + (1 - alpha) * g * g
        a = sqrt(s - m * m) + eps with m = alpha * m + (1 - alpha) * g (centered), else sqrt(s) + eps
        buf = momentum * buf + g / a;  p = p - lr * buf    (p = p - lr * g / a without momentum)"""

    def __init__(self, params: Iterable[Any], lr: float = 1e-2, alpha: float = 0.99, eps: float = 1e-8,
                 weight_decay: float = 0.0, momentum: float = 0.0, centered: bool = False, maximize: bool = False):
        for value, name in ((lr, "learning rate"), (alpha, "alpha"), (eps, "epsilon"), (momentum, "momentum"),
                            (weight_decay, "weight_decay")):
            _check(value, name)
        super().__init__(params, {"lr": lr, "alpha": alpha, "eps": eps, "weight_decay": weight_decay,
                                  "momentum": momentum, "centered": centered, "maximize": maximize})

    def _update(self, p: Tensor, grad: Tensor, state: dict[str, Any], group: dict[str, Any]) -> Tensor:
        alpha = group["alpha"]
        g = -grad if group["maximize"] else grad
        if group["weight_decay"]:
            g = g + p * group["weight_decay"]
        s = state.get("square_avg")
        s = g * g * (1 - alpha) if s is None else s * alpha + g * g * (1 - alpha)
        state["square_avg"] = s
        if group["centered"]:
            m = state.get("grad_avg")
            m = g * (1 - alpha) if m is None else m * alpha + g * (1 - alpha)
            state["grad_avg"] = m
            avg = (s - m * m).sqrt() + group["eps"]
        else:
            avg = s.sqrt() + group["eps"]
        if group["momentum"]:
            buf = state.get("momentum_buffer")
            buf = g / avg if buf is None else buf * group["momentum"] + g / avg
            state["momentum_buffer"] = buf
            return p - buf * group["lr"]
        return p - g / avg * group["lr"]


class Adagrad(Optimizer):
    """Adagrad (Duchi et al.), as torch.optim.Adagrad:

        g = grad + weight_decay * p
        sum = sum + g * g                      (sum starts at initial_accumulator_value)
        p = p - lr / (1 + (t - 1) * lr_decay) * g / (sqrt(sum) + eps)

    The step count t is a tensor, as Adam's, so an `lt.jit` replay advances it."""

    def __init__(self, params: Iterable[Any], lr: float = 1e-2, lr_decay: float = 0.0, weight_decay: float = 0.0,
                 initial_accumulator_value: float = 0.0, eps: float = 1e-10, maximize: bool = False):
        for value, name in ((lr, "learning rate"), (lr_decay, "lr_decay"), (weight_decay, "weight_decay"),
                            (initial_accumulator_value, "initial_accumulator_value"), (eps, "epsilon")):
            _check(value, name)
        super().__init__(params, {"lr": lr, "lr_decay": lr_decay, "weight_decay": weight_decay, "eps": eps,
                                  "initial_accumulator_value": initial_accumulator_value, "maximize": maximize})

    def _update(self, p: Tensor, grad: Tensor, state: dict[str, Any], group: dict[str, Any]) -> Tensor:
        g = -grad if group["maximize"] else grad
        if group["weight_decay"]:
            g = g + p * group["weight_decay"]
        count = state.get("step")
        t = _step_count(1.0, p.device) if count is None else count + 1
        state["step"] = t
        total = state.get("sum")
        total = g * g + group["initial_accumulator_value"] if total is None else total + g * g
        state["sum"] = total
        clr = (group["lr"] / (1 + (t - 1) * group["lr_decay"])).cast(g.dtype)
        return p - g / (total.sqrt() + group["eps"]) * clr


__all__ = ["SGD", "Adagrad", "Adam", "AdamW", "Optimizer", "RMSprop"]
