"""Ahead-of-time export: `lt.export(fn, *example_args, path=...)` writes a shared library and a C header with one
plain C entry point that runs fn's kernels, threads included, with no Python and no llvmlite at run time.

    lt.export(predict, x_example, path="build/predict")   # build/libpredict.so, build/predict.h

    int predict(const float *in0, float *out0);           /* in predict.h: 0, or 1 where an index was out of range */

What is exported is what `lt.jit` replays (`lazytensor/jit.py`): fn is recorded on the example arguments until two
calls run the same kernels, and the replay's kernels, buffers and scalar parameters become the library. The
tensors among the arguments are the entry point's inputs, in order (C-contiguous buffers of the example's dtype and
shape); the tensors fn returns are its outputs, written to the caller's buffers; tensors fn reads from elsewhere
(a model's weights) are constants inside the library, as their values were at export. Shapes, dtypes and Python
scalars are fixed at export. Not exportable, each a `JitError` saying why: state that one call updates for the next
(an optimizer step), random draws, and LAPACK routines (run by NumPy).

How it is built: every kernel is compiled again as position-independent code (the same LLVM IR and passes as the
JIT's, `kernels/llvm/compiler.py`), a C driver is written that allocates the temporaries and runs each kernel's
chunks on the calling thread and `LT_NUM_THREADS - 1` POSIX threads (the number of cores by default), claiming
them as the runtime does (`kernels/llvm/runtime.py`), and the system C compiler (`$CC`, else `cc`) links it all
into the shared library.
"""
from __future__ import annotations

import ctypes
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import llvmlite.binding as llvm

from .errors import JitError
from .jit import MAX_RECORDS, Jit
from .kernels.ir import LibraryCall
from .kernels.llvm import runtime
from .kernels.llvm.compiler import Machine
from .kernels.symbolic import DYNAMIC
from .pytree import flatten
from .tensor import Tensor

C_TYPES = {"bool": "uint8_t", "int8": "int8_t", "int16": "int16_t", "int32": "int32_t", "int64": "int64_t",
           "uint8": "uint8_t", "uint16": "uint16_t", "uint32": "uint32_t", "uint64": "uint64_t",
           "float16": "uint16_t", "bfloat16": "uint16_t", "float32": "float", "float64": "double"}

_DRIVER = r"""
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef void (*lt_fn)(void *const *buffers, const int64_t *params, int64_t lo, int64_t hi);
typedef struct { lt_fn fn; int64_t lo, hi, after; void *const *table; const int64_t *params; } lt_chunk;
typedef struct { const lt_chunk *chunks; int64_t n, claimed, finished; } lt_job;

/* Claim chunks until none is left; a chunk runs once the `after` chunks before it (the phases before its own)
   have finished. */
static void lt_take(lt_job *job) {
    for (;;) {
        int64_t i = __atomic_fetch_add(&job->claimed, 1, __ATOMIC_RELAXED);
        if (i >= job->n) return;
        const lt_chunk *c = &job->chunks[i];
        while (__atomic_load_n(&job->finished, __ATOMIC_ACQUIRE) < c->after) sched_yield();
        c->fn(c->table, c->params, c->lo, c->hi);
        __atomic_fetch_add(&job->finished, 1, __ATOMIC_RELEASE);
    }
}

static void *lt_worker(void *job) { lt_take((lt_job *)job); return NULL; }

static int lt_threads(void) {
    const char *env = getenv("LT_NUM_THREADS");
    long n = env && *env ? strtol(env, NULL, 10) : sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > 256 ? 256 : (int)n;
}

/* Run a launch's chunks on this thread and up to `threads - 1` others. */
static void lt_run(const lt_chunk *chunks, int64_t n, int threads) {
    lt_job job = {chunks, n, 0, 0};
    pthread_t helpers[256];
    int started = 0;
    if (threads > n) threads = (int)n;
    for (int k = 1; k < threads; k++)
        if (pthread_create(&helpers[started], NULL, lt_worker, &job) == 0) started++;
    lt_take(&job);
    for (int k = 0; k < started; k++) pthread_join(helpers[k], NULL);
}

static void *lt_alloc(size_t bytes) {
    void *p = NULL;
    if (posix_memalign(&p, 64, bytes ? bytes : 64)) return NULL;
    memset(p, 0, bytes);
    return p;
}
"""


