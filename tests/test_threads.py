"""Several Python threads realizing, compiling and replaying `lt.jit` steps at once give the same bits as one
thread, and never crash: the graph, the caches and the compiler are shared (see README, Threads)."""
from __future__ import annotations

import threading
from collections.abc import Callable

import numpy as np

import lazytensor as lt
from conftest import classifier_step, graph_lines, marked_line
from lazytensor import nn, optim
from lazytensor.helpers import KnownUserLine

THREADS = 8
# Four shape variants, two threads each: the same new kernels compile in two threads at once, and different
# ones beside them. The sizes appear in no other test file, so these kernels are compiled here, in threads.
VARIANTS = 4
SHARED = np.random.default_rng(99).random((301, 45), dtype=np.float32)
# One jitted function for all threads: its calls take turns, each replaying on its own thread's inputs.
shared_step = lt.jit(lambda x, w: ((x @ w).relu() * 0.5).sum(axis=0))


def workload(t: int, shared: lt.Tensor) -> list[np.ndarray]:
    """What thread `t` computes: elementwise chains, reductions, contractions (one packing a reduction),
    random numbers from its own generator, a shared lazy tensor, and lt.jit training and inference steps."""
    v = t % VARIANTS
    rng = np.random.default_rng(t)
    x = lt.asarray(rng.standard_normal((203 + v, 67)).astype(np.float32))
    y = lt.asarray(rng.standard_normal((203 + v, 67)).astype(np.float32))
    w = lt.asarray(rng.standard_normal((67, 35 + v)).astype(np.float32))
    z = lt.asarray(rng.standard_normal((117 + v, 3, 67)).astype(np.float32))
    big = lt.asarray(rng.standard_normal(1 << 18).astype(np.float32))
    out = [((x * 1.5 + y).exp() - y.sin()).numpy(), x.sum(axis=1).numpy(), x.max(axis=0).numpy(),
           x.softmax(-1).numpy(), (big * big).sum().numpy(), ((x @ w) + 1).relu().numpy(),
           (z.sum(1) @ w).numpy(), (x - x.mean(axis=0)).numpy(), (shared * (t + 1)).sum(axis=1).numpy()]
    lt.manual_seed(t)
    out.append(lt.rand(1000 + v).numpy())
    out += [shared_step(x, w).numpy() for _ in range(4)]
    return out + train(v, rng)


def train(v: int, rng: np.random.Generator) -> list[np.ndarray]:
    """Five Adam steps of a small MLP through lt.jit (the last ones replays): the losses and the parameters."""
    model = nn.Sequential(nn.Linear(24 + v, 32), nn.ReLU(), nn.Linear(32, 5))
    opt = optim.Adam(model.parameters(), lr=1e-2)
    step = lt.jit(classifier_step(model, opt))

    losses = []
    for _ in range(5):
        xb = lt.asarray(rng.random((16, 24 + v), dtype=np.float32))
        losses.append(step(xb, lt.asarray(rng.integers(0, 5, 16))).numpy())
    return losses + [p.numpy() for p in model.parameters()]


def in_threads(fn: Callable[[int], list[np.ndarray]]) -> list[list[np.ndarray]]:
    """`fn(t)` for every thread t, all started together; an exception in one is raised here."""
    results: list = [None] * THREADS
    errors: list[BaseException] = []
    start = threading.Barrier(THREADS)

    def run(t: int) -> None:
        try:
            start.wait()
            results[t] = [np.array(a) for a in fn(t)]
        except BaseException as e:  # noqa: BLE001 (reported by the test, in the main thread)
            errors.append(e)

    threads = [threading.Thread(target=run, args=(t,)) for t in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]
    return results


def test_threads_realize_compile_and_replay_the_same_bits_as_one_thread():
    shared = lt.asarray(SHARED) * 2 - 1  # a lazy tensor every thread realizes as part of its own graphs
    threaded = in_threads(lambda t: workload(t, shared))
    for t in range(THREADS):
        alone = workload(t, shared)
        assert len(alone) == len(threaded[t])
        for k, (got, expected) in enumerate(zip(threaded[t], alone)):
            assert got.dtype == expected.dtype and got.shape == expected.shape, (t, k)
            np.testing.assert_array_equal(got, expected, err_msg=f"thread {t}, result {k}")
    assert lt.stats().replays > 0


def test_a_known_user_line_is_its_own_threads():
    """While one thread builds a backward pass (its rules' ops name the line of its backward call, known without
    walking the stack), another thread's ops name that thread's own lines."""

    inside, done = threading.Event(), threading.Event()

    def hold_a_known_line():
        with KnownUserLine(("elsewhere.py", 1)):
            inside.set()
            done.wait(10)

    other = threading.Thread(target=hold_a_known_line)
    other.start()
    try:
        inside.wait(10)
        x = lt.asarray(np.ones(3, dtype=np.float32)).realize()
        y = x * 2.0  # marker: this thread
        assert graph_lines(y) == {marked_line(__file__, "# marker: this thread")}
    finally:
        done.set()
        other.join()
