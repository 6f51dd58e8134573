"""Legalization (kernels/legalize.py) against the reference interpreter, with nothing compiled.

1. Every rule, on every dtype it takes: the legalized kernel, evaluated by the reference, gives what the
   unlegalized one gives, on every pair of edge values (NaN for NaN, the sign of zero and every bit of
   every integer included; the math functions, rewritten into others, within ULPS), and holds no op that
   a rule rewrites but the guarded float-to-int64 and float-to-int32 casts.
   The same with constant divisors and exponents, which take their own rewritings.
2. Each backend's native set: what it declares stays, everything else is rewritten, the values unchanged.
3. Whole kernels as lowering makes them (reductions, contractions and their epilogues, 16-bit floats,
   several outputs) give the same outputs legalized for either backend, or with nothing native.
4. The core ops legalization produces are only defined on their domain; the reference refuses the rest.

Both backends against torch on the ops these rules implement are the usual op tests (test_elementwise.py,
test_half.py, test_dtypes.py, ...), which run on whichever backend LT_DEVICE names.
"""
from __future__ import annotations

import numpy as np
import pytest
from test_reference import (
    LOWERING,
    TRANSCENDENTAL,
    ULPS,
    as_values,
    assert_identical,
    assert_within_ulps,
    both_ways,
    cast_kernel,
    elementwise_kernel,
    on_reference,
    operands,
    suite_values,
)

import lazytensor as lt
from lazytensor.kernels import ir, legalize
from lazytensor.kernels.dtype import DType, int8, int32, int64
from lazytensor.kernels.expr import Expr, Var
from lazytensor.kernels.llvm.render import NATIVE as LLVM_NATIVE
from lazytensor.kernels.triton.render import NATIVE as TRITON_NATIVE

pytestmark = pytest.mark.fast  # the edit-test tier (pyproject.toml)

Alu = ir.Alu
ALU_KEYS = [k for k in legalize.RULES if isinstance(k[0], Alu)]
CAST_KEYS = [k for k in legalize.RULES if not isinstance(k[0], Alu)]
NATIVE_SETS = {"none": frozenset(), "llvm": LLVM_NATIVE, "triton": TRITON_NATIVE}
# The math functions are rewritten into others (in float64): within ULPS of the reference's, not its bits.
APPROXIMATE = {k for k in ALU_KEYS if k[0] in TRANSCENDENTAL and k[1].is_float}


def key_id(key: legalize.Key) -> str:
    first, dtype = key
    return f"{first.label if isinstance(first, Alu) else first}-{dtype}"


def library_ops(kernel: ir.Kernel) -> set[legalize.Key]:
    """The keys of `legalize.RULES` among a kernel's ALU ops and casts."""
    found = set()
    for v in kernel.values():
        key = (v.arg, v.srcs[-1].dtype) if v.op is ir.VOp.ALU else (v.srcs[0].dtype, v.dtype) \
            if v.op is ir.VOp.CAST else None
        if key in legalize.RULES:
            found.add(key)
    return found


def rewritten_math(kernel: ir.Kernel | ir.Contraction | ir.Scatter | ir.Sort | ir.Scan) -> set[legalize.Key]:
    """The keys of APPROXIMATE among the ALU ops of a kernel, a contraction (its operands and epilogue) or a
    scatter (its base and updates); a sort or a scan has none."""
    if isinstance(kernel, (ir.Sort, ir.Scan)):
        return set()
    if isinstance(kernel, ir.Scatter):
        return rewritten_math(kernel.base) | rewritten_math(kernel.updates)
    if isinstance(kernel, ir.Contraction):
        epilogue = rewritten_math(kernel.epilogue) if kernel.epilogue is not None else set()
        roots = [kernel.a, kernel.bv]
    else:
        epilogue, roots = set(), [v for s in kernel.stores for v in s.roots()]
    return epilogue | {(v.arg, v.srcs[-1].dtype) for v in ir.toposort(roots) if v.op is ir.VOp.ALU} & APPROXIMATE


