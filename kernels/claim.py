"""A scatter's updates in order, run side by side: where several write one element, the last one's value stays.

A `Scatter`'s updates write in the row-major order of their loops (see `ir.Store`), so where two write one
element the later one's value is there last, as NumPy's `x[i] = v` keeps the last of repeated indexes. A
backend that runs the updates one after another gets that as it goes; one that runs them side by side (a
GPU's programs and lanes) rewrites the scatter with `claim_scatter` into three kernels, which it runs one
after the other on one scratch buffer of claims, an integer per element of the output:

    base:   the scatter's base, and claims[e] = -1 for every element e of the output
    claim:  for each point of the updates, at position p in their order, where its store writes:
                claims[at] = max(claims[at], p)      (a fold: any order of the points gives the same)
    write:  for each point at position p where its store writes and claims[at] == p:
                out[at] = value                      (one point per element: no two race)

The claim of an element is the position of the last point that writes it, so the outcome is that of the
points one after another, whatever order they run in. A point at position p is the p-th in the row-major
order of the loops; where a point stores several times, its stores come one after another in it.

Scatters whose updates fold (`Store.combine`, an atomic add on a GPU) or are `distinct` need none of it.
"""
from __future__ import annotations

from .dtype import bool_, int32, int64
from .expr import Expr, flat_index
from .ir import Alu, BufferParam, Kernel, ReduceOp, Scatter, Store, alu, cast, const, gather, index


def claim_scatter(scatter: Scatter) -> tuple[Kernel, Kernel, Kernel] | None:
    """`(base, claim, write)` for `scatter` (see the module docstring), or None where it writes nothing
    in order: its updates are `distinct`, or every scatter store of them folds.

    The three take `scatter`'s buffers and parameters, then the claims: a scratch buffer with an element
    for each of slot 0's, which the scatter stores write; int32 unless the positions need int64."""
    updates = scatter.updates
    ordered = [i for i, s in enumerate(updates.stores) if s.at is not None and s.combine is None]
    if scatter.distinct or not ordered:
        return None
    claim_dtype = int32 if updates.numel * len(ordered) < 2**31 else int64
    slot = len(scatter.buffers)
    buffers = (*scatter.buffers, BufferParam(claim_dtype, scatter.buffers[0].size, scratch=True))
    point = flat_index(tuple(Expr.of(v) for v in updates.loops), tuple(v.size for v in updates.loops))
    # each ordered store's position at each point
    positions = {i: cast(index(point * len(ordered) + j), claim_dtype) for j, i in enumerate(ordered)}

    unclaimed = const(-1, claim_dtype)
    base = Kernel(f"{scatter.name}_base", buffers, scatter.params, scatter.base.loops,
                  (*scatter.base.stores, *(Store(slot, s.index, unclaimed) for s in scatter.base.stores if s.buf == 0)))
    claim = Kernel(f"{scatter.name}_claim", buffers, scatter.params, updates.loops,
                   tuple(Store(slot, s.index, positions[i], s.at, s.mask, ReduceOp.MAX)
                         for i, s in enumerate(updates.stores) if i in positions))

    def won(i: int, s: Store) -> Store:
        """The store where its point holds the claim of the element it writes."""
        if i not in positions:
            return s
        claimed = gather(slot, claim_dtype, s.at, s.mask)
        mask = alu(Alu.AND, bool_, s.mask, alu(Alu.CMPEQ, bool_, claimed, positions[i]))
        return Store(s.buf, s.index, s.value, s.at, mask)

    write = Kernel(f"{scatter.name}_write", buffers, scatter.params, updates.loops,
                   tuple(won(i, s) for i, s in enumerate(updates.stores)))
    return base, claim, write
