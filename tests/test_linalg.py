"""`lt.linalg`, the array API's linear algebra extension, against torch.linalg and NumPy: norms, diagonal,
trace, cross, matrix_transpose and the contractions it re-exports; the factorizations (cholesky, det, slogdet,
inv, solve, eigh, eigvalsh, qr, svd, svdvals) and what is built on them (pinv, matrix_rank, matrix_power, the
singular value norms), their gradients, their kernel in the schedule, their errors (LinAlgError at the realize,
DeviceError on a GPU); over dtypes, batches, broadcasting, 0-d and size-0 shapes and non-contiguous inputs."""
from __future__ import annotations

import math
import threading

import numpy as np
import pytest
import torch
from test_autograd import check_grads

import lazytensor as lt
import lazytensor.device
import triton_interpreter  # noqa: F401  (registers torch storage for the interpreter)
from conftest import LAYOUTS, check, inputs, layout, random_array, to_torch_dtype
from lazytensor import linalg
from lazytensor.kernels import ir

FLOATS = [lt.float32, lt.float64]
ON_CPU = lt.zeros(1).device == "cpu"  # LT_DEVICE's; the factorizations run on the CPU only
factorization = pytest.mark.skipif(not ON_CPU, reason="LAPACK runs on the CPU: on another device a factorization "
                                                      "raises DeviceError (test_factorizations_on_a_gpu_raise...)")


def test_the_namespace():
    assert lt.linalg is linalg
    assert set(linalg.__all__) == {
        "LinAlgError", "cholesky", "cross", "det", "diagonal", "eigh", "eigvalsh", "inv", "matmul", "matrix_norm",
        "matrix_power", "matrix_rank", "matrix_transpose", "norm", "outer", "pinv", "qr", "slogdet", "solve", "svd",
        "svdvals", "tensordot", "trace", "vecdot", "vector_norm",
        "LstsqResult", "cond", "lstsq", "multi_dot", "tensorinv", "tensorsolve"}  # NumPy's beyond the standard
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


def test_the_2_norm_is_the_kernel_of_the_square_root_of_the_sum_of_squares():
    """`norm(x, axis=-1)` and `(x ** 2).sum(-1) ** 0.5` are one kernel, the same: no |x| before the square."""
    x = lt.asarray(random_array((6, 5), lt.float32, seed=110))
    spelled = [linalg.norm(x, axis=-1), linalg.vector_norm(x, axis=-1), (x ** 2).sum(-1) ** 0.5]
    assert {tuple(item.kernel.name for item in lt.schedule(t)) for t in spelled} == \
        {tuple(item.kernel.name for item in lt.schedule(spelled[-1]))}
    assert len(lt.schedule(spelled[0])) == 1


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


# ---- factorizations ----------------------------------------------------------------------------------------
#
# The oracle is torch in float64, its results rounded to the dtype under test (`oracle`): NumPy's LAPACK, which
# lazytensor runs, computes float32 in float64 and rounds once, so a float32 result is the float64 one rounded,
# within the float32 tolerance of conftest.check (1e-5, 1e-6); torch's own float32 LAPACK rounds at every step
# and would stand further away than that for the same data. The data are well conditioned (condition numbers
# below about 30), so torch's float64 and NumPy's float64 agree within the float64 tolerance too.


def oracle(fn, arr: np.ndarray, dtype: lt.DType, *others: np.ndarray):
    """torch's `fn` of the arrays in float64, its float results (each of a tuple) rounded to `dtype`."""
    out = fn(*(torch.tensor(np.asarray(a, np.float64)) for a in (arr, *others)))
    to = to_torch_dtype(dtype)
    if isinstance(out, tuple):
        return tuple(t.to(to) if t.is_floating_point() else t for t in out)
    return out.to(to) if out.is_floating_point() else out


def general(shape: tuple[int, ...], seed: int) -> np.ndarray:
    """Square matrices far from singular (uniform in [-1, 1) plus 3 on the diagonal), the sign of every other
    one's first row flipped, so determinants of both signs come up."""
    rng = np.random.default_rng(seed)
    a = rng.uniform(-1, 1, shape) + 3 * np.eye(shape[-1])
    if a.size:
        a.reshape(-1, *shape[-2:])[::2, :1] *= -1
    return a


def spd(shape: tuple[int, ...], seed: int) -> np.ndarray:
    """Symmetric positive-definite matrices: B @ B.T + n I."""
    b = np.random.default_rng(seed).uniform(-1, 1, shape)
    return b @ np.swapaxes(b, -1, -2) + shape[-1] * np.eye(shape[-1])


def orthonormal(batch: tuple[int, ...], m: int, k: int, rng: np.random.Generator) -> np.ndarray:
    """m x k matrices with orthonormal columns."""
    q, _ = np.linalg.qr(rng.standard_normal((*batch, m, max(k, 1))))
    return q[..., :k]


