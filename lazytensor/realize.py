"""Run a schedule: allocate outputs, compile (or fetch from cache) and launch each kernel.

On a device that batches kernels (the CPU), a schedule of several kernels whose outputs take at most
BATCH_MAX_BYTES runs as one batch: one hand-off to the thread pool and no Python between kernels (the
batch is built once per schedule structure and kept). Its intermediates then live until the batch ends;
a bigger schedule runs kernel by kernel, giving each intermediate's memory back once its last reader ran.

`LT_DEBUG=1` prints one line per launch (kernel, device, shapes, time);
`LT_DEBUG=2` adds the kernel IR; `LT_DEBUG=3` the optimized LLVM IR; `LT_DEBUG=4` the
host assembly; `LT_DEBUG=5` the LLVM IR before optimization. Lines go to stderr. A kernel compiled under `LT_CHECK_BOUNDS=1`
that indexes outside a buffer raises `KernelError` naming the user's line.

Threads. A tensor one thread hands to another is shared (realizing its node turns it into a buffer in
place, for both), and so are the caches of schedules, compiled programs and batches: one realize runs at a
time (`realizing`), from scheduling to binding the results, while its kernels use the thread pool. What a
thread starts and finishes by itself is its own: the pending state that `realize_with_next` defers and an
`lt.jit` recording.
"""
from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, fields, replace
from typing import Any

import numpy as np

from . import dump, profiling, recompiles
from .device import Buffer, Device, get_device
from .errors import KernelError, LinAlgError
from .graph import Node, Op, region
from .helpers import any_set, getenv
from .kernels import bounds, reference
from .kernels.bounds import OutOfBounds
from .kernels.lapack import LibraryError
from .schedule import SCHEDULE_CACHE_SIZE, Planned, Schedule, ScheduleItem, forget_pending, is_pending, plan

BATCH_MAX_BYTES = 64 << 20
_BUFFER = Op.BUFFER  # read for every node a realize binds: an enum's member costs a call into Python on 3.11

# Held while a thread reads or rewrites the graph for a realize (or a replay, or `lt.schedule`); re-entrant,
# as a realize inside a jit recording or a replay inside a realize's caller nests.
realizing = threading.RLock()


@dataclass
class Stats:
    """Counters since the process started (or the last `reset_stats()`). `lt.stats()` gives a snapshot; the
    difference of two (`after - before`) counts what ran between them. Compile time is wall time: kernels
    compiled side by side count once."""

    kernels_launched: int = 0
    kernels_compiled: int = 0
    # of those, the ones compiled generic over sizes of their loops, each serving every size of them from then on
    # (`kernels/symbolic.py`; `LT_SYMBOLIC=0` turns it off)
    kernels_generic: int = 0
    realizes: int = 0
    replays: int = 0  # calls of an `lt.jit` function that ran its recorded kernels without scheduling
    schedule_seconds: float = 0.0  # deciding the kernels of each realize (a look-up once a structure was seen)
    lower_seconds: float = 0.0     # building their kernel IR
    compile_seconds: float = 0.0
    run_seconds: float = 0.0

    def as_dict(self) -> dict[str, float]:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    def __sub__(self, before: Stats) -> Stats:
        return Stats(**{f.name: getattr(self, f.name) - getattr(before, f.name) for f in fields(self)})


_stats = Stats()


def stats() -> Stats:
    """A snapshot of the kernel counters: how many kernels were compiled and launched, and the time spent."""
    return replace(_stats)


def count_replay() -> None:
    """Count a call of an `lt.jit` function that replayed its kernels."""
    _stats.replays += 1


def reset_stats() -> None:
    """Set the counters to zero (in place: a launcher written out for its plan holds them, `_written`)."""
    for f in fields(_stats):
        setattr(_stats, f.name, f.default)


