"""The scheduler: which nodes get their own buffer, and the kernels that compute them.

Fusion rules (each one is a kernel-count test in tests/test_schedule.py):

1. A node is realized (written to memory) only if it is a requested output, a
   `contiguous()` (of a node computed in the same schedule: that node itself,
   which its other readers then read instead of recomputing it, and no copy),
   data a live tensor of the user's program holds (rule 8), a reduction that
   would otherwise be computed more than once (read by two kernels, or
   through two different views), or a reduction that the consuming loop nest
   would recompute (its result broadcast along an axis the consumer loops
   over *outside* the axes the reduction depends on, such as
   `x - x.mean(axis=0)`, or read by several elements of the loop nest, as a
   max pool's tie count is by each element of its window). Everything else is
   fused into its consumer.
2. So any chain of elementwise ops is one kernel; elementwise producers fuse
   into the reduction that reads them; a reduction broadcast along trailing
   axes (softmax, layernorm and var over the last axis) stays in the kernel
   that reads it, computed once per row.
3. Movement ops never run on their own: they are index arithmetic in the
   loads of the kernel that reads them.
4. An elementwise node read by several ops is recomputed by each kernel that
   reads it. This trades arithmetic for memory traffic: recomputing `a + b`
   reads `a` and `b` again but never writes or re-reads a temporary. Within
   one kernel a shared node is computed once. But a node that loads
   MIN_SHARED_LOADS buffers or more and that two kernels read is written
   once: recomputing it would cost each reader more loads than reading it
   back, and in a deep network the chain of residual gradients would grow
   with the depth in every kernel that reads it. (Not a node larger than
   every buffer it loads, a broadcast: writing it would cost more.)
5. A contraction (matmul, batched matmul, tensordot) on a backend with a
   contraction template is one kernel with its elementwise prologue (casts,
   scaling, transposes of the operands) and its epilogue (bias, activation,
   any consumer in the region); a second contraction in the same region gets
   its own kernel, so a template never packs another contraction's output
   while computing it. The template evaluates an operand with k outside its
   rows and columns, so a reduction along a row of it (attention's softmax
   max and sum) is realized by rule 1, not computed again for every k.
6. A fused region is capped at MAX_FUSED_OPS ops; past that the node is
   realized (or, where it is a broadcast larger than what it reads, such as
   a contraction's product, what it reads is), so huge graphs compile in
   bounded time.
7. Realized nodes of one shape whose regions overlap (read a common buffer
   or compute a common node, of more than one element: a step count or a
   gradient-clipping scale that every parameter's update reads is no reason
   to merge them) are one kernel with several outputs, as long as no other
   kernel has to run between them: an optimizer's step writes a parameter and
   its moment estimates from one read of the gradient. A node of the group
   that another reads is used in registers, not reloaded. A group stays
   within MAX_FUSED_OPS of the nodes its kernels read and compute, so that
   rule 6's cap holds for it too (a long chain cut by rule 6 is not merged
   back into one kernel, with a parameter for every scalar in it). A node
   looks for its kernel among the latest of its shape, passing over at most
   MAX_UPSTREAM_GROUPS that what it reads depends on, so that grouping a
   loop unrolled over many steps stays linear in their number.
8. A node that a live tensor holds (a variable of the user's program, a
   parameter, a gradient, optimizer state) and that the schedule computes
   anyway is written to memory, so that reading it later, or building on it,
   does not compute its history again: the op under its views, or the view
   itself where it reads only part of that op's result, or nothing more
   where its `contiguous()` copy is written anyway (the node then reads that
   copy). Tensors the user no longer holds are fused as usual.
9. An elementwise result of MIN_RECOMPUTED_OPS ops or more that its kernel
   would compute again for every iteration of a loop it does not depend on
   (read through a broadcast: the gradient an embedding's backward sums once
   per row of its table) is written once and read back instead, unless it
   is larger than every buffer it loads. Cheaper ones (a load, a scale, an
   `exp`) are recomputed, as rule 4.

How the rules are decided: one walk over the graph from the outputs down
(`_Planner`), in which each node, when its turn comes, knows every kernel that
reads it and the index each reads it at (the same index maps lowering uses).
That is all a reduction needs to know whether it stays fused; a reduction
that does not gets its own kernel before anything below it is looked at, so
no region is walked twice and no kernel is built to be thrown away. Each
kernel is lowered once, after the plan.

The state an optimizer step or a batch norm records is computed with the next
schedule, whatever it is for (`realize_with_next`); it is part of that
schedule, so `lt.schedule` shows it.

Schedules are cached by the structure of the graph (ops, dtypes, shapes,
sharing and which nodes live tensors hold; not the data, nor the values of
Python scalars), so a training loop that builds the same graph each step
schedules it once. A realize (an eager loop's, a training step's) finds its
plan by checking its graph against the template of a plan made for nodes like
the ones it asks for (`_Template`), without walking it into a key of the whole
structure.
"""
from __future__ import annotations

import bisect
import heapq
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, NamedTuple

from .device import get_device
from .graph import MOVEMENT, Node, Op, is_held
from .helpers import prod
from .kernels.expr import Bounds, Expr, Var
from .kernels.ir import Alu, Contraction, Kernel, ReduceOp, VOp, loop_scopes, recomputed_reductions
from .kernels.philox import PHILOX_OPS
from .lowering import Axes, LoweredKernel, contraction_axes, lower, movement_source, reduce_source, reduce_vars
from .views import source_index

MAX_FUSED_OPS = 512
MIN_SHARED_LOADS = 4    # rule 4: an elementwise node several kernels read is written where it loads this many
MIN_RECOMPUTED_OPS = 8  # rule 9: an elementwise result this costly is written rather than computed again
MAX_UPSTREAM_GROUPS = 16  # rule 7: the groups a point passes over, as its inputs depend on them, before it takes its own
SCHEDULE_CACHE_SIZE = 4096


class Reason(Enum):
    """Why a node is written to memory (a realize point): the rule of the module's docstring that makes it one
    (0 where it is what the realize asks for, or what a kernel of its own kind needs)."""

    REQUESTED = (0, "requested: an output of the realize")
    PENDING = (0, "pending state (an optimizer step's or a batch norm's update), realized with the next schedule")
    CHECK = (0, "the flag of an index check: the realize raises IndexError where an index from data is out of range")
    CONTIGUOUS = (1, "contiguous(): a forced kernel boundary")
    LIVE = (8, "held by a live tensor of the program and computed anyway: written so that reading it costs nothing")
    SHARED_REDUCTION = (1, "a reduction read by two kernels, or by one at two indexes (through two views)")
    RECOMPUTED_REDUCTION = (1, ("a reduction its reader would compute again and again: broadcast along an axis looped "
                                "over outside it, or read by each element of a window, or by a contraction for every k"))
    CONTRACTION = (5, "a contraction read inside another contraction's kernel: one template per kernel")
    SHARED_LOADS = (4, f"an elementwise node two kernels read that loads {MIN_SHARED_LOADS} buffers or more")
    RECOMPUTED = (9, (f"an elementwise result of {MIN_RECOMPUTED_OPS} ops or more that its reader would compute again "
                      "for every iteration of a loop it does not depend on"))
    REGION_CAP = (6, f"its kernel's region would pass MAX_FUSED_OPS ({MAX_FUSED_OPS}) ops")
    OWN_KERNEL = (0, ("a kernel of its own kind (scatter, sort, scan, library call), or a source such a kernel reads "
                      "from memory"))

    @property
    def rule(self) -> int:
        """The fusion rule (module docstring) behind it; 0 for none."""
        return self.value[0]

    @property
    def text(self) -> str:
        return self.value[1]


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
    """The kernels `realize` would run, in order. `print` it to read their kernel IR.

    `requested` holds the nodes it computes on request: the ones asked for, then the pending state
    (`realize_with_next`); `aliases` pairs nodes live tensors hold with the `contiguous()` copy of each
    that the schedule writes, which then holds their data too (rule 8); `checks` pairs the flags it
    computes for the ops that index by data (`Op.CHECK`) with the error each raises where it is true.
    `plan_seconds` and `lower_seconds` say what making it cost: deciding the
    kernels (nothing but a look-up where the same structure was scheduled before), and building their
    kernel IR."""

    requested: list[Node]
    aliases: list[tuple[Node, Node]]
    checks: list[tuple[Node, str]]
    programs: dict  # what `realize.run` compiled for the schedule, kept with it across realizes of its structure
    changed: frozenset[int] = frozenset()  # the sizes it was planned as large for (`_changed_sizes`)
    plan_seconds: float = 0.0
    lower_seconds: float = 0.0

    def __str__(self) -> str:
        if not self:
            return "<empty schedule: everything is already realized>"
        return "\n\n".join(f"[{i}] {item}" for i, item in enumerate(self))


