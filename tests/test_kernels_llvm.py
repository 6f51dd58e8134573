"""The kernel IR and the LLVM backend on their own, without the Tensor frontend."""
from __future__ import annotations

import ctypes
import re
import threading

import numpy as np
import pytest

from conftest import padded_load_kernel
from lazytensor.kernels import bounds, ir
from lazytensor.kernels.dtype import DType, bool_, float32, float64, int64
from lazytensor.kernels.expr import Bound, Expr, Var
from lazytensor.kernels.llvm import compile_kernel, mathlib, render, runtime
from lazytensor.kernels.llvm.render import FIRST_HIT_BLOCK, KernelRenderer, column_reductions


def softmax_kernel(rows: int, cols: int) -> ir.Kernel:
    o0, o1, r0, r1 = Var("o0", rows), Var("o1", cols), Var("r0", cols), Var("r1", cols)
    at = lambda col: Expr.of(o0) * cols + col
    x = ir.load(1, float32, at(Expr.of(o1)), ())
    m = ir.reduce(ir.ReduceOp.MAX, ir.load(1, float32, at(Expr.of(r0)), ()), (r0,))
    e = lambda v: ir.alu(ir.Alu.EXP, float32, ir.alu(ir.Alu.SUB, float32, v, m))
    s = ir.reduce(ir.ReduceOp.SUM, e(ir.load(1, float32, at(Expr.of(r1)), ())), (r1,))
    out = ir.alu(ir.Alu.DIV, float32, e(x), s)
    bufs = (ir.BufferParam(float32, rows * cols, True), ir.BufferParam(float32, rows * cols))
    return ir.Kernel("softmax_test", bufs, (), (o0, o1), (ir.Store(0, at(Expr.of(o1)), out),))


def test_reductions_are_hoisted_out_of_loops_they_do_not_read():
    k = softmax_kernel(3, 5)
    values, scopes = ir.loop_scopes(k)
    reductions = [v for v in values if v.op is ir.VOp.REDUCE]
    assert [tuple(v.name for v in scopes[id(r)]) for r in reductions] == [("o0",), ("o0",)]
    assert ir.recomputed_reductions(k) == []


def test_a_reduction_under_a_loop_it_ignores_is_reported():
    o0, o1, r0 = Var("o0", 4), Var("o1", 6), Var("r0", 4)
    col_sum = ir.reduce(ir.ReduceOp.SUM, ir.load(1, float32, Expr.of(r0) * 6 + Expr.of(o1), ()), (r0,))
    bufs = (ir.BufferParam(float32, 24, True), ir.BufferParam(float32, 24))
    k = ir.Kernel("k", bufs, (), (o0, o1), (ir.Store(0, Expr.of(o0) * 6 + Expr.of(o1), col_sum),))
    assert ir.recomputed_reductions(k) == [col_sum]


def test_kernel_text_is_readable_and_compiles_once():
    k = softmax_kernel(3, 5)
    text = str(k)
    assert text.splitlines()[:2] == ["kernel softmax_test(b0: f32[15] out, b1: f32[15])", "  for o0 < 3, o1 < 5"]
    assert "    v2: f32 = max v1 over r0 < 5" in text and "    b0[(o0*5 + o1)] = v9" in text
    assert "define void @\"softmax_test\"" in render(k)
    program, _ = compile_kernel(k)
    again, fresh_again = compile_kernel(softmax_kernel(3, 5))
    assert again is program and not fresh_again
    x = np.random.default_rng(0).normal(size=(3, 5)).astype(np.float32)
    out = np.empty_like(x)
    program([out.ctypes.data, x.ctypes.data], [])
    e = np.exp(x - x.max(1, keepdims=True))
    np.testing.assert_allclose(out, e / e.sum(1, keepdims=True), rtol=1e-6)
    assert "softmax_test" in program.assembly


def test_softmax_hands_its_exp_from_the_sum_to_the_output_loop(monkeypatch):
    k = softmax_kernel(6, 300)
    exps = [v for v in k.values() if v.op is ir.VOp.ALU and v.arg is ir.Alu.EXP]
    (shared,) = ir.shared_rows(k, lambda v: v.op is ir.VOp.ALU and v.arg is ir.Alu.EXP)
    o0, r1 = k.loops[0], shared.reduction.arg[1][0]
    assert shared.reduction.arg[0] is ir.ReduceOp.SUM and shared.store is k.stores[0]
    assert [shared.value, shared.twin] == exps and shared.index == Expr.of(o0) * 300 + Expr.of(r1)
    assert ir.shared_rows(k, lambda v: 0) == []  # nothing costly to share: nothing handed over
    emitted = []
    emit = mathlib.emit
    monkeypatch.setattr(mathlib, "emit", lambda op, *args: emitted.append(op) or emit(op, *args))
    render(k)
    assert emitted == [ir.Alu.EXP]
    monkeypatch.undo()
    program, _ = compile_kernel(k)
    x = np.random.default_rng(2).normal(size=(6, 300)).astype(np.float32)
    out = np.empty_like(x)
    program([out.ctypes.data, x.ctypes.data], [])
    e = np.exp(x - x.max(1, keepdims=True))
    np.testing.assert_allclose(out, e / e.sum(1, keepdims=True), rtol=1e-6)


