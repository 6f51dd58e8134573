"""Compile kernels with Triton and launch them on a target. The one module here that imports triton.

Triton compiles a kernel from its Python source, which it reads back with
`inspect`: a function exec'd from a string has no source to read. So each
rendered module is written to a file under LT_CACHE_DIR (default
~/.cache/lazytensor), in `triton/`, named by a hash of its source, imported
from there and compiled with `triton.jit`. Programs are cached in the process
by the kernel's structural key (`Kernel.body_text()`), the tiling and the
target; Triton caches the GPU binaries on disk as well.

On a GPU, `compile_kernel` compiles the kernel at once (Triton's `warmup`), so
compile time is counted there rather than in the first launch. Launches are
asynchronous, queued on the device's stream.

Triton asks its active driver for the current device and stream. Triton 3.6's
CUDA driver asks torch, and without torch Triton 3.9 uses the default stream,
so lazytensor installs a subclass of Triton's CUDA driver that answers from the
launch in progress (`cuda.launching`) and passes every other question, and
every launch lazytensor did not make, to Triton's own driver.
"""
from __future__ import annotations

import hashlib
import importlib.util
import os
import time
from pathlib import Path
from typing import Any, Sequence

from triton.runtime.driver import driver as triton_driver

from ..dtype import bool_
from ..ir import Kernel
from . import cuda
from .render import Tiling, TritonSource, memory_dtype, render
from .targets import Target


def cache_dir() -> Path:
    """Where rendered Triton modules are written: $LT_CACHE_DIR/triton, by default ~/.cache/lazytensor/triton."""
    return Path(os.environ.get("LT_CACHE_DIR") or Path.home() / ".cache" / "lazytensor") / "triton"


class Program:
    """A kernel compiled for one target: call it with buffer addresses and scalar parameters."""

    def __init__(self, kernel: Kernel, source: TritonSource, path: Path, fn: Any, target: Target):
        self.kernel, self.source, self.path, self.fn, self.target = kernel, source, path, fn, target
        self.compile_seconds = 0.0
        self.compiled: Any = None  # Triton's CompiledKernel, once compiled for a GPU
        # Compile options, the same for every launch. FMA contraction is stated, not left to the Triton
        # version: 3.6 enables it, 3.9 warns that its default will change.
        self.options = {"num_warps": source.num_warps, "enable_fp_fusion": True}

    @property
    def name(self) -> str:
        return self.kernel.name

    @property
    def llvm_ir(self) -> str:
        """The LLVM IR Triton generated (LT_DEBUG=3); the interpreter has none, so there it is the Triton source."""
        return self.compiled.asm["llir"] if self.compiled is not None else self.source.source

    @property
    def assembly(self) -> str:
        """The PTX Triton generated (LT_DEBUG=4); the Triton source under the interpreter."""
        return self.compiled.asm["ptx"] if self.compiled is not None else self.source.source

    def _args(self, buffers: Sequence[int], params: Sequence[bool | int | float]) -> list[object]:
        pointers = [self.target.kernel_arg(ptr, memory_dtype(b.dtype)) for ptr, b in zip(buffers, self.kernel.buffers)]
        # bools as ints: Triton 3.6's interpreter cannot take a Python bool argument (the kernel casts to int1)
        return [*pointers, *(int(p) if d == bool_ else p for p, d in zip(params, self.kernel.params))]

    def compile(self) -> None:
        """Compile for the GPU now, with arguments of the launch's types (all pointers are 16-byte aligned)."""
        zeros = [0.0 if d.is_float else 0 for d in self.kernel.params]
        args = self._args([0] * len(self.kernel.buffers), zeros)
        with self.target.launching():
            self.compiled = self.fn.warmup(*args, grid=(self.source.grid,), **self.options)

    def __call__(self, buffers: Sequence[int], params: Sequence[bool | int | float]) -> None:
        args = self._args(buffers, params)
        with self.target.launching():
            self.fn[(self.source.grid,)](*args, **self.options)


def _load(source: TritonSource) -> tuple[Path, Any]:
    """Write `source` to the cache directory (once: files are named by content) and import its kernel."""
    digest = hashlib.sha256(source.source.encode()).hexdigest()[:16]
    path = cache_dir() / f"{source.name}_{digest}.py"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        partial.write_text(source.source)
        os.replace(partial, path)  # another process reading the file sees all of it or nothing
    spec = importlib.util.spec_from_file_location(f"lazytensor_triton_{path.stem}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return path, getattr(module, source.name)


_programs: dict[tuple[str, Tiling, Target], Program] = {}


def compile_kernel(kernel: Kernel, target: Target, tiling: Tiling = Tiling()) -> tuple[Program, bool]:
    """Compile `kernel` for `target`, or find the program compiled for the same body.

    Returns the program and whether this call compiled it."""
    key = (kernel.body_text(), tiling, target)
    if (hit := _programs.get(key)) is not None:
        return hit, False
    t0 = time.perf_counter()
    source = render(kernel, tiling)
    path, fn = _load(source)
    program = Program(kernel, source, path, fn, target)
    if not target.interpreted:
        _install_driver()
        program.compile()
    program.compile_seconds = time.perf_counter() - t0
    _programs[key] = program
    return program, True


_driver_installed = False


def _install_driver() -> None:
    """Make Triton's active driver the one that knows about lazytensor's launches (see the module docstring)."""
    global _driver_installed
    if _driver_installed:
        return
    from triton.backends.nvidia.driver import CudaDriver, CudaLauncher, CudaUtils

    class LazytensorCudaDriver(CudaDriver):
        def __init__(self) -> None:  # not CudaDriver's: triton 3.6's imports torch
            self.utils = CudaUtils()
            self.launcher_cls = CudaLauncher

        def get_current_device(self) -> int:
            gpu = cuda.launching.get()
            return gpu.index if gpu is not None else triton_driver.default.get_current_device()

        def set_current_device(self, device: int) -> None:
            gpu = cuda.launching.get()
            if gpu is None:
                triton_driver.default.set_current_device(device)
            elif device != gpu.index:
                raise RuntimeError(f"Triton asked for cuda:{device} during a launch on cuda:{gpu.index}")

        def get_current_stream(self, device: int) -> int:
            gpu = cuda.launching.get()
            if gpu is not None and device == gpu.index:
                return gpu.stream
            return triton_driver.default.get_current_stream(device)

        def get_device_capability(self, device: int) -> tuple[int, int]:
            gpu = cuda.launching.get()
            if gpu is not None and device == gpu.index:
                return gpu.capability
            return triton_driver.default.get_device_capability(device)

    triton_driver.set_active(LazytensorCudaDriver())
    _driver_installed = True


__all__ = ["Program", "cache_dir", "compile_kernel"]
