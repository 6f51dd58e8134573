"""Kernels generic over their outermost loop's size (`kernels/symbolic.py`): the second size of a kernel's
erased structure compiles a program that every later size runs, with the results of the specialized code;
what specializes still (checked kernels, bounds on the outermost variable, sizes in the body, split reductions,
`LT_SYMBOLIC=0`). The CPU backend's: its tensors are made on the CPU whatever `LT_DEVICE` says."""
from __future__ import annotations

import importlib
import re
import threading

import numpy as np
import pytest
import torch

import conftest
import lazytensor as lt
from conftest import random_array
from lazytensor.kernels import bounds
from lazytensor.kernels.expr import Var
from lazytensor.kernels.ir import Contraction, Kernel
from lazytensor.kernels.legalize import legalize
from lazytensor.kernels.llvm import runtime
from lazytensor.kernels.llvm.render import NATIVE, render
from lazytensor.kernels.symbolic import UNBOUNDED, eligible, generic, symbolized
from lazytensor.kernels.triton.render import Tiling

schedule = importlib.import_module("lazytensor.schedule")  # the module, which `lt.schedule` the function hides

# 0, 1, and sizes on either side of the vector widths (4, 8, 16 lanes)
SIZES = [2, 3, 0, 1, 5, 7, 8, 9, 15, 16, 17, 33, 100, 257]


def forget(monkeypatch: pytest.MonkeyPatch) -> None:
    """No program compiled before, here or in the persistent cache; the stats zeroed."""
    monkeypatch.setattr(runtime, "_programs", {})
    monkeypatch.setattr(runtime, "_generic", {})
    monkeypatch.setattr(runtime, "_first_sizes", {})
    monkeypatch.setattr(runtime, "_previous", {})
    monkeypatch.setattr(schedule, "_cache", {})  # whose schedules keep their programs
    monkeypatch.setattr(schedule, "_templates", {})  # and the templates that find them
    monkeypatch.setattr(schedule, "_shapes_seen", {})  # and the shapes each program was last scheduled at
    monkeypatch.setenv("LT_CACHE_DIR", "")
    lt.reset_stats()


@pytest.fixture
def fresh(monkeypatch):
    """`forget`, symbolic sizes on, kernels unchecked whatever `LT_CHECK_BOUNDS` says (checked ones specialize:
    `test_checked_kernels_specialize_and_stay_right`; `test_generic_code_stays_inside_each_sizes_buffers` checks
    generic code)."""
    forget(monkeypatch)
    monkeypatch.delenv("LT_SYMBOLIC", raising=False)
    monkeypatch.setattr(bounds, "CHECK", False)


def as_specialized(monkeypatch: pytest.MonkeyPatch, program, sizes: list[int], generic: list[np.ndarray],
                   exact: bool = True) -> None:
    """Assert that `program(n)` (a tensor) compiled for each size on its own (`LT_SYMBOLIC=0`) gives `generic`'s
    results, bit for bit where `exact` (else to float32's rounding: a float sum vectorized over a loop of unknown
    length adds in another order). Called last: it forgets the programs compiled before."""
    forget(monkeypatch)
    monkeypatch.setenv("LT_SYMBOLIC", "0")
    for n, expected in zip(sizes, generic):
        if exact:
            np.testing.assert_array_equal(program(n).numpy(), expected)
        else:
            np.testing.assert_allclose(program(n).numpy(), expected, rtol=1e-6, atol=1e-6)
    assert lt.stats().kernels_generic == 0


def cpu(a: np.ndarray) -> lt.Tensor:
    return lt.asarray(a, device="cpu")


def kernel_of(t: lt.Tensor):
    (item,) = lt.schedule(t)
    return item.kernel


def rows(n: int, cols: int, dtype: lt.DType = lt.float32, seed: int = 0) -> np.ndarray:
    return random_array((n, cols), dtype, seed)


def test_erased_text_leaves_out_the_sized_loops_and_buffer_sizes_only():
    a, b = (kernel_of(cpu(rows(n, 13)).exp().sum(-1)) for n in (6, 9))
    assert a.body_text() != b.body_text() and a.erased_text() == b.erased_text()
    assert "for o0 < ?\n" in a.erased_text() and "[?]" in a.erased_text() and "over r0 < ?" in a.erased_text()
    assert [v.name for v in a.sized_loops()] == ["o0", "r0"]
    # the outermost size read by an index (a flip along it) is in the text: the kernels specialize
    c, d = (kernel_of(cpu(rows(n, 13)).flip(0) * 2) for n in (6, 9))
    assert c.erased_text() != d.erased_text()
    # a reduction's size read by an index (the row length of a row-major input) is in the text
    e, f = (kernel_of((cpu(rows(6, n)) * 1.5).sum(-1)) for n in (13, 14))
    assert e.erased_text() != f.erased_text()
    # an inner output loop's size is not erased
    g, h = (kernel_of(cpu(rows(6, n)).T * 1.5) for n in (13, 14))
    assert g.erased_text() != h.erased_text() and [v.name for v in g.sized_loops()] == ["o0"]
    # the batch of a column reduction is a reduction's loop: erased
    i, j = (kernel_of((cpu(rows(n, 13)) * 2).sum(0)) for n in (6, 9))
    assert i.erased_text() == j.erased_text() and "over r0 < ?" in i.erased_text()


def test_the_generic_kernel_renders_as_the_specialized_one():
    """Where nothing depends on the outer size, generic code is the specialized code: its speed too."""
    for t in (cpu(rows(64, 32)).softmax(-1), (cpu(rows(64, 32)) * 2 + 1).sum(-1), cpu(rows(32, 64)).T + 1):
        for item in lt.schedule(t):
            k = legalize(item.kernel, NATIVE)
            g = generic(k, frozenset({0}))
            assert eligible(k) and g.loops[0] == Var(k.loops[0].name, UNBOUNDED) and g.name.split("_")[-2][0] == "N"
            assert render(k).replace(k.name, "K") == render(g).replace(g.name, "K")


GENERIC_PROGRAMS = {
    "softmax": lambda x: x.softmax(-1),
    "centered max": lambda x: (x - x.mean(-1, keepdims=True)).abs().max(-1),
    "column sum": lambda x: (x * x).sum(0),
    "column argmax": lambda x: x.argmax(0),
    "sum of a slice": lambda x: x[:, 1:6].abs().sum(-1),
    "full max": lambda x: x.max(),
    "full argmax": lambda x: x.argmax(),
}


@pytest.mark.parametrize("op", GENERIC_PROGRAMS)
@pytest.mark.parametrize("over", ["outer", "all"])
def test_generic_code_stays_inside_each_sizes_buffers(monkeypatch, op, over):
    """The generic kernel, over the outermost loop or over every sized loop (its reductions' sizes passed at
    the launch), compiled checked against one size's buffers and run at that size (`Program.sized`): no access
    outside them, and the values of the specialized kernel."""
    monkeypatch.setattr(bounds, "CHECK", True)
    program = GENERIC_PROGRAMS[op]
    for n in (1, 2, 3, 7, 8, 9, 17, 100):
        x = rows(n, 14, seed=n)
        (item,) = lt.schedule(program(cpu(x)))
        k = legalize(item.kernel, NATIVE)
        positions = frozenset({0} if over == "outer" else range(len(k.sized_loops())))
        g = generic(k, positions)
        assert len(g.extents) == len(positions) - (k.loops[0] in k.sized_loops())
        checked, _ = runtime._built(runtime._program(Kernel(g.name, k.buffers, g.params, g.loops, g.stores,
                                                            g.extents), checked=True))
        expected = program(cpu(x)).numpy().reshape(-1)
        out = np.full(k.buffers[0].size, -1, expected.dtype)
        inputs = [n.buffer.ptr for n in item.inputs]  # x, or a window on it (x[:, 1:6] of one row)
        checked.sized(k, positions)([out.ctypes.data, *inputs], item.params)  # raises OutOfBounds at a fault
        np.testing.assert_allclose(out, expected, rtol=1e-6)


def test_bounds_on_the_outer_variable_are_not_eligible():
    x = cpu(rows(5, 7))
    padded = kernel_of(lt.concatenate([x, x * 2], axis=0) + 1)
    assert not eligible(legalize(padded, NATIVE))


def close(got: lt.Tensor, expected: np.ndarray) -> np.ndarray:
    """`got`'s values, asserted near `expected` (computed in float64: a float32 sum's order differs)."""
    values = got.numpy()
    np.testing.assert_allclose(values, expected, rtol=1e-5, atol=1e-5 if values.dtype == np.float32 else 1e-12)
    return values


@pytest.mark.parametrize("dtype", [lt.float32, lt.float64, lt.int32])
def test_second_size_compiles_generic_and_later_sizes_compile_nothing(fresh, monkeypatch, dtype):
    def data(n: int) -> tuple[np.ndarray, ...]:
        # b broadcasts along the rows
        return rows(n, 11, dtype, seed=n), rows(n, 11, dtype, seed=n + 1), random_array((11,), dtype, seed=3)

    def program(n: int) -> lt.Tensor:
        x, y, b = map(cpu, data(n))
        return (x * y + b).sum(-1)

    compiled, results = [], []
    for n in SIZES:
        before = lt.stats().kernels_compiled
        x, y, b = (a.astype(np.float64) if dtype.is_float else a for a in data(n))
        results.append(close(program(n), ((x * y + b).sum(-1)).astype(dtype.name)))
        compiled.append(lt.stats().kernels_compiled - before)
    # 2 specializes, 3 compiles the generic kernel; 0 and 1 have bodies of their own (a size-1 loop reads as
    # none); the rest compile nothing
    assert compiled[:2] == [1, 1] and sum(compiled[4:]) == 0, compiled
    assert lt.stats().kernels_generic == 1
    as_specialized(monkeypatch, program, SIZES, results)


def test_opt_out_specializes_every_size(fresh, monkeypatch):
    monkeypatch.setenv("LT_SYMBOLIC", "0")
    for n in (2, 3, 4, 5):
        x = rows(n, 19)
        close((cpu(x) * 2 + 1).sum(-1), (x.astype(np.float64) * 2 + 1).sum(-1))
    assert (lt.stats().kernels_compiled, lt.stats().kernels_generic) == (4, 0)


def softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


@pytest.mark.parametrize("threads", ["1", "2", "3"])
def test_generic_kernels_share_their_rows_between_threads(fresh, monkeypatch, threads):
    monkeypatch.setenv("LT_NUM_THREADS", threads)
    monkeypatch.setattr(runtime, "PARALLEL_MIN_WORK", 64)  # every size below goes to the pool

    def program(n: int) -> lt.Tensor:
        t = cpu(rows(n, 23, seed=n))
        return lt.stack([(t - t.mean(-1, keepdims=True)) / t.std(-1, keepdims=True), t.softmax(-1)])

    sizes, results = [40, 41, 7, 1000, 257], []
    for n in sizes:
        x = rows(n, 23, seed=n).astype(np.float64)
        normal = (x - x.mean(-1, keepdims=True)) / x.std(-1, keepdims=True)
        results.append(close(program(n), np.stack([normal, softmax(x)])))
    assert lt.stats().kernels_generic >= 1
    as_specialized(monkeypatch, program, sizes, results)


def test_non_contiguous_inputs_and_scalars(fresh, monkeypatch):
    def data(n: int) -> tuple[np.ndarray, np.ndarray]:
        return random_array((n, 5, 7), lt.float32, seed=n), rows(n, 14, seed=n + 1)

    def program(n: int) -> lt.Tensor:
        cube, flat = map(cpu, data(n))
        # the inner axes read transposed, every other column: strides that do not depend on the outer size
        return (cube.swapaxes(1, 2) * 0.5 - 3).exp().sum(-1) + flat[:, ::2] * 3

    sizes, results = [4, 6, 9, 31], []
    for n in sizes:
        cube, flat = (a.astype(np.float64) for a in data(n))
        results.append(close(program(n), np.exp(cube.swapaxes(1, 2) * 0.5 - 3).sum(-1) + flat[:, ::2] * 3))
    assert lt.stats().kernels_generic >= 1
    as_specialized(monkeypatch, program, sizes, results)


def test_checked_kernels_specialize_and_stay_right(fresh, monkeypatch):
    monkeypatch.setattr(bounds, "CHECK", True)
    for n in (2, 3, 4, 5, 0, 1):
        x = rows(n, 29)
        close((cpu(x) * 2 + 1).sum(-1), (x.astype(np.float64) * 2 + 1).sum(-1))
    assert lt.stats().kernels_generic == 0 and lt.stats().kernels_compiled == 5  # a size-0 output launches nothing
    monkeypatch.setattr(bounds, "CHECK", False)
    for n in (2, 3, 4):
        x = rows(n, 29)
        close((cpu(x) * 2 + 1).sum(-1), (x.astype(np.float64) * 2 + 1).sum(-1))
    assert lt.stats().kernels_generic == 1


