"""Kernels generic over the size of their outermost output loop (issue 18, "compile once": first slice).

Every realize still lowers its kernels at concrete sizes. A backend that runs a kernel's outermost output
loop over a range its caller passes (the LLVM backend's `[start, end)` chunks) can serve every size of that
loop with one compiled program: the kernel's `erased_text()` is its key, and two kernels of one key differ
in that loop's size and the buffers' sizes only (any index, bound or constant that depends on the size is
in the text, so those keys differ and each kernel specializes). `generic` is the kernel to compile for a
key: that loop's variable given a range no launch reaches (`UNBOUNDED`), so every decision the renderer
makes from a variable's range holds for every size, and no buffer size is assumed. An unchecked renderer
reads buffer sizes only to skip a check it does not make (`kernels/bounds.py`), so a checked kernel
specializes.

`eligible` says which kernels take part: a plain `Kernel` whose stores are plain and whose bounds (a pad's,
a concatenation's) never read the outermost variable, since a renderer cuts a loop at such bounds where the
loop's size is known (`llvm/render.py`'s `pieces`): those keep that code by specializing.
"""
from __future__ import annotations

from contextvars import ContextVar

from .expr import Bound, Expr, Var
from .ir import Kernel, Store, VOp, substitute

UNBOUNDED = 1 << 62  # the outermost variable's size in a generic kernel: more than any launch's extent

# When a kernel compiled in this context runs generic: None, by the rule (from the second size of its
# structure compiled; `LT_SYMBOLIC=0` turns that off), True from the first size, False never (each size
# compiles its own program). `lazytensor.jit(fn, dynamic=...)` sets it for fn's recorded calls.
DYNAMIC: ContextVar[bool | None] = ContextVar("lazytensor_dynamic", default=None)


def eligible(kernel: Kernel) -> bool:
    """Whether `kernel` may run as the generic kernel of its `erased_text()` (see the module docstring)."""
    if type(kernel) is not Kernel or not kernel.loops or any(s.at is not None for s in kernel.stores):
        return False
    outer = kernel.loops[0]
    for v in kernel.values():
        bounds: tuple[Bound, ...] = v.arg[2] if v.op is VOp.LOAD else v.arg if v.op is VOp.VALID else ()
        if any(outer in bound.expr.vars() for bound in bounds or ()):
            return False
    return True


def generic(kernel: Kernel) -> Kernel:
    """The kernel that computes every kernel of `kernel`'s `erased_text()`, each over `[0, size)` of its own
    outermost loop: that loop's variable ranges over `UNBOUNDED` values; its name says so (`N`)."""
    outer = kernel.loops[0]
    wide = Var(outer.name, UNBOUNDED)
    mapping = {outer: Expr.of(wide)}
    values = substitute([s.value for s in kernel.stores], mapping)  # plain stores (`eligible`)
    stores = tuple(Store(s.buf, s.index.substitute(mapping), v) for s, v in zip(kernel.stores, values))
    return Kernel(kernel.default_name(generic=True), kernel.buffers, kernel.params, (wide, *kernel.loops[1:]),
                  stores)
