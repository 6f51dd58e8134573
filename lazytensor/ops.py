"""The registry of ops: every op of the graph and the kernel IR, and how the frontend offers it.

Each elementwise op (`kernels.ir.Alu`, but the `MACHINE_OPS` that only the backends' legalization makes),
reduction (`ReduceOp`), movement op (`graph.MOVEMENT`) and op that indexes by data (gather, scatter) has one row: the public function
(`lt.<function>`) and the Tensor method that record it. What else an op needs lives beside its
definition and is checked against this registry by tests/test_ops.py:

- its semantics and the dtypes it takes: a row of `kernels.reference.ALU` (the executable definition of
  the IR), which both backends are tested against for every one of those dtypes (tests/test_reference.py);
- its gradient: a rule in `autograd.ALU_VJP` / `autograd.REDUCE_VJP` / `autograd.vjp`, or, for an op
  that never gives a float, a place in `autograd.NOT_DIFFERENTIABLE` (a float result without a rule
  raises instead of dropping its gradient);
- its public function and method, which record exactly this op.

Adding an op: the README's "Adding an op" lists the places; the test fails until each one is filled.
"""
from __future__ import annotations

from typing import NamedTuple

from .graph import Op
from .kernels.ir import Alu, ReduceOp


class Offered(NamedTuple):
    """How the frontend offers an op: `lt.<function>(x, ...)` and `x.<method>(...)`."""

    function: str
    method: str


ELEMENTWISE: dict[Alu, Offered] = {
    Alu.NEG: Offered("negative", "negative"),
    Alu.NOT: Offered("bitwise_invert", "bitwise_invert"),
    Alu.ABS: Offered("abs", "abs"),
    Alu.RECIP: Offered("reciprocal", "reciprocal"),
    Alu.EXP: Offered("exp", "exp"),
    Alu.EXP2: Offered("exp2", "exp2"),
    Alu.EXPM1: Offered("expm1", "expm1"),
    Alu.LOG: Offered("log", "log"),
    Alu.LOG2: Offered("log2", "log2"),
    Alu.LOG1P: Offered("log1p", "log1p"),
    Alu.SQRT: Offered("sqrt", "sqrt"),
    Alu.SIN: Offered("sin", "sin"),
    Alu.COS: Offered("cos", "cos"),
    Alu.TAN: Offered("tan", "tan"),
    Alu.TANH: Offered("tanh", "tanh"),
    Alu.ERF: Offered("erf", "erf"),
    Alu.FLOOR: Offered("floor", "floor"),
    Alu.CEIL: Offered("ceil", "ceil"),
    Alu.ROUND: Offered("round", "round"),
    Alu.TRUNC: Offered("trunc", "trunc"),
    Alu.ADD: Offered("add", "add"),
    Alu.SUB: Offered("subtract", "sub"),
    Alu.MUL: Offered("multiply", "mul"),
    Alu.DIV: Offered("divide", "div"),
    Alu.FLOORDIV: Offered("floor_divide", "floor_divide"),
    Alu.MOD: Offered("remainder", "remainder"),
    Alu.POW: Offered("pow", "pow"),
    Alu.ATAN2: Offered("atan2", "atan2"),
    Alu.LSHIFT: Offered("bitwise_left_shift", "bitwise_left_shift"),
    Alu.RSHIFT: Offered("bitwise_right_shift", "bitwise_right_shift"),
    Alu.MAX: Offered("maximum", "maximum"),
    Alu.MIN: Offered("minimum", "minimum"),
    Alu.CMPLT: Offered("less", "less"),
    Alu.CMPLE: Offered("less_equal", "less_equal"),
    Alu.CMPEQ: Offered("equal", "equal"),
    Alu.CMPNE: Offered("not_equal", "not_equal"),
    Alu.AND: Offered("bitwise_and", "bitwise_and"),
    Alu.OR: Offered("bitwise_or", "bitwise_or"),
    Alu.XOR: Offered("bitwise_xor", "bitwise_xor"),
    Alu.WHERE: Offered("where", "where"),
}

REDUCTIONS: dict[ReduceOp, Offered] = {
    ReduceOp.SUM: Offered("sum", "sum"),
    ReduceOp.PROD: Offered("prod", "prod"),
    ReduceOp.MAX: Offered("max", "max"),
    ReduceOp.MIN: Offered("min", "min"),
}

MOVEMENT: dict[Op, Offered] = {
    Op.RESHAPE: Offered("reshape", "reshape"),
    Op.PERMUTE: Offered("permute_dims", "permute"),
    Op.EXPAND: Offered("broadcast_to", "broadcast_to"),
    Op.PAD: Offered("pad", "pad"),
    Op.SHRINK: Offered("narrow", "narrow"),
    Op.FLIP: Offered("flip", "flip"),
}

# The ops that index by data (lazytensor/indexing.py): their results come checked (`Op.CHECK` over the op).
INDEXING: dict[Op, Offered] = {
    Op.GATHER: Offered("gather", "gather"),
    Op.SCATTER: Offered("scatter", "scatter"),
}

__all__ = ["ELEMENTWISE", "INDEXING", "MOVEMENT", "REDUCTIONS", "Offered"]
