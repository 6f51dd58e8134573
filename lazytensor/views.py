"""Movement ops as maps on index expressions.

A movement op never moves data. Given the index a consumer reads at (one
`Expr` per output axis), `source_index` returns the index into the op's input
and, for padding, the bounds within which the input is read at all (outside,
the value is zero). The lowering walks these maps from a kernel's output down
to the buffers it loads, so transposes, slices, flips, pads and broadcasts
become address arithmetic in the loads of the kernel that consumes them.
"""
from __future__ import annotations

from typing import Any

from .graph import Op
from .kernels.expr import Bound, Expr, flat_index, unflatten_index

Index = tuple[Expr, ...]


def source_index(op: Op, arg: Any, src_shape: tuple[int, ...], idx: Index) -> tuple[Index, list[Bound]]:
    """The input index that output index `idx` reads, and the bounds that make it valid."""
    if op is Op.RESHAPE:
        return unflatten_index(flat_index(idx, arg), src_shape), []
    if op is Op.PERMUTE:
        out = [Expr.of(0)] * len(idx)
        for i, axis in enumerate(arg):
            out[axis] = idx[i]
        return tuple(out), []
    if op is Op.EXPAND:
        return tuple(Expr.of(0) if s == 1 and n != 1 else i for i, s, n in zip(idx, src_shape, arg)), []
    if op is Op.SHRINK:
        return tuple(i * step + start for i, (start, _, step) in zip(idx, arg)), []
    if op is Op.FLIP:
        return tuple(s - 1 - i if axis in arg else i for axis, (i, s) in enumerate(zip(idx, src_shape))), []
    if op is Op.PAD:
        shifted = tuple(i - before for i, (before, _) in zip(idx, arg))
        bounds = [Bound(i, 0, s) for i, s, (before, after) in zip(shifted, src_shape, arg) if before or after]
        return shifted, bounds
    raise ValueError(f"{op} is not a movement op")
