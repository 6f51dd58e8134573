"""The backend-neutral kernel IR.

A `Kernel` is a loop nest over its output (`loops`, outermost first) whose
`stores` write one value per output point. Values form a DAG of `Value` nodes:
loads through symbolic index expressions (`kernels.expr`), constants, scalar
parameters, ALU ops, casts and reductions. A `REDUCE` value owns its own loop
variables, so one kernel may hold several reductions, nested or side by side
(softmax is a max, then a sum that reads the max, then a division).

Where a value is computed is not written down: it follows from the variables
it reads. `loop_scopes` places every value in the innermost loop among those
variables, which hoists loop-invariant work (the row max of a softmax is
computed once per row, not once per element). Backends render that placement;
the scheduler uses `recomputed_reductions` to refuse fusions that would
recompute a reduction. A backend may hand a value from a reduction's loop to
the output loop that would compute it again, through the output buffer
(`shared_rows`): softmax then computes each exp once.

Semantics every backend must honour: integer FLOORDIV and MOD round toward
negative infinity (Python), and give 0 for a zero divisor; float MOD is
Python's remainder (sign of the divisor, zeros too), float FLOORDIV is
floor(a / b) where an operand is infinite or b zero; MAX/MIN propagate NaN; CMPNE is true
for NaN; ROUND rounds half to even; a float to int CAST saturates (NaN gives 0);
LSHIFT and RSHIFT are NumPy's shifts, defined for every count (one outside
[0, bits), a negative one included, shifts every bit out: 0, or -1 for a
negative value shifted right); ATAN2 is C's atan2, special values included.
`kernels/reference.py` is these semantics as an interpreter, with every op's
rule for every dtype and the readings it takes where this summary is silent.

Besides loop nests, five kernels of their own kind: a `Contraction` (a matmul-shaped sum for the
backend's template), a `Scatter` (a copy, then a loop nest over updates that write at indexes computed from
data, `Store.at`), a `Sort` (the stable order of rows of keys), a `Scan` (running sums of rows) and a
`LibraryCall` (a linear algebra library's routine on each matrix of a batch, `kernels/lapack.py`). A `gather`
value loads at an index computed from data.

Most of these are library semantics, not machine instructions. `kernels/legalize.py`
rewrites them into the core ops a machine has (TRUNCDIV and REM, the C operators;
shifts; BITCAST; selects), once for every backend: a backend renders what it
declares native and gets the rest legalized. The core ops with a precondition
(a nonzero divisor, an in-range shift) only come from legalization, which meets it.
"""
from __future__ import annotations

import hashlib
import math
import weakref
from collections.abc import Callable, Iterable
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, replace
from enum import Enum
from functools import cached_property
from typing import Any, NamedTuple

from .dtype import SHORT_NAMES, DType, bool_, int64
from .expr import Bounds, Expr, Var


class Alu(Enum):
    """Elementwise operations; the value is the arity."""

    __hash__ = object.__hash__  # members are singletons; Enum's own hash runs Python code

    NEG = ("neg", 1)
    NOT = ("not", 1)
    ABS = ("abs", 1)
    RECIP = ("recip", 1)
    EXP = ("exp", 1)
    EXP2 = ("exp2", 1)
    EXPM1 = ("expm1", 1)
    LOG = ("log", 1)
    LOG2 = ("log2", 1)
    LOG1P = ("log1p", 1)
    SQRT = ("sqrt", 1)
    SIN = ("sin", 1)
    COS = ("cos", 1)
    TAN = ("tan", 1)
    TANH = ("tanh", 1)
    ERF = ("erf", 1)
    FLOOR = ("floor", 1)
    CEIL = ("ceil", 1)
    ROUND = ("round", 1)
    TRUNC = ("trunc", 1)
    ADD = ("add", 2)
    SUB = ("sub", 2)
    MUL = ("mul", 2)
    DIV = ("div", 2)
    FLOORDIV = ("floordiv", 2)
    MOD = ("mod", 2)
    TRUNCDIV = ("truncdiv", 2)  # integers, rounding toward zero (C's /); the divisor is neither 0 nor, for MIN, -1
    REM = ("rem", 2)            # the remainder of TRUNCDIV, the dividend's sign (C's %, fmod); the same divisors
    SHL = ("shl", 2)            # integers; the shift is in [0, bits)
    SHR = ("shr", 2)            # arithmetic on signed integers, logical on unsigned; the shift is in [0, bits)
    POW = ("pow", 2)
    ATAN2 = ("atan2", 2)        # atan2(y, x): the angle of (x, y), in [-pi, pi]; the inverse trigonometric primitive
    LSHIFT = ("lshift", 2)      # integers, NumPy's: any count, SHL where it is in range
    RSHIFT = ("rshift", 2)      # integers, NumPy's (arithmetic on signed): any count, SHR where it is in range
    MAX = ("max", 2)
    MIN = ("min", 2)
    CMPLT = ("cmplt", 2)
    CMPLE = ("cmple", 2)
    CMPEQ = ("cmpeq", 2)
    CMPNE = ("cmpne", 2)
    AND = ("and", 2)
    OR = ("or", 2)
    XOR = ("xor", 2)
    WHERE = ("where", 3)

    @property
    def arity(self) -> int:
        return self.value[1]

    @property
    def label(self) -> str:
        return self.value[0]


COMPARISONS = frozenset({Alu.CMPLT, Alu.CMPLE, Alu.CMPEQ, Alu.CMPNE})
# Machine ops that only legalization (`kernels/legalize.py`) makes, each defined on part of its operands:
# no graph node records them, and the frontend offers none of them.
MACHINE_OPS = frozenset({Alu.TRUNCDIV, Alu.REM, Alu.SHL, Alu.SHR})


class ReduceOp(Enum):
    __hash__ = object.__hash__  # members are singletons; Enum's own hash runs Python code

    SUM = "sum"
    PROD = "prod"
    MAX = "max"
    MIN = "min"

    def combine(self, dtype: DType) -> Alu:
        """The op that folds one element into a partial result of `dtype`: bools fold by logic (any, all)."""
        if dtype == bool_:
            return Alu.OR if self in (ReduceOp.SUM, ReduceOp.MAX) else Alu.AND
        return {ReduceOp.SUM: Alu.ADD, ReduceOp.PROD: Alu.MUL, ReduceOp.MAX: Alu.MAX,
                ReduceOp.MIN: Alu.MIN}[self]

    def identity(self, dtype: DType) -> bool | int | float:
        if self is ReduceOp.SUM:
            return False if dtype == bool_ else 0
        if self is ReduceOp.PROD:
            return True if dtype == bool_ else 1
        if dtype == bool_:
            return self is ReduceOp.MIN
        if dtype.is_float:
            return -math.inf if self is ReduceOp.MAX else math.inf
        bits = dtype.bits
        lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if dtype.is_signed else (0, (1 << bits) - 1)
        return lo if self is ReduceOp.MAX else hi


