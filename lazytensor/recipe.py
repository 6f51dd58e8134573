"""Graphs that lazytensor's own code records again and again, recorded once per structure and rebuilt after.

A function such as a built-in optimizer's update of one parameter, the random words of a draw or a
convolution's gradients is pure: the nodes it records depend on nothing but the dtypes, shapes and devices of its
tensors (and, as a reshape or permute of a reshape or permute composes with it into one of its source, which one it
is, with its source's shape), its flags (hashable: sizes, options) and which of its Python scalars (hyperparameters, a seed: each a kernel
parameter) each node holds. Recorded through the tensor ops, a node costs several microseconds of Python
(operand checks, broadcasting, a tensor per op); `apply` keeps a function's first recording as a list of the
nodes it made, each with its sources' places, and rebuilds those nodes on later calls' tensors and scalars
through `Node` alone: the same graph, hash-consed alike (a node the graph holds already is found, not made
again), at the same user's line, for a fraction of the cost.

Only a graph that the list can say is kept: nodes of the ops below, whose sources are the function's tensors (or
the source of one that is a reshape or permute) or nodes it made, and whose scalars are the scalars given (told apart by identity: a scalar the function made
itself has no place, and its function is recorded through the tensor ops at every call). A call that autograd
records (grad enabled, a tensor that requires grad) is always recorded through the ops; `apply_differentiable`
makes such a call one record of its own, its gradients a recipe too (its scalars' nodes shared by both graphs).
"""
from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from .autograd import custom_vjp, is_grad_enabled, set_grad_enabled
from .dtypes import get_default_dtype
from .graph import Node, Op, sharing_scalars, uniform_axes
from .helpers import user_line
from .movement import slice_ops
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
# and the values of its fixed scalars (`_record`), placed after the scalars given
_Recipe = tuple[list[_Entry], tuple[int | None, ...], tuple[Any, ...]]

_recipes: dict[tuple, _Recipe | None] = {}
_keeping = threading.Lock()


def _signature(t: Tensor | None) -> tuple | None:
    """What of `t` its function's nodes may depend on: its dtype, shape, device, which reshape or permute of what it is,
    and the axes along which its elements are the same by structure (a reduction over a tensor uniform along an axis
    it keeps reduces one slice, `ReduceOps._reduce`)."""
    if t is None:
        return None
    node = t._node
    if node.op in _COMPOSED:  # a reshape or permute of it composes with it: the nodes made depend on what it is
        return node.dtype, node.shape, node.device, node.op, node.arg, node.srcs[0].shape, uniform_axes(node)
    return node.dtype, node.shape, node.device, uniform_axes(node)


def _inputs(tensors: tuple[Tensor | None, ...]) -> list[Node | None]:
    """The nodes a recipe's nodes are made from: the tensors', then the source of each that is a reshape or a
    permute, which the function's own reshape or permute of it composes with (`Tensor._make`) and so reads."""
    nodes = [None if t is None else t._node for t in tensors]
    return nodes + [n.srcs[0] for n in nodes if n is not None and n.op in _COMPOSED]


def apply(fn: Function, flags: tuple, scalars: tuple[Any, ...], tensors: tuple[Tensor | None, ...]) \
        -> tuple[Tensor | None, ...]:
    """`fn(flags, scalars, *tensors)`, a pure function (see the module): the nodes of its structure's recipe
    rebuilt on `tensors` and `scalars` at the user's line, or where there is none yet, recorded through its ops."""
    return _apply(fn, flags, scalars, tensors, False)[0]


def _apply(fn: Function, flags: tuple, scalars: tuple[Any, ...], tensors: tuple[Tensor | None, ...],
           fixed: bool) -> tuple[tuple[Tensor | None, ...], bool]:
    """`apply`, and whether its structure has a recipe. With `fixed`, the scalars fn makes itself are fixed values
    of the structure (see `_record`)."""
    if is_grad_enabled() and any(t is not None and t.requires_grad for t in tensors) \
            or len(set(map(id, scalars))) < len(scalars):  # a scalar given twice would have no one place
        return fn(flags, scalars, *tensors), False
    # which inputs are one node: a recipe places each node once (Adam's v and its maximum, after a first step)
    first: dict[int, int] = {}
    inputs = _inputs(tensors)
    shared = tuple(None if n is None else first.setdefault(id(n), k) for k, n in enumerate(inputs))
    key = (fn, flags, tuple(map(_signature, tensors)), shared, get_default_dtype())  # the default may decide dtypes
    try:
        recipe = _recipes[key]
    except KeyError:
        with slice_ops():  # its slices of realized tensors rebuilt on any tensor of their structure
            outputs = fn(flags, scalars, *tensors)
        recipe = _record(inputs, scalars, outputs, fixed)
        with _keeping:  # another thread's eviction would change the table under `iter`
            if len(_recipes) >= RECIPES_MAX:
                _recipes.pop(next(iter(_recipes)), None)
            _recipes[key] = recipe
        return outputs, recipe is not None
    if recipe is None:
        return fn(flags, scalars, *tensors), False
    return _rebuild(recipe, tensors, inputs, scalars, user_line(3)), True


