"""The lazy graph: one `Node` per recorded op.

Nodes are hash-consed: building the same op on the same inputs twice returns
the same node, so common subexpressions are shared for free. Each node records
the user's line that created it (`origin`), which errors raised later name.
A Python scalar's node (`Op.SCALAR`, a kernel parameter) is the exception: each
is a node of its own, as its value is data, not structure. Sharing it by value
would make the graph's structure, which keys the cached schedules and the
kernels, depend on which scalars happen to be equal: `(x + 1.0) * v` had one
kernel for v = 1.0 (one parameter, read twice) and another for any other v,
each compiled, a loop's step that met an equal value by chance included.
(`sharing_scalars` shares them by the value's identity, in graphs that must
meet: a differentiable recipe's forward and backward.)
Hash-consing is per thread: two threads that build the same expression get
nodes of their own, so that one thread realizing (or an `lt.jit` replay
rebinding) a node it built never changes another thread's graph. A tensor one
thread hands to another is shared like any object.

Realizing a node turns it into a BUFFER node in place and drops its sources,
so the graph that produced it can be freed; every tensor and node holding it
sees the data.

The graph also knows which nodes a user can still read (`hold`, `is_held`): each
node keeps, weakly, the tensors of the user's program that hold it. A realize writes such a node to memory when
it computes it anyway, so reading it later does not compute its history again.
"""
from __future__ import annotations

import threading
import weakref
from _thread import get_ident
from _weakref import _remove_dead_weakref
from collections import deque
from collections.abc import Callable, Container, Iterator
from enum import Enum
from typing import Any

import numpy as np

from .device import get_device
from .helpers import prod, user_line
from .kernels.dtype import DType
from .kernels.ir import toposort

__all__ = ["MOVEMENT", "Node", "Op", "hold", "is_held", "region", "sharing_scalars", "toposort", "uniform_axes"]


class Op(Enum):
    __hash__ = object.__hash__  # members are singletons; Enum's own hash runs Python code

    BUFFER = "buffer"          # realized data; `buffer` holds it
    SCALAR = "scalar"          # a Python scalar, passed to kernels as a parameter; arg: value
    CONST = "const"            # a constant baked into kernels; arg: value
    IOTA = "iota"              # int64 0..n-1 along the only axis
    PHILOX = "philox"          # int64 word `arg` (0-3) of Philox-4x32-10; srcs: counter words c0-c3, key k0, k1
    ALU = "alu"                # elementwise; arg: kernels.ir.Alu
    CAST = "cast"              # to `dtype`
    BITCAST = "bitcast"        # to `dtype`, of the same size: the source's bits read as that dtype
    REDUCE = "reduce"          # arg: (ReduceOp, axes); reduced axes keep size 1
    RESHAPE = "reshape"        # arg: new shape
    PERMUTE = "permute"        # arg: axis order
    EXPAND = "expand"          # arg: new shape (size-1 axes broadcast)
    PAD = "pad"                # arg: ((before, after), ...) zero padding
    SHRINK = "shrink"          # arg: ((start, stop, step), ...) with step > 0
    FLIP = "flip"              # arg: axes to reverse
    CONTIGUOUS = "contiguous"  # a forced realize point
    CHECK = "check"            # srcs: (value, flag); the value, where a 0-d bool flag computed beside it is
                               # false; a realize raises IndexError(arg) where it is true (indexes from data)
    GATHER = "gather"          # srcs: (source, index); arg: axis. out[i] = source[i with i[axis] = index[i]]
                               # (int64 index, of out's shape; 0 where it is outside [0, source.shape[axis]))
    SCATTER = "scatter"        # srcs: (base, index, updates); arg: (axis, ReduceOp or None). base, then each
                               # update u at i written (or folded by the op) at i with i[axis] = index[i]
    SORT = "sort"              # int64 positions of the source's last axis in stable order, or (values) its
                               # elements in that order, all, those at positions take, or the first `first`;
                               # arg: (descending, values, take, first)
    SCAN = "scan"              # the running fold of the source along an axis; arg: (ReduceOp, the axis counted
                               # from the end, negative)
    LINALG = "linalg"          # a routine of kernels.lapack on each matrix in the sources' last two axes (the other
                               # axes, the batch, equal); arg: its name. The results of each matrix one after
                               # another along the last axis


