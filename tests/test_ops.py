"""The registry of ops (lazytensor/ops.py) walked: every op of the IR has a row; its public function and
method record that op and compute what torch's counterpart does; it has a definition in the reference
interpreter (which both backends are held to dtype by dtype in test_reference.py); and it has a gradient
rule that agrees with torch autograd, or never gives a float."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import lazytensor as lt
from conftest import check
from lazytensor import autograd, graph, ops
from lazytensor.graph import Op
from lazytensor.kernels import reference
from lazytensor.kernels.ir import COMPARISONS, MACHINE_OPS, Alu, ReduceOp

pytestmark = pytest.mark.fast  # the edit-test tier (pyproject.toml)

TORCH_ELEMENTWISE = {
    Alu.NEG: torch.neg, Alu.NOT: torch.bitwise_not, Alu.ABS: torch.abs, Alu.RECIP: torch.reciprocal,
    Alu.EXP: torch.exp, Alu.EXP2: torch.exp2, Alu.EXPM1: torch.expm1, Alu.LOG: torch.log, Alu.LOG2: torch.log2,
    Alu.LOG1P: torch.log1p, Alu.SQRT: torch.sqrt, Alu.SIN: torch.sin, Alu.COS: torch.cos, Alu.TAN: torch.tan,
    Alu.TANH: torch.tanh, Alu.ERF: torch.erf, Alu.FLOOR: torch.floor, Alu.CEIL: torch.ceil,
    Alu.ROUND: torch.round, Alu.TRUNC: torch.trunc, Alu.ADD: torch.add, Alu.SUB: torch.sub, Alu.MUL: torch.mul,
    Alu.DIV: torch.div, Alu.FLOORDIV: lambda a, b: torch.div(a, b, rounding_mode="floor"), Alu.MOD: torch.remainder, Alu.POW: torch.pow,
    Alu.MAX: torch.maximum, Alu.MIN: torch.minimum, Alu.CMPLT: torch.lt, Alu.CMPLE: torch.le, Alu.CMPEQ: torch.eq,
    Alu.CMPNE: torch.ne, Alu.AND: torch.bitwise_and, Alu.OR: torch.bitwise_or, Alu.XOR: torch.bitwise_xor,
    Alu.WHERE: torch.where, Alu.ATAN2: torch.atan2, Alu.LSHIFT: torch.bitwise_left_shift,
    Alu.RSHIFT: torch.bitwise_right_shift,
}
TORCH_REDUCTIONS = {ReduceOp.SUM: torch.sum, ReduceOp.PROD: torch.prod, ReduceOp.MAX: torch.amax,
                    ReduceOp.MIN: torch.amin}


def test_every_op_has_a_row():
    assert set(ops.ELEMENTWISE) == set(Alu) - MACHINE_OPS
    assert set(ops.REDUCTIONS) == set(ReduceOp)
    assert set(ops.MOVEMENT) == set(graph.MOVEMENT)
    assert set(reference.ALU) == set(Alu), "an elementwise op without a definition in kernels/reference.py"
    assert set(TORCH_ELEMENTWISE) == set(ops.ELEMENTWISE)


def _operand_dtype(op: Alu) -> lt.DType:
    """The dtype to call the op on: float32 where it takes floats, else int32, else bool."""
    kinds = reference.ALU[op][0]
    return lt.float32 if "f" in kinds else lt.int32 if "i" in kinds else lt.bool_


def _operands(op: Alu, dtype: lt.DType, seed: int = 0) -> list[np.ndarray]:
    """Operands inside every op's domain (positive for log and sqrt, no zero divisors, no ties)."""
    rng = np.random.default_rng(seed)
    n = op.arity - (op is Alu.WHERE)
    if dtype == lt.bool_:
        values = [rng.random((3, 4)) < 0.5 for _ in range(n)]
    elif dtype.is_float:
        values = [rng.uniform(0.25, 2.0, (3, 4)).astype(dtype.name) for _ in range(n)]
    else:
        values = [rng.integers(1, 9, (3, 4)).astype(dtype.name) for _ in range(n)]
    return [rng.random((3, 4)) < 0.5, *values] if op is Alu.WHERE else values


