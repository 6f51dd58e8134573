"""The CPU contraction template: packed operands, a register-tiled micro-kernel, threads over blocks.

A `kernels.ir.Contraction` runs in four steps, all compiled from LLVM IR:

1. `pack_a` evaluates the left operand (with its prologue: casts, scaling,
   transposes) into panels of MR rows: `Ap[b][ip][k][r] = a[b, ip*MR + r, k]`,
   or, where the operand runs along k in memory (`Layout.a_rows`: the rows of
   a row-major `x` in `x @ w`), in runs of R k's of each row (`Layout.a_run`),
   `Ap[b][ip][k // R][r][k % R]`: copies of whole runs rather than a transpose
   of single elements, and the micro-kernel reads the MR * R elements of a run
   over R steps of its loop. R is its unrolling, UNROLL_K, or where the operand
   computes a function of `mathlib` (attention's softmax), a vector's lanes:
   the packing computes whole vectors (in runs of 4, LLVM computed its exps 4
   lanes at a time, 2.5x the time);
   where a panel's lanes flatten a pair of axes (a convolution's output
   pixels, `(oh, ow)`), it is copied row by row of the inner axis: each row's
   run of the panel in vectors, with no division per lane (`_rows`);
2. `pack_b` does the same for the right operand with panels of NR columns,
   or nothing where B is read where it lies: a product of few rows
   (`Layout.b_row`), or a convolution's windows as runs of its padded images'
   rows, each k's row found in a table after the geometry (`Layout.b_taps`);
   Where each task is one product of a batch (`Layout.fused`), the task packs
   its own product's panels just before multiplying them, so they are still
   in the cache when read; otherwise both run as a phase of their own, before
   any task;
3. the GEMM function walks (batch, row block, column block) tasks, which the
   thread pool shares out; per block of `kc` k's, for each MR x NR tile of the
   product it keeps MR * NR/W accumulators in vector registers (W lanes each)
   while streaming the two panels: per k, NR/W aligned vector loads of B and
   MR broadcasts of A feed MR * NR/W fused multiply-adds. The tile is stored
   after each block of k (and read back for the next), masked at the matrix
   edges;
4. the epilogue kernel (bias, activation, any consumer) reads the product.

Panels are zero-padded to whole tiles, so the micro-kernel never branches on
edges; padding rows and columns only reach product elements outside the
matrix, which are never stored. A task's block of A (`row_panels` panels of
one k block) is sized to stay in the L2 cache while B's panels stream past it,
and a B micro-panel (kc x NR) stays in the L2 cache while the task's A panels
use it. Tasks cut each product into blocks of rows and of columns, whichever
way reads the panels the fewest times (`_blocks`).

A contraction generic over sizes (`kernels/symbolic.py`: a linear layer's batch,
as m, or as k in its weight's gradient) packs the operand whose rows vary, or
both where k does, by a kernel whose outermost loop runs over them
(`generic_pack_kernels`); where k varies, the panels are cut into blocks of
KC_TARGET k's, block after block (`Layout.blocked`). The core finds each panel
from strides in its geometry (`Layout.strides`), which the GEMM step of a
generic contraction reads from the call's frame. A batch's product generic over
its m, n or k (attention's over a sequence's length) packs each product's
panels where the geometry's strides put them (`_batched_pack`).
"""
from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from functools import lru_cache
from itertools import pairwise
from typing import NamedTuple

import llvmlite.binding as llvm
from llvmlite import ir

from ..dtype import float32, int64
from ..expr import Div, Expr, Mod, Var
from ..ir import BufferParam, Contraction, Kernel, Store, Value, VOp, substitute, toposort
from ..symbolic import UNBOUNDED, generic
from . import compiler, mathlib
from .render import PTR, FunctionBuilder, KernelRenderer, llvm_type, symbol, unit_stride

I1, I32, I64 = ir.IntType(1), ir.IntType(32), ir.IntType(64)
L2_BLOCK_BYTES = 1 << 19  # a task's block of A: half of a 1 MiB L2 (Zen 4's per core; Intel's servers have 2 MiB)
# The most k per block. Each block stores the product's tiles and reads them back for the next, from the L2
# cache or beyond: blocks of up to 768 k's make products 3-5% faster than blocks of 256 (Zen 4, float32),
# and keep a 3x3 convolution of 64 channels (k = 576) in one block. The B micro-panel (up to 768 x 32
# float32, 96 KiB) then streams from the L2 cache rather than staying in the L1: per k, 176 bytes read in
# 24 FMA cycles, well within the L2's bandwidth.
KC_TARGET = 768
# Elements between one panel's block of k and the next in blocked panels (`Layout.blocked`), after the block: a
# generic packing kernel writes one k of every panel in turn, and panels KC_TARGET * MR elements apart (a multiple
# of 2 KiB) would fall in the same few sets of the L1 cache, evicting each other (3x slower, measured on Zen 3).
# A line of 64 bytes more spreads them; a multiple of the lanes, so B's panels stay aligned.
BLOCKED_PANEL_PAD = 16
# The most row panels of a product whose B is read where it lies (`_b_in_place`) rather than packed: a product of
# so few rows reads each element of B about once, and packing it is a copy of B that costs more than the product
# (3 x 1024 @ 1024 x 1024, one core of Zen 3: packing B 350 us, the micro-kernel 245 us).
B_IN_PLACE_ROW_PANELS = 1
TILE_ROWS_512 = (8, 12)  # the heights of AVX-512 tiles (see `Layout.choose`), in order of preference
UNROLL_K = 4
TASKS_PER_THREAD = 4
TILE_K = 16  # k per block where packing transposes: a 64-byte line of float32 per lane