def launch(program: Any, ptrs: list[int], params: list, timed: int | bool, device: Any,
           origin: Callable[[], str]) -> float:
    """Run one compiled kernel (for the op at `origin()`, asked for on an error only) and count it; returns its
    time, which is exact only where `timed` (`LT_DEBUG`, a profile): GPU launches are asynchronous, and are waited
    for only then."""
    if timed:
        device.synchronize()
    t0 = time.perf_counter()
    try:
        program(ptrs, params)
    except OutOfBounds as e:
        raise _out_of_bounds(e, origin()) from e
    except LibraryError as e:
        raise _failed(e, origin()) from None
    if timed:
        device.synchronize()
    seconds = time.perf_counter() - t0
    _stats.kernels_launched += 1
    _stats.run_seconds += seconds
    return seconds


def launch_batch(batch: Any, ptrs: list[int], params: dict[int, list], launches: int,
                 origin: Callable[[int], str]) -> None:
    """Run a device's batch of compiled kernels (see `Device.batch`) on a table of buffer addresses, with new
    parameters for some (by position), counting its `launches` kernels; the kth is for the op at `origin(k)`
    (asked for on an error only)."""
    t0 = time.perf_counter()
    try:
        batch(ptrs, params)
    except OutOfBounds as e:
        raise _out_of_bounds(e, origin(e.position)) from e
    except LibraryError as e:
        raise _failed(e, origin(e.position)) from None
    _stats.kernels_launched += launches
    _stats.run_seconds += time.perf_counter() - t0


def _out_of_bounds(e: OutOfBounds, origin: str) -> KernelError:
    return KernelError(f"the kernel for the op at {origin} indexed a buffer out of bounds (LT_CHECK_BOUNDS): {e}")


def _failed(e: LibraryError, origin: str) -> LinAlgError:
    return LinAlgError(f"{e} (the op at {origin})")


def allocate(device: Device, node: Node) -> Buffer:
    """A buffer on `device` for `node`'s data; an allocation that fails names the tensor and its line."""
    try:
        return device.alloc(node.dtype, node.numel)
    except MemoryError as e:
        raise _no_memory(e, node) from None


def _no_memory(e: MemoryError, node: Node) -> MemoryError:
    """The error of an allocation for `node` that failed, naming the tensor and its line."""
    return MemoryError(f"{e}, for a {node.dtype.name} tensor of shape {node.shape} made at {node.origin}")


def debug_line(level: int, kernel: Any, device: str, origin: str, program: Any, seconds: float,
               compiled: bool) -> None:
    """The `LT_DEBUG` report of one launch (to stderr)."""
    shapes = " ".join(f"b{i}:{b.dtype.name}[{b.size}]" for i, b in enumerate(kernel.buffers))
    generic = f" generic over {over}" if (over := getattr(program, "generic_over", None)) else ""
    note = f" (compiled{generic} in {program.compile_seconds * 1e3:.1f} ms)" if compiled else ""
    print(f"lt: {kernel.name:<48} {device:<6} {shapes}  {seconds * 1e6:9.1f} us{note}  <- {origin}",
          file=sys.stderr)
    if level >= 2:
        print(kernel, file=sys.stderr)
    if level >= 3:
        print(program.optimized_ir, file=sys.stderr)
    if level >= 4:
        print(program.assembly, file=sys.stderr)
    if level >= 5:
        print(program.llvm_ir, file=sys.stderr)


class Recorder:
    """What `lt.jit` learns from a call it records: each launch and which node received which buffer."""

    def launch(self, item: ScheduleItem, program: Any, outputs: list[Any]) -> None:
        raise NotImplementedError

    def bind(self, node: Node, buffer: Any) -> None:
        raise NotImplementedError

    def read(self) -> None:
        """A tensor's data is being read on the host."""
        raise NotImplementedError

    def check(self, flag: Any, message: str) -> None:
        """A check's flag (`Op.CHECK`), computed into `flag`, is read after the launches."""
        raise NotImplementedError


class _ThreadState(threading.local):
    """What belongs to one thread: the recording in progress (and the state to realize with its next
    realize, `schedule.realize_with_next`)."""

    recorder: Recorder | None = None


