"""Interop: DLPack both ways (zero-copy with NumPy and PyTorch, read-only flags, copies, lifetimes, layouts) and
NumPy's functions on tensors (`__array_ufunc__`, `__array_function__`), each against NumPy or PyTorch.

Device-agnostic: under `LT_DEVICE=cuda TRITON_INTERPRET=1` the tensors are on Triton's interpreter, whose memory is
the host's, and DLPack shows it as CPU memory."""
from __future__ import annotations

import ctypes
import gc
import inspect
import math
import os
import pickle
import re
import weakref

import ml_dtypes
import numpy as np
import pytest
import torch
import torch.utils.dlpack

import lazytensor as lt
from conftest import check, random_array, to_torch_dtype
from lazytensor import dlpack, interop
from lazytensor.kernels.triton.targets import interpreting

DEFAULT_DEVICE = lt.zeros(1).device  # LT_DEVICE, else cpu
EVERY_DTYPE = [lt.bool_, lt.int8, lt.int16, lt.int32, lt.int64, lt.uint8, lt.uint16, lt.uint32, lt.uint64, lt.float16,
               lt.bfloat16, lt.float32, lt.float64]
HOST = (1, 0)  # DLPack's (kDLCPU, 0): the CPU's memory, and that of Triton's interpreter
ON_A_GPU = DEFAULT_DEVICE.startswith("cuda") and not interpreting()


@pytest.fixture
def host_memory(monkeypatch):
    """The export tests below are about host memory, DLPack's (kDLCPU, 0): on a GPU they run on the CPU
    (`test_export_from_a_gpu` is theirs there)."""
    if ON_A_GPU:
        monkeypatch.setenv("LT_DEVICE", "cpu")


def bit_patterns(shape: tuple[int, ...], dtype: lt.DType, seed: int) -> np.ndarray:
    """Random bits of `dtype` (every NaN payload, -0.0, subnormals): what must come back bit for bit."""
    raw = np.random.default_rng(seed).integers(0, 256, math.prod(shape) * dtype.itemsize, dtype=np.uint8)
    if dtype == lt.bool_:
        return (raw % 2).astype(bool).reshape(shape)
    return raw.view(ml_dtypes.bfloat16 if dtype == lt.bfloat16 else np.dtype(dtype.name)).reshape(shape)


def bits(x: lt.Tensor | np.ndarray | torch.Tensor) -> bytes:
    """The data's bytes, row-major."""
    if isinstance(x, lt.Tensor):
        return x.realize().node.buffer.numpy().tobytes()
    if isinstance(x, torch.Tensor):
        return x.contiguous().reshape(-1).view(torch.uint8).numpy().tobytes()
    return np.ascontiguousarray(x).tobytes()


def torch_of(arr: np.ndarray) -> torch.Tensor:
    """A torch tensor over a NumPy array's memory (bfloat16 through its bits)."""
    if arr.dtype == ml_dtypes.bfloat16:
        return torch.from_numpy(arr.view(np.uint16)).view(torch.bfloat16)
    return torch.from_numpy(arr)


_capsule_name = ctypes.PYFUNCTYPE(ctypes.c_char_p, ctypes.py_object)(("PyCapsule_GetName", ctypes.pythonapi))
_capsule_pointer = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.py_object, ctypes.c_char_p)(
    ("PyCapsule_GetPointer", ctypes.pythonapi))


def read_capsule(capsule) -> tuple[bytes, dlpack.DLManagedTensor | dlpack.DLManagedTensorVersioned]:
    """A DLPack capsule's name and the struct it holds (any producer's)."""
    name = _capsule_name(capsule)
    struct = dlpack.DLManagedTensorVersioned if name.endswith(b"_versioned") else dlpack.DLManagedTensor
    return name, struct.from_address(_capsule_pointer(capsule, name))


# ---- DLPack export ------------------------------------------------------------------------------------------


@pytest.mark.usefixtures("host_memory")
@pytest.mark.parametrize("dtype", EVERY_DTYPE, ids=str)
@pytest.mark.parametrize("shape", [(3, 4), (), (0, 2)], ids=str)
def test_export_shares_the_buffer_read_only_and_round_trips_bit_for_bit(dtype, shape):
    arr = bit_patterns(shape, dtype, seed=1)
    x = lt.asarray(arr)
    assert x.__dlpack_device__() == HOST
    ptr = x.realize().node.buffer.ptr
    t = torch.from_dlpack(x)  # a versioned consumer (max_version (1, 0)): the buffer itself
    assert t.dtype == to_torch_dtype(dtype) and tuple(t.shape) == shape and t.device.type == "cpu"
    assert bits(t) == bits(arr) and (t.data_ptr() == ptr or x.numel() == 0)
    back = lt.from_dlpack(t)  # and back, zero-copy again
    assert (back.device, back.dtype, back.shape) == ("cpu", dtype, shape)
    assert bits(back) == bits(arr) and (back.node.buffer.ptr == ptr or x.numel() == 0)
    if dtype != lt.bfloat16:  # NumPy has no bfloat16 of its own to import
        a = np.from_dlpack(x)
        # READ_ONLY: equal tensors may share this buffer. (No buffer of no elements under Triton's interpreter has an
        # address: NumPy makes an array of its own for it.)
        assert not a.flags.writeable or x.numel() == 0
        assert a.dtype == arr.dtype and a.shape == shape and bits(a) == bits(arr)
        assert a.ctypes.data == ptr or x.numel() == 0
        again = lt.from_dlpack(a)
        assert bits(again) == bits(arr) and (again.node.buffer.ptr == ptr or x.numel() == 0)


@pytest.mark.usefixtures("host_memory")
def test_export_of_a_lazy_view_realizes_it_into_a_contiguous_buffer():
    arr = random_array((4, 6), lt.float32, seed=2)
    x = lt.asarray(arr).T[1:3]
    a = np.from_dlpack(x)
    np.testing.assert_array_equal(a, arr.T[1:3])
    assert a.flags.c_contiguous and a.ctypes.data == x.node.buffer.ptr


@pytest.mark.usefixtures("host_memory")
@pytest.mark.parametrize("max_version", [None, (0, 8), (1, 0), (1, 3), (2, 0)], ids=str)
@pytest.mark.parametrize("copy", [None, True, False], ids=str)
@pytest.mark.parametrize("dl_device", [None, HOST], ids=str)
def test_export_by_version_copy_and_device(max_version, copy, dl_device):
    """Versioned: shared and READ_ONLY, or a copy flagged IS_COPIED with copy=True. Unversioned (legacy), which
    cannot say read-only: a copy, but the buffer itself when the consumer insists on copy=False (see dlpack.py).
    Every combination exports, as the array API test suite's test_dunder_dlpack asks."""
    arr = random_array((3, 4), lt.float32, seed=3)
    x = lt.asarray(arr)
    ptr = x.realize().node.buffer.ptr
    capsule = x.__dlpack__(max_version=max_version, copy=copy, dl_device=dl_device)
    name, m = read_capsule(capsule)
    versioned = max_version is not None and max_version[0] >= 1
    shared = copy is False or copy is None and versioned
    assert name == (b"dltensor_versioned" if versioned else b"dltensor")
    if versioned:
        assert (m.version.major, m.version.minor) == (1, 0)
        assert m.flags == (dlpack.READ_ONLY if shared else dlpack.IS_COPIED)
    t = m.dl_tensor
    assert (t.data == ptr) == shared
    assert ((t.device.device_type, t.device.device_id), t.ndim, t.byte_offset) == (HOST, 2, 0)
    assert (t.dtype.code, t.dtype.bits, t.dtype.lanes) == (2, 32, 1)  # kDLFloat
    assert (t.shape[0], t.shape[1], t.strides[0], t.strides[1]) == (3, 4, 4, 1)
    np.testing.assert_array_equal(np.ctypeslib.as_array((ctypes.c_float * 12).from_address(t.data)).reshape(3, 4), arr)