@dataclass(frozen=True)
class Layout:
    """Tile and block sizes of one contraction on this host."""

    lanes: int     # W: elements per vector register
    mr: int        # rows per tile
    nr: int        # columns per tile (a multiple of `lanes`)
    kc: int        # k per block (see KC_TARGET)
    row_panels: int     # panels of A per task
    col_panels: int     # panels of B per task
    fused: bool = False  # each task is one product of a batch, and packs its own panels
    a_rows: bool = False  # A's panels hold runs of `a_run` k's of each row (kc is then a multiple of it)
    # UNROLL_K, or a vector's lanes where A computes a function of `mathlib` (see the module's docstring): runs of
    # 16 float32 made a plain product's micro-kernel 5% slower (1024 x 1024 x 1024, one thread of Zen 5)
    a_run: int = UNROLL_K
    # The panels are cut into blocks of kc k's, block after block (`Ap[kb][b][ip][k % kc][r]`), rather than each
    # panel holding all of k: where a generic contraction's k is a run-time size (`generic_pack_kernels`), the
    # packing's addresses are then affine in k with constant strides.
    blocked: bool = False
    # B read where it lies, not packed (`_b_in_place`): the elements from one k of it to the next, 0 where packed
    b_row: int = 0
    # B read where it lies, each k's row where a table after the geometry puts it (`_b_taps`): a convolution's
    # windows over its padded images, whose place along k is found by divisions
    b_taps: bool = False

    @staticmethod
    def choose(c: Contraction, threads: int, code: Layout | None = None) -> Layout:
        """The layout of `c`; where `code` is given (a generic contraction's, compiled at another size), its
        tile, runs and blocking, which the code compiled for it holds, kept, its k per block where blocked, and of a
        batch whether each task packs its own product (`fused`).
        B is read in place (`_b_in_place`, `_b_taps`) only by a contraction of its own sizes: a generic one's packing
        kernels are made for packed panels."""
        batch, m, n, k = c.sizes
        b_row, b_taps, compiled = 0, False, code
        if code is None:
            vector_bits = 512 if "+avx512f" in llvm.get_host_cpu_features().flatten() else 256
            lanes = vector_bits // c.dtype.bits
            # AVX-512 has 32 vector registers: up to 12 x 2 accumulators, two B vectors and a broadcast; AVX2
            # has 16 (6 x 2 accumulators). With AVX-512, tiles of 8 rows keep the FMA unit as busy (measured on
            # Zen 4: 16 FMAs per k from 8 broadcasts and two B vectors) and divide the sizes products mostly
            # have (64 rows pad to 72 in tiles of 12, all multiplied): the height that pads the rows least, 8
            # where both do. A product at most one vector wide (a convolution's few output channels) takes
            # tiles one vector wide: two would multiply zeros half the time.
            mr = min(TILE_ROWS_512, key=lambda r: -(-m // r) * r) if vector_bits == 512 else 6
            nr = lanes if n <= lanes else 2 * lanes
            # Runs of UNROLL_K k's, or of a vector's where A computes a mathlib function. Where A's rows are found
            # by divisions (a convolution's windows as A, rows over (channel, tap)), a stride of one within each
            # run is enough (k over 56-wide rows): packed one element at a time, each would divide (16x64x56x56
            # k3's weight gradient: packing 29 -> 11 ms); a plain A is packed so at little cost, faster than in
            # runs of 4 (a 1x1 convolution's weight gradient: 11.3 -> 10.2 ms forward+backward).
            computed = any(v.op is VOp.ALU and mathlib.supports(v.arg, v.dtype) for v in toposort([c.a]))
            run = lanes if computed else UNROLL_K
            divided = any(c.vars[1] in d.x.vars() for v in toposort([c.a]) for e in v.exprs() for d in _divisions(e))
            a_rows = _runs_along_k(c, c.a, c.vars[1], mr, -(-m // mr), run if divided else TILE_K)
            code = Layout(lanes, mr, nr, 0, 0, 0, a_rows=a_rows, a_run=run if a_rows else UNROLL_K)
            b_row = _b_in_place(c, mr, nr)
            b_taps = not b_row and _b_taps(c, nr) is not None
        mp, np_ = -(-m // code.mr), -(-n // code.nr)
        kc = code.kc if code.blocked else -(-k // -(-k // KC_TARGET))
        if code.a_rows:  # blocks of k start at a run
            kc = -(-kc // code.a_run) * code.a_run
        row_panels, col_panels = _blocks(mp * code.mr, np_ * code.nr, mp, np_, -(-TASKS_PER_THREAD * threads // batch),
                                         max(1, min(mp, L2_BLOCK_BYTES // (code.mr * min(kc, k) * c.dtype.itemsize))))
        fused = batch > 1 and row_panels == mp and col_panels == np_
        if compiled is not None and batch > 1:  # a batched generic contraction's code packs in its tasks, or not
            fused = compiled.fused
            row_panels, col_panels = (mp, np_) if fused else (row_panels, col_panels)
        return replace(code, kc=kc, row_panels=row_panels, col_panels=col_panels, b_row=b_row, b_taps=b_taps,
                       fused=fused)

    def panels(self, c: Contraction) -> tuple[int, int]:
        """Row panels of A and column panels of B, per batch."""
        _, m, n, _ = c.sizes
        return -(-m // self.mr), -(-n // self.nr)

    def tasks(self, c: Contraction) -> int:
        mp, np_ = self.panels(c)
        return c.sizes[0] * -(-mp // self.row_panels) * -(-np_ // self.col_panels)

    def a_depth(self, c: Contraction) -> int:
        """The k's of A's panels (of a block of them where `blocked`): k, rounded up to whole runs where they
        hold runs of rows (`a_rows`)."""
        k = self.kc if self.blocked else c.sizes[3]
        return -(-k // self.a_run) * self.a_run if self.a_rows else k

    def a_runs(self, c: Contraction) -> tuple[int, int] | None:
        """Where A's panels hold runs of rows (`a_rows`), the k's of a panel (`a_depth`) and of a run (`a_run`)."""
        return (self.a_depth(c), self.a_run) if self.a_rows else None

    def strides(self, c: Contraction) -> tuple[int, int, int, int, int, int]:
        """Where a panel's block of k starts in A's and in B's panel buffer: the elements from one product of
        the batch to the next, from one panel to the next, and from one block of k to the next, for A, then B."""
        batch, _, _, k = c.sizes
        mp, np_ = self.panels(c)
        a_panel, b_panel = self.a_depth(c) * self.mr, (self.kc if self.blocked else k) * self.nr
        if self.b_row:
            return mp * a_panel, a_panel, self.kc * self.mr, _b_index(c)[c.vars[0]], self.nr, self.kc * self.b_row
        if self.b_taps:  # each block's rows from the table, from where the block starts in it
            return mp * a_panel, a_panel, self.kc * self.mr, _b_taps(c, self.nr)[0], self.nr, 0
        if self.blocked:
            a_panel, b_panel = a_panel + BLOCKED_PANEL_PAD, b_panel + BLOCKED_PANEL_PAD
            return mp * a_panel, a_panel, batch * mp * a_panel, np_ * b_panel, b_panel, batch * np_ * b_panel
        return mp * a_panel, a_panel, self.kc * self.mr, np_ * b_panel, b_panel, self.kc * self.nr

    def packed_buffers(self, c: Contraction) -> tuple[BufferParam, BufferParam]:
        """The panel buffers, which the runtime appends after the contraction's own buffers."""
        batch, _, _, k = c.sizes
        blocks = -(-k // self.kc) if self.blocked else 1
        a_batch, _, _, b_batch, _, _ = self.strides(c)
        return (BufferParam(c.dtype, blocks * batch * a_batch, scratch=True),
                BufferParam(c.dtype, 0 if self.b_row or self.b_taps else blocks * batch * b_batch, scratch=True))


def _blocks(rows: int, cols: int, mp: int, np_: int, tasks: int, most_row_panels: int) -> tuple[int, int]:
    """The panels of A and of B per task of one product of `rows` x `cols` (padded to whole panels, `mp` and
    `np_` of them): A's block of at most `most_row_panels` (sized for the L2 cache), and about `tasks` tasks
    where there are panels enough, so the threads can share them out even when one is slowed.

    Each block of rows reads all of the product's B panels, each block of columns all of its block of A:
    of the ways to cut the product into enough tasks, the one that reads the least, `row_blocks * cols +
    col_blocks * rows` elements per k. Cutting only rows, as a product of few rows and many columns would
    (a linear layer's `x @ w`), reads B's panels, the larger operand, once for every task. Blocks of equal
    size cannot always make `tasks` (22 panels in 12 blocks make 11): three quarters of it are enough."""
    enough = -(-3 * min(tasks, mp * np_) // 4)
    best: tuple[tuple[int, int], int, int] | None = None
    for cut in range(-(-mp // most_row_panels), mp + 1):
        row_panels = -(-mp // cut)  # blocks of equal size, but for the last
        row_blocks = -(-mp // row_panels)
        col_panels = -(-np_ // min(np_, -(-tasks // row_blocks)))
        col_blocks = -(-np_ // col_panels)
        key = (-min(enough, row_blocks * col_blocks), row_blocks * cols + col_blocks * rows)
        if best is None or key < best[0]:
            best = key, row_panels, col_panels
        if row_blocks >= tasks:  # rows alone make the tasks: more blocks of rows only read more
            break
    return best[1], best[2]


@dataclass(frozen=True)
class Span:
    """The range of the loop over `var` where it depends on the loops outside it: from the greatest of 0 and
    `lo` to the least of `var.size` and `hi` (expressions in the outer loops' variables)."""

    var: Var
    lo: tuple[Expr, ...]
    hi: tuple[Expr, ...]


@dataclass(frozen=True)
class Pack:
    """A kernel that packs one operand into its panels, with loops over `spans`: the last panel (or block
    of k) stops at the operand's edge instead of reading past it, and a panel of a flattened pair of axes
    walks its rows of the inner axis (see `_rows`). A span with no lower bound takes two versions of its
    loop: where it covers the whole range, a constant trip count, which LLVM unrolls and vectorizes."""

    kernel: Kernel
    spans: tuple[Span, ...]
    lane: Var  # the copy's innermost loop (a panel's lanes, or k in A's rows): the loops outside stay rolled
    # A generic contraction's (`generic_pack_kernels`): the contraction's loop whose run-time size the outermost
    # loop covers, and the variables in `spans` that stand for run-time sizes, each with the parameter it reads
    covers: Var | None = None
    sizes: tuple[tuple[Var, int], ...] = ()
    # A batched generic contraction's (`_batched_pack`): the names a `Stride` of the kernel reads (the operand's m, n
    # and k, the panels' strides) each with the parameter that holds that size
    strides: tuple[tuple[str, int], ...] = ()

    def generic(self) -> Pack:
        """This pack generic over its outermost loop (`kernels/symbolic.py`), its spans read over the same
        unbounded variable."""
        kernel = generic(self.kernel, frozenset({0}))
        mapping = {self.kernel.loops[0]: Expr.of(kernel.loops[0])}
        spans = tuple(Span(s.var, tuple(e.substitute(mapping) for e in s.lo), tuple(e.substitute(mapping) for e in s.hi))
                      for s in self.spans)
        return replace(self, kernel=kernel, spans=spans)

    def render(self, checked: bool = False) -> str:
        """LLVM IR of the kernel, of the common kernel signature (checked: see `FunctionBuilder.guard`)."""
        return str(_PackRenderer(self, checked).render())


class _PackRenderer(KernelRenderer):
    rolled_nests = False  # the lane loop, with a loop over k inside, must become straight-line code

    def __init__(self, pack: Pack, checked: bool):
        super().__init__(pack.kernel, checked)
        self.spans = {span.var: span for span in pack.spans}
        self.sizes = pack.sizes
        self.passed = {Var(name, UNBOUNDED): at for name, at in pack.strides}  # a `Stride`'s sizes the call passes
        self.loops.update({var.name: var for var in self.passed})
        loops = pack.kernel.loops
        self.outer = set(loops[:loops.index(pack.lane)])
        self.outer_latches: list[ir.Instruction] = []  # back edges of the loops in `outer`
        self.lane = pack.lane
        self.lane_latches: list[ir.Instruction] = []  # back edges of the lane loop
        self.part_latches: list[ir.Instruction] = []  # of them, its versions over part of a panel (`over_part`)
        self.whole: set[Var] = set()  # loops whose span is known to cover them where they are emitted (`loop`)

    def render(self) -> ir.Module:
        # The panels are scratch memory no operand shares: `scope_written_buffers` says so, which lets LLVM
        # vectorize the copy across the fully unrolled lane loop, which it otherwise must keep in program order.
        module = super().render()
        # The loops outside the lane loop are not to be vectorized: once LLVM has unrolled the loops inside
        # (A's 12 lanes), it would vectorize the loop over k instead, with gathers and scatters across
        # rows, 1.3-4x slower than the unrolled lanes' copy. Nor unrolled: copies of the unrolled lanes'
        # copy cost compile time for no speed (see `keep_nests_rolled`).
        # Nor is the lane loop's version over part of a panel (the operand's last): its lanes would be vectorized
        # through loads put together element by element, a body LLVM takes most of a second to compile (the
        # transposed keys of attention's scores, rows 192 floats apart), for one panel of the operand.
        if self.outer_latches or self.part_latches:
            no_vectorize = module.add_metadata([ir.MetaDataString(module, "llvm.loop.vectorize.enable"), I1(0)])
            no_unroll = module.add_metadata([ir.MetaDataString(module, "llvm.loop.unroll.disable")])
            loop_id = module.add_metadata([no_vectorize, no_unroll])
            loop_id.operands = (loop_id, no_vectorize, no_unroll)  # a loop ID refers to itself
            for latch in self.outer_latches + self.part_latches:
                latch.set_metadata("llvm.loop", loop_id)
        # A copy that transposes (B of `x @ w.T`) is vectorized along the panel's lanes, reading each vector
        # through a gather: on Zen 4 that copy is 2.7x slower than element by element (and gathers are slow
        # on Intel under the Downfall mitigation). The function's features replace the machine's: all of them,
        # with gathers not preferred (a string attribute, which llvmlite renders as given but does not accept).
        features = f"{compiler.features(mathlib.wide(self.kernel))},+prefer-no-gather"
        set.add(self.fn.attributes, f'"target-features"="{features}"')
        return module

    def extent(self, var: Var) -> ir.Value:
        at = self.passed.get(var)
        return super().extent(var) if at is None else self.params[at]

    def spanned(self, var: Var, lo: ir.Value, hi: ir.Value, body: Callable[[ir.Value, ir.Value], None]) -> None:
        """`body(start, end)`, the range of the loop over `var`: [lo, hi), or where `var` has a span, the
        part of it in the span's range (see `Span`): [lo, hi) is a piece of the loop where the renderer cuts it
        (`emit_pieces`), whose bounds it takes as known there."""
        span = self.spans.get(var) if var not in self.whole else None
        # the bounds that can cut into the range: the others hold for every value of the outer loops
        lows = [e for e in span.lo if e.vmax > 0] if span else []
        highs = [e for e in span.hi if e.vmin < var.size] if span else []
        if not lows and not highs:
            body(lo, hi)
            return
        b = self.b
        for size, at in self.sizes:  # read from the parameters, which the function's entry loads
            self.vars.setdefault(size, self.params[at])
        start, end = lo, hi
        for e in lows:
            x = self.expr(e)
            start = b.select(b.icmp_signed(">", x, start), x, start)
        for e in highs:
            x = self.expr(e)
            end = b.select(b.icmp_signed("<", x, end), x, end)
        if lows:
            body(start, end)
        else:
            self.when(f"{var.name}_whole", b.icmp_signed("==", end, hi),
                      lambda: body(lo, hi), lambda: self.over_part(var, lambda: body(start, end)))

    def over_part(self, var: Var, emit: Callable[[], None]) -> None:
        """`emit()`, the version of the loop over `var` for part of its range; where `var` is the lane loop, its
        back edges noted in `part_latches`."""
        if var != self.lane:
            emit()
            return
        before = len(self.lane_latches)
        emit()
        self.part_latches += self.lane_latches[before:]

    def loop(self, var: Var, lo: ir.Value, hi: ir.Value, body: Callable[[], None]) -> Latches:
        """The loop kept to `var`'s span: one loop, or two where the span's range is chosen at run time; the
        back edges of both (loop metadata goes on each). Where a loop inside is cut at a run-time size less
        `var` times its size (`_inner_cut`: the k's of a run of A's rows, of a generic contraction's k), the
        iterations of `var` that leave it whole come first, a loop of their own, with no test of it."""
        latches = Latches()
        cut = self._inner_cut(var)

        def emit(start: ir.Value, end: ir.Value) -> None:
            if cut is None:
                latches.append(self.marked_loop(var, start, end, body))
                return
            inner, whole = cut
            b = self.b
            split = self.expr(whole)
            split = b.select(b.icmp_signed("<", split, start), start, b.select(b.icmp_signed("<", split, end), split, end))
            self.whole.add(inner)
            latches.append(self.marked_loop(var, start, split, body))
            self.whole.discard(inner)
            latches.append(self.marked_loop(var, split, end, body))

        self.spanned(var, lo, hi, emit)
        return latches

    def _inner_cut(self, var: Var) -> tuple[Var, Expr] | None:
        """Where the span of a loop inside `var`'s ends at a run-time size less `var` times that loop's size (`size
        - var * c`, the loop of c iterations), that loop and the end of the iterations of `var` that leave it whole
        (`size // c`); else None."""
        passed = {v for v, _ in self.sizes}
        for span in self.spans.values():
            c = span.var.size
            for e in span.hi:
                rest = e + Expr.of(var) * c
                if not span.lo and len(span.hi) == 1 and (var, -c) in e.terms and var not in rest.vars() \
                        and rest.vars() <= passed and rest.vars() and e.vmin < c:
                    for size, at in self.sizes:  # read from the parameters, which the function's entry loads
                        self.vars.setdefault(size, self.params[at])
                    return span.var, rest // c
        return None

    def emit_columns(self, red: Value, lo: ir.Value, hi: ir.Value) -> None:
        # An operand that is a reduction over outer axes (`x.sum(1)` of a row-major x) is packed by the
        # column path, which runs the innermost loop itself: it must keep to its span too.
        columns = super().emit_columns
        self.spanned(self.kernel.loops[-1], lo, hi, lambda start, end: columns(red, start, end))

    def marked_loop(self, var: Var, lo: ir.Value, hi: ir.Value, body: Callable[[], None]) -> ir.Branch:
        """The loop, its back edge noted in `outer_latches` if it is outside the lane loop, in `lane_latches` if it
        is the lane loop."""
        latch = super().loop(var, lo, hi, body)
        if var in self.outer:
            self.outer_latches.append(latch)
        elif var == self.lane:
            self.lane_latches.append(latch)
        return latch


class Latches(list):
    """The back edges of the loops that stand for one loop (see `_PackRenderer.loop`)."""

    def set_metadata(self, name: str, node: ir.MDValue) -> None:
        for latch in self:
            latch.set_metadata(name, node)


def pack_kernels(c: Contraction, layout: Layout) -> tuple[Pack, Pack]:
    """The kernels that evaluate the operands into their panels (slots after the contraction's buffers)."""
    _, vm, vn, _ = c.vars
    mp, np_ = layout.panels(c)
    buffers = c.buffers + layout.packed_buffers(c)
    a = _pack(c, buffers, f"{c.name}_pack_a", len(c.buffers), c.a, vm, layout.mr, mp, layout.fused,
              layout.a_runs(c))
    if layout.b_row or layout.b_taps:  # B read in place: its packing stage copies nothing, one iteration that stores nothing
        unit = Var(f"{vn.name}_in_place", 1)
        return a, Pack(Kernel(f"{c.name}_pack_b", buffers, c.params, (unit,), ()), (), unit)
    return a, _pack(c, buffers, f"{c.name}_pack_b", len(c.buffers) + 1, c.bv, vn, layout.nr, np_, layout.fused)


def generic_pack_kernels(c: Contraction, layout: Layout, over: frozenset[Var]) -> tuple[Pack, Pack]:
    """The packing kernels of a contraction of one product whose sizes of the loops `over` (of m, n and k: m
    and n, or k alone) are run-time values: an operand whose lane axis is among them packed as `_pack` packs it,
    its panels the outermost loop and the last panel's lanes up to the size the call's geometry passes
    (`GEOMETRY`, after the contraction's parameters); where k is among them, both by a kernel whose outermost
    loop runs over k (`_blocked_pack`). `Pack.generic` makes those generic over their outermost loop; the other
    operand is packed as `pack_kernels` packs it. A batch's are `_batched_pack`'s, whatever varies."""
    _, vm, vn, vk = c.vars
    if c.sizes[0] > 1:
        buffers = c.buffers + layout.packed_buffers(c)
        return (_batched_pack(c, layout, buffers, f"{c.name}_pack_a", "a", c.a, vm, layout.mr, over),
                _batched_pack(c, layout, buffers, f"{c.name}_pack_b", "b", c.bv, vn, layout.nr, over))
    mp, np_ = layout.panels(c)
    _, a_panel, a_block, _, b_panel, b_block = layout.strides(c)
    buffers = c.buffers + layout.packed_buffers(c)
    packs = list(pack_kernels(c, layout))
    sides = ((c.a, vm, layout.mr, mp, a_panel, a_block, layout.a_rows),
             (c.bv, vn, layout.nr, np_, b_panel, b_block, False))
    for side, (operand, lane, width, panels, panel, block, runs) in enumerate(sides):
        slot, name = len(c.buffers) + side, packs[side].kernel.name
        if vk in over:
            packs[side] = _blocked_pack(c, layout, buffers, name, slot, operand, lane, width, panels, panel, block,
                                        runs)
        elif lane in over:
            at = GEOMETRY.index("m" if lane is vm else "n")
            size = Var(f"{lane.name}_size", UNBOUNDED)
            pack = _pack(c, buffers, name, slot, operand, lane, width, panels, False,
                         layout.a_runs(c) if runs else None, Expr.of(size))
            params = (*c.params, *(int64 for _ in range(at + 1)))
            packs[side] = replace(pack, kernel=replace(pack.kernel, params=params), covers=lane,
                                  sizes=((size, len(c.params) + at),))
    return packs[0], packs[1]


def _batched_pack(c: Contraction, layout: Layout, buffers: tuple[BufferParam, ...], name: str, side: str,
                  operand: Value, lane: Var, width: int, over: frozenset[Var]) -> Pack:
    """The operand of a batched contraction whose sizes of the loops `over` (of m, n and k) are run-time values
    packed as `_pack` packs it, by the batch then its panels: each panel where the strides of the call's geometry
    (`Layout.strides`) put it, the panels, their lanes and the k's up to the sizes the geometry passes, and the
    operand's own strides (`symbolic.symbolized`) read from the geometry's m, n and k. Its outermost loop is the
    batch, whose size stays: a fused layout's task packs its own product (`render_gemm`)."""
    vb, vm, vn, vk = c.vars
    at = {key: len(c.params) + GEOMETRY.index(key) for key in GEOMETRY}
    lanes, depth, panels = (Var(f"{lane.name}_{what}", UNBOUNDED) for what in ("size", "depth", "panels"))
    sizes = ((lanes, at["m" if lane is vm else "n"]), (depth, at["k"]), (panels, at[f"{'row' if side == 'a' else 'col'}_panels_total"]))
    p = Var(f"{lane.name}_panel", layout.panels(c)[0 if side == "a" else 1])
    start = Expr.of(vb).times((f"{side}_batch",)) + Expr.of(p).times((f"{side}_panel",))
    pack = _pack(c, buffers, name, len(c.buffers) + (side == "b"), operand, lane, width, p.size, True,
                 layout.a_runs(c) if side == "a" else None,
                 Expr.of(lanes) if lane in over else None, _Batched(start, Expr.of(depth) if vk in over else None,
                                                                   Expr.of(panels)))
    strides = tuple((v.name, at[key]) for v, key in zip((vm, vn, vk), "mnk")) + \
        tuple((f"{side}_{what}", at[f"{side}_{what}"]) for what in ("batch", "panel"))
    kernel = replace(pack.kernel, params=(*c.params, *(int64 for _ in GEOMETRY)))
    return replace(pack, kernel=kernel, sizes=sizes, strides=strides)


class _Batched(NamedTuple):
    """Where a batched generic contraction's packing (`_batched_pack`) puts a panel, and its run-time sizes."""

    start: Expr  # the panel's first element, from the batch and panel variables
    depth: Expr | None  # k, where it varies
    panels: Expr  # the panels per product


def _blocked_pack(c: Contraction, layout: Layout, buffers: tuple[BufferParam, ...], name: str, slot: int,
                  operand: Value, lane: Var, width: int, panels: int, panel: int, block: int, runs: bool) -> Pack:
    """The operand packed as `_pack` packs it into blocked panels (`Layout.blocked`), by a kernel whose outermost
    loop runs over k, each panel's lanes inside: the stores' addresses then take k with the constant strides of a
    `panel` and a `block` of k (`Layout.strides`), whatever its size. The contraction is one product
    (`Contraction.sized_loops`): its batch variable reads 0."""
    vb, _, _, vk = c.vars
    (operand,) = substitute([operand], {vb: Expr.of(0)})
    p, lane_var = Var(f"{lane.name}_panel", panels), Var(f"{lane.name}_lane", width)
    at = Expr.of(vk) % layout.kc
    start = Expr.of(vk) // layout.kc * block + Expr.of(p) * panel
    run = layout.a_run
    index = start + (at // run * (width * run) + Expr.of(lane_var) * run + at % run if runs
                     else at * width + lane_var)
    (value,) = substitute([operand], {lane: Expr.of(p) * width + lane_var})
    return Pack(Kernel(name, buffers, c.params, (vk, p, lane_var), (Store(slot, index, value),)),
                (Span(lane_var, (), (lane.size - Expr.of(p) * width,)),), lane_var, covers=vk)


def _k_tiles(c: Contraction, operand: Value, lane: Var, width: int, panels: int, tile: int = TILE_K) \
        -> tuple[Var, Var, Var, Var, dict[Var, Expr], Value]:
    """The panel and lane variables of an operand's packing, the block and tile of k (`tile` k's), the
    operand's lane axis mapped onto the first two, and the operand read with k cut into the last two."""
    vk = c.vars[3]
    p, lane_var = Var(f"{lane.name}_panel", panels), Var(f"{lane.name}_lane", width)
    kb, kt = Var(f"{vk.name}_block", -(-vk.size // tile)), Var(f"{vk.name}_tile", min(tile, vk.size))
    mapping = {lane: Expr.of(p) * width + lane_var}
    (value,) = substitute([operand], {**mapping, vk: Expr.of(kb) * kt.size + kt})
    return p, lane_var, kb, kt, mapping, value


def _b_index(c: Contraction) -> dict[Var | None, int] | None:
    """Where B is a plain load of a buffer of the contraction's dtype, rows of n along k (`x @ w` of a row-major
    `w`, a view of it with rows further apart, broadcast or strided over the batch): the coefficients of its
    index in (batch, k, n) and its constant, keyed None; else None."""
    vb, _, vn, vk = c.vars
    load = c.bv
    if load.op is not VOp.LOAD or load.dtype != c.dtype or load.arg[2]:
        return None
    index: Expr = load.arg[1]
    coefs: dict[Var | None, int] = {vb: 0, vk: 0, **dict(index.terms), None: index.const}
    if set(coefs) != {vb, vk, vn, None} or coefs[vn] != 1 or coefs[vk] <= 0 or coefs[vb] < 0:
        return None
    return coefs


def _b_in_place(c: Contraction, mr: int, nr: int) -> int:
    """The elements between one k of B and the next where the micro-kernel is to read B where it lies (see
    `Layout.b_row`), else 0: B a plain load whose rows run along n (`_b_index`), whole panels of n (the last
    reads no column past the matrix) and at most B_IN_PLACE_ROW_PANELS panels of rows, which read it once or
    little more. Packed panels are better where they are read many times: they are contiguous, where rows of
    B 4 KiB apart (a row of 1024 float32) share a few sets of the caches and evict each other."""
    _, m, n, _ = c.sizes
    index = _b_index(c)
    if index is None or n % nr or -(-m // mr) > B_IN_PLACE_ROW_PANELS:
        return 0
    return index[c.vars[3]]


def _b_taps(c: Contraction, nr: int) -> tuple[int, tuple[int, ...]] | None:
    """Where B is a plain load of a buffer of the contraction's dtype whose rows run along n but lie where no
    stride along k puts them (a stride-1 convolution's windows over its padded images, each (channel, tap) of k
    a row of the image flattened, `nn/convolution.py`): the elements from one product of the batch to the next
    and each k's row, its first element's index; else None. Its panels, NR columns from each k's row, are then
    read in place, as a packed panel's would be (`Layout.b_taps`): packing them copied the windows, nine times the
    images for a 3x3 kernel, which took half as long as the product. Only where some k's row overlaps the next's
    within a panel (a kernel's taps along the image's row), so that the packing would copy elements several times:
    rows that do not overlap are read faster packed, contiguous (1024 rows 4 KiB apart, a product by a permuted
    reshape: 5.8 ms packed, 8.1 ms in place). Every column of the last panel must lie in the buffer (the product's
    columns past n only reach elements never stored)."""
    vb, _, vn, vk = c.vars
    load = c.bv
    if load.op is not VOp.LOAD or load.dtype != c.dtype or load.arg[2] or _b_index(c) is not None:
        return None
    return _tap_rows(load.arg[1], vb, vn, vk, c.buffers[load.arg[0]].size, nr)


@lru_cache(maxsize=256)
def _tap_rows(index: Expr, vb: Var, vn: Var, vk: Var, size: int, nr: int) -> tuple[int, tuple[int, ...]] | None:
    """`_b_taps` of B's `index` in a buffer of `size` elements, read in panels of `nr` columns."""
    terms = dict(index.terms)
    if terms.pop(vn, 0) != 1 or (batch := terms.pop(vb, 0)) < 0 or not terms:
        return None
    if any(not isinstance(atom, (Var, Div, Mod)) or Expr.of(atom).vars() != {vk} for atom in terms):
        return None
    along_k = Expr.make(index.const, terms)
    rows = tuple(along_k.substitute({vk: Expr.of(k)}).const for k in range(vk.size))
    if min(rows) < 0 or batch * (vb.size - 1) + max(rows) + -(-vn.size // nr) * nr > size:
        return None
    return (batch, rows) if any(0 < abs(after - before) < nr for before, after in pairwise(rows)) else None


def _runs_along_k(c: Contraction, operand: Value, lane: Var, width: int, panels: int, tile: int = TILE_K) -> bool:
    """Whether the operand steps through memory along k and not along its lane axis (see `_pack`). A load
    the same for every k (a softmax's row sums, in attention's second product) does not count: it is read
    once per lane, outside the loop over k. Unit stride is asked of runs of `tile` k's."""
    _, lane_var, _, kt, _, value = _k_tiles(c, operand, lane, width, panels, tile)
    # Unit stride along k may show only once k is cut into tiles: k running over whole rows of an image
    # (a convolution's weight gradient) reads `(k // 16)*plane + k % 16`, which the tile makes `kt`.
    along_lane = any(v.op is VOp.LOAD and (lane_var, 1) in v.arg[1].terms and kt in v.arg[1].vars()
                     for v in toposort([value]))
    return unit_stride(value, kt) and not along_lane


def _pack(c: Contraction, buffers: tuple[BufferParam, ...], name: str, slot: int, operand: Value, lane: Var,
          width: int, panels: int, by_batch: bool, a_runs: tuple[int, int] | None = None, lanes: Expr | None = None,
          batched: _Batched | None = None) -> Pack:
    """`panel[b][p][k][l] = operand(b, lane=p*width + l, k)`, with explicit loops over panel p, k and lane l,
    so that store addresses are affine and the innermost loop steps through both memories in order.

    Where the operand runs along the lane in memory (or along neither), the lane loop is innermost:
    reads and writes are both sequential, and the loop vectorizes. Where it runs along k (A of `x @ w`,
    B of `x @ w.T`), k is cut into blocks of TILE_K with the lane loop outside the block's k loop: each
    lane reads a run of TILE_K elements, and the block of TILE_K x width elements written stays in the L1
    cache until it is complete.

    Where `a_runs` is given (A's panels in runs of rows, `Layout.a_runs`: the k's of a panel and of a run), each lane's
    row is copied in order, a run at a time: the innermost loop, the one that vectorizes, steps through
    both memories (a tile of several runs would store through scatters).

    The outer loop is the batch where `by_batch` (a fused layout's task packs one product: iterations
    [b, b + 1)) or where there are more products than panels, else the panels, to share out among threads.
    `lanes` is the operand's size along the lane axis where that is not `lane.size` (a run-time size, see
    `generic_pack_kernels`); `batched`, a batched generic contraction's panels and sizes (`_batched_pack`).
    """
    vb, _, _, vk = c.vars
    batch = vb.size
    k = Expr.of(vk.size) if batched is None or batched.depth is None else batched.depth
    lanes = Expr.of(lane.size) if lanes is None else lanes
    p, lane_var, kb, kt, mapping, value = _k_tiles(c, operand, lane, width, panels)
    first = Expr.of(p) * width  # the panel's first element along the lane axis
    spans = [Span(lane_var, (), (lanes - first,))]
    outer = (vb, p) if by_batch or panels < batch else (p, vb)
    panel = Expr.of(vb) * panels + p

    def at(depth: int) -> Expr:
        """Where the panel starts, of `depth` k's."""
        return panel * (depth * width) if batched is None else batched.start

    def counted(loop: Var, size: Expr) -> list[Span]:
        """`loop`'s span where its trip count, `size`, is a run-time size."""
        return [Span(loop, (), (size,))] if batched is not None and batched.depth is not None else []

    if batched is not None:
        spans.append(Span(p, (), (batched.panels,)))
    if a_runs is not None:
        depth, length = a_runs
        _, _, run, kr, mapping, value = _k_tiles(c, operand, lane, width, panels, length)
        index = at(depth) + (Expr.of(run) * width + lane_var) * length + kr
        return Pack(Kernel(name, buffers, c.params, (*outer, lane_var, run, kr), (Store(slot, index, value),)),
                    (*spans, *counted(run, (k + length - 1) // length), Span(kr, (), (k - Expr.of(run) * length,))), kr)
    if _runs_along_k(c, operand, lane, width, panels):
        mapping = {**mapping, vk: Expr.of(kb) * kt.size + kt}
        spans += [*counted(kb, (k + kt.size - 1) // kt.size), Span(kt, (), (k - Expr.of(kb) * kt.size,))]
        loops = (*outer, kb, lane_var, kt)
    elif batched is None and (rows := _rows(operand, lane, width)) is not None:
        # a panel's rows of the lane axis's inner axis, each row's run of the panel walked in order
        row, col, value = rows
        start = Expr.of(row) * col.size - first  # the row's first element, from the panel's
        spans = [Span(row, (first // col.size,), ((first + width - 1) // col.size + 1,)),
                 Span(col, (-start,), (width - start, lanes - Expr.of(row) * col.size))]
        index = (panel * vk.size + vk) * width + start + col
        return Pack(Kernel(name, buffers, c.params, (*outer, row, vk, col), (Store(slot, index, value),)),
                    tuple(spans), col)
    else:
        (value,) = substitute([operand], mapping)
        spans += counted(vk, k)
        loops = (*outer, vk, lane_var)
    index = at(vk.size) + mapping.get(vk, Expr.of(vk)) * width + lane_var
    return Pack(Kernel(name, buffers, c.params, loops, (Store(slot, index, value),)), tuple(spans), lane_var)


def _divisions(e: Expr) -> Iterator[Div | Mod]:
    """The floor divisions and modulos in `e`, nested ones included (inside a generic kernel's `Stride`s too)."""
    for atom, _ in e.terms:
        if isinstance(atom, (Div, Mod)):
            yield atom
        if not isinstance(atom, Var):
            yield from _divisions(atom.x)


def _rows(operand: Value, lane: Var, width: int) -> tuple[Var, Var, Value] | None:
    """Where the operand's lane axis is a flattened pair of axes (a convolution's output pixels, `(oh, ow)`,
    read as `lane // OW` and `lane % OW`): the lane axis as rows and columns, `lane = row * OW + col`, and
    the operand read that way, if that leaves no division by the columns' variable.

    A flat lane loop divides each lane's index: a division LLVM does not vectorize, and loads through
    gathers. Within a row the division is the row, computed once, and the loads step through memory,
    so the copy of each row's run vectorizes. Rows shorter than a quarter of a panel (`width`) are left
    flat: their runs would be too short to fill a vector."""
    divisors = [d.c for v in toposort([operand]) for e in v.exprs() for d in _divisions(e) if lane in d.x.vars()]
    if not divisors or (cols := min(divisors)) * 4 < width:
        return None
    row, col = Var(f"{lane.name}_row", -(-lane.size // cols)), Var(f"{lane.name}_col", cols)
    (value,) = substitute([operand], {lane: Expr.of(row) * cols + col})
    if any(col in d.x.vars() for v in toposort([value]) for e in v.exprs() for d in _divisions(e)):
        return None
    return row, col, value


# The geometry a GEMM core reads at run time, in this order (one i64 each): the product's rows m and
# columns n, k, the panels of A and of B per batch, the blocks of rows and of columns a task takes, the
# panels per block of rows and of columns, k per block, the strides of A's and B's panels (`Layout.strides`);
# for a checked core's messages and tests, the product's buffer slot and size, A's panels' slot and size, and
# B's size; the elements from one k of B to the next (`Layout.b_row`, NR where packed) and B's slot (its panels',
# after A's, or where read in place, its operand's buffer).
GEOMETRY = ("m", "n", "k", "row_panels_total", "col_panels_total", "row_blocks", "col_blocks", "row_panels",
            "col_panels", "kc", "a_batch", "a_panel", "a_block", "b_batch", "b_panel", "b_block",
            "product_slot", "product_size", "a_slot", "a_size", "b_size", "b_row", "b_slot")


def core_name(c: Contraction, layout: Layout) -> str:
    """The GEMM core a contraction runs: one per dtype and tile, shared by every contraction of them."""
    return (f"lt_gemm_{c.dtype.name}_{layout.lanes}x{layout.mr}x{layout.nr}"
            f"{f'_a_runs{layout.a_run}' if layout.a_rows else ''}"
            f"{'_b_in_place' if layout.b_row else ''}{'_b_taps' if layout.b_taps else ''}")


def geometry(c: Contraction, layout: Layout) -> tuple[int, ...]:
    """The values of GEOMETRY for a contraction."""
    _, m, n, k = c.sizes
    mp, np_ = layout.panels(c)
    a_size, b_size = (p.size for p in layout.packed_buffers(c))
    b_slot = len(c.buffers) + 1
    b_row = layout.b_row or layout.nr
    if layout.b_row:  # B's buffer from where the core's pointer to it starts (`render_gemm`)
        b_slot = c.bv.arg[0]
        b_size = c.buffers[b_slot].size - _b_index(c)[None]
    elif layout.b_taps:  # B's buffer, and in place of a row's length the elements its rows reach (a checked core's)
        b_slot = c.bv.arg[0]
        b_size, b_row = c.buffers[b_slot].size, max(_b_taps(c, layout.nr)[1]) + 1
    return (m, n, k, mp, np_, -(-mp // layout.row_panels), -(-np_ // layout.col_panels), layout.row_panels,
            layout.col_panels, layout.kc, *layout.strides(c), c.product, c.buffers[c.product].size, len(c.buffers),
            a_size, b_size, b_row, b_slot)


class _GemmRenderer(FunctionBuilder):
    """The GEMM core: `void core(ptr product, ptr a_panels, ptr b_panels, ptr geometry, i64 first_task,
    i64 end_task, ptr fault_record)`. Its sizes are run-time values (`GEOMETRY`), so one core serves every
    contraction of a dtype and tile; only the tile (MR x NR, the vector width) is compiled in, as the
    registers it holds. A checked core (see `tile_inside`) records its first fault where the contraction's
    call says."""

    def __init__(self, c: Contraction, layout: Layout, checked: bool):
        super().__init__(core_name(c, layout), 0 if checked else None, (PTR, PTR, PTR, PTR, I64, I64, PTR))
        self.c, self.layout = c, layout
        self.t = llvm_type(c.dtype)
        self.vt = ir.VectorType(self.t, layout.lanes)
        self.suffix = f"v{layout.lanes}{'f32' if c.dtype == float32 else 'f64'}"  # intrinsic name mangling

    def render(self) -> str:
        lay, b = self.layout, self.b
        out, apack, bpack, geom, start, end, _ = self.fn.args
        g = self.geometry = {name: b.load(b.gep(geom, [I64(i)], source_etype=I64), typ=I64)
                             for i, name in enumerate(GEOMETRY)}
        m, n, k, mp, np_ = g["m"], g["n"], g["k"], g["row_panels_total"], g["col_panels_total"]
        row_blocks, col_blocks, row_panels, col_panels, kc = (g["row_blocks"], g["col_blocks"], g["row_panels"],
                                                              g["col_panels"], g["kc"])
        m_tiles, n_tiles = b.udiv(m, I64(lay.mr)), b.udiv(n, I64(lay.nr))
        blocks = b.mul(row_blocks, col_blocks)

        def task(t: ir.Value) -> None:
            bi = b.udiv(t, blocks)
            rest = b.urem(t, blocks)
            rb, cb = b.udiv(rest, col_blocks), b.urem(rest, col_blocks)
            ip0, jp0 = b.mul(rb, row_panels), b.mul(cb, col_panels)
            ip1 = self.min(b.add(ip0, row_panels), mp)
            jp1 = self.min(b.add(jp0, col_panels), np_)

            def k_block(kb: ir.Value) -> None:
                k0 = b.mul(kb, kc)
                depth = self.min(kc, b.sub(k, k0))

                # where B is read by the rows of a table (`Layout.b_taps`), the block's rows in it
                rows = b.gep(geom, [b.add(I64(len(GEOMETRY)), k0)], source_etype=I64) if lay.b_taps else None

                def column_panel(jp: ir.Value) -> None:
                    b_start = self.start("b", bi, jp, kb)
                    bp = b.gep(bpack, [b_start], source_etype=self.t)

                    def row_panel(ip: ir.Value) -> None:
                        a_start = self.start("a", bi, ip, kb)
                        full = b.and_(b.icmp_signed("<", ip, m_tiles), b.icmp_signed("<", jp, n_tiles))
                        self.tile(bi, ip, jp, (b.gep(apack, [a_start], source_etype=self.t), a_start), (bp, b_start),
                                  out, depth, b.icmp_signed("==", kb, I64(0)), full, rows)

                    self.counted_loop("ip", ip0, ip1, row_panel)

                self.counted_loop("jp", jp0, jp1, column_panel)

            self.counted_loop("kb", I64(0), b.udiv(b.add(k, b.sub(kc, I64(1))), kc), k_block)

        self.counted_loop("task", start, end, task)
        b.ret_void()
        return str(self.module)

    def start(self, operand: str, bi: ir.Value, panel: ir.Value, kb: ir.Value) -> ir.Value:
        """Where block `kb` of k of the panel `panel` of product `bi` starts in the operand's ("a" or "b") panels."""
        b, g = self.b, self.geometry
        return b.add(b.add(b.mul(bi, g[f"{operand}_batch"]), b.mul(panel, g[f"{operand}_panel"])),
                     b.mul(kb, g[f"{operand}_block"]))

    def min(self, x: ir.Value, y: ir.Value) -> ir.Value:
        return self.b.select(self.b.icmp_signed("<", x, y), x, y)

    def splat(self, x: ir.Value) -> ir.Value:
        """A vector of `layout.lanes` copies of the scalar `x`."""
        vt = ir.VectorType(x.type, self.layout.lanes)
        lane0 = self.b.insert_element(ir.Constant(vt, ir.Undefined), x, I32(0))
        zeros = ir.Constant(ir.VectorType(I32, vt.count), [0] * vt.count)
        return self.b.shuffle_vector(lane0, ir.Constant(vt, ir.Undefined), zeros)

    def tile_inside(self, ip: ir.Value, row0: ir.Value, col0: ir.Value, a_start: ir.Value, b_start: ir.Value,
                    depth: ir.Value) -> tuple[ir.Value, ir.Value]:
        """In a checked function: whether the tile's elements of the product (its rows from `row0`, counting
        the batch, and columns from `col0` that are inside the matrix) are inside the product's buffer, and
        whether that and its `depth` k's of the panels from indices `a_start` of A's and `b_start` of B's are
        inside theirs; each fault is recorded. Every access of the tile lies in these three ranges, their
        first and last elements among them, so three tests per tile check them all: a test on each load of
        the unrolled micro-kernel would make it compile several times slower."""
        lay, b, g = self.layout, self.b, self.geometry
        m, n = g["m"], g["n"]
        rows = self.min(I64(lay.mr), b.sub(m, b.mul(ip, I64(lay.mr))))
        cols = self.min(I64(lay.nr), b.sub(n, col0))
        first = b.add(b.mul(row0, n), col0)
        end = b.add(b.add(b.mul(b.add(row0, b.sub(rows, I64(1))), n), col0), cols)
        product = self.inside(first, g["product_slot"], g["product_size"], True, b.sub(end, first))
        # the last k's row, or where B is read by the rows of a table (`Layout.b_taps`), the furthest any row reaches
        last = b.sub(g["b_row"], I64(1)) if lay.b_taps else b.mul(b.sub(depth, I64(1)), g["b_row"])
        b_extent = b.select(b.icmp_signed(">", depth, I64(0)), b.add(last, I64(lay.nr)), I64(0))
        panels = b.and_(self.inside(a_start, g["a_slot"], g["a_size"], False, b.mul(depth, I64(lay.mr))),
                        self.inside(b_start, g["b_slot"], g["b_size"], False, b_extent))
        return product, b.and_(product, panels)

    def fault_record(self) -> ir.Value:
        return self.fn.args[6]

    def tile(self, bi: ir.Value, ip: ir.Value, jp: ir.Value, ap: tuple[ir.Value, ir.Value],
             bp: tuple[ir.Value, ir.Value], out: ir.Value, depth: ir.Value, first: ir.Value, full: ir.Value,
             rows: ir.Value | None = None) -> None:
        """One MR x NR tile of the product over one block of k, accumulated in registers: it starts from
        zero in the first block and from the tile stored so far in the others. `ap` and `bp` are where the
        tile's panels start in the block, as an address and an index; `full`: the tile is inside the matrix;
        `rows`: where B is read by the rows of a table (`Layout.b_taps`), the block's rows in it.

        A checked function (see `tile_inside`) skips the loads and stores of a tile not inside the product,
        as if all its rows were outside the matrix, and the multiply-adds of one whose panels are not all
        inside theirs."""
        c, lay, b = self.c, self.layout, self.b
        m, n = self.geometry["m"], self.geometry["n"]
        nv = lay.nr // lay.lanes
        align = lay.lanes * c.dtype.itemsize
        accs = [[self.alloca(self.vt) for _ in range(nv)] for _ in range(lay.mr)]
        zero = ir.Constant(self.vt, [0.0] * lay.lanes)
        for row in accs:
            for acc in row:
                b.store(zero, acc)
        row0 = b.add(b.mul(bi, m), b.mul(ip, I64(lay.mr)))
        col0 = b.mul(jp, I64(lay.nr))

        def address(r: int, v: int) -> ir.Value:
            idx = b.add(b.mul(b.add(row0, I64(r)), n), b.add(col0, I64(v * lay.lanes)))
            return b.gep(out, [idx], source_etype=self.t)

        (ap, a_start), (bp, b_start) = ap, bp
        product_inside = None
        if self.fault_slot is not None:
            product_inside, inside = self.tile_inside(ip, row0, col0, a_start, b_start, depth)
            full = b.and_(full, product_inside)
            depth = b.select(inside, depth, I64(0))
        lanes = ir.Constant(ir.VectorType(I64, lay.lanes), list(range(lay.lanes)))
        mask_type = ir.VectorType(I1, lay.lanes)

        def edge(r: int, v: int) -> tuple[ir.Value, ir.Value]:
            """Whether row r is inside the matrix, and the mask of lanes of vector v inside it."""
            limit = b.sub(n, b.add(col0, I64(v * lay.lanes)))
            row = b.icmp_signed("<", b.add(b.mul(ip, I64(lay.mr)), I64(r)), m)
            return row if product_inside is None else b.and_(row, product_inside), \
                b.icmp_signed("<", lanes, self.splat(limit))

        def load_full() -> None:
            for r in range(lay.mr):
                for v in range(nv):
                    b.store(b.load(address(r, v), typ=self.vt, align=c.dtype.itemsize), accs[r][v])

        def load_edge() -> None:
            masked = ir.Function(self.module, ir.FunctionType(self.vt, [PTR, I32, mask_type, self.vt]),
                                 f"llvm.masked.load.{self.suffix}.p0")
            for r in range(lay.mr):
                for v in range(nv):
                    inside, mask = edge(r, v)
                    mask = b.and_(mask, self.splat(inside))
                    b.store(b.call(masked, [address(r, v), I32(c.dtype.itemsize), mask, zero]), accs[r][v])

        self.when("resume", first, lambda: None, lambda: self.when("resume_tile", full, load_full, load_edge))
        fma = ir.Function(self.module, ir.FunctionType(self.vt, [self.vt] * 3), f"llvm.fma.{self.suffix}")

        # B's rows: a panel's, NR apart and aligned, or B's own where read in place (`Layout.b_row`, `Layout.b_taps`)
        b_row, b_align = (self.geometry["b_row"], c.dtype.itemsize) if lay.b_row or lay.b_taps else (I64(lay.nr), align)

        def step(kk: ir.Value, in_run: tuple[ir.Value, ir.Value] | None = None) -> None:
            """The k `kk`: where A's panels hold runs of rows, `in_run` is its run and its offset in the run, if
            known, else computed from `kk`."""
            row = b.load(b.gep(rows, [kk], source_etype=I64), typ=I64) if rows is not None else b.mul(kk, b_row)
            bvec = [b.load(b.gep(bp, [b.add(row, I64(v * lay.lanes))], source_etype=self.t),
                           typ=self.vt, align=b_align) for v in range(nv)]
            if lay.a_rows and in_run is None:
                in_run = b.udiv(kk, I64(lay.a_run)), b.urem(kk, I64(lay.a_run))
            for r in range(lay.mr):
                at = b.add(b.mul(kk, I64(lay.mr)), I64(r))
                if in_run is not None:
                    run, offset = in_run
                    at = b.add(b.mul(run, I64(lay.mr * lay.a_run)), b.add(I64(r * lay.a_run), offset))
                x = b.load(b.gep(ap, [at], source_etype=self.t), typ=self.t)
                xv = self.splat(x)
                for v in range(nv):
                    acc = accs[r][v]
                    b.store(b.call(fma, [xv, bvec[v], b.load(acc, typ=self.vt)]), acc)

        # Unrolled by UNROLL_K: the loop's own counting would otherwise take issue slots from the FMAs. Where A's
        # panels hold runs of rows, a loop over whole runs holds the unrolled loop, each step's place in A's run
        # then a constant offset from the run's start (from k alone, LLVM computed each with integer ops).
        def unrolled_steps(kq: ir.Value, run: ir.Value | None = None) -> None:
            for u in range(UNROLL_K):
                offset = b.add(b.mul(kq, I64(UNROLL_K)), I64(u))
                if run is None:
                    step(offset)
                else:
                    step(b.add(b.mul(run, I64(lay.a_run)), offset), (run, offset))

        if lay.a_rows:
            runs = b.udiv(depth, I64(lay.a_run))
            self.counted_loop("k_run", I64(0), runs, lambda run: self.counted_loop(
                "k_unrolled", I64(0), I64(lay.a_run // UNROLL_K), lambda kq: unrolled_steps(kq, run)))
            self.counted_loop("k", b.mul(runs, I64(lay.a_run)), depth, step)
        else:
            self.counted_loop("k_unrolled", I64(0), b.udiv(depth, I64(UNROLL_K)), unrolled_steps)
            self.counted_loop("k", b.mul(b.udiv(depth, I64(UNROLL_K)), I64(UNROLL_K)), depth, step)

        def store_full() -> None:
            for r in range(lay.mr):
                for v in range(nv):
                    b.store(b.load(accs[r][v], typ=self.vt), address(r, v), align=c.dtype.itemsize)

        def store_edge() -> None:
            masked = ir.Function(self.module, ir.FunctionType(ir.VoidType(), [self.vt, PTR, I32, mask_type]),
                                 f"llvm.masked.store.{self.suffix}.p0")
            for r in range(lay.mr):
                def store_row(r: int = r) -> None:
                    for v in range(nv):
                        b.call(masked, [b.load(accs[r][v], typ=self.vt), address(r, v), I32(c.dtype.itemsize),
                                        edge(r, v)[1]])
                self.when(f"row{r}", edge(r, 0)[0], store_row, lambda: None)

        self.when("tile", full, store_full, store_edge)


def render_gemm_core(c: Contraction, layout: Layout, checked: bool = False) -> str:
    """LLVM IR of the GEMM core for the contraction's dtype and tile (see `_GemmRenderer`), checked if
    `checked`; rendered once per core (the first step of a model asks for it once per contraction)."""
    key = (core_name(c, layout), checked)
    if (source := _core_sources.get(key)) is None:
        source = _core_sources.setdefault(key, _GemmRenderer(c, layout, checked).render())
    return source


_core_sources: dict[tuple[str, bool], str] = {}


def render_gemm(c: Contraction, layout: Layout, checked: bool = False, generic: bool = False) -> str:
    """LLVM IR of the contraction's GEMM step, `void name(ptr buffers, ptr params, i64 first_task, i64
    end_task)`: a call of its core (`core_name`, compiled in a module of its own) with the product's and
    the panels' buffers, the contraction's geometry and, checked, where its core records a fault. A fused
    layout's step calls, for each task, the packing kernels (compiled before it) for the task's product
    and then the core for the task alone. The geometry is a constant of the module, or where `generic` (a
    contraction generic over sizes, `generic_pack_kernels`), read from the slots after the parameters, where
    each call passes its own."""
    builder = FunctionBuilder(c.name, len(c.params) if checked else None)
    module, b = builder.module, builder.b
    bufs, params, start, end = builder.fn.args
    signature = ir.FunctionType(ir.VoidType(), [PTR, PTR, I64, I64])
    core = ir.Function(module, ir.FunctionType(ir.VoidType(), [PTR, PTR, PTR, PTR, I64, I64, PTR]),
                       symbol(core_name(c, layout), checked))
    if generic:
        geometry_table = b.gep(params, [I64(len(c.params))], source_etype=I64)
    else:
        # where B is read by the rows of a table (`Layout.b_taps`), the table follows the geometry
        values = [*geometry(c, layout), *(_b_taps(c, layout.nr)[1] if layout.b_taps else ())]
        table = ir.GlobalVariable(module, ir.ArrayType(I64, len(values)), f"{c.name}_geometry")
        table.global_constant, table.linkage = True, "private"
        table.initializer = ir.Constant(ir.ArrayType(I64, len(values)), values)
        geometry_table = b.gep(table, [I64(0), I64(0)])
    b_slot = c.bv.arg[0] if layout.b_row or layout.b_taps else len(c.buffers) + 1
    out, apack, bpack = (b.load(b.gep(bufs, [I64(slot)], source_etype=PTR), typ=PTR)
                         for slot in (c.product, len(c.buffers), b_slot))
    if layout.b_row:  # B read in place, from its first element
        bpack = b.gep(bpack, [I64(_b_index(c)[None])], source_etype=llvm_type(c.dtype))
    record = builder.fault_record() if checked else ir.Constant(PTR, None)
    if layout.fused:
        packs = [ir.Function(module, signature, symbol(pack.kernel.name, checked)) for pack in pack_kernels(c, layout)]

        def task(t: ir.Value) -> None:
            after = b.add(t, I64(1))
            for pack in packs:
                b.call(pack, [bufs, params, t, after])
            b.call(core, [out, apack, bpack, geometry_table, t, after, record])

        builder.counted_loop("task", start, end, task)
    else:
        b.call(core, [out, apack, bpack, geometry_table, start, end, record])
    b.ret_void()
    return str(module)
