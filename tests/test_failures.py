"""Failures in the middle of the work: a KeyboardInterrupt (Ctrl-C) raised inside a compile, a launch, a realize
or an lt.jit replay leaves the library usable, its caches consistent and the next realize right; memory that is
not there is a MemoryError saying how much, never a crash."""
from __future__ import annotations

import importlib
import signal
import threading
import time

import numpy as np
import pytest
import torch
from test_contraction import data

import lazytensor as lt
from conftest import check, classifier_step
from lazytensor import nn, optim
from lazytensor.device import HostMemoryPool
from lazytensor.kernels.llvm import compile_kernel, runtime

realize = importlib.import_module("lazytensor.realize")  # the module, which `lt.realize` the function hides
jit = importlib.import_module("lazytensor.jit")  # the module, which `lt.jit` the decorator hides


def interrupt_once(monkeypatch, owner, *names: str, after: bool = False):
    """Make the first call of any of `owner`'s functions `names` raise KeyboardInterrupt (after doing its work
    if `after`); from then on they all behave again."""
    originals = {name: getattr(owner, name) for name in names}

    def interrupting(name: str):
        def interrupted(*args, **kwargs):
            for n, original in originals.items():
                monkeypatch.setattr(owner, n, original)
            if after:
                originals[name](*args, **kwargs)
            raise KeyboardInterrupt
        return interrupted

    for name in names:
        monkeypatch.setattr(owner, name, interrupting(name))


def expression(shape: tuple[int, int], seed: int) -> tuple[lt.Tensor, torch.Tensor]:
    """A contraction with an epilogue and a reduction, on data of a shape no other test uses."""
    x, w = data(shape, seed=seed), data((shape[1], 29), seed=seed + 1)
    tx, tw = torch.tensor(x), torch.tensor(w)
    return ((lt.asarray(x, device="cpu") @ lt.asarray(w, device="cpu")).relu().sum(axis=1),
            (tx @ tw).relu().sum(1))


def test_an_interrupted_compile_compiles_again(monkeypatch):
    """Ctrl-C after the kernel's module went to the JIT engine, before it was finished: nothing is cached, and
    the kernel compiles again (under a name of its own) and runs."""
    got, expected = expression((61, 47), seed=1)
    interrupt_once(monkeypatch, runtime.jit().engine, "finalize_object", after=False)
    with pytest.raises(KeyboardInterrupt):
        got.realize()
    assert not got.node.realized
    got.realize()
    check(got, expected)
    assert lt.stats().kernels_compiled >= 1


def test_an_interrupt_during_launches_on_the_pool(monkeypatch):
    """Ctrl-C while kernels run on the pool's threads: a launch is one compiled call, which the interrupt cannot
    cut short, so when it goes on every chunk of every launch has run once and no thread writes to the buffers
    any more (they may be freed and reused by then); the next launches run as before."""
    monkeypatch.setenv("LT_NUM_THREADS", "2")
    monkeypatch.setattr(runtime, "PARALLEL_MIN_WORK", 1)
    a = np.zeros(1 << 20, np.int64)
    (item,) = lt.schedule(lt.asarray(a, device="cpu") + 1)
    program, _ = compile_kernel(item.kernel)
    launches, deadline = 0, time.monotonic() + 30
    interrupt = threading.Timer(0.05, signal.pthread_kill, (threading.main_thread().ident, signal.SIGINT))
    # Python's Ctrl-C handler, whatever the process started with: a shell starts a background job with SIGINT
    # ignored, and the loop below would never end
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt):
            interrupt.start()
            while time.monotonic() < deadline:
                program([a.ctypes.data, a.ctypes.data], item.params)  # in place: one more in every element
                launches += 1
    finally:
        signal.signal(signal.SIGINT, previous)
    # the interrupt went on between two launches, or as the last one returned
    assert np.unique(a).tolist() in ([launches], [launches + 1])
    last = a.copy()
    time.sleep(0.05)
    np.testing.assert_array_equal(a, last)
    got, expected = expression((67, 45), seed=3)
    check(got, expected)


