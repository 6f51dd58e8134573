"""Compile LLVM IR for the host CPU and call it.

One MCJIT engine serves the whole process (MCJIT leaks when modules are
removed, so compiled kernels live as long as the process). Each kernel is
optimized with LLVM's new pass manager at speed level 3 for the host CPU,
then called through ctypes.

ctypes releases the GIL during the call, so a kernel with enough work is
split along its outermost output loop into chunks that the calling thread and
`LT_NUM_THREADS - 1` threads of a pool (default: the cores this process may run
on) claim one at a time (`pool.py`). The claiming is compiled too, so a chunk
costs no Python; the calling thread starts at once and only waits for chunks
others claimed, and the pool's threads keep looking for the next job a short
while after each, so back-to-back launches start on every thread at once.
Kernels below `PARALLEL_MIN_WORK` loop iterations run on the calling thread:
a hand-off to the pool costs microseconds, and tens where its threads sleep.

A call fills one array, its frame: the addresses of its buffers, then its
scalar parameters (`_frame`). What does not change between calls is made once
per program: the chunk tables of its phases, for each thread count (`_Plan`),
whose fields are offsets into a frame. A caller that launches one program again and again, one launch at a
time (a realize of a cached plan), reuses a frame of its own (`DirectCall`), through a compiled call of one
argument (`CALL_IR`).

Compiling goes through LLVM's object code (`compiler.py`), which the engine loads. A schedule's new
kernels compile together, before any runs (`compile_kernels`): each program's modules are compile jobs,
shared out between the calling thread and compile workers, processes that run `compiler.py` (one fewer
than `num_threads()`), so the first step of a model compiles on every core. Where a batch is small,
everything compiles on the calling thread, as a kernel compiled on its own does (`compile_kernel`).

A `Contraction` compiles to a `ContractionProgram`: its two packing kernels (run together), the GEMM
function of `gemm.py` (a call of the core its dtype and tile share) and its epilogue kernel, run one
after the other, each split across the pool, all in one hand-off to the pool (a stage's chunks wait for
the stage before to finish). Its panel buffers belong to the program.

A `LibraryCall` (LAPACK through NumPy) compiles to a `LibraryProgram`, whose function is a callback into
Python (`library.py`) that the chunks call as they call compiled code; it reports the first matrix its routine
failed on after its chunks ran.

A `Batch` runs several programs as one table of chunks, one hand-off to the
pool for all (an `lt.jit` replay): each program reads its buffers from its
positions in a table of addresses the caller passes on every run.

A kernel whose outermost output loop has fewer iterations than the pool has
threads but that reduces a lot (a full reduction: its output loop has size 1)
compiles to a `SplitReductionProgram` (see `kernels/split.py`): partial
reductions over chunks of the input, which the calling thread and the pool's
take one at a time, then a combine (one chunk, after them). Whether to split,
and into how many chunks, is decided when the kernel is compiled, from
`num_threads()` then (the program is cached by the kernel's body); how many
threads take the chunks is `num_threads()` at each call.

Programs are cached by kernel body. A plain kernel's outermost output loop runs over the range its caller
passes, and its reductions' loops may run up to sizes the caller passes after its parameters, so one program
can serve every size of them (`kernels/symbolic.py`): the first kernel of an erased text
(`Kernel.erased_text`, its body less those sizes and the buffers' sizes) compiles as it is; the next, at other
sizes, compiles the text's generic kernel over the loops whose sizes differ (`_sized_program`), and from then
on every kernel of the text that differs in those sizes only runs that code as a program of its own
(`Program.sized`: its extent, sizes, work and chunk tables), found without compiling (`_found`).
A contraction of one product whose m and n, or k, differ between two sizes of its erased text likewise compiles
its template generic over them (`_generic_contraction`): its packing kernels loop over the rows or the k's that
vary (`gemm.generic_pack_kernels`), its GEMM step reads the size's geometry from the call's frame, its epilogue is
generic over its loops that vary, and its panels are in scratch buffers its sizes share (`SharedScratch`); so does
a batch's product, over any of its m, n and k whose strides are the size that changed (`symbolic.symbolized`).
`LT_SYMBOLIC=0` turns that off, and kernels whose split (`_partials`) or checks depend on their sizes
specialize (`_erased`).

Checked kernels (`bounds.CHECK` when a kernel is compiled, see `kernels/bounds.py`) are programs of
their own, cached apart from the unchecked ones; a call of one raises `OutOfBounds` after the launch if
any of its accesses fell outside its buffer.

Threads. Compiling, calling and batching are safe from several Python threads at once: the engine and
the pool are made once (`_setup`), the engine is used under its lock only (llvmlite's MCJIT is not
thread-safe), one compile runs at a time (`_compiling`: a kernel two threads ask for compiles once),
each call has its own frame, the chunk tables are only read once made, the pool runs one launch's job
at a time (a launch that finds it busy runs on its own thread), and a program whose scratch buffers a
call uses is held by that call.
"""
from __future__ import annotations

import atexit
import ctypes
import functools
import math
import os
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Generator, Mapping, Sequence
from contextlib import ExitStack, nullcontext
from dataclasses import dataclass, field, replace
from pathlib import Path

import llvmlite.binding as llvm
import numpy as np

from .. import bounds
from ..bounds import FAULT_SLOTS, check
from ..dtype import int64
from ..ir import BufferParam, Contraction, Kernel, LibraryCall, Scan, Scatter, Sort, VOp, loop_scopes, param
from ..lapack import LibraryError, flops
from ..legalize import legalize
from ..split import split_reduction, split_scatter
from ..symbolic import DYNAMIC, Template, eligible, enabled, generic, multiples, sizes, skeleton, symbolized, unbounded
from . import compiler, disk_cache, library, mathlib
from .compiler import Machine
from .gemm import (
    GEOMETRY,
    KC_TARGET,
    Layout,
    Pack,
    core_name,
    generic_pack_kernels,
    geometry,
    pack_kernels,
    render_gemm,
    render_gemm_core,
)
from .pool import CHUNK_FIELDS, FUNCTIONS, POOL_IR, Pool
from .render import NATIVE, column_reductions, render, symbol
from .scan import render_scan, stages
from .sort import render_sort
from .sort import scratch as sort_scratch
from .sort import work as sort_work

PARALLEL_MIN_WORK = 1 << 16
SPLIT_MIN_WORK = 1 << 21  # measured on 2 cores: below it, splitting `x.sum()` is no faster than one thread
# a column reduction splits along its rows where its input is at least this many times the partial results
COLUMN_SPLIT_INPUT_PER_PARTIAL = 4
# a scatter whose updates fold order-free splits them across threads from this many updates on, where the output
# is at most COLUMN_SPLIT_INPUT_PER_PARTIAL times smaller than them per copy (each chunk folds into one of its own)
SCATTER_SPLIT_MIN = 1 << 16
SCAN_SPLIT_MIN = 1 << 16  # a scan cuts rows shorter than this into no chunks
SCAN_BLOCK_MIN = 64  # a scan of rows of lanes cuts them into blocks of no fewer lanes
# More chunks than threads, taken one at a time: on a shared machine a thread that another process
# slows down takes fewer chunks instead of holding up the others.
CHUNKS_PER_THREAD = 4

_KernelFn = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64)


# Runtime functions LLVM's code generation calls where the target has no instruction: float64 to float16, where it
# folds the two roundings of a value-preserving float64 -> float32 -> float16 into one. Correctly rounded: to float32
# rounding to odd (toward zero, the last bit set where inexact), then to float16 to nearest even, which rounds as
# one rounding would.
LIBCALLS = """
declare double @llvm.fabs.f64(double)
define half @__truncdfhf2(double %x) {
  %f = fptrunc double %x to float
  %back = fpext float %f to double
  %keep = fcmp ueq double %back, %x
  %bits = bitcast float %f to i32
  %ax = call double @llvm.fabs.f64(double %x)
  %aback = call double @llvm.fabs.f64(double %back)
  %outward = fcmp ogt double %aback, %ax
  %step = zext i1 %outward to i32
  %toward = sub i32 %bits, %step
  %odd = or i32 %toward, 1
  %pick = select i1 %keep, i32 %bits, i32 %odd
  %g = bitcast i32 %pick to float
  %h = fptrunc float %g to half
  ret half %h
}
"""


