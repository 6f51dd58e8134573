"""Lower one fused region of the lazy graph to a `kernels.ir.Kernel`.

The region is everything a realized node needs that is not itself realized (a
kernel boundary). Lowering walks from the output down: each node is visited
with the index its consumer reads it at. Elementwise ops become ALU values,
reductions open loops of their own, movement ops rewrite the index
(`views.source_index`), and boundaries become loads. Python scalars become
kernel parameters, so `x * 0.5` and `x * 0.25` compile to one kernel.

Values of the 16-bit floats are loaded, computed in float32 (`compute_dtype`)
and rounded where they are stored or cast: the kernel IR says so with casts, so
every backend computes and accumulates them in float32 (and a split reduction's
partials stay float32).

A region whose contraction the scheduler picked (a float sum over a product
whose operands each ignore the other's free axes: matmul, batched matmul,
tensordot, the weight gradient of a linear layer; see `contraction_axes`)
lowers to a `kernels.ir.Contraction` instead: its operands become values over
(batch, m, n, k) that the backend's template packs, and the rest of the
region becomes the template's epilogue, reading the product from a scratch
buffer.

The scheduler walks regions with the same index maps before any kernel is
built (`movement_source`, `reduce_source`), so what it decides and what is
lowered read every node at the same index.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Collection, Container, Sequence
from dataclasses import dataclass, field
from itertools import pairwise

from .dtypes import DType
from .graph import MOVEMENT, Node, Op
from .kernels import ir
from .kernels.dtype import bool_, compute_dtype, int64
from .kernels.expr import Atom, Bounds, Div, Expr, Var, flat_index, simplify_bounds, unflatten_index
from .kernels.loop_merge import merge_loops
from .kernels.philox import philox_rounds
from .views import source_index

Key = tuple[Node, tuple[Expr, ...], Bounds]

# Below these sizes a contraction stays a plain fused reduction: packing operands for a template
# costs more than it saves on a matrix-vector product or a tiny matmul. The work counts every product of
# a batch, once each product has some of its own: attention's heads (64 products of 32x32 over 16) are
# one template's batch, 5x faster than a reduction that reads the keys across their rows, while a batch of
# 8x16 products over 8 runs faster as a reduction.
MIN_CONTRACTION_M, MIN_CONTRACTION_N, MIN_CONTRACTION_K = 4, 16, 8
MIN_CONTRACTION_PRODUCT = 1 << 12
MIN_CONTRACTION_WORK = 1 << 16


@dataclass
class LoweredKernel:
    kernel: ir.Kernel | ir.Contraction | ir.Scatter | ir.Sort | ir.Scan | ir.LibraryCall
    inputs: list[Node]                                   # buffer slots in order, after output and scratch
    scalars: list[Node]                                  # SCALAR nodes in parameter slot order
    reductions: dict[int, Node] = field(default_factory=dict)  # id(value) -> the reduction it computes

    def loop_nests(self) -> list[ir.Kernel]:
        """The loop nests whose placement of reductions the scheduler checks."""
        k = self.kernel
        if isinstance(k, ir.Kernel):
            return [k]
        if isinstance(k, ir.Scatter):
            return [k.base, k.updates]
        if isinstance(k, (ir.Sort, ir.Scan, ir.LibraryCall)):
            return []
        vb, vm, vn, vk = k.vars
        nests = [ir.Kernel("", k.buffers, k.params, loops, (ir.Store(0, Expr.of(0), v),))
                 for loops, v in (((vb, vm, vk), k.a), ((vb, vk, vn), k.bv))]
        return nests + ([k.epilogue] if k.epilogue is not None else [])


@dataclass(frozen=True)
class Axes:
    """How a contraction's product axes map onto (batch, m, n, k), and its operands in that order."""

    batch: tuple[int, ...]
    rows: tuple[int, ...]
    cols: tuple[int, ...]
    red: tuple[int, ...]
    a: Node
    b: Node

    def sizes(self, shape: tuple[int, ...]) -> tuple[int, int, int, int]:
        return tuple(math.prod(shape[i] for i in axes)  # type: ignore[return-value]
                     for axes in (self.batch, self.rows, self.cols, self.red))

    def product_index(self, idx: tuple[Expr, ...], shape: tuple[int, ...]) -> Expr:
        """Where the reduction's element at `idx` lives in the row-major (batch, m, n) product."""
        b, m, n = (flat_index(tuple(idx[i] for i in axes), tuple(shape[i] for i in axes))
                   for axes in (self.batch, self.rows, self.cols))
        _, rows, cols, _ = self.sizes(shape)
        return (b * rows + m) * cols + n

    def operand_index(self, shape: tuple[int, ...], *vars: Var | None) -> tuple[Expr, ...]:
        """The product's index at (batch, m, n, k) = `vars`; a None variable reads position 0."""
        idx = [Expr.of(0)] * len(shape)
        for axes, var in zip((self.batch, self.rows, self.cols, self.red), vars):
            if var is not None:
                for i, e in zip(axes, unflatten_index(Expr.of(var), tuple(shape[i] for i in axes))):
                    idx[i] = e
        return tuple(idx)


