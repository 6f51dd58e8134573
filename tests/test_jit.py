"""lt.jit against the same function run without it: replays give the same bits (the same kernels run), the
state (parameters, optimizer moments, step counts, the random generator) carries over from call to call,
a new input signature records again, a replay schedules and compiles nothing, and what cannot be replayed
is an error naming the user's line."""
from __future__ import annotations

import functools

import numpy as np
import pytest
import torch

import lazytensor as lt
from conftest import check, classifier_step
from lazytensor import nn, optim
from lazytensor.jit import MAX_RECORDS

RNG = np.random.default_rng(0)
BATCHES = [(RNG.random((16, 20), dtype=np.float32), RNG.integers(0, 5, 16)) for _ in range(7)]


def assert_same(got: lt.Tensor, expected: np.ndarray) -> None:
    assert got.dtype.name == expected.dtype.name and got.shape == expected.shape
    np.testing.assert_array_equal(got.numpy(), expected)


def test_plain_function_matches_torch_and_outputs_are_fresh():
    def f(x, y, scale=None):
        return {"sum": (x * y + 1).sum(axis=0), "diff": [x - y, (x * 2).exp()]}

    jf = lt.jit(f)
    results = []
    for k in range(5):
        a, b = RNG.random((4, 6), dtype=np.float32), RNG.random((4, 6), dtype=np.float32)
        out = jf(lt.asarray(a), y=lt.asarray(b))
        ta, tb = torch.from_numpy(a), torch.from_numpy(b)
        check(out["sum"], (ta * tb + 1).sum(0))
        check(out["diff"][0], ta - tb)
        check(out["diff"][1], (ta * 2).exp())
        results.append((out, (ta * tb + 1).sum(0)))
    assert jf.entries and next(iter(jf.entries.values())).replay is not None
    for out, expected in results:  # a later call never overwrites an earlier call's outputs
        check(out["sum"], expected)


def mlp_step(make_opt, dropout: float = 0.0):
    lt.manual_seed(0)
    layers = [nn.Linear(20, 32), nn.ReLU(), nn.Dropout(dropout), nn.Linear(32, 5)]
    model = nn.Sequential(*layers)
    opt = make_opt(model.parameters())
    return model, opt, classifier_step(model, opt)


def run_steps(step, model) -> list[tuple[np.ndarray, list[np.ndarray]]]:
    out = []
    for x, y in BATCHES:
        loss = step(lt.asarray(x), lt.asarray(y))
        out.append((loss.numpy(), [p.numpy().copy() for p in model.parameters()]))
    return out


@pytest.mark.parametrize("make_opt,dropout", [
    (lambda p: optim.Adam(p, lr=1e-2), 0.0),
    (lambda p: optim.AdamW(p, lr=1e-2, amsgrad=True), 0.0),
    (lambda p: optim.SGD(p, lr=0.05, momentum=0.9, nesterov=True), 0.0),
    (lambda p: optim.Adam(p, lr=1e-2), 0.25),
], ids=["adam", "adamw_amsgrad", "sgd_momentum", "adam_dropout"])
def test_training_step_matches_the_lazy_run_exactly(make_opt, dropout):
    model, opt, step = mlp_step(make_opt, dropout)
    rng_state = lt.random.get_rng_state()
    expected = run_steps(step, model)
    rng_after = lt.random.get_rng_state()

    model, opt, step = mlp_step(make_opt, dropout)
    lt.random.set_rng_state(rng_state)  # the same draws: dropout masks bit for bit
    jstep = lt.jit(step)
    lt.reset_stats()
    got = run_steps(jstep, model)
    # an optimizer's first step (amsgrad's first two) has a graph of its own: recorded, not replayed
    assert lt.stats().replays >= len(BATCHES) - MAX_RECORDS
    for (loss, params), (jloss, jparams) in zip(expected, got):
        np.testing.assert_array_equal(jloss, loss)
        for p, q in zip(params, jparams):
            np.testing.assert_array_equal(q, p)
    assert lt.random.get_rng_state() == rng_after
    state = opt.state[id(next(model.parameters()))]
    if "step" in state:
        assert float(state["step"]) == len(BATCHES)