class _Pending(threading.local):
    """Each thread's tensors whose state update is pending (optimizer state, running statistics), by id."""

    def __init__(self) -> None:
        self.tensors: dict[int, weakref.ref] = {}


_pending = _Pending()


def realize_with_next(*tensors: Any) -> None:
    """Compute these tensors (their nodes at that time) in the next schedule this thread runs, whatever it
    is for. An optimizer step and a batch norm's running statistics update state lazily; realizing that
    state with what is realized next (the parameters, the loss) fuses the update into that schedule
    and keeps the state's graph from growing step after step. Before updating such state again, its
    updater calls `realize.compute_stale`."""
    for t in tensors:
        _pending.tensors[id(t)] = weakref.ref(t)


def is_pending(t: Any) -> bool:
    """Whether `t`'s value rides on this thread's next schedule and is not computed yet."""
    return (ref := _pending.tensors.get(id(t))) is not None and ref() is t and not t.node.realized


def forget_pending(nodes: list[Node]) -> None:
    """The pending state among `nodes` was computed: it no longer rides on the next schedule."""
    pending = _pending.tensors
    if not pending:
        return
    done = {id(n) for n in nodes}
    for key, ref in list(pending.items()):
        t = ref()
        if t is None or t.node.realized or id(t.node) in done:
            del pending[key]


def _with_pending(roots: tuple[Node, ...]) -> list[Node]:
    if not (pending := _pending.tensors):
        return list(roots)
    return [*roots, *(t.node for r in list(pending.values()) if (t := r()) is not None and not t.node.realized)]


_COMPUTED = frozenset({Op.ALU, Op.CAST, Op.BITCAST, Op.REDUCE, Op.PHILOX, Op.GATHER})  # ops that compute (not views, not data)
# Ops whose kernel writes a fresh row-major buffer of their own (a `contiguous()` point among them).
_FRESH = _COMPUTED | {Op.CONTIGUOUS, Op.CHECK, Op.SCATTER, Op.SORT, Op.SCAN, Op.LINALG}
_OWN_KERNEL = frozenset({Op.SCATTER, Op.SORT, Op.SCAN, Op.LINALG})  # ops that are a kernel of their own kind, each alone
_FROM_BUFFER = frozenset({Op.SORT, Op.SCAN, Op.LINALG})  # kernels of their own kind that read their sources from buffers


def storage(node: Node) -> Node:
    """The node whose buffer holds `node`'s data: a reshape shares its source's buffer, and `contiguous()`
    of a node computed in this schedule is that node's buffer: the node is realized instead of copied, so
    its other consumers read it rather than recompute it. (`contiguous()` of a realized buffer copies: the
    buffer may be a NumPy array's memory.) A check's value is its source's, unless that is a view to
    compute: its flag is a kernel of its own."""
    op = node.op
    if op is _RESHAPE:
        return storage(node.srcs[0])
    if op is _CONTIGUOUS and (inner := storage(node.srcs[0])).op in _FRESH:
        return inner
    if op is _CHECK and ((inner := storage(node.srcs[0])).op in _FRESH or inner.realized):
        return inner
    return node


# Read for every node of every realize: an enum's member, looked up on its class, costs a call into Python on 3.11
_RESHAPE, _CONTIGUOUS, _CHECK, _SCALAR, _BUFFER = Op.RESHAPE, Op.CONTIGUOUS, Op.CHECK, Op.SCALAR, Op.BUFFER


def _kept(node: Node, readers: dict[int, list[Node]]) -> Node | None:
    """What to write so that a live tensor's `node` keeps its value (rule 8): the computed op under its
    views (or the view every reader reads a reduction through, as `_written_view`), or the view itself where it
    reads only part of that op's result; None where nothing under it is computed (data and constants
    seen through views cost nothing to read again)."""
    at = storage(node)
    while at.op in MOVEMENT and at.op is not Op.SHRINK:
        at = storage(at.srcs[0])
    if at.op is Op.SHRINK:
        below = at
        while below.op in MOVEMENT:
            below = storage(below.srcs[0])
        return at if below.op in _FRESH else None
    if at.op is Op.REDUCE:
        return _written_view(at, readers) or at
    return at if at.op in _FRESH else None


def _written_view(red: Node, readers: dict[int, list[Node]]) -> Node | None:
    """The one view every reader reads a reduction through, when writing it costs no more than writing the
    reduction: one that only drops or adds axes of size 1 (`x.sum(axis=1)` is a sum with its axes kept,
    then squeezed), which then has its readers' shape and can share their kernel (rule 7), so a loss's mean
    divides by a count it computes itself; or a transpose of a sum of products, which a contraction's
    template writes through the view (a linear layer's weight gradient, read by its update in the
    weight's layout, not across it)."""
    products = red.arg[0] is ReduceOp.SUM and red.srcs[0].op is Op.ALU and red.srcs[0].arg is Alu.MUL
    written, at = None, red
    while len(views := readers.get(id(at), ())) == 1:
        view = views[0]
        if view.realized or not (view.op is Op.RESHAPE and _squeezed(view.shape) == _squeezed(at.shape)
                                 or view.op is Op.PERMUTE and products):
            break
        written = at = view
    return written


class _CachedSchedule:
    """A cached schedule, by position in the graph's nodes (`_walk`): per kernel (kernel, output positions,
    input positions, scalar positions), and the aliases; `programs` holds what `realize.run` compiled for it
    (see `Schedule.programs`), `launchers` how `realize` launches it once it was compiled (by whether kernels
    are checked and the device they run on) and `launcher` the one made or used last."""

    __slots__ = ("aliases", "entries", "launcher", "launchers", "programs")

    def __init__(self, entries: list[tuple[Kernel | Contraction, list[int], list[int], list[int]]],
                 aliases: list[tuple[int, int]]):
        self.entries, self.aliases, self.programs, self.launchers, self.launcher = entries, aliases, {}, {}, None


# structure key -> its plan
_cache: dict[tuple, _CachedSchedule] = {}
# the ranks and dtypes of a graph's buffers and targets and its arithmetic (`_changed_sizes`) -> its buffers' shapes
# when last scheduled, and its nodes' ops and shapes
_shapes_seen: dict[tuple, tuple[tuple, tuple]] = {}


class _Changed(NamedTuple):
    """What changed since a graph was last scheduled (`_changed_sizes`): the sizes, and where the two graphs' nodes
    are alike but for their shapes, each node's axes whose sizes changed (by position), which tell a changed size
    from a constant that equals it by chance (a head's width 16 at a length of 16)."""

    sizes: frozenset[int]
    axes: tuple[frozenset[int], ...] | None = None


