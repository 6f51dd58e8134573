"""The reference interpreter of the kernel IR (kernels/reference.py) as the judge of lowering and of backends.

1. Lowering, with nothing compiled: the kernels `lt.schedule` makes for many graphs (elementwise,
   reductions, every movement op, contractions with a prologue and an epilogue, several outputs, 16-bit
   floats, integer division by zero, saturating casts) run through the reference in order, and give
   what torch gives (NumPy where torch has no answer, as for a zero divisor).
2. `split_reduction`: the partials and the combine give what the unsplit kernel gives.
3. The backend of the device the tests run on (the LLVM one; `LT_DEVICE=cuda` the Triton one, also under
   `TRITON_INTERPRET=1`) agrees with the reference on the same inputs, op by op on every dtype an op
   takes, cast by cast, reduction by reduction, then kernel by kernel on schedules: exactly (NaN for NaN,
   the sign of zero included), but the transcendental functions within ULPS ulps, and the two kernels
   that sum rounded values in an order of their own within a few ulps. Elsewhere the data is chosen so
   that sums and products are exact in any order.

Disagreements found in a backend are marked as strict expected failures naming a repro in repros/.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import ml_dtypes
import numpy as np
import pytest
import torch

import lazytensor as lt
import lazytensor.device
from conftest import TOLERANCE, layout, padded_load_kernel, random_array, to_torch_dtype
from lazytensor.kernels import ir, reference
from lazytensor.kernels.dtype import (
    ALL_DTYPES,
    DType,
    bfloat16,
    bfloat16_bits,
    bfloat16_to_float32,
    bool_,
    float16,
    float32,
    float64,
    int8,
    int32,
    int64,
    uint8,
    uint16,
    uint32,
    uint64,
)
from lazytensor.kernels.expr import Bound, Expr, Var
from lazytensor.kernels.split import split_reduction
from lazytensor.schedule import storage

Alu, ReduceOp = ir.Alu, ir.ReduceOp
NAN, INF = math.nan, math.inf
HALF = (float16, bfloat16)
COMPUTED = [d for d in ALL_DTYPES if d not in HALF]  # the dtypes ops compute in

# The transcendental functions (and float POW) are nobody's exact results. The reference rounds NumPy's
# float64 ones (within half an ulp in float32, about one in float64), the LLVM backend's mathlib is within
# 1.25 ulps, so they differ by 2 at most. (Triton's interpreter runs NumPy's float32 SIMD functions, up to 3
# ulps from the reference on some arguments, none of those below. On a GPU, Triton's float32 exp and log are
# the hardware's approximations, not yet measured against this bound.)
TRANSCENDENTAL = {Alu.EXP, Alu.EXP2, Alu.EXPM1, Alu.LOG, Alu.LOG2, Alu.LOG1P, Alu.SIN, Alu.COS, Alu.TAN, Alu.TANH,
                  Alu.ERF, Alu.POW, Alu.ATAN2}
ULPS = 2


def device() -> lazytensor.device.Device:
    """The device the tests run on (LT_DEVICE's)."""
    return lazytensor.device.get_device()


# ---- comparing -------------------------------------------------------------------------------------

def as_values(array: np.ndarray, dtype: DType) -> np.ndarray:
    """A buffer's contents as comparable values: the 16-bit floats as float32."""
    if dtype == bfloat16:
        return bfloat16_to_float32(np.asarray(array).view(np.uint16))
    return np.asarray(array).astype(np.float32) if dtype == float16 else np.asarray(array)


def assert_identical(got: np.ndarray, want: np.ndarray, what: str) -> None:
    """The same values: NaN where NaN (any NaN), and the same bits elsewhere (the sign of zero included)."""
    assert got.shape == want.shape and got.dtype == want.dtype, \
        f"{what}: {got.dtype}{got.shape} != {want.dtype}{want.shape}"
    if want.dtype.kind != "f":
        bad = got != want
    else:
        nan = np.isnan(want)
        bad = (np.isnan(got) != nan) | (~nan & ((got != want) | (np.signbit(got) != np.signbit(want))))
    assert not bad.any(), f"{what}: {bad.sum()} of {bad.size} differ, first at {np.argwhere(bad)[:3].tolist()}: " \
                          f"got {got[bad][:3].tolist()}, reference {want[bad][:3].tolist()}"


def ulp_distance(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    """How many floats of the dtype lie between each pair (exact integers: an int64's difference may not fit)."""
    bits = np.int32 if got.dtype == np.float32 else np.int64

    def ordered(x: np.ndarray) -> np.ndarray:  # the floats in order as integers: -0.0 and +0.0 both 0
        i = x.view(bits).astype(object)
        return np.where(i >= 0, i, int(np.iinfo(bits).min) - i)

    return np.abs(ordered(got) - ordered(want))


def assert_within_ulps(got: np.ndarray, want: np.ndarray, ulps: int, what: str) -> None:
    """NaN where NaN, infinities and zeros of the same sign where the reference has them, and every other
    value within `ulps` ulps."""
    nan = np.isnan(want)
    exact = ~nan & (np.isinf(want) | (want == 0) & (got == 0))
    far = ~nan & ~exact & (ulp_distance(got, want) > ulps)
    bad = (np.isnan(got) != nan) | (exact & ((got != want) | (np.signbit(got) != np.signbit(want)))) | far
    assert not bad.any(), f"{what}: {bad.sum()} of {bad.size} differ by more than {ulps} ulps, " \
                          f"first at {np.argwhere(bad)[:3].tolist()}: got {got[bad][:3].tolist()}, " \
                          f"reference {want[bad][:3].tolist()}"


def compare_to_torch(got: np.ndarray, expected: torch.Tensor | np.ndarray, dtype: DType, what: str) -> None:
    """A reference result against torch's (or NumPy's): floats within the suite's tolerance for the dtype."""
    exp = expected.float().numpy() if isinstance(expected, torch.Tensor) and dtype in HALF else np.asarray(expected)
    got = as_values(got, dtype).reshape(exp.shape)
    if dtype.is_float:
        rtol, atol = TOLERANCE[dtype]
        np.testing.assert_allclose(got, exp, rtol=rtol, atol=atol, equal_nan=True, err_msg=what)
    else:
        np.testing.assert_array_equal(got, exp, err_msg=what)


# ---- running ----------------------------------------------------------------------------------------

Kernelish = ir.Kernel | ir.Contraction | ir.Scatter | ir.Sort | ir.LibraryCall


def caller_buffers(kernel: Kernelish) -> tuple[list[ir.BufferParam], list[ir.BufferParam]]:
    """The buffers a caller passes, outputs and inputs (the runtime provides the scratch)."""
    outputs = [b for b in kernel.buffers if b.output]
    return outputs, [b for b in kernel.buffers if not b.output and not b.scratch]


def on_reference(kernel: Kernelish, inputs: Sequence[np.ndarray], params: Sequence = ()) -> list[np.ndarray]:
    """The kernel's outputs, as buffers hold them, computed by the reference."""
    outputs, _ = caller_buffers(kernel)
    outs = [np.zeros(b.size, reference.storage_type(b.dtype)) for b in outputs]
    reference.run(kernel, [*outs, *inputs], params)
    return outs


def on_device(kernel: Kernelish, inputs: Sequence[np.ndarray], params: Sequence = ()) -> list[np.ndarray]:
    """The kernel's outputs, as buffers hold them, compiled and run on the device."""
    dev = device()
    outputs, in_params = caller_buffers(kernel)
    program, _ = dev.compile(kernel)
    outs = [dev.alloc(b.dtype, b.size) for b in outputs]
    ins = [dev.from_numpy(a, b.dtype) for a, b in zip(inputs, in_params)]
    program([b.ptr for b in (*outs, *ins)], list(params))
    return [b.numpy() for b in outs]


def on_both(kernel: Kernelish, inputs: Sequence[np.ndarray], params: Sequence = ()) -> list[tuple[np.ndarray, ...]]:
    """Each output as (the device's, the reference's), as values."""
    outputs, _ = caller_buffers(kernel)
    return [(as_values(g, b.dtype), as_values(w, b.dtype))
            for g, w, b in zip(on_device(kernel, inputs, params), on_reference(kernel, inputs, params), outputs)]


def reference_schedule(*tensors: lt.Tensor) -> tuple[list[np.ndarray], lt.Schedule]:
    """What realizing `tensors` gives, computed by the reference from `lt.schedule`: each kernel in order,
    its inputs bound to realized buffers or to the outputs of the kernels before it. Nothing is compiled."""
    items = lt.schedule(*tensors)
    arrays: dict[int, np.ndarray] = {}
    for item in items:
        inputs = [arrays[id(n)] if id(n) in arrays else n.buffer.numpy() for n in item.inputs]
        arrays.update((id(n), a) for n, a in zip(item.outputs, on_reference(item.kernel, inputs, item.params)))
    assert lt.stats().kernels_compiled == 0 and lt.stats().kernels_launched == 0
    return [arrays[id(storage(t.node))].reshape(t.shape) for t in tensors], items


# ---- 1. lowering against torch, through the reference ---------------------------------------------------

def both_ways(fn: Callable, *arrays: np.ndarray, kinds: Sequence[str] = ()) -> tuple[list, list]:
    """`fn` of the arrays as lazytensor and as torch tensors (each in the layout `kinds` names, else
    contiguous), as lists of outputs."""
    pairs = [layout(a, k) for a, k in zip(arrays, [*kinds, *["contiguous"] * len(arrays)])]
    got, want = fn(*(p[0] for p in pairs)), fn(*(p[1] for p in pairs))
    return (list(got), list(want)) if isinstance(got, tuple) else ([got], [want])


def quarter(shape: tuple[int, ...], seed: int) -> np.ndarray:
    """float32 multiples of 1/4 in [-3, 3]: their products and sums are exact in any order, in float32."""
    return (np.round(random_array(shape, lt.float32, seed) * 4) / 4).astype(np.float32)


def layernorm(x: lt.Tensor | torch.Tensor) -> lt.Tensor | torch.Tensor:
    return (x - x.mean(-1, keepdim=True)) / (x.var(-1, keepdim=True, correction=0) + 1e-5).sqrt()


def two_outputs(x: lt.Tensor | torch.Tensor, y: lt.Tensor | torch.Tensor) -> tuple:
    """Two results of one shape that read the same data: one kernel with two outputs (schedule rule 7)."""
    return x * 2 + y, (x - y) * y


def put(x: lt.Tensor | torch.Tensor, i: lt.Tensor | torch.Tensor, v: lt.Tensor | torch.Tensor):
    """`x` with `v` written at the rows `i` (a copy: torch writes in place)."""
    y = x * 1
    y[i] = v
    return y


def positions(shape: tuple[int, ...], high: int, seed: int) -> np.ndarray:
    """int64 indexes in [0, high), repeats among them."""
    return np.random.default_rng(seed).integers(0, high, shape)


A = random_array  # the tables below call it on every row
LOWERING = {  # name: (fn on either library's tensors, its inputs, their layouts)
    "elementwise": (lambda x, y: x * y + x - abs(y), [A((5, 7), lt.float32, 0), A((7,), lt.float32, 1)], ()),
    "transcendental": (lambda x, y: (x.exp() - y.sin()).tanh() + x.erf() * y.abs().sqrt().log1p(),
                       [A((5, 7), lt.float32, 0), A((5, 7), lt.float32, 1)], ("flipped", "transposed")),
    "comparisons_select": (lambda x, y: ((x < y) * x.maximum(y) + (x >= y) * x.minimum(y), (x != y) & (x <= 0)),
                           [A((6, 4), lt.float32, 2), A((6, 4), lt.float32, 3)], ("strided",)),
    "int8_wraps": (lambda x, y: x * y + x, [A((9,), lt.int8, 4) * 3, A((9,), lt.int8, 5)], ()),
    "bitwise": (lambda x, y: (x & y) | (~x ^ y), [A((8,), lt.int32, 6), A((8,), lt.int32, 7)], ()),
    "sum_axis": (lambda x: x.sum(1), [A((6, 9), lt.float32, 8)], ("transposed",)),
    "sum_all": (lambda x: x.sum(), [A((6, 9), lt.float64, 9)], ("flipped",)),
    "max_min_prod": (lambda x: (x.amax(0), x.amin(), x.prod(1)), [A((4, 5), lt.float32, 10, low=0.5, high=1.5)], ()),
    "int_reductions": (lambda x: (x.sum(0), x.amax(1), x.prod(1)), [A((5, 3), lt.int16, 11)], ("strided",)),
    "any_all": (lambda x: (x.any(0), x.all(1)), [A((4, 6), lt.bool_, 12)], ("transposed",)),
    "mean_var_std": (lambda x: (x.mean(0), x.var(1, correction=0), x.std(0, correction=1)),
                     [A((7, 5), lt.float32, 13)], ("flipped",)),
    "softmax": (lambda x: x.softmax(-1), [A((5, 9), lt.float32, 14)], ("strided",)),
    "log_softmax_logsumexp": (lambda x: (x.log_softmax(1), x.logsumexp(1)), [A((4, 8), lt.float32, 15)], ()),
    "layernorm": (layernorm, [A((6, 10), lt.float32, 16)], ("transposed",)),
    "argmax_argmin": (lambda x: (x.argmax(1), x.argmin(0)), [A((5, 6), lt.float32, 17)], ()),
    "cumsum": (lambda x: x.cumsum(1), [A((3, 11), lt.float32, 18)], ()),
    "permute_flip_shrink": (lambda x: x.T.flip(0)[1:, ::2] + 1, [A((6, 7), lt.float32, 19)], ()),
    "expand_reshape": (lambda x: x.reshape(5, 7, 1).expand(5, 7, 3).permute(2, 0, 1).reshape(3, 35) * 2,
                       [A((5, 7), lt.float32, 20)], ("flipped",)),
    "broadcast": (lambda x, y: x[:, None, :] - y[None, :, None], [A((4, 6), lt.float32, 21), A((3,), lt.float32, 22)],
                  ()),
    "matmul": (lambda x, y: x @ y, [quarter((32, 64), 23), quarter((64, 48), 24)], ()),
    "matmul_prologue_epilogue": (lambda x, y, b: ((x * 0.5).T @ y.flip(1) + b).relu(),
                                 [quarter((64, 32), 25), quarter((64, 48), 26), quarter((48,), 27)], ("transposed",)),
    "matmul_reducing_epilogue": (lambda x, y: (x @ y).sum(0), [quarter((32, 64), 28), quarter((64, 48), 29)], ()),
    "matmul_operand_with_reduction": (lambda x, y: x.softmax(-1) @ y,
                                      [A((40, 64), lt.float32, 30), quarter((64, 48), 31)], ()),
    "batched_matmul": (lambda x, y: x @ y, [quarter((3, 16, 40), 32), quarter((40, 48), 33)], ()),
    "float64_matmul": (lambda x, y: x @ y.T, [A((24, 40), lt.float64, 34), A((48, 40), lt.float64, 35)], ()),
    "several_outputs": (two_outputs, [A((6, 8), lt.float32, 36), A((6, 8), lt.float32, 37)], ()),
    "gather": (lambda x, i: x.gather(1, i) * 2, [A((5, 7), lt.float32, 38), positions((5, 4), 7, 39)], ("flipped",)),
    "index_rows": (lambda x, i: x[i] + 1, [A((6, 5), lt.int32, 40), positions((3, 2), 6, 41)], ("transposed",)),
    "index_padded_view": (lambda x, i: x.flip(0)[1:, ::2][i], [A((7, 6), lt.float64, 42), positions((4,), 6, 43)], ()),
    "scatter_add": (lambda x, i, u: x.scatter_add(0, i, u * 3), [A((4, 5), lt.float32, 44), positions((6, 5), 4, 45),
                                                                   A((6, 5), lt.float32, 46)], ("strided",)),
    "index_put": (put, [A((5, 3), lt.int64, 47), positions((4,), 5, 48), A((4, 3), lt.int64, 49)], ()),
    "argsort": (lambda x: (x.argsort(stable=True, dim=1), x.argsort(stable=True, dim=0, descending=True)),
                [positions((6, 9), 4, 50) * 1.0], ("transposed",)),
    "angles_and_bits": (lambda x, y: (x.atan2(y), (x / 3).asin(), x.hypot(y), x.copysign(y), x.signbit(),
                                      x.nextafter(y)), [A((5, 7), lt.float32, 38), A((7,), lt.float32, 39)], ("flipped",)),
    "shifts": (lambda x, y: (x << y, x >> y), [A((9,), lt.int32, 40), A((9,), lt.int32, 41, low=0, high=40)], ()),
}


@pytest.mark.fast
@pytest.mark.parametrize("name", LOWERING)
def test_lowering_through_the_reference_matches_torch(name):
    fn, arrays, kinds = LOWERING[name]
    got, want = both_ways(fn, *arrays, kinds=kinds)
    results, _ = reference_schedule(*got)
    for i, (r, t, w) in enumerate(zip(results, got, want)):
        compare_to_torch(r, w.detach(), t.dtype, f"{name} output {i}")


@pytest.mark.fast
def test_lowering_covers_contractions_and_several_outputs():
    """The cases above reach what they are named for: a contraction with an epilogue, one without, a
    kernel with two outputs."""
    def schedule_of(name: str) -> lt.Schedule:
        fn, arrays, kinds = LOWERING[name]
        return lt.schedule(*both_ways(fn, *arrays, kinds=kinds)[0])

    (item,) = schedule_of("matmul_prologue_epilogue")
    assert isinstance(item.kernel, ir.Contraction) and item.kernel.epilogue is not None
    (item,) = schedule_of("matmul")
    assert isinstance(item.kernel, ir.Contraction) and item.kernel.epilogue is None
    (item,) = schedule_of("several_outputs")
    assert len(item.outputs) == 2


@pytest.mark.fast
def test_conv2d_through_the_reference():
    x, w, b = quarter((2, 8, 9, 9), 40), quarter((16, 8, 3, 3), 41), quarter((16,), 42)
    conv = lt.nn.functional.conv2d(lt.asarray(x), lt.asarray(w), lt.asarray(b), padding=1).relu()
    (got,), items = reference_schedule(conv)
    want = torch.nn.functional.conv2d(torch.tensor(x), torch.tensor(w), torch.tensor(b), padding=1).relu()
    compare_to_torch(got, want, lt.float32, "conv2d")
    assert any(isinstance(i.kernel, ir.Contraction) for i in items)


@pytest.mark.fast
def test_a_factorization_through_the_reference():
    """A library call reads its operand from a buffer (here the transpose's, written first) and writes each
    matrix's results one after another: eigh's eigenvalues, then its eigenvectors. (On the CPU, whatever the
    session's device: nothing is compiled, and the factorizations are the CPU's.)"""
    a = random_array((2, 4, 4), lt.float64, seed=43)
    a = a + np.swapaxes(a, -1, -2)
    w, v = lt.linalg.eigh(lt.asarray(np.swapaxes(a, -1, -2).copy(), device="cpu").mT * 2)
    (got_w, got_v), items = reference_schedule(w, v)
    assert [type(i.kernel).__name__ for i in items] == ["Kernel", "LibraryCall", "Kernel", "Kernel"]
    want_w, want_v = torch.linalg.eigh(torch.tensor(a) * 2)
    compare_to_torch(got_w, want_w, lt.float64, "eigenvalues")
    signs = np.sign(got_v[..., :1, :] * want_v.numpy()[..., :1, :])  # each eigenvector's sign is LAPACK's
    compare_to_torch(got_v * signs, want_v, lt.float64, "eigenvectors")


@pytest.mark.fast
@pytest.mark.parametrize("dtype", HALF, ids=str)
def test_16_bit_floats_through_the_reference(dtype):
    """Loaded, computed in float32, rounded once where stored: within a rounding of torch's eager results."""
    def half(shape: tuple[int, ...], seed: int) -> tuple[lt.Tensor, torch.Tensor]:
        arr = random_array(shape, lt.float32, seed)
        t = torch.tensor(arr).to(torch.float16 if dtype == float16 else torch.bfloat16)
        host = arr.astype(np.float16) if dtype == float16 else arr.astype(ml_dtypes.bfloat16)
        return lt.asarray(host), t

    (x, tx), (y, ty), (w, tw) = half((32, 64), 50), half((32, 64), 51), half((64, 48), 52)
    cases = [(x * y + x, tx * ty + tx), (x.exp(), tx.exp()), (x.sum(1), tx.sum(1)), (x.softmax(-1), tx.softmax(-1)),
             (x.cast(lt.float32) * 3, tx.float() * 3), (x.amax(0), tx.amax(0)), (x @ w, tx @ tw),
             ((x * y).copysign(x), (tx * ty).copysign(tx)), ((x - y).signbit(), (tx - ty).signbit()),
             (x.nextafter(y), tx.nextafter(ty)),
             (x.cast(lt.float16 if dtype == bfloat16 else lt.bfloat16),
              tx.to(torch.float16 if dtype == bfloat16 else torch.bfloat16))]
    results, _ = reference_schedule(*(c[0] for c in cases))
    for k, (r, (t, w)) in enumerate(zip(results, cases)):
        compare_to_torch(r, w, t.dtype, f"case {k}")


@pytest.mark.fast
@pytest.mark.parametrize("dtype", [lt.int8, lt.int32, lt.int64, lt.uint8, lt.uint16, lt.uint32, lt.uint64], ids=str)
def test_integer_floor_division_and_modulo_through_the_reference(dtype):
    """Python's floor semantics, 0 for a zero divisor and MIN // -1 wrapping: NumPy's answers (torch raises)."""
    info = np.iinfo(dtype.name)
    values = np.array(sorted({v for v in (info.min, info.min + 1, -7, -1, 0, 1, 3, 7, info.max)
                              if info.min <= v <= info.max}), dtype.name)
    a, b = lt.asarray(values[:, None]), lt.asarray(values[None, :])
    (q, r), _ = reference_schedule(a // b, a % b)
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(q, np.floor_divide(values[:, None], values[None, :]))
        np.testing.assert_array_equal(r, np.remainder(values[:, None], values[None, :]))


@pytest.mark.fast
def test_casts_saturate_and_wrap_through_the_reference():
    """In range, torch's conversions; out of range (undefined in C, and so in torch), the IR's: saturate
    to int64 (NaN gives 0; for uint64 to [-2**63, 2**64 - 1]), then wrap to the target's width."""
    inside = np.array([-1.7, -1.0, -0.0, 0.7, 127.5, 255.5, 300.0, -200.0, 1e4], np.float32)
    x, t = lt.asarray(inside), torch.tensor(inside)
    targets = [lt.int8, lt.uint8, lt.int16, lt.int32, lt.int64, lt.uint16, lt.uint32, lt.uint64, lt.bool_, lt.float16,
               lt.bfloat16, lt.float64]
    results, _ = reference_schedule(*(x.cast(d) for d in targets))
    for d, r in zip(targets, results):
        compare_to_torch(r, t.to(to_torch_dtype(d)), d, f"float32 to {d}")
    outside = np.array([NAN, INF, -INF, 3e9, -3e9, 1e19, -1e19], np.float32)
    narrow = (lt.int8, lt.uint8, lt.int32, lt.int64, lt.uint16, lt.uint32)
    results, _ = reference_schedule(*(lt.asarray(outside).cast(d) for d in (*narrow, lt.uint64)))
    big, small = 2**63 - 1, -2**63
    saturated = [0, big, small, 3_000_000_000, -3_000_000_000, big, small]
    for d, r in zip(narrow, results):
        np.testing.assert_array_equal(r, np.array(saturated, np.int64).astype(d.name), err_msg=str(d))
    # uint64 holds 1e19 (in float32, 9999999980506447872) and saturates at 2**64 - 1 instead
    uint64_max, float32_1e19 = 2**64 - 1, int(np.float32(1e19))
    np.testing.assert_array_equal(results[-1], np.array([0, uint64_max, 2**63, 3_000_000_000, 2**64 - 3_000_000_000,
                                                         float32_1e19, 2**63], np.uint64))


# ---- 2. split_reduction against the unsplit kernel ------------------------------------------------------

PARTS = 8
SIGNED_ZEROS = np.array([0.0, -0.0, 0.0, -0.0, 0.0], np.float32)
POWERS_OF_TWO = np.random.default_rng(69).choice(np.array([0.5, 1.0, 2.0, -1.0, -0.5]), 101)
# name: (fn of a tensor, its data), sizes with a tail (not a multiple of PARTS) and without. Float data
# sums (and multiplies) exactly in any order, so the split must give the same bits.
SPLITS = {
    "sum": (lambda x: x.sum(), quarter((8 * 125 + 3,), 60)),
    "sum_no_tail": (lambda x: x.sum(), quarter((8 * 64,), 61).astype(np.float64)),
    "mean_2d": (lambda x: x.mean(), quarter((37, 11), 62)),
    "sum_of_products": (lambda x: (x * x.flip(0)).sum(), quarter((203,), 63)),
    "sum_and_max": (lambda x: x.sum() + x.amax() * 2, quarter((301,), 64).astype(np.float64)),
    "max_with_nan": (lambda x: x.amax(), np.concatenate([A((100,), lt.float32, 65), [NAN], A((99,), lt.float32, 66)])),
    "max_of_zeros": (lambda x: x.amax(), np.concatenate([np.full(60, -0.0, np.float32), SIGNED_ZEROS[:1]])),
    "min_of_zeros": (lambda x: x.amin(), np.tile(SIGNED_ZEROS, 13)),
    "prod": (lambda x: x.prod(), POWERS_OF_TWO),
    "int_sum_wraps": (lambda x: x.sum(), np.full(99, 2**62 + 12345, np.int64)),
    "int32_min": (lambda x: x.amin(), A((77,), lt.int32, 68)),
    "uint64_sum_wraps": (lambda x: x.sum(), np.full(99, 2**63 + 12345, np.uint64)),
    "uint32_max": (lambda x: x.amax(), np.arange(2**31 - 77, 2**31 + 120, dtype=np.uint32)[::-1].copy()),
    "any": (lambda x: x.any(), np.eye(1, 90, 89, dtype=bool)[0]),
    "all": (lambda x: x.all(), ~np.eye(1, 90, 3, dtype=bool)[0]),
    "var_no_tail": (lambda x: x.var(), quarter((8 * 64,), 69)),
    "deviation_from_max": (lambda x: (x - x.amax()).abs().sum(), quarter((8 * 125 + 3,), 70)),
    "argmax": (lambda x: x.argmax(), quarter((8 * 125 + 3,), 71)),
    "argmin_of_ties": (lambda x: x.argmin(), np.tile(SIGNED_ZEROS, 13)),
    "sum_of_row_maxima": (lambda x: x.reshape(-1, 7).amax(1).sum(), quarter((7 * 125,), 72)),
}


@pytest.mark.fast
@pytest.mark.parametrize("name", SPLITS)
def test_split_reduction_matches_the_unsplit_kernel(name):
    fn, data = SPLITS[name]
    (item,) = lt.schedule(fn(lt.asarray(data)))
    kernel, inputs = item.kernel, [n.buffer.numpy() for n in item.inputs]
    split = split_reduction(kernel, PARTS)
    (want,) = on_reference(kernel, inputs, item.params)
    got = np.zeros_like(want)
    slots = [got, *inputs, *(np.zeros(b.size, reference.storage_type(b.dtype)) for b in split[0].buffers if b.scratch)]
    for k in split:  # one after the other on one set of buffers, as the runtime runs them
        reference.execute(k, slots, item.params)
    assert_identical(got, want, name)


# ---- 3. the device's backend against the reference ------------------------------------------------------

def suite_values(dtype: DType, seed: int = 0, signed_zeros: bool = True) -> np.ndarray:
    """A dtype's edge values, then random ones over its range (floats: every magnitude from 1e-9 to 1e9
    and around 1)."""
    rng = np.random.default_rng(seed)
    if dtype == bool_:
        return np.array([False, True, *(rng.random(60) < 0.5)])
    if dtype.is_int:
        info = np.iinfo(dtype.name)
        edges = [v for v in (info.min, info.min + 1, -7, -3, -2, -1, 0, 1, 2, 3, 7, info.max - 1, info.max)
                 if info.min <= v <= info.max]
        return np.concatenate([np.array(edges, dtype.name), rng.integers(info.min, info.max, 200, dtype.name, True),
                               rng.integers(-9, 9, 60).astype(dtype.name)])
    f = np.finfo(dtype.name)
    edges = [NAN, INF, -INF, 0.0, *([-0.0] if signed_zeros else []), 1.0, -1.0, 0.5, -0.5, 1.5, 2.5, -2.5, 3.0, 7.25,
             -100.0, f.smallest_subnormal, -f.tiny, f.max, -f.max, 1e-8, 20.5, 88.7, -103.0, 710.0, math.pi, 1e15 + 0.5,
             2.0**30 + 0.5]
    magnitudes = np.exp(rng.uniform(-20, 20, 200)) * rng.choice([-1.0, 1.0], 200)
    return np.concatenate([np.array(edges), magnitudes, rng.normal(size=60) * 3]).astype(dtype.name)


def operands(dtype: DType, arity: int) -> list[np.ndarray]:
    """Every pair of a dtype's edge values and random pairs (for a unary op, the values)."""
    values = suite_values(dtype)
    if arity == 1:
        return [values]
    edges = values[:30]
    a = np.concatenate([np.repeat(edges, edges.size), values])
    return [a, np.concatenate([np.tile(edges, edges.size), np.roll(values, 7)])]


def in_domain(op: Alu, dtype: DType, ins: list[np.ndarray]) -> list[np.ndarray]:
    """The operands of a core op with a precondition (see `reference`), moved into its domain: an integer
    divisor of 0 (or of -1, dividing MIN) becomes 1, a shift is taken modulo the dtype's bits."""
    if dtype.is_int and op in (Alu.TRUNCDIV, Alu.REM):
        a, b = ins
        overflow = (a == np.iinfo(dtype.name).min) & (b == -1) if dtype.is_signed else False
        return [a, np.where((b == 0) | overflow, 1, b).astype(b.dtype)]
    if op in (Alu.SHL, Alu.SHR):
        return [ins[0], np.mod(ins[1], dtype.bits).astype(ins[1].dtype)]
    return ins


def elementwise_kernel(op: Alu, dtype: DType, n: int) -> ir.Kernel:
    """`out[i] = op(b1[i], ...)`; a WHERE's condition is the bool buffer b1."""
    o = Var("o0", n)
    in_dtypes = [bool_, dtype, dtype] if op is Alu.WHERE else [dtype] * op.arity
    srcs = [ir.load(slot, d, Expr.of(o), ()) for slot, d in enumerate(in_dtypes, 1)]
    out = bool_ if op in ir.COMPARISONS else dtype
    return ir.Kernel("", (ir.BufferParam(out, n, True), *(ir.BufferParam(d, n) for d in in_dtypes)), (), (o,),
                     (ir.Store(0, Expr.of(o), ir.alu(op, out, *srcs)),))


def elementwise_cases() -> list:
    """Every ALU op on every dtype its row of `reference.ALU` takes (the 16-bit floats take none)."""
    cases = []
    for op, (kinds, _) in reference.ALU.items():
        for dtype in COMPUTED:
            if dtype.kind in kinds:
                cases.append(pytest.param(op, dtype, id=f"{op.label}-{'bool' if dtype == bool_ else dtype}"))
    return cases


@pytest.mark.parametrize("op,dtype", elementwise_cases())
def test_backend_agrees_elementwise(op, dtype):
    ins = in_domain(op, dtype, operands(dtype, 2 if op is Alu.WHERE else op.arity))
    if op is Alu.WHERE:
        ins = [np.random.default_rng(1).random(ins[0].size) < 0.5, *ins]
    ((got, want),) = on_both(elementwise_kernel(op, dtype, ins[0].size), ins)
    if op in TRANSCENDENTAL and dtype.is_float:
        assert_within_ulps(got, want, ULPS, op.label)
        return
    if op in (Alu.MAX, Alu.MIN) and dtype.is_float:  # a zero against a zero: test_max_and_min_order_signed_zeros
        keep = ~((ins[0] == 0) & (ins[1] == 0))
        got, want = got[keep], want[keep]
    assert_identical(got, want, op.label)


@pytest.mark.parametrize("dtype", [float32, float64], ids=str)
@pytest.mark.parametrize("op", [Alu.MAX, Alu.MIN], ids=lambda op: op.label)
def test_max_and_min_order_signed_zeros(op, dtype):
    """-0.0 < +0.0, elementwise and in a reduction (IEEE 754-2019 maximum and minimum)."""
    zeros = np.array([0.0, -0.0, 0.0, -0.0, 0.0, -0.0], dtype.name)
    ((got, want),) = on_both(elementwise_kernel(op, dtype, 4), [zeros[:4], zeros[1:5]])
    assert_identical(got, want, f"{op.label} of zeros")
    rows = np.array([[0.0, -0.0, -0.0, 0.0, -0.0], [-0.0, -0.0, 0.0, -0.0, -0.0], [-0.0] * 5, [0.0] * 5], dtype.name)
    ((got, want),) = on_both(reduce_kernel(ReduceOp(op.label), dtype, *rows.shape), [rows.reshape(-1)])
    assert_identical(got, want, f"{op.label} over rows of zeros")
    long_rows = np.full((4, 5000), -0.0, dtype.name)  # longer than a block: a looped reduction's combine too
    long_rows[0, 4500] = long_rows[1, 10] = 0.0
    long_rows[3, :4999] = 0.0
    ((got, want),) = on_both(reduce_kernel(ReduceOp(op.label), dtype, *long_rows.shape), [long_rows.reshape(-1)])
    assert_identical(got, want, f"{op.label} over long rows of zeros")


def cast_kernel(src: DType, dst: DType) -> tuple[ir.Kernel, np.ndarray]:
    """`out[i] = cast(b1[i])` on the source dtype's edge values (floats: out of every integer range too)."""
    wide = np.concatenate([suite_values(float64), [255.5, 300.0, -1.7, 3e9, -3e9, 1e19, -1e19, 65519.0, 65520.0,
                                                   3.5e38, 1 + 2.0**-11 + 2.0**-30, 2.0**-24, 2.0**-25, 6e-8, 2.0**63,
                                                   -2.0**63, 2.0**64, 2e19, 2.0**64 - 2048, 2.0**63 - 1024,
                                                   # around int32's range and 2**32, where a cast to 32 bits or less
                                                   # takes another path (`legalize._float_to_int32`)
                                                   2.0**31, -2.0**31, 2.0**31 - 0.5, -2.0**31 - 0.5, 2.0**31 + 0.5,
                                                   2.0**31 - 128, 2.0**32 + 7, -2.0**32 - 7, 2.0**32 - 1, 2.0**53 + 2,
                                                   -2.0**62 * 1.5, 2.0**62 * 1.5]])
    with np.errstate(over="ignore"):
        data = bfloat16_bits(wide.astype(np.float32)) if src == bfloat16 else \
            suite_values(src) if src.is_int or src == bool_ else wide.astype(src.name)
    o = Var("o0", data.size)
    kernel = ir.Kernel("", (ir.BufferParam(dst, data.size, True), ir.BufferParam(src, data.size)), (), (o,),
                       (ir.Store(0, Expr.of(o), ir.cast(ir.load(1, src, Expr.of(o), ()), dst)),))
    return kernel, data


@pytest.mark.parametrize("dst", ALL_DTYPES, ids=str)
@pytest.mark.parametrize("src", ALL_DTYPES, ids=str)
def test_backend_agrees_on_casts(src, dst):
    """Every conversion, out-of-range and special values included."""
    kernel, data = cast_kernel(src, dst)
    ((got, want),) = on_both(kernel, [data])
    assert_identical(got, want, f"{src} to {dst}")


def reduce_kernel(op: ReduceOp, dtype: DType, rows: int, cols: int) -> ir.Kernel:
    """`out[i] = op(b1[i, j] for j < cols)` over a row-major `rows x cols` b1 (of one element if it is empty)."""
    o, r = Var("o0", rows), Var("r0", cols)
    value = ir.reduce(op, ir.load(1, dtype, Expr.of(o) * cols + Expr.of(r), ()), (r,))
    return ir.Kernel("", (ir.BufferParam(dtype, rows, True), ir.BufferParam(dtype, max(1, rows * cols))), (), (o,),
                     (ir.Store(0, Expr.of(o), value),))


def reduction_data(op: ReduceOp, dtype: DType, size: int) -> np.ndarray:
    """Data whose reduction has one right answer in any order: floats that sum (multiples of 1/4) or multiply
    (powers of two) exactly, with NaN and infinities in some rows; integers wrap, which is associative."""
    rng = np.random.default_rng(3)
    if not dtype.is_float or op in (ReduceOp.MAX, ReduceOp.MIN):
        return np.resize(suite_values(dtype, signed_zeros=False), size)
    exact = np.round(rng.uniform(-3, 3, size) * 4) / 4 if op is ReduceOp.SUM else \
        rng.choice(np.array([0.5, 1.0, 2.0, -1.0, -0.5]), size)
    specials = np.zeros(size, bool)
    specials[rng.integers(0, size, max(1, size // 50))] = True
    return np.where(specials, rng.choice(np.array([NAN, INF, -INF, 0.0]), size), exact).astype(dtype.name)


@pytest.mark.parametrize("dtype", COMPUTED, ids=str)
@pytest.mark.parametrize("op", list(ReduceOp), ids=lambda op: op.value)
def test_backend_agrees_on_reductions(op, dtype):
    """Short, long, single-row and empty ranges."""
    for rows, cols in [(7, 5), (3, 1000), (2, 5000), (1, 37), (2, 0)]:
        data = reduction_data(op, dtype, max(1, rows * cols))
        ((got, want),) = on_both(reduce_kernel(op, dtype, rows, cols), [data])
        assert_identical(got, want, f"{op.value} over {rows}x{cols}")


def test_backend_agrees_on_indices_masks_and_parameters():
    """Masked loads read nothing outside their buffer; index expressions divide with floor semantics,
    negative numerators included; parameters arrive in their dtype (a float64 one is not rounded to float32,
    integers wrap to their width)."""
    ((got, want),) = on_both(padded_load_kernel(), [np.array([7, 8, 9], np.int32)], [100])
    assert_identical(got, want, "padded load")
    o = Var("o0", 12)
    shifted = Expr.of(o) - 5
    inside = (Bound(shifted, 0, 4),)
    digits = ir.alu(Alu.ADD, int64, ir.alu(Alu.MUL, int64, ir.index(shifted // 3), ir.const(10, int64)),
                    ir.index(shifted % 3))
    value = ir.alu(Alu.WHERE, int64, ir.valid(inside), digits, ir.const(-1, int64))
    kernel = ir.Kernel("", (ir.BufferParam(int64, 12, True),), (), (o,), (ir.Store(0, Expr.of(o), value),))
    ((got, want),) = on_both(kernel, [])
    assert_identical(got, want, "index division")
    for dtype, param in [(float64, 0.1), (float32, 0.1), (float32, 1e300), (int8, 300), (uint8, -1), (int64, 2**40),
                         (bool_, 2), (int32, -2**31), (uint16, -1), (uint32, 2**32 + 5), (uint64, 2**64 - 1),
                         (uint64, 2**63 + 5)]:
        pick = np.array([True, False, True])
        data = suite_values(dtype)[:3]
        o = Var("o0", 3)
        value = ir.alu(Alu.WHERE, dtype, ir.load(1, bool_, Expr.of(o), ()), ir.param(0, dtype),
                       ir.load(2, dtype, Expr.of(o), ()))
        kernel = ir.Kernel("", (ir.BufferParam(dtype, 3, True), ir.BufferParam(bool_, 3), ir.BufferParam(dtype, 3)),
                           (dtype,), (o,), (ir.Store(0, Expr.of(o), value),))
        ((got, want),) = on_both(kernel, [pick, data], [param])
        assert_identical(got, want, f"{dtype} parameter {param}")


@pytest.mark.filterwarnings("ignore:overflow encountered in cast")  # render.half_bits rounds 3e38 to float16
@pytest.mark.parametrize("dtype", HALF, ids=str)
def test_backend_agrees_on_16_bit_constants(dtype):
    """A constant of a 16-bit float rounds through float32: 1 + 2**-11 + 2**-30 is a tie there, to 1.0."""
    values = [0.1, 1 + 2.0**-11 + 2.0**-30, 65520.0, 1e-8, -0.0, NAN, -INF, 3.0e38]
    o = Var("o0", 1)
    kernel = ir.Kernel("", tuple(ir.BufferParam(dtype, 1, True) for _ in values), (), (o,),
                       tuple(ir.Store(k, Expr.of(0), ir.const(v, dtype)) for k, v in enumerate(values)))
    for k, (got, want) in enumerate(on_both(kernel, [])):
        assert_identical(got, want, f"constant {values[k]}")


def run_schedule_on_both(*tensors: lt.Tensor) -> list[tuple[Kernelish, list, list]]:
    """Each kernel of `lt.schedule(*tensors)` on the device and on the reference, on the same inputs (the
    device's own results of the kernels before): (kernel, the device's outputs, the reference's)."""
    results, arrays = [], {}
    for item in lt.schedule(*tensors):
        inputs = [arrays[id(n)] if id(n) in arrays else n.buffer.numpy() for n in item.inputs]
        outputs, _ = caller_buffers(item.kernel)
        got, want = on_device(item.kernel, inputs, item.params), on_reference(item.kernel, inputs, item.params)
        arrays.update((id(n), a) for n, a in zip(item.outputs, got))
        results.append((item.kernel, [as_values(g, b.dtype) for g, b in zip(got, outputs)],
                        [as_values(w, b.dtype) for w, b in zip(want, outputs)]))
    return results


def dev_data(shape: tuple[int, ...], seed: int, dtype: lt.DType = lt.float32) -> lt.Tensor:
    """Test data on the device: float32 multiples of 1/4 (see `quarter`), other dtypes `random_array`'s."""
    return lt.asarray(quarter(shape, seed) if dtype == lt.float32 else random_array(shape, dtype, seed),
                      device=device().name)


D = dev_data  # the table below calls it on every row
# name: (tensors to realize, the ulps their kernels may differ by). Data sums exactly in any order where a
# kernel sums (multiples of 1/4), so every kernel but softmax's and layernorm's must agree bit for bit: those
# sum rounded values in their own order, and softmax's exp is within ULPS.
SCHEDULES: dict[str, tuple[Callable[[], list[lt.Tensor]], int]] = {
    "matmul_with_epilogue": (lambda: [((D((32, 64), 1) @ D((64, 48), 2)) + D((48,), 3)).relu()], 0),
    "matmul_transposed_prologue": (lambda: [(D((64, 32), 4) * 0.5).T @ D((64, 48), 5).flip(1)], 0),
    "matmul_reducing_epilogue": (lambda: [(D((32, 64), 6) @ D((64, 48), 7)).sum(0)], 0),
    "batched_matmul": (lambda: [D((3, 16, 40), 8) @ D((40, 48), 9)], 0),
    "float16_matmul": (lambda: [D((32, 64), 10).cast(lt.float16) @ D((64, 48), 11).cast(lt.float16)], 0),
    "bfloat16_matmul": (lambda: [D((32, 64), 24).cast(lt.bfloat16) @ D((64, 48), 25).cast(lt.bfloat16)], 0),
    "conv2d": (lambda: [lt.nn.functional.conv2d(D((2, 8, 9, 9), 12), D((16, 8, 3, 3), 13), D((16,), 14),
                                                padding=1).relu()], 0),
    "views": (lambda: [D((6, 7), 15).pad(((1, 2), (3, 0))).flip(1)[::2, 1:] * D((9,), 16)], 0),
    "argmax_cumsum": (lambda: [D((5, 9), 17).argmax(1), D((5, 9), 18).cumsum(1)], 0),
    "column_reductions": (lambda: [D((40, 33), 26).sum(0), D((40, 33), 27).amax(0)], 0),
    "integers": (lambda: [(D((6, 5), 19, lt.int32) // D((5,), 20, lt.int32)) % 7, D((6, 5), 21, lt.int8).sum(1)], 0),
    "unsigned": (lambda: [(D((6, 5), 30, lt.uint64) * 2**62 // D((5,), 31, lt.uint64)) % 7 > D((6, 5), 32, lt.uint32),
                          D((6, 5), 33, lt.uint16).cumsum(1), (-D((6, 5), 34, lt.uint32)).argmax(0),
                          D((4, 6), 35, lt.uint16) @ D((6, 3), 36, lt.uint16)], 0),
    "random": (lambda: [lt.rand(64, device=device().name), lt.randint(0, 100, (33,), device=device().name)], 0),
    "several_outputs": (lambda: list(two_outputs(D((6, 8), 28), D((6, 8), 29))), 0),
    "gather_scatter": (lambda: [D((6, 8), 30).gather(1, lt.asarray(positions((6, 5), 8, 31), device=device().name)),
                                D((4, 8), 32).scatter_add(0, lt.asarray(positions((9, 8), 4, 33), device=device().name),
                                                          D((9, 8), 34)),
                                put(D((5, 8), 35, lt.int8), lt.asarray(positions((7,), 5, 36), device=device().name),
                                    D((7, 8), 37, lt.int8))], 0),
    "sort": (lambda: [D((5, 40), 38).argsort(1), lt.sort(D((33, 3), 39, lt.int8), axis=0, descending=True),
                      lt.sort(D((4, 50), 43), axis=1), lt.median(D((4, 50), 44), axis=1),
                      lt.quantile(D((3, 300), 45, lt.int16), 0.3, axis=1, method="lower")], 0),
    "scan": (lambda: [D((3, 300), 40).cumsum(1), D((2, 700), 41, lt.int32).cumsum(1), D((70_000,), 42).cumsum(0)], 0),
    "softmax": (lambda: [D((6, 40), 22).softmax(-1)], 2 * ULPS),
    "layernorm": (lambda: [layernorm(D((6, 40), 23))], 4),
}


def test_backend_agrees_on_a_library_call():
    """The routine is NumPy's either way: what the backend shows is how it lays out the batch, the operands and
    the results over its buffers, and splits the batch (a QR of 3 x 2 matrices: Q, then R, for each)."""
    if not device().library_calls:
        pytest.skip(f"{device().describe()} runs no library calls (the frontend refuses them there)")
    call = ir.LibraryCall("", (ir.BufferParam(float32, 5 * 10, output=True), ir.BufferParam(float32, 5 * 6)),
                          "qr_reduced", 5, ((3, 2),))
    for got, want in on_both(call, [random_array((5, 3, 2), lt.float32, seed=44).reshape(-1)]):
        assert_identical(got, want, call.name)


@pytest.mark.parametrize("name", list(SCHEDULES))
def test_backend_agrees_kernel_by_kernel(name):
    """Whole kernels as lowering makes them, each on the device's results of the kernels before it."""
    build, ulps = SCHEDULES[name]
    lt.manual_seed(0)
    for kernel, got, want in run_schedule_on_both(*build()):
        for k, (g, w) in enumerate(zip(got, want)):
            if ulps:
                assert_within_ulps(g, w, ulps, f"{kernel.name} output {k}")
            else:
                assert_identical(g, w, f"{kernel.name} output {k}")


@pytest.mark.fast
def test_the_reference_refuses_what_the_ir_does_not_define():
    """A valid lane outside its buffer, arithmetic on a 16-bit float (the IR computes them in float32) and an
    op on a dtype its row of `reference.ALU` does not take are errors, not values."""
    o = Var("o0", 4)
    out = (ir.BufferParam(float32, 4, True),)
    beyond = ir.Kernel("", (*out, ir.BufferParam(float32, 3)), (), (o,),
                       (ir.Store(0, Expr.of(o), ir.load(1, float32, Expr.of(o), ())),))
    with pytest.raises(IndexError):
        on_reference(beyond, [np.zeros(3, np.float32)])
    half = ir.load(1, float16, Expr.of(o), ())
    with pytest.raises(TypeError, match="computed in float32"):
        on_reference(ir.Kernel("", (ir.BufferParam(float16, 4, True), ir.BufferParam(float16, 4)), (), (o,),
                               (ir.Store(0, Expr.of(o), ir.alu(Alu.ADD, float16, half, half)),)),
                     [np.zeros(4, np.float16)])
    x = ir.load(1, float32, Expr.of(o), ())
    with pytest.raises(TypeError, match="does not take"):
        on_reference(ir.Kernel("", (*out, ir.BufferParam(float32, 4)), (), (o,),
                               (ir.Store(0, Expr.of(o), ir.alu(Alu.XOR, float32, x, x)),)), [np.zeros(4, np.float32)])
