"""Optimizers against torch.optim over several steps from identical weights; laziness and fusion of the
update; parameter groups and state dicts."""
from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest
import torch

import lazytensor as lt
from conftest import check, graph_structure, random_array
from lazytensor import nn, optim

F64 = lt.float64
X = random_array((8, 5), F64, seed=1)


Y = random_array((8, 3), F64, seed=2)


def models():
    torch.manual_seed(0)
    tm = torch.nn.Sequential(torch.nn.Linear(5, 4), torch.nn.Tanh(), torch.nn.Linear(4, 3)).double()
    m = nn.Sequential(nn.Linear(5, 4), nn.Tanh(), nn.Linear(4, 3)).to(F64)
    m.load_state_dict({k: v.detach().numpy() for k, v in tm.state_dict().items()})
    return m, tm


def mse_step(m, opt) -> lt.Tensor:
    """One lazy step of the test model on (X, Y): the MSE loss, its gradients and the optimizer's update."""
    loss = nn.functional.mse_loss(m(lt.asarray(X)), lt.asarray(Y))
    opt.zero_grad()
    loss.backward()
    opt.step()
    return loss


def train_both(make_opt, make_topt, steps: int = 5):
    m, tm = models()
    opt, topt = make_opt(m.parameters()), make_topt(tm.parameters())
    x, y = lt.asarray(X), lt.asarray(Y)
    tx, ty = torch.tensor(X), torch.tensor(Y)
    for step in range(steps):
        scale = 1.0 + step  # vary the gradients' size from step to step
        step_both(m, nn.functional.mse_loss(m(x) * scale, y), opt,
                  tm, torch.nn.functional.mse_loss(tm(tx) * scale, ty), topt)
    return m, opt


def step_both(m: nn.Module, loss: lt.Tensor, opt: optim.Optimizer,
              tm: torch.nn.Module, tloss: torch.Tensor, topt: torch.optim.Optimizer) -> None:
    """One optimizer step of each model from its loss, then the losses and the parameters compared."""
    opt.zero_grad()
    loss.backward()
    opt.step()
    lt.realize(loss, *m.parameters())
    topt.zero_grad()
    tloss.backward()
    topt.step()
    check(loss, tloss)
    for p, tp in zip(m.parameters(), tm.parameters()):
        check(p, tp)


OPTIMIZERS = {
    "sgd": (lambda p: optim.SGD(p, lr=0.1), lambda p: torch.optim.SGD(p, lr=0.1)),
    "sgd_momentum": (lambda p: optim.SGD(p, lr=0.05, momentum=0.9),
                     lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9)),
    "sgd_dampening_wd": (lambda p: optim.SGD(p, lr=0.05, momentum=0.8, dampening=0.3, weight_decay=0.01),
                         lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.8, dampening=0.3, weight_decay=0.01)),
    "sgd_nesterov": (lambda p: optim.SGD(p, lr=0.05, momentum=0.9, nesterov=True, weight_decay=1e-3),
                     lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9, nesterov=True, weight_decay=1e-3)),
    "sgd_maximize": (lambda p: optim.SGD(p, lr=0.01, maximize=True),
                     lambda p: torch.optim.SGD(p, lr=0.01, maximize=True)),
    "adam": (lambda p: optim.Adam(p, lr=0.01), lambda p: torch.optim.Adam(p, lr=0.01)),
    "adam_wd_betas": (lambda p: optim.Adam(p, lr=0.02, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.1),
                      lambda p: torch.optim.Adam(p, lr=0.02, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.1)),
    "adam_amsgrad": (lambda p: optim.Adam(p, lr=0.01, amsgrad=True),
                     lambda p: torch.optim.Adam(p, lr=0.01, amsgrad=True)),
    "adamw": (lambda p: optim.AdamW(p, lr=0.01), lambda p: torch.optim.AdamW(p, lr=0.01)),
    "adamw_wd": (lambda p: optim.AdamW(p, lr=0.01, weight_decay=0.3, amsgrad=True),
                 lambda p: torch.optim.AdamW(p, lr=0.01, weight_decay=0.3, amsgrad=True)),
}


@pytest.mark.parametrize("name", list(OPTIMIZERS))
def test_against_torch(name):
    make, tmake = OPTIMIZERS[name]
    train_both(make, tmake)


def test_param_groups():
    def make(p):
        p = list(p)
        return optim.SGD([{"params": p[:2]}, {"params": p[2:], "lr": 0.01, "momentum": 0.5}], lr=0.1)

    def tmake(p):
        p = list(p)
        return torch.optim.SGD([{"params": p[:2]}, {"params": p[2:], "lr": 0.01, "momentum": 0.5}], lr=0.1)

    train_both(make, tmake, steps=3)