_SCALAR_OP, _ALU_OP, _BUFFER_OP = Op.SCALAR, Op.ALU, Op.BUFFER
MOVEMENT = frozenset({Op.RESHAPE, Op.PERMUTE, Op.EXPAND, Op.PAD, Op.SHRINK, Op.FLIP})

class _Entry(weakref.ref):
    """The table's weak reference to a node, with the node's key: the node's death drops the entry at once."""

    __slots__ = ("key",)


def _drop(entry: _Entry) -> None:
    """A node died: its entry goes, unless its key is a live node's by now (checked and deleted in one C call)."""
    _remove_dead_weakref(_interned, entry.key)


def _key(op: Op, dtype: DType, shape: tuple[int, ...], device: str, arg: Any, thread: int,
         srcs: tuple[Node, ...]) -> tuple:
    """What makes two nodes one: 0.0 == -0.0 and True == 1, so constants are keyed by type and spelling (an
    elementwise op's arg is an `Alu`: no isinstance, which looks up `__class__` in Python); the sources' ids
    last, and the common arities spelled out, as a tuple made through `map` costs more than the rest."""
    n, key_arg = len(srcs), arg if op is _ALU_OP or not isinstance(arg, _SCALARS) else (type(arg), repr(arg))
    return (op, dtype, shape, device, key_arg, thread, id(srcs[0])) if n == 1 else \
        (op, dtype, shape, device, key_arg, thread, id(srcs[0]), id(srcs[1])) if n == 2 else \
        (op, dtype, shape, device, key_arg, thread, *map(id, srcs))


# hash of a key (`_key`) -> the node's `_Entry`. Dropped as the node dies, not by a later sweep: a training step's
# graph is dead after its realize, and entries left to die later (a thousand a GPT step) outlived two collections of
# the cyclic garbage collector and went to its oldest generation. Keys hold the ids of the sources, which a live node
# keeps alive, so an id in a live node's key is never another node's.
_interned: dict[int, _Entry] = {}
_SCALARS = (bool, int, float)
_ref = weakref.ref
_new_object = object.__new__