def test_replay_schedules_and_compiles_nothing():
    _, _, step = mlp_step(lambda p: optim.Adam(p, lr=1e-2))
    jstep = lt.jit(step)
    x, y = lt.asarray(BATCHES[0][0]), lt.asarray(BATCHES[0][1])
    for _ in range(4):
        jstep(x, y)
    lt.reset_stats()
    jstep(x, y)
    s = lt.stats()
    assert (s.replays, s.realizes, s.kernels_compiled) == (1, 0, 0)
    assert s.kernels_launched > 0


def test_replay_under_debug_launches_kernel_by_kernel_with_the_same_results(monkeypatch, capsys):
    """On the CPU a replay runs its kernels as one batch; under LT_DEBUG it launches them one at a time, to
    report each: the same parameters bit for bit, and a line per kernel."""
    params = []
    for debug in ("0", "1"):
        monkeypatch.setenv("LT_DEBUG", debug)
        model, _, step = mlp_step(lambda p: optim.Adam(p, lr=1e-2), dropout=0.25)
        jstep = lt.jit(step)
        x, y = lt.asarray(BATCHES[0][0]), lt.asarray(BATCHES[0][1])
        for _ in range(5):
            jstep(x, y)
        capsys.readouterr()
        lt.reset_stats()
        jstep(x, y)
        assert lt.stats().replays == 1
        lines = [line for line in capsys.readouterr().err.splitlines() if line.startswith("lt: ")]
        assert len(lines) == (lt.stats().kernels_launched if debug == "1" else 0)
        params.append([p.numpy() for p in model.parameters()])
    for p, q in zip(*params):
        np.testing.assert_array_equal(p, q)


def test_new_input_shape_records_again_and_both_keep_working():
    def f(x):
        return (x - x.mean(axis=1, keepdims=True)).exp()

    jf = lt.jit(f)
    for n in [3, 3, 3, 5, 5, 5, 3, 5]:
        a = RNG.random((n, 4), dtype=np.float32)
        lt.reset_stats()
        out = jf(lt.asarray(a))
        check(out, (torch.from_numpy(a) - torch.from_numpy(a).mean(1, keepdim=True)).exp())
    assert len(jf.entries) == 2
    assert lt.stats().replays == 1 and lt.stats().kernels_compiled == 0


def test_state_rebound_outside_records_again():
    model, _, step = mlp_step(lambda p: optim.SGD(p, lr=0.1))
    jstep = lt.jit(step)
    x, y = lt.asarray(BATCHES[0][0]), lt.asarray(BATCHES[0][1])
    for _ in range(3):
        jstep(x, y)
    first = next(model.parameters())
    new = RNG.random(first.shape, dtype=np.float32)
    first.node = lt.asarray(new).node  # what load_state_dict does
    lt.reset_stats()
    jstep(x, y)
    assert lt.stats().replays == 0  # recorded, not replayed: the state it read is gone
    reference, _, rstep = mlp_step(lambda p: optim.SGD(p, lr=0.1))
    for _ in range(3):
        rstep(x, y)
    next(reference.parameters()).node = lt.asarray(new).node
    rstep(x, y)
    for p, q in zip(model.parameters(), reference.parameters()):
        np.testing.assert_array_equal(p.numpy(), q.numpy())


def test_reading_data_inside_is_an_error_naming_the_line():
    def f(x):
        s = x.sum()
        if s.item() > 0:  # the line the error names
            return x * 2
        return x

    jf = lt.jit(f)
    with pytest.raises(lt.JitError, match=r"item\(\).*test_jit.py:\d+"):
        jf(lt.asarray([1.0, 2.0]))


