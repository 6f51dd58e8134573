"""float16 and bfloat16 against torch, which has both on the CPU: casts bit for bit (NaN, inf, overflow,
subnormals, ties), storage and NumPy, creation, elementwise ops, reductions, matmul and random numbers.

Results compare as float32 with the dtype's eps-based tolerance (conftest `TOLERANCE`): torch rounds
after every op, lazytensor's fused kernels once where they store. Runs on the default device; under
`LT_DEVICE=cuda TRITON_INTERPRET=1` on the Triton backend (test_triton.py checks it in every run).
"""
from __future__ import annotations

import re
import sys

import numpy as np
import pytest
import torch

import lazytensor as lt
from conftest import HALF_DTYPES, LAYOUTS, check, layout, to_torch_dtype
from lazytensor import dtypes
from lazytensor.kernels import ir

# float32 values that exercise rounding to 16 bits: signed zeros, NaN, infinities, the largest finite
# values and what overflows past them, subnormals and what underflows, ties to even both ways.
SPECIALS = np.array([
    0.0, -0.0, np.nan, -np.nan, np.inf, -np.inf, 1.0, -1.0, 65504.0, 65519.996, 65520.0, -65520.0, 1e6,
    3.3895314e38, 3.39e38, -3.4e38, 6.1035156e-05, 6.097555e-05, 5.9604645e-08, 2.9802322e-08, 2.9802326e-08,
    1e-40, -1e-45, 9.2e-41, 1 + 2 ** -11, 1 + 3 * 2 ** -11, 1 + 2 ** -8, 1 + 3 * 2 ** -8, 1 + 2 ** -11 + 2 ** -20,
    2049.0, 2051.0, 257.0, 259.0, 0.1, -0.3, 1 / 3,
], np.float32)


def bits(t: lt.Tensor) -> np.ndarray:
    """A 16-bit tensor's bit patterns."""
    return t.realize().node.buffer.numpy().view(np.uint16).reshape(t.shape)


def torch_bits(t: torch.Tensor) -> np.ndarray:
    return t.view(torch.int16).numpy().view(np.uint16)


def same_bits(got: lt.Tensor, expected: torch.Tensor) -> None:
    """Bit for bit, except that any NaN matches any NaN."""
    nan = torch.isnan(expected.float()).numpy()
    np.testing.assert_array_equal(np.isnan(got.float().numpy()), nan)
    np.testing.assert_array_equal(bits(got)[~nan], torch_bits(expected)[~nan])


def pair(arr: np.ndarray, dtype: lt.DType, kind: str = "contiguous") -> tuple[lt.Tensor, torch.Tensor]:
    """float32 data rounded to `dtype` (a realized buffer) on both sides, as a view of `kind`."""
    x, t = layout(arr.astype(np.float32), kind)
    return x.cast(dtype).realize(), t.to(to_torch_dtype(dtype))


def rand_data(shape: tuple[int, ...], seed: int = 0, low: float = -3, high: float = 3) -> np.ndarray:
    return np.random.default_rng(seed).uniform(low, high, shape).astype(np.float32)


# ---- dtypes ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("spelling,expected", [
    ("float16", lt.float16), ("bfloat16", lt.bfloat16), ("f2", lt.float16), (np.float16, lt.float16),
    (np.dtype("float16"), lt.float16), (lt.half, lt.float16),
], ids=str)
def test_to_dtype(spelling, expected):
    assert dtypes.to_dtype(spelling) is expected
    assert lt.zeros(2, dtype=spelling).dtype is expected


def test_ml_dtypes_bfloat16_is_bfloat16():
    import ml_dtypes
    assert dtypes.to_dtype(ml_dtypes.bfloat16) is lt.bfloat16


def test_promotion_follows_torch():
    cases = [(lt.float16, lt.bfloat16), (lt.float16, lt.float32), (lt.bfloat16, lt.float64), (lt.int64, lt.float16),
             (lt.uint8, lt.bfloat16), (lt.bool_, lt.float16)]
    for a, b in cases:
        x, y = lt.ones(2, dtype=a), lt.ones(2, dtype=b)
        expected = torch.ones(2, dtype=to_torch_dtype(a)) + torch.ones(2, dtype=to_torch_dtype(b))
        check(x + y, expected)
    for d in HALF_DTYPES:  # Python floats are weak; an int tensor with one gives the default float
        assert (lt.ones(2, dtype=d) * 2.5).dtype is d
        assert (lt.ones(2, dtype=d) / 3).dtype is d
        assert (lt.ones(2, dtype=lt.int32) * 2.5).dtype is lt.float32