def test_sizes_in_the_body_and_bounds_on_the_outer_loop_specialize(fresh):
    """A flip along the outer axis, a transposed read (the outer size is a stride) and a concatenation along
    it (a bound on the outer variable): each size compiles kernels of its own. From the second size on, the
    batch changed since each program was last scheduled, so the flip's and the transposed read's kernels compile
    generic over it at first sight (`schedule._changed_sizes`), each serving its own size; the concatenation's
    is not eligible."""
    for n in (3, 4, 5):
        x = rows(n, 31)
        close(cpu(x).flip(0) * 2, x[::-1] * 2)
        close(cpu(x.T.copy()).T.exp(), np.exp(x))
        close(lt.concatenate([cpu(x), cpu(x) * 2]) + 1, np.concatenate([x, x * 2]) + 1)
    assert lt.stats().kernels_generic == 4 and lt.stats().kernels_compiled == 9


def test_a_kernel_that_splits_at_its_size_specializes(fresh, monkeypatch):
    """Rows fewer than the threads and long: split into partial reductions, decided from the sizes. The kernel
    that is not split is new at 8 rows, where the batch changed since the program was last scheduled: it compiles
    generic over the rows at once, and 9 and 10 run it."""
    monkeypatch.setenv("LT_NUM_THREADS", "4")
    monkeypatch.setattr(runtime, "SPLIT_MIN_WORK", 1 << 12)
    programs = []
    for n in (2, 3, 8, 9, 10):
        # terms of one sign: a float32 sum of 2048 terms that cancel keeps no relative precision to compare
        x = np.abs(rows(n, 1 << 11, seed=n))
        t = (cpu(x) * 2).sum(-1)
        close(t, (x.astype(np.float64) * 2).sum(-1))
        programs.append(runtime.compile_kernel(kernel_of((cpu(x) * 2).sum(-1)))[0])
    assert [isinstance(p, runtime.SplitReductionProgram) for p in programs] == [True, True, False, False, False]
    assert [p.generic_over for p in programs[2:]] == ["o0", "o0", "o0"]
    assert lt.stats().kernels_generic == 1


def test_jit_replays_generic_kernels_at_each_size(fresh):
    @lt.jit
    def f(x, y):
        return (x * y).sum(-1) + x.max(-1)

    for n in (5, 6, 7, 6, 8, 5):
        for seed in (0, 1):  # recorded, then replayed
            x, y = rows(n, 37, seed=seed), rows(n, 37, seed=seed + 9)
            x64 = x.astype(np.float64)
            close(f(cpu(x), cpu(y)), (x64 * y).sum(-1) + x64.max(-1))
    assert lt.stats().kernels_generic == 1


@pytest.mark.parametrize("dynamic", [True, False])
def test_jit_dynamic_compiles_generic_at_once_or_never(fresh, monkeypatch, dynamic):
    """`lt.jit(fn, dynamic=True)`: fn's kernels that may run generic compile generic at their first size, and
    no later size compiles them again; `dynamic=False`: every size compiles its own programs, whatever
    `LT_SYMBOLIC` says. Outside fn, the rule holds as before."""
    monkeypatch.setenv("LT_SYMBOLIC", "0" if dynamic else "1")

    def f(x):
        return (x * 3 - 1).max(-1)

    jitted = lt.jit(f, dynamic=dynamic)
    sizes = (5, 9, 6)
    for n in sizes:
        for seed in (0, 1):  # recorded, then replayed
            x = rows(n, 29, seed=seed)
            np.testing.assert_array_equal(jitted(cpu(x)).numpy(), (x * 3 - 1).max(-1))
    stats = lt.stats()
    assert (stats.kernels_compiled, stats.kernels_generic) == ((1, 1) if dynamic else (len(sizes), 0))
    forget(monkeypatch)
    monkeypatch.delenv("LT_SYMBOLIC")
    for n in sizes:  # a plain call follows the rule: specialized, then generic, then nothing
        x = rows(n, 29)
        np.testing.assert_array_equal(f(cpu(x)).numpy(), (x * 3 - 1).max(-1))
    assert (lt.stats().kernels_compiled, lt.stats().kernels_generic) == (2, 1)


def test_the_recompile_log_says_generic(fresh, monkeypatch, capsys):
    monkeypatch.setenv("LT_LOG", "recompiles")
    for n in (3, 4, 5):
        (cpu(rows(n, 41)).sin() * 2).realize()
    # the reasons, without the user's line (whose path may say "generic")
    lines = [line.split("  <- ")[0] for line in capsys.readouterr().err.splitlines() if line.startswith("lt: compiled")]
    assert len(lines) == 2 and "generic" not in lines[0]
    assert "new shape: " in lines[1] and "compiled generic over o0, which serves every size of it" in lines[1]


def test_threads_compiling_and_running_one_structure_at_once(fresh):
    failures: list[BaseException] = []

    def work(k: int) -> None:
        try:
            for n in range(2 + k, 40, 3):
                x = rows(n, 43, seed=n)
                np.testing.assert_allclose((cpu(x) + 1).max(-1).numpy(), (x + 1).max(-1), rtol=1e-6)
        except BaseException as e:  # noqa: BLE001 (re-raised below, in the test's thread)
            failures.append(e)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures, failures
    assert lt.stats().kernels_generic == 1


@pytest.mark.parametrize("dtype", [lt.float32, lt.int64])
def test_results_on_the_default_device_for_every_size(dtype):
    """Whatever the backend (`LT_DEVICE`): the same values at every size."""
    for n in SIZES:
        x = random_array((n, 9), dtype, seed=n)
        wide = x.astype(np.float64) if dtype.is_float else x
        close((lt.asarray(x) * 3 + 1).sum(-1), (wide * 3 + 1).sum(-1))
    x = random_array((), dtype, seed=1)  # 0-d
    close(lt.asarray(x) * 3 + 1, x * 3 + 1)


def column_data(n: int, dtype: lt.DType) -> np.ndarray:
    return random_array((n, 21), dtype, seed=n)


COLUMN_REDUCTIONS = {
    "(x*2).sum(0)": (lambda x: (x * 2).sum(0), lambda x: (x * 2).sum(0)),
    "x.max(0)": (lambda x: x.max(0), lambda x: x.max(0)),
    "x.argmax(0)": (lambda x: x.argmax(0), lambda x: x.argmax(0)),
    "x[:, ::2].sum(0)": (lambda x: x[:, ::2].sum(0), lambda x: x[:, ::2].sum(0)),  # every other column
    "(x*x).sum(0) - x.sum(0)": (lambda x: (x * x).sum(0) - x.sum(0), lambda x: (x * x).sum(0) - x.sum(0)),
}


@pytest.mark.parametrize("dtype", [lt.float32, lt.float64, lt.int32])
@pytest.mark.parametrize("name", COLUMN_REDUCTIONS)
def test_column_reductions_compile_generic_over_the_batch(fresh, monkeypatch, dtype, name):
    """The batch of `g.sum(0)` is a reduction's loop: its second size compiles a kernel generic over it, which
    every later size runs, with the specialized kernels' values bit for bit (each column folds its rows in
    order either way)."""
    ours, theirs = COLUMN_REDUCTIONS[name]
    sizes = [n for n in SIZES if n or "max" not in name]  # a max over no rows has no identity

    def program(n: int) -> lt.Tensor:
        return ours(cpu(column_data(n, dtype)))

    compiled, results = [], []
    for n in sizes:
        before = lt.stats().kernels_compiled
        x = column_data(n, dtype)
        results.append(close(program(n), theirs(x.astype(np.float64) if dtype.is_float else x)))
        compiled.append(lt.stats().kernels_compiled - before)
    # 2 specializes, 3 compiles generic; 0 and 1 have bodies of their own
    assert compiled[:2] == [1, 1] and sum(compiled[4:]) == 0, compiled
    assert lt.stats().kernels_generic == 1
    (template,) = runtime._generic.values()  # over the reductions' loops alone (the columns stay 21)
    assert 0 not in template.over and len(template.program.kernel.extents) == len(template.over) >= 1
    # a column reduction (`render.column_reductions`) folds each column's rows in order: bit for bit
    as_specialized(monkeypatch, program, sizes, results, exact=not dtype.is_float or "::2" not in name)


FULL_REDUCTIONS = {
    "(x*2).sum()": (lambda x: (x * 2).sum(), lambda x: (x * 2).sum()),
    "x.max()": (lambda x: x.max(), lambda x: x.max()),
    "x.argmin()": (lambda x: x.argmin(), lambda x: x.argmin()),
    "(x*x).sum() / 3": (lambda x: (x * x).sum() / 3, lambda x: (x * x).sum() / 3),
}


@pytest.mark.parametrize("dtype", [lt.float32, lt.float64, lt.int64])
@pytest.mark.parametrize("name", FULL_REDUCTIONS)
def test_full_reductions_compile_generic_over_the_batch(fresh, dtype, name):
    """A reduction of every element of a batch: generic over the batch's loop, with NumPy's values."""
    ours, theirs = FULL_REDUCTIONS[name]
    sizes = [n for n in SIZES if n or "sum" in name]
    compiled = []
    for n in sizes:
        before = lt.stats().kernels_compiled
        x = column_data(n, dtype)
        expected = theirs(x.astype(np.float64) if dtype.is_float else x)
        got = ours(cpu(x))
        np.testing.assert_allclose(got.numpy(), expected, rtol=1e-5 if got.dtype == lt.float32 else 1e-12)
        compiled.append(lt.stats().kernels_compiled - before)
    assert compiled[:2] == [1, 1] and sum(compiled[4:]) == 0, compiled
    assert lt.stats().kernels_generic == 1


def test_a_loop_seen_to_vary_later_widens_the_generic_kernel(fresh):
    """A row sum of a slice of fixed-width rows: the rows vary first (generic over the output loop, the row's
    length known), then the slice's length (generic over both); the rows again compile nothing."""
    programs = []
    for n, m in [(3, 13), (5, 13), (9, 13), (5, 17), (7, 20), (4, 1 + 2), (30, 13)]:
        x = rows(n, 40, seed=n + m)
        close(cpu(x)[:, :m].sum(-1), x[:, :m].astype(np.float64).sum(-1))
        programs.append(runtime.compile_kernel(kernel_of(cpu(x)[:, :m].sum(-1)))[0])
    assert [p.generic_over for p in programs] == [None, "o0", "o0", "o0, r0", "o0, r0", "o0, r0", "o0, r0"]
    assert [p.sizes for p in programs[3:]] == [(17,), (20,), (3,), (13,)]
    assert lt.stats().kernels_generic == 2


def test_generic_column_reductions_share_their_columns_between_threads(fresh, monkeypatch):
    monkeypatch.setattr(runtime, "PARALLEL_MIN_WORK", 64)  # every size below goes to the pool
    for threads in ("1", "2", "3"):
        monkeypatch.setenv("LT_NUM_THREADS", threads)
        for n in (40, 41, 7, 1000, 257):
            x = random_array((n, 300), lt.float32, seed=n)
            close(cpu(x).exp().sum(0) + cpu(x).min(0), np.exp(x.astype(np.float64)).sum(0) + x.min(0))
    assert lt.stats().kernels_generic == 1


def test_checked_and_opted_out_reductions_specialize(fresh, monkeypatch):
    for check, flag in ((True, ""), (False, "0")):
        forget(monkeypatch)
        monkeypatch.setattr(bounds, "CHECK", check)
        monkeypatch.setenv("LT_SYMBOLIC", flag)
        for n in (2, 3, 4, 5):
            x = rows(n, 29)
            close((cpu(x) * 2).sum(0), (x.astype(np.float64) * 2).sum(0))
        assert (lt.stats().kernels_compiled, lt.stats().kernels_generic) == (4, 0)


def test_jit_replays_generic_reductions_at_each_size(fresh):
    @lt.jit
    def f(x, y):
        return (x * y).sum(0) + x.max()

    for n in (5, 6, 7, 6, 8, 5):
        for seed in (0, 1):  # recorded, then replayed
            x, y = rows(n, 37, seed=seed), rows(n, 37, seed=seed + 9)
            x64 = x.astype(np.float64)
            close(f(cpu(x), cpu(y)), (x64 * y).sum(0) + x64.max())
    assert lt.stats().kernels_generic >= 1 and lt.stats().kernels_compiled <= 4