def _changed_sizes(structure: list[tuple], key: tuple) -> _Changed:
    """The sizes of this graph's buffers (its inputs) where they differ from those of the last graph scheduled from
    buffers and into targets of the same ranks and dtypes through the same arithmetic: a training step's batch when
    it changes. A kernel new to the process with a loop of such a size compiles generic over it at once
    (`compile_all`'s `changed`): it is new only because the sizes changed (a batch of one leaves out ops and loops
    that a batch of two has; from some size on a product runs the template), and the next size would compile it
    again. Not the whole structure: the graph of a batch of one has fewer reductions and broadcasts. Not the sizes
    0 and 1, whose kernels no other size shares (a loop of one is none)."""
    nodes = tuple((s[0], s[2]) for s in structure)
    buffers = [s for s in structure if len(s) == 4]
    shapeless = (tuple((s[1], len(s[2]), s[3]) for s in buffers),
                 tuple((structure[t][0], structure[t][1], len(structure[t][2])) for t in key[1]),
                 tuple(s[5] for s in structure if s[0] is Op.ALU))
    shapes = _input_shapes(structure)
    if any(0 in shape for shape in shapes):  # an empty array's graph keeps fewer views: not compared, nor kept
        return _Changed(frozenset())
    before = _shapes_seen.pop(shapeless, None)
    _shapes_seen[shapeless] = shapes, nodes  # the latest last: the oldest goes first
    if len(_shapes_seen) > SCHEDULE_CACHE_SIZE:
        del _shapes_seen[next(iter(_shapes_seen))]
    if before is None:
        return _Changed(frozenset())
    sizes = frozenset(n for now, was in zip(shapes, before[0]) for n, m in zip(now, was) if n != m and n > 1)
    if len(nodes) != len(before[1]) or any(op != was_op or len(shape) != len(was_shape)
                                           for (op, shape), (was_op, was_shape) in zip(nodes, before[1])):
        return _Changed(sizes)
    return _Changed(sizes, tuple(frozenset(i for i, (n, m) in enumerate(zip(shape, was_shape)) if n != m and n > 1)
                                 for (_, shape), (_, was_shape) in zip(nodes, before[1])))


def _input_shapes(structure: list[tuple]) -> tuple[tuple[int, ...], ...]:
    """The shapes of a graph's buffers; of one padded and reshaped (a window on a slice's span padded to whole rows,
    `movement._window_view`), the rows': its own size is a span of the sizes of the data it is a window on."""
    shapes = {at: s[2] for at, s in enumerate(structure) if len(s) == 4}
    for s in structure:
        if s[0] is Op.RESHAPE and (pad := structure[s[4][0]])[0] is Op.PAD and pad[4][0] in shapes:
            shapes[pad[4][0]] = s[2]
    return tuple(shapes.values())


def _walk(roots: list[Node]) -> tuple[list[Node], dict[Node, int], list[tuple], list[tuple[Node, str]], list[Node]]:
    """The nodes reachable from `roots`, each after its sources (`toposort`'s order), with their positions; what
    the schedule depends on of each: the node but data and scalar values, with its sources by position; the flags
    of its checks with their messages; and the nodes live tensors hold. One pass, as it runs for every node of
    every realize; depth-first with an explicit stack, as `toposort`. Positions are keyed by the node itself,
    which hashes by identity in C (cheaper than calling `id` for each look-up)."""
    order: list[Node] = []
    pos: dict[Node, int] = {}
    at = pos.__getitem__
    structure: list[tuple] = []
    checks: list[tuple[Node, str]] = []
    live: list[Node] = []
    check, scalar, buffer, weak = _CHECK, _SCALAR, _BUFFER, weakref.ReferenceType  # locals: read for every node
    for root in roots:
        if root in pos:
            continue
        pos[root] = -1  # on the stack: seen, not placed yet
        stack = [(root, iter(root.srcs))]
        while stack:
            node, pending = stack[-1]
            for src in pending:
                if src not in pos:
                    pos[src] = -1
                    stack.append((src, iter(src.srcs)))
                    break
            else:
                stack.pop()
                op = node.op
                if op is buffer:
                    structure.append((op, node.dtype, node.shape, node.device))
                else:
                    srcs = node.srcs
                    structure.append((op, node.dtype, node.shape, node.device,
                                      tuple(map(at, srcs)) if srcs else (), None if op is scalar else node.arg))
                    if op is check and not srcs[1].realized:
                        checks.append((storage(srcs[1]), node.arg))
                    if (held := node.holders) is not None:  # `is_held`, its common case inline
                        if type(held) is not weak:
                            if is_held(node):
                                live.append(node)
                        elif (t := held()) is not None and t._node is node:
                            live.append(node)
                pos[node] = len(order)
                order.append(node)
    return order, pos, structure, checks, live


class Planned:
    """What a realize of `roots` runs, as the scheduler found it: the cached plan, the graph's nodes it refers
    to by position, the nodes it computes on request (see `Schedule.requested`) with where each one's data is
    (`storage`), and the flags of its checks (see `Schedule.checks`). `made` is the schedule where this planning
    made it (a structure not seen before), which `schedule()` then returns rather than build it again."""

    __slots__ = ("checks", "made", "nodes", "plan", "plan_seconds", "requested", "stores")

    def __init__(self, plan: _CachedSchedule | None, nodes: list[Node], requested: list[Node], stores: list[Node],
                 checks: list[tuple[Node, str]], made: Schedule | None):
        self.plan, self.nodes, self.requested, self.stores, self.checks, self.made = \
            plan, nodes, requested, stores, checks, made
        self.plan_seconds = 0.0

    def schedule(self) -> Schedule:
        """The plan as a `Schedule`: its kernels, on these nodes."""
        if (items := self.made) is None:
            nodes, plan = self.nodes, self.plan
            items = Schedule(ScheduleItem(k, [nodes[o] for o in outs], [nodes[i] for i in ins],
                                          [nodes[p] for p in ps]) for k, outs, ins, ps in plan.entries) \
                if plan is not None else Schedule()
            items.aliases = [(nodes[a], nodes[b]) for a, b in plan.aliases] if plan is not None else []
        items.requested, items.checks = self.requested, self.checks
        items.programs = self.plan.programs if self.plan is not None else {}
        items.plan_seconds = self.plan_seconds
        return items

    @property
    def lower_seconds(self) -> float:
        """What building the kernel IR cost (nothing where the structure was scheduled before)."""
        return self.made.lower_seconds if self.made is not None else 0.0


def plan(*roots: Node, trace: Trace | None = None) -> Planned:
    """The plan that computes `roots`, and the pending state (`realize_with_next`), from realized buffers:
    made, or where the graph's structure was scheduled before, looked up. With a `trace`, made afresh (not
    looked up nor kept) and traced there."""
    t0 = time.perf_counter()
    requested = _with_pending(roots) if _pending.tensors else list(roots)
    if not requested:
        return Planned(None, [], requested, [], [], None)
    if trace is None and (templates := _templates.get(_root_key(requested))) is not None:
        for template in templates:
            if (planned := template.match(requested)) is not None:
                planned.plan_seconds = time.perf_counter() - t0
                return planned
    targets = [storage(r) for r in requested]
    # the requested too: a check whose value is its storage
    nodes, pos, structure, checks, live = _walk([*targets, *requested])
    stores = targets[:]
    if checks:
        targets += [flag for flag, _ in checks]
    key = (tuple(structure), tuple(map(pos.__getitem__, targets)), tuple(map(pos.__getitem__, live)))
    made = None
    if trace is not None:
        asked = set(map(id, roots))
        for r, t in zip(requested, targets):
            trace.reasons.setdefault(t, Reason.REQUESTED if id(r) in asked else Reason.PENDING)
        for flag, _ in checks:
            trace.reasons.setdefault(flag, Reason.CHECK)
        made, cached = _schedule(nodes, targets, live, trace), None
    else:
        if (cached := _cache.get(key)) is None:
            changed = _changed_sizes(structure, key)
            made = _schedule(nodes, targets, live, changed=changed.sizes,
                             varying=dict(zip(nodes, changed.axes)) if changed.axes is not None else None)
            cached = _cache[key] = _CachedSchedule(
                [(it.kernel, [pos[n] for n in it.outputs], [pos[n] for n in it.inputs], [pos[n] for n in it.scalars])
                 for it in made], [(pos[a], pos[b]) for a, b in made.aliases])
            if len(_cache) > SCHEDULE_CACHE_SIZE:  # the oldest goes: a loop's schedules are re-made once if at all
                del _cache[next(iter(_cache))]
        _remember(_Template(structure, tuple(map(pos.__getitem__, requested)), key[1][:len(requested)], key[2],
                            [(pos[flag], message) for flag, message in checks], cached), requested)
    planned = Planned(cached, nodes, requested, stores, checks, made)
    planned.plan_seconds = time.perf_counter() - t0 - planned.lower_seconds
    return planned