@pytest.mark.parametrize("dtype", HALF_DTYPES, ids=str)
def test_finfo_matches_torch(dtype):
    got, expected = lt.finfo(dtype), torch.finfo(to_torch_dtype(dtype))
    for name in ("bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution"):
        assert getattr(got, name) == getattr(expected, name), name
    with pytest.raises(lt.DTypeError):
        lt.finfo(lt.int32)


# ---- casts ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", HALF_DTYPES, ids=str)
def test_rounding_from_float32_bit_for_bit(dtype):
    """Specials, then float32 bit patterns across the whole range (every exponent, NaN payloads)."""
    random_bits = np.random.default_rng(0).integers(0, 2 ** 32, 20000, dtype=np.uint64).astype(np.uint32)
    data = np.concatenate([SPECIALS, random_bits.view(np.float32)])
    same_bits(lt.asarray(data).cast(dtype), torch.tensor(data).to(to_torch_dtype(dtype)))


@pytest.mark.parametrize("dtype", HALF_DTYPES, ids=str)
def test_every_bit_pattern_widens_exactly(dtype):
    patterns = torch.arange(-2 ** 15, 2 ** 15, dtype=torch.int32).to(torch.int16).view(to_torch_dtype(dtype))
    x = lt.asarray(patterns.float().numpy()).cast(dtype).realize()  # rounding an exact value keeps it
    same_bits(x, patterns)
    for wide, twide in ((lt.float32, torch.float32), (lt.float64, torch.float64)):
        got, expected = x.cast(wide).numpy(), patterns.to(twide).numpy()
        np.testing.assert_array_equal(got.view(np.uint8)[~np.isnan(got).repeat(got.itemsize)],
                                      expected.view(np.uint8)[~np.isnan(expected).repeat(got.itemsize)])
        np.testing.assert_array_equal(np.isnan(got), np.isnan(expected))


@pytest.mark.parametrize("dtype", HALF_DTYPES, ids=str)
def test_casts_to_and_from_every_dtype(dtype):
    finite = np.array([0.0, -0.0, 1.5, -2.5, 2.5, 3.7, -3.7, 100.25, -120.0, 0.4, 255.0, 127.0], np.float32)
    x, t = pair(finite, dtype)
    for other in (lt.bool_, lt.int8, lt.int16, lt.int32, lt.int64, lt.uint8, lt.float32, lt.float64, *HALF_DTYPES):
        check(x.cast(other), t.to(to_torch_dtype(other)), rtol=0, atol=0)
    ints = np.array([0, 1, -1, 2049, 2051, 65519, 65520, 70000, -70000, 2 ** 40 + 1], np.int64)
    same_bits(lt.asarray(ints).cast(dtype), torch.tensor(ints).to(to_torch_dtype(dtype)))
    wide = np.array([1 + 2 ** -11 + 2 ** -30, 1 + 2 ** -8 + 2 ** -30, 1e300, 1e-300, np.nan], np.float64)
    same_bits(lt.asarray(wide).cast(dtype), torch.tensor(wide).to(to_torch_dtype(dtype)))  # through float32
    same_bits(lt.asarray([True, False]).cast(dtype), torch.tensor([True, False]).to(to_torch_dtype(dtype)))


def test_float16_and_bfloat16_convert_into_each_other():
    data = np.concatenate([SPECIALS, rand_data((100,), 3, -1e5, 1e5)])
    for src, dst in ((lt.float16, lt.bfloat16), (lt.bfloat16, lt.float16)):
        x, t = pair(data, src)
        same_bits(x.cast(dst), t.to(to_torch_dtype(dst)))


# ---- storage and NumPy ------------------------------------------------------------------------------

def test_float16_numpy_round_trip():
    arr = rand_data((3, 4)).astype(np.float16)
    x = lt.asarray(arr)
    assert x.dtype is lt.float16 and x.numpy().dtype == np.float16
    np.testing.assert_array_equal(x.numpy(), arr)
    shared = np.zeros(3, np.float16)
    y = lt.from_numpy(shared)
    shared[1] = 2.5
    assert y.tolist() == [0.0, 2.5, 0.0]
    assert lt.asarray([1.0, 2.0], dtype=np.float16).numpy().dtype == np.float16