@pytest.mark.usefixtures("host_memory")
def test_a_legacy_consumer_gets_a_copy_it_may_write():
    arr = random_array((3, 4), lt.float32, seed=4)
    x = lt.asarray(arr)
    legacy = torch.utils.dlpack.from_dlpack(x.__dlpack__())  # an unversioned capsule, as DLPack 0.x consumers ask
    assert legacy.data_ptr() != x.realize().node.buffer.ptr
    legacy += 1
    np.testing.assert_array_equal(x.numpy(), arr)
    shared = torch.utils.dlpack.from_dlpack(x.__dlpack__(copy=False))
    assert shared.data_ptr() == x.node.buffer.ptr and bits(shared) == bits(arr)


@pytest.mark.usefixtures("host_memory")
def test_copy_true_gives_the_consumer_a_writable_copy():
    arr = random_array((3, 4), lt.int32, seed=5)
    x = lt.asarray(arr)
    a = np.from_dlpack(x, copy=True)
    assert a.flags.writeable and a.ctypes.data != x.realize().node.buffer.ptr
    a[...] = 0
    np.testing.assert_array_equal(x.numpy(), arr)


@pytest.mark.usefixtures("host_memory")
def test_an_export_lives_until_its_consumer_is_done():
    """The consumer may outlive the tensor: the buffer stays (the pool does not hand its memory out again) until
    the consumer releases it, or until a capsule nobody consumed dies."""
    gc.collect()
    exports = len(dlpack._exports)
    consumers = [np.from_dlpack, torch.from_dlpack, lambda x: x.__dlpack__(max_version=(1, 0)),
                 lambda x: x.__dlpack__(copy=False), lambda x: torch.utils.dlpack.from_dlpack(x.__dlpack__())]
    for consume in consumers:
        x = (lt.arange(1 << 15, dtype=lt.float32) * 3).realize()  # 128 KiB: a block the memory pool would reuse
        held = consume(x)
        expected = np.arange(1 << 15, dtype=np.float32) * 3
        buffer = weakref.ref(x.node.buffer)
        del x
        gc.collect()
        for k in range(4):  # buffers of the same size, which would take a freed block
            (lt.arange(1 << 15, dtype=lt.float32) - k).realize()
        if consume is not consumers[-1]:  # the legacy consumer's copy is all that is held
            assert buffer() is not None
        if type(held).__name__ != "PyCapsule":
            np.testing.assert_array_equal(np.asarray(held), expected)
        assert len(dlpack._exports) == exports + 1
        del held
        gc.collect()
        assert buffer() is None and len(dlpack._exports) == exports


@pytest.mark.usefixtures("host_memory")
def test_export_arguments_the_standard_rules_out():
    x = lt.asarray([1.0, 2.0])
    with pytest.raises(ValueError, match="stream=None"):  # host memory has no stream
        x.__dlpack__(stream=1)
    with pytest.raises(BufferError, match="without a copy"):
        x.__dlpack__(dl_device=(2, 0), copy=False)
    with pytest.raises(BufferError, match=r"DLPack device \(4, 0\)"):
        x.__dlpack__(dl_device=(4, 0))  # OpenCL
    if "cuda:0" not in [d.name for d in lt.devices()] or interpreting():
        with pytest.raises(BufferError, match=r"\(2, 0\)"):  # no GPU here; Triton's interpreter is host memory
            x.__dlpack__(dl_device=(2, 0))


@pytest.mark.skipif(not ON_A_GPU, reason="the export of a GPU's memory: LT_DEVICE=cuda on a GPU")
def test_export_from_a_gpu():
    arr = random_array((3, 4), lt.float32, seed=6)
    x = lt.asarray(arr) * 2
    assert x.__dlpack_device__() == (2, int(DEFAULT_DEVICE.partition(":")[2] or 0))  # kDLCUDA
    t = torch.from_dlpack(x)  # torch's stream waits for the kernel that computes x
    assert t.device.type == "cuda" and t.data_ptr() == x.node.buffer.ptr
    np.testing.assert_array_equal(t.cpu().numpy(), arr * 2)
    back = lt.from_dlpack(t * 3)
    assert back.device == DEFAULT_DEVICE and back.node.buffer.ptr != x.node.buffer.ptr
    np.testing.assert_array_equal(back.numpy(), arr * 6)


def test_reading_data_inside_jit_is_refused():
    @lt.jit
    def f(x):
        return np.from_dlpack(x * 2)

    with pytest.raises(lt.JitError):
        f(lt.asarray([1.0]))


# ---- DLPack import ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", EVERY_DTYPE, ids=str)
def test_import_shares_the_producers_memory(dtype):
    arr = bit_patterns((3, 4), dtype, seed=6)
    t = torch_of(arr)
    for producer, ptr in ((t, t.data_ptr()), *(((arr, arr.ctypes.data),) if dtype != lt.bfloat16 else ())):
        x = lt.from_dlpack(producer)
        assert (x.device, x.dtype, x.shape) == ("cpu", dtype, (3, 4))
        assert x.node.buffer.ptr == ptr and bits(x) == bits(arr)
    x = lt.from_dlpack(t)
    arr[0, 0] = arr[1, 1]  # shared memory: a later write of the producer shows, as with from_numpy
    assert bits(x) == bits(arr)


@pytest.mark.parametrize("shape", [(), (0, 3), (3, 0, 2), (1, 5)], ids=str)
def test_import_of_0d_empty_and_size_1_axes(shape):
    arr = random_array(shape, lt.float64, seed=7)
    for producer in (arr, torch.from_numpy(arr)):
        x = lt.from_dlpack(producer)
        check(x, arr)
    t = torch.arange(5.0).reshape(5, 1).T  # its size-1 axis has stride 1, not 5: still C-contiguous, in place
    assert lt.from_dlpack(t).node.buffer.ptr == t.data_ptr()


@pytest.mark.parametrize("view", ["transposed", "strided", "reversed", "broadcast", "misaligned"])
def test_import_of_another_layout_copies_it_or_refuses(view):
    base = random_array((4, 6), lt.float32, seed=8)
    arr = {"transposed": base.T, "strided": base[:, ::2], "reversed": base[::-1, ::-2],
           "broadcast": np.broadcast_to(base[0], (3, 6)),
           "misaligned": np.frombuffer(b"\0" + base.tobytes(), np.float32, 24, offset=1).reshape(4, 6)}[view]
    x = lt.from_dlpack(arr)
    check(x, np.ascontiguousarray(arr))
    assert not np.shares_memory(x.numpy(), arr)
    with pytest.raises(BufferError, match="copy=False"):
        lt.from_dlpack(arr, copy=False)
    if view != "misaligned":  # torch's views of the same layouts (it has no negative strides: flip copies)
        t = {"transposed": torch.from_numpy(base).T, "strided": torch.from_numpy(base)[:, ::2],
             "reversed": torch.from_numpy(base)[1::2, 1::3], "broadcast": torch.from_numpy(base)[0].expand(3, 6)}[view]
        check(lt.from_dlpack(t), t)


class Shifted:
    """A producer whose DLTensor points `shift` bytes before its data, with a byte_offset of `shift` (DLPack's
    offset, which NumPy and PyTorch leave 0)."""

    def __init__(self, arr: np.ndarray, shift: int):
        self.arr, self.shift = arr, shift

    def __dlpack_device__(self):
        return self.arr.__dlpack_device__()

    def __dlpack__(self, **kwargs):
        capsule = self.arr.__dlpack__(**kwargs)
        _, m = read_capsule(capsule)
        m.dl_tensor.data -= self.shift
        m.dl_tensor.byte_offset += self.shift
        return capsule


def test_import_honours_the_byte_offset():
    arr = random_array((3, 4), lt.float64, seed=9)
    for shift in (8, 3, 4096):
        x = lt.from_dlpack(Shifted(arr, shift))
        check(x, arr)
        assert x.node.buffer.ptr == arr.ctypes.data  # the element address is aligned: no copy


