"""The Triton backend, run by Triton's interpreter on the CPU (no GPU needed).

Every result is compared with the CPU (LLVM) backend running the same graph: the two backends
render the same kernel IR and must agree on its semantics (floor division and modulo, NaN
propagation, saturating casts, rounding) for every dtype. Reductions are also run with tiny block
sizes, so that persistent and looped reductions, masks and multi-program grids are all exercised
on small shapes. Matmuls run through the tl.dot template (kernels/triton/gemm.py) on float32 data
quantized as in test_contraction, which sums exactly in any order, so they too must agree bit for bit.
The rest covers devices (no silent fallback), copies, caching and the pieces of the CUDA runtime
that can be checked without a GPU.
"""
from __future__ import annotations

import contextlib
import copy
import importlib.util
import math
import os
import pickle
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from fuzz import modes
from test_contraction import data

import lazytensor as lt
import lazytensor.device
import triton_interpreter  # noqa: F401  (registers torch storage for the interpreter)
from conftest import ALL_DTYPES, FLOAT_DTYPES, INT_DTYPES, WIDE_UNSIGNED_DTYPES, check, padded_load_kernel, random_array
from lazytensor.kernels import ir
from lazytensor.kernels.dtype import int64, uint8
from lazytensor.kernels.expr import Expr, Var
from lazytensor.kernels.legalize import legalize
from lazytensor.kernels.triton import Tiling, cuda, gemm, render, targets
from lazytensor.kernels.triton.render import NATIVE

# Triton reads TRITON_INTERPRET once, when it is imported: triton_interpreter imports it interpreted, unless
# this session is for a GPU, and then these tests skip.
if importlib.util.find_spec("triton") is None:
    pytest.skip("triton is not installed", allow_module_level=True)

NAN, INF = math.nan, math.inf
TINY = Tiling(max_block=4, max_tile=8, max_xblock=2)  # every reduction loops, every axis is masked
# The backends are compared with each other, no oracle needed: every dtype, the wide unsigned ones included.
DTYPES = ALL_DTYPES + WIDE_UNSIGNED_DTYPES
INTEGERS = INT_DTYPES + WIDE_UNSIGNED_DTYPES