def test_host_data_made_inside_is_an_error_naming_the_line():
    def f(x):
        return x + lt.asarray(np.ones(3, dtype=np.float32))  # a new buffer every call

    jf = lt.jit(f)
    x = lt.asarray(np.zeros(3, dtype=np.float32))
    with pytest.raises(lt.JitError, match=r"made at .*test_jit.py:\d+ that is a new buffer on every call"):
        for _ in range(5):
            jf(x)


def test_empty_results_replay():
    # found by the fuzzer: an op's empty result is a new (empty) buffer on every call that no kernel writes,
    # which the jit took for host data made inside the function and refused to replay
    def f(x):
        return x[3:1] + 1, lt.concat([x[:0], x * 2]), x.sum()

    jf = lt.jit(f)
    for k in range(5):
        arr = RNG.random(4, dtype=np.float32)
        empty, doubled, total = jf(lt.asarray(arr))
        assert empty.shape == (0,) and empty.dtype == lt.float32
        assert_same(doubled, arr * 2)
        check(total, torch.from_numpy(arr).sum())
    assert lt.stats().replays == 3


def test_changing_python_scalar_is_an_error():
    scale = [1.0]

    def f(x):
        scale[0] += 1
        return x * scale[0]

    jf = lt.jit(f)
    x = lt.asarray(np.ones(3, dtype=np.float32))
    with pytest.raises(lt.JitError, match="Python scalar"):
        for _ in range(5):
            jf(x)


def test_rebinding_an_argument_is_an_error():
    def f(x):
        x += 1
        return x.sum()

    with pytest.raises(lt.JitError, match="rebinds an argument"):
        lt.jit(f)(lt.asarray(np.ones(3, dtype=np.float32)))


def test_random_draws_continue_the_sequence_and_a_new_seed_records_again():
    def f(x):
        return x + lt.rand(x.shape)

    x = lt.asarray(np.zeros(8, dtype=np.float32))
    lt.manual_seed(5)
    expected = [f(x).numpy() for _ in range(5)]
    jf = lt.jit(f)
    lt.manual_seed(5)
    for e in expected:
        assert_same(jf(x), e)
    lt.manual_seed(5)  # same seed: the draws restart, replayed
    assert_same(jf(x), expected[0])
    lt.manual_seed(6)
    lt.reset_stats()
    other = jf(x)
    assert lt.stats().replays == 0  # the seed is a kernel parameter: recorded again
    lt.manual_seed(6)
    assert_same(other, f(x).numpy())


def test_a_function_without_draws_leaves_the_generator_alone():
    jf = lt.jit(lambda x: x * 2)
    x = lt.asarray(np.ones(4, dtype=np.float32))
    lt.reset_stats()
    for k in range(6):
        state = lt.random.get_rng_state()
        jf(x)
        assert lt.random.get_rng_state() == state
        if k >= 2:  # draws outside, once replaying, advance the generator; a replay must not move it back
            lt.rand(3).realize()
    assert lt.stats().replays == 4


def test_nested_jit_runs_plainly_inside_a_recording():
    inner = lt.jit(lambda x: x * 3)
    outer = lt.jit(lambda x: inner(x) + 1)
    for k in range(4):
        a = np.full(4, k, dtype=np.float32)
        assert_same(outer(lt.asarray(a)), a * 3 + 1)


def test_batchnorm_running_statistics_carry_over():
    def make():
        lt.manual_seed(0)
        bn = nn.BatchNorm1d(6)

        def step(x):
            out = bn(x).sum()
            lt.realize(out, bn.running_mean, bn.running_var)
            return out

        return bn, step

    bn, step = make()
    xs = [lt.asarray(RNG.random((8, 6), dtype=np.float32)) for _ in range(6)]
    expected = [(step(x).numpy(), bn.running_mean.numpy().copy(), bn.running_var.numpy().copy()) for x in xs]
    bn, step = make()
    jstep = lt.jit(step)
    for x, (out, mean, var) in zip(xs, expected):
        assert_same(jstep(x), out)
        assert_same(bn.running_mean, mean)
        assert_same(bn.running_var, var)