def symmetric(shape: tuple[int, ...], seed: int) -> np.ndarray:
    """Symmetric matrices whose eigenvalues are at least 0.5 apart (an eigenvector is then well determined)."""
    rng = np.random.default_rng(seed)
    *batch, n, _ = shape
    q = orthonormal(tuple(batch), n, n, rng)
    w = np.linspace(-n / 2, n / 2, n) + rng.uniform(-0.2, 0.2, (*batch, n))
    return (q * w[..., None, :]) @ np.swapaxes(q, -1, -2)


def distinct_singular(shape: tuple[int, ...], seed: int) -> np.ndarray:
    """M x N matrices whose singular values are at least 0.5 apart and at least 1."""
    rng = np.random.default_rng(seed)
    *batch, m, n = shape
    k = min(m, n)
    s = 1 + np.arange(k)[::-1] + rng.uniform(0, 0.3, (*batch, k))
    return (orthonormal(tuple(batch), m, k, rng) * s[..., None, :]) @ np.swapaxes(
        orthonormal(tuple(batch), n, k, rng), -1, -2)


def views(arr: np.ndarray, dtype: lt.DType):
    """The data rounded to `dtype` (what the oracle gets too) and, in each of the LAYOUTS, as a tensor."""
    data = arr.astype(dtype.name)
    return data, [layout(data, kind)[0] for kind in LAYOUTS]


def signs_fixed(vectors: np.ndarray) -> np.ndarray:
    """Eigenvectors or singular vectors (columns) are determined up to sign: each column's largest entry made
    positive. (Also the sign of each vector, to apply to its partner in an SVD.)"""
    if vectors.size == 0:
        return vectors, np.ones((*vectors.shape[:-2], 1, vectors.shape[-1]), vectors.dtype)
    at = np.abs(vectors).argmax(axis=-2)[..., None, :]
    sign = np.where(np.take_along_axis(vectors, at, axis=-2) < 0, -1.0, 1.0).astype(vectors.dtype)
    return vectors * sign, sign


SQUARE = [(1, 1), (4, 4), (3, 5, 5), (2, 1, 3, 3), (0, 3, 3), (0, 0), (2, 0, 0)]
RECTANGULAR = [(4, 3), (3, 5), (2, 6, 4), (2, 1, 3, 3), (0, 2, 3), (3, 0), (0, 3), (2, 0, 4)]


@factorization
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("shape", SQUARE, ids=str)
@pytest.mark.parametrize("upper", [False, True])
def test_cholesky(dtype, shape, upper):
    data, xs = views(spd(shape, seed=200), dtype)
    expected = oracle(lambda t: torch.linalg.cholesky(t, upper=upper), data, dtype)
    for x in xs:
        check(linalg.cholesky(x, upper=upper), expected)


@factorization
def test_cholesky_reads_the_lower_triangle_only():
    data = spd((3, 4, 4), seed=201)
    x = lt.asarray(np.tril(data) + np.triu(np.full_like(data, 7.0), 1))
    check(linalg.cholesky(x), torch.linalg.cholesky(torch.tensor(data)))


@factorization
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("shape", SQUARE, ids=str)
def test_inv_det_slogdet(dtype, shape):
    data, xs = views(general(shape, seed=202), dtype)
    inverse, det = oracle(torch.linalg.inv, data, dtype), oracle(torch.linalg.det, data, dtype)
    sign, logabsdet = oracle(torch.linalg.slogdet, data, dtype)
    for x in xs:
        check(linalg.inv(x), inverse)
        check(linalg.det(x), det)
        result = linalg.slogdet(x)
        assert type(result) is linalg.SlogdetResult and result.sign is result[0]
        check(result.sign, sign)
        check(result.logabsdet, logabsdet)


@factorization
def test_slogdet_and_det_of_singular_and_huge_matrices():
    singular = np.array([[1.0, 2.0], [2.0, 4.0]])
    huge = np.eye(3) * 1e200
    x = lt.asarray(np.stack([singular, -np.eye(2)]))
    check(linalg.det(x), np.array([0.0, 1.0]))
    check(linalg.slogdet(x).sign, np.array([0.0, 1.0]))
    check(linalg.slogdet(x).logabsdet, np.array([-np.inf, 0.0]))
    check(linalg.slogdet(lt.asarray(huge)).logabsdet, np.asarray(600 * np.log(10.0)))  # det overflows, its log not


SOLVE_SHAPES = [((4, 4), (4,)), ((3, 4, 4), (4,)), ((3, 4, 4), (4, 2)), ((4, 4), (2, 4, 3)),
                ((2, 1, 4, 4), (3, 4, 1)), ((0, 4, 4), (4,)), ((3, 3), (3, 0)), ((2, 0, 0), (2, 0, 2))]


@factorization
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("shapes", SOLVE_SHAPES, ids=str)
def test_solve_broadcasts_as_the_standard_says(dtype, shapes):
    a, b = general(shapes[0], seed=203), np.random.default_rng(204).uniform(-3, 3, shapes[1])
    (a, xs), (b, ys) = views(a, dtype), views(b, dtype)
    expected = oracle(torch.linalg.solve, a, dtype, b)
    for x, y in zip(xs, ys):
        check(linalg.solve(x, y), expected)


