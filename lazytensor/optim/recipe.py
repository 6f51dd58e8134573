"""A built-in optimizer's update of one parameter, recorded once per structure and rebuilt on each step's tensors.

The update is a pure function of its tensors (the parameter, its gradient, its state, the terms its step
shares), of flags and of Python scalars (the hyperparameters, each a kernel parameter): the nodes it records
depend on nothing else than the tensors' dtypes, shapes and devices (and, as a reshape or permute composes with
its source's, whether one is a reshape or a permute), the flags and which scalar each node holds. Recorded
through the tensor ops, a node costs about 8 us of Python (operand checks, broadcasting, a tensor per op); an
update's first recording is kept as a list of the nodes it made, each with its sources' places, and later steps
rebuild those nodes through `Node` alone, with the step's scalars: the same graph, hash-consed alike (a node the
graph holds already is found, not made again), at the same user's line, for a fraction of the cost.

Only a graph that the list can say is kept: nodes of the ops below, whose sources are the function's tensors or
nodes it made, and whose scalars are the scalars given (told apart by identity: a scalar the function made
itself, or one given twice, has no place, and its update is recorded through the tensor ops at every step).
"""
from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from ..graph import Node, Op
from ..helpers import user_line
from ..tensor import Tensor

RECIPES_MAX = 256  # structures kept (the oldest goes): a model's parameter shapes times its groups' flags

_SCALAR = Op.SCALAR
# the ops a recipe rebuilds: their nodes are functions of their sources and arg only (not of data, a random
# state, or a user's line in the arg)
_REBUILT = frozenset({Op.ALU, Op.CAST, Op.SCALAR, Op.CONST, Op.RESHAPE, Op.EXPAND, Op.PERMUTE, Op.REDUCE})
_COMPOSED = (Op.RESHAPE, Op.PERMUTE)  # a reshape of a reshape is one node (`Tensor._make`)

Update = Callable[..., tuple[Tensor | None, ...]]
# per node made: op, dtype, shape, device, its sources' places (the tensors', then the nodes made, in order),
# and its arg, or for a scalar the place of its value among the scalars
_Entry = tuple[Op, Any, tuple[int, ...], str, tuple[int, ...], Any]
_Recipe = tuple[list[_Entry], tuple[int | None, ...]]

_recipes: dict[tuple, _Recipe | None] = {}
_keeping = threading.Lock()


def _signature(t: Tensor | None) -> tuple | None:
    if t is None:
        return None
    node = t._node
    return node.dtype, node.shape, node.device, node.op if node.op in _COMPOSED else None


def apply(update: Update, flags: tuple, scalars: tuple[float, ...], tensors: tuple[Tensor | None, ...]) \
        -> tuple[Tensor | None, ...]:
    """`update(flags, scalars, *tensors)` (under no_grad): the nodes of its structure's recipe rebuilt on
    `tensors` and `scalars` at the user's line, or where there is none yet, run and recorded."""
    # which tensors are one node: a recipe places each node once (Adam's v and its maximum, after a first step)
    first = {id(t._node): k for k, t in reversed(list(enumerate(tensors))) if t is not None}
    shared = tuple(None if t is None else first[id(t._node)] for t in tensors)
    key = (update, flags, tuple(map(_signature, tensors)), shared)
    try:
        recipe = _recipes[key]
    except KeyError:
        outputs = update(flags, scalars, *tensors)
        recipe = _record(tensors, scalars, outputs)
        with _keeping:  # another thread's eviction would change the table under `iter`
            if len(_recipes) >= RECIPES_MAX:
                _recipes.pop(next(iter(_recipes)), None)
            _recipes[key] = recipe
        return outputs
    if recipe is None:
        return update(flags, scalars, *tensors)
    return _rebuild(recipe, tensors, scalars, user_line(2))


def _record(tensors: tuple[Tensor | None, ...], scalars: tuple[float, ...],
            outputs: tuple[Tensor | None, ...]) -> _Recipe | None:
    """The recipe of the graph from `tensors` to `outputs`, or None where it cannot say it (see the module)."""
    place = {id(t._node): k for k, t in reversed(list(enumerate(tensors))) if t is not None}  # the first of one node
    slots = {}
    for k, s in enumerate(scalars):
        slots[id(s)] = None if id(s) in slots else k  # a scalar given twice has no one place
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


def _rebuild(recipe: _Recipe, tensors: tuple[Tensor | None, ...], scalars: tuple[float, ...],
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
