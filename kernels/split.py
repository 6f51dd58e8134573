"""Split a reduction across threads along its own range.

A backend parallelizes a kernel along its outermost output loop. A full reduction such as
`(x + y*z).sum()` has one output point, so that loop has size 1 and one thread does all the
work; a column reduction such as `x.sum(0)` of a row-major matrix, split along its columns,
gives each thread a strip of every row rather than whole rows to stream. `split_reduction`
rewrites such a kernel into two that a backend runs one after the other:

    partials: for t < parts (and the original output loops):
                  scratch[t, out] = reduce over the t-th chunk of the reduction's outer range
    combine:  for the original output loops:
                  out = epilogue(reduce over t of scratch[t, out]  (op)  reduce over the tail)

Chunk t covers `r = t*C + j` for `j < C = size // parts`; the last `size % parts` elements (the
tail, fewer than `parts`) are reduced by `combine` itself. Every chunk then has the same static
size, so the partials need no masks: a masked load cannot be a contiguous vector load, which
would cost the vectorized loop more than the split gains. `combine` computes whatever the
original store did with the reduction (the division of a mean, `sum * 2 + 1`). The partials go
to one scratch buffer per reduction, `[parts, numel]` row-major, appended after the kernel's
buffers; the backend's runtime provides it.

Float SUM stays accurate: each partial is a reduction the backend vectorizes as before, and
combining `parts` partials adds `parts` numbers. Only what is easy to prove right is split: the
reductions the stores read directly (not through another reduction), whose sources hold no
reduction themselves (so softmax, variance and logsumexp, which reduce a value computed from
another reduction, are left whole).
"""
from __future__ import annotations

import math
from collections.abc import Iterator

from .expr import Expr, Var, flat_index
from .ir import BufferParam, Kernel, Store, Value, VOp, alu, load, reduce, substitute, toposort


def split_reduction(kernel: Kernel, parts: int) -> tuple[Kernel, Kernel] | None:
    """`(partials, combine)` for `kernel` split into `parts` chunks, or None where it does not apply.

    It applies when the stores read at least one reduction directly, and every such reduction has a
    source free of reductions and an outermost range of at least `parts`; whether the split pays is
    the caller's choice. `partials` runs over its outermost loop `t < parts`;
    `combine` has `kernel`'s loops. Both take `kernel`'s buffers and parameters, then one scratch
    buffer per split reduction.
    """
    if parts < 2 or most_parts(kernel) < parts:
        return None
    reductions = _direct_reductions(kernel)

    fresh = _fresh_names(kernel)
    t, u = Var(next(fresh), parts), Var(next(fresh), parts)  # the chunk partials computes; combine reduces over u
    numel = kernel.numel
    out = flat_index(tuple(Expr.of(v) for v in kernel.loops), tuple(v.size for v in kernel.loops))
    chunk_vars: dict[Var, Var] = {}  # reductions over one range share its chunk loop
    scratch: list[BufferParam] = []
    partial_stores: list[Store] = []
    combined: dict[int, Value] = {}
    for red in reductions:
        op, (outer, *inner) = red.arg
        src, slot, chunk = red.srcs[0], len(kernel.buffers) + len(scratch), outer.size // parts
        if outer not in chunk_vars:
            chunk_vars[outer] = Var(next(fresh), chunk)
        j = chunk_vars[outer]
        (chunk_src,) = substitute([src], {outer: Expr.of(t) * chunk + Expr.of(j)})
        partial_stores.append(Store(slot, Expr.of(t) * numel + out, reduce(op, chunk_src, (j, *inner))))
        scratch.append(BufferParam(red.dtype, parts * numel, scratch=True))
        total = reduce(op, load(slot, red.dtype, Expr.of(u) * numel + out, ()), (u,))
        if tail := outer.size - parts * chunk:
            k = Var(next(fresh), tail)
            (tail_src,) = substitute([src], {outer: Expr.of(k) + parts * chunk})
            total = alu(op.combine(red.dtype), red.dtype, total, reduce(op, tail_src, (k, *inner)))
        combined[id(red)] = total

    buffers = (*kernel.buffers, *scratch)
    partials = Kernel(f"{kernel.name}_partials{parts}", buffers, kernel.params, (t, *kernel.loops),
                      tuple(partial_stores))
    values = substitute([s.value for s in kernel.stores], {}, combined)
    combine = Kernel(f"{kernel.name}_combine{parts}", buffers, kernel.params, kernel.loops,
                     tuple(Store(s.buf, s.index, v) for s, v in zip(kernel.stores, values)))
    return partials, combine


def most_parts(kernel: Kernel, min_chunk: int = 1) -> int:
    """The most parts `split_reduction` splits `kernel` into with at least `min_chunk` elements of every split
    reduction in each chunk; 0 where it does not apply (see `split_reduction`)."""
    reductions = _direct_reductions(kernel)
    if not reductions or any(_has_reduction(r.srcs[0]) for r in reductions):
        return 0
    return min(min(outer.size, outer.size * math.prod(v.size for v in inner) // min_chunk)
               for outer, *inner in (r.arg[1] for r in reductions))


def _direct_reductions(kernel: Kernel) -> list[Value]:
    """The reductions the stores read without going through another reduction, in dependency order."""
    roots = [s.value for s in kernel.stores]
    reachable = toposort(roots, lambda v: () if v.op is VOp.REDUCE else v.srcs)
    return [v for v in reachable if v.op is VOp.REDUCE]


def _has_reduction(value: Value) -> bool:
    return any(v.op is VOp.REDUCE for v in toposort([value]))


def _fresh_names(kernel: Kernel) -> Iterator[str]:
    """Loop variable names `s0, s1, ...` that no loop of `kernel` uses yet."""
    taken = {v.name for v in kernel.loops}
    taken |= {var.name for v in kernel.values() if v.op is VOp.REDUCE for var in v.arg[1]}
    n = 0
    while True:
        if (name := f"s{n}") not in taken:
            yield name
        n += 1