class _Jit:
    """The process-wide target machines and execution engine. Compiled code enters the engine as object
    code, made here or by a compile worker (`compiler.py`), the same either way."""

    def __init__(self) -> None:
        self.machine = Machine()
        self.target_machine = self.machine.target_machine
        self.engine = llvm.create_mcjit_compiler(llvm.parse_assembly(LIBCALLS), self.target_machine)
        self.engine.finalize_object()
        # code generation may call these (compiler-rt's, which no loaded library need export): ours, by name
        for name in ("__truncdfhf2",):
            llvm.add_symbol(name, self.engine.get_function_address(name))
        self.lock = threading.Lock()

    def load(self, obj: bytes, name: str) -> int:
        """Add object code to the engine; the address of its function `name`."""
        with self.lock:
            self.engine.add_object_file(llvm.ObjectFileRef.from_data(obj))
            self.engine.finalize_object()
            return self.engine.get_function_address(name)

    def address(self, name: str) -> int:
        """The address of a function of the object code loaded before."""
        with self.lock:
            return self.engine.get_function_address(name)


_jit: _Jit | None = None
_pool: Pool | None = None
_setup = threading.Lock()  # makes each of the two above once, whichever thread asks first
_compiling = threading.Lock()  # one compile at a time: a kernel asked for by two threads compiles once


@functools.cache
def _cores() -> int:
    return len(os.sched_getaffinity(0))


def num_threads() -> int:
    """`LT_NUM_THREADS`, read at each call so it can change; else the cores this process may run on."""
    value = os.environ.get("LT_NUM_THREADS", "").strip()
    return max(1, int(value)) if value else _cores()


def pool() -> Pool:
    """The process's thread pool (`pool.py`), its functions compiled on first use; its threads start as jobs
    need them."""
    global _pool
    if _pool is None:
        j = jit()  # made before `_setup` is held, which making it takes
        with _setup:
            if _pool is None:
                first, *rest = FUNCTIONS
                address = _compile((POOL_IR, first, False))[0][1]
                _pool = Pool(address, *map(j.address, rest))
                atexit.register(_pool.close)
    return _pool


# `call(block)`: `block[0](block[1], block[2], block[3], block[4])`, a kernel's function on its frame's buffer table
# and parameters over a range of its outermost loop (`DirectCall`). Called through ctypes with the block itself, an
# array ctypes passes as its address: ctypes converts each argument a prototype declares through a Python call, and
# a kernel's four cost three times this call.
CALL_IR = """
define void @call(ptr %block) {
entry:
  %fn = load ptr, ptr %block, align 8
  %at1 = getelementptr i64, ptr %block, i64 1
  %buffers = load ptr, ptr %at1, align 8
  %at2 = getelementptr i64, ptr %block, i64 2
  %params = load ptr, ptr %at2, align 8
  %at3 = getelementptr i64, ptr %block, i64 3
  %lo = load i64, ptr %at3, align 8
  %at4 = getelementptr i64, ptr %block, i64 4
  %hi = load i64, ptr %at4, align 8
  call void %fn(ptr %buffers, ptr %params, i64 %lo, i64 %hi)
  ret void
}
"""
CALL_HEAD = 5  # the words of a block before its frame
# No argument declared: a C function called with more arguments than its prototype declares gets them as ctypes
# passes them unconverted (a ctypes array: its address)
_Call = ctypes.CFUNCTYPE(None)
_call: ctypes._CFuncPtr | None = None


def _direct_call() -> ctypes._CFuncPtr:
    """`CALL_IR`'s `call`, compiled on first use."""
    global _call
    if _call is None:
        jit()  # made before `_setup` is held, which making it takes
        with _setup:
            if _call is None:
                _call = _Call(_compile((CALL_IR, "call", False))[0][1])
    return _call


def _forget_pool() -> None:
    """In a child process (`os.fork`): the parent's pool threads are not there; a launch starts others."""
    global _pool
    _pool = None


os.register_at_fork(after_in_child=_forget_pool)


def work(kernel: Kernel) -> int:
    """Loop iterations a kernel runs: its output points, and each reduction's loops times the iterations of
    the loops it sits in (`loop_scopes`: a softmax's row max runs once per row, not once per element)."""
    values, scopes = loop_scopes(kernel)
    return kernel.numel + sum(math.prod(var.size for var in (*scopes[id(v)], *v.arg[1]))
                              for v in values if v.op is VOp.REDUCE)


def jit() -> _Jit:
    global _jit
    if _jit is None:
        with _setup:
            if _jit is None:
                _jit = _Jit()
    return _jit


# A compile job: LLVM IR, the name of its function, whether to vectorize for the widest vectors; and what
# compiling it gives: the optimized IR, the function's address, the seconds it took.
Job = tuple[str, str, bool]
Compiled = tuple[str, int, float]


def _compile(job: Job) -> tuple[Compiled, bool]:
    """Compile one job here, or load its code from the persistent cache (`disk_cache`); and whether it was
    compiled (not found)."""
    source, name, wide = job
    t0 = time.perf_counter()
    j = jit()
    if (kept := disk_cache.load(source, wide)) is None:
        with j.lock:  # LLVM's context is not thread-safe: the engine's lock guards every use of it
            optimized, obj = j.machine.compile(source, wide)
        disk_cache.store(source, wide, optimized, obj)
    else:
        optimized, obj = kept
    return (optimized, j.load(obj, name), time.perf_counter() - t0), kept is None


def _frame(table: Sequence[int], params: Sequence[int | float], dtypes: tuple, checked: bool = False,
           sizes: Sequence[int] = ()) -> ctypes.Array:
    """What a call's functions read, in one array (one allocation per call): the buffer addresses of `table`,
    then the parameter slots (`_scalar_slots`), then a generic program's `sizes` (`Kernel.extents`), those of a
    checked kernel ending with its fault record, zeroed."""
    slots, fmt = _frame_layout(len(table), dtypes, len(sizes), checked)
    frame = slots()
    try:
        fmt.pack_into(frame, 0, *table, *params, *sizes)
    except struct.error:  # a parameter out of its slot's range or type: written as `_scalar_slots` converts it
        fmt.pack_into(frame, 0, *table, *_as_slots(params, dtypes), *sizes)
    return frame


@functools.cache
def _frame_layout(buffers: int, dtypes: tuple, sizes: int, checked: bool) -> tuple[type, struct.Struct]:
    """A call frame's array type and how its addresses, parameters and sizes fill it, in one `pack_into`: made
    once per layout, not per launch (building the array from the addresses, then packing the parameters, was a
    tenth of a small cached kernel's realize)."""
    slots = ctypes.c_int64 * (buffers + max(1, len(dtypes) + sizes + FAULT_SLOTS * checked))
    return slots, struct.Struct("=" + "q" * buffers + _slot_format(dtypes).format[1:] + "q" * sizes)


def _as_slots(params: Sequence[int | float], dtypes: tuple) -> list[int | float]:
    """The parameters as C converts them to their slots: an integer wraps to int64 (uint64's top half)."""
    return [p if dt.is_float else (int(p) + 2**63) % 2**64 - 2**63 for p, dt in zip(params, dtypes)]


def _scalar_slots(params: Sequence[int | float], dtypes: tuple, slots: ctypes.Array, at: int = 0) -> None:
    """Write the parameters as a kernel reads them (a 64-bit slot each) into `slots`, from slot `at` on."""
    fmt = _slot_format(dtypes)
    try:
        fmt.pack_into(slots, 8 * at, *params)
    except struct.error:  # an integer past int64's range (uint64's top half), or not an int: as C converts
        fmt.pack_into(slots, 8 * at, *_as_slots(params, dtypes))


@functools.cache
def _slot_format(dtypes: tuple) -> struct.Struct:
    """How parameters of these dtypes fill their slots: a double for a float, a 64-bit integer otherwise."""
    return struct.Struct("=" + "".join("d" if dt.is_float else "q" for dt in dtypes))


# A phase: calls `(fn, n)` of `fn` over `[0, n)` that may run together, and the work they are worth.
Phase = tuple[Sequence[tuple[ctypes._CFuncPtr, int]], int]


def _one_thread(work: int) -> bool:
    """Whether `work` loop iterations are too few to share between two threads."""
    return work < 2 * PARALLEL_MIN_WORK