def _in_output_order(axes: Axes, shape: tuple[int, ...]) -> Axes | None:
    """Where the template's (batch, m, n) product would not be laid out as the sum's result (a convolution's
    (N, OH, OW) rows before its output channels, which the result holds as (N, C, OH, OW)), the axes that
    make it so, if any: the fewest leading axes (one at least) taken as batch axes (an operand without them
    is read alike for each), then one operand's axes as the rows and the other's as the columns. The product is then the
    result itself, with no transposing epilogue."""
    def big(ix: tuple[int, ...]) -> list[int]:
        return [i for i in ix if shape[i] > 1]

    order = sorted(big(axes.batch + axes.rows + axes.cols))
    if order == big(axes.batch + axes.rows + axes.cols):
        return None
    # At least one axis taken as a batch axis: rows and columns only swapped are left as they are, for the
    # views that read the product transposed (`schedule._written_view`: a weight gradient's `(x.T @ g).T`).
    for s in range(max((order.index(i) + 1 for i in big(axes.batch)), default=0), len(order) - 1):
        sides = [i in axes.rows for i in order[s:]]
        if sum(x != y for x, y in pairwise(sides)) == 1 and any(i not in axes.batch for i in order[:s]):
            first = tuple(i for i in order[s:] if (i in axes.rows) == sides[0])
            second = tuple(i for i in order[s:] if (i in axes.rows) != sides[0])
            ones = tuple(i for i in axes.batch + axes.rows + axes.cols if shape[i] == 1)
            a, b = (axes.a, axes.b) if sides[0] else (axes.b, axes.a)
            return Axes((*ones, *order[:s]), first, second, axes.red, a, b)
    return None


def contraction_axes(red: Node, operand_deps: Sequence[Collection[int]], changed: Collection[int] = (),
                     varying: Collection[int] | None = None) -> Axes | None:
    """The (batch, m, n, k) view of `red`, a sum over a product (`red.srcs[0]`, a multiply fused into the
    sum's kernel), whose two operands depend on the product's axes `operand_deps`, if it is a contraction
    worth a template. An axis of a size in `changed` (sizes that changed since the graph was last scheduled,
    a training step's batch) counts as large where one of m, n and k has none: the next size may make the
    product worth the template, and a choice that flips with the size is a new kernel on each side of the
    threshold; a product whose every side changed is judged by its sizes. `varying`, where given, says which of
    the product's axes changed: an axis of a size in `changed` that did not is a constant of that size by chance
    (a head's width 16 at a length of 16)."""
    reduced = red.arg[1]
    product = red.srcs[0]
    shape = product.shape
    batch, rows, cols = [], [], []
    for i, n in enumerate(shape):
        if i in reduced:
            continue
        in_a, in_b = i in operand_deps[0], i in operand_deps[1]
        (rows if in_a and not in_b and n > 1 else cols if in_b and not in_a and n > 1 else batch).append(i)
    axes = Axes(tuple(batch), tuple(rows), tuple(cols), tuple(reduced), *product.srcs)
    # in the result's order where that still makes products worth the template (each one smaller)
    sized = tuple(MIN_CONTRACTION_WORK if n in changed and (varying is None or i in varying) else n
                  for i, n in enumerate(shape))
    if all(a != b for a, b in zip(axes.sizes(sized)[1:], axes.sizes(shape)[1:])):
        sized = shape
    return _worth_a_template(_in_output_order(axes, shape), sized) or _worth_a_template(axes, sized)