def test_the_recompile_log_says_generic_over_a_reduction(fresh, monkeypatch, capsys):
    monkeypatch.setenv("LT_LOG", "recompiles")
    for n in (3, 4, 5):
        (cpu(rows(n, 41)).sin().sum(0)).realize()
    # the reasons, without the user's line (whose path may say "generic")
    lines = [line.split("  <- ")[0] for line in capsys.readouterr().err.splitlines() if line.startswith("lt: compiled")]
    assert len(lines) == 2 and "generic" not in lines[0]
    assert "compiled generic over r0, which serves every size of it" in lines[1]


MEANS = {
    "x.mean()": (lambda x: x.mean(), lambda x: x.mean()),
    "x.mean(0)": (lambda x: x.mean(0), lambda x: x.mean(0)),
    "((x - 1)**2).mean()": (lambda x: ((x - 1) ** 2).mean(), lambda x: ((x - 1) ** 2).mean()),
    "x.mean(0) + x.max(0)": (lambda x: x.mean(0) + x.max(0), lambda x: x.mean(0) + x.max(0)),
}


@pytest.mark.parametrize("dtype", [lt.float32, lt.float64, lt.float16, lt.int32])
@pytest.mark.parametrize("name", MEANS)
def test_means_over_the_batch_count_it_at_runtime(fresh, dtype, name):
    """A mean's divisor, the count of its reduction's terms, is a constant of each size's kernel: the erased text
    names it a count (`Kernel.counts`), and the generic kernel computes it from the sizes it is passed."""
    ours, theirs = MEANS[name]
    sizes = [n for n in SIZES if n]  # (a mean over nothing is NaN, a max has no identity)
    compiled = []
    for n in sizes:
        before = lt.stats().kernels_compiled
        x = column_data(n, dtype)
        got = ours(cpu(x))
        expected = theirs(x.astype(np.float64))
        tolerance = 2e-3 if got.dtype == lt.float16 else 1e-5 if got.dtype == lt.float32 else 1e-12
        np.testing.assert_allclose(got.numpy().astype(np.float64), expected, rtol=tolerance, atol=tolerance)
        compiled.append(lt.stats().kernels_compiled - before)
    # 2 specializes, 3 compiles generic; 1 has bodies of its own (its sum over one row is none)
    assert compiled[:2] == [1, 1] and sum(compiled[3:]) == 0, compiled
    assert lt.stats().kernels_generic == 1


CENTERED = {
    "x - x.mean(0)": (lambda x: x - x.mean(0), lambda x: x - x.mean(0)),
    "batch norm": (lambda x: (x - x.mean(0)) / (x.var(0) + 1e-5).sqrt(),
                   lambda x: (x - x.mean(0)) / np.sqrt(x.var(0) + 1e-5)),
    "x / len(x)": (lambda x: x / x.shape[0], lambda x: x / x.shape[0]),
}


@pytest.mark.parametrize("dtype", [lt.float32, lt.float64])
@pytest.mark.parametrize("name", CENTERED)
def test_a_count_of_the_batch_in_a_kernel_over_it(fresh, monkeypatch, dtype, name):
    """A mean's divisor in a kernel apart from its sum (`x - x.mean(0)` subtracts in a kernel over the batch) is
    the size of that kernel's outermost loop: the erased text names it a count of that loop, which the generic
    kernel is passed; after the first two sizes nothing compiles. Bit for bit as each size's own kernels."""
    ours, theirs = CENTERED[name]
    sizes, results, compiled = [2, 3, 5, 8, 13, 64, 100], [], []
    for n in sizes:
        before = lt.stats().kernels_compiled
        x = rows(n, 19, dtype, seed=n)
        results.append(close(ours(cpu(x)), theirs(x.astype(np.float64))))
        compiled.append(lt.stats().kernels_compiled - before)
    assert sum(compiled[2:]) == 0, compiled
    as_specialized(monkeypatch, lambda n: ours(cpu(rows(n, 19, dtype, seed=n))), sizes, results)


def test_a_count_of_the_batch_by_chance_stays_that_constant(fresh):
    """`x * 3` over a batch of 3 reads the 3 as the batch's size: that size's kernel has a text of its own, and
    every other size multiplies by 3, whatever the generic kernel of the others is passed."""
    for n in (4, 5, 3, 6, 3, 7):
        x = rows(n, 9, seed=n)
        np.testing.assert_array_equal((cpu(x) * 3).numpy(), x * np.float32(3))


def test_a_count_in_the_erased_text():
    a, b = (kernel_of(cpu(rows(n, 13)).mean(0)) for n in (6, 9))
    assert a.body_text() != b.body_text() and a.erased_text() == b.erased_text()
    assert "count of r0" in a.erased_text() and "const" not in a.erased_text()
    # a variance's divisor with Bessel's correction is the count less one; with another correction, a constant of
    # each size
    c, d = (kernel_of(cpu(rows(n, 13)).var(0, correction=1)) for n in (6, 9))
    assert c.erased_text() == d.erased_text() and re.search(r"count of r\d less 1", c.erased_text())
    e, f = (kernel_of(cpu(rows(n, 13)).var(0, correction=2)) for n in (6, 9))
    assert e.erased_text() != f.erased_text()


VARIANCES = {
    "x.var(0, correction=1)": (lambda x: x.var(0, correction=1), lambda x: x.var(0, ddof=1)),
    "x.std(correction=1)": (lambda x: x.std(correction=1), lambda x: x.std(ddof=1)),
    "x.var(1, correction=1), over the batch": (lambda x: x.T.var(1, correction=1), lambda x: x.T.var(1, ddof=1)),
}


@pytest.mark.parametrize("dtype", [lt.float32, lt.float64])
@pytest.mark.parametrize("name", VARIANCES)
def test_a_variance_over_the_batch_divides_by_the_count_less_one(fresh, monkeypatch, dtype, name):
    """Bessel's correction: the divisor, one less than the count of the sum's terms, is computed from the sizes
    (`Kernel.counts`): from 3 rows (2 has a divisor of 1, a constant like any other) the second size compiles
    generic, later ones nothing, with each size's own values bit for bit."""
    ours, theirs = VARIANCES[name]
    sizes = [n for n in SIZES if n >= 3]

    def program(n: int) -> lt.Tensor:
        return ours(cpu(column_data(n, dtype)))

    compiled, results = [], []
    for n in sizes:
        before = lt.stats().kernels_compiled
        results.append(close(program(n), theirs(column_data(n, dtype).astype(np.float64))))
        compiled.append(lt.stats().kernels_compiled - before)
    assert compiled[:2] == [1, 1] and sum(compiled[2:]) == 0, compiled
    assert lt.stats().kernels_generic == 1
    # a full reduction's sum vectorized over a loop of unknown length adds in another order; a column one in order
    as_specialized(monkeypatch, program, sizes, results, exact="std" not in name)


def test_a_constant_that_equals_a_count_by_chance(fresh):
    """`x.sum() / 26` over 2 rows of 13 reads the 26 as the count of the sum's terms: that kernel computes it
    from its sizes, which are those of its text; at other sizes the 26 is a constant of another text."""
    for n in (2, 3, 2, 4, 5, 2, 6):
        x = rows(n, 13, seed=n)
        close(cpu(x).sum() / 26, x.astype(np.float64).sum() / 26)
        close(cpu(x).mean(), x.astype(np.float64).mean())


NESTED = {
    # a bound on the output loop (the concatenation's) keeps that loop's size; the reductions' loops are generic
    "concatenated column sums": (lambda x: lt.concatenate([x.sum(0), (x * x).sum(0)]),
                                 lambda x: np.concatenate([x.sum(0), (x * x).sum(0)])),
    # a reduction inside another, both over the batch's loop or the row's
    "sum of row maxima": (lambda x: x.max(-1).sum(), lambda x: x.max(-1).sum()),
    "column sums of a softmax": (lambda x: x.softmax(-1).sum(0), lambda x: softmax(x).sum(0)),
}


@pytest.mark.parametrize("name", NESTED)
def test_reductions_inside_other_loops_over_the_batch(fresh, monkeypatch, name):
    ours, theirs = NESTED[name]
    sizes, results = [2, 3, 1, 5, 8, 9, 17, 100], []
    for n in sizes:
        x = rows(n, 12, seed=n)
        results.append(close(ours(cpu(x)), theirs(x.astype(np.float64))))
    assert lt.stats().kernels_generic >= 1
    as_specialized(monkeypatch, lambda n: ours(cpu(rows(n, 12, seed=n))), sizes, results, exact=False)


# Contractions of one product whose batch is m (a linear layer, its bias and activation in the epilogue), k (its
# weight's gradient) or n (the product the scheduler turns so it vectorizes along the batch): each with the
# loop it is generic over. Sizes from 24 up keep each one a contraction (`lowering.MIN_CONTRACTION_WORK`).
CONTRACTIONS = {
    "x @ w.T": (lambda n: [(n, 70), (40, 70)], lambda x, w: x @ w.T, "cm"),
    "relu(x @ w + b)": (lambda n: [(n, 70), (70, 40), (40,)],
                        lambda x, w, b: x @ w + b, "cm"),
    "x.T @ g": (lambda n: [(n, 60), (n, 80)], lambda x, g: x.T @ g, "ck"),
    "w @ x.T": (lambda n: [(12, 300), (n, 300)], lambda w, x: w @ x.T, "cn"),
    # logits of 10 classes: the product turned so it vectorizes along the batch, its epilogue turning it back
    # (adding the bias), which reads rows whose length varies (`Contraction.reading_rows_of`)
    "x @ w.T + b, 10 columns": (lambda n: [(n, 300), (10, 300), (10,)], lambda x, w, b: x @ w.T + b, "cn"),
}
CONTRACTION_SIZES = [24, 40, 33, 64, 25, 100, 57]


def small_integers(shape: tuple[int, ...], dtype: lt.DType = lt.float32, seed: int = 0) -> np.ndarray:
    """Integers from -4 to 4: every sum of products of them is exact, in any order."""
    return np.random.default_rng(seed).integers(-4, 5, shape).astype(dtype.name)


@pytest.mark.parametrize("dtype", [lt.float32, lt.float64])
@pytest.mark.parametrize("name", CONTRACTIONS)
def test_contractions_compile_generic_over_the_batch(fresh, monkeypatch, dtype, name):
    """The second size of a contraction whose m, n or k is the batch compiles the template generic over it (its
    packing kernels, the geometry its core reads and its epilogue): later sizes compile nothing, and give the
    values of each size's own kernels, bit for bit (one tile and one block of k either way)."""
    shapes, product, over = CONTRACTIONS[name]

    def data(n: int) -> list[np.ndarray]:
        return [small_integers(s, dtype, seed=k) for k, s in enumerate(shapes(n))]

    def program(n: int) -> lt.Tensor:
        return product(*map(cpu, data(n)))

    compiled, results = [], []
    for n in CONTRACTION_SIZES:
        before = lt.stats().kernels_compiled
        assert isinstance(kernel_of(program(n)), Contraction)
        results.append(close(program(n), product(*(a.astype(np.float64) for a in data(n)))))
        compiled.append(lt.stats().kernels_compiled - before)
    assert compiled[:2] == [1, 1] and sum(compiled[2:]) == 0, compiled
    program_of_last, _ = runtime.compile_kernel(kernel_of(program(CONTRACTION_SIZES[-1])))
    assert isinstance(program_of_last, runtime.ContractionProgram) and program_of_last.generic_over == over
    assert lt.stats().kernels_generic == 1
    as_specialized(monkeypatch, program, CONTRACTION_SIZES, results)


@pytest.mark.parametrize("name", [name for name, (_, _, over) in CONTRACTIONS.items() if over != "ck"])
def test_a_generic_packing_walks_its_panels_as_the_specialized_one(fresh, monkeypatch, name):
    """The operand whose rows vary (m or n) is packed by the specialized program's loop nest, panel by panel, the
    last panel's lanes up to the size the call passes: a generic packing that ran each row's whole k at a panel's
    stride (B of `w @ x.T`, 16 columns per panel) wrote a line for every element and took 1.4x the specialized
    product's time. Values at each size are `test_contractions_compile_generic_over_the_batch`'s."""
    shapes, product, over = CONTRACTIONS[name]
    kernels = [kernel_of(product(*(cpu(small_integers(s, seed=k)) for k, s in enumerate(shapes(n)))))
               for n in (40, 33, 57)]
    for k in kernels[:2]:
        runtime.compile_kernel(k)
    program, _ = runtime.compile_kernel(kernels[2])
    monkeypatch.setenv("LT_SYMBOLIC", "0")
    own = runtime._built(runtime._builder(kernels[2], False))[0]
    assert program.generic_over == over and own.generic_over is None
    for generic_pack, pack in zip(program.stages[:2], own.stages[:2]):
        assert [v.name for v in generic_pack.kernel.loops] == [v.name for v in pack.kernel.loops]
        assert generic_pack.extent == pack.extent


