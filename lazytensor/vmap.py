"""`lt.vmap(fn, in_axes, out_axes)`: fn mapped over an axis of its arguments, as JAX's `vmap` and `torch.func.vmap`.

A batching transformation: its graph does not grow with the mapped size. fn runs once, on stand-ins of one
example (lazy tensors of the per-example shape, which no kernel may read), which records fn's graph; that graph
is then rebuilt op by op on the batched arguments, each primitive by its batching rule (`_batched_arg`): the batch
axis goes in front of every batched value, elementwise ops, casts, sorts, scans and factorizations keep their
argument, reductions and movement ops shift their axes by one, gathers and scatters index with the batch as a
leading axis, and a check raises where any example's flag does. Values that do not depend on the mapped arguments
(constants, closures, arguments with `in_axes` None, random draws) stay unbatched and are broadcast, as views,
only where they meet a batched value.

The rebuilt ops are recorded like any others, so `lt.grad`, `lt.jit` and `vmap` itself compose with it. The
rebuild follows fn's autograd records where it has them, so a gradient taken outside vmap (`grad(vmap(f))`)
flows through exactly the ops it would flow through in fn: through the arguments, closures and `in_axes=None`
arguments that require grad, not through `detach()` or `no_grad()`, and a `custom_vjp` inside fn keeps its own
backward, batched by tracing it once the same way.

What a trace cannot do: fn cannot read data (`item()`, `numpy()`, `bool()`, a mask's selection, `nonzero`, the
sizes of results that depend on data) nor compute values of its arguments (`realize()`) - `VmapError` names the
line, as JAX raises. Python control flow in fn sees the per-example shapes, which every example shares. Random
draws inside fn are made once, for one example, and shared by every example (torch's `randomness="same"`).

`in_axes` is an int (every argument), None (not mapped), or a tuple of those, one per positional argument, each
of which may be a tuple, list or dict of tensors mapped alike; `out_axes` an int or a tuple per output. A mapped
axis of size 0 gives results with a batch axis of size 0.
"""
from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

from .autograd import Custom, custom_vjp, no_grad
from .device import get_device
from .errors import VmapError
from .graph import Node, Op
from .helpers import KnownUserLine, prod, user_call
from .kernels.ir import toposort
from .pytree import flatten, unflatten
from .realize import Recorder, current_recorder, recording
from .tensor import Tensor, _wrap


def vmap(fn: Callable[..., Any], in_axes: int | None | tuple = 0, out_axes: int | tuple = 0) -> Callable[..., Any]:
    """`fn` mapped over axis `in_axes` of its arguments, its results with the mapped axis at `out_axes` (see the
    module docstring)."""
    @functools.wraps(fn)
    def mapped(*args: Any) -> Any:
        axes = in_axes if isinstance(in_axes, tuple) else (in_axes,) * len(args)
        if len(axes) != len(args):
            raise ValueError(f"vmap: in_axes has {len(axes)} entries for {len(args)} arguments")
        sizes = set()
        standins: list[tuple[Tensor, Tensor]] = []  # (the stand-in fn sees, the argument with its batch axis first)
        traced_args, nodes = [], []
        for arg, axis in zip(args, axes):
            leaves: list[Any] = []
            structure = flatten(arg, leaves)
            if axis is not None:
                for k, leaf in enumerate(leaves):
                    if not isinstance(leaf, Tensor):
                        raise TypeError(f"vmap: a mapped argument holds a {type(leaf).__name__}, not a tensor")
                    if not -leaf.ndim <= axis < leaf.ndim:
                        raise ValueError(f"vmap: in_axes {axis} is outside a tensor of shape {leaf.shape}")
                    sizes.add(leaf.shape[axis])
                    batched = leaf.moveaxis(axis, 0) if axis % leaf.ndim else leaf
                    leaves[k] = _standin(batched.shape[1:], batched)
                    standins.append((leaves[k], batched))
                    nodes.append(leaves[k].node)
            traced_args.append(unflatten(structure, iter(leaves)))
        if len(sizes) != 1:
            raise ValueError(f"vmap: the mapped axes must have one size, got {sorted(sizes) or 'none mapped'}")
        name = getattr(fn, "__qualname__", repr(fn))
        with recording(_Tracing(name, standins)):
            out = fn(*traced_args)
        if any(s.node is not n for (s, _), n in zip(standins, nodes)):
            raise VmapError(f"lt.vmap: {name} rebinds an argument tensor (x += ..., x.node = ...); return the new "
                            "value instead")
        leaves = []
        structure = flatten(out, leaves)
        outs = out_axes if isinstance(out_axes, tuple) else (out_axes,) * len(leaves)
        if len(outs) != len(leaves):
            raise ValueError(f"vmap: out_axes has {len(outs)} entries for {len(leaves)} outputs")
        if not all(isinstance(leaf, Tensor) for leaf in leaves):
            raise TypeError("vmap: fn must return tensors (in tuples, lists or dicts)")
        batcher = _Batcher(sizes.pop(), standins)
        results = []
        for leaf, axis in zip(leaves, outs):
            r = batcher.batched(leaf) if batcher.dependent(leaf.node) else batcher.lift(leaf)
            if not -r.ndim <= axis < r.ndim:
                raise ValueError(f"vmap: out_axes {axis} is outside a result of {r.ndim} axes")
            results.append(r.moveaxis(0, axis) if axis % r.ndim else r)
        return unflatten(structure, iter(results))

    return mapped