_thread = _ThreadState()


@contextmanager
def recording(recorder: Recorder) -> Iterator[None]:
    """Report every launch, buffer binding and host read of this thread to `recorder` while the block runs."""
    outer, _thread.recorder = _thread.recorder, recorder
    try:
        yield
    finally:
        _thread.recorder = outer


def is_recording() -> bool:
    return _thread.recorder is not None


def current_recorder() -> Recorder | None:
    """The recorder this thread reports to (see `recording`), if any: one that records inside another passes
    on what is not its own."""
    return _thread.recorder


def check_read() -> None:
    """Called before a tensor's data is read on the host: a recorded call cannot replay a read."""
    if (recorder := _thread.recorder) is not None:
        recorder.read()


def _bind(node: Node, buffer: Any, recorder: Recorder | None) -> None:
    node.become_buffer(buffer)
    if recorder is not None:
        recorder.bind(node, buffer)


def run(items: Schedule) -> None:
    """Launch every item in order; each output node becomes a buffer.

    The list is emptied as it runs. Once the last kernel that reads an intermediate buffer has run,
    nothing references that buffer any more (its consumers dropped their sources when they became
    buffers), so its memory goes back to the device's pool in time for the kernels after it: a
    schedule reuses the memory of its dead intermediates. Reuse is safe on a GPU too, because the
    kernels of a schedule run in order on one stream.
    """
    programs = _programs(items)
    if dump.directory() is not None:
        dump.programs_ready(items, [p for p, _ in programs])
    level, recorder, validate, saving = getenv("LT_DEBUG"), _thread.recorder, getenv("LT_VALIDATE"), dump.saving_inputs()
    profiled = profiling.active()
    if not (level or validate or saving or profiled) and recorder is None \
            and _run_batched(items, [p for p, _ in programs]):
        return
    items.reverse()
    programs.reverse()
    while items:
        item, (program, compiled) = items.pop(), programs.pop()
        device = get_device(item.device)
        outs = [allocate(device, n) for n in item.outputs]
        if recorder is not None:
            recorder.launch(item, program, outs)
        if saving:
            dump.launch_inputs(item)
        seconds = launch(program, [*(b.ptr for b in outs), *(n.buffer.ptr for n in item.inputs)], item.params,
                         level or profiled, device, lambda item=item: item.origin)
        if profiled:
            profiling.record("launch", item.kernel, item.device, item.origin, seconds)
        if level:
            debug_line(level, item.kernel, item.device, item.origin, program, seconds, compiled)
        if validate:
            _validate(item, outs)
        for node, buffer in zip(item.outputs, outs):
            _bind(node, buffer, recorder)


def _validate(item: ScheduleItem, outs: list[Buffer]) -> None:
    """`LT_VALIDATE=1`: the kernel's outputs against the reference interpreter's (`kernels/reference.py`) on the
    same inputs; a mismatch raises KernelError naming the kernel, the user lines and the dump folder."""
    want = [np.zeros(b.size, reference.storage_type(b.dtype)) for b in outs]
    reference.run(item.kernel, [*want, *(n.buffer.numpy() for n in item.inputs)], item.params)
    for k, (buffer, expected) in enumerate(zip(outs, want)):
        error, wrong = reference.mismatch(buffer.numpy(), expected, buffer.dtype)
        if wrong:
            folder = dump.kernel_folder(item.kernel.name)
            kept = f"its dump is {folder}" if folder is not None else "run with LT_DUMP_DIR=DIR to dump it"
            raise KernelError(f"LT_VALIDATE: the kernel {item.kernel.name} for the op at {item.origin} disagrees with "
                              f"the reference interpreter in output {k} ({buffer.dtype.name}[{buffer.size}]): largest "
                              f"error {error:g}; {kept}, and `python -m lazytensor.replay` runs it alone")


