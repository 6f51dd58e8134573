"""The GPU contraction template: a `kernels.ir.Contraction` as one Triton kernel built around `tl.dot`.

Each program computes one BLOCK_M x BLOCK_N tile of one batch's product `C = A @ B`. It walks k in
blocks of BLOCK_K; for each block it evaluates the operand values `a` and `bv` (their prologue: casts,
scaling, transposes, any view) straight into a BLOCK_M x BLOCK_K and a BLOCK_K x BLOCK_N tile, with
`render.py`'s value renderer and the loop variables bound to the tile's rows, columns and k lanes, and
feeds the tiles to `tl.dot`, accumulating in float32 (float64 for float64). float16 and bfloat16
operands go to `tl.dot` as they are (the tensor cores' inputs), and the product is rounded to their
dtype once, where it is stored. Triton's interpreter multiplies bfloat16 tiles as their raw bits, so
there they are widened to float32 first: exact, as the tensor cores' products are. Programs are ordered in
groups of GROUP_M row tiles, which walk the column tiles together, so that the tiles of B they all
load are still in L2.

Edges. Rows and columns past the end of the matrix wrap around (`% M`): their loads stay in bounds
without masks, and their results are never stored. Lanes past the end of k must add nothing: their
loads are masked to 0, and an operand whose prologue could turn that 0 into something else (`x + 1`)
is selected to 0 there.

Operands with a reduction (`softmax(x) @ v`) are not evaluated in the tile loop, which would
recompute the reduction for every k block of every program: a pack kernel (an ordinary `Kernel`, run
before) evaluates the operand into a row-major scratch buffer, which the tile loop loads.

The epilogue (bias, activation, any consumer of C) is fused into the tile's store when it is
elementwise over C: no reduction, and every point of its loops reads its own element of C and no
other, in C's order or a transpose of it (`(x @ y).T`, a convolution's NCHW output). Its loop
variables are then the digits of the tile's positions in C, its loads of C are the accumulator, and
it stores where it would on its own. Any other epilogue runs as its own kernel, reading C from the
scratch buffer the tl.dot kernel writes.

Precision. float32 operands go to `tl.dot` with `input_precision="ieee"` (exact float32, as torch's
default for matmul) unless TF32 is allowed (`set_allow_tf32(True)`, or LT_ALLOW_TF32=1): then "tf32",
the tensor cores with operands rounded to 10 mantissa bits, several times faster.

Nothing here imports triton: `runtime.py` compiles what `render_gemm` writes, and times the
`candidate_configs` on the first call for a shape.
"""
from __future__ import annotations

import os
from dataclasses import dataclass

from ..dtype import bfloat16, compute_dtype, float32, int64
from ..expr import Expr, Var, flat_index
from ..ir import BufferParam, Contraction, Kernel, Store, Value, VOp, cast, load, read_slot, toposort
from .render import TL_TYPES, Shape, TritonSource, ValueRenderer, identifier, needs_int64, pow2, product, stand_in

GROUP_M = 8

_allow_tf32: bool | None = None  # None: LT_ALLOW_TF32 decides


def set_allow_tf32(allow: bool | None) -> None:
    """Let float32 matmuls on a GPU use TF32 tensor cores (`torch.backends.cuda.matmul.allow_tf32`).

    TF32 rounds the operands to 10 mantissa bits and accumulates in float32: several times faster, with
    a relative error near 1e-3 instead of float32's 1e-7. Off by default. None goes back to the
    environment: LT_ALLOW_TF32=1 allows it. It applies to kernels compiled from then on: the switch is
    part of the compile cache key, so switching back and forth compiles each variant once.
    """
    global _allow_tf32
    _allow_tf32 = allow


def tf32_allowed() -> bool:
    """Whether float32 matmuls on a GPU may use TF32 (see `set_allow_tf32`)."""
    if _allow_tf32 is not None:
        return _allow_tf32
    return int(os.environ.get("LT_ALLOW_TF32") or 0) != 0


def input_precision(c: Contraction) -> str:
    """`tl.dot`'s input_precision for `c`: "tf32" for float32 where TF32 is allowed, else "ieee"."""
    return "tf32" if c.dtype == float32 and tf32_allowed() else "ieee"


