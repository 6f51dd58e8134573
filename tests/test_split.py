"""Reductions split across threads (kernels/split.py and the runtimes' SplitReductionProgram).

The scheduler still makes one kernel of a full reduction; the CPU backend compiles it to partial
reductions over chunks, run on the pool, and a combine; the Triton backend to a launch of partial
reductions over a grid of programs, and a combine. The `split` fixture makes every reduction that can
be split split, whatever its size, so small inputs exercise the split path of the default device's
backend (LT_DEVICE): the results are checked on it.
"""
from __future__ import annotations

import numpy as np
import pytest
import torch

import lazytensor as lt
from conftest import check, random_array
from lazytensor.device import get_device
from lazytensor.kernels import ir
from lazytensor.kernels.dtype import float32
from lazytensor.kernels.expr import Expr, Var
from lazytensor.kernels.llvm import runtime
from lazytensor.kernels.split import split_reduction, split_scatter

pytestmark = pytest.mark.fast  # the edit-test tier (pyproject.toml)

THREADS = 2
PARTS = THREADS * runtime.CHUNKS_PER_THREAD
SIZES = [PARTS * 125 + 3, PARTS * 64, 4 * PARTS - 1]  # a tail, no tail, and chunks of a few elements


@pytest.fixture
def split(monkeypatch):
    """Two threads, every size worth splitting, and program caches of this test's own."""
    monkeypatch.setenv("LT_NUM_THREADS", str(THREADS))
    monkeypatch.setattr(runtime, "SPLIT_MIN_WORK", 0)
    monkeypatch.setattr(runtime, "_programs", {})
    if get_device().backend.startswith("triton"):
        from lazytensor.kernels.triton import runtime as triton_runtime  # imports triton: not at collection
        monkeypatch.setattr(triton_runtime, "SPLIT_MIN_CHUNK", 1)
        monkeypatch.setattr(triton_runtime, "_programs", {})


def the_kernel(t: lt.Tensor) -> ir.Kernel:
    (item,) = lt.schedule(t)
    return item.kernel


def data(n: int, dtype: lt.DType = lt.float32, seed: int = 0, **kw) -> tuple[lt.Tensor, torch.Tensor]:
    arr = random_array((n,), dtype, seed, **kw)
    return lt.asarray(arr), torch.tensor(arr)


# ---- results against torch -----------------------------------------------------------------

@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("dtype", [lt.float32, lt.float64, lt.int32, lt.int64])
@pytest.mark.parametrize("op", ["sum", "max", "min"])
def test_sum_max_min(split, op, dtype, n):
    x, t = data(n, dtype)
    check(getattr(x, op)(), getattr(t, op)())


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("dtype", [lt.float32, lt.float64])
def test_mean(split, dtype, n):
    x, t = data(n, dtype)
    check(x.mean(), t.mean())


@pytest.mark.parametrize("n", SIZES)
def test_prod(split, n):
    x, t = data(n, lt.float64, low=0.99, high=1.01)
    check(x.prod(), t.prod())
    signs = np.random.default_rng(1).choice(np.array([-1, 1], np.int32), n)  # int products wrap: keep them exact
    check(lt.asarray(signs).prod(), torch.tensor(signs).prod())