def test_step_is_lazy_rebinds_parameters_and_fuses():
    m, _ = models()
    params = list(m.parameters())
    opt = optim.Adam(params, lr=0.01)
    loss = nn.functional.mse_loss(m(lt.asarray(X)), lt.asarray(Y))
    loss.backward()
    opt.step()
    assert all(q is p for q, p in zip(m.parameters(), params))  # same objects, new nodes
    assert not any(p.is_realized for p in params)
    lt.reset_stats()
    lt.realize(loss, *params)
    state = [v for s in opt.state.values() for v in s.values() if isinstance(v, lt.Tensor)]
    # the two moments and the step count of each parameter, realized in the same schedule
    assert len(state) == 3 * len(params) and all(v.is_realized for v in state)
    assert lt.stats().realizes == 1
    # per parameter: its gradient (a reduction), its two moments and its value; plus the forward pass and
    # the step count that the parameters share
    assert lt.stats().kernels_launched <= 4 * len(params) + 7


def test_state_does_not_grow_a_graph_across_steps():
    """Each step's update reads the previous step's realized state: the kernels per step stay the same."""
    m, _ = models()
    opt = optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
    counts = []
    for _ in range(4):
        loss = mse_step(m, opt)
        lt.reset_stats()
        lt.realize(loss, *m.parameters())
        counts.append(lt.stats().kernels_launched)
    assert counts[1] == counts[2] == counts[3]
    assert lt.stats().kernels_compiled == 0  # same structure every step: nothing recompiles


def _update_by_hand(how: str):
    """`with no_grad():` each parameter updated in place from its gradient, as the tutorials write SGD."""
    def update(params, lr):
        for p in params:
            if how == "in place":
                p -= lr * p.grad
            elif how == ".data":
                p.data.add_(p.grad, alpha=-lr)
            else:
                p.data[...] = p.data - lr * p.grad
            p.grad = None
    return update


@pytest.mark.parametrize("how", ["optimizer", "in place", ".data", "data write"])
def test_a_loop_that_reads_nothing_computes_each_step_at_the_next(how):
    """A training loop that reads no result (PyTorch's tutorials print the loss every hundred steps): each
    step's update is computed when the next step updates the parameters again, in one schedule of one
    structure, never a graph built over every step whose kernels are new at each read; torch's values."""
    m, tm = models()
    opt, topt = optim.SGD(m.parameters(), lr=0.05, momentum=0.9), torch.optim.SGD(tm.parameters(), lr=0.05,
                                                                                  momentum=0.9)
    x, y, tx, ty = lt.asarray(X), lt.asarray(Y), torch.tensor(X), torch.tensor(Y)
    for step in range(6):
        if step == 3:
            lt.reset_stats()
        loss = nn.functional.mse_loss(m(x), y)
        if how == "optimizer":
            opt.zero_grad()
            loss.backward()
            opt.step()
        else:
            loss.backward()
            with lt.no_grad():
                _update_by_hand(how)(m.parameters(), 0.05)
        tloss = torch.nn.functional.mse_loss(tm(tx), ty)
        topt.zero_grad()
        tloss.backward()
        if how == "optimizer":
            topt.step()
        else:
            with torch.no_grad():
                for p in tm.parameters():
                    p -= 0.05 * p.grad
    # steps 3, 4 and 5 each computed the one before it; the last is pending, computed with what is read next
    stats = lt.stats()
    assert (stats.realizes, stats.kernels_compiled) == (3, 0)
    assert not any(p.is_realized for p in m.parameters())
    check(loss, tloss)
    for p, tp in zip(m.parameters(), tm.parameters()):
        check(p, tp)


ADAMS = {
    "adam": lambda p: optim.Adam(p, lr=0.01),
    "adam_wd_amsgrad_maximize": lambda p: optim.Adam(p, lr=0.02, betas=(0.8, 0.99), weight_decay=0.1, amsgrad=True,
                                                     maximize=True),
    "adamw_amsgrad": lambda p: optim.AdamW(p, lr=0.01, weight_decay=0.3, amsgrad=True),
}


def _adam_run(make, recorded: bool, monkeypatch) -> list:
    """Four Adam steps of the test model; each step's update graph (parameters and state, before the realize)
    and values. With `recorded`, every update is recorded through the tensor ops, never rebuilt."""
    from test_recipe import recorded as record_every_graph
    with monkeypatch.context() as patch:
        if recorded:
            record_every_graph(patch)
        m, _ = models()
        opt = make(m.parameters())
        runs = []
        for _ in range(4):
            loss = mse_step(m, opt)
            state = [v for s in opt.state.values() for v in s.values() if isinstance(v, lt.Tensor)]
            graph = graph_structure([*m.parameters(), *state])
            lt.realize(loss, *m.parameters())
            runs.append((graph, [p.numpy() for p in m.parameters()]))
        return runs