def _worth_a_template(axes: Axes | None, sizes: tuple[int, ...]) -> Axes | None:
    """`axes`, its rows and columns swapped where the template would vectorize along the shorter side, if
    its products are large enough for the template (the product's `sizes`)."""
    if axes is None:
        return None
    b, m, n, k = axes.sizes(sizes)
    if n < MIN_CONTRACTION_N <= m:  # the template vectorizes along n: give it the longer side
        axes = Axes(axes.batch, axes.cols, axes.rows, axes.red, axes.b, axes.a)
        m, n = n, m
    if m < MIN_CONTRACTION_M or n < MIN_CONTRACTION_N or k < MIN_CONTRACTION_K \
            or m * n * k < MIN_CONTRACTION_PRODUCT or b * m * n * k < MIN_CONTRACTION_WORK:
        return None
    return axes


def _narrow(value: ir.Value, dtype: DType) -> ir.Value:
    """`value` cast to `dtype`, skipping a round trip: a float widened from `dtype` narrows back exactly."""
    if value.op is ir.VOp.CAST and value.srcs[0].dtype == dtype and dtype.is_float and value.dtype.is_float \
            and value.dtype.itemsize > dtype.itemsize:
        return value.srcs[0]
    return ir.cast(value, dtype)


def _rounded(value: ir.Value, dtype: DType) -> ir.Value:
    """`value` cast to `dtype`, as a value of its compute dtype: a 16-bit float is rounded, then widened."""
    return ir.cast(_narrow(value, dtype), compute_dtype(dtype))


