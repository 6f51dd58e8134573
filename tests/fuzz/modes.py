"""Settings of a fuzzing mode that are not environment variables: smaller thresholds for threads and for the
contraction template, and Triton's tiny tiles. Each takes the setter to use (pytest's monkeypatch.setattr, to
undo it after a test)."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

Setter = Callable[[Any, str, Any], None]

# Loop iterations from which the CPU runtime shares a kernel among threads, and splits a full reduction into
# partial ones: low enough that the fuzzer's small kernels (hundreds of elements) take those paths too.
PARALLEL_MIN_WORK = 64
SPLIT_MIN_WORK = 256


def split_small_work(set_attr: Setter = setattr) -> None:
    """Let the CPU runtime split small kernels across threads (it splits none below PARALLEL_MIN_WORK
    iterations, 65536 by default, which the fuzzer's tensors never reach)."""
    from lazytensor.kernels.llvm import runtime
    for name, value in (("PARALLEL_MIN_WORK", PARALLEL_MIN_WORK), ("SPLIT_MIN_WORK", SPLIT_MIN_WORK)):
        if not hasattr(runtime, name):  # renamed: fail rather than fuzz the single-thread paths unknowingly
            raise RuntimeError(f"kernels/llvm/runtime.py has no {name} any more: update tests/fuzz/modes.py")
        set_attr(runtime, name, value)


def small_products_on_the_template(set_attr: Setter = setattr) -> None:
    """Run every product the scheduler finds on the backend's contraction template, however small (the
    scheduler takes products below its thresholds there too, where a size changed between calls: see
    `lowering.contraction_axes`); the fuzzer's products never reach the thresholds otherwise."""
    from lazytensor import lowering
    for name in ("MIN_CONTRACTION_M", "MIN_CONTRACTION_N", "MIN_CONTRACTION_K", "MIN_CONTRACTION_PRODUCT",
                 "MIN_CONTRACTION_WORK"):
        if not hasattr(lowering, name):
            raise RuntimeError(f"lazytensor/lowering.py has no {name} any more: update tests/fuzz/modes.py")
        set_attr(lowering, name, 1)


def tiny_tiling(set_attr: Setter = setattr) -> None:
    """Compile every Triton kernel with blocks of at most 4 elements (8 per tile, 2 rows per program), as
    tests/test_triton.py's TINY: every reduction loops and every axis is masked."""
    from lazytensor.kernels.triton import Tiling, runtime
    compile_kernel = runtime.compile_kernel
    tiny = Tiling(max_block=4, max_tile=8, max_xblock=2)
    set_attr(runtime, "compile_kernel",
             lambda kernel, target, tiling=tiny, **kw: compile_kernel(kernel, target, tiling, **kw))