def _programs(items: Schedule) -> list[tuple[Any, bool]]:
    """Each item's program, and whether it was compiled now. A schedule keeps its programs (`Schedule.programs`,
    by whether kernels are checked and on which devices they run, with the kernels they are for), so a structure
    seen before launches without looking each kernel up again."""
    key = (bounds.CHECK, *(get_device(item.device) for item in items))
    kernels = [item.kernel for item in items]
    if (known := items.programs.get(key)) is not None and known[0] == kernels:  # the same objects: no deep compare
        return [(p, False) for p in known[1]]
    _compile_new(items)
    programs = [_compiled(get_device(item.device), item, items.changed) for item in items]
    items.programs[key] = (kernels, [p for p, _ in programs])
    return programs


def _compile_new(items: Schedule) -> None:
    """Compile the schedule's new kernels before any runs, side by side where the device can (the first step
    of a model brings dozens); counted in the stats here, found compiled when each launches."""
    by_device: dict[str, list[Any]] = {}
    for item in items:
        by_device.setdefault(item.device, []).append(item.kernel)
    for name, kernels in by_device.items():
        t0 = time.perf_counter()
        device = get_device(name)
        if compiled := device.compile_all(kernels, items.changed):
            _stats.kernels_compiled += len(compiled)
            _stats.compile_seconds += time.perf_counter() - t0
            new = {id(k) for k in compiled}
            for item in items:
                if id(item.kernel) in new:
                    new.discard(id(item.kernel))
                    _report_compile(item, device.compile(item.kernel)[0], t0)


def _report_compile(item: ScheduleItem, program: Any, start: float | None = None) -> None:
    """Tell the stats, the recompile log, and the profile in force if any, that `item`'s kernel compiled (from
    `start`)."""
    generic_over = getattr(program, "generic_over", None)  # a CPU program's (`kernels/symbolic.py`)
    _stats.kernels_generic += generic_over is not None
    recompiles.kernel_compiled(item.kernel.name, item.device, item.outputs, item.inputs, item.origin,
                               program.compile_seconds, generic_over)
    if profiling.active():
        profiling.record("compile", item.kernel, item.device, item.origin, program.compile_seconds, start)


def _compiled(device: Any, item: ScheduleItem, changed: frozenset[int]) -> tuple[Any, bool]:
    """The item's program, and whether it was compiled now (counted in the stats). `changed` as `_compile_new`
    gave it: a kernel whose compile failed there fails here the same way, naming its ops, rather than compiling
    as something else (a generic kernel's failure would otherwise come back as a program for one size)."""
    try:
        program, compiled = device.compile(item.kernel, changed)
    except Exception as e:  # the backend's error, restated in the user's terms
        lines = sorted({n.origin for out in item.outputs for n in region(out, set(item.inputs))})
        folder = dump.kernel_folder(item.kernel.name) or dump.failed_kernel(item)
        raise KernelError(f"compiling the kernel {item.kernel.name} for the ops at {', '.join(lines)} failed: {e}\n"
                          f"{item.kernel}\nIts kernel IR and metadata are in {folder} (for a bug report; `python -m "
                          "lazytensor.replay` runs it alone)") from e
    if compiled:
        _stats.kernels_compiled += 1
        _stats.compile_seconds += program.compile_seconds
        _report_compile(item, program)
    return program, compiled


# (programs, each one's buffer positions, table size) -> the device's batch of them
_batches: dict[tuple, Any] = {}


def _table(calls: list[tuple[Sequence[Any], Sequence[Any]]]) -> tuple[list[tuple[Any, bool]], list[tuple[int, ...]]]:
    """The buffer table of a batch of calls, each given as its outputs and inputs (nodes, or their positions in a
    plan): each call's outputs, then the inputs no call before wrote, as (output or input, whether it is an
    output); and each call's buffers by position in it."""
    table: list[tuple[Any, bool]] = []
    slot: dict[Any, int] = {}
    positions = []
    for outputs, inputs in calls:
        for n in outputs:
            slot[n] = len(table)
            table.append((n, True))
        for n in inputs:
            if n not in slot:
                slot[n] = len(table)
                table.append((n, False))
        positions.append(tuple(slot[n] for n in (*outputs, *inputs)))
    return table, positions