class _Template:
    """A graph a cached plan computes, from the nodes a realize asked for (with the pending state): each node in
    `_walk`'s order with what its structure holds of it (op, dtype, shape, device, its sources' positions, and its
    arg unless it is a scalar's value), the positions of the nodes asked for, of their storage, and of the nodes
    live tensors held (last first), and the flags of its checks with their messages. Another graph is checked
    against it node by node, from the nodes asked for down along the sources (each node is a source of one checked
    before it, or asked for), which finds that graph's nodes in the plan's order without a walk, nor a key of the
    whole structure to hash and compare: the look-up of the realizes of a loop, and of a training step's.

    `match` is that check; a template that matched COMPILE_AFTER_MATCHES times, of a graph of at most
    COMPILED_MAX_NODES nodes, then checks through Python written out for its structure (`_matcher`), which does
    the walk's bookkeeping once: it runs in half the time or less, but compiling it costs about as many of the
    walk's checks as COMPILE_AFTER_MATCHES (a millisecond for a graph of five nodes, 50 ms for a training step's
    485, 370 ms for 1510: 190 and 330 walks), so only a structure realized that often (an eager loop's, a
    training loop's) pays for it, and pays at most about twice what it saves."""

    __slots__ = ("checks", "entries", "live", "match", "matches", "plan", "requested", "stores")

    def __init__(self, structure: list[tuple], requested: tuple[int, ...], stores: tuple[int, ...],
                 live: tuple[int, ...], checks: list[tuple[int, str]], plan: _CachedSchedule):
        # (position, op, dtype, shape, device, sources' positions, arg, whether the arg is compared), the last first
        self.entries = [(k, s[0], s[1], s[2], s[3], s[4], s[5], s[0] is not _SCALAR) if len(s) == 6
                        else (k, *s, (), None, False) for k, s in reversed(list(enumerate(structure)))]
        self.requested, self.stores, self.live, self.checks, self.plan = \
            requested, stores, list(reversed(live)), checks, plan
        self.match: Callable[[list[Node]], Planned | None] = self.walk
        self.matches = 0

    def walk(self, requested: list[Node]) -> Planned | None:
        """The plan on `requested`'s graph where it has this structure (the same nodes but data and scalar values,
        connected alike, none shared that is not here, the same nodes held by live tensors), else None."""
        found: list[Any] = [None] * len(self.entries)
        if one := len(requested) == 1:  # an eager loop's realize
            found[self.requested[0]] = requested[0]
        else:
            for node, at in zip(requested, self.requested):
                if (seen := found[at]) is None:
                    found[at] = node
                elif seen is not node:
                    return None
        live = []
        buffer, weak = _BUFFER, weakref.ReferenceType
        for at, op, dtype, shape, device, srcs_at, arg, has_arg in self.entries:
            node = found[at]  # placed by a reader before, or asked for
            if node.op is not op or node.dtype is not dtype or node.shape != shape or node.device != device:
                return None
            if op is buffer:
                continue
            srcs = node.srcs
            # an arg compared as the structure key compares it: the same object, or equal (a NaN is itself)
            if len(srcs) != len(srcs_at) or has_arg and (same := node.arg) is not arg and same != arg:
                return None
            for src, src_at in zip(srcs, srcs_at):
                if (seen := found[src_at]) is None:
                    found[src_at] = src
                elif seen is not src:
                    return None
            if (held := node.holders) is not None:  # `is_held`, its common case inline
                if type(held) is not weak:
                    if is_held(node):
                        live.append(at)
                elif (t := held()) is not None and t._node is node:
                    live.append(at)
        if live != self.live or len(set(found)) != len(found):
            return None
        self.matches += 1
        if self.matches >= COMPILE_AFTER_MATCHES and len(found) <= COMPILED_MAX_NODES:
            self.match = _matcher(self)
        # the storage of a node and a check's flag are the structure's: where it matches, they are at its places
        return Planned(self.plan, found, requested, [found[self.stores[0]]] if one else [found[at] for at in self.stores],
                       [(found[at], message) for at, message in self.checks] if self.checks else [], None)


COMPILE_AFTER_MATCHES = 256
# Python's compiler takes time about linear in the lines written (measured to 4000 nodes; past that, unmeasured), and
# the code kept is about 2 KiB a node (3 MiB for 1510; 70 MiB at its peak while compiling)
COMPILED_MAX_NODES = 4096


def _matcher(template: _Template) -> Callable[[list[Node]], Planned | None]:
    """`template.walk` written out for its structure, as Python source with one statement per check and the graph's
    nodes in locals (`n<position>`): which position a node is found at first, and so which sources are new and
    which must be nodes found before, and which nodes live tensors hold, depend on the structure only."""
    consts: dict[str, Any] = {"Planned": Planned, "PLAN": template.plan, "is_held": is_held,
                              "weak": weakref.ReferenceType}
    code = ["def match(requested):"]
    found: set[int] = set()

    def place(node: str, at: int) -> None:
        if at in found:  # a second way to it: the same node, else the graph shares what this one does not
            code.append(f"    if {node} is not n{at}: return None")
        else:
            found.add(at)
            code.append(f"    n{at} = {node}")

    for k, at in enumerate(template.requested):
        place(f"requested[{k}]", at)
    live = set(template.live)
    for at, op, dtype, shape, device, srcs_at, arg, has_arg in template.entries:
        n = f"n{at}"
        consts.update({f"O{at}": op, f"D{at}": dtype, f"S{at}": shape, f"V{at}": device})
        code.append(f"    if {n}.op is not O{at} or {n}.dtype is not D{at} or {n}.shape != S{at} "
                    f"or {n}.device != V{at}: return None")
        if op is _BUFFER:
            continue
        code.append(f"    s = {n}.srcs")
        code.append(f"    if len(s) != {len(srcs_at)}: return None")
        if has_arg:
            consts[f"A{at}"] = arg
            code.append(f"    if (a := {n}.arg) is not A{at} and a != A{at}: return None")
        for k, src_at in enumerate(srcs_at):
            place(f"s[{k}]", src_at)
        held = f"((t := h()) is not None and t._node is {n} if type(h) is weak else is_held({n}))"  # `is_held` inline
        code.append(f"    h = {n}.holders")
        code.append(f"    if h is None or not {held}: return None" if at in live else
                    f"    if h is not None and {held}: return None")
    # The graph's nodes are distinct where the template's are: two places hold different nodes where their ops,
    # dtypes, shapes, devices or numbers of sources differ, or where a source of one is at another place than
    # the same source of the other (places of sources come first: by induction, different nodes). Only the
    # places alike in all of that (leaves alike: buffers, scalars) are compared.
    alike: dict[tuple, list[int]] = {}
    for at, op, dtype, shape, device, srcs_at, _, _ in template.entries:
        alike.setdefault((op, dtype, shape, device, srcs_at), []).append(at)
    for places in alike.values():
        if len(places) == 2:
            code.append(f"    if n{places[0]} is n{places[1]}: return None")
        elif len(places) > 2:
            code.append(f"    if len({{{', '.join(f'n{at}' for at in places)}}}) != {len(places)}: return None")
    nodes = ", ".join(f"n{at}" for at in range(len(template.entries)))
    for k, (_, message) in enumerate(template.checks):
        consts[f"M{k}"] = message
    flags = ", ".join(f"(n{at}, M{k})" for k, (at, _) in enumerate(template.checks))
    stores = ", ".join(f"n{at}" for at in template.stores)
    code.append(f"    return Planned(PLAN, [{nodes}], requested, [{stores}], [{flags}], None)")
    # the source holds positions and names only: every value it compares with is a constant passed in `consts`
    exec("\n".join(code), consts)  # noqa: S102
    return consts["match"]


