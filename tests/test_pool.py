"""The CPU's thread pool (`kernels/llvm/pool.py`): every chunk of a job runs once, in the order of its phases,
whichever threads claim them, whether the pool's threads spin or sleep between jobs, from several Python threads
at once; a launch interrupted or refused leaves no thread running its chunks; an idle pool sleeps."""
from __future__ import annotations

import ctypes
import itertools
import os
import threading
import time

import numpy as np
import pytest

import lazytensor as lt
from lazytensor.kernels.llvm import compile_kernel, pool, runtime
from lazytensor.kernels.llvm.pool import FLAGS, FUNCTIONS, MAX_CHUNKS, Pool


def table(chunks: list[tuple[ctypes._CFuncPtr, int, int, int]]) -> ctypes.Array:
    """A job's chunk table of `(fn, lo, hi, after)` chunks, whose buffers and parameters are the job's base."""
    fields = [f for fn, lo, hi, after in chunks for f in (ctypes.cast(fn, ctypes.c_void_p).value, lo, hi, after, 0, 0)]
    return (ctypes.c_int64 * len(fields))(*fields)


def recorder(log: list[tuple[int, int, int]], pause: float = 0.0) -> ctypes._CFuncPtr:
    """A chunk function (Python's) that logs `(lo, hi, thread)` for each chunk it runs, taking `pause` seconds."""
    def chunk(buffers: int, params: int, lo: int, hi: int) -> None:
        log.append((lo, hi, threading.get_ident()))
        time.sleep(pause)
    return runtime._KernelFn(chunk)


def asleep(p: Pool, k: int) -> bool:
    return ctypes.c_int64.from_address(p.job + 8 * (FLAGS + k)).value != 0


def until(condition, seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.001)
    return True


def new_pool(spin: float = pool.SPIN_SECONDS) -> Pool:
    """A pool of its own, of the process's functions (compiled once), whose threads spin `spin` seconds."""
    runtime.pool()
    return Pool(*(runtime.jit().address(name) for name in FUNCTIONS), spin_seconds=spin)


@pytest.fixture(params=[pool.SPIN_SECONDS, 0.0], ids=["spinning", "sleeping"])
def fresh_pool(request):
    """A pool of its own, closed after the test, whose threads spin after each job or sleep at once."""
    p = new_pool(request.param)
    yield p
    p.close()


def test_every_chunk_runs_once_after_the_phases_before_it(fresh_pool):
    """Three phases of chunks that three threads claim, the pool's threads spinning between jobs or asleep:
    each chunk runs once, none before every chunk of the phases before it has finished."""
    log: list[tuple[int, int, int]] = []
    fn = recorder(log, pause=0.0005)
    phases = [range(5), range(5, 7), range(7, 16)]
    chunks = [(fn, i, i + 1, phase.start) for phase in phases for i in phase]
    t = table(chunks)
    for _ in range(5):
        log.clear()
        fresh_pool.run(t, len(chunks), 0, 3)
        assert sorted(lo for lo, _, _ in log) == list(range(16))
        for phase, later in itertools.pairwise(phases):
            # a chunk starts after the phases before it finished: it is logged after all of them
            first_later = min(k for k, (lo, _, _) in enumerate(log) if lo in later)
            assert all(lo not in phase for lo, _, _ in log[first_later:])


def test_a_sleeping_pool_thread_wakes_for_the_next_job(fresh_pool):
    """Whether a pool thread still spins or went back to blocking, the next job reaches it: the calling thread's
    first chunk waits until another thread has claimed a chunk too."""
    caller = threading.get_ident()
    helped = threading.Event()

    def chunk(buffers: int, params: int, lo: int, hi: int) -> None:
        if threading.get_ident() != caller:
            helped.set()
        else:
            helped.wait(10)
    fn = runtime._KernelFn(chunk)
    t = table([(fn, i, i + 1, 0) for i in range(4)])
    for launch in range(4):
        if launch == 3:  # past the spin: the thread blocks in Python, and is woken
            assert until(lambda: asleep(fresh_pool, 0))
        helped.clear()
        fresh_pool.run(t, 4, 0, 2)
        assert helped.is_set(), f"launch {launch}: no pool thread took part"


