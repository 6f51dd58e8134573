"""Adjacent loops merged where every index reads them as one (`kernels/loop_merge.py`): which merge, and the
results of the reductions and elementwise kernels over several axes that now run over merged loops."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import lazytensor as lt
from conftest import check, random_array
from lazytensor.kernels import ir
from lazytensor.kernels.dtype import float32
from lazytensor.kernels.expr import Bound, Expr, Var
from lazytensor.kernels.loop_merge import merge_loops


def the_kernel(t: lt.Tensor) -> ir.Kernel:
    (item,) = lt.schedule(t)
    return item.kernel


def reduction_loops(kernel: ir.Kernel) -> list[tuple[int, ...]]:
    return [tuple(v.size for v in value.arg[1]) for value in kernel.values() if value.op is ir.VOp.REDUCE]


def copy_kernel(loops: tuple[Var, ...], read: Expr, write: Expr, bounds: tuple[Bound, ...] = ()) -> ir.Kernel:
    buffers = (ir.BufferParam(float32, 1 << 12, output=True), ir.BufferParam(float32, 1 << 12))
    return ir.Kernel("", buffers, (), loops, (ir.Store(0, write, ir.load(1, float32, read, bounds)),))


# ---- which loops merge ----------------------------------------------------------------------

A, B, C = Var("o0", 4), Var("o1", 5), Var("o2", 6)


def test_loops_read_as_one_merge_into_one():
    index = Expr.of(A) * 30 + Expr.of(B) * 6 + Expr.of(C)
    merged, _ = merge_loops(copy_kernel((A, B, C), index * 2, index))
    assert [v.size for v in merged.loops] == [120]
    (store,) = merged.stores
    assert store.index == Expr.of(merged.loops[0]) and store.value.arg[1] == Expr.of(merged.loops[0]) * 2


def test_a_run_stops_where_an_index_reads_one_of_its_loops_alone():
    index = Expr.of(A) * 30 + Expr.of(B) * 6 + Expr.of(C)
    transposed = Expr.of(A) * 30 + Expr.of(B) + Expr.of(C) * 5  # (b, c) transposed: only a and b's pair is one
    merged, _ = merge_loops(copy_kernel((A, B, C), transposed, index))
    assert [v.size for v in merged.loops] == [4, 5, 6]
    broadcast = Expr.of(B) * 6 + Expr.of(C)  # a not read: b and c merge, a stays
    merged, _ = merge_loops(copy_kernel((A, B, C), broadcast, index))
    assert [v.size for v in merged.loops] == [4, 30]


def test_a_bound_on_one_loop_keeps_it_apart():
    index = Expr.of(A) * 30 + Expr.of(B) * 6 + Expr.of(C)
    padded = (Bound(Expr.of(C), 1, 5),)  # a pad of the last axis: valid where 1 <= c < 5
    merged, _ = merge_loops(copy_kernel((A, B, C), index, index, padded))
    assert [v.size for v in merged.loops] == [20, 6]


def test_nothing_to_merge_gives_the_kernel_back():
    index = Expr.of(A) + Expr.of(B) * 4
    kernel = copy_kernel((A, B), index, index)
    assert merge_loops(kernel)[0] is kernel


@pytest.mark.parametrize("axes, loops", [((2, 3), [3136]), ((0, 2, 3), [32, 3136]), ((1, 2, 3), [64 * 3136]),
                                         ((0, 1), [32 * 64])])
def test_a_reduction_over_adjacent_contiguous_axes_folds_over_one_loop(axes, loops):
    x = lt.asarray(np.zeros((32, 64, 56, 56), np.float32))  # a buffer: a constant's loops read no memory
    kernel = the_kernel(x.mean(axes) if axes != (0, 1) else x.sum(axes))
    assert reduction_loops(kernel) == [tuple(loops)]


def test_a_permuted_input_keeps_its_loops():
    x = lt.asarray(np.zeros((8, 16, 32), np.float32)).permute(0, 2, 1)
    assert reduction_loops(the_kernel(x.sum((1, 2)))) == [(32, 16)]


def test_an_elementwise_kernel_over_a_contiguous_tensor_is_one_loop():
    kernel = the_kernel(lt.asarray(np.zeros((32, 64, 56, 56), np.float32)) * 2)
    assert [v.size for v in kernel.loops] == [32 * 64 * 56 * 56]


# ---- results against torch -------------------------------------------------------------------

SHAPES = [(3, 5, 7, 9), (2, 1, 33, 65), (4, 3, 0, 5), (1, 1, 1, 1)]
REDUCTIONS = {
    "sum": (lambda x, a: x.sum(a), lambda t, a: t.sum(a)),
    "mean": (lambda x, a: x.mean(a), lambda t, a: t.mean(a)),
    "var": (lambda x, a: x.var(a), lambda t, a: t.var(a, unbiased=False)),
    "amax": (lambda x, a: x.max(a), lambda t, a: t.amax(a)),
    "amin keepdims": (lambda x, a: x.min(a, keepdims=True), lambda t, a: t.amin(a, keepdim=True)),
    "logsumexp": (lambda x, a: x.logsumexp(a), lambda t, a: t.logsumexp(a)),
}


@pytest.mark.parametrize("axes", [(2, 3), (0, 2, 3), (1, 2), (0, 1, 2, 3)])
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("name", list(REDUCTIONS))
@pytest.mark.parametrize("dtype", [lt.float32, lt.float64])
def test_reductions_over_several_axes(name, dtype, shape, axes):
    ours, theirs = REDUCTIONS[name]
    if 0 in shape and name in ("amax", "amin keepdims"):
        return  # torch raises for an empty max, as lazytensor does (test_reduce)
    arr = random_array(shape, dtype)
    check(ours(lt.asarray(arr), axes), theirs(torch.tensor(arr), axes))


@pytest.mark.parametrize("dtype", [lt.int32, lt.int64, lt.int8, lt.bool_])
def test_integer_and_bool_reductions_over_several_axes(dtype):
    arr = random_array((3, 4, 17, 19), dtype)
    x, t = lt.asarray(arr), torch.tensor(arr)
    check(x.sum((2, 3)), t.sum((2, 3)))
    check(x.max((0, 2, 3)), t.amax((0, 2, 3)))
    check(x.any((1, 2)) if dtype == lt.bool_ else (x > 3).any((1, 2)),
          t.any(2).any(1) if dtype == lt.bool_ else (t > 3).any(2).any(1))


def test_argmax_over_a_flattened_tensor_and_its_rows():
    arr = random_array((6, 7, 8, 9), lt.float32)
    x, t = lt.asarray(arr), torch.tensor(arr)
    check(x.argmax(), t.argmax())
    check(x.reshape(6, -1).argmax(1), t.reshape(6, -1).argmax(1))


def test_non_contiguous_broadcast_and_padded_inputs():
    arr = random_array((5, 6, 7, 8), lt.float32)
    x, t = lt.asarray(arr), torch.tensor(arr)
    check(x.permute(0, 2, 1, 3).sum((2, 3)), t.permute(0, 2, 1, 3).sum((2, 3)))
    check(x[:, :, ::2, 1:].mean((2, 3)), t[:, :, ::2, 1:].mean((2, 3)))
    check(lt.asarray(arr[:, :, :1]).expand(5, 6, 7, 8).sum((2, 3)),
          torch.tensor(arr[:, :, :1]).expand(5, 6, 7, 8).sum((2, 3)))
    check(x.pad([(0, 0), (0, 0), (1, 2), (0, 0)]).sum((2, 3)),
          torch.nn.functional.pad(t, (0, 0, 1, 2)).sum((2, 3)))
    check((x * 2 + x.permute(0, 1, 3, 2).permute(0, 1, 3, 2)).exp(), (t * 2 + t).exp())
    check(x - x.mean((2, 3), keepdims=True), t - t.mean((2, 3), keepdim=True))