def _threads(calls: Sequence[tuple[ctypes._CFuncPtr, int]], work: int) -> int:
    """How many threads it pays to share out `calls`, worth `work` together, to."""
    if _one_thread(work):  # whatever the pool: without reading the environment
        return 1
    return min(num_threads(), sum(n for _, n in calls), work // PARALLEL_MIN_WORK)


def _chunks(phases: Sequence[tuple[Phase, int, int]]) -> tuple[list[int], int]:
    """The chunk table (`pool.py`'s) of `phases` run one after another, each given with the offsets of its
    buffer table and scalar parameters from a job's base address; and how many threads it pays to share the
    chunks to."""
    threads = max(_threads(calls, work) for (calls, work), _, _ in phases)
    chunks: list[int] = []
    for (calls, work), buffers, params in phases:
        after, phase_threads, total = len(chunks) // CHUNK_FIELDS, _threads(calls, work), sum(n for _, n in calls)
        for fn, n in calls:  # each function's share of the phase's chunks follows its share of the iterations
            parts = min(n, -(-phase_threads * CHUNKS_PER_THREAD * n // total)) if phase_threads > 1 else 1
            address = ctypes.cast(fn, ctypes.c_void_p).value
            for i in range(parts):
                chunks += (address, n * i // parts, n * (i + 1) // parts, after, buffers, params)
    return chunks, threads


@dataclass(frozen=True)
class _Plan:
    """Phases cut into chunks for a number of threads, once: a ctypes table, its chunks, the threads."""

    table: ctypes.Array
    n: int
    threads: int

    @staticmethod
    def of(phases: Sequence[tuple[Phase, int, int]]) -> _Plan:
        chunks, threads = _chunks(phases)
        return _Plan((ctypes.c_int64 * len(chunks))(*chunks), len(chunks) // CHUNK_FIELDS, threads)

    def run(self, base: int) -> None:
        """Run the chunks, the calling thread and the pool's threads claiming them one at a time.

        Claiming, not fixed shares, because the machine may be shared: a thread whose core another
        process takes simply claims fewer chunks."""
        pool().run(self.table, self.n, base, self.threads)


def _plan_key() -> tuple[int, int]:
    """What a plan depends on beside the program: the threads there are now, and the least work for two."""
    return num_threads(), PARALLEL_MIN_WORK


def _run(program: Program | StagedProgram, frame: ctypes.Array, size: int) -> None:
    """Run a program's phases on a call's `frame` (`_frame`) of `size` buffer addresses: on the calling thread
    when the work is small, else in chunks that it and the pool's threads claim. The phases share one
    hand-off to the pool and one wait: a chunk waits for the phases before its own to finish (a
    contraction's GEMM for its packing kernels, which run together). The chunk tables are made once per
    program, size and `_plan_key()`: their fields are offsets into the frame."""
    key = (*_plan_key(), size)
    if (plan := program.plans.get(key)) is None:
        plan = program.plans[key] = _Plan.of([(phase, 0, 8 * size) for phase in program.phases()])
    plan.run(ctypes.addressof(frame))


@dataclass
class Program:
    """A compiled function: call it with buffer addresses and scalar parameters. It runs over `[0, extent)`
    of its outermost loop (a kernel's output loop, a contraction's tasks), split across threads."""

    kernel: Kernel | Contraction | Scatter | LibraryCall
    llvm_ir: str
    optimized_ir: str
    compile_seconds: float
    fn: ctypes._CFuncPtr = field(repr=False)
    extent: int
    work: int
    checked: bool = False
    # a generic program's (`symbolic`): the names of the loop variables whose sizes are the launch's, and the sizes
    # it passes after the parameters (`Kernel.extents`)
    generic_over: str | None = None
    sizes: tuple[int, ...] = ()
    _asm: str | None = field(default=None, repr=False)
    plans: dict[tuple[int, ...], _Plan] = field(default_factory=dict, repr=False, compare=False)  # see `_run`

    @property
    def name(self) -> str:
        return self.kernel.name

    def sized(self, kernel: Kernel, over: frozenset[int]) -> Program:
        """This program, generic over the loops at positions `over` of `sized_loops()`, as `kernel`'s, a kernel of
        the erased text it was compiled for (`kernels/symbolic.py`): the code shared, the extent, work, sizes
        and chunk tables `kernel`'s."""
        loops = [v for k, v in enumerate(kernel.sized_loops()) if k in over]
        passed = {v.name for v in self.kernel.extents}  # the generic kernel's (`Kernel.extents`)
        return replace(self, kernel=kernel, extent=kernel.loops[0].size, work=work(kernel),
                       generic_over=", ".join(v.name for v in loops),
                       sizes=tuple(v.size for v in loops if v.name in passed), plans={})

    def frame(self, table: Sequence[int], params: Sequence[int | float]) -> ctypes.Array:
        """A call's frame (`_frame`), a generic program's sizes after the parameters."""
        return _frame(table, params, self.kernel.params, self.checked, self.sizes)

    @property
    def assembly(self) -> str:
        if self._asm is None:
            j = jit()
            with j.lock:
                self._asm = j.target_machine.emit_assembly(llvm.parse_assembly(self.optimized_ir))
        return self._asm

    def artifacts(self) -> dict[str, str]:
        """Files of what compiling made, by name (a dump's): the LLVM IR before and after optimization, and the
        host assembly."""
        return {"llvm.ll": self.llvm_ir, "llvm-optimized.ll": self.optimized_ir, "assembly.s": self.assembly}

    def __call__(self, buffers: Sequence[int], params: Sequence[int | float]) -> None:
        frame = self.frame(buffers, params)
        if _one_thread(self.work):  # a small kernel's launch is this: no chunks, no pool
            self.fn(frame, ctypes.addressof(frame) + 8 * len(buffers), 0, self.extent)
        else:
            _run(self, frame, len(buffers))
        if self.checked:
            _check_faults(self, frame, len(buffers))

    def direct(self, buffers: int) -> DirectCall | None:
        """Its launches on tables of `buffers` addresses through a frame of their own (`DirectCall`), or None where
        a launch does more than run the function: a checked program's reads its fault record."""
        return None if self.checked else DirectCall(self, buffers)

    def buffers(self) -> tuple[BufferParam, ...]:
        """The buffers of the table the functions read, by slot."""
        return self.kernel.buffers

    def phases(self) -> list[Phase]:
        """What a call runs, phase after phase (`_run`'s input): here one phase, the function."""
        return [([(self.fn, self.extent)], self.work)]

    def scratch_pointers(self) -> list[int]:
        """The addresses of the scratch buffers the program owns (a plain program has none)."""
        return []

    def table(self, buffers: Sequence[int], scratch: Sequence[int]) -> list[int]:
        """The buffer table the functions read: the caller's buffers (outputs, inputs), and the scratch."""
        return list(buffers)


class DirectCall:
    """A program's launches through a frame of their own, made once, for a caller that makes one at a time (a
    realize of a cached schedule, under the realize's lock): a launch writes the buffer addresses and parameters
    into the frame (one `pack_into`) and runs the function through `CALL_IR`'s `call`, one argument that ctypes
    passes as it is, where `Program.__call__` makes a frame and passes the function four arguments, each converted:
    half the time of a small kernel's launch. A launch whose work the pool shares (by `PARALLEL_MIN_WORK` at the
    launch) goes through the program."""

    __slots__ = ("block", "pack", "program", "run")

    def __init__(self, program: Program, buffers: int):
        params = program.kernel.params
        self.program, self.run = program, _direct_call()
        self.block = block = (ctypes.c_int64 * (CALL_HEAD + _frame_layout(buffers, params, len(program.sizes),
                                                                          False)[0]._length_))()
        frame = ctypes.addressof(block) + 8 * CALL_HEAD
        block[:CALL_HEAD] = [ctypes.cast(program.fn, ctypes.c_void_p).value, frame, frame + 8 * buffers, 0,
                             program.extent]
        struct.pack_into("=" + "q" * len(program.sizes), block, 8 * (CALL_HEAD + buffers + len(params)), *program.sizes)
        self.pack = struct.Struct("=" + "q" * buffers + _slot_format(params).format[1:]).pack_into

    def __call__(self, buffers: Sequence[int], params: Sequence[int | float]) -> None:
        """Run the program on the buffers at the addresses `buffers` (outputs, inputs) with `params`, as
        `Program.__call__`."""
        program = self.program
        if not _one_thread(program.work):
            program(buffers, params)
            return
        try:
            self.pack(self.block, 8 * CALL_HEAD, *buffers, *params)
        except struct.error:  # a parameter out of its slot's range or type: written as `_scalar_slots` converts it
            self.pack(self.block, 8 * CALL_HEAD, *buffers, *_as_slots(params, program.kernel.params))
        self.run(self.block)


@dataclass
class LibraryProgram(Program):
    """A `LibraryCall`: its one function is `library.py`'s callback, over the batch of matrices. It has no LLVM
    IR: `llvm_ir` says what runs instead."""

    def direct(self, buffers: int) -> None:
        """None: a launch collects the routine's failure after its chunks ran."""

    def __call__(self, buffers: Sequence[int], params: Sequence[int | float]) -> None:
        frame = _frame(buffers, params, self.kernel.params)
        try:
            _run(self, frame, len(buffers))
        finally:  # collected even when interrupted: the slots' address may be another call's next
            failed = library.failure(ctypes.addressof(frame) + 8 * len(buffers))
        if failed is not None:
            raise failed

    @property
    def assembly(self) -> str:
        return self.llvm_ir


def _check_faults(program: Program | StagedProgram, slots: ctypes.Array, at: int = 0,
                  position: int | None = None) -> None:
    """Raise `OutOfBounds` if the fault record in a checked program's parameter slots (`slots` from slot `at`
    on) holds a fault (which it clears for the next run); `position` says which program of a batch it is."""
    n = at + len(program.kernel.params) + len(program.sizes)
    record = slots[n:n + FAULT_SLOTS]
    if record[0]:
        slots[n:n + FAULT_SLOTS] = [0] * FAULT_SLOTS
        check(program.name, program.buffers(), record, position)


def _aligned_zeros(param: BufferParam) -> np.ndarray:
    """Zeroed memory for a panel buffer, 64-byte aligned for the micro-kernel's aligned vector loads."""
    itemsize = param.dtype.itemsize
    try:
        raw = np.zeros(param.size * itemsize + 64, dtype=np.uint8)
    except (MemoryError, ValueError):  # ValueError: more bytes than an address space holds
        raise MemoryError(f"out of host memory: cannot allocate a kernel's scratch buffer of {param.size} elements "
                          f"of {itemsize} bytes each") from None
    offset = -raw.ctypes.data % 64
    return raw[offset:offset + param.size * itemsize]


class SharedScratch:
    """The scratch buffers of the programs one generic contraction runs as, one per size (`symbolic`): each
    program takes buffers at least as large as it needs, grown (to twice the size at least, so the buffers a
    run of growing sizes leaves behind add up to the largest's) where they are not. A buffer a program took
    stays its own (a `Batch` keeps its address); their calls take one lock, so one call at a time uses them."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.buffers: list[np.ndarray] = []

    def fitting(self, params: list[BufferParam]) -> list[np.ndarray]:
        with self.lock:
            for k, p in enumerate(params):
                if k == len(self.buffers):
                    self.buffers.append(_aligned_zeros(p))
                elif self.buffers[k].nbytes < p.size * p.dtype.itemsize:
                    grown = max(p.size, 2 * self.buffers[k].nbytes // p.dtype.itemsize)
                    self.buffers[k] = _aligned_zeros(replace(p, size=grown))
            return self.buffers[:len(params)]


@dataclass
class StagedProgram:
    """A kernel compiled to several functions that run one after another over one table of buffers:
    the caller's (outputs, inputs) and scratch buffers the program owns, allocated on its first call."""

    kernel: Kernel | Contraction | Scatter | Sort | Scan
    stages: list[Program]
    compile_seconds: float
    checked: bool = False
    # a generic program's (`symbolic`), as `Program`'s: the loops whose sizes are the call's, and the sizes it
    # passes after the parameters
    generic_over: str | None = None
    sizes: tuple[int, ...] = ()
    # held by a call while it uses the scratch buffers; re-entrant, as a call allocates them on first use
    _lock: threading.RLock = field(default_factory=threading.RLock, repr=False)
    _shared: SharedScratch | None = field(default=None, repr=False)  # where the scratch comes from, if shared
    _scratch: list[np.ndarray] | None = field(default=None, repr=False)
    _scratch_pointers: list[int] | None = field(default=None, repr=False)  # read once: NumPy's take microseconds
    plans: dict[tuple[int, ...], _Plan] = field(default_factory=dict, repr=False, compare=False)  # see `_run`

    @property
    def name(self) -> str:
        return self.kernel.name

    @property
    def llvm_ir(self) -> str:
        return "\n".join(p.llvm_ir for p in self.stages)

    @property
    def optimized_ir(self) -> str:
        return "\n".join(p.optimized_ir for p in self.stages)

    @property
    def assembly(self) -> str:
        return "\n".join(p.assembly for p in self.stages)

    artifacts = Program.artifacts

    def scratch(self) -> list[BufferParam]:
        raise NotImplementedError

    def table(self, buffers: Sequence[int], scratch: Sequence[int]) -> list[int]:
        """Every stage's buffer slots, in order: the caller's buffers (outputs, inputs) and the scratch."""
        raise NotImplementedError

    def buffers(self) -> tuple[BufferParam, ...]:
        """The buffers of the table the stages read, by slot."""
        raise NotImplementedError

    def phases(self) -> list[Phase]:
        return [p for stage in self.stages for p in stage.phases()]

    def scratch_pointers(self) -> list[int]:
        if self._scratch_pointers is None:
            with self._lock:  # two threads' first calls (or batches) must get the same buffers
                if self._scratch is None:
                    self._scratch = [_aligned_zeros(p) for p in self.scratch()] if self._shared is None \
                        else self._shared.fitting(self.scratch())
                    self._scratch_pointers = [m.ctypes.data for m in self._scratch]
        return self._scratch_pointers

    def owned(self) -> threading.RLock:
        """Held while a call uses the program's scratch buffers: one call at a time."""
        return self._lock

    def frame(self, table: Sequence[int], params: Sequence[int | float]) -> ctypes.Array:
        """A call's frame (`_frame`), a generic program's sizes after the parameters."""
        return _frame(table, params, self.kernel.params, self.checked, self.sizes)

    def direct(self, buffers: int) -> None:
        """None: its stages run over its scratch too, under its lock, as chunks for the pool."""

    def __call__(self, buffers: Sequence[int], params: Sequence[int | float]) -> None:
        with self._lock:
            table = self.table(buffers, self.scratch_pointers())
            frame = self.frame(table, params)
            _run(self, frame, len(table))
        if self.checked:
            _check_faults(self, frame, len(table))


@dataclass
class ContractionProgram(StagedProgram):
    """A compiled contraction: pack both operands, multiply (`gemm`), then run the epilogue if any. With a
    fused layout the GEMM step's tasks pack their own panels (`gemm.render_gemm`): no packing phase."""

    layout: Layout | None = None

    @property
    def gemm(self) -> Program:
        return self.stages[2]

    def scratch(self) -> list[BufferParam]:
        return [p for p in self.kernel.buffers if p.scratch] + list(self.layout.packed_buffers(self.kernel))

    def table(self, buffers: Sequence[int], scratch: Sequence[int]) -> list[int]:
        # the product's scratch takes slot 1 (see Contraction); the panels come after the kernel's buffers
        return [buffers[0], *scratch[:-2], *buffers[1:], *scratch[-2:]]

    def buffers(self) -> tuple[BufferParam, ...]:
        return (*self.kernel.buffers, *self.layout.packed_buffers(self.kernel))

    def sized(self, c: Contraction, over: frozenset[int]) -> ContractionProgram:
        """This program, generic over the loops at positions `over` of `c.sized_loops()` (`_generic_contraction`),
        as `c`'s, a contraction of the erased text it was compiled for: the code and the scratch buffers shared,
        the layout, extents, work and geometry `c`'s."""
        wide = frozenset(v for k, v in enumerate(c.sized_loops()) if k in over)
        layout = Layout.choose(c, num_threads(), self.layout)
        packs = generic_pack_kernels(c, layout, wide)
        stages = [stage.sized(pack.kernel, frozenset({0})) if pack.covers in wide or pack.strides else stage
                  for stage, pack in zip(self.stages, packs)]
        stages.append(replace(self.gemm, kernel=c, extent=layout.tasks(c), work=c.numel // layout.nr, plans={}))
        if c.epilogue is not None:  # generic over its loops among `over` (`_generic_contraction`), if any
            core = len(c.sized_loops()) - len(c.epilogue.sized_loops())
            ends = frozenset(k - core for k in over if k >= core)
            stages.append(self.stages[3].sized(c.epilogue, ends) if ends else self.stages[3])
        passed = stages[3].sizes if c.epilogue is not None else ()  # after the geometry (`_generic_contraction`)
        return replace(self, kernel=c, stages=stages, layout=layout, sizes=(*geometry(c, layout), *passed),
                       generic_over=", ".join(v.name for v in c.vars if v in wide), plans={}, _scratch=None,
                       _scratch_pointers=None)

    def phases(self) -> list[Phase]:
        pack_a, pack_b, gemm, *rest = self.stages
        packing = pack_a.work + pack_b.work
        multiplying: list[Phase] = [([(pack_a.fn, pack_a.extent), (pack_b.fn, pack_b.extent)], packing),
                                    ([(gemm.fn, gemm.extent)], gemm.work)]
        if self.layout.fused:
            multiplying = [([(gemm.fn, gemm.extent)], gemm.work + packing)]
        return [*multiplying, *(p for stage in rest for p in stage.phases())]


@dataclass
class SplitReductionProgram(StagedProgram):
    """A kernel split by `split_reduction`: the chunks of `partials` on the pool, then `combine`."""

    @property
    def partials(self) -> Program:
        return self.stages[0]

    def scratch(self) -> list[BufferParam]:
        return [p for p in self.partials.kernel.buffers if p.scratch]

    def table(self, buffers: Sequence[int], scratch: Sequence[int]) -> list[int]:
        return [*buffers, *scratch]

    def buffers(self) -> tuple[BufferParam, ...]:
        return self.partials.kernel.buffers


@dataclass
class ScatterProgram(StagedProgram):
    """A compiled `Scatter`: the base on the pool, then the updates on one thread, in order (see `ir.Store`), or
    on the pool where they are distinct."""

    def scratch(self) -> list[BufferParam]:
        return []

    def table(self, buffers: Sequence[int], scratch: Sequence[int]) -> list[int]:
        return list(buffers)

    def buffers(self) -> tuple[BufferParam, ...]:
        return self.kernel.buffers


@dataclass
class SortProgram(StagedProgram):
    """A compiled `Sort`: its rows split across threads, in work arrays the program owns."""

    def scratch(self) -> list[BufferParam]:
        return [BufferParam(dtype, size, scratch=True) for dtype, size in sort_scratch(self.kernel)]

    def table(self, buffers: Sequence[int], scratch: Sequence[int]) -> list[int]:
        return [*buffers, *scratch]

    def buffers(self) -> tuple[BufferParam, ...]:
        return (*self.kernel.buffers, *self.scratch())


@dataclass
class ScanProgram(StagedProgram):
    """A compiled `Scan`: blocks of lanes folded across threads, or chunks of rows folded across threads, their
    totals made offsets on one thread, the offsets folded in across threads (see `scan.py`); the totals in a
    scratch array the program owns."""

    chunks: int = 1

    def scratch(self) -> list[BufferParam]:
        return [BufferParam(self.kernel.dtype, self.kernel.rows * self.chunks, scratch=True)]

    def table(self, buffers: Sequence[int], scratch: Sequence[int]) -> list[int]:
        return [*buffers, *scratch]

    def buffers(self) -> tuple[BufferParam, ...]:
        return (*self.kernel.buffers, *self.scratch())


_NOTHING_OWNED = nullcontext()  # a batch of programs without scratch buffers holds none


class Batch:
    """Programs run one after another in one call, as one table of chunks that the calling thread and the
    pool claim: one hand-off to the pool for all of them, and no Python between one program's chunks and
    the next's (what an `lt.jit` replay launches).

    Each program is given with the positions of its buffers in a table of buffer addresses that the
    caller passes on every run, and with its scalar parameters, which a run may change.
    """

    def __init__(self, calls: Sequence[tuple[Program | StagedProgram, Sequence[int], Sequence[int | float]]],
                 table_size: int):
        self.programs = [program for program, _, _ in calls]
        self.fixed: list[int] = []  # the programs' scratch buffers, after the caller's table
        gather: list[int] = []
        starts = []
        for program, index, _ in calls:
            scratch = program.scratch_pointers()
            first = table_size + len(self.fixed)  # where this program's scratch addresses go
            starts.append(len(gather))
            gather += program.table(index, range(first, first + len(scratch)))
            self.fixed += scratch
        self.gather = np.array(gather, dtype=np.intp)
        self.pointers = np.zeros(max(1, len(gather)), dtype=np.uint64)  # the programs' tables, end to end
        self.slots = [program.frame((), params) for program, _, params in calls]
        self.checked = [k for k, program in enumerate(self.programs) if program.checked]
        self.library = [k for k, program in enumerate(self.programs) if isinstance(program, LibraryProgram)]
        base = self.pointers.ctypes.data
        self.phases = [(phase, base + 8 * start, ctypes.addressof(slots))
                       for program, start, slots in zip(self.programs, starts, self.slots)
                       for phase in program.phases()]
        self._lock = threading.Lock()  # a run writes the tables the chunks read: one run at a time
        # each program with scratch buffers once, in one order for every batch, so that taking their locks
        # cannot deadlock
        self._owners = [p for _, p in sorted({id(p): p for p in self.programs if isinstance(p, StagedProgram)}.items())]
        self.plan_key, self.plan = _plan_key(), _Plan.of(self.phases)

    def __call__(self, table: Sequence[int], params: Mapping[int, Sequence[int | float]] | None = None) -> None:
        """Run the programs on the buffers at the addresses in `table`, the `k`th program with `params[k]` as
        its scalar parameters from now on where given."""
        with self._lock, ExitStack() if self._owners else _NOTHING_OWNED as owned:
            for k, values in (params or {}).items():
                _scalar_slots(values, self.programs[k].kernel.params, self.slots[k])
            np.array([*table, *self.fixed], dtype=np.uint64).take(self.gather, out=self.pointers)
            for program in self._owners:
                owned.enter_context(program.owned())
            if (key := _plan_key()) != self.plan_key:
                self.plan_key, self.plan = key, _Plan.of(self.phases)
            try:
                self.plan.run(0)  # the chunks' fields are the addresses of the programs' tables and slots
            finally:  # collected even when interrupted: a failure left behind would be the next run's
                failures = [(k, library.failure(ctypes.addressof(self.slots[k]))) for k in self.library]
            for k in self.checked:
                _check_faults(self.programs[k], self.slots[k], position=k)
            for k, failed in failures:
                if failed is not None:
                    if isinstance(failed, LibraryError):
                        failed.position = k
                    raise failed


_programs: dict[tuple[str, bool], Program | StagedProgram] = {}  # by body and whether checked
_gemm_cores: dict[str, tuple[str, str]] = {}  # the GEMM cores in the engine, by symbol: IR, optimized IR


_generic: dict[str, Template] = {}  # generic programs (`symbolic`), by the erased text of the kernels they serve
_first_sizes: dict[str, tuple[int, ...]] = {}  # the sized loops' sizes each erased text was first compiled at
_previous: dict[str, Kernel | Contraction] = {}  # the last kernel compiled of each structure (`symbolic.skeleton`)


def _erased(kernel: Kernel | Contraction | Scatter | Sort | Scan | LibraryCall, checked: bool) -> str | None:
    """The erased text (`Kernel.erased_text`) of a kernel that may run generic, or None where it specializes:
    `LT_SYMBOLIC=0`, checked kernels (their tests read buffer sizes), kernels not `symbolic.eligible` and those
    that split (`_partials`: the split, decided at the compile, depends on the sizes)."""
    if checked or not isinstance(kernel, (Kernel, Contraction)) or not enabled() or not eligible(kernel) \
            or isinstance(kernel, Kernel) and _partials(kernel) is not None:
        return None
    return kernel.erased_text()


def _strided(kernel: Kernel | Contraction | Scatter | Sort | Scan | LibraryCall, changed: frozenset[int]) \
        -> Kernel | Contraction | Scatter | Sort | Scan | LibraryCall:
    """`kernel`, where it may run generic and its erased text is new, with its strides that are products of the
    sizes `changed` written as such (`symbolic.symbolized`): the form whose erased text the kernels of every such
    size share. Only where its own text is new (it would compile), which is then taken as seen at its sizes: a
    coefficient that is such a product by chance (a row of 21 at a batch of 7) costs no compile that its own
    text would not. A batched contraction has no sized loop before (`Contraction.sized_loops`): its form where
    that may run generic."""
    if type(kernel) not in (Kernel, Contraction):
        return kernel
    structure = skeleton(kernel)
    previous, _previous[structure] = _previous.get(structure), kernel
    if changed and type(kernel) is Kernel and (erased := _erased(kernel, bounds.CHECK)) is not None \
            and erased not in _first_sizes and (form := symbolized(kernel, changed, previous)) is not kernel:
        _first_sizes[erased] = sizes(kernel)
        return form
    if changed and type(kernel) is Contraction and not kernel.sized_loops() \
            and _erased(form := symbolized(kernel, changed, previous), bounds.CHECK) is not None:
        return form
    return kernel


def _found(kernel: Kernel | Contraction | Scatter | Sort | Scan | LibraryCall, key: tuple[str, bool]) \
        -> Program | StagedProgram | None:
    """The program compiled for `key` (the kernel's body, whether checked), or the generic program of the
    kernel's erased text as its own (kept under `key` from now on); None where there is neither."""
    if (hit := _programs.get(key)) is None and (erased := _erased(kernel, key[1])) is not None \
            and (template := _generic.get(erased)) is not None and template.serves(sizes(kernel)):
        hit = _programs.setdefault(key, template.program.sized(kernel, template.over))
    return hit


# A program's builder: a generator that yields the jobs to compile, one at a time, is sent what each gave,
# and returns the program. One caller compiles the jobs one by one (`compile_kernel`), another compiles
# the jobs of many builders side by side (`compile_kernels`).
Builder = Generator[Job, Compiled, "Program | StagedProgram"]


def _program(kernel: Kernel, pack: Pack | None = None, checked: bool = False, serial: bool = False) \
        -> Generator[Job, Compiled, Program]:
    """`kernel` compiled (as a packing kernel where `pack` is given); run on one thread where `serial`."""
    t0 = time.perf_counter()
    source = render(kernel, checked) if pack is None else pack.render(checked)
    wide = mathlib.wide(kernel)
    render_seconds = time.perf_counter() - t0
    optimized, address, seconds = yield source, symbol(kernel.name, checked), wide
    return Program(kernel, source, optimized, render_seconds + seconds, _KernelFn(address),
                   kernel.loops[0].size, 0 if serial else work(kernel), checked)


@dataclass
class SplitScatterProgram(SplitReductionProgram):
    """A `Scatter` split by `split_scatter`: the base and clearing the copies on the pool, the chunks of the
    updates on the pool (each folding into its copy, in order), the copies folded into the output, then the
    tail on one thread."""

    @property
    def partials(self) -> Program:
        return self.stages[2]


def _scatter_program(kernel: Scatter, checked: bool) -> Generator[Job, Compiled, ScatterProgram]:
    if (split := _split_scatter(kernel)) is not None:
        clear, partials, combine, *tail = split
        stages = []
        for k in (kernel.base, clear, partials, combine):
            stages.append((yield from _program(k, checked=checked)))
        for k in tail:  # on one thread, in order, as the updates it takes over
            stages.append((yield from _program(k, checked=checked, serial=True)))
        return SplitScatterProgram(kernel, stages, sum(p.compile_seconds for p in stages), checked)
    base = yield from _program(kernel.base, checked=checked)
    # on one thread unless distinct: its stores land in the order the IR gives them, and two never race for
    # one element
    updates = yield from _program(kernel.updates, checked=checked, serial=not kernel.distinct)
    return ScatterProgram(kernel, [base, updates], base.compile_seconds + updates.compile_seconds, checked)


def _split_reduction_program(kernel: Kernel, split: list[Kernel], checked: bool) \
        -> Generator[Job, Compiled, SplitReductionProgram]:
    programs = []
    for k in split:
        programs.append((yield from _program(k, checked=checked)))
    return SplitReductionProgram(kernel, programs, sum(p.compile_seconds for p in programs), checked)


def _split_scatter(kernel: Scatter) -> list[Kernel] | None:
    """The scatter's updates split into chunks that fold into copies of the output of their own (`split_scatter`)
    where they are many beside the output and the pool has threads to share them; else None."""
    threads, updates = num_threads(), kernel.updates.numel
    parts = threads * CHUNKS_PER_THREAD
    if threads < 2 or updates < SCATTER_SPLIT_MIN \
            or kernel.buffers[0].size * parts * COLUMN_SPLIT_INPUT_PER_PARTIAL > updates:
        return None
    return split_scatter(kernel, parts)


def _partials(kernel: Kernel) -> list[Kernel] | None:
    """The kernel split into partial reductions where the work pays for the split and its output loop cannot
    feed the pool, or it is a column reduction (`render.column_reductions`) that each thread would otherwise
    stream a strip of every row of, whose partial results are few beside its input; else None."""
    threads, total = num_threads(), work(kernel)
    parts = threads * CHUNKS_PER_THREAD
    if threads < 2 or total < SPLIT_MIN_WORK:
        return None
    feeds_pool = kernel.loops[0].size >= threads
    if feeds_pool and not (kernel.numel * parts * COLUMN_SPLIT_INPUT_PER_PARTIAL <= total and column_reductions(kernel)):
        return None
    split = split_reduction(kernel, parts)
    # a split in levels (a reduction of a reduction) only where the output loop cannot feed the pool: a column
    # one (`x.std(0)`) already shares its columns, and each level would stream the input again
    return None if split is None or (feeds_pool and len(split) > 2) else split


def _contraction_program(c: Contraction, checked: bool, layout: Layout | None = None,
                         packs: tuple[Pack, Pack] | None = None, epilogue: Kernel | None = None) \
        -> Generator[Job, Compiled, ContractionProgram]:
    """`c` compiled at its sizes; or, given its `layout`, its packing kernels and its epilogue generic over sizes
    (`_generic_contraction`), its GEMM step reading the geometry from the call's frame."""
    layout = layout or Layout.choose(c, num_threads())
    stages = []
    for pack in packs or pack_kernels(c, layout):
        stages.append((yield from _program(pack.kernel, pack, checked)))
    seconds = 0.0
    name = symbol(core_name(c, layout), checked)
    if (core := _gemm_cores.get(name)) is None:  # the core serves every contraction of its dtype and tile
        source = render_gemm_core(c, layout, checked)
        optimized, _, seconds = yield source, name, False
        core = _gemm_cores.setdefault(name, (source, optimized))
    _, address, call_seconds = yield render_gemm(c, layout, checked, packs is not None), symbol(c.name, checked), False
    # The stage shows its core's IR (LT_DEBUG): the function of its own only passes the geometry on. A loop
    # iteration of a plain kernel costs about a cycle; the micro-kernel does NR multiply-adds in one.
    stages.append(Program(c, *core, seconds + call_seconds, _KernelFn(address), layout.tasks(c),
                          c.numel // layout.nr, checked))
    if c.epilogue is not None:
        stages.append((yield from _program(epilogue or c.epilogue, checked=checked)))
    return ContractionProgram(c, stages, sum(p.compile_seconds for p in stages), checked, layout=layout)


def _generic_contraction(c: Contraction, over: frozenset[int]) -> Generator[Job, Compiled, ContractionProgram | None]:
    """`c` compiled generic over the loops at positions `over` of its `sized_loops()` (`kernels/symbolic.py`), or
    None where the template cannot be: over m and n, or k alone, of a single product (a batch's over any of them,
    packed at the geometry's strides, `gemm.generic_pack_kernels`), the packing
    kernels generic over their outermost loop only, and the epilogue over its loops that differ (the frame's slots
    after the parameters hold the geometry, then the sizes the epilogue reads, `Kernel.extents`). The tile is `Layout.choose`'s at this size
    but two vectors wide where n varies; where a single product's k varies, the panels are in blocks of KC_TARGET k's
    (`Layout.blocked`)."""
    loops = c.sized_loops()
    wide = frozenset(loops[k] for k in over)
    vb, _, vn, vk = c.vars
    core = wide & set(c.vars[1:])
    if not core or vk in core and len(core) > 1 and vb.size == 1:
        return None
    legal = legalize(c, NATIVE)
    epilogue = c.epilogue
    if epilogue is not None and vn in core and vb.size == 1:
        if any(v.op is VOp.GATHER and v.arg == c.product for v in epilogue.values()):
            return None
        # the product's row length varies: the epilogue reads it at the n of the geometry the call passes
        n = GEOMETRY.index("n")
        epilogue = replace(c.reading_rows_of(param(len(c.params) + n, int64)),
                           params=(*c.params, *(int64 for _ in range(n + 1))))
    if epilogue is not None and (ends := wide - core):
        # the sizes it needs passed (`Kernel.extents`: a batch's strides of the product) after the geometry's
        epilogue = generic(replace(epilogue, params=(*c.params, *(int64 for _ in GEOMETRY))),
                           frozenset(k for k, v in enumerate(epilogue.sized_loops()) if v in ends))
    epilogue = legalize(epilogue, NATIVE) if epilogue is not None else None
    code = Layout.choose(legal, num_threads())
    code = replace(code, nr=2 * code.lanes) if vn in core and (vb.size > 1 or vk not in core) else code
    code = replace(code, blocked=True, kc=KC_TARGET) if vk in core and vb.size == 1 else code
    named = replace(legal, name=c.default_name(generic=tuple(wide)))
    layout = Layout.choose(named, num_threads(), code)
    # an operand packed over a generic loop: its kernel generic over it, made from the operands over unbounded
    # variables, as the sizes it will run at (`unbounded`)
    far = unbounded(named, core)
    far_core = frozenset(w for v, w in zip(named.vars, far.vars) if v in core)
    packs = tuple(pack.generic() if pack.covers in far_core and not pack.strides else pack
                  for pack in generic_pack_kernels(far, layout, far_core))
    # the buffers of this size, not the unbounded ones' (past int64): what a checked compile's tests read
    buffers = named.buffers + layout.packed_buffers(named)
    # and the epilogue's sizes in the parameters: a checked kernel records a fault in the slots after them all
    passed = tuple(int64 for _ in (epilogue.extents if epilogue is not None else ()))
    packs = tuple(replace(pack, kernel=replace(pack.kernel, buffers=buffers, params=(*pack.kernel.params, *passed)))
                  for pack in packs)
    if any(pack.kernel.extents for pack in packs):
        return None  # a count of the packing's outer loop would need its size passed
    program = yield from _contraction_program(named, False, layout, packs, epilogue)
    shared = SharedScratch()
    return replace(program, _lock=shared.lock, _shared=shared)


def _sort_program(kernel: Sort, checked: bool) -> Generator[Job, Compiled, SortProgram]:
    source = render_sort(kernel, checked)
    optimized, address, seconds = yield source, symbol(kernel.name, checked), False
    rows = Program(kernel, source, optimized, seconds, _KernelFn(address), kernel.rows, sort_work(kernel), checked)
    return SortProgram(kernel, [rows], seconds, checked)


def _scan_program(kernel: Scan, checked: bool) -> Generator[Job, Compiled, ScanProgram]:
    # Where the rows cannot keep the threads busy, cut each row: across its lanes into blocks, which are
    # independent, or, a row of single values long enough to pay for the two more passes, into chunks
    # (decided at compile time, as a split reduction is).
    threads = num_threads()
    pieces = 1
    if kernel.rows < threads and kernel.inner >= 2 * SCAN_BLOCK_MIN:
        pieces = min(-(-threads * CHUNKS_PER_THREAD // kernel.rows), kernel.inner // SCAN_BLOCK_MIN)
    elif kernel.rows < threads and kernel.inner == 1 and kernel.n >= SCAN_SPLIT_MIN:
        pieces = min(-(-threads * CHUNKS_PER_THREAD // kernel.rows), kernel.n // (SCAN_SPLIT_MIN // 16))
    extents = {"fold": (kernel.rows * pieces, kernel.numel), "offsets": (kernel.rows, 0),
               "add": (kernel.rows * pieces, kernel.numel)}
    programs = []
    for stage in stages(kernel, pieces):
        extent, work = extents[stage]
        source = render_scan(kernel, pieces, stage, checked)
        optimized, address, seconds = yield source, symbol(f"{kernel.name}_{stage}{pieces}", checked), False
        programs.append(Program(kernel, source, optimized, seconds, _KernelFn(address), extent, work, checked))
    return ScanProgram(kernel, programs, sum(p.compile_seconds for p in programs), checked, chunks=pieces)


def _library_program(call: LibraryCall) -> Generator[Job, Compiled, LibraryProgram]:
    yield from ()  # nothing to compile: the routine is NumPy's
    fn = _KernelFn(library.chunk_function(call))
    return LibraryProgram(call, f"; {call.routine} by NumPy's linalg (LAPACK): no LLVM IR", "", 0.0, fn, call.batch,
                          call.batch * flops(call.routine, call.shapes))


def _builder(kernel: Kernel | Contraction | Scatter | Sort | Scan | LibraryCall, checked: bool,
             varying: frozenset[int] = frozenset(), changed: frozenset[int] = frozenset()) -> Builder:
    """How `kernel` becomes a program: one that may run generic over sizes of its loops (`_sized_program`; those
    of `varying` or `changed` from the first), or legalized for the renderer (`render.NATIVE`), then split or
    packed."""
    if (erased := _erased(kernel, checked)) is not None:
        return _sized_program(kernel, erased, varying, changed)
    kernel = legalize(kernel, NATIVE)
    if isinstance(kernel, Contraction):
        return _contraction_program(kernel, checked)
    if isinstance(kernel, Scatter):
        return _scatter_program(kernel, checked)
    if isinstance(kernel, Sort):
        return _sort_program(kernel, checked)
    if isinstance(kernel, Scan):
        return _scan_program(kernel, checked)
    if isinstance(kernel, LibraryCall):
        return _library_program(kernel)
    if (split := _partials(kernel)) is not None:
        return _split_reduction_program(kernel, split, checked)
    return _program(kernel, checked=checked)


def _sized_program(kernel: Kernel | Contraction, erased: str, varying: frozenset[int] = frozenset(),
                   changed: frozenset[int] = frozenset()) -> Generator[Job, Compiled, Program | ContractionProgram]:
    """`kernel` compiled as it is the first time its erased text compiles; at other sizes of its sized loops
    (`Kernel.sized_loops`), the generic kernel of that text over the loops whose sizes were seen to differ
    (`symbolic.generic`) compiled, which this kernel and every later one of the text whose other sizes are the
    same run (`_found`). A kernel that differs in one of those too compiles a generic kernel over it as well.
    Under `symbolic.DYNAMIC` True (`lt.jit(fn, dynamic=True)`), the first compile is generic over every sized
    loop; otherwise over those whose sizes are among `changed` (the sizes that changed since the program was last
    scheduled, `Schedule.changed`), or where none did, among `varying` (`_varying`), if any."""
    now, dynamic = sizes(kernel), DYNAMIC.get()
    if (template := _generic.get(erased)) is None or not template.serves(now):
        first = _first_sizes.setdefault(erased, now)
        before, over = (first, frozenset()) if template is None else (template.sizes, template.over)
        over |= {k for k, (a, b) in enumerate(zip(before, now)) if a != b or dynamic}
        sized = kernel.sized_loops()
        seen = multiples(kernel, changed or varying) if template is None and first == now and dynamic is None \
            else frozenset()
        attempts = [over | seen, over]
        if dynamic and isinstance(kernel, Contraction) and kernel.vars[3] in sized \
                and before[(k := sized.index(kernel.vars[3]))] == now[k]:
            attempts.append(over - {k})  # a template generic over m and n, its k a constant (`_generic_contraction`)
        # generic over the loops whose sizes vary elsewhere in the batch too where it can be, else over its own
        for attempt in dict.fromkeys(loops for loops in attempts if loops):
            if isinstance(kernel, Contraction):
                made = yield from _generic_contraction(kernel, attempt)
            else:  # made before legalizing: the counts it computes are the constants the erased text names
                made = yield from _program(legalize(generic(kernel, attempt), NATIVE))
            if made is not None:
                break
        else:
            return (yield from _specialized(kernel))
        over = attempt
        template = Template(made, over, now)
        if (kept := _generic.get(erased)) is None or not kept.over >= over:  # kept: a wider one of its batch
            _generic[erased] = template
    return template.program.sized(kernel, template.over)


def _specialized(kernel: Kernel | Contraction) -> Generator[Job, Compiled, Program | ContractionProgram]:
    """`kernel` compiled at its own sizes, unchecked."""
    kernel = legalize(kernel, NATIVE)
    return (yield from _contraction_program(kernel, False) if isinstance(kernel, Contraction) else _program(kernel))


# Below this much IR in new modules (about half a second of compiling), a batch compiles here, one module
# after another: a compile worker takes some 200 ms to start (once per process).
SIDE_BY_SIDE_MIN_CHARS = 1 << 17


class _Workers:
    """Compile processes (`compiler.py`), started on first need and kept for the life of the process."""

    def __init__(self) -> None:
        self.procs: list[subprocess.Popen] = []
        self.lock = threading.Lock()  # one batch at a time: the workers answer in the order they are asked

    def started(self, n: int) -> list[subprocess.Popen]:
        """Up to `n` workers, starting those missing (none where this Python cannot start a process)."""
        while len(self.procs) < n:
            try:
                proc = subprocess.Popen([sys.executable, str(Path(compiler.__file__))], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE)
            except OSError:
                break
            self.procs.append(proc)
        return self.procs[:n]

    def drop(self, proc: subprocess.Popen) -> None:
        """Forget a worker that stopped answering, or owes answers no one will read (a later batch starts
        another)."""
        if proc in self.procs:
            self.procs.remove(proc)
        proc.kill()
        proc.wait()

    def close(self) -> None:
        for proc in self.procs:
            try:
                proc.stdin.close()  # a worker ends when its input does
            except OSError:
                proc.kill()
            proc.wait()
        self.procs.clear()


_workers = _Workers()
atexit.register(_workers.close)


def _compile_here(jobs: list[Job]) -> list[compiler.Answer]:
    j = jit()
    with j.lock:
        return compiler.compile_batch(j.machine, [(source, wide) for source, _, wide in jobs])


def _compile_side_by_side(jobs: list[Job]) -> list[tuple[Compiled, bool] | None]:
    """Compile the jobs, each distinct one once, shared out among this thread and the workers (where the
    batch is worth starting them), but those the persistent cache holds; each with whether it was compiled
    (not found), or None for a job that failed (compiling it alone reports why)."""
    slot: dict[str, int] = {}
    every: list[Job] = []
    for job in jobs:
        if slot.setdefault(job[0], len(every)) == len(every):
            every.append(job)
    kept = {i: found for i, (source, _, wide) in enumerate(every) if (found := disk_cache.load(source, wide))}
    unique = [job for i, job in enumerate(every) if i not in kept]
    helpers = min(num_threads(), len(unique)) - 1
    if helpers < 1 or not _workers.procs and sum(len(job[0]) for job in unique) < SIDE_BY_SIDE_MIN_CHARS:
        helpers = 0
    with _workers.lock:
        procs = _workers.started(helpers)
        shares: list[list[int]] = [[] for _ in range(len(procs) + 1)]  # the last one is this thread's
        sizes = [0] * len(shares)
        for i in sorted(range(len(unique)), key=lambda i: -len(unique[i][0])):  # largest first, to the least busy
            least = sizes.index(min(sizes))
            shares[least].append(i)
            sizes[least] += len(unique[i][0])
        asked: list[tuple[subprocess.Popen, list[int]]] = []
        try:
            for proc, share in zip(procs, shares):
                try:
                    compiler.send(proc.stdin, [(unique[i][0], unique[i][2]) for i in share])
                    asked.append((proc, share))
                except OSError:  # the worker died: its share is compiled here
                    _workers.drop(proc)
                    shares[-1] += share
            answers = dict(zip(shares[-1], _compile_here([unique[i] for i in shares[-1]])))
            while asked:
                proc, share = asked[0]
                try:
                    answers.update(zip(share, compiler.receive(proc.stdout)))
                except EOFError:
                    _workers.drop(proc)
                    answers.update(zip(share, _compile_here([unique[i] for i in share])))
                asked.pop(0)
        except BaseException:  # interrupted (Ctrl-C): a worker still owing answers would give them to the next batch
            for proc, _ in asked:
                _workers.drop(proc)
            raise
    fresh = iter(range(len(unique)))
    compiled: list[tuple[Compiled, bool] | None] = []
    for i, (source, name, wide) in enumerate(every):
        if i in kept:
            compiled.append(((kept[i][0], jit().load(kept[i][1], name), 0.0), False))
            continue
        optimized, obj, seconds, error = answers[next(fresh)]
        if error is None:
            disk_cache.store(source, wide, optimized, obj)
        compiled.append(None if error is not None else ((optimized, jit().load(obj, name), seconds), True))
    return [compiled[slot[job[0]]] for job in jobs]


def compile_kernel(kernel: Kernel | Contraction | Scatter | Sort | Scan | LibraryCall) \
        -> tuple[Program | StagedProgram, bool]:
    """Compile `kernel` (checked if `bounds.CHECK`, from `LT_CHECK_BOUNDS`), or find the program compiled for
    the same body.

    Returns the program and whether this call compiled it (not found here, nor its code in the persistent
    cache)."""
    key = (kernel.body_text(), bounds.CHECK)
    if (hit := _found(kernel, key)) is not None:
        return hit, False
    with _compiling:
        if (hit := _found(kernel, key)) is not None:  # another thread compiled it meanwhile
            return hit, False
        program, compiled = _built(_builder(kernel, key[1]))
        _programs[key] = program
    return program, compiled


def _built(builder: Builder) -> tuple[Program | StagedProgram, bool]:
    """The program a builder makes, its jobs compiled here one after another; and whether any job was compiled
    (not found in the persistent cache)."""
    result, compiled = None, False
    try:
        while True:
            result, fresh = _compile(builder.send(result))
            compiled |= fresh
    except StopIteration as done:
        return done.value, compiled


def _varying(kernels: Sequence[Kernel | Contraction | Scatter | Sort | Scan | LibraryCall]) -> frozenset[int]:
    """The sizes seen to vary among a batch of kernels (one realize's, `compile_kernels`): those of the sized
    loops (`symbolic`) of a kernel whose sizes differ there from its erased text's first. A kernel new to the process whose sized loops have one of those sizes (a product the
    scheduler takes to the template from a larger batch on, in a step whose other kernels already run
    generic over the batch) compiles generic over those loops at once, not first at its own sizes."""
    varying: set[int] = set()
    for kernel in kernels:
        if (erased := _erased(kernel, bounds.CHECK)) is not None and (first := _first_sizes.get(erased)) is not None:
            varying.update(n for n, was in zip(sizes(kernel), first) if n != was)
    return frozenset(varying)


def compile_kernels(kernels: Sequence[Kernel | Contraction | Scatter | Sort | Scan | LibraryCall],
                    changed: frozenset[int] = frozenset()) -> list[Kernel | Contraction | Scatter | Sort | Scan | LibraryCall]:
    """Compile the kernels not compiled yet, side by side: their jobs go to compile workers (processes,
    `compiler.py`), one fewer than `num_threads()`, while this thread compiles its share; the programs are
    then found by `compile_kernel`. Returns the kernels it compiled (the first of each body). A kernel new to
    the process with loops of the sizes `changed` (that changed since its program was last scheduled) compiles
    generic over them at once (`_sized_program`), its strides that are those sizes read at runtime (`_strided`)."""
    if all(_found(kernel, (kernel.body_text(), bounds.CHECK)) is not None for kernel in kernels):
        return []  # every realize after the first
    with _compiling:
        builders: dict[tuple[str, bool], Builder] = {}
        first: dict[tuple[str, bool], Kernel | Contraction | Scatter | Sort | Scan | LibraryCall] = {}
        forms = {kernel.body_text(): _strided(kernel, changed) for kernel in kernels}
        varying = _varying(list(forms.values()))
        for kernel in kernels:
            form = forms[kernel.body_text()]
            if _found(form, key := (kernel.body_text(), bounds.CHECK)) is None and key not in builders:
                builders[key], first[key] = _builder(form, key[1], varying, changed), kernel
        jobs, done, fresh = {}, [], set()
        for key, builder in builders.items():
            try:
                jobs[key] = next(builder)
            except StopIteration as finished:  # nothing to compile (a library call)
                _programs[key] = finished.value
                done.append(first[key])
        while jobs:
            results = _compile_side_by_side(list(jobs.values()))
            waiting = {}
            for (key, _), result in zip(jobs.items(), results):
                if result is None:  # left to `compile_kernel`, which raises the error where the kernel runs
                    builders[key].close()
                    continue
                if result[1]:
                    fresh.add(key)
                try:
                    waiting[key] = builders[key].send(result[0])
                except StopIteration as finished:
                    _programs[key] = finished.value
                    if key in fresh:  # compiled, not all of it found in the persistent cache
                        done.append(first[key])
            jobs = waiting
    return done
