"""Render a `kernels.ir.Kernel` to LLVM IR with llvmlite.

The generated function has one signature for every kernel:

    void name(ptr buffers, ptr params, i64 start, i64 end)

`buffers` is an array of data pointers (one per `Kernel.buffers` slot),
`params` an array of 8-byte scalar slots (int64 or double, cast to the
parameter's dtype on entry), and `[start, end)` the range of the outermost
output loop this call covers, so a caller may split the work across threads.

Loops count through stack slots that LLVM's mem2reg promotes to registers;
addresses are formed with GEP only (no inttoptr, which LLVM may miscompile
under unrolling). In a checked function (`LT_CHECK_BOUNDS`, see
`kernels/bounds.py`) every address a kernel loads or stores through is tested
against its buffer by `FunctionBuilder.guard`, which sends a faulting access to
a sink of the module's own, unless the index provably stays inside the buffer
(`KernelRenderer.gep`); an unchecked function has no trace of either.

A kernel reaches the renderer legalized (`kernels/legalize.py`): of the ops with
library semantics, it renders those in `NATIVE` and sees the others only as
core ops. The 16-bit floats are i16 bit patterns, in memory and in registers; the
kernel IR only loads, stores and bitcasts them, converting by legalization's
integer and float32 bit manipulation rather than `fpext`/`fptrunc` on `half`:
LLVM lowers those to library calls (`__extendhfsf2`, ...) on hosts without F16C,
and MCJIT cannot resolve them reliably. That code is branch-free, so loops over
them still vectorize. On a host with F16C, float16's conversions are native: its
instructions, on the bits read as `half`.
"""
from __future__ import annotations

from collections.abc import Callable
from itertools import pairwise

from llvmlite import ir

from ..bounds import fault_code
from ..dtype import DType, bfloat16, bool_, float16, float32, float64, half_bits, int32, int64, uint8
from ..expr import Bound, Bounds, Div, Expr, Mod, Stride, Var
from ..ir import (
    COMPARISONS,
    Alu,
    Kernel,
    ReduceOp,
    SharedRow,
    Store,
    Value,
    VOp,
    bitcast,
    bounds_of,
    loop_scopes,
    shared_rows,
    toposort,
)
from ..legalize import Key, keys
from . import mathlib

I1, I8, I16, I32, I64 = ir.IntType(1), ir.IntType(8), ir.IntType(16), ir.IntType(32), ir.IntType(64)
PTR = ir.PointerType()
F32, F64 = ir.FloatType(), ir.DoubleType()
HALF_FLOATS = (float16, bfloat16)


def _host_converts_halves() -> bool:
    """Whether the host has F16C, whose instructions convert vectors of float16 to and from float32."""
    from llvmlite import binding as llvm
    return "+f16c" in llvm.get_host_cpu_features().flatten()


# Library ops LLVM has itself, faster than their legalization: rounding instructions, `maximum` and
# `minimum` (whose reductions it vectorizes), the saturating conversion to int64, the math library
# (mathlib's vectorized functions, `llvm.pow`), and on a host with F16C the float16 conversions (an
# instruction for 8 values: a float32 array to float16 ran 1.8 times torch's time by bits).
NATIVE: frozenset[Key] = frozenset({
    *keys((Alu.ROUND, Alu.TRUNC, Alu.MAX, Alu.MIN, Alu.EXPM1, Alu.LOG1P, Alu.TANH, Alu.TAN, Alu.ATAN2, Alu.POW),
          (float32, float64)),
    (float32, int64), (float64, int64),
    *([(float32, float16), (float16, float32)] if _host_converts_halves() else [])})

# Float ops LLVM lowers well itself; the transcendental functions are mathlib's.
INTRINSICS = {Alu.SQRT: "llvm.sqrt", Alu.FLOOR: "llvm.floor", Alu.CEIL: "llvm.ceil", Alu.ROUND: "llvm.roundeven",
              Alu.TRUNC: "llvm.trunc", Alu.ABS: "llvm.fabs", Alu.POW: "llvm.pow", Alu.MAX: "llvm.maximum",
              Alu.MIN: "llvm.minimum"}
# Binary ops as IRBuilder methods: (on floats, on signed integers, on unsigned integers and bools).
BINARY = {
    Alu.ADD: ("fadd", "add", "add"), Alu.SUB: ("fsub", "sub", "sub"), Alu.MUL: ("fmul", "mul", "mul"),
    Alu.DIV: ("fdiv", None, None), Alu.TRUNCDIV: (None, "sdiv", "udiv"), Alu.REM: ("frem", "srem", "urem"),
    Alu.SHL: (None, "shl", "shl"), Alu.SHR: (None, "ashr", "lshr"),
    Alu.AND: (None, "and_", "and_"), Alu.OR: (None, "or_", "or_"), Alu.XOR: (None, "xor", "xor"),
}
PREDICATES = {Alu.CMPLT: "<", Alu.CMPLE: "<=", Alu.CMPEQ: "==", Alu.CMPNE: "!="}


REASSOCIATIVE = {ReduceOp.SUM: ir.IRBuilder.fadd, ReduceOp.PROD: ir.IRBuilder.fmul}
# the arrays of a column reduction's block of columns (accumulators, staged values): they stay in the L1
# cache, and each row's strip of the block is long enough to stream (4 KiB strips ran at half NumPy's speed)
COLUMN_BLOCK_BYTES = 16384
FIRST_HIT_BLOCK = 128  # elements a first-index search tests at once, vectorized, before it may stop
TILE_BYTES = 64  # a side of a transposing kernel's tile: a cache line of its widest access
STAGED_ROW = 16  # elements at least in a row of a tile that computes from arrays (`KernelRenderer.emit_tiles`)
FLOAT32_LANES = 8  # float32s in a 256-bit vector (see `KernelRenderer.vectorize_float32_wide`)
SINK_BYTES = 64  # where a checked function's faulting accesses go: its widest access, an AVX-512 vector
MAX_PIECES = 16  # copies of a loop nest's body at most that cutting loops into pieces makes (`KernelRenderer.pieces`)
# Rows a row reduction folds side by side (`KernelRenderer.emit_row_blocks`), and the least length of a row for it:
# a core streams four rows from memory at once 1.4-1.6x faster than one (Zen 3, a 64 MiB matrix times a vector).
ROW_BLOCK = 4
ROW_BLOCK_MIN_TERMS = 256
SCATTER_BLOCK = 256  # points whose scatter stores a loop computes before it stores them (`emit_scatter_blocks`)


def symbol(name: str, checked: bool) -> str:
    """The function name of kernel `name`: a checked kernel's differs, as both may live in one JIT."""
    return f"{name}_checked" if checked else name


def llvm_type(dtype: DType) -> ir.Type:
    if dtype == bool_:
        return I1
    if dtype in HALF_FLOATS:
        return I16
    if dtype.is_float:
        return F32 if dtype == float32 else F64
    return ir.IntType(dtype.bits)


def unit_stride(value: Value, var: Var) -> bool:
    """Whether some load of `value` steps through memory one element at a time along `var`."""
    return any(v.op is VOp.LOAD and (var, 1) in v.arg[1].terms for v in toposort([value]))


def memory_type(dtype: DType) -> ir.Type:
    """Bools live in memory as bytes and in registers as i1."""
    return I8 if dtype == bool_ else llvm_type(dtype)


def column_reductions(kernel: Kernel) -> list[Value] | None:
    """The reductions to render with their own loops outside the innermost output loop, if any.

    A reduction over outer axes of an operand that runs along the innermost output axis (the sum over
    the batch of a row-major gradient) would walk down columns, one cache line per element. Rendered
    as a block of accumulators across the output axis, updated row after row, it streams the rows:
    each output element still folds its terms in order. That takes every reduction of the innermost
    scope reading its operand so (a variance's mean and its sum of squares, an argmax's max and its
    first index of it: one after the other, each a pass over the rows), and no reduction inside one.
    A load that runs along the reduction but is the same for every output element (the vector of a
    vector-matrix product, `v @ w`) is one element per row there, and does not count against it.
    """
    values, scopes = loop_scopes(kernel)
    loops = kernel.loops
    if any(len(scopes[id(v)]) > len(loops) for v in values if v.op is VOp.REDUCE):
        return None
    reductions = [v for v in values if v.op is VOp.REDUCE and scopes[id(v)] == loops]
    for red in reductions:
        src = red.srcs[0]
        if not unit_stride(src, loops[-1]) or any(
                v.op is VOp.LOAD and loops[-1] in v.arg[1].vars() and any((r, 1) in v.arg[1].terms for r in red.arg[1])
                for v in toposort([src])):
            return None
    return reductions or None