def guarded_casts(kernel: ir.Kernel) -> set[legalize.Key]:
    """The float-to-int64 and float-to-int32 casts in a kernel: the one op legalization keeps, guarded."""
    return {(v.srcs[0].dtype, v.dtype) for v in kernel.values()
            if v.op is ir.VOp.CAST and v.srcs[0].dtype.is_float and v.dtype in (int32, int64)}


def assert_same_results(kernel: ir.Kernel, legal: ir.Kernel, inputs: list[np.ndarray], what: str,
                        approximate: bool = False) -> None:
    """The same outputs on the reference, bit for bit (`approximate`: within ULPS)."""
    outputs = [b for b in kernel.buffers if b.output]
    for k, (got, want, b) in enumerate(zip(on_reference(legal, inputs), on_reference(kernel, inputs), outputs)):
        got, want = as_values(got, b.dtype), as_values(want, b.dtype)
        if approximate:
            assert_within_ulps(got, want, ULPS, f"{what} output {k}")
        else:
            assert_identical(got, want, f"{what} output {k}")


# ---- 1. every rule --------------------------------------------------------------------------------------

@pytest.mark.parametrize("key", ALU_KEYS, ids=key_id)
def test_alu_rule_matches_the_reference(key):
    op, dtype = key
    ins = operands(dtype, op.arity)
    kernel = elementwise_kernel(op, dtype, ins[0].size)
    legal = legalize.legalize(kernel, frozenset())
    assert not library_ops(legal) - guarded_casts(legal)
    assert_same_results(kernel, legal, ins, key_id(key), key in APPROXIMATE)


@pytest.mark.parametrize("key", CAST_KEYS, ids=key_id)
def test_cast_rule_matches_the_reference(key):
    kernel, data = cast_kernel(*key)
    legal = legalize.legalize(kernel, frozenset())
    assert not library_ops(legal) - guarded_casts(legal)
    assert_same_results(kernel, legal, [data], key_id(key))


@pytest.mark.parametrize("dtype", legalize.INTS, ids=str)
@pytest.mark.parametrize("op", [Alu.FLOORDIV, Alu.MOD, Alu.POW], ids=lambda op: op.label)
def test_constant_divisors_and_exponents(op, dtype):
    """A constant divisor needs no guard (0 and -1 fold away), a constant exponent only its bits' squarings."""
    info = np.iinfo(dtype.name)
    data = suite_values(dtype)
    o = Var("o0", data.size)
    constants = [0, 1, -1, 2, -2, 3, -3, 7, -7, 64, info.min, info.max] if op is not Alu.POW else \
        [0, 1, 2, 3, 5, 8, 13, 63, -1, -2]
    for c in [c for c in constants if info.min <= c <= info.max]:
        value = ir.alu(op, dtype, ir.load(1, dtype, Expr.of(o), ()), ir.const(c, dtype))
        kernel = ir.Kernel("", (ir.BufferParam(dtype, data.size, True), ir.BufferParam(dtype, data.size)), (), (o,),
                           (ir.Store(0, Expr.of(o), value),))
        legal = legalize.legalize(kernel, frozenset())
        assert not library_ops(legal)
        if c > 0 and op is not Alu.POW:  # a positive constant divisor is divided by, unguarded
            assert not any(v.op is ir.VOp.ALU and v.arg in (Alu.CMPEQ, Alu.OR) for v in legal.values())
        assert_same_results(kernel, legal, [data], f"{op.label} by {c}")


# ---- 2. each backend's native set ---------------------------------------------------------------------

@pytest.mark.parametrize("backend", ["llvm", "triton"])
def test_a_backend_gets_what_it_declares_native_and_core_ops_else(backend):
    native = NATIVE_SETS[backend]
    assert native <= legalize.RULES.keys()
    for key in legalize.RULES:
        if isinstance(key[0], Alu):
            ins = operands(key[1], key[0].arity)
            kernel = elementwise_kernel(key[0], key[1], ins[0].size)
        else:
            kernel, data = cast_kernel(*key)
            ins = [data]
        legal = legalize.legalize(kernel, native)
        assert library_ops(legal) <= native | guarded_casts(legal), key_id(key)
        if key in native:
            assert legal is kernel
        assert_same_results(kernel, legal, ins, f"{key_id(key)} for {backend}", key in APPROXIMATE)


