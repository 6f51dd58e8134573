"""Run one dumped kernel alone: `python -m lazytensor.replay DIR/<kernel>`.

A kernel's dump folder (`lazytensor/dump.py`) is all it needs: the kernel IR (`kernel.json`), its buffers and
scalar parameters (`meta.json`), and its first launch's inputs where they were saved (`inputs.npz`; otherwise
random inputs of the dumped dtypes and sizes: floats from a normal distribution, integers in [0, 4), bools at
random). It compiles the kernel for the device asked for, runs it, runs the reference interpreter
(`kernels/reference.py`) on the same inputs, prints the largest error of each output, and exits 1 where one is
over `reference.MISMATCH_TOLERANCE` (2 where the inputs are not valid for the kernel). Options:

  --device cpu|cuda         where to run it (default: where it ran)
  --backend llvm|triton     the backend instead: llvm is the CPU's, triton a GPU's
  --repeat N                launch it N more times and print the time per launch
  --out FILE                save the outputs (output0, output1, ...) to FILE (.npz)
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from .kernels.dtype import DType

BACKENDS = {"llvm": "cpu", "triton": "cuda"}


def _random(size: int, dtype: DType, rng: np.random.Generator) -> np.ndarray:
    """Random contents of a buffer of `dtype`, as it holds them (bfloat16 as bits)."""
    from .kernels.dtype import bfloat16, bfloat16_bits
    from .kernels.reference import storage_type
    if dtype.kind == "b":
        return rng.random(size) < 0.5
    if dtype.is_int:
        return rng.integers(0, 4, size).astype(storage_type(dtype))
    values = rng.standard_normal(size)
    return bfloat16_bits(values.astype(np.float32)) if dtype == bfloat16 else values.astype(storage_type(dtype))


def replay(folder: Path, device_name: str | None = None, repeat: int = 0, out: Path | None = None) -> int:
    """Replay the kernel dumped in `folder` (see the module docstring); returns the exit status."""
    from .device import get_device
    from .kernels import ir_json, reference
    from .kernels.ir_json import DTYPES

    meta = json.loads((folder / "meta.json").read_text())
    kernel = ir_json.loads((folder / "kernel.json").read_text())
    slots = [p for p in meta["buffers"] if not p["scratch"]]
    outputs = [p for p in slots if p["output"]]
    params = [p["value"] for p in meta["params"]]
    saved = np.load(folder / "inputs.npz") if (folder / "inputs.npz").exists() else None
    rng = np.random.default_rng(0)
    inputs = [saved[f"input{k}"] if saved is not None else _random(p["size"], DTYPES[p["dtype"]], rng)
              for k, p in enumerate(slots[len(outputs):])]
    want = [np.zeros(p["size"], reference.storage_type(DTYPES[p["dtype"]])) for p in outputs]
    try:
        reference.run(kernel, [*want, *inputs], params)
    except (IndexError, ValueError) as e:
        print(f"the inputs are not valid for {kernel.name}: {e}", file=sys.stderr)
        return 2
    device = get_device(device_name or meta["device"])
    program, _ = device.compile(kernel)
    bufs = [device.alloc(DTYPES[p["dtype"]], p["size"]) for p in outputs]
    bufs += [device.from_numpy(a, DTYPES[p["dtype"]]) for a, p in zip(inputs, slots[len(outputs):])]
    ptrs = [b.ptr for b in bufs]
    program(ptrs, params)
    device.synchronize()
    got = [b.numpy() for b in bufs[:len(outputs)]]
    status = 0
    print(f"{kernel.name} on {device.name} ({'saved' if saved is not None else 'random'} inputs)")
    for k, (g, w, p) in enumerate(zip(got, want, outputs)):
        error, wrong = reference.mismatch(g, w, DTYPES[p["dtype"]])
        print(f"  output {k} {p['dtype']}[{p['size']}]: largest error {error:g} against the reference interpreter"
              f"{'  MISMATCH' if wrong else ''}")
        status |= wrong
    if repeat:
        t0 = time.perf_counter()
        for _ in range(repeat):
            program(ptrs, params)
        device.synchronize()
        print(f"  {(time.perf_counter() - t0) / repeat * 1e6:.1f} us per launch ({repeat} launches)")
    if out is not None:
        np.savez(out, **{f"output{k}": g for k, g in enumerate(got)})
    return status


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lazytensor.replay", description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", type=Path, help="a kernel's dump folder, DIR/<kernel>")
    parser.add_argument("--device", choices=["cpu", "cuda"])
    parser.add_argument("--backend", choices=sorted(BACKENDS))
    parser.add_argument("--repeat", type=int, default=0)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    device = args.device
    if args.backend is not None:
        if device is not None and device != BACKENDS[args.backend]:
            parser.error(f"--backend {args.backend} runs on {BACKENDS[args.backend]}, not {device}")
        device = BACKENDS[args.backend]
    return replay(args.folder, device, args.repeat, args.out)


if __name__ == "__main__":
    sys.exit(main())