@factorization
def test_solve_promotes_its_operands():
    a, b = general((3, 3), seed=205), np.arange(3.0)
    got = linalg.solve(lt.asarray(a.astype(np.float32)), lt.asarray(b))
    check(got, torch.linalg.solve(torch.tensor(a.astype(np.float32)).double(), torch.tensor(b)))


@factorization
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("shape", SQUARE, ids=str)
def test_eigh_and_eigvalsh(dtype, shape):
    data, xs = views(symmetric(shape, seed=206), dtype)
    values, vectors = oracle(torch.linalg.eigh, data, dtype)
    for x in xs:
        result = linalg.eigh(x)
        assert type(result) is linalg.EighResult and result.eigenvectors is result[1]
        check(result.eigenvalues, values)
        check(lt.asarray(signs_fixed(result.eigenvectors.numpy())[0]), torch.tensor(signs_fixed(vectors.numpy())[0]))
        check(linalg.eigvalsh(x), values)


@factorization
def test_eigh_reads_the_lower_triangle_only():
    data = symmetric((2, 4, 4), seed=207)
    x = lt.asarray(np.tril(data) + np.triu(np.full_like(data, -5.0), 1))
    check(linalg.eigvalsh(x), torch.linalg.eigvalsh(torch.tensor(data)))


@factorization
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("shape", RECTANGULAR + [(4, 4)], ids=str)
@pytest.mark.parametrize("mode", ["reduced", "complete"])
def test_qr(dtype, shape, mode):
    data, xs = views(distinct_singular(shape, seed=208), dtype)
    q, r = oracle(lambda t: torch.linalg.qr(t, mode=mode), data, dtype)  # LAPACK's signs: the same Householders
    for x in xs:
        result = linalg.qr(x, mode=mode)
        assert type(result) is linalg.QRResult and result.R is result[1]
        check(result.Q, q)
        check(result.R, r)


@factorization
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("shape", RECTANGULAR + [(5, 5)], ids=str)
@pytest.mark.parametrize("full_matrices", [True, False])
def test_svd_and_svdvals(dtype, shape, full_matrices):
    data, xs = views(distinct_singular(shape, seed=209), dtype)
    u, s, vh = oracle(lambda t: torch.linalg.svd(t, full_matrices=full_matrices), data, dtype)
    k = min(shape[-2:])
    fixed_u, sign = signs_fixed(u.numpy()[..., :k])  # a singular pair's signs flip together
    for x in xs:
        result = linalg.svd(x, full_matrices=full_matrices)
        assert type(result) is linalg.SVDResult and result.Vh is result[2]
        assert result.U.shape == tuple(u.shape) and result.Vh.shape == tuple(vh.shape)
        check(result.S, s)
        check(linalg.svdvals(x), s)
        got_u, got_sign = signs_fixed(result.U.numpy()[..., :k])
        check(lt.asarray(got_u), torch.tensor(fixed_u))
        check(lt.asarray(result.Vh.numpy()[..., :k, :] * np.swapaxes(got_sign, -1, -2)),
              torch.tensor(vh.numpy()[..., :k, :] * np.swapaxes(sign, -1, -2)))
        # the full matrices' other vectors are any orthonormal completion: orthonormal is what to check
        for q in (result.U.numpy(), np.swapaxes(result.Vh.numpy(), -1, -2)):
            check(lt.asarray(np.swapaxes(q, -1, -2) @ q), np.broadcast_to(np.eye(q.shape[-1], dtype=q.dtype),
                                                                           (*q.shape[:-2], q.shape[-1], q.shape[-1])),
                  atol=10 * lt.finfo(dtype).eps)


@factorization
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("shape", [(4, 3), (3, 5), (2, 6, 4), (2, 1, 3, 3), (0, 2, 3), (3, 0)], ids=str)
def test_pinv(dtype, shape):
    data, xs = views(distinct_singular(shape, seed=210), dtype)
    expected = oracle(torch.linalg.pinv, data, dtype)
    for x in xs:
        check(linalg.pinv(x), expected)


@factorization
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_pinv_and_matrix_rank_with_rtol(dtype):
    """Rank-deficient integer data (exact in both dtypes): singular values the data makes zero are zero within
    roundoff, far below the default cut-off (max(M, N) * eps of the dtype times the largest); an rtol per matrix
    cuts more."""
    rng = np.random.default_rng(211)
    ranks = [1, 2, 3, 3]
    data = np.stack([rng.integers(-3, 4, (5, r)) @ rng.integers(-3, 4, (r, 4)) for r in ranks]).astype(dtype.name)
    eps = lt.finfo(dtype).eps
    for x in views(data, dtype)[1]:
        check(linalg.matrix_rank(x), torch.tensor(ranks))
        check(linalg.matrix_rank(x, rtol=0.99), torch.ones(4, dtype=torch.int64))
        rtol = np.array([1e-3, 1e-3, 1.0, 0.5], dtype=dtype.name)
        check(linalg.matrix_rank(x, rtol=lt.asarray(rtol)),
              torch.linalg.matrix_rank(torch.tensor(data).double(), rtol=torch.tensor(rtol).double()))
        check(linalg.pinv(x), oracle(lambda t: torch.linalg.pinv(t, rtol=5 * eps), data, dtype))
        check(linalg.pinv(x, rtol=0.5), oracle(lambda t: torch.linalg.pinv(t, rtol=0.5), data, dtype))
    check(linalg.matrix_rank(lt.zeros(2, 0, 3)), torch.zeros(2, dtype=torch.int64))