# the first node a realize asks for (`_root_key`) -> the templates of the plans of such realizes (`_Template`),
# the latest first
_templates: dict[tuple, list[_Template]] = {}
TEMPLATES_PER_ROOT = 4


def _root_key(requested: list[Node]) -> tuple:
    """What the templates of a realize of `requested` are filed under: how many nodes it asks for, and the first
    one's op, shape and arg (not a scalar's value)."""
    root = requested[0]
    op = root.op
    return len(requested), op, root.shape, None if op is _SCALAR else root.arg


def _remember(template: _Template, requested: list[Node]) -> None:
    """File `template` first under `requested`'s key, the oldest of that key's going past TEMPLATES_PER_ROOT, and
    the oldest key's going where they would keep more plans than the schedule cache does. The list is replaced,
    never changed in place."""
    key = _root_key(requested)
    _templates[key] = [template, *_templates.pop(key, ())[:TEMPLATES_PER_ROOT - 1]]
    if len(_templates) > SCHEDULE_CACHE_SIZE // TEMPLATES_PER_ROOT:
        del _templates[next(iter(_templates))]


def schedule(*roots: Node, trace: Trace | None = None) -> Schedule:
    """The kernels that compute `roots`, and the pending state (`realize_with_next`), from realized
    buffers, producers first. With a `trace`, planned afresh (not looked up) and traced there."""
    return plan(*roots, trace=trace).schedule()


@dataclass
class Trace:
    """What planning a schedule decided beyond its kernels, for `lazytensor.explain`: why each realize point is
    one (`reasons`, which the caller may fill first for the targets it knows more of), each kernel's plan
    (`regions`: what it reads and computes), and the groups of rule 7 that lowering split again, since one
    kernel of them would compute a reduction more than once (`split`)."""

    reasons: dict[Node, Reason] = field(default_factory=dict)
    points: set[Node] = field(default_factory=set)
    regions: dict[Node, _Region] = field(default_factory=dict)
    split: list[list[Node]] = field(default_factory=list)


def _schedule(nodes: list[Node], targets: list[Node], live: list[Node], trace: Trace | None = None,
              changed: frozenset[int] = frozenset(), varying: dict[Node, frozenset[int]] | None = None) -> Schedule:
    reasons = trace.reasons if trace is not None else {}
    readers: dict[int, list[Node]] = {}
    for n in nodes:
        for s in n.srcs:
            readers.setdefault(id(s), []).append(n)
    barriers = {storage(n) for n in nodes if n.op is Op.CONTIGUOUS}  # the nodes `contiguous()` realizes
    own = {n for n in nodes if n.op in _OWN_KERNEL and not n.realized}
    own |= {storage(s) for n in own if n.op in _FROM_BUFFER for s in n.srcs}
    requested = set(targets)  # written as themselves
    kept: set[Node] = set()
    aliases = []
    for n in live:
        copy = next((r for r in readers.get(id(n), ()) if r.op is Op.CONTIGUOUS and storage(r) is r), None)
        if copy is not None:  # its `contiguous()` copy holds its data, row-major
            aliases.append((n, copy))
        elif (at := storage(n)) not in requested and at not in barriers and (k := _kept(n, readers)) is not None:
            kept.add(k)  # (a node whose buffer is written anyway, as requested or as a `contiguous()`, is kept)
    for n in targets:
        reasons.setdefault(n, Reason.REQUESTED)
    for reason, chosen in ((Reason.CONTIGUOUS, barriers), (Reason.LIVE, kept), (Reason.OWN_KERNEL, own)):
        for n in chosen:
            reasons.setdefault(n, reason)
    points, costs = _realize_points(nodes, targets, barriers | kept | own, reasons)
    plan = _Planner(nodes, points, readers, costs, reasons, changed, varying).plan()
    groups = _groups(plan.order, plan.regions, barriers)
    t0 = time.perf_counter()
    items = Schedule()
    for group in groups:
        # the group's own points are its roots, which lowering computes rather than loads
        merged = lower(group, points) if len(group) > 1 else None
        if merged is None or _waste(merged):
            if trace is not None and len(group) > 1:
                trace.split.append(group)
            for n in group:
                contraction = plan.regions[n].contraction
                lk = lower([n], points, contraction,
                           get_device(n.device).contraction_dtypes[contraction[0].dtype] if contraction else None)
                items.append(ScheduleItem(lk.kernel, [n], lk.inputs, lk.scalars))
        else:
            items.append(ScheduleItem(merged.kernel, group, merged.inputs, merged.scalars))
    items.lower_seconds = time.perf_counter() - t0
    items.aliases, items.changed = aliases, changed
    if trace is not None:
        trace.points, trace.regions = points, plan.regions
    return items


@dataclass
class _Costs:
    """What each node (by id) costs the kernel that computes it, as its readers see it: the ops, the loads
    and the most elements of one buffer it loads (0, 1 and its size for a buffer or a point; a reduction
    counted as a buffer for the loads, since several kernels that read it get it from one)."""

    ops: dict[int, int]
    loads: dict[int, int]
    widest: dict[int, int]


def _realize_points(nodes: list[Node], roots: list[Node], extra: set[Node], reasons: dict[Node, Reason]) \
        -> tuple[set[Node], _Costs]:
    """The outputs, `extra`, and the nodes where a region would pass MAX_FUSED_OPS ops (rule 6, entered in
    `reasons`), and the costs of the others. Where the region of a broadcast passes it (a contraction's product, larger than
    its operands), its operands are realized rather than the broadcast."""
    points = {r for r in roots if not r.realized} | extra
    costs = _Costs({}, {}, {})
    ops, loads, widest = costs.ops, costs.loads, costs.widest
    known: dict[int, dict[int, int]] = {}  # regions counted node by node (see `_region_size`)
    for n in nodes:
        if n.realized:
            ops[id(n)], loads[id(n)], widest[id(n)] = 0, 1, n.numel
            continue
        c = _cost(n) + sum(ops[id(s)] for s in n.srcs)
        if c > MAX_FUSED_OPS:  # the sum counts a node shared by two paths twice: count the region's nodes
            c = _region_size(n, points, MAX_FUSED_OPS + 1, known)
        wide = max((widest[id(s)] for s in n.srcs), default=0)
        if c > MAX_FUSED_OPS and n.numel > wide:
            for s in n.srcs:
                while s.op in MOVEMENT:
                    s = s.srcs[0]
                if not s.realized and s not in points:
                    points.add(s)
                    reasons.setdefault(s, Reason.REGION_CAP)
                    ops[id(s)], loads[id(s)], widest[id(s)] = 0, 1, s.numel
            c = _region_size(n, points, MAX_FUSED_OPS + 1, known)
        if c > MAX_FUSED_OPS:
            points.add(n)
            reasons.setdefault(n, Reason.REGION_CAP)
        if n in points:
            ops[id(n)], loads[id(n)], widest[id(n)] = 0, 1, n.numel
        else:
            ops[id(n)] = c
            loads[id(n)] = 1 if n.op is Op.REDUCE else sum(loads[id(s)] for s in n.srcs)
            widest[id(n)] = n.numel if n.op is Op.REDUCE else wide
    return points, costs