def adam_steps(steps: int, interrupt_at: int | None, monkeypatch) -> list[np.ndarray]:
    lt.manual_seed(5)
    model = nn.Sequential(nn.Linear(13, 17), nn.ReLU(), nn.Linear(17, 3))
    opt = optim.Adam(model.parameters(), lr=1e-2)
    rng = np.random.default_rng(5)
    for k in range(steps):
        loss = nn.functional.cross_entropy(model(lt.asarray(rng.random((8, 13), dtype=np.float32))),
                                           lt.asarray(rng.integers(0, 3, 8)))
        opt.zero_grad()
        loss.backward()
        opt.step()
        if k == interrupt_at:
            interrupt_once(monkeypatch, realize, "run")
            with pytest.raises(KeyboardInterrupt):
                lt.realize(loss, *model.parameters())
        lt.realize(loss, *model.parameters())
        state = [v for s in opt.state.values() for v in s.values() if isinstance(v, lt.Tensor)]
        assert all(v.node.realized for v in state), "the state opt.step() left pending is realized with the step"
    return [p.numpy() for p in model.parameters()]


def test_an_interrupted_realize_keeps_the_pending_state(monkeypatch):
    """Ctrl-C between scheduling a training step and running it: the optimizer's state, left pending by
    `opt.step()`, is still realized with the next realize, and training goes on as if nothing happened."""
    for g, e in zip(adam_steps(3, 1, monkeypatch), adam_steps(3, None, monkeypatch)):
        np.testing.assert_array_equal(g, e)


def test_an_interrupted_replay_is_a_step_not_taken(monkeypatch):
    """Ctrl-C during an lt.jit replay's launches (after the first ran): the state (parameters, moments, step count, generator) is
    not rebound, so the interrupted call is a step not taken, and the next calls replay as before."""
    def trained(interrupt: bool) -> list[np.ndarray]:
        lt.manual_seed(7)
        model = nn.Sequential(nn.Linear(11, 19), nn.ReLU(), nn.Dropout(0.25), nn.Linear(19, 4))
        opt = optim.Adam(model.parameters(), lr=1e-2)
        rng = np.random.default_rng(7)
        batches = [(lt.asarray(rng.random((8, 11), dtype=np.float32)), lt.asarray(rng.integers(0, 4, 8)))
                   for _ in range(7)]
        step = lt.jit(classifier_step(model, opt))

        for k, (xb, yb) in enumerate(batches):
            if interrupt and k == 5:
                replays = lt.stats().replays
                interrupt_once(monkeypatch, jit, "launch_batch", "launch", after=True)
                with pytest.raises(KeyboardInterrupt):
                    step(xb, yb)
                assert lt.stats().replays == replays
            step(xb, yb)
        return [p.numpy() for p in model.parameters()]

    for g, e in zip(trained(True), trained(False)):
        np.testing.assert_array_equal(g, e)


def test_a_tensor_too_big_for_memory_is_a_memory_error():
    huge = lt.zeros(1 << 58) + 1  # 2**60 bytes
    with pytest.raises(MemoryError, match=r"cannot allocate 1\.00 EiB \(288230376151711744 elements of 4 bytes "
                                          r"each\), for a float32 tensor of shape \(288230376151711744,\) made at "
                                          r".*test_failures\.py:\d+"):
        huge.realize()
    with pytest.raises(MemoryError, match="cannot allocate 64.00 EiB"):  # more than an address space
        (lt.zeros((1 << 31, 1 << 33), dtype=lt.float32) * 2).realize()
    check(lt.arange(5) * 2, torch.arange(5) * 2)


def test_the_pool_gives_back_its_memory_before_failing(monkeypatch):
    pool = HostMemoryPool(limit=1 << 30)
    pool.array(np.dtype(np.float32), 1 << 20)  # freed at once: 4 MiB kept for reuse
    assert pool.cached_bytes == 4 << 20
    attempts = []
    new_block = HostMemoryPool._new_block

    def scarce(size: int) -> np.ndarray:
        attempts.append(pool.cached_bytes)
        if len(attempts) == 1:
            raise MemoryError
        return new_block(size)

    monkeypatch.setattr(HostMemoryPool, "_new_block", staticmethod(scarce))
    assert pool.array(np.dtype(np.float32), 3 << 20).size == 3 << 20
    assert attempts == [4 << 20, 0]
