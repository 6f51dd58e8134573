"""`lt.vmap(fn, in_axes, out_axes)`: fn mapped over an axis of its arguments, as JAX's `vmap` and `torch.func.vmap`.

How: fn runs once per index of the mapped axis, on that slice of each mapped argument (a view: no data moves),
and the results are stacked along `out_axes`. Everything stays lazy, so the slices' graphs are one graph: the
scheduler writes each slice's result from one kernel where they read a common buffer (fusion rule 7), and
`lt.grad`, `lt.jit` and `vmap` itself compose with it as with any function of tensors. It is not a batching
transformation (no per-op batching rules): its graph and its compile cost grow with the mapped size, which suits
the sizes vmap is used at (per-example gradients of a batch, Jacobians), less a mapping over millions.

`in_axes` is an int (every argument), None (not mapped), or a tuple of those, one per positional argument, each
of which may be a tuple, list or dict of tensors mapped alike; `out_axes` an int or a tuple per output.
"""
from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from .movement import stack
from .pytree import flatten, unflatten
from .tensor import Tensor


def vmap(fn: Callable[..., Any], in_axes: int | None | tuple = 0, out_axes: int | tuple = 0) -> Callable[..., Any]:
    """`fn` mapped over axis `in_axes` of its arguments, its results stacked along `out_axes` (see the module
    docstring)."""
    @functools.wraps(fn)
    def mapped(*args: Any) -> Any:
        axes = in_axes if isinstance(in_axes, tuple) else (in_axes,) * len(args)
        if len(axes) != len(args):
            raise ValueError(f"vmap: in_axes has {len(axes)} entries for {len(args)} arguments")
        sizes = set()
        leaves_of: list[list[Any]] = []
        structures = []
        for arg, axis in zip(args, axes):
            leaves: list[Any] = []
            structures.append(flatten(arg, leaves))
            leaves_of.append(leaves)
            if axis is not None:
                for leaf in leaves:
                    if not isinstance(leaf, Tensor):
                        raise TypeError(f"vmap: a mapped argument holds a {type(leaf).__name__}, not a tensor")
                    if not -leaf.ndim <= axis < leaf.ndim:
                        raise ValueError(f"vmap: in_axes {axis} is outside a tensor of shape {leaf.shape}")
                    sizes.add(leaf.shape[axis])
        if len(sizes) != 1:
            raise ValueError(f"vmap: the mapped axes must have one size, got {sorted(sizes) or 'none mapped'}")
        (size,) = sizes
        if size == 0:
            raise ValueError("vmap: the mapped axis has size 0 (fn's result shapes are unknown)")

        def call(i: int) -> Any:
            sliced = [unflatten(s, iter(leaves if axis is None else
                                         [leaf[(slice(None),) * (axis % leaf.ndim) + (i,)] for leaf in leaves]))
                      for s, leaves, axis in zip(structures, leaves_of, axes)]
            return fn(*sliced)

        results = [call(i) for i in range(size)]
        out_leaves: list[list[Any]] = []
        structure = None
        for r in results:
            leaves = []
            structure = flatten(r, leaves)
            out_leaves.append(leaves)
        outs = out_axes if isinstance(out_axes, tuple) else (out_axes,) * len(out_leaves[0])
        if len(outs) != len(out_leaves[0]):
            raise ValueError(f"vmap: out_axes has {len(outs)} entries for {len(out_leaves[0])} outputs")
        stacked = []
        for k, axis in enumerate(outs):
            column = [leaves[k] for leaves in out_leaves]
            if not all(isinstance(c, Tensor) for c in column):
                raise TypeError("vmap: fn must return tensors (in tuples, lists or dicts)")
            stacked.append(stack(column, axis=axis if axis >= 0 else axis + column[0].ndim + 1))
        return unflatten(structure, iter(stacked))

    return mapped


__all__ = ["vmap"]