def _region_size(root: Node, points: set[Node], limit: int, known: dict[int, dict[int, int]]) -> int:
    """The ops `root`'s kernel would compute, each distinct node once (counted up to `limit`): a DAG with
    much sharing is small even where the paths through it are many. `known` holds the regions counted
    before (each node's ops by id): a walk takes theirs whole instead of walking them again, and leaves its
    own there when it counts all of it."""
    ops: dict[int, int] = {id(root): _cost(root)}
    stack = [root]
    while stack:
        for src in stack.pop().srcs:
            if id(src) in ops or src.op is Op.BUFFER or src in points:
                continue
            if (region := known.get(id(src))) is not None:
                ops.update(region)
            else:
                ops[id(src)] = _cost(src)
                stack.append(src)
        if len(ops) >= limit and sum(ops.values()) >= limit:
            return limit
    size = sum(ops.values())
    if size < limit:
        known[id(root)] = ops
    return size


def _cost(node: Node) -> int:
    """The ops a node adds to a kernel: one, or the rounds of a random number generator."""
    return PHILOX_OPS if node.op is Op.PHILOX else 1


# ---- the plan: one walk from the outputs down -----------------------------------------------------


class _Nest:
    """A loop nest of a kernel being planned: its loops, outermost first, and for every loop variable
    (those of the reductions placed in it too) the path of loops from the outermost down to its own."""

    __slots__ = ("loops", "path")

    def __init__(self, loops: tuple[Var, ...]):
        self.loops = loops
        self.path: dict[Var, tuple[Var, ...]] = {v: loops[:d + 1] for d, v in enumerate(loops)}


class _Region:
    """A kernel being planned: the point it computes, the contraction it hands to the backend's template
    (with its axes), what it reads (buffers and other points, by id), and what of that, and of the ops it
    computes, has more than one element (by id: what rule 7 groups kernels by)."""

    __slots__ = ("contraction", "n_data_vars", "n_reduce_vars", "reads", "root", "shared")

    def __init__(self, root: Node):
        self.root = root
        self.contraction: tuple[Node, Axes] | None = None
        self.reads: set[int] = set()
        self.shared: set[int] = set()
        self.n_reduce_vars = 0
        self.n_data_vars = 0

    def read(self, node: Node) -> None:
        self.reads.add(id(node))
        if node.numel > 1:
            self.shared.add(id(node))


# A node's uses: per kernel that computes it, each index it is read at (and its valid bounds), with the
# loop nest that reads it there.
Uses = dict[_Region, dict[tuple[tuple[Expr, ...], Bounds], _Nest]]


@dataclass
class _Plan:
    order: list[Node]                # the points, producers first
    regions: dict[Node, _Region]     # the kernel of each point