@dataclass(frozen=True)
class GemmConfig:
    """The tiling of one tl.dot kernel: block sizes and Triton's launch options."""

    block_m: int
    block_n: int
    block_k: int
    num_warps: int
    num_stages: int

    def __str__(self) -> str:
        return f"{self.block_m}x{self.block_n}x{self.block_k}_w{self.num_warps}_s{self.num_stages}"


# (BLOCK_M, BLOCK_N, num_warps, num_stages), after the configurations of Triton's matmul tutorial; BLOCK_K
# covers 128 bytes of k, so that every stage of each fits in the shared memory of an A100 or H100 (a GPU with
# less skips the tiles that do not fit). The 128x256 tiles are the tutorial's best on an H100 for float16.
_TILES = ((128, 256, 8, 3), (256, 128, 8, 3), (128, 128, 8, 3), (128, 64, 4, 4), (64, 128, 4, 4), (64, 64, 4, 4),
          (32, 64, 4, 4))

# The interpreter runs every program one after the other in NumPy: one small tiling, never timed.
INTERPRETER_CONFIG = GemmConfig(32, 32, 16, 4, 1)


def candidate_configs(c: Contraction, interpreted: bool) -> list[GemmConfig]:
    """The configurations the runtime times for `c`: `_TILES`, each block cut to what the matrix needs
    (but at least 16, the smallest tile `tl.dot` takes). Under the interpreter only `INTERPRETER_CONFIG`:
    the interpreter runs the programs one after the other in NumPy, so timing would take long and tell
    nothing about a GPU."""
    if interpreted:
        return [INTERPRETER_CONFIG]
    _, m, n, k = c.sizes

    def fit(block: int, size: int) -> int:
        return min(block, max(16, pow2(size)))

    configs: list[GemmConfig] = []
    for bm, bn, warps, stages in _TILES:
        config = GemmConfig(fit(bm, m), fit(bn, n), fit(128 // c.dtype.itemsize, k), warps, stages)
        if config not in configs:
            configs.append(config)
    return configs


@dataclass(frozen=True)
class GemmPlan:
    """How a contraction runs: pack kernels, then the tl.dot kernel, then the epilogue unless fused."""

    contraction: Contraction
    buffers: tuple[BufferParam, ...]  # the contraction's, then a scratch buffer per packed operand
    packs: tuple[Kernel, ...]         # evaluate the operands that contain a reduction into their scratch
    a: Value                          # what the tile loop reads for each operand: the operand itself,
    bv: Value                         # or a load of its packed copy
    # for an epilogue fused into the tl.dot kernel: each of its loop variables that C's index reads, with
    # its stride there (C's index is a transpose of the epilogue's loops); None when the epilogue runs apart
    epilogue_strides: tuple[tuple[Var, int], ...] | None
    # a generic product's (`generic_plan`): each of those variables with the contraction's variables of the axes of
    # C it runs along, innermost first (n, m and the batch, or some of them in a row)
    epilogue_axes: tuple[tuple[Var, tuple[Var, ...]], ...] | None = None

    @property
    def fuse_epilogue(self) -> bool:
        return self.epilogue_strides is not None

    def runs_along(self) -> dict[Var, tuple[Var, ...]] | None:
        """Each of a fused epilogue's loops (those of `epilogue_strides`) with the contraction's variables of the axes
        of C it runs along, innermost first (n, m and the batch, or some of them in a row: a single product's rows or
        columns, a batch's products merged into one loop); None where one runs along part of an axis (the rows of C
        split in two)."""
        batch, m, n, _ = self.contraction.sizes
        vb, vm, vn, _ = self.contraction.vars
        order, k, runs = ((vn, n), (vm, m), (vb, batch)), 0, {}
        for var, _ in self.epilogue_strides or ():  # the innermost first
            along, size = [], 1
            while k < len(order) and size < var.size:
                along.append(order[k][0])
                size *= order[k][1]
                k += 1
            if size != var.size:
                return None
            runs[var] = tuple(along)
        return runs


def plan(c: Contraction) -> GemmPlan:
    """Decide which operands to pack and whether to fuse the epilogue (see the module docstring)."""
    batch, m, n, k = c.sizes
    vb, vm, vn, vk = c.vars
    # Each operand's loops are the loop nest the scheduler checked it in: no reduction there is recomputed.
    operands = {"a": (c.a, (vb, vm, vk)), "b": (c.bv, (vb, vk, vn))}
    packed = [name for name, (value, _) in operands.items() if any(v.op is VOp.REDUCE for v in toposort([value]))]
    buffers = c.buffers + tuple(BufferParam(c.dtype, batch * k * (m if name == "a" else n), scratch=True)
                                for name in packed)
    reads, packs = {}, []
    for name, (value, loops) in operands.items():
        if name in packed:
            slot = len(c.buffers) + packed.index(name)
            index = flat_index(tuple(Expr.of(v) for v in loops), tuple(v.size for v in loops))
            packs.append(Kernel(f"{c.name}_pack_{name}", buffers, c.params, loops, (Store(slot, index, value),)))
            value = load(slot, c.dtype, index, ())
        reads[name] = value
    return GemmPlan(c, buffers, tuple(packs), reads["a"], reads["b"], _epilogue_strides(c))


def generic_plan(p: GemmPlan, c: Contraction, generic: str) -> GemmPlan | None:
    """`p`, the plan of a product at its sizes, as the plan of `c`, the same product generic over those of its m, n
    and k that `generic` names (`runtime._generic_contraction`: their variables, and its epilogue's that run along
    them, `UNBOUNDED`). Where m or n is among them, each of a fused epilogue's loops runs along some of C's axes in a
    row (`epilogue_axes`, `GemmPlan.runs_along`), whose positions at every size its digit of C's position is (where
    `_epilogue_strides`'s strides are this size's). None where an operand is packed (into scratch of this size), or,
    m or n generic, one of a fused epilogue's loops runs along part of an axis."""
    if p.packs:
        return None
    runs = p.runs_along() if "m" in generic or "n" in generic else {}
    if runs is None:
        return None
    axes = {v.name: v for v in c.vars}
    loops = {v.name: v for v in c.epilogue.loops} if c.epilogue is not None else {}
    along = tuple((loops[var.name], tuple(axes[v.name] for v in vs)) for var, vs in runs.items())
    strides = tuple((loops[var.name], stride) for var, stride in p.epilogue_strides) if p.fuse_epilogue else None
    return GemmPlan(c, c.buffers, (), c.a, c.bv, strides, along or None)


def _epilogue_strides(c: Contraction) -> tuple[tuple[Var, int], ...] | None:
    """The strides in C of the epilogue's loop variables, if the epilogue is elementwise over C: no
    reduction, and every point of its loops reads its own element of C and no other. Then C's index
    is a transpose of the loops' row-major order (or that order itself), and the strides, smallest
    first, are 1 and the products of the sizes before."""
    e = c.epilogue
    if e is None or len(e.stores) != 1 or any(v.op is VOp.REDUCE for v in e.values()):
        return None
    reads = {(v.arg[1], v.arg[2]) for v in e.values() if v.op is VOp.LOAD and v.arg[0] == c.product}
    if len(reads) != 1:
        return None
    ((index, bounds),) = reads
    if bounds or index.const or not all(isinstance(atom, Var) for atom, _ in index.terms):
        return None
    strides = tuple(sorted(index.terms, key=lambda term: term[1]))
    extent = 1
    for var, stride in strides:
        if stride != extent:
            return None
        extent *= var.size
    batch, m, n, _ = c.sizes
    return strides if extent == e.numel == batch * m * n else None


def _zero_past_k(value: Value, vk: Var) -> bool:
    """Whether `value` is 0 wherever k is past the end: a load along k (masked there), or a cast of one."""
    while value.op is VOp.CAST:
        value = value.srcs[0]
    return value.op is VOp.LOAD and vk in {var for e in value.exprs() for var in e.vars()}


class _GemmRenderer(ValueRenderer):
    """Renders a planned contraction with one configuration; see the module docstring."""

    def __init__(self, plan: GemmPlan, config: GemmConfig, precision: str, interpreted: bool, rows: int | None,
                 cols: int | None, depth: int | None):
        super().__init__(interpreted)
        self.plan, self.config, self.precision = plan, config, precision
        # the parameters a generic contraction is passed its m, its n and its k in, if any (`render_gemm`)
        self.rows, self.cols, self.depth = rows, cols, depth
        self.widen = interpreted and plan.contraction.dtype == bfloat16
        c = self.c = plan.contraction
        _, m, n, k = c.sizes
        vb, vm, vn, vk = c.vars
        # the sizes passed, by name: what C's strides and the operands' `Stride`s read (`symbolic.symbolized`: a
        # batch's product whose m, n or k changed), where they are not the contraction's and its epilogue's own
        self.passed = {v.name: f"p{p}" for v, p in zip((vm, vn, vk), (rows, cols, depth)) if p is not None}
        loops = (*c.vars, *(c.epilogue.loops if plan.fuse_epilogue else ()))
        self.loop_sizes = {v.name: v.size for v in loops} | self.passed
        # a fused epilogue's loops along C's axes, of the sizes of those (`generic_plan`)
        self.axes = dict(plan.epilogue_axes or ())
        for var, along in self.axes.items():
            self.loop_sizes[var.name] = product(self.loop_sizes[v.name] for v in along)
        self.product = self.position((vn, vm, vb))  # where the tile's elements of C go
        self.epilogue = c.epilogue if plan.fuse_epilogue else None
        values = toposort([plan.a, plan.bv, *([self.epilogue.stores[0].value] if self.epilogue else [])])
        # the buffers the kernel reads, by loads and gathers (a fused epilogue's loads of C read the accumulator)
        self.inputs = {slot for v in values if (slot := read_slot(v)) is not None
                       and not (self.epilogue and v.op is VOp.LOAD and slot == c.product)}
        padded = [-(-size // block) * block for size, block in ((m, config.block_m), (n, config.block_n),
                                                               (k, config.block_k))]
        self.wide = needs_int64([self.product, *(e for v in values for e in v.exprs())],
                                [b.size for b in plan.buffers] + padded)
        # The current tile's loop variables: the name of each one's index tensor, its shape, its lane mask.
        self.bound: dict[Var, tuple[str, Shape, str | None]] = {}

    def position(self, along: tuple[Var, ...]) -> Expr:
        """The position along the axes of C of the variables `along`, innermost first: their digits of C's
        position, the sizes of those passed read where they are (`Stride`)."""
        position = Expr.of(0)
        for v in reversed(along):
            position = (position.times((v.name,)) if v.name in self.passed else position * v.size) + v
        return position

    def var_name(self, var: Var) -> str:
        return self.bound[var][0]

    def var_shape(self, var: Var) -> Shape:
        return self.bound[var][1]

    def lane_masks(self, vars: set[Var]) -> list[str]:
        return [mask for var, (_, _, mask) in self.bound.items() if var in vars and mask]

    def bind(self, **names: tuple[str, Shape, str | None]) -> None:
        """Start a tile: bind the contraction's variables by their role (b, m, n, k), forget the values
        computed for another tile (the same value has another shape there)."""
        vb, vm, vn, vk = self.c.vars
        self.bound = {var: names[role] for var, role in zip((vb, vm, vn, vk), "bmnk") if role in names}
        self.names, self.shapes = {}, {}

    def render(self) -> TritonSource:
        c, cfg = self.c, self.config
        batch, m, n, k = c.sizes
        bm, bn, bk = cfg.block_m, cfg.block_n, cfg.block_k
        tiles_m, tiles_n = -(-m // bm), -(-n // bn)
        self.emit("pid = tl.program_id(0).to(tl.int64)" if self.wide else "pid = tl.program_id(0)")
        ragged = m % bm != 0
        if self.rows is not None:  # m is passed: its tiles counted, its rows masked, at run time
            m, ragged = f"p{self.rows}", True
            self.emit(f"tiles_m = ({m} + {bm - 1}) // {bm}")
            tiles_m = "tiles_m"
        ragged_n = n % bn != 0
        if self.cols is not None:  # n is passed: so are its tiles and its columns' masks
            n, ragged_n = f"p{self.cols}", True
            self.emit(f"tiles_n = ({n} + {bn - 1}) // {bn}")
            tiles_n = "tiles_n"
        tile = "pid"
        if batch > 1:
            self.emit(f"bi = pid // ({tiles_m} * {tiles_n})")
            self.emit(f"tile = pid % ({tiles_m} * {tiles_n})")
            tile = "tile"
        # GROUP_M row tiles walk the column tiles together (the last group may have fewer rows).
        width = GROUP_M * tiles_n if isinstance(tiles_n, int) else f"({tiles_n} * {GROUP_M})"  # a number where known
        self.emit(f"group = {tile} // {width}")
        self.emit(f"rows = tl.minimum({tiles_m} - group * {GROUP_M}, {GROUP_M})")
        self.emit(f"pm = group * {GROUP_M} + {tile} % rows")
        self.emit(f"pn = {tile} % {width} // rows")
        self.emit(f"om = pm * {bm} + tl.arange(0, {bm})")
        self.emit(f"on = pn * {bn} + tl.arange(0, {bn})")
        # Rows and columns past the end wrap around: their loads stay in bounds, and they are not stored.
        self.emit(f"im = (om % {m})[:, None]" if ragged else "im = om[:, None]")
        self.emit(f"jn = (on % {n})[None, :]" if ragged_n else "jn = on[None, :]")
        acc_type = TL_TYPES[compute_dtype(c.dtype)]  # float32 for float32 and 16-bit operands, float64 for float64
        self.emit(f"acc = tl.zeros([{bm}, {bn}], {acc_type})")
        if self.depth is not None:
            k = f"p{self.depth}"
        self.emit(f"for k0 in range(0, {k}, {bk}):")
        self.indent += 1
        lanes = f"k0 + tl.arange(0, {bk})"
        self.emit(f"kk = ({lanes}).to(tl.int64)" if self.wide else f"kk = {lanes}")
        self.emit("ka = kk[None, :]")
        self.emit("kb = kk[:, None]")
        masked = self.depth is not None or k % bk != 0  # a passed k's last block masked
        if masked:
            self.emit(f"kamask = ka < {k}")
            self.emit(f"kbmask = kb < {k}")
        batch_index = ("bi", (), None)
        self.bind(b=batch_index, m=("im", (bm, 1), None), k=("ka", (1, bk), "kamask" if masked else None))
        self.emit(f"at = {self.operand(self.plan.a, (bm, bk))}")
        self.bind(b=batch_index, n=("jn", (1, bn), None), k=("kb", (bk, 1), "kbmask" if masked else None))
        self.emit(f"bt = {self.operand(self.plan.bv, (bk, bn))}")
        if self.widen:
            for name, tile in (("at", (bm, bk)), ("bt", (bk, bn))):
                bits = stand_in(name, bfloat16)
                self.emit(f"{name} = {self.computed(cast(bits, float32), {bits: (name, tile)})}")
        self.emit(f'acc = tl.dot(at, bt, acc, input_precision="{self.precision}", out_dtype={acc_type})')
        self.indent -= 1
        self.bind(b=batch_index, m=("im", (bm, 1), None), n=("jn", (1, bn), None))
        store_mask = [f"(om[:, None] < {m})"] if ragged else []
        store_mask += [f"(on[None, :] < {n})"] if ragged_n else []
        if self.epilogue is not None:
            written = self.fused_epilogue(" & ".join(store_mask))
        else:
            written = c.product
            mask = f", mask={' & '.join(store_mask)}" if store_mask else ""
            out_dtype = self.plan.buffers[written].dtype
            product = stand_in("acc", compute_dtype(c.dtype))  # a 16-bit product rounds as the IR's casts
            out = self.computed(cast(product, out_dtype), {product: ("acc", (bm, bn))})
            # broadcast where m or n is 1, whose variable the product's index then leaves out
            self.emit(f"tl.store({self.pointer(written, self.product, (bm, bn))}, {out}{mask})")
        slots = tuple(sorted({written, *self.inputs}))
        name = f"{identifier(c.name)}_{cfg}"
        description = (f"Generated by lazytensor from this contraction IR, as a tl.dot kernel with "
                       f"{bm}x{bn}x{bk} tiles{', its epilogue fused' if self.epilogue else ''}:\n{c}")
        passed = [p for p in (self.rows, self.cols, self.depth) if p is not None]
        if passed:  # the grid follows m, n (`TritonSource.programs`)
            source = self.module(description, name, [f"b{i}" for i in slots], (*c.params, *(int64 for _ in passed)))
            grid = batch * (tiles_m if self.rows is None else 1) * (tiles_n if self.cols is None else 1)
            return TritonSource(name, source, grid, cfg.num_warps, cfg.num_stages, slots,
                                rows=(self.rows,) if self.rows is not None else (), xblock=bm,
                                cols=(self.cols,) if self.cols is not None else (), yblock=bn)
        source = self.module(description, name, [f"b{i}" for i in slots], c.params)
        return TritonSource(name, source, batch * tiles_m * tiles_n, cfg.num_warps, cfg.num_stages, slots)

    def operand(self, value: Value, tile: Shape) -> str:
        """Emit `value` over the bound tile; the code for it as a whole tile, 0 past the end of k."""
        for v in toposort([value]):
            self.define(v, self.value(v))
        code = self.names[id(value)]
        vk = self.c.vars[3]
        k_mask = self.bound[vk][2]
        if k_mask and not _zero_past_k(value, vk):
            code = f"tl.where({k_mask}, {code}, 0.0)"  # the mask spans the tile's k axis, not more
        return code if self.shapes[id(value)] == tile else f"tl.broadcast_to({code}, {list(tile)})"

    def fused_epilogue(self, mask: str) -> int:
        """Emit the epilogue over the tile, reading C from the accumulator; the buffer slot it writes."""
        e, store = self.epilogue, self.epilogue.stores[0]
        bm, bn = self.config.block_m, self.config.block_n
        reads_c = [v for v in e.values() if v.op is VOp.LOAD and v.arg[0] == self.c.product]
        used = store.index.vars() | {var for v in e.values() if v not in reads_c for x in v.exprs() for var in x.vars()}
        # The epilogue's loop variables at the tile's elements of C: each one's digit of C's position, a generic
        # product's the tile's row or column it runs along.
        for var, stride in self.plan.epilogue_strides:
            if var in self.axes and len(self.axes[var]) == 1:
                self.bound[var] = self.bound[self.axes[var][0]]
            elif var in self.axes:
                name, index = f"o{e.loops.index(var)}", self.position(self.axes[var])
                self.emit(f"{name} = {self.expr(index)}")
                self.bound[var] = (name, self.expr_shape(index), None)
            elif var in used:
                name, index = f"o{e.loops.index(var)}", (self.product // stride) % var.size
                self.emit(f"{name} = {self.expr(index)}")
                self.bound[var] = (name, self.expr_shape(index), None)
        for v in reads_c:
            self.names[id(v)], self.shapes[id(v)] = "acc", (bm, bn)
        for v in e.values():
            if id(v) not in self.names:
                self.define(v, self.value(v))
        self.store(self.plan.buffers[store.buf].dtype, store, mask, (bm, bn))
        return store.buf


def render_gemm(plan: GemmPlan, config: GemmConfig, precision: str = "ieee", interpreted: bool = False,
                generic: str = "") -> TritonSource:
    """The Triton module of the tl.dot kernel of `plan` tiled by `config`, with `tl.dot`'s `precision`, for
    a GPU or (`interpreted`) Triton's interpreter.

    Its function takes the buffers of `plan.buffers` listed in the source's `slots`, then the
    contraction's scalar parameters; the grid is one program per tile of C. Where `generic` names some of "m",
    "n" and "k" (a product generic over them, `kernels/symbolic.py`: their variables `UNBOUNDED`; `generic_plan`),
    they are passed after the parameters (int64) in that order, and their tiles, masks, the loop over k, C's
    strides, the operands' `Stride`s over them and the grid follow them."""
    passed = {axis: len(plan.contraction.params) + k for k, axis in enumerate(a for a in "mnk" if a in generic)}
    return _GemmRenderer(plan, config, precision, interpreted, passed.get("m"), passed.get("n"), passed.get("k")) \
        .render()