class VOp(Enum):
    __hash__ = object.__hash__  # members are singletons; Enum's own hash runs Python code

    LOAD = "load"      # arg: (buffer slot, index Expr, valid Bounds)
    CONST = "const"    # arg: Python scalar
    PARAM = "param"    # arg: scalar parameter slot
    INDEX = "index"    # arg: Expr, read as an int64 value
    VALID = "valid"    # arg: Bounds, read as a bool value
    ALU = "alu"        # arg: Alu
    CAST = "cast"      # arg: None; the value's dtype is the target
    BITCAST = "bitcast"  # arg: None; the source's bits read as the value's dtype, of the same size
    REDUCE = "reduce"  # arg: (ReduceOp, loop Vars it owns)
    GATHER = "gather"  # arg: buffer slot; srcs: (index, valid): the element at a computed index (see `gather`)


_interned: weakref.WeakValueDictionary[tuple, Value] = weakref.WeakValueDictionary()


def _arg_key(arg: Any) -> Any:
    # 0.0 == -0.0 and True == 1 would merge different constants
    return (type(arg).__name__, repr(arg)) if isinstance(arg, (bool, int, float)) else arg


class Value:
    """One node of a kernel's expression DAG. Structurally equal values are the same object."""

    __slots__ = ("__weakref__", "arg", "dtype", "op", "srcs")

    def __new__(cls, op: VOp, dtype: DType, srcs: tuple[Value, ...] = (), arg: Any = None) -> Value:
        key = (op, dtype, tuple(id(s) for s in srcs), _arg_key(arg))
        if (hit := _interned.get(key)) is not None:
            return hit
        self = super().__new__(cls)
        self.op, self.dtype, self.srcs, self.arg = op, dtype, srcs, arg
        _interned[key] = self
        return self

    def exprs(self) -> list[Expr]:
        """The index expressions this value reads directly."""
        if self.op is VOp.LOAD:
            return [self.arg[1], *(b.expr for b in self.arg[2])]
        if self.op is VOp.INDEX:
            return [self.arg]
        if self.op is VOp.VALID:
            return [b.expr for b in self.arg]
        return []

    def __repr__(self) -> str:
        return f"Value({self.op.value}, {self.dtype})"


def bounds_of(v: Value) -> Bounds:
    """The bounds a value tests: a load's (where it reads), a validity mask's; none for the others."""
    return (v.arg[2] if v.op is VOp.LOAD else v.arg if v.op is VOp.VALID else ()) or ()


def _bounded(values: Iterable[Value]) -> set[Var]:
    """The loop variables a bound of one of `values` reads."""
    return {var for v in values for bound in bounds_of(v) for var in bound.expr.vars()}


def load(buf: int, dtype: DType, index: Expr, valid: Bounds) -> Value:
    return Value(VOp.LOAD, dtype, (), (buf, index, valid))


def gather(buf: int, dtype: DType, index: Value, valid: Value) -> Value:
    """The element of buffer `buf` at `index`, a computed int64 value, where the bool `valid` holds, and 0
    elsewhere, where nothing is read. Where `valid` holds, `index` lies inside the buffer: the kernel's
    maker guarantees it (lowering clamps an index that comes from data into its range), as it does for a
    load's `Expr` index; a checked kernel (`LT_CHECK_BOUNDS`) tests it."""
    return Value(VOp.GATHER, dtype, (index, valid), buf)


def read_slot(v: Value) -> int | None:
    """The buffer slot that `v` reads (a load's or a gather's), or None for a value that reads no buffer."""
    if v.op is VOp.LOAD:
        return v.arg[0]
    return v.arg if v.op is VOp.GATHER else None


def const(value: bool | float, dtype: DType) -> Value:
    return Value(VOp.CONST, dtype, (), value)


def param(slot: int, dtype: DType) -> Value:
    return Value(VOp.PARAM, dtype, (), slot)


def index(expr: Expr) -> Value:
    return Value(VOp.INDEX, int64, (), expr)


def valid(bounds: Bounds) -> Value:
    return Value(VOp.VALID, bool_, (), bounds)


def alu(op: Alu, dtype: DType, *srcs: Value) -> Value:
    if len(srcs) != op.arity:
        raise ValueError(f"{op.label} takes {op.arity} operands, got {len(srcs)}")
    return Value(VOp.ALU, dtype, srcs, op)


def cast(src: Value, dtype: DType) -> Value:
    return src if src.dtype == dtype else Value(VOp.CAST, dtype, (src,), None)


def bitcast(src: Value, dtype: DType) -> Value:
    if src.dtype.itemsize != dtype.itemsize or bool_ in (src.dtype, dtype):
        raise ValueError(f"cannot bitcast {src.dtype} to {dtype}")
    return src if src.dtype == dtype else Value(VOp.BITCAST, dtype, (src,), None)


def reduce(op: ReduceOp, src: Value, ranges: tuple[Var, ...]) -> Value:
    return Value(VOp.REDUCE, src.dtype, (src,), (op, ranges))


@dataclass(frozen=True, slots=True)
class BufferParam:
    """A buffer argument: `size` elements of `dtype`. The runtime provides `scratch` buffers itself."""

    dtype: DType
    size: int
    output: bool = False
    scratch: bool = False


@dataclass(frozen=True, slots=True)
class Store:
    """`value` written to element `index` of buffer `buf`, once per point of the kernel's loops.

    A scatter's store (`at` given, in the updates of a `Scatter`) writes instead at `at`, a computed int64
    index, and only where the bool `mask` holds, there inside the buffer; with `combine` it folds `value`
    into the element there (`buf[at] = buf[at] + value` for SUM) instead of replacing it. Its points write
    one after another in the row-major order of the loops, so where two write one element the later one's
    value is there last (or, combining, the fold is in that order)."""

    buf: int
    index: Expr
    value: Value
    at: Value | None = None
    mask: Value | None = None
    combine: ReduceOp | None = None

    def roots(self) -> list[Value]:
        """The values this store reads."""
        return [self.value] if self.at is None else [self.value, self.at, self.mask]


