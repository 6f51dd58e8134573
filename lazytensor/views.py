"""Movement ops as maps on index expressions.

A movement op never moves data. Given the index a consumer reads at (one
`Expr` per output axis), `source_index` returns the index into the op's input
and, for padding, the bounds within which the input is read at all (outside,
the value is zero). The lowering walks these maps from a kernel's output down
to the buffers it loads, so transposes, slices, flips, pads and broadcasts
become address arithmetic in the loads of the kernel that consumes them.
"""
from __future__ import annotations

from functools import lru_cache
from typing import Any

from .graph import MOVEMENT, Node, Op
from .kernels.expr import Bound, Expr, flat_index, unflatten_index

Index = tuple[Expr, ...]


# Kept by their arguments: the blocks of a deep network read their tensors through the same views at the
# same loop variables, and the scheduler and the lowering both map every index they visit.
@lru_cache(maxsize=1 << 16)
def source_index(op: Op, arg: Any, src_shape: tuple[int, ...], idx: Index) -> tuple[Index, tuple[Bound, ...]]:
    """The input index that output index `idx` reads, and the bounds that make it valid."""
    if op is Op.RESHAPE:
        return _reshape_index(idx, arg, src_shape), ()
    if op is Op.PERMUTE:
        out = [Expr.of(0)] * len(idx)
        for i, axis in enumerate(arg):
            out[axis] = idx[i]
        return tuple(out), ()
    if op is Op.EXPAND:
        return tuple(Expr.of(0) if s == 1 and n != 1 else i for i, s, n in zip(idx, src_shape, arg)), ()
    if op is Op.SHRINK:
        return tuple(i * step + start for i, (start, _, step) in zip(idx, arg)), ()
    if op is Op.FLIP:
        return tuple(s - 1 - i if axis in arg else i for axis, (i, s) in enumerate(zip(idx, src_shape))), ()
    if op is Op.PAD:
        shifted = tuple(i - before for i, (before, _) in zip(idx, arg))
        return shifted, tuple(Bound(i, 0, s) for i, s, (before, after) in zip(shifted, src_shape, arg) if before or after)
    raise ValueError(f"{op} is not a movement op")


def element_source(node: Node) -> tuple[Node, int] | None:
    """The realized buffer node and the flat position in it that one-element `node` reads, where `node` is
    movement ops over that buffer; None where it is anything else, or reads a padding's zero."""
    idx = tuple(Expr.of(0) for _ in node.shape)
    while node.op in MOVEMENT:
        src = node.srcs[0]
        idx, bounds = source_index(node.op, node.arg, src.shape, idx)
        if not all(b.lo <= b.expr.const < b.hi for b in bounds):
            return None
        node = src
    return (node, flat_index(idx, node.shape).const) if node.op is Op.BUFFER else None


def _reshape_index(idx: Index, shape: tuple[int, ...], src_shape: tuple[int, ...]) -> Index:
    """The source index of a reshape, group by group: the axes split in minimal groups of equal size (an
    axis kept as it is, or squeezed and unsqueezed size-1 axes, is a group of its own), so an axis the
    reshape does not touch keeps its index, without the division and remainder of going through the
    flat index, which the simplifier cannot always undo (under a padding's bounds, for instance)."""
    if 0 in shape:
        return unflatten_index(flat_index(idx, shape), src_shape)
    out: list[Expr] = []
    i = j = 0
    while i < len(shape) or j < len(src_shape):
        if j < len(src_shape) and src_shape[j] == 1:
            out.append(Expr.of(0))
            j += 1
        elif shape[i] == 1:
            i += 1
        else:
            group, src_group = [i], [j]
            size, src_size = shape[i], src_shape[j]
            i, j = i + 1, j + 1
            while size != src_size:
                if size < src_size:
                    group.append(i)
                    size, i = size * shape[i], i + 1
                else:
                    src_group.append(j)
                    src_size, j = src_size * src_shape[j], j + 1
            if len(group) == len(src_group) == 1:  # no remainder: the index may leave the axis under a pad
                out.append(idx[group[0]])
                continue
            flat = flat_index(tuple(idx[a] for a in group), tuple(shape[a] for a in group))
            out.extend(unflatten_index(flat, tuple(src_shape[b] for b in src_group)))
    return tuple(out)