def test_bfloat16_numpy_is_ml_dtypes():
    import ml_dtypes
    x = lt.asarray([1.0, 3.14159, -0.1], dtype=lt.bfloat16)
    out = x.numpy()
    assert out.dtype == ml_dtypes.bfloat16
    np.testing.assert_array_equal(out.astype(np.float32), torch.tensor([1.0, 3.14159, -0.1]).bfloat16().float())
    back = lt.asarray(out)
    assert back.dtype is lt.bfloat16
    np.testing.assert_array_equal(bits(back), bits(x))
    check(lt.asarray(out, dtype=lt.float16), torch.tensor([1.0, 3.14159, -0.1]).bfloat16().half())


def test_bfloat16_without_ml_dtypes(monkeypatch):
    monkeypatch.setitem(sys.modules, "ml_dtypes", None)  # import ml_dtypes now raises ImportError
    x = lt.asarray([1.0, 2.5, 3.14159], dtype=lt.bfloat16)
    with pytest.raises(lt.DTypeError, match=r"ml_dtypes.*\.float\(\)"):
        x.numpy()
    assert x.tolist() == [1.0, 2.5, 3.140625]
    assert x[1].item() == 2.5 and float(x[2]) == 3.140625
    assert "3.140625" in repr(x) and "bfloat16" in repr(x)
    np.testing.assert_array_equal(x.float().numpy(), np.array([1.0, 2.5, 3.140625], np.float32))


@pytest.mark.parametrize("dtype", HALF_DTYPES, ids=str)
def test_conversion_methods(dtype):
    x = lt.asarray([1.0, 2.0])
    assert x.half().dtype is lt.float16 and x.bfloat16().dtype is lt.bfloat16
    assert x.to(dtype).dtype is dtype and x.to(dtype.name).dtype is dtype and x.astype(dtype).dtype is dtype
    assert x.to(dtype).float().dtype is lt.float32


# ---- creation ------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", HALF_DTYPES, ids=str)
def test_creation(dtype):
    td = to_torch_dtype(dtype)
    check(lt.zeros(2, 3, dtype=dtype), torch.zeros(2, 3, dtype=td))
    check(lt.ones(4, dtype=dtype), torch.ones(4, dtype=td))
    check(lt.full((3,), 0.1, dtype=dtype), torch.full((3,), 0.1, dtype=td))
    check(lt.arange(0, 300, 7, dtype=dtype), torch.arange(0, 300, 7, dtype=td))
    check(lt.arange(0.5, 3, 0.25, dtype=dtype), torch.arange(0.5, 3, 0.25, dtype=td))
    check(lt.linspace(-1, 1, 7, dtype=dtype), torch.linspace(-1, 1, 7, dtype=td))
    check(lt.eye(3, 4, dtype=dtype), torch.eye(3, 4, dtype=td))
    check(lt.zeros_like(lt.ones(2, dtype=dtype)), torch.zeros(2, dtype=td))


# ---- elementwise, movement, reductions ---------------------------------------------------------------

UNARY = {
    "neg": lambda x: -x, "abs": abs, "exp": lambda x: x.exp(), "log": lambda x: (x.abs() + 0.1).log(),
    "sqrt": lambda x: x.abs().sqrt(), "sin": lambda x: x.sin(), "cos": lambda x: x.cos(), "tanh": lambda x: x.tanh(),
    "sigmoid": lambda x: x.sigmoid(), "relu": lambda x: x.relu(), "erf": lambda x: x.erf(),
    "expm1": lambda x: x.expm1(), "floor": lambda x: x.floor(), "round": lambda x: x.round(),
    "reciprocal": lambda x: x.reciprocal(), "square": lambda x: x * x, "scalar": lambda x: x * 0.1 + 2,
    "pow": lambda x: x ** 3, "clip": lambda x: x.clip(-1, 1), "isnan": lambda x: x.isnan(),
    "cmp": lambda x: x > 0.5, "floordiv": lambda x: x // 0.7, "mod": lambda x: x % 0.7,
}


@pytest.mark.parametrize("name", list(UNARY))
@pytest.mark.parametrize("dtype", HALF_DTYPES, ids=str)
def test_unary_ops(dtype, name):
    fn = UNARY[name]
    for kind in LAYOUTS:
        x, t = pair(rand_data((5, 6)), dtype, kind)
        check(fn(x), fn(t))