class _Lowerer:
    def __init__(self, roots: list[Node], boundaries: Container[Node], contraction: tuple[Node, Axes] | None,
                 operand_dtype: DType | None):
        self.roots = roots
        self.root = roots[0]
        self.boundaries = boundaries
        self.inputs: list[Node] = []
        self.scalars: list[Node] = []
        self.reductions: dict[int, Node] = {}
        self.memo: dict[Key, ir.Value] = {}
        self.n_reduce_vars = 0
        # The variables that stand for indexes read from data (a gather's), each with its value in the kernel:
        # the index clamped into the variable's range, so every address made from it stays in its buffer.
        self.data: dict[Var, ir.Value] = {}
        self.contraction = contraction
        self.operand_dtype = operand_dtype
        self.epilogue = contraction is not None and not self.writes_output(*contraction)
        self.first_input = len(roots) + self.epilogue

    def writes_output(self, node: Node, axes: Axes) -> bool:
        """Whether the contraction's row-major product is the kernel's output, element for element: the
        root is the reduction itself or views of it (a transpose, a reshape) that leave every element in
        place, as in the weight gradient of a linear layer, `(x.T @ g).T` of the transposed weight. And
        dtype for dtype: an output of 16-bit floats from float32 operands takes an epilogue that rounds."""
        root = self.root
        if root.numel != node.numel or self.operand_dtype != node.dtype:
            return False
        idx = tuple(Expr.of(Var(f"o{d}", n)) for d, n in enumerate(root.shape))
        out, at = flat_index(idx, root.shape), root
        while at is not node:
            if at is not root and (at.realized or at in self.boundaries):
                return False
            if at.op not in MOVEMENT and at.op is not Op.CONTIGUOUS:
                return False
            if at.op in MOVEMENT:
                idx, bounds = source_index(at.op, at.arg, at.srcs[0].shape, idx)
                if simplify_bounds(bounds) != ():
                    return False
            at = at.srcs[0]
        return out == axes.product_index(idx, node.shape)

    def slot(self, table: list[Node], node: Node) -> int:
        for i, n in enumerate(table):
            if n is node:
                return i
        table.append(node)
        return len(table) - 1

    def plan(self, key: Key) -> tuple[list[Key], Callable[[list[ir.Value]], ir.Value]]:
        """The keys this key's value needs, and how to build it from their values."""
        node, idx, bounds = key
        dtype = compute_dtype(node.dtype)
        if node not in self.roots and (node.realized or node in self.boundaries):
            if node.numel == 0:
                return [], lambda _: ir.const(0, dtype)
            slot = self.first_input + self.slot(self.inputs, node)
            index = flat_index(idx, node.shape)
            return [], lambda _: ir.cast(self.load(slot, node.dtype, index, bounds), dtype)
        op = node.op
        if op is Op.SCALAR:  # in the compute dtype, as PyTorch keeps a scalar with 16-bit floats in float32
            pslot = self.slot(self.scalars, node)
            return [], lambda _: ir.param(pslot, dtype)
        if op is Op.CONST:
            return [], lambda _: ir.const(node.arg, dtype)
        if op is Op.IOTA:
            return [], lambda _: _rounded(self.index_value(idx[0]), node.dtype)
        if op is Op.PHILOX:
            return [(s, idx, bounds) for s in node.srcs], lambda vals: philox_rounds(
                vals[:4], vals[4:], lambda alu, a, b: ir.alu(alu, dtype, a, b), lambda v: ir.const(v, dtype))[node.arg]
        if op is Op.ALU:
            return [(s, idx, bounds) for s in node.srcs], lambda vals: ir.alu(node.arg, dtype, *vals)
        if op is Op.CAST:
            # the source is rounded to its own dtype first: a 16-bit float computed in this kernel is float32
            src = node.srcs[0].dtype
            return [(node.srcs[0], idx, bounds)], lambda vals: _rounded(_rounded(vals[0], src), node.dtype)
        if op is Op.BITCAST:  # the bits as the source's dtype holds them: a 16-bit float is rounded first
            src = node.srcs[0].dtype
            return [(node.srcs[0], idx, bounds)], lambda vals: ir.cast(ir.bitcast(_narrow(vals[0], src), node.dtype),
                                                                       dtype)
        if op is Op.CONTIGUOUS or op is Op.CHECK:  # a check's flag is a kernel of its own (see schedule)
            return [(node.srcs[0], idx, bounds)], lambda vals: vals[0]
        if op is Op.REDUCE:
            if self.contraction is not None and node is self.contraction[0]:
                return [], lambda _: self.product_load(node, self.contraction[1], idx, bounds)
            return self.plan_reduce(node, idx, bounds)
        if op in MOVEMENT:
            read = movement_source(node, idx, bounds)
            if read is None:
                return [], lambda _: ir.const(0, dtype)
            key, pad = read
            if not pad:
                return [key], lambda vals: vals[0]
            return [key], lambda vals: ir.alu(ir.Alu.WHERE, dtype, self.valid_value(pad), vals[0], ir.const(0, dtype))
        if op is Op.GATHER:
            return self.plan_gather(node, idx, bounds)
        raise AssertionError(f"cannot lower {node}")

    def plan_gather(self, node: Node, idx: tuple[Expr, ...], bounds: Bounds):
        """The source read at the index the data gives along the gathered axis: a variable standing for it
        (its value the index, or 0 where it is outside the axis, see `data`) in the source's index, and 0
        where the index is outside the axis (where the frontend's check raises)."""
        src, index = node.srcs
        axis, size = node.arg, node.srcs[0].shape[node.arg]

        def build(vals: list[ir.Value]) -> ir.Value:
            raw = vals[0]
            var = Var(f"g{len(self.data)}", size)
            ok = _within(raw, 0, size)
            # one select (0 where the index is outside) rather than a clamp to [0, size): fewer instructions per
            # element keep more of a random gather's loads in flight
            self.data[var] = ir.alu(ir.Alu.WHERE, int64, ok, raw, ir.const(0, int64))
            inside = self.value((src, (*idx[:axis], Expr.of(var), *idx[axis + 1:]), bounds))
            return ir.alu(ir.Alu.WHERE, inside.dtype, ok, inside, ir.const(0, inside.dtype))

        return [(index, idx, bounds)], build

    # ---- index expressions that read data ----

    def reads_data(self, e: Expr | Atom) -> bool:
        return bool(self.data) and not (Expr.of(e).vars().isdisjoint(self.data))

    def load(self, slot: int, dtype: DType, index: Expr, bounds: Bounds) -> ir.Value:
        """A load of `slot`, or a gather where the index or its bounds read data."""
        if not self.reads_data(index) and not any(self.reads_data(b.expr) for b in bounds):
            return ir.load(slot, dtype, index, bounds)
        return ir.gather(slot, dtype, self.index_value(index), self.valid_value(bounds))

    def index_value(self, e: Expr) -> ir.Value:
        """`e` as an int64 value: an INDEX, plus the terms that read data computed from their values."""
        if not self.reads_data(e):
            return ir.index(e)
        out = ir.index(Expr.make(e.const, {a: k for a, k in e.terms if not self.reads_data(a)}))
        for atom, k in e.terms:
            if not self.reads_data(atom):
                continue
            if isinstance(atom, Var):
                term = self.data[atom]
            else:
                op = ir.Alu.FLOORDIV if isinstance(atom, Div) else ir.Alu.MOD
                term = ir.alu(op, int64, self.index_value(atom.x), ir.const(atom.c, int64))
            out = ir.alu(ir.Alu.ADD, int64, out, term if k == 1 else ir.alu(ir.Alu.MUL, int64, term, ir.const(k, int64)))
        return out

    def valid_value(self, bounds: Bounds) -> ir.Value:
        """Where `bounds` hold, as a bool value: a VALID, and the bounds that read data as comparisons."""
        out = ir.valid(tuple(b for b in bounds if not self.reads_data(b.expr)))
        for b in bounds:
            if self.reads_data(b.expr):
                out = ir.alu(ir.Alu.AND, bool_, out, _within(self.index_value(b.expr), b.lo, b.hi))
        return out

    def plan_reduce(self, node: Node, idx: tuple[Expr, ...], bounds: Bounds):
        ranges = reduce_vars(node, self.n_reduce_vars)
        self.n_reduce_vars += len(ranges)

        def build(vals: list[ir.Value]) -> ir.Value:
            value = ir.reduce(node.arg[0], vals[0], ranges)
            self.reductions[id(value)] = node
            return value

        return [reduce_source(node, idx, bounds, ranges)], build

    def product_load(self, node: Node, axes: Axes, idx: tuple[Expr, ...], bounds: Bounds) -> ir.Value:
        value = ir.load(1, compute_dtype(node.dtype), axes.product_index(idx, node.shape), bounds)
        self.reductions[id(value)] = node
        return value

    def value(self, root_key: Key) -> ir.Value:
        """Evaluate `root_key` with an explicit stack: fused regions may be thousands of ops deep."""
        memo, plans = self.memo, {}
        stack = [root_key]
        while stack:
            key = stack[-1]
            if key in memo:
                stack.pop()
                continue
            if key not in plans:
                plans[key] = self.plan(key)
            needs, build = plans[key]
            missing = [k for k in needs if k not in memo]
            if missing:
                stack.extend(missing)
                continue
            memo[key] = build([memo[k] for k in needs])
            stack.pop()
        return memo[root_key]

    def lower(self) -> LoweredKernel:
        if self.root.op is Op.SCATTER:
            return self.lower_scatter()
        if self.root.op is Op.SORT:
            return self.lower_sort()
        if self.root.op is Op.SCAN:
            return self.lower_scan()
        if self.root.op is Op.LINALG:
            return self.lower_library_call()
        shape = self.root.shape
        # An axis of size 1 opens no loop: the outermost loop, which threads share, is then one that has work
        # to share (a column statistic kept as a row, `x.max(0, keepdims=True)`), and the one a generic kernel
        # takes the size of (a linear layer's epilogue over a sequence of one batch, `(1, t, d)`).
        axes = {d: Var(f"o{d}", n) for d, n in enumerate(shape) if n != 1}
        loops = tuple(axes.values()) or (Var("o0", 1),)
        idx = tuple(Expr.of(axes[d]) if d in axes else Expr.of(0) for d in range(len(shape)))
        stores = ()  # the output's: of the whole kernel, or of the contraction's epilogue
        if self.contraction is None or self.epilogue:
            stores = tuple(ir.Store(slot, flat_index(idx, shape), _narrow(self.value((root, idx, ())), root.dtype))
                           for slot, root in enumerate(self.roots))
        operands = self.operands() if self.contraction is not None else None
        buffers = (*(ir.BufferParam(r.dtype, r.numel, output=True) for r in self.roots),
                   *(ir.BufferParam(n.dtype, n.numel) for n in self.inputs))
        params = tuple(compute_dtype(n.dtype) for n in self.scalars)
        reductions = self.reductions
        if self.contraction is not None and self.epilogue:
            node, axes = self.contraction
            product = ir.BufferParam(compute_dtype(node.dtype), math.prod(axes.sizes(node.srcs[0].shape)[:3]),
                                     scratch=True)
            buffers = (buffers[0], product, *buffers[1:])
        if operands is None or self.epilogue:
            # an epilogue's loops merged too: a linear layer's over `(b, t, d)` then runs over the product's rows,
            # `b*t`, the size a generic contraction passes (`kernels/symbolic.py`), not a `t` its indexes hold
            nest, rebuilt = merge_loops(ir.Kernel("", buffers, params, loops, stores))
            reductions = {id(rebuilt[k]): node for k, node in reductions.items() if k in rebuilt}
        if operands is None:
            kernel = nest
        else:
            vars, a, bv = operands
            kernel = ir.Contraction("", buffers, params, vars, a, bv, nest if self.epilogue else None)
        return LoweredKernel(kernel, list(self.inputs), list(self.scalars), reductions)

    def lower_scatter(self) -> LoweredKernel:
        """A SCATTER's `ir.Scatter`: its base written over the output's loops, then a loop nest over the
        updates that writes each at its place, where its index lies inside the axis (the frontend's check
        raises for one that does not)."""
        root = self.root
        base, index, updates = root.srcs
        axis, combine, distinct = root.arg
        size = root.shape[axis]
        loops = tuple(Var(f"o{d}", n) for d, n in enumerate(root.shape)) or (Var("o0", 1),)
        idx = tuple(Expr.of(v) for v in loops) if root.shape else ()
        base_store = ir.Store(0, flat_index(idx, root.shape), _narrow(self.value((base, idx, ())), root.dtype))
        spots = tuple(Var(f"u{d}", n) for d, n in enumerate(index.shape)) or (Var("u0", 1),)
        at = tuple(Expr.of(v) for v in spots) if index.shape else ()
        raw = self.value((index, at, ()))
        var = Var(f"g{len(self.data)}", size)
        self.data[var] = raw  # used only where `mask` holds, inside the axis
        place = self.index_value(flat_index((*at[:axis], Expr.of(var), *at[axis + 1:]), root.shape))
        value = _narrow(self.value((updates, at, ())), root.dtype)
        store = ir.Store(0, Expr.of(0), value, at=place, mask=_within(raw, 0, size), combine=combine)
        buffers = (ir.BufferParam(root.dtype, root.numel, output=True), *(ir.BufferParam(n.dtype, n.numel) for n in self.inputs))
        params = tuple(compute_dtype(n.dtype) for n in self.scalars)
        kernel = ir.Scatter("", buffers, params, ir.Kernel("", buffers, params, loops, (base_store,)),
                            ir.Kernel("", buffers, params, spots, (store,)), distinct)
        return LoweredKernel(kernel, list(self.inputs), list(self.scalars), self.reductions)

    def buffer_of(self, src: Node) -> Node:
        """The buffer a kernel of its own kind reads for its source `src` (the scheduler realizes it: the storage
        of `src`), its next input."""
        while not (src.realized or src in self.boundaries):  # down the reshapes to the buffer (`storage`)
            src = src.srcs[0]
        self.inputs.append(src)
        return src

    def source_buffer(self) -> tuple[Node, int, int]:
        """The buffer a SORT reads, and its source's rows and row length (its last axis)."""
        src = self.root.srcs[0]
        n = src.shape[-1] if src.shape else 1
        return self.buffer_of(src), src.numel // n, n

    def lower_sort(self) -> LoweredKernel:
        """A SORT's `ir.Sort`: of the positions, or of the keys themselves (`values`), all, those at `take`, or the
        first `first`."""
        keys, rows, n = self.source_buffer()
        descending, values, take, first = self.root.arg
        buffers = (ir.BufferParam(self.root.dtype, self.root.numel, output=True),
                   ir.BufferParam(keys.dtype, keys.numel))
        return LoweredKernel(ir.Sort("", buffers, rows, n, descending, values=values, take=take, first=first), list(self.inputs),
                             [])

    def lower_scan(self) -> LoweredKernel:
        """A SCAN's `ir.Scan`: the axes before its axis are the rows, those after it each element's lanes."""
        root = self.root
        op, back = root.arg
        src, axis = self.buffer_of(root.srcs[0]), len(root.shape) + back
        rows, n, inner = math.prod(root.shape[:axis]), root.shape[axis], math.prod(root.shape[axis + 1:])
        buffers = (ir.BufferParam(root.dtype, root.numel, output=True), ir.BufferParam(src.dtype, src.numel))
        return LoweredKernel(ir.Scan("", buffers, rows, n, op, inner), list(self.inputs), [])

    def lower_library_call(self) -> LoweredKernel:
        """A LINALG's `ir.LibraryCall`: its routine on each matrix of its sources' last two axes."""
        root = self.root
        operands = [self.buffer_of(s) for s in root.srcs]
        buffers = (ir.BufferParam(root.dtype, root.numel, output=True),
                   *(ir.BufferParam(n.dtype, n.numel) for n in operands))
        shapes = tuple((s.shape[-2], s.shape[-1]) for s in root.srcs)
        kernel = ir.LibraryCall("", buffers, root.arg, math.prod(root.shape[:-1]), shapes)
        return LoweredKernel(kernel, list(self.inputs), [])

    def operands(self) -> tuple[tuple[Var, Var, Var, Var], ir.Value, ir.Value]:
        """The contraction's operands as values over its (batch, m, n, k) loop variables, in the dtype the
        backend's template takes them in."""
        node, axes = self.contraction
        shape = node.srcs[0].shape
        vars = tuple(Var(name, size) for name, size in zip(("cb", "cm", "cn", "ck"), axes.sizes(shape)))
        vb, vm, vn, vk = vars
        a = self.value((axes.a, axes.operand_index(shape, vb, vm, None, vk), ()))
        bv = self.value((axes.b, axes.operand_index(shape, vb, None, vn, vk), ()))
        return vars, _narrow(a, self.operand_dtype), _narrow(bv, self.operand_dtype)  # type: ignore[return-value]