class Legacy:
    """A producer of the array API before 2023.12: `__dlpack__(stream=None)`, unversioned capsules."""

    def __init__(self, arr: np.ndarray):
        self.arr = arr

    def __dlpack_device__(self):
        return self.arr.__dlpack_device__()

    def __dlpack__(self, stream=None):
        return self.arr.__dlpack__(stream=stream)


def test_import_from_a_legacy_producer():
    arr = random_array((2, 3), lt.int16, seed=10)
    x = lt.from_dlpack(Legacy(arr))
    check(x, arr)
    assert x.node.buffer.ptr == arr.ctypes.data
    copied = lt.from_dlpack(Legacy(arr), copy=True)  # the producer could not be asked: copied here
    check(copied, arr)
    assert copied.node.buffer.ptr != arr.ctypes.data


def test_copy_true_never_shares():
    arr = random_array((3, 4), lt.float32, seed=11)
    for producer in (arr, torch.from_numpy(arr)):
        x = lt.from_dlpack(producer, copy=True)
        check(x, arr)
        assert not np.shares_memory(x.numpy(), arr)


def test_the_producers_memory_lives_until_no_tensor_reads_it():
    """The producer may die first: its memory stays until the last tensor (or NumPy view of one) is gone, then its
    deleter runs."""
    arr = np.arange(12.0).reshape(3, 4)
    producer = weakref.ref(arr)  # NumPy's export keeps the array until its deleter runs
    x = lt.from_dlpack(arr)
    y = x * 2  # a lazy tensor reading the memory
    view = x.numpy()
    del arr, x
    gc.collect()
    assert producer() is not None
    np.testing.assert_array_equal(y.numpy(), np.arange(12.0).reshape(3, 4) * 2)
    del y
    gc.collect()
    assert producer() is not None  # the view
    np.testing.assert_array_equal(view, np.arange(12.0).reshape(3, 4))
    del view
    gc.collect()
    assert producer() is None
    t = torch.arange(1 << 16, dtype=torch.float32)
    x = lt.from_dlpack(t)
    del t
    gc.collect()
    for _ in range(4):
        torch.zeros(1 << 16)  # allocations that would take freed memory
    np.testing.assert_array_equal(x.numpy(), np.arange(1 << 16, dtype=np.float32))


class VersionTwo(Shifted):
    """A producer that claims DLPack 2.0, an ABI lazytensor does not read."""

    def __dlpack__(self, **kwargs):
        capsule = self.arr.__dlpack__(**kwargs)
        read_capsule(capsule)[1].version.major = 2
        return capsule


def test_import_refuses_what_it_cannot_read():
    with pytest.raises(BufferError, match="DLPack 2.0"):
        lt.from_dlpack(VersionTwo(np.zeros(3), 0))
    with pytest.raises(BufferError, match="no lazytensor dtype"):
        lt.from_dlpack(torch.zeros(2, dtype=torch.complex64))
    with pytest.raises(TypeError, match="does not export DLPack"):
        lt.from_dlpack([1.0, 2.0])


def test_from_dlpack_of_a_tensor_is_its_own_data_on_its_device():
    """Through no capsule: a tensor of Triton's interpreter would otherwise come back as CPU memory."""
    x = lt.asarray(random_array((3, 4), lt.float32, seed=12)) + 1
    y = lt.from_dlpack(x)
    assert y is not x and y.node is x.node and y.device == x.device
    check(lt.from_dlpack(x, device="cpu"), x.numpy())
    assert lt.from_dlpack(x, device=x.device, copy=False).node is x.node
    if x.device != "cpu":
        with pytest.raises(BufferError, match="without a copy"):
            lt.from_dlpack(x, device="cpu", copy=False)


def test_from_dlpack_to_another_device():
    arr = random_array((3, 4), lt.float32, seed=13)
    x = lt.from_dlpack(arr, device=DEFAULT_DEVICE)  # host memory: a copy to cuda:0 under Triton's interpreter
    assert x.device == DEFAULT_DEVICE
    check(x, arr)
    with pytest.raises(BufferError, match="without a copy"):
        lt.from_dlpack(arr, device="cuda:0", copy=False)


# ---- NumPy's functions on tensors ---------------------------------------------------------------------------

rng = np.random.default_rng(14)
DATA = {
    "f": rng.uniform(-3, 3, (3, 4)), "g": rng.uniform(-3, 3, (3, 4)), "p": rng.uniform(0.5, 3, (3, 4)),
    "m": rng.uniform(-3, 3, (4, 3)), "v": rng.uniform(-3, 3, 4), "w": rng.uniform(-3, 3, 4),
    "n": np.array([[np.nan, 1.0, -np.inf, 2.0], [0.0, -0.0, np.inf, np.nan], [3.0, np.nan, -1.0, 1.0]]),
    "d": np.array([[3.0, 1.0, 3.0, np.nan], [np.nan, 1.0, 2.0, 3.0], [-0.0, 0.0, np.nan, 1.0]]),
    "b": rng.random((3, 4)) < 0.5, "c": rng.random((3, 4)) < 0.5,
    "i": rng.integers(-50, 50, (3, 4)).astype(np.int32), "j": rng.integers(-50, 50, (3, 4)).astype(np.int32),
    "s": np.sort(rng.uniform(-3, 3, 6)), "x3": rng.uniform(-3, 3, (4, 3)), "y3": rng.uniform(-3, 3, (4, 3)),
    "u": rng.uniform(-0.99, 0.99, (3, 4)), "q": rng.uniform(1, 3, (3, 4)),
    "k": rng.integers(0, 8, (3, 4)).astype(np.int32),
    "a": rng.uniform(-1, 1, (3, 3)) + 3 * np.eye(3),  # far from singular
}
DATA["h"] = DATA["a"] @ DATA["a"].T  # symmetric positive definite

def numpy_call(name: str, params: str):
    """`np.<name>` of the data that `params` names (a case's parameters name its data in DATA)."""
    def call(*data):
        return getattr(np, name)(*data)

    call.__signature__ = inspect.Signature([inspect.Parameter(p, inspect.Parameter.POSITIONAL_ONLY)
                                            for p in params.split()])
    return call


def nan_reduction(name: str):
    """`np.<name>` of data with NaNs, over every axis and over each (no slice of NaNs alone)."""
    def call(n, d):
        fn = getattr(np, name)
        return fn(n), fn(d, axis=1, keepdims=True), fn(n, axis=0)

    return call


# Every row of interop.ROWS, called as NumPy is called (several calls where the parameters vary): the same
# expression on tensors and on NumPy arrays.
def put_along_axis_of_a_copy(f):
    """np.put_along_axis writes into its array: into a copy of the case's data, which it returns."""
    a = f.copy()
    np.put_along_axis(a, np.array([[0], [3], [-1]]), 7.0, 1)
    return a


