"""Indexing by data, sorting and sets, against NumPy and torch eager in one run: gathers (rows of a table,
`take_along_axis`), a scatter-add (an embedding's gradient), boolean masking, `x[i] = v`, sort and argsort
(one long row; many short rows), quantile and median, unique, searchsorted.

    python benchmarks/bench_indexing.py [--repeat 10] [--threads N]

Each result is checked against NumPy's before it is timed. Prints the best time of each contestant and
lazytensor's time over each peer's (below 1 is faster). Torch's threads are set to lazytensor's.
"""
from __future__ import annotations

import argparse
import os
from collections.abc import Callable

import numpy as np
from suite import best_of  # benchmarks/ is on sys.path when this script runs

import lazytensor as lt


def cases(rng: np.random.Generator) -> list[tuple[str, Callable[[], lt.Tensor], Callable[[], np.ndarray],
                                                  Callable[[], object] | None]]:
    """(name, lazytensor, NumPy, torch) for each workload."""
    import torch
    table = rng.standard_normal((50_000, 256), dtype=np.float32)
    ids = rng.integers(0, 50_000, (64, 128))
    grad = rng.standard_normal((64, 128, 256), dtype=np.float32)
    x = rng.standard_normal(1 << 22, dtype=np.float32)
    rows = rng.standard_normal((4096, 1024), dtype=np.float32)
    order = np.argsort(rows, axis=1)
    small_ints = rng.integers(0, 1000, 1 << 22)
    sorted_ = np.sort(x)
    queries = rng.standard_normal(1 << 20, dtype=np.float32)
    put_at = rng.integers(0, 1 << 22, 1 << 16)
    lt_table, lt_ids, lt_grad, lt_x, lt_rows = (lt.asarray(a) for a in (table, ids, grad, x, rows))
    lt_order, lt_ints, lt_sorted, lt_queries, lt_put = (lt.asarray(a) for a in (order, small_ints, sorted_, queries,
                                                                                    put_at))
    t_table, t_ids, t_grad, t_x, t_rows, t_order, t_ints, t_sorted, t_queries, t_put = (
        torch.from_numpy(a) for a in (table, ids, grad, x, rows, order, small_ints, sorted_, queries, put_at))

    def lt_put_values() -> lt.Tensor:
        y = lt_x * 1
        y[lt_put] = 0.0
        return y

    def np_put_values() -> np.ndarray:
        y = x * 1
        y[put_at] = 0.0
        return y

    def t_put_values() -> object:
        y = t_x * 1
        y[t_put] = 0.0
        return y

    return [
        ("gather rows: table[ids] * 2, 50000x256", lambda: lt_table[lt_ids] * 2, lambda: table[ids] * 2,
         lambda: t_table[t_ids] * 2),
        ("take_along_axis 4096x1024", lambda: lt.take_along_axis(lt_rows, lt_order, axis=1),
         lambda: np.take_along_axis(rows, order, 1), lambda: torch.take_along_dim(t_rows, t_order, 1)),
        ("scatter-add: embedding gradient", lambda: lt.zeros((50_000, 256)).index_add(0, lt_ids.reshape(-1),
                                                                                     lt_grad.reshape(-1, 256)),
         lambda: np_index_add(ids, grad), lambda: torch.zeros(50_000, 256).index_add(0, t_ids.reshape(-1),
                                                                                  t_grad.reshape(-1, 256))),
        ("boolean mask x[x > 0] on 2**22", lambda: lt_x[lt_x > 0], lambda: x[x > 0], lambda: t_x[t_x > 0]),
        ("x[i] = 0 at 2**16 of 2**22", lt_put_values, np_put_values, t_put_values),
        ("sort 2**22 float32", lambda: lt.sort(lt_x), lambda: np.sort(x, kind="stable"),
         lambda: torch.sort(t_x, stable=True)[0]),
        ("sort 4096 rows of 1024", lambda: lt_rows.sort(axis=1), lambda: np.sort(rows, 1, kind="stable"),
         lambda: torch.sort(t_rows, dim=1, stable=True)[0]),
        ("argsort 4096 rows of 1024", lambda: lt_rows.argsort(axis=1), lambda: np.argsort(rows, 1, kind="stable"),
         lambda: torch.argsort(t_rows, dim=1, stable=True)),
        ("quantile 0.3 of 2**22", lambda: lt.quantile(lt_x, 0.3), lambda: np.quantile(x, 0.3),
         lambda: torch.quantile(t_x, 0.3)),
        ("median of 4096 rows of 1024", lambda: lt.median(lt_rows, axis=1), lambda: np.median(rows, 1),
         lambda: torch.quantile(t_rows, 0.5, dim=1)),  # torch's median is the lower middle value, not NumPy's
        ("unique of 2**22 ints < 1000", lambda: lt.unique_values(lt_ints), lambda: np.unique(small_ints),
         lambda: torch.unique(t_ints)),
        ("searchsorted 2**20 in 2**22", lambda: lt.searchsorted(lt_sorted, lt_queries),
         lambda: np.searchsorted(sorted_, queries), lambda: torch.searchsorted(t_sorted, t_queries)),
    ]


def np_index_add(ids: np.ndarray, grad: np.ndarray) -> np.ndarray:
    out = np.zeros((50_000, 256), np.float32)
    np.add.at(out, ids.reshape(-1), grad.reshape(-1, 256))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--threads", type=int, default=None, help="LT_NUM_THREADS and torch's threads")
    args = parser.parse_args()
    if args.threads:
        os.environ["LT_NUM_THREADS"] = str(args.threads)
    import torch

    from lazytensor.kernels.llvm.runtime import num_threads
    torch.set_num_threads(num_threads())
    print(f"{'workload':42}{'lazytensor':>12}{'numpy':>10}{'torch':>10}{'lt/numpy':>10}{'lt/torch':>10}")
    for name, ours, numpy_fn, torch_fn in cases(np.random.default_rng(0)):
        got, want = ours().numpy(), numpy_fn()
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5, err_msg=name)
        t_lt = best_of(lambda ours=ours: ours().realize(), args.repeat)
        t_np = best_of(numpy_fn, args.repeat)
        t_torch = best_of(torch_fn, args.repeat)
        print(f"{name:42}{t_lt * 1e3:10.2f}ms{t_np * 1e3:8.2f}ms{t_torch * 1e3:8.2f}ms"
              f"{t_lt / t_np:9.2f}x{t_lt / t_torch:9.2f}x")


if __name__ == "__main__":
    main()
