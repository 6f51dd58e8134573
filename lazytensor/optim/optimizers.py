"""Optimizers (PyTorch's `torch.optim`): SGD (momentum, Nesterov, weight decay), Adam, AdamW, RMSprop, Adagrad, LBFGS.

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
that step together share one step count, which one kernel updates. Adam's
(and AdamW's) update of a parameter is recorded through the tensor ops once per
structure and rebuilt from that recording on later steps (`lazytensor/recipe.py`).
"""
from __future__ import annotations

import functools
import math
from collections.abc import Iterable
from typing import Any

from .. import recipe
from ..autograd import no_grad
from ..creation import asarray, full
from ..dtypes import float64
from ..helpers import KnownUserLine, is_ours, user_line
from ..realize import compute_stale
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
        # a built-in update runs none of the user's code: its ops are all made at the user's call of step
        line = user_line() if is_ours(type(self)._update) else None
        with no_grad(), KnownUserLine(line):
            compute_stale(*(p for group in self.param_groups for p in group["params"]))
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
            # on the parameter's device and in its dtype, as PyTorch's (a checkpoint may be loaded elsewhere)
            self.state[id(p)] = {n: (asarray(v if isinstance(v, Tensor) else v.numpy() if hasattr(v, "numpy") else v,
                                             dtype=p.dtype, device=p.device)
                                     if n != "step" else _step_count(float(v), p.device))
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
        step, bias2_sqrt, step_size = self._step_terms(state.get("step"), p.device, grad.dtype, group)
        state["step"] = Tensor(step.node)
        flags = (group["maximize"], bool(wd), self.decoupled, group["amsgrad"])
        scalars = tuple(map(float, (1 - lr * wd if self.decoupled else wd, 1 - beta1, beta2, 1 - beta2, group["eps"])))
        new, state["exp_avg"], state["exp_avg_sq"], vmax = recipe.apply(
            _adam, flags, scalars, (p, grad, state.get("exp_avg"), state.get("exp_avg_sq"),
                                    state.get("max_exp_avg_sq"), bias2_sqrt, step_size))
        if vmax is not None:
            state["max_exp_avg_sq"] = vmax
        return new


def _adam(flags: tuple[bool, bool, bool, bool], scalars: tuple[float, ...], p: Tensor, grad: Tensor,
          m: Tensor | None, v: Tensor | None, vmax: Tensor | None, bias2_sqrt: Tensor, step_size: Tensor) \
        -> tuple[Tensor, Tensor, Tensor, Tensor | None]:
    """Adam's update of one parameter (`Adam`'s formulas; `recipe.apply` records it once per structure): the new
    parameter, m, v and, with amsgrad, v's running maximum. `flags`: maximize, weight decay, decoupled, amsgrad;
    `scalars`: the weight decay's factor (1 - lr * weight_decay where decoupled, else weight_decay), 1 - beta1,
    beta2, 1 - beta2, eps."""
    maximize, decay, decoupled, amsgrad = flags
    decay_by, keep1, beta2, keep2, eps = scalars
    g = -grad if maximize else grad
    if decay:
        if decoupled:
            p = p * decay_by
        else:
            g = g + p * decay_by
    m = g * keep1 if m is None else m + (g - m) * keep1
    v = g * g * keep2 if v is None else v * beta2 + g * g * keep2
    if amsgrad:
        vmax = v if vmax is None else vmax.maximum(v)
    denom = (vmax if amsgrad else v).sqrt() / bias2_sqrt + eps
    return p - (m / denom) * step_size, m, v, vmax if amsgrad else None


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




class LBFGS(Optimizer):
    """L-BFGS, as torch.optim.LBFGS: `step(closure)` runs up to `max_iter` iterations of the two-loop recursion
    over the last `history_size` curvature pairs, each with a step of `lr` (the first scaled by 1 / |g|_1) or,
    with `line_search_fn="strong_wolfe"`, a line search meeting the strong Wolfe conditions (cubic
    interpolation, then a zoom), stopping on PyTorch's tolerances. Unlike the other optimizers it reads values
    (the loss, directional derivatives) at every iteration, as PyTorch's does: each is a realize. One parameter
    group; the closure recomputes the loss and its gradients and returns the loss."""

    def __init__(self, params: Iterable[Any], lr: float = 1.0, max_iter: int = 20, max_eval: int | None = None,
                 tolerance_grad: float = 1e-7, tolerance_change: float = 1e-9, history_size: int = 100,
                 line_search_fn: str | None = None):
        if line_search_fn not in (None, "strong_wolfe"):
            raise ValueError(f"LBFGS: line_search_fn must be None or 'strong_wolfe', got {line_search_fn!r}")
        _check(lr, "learning rate")
        super().__init__(params, {"lr": lr, "max_iter": max_iter, "max_eval": max_eval or max_iter * 5 // 4,
                                  "tolerance_grad": tolerance_grad, "tolerance_change": tolerance_change,
                                  "history_size": history_size, "line_search_fn": line_search_fn})
        if len(self.param_groups) != 1:
            raise ValueError("LBFGS: supports one parameter group")
        self.lbfgs: dict[str, Any] = {"func_evals": 0, "n_iter": 0}

    @property
    def _params(self) -> list[Tensor]:
        return self.param_groups[0]["params"]

    def _flat_grad(self) -> Tensor:
        from ..movement import concat
        return concat([(p.grad if p.grad is not None else p * 0).reshape(-1).cast(float64) for p in self._params])

    def _add(self, t: float, d: Tensor) -> None:
        """The parameters moved by `t * d` (d the flat direction), realized."""
        offset = 0
        with no_grad():
            for p in self._params:
                n = p.numel()
                p.node = (p + (d[offset:offset + n] * t).reshape(p.shape).cast(p.dtype)).realize().node
                offset += n

    def _evaluate(self, closure: Any, x: list[Any], t: float, d: Tensor) -> tuple[float, Tensor]:
        """The loss and flat gradient at x + t d (the parameters set back to x after)."""
        self._add(t, d)
        loss = float(closure())
        g = self._flat_grad().realize()
        for p, node in zip(self._params, x):
            p.node = node
        return loss, g

    def step(self, closure: Any = None) -> Any:  # type: ignore[override]
        """Run the iterations from the parameters' current values; returns the closure's first loss."""
        if closure is None:
            raise ValueError("LBFGS: step needs a closure that recomputes the loss and its gradients")
        group, st = self.param_groups[0], self.lbfgs
        lr, tol_grad, tol_change = group["lr"], group["tolerance_grad"], group["tolerance_change"]
        orig_loss = closure()
        loss = float(orig_loss)
        evals = 1
        st["func_evals"] += 1
        g = self._flat_grad().realize()
        if float(g.abs().max()) <= tol_grad:
            return orig_loss
        d, t = st.get("d"), st.get("t")
        dirs, steps, ro, h_diag = st.get("old_dirs", []), st.get("old_stps", []), st.get("ro", []), st.get("H_diag", 1.0)
        prev_g, prev_loss = st.get("prev_flat_grad"), st.get("prev_loss")
        n_iter = 0
        while n_iter < group["max_iter"]:
            n_iter += 1
            st["n_iter"] += 1
            if st["n_iter"] == 1:
                d, dirs, steps, ro, h_diag = -g, [], [], [], 1.0
            else:
                y, s = g - prev_g, d * t
                ys = float((y * s).sum())
                if ys > 1e-10:
                    if len(dirs) == group["history_size"]:
                        dirs.pop(0), steps.pop(0), ro.pop(0)
                    dirs.append(y.realize()), steps.append(s.realize()), ro.append(1.0 / ys)
                    h_diag = ys / float((y * y).sum())
                q, alphas = -g, [0.0] * len(dirs)
                for i in range(len(dirs) - 1, -1, -1):
                    alphas[i] = float((steps[i] * q).sum()) * ro[i]
                    q = (q - dirs[i] * alphas[i]).realize()
                r = q * h_diag
                for i in range(len(dirs)):
                    beta = float((dirs[i] * r).sum()) * ro[i]
                    r = (r + steps[i] * (alphas[i] - beta)).realize()
                d = r
            prev_g, prev_loss = g, loss
            t = min(1.0, 1.0 / float(g.abs().sum())) * lr if st["n_iter"] == 1 else lr
            gtd = float((g * d).sum())
            if gtd > -tol_change:
                break
            ls_evals = 0
            if group["line_search_fn"] == "strong_wolfe":
                evaluate = functools.partial(self._evaluate, closure, [p.node for p in self._params])
                loss, g, t, ls_evals = _strong_wolfe(evaluate, t, d, loss, g, gtd, tolerance_change=tol_change)
                self._add(t, d)
            else:
                self._add(t, d)
                if n_iter != group["max_iter"]:
                    loss = float(closure())
                    g = self._flat_grad().realize()
                    ls_evals = 1
            evals += ls_evals
            st["func_evals"] += ls_evals
            if n_iter == group["max_iter"] or evals >= group["max_eval"] or float(g.abs().max()) <= tol_grad:
                break
            if float((d * t).abs().max()) <= tol_change or abs(loss - prev_loss) < tol_change:
                break
        st.update({"d": d, "t": t, "old_dirs": dirs, "old_stps": steps, "ro": ro, "H_diag": h_diag,
                   "prev_flat_grad": prev_g, "prev_loss": prev_loss})
        return orig_loss


def _cubic_minimum(x1: float, f1: float, g1: float, x2: float, f2: float, g2: float,
                   bounds: tuple[float, float] | None = None) -> float:
    """The minimizer of the cubic through (x1, f1) and (x2, f2) with slopes g1, g2, kept inside `bounds` (the
    points' interval by default); the bounds' midpoint where the cubic has no minimum."""
    lo, hi = bounds if bounds is not None else (min(x1, x2), max(x1, x2))
    d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2)
    disc = d1 * d1 - g1 * g2
    if disc < 0:
        return (lo + hi) / 2.0
    d2 = math.sqrt(disc)
    if x1 <= x2:
        at = x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
    else:
        at = x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2))
    return min(max(at, lo), hi)


