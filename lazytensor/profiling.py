"""Where the time goes: `with lt.profile() as p:` records every kernel compiled and launched in the block.

`print(p)` is a table of the kernels by total time (compile and run): launches, compile time, run time, time per
launch, the bytes each launch moves (its buffers, read and written once) and the rate that achieves (GB/s, and
GFLOP/s for a contraction); `p.kernels()` gives the same rows as data and `p.events` every compile and launch.
`p.export_chrome_trace(path)` writes them as a Chrome trace (one event per compile and per launch, on the thread
that made it) that Perfetto (ui.perfetto.dev) and chrome://tracing open.

While a profile records, kernels launch one by one, each waited for (a GPU's launches are asynchronous), as under
`LT_DEBUG`, so every launch has its own time: the schedule's batching and the overlap of GPU work are off, and
the total is somewhat above an unprofiled run's.
"""
from __future__ import annotations

import json
import math
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .kernels.ir import Contraction


@dataclass(frozen=True)
class Event:
    """One compile or launch: its kind, kernel, device, the user line it is for, when it started
    (`time.perf_counter`) and how long it took, the bytes it moves and the floating-point ops it does (0 where
    not counted), and the thread."""

    kind: str  # "compile" or "launch"
    kernel: str
    device: str
    origin: str
    start: float
    seconds: float
    bytes: int
    flops: int
    thread: int


@dataclass(frozen=True)
class KernelRow:
    """A kernel's totals in a profile."""

    kernel: str
    device: str
    origin: str
    launches: int
    compile_seconds: float
    run_seconds: float
    bytes: int  # per launch
    flops: int  # per launch

    @property
    def total_seconds(self) -> float:
        return self.compile_seconds + self.run_seconds

    @property
    def gb_per_second(self) -> float:
        return self.bytes * self.launches / self.run_seconds / 1e9 if self.run_seconds else 0.0

    @property
    def gflop_per_second(self) -> float:
        return self.flops * self.launches / self.run_seconds / 1e9 if self.run_seconds else 0.0


@dataclass
class Profile:
    """The compiles and launches recorded by one `lt.profile()` block."""

    events: list[Event] = field(default_factory=list)

    def kernels(self) -> list[KernelRow]:
        """One row per kernel, by total time, longest first."""
        rows: dict[tuple[str, str], dict[str, Any]] = {}
        for e in self.events:
            row = rows.setdefault((e.kernel, e.device), {"origin": e.origin, "launches": 0, "compile": 0.0,
                                                         "run": 0.0, "bytes": e.bytes, "flops": e.flops})
            if e.kind == "compile":
                row["compile"] += e.seconds
            else:
                row["launches"] += 1
                row["run"] += e.seconds
        out = [KernelRow(name, device, r["origin"], r["launches"], r["compile"], r["run"], r["bytes"], r["flops"])
               for (name, device), r in rows.items()]
        return sorted(out, key=lambda r: -r.total_seconds)

    def __str__(self) -> str:
        rows = self.kernels()
        lines = [(f"{'kernel':<44} {'device':<7} {'launches':>8} {'compile ms':>10} {'run ms':>9} {'us/launch':>10} "
                 f"{'bytes':>10} {'GB/s':>7} {'GFLOP/s':>8}  user line")]
        for r in rows:
            per = r.run_seconds / r.launches * 1e6 if r.launches else math.nan
            flops = f"{r.gflop_per_second:8.1f}" if r.flops else f"{'':>8}"
            lines.append(f"{r.kernel:<44} {r.device:<7} {r.launches:>8} {r.compile_seconds * 1e3:>10.2f} "
                         f"{r.run_seconds * 1e3:>9.3f} {per:>10.1f} {r.bytes:>10} {r.gb_per_second:>7.2f} {flops}  "
                         f"{r.origin}")
        compiled = sum(r.compile_seconds for r in rows)
        ran = sum(r.run_seconds for r in rows)
        lines.append(f"{len(rows)} kernels, {sum(r.launches for r in rows)} launches: {compiled * 1e3:.2f} ms "
                     f"compiling, {ran * 1e3:.3f} ms running")
        return "\n".join(lines)

    def export_chrome_trace(self, path: str | Path) -> Path:
        """Write the events as a Chrome trace (JSON, times in microseconds) at `path`; returns the path."""
        t0 = min((e.start for e in self.events), default=0.0)
        trace = [{"name": e.kernel, "cat": e.kind, "ph": "X", "ts": (e.start - t0) * 1e6, "dur": e.seconds * 1e6,
                  "pid": 0, "tid": e.thread,
                  "args": {"device": e.device, "origin": e.origin, "bytes": e.bytes, "flops": e.flops}}
                 for e in self.events]
        path = Path(path)
        path.write_text(json.dumps({"traceEvents": trace, "displayTimeUnit": "ms"}))
        return path


_recording: list[Profile] = []  # the profiles of the blocks in force
_lock = threading.Lock()


@contextmanager
def profile() -> Iterator[Profile]:
    """Record every kernel compiled and launched inside the block (see the module docstring)."""
    p = Profile()
    with _lock:
        _recording.append(p)
    try:
        yield p
    finally:
        with _lock:
            _recording.remove(p)


def active() -> bool:
    """Whether a profile records now (then kernels launch one by one, each waited for)."""
    return bool(_recording)


def _work(kernel: Any) -> tuple[int, int]:
    """The bytes a launch of `kernel` moves (its buffers but scratch, each once) and a contraction's flops."""
    moved = sum(p.size * p.dtype.itemsize for p in kernel.buffers if not p.scratch)
    return moved, 2 * math.prod(kernel.sizes) if isinstance(kernel, Contraction) else 0


def record(kind: str, kernel: Any, device: str, origin: str, seconds: float, start: float | None = None) -> None:
    """Add a compile or launch of `kernel` that took `seconds` (ending now, unless `start` is given)."""
    moved, flops = _work(kernel)
    event = Event(kind, kernel.name, device, origin, time.perf_counter() - seconds if start is None else start,
                  seconds, moved, flops, threading.get_ident())
    with _lock:
        for p in _recording:
            p.events.append(event)