def _batch(device: Device, programs: list[Any], positions: list[tuple[int, ...]], table_size: int,
           params: list[list]) -> Any:
    """The device's batch of `programs` on a table of `table_size` buffers, each program's at `positions`
    (kept: a structure seen before finds it)."""
    key = (tuple(map(id, programs)), tuple(positions), table_size)
    if (batch := _batches.get(key)) is None:
        batch = _batches[key] = device.batch(list(zip(programs, positions, params)), table_size)
        if len(_batches) > SCHEDULE_CACHE_SIZE:
            del _batches[next(iter(_batches))]
    return batch


def _run_batched(items: Schedule, programs: list[Any]) -> bool:
    """Launch the items, whose programs are `programs`, as one batch (emptying the list) where their device
    batches kernels and their outputs fit in BATCH_MAX_BYTES; else launch nothing and return False."""
    if len(items) < 2 or not (device := get_device(items[0].device)).batches \
            or any(item.device != items[0].device for item in items) \
            or sum(n.numel * n.dtype.itemsize for item in items for n in item.outputs) > BATCH_MAX_BYTES:
        return False
    table, positions = _table([(item.outputs, item.inputs) for item in items])
    buffers = [allocate(device, n) if written else n.buffer for n, written in table]
    batch = _batch(device, programs, positions, len(table), [item.params for item in items])
    launch_batch(batch, [b.ptr for b in buffers], {k: item.params for k, item in enumerate(items) if item.params},
                 len(items), lambda k: items[k].origin)
    for (n, written), buffer in zip(table, buffers):
        if written:
            _bind(n, buffer, None)
    items.clear()
    return True


class _Launcher:
    """How a cached schedule's kernels, once compiled, launch on a graph of its structure (`Planned.nodes`),
    without a `Schedule`: its programs (each through its device's direct call of it where there is one,
    `Device.direct`), and where each one's buffers and scalars are among the nodes. Several kernels are one batch
    on a device that batches them, else launched one after another; either way their outputs fit in
    BATCH_MAX_BYTES, as they all live until the last kernel ran. Made for a checking mode (`bounds.CHECK`) and a
    device.

    `run(planned)` launches: `walk`, a few list look-ups per buffer; a launcher of one kernel its device calls
    directly that ran WRITE_OUT_AFTER times then runs through Python written out for its plan (`_written`), the
    look-ups done once: a third of the walk's time, but writing it costs as many walks as WRITE_OUT_AFTER, so only
    a plan launched that often (an eager loop's) pays for it."""

    __slots__ = ("batch", "calls", "checked", "device", "held_bytes", "left", "run", "scalars", "slots")

    def __init__(self, device: Device, programs: list[Any], entries: list[tuple[Any, list[int], list[int], list[int]]],
                 nodes: list[Node]):
        self.device, self.checked = device, bounds.CHECK
        self.scalars = [(k, ps) for k, (_, _, _, ps) in enumerate(entries) if ps]
        table, positions = _table([(outs, ins) for _, outs, ins, _ in entries])
        # each buffer of the table: its node's position, and where the kernels write it, how to allocate it
        self.slots = [(p, device.allocator(nodes[p].dtype, nodes[p].numel) if written else None) for p, written in table]
        # what its outputs hold till the last kernel ran, where there are several (BATCH_MAX_BYTES bounds it)
        self.held_bytes = sum(nodes[p].numel * nodes[p].dtype.itemsize for p, written in table if written) \
            if len(entries) > 1 else 0
        self.batch = _batch(device, programs, positions, len(table), [[nodes[p].arg for p in ps] for *_, ps in entries]) \
            if len(entries) > 1 and device.batches else None
        # each program's call (direct where the device has one, unless they run as a batch) with its buffers' places
        # in the table (None where they are the table, in order: a kernel that reads one buffer twice, `solve(a, a)`,
        # has it once there) and its scalars' positions among the nodes
        direct = [device.direct(program, len(pos)) if self.batch is None else None
                  for program, pos in zip(programs, positions)]
        self.calls = [(call or program, None if pos == tuple(range(len(table))) else pos, ps)
                      for program, call, pos, (_, _, _, ps) in zip(programs, direct, positions, entries)]
        # the walks left before it is written out, where it is (a direct call of one kernel)
        self.left, self.run = WRITE_OUT_AFTER if direct == [self.calls[0][0]] else None, self.walk

    def walk(self, planned: Planned) -> None:
        nodes, buffers, ptrs = planned.nodes, [], []
        try:
            for p, allocate in self.slots:
                buffer = nodes[p].buffer if allocate is None else allocate()
                buffers.append(buffer)
                ptrs.append(buffer.ptr)
        except MemoryError as e:
            raise _no_memory(e, nodes[p]) from None
        if self.batch is not None:
            launch_batch(self.batch, ptrs, {k: [nodes[p].arg for p in ps] for k, ps in self.scalars},
                         len(self.calls), lambda k: _origin(planned, k))
        else:
            for k, (call, pos, ps) in enumerate(self.calls):
                launch(call, ptrs if pos is None else [ptrs[i] for i in pos], [nodes[p].arg for p in ps], 0,
                       self.device, lambda k=k: _origin(planned, k))
        for (p, allocate), buffer in zip(self.slots, buffers):
            if allocate is not None:
                nodes[p].become_buffer(buffer)
        if self.left is not None:
            self.left -= 1
            if not self.left:
                self.run = _written(self, planned.plan.entries[0])