def toposort(roots: list, sources: Callable[[Any], Iterable] = lambda n: n.srcs) -> list:
    """Nodes reachable from `roots` through `sources` (`.srcs` by default), each after its sources.

    Depth-first with an explicit stack: a chain of 10,000 ops must not hit Python's recursion limit.
    """
    order: list = []
    seen: set[int] = set()
    for root in roots:
        if id(root) in seen:
            continue
        seen.add(id(root))
        stack = [(root, iter(sources(root)))]
        while stack:
            node, pending = stack[-1]
            for src in pending:
                if id(src) not in seen:
                    seen.add(id(src))
                    stack.append((src, iter(sources(src))))
                    break
            else:
                stack.pop()
                order.append(node)
    return order


# the largest count of a reduction's terms that `Kernel.counts` reads a constant as: every float dtype's rounding
# of a count below it is one rounding from the integer, as a cast of the count computes it
COUNT_MAX = 1 << 24


class Count(NamedTuple):
    """A constant that `Kernel.counts` reads as a count: the product of the sizes of `loops`, less `less`."""

    loops: tuple[Var, ...]
    less: int

    def __str__(self) -> str:
        return f"count of {', '.join(r.name for r in self.loops)}" + (f" less {self.less}" if self.less else "")


@dataclass(frozen=True)
class Kernel:
    """A loop nest over `loops` that writes `stores`; see the module docstring."""

    name: str  # "" names it from its ops, output shape and a hash of its body
    buffers: tuple[BufferParam, ...]
    params: tuple[DType, ...]
    loops: tuple[Var, ...]
    stores: tuple[Store, ...]
    # a generic kernel's (`kernels/symbolic.py`): the loops whose sizes a launch passes, in the last
    # `len(extents)` of `params` (int64s), in this order: its reductions' generic loops, and its outermost
    # loop where a count of it (`counts`) needs the whole size, not only the launch's range
    extents: tuple[Var, ...] = ()
    # a form `kernels/symbolic.py`'s `symbolized` told apart by the kernel of its structure at other sizes: its
    # loops whose sizes changed (by name); `sized_loops` and `equal_sizes` then take loops of a size an index reads
    # among them only, not a loop of a constant size that is the same by chance (a head's width 16 at t = 16)
    symbols: frozenset[str] | None = None

    def __post_init__(self) -> None:
        if not self.name:
            object.__setattr__(self, "name", self.default_name())

    def default_name(self, generic: tuple[Var, ...] = ()) -> str:
        """`{kind}_{ops}_{shape}_{hash8}`: readable in a profile, unique for a body. `generic` names the kernel
        that serves every size of those of its `sized_loops()` (see `erased_text`): an output loop's size among
        them reads `N`, the hash is of the erased text and of the sizes of the others."""
        kind = "red" if any(v.op is VOp.REDUCE for v in self.values()) else "ew"
        ops: list[str] = []
        for v in self.values():
            label = v.arg.label if v.op is VOp.ALU else v.arg[0].value if v.op is VOp.REDUCE else None
            if label and label not in ops:
                ops.append(label)
        sizes = ["N" if v in generic else str(v.size) for v in self.loops]
        return "_".join([kind, *ops[:4], "x".join(sizes), _digest(self, generic)])

    def values(self) -> list[Value]:
        """Every value the stores need, each after its sources."""
        return self._values

    @cached_property
    def _values(self) -> list[Value]:
        return toposort([v for s in self.stores for v in s.roots()])

    @property
    def numel(self) -> int:
        return math.prod(v.size for v in self.loops)

    def body_text(self) -> str:
        """The kernel without its name: the structural key caches compile by."""
        return self._body_text

    def erased_text(self) -> str:
        """`body_text()` with the sizes of `sized_loops()` and of every buffer printed `?`. Two kernels whose
        erased texts are equal differ in those sizes only: where an index, bound or constant depends on one
        of those sizes, it is written there and the texts differ. So code made for one with those loops'
        ranges runtime values, and no buffer size assumed, computes the other at its own sizes."""
        return self._erased_text

    def sized_loops(self) -> tuple[Var, ...]:
        """The loops whose sizes `erased_text` leaves out: the outermost output loop unless a bound (a pad's, a
        concatenation's) reads it, as a renderer may cut a loop at such bounds where its size is known; every
        reduction's loop, in the order of `values()`; and then each output loop that no bound reads of a size an
        index reads (a `Stride`'s loop's, `kernels/symbolic.py`'s `symbolized`): the loops of a length t that is a
        stride too."""
        return self._sized_loops

    def strides(self) -> frozenset[str]:
        """The names of the loops whose sizes the kernel's indexes read (their `Stride`s'; `kernels/symbolic.py`)."""
        return self._strides

    def equal_sizes(self) -> tuple[tuple[Var, ...], ...]:
        """The sized loops (`sized_loops`) grouped by size, where the kernel's indexes read a loop's size (a
        `Stride`'s): the erased text prints the groups, so the kernels of one erased text have the same loops of
        one size (a row's loops and the reductions' over it), which code generic over them may rely on (a
        softmax's exps handed from its sum to its output loop, `shared_rows`); none elsewhere."""
        return self._equal_sizes

    def counts(self) -> dict[int, Count]:
        """The constants (by id) that equal the number of terms of one of the kernel's reductions, its loops' sizes
        multiplied (a mean's divisor), with that reduction's loops (the first such reduction's), or else the
        size of its outermost output loop where that is a sized loop (`x - x.mean(0)` divides in a kernel over
        the batch, apart from its sum); and those that equal one less than such a count (a variance's divisor
        with Bessel's correction, `x.var(0, correction=1)`), where no count is that constant; counts that are 0
        or 1, or that a float may round, left out.
        `erased_text` prints each as the count it is: every kernel of an erased text holds its own count there,
        which generic code computes from the loops' sizes (`kernels/symbolic.py`). A constant that equals a count
        by chance is that count too, in this kernel: where the sizes differ, it is not one, and the texts differ."""
        return self._counts

    @cached_property
    def _counts(self) -> dict[int, Count]:
        values = self.values()
        loops = [red.arg[1] for red in values if red.op is VOp.REDUCE]
        loops += [(outer,) for outer in self.loops[:1] if outer in self.sized_loops()]
        terms: dict[int, Count] = {}
        for less in (0, 1):
            for ranges in loops:
                terms.setdefault(math.prod(r.size for r in ranges) - less, Count(ranges, less))
        return {id(v): terms[v.arg] for v in values
                if v.op is VOp.CONST and v.dtype != bool_ and not isinstance(v.arg, bool) and v.arg in terms
                and 2 <= v.arg <= COUNT_MAX}

    @cached_property
    def _strides(self) -> frozenset[str]:
        return frozenset().union(*(e.strides() for v in self.values() for e in v.exprs()),
                                 *(s.index.strides() for s in self.stores))

    @cached_property
    def _equal_sizes(self) -> tuple[tuple[Var, ...], ...]:
        return _grouped_by_size(self.sized_loops(), self.symbols) if self.strides() else ()

    @cached_property
    def _sized_loops(self) -> tuple[Var, ...]:
        values = self.values()
        bounded = _bounded(values)
        named = self.strides()
        outer = [v for v in self.loops[:1] if v not in bounded]
        reduced = [r for v in values if v.op is VOp.REDUCE for r in v.arg[1]]
        strides = {v.size for v in (*self.loops, *reduced) if v.name in named}
        strided = [v for v in self.loops if v.size in strides and v not in bounded and _symbol(v, self.symbols)]
        return tuple(dict.fromkeys([*outer, *reduced, *strided]))

    @cached_property
    def _body_text(self) -> str:
        return self._text(erased=False)

    @cached_property
    def _erased_text(self) -> str:
        return self._text(erased=True)

    def _text(self, erased: bool, reads: dict[int, tuple[Expr, Expr]] | None = None) -> str:
        """The body's text, erased where `erased`; the loads of `reads` (by id) printed as the row and column they
        read (`Contraction.product_reads`)."""
        names: dict[int, str] = {}
        hidden = frozenset(self.sized_loops() if erased else ())
        lines = [_signature(self.buffers, self.params, sizes=not erased),
                 "  for " + ", ".join(_loop_text(v, hidden) for v in self.loops),
                 *_describe_values(self.values(), names, hidden, self.counts() if erased else {}, reads)]
        if self.extents:
            lines.insert(1, "  sizes " + ", ".join(f"{v.name} = p{len(self.params) - len(self.extents) + k}"
                                                     for k, v in enumerate(self.extents)))
        if erased:
            lines[1:1] = _equal_sizes_line(self.equal_sizes())
        for s in self.stores:
            if s.at is None:
                lines.append(f"    b{s.buf}[{s.index}] = {names[id(s.value)]}")
            else:
                fold = f"{s.combine.value} " if s.combine is not None else ""
                lines.append(f"    b{s.buf}[{names[id(s.at)]}] {fold}= {names[id(s.value)]} if {names[id(s.mask)]}")
        return "\n".join(lines)

    def __str__(self) -> str:
        return f"kernel {self.name}{self.body_text()}"


