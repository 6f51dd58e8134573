"""`(x + y*z).sum()` on 2**24 float32: lazytensor against NumPy (and torch, if installed), one run.

    python benchmarks/bench_core.py [--n 24] [--repeat 20]

Prints the best time of each, the effective bandwidth (12 bytes read per
element), and the ratio of lazytensor's time to each peer's (below 1 is faster).
"""
from __future__ import annotations

import argparse

import numpy as np
from suite import best_of  # benchmarks/ is on sys.path when this script runs

import lazytensor as lt


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=24, help="log2 of the element count")
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    n = 1 << args.n
    rng = np.random.default_rng(0)
    xs, ys, zs = (rng.random(n, dtype=np.float32) for _ in range(3))
    x, y, z = lt.asarray(xs), lt.asarray(ys), lt.asarray(zs)

    results = {"lazytensor": best_of(lambda: (x + y * z).sum().realize(), args.repeat),
               "numpy": best_of(lambda: (xs + ys * zs).sum(), args.repeat)}
    try:
        import torch
        xt, yt, zt = (torch.from_numpy(a) for a in (xs, ys, zs))
        results["torch eager"] = best_of(lambda: (xt + yt * zt).sum(), args.repeat)
    except ImportError:
        pass
    got, want = (x + y * z).sum().item(), float((xs.astype(np.float64) + ys.astype(np.float64) * zs).sum())
    assert abs(got - want) <= 1e-4 * abs(want), (got, want)

    bytes_moved = 12 * n
    ours = results["lazytensor"]
    print(f"(x + y*z).sum() on 2**{args.n} float32, best of {args.repeat}")
    print(f"{'':14}{'time':>10}{'GB/s':>9}{'lazytensor / peer':>20}")
    for name, t in results.items():
        ratio = "" if name == "lazytensor" else f"{ours / t:.2f}x"
        print(f"{name:14}{t * 1e3:8.2f}ms{bytes_moved / t / 1e9:9.1f}{ratio:>20}")


if __name__ == "__main__":
    main()