@factorization
@pytest.mark.parametrize("n", [0, 1, 2, 3, 6, -1, -3])
def test_matrix_power(n):
    """Repeated squaring in the dtype, as torch's: the float32 oracle is torch's float32 (its products round as
    ours do); the inverse's power goes through LAPACK, so there the float64 oracle, rounded."""
    data = general((3, 4, 4), seed=212) / 3  # norms near 1: powers stay in range
    for dtype in FLOATS:
        arr, xs = views(data, dtype)
        t = torch.tensor(arr)
        expected = torch.linalg.matrix_power(t, n) if n >= 0 else oracle(lambda u: torch.linalg.matrix_power(u, n),
                                                                          arr, dtype)
        for x in xs:
            check(linalg.matrix_power(x, n), expected)
    ints = random_array((2, 3, 3), lt.int32, seed=213) % 5 + 4 * np.eye(3, dtype=np.int32)
    if n >= 0:  # in the integers' own dtype, as NumPy's and torch's
        check(linalg.matrix_power(lt.asarray(ints), n), torch.linalg.matrix_power(torch.tensor(ints), n))
    else:  # the inverse's: in the default float (NumPy's is float64, torch refuses)
        check(linalg.matrix_power(lt.asarray(ints), n), oracle(lambda u: torch.linalg.matrix_power(u, n), ints,
                                                                lt.float32))


@factorization
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("ord", ["nuc", 2, -2], ids=str)
@pytest.mark.parametrize("shape", [(3, 4), (2, 4, 3), (2, 1, 5, 5), (1, 1)], ids=str)
@pytest.mark.parametrize("keepdims", [False, True])
def test_matrix_norm_of_singular_values(dtype, ord, shape, keepdims):
    data, xs = views(distinct_singular(shape, seed=214), dtype)
    expected = oracle(lambda t: torch.linalg.matrix_norm(t, ord=ord, keepdim=keepdims), data, dtype)
    for x in xs:
        check(linalg.matrix_norm(x, ord=ord, keepdims=keepdims), expected)
    ints = random_array((3, 3), lt.int16, seed=215)
    check(linalg.matrix_norm(lt.asarray(ints), ord=ord), oracle(lambda t: torch.linalg.matrix_norm(t, ord=ord), ints,
                                                                 lt.float32))


@factorization
@pytest.mark.parametrize("dtype", [lt.float16, lt.bfloat16], ids=str)
def test_16_bit_floats_are_computed_in_float32_and_rounded_back(dtype):
    data = general((2, 3, 3), seed=216)
    x = lt.asarray(data.astype(np.float32)).cast(dtype)
    t = torch.tensor(data.astype(np.float32)).to(to_torch_dtype(dtype))
    check(linalg.inv(x), torch.linalg.inv(t.float()).to(t.dtype))
    check(linalg.det(x), torch.linalg.det(t.float()).to(t.dtype))
    check(linalg.svdvals(x), torch.linalg.svdvals(t.float()).to(t.dtype))
    check(linalg.solve(x, x[0, 0]), torch.linalg.solve(t.float(), t[0, 0].float()).to(t.dtype))
    assert linalg.qr(x).Q.dtype == dtype and linalg.eigh(x).eigenvalues.dtype == dtype


@factorization
@pytest.mark.parametrize("dtype", [lt.int32, lt.int64, lt.uint8, lt.bool_], ids=str)
def test_integers_and_bools_are_computed_in_the_default_float(dtype):
    """As `sqrt` and `vector_norm` of them: the result is float32 (NumPy's is float64; torch refuses them), the
    factorization of the data cast to float32, bit for bit; matrix_rank stays int64."""
    data = np.array([[[4, 1, 0], [1, 3, 1], [0, 1, 2]], [[2, 1, 1], [1, 2, 1], [1, 1, 2]]])  # positive definite
    if dtype == lt.bool_:  # triangular with ones on the diagonal: invertible
        data = np.stack([np.eye(3) + np.eye(3, k=1), np.eye(3) + np.eye(3, k=-2)]) != 0
    data = data.astype(dtype.name)
    x = lt.asarray(data)
    as_float = lt.asarray(data.astype(np.float32))
    for name, fn in FUNCTIONS.items():
        if dtype == lt.bool_ and name == "cholesky":
            continue  # not positive definite
        got, want = fn(x), fn(as_float)
        for g, w in zip(got if isinstance(got, tuple) else (got,), want if isinstance(want, tuple) else (want,)):
            assert g.dtype == w.dtype == (lt.int64 if name == "matrix_rank" else lt.float32), name
            np.testing.assert_array_equal(g.numpy(), w.numpy(), err_msg=name)
    check(linalg.solve(x, lt.asarray(np.arange(3.0))), torch.linalg.solve(torch.tensor(data).double(),
                                                                          torch.arange(3.0, dtype=torch.float64)))