class FunctionBuilder:
    """A module holding one kernel function (of the common signature unless `args` says otherwise), and the
    builder filling it in: stack slots in the entry block, counted loops, the addresses of loads and stores.

    A checked function (`fault_slot` given: the number of its scalar parameters, after which its fault
    record starts) tests every address it makes (see `guard`)."""

    def __init__(self, name: str, fault_slot: int | None = None, args: tuple[ir.Type, ...] = (PTR, PTR, I64, I64)):
        self.module = ir.Module(name=name)
        self.fn = ir.Function(self.module, ir.FunctionType(ir.VoidType(), list(args)),
                              name=symbol(name, fault_slot is not None))
        self.entry = self.fn.append_basic_block("entry")
        self.b = ir.IRBuilder(self.entry)
        self.fault_slot = fault_slot
        self.loops_made = 0
        self.nest_latches: list[ir.Branch] = []  # the back edges of loops with loops inside
        self.inner_latches: list[ir.Branch] = []  # and of those without: the loops LLVM vectorizes

    def alloca(self, typ: ir.Type, count: int | None = None) -> ir.Value:
        """A stack slot for one `typ`, or for an array of `count` of them."""
        with self.b.goto_block(self.entry):
            self.b.position_at_start(self.entry)
            return self.b.alloca(typ, size=None if count is None else I64(count))

    def when(self, name: str, cond: ir.Value, then: Callable[[], None], otherwise: Callable[[], None]) -> None:
        """`if cond: then() else: otherwise()`."""
        b = self.b
        yes, no, done = (self.fn.append_basic_block(f"{name}_{s}") for s in ("then", "else", "done"))
        b.cbranch(cond, yes, no)
        for block, body in ((yes, then), (no, otherwise)):
            b.position_at_end(block)
            body()
            b.branch(done)
        b.position_at_end(done)

    def counted_loop(self, name: str, lo: ir.Value, hi: ir.Value, body: Callable[[ir.Value], None]) -> ir.Branch:
        """`for i in [lo, hi): body(i)`, the counter in a stack slot that mem2reg promotes; returns the
        loop's back edge (where loop metadata goes)."""
        b = self.b
        counter = self.alloca(I64)
        b.store(lo, counter)
        header = self.fn.append_basic_block(f"{name}_head")
        inner = self.fn.append_basic_block(f"{name}_body")
        done = self.fn.append_basic_block(f"{name}_done")
        b.branch(header)
        b.position_at_end(header)
        i = b.load(counter, typ=I64)
        b.cbranch(b.icmp_signed("<", i, hi), inner, done)
        b.position_at_end(inner)
        self.loops_made += 1
        made = self.loops_made
        body(i)
        b.store(b.add(i, I64(1)), counter)
        latch = b.branch(header)
        (self.nest_latches if self.loops_made > made else self.inner_latches).append(latch)
        b.position_at_end(done)
        return latch

    def keep_nests_rolled(self) -> None:
        """Tell LLVM's unroller to leave the loops that hold loops as they are. It copies every loop of a
        constant trip count whole, vectorized bodies and remainders included: a kernel's small outer loops
        (the 8 rows of a batch, the 3 taps of a filter) multiplied its code, and the time to compile it,
        several times over for no speed. Innermost loops it still unrolls as it sees fit."""
        loop_id = self.loop_id(["llvm.loop.unroll.disable"])
        for latch in self.nest_latches:
            if "llvm.loop" not in latch.metadata:  # a loop given hints of its own keeps them
                latch.set_metadata("llvm.loop", loop_id)

    def loop_id(self, *hints: list[str | ir.Value]) -> ir.MDValue:
        """Loop metadata (for a back edge's `llvm.loop`) holding `hints`, each a name and its operands."""
        nodes = [self.module.add_metadata([ir.MetaDataString(self.module, h) if isinstance(h, str) else h
                                           for h in hint]) for hint in hints]
        loop_id = self.module.add_metadata(nodes)
        loop_id.operands = (loop_id, *nodes)  # a loop ID refers to itself
        return loop_id

    # ---- values: the IR's core ops (and `NATIVE`'s library ops) on LLVM values ----

    def constant(self, value: bool | float, dtype: DType) -> ir.Constant:
        if dtype in HALF_FLOATS:
            return I16(half_bits(float(value), dtype))
        if dtype.is_float:
            return ir.Constant(llvm_type(dtype), float(value))
        return ir.Constant(llvm_type(dtype), int(value))

    def intrinsic(self, name: str, dtype: DType, args: list[ir.Value]) -> ir.Value:
        t = llvm_type(dtype)
        fn = self.module.declare_intrinsic(name, [t], ir.FunctionType(t, [t] * len(args)))
        return self.b.call(fn, args)

    def alu(self, op: Alu, dt: DType, s: list[ir.Value]) -> ir.Value:
        """`op` on operands of dtype `dt`: a core op, or a library op of `NATIVE` (see `kernels/legalize.py`)."""
        b = self.b
        fl = dt.is_float
        if mathlib.supports(op, dt):
            # Inline, vectorizable implementations: a libm call would stop the loop vectorizer.
            return mathlib.emit(op, b, s, dt)
        if op in INTRINSICS and fl:
            return self.intrinsic(INTRINSICS[op], dt, s)
        if op in BINARY:
            method = BINARY[op][0 if fl else 1 if dt.is_signed else 2]
            if method is not None:
                return getattr(b, method)(*s)
        elif op is Alu.NEG:
            return b.fneg(s[0]) if fl else b.neg(s[0])
        elif op is Alu.NOT:
            return b.not_(s[0])
        elif op is Alu.ABS and dt.is_signed and not fl:
            return b.select(b.icmp_signed("<", s[0], self.constant(0, dt)), b.neg(s[0]), s[0])
        elif op is Alu.RECIP and fl:
            return b.fdiv(self.constant(1, dt), s[0])
        elif op in (Alu.MAX, Alu.MIN) and not fl:
            sym = ">" if op is Alu.MAX else "<"
            return b.select(b.icmp_signed(sym, *s) if dt.is_signed else b.icmp_unsigned(sym, *s), *s)
        elif op in COMPARISONS:
            sym = PREDICATES[op]
            if fl:  # CMPNE is true for NaN, the others false
                return b.fcmp_unordered(sym, *s) if op is Alu.CMPNE else b.fcmp_ordered(sym, *s)
            return b.icmp_signed(sym, *s) if dt.is_signed else b.icmp_unsigned(sym, *s)
        elif op is Alu.WHERE:
            return b.select(*s)
        raise NotImplementedError(f"the LLVM backend cannot render {op.label} on {dt} (not legalized?)")

    def cast(self, x: ir.Value, src: DType, dst: DType) -> ir.Value:
        """A core cast (see `kernels/legalize.py`): integers wrap; a float becomes an int64 saturated, or an int32
        (where it is in range)."""
        b = self.b
        if src == dst:
            return x
        t = llvm_type(dst)
        if float16 in (src, dst):  # native on F16C: the bits as `half`, which the host converts itself
            return b.fpext(b.bitcast(x, ir.HalfType()), t) if src == float16 \
                else b.bitcast(b.fptrunc(x, ir.HalfType()), I16)
        if src.is_float and dst.is_float:
            return b.fpext(x, t) if dst.itemsize > src.itemsize else b.fptrunc(x, t)
        if dst.is_float:
            return b.sitofp(x, t) if src.is_signed else b.uitofp(x, t)
        if src.is_float:
            if dst == int32:
                return b.fptosi(x, t)
            if dst != int64:
                raise NotImplementedError(f"a cast of {src} to {dst} (not legalized?)")
            # Saturated by selects around the plain conversion (poison out of range, which they never pick), not
            # `llvm.fptosi.sat`: x86 has no vector form of that, and LLVM converts its vectors one lane at a time
            # around branches (a histogram's bins, 2**20 float64s: 2.1x the time).
            limit = ir.Constant(x.type, float(2**63))  # exact in both types; -2**63 is the least int64
            inside = b.select(b.fcmp_ordered(">=", x, limit), I64(2**63 - 1), b.fptosi(x, t))
            inside = b.select(b.fcmp_ordered("<", x, ir.Constant(x.type, -float(2**63))), I64(-2**63), inside)
            return b.select(b.fcmp_unordered("uno", x, x), I64(0), inside)
        if dst.bits < src.bits:
            return b.trunc(x, t)
        if dst.bits > src.bits:
            return b.sext(x, t) if src.is_signed else b.zext(x, t)
        return x

    def guard(self, address: ir.Value, index: ir.Value, buf: int | ir.Value, size: int, store: bool,
              count: int | ir.Value = 1) -> ir.Value:
        """`address`, that of element `index` of buffer slot `buf` (a constant or an i64 value; `size` elements),
        for an access to `count` elements from there (an i64 value for a masked access: 0 where it is off,
        which touches nothing).

        In a checked function an access not wholly inside the buffer goes to the module's sink instead, and
        is recorded (see `inside`)."""
        if self.fault_slot is None:
            return address
        return self.b.select(self.inside(index, buf, size, store, count), address, self.sink())

    def inside(self, index: ir.Value, buf: int | ir.Value, size: int | ir.Value, store: bool,
               count: int | ir.Value) -> ir.Value:
        """In a checked function: whether `count` elements from `index` are all inside buffer slot `buf` (`size`
        elements; each a constant or an i64 value); where they are not and `count` is positive, the first such
        access of a launch is recorded (`kernels/bounds.py`). The test branches to a cold block, so checked
        loops may stay scalar: the mode is for finding bugs, not for speed."""
        b = self.b
        end = b.add(index, count if isinstance(count, ir.Value) else I64(count))
        inside = b.and_(b.icmp_signed(">=", index, I64(0)),
                        b.icmp_signed("<=", end, size if isinstance(size, ir.Value) else I64(size)))
        fault = b.not_(inside)
        if isinstance(count, ir.Value):
            fault = b.and_(fault, b.icmp_signed(">", count, I64(0)))
        with b.if_then(fault, likely=False):
            code = I64(fault_code(buf, store)) if isinstance(buf, int) else \
                b.add(b.mul(buf, I64(2)), I64(fault_code(0, store)))
            b.call(self.fault_recorder(), [self.fault_record(), code, index])
        return inside

    def fault_record(self) -> ir.Value:
        """Where a checked function records its first fault: the slots after its scalar parameters."""
        return self.b.gep(self.fn.args[1], [I64(self.fault_slot)], source_etype=I64)

    def sink(self) -> ir.GlobalVariable:
        """The module's private memory that faulting accesses use instead of their buffer's."""
        if (sink := self.module.globals.get("lt_sink")) is None:
            sink = ir.GlobalVariable(self.module, ir.ArrayType(I8, SINK_BYTES), "lt_sink")
            sink.linkage, sink.align = "private", SINK_BYTES
            sink.initializer = ir.Constant(sink.value_type, None)
        return sink

    def fault_recorder(self) -> ir.Function:
        """`lt_fault(record, code, index)`: keeps the first fault of a launch, whichever thread makes it."""
        if (fn := self.module.globals.get("lt_fault")) is not None:
            return fn
        fn = ir.Function(self.module, ir.FunctionType(ir.VoidType(), [PTR, I64, I64]), "lt_fault")
        fn.linkage = "private"
        fn.attributes.add("cold")
        fn.attributes.add("noinline")
        record, code, index = fn.args
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        first = b.extract_value(b.cmpxchg(record, I64(0), code, "monotonic", "monotonic"), 1)
        with b.if_then(first):
            b.store(index, b.gep(record, [I64(1)], source_etype=I64))
        b.ret_void()
        return fn


