"""`lt.jit`: record the kernels a function runs, then replay them on new inputs without running Python.

    step = lt.jit(train_step)      # train_step(x, y) builds a graph, realizes it, returns the loss
    for x, y in batches:
        loss = step(x, y)          # the first calls run train_step; later ones only launch its kernels

What a call is. The inputs are the tensors among the arguments (found in tuples, lists and dicts);
everything else in the arguments is static: a new value, like a new shape, dtype or device of an input,
records again. The outputs are the tensors in what the function returns; the jit realizes them, with
the state that `opt.step()` leaves pending, at the end of each recorded call. State that code outside
the function left pending is realized before a call, so it is never recorded into it.

Recording. The jit runs the function normally and notes every kernel launched, the buffers each reads
and writes, and its scalar parameters. Once two consecutive calls ran the same kernels, each reading the
same kind of buffer, it builds a replay: an input's buffer is the new input's; a buffer the call before
wrote and this call read is state (a parameter, a moment, a step count, running statistics), which the
replay reads and then rebinds to what it wrote; a buffer that two calls read unchanged is a constant;
the rest are temporaries, written in memory the replay owns. An optimizer's first step builds a different
graph from its later ones, so an Adam step replays from its fourth call. A function whose calls never
settle raises `JitError` after MAX_RECORDS recorded calls, saying where the last two differed. Past
`LT_JIT_MAX_RECORDS` recordings of one function, all signatures together (8 by default), one warning lists why
the last ones recorded (`LT_LOG=recompiles` logs each as it happens).

Replaying. A later call with the same signature launches the recorded kernels: no graph is built and
nothing is scheduled or compiled (`lt.stats().replays` counts these calls); on the CPU the kernels run
as one batch, one hand-off to the thread pool with no Python between kernels (under `LT_DEBUG` they are
launched one by one, to time each). The state's graph nodes are given the new buffers in place, so
`p.numpy()` shows the updated parameter, as after an eager step; every tensor sharing a state's node
sees the update, as with PyTorch's in-place updates. The outputs are new tensors on each call (without
autograd history), never overwritten by later calls, except a tensor object the function returns on
every call (a parameter, a running total): it is returned again, holding the new value, as without the
jit. Random draws continue the generator's sequence: a replay gives the same bits as running the
function again. If a state tensor the replay reads has been rebound outside (every tensor holding it
dropped it), or the seed was changed with `manual_seed`, the next call records again.

The rules (what a replay cannot see):
- Python values the function reads are frozen at recording: a Python scalar passed to a kernel that
  differs from call to call makes the recorded calls differ, hence `JitError` (pass it as a tensor
  argument, or keep it constant). Tensors the function reads but neither receives as arguments nor
  updates (data in a closure) are constants too.
- Reading data inside the function (`item()`, `numpy()`, `print`, `bool()`, ...) raises `JitError`
  naming the line: a replay runs no Python, so it could not give the function the value.
- A tensor created from host data inside the function (`lt.asarray`, `to(device)`) is a new buffer on
  every call that no kernel computes: `JitError` names where it was made.
- Tensors the function leaves unrealized (a `.grad` it does not read back) or stores elsewhere without
  reading them on the next call keep the values of the last recorded call; the function must not rebind
  its arguments.
- Inside a function that is being recorded, a jitted function runs as a plain call.

Threads: each thread records its own calls, and calls of one jitted function from several threads take
turns (they share its recordings, and usually the state they update); a replay rebinds the state's nodes
under the realize lock, as a realize does.
"""
from __future__ import annotations

import functools
import threading
import warnings
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from . import profiling, random, recompiles
from .device import Buffer, get_device
from .dtypes import get_default_dtype
from .errors import JitError
from .graph import Node
from .helpers import getenv, user_call
from .kernels.symbolic import DYNAMIC
from .pytree import flatten, unflatten
from .realize import (
    Recorder,
    count_replay,
    debug_line,
    is_recording,
    launch,
    launch_batch,
    raise_if,
    realize_nodes,
    realizing,
    recording,
)
from .schedule import ScheduleItem
from .tensor import Tensor

MAX_RECORDS = 4  # calls recorded for one signature before giving up on finding two alike

# where a launch's buffer comes from, in a recorded call (classified) and in a replay (indices)
SLOT, ARG, STATE, CONST = "slot", "arg", "state", "const"
STALE = object()  # what a replay that cannot run returns (None is a function's result like any other)