@pytest.mark.parametrize("name", list(ADAMS))
def test_an_update_rebuilt_is_the_graph_its_ops_record(name, monkeypatch):
    """Adam's update of a parameter is recorded once per structure and rebuilt on later steps
    (`lazytensor.recipe`): the same nodes (ops, dtypes, shapes, scalars, user's lines, sources) as recording it through
    the tensor ops, and the same values, bit for bit."""
    rebuilt, recorded = _adam_run(ADAMS[name], False, monkeypatch), _adam_run(ADAMS[name], True, monkeypatch)
    for (graph, values), (expected_graph, expected) in zip(rebuilt, recorded):
        assert graph == expected_graph
        for got, want in zip(values, expected):
            np.testing.assert_array_equal(got, want)


def test_updates_are_rebuilt_after_two_steps(monkeypatch):
    """A step records each parameter's update through the tensor ops only where its structure is new (the first
    step's, without state, and the second's); later steps rebuild it. A counter of the recorded updates."""
    from lazytensor.optim import optimizers
    calls = []
    adam = optimizers._adam
    monkeypatch.setattr(optimizers, "_adam", lambda *a: calls.append(1) or adam(*a))
    m, _ = models()
    opt = optim.Adam(m.parameters(), lr=0.01, betas=(0.85, 0.95))  # hyperparameters of this test's own
    counts = []
    for _ in range(4):
        loss = mse_step(m, opt)
        lt.realize(loss, *m.parameters())
        counts.append(len(calls))
        calls.clear()
    assert counts == [4, 4, 0, 0]  # four parameters of four shapes


def test_rebuilt_updates_follow_hyperparameters_and_parameters_against_torch():
    """Updates rebuilt from recipes take each step's hyperparameters (a scheduled learning rate, weight decay,
    betas, eps and maximize changed between steps, two groups) and each parameter's own tensors (one given new
    data, a float32 one beside the float64 model's): against torch."""
    m, tm = models()
    w, tw = nn.Parameter(lt.asarray(X[0, :3], dtype=lt.float32)), torch.nn.Parameter(torch.tensor(X[0, :3]).float())
    p, tp = [*m.parameters(), w], [*tm.parameters(), tw]
    opt = optim.AdamW([{"params": p[:2]}, {"params": p[2:], "lr": 0.02, "amsgrad": True}], lr=0.01)
    topt = torch.optim.AdamW([{"params": tp[:2]}, {"params": tp[2:], "lr": 0.02, "amsgrad": True}], lr=0.01)
    sched = optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.7)
    tsched = torch.optim.lr_scheduler.StepLR(topt, step_size=1, gamma=0.7)
    changes = {3: ("weight_decay", 0.2), 4: ("betas", (0.7, 0.9)), 5: ("eps", 1e-3), 6: ("maximize", True),
               7: ("weight_decay", 0.0)}
    x, y, tx, ty = lt.asarray(X), lt.asarray(Y), torch.tensor(X), torch.tensor(Y)
    for step in range(9):
        if step in changes:
            for g in (*opt.param_groups, *topt.param_groups):
                g[changes[step][0]] = changes[step][1]
        if step == 5:  # the last bias given new data, in both
            p[3].node = lt.asarray(Y[0]).node
            with torch.no_grad():
                tp[3].copy_(torch.tensor(Y[0]))
        # the float32 parameter's own term: its float32 rounding stays out of the float64 model's gradients
        loss = nn.functional.mse_loss(m(x), y) + (w.cast(F64) ** 2).sum()
        tloss = torch.nn.functional.mse_loss(tm(tx), ty) + (tw.double() ** 2).sum()
        for o, lo in ((opt, loss), (topt, tloss)):
            o.zero_grad()
            lo.backward()
            o.step()
        lt.realize(*p)
        for q, tq in zip(p, tp):
            check(q, tq)
        sched.step()
        tsched.step()


def test_zero_grad_and_skipping_parameters_without_grad():
    m, _ = models()
    opt = optim.SGD(m.parameters(), lr=0.1)
    first = next(iter(m.parameters()))
    before = first.numpy().copy()
    opt.step()  # no gradients yet: nothing changes
    np.testing.assert_array_equal(first.numpy(), before)
    nn.functional.mse_loss(m(lt.asarray(X)), lt.asarray(Y)).backward()
    opt.zero_grad(set_to_none=False)
    check(first.grad, np.zeros_like(before))
    opt.zero_grad()
    assert first.grad is None


