"""Kernels generic over the sizes of some of their loops (issue 18, "compile once").

Every realize still lowers its kernels at concrete sizes. A kernel's `erased_text()` leaves out the sizes of its
`sized_loops()`: its outermost output loop (the LLVM backend's launch passes its `[start, end)` chunks) and its
reductions' loops. Two kernels of one erased text differ in those sizes and the buffers' sizes only (any index,
bound or constant that depends on a size is in the text, so those keys differ and each kernel specializes), so
code that reads those sizes at runtime serves every kernel of the text. `generic` is that kernel, over the
loops whose sizes were seen to differ (a loop whose size stays, a softmax's row, keeps its known trip count):
each of their variables given a range no launch reaches (`UNBOUNDED`), so every decision the renderer makes from
a variable's range holds for every size, and no buffer size is assumed; the outermost output loop runs over the
range a launch passes, a reduction's loop up to a size a launch passes in an int64 parameter (`Kernel.extents`);
a constant that counts a reduction's terms (a mean's divisor, `Kernel.counts`) or the outermost loop's
iterations (whose whole size is then passed too), or one less (a variance's divisor), is computed from those sizes.
An unchecked renderer reads buffer sizes only to skip a check it does not make (`kernels/bounds.py`), so a
checked kernel specializes.

Strides that are sizes (issue 18's "sizes as symbols"): where a size changed between two calls of a program
(`lazytensor/schedule.py`'s `_changed_sizes`: a sequence's length t), a kernel's indexes hold it as a coefficient
(the strides t and t*t of attention's `(h, t, t)` scores) and as the size of an inner loop. `symbolized` writes
each coefficient that is a product of such sizes as a `Stride` over loops of those sizes (`kernels/expr.py`), the
first output loop of each size inside the outermost (see `symbolized`) standing for it: the kernel computes what it did, and those loops
are sized loops too (their sizes erased, `Kernel.sized_loops`), so the kernels of every t share one erased text
and its generic kernel reads t where a stride or an inner loop needs it. A size in no coefficient, a divisor and a
bound stay constants (a kernel whose divisor is t specializes). A coefficient equal to such a product by chance
(a head's width 16 at t = 8, 2*t) is told apart by the last kernel of the same structure at other sizes (`skeleton`,
`symbolized`'s `previous`): what is the same there stays a constant.

A `Contraction` of one product takes part too (`Contraction.sized_loops`: its m, n and k, and its epilogue's sized
loops): a backend compiles its template generic over the loops whose sizes differ where it can (the CPU's:
`kernels/llvm/gemm.py`, `generic_pack_kernels`), its epilogue made generic here. So does a batch's product
(attention's `q @ k.T` and `p @ v` over a batch of heads) whose m, n or k is a changed size: `symbolized` writes its
operands' strides over those loops, which are then its sized loops, and the CPU's template packs each product's
panels where the strides the call passes put them (`gemm._batched_pack`); its epilogue's indexes (the product's
strides, a transpose's in attention's gradient) are written so too, the sizes they read the call's m and n.

`eligible` says which kernels take part: a plain `Kernel` whose stores are plain and that has a sized loop, and a
`Contraction` that has one.
"""
from __future__ import annotations

import functools
import itertools
import math
import os
import re
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass, replace
from typing import Any

from .dtype import int64
from .expr import UNBOUNDED, Div, Expr, Mod, Var
from .ir import (
    Alu,
    Contraction,
    Count,
    Kernel,
    Store,
    Value,
    VOp,
    alu,
    cast,
    const,
    param,
    rewritten,
    substitute,
    toposort,
)

# When a kernel compiled in this context runs generic: None, by the rule (from the second size of its
# structure compiled; `LT_SYMBOLIC=0` turns that off), True from the first size, False never (each size
# compiles its own program). `lazytensor.jit(fn, dynamic=...)` sets it for fn's recorded calls.
DYNAMIC: ContextVar[bool | None] = ContextVar("lazytensor_dynamic", default=None)


