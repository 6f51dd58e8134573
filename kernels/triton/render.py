"""Render a `kernels.ir.Kernel` as the source of a Triton module.

Layout. Let d be the deepest output loop any reduction depends on (for a
pointwise kernel, all of them). The first d output loops, flattened, are the
*rows*: each program of the launch grid takes XBLOCK of them along tensor axis
0. Every other scope opens one more tensor axis below the scope it lives in:
the *columns* (the remaining output loops, flattened) and each REDUCE's own
loops (flattened). A scope whose extent fits its block is computed in one block
(a persistent reduction); a longer one loops over blocks, a reduction carrying
an accumulator tile. Lanes past the end of an axis are masked: their loads are
masked, reductions see the identity instead, and their stores are skipped.

Values are computed where `loop_scopes` places them, so a softmax computes its
row max and row sum once per row, in one kernel, and the division per element.
Every tensor has the kernel's full rank (size 1 along the axes it does not
depend on), so Triton's broadcasting lines values of different scopes up. A
reduction that does not depend on the rows (`x / x.sum()`) is computed by every
program; with no rows at all (d = 0) the kernel is a single program.

A kernel reaches the renderer legalized (`kernels/legalize.py`): floor division
and modulo, NaN-propagating float max and min, saturating float-to-int casts,
round half to even, the bfloat16 conversions and the math functions Triton lacks
(expm1, log1p, tanh, tan, pow) arrive as core ops, which Triton has, and so does
its interpreter, which runs exactly the code the GPU compiles (its own bfloat16
conversions truncate: legalization's are by bits). Native here are the float16
conversions (the GPU's instructions). The NaN propagation of reductions is a
small `@triton.jit` helper written into the same module, from core `tl`
operations. Bools live in memory as bytes (the runtime passes uint8 pointers).
Signs of zero are set with bits, because Triton 3.6 folds a -0.0 constant, and
-x of 0.0, to 0.0. The kernel IR only loads, stores and converts the 16-bit
floats, computing in float32.

On a GPU, the operand of a division or modulo in an index goes through an identity `mov` in inline
assembly, which LLVM cannot see into, where the operand is small enough to fit in 16 bits. Knowing that
it is (a loop variable is a digit of a flat index, `(x // 7) % 8`), Triton 3.6's LLVM computes
`(o1 + 1) // 2` and the like in 8- and 16-bit lanes packed into 32-bit registers (`<4 x i8>` divisions
by 2 and 3, `add.s16x2`), and on an H100 some of that computes wrong addresses: a convolution's
column-to-image kernel read a neighbouring element in some lanes (`(o2 + 2) // 3` gave 1 for o2 = 4),
while its LLVM IR and its PTX, emulated on the CPU, compute the right ones (so ptxas 12.8, it seems).
Hidden, the operand keeps 32 (or 64) bits. Affine indexes, and operands too wide for 16 bits, are
left alone: Triton's analysis of them is what vectorizes contiguous loads and stores. The interpreter
runs no assembly and has no such bug: there the operands are plain.

`ValueRenderer` is the part that does not depend on the layout (values, index
expressions, stores, the module around them); the contraction template
(`gemm.py`) renders its operands and epilogue with it on its own tiles.
"""
from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from ..dtype import (
    DType,
    bfloat16,
    bool_,
    float16,
    float32,
    float64,
    half_bits,
    int8,
    int16,
    int32,
    int64,
    uint8,
    uint16,
    uint32,
    uint64,
)
from ..expr import Bounds, Div, Expr, Mod, Stride, Var
from ..ir import Alu, Kernel, ReduceOp, Store, Value, VOp, alu, free_vars, loop_scopes, read_slot, toposort
from ..legalize import Key, legalize_values

TL_TYPES: dict[DType, str] = {
    bool_: "tl.int1", int8: "tl.int8", int16: "tl.int16", int32: "tl.int32", int64: "tl.int64", uint8: "tl.uint8",
    uint16: "tl.uint16", uint32: "tl.uint32", uint64: "tl.uint64", float16: "tl.float16", bfloat16: "tl.bfloat16",
    float32: "tl.float32", float64: "tl.float64",
}

Shape = tuple[int, ...]  # () for a scalar; otherwise the kernel's full rank

# Library ops Triton renders itself: float16 conversions are GPU instructions (and NumPy's in the interpreter).
NATIVE: frozenset[Key] = frozenset({(float32, float16), (float16, float32)})


def memory_dtype(dtype: DType) -> DType:
    """The element type a buffer of `dtype` has in memory: bools are bytes."""
    return uint8 if dtype == bool_ else dtype


# The block of a generic kernel's loop over a size it is passed (see `_build_scopes`): two warps' lanes, so a
# small size wastes little and a large one loops; the tile's other axes take more rows (up to max_tile)
GENERIC_BLOCK = 64


@dataclass(frozen=True)
class Tiling:
    """Block-size limits, in elements; each a power of two."""

    # A row of up to 8192 elements is held whole (a persistent reduction): a layernorm or softmax of it reads
    # its row from memory once, where looping over blocks reads it again for each reduction and the output.
    max_block: int = 8192   # along one axis
    max_tile: int = 8192    # the product of the blocks a program holds at once
    max_xblock: int = 1024  # output rows per program

    def __post_init__(self) -> None:
        for name in ("max_block", "max_tile", "max_xblock"):
            value = getattr(self, name)
            if value < 1 or value & (value - 1):
                raise ValueError(f"Tiling.{name} must be a power of two, got {value}")