def row_extremum_kernel(op: ir.ReduceOp, rows: int, cols: int) -> ir.Kernel:
    o0, r0 = Var("o0", rows), Var("r0", cols)
    red = ir.reduce(op, ir.load(1, float32, Expr.of(o0) * cols + Expr.of(r0), ()), (r0,))
    bufs = (ir.BufferParam(float32, rows, True), ir.BufferParam(float32, rows * cols))
    return ir.Kernel("", bufs, (), (o0,), (ir.Store(0, Expr.of(o0), red),))


@pytest.mark.parametrize("cols", [203, 1100])
def test_row_max_and_min_are_plain_vector_compares_and_keep_nan_and_the_order_of_zeros(cols):
    # llvm.maximum's answers: NaN wins, -0.0 < +0.0, wherever the vector loop's lanes put them
    for op, lose, win, far, fast in ((ir.ReduceOp.MAX, -0.0, 0.0, -1.0, "maxnum"),
                                     (ir.ReduceOp.MIN, 0.0, -0.0, 1.0, "minnum")):
        program, _ = compile_kernel(row_extremum_kernel(op, cols + 4, cols))
        assert re.search(rf"nnan nsz <\d+ x float> @llvm\.{fast}", program.optimized_ir)
        x = np.full((cols + 4, cols), lose, np.float32)
        x[np.arange(cols), np.arange(cols)] = win  # one winning zero, at every position
        x[cols, ::2] = far  # no winning zero: the losing one
        x[cols + 1, 0], x[cols + 1, 1:] = np.nan, far
        x[cols + 2, 0], x[cols + 2, -1] = -far * np.inf, np.nan
        x[cols + 3, 100] = np.nan
        out = np.empty(cols + 4, np.float32)
        program([out.ctypes.data, x.ctypes.data], [])
        assert np.all(out[:cols + 1] == 0)
        assert list(np.signbit(out[:cols + 1])) == [np.signbit(win)] * cols + [np.signbit(lose)]
        assert np.isnan(out[cols + 1:]).all()


def test_masked_loads_never_read_out_of_bounds():
    program, _ = compile_kernel(padded_load_kernel())
    src = np.array([7, 8, 9], np.int32)
    out = np.empty(6, np.int32)
    program([out.ctypes.data, src.ctypes.data], [100])
    np.testing.assert_array_equal(out, [100, 100, 107, 108, 109, 100])


def gather_kernel(n: int, size: int) -> ir.Kernel:
    """`out[o] = x[ids[o]]`: a gather by the indexes in b1 from the `size` elements of b2."""
    o = Var("o", n)
    at = ir.load(1, int64, Expr.of(o), ())
    value = ir.gather(2, float32, at, ir.alu(ir.Alu.CMPLT, bool_, at, ir.const(size, int64)))
    bufs = (ir.BufferParam(float32, n, True), ir.BufferParam(int64, n), ir.BufferParam(float32, size))
    return ir.Kernel("", bufs, (), (o,), (ir.Store(0, Expr.of(o), value),))


def test_a_gather_knows_its_output_overlaps_no_input():
    """The output's store is in an alias scope that the loads of the other buffers say they are outside of (each
    runtime allocates outputs afresh), so LLVM may gather several lanes at once; results as NumPy's."""
    kernel = gather_kernel(37, 50)
    text = render(kernel)
    stores = [line for line in text.splitlines() if line.lstrip().startswith("store float")]
    loads = [line for line in text.splitlines() if re.search(r"= load (float|i64), ptr", line)]
    assert stores and all("!alias.scope" in line for line in stores)
    assert len(loads) == 2 and all("!noalias" in line for line in loads)
    program, _ = compile_kernel(kernel)
    ids, x = np.random.default_rng(5).integers(0, 60, 37), np.arange(50, dtype=np.float32) + 0.5
    out = np.empty(37, np.float32)
    program([out.ctypes.data, ids.ctypes.data, x.ctypes.data], [])
    np.testing.assert_array_equal(out, np.where(ids < 50, x[np.minimum(ids, 49)], 0))


def column_sum_kernel(rows: int, cols: int, dtype) -> ir.Kernel:
    """`out[o] = sum over r of x[r, o]`: a reduction down the columns of a row-major matrix."""
    o, r = Var("o", cols), Var("r", rows)
    total = ir.reduce(ir.ReduceOp.SUM, ir.load(1, dtype, Expr.of(r) * cols + Expr.of(o), ()), (r,))
    bufs = (ir.BufferParam(dtype, cols, True), ir.BufferParam(dtype, rows * cols))
    return ir.Kernel("", bufs, (), (o,), (ir.Store(0, Expr.of(o), total),))


def test_column_reductions_stream_rows_with_vector_accumulators():
    rows, cols = 300, 1100  # the reduction too long to unroll; several blocks of accumulators, the last partial
    for dtype, np_dtype, op in ((float32, np.float32, "fadd"), (int64, np.int64, "add")):
        program, _ = compile_kernel(column_sum_kernel(rows, cols, dtype))
        x = np.random.default_rng(1).integers(-1000, 1000, (rows, cols)).astype(np_dtype)
        out = np.empty(cols, np_dtype)
        program([out.ctypes.data, x.ctypes.data], [])
        np.testing.assert_array_equal(out, x.sum(0))
        text = program.optimized_ir
        # walking down the columns would gather one element per row; streaming rows loads whole vectors
        assert "gather" not in text and re.search(rf"= {op} (reassoc )?<\d+ x ", text), text


