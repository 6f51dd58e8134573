"""Why the kernels are what they are: `lt.explain` and `lt.draw`.

`explain(*tensors)` plans what `realize(*tensors)` would run (afresh, with `schedule.Trace`, so nothing is
looked up in the schedule cache, compiled or run) and says, for each kernel, the graph nodes fused into it with
the user's line of each, why each buffer it writes exists (the fusion rule of `lazytensor/schedule.py` that made
it one: `schedule.Reason`), and why it and the kernel after it are not one kernel. `draw` writes the same graph
as Graphviz DOT, each kernel a cluster.
"""
from __future__ import annotations

import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from . import realize
from .graph import Node, Op, region, toposort
from .kernels.ir import Contraction
from .schedule import _OWN_KERNEL, Reason, Schedule, ScheduleItem, Trace, schedule

__all__ = ["Explanation", "KernelPlan", "Step", "Written", "draw", "explain"]


@dataclass(frozen=True)
class Step:
    """A graph node a kernel computes: its op as `describe` spells it, and the user's line that made it."""

    op: str
    origin: str


@dataclass(frozen=True)
class Written:
    """A buffer a kernel writes: the node it holds, and why it is written to memory at all."""

    node: str
    origin: str
    reason: Reason


@dataclass(frozen=True)
class KernelPlan:
    """One kernel of the schedule: its name and device, the nodes fused into it (outputs first), what it
    writes and why, what it reads (buffers, or the output of an earlier kernel `[k]`), and why it is not one
    kernel with the next (None for the last)."""

    index: int
    name: str
    device: str
    computes: tuple[Step, ...]
    writes: tuple[Written, ...]
    reads: tuple[str, ...]
    apart_from_next: str | None

    def __str__(self) -> str:
        lines = [f"[{self.index}] {self.name} on {self.device}"]
        lines += [f"    computes {s.op:<44} <- {s.origin}" for s in self.computes]
        lines += [f"    writes   {w.node}: {w.reason.text}" + (f" (rule {w.reason.rule})" if w.reason.rule else "")
                  for w in self.writes]
        lines += [f"    reads    {r}" for r in self.reads]
        if self.apart_from_next is not None:
            lines.append(f"    not one kernel with [{self.index + 1}]: {self.apart_from_next}")
        return "\n".join(lines)


@dataclass(frozen=True)
class Explanation:
    """What `explain` found: the kernels realize would run, in order."""

    kernels: tuple[KernelPlan, ...]

    def __str__(self) -> str:
        if not self.kernels:
            return "nothing to compute: every tensor is realized"
        return "\n".join([f"{len(self.kernels)} kernel(s)", *map(str, self.kernels)])


def describe(node: Node) -> str:
    """A node as one line: its op (with the ALU op, reduction or view it is), dtype and shape."""
    arg = node.arg
    if node.op is Op.ALU:
        op = arg.label
    elif node.op is Op.REDUCE:
        op = f"{arg[0].value} over axes {list(arg[1])}"
    elif node.op in (Op.CONST, Op.SCALAR):
        op = f"{node.op.value} {arg!r}" if node.op is Op.CONST else "scalar (a kernel parameter)"
    else:
        op = node.op.value
    return f"{op} {node.dtype.name}{list(node.shape)}"


def _plan(tensors: tuple[Any, ...]) -> tuple[Schedule, Trace]:
    trace = Trace()
    with realize.realizing:  # a realize in another thread must not rewrite the graph while it is read
        return schedule(*(t.node for t in tensors), trace=trace), trace


def _fused(item: ScheduleItem, trace: Trace) -> list[Node]:
    """The nodes `item`'s kernel computes, each after its sources (as a program reads): what its outputs'
    regions reach short of buffers and other kernels' outputs."""
    inside = {id(n) for out in item.outputs for n in region(out, trace.points)}
    return toposort(item.outputs, lambda n: [s for s in n.srcs if id(s) in inside])