@pytest.mark.parametrize("sizes", [(2, 3, 40, 1000, 57), (4, 5, 40, 1000, 57)], ids=str)
@pytest.mark.parametrize("name", CONTRACTIONS)
def test_a_product_that_grows_keeps_its_template(fresh, name, sizes):
    """A product too small for the template at its first size (2: a loop nest) is one at the next, whose size
    changed (`schedule._changed_sizes`), and compiles it generic there, below one panel's width (a tile's 6 rows,
    16 columns, a block of 768 k's): its packing's indexes hold no simplification true of that size only
    (`symbolic.unbounded`), so the larger sizes, many panels and blocks of k, compile nothing and are right."""
    shapes, product, over = CONTRACTIONS[name]

    def data(n: int) -> list[np.ndarray]:
        return [small_integers(s, seed=k) for k, s in enumerate(shapes(n))]

    compiled = []
    for n in sizes:
        before = lt.stats().kernels_compiled
        close(product(*map(cpu, data(n))), product(*(a.astype(np.float64) for a in data(n))))
        compiled.append(lt.stats().kernels_compiled - before)
    assert isinstance(kernel_of(product(*map(cpu, data(sizes[-1])))), Contraction)
    assert compiled == [1, 1, 0, 0, 0] and lt.stats().kernels_generic == 1
    program, _ = runtime.compile_kernel(kernel_of(product(*map(cpu, data(sizes[-1])))))
    assert program.generic_over == over


@pytest.mark.parametrize("threads", ["1", "3"])
def test_generic_contractions_share_their_tasks_between_threads(fresh, monkeypatch, threads):
    """The tasks of each size (`Layout.choose` at that size, with the generic code's tile) on any number of
    threads, and the panels of every size in scratch buffers the sizes share, grown where a size needs more."""
    monkeypatch.setenv("LT_NUM_THREADS", threads)
    for n in (30, 200, 31, 500, 64):
        x, w = small_integers((n, 96), seed=n), small_integers((80, 96), seed=1)
        close(cpu(x) @ cpu(w).T, x.astype(np.float64) @ w.astype(np.float64).T)
    assert lt.stats().kernels_generic == 1 and lt.stats().kernels_compiled == 2


@pytest.mark.parametrize("case", ["m and k", "m and n, read by an epilogue"])
def test_contractions_whose_sizes_vary_inside_specialize(fresh, case):
    """Panels whose rows and depth both vary have no layout with constant strides, and an epilogue over a
    product whose rows and columns both vary has an inner loop that varies: each size compiles its own, right."""
    for n in (48, 64, 56):
        a = small_integers((n, n) if case == "m and k" else (n, 50), seed=n)
        b = small_integers((n, 50), seed=n + 1)
        got = cpu(a) @ cpu(b) if case == "m and k" else (cpu(a) @ cpu(b).T).relu() + 1
        assert isinstance(kernel_of(got), Contraction)
        close(got, a.astype(np.float64) @ b if case == "m and k" else np.maximum(a @ b.T, 0) + 1.0)
    assert lt.stats().kernels_compiled == 3 and lt.stats().kernels_generic == 0


def test_jit_replays_generic_contractions_at_each_size(fresh):
    @lt.jit
    def f(x, w, b):
        return (x @ w + b).relu().sum(-1)

    w, b = rows(70, 40, seed=1), random_array((40,), lt.float32, seed=2)
    for n in (24, 40, 64):
        for seed in (0, 1):  # recorded, then replayed
            x = rows(n, 70, seed=seed + n)
            expected = np.maximum(x.astype(np.float64) @ w + b, 0).sum(-1)
            close(f(cpu(x), cpu(w), cpu(b)), expected)
    assert lt.stats().kernels_generic >= 1
    compiled = lt.stats().kernels_compiled
    f(cpu(rows(90, 70)), cpu(w), cpu(b)).numpy()
    assert lt.stats().kernels_compiled == compiled


def test_a_kernel_new_at_a_varying_size_compiles_generic_at_once(fresh):
    """At 5 rows `x @ w` is a loop nest beside a reduction; at 6 the batch changed, so the product counts as
    large (`lowering.contraction_axes`): a contraction, compiled generic over its rows at once with the step's
    other kernel, and no later size compiles anything."""
    w = small_integers((64, 48), seed=1)
    compiled, generic = [], []
    for n in (5, 6, 30, 31, 45):
        x = small_integers((n, 64), seed=n)
        before = (lt.stats().kernels_compiled, lt.stats().kernels_generic)
        rows_sum, product = (cpu(x) * 2).sum(-1), cpu(x) @ cpu(w)
        lt.realize(rows_sum, product)
        close(rows_sum, (x * 2.0).sum(-1))
        close(product, x.astype(np.float64) @ w)
        compiled.append(lt.stats().kernels_compiled - before[0])
        generic.append(lt.stats().kernels_generic - before[1])
    assert isinstance(kernel_of(cpu(x) @ cpu(w)), Contraction)
    assert compiled == [2, 2, 0, 0, 0] and generic == [0, 2, 0, 0, 0]


@pytest.mark.parametrize("dtype", [lt.float32, lt.float64, lt.int32])
def test_a_batch_of_one_then_two_compiles_generic_at_two(fresh, dtype):
    """A batch of one has kernels of its own (their loops over the batch left out), so at two the kernels are
    new to the process; the batch changed since the program was last scheduled (`schedule._changed_sizes`), so
    they compile generic over it at once, and no later size compiles anything (before: specialized at two,
    generic at three)."""
    compiled, generic = [], []
    for n in (1, 2, 3, 7):
        x = random_array((n, 64), dtype, seed=n)
        before = (lt.stats().kernels_compiled, lt.stats().kernels_generic)
        sums, tops = (cpu(x) * 2).sum(0), (cpu(x) + 1).max(-1)
        lt.realize(sums, tops)
        np.testing.assert_allclose(sums.numpy(), (x * 2).sum(0), rtol=1e-6)
        np.testing.assert_array_equal(tops.numpy(), (x + 1).max(-1))
        compiled.append(lt.stats().kernels_compiled - before[0])
        generic.append(lt.stats().kernels_generic - before[1])
    assert compiled == [2, 2, 0, 0] and generic == [0, 2, 0, 0]


@pytest.mark.parametrize("dtype", [lt.float32, lt.float64])
def test_a_linear_layer_over_a_sequence_compiles_generic_over_its_length(fresh, dtype):
    """`relu(x @ w + b)` over `x` of (1, t, 70), a batch of one sequence: the epilogue's loops are (t, 40), its size-1
    axis opening no loop, so its outer loop is the sequence's length, which the generic contraction passes; before,
    the epilogue kept a loop of one outside it and the length in its text, and every length compiled."""
    w, b = small_integers((70, 40), dtype, seed=1), small_integers((40,), dtype, seed=2)
    compiled, generic = [], []
    for t in (30, 31, 57, 64):
        x = small_integers((1, t, 70), dtype, seed=t)
        before = (lt.stats().kernels_compiled, lt.stats().kernels_generic)
        y = (cpu(x) @ cpu(w) + cpu(b)).relu()
        np.testing.assert_array_equal(y.numpy(), np.maximum(x @ w + b, 0))
        compiled.append(lt.stats().kernels_compiled - before[0])
        generic.append(lt.stats().kernels_generic - before[1])
    assert [type(item.kernel) for item in lt.schedule((cpu(x) @ cpu(w) + cpu(b)).relu())] == [Contraction]
    assert compiled == [1, 1, 0, 0] and generic == [0, 1, 0, 0]


@pytest.mark.parametrize("dtype", [lt.float32, lt.float64])
def test_a_linear_layer_over_a_batch_of_sequences_compiles_generic_over_their_length(fresh, monkeypatch, dtype):
    """`relu(x @ w + b) + r` over `x` of (3, t, 70), every other column of a wider array (non-contiguous), as a
    transformer's MLP runs over a batch of sequences of varying length: the epilogue's loops (3, t, 40) are merged
    into the product's rows and columns (3*t, 40), so its text holds no `t` and the generic contraction passes its
    rows; before, its indexes held `t` (`o0*t + o1`) and every length compiled."""
    w, b = small_integers((70, 40), dtype, seed=1), small_integers((40,), dtype, seed=2)

    def data(t: int) -> tuple[np.ndarray, np.ndarray]:
        return small_integers((3, t, 140), dtype, seed=t)[..., ::2], small_integers((3, t, 40), dtype, seed=t + 1)

    def program(t: int) -> lt.Tensor:
        x, r = data(t)
        return (cpu(x) @ cpu(w) + cpu(b)).relu() + cpu(r)

    compiled, generic, results, lengths = [], [], [], [30, 31, 57, 64, 33]
    for t in lengths:
        x, r = data(t)
        before = (lt.stats().kernels_compiled, lt.stats().kernels_generic)
        results.append(program(t).numpy())
        np.testing.assert_array_equal(results[-1], np.maximum(x @ w + b, 0) + r)
        compiled.append(lt.stats().kernels_compiled - before[0])
        generic.append(lt.stats().kernels_generic - before[1])
    assert [type(item.kernel) for item in lt.schedule(program(33))] == [Contraction]
    assert compiled == [1, 1, 0, 0, 0] and generic == [0, 1, 0, 0, 0]
    as_specialized(monkeypatch, program, lengths, results)


def test_jit_dynamic_compiles_a_linear_layer_generic_at_once(fresh):
    """`dynamic=True` makes every sized loop generic from the first compile; a contraction cannot be generic over
    its rows and its k at once, so it is generic over its rows and columns, its k the one it has."""
    w, b = small_integers((70, 40), seed=1), small_integers((40,), seed=2)

    def layer(x, w, b):
        return (x @ w + b).relu()

    f = lt.jit(layer, dynamic=True)

    for n in (24, 40, 33):
        for seed in (0, 1):
            x = small_integers((n, 70), seed=seed + n)
            close(f(cpu(x), cpu(w), cpu(b)), np.maximum(x.astype(np.float64) @ w + b, 0))
    assert lt.stats().kernels_compiled == 1 and lt.stats().kernels_generic == 1


def masked_softmax(x: np.ndarray) -> lt.Tensor:
    """A causal softmax over scores `x` of (b, h, t, t): its indexes hold t as strides (t and t*t) and as the size
    of inner loops."""
    t = x.shape[-1]
    keep = lt.arange(t, device="cpu")[:, None] >= lt.arange(t, device="cpu")[None, :]
    return lt.where(keep, cpu(x), float("-inf")).softmax(-1)