def enabled() -> bool:
    """Whether kernels compiled now may run generic: as `DYNAMIC` says where it is set (`lt.jit`'s `dynamic=`),
    else unless `LT_SYMBOLIC`, read at each compile, is 0. Then a kernel that may run generic over the sizes of
    its outermost loop and its reductions' loops and is compiled at other sizes of them than its first compiles
    generic over those that differ (under `dynamic=True`, at once, over all of them), and every later kernel that
    differs in those only runs that program. Each backend's runtime asks it (`kernels/llvm/runtime.py`,
    `kernels/triton/runtime.py`)."""
    dynamic = DYNAMIC.get()
    return os.environ.get("LT_SYMBOLIC", "").strip() != "0" if dynamic is None else dynamic


@dataclass(frozen=True)
class Template:
    """A generic program, a backend's: compiled over the loops at positions `over` of its kernels'
    `sized_loops()`, it serves the kernels of its erased text whose sizes of the others are those of `sizes`."""

    program: Any
    over: frozenset[int]
    sizes: tuple[int, ...]

    def serves(self, sizes: tuple[int, ...]) -> bool:
        return all(k in self.over or a == b for k, (a, b) in enumerate(zip(self.sizes, sizes)))


def unbounded(c: Contraction, over: frozenset[Var]) -> Contraction:
    """`c` with its variables `over` ranging over `UNBOUNDED` values: what a backend builds a generic template's own
    kernels from (its packing), whose indexes the erased text does not hold, so that none is simplified by the sizes
    `c` was lowered at (a lane's panel, `lane // width`, is 0 wherever the lane axis is narrower than a panel)."""
    wide = {v: Var(v.name, UNBOUNDED) for v in c.vars if v in over}
    a, bv = substitute([c.a, c.bv], {v: Expr.of(w) for v, w in wide.items()}, loops=wide)
    return replace(c, vars=tuple(wide.get(v, v) for v in c.vars), a=a, bv=bv)


def eligible(kernel: object) -> bool:
    """Whether `kernel` may run as a generic kernel of its `erased_text()` (see the module docstring)."""
    if type(kernel) is Contraction:
        return bool(kernel.sized_loops())
    return type(kernel) is Kernel and bool(kernel.loops) and all(s.at is None for s in kernel.stores) \
        and bool(kernel.sized_loops())


def symbolized(kernel: Kernel | Contraction, changed: frozenset[int],
               previous: Kernel | Contraction | None = None) -> Kernel | Contraction:
    """`kernel` with every coefficient of its indexes that is a product of sizes in `changed` times a constant
    written as that constant times a `Stride` over loops of those sizes (see the module docstring): the same kernel
    where none is, or no output loop inside the outermost nor loop of a reduction over a row (`_rows`) has such a
    size: the outermost's is a launch's range already, and a coefficient that is a multiple of a batch alone (a
    row's width of 21 at a batch of 7, of the outermost loop or of a column reduction's batch loop) is a
    coincidence more often than not. A reduction's loop over a row of t names t where no output loop does (a
    softmax's max and sum over `(h, t, t)`: its output loop the h*t rows, `o0*t + r0`).
    A contraction's loops of such sizes are its m, n and k, of a batch (`Contraction.sized_loops`: attention's
    products, their batch of heads a constant); its operands' indexes are written so, and its epilogue's as a
    kernel's (the product's strides it reads: a transpose's, of attention's gradient).

    `previous`, a kernel of the same structure at other sizes (`skeleton`), the last compiled, tells a coefficient
    that is a product of a changed size from one that equals such a product by chance (a head's width 16 at t = 16,
    or at t = 8, 16 = 2*t): each coefficient is written as the constant that is the same at both sizes times a
    `Stride` (the head's width stays 16), so the kernel's form at t = 16 or 8 is its form at t = 13; a coefficient
    that no such constant fits is written as without `previous`. It tells the loops of a reduction whose sizes
    changed too (`_Guide.loops`), which then name their sizes, whatever their coefficients (where `_rows` guesses
    from those: `w[r0*16]` beside rows of t would make r0 a batch's loop at t = 8)."""
    if type(kernel) is Contraction:
        vb, *axes = kernel.vars
        if vb.size == 1:
            return kernel
        guide = _guide(kernel, previous, changed)
        rewrite = _stride_rewrite(_names(axes, changed, guide), guide)
        if rewrite is None:
            return kernel
        a, bv = rewritten([kernel.a, kernel.bv], rewrite)
        epilogue = symbolized(kernel.epilogue, changed, _epilogue(kernel, previous)) \
            if kernel.epilogue is not None else None
        return replace(kernel, a=a, bv=bv, epilogue=epilogue, symbols=_symbols(kernel, changed, guide))
    guide = _guide(kernel, previous, changed)
    reduced = _loops(kernel)[len(kernel.loops):] if guide is not None else _rows(kernel)
    rewrite = _stride_rewrite(_names([*kernel.loops[1:], *reduced], changed, guide), guide)
    if rewrite is None:
        return kernel
    values = rewritten([s.value for s in kernel.stores], rewrite)
    return replace(kernel, stores=tuple(Store(s.buf, rewrite(s.index), v) for s, v in zip(kernel.stores, values)),
                   symbols=_symbols(kernel, changed, guide))


