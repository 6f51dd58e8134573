"""Program dumps: every schedule and kernel lazytensor runs, in a folder to attach to a bug report.

`LT_DUMP_DIR=DIR` (read at each realize), or `with lt.dump_to(DIR):` for a block, writes for every schedule a
realize runs (once per schedule structure) and every kernel in it:

- `DIR/index.json`: one entry per kernel: its name, device, backend, files, the user lines (file:line) of every
  graph node fused into it, and the schedules it belongs to;
- `DIR/<kernel>/`: the kernel IR (`kernel.txt`, and `kernel.json`, which `python -m lazytensor.replay` reads:
  `kernels/ir_json.py`); what the backend made of it: on the CPU the LLVM IR before and after optimization
  (`llvm.ll`, `llvm-optimized.ll`) and the assembly (`assembly.s`), on a GPU the Triton source (`*.triton.py`)
  and what Triton compiled it to (`*.ttir`, `*.ttgir`, `*.llir`, `*.ptx`, `*.cubin`); its buffers' dtypes, sizes
  and shapes and its scalar parameters (`meta.json`); with `LT_DUMP_INPUTS=1`, the input buffers and parameters
  of its first launch (`inputs.npz`);
- `DIR/schedule-<n>.txt`: the graph before fusion, each node with its user line, then the kernels after, with
  the rule that made every buffer written to memory one (`lt.explain`'s account).

Writing a dump only reads what the realize computes, so it never changes results; a kernel's IR and metadata are
written before it compiles, so the dump of a realize that fails to compile holds the kernel that failed.
"""
from __future__ import annotations

import json
import os
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from .explain import describe, explained
from .graph import Node, toposort
from .helpers import env_value, getenv
from .kernels import ir_json
from .schedule import Schedule, ScheduleItem, Trace, schedule

_chosen: list[Path] = []  # the folders of the `dump_to` blocks in force, innermost last
_lock = threading.Lock()  # one writer at a time: realizes from several threads share a folder's index


def directory() -> Path | None:
    """The folder dumps go to now: the innermost `dump_to` block's, else `LT_DUMP_DIR`'s, else None."""
    if _chosen:
        return _chosen[-1]
    return env_value("LT_DUMP_DIR", _folder_of)


def blocks_open() -> bool:
    """Whether a `dump_to` block is in force (`directory()` without reading the environment)."""
    return bool(_chosen)


def _folder_of(text: str) -> Path | None:
    return Path(text) if text else None


@contextmanager
def dump_to(path: str | os.PathLike) -> Iterator[Path]:
    """Dump every schedule and kernel run inside the block to the folder `path` (see the module docstring)."""
    folder = Path(path)
    folder.mkdir(parents=True, exist_ok=True)
    _chosen.append(folder)
    try:
        yield folder
    finally:
        _chosen.remove(folder)


class _Folder:
    """What one dump folder holds so far: the schedules by their kernels, and the index's entries by kernel."""

    def __init__(self, path: Path):
        self.path = path
        self.schedules: dict[tuple[str, ...], int] = {}
        self.entries: dict[str, dict[str, Any]] = {}
        self.compiled: set[str] = set()  # the kernels whose programs' files are written
        self.inputs: set[str] = set()  # the kernels whose first launch's inputs are written

    def write_index(self) -> None:
        tmp = self.path / "index.json.tmp"
        tmp.write_text(json.dumps({"kernels": list(self.entries.values())}, indent=1))
        tmp.replace(self.path / "index.json")  # whole or not at all, for a reader while a realize runs


_folders: dict[Path, _Folder] = {}


def _folder(path: Path) -> _Folder:
    if (folder := _folders.get(path)) is None:
        path.mkdir(parents=True, exist_ok=True)
        folder = _folders[path] = _Folder(path)
    return folder


def kernel_folder(name: str) -> Path | None:
    """Where the current dump holds the kernel called `name`, if it does."""
    path = directory()
    return None if path is None or not (path / name).is_dir() else path / name


def _backend(device: str) -> str:
    return "llvm" if device == "cpu" else "triton"


def _graph_text(items: Schedule) -> list[str]:
    """The graph before fusion: every node the schedule computes or reads, sources first, with its line."""
    number: dict[int, int] = {}
    lines = []
    for n in toposort([n for item in items for n in item.outputs]):
        number[id(n)] = len(number)
        srcs = " ".join(f"%{number[id(s)]}" for s in n.srcs)
        lines.append(f"%{number[id(n)]} = {describe(n)}{' (' + srcs + ')' if srcs else ''}  <- {n.origin}")
    return lines


