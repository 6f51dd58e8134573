"""The scheduler: which nodes get their own buffer, and the kernels that compute them.

Fusion rules (each one is a kernel-count test in tests/test_schedule.py):

1. A node is realized (written to memory) only if it is a requested output, a
   `contiguous()` (of a node computed in the same schedule: that node itself,
   which its other readers then read instead of recomputing it, and no copy),
   a reduction that would otherwise be computed more than once (read by two
   kernels, or through two different views), or a reduction that the
   consuming loop nest would recompute (its result broadcast along an axis
   the consumer loops over *outside* the axes the reduction depends on, such
   as `x - x.mean(axis=0)`, or read by several elements of the loop nest, as
   a max pool's tie count is by each element of its window). Everything else
   is fused into its consumer.
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
5. A contraction (matmul, batched matmul, tensordot) on a backend with a
   contraction template is one kernel with its elementwise prologue (casts,
   scaling, transposes of the operands) and its epilogue (bias, activation,
   any consumer in the region); a second contraction in the same region gets
   its own kernel, so a template never packs another contraction's output
   while computing it.
6. A fused region is capped at MAX_FUSED_OPS ops; past that the node is
   realized, so huge graphs compile in bounded time.
7. Realized nodes of one shape whose regions overlap (read a common buffer
   or compute a common node) are one kernel with several outputs, as long as
   no other kernel has to run between them: an optimizer's step writes a
   parameter and its moment estimates from one read of the gradient. A node
   of the group that another reads is used in registers, not reloaded.

Schedules are cached by the structure of the graph (ops, dtypes, shapes and
sharing; not the data, nor the values of Python scalars), so a training loop
that builds the same graph each step schedules it once.
"""
from __future__ import annotations

from dataclasses import dataclass

from .device import get_device
from .graph import Node, Op, region, toposort
from .helpers import prod
from .kernels.ir import Contraction, Kernel, VOp, loop_scopes, recomputed_reductions
from .lowering import LoweredKernel, lower
from .random import PHILOX_OPS

MAX_FUSED_OPS = 512
SCHEDULE_CACHE_SIZE = 4096


@dataclass
class ScheduleItem:
    """One kernel launch: computes `outputs` from the buffers of `inputs` and the values of `scalars`."""

    kernel: Kernel | Contraction
    outputs: list[Node]
    inputs: list[Node]
    scalars: list[Node]

    @property
    def params(self) -> list[bool | int | float]:
        return [n.arg for n in self.scalars]

    @property
    def device(self) -> str:
        return self.outputs[0].device

    @property
    def origin(self) -> str:
        """Where the user wrote the op(s) this kernel computes."""
        return ", ".join(dict.fromkeys(n.origin for n in self.outputs))

    def __str__(self) -> str:
        return f"# {self.origin} on {self.device}\n{self.kernel}"


class Schedule(list):
    """The kernels `realize` would run, in order. `print` it to read their kernel IR."""

    def __str__(self) -> str:
        if not self:
            return "<empty schedule: everything is already realized>"
        return "\n\n".join(f"[{i}] {item}" for i, item in enumerate(self))


def _realize_points(nodes: list[Node], roots: list[Node], barriers: set[Node]) -> set[Node]:
    points = {r for r in roots if not r.realized} | barriers
    cost: dict[int, int] = {}
    for n in nodes:
        if n.realized:
            cost[id(n)] = 0
            continue
        c = _cost(n) + sum(cost[id(s)] for s in n.srcs)
        if c > MAX_FUSED_OPS:  # the sum counts a node shared by two paths twice: count the region's nodes
            c = _region_size(n, points, MAX_FUSED_OPS + 1)
        if c > MAX_FUSED_OPS:
            points.add(n)
        cost[id(n)] = 0 if n in points else c
    return points


def _region_size(root: Node, points: set[Node], limit: int) -> int:
    """The ops `root`'s kernel would compute, each distinct node once (counted up to `limit`): a DAG with
    much sharing is small even where the paths through it are many."""
    size = 0
    for n in region(root, points):
        size += _cost(n)
        if size >= limit:
            break
    return size


def _cost(node: Node) -> int:
    """The ops a node adds to a kernel: one, or the rounds of a random number generator."""
    return PHILOX_OPS if node.op is Op.PHILOX else 1