@dataclass(frozen=True)
class Contraction:
    """A matmul-shaped kernel: `C[b, m, n] = sum_k a[b, m, k] * bv[b, k, n]`, then `epilogue(C)`.

    The scheduler finds a sum over a product whose operands each ignore one side's axes (matmul,
    batched matmul, tensordot, the weight gradient of a linear layer) and hands it to the backend's
    contraction template instead of a loop nest. `a` and `bv` are values over the loop variables
    `vars` = (batch, m, n, k); whatever elementwise work and views produce the operands (casts,
    scaling, transposes) is in them, and a backend evaluates them while packing its operand panels.
    C is row-major (batch, m, n) in buffer slot `product`: a scratch buffer (slot 1) read by
    `epilogue`, a Kernel over the same buffers that writes the output (bias, activation, any
    elementwise or reducing consumer); without an epilogue C is the output itself (slot 0).
    """

    name: str  # "" names it from its sizes and a hash of its body
    buffers: tuple[BufferParam, ...]
    params: tuple[DType, ...]
    vars: tuple[Var, Var, Var, Var]
    a: Value
    bv: Value
    epilogue: Kernel | None
    symbols: frozenset[str] | None = None  # of its m, n and k, as `Kernel.symbols`

    def __post_init__(self) -> None:
        if not self.name:
            object.__setattr__(self, "name", self.default_name())

    def default_name(self, generic: tuple[Var, ...] = ()) -> str:
        """`contract_{sizes}_{hash8}`, as `Kernel.default_name`: `generic` names the contraction that serves
        every size of those of its `sized_loops()`, which read `N`."""
        return f"contract_{'x'.join('N' if v in generic else str(v.size) for v in self.vars)}_{_digest(self, generic)}"

    @property
    def sizes(self) -> tuple[int, int, int, int]:
        """(batch, m, n, k)."""
        vb, vm, vn, vk = self.vars
        return vb.size, vm.size, vn.size, vk.size

    @property
    def dtype(self) -> DType:
        return self.a.dtype

    @property
    def product(self) -> int:
        """The buffer slot C is written to."""
        return 0 if self.epilogue is None else 1

    @property
    def numel(self) -> int:
        return math.prod(self.sizes)

    def body_text(self) -> str:
        """The contraction without its name: the structural key caches compile by."""
        return self._body_text

    def erased_text(self) -> str:
        """`body_text()` with the sizes of `sized_loops()` and of every buffer printed `?`, as `Kernel.erased_text`
        (the epilogue's its own), the epilogue's loads of the product as the rows and columns they read
        (`product_reads`): those are the same at every size of a structure, where the product's row length,
        its n, is not (`reading_rows_of`)."""
        return self._erased_text

    def product_reads(self) -> dict[int, tuple[Expr, Expr]]:
        """The epilogue's loads of the product (by id), each as the row and the column of the product it reads,
        `(index // n, index % n)` simplified over the epilogue's loops; for a single product (a batch of one)
        with an epilogue, else none."""
        return self._product_reads

    def reading_rows_of(self, n: Value) -> Kernel:
        """The epilogue, its loads of the product (`product_reads`) made gathers at `row * n + column`: for a
        product whose row length is `n`, a value the epilogue computes (a size it is passed, where a generic
        contraction's n varies)."""
        reads = self.product_reads()
        gathers = {k: gather(self.product, v.dtype, alu(Alu.ADD, int64, alu(Alu.MUL, int64, index(row), n),
                                                         index(col)), const(True, bool_))
                   for v in self.epilogue.values() if (k := id(v)) in reads for row, col in [reads[k]]}
        values = substitute([s.value for s in self.epilogue.stores], {}, gathers)
        return replace(self.epilogue, stores=tuple(replace(s, value=v) for s, v in zip(self.epilogue.stores, values)))

    @cached_property
    def _product_reads(self) -> dict[int, tuple[Expr, Expr]]:
        vb, _, vn, _ = self.vars
        if vb.size != 1 or self.epilogue is None:
            return {}
        return {id(v): (v.arg[1] // vn.size, v.arg[1] % vn.size) for v in self.epilogue.values()
                if v.op is VOp.LOAD and v.arg[0] == self.product}

    def sized_loops(self) -> tuple[Var, ...]:
        """The loops whose sizes `erased_text` leaves out: of a single product (a batch of one), each of m, n and k
        that no bound of an operand's loads reads, then the epilogue's (`Kernel.sized_loops`); of a batch, each of
        them that no bound reads of a size an operand's index reads (a `Stride`'s loop's, `kernels/symbolic.py`'s
        `symbolized`: attention's sequence length, a stride of its batch of heads), then, where there is one, the
        epilogue's (its indexes `symbolized` too: the product's strides, a transpose's of attention's gradient)."""
        return self._sized_loops

    def strides(self) -> frozenset[str]:
        """The names of the loops whose sizes the operands' indexes read (their `Stride`s'; `kernels/symbolic.py`)."""
        return self._strides

    def equal_sizes(self) -> tuple[tuple[Var, ...], ...]:
        """The sized loops grouped by size, where the operands' indexes read a loop's size, as `Kernel.equal_sizes`:
        generic code reads one size for the loops of one group (an L x L product's m and n)."""
        return _grouped_by_size(self.sized_loops(), self.symbols) if self.strides() else ()

    @cached_property
    def _strides(self) -> frozenset[str]:
        return frozenset().union(*(e.strides() for v in toposort([self.a, self.bv]) for e in v.exprs()))

    @cached_property
    def _sized_loops(self) -> tuple[Var, ...]:
        vb, *axes = self.vars
        bounded = _bounded(toposort([self.a, self.bv]))
        if vb.size != 1:
            strides = {var.size for var in axes if var.name in self.strides()}
            strided = tuple(var for var in axes if var.size in strides and var not in bounded and _symbol(var, self.symbols))
            # an epilogue's loops over the batch and the product's strides: sized where it was `symbolized` too
            return (*strided, *self.epilogue.sized_loops()) if strided and self.epilogue is not None else strided
        return (*(var for var in axes if var not in bounded),
                *(self.epilogue.sized_loops() if self.epilogue is not None else ()))

    @cached_property
    def _body_text(self) -> str:
        return self._text(erased=False)

    @cached_property
    def _erased_text(self) -> str:
        return self._text(erased=True)

    def _text(self, erased: bool) -> str:
        names: dict[int, str] = {}
        vb, vm, vn, vk = self.vars
        hidden = frozenset(self.sized_loops() if erased else ())
        m, n, k = ("?" if var in hidden else var.size for var in (vm, vn, vk))
        lines = [_signature(self.buffers, self.params, sizes=not erased),
                 (f"  b{self.product}[({vb}*{m} + {vm})*{n} + {vn}] = sum over {vk} < {k} of a*b,"
                  f" for {vb} < {vb.size}, {vm} < {m}, {vn} < {n}"),
                 *_describe_values(toposort([self.a, self.bv]), names, hidden),
                 f"    a = {names[id(self.a)]}, b = {names[id(self.bv)]}"]
        if erased:
            lines[1:1] = _equal_sizes_line(self.equal_sizes())
        if self.epilogue is not None:
            text = self.epilogue._text(True, self.product_reads()) if erased else self.epilogue.body_text()
            lines.append("  epilogue" + text.split("\n", 1)[1])
        return "\n".join(lines)

    def __str__(self) -> str:
        return f"contraction {self.name}{self.body_text()}"


@dataclass(frozen=True)
class Scatter:
    """A copy with some elements written at indexes that come from data: `base` writes the output (slot 0),
    every element, then `updates`, a loop nest over the updates, writes some of them again through the
    scatter stores (`Store.at`) into slot 0, in order (see `Store`), or, `distinct`, in any order. Both take
    the same buffers and parameters. The scheduler makes one for `x[i] = v`, `index_put`, `scatter` and `scatter_add`, and for
    the gradient of a gather."""

    name: str  # "" names it from its output size and a hash of its body
    buffers: tuple[BufferParam, ...]
    params: tuple[DType, ...]
    base: Kernel
    updates: Kernel
    distinct: bool = False  # no two updates write one element: they may land in any order, side by side

    def __post_init__(self) -> None:
        if not self.name:
            digest = hashlib.sha256(self.body_text().encode()).hexdigest()[:8]
            object.__setattr__(self, "name", f"scatter_{self.buffers[0].size}_{digest}")

    @property
    def numel(self) -> int:
        return self.base.numel + self.updates.numel

    def body_text(self) -> str:
        """The scatter without its name: the structural key caches compile by."""
        return self._body_text

    @cached_property
    def _body_text(self) -> str:
        updates = "  distinct updates" if self.distinct else "  updates"
        return "\n".join([_signature(self.buffers, self.params), "  base" + self.base.body_text().split("\n", 1)[1],
                          updates + self.updates.body_text().split("\n", 1)[1]])

    def __str__(self) -> str:
        return f"scatter {self.name}{self.body_text()}"


@dataclass(frozen=True)
class Sort:
    """A stable argsort of each row: `rows` rows of `n` keys (buffer slot 1, row-major), and into slot 0 the
    int64 positions of each row's keys in order, ascending (or `descending`); or, `values`, the keys themselves
    in that order (of the keys' dtype, each with its own bits: -0.0 and 0.0, and NaNs' payloads, where the
    stable order puts them), and with `take` only those at these positions of each row (rows of `len(take)`:
    a selection, which needs no sort of the whole row). With `first`, only the first `first` positions (or keys)
    of each row's order (rows of `first`: a partial sort, as a top-k needs). Keys that compare equal keep their
    order (a stable sort); NaN comes after every number (before, descending), and -0.0 equals 0.0. The keys are
    integers or float32 or float64 (the frontend widens the others, exactly); the backends bring whatever scratch
    memory their sort needs."""

    name: str  # "" names it from its sizes, key dtype and direction
    buffers: tuple[BufferParam, ...]
    rows: int
    n: int
    descending: bool

    params: tuple[DType, ...] = ()
    values: bool = False  # the sorted keys into slot 0, not their positions
    take: tuple[int, ...] = ()  # with `values`, only the sorted keys at these positions of each row
    first: int = 0  # only the first `first` of each row's sorted positions (or keys); 0: all

    def __post_init__(self) -> None:
        if self.take and (self.first or not self.values):
            raise ValueError("Sort: `take` selects values, and not with `first`")
        if not 0 <= self.first <= self.n:
            raise ValueError(f"Sort: first={self.first} is outside [0, {self.n}]")
        if not self.name:
            order = "desc" if self.descending else "asc"
            kind = ("select" if self.take else "sort") if self.values else "argsort"
            top = f"top{self.first}_" if self.first else ""
            object.__setattr__(self, "name", f"{top}{kind}_{SHORT_NAMES[self.key_dtype]}_{order}_{self.rows}x{self.n}")

    @property
    def width(self) -> int:
        """The length of an output row."""
        return len(self.take) or self.first or self.n

    @property
    def key_dtype(self) -> DType:
        return self.buffers[1].dtype

    @property
    def numel(self) -> int:
        return self.rows * self.n

    def body_text(self) -> str:
        """The sort without its name: the structural key caches compile by."""
        order = "descending" if self.descending else "ascending"
        kind = "stable sort" if self.values else "stable argsort"
        at = f"[{', '.join(map(str, self.take))}]" if self.take else f"[:{self.first}]" if self.first else ""
        return f"{_signature(self.buffers, self.params)}\n  b0[r, :] = ({kind} {order} of b1[r, :]){at}, " \
               f"for r < {self.rows}, each of {self.n}"

    def __str__(self) -> str:
        return f"sort {self.name}{self.body_text()}"


@dataclass(frozen=True)
class Scan:
    """A running fold of each row: `rows` rows of `n` values, each value `inner` lanes wide (buffer slot 1,
    row-major: a (rows, n, inner) array, the fold along its middle axis), and into slot 0 (of the same dtype)
    `out[r, i, j] = op(src[r, 0, j], ..., src[r, i, j])`, the cumulative sum (or product, max, min) in the
    dtype: integers wrap, floats round at each fold, which a backend may associate in any order (a long row
    is scanned in chunks, then each chunk offset by the fold of the chunks before it). Lanes let a fold
    along an axis that is not the last read and write the array where it lies, not moved to the end and back."""

    name: str  # "" names it from its op, dtype and sizes
    buffers: tuple[BufferParam, ...]
    rows: int
    n: int
    op: ReduceOp
    inner: int = 1

    params: tuple[DType, ...] = ()

    def __post_init__(self) -> None:
        if not self.name:
            dt = SHORT_NAMES[self.buffers[0].dtype]
            lanes = f"x{self.inner}" if self.inner != 1 else ""
            object.__setattr__(self, "name", f"scan_{self.op.value}_{dt}_{self.rows}x{self.n}{lanes}")

    @property
    def dtype(self) -> DType:
        return self.buffers[0].dtype

    @property
    def numel(self) -> int:
        return self.rows * self.n * self.inner

    def body_text(self) -> str:
        """The scan without its name: the structural key caches compile by."""
        return f"{_signature(self.buffers, self.params)}\n  b0[r, i, j] = {self.op.value} of b1[r, :i + 1, j], " \
               f"for r < {self.rows}, i < {self.n}, j < {self.inner}"

    def __str__(self) -> str:
        return f"scan {self.name}{self.body_text()}"


@dataclass(frozen=True)
class LibraryCall:
    """A routine of a linear algebra library (LAPACK's, a row of `kernels.lapack.ROUTINES`) run on each of
    `batch` matrices: operand i is the row-major stack of `batch` matrices of shape `shapes[i]` in buffer slot
    i + 1, and each matrix's results (`lapack.result_shapes`) go one after another into its row of slot 0, a
    row-major (batch, K) buffer. The routine's result for a matrix depends on that matrix alone, and a routine
    may fail on one (a singular matrix): the launch then reports the first such matrix
    (`lapack.LibraryError`). The operands and results are float32 or float64, the same for all. A backend
    without the library has no program for it."""

    name: str  # "" names it from its routine, dtype and sizes
    buffers: tuple[BufferParam, ...]
    routine: str
    batch: int
    shapes: tuple[tuple[int, int], ...]

    params: tuple[DType, ...] = ()

    def __post_init__(self) -> None:
        if not self.name:
            sizes = "_".join("x".join(map(str, (self.batch, *shape))) for shape in self.shapes)
            object.__setattr__(self, "name", f"{self.routine}_{SHORT_NAMES[self.dtype]}_{sizes}")

    @property
    def dtype(self) -> DType:
        return self.buffers[0].dtype

    @property
    def numel(self) -> int:
        return self.buffers[0].size

    def body_text(self) -> str:
        """The call without its name: the structural key caches compile by."""
        operands = ", ".join(f"b{i + 1}[r] ({m}x{n})" for i, (m, n) in enumerate(self.shapes))
        return f"{_signature(self.buffers, self.params)}\n  b0[r, :] = {self.routine}({operands}), for r < {self.batch}"

    def __str__(self) -> str:
        return f"library call {self.name}{self.body_text()}"


def _grouped_by_size(loops: tuple[Var, ...], symbols: frozenset[str] | None) -> tuple[tuple[Var, ...], ...]:
    """`loops` grouped by size, in order (`Kernel.equal_sizes`); those not among `symbols`, where it is given, each
    a group of its own."""
    groups: dict[int | Var, list[Var]] = {}
    for v in loops:
        groups.setdefault(v.size if _symbol(v, symbols) else v, []).append(v)
    return tuple(tuple(group) for group in groups.values())


def _symbol(loop: Var, symbols: frozenset[str] | None) -> bool:
    """Whether `loop` may be of a size that changed: every loop unless `symbols` names some (`Kernel.symbols`)."""
    return symbols is None or loop.name in symbols


def _equal_sizes_line(groups: tuple[tuple[Var, ...], ...]) -> list[str]:
    """The erased text's line that pins which sized loops have one size (`Kernel.equal_sizes`), if any do."""
    same = [group for group in groups if len(group) > 1]
    return ["  equal sizes " + "; ".join(" ".join(v.name for v in group) for group in same)] if same else []


def _digest(kernel: Kernel | Contraction, generic: tuple[Var, ...]) -> str:
    """The hash in a kernel's name (`Kernel.default_name`): of its body, or where it is generic over the loops
    `generic`, of its erased text and the sizes of its other sized loops."""
    text = kernel.erased_text() + "\n  sizes " + ", ".join(f"{v.name} < {'N' if v in generic else v.size}"
                                                        for v in kernel.sized_loops()) if generic else kernel.body_text()
    return hashlib.sha256(text.encode()).hexdigest()[:8]


def _signature(buffers: tuple[BufferParam, ...], params: tuple[DType, ...], sizes: bool = True) -> str:
    bufs = ", ".join(f"b{i}: {SHORT_NAMES[b.dtype]}[{b.size if sizes else '?'}]{' out' if b.output else ''}"
                     f"{' scratch' if b.scratch else ''}" for i, b in enumerate(buffers))
    return f"({bufs}{''.join(f', p{i}: {SHORT_NAMES[d]}' for i, d in enumerate(params))})"


def _loop_text(var: Var, hidden: frozenset[Var]) -> str:
    """`var < size`, the size `?` where it is `hidden` (`Kernel.erased_text`)."""
    return f"{var.name} < {'?' if var in hidden else var.size}"


def _describe_values(values: list[Value], names: dict[int, str], hidden: frozenset[Var] = frozenset(),
                     counts: dict[int, Count] | None = None,
                     reads: dict[int, tuple[Expr, Expr]] | None = None) -> list[str]:
    """One line per value, naming each in `names` so later lines can refer to it; the sizes of the loops in
    `hidden` printed `?`, the constants of `counts` (`Kernel.counts`) as the counts they are, the loads of
    `reads` as the row and column they read."""
    lines = []
    for v in values:
        names[id(v)] = name = f"v{len(names)}"
        if counts and id(v) in counts:
            text = str(counts[id(v)])
        elif reads and id(v) in reads:
            text = f"load b{v.arg[0]}[row {reads[id(v)][0]}, column {reads[id(v)][1]}]{_if(v.arg[2])}"
        else:
            text = _describe(v, names, hidden)
        lines.append(f"    {name}: {SHORT_NAMES[v.dtype]} = {text}")
    return lines


def _if(bounds: Bounds) -> str:
    """A load's bounds, as its line prints them."""
    return f" if {' and '.join(map(str, bounds))}" if bounds else ""


def _describe(v: Value, names: dict[int, str], hidden: frozenset[Var] = frozenset()) -> str:
    srcs = " ".join(names[id(s)] for s in v.srcs)
    if v.op is VOp.LOAD:
        buf, idx, bounds = v.arg
        return f"load b{buf}[{idx}]{_if(bounds)}"
    if v.op is VOp.CONST:
        return f"const {v.arg!r}"
    if v.op is VOp.PARAM:
        return f"param p{v.arg}"
    if v.op is VOp.INDEX:
        return f"index {v.arg}"
    if v.op is VOp.VALID:
        return "valid " + " and ".join(map(str, v.arg))
    if v.op is VOp.ALU:
        return f"{v.arg.label} {srcs}"
    if v.op is VOp.CAST:
        return f"cast {srcs}"
    if v.op is VOp.BITCAST:
        return f"bitcast {srcs}"
    if v.op is VOp.GATHER:
        index, ok = (names[id(s)] for s in v.srcs)
        return f"gather b{v.arg}[{index}] if {ok}"
    op, ranges = v.arg
    return f"{op.value} {srcs} over " + ", ".join(_loop_text(r, hidden) for r in ranges)


def free_vars(values: list[Value]) -> dict[int, frozenset[Var]]:
    """For each value (by id) the loop variables it depends on, its own reduce loops excluded."""
    free: dict[int, frozenset[Var]] = {}
    for v in values:
        fv: set[Var] = set()
        for s in v.srcs:
            fv |= free[id(s)]
        for e in v.exprs():
            fv |= e.vars()
        if v.op is VOp.REDUCE:
            fv -= set(v.arg[1])
        free[id(v)] = frozenset(fv)
    return free


def loop_scopes(kernel: Kernel) -> tuple[list[Value], dict[int, tuple[Var, ...]]]:
    """Place each value in the innermost loop among the variables it reads.

    Returns the values in dependency order and, for each (by id), its loop path:
    the chain of loop variables from the outermost output loop down to the loop
    whose body computes it. A REDUCE's own loops open inside its path.
    """
    values = kernel.values()
    free = free_vars(values)
    var_path = {var: kernel.loops[:d + 1] for d, var in enumerate(kernel.loops)}
    scopes: dict[int, tuple[Var, ...]] = {}

    def place(v: Value) -> tuple[Var, ...]:
        return max((var_path[var] for var in free[id(v)]), key=len, default=())

    # A reduce nested in another reads the outer one's loop variables, and comes
    # before it in dependency order: place reductions outermost first.
    for red in reversed([v for v in values if v.op is VOp.REDUCE]):
        scopes[id(red)] = place(red)
        ranges = red.arg[1]
        for k, var in enumerate(ranges):
            var_path[var] = scopes[id(red)] + ranges[:k + 1]
    for v in values:
        scopes[id(v)] = place(v)
    return values, scopes


def recomputed_reductions(kernel: Kernel) -> list[Value]:
    """Reductions that the loop nest would recompute for loops they do not depend on."""
    values, scopes = loop_scopes(kernel)
    free = free_vars(values)
    return [v for v in values if v.op is VOp.REDUCE
            and any(var.size > 1 and var not in free[id(v)] for var in scopes[id(v)])]


@dataclass(frozen=True)
class SharedRow:
    """A value of the innermost output loop that a reduction's loop computes too (see `shared_rows`)."""

    value: Value      # computed in the innermost output loop
    twin: Value       # the same value in the reduction's loop: its loop variables for the output loop's
    reduction: Value
    store: Store      # the store whose buffer carries it from the reduction's loop to the output loop
    index: Expr       # the store's index at the reduction's loop variables: where the twin is written


def shared_rows(kernel: Kernel, cost: Callable[[Value], int]) -> list[SharedRow]:
    """Values that the output loops recompute element by element after a reduction's loop computed them.

    In softmax, `exp(x - max)` of a row is summed by the row's sum and then divided by it in the output
    loop, so each exp is computed twice. A backend may write the reduction loop's value into the output
    buffer, at the element the output loop stores later, and load it there instead of computing it
    again. That takes a reduction placed in the output loops outside the innermost ones, whose own loops
    match those inner output loops in order and size; a value of the innermost output loop that is a
    value of the reduction's loop with the one set of variables read as the other; and an output buffer
    of the value's dtype, stored at the row-major index of the output loops (each element once). It
    also takes output buffers that overlap no other buffer, as every backend's runtime allocates them.

    `cost` says what computing a value itself costs (0: not worth a store and a load). Each store carries
    at most one value: the costliest to compute, with all it reads in the innermost output loop.
    """
    values, scopes = loop_scopes(kernel)
    loops, computed = kernel.loops, {id(v) for v in values}
    innermost = [v for v in values if scopes[id(v)] == loops and v.dtype != bool_]
    twins: dict[int, tuple[Value, Value, dict[Var, Expr]]] = {}  # id(value) -> (twin, reduction, mapping)
    for red in values:
        if red.op is not VOp.REDUCE:
            continue
        path, ranges = scopes[id(red)], red.arg[1]
        inner = loops[len(path):]
        # inside the outermost loop: a backend splits that one between threads, each writing its rows
        if not path or path != loops[:len(path)] or [v.size for v in inner] != [r.size for r in ranges]:
            continue
        mapping = dict(zip(inner, map(Expr.of, ranges)))
        for v, twin in zip(innermost, substitute(innermost, mapping)):
            if id(twin) in computed and scopes[id(twin)][:len(path) + 1] == path + ranges[:1]:
                twins.setdefault(id(v), (twin, red, mapping))

    def total_cost(v: Value) -> int:
        return sum(cost(u) for u in toposort([v], lambda n: [s for s in n.srcs if scopes[id(s)] == loops]))

    row_major = _row_major(kernel)
    shared: list[SharedRow] = []
    for store in kernel.stores:
        buf = kernel.buffers[store.buf]
        if not buf.output or store.at is not None or store.index != row_major:
            continue
        candidates = [v for v in toposort([store.value]) if id(v) in twins and v.dtype == buf.dtype
                      and all(v is not s.value for s in shared)]
        best = max(candidates, key=total_cost, default=None)
        if best is not None and total_cost(best) > 0:
            twin, red, mapping = twins[id(best)]
            shared.append(SharedRow(best, twin, red, store, store.index.substitute(mapping)))
    return shared


def _row_major(kernel: Kernel) -> Expr:
    """The row-major index of the kernel's output loops, each loop's size that its indexes read (`Kernel.strides`)
    written as they write it: a `Stride` over the first such loop of its size (`symbolic.symbolized`)."""
    named: dict[int, str] = {}
    for v in kernel.loops:
        if v.name in kernel.strides():
            named.setdefault(v.size, v.name)
    index, by, k = Expr.of(0), (), 1
    for v in reversed(kernel.loops):
        index = index + Expr.of(v).times(by) * k
        if v.size in named:
            by = (*by, named[v.size])
        else:
            k *= v.size
    return index


def substitute(roots: list[Value], mapping: dict[Var, Expr], replace: dict[int, Value] | None = None,
               loops: dict[Var, Var] | None = None) -> list[Value]:
    """`roots` rebuilt with the variables in `mapping` replaced in every index expression they read,
    and each value in `replace` (keyed by id) replaced as a whole, its sources not visited (`rebuilt`)."""
    new = rebuilt(roots, mapping, replace, loops)
    return [new[id(r)] for r in roots]


def rewritten(roots: list[Value], rewrite: Callable[[Expr], Expr]) -> list[Value]:
    """`roots` rebuilt with every index expression they read (a load's, its bounds', an index's, a mask's) made
    `rewrite(expression)`."""
    new = _rebuilt(roots, rewrite, frozenset(), {}, {})
    return [new[id(r)] for r in roots]


def rebuilt(roots: list[Value], mapping: dict[Var, Expr], replace: dict[int, Value] | None = None,
            loops: dict[Var, Var] | None = None) -> dict[int, Value]:
    """Every value of `roots` (by id) rebuilt as `substitute` says.

    Values that change neither way come back as themselves (values are interned). A reduction's
    own loop variables cannot be substituted: that would change what it reduces over; but those in `loops`
    are renamed, each loop then running over its new variable's range (`mapping` gives the new variable's
    expression for them); loops renamed to one variable become that one loop (`kernels/loop_merge.py`).
    """
    return _rebuilt(roots, lambda e: e.substitute(mapping), mapping.keys(), replace or {}, loops or {})


def _rebuilt(roots: list[Value], rewrite: Callable[[Expr], Expr], mapped: AbstractSet[Var], replace: dict[int, Value],
             loops: dict[Var, Var]) -> dict[int, Value]:
    """`rebuilt`, each index expression made `rewrite(expression)`, the variables `mapped` being replaced."""
    new: dict[int, Value] = {}
    for v in toposort(roots, lambda n: () if id(n) in replace else n.srcs):
        if id(v) in replace:
            new[id(v)] = replace[id(v)]
            continue
        arg = v.arg
        if v.op is VOp.LOAD:
            buf, idx, bounds = arg
            arg = (buf, rewrite(idx), _rewrite_bounds(bounds, rewrite))
        elif v.op is VOp.INDEX:
            arg = rewrite(arg)
        elif v.op is VOp.VALID:
            arg = _rewrite_bounds(arg, rewrite)
        elif v.op is VOp.REDUCE and (own := mapped & set(arg[1])):
            if not loops.keys() >= own:
                raise ValueError("cannot substitute a reduction's own loop variables")
            arg = (arg[0], tuple(dict.fromkeys(loops.get(r, r) for r in arg[1])))
        new[id(v)] = Value(v.op, v.dtype, tuple(new[id(s)] for s in v.srcs), arg)
    return new


def _rewrite_bounds(bounds: Bounds, rewrite: Callable[[Expr], Expr]) -> Bounds:
    # Not simplified: a backend tests only the sides an expression's range can cross, so a bound
    # that now always holds costs nothing, and one that never holds still reads as invalid.
    return tuple(b._replace(expr=rewrite(b.expr)) for b in bounds)