@dataclass(frozen=True)
class TritonSource:
    """A rendered kernel: launch `name` from `source` on `grid` programs of `num_warps` warps."""

    name: str
    source: str
    grid: int
    num_warps: int
    num_stages: int | None = None        # software pipelining depth of its loops; None: Triton's default
    slots: tuple[int, ...] | None = None  # the buffer slots the function takes, in order; None: all of them
    # a generic kernel's (`kernels/symbolic.py`): its grid is `grid` times its rows over `xblock`, its rows
    # `row_factor` times the sizes it is passed in the scalar parameters at `rows` (`programs`); a generic tl.dot
    # kernel's, times its columns too, the size at `cols`, over `yblock`
    rows: tuple[int, ...] = ()
    xblock: int = 1
    row_factor: int = 1
    cols: tuple[int, ...] = ()
    yblock: int = 1

    def programs(self, params: Sequence[bool | int | float]) -> int:
        """The launch's grid for these scalar parameters: `grid`, or a generic kernel's, following its rows (and
        columns)."""
        if not self.rows and not self.cols:
            return self.grid
        rows = -(-self.row_factor * math.prod(int(params[i]) for i in self.rows) // self.xblock) if self.rows else 1
        return self.grid * rows * -(-math.prod(int(params[i]) for i in self.cols) // self.yblock)


def product(factors: Iterable[int | str]) -> int | str:
    """The product of sizes, each a number or the code of a size a generic kernel is passed: a number where all
    are, else code."""
    factors = list(factors)
    if all(isinstance(f, int) for f in factors):
        return math.prod(factors)
    known = math.prod(f for f in factors if isinstance(f, int))
    return "(" + " * ".join([*(f for f in factors if isinstance(f, str)), *([str(known)] if known != 1 else [])]) + ")"


def pow2(n: int) -> int:
    """The smallest power of two >= n (1 for n <= 1)."""
    return 1 << max(0, n - 1).bit_length()


def _broadcast(*shapes: Shape) -> Shape:
    blocks = [s for s in shapes if s]
    return tuple(max(dims) for dims in zip(*blocks)) if blocks else ()


def literal(value: bool | float, dtype: DType) -> str:
    """A Python literal Triton reads exactly (floats by repr, non-finite ones by name)."""
    if dtype == bool_:
        return "True" if value else "False"
    if dtype.is_float:
        f = float(value)
        if math.isnan(f):
            return 'float("nan")'
        if math.isinf(f):
            return 'float("inf")' if f > 0 else 'float("-inf")'
        return repr(f)
    return str(int(value))


def needs_int64(exprs: Iterable[Expr], extents: Iterable[int]) -> bool:
    """Whether an index could pass 2**31 - 1: some expression, or some extent (a buffer's size, a loop
    rounded up to whole blocks). Then index arithmetic is int64, else int32."""

    def magnitude(e: Expr) -> int:
        total = abs(e.const)
        for atom, k in e.terms:
            inner = magnitude(atom.x) if isinstance(atom, (Div, Mod, Stride)) else 0
            total += abs(k) * max(abs(atom.vmin), abs(atom.vmax), inner)
        return total

    return max([*extents, *(magnitude(e) for e in exprs)], default=0) > 2**31 - 1


def identifier(name: str) -> str:
    """A Python identifier for a kernel name."""
    name = re.sub(r"\W", "_", name)
    return name if re.match(r"[A-Za-z_]", name) else f"k_{name}"


@dataclass(eq=False)
class _Scope:
    """A loop nest flattened onto one tensor axis: the rows, the columns, or one REDUCE's loops."""

    index: str                    # the flat index variable: "x", "c", "k0", ...
    level: int                    # the tensor axis it spans
    loops: tuple[Var, ...]
    parent: _Scope | None
    body: list[Value] = field(default_factory=list)
    block: int = 1
    # its loops' sizes multiplied: a number, or code where a generic kernel is passed one of them (`Kernel.extents`)
    extent: int | str = 1

    @property
    def size(self) -> int:
        return math.prod(v.size for v in self.loops)

    @property
    def looped(self) -> bool:
        return self.parent is not None and (isinstance(self.extent, str) or self.extent > self.block)

    @property
    def mask(self) -> str | None:
        return f"{self.index}mask" if isinstance(self.extent, str) or self.extent % self.block else None

    def chain(self) -> list[_Scope]:
        """This scope and its ancestors, rows first."""
        return [*(self.parent.chain() if self.parent else []), self]

    def inner_tile(self) -> int:
        """Elements of one block of this scope and its ancestors, the rows excluded."""
        return math.prod(s.block for s in self.chain()[1:])


# The helpers the rendered code may call, by name: (source, the helpers it calls).
def _extremum_helper(op: str, identity: str) -> tuple[str, tuple[str, ...]]:
    """The NaN-propagating `tl.max`/`tl.min` reduction helper: its source, and the helpers it needs."""
    # a zero result is +0.0 for max where any zero is +0.0, -0.0 for min where any zero is -0.0
    signed, sign = ("_signbit(x) == 0", "-1.0") if op == "max" else ("_signbit(x)", "1.0")
    return f'''
@triton.jit
def _reduce_{op}(x, AXIS: tl.constexpr):
    # NaN wins: tl.{op} may drop NaNs, so find them separately; and -0.0 < +0.0, which tl.{op} ignores
    nan = x != x
    m = tl.{op}(tl.where(nan, float("{identity}"), x), AXIS, keep_dims=True)
    chosen = tl.max(tl.where((x == 0) & ({signed}), 1, 0), AXIS, keep_dims=True) > 0
    m = tl.where(m == 0, _copysign(m, tl.where(chosen, -{sign}, {sign}).to(m.dtype)), m)
    return tl.where(tl.max(tl.where(nan, 1, 0), AXIS, keep_dims=True) > 0, float("nan"), m)
''', ("_signbit", "_copysign")


_HELPERS: dict[str, tuple[str, tuple[str, ...]]] = {
    "_idx_floordiv": ('''
@triton.jit
def _idx_floordiv(a, c):
    # floor division of an index by a positive constant: Triton's // truncates
    q = a // c
    return tl.where(a % c < 0, q - 1, q)
''', ()),
    "_idx_mod": ('''
@triton.jit
def _idx_mod(a, c):
    r = a % c
    return tl.where(r < 0, r + c, r)
''', ()),
    "_copysign": ('''
@triton.jit
def _copysign(r, x):
    # |r| with the sign bit of x, set by bits: Triton 3.6 turns a -0.0 constant, and -x of 0.0, into 0.0
    if r.dtype == tl.float32:
        bits = (r.to(tl.int32, bitcast=True) & 2147483647) | (x.to(tl.int32, bitcast=True) & -2147483648)
    else:
        bits = (r.to(tl.int64, bitcast=True) & 9223372036854775807) | (x.to(tl.int64, bitcast=True) & -9223372036854775808)
    return bits.to(r.dtype, bitcast=True)
''', ()),
    "_signbit": ('''
@triton.jit
def _signbit(x):
    if x.dtype == tl.float32:
        return x.to(tl.int32, bitcast=True) < 0
    else:
        return x.to(tl.int64, bitcast=True) < 0
''', ()),
    "_narrowed": ('''
@triton.jit
def _narrowed(x, y):
    # y, x converted to a narrower float, with the sign of a NaN kept: the GPU's conversion drops it
    if y.dtype == tl.float32:
        bits = y.to(tl.int32, bitcast=True) | tl.where(x != x, tl.where(_signbit(x), -2147483648, 0), 0)
    else:
        bits = y.to(tl.int16, bitcast=True) | tl.where(x != x, tl.where(_signbit(x), -32768, 0), 0).to(tl.int16)
    return bits.to(y.dtype, bitcast=True)
''', ("_signbit",)),
    "_reduce_max": _extremum_helper("max", "-inf"),
    "_reduce_min": _extremum_helper("min", "inf"),
    "_mul": ('''
@triton.jit
def _mul(a, b):
    return a * b
''', ()),
}


class ValueRenderer:
    """Emits Triton code for kernel IR values, given where each loop variable's index tensor lives.

    A subclass lays the loops out on tensor axes and answers `var_name`, `var_shape` and `lane_masks`;
    this class turns values (all but REDUCE, whose layout is the subclass's), index expressions and
    stores into lines of the function body, and the lines into a module.
    """

    def __init__(self, interpreted: bool) -> None:
        self.lines: list[str] = []
        self.indent = 1
        self.names: dict[int, str] = {}    # id(value) -> the Python name holding it
        self.shapes: dict[int, Shape] = {}  # id(value) -> its tensor shape
        self.helpers: list[str] = []
        self.counter = 0
        # by name: what a `Stride` multiplies by (a subclass's loops), a number or code (`product`)
        self.loop_sizes: dict[str, int | str] = {}
        self.wide = False  # index arithmetic in int64 rather than int32
        self.interpreted = interpreted  # for Triton's interpreter rather than a GPU (see the module docstring)

    def var_name(self, var: Var) -> str:
        """The Python name holding the loop variable's index tensor."""
        raise NotImplementedError

    def var_shape(self, var: Var) -> Shape:
        """The shape of the loop variable's index tensor."""
        raise NotImplementedError

    def lane_masks(self, vars: set[Var]) -> list[str]:
        """The masks of the lanes, among those these variables index, that lie past the end of a loop."""
        raise NotImplementedError

    # ---- emission ---------------------------------------------------------------------------------

    def emit(self, line: str) -> None:
        self.lines.append("    " * self.indent + line)

    def fresh(self, prefix: str = "v") -> str:
        self.counter += 1
        return f"{prefix}{self.counter - 1}"

    def helper(self, name: str) -> str:
        for dep in _HELPERS[name][1]:
            self.helper(dep)
        if name not in self.helpers:
            self.helpers.append(name)
        return name

    def computed(self, value: Value, given: dict[Value, tuple[str, Shape]]) -> str:
        """Emit `value`, legalized, over `given` stand-ins for code emitted already (a name and a shape each;
        see `stand_in`); the name holding it. How code around the kernel's values uses the IR's semantics
        (a looped reduction's combine, a contraction's conversions), each value emitted afresh here."""
        names, shapes = self.names, self.shapes
        self.names = {id(v): name for v, (name, _) in given.items()}
        self.shapes = {id(v): shape for v, (_, shape) in given.items()}
        try:
            (legal,) = legalize_values([value], NATIVE)
            for v in toposort([legal]):
                if id(v) not in self.names:
                    self.define(v, self.value(v))
            return self.names[id(legal)]
        finally:
            self.names, self.shapes = names, shapes

    def define(self, v: Value, code: str) -> None:
        name = self.fresh()
        if v.dtype == bool_ and not self.shapes.get(id(v)):
            # Triton's interpreter tags a comparison's result with its operands' type, and broadcasting
            # such a scalar later makes non-bool data; a select re-tags it (and folds away when compiled).
            # For the same reason no rendered expression combines comparisons with & | ^: they are selects.
            code = f"tl.where({code}, True, False)"
        self.emit(f"{name} = {code}")
        self.names[id(v)] = name

    def store(self, dtype: DType, store: Store, mask: str, mask_shape: Shape) -> None:
        """Emit `store` into a buffer of `dtype`, where `mask` (of `mask_shape`; "" for all lanes) holds."""
        value = self.names[id(store.value)]
        if dtype == bool_:
            value = f"tl.where({value}, 1, 0).to(tl.uint8)"
        if store.at is None:
            ptr = self.pointer(store.buf, store.index, _broadcast(self.shapes[id(store.value)], mask_shape))
            self.emit(f"tl.store({ptr}, {value}{f', mask={mask}' if mask else ''})")
            return
        # A scatter's store: at its computed index, where its mask and the lane mask hold. Updates of one
        # element from lanes of one block or from two blocks: a fold is atomic; of plain writes any one
        # stays, so those of a scatter in order come claimed (`kernels/claim.py`), one write per element.
        at, ok = self.names[id(store.at)], self.names[id(store.mask)]
        shape = _broadcast(*(self.shapes[id(v)] for v in store.roots()), mask_shape)
        ptr = f"tl.broadcast_to(b{store.buf} + {at}, {list(shape)})"
        where = f"{ok} & {mask}" if mask else ok
        if store.combine is None:
            self.emit(f"tl.store({ptr}, {value}, mask={where})")
        elif dtype in ATOMICS.get(store.combine, ((), ""))[0]:
            self.emit(f"{ATOMICS[store.combine][1]}({ptr}, {value}, mask={where})")
        else:
            self.fold_by_swaps(dtype, store, ptr, value, where, shape)

    def fold_by_swaps(self, dtype: DType, store: Store, ptr: str, value: str, where: str, shape: Shape) -> None:
        """A scatter's fold that no atomic op does, as a loop of compare-and-swaps on the elements' bits: each
        lane reads its element, folds its update in with the IR's combine (a float max or min propagates NaN)
        and swaps the result in where the element still holds what it read, else retries on what it found.
        Each round some lane of each element wins, so the loop ends. `tl.atomic_cas` takes no mask: the
        lanes off write the buffer's first element with itself (compare and swap 0 for 0), in its bounds."""
        if store.combine is None or dtype.itemsize not in (4, 8):  # narrower folds come widened (`_scatter`)
            raise NotImplementedError(f"the Triton backend cannot fold a scatter by "
                                      f"{store.combine.value if store.combine else None} into {dtype.name}")
        word = "tl.int32" if dtype.itemsize == 4 else "tl.int64"
        p, cur, pending, cmp, prev = (self.fresh(prefix) for prefix in ("ptr", "cur", "pending", "cmp", "prev"))
        self.emit(f"{p} = tl.where({where}, {ptr}, b{store.buf}).to(tl.pointer_type({word}), bitcast=True)")
        self.emit(f"{pending} = tl.broadcast_to({where}, {list(shape)})")
        self.emit(f"{cur} = tl.load({p}, mask={pending}, other=0)")
        self.emit(f"while {f'tl.max({pending}.to(tl.int32), axis=None) > 0' if shape else pending}:")
        self.indent += 1
        held = stand_in(f"{cur}.to({TL_TYPES[dtype]}, bitcast=True)", dtype)
        update = stand_in(value, dtype)
        folded = self.computed(alu(store.combine.combine(dtype), dtype, held, update),
                               {held: (held.arg, shape), update: (value, self.shapes[id(store.value)])})
        self.emit(f"{cmp} = tl.where({pending}, {cur}, 0)")
        self.emit(f"{prev} = tl.atomic_cas({p}, {cmp}, tl.where({pending}, {folded}.to({word}, bitcast=True), 0))")
        self.emit(f"{pending} = {pending} & ({prev} != {cmp})")
        self.emit(f"{cur} = {prev}")
        self.indent -= 1

    def pointer(self, buf: int, index: Expr, shape: Shape) -> str:
        """`b{buf} + index`, broadcast to `shape` where the index alone does not span it."""
        ptr = f"b{buf} + {self.expr(index)}"
        target = _broadcast(self.expr_shape(index), shape)
        return ptr if target == self.expr_shape(index) else f"tl.broadcast_to({ptr}, {list(target)})"

    def expr_shape(self, *exprs: Expr) -> Shape:
        return _broadcast(*(self.var_shape(v) for e in exprs for v in e.vars()))

    def module(self, description: str, name: str, args: list[str], params: tuple[DType, ...]) -> str:
        """The module's source: `description` as a comment, the helpers used, then `@triton.jit def name`
        over `args` (the buffers) and the scalar parameters, with the lines emitted so far as its body."""
        # Bools and integers narrower than 32 bits arrive as int32, and the PARAM's tl.full narrows them: Triton
        # 3.6's launcher parses an int8 argument as an unsigned byte, refusing every negative one, and on an H100
        # a bool (int1) argument of 1 arrived as False.
        args = args + [f"p{i}: {'tl.int32' if d.bits < 32 and not d.is_float else TL_TYPES[d]}"
                       for i, d in enumerate(params)]
        # Scalar parameters are data: without this Triton would compile a variant per value.
        unspecialized = f"(do_not_specialize={[f'p{i}' for i in range(len(params))]})" if params else ""
        comment = "\n".join(f"# {line}" for line in description.splitlines())
        parts = [comment, "", "import triton", "import triton.language as tl"]
        parts += ["from triton.language.extra import libdevice", ""] if "libdevice." in "\n".join(self.lines) else [""]
        parts += [_HELPERS[h][0] for h in self.helpers]
        parts += ["", f"@triton.jit{unspecialized}", f"def {name}({', '.join(args)}):", *self.lines, ""]
        return "\n".join(parts)

    # ---- values -----------------------------------------------------------------------------

    def const(self, value: bool | float, dtype: DType) -> str:
        if dtype in (float16, bfloat16):  # by bits: rounded through float32, a -0.0 kept (see `half_bits`)
            return f"tl.full([], {half_bits(float(value), dtype)}, tl.uint16).to({TL_TYPES[dtype]}, bitcast=True)"
        if dtype.is_float and value == 0 and math.copysign(1.0, value) < 0:  # Triton 3.6 makes -0.0 constants 0.0
            return f"{self.helper('_copysign')}({self.const(0.0, dtype)}, {self.const(-1.0, dtype)})"
        return f"tl.full([], {literal(value, dtype)}, {TL_TYPES[dtype]})"

    def expr(self, e: Expr) -> str:
        parts = []
        for atom, k in e.terms:
            if isinstance(atom, Var):
                term = self.var_name(atom)
            elif isinstance(atom, Stride):  # its loops' sizes: numbers, or a generic kernel's parameters
                term = f"({self.expr(atom.x)} * {product(self.loop_sizes[name] for name in atom.by)})"
            else:
                # Triton's // and % truncate: floor semantics need a fix-up only if x can be negative
                symbol, fix = ("//", "_idx_floordiv") if isinstance(atom, Div) else ("%", "_idx_mod")
                inner = self.expr(atom.x)
                if not self.interpreted and -2**15 <= atom.x.vmin and atom.x.vmax < 2**15:  # 16 bits would hold it
                    inner = self.opaque(inner)
                term = f"({inner} {symbol} {atom.c})" if atom.x.vmin >= 0 else f"{self.helper(fix)}({inner}, {atom.c})"
            parts.append(term if k == 1 else f"{term} * {k}")
        if e.const or not parts:
            parts.append(str(e.const))
        bare = len(parts) == 1 and (not e.terms or e.terms[0][1] == 1)  # a number, a name, a call or "(...)"
        return parts[0] if bare else "(" + " + ".join(parts) + ")"

    def opaque(self, code: str) -> str:
        """`code`, an index, through an identity that LLVM cannot see into (see the module docstring)."""
        move, constraint, dtype = ("mov.b64", "l", "tl.int64") if self.wide else ("mov.b32", "r", "tl.int32")
        return (f'tl.inline_asm_elementwise("{move} $0, $1;", "={constraint},{constraint}", [{code}], '
                f'dtype={dtype}, is_pure=True, pack=1)')

    def bounds(self, bounds: Bounds) -> str:
        parts = []
        for b in bounds:
            e = self.expr(b.expr)
            if b.expr.vmin < b.lo:
                parts.append(f"({e} >= {b.lo})")
            if b.expr.vmax >= b.hi:
                parts.append(f"({e} < {b.hi})")
        return " & ".join(parts) if parts else self.const(True, bool_)

    def value(self, v: Value) -> str:
        """The code for `v` (not a REDUCE); records its shape."""
        srcs = [self.names[id(s)] for s in v.srcs]
        self.shapes[id(v)] = _broadcast(self.expr_shape(*v.exprs()), *(self.shapes[id(s)] for s in v.srcs))
        if v.op is VOp.LOAD:
            return self.load(v)
        if v.op is VOp.CONST:
            return self.const(v.arg, v.dtype)
        if v.op is VOp.PARAM:
            return f"tl.full([], p{v.arg}, {TL_TYPES[v.dtype]})"
        if v.op is VOp.INDEX:
            if v.arg.is_const:
                return self.const(v.arg.const, int64)
            return self.expr(v.arg) if self.wide else f"{self.expr(v.arg)}.to(tl.int64)"
        if v.op is VOp.VALID:
            return self.bounds(v.arg)
        if v.op is VOp.CAST:
            return self.cast(srcs[0], v.srcs[0].dtype, v.dtype)
        if v.op is VOp.BITCAST:
            return f"{srcs[0]}.to({TL_TYPES[v.dtype]}, bitcast=True)"
        if v.op is VOp.GATHER:
            # The IR defines the index at the points of the loops only: a lane past the end of one, where
            # `valid` may hold, could reach outside the buffer.
            lanes = self.lane_masks(set(free_vars(toposort([v]))[id(v)]))
            ptr = f"tl.broadcast_to(b{v.arg} + {srcs[0]}, {list(self.shapes[id(v)])})"
            code = f"tl.load({ptr}, mask={' & '.join([srcs[1], *lanes])}, other=0)"
            return f"({code} != 0)" if v.dtype == bool_ else code
        return self.alu(v.arg, v.srcs[-1].dtype, srcs)

    def load(self, v: Value) -> str:
        buf, index, bounds = v.arg
        # Only the axes the address depends on can take it out of bounds.
        lanes = self.lane_masks({var for e in v.exprs() for var in e.vars()})
        parts = lanes + ([self.bounds(bounds)] if bounds else [])
        ptr = self.pointer(buf, index, self.expr_shape(*v.exprs()))
        code = f"tl.load({ptr}, mask={' & '.join(parts)}, other=0)" if parts else f"tl.load({ptr})"
        return f"({code} != 0)" if v.dtype == bool_ else code

    def cast(self, x: str, src: DType, dst: DType) -> str:
        """A core cast (see `kernels/legalize.py`), or a float16 conversion: Triton's own. A float
        arrives here in the range of its integer target."""
        if src == dst:
            return x
        if src.is_float and dst.is_float and dst.bits < src.bits:
            return f"{self.helper('_narrowed')}({x}, {x}.to({TL_TYPES[dst]}))"
        return f"{x}.to({TL_TYPES[dst]})"

    def alu(self, op: Alu, dt: DType, s: list[str]) -> str:
        """`op` on operands of dtype `dt` (a WHERE's operands: its second and third): a core op, or a
        library op of `NATIVE` (see `kernels/legalize.py`)."""
        fl = dt.is_float
        if fl and not self.interpreted and (op, dt) in LIBDEVICE_FUNCTIONS:
            return f"libdevice.{LIBDEVICE_FUNCTIONS[op, dt]}({', '.join(s)})"
        if op in UNARY_FUNCTIONS and fl:
            return f"{UNARY_FUNCTIONS[op]}({s[0]})"
        if op in OPERATORS:
            return f"({s[0]} {OPERATORS[op]} {s[1]})"
        if op is Alu.NEG:  # times -1, not -x: Triton 3.6 computes -x as 0 - x, which is +0.0 for 0.0
            return f"({s[0]} * -1)" if fl else f"(-{s[0]})"
        if op is Alu.NOT:  # xor with all ones, spelled out: Triton 3.6's interpreter cannot make unsigned ones
            return f"({s[0]} == 0)" if dt == bool_ else f"({s[0]} ^ {-1 if dt.is_signed else (1 << dt.bits) - 1})"
        if op is Alu.ABS and dt.is_signed:
            return f"tl.abs({s[0]})"
        if op is Alu.RECIP and fl:
            return f"tl.div_rn(1.0, {s[0]})" if dt == float32 else f"(1.0 / {s[0]})"
        if op is Alu.SQRT and fl:
            return f"tl.sqrt_rn({s[0]})" if dt == float32 else f"tl.sqrt({s[0]})"
        if op is Alu.DIV and fl:  # Triton's float32 / is approximate on the GPU
            return f"tl.div_rn({s[0]}, {s[1]})" if dt == float32 else f"({s[0]} / {s[1]})"
        if op in (Alu.MAX, Alu.MIN) and not fl:
            return f"tl.{'maximum' if op is Alu.MAX else 'minimum'}({s[0]}, {s[1]})"
        if op is Alu.WHERE:
            return f"tl.where({s[0]}, {s[1]}, {s[2]})"
        raise NotImplementedError(f"the Triton backend cannot render {op.label} on {dt} (not legalized?)")


# The folds of a scatter's store that Triton does atomically, and on which dtypes (whole words; a float max
# or min is not the IR's, which propagates NaN); the others are compare-and-swap loops (`fold_by_swaps`).
WORDS = (int32, int64, uint32, uint64)
ATOMICS = {ReduceOp.SUM: ((*WORDS, float32, float64), "tl.atomic_add"),
           ReduceOp.MAX: (WORDS, "tl.atomic_max"), ReduceOp.MIN: (WORDS, "tl.atomic_min")}

# Core ops as Triton's operators: `//` and `%` are C's on integers, `%` is fmod on floats, `>>` is
# arithmetic on signed integers; a float `!=` is unordered (true for NaN), the other comparisons ordered.
OPERATORS = {Alu.ADD: "+", Alu.SUB: "-", Alu.MUL: "*", Alu.TRUNCDIV: "//", Alu.REM: "%", Alu.SHL: "<<",
             Alu.SHR: ">>", Alu.AND: "&", Alu.OR: "|", Alu.XOR: "^", Alu.CMPLT: "<", Alu.CMPLE: "<=",
             Alu.CMPEQ: "==", Alu.CMPNE: "!="}
# What Triton computes approximately on a GPU, taken from CUDA's libdevice there (within 2 ulps, as the IR
# asks): float32 exp and exp2 (Triton's ex2.approx, several ulps off and flushing subnormal results to 0),
# and a float remainder (LLVM's frem expands to x - trunc(x/y)*y: inexact, and wrong at infinities).
LIBDEVICE_FUNCTIONS = {(Alu.EXP, float32): "exp", (Alu.EXP2, float32): "exp2",
                       (Alu.REM, float32): "fmod", (Alu.REM, float64): "fmod"}
UNARY_FUNCTIONS = {op: f"tl.{op.label}" for op in (Alu.EXP, Alu.EXP2, Alu.LOG, Alu.LOG2, Alu.SIN, Alu.COS, Alu.ERF,
                                                   Alu.FLOOR, Alu.CEIL)}


def stand_in(name: str, dtype: DType) -> Value:
    """A value for `ValueRenderer.computed` to compute with: code emitted already under `name`."""
    return Value(VOp.PARAM, dtype, (), name)  # a name, not a slot: no parameter is ever read for it


class _Renderer(ValueRenderer):
    """Lays a kernel's loops out on tensor axes (see the module docstring) and renders it."""

    def __init__(self, kernel: Kernel, tiling: Tiling, interpreted: bool):
        super().__init__(interpreted)
        self.kernel, self.tiling = kernel, tiling
        # a generic kernel's loops whose sizes it is passed (`Kernel.extents`), by the parameter holding each
        self.passed = {v: len(kernel.params) - len(kernel.extents) + k for k, v in enumerate(kernel.extents)}
        self.loop_sizes = {v.name: self.size_of(v) for v in kernel.loops} | \
            {r.name: self.size_of(r) for v in kernel.values() if v.op is VOp.REDUCE for r in v.arg[1]}
        self.values, paths = loop_scopes(kernel)
        self._build_scopes(paths)
        self.rank = 1 + max(s.level for s in self.scopes)
        # Loop variables get fresh names (output loops o0.., reduction loops r0..): IR names need not be identifiers.
        self.var_names: dict[Var, str] = {}
        self.var_scope: dict[Var, _Scope] = {}
        counts = {"o": 0, "r": 0}
        for s in [self.row, *([self.col] if self.col else []), *self.reduce_order]:
            prefix = "r" if s in self.reduce_order else "o"
            for var in s.loops:
                self.var_names[var] = f"{prefix}{counts[prefix]}"
                counts[prefix] += 1
                self.var_scope[var] = s
        self.used_vars = {v for val in self.values for e in val.exprs() for v in e.vars()}
        self.used_vars |= {v for store in kernel.stores for v in store.index.vars()}
        extents = [b.size for b in kernel.buffers] + [-(-s.size // s.block) * s.block for s in self.scopes]
        self.wide = needs_int64([s.index for s in kernel.stores] + [e for v in self.values for e in v.exprs()], extents)

    def size_of(self, var: Var) -> int | str:
        """A loop's size: its number, or the parameter a generic kernel is passed it in."""
        return f"p{self.passed[var]}" if var in self.passed else var.size

    # ---- layout ------------------------------------------------------------------------------

    def _build_scopes(self, paths: dict[int, tuple[Var, ...]]) -> None:
        k = self.kernel
        reductions = [v for v in self.values if v.op is VOp.REDUCE]
        depth = {var: d + 1 for d, var in enumerate(k.loops)}
        split = max((max((depth.get(v, 0) for v in paths[id(r)]), default=0) for r in reductions),
                    default=len(k.loops))
        self.row = _Scope("x", 0, k.loops[:split], None)
        cols = k.loops[split:]
        self.col = _Scope("c", 1, cols, self.row) if math.prod(v.size for v in cols) > 1 else None
        self.scopes = [self.row, *([self.col] if self.col else [])]
        owner: dict[Var, _Scope] = {}

        def scope_of(path: tuple[Var, ...]) -> _Scope:
            if not path:
                return self.row
            last = path[-1]
            if last in owner:
                return owner[last]
            return self.col if depth[last] > split and self.col else self.row

        # An inner reduction comes before the outer one in dependency order: open the outer first.
        self.reduce_scopes: dict[int, _Scope] = {}
        for red in reversed(reductions):
            parent = scope_of(paths[id(red)])
            scope = _Scope("", parent.level + 1, red.arg[1], parent)
            owner.update((var, scope) for var in red.arg[1])
            self.reduce_scopes[id(red)] = scope
            self.scopes.append(scope)
        self.reduce_order = [self.reduce_scopes[id(red)] for red in reductions]  # as the kernel IR lists them
        for i, scope in enumerate(self.reduce_order):
            scope.index = f"k{i}"
        for v in self.values:
            scope_of(paths[id(v)]).body.append(v)
        t = self.tiling
        for s in self.scopes:
            s.extent = product(self.size_of(v) for v in s.loops)
        # a generic kernel's loop of a size it is passed is `UNBOUNDED` long (`kernels/symbolic.py`): its scope
        # loops over blocks of GENERIC_BLOCK, lanes past the size masked. The largest block the tiling allows would
        # suit large sizes, but a small size (a column reduction's 37 rows) would then mask out all but a few of
        # 8192 lanes in every program, one program per output row
        for s in self.scopes[1:]:  # parents come first
            extent = GENERIC_BLOCK if any(v in self.passed for v in s.loops) else pow2(s.size)
            s.block = min(extent, t.max_block, max(1, t.max_tile // s.parent.inner_tile()))
        widest = max((s.inner_tile() for s in self.scopes), default=1)
        self.row.block = max(1, min(pow2(self.row.size), t.max_xblock, t.max_tile // widest))

    def tile(self, scope: _Scope) -> Shape:
        """The shape of one block of the scope: its blocks and its ancestors' along their axes."""
        shape = [1] * self.rank
        for s in scope.chain():
            shape[s.level] = s.block
        return tuple(shape)

    def axis(self, scope: _Scope) -> Shape:
        """The shape of the scope's index (and lane mask and loop variables): its block on its own axis."""
        shape = [1] * self.rank
        shape[scope.level] = scope.block
        return tuple(shape)

    def var_name(self, var: Var) -> str:
        return self.var_names[var]

    def var_shape(self, var: Var) -> Shape:
        return self.axis(self.var_scope[var])

    def lane_masks(self, vars: set[Var]) -> list[str]:
        # A value's variables all belong to scopes on the chain of the scope it is computed in: one per level.
        return [s.mask for s in sorted({self.var_scope[v] for v in vars}, key=lambda s: s.level) if s.mask]

    # ---- emission -------------------------------------------------------------------------------

    def render(self) -> TritonSource:
        k = self.kernel
        self.open_scope(self.row)
        # Without a column scope a store is emitted as soon as its value is computed: Triton 3.6's layout
        # pass (RemoveLayoutConversions) can fail to compile a reduction's result that is stored after
        # another reduction reads it. Not for a buffer the kernel also reads, which must not see the store.
        read = {slot for v in self.values if (slot := read_slot(v)) is not None}
        self.early_stores = [] if self.col is not None else [s for s in k.stores if s.buf not in read]
        late = [s for s in k.stores if all(s is not e for e in self.early_stores)]
        self.emit_body(self.row)
        if self.col is not None:
            self.in_scope(self.col, lambda: self.emit_stores(self.col, late))
        else:
            self.emit_stores(self.row, late + self.early_stores)
        name = identifier(k.name)
        source = self.module(f"Generated by lazytensor from this kernel IR:\n{k}", name,
                             [f"b{i}" for i in range(len(k.buffers))], k.params)
        tile = self.row.block * max(s.inner_tile() for s in self.scopes)
        num_warps = min(8, pow2(max(1, tile // 256)))
        fixed = math.prod(v.size for v in self.row.loops if v not in self.passed)
        rows = tuple(self.passed[v] for v in self.row.loops if v in self.passed)
        if rows:  # a generic kernel's: the grid follows the rows it is passed
            return TritonSource(name, source, 1, num_warps, rows=rows, xblock=self.row.block, row_factor=fixed)
        return TritonSource(name, source, self.grid(), num_warps)

    def grid(self) -> int:
        """The programs a launch of the kernel has (one with no size passed)."""
        return -(-self.row.size // self.row.block)

    def open_scope(self, scope: _Scope, offset: str | None = None) -> None:
        """Define the scope's flat index, lane mask and loop variables (if anything reads them)."""
        if not scope.mask and not any(var in self.used_vars for var in scope.loops):
            return
        ints = "tl.int64" if self.wide else "tl.int32"
        lanes = f"tl.arange(0, {scope.block})"
        if self.rank > 1:
            lanes += "[" + ", ".join(":" if i == scope.level else "None" for i in range(self.rank)) + "]"
        if scope is self.row:
            self.emit("pid = tl.program_id(0)")
            start = f"pid.to({ints}) * {scope.block}" if self.wide else f"pid * {scope.block}"
            self.emit(f"x = {start} + {lanes}")
        else:
            lanes = f"{lanes}.to(tl.int64)" if self.wide else lanes
            self.emit(f"{scope.index} = {offset} + {lanes}" if offset else f"{scope.index} = {lanes}")
        if scope.mask:
            self.emit(f"{scope.mask} = {scope.index} < {scope.extent}")
        for i, var in enumerate(scope.loops):
            if var not in self.used_vars:
                continue
            stride = self.divisor(product(self.size_of(v) for v in scope.loops[i + 1:]))
            value = scope.index if stride == 1 else f"{scope.index} // {stride}"
            if i > 0 and var.size > 1:  # the outermost variable needs no modulo
                size = self.divisor(self.size_of(var))
                value = f"{value} % {size}" if stride == 1 else f"({value}) % {size}"
            self.emit(f"{self.var_names[var]} = {value}")

    @staticmethod
    def divisor(size: int | str) -> int | str:
        """A size to divide a flat index by: a generic kernel's passed size at least 1, as the lanes of an empty
        scope, masked, divide too."""
        return size if isinstance(size, int) else f"tl.maximum({size}, 1)"

    def in_scope(self, scope: _Scope, body: Callable[[], None]) -> None:
        """Emit `scope`'s values, then `body()`, in one block or in a loop over blocks."""
        if scope.looped:
            offset = f"{scope.index}off"
            self.emit(f"for {offset} in range(0, {scope.extent}, {scope.block}):")
            self.indent += 1
            self.open_scope(scope, offset)
        else:
            self.open_scope(scope)
        self.emit_body(scope)
        body()
        if scope.looped:
            self.indent -= 1

    def emit_body(self, scope: _Scope) -> None:
        for v in scope.body:
            if v.op is VOp.REDUCE:
                self.emit_reduce(v)
            else:
                self.define(v, self.value(v))
            if scope is self.row and self.early_stores:
                self.emit_ready_stores()

    def emit_ready_stores(self) -> None:
        """Emit the early stores whose values are computed, each after the earlier stores into its buffer
        (a scatter's stores into one element come in order)."""
        ready, waiting, blocked = [], [], set()
        for s in self.early_stores:
            if s.buf not in blocked and all(id(r) in self.names for r in s.roots()):
                ready.append(s)
            else:
                waiting.append(s)
                blocked.add(s.buf)
        self.emit_stores(self.row, ready)
        self.early_stores = waiting

    def emit_stores(self, scope: _Scope, stores: Sequence[Store]) -> None:
        masks = [s for s in scope.chain() if s.mask]
        mask_shape = _broadcast(*(self.axis(s) for s in masks))
        for store in stores:
            self.store(self.kernel.buffers[store.buf].dtype, store, " & ".join(s.mask for s in masks), mask_shape)

    def emit_reduce(self, red: Value) -> None:
        scope = self.reduce_scopes[id(red)]
        op, src, dt = red.arg[0], red.srcs[0], red.dtype
        if scope.size == 0:
            self.shapes[id(red)] = ()
            self.define(red, self.const(op.identity(dt), dt))
            return
        ident = literal(op.identity(dt), dt)
        tile = self.tile(scope)

        def operand() -> str:
            """The source over the whole tile, lanes past the end holding the identity."""
            x = self.names[id(src)]
            if scope.mask:
                x = f"tl.where({scope.mask}, {x}, {ident})"
            shape = _broadcast(self.shapes[id(src)], self.axis(scope) if scope.mask else ())
            x = x if shape == tile else f"tl.broadcast_to({x}, {list(tile)})"
            name = self.fresh("t")
            self.emit(f"{name} = {x}")
            return name

        if scope.looped:
            acc = self.fresh("acc")
            self.emit(f"{acc} = tl.full({list(tile)}, {ident}, {TL_TYPES[dt]})")
            def combine() -> None:
                x = operand()
                partial, element = stand_in(acc, dt), stand_in(x, dt)
                combined = alu(op.combine(dt), dt, partial, element)
                self.emit(f"{acc} = {self.computed(combined, {partial: (acc, tile), element: (x, tile)})}")

            self.in_scope(scope, combine)
            total = acc
        else:
            total = ""

            def persistent() -> None:
                nonlocal total
                total = operand()
            self.in_scope(scope, persistent)
        self.shapes[id(red)] = self.tile(scope.parent)
        self.define(red, self.reduce_final(op, dt, total, scope.level))

    def reduce_final(self, op: ReduceOp, dt: DType, x: str, axis: int) -> str:
        if dt == bool_:  # any / all
            fn = "tl.max" if op in (ReduceOp.SUM, ReduceOp.MAX) else "tl.min"
            return f"{fn}(tl.where({x}, 1, 0), {axis}, keep_dims=True) != 0"
        if op is ReduceOp.PROD:
            return f"tl.reduce({x}, {axis}, {self.helper('_mul')}, keep_dims=True)"
        if dt.is_float and op is not ReduceOp.SUM:
            return f"{self.helper('_reduce_' + op.value)}({x}, {axis})"
        total = f"tl.{op.value}({x}, {axis}, keep_dims=True)"
        # tl.sum, tl.max and tl.min widen small integers to int32: back to the IR's dtype, whose sum wraps
        # and whose signedness the ops reading it follow (Triton refuses `%` of int32 by uint8)
        return f"{total}.to({TL_TYPES[dt]})" if dt.is_int and dt.bits < 32 else total


def render(kernel: Kernel, tiling: Tiling = Tiling(), interpreted: bool = False) -> TritonSource:
    """The Triton module for `kernel`, legalized for `NATIVE` (as `runtime.compile_kernel` does): one
    `@triton.jit` function (and the helpers it calls), for a GPU or (`interpreted`) Triton's interpreter.
    A generic kernel (`kernels/symbolic.py`) reads the sizes of its loops `Kernel.extents` names from its
    parameters, its grid (`TritonSource.programs`), masks and loops over blocks following them."""
    return _Renderer(kernel, tiling, interpreted).render()


def programs(kernel: Kernel, tiling: Tiling = Tiling()) -> int:
    """The programs a launch of `kernel`, whose sizes are its own, has: its rows over the rows of a program."""
    return _Renderer(kernel, tiling, False).grid()