@factorization
def test_a_factorization_is_one_library_call_in_the_schedule():
    """A kernel of its own kind, as sorting is: it reads its operands from buffers (the producer of a transposed
    input writes one first), and its results are views of its one output, so eigh computes both in one call."""
    x = lt.asarray(symmetric((3, 4, 4), seed=217))
    items = lt.schedule(linalg.inv(x))
    assert len(items) == 1 and isinstance(items[0].kernel, ir.LibraryCall) and items[0].kernel.routine == "inv"
    assert "library call inv_f64_3x4x4" in str(items)
    w, v = linalg.eigh(x * 2)
    items = lt.schedule(w, v)
    calls = [item.kernel for item in items if isinstance(item.kernel, ir.LibraryCall)]
    assert [c.routine for c in calls] == ["eigh"] and len(items) == 4  # x * 2, eigh, and each result's copy
    y = linalg.solve(x.mT, x[0, 0]) + 1
    assert [type(item.kernel).__name__ for item in lt.schedule(y)] == ["Kernel", "Kernel", "LibraryCall", "Kernel"]
    before = lt.stats().kernels_launched
    lt.realize(w, v, y)
    assert lt.stats().kernels_launched - before == 7
    check(y, torch.linalg.solve(torch.tensor(x.numpy()).mT, torch.tensor(x.numpy()[0, 0])) + 1)


@factorization
def test_a_batch_splits_across_threads_with_numpys_bits(monkeypatch):
    """Many matrices: the batch is shared out among the threads, and each matrix's result is the one NumPy's
    LAPACK gives it, bit for bit; the same from several Python threads at once."""
    monkeypatch.setenv("LT_NUM_THREADS", "2")
    data = general((64, 24, 24), seed=218)
    expected = np.linalg.inv(data)
    np.testing.assert_array_equal(linalg.inv(lt.asarray(data)).numpy(), expected)
    results: dict[int, np.ndarray] = {}

    def work(k: int) -> None:
        results[k] = (linalg.inv(lt.asarray(data)) + 0).numpy()  # a batch of two kernels

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    for k in range(4):
        np.testing.assert_array_equal(results[k], expected)