def masked_softmax_expected(x: np.ndarray) -> np.ndarray:
    t = x.shape[-1]
    s = np.where(np.tril(np.ones((t, t), bool)), x.astype(np.float64), -np.inf)
    e = np.exp(s - s.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


STRIDED = {  # name -> (data at length t, program, expected)
    "causal softmax over (2, 3, t, t)": (lambda t: rows(6 * t, t, seed=t).reshape(2, 3, t, t), masked_softmax,
                                         masked_softmax_expected),
    "(h, t, t) transposed, every other row": (lambda t: rows(3 * 2 * t, t, seed=t).reshape(3, 2 * t, t)[:, ::2],
                                              lambda x: cpu(x).transpose(1, 2) * 2 + 1,
                                              lambda x: x.transpose(0, 2, 1) * 2 + 1),
    "rows of (4, t, t) summed": (lambda t: rows(4 * t, t, seed=t).reshape(4, t, t),
                                 lambda x: cpu(x).transpose(0, 2, 1).exp().sum(-1),
                                 lambda x: np.exp(x.astype(np.float64)).sum(1)),
}


@pytest.mark.parametrize("name", STRIDED)
def test_strides_that_are_a_changed_size_compile_generic_over_it(fresh, monkeypatch, name):
    """Kernels whose indexes hold a length t as a stride (t, t*t) and as an inner loop's size: from the second
    length on (the size seen to change), one generic kernel per structure reads t at runtime; later lengths,
    larger, smaller, odd, compile nothing, with each length's own results (a length of 1 is another structure:
    its loops of one vanish; so is a length equal to another loop's size, 3 heads at t = 3: `Kernel.equal_sizes`)."""
    make, program, expected = STRIDED[name]
    lengths = [16, 17, 18, 23, 5, 40, 7, 17]
    compiled, results = [], []
    for t in lengths:
        before = lt.stats().kernels_compiled
        results.append(close(program(make(t)), expected(make(t))))
        compiled.append(lt.stats().kernels_compiled - before)
    assert compiled[2:] == [0] * (len(lengths) - 2), compiled
    assert lt.stats().kernels_generic == compiled[1] >= 1
    as_specialized(monkeypatch, lambda t: program(make(t)), lengths, results, exact=False)


def test_a_stride_is_read_as_the_loops_size():
    """`symbolized` writes each coefficient that is a product of the changed sizes as a `Stride` over the first loop
    of that size: the kernel's erased text is then the same at every such size, its loops of that size sized, and
    the kernel computes what it did (the reference interpreter's results). Its erased text pins which of its sized
    loops have one size (the row's and the reductions' over it: at t = 6 the 2*3 rows too, another text)."""
    from lazytensor.kernels.reference import run
    from lazytensor.kernels.symbolic import symbolized

    texts = set()
    for t in (5, 7, 9, 6):
        x = rows(6 * t, t, seed=t).reshape(2, 3, t, t)
        kernels = [item.kernel for item in lt.schedule(masked_softmax(x))]
        k = kernels[-1]
        s = symbolized(k, frozenset({t}))
        assert s.body_text() != k.body_text() and "|o2|" in s.body_text() and "|o2 o2|" in s.body_text()
        assert {v.name for v in s.sized_loops()} == {"o0", "o2", "o3", "r0", "r1"}
        assert symbolized(k, frozenset({t + 1})) is k
        (same,) = [line for line in s.erased_text().split("\n") if line.startswith("  equal sizes ")]
        assert sorted(same.split()[2:]) == (["o0", "o2", "o3", "r0", "r1"] if t == 6 else ["o2", "o3", "r0", "r1"])
        assert "equal sizes" not in k.erased_text()
        texts.add(s.erased_text())
        for kernel in (k, s):
            out = np.zeros(k.buffers[0].size, np.float32)
            run(kernel, [out, x.reshape(-1)], [float("-inf")])
            np.testing.assert_allclose(out.reshape(x.shape), masked_softmax_expected(x), rtol=1e-5, atol=1e-6)
    assert len(texts) == 2


@pytest.mark.parametrize("over", ["strided loops", "all"])
def test_generic_strided_code_stays_inside_each_sizes_buffers(monkeypatch, over):
    """A kernel generic over its strided loops, compiled checked against one length's buffers and run at that
    length: no access outside them and the length's own values; run at a length whose buffers are smaller than the
    kernel reads (a length too large for them), the checked kernel catches it."""
    from lazytensor.kernels.symbolic import symbolized

    monkeypatch.setattr(bounds, "CHECK", True)
    for t in (3, 4, 8, 17):  # not 5: the 2*3 rows would be of the length t + 1, another text
        x = rows(6 * t, t, seed=t).reshape(2, 3, t, t)
        *_, item = lt.schedule(masked_softmax(x))
        k = legalize(symbolized(item.kernel, frozenset({t})), NATIVE)
        loops = k.sized_loops()
        positions = frozenset(i for i, v in enumerate(loops) if over == "all" or v.size == t)
        g = generic(k, positions)
        checked, _ = runtime._built(runtime._program(Kernel(g.name, k.buffers, g.params, g.loops, g.stores,
                                                            g.extents), checked=True))
        out = np.full(k.buffers[0].size, -1, np.float32)
        checked.sized(k, positions)([out.ctypes.data, x.ctypes.data], item.params)
        np.testing.assert_allclose(out.reshape(x.shape), masked_softmax_expected(x), rtol=1e-5, atol=1e-6)
        # launched as the kernel of length t + 1 over this length's buffers: reads past them, caught
        *_, wider = lt.schedule(masked_softmax(rows(6 * t + 6, t + 1).reshape(2, 3, t + 1, t + 1)))
        big = legalize(symbolized(wider.kernel, frozenset({t + 1})), NATIVE)
        assert big.erased_text() == k.erased_text()
        with pytest.raises(bounds.OutOfBounds):
            checked.sized(big, positions)([out.ctypes.data, x.ctypes.data], item.params)


def test_a_generic_softmax_hands_its_exps_over_as_the_specialized_one():
    """The exps a causal softmax's sum computes go to its output loop through the output buffer (`shared_rows`) in
    its kernel generic over the length as in the specialized one: that takes the row's loops and the reduction's
    of one size, which the erased text pins (`Kernel.equal_sizes`) and the generic kernel's loops say (one range
    per size); generic over the row's loop alone, its size and the reduction's may differ, and nothing is handed."""
    from lazytensor.kernels.ir import shared_rows
    from lazytensor.kernels.symbolic import symbolized

    t = 12
    *_, item = lt.schedule(masked_softmax(rows(6 * t, t).reshape(2, 3, t, t)))
    k = symbolized(item.kernel, frozenset({t}))
    loops = k.sized_loops()
    every = generic(k, frozenset(i for i, v in enumerate(loops) if v.size == t))
    row = generic(k, frozenset(i for i, v in enumerate(loops) if v.name == "o3"))
    assert [len(shared_rows(x, lambda v: 1)) for x in (item.kernel, k, every, row)] == [1, 1, 1, 0]


# Batched products (`Contraction.sized_loops` of a batch): (5, M, K) @ (5, K, N), one of M, N and K the size that
# varies, the others 12 and 20; each with the loops its generic template is over (those of the varying size).
BATCHED = {"M": (lambda n: ((5, n, 12), (5, 12, 20)), "cm"),
           "N": (lambda n: ((5, 12, 20), (5, 20, n)), "cn"),
           "K": (lambda n: ((5, 12, n), (5, n, 20)), "ck")}


def contraction_compiles(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the contractions compiled from now on (a template each, specialized or generic)."""
    names = []
    build = runtime._contraction_program

    def counted(c, *args, **kwargs):
        names.append(c.name)
        return build(c, *args, **kwargs)

    monkeypatch.setattr(runtime, "_contraction_program", counted)
    return names


@pytest.mark.parametrize("dtype", [lt.float32, lt.float64])
@pytest.mark.parametrize("name", BATCHED)
def test_batched_products_compile_generic_over_a_changed_size(fresh, monkeypatch, dtype, name):
    """A batched product whose M, N or K changed between two calls has its operands' strides that are that size read
    at runtime (`symbolic.symbolized`): compiled generic over it at once (the first size a loop nest of its own, the
    product small), and no later size compiles anything, inside one panel or across many, with the values of each
    size's own program (`LT_SYMBOLIC=0`), bit for bit. Sizes that divide no other stride: one that does (a batch
    stride of 240 at 40) is a product of it there too, another text (`symbolized`)."""
    shapes, over = BATCHED[name]

    def program(n: int) -> lt.Tensor:
        a, b = (cpu(small_integers(s, dtype, seed=k + n)) for k, s in enumerate(shapes(n)))
        return a @ b

    compiled, results, sizes = [], [], [5, 9, 33, 64, 7, 57, 41]
    for n in sizes:
        before = lt.stats().kernels_compiled
        a, b = (small_integers(s, dtype, seed=k + n) for k, s in enumerate(shapes(n)))
        results.append(close(program(n), a.astype(np.float64) @ b))
        compiled.append(lt.stats().kernels_compiled - before)
    assert compiled == [1, 1, 0, 0, 0, 0, 0] and lt.stats().kernels_generic == 1
    program_of_last, _ = runtime.compile_kernel(kernel_of(program(sizes[-1])))
    assert isinstance(program_of_last, runtime.ContractionProgram) and program_of_last.generic_over == over
    as_specialized(monkeypatch, program, sizes, results)


def attention(q: lt.Tensor, k: lt.Tensor, v: lt.Tensor) -> lt.Tensor:
    return (q @ k.transpose(-1, -2)).softmax(-1) @ v


def attention_expected(q: np.ndarray, k: np.ndarray, v: np.ndarray) -> np.ndarray:
    import torch

    return attention(*(torch.from_numpy(x.astype(np.float64)) for x in (q, k, v))).numpy()


@pytest.mark.parametrize("threads", ["1", "2"])
def test_attention_compiles_its_products_once_over_the_sequence(fresh, monkeypatch, threads):
    """Attention over (2, 3, L, 16) at lengths that change: its two products (`q @ k.T`, L x L of k 16, and `p @ v`,
    L x 16 of k L) compile their templates once, generic over L, from the first length the products run the template
    at; later lengths, in one panel or over several, not whole tiles, compile none, with torch's values (those that divide the
    head's width, 16, too: `test_attention_gradients_at_lengths_that_divide_the_heads_width_compile_nothing`). A length of 1
    (its loops of one vanish) and of 0 (nothing to compute) are other structures, with the right values."""
    monkeypatch.setenv("LT_NUM_THREADS", threads)
    names = contraction_compiles(monkeypatch)
    compiled = []
    for length in (7, 9, 13, 33, 3, 20, 1, 0):
        q, k, v = (random_array((2, 3, length, 16), lt.float32, seed=length + s) for s in range(3))
        before = len(names)
        close(attention(cpu(q), cpu(k), cpu(v)), attention_expected(q, k, v))
        compiled.append(len(names) - before)
    assert compiled[:6] == [0, 2, 0, 0, 0, 0], compiled
    programs = [p for p in runtime._programs.values() if isinstance(p, runtime.ContractionProgram)]
    assert {p.generic_over for p in programs} == {"cm, cn", "cm, ck"}


@pytest.mark.parametrize("length", [1, 2, 7, 33])
def test_attention_on_the_default_device_at_each_length(length):
    """Whatever the backend (`LT_DEVICE`): attention's values at lengths that change, torch's."""
    for size in (length, length + 5):
        q, k, v = (random_array((2, 3, size, 16), lt.float32, seed=size + s) for s in range(3))
        close(attention(lt.asarray(q), lt.asarray(k), lt.asarray(v)), attention_expected(q, k, v))


@pytest.mark.parametrize("name", BATCHED)
def test_generic_batched_products_stay_inside_each_sizes_buffers(monkeypatch, name):
    """The generic template of a batched product (`runtime._generic_contraction`) compiled checked (`kernels/bounds.py`:
    its packing's loads of the operands, its core's tiles and panels) against one size's buffers and run at that size:
    no access outside them, and that size's values; sizes inside one panel, not whole tiles or runs of k, and of many
    panels."""
    from lazytensor.kernels.symbolic import symbolized

    lowering = importlib.import_module("lazytensor.lowering")
    for threshold in ("M", "N", "K", "PRODUCT", "WORK"):  # every product a contraction
        monkeypatch.setattr(lowering, f"MIN_CONTRACTION_{threshold}", 0)
    build = runtime._contraction_program
    monkeypatch.setattr(runtime, "_contraction_program", lambda c, checked, *rest: build(c, True, *rest))
    shapes, _ = BATCHED[name]
    for n in (7, 9, 33, 64):
        a, b = (small_integers(s, seed=k + n) for k, s in enumerate(shapes(n)))
        (item,) = lt.schedule(cpu(a) @ cpu(b))
        form = symbolized(item.kernel, frozenset({n}))
        over = frozenset(range(len(form.sized_loops())))
        template, _ = runtime._built(runtime._generic_contraction(form, over))
        program = template.sized(form, over)
        assert program.checked and program.generic_over
        out = np.full(form.buffers[0].size, -1, np.float32)
        inputs = {x.size: x for x in (a, b)}
        program([out.ctypes.data, *(inputs[buf.size].ctypes.data for buf in form.buffers[1:])], [])
        np.testing.assert_array_equal(out.reshape(a.shape[0], a.shape[1], b.shape[2]), a @ b)


# ---- the Triton backend's generic kernels (`kernels/triton/runtime.py`: `_generic_program`) ----

TINY = Tiling(max_block=4, max_tile=8, max_xblock=2)  # generic scopes of several blocks, grids of several programs
TRITON_SIZES = [7, 9, 13, 33, 1, 0]  # none a multiple of a block; 1 is a structure of its own, 0 launches nothing


@pytest.fixture(params=[Tiling(), TINY], ids=["default", "tiny"])
def triton(request, fresh, monkeypatch):
    """The Triton backend in Triton's interpreter, compiling with the parameter's tiling, with no program compiled
    before (`forget`)."""
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    try:
        lt.asarray([1.0], device="cuda")
    except lt.DeviceError as e:  # triton was imported for a GPU before: see triton_interpreter.py
        pytest.skip(str(e))
    from lazytensor.kernels.triton import runtime as triton_runtime  # imports triton: not at collection
    for name in ("_programs", "_generic", "_first_sizes", "_previous"):
        monkeypatch.setattr(triton_runtime, name, {})
    compile_kernel = triton_runtime.compile_kernel
    monkeypatch.setattr(triton_runtime, "compile_kernel",
                        lambda kernel, target, tiling=request.param, **kw: compile_kernel(kernel, target, tiling, **kw))
    return triton_runtime


# name -> the input's shape at size n, and the op (on a lazytensor or a torch tensor, and a (32, 16) matrix)
TRITON_OPS = {
    "elementwise": (lambda n: (n,), lambda x, w: (x * 2 + 1).exp()),
    "rows summed, their count changing": (lambda n: (n, 5), lambda x, w: x.sum(-1)),
    "softmax, the row count changing": (lambda n: (n, 6), lambda x, w: x.softmax(-1)),
    "softmax, the row length changing": (lambda n: (3, n), lambda x, w: x.softmax(-1)),
    "matrix product, m changing": (lambda n: (n, 32), lambda x, w: x @ w),
    "rows summed, their length changing": (lambda n: (4, n), lambda x, w: x.sum(-1)),
    "matrix product turned, m changing": (lambda n: (n, 32), lambda x, w: x @ w[:, :5]),
    "matrix product, n changing": (lambda n: (n, 32), lambda x, w: w.T @ x.T),
    "matrix product, m and n changing": (lambda n: (n, 32), lambda x, w: x @ x.T),
    "linear layer, m changing": (lambda n: (n, 32), lambda x, w: (x @ w + w[0]).relu() + x[:, 16:]),
    "matrix product transposed, m changing": (lambda n: (n, 32), lambda x, w: (x @ w).T + 1),
    "linear layer summed, m changing": (lambda n: (n, 32), lambda x, w: (x @ w + w[0]).relu().sum(-1)),
}


def triton_compiles(name: str, device: str, strided: bool = False) -> list[int]:
    """The kernels `TRITON_OPS[name]` compiles on `device` at each of `TRITON_SIZES`, its results torch's (of small
    integers: a product's sums are exact in any order); where `strided`, its input every other element of the
    first axis of a larger array (a stride of twice a size that changes is one too: `symbolic.symbolized`)."""
    shape, op = TRITON_OPS[name]
    w = lt.asarray(small_integers((32, 16), seed=1), device=device)
    compiled = []
    for n in TRITON_SIZES:
        x = small_integers(shape(n), seed=n)
        t = lt.asarray(np.repeat(x, 2, axis=0) if strided else x, device=device)
        before = lt.stats().kernels_compiled
        got = op(t[::2] if strided else t, w)
        conftest.check(got, op(torch.tensor(x), torch.tensor(w.numpy())))
        compiled.append(lt.stats().kernels_compiled - before)
    return compiled


@pytest.mark.parametrize("strided", [False, True], ids=["contiguous", "strided"])
@pytest.mark.parametrize("name", list(TRITON_OPS)[:5])
def test_triton_compiles_once_for_every_size(triton, monkeypatch, name, strided):
    """On the Triton backend as on the CPU: the first size specializes, the second (seen to change) compiles the
    generic kernel, passed its sizes, its grid, masks and loops over blocks following them; later sizes, odd,
    larger, compile nothing, with torch's results (a size of 1 is another structure, a size of 0 launches
    nothing). Where only the row length changes, the rows' count stays a constant. The product of contiguous rows
    is a reduction kernel at 7 rows, the tl.dot template from 9 (a size that changed counts as large: `lowering`),
    generic over its m at once; of strided rows, a reduction kernel. As many kernels compile generic as on the CPU
    (`symbolic.multiples`: a row of 6 read from 2 rows where 1 is taken, an outermost loop of a multiple of a size
    that changed, compiles generic at once)."""
    on_the_cpu = triton_compiles(name, "cpu", strided)
    generic_on_the_cpu = lt.stats().kernels_generic
    forget(monkeypatch)
    compiled = triton_compiles(name, "cuda", strided)
    assert compiled == on_the_cpu == [1, 1, 0, 0, 1, 0], compiled
    assert lt.stats().kernels_generic == generic_on_the_cpu >= 1
    template, *_ = triton._generic.values()  # the second size's
    program = template.program
    sources = [p.source for p in program.candidates.values()] if isinstance(program, triton.ContractionProgram) \
        else [program.source]
    assert all(bool(source.rows) == ("row length" not in name) for source in sources)  # its rows' count passed


def test_triton_row_sums_of_a_changing_length_compile_as_on_the_cpu(triton, monkeypatch):
    """A row's length that is also its stride (`x.sum(-1)` of `(4, n)`, `o0*n + r0`) is read as the reduction's
    loop's size (`symbolic._rows`): from the second length, one kernel generic over it serves every length on both
    backends (a length of 1 is another structure; at 0 the CPU fills the rows' zeros), with torch's results.
    Before, each length compiled its own."""
    name = "rows summed, their length changing"
    on_the_cpu = triton_compiles(name, "cpu")
    assert on_the_cpu == [1, 1, 0, 0, 1, 1], on_the_cpu
    forget(monkeypatch)
    assert triton_compiles(name, "cuda") == on_the_cpu


TRITON_PRODUCTS = [("matrix product, n changing", ("cn",)), ("matrix product, m and n changing", ("cm", "cn"))]


@pytest.mark.parametrize(("name", "over"), TRITON_PRODUCTS)
def test_triton_products_whose_n_changes_compile_generic_over_it(triton, name, over):
    """A single product whose n changes (`w.T @ x.T` of x's n rows, or its m too, `x @ x.T`): on the Triton backend
    as on the CPU, the second n compiles the tl.dot template generic over its n (and m), its tiles, its columns'
    masks and its grid following the sizes it is passed (`gemm.render_gemm`); later sizes, in one tile or over
    several, compile nothing, with torch's results. Before, each n compiled its own."""
    compiled = triton_compiles(name, "cuda")
    assert compiled == [1, 1, 0, 0, 1, 0] and lt.stats().kernels_generic == 1, compiled
    (template,) = triton._generic.values()
    assert isinstance(template.program, triton.ContractionProgram) and template.program.passed == over


@pytest.mark.parametrize(("name", "over"), TRITON_PRODUCTS)
def test_triton_products_of_strided_rows_whose_n_changes_compile_as_on_the_cpu(triton, monkeypatch, name, over):
    """Of every other row of a larger x (whose sizes, not n, are those that changed: a reduction kernel whose
    indexes hold n), as many kernels as on the CPU, with torch's results."""
    on_the_cpu = triton_compiles(name, "cpu", strided=True)
    forget(monkeypatch)
    assert triton_compiles(name, "cuda", strided=True) == on_the_cpu


def k_compiles(device: str) -> list[int]:
    """The kernels `x[:, :k] @ w[:k]` compiles on `device` at k = 40, 50, 60, 33, 100 (over blocks of k, none
    whole), 1 and 0, of fixed x (64, 128) and w (128, 64), its values torch's."""
    x, w = small_integers((64, 128), seed=1), small_integers((128, 64), seed=2)
    compiled = []
    for k in (40, 50, 60, 33, 100, 1, 0):
        before = lt.stats().kernels_compiled
        got = lt.asarray(x, device=device)[:, :k] @ lt.asarray(w, device=device)[:k]
        conftest.check(got, torch.tensor(x)[:, :k] @ torch.tensor(w)[:k])
        compiled.append(lt.stats().kernels_compiled - before)
    return compiled


def test_triton_products_whose_k_changes_compile_generic_over_it(triton, monkeypatch):
    """A single product whose k changes (columns of x and rows of w taken up to k): on the Triton backend as on the
    CPU, the second k compiles the tl.dot template generic over its k (its loop over blocks of k runs to the k it is
    passed, the last block masked); later k compile nothing (a k of 1 is another structure, of 0 a fill), with
    torch's results. Before, each k compiled its own."""
    on_the_cpu = k_compiles("cpu")
    forget(monkeypatch)
    assert k_compiles("cuda") == on_the_cpu == [1, 1, 0, 0, 0, 1, 1]
    (template,) = triton._generic.values()
    assert isinstance(template.program, triton.ContractionProgram) and template.program.passed == ("ck",)


GUARD = 1 << 14  # bytes either side of each buffer of `guarded` memory: more than a tile of C reaches past one


@pytest.fixture
def guarded(triton, monkeypatch):
    """The interpreter's memory for the test (`InterpreterTarget.provider`) with GUARD bytes of 0xA5 either side of
    each buffer; returns an assertion that every guard is as it was: no launch wrote outside its buffers."""
    target = importlib.import_module("lazytensor.device").get_device("cuda").target
    blocks = []

    def provider(nbytes: int) -> torch.Tensor:
        block = torch.full((nbytes + 2 * GUARD,), 0xA5, dtype=torch.uint8)
        blocks.append((block, nbytes))
        return block[GUARD:GUARD + nbytes]

    def untouched() -> None:
        for block, nbytes in blocks:
            assert bool((block[:GUARD] == 0xA5).all() and (block[GUARD + nbytes:] == 0xA5).all()), \
                f"a launch wrote outside a buffer of {nbytes} bytes"

    monkeypatch.setattr(target, "provider", provider)
    return untouched


def turned_k_compiles(device: str) -> list[int]:
    """The kernels `g.T @ x` compiles on `device` over g (k, 20) and x (k, 5) at k = 3, 2, 4, 5 (each of which 20 is a
    multiple of but 3), 7 and 33 (over blocks of k, none whole), its values, each element, torch's."""
    compiled = []
    for k in (3, 2, 4, 5, 7, 33):
        g, x = small_integers((k, 20), seed=k), small_integers((k, 5), seed=k + 1)
        before = lt.stats().kernels_compiled
        got = lt.asarray(g, device=device).T @ lt.asarray(x, device=device)
        np.testing.assert_array_equal(got.numpy(), (torch.tensor(g).T @ torch.tensor(x)).numpy())
        compiled.append(lt.stats().kernels_compiled - before)
    return compiled


def test_triton_a_turned_product_whose_k_changes_writes_only_its_output(triton, guarded, monkeypatch):
    """A product turned to run along its longer side (`g.T @ x`, its n the 20 columns of g, its fused epilogue
    transposing C back) whose k changes from 3 to 2, of which its n is a multiple: the template compiles generic over
    k as on the CPU, its epilogue's loops kept at their sizes (`symbolic.multiples` takes its outermost, of n's size,
    as a multiple of k; nothing passed would size it), every element torch's and no byte either side of a buffer
    written. Before, that loop ranged over unbounded values, the tile's digit of C along it C's whole position: the
    stores ran up to 5 times past the output (the heap corruption of an LSTM's weight gradient under the
    interpreter, test_recurrent)."""
    on_the_cpu = turned_k_compiles("cpu")
    forget(monkeypatch)
    assert turned_k_compiles("cuda") == on_the_cpu == [1, 1, 0, 0, 0, 0]
    guarded()
    (template,) = triton._generic.values()
    assert template.program.passed == ("ck",) and template.program.plan.fuse_epilogue


TRITON_EPILOGUES = [("linear layer, m changing", ("cm",)), ("matrix product turned, m changing", ("cn",)),
                    ("linear layer summed, m changing", ("cm",)), ("matrix product transposed, m changing", None)]


@pytest.mark.parametrize(("name", "over"), TRITON_EPILOGUES)
def test_triton_products_with_an_epilogue_compile_as_on_the_cpu(triton, monkeypatch, name, over):
    """A single product with an epilogue whose rows change: a linear layer (a bias, a relu, a residual), a product
    of 5 columns turned to run along its rows (`lowering`: its n the batch, its epilogue transposing it back), as
    many compiles as on the CPU, with torch's results: from the second size, the template generic over the batch,
    its fused epilogue's loops the tile's rows or columns (`gemm.generic_plan`); a linear layer's rows summed, its
    epilogue a generic kernel apart, over C in scratch of each call's size. A product transposed after
    (`(x @ w).T`: its epilogue's inner loop is the batch) specializes each size, as on the CPU. Before, every size
    compiled its own."""
    on_the_cpu = triton_compiles(name, "cpu")
    forget(monkeypatch)
    assert triton_compiles(name, "cuda") == on_the_cpu
    if over is None:
        assert on_the_cpu == [1, 1, 1, 1, 1, 0], lt.stats()
        return
    (template,) = (t for t in triton._generic.values() if isinstance(t.program, triton.ContractionProgram))
    assert on_the_cpu == [1, 1, 0, 0, 1, 0] and template.program.passed == over
    assert template.program.plan.fuse_epilogue == (template.program.epilogue is None) == ("summed" not in name)


def test_triton_a_generic_compile_that_fails_is_an_error_naming_the_op(triton, monkeypatch):
    """A kernel whose generic program fails to compile (before the schedule runs, side by side, where failures are
    left to the launch) fails the same way where it launches, with the sizes seen to change, a KernelError naming
    the op, rather than compiling there for its one size: a bug in the generic templates must not pass as a
    compile per size."""
    def failing(*args, **kwargs):
        raise RuntimeError("generic template broken")
    monkeypatch.setattr(triton, "_generic_kernel", failing)
    w = lt.asarray(small_integers((32, 16), seed=1), device="cuda")
    (lt.asarray(small_integers((5, 32), seed=2), device="cuda") * 2 + 1).exp().realize()
    with pytest.raises(lt.KernelError, match="generic template broken"):
        (lt.asarray(small_integers((9, 32), seed=3), device="cuda") * 2 + 1).exp().realize()
    assert w.shape == (32, 16)


def test_triton_opt_out_specializes_every_size(triton, monkeypatch):
    """`LT_SYMBOLIC=0` on the Triton backend: every size compiles its own kernel, with torch's results."""
    monkeypatch.setenv("LT_SYMBOLIC", "0")
    assert triton_compiles("softmax, the row count changing", "cuda") == [1, 1, 1, 1, 1, 0]
    assert lt.stats().kernels_generic == 0 and not triton._generic


@pytest.mark.parametrize("dynamic", [True, False])
def test_triton_jit_dynamic_compiles_generic_at_once_or_never(triton, monkeypatch, dynamic):
    """`lt.jit(fn, dynamic=True)` on the Triton backend: fn's kernel compiles generic at its first size, and no
    later size compiles it again, recorded or replayed; `dynamic=False`: every size compiles its own, whatever
    `LT_SYMBOLIC` says."""
    monkeypatch.setenv("LT_SYMBOLIC", "0" if dynamic else "1")
    jitted = lt.jit(lambda x: (x * 3 - 1).max(-1), dynamic=dynamic)
    sizes = (5, 9, 6)
    for n in sizes:
        for seed in (0, 1):  # recorded, then replayed
            x = small_integers((n, 7), seed=seed)
            conftest.check(jitted(lt.asarray(x, device="cuda")), (torch.tensor(x) * 3 - 1).amax(-1))
    stats = lt.stats()
    assert (stats.kernels_compiled, stats.kernels_generic) == ((1, 1) if dynamic else (len(sizes), 0))


def test_triton_launches_of_a_generic_kernel_keep_one_compiled_kernel_for_every_grid(triton, monkeypatch):
    """On a GPU, a generic kernel's launches over sizes that keep changing each run on their own grid: Triton's
    kernel for each of the arguments' specializations is compiled (looked up) once and launched on each grid, no launcher
    kept for each grid seen (before, one for each, without bound). Triton's compiled kernel is a stand-in here
    (the interpreter compiles none), its launches recorded."""
    grids, warmups = [], []

    class Compiled:
        def __getitem__(self, grid):
            return lambda *args, stream: grids.append(grid)

    class Fn:
        def warmup(self, *args, grid, **options):
            warmups.append(grid)
            return Compiled()

    for n in (7, 9):
        lt.asarray(small_integers((n, 5), seed=n), device="cuda").sum(-1).numpy()
    program = list(triton._programs.values())[-1]  # 9's, generic
    assert program.generic_over and program.sizes == (9,)
    program.fn, program.compiled = Fn(), Compiled()
    monkeypatch.setattr(program.target, "activate", lambda: None)
    monkeypatch.setattr(program.target, "kernel_arg", lambda ptr, dtype: ptr)
    buffers = [0] * len(program.slots)
    sizes = range(2, 5000, 3)
    for n in sizes:
        program.passing(program.kernel, program.generic_over, (n,))(buffers, [])
    # Triton's own specializations: a size divisible by 16 or not
    assert len(warmups) == len(program._kernels) == len({program._specialization(buffers, [n]) for n in sizes}) == 2
    assert len(set(grids)) > 1 and grids == [(program.source.programs([n]), 1, 1) for n in sizes]


def test_triton_launches_of_a_generic_kernel_on_two_grids_run_one_compiled_kernel(triton, monkeypatch):
    """The GPU's launch path (`Program.__call__` past its interpreter branch: `_specialization`, `_kernel`, the
    launcher on the launch's grid) run by the interpreter: a generic row sum compiled at 9 rows, then run at 13 and
    at more rows than a program takes, two grids of one specialization of the arguments. Triton's compiled kernel
    is the one stand-in (the interpreter compiles none): its launcher on a grid runs the interpreted kernel on it.
    One kernel is compiled (looked up) and kept, each launch is on its own grid, and the values are torch's. (Before, the path was run
    with Triton's interpreted kernel a stand-in too, and no values:
    `test_triton_launches_of_a_generic_kernel_keep_one_compiled_kernel_for_every_grid`.)"""
    for n in (7, 9):
        lt.asarray(small_integers((n, 5), seed=n), device="cuda").sum(-1).numpy()
    (template,) = triton._generic.values()
    program, interpreted = template.program, template.program.fn
    warmups, grids = [], []

    class Compiled:
        def __init__(self, options):
            self.options = options

        def __getitem__(self, grid):
            def launch(*args, stream):
                grids.append(grid)
                interpreted[grid[:1]](*args, **self.options)

            return launch

    class Fn:
        def warmup(self, *args, grid, **options):
            warmups.append(grid)
            return Compiled(options)

    # the programs of later sizes are copies of the template's (`Program.passing`), sharing its kernels
    monkeypatch.setattr(program, "fn", Fn())
    monkeypatch.setattr(program, "compiled", Compiled(program.options))
    rows = (13, program.source.xblock + 9)  # and more rows than one program takes
    for n in rows:
        x = small_integers((n, 5), seed=n)
        conftest.check(lt.asarray(x, device="cuda").sum(-1), torch.tensor(x).sum(-1))
    sizes = [(program.source.programs([n]), 1, 1) for n in rows]
    assert len(warmups) == len(program._kernels) == 1 and grids == sizes and sizes[0] != sizes[1]


# Epilogues of a batched product p = a @ b (BATCHED's): a transpose, as attention's gradient's (`p.T` over each head),
# a multiply and add over p's own layout (its loops merged into one over the batch's products), and a sum over p's
# rows (a reduction's loop of the size n, and its count, passed to the epilogue).
EPILOGUES = {"p.T * r + 1": (lambda p, r: p.transpose(-1, -2) * r + 1, lambda p, r: np.swapaxes(p, -1, -2) * r + 1,
                             lambda a, b: (a.shape[0], b.shape[2], a.shape[1])),
             "p * r + 1": (lambda p, r: p * r + 1, lambda p, r: p * r + 1,
                           lambda a, b: (a.shape[0], a.shape[1], b.shape[2])),
             "(p * r).sum(-1)": (lambda p, r: (p * r).sum(-1), lambda p, r: (p * r).sum(-1),
                                 lambda a, b: (a.shape[0], a.shape[1], b.shape[2]))}


def epilogue_data(name: str, epilogue: str, dtype: lt.DType, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The operands a and b of BATCHED[name]'s product at size n, and the r of EPILOGUES[epilogue]."""
    shapes, _ = BATCHED[name]
    a, b = (small_integers(s, dtype, seed=k + n) for k, s in enumerate(shapes(n)))
    return a, b, small_integers(EPILOGUES[epilogue][2](a, b), dtype, seed=n + 7)


def epilogue_program(name: str, epilogue: str, dtype: lt.DType):
    """`(n) -> (tensor, expected)`: BATCHED[name]'s product at size n through the epilogue EPILOGUES[epilogue]."""
    program, expected, _ = EPILOGUES[epilogue]

    def made(n: int) -> tuple[lt.Tensor, np.ndarray]:
        a, b, r = epilogue_data(name, epilogue, dtype, n)
        return program(cpu(a) @ cpu(b), cpu(r)), expected(a.astype(np.float64) @ b, r)

    return made


@pytest.mark.parametrize("dtype", [lt.float32, lt.float64])
@pytest.mark.parametrize("epilogue", EPILOGUES)
@pytest.mark.parametrize("name", BATCHED)
def test_batched_products_with_an_epilogue_compile_generic_over_a_changed_size(fresh, monkeypatch, dtype, epilogue,
                                                                                name):
    """A batched product with an epilogue whose M, N or K changed between two calls: its operands' strides and the
    epilogue's (the product's it reads, the output's) that are that size read at runtime (`symbolic.symbolized`),
    the epilogue's sizes passed after the geometry; compiled generic at once, its epilogue's outermost loop (the
    batch's products, a multiple of the size) too, and no later size compiles anything, with each size's own values
    (`LT_SYMBOLIC=0`), bit for bit. Before, every size compiled its own."""
    made = epilogue_program(name, epilogue, dtype)
    compiled, results, sizes = [], [], [5, 9, 33, 64, 7, 57, 41]
    for n in sizes:
        before = lt.stats().kernels_compiled
        got, expected = made(n)
        results.append(close(got, expected))
        compiled.append(lt.stats().kernels_compiled - before)
    assert compiled == [1, 1, 0, 0, 0, 0, 0] and lt.stats().kernels_generic == 1
    (item,) = lt.schedule(made(sizes[-1])[0])
    program_of_last, _ = runtime.compile_kernel(item.kernel)
    assert isinstance(program_of_last, runtime.ContractionProgram) and item.kernel.epilogue is not None
    assert program_of_last.generic_over == BATCHED[name][1]
    as_specialized(monkeypatch, lambda n: made(n)[0], sizes, results)


def attention_gradients(q: np.ndarray, k: np.ndarray, v: np.ndarray, device: str | None = "cpu") -> list[np.ndarray]:
    """The gradients of `(o * o).sum()` for attention's output `o` with respect to q, k and v, realized at once."""
    leaves = [lt.asarray(x, device=device).requires_grad_() for x in (q, k, v)]
    o = attention(*leaves)
    (o * o).sum().backward()
    lt.realize(*(x.grad for x in leaves))
    return [x.grad.numpy() for x in leaves]


def attention_gradients_expected(q: np.ndarray, k: np.ndarray, v: np.ndarray) -> list[np.ndarray]:
    import torch

    leaves = [torch.from_numpy(x.astype(np.float64)).requires_grad_() for x in (q, k, v)]
    o = attention(*leaves)
    (o * o).sum().backward()
    return [x.grad.numpy() for x in leaves]


def test_attention_gradients_compile_once_over_the_sequence(fresh):
    """Attention's forward and backward over (2, 3, L, 16) at lengths that change: from the first length whose
    products run the template (9: 7's are loops, small), every kernel compiles generic over L at once, among them
    the product with an epilogue that transposes (the gradient's `p.T @ g`), the softmax's max and sum over the
    2*3*L rows of L (`o0*L + r0`) and the kernels over those rows; no later length compiles anything (before: 3, 2,
    2 more at 13, 33, 20), with torch's gradients. Lengths of 1
    (its loops of one vanish) and 0 (nothing to compute) are other structures, with the right values (16, the head's
    width: `test_attention_gradients_at_lengths_that_equal_or_divide_the_heads_width_compile_nothing`)."""
    compiled, lengths = [], [7, 9, 13, 33, 20, 11]
    data = {n: [random_array((2, 3, n, 16), lt.float32, seed=n + s) for s in range(3)] for n in [*lengths, 16, 1, 0]}
    for n in lengths:
        before = lt.stats().kernels_compiled
        grads = attention_gradients(*data[n])
        compiled.append(lt.stats().kernels_compiled - before)
        for got, expected in zip(grads, attention_gradients_expected(*data[n])):
            np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)
    assert compiled == [7, 8, 0, 0, 0, 0], compiled
    for n in (16, 1, 0):
        for got, expected in zip(attention_gradients(*data[n]), attention_gradients_expected(*data[n])):
            np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("length", [1, 7, 9, 12])
def test_attention_gradients_on_the_default_device_at_each_length(length):
    """Whatever the backend (`LT_DEVICE`): attention's gradients at lengths that change, torch's (at 16, the head's
    width, after 12)."""
    for n in (length, length + 4):
        data = [random_array((2, 3, n, 16), lt.float32, seed=n + s) for s in range(3)]
        for got, expected in zip(attention_gradients(*data, device=None), attention_gradients_expected(*data)):
            np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("epilogue", ["p.T * r + 1", "p * r + 1"])  # every product a contraction: so is a sum's
@pytest.mark.parametrize("name", BATCHED)
def test_generic_batched_epilogues_stay_inside_each_sizes_buffers(monkeypatch, name, epilogue):
    """The generic template of a batched product with an epilogue compiled checked (`kernels/bounds.py`: its
    packing, its core, its epilogue, each recording a fault in the slots after the geometry and the epilogue's
    sizes) against one size's buffers and run at that size: no access outside them, and that size's values; run as
    the program of a larger size over them, a read past them caught."""
    from lazytensor.kernels.symbolic import symbolized

    lowering = importlib.import_module("lazytensor.lowering")
    for threshold in ("M", "N", "K", "PRODUCT", "WORK"):  # every product a contraction
        monkeypatch.setattr(lowering, f"MIN_CONTRACTION_{threshold}", 0)
    build = runtime._contraction_program
    monkeypatch.setattr(runtime, "_contraction_program", lambda c, checked, *rest: build(c, True, *rest))
    made = epilogue_program(name, epilogue, lt.float32)

    def scheduled(n: int) -> tuple[Contraction, list[float]]:
        (item,) = lt.schedule(made(n)[0])
        return symbolized(item.kernel, frozenset({n})), item.params

    for n in (7, 9, 33):
        _, expected = made(n)
        form, params = scheduled(n)
        over = frozenset(range(len(form.sized_loops())))
        template, _ = runtime._built(runtime._generic_contraction(form, over))
        program = template.sized(form, over)
        assert program.checked and program.generic_over and form.epilogue is not None
        out = np.full(form.buffers[0].size, -1, np.float32)
        inputs = {x.size: x for x in epilogue_data(name, epilogue, lt.float32, n)}
        table = [out.ctypes.data, *(inputs[buf.size].ctypes.data for buf in form.buffers[1:] if not buf.scratch)]
        program(table, params)
        np.testing.assert_array_equal(out.reshape(expected.shape), expected)
        wider, _ = scheduled(n + 1)
        with pytest.raises(bounds.OutOfBounds):
            template.sized(wider, over)(table, params)


# A length that equals or divides a constant of the kernel (the head's width 16 at L = 16, or 8, 4, 2: its stride
# 16 is 2*8 there)
def transposed(x):
    return x.transpose(-1, -2) + 1


def transposed_kernel(n: int) -> Kernel:
    return kernel_of(transposed(cpu(random_array((3, n, 16), lt.float32, seed=n))))


@pytest.mark.parametrize("n", [16, 8, 4, 2])
def test_a_stride_that_a_changed_size_equals_or_divides_by_chance_stays_a_constant(n):
    """`symbolized` guided by the last kernel of the structure (`previous`): `x.transpose(-1, -2) + 1` of (3, n, 16)
    reads x's rows at a stride of 16, which is n at n = 16 and 2*8 at 8 (4*4 at 4); the stride that is the same
    at 13 stays 16, the loop over x's 16 columns keeps its size (`Kernel.symbols`: at 16 it is not the loop of n),
    and the form at n has the erased text of the form at 13. Without the guide, 16 is written as a product of n,
    and the texts differ (a compile for each such n)."""
    at_13 = symbolized(transposed_kernel(13), frozenset({13}), transposed_kernel(9))
    guided = symbolized(transposed_kernel(n), frozenset({n}), transposed_kernel(13))
    assert guided.erased_text() == at_13.erased_text() and guided.symbols == at_13.symbols == {"o2"}
    assert symbolized(transposed_kernel(n), frozenset({n})).erased_text() != at_13.erased_text()


def divisor_compiles(device: str) -> list[int]:
    """The kernels `transposed` compiles on `device` at lengths 7, 9, 13, then 16, 8, 4 and 2 (which equal or
    divide 16, x's row stride), 32, 1 (its loop of one vanishes: another structure) and 0 (nothing to compute),
    its values torch's."""
    compiled = []
    for n in (7, 9, 13, 16, 8, 4, 2, 32, 1, 0):
        x = small_integers((3, n, 16), seed=n)
        before = lt.stats().kernels_compiled
        conftest.check(transposed(lt.asarray(x, device=device)), transposed(torch.tensor(x)))
        compiled.append(lt.stats().kernels_compiled - before)
    return compiled


def test_lengths_that_equal_or_divide_a_stride_compile_nothing(fresh):
    """From the second length on, one generic kernel serves lengths that equal or divide x's row stride (16) too;
    before, 16, 8, 4 and 2 compiled one each."""
    assert divisor_compiles("cpu") == [1, 1, 0, 0, 0, 0, 0, 0, 1, 0]


def test_triton_lengths_that_equal_or_divide_a_stride_compile_nothing(triton):
    """As on the CPU (`test_lengths_that_equal_or_divide_a_stride_compile_nothing`), on the Triton backend."""
    assert divisor_compiles("cuda") == [1, 1, 0, 0, 0, 0, 0, 0, 1, 0]


def test_attention_gradients_at_lengths_that_equal_or_divide_the_heads_width_compile_nothing(fresh):
    """Attention's forward and backward over (2, 3, L, 16) at L = 16, the head's width, at 8, 4 and 2, which divide
    it (its stride 16 is 2*8 at 8), and at 32, after 7, 9 and 13: nothing compiles, with torch's gradients. Before,
    16 compiled 7 kernels (its products, m, n and k all 16, taken for loops: `lowering.contraction_axes`'s
    `varying`), 8, 4 and 2 6 each."""
    compiled = []
    for n in (7, 9, 13, 16, 8, 4, 2, 32):
        data = [random_array((2, 3, n, 16), lt.float32, seed=n + s) for s in range(3)]
        before = lt.stats().kernels_compiled
        grads = attention_gradients(*data)
        compiled.append(lt.stats().kernels_compiled - before)
        for got, expected in zip(grads, attention_gradients_expected(*data)):
            np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)
    assert compiled == [7, 8, 0, 0, 0, 0, 0, 0], compiled


def test_a_linear_layer_over_a_batch_equal_to_its_widths_compiles_nothing(fresh):
    """An MLP block over a batch that changes to 32 and 64, its input's and hidden widths (`x @ w1`, relu, `@ w2`,
    a residual, a row sum): from the second batch on, nothing compiles, with torch's values."""
    w1, w2 = small_integers((32, 64), seed=1), small_integers((64, 32), seed=2)

    def block(x, w1, w2):
        return (x @ w1).relu() @ w2 + x + x.sum(-1, keepdims=True)

    compiled = []
    for n in (5, 7, 9, 32, 64, 16, 11):
        x = small_integers((n, 32), seed=n)
        before = lt.stats().kernels_compiled
        conftest.check(block(cpu(x), cpu(w1), cpu(w2)), block(*map(torch.tensor, (x, w1, w2))))
        compiled.append(lt.stats().kernels_compiled - before)
    assert compiled[2:] == [0, 0, 0, 0, 0], compiled


def row_compiles(device: str) -> list[int]:
    """The kernels `(x * w[:t, 0]).sum(-1)` compiles on `device` over x of (3, t) at t = 7, 9, 13, then 16, 8, 4
    and 2 (which divide the stride 16 of its reads of w (64, 16) along the row), 33, 1 (its loop of one vanishes)
    and 0 (a fill of zeros), its values torch's."""
    w = small_integers((64, 16), seed=1)
    compiled = []
    for t in (7, 9, 13, 16, 8, 4, 2, 33, 1, 0):
        x = small_integers((3, t), seed=t)
        before = lt.stats().kernels_compiled
        got = (lt.asarray(x, device=device) * lt.asarray(w, device=device)[:t, 0]).sum(-1)
        conftest.check(got, (torch.tensor(x) * torch.tensor(w)[:t, 0]).sum(-1))
        compiled.append(lt.stats().kernels_compiled - before)
    return compiled


def test_a_row_whose_length_divides_a_stride_along_it_compiles_nothing(fresh):
    """A reduction over rows of t (`o0*t + r0`) that reads another array along the row at a stride of 16
    (`w[r0*16]`): at t = 16, 8, 4, 2 that stride is a multiple of t, which `symbolic._rows` took for a batch's loop,
    so t stayed a constant and each such length compiled its own kernel. The last kernel of the structure tells
    that r0's size is the one that changed (`symbolized`'s guide): from the second length on nothing compiles
    (before: 1 at each of 16, 8, 4 and 2)."""
    assert row_compiles("cpu") == [1, 1, 0, 0, 0, 0, 0, 0, 1, 1]


def test_triton_a_row_whose_length_divides_a_stride_along_it_compiles_nothing(triton):
    """As on the CPU (`test_a_row_whose_length_divides_a_stride_along_it_compiles_nothing`), on the Triton backend."""
    assert row_compiles("cuda") == [1, 1, 0, 0, 0, 0, 0, 0, 1, 1]


def batched_compiles(name: str, device: str, epilogue: str | None = None) -> list[int]:
    """The kernels BATCHED[name]'s product (through EPILOGUES[epilogue] where given) compiles on `device` at sizes
    5, 9, 33, 7 (inside one tile or over several, not whole ones) and 1 (its loops of one vanish: another
    structure), its values torch's."""
    compiled = []
    for n in (5, 9, 33, 7, 1):
        a, b, r = epilogue_data(name, epilogue or "p * r + 1", lt.float32, n)
        op = EPILOGUES[epilogue][0] if epilogue else lambda p, r: p
        before = lt.stats().kernels_compiled
        got = op(lt.asarray(a, device=device) @ lt.asarray(b, device=device), lt.asarray(r, device=device))
        conftest.check(got, op(torch.tensor(a) @ torch.tensor(b), torch.tensor(r)))
        compiled.append(lt.stats().kernels_compiled - before)
    return compiled


@pytest.mark.parametrize("name", BATCHED)
def test_triton_batched_products_compile_generic_over_a_changed_size(triton, monkeypatch, name):
    """A batch's product whose M, N or K changed between two calls, its operands' strides that are that size read at
    runtime (`symbolic.symbolized`): on the Triton backend as on the CPU, the tl.dot template compiles generic over
    it at once (the first size a loop nest, the product small), C's strides and the grid following the sizes it is
    passed; later sizes compile nothing, with torch's results. Before, every size compiled its own."""
    on_the_cpu = batched_compiles(name, "cpu")
    forget(monkeypatch)
    assert batched_compiles(name, "cuda") == on_the_cpu == [1, 1, 0, 0, 1]
    (template,) = (t for t in triton._generic.values() if isinstance(t.program, triton.ContractionProgram))
    assert template.program.passed == (BATCHED[name][1],)


@pytest.mark.parametrize(("name", "epilogue"), [("M", "p * r + 1"), ("N", "p.T * r + 1"), ("K", "p * r + 1"),
                                               ("M", "(p * r).sum(-1)")])
def test_triton_batched_products_with_an_epilogue_compile_generic_over_a_changed_size(triton, monkeypatch, name,
                                                                                      epilogue):
    """A batch's product with an epilogue (`EPILOGUES`) whose M, N or K changed: on the Triton backend as on the CPU,
    compiled generic at once, no later size compiling anything, with torch's results. An epilogue fused into the
    tl.dot kernel binds its loops to the digits of C's position along the axes they run along (`gemm.generic_plan`:
    `p * r + 1`'s one loop over the batch's products), whatever C's shape; one that runs apart (a sum of the
    product's rows; `p.T`, which reads C at strides of N) is a generic kernel over C in scratch of each call's size.
    Before, every size compiled its own."""
    on_the_cpu = batched_compiles(name, "cpu", epilogue)
    forget(monkeypatch)
    assert batched_compiles(name, "cuda", epilogue) == on_the_cpu == [1, 1, 0, 0, 1]
    (template,) = (t for t in triton._generic.values() if isinstance(t.program, triton.ContractionProgram))
    assert template.program.passed == (BATCHED[name][1],)
    assert template.program.plan.fuse_epilogue == (epilogue == "p * r + 1")  # the others read C at strides of N


@pytest.mark.parametrize("triton", [Tiling()], indirect=True, ids=["default"])  # the tiny tiling's: minutes
def test_triton_attention_gradients_compile_once_over_the_sequence(triton):
    """Attention's forward and backward over (2, 3, L, 16) on the Triton backend as on the CPU
    (`test_attention_gradients_compile_once_over_the_sequence`): from the first length whose products run the
    template (9), every kernel compiles generic over L at once, among them the batch's products with an epilogue
    (`p.T @ g`'s transpose); later lengths, 16 (the head's width) and 4 (which divides it), compile nothing, with
    torch's gradients. Before, 6 to 8 kernels at each length."""
    compiled = []
    for n in (7, 9, 16, 4):
        data = [random_array((2, 3, n, 16), lt.float32, seed=n + s) for s in range(3)]
        before = lt.stats().kernels_compiled
        grads = attention_gradients(*data, device="cuda")
        compiled.append(lt.stats().kernels_compiled - before)
        for got, expected in zip(grads, attention_gradients_expected(*data)):
            np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)
    assert compiled == [7, 8, 0, 0]