def _rows(kernel: Kernel) -> list[Var]:
    """The loops of `kernel`'s reductions that no index multiplies by a multiple of their size: a row's (a
    softmax's over its rows of t, `o0*t + r0`), not a batch's (a column reduction's, `r0*64 + o0`, whose rows'
    width is a multiple of the batch by chance). A guess from the sizes, which `symbolized` makes only where no
    kernel of the structure at other sizes tells which loops changed: a row of t that reads another array at
    a stride t divides by chance (`w[r0*16]` at t = 8) would be taken for a batch."""
    scales: dict[Var, set[int]] = {}
    stack = [e for v in kernel.values() for e in v.exprs()] + [s.index for s in kernel.stores]
    while stack:
        for atom, k in stack.pop().terms:
            if isinstance(atom, Var):
                scales.setdefault(atom, set()).add(k)
            else:
                stack.append(atom.x)
    return [r for v in kernel.values() if v.op is VOp.REDUCE for r in v.arg[1]
            if not any(k % r.size == 0 for k in scales.get(r, ()))]


def _names(loops: list[Var] | tuple[Var, ...], changed: frozenset[int], guide: _Guide | None) -> dict[int, str]:
    """Each size in `changed` that one of `loops` has, with the name of the first such loop (of those whose size
    changed, where a `guide` says)."""
    names: dict[int, str] = {}
    for v in loops:
        if v.size in changed and (guide is None or v.name in guide.loops):
            names.setdefault(v.size, v.name)
    return names


@dataclass(frozen=True)
class _Guide:
    """What `previous` tells `symbolized` (`_guide`): each index expression's counterpart in the previous kernel
    (None where one expression has two), each changed size's value there, and the loops whose sizes changed (by
    name: `Kernel.symbols`)."""

    paired: dict[Expr, Expr | None]
    was: dict[int, int]
    loops: frozenset[str]


def skeleton(kernel: Kernel | Contraction) -> str:
    """`kernel`'s body text with its numbers printed `#`: what the kernels of one structure share at any sizes (a
    runtime keeps the last compiled of each for `symbolized`'s `previous`)."""
    return _NUMBER.sub("#", kernel.body_text())


_NUMBER = re.compile(r"(?<!\w)\d+")


def _exprs(kernel: Kernel | Contraction) -> list[Expr]:
    """The index expressions of `kernel`'s own body (a contraction's operands'), in the order of its text."""
    values = toposort([kernel.a, kernel.bv]) if type(kernel) is Contraction else kernel.values()
    stores = [s.index for s in kernel.stores] if type(kernel) is Kernel else []
    return [*(e for v in values for e in v.exprs()), *stores]


def _loops(kernel: Kernel | Contraction) -> list[Var]:
    """`kernel`'s loops, its output's and its reductions', in order (a contraction's batch, m, n and k)."""
    if type(kernel) is Contraction:
        return list(kernel.vars)
    return [*kernel.loops, *(r for v in kernel.values() if v.op is VOp.REDUCE for r in v.arg[1])]