def jit(fn: Callable, *, dynamic: bool | None = None, static_argnums: int | Sequence[int] = (),
        static_argnames: str | Sequence[str] = ()) -> Jit:
    """`fn` recorded once per input signature and replayed afterwards (see the module docstring).

    `dynamic` says how the kernels compiled for its calls treat sizes (README, "Shapes, caches and compile
    time"): by default, a kernel compiled at other sizes of its loops than its first (a new batch size)
    compiles generic over those loops, a program for every size; `True` compiles such kernels generic over
    all their loops at once, for a function known to see many sizes (one compile per kernel rather than two);
    `False` compiles each size's own programs.

    Every argument that is not a tensor is static already (its value is part of the signature); JAX's
    `static_argnums`/`static_argnames` are accepted and say the same of those arguments, and a tensor passed
    there is a JitError (as JAX refuses an array there: a static argument is a value, not data)."""
    return Jit(fn, dynamic, static_argnums, static_argnames)


class _Mismatch(Exception):
    """Two recorded calls that cannot be one replay; the message says where they differ."""


# ---- arguments' specs ---------------------------------------------------------------------------


def _spec(leaf: Any) -> Any:
    if isinstance(leaf, Tensor):
        return Tensor, leaf.shape, leaf.dtype, leaf.device
    try:
        hash(leaf)
    except TypeError:
        raise JitError(f"lt.jit: an argument of type {type(leaf).__name__} is neither a tensor nor hashable; "
                       "non-tensor arguments are static (part of the signature)") from None
    return type(leaf), leaf


# ---- recording a call --------------------------------------------------------------------------


@dataclass
class _Launch:
    """One kernel launch of a recorded call."""

    program: Any
    kernel: Any
    device: str
    origin: str
    params: list[bool | int | float]
    outputs: list[Buffer]
    inputs: list[Buffer]
    input_origins: list[str]


@dataclass
class _Record(Recorder):
    """Everything one call did that a replay must repeat."""

    name: str
    args: list[Buffer]
    rng_before: tuple[int, int]
    rng_after: tuple[int, int] = (0, 0)
    launches: list[_Launch] = field(default_factory=list)
    binds: list[tuple[weakref.ref, Buffer]] = field(default_factory=list)
    out_structure: Any = None
    out_leaves: list[Any] = field(default_factory=list)  # the result's leaves
    outputs: list[Buffer | None] = field(default_factory=list)  # the buffer of each tensor leaf
    out_origins: list[str] = field(default_factory=list)
    out_specs: list[Any] = field(default_factory=list)
    checks: list[tuple[Buffer, str]] = field(default_factory=list)  # the flags of `Op.CHECK`s, their errors

    def launch(self, item: ScheduleItem, program: Any, outputs: list[Buffer]) -> None:
        self.launches.append(_Launch(program, item.kernel, item.device, item.origin, item.params, outputs,
                                     [n.buffer for n in item.inputs], [n.origin for n in item.inputs]))

    def bind(self, node: Node, buffer: Buffer) -> None:
        self.binds.append((weakref.ref(node), buffer))

    def check(self, flag: Buffer, message: str) -> None:
        self.checks.append((flag, message))

    def read(self) -> None:
        op, line = user_call()
        raise JitError(f"lt.jit: {self.name} reads a tensor's data with {op.strip('_')}() at {line} (a value, or the "
                       "size of a result that depends on the data: a mask's selection, nonzero, unique): a replay "
                       "runs only the kernels, so it could not give the function that value. Read it outside the "
                       "jitted function, from what the function returns.")


def _classify(buffer: Buffer, own: dict[int, int], args: dict[int, int], before: dict[int, int] | None) -> tuple:
    """Where `buffer` comes from in one call: a slot it wrote, an argument, state (a slot of the call before,
    when known) or a constant."""
    key = id(buffer)
    if key in own:
        return SLOT, own[key]
    if key in args:
        return ARG, args[key]
    if before is not None and key in before:
        return STATE, before[key]
    return CONST, buffer


def _agree(prev: tuple, cur: tuple) -> bool:
    """Whether a buffer read in the call before is compatible with `cur`, the same read in this call. A
    state read was, the call before, a read of something produced before it (or of the initial value)."""
    if cur[0] == STATE:
        return prev[0] == CONST
    return prev[0] == cur[0] and (prev[1] is cur[1] if cur[0] == CONST else prev[1] == cur[1])


