"""A GPU's `ir.Sort`: a bitonic sorting network over (key, position) pairs in global memory.

Each row is padded to a power of two P. Bitonic sorting compares element i with element i ^ j and keeps
the smaller or the larger of the two (by the direction of i's block of k), for k = 2, 4, ..., P and j =
k/2, ..., 1: log2(P) (log2(P) + 1) / 2 launches of one compiled step kernel, ping-ponging between two pairs
of work buffers. Comparing (key, position) pairs makes the order total, hence stable: of two equal keys the
one from the lower position goes first. Padding (a position past n) sorts after every key.

Three kernels: `init` (keys into the work buffer, positions 0..P-1), `step` (one compare-exchange layer, j
and k its parameters) and `final` (each row's first n positions into the output, or its first n keys in a sort
of the values: the positions make the order of keys that compare equal, -0.0 and 0.0 and NaNs, the stable one). Work buffers belong to
the call (the device's caching allocator makes that cheap), as the contraction's scratch does.
"""
from __future__ import annotations

from ..ir import Sort
from .render import TL_TYPES, TritonSource, pow2

BLOCK = 1024  # elements per program


def padded(sort: Sort) -> int:
    """The row length the network sorts: n rounded up to a power of two."""
    return pow2(sort.n)


def _before(sort: Sort, a: str, b: str) -> str:
    """Triton code for "key `a` goes strictly before key `b`" (`ir.Sort`'s order of keys)."""
    if sort.descending:
        a, b = b, a
    if not sort.key_dtype.is_float:
        return f"({a} < {b})"
    return f"(({a} < {b}) | (({b} != {b}) & ({a} == {a})))"


def render_init(sort: Sort, name: str) -> TritonSource:
    p = padded(sort)
    source = f'''import triton
import triton.language as tl


@triton.jit
def {name}(keys, work_keys, work_positions):
    i = tl.program_id(0).to(tl.int64) * {BLOCK} + tl.arange(0, {BLOCK})
    inside = i < {sort.rows * p}
    row, col = i // {p}, i % {p}
    key = tl.load(keys + row * {sort.n} + col, mask=inside & (col < {sort.n}), other=0)
    tl.store(work_keys + i, key, mask=inside)
    tl.store(work_positions + i, col, mask=inside)
'''
    return TritonSource(name, source, -(-sort.rows * p // BLOCK), 4)


def render_step(sort: Sort, name: str) -> TritonSource:
    p, key = padded(sort), TL_TYPES[sort.key_dtype]
    source = f'''import triton
import triton.language as tl


@triton.jit(do_not_specialize=["j", "k"])
def {name}(keys_in, positions_in, keys_out, positions_out, j: tl.int64, k: tl.int64):
    i = tl.program_id(0).to(tl.int64) * {BLOCK} + tl.arange(0, {BLOCK})
    inside = i < {sort.rows * p}
    col = i % {p}
    partner = i - col + (col ^ j)
    ka = tl.load(keys_in + i, mask=inside, other=0).to({key})
    kb = tl.load(keys_in + partner, mask=inside, other=0).to({key})
    pa = tl.load(positions_in + i, mask=inside, other=0)
    pb = tl.load(positions_in + partner, mask=inside, other=0)
    # a before b: a is not padding, and b is, or a's key goes first, or the keys tie and a's position is lower
    tie = (pa < pb) & ~{_before(sort, "kb", "ka")}
    a_first = (pa < {sort.n}) & ((pb >= {sort.n}) | {_before(sort, "ka", "kb")} | tie)
    # the lower of the two keeps the pair's first in an ascending block of k, the higher in a descending one
    keep_first = ((col & k) == 0) == (col < (col ^ j))
    take_a = a_first == keep_first
    tl.store(keys_out + i, tl.where(take_a, ka, kb), mask=inside)
    tl.store(positions_out + i, tl.where(take_a, pa, pb), mask=inside)
'''
    return TritonSource(name, source, -(-sort.rows * p // BLOCK), 4)


def render_final(sort: Sort, name: str) -> TritonSource:
    """Each row's first n (or `first`) positions (or keys, `values`) of the work buffer into the output, or its
    keys at the positions `take`."""
    p = padded(sort)
    width = sort.width
    col = "col"
    for c, k in enumerate(sort.take):  # the sorted row's position of the output's column
        col = f"tl.where(col == {c}, {k}, {col})"
    source = f'''import triton
import triton.language as tl


@triton.jit
def {name}(work, out):
    i = tl.program_id(0).to(tl.int64) * {BLOCK} + tl.arange(0, {BLOCK})
    inside = i < {sort.rows * width}
    row, col = i // {width}, i % {width}
    tl.store(out + i, tl.load(work + row * {p} + {col}, mask=inside, other=0), mask=inside)
'''
    return TritonSource(name, source, -(-sort.rows * width // BLOCK), 4)


def steps(sort: Sort) -> list[tuple[int, int]]:
    """The network's layers, (j, k) each, in order."""
    p = padded(sort)
    out, k = [], 2
    while k <= p:
        j = k // 2
        while j >= 1:
            out.append((j, k))
            j //= 2
        k *= 2
    return out


__all__ = ["BLOCK", "padded", "render_final", "render_init", "render_step", "steps"]
