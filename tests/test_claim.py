"""A scatter's updates in order, side by side (kernels/claim.py), run by the reference interpreter.

The claim kernels must give what the scatter gives, where the updates write an element many times, and must
let at most one point write each element, so that the order the points run in cannot matter: the write
kernel, its store turned into a count, counts one write per element written. The Triton backend runs them
(tests/test_triton.py); the CPU backend runs the updates one after another instead.
"""
from __future__ import annotations

import numpy as np
import pytest

from lazytensor.kernels import ir, reference
from lazytensor.kernels.claim import claim_scatter
from lazytensor.kernels.dtype import DType, bool_, float32, int8, int32, int64
from lazytensor.kernels.expr import Expr, Var

pytestmark = pytest.mark.fast


def scatter(dtype: DType, size: int, rows: int, cols: int, stores: int = 1, combine: ir.ReduceOp | None = None,
            distinct: bool = False) -> ir.Scatter:
    """`out = base`, then for each point (u, v) of a rows x cols nest, for s < stores: out[idx[s, u] * cols + v]
    = vals[s, u, v] where idx[s, u] lies in [0, size // cols): slot 0 is out (of `size`), 1 base, 2 idx
    (int64, stores x rows), 3 vals (stores x rows x cols)."""
    buffers = (ir.BufferParam(dtype, size, output=True), ir.BufferParam(dtype, size),
               ir.BufferParam(int64, stores * rows), ir.BufferParam(dtype, stores * rows * cols))
    o, u, v = Var("o0", size), Var("u0", rows), Var("u1", cols)
    base = ir.Kernel("", buffers, (), (o,), (ir.Store(0, Expr.of(o), ir.load(1, dtype, Expr.of(o), ())),))
    updates = []
    for s in range(stores):
        raw = ir.load(2, int64, Expr.of(u) + s * rows, ())
        inside = ir.alu(ir.Alu.AND, bool_, ir.alu(ir.Alu.CMPLE, bool_, ir.const(0, int64), raw),
                        ir.alu(ir.Alu.CMPLT, bool_, raw, ir.const(size // cols, int64)))
        at = ir.alu(ir.Alu.ADD, int64, ir.alu(ir.Alu.MUL, int64, raw, ir.const(cols, int64)), ir.index(Expr.of(v)))
        value = ir.load(3, dtype, (Expr.of(u) + s * rows) * cols + Expr.of(v), ())
        updates.append(ir.Store(0, Expr.of(0), value, at, inside, combine))
    return ir.Scatter("", buffers, (), base, ir.Kernel("", buffers, (), (u, v), tuple(updates)), distinct)


def inputs(k: ir.Scatter, seed: int) -> list[np.ndarray]:
    """Base, idx and vals for `k` (of `scatter`): few places for many updates, some of them outside."""
    rng = np.random.default_rng(seed)
    _, base, idx, vals = k.buffers
    places = base.size // k.updates.loops[1].size
    return [rng.integers(-9, 9, base.size).astype(reference.storage_type(base.dtype)),
            rng.integers(-1, places + 1, idx.size).astype(np.int64),
            rng.integers(-9, 9, vals.size).astype(reference.storage_type(vals.dtype))]


def claimed(k: ir.Scatter, slots: list[np.ndarray], write: ir.Kernel | None = None) -> np.ndarray:
    """Run `k`'s claim kernels (`write` instead of its write kernel) on `slots` (out, then the inputs) and
    a claims buffer full of garbage; return the claims."""
    base, claim, own_write = claim_scatter(k)
    claims = np.full(base.buffers[-1].size, 12345, reference.storage_type(base.buffers[-1].dtype))
    for kernel in (base, claim, own_write if write is None else write):
        reference.execute(kernel, [*slots, claims], ())
    return claims


@pytest.mark.parametrize("dtype", [int8, float32, bool_], ids=str)
@pytest.mark.parametrize("rows,cols", [(40, 1), (30, 3), (1, 1)], ids=str)
def test_claim_kernels_give_the_scatter(dtype, rows, cols):
    k = scatter(dtype, 5 * cols, rows, cols)
    base, idx, vals = inputs(k, seed=rows + cols)
    want = np.zeros(k.buffers[0].size, base.dtype)
    reference.run(k, [want, base, idx, vals], ())
    got = np.zeros_like(want)
    claimed(k, [got, base, idx, vals])
    np.testing.assert_array_equal(got, want)


def test_claims_are_the_last_positions_and_each_element_is_written_once():
    """Each element's claim is the position of the last store that writes it (-1 where none does): points in
    row-major order, a point's stores in order; and the write kernel writes it from that store alone: its
    stores, as counts, count one write. (The reference runs a kernel's stores one after another, each over
    every point, so it is no oracle for several stores of a scatter: lowering makes one.)"""
    rows, cols, stores = 50, 2, 2
    k = scatter(int32, 8 * cols, rows, cols, stores)
    base, idx, vals = inputs(k, seed=1)
    idx[idx >= 6] = 8  # places 6 and 7 unwritten, 8 and -1 outside
    last = np.full(k.buffers[0].size, -1)
    for u in range(rows):
        for v in range(cols):
            for s in range(stores):
                if 0 <= idx[s * rows + u] < 8:
                    last[idx[s * rows + u] * cols + v] = (u * cols + v) * stores + s
    assert (last >= 0).any() and (last == -1).any()
    _, _, write = claim_scatter(k)
    one = ir.const(1, int32)
    counting = ir.Kernel("", write.buffers, (), write.loops,
                         tuple(ir.Store(s.buf, s.index, one, s.at, s.mask, ir.ReduceOp.SUM) for s in write.stores))
    counts = np.zeros(k.buffers[0].size, np.int32)
    claims = claimed(k, [counts, np.zeros_like(base), idx, vals], counting)
    np.testing.assert_array_equal(claims, last)
    np.testing.assert_array_equal(counts, last >= 0)


def test_folding_and_distinct_scatters_need_no_claims():
    assert claim_scatter(scatter(float32, 8, 4, 2, combine=ir.ReduceOp.SUM)) is None
    assert claim_scatter(scatter(float32, 8, 4, 2, distinct=True)) is None


def test_claims_are_int32_unless_the_positions_need_int64():
    """Positions up to 2**31 - 2, and the -1 of no claim, fit an int32."""
    assert claim_scatter(scatter(float32, 8, 2**31 - 1, 1))[0].buffers[-1] == ir.BufferParam(int32, 8, scratch=True)
    assert claim_scatter(scatter(float32, 8, 2**30, 2))[0].buffers[-1].dtype == int64
    assert claim_scatter(scatter(float32, 8, 2**30, 1, stores=2))[0].buffers[-1].dtype == int64