class _Planner:
    """Decides the realize points and each kernel's contraction (rules 1, 5 and the placement analysis of
    `kernels.ir.loop_scopes`), in one walk over the nodes, consumers first.

    When a node's turn comes, every kernel that reads it has passed it its index. A reduction stays in the
    kernel that reads it only if one kernel reads it, at one index, and the loop the kernel computes it in
    runs once per element of the result: that loop is the innermost among the variables its value reads
    (the variables of its index along the axes it depends on, `_dependencies`), and every loop around it
    must be one of those variables, of size above one, with no more iterations in all than the reduction
    has elements. Otherwise the reduction (or the view its readers read it through, `_written_view`) becomes
    a point of its own."""

    def __init__(self, nodes: list[Node], points: set[Node], readers: dict[int, list[Node]], costs: _Costs,
                 reasons: dict[Node, Reason], changed: frozenset[int], varying: dict[Node, frozenset[int]] | None):
        self.nodes = nodes
        self.changed = changed  # the sizes that changed since the graph was last scheduled (`_changed_sizes`)
        self.varying = varying  # each node's axes whose sizes changed, where that is known (`_Changed.axes`)
        self.points = points
        self.reasons = reasons  # why each point the plan adds is one
        self.readers = readers
        self.costs = costs
        self.deps = _dependencies(nodes)
        self.uses: dict[int, Uses] = {}
        self.regions: dict[Node, _Region] = {}
        self.view_regions: dict[int, list[_Region]] = {}  # the kernels that read a reshape or permute, as planned

    def plan(self) -> _Plan:
        for node in reversed(self.nodes):
            if node.realized:
                continue
            uses = self.uses.pop(id(node), {})
            if not uses and node not in self.points:  # read only where a padding never reads it
                continue
            if node.op is Op.REDUCE and node not in self.points:
                uses = self.settle_reduction(node, uses)
            elif node.op in _COMPUTED and node not in self.points and (why := self.worth_writing(node, uses)):
                self.add_point(node, why)
            if node in self.points:
                for r in uses:
                    r.read(node)
                uses = self.own_region(node)
            if node.op is Op.RESHAPE or node.op is Op.PERMUTE:
                self.view_regions[id(node)] = list(uses)
            self.pass_down(node, uses)
        order = [n for n in self.nodes if n in self.regions]
        return _Plan(order, self.regions)

    def add_point(self, node: Node, why: Reason) -> None:
        self.points.add(node)
        self.reasons.setdefault(node, why)

    def own_region(self, node: Node) -> Uses:
        """Start `node`'s kernel: its output loops, reading it at their index."""
        region = self.regions[node] = _Region(node)
        loops = tuple(Var(f"o{d}", n) for d, n in enumerate(node.shape)) or (Var("o0", 1),)
        idx = tuple(Expr.of(v) for v in loops) if node.shape else ()
        if node.op is Op.REDUCE:
            region.contraction = self.contraction(node)
        return {region: {(idx, ()): _Nest(loops)}}

    def settle_reduction(self, node: Node, uses: Uses) -> Uses:
        """The uses of a reduction that stays fused; else make it (or the view its readers read it through,
        whose kernel then computes it) a point."""
        if (why := self.wasteful(node, uses)) is None:
            return uses
        view = self.read_as(node)
        if view is node:
            self.add_point(node, why)
            return uses
        self.add_point(view, why)
        for r in self.view_regions.pop(id(view)):
            r.read(view)
        at, uses = view, self.own_region(view)
        while at is not node:  # down the views, planned again from the view's own kernel
            self.pass_down(at, uses)
            at = at.srcs[0]
            uses = self.uses.pop(id(at))
        if (why := self.wasteful(node, uses)) is not None:
            self.add_point(node, why)
        return uses

    def wasteful(self, node: Node, uses: Uses) -> Reason | None:
        """Why fusing the reduction would compute it more than once per result, if it would (claiming the
        kernel's contraction template for it where it is a contraction)."""
        if len(uses) != 1:
            return Reason.SHARED_REDUCTION
        ((region, keys),) = uses.items()
        if len(keys) != 1:
            return Reason.SHARED_REDUCTION
        (((idx, bounds), nest),) = keys.items()
        if (axes := self.contraction_axes(node)) is not None:
            if region.contraction is not None:  # one template per kernel (rule 5)
                return Reason.CONTRACTION
            if region.root.op in _OWN_KERNEL:  # a scatter's loop nests have no template: its product comes written
                return Reason.OWN_KERNEL
            region.contraction = (node, axes)
            return None
        free, scope = self.scope(node, idx, bounds, nest)
        if any(v.size > 1 and v not in free for v in scope) or prod(v.size for v in scope) > node.numel:
            return Reason.RECOMPUTED_REDUCTION
        return None

    def worth_writing(self, node: Node, uses: Uses) -> Reason | None:
        """Why an elementwise node costs less written once than recomputed by its readers (rules 4, 9), if it
        does."""
        costs = self.costs
        if node.numel > costs.widest[id(node)]:  # a broadcast: larger written than what it reads
            return None
        if len(uses) > 1 and costs.loads[id(node)] >= MIN_SHARED_LOADS:
            return Reason.SHARED_LOADS
        if costs.ops[id(node)] >= MIN_RECOMPUTED_OPS and self.recomputed(node, uses):
            return Reason.RECOMPUTED
        return None

    def recomputed(self, node: Node, uses: Uses) -> bool:
        """Whether a kernel would compute an elementwise node again and again for a loop it does not depend
        on: read inside a reduction's loop through a broadcast (rule 9)."""
        for keys in uses.values():
            for (idx, bounds), nest in keys.items():
                free, scope = self.scope(node, idx, bounds, nest)
                if any(v.size > 1 and v not in free for v in scope):
                    return True
        return False

    def read_as(self, red: Node) -> Node:
        """The node to realize for a reduction that must be written: the reduction itself, or the view its
        readers read it through (`_written_view`) where that was planned as fused."""
        view = _written_view(red, self.readers)
        return view if view is not None and view not in self.points and id(view) in self.view_regions else red

    def contraction_axes(self, node: Node) -> Axes | None:
        """The axes of a contraction for the backend's template, if `node` is one (rule 5)."""
        if node.arg[0] is not ReduceOp.SUM or node.dtype not in get_device(node.device).contraction_dtypes:
            return None
        product = node.srcs[0]
        if product.op is not Op.ALU or product.arg is not Alu.MUL or product.realized or product in self.points:
            return None
        return contraction_axes(node, [self.deps[id(s)] if s not in self.points else _all_axes(s)
                                       for s in product.srcs], self.changed,
                                 self.varying.get(product) if self.varying is not None else None)

    def contraction(self, node: Node) -> tuple[Node, Axes] | None:
        axes = self.contraction_axes(node)
        return None if axes is None else (node, axes)

    def scope(self, node: Node, idx: tuple[Expr, ...], bounds: Bounds, nest: _Nest) \
            -> tuple[set[Var], tuple[Var, ...]]:
        """The loop variables `node`'s value reads at `idx`, and the loops it is computed in: the path to the
        innermost of them (`kernels.ir.loop_scopes`)."""
        free: set[Var] = set()
        for axis in self.deps[id(node)]:
            free |= idx[axis].vars()
        for b in bounds:
            free |= b.expr.vars()
        return free, max((nest.path[v] for v in free), key=len, default=())

    def data_var(self, region: _Region, index: Node, idx: tuple[Expr, ...], bounds: Bounds, nest: _Nest,
                 size: int) -> Var:
        """A variable standing for `index`'s value at `idx`, placed in the loops that value is computed in."""
        var = Var(f"g{region.n_data_vars}", size)
        region.n_data_vars += 1
        nest.path[var] = self.scope(index, idx, bounds, nest)[1]
        return var

    def pass_down(self, node: Node, uses: Uses) -> None:
        """Hand `node`'s sources the indexes its kernels read them at."""
        shared = node.op in _COMPUTED and node.numel > 1
        for region, keys in uses.items():
            if shared:
                region.shared.add(id(node))
            for (idx, bounds), nest in keys.items():
                for src, src_idx, src_bounds, src_nest in self.sources(node, region, idx, bounds, nest):
                    if src.realized:
                        region.read(src)
                    else:
                        self.uses.setdefault(id(src), {}).setdefault(region, {}).setdefault(
                            (src_idx, src_bounds), src_nest)

    def sources(self, node: Node, region: _Region, idx: tuple[Expr, ...], bounds: Bounds, nest: _Nest) \
            -> list[tuple[Node, tuple[Expr, ...], Bounds, _Nest]]:
        """What `node`'s value at `idx` reads, as lowering reads it (`lazytensor.lowering`)."""
        op = node.op
        if op in (Op.ALU, Op.CAST, Op.BITCAST, Op.CONTIGUOUS, Op.PHILOX):
            return [(s, idx, bounds, nest) for s in node.srcs]
        if op is Op.CHECK:  # the value; the flag is a requested output of the schedule
            return [(node.srcs[0], idx, bounds, nest)]
        if op is Op.GATHER:  # the index, and the source at a variable standing for it (`lowering.plan_gather`)
            src, index = node.srcs
            var = self.data_var(region, index, idx, bounds, nest, src.shape[node.arg])
            return [(index, idx, bounds, nest), (src, (*idx[:node.arg], Expr.of(var), *idx[node.arg + 1:]), bounds, nest)]
        if op in _FROM_BUFFER:  # each source, from its buffer, whole (a library call's shape is not its sources')
            return [(s, *_whole(s)) for s in node.srcs]
        if op is Op.SCATTER:  # the base over the output's loops; index and updates over their own
            base, index, updates = node.srcs
            spots = tuple(Var(f"u{d}", n) for d, n in enumerate(index.shape)) or (Var("u0", 1),)
            at, spot_nest = tuple(Expr.of(v) for v in spots) if index.shape else (), _Nest(spots)
            return [(base, idx, bounds, nest), (index, at, (), spot_nest), (updates, at, (), spot_nest)]
        if op in MOVEMENT:
            read = movement_source(node, idx, bounds)
            return [] if read is None else [(*read[0], nest)]
        if op is not Op.REDUCE:
            return []
        if region.contraction is not None and region.contraction[0] is node:
            axes = region.contraction[1]
            shape = node.srcs[0].shape
            vb, vm, vn, vk = (Var(name, size) for name, size in zip(("cb", "cm", "cn", "ck"), axes.sizes(shape)))
            # Each operand is evaluated as the template packs it (`kernels/llvm/gemm.py`, the Triton kernel's
            # tiles): k outside its rows or columns, so a reduction along a row of A (a softmax's max and
            # sum) would be computed again for every k, and is written instead (rules 1, 9).
            return [(axes.a, axes.operand_index(shape, vb, vm, None, vk), (), _Nest((vb, vk, vm))),
                    (axes.b, axes.operand_index(shape, vb, None, vn, vk), (), _Nest((vb, vk, vn)))]
        ranges = reduce_vars(node, region.n_reduce_vars)
        region.n_reduce_vars += len(ranges)
        _, scope = self.scope(node, idx, bounds, nest)
        for k, var in enumerate(ranges):
            nest.path[var] = scope + ranges[:k + 1]
        return [(*reduce_source(node, idx, bounds, ranges), nest)]


def _whole(node: Node) -> tuple[tuple[Expr, ...], Bounds, _Nest]:
    """`node` read whole, by a loop nest over its own shape."""
    loops = tuple(Var(f"s{d}", n) for d, n in enumerate(node.shape)) or (Var("s0", 1),)
    return tuple(Expr.of(v) for v in loops) if node.shape else (), (), _Nest(loops)


def _all_axes(node: Node) -> frozenset[int]:
    """The axes a buffer's value depends on, as its loads read it: every axis longer than 1."""
    return frozenset(i for i, n in enumerate(node.shape) if n > 1)


_canonical_vars: dict[tuple[int, int], Var] = {}