@pytest.mark.parametrize("dtype", HALF_DTYPES, ids=str)
def test_binary_ops_and_fused_chains(dtype):
    (x, t), (y, u) = pair(rand_data((4, 7), 1), dtype, "transposed"), pair(rand_data((4, 7), 2), dtype)
    for fn in (lambda a, b: a + b, lambda a, b: a - b, lambda a, b: a * b, lambda a, b: a / (b.abs() + 1),
               lambda a, b: a.maximum(b), lambda a, b: a.minimum(b), lambda a, b: (a < b) | (a == b),
               lambda a, b: lt.where(a > b, a, b) if isinstance(a, lt.Tensor) else torch.where(a > b, a, b)):
        check(fn(x, y), fn(t, u))
    check(x * 2.5 + y.sin() - 1, t * 2.5 + u.sin() - 1)
    check(x + y.float(), t + u.float())  # promotes to float32
    check(x.cast(lt.int32) + y, t.int() + u)


@pytest.mark.parametrize("dtype", HALF_DTYPES, ids=str)
def test_movement_and_indexing_are_exact(dtype):
    x, t = pair(rand_data((4, 6)), dtype)
    for fn in (lambda a: a.T.contiguous(), lambda a: a[1:, ::2], lambda a: a.flip(0), lambda a: a.reshape(3, 8),
               lambda a: a[:, None, :].expand(4, 2, 6), lambda a: a[2], lambda a: a[..., -1]):
        check(fn(x), fn(t), rtol=0, atol=0)
    check(x.pad(((1, 0), (0, 2))), torch.nn.functional.pad(t, (0, 2, 1, 0)), rtol=0, atol=0)
    check(lt.concat([x, x * 2]), torch.cat([t, t * 2]), rtol=0, atol=0)
    check(lt.stack([x, x]), torch.stack([t, t]), rtol=0, atol=0)


REDUCTIONS = {
    "sum": (lambda x: x.sum(1), lambda t: t.sum(1)), "sum_all": (lambda x: x.sum(), lambda t: t.sum()),
    "mean": (lambda x: x.mean(0), lambda t: t.mean(0)), "prod": (lambda x: (x * 0.3).prod(1), lambda t: (t * 0.3).prod(1)),
    "max": (lambda x: x.max(1), lambda t: t.amax(1)), "min": (lambda x: x.min(), lambda t: t.amin()),
    "argmax": (lambda x: x.argmax(1), lambda t: t.argmax(1)),
    "var": (lambda x: x.var(1), lambda t: t.var(1, correction=0)),
    "std": (lambda x: x.std(0, correction=1), lambda t: t.std(0)),
    "softmax": (lambda x: x.softmax(-1), lambda t: t.softmax(-1)),
    "log_softmax": (lambda x: x.log_softmax(-1), lambda t: t.log_softmax(-1)),
    "logsumexp": (lambda x: x.logsumexp(1), lambda t: t.logsumexp(1)),
    "cumsum": (lambda x: x.cumsum(1), lambda t: t.cumsum(1)),
    # a running extremum scans in float32 (exact): the CPU's scan cannot fold 16-bit floats itself
    "cummax": (lambda x: x.cummax(1).values, lambda t: t.cummax(1).values),
    "cummin_indices": (lambda x: x.cummin(1).indices, lambda t: t.cummin(1).indices),
}


@pytest.mark.parametrize("name", list(REDUCTIONS))
@pytest.mark.parametrize("dtype", HALF_DTYPES, ids=str)
def test_reductions_keep_the_dtype(dtype, name):
    ours, theirs = REDUCTIONS[name]
    for kind in LAYOUTS:
        x, t = pair(rand_data((6, 33)), dtype, kind)
        check(ours(x), theirs(t))


@pytest.mark.parametrize("dtype", HALF_DTYPES, ids=str)
def test_a_long_sum_accumulates_in_float32(dtype):
    """2**20 times 2**-10: a 16-bit accumulator would stop growing at 2 (float16) or 0.25 (bfloat16).
    The full reduction splits into partials across threads: they stay float32 too."""
    x, t = pair(np.full(1 << 20, 2 ** -10, np.float32), dtype)
    check(x.sum(), t.sum())
    assert x.sum().item() == 1024
    y, u = pair(rand_data((1 << 18,), 5, 0, 1), dtype)
    check(y.mean(), u.mean())
    ones, tones = pair(np.ones(1 << 17, np.float32), dtype)  # a sum past float16's range is inf once stored
    check(ones.sum(), tones.sum())
    check(ones.sum().float(), tones.sum().float())  # and once cast
    # but not inside the kernel: it rounds where it stores, where torch eager rounds after every op
    assert (ones.sum() * 0.25).item() == 32768