WRITE_OUT_AFTER = 256


def _written(launcher: _Launcher, entry: tuple[Any, list[int], list[int], list[int]]) -> Callable[[Planned], None]:
    """`launcher.walk` written out for its plan of one kernel (`entry`: the kernel, its outputs', inputs' and
    scalars' positions among the nodes) as Python source, one statement per buffer: what it allocates, where
    each address and scalar comes from, depend on the plan only."""
    (call, _, _), = launcher.calls
    _, outs, ins, ps = entry
    consts: dict[str, Any] = {"call": call, "stats": _stats, "perf_counter": time.perf_counter, "no_memory": _no_memory}
    code = ["def launch(planned):", "    nodes = planned.nodes"]
    allocators = dict(launcher.slots)
    for k, p in enumerate(outs):
        consts[f"A{k}"] = allocators[p]
        code += ["    try:", f"        b{k} = A{k}()", "    except MemoryError as e:",
                 f"        raise no_memory(e, nodes[{p}]) from None"]
    addresses = [*(f"b{k}.ptr" for k in range(len(outs))), *(f"nodes[{p}].buffer.ptr" for p in ins)]
    code += ["    t0 = perf_counter()",
             f"    call(({', '.join(addresses)},), ({''.join(f'nodes[{p}].arg, ' for p in ps)}))",
             "    stats.run_seconds += perf_counter() - t0",
             "    stats.kernels_launched += 1"]
    code += [f"    nodes[{p}].become_buffer(b{k})" for k, p in enumerate(outs)]
    # the source holds positions and names only: every value it uses is a constant passed in `consts`
    exec("\n".join(code), consts)  # noqa: S102
    return consts["launch"]


def _origin(planned: Planned, k: int) -> str:
    """Where the user wrote the op(s) kernel `k` of a plan computes (`ScheduleItem.origin`)."""
    return ", ".join(dict.fromkeys(planned.nodes[o].origin for o in planned.plan.entries[k][1]))