CASES = {
    **{name: numpy_call(name, "f g") for name in (
        "add", "subtract", "multiply", "divide", "floor_divide", "remainder", "logaddexp", "less", "less_equal",
        "greater", "greater_equal", "equal", "not_equal", "hypot", "copysign", "nextafter", "arctan2", "mod",
        "true_divide", "fmod", "heaviside", "logaddexp2")},
    "fmax": lambda n, d: (np.fmax(n, d), np.fmax(n, 1.5)),
    "fmin": lambda n, d: (np.fmin(n, d), np.fmin(-1.5, d)),
    "ldexp": lambda f, k: np.ldexp(f, k),
    "float_power": lambda p, f: (np.float_power(p, f), np.float_power(p, 2)),
    "left_shift": lambda i, k: np.left_shift(i, k),
    "right_shift": lambda i, k: np.right_shift(i, k),
    "maximum": lambda n, f: (np.maximum(n, f), np.maximum(f, np.nan)),
    "minimum": lambda n, f: (np.minimum(n, f), np.minimum(f, -1)),
    "power": lambda p, f: (np.power(p, f), np.power(f, 2), np.power(p, 0.5)),
    "logical_and": lambda b, c: np.logical_and(b, c),
    "logical_or": lambda b, c: np.logical_or(b, c),
    "logical_xor": lambda b, c: np.logical_xor(b, c),
    "bitwise_and": lambda i, j: np.bitwise_and(i, j),
    "bitwise_or": lambda i, j: np.bitwise_or(i, j),
    "bitwise_xor": lambda i, j: np.bitwise_xor(i, j),
    "gcd": lambda i, j: (np.gcd(i, j), np.gcd(i, 6)),
    "lcm": lambda i, j: (np.lcm(i, j), np.lcm(10, j)),
    "matmul": lambda f, m: (np.matmul(f, m), np.matmul(m, f[:, 0])),
    "vecdot": lambda f, g: (np.vecdot(f, g), np.vecdot(f, g, axis=0)),
    **{name: numpy_call(name, "f") for name in (
        "negative", "positive", "exp", "exp2", "expm1", "square", "sin", "cos", "tan", "tanh", "floor", "ceil",
        "trunc", "absolute", "rint", "conjugate", "sinh", "cosh", "arctan", "arcsinh", "fabs", "deg2rad", "rad2deg",
        "degrees", "radians", "cbrt", "modf", "sinc", "frexp", "i0")},
    "isposinf": lambda n: np.isposinf(n),
    "block": lambda f, g: (np.block([[f, g], [g, f]]), np.block([f[0], 1.5, g[1]])),
    "isneginf": lambda n: np.isneginf(n),
    **{name: numpy_call(name, "u") for name in ("arcsin", "arccos", "arctanh")},
    "arccosh": lambda q: np.arccosh(q),
    "sign": lambda n, i: (np.sign(n), np.sign(i)),
    "signbit": lambda n: np.signbit(n),
    **{name: numpy_call(name, "p") for name in ("log", "log2", "log10", "log1p", "sqrt")},
    "isnan": lambda n: np.isnan(n),
    "isinf": lambda n: np.isinf(n),
    "isfinite": lambda n: np.isfinite(n),
    "logical_not": lambda b: np.logical_not(b),
    "invert": lambda i: np.invert(i),
    "add.reduce": lambda f: (np.add.reduce(f), np.add.reduce(f, axis=1, keepdims=True), np.add.reduce(f, None)),
    "multiply.reduce": lambda f: (np.multiply.reduce(f), np.multiply.reduce(f, axis=(0, 1))),
    "maximum.reduce": lambda n: (np.maximum.reduce(n), np.maximum.reduce(n, axis=1, keepdims=True)),
    "minimum.reduce": lambda f: (np.minimum.reduce(f), np.minimum.reduce(f, axis=None)),
    "logical_and.reduce": lambda b: (np.logical_and.reduce(b), np.logical_and.reduce(b, axis=1)),
    "logical_or.reduce": lambda b: (np.logical_or.reduce(b), np.logical_or.reduce(b, axis=None)),
    "add.accumulate": lambda f: (np.add.accumulate(f), np.add.accumulate(f, axis=1)),
    "multiply.accumulate": lambda f: (np.multiply.accumulate(f), np.multiply.accumulate(f, 1, np.float64)),
    "sum": lambda i: (np.sum(i), np.sum(i, axis=0), np.sum(i, axis=(0, 1), keepdims=True), np.sum(i, dtype=np.int8)),
    "prod": lambda f: (np.prod(f), np.prod(f, axis=1, keepdims=True)),
    "mean": lambda f: (np.mean(f), np.mean(f, axis=0), np.mean(f, axis=1, keepdims=True), np.mean(f, dtype=np.float32)),
    "var": lambda f: (np.var(f), np.var(f, axis=1, ddof=1), np.var(f, axis=0, correction=1, keepdims=True)),
    "std": lambda f: (np.std(f), np.std(f, axis=1, ddof=1), np.std(f, correction=0.5)),
    "max": lambda n: (np.max(n), np.max(n, axis=0), np.max(n, axis=1, keepdims=True)),
    "amax": lambda f: (np.amax(f), np.amax(f, axis=1)),
    "min": lambda n: (np.min(n), np.min(n, axis=0)),
    "amin": lambda f: (np.amin(f), np.amin(f, axis=1, keepdims=True)),
    "any": lambda b: (np.any(b), np.any(b, axis=0), np.any(b, axis=1, keepdims=True)),
    "all": lambda f: (np.all(f), np.all(f > -2, axis=0)),
    "argmax": lambda n: (np.argmax(n), np.argmax(n, axis=1), np.argmax(n, axis=0, keepdims=True)),
    "argmin": lambda f: (np.argmin(f), np.argmin(f, axis=1)),
    "count_nonzero": lambda b: (np.count_nonzero(b, axis=0), np.count_nonzero(b, axis=1, keepdims=True)),
    "cumsum": lambda f: (np.cumsum(f), np.cumsum(f, axis=1), np.cumsum(f, 0, np.float32)),
    "cumprod": lambda f: (np.cumprod(f), np.cumprod(f, axis=0)),
    "cumulative_sum": lambda f: (np.cumulative_sum(f, axis=1), np.cumulative_sum(f, axis=0, include_initial=True)),
    "cumulative_prod": lambda v: (np.cumulative_prod(v), np.cumulative_prod(v, include_initial=True)),
    "fix": lambda f: np.fix(f),
    "diff": lambda f: (np.diff(f), np.diff(f, n=2, axis=0), np.diff(f, axis=0, prepend=f[:1], append=f[-1:])),
    **{name: nan_reduction(name) for name in ("nansum", "nanprod", "nanmean", "nanmax", "nanmin", "nanargmax", "nanargmin", "nanmedian")},
    "nanvar": lambda n, d: (np.nanvar(n), np.nanvar(d, axis=1, ddof=1), np.nanvar(n, axis=0, keepdims=True)),
    "nanstd": lambda n, d: (np.nanstd(n), np.nanstd(d, axis=1, ddof=1), np.nanstd(n, axis=0, keepdims=True)),
    "nancumsum": lambda d: (np.nancumsum(d), np.nancumsum(d, axis=1)),
    "nancumprod": lambda d: (np.nancumprod(d), np.nancumprod(d, axis=0)),
    "nanquantile": lambda d: (np.nanquantile(d, 0.3), np.nanquantile(d, [0.2, 0.9], axis=1, method="lower")),
    "nanpercentile": lambda d: (np.nanpercentile(d, 30), np.nanpercentile(d, [20, 90], axis=0, keepdims=True)),
    "ptp": lambda f, i: (np.ptp(f), np.ptp(i, axis=1), np.ptp(f, axis=0, keepdims=True)),
    "cov": lambda f, g, v: (np.cov(f), np.cov(f, g, rowvar=False), np.cov(v, bias=True), np.cov(f, ddof=2),
                            np.cov(f, fweights=np.array([1, 2, 1, 3]), aweights=np.array([0.5, 1.0, 2.0, 1.0]))),
    "corrcoef": lambda f, v, w: (np.corrcoef(f), np.corrcoef(v, w), np.corrcoef(f, rowvar=False)),
    "digitize": lambda f, s: (np.digitize(f, s), np.digitize(f, s[::-1], right=True)),
    "interp": lambda f, s: (np.interp(f, s, np.cos(s)), np.interp(f, s, np.cos(s), left=-5.0, right=5.0)),
    "median": lambda d, f: (np.median(f), np.median(f, axis=1, keepdims=True), np.median(d, axis=0),
                            np.median(f * 1, overwrite_input=True)),
    "average": lambda f, p, v: (np.average(f), np.average(f, axis=1, weights=v), np.average(f, weights=p),
                                np.average(f, 0, p, returned=True, keepdims=True)),
    "percentile": lambda f: (np.percentile(f, 30), np.percentile(f, [10, 90], axis=0, method="nearest")),
    "quantile": lambda f: (np.quantile(f, 0.3, axis=1, keepdims=True), np.quantile(f, [0.25, 0.5], method="lower")),
    "bincount": lambda k, f: (np.bincount(k.ravel()), np.bincount(k.ravel(), weights=f.ravel(), minlength=10)),
    "histogram": lambda f, p: (np.histogram(f), np.histogram(f, bins=5, range=(-2, 2), weights=p, density=True)),
    "histogram_bin_edges": lambda f: (np.histogram_bin_edges(f), np.histogram_bin_edges(f, 5, (-2, 2))),
    "histogram2d": lambda v, w: (np.histogram2d(v, w), np.histogram2d(v, w, (3, 4), [(-3, 3), (-2, 2)], True)),
    "histogramdd": lambda f, p: (np.histogramdd(f, 3), np.histogramdd(f.T, (2, 3, 4), weights=p[0], density=True)),
    "round": lambda f: (np.round(f), np.round(f, 1), np.round(f * 100, decimals=-1)),
    "around": lambda f: np.around(f, 2),
    "clip": lambda f, g: (np.clip(f, -1, 1), np.clip(f, 0, None), np.clip(f, max=1), np.clip(f, g, 2),
                          np.clip(f, min=-1, max=g)),
    "real": lambda f: np.real(f),
    "imag": lambda f: np.imag(f),
    "nan_to_num": lambda f: (np.nan_to_num(f / f), np.nan_to_num(np.log(f), nan=1.0, posinf=2.0, neginf=-3.0)),
    "cross": lambda x3, y3: (np.cross(x3, y3), np.cross(x3.T, y3.T, axis=0)),
    "isclose": lambda f, g: (np.isclose(f, f + 1e-9), np.isclose(f, g, atol=2), np.isclose(f, np.nan, equal_nan=True)),
    "array_equal": lambda f, n: (np.array_equal(f, f), np.array_equal(f, f + 1), np.array_equal(f, f[:1]),
                                 np.array_equal(n, n), np.array_equal(n, n, equal_nan=True)),
    "array_equiv": lambda f: (np.array_equiv(f, f), np.array_equiv(f[:1], f), np.array_equiv(f, f[:, :1])),
    "isreal": lambda f: np.isreal(f),
    "iscomplex": lambda f: np.iscomplex(f),
    "divmod": lambda f, p: np.divmod(f, p),
    "allclose": lambda f, g: (np.allclose(f, f * (1 + 1e-7)), np.allclose(f, g), np.allclose(f, g, rtol=10, atol=5)),
    "where": lambda f, g: (np.where(f > 0, f, g), np.where(f > 0, f, 0.0), np.where(f > 1), np.where(f < g, 1.5, g)),
    "nonzero": lambda f: np.nonzero(f > 0),
    "argwhere": lambda f: np.argwhere(f > 0),
    "flatnonzero": lambda f: np.flatnonzero(f > 0),
    "trim_zeros": lambda f: (np.trim_zeros(np.where(f > 1, f, 0)), np.trim_zeros(np.where(f > 1, f, 0), "b", axis=1)),
    "ix_": lambda v, w: np.ix_(v > 0, w),
    "put_along_axis": lambda f: put_along_axis_of_a_copy(f),
    "extract": lambda f: np.extract(f > 0, f),
    "compress": lambda f: (np.compress([True, False, True], f, axis=0), np.compress([False, True], f)),
    "delete": lambda f: (np.delete(f, 1, axis=0), np.delete(f, [0, -1], axis=1), np.delete(f, slice(2, 9, 3))),
    "take": lambda f: (np.take(f, [0, 5, 11]), np.take(f, [2, 0, -1], axis=1), np.take(f, 3)),
    "take_along_axis": lambda f: np.take_along_axis(f, np.argsort(f, axis=1), axis=1),
    "searchsorted": lambda s, f: (np.searchsorted(s, f), np.searchsorted(s, f, side="right"),
                                  np.searchsorted(s[::-1], f, sorter=np.argsort(s[::-1]))),
    "sort": lambda n: (np.sort(n), np.sort(n, axis=0), np.sort(n, axis=None), np.sort(n, kind="stable")),
    "argsort": lambda f: (np.argsort(f), np.argsort(f, axis=0), np.argsort(f, axis=None), np.argsort(f, stable=True)),
    "unique": lambda d: (np.unique(d), np.unique(d, return_index=True, return_inverse=True, return_counts=True),
                         np.unique(d, return_counts=True, equal_nan=False), np.unique(d, return_inverse=True)),
    "unique_values": lambda d: np.unique_values(d),
    "unique_counts": lambda d: tuple(np.unique_counts(d)),
    "unique_inverse": lambda d: tuple(np.unique_inverse(d)),
    "unique_all": lambda d: tuple(np.unique_all(d)),
    "isin": lambda i, j: (np.isin(i, j[0]), np.isin(i, j, invert=True), np.isin(i, j, assume_unique=False)),
    "shape": lambda f: np.shape(f),
    "ndim": lambda f: np.ndim(f),
    "resize": lambda f: (np.resize(f, (5, 5)), np.resize(f, 7)),
    "rollaxis": lambda f: (np.rollaxis(f, 1), np.rollaxis(f[None], 2, 1)),
    "size": lambda f: (np.size(f), np.size(f, 1)),
    "copy": lambda f: np.copy(f),
    "astype": lambda f: (np.astype(f, np.float32), np.astype(f, "int8"), np.astype(f, np.float64, copy=False)),
    "reshape": lambda f: (np.reshape(f, (4, 3)), np.reshape(f, -1), np.reshape(f, shape=(2, 6)),
                          np.reshape(f, (6, 2), copy=True)),
    "ravel": lambda f: np.ravel(f),
    "squeeze": lambda f: (np.squeeze(f[:1]), np.squeeze(f[:, :1], axis=1)),
    "expand_dims": lambda f: (np.expand_dims(f, 0), np.expand_dims(f, (0, 3))),
    "transpose": lambda f: (np.transpose(f), np.transpose(f, (1, 0)), np.transpose(f, None), np.permute_dims(f)),
    "matrix_transpose": lambda f: np.matrix_transpose(f),
    "swapaxes": lambda f: np.swapaxes(f, 0, 1),
    "moveaxis": lambda f: np.moveaxis(f[None], 0, -1),
    "flip": lambda f: (np.flip(f), np.flip(f, 1), np.flip(f, axis=(0, 1))),
    "diag": lambda f: (np.diag(f), np.diag(f, 1), np.diag(f, k=-1), np.diag(f[0]), np.diag(f[0], k=2)),
    "roll": lambda f: (np.roll(f, 2), np.roll(f, 1, axis=0), np.roll(f, (1, -1), axis=(0, 1))),
    "broadcast_to": lambda v: np.broadcast_to(v, (3, 4)),
    "broadcast_arrays": lambda v, f: np.broadcast_arrays(v, f),
    "tile": lambda v, f: (np.tile(v, 2), np.tile(f, (2, 1))),
    "repeat": lambda f: (np.repeat(f, 2), np.repeat(f, 3, axis=1)),
    "pad": lambda f: (np.pad(f, 1), np.pad(f, ((1, 0), (0, 2)), constant_values=7), np.pad(f, (2, 1), "constant"),
                      np.pad(f, ((1, 2), (3, 0)), "reflect"), np.pad(f, 2, mode="wrap")),
    "tril": lambda f: (np.tril(f), np.tril(f, k=1)),
    "atleast_1d": lambda v, f: (np.atleast_1d(v), np.atleast_1d(f[0, 0], f)),
    "atleast_2d": lambda v, f: (np.atleast_2d(v), np.atleast_2d(f[0, 0], f)),
    "atleast_3d": lambda v, f: (np.atleast_3d(v), np.atleast_3d(f[0, 0], f)),
    "rot90": lambda f: (np.rot90(f), np.rot90(f, 3, axes=(1, 0)), np.rot90(f, k=2)),
    "fliplr": lambda f: np.fliplr(f),
    "union1d": lambda i, k: np.union1d(i, k),
    "intersect1d": lambda k, s: (np.intersect1d(k, k[0]), np.intersect1d(s, s[1:4], assume_unique=True)),
    "setdiff1d": lambda k: np.setdiff1d(k, k[0]),
    "setxor1d": lambda k: np.setxor1d(k, k[0]),
    "lexsort": lambda k, i: (np.lexsort(np.stack([i, k])), np.lexsort(np.stack([k, i]), axis=0)),
    # any arrangement with the kth values in place is a partition: those are compared
    "partition": lambda f: (np.partition(f, 2)[:, 2], np.partition(f, [0, 2], axis=0)[[0, 2]]),
    "argpartition": lambda v: np.argpartition(v, 1)[1],
    "unravel_index": lambda k: (np.unravel_index(k, (2, 4)), np.unravel_index(k[0, 0], (8,))),
    "ravel_multi_index": lambda k, i: (np.ravel_multi_index((k, k), (8, 9)), np.ravel_multi_index((i, k), (5, 6), mode="wrap"),
                                       np.ravel_multi_index((i, k), (5, 6), mode="clip")),
    "select": lambda f, g: (np.select([f > 1, f < -1], [f, g]), np.select([f > 0], [g], default=-2.0)),
    "ediff1d": lambda f: (np.ediff1d(f), np.ediff1d(f, to_end=f[0], to_begin=-1.0)),
    "gradient": lambda f, s: (np.gradient(f), np.gradient(f, 0.5, axis=1), np.gradient(f[0], s[:4], edge_order=2),
                              np.gradient(f, 2.0, s[:4])),
    "trapezoid": lambda f, s: (np.trapezoid(f), np.trapezoid(f, s[:4]), np.trapezoid(f, dx=0.5, axis=0)),
    "convolve": lambda v, w, s: (np.convolve(v, s), np.convolve(s, w[:3], mode="same"), np.convolve(v, s, mode="valid")),
    "correlate": lambda v, s: (np.correlate(s, v), np.correlate(v, s, mode="full"), np.correlate(v, s, mode="same")),
    "unwrap": lambda f: (np.unwrap(f * 3), np.unwrap(f * 3, axis=0, period=4.0)),
    "polyval": lambda v, f: np.polyval(v, f),
    "fill_diagonal": lambda f: (np.fill_diagonal(g := f.copy(), 7.0), np.fill_diagonal(h := f.T.copy(), 7.0, True), g, h),
    "flipud": lambda v: np.flipud(v),
    "append": lambda f, v: (np.append(f, v), np.append(f, f, axis=0)),
    "vander": lambda v: (np.vander(v), np.vander(v, 3, increasing=True)),
    "diagflat": lambda v, f: (np.diagflat(v), np.diagflat(f, k=-1)),
    "triu": lambda f: (np.triu(f), np.triu(f, -1)),
    "concatenate": lambda f, g: (np.concatenate([f, g]), np.concatenate((f, g), axis=1), np.concatenate([f, g], None),
                                 np.concat([f, g], axis=-1)),
    "stack": lambda f, g: (np.stack([f, g]), np.stack([f, g], axis=2)),
    "vstack": lambda v, w: np.vstack([v, w]),
    "hstack": lambda v, w: np.hstack([v, w]),
    "column_stack": lambda v, f: np.column_stack([v, f.T]),
    "dstack": lambda f, g: np.dstack([f, g]),
    "array_split": lambda f, v: (np.array_split(f, 3, axis=1), np.array_split(v, [1])),
    "hsplit": lambda f: np.hsplit(f, 2),
    "vsplit": lambda f: np.vsplit(f, [1]),
    "dsplit": lambda f: np.dsplit(f.reshape(3, 2, 2), 2),
    "split": lambda f: (np.split(f, 2, axis=1), np.split(f, [1, 3])),
    "unstack": lambda f: (np.unstack(f), np.unstack(f, axis=1)),
    "meshgrid": lambda v, s: (np.meshgrid(v, s), np.meshgrid(v, s, indexing="ij"), np.meshgrid(v, s, copy=False)),
    "zeros_like": lambda f: (np.zeros_like(f), np.zeros_like(f, dtype=np.int32)),
    "ones_like": lambda f: (np.ones_like(f), np.ones_like(f, dtype=bool)),
    "empty_like": lambda f: (np.empty_like(f).shape, np.empty_like(f, dtype=np.int8).dtype.name),
    "full_like": lambda f, i: (np.full_like(f, 2.5), np.full_like(i, 7), np.full_like(f, 1, dtype=np.int16)),
    "dot": lambda v, w: np.dot(v, w),
    "outer": lambda v, f: np.outer(v, f),
    "tensordot": lambda f, m: (np.tensordot(f, m, axes=1), np.tensordot(f, m, axes=([1, 0], [0, 1]))),
    "einsum": lambda f, m: (np.einsum("ij,jk->ik", f, m), np.einsum("ij->j", f), np.einsum("ij,ij->", f, f)),
    "trace": lambda f, i: (np.trace(f), np.trace(f, 1), np.trace(i.reshape(2, 3, 2), axis1=1, axis2=2)),
    "inner": lambda f, g: (np.inner(f, g), np.inner(f[0], g[1])),
    "vdot": lambda f, g: np.vdot(f, g),
    "kron": lambda f, v: (np.kron(f, v), np.kron(f, f)),
    "linalg.norm": lambda f, v: (np.linalg.norm(f), np.linalg.norm(v, ord=1), np.linalg.norm(f, axis=1, keepdims=True),
                                 np.linalg.norm(f, ord=np.inf)),
    "linalg.matmul": lambda f, m: np.linalg.matmul(f, m),
    "linalg.tensordot": lambda f, m: np.linalg.tensordot(f, m, axes=1),
    "linalg.vecdot": lambda f, g: (np.linalg.vecdot(f, g), np.linalg.vecdot(f, g, axis=0)),
    "linalg.outer": lambda v, w: np.linalg.outer(v, w),
    "linalg.matrix_transpose": lambda f: np.linalg.matrix_transpose(f),
    "linalg.diagonal": lambda f: (np.linalg.diagonal(f), np.linalg.diagonal(f, offset=1)),
    "linalg.trace": lambda f: (np.linalg.trace(f), np.linalg.trace(f, offset=-1)),
    "linalg.cross": lambda x3, y3: (np.linalg.cross(x3, y3), np.linalg.cross(x3.T, y3.T, axis=0)),
    "linalg.vector_norm": lambda f: (np.linalg.vector_norm(f), np.linalg.vector_norm(f, axis=1, ord=1, keepdims=True)),
    "linalg.matrix_norm": lambda f: (np.linalg.matrix_norm(f), np.linalg.matrix_norm(f, ord=np.inf)),
    "linalg.cholesky": lambda h: (np.linalg.cholesky(h), np.linalg.cholesky(h, upper=True)),
    "linalg.det": lambda a: np.linalg.det(a),
    "linalg.slogdet": lambda a: np.linalg.slogdet(a),
    "linalg.inv": lambda a: np.linalg.inv(a),
    "linalg.solve": lambda a, h: (np.linalg.solve(a, h), np.linalg.solve(a, h[:, 0])),
    "linalg.eigh": lambda h: np.linalg.eigh(h),
    "linalg.eigvalsh": lambda h: np.linalg.eigvalsh(h),
    "linalg.qr": lambda f: (np.linalg.qr(f), np.linalg.qr(f, mode="complete")),
    "linalg.svd": lambda f: (np.linalg.svd(f), np.linalg.svd(f, full_matrices=False)),
    "linalg.svdvals": lambda f: np.linalg.svdvals(f),
    "linalg.matrix_power": lambda a: (np.linalg.matrix_power(a, 3), np.linalg.matrix_power(a, -2),
                                      np.linalg.matrix_power(a, 0)),
    "linalg.matrix_rank": lambda f: (np.linalg.matrix_rank(f), np.linalg.matrix_rank(f, rtol=0.5)),
    "linalg.cond": lambda a: (np.linalg.cond(a), np.linalg.cond(a, "fro"), np.linalg.cond(a, -2)),
    "linalg.lstsq": lambda m, v, f: (np.linalg.lstsq(m, v), np.linalg.lstsq(f, f)),
    "linalg.multi_dot": lambda v, f, m: np.linalg.multi_dot([v, m, f, m]),
    "linalg.tensorinv": lambda a: np.linalg.tensorinv(a, ind=1),
    "linalg.tensorsolve": lambda a: np.linalg.tensorsolve(a, a[0]),
}


