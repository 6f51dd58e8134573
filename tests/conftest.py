"""The torch oracle: helpers every op test uses.

`check(got, expected)` asserts that a lazytensor result matches a torch (or
NumPy) result in shape, dtype and value. `inputs(shape, dtype)` yields the
same data as a lazytensor tensor and a torch tensor in several layouts:
contiguous, transposed, strided/sliced and flipped, so every op is also
tested on non-contiguous views. For uint16, uint32 and uint64, whose tensors
torch stores and converts but hardly computes with, the oracle is NumPy
(`oracle="numpy"`).
"""
from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import torch

import lazytensor as lt
import triton_interpreter  # noqa: F401  (the Triton interpreter's storage, and its import mode)
from lazytensor.kernels import ir
from lazytensor.kernels.dtype import int32
from lazytensor.kernels.expr import Bound, Expr, Var
from lazytensor.kernels.triton.targets import interpreting

# A persistent compile cache (and Triton module folder) of this session's own: a test that compiles a kernel
# compiles it, whatever ran before; removed when the session ends.
CACHE_DIR = os.environ["LT_CACHE_DIR"] = tempfile.mkdtemp(prefix="lazytensor-tests-")


def pytest_sessionfinish() -> None:
    shutil.rmtree(CACHE_DIR, ignore_errors=True)


# Triton's interpreter runs each GPU program op by op in Python: a case sized for the CPU (a row cut across its
# threads, a lane block per vector) takes minutes there, and reaches no Triton code that a smaller case does not.
INTERPRETED = lt.zeros(1).device != "cpu" and interpreting()


def sized(cpu: list, interpreted: list) -> list:
    """A test's cases: `cpu`, or under Triton's interpreter `interpreted`, smaller ones that take the same paths
    through the Triton kernels (several blocks along a row, a part block of lanes)."""
    return interpreted if INTERPRETED else cpu


TORCH_DTYPES = {
    lt.bool_: torch.bool, lt.int8: torch.int8, lt.int16: torch.int16, lt.int32: torch.int32,
    lt.int64: torch.int64, lt.uint8: torch.uint8, lt.uint16: torch.uint16, lt.uint32: torch.uint32,
    lt.uint64: torch.uint64, lt.float32: torch.float32, lt.float64: torch.float64, lt.float16: torch.float16,
    lt.bfloat16: torch.bfloat16,
}
# The op suite's dtypes, against torch; the 16-bit floats have their own tests (test_half.py), since NumPy,
# which makes the suite's data, has no bfloat16, and so have uint16, uint32 and uint64 (test_unsigned.py),
# against NumPy, since torch computes little with them and promotes none of them.
ALL_DTYPES = [lt.bool_, lt.int8, lt.int16, lt.int32, lt.int64, lt.uint8, lt.float32, lt.float64]
FLOAT_DTYPES = [lt.float32, lt.float64]
INT_DTYPES = [lt.int8, lt.int16, lt.int32, lt.int64, lt.uint8]
HALF_DTYPES = [lt.float16, lt.bfloat16]
WIDE_UNSIGNED_DTYPES = [lt.uint16, lt.uint32, lt.uint64]

# (rtol, atol). For the 16-bit floats, eps (two roundings' worth of relative error): torch computes them
# in float32 and rounds after each op, lazytensor's fused kernels round once where they store, so the
# two may differ by a rounding of each intermediate.
TOLERANCE = {lt.float32: (1e-5, 1e-6), lt.float64: (1e-12, 1e-12),
             **{d: (lt.finfo(d).eps, lt.finfo(d).eps) for d in HALF_DTYPES}}


def to_torch_dtype(dtype: lt.DType) -> torch.dtype:
    return TORCH_DTYPES[dtype]


def check(got: lt.Tensor, expected, rtol: float | None = None, atol: float | None = None) -> None:
    """Assert shape, dtype and values (NaN matches NaN; floats within the dtype's tolerance). The 16-bit
    floats compare as float32 (exactly their values)."""
    assert isinstance(got, lt.Tensor), f"expected a lazytensor Tensor, got {type(got).__name__}"
    half = got.dtype in HALF_DTYPES
    if isinstance(expected, torch.Tensor):
        assert TORCH_DTYPES[got.dtype] == expected.dtype, f"dtype {got.dtype} != torch {expected.dtype}"
        exp = (expected.float() if half else expected).detach().numpy()
    else:
        exp = np.asarray(expected)
        assert got.dtype.name == exp.dtype.name, f"dtype {got.dtype} != numpy {exp.dtype}"
        exp = exp.astype(np.float32) if half else exp
    arr = got.float().numpy() if half else got.numpy()
    assert arr.shape == exp.shape, f"shape {arr.shape} != expected {exp.shape}"
    if got.dtype.is_float:
        r, a = TOLERANCE[got.dtype]
        np.testing.assert_allclose(arr, exp, rtol=rtol if rtol is not None else r,
                                   atol=atol if atol is not None else a, equal_nan=True)
    else:
        np.testing.assert_array_equal(arr, exp)


def check_two_orders(y: lt.Tensor, ty: torch.Tensor, x: lt.Tensor, tx: torch.Tensor) -> None:
    """`y = f(x)` against torch's `ty = f(tx)` (x and tx require grad): the values, the gradient of
    `sum(y * sin(y))` recorded (create_graph), and the gradient of that gradient's squared sum (second order)."""
    check(y, ty)
    gx, = lt.autograd.gradients((y * y.sin()).sum(), x, create_graph=True)
    tgx, = torch.autograd.grad((ty * ty.sin()).sum(), tx, create_graph=True)
    check(gx, tgx)
    (gx ** 2).sum().backward()
    (tgx ** 2).sum().backward()
    check(x.grad, tx.grad)


