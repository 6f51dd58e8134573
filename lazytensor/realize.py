"""Run a schedule: allocate outputs, compile (or fetch from cache) and launch each kernel.

`LT_DEBUG=1` prints one line per launch (kernel, device, shapes, time);
`LT_DEBUG=2` adds the kernel IR; `LT_DEBUG=3` the LLVM IR; `LT_DEBUG=4` the
host assembly. Lines go to stderr.
"""
from __future__ import annotations

import sys
import time
import weakref
from dataclasses import dataclass, fields
from typing import Any

from .device import get_device
from .errors import KernelError
from .graph import Node
from .helpers import getenv
from .schedule import Schedule, ScheduleItem, schedule, storage


@dataclass
class Stats:
    """Counters since the process started (or the last `reset_stats()`)."""

    kernels_launched: int = 0
    kernels_compiled: int = 0
    realizes: int = 0
    compile_seconds: float = 0.0
    run_seconds: float = 0.0

    def as_dict(self) -> dict[str, float]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


_stats = Stats()


def stats() -> Stats:
    """Kernel counters: how many kernels were compiled and launched, and the time spent."""
    return _stats


def reset_stats() -> None:
    global _stats
    _stats = Stats()


def _debug(level: int, item: ScheduleItem, program, seconds: float, compiled: bool) -> None:
    k = item.kernel
    shapes = " ".join(f"b{i}:{b.dtype.name}[{b.size}]" for i, b in enumerate(k.buffers))
    note = f" (compiled in {program.compile_seconds * 1e3:.1f} ms)" if compiled else ""
    print(f"lt: {k.name:<48} {item.device:<6} {shapes}  {seconds * 1e6:9.1f} us{note}  <- {item.origin}",
          file=sys.stderr)
    if level >= 2:
        print(k, file=sys.stderr)
    if level >= 3:
        print(program.llvm_ir, file=sys.stderr)
    if level >= 4:
        print(program.assembly, file=sys.stderr)


def run(items: Schedule) -> None:
    """Launch every item in order; each output node becomes a buffer.

    The list is emptied as it runs. Once the last kernel that reads an intermediate buffer has run,
    nothing references that buffer any more (its consumers dropped their sources when they became
    buffers), so its memory goes back to the device's pool in time for the kernels after it: a
    schedule reuses the memory of its dead intermediates. Reuse is safe on a GPU too, because the
    kernels of a schedule run in order on one stream.
    """
    level = getenv("LT_DEBUG")  # GPU launches are asynchronous: time them only when asked
    items.reverse()
    while items:
        item = items.pop()
        device = get_device(item.device)
        try:
            program, compiled = device.compile(item.kernel)
        except Exception as e:  # the backend's error, restated in the user's terms
            raise KernelError(f"compiling the kernel for the op at {item.origin} failed: {e}\n"
                              f"{item.kernel}") from e
        if compiled:
            _stats.kernels_compiled += 1
            _stats.compile_seconds += program.compile_seconds
        outs = [device.alloc(n.dtype, n.numel) for n in item.outputs]
        if level:
            device.synchronize()
        t0 = time.perf_counter()
        program([*(b.ptr for b in outs), *(n.buffer.ptr for n in item.inputs)], item.params)
        if level:
            device.synchronize()
        seconds = time.perf_counter() - t0
        _stats.kernels_launched += 1
        _stats.run_seconds += seconds
        for node, buffer in zip(item.outputs, outs):
            node.become_buffer(buffer)
        if level:
            _debug(level, item, program, seconds, compiled)


# Tensors whose state update is pending (optimizer state, running statistics): {id: weakref}
_deferred: dict[int, weakref.ref] = {}


def realize_with_next(*tensors: Any) -> None:
    """Compute these tensors (their nodes at that time) in the next schedule that runs, whatever it is
    for. An optimizer step and a batch norm's running statistics update state lazily; realizing that
    state with what is realized next (the parameters, the loss) fuses the update into that schedule
    and keeps the state's graph from growing step after step."""
    for t in tensors:
        _deferred[id(t)] = weakref.ref(t)


def realize_nodes(*nodes: Node) -> None:
    """Compute every node in one schedule: shared work runs once."""
    if _deferred:
        pending = [t.node for r in _deferred.values() if (t := r()) is not None and not t.node.realized]
        _deferred.clear()
        nodes = (*nodes, *pending)
    stores = [storage(n) for n in nodes]  # before the run, which changes what shares whose buffer
    items = schedule(*nodes)
    _stats.realizes += 1
    run(items)
    for node, store in zip(nodes, stores):
        if not node.realized:
            node.become_buffer(store.buffer)
