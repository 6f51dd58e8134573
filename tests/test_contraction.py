"""Contractions against torch: matmul / @ (vectors, matrices, broadcast batches, odd and empty sizes, every
layout), tensordot, dot, vecdot and outer.

float32 products are summed in a different order by torch (blocked BLAS) and by lazytensor (one loop), so
random float32 data would differ by more than float32 rounding of the result near zero. The float32 data
here is therefore quantized to multiples of 1/8: every product and partial sum is exact in float32, any
summation order gives the same answer, and the comparison keeps the full float32 tolerance. float64 tests
use unquantized random data.
"""
from __future__ import annotations

import numpy as np
import pytest
import torch

import lazytensor as lt
from conftest import INT_DTYPES, LAYOUTS, check, layout, random_array


def data(shape: tuple[int, ...], dtype: lt.DType = lt.float32, seed: int = 0) -> np.ndarray:
    """Test data; float32 is quantized to multiples of 1/8 in [-3, 3] (see the module docstring)."""
    arr = random_array(shape, dtype, seed)
    return (np.round(arr * 8) / 8).astype(np.float32) if dtype == lt.float32 else arr


# (lhs layout, rhs layout): each non-contiguous layout on each side at least once
LAYOUT_PAIRS = [("contiguous", "contiguous"), ("transposed", "flipped"), ("strided", "transposed"),
                ("flipped", "strided"), ("contiguous", "transposed")]


def pair(a_shape, b_shape, dtype=lt.float32, kinds=("contiguous", "contiguous")):
    (x, t), (y, u) = layout(data(a_shape, dtype, 1), kinds[0]), layout(data(b_shape, dtype, 2), kinds[1])
    return x, y, t, u


# ---- matmul --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kinds", LAYOUT_PAIRS, ids="-".join)
@pytest.mark.parametrize("shapes", [((4,), (4,)), ((4,), (4, 3)), ((3, 4), (4,)), ((3, 4), (4, 5)),
                                    ((2, 3, 4), (2, 4, 5)), ((2, 1, 3, 4), (5, 4, 2)), ((3, 4), (2, 4, 5)),
                                    ((2, 3, 4), (4,)), ((4,), (2, 4, 3)), ((1, 3, 4), (2, 1, 4, 2))], ids=str)
def test_matmul_shapes(shapes, kinds):
    x, y, t, u = pair(*shapes, kinds=kinds)
    check(x @ y, t @ u)


@pytest.mark.parametrize("nkm", [(1, 1, 1), (1, 7, 33), (33, 7, 1), (7, 33, 7), (33, 1, 7), (7, 7, 33),
                                 (33, 33, 33), (1, 33, 1)], ids=str)
def test_matmul_odd_sizes(nkm):
    # (no flipped layout: conftest's cannot flip a last axis of size 1, and these have many)
    n, k, m = nkm
    for kinds in (("contiguous", "contiguous"), ("transposed", "strided")):
        x, y, t, u = pair((n, k), (k, m), kinds=kinds)
        check(x @ y, t @ u)
    x, y, t, u = pair((n, k), (k, m), lt.float64)
    check(x.matmul(y), t.matmul(u))


@pytest.mark.parametrize("dtype", [lt.float32, lt.float64, *INT_DTYPES], ids=str)
def test_matmul_dtypes(dtype):
    # integer products keep the dtype; int8 and uint8 overflow here and wrap modulo 2**8 like torch
    for kinds in (("contiguous", "contiguous"), ("flipped", "transposed")):
        x, y, t, u = pair((2, 3, 5), (5, 4), dtype, kinds)
        check(x @ y, t @ u)
    x, y, t, u = pair((5,), (5,), dtype)
    check(x @ y, t @ u)


@pytest.mark.parametrize("dtypes", [(lt.int32, lt.float32), (lt.float32, lt.float64), (lt.int8, lt.int64),
                                    (lt.uint8, lt.int8), (lt.bool_, lt.float32)], ids=str)
def test_matmul_mixed_dtypes_promote(dtypes):
    a, b = random_array((3, 4), dtypes[0], 3), random_array((4, 2), dtypes[1], 4)
    ta, tb = torch.tensor(a), torch.tensor(b)
    common = torch.promote_types(ta.dtype, tb.dtype)
    check(lt.asarray(a) @ lt.asarray(b), ta.to(common) @ tb.to(common))


def test_matmul_bool_raises():
    x = lt.asarray(np.ones((2, 2), dtype=bool))
    with pytest.raises(lt.DTypeError):
        x @ x


