"""Graphs that lazytensor's own code records again and again, recorded once per structure and rebuilt after.

A function such as a built-in optimizer's update of one parameter, the random words of a draw or a
convolution's gradients is pure: the nodes it records depend on nothing but the dtypes, shapes and devices of its
tensors (and, as a reshape or permute composes with its source's, whether one is a reshape or a permute), its
flags (hashable: sizes, options) and which of its Python scalars (hyperparameters, a seed: each a kernel
parameter) each node holds. Recorded through the tensor ops, a node costs several microseconds of Python
(operand checks, broadcasting, a tensor per op); `apply` keeps a function's first recording as a list of the
nodes it made, each with its sources' places, and rebuilds those nodes on later calls' tensors and scalars
through `Node` alone: the same graph, hash-consed alike (a node the graph holds already is found, not made
again), at the same user's line, for a fraction of the cost.

Only a graph that the list can say is kept: nodes of the ops below, whose sources are the function's tensors or
nodes it made, and whose scalars are the scalars given (told apart by identity: a scalar the function made
itself has no place, and its function is recorded through the tensor ops at every call). A call that autograd
records (grad enabled, a tensor that requires grad) is always recorded through the ops.
"""
from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from .autograd import is_grad_enabled
from .dtypes import get_default_dtype
from .graph import Node, Op, uniform_axes
from .helpers import user_line
from .tensor import Tensor

RECIPES_MAX = 1024  # structures kept (the oldest goes): a model's parameter shapes times its flags, its draws

_SCALAR = Op.SCALAR
# the ops a recipe rebuilds: their nodes are functions of their sources and arg only (not of data, a random
# state, or a user's line in the arg). A CONTIGUOUS node (a convolution's padded input in a buffer of its own) is
# one too; `contiguous()` of a function's own tensor makes it only where that is not realized yet, and a rebuild
# on the other kind copies where the recording did not, or not where it did: the same values either way
_REBUILT = frozenset({Op.ALU, Op.CAST, Op.SCALAR, Op.CONST, Op.IOTA, Op.PHILOX, Op.RESHAPE, Op.EXPAND, Op.PERMUTE,
                      Op.PAD, Op.SHRINK, Op.FLIP, Op.REDUCE, Op.CONTIGUOUS})
_COMPOSED = (Op.RESHAPE, Op.PERMUTE)  # a reshape of a reshape is one node (`Tensor._make`)

Function = Callable[..., tuple[Tensor | None, ...]]
# per node made: op, dtype, shape, device, its sources' places (the tensors', then the nodes made, in order),
# and its arg, or for a scalar the place of its value among the scalars
_Entry = tuple[Op, Any, tuple[int, ...], str, tuple[int, ...], Any]
_Recipe = tuple[list[_Entry], tuple[int | None, ...]]

_recipes: dict[tuple, _Recipe | None] = {}
_keeping = threading.Lock()


def _signature(t: Tensor | None) -> tuple | None:
    """What of `t` its function's nodes may depend on: its dtype, shape, device, whether it is a reshape or a permute,
    and the axes along which its elements are the same by structure (a reduction over a tensor uniform along an axis
    it keeps reduces one slice, `ReduceOps._reduce`)."""
    if t is None:
        return None
    node = t._node
    return node.dtype, node.shape, node.device, node.op if node.op in _COMPOSED else None, uniform_axes(node)


def apply(fn: Function, flags: tuple, scalars: tuple[Any, ...], tensors: tuple[Tensor | None, ...]) \
        -> tuple[Tensor | None, ...]:
    """`fn(flags, scalars, *tensors)`, a pure function (see the module): the nodes of its structure's recipe
    rebuilt on `tensors` and `scalars` at the user's line, or where there is none yet, recorded through its ops."""
    if is_grad_enabled() and any(t is not None and t.requires_grad for t in tensors) \
            or len(set(map(id, scalars))) < len(scalars):  # a scalar given twice would have no one place
        return fn(flags, scalars, *tensors)
    # which tensors are one node: a recipe places each node once (Adam's v and its maximum, after a first step)
    first = {id(t._node): k for k, t in reversed(list(enumerate(tensors))) if t is not None}
    shared = tuple(None if t is None else first[id(t._node)] for t in tensors)
    key = (fn, flags, tuple(map(_signature, tensors)), shared, get_default_dtype())  # the default may decide dtypes
    try:
        recipe = _recipes[key]
    except KeyError:
        outputs = fn(flags, scalars, *tensors)
        recipe = _record(tensors, scalars, outputs)
        with _keeping:  # another thread's eviction would change the table under `iter`
            if len(_recipes) >= RECIPES_MAX:
                _recipes.pop(next(iter(_recipes)), None)
            _recipes[key] = recipe
        return outputs
    if recipe is None:
        return fn(flags, scalars, *tensors)
    return _rebuild(recipe, tensors, scalars, user_line(2))


def _record(tensors: tuple[Tensor | None, ...], scalars: tuple[Any, ...],
            outputs: tuple[Tensor | None, ...]) -> _Recipe | None:
    """The recipe of the graph from `tensors` to `outputs`, or None where it cannot say it (see the module)."""
    place = {id(t._node): k for k, t in reversed(list(enumerate(tensors))) if t is not None}  # the first of one node
    slots = {id(s): k for k, s in enumerate(scalars)}
    entries: list[_Entry] = []
    # the nodes made, sources first: an explicit stack (the graph may be deep), each node placed once
    stack = [(t._node, False) for t in reversed(outputs) if t is not None]
    while stack:
        node, expanded = stack.pop()
        if id(node) in place:
            continue
        if not expanded:
            if node.op not in _REBUILT:
                return None
            stack.append((node, True))
            stack.extend((s, False) for s in reversed(node.srcs) if id(s) not in place)
            continue
        if node.op is _SCALAR:
            if (arg := slots.get(id(node.arg))) is None:
                return None
        else:
            arg = node.arg
        try:
            srcs = tuple(place[id(s)] for s in node.srcs)
        except KeyError:  # a source from outside (a reshape of a tensor's own source): not the function's
            return None
        place[id(node)] = len(tensors) + len(entries)
        entries.append((node.op, node.dtype, node.shape, node.device, srcs, arg))
    return entries, tuple(None if t is None else place[id(t._node)] for t in outputs)


def _rebuild(recipe: _Recipe, tensors: tuple[Tensor | None, ...], scalars: tuple[Any, ...],
             line: tuple[str, int | None]) -> tuple[Tensor | None, ...]:
    entries, outputs = recipe
    nodes: list[Any] = [None if t is None else t._node for t in tensors]
    new, scalar = Node, _SCALAR
    for op, dtype, shape, device, srcs, arg in entries:
        if op is scalar:
            nodes.append(new(op, dtype, shape, device, (), scalars[arg], line))
        elif len(srcs) == 1:
            nodes.append(new(op, dtype, shape, device, (nodes[srcs[0]],), arg, line))
        elif len(srcs) == 2:
            nodes.append(new(op, dtype, shape, device, (nodes[srcs[0]], nodes[srcs[1]]), arg, line))
        else:
            nodes.append(new(op, dtype, shape, device, tuple(nodes[s] for s in srcs), arg, line))
    made: dict[int, Tensor] = {}  # a node given out twice is one tensor, as the function gave it
    return tuple(None if k is None else tensors[k] if k < len(tensors) else made[k] if k in made
                 else made.setdefault(k, Tensor(nodes[k])) for k in outputs)