class KernelRenderer(FunctionBuilder):
    """Renders one `Kernel`: its output loop nest, each value in the loop `loop_scopes` places it in."""

    rolled_nests = True  # see `keep_nests_rolled`

    def __init__(self, kernel: Kernel, checked: bool = False):
        super().__init__(kernel.name, len(kernel.params) if checked else None)
        self.kernel = kernel
        self.vars: dict[Var, ir.Value] = {}
        self.vals: dict[int, ir.Value] = {}
        self.known: dict[Bound, bool] = {}  # bounds that hold, or fail, everywhere in the pieces of loops being emitted
        self.copies = 1  # of the innermost loop's body that the pieces of the loops being emitted make
        self.staged: dict[int, Callable[[], ir.Value]] = {}  # a tile's loads from its arrays (`emit_tiles`)
        self.loops = {v.name: v for v in kernel.loops} | \
            {r.name: r for v in kernel.values() if v.op is VOp.REDUCE for r in v.arg[1]}  # a `Stride`'s, by name

    def render(self) -> ir.Module:
        k, b = self.kernel, self.b
        bufs, params, start, end = self.fn.args
        self.bufs = [b.load(b.gep(bufs, [I64(i)], source_etype=PTR), typ=PTR) for i in range(len(k.buffers))]
        self.params = []
        for i, dt in enumerate(k.params):
            slot = b.gep(params, [I64(i)], source_etype=I64)
            raw = b.load(slot, typ=F64 if dt.is_float else I64)
            if dt == bool_:
                self.params.append(b.icmp_unsigned("!=", raw, I64(0)))
            elif dt in HALF_FLOATS:  # the frontend passes the dtypes kernels compute in (`compute_dtype`)
                raise NotImplementedError(f"a {dt} parameter: pass it as float32 and cast it")
            else:
                self.params.append(self.cast(raw, float64 if dt.is_float else int64, dt))
        values, scopes = loop_scopes(k)
        # A value a reduction's loop computes and the output loop would compute again, element for
        # element (softmax's exp), goes from the one to the other through the output buffer.
        shared = shared_rows(k, lambda v: v.op is VOp.ALU and mathlib.supports(v.arg, v.srcs[-1].dtype))
        self.reloads = {id(s.value): s.store for s in shared}
        self.handovers: dict[int, list[SharedRow]] = {}  # by id of the reduction whose loop writes them
        for s in shared:
            self.handovers.setdefault(id(s.reduction), []).append(s)
        self.by_scope: dict[tuple[Var, ...], list[Value]] = {}
        for v in values:
            self.by_scope.setdefault(scopes[id(v)], []).append(v)
        if self.fault_slot is not None:  # the caller's range, kept inside the outermost loop's: see `gep`
            start = b.select(b.icmp_signed("<", start, I64(0)), I64(0), start)
            extent = I64(k.loops[0].size)
            end = b.select(b.icmp_signed(">", end, extent), extent, end)
        self.emit_output_level((), start, end)
        b.ret_void()
        if self.rolled_nests:
            self.keep_nests_rolled()
        if self.vector_width():
            self.vectorize_float32_wide()
        self.scope_written_buffers()
        return self.module

    def scope_written_buffers(self) -> None:
        """Tell LLVM that the buffers a kernel writes (its outputs and scratch) overlap no other buffer, which
        holds because every runtime allocates them afresh for the launch (see `ir.shared_rows`): each such slot's
        loads and stores get an alias scope of their own, and every load and store of another slot says it
        aliases none of those. Without it LLVM must assume that a store may change what a later lane reads, so
        a gather (`x[i]`, `take_along_axis`, an embedding's rows) stays scalar where it could read 8 or 16 lanes
        with one vector gather. An address made otherwise (a checked access's guard) gets no metadata: LLVM
        assumes of it what it assumed before."""
        module, name = self.module, self.fn.name
        domain = module.add_metadata([ir.MetaDataString(module, f"{name} buffers")])
        written = {id(self.bufs[i]): module.add_metadata([ir.MetaDataString(module, f"{name} b{i}"), domain])
                   for i, p in enumerate(self.kernel.buffers) if p.output or p.scratch}
        if not written:
            return
        # by the id of a buffer's pointer: the (alias.scope, noalias) of its accesses
        tags = {id(ptr): (None, module.add_metadata(list(written.values()))) for ptr in self.bufs}
        for key, scope in written.items():
            apart = [s for k, s in written.items() if k != key]
            tags[key] = (module.add_metadata([scope]), module.add_metadata(apart) if apart else None)
        for block in self.fn.blocks:
            for instr in block.instructions:
                if isinstance(instr, (ir.LoadInstr, ir.StoreInstr)):
                    pointer = instr.operands[1] if isinstance(instr, ir.StoreInstr) else instr.operands[0]
                    for kind, tag in zip(("alias.scope", "noalias"), tags.get(id(buffer_base(pointer)), ())):
                        if tag is not None:
                            instr.set_metadata(kind, tag)

    def vector_width(self) -> list[list[str | ir.Value]]:
        """The hint on the width of the kernel's vector loops: FLOAT32_LANES where it computes a float32
        function in double (see `vectorize_float32_wide`), else none."""
        return [["llvm.loop.vectorize.width", I32(FLOAT32_LANES)]] if mathlib.in_double(self.kernel) else []

    def vectorize_float32_wide(self) -> None:
        """Have LLVM vectorize the innermost loops FLOAT32_LANES wide. Its vectorizer sizes vectors by a loop's
        widest type: the doubles of a float32 function that mathlib evaluates in double (sin, atan2) made a
        float32 loop 4 lanes wide on AVX2, so each float32 op around the function (the loads, the stores, the
        arithmetic around it) ran at half the width, and the doubles' latency chains were one vector deep.
        8 lanes: the doubles take two registers, the floats one (GELU of 2**22 floats, when its tanh was
        evaluated in double: 6.0 -> 4.6 cycles per element in llvm-mca's model of Zen 3). Where 512-bit
        vectors are preferred, LLVM's choice for such a loop is already 8."""
        width = self.loop_id(*self.vector_width())
        for latch in self.inner_latches:
            if "llvm.loop" not in latch.metadata:  # a loop given hints of its own keeps them
                latch.set_metadata("llvm.loop", width)

    # ---- loops -------------------------------------------------------------------------

    def extent(self, var: Var) -> ir.Value:
        """The size of loop `var`: a generic kernel's launch passes it where `Kernel.extents` says so."""
        k = self.kernel
        if var in k.extents:
            return self.params[len(k.params) - len(k.extents) + k.extents.index(var)]
        return I64(var.size)

    def loop(self, var: Var, lo: ir.Value, hi: ir.Value, body: Callable[[], None]) -> ir.Branch:
        def iteration(i: ir.Value) -> None:
            self.vars[var] = i
            body()

        return self.counted_loop(var.name, lo, hi, iteration)

    def emit_scope(self, path: tuple[Var, ...], computed: frozenset[int] | set[int] = frozenset()) -> None:
        """The values of loop `path` not among `computed` (their ids), each after its sources."""
        for v in self.by_scope.get(path, ()):
            if id(v) not in computed:
                self.emit_value(v, path)

    def emit_value(self, v: Value, path: tuple[Var, ...]) -> None:
        """`v`, a value of loop `path`, into `vals`."""
        if v.op is VOp.REDUCE:
            self.emit_reduce(v, path)
        elif (staged := self.staged.get(id(v))) is not None:
            self.vals[id(v)] = staged()
        elif (store := self.reloads.get(id(v))) is not None:
            raw = self.b.load(self.gep(store.buf, store.index, False), typ=memory_type(v.dtype))
            self.vals[id(v)] = self.from_memory(raw, v.dtype)
        else:
            self.vals[id(v)] = self.value(v)

    def emit_stores(self) -> None:
        for s in self.kernel.stores:
            val = self.vals[id(s.value)]
            if s.at is None:
                self.b.store(self.to_memory(val, s.value.dtype), self.gep(s.buf, s.index, True))
            else:
                self.emit_scatter_store(s, self.vals[id(s.at)], self.vals[id(s.mask)], val)

    def emit_scatter_store(self, s: Store, at: ir.Value, mask: ir.Value, val: ir.Value) -> None:
        """A scatter's store (see `ir.Store`) of `val` at `at` where `mask` holds. Where its mask is off it goes
        to a slot of its own rather than around a branch: a compaction's mask (`x[x > 0]`) is as unpredictable
        as the data."""
        t = memory_type(s.value.dtype)
        count = self.b.zext(mask, I64) if self.fault_slot is not None else 1  # off: no access (see `guard`)
        address = self.b.select(mask, self.gep(s.buf, None, True, at, count), self.spill(t))
        if s.combine is not None:
            old = self.from_memory(self.b.load(address, typ=t), s.value.dtype)
            val = self.alu(s.combine.combine(s.value.dtype), s.value.dtype, [old, val])
        self.b.store(self.to_memory(val, s.value.dtype), address)

    def scatters_in_blocks(self, scope: tuple[Var, ...]) -> bool:
        """Whether the innermost output loop (`scope` ends with it) computes its scatter stores' positions,
        masks and values a block at a time before it stores them (`emit_scatter_blocks`): a kernel whose
        stores all scatter, unchecked (a checked store's guard reads its mask where it stores), whose innermost
        loop reduces nothing and computes enough to pay for the arrays: it gathers, or computes in floats (a
        histogram's bins). A bincount's positions are its loads: staged, 2**20 of them took 1.3x the time."""
        values = self.by_scope.get(scope, ())
        return self.fault_slot is None and scope[-1].size >= SCATTER_BLOCK \
            and all(s.at is not None for s in self.kernel.stores) and not any(v.op is VOp.REDUCE for v in values) \
            and any(v.op is VOp.GATHER or v.op is VOp.ALU and v.srcs[-1].dtype.is_float for v in values)

    def emit_scatter_blocks(self, scope: tuple[Var, ...], lo: ir.Value, hi: ir.Value) -> ir.Value:
        """The innermost output loop over [lo, hi) from `lo` on in blocks of SCATTER_BLOCK points: a vectorized
        loop computes each point's positions, masks and values into arrays, then a scalar loop stores them in
        the points' order. The stores (a read-modify-write where they fold: a histogram's counts) keep any loop
        that holds them scalar, as they may land on one element; apart from them, the positions (a histogram's
        bins, two gathers of its edges and the arithmetic between) compute 8 or 16 lanes at a time. Returns
        where the blocks end: the caller's loop does the rest, one point at a time."""
        b, var, stores = self.b, scope[-1], self.kernel.stores
        arrays = [{id(v): self.alloca(memory_type(v.dtype), SCATTER_BLOCK) for v in (s.at, s.mask, s.value)}
                  for s in stores]
        points = b.sub(hi, lo)
        blocks = b.sdiv(b.select(b.icmp_signed("<", points, I64(0)), I64(0), points), I64(SCATTER_BLOCK))

        def element(array: ir.Value, dtype: DType, j: ir.Value) -> ir.Value:
            return b.gep(array, [j], source_etype=memory_type(dtype), inbounds=True)

        def block(i: ir.Value) -> None:
            first = b.add(lo, b.mul(i, I64(SCATTER_BLOCK)))

            def compute() -> None:
                self.emit_scope(scope)
                j = b.sub(self.vars[var], first)
                for s, held in zip(stores, arrays):
                    for v in (s.at, s.mask, s.value):
                        b.store(self.to_memory(self.vals[id(v)], v.dtype), element(held[id(v)], v.dtype, j))

            def store(j: ir.Value) -> None:
                for s, held in zip(stores, arrays):
                    at, mask, val = (self.from_memory(b.load(element(held[id(v)], v.dtype, j),
                                                             typ=memory_type(v.dtype)), v.dtype)
                                     for v in (s.at, s.mask, s.value))
                    self.emit_scatter_store(s, at, mask, val)

            # a block's constant trip count would have LLVM's unroller copy the loop whole before its vectorizer
            # saw it
            self.loop(var, first, b.add(first, I64(SCATTER_BLOCK)), compute).set_metadata(
                "llvm.loop", self.loop_id(["llvm.loop.unroll.disable"], *self.vector_width()))
            self.counted_loop(f"{var.name}_stores", I64(0), I64(SCATTER_BLOCK), store).set_metadata(
                "llvm.loop", self.loop_id(["llvm.loop.vectorize.enable", I1(0)]))

        self.counted_loop(f"{var.name}_blocks", I64(0), blocks, block)
        return b.add(lo, b.mul(blocks, I64(SCATTER_BLOCK)))

    def spill(self, t: ir.Type) -> ir.Value:
        """A stack slot for the stores that a mask turns off. LLVM would turn a store to a slot it sees all the
        uses of back into a branch around the store, so the slot's address escapes (into an empty `asm`)."""
        slot = self.alloca(t)
        with self.b.goto_block(self.entry):
            escape = ir.InlineAsm(ir.FunctionType(ir.VoidType(), [PTR]), "", "r,~{memory}", side_effect=True)
            self.b.call(escape, [slot])
        return slot

    def to_memory(self, value: ir.Value, dtype: DType) -> ir.Value:
        """A register value as its buffer holds it: bools as bytes."""
        return self.b.zext(value, I8) if dtype == bool_ else value

    def from_memory(self, raw: ir.Value, dtype: DType) -> ir.Value:
        return self.b.icmp_unsigned("!=", raw, I8(0)) if dtype == bool_ else raw

    def emit_output_level(self, path: tuple[Var, ...], start: ir.Value, end: ir.Value) -> None:
        loops = self.kernel.loops
        self.emit_scope(path)
        depth = len(path)
        if depth == len(loops):
            self.emit_stores()
            return
        var = loops[depth]
        lo, hi = (start, end) if depth == 0 else (I64(0), self.extent(var))
        if depth == len(loops) - 1 and (reductions := column_reductions(self.kernel)) is not None:
            self.emit_columns(reductions, lo, hi)
            return
        if depth == len(loops) - 2 and (side := self.tile_side()):
            self.emit_tiles(path, side, lo, hi, lambda: self.emit_output_level(loops, start, end))
            return
        if (pieces := self.pieces(var)) is not None:
            self.emit_pieces(var, *pieces, lo, hi, lambda: self.emit_output_level(path + (var,), start, end))
            return
        if depth == len(loops) - 1 and (blocked := self.row_blocked(path + (var,))):
            lo = self.emit_row_blocks(path + (var,), blocked, lo, hi)
        elif depth == len(loops) - 1 and self.scatters_in_blocks(path + (var,)):
            lo = self.emit_scatter_blocks(path + (var,), lo, hi)
        self.loop(var, lo, hi, lambda: self.emit_output_level(path + (var,), start, end))

    def row_blocked(self, scope: tuple[Var, ...]) -> list[Value]:
        """The reductions of the innermost output loop (`scope` ends with it) to fold ROW_BLOCK rows side by side
        (`emit_row_blocks`): each one plain (a sum, a product, an integer extremum: one accumulator), over one
        loop of at least ROW_BLOCK_MIN_TERMS terms, reading a row of memory that changes with the output loop
        (`w @ v`, `x.sum(-1)`), and calling no mathlib function (a logsumexp's sum of exps is bound by its
        arithmetic, not by memory: 10-20% slower folded side by side); none where the output loop has fewer than
        ROW_BLOCK rows."""
        var = scope[-1]
        if var.size < ROW_BLOCK:
            return []
        return [v for v in self.by_scope.get(scope, ()) if v.op is VOp.REDUCE and len(ranges := v.arg[1]) == 1
                and ranges[0].size >= ROW_BLOCK_MIN_TERMS and self.plain_fold(v, scope)
                and self.streamed(v, ranges[0], var)]

    @staticmethod
    def streamed(red: Value, along: Var, across: Var) -> bool:
        """Whether reduction `red` reads memory at unit stride along loop `along` in rows that change with loop
        `across`, and calls no mathlib function: a fold bound by memory, whose rows `emit_row_blocks` (or the
        columns' `rows_streamed`) stream side by side."""
        terms = toposort([red.srcs[0]])
        return any(x.op is VOp.LOAD and (along, 1) in x.arg[1].terms and across in x.arg[1].vars() for x in terms) \
            and not any(x.op is VOp.ALU and mathlib.supports(x.arg, x.srcs[-1].dtype) for x in terms)

    def rows_streamed(self, red: Value, var: Var) -> bool:
        """Whether a column reduction `red` of the output loop `var` folds ROW_BLOCK of its innermost loop's terms
        at a time, in order (`emit_columns`): not of bools (which fold as bytes), of at least ROW_BLOCK_MIN_TERMS
        rows, each read at unit stride across the columns (`v @ w`, `x.sum(0)`)."""
        loop = red.arg[1][-1]
        return red.dtype != bool_ and loop.size >= ROW_BLOCK_MIN_TERMS and self.streamed(red, var, loop)

    def plain_fold(self, red: Value, scope: tuple[Var, ...]) -> bool:
        """Whether `emit_reduce` folds `red` into one accumulator, element by element (not a float extremum's
        NaN-aware loop, nor a search that stops at its first hit)."""
        op = red.arg[0]
        return not (red.dtype in (float32, float64) and op in (ReduceOp.MAX, ReduceOp.MIN)) \
            and self.first_hit(red, scope) is None

    def emit_row_blocks(self, scope: tuple[Var, ...], reductions: list[Value], lo: ir.Value, hi: ir.Value) \
            -> ir.Value:
        """The innermost output loop over [lo, hi) from `lo` on in blocks of ROW_BLOCK rows, each block's values
        computed row by row but its `reductions` (`row_blocked`) in one loop that folds every row's term in turn:
        a core then streams several rows of a matrix from memory at once, which one row's stream alone does not
        saturate (`w @ v` of a 64 MiB matrix, 1.5x). Returns where the blocks end: the caller's loop does the rest,
        one row at a time (the last few, or a thread's share smaller than a block)."""
        b, var, blocked = self.b, scope[-1], {id(v) for v in reductions}
        rows_left = b.sub(hi, lo)
        blocks = b.sdiv(b.select(b.icmp_signed("<", rows_left, I64(0)), I64(0), rows_left), I64(ROW_BLOCK))

        def block(i: ir.Value) -> None:
            first = b.add(lo, b.mul(i, I64(ROW_BLOCK)))
            rows, outer = [], self.vals
            for r in range(ROW_BLOCK):
                rows.append((b.add(first, I64(r)), dict(outer)))

            def at(row: tuple[ir.Value, dict[int, ir.Value]]) -> None:
                self.vars[var], self.vals = row

            for v in self.by_scope.get(scope, ()):
                if id(v) in blocked:
                    self.emit_folds_side_by_side(v, scope, rows, at)
                    continue
                for row in rows:
                    at(row)
                    self.emit_value(v, scope)
            for row in rows:
                at(row)
                self.emit_stores()
            self.vals = outer

        self.counted_loop(f"{var.name}_rows", I64(0), blocks, block)
        return b.add(lo, b.mul(blocks, I64(ROW_BLOCK)))

    def emit_folds_side_by_side(self, red: Value, scope: tuple[Var, ...],
                                rows: list[tuple[ir.Value, dict[int, ir.Value]]],
                                at: Callable[[tuple[ir.Value, dict[int, ir.Value]]], None]) -> None:
        """The plain reduction `red` (`plain_fold`) of each of `rows` (each an output index and its values), in one
        loop over its terms that folds each row's term into that row's accumulator in turn."""
        op, (loop,) = red.arg
        src, dtype = red.srcs[0], red.dtype
        b, t = self.b, llvm_type(dtype)
        accs = [self.alloca(t) for _ in rows]
        for acc in accs:
            b.store(self.constant(op.identity(dtype), dtype), acc)

        def terms() -> None:
            for row, acc in zip(rows, accs):
                at(row)
                self.emit_scope(scope + (loop,))
                self.emit_handovers(red)
                b.store(self.combine(op, dtype, b.load(acc, typ=t), self.vals[id(src)]), acc)

        self.loop(loop, I64(0), self.extent(loop), terms)
        for (_, vals), acc in zip(rows, accs):
            vals[id(red)] = b.load(acc, typ=t)

    def pieces(self, var: Var) -> tuple[list[int], list[tuple[Bound, int, int]]] | None:
        """Where to cut the output loop `var` so that in each piece every bound of the kernel's loads and
        validity masks that reads only `var` (`lo <= var + c < hi`, or `c - var`) holds everywhere or nowhere:
        the cut points, and those bounds with the range of `var` where each holds; None where there is nothing
        to cut, or the pieces would make more than MAX_PIECES copies of the body with those of the loops
        outside.

        A padded, rolled or concatenated operand then loads with no mask in each piece (the pieces where a
        bound fails load nothing), so each piece vectorizes as a plain copy does; under a mask, LLVM's masked
        vector loads take twice as long, one per operand of a concatenation."""
        ranges: dict[Bound, tuple[int, int]] = {}
        for v in self.kernel.values():
            for bound in bounds_of(v):
                e = bound.expr
                if bound in ranges or len(e.terms) != 1 or e.terms[0][0] != var or e.terms[0][1] not in (1, -1):
                    continue
                if e.terms[0][1] == 1:
                    ranges[bound] = (bound.lo - e.const, bound.hi - e.const)
                else:
                    ranges[bound] = (e.const - bound.hi + 1, e.const - bound.lo + 1)
        cuts = sorted({p for a, b in ranges.values() for p in (a, b) if 0 < p < var.size})
        if not cuts or self.copies * (len(cuts) + 1) > MAX_PIECES:
            return None
        return cuts, [(bound, a, b) for bound, (a, b) in ranges.items()]

    def emit_pieces(self, var: Var, cuts: list[int], ranges: list[tuple[Bound, int, int]], lo: ir.Value,
                    hi: ir.Value, body: Callable[[], None]) -> None:
        """The loop over `var` from `lo` to `hi`, one loop per piece between the `cuts` (see `pieces`), each
        with the bounds it decides known to `bounds`."""
        b = self.b

        def clamp(x: ir.Value, lower: int, upper: int) -> ir.Value:
            if isinstance(x, ir.Constant):
                return I64(min(max(x.constant, lower), upper))
            x = b.select(b.icmp_signed("<", x, I64(lower)), I64(lower), x)
            return b.select(b.icmp_signed(">", x, I64(upper)), I64(upper), x)

        outer, copies = self.known, self.copies
        self.copies *= len(cuts) + 1
        edges = [0, *cuts, var.size]
        for first, last in pairwise(edges):
            self.known = {**outer, **{bound: a <= first < b for bound, a, b in ranges}}
            self.loop(var, clamp(lo, first, last), clamp(hi, first, last), body)
        self.known, self.copies = outer, copies

    def tile_side(self) -> int:
        """The side, in elements, of the square tiles to walk the two innermost output loops in, or 0 to walk
        them row after row.

        A kernel that stores along its innermost loop but loads along the one outside it (a transposed
        copy, `x + x.T`) would read one element of each cache line per row, the line gone before the next
        row needs it. In tiles of a cache line a side, each line a tile touches stays in the L1 cache while
        the tile uses all of it. That takes plain stores (no scatter) and no reduction, whose own loops the
        tiles would repeat.
        """
        loops, stores = self.kernel.loops, self.kernel.stores
        if len(loops) < 2 or any(v.op is VOp.REDUCE for v in self.kernel.values()):
            return 0
        across, along = loops[-2:]
        if any(s.at is not None or (along, 1) not in s.index.terms for s in stores):
            return 0
        loads = [v for v in self.kernel.values() if v.op is VOp.LOAD]
        # a load the rows only broadcast (the same element along the row: an embedding's index) is no transpose
        if not any(unit_stride(v, across) and along in v.arg[1].vars() and not unit_stride(v, along) for v in loads):
            return 0
        widest = max(v.dtype.itemsize for v in loads)
        side = max(1, TILE_BYTES // widest)
        if self.staged_loads():  # rows long enough to vectorize (float64 a + b.T: 8-element rows, 1.45x the time)
            side = max(side, STAGED_ROW)
        return side if min(across.size, along.size) > side else 0

    def emit_tiles(self, path: tuple[Var, ...], side: int, lo: ir.Value, hi: ir.Value,
                   body: Callable[[], None]) -> None:
        """The two innermost output loops, the outer over [lo, hi), in tiles of `side` x `side` (see
        `tile_side`), `body` at each point.

        Where the tile computes anything from what it loads (`staged_loads`), its loads that walk across the rows
        are first copied into arrays of a tile each, in the order of the output, and the rows then compute
        from those: a vectorized loop that reads them, like any other operand, one element after the next.
        A plain (transposing) copy walks the tile once."""
        b = self.b
        across, along = self.kernel.loops[-2:]
        staged = self.staged_loads()
        arrays = {id(v): self.alloca(memory_type(v.dtype), side * side) for v in staged}

        def tiles(var: Var, lo: ir.Value, hi: ir.Value, tile: Callable[[ir.Value, ir.Value], None]) -> None:
            def whole(i: ir.Value) -> None:
                first = b.add(lo, b.mul(i, I64(side)))
                tile(first, b.add(first, I64(side)))

            count = b.udiv(b.sub(hi, lo), I64(side))
            self.counted_loop(f"{var.name}_tile", I64(0), count, whole)
            rest = b.add(lo, b.mul(count, I64(side)))
            with b.if_then(b.icmp_signed("<", rest, hi)):
                tile(rest, hi)

        def rows(across_lo: ir.Value, across_hi: ir.Value, along_lo: ir.Value, along_hi: ir.Value,
                 point: Callable[[], None], row_hint: ir.MDValue, scope: bool = True) -> None:
            """The tile's rows, `point` at each point; the values of the rows' loop first if `scope`."""
            def row() -> None:
                if scope:
                    self.emit_scope(path + (across,))
                self.loop(along, along_lo, along_hi, point).set_metadata("llvm.loop", row_hint)

            self.loop(across, across_lo, across_hi, row).set_metadata("llvm.loop", rolled)

        def tile(across_lo: ir.Value, across_hi: ir.Value, along_lo: ir.Value, along_hi: ir.Value) -> None:
            if not staged:
                rows(across_lo, across_hi, along_lo, along_hi, body, scalar)
                return

            def at(v: Value) -> ir.Value:
                """The address of the point's element in `v`'s array."""
                i = b.sub(self.vars[across], across_lo)
                j = b.sub(self.vars[along], along_lo)
                return b.gep(arrays[id(v)], [b.add(b.mul(i, I64(side)), j)], source_etype=memory_type(v.dtype),
                             inbounds=True)

            def copy() -> None:
                for v in staged:
                    b.store(self.to_memory(self.value(v), v.dtype), at(v))

            rows(across_lo, across_hi, along_lo, along_hi, copy, scalar, scope=False)
            self.staged = {id(v): (lambda v=v: self.from_memory(b.load(at(v), typ=memory_type(v.dtype)), v.dtype))
                           for v in staged}
            rows(across_lo, across_hi, along_lo, along_hi, body, vectorized)
            self.staged = {}

        # Vectorized along either axis of a tile, the loads walking the other way become gathers, slower on
        # x86 than the scalar loads of an unrolled row.
        scalar = self.loop_id(["llvm.loop.vectorize.enable", I1(0)])
        rolled = self.loop_id(["llvm.loop.vectorize.enable", I1(0)], ["llvm.loop.unroll.disable"])
        # a row of a whole tile has a constant trip count, which LLVM's unroller would unroll whole before its
        # vectorizer sees the loop
        vectorized = self.loop_id(["llvm.loop.unroll.disable"], *self.vector_width())

        tiles(across, lo, hi, lambda a_lo, a_hi: tiles(along, I64(0), self.extent(along),
                                                       lambda l_lo, l_hi: tile(a_lo, a_hi, l_lo, l_hi)))

    def staged_loads(self) -> list[Value]:
        """The loads a tile (see `emit_tiles`) copies into arrays before computing its rows: those of the
        innermost loop that walk across the rows, where the tile computes more than a copy of what it loads."""
        values, scopes = loop_scopes(self.kernel)
        inner = [v for v in values if scopes[id(v)] == self.kernel.loops]
        across, along = self.kernel.loops[-2:]
        if all(v.op is VOp.LOAD for v in inner):
            return []
        return [v for v in inner if v.op is VOp.LOAD and (across, 1) in v.arg[1].terms
                and (along, 1) not in v.arg[1].terms]

    def combine(self, op: ReduceOp, dtype: DType, acc: ir.Value, x: ir.Value) -> ir.Value:
        """One step of a reduction."""
        if dtype.is_float and op in REASSOCIATIVE:
            # Reassociating lets LLVM keep several vector accumulators: faster, and more
            # accurate than one running float sum. `reassoc` alone, not with `nsz`: the two
            # together also let InstCombine factor `c*x0 + c*x1` into `c*(x0 + x1)`, which
            # computes other values (`(x * 0.5).sum()` overflows, `(x * inf).sum()` loses its NaN).
            return REASSOCIATIVE[op](self.b, acc, x, flags=("reassoc",))
        return self.alu(op.combine(dtype), dtype, [acc, x])

    def emit_handovers(self, red: Value) -> None:
        """The values that reduction `red`'s loop hands over to its output loop (`shared_rows`), at this term."""
        for shared in self.handovers.get(id(red), ()):
            self.b.store(self.vals[id(shared.twin)], self.gep(shared.store.buf, shared.index, True))

    def emit_reduce(self, red: Value, path: tuple[Var, ...]) -> None:
        op, ranges = red.arg
        src, dtype = red.srcs[0], red.dtype
        b, t = self.b, llvm_type(dtype)
        acc = self.alloca(t)

        def reduce_with(step: Callable[[ir.Value], None]) -> None:
            """The reduction's loops from its identity, `step` folding each element into `acc`."""
            b.store(self.constant(op.identity(dtype), dtype), acc)

            def level(k: int) -> None:
                if k:
                    self.emit_scope(path + ranges[:k])
                if k == len(ranges):
                    self.emit_handovers(red)
                    step(self.vals[id(src)])
                    return
                self.loop(ranges[k], I64(0), self.extent(ranges[k]), lambda: level(k + 1))

            level(0)

        def exact(x: ir.Value) -> None:
            b.store(self.combine(op, dtype, b.load(acc, typ=t), x), acc)

        if dtype in (float32, float64) and op in (ReduceOp.MAX, ReduceOp.MIN):
            self.emit_extremum(op, acc, t, reduce_with, exact)
        elif (search := self.first_hit(red, path)) is not None:
            self.emit_first_hit(red, path, acc, *search, lambda: reduce_with(exact))
        else:
            reduce_with(exact)
        self.vals[id(red)] = b.load(acc, typ=t)

    def first_hit(self, red: Value, path: tuple[Var, ...]) -> tuple[Value, Value] | None:
        """`(cond, other)` if `red` is `min over r of where(cond, r, other)`, `r` its one loop and `other`
        the same for every `r`: the position of the first element where `cond` holds (argmax's second
        pass), which a search that stops there finds."""
        op, ranges = red.arg
        src = red.srcs[0]
        if (op is not ReduceOp.MIN or len(ranges) != 1 or red.dtype != int64 or id(red) in self.handovers
                or src.op is not VOp.ALU or src.arg is not Alu.WHERE):
            return None
        cond, position, other = src.srcs
        if position.op is not VOp.INDEX or position.arg != Expr.of(ranges[0]):
            return None
        inside = path + ranges
        if any(v is other for scope, vs in self.by_scope.items() if scope[:len(inside)] == inside
               for v in vs):
            return None
        return cond, other

    def emit_first_hit(self, red: Value, path: tuple[Var, ...], acc: ir.Value, cond: Value, other: Value,
                       exact: Callable[[], None]) -> None:
        """`red` (see `first_hit`) into `acc`: blocks of FIRST_HIT_BLOCK elements, each first tested
        whole for a hit by a vectorizable or, until the one with the first hit, searched by a min of the
        hits' positions. Every element before the hit is a miss, so `other` takes part where the hit is
        not at 0; a negative `other` is below every position and wins unless every element is a hit, so
        that case folds every element as before."""
        b, (var,) = self.b, red.arg[1]
        size = self.extent(var)
        k = self.vals[id(other)]
        found, hit = self.alloca(I1), self.alloca(I1)
        b.store(I1(0), found)
        b.store(self.constant(ReduceOp.MIN.identity(int64), int64), acc)  # kept where there is no element

        def elements(lo: ir.Value, hi: ir.Value, step: Callable[[], None]) -> None:
            def body() -> None:
                self.emit_scope(path + (var,))
                step()

            self.loop(var, lo, hi, body)

        def block(i: ir.Value) -> None:
            lo = b.mul(i, I64(FIRST_HIT_BLOCK))
            hi = b.add(lo, I64(FIRST_HIT_BLOCK))
            hi = b.select(b.icmp_signed("<", hi, size), hi, size)
            b.store(I1(0), hit)
            elements(lo, hi, lambda: b.store(b.or_(b.load(hit, typ=I1), self.vals[id(cond)]), hit))
            with b.if_then(b.load(hit, typ=I1)):
                b.store(hi, acc)

                def least() -> None:
                    here = b.select(self.vals[id(cond)], self.vars[var], hi)
                    b.store(self.alu(Alu.MIN, int64, [b.load(acc, typ=I64), here]), acc)

                elements(lo, hi, least)
                b.store(I1(1), found)

        with b.if_else(b.icmp_signed("<", k, I64(0))) as (negative, otherwise):
            with negative:
                exact()
            with otherwise:
                blocks = b.udiv(b.add(size, I64(FIRST_HIT_BLOCK - 1)), I64(FIRST_HIT_BLOCK))

                def maybe(i: ir.Value) -> None:
                    with b.if_then(b.not_(b.load(found, typ=I1))):
                        block(i)

                self.counted_loop(f"{var.name}_block", I64(0), blocks, maybe)
                first = b.load(acc, typ=I64)
                late = b.icmp_signed(">", first, I64(0))
                limited = b.select(b.icmp_signed("<", k, first), k, first)
                searched = b.select(b.load(found, typ=I1), b.select(late, limited, first), k)
                b.store(b.select(b.icmp_signed(">", size, I64(0)), searched, first), acc)

    def emit_extremum(self, op: ReduceOp, acc: ir.Value, t: ir.Type,
                      reduce_with: Callable[[Callable[[ir.Value], None]], None],
                      exact: Callable[[ir.Value], None]) -> None:
        """A float max or min reduction into `acc`, as `llvm.maximum`/`llvm.minimum` would fold it, fast.

        Folding with those intrinsics costs a chain of about six dependent instructions per vector on
        x86 (NaN and the order -0.0 < +0.0 are handled in every step). Instead a plain compare and select
        (`vmaxps`) keeps the running extremum, leaving the sign of a zero extremum to the order of the
        lanes. Beside it run an or of "is NaN" and the same extremum of the bits read as signed integers,
        in whose order -0.0 is the least value and +0.0 the least non-negative one: where the extremum is
        a zero, that says whether the zero that wins a tie (+0.0 for max, -0.0 for min) is in the row.
        Only a row holding a NaN, whose lanes the fast flags leave undefined, is folded again exactly.
        The fast pass does not prefetch: 2 KiB ahead in chunks of 1 KiB, a row max of 4096x4096 float32 on aligned
        memory ran 1.8-6.2 ms, 1.8-2.2 without (one thread, shared machine), and no other distance tried was faster
        than none.
        """
        b = self.b
        fast = ("nnan", "nsz")
        maximum = op is ReduceOp.MAX
        word = I32 if t == F32 else I64
        sign = ir.Constant(word, -(1 << (word.width - 1)))
        winner = ir.Constant(word, 0) if maximum else sign  # the bits of the zero that wins a tie
        bits, saw_nan = self.alloca(word), self.alloca(I1)
        b.store(sign if maximum else ir.Constant(word, (1 << (word.width - 1)) - 1), bits)
        b.store(I1(0), saw_nan)

        def step(x: ir.Value) -> None:
            a, n, k = b.load(acc, typ=t), b.bitcast(x, word), b.load(bits, typ=word)
            b.store(b.select(b.fcmp_ordered(">" if maximum else "<", a, x, flags=fast), a, x, flags=fast), acc)
            b.store(b.select(b.icmp_signed(">" if maximum else "<", k, n), k, n), bits)
            b.store(b.or_(b.load(saw_nan, typ=I1), b.fcmp_unordered("uno", x, x)), saw_nan)

        reduce_with(step)
        seen = b.icmp_signed("==", b.load(bits, typ=word), winner)
        zero = b.bitcast(b.select(seen, winner, b.xor(winner, sign)), t)
        a = b.load(acc, typ=t)  # undefined (poison) after a NaN, but then only stored and folded again
        b.store(b.select(b.fcmp_ordered("==", a, ir.Constant(t, 0.0)), zero, a), acc)
        with b.if_then(b.load(saw_nan, typ=I1), likely=False):
            reduce_with(exact)

    def emit_columns(self, reductions: list[Value], lo: ir.Value, hi: ir.Value) -> None:
        """The innermost output loop over [lo, hi) around `reductions` (see `column_reductions`), in blocks of
        columns whose arrays take COLUMN_BLOCK_BYTES together: per block and per reduction in turn, the
        reduction's loops outside a loop across the block, folding into an array of accumulators.

        What a reduction reads of the output loop's values that come from an earlier reduction (a variance's
        mean) is computed once per column into an array of its own before the reduction's loops, not once
        per term; the rest of them (a bias) it computes where it reads them."""
        b, path = self.b, self.kernel.loops
        var, here = path[-1], self.by_scope[path]
        reads = {id(red): {id(v) for v in toposort(list(red.srcs))} for red in reductions}
        derived: set[int] = set()  # values of the output loop that depend on a reduction
        for v in here:
            if v.op is VOp.REDUCE or any(id(s) in derived for s in v.srcs):
                derived.add(id(v))
        staged = [v for v in here if v.op is not VOp.REDUCE and id(v) in derived
                  and any(id(v) in r for r in reads.values())]
        # the arrays in memory as buffers hold them (bools as bytes: a loop vectorized over i1s in
        # memory reads them as packed bits, which the scalar stores did not write)
        # a float extremum's running extremum of its terms' bits, read as integers (see `emit_extremum`)
        bits = {id(red): bitcast(red, int32 if red.dtype == float32 else int64)
                for red in reductions if red.dtype in (float32, float64) and red.arg[0] in (ReduceOp.MAX, ReduceOp.MIN)}
        columns_of = [*reductions, *staged, *bits.values()]
        width = max(1, COLUMN_BLOCK_BYTES // sum(v.dtype.itemsize for v in columns_of))
        arrays = {id(v): self.alloca(memory_type(v.dtype), width) for v in columns_of}

        def block(i: ir.Value) -> None:
            first = b.add(lo, b.mul(i, I64(width)))
            left = b.sub(hi, first)
            count = b.select(b.icmp_signed("<", left, I64(width)), left, I64(width))

            def columns(body: Callable[[Callable[[Value], ir.Value]], None]) -> None:
                """`body(at)` for each column of the block, `at(v)` the address of v's element in its array."""
                def column(j: ir.Value) -> None:
                    self.vars[var] = b.add(first, j)
                    body(lambda v: b.gep(arrays[id(v)], [j], source_etype=memory_type(v.dtype), inbounds=True))

                self.counted_loop(var.name, I64(0), count, column)

            done: set[int] = set()  # the values whose arrays hold them for this block

            def read(at: Callable[[Value], ir.Value], wanted: set[int]) -> None:
                """The output loop's values in `wanted`: those in `done` from their arrays, the others computed."""
                for v in here:
                    if id(v) not in wanted:
                        continue
                    if id(v) in done:
                        self.vals[id(v)] = self.from_memory(b.load(at(v), typ=memory_type(v.dtype)), v.dtype)
                    else:
                        self.vals[id(v)] = self.value(v)

            def stage(new: list[Value]) -> None:
                """The block's columns of `new`, values of the output loop, into their arrays."""
                def column(at: Callable[[Value], ir.Value]) -> None:
                    read(at, {id(u) for v in new for u in toposort([v])})
                    for v in new:
                        b.store(self.to_memory(self.vals[id(v)], v.dtype), at(v))

                columns(column)
                done.update(id(v) for v in new)

            def fold(red: Value) -> None:
                """The block's columns of reduction `red` into its array: its loops outside the block's. A float
                extremum's fast pass first, as `emit_extremum`'s, each column's running extremum beside its bits'
                and a flag of NaNs for the block; the block is folded again exactly only where it held a NaN."""
                (op, ranges), dtype = red.arg, red.dtype
                fast, maximum = bits.get(id(red)), op is ReduceOp.MAX
                saw_nan = self.alloca(I1)

                def accumulate(at: Callable[[Value], ir.Value], first: ir.Value | None, exact: bool) -> None:
                    """The term of the innermost reduction loop's index into the array, or where `first` is given,
                    its ROW_BLOCK terms from `first` on, in order (one load and store of the accumulator)."""
                    read(at, reads[id(red)])
                    acc = b.load(at(red), typ=memory_type(dtype))
                    if not exact:
                        word, nan = b.load(at(fast), typ=llvm_type(fast.dtype)), b.load(saw_nan, typ=I1)
                    for r in range(1 if first is None else ROW_BLOCK):
                        if first is not None:
                            self.vars[ranges[-1]] = b.add(first, I64(r))
                        for k in range(1, len(ranges) + 1):
                            self.emit_scope(path + ranges[:k])
                        self.emit_handovers(red)
                        x = self.vals[id(red.srcs[0])]
                        # bools: the logic on the bytes: LLVM 22 miscompiles it on i1s here (loop + SLP vectorizers:
                        # `exp(x) > c` all-reduced over 5 rows gave false)
                        if dtype == bool_:
                            acc = self.alu(op.combine(dtype), uint8, [acc, self.to_memory(x, dtype)])
                        elif exact:
                            acc = self.combine(op, dtype, acc, x)
                        else:
                            flags = ("nnan", "nsz")
                            acc = b.select(b.fcmp_ordered(">" if maximum else "<", acc, x, flags=flags), acc, x,
                                           flags=flags)
                            n = b.bitcast(x, word.type)
                            word = b.select(b.icmp_signed(">" if maximum else "<", word, n), word, n)
                            nan = b.or_(nan, b.fcmp_unordered("uno", x, x))
                    b.store(acc, at(red))
                    if not exact:
                        b.store(word, at(fast))
                        b.store(nan, saw_nan)

                def level(k: int, exact: bool) -> None:
                    if k == len(ranges):
                        columns(lambda at: accumulate(at, None, exact))
                        return
                    lo = I64(0)
                    if k == len(ranges) - 1 and self.rows_streamed(red, var):
                        # ROW_BLOCK rows at a time: as many streams from memory (see `emit_row_blocks`), and one
                        # load and store of each accumulator per block of rows
                        groups = b.sdiv(self.extent(ranges[k]), I64(ROW_BLOCK))
                        self.counted_loop(f"{ranges[k].name}_rows", I64(0), groups, lambda g: columns(
                            lambda at: accumulate(at, b.mul(g, I64(ROW_BLOCK)), exact)))
                        lo = b.mul(groups, I64(ROW_BLOCK))
                    self.loop(ranges[k], lo, self.extent(ranges[k]), lambda: level(k + 1, exact))

                def exactly() -> None:
                    identity = self.to_memory(self.constant(op.identity(dtype), dtype), dtype)
                    columns(lambda at: b.store(identity, at(red)))
                    level(0, True)

                if fast is None:
                    exactly()
                else:
                    t, word = llvm_type(dtype), llvm_type(fast.dtype)
                    sign = ir.Constant(word, -(1 << (word.width - 1)))
                    winner = ir.Constant(word, 0) if maximum else sign  # the bits of the zero that wins a tie

                    def start(at: Callable[[Value], ir.Value]) -> None:
                        b.store(self.constant(op.identity(dtype), dtype), at(red))
                        b.store(sign if maximum else ir.Constant(word, (1 << (word.width - 1)) - 1), at(fast))

                    def zeros(at: Callable[[Value], ir.Value]) -> None:
                        """A zero extremum the sign of the zero that wins a tie, where the column holds it."""
                        seen = b.icmp_signed("==", b.load(at(fast), typ=word), winner)
                        zero = b.bitcast(b.select(seen, winner, b.xor(winner, sign)), t)
                        a = b.load(at(red), typ=t)  # poison after a NaN, but then only stored and folded again
                        b.store(b.select(b.fcmp_ordered("==", a, ir.Constant(t, 0.0)), zero, a), at(red))

                    b.store(I1(0), saw_nan)
                    columns(start)
                    level(0, False)
                    columns(zeros)
                    with b.if_then(b.load(saw_nan, typ=I1), likely=False):
                        exactly()
                done.add(id(red))

            for red in reductions:
                if new := [v for v in staged if id(v) in reads[id(red)] and id(v) not in done]:
                    stage(new)
                fold(red)

            def finish(at: Callable[[Value], ir.Value]) -> None:
                for red in reductions:
                    self.vals[id(red)] = self.from_memory(b.load(at(red), typ=memory_type(red.dtype)), red.dtype)
                self.emit_scope(path, computed={id(red) for red in reductions})
                self.emit_stores()

            columns(finish)

        blocks = b.udiv(b.add(b.sub(hi, lo), I64(width - 1)), I64(width))
        self.counted_loop(f"{var.name}_block", I64(0), blocks, block)

    # ---- indices -------------------------------------------------------------------------

    def expr(self, e: Expr) -> ir.Value:
        b = self.b
        out: ir.Value = I64(e.const)
        # a stride's term first, as a row's start is outside the loop along the row: the adds inside it then add
        # the variable to what the loops outside computed (the order a size's constant strides sort in)
        for atom, k in sorted(e.terms, key=lambda term: not isinstance(term[0], Stride)):
            if isinstance(atom, Var):
                term = self.vars[atom]
            elif isinstance(atom, Stride):
                term = self.expr(atom.x)
                for name in atom.by:
                    term = b.mul(term, self.extent(self.loops[name]))
            else:
                term = self.index_division(atom)
            out = b.add(out, term if k == 1 else b.mul(term, I64(k)))
        return out

    def index_division(self, atom: Div | Mod) -> ir.Value:
        """An index's floor division or modulo by a constant c > 1 (`kernels/expr.py`): C's, corrected
        where the numerator can be negative."""
        b, c = self.b, I64(atom.c)
        x = self.expr(atom.x)
        if atom.x.vmin >= 0:
            return b.udiv(x, c) if isinstance(atom, Div) else b.urem(x, c)
        r = b.srem(x, c)
        negative = b.icmp_signed("<", r, I64(0))
        if isinstance(atom, Div):
            return b.sub(b.sdiv(x, c), b.zext(negative, I64))
        return b.select(negative, b.add(r, c), r)

    def bounds(self, bounds: Bounds) -> ir.Value:
        b = self.b
        ok: ir.Value = I1(1)
        for bound in bounds:
            if (holds := self.known.get(bound)) is not None:
                if not holds:
                    return I1(0)
                continue
            e = self.expr(bound.expr)
            if bound.expr.vmin < bound.lo:
                ok = b.and_(ok, b.icmp_signed(">=", e, I64(bound.lo)))
            if bound.expr.vmax >= bound.hi:
                ok = b.and_(ok, b.icmp_signed("<", e, I64(bound.hi)))
        return ok

    def gep(self, buf: int, index: Expr | None, store: bool, idx: ir.Value | None = None,
            count: int | ir.Value = 1) -> ir.Value:
        """The address of element `index` of buffer slot `buf` (`idx`: the value to take for it, if made
        already; `index` None for an index computed from data, whose value `idx` is) for a load or a store,
        guarded (see `FunctionBuilder.guard`) unless `index` lies inside the buffer for every value of the loop
        variables: a checked kernel keeps its loops inside their ranges (`render`), so such an access needs
        no test, and its loop vectorizes as it does unchecked."""
        param = self.kernel.buffers[buf]
        idx = self.expr(index) if idx is None else idx
        address = self.b.gep(self.bufs[buf], [idx], source_etype=memory_type(param.dtype), inbounds=True)
        if index is not None and 0 <= index.vmin and index.vmax < param.size:
            return address
        return self.guard(address, idx, buf, param.size, store, count)

    # ---- values ----------------------------------------------------------------------------

    def value(self, v: Value) -> ir.Value:
        b = self.b
        if v.op is VOp.LOAD:
            buf, index, bounds = v.arg
            return self.masked_load(v.dtype, buf, index, self.expr(index), self.bounds(bounds) if bounds else None)
        if v.op is VOp.GATHER:
            index, ok = (self.vals[id(s)] for s in v.srcs)
            return self.masked_load(v.dtype, v.arg, None, index, ok)
        if v.op is VOp.CONST:
            return self.constant(v.arg, v.dtype)
        if v.op is VOp.PARAM:
            return self.params[v.arg]
        if v.op is VOp.INDEX:
            return self.expr(v.arg)
        if v.op is VOp.VALID:
            return self.bounds(v.arg)
        srcs = [self.vals[id(s)] for s in v.srcs]
        if v.op is VOp.CAST:
            return self.cast(srcs[0], v.srcs[0].dtype, v.dtype)
        if v.op is VOp.BITCAST:  # a 16-bit float and an int16 are both i16
            t = llvm_type(v.dtype)
            return srcs[0] if srcs[0].type == t else b.bitcast(srcs[0], t)
        assert v.op is VOp.ALU
        operand_dtype = v.srcs[-1].dtype
        return self.alu(v.arg, operand_dtype, srcs)

    def masked_load(self, dtype: DType, buf: int, index: Expr | None, idx: ir.Value, ok: ir.Value | None) -> ir.Value:
        """Element `idx` of buffer slot `buf` (at `index`, None for an index from data; see `gep`) where `ok`
        holds (None: everywhere), 0 elsewhere."""
        b = self.b
        if isinstance(ok, ir.Constant):  # a bound decided where the loop is cut in pieces (see `pieces`)
            if not ok.constant:
                return self.constant(0, dtype)
            ok = None
        if ok is not None and self.fault_slot is None:
            # Loaded under a branch rather than from a selected address: LLVM's vectorizer makes the branch a
            # masked vector load where the address steps with the lane (a padded, rolled or concatenated
            # operand; a convolution's windows at the edges of the image), where a selected address would
            # take a gather, or no vectorizing at all.
            before = b.block
            with b.if_then(ok):
                loaded = self.from_memory(b.load(self.gep(buf, index, False, idx, 1), typ=memory_type(dtype)), dtype)
                inside = b.block
            value = b.phi(loaded.type)
            value.add_incoming(loaded, inside)
            value.add_incoming(self.constant(0, dtype), before)
            return value
        if ok is not None:
            idx = b.select(ok, idx, I64(0))
        # a masked load reads element 0 where it is off, which a checked kernel does not count as an access
        count = b.zext(ok, I64) if ok is not None and self.fault_slot is not None else 1
        val = self.from_memory(b.load(self.gep(buf, index, False, idx, count), typ=memory_type(dtype)), dtype)
        return b.select(ok, val, self.constant(0, dtype)) if ok is not None else val



def buffer_base(pointer: ir.Value) -> ir.Value:
    """The pointer an address is formed from: through its GEPs, to a buffer's pointer where it is one."""
    while isinstance(pointer, ir.GEPInstr):
        pointer = pointer.pointer
    return pointer


def render(kernel: Kernel, checked: bool = False) -> str:
    """LLVM IR text of `kernel`, legalized for `NATIVE` (as `runtime.compile_kernel` does), its function
    checked (see `FunctionBuilder.guard`) if `checked`."""
    return str(KernelRenderer(kernel, checked).render())