def test_matmul_transposed_views():
    a = data((6, 4), seed=5)
    x, t = lt.asarray(a), torch.tensor(a)
    check(x.T @ x, t.T @ t)
    check(x @ x.T, t @ t.T)
    check(x[::2].T @ x[1::2], t[::2].T @ t[1::2])
    check(x[:, ::-1] @ x.T[::-1], np.ascontiguousarray(a[:, ::-1]) @ np.ascontiguousarray(a.T[::-1]))
    b = data((3, 4, 5), seed=6)
    xb, tb = lt.asarray(b), torch.tensor(b)
    check(xb.mT @ xb, tb.mT @ tb)
    check(xb.permute(1, 0, 2) @ xb.permute(1, 2, 0), tb.permute(1, 0, 2) @ tb.permute(1, 2, 0))
    check(xb[:, 1] @ xb[0].T, tb[:, 1] @ tb[0].T)


def test_matmul_expanded_operand():
    # an operand broadcast along the output rows makes the product constant along them: the reduction does
    # not read the outer output loop (the scheduler once looped forever on such kernels)
    a, b = data((1, 4), seed=7), data((4, 3), seed=8)
    x, y = lt.asarray(a), lt.asarray(b)
    check(x.expand(5, 4) @ y, np.broadcast_to(a, (5, 4)) @ b)
    check(y.T @ x.T.expand(4, 2), b.T @ np.broadcast_to(a.T, (4, 2)))
    check(x.reshape(1, 1, 4).expand(2, 3, 4) @ y, np.broadcast_to(a, (2, 3, 4)) @ b)


@pytest.mark.parametrize("reduce", ["sum", "mean"])
@pytest.mark.parametrize("dtype", [lt.float32, lt.float64], ids=str)
@pytest.mark.parametrize("shapes", [((33, 20), (20, 17)), ((3, 9, 20), (20, 17)), ((20,), (20, 17))], ids=str)
def test_matmul_gradients_of_a_sum_sum_each_operand_once(shapes, dtype, reduce):
    """`(x @ w).sum().backward()`: the output's gradient is one value, so x's gradient is w's row sums for each
    row of x, and w's gradient x's column sums for each column of w: each summed once, then broadcast (x's was
    summed again for every row of x: 4096x1024 @ 1024x1024, 347 ms one thread, 1 ms now). Against torch."""
    (x, t), (w, u) = (layout(data(shape, dtype, seed), "contiguous") for shape, seed in zip(shapes, (1, 2)))
    x, w, t, u = (v.requires_grad_() for v in (x, w, t, u))
    getattr(x @ w, reduce)().backward()
    getattr(t @ u, reduce)().backward()
    for grad in (x.grad, w.grad) if x.ndim > 1 else ():
        assert all(item.outputs[0].numel < grad.node.numel for item in lt.schedule(grad) if "sum" in str(item.kernel))
    check(x.grad, t.grad)
    check(w.grad, u.grad)


def test_matmul_padded_operands():
    a, b = data((1, 4), seed=7), data((4, 3), seed=8)
    x, y, t, u = lt.asarray(a), lt.asarray(b), torch.tensor(a), torch.tensor(b)
    check(x.pad(((1, 0), (0, 0)), value=2.0) @ y.pad(((0, 0), (1, 1))),
          torch.nn.functional.pad(t, (0, 0, 1, 0), value=2.0) @ torch.nn.functional.pad(u, (1, 1)))


def test_matmul_fused_with_elementwise():
    x, y, t, u = pair((3, 5), (5, 4), kinds=("transposed", "strided"))
    check((x * 2 + 1) @ (y - 0.5), (t * 2 + 1) @ (u - 0.5))
    check((x @ y).sum(0), (t @ u).sum(0))
    check((x @ y).relu() @ y.T, (t @ u).relu() @ u.T)


def test_matmul_larger():
    x, y, t, u = pair((64, 96), (96, 80), lt.float64)
    check(x @ y, t @ u)
    x, y, t, u = pair((50, 200), (200, 30), kinds=("transposed", "contiguous"))
    check(x @ y, t @ u)


def test_matmul_size0():
    for a_shape, b_shape in [((3, 0), (0, 4)), ((0,), (0,)), ((2, 3, 0), (0, 5)), ((0, 3), (3, 4)),
                             ((3, 4), (4, 0)), ((0, 3, 4), (4, 2)), ((2, 0), (0,))]:
        x, y, t, u = pair(a_shape, b_shape)
        check(x @ y, t @ u)  # an empty inner dimension sums nothing: zeros
    x, y, t, u = pair((3, 0), (0, 4), lt.int32)
    check(x @ y, t @ u)