def _call(offered: ops.Offered, how: str, op: Alu | None, args: list) -> lt.Tensor:
    if how == "function":
        return getattr(lt, offered.function)(*args)
    if op is Alu.WHERE:  # torch's x.where(condition, y)
        return args[1].where(args[0], args[2])
    return getattr(args[0], offered.method)(*args[1:])


@pytest.mark.parametrize("how", ["function", "method"])
@pytest.mark.parametrize("op", list(ops.ELEMENTWISE), ids=lambda op: op.label)
def test_elementwise_function_and_method_record_the_op(op, how):
    dtype = _operand_dtype(op)
    arrays = _operands(op, dtype)
    out = _call(ops.ELEMENTWISE[op], how, op, [lt.asarray(a) for a in arrays])
    assert out.node.op is Op.ALU and out.node.arg is op
    check(out, TORCH_ELEMENTWISE[op](*(torch.tensor(a) for a in arrays)))


def test_every_elementwise_op_has_a_gradient_rule_or_never_gives_a_float():
    for op in ops.ELEMENTWISE:
        assert (op in autograd.ALU_VJP) != (op in autograd.NOT_DIFFERENTIABLE), op
    for op in autograd.NOT_DIFFERENTIABLE:
        assert op in COMPARISONS or "f" not in reference.ALU[op][0], f"{op.label} can give a float"


@pytest.mark.parametrize("op", list(autograd.ALU_VJP), ids=lambda op: op.label)
def test_elementwise_gradient_rules_match_torch(op):
    arrays = [a if a.dtype == bool else a.astype(np.float64) for a in _operands(op, lt.float64, seed=1)]
    weights = np.random.default_rng(2).normal(size=(3, 4))
    ours = [lt.asarray(a) if a.dtype == bool else lt.asarray(a).requires_grad_() for a in arrays]
    theirs = [torch.tensor(a) if a.dtype == bool else torch.tensor(a, requires_grad=True) for a in arrays]
    (getattr(lt, ops.ELEMENTWISE[op].function)(*ours) * lt.asarray(weights)).sum().backward()
    (TORCH_ELEMENTWISE[op](*theirs) * torch.tensor(weights)).sum().backward()
    for o, t in zip(ours, theirs):
        if t.requires_grad:
            check(o.grad, t.grad)


def test_a_float_op_without_a_gradient_rule_raises(monkeypatch):
    monkeypatch.delitem(autograd.ALU_VJP, Alu.EXP)
    x = lt.asarray(np.ones(3, dtype=np.float32)).requires_grad_()
    with pytest.raises(NotImplementedError, match="no gradient rule for the elementwise op exp"):
        lt.exp(x).sum().backward()


@pytest.mark.parametrize("how", ["function", "method"])
@pytest.mark.parametrize("op", list(ReduceOp), ids=lambda op: op.value)
def test_reductions_record_the_op_and_match_torch(op, how):
    assert set(autograd.REDUCE_VJP) == set(ReduceOp)
    x = np.random.default_rng(3).normal(size=(3, 4, 5))
    t = lt.asarray(x).requires_grad_()
    out = _call(ops.REDUCTIONS[op], how, None, [t, 1])
    assert out.node.op is Op.RESHAPE and out.node.srcs[0].op is Op.REDUCE and out.node.srcs[0].arg[0] is op
    tt = torch.tensor(x, requires_grad=True)
    expected = TORCH_REDUCTIONS[op](tt, 1)
    check(out, expected)
    w = np.random.default_rng(4).normal(size=(3, 5))
    (out * lt.asarray(w)).sum().backward()
    (expected * torch.tensor(w)).sum().backward()
    check(t.grad, tt.grad)