# ---- 3. whole kernels -----------------------------------------------------------------------------------

def half_and_integer_graphs() -> list[lt.Tensor]:
    """Graphs whose kernels hold the ops legalization rewrites, beside `test_reference.LOWERING`'s."""
    x = lt.asarray(np.linspace(-4, 4, 35, dtype=np.float32).reshape(5, 7))
    i = lt.asarray(np.arange(-17, 18, dtype=np.int32).reshape(5, 7))
    return [
        (x.cast(lt.bfloat16) * 3).cast(lt.float16), x.cast(lt.float16).amax(1), x.cast(lt.bfloat16).sum(0),
        x // 0.75, x % -1.5, x.round(), x.trunc(), (x * 1e3).cast(lt.int8), x.cast(lt.bool_).any(1),
        i // 3, i % -4, i // i.flip(0), i % i.T.reshape(5, 7), i ** 3, (i > 0).sum(1), (i != 0).all(0),
        x.maximum(x.flip(1)), x.minimum(-x),
    ]


GRAPHS = {**{name: lambda name=name: both_ways(LOWERING[name][0], *LOWERING[name][1], kinds=LOWERING[name][2])[0]
             for name in LOWERING},
          "half_and_integers": half_and_integer_graphs}


@pytest.mark.parametrize("backend", NATIVE_SETS)
@pytest.mark.parametrize("name", GRAPHS)
def test_scheduled_kernels_give_the_same_outputs_legalized(name, backend):
    """Each kernel of the schedule, on the reference, legalized for the backend or not, on the same inputs."""
    arrays: dict[int, np.ndarray] = {}
    for item in lt.schedule(*GRAPHS[name]()):
        inputs = [arrays[id(n)] if id(n) in arrays else n.buffer.numpy() for n in item.inputs]
        want = on_reference(item.kernel, inputs, item.params)
        got = on_reference(legalize.legalize(item.kernel, NATIVE_SETS[backend]), inputs, item.params)
        outputs = [b for b in item.kernel.buffers if b.output]
        approximate = bool(rewritten_math(item.kernel) - NATIVE_SETS[backend])
        for k, (g, w, b) in enumerate(zip(got, want, outputs)):
            g, w, what = as_values(g, b.dtype), as_values(w, b.dtype), f"{name} kernel {item.kernel.name} output {k}"
            if approximate and b.dtype.is_float:
                assert_within_ulps(g, w, ULPS, what)
            else:
                assert_identical(g, w, what)
        arrays.update((id(n), a) for n, a in zip(item.outputs, want))
    assert lt.stats().kernels_compiled == 0


# ---- 4. the core ops' domains ---------------------------------------------------------------------------

def test_core_ops_outside_their_domain_are_errors():
    """A zero divisor, MIN / -1 and a shift past the width have no value: legalization never makes them."""
    o = Var("o0", 2)

    def run(op: Alu, dtype: DType, a: list[int], b: list[int]) -> None:
        value = ir.alu(op, dtype, ir.load(1, dtype, Expr.of(o), ()), ir.load(2, dtype, Expr.of(o), ()))
        kernel = ir.Kernel("", (ir.BufferParam(dtype, 2, True), ir.BufferParam(dtype, 2), ir.BufferParam(dtype, 2)),
                           (), (o,), (ir.Store(0, Expr.of(o), value),))
        on_reference(kernel, [np.array(a, dtype.name), np.array(b, dtype.name)])

    run(Alu.TRUNCDIV, int32, [7, -7], [2, -2])  # in the domain: no error
    for op, dtype, a, b in [(Alu.TRUNCDIV, int32, [7, 1], [2, 0]), (Alu.REM, int8, [-128, 1], [-1, 1]),
                            (Alu.SHL, int32, [1, 1], [1, 32]), (Alu.SHR, int8, [1, 1], [-1, 0])]:
        with pytest.raises(ValueError, match="domain|outside"):
            run(op, dtype, a, b)