def _dependencies(nodes: list[Node]) -> dict[int, frozenset[int]]:
    """For each node (by id) the axes of its shape that its value depends on: a broadcast does not depend
    on the axes it expands, a reduction on the axes it reduces, a constant on none. Movement ops map them
    through the same index maps lowering uses, so a reshape that splits an axis depends on every part."""
    deps: dict[int, frozenset[int]] = {}
    for n in nodes:
        op = n.op
        if op is Op.BUFFER:
            deps[id(n)] = _all_axes(n)
        elif op is Op.SCALAR or op is Op.CONST:
            deps[id(n)] = frozenset()
        elif op is Op.IOTA:
            deps[id(n)] = _all_axes(n)
        elif op is Op.REDUCE:
            deps[id(n)] = deps[id(n.srcs[0])] - frozenset(n.arg[1])
        elif op is Op.GATHER:  # the index's axes, and the source's but the gathered one, which the index sets
            src, index = n.srcs
            deps[id(n)] = deps[id(index)] | (deps[id(src)] - {n.arg})
        elif op in _OWN_KERNEL:
            deps[id(n)] = _all_axes(n)
        elif op in MOVEMENT:
            axes = [_canonical_vars.setdefault((d, size), Var(f"d{d}", size)) for d, size in enumerate(n.shape)]
            src = n.srcs[0]
            src_idx, bounds = source_index(op, n.arg, src.shape, tuple(map(Expr.of, axes)))
            read: set[Var] = set()
            for j in deps[id(src)]:
                read |= src_idx[j].vars()
            for b in bounds:
                read |= b.expr.vars()
            deps[id(n)] = frozenset(d for d, v in enumerate(axes) if v in read)
        else:
            deps[id(n)] = frozenset().union(*(deps[id(s)] for s in n.srcs))
    return deps


def _squeezed(shape: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(n for n in shape if n != 1)


def _waste(lk: LoweredKernel) -> set[Node]:
    """Reductions a kernel computes more often than once per result: recomputed inside its loops (also
    where the loops read each result several times through a many-to-one index, as the elements of a
    window read its max-pool's tie count), or computed twice (read at two different indices). The plan
    rules these out kernel by kernel; a kernel of several outputs (rule 7) is checked once built."""
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
    return out


def _groups(order: list[Node], regions: dict[Node, _Region], barriers: set[Node]) -> list[list[Node]]:
    """The realize points in kernel order, grouped into multi-output kernels (rule 7). A point that
    `contiguous()` realizes (in `barriers`) is an explicit fusion barrier: it may share a kernel with
    points computed beside it, never with one that reads it. Contractions keep their template's kernel.
    Each point joins the latest group of its shape it may join: one that overlaps it, within MAX_FUSED_OPS,
    and that none of the point's inputs depends on (else that kernel would run both before and after them).
    It gives up after MAX_UPSTREAM_GROUPS groups that overlap it but feed its inputs: in a deep graph (a loop
    unrolled over many steps, each reading the same data) every earlier step's groups do, and looking through
    all of them for every point would make grouping quadratic in the depth. Giving up only leaves the point a
    kernel of its own, so the groups stay acyclic."""
    reads = {p: regions[p].reads for p in order}
    shared = {p: regions[p].shared for p in order}
    barrier_ids = {id(b) for b in barriers}
    group_of: dict[Node, int] = {}
    point_group: dict[int, int] = {}  # id(point) -> its group
    groups: list[list[Node]] = []
    dag = _GroupDag()
    kinds: list[tuple | None] = []  # per group, (shape, device) where it is a plain kernel's, else None
    footprints: list[set[int]] = []  # per group, the nodes of more than one element it reads and computes
    # (shape, device) -> node id -> the plain groups of that shape whose footprint holds the node, in order:
    # a point looks only at the groups it overlaps, not at every group of its shape
    holders: dict[tuple, dict[int, list[int]]] = {}
    for p in order:
        read_groups = {point_group[r] for r in reads[p] if r in point_group}
        fenced = {point_group[r] for r in reads[p] if r in barrier_ids and r in point_group}
        placed = None
        kind = (p.shape, p.device) if regions[p].contraction is None and p.op not in _OWN_KERNEL else None
        if kind is not None:
            held = holders.setdefault(kind, {})
            overlapping = [held[s] for s in shared[p] if s in held]
            overlapping.append(sorted(g for g in read_groups if kinds[g] == kind))
            upstream = None  # the groups p's inputs depend on, searched as far as the candidates need
            passed = 0  # candidates passed over since p's inputs depend on them
            for g in _latest_first(overlapping):
                footprint = footprints[g]
                if g in fenced or len(footprint) + len(shared[p] - footprint) > MAX_FUSED_OPS:
                    continue
                if upstream is None:
                    upstream = _Upstream(dag, read_groups)
                if not upstream.reaches(g):
                    placed = g
                    break
                passed += 1
                if passed == MAX_UPSTREAM_GROUPS:
                    break
        if placed is None:
            placed = dag.add()
            groups.append([])
            footprints.append(set())
            kinds.append(kind)
        groups[placed].append(p)
        if kind is not None:
            for s in shared[p] - footprints[placed]:
                bisect.insort(held.setdefault(s, []), placed)
        footprints[placed] |= shared[p]
        group_of[p] = point_group[id(p)] = placed
        dag.read(placed, read_groups - {placed})
    return [groups[g] for g in _group_order(order, reads, group_of, len(groups))]


def _latest_first(groups: list[list[int]]) -> Iterator[int]:
    """The groups of these lists (each in ascending order), each once, the latest first."""
    last = None
    for g in heapq.merge(*map(reversed, groups), reverse=True):
        if g != last:
            yield g
            last = g


class _GroupDag:
    """The groups of `_groups` so far, each with the groups whose outputs it reads (`before`), the groups that read
    its own (`after`), and a level above the level of every group it reads, kept so as groups take on new
    inputs: a path down to a group passes only through groups of higher levels, so a search for it stops there."""

    __slots__ = ("after", "before", "level")

    def __init__(self) -> None:
        self.before: list[set[int]] = []
        self.after: list[set[int]] = []
        self.level: list[int] = []

    def add(self) -> int:
        """A new group, reading nothing yet."""
        self.before.append(set())
        self.after.append(set())
        self.level.append(0)
        return len(self.level) - 1

    def read(self, g: int, inputs: set[int]) -> None:
        """Group `g` reads the outputs of `inputs` (none of which depends on `g`): it, and the groups that read it,
        rise above them where they are not."""
        level, after = self.level, self.after
        self.before[g] |= inputs
        for h in inputs:
            after[h].add(g)
        top = max((level[h] for h in inputs), default=-1)
        if top < level[g]:
            return
        level[g] = top + 1
        stack = [g]
        while stack:
            h = stack.pop()
            for k in after[h]:
                if level[k] <= level[h]:
                    level[k] = level[h] + 1
                    stack.append(k)


class _Upstream:
    """The groups that some of `starts` depend on, directly or not: searched from the highest level down, and only as
    far down as the groups asked about, so the search for one point's candidates walks each group once."""

    __slots__ = ("dag", "found", "frontier", "seen")

    def __init__(self, dag: _GroupDag, starts: set[int]):
        self.dag = dag
        self.frontier = [(-dag.level[g], g) for g in starts]  # a heap: the highest level first
        heapq.heapify(self.frontier)
        self.seen = set(starts)
        self.found: set[int] = set()

    def reaches(self, target: int) -> bool:
        """Whether a group of `starts` depends on `target`."""
        level, before, frontier, seen = self.dag.level, self.dag.before, self.frontier, self.seen
        floor = level[target]
        while frontier and -frontier[0][0] > floor:
            for h in before[heapq.heappop(frontier)[1]]:
                self.found.add(h)
                if h not in seen:
                    seen.add(h)
                    heapq.heappush(frontier, (-level[h], h))
        return target in self.found


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
    ready = [g for g in range(n) if indegree[g] == 0]  # a heap: the first group first
    out = []
    while ready:
        g = heapq.heappop(ready)
        out.append(g)
        for h in edges.get(g, ()):
            indegree[h] -= 1
            if indegree[h] == 0:
                heapq.heappush(ready, h)
    return out
