"""Compile LLVM IR for the host CPU and call it.

One MCJIT engine serves the whole process (MCJIT leaks when modules are
removed, so compiled kernels live as long as the process). Each kernel is
optimized with LLVM's new pass manager at speed level 3 for the host CPU,
then called through ctypes.

ctypes releases the GIL during the call, so a kernel with enough work is
split along its outermost output loop across a pool of `LT_NUM_THREADS`
threads (default: the cores this process may run on). Kernels below
`PARALLEL_MIN_WORK` loop iterations run on the calling thread: handing work
to the pool costs tens of microseconds.
"""
from __future__ import annotations

import ctypes
import math
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Sequence

import llvmlite.binding as llvm

from ..ir import Kernel, VOp
from .render import render

PARALLEL_MIN_WORK = 1 << 16

_KernelFn = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64)


class _Jit:
    """The process-wide target machine and execution engine."""

    def __init__(self) -> None:
        llvm.initialize_native_target()
        llvm.initialize_native_asmprinter()
        target = llvm.Target.from_triple(llvm.get_process_triple())
        self.target_machine = target.create_target_machine(
            cpu=llvm.get_host_cpu_name(), features=llvm.get_host_cpu_features().flatten(),
            opt=3, codemodel="jitdefault")
        self.engine = llvm.create_mcjit_compiler(llvm.parse_assembly(""), self.target_machine)
        self.lock = threading.Lock()

    def optimize(self, module: llvm.ModuleRef) -> None:
        pto = llvm.create_pipeline_tuning_options(speed_level=3)
        pto.loop_vectorization = True
        pto.slp_vectorization = True
        pb = llvm.create_pass_builder(self.target_machine, pto)
        pb.getModulePassManager().run(module, pb)


_jit: _Jit | None = None
_pool: ThreadPoolExecutor | None = None


def num_threads() -> int:
    value = os.environ.get("LT_NUM_THREADS", "").strip()
    return max(1, int(value)) if value else len(os.sched_getaffinity(0))


def pool() -> ThreadPoolExecutor:
    global _pool
    if _pool is None:
        _pool = ThreadPoolExecutor(max_workers=num_threads(), thread_name_prefix="lazytensor")
    return _pool


def work(kernel: Kernel) -> int:
    """Loop iterations a kernel runs: its output points times the reduction loops inside them."""
    inner = 1 + sum(math.prod(r.size for r in v.arg[1]) for v in kernel.values() if v.op is VOp.REDUCE)
    return kernel.numel * inner


def jit() -> _Jit:
    global _jit
    if _jit is None:
        _jit = _Jit()
    return _jit


@dataclass
class Program:
    """A compiled kernel: call it with buffer addresses and scalar parameters."""

    kernel: Kernel
    llvm_ir: str
    optimized_ir: str
    compile_seconds: float
    fn: ctypes._CFuncPtr = field(repr=False)
    work: int = 0
    _asm: str | None = field(default=None, repr=False)

    @property
    def name(self) -> str:
        return self.kernel.name

    @property
    def assembly(self) -> str:
        if self._asm is None:
            self._asm = jit().target_machine.emit_assembly(llvm.parse_assembly(self.optimized_ir))
        return self._asm

    def __call__(self, buffers: Sequence[int], params: Sequence[int | float]) -> None:
        ptrs = (ctypes.c_void_p * max(1, len(buffers)))(*buffers)
        slots = (ctypes.c_int64 * max(1, len(params)))()
        for i, (p, dt) in enumerate(zip(params, self.kernel.params)):
            if dt.is_float:
                ctypes.c_double.from_buffer(slots, 8 * i).value = float(p)
            else:
                slots[i] = int(p)
        outer = self.kernel.loops[0].size
        threads = min(num_threads(), outer, self.work // PARALLEL_MIN_WORK)
        if threads <= 1:
            self.fn(ptrs, slots, 0, outer)
            return
        bounds = [outer * t // threads for t in range(threads + 1)]
        jobs = [pool().submit(self.fn, ptrs, slots, lo, hi) for lo, hi in zip(bounds, bounds[1:])]
        for job in jobs:
            job.result()


_programs: dict[str, Program] = {}


def compile_kernel(kernel: Kernel) -> tuple[Program, bool]:
    """Compile `kernel`, or find the program compiled for the same body.

    Returns the program and whether this call compiled it."""
    key = kernel.body_text()
    if (hit := _programs.get(key)) is not None:
        return hit, False
    t0 = time.perf_counter()
    source = render(kernel)
    j = jit()
    with j.lock:
        module = llvm.parse_assembly(source)
        module.triple = j.target_machine.triple
        module.data_layout = str(j.target_machine.target_data)
        module.verify()
        j.optimize(module)
        optimized = str(module)
        j.engine.add_module(module)
        j.engine.finalize_object()
        address = j.engine.get_function_address(kernel.name)
    program = Program(kernel, source, optimized, time.perf_counter() - t0, _KernelFn(address), work(kernel))
    _programs[key] = program
    return program, True