@pytest.fixture(autouse=True)
def interpreter(monkeypatch, tmp_path_factory):
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    monkeypatch.setenv("LT_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "lt-cache"))
    monkeypatch.delenv("LT_DEVICE", raising=False)
    try:
        lazytensor.device.get_device("cuda")
    except lt.DeviceError as e:  # triton was imported for a GPU before this module (see triton_interpreter.py)
        pytest.skip(str(e))


@pytest.fixture(params=[Tiling(), TINY], ids=["default", "tiny"])
def tiling(request, monkeypatch) -> Tiling:
    """Compile every cuda kernel of the test with this tiling."""
    from lazytensor.kernels.triton import runtime  # imports triton: not at collection
    compile_kernel = runtime.compile_kernel
    monkeypatch.setattr(runtime, "compile_kernel",
                        lambda kernel, target, tiling=request.param, **kw: compile_kernel(kernel, target, tiling, **kw))
    return request.param


def both(fn, *arrays: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """`fn` of the arrays as tensors, on the CPU backend and on the Triton backend."""
    cpu = fn(*(lt.asarray(a) for a in arrays)).numpy()
    gpu = fn(*(lt.asarray(a, device="cuda") for a in arrays)).numpy()
    return cpu, gpu


def assert_same(fn, *arrays: np.ndarray, rtol: float = 0.0) -> None:
    """Triton agrees with LLVM: bit for bit (and sign for sign) unless a tolerance is given."""
    cpu, gpu = both(fn, *arrays)
    assert gpu.dtype == cpu.dtype and gpu.shape == cpu.shape
    if rtol:
        np.testing.assert_allclose(gpu, cpu, rtol=rtol, atol=rtol, equal_nan=True)
    else:
        np.testing.assert_array_equal(gpu, cpu)
    if cpu.dtype.kind == "f":  # -0.0 is not 0.0 (a NaN's sign means nothing)
        numbers = ~np.isnan(cpu)
        np.testing.assert_array_equal(np.signbit(gpu)[numbers], np.signbit(cpu)[numbers], err_msg="sign bits differ")


# ---- pointwise ---------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_pointwise_every_dtype(dtype):
    a, b = random_array((5, 7), dtype, 0), random_array((7,), dtype, 1)
    if dtype == lt.bool_:
        assert_same(lambda x, y: (x & y) | ~x, a, b)
    else:
        assert_same(lambda x, y: x * y + x - abs(y), a, b)
        assert_same(lambda x, y: lt.where(x < y, x.maximum(y), x.minimum(y)), a, b)
    assert_same(lambda x: x.T.flip(0)[1:, ::2], a)


@pytest.mark.parametrize("dtype", INTEGERS, ids=str)
def test_integer_floor_division_and_modulo(dtype):
    """Python semantics (round toward -inf, the divisor's sign), 0 for a zero divisor, MIN // -1 wraps."""
    info = np.iinfo(dtype.name)
    values = sorted(v for v in {info.min, info.min + 1, -7, -1, 0, 1, 3, 7, info.max} if info.min <= v <= info.max)
    a = np.array(values, dtype.name)[:, None]
    b = np.array(values, dtype.name)[None, :]
    for op in (lambda x, y: x // y, lambda x, y: x % y):
        cpu, gpu = both(op, a, b)
        np.testing.assert_array_equal(gpu, cpu)
    with np.errstate(all="ignore"):  # NumPy agrees, including its 0 for a zero divisor
        np.testing.assert_array_equal(both(lambda x, y: x // y, a, b)[1], np.floor_divide(a, b))
        np.testing.assert_array_equal(both(lambda x, y: x % y, a, b)[1], np.remainder(a, b))


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
def test_float_floor_division_remainder_and_pow(dtype):
    values = np.array([NAN, INF, -INF, -0.0, 0.0, 1.0, -1.0, 0.5, -2.5, 3.0, 7.25, -100.0], dtype.name)
    a, b = values[:, None], values[None, :]
    assert_same(lambda x, y: x // y, a, b)
    assert_same(lambda x, y: x % y, a, b)
    assert_same(lambda x, y: x ** y, a, b, rtol=1e-7 if dtype == lt.float32 else 1e-13)
    assert_same(lambda x: x ** 2 + x ** 3 - x ** -1, a)  # small integer powers are exact


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
def test_float_functions_and_nan_rules(dtype):
    x = np.array([NAN, INF, -INF, -0.0, 0.0, 0.5, -0.5, 1.5, 2.5, -2.5, 1e-8, -3.7, 20.5, 1e15 + 0.5], dtype.name)
    assert_same(lambda t: t.round(), x)
    assert_same(lambda t: t.trunc(), x)
    assert_same(lambda t: t.floor() + t.ceil(), x)
    assert_same(lambda t: t.isnan() | (t != t), x)  # noqa: PLR0124 (NaN is unequal to itself, in the kernel too)
    y = np.roll(x, 3)
    assert_same(lambda s, t: s.maximum(t) - s.minimum(t), x, y)
    tol = 1e-6 if dtype == lt.float32 else 1e-13
    for fn in ("tanh", "expm1", "log1p", "tan", "exp", "log", "sqrt", "sin", "erf", "reciprocal"):
        assert_same(lambda t, fn=fn: getattr(t, fn)(), x, rtol=tol)


def test_casts_between_every_dtype():
    """Float to int saturates through int64 then wraps (NaN gives 0), to uint64 up to 2**64 - 1; bools read and
    write as bytes."""
    floats = np.array([NAN, INF, -INF, -0.0, 0.7, -1.0, -1.7, 255.5, 3e9, -3e9, 1e19, -1e19, 2e19, 2.0**63],
                      np.float64)
    ints = np.array([-128, -1, 0, 1, 127, 255, 300, -40000, 2**40, 2**63 - 1, -2**63], np.int64)
    for src in DTYPES:
        data = floats.astype(src.name) if src.is_float else np.array([0, 1, 1, 0, 1], bool) \
            if src == lt.bool_ else ints.astype(src.name)
        for dst in DTYPES:
            assert_same(lambda t, dst=dst: t.cast(dst), data)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_scalar_parameters_keep_their_dtype(dtype):
    """Python scalars reach the kernel as parameters of the tensor's dtype: float64 ones are not rounded to
    float32, and a new value does not compile a new kernel."""
    x = random_array((6,), dtype, 2)
    scalars = [True, False] if dtype == lt.bool_ else [0.1, 1 / 3] if dtype.is_float else [3, 1]
    for s in scalars:
        assert_same(lambda t, s=s: lt.where(t == t, s, t), x)  # noqa: PLR0124 (false at NaN, in the kernel too)
    lt.reset_stats()
    t = lt.asarray(x, device="cuda")
    lt.where(t == t, scalars[1], t).realize()  # noqa: PLR0124 (false at NaN)
    assert lt.stats().kernels_compiled == 0 and lt.stats().kernels_launched == 1


def test_masks_from_padding_never_read_out_of_bounds():
    device = lt.devices()[1]
    src, out = device.from_numpy(np.array([7, 8, 9], np.int32)), device.alloc(lt.int32, 6)
    program, _ = device.compile(padded_load_kernel())
    program([out.ptr, src.ptr], [100])
    np.testing.assert_array_equal(out.numpy(), [100, 100, 107, 108, 109, 100])
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    assert_same(lambda t: t.pad(((1, 2), (3, 0))) + 1, x)


def test_gathers_skip_the_lanes_past_the_end_of_their_loops():
    """A lane past the last row computes a row index past the table's end, where the index from data may be
    valid: the gather's mask has the lane mask too."""
    table, ids = random_array((5, 3), lt.float32, 1), np.array([[0, 2, 1]] * 5)
    assert_same(lambda t, i: t.gather(1, i), table, ids)
    (kernel,) = (item.kernel for item in lt.schedule(lt.asarray(table, device="cuda").gather(
        1, lt.asarray(ids, device="cuda"))) if any(v.op is ir.VOp.GATHER for v in item.kernel.values()))
    source = render(kernel).source
    (gathered,) = (line for line in source.splitlines() if "tl.load(tl.broadcast_to(" in line)
    assert "xmask = x < 15" in source and gathered.endswith("& xmask, other=0)"), source

def test_index_division_with_negative_numerators():
    """Div and Mod atoms of an index whose numerator may be negative use floor semantics."""
    o0 = Var("o0", 12)
    shifted = Expr.of(o0) - 5
    assert (shifted // 3).terms and (shifted % 3).terms  # not simplified away: the kernel computes them
    values = [ir.index(shifted // 3), ir.index(shifted % 3)]
    bufs = (ir.BufferParam(int64, 24, True),)
    stores = tuple(ir.Store(0, Expr.of(o0) * 2 + i, v) for i, v in enumerate(values))
    kernel = ir.Kernel("negative_index_division", bufs, (), (o0,), stores)
    device = lt.devices()[1]
    out = device.alloc(lt.int64, 24)
    device.compile(kernel)[0]([out.ptr], [])
    expected = [[(i - 5) // 3, (i - 5) % 3] for i in range(12)]
    np.testing.assert_array_equal(out.numpy().reshape(12, 2), expected)


# ---- reductions ----------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_reductions_every_dtype(dtype, tiling):
    x = random_array((3, 10), dtype, 3, low=0.5, high=1.5)
    rtol = 1e-6 if dtype == lt.float32 else 1e-13 if dtype == lt.float64 else 0.0
    if dtype == lt.bool_:
        assert_same(lambda t: t.any(axis=1) ^ t.all(axis=0).any(), x)
        return
    for fn in (lambda t: t.sum(axis=1), lambda t: t.sum(), lambda t: t.max(axis=0), lambda t: t.min(),
               lambda t: t.prod(axis=1), lambda t: t.argmax(axis=1), lambda t: t.cumsum(axis=1)):
        assert_same(fn, x, rtol=rtol)


@pytest.mark.parametrize("dtype", INTEGERS, ids=str)
def test_small_integer_max_and_min_keep_their_dtype_for_the_ops_that_read_them(dtype, tiling):
    """tl.max and tl.min widen int8, int16, uint8 and uint16 to int32: cast back to the IR's dtype, a uint8 max
    modulo 2 compiles (Triton refuses `%` of a signed by an unsigned value) and each op wraps in its dtype."""
    x = random_array((4, 9), dtype, 6)
    assert_same(lambda t: t.max(-1, keepdims=True) % 2, x)
    assert_same(lambda t: t.min(0) // 3 - t.max(), x)


def test_row_wise_multi_reductions_are_one_kernel(tiling):
    """softmax and layernorm: several reductions of a row, then the elementwise part, in one kernel."""
    x = random_array((5, 9), lt.float32, 4)
    softmax = lambda t: t.softmax(-1)
    layernorm = lambda t: (t - t.mean(-1, keepdims=True)) / (t.var(-1, keepdims=True) + 1e-5).sqrt()
    for fn in (softmax, layernorm, lambda t: t.log_softmax(1), lambda t: t.logsumexp(1)):
        assert len(lt.schedule(fn(lt.asarray(x, device="cuda")))) == 1
        assert_same(fn, x, rtol=1e-5)


def test_nested_and_full_reductions(tiling):
    x = random_array((4, 6, 5), lt.float64, 5)
    assert_same(lambda t: t.max(axis=2).sum(axis=1), x, rtol=1e-13)
    assert_same(lambda t: t.sum(), x, rtol=1e-13)
    assert_same(lambda t: t / t.sum(), x, rtol=1e-13)
    assert_same(lambda t: t.var(axis=(0, 2)), x, rtol=1e-12)


def test_max_and_min_reductions_propagate_nan(tiling):
    x = np.array([[1.0, NAN, 3.0, -INF, 2.0], [INF, 1.0, -1.0, 0.0, 5.0], [NAN, NAN, NAN, NAN, NAN]], np.float32)
    assert_same(lambda t: t.max(axis=1), x)
    assert_same(lambda t: t.min(axis=1), x)
    assert_same(lambda t: t.max(axis=0) + t.min(), x)


def test_softmax_source_is_persistent_or_looped():
    """One kernel, two reductions; each a single block when the row fits, a loop over blocks otherwise."""
    t = lt.asarray(random_array((3, 100), lt.float32, 6), device="cuda").softmax(-1)
    (item,) = lt.schedule(t)
    persistent = render(item.kernel).source
    looped = render(item.kernel, Tiling(max_block=32, max_tile=32)).source
    assert " in range(" not in persistent and persistent.count("tl.arange(0, 128)") == 3
    assert looped.count("in range(0, 100, 32)") == 3 and "_reduce_max" in looped


def _two_sums(reads_output: str) -> ir.Kernel:
    """b0[0] = sum(b2), then b1[0] = sum over rows of row sums of b2, divided by b0[0] as it computes it or,
    `reads_output` "load" or "gather", as it reads it from b0."""
    f32, r0, r1, r2 = lt.float32, Var("r0", 8), Var("r1", 8), Var("r2", 3)
    count = ir.reduce(ir.ReduceOp.SUM, ir.load(2, f32, Expr.of(r0) * 3, ()), (r0,))
    rows = ir.reduce(ir.ReduceOp.SUM, ir.load(2, f32, Expr.of(r1) * 3 + r2, ()), (r2,))
    total = ir.reduce(ir.ReduceOp.SUM, rows, (r1,))
    other = {"": count, "load": ir.load(0, f32, Expr.of(0), ()),
             "gather": ir.gather(0, f32, ir.index(Expr.of(0)), ir.const(True, lt.bool_))}[reads_output]
    bufs = (ir.BufferParam(f32, 1, True), ir.BufferParam(f32, 1, True), ir.BufferParam(f32, 24))
    return ir.Kernel("two_sums", bufs, (), (Var("o0", 1),),
                     (ir.Store(0, Expr.of(0), count), ir.Store(1, Expr.of(0), ir.alu(ir.Alu.DIV, f32, total, other))))


def test_a_store_follows_its_value_where_the_kernel_does_not_read_its_buffer():
    """A reduction's result is stored before the reductions after it: Triton 3.6 cannot compile such a kernel
    (a cross-entropy's count of kept labels and its loss) with the store after them (its layout pass). Where
    the kernel reads the buffer it writes, every store comes last."""
    source = render(_two_sums("")).source
    stores = [source.index(f"tl.store(tl.broadcast_to(b{i} + 0, [1, 1, 1])") for i in (0, 1)]
    sums = [i for i in range(len(source)) if source.startswith("tl.sum(", i)]
    assert len(sums) == 3 and stores[0] < sums[1] and stores[1] > sums[2]
    for read in ("load", "gather"):
        lines = render(_two_sums(read)).source.splitlines()
        assert all("tl.store(" not in line for line in lines[:-2]) and all("tl.store(" in line for line in lines[-2:])
    # two stores into one buffer keep their order, the second's value computed first
    f32, r0 = lt.float32, Var("r0", 8)
    total = ir.reduce(ir.ReduceOp.SUM, ir.load(1, f32, Expr.of(r0), ()), (r0,))
    doubled = ir.alu(ir.Alu.MUL, f32, total, ir.const(2.0, f32))
    twice = ir.Kernel("twice", (ir.BufferParam(f32, 1, True), ir.BufferParam(f32, 8)), (), (Var("o0", 1),),
                      (ir.Store(0, Expr.of(0), doubled), ir.Store(0, Expr.of(0), total)))
    source = render(twice).source
    first, second = (source.index(f"tl.store(tl.broadcast_to(b0 + 0, [1, 1]), {name})") for name in ("v4", "v2"))
    assert "v4 = (v2 * v3)" in source and first < second


def test_functions_triton_approximates_come_from_libdevice_on_a_gpu():
    """float32 exp and exp2 and a float remainder: libdevice's on a GPU, Triton's own under the interpreter
    (which has no libdevice and computes them with NumPy); narrowing conversions keep the sign of a NaN."""
    x = lt.asarray(random_array((5,), lt.float32, 8), device="cuda")
    y = lt.asarray(random_array((5,), lt.float64, 9), device="cuda")
    (item,) = lt.schedule(x.exp() + x.exp2() + lt.remainder(x, 3.0) + y.cast(lt.float32) + lt.remainder(y, 2.0).cast(lt.float32))
    legal = legalize(item.kernel, NATIVE)
    gpu, interpreted = render(legal).source, render(legal, interpreted=True).source
    assert "from triton.language.extra import libdevice" in gpu and "libdevice" not in interpreted
    for fn in ("exp", "exp2", "fmod"):
        assert f"libdevice.{fn}(" in gpu and f"tl.{fn}(" not in gpu
    assert "tl.exp(" in interpreted and "tl.exp2(" in interpreted and " % " in interpreted
    assert "_narrowed(" in gpu and "_narrowed(" in interpreted


def test_bool_and_small_integer_parameters_arrive_as_int32():
    """Triton 3.6's launcher reads an int8 argument as an unsigned byte (refusing -1), and on an H100 a bool
    argument of 1 arrived as False: they come as int32, and the kernel narrows them."""
    o0 = Var("o0", 4)
    params = (lt.int8, lt.uint8, lt.int16, lt.uint16, lt.bool_, lt.int32, lt.int64, lt.float16, lt.float32)
    kernel = ir.Kernel("p", (ir.BufferParam(lt.float32, 4, True),), params, (o0,),
                       (ir.Store(0, Expr.of(o0), ir.const(1.0, lt.float32)),))
    assert ("p0: tl.int32, p1: tl.int32, p2: tl.int32, p3: tl.int32, p4: tl.int32, p5: tl.int32, p6: tl.int64, "
            "p7: tl.float16, p8: tl.float32)") in render(kernel).source
    x = lt.asarray(np.array([1, -2, 3], np.int8), device="cuda")
    assert_same(lambda t: t * -128 + 127, x)
    assert_same(lambda t: lt.where(t > 0, True, False) | (t.cast(lt.bool_) & True), x)


def test_large_kernels_index_in_int64():
    o0 = Var("o0", 3 * 2**30)
    kernel = ir.Kernel("big", (ir.BufferParam(uint8, 3 * 2**30, True),), (), (o0,),
                       (ir.Store(0, Expr.of(o0), ir.const(1, uint8)),))
    assert "x = pid.to(tl.int64) * 1024" in render(kernel).source
    small = ir.Kernel("small", (ir.BufferParam(uint8, 64, True),), (), (Var("o0", 64),),
                      (ir.Store(0, Expr.of(Var("o0", 64)), ir.const(1, uint8)),))
    assert "x = pid * 64" in render(small).source


# ---- scatters ----------------------------------------------------------------------------------------

def scatter_program(t: lt.Tensor):
    """The scatter that computes `t` (a cuda tensor), and its compiled program."""
    (kernel,) = (item.kernel for item in lt.schedule(t) if isinstance(item.kernel, ir.Scatter))
    return kernel, lt.devices()[1].compile(kernel)[0]


def test_a_scatter_that_may_write_an_element_twice_claims_it_for_its_last_write():
    """Updates run side by side on a GPU, where plain stores would keep any one of several writes: the base
    kernel sets a claim per element to -1, the claim kernel folds each update's position into the claim of
    the element it writes with an atomic max, the write kernel writes where the update holds the claim.
    Folding and distinct scatters are the base and the updates as they are."""
    x = lt.asarray(np.zeros(10, np.float32), device="cuda")
    x[lt.asarray(np.array([3, 3, 1]), device="cuda")] = 2.0
    kernel, program = scatter_program(x)
    base, claim, write = (step.source.source for step in program.steps)
    assert program.scratch == (ir.BufferParam(lt.int32, 10, scratch=True),)
    assert "tl.full([], -1, tl.int32)" in base and base.count("tl.store(") == 2
    # the claims follow the output, the tensor written into and the indexes (the value 2.0 is a parameter)
    assert claim.count("tl.atomic_max(tl.broadcast_to(b3 + ") == 1 and "tl.store(" not in claim
    assert "tl.load(tl.broadcast_to(b3 + " in write and write.count("tl.store(b") + write.count("tl.store(tl") == 1
    summed = lt.zeros(10, device="cuda").scatter_add(0, lt.asarray(np.array([3, 3, 1]), device="cuda"),
                                                     lt.ones(3, device="cuda"))
    ranked = lt.zeros(10, device="cuda")._scatter(0, lt.arange(3, device="cuda"), lt.ones(3, device="cuda"), None,
                                                  distinct=True)
    for t, fold in ((summed, "tl.atomic_add("), (ranked, "tl.store(")):
        kernel, program = scatter_program(t)
        assert [step.kernel for step in program.steps] == [kernel.base, kernel.updates] and not program.scratch
        assert fold in program.steps[1].source.source and "atomic_max" not in program.steps[1].source.source


@pytest.mark.parametrize("reduce", ["prod", "amax", "amin"])
@pytest.mark.parametrize("dtype", [lt.float32, lt.float64, lt.int32, lt.int16], ids=str)
def test_a_fold_with_no_atomic_is_a_compare_and_swap_loop(reduce, dtype, tiling):
    """A product, or a float's extremum (NaN-propagating: Triton's atomic max is not), folds by compare-and-swap
    on the element's bits; an integer's extremum is Triton's atomic. Many updates on few elements, in one
    program and across many (the tiny tiling), with lanes past the end of the updates (300 of them) masked off."""
    rng = np.random.default_rng(4)
    index, src = rng.integers(0, 3, 300), rng.uniform(-1.5, 1.5, 300)
    src[17] = np.nan if dtype.is_float else 0
    values = src.astype(dtype.name)
    got = lt.ones(3, device="cuda").cast(dtype).scatter_reduce(0, lt.asarray(index, device="cuda"),
                                                              lt.asarray(values, device="cuda"), reduce)
    want = np.ones(3, dtype.name)
    with np.errstate(invalid="ignore"):  # NumPy's note of the NaN
        {"prod": np.multiply, "amax": np.maximum, "amin": np.minimum}[reduce].at(want, index, values)
    source = scatter_program(got)[1].steps[-1].source.source
    check(got, want)
    swaps = reduce == "prod" or dtype.is_float
    assert ("tl.atomic_cas(" in source) == swaps and ("tl.atomic_m" in source) != swaps


@pytest.mark.parametrize("dtype", [lt.float32, lt.float64, lt.float16, lt.int8, lt.int64, lt.uint16, lt.bool_], ids=str)
def test_repeated_indexes_keep_the_last_write_as_numpy(dtype, tiling):
    """Many updates on few elements, in one program and across many (the tiny tiling); indexes negative,
    broadcast values, non-contiguous operands, and PyTorch's scatter along an inner axis."""
    rng = np.random.default_rng(7)
    x, vals = random_array((6, 9), dtype, seed=1), random_array((300,), dtype, seed=2)
    rows, cols = rng.integers(-6, 6, 300), rng.integers(0, 3, 300)

    def written(base: np.ndarray, index, value: np.ndarray) -> np.ndarray:
        want = base.copy()
        want[index] = value
        t = lt.asarray(base, device="cuda")
        t[tuple(lt.asarray(i, device="cuda") for i in index)] = lt.asarray(value, device="cuda")
        np.testing.assert_array_equal(t.numpy(), want)
        return want

    written(x, (rows, cols), vals)
    written(x, (np.array([1, 1, 1]),), random_array((3, 1), dtype, seed=3))  # each row thrice, broadcast
    written(x.T[::-1], (rows % 9, cols), vals[::-1])  # a flipped transpose; values read backwards
    index = rng.integers(0, 2, (5, 9))  # 5 updates for each of 2 rows of each column
    src = random_array((7, 9), dtype, seed=4)
    want = x.copy()
    for i, j in np.ndindex(index.shape):
        want[index[i, j], j] = src[i, j]
    got = lt.asarray(x, device="cuda").scatter(0, lt.asarray(index, device="cuda"), lt.asarray(src, device="cuda"))
    np.testing.assert_array_equal(got.numpy(), want)


@pytest.mark.parametrize("shape, axis, parts", [(lambda c: (8 * c + 5,), None, 8), (lambda c: (3, 4 * c), 1, 2),
                                                (lambda c: (16 * c, 2), 0, 4)], ids=["full", "rows", "columns"])
@pytest.mark.parametrize("op", ["sum", "max", "mean"])
def test_reductions_of_too_few_programs_are_split_across_the_grid(monkeypatch, op, shape, axis, parts):
    """The interpreter counts as one processor: a grid of fewer than PROGRAMS_PER_PROCESSOR programs is split
    into partial reductions of at least SPLIT_MIN_CHUNK elements (`shape` of it), a power of two of them."""
    runtime = runtime_module()
    monkeypatch.setattr(runtime, "_programs", {})
    shape = shape(runtime.SPLIT_MIN_CHUNK)
    arr = (np.random.default_rng(7).integers(-24, 24, shape) / 8).astype(np.float32)  # sums exact in any order
    if op == "max":
        arr.reshape(-1)[arr.size // 3] = np.nan
    (item,) = lt.schedule(getattr(lt.asarray(arr, device="cuda"), op)(axis))
    program, _ = runtime.compile_kernel(item.kernel, lazytensor.device.get_device("cuda").target)
    assert isinstance(program, runtime.StepsProgram)
    partials, _ = program.steps
    assert partials.source.grid == parts * render(item.kernel).grid
    assert_same(lambda x: getattr(x, op)(axis), arr)


def test_reductions_that_fill_the_grid_or_are_short_are_not_split(monkeypatch):
    runtime = runtime_module()
    monkeypatch.setattr(runtime, "_programs", {})
    target = lazytensor.device.get_device("cuda").target
    chunk = runtime.SPLIT_MIN_CHUNK
    for shape, axis in [((8, 2 * chunk), 1), ((2 * chunk - 1,), None), ((2, chunk), 1)]:
        (item,) = lt.schedule(lt.asarray(random_array(shape, lt.float32), device="cuda").sum(axis))
        assert isinstance(runtime.compile_kernel(item.kernel, target)[0], runtime.Program)
    x = lt.asarray(random_array((1 << 16,), lt.float32), device="cuda")
    (item,) = lt.schedule(x.var())  # a reduction of a reduction is left whole
    assert isinstance(runtime.compile_kernel(item.kernel, target)[0], runtime.Program)


# ---- contractions: the tl.dot template ----------------------------------------------------------------

def contraction_program(t: lt.Tensor):
    """The contraction that computes `t` (a cuda tensor) in one kernel, and its compiled program."""
    (item,) = lt.schedule(t)
    assert isinstance(item.kernel, ir.Contraction)
    return item.kernel, lt.devices()[1].compile(item.kernel)[0]


def cuda_tensors(*arrays: np.ndarray) -> list[lt.Tensor]:
    return [lt.asarray(a, device="cuda") for a in arrays]


def runtime_module():
    from lazytensor.kernels.triton import runtime  # imports triton: not at collection
    return runtime


# partial tiles at every edge, k not a multiple of the k block; 300 rows make 10 row tiles of 32, so the
# last group of GROUP_M row tiles is a short one; 5 x 400 has its sides swapped by the scheduler
MATMUL_SHAPES = [((37, 129), (129, 70)), ((300, 20), (20, 40)), ((100, 513), (513, 33)), ((5, 300), (300, 400))]


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
@pytest.mark.parametrize("shapes", MATMUL_SHAPES, ids=str)
def test_matmul_odd_sizes(shapes, dtype):
    a, b = data(shapes[0], dtype, 1), data(shapes[1], dtype, 2)
    assert_same(lambda x, y: x @ y, a, b, rtol=0.0 if dtype == lt.float32 else 1e-12)
    x, y = cuda_tensors(a, b)
    contraction_program(x @ y)  # one kernel, the template's


@pytest.mark.parametrize("dtype", [lt.float32, lt.float64], ids=str)
@pytest.mark.parametrize("shapes", [((1, 20), (20, 30)), ((20, 30), (30, 1)), ((1, 5), (5, 1)), ((7,), (7, 5)),
                                    ((3, 1, 7), (3, 7, 4))], ids=str)
def test_products_one_row_or_one_column_wide(monkeypatch, shapes, dtype):
    """A product of one row or one column (or both), which the scheduler takes to the template where a size
    changed (`lowering.contraction_axes`), here forced there: the product's index then leaves out m's or n's
    variable, and its store is broadcast to the tile (it was a pointer of one row stored from a whole tile, which
    Triton refuses). Plain and with an epilogue, against the LLVM backend's."""
    modes.small_products_on_the_template(monkeypatch.setattr)
    a, b = data(shapes[0], dtype, 1), data(shapes[1], dtype, 2)
    bias = data(shapes[1][-1:], dtype, 3)
    for fn in (lambda x, y: x @ y, lambda x, y: (x @ y + lt.asarray(bias, device=x.device)).relu()):
        assert_same(fn, a, b, rtol=0.0 if dtype == lt.float32 else 1e-12)
        contraction_program(fn(*cuda_tensors(a, b)))


@pytest.mark.parametrize("fn", [lambda x, y: x.T @ y, lambda x, y: x[::2, 3:].T @ y[::2, :40],
                                lambda x, y: x.flip(0).T @ y[:, ::-1], lambda x, y: (x * 0.5 + 1).T @ y.cast(lt.int32)],
                         ids=["transposed", "sliced", "flipped", "prologue"])
def test_matmul_transposed_and_sliced_inputs(fn):
    """The operands' views and elementwise prologue are evaluated in the tile loads."""
    assert_same(fn, data((90, 45), seed=1), data((90, 50), seed=2))


@pytest.mark.parametrize("a_shape,b_shape", [((3, 40, 64), (3, 64, 48)), ((2, 1, 20, 50), (4, 50, 33)),
                                             ((6, 30, 70), (70, 40)), ((70,), (3, 70, 64))], ids=str)
def test_batched_and_broadcast_matmul(a_shape, b_shape):
    assert_same(lambda x, y: x @ y, data(a_shape, seed=1), data(b_shape, seed=2))


@pytest.mark.parametrize("t", [1, 7, 30, 31])
def test_a_linear_layer_over_a_batch_of_sequences(t):
    """`relu(x @ w + b) + r` over `x` of (3, t, 70), every other column of a wider array: its epilogue's loops
    merged into the product's rows, 3*t (`lowering`), as on the CPU, where that makes it generic over `t`."""
    assert_same(lambda x, w, b, r: (x[..., ::2] @ w + b).relu() + r, data((3, t, 140), seed=1),
                data((70, 40), seed=2), data((40,), seed=3), data((3, t, 40), seed=4))


def test_bias_and_relu_are_fused_into_the_tile_store(monkeypatch):
    runtime = runtime_module()
    monkeypatch.setattr(runtime, "_programs", {})  # compiled by this test, into this test's cache directory
    a, b, bias = data((64, 96), seed=1), data((96, 80), seed=2), data((80,), seed=3)
    fn = lambda x, y, z: ((x @ y) + z).relu()
    assert_same(fn, a, b, bias)
    kernel, program = contraction_program(fn(*cuda_tensors(a, b, bias)))
    assert kernel.epilogue is not None and program.epilogue is None and not program.packs
    (step,) = program.parts()
    assert "its epilogue fused" in step.source.source and step.source.source.count("tl.store(") == 1
    assert step.path.parent == runtime.cache_dir() and step.path.read_text() == step.source.source


def test_epilogues_are_fused_or_run_after_the_product():
    """An epilogue elementwise over C is fused, also where it writes C transposed or as bytes; one that
    reduces C, broadcasts it or pads it runs as its own kernel on C's scratch buffer."""
    a, b = data((64, 96), seed=1), data((96, 80), seed=2)
    for fn, fused in ((lambda x, y: (x @ y).T * 0.5, True), (lambda x, y: (x @ y) > 1, True),
                      (lambda x, y: (x @ y).sum(axis=0), False), (lambda x, y: (x @ y)[None].expand(2, 64, 80), False),
                      (lambda x, y: (x @ y).pad(((1, 0), (0, 2))), False)):
        assert_same(fn, a, b)
        _, program = contraction_program(fn(*cuda_tensors(a, b)))
        assert (program.epilogue is None) == fused


def test_conv2d_is_one_kernel_with_its_windows_in_the_tile_loads():
    """An implicit GEMM: the input windows are the left operand's prologue, and bias + relu on the NCHW
    output (a transpose of C) are fused into the store."""
    x, w, bias = data((2, 8, 12, 12), seed=1), data((16, 8, 3, 3), seed=2), data((16,), seed=3)
    fn = lambda x, w, b: lt.nn.functional.conv2d(x, w, b, padding=1).relu()
    assert_same(fn, x, w, bias)
    _, program = contraction_program(fn(*cuda_tensors(x, w, bias)))
    assert program.epilogue is None and not program.packs


def test_operands_with_a_reduction_are_packed_first():
    """An operand that sums along k, `x.sum(1)` of a (m, k, j) x: the tile loop would recompute the sums for
    every k block. (A reduction along a row of the operand, softmax(x) @ w's max and sum, is written by a
    kernel of its own before: `schedule.py`, rule 5.)"""
    a, w = data((70, 45, 3), seed=1), data((45, 64), seed=2)
    fn = lambda x, y: x.sum(2) @ y
    assert_same(fn, a, w, rtol=1e-6)
    _, program = contraction_program(fn(*cuda_tensors(a, w)))
    assert len(program.packs) == 1 and "_pack_a" in program.packs[0].name
    s, w = cuda_tensors(data((70, 45), seed=1), data((45, 64), seed=2))
    reductions, product = lt.schedule(s.softmax(-1) @ w)
    assert isinstance(reductions.kernel, ir.Kernel) and isinstance(product.kernel, ir.Contraction)
    assert not lt.devices()[1].compile(product.kernel)[0].packs


def test_the_cuda_schedule_uses_the_template_for_float_matmuls(monkeypatch):
    # no history: a product whose structure was scheduled at other sizes counts its sizes as large (the next may be)
    monkeypatch.setattr(importlib.import_module("lazytensor.schedule"), "_shapes_seen", {})
    assert lt.devices()[1].contraction_dtypes == {d: d for d in (lt.float32, lt.float64, lt.float16, lt.bfloat16)}
    x, y = cuda_tensors(data((64, 96)), data((96, 80)))
    assert [type(item.kernel) for item in lt.schedule(x @ y)] == [ir.Contraction]
    integers = x.cast(lt.int64) @ y.cast(lt.int64)  # casts no tensor holds: they fuse into the product's loop
    assert [type(item.kernel) for item in lt.schedule(integers)] == [ir.Kernel], "integers sum exactly in a loop"
    assert [type(item.kernel) for item in lt.schedule(x[:3, :5] @ y[:5, :4])] == [ir.Kernel], "too small"


def test_tf32_switch_changes_the_source_and_the_cache_key(monkeypatch):
    monkeypatch.setattr(gemm, "_allow_tf32", None)  # restored after the test
    monkeypatch.delenv("LT_ALLOW_TF32", raising=False)
    device = lt.devices()[1]
    x, y = cuda_tensors(data((64, 96)), data((96, 80)))
    (item,) = lt.schedule(x @ y)
    assert not lt.tf32_allowed()
    exact, _ = device.compile(item.kernel)
    lt.set_allow_tf32(True)
    fast, compiled = device.compile(item.kernel)
    assert compiled and fast is not exact
    assert 'input_precision="ieee"' in exact.parts()[0].source.source
    assert 'input_precision="tf32"' in fast.parts()[0].source.source
    lt.set_allow_tf32(None)  # back to the environment
    monkeypatch.setenv("LT_ALLOW_TF32", "1")
    assert lt.tf32_allowed() and device.compile(item.kernel) == (fast, False)
    lt.set_allow_tf32(False)
    assert device.compile(item.kernel) == (exact, False)
    lt.set_allow_tf32(True)
    (item64,) = lt.schedule(x.cast(lt.float64) @ y.cast(lt.float64))
    assert 'input_precision="ieee"' in device.compile(item64.kernel)[0].parts()[0].source.source, "no TF32 in float64"


def test_autotune_times_each_candidate_once_per_shape(monkeypatch):
    runtime = runtime_module()
    small, big = gemm.GemmConfig(16, 16, 16, 4, 1), gemm.GemmConfig(32, 32, 16, 4, 1)
    monkeypatch.setattr(runtime, "candidate_configs", lambda c, interpreted: [big, small])
    monkeypatch.setattr(runtime, "_tuned", {})
    monkeypatch.setattr(runtime, "_programs", {})
    timed: list[str] = []

    def seconds(program, table, params) -> float:  # the interpreter's timings would mean nothing
        timed.append(program.source.name)
        return 1.0 if program.source.name.endswith(str(small)) else 2.0

    monkeypatch.setattr(runtime, "_seconds_per_launch", seconds)
    # each shape specialized: a product of this structure at other sizes in an earlier test would make this
    # one's kernel generic, tuned once for all sizes, and the epilogue's (specialized) tuned again
    monkeypatch.setenv("LT_SYMBOLIC", "0")
    a, b, bias = data((48, 40), seed=1), data((40, 80), seed=2), data((80,), seed=3)
    assert_same(lambda x, y: x @ y, a, b)
    assert len(timed) == 2 and list(runtime._tuned.values()) == [small]
    fn = lambda x, y, z: (x @ y + z).relu()
    assert_same(fn, a, b, bias)
    assert len(timed) == 2, "a contraction of a shape already timed compiles the winner only"
    _, program = contraction_program(fn(*cuda_tensors(a, b, bias)))
    assert [step.source.name.endswith(str(small)) for step in program.parts()] == [True]


@pytest.fixture(params=[*range(len(gemm._TILES)), "tuned"], ids=lambda p: f"tiles{p}" if p != "tuned" else p)
def gpu_tiles(request, monkeypatch) -> None:
    """Run the tl.dot template in the interpreter as a GPU does: in one of the configurations a GPU times
    (`_TILES`, each block cut to the matrix; the last for a matrix that has fewer), or timing them all, each
    launched several times on the call's own buffers before the fastest runs once more."""
    runtime = runtime_module()

    def configs(c: ir.Contraction, interpreted: bool) -> list[gemm.GemmConfig]:
        every = gemm.candidate_configs(c, interpreted=False)
        return every if request.param == "tuned" else [every[min(request.param, len(every) - 1)]]

    monkeypatch.setattr(runtime, "candidate_configs", configs)
    monkeypatch.setattr(runtime, "_programs", {})
    monkeypatch.setattr(runtime, "_tuned", {})


GPU_TILED = {  # name: (fn, operand shapes, dtype, rtol)
    "edges": (lambda x, y: x @ y, ((37, 129), (129, 70)), lt.float32, 0.0),
    "short_group_small_k": (lambda x, y: x @ y, ((300, 20), (20, 40)), lt.float32, 0.0),
    "float64": (lambda x, y: x @ y, ((100, 513), (513, 33)), lt.float64, 1e-12),
    "float16": (lambda x, y: x.cast(lt.float16) @ y.cast(lt.float16), ((37, 129), (129, 70)), lt.float32, 0.0),
    "bfloat16": (lambda x, y: x.cast(lt.bfloat16) @ y.cast(lt.bfloat16), ((37, 129), (129, 70)), lt.float32, 0.0),
    "batched": (lambda x, y: x @ y, ((2, 1, 20, 50), (4, 50, 33)), lt.float32, 0.0),
    "fused_epilogue": (lambda x, y, z: ((x @ y) + z).relu(), ((64, 96), (96, 80), (80,)), lt.float32, 0.0),
    "transposed_epilogue": (lambda x, y: (x @ y).T * 0.5, ((64, 96), (96, 80)), lt.float32, 0.0),
    "epilogue_apart": (lambda x, y: (x @ y).sum(axis=0), ((64, 96), (96, 80)), lt.float32, 0.0),
    "packed_operand": (lambda x, y: x.sum(2) @ y, ((70, 45, 3), (45, 64)), lt.float32, 1e-6),
    "conv2d": (lambda x, w, b: lt.nn.functional.conv2d(x, w, b, padding=1).relu(),
               ((2, 8, 12, 12), (16, 8, 3, 3), (16,)), lt.float32, 0.0),
}


@pytest.mark.parametrize("case", list(GPU_TILED))
def test_contractions_in_every_gpu_tiling(gpu_tiles, case):
    """The interpreter runs one tiling, a GPU the fastest of several: each of those gives the CPU's results,
    edges (wrap-around rows and columns, k masked past its end, short groups of row tiles), 16-bit and
    float64 operands, batches, fused and separate epilogues and packed operands included."""
    fn, shapes, dtype, rtol = GPU_TILED[case]
    assert_same(fn, *(data(shape, dtype, seed=i) for i, shape in enumerate(shapes)), rtol=rtol)


def test_wide_contractions_index_in_int64():
    vb, vm, vn, vk = Var("b", 1), Var("m", 70000), Var("n", 64), Var("k", 40000)
    f32 = lt.float32
    bufs = (ir.BufferParam(f32, 70000 * 64, True), ir.BufferParam(f32, 70000 * 40000), ir.BufferParam(f32, 40000 * 64))
    c = ir.Contraction("", bufs, (), (vb, vm, vn, vk), ir.load(1, f32, Expr.of(vm) * 40000 + vk, ()),
                       ir.load(2, f32, Expr.of(vk) * 64 + vn, ()), None)
    source = gemm.render_gemm(gemm.plan(c), gemm.INTERPRETER_CONFIG).source
    assert "pid = tl.program_id(0).to(tl.int64)" in source and "kk = (k0 + tl.arange(0, 16)).to(tl.int64)" in source


# Compiling for an sm_90 GPU needs no GPU: a subprocess, as the tests run Triton interpreted. `ptx(source, buffers,
# params, options)` compiles a rendered source whose function takes `buffers` (pointers) and `params` (scalars).
SM90_PRELUDE = """
import importlib.util, re, tempfile
import numpy as np, triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
import lazytensor as lt
from lazytensor.kernels.legalize import legalize
from lazytensor.kernels.triton import gemm
from lazytensor.kernels.triton.render import NATIVE, memory_dtype, render

TYPES = {"bool": "i1", "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64", "uint8": "u8", "uint16": "u16",
         "uint32": "u32", "uint64": "u64", "float16": "fp16", "bfloat16": "bf16", "float32": "fp32", "float64": "fp64"}

def ptx(src, buffers, params, options):
    path = tempfile.mkdtemp() + "/kernel.py"
    open(path, "w").write(src.source)
    spec = importlib.util.spec_from_file_location("kernel", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    signature = {f"b{s}": "*" + TYPES[memory_dtype(b.dtype).name] for s, b in buffers}
    signature.update({f"p{i}": TYPES[d.name] for i, d in enumerate(params)})
    return triton.compile(ASTSource(getattr(module, src.name), signature), target=GPUTarget("cuda", 90, 32),
                          options=options).asm["ptx"]

def kernels_ptx(*tensors):
    out = []
    for item in lt.schedule(*tensors):
        legal = legalize(item.kernel, NATIVE)  # as compile_kernel renders it
        src = render(legal)
        out.append(ptx(src, list(enumerate(legal.buffers)), legal.params,
                       {"num_warps": src.num_warps, "enable_fp_fusion": False}))
    return "\\n".join(out)
"""

SM90_GEMM_CHECK = SM90_PRELUDE + """
def gemm_ptx(t, precision):
    *_, item = lt.schedule(t)  # (a softmax's max and sum first)
    plan = gemm.plan(legalize(item.kernel, NATIVE))  # as compile_kernel renders it
    src = gemm.render_gemm(plan, gemm.candidate_configs(item.kernel, False)[-1], precision)
    options = {"num_warps": src.num_warps, "num_stages": src.num_stages, "enable_fp_fusion": True}
    return ptx(src, [(s, plan.buffers[s]) for s in src.slots], item.kernel.params, options)

x, w, bias = (lt.asarray(np.ones(s, np.float32)) for s in ((100, 513), (513, 70), (70,)))
assert "fma.rn.f32" in gemm_ptx(((x @ w) + bias).relu(), "ieee")
assert "tf32.tf32" in gemm_ptx(x.T.T @ w * 0.5, "tf32")
assert ".f64.f64" in gemm_ptx(x.cast(lt.float64).softmax(-1) @ w.cast(lt.float64), "ieee")
"""

# Unsigned arithmetic compiles to the unsigned instructions (the interpreter computes with NumPy, whatever
# Triton would make of the source): division, remainder, comparisons, conversions to floats; a parameter of
# 2**64 - 1 and constants beyond int64's range are uint64 ones.
SM90_UNSIGNED_CHECK = SM90_PRELUDE + """
x, y = (lt.asarray(np.arange(k, 63 + k, dtype=np.uint64).reshape(7, 9)) for k in (1, 0))  # masked lanes
f = lt.asarray(np.linspace(-3e19, 3e19, 63).reshape(7, 9))
u, h = lt.asarray(np.arange(63, dtype=np.uint32)), lt.asarray(np.arange(63, dtype=np.uint16))
code = kernels_ptx((x // y) % (y + 3) + (2**64 - 1), x < y, ~x * -x, x.cast(lt.float32), f.cast(lt.uint64), x.max(1),
                   x.min(0), x.sum(0), (u // (u + 3)) > (u % (u + 7)), (~h) * h < 5, h.sum(), h.min(), u.cast(lt.float64))
for bits in (16, 32, 64):  # an ordered comparison of unsigned values (LLVM picks which of the four)
    assert re.search(f"setp\\\\.(lt|le|gt|ge)\\\\.u{bits}", code), bits
for needle in ("div.u64", "rem.u64", "cvt.rn.f32.u64", "div.u32", "rem.u32", "cvt.rn.f64.u32"):
    assert needle in code, needle
by_seven = kernels_ptx(u // 7, u % 7)  # a Python divisor is a constant of the kernel: a multiply, no division
assert "mul.hi." in by_seven and not re.search(r"\\b(div|rem)\\.[su]", by_seven), by_seven
"""


# The claim kernels of a scatter (kernels/claim.py): the claim is an atomic max of 32-bit words, the write a
# plain store of a byte where the update holds the claim.
SM90_SCATTER_CHECK = SM90_PRELUDE + """
from lazytensor.kernels import ir
from lazytensor.kernels.claim import claim_scatter
x = lt.zeros(10, dtype=lt.int8)
x[lt.asarray(np.array([3, 3, 1]))] = lt.asarray(np.array([1, 2, 3], np.int8))
(scatter,) = (item.kernel for item in lt.schedule(x) if isinstance(item.kernel, ir.Scatter))
code = []
for k in claim_scatter(scatter):
    legal = legalize(k, NATIVE)  # as compile_kernel renders it
    src = render(legal)
    code.append(ptx(src, list(enumerate(legal.buffers)), legal.params,
                    {"num_warps": src.num_warps, "enable_fp_fusion": False}))
base, claim, write = code
assert "st.global.b32" in base and "atom" not in base
assert re.search(r"atom\\.global\\.[a-z_.]*max\\.s32", claim) and "st.global" not in claim, claim
assert "st.global.b8" in write and "atom" not in write
"""


# The column-to-image kernels of convolutions' input gradients (strided, padded, float32 and float64) divide
# small numbers in their indexes: those stay 32-bit arithmetic, never lanes of 8 or 16 bits packed in a register
# (what ptxas compiled to wrong addresses on sm_90; see kernels/triton/render.py).
SM90_NARROW_CHECK = SM90_PRELUDE + """
grads = []
for dtype, xs, ws, stride, padding in ((np.float64, (3, 8, 7), (4, 3, 3, 3), 2, 1),
                                       (np.float32, (2, 4, 9, 11), (8, 4, 3, 2), 3, 0),
                                       (np.float64, (2, 1, 11, 10), (2, 1, 5, 5), 3, 2)):
    x = lt.asarray(np.ones(xs, dtype)).requires_grad_()
    out = lt.nn.functional.conv2d(x, lt.asarray(np.ones(ws, dtype)), stride=stride, padding=padding)
    out.backward(lt.ones_like(out))
    grads.append(x.grad)
code = kernels_ptx(*grads)
assert "ld.global" in code and "div.s" not in code
narrow = re.findall(r"\\b(?:add|sub|mul|mad|cvt)\\.[a-z.]*(?:s16x2|[su]16|[su]8)\\b", code)
assert not narrow, sorted(set(narrow))
"""


needs_sm90 = pytest.mark.skipif(importlib.util.find_spec("triton.backends.nvidia") is None,
                                reason="no CUDA backend in triton")


def compile_for_sm90(script: str) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("TRITON_INTERPRET", "LT_DEVICE")}
    subprocess.run([sys.executable, "-c", script], check=True, cwd="/", env=env)


@needs_sm90
def test_the_gemm_source_compiles_for_sm90():
    """Triton compiles for a GPU it does not have: float32 exact and TF32, float64, a fused epilogue."""
    compile_for_sm90(SM90_GEMM_CHECK)


SM90_SUBNORMALS_CHECK = SM90_PRELUDE + """
from lazytensor.kernels.triton import runtime
x = lt.asarray(np.linspace(-3, 3, 12, dtype=np.float32))
(item,) = lt.schedule(lt.ceil(x) + lt.floor(x * 3) + lt.sqrt(x * x))
legal = legalize(item.kernel, NATIVE)
src = render(legal)
code = ptx(src, list(enumerate(legal.buffers)), legal.params, runtime.Program(legal, src, None, None, None).options)
assert "cvt.rpi.f32.f32" in code and ".ftz" not in code, code
"""


@needs_sm90
def test_subnormal_numbers_are_not_flushed_to_zero_on_sm90():
    """Triton compiles libdevice's functions flushing subnormals by default (ceil(1e-40) would be 0.0)."""
    compile_for_sm90(SM90_SUBNORMALS_CHECK)


@needs_sm90
def test_unsigned_kernels_compile_for_sm90_to_unsigned_instructions():
    compile_for_sm90(SM90_UNSIGNED_CHECK)


@needs_sm90
def test_scatter_claim_kernels_compile_for_sm90_to_an_atomic_max_and_plain_stores():
    compile_for_sm90(SM90_SCATTER_CHECK)


@needs_sm90
def test_index_divisions_compile_for_sm90_to_32_bit_arithmetic():
    compile_for_sm90(SM90_NARROW_CHECK)


def test_index_divisions_are_opaque_to_llvm_on_a_gpu_only():
    """On a GPU the operand of an index's division or modulo goes through an identity in inline assembly
    (see kernels/triton/render.py) where it fits in 16 bits; an affine index does not, nor a wider operand;
    the interpreter, which runs no assembly, gets plain arithmetic."""
    o0 = Var("o0", 12)
    bufs = (ir.BufferParam(lt.float32, 12, True), ir.BufferParam(lt.float32, 24))
    index = (Expr.of(o0) + 1) // 2 * 3 + Expr.of(o0) % 3
    gather = ir.Kernel("g", bufs, (), (o0,), (ir.Store(0, Expr.of(o0), ir.load(1, lt.float32, index, ())),))
    gpu, interpreted = render(gather).source, render(gather, interpreted=True).source
    assert gpu.count('tl.inline_asm_elementwise("mov.b32 $0, $1;"') == 2 and "tl.inline_asm" not in interpreted
    copy = ir.Kernel("c", bufs, (), (o0,), (ir.Store(0, Expr.of(o0), ir.load(1, lt.float32, Expr.of(o0) * 2, ())),))
    assert render(copy).source == render(copy, interpreted=True).source
    wide = Var("o0", 2**16)
    halves = ir.Kernel("h", (ir.BufferParam(lt.float32, 2**16, True), ir.BufferParam(lt.float32, 2**15)), (),
                       (wide,), (ir.Store(0, Expr.of(wide), ir.load(1, lt.float32, Expr.of(wide) // 2, ())),))
    assert render(halves).source == render(halves, interpreted=True).source


# ---- caching ---------------------------------------------------------------------------------------

def test_kernels_compile_once_and_are_imported_from_the_cache_directory(tmp_path, monkeypatch):
    monkeypatch.setenv("LT_CACHE_DIR", str(tmp_path))
    x = lt.asarray(np.arange(7, dtype=np.float32), device="cuda")
    lt.reset_stats()
    (x * 3.5 - 1).realize()
    assert lt.stats().kernels_compiled == 1
    (x * 2.5 - 4).realize()  # same body, other parameters
    (lt.asarray(np.ones(7, np.float32), device="cuda") * 3 - 2).realize()
    assert lt.stats().kernels_compiled == 1 and lt.stats().kernels_launched == 3
    (item,) = lt.schedule(x * 1.5 - 2)
    program, compiled = lt.devices()[1].compile(item.kernel)
    assert not compiled and program.path.parent == tmp_path / "triton"
    assert program.fn.fn.__code__.co_filename == str(program.path)
    assert program.path.read_text() == program.source.source and "@triton.jit" in program.source.source


# ---- devices -------------------------------------------------------------------------------------------

def test_devices_lists_the_interpreter_and_the_default_device_follows_lt_device(monkeypatch):
    names = [(d.name, d.backend) for d in lt.devices()]
    assert names == [("cpu", "llvm"), ("cuda:0", "triton-interpreter")]
    assert lt.ones(2).device == "cpu"
    monkeypatch.setenv("LT_DEVICE", "cuda")
    assert lt.ones(2).device == "cuda:0" and (lt.arange(3) * 2).tolist() == [0, 2, 4]


def test_to_copies_between_devices():
    x = np.arange(12, dtype=np.float64).reshape(3, 4)
    c = lt.asarray(x, device="cuda")
    assert c.to("cuda") is c and c.to("cuda:0") is c
    back = (c.T * 2).to("cpu")
    assert back.device == "cpu" and back.shape == (4, 3)
    np.testing.assert_array_equal(back.numpy(), x.T * 2)
    again = back.to(lt.devices()[1], lt.float32)
    assert again.device == "cuda:0" and again.dtype == lt.float32
    np.testing.assert_array_equal(again.numpy(), x.T * 2)


def test_a_pickled_or_copied_tensor_stays_on_its_device():
    x = lt.asarray(np.arange(12, dtype=np.float32).reshape(3, 4), device="cuda").T * 2
    for y in (pickle.loads(pickle.dumps(x)), copy.deepcopy(x)):
        assert y.device == "cuda:0" and y.node.realized and y.node is not x.node
        np.testing.assert_array_equal(y.numpy(), x.numpy())


def test_synchronize_waits_on_the_named_device(monkeypatch):
    target = lazytensor.device.get_device("cuda").target
    waited = []
    monkeypatch.setattr(target, "synchronize", lambda: waited.append(True))
    y = (lt.ones(4, device="cuda") * 3).realize()
    lt.synchronize("cuda")
    assert waited == [True]
    lt.synchronize()  # the default device is the CPU, whose kernels have run when realize returns
    assert waited == [True] and y.tolist() == [3.0] * 4
    monkeypatch.setenv("LT_DEVICE", "cuda:0")
    lt.synchronize()
    assert waited == [True, True]
    with pytest.raises(lt.DeviceError, match="'cuda:3' is not available"):
        lt.synchronize("cuda:3")


def test_ops_mixing_devices_name_both():
    a, b = lt.ones(3), lt.ones(3, device="cuda")
    with pytest.raises(lt.DeviceError, match="different devices: cpu and cuda:0"):
        a + b
    with pytest.raises(lt.DeviceError, match="cuda:0 and cpu"):
        lt.where(b > 0, b, a)


def test_no_silent_fallback(monkeypatch):
    with pytest.raises(lt.DeviceError, match="'cuda:1' is not available: .*one device, cuda:0"):
        lt.ones(3, device="cuda:1")
    monkeypatch.setattr(targets, "_storage_provider", None)
    monkeypatch.setattr(lazytensor.device, "_cuda", {})  # forget the device opened with storage
    with pytest.raises(lt.DeviceError, match="'cuda:0' is not available: .*no storage provider"):
        lt.zeros(2, device="cuda")
    monkeypatch.delenv("TRITON_INTERPRET")
    try:
        gpus = cuda.device_count()
    except cuda.CudaError:
        gpus = 0
    if gpus == 0:
        with pytest.raises(lt.DeviceError, match="'cuda:0' is not available"):
            lt.ones(3, device="cuda")
        monkeypatch.setenv("LT_DEVICE", "cuda")
        with pytest.raises(lt.DeviceError, match="cuda:0"):
            lt.ones(3)
        assert [d.name for d in lt.devices()] == ["cpu"]


def test_missing_triton_is_a_device_error(monkeypatch):
    find_spec = targets.importlib.util.find_spec
    monkeypatch.setattr(targets.importlib.util, "find_spec",
                        lambda name, *args: None if name == "triton" else find_spec(name, *args))
    with pytest.raises(targets.Unavailable, match="triton is not installed"):
        targets.open_target(0)


def test_the_cpu_path_does_not_import_triton():
    code = ("import sys, lazytensor as lt; (lt.ones(3) + 1).realize(); lt.devices(); "
            "assert 'triton' not in sys.modules, 'triton was imported'")
    subprocess.run([sys.executable, "-c", code], check=True, cwd="/")


# ---- the CUDA runtime, without a GPU ---------------------------------------------------------------

def test_caching_allocator_reuses_blocks_by_size():
    live: dict[int, int] = {}
    freed: list[int] = []

    def malloc(nbytes: int) -> int:
        if sum(live.values()) + nbytes > 8192:
            raise cuda.CudaError("out of memory", cuda.CUDA_ERROR_OUT_OF_MEMORY)
        ptr = 4096 * (len(live) + len(freed) + 1)
        live[ptr] = nbytes
        return ptr

    def free(ptr: int) -> None:
        freed.append(ptr)
        del live[ptr]

    allocator = cuda.CachingAllocator(malloc, free)
    a, size_a = allocator.allocate(100)
    assert size_a == 512
    allocator.release(a, size_a)
    b, size_b = allocator.allocate(300)  # same rounded size: the cached block comes back
    assert (b, size_b) == (a, 512) and len(live) == 1
    c, size_c = allocator.allocate(2500)
    assert size_c == 2560  # four sizes per power of two
    allocator.release(c, size_c)
    _, size_d = allocator.allocate(7000)  # does not fit beside the cached block: the cache is emptied first
    assert freed == [c] and size_d == 7168 and allocator.cached_bytes == 0
    assert allocator.allocated_bytes == 512 + 7168


def test_a_gpu_launch_goes_through_the_launcher_compiled_for_its_specialization():
    """Past its first launch of each specialization, a program launches through the launcher of Triton's
    compiled kernel, with the target's stream: no JITFunction.run, whose binding and look-ups cost tens of us."""
    runtime = runtime_module()
    launches: list[tuple] = []
    compiles: list[tuple] = []

    class Compiled:
        def __init__(self, args: tuple):
            self.args = args

        def __getitem__(self, grid):
            return lambda *args, stream: launches.append((grid, self.args, args, stream))

    class Fn:
        def warmup(self, *args, grid, **options):
            compiles.append((*(a.data_ptr() % 16 if hasattr(a, "data_ptr") else a for a in args),))
            return Compiled(compiles[-1])

        def __getitem__(self, grid):
            raise AssertionError("launched through JITFunction.run")

    class GPUTarget(targets.Target):  # a CudaTarget's launch path, without a device
        key, interpreted, processors = "fake", False, 1
        stream = 7
        describe = alloc = upload = download = synchronize = None
        kernel_arg = staticmethod(targets.DevicePointer)
        launching = staticmethod(contextlib.nullcontext)

        def activate(self) -> None:
            launches.append("activate")

    kernel = ir.Kernel("k", (ir.BufferParam(uint8, 4, True),), (int64, lt.bool_), (Var("o0", 4),),
                       (ir.Store(0, Expr.of(Var("o0", 4)), ir.const(1, uint8)),))
    program = runtime.Program(kernel, render(kernel), Path("k.py"), Fn(), GPUTarget())
    program.compile()
    assert compiles == [(0, 0, 0)]
    calls = [(4096, 32, True), (4112, 48, True), (4100, 32, True), (4096, 1, True), (0, 2**40, True),
             (4096, 33, True), (4096, 32, False), (4100, 16, True)]
    for ptr, n, flag in calls:
        program([ptr], [n, flag])
    # aligned or not, 1 or not, 16 dividing it or not, 32 or 64 bits, a bool or not: a compiled kernel each
    assert compiles[1:] == [(0, 32, 1), (4, 32, 1), (0, 1, 1), (0, 2**40, 1), (0, 33, 1), (0, 32, 0)]
    assert launches[::2] == ["activate"] * len(calls)
    assert [(grid, stream) for grid, _, _, stream in launches[1::2]] == [((1, 1, 1), 7)] * len(calls)
    assert [spec for _, spec, _, _ in launches[1::2]] == [compiles[i] for i in (1, 1, 2, 3, 4, 5, 6, 2)]
    assert [args[1:] for _, _, args, _ in launches[1::2]] == [(n, int(flag)) for _, n, flag in calls]


def test_without_a_driver_cuda_raises_a_clear_error():
    try:
        cuda.driver()
    except cuda.CudaError as e:
        assert "libcuda.so.1" in str(e) and e.code is None
    else:
        pytest.skip("this machine has an NVIDIA driver")


# ---- float16 and bfloat16 ----------------------------------------------------------------------------

HALF_SPECIALS = np.array([0.0, -0.0, NAN, INF, -INF, 1.0, 65504.0, 65519.996, 65520.0, 3.39e38, -3.4e38,
                          6.1e-05, 5.9604645e-08, 2.98e-08, 1e-40, 1 + 2 ** -11, 1 + 3 * 2 ** -11, 1 + 2 ** -8,
                          1 + 3 * 2 ** -8, 0.1, -1 / 3], np.float32)


@pytest.mark.parametrize("dtype", [lt.float16, lt.bfloat16], ids=str)
def test_half_casts_agree_with_llvm_bit_for_bit(dtype):
    """Rounding from float32 (and float64, through float32) and widening back; the bits of every finite
    value, and NaN for NaN."""
    random_bits = np.random.default_rng(0).integers(0, 2 ** 32, 4000, dtype=np.uint64).astype(np.uint32)
    values = np.concatenate([HALF_SPECIALS, random_bits.view(np.float32)])
    for fn in (lambda x: x.cast(dtype).float(), lambda x: x.double().cast(dtype).double(),
               lambda x: x.cast(dtype).cast(lt.int64) * 0, lambda x: x.cast(dtype).cast(lt.bfloat16).float()):
        cpu, gpu = both(fn, values)
        np.testing.assert_array_equal(gpu, cpu)
        np.testing.assert_array_equal(np.signbit(gpu)[~np.isnan(cpu)], np.signbit(cpu)[~np.isnan(cpu)])


@pytest.mark.parametrize("dtype", [lt.float16, lt.bfloat16], ids=str)
def test_half_math_and_reductions_compute_in_float32(dtype, tiling):
    eps = lt.finfo(dtype).eps
    a = data((9, 70), seed=3)
    assert_same(lambda x: x.cast(dtype).exp().float(), a, rtol=eps)
    assert_same(lambda x: (x.cast(dtype).tanh() * 2 + x.cast(dtype).erf()).float(), a, rtol=eps)
    assert_same(lambda x: x.cast(dtype).softmax(-1).float(), a, rtol=eps)
    assert_same(lambda x: x.cast(dtype).sum(1).float(), a, rtol=eps)
    assert_same(lambda x: x.cast(dtype).max(0).float(), a)


@pytest.mark.parametrize("dtype", [lt.float16, lt.bfloat16], ids=str)
def test_half_matmul_feeds_tl_dot_16_bit_tiles(dtype):
    """The operands reach tl.dot in their own dtype (bfloat16 is widened only for the interpreter, which
    multiplies its raw bits), the product accumulates in float32 and is rounded once where it is stored."""
    import torch
    a, b = data((37, 129), seed=1), data((129, 70), seed=2)
    x, y = (lt.asarray(v, device="cuda").cast(dtype).realize() for v in (a, b))
    c, _ = contraction_program(x @ y)
    assert c.dtype is dtype and c.buffers[0].dtype is dtype
    plan = gemm.plan(c)
    config = gemm.INTERPRETER_CONFIG
    gpu_source = gemm.render_gemm(plan, config, gemm.input_precision(c)).source
    # as every cast rounds: bfloat16 by bits (legalized), float16 by Triton's conversion
    rounded = "acc.to(tl.int32, bitcast=True)" if dtype == lt.bfloat16 else "acc.to(tl.float16)"
    assert "out_dtype=tl.float32" in gpu_source and rounded in gpu_source
    widened = "at.to(tl.int16, bitcast=True)"
    assert widened not in gpu_source
    interpreted = gemm.render_gemm(plan, config, gemm.input_precision(c), interpreted=True).source
    assert (widened in interpreted) == (dtype == lt.bfloat16)
    td = {lt.float16: torch.float16, lt.bfloat16: torch.bfloat16}[dtype]
    ta, tb = torch.tensor(a).to(td), torch.tensor(b).to(td)
    eps = lt.finfo(dtype).eps
    for got, expected in (((x @ y), ta @ tb), ((y.T @ x.T).relu(), (tb.T @ ta.T).relu())):
        assert got.dtype is dtype
        np.testing.assert_allclose(got.float().numpy(), expected.float().numpy(), rtol=eps, atol=eps)