@factorization
def test_a_failing_matrix_raises_linalg_error_at_the_realize_naming_it_and_the_line():
    data = general((3, 3, 3), seed=219)
    data[1] = [[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [0.0, 1.0, 0.0]]
    x = lt.asarray(data)
    inverse = linalg.inv(x)  # recorded: nothing is known yet
    with pytest.raises(lt.LinAlgError, match=r"inv: matrix 1 of the batch of 3: Singular matrix \(the op at .*"
                                             r"test_linalg.py:\d+\)"):
        inverse.realize()
    assert not inverse.is_realized
    with pytest.raises(lt.LinAlgError, match="matrix 1 .* Singular"):  # in a batch of kernels too
        (linalg.solve(x, x[0, 0]) * 2).numpy()
    with pytest.raises(lt.LinAlgError, match="cholesky: matrix 0 of the batch of 1: Matrix is not positive"):
        linalg.cholesky(lt.asarray(-np.eye(2))).numpy()
    assert issubclass(lt.LinAlgError, np.linalg.LinAlgError) and linalg.LinAlgError is lt.LinAlgError
    check(linalg.inv(x[::2]), torch.linalg.inv(torch.tensor(data[::2])))  # the rest still computes


@factorization
def test_jit_replays_a_factorization():
    @lt.jit
    def step(a, b):
        return linalg.solve(a, b) * 2 + linalg.det(a)[..., None]

    for seed in range(4):
        a, b = general((2, 3, 3), seed=220 + seed), np.arange(3.0)
        before = lt.stats().replays
        got = step(lt.asarray(a), lt.asarray(b))
        t = torch.tensor(a)
        check(got, torch.linalg.solve(t, torch.tensor(b)) * 2 + torch.linalg.det(t)[:, None])
    assert lt.stats().replays == before + 1
    a[1] = 0
    with pytest.raises(lt.LinAlgError, match="matrix 1 of the batch of 2: Singular matrix"):
        step(lt.asarray(a), lt.asarray(b))


FUNCTIONS = {  # each factorization and what is built on one, with an argument list for a matrix x
    "cholesky": lambda x: linalg.cholesky(x), "det": lambda x: linalg.det(x), "slogdet": lambda x: linalg.slogdet(x),
    "inv": lambda x: linalg.inv(x), "solve": lambda x: linalg.solve(x, x), "eigh": lambda x: linalg.eigh(x),
    "eigvalsh": lambda x: linalg.eigvalsh(x), "qr": lambda x: linalg.qr(x), "svd": lambda x: linalg.svd(x),
    "svdvals": lambda x: linalg.svdvals(x), "pinv": lambda x: linalg.pinv(x),
    "matrix_rank": lambda x: linalg.matrix_rank(x), "matrix_power": lambda x: linalg.matrix_power(x, -1),
}
SQUARE_ONLY = {"cholesky", "det", "slogdet", "inv", "solve", "eigh", "eigvalsh", "matrix_power"}


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_errors_name_the_function_and_the_shapes(name):
    fn = FUNCTIONS[name]
    with pytest.raises(lt.ShapeError, match=r"\(3,\)"):
        fn(lt.zeros(3))
    if name in SQUARE_ONLY:
        with pytest.raises(lt.ShapeError, match=r"square matrices, got shape \(2, 3, 4\)"):
            fn(lt.zeros((2, 3, 4)))


@factorization
def test_more_errors():
    with pytest.raises(lt.ShapeError, match=r"x2 must be a vector of length 3 .* x1 of shape \(3, 3\); got shape \(4,\)"):
        linalg.solve(lt.zeros((3, 3)), lt.zeros(4))
    with pytest.raises(lt.ShapeError, match="got shape \\(2, 4, 1\\)"):
        linalg.solve(lt.zeros((3, 3)), lt.zeros((2, 4, 1)))
    with pytest.raises(lt.ShapeError, match="broadcast"):
        linalg.solve(lt.zeros((2, 3, 3)), lt.zeros((4, 3, 1)))
    with pytest.raises(ValueError, match="mode must be 'reduced' or 'complete', got 'r'"):
        linalg.qr(lt.zeros((3, 3)), mode="r")
    with pytest.raises(TypeError):
        linalg.matrix_power(lt.zeros((3, 3)), 1.5)


@pytest.fixture
def interpreted_cuda(monkeypatch, tmp_path_factory) -> str:
    """A cuda device in Triton's interpreter (the CPU session's too, as in test_triton.py)."""
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    monkeypatch.setenv("LT_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "lt-cache"))
    try:
        return lazytensor.device.get_device("cuda").name
    except lt.DeviceError as e:  # no triton, or triton imported for a GPU
        pytest.skip(str(e))


@pytest.mark.parametrize("name", sorted(set(FUNCTIONS) - {"matrix_power"}))
def test_factorizations_on_a_gpu_raise_device_error_when_recorded(name, interpreted_cuda):
    """The GPU has no LAPACK here: no silent copy to the CPU; the error says where to compute it."""
    x = lt.asarray(np.eye(3), device=interpreted_cuda)
    with pytest.raises(lt.DeviceError, match=r"linalg\.\w+: cuda:0 .* has no LAPACK .* x\.to\('cpu'\)"):
        FUNCTIONS[name](x)
    with pytest.raises(lt.DeviceError, match=r"linalg\.svdvals: cuda:0"):
        linalg.matrix_norm(x, ord=2)
    call = ir.LibraryCall("", (ir.BufferParam(lt.float64, 9, output=True), ir.BufferParam(lt.float64, 9)), "inv", 1,
                          ((3, 3),))
    with pytest.raises(NotImplementedError, match="the Triton backend has no inv"):
        lazytensor.device.get_device(interpreted_cuda).compile(call)
    check(linalg.inv(x.to("cpu")), torch.eye(3, dtype=torch.float64))


# ---- gradients against torch.autograd, in float64 --------------------------------------------------------
#
# The upstream gradient is random (check_grads); for eigh and svd the loss uses the vectors through their
# squares (invariant to their signs, which torch asks of a loss for its gradient to be defined).


@factorization
def test_inv_det_slogdet_gradients():
    data = [general((2, 3, 3), seed=230)]
    check_grads(linalg.inv, torch.linalg.inv, data, LAYOUTS)
    check_grads(linalg.det, torch.linalg.det, data, LAYOUTS)
    check_grads(lambda x: linalg.slogdet(x).logabsdet + linalg.slogdet(x).sign,
                lambda t: torch.linalg.slogdet(t).logabsdet + torch.linalg.slogdet(t).sign, data, LAYOUTS)


@factorization
@pytest.mark.parametrize("shapes", [((3, 4, 4), (4,)), ((4, 4), (2, 4, 3)), ((2, 1, 4, 4), (3, 4, 2))], ids=str)
def test_solve_gradient(shapes):
    a, b = general(shapes[0], seed=231), np.random.default_rng(232).uniform(-3, 3, shapes[1])
    check_grads(linalg.solve, torch.linalg.solve, [a, b], LAYOUTS)


@factorization
@pytest.mark.parametrize("upper", [False, True])
def test_cholesky_gradient(upper):
    check_grads(lambda x: linalg.cholesky(x, upper=upper), lambda t: torch.linalg.cholesky(t, upper=upper),
                [spd((2, 4, 4), seed=233)], LAYOUTS)


@factorization
def test_eigh_and_eigvalsh_gradients():
    data = [symmetric((2, 4, 4), seed=234)]
    cw, cv = random_array((4,), lt.float64, seed=235), random_array((4, 4), lt.float64, seed=236)

    def loss(result, c):
        return (result[0] * c(cw)).sum(-1) + (result[1] * result[1] * c(cv)).sum((-2, -1))

    check_grads(lambda x: loss(linalg.eigh(x), lt.asarray), lambda t: loss(torch.linalg.eigh(t), torch.tensor),
                data, LAYOUTS)
    check_grads(linalg.eigvalsh, torch.linalg.eigvalsh, data, LAYOUTS)
    check_grads(lambda x: linalg.eigh(x).eigenvalues, lambda t: torch.linalg.eigh(t).eigenvalues, data)


@factorization
@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (2, 4, 4)], ids=str)
@pytest.mark.parametrize("full_matrices", [False, True])
def test_svd_and_svdvals_gradients(shape, full_matrices):
    data = [distinct_singular(shape, seed=237)]
    k = min(shape[-2:])
    cu, cs, cv = (random_array(s, lt.float64, seed=238 + i) for i, s in enumerate([(shape[-2], k), (k,), (k, shape[-1])]))

    def loss(result, c):
        u, s, vh = result
        u, vh = u[..., :k], vh[..., :k, :]  # the full matrices' other vectors are not functions of x
        return (u * u * c(cu)).sum((-2, -1)) + (s * c(cs)).sum(-1) + (vh * vh * c(cv)).sum((-2, -1))

    check_grads(lambda x: loss(linalg.svd(x, full_matrices=full_matrices), lt.asarray),
                lambda t: loss(torch.linalg.svd(t, full_matrices=full_matrices), torch.tensor), data, LAYOUTS)
    check_grads(linalg.svdvals, torch.linalg.svdvals, data, LAYOUTS)
    check_grads(lambda x: linalg.svd(x).S, lambda t: torch.linalg.svd(t).S, data)