def test_nested_column_reductions_stream_rows():
    """A column variance: the mean, then the sum of squares about it, each over the rows into a block of
    vector accumulators; the mean staged once per column, not recomputed for each term."""
    rows, cols = 300, 1100
    o, r0, r1 = Var("o", cols), Var("r0", rows), Var("r1", rows)
    x = [ir.load(1, float32, Expr.of(r) * cols + Expr.of(o), ()) for r in (r0, r1)]
    n = ir.const(float(rows), float32)
    mean = ir.alu(ir.Alu.DIV, float32, ir.reduce(ir.ReduceOp.SUM, x[1], (r1,)), n)
    d = ir.alu(ir.Alu.SUB, float32, x[0], mean)
    var = ir.alu(ir.Alu.DIV, float32, ir.reduce(ir.ReduceOp.SUM, ir.alu(ir.Alu.MUL, float32, d, d), (r0,)), n)
    bufs = (ir.BufferParam(float32, cols, True), ir.BufferParam(float32, rows * cols))
    kernel = ir.Kernel("", bufs, (), (o,), (ir.Store(0, Expr.of(o), var),))
    assert column_reductions(kernel) is not None
    program, _ = compile_kernel(kernel)
    arr = np.random.default_rng(2).integers(-64, 64, (rows, cols)).astype(np.float32) / 8
    out = np.empty(cols, np.float32)
    program([out.ctypes.data, arr.ctypes.data], [])
    np.testing.assert_allclose(out, arr.var(0), rtol=1e-5)
    text = program.optimized_ir
    assert "gather" not in text and len(re.findall(r"= fadd reassoc <\d+ x float>", text)) >= 2, text


def transpose_kernel(rows: int, cols: int, dtype) -> ir.Kernel:
    """`out[i, j] = x[j, i] + y[i, j]`: a store along j, a load along i and one along j."""
    i, j = Var("i", rows), Var("j", cols)
    x = ir.load(1, dtype, Expr.of(j) * rows + Expr.of(i), ())
    y = ir.load(2, dtype, Expr.of(i) * cols + Expr.of(j), ())
    bufs = (ir.BufferParam(dtype, rows * cols, True), ir.BufferParam(dtype, rows * cols),
            ir.BufferParam(dtype, rows * cols))
    return ir.Kernel("", bufs, (), (i, j), (ir.Store(0, Expr.of(i) * cols + Expr.of(j), ir.alu(ir.Alu.ADD, dtype, x, y)),))