def classifier_step(model: lt.nn.Module, opt: lt.optim.Optimizer):
    """The usual training step of a classifier, `step(x, labels)`: cross-entropy, backward, the optimizer's
    step, the loss and the parameters realized; returns the loss."""
    def step(x: lt.Tensor, labels: lt.Tensor) -> lt.Tensor:
        loss = lt.nn.functional.cross_entropy(model(x), labels)
        opt.zero_grad()
        loss.backward()
        opt.step()
        lt.realize(loss, *model.parameters())
        return loss
    return step


def graph_lines(t: lt.Tensor) -> set[int]:
    """The user's lines that made the nodes of t's graph (up to its realized nodes), as errors name them."""
    seen, stack, lines = set(), [t.node], set()
    while stack:
        n = stack.pop()
        if id(n) in seen or n.realized:
            continue
        seen.add(id(n))
        lines.add(n.line[1])
        stack.extend(n.srcs)
    return lines


def graph_structure(roots: list[lt.Tensor]) -> list[tuple]:
    """The graph under `roots` as a list to compare: each node once, sources first, with its op, dtype, shape, arg,
    user's line and its sources' places (a realized node by its place, dtype and shape only)."""
    place: dict[int, int] = {}
    out: list[tuple] = []
    stack = [(t.node, False) for t in reversed(roots)]
    while stack:
        node, expanded = stack.pop()
        if id(node) in place:
            continue
        if not expanded:
            stack.append((node, True))
            stack.extend((s, False) for s in reversed(node.srcs))
            continue
        place[id(node)] = len(out)
        arg = None if node.realized else node.arg
        out.append((node.op, node.dtype, node.shape, arg, None if node.realized else node.line,
                    tuple(place[id(s)] for s in node.srcs)))
    return out


def marked_line(path: str, marker: str) -> int:
    """The number of the one line of the file at `path` that ends with `marker`."""
    (number,) = [i + 1 for i, text in enumerate(Path(path).read_text().splitlines()) if text.endswith(marker)]
    return number


def random_array(shape: tuple[int, ...], dtype: lt.DType, seed: int = 0, low: float = -3, high: float = 3) -> np.ndarray:
    """Reproducible data of `dtype`: floats in [low, high), ints in a range every int dtype holds."""
    rng = np.random.default_rng(seed)
    if dtype == lt.bool_:
        return rng.random(shape) < 0.5
    if dtype.is_float:
        return rng.uniform(low, high, shape).astype(dtype.name)
    lo, hi = (-50, 50) if dtype.is_signed else (0, 100)
    return rng.integers(lo, hi, shape).astype(dtype.name)


LAYOUTS = ["contiguous", "transposed", "strided", "flipped"]


def layout(arr: np.ndarray, kind: str, oracle: str = "torch") -> tuple[lt.Tensor, torch.Tensor | np.ndarray]:
    """The same values as a lazytensor tensor and a torch tensor, built as a view of kind `kind`; with
    `oracle="numpy"`, as a lazytensor view and the NumPy array `arr` itself.

    Non-contiguous kinds build a bigger base tensor and take a view of it, so
    the view (not a copy) is what the op under test reads.
    """
    if kind == "contiguous" or arr.ndim == 0 or (kind == "transposed" and arr.ndim < 2):
        base, view = arr, lambda t: t
    elif kind == "transposed":
        base, view = np.ascontiguousarray(arr.T), lambda t: t.permute(*reversed(range(arr.ndim)))
    elif kind == "strided":
        base, view = np.repeat(arr, 2, axis=-1), lambda t: t[..., ::2]
    elif kind == "flipped":
        base, view = np.flip(arr, -1).copy(), lambda t: t.flip(-1)  # ascontiguousarray keeps a size-1 axis's stride
    else:
        raise ValueError(kind)
    return view(lt.asarray(base)), view(torch.tensor(base)) if oracle == "torch" else arr


def inputs(shape: tuple[int, ...], dtype: lt.DType, seed: int = 0, oracle: str = "torch",
           **kw) -> Iterator[tuple[str, lt.Tensor, torch.Tensor | np.ndarray]]:
    """`random_array`'s data in each of the LAYOUTS: (the layout, the lazytensor view, the oracle's data:
    a torch view, or with `oracle="numpy"` the NumPy array)."""
    arr = random_array(shape, dtype, seed, **kw)
    for kind in LAYOUTS:
        x, t = layout(arr, kind, oracle)
        assert x.shape == tuple(t.shape)
        yield kind, x, t


@pytest.fixture(autouse=True)
def _fresh_stats():
    lt.reset_stats()
    yield


def padded_load_kernel() -> ir.Kernel:
    """`out[o] = src[o - 2] + p0` for o < 6, where the load is masked to 0 <= o - 2 < 3 (a pad of a
    3-element int32 source): a backend must read nothing outside `src` and give p0 elsewhere."""
    o0 = Var("o0", 6)
    shifted = Expr.of(o0) - 2
    v = ir.load(1, int32, shifted, (Bound(shifted, 0, 3),))
    bufs = (ir.BufferParam(int32, 6, True), ir.BufferParam(int32, 3))
    return ir.Kernel("padded", bufs, (int32,), (o0,),
                     (ir.Store(0, Expr.of(o0), ir.alu(ir.Alu.ADD, int32, v, ir.param(0, int32))),))