MOVEMENT_CALLS = {  # (args after the tensor, torch's counterpart of x)
    Op.RESHAPE: ((4, 6), lambda x: x.reshape(4, 6)),
    Op.PERMUTE: (((2, 0, 1),), lambda x: x.permute(2, 0, 1)),
    Op.EXPAND: ((5, 2, 3, 4), lambda x: x.broadcast_to(5, 2, 3, 4)),
    Op.PAD: ((((0, 0), (1, 2), (0, 3)),), lambda x: torch.nn.functional.pad(x, (0, 3, 1, 2))),
    Op.SHRINK: ((2, 1, 2), lambda x: x.narrow(2, 1, 2)),
    Op.FLIP: ((1,), lambda x: x.flip(1)),
}


@pytest.mark.parametrize("how", ["function", "method"])
@pytest.mark.parametrize("op", list(ops.MOVEMENT), ids=lambda op: op.value)
def test_movement_ops_record_the_op_and_differentiate_as_torch(op, how):
    args, theirs = MOVEMENT_CALLS[op]
    x = np.random.default_rng(5).normal(size=(2, 3, 4))
    t = lt.asarray(x).requires_grad_()
    out = _call(ops.MOVEMENT[op], how, None, [t, *args])
    assert out.node.op is op
    tt = torch.tensor(x, requires_grad=True)
    expected = theirs(tt)
    check(out, expected)
    w = np.random.default_rng(6).normal(size=expected.shape)
    (out * lt.asarray(w)).sum().backward()
    (expected * torch.tensor(w)).sum().backward()
    check(t.grad, tt.grad)


INDEXING_CALLS = {  # (args after the tensor, torch's counterpart of x)
    Op.GATHER: ((1, np.array([[2, 0], [1, 1]])[:, :, None].repeat(4, 2)), lambda x: x.gather(
        1, torch.tensor(np.array([[2, 0], [1, 1]])[:, :, None].repeat(4, 2)))),
    Op.SCATTER: ((0, np.array([[1, 0, 1, 1]] * 2)[:, None].repeat(3, 1), np.ones((2, 3, 4))),
                 lambda x: x.scatter(0, torch.tensor(np.array([[1, 0, 1, 1]] * 2)[:, None].repeat(3, 1)),
                                     torch.ones((2, 3, 4), dtype=torch.float64))),
}


@pytest.mark.parametrize("how", ["function", "method"])
@pytest.mark.parametrize("op", list(ops.INDEXING), ids=lambda op: op.value)
def test_indexing_ops_record_the_op_and_differentiate_as_torch(op, how):
    args, theirs = INDEXING_CALLS[op]
    x = np.random.default_rng(7).normal(size=(2, 3, 4))
    t = lt.asarray(x).requires_grad_()
    out = _call(ops.INDEXING[op], how, None, [t, *(lt.asarray(a) if isinstance(a, np.ndarray) else a for a in args)])
    assert out.node.op is Op.CHECK and out.node.srcs[0].op is op
    tt = torch.tensor(x, requires_grad=True)
    expected = theirs(tt)
    check(out, expected)
    w = np.random.default_rng(8).normal(size=expected.shape)
    (out * lt.asarray(w)).sum().backward()
    (expected * torch.tensor(w)).sum().backward()
    check(t.grad, tt.grad)


@pytest.mark.parametrize("start,length", [(0, 4), (-3, 2), (4, 0)])
def test_narrow(start, length):
    x = np.arange(12.0).reshape(3, 4)
    check(lt.narrow(lt.asarray(x), 1, start, length), torch.tensor(x).narrow(1, start, length))
    check(lt.asarray(x).narrow(-2, 1, 2), torch.tensor(x).narrow(-2, 1, 2))


@pytest.mark.parametrize("start,length", [(5, 0), (2, 3), (-5, 1), (0, -1)])
def test_narrow_outside_the_axis_is_an_index_error(start, length):
    with pytest.raises(IndexError, match=r"narrow: start .* do not fit in axis 1 of size 4 \(shape \(3, 4\)\)"):
        lt.asarray(np.zeros((3, 4))).narrow(1, start, length)
    with pytest.raises((IndexError, RuntimeError)):
        torch.zeros(3, 4).narrow(1, start, length)