def test_matmul_shape_errors_name_both_shapes():
    x, y = lt.asarray(data((2, 3))), lt.asarray(data((4, 2)))
    with pytest.raises(lt.ShapeError, match=r"\(2, 3\).*\(4, 2\)"):
        x @ y
    with pytest.raises(lt.ShapeError, match=r"\(3,\).*\(4,\)"):
        lt.asarray(data((3,))) @ lt.asarray(data((4,)))
    with pytest.raises(lt.ShapeError, match=r"\(2, 2, 3\).*\(3, 3, 2\)"):
        lt.asarray(data((2, 2, 3))) @ lt.asarray(data((3, 3, 2)))  # batch axes 2 and 3 do not broadcast
    with pytest.raises(lt.ShapeError):
        lt.asarray(np.float32(2)) @ x
    with pytest.raises(ValueError):  # ShapeError is a ValueError, as NumPy raises
        x.matmul(x)


def test_matmul_with_numpy_and_function_form():
    a, b = data((2, 3), seed=9), data((3, 4), seed=10)
    x, y = lt.asarray(a), lt.asarray(b)
    check(x @ b, a @ b)
    got = a @ y
    assert isinstance(got, lt.Tensor)
    check(got, a @ b)
    check(lt.matmul(a, b), a @ b)
    check(lt.matmul(x, y), torch.tensor(a) @ torch.tensor(b))


# ---- tensordot -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("axes", [0, 1, 2], ids=str)
def test_tensordot_int_axes(axes):
    a_shape = (2, 3, 4)
    b_shape = {0: (3, 2), 1: (4, 5), 2: (3, 4, 2)}[axes]
    for kinds in (("contiguous", "contiguous"), ("flipped", "transposed")):
        x, y, t, u = pair(a_shape, b_shape, kinds=kinds)
        check(x.tensordot(y, axes), torch.tensordot(t, u, dims=axes))
        check(lt.tensordot(x, y, axes=axes), np.tensordot(t.numpy(), u.numpy(), axes))


@pytest.mark.parametrize("b_shape,axes", [((3, 5), ([1], [0])), ((4, 6, 2), ([0, 2], [2, 0])),
                                          ((4, 2, 5), ([2, 0], [0, 1])), ((4, 5, 6), ([-1], [-3])), ((3, 5), (1, 0)),
                                          ((4, 2, 3), ([0, 1, 2], [1, 2, 0]))], ids=str)
def test_tensordot_explicit_axes(b_shape, axes):
    # a is (2, 3, 4); b's contracted axes match a's (an int pair is one axis each, as NumPy)
    for kinds in (("contiguous", "contiguous"), ("transposed", "strided")):
        x, y, t, u = pair((2, 3, 4), b_shape, kinds=kinds)
        check(x.tensordot(y, axes), np.tensordot(t.numpy(), u.numpy(), axes))
    x, y, t, u = pair((2, 3, 4), b_shape, lt.float64)
    dims = tuple([d] if isinstance(d, int) else d for d in axes)
    check(lt.tensordot(x, y, axes), torch.tensordot(t, u, dims=dims))


@pytest.mark.parametrize("a_shape,b_shape,axes", [((3, 0), (0, 4), 1), ((2, 0, 3), (0, 3, 5), ([1, 2], [0, 1])),
                                                   ((0,), (0,), 1), ((3, 0), (0,), 1), ((0, 3), (3, 4), 1),
                                                   ((2, 3), (3, 0), 1), ((0, 2), (2, 0), 0)], ids=str)
def test_tensordot_over_a_size_0_axis_gives_zeros(a_shape, b_shape, axes):
    """A size-0 contracted axis sums nothing (zeros); a size-0 free axis gives an empty result."""
    a, b = random_array(a_shape, lt.float32, 1), random_array(b_shape, lt.float32, 2)
    check(lt.tensordot(lt.asarray(a), lt.asarray(b), axes), torch.tensordot(torch.tensor(a), torch.tensor(b), axes))


def test_tensordot_float64_and_errors():
    x, y, t, u = pair((3, 4, 5), (5, 4, 2), lt.float64)
    check(x.tensordot(y, ([1, 2], [1, 0])), torch.tensordot(t, u, dims=([1, 2], [1, 0])))
    with pytest.raises(lt.ShapeError):
        x.tensordot(y, 2)  # (4, 5) against (5, 4)
    with pytest.raises(lt.ShapeError):
        x.tensordot(y, 4)
    with pytest.raises(lt.ShapeError):
        x.tensordot(y, ([0], [0]))
    with pytest.raises(lt.ShapeError):
        x.tensordot(y, ([1, 2], [1]))
    with pytest.raises(lt.AxisError):
        x.tensordot(y, ([3], [0]))


# ---- dot / vecdot / outer ------------------------------------------------------------------------------