def _record(fn: Callable, args: tuple) -> tuple[Any, list[Tensor]]:
    """fn's replay (`lt.jit`) on the example arguments, and their tensors."""
    jitted = Jit(fn)
    leaves: list[Any] = []
    flatten((args, {}), leaves)
    inputs = [x for x in leaves if isinstance(x, Tensor)]
    for _ in range(MAX_RECORDS + 1):
        jitted(*args)
        if (replay := next(iter(jitted.entries.values())).replay) is not None:
            return replay, inputs
    raise JitError(f"lt.export: {fn!r} did not run the same kernels on two consecutive calls")


def _pic_machine() -> Machine:
    machine = Machine()
    target = llvm.Target.from_triple(llvm.get_process_triple())
    cpu, features = llvm.get_host_cpu_name(), llvm.get_host_cpu_features().flatten()
    machine.target_machine = target.create_target_machine(cpu=cpu, features=features, opt=3, reloc="pic",
                                                          codemodel="default")
    machine.wide_machine = target.create_target_machine(
        cpu=cpu, features=features + ",-prefer-256-bit", opt=3, reloc="pic", codemodel="default") \
        if "+avx512f" in features else machine.target_machine
    return machine


class _Build:
    """The modules of the exported kernels, compiled to position-independent object files, and for each
    kernel its program's structure (phases, buffer table, scratch) with every function named."""

    def __init__(self, folder: Path):
        self.folder, self.machine = folder, _pic_machine()
        self.objects: dict[str, Path] = {}  # module source -> its object file
        self.names: dict[int, str] = {}  # stand-in function address -> symbol
        # the runtime functions code generation may call, as the runtime defines them: the system compiler's
        # library has them from some version on (GCC 12 for float64 -> float16); hidden, not the library's API
        self.module(runtime.LIBCALLS.replace("define ", "define hidden "), False)

    def module(self, source: str, wide: bool) -> None:
        if source not in self.objects:
            path = self.folder / f"module{len(self.objects)}.o"
            path.write_bytes(self.machine.compile(source, wide)[1])
            self.objects[source] = path

    def program(self, kernel: Any) -> Any:
        """`kernel`'s program as the runtime builds it, its functions stand-ins named in `names`."""
        if isinstance(kernel, LibraryCall):
            raise JitError(f"lt.export: {kernel.name} runs {kernel.routine} through NumPy's LAPACK, which a library "
                           "without Python cannot call")
        token = DYNAMIC.set(False)  # each kernel specialized: the library's frames pass no sizes (`kernels/symbolic.py`)
        try:
            builder, result = runtime._builder(kernel, False), None
        finally:
            DYNAMIC.reset(token)
        cores = dict(runtime._gemm_cores)  # the stand-ins below must not enter the process's cache of them
        try:
            while True:
                source, name, wide = builder.send(result)
                self.module(source, wide)
                address = 4096 * (len(self.names) + 1)
                self.names[address] = name
                result = ("", address, 0.0)
        except StopIteration as done:
            program = done.value
        finally:
            runtime._gemm_cores.clear()
            runtime._gemm_cores.update(cores)
        # a contraction's micro-kernel core, compiled once per process, is the IR its stage shows
        for stage in program.stages if isinstance(program, runtime.StagedProgram) else [program]:
            self.module(stage.llvm_ir, False)
        return program

    def symbol(self, fn: Any) -> str:
        return self.names[ctypes.cast(fn, ctypes.c_void_p).value]


def _c_bytes(data: bytes) -> str:
    return ", ".join(str(b) for b in data)