def same(got, expected) -> None:
    """A NumPy call on tensors gave what it gives on NumPy arrays: tensors on the tensors' device for arrays
    (dtype, shape, values within the dtype's tolerance), sequences item by item, anything else equal."""
    if isinstance(expected, (np.ndarray, np.generic)):
        assert isinstance(got, lt.Tensor) and got.device == DEFAULT_DEVICE, f"got {type(got).__name__}"
        check(got, np.asarray(expected))
    elif isinstance(expected, (tuple, list)):
        assert isinstance(got, (tuple, list)) and len(got) == len(expected)
        for g, e in zip(got, expected):
            same(g, e)
    else:
        assert got == expected and type(got) is type(expected)


# The cases that factorize (LAPACK, on the CPU only): on another device they raise DeviceError
FACTORIZING = {f"linalg.{name}" for name in ("cholesky", "det", "slogdet", "inv", "solve", "eigh", "eigvalsh", "qr",
                                             "svd", "svdvals", "matrix_power", "matrix_rank", "cond", "lstsq",
                                             "tensorinv", "tensorsolve")}


@pytest.mark.parametrize("name", sorted(CASES))
def test_numpy_calls_on_tensors_give_numpys_results_as_lazy_tensors(name):
    case = CASES[name]
    data = [DATA[p] for p in inspect.signature(case).parameters]
    if name in FACTORIZING and DEFAULT_DEVICE != "cpu":
        with pytest.raises(lt.DeviceError, match="to\\('cpu'\\)"):
            case(*(lt.asarray(a) for a in data))
        return
    with np.errstate(all="ignore"):
        expected = case(*data)
    same(case(*(lt.asarray(a) for a in data)), expected)