def _draw(param: Any, record: _Record) -> int | None:
    """Which of the call's random draws a kernel parameter carries (0 for its first), if any."""
    offset = random.parameter_offset(param)
    return None if offset is None or not record.rng_before[1] <= offset < record.rng_after[1] \
        else offset - record.rng_before[1]


def _same_param(a: Any, b: Any) -> bool:
    return type(a) is type(b) and repr(a) == repr(b)  # 0.0 and -0.0 differ, NaN equals NaN


# ---- the replay ------------------------------------------------------------------------------------


@dataclass
class _ReplayLaunch:
    program: Any
    device: Any
    kernel: Any
    origin: str
    params: list[bool | int | float]
    draws: list[tuple[int, int]]        # (parameter position, draw number relative to the call's first)
    fresh: list[tuple[int, Any, int]]   # (slot, dtype, size) of outputs allocated on every replay
    index: list[int]                    # the launch's buffers (outputs, then inputs) in the replay's table


class _Replay:
    """The kernels of a recorded call with the provenance of every buffer they touch.

    The replay's buffer table holds the slots (the buffers the call writes, by launch and output), then
    the arguments, the state cells and the constants. Temporaries are written in buffers allocated once;
    the state and the outputs get new buffers on every replay, so the previous state can be read while
    the new one is written, and outputs handed out are never written again.
    """

    def __init__(self, prev: _Record, cur: _Record):
        sources, outputs = self._compare(prev, cur)
        self.draws_per_call = self._draws(prev, cur)
        written = [b for lc in cur.launches for b in lc.outputs]  # by slot
        n_slots, n_args = len(written), len(cur.args)
        results = [o for o in outputs if o is not None]

        # the state cells: slots of this call that the next one reads, with the nodes holding them
        cells = list(dict.fromkeys([s[1] for srcs in sources for s in srcs if s[0] == STATE]
                                   + [o[1] for o in results if o[0] == STATE]))
        cell_of = {s: n_slots + n_args + i for i, s in enumerate(cells)}
        self.holders: list[tuple[int, int, list[weakref.ref]]] = []  # (slot, table index, holders)
        for s in cells:
            refs = [r for r, b in cur.binds if b is written[s] and r() is not None]
            if not refs:
                raise _Mismatch("a buffer the next call reads is held by no tensor")
            self.holders.append((s, cell_of[s], refs))
        consts = list({id(s[1]): s[1] for srcs in sources for s in srcs if s[0] == CONST}.values())
        consts += [o[1] for o in results if o[0] == CONST]
        const_of = {id(b): n_slots + n_args + len(cells) + i for i, b in enumerate(consts)}

        def index(src: tuple) -> int:
            kind, v = src
            return v if kind == SLOT else n_slots + v if kind == ARG else cell_of[v] if kind == STATE \
                else const_of[id(v)]

        kept = set(cells) | {o[1] for o in results if o[0] == SLOT}
        self.table: list[Buffer | None] = [None] * (n_slots + n_args + len(cells)) + consts
        self.launches: list[_ReplayLaunch] = []
        slot = 0
        for lc, srcs in zip(cur.launches, sources):
            device = get_device(lc.device)
            out_slots = list(range(slot, slot + len(lc.outputs)))
            slot += len(lc.outputs)
            fresh = []
            for s, b in zip(out_slots, lc.outputs):
                if s in kept:
                    fresh.append((s, b.dtype, b.size))
                else:
                    self.table[s] = device.alloc(b.dtype, b.size)
            draws = [(i, rel) for i, v in enumerate(lc.params) if (rel := _draw(v, cur)) is not None]
            self.launches.append(_ReplayLaunch(lc.program, device, lc.kernel, lc.origin, lc.params, draws,
                                               fresh, out_slots + [index(s) for s in srcs]))
        self.outputs = [None if o is None else index(o) for o in outputs]  # table indices of the tensors
        written_slot = self._slots(cur)
        self.checks = [(written_slot[id(flag)], message) for flag, message in cur.checks]
        self.out_structure, self.out_specs = cur.out_structure, cur.out_specs
        # a tensor object both calls returned (a parameter, a running total) is returned again, updated;
        # other tensors are new on every call, and other leaves are constants
        self.out_leaves = [weakref.ref(c) if o is not None and p is c else None if o is not None else c
                           for o, p, c in zip(outputs, prev.out_leaves, cur.out_leaves)]
        self.n_slots = n_slots
        # the launches as one call where they share a device whose backend can batch them (the CPU's)
        devices = {id(lc.device): lc.device for lc in self.launches}
        device = next(iter(devices.values())) if len(devices) == 1 else None
        self.batch = device.batch([(lc.program, lc.index, lc.params) for lc in self.launches], len(self.table)) \
            if device is not None and device.batches else None
        self.seed = cur.rng_after[0]
        self.uses_rng = any(lc.draws for lc in self.launches)
        # a function that seeds the generator leaves it in the same state every time; others advance it
        reseeds = cur.rng_before != cur.rng_after and prev.rng_after == cur.rng_after
        self.rng_after = cur.rng_after if reseeds else None

    @classmethod
    def _compare(cls, prev: _Record, cur: _Record) -> tuple[list[list[tuple]], list[tuple | None]]:
        """Where each buffer that `cur`'s launches read, and each of its results, comes from, checked against
        `prev`: per launch its inputs, and per leaf of the result its source (None for a non-tensor)."""
        if len(prev.launches) != len(cur.launches):
            raise _Mismatch(f"the call ran {len(cur.launches)} kernels, the call before {len(prev.launches)}")
        prev_slots, cur_slots = cls._slots(prev), cls._slots(cur)
        prev_args = {id(b): a for a, b in reversed(list(enumerate(prev.args)))}
        cur_args = {id(b): a for a, b in reversed(list(enumerate(cur.args)))}

        def classify(prev_buf: Buffer, cur_buf: Buffer, what: str, origin: str) -> tuple:
            p = _classify(prev_buf, prev_slots, prev_args, None)
            c = _classify(cur_buf, cur_slots, cur_args, prev_slots)
            if c[0] == CONST and p[0] == CONST and p[1] is not c[1]:
                if not cur_buf.size:  # an empty result (x[3:1]) is a new buffer every call, but holds no data
                    return c
                raise _Mismatch(f"{what} reads a tensor made at {origin} that is a new buffer on every call and "
                                "that no kernel computes (host data made inside the function: lt.asarray, "
                                "to(device), ...); pass it as an argument")
            if not _agree(p, c):
                raise _Mismatch(f"{what} reads {cls._describe(c)}, the call before {cls._describe(p)}")
            return c

        sources = []
        for k, (p, c) in enumerate(zip(prev.launches, cur.launches)):
            if p.program is not c.program:
                raise _Mismatch(f"kernel {k} (for the op at {c.origin}) differs from the call before's "
                                f"(for the op at {p.origin})")
            what = f"the kernel for the op at {c.origin}"
            sources.append([classify(pb, cb, what, origin)
                            for pb, cb, origin in zip(p.inputs, c.inputs, c.input_origins)])
        if prev.out_structure != cur.out_structure or prev.out_specs != cur.out_specs:
            raise _Mismatch("the function returned a different structure or different outputs")
        outputs = [None if cb is None else classify(pb, cb, "the function's result", origin)
                   for pb, cb, origin in zip(prev.outputs, cur.outputs, cur.out_origins)]
        return sources, outputs

    @staticmethod
    def _slots(record: _Record) -> dict[int, int]:
        """The buffers a call wrote, numbered by launch and output."""
        return {id(b): i for i, b in enumerate(b for lc in record.launches for b in lc.outputs)}

    @staticmethod
    def _describe(src: tuple) -> str:
        kind, v = src
        return {SLOT: "a buffer the call computed", ARG: f"argument tensor {v}",
                STATE: "what the call before computed", CONST: "a tensor made before the call"}[kind]

    @staticmethod
    def _draws(prev: _Record, cur: _Record) -> int:
        """The random draws one call makes; every parameter carrying a draw number must carry the same one
        relative to its call's first draw, and every other parameter the same value, in both calls."""
        for p, c in zip(prev.launches, cur.launches):
            for pv, cv in zip(p.params, c.params):
                if (rel := _draw(cv, cur)) is not None and rel == _draw(pv, prev):
                    continue
                if not _same_param(pv, cv):
                    raise _Mismatch(f"a Python scalar of the kernel for the op at {c.origin} changed between "
                                    f"the calls ({pv!r} -> {cv!r}); a replay would freeze it: pass it as a tensor")
        return cur.rng_after[1] - cur.rng_before[1]

    def __call__(self, args: list[Buffer]) -> Any:
        """Launch the kernels on `args` and return the function's result; STALE, launching nothing, when the
        state it reads is gone or the seed changed (the caller records again)."""
        seed, offset = random.get_rng_state()
        if self.uses_rng and seed != self.seed:
            return STALE
        table = list(self.table)
        table[self.n_slots:self.n_slots + len(args)] = args
        for _, i, refs in self.holders:
            node = next((n for r in refs if (n := r()) is not None), None)
            if node is None:
                return STALE
            table[i] = node.buffer
        for lc in self.launches:
            for s, dtype, size in lc.fresh:
                table[s] = lc.device.alloc(dtype, size)
        ptrs = [b.ptr if b is not None else 0 for b in table]
        level, profiled = getenv("LT_DEBUG"), profiling.active()
        if self.batch is not None and not (level or profiled):
            launch_batch(self.batch, ptrs, {k: self._params(lc, offset) for k, lc in enumerate(self.launches)
                                            if lc.draws}, len(self.launches), lambda k: self.launches[k].origin)
        else:
            for lc in self.launches:
                seconds = launch(lc.program, [ptrs[i] for i in lc.index], self._params(lc, offset),
                                 level or profiled, lc.device, lambda lc=lc: lc.origin)
                if profiled:
                    profiling.record("launch", lc.kernel, lc.device.name, lc.origin, seconds)
                if level:
                    debug_line(level, lc.kernel, lc.device.name, lc.origin, lc.program, seconds, False)
        for s, _, refs in self.holders:
            for r in refs:
                if (node := r()) is not None:
                    node.become_buffer(table[s])
        random.set_rng_state(self.rng_after or (seed, offset + self.draws_per_call))
        count_replay()
        for s, message in self.checks:
            raise_if(table[s], message)
        leaves = [leaf if i is None else self._output(table[i], spec, leaf)
                  for i, spec, leaf in zip(self.outputs, self.out_specs, self.out_leaves)]
        return unflatten(self.out_structure, iter(leaves))

    @staticmethod
    def _params(lc: _ReplayLaunch, offset: int) -> list[bool | int | float]:
        """A launch's scalar parameters, its random draws continuing the generator's sequence from `offset`."""
        params = list(lc.params)
        for i, rel in lc.draws:
            params[i] = random.offset_parameter(offset + rel)
        return params

    @staticmethod
    def _output(buffer: Buffer, spec: tuple, same: weakref.ref | None) -> Tensor:
        """The tensor returned for a result: the object the function returns every time (rebound to the
        new value unless it holds state, which is updated already), else a new tensor."""
        t = None if same is None else same()
        if t is not None and t.node.buffer is buffer:
            return t
        node = Node.from_buffer(buffer, spec[2], spec[1], spec[3])
        if t is None:
            return Tensor(node)
        t.node = node
        return t