def export(fn: Callable, *example_args: Any, path: str | os.PathLike) -> list[Path]:
    """Write `fn` compiled for this host as a shared library and a C header: `<dir>/lib<name>.so` and
    `<dir>/<name>.h` for `path` = `<dir>/<name>` (see the module docstring). Returns the two paths."""
    path = Path(path)
    name = path.name
    if not re.fullmatch(r"[A-Za-z_]\w*", name):
        raise ValueError(f"lt.export: the library's name {name!r} must be a C identifier")
    replay, inputs = _record(fn, example_args)
    if replay.holders:
        raise JitError("lt.export: the function updates state that its next call reads (an optimizer step, running "
                       "statistics): a library call has no state to keep; export a function of its inputs")
    if replay.uses_rng:
        raise JitError("lt.export: the function draws random numbers, which the library cannot continue")
    if any(lc.device.name != "cpu" for lc in replay.launches):
        raise JitError("lt.export: the function runs on a GPU; export compiles CPU code (move its tensors to 'cpu')")
    path.parent.mkdir(parents=True, exist_ok=True)
    cc = os.environ.get("CC", "cc")
    if shutil.which(cc) is None:
        raise JitError(f"lt.export: no C compiler ({cc}) to link the library with; set CC")
    with tempfile.TemporaryDirectory(prefix="lazytensor-export-") as tmp:
        build = _Build(Path(tmp))
        source = _driver(name, replay, inputs, build, Path(tmp))
        (Path(tmp) / "driver.c").write_text(source)
        library = path.parent / f"lib{name}.so"
        done = subprocess.run([cc, "-shared", "-fPIC", "-O2", "-o", str(library), str(Path(tmp) / "driver.c"),
                               *map(str, build.objects.values()), "-lpthread", "-lm"],
                              capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise JitError(f"lt.export: linking {library} failed:\n{done.stderr}")
    header = path.parent / f"{name}.h"
    header.write_text(_header(name, replay, inputs))
    return [library, header]


def _param_slots(program: Any, params: list) -> list[int]:
    slots = runtime._frame((), params, program.kernel.params)
    return list(slots)[:max(1, len(params))]


def _signature(name: str, replay: Any, inputs: list[Tensor]) -> str:
    args = [f"const {C_TYPES[t.dtype.name]} *in{k}" for k, t in enumerate(inputs)]
    outs = [f"{C_TYPES[spec[2].name]} *out{k}" for k, spec in enumerate(s for s in replay.out_specs if s is not None)]
    return f"int {name}({', '.join(args + outs) or 'void'})"


def _header(name: str, replay: Any, inputs: list[Tensor]) -> str:
    lines = [f"/* {name}: exported by lazytensor (lt.export). Buffers are C-contiguous, row-major, and an output",
             "   shares no memory with another buffer (the kernels are compiled assuming so):"]
    lines += [f"   in{k}: {t.dtype.name}{list(t.shape)}" for k, t in enumerate(inputs)]
    lines += [f"   out{k}: {spec[2].name}{list(spec[1])}"
              for k, spec in enumerate(s for s in replay.out_specs if s is not None)]
    lines += ["   Returns 0, or 1 where an index computed from data was out of range (the outputs are then not",
              "   defined), or 2 where memory for the temporaries could not be allocated. Thread-safe: each call",
              "   owns its temporaries. float16 and bfloat16 buffers hold their bits (uint16_t). */",
              f"#ifndef LAZYTENSOR_{name.upper()}_H", f"#define LAZYTENSOR_{name.upper()}_H", "#include <stdint.h>",
              "#ifdef __cplusplus", 'extern "C" {', "#endif", _signature(name, replay, inputs) + ";",
              "#ifdef __cplusplus", "}", "#endif", "#endif", ""]
    return "\n".join(lines)


def _driver(name: str, replay: Any, inputs: list[Tensor], build: _Build, folder: Path) -> str:
    """The C source of the entry point: buffers, then each launch's chunks."""
    n_slots, n_args = replay.n_slots, len(inputs)
    outputs = [i for i in replay.outputs if i is not None]
    exprs: dict[int, str] = {n_slots + k: f"(void *)in{k}" for k in range(n_args)}
    body: list[str] = []
    out_of = {}
    for k, i in enumerate(outputs):
        if i < n_slots and i not in out_of:  # written by a kernel: straight into the caller's buffer
            out_of[i] = k
            exprs[i] = f"(void *)out{k}"
    consts = [i for i in range(n_slots + n_args, len(replay.table))]
    prelude = []
    for i in consts:
        data = replay.table[i].numpy().tobytes()
        (folder / f"const{i}.bin").write_bytes(data)
        prelude.append(f'__asm__(".section .rodata\\n.balign 64\\nlt_const{i}: .incbin \\"{folder}/const{i}.bin\\"'
                       f'\\n.previous");')
        prelude.append(f"extern const unsigned char lt_const{i}[] __asm__(\"lt_const{i}\");")
        exprs[i] = f"(void *)lt_const{i}"
    temporaries = []
    for lc in replay.launches:
        for s in lc.index:
            if s < n_slots and s not in exprs:
                exprs[s] = f"tmp{s}"
                temporaries.append(s)
    sizes = _slot_sizes(replay)
    for s in temporaries:
        body.append(f"    void *tmp{s} = lt_alloc({sizes[s]});")
    body.append(f"    if ({' || '.join(f'!tmp{s}' for s in temporaries) or '0'}) {{ status = 2; goto done; }}")
    threads = "int threads = lt_threads();"
    declared: set[str] = set()
    for k, lc in enumerate(replay.launches):
        program = build.program(lc.kernel)
        scratch = program.scratch() if isinstance(program, runtime.StagedProgram) else []
        for j, p in enumerate(scratch):
            body.append(f"    void *scr{k}_{j} = lt_alloc({p.size * p.dtype.itemsize});")
        table = program.table([exprs[i] for i in lc.index], [f"scr{k}_{j}" for j in range(len(scratch))])
        body.append(f"    void *const table{k}[] = {{{', '.join(table)}}};")
        slots = _param_slots(program, lc.params)
        body.append(f"    static const int64_t params{k}[] = {{{', '.join(f'{v}LL' for v in slots)}}};")
        chunks = []
        for calls, _ in program.phases():
            after = len(chunks)
            total = sum(n for _, n in calls)
            for f, n in calls:
                symbol = build.symbol(f)
                declared.add(symbol)
                parts = max(1, min(n, -(-runtime.CHUNKS_PER_THREAD * 16 * n // max(total, 1))))
                chunks += [f"{{{symbol}, {n * i // parts}, {n * (i + 1) // parts}, {after}, table{k}, params{k}}}"
                           for i in range(parts)]
        body.append(f"    const lt_chunk chunks{k}[] = {{{', '.join(chunks)}}};")
        body.append(f"    lt_run(chunks{k}, {len(chunks)}, threads);")
        for j in range(len(scratch)):
            body.append(f"    free(scr{k}_{j});")
    for k, i in enumerate(outputs):
        if exprs.get(i) != f"(void *)out{k}":  # an argument, a constant, or a result returned twice: copied
            body.append(f"    memcpy(out{k}, {exprs[i]}, {sizes[i]});")
    for s, message in replay.checks:
        body.append(f"    if (((const uint8_t *){exprs[s]})[0]) status = 1;  /* {message[:60].replace('*/', '')} */")
    decls = [f"extern void {s}(void *const *, const int64_t *, int64_t, int64_t);" for s in sorted(declared)]
    frees = [f"    free(tmp{s});" for s in temporaries]
    return "\n".join([_DRIVER, *prelude, *decls, "", _signature(name, replay, inputs) + " {", "    int status = 0;",
                      f"    {threads}", *body, "done:", *frees, "    return status;", "}", ""])


def _slot_sizes(replay: Any) -> dict[int, int]:
    """The bytes of every table slot the launches use: a launch's buffers are its kernel's, but the scratch."""
    sizes = {i: b.size * b.dtype.itemsize for i, b in enumerate(replay.table) if b is not None}
    for lc in replay.launches:
        for i, p in zip(lc.index, (p for p in lc.kernel.buffers if not p.scratch)):
            sizes[i] = p.size * p.dtype.itemsize
    return sizes