_COMPUTED = frozenset({Op.ALU, Op.CAST, Op.REDUCE, Op.PHILOX})  # ops that compute (not views, not data)
# Ops whose kernel writes a fresh row-major buffer of their own (a `contiguous()` point among them).
_FRESH = _COMPUTED | {Op.CONTIGUOUS}


def storage(node: Node) -> Node:
    """The node whose buffer holds `node`'s data: a reshape shares its source's buffer, and `contiguous()`
    of a node computed in this schedule is that node's buffer: the node is realized instead of copied, so
    its other consumers read it rather than recompute it. (`contiguous()` of a realized buffer copies: the
    buffer may be a NumPy array's memory.)"""
    if node.op is Op.RESHAPE:
        return storage(node.srcs[0])
    if node.op is Op.CONTIGUOUS and (inner := storage(node.srcs[0])).op in _FRESH:
        return inner
    return node


# structure key -> per kernel: (kernel, output positions, input positions, scalar positions)
_cache: dict[tuple, list[tuple[Kernel | Contraction, list[int], list[int], list[int]]]] = {}


def _structure(nodes: list[Node], targets: list[Node]) -> tuple:
    """What a schedule depends on: every node but data and scalar values, with its sources by position."""
    pos = {id(n): i for i, n in enumerate(nodes)}
    scalar, buffer = Op.SCALAR, Op.BUFFER  # locals: this runs for every node of every realize
    return (tuple([(n.op, n.dtype, n.shape, n.device, tuple([pos[id(s)] for s in n.srcs]),
                    None if n.op is scalar or n.op is buffer else n.arg) for n in nodes]),
            tuple([pos[id(t)] for t in targets]))


def schedule(*roots: Node) -> Schedule:
    """The kernels that compute `roots` from realized buffers, producers first."""
    targets = [storage(r) for r in roots]
    nodes = toposort(targets)
    key = _structure(nodes, targets)
    if (hit := _cache.get(key)) is not None:
        return Schedule(ScheduleItem(k, [nodes[o] for o in outs], [nodes[i] for i in ins], [nodes[p] for p in ps])
                        for k, outs, ins, ps in hit)
    items = _schedule(nodes, targets)
    pos = {id(n): i for i, n in enumerate(nodes)}
    _cache[key] = [(it.kernel, [pos[id(n)] for n in it.outputs], [pos[id(n)] for n in it.inputs],
                    [pos[id(n)] for n in it.scalars]) for it in items]
    if len(_cache) > SCHEDULE_CACHE_SIZE:  # the oldest goes: a loop's schedules are re-made once if at all
        del _cache[next(iter(_cache))]
    return items


def _schedule(nodes: list[Node], targets: list[Node]) -> Schedule:
    barriers = {storage(n) for n in nodes if n.op is Op.CONTIGUOUS}  # the nodes `contiguous()` realizes
    points = _realize_points(nodes, targets, barriers)
    readers: dict[int, set[Node]] = {}
    for n in nodes:
        for src in n.srcs:
            readers.setdefault(id(src), set()).add(n)
    while True:
        order = [n for n in nodes if n in points and not n.realized]
        lowered = {n: lower([n], points, get_device(n.device).contraction_dtypes) for n in order}
        wasteful: set[Node] = set()
        copies: dict[Node, int] = {}
        for lk in lowered.values():
            wasteful.update(_waste(lk))
            for red in set(lk.reductions.values()):
                copies[red] = copies.get(red, 0) + 1
        wasteful.update(red for red, count in copies.items() if count > 1)
        wasteful -= points  # a kernel's own output cannot move to a buffer of its own: nothing left to split
        if not wasteful:
            break
        points.update(_as_read(red, readers, points) for red in wasteful)
    items = Schedule()
    for group in _groups(order, lowered, barriers):
        merged = lower(group, points - set(group)) if len(group) > 1 else None
        if merged is None or _waste(merged):
            items.extend(ScheduleItem(lowered[n].kernel, [n], lowered[n].inputs, lowered[n].scalars) for n in group)
        else:
            items.append(ScheduleItem(merged.kernel, group, merged.inputs, merged.scalars))
    return items