# ---- the jitted function -----------------------------------------------------------------------------


@dataclass
class _Entry:
    """What the jit knows about one input signature."""

    replay: _Replay | None = None
    previous: _Record | None = None
    records: int = 0


class Jit:
    """A function recorded once per input signature and replayed afterwards: see `lazytensor.jit`."""

    def __init__(self, fn: Callable, dynamic: bool | None = None, static_argnums: int | Sequence[int] = (),
                 static_argnames: str | Sequence[str] = ()):
        self.fn, self.dynamic = fn, dynamic
        self.static_argnums = {static_argnums} if isinstance(static_argnums, int) else set(static_argnums)
        self.static_argnames = {static_argnames} if isinstance(static_argnames, str) else set(static_argnames)
        self.entries: dict[Any, _Entry] = {}
        self.last_signature: tuple | None = None  # of the last call recorded (for the recompile log)
        self.reasons: list[str] = []  # why each call recorded was, in order
        self.warned = False  # whether the warning about too many recordings was given
        # Calls from several threads take turns: they share the recordings, and usually the state they update
        # (a model's parameters), which a recording must see change only by its own call.
        self._lock = threading.RLock()
        functools.update_wrapper(self, fn)

    def _check_static(self, args: tuple, kwargs: dict[str, Any]) -> None:
        given = [(f"argument {i}", args[i if i >= 0 else len(args) + i]) for i in self.static_argnums
                 if -len(args) <= i < len(args)]
        given += [(f"argument {name!r}", kwargs[name]) for name in self.static_argnames if name in kwargs]
        for where, value in given:
            if isinstance(value, Tensor):
                raise JitError(f"lt.jit: {where} is static (static_argnums/static_argnames) but is a tensor: a "
                               "static argument is a hashable value, part of the signature")

    def __get__(self, instance: Any, owner: type | None = None) -> Any:
        """A jitted method: the instance is a static argument, so each object has its own replays."""
        return self if instance is None else functools.partial(self, instance)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if is_recording():  # inside another jitted function's recording: its recorder sees our kernels
            return self.fn(*args, **kwargs)
        if self.static_argnums or self.static_argnames:
            self._check_static(args, kwargs)
        leaves: list[Any] = []
        structure = flatten((args, kwargs), leaves)
        with self._lock:
            signature = (structure, tuple(_spec(x) for x in leaves), get_default_dtype())
            entry = self.entries.setdefault(signature, _Entry())
            inputs = [x for x in leaves if isinstance(x, Tensor)]
            # the inputs, and state that code outside left pending, are computed outside the recording
            realize_nodes(*(t.node for t in inputs if not t.node.realized))
            why = "first call" if self.last_signature is None else \
                "not settled yet: a replay needs two consecutive calls that ran the same kernels"
            if entry.replay is not None:
                with realizing:  # a replay rebinds the state's graph nodes, as a realize does
                    out = entry.replay([t.node.buffer for t in inputs])
                if out is not STALE:
                    return out
                entry.replay, entry.previous, entry.records = None, None, 0
                why = "its replay's state was rebound outside the function, or the random seed was set"
            self._note_record(recompiles.jit_reason(signature, self.last_signature, why))
            self.last_signature = signature
            return self._record(entry, args, kwargs, inputs)

    def _note_record(self, reason: str) -> None:
        """Count a recording and its reason: logged under LT_LOG=recompiles; past LT_JIT_MAX_RECORDS recordings
        (default 8), all signatures together, one warning with the reasons of the last of them."""
        name, origin = getattr(self.fn, "__qualname__", repr(self.fn)), user_call()[1]
        if recompiles.enabled():
            recompiles.jit_recorded(name, reason, origin)
        self.reasons.append(reason)
        limit = getenv("LT_JIT_MAX_RECORDS", 8)
        if len(self.reasons) > limit and not self.warned:
            self.warned = True
            recent = "; ".join(dict.fromkeys(self.reasons[-limit:]))
            warnings.warn(f"lt.jit: {name} was recorded {len(self.reasons)} times (more than LT_JIT_MAX_RECORDS="
                          f"{limit}), each recording running it eagerly and compiling its new kernels; the reasons "
                          f"of the last {limit}: {recent}. Keep argument shapes and static arguments fixed (pad the "
                          "last batch), or see LT_LOG=recompiles.", stacklevel=3)

    def _record(self, entry: _Entry, args: tuple, kwargs: dict, inputs: list[Tensor]) -> Any:
        name = getattr(self.fn, "__qualname__", repr(self.fn))
        record = _Record(f"the jitted function {name}", [t.node.buffer for t in inputs], random.get_rng_state())
        nodes = [t.node for t in inputs]
        policy = DYNAMIC.set(self.dynamic)
        try:
            with recording(record):
                out = self.fn(*args, **kwargs)
                leaves: list[Any] = []
                record.out_structure = flatten(out, leaves)
                realize_nodes(*(x.node for x in leaves if isinstance(x, Tensor) and not x.node.realized))
        finally:
            DYNAMIC.reset(policy)
        if any(t.node is not n for t, n in zip(inputs, nodes)):
            raise JitError(f"lt.jit: {name} rebinds an argument tensor (x += ..., x.node = ...); a replay "
                           "cannot rebind the caller's tensors: return the new value instead")
        record.rng_after = random.get_rng_state()
        tensors = [isinstance(x, Tensor) for x in leaves]
        record.out_leaves = leaves
        record.outputs = [x.node.buffer if t else None for t, x in zip(tensors, leaves)]
        record.out_origins = [x.node.origin if t else "" for t, x in zip(tensors, leaves)]
        record.out_specs = [_spec(x) if t else None for t, x in zip(tensors, leaves)]
        entry.records += 1
        if entry.previous is not None:
            try:
                entry.replay = _Replay(entry.previous, record)
            except _Mismatch as e:
                if entry.records >= MAX_RECORDS:
                    raise JitError(f"lt.jit: {name} ran differently on consecutive calls ({entry.records} recorded "
                                   f"with one input signature), so it cannot be replayed: {e}") from None
        entry.previous = None if entry.replay is not None else record
        return out


__all__ = ["Jit", "JitError", "jit"]
