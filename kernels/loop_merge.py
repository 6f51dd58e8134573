"""Adjacent loops that every index reads as one loop, merged into that loop.

Lowering opens a loop per axis. A mean over the last two axes of a contiguous `(n, c, h, w)` tensor,
`x.mean((2, 3))`, then folds over `r0 < h, r1 < w` and reads `r0*w + r1`: the terms of one loop of `h*w`, held as
two. As two, each fold's inner loop is short (56 terms: a vector loop, its remainder and its vectors' final fold
per row of the window) and what a backend decides about one loop (streaming several rows side by side, vectorizing,
splitting among threads) sees a part of the work: that mean took 3.5 times the time of the same mean written over
a `(n, c, h*w)` view. Output loops alike: `o0 < n, o1 < c` stored at `o0*c + o1` are one loop of `n*c`.

`merge_loops(kernel)` merges each run of adjacent loops, among its output loops or among one reduction's, wherever
every index expression, bound and index value of the kernel, with each of the run's loops written as its place in
the merged one (`outer = m // size_inner`, `inner = m % size_inner`), simplifies back to one without a division or
modulo of the merged variable (`Expr` recombines `(m // s)*s*k + (m % s)*k` into `m*k`): the kernel then reads and
writes exactly what it did, in the same order. A loop read alone (a pad's bound on one axis, a broadcast along the
other) leaves a division or modulo, and its run stops there.
"""
from __future__ import annotations

import math
from dataclasses import replace

from .expr import Div, Expr, Mod, Var
from .ir import Kernel, Store, Value, VOp, rebuilt


def merge_loops(kernel: Kernel) -> tuple[Kernel, dict[int, Value]]:
    """`kernel` with its mergeable runs of loops merged (see the module docstring), and each of its values (by id)
    rebuilt over the merged loops: the same kernel where none merges."""
    values = kernel.values()
    exprs = [e for v in values for e in v.exprs()] + [s.index for s in kernel.stores]
    runs = [kernel.loops, *dict.fromkeys(v.arg[1] for v in values if v.op is VOp.REDUCE)]
    if len({v for run in runs for v in run}) != sum(map(len, runs)):  # a loop in two runs: left as it is
        return kernel, {id(v): v for v in values}
    mapping: dict[Var, Expr] = {}
    merged: dict[Var, Var] = {}
    for run in runs:
        for group in _groups(run, exprs):
            into = Var(group[0].name, math.prod(v.size for v in group))
            for k, v in enumerate(group):
                mapping[v] = Expr.of(into) // math.prod(w.size for w in group[k + 1:]) % v.size
                merged[v] = into
    if not merged:
        return kernel, {id(v): v for v in values}
    roots = [r for s in kernel.stores for r in s.roots()]
    new = rebuilt(roots, mapping, loops=merged)
    stores = tuple(Store(s.buf, s.index.substitute(mapping), new[id(s.value)],
                         *(new[id(x)] if x is not None else None for x in (s.at, s.mask)), s.combine)
                   for s in kernel.stores)
    loops = tuple(dict.fromkeys(merged.get(v, v) for v in kernel.loops))
    return replace(kernel, name="", loops=loops, stores=stores), new


def _groups(run: tuple[Var, ...], exprs: list[Expr]) -> list[list[Var]]:
    """`run`'s loops in groups of adjacent ones that every expression of `exprs` reads as one loop, outermost first;
    the loops that merge with no neighbour left out."""
    if not run:
        return []
    groups, inner = [[run[-1]]], run[-1]  # inner: the innermost group as one loop, in `exprs`
    for outer in reversed(run[:-1]):
        trial = Var(outer.name + "*", outer.size * inner.size)
        # first the terms of the loops themselves, whose coefficients must be in the ratio of the inner loop's size
        # (most pairs fail there, before the substitution: it took half of a transformer's scheduling time)
        merged = [e.substitute({outer: Expr.of(trial) // inner.size, inner: Expr.of(trial) % inner.size})
                  for e in exprs] if min(outer.size, inner.size) > 1 and all(
            (c := dict(e.terms)).get(outer, 0) == c.get(inner, 0) * inner.size for e in exprs) else None
        if merged is not None and all(_linear_in(e, trial) for e in merged):
            groups[-1].insert(0, outer)
            exprs, inner = merged, trial
        else:
            groups.append([outer])
            inner = outer
    return [g for g in reversed(groups) if len(g) > 1]


def _linear_in(e: Expr, var: Var) -> bool:
    """Whether `e` reads `var` only as a term of its own, not inside a division or modulo."""
    return all(not isinstance(atom, (Div, Mod)) or var not in atom.x.vars() for atom, _ in e.terms)