def lower(roots: list[Node], boundaries: Container[Node], contraction: tuple[Node, Axes] | None = None,
          operand_dtype: DType | None = None) -> LoweredKernel:
    """The kernel that computes `roots` (one output buffer each, all of one shape), reading every node in
    `boundaries` from its buffer. `contraction` (a single root's, with its axes) goes to the backend's
    template, its operands cast to `operand_dtype`."""
    return _Lowerer(roots, boundaries, contraction, operand_dtype).lower()


def movement_source(node: Node, idx: tuple[Expr, ...], bounds: Bounds) -> tuple[Key, Bounds] | None:
    """Where a movement node's value at `idx` (valid within `bounds`) reads its source, and the bounds of the
    padding it adds (outside them the value is zero); None where it never reads it."""
    src = node.srcs[0]
    src_idx, new_bounds = source_index(node.op, node.arg, src.shape, idx)
    inner = simplify_bounds((*bounds, *new_bounds))
    if inner is None:
        return None
    return (src, src_idx, inner), simplify_bounds(new_bounds) or ()


def _within(value: ir.Value, lo: int, hi: int) -> ir.Value:
    """`lo <= value < hi` for an int64 value."""
    return ir.alu(ir.Alu.AND, bool_, ir.alu(ir.Alu.CMPLE, bool_, ir.const(lo, int64), value),
                  ir.alu(ir.Alu.CMPLT, bool_, value, ir.const(hi, int64)))


def reduce_vars(node: Node, first: int) -> tuple[Var, ...]:
    """The loop variables of a reduction's own loops, numbered from `first` (`r<i>`)."""
    src = node.srcs[0]
    return tuple(Var(f"r{first + k}", src.shape[axis]) for k, axis in enumerate(node.arg[1]))


def reduce_source(node: Node, idx: tuple[Expr, ...], bounds: Bounds, ranges: tuple[Var, ...]) -> Key:
    """What a reduction's value at `idx` sums (or maxes...) over: its source with the reduced axes at `ranges`."""
    src_idx = list(idx)
    for axis, var in zip(node.arg[1], ranges):
        src_idx[axis] = Expr.of(var)
    return node.srcs[0], tuple(src_idx), bounds
