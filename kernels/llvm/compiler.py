"""LLVM IR text to object code for this host: the target machines and the optimization passes.

The process's JIT (`runtime.py`) compiles with it, and so do the compile workers it starts when a
schedule brings many new kernels at once (the first step of a model): each worker is this file run as a
script, `python compiler.py`, that reads batches of jobs from its standard input and writes their object
code to its standard output. It imports nothing but llvmlite and the standard library, so a worker
starts in a fraction of a second, and the code a worker makes is the code the process would make.
"""
from __future__ import annotations

import functools
import os
import pickle
import struct
import sys
import time
from typing import Any, BinaryIO

import llvmlite.binding as llvm


@functools.cache
def features(wide: bool) -> str:
    """The target features kernels compile with (asked of LLVM once; every pack kernel's function names them):
    the host CPU's, and where `wide` and it has AVX-512, 512-bit vectors preferred. LLVM's tuning for AVX-512
    servers has the vectorizer prefer 256-bit vectors. Measured here, 512-bit vectors make kernels heavy in
    transcendental math faster (`sin` 1.4x, softmax 1.1x) but memory-bound ones 5-10% slower, so only those
    kernels are vectorized for them."""
    host = llvm.get_host_cpu_features().flatten()
    return host + ",-prefer-256-bit" if wide and "+avx512f" in host else host


class Machine:
    """The host's target machines and the pass pipeline every kernel goes through."""

    def __init__(self) -> None:
        llvm.initialize_native_target()
        llvm.initialize_native_asmprinter()
        target = llvm.Target.from_triple(llvm.get_process_triple())
        cpu = llvm.get_host_cpu_name()
        self.target_machine = target.create_target_machine(cpu=cpu, features=features(False), opt=3,
                                                           codemodel="jitdefault")
        self.wide_machine = target.create_target_machine(
            cpu=cpu, features=features(True), opt=3, codemodel="jitdefault") \
            if features(True) != features(False) else self.target_machine

    def optimize(self, module: llvm.ModuleRef, wide: bool) -> None:
        pto = llvm.create_pipeline_tuning_options(speed_level=3)
        pto.loop_vectorization = True
        pto.slp_vectorization = True
        pb = llvm.create_pass_builder(self.wide_machine if wide else self.target_machine, pto)
        pb.getModulePassManager().run(module, pb)
        # The vectorizer calls the vector variants of mathlib's functions, after the pipeline's
        # inliners have run: inline them into the vector loops now, and tidy the joins.
        late = llvm.create_new_module_pass_manager()
        late.add_always_inliner_pass()
        late.add_simplify_cfg_pass()
        late.add_instruction_combine_pass()
        late.run(module, pb)

    def compile(self, source: str, wide: bool) -> tuple[str, bytes]:
        """LLVM IR text, optimized (vectorized for the widest vectors if `wide`): the optimized IR and the
        object code."""
        module = llvm.parse_assembly(source)
        module.triple = self.target_machine.triple
        module.data_layout = str(self.target_machine.target_data)
        module.verify()
        self.optimize(module, wide)
        return str(module), (self.wide_machine if wide else self.target_machine).emit_object(module)


# A worker's batch: [(source, wide)]; its answer, one per job: (optimized IR, object code, seconds, error).
Job = tuple[str, bool]
Answer = tuple[str, bytes, float, str | None]


def send(stream: BinaryIO, value: Any) -> None:
    """Write one message: its length, then the pickled value."""
    data = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(struct.pack("<Q", len(data)))
    stream.write(data)
    stream.flush()


def receive(stream: BinaryIO) -> Any:
    """Read one message written by `send`; EOFError when the other side has closed."""
    header = stream.read(8)
    if len(header) < 8:
        raise EOFError
    (size,) = struct.unpack("<Q", header)
    data = stream.read(size)
    if len(data) < size:
        raise EOFError
    return pickle.loads(data)


def compile_batch(machine: Machine, jobs: list[Job]) -> list[Answer]:
    """Compile each job, timing it; a job that fails gives its error's text instead of code."""
    answers: list[Answer] = []
    for source, wide in jobs:
        t0 = time.perf_counter()
        try:
            optimized, obj = machine.compile(source, wide)
            answers.append((optimized, obj, time.perf_counter() - t0, None))
        except Exception as e:  # noqa: BLE001 (reported to the process, which raises it where the kernel is compiled)
            answers.append(("", b"", 0.0, f"{type(e).__name__}: {e}"))
    return answers


def serve() -> None:
    """A worker: answer batches of jobs until the process closes the pipe."""
    answers_out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # whatever LLVM prints goes to stderr, never into the answers
    machine = Machine()
    while True:
        try:
            jobs = receive(sys.stdin.buffer)
        except EOFError:
            return
        send(answers_out, compile_batch(machine, jobs))


if __name__ == "__main__":
    serve()