def schedule_run(items: Schedule, roots: tuple[Node, ...]) -> None:
    """Dump the schedule `items` that a realize of `roots` runs, and its kernels' IR and metadata, where a dump
    is asked for (the schedule once per folder, each kernel once)."""
    path = directory()
    if path is None or not items:
        return
    with _lock:
        folder = _folder(path)
        names = tuple(item.kernel.name for item in items)
        number = folder.schedules.get(names)
        new = [item for item in items if item.kernel.name not in folder.entries]
        if number is not None and not new:
            return
        trace = Trace()  # the same kernels, planned again for the rules behind them
        account = explained(schedule(*roots, trace=trace), trace)
        if number is None:
            number = folder.schedules[names] = len(folder.schedules)
            text = ["# the graph before fusion", *_graph_text(items), "", "# the kernels after", str(account)]
            (path / f"schedule-{number}.txt").write_text("\n".join(text) + "\n")
        for item, kernel in zip(items, account.kernels):
            name = item.kernel.name
            if name not in folder.entries:
                _write_kernel(path / name, item)
                folder.entries[name] = {"name": name, "device": item.device, "backend": _backend(item.device),
                                        "files": [], "user_lines": sorted({s.origin for s in kernel.computes}),
                                        "schedules": []}
            entry = folder.entries[name]
            if number not in entry["schedules"]:
                entry["schedules"].append(number)
            entry["files"] = sorted(p.name for p in (path / name).iterdir())
        folder.write_index()


def _write_kernel(path: Path, item: ScheduleItem) -> None:
    path.mkdir(parents=True, exist_ok=True)
    kernel = item.kernel
    (path / "kernel.txt").write_text(f"# for the op at {item.origin} on {item.device}\n{kernel}\n")
    (path / "kernel.json").write_text(ir_json.dumps(kernel))
    slots = [*item.outputs, *item.inputs]
    plain = [k for k, p in enumerate(kernel.buffers) if not p.scratch]
    shapes = dict(zip(plain, (list(n.shape) for n in slots)))
    meta = {"name": kernel.name, "device": item.device, "backend": _backend(item.device), "origin": item.origin,
            "buffers": [{"slot": k, "dtype": p.dtype.name, "size": p.size, "output": p.output,
                         "scratch": p.scratch, "shape": shapes.get(k)} for k, p in enumerate(kernel.buffers)],
            "params": [{"dtype": dt.name, "value": v} for dt, v in zip(kernel.params, item.params)]}
    (path / "meta.json").write_text(json.dumps(meta, indent=1))


def failed_kernel(item: ScheduleItem) -> Path:
    """Dump a kernel that failed to compile, outside any dump in force: its IR and metadata, in a new folder
    under the system's temporary directory; returns the kernel's folder."""
    path = Path(tempfile.mkdtemp(prefix="lazytensor-failed-")) / item.kernel.name
    _write_kernel(path, item)
    return path


def programs_ready(items: Schedule, programs: list[Any]) -> None:
    """Add what the backend made of each kernel (its program) to the kernel's dumped folder, once."""
    with _lock:
        folder = _folder(directory())
        for item, program in zip(items, programs):
            name = item.kernel.name
            if name in folder.compiled or (entry := folder.entries.get(name)) is None:
                continue
            folder.compiled.add(name)
            for file, content in program.artifacts().items():
                if isinstance(content, bytes):
                    (folder.path / name / file).write_bytes(content)
                else:
                    (folder.path / name / file).write_text(content)
            entry["files"] = sorted(p.name for p in (folder.path / name).iterdir())
        folder.write_index()


def saving_inputs() -> bool:
    """Whether a realize must save its kernels' inputs (`LT_DUMP_INPUTS=1` while dumping): then it launches
    them one by one, not as a batch, to see each one's inputs before it runs."""
    return directory() is not None and bool(getenv("LT_DUMP_INPUTS"))


def launch_inputs(item: ScheduleItem) -> None:
    """Write the input buffers of the kernel's first launch (called just before it), where inputs are saved."""
    path = kernel_folder(item.kernel.name)
    if path is None or not getenv("LT_DUMP_INPUTS"):
        return
    with _lock:
        folder = _folder(path.parent)
        if item.kernel.name in folder.inputs:
            return
        folder.inputs.add(item.kernel.name)
        np.savez(path / "inputs.npz", **{f"input{k}": _bits(n.buffer.numpy()) for k, n in enumerate(item.inputs)})
        if (entry := folder.entries.get(item.kernel.name)) is not None:
            entry["files"] = sorted(p.name for p in path.iterdir())
            folder.write_index()


def _bits(array: np.ndarray) -> np.ndarray:
    """An array NumPy's own files hold: a 2-byte type of another library (bfloat16) as its bits."""
    return array.view(np.uint16) if array.dtype.itemsize == 2 and array.dtype.kind not in "fiu" else array
