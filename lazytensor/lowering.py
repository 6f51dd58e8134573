"""Lower one fused region of the lazy graph to a `kernels.ir.Kernel`.

The region is everything a realized node needs that is not itself realized (a
kernel boundary). Lowering walks from the output down: each node is visited
with the index its consumer reads it at. Elementwise ops become ALU values,
reductions open loops of their own, movement ops rewrite the index
(`views.source_index`), and boundaries become loads. Python scalars become
kernel parameters, so `x * 0.5` and `x * 0.25` compile to one kernel.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from .graph import MOVEMENT, Node, Op
from .kernels import ir
from .kernels.expr import Bounds, Expr, Var, flat_index, simplify_bounds
from .views import source_index

Key = tuple[Node, tuple[Expr, ...], Bounds]


@dataclass
class LoweredKernel:
    kernel: ir.Kernel
    inputs: list[Node]                                   # buffer slots 1.. in order
    scalars: list[Node]                                  # SCALAR nodes in parameter slot order
    reductions: dict[int, Node] = field(default_factory=dict)  # id(REDUCE value) -> its graph node


class _Lowerer:
    def __init__(self, root: Node, boundaries: set[Node]):
        self.root = root
        self.boundaries = boundaries
        self.inputs: list[Node] = []
        self.scalars: list[Node] = []
        self.reductions: dict[int, Node] = {}
        self.memo: dict[Key, ir.Value] = {}
        self.n_reduce_vars = 0

    def slot(self, table: list[Node], node: Node) -> int:
        for i, n in enumerate(table):
            if n is node:
                return i
        table.append(node)
        return len(table) - 1

    def plan(self, key: Key) -> tuple[list[Key], Callable[[list[ir.Value]], ir.Value]]:
        """The keys this key's value needs, and how to build it from their values."""
        node, idx, bounds = key
        if node is not self.root and (node.realized or node in self.boundaries):
            if node.numel == 0:
                return [], lambda _: ir.const(0, node.dtype)
            slot = 1 + self.slot(self.inputs, node)
            index = flat_index(idx, node.shape)
            return [], lambda _: ir.load(slot, node.dtype, index, bounds)
        op = node.op
        if op is Op.SCALAR:
            pslot = self.slot(self.scalars, node)
            return [], lambda _: ir.param(pslot, node.dtype)
        if op is Op.CONST:
            return [], lambda _: ir.const(node.arg, node.dtype)
        if op is Op.IOTA:
            return [], lambda _: ir.cast(ir.index(idx[0]), node.dtype)
        if op is Op.ALU:
            return [(s, idx, bounds) for s in node.srcs], lambda vals: ir.alu(node.arg, node.dtype, *vals)
        if op is Op.CAST:
            return [(node.srcs[0], idx, bounds)], lambda vals: ir.cast(vals[0], node.dtype)
        if op is Op.CONTIGUOUS:
            return [(node.srcs[0], idx, bounds)], lambda vals: vals[0]
        if op is Op.REDUCE:
            return self.plan_reduce(node, idx, bounds)
        if op in MOVEMENT:
            src = node.srcs[0]
            src_idx, new_bounds = source_index(op, node.arg, src.shape, idx)
            inner = simplify_bounds(list(bounds) + new_bounds)
            if inner is None:
                return [], lambda _: ir.const(0, node.dtype)
            pad = simplify_bounds(new_bounds)
            if not pad:
                return [(src, src_idx, inner)], lambda vals: vals[0]
            return [(src, src_idx, inner)], lambda vals: ir.alu(
                ir.Alu.WHERE, node.dtype, ir.valid(pad), vals[0], ir.const(0, node.dtype))
        raise AssertionError(f"cannot lower {node}")

    def plan_reduce(self, node: Node, idx: tuple[Expr, ...], bounds: Bounds):
        reduce_op, axes = node.arg
        src = node.srcs[0]
        ranges = []
        src_idx = list(idx)
        for axis in axes:
            var = Var(f"r{self.n_reduce_vars}", src.shape[axis])
            self.n_reduce_vars += 1
            ranges.append(var)
            src_idx[axis] = Expr.of(var)

        def build(vals: list[ir.Value]) -> ir.Value:
            value = ir.reduce(reduce_op, vals[0], tuple(ranges))
            self.reductions[id(value)] = node
            return value

        return [(src, tuple(src_idx), bounds)], build

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
        root = self.root
        shape = root.shape
        loops = tuple(Var(f"o{d}", n) for d, n in enumerate(shape)) or (Var("o0", 1),)
        idx = tuple(Expr.of(v) for v in loops) if shape else ()
        value = self.value((root, idx, ()))
        if root.dtype != value.dtype:
            value = ir.cast(value, root.dtype)
        stores = (ir.Store(0, flat_index(idx, shape), value),)
        buffers = (ir.BufferParam(root.dtype, root.numel, output=True),
                   *(ir.BufferParam(n.dtype, n.numel) for n in self.inputs))
        params = tuple(n.dtype for n in self.scalars)
        kernel = ir.Kernel("", buffers, params, loops, stores)
        return LoweredKernel(kernel, list(self.inputs), list(self.scalars), self.reductions)


def lower(root: Node, boundaries: set[Node]) -> LoweredKernel:
    """The kernel that computes `root`, reading every node in `boundaries` from its buffer."""
    return _Lowerer(root, boundaries).lower()

