"""What a launch of a compiled CPU program costs around its kernel, at 1 and 2 threads, in one run.

    python benchmarks/bench_launch.py [--repeat 9]

Times the calls of the runtime's programs on small inputs, so that the kernel takes about a microsecond and
the rest is the launch: a `Program` on the calling thread (a kernel below `PARALLEL_MIN_WORK`), the same
program handed to the pool (`PARALLEL_MIN_WORK` set to 1), a `SplitReductionProgram` (a staged program: its
scratch, its phases), a `Batch` of two programs (an `lt.jit` replay's call); then the pool path after a pause
of Python work (the pool's threads spin `pool.SPIN_SECONDS` after a job, then sleep, and the next launch wakes
them). Prints the median time of each, in microseconds.
"""
from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable

import numpy as np

import lazytensor as lt
from lazytensor.kernels.llvm import compile_kernel, runtime


def median_us(fn: Callable[[], object], repeat: int, number: int = 2000, pause: float = 0.0) -> float:
    """The median over `repeat` rounds of `fn`'s time in microseconds, after `pause` seconds of busy Python."""
    for _ in range(100):
        fn()
    times = []
    for _ in range(repeat):
        total = 0.0
        for _ in range(number if not pause else 50):
            end = time.perf_counter() + pause
            while time.perf_counter() < end:
                pass
            t0 = time.perf_counter()
            fn()
            total += time.perf_counter() - t0
        times.append(total / (number if not pause else 50))
    return sorted(times)[len(times) // 2] * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=9)
    args = parser.parse_args()
    os.environ["LT_NUM_THREADS"] = "2"  # programs are compiled for two threads, then called at 1 and 2
    x, xs = np.ones(4096, np.float32), np.ones(1 << 21, np.float32)
    out, out2, total = np.zeros_like(x), np.zeros_like(x), np.zeros(1, np.float32)
    (item,) = lt.schedule(lt.asarray(x) * 2 + 1)
    program, _ = compile_kernel(item.kernel)
    (summed,) = lt.schedule(lt.asarray(xs).sum())
    split, _ = compile_kernel(summed.kernel)
    batch = runtime.Batch([(program, [0, 1], item.params), (program, [2, 0], item.params)], 3)
    table = [out.ctypes.data, x.ctypes.data, out2.ctypes.data]
    cases: list[tuple[str, Callable[[], object], int | None, float]] = [
        ("Program, on the calling thread", lambda: program([out.ctypes.data, x.ctypes.data], item.params), None, 0),
        ("Program, on the pool", lambda: program([out.ctypes.data, x.ctypes.data], item.params), 1, 0),
        (f"{type(split).__name__} 2**21 (kernel included)", lambda: split([total.ctypes.data, xs.ctypes.data], []),
         None, 0),
        ("Batch of 2 programs, on the pool", lambda: batch(table, {}), 1, 0),
        ("Program, on the pool, after 100 us of Python", lambda: program([out.ctypes.data, x.ctypes.data],
                                                                         item.params), 1, 100e-6),
        ("Program, on the pool, after 20 ms of Python", lambda: program([out.ctypes.data, x.ctypes.data],
                                                                        item.params), 1, 20e-3),
    ]
    print(f"{'launch':50s} {'1 thread':>10s} {'2 threads':>10s}")
    default_min_work = runtime.PARALLEL_MIN_WORK
    for name, fn, min_work, pause in cases:
        row = []
        for threads in ("1", "2"):
            os.environ["LT_NUM_THREADS"] = threads
            runtime.PARALLEL_MIN_WORK = min_work or default_min_work
            row.append(median_us(fn, args.repeat if not pause else 3, pause=pause))
        runtime.PARALLEL_MIN_WORK = default_min_work
        print(f"{name:50s} {row[0]:8.1f}us {row[1]:8.1f}us")
    assert (out == 3).all() and (out2 == 7).all() and total[0] == xs.size


if __name__ == "__main__":
    main()