class Node:
    """One op in the lazy graph, with its output dtype, shape and device known at once."""

    __slots__ = ("__weakref__", "_key", "_thread", "arg", "buffer", "device", "dtype", "holders", "line", "op",
                 "shape", "srcs")

    op: Op
    dtype: DType
    shape: tuple[int, ...]
    device: str
    srcs: tuple[Node, ...]
    arg: Any
    buffer: Any
    line: tuple[str, int | None]  # the user's file and line (`helpers.user_line`); `origin` gives its text

    def __new__(cls, op: Op, dtype: DType, shape: tuple[int, ...], device: str,
                srcs: tuple[Node, ...] = (), arg: Any = None, line: tuple[str, int | None] | None = None) -> Node:
        """The node of `op` on `srcs` (the one built before where there is one), made at `line`: the user's line,
        found from the caller's frame unless the caller knows it (another node it just made for the same call)."""
        if op is _SCALAR_OP:  # never shared (see the module's docstring), but inside `sharing_scalars`
            key = thread = None
            if (shared := _sharing.scalars) is not None:
                made, seen = shared
                nth = seen.get(scalar_key := (id(arg), dtype, shape, device), 0)
                seen[scalar_key] = nth + 1
                if nth < len(earlier := made.setdefault(scalar_key, [])):
                    return earlier[nth]
        else:
            shared = None
            # The table is keyed by the key's hash, an int, and a node found by it is checked against the key: a
            # key kept as a tuple was one more object per node for the cyclic garbage collector to count and walk
            # (a training step keeps thousands of nodes alive, and the collector's passes, set off by that count,
            # were a fifth of its time). Two keys of one hash share an entry: the later node takes it, and the
            # earlier loses its sharing only.
            thread = get_ident()
            key = _key(op, dtype, shape, device, arg, thread, srcs)
            if (entry := _interned.get(hash_ := hash(key))) is not None and (hit := entry()) is not None and \
                    _key(hit.op, hit.dtype, hit.shape, hit.device, hit.arg, hit._thread, hit.srcs) == key:
                return hit
        self = _new_object(cls)
        self.op, self.dtype, self.shape, self.device, self.srcs, self.arg = op, dtype, shape, device, srcs, arg
        self.line, self.buffer, self.holders, self._thread, self._key = line or user_line(2), None, None, thread, None
        if key is not None:
            self._key = hash_
            entry = _interned[hash_] = _Entry(self, _drop)
            entry.key = hash_
        elif shared is not None:
            earlier.append(self)  # it holds the value: the value's id is no other object's while it lives
        return self

    @staticmethod
    def from_buffer(buffer: Any, dtype: DType, shape: tuple[int, ...], device: str) -> Node:
        """A fresh node for data that already exists (never shared with another buffer)."""
        self = _new_object(Node)
        self.op, self.dtype, self.shape, self.device, self.srcs, self.arg = Op.BUFFER, dtype, shape, device, (), None
        self.line, self.buffer, self.holders, self._key, self._thread = user_line(2), buffer, None, None, None
        return self

    @property
    def origin(self) -> str:
        """`file:line` of the user's code that made this node (errors and `LT_DEBUG` name it)."""
        filename, line = self.line
        return filename if line is None else f"{filename}:{line}"

    @property
    def numel(self) -> int:
        return prod(self.shape)

    @property
    def realized(self) -> bool:
        return self.op is Op.BUFFER

    def become_buffer(self, buffer: Any) -> None:
        """Mark this node computed: it now holds `buffer` and forgets how it was made."""
        if self._key is not None and (ref := _interned.get(self._key)) is not None and ref() is self:
            _interned.pop(self._key, None)
        self.op, self.srcs, self.arg, self.buffer, self._key = _BUFFER_OP, (), None, buffer, None

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        """Pickled and deep-copied as a copy of its data, never as a graph: the node that comes back is a
        buffer of its own on the same device. Only a realized node has data to copy."""
        if not self.realized:
            raise TypeError(f"cannot pickle or copy {self!r}: it is not computed (realize it first)")
        return _node_of_data, (self.buffer.numpy(), self.dtype, self.shape, self.device)

    def __repr__(self) -> str:
        return f"<Node {self.op.value} {self.dtype.name}{list(self.shape)} at {self.origin}>"


class _Sharing(threading.local):
    """This thread's table of shared scalar nodes (`sharing_scalars`), where one is in use."""

    scalars: tuple[dict[tuple, list[Node]], dict[tuple, int]] | None = None


_sharing = _Sharing()


def sharing_scalars(table: dict[tuple, list[Node]], call: Callable[..., Any], *args: Any) -> Any:
    """`call(*args)`, the scalar nodes it makes kept in `table` by value (the same object), dtype, shape and
    device, in the order made: the nth such node of a call is the nth of an earlier call with the same table, made
    anew where there is none (within one call, two are two nodes, as outside). Graphs built in calls that make the
    same scalars in the same order thus share them, and so the nodes built on them (hash-consing):
    `recipe.apply_differentiable`'s forward and backward are such calls, the backward recording the forward's ops
    again to find the forward's nodes, not a copy of those that read a scalar."""
    saved, _sharing.scalars = _sharing.scalars, (table, {})
    try:
        return call(*args)
    finally:
        _sharing.scalars = saved


class _Holders(dict):
    """The tensors that hold a node, where there are several: by id (not a WeakSet: a set compares its members
    with ==, which is elementwise on tensors), a weak reference to each, whose entry goes when its tensor does (a
    hash-consed node outlives the many temporaries made on it). A WeakValueDictionary's behavior, at a fraction
    of its cost: it is made whenever a node gains a second holder (the result of a composite op, a no-op
    reshape), and `is_held` reads it for every such node of every realize."""

    __slots__ = ("__weakref__", "_me")

    def __init__(self, *holders: Any):
        super().__init__()
        self._me = _ref(self)
        for holder in holders:
            self.add(holder)

    def add(self, holder: Any) -> None:
        key = id(holder)
        ref = self[key] = _Holder(holder, _forget)
        ref.holders, ref.key = self._me, key


