"""The GPU benchmark: lazytensor's Triton backend against torch eager and torch.compile, in one run.

    python benchmarks/bench_gpu.py [--quick] [--json results.json] [--only softmax,matmul]

Workloads, on one CUDA GPU:
- `(x + y*z).sum()` on 2**26 float32, reported as a percentage of the device-to-device copy
  bandwidth measured in the same run (torch's `copy_` of 2**28 bytes);
- softmax and layernorm over the last axis of 8192x8192 float32;
- matmul float16 and bfloat16 at 4096 and 8192 (and float32 at 4096, exact: TF32 off on both sides);
- the launch overhead of a cached kernel: host time per `realize()` of a one-kernel graph of tiny tensors.

Targets: fused reductions at >= 85% of the copy bandwidth, softmax and layernorm no slower than
torch.compile, matmul >= 0.8x torch.matmul (cuBLAS), launch overhead under 20 us.

Every result is checked against torch eager's before it is timed. A time is the best, over a few
rounds, of the mean time of back-to-back calls followed by one synchronize (the way GPU work is
queued in practice). Ratios are lazytensor's time over the peer's: below 1 means lazytensor is faster.

Without a GPU the script says so and exits with status 1. `TRITON_INTERPRET=1 ... --quick` runs it
through Triton's interpreter on the CPU (torch on the CPU too): a check of the script, not a benchmark.
"""
from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch
from suite import Workload, bound, mismatch, overhead, parse_args, report

import lazytensor as lt

ROUNDS = 3


def timed(fn: Callable[[], object], sync: Callable[[], None], repeat: int) -> float:
    """Seconds per call: the best of ROUNDS means over `repeat` back-to-back calls and one synchronize."""
    for _ in range(2):
        fn()
    sync()
    best = float("inf")
    for _ in range(ROUNDS):
        t0 = time.perf_counter()
        for _ in range(repeat):
            fn()
        sync()
        best = min(best, (time.perf_counter() - t0) / repeat)
    return best


def workloads(quick: bool, device: str, torch_device: str) -> list[Workload]:
    """The workloads, each with its contestants (`impls`, as in the CPU suite: from the input arrays to a
    call that queues the work on the device)."""
    n = 1 << (16 if quick else 26)
    side = 256 if quick else 8192
    vec3 = lambda rng: [rng.random(n, dtype=np.float32) for _ in range(3)]
    square = lambda rng: [rng.standard_normal((side, side), dtype=np.float32)]
    out = []

    def add(w: Workload, lt_fn: Callable[..., lt.Tensor], torch_fn: Callable[..., torch.Tensor],
            dtype: str = "float32") -> None:
        def lt_inputs(arrays: list[np.ndarray]) -> list[lt.Tensor]:
            return [lt.asarray(a, device=device).cast(getattr(lt, dtype)).realize() for a in arrays]

        def torch_inputs(arrays: list[np.ndarray]) -> list[torch.Tensor]:
            return [torch.from_numpy(a).to(torch_device).to(getattr(torch, dtype)) for a in arrays]

        compiled = torch.compile(torch_fn)
        w.impls = {
            "lazytensor": lambda arrays: bound(lambda *ts: lt_fn(*ts).realize(), lt_inputs(arrays)),
            "torch eager": lambda arrays: bound(torch_fn, torch_inputs(arrays)),
            "torch.compile": lambda arrays: bound(compiled, torch_inputs(arrays)),
        }
        out.append(w)

    add(Workload("(x + y*z).sum()", vec3, bytes_moved=lambda a: 12 * a[0].size),
        lambda x, y, z: (x + y * z).sum(), lambda x, y, z: (x + y * z).sum())
    add(Workload(f"softmax {side}x{side}", square, bytes_moved=lambda a: 8 * a[0].size),
        lambda x: x.softmax(-1), lambda x: torch.softmax(x, -1))
    add(Workload(f"layernorm {side}x{side}", square, bytes_moved=lambda a: 8 * a[0].size),
        lambda x: (x - x.mean(-1, keepdims=True)) / (x.var(-1, keepdims=True) + 1e-5).sqrt(),
        lambda x: torch.nn.functional.layer_norm(x, x.shape[-1:], eps=1e-5))
    sizes = [(d, s) for d in ("float16", "bfloat16") for s in ((128, 256) if quick else (4096, 8192))]
    sizes.append(("float32", 128 if quick else 4096))
    for dtype, s in sizes:
        add(Workload(f"matmul {dtype} {s}",
                     lambda rng, s=s: [rng.standard_normal((s, s), dtype=np.float32) for _ in range(2)],
                     flops=lambda a: 2 * a[0].shape[0] ** 3),
            lambda a, b: a @ b, lambda a, b: a @ b, dtype)
    return out