@factorization
@pytest.mark.parametrize("shape,mode", [((5, 3), "reduced"), ((2, 4, 4), "reduced"), ((4, 4), "complete"),
                                        ((3, 5), "reduced"), ((2, 2, 4), "complete")], ids=str)
def test_qr_gradient(shape, mode):
    data = [distinct_singular(shape, seed=241)]
    check_grads(lambda x: linalg.qr(x, mode=mode).Q * 2 + linalg.qr(x, mode=mode).R[..., :1, :].sum(),
                lambda t: torch.linalg.qr(t, mode=mode).Q * 2 + torch.linalg.qr(t, mode=mode).R[..., :1, :].sum(),
                data, LAYOUTS)


@factorization
def test_qr_gradient_of_complete_q_with_more_rows_than_columns_raises():
    x = lt.asarray(distinct_singular((5, 3), seed=242)).requires_grad_()
    with pytest.raises(NotImplementedError, match="mode='complete' for matrices of more rows than columns"):
        linalg.qr(x, mode="complete").Q.sum().backward()


@factorization
@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (2, 4, 4)], ids=str)
def test_pinv_gradient(shape):
    check_grads(linalg.pinv, torch.linalg.pinv, [distinct_singular(shape, seed=243)], LAYOUTS)


@factorization
@pytest.mark.parametrize("n", [3, -2])
def test_matrix_power_gradient(n):
    check_grads(lambda x: linalg.matrix_power(x, n), lambda t: torch.linalg.matrix_power(t, n),
                [general((2, 3, 3), seed=244) / 3], LAYOUTS)


@factorization
def test_a_gradient_through_a_size_0_matrix_is_empty_and_det_of_it_is_1():
    x = lt.zeros((2, 0, 0), dtype=lt.float64).requires_grad_()
    d = linalg.det(x)
    check(d, np.ones(2))
    d.sum().backward()
    assert x.grad.shape == (2, 0, 0)


@factorization
@pytest.mark.parametrize("name", ["inv", "solve", "cholesky", "eigvalsh", "svdvals", "pinv"])
def test_float32_gradients(name):
    """The same rules in float32, against torch's float32 (whose LAPACK rounds at every step: a looser
    tolerance than the dtype's)."""
    data = {"inv": general, "solve": general, "cholesky": spd, "eigvalsh": symmetric}.get(name, distinct_singular)
    shape = (2, 5, 3) if name in ("svdvals", "pinv") else (2, 4, 4)
    lt_fn, torch_fn = getattr(linalg, name), getattr(torch.linalg, name)
    if name == "solve":
        lt_fn, torch_fn = (lambda x: linalg.solve(x, x[..., :2])), (lambda t: torch.linalg.solve(t, t[..., :2]))
    check_grads(lt_fn, torch_fn, [data(shape, seed=245).astype(np.float32)], LAYOUTS[:2], rtol=1e-4, atol=1e-5)


def test_a_routine_that_reads_one_tensor_twice_launches_from_its_plan():
    """solve(a, a): the library call reads one buffer as both operands; realized again (a cached plan, launched
    without a schedule) it must still get both (its table holds the buffer once)."""
    a = random_array((2, 3, 3), lt.float32, 3) + 4 * np.eye(3, dtype=np.float32)
    for _ in range(3):  # on the CPU: LAPACK's
        x = lt.asarray(a, device="cpu")
        np.testing.assert_allclose(linalg.solve(x, x).numpy(), np.broadcast_to(np.eye(3), (2, 3, 3)), atol=1e-5)