def test_dot():
    for kind in LAYOUTS:
        (x, t), (y, u) = layout(data((2, 7), seed=11)[0], kind), layout(data((7, 2), seed=12)[:, 1], "flipped")
        check(x.dot(y), torch.dot(t, u))
    check(lt.dot(data((33,), lt.float64), data((33,), lt.float64, 1)),
          torch.dot(torch.tensor(data((33,), lt.float64)), torch.tensor(data((33,), lt.float64, 1))))
    a, b = random_array((9,), lt.int64, 13), random_array((9,), lt.int64, 14)
    check(lt.asarray(a).dot(lt.asarray(b)), torch.dot(torch.tensor(a), torch.tensor(b)))
    check(lt.asarray(np.zeros(0, np.float32)).dot(lt.asarray(np.zeros(0, np.float32))), torch.tensor(0.0))
    with pytest.raises(lt.ShapeError):
        lt.asarray(data((3,))).dot(lt.asarray(data((4,))))
    with pytest.raises(lt.ShapeError):
        lt.asarray(data((3, 4))).dot(lt.asarray(data((3,))))


@pytest.mark.parametrize("shapes", [((3, 4), (4,)), ((4,), (4, 5)), ((3, 4), (4, 5)), ((2, 3, 4), (4,)),
                                    ((2, 3, 4), (5, 4, 6)), ((4,), (2, 4, 3)), ((), (3, 2)), ((3, 2), ())], ids=str)
def test_dot_of_any_ranks_as_numpy(shapes):
    """NumPy's `dot` beyond 1-d (PyTorch's takes 1-d only): matrix products, and the sum over a's last axis and
    b's second-to-last for more dimensions."""
    a, b = data(shapes[0], lt.float64, 3), data(shapes[1], lt.float64, 4)
    check(lt.dot(lt.asarray(a), lt.asarray(b)), np.dot(a, b))
    check(lt.asarray(a).dot(b), a.dot(b))


@pytest.mark.parametrize("shapes,axis", [(((5,), (5,)), -1), (((3, 5), (5,)), -1), (((3, 5), (2, 1, 5)), -1),
                                         (((4, 3), (4, 3)), 0), (((2, 4, 3), (4, 1)), -2), (((3, 4), (1, 4)), 1)],
                         ids=str)
def test_vecdot(shapes, axis):
    for kinds in (("contiguous", "contiguous"), ("transposed", "strided")):
        x, y, t, u = pair(*shapes, kinds=kinds)
        check(x.vecdot(y, axis), torch.linalg.vecdot(t, u, dim=axis))
    x, y, t, u = pair(*shapes, lt.float64)
    check(lt.vecdot(x, y, axis=axis), np.vecdot(t.numpy(), u.numpy(), axis=axis))


def test_vecdot_errors():
    with pytest.raises(lt.ShapeError):
        lt.asarray(data((3, 5))).vecdot(lt.asarray(data((4,))))
    for shapes, axis in ((((3, 5), (1,)), -1), (((3, 1), (3, 4)), -1), (((4, 3), (1, 3)), 0), (((5,), (2, 1)), -1)):
        with pytest.raises(lt.ShapeError, match="differ in length"):  # the vectors are not broadcast, as NumPy
            lt.asarray(data(shapes[0])).vecdot(lt.asarray(data(shapes[1])), axis)
        with pytest.raises(ValueError):
            np.vecdot(data(shapes[0]), data(shapes[1]), axis=axis)
    with pytest.raises(lt.AxisError):
        lt.asarray(data((3, 5))).vecdot(lt.asarray(data((3, 5))), axis=2)


def test_outer():
    for kind in LAYOUTS:
        (x, t), (y, u) = layout(data((2, 5), seed=15)[1], kind), layout(data((4,), seed=16), "flipped")
        check(x.outer(y), torch.outer(t, u))
        check(lt.outer(y, x), torch.outer(u, t))
    a, b = data((2, 3), seed=17), data((2, 2), seed=18)
    check(lt.outer(a, b), np.outer(a, b))  # NumPy flattens its inputs
    i, j = random_array((3,), lt.int32, 19), random_array((2,), lt.int8, 20)
    check(lt.asarray(i).outer(lt.asarray(j)), torch.outer(torch.tensor(i), torch.tensor(j)))
    check(lt.asarray(np.zeros(0, np.float32)).outer(lt.asarray(data((3,)))), torch.zeros(0, 3))


@pytest.mark.parametrize("dtype", [lt.float32, lt.float64])
def test_a_product_of_gathered_rows_reads_the_gathered_buffer(dtype):
    """An operand gathered by index inside the product (`t[i].T @ w`: the rows that a packed sequence's or an
    embedding's gradient picks): the Triton template passed the kernel only the buffers its loads read, not its
    gathers' (a NameError in the generated source), at any n, generic or not."""
    t, i = data((7, 4), dtype), np.array([3, -1, 0, 6, -7, 2, 2, 5, 1, -3, 4, 0])
    for n in (20, 36):
        w = data((12, n), dtype, seed=n)
        check(lt.asarray(t)[lt.asarray(i)].T @ lt.asarray(w), torch.tensor(t)[torch.tensor(i)].T @ torch.tensor(w))