class _Holder(weakref.ref):
    """A `_Holders` entry: a weak reference to the tensor, with the table (weakly) and the tensor's id, for the
    callback (one object for the garbage collector to track, where a reference and a `partial` were two)."""

    __slots__ = ("holders", "key")


def _forget(ref: _Holder) -> None:
    """A holder died: its entry goes, unless its id is another live tensor's by now (checked and deleted in one
    C call, as WeakValueDictionary does, so a thread adding that tensor meanwhile keeps its entry)."""
    if (held := ref.holders()) is not None:
        _remove_dead_weakref(held, ref.key)


def hold(holder: Any, node: Node) -> None:
    """Note that `holder` (a tensor of the user's program, not a handle autograd keeps) now holds `node`: data
    the user may read after a realize. Kept weakly: a tensor nothing else holds is no reason to write its
    node."""
    held = node.holders
    if type(held) is not weakref.ReferenceType:
        if held is None:
            node.holders = _ref(holder)  # most nodes have one holder, the tensor the op made: one weak reference
        else:
            held.add(holder)
    elif (first := held()) is None:
        node.holders = _ref(holder)
    elif first is not holder:
        node.holders = _Holders(first, holder)


def is_held(node: Node) -> bool:
    """Whether a live tensor of the user's program still holds `node` (a tensor rebound since, as optimizers
    rebind parameters, holds its new node instead)."""
    held = node.holders
    if held is None:
        return False
    if type(held) is weakref.ReferenceType:
        return (t := held()) is not None and t._node is node
    return any((t := r()) is not None and t._node is node for r in held.values())


def _node_of_data(data: np.ndarray, dtype: DType, shape: tuple[int, ...], device: str) -> Node:
    """A node holding `data` (a buffer's flat contents, as `Buffer.numpy` gives them) on `device`."""
    return Node.from_buffer(get_device(device).from_numpy(data, dtype), dtype, shape, device)


def region(root: Node, boundaries: Container[Node]) -> Iterator[Node]:
    """`root`, then every node its kernel would compute: those reachable from it without passing a
    realized node or one of `boundaries`, each once, nearest first (breadth-first)."""
    seen, queue = {id(root)}, deque([root])
    while queue:
        node = queue.popleft()
        yield node
        for src in node.srcs:
            if id(src) not in seen and not src.realized and src not in boundaries:
                seen.add(id(src))
                queue.append(src)


_UNIFORM_DEPTH = 6  # elementwise ops looked through: autograd's products are one or two deep
# the ops whose result may be uniform along an axis: movement ops but a padding (over one element, or an expand),
# and elementwise ops; of any other op's, a result of one element has no axis longer than 1 either
_MAY_BE_UNIFORM = frozenset({Op.RESHAPE, Op.PERMUTE, Op.EXPAND, Op.SHRINK, Op.FLIP, Op.ALU, Op.CAST})
_NONE: frozenset[int] = frozenset()


def uniform_axes(node: Node, depth: int = _UNIFORM_DEPTH) -> frozenset[int]:
    """The axes (longer than 1) along which every element of `node` is the same, as its structure says: each
    axis of a broadcast of one value (movement ops over one element, no padding's zeros among them: the
    gradient of a sum or a mean), the axes an expand broadcasts, those that all sources of an elementwise op
    share (looked for `depth` ops deep); no others (a buffer's data is not read)."""
    if node.op not in _MAY_BE_UNIFORM:  # a buffer, a reduction, a padding...: asked of every tensor a recipe takes
        return _NONE
    base = node
    while base.op in MOVEMENT and base.op is not Op.PAD:
        base = base.srcs[0]
    if base.numel == 1:
        return frozenset(i for i, n in enumerate(node.shape) if n > 1)
    if node.op is Op.EXPAND:
        src = node.srcs[0]
        return uniform_axes(src, depth) | {i for i, (a, b) in enumerate(zip(src.shape, node.shape)) if a < b}
    if node.op not in (Op.ALU, Op.CAST) or depth == 0:
        return frozenset()
    shared = uniform_axes(node.srcs[0], depth - 1)
    for src in node.srcs[1:]:
        if not shared:
            break
        shared &= uniform_axes(src, depth - 1)
    return shared
