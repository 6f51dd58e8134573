"""`lt.linalg`, the array API's linear algebra extension, against torch.linalg and NumPy: norms, diagonal,
trace, cross, matrix_transpose and the contractions it re-exports, over dtypes, batches, broadcasting, 0-d
and size-0 shapes and non-contiguous inputs."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import lazytensor as lt
from conftest import LAYOUTS, check, inputs, layout, random_array, to_torch_dtype
from lazytensor import linalg

FLOATS = [lt.float32, lt.float64]


def test_the_namespace():
    assert lt.linalg is linalg
    assert set(linalg.__all__) == {"cross", "diagonal", "matmul", "matrix_norm", "matrix_transpose", "norm", "outer",
                                   "tensordot", "trace", "vecdot", "vector_norm"}
    assert all(callable(getattr(linalg, name)) and getattr(linalg, name).__doc__ for name in linalg.__all__)


@pytest.mark.parametrize("dtype", FLOATS + [lt.int32], ids=str)
def test_reexported_contractions(dtype):
    a, b = random_array((2, 3, 4), dtype, seed=100), random_array((4, 5), dtype, seed=101)
    for kind in LAYOUTS:
        (x, tx), (y, ty) = layout(a, kind), layout(b, kind)
        check(linalg.matmul(x, y), torch.matmul(tx, ty))
        check(linalg.tensordot(x, y, axes=1), torch.tensordot(tx, ty, 1))
        check(linalg.vecdot(x, x, axis=1), (tx * tx).sum(1, dtype=tx.dtype))
        check(linalg.outer(x[0, 0], y[0]), torch.outer(tx[0, 0], ty[0]))
    with pytest.raises(lt.ShapeError, match="1-d"):
        linalg.outer(lt.zeros(2, 2), lt.zeros(2))


@pytest.mark.parametrize("shape", [(3, 4), (2, 3, 4), (0, 2), (1, 5, 0)], ids=str)
def test_matrix_transpose(shape):
    for kind, x, t in inputs(shape, lt.int16, seed=102):
        check(linalg.matrix_transpose(x), t.mT)
        check(lt.matrix_transpose(x), t.mT)
    with pytest.raises(lt.ShapeError):
        lt.matrix_transpose(lt.zeros(3))


@pytest.mark.parametrize("dtype", FLOATS + [lt.int64, lt.uint8, lt.bool_], ids=str)
@pytest.mark.parametrize("shape", [(4, 4), (3, 5), (5, 3), (2, 3, 4), (0, 3), (2, 0, 4), (1, 1)], ids=str)
@pytest.mark.parametrize("offset", [0, 1, -1, 2, -4, 9])
def test_diagonal(dtype, shape, offset):
    for kind, x, t in inputs(shape, dtype, seed=103):
        check(linalg.diagonal(x, offset=offset), torch.diagonal(t, offset, -2, -1))


@pytest.mark.parametrize("dtype", FLOATS + [lt.int32, lt.uint8, lt.bool_], ids=str)
@pytest.mark.parametrize("shape", [(4, 4), (3, 5), (2, 3, 4), (0, 3), (2, 0, 4)], ids=str)
@pytest.mark.parametrize("offset", [0, 1, -2])
def test_trace(dtype, shape, offset):
    for kind, x, t in inputs(shape, dtype, seed=104):
        # sum's dtypes, NumPy's: bools and ints in int64, unsigned ints in uint64
        expected = np.trace(t.numpy(), offset, -2, -1)
        check(linalg.trace(x, offset=offset), expected)
    x = lt.asarray(random_array((3, 3), lt.int8, seed=105))
    check(linalg.trace(x, dtype=lt.float64), np.trace(x.numpy(), dtype=np.float64))


def test_diagonal_and_trace_errors_and_gradient():
    with pytest.raises(lt.ShapeError, match="at least 2 dimensions"):
        linalg.diagonal(lt.zeros(3))
    with pytest.raises(lt.ShapeError, match="at least 2 dimensions"):
        linalg.trace(lt.asarray(1.0))
    arr = random_array((2, 3, 3), lt.float64, seed=106)
    x, t = lt.asarray(arr).requires_grad_(), torch.tensor(arr, requires_grad=True)
    (linalg.trace(x, offset=1) * lt.asarray([1.0, 2.0], dtype=lt.float64)).sum().backward()
    (torch.diagonal(t, 1, -2, -1).sum(-1) * torch.tensor([1.0, 2.0], dtype=torch.float64)).sum().backward()
    check(x.grad, t.grad)


ORDS = [2, 1, math.inf, -math.inf, 0, 3, 0.5, -1]


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("ord", ORDS, ids=str)
@pytest.mark.parametrize("axis,keepdims", [(None, False), (None, True), (1, False), (-1, True), ((0, 2), False)],
                         ids=str)
def test_vector_norm(dtype, ord, axis, keepdims):
    for kind, x, t in inputs((3, 4, 5), dtype, seed=107):
        got = linalg.vector_norm(x, axis=axis, keepdims=keepdims, ord=ord)
        check(got, torch.linalg.vector_norm(t, ord=ord, dim=axis, keepdim=keepdims))


@pytest.mark.parametrize("dtype", [lt.int32, lt.uint8, lt.bool_, lt.float16, lt.bfloat16], ids=str)
def test_vector_norm_of_ints_is_float32_and_of_16_bit_floats_is_their_own(dtype):
    arr = random_array((4, 6), lt.float32 if dtype.is_float else dtype, seed=108)
    x = lt.asarray(arr).cast(dtype)
    t = torch.tensor(arr).to(to_torch_dtype(dtype))
    for ord in (2, 1, math.inf, 0):
        expected = torch.linalg.vector_norm(t if dtype.is_float else t.float(), ord=ord, dim=1)
        check(linalg.vector_norm(x, axis=1, ord=ord), expected)


def test_vector_norm_0d_size_0_and_special_values():
    check(linalg.vector_norm(lt.asarray(np.float32(-3.0))), torch.linalg.vector_norm(torch.tensor(-3.0)))
    check(linalg.vector_norm(lt.zeros(0, 3), axis=0), torch.linalg.vector_norm(torch.zeros(0, 3), dim=0))
    special = np.array([[np.inf, 1.0], [np.nan, 1.0], [-np.inf, np.inf], [0.0, -0.0]], np.float32)
    for ord in ORDS:
        check(linalg.vector_norm(lt.asarray(special), axis=1, ord=ord),
              torch.linalg.vector_norm(torch.tensor(special), ord=ord, dim=1))


def test_vector_norm_gradient():
    arr = random_array((3, 4), lt.float64, seed=109)
    for ord in (2, 3, math.inf):
        x, t = lt.asarray(arr).requires_grad_(), torch.tensor(arr, requires_grad=True)
        linalg.vector_norm(x, axis=1, ord=ord).sum().backward()
        torch.linalg.vector_norm(t, ord=ord, dim=1).sum().backward()
        check(x.grad, t.grad)


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("ord", ["fro", 1, -1, math.inf, -math.inf], ids=str)
@pytest.mark.parametrize("shape", [(3, 4), (2, 4, 3), (2, 1, 5, 5), (1, 1)], ids=str)
@pytest.mark.parametrize("keepdims", [False, True])
def test_matrix_norm(dtype, ord, shape, keepdims):
    for kind, x, t in inputs(shape, dtype, seed=110):
        check(linalg.matrix_norm(x, ord=ord, keepdims=keepdims),
              torch.linalg.matrix_norm(t, ord=ord, keepdim=keepdims))


def test_matrix_norm_of_ints_size_0_and_errors():
    arr = random_array((3, 3), lt.int16, seed=111)
    check(linalg.matrix_norm(lt.asarray(arr)), torch.linalg.matrix_norm(torch.tensor(arr).float()))
    check(linalg.matrix_norm(lt.zeros(2, 0, 3)), torch.linalg.matrix_norm(torch.zeros(2, 0, 3)))
    for ord in ("nuc", 2, -2):
        with pytest.raises(NotImplementedError, match="singular values"):
            linalg.matrix_norm(lt.zeros(2, 2), ord=ord)
    for ord in ("max", 3, 0):
        with pytest.raises(ValueError, match="ord must be"):
            linalg.matrix_norm(lt.zeros(2, 2), ord=ord)
    with pytest.raises(lt.ShapeError, match="at least 2 dimensions"):
        linalg.matrix_norm(lt.zeros(3))


@pytest.mark.parametrize("dtype", FLOATS + [lt.int32, lt.int8], ids=str)
@pytest.mark.parametrize("shapes,axis", [(((3,), (3,)), -1), (((4, 3), (4, 3)), -1), (((4, 3), (3,)), -1),
                                         (((3, 5), (3, 1)), 0), (((2, 3, 4), (1, 3, 1)), 1), (((0, 3), (3,)), -1),
                                         (((3, 2), (2, 3, 2)), -2)], ids=str)
def test_cross(dtype, shapes, axis):
    a, b = (random_array(s, dtype, seed=112 + i) for i, s in enumerate(shapes))
    for kind in LAYOUTS:
        (x, tx), (y, ty) = layout(a, kind), layout(b, "contiguous")
        tx, ty = torch.broadcast_tensors(tx, ty)
        check(linalg.cross(x, y, axis=axis), torch.linalg.cross(tx, ty, dim=axis))
        check(linalg.cross(x, y, axis=axis), np.cross(a, b, axis=axis))


def test_cross_errors():
    with pytest.raises(lt.ShapeError, match="size 3"):
        linalg.cross(lt.zeros(4), lt.zeros(4))
    with pytest.raises(lt.ShapeError, match="size 3"):
        linalg.cross(lt.zeros(3, 2), lt.zeros(3, 2))
    with pytest.raises(lt.ShapeError):
        linalg.cross(lt.zeros(2, 3), lt.zeros(3, 3))