def test_user_state_and_returning_it():
    acc = lt.zeros(3)

    def f(x):
        nonlocal acc
        acc += x
        acc.realize()
        return acc, acc * 2, "static"

    jf = lt.jit(f)
    total, outs = np.zeros(3, dtype=np.float32), []
    for k in range(6):
        a = RNG.random(3, dtype=np.float32)
        total = total + a
        same, double, note = jf(lt.asarray(a))
        assert same is acc and note == "static"  # the object returned every time, as without the jit
        assert_same(acc, total)
        assert_same(double, total * 2)
        outs.append((double, total * 2))
    for double, expected in outs:  # a new tensor on each call, which keeps its value
        assert_same(double, expected)


def test_step_returning_nothing_with_a_static_keyword():
    """The update that opt.step() leaves pending is realized at the end of each call; a new value of a
    non-tensor argument is a new signature."""
    def make():
        lt.manual_seed(0)
        model = nn.Sequential(nn.Linear(20, 8), nn.Tanh(), nn.Linear(8, 5))
        opt = optim.Adam(model.parameters(), lr=1e-2)

        def step(x, y, *, scale):
            loss = nn.functional.cross_entropy(model(x) * scale, y)
            opt.zero_grad()
            loss.backward()
            opt.step()

        return model, step

    plain, step = make()
    model, jstep = make()
    jstep = lt.jit(jstep)
    for k, (x, y) in enumerate(BATCHES):
        scale = 1.0 if k < 5 else 2.0
        step(lt.asarray(x), lt.asarray(y), scale=scale)
        assert jstep(lt.asarray(x), lt.asarray(y), scale=scale) is None
        for p, q in zip(plain.parameters(), model.parameters()):
            assert_same(q, p.numpy())
    assert len(jstep.entries) == 2


def test_jitted_method():
    class Scaler:
        def __init__(self, k: float):
            self.k = k

        @lt.jit
        def __call__(self, x):
            return x * self.k

    twice, thrice = Scaler(2.0), Scaler(3.0)
    x = lt.asarray(np.arange(4, dtype=np.float32))
    for _ in range(4):
        assert_same(twice(x), np.arange(4, dtype=np.float32) * 2)
        assert_same(thrice(x), np.arange(4, dtype=np.float32) * 3)
    assert len(Scaler.__call__.entries) == 2


def test_a_replay_checks_the_indexes_that_come_from_data():
    """A replay computes an op's index check (here cross_entropy's targets) as the recorded calls did, and
    raises the same IndexError where a new input is out of range."""
    _, _, step = mlp_step(lambda p: optim.SGD(p, lr=0.1))
    jstep = lt.jit(step)
    for x, y in BATCHES[:4]:
        jstep(lt.asarray(x), lt.asarray(y))
    before = lt.stats().replays
    x, y = BATCHES[4]
    jstep(lt.asarray(x), lt.asarray(y))
    assert lt.stats().replays == before + 1
    with pytest.raises(IndexError, match="cross_entropy: a target is outside"):
        jstep(lt.asarray(x), lt.asarray(np.where(np.arange(16) == 3, 5, y)))
    assert lt.stats().replays == before + 2


def test_static_argnums_and_argnames_as_jax_takes_them():
    """JAX's spelling: `partial(lt.jit, static_argnums=1)`; non-tensor arguments are static anyway (a new value
    records again), and a tensor where a static argument goes is an error."""
    @functools.partial(lt.jit, static_argnums=1, static_argnames="scale")
    def power(a, n, scale=1.0):
        return a ** n * scale
    x = lt.asarray(np.array([1.0, 2.0, 3.0], np.float32))
    for n in (2, 3, 2):
        check(power(x, n, scale=0.5), np.array([1.0, 2.0, 3.0], np.float32) ** n * 0.5)
    with pytest.raises(lt.JitError, match="argument 1 is static"):
        power(x, lt.asarray(2))
    with pytest.raises(lt.JitError, match="argument 'scale' is static"):
        power(x, 2, scale=lt.asarray(2.0))
