"""Split a reduction across threads along its own range.

A backend parallelizes a kernel along its outermost output loop. A full reduction such as
`(x + y*z).sum()` has one output point, so that loop has size 1 and one thread does all the
work; a column reduction such as `x.sum(0)` of a row-major matrix, split along its columns,
gives each thread a strip of every row rather than whole rows to stream. `split_reduction`
rewrites such a kernel into kernels that a backend runs one after the other:

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
combining `parts` partials adds `parts` numbers.

A reduction whose source reads another reduction (a variance's mean, a logsumexp's max, argmax's
max) splits too, where the inner one is the same for every element the outer one folds (it reads
only the output loops): the reductions go in levels, each after those its source reads, and each
level is a partials kernel of its own that reads the inner reductions' combined values, computed
from the scratch of the levels before (a few loads per output point). Then

    partials_0, ..., partials_L, combine

run one after the other. Every chunk of a later level computes an inner reduction's tail again, so
that tail must be small beside the whole (TAIL_SHARE). A reduction that reads its enclosing
reduction's loop variables (the row sums of a sum of row sums, a cross-entropy's row logsumexp) is no
level of its own but part of the enclosing one's source, which the chunks share as before.
"""
from __future__ import annotations

import math
from collections.abc import Iterator

from .expr import Expr, Var, flat_index
from .ir import (
    Alu,
    BufferParam,
    Kernel,
    Scatter,
    Store,
    Value,
    VOp,
    alu,
    const,
    free_vars,
    index,
    load,
    reduce,
    substitute,
    toposort,
)

# An inner reduction (one a later level reads) splits only where its tail, computed again by every chunk of
# the later levels, is at most this share of its outer range: those recomputations cost at most that much more.
TAIL_SHARE = 1 / 8


def split_reduction(kernel: Kernel, parts: int, nested: bool = True) -> list[Kernel] | None:
    """`[partials_0, ..., partials_L, combine]` for `kernel` split into `parts` chunks, or None where it does
    not apply.

    It applies when the stores read at least one reduction, every reduction to split (see `_levels`) has
    an outermost range of at least `parts`, and the inner ones' tails are small (TAIL_SHARE); whether the
    split pays is the caller's choice. Each partials kernel runs over its outermost loop `t < parts` and its level's reductions (see
    the module's docstring); `combine` has `kernel`'s loops. All take `kernel`'s buffers and parameters,
    then one scratch buffer per split reduction, and run in that order. Without `nested`, only a kernel
    whose reductions read no reduction splits (into one partials kernel and the combine).
    """
    if parts < 2 or most_parts(kernel, nested=nested) < parts:
        return None
    levels = _levels(kernel, nested)
    read_later = {id(r) for level in levels[1:] for red in level for r in toposort(list(red.srcs))}
    if any(id(red) in read_later and (red.arg[1][0].size % parts) * parts > TAIL_SHARE * red.arg[1][0].size
           for level in levels for red in level):
        return None
    fresh = _fresh_names(kernel)
    t = Var(next(fresh), parts)  # the chunk a partials kernel computes
    numel = kernel.numel
    out = flat_index(tuple(Expr.of(v) for v in kernel.loops), tuple(v.size for v in kernel.loops))
    chunk_vars: dict[Var, Var] = {}  # reductions over one range share its chunk loop
    scratch: list[BufferParam] = []
    stages: list[tuple[Store, ...]] = []
    combined: dict[int, Value] = {}  # each reduction's value from its partials, by id
    for level in levels:
        u = Var(next(fresh), parts)  # the level's combined values reduce over it
        partial_stores: list[Store] = []
        for red in level:
            op, (outer, *inner) = red.arg
            (src,) = substitute([red.srcs[0]], {}, combined)  # the inner reductions' values, combined
            slot, chunk = len(kernel.buffers) + len(scratch), outer.size // parts
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
        stages.append(tuple(partial_stores))

    buffers = (*kernel.buffers, *scratch)
    name = f"{kernel.name}_partials{parts}"
    partials = [Kernel(name if len(stages) == 1 else f"{name}_{i}", buffers, kernel.params, (t, *kernel.loops), stores)
                for i, stores in enumerate(stages)]
    values = substitute([s.value for s in kernel.stores], {}, combined)
    combine = Kernel(f"{kernel.name}_combine{parts}", buffers, kernel.params, kernel.loops,
                     tuple(Store(s.buf, s.index, v) for s, v in zip(kernel.stores, values)))
    return [*partials, combine]