def _symbols(kernel: Kernel | Contraction, changed: frozenset[int], guide: _Guide | None) -> frozenset[str]:
    """`kernel`'s loops that `symbolized` takes for sizes that changed (`Kernel.symbols`): those whose sizes changed
    since the `guide`'s kernel, or without one, those of a size in `changed`."""
    return guide.loops if guide is not None else frozenset(v.name for v in _loops(kernel) if v.size in changed)


def _epilogue(kernel: Contraction, previous: Kernel | Contraction | None) -> Kernel | None:
    return previous.epilogue if type(previous) is Contraction else None


def _guide(kernel: Kernel | Contraction, previous: Kernel | Contraction | None, changed: frozenset[int]) \
        -> _Guide | None:
    """`previous` as a guide to `symbolized` for `kernel`, where it is one: a kernel of the same structure
    (`skeleton`) whose loops of each size in `changed` that `kernel` has had one other size."""
    if previous is None or type(previous) is not type(kernel) or skeleton(previous) != skeleton(kernel):
        return None
    sizes: dict[int, set[int]] = {}
    loops = set()
    for v, w in zip(_loops(kernel), _loops(previous)):
        if v.size in changed and v.size != w.size:
            sizes.setdefault(v.size, set()).add(w.size)
            loops.add(v.name)
    if not sizes or any(len(was) != 1 for was in sizes.values()):
        return None
    paired: dict[Expr, Expr | None] = {}
    for e, p in zip(_exprs(kernel), _exprs(previous)):
        paired[e] = p if paired.get(e, p) == p else None
    return _Guide(paired, {n: was.pop() for n, was in sizes.items()}, frozenset(loops))


def _stride_rewrite(names: dict[int, str], guide: _Guide | None = None) -> Callable[[Expr], Expr] | None:
    """The rewrite of an index that writes each coefficient that is a product of the sizes `names` holds times a
    constant as that constant times a `Stride` over the loops named for them (`symbolized`); with a `guide`, the
    constant that is the same in the previous kernel's counterpart of the coefficient, where one is; None where
    there are none."""
    if not names:
        return None
    was = guide.was if guide is not None and names.keys() <= guide.was.keys() else None

    def factored(k: int, before: int | None) -> tuple[int, tuple[str, ...]]:
        if was is not None and before is not None and (fit := _fitted(k, before, names, was)) is not None:
            return fit
        by: list[str] = []
        for n, name in names.items():
            while k and k % n == 0:
                k //= n
                by.append(name)
        return k, tuple(by)

    def pair(e: Expr, before: Expr | None) -> Expr:
        alike = before is not None and len(before.terms) == len(e.terms) \
            and all(type(a) is type(b) and (a.name == b.name if isinstance(a, Var) else True)
                    for (a, _), (b, _) in zip(e.terms, before.terms))
        k, by = factored(e.const, before.const if alike else None)
        out = Expr.of(1).times(by) * k if by else Expr.of(e.const)
        for n, (atom, coef) in enumerate(e.terms):
            was_atom, was_coef = before.terms[n] if alike else (None, None)
            if isinstance(atom, (Div, Mod)):  # the divisor stays: made directly, not simplified again
                atom = type(atom)(pair(atom.x, was_atom.x if alike else None), atom.c)
            k, by = factored(coef, was_coef)
            out = out + Expr.of(atom).times(by) * k
        return out

    @functools.cache
    def rewrite(e: Expr) -> Expr:
        return pair(e, guide.paired.get(e) if guide is not None else None)

    return rewrite


