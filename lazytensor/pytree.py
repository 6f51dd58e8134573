"""Pytrees: arguments and results that are tuples, lists and dicts of tensors (nested), as `lt.jit`, `lt.grad`,
`lt.vmap` and `lt.export` take them. `flatten` lists a tree's leaves and returns its structure; `unflatten`
rebuilds a tree of that structure from new leaves."""
from __future__ import annotations

from typing import Any


def flatten(tree: Any, leaves: list[Any]) -> Any:
    """The structure of `tree` (tuples, lists and dicts, nested), its leaves appended to `leaves`."""
    if type(tree) in (tuple, list):
        return type(tree), tuple(flatten(t, leaves) for t in tree)
    if type(tree) is dict:
        return dict, tuple(tree), tuple(flatten(v, leaves) for v in tree.values())
    leaves.append(tree)
    return None


def unflatten(structure: Any, leaves: Any) -> Any:
    """`flatten`'s inverse; `leaves` is an iterator."""
    if structure is None:
        return next(leaves)
    if structure[0] is dict:
        return {k: unflatten(s, leaves) for k, s in zip(structure[1], structure[2])}
    return structure[0](unflatten(s, leaves) for s in structure[1])


__all__ = ["flatten", "unflatten"]