def test_an_idle_pool_sleeps(fresh_pool):
    """After a job the pool's threads spin for at most SPIN_SECONDS, then block: an idle process burns no core."""
    fn = recorder([])
    fresh_pool.run(table([(fn, i, i + 1, 0) for i in range(8)]), 8, 0, 3)
    assert until(lambda: asleep(fresh_pool, 0) and asleep(fresh_pool, 1))
    cpu = time.process_time()
    time.sleep(0.3)
    assert time.process_time() - cpu < 0.05


def test_a_job_too_large_for_the_claim_word_is_refused(fresh_pool):
    fn = recorder(log := [])
    with pytest.raises(ValueError, match="chunks"):
        fresh_pool.run(table([(fn, 0, 1, 0)]), MAX_CHUNKS + 1, 0, 2)
    fresh_pool.run(table([(fn, 0, 1, 0)]), 1, 0, 2)
    assert [lo for lo, _, _ in log] == [0]


def test_a_closed_pool_runs_jobs_on_the_calling_thread(fresh_pool):
    log: list[tuple[int, int, int]] = []
    fn = recorder(log)
    fresh_pool.run(table([(fn, i, i + 1, 0) for i in range(6)]), 6, 0, 2)
    fresh_pool.close()
    assert not any(thread.is_alive() for thread in fresh_pool.threads)
    log.clear()
    fresh_pool.run(table([(fn, i, i + 1, 0) for i in range(6)]), 6, 0, 2)
    assert sorted(lo for lo, _, _ in log) == list(range(6)) and {ident for _, _, ident in log} == {threading.get_ident()}


def increment_program():
    """A compiled `x + 1` and how to run it in place on an array (each launch adds one to every element once)."""
    (item,) = lt.schedule(lt.asarray(np.zeros(1 << 14, np.int64), device="cpu") + 1)
    program, _ = compile_kernel(item.kernel)
    return lambda a: program([a.ctypes.data, a.ctypes.data], item.params)


def test_many_short_launches_from_two_threads_at_once(monkeypatch, fresh_pool):
    """Two Python threads launch small kernels over and over, on the pool (one of them at a time; the other runs
    alone meanwhile): every launch adds one to every element of its own array, exactly once."""
    monkeypatch.setenv("LT_NUM_THREADS", "3")
    monkeypatch.setattr(runtime, "PARALLEL_MIN_WORK", 1)
    monkeypatch.setattr(runtime, "_pool", fresh_pool)
    increment = increment_program()
    arrays = [np.zeros(1 << 14, np.int64) for _ in range(2)]
    errors: list[BaseException] = []

    def launches(a: np.ndarray) -> None:
        try:
            for k in range(1, 301):
                increment(a)
                assert (a == k).all(), f"after launch {k}: {np.unique(a)}"
        except BaseException as e:  # noqa: BLE001 (reported by the main thread)
            errors.append(e)

    threads = [threading.Thread(target=launches, args=(a,)) for a in arrays]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors[0]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork")
def test_a_forked_child_starts_a_pool_of_its_own(monkeypatch):
    """The parent's pool threads are not in a child process: its launches start its own."""
    monkeypatch.setenv("LT_NUM_THREADS", "2")
    monkeypatch.setattr(runtime, "PARALLEL_MIN_WORK", 1)
    increment = increment_program()
    a = np.zeros(1 << 14, np.int64)
    increment(a)
    pid = os.fork()
    if pid == 0:  # the child: leave without running the parent's exit handlers, whatever happens
        code = 1
        try:
            increment(a)
            code = 0 if (a == 2).all() and runtime.pool().threads and runtime.pool().threads[0].is_alive() else 2
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert (a == 1).all()