def _fitted(k: int, before: int, names: dict[int, str], was: dict[int, int]) -> tuple[int, tuple[str, ...]] | None:
    """`k` as a constant times powers of the sizes `names` holds where the same constant times the same powers of
    their previous sizes (`was`) is `before`: the most factors first; None where none fits."""
    if k == before:
        return k, ()
    most = []
    for n in names:
        e, rest = 0, k
        while rest and rest % n == 0:
            rest //= n
            e += 1
        most.append(range(e, -1, -1))
    for powers in sorted(itertools.product(*most), key=lambda p: -sum(p)):
        now = math.prod(n ** e for n, e in zip(names, powers))
        then = math.prod(was[n] ** e for n, e in zip(names, powers))
        if k % now == 0 and (k // now) * then == before:
            return k // now, tuple(name for name, e in zip(names.values(), powers) for _ in range(e))
    return None


def outermost(kernel: Kernel | Contraction) -> tuple[Var, ...]:
    """The output loop whose range a launch passes: a kernel's outermost, a contraction's epilogue's; none else."""
    if type(kernel) is Contraction:
        return kernel.epilogue.loops[:1] if kernel.epilogue is not None else ()
    return kernel.loops[:1]


def multiples(kernel: Kernel | Contraction, changed: frozenset[int]) -> frozenset[int]:
    """The positions among `kernel`'s `sized_loops()` of the loops of a size in `changed`, and of its `outermost`
    loop where its size is a multiple of one (a batch of heads times the length): those a kernel new to the
    process at sizes that changed is compiled generic over at once (each backend's runtime)."""
    outer = outermost(kernel)
    return frozenset(k for k, v in enumerate(kernel.sized_loops())
                     if v.size in changed or v in outer and any(v.size % g == 0 for g in changed))


def sizes(kernel: Kernel | Contraction) -> tuple[int, ...]:
    """The sizes of `kernel.sized_loops()`, in order: what tells apart the kernels of an erased text."""
    return tuple(v.size for v in kernel.sized_loops())


def generic(kernel: Kernel, over: frozenset[int]) -> Kernel:
    """The kernel that computes every kernel of `kernel`'s `erased_text()` whose `sizes` are `kernel`'s but at
    positions `over` (of `sized_loops()`), each over `[0, size)` of those loops: their variables range over
    `UNBOUNDED` values, and a count of a reduction's terms (`Kernel.counts`) over them is computed from their
    sizes; an output loop's size among them reads `N` in the name. A `Stride` reads the sizes of the loops it
    names, passed where they are among `over`; loops of one size (`Kernel.equal_sizes`, which the erased text
    pins) range over one number, those of different sizes over different ones."""
    # loops of one size (`Kernel.equal_sizes`) one size, those of others another: `UNBOUNDED` less its group's rank
    group = {v: g for g, loops in enumerate(kernel.equal_sizes()) for v in loops}
    wide = {v: Var(v.name, UNBOUNDED - group.get(v, 0)) for k, v in enumerate(kernel.sized_loops()) if k in over}
    counts = kernel.counts()
    counted = {r for c in counts.values() for r in c.loops}
    strided = kernel.strides()
    # the outermost loop's size is the launch's range, but a count or a stride of it needs the whole size: passed
    extents = tuple(w for v, w in wide.items() if v not in kernel.loops[:1] or v in counted or v.name in strided)
    size = {w: param(len(kernel.params) + k, int64) for k, w in enumerate(extents)}

    def count(c: Count) -> Value:
        terms = [size[wide[r]] if r in wide else const(r.size, int64) for r in c.loops]
        total = functools.reduce(lambda a, b: alu(Alu.MUL, int64, a, b), terms)
        return alu(Alu.SUB, int64, total, const(c.less, int64)) if c.less else total

    replace = {id(v): cast(count(counts[id(v)]), v.dtype) for v in kernel.values()
               if id(v) in counts and any(r in wide for r in counts[id(v)].loops)}
    mapping = {v: Expr.of(w) for v, w in wide.items()}
    values = substitute([s.value for s in kernel.stores], mapping, replace, loops=wide)  # plain stores (`eligible`)
    stores = tuple(Store(s.buf, s.index.substitute(mapping), v) for s, v in zip(kernel.stores, values))
    return Kernel(kernel.default_name(generic=tuple(wide)), kernel.buffers,
                  (*kernel.params, *(int64 for _ in extents)), tuple(wide.get(v, v) for v in kernel.loops), stores,
                  extents, kernel.symbols)