def test_every_row_has_a_case_and_names_numpys_parameters():
    assert set(CASES) == set(interop.ROWS)
    for name, row in interop.ROWS.items():
        fn = interop._numpy(name)
        names = [p.lstrip("*") for p in row.positional] + list(row.keywords)
        if isinstance(fn, np.ufunc):
            assert len(row.positional) == fn.nin and set(row.keywords) <= {"axis"}, name
        elif isinstance(getattr(fn, "__self__", None), np.ufunc):  # a ufunc's method
            assert row.positional == ("array",) and set(row.keywords) <= set(interop._UFUNC_DEFAULTS[fn.__name__])
        else:  # np.pad takes its mode's arguments through **kwargs
            assert set(names) <= {*inspect.signature(fn).parameters, *(["constant_values"] * (name == "pad"))}, name
    hinted = {p for name in interop.ROWS if not isinstance(fn := interop._numpy(name), np.ufunc) and "." not in name
              for p in inspect.signature(fn).parameters}
    assert set(interop.HINTS) <= hinted


def test_every_numpy_function_lazytensor_has_is_mapped_or_explained():
    """A NumPy function that dispatches on its arguments (a ufunc, or through __array_function__) and has a
    lazytensor namesake is in the table, or in DIFFERENT with the reason its semantics differ."""
    def dispatches(fn) -> bool:
        return isinstance(fn, np.ufunc) or type(fn).__name__ == "_ArrayFunctionDispatcher"

    names = [n for n in lt.__all__ if dispatches(getattr(np, n, None))]
    names += [f"linalg.{n}" for n in lt.linalg.__all__ if dispatches(getattr(np.linalg, n, None))]
    assert len(names) > 100
    for name in names:
        fn = interop._numpy(name)
        assert (fn in interop._IMPLEMENTED) != (name in interop.DIFFERENT), name