def _apart(k: int, items: Schedule, trace: Trace) -> str:
    """Why kernels k and k + 1 are not one kernel (rule 7 and what overrides it)."""
    a, b = items[k], items[k + 1]
    if a.device != b.device:
        return f"they run on different devices ({a.device}, {b.device})"
    for i, item in ((k, a), (k + 1, b)):
        if isinstance(item.kernel, Contraction):
            return f"[{i}] is a contraction, which its template computes in a kernel of its own (rule 5)"
        if (own := next((n.op.value for n in item.outputs if n.op in _OWN_KERNEL), None)) is not None:
            return f"[{i}] is a {own}, a kernel of its own kind"
    outputs = {id(n) for n in a.outputs}
    reads_a = [n for n in b.inputs if id(n) in outputs]
    if any(set(a.outputs) | set(b.outputs) <= set(group) for group in trace.split):
        return "one kernel computing both would compute a reduction more than once"
    if a.outputs[0].shape != b.outputs[0].shape:
        fed = f"; [{k + 1}] reads what [{k}] writes" if reads_a else ""
        return (f"their outputs have different shapes, {list(a.outputs[0].shape)} and {list(b.outputs[0].shape)}: "
                f"only outputs of one shape share a kernel (rule 7){fed}")
    if any(trace.reasons.get(n) is Reason.CONTIGUOUS for n in reads_a):
        return f"[{k + 1}] reads the contiguous() that [{k}] writes: a fusion barrier"
    shared_a = set().union(*(trace.regions[n].shared for n in a.outputs))
    shared_b = set().union(*(trace.regions[n].shared for n in b.outputs))
    if not reads_a and not shared_a & shared_b:
        return ("they read no common buffer and compute no common node of more than one element: only kernels "
                "whose work overlaps share one (rule 7)")
    return (f"a kernel that needs [{k}]'s results runs before one that [{k + 1}] needs, so no one kernel could "
            "compute both in order (rule 7)")


def explain(*tensors: Any, file: TextIO | None = None) -> Explanation:
    """Say what `realize(*tensors)` would run and why, without running it: print it (to `file`, stdout by
    default) and return it as data. For each kernel: the graph nodes fused into it and the user line of each,
    why each buffer it writes is one (requested, read by two kernels, broadcast along an outer axis, a
    contraction's boundary, the region cap, `contiguous()`, a live tensor's data, ...), and why it and the next
    kernel are not one."""
    out = explained(*_plan(tensors))
    print(out, file=file if file is not None else sys.stdout)
    return out


def explained(items: Schedule, trace: Trace) -> Explanation:
    """The account of a schedule planned with `trace` (`schedule.schedule(..., trace=...)`)."""
    producer = {id(n): k for k, item in enumerate(items) for n in item.outputs}
    kernels = []
    for k, item in enumerate(items):
        reads = tuple(f"{describe(n)} from [{producer[id(n)]}]" if id(n) in producer
                      else f"{describe(n)} made at {n.origin}" for n in item.inputs)
        kernels.append(KernelPlan(
            k, item.kernel.name, item.device,
            tuple(Step(describe(n), n.origin) for n in _fused(item, trace)),
            tuple(Written(describe(n), n.origin, trace.reasons[n]) for n in item.outputs),
            reads, _apart(k, items, trace) if k + 1 < len(items) else None))
    return Explanation(tuple(kernels))


def _dot_text(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')


def draw(*tensors: Any, path: str | Path) -> list[Path]:
    """Write the graph realize(*tensors) would compute to `path` as Graphviz DOT: every node with its op and
    user line, each kernel a cluster labelled with its name (a node that several kernels compute appears in
    each), buffers outside them, the nodes written to memory outlined twice. Where Graphviz's `dot` program is
    installed (an optional system package), an SVG beside it too (`path` with the suffix .svg). Returns the
    files written."""
    items, trace = _plan(tensors)
    path = Path(path)
    lines = ["digraph lazytensor {", "  node [shape=box, fontname=monospace, fontsize=10];"]
    home: dict[int, str] = {}  # a written node or buffer: its one drawn name

    def name(n: Node, k: int) -> str:
        return home.get(id(n), f"k{k}_n{id(n):x}")

    def box(n: Node, label_name: str, extra: str = "") -> str:
        return f'  {label_name} [label="{_dot_text(describe(n))}\\n{_dot_text(n.origin)}"{extra}];'

    for k, item in enumerate(items):
        for n in item.outputs:
            home[id(n)] = f"k{k}_n{id(n):x}"
    edges: list[str] = []
    for k, item in enumerate(items):
        lines += [f"  subgraph cluster_{k} {{", f'    label="[{k}] {_dot_text(item.kernel.name)}";']
        for n in _fused(item, trace):
            written = ", peripheries=2" if n in item.outputs else ""
            lines.append("  " + box(n, name(n, k), written))
            for s in n.srcs:
                if s.realized and id(s) not in home:
                    home[id(s)] = f"buf_{id(s):x}"
                    edges.append(box(s, home[id(s)], ", style=filled, fillcolor=lightgrey"))
                edges.append(f"  {name(s, k)} -> {name(n, k)};")
        lines.append("  }")
    lines += [*edges, "}"]
    path.write_text("\n".join(lines) + "\n")
    written = [path]
    if (dot := shutil.which("dot")) is not None:
        svg = path.with_suffix(".svg")
        subprocess.run([dot, "-Tsvg", str(path), "-o", str(svg)], check=True, capture_output=True)
        written.append(svg)
    return written