def test_state_dict_round_trip():
    m, opt = train_both(lambda p: optim.Adam(p, lr=0.01), lambda p: torch.optim.Adam(p, lr=0.01), steps=2)
    sd = opt.state_dict()
    assert float(sd["state"][0]["step"]) == 2 and sd["param_groups"][0]["lr"] == 0.01
    opt2 = optim.Adam(m.parameters(), lr=0.5)
    opt2.load_state_dict(sd)
    assert opt2.param_groups[0]["lr"] == 0.01
    p0 = next(m.parameters())
    check(opt2.state[id(p0)]["exp_avg"], opt.state[id(p0)]["exp_avg"])


def test_argument_errors():
    m, _ = models()
    with pytest.raises(ValueError):
        optim.SGD(m.parameters(), lr=-1)
    with pytest.raises(ValueError):
        optim.SGD(m.parameters(), lr=0.1, nesterov=True)
    with pytest.raises(ValueError):
        optim.Adam(m.parameters(), betas=(1.0, 0.9))
    with pytest.raises(ValueError):
        optim.Adam([])
    with pytest.raises(TypeError):
        optim.SGD([lt.asarray([1, 2])], lr=0.1)


def step(m, opt, scale: float) -> None:
    loss = nn.functional.mse_loss(m(lt.asarray(X)) * scale, lt.asarray(Y))
    opt.zero_grad()
    loss.backward()
    opt.step()
    lt.realize(loss, *m.parameters())


@pytest.mark.parametrize("name", ["sgd_momentum", "adam_amsgrad", "adamw"])
def test_optimizers_and_their_state_dicts_pickle_and_deepcopy(name):
    """A model and its optimizer pickled or deep-copied together (their state pending, as after a step)
    train on bit for bit as the originals do: the copy's state belongs to the copy's parameters, whose ids
    are new. The copy's step counts are still one tensor for the parameters that step together. A pickled
    state dict loads into a new optimizer that trains on the same way."""
    make, _ = OPTIMIZERS[name]
    m, _ = models()
    opt = make(m.parameters())
    step(m, opt, 1.0)
    m.zero_grad()
    nn.functional.mse_loss(m(lt.asarray(X)) * 2.0, lt.asarray(Y)).backward()
    opt.step()  # pending: realized by the copy
    copies = [pickle.loads(pickle.dumps((m, opt))), copy.deepcopy((m, opt))]
    fresh_m = copy.deepcopy(m)
    fresh_opt = make(fresh_m.parameters())
    fresh_opt.load_state_dict(pickle.loads(pickle.dumps(opt.state_dict())))
    for cm, copt in copies:
        assert len(copt.state) == len(opt.state) and all(id(p) in copt.state for p in cm.parameters())
        steps = {id(s["step"].node) for s in copt.state.values() if "step" in s}
        assert len(steps) <= 1
    for scale in (3.0, 0.5):
        for pair in ((m, opt), *copies, (fresh_m, fresh_opt)):
            step(*pair, scale)
    for cm, _ in (*copies, (fresh_m, fresh_opt)):
        for p, cp in zip(m.parameters(), cm.parameters()):
            np.testing.assert_array_equal(cp.numpy(), p.numpy())


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


@pytest.mark.parametrize("line_search", [None, "strong_wolfe"])
def test_lbfgs_matches_torch(line_search):
    """Rosenbrock's function from the same start: every iterate of L-BFGS (float64) as PyTorch's."""
    start = np.array([-1.5, 2.0, 0.5, -0.3])
    p, q = lt.asarray(start.copy()).requires_grad_(), torch.tensor(start.copy(), requires_grad=True)
    a = optim.LBFGS([p], lr=0.5 if line_search is None else 1.0, max_iter=6, history_size=4,
                    line_search_fn=line_search)
    b = torch.optim.LBFGS([q], lr=0.5 if line_search is None else 1.0, max_iter=6, history_size=4,
                          line_search_fn=line_search)

    def rosenbrock(x):
        return (100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2).sum()

    def closure_a():
        a.zero_grad()
        loss = rosenbrock(p)
        loss.backward()
        return loss

    def closure_b():
        b.zero_grad()
        loss = rosenbrock(q)
        loss.backward()
        return loss

    for _ in range(4):
        la, lb = a.step(closure_a), b.step(closure_b)
        np.testing.assert_allclose(float(la), float(lb.detach()), rtol=1e-9)
        np.testing.assert_allclose(p.numpy(), q.detach().numpy(), rtol=1e-8, atol=1e-10)
    assert a.lbfgs["func_evals"] == b.state[b._params[0]]["func_evals"]