def _strong_wolfe(evaluate: Any, t: float, d: Tensor, f: float, g: Tensor, gtd: float, c1: float = 1e-4,
                  c2: float = 0.9, tolerance_change: float = 1e-9, max_ls: int = 25) -> tuple[float, Tensor, float, int]:
    """A step `t` along `d` meeting the strong Wolfe conditions from (f, g, gtd) at t = 0, found by bracketing
    then zooming with cubic interpolation; `evaluate(t, d)` gives the loss and gradient there. Returns the loss,
    gradient and step taken and the number of evaluations."""
    d_norm = float(d.abs().max())
    f_new, g_new = evaluate(t, d)
    evals, gtd_new = 1, float((g_new * d).sum())
    t_prev, f_prev, g_prev, gtd_prev = 0.0, f, g, gtd
    done, ls_iter = False, 0
    bracket: list[float] = []
    while ls_iter < max_ls:
        wolfe = abs(gtd_new) <= -c2 * gtd
        if f_new > f + c1 * t * gtd or (ls_iter > 1 and f_new >= f_prev) or (gtd_new >= 0 and not wolfe):
            bracket, bracket_f = [t_prev, t], [f_prev, f_new]
            bracket_g, bracket_gtd = [g_prev, g_new], [gtd_prev, gtd_new]
            break
        if wolfe:
            bracket, bracket_f, bracket_g, done = [t], [f_new], [g_new], True
            break
        t_next = _cubic_minimum(t_prev, f_prev, gtd_prev, t, f_new, gtd_new, (t + 0.01 * (t - t_prev), t * 10))
        t_prev, f_prev, g_prev, gtd_prev, t = t, f_new, g_new, gtd_new, t_next
        f_new, g_new = evaluate(t, d)
        evals, gtd_new, ls_iter = evals + 1, float((g_new * d).sum()), ls_iter + 1
    if ls_iter == max_ls:
        bracket, bracket_f, bracket_g = [0.0, t], [f, f_new], [g, g_new]
    insufficient = False
    low, high = (0, 1) if bracket_f[0] <= bracket_f[-1] else (1, 0)
    while not done and ls_iter < max_ls:
        if abs(bracket[1] - bracket[0]) * d_norm < tolerance_change:
            break
        t = _cubic_minimum(bracket[0], bracket_f[0], bracket_gtd[0], bracket[1], bracket_f[1], bracket_gtd[1])
        eps = 0.1 * (max(bracket) - min(bracket))
        if min(max(bracket) - t, t - min(bracket)) < eps:  # too near an end: move it in, unless progress was good
            if insufficient or t >= max(bracket) or t <= min(bracket):
                t = max(bracket) - eps if abs(t - max(bracket)) < abs(t - min(bracket)) else min(bracket) + eps
                insufficient = False
            else:
                insufficient = True
        else:
            insufficient = False
        f_new, g_new = evaluate(t, d)
        evals, gtd_new, ls_iter = evals + 1, float((g_new * d).sum()), ls_iter + 1
        if f_new > f + c1 * t * gtd or f_new >= bracket_f[low]:
            bracket[high], bracket_f[high], bracket_g[high], bracket_gtd[high] = t, f_new, g_new, gtd_new
            low, high = (0, 1) if bracket_f[0] <= bracket_f[1] else (1, 0)
        else:
            if abs(gtd_new) <= -c2 * gtd:
                done = True
            elif gtd_new * (bracket[high] - bracket[low]) >= 0:
                bracket[high], bracket_f[high] = bracket[low], bracket_f[low]
                bracket_g[high], bracket_gtd[high] = bracket_g[low], bracket_gtd[low]
            bracket[low], bracket_f[low], bracket_g[low], bracket_gtd[low] = t, f_new, g_new, gtd_new
    return bracket_f[low], bracket_g[low], bracket[low], evals


__all__ = ["LBFGS", "SGD", "Adagrad", "Adam", "AdamW", "Optimizer", "RMSprop"]