def _launcher(planned: Planned) -> _Launcher | None:
    """How the plan launches without a `Schedule` (made once per plan, checking mode and device; the last one made
    or used found first), or None where it cannot: kernels not compiled yet (the first realize of a structure
    compiles them, through `run`), on several devices, or several whose outputs pass BATCH_MAX_BYTES (launched
    through `run`, which gives each intermediate's memory back once its last reader ran)."""
    cached, nodes = planned.plan, planned.nodes
    if not cached.entries:
        return None
    device = get_device(nodes[cached.entries[0][1][0]].device)
    if (launcher := cached.launcher) is None or launcher.device is not device or launcher.checked != bounds.CHECK:
        if (launcher := cached.launchers.get(key := (bounds.CHECK, device))) is None:
            if any(nodes[outs[0]].device != device.name for _, outs, _, _ in cached.entries):
                return None
            known = cached.programs.get((bounds.CHECK, *(device for _ in cached.entries)))
            if known is None or any(k is not entry[0] for k, entry in zip(known[0], cached.entries)):
                return None  # not compiled, or compiled for other kernels than the plan's
            launcher = cached.launchers[key] = _Launcher(device, known[1], cached.entries, nodes)
        cached.launcher = launcher
    return launcher if launcher.held_bytes <= BATCH_MAX_BYTES else None


_WATCHING = ("LT_DEBUG", "LT_VALIDATE", "LT_DUMP_DIR")


def _watched() -> bool:
    """Whether launches are watched one by one (`LT_DEBUG`, `LT_VALIDATE`, a profile) or dumped (`LT_DUMP_DIR`, a
    `dump_to` block): then a realize runs through `run`, which does that. The flags are parsed only where one is
    set."""
    if profiling.active():
        return True
    if any_set(_WATCHING):
        return bool(getenv("LT_DEBUG") or getenv("LT_VALIDATE")) or dump.directory() is not None
    return dump.blocks_open()


def realize_nodes(*nodes: Node) -> None:
    """Compute every node in one schedule, with this thread's pending state (`realize_with_next`): shared
    work runs once. With no nodes, it computes only the pending state, if any."""
    with realizing:
        planned = plan(*nodes)
        requested = planned.requested
        if not requested:
            return
        _stats.realizes += 1
        _stats.schedule_seconds += planned.plan_seconds
        if made := planned.made is not None:  # else nothing was lowered
            _stats.lower_seconds += planned.lower_seconds
        recorder = _thread.recorder
        if made or recorder is not None or _watched() or (launcher := _launcher(planned)) is None:
            items = planned.schedule()
            if dump.directory() is not None:
                dump.schedule_run(items, nodes)
            planned.nodes = []  # the run gives each intermediate's memory back once its last reader ran
            run(items)
            aliases = items.aliases
        else:
            launcher.run(planned)
            aliases = [(planned.nodes[a], planned.nodes[b]) for a, b in planned.plan.aliases] \
                if planned.plan.aliases else ()
        # Only once it ran: a realize that failed or was interrupted (Ctrl-C) leaves the state pending.
        forget_pending(requested)
        for node, store in zip(requested, planned.stores):  # each one's storage, found before the run
            if node.op is not _BUFFER:
                _bind(node, store.buffer, recorder)
        for node, copy in aliases:
            if node.op is not _BUFFER:
                _bind(node, copy.buffer, recorder)
        for flag, message in planned.checks:
            if recorder is not None:
                recorder.check(flag.buffer, message)
            raise_if(flag.buffer, message)


def compute_stale(*tensors: Any) -> None:
    """Called before state (parameters, optimizer state, running statistics) is updated again: if one of
    `tensors` still holds a pending value (`schedule.realize_with_next`) that no schedule has computed since
    its last update, compute this thread's pending state now. A training loop that reads no result every
    step would otherwise build each step's graph on the last one's, without bound, and meet kernels of a new
    structure at each realize; so a step's update waits for one step at most."""
    if any(is_pending(t) for t in tensors):
        realize_nodes()


def raise_if(flag: Any, message: str) -> None:
    """Raise IndexError(message) where the buffer of a check's flag (`Op.CHECK`) holds true."""
    if flag.numpy()[0]:
        raise IndexError(message)