@pytest.mark.parametrize("checked", [False, True])
def test_transposing_kernels_walk_tiles_over_any_range_of_rows(monkeypatch, checked):
    """A kernel loading across the rows it stores runs in tiles (`KernelRenderer.tile_side`), whole and partial,
    over any range of its outer loop a thread gets, with no vector gathers."""
    monkeypatch.setattr(bounds, "CHECK", checked)
    rows, cols = 37, 50
    for dtype, np_dtype in ((float32, np.float32), (int64, np.int64)):
        program, _ = compile_kernel(transpose_kernel(rows, cols, dtype))
        # tiles whose rows compute (an add) hold rows of 16 elements at least, which vectorize
        assert KernelRenderer(transpose_kernel(rows, cols, dtype)).tile_side() == max(64 // dtype.itemsize, 16)
        x = np.random.default_rng(0).integers(-100, 100, (cols, rows)).astype(np_dtype)
        y = np.random.default_rng(1).integers(-100, 100, (rows, cols)).astype(np_dtype)
        out = np.zeros((rows, cols), np_dtype)
        ptrs = (ctypes.c_void_p * 3)(out.ctypes.data, x.ctypes.data, y.ctypes.data)
        slots = (ctypes.c_int64 * 4)()
        for lo, hi in ((0, 5), (5, 22), (22, 37)):  # splits inside tiles
            program.fn(ptrs, slots, lo, hi)
        np.testing.assert_array_equal(out, x.T + y)
        assert "gather" not in program.optimized_ir


def test_a_load_the_rows_broadcast_is_no_transpose():
    """`out[i, j] = x[i, j] - m[i]` (`x - m[:, None]`, an embedding's index) reads m along i only: its element
    stays put along the row, so the rows run whole, not in tiles (which ran it 2-3x as long)."""
    rows, cols = 40, 50
    i, j = Var("i", rows), Var("j", cols)
    x, m = ir.load(1, float32, Expr.of(i) * cols + Expr.of(j), ()), ir.load(2, float32, Expr.of(i), ())
    bufs = (ir.BufferParam(float32, rows * cols, True), ir.BufferParam(float32, rows * cols), ir.BufferParam(float32, rows))
    kernel = ir.Kernel("", bufs, (), (i, j), (ir.Store(0, Expr.of(i) * cols + Expr.of(j), ir.alu(ir.Alu.SUB, float32, x, m)),))
    assert KernelRenderer(kernel).tile_side() == 0
    program, _ = compile_kernel(kernel)
    a = np.random.default_rng(3).standard_normal((rows, cols)).astype(np.float32)
    b = np.random.default_rng(4).standard_normal(rows).astype(np.float32)
    out = np.zeros((rows, cols), np.float32)
    program([out.ctypes.data, a.ctypes.data, b.ctypes.data], [])
    np.testing.assert_array_equal(out, a - b[:, None])


@pytest.mark.parametrize("op", [ir.Alu.EXP, ir.Alu.SIN], ids=str)
@pytest.mark.parametrize("dtype", [float32, float64], ids=str)
def test_math_on_a_transposed_read_is_vectorized(op, dtype):
    """`out[i, j] = f(x[j, i])` walks tiles whose transposed load is copied into an array first
    (`KernelRenderer.staged_loads`), so the rows compute f on vectors: exp inline, sin through its vector variant
    (mathlib's `vector-function-abi-variant`), over whole and partial tiles."""
    rows, cols = 37, 50
    i, j = Var("i", rows), Var("j", cols)
    x = ir.load(1, dtype, Expr.of(j) * rows + Expr.of(i), ())
    kernel = ir.Kernel("", (ir.BufferParam(dtype, rows * cols, True), ir.BufferParam(dtype, rows * cols)), (),
                       (i, j), (ir.Store(0, Expr.of(i) * cols + Expr.of(j), ir.alu(op, dtype, x)),))
    assert KernelRenderer(kernel).staged_loads() == [x]
    program, _ = compile_kernel(kernel)
    body = re.search(rf"define void @{program.kernel.name}\(.*?\n}}\n", program.optimized_ir, re.DOTALL).group(0)
    t = "float" if dtype == float32 else "double"
    if op is ir.Alu.SIN:  # the vector variant inlined, its rare path called
        assert re.search(rf"call fastcc <\d+ x {t}> @__lazytensor_sin_f{dtype.bits}_x\d+_large", body)
    else:
        assert re.search(rf"fmul <\d+ x {t}>", body)
    np_dtype = np.dtype(dtype.name)
    arr = np.random.default_rng(0).uniform(-4, 4, (cols, rows)).astype(np_dtype)
    out = np.zeros((rows, cols), np_dtype)
    ptrs = (ctypes.c_void_p * 2)(out.ctypes.data, arr.ctypes.data)
    program.fn(ptrs, (ctypes.c_int64 * 2)(), 0, rows)
    np.testing.assert_allclose(out, (np.exp if op is ir.Alu.EXP else np.sin)(arr.T), rtol=4 * np.finfo(np_dtype).eps)


def padded_concatenation_kernel(rows: int, left: int, right: int) -> ir.Kernel:
    """`out[i, j]`: `a[i - 1, j]` for j < left (zero in the first and last rows: a padded operand), then
    `b[i, j - left]`: a concatenation along j of a padded operand and another."""
    i, j = Var("i", rows), Var("j", left + right)
    a = ir.load(1, int64, (Expr.of(i) - 1) * left + Expr.of(j),
                (Bound(Expr.of(i) - 1, 0, rows - 2), Bound(Expr.of(j), 0, left)))
    b = ir.load(2, int64, Expr.of(i) * right + Expr.of(j) - left, (Bound(Expr.of(j) - left, 0, right),))
    bufs = (ir.BufferParam(int64, rows * (left + right), True), ir.BufferParam(int64, (rows - 2) * left),
            ir.BufferParam(int64, rows * right))
    return ir.Kernel("", bufs, (), (i, j), (ir.Store(0, Expr.of(i) * (left + right) + Expr.of(j),
                                                    ir.alu(ir.Alu.ADD, int64, a, b)),))


@pytest.mark.parametrize("checked", [False, True])
def test_loops_cut_where_bounds_change_load_without_masks(monkeypatch, checked):
    """A padded and concatenated kernel's loops are cut in pieces where its bounds change (`KernelRenderer.pieces`):
    right over any range of rows a thread gets, and, unchecked, its loads are plain vector loads (no gather, no
    masked load)."""
    monkeypatch.setattr(bounds, "CHECK", checked)
    rows, left, right = 9, 301, 700  # long enough that LLVM keeps the loops and vectorizes them
    kernel = padded_concatenation_kernel(rows, left, right)
    assert KernelRenderer(kernel).pieces(kernel.loops[1])[0] == [left]
    program, _ = compile_kernel(kernel)
    a = np.arange((rows - 2) * left, dtype=np.int64).reshape(rows - 2, left) + 1
    b = -np.arange(rows * right, dtype=np.int64).reshape(rows, right) - 1
    out = np.full((rows, left + right), 99, np.int64)
    ptrs = (ctypes.c_void_p * 3)(out.ctypes.data, a.ctypes.data, b.ctypes.data)
    slots = (ctypes.c_int64 * 4)()
    for lo, hi in ((0, 1), (1, 4), (4, 9)):  # ranges across the pieces of the rows
        program.fn(ptrs, slots, lo, hi)
    np.testing.assert_array_equal(out, np.concatenate([np.pad(a, ((1, 1), (0, 0))), b], axis=1))
    if not checked:
        assert "gather" not in program.optimized_ir and "masked" not in program.optimized_ir
        assert re.search(r"load <\d+ x i64>", program.optimized_ir)


def scaled_sum_kernel(n: int) -> ir.Kernel:
    """`b0[0] = sum over r < n of b1[r] * p0`."""
    r = Var("r", n)
    scaled = ir.alu(ir.Alu.MUL, float32, ir.load(1, float32, Expr.of(r), ()), ir.param(0, float32))
    bufs = (ir.BufferParam(float32, 1, True), ir.BufferParam(float32, n))
    return ir.Kernel("", bufs, (float32,), (Var("o", 1),),
                     (ir.Store(0, Expr.of(0), ir.reduce(ir.ReduceOp.SUM, scaled, (r,))),))


def test_a_sum_of_products_is_not_factored_into_a_product_of_the_sum():
    """`sum(c * x)` adds the products, in any order, but never computes `c * sum(x)`: 0.5 * (3e38 + 3e38)
    overflows where 1.5e38 + 1.5e38 does not, and inf * (1 - 1 + 1) is inf where inf - inf + inf is NaN.
    Fully unrolled (3 elements), in a vector loop's unrolled tail (9, 31) and vectorized (1000)."""
    for n in (3, 9, 31, 1000):
        program, _ = compile_kernel(scaled_sum_kernel(n))
        for head, scale, expected in (([3e38, 3e38, -3e38], 0.5, np.float32(1.5e38)),
                                      ([1.0, -1.0, 1.0], np.inf, np.nan)):
            for at in (0, n - 3):
                x = np.zeros(n, np.float32)
                x[at:at + 3] = head
                out = np.empty(1, np.float32)
                program([out.ctypes.data, x.ctypes.data], [scale])
                np.testing.assert_array_equal(out, [expected], err_msg=f"n={n}, at {at}")
    assert re.search(r"= fadd reassoc <\d+ x float>", program.optimized_ir)  # still vectorized


def math_kernel(op: ir.Alu, dtype: DType, n: int) -> ir.Kernel:
    """`out = op(x) + x` (atan2 of x and x + x) over n elements: float work around the function."""
    o0 = Var("o0", n)
    x = ir.load(1, dtype, Expr.of(o0), ())
    args = (x,) if op.arity == 1 else (x, ir.alu(ir.Alu.ADD, dtype, x, x))
    out = ir.alu(ir.Alu.ADD, dtype, ir.alu(op, dtype, *args), x)
    return ir.Kernel(f"math_{op.label}", (ir.BufferParam(dtype, n, True), ir.BufferParam(dtype, n)), (), (o0,),
                     (ir.Store(0, Expr.of(o0), out),))


@pytest.mark.parametrize("op", [ir.Alu.TANH, ir.Alu.SIN, ir.Alu.ATAN2, ir.Alu.EXP], ids=str)
def test_a_float32_loop_around_a_math_function_is_vectorized_8_wide(op):
    """LLVM sizes a loop's vectors by its widest type: the doubles inside float32 sin (or atan2) made the loop 4
    floats wide on AVX2. It is 8 (`render.FLOAT32_LANES`): the floats fill a 256-bit vector; exp and tanh, all
    in float32 (no double in their loops), are 8 wide unhinted; a float64 loop keeps LLVM's choice. Values as
    NumPy's."""
    n = 1000
    kernel = math_kernel(op, float32, n)
    in_double = op in (ir.Alu.SIN, ir.Alu.ATAN2)
    assert ('!"llvm.loop.vectorize.width", i32 8' in render(kernel)) == in_double
    program, _ = compile_kernel(kernel)
    loop = program.optimized_ir.split("define void")[1].split("\n}\n")[0]  # the kernel's function, not sin's variants
    # the main vector loop's widths: 8 on AVX2, 16 where AVX-512 is preferred (whose remainder LLVM may run in a
    # narrower vector loop after it)
    body = loop.split("\nvector.body:")[1].split("\n\n")[0]
    widths = {int(w) for w in re.findall(r"<(\d+) x float>", body)}
    assert widths and min(widths) >= 8
    assert ("double" in loop) == in_double
    x = np.random.default_rng(26).standard_normal(n).astype(np.float32) * 4
    out = np.empty(n, np.float32)
    program([out.ctypes.data, x.ctypes.data], [])
    function = {ir.Alu.TANH: np.tanh, ir.Alu.SIN: np.sin, ir.Alu.EXP: np.exp}.get(op, lambda v: np.arctan2(v, v + v))
    np.testing.assert_allclose(out, function(x.astype(np.float64)) + x, rtol=2e-6, atol=1e-6)
    assert '"llvm.loop.vectorize.width"' not in render(math_kernel(ir.Alu.SIN, float64, n))


def update_kernel(name: str, slot: int, size: int, op: ir.Alu, operand: int) -> ir.Kernel:
    """`b[slot][i] = b[slot][i] <op> operand` for every i < size, in place."""
    i = Var("i", size)
    new = ir.alu(op, int64, ir.load(slot, int64, Expr.of(i), ()), ir.const(operand, int64))
    bufs = (ir.BufferParam(int64, 1 << 20, True), ir.BufferParam(int64, 333_333, True))
    return ir.Kernel(name, bufs, (), (i,), (ir.Store(slot, Expr.of(i), new),))


def scale_kernel(size: int) -> ir.Kernel:
    """`b[2][i] = b[2][i] * param0 + param1`, in place, over its own buffer (`b[0]`, `b[1]` unused)."""
    i = Var("i", size)
    x = ir.load(2, int64, Expr.of(i), ())
    new = ir.alu(ir.Alu.ADD, int64, ir.alu(ir.Alu.MUL, int64, x, ir.param(0, int64)), ir.param(1, int64))
    bufs = (ir.BufferParam(int64, 1 << 20, True), ir.BufferParam(int64, 333_333, True),
            ir.BufferParam(int64, size, True))
    return ir.Kernel("scale_third", bufs, (int64, int64), (i,), (ir.Store(2, Expr.of(i), new),))


def test_a_batch_runs_its_programs_in_order_on_its_table_with_new_parameters(monkeypatch):
    """Programs run as one batch by three threads, each on its own positions in the caller's table: after
    each run every element saw each program once, in order, with the parameters set for that run."""
    monkeypatch.setenv("LT_NUM_THREADS", "3")
    monkeypatch.setattr(runtime, "PARALLEL_MIN_WORK", 1)
    monkeypatch.setattr(runtime, "SPLIT_MIN_WORK", 0)
    bump, _ = compile_kernel(update_kernel("bump_first", 0, 1 << 20, ir.Alu.ADD, 1))
    triple, _ = compile_kernel(update_kernel("triple_first", 0, 1 << 20, ir.Alu.MUL, 3))
    scale, _ = compile_kernel(scale_kernel(1000))
    o, r = Var("o", 1), Var("r", 1 << 20)
    total = ir.Kernel("total", (ir.BufferParam(int64, 1, True), ir.BufferParam(int64, 1 << 20)), (), (o,),
                      (ir.Store(0, Expr.of(o), ir.reduce(ir.ReduceOp.SUM, ir.load(1, int64, Expr.of(r), ()), (r,))),))
    summed, _ = compile_kernel(total)
    assert isinstance(summed, runtime.SplitReductionProgram)  # partials in its scratch, then a combine
    a, b, c = np.zeros(1 << 20, np.int64), np.zeros(333_333, np.int64), np.ones(1000, np.int64)
    out = np.zeros(1, np.int64)
    # the caller's table: c, b, a, out; the programs find their buffers through positions in it
    batch = runtime.Batch([(bump, [2, 1], []), (scale, [2, 1, 0], [2, 5]), (triple, [2, 1], []),
                           (summed, [3, 2], [])], 4)
    want_a, want_c = 0, 1
    for run in range(1, 13):
        batch([c.ctypes.data, b.ctypes.data, a.ctypes.data, out.ctypes.data], {1: [run, -run]})
        want_a, want_c = (want_a + 1) * 3, want_c * run - run
        assert (a == want_a).all() and (c == want_c).all() and (b == 0).all() and out[0] == want_a << 20
        if run in (4, 8):  # the thread count may change between runs: the chunks follow it
            monkeypatch.setenv("LT_NUM_THREADS", "1" if run == 4 else "2")
    assert batch.plan.threads == 2


def test_threads_run_every_chunk_once_and_stages_in_order(monkeypatch):
    """Two kernels launched together, then a stage that triples the first one's output, split into chunks
    that three threads claim: after each launch, every element was incremented once then tripled (a chunk
    run twice, or skipped, or run before the stage it follows finished, or still running when the launch
    returns, would show)."""
    monkeypatch.setenv("LT_NUM_THREADS", "3")
    monkeypatch.setattr(runtime, "PARALLEL_MIN_WORK", 1)
    first, _ = compile_kernel(update_kernel("bump_first", 0, 1 << 20, ir.Alu.ADD, 1))
    second, _ = compile_kernel(update_kernel("bump_second", 1, 333_333, ir.Alu.ADD, 2))
    triple, _ = compile_kernel(update_kernel("triple_first", 0, 1 << 20, ir.Alu.MUL, 3))
    a, b = np.zeros(1 << 20, np.int64), np.zeros(333_333, np.int64)
    ptrs = (ctypes.c_void_p * 2)(a.ctypes.data, b.ctypes.data)
    phases = [([(first.fn, first.extent), (second.fn, second.extent)], 1 << 30), ([(triple.fn, triple.extent)], 1 << 30)]
    plan = runtime._Plan.of([(phase, ctypes.addressof(ptrs), ctypes.addressof(ptrs)) for phase in phases])
    assert plan.threads == 3
    want = 0
    for launch in range(1, 21):
        plan.run(0)  # base 0: the chunks hold the table's address
        want = (want + 1) * 3
        assert (a == want).all() and (b == 2 * launch).all()


def test_a_program_cuts_its_chunks_once_per_thread_count(monkeypatch):
    """A program's chunk table is made on its first call at a thread count, then reused: its fields are offsets
    into each call's frame (buffer addresses, then parameters), so calls on other buffers with other parameters,
    at 1, 2 and 3 threads, from two Python threads at once, each compute their own."""
    monkeypatch.setattr(runtime, "PARALLEL_MIN_WORK", 1)
    scale, _ = compile_kernel(scale_kernel(100_000))
    unused = np.zeros(1, np.int64)

    def scaled(k: int, a: np.ndarray) -> None:
        for step in range(20):
            scale([unused.ctypes.data, unused.ctypes.data, a.ctypes.data], [1, k + step])

    for threads in ("1", "2", "3", "2"):
        monkeypatch.setenv("LT_NUM_THREADS", threads)
        arrays = [np.arange(100_000, dtype=np.int64) * k for k in (1, 2)]
        callers = [threading.Thread(target=scaled, args=(k, a)) for k, a in enumerate(arrays)]
        for caller in callers:
            caller.start()
        for caller in callers:
            caller.join()
        for k, a in enumerate(arrays):
            np.testing.assert_array_equal(a, np.arange(100_000) * (k + 1) + sum(k + step for step in range(20)))
    assert sorted(key[0] for key in scale.plans) == [1, 2, 3]


def scaled_row_sums_kernel(rows: int, cols: int, scale: float) -> ir.Kernel:
    """out[i] = scale * sum_j x[i, j]: a family of distinct kernels (each size and scale its own body)."""
    o0, r0 = Var("o0", rows), Var("r0", cols)
    total = ir.reduce(ir.ReduceOp.SUM, ir.load(1, float32, Expr.of(o0) * cols + Expr.of(r0), ()), (r0,))
    out = ir.alu(ir.Alu.MUL, float32, total, ir.const(scale, float32))
    bufs = (ir.BufferParam(float32, rows, True), ir.BufferParam(float32, rows * cols))
    return ir.Kernel("", bufs, (), (o0,), (ir.Store(0, Expr.of(o0), out),))


def test_a_batch_of_kernels_compiles_in_workers_to_the_same_code(monkeypatch):
    """`compile_kernels` shares a batch's modules out to compile processes (forced here for a small batch);
    their object code runs as what this process compiles, and a worker that dies leaves its share to this
    process."""
    monkeypatch.setenv("LT_NUM_THREADS", "3")
    monkeypatch.setattr(runtime, "SIDE_BY_SIDE_MIN_CHARS", 0)
    kernels = [scaled_row_sums_kernel(rows, 7, scale) for rows in (3, 5) for scale in (0.5, -2.0, 3.25)]
    assert runtime.compile_kernels(kernels) == kernels
    assert len(runtime._workers.procs) == 2
    x = np.arange(35, dtype=np.float32)
    for k in kernels:
        program, compiled = compile_kernel(k)
        assert not compiled  # the batch compiled it
        rows, scale = k.buffers[0].size, k.stores[0].value.srcs[1].arg
        out = np.zeros(rows, np.float32)
        program([out.ctypes.data, x.ctypes.data], [])
        np.testing.assert_array_equal(out, x[:rows * 7].reshape(rows, 7).sum(1, dtype=np.float32) * np.float32(scale))
        assert "define" in program.optimized_ir
    runtime._workers.procs[0].kill()
    again = [scaled_row_sums_kernel(4, 7, scale) for scale in (1.5, 2.5, 4.5)]
    assert runtime.compile_kernels(again) == again
    for k in again:
        out = np.zeros(4, np.float32)
        compile_kernel(k)[0]([out.ctypes.data, x.ctypes.data], [])
        np.testing.assert_array_equal(out, x[:28].reshape(4, 7).sum(1, dtype=np.float32)
                                      * np.float32(k.stores[0].value.srcs[1].arg))


def test_an_interrupted_batch_leaves_no_worker_owing_answers(monkeypatch):
    """Ctrl-C while this process compiles its share: the workers that were asked are dropped, so the next batch
    never reads their answers to the interrupted one as its own."""
    monkeypatch.setenv("LT_NUM_THREADS", "2")
    monkeypatch.setattr(runtime, "SIDE_BY_SIDE_MIN_CHARS", 0)
    runtime.compile_kernels([scaled_row_sums_kernel(2, 3, 0.5), scaled_row_sums_kernel(2, 3, 1.5)])
    (worker,) = runtime._workers.procs

    def interrupted(jobs):
        raise KeyboardInterrupt

    monkeypatch.setattr(runtime, "_compile_here", interrupted)
    with pytest.raises(KeyboardInterrupt):
        runtime.compile_kernels([scaled_row_sums_kernel(6, 3, scale) for scale in (0.25, 0.75)])
    assert worker not in runtime._workers.procs and worker.poll() is not None
    monkeypatch.undo()
    monkeypatch.setenv("LT_NUM_THREADS", "2")
    monkeypatch.setattr(runtime, "SIDE_BY_SIDE_MIN_CHARS", 0)
    kernels = [scaled_row_sums_kernel(6, 3, scale) for scale in (0.25, 0.75)]
    assert runtime.compile_kernels(kernels) == kernels
    x = np.arange(18, dtype=np.float32)
    for k in kernels:
        out = np.zeros(6, np.float32)
        compile_kernel(k)[0]([out.ctypes.data, x.ctypes.data], [])
        scale = np.float32(k.stores[0].value.srcs[1].arg)
        np.testing.assert_array_equal(out, x.reshape(6, 3).sum(1, dtype=np.float32) * scale)


def test_work_counts_each_reduction_once_per_iteration_of_the_loops_it_sits_in():
    """A reduction that reads no output variable (a 1-D softmax's max) runs once per chunk, not once per element:
    its loop counts once in the kernel's work, which decides whether the kernel is worth threads."""
    o, r, s = Var("o", 1000), Var("r", 1000), Var("s", 1000)
    whole = ir.reduce(ir.ReduceOp.MAX, ir.load(1, float32, Expr.of(r), ()), (r,))
    row = ir.reduce(ir.ReduceOp.SUM, ir.load(1, float32, Expr.of(o) * 1000 + Expr.of(s), ()), (s,))
    value = ir.alu(ir.Alu.ADD, float32, whole, ir.load(1, float32, Expr.of(o), ()))
    bufs = (ir.BufferParam(float32, 1000, True), ir.BufferParam(float32, 1000 * 1000))
    once = ir.Kernel("once", bufs, (), (o,), (ir.Store(0, Expr.of(o), value),))
    per_row = ir.Kernel("per_row", bufs, (), (o,), (ir.Store(0, Expr.of(o), ir.alu(ir.Alu.ADD, float32, whole, row)),))
    assert runtime.work(once) == 1000 + 1000
    assert runtime.work(per_row) == 1000 + 1000 + 1000 * 1000


def first_hit_kernel(rows: int, cols: int, varying_other: bool) -> ir.Kernel:
    """`b0[o] = min over r < cols of where(b1[o, r] > 0, r, p0)`, or of `where(..., r, b2[o, r])`."""
    o, r = Var("o", rows), Var("r", cols)
    at = Expr.of(o) * cols + Expr.of(r)
    hit = ir.alu(ir.Alu.CMPLT, bool_, ir.const(0.0, float32), ir.load(1, float32, at, ()))
    other = ir.load(2, int64, at, ()) if varying_other else ir.param(0, int64)
    first = ir.reduce(ir.ReduceOp.MIN, ir.alu(ir.Alu.WHERE, int64, hit, ir.index(Expr.of(r)), other), (r,))
    bufs = (ir.BufferParam(int64, rows, True), ir.BufferParam(float32, rows * cols),
            ir.BufferParam(int64, rows * cols))
    return ir.Kernel("", bufs, (int64,), (o,), (ir.Store(0, Expr.of(o), first),))


@pytest.mark.parametrize("checked", [False, True])
def test_a_min_of_positions_where_a_condition_holds_stops_at_the_first_hit(monkeypatch, checked):
    """argmax's second pass, `min over r of where(cond, r, other)` (`KernelRenderer.first_hit`): rows with no
    hit, all hits, one hit at either end or at the edges of the blocks it searches, for any `other` (a
    negative one wins unless every element is a hit), and an `other` that varies with r, folded as before."""
    monkeypatch.setattr(bounds, "CHECK", checked)
    block = FIRST_HIT_BLOCK
    for cols in (0, 2, 5, block - 1, block, block + 1, 3 * block + 7):
        rows = 4 + 2 * cols
        x = np.random.default_rng(cols).choice(np.float32([-1, -2, 0]), (rows, cols))
        x[1] = 1  # all hits
        for i in range(cols):
            x[4 + i, i] = 1  # one hit, anywhere
            x[4 + cols + i, i::block] = 1  # a hit in every block from there on
        x[2, cols // 2:] = np.where(np.arange(cols - cols // 2) % 3 == 0, 1, x[2, cols // 2:])
        positions = np.broadcast_to(np.arange(cols), x.shape)
        out = np.empty(rows, np.int64)
        program, _ = compile_kernel(first_hit_kernel(rows, cols, False))
        assert "r_block_head" in render(first_hit_kernel(rows, cols, False))
        for other in (-(1 << 63), -3, -1, 0, 1, cols // 2, cols, 1 << 40):
            program([out.ctypes.data, x.ctypes.data, 0], [other])
            expected = np.where(x > 0, positions, other).min(1, initial=np.iinfo(np.int64).max)
            np.testing.assert_array_equal(out, expected, err_msg=f"cols={cols}, other={other}")
        others = np.random.default_rng(1).integers(-5, cols + 5, x.shape)
        program, _ = compile_kernel(first_hit_kernel(rows, cols, True))
        assert "r_block_head" not in render(first_hit_kernel(rows, cols, True))
        program([out.ctypes.data, x.ctypes.data, others.ctypes.data], [0])
        expected = np.where(x > 0, positions, others).min(1, initial=np.iinfo(np.int64).max)
        np.testing.assert_array_equal(out, expected, err_msg=f"cols={cols}, varying")


def test_a_call_frame_holds_the_addresses_then_the_parameters_then_the_sizes():
    """`_frame`'s layout, slot by slot: the table's addresses, a float parameter as a double's bits, an integer as
    int64 (uint64's top half wrapped as C converts it, the path past `struct`'s range), the sizes, then a checked
    kernel's fault record zeroed; the same layout with and without that conversion, and with no parameters."""
    from lazytensor.kernels.dtype import uint64
    double_bits = lambda v: int.from_bytes(np.float64(v).tobytes(), "little", signed=True)
    frame = runtime._frame([10, 20], [1.5, -3, 2**64 - 1], (float32, int64, uint64), True, (7, 8))
    expect = [10, 20, double_bits(1.5), -3, -1, 7, 8] + [0] * runtime.FAULT_SLOTS
    assert list(frame) == expect
    frame = runtime._frame([10, 20], [1.5, -3, 5], (float32, int64, uint64), True, (7, 8))
    assert list(frame) == expect[:4] + [5] + expect[5:]
    assert list(runtime._frame([10, 20], [], (), False, (7,))) == [10, 20, 7]
    assert list(runtime._frame([10], [], ())) == [10, 0]


def test_a_direct_call_runs_its_program_on_each_launchs_buffers_and_parameters(monkeypatch):
    """A `DirectCall` reuses one frame: each launch computes on its own buffers with its own parameters (an
    integer past int64's range wrapped as C converts it, the path past `struct`'s), as the program's own call does;
    one whose work the pool shares by `PARALLEL_MIN_WORK` at the launch goes through the program, on the pool."""
    program, _ = compile_kernel(scale_kernel(1000))
    call = program.direct(3)
    unused = np.zeros(1, np.int64)
    arrays = [np.arange(1000, dtype=np.int64) * k for k in (1, 2, 3)]
    for k, (a, params) in enumerate(zip(arrays, ([2, 1], [-3, 5], [1, 2**64 - 1]))):
        call([unused.ctypes.data, unused.ctypes.data, a.ctypes.data], params)
        want = np.arange(1000, dtype=np.int64) * (k + 1) * params[0] + np.uint64(params[1]).astype(np.int64)
        np.testing.assert_array_equal(a, want)
    monkeypatch.setattr(runtime, "PARALLEL_MIN_WORK", 1)
    monkeypatch.setenv("LT_NUM_THREADS", "2")
    a = np.arange(1000, dtype=np.int64)
    call([unused.ctypes.data, unused.ctypes.data, a.ctypes.data], [3, 4])
    np.testing.assert_array_equal(a, np.arange(1000) * 3 + 4)
    assert program.plans  # its chunk table: it ran on the pool


def test_a_checked_program_has_no_direct_call(monkeypatch):
    """A checked program's launch reads its fault record after the call: it has no `DirectCall`."""
    monkeypatch.setattr(bounds, "CHECK", True)
    program, _ = compile_kernel(scale_kernel(1000))
    assert program.checked and program.direct(3) is None