def _squeezed(shape: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(n for n in shape if n != 1)


def _as_read(red: Node, readers: dict[int, set[Node]], points: set[Node]) -> Node:
    """The node to realize for a reduction that must be written: the reduction itself, or the one view
    every reader reads it through when that only drops or adds axes of size 1 (`x.sum(axis=1)` is a
    sum with its axes kept, then squeezed), so that it has its readers' shape and can share their
    kernel (rule 7): a loss's mean then divides by a count it computes itself."""
    (view, *others) = readers.get(id(red), ()) or (red,)
    if others or view.op is not Op.RESHAPE or view in points or _squeezed(view.shape) != _squeezed(red.shape):
        return red
    return view


def _waste(lk: LoweredKernel) -> set[Node]:
    """Reductions a kernel computes more often than once per result: recomputed inside its loops (also
    where the loops read each result several times through a many-to-one index, as the elements of a
    window read its max-pool's tie count), or computed twice (read at two different indices)."""
    out = set()
    for nest in lk.loop_nests():
        values, scopes = loop_scopes(nest)
        out.update(lk.reductions[id(v)] for v in recomputed_reductions(nest))
        out.update(lk.reductions[id(v)] for v in values if v.op is VOp.REDUCE
                   and prod(var.size for var in scopes[id(v)]) > lk.reductions[id(v)].numel)
    seen: set[Node] = set()
    for red in lk.reductions.values():
        if red in seen:
            out.add(red)
        seen.add(red)
    return out | set(lk.skipped)


def _groups(order: list[Node], lowered: dict[Node, LoweredKernel], barriers: set[Node]) -> list[list[Node]]:
    """The realize points in kernel order, grouped into multi-output kernels (rule 7). A point that
    `contiguous()` realizes (in `barriers`) is an explicit fusion barrier: it may share a kernel with
    points computed beside it, never with one that reads it."""
    reads: dict[Node, set[int]] = {}
    inner: dict[Node, set[int]] = {}
    points = set(lowered)
    for p in order:
        reads[p], inner[p] = _region(p, points)
    group_of: dict[Node, int] = {}
    groups: list[list[Node]] = []
    for p in order:
        placed = False
        if _groupable(p, lowered):
            for g in reversed(range(len(groups))):
                members = groups[g]
                head = members[0]
                if (head.shape != p.shape or head.device != p.device or not _groupable(head, lowered)
                        or not any(reads[p] & reads[m] or inner[p] & inner[m] or id(m) in reads[p] for m in members)
                        or any(id(m) in reads[p] for m in members if m in barriers)):
                    continue
                group_of[p] = g
                if _acyclic(order, reads, group_of, len(groups)):
                    members.append(p)
                    placed = True
                    break
                del group_of[p]
        if not placed:
            group_of[p] = len(groups)
            groups.append([p])
    return [groups[g] for g in _group_order(order, reads, group_of, len(groups))]


def _groupable(point: Node, lowered: dict[Node, LoweredKernel]) -> bool:
    """Contractions keep their template's kernel."""
    return isinstance(lowered[point].kernel, Kernel)


def _region(point: Node, points: set[Node]) -> tuple[set[int], set[int]]:
    """What `point`'s kernel reads (buffers and other points, by id) and the ops it computes (by id)."""
    reads, inner = set(), set()
    for n in region(point, points):
        if n.op in _COMPUTED:
            inner.add(id(n))
        reads.update(id(s) for s in n.srcs if s.realized or s in points)
    return reads, inner


def _group_edges(order: list[Node], reads: dict[Node, set[int]], group_of: dict[Node, int]) -> dict[int, set[int]]:
    by_id = {id(p): p for p in order}
    edges: dict[int, set[int]] = {}
    for p, g in group_of.items():
        for r in reads[p]:
            if r in by_id and by_id[r] in group_of and group_of[by_id[r]] != g:
                edges.setdefault(group_of[by_id[r]], set()).add(g)
    return edges


def _group_order(order: list[Node], reads: dict[Node, set[int]], group_of: dict[Node, int], n: int) -> list[int]:
    """The groups producers first (Kahn's algorithm; ties keep the order of their first node)."""
    edges = _group_edges(order, reads, group_of)
    indegree = [0] * n
    for targets in edges.values():
        for g in targets:
            indegree[g] += 1
    ready = [g for g in range(n) if indegree[g] == 0]
    out = []
    while ready:
        ready.sort()
        g = ready.pop(0)
        out.append(g)
        for h in edges.get(g, ()):
            indegree[h] -= 1
            if indegree[h] == 0:
                ready.append(h)
    return out


def _acyclic(order: list[Node], reads: dict[Node, set[int]], group_of: dict[Node, int], n: int) -> bool:
    return len(_group_order(order, reads, group_of, n)) == n