# ---- NumPy's products and traces (lazytensor/products.py) and linalg's cond, lstsq, multi_dot, tensorinv, ... -----


@pytest.mark.parametrize("dtype", [lt.float32, lt.float64, lt.int32], ids=str)
def test_numpys_products_and_trace_match_numpy(dtype):
    x, a = layout(random_array((3, 4, 5), dtype, seed=51), "flipped", oracle="numpy")  # contiguous: test_interop.py
    m, b = x[:, :, 0], a[:, :, 0]
    check(lt.trace(x), np.trace(a))
    check(lt.trace(x, 1, 2, 0), np.trace(a, 1, 2, 0))
    check(lt.trace(m, -2, dtype=lt.float64), np.trace(b, -2, dtype=np.float64))
    check(lt.inner(x, x[0]), np.inner(a, a[0]))
    check(lt.inner(m[0], m[1]), np.inner(b[0], b[1]))
    check(lt.inner(m, lt.asarray(a[0, 0, 0])), np.inner(b, a[0, 0, 0]))
    check(lt.vdot(m, m.T.T), np.vdot(b, b))
    check(lt.kron(m, x[0]), np.kron(b, a[0]))
    check(lt.kron(m[0], m), np.kron(b[0], b))
    with pytest.raises(ValueError):
        lt.trace(lt.zeros((2, 2)), axis1=1, axis2=-1)
    with pytest.raises(lt.ShapeError):
        lt.vdot(lt.zeros(3), lt.zeros(4))


def test_numpys_products_gradients_match_torch():
    arr, other = random_array((3, 4), lt.float64, seed=52), random_array((2, 4), lt.float64, seed=53)
    for name in ("inner", "kron", "vdot", "trace"):
        x, y = lt.asarray(arr).requires_grad_(), lt.asarray(arr if name == "vdot" else other).requires_grad_()
        t, u = torch.tensor(arr, requires_grad=True), torch.tensor(arr if name == "vdot" else other,
                                                                   requires_grad=True)
        if name == "trace":
            lt.trace(x).backward()
            torch.trace(t).backward()
        elif name == "vdot":
            lt.vdot(x, y).backward()
            torch.vdot(t.reshape(-1), u.reshape(-1)).backward()
        else:
            (getattr(lt, name)(x, y) ** 2).sum().backward()
            (getattr(torch, name)(t, u) ** 2).sum().backward()
        check(x.grad, t.grad)
        if name != "trace":
            check(y.grad, u.grad)


@pytest.mark.skipif(lt.zeros(1).device != "cpu", reason="LAPACK: the CPU's")
@pytest.mark.parametrize("dtype", [lt.float32, lt.float64], ids=str)
def test_numpys_linalg_cond_lstsq_multi_dot_tensorinv_tensorsolve(dtype):
    rtol = 2e-4 if dtype == lt.float32 else 1e-10
    a = random_array((4, 4), dtype, seed=54) + 4 * np.eye(4, dtype=dtype.name)
    for p in (None, 2, -2, 1, -1, np.inf, -np.inf, "fro", "nuc"):
        check(linalg.cond(lt.asarray(a), p), np.linalg.cond(a, p).astype(dtype.name), rtol=rtol)
    check(linalg.cond(lt.asarray(np.ones((2, 2), dtype.name)), 1), np.array(np.inf, dtype.name))
    tall, rhs = random_array((6, 3), dtype, seed=55), random_array((6, 2), dtype, seed=56)
    for m, b in ((tall, rhs), (tall, rhs[:, 0]), (tall.T.copy(), rhs[:3]), (np.zeros((4, 3), dtype.name), rhs[:4])):
        got, want = linalg.lstsq(lt.asarray(m), lt.asarray(b)), np.linalg.lstsq(m, b)
        for g, w in zip(got, want):
            check(g, np.asarray(w), rtol=rtol, atol=rtol)
    chain = [random_array(s, dtype, seed=57 + i) for i, s in enumerate(((5,), (5, 2), (2, 7), (7, 3), (3,)))]
    check(linalg.multi_dot([lt.asarray(c) for c in chain]), np.linalg.multi_dot(chain), rtol=rtol)
    check(linalg.multi_dot([lt.asarray(c) for c in chain[1:4]]), np.linalg.multi_dot(chain[1:4]), rtol=rtol)
    t = random_array((4, 6, 8, 3), dtype, seed=62)
    check(linalg.tensorinv(lt.asarray(t), 2), np.linalg.tensorinv(t, 2), rtol=rtol * 100, atol=rtol * 100)
    s, rhs3 = random_array((6, 2, 3), dtype, seed=63), random_array((6,), dtype, seed=64)
    check(linalg.tensorsolve(lt.asarray(s), lt.asarray(rhs3)), np.linalg.tensorsolve(s, rhs3), rtol=rtol * 10)
    check(linalg.tensorsolve(lt.asarray(s.transpose(1, 0, 2).copy()), lt.asarray(rhs3), axes=(0,)),
          np.linalg.tensorsolve(s.transpose(1, 0, 2), rhs3, axes=(0,)), rtol=rtol * 10)
