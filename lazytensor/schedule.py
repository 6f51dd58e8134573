"""The scheduler: which nodes get their own buffer, and the kernels that compute them.

Fusion rules (each one is a kernel-count test in tests/test_schedule.py):

1. A node is realized (written to memory) only if it is a requested output, a
   `contiguous()`, a reduction that would otherwise be computed more than once
   (read by two kernels, or through two different views), or a reduction that
   the consuming loop nest would recompute (its result broadcast along an
   axis the consumer loops over *outside* the axes the reduction depends on,
   such as `x - x.mean(axis=0)`). Everything else is fused into its consumer.
2. So any chain of elementwise ops is one kernel; elementwise producers fuse
   into the reduction that reads them; a reduction broadcast along trailing
   axes (softmax, layernorm and var over the last axis) stays in the kernel
   that reads it, computed once per row.
3. Movement ops never run on their own: they are index arithmetic in the
   loads of the kernel that reads them.
4. An elementwise node read by several ops is recomputed by each kernel that
   reads it. This trades arithmetic for memory traffic: recomputing `a + b`
   reads `a` and `b` again but never writes or re-reads a temporary. Within
   one kernel a shared node is computed once.
5. A fused region is capped at MAX_FUSED_OPS ops; past that the node is
   realized, so huge graphs compile in bounded time.

Schedules are cached by the structure of the graph (ops, dtypes, shapes and
sharing; not the data, nor the values of Python scalars), so a training loop
that builds the same graph each step schedules it once.
"""
from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

from .graph import Node, Op, toposort
from .kernels.ir import Kernel, recomputed_reductions
from .lowering import lower

MAX_FUSED_OPS = 512
SCHEDULE_CACHE_SIZE = 4096


@dataclass
class ScheduleItem:
    """One kernel launch: computes `output` from the buffers of `inputs` and the values of `scalars`."""

    kernel: Kernel
    output: Node
    inputs: list[Node]
    scalars: list[Node]

    @property
    def params(self) -> list[bool | int | float]:
        return [n.arg for n in self.scalars]

    @property
    def device(self) -> str:
        return self.output.device

    def __str__(self) -> str:
        return f"# {self.output.origin} on {self.device}\n{self.kernel}"


class Schedule(list):
    """The kernels `realize` would run, in order. `print` it to read their kernel IR."""

    def __str__(self) -> str:
        if not self:
            return "<empty schedule: everything is already realized>"
        return "\n\n".join(f"[{i}] {item}" for i, item in enumerate(self))


def _realize_points(nodes: list[Node], roots: list[Node]) -> set[Node]:
    points = {r for r in roots if not r.realized}
    cost: dict[int, int] = {}
    for n in nodes:
        if n.realized:
            cost[id(n)] = 0
            continue
        if n.op is Op.CONTIGUOUS:
            points.add(n)
        c = 1 + sum(cost[id(s)] for s in n.srcs)
        if c > MAX_FUSED_OPS:  # the sum counts a node shared by two paths twice: count the region's nodes
            c = _region_size(n, points, MAX_FUSED_OPS + 1)
        if c > MAX_FUSED_OPS:
            points.add(n)
        cost[id(n)] = 0 if n in points else c
    return points


def _region_size(root: Node, points: set[Node], limit: int) -> int:
    """The distinct nodes `root`'s kernel would compute (up to `limit`): a DAG with much sharing, such as
    the rounds of a random number generator, is small even where the paths through it are many."""
    seen = {id(root)}
    stack = list(root.srcs)
    while stack and len(seen) < limit:
        n = stack.pop()
        if id(n) in seen or n.realized or n in points:
            continue
        seen.add(id(n))
        stack.extend(n.srcs)
    return len(seen)


def storage(node: Node) -> Node:
    """The node whose buffer holds `node`'s data: a reshape shares its source's buffer."""
    return node.srcs[0] if node.op is Op.RESHAPE else node


# structure key -> per kernel: (kernel, output position, input positions, scalar positions)
_cache: OrderedDict[tuple, list[tuple[Kernel, int, list[int], list[int]]]] = OrderedDict()


def _structure(nodes: list[Node], targets: list[Node]) -> tuple:
    """What a schedule depends on: every node but data and scalar values, with its sources by position."""
    pos = {id(n): i for i, n in enumerate(nodes)}
    return (tuple((n.op, n.dtype, n.shape, n.device, tuple(pos[id(s)] for s in n.srcs),
                   None if n.op in (Op.SCALAR, Op.BUFFER) else n.arg) for n in nodes),
            tuple(pos[id(t)] for t in targets))


def schedule(*roots: Node) -> Schedule:
    """The kernels that compute `roots` from realized buffers, producers first."""
    targets = [storage(r) for r in roots]
    nodes = toposort(targets)
    key = _structure(nodes, targets)
    if (hit := _cache.get(key)) is not None:
        _cache.move_to_end(key)
        return Schedule(ScheduleItem(k, nodes[o], [nodes[i] for i in ins], [nodes[p] for p in ps])
                        for k, o, ins, ps in hit)
    items = _schedule(nodes, targets)
    pos = {id(n): i for i, n in enumerate(nodes)}
    _cache[key] = [(it.kernel, pos[id(it.output)], [pos[id(n)] for n in it.inputs],
                    [pos[id(n)] for n in it.scalars]) for it in items]
    if len(_cache) > SCHEDULE_CACHE_SIZE:
        _cache.popitem(last=False)
    return items


def _schedule(nodes: list[Node], targets: list[Node]) -> Schedule:
    points = _realize_points(nodes, targets)
    while True:
        items = Schedule()
        wasteful: set[Node] = set()
        copies: dict[Node, int] = {}
        for n in nodes:
            if n in points and not n.realized:
                lk = lower(n, points)
                wasteful.update(lk.reductions[id(v)] for v in recomputed_reductions(lk.kernel))
                for red in lk.reductions.values():
                    copies[red] = copies.get(red, 0) + 1
                items.append(ScheduleItem(lk.kernel, n, lk.inputs, lk.scalars))
        wasteful.update(red for red, count in copies.items() if count > 1)
        wasteful -= points  # a kernel's own output cannot move to a buffer of its own: nothing left to split
        if not wasteful:
            return items
        points.update(wasteful)