# ---- matmul ------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", HALF_DTYPES, ids=str)
def test_matmul(dtype):
    (a, ta), (b, tb) = pair(rand_data((37, 129), 1), dtype), pair(rand_data((129, 53), 2), dtype)
    assert [type(item.kernel) for item in lt.schedule(a @ b)] == [ir.Contraction]
    check(a @ b, ta @ tb)
    check(b.T @ a.T, tb.T @ ta.T)  # transposed operands
    check((a @ b).relu() * 0.5 + 1, (ta @ tb).relu() * 0.5 + 1)  # an epilogue
    (c, tc), (d, td) = pair(rand_data((3, 20, 17), 3), dtype), pair(rand_data((3, 17, 40), 4), dtype, "flipped")
    check(c @ d, tc @ td)  # batched, a flipped operand
    check((a * 2) @ b.cast(lt.float32).cast(dtype), (ta * 2) @ tb)  # operand prologues


def test_matmul_accumulates_in_float32_and_rounds_once():
    """4096 products of 1 * 2**-12 sum to 1 in float32; a float16 accumulator would lose them."""
    a, b = lt.ones(16, 4096, dtype=lt.float16), lt.full((4096, 16), 2 ** -12, dtype=lt.float16)
    np.testing.assert_array_equal((a @ b + 1).float().numpy(), np.full((16, 16), 2.0, np.float32))


# ---- random ------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", HALF_DTYPES, ids=str)
def test_rand_and_randn(dtype):
    """rand takes the top bits a 16-bit float holds (as torch), so it is exact and below 1; randn is
    float32's Box-Muller, rounded once."""
    digits = lt.finfo(dtype).digits
    lt.manual_seed(7)
    u = lt.rand(100000, dtype=dtype)
    lt.manual_seed(7)
    wide = lt.rand(100000)
    assert u.dtype is dtype
    np.testing.assert_array_equal(u.float().numpy(), np.floor(wide.numpy() * 2 ** digits) / 2 ** digits)
    assert 0 <= u.float().numpy().min() and u.float().numpy().max() < 1
    lt.manual_seed(7)
    n = lt.randn(1000, dtype=dtype)
    lt.manual_seed(7)
    np.testing.assert_array_equal(bits(n), bits(lt.randn(1000).cast(dtype)))
    assert abs(lt.randn(100000, dtype=dtype).float().mean().item()) < 0.02


# ---- the LLVM backend --------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", HALF_DTYPES, ids=str)
def test_llvm_half_loops_vectorize_without_library_calls(dtype):
    from lazytensor.kernels.llvm import compile_kernel
    x = lt.ones(4096, dtype=dtype, device="cpu").realize()
    (item,) = lt.schedule(x * 3 + x.sqrt())
    program, _ = compile_kernel(item.kernel)
    text = program.optimized_ir
    # vector loads and stores of the bits; on F16C hosts float16's read as `half`, which the host converts itself
    assert re.search(r"load <\d+ x (i16|half)>", text) and re.search(r"store <\d+ x (i16|half)>", text)
    assert set(re.findall(r"call \S+ @([\w.]+)", text)) <= {"llvm.fabs.f32", "llvm.umax.i32", "llvm.sqrt.f32"} | \
        {f"llvm.{f}.v{n}{t}" for f in ("fabs", "umax", "sqrt") for n in (4, 8, 16) for t in ("f32", "i32")}


def test_a_float64_to_float16_cast_folded_into_one_rounding_runs():
    """LLVM folds a value-preserving float64 -> float32 -> float16 into one conversion, a runtime call the host has
    no instruction for (`runtime.LIBCALLS`): it jumped to address 0 (the fuzzer's seed 2312234)."""
    a = np.arange(8, dtype=np.float16).reshape(1, 1, 1, 8)
    v3 = lt.asarray(a)[..., ::2].var(axis=0, keepdims=True, correction=1)
    out = v3.tanh()
    lt.realize(out, v3)
    with np.errstate(all="ignore"):
        want = torch.tensor(a)[..., ::2].float().var(dim=0, keepdim=True, correction=1)
    check(v3, want.half())
    check(out, want.tanh().half())