def _standin(shape: tuple[int, ...], like: Tensor) -> Tensor:
    """A tensor of one example's `shape` with `like`'s dtype and device, that fn's graph is recorded on: a buffer
    of its own (uninitialized: `_Tracing` lets no kernel read it). A float one requires grad, so that every op
    on it keeps its autograd record, which the rebuild follows (see `_Batcher`)."""
    buffer = get_device(like.device).alloc(like.dtype, prod(shape))
    node = Node.from_buffer(buffer, like.dtype, shape, like.device)
    return Tensor(node, requires_grad=like.dtype.is_float)


class _Tracing(Recorder):
    """What vmap allows while fn runs on stand-ins: no kernel reads a stand-in, no data is read on the host.
    Launches of other data (state that code outside left pending) are told to the recorder in force, if any (an
    `lt.jit` recording the call)."""

    def __init__(self, name: str, standins: list[tuple[Tensor, Tensor]]):
        self.name, self.outer = name, current_recorder()
        self.buffers = {id(s.node.buffer) for s, _ in standins}

    def launch(self, item: Any, program: Any, outputs: list[Any]) -> None:
        if any(id(n.buffer) in self.buffers for n in item.inputs):
            raise VmapError(f"lt.vmap: {self.name} computes a value of its mapped arguments at {item.origin} (a "
                            "realize inside fn): vmap records fn once on stand-ins of one example and batches the "
                            "graph, so fn must leave its values lazy")
        if self.outer is not None:
            self.outer.launch(item, program, outputs)

    def bind(self, node: Node, buffer: Any) -> None:
        if id(buffer) in self.buffers:
            raise VmapError(f"lt.vmap: {self.name} realizes a view of a mapped argument at {node.origin}: fn must "
                            "leave its values lazy")
        if self.outer is not None:
            self.outer.bind(node, buffer)

    def read(self) -> None:
        op, line = user_call()
        raise VmapError(f"lt.vmap: {self.name} reads a tensor's data with {op.strip('_')}() at {line} (a value, "
                        "or the size of a result that depends on the data: a mask's selection, nonzero, unique): "
                        "vmap records fn once on stand-ins of one example, which hold no data. Read it outside "
                        "the mapped function, or use ops that keep it lazy (lt.where instead of an if)")

    def check(self, flag: Any, message: str) -> None:
        if self.outer is not None:
            self.outer.check(flag, message)


def _shifted(axes: Sequence[int], ndim: int) -> tuple[int, ...]:
    return tuple(a % ndim + 1 for a in axes) if ndim else tuple(axes)


# The batching rules: the argument of an op on values with a batch axis in front, given the op's argument on one
# example and the example's number of axes. Ops missing here take their argument unchanged: elementwise ops,
# casts, CONTIGUOUS, and the ops on axes counted from the end (SORT, SCAN, LINALG), whose axes in front are a batch.
_batched_arg: dict[Op, Callable[[Any, int, int], Any]] = {
    Op.REDUCE: lambda arg, ndim, size: (arg[0], _shifted(arg[1], ndim)),
    Op.RESHAPE: lambda arg, ndim, size: (size, *arg),
    Op.EXPAND: lambda arg, ndim, size: (size, *arg),
    Op.PERMUTE: lambda arg, ndim, size: (0, *_shifted(arg, ndim)),
    Op.PAD: lambda arg, ndim, size: ((0, 0), *arg),
    Op.SHRINK: lambda arg, ndim, size: ((0, size, 1), *arg),
    Op.FLIP: lambda arg, ndim, size: _shifted(arg, ndim),
    Op.GATHER: lambda arg, ndim, size: arg % ndim + 1,
    Op.SCATTER: lambda arg, ndim, size: (arg[0] % ndim + 1, *arg[1:]),
}
_NO_RULE = frozenset({Op.BUFFER, Op.SCALAR, Op.CONST, Op.IOTA, Op.PHILOX})  # no sources: never batched