@pytest.mark.parametrize("name", sorted(interop.DIFFERENT))
def test_namesakes_of_other_semantics_raise_saying_why(name):
    fn, x = interop._numpy(name), lt.asarray(DATA["f"])
    with pytest.raises(TypeError, match=re.escape(f"numpy.{name} is not implemented for lazytensor tensors "
                                                  f"({interop.DIFFERENT[name]})")):
        fn(x, np.float64) if name == "can_cast" else fn(x[0, 0], 1.0) if name.endswith("space") else \
            fn(os.devnull, x) if name == "save" else fn(x, [0], 1.0) if name == "put" else \
            fn(x[0], x[1], 1) if name == "polyfit" else fn(x)
    if name in ("sign", "reciprocal"):  # and why: the values differ
        arr = DATA["i"] if name == "reciprocal" else np.where(DATA["f"] > 0, np.nan, DATA["f"])
        assert not np.array_equal(getattr(lt, name)(lt.asarray(arr)).numpy(), fn(arr), equal_nan=True)


def test_numpy_arrays_and_scalars_beside_a_tensor():
    """Mixed operands give tensors on the tensor's device, with lazytensor's promotion (a NumPy array or scalar is
    strong, a Python scalar weak, as in NumPy 2)."""
    f, g, i8 = DATA["f"], DATA["g"], np.array([1, -2, 3], np.int8)
    x, y = lt.asarray(f), lt.asarray(i8)
    for got, expected in ((g * x, g * f), (g - x, g - f), (g @ x.T, g @ f.T), (g < x, g < f),
                          (abs(g) ** x, abs(g) ** f), (np.maximum(f, x), f), (np.concatenate([x, f]), np.concatenate([f, f])),
                          (np.where(f > 0, x, f), f), (np.float32(2) * y, np.float32(2) * i8),
                          (np.int64(3) + y, np.int64(3) + i8), (np.subtract(1, y), np.subtract(1, i8)),
                          (np.multiply(2.5, y), np.multiply(2.5, i8).astype(np.float32)), (1 - y, 1 - i8),
                          (np.add.outer(y, 2), np.add.outer(i8, 2))):
        same(got, expected)
    with pytest.raises(lt.DTypeError, match="out of bounds"):  # weak, as `y + 300`: NumPy 2 raises too
        np.add(300, y)


def test_results_stay_lazy_and_fuse():
    x = lt.asarray(DATA["f"])
    out = np.sum(np.exp(x) * 2 + DATA["g"], axis=0)
    assert isinstance(out, lt.Tensor) and not out.is_realized
    assert len(lt.schedule(out)) == 1
    check(out, np.sum(np.exp(DATA["f"]) * 2 + DATA["g"], axis=0))


def test_results_follow_lazytensors_dtypes():
    """As lazytensor's own functions: the mean of integers and the exp of integers are float32 (NumPy's float64),
    `np.divide` of integers float32."""
    i = lt.asarray(DATA["i"])
    for got in (np.mean(i), np.exp(i), np.divide(i, 3), np.sqrt(np.abs(i))):
        assert got.dtype == lt.float32
    check(np.mean(i), np.mean(DATA["i"]).astype(np.float32))