@pytest.mark.parametrize("op", ["any", "all"])
def test_bool(split, op):
    arr = np.ones(SIZES[0], bool) if op == "all" else np.zeros(SIZES[0], bool)
    for flipped in [None, 0, SIZES[0] // 2, SIZES[0] - 1]:  # in the first chunk, a middle one, the tail
        a = arr.copy()
        if flipped is not None:
            a[flipped] = not a[flipped]
        check(getattr(lt.asarray(a), op)(), getattr(torch.tensor(a), op)())


@pytest.mark.parametrize("op", ["max", "min"])
def test_nan_propagates_from_any_chunk(split, op):
    n = SIZES[0]
    for at in [0, n // 2, n - 1]:  # the first chunk, a middle one, the tail the combine reduces
        arr = random_array((n,), lt.float32)
        arr[at] = np.nan
        check(getattr(lt.asarray(arr), op)(), getattr(torch.tensor(arr), op)())


@pytest.mark.parametrize("op, n", [("sum", 0), ("prod", 0), ("mean", 0), ("sum", 1), ("prod", 1), ("max", 1),
                                   ("mean", 1)])  # max of nothing is an error: it has no identity to return
def test_tiny_inputs(split, op, n):
    x, t = data(n)
    check(getattr(x, op)(), getattr(t, op)())


def test_epilogues(split):
    x, t = data(SIZES[0])
    check(x.sum() * 2 + 1, t.sum() * 2 + 1)
    check(x.mean(), t.mean())
    check(x.logsumexp(0), t.logsumexp(0))
    check(x.var(correction=1), t.var(correction=1))


def test_mean_and_sum_of_squares_in_one_kernel(split):
    x, t = data(SIZES[0])
    out = x.mean() + (x * x).sum()
    assert len(lt.schedule(out)) == 1
    check(out, t.mean() + (t * t).sum(), rtol=1e-5)


def test_fewer_rows_than_threads(split, monkeypatch):
    monkeypatch.setenv("LT_NUM_THREADS", "4")
    arr = random_array((3, SIZES[0]), lt.float32)
    out = (lt.asarray(arr) ** 2).sum(axis=1)
    assert isinstance(runtime.compile_kernel(the_kernel(out))[0], runtime.SplitReductionProgram)
    check(out, (torch.tensor(arr) ** 2).sum(1))


def test_a_reduction_over_two_ranges(split):
    arr = random_array((3, SIZES[0]), lt.float32)
    check(lt.asarray(arr).T.sum(), torch.tensor(arr).sum(), rtol=1e-5)


def test_float32_sum_of_many_stays_accurate(split):
    x, _ = data(1 << 20, low=0, high=1)
    exact = np.asarray(x.numpy(), np.float64).sum()
    assert abs(float(x.sum().item()) - exact) <= 1e-6 * exact


# ---- the split itself ------------------------------------------------------------------------

def test_a_full_reduction_is_one_schedule_item_and_two_kernels_on_the_cpu(split, monkeypatch):
    x, y, z = (lt.asarray(random_array((PARTS * 125 + 3,), lt.float32, seed)) for seed in range(3))
    items = lt.schedule((x + y * z).sum())
    assert len(items) == 1
    kernel = items[0].kernel
    partials, combine = split_reduction(kernel, PARTS)
    assert [v.size for v in partials.loops] == [PARTS, 1] and combine.loops == kernel.loops
    scratch = ir.BufferParam(float32, PARTS, scratch=True)
    assert partials.buffers == combine.buffers == (*kernel.buffers, scratch)
    (store,) = partials.stores
    assert store.buf == len(kernel.buffers) and str(store.index) == partials.loops[0].name
    (reduction,) = [v for v in partials.values() if v.op is ir.VOp.REDUCE]
    assert [v.size for v in reduction.arg[1]] == [125]

    program, _ = runtime.compile_kernel(kernel)
    assert isinstance(program, runtime.SplitReductionProgram)
    assert program.partials.extent == PARTS and program.name == kernel.name
    assert f"{kernel.name}_partials{PARTS}" in program.llvm_ir and f"{kernel.name}_combine{PARTS}" in program.llvm_ir
    arrays = [random_array((kernel.buffers[1].size,), lt.float32, seed, low=0) for seed in range(3)]
    split_out, whole_out = np.zeros(1, np.float32), np.zeros(1, np.float32)
    program([split_out.ctypes.data, *(a.ctypes.data for a in arrays)], [])
    runtime._built(runtime._program(kernel))[0]([whole_out.ctypes.data, *(a.ctypes.data for a in arrays)], [])
    np.testing.assert_allclose(split_out, whole_out, rtol=1e-6)
    monkeypatch.setenv("LT_NUM_THREADS", "1")  # the chunks stay; the calling thread takes them all
    program([split_out.ctypes.data, *(a.ctypes.data for a in arrays)], [])
    np.testing.assert_allclose(split_out, whole_out, rtol=1e-6)


def test_one_thread_or_little_work_compiles_one_kernel(split, monkeypatch):
    kernel = the_kernel(data(SIZES[0])[0].sum())
    monkeypatch.setenv("LT_NUM_THREADS", "1")
    assert isinstance(runtime.compile_kernel(kernel)[0], runtime.Program)
    monkeypatch.setattr(runtime, "_programs", {})
    monkeypatch.setenv("LT_NUM_THREADS", str(THREADS))
    monkeypatch.setattr(runtime, "SPLIT_MIN_WORK", runtime.work(kernel) + 1)
    assert isinstance(runtime.compile_kernel(kernel)[0], runtime.Program)


def test_an_outer_loop_that_feeds_the_threads_is_not_split(split):
    kernel = the_kernel((data(THREADS * SIZES[0])[0].reshape(THREADS, SIZES[0]) ** 2).sum(axis=1))
    assert kernel.loops[0].size == THREADS
    assert isinstance(runtime.compile_kernel(kernel)[0], runtime.Program)


@pytest.mark.parametrize("rows,cols", [(PARTS * 40 + 5, 130), (PARTS * 4, 3)], ids=str)
@pytest.mark.parametrize("op", ["sum", "max", "min", "mean"])
def test_a_column_reduction_splits_along_its_rows(split, op, rows, cols):
    """Its output loop would feed the threads, but each would stream a strip of every row: the split gives
    each chunk whole rows, and the combine reduces the few partial rows."""
    arr = (np.random.default_rng(3).integers(-24, 24, (rows, cols)) / 8).astype(np.float32)  # sums exact in any order
    x, t = lt.asarray(arr), torch.tensor(arr)
    out, expected = getattr(x, op)(0), getattr(t, op)(0)
    check(out, expected.values if isinstance(expected, tuple) else expected)
    kernel = the_kernel(getattr(x, op)(0))
    assert kernel.loops[0].size == cols >= THREADS
    assert isinstance(runtime.compile_kernel(kernel)[0], runtime.SplitReductionProgram)


def test_a_column_reduction_of_few_rows_is_not_split(split):
    """Its partial results would be as large as its input."""
    kernel = the_kernel(lt.asarray(random_array((3, 50), lt.float32)).sum(0))
    assert isinstance(runtime.compile_kernel(kernel)[0], runtime.Program)


def test_a_size_1_axis_opens_no_loop():
    """A column statistic kept as a row runs its columns in the outermost loop, which the threads share."""
    x = lt.asarray(random_array((20, 30), lt.float32))
    assert [v.size for v in the_kernel(x.max(0, keepdims=True)).loops] == [30]
    assert [v.size for v in the_kernel(x.reshape(20, 1, 30).argmax(0, keepdims=True)).loops] == [30]
    assert [v.size for v in the_kernel(x[:1, :1].sum(keepdims=True)).loops] == [1]


def test_a_reduction_of_a_reduction_splits_in_levels():
    """Each level's partials read the combined values of the levels before; a reduction that reads its
    enclosing one's loop variable (the row sums of a sum of row sums) is part of the enclosing one's source."""
    x, _ = data(SIZES[1])
    for out, levels in [(x.logsumexp(0), 2), (x.var(), 2), (x.argmax(), 2), ((x - x.mean()).abs().amax(), 2)]:
        kernel = the_kernel(out)
        *partials, combine = split_reduction(kernel, PARTS)
        assert len(partials) == levels and combine.loops == kernel.loops
        assert all(k.buffers == combine.buffers for k in partials)
    assert split_reduction(the_kernel(data(SIZES[2])[0].var()), PARTS) is None  # a long tail (7 of 31)
    sum_of_row_sums = the_kernel(x.reshape(PARTS, -1).sum(axis=1).sum())
    partials, combine = split_reduction(sum_of_row_sums, PARTS)
    (outer,) = [v for v in partials.values() if v.op is ir.VOp.REDUCE and v.arg[1][0].size == 1]
    assert any(v.op is ir.VOp.REDUCE for v in ir.toposort(list(outer.srcs)))


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("dtype", [lt.float32, lt.float64])
def test_reductions_of_reductions_split(split, dtype, n):
    x, t = data(n, dtype)
    if get_device().backend.startswith("llvm"):  # the last size's tail is too long to compute in every chunk
        split = isinstance(runtime.compile_kernel(the_kernel(x.var()))[0], runtime.SplitReductionProgram)
        assert split == (n != SIZES[2])
    check(x.var(), t.var(correction=0))
    check(x.std(), t.std(correction=0))
    check(x.logsumexp(0), t.logsumexp(0))
    check(x.argmax(), t.argmax())
    check(x.argmin(), t.argmin())
    check((x - x.mean()).abs().amax(), (t - t.mean()).abs().amax())
    y, u = data(n, dtype, seed=1)
    check(((x - y) ** 2).mean() / x.var(), ((t - u) ** 2).mean() / t.var(correction=0))
    check((x - (x - x.mean()).abs().amax()).sum(), (t - (t - t.mean()).abs().amax()).sum())
    labels = np.random.default_rng(2).integers(0, 5, n // 5)
    logits, tl = x[:n // 5 * 5].reshape(-1, 5), t[:n // 5 * 5].reshape(-1, 5)
    check(lt.nn.functional.cross_entropy(logits, lt.asarray(labels)),
          torch.nn.functional.cross_entropy(tl, torch.tensor(labels)))
    check(logits.amax(1).sum(), tl.amax(1).sum())


def test_a_row_of_reductions_of_reductions_splits_where_few_rows(split):
    arr = random_array((THREADS - 1, SIZES[0]), lt.float32)
    x, t = lt.asarray(arr), torch.tensor(arr)
    assert isinstance(runtime.compile_kernel(the_kernel(x.var(1)))[0], runtime.SplitReductionProgram) \
        or not get_device().backend.startswith("llvm")
    check(x.var(1), t.var(1, correction=0))
    check(x.softmax(-1), t.softmax(-1))


@pytest.fixture
def split_scatters(split, monkeypatch):
    """And every scatter worth splitting, whatever its size."""
    monkeypatch.setattr(runtime, "SCATTER_SPLIT_MIN", 0)
    monkeypatch.setattr(runtime, "COLUMN_SPLIT_INPUT_PER_PARTIAL", 1)


@pytest.mark.parametrize("n", SIZES)
def test_integer_scatters_fold_their_chunks_into_copies(split_scatters, n):
    """A histogram's counts, a bincount, an integer scatter_add/amax/amin/prod and a bool one: order-free folds
    whose chunks fold into copies of their own, then into the output (on the CPU), equal to NumPy's."""
    rng = np.random.default_rng(n)
    a = rng.standard_normal(n).astype(np.float32)
    a[[1, n // 2]] = [np.nan, np.inf]
    check(lt.histogram(lt.asarray(a), 7, (-2.0, 2.0))[0], np.histogram(a, 7, (-2.0, 2.0))[0].astype(np.int64))
    at = rng.integers(0, 5, n)
    check(lt.bincount(lt.asarray(at), minlength=6), np.bincount(at, minlength=6).astype(np.int64))
    v = rng.integers(-9, 9, n).astype(np.int32)
    base = rng.integers(-3, 3, 5).astype(np.int32)
    x, t = lt.asarray(base), torch.tensor(base)
    for reduce in ("sum", "amax", "amin", "prod"):
        u = v % 3 + 1 if reduce == "prod" else v  # products of 1s, 2s and 3s: wrapping, but exact in any order
        want = t.scatter_reduce(0, torch.tensor(at), torch.tensor(u), reduce)
        check(x.scatter_reduce(0, lt.asarray(at), lt.asarray(u), reduce), want)
    flags = lt.zeros(5, dtype=lt.bool_).scatter_reduce(0, lt.asarray(at), lt.asarray(v > 7), "amax")
    check(flags, torch.zeros(5, dtype=torch.bool).scatter_reduce(0, torch.tensor(at), torch.tensor(v > 7), "amax"))
    with pytest.raises(IndexError, match="scatter_add: an index is outside"):
        x.scatter_add(0, lt.asarray(np.append(at[:-1], 5)), lt.asarray(v)).numpy()


def test_a_scatter_splits_into_clear_partials_combine_and_tail(split_scatters, monkeypatch):
    n = PARTS * 125 + 3
    at = lt.asarray(np.random.default_rng(4).integers(0, 6, n))
    (item,) = lt.schedule(lt.bincount(at, minlength=6))
    scatter = item.kernel
    clear, partials, combine, tail = split_scatter(scatter, PARTS)
    scratch = ir.BufferParam(lt.int64, PARTS * 6, scratch=True)
    assert clear.buffers == partials.buffers == combine.buffers == tail.buffers == (*scatter.buffers, scratch)
    assert [v.size for v in clear.loops] == [PARTS * 6] and [v.size for v in partials.loops] == [PARTS, 125]
    assert [v.size for v in combine.loops] == [6] and [v.size for v in tail.loops] == [3]
    assert split_scatter(lt.schedule(lt.bincount(at[:PARTS * 4], minlength=6))[0].kernel, PARTS)[3:] == []
    program, _ = runtime.compile_kernel(scatter)
    assert isinstance(program, runtime.SplitScatterProgram) and program.partials.extent == PARTS
    assert program.stages[-1].work == 0  # the tail runs on one thread, in order
    for threads in ("2", "1"):  # one thread takes every chunk
        monkeypatch.setenv("LT_NUM_THREADS", threads)
        out = np.full(6, 99, np.int64)
        for _ in range(2):  # the copies start from nothing again
            program([out.ctypes.data, item.inputs[0].buffer.ptr], item.params)
            np.testing.assert_array_equal(out, np.bincount(at.numpy(), minlength=6))


def test_folds_in_order_and_small_outputs_are_not_split(split, monkeypatch):
    """A float sum lands in the updates' order (one thread); an integer scatter splits only where its updates are
    many beside its output."""
    at = lt.asarray(np.random.default_rng(5).integers(0, 6, 4096))
    floats = lt.zeros(6).index_add(0, at, lt.ones(4096) * 0.1)
    (item,) = [i for i in lt.schedule(floats) if isinstance(i.kernel, ir.Scatter)]
    assert split_scatter(item.kernel, PARTS) is None
    counts = lt.schedule(lt.bincount(at, minlength=6))[0].kernel
    monkeypatch.setattr(runtime, "SCATTER_SPLIT_MIN", 4097)
    assert runtime._split_scatter(counts) is None
    monkeypatch.setattr(runtime, "SCATTER_SPLIT_MIN", 0)
    assert runtime._split_scatter(counts) is not None
    assert runtime._split_scatter(lt.schedule(lt.bincount(at, minlength=4096 // 4 // PARTS + 1))[0].kernel) is None


def test_too_small_to_split():
    x, _ = data(PARTS - 1)
    assert split_reduction(the_kernel(x.sum()), PARTS) is None
    assert split_reduction(the_kernel(data(SIZES[0])[0].sum()), 1) is None


def test_substitution_simplifies_again():
    i, t, j = Var("i", 12), Var("t", 3), Var("j", 4)
    e = Expr.of(i) // 4 + Expr.of(i) % 4 * 100
    assert e.substitute({i: Expr.of(t) * 4 + Expr.of(j)}) == Expr.of(t) + Expr.of(j) * 100
    assert e.substitute({t: Expr.of(j)}) is e
    load = ir.load(1, float32, Expr.of(i), ())
    neg = ir.alu(ir.Alu.NEG, float32, load)
    (moved,) = ir.substitute([neg], {i: Expr.of(j) + 8})
    assert moved.srcs[0] is ir.load(1, float32, Expr.of(j) + 8, ())
    one = ir.const(1.0, float32)
    assert ir.substitute([neg], {}, {id(load): one}) == [ir.alu(ir.Alu.NEG, float32, one)]
    with pytest.raises(ValueError):
        ir.substitute([ir.reduce(ir.ReduceOp.SUM, load, (i,))], {i: Expr.of(j)})