class _Batcher:
    """Rebuilds graphs recorded on stand-ins on the batched values they stand for.

    A value is batched (its batch axis in front) exactly where its node depends on a stand-in; others are kept
    as they are. A tensor with an autograd record is rebuilt from its record's sources, so the result records
    the same ops for autograd; one without (a stand-in's detached copy, a value made under `no_grad`, or any
    value when vmap runs without grad) is rebuilt from its node's sources, detached."""

    def __init__(self, size: int, standins: list[tuple[Tensor, Tensor]]):
        self.size, self.standins = size, standins
        self.tensors: dict[int, Tensor] = {id(s): b for s, b in standins}
        self.nodes: dict[int, Tensor] = {id(s.node): _wrap(b.node) for s, b in standins}
        self.depends: dict[int, bool] = {id(s.node): True for s, _ in standins}
        self.keep = [s for s, _ in standins]  # the ids above are these objects'

    def dependent(self, node: Node) -> bool:
        """Whether `node` depends on a stand-in (its rebuilt value is batched)."""
        known = self.depends
        if (d := known.get(id(node))) is not None:
            return d
        for n in toposort([node], lambda n: [s for s in n.srcs if id(s) not in known]):
            known[id(n)] = any(known[id(s)] for s in n.srcs)
            self.keep.append(n)
        return known[id(node)]

    def batched(self, root: Tensor) -> Tensor:
        """`root`, a value fn computed for one example, computed for every example: batched (its batch axis
        first) where it depends on a stand-in, else `root` itself."""
        done = self.tensors

        def sources(t: Tensor) -> Sequence[Tensor]:
            return t._ctx[2] if t._ctx is not None and id(t) not in done and self.dependent(t.node) else ()

        for t in toposort([root], sources):
            if id(t) in done:
                continue
            self.keep.append(t)
            if not self.dependent(t.node):
                done[id(t)] = t
            elif t._ctx is None:
                done[id(t)] = self._node(t.node)
            elif t._ctx[0] is Custom.VJP:
                done[id(t)] = self._custom(t)
            else:
                op, arg, srcs = t._ctx
                done[id(t)] = self._rule(op, arg, t.dtype, t.shape, t.device, [done[id(s)] for s in srcs],
                                         [self.dependent(s.node) for s in srcs])
        return done[id(root)]

    def _node(self, root: Node) -> Tensor:
        """`root` rebuilt from its node's sources, without autograd records."""
        done = self.nodes
        with no_grad():
            for n in toposort([root], lambda n: n.srcs if id(n) not in done and self.dependent(n) else ()):
                if id(n) in done:
                    continue
                self.keep.append(n)
                done[id(n)] = self._rule(n.op, n.arg, n.dtype, n.shape, n.device, [done[id(s)] for s in n.srcs],
                                         [self.dependent(s) for s in n.srcs]) if self.dependent(n) else _wrap(n)
        return done[id(root)]

    def lift(self, t: Tensor) -> Tensor:
        """An unbatched value as a batched one: a broadcast view along a new leading axis."""
        one = (1, *t.shape)
        return t._derive(Op.RESHAPE, one, one)._derive(Op.EXPAND, (self.size, *t.shape), (self.size, *t.shape))

    def _rule(self, op: Op, arg: Any, dtype: Any, shape: tuple[int, ...], device: str, srcs: list[Tensor],
              batched: list[bool]) -> Tensor:
        """The op `(op, arg)` that made a value of one example's `shape`, applied to every example's `srcs`
        (those not `batched` are broadcast first)."""
        if op in _NO_RULE:
            raise VmapError(f"lt.vmap: no batching rule for a {op.value} that depends on a mapped argument")
        if op is Op.CHECK:  # the flag is 0-d: it is raised where any example's is
            value, flag = srcs
            srcs = [value if batched[0] else self.lift(value), flag.any() if batched[1] else flag]
        else:
            srcs = [s if b else self.lift(s) for s, b in zip(srcs, batched)]
            rule = _batched_arg.get(op)
            arg = arg if rule is None else rule(arg, len(shape), self.size)
        return Tensor._make(op, dtype, (self.size, *shape), tuple(srcs), arg, device)

    def _custom(self, t: Tensor) -> Tensor:
        """A `custom_vjp` op of fn: its forward rebuilt from its nodes, its backward traced on a stand-in of the
        gradient when autograd asks for it, and batched like fn."""
        _, (backward, takes_result), srcs = t._ctx
        forward = self._node(t.node)
        batched = [self.dependent(s.node) for s in srcs]
        size, standins = self.size, self.standins

        def batched_backward(g: Tensor) -> list[Tensor | None]:
            one = _standin(t.shape, g)
            inner = _Batcher(size, [*standins, (one, g)])
            grads = []
            with KnownUserLine(None):  # fn's custom backward may be the user's code (see autograd.vjp)
                inner_grads = backward(one, t) if takes_result else backward(one)
            for gs, b in zip(inner_grads, batched):
                if gs is not None:
                    r, rb = inner.batched(gs), inner.dependent(gs.node)
                    # a source that is the same for every example gets the sum of their gradients
                    gs = (r if rb else inner.lift(r)) if b else r.sum(0) if rb else r
                grads.append(gs)
            return grads

        return custom_vjp([self.tensors[id(s)] for s in srcs], lambda: forward, batched_backward)


__all__ = ["vmap"]
