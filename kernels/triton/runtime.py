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
asynchronous, queued on the device's stream, through the launcher of the kernel
compiled for the arguments' specialization (`Program.__call__`): Triton's
`JITFunction.run` binds the arguments and looks the kernel up at every launch.

A kernel whose grid has too few programs to keep the GPU's processors busy (a
full reduction has one) and whose reductions are long enough compiles to a
`StepsProgram`: `kernels/split.py`'s partial reductions, a grid of
programs writing a scratch buffer, then the combine.

Triton asks its active driver for the current device and stream. Triton 3.6's
CUDA driver asks torch, and without torch Triton 3.9 uses the default stream,
so lazytensor installs a subclass of Triton's CUDA driver that answers from the
launch in progress (`cuda.launching`) and passes every other question, and
every launch lazytensor did not make, to Triton's own driver.

Sizes that change compile once (issue 18, `kernels/symbolic.py`), by the CPU backend's rule: the second size
of a kernel's erased text (or the first, where its sizes changed since its program was last scheduled)
compiles `symbolic.generic`'s kernel, whose loop sizes are int64 arguments after the scalar parameters and
whose grid each launch computes from them (`TritonSource.programs`); every later kernel of the text runs it
(`Program.sized`). The tl.dot template without a packed operand compiles generic over its m, n and k, those
that change, the same way (`_generic_contraction`), its epilogue generic too (fused, or a kernel apart over C in
scratch of each call's size), and so does a batch's product over a size its strides read (`symbolic.symbolized`,
as on the CPU); kernels that split at their size specialize.

A `Contraction` compiles to a `ContractionProgram` (see `gemm.py`): its pack
kernels, its tl.dot kernel and its epilogue kernel, each a `Program`. The tl.dot
kernel's tile configuration is timed on the GPU the first time a contraction of its
shape, dtype and precision runs, and the fastest is kept for every later one in the
process; under the interpreter there is one configuration and nothing is timed.
Whether float32 may use TF32 (`gemm.set_allow_tf32`) is part of a contraction's
compile cache key.
"""
from __future__ import annotations

import copy
import hashlib
import importlib.util
import os
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from triton.runtime.driver import driver as triton_driver
from triton.runtime.errors import OutOfResources

from ..claim import claim_scatter
from ..dtype import DType, bool_, int64
from ..expr import Var
from ..ir import BufferParam, Contraction, Kernel, LibraryCall, Scan, Scatter, Sort, VOp, param
from ..legalize import legalize
from ..split import most_parts, split_reduction
from ..symbolic import DYNAMIC, Template, eligible, enabled, generic, multiples, sizes, skeleton, symbolized, unbounded
from . import cuda
from .gemm import GemmConfig, GemmPlan, candidate_configs, generic_plan, input_precision, plan, render_gemm
from .render import NATIVE, Tiling, TritonSource, identifier, memory_dtype, programs, render
from .scan import render_scan
from .sort import padded, render_final, render_init, render_step, steps
from .targets import Target

# A GPU keeps several programs in flight on each processor (an SM), hiding the latency of one's loads behind
# the others': a reduction whose grid has at most half this many programs per processor is split into partial
# reductions, a power of two of them to each of its programs, for at most this many per processor in all.
PROGRAMS_PER_PROCESSOR = 8
# Elements of a reduction each of its partial reductions takes at least: a program's tile (fewer, and the
# renderer gives a program several chunks, or its loads are too few to pay for its launch and the combine).
SPLIT_MIN_CHUNK = Tiling().max_tile

# Autotuning times each configuration for about this long, after a first launch that loads it.
TUNE_SECONDS = 0.01


def cache_dir() -> Path:
    """Where rendered Triton modules are written: $LT_CACHE_DIR/triton, by default ~/.cache/lazytensor/triton."""
    return Path(os.environ.get("LT_CACHE_DIR") or Path.home() / ".cache" / "lazytensor") / "triton"


class Program:
    """A rendered function compiled for one target: call it with buffer addresses and scalar parameters.

    `buffers` are the buffers `source.slots` index (by default the kernel's own); the function takes
    `slots` of them, all unless the source says otherwise. `launch` picks them from a table of all."""

    def __init__(self, kernel: Kernel | Contraction | Sort | Scan, source: TritonSource, path: Path, fn: Any,
                 target: Target,
                 buffers: tuple[BufferParam, ...] | None = None, params: tuple[DType, ...] | None = None):
        self.kernel, self.source, self.path, self.fn, self.target = kernel, source, path, fn, target
        self.buffers = kernel.buffers if buffers is None else buffers
        self.params = kernel.params if params is None else params
        self.slots = tuple(range(len(self.buffers))) if source.slots is None else source.slots
        self.compile_seconds = 0.0
        self.compiled: Any = None  # Triton's CompiledKernel, once compiled for a GPU
        # a generic program's (`kernels/symbolic.py`), as its kernel's (`sized`): the names of the loops whose
        # sizes it is passed, and those sizes, after the scalar parameters (`Kernel.extents`)
        self.generic_over: str | None = None
        self.sizes: tuple[int, ...] = ()
        self._dtypes = [memory_dtype(self.buffers[slot].dtype) for slot in self.slots]
        self._bools = [i for i, d in enumerate(self.params) if d == bool_]
        self._ints = [i for i, d in enumerate(self.params) if not d.is_float]  # bools too: passed as ints
        # the kernel Triton compiled for each specialization of the arguments launched with (`_specialization`),
        # launched on each call's grid: keyed by the grid too, a generic program's launches over sizes that keep
        # changing would keep one launcher for each grid ever seen
        self._kernels: dict[tuple, Any] = {}
        # Compile options, the same for every launch. No multiply and add contracted into a fused one: a kernel
        # computes what its IR says, rounding each op as the CPU backend does (legalization's double-double
        # arithmetic is exact only so). Stated, not left to the Triton version (3.6 contracts, 3.9 warns
        # that its default will change).
        # Nor are subnormal numbers flushed to zero in libdevice's functions (Triton's default): the IR's floats
        # are IEEE's, as on the CPU.
        self.options: dict[str, Any] = {"num_warps": source.num_warps, "enable_fp_fusion": False,
                                        "enable_reflect_ftz": False}
        if source.num_stages is not None:
            self.options["num_stages"] = source.num_stages

    @property
    def name(self) -> str:
        return self.kernel.name

    @property
    def llvm_ir(self) -> str:
        """The LLVM IR Triton generated, optimized (LT_DEBUG=3); the interpreter has none: there the Triton source."""
        return self.compiled.asm["llir"] if self.compiled is not None else self.source.source

    optimized_ir = llvm_ir  # Triton optimizes the LLVM IR it makes before it hands it over

    @property
    def assembly(self) -> str:
        """The PTX Triton generated (LT_DEBUG=4); the Triton source under the interpreter."""
        return self.compiled.asm["ptx"] if self.compiled is not None else self.source.source

    def artifacts(self) -> dict[str, str | bytes]:
        """Files of what compiling made, by name (a dump's): the Triton source, and on a GPU what Triton made of it."""
        name = self.source.name
        out: dict[str, str | bytes] = {f"{name}.triton.py": self.source.source}
        for kind, content in (self.compiled.asm.items() if self.compiled is not None else ()):
            if kind in ("ttir", "ttgir", "llir", "ptx", "cubin"):
                out[f"{name}.{kind}"] = content
        return out


    def sized(self, kernel: Kernel, over: frozenset[int]) -> Program:
        """This program, generic over the loops at positions `over` of `sized_loops()`, as `kernel`'s, a kernel of
        the erased text it was compiled for (`kernels/symbolic.py`): the code shared, the sizes passed
        `kernel`'s."""
        loops = [v for k, v in enumerate(kernel.sized_loops()) if k in over]
        size = {v.name: v.size for v in _loops(kernel)}
        return self.passing(kernel, ", ".join(v.name for v in loops), tuple(size[v.name] for v in self.kernel.extents))

    def passing(self, kernel: Kernel | Contraction, generic_over: str, sizes: tuple[int, ...]) -> Program:
        """This generic program as `kernel`'s, passed `sizes` after the parameters."""
        program = copy.copy(self)  # its compiled kernels shared (`_kernels`)
        program.kernel, program.generic_over, program.sizes = kernel, generic_over, sizes
        return program

    def _args(self, buffers: Sequence[int], params: Sequence[bool | int | float]) -> list[object]:
        kernel_arg = self.target.kernel_arg
        args: list[object] = [kernel_arg(ptr, dtype) for ptr, dtype in zip(buffers, self._dtypes)]
        args += params
        # bools as ints: Triton 3.6's interpreter cannot take a Python bool argument (the kernel casts to int1)
        for i in self._bools:
            args[len(buffers) + i] = int(params[i])
        return args

    def _specialization(self, buffers: Sequence[int], params: Sequence[bool | int | float]) -> tuple:
        """A key at least as fine as the one Triton compiles a kernel for: pointers by 16-byte alignment,
        integers by width, divisibility by 16 and being 1 (a constant then); floats are not specialized."""
        return (*(ptr % 16 == 0 for ptr in buffers), *(_int_key(int(params[i])) for i in self._ints))

    def _kernel(self, key: tuple, args: list[object], grid: int) -> Any:
        """The kernel compiled for `args` (Triton compiles it unless its cache has it), its module loaded on the
        device."""
        with self.target.launching():
            compiled = self._kernels[key] = self.fn.warmup(*args, grid=(grid,), **self.options)
            compiled[(grid, 1, 1)]  # loads the module on the device, under `launching`
        return compiled

    def compile(self) -> None:
        """Compile for the GPU now, with arguments of the launch's types (all pointers are 16-byte aligned)."""
        buffers, zeros = [0] * len(self.slots), [0.0 if d.is_float else 0 for d in self.params]
        with self.target.launching():
            self.compiled = self.fn.warmup(*self._args(buffers, zeros), grid=(self.source.grid,), **self.options)

    def __call__(self, buffers: Sequence[int], params: Sequence[bool | int | float]) -> None:
        """Launch on the addresses of the buffers in `slots`, in order.

        On a GPU, through the launcher of the kernel compiled for the arguments' specialization, as the end
        of Triton's `JITFunction.run` does, without its per-launch binding of arguments and cache look-ups.
        A generic program is passed its sizes after `params`, its grid following them."""
        params = [*params, *self.sizes]
        grid = self.source.programs(params)
        if grid == 0:  # a generic kernel's rows are none: it writes nothing
            return
        args = self._args(buffers, params)
        if self.compiled is None:  # the interpreter
            with self.target.launching():
                self.fn[(grid,)](*args, **self.options)
            return
        key = self._specialization(buffers, params)
        compiled = self._kernels.get(key) or self._kernel(key, args, grid)
        self.target.activate()
        compiled[(grid, 1, 1)](*args, stream=self.target.stream)

    def launch(self, table: Sequence[int | None], params: Sequence[bool | int | float]) -> None:
        """Launch on the addresses in `table`, one for each of `buffers` (None for those it does not take)."""
        self([table[slot] for slot in self.slots], params)


def _int_key(value: int) -> tuple[bool, ...]:
    """How Triton specializes an integer argument: 1 is a constant; else its type (int32, int64 or uint64) and
    whether 16 divides it."""
    return (True,) if value == 1 else (False, value % 16 == 0, -2**31 <= value < 2**31, value < 2**63)


class _Composite:
    """A program of several Triton programs (`parts`) run one after another: its IR, assembly and files are
    theirs, in order."""

    kernel: Any

    def parts(self) -> list[Program]:
        raise NotImplementedError

    @property
    def name(self) -> str:
        return self.kernel.name

    @property
    def llvm_ir(self) -> str:
        return "\n".join(part.llvm_ir for part in self.parts())

    optimized_ir = llvm_ir

    @property
    def assembly(self) -> str:
        return "\n".join(part.assembly for part in self.parts())

    def artifacts(self) -> dict[str, str | bytes]:
        return {name: content for part in self.parts() for name, content in part.artifacts().items()}


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


class ContractionProgram(_Composite):
    """A contraction compiled for one target: pack kernels, the tl.dot kernel, then the epilogue kernel
    unless the tl.dot kernel fused it. Called like a `Program`, with the addresses of the output and the
    inputs (the contraction's buffers without its scratch) and the scalar parameters.

    It allocates its scratch buffers (the product C where a separate epilogue reads it, the packed
    operands) on the device at each call, and lets them go after: the caching allocator makes that cheap,
    and the stream runs whatever uses the memory next after this call's kernels."""

    def __init__(self, plan: GemmPlan, packs: list[Program], candidates: dict[GemmConfig, Program],
                 epilogue: Program | None, target: Target, tune_key: tuple):
        self.kernel, self.plan, self.target, self.tune_key = plan.contraction, plan, target, tune_key
        self.packs, self.candidates, self.epilogue = packs, candidates, epilogue
        # the tl.dot kernel, once chosen: at the first call when there are configurations to time
        self.gemm: Program | None = next(iter(candidates.values())) if len(candidates) == 1 else None
        self.compile_seconds = 0.0
        taken = {slot for step in self.parts() for slot in step.slots}
        self.scratch = [slot for slot, b in enumerate(plan.buffers) if b.scratch and slot in taken]
        self.generic_over: str | None = None  # a generic template's, as a contraction's (`sized`): its loops' names
        self.passed: tuple[str, ...] = ()  # a generic template's: the names of the loops of m, n, k passed, in order

    def sized(self, c: Contraction, over: frozenset[int]) -> ContractionProgram:
        """This template, generic over some of its m, n and k (`_generic_contraction`), as `c`'s, a contraction of
        the erased text it was compiled for: its tl.dot kernels passed `c`'s sizes of them (the one timed fastest
        alone, once timed)."""
        sizes = tuple(v.size for v in c.vars if v.name in self.passed)
        generic_over = ", ".join(self.passed)
        program = copy.copy(self)
        if self.epilogue is not None:  # run apart, generic: passed m, n and k, then its own sizes; C of c's size
            size = {v.name: v.size for v in _loops(c.epilogue)}
            ends = tuple(size[v.name] for v in self.epilogue.kernel.extents)
            program.epilogue = self.epilogue.passing(c.epilogue, generic_over, (*sizes, *ends))
            program.plan = replace(self.plan, buffers=c.buffers)
        best = _tuned.get(self.tune_key)
        candidates = {best: self.candidates[best]} if best in self.candidates else self.candidates
        program.candidates = {config: p.passing(c, generic_over, sizes) for config, p in candidates.items()}
        program.gemm = next(iter(program.candidates.values())) if len(program.candidates) == 1 else None
        program.kernel, program.generic_over = c, generic_over
        return program

    def parts(self) -> list[Program]:
        """The programs a call runs, in order (every candidate tl.dot kernel until one is chosen)."""
        gemms = [self.gemm] if self.gemm is not None else list(self.candidates.values())
        return [*self.packs, *gemms, *([self.epilogue] if self.epilogue is not None else [])]

    def __call__(self, buffers: Sequence[int], params: Sequence[bool | int | float]) -> None:
        # An address for each of plan.buffers: the caller's for the output and the inputs, in order, and
        # this call's for the scratch buffers some step takes.
        given = iter(buffers)
        table: list[int | None] = [None if b.scratch else next(given) for b in self.plan.buffers]
        allocations = []  # held until the launches are queued
        for slot in self.scratch:
            b = self.plan.buffers[slot]
            allocations.append(self.target.alloc(b.size * memory_dtype(b.dtype).itemsize))
            table[slot] = allocations[-1].ptr
        for pack in self.packs:
            pack.launch(table, params)
        if self.gemm is None:
            self.gemm = self._autotune(table, params)
        self.gemm.launch(table, params)
        if self.epilogue is not None:
            self.epilogue.launch(table, params)

    def _autotune(self, table: Sequence[int | None], params: Sequence[bool | int | float]) -> Program:
        """Time every candidate on this call's buffers; keep the fastest for every contraction like this one."""
        seconds: dict[GemmConfig, float] = {}
        for config, program in self.candidates.items():
            try:
                seconds[config] = _seconds_per_launch(program, table, params)
            except OutOfResources:  # its tiles need more shared memory than this GPU has
                continue
        if not seconds:
            raise RuntimeError(f"no tile configuration of {self.name} fits this GPU: tried "
                               f"{', '.join(map(str, self.candidates))}")
        best = min(seconds, key=seconds.__getitem__)
        _tuned[self.tune_key] = best
        self.candidates = {best: self.candidates[best]}
        return self.candidates[best]


class StepsProgram(_Composite):
    """A kernel compiled to several kernels, run one after the other on one buffer table: the kernel's
    buffers, then `scratch` buffers allocated for each call. A scatter's base and updates where the updates
    fold or are distinct; else the base, claim and write kernels of `claim.claim_scatter`, with their claims
    as scratch, which keep the last of several writes to an element as the IR says (plain parallel stores
    would keep any one). A reduction split by `split.split_reduction`: its partial reductions, with their
    results as scratch, then their combine."""

    def __init__(self, kernel: Kernel | Scatter, steps: list[Program], scratch: tuple[BufferParam, ...],
                 target: Target):
        self.kernel, self.steps, self.scratch, self.target = kernel, steps, scratch, target
        self.compile_seconds = 0.0

    def parts(self) -> list[Program]:
        return self.steps

    def __call__(self, buffers: Sequence[int], params: Sequence[bool | int | float]) -> None:
        held = [self.target.alloc(b.size * memory_dtype(b.dtype).itemsize) for b in self.scratch]
        table = [*buffers, *(h.ptr for h in held)]
        for step in self.steps:
            step.launch(table, params)


class SortProgram(_Composite):
    """A `Sort` compiled for one target: the bitonic network of `sort.py` (init, a step per layer, final) on
    work buffers allocated for each call."""

    def __init__(self, kernel: Sort, target: Target):
        self.kernel, self.target = kernel, target
        p = padded(kernel)
        work = (BufferParam(kernel.key_dtype, kernel.rows * p), BufferParam(int64, kernel.rows * p))
        self.work = work
        name = identifier(kernel.name)
        self.init = _program(kernel, render_init(kernel, f"{name}_init"), target, (kernel.buffers[1], *work))
        self.step = _program(kernel, render_step(kernel, f"{name}_step"), target, (*work, *work), (int64, int64))
        final_from = work[0] if kernel.values else work[1]
        self.final = _program(kernel, render_final(kernel, f"{name}_final"), target, (final_from, kernel.buffers[0]))
        self.compile_seconds = 0.0

    def parts(self) -> list[Program]:
        return [self.init, self.step, self.final]

    def __call__(self, buffers: Sequence[int], params: Sequence[bool | int | float]) -> None:
        out, keys = buffers
        held = [self.target.alloc(b.size * memory_dtype(b.dtype).itemsize) for b in (*self.work, *self.work)]
        a_keys, a_positions, b_keys, b_positions = (h.ptr for h in held)
        self.init([keys, a_keys, a_positions], [])
        for j, k in steps(self.kernel):
            self.step([a_keys, a_positions, b_keys, b_positions], [j, k])
            a_keys, a_positions, b_keys, b_positions = b_keys, b_positions, a_keys, a_positions
        self.final([a_keys if self.kernel.values else a_positions, out], [])


def _seconds_per_launch(program: Program, table: Sequence[int | None], params: Sequence[bool | int | float]) -> float:
    """The mean time of a launch between synchronizations of the device. It counts the launch overhead,
    which is the same for every configuration; the first launch, which loads the kernel, is not timed."""
    target = program.target
    program.launch(table, params)
    target.synchronize()
    start = time.perf_counter()
    program.launch(table, params)
    target.synchronize()
    repeats = max(1, min(100, int(TUNE_SECONDS / max(time.perf_counter() - start, 1e-6))))
    start = time.perf_counter()
    for _ in range(repeats):
        program.launch(table, params)
    target.synchronize()
    return (time.perf_counter() - start) / repeats


# (target key, (batch, m, n, k), dtype, input precision) -> the fastest configuration timed there
_tuned: dict[tuple, GemmConfig] = {}


AnyProgram = Program | ContractionProgram | StepsProgram | SortProgram

_programs: dict[tuple[str, Tiling, Target, str], AnyProgram] = {}


def compile_kernel(kernel: Kernel | Contraction | Scatter | Sort | Scan | LibraryCall, target: Target,
                   tiling: Tiling = Tiling(),  # noqa: B008
                   changed: frozenset[int] = frozenset()) -> tuple[AnyProgram, bool]:
    """Compile `kernel` for `target`, or find the program compiled for the same body (and, for a
    contraction, the same input precision). `tiling` applies to the kernels rendered by `render`.

    A kernel compiled at other sizes of its sized loops than its erased text's first runs a program generic over
    them (`_generic_program`), which every later kernel of the text that differs there only runs; `changed`, the
    sizes that changed since its program was last scheduled (`Schedule.changed`), makes a kernel new to the process
    with loops of those sizes compile generic at once, its strides that are those sizes read at runtime
    (`_strided`).

    Returns the program and whether this call compiled it. A `LibraryCall` has none: the GPU has no LAPACK here
    (the frontend refuses the op on a cuda device, with DeviceError, before it is scheduled)."""
    if isinstance(kernel, LibraryCall):
        raise NotImplementedError(f"{kernel.name}: the Triton backend has no {kernel.routine} (LAPACK is the CPU's)")
    precision = input_precision(kernel) if isinstance(kernel, Contraction) else ""
    key = (kernel.body_text(), tiling, target, precision)
    if (hit := _programs.get(key)) is not None:
        return hit, False
    kernel = _strided(kernel, target, tiling, changed)
    erased = _erased(kernel, target, tiling)
    if erased is not None and (template := _generic.get(erased)) is not None and template.serves(sizes(kernel)):
        hit = _programs[key] = template.program.sized(kernel, template.over)
        return hit, False
    t0 = time.perf_counter()
    legal = legalize(kernel, NATIVE)  # once: the kernels a contraction runs are made from its legal values
    if erased is not None and (made := _generic_program(kernel, erased, target, changed)) is not None:
        program: AnyProgram = made
    elif isinstance(legal, Contraction):
        program = _contraction_program(legal, target, tiling, precision)
    elif isinstance(legal, Sort):
        program = SortProgram(legal, target)
    elif isinstance(legal, Scan):
        program = _program(legal, render_scan(legal, identifier(legal.name)), target)
    elif isinstance(legal, Scatter):
        program = _scatter_program(legal, target, tiling)
    else:
        program = _kernel_program(legal, target, tiling)
    program.compile_seconds = time.perf_counter() - t0
    _programs[key] = program
    return program, True


def _parts(kernel: Kernel, grid: int, target: Target) -> int:
    """The partial reductions a kernel launched on `grid` programs splits into (`_kernel_program`): more than one
    where its grid is too small to keep the target's processors busy and its reductions are long enough to
    share out."""
    wanted = target.processors * PROGRAMS_PER_PROCESSOR
    # a power of two: the reductions' sizes usually are, and then every chunk is whole blocks with no tail
    # reductions of reductions stay whole here: their levels' kernels are unmeasured on a GPU, and slow
    # under the interpreter
    return 1 << (max(1, min(wanted // max(1, grid), most_parts(kernel, SPLIT_MIN_CHUNK, nested=False)))
                 .bit_length() - 1)


def _kernel_program(kernel: Kernel, target: Target, tiling: Tiling) -> Program | StepsProgram:
    """The program of a legalized kernel: split into partial reductions and a combine (`kernels/split.py`)
    where `_parts` says so, else as it is."""
    source = render(kernel, tiling, target.interpreted)
    parts = _parts(kernel, source.grid, target)
    if (split := split_reduction(kernel, parts, nested=False)) is None:
        return _program(kernel, source, target)
    # the split combines partial results with the reduction's own op, which legalization makes core ops
    steps = [_program(k, render(k, tiling, target.interpreted), target) for k in (legalize(k, NATIVE) for k in split)]
    return StepsProgram(kernel, steps, steps[0].buffers[len(kernel.buffers):], target)


# Generic programs (`kernels/symbolic.py`), by the erased text of the kernels they serve, the tiling and the target;
# and the sized loops' sizes each such text was first compiled at.
_generic: dict[tuple[str, Tiling, Target, str], Template] = {}
_first_sizes: dict[tuple[str, Tiling, Target, str], tuple[int, ...]] = {}
_previous: dict[str, Kernel | Contraction] = {}  # the last kernel compiled of each structure (`symbolic.skeleton`)


def _erased(kernel: Kernel | Contraction | Scatter | Sort | Scan, target: Target, tiling: Tiling) \
        -> tuple[str, Tiling, Target, str] | None:
    """Where a kernel may run generic (`kernels/symbolic.py`), the key of its generic programs: its erased text
    (`Kernel.erased_text`), the tiling, the target and a contraction's input precision; else None:
    `LT_SYMBOLIC=0`, kernels not `eligible` (a batch's product whose strides read no size: `symbolic.symbolized`),
    and those that split (`_parts`: decided by the sizes)."""
    if not enabled() or not eligible(kernel):
        return None
    if type(kernel) is Contraction:
        return kernel.erased_text(), tiling, target, input_precision(kernel)
    if _parts(kernel, programs(kernel, tiling), target) > 1:
        return None
    return kernel.erased_text(), tiling, target, ""


def _strided(kernel: Kernel | Contraction | Scatter | Sort | Scan, target: Target, tiling: Tiling,
             changed: frozenset[int]) -> Kernel | Contraction | Scatter | Sort | Scan:
    """`kernel`, where it may run generic and its erased text is new, with its strides that are products of the
    sizes `changed` written as such (`symbolic.symbolized`): the form whose erased text the kernels of every such
    size share (a softmax's rows of a changing length). Only where its own text is new (it would compile), which
    is then taken as seen at its sizes, as the CPU's runtime does; a batch's product has no sized loop before
    (`Contraction.sized_loops`): its form where that may run generic."""
    if type(kernel) not in (Kernel, Contraction):
        return kernel
    structure = skeleton(kernel)
    previous, _previous[structure] = _previous.get(structure), kernel
    if changed and type(kernel) is Kernel and (erased := _erased(kernel, target, tiling)) is not None \
            and erased not in _first_sizes and (form := symbolized(kernel, changed, previous)) is not kernel:
        _first_sizes[erased] = sizes(kernel)
        return form
    if changed and type(kernel) is Contraction and not kernel.sized_loops() \
            and _erased(form := symbolized(kernel, changed, previous), target, tiling) is not None:
        return form
    return kernel


def _generic_program(kernel: Kernel | Contraction, erased: tuple[str, Tiling, Target, str], target: Target,
                     changed: frozenset[int]) -> Program | ContractionProgram | None:
    """`kernel` compiled generic, as its own, where its erased text was compiled at other sizes of its sized
    loops: over the loops whose sizes differ, and those its text's generic program was over; the first time its
    text compiles, over its loops of the sizes `changed` and its outermost of a multiple of one
    (`symbolic.multiples`), if any (under `symbolic.DYNAMIC` True,
    `lt.jit(fn, dynamic=True)`, over all of them). Kept for every later kernel of the text (`compile_kernel`).
    None where it is over no loop, or a contraction's loops other than its m, n and k: the kernel specializes."""
    now, dynamic = sizes(kernel), DYNAMIC.get()
    first = _first_sizes.setdefault(erased, now)
    before, over = (first, frozenset()) if (kept := _generic.get(erased)) is None else (kept.sizes, kept.over)
    over |= {k for k, (a, b) in enumerate(zip(before, now)) if a != b or dynamic}
    if kept is None and first == now and dynamic is None:
        over |= multiples(kernel, changed)
    _, tiling, _, precision = erased
    if not over:
        return None
    if type(kernel) is Contraction:
        program = _generic_contraction(kernel, over, target, tiling, precision)
        if program is None:
            return None
    else:
        program = _generic_kernel(kernel, over, target, tiling)
    _generic[erased] = Template(program, over, now)
    return program.sized(kernel, over)


def _generic_kernel(kernel: Kernel, over: frozenset[int], target: Target, tiling: Tiling) -> Program:
    """`symbolic.generic`'s kernel of `kernel` over the loops at positions `over` of its sized loops, compiled."""
    made = generic(kernel, over)  # before legalizing: the counts it computes are the constants the erased text names
    if made.loops[0] is not kernel.loops[0] and made.loops[0] not in made.extents:
        # its outermost loop's size: a launch here passes the whole size (the grid follows it), not a range
        made = replace(made, params=(*made.params, int64), extents=(*made.extents, made.loops[0]))
    legal = legalize(made, NATIVE)
    return _program(legal, render(legal, tiling, target.interpreted), target)


def _generic_contraction(c: Contraction, over: frozenset[int], target: Target, tiling: Tiling, precision: str) \
        -> ContractionProgram | None:
    """The tl.dot template of a product generic over some of its m, n and k and its epilogue's loops, those at
    `over`, where `gemm.generic_plan` can make one (no operand packed; a fused epilogue's loops C's rows and columns
    where m or n is among them, generic only along those, and passed no size of its own, `Kernel.extents`, which it
    has only where a constant counts its rows); else None. Their variables range over `UNBOUNDED` values
    (`symbolic.unbounded`, `symbolic.generic`: the epilogue's), and the sizes of m, n and k among them are passed
    after the parameters (`gemm.render_gemm`). An epilogue that runs apart is a generic kernel (`_generic_kernel`)
    passed them too, then its own (`Kernel.extents`); where a single product's n varies, it reads C's rows at the n
    passed (`Contraction.reading_rows_of`), as on the CPU."""
    axes = dict(zip(c.vars[1:], "mnk"))
    wide = [v for k, v in enumerate(c.sized_loops()) if k in over]
    passed = tuple(v for v in axes if v in wide)  # in the order `render_gemm` passes them
    if not passed:
        return None
    over_axes = "".join(axes[v] for v in passed)
    specialized = plan(legalize(c, NATIVE))
    epilogue, apart = c.epilogue, None
    if epilogue is not None:
        ends = frozenset(k for k, v in enumerate(epilogue.sized_loops()) if v in wide)
        params = (*c.params, *(int64 for _ in passed))
        if specialized.fuse_epilogue:
            # its loops are digits of C's position: generic only along an m or n passed, whose sizes they take;
            # one of another size among `over` (a multiple of k's, `symbolic.multiples`) keeps its own, which no
            # size passed would give it (the tile's digit of C taken modulo it)
            runs, loops = specialized.runs_along() or {}, epilogue.sized_loops()
            ends = frozenset(k for k in ends if any(v in passed for v in runs.get(loops[k], ())))
            epilogue = generic(replace(epilogue, params=params), ends) if ends else epilogue
            if epilogue.extents:
                return None
        else:
            if c.vars[0].size == 1 and c.vars[2] in passed:
                if any(v.op is VOp.GATHER and v.arg == c.product for v in epilogue.values()):
                    return None
                epilogue = c.reading_rows_of(param(len(c.params) + passed.index(c.vars[2]), int64))
            apart = _generic_kernel(replace(epilogue, params=params), ends, target, tiling)
    made = replace(unbounded(c, frozenset(passed)), epilogue=epilogue)
    legal = replace(legalize(made, NATIVE), name=c.default_name(generic=passed))
    p = generic_plan(specialized, legal, over_axes)
    if p is None:
        return None
    tune_key = (target.key, legal.sizes, legal.dtype, precision)
    configs = [_tuned[tune_key]] if tune_key in _tuned else candidate_configs(legal, target.interpreted)
    candidates = {config: _program(legal, render_gemm(p, config, precision, target.interpreted, over_axes),
                                   target, p.buffers, (*legal.params, *(int64 for _ in passed)))
                  for config in configs}
    program = ContractionProgram(p, [], candidates, apart, target, tune_key)
    program.passed = tuple(v.name for v in passed)
    return program


def _loops(kernel: Kernel) -> list[Var]:
    """A kernel's loops: its output loops, then its reductions'."""
    return [*kernel.loops, *(r for v in kernel.values() if v.op is VOp.REDUCE for r in v.arg[1])]


def _legal_program(kernel: Kernel, target: Target, tiling: Tiling) -> Program:
    """The program of a legalized kernel, compiled once for its body."""
    key = (kernel.body_text(), tiling, target, "")
    if (hit := _programs.get(key)) is None:
        hit = _programs[key] = _program(kernel, render(kernel, tiling, target.interpreted), target)
    return hit


def _scatter_program(scatter: Scatter, target: Target, tiling: Tiling) -> StepsProgram:
    """The base and updates kernels of a legalized `scatter`, or, where its updates write in order, its
    claim kernels (legalized: they compute with values of their own)."""
    claimed = claim_scatter(scatter)
    if claimed is None:
        return StepsProgram(scatter, [_legal_program(k, target, tiling) for k in (scatter.base, scatter.updates)],
                              (), target)
    steps = [_legal_program(legalize(k, NATIVE), target, tiling) for k in claimed]
    return StepsProgram(scatter, steps, claimed[0].buffers[len(scatter.buffers):], target)


def _program(kernel: Kernel | Contraction | Sort | Scan, source: TritonSource, target: Target,
             buffers: tuple[BufferParam, ...] | None = None, params: tuple[DType, ...] | None = None) -> Program:
    """Load a rendered source as a Program; on a GPU, compile it now."""
    path, fn = _load(source)
    program = Program(kernel, source, path, fn, target, buffers, params)
    if not target.interpreted:
        _install_driver()
        program.compile()
    return program


def _contraction_program(c: Contraction, target: Target, tiling: Tiling, precision: str) -> ContractionProgram:
    """The pack and epilogue kernels `c` needs (through the cache: they are ordinary kernels), and its
    tl.dot kernel in each configuration to try."""
    p = plan(c)
    packs = [_legal_program(k, target, tiling) for k in p.packs]
    epilogue = None
    if c.epilogue is not None and not p.fuse_epilogue:
        epilogue = _legal_program(c.epilogue, target, tiling)
    tune_key = (target.key, c.sizes, c.dtype, precision)
    # the configuration timed fastest for this shape, else those to time at the first call
    configs = [_tuned[tune_key]] if tune_key in _tuned else candidate_configs(c, target.interpreted)
    candidates = {config: _program(c, render_gemm(p, config, precision, target.interpreted), target, p.buffers)
                  for config in configs}
    return ContractionProgram(p, packs, candidates, epilogue, target, tune_key)


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


__all__ = ["ContractionProgram", "Program", "StepsProgram", "cache_dir", "compile_kernel"]