UNSUPPORTED = [
    (lambda x: np.add(x, 1, out=np.zeros((3, 4))), "numpy.add: out=ndarray"),
    (lambda x: np.exp(x, where=DATA["b"]), "numpy.exp: where=ndarray"),
    (lambda x: np.add(x, 1, casting="unsafe"), "numpy.add: casting='unsafe'"),
    (lambda x: np.multiply(x, 2, order="F"), "numpy.multiply: order='F'"),
    (lambda x: np.add(x, 1, dtype=np.float32), "numpy.add: dtype=type"),
    (lambda x: np.matmul(x, x.T, axes=[(0, 1), (0, 1), (0, 1)]), "numpy.matmul: axes=list"),
    (lambda x: np.sum(x, out=lt.zeros(())), "numpy.sum: out=Tensor"),
    (lambda x: np.mean(x, out=np.zeros(())), "numpy.mean: out=ndarray"),
    (lambda x: np.sum(x, where=x > 0), "numpy.sum: where=Tensor"),
    (lambda x: np.sum(x, initial=0), "numpy.sum: initial=0"),
    (lambda x: np.add.reduce(x, initial=1.0), "numpy.add.reduce: initial=1.0"),
    (lambda x: np.std(x, mean=np.zeros(1)), "numpy.std: mean=ndarray"),
    (lambda x: np.ravel(x, order="F"), "numpy.ravel: order='F'"),
    (lambda x: np.reshape(x, -1, order="F"), "numpy.reshape: order='F'"),
    (lambda x: np.take(x, [0], mode="wrap"), "numpy.take: mode='wrap'"),
    (lambda x: np.sort(x, order="f0"), "numpy.sort: order='f0'"),
    (lambda x: np.unique(x, axis=0), "numpy.unique: axis=0"),
    (lambda x: np.pad(x, 1, mode="maximum", stat_length=2), "numpy.pad: stat_length=2"),
    (lambda x: np.concatenate([x, x], dtype=np.float32), "numpy.concatenate: dtype=type"),
    (lambda x: np.meshgrid(x[0], x[1], sparse=True), "numpy.meshgrid: sparse=True"),
    (lambda x: np.zeros_like(x, shape=(2,)), "numpy.zeros_like: shape=tuple"),
    (lambda x: np.spacing(x), "numpy.spacing is not implemented"),
    (lambda x: np.nanvar(x, correction=1), "numpy.nanvar: correction=1"),
    (lambda x: np.maximum.accumulate(x), "numpy.maximum.accumulate is not implemented"),
    (lambda x: np.add.reduceat(x, [0, 1]), "numpy.add.reduceat is not implemented"),
    (lambda x: np.add.at(x, [0], 1), r"numpy.add.at is not implemented for lazytensor tensors \(it writes its first"),
    (lambda x: np.linalg.eig(x), "numpy.linalg.eig is not implemented"),
]


@pytest.mark.parametrize("index", range(len(UNSUPPORTED)))
def test_what_lazytensor_does_not_implement_raises_typeerror_naming_it(index):
    call, message = UNSUPPORTED[index]
    with pytest.raises(TypeError, match=message) as info:
        call(lt.asarray(DATA["f"]))
    assert "np.asarray(t)" in str(info.value)


def test_an_in_place_numpy_operator_with_a_tensor_raises():
    """`a += t` would write a NumPy array from a lazy tensor: convert explicitly (`a += np.asarray(t)`)."""
    a = np.zeros(3)
    with pytest.raises(TypeError, match="out="):
        a += lt.asarray([1.0, 2.0, 3.0])
    a += np.asarray(lt.asarray([1.0, 2.0, 3.0]))
    np.testing.assert_array_equal(a, [1.0, 2.0, 3.0])


def test_other_librarys_arrays_take_their_turn():
    """NEP 13 and 18: where another library's array takes part, its protocol answers, not lazytensor's."""
    class Other:
        def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
            return "other's ufunc"

        def __array_function__(self, func, types, args, kwargs):
            return "other's function"

    x = lt.asarray([1.0])
    assert np.add(x, Other()) == "other's ufunc"
    assert np.concatenate([x, Other()]) == "other's function"


def test_what_worked_before_still_works():
    arr = DATA["f"].astype(np.float32)
    x = lt.asarray(arr)
    view = np.asarray(x)
    assert not view.flags.writeable and np.array(x).flags.writeable
    np.testing.assert_array_equal(view, arr)
    np.testing.assert_allclose(x.numpy(), arr)
    np.testing.assert_array_equal(x, arr)  # NumPy's asserts convert their arguments first
    check(np.sum(x), np.sum(arr))
    check(pickle.loads(pickle.dumps(np.exp(x))), np.exp(arr))
    assert repr(x + 0) == repr(x) and str(np.exp(x)).startswith("tensor(")
    assert isinstance(arr + x, lt.Tensor) and isinstance(arr * x, lt.Tensor) and isinstance(x * arr, lt.Tensor)
    p = lt.nn.Parameter(lt.asarray(arr))
    check(np.sum(p, axis=1), np.sum(arr, axis=1))


def test_memory_questions_are_numpys_about_the_host_arrays():
    """np.may_share_memory and np.shares_memory (scikit-learn asks them of its inputs) answer on `np.asarray(t)`,
    which is a realized CPU tensor's own memory, read-only."""
    t = lt.asarray(DATA["f"]).realize()
    view = np.asarray(t)
    assert np.may_share_memory(view, t) == np.shares_memory(t, view[1]) == (DEFAULT_DEVICE == "cpu")
    assert not np.may_share_memory(t, DATA["f"]) and not np.shares_memory(np.zeros(3), t)


# NumPy's positional parameters that lazytensor's namesake names otherwise
SAME_PARAMETER = {"x2": "other", "b": "other", "k": "diagonal", "a_min": "min", "a_max": "max", "N": "n", "M": "m",
                  "test_elements": "x2", "v": "x2", "axis1": "dim1", "axis2": "dim2", "tup": "tensors",
                  "arrays": "tensors"}
# where NumPy's order is not lazytensor's, and why
OTHER_ORDER = {
    "linspace": "lazytensor's has no retstep (its dtype follows endpoint)",
    "nan_to_num": "PyTorch's order (nan first); NumPy's copy= is accepted as a keyword",
    "sum": "the third argument is PyTorch's keepdim, or NumPy's dtype where it is one (tested below)",
    "prod": "as sum", "mean": "as sum",
}


def _positional(f):
    try:
        parameters = inspect.signature(f).parameters.values()
    except (TypeError, ValueError):
        return None
    return [p.name for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]


def test_positional_arguments_are_in_numpys_order():
    """A call written for NumPy with positional arguments (`diff(x, 2)`, `take(x, i, 1)`, `histogram(x, 5, None,
    True)`) means the same here: of each function NumPy also has, every positional parameter of NumPy's that
    lazytensor's takes is at the same position, where lazytensor's has that many (NumPy's `out`, which
    lazytensor refuses, may shift later ones: a call passing it fails loudly)."""
    wrong = []
    for name in sorted(n for n in dir(lt) if not n.startswith("_") and hasattr(np, n) and n not in OTHER_ORDER):
        ours, theirs = _positional(getattr(lt, name)), _positional(getattr(np, name))
        if not ours or not theirs or isinstance(getattr(np, name), type):
            continue
        for i, p in enumerate(theirs[1:], 1):
            p = SAME_PARAMETER.get(p, p)
            if i < len(ours) and p in ours and ours[i] != p:
                wrong.append(f"{name}: {p} is argument {ours.index(p)}, NumPy's {i}")
    assert wrong == []


def test_a_reductions_third_argument_is_keepdim_or_numpys_dtype():
    x = lt.asarray(np.arange(6, dtype=np.int32).reshape(2, 3))
    a = np.arange(6, dtype=np.int32).reshape(2, 3)
    for name in ("sum", "prod", "mean"):
        check(getattr(x, name)(0, np.float64), getattr(a, name)(0, np.float64))
        check(getattr(x, name)(1, lt.int64 if name != "mean" else lt.float64), getattr(a, name)(1, np.int64 if name != "mean" else np.float64))
        check(getattr(x, name)(1, True), getattr(a, name)(1, keepdims=True) if name != "mean" else a.mean(1, keepdims=True, dtype=np.float32))
        with pytest.raises(TypeError, match="both"):
            getattr(x, name)(0, np.float64, lt.float32)
    check(lt.diff(x, 2, 1), np.diff(a, 2, 1))
    check(lt.take(x, lt.asarray([2, 0]), 1), np.take(a, [2, 0], 1))
    check(lt.searchsorted(lt.asarray([1, 2, 2, 3]), lt.asarray([2]), "right"), np.searchsorted([1, 2, 2, 3], [2], "right"))
    check(lt.histogram(lt.asarray([0.0, 1.0, 1.5]), 2, None, True)[0], np.histogram([0.0, 1.0, 1.5], 2, None, True)[0])