def as_float64(result: object) -> np.ndarray:
    if isinstance(result, torch.Tensor):
        return result.double().cpu().numpy()
    return result.cast(lt.float64).numpy()


def copy_bandwidth(torch_device: str, nbytes: int, sync: Callable[[], None]) -> float:
    src = torch.ones(nbytes // 4, device=torch_device)
    dst = torch.empty_like(src)
    return 2 * nbytes / timed(lambda: dst.copy_(src), sync, 20)


def main() -> int:
    args = parse_args(__doc__, repeat=20)

    interpreted = bool(os.environ.get("TRITON_INTERPRET"))
    if interpreted:  # the interpreter keeps its memory in torch CPU tensors: the tests' storage provides them
        sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
        import triton_interpreter  # noqa: F401
    gpus = [d for d in lt.devices() if d.name.startswith("cuda")]
    if not gpus or not (interpreted or torch.cuda.is_available()):
        print("bench_gpu: no CUDA GPU here (lt.devices(): "
              f"{', '.join(d.describe() for d in lt.devices())}; torch.cuda: {torch.cuda.is_available()})")
        return 1
    device, torch_device = gpus[0].name, "cpu" if interpreted else "cuda"

    def sync() -> None:
        lt.synchronize(device)
        if torch_device == "cuda":
            torch.cuda.synchronize()

    bandwidth = copy_bandwidth(torch_device, 1 << (22 if args.quick else 28), sync)
    name = gpus[0].describe() if interpreted else torch.cuda.get_device_name()
    print(f"{name}: device-to-device copy bandwidth {bandwidth / 1e9:.0f} GB/s"
          + ("  (Triton interpreter: a smoke run, the times mean nothing)" if interpreted else ""))
    print(f"{'workload':24}{'impl':15}{'time':>11}{'rate':>16}{'% copy bw':>11}{'lt / impl':>11}")
    rows = []
    for w in workloads(args.quick, device, torch_device):
        if args.only and not any(s in w.name for s in args.only.split(",")):
            continue
        arrays = w.make(np.random.default_rng(0))
        runs = {impl: prepare(arrays) for impl, prepare in w.impls.items()}
        expected = runs["torch eager"]()
        rtol = 1e-4 if expected.dtype == torch.float32 else 1e-2  # relative to the largest value
        reference = as_float64(expected)
        times = {}
        for impl, run in runs.items():
            try:
                if (wrong := mismatch(as_float64(run()), reference, rtol)) is not None:
                    print(f"{w.name:24}{impl:15}  wrong result: {wrong}")
                    continue
                times[impl] = timed(run, sync, args.repeat)
            except Exception as e:  # noqa: BLE001 (a contestant that cannot run a workload is reported, not fatal)
                print(f"{w.name:24}{impl:15}  failed: {type(e).__name__}: {str(e)[:80]}")
        rows += report(w.name, times, w.bytes_moved and w.bytes_moved(arrays), w.flops and w.flops(arrays),
                       bandwidth, ("TFLOP/s", 1e12))
        del runs  # the inputs and outputs go before the next workload's are made
    launch = overhead(200 if args.quick else 2000, device)
    print(f"launch overhead (one cached kernel, tiny tensors, per realize): {launch * 1e6:.1f} us")
    rows.append({"workload": "launch overhead", "impl": "lazytensor", "seconds": launch})
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": name, "copy_bandwidth_gbs": bandwidth / 1e9, "results": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