def split_scatter(scatter: Scatter, parts: int) -> list[Kernel] | None:
    """`[clear, partials, combine]`, and `tail` where the updates do not divide into `parts`, for the updates of
    `scatter` split into `parts` chunks that fold into copies of their own; None where it does not apply.

    It applies to one store that folds integers or bools (a histogram's counts, a bincount): a fold whose
    order changes nothing, so the chunks need not land one after the other. After the base (`scatter.base`,
    run first as before): `clear` sets a scratch buffer `[parts, numel]` to the fold's identity; `partials`,
    over `t < parts` and the updates' loops with their outermost one cut into `parts` chunks of one static
    size, folds chunk t into row t, its updates in order as before (so the rows may be computed side by side);
    `combine` folds the rows into the output; `tail` folds the updates past the last chunk (fewer than
    `parts` of the outermost loop) into the output itself, as the updates did. All take the scatter's buffers
    and parameters, then the scratch buffer, and run in that order."""
    updates = scatter.updates
    if len(updates.stores) != 1 or parts < 2:
        return None
    (store,) = updates.stores
    dtype = store.value.dtype
    if store.combine is None or store.buf != 0 or dtype.is_float or updates.loops[0].size < parts:
        return None
    numel, slot, op = scatter.buffers[0].size, len(scatter.buffers), store.combine
    buffers = (*scatter.buffers, BufferParam(dtype, parts * numel, scratch=True))
    fresh = _fresh_names(updates)
    outer, *inner = updates.loops
    t, j, row, out = (Var(next(fresh), size) for size in (parts, outer.size // parts, parts, numel))
    cleared = Var(next(fresh), parts * numel)
    kernels = [Kernel(f"{scatter.name}_clear{parts}", buffers, scatter.params, (cleared,),
                      (Store(slot, Expr.of(cleared), const(op.identity(dtype), dtype)),))]
    roots = [store.value, store.at, store.mask]
    value, at, mask = substitute(roots, {outer: Expr.of(t) * j.size + Expr.of(j)})
    at = alu(Alu.ADD, at.dtype, at, index(Expr.of(t) * numel))
    kernels.append(Kernel(f"{scatter.name}_partials{parts}", buffers, scatter.params, (t, j, *inner),
                          (Store(slot, store.index, value, at, mask, op),)))
    rows = reduce(op, load(slot, dtype, Expr.of(row) * numel + Expr.of(out), ()), (row,))
    total = alu(op.combine(dtype), dtype, load(0, dtype, Expr.of(out), ()), rows)
    kernels.append(Kernel(f"{scatter.name}_combine{parts}", buffers, scatter.params, (out,),
                          (Store(0, Expr.of(out), total),)))
    if tail := outer.size - parts * j.size:
        k = Var(next(fresh), tail)
        value, at, mask = substitute(roots, {outer: Expr.of(k) + parts * j.size})
        kernels.append(Kernel(f"{scatter.name}_tail{parts}", buffers, scatter.params, (k, *inner),
                              (Store(0, store.index, value, at, mask, op),)))
    return kernels


def most_parts(kernel: Kernel, min_chunk: int = 1, nested: bool = True) -> int:
    """The most parts `split_reduction` splits `kernel` into with at least `min_chunk` elements of every split
    reduction in each chunk; 0 where it does not apply (see `split_reduction`)."""
    reductions = [red for level in _levels(kernel, nested) for red in level]
    if not reductions:
        return 0
    return min(min(outer.size, outer.size * math.prod(v.size for v in inner) // min_chunk)
               for outer, *inner in (r.arg[1] for r in reductions))


def _levels(kernel: Kernel, nested: bool) -> list[list[Value]]:
    """The reductions to split, in levels: those the stores reach that read no loop variable but the output
    loops' (besides their own), each in the level after the last one its source reads, in dependency
    order within one. A reduction that reads a variable of an enclosing one (a row's max in a sum over
    rows) is part of the enclosing one's source, computed again for each of its elements as before. Without
    `nested`, none where a reduction reads another one."""
    values = toposort([s.value for s in kernel.stores])
    free, outputs = free_vars(values), set(kernel.loops)
    height: dict[int, int] = {}  # the level of the highest reduction to split a value reads (or is), -1 for none
    levels: list[list[Value]] = []
    if not nested and any(v.op is VOp.REDUCE and any(s.op is VOp.REDUCE for s in toposort(list(v.srcs)))
                          for v in values):
        return []
    for v in values:
        split = v.op is VOp.REDUCE and free[id(v)] <= outputs
        height[id(v)] = max((height[id(s)] for s in v.srcs), default=-1) + split
        if split:
            if height[id(v)] == len(levels):
                levels.append([])
            levels[height[id(v)]].append(v)
    return levels


def _fresh_names(kernel: Kernel) -> Iterator[str]:
    """Loop variable names `s0, s1, ...` that no loop of `kernel` uses yet."""
    taken = {v.name for v in kernel.loops}
    taken |= {var.name for v in kernel.values() if v.op is VOp.REDUCE for var in v.arg[1]}
    n = 0
    while True:
        if (name := f"s{n}") not in taken:
            yield name
        n += 1