def apply_differentiable(fn: Function, flags: tuple, scalars: tuple[Any, ...], tensors: tuple[Tensor | None, ...]) \
        -> Tensor:
    """`fn(flags, scalars, *tensors)[0]`, of a pure function (see the module), differentiated as autograd
    differentiates its ops, each graph rebuilt from a recipe: where autograd records, the result is one record
    (`custom_vjp`) instead of one per op of fn, and its backward the graph autograd's own rules make for fn's ops
    (the same nodes), rebuilt too. The backward records fn's ops again, on the tensors' nodes, to find the forward's
    nodes by hash-consing; a scalar's node, never shared, would be a new one, and every node built on it a copy:
    both graphs share their scalars' nodes (`graph.sharing_scalars`)."""
    shared: dict[tuple, list[Node]] = {}
    given = tuple(t for t in tensors if t is not None)
    if not (is_grad_enabled() and any(t.requires_grad for t in given)):
        return sharing_scalars(shared, apply, fn, flags, scalars, tensors)[0]
    needs = tuple(t is not None and t.requires_grad for t in tensors)
    # autograd's handles, not the tensors: a tensor of the user's program that the record kept alive would be data
    # the user can read, which the schedule then writes (`graph.hold`)
    handles = tuple(None if t is None else t._as_source() for t in tensors)
    kept: list[bool] = []

    def forward() -> Tensor:
        out, has_recipe = sharing_scalars(shared, _apply, fn, flags, scalars, tensors, False)
        kept.append(has_recipe)
        return out[0]

    def backward(g: Tensor) -> tuple[Tensor | None, ...]:
        # fn's forward has a recipe: fn makes no scalar of its own, so every scalar the backward makes that is not
        # one given is a rule's, a literal or a size (rules never read a scalar's value): kept fixed
        grads, _ = sharing_scalars(shared, _apply, _gradients, (fn, flags, needs), scalars, (g, *handles), kept[0])
        return tuple(grad for grad, t in zip(grads, handles) if t is not None)

    backward.__qualname__ = fn.__qualname__  # the record's name (`Tensor.grad_fn`) is fn's
    return custom_vjp(given, forward, backward)


def _gradients(flags: tuple, scalars: tuple, g: Tensor, *tensors: Tensor | None) -> tuple[Tensor | None, ...]:
    """The gradients of `fn(fn_flags, scalars, *tensors)[0]` for the tensors `needs` names (None for the others),
    given its gradient `g`, as autograd's rules make them: fn recorded again on a leaf in each tensor's place, each
    place's gradient fn's alone (a tensor given twice, or given with a view of it, gets one per place). Where the
    gradients are not recorded themselves, a leaf is a handle on the tensor's node (fn's nodes are then found,
    hash-consed, not made again); where they are (`create_graph`), an identity record on the tensor, so that they
    chain to its record."""
    from .autograd import _propagate
    from .tensor import _Source
    fn, fn_flags, needs = flags
    recorded = is_grad_enabled()
    leaves: list[Tensor | None] = []
    for t, need in zip(tensors, needs):
        if t is None or not need:
            leaves.append(t)
        elif recorded:
            leaves.append(custom_vjp((t,), lambda t=t: t, _passed_on))
        else:
            leaves.append(leaf := _Source(t))
            leaf._ctx = None
    with set_grad_enabled(True):
        out = fn(fn_flags, scalars, *leaves)[0]
    # as fn's records hold them (a leaf that is not one of autograd's handles, a proxy, by its handle)
    held = [t._as_source() if need else None for t, need in zip(leaves, needs)]
    with set_grad_enabled(recorded):
        found = _propagate([out], [g], {id(t) for t in held if t is not None})
    return tuple(None if t is None or id(t) not in found else found[id(t)][1] for t in held)


def _passed_on(g: Tensor) -> tuple[Tensor]:
    """An identity's backward (`_gradients`' leaves that chain to their tensors)."""
    return (g,)


def _record(inputs: list[Node | None], scalars: tuple[Any, ...], outputs: tuple[Tensor | None, ...],
            fixed: bool) -> _Recipe | None:
    """The recipe of the graph from `inputs` (`_inputs`) to `outputs`, or None where it cannot say it (see the
    module). With `fixed`, a scalar that is not one of `scalars` is kept as a value of the structure: the caller
    knows that every such scalar is one (the literals and sizes of autograd's rules, `apply_differentiable`)."""
    values: list[Any] = []
    place: dict[int, int] = {}
    for k, n in enumerate(inputs):
        if n is not None:
            place.setdefault(id(n), k)  # the first of one node
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
                if not fixed:
                    return None
                arg = slots[id(node.arg)] = len(scalars) + len(values)
                values.append(node.arg)
        else:
            arg = node.arg
        try:
            srcs = tuple(place[id(s)] for s in node.srcs)
        except KeyError:  # a source from outside, not the function's tensors nor made from them
            return None
        place[id(node)] = len(inputs) + len(entries)
        entries.append((node.op, node.dtype, node.shape, node.device, srcs, arg))
    return entries, tuple(None if t is None else place[id(t._node)] for t in outputs), tuple(values)


def _rebuild(recipe: _Recipe, tensors: tuple[Tensor | None, ...], nodes: list[Any], scalars: tuple[Any, ...],
             line: tuple[str, int | None]) -> tuple[Tensor | None, ...]:
    """The recipe's nodes made on `tensors`, whose `_inputs` are `nodes` (a list of its own, which this extends),
    and `scalars`, at `line`."""
    entries, outputs, fixed = recipe
    if fixed:
        scalars = (*scalars, *fixed)
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
