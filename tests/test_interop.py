"""Interop: DLPack both ways (zero-copy with NumPy and PyTorch, read-only flags, copies, lifetimes, layouts),
against NumPy and PyTorch.

Device-agnostic: under `LT_DEVICE=cuda TRITON_INTERPRET=1` the tensors are on Triton's interpreter, whose memory is
the host's, and DLPack shows it as CPU memory."""
from __future__ import annotations

import ctypes
import gc
import math
import weakref

import ml_dtypes
import numpy as np
import pytest
import torch
import torch.utils.dlpack

import lazytensor as lt
from conftest import check, random_array, to_torch_dtype
from lazytensor import dlpack

DEFAULT_DEVICE = lt.zeros(1).device  # LT_DEVICE, else cpu
EVERY_DTYPE = [lt.bool_, lt.int8, lt.int16, lt.int32, lt.int64, lt.uint8, lt.uint16, lt.uint32, lt.uint64, lt.float16,
               lt.bfloat16, lt.float32, lt.float64]
HOST = (1, 0)  # DLPack's (kDLCPU, 0): the CPU's memory, and that of Triton's interpreter


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


def test_export_of_a_lazy_view_realizes_it_into_a_contiguous_buffer():
    arr = random_array((4, 6), lt.float32, seed=2)
    x = lt.asarray(arr).T[1:3]
    a = np.from_dlpack(x)
    np.testing.assert_array_equal(a, arr.T[1:3])
    assert a.flags.c_contiguous and a.ctypes.data == x.node.buffer.ptr


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


def test_a_legacy_consumer_gets_a_copy_it_may_write():
    arr = random_array((3, 4), lt.float32, seed=4)
    x = lt.asarray(arr)
    legacy = torch.utils.dlpack.from_dlpack(x.__dlpack__())  # an unversioned capsule, as DLPack 0.x consumers ask
    assert legacy.data_ptr() != x.realize().node.buffer.ptr
    legacy += 1
    np.testing.assert_array_equal(x.numpy(), arr)
    shared = torch.utils.dlpack.from_dlpack(x.__dlpack__(copy=False))
    assert shared.data_ptr() == x.node.buffer.ptr and bits(shared) == bits(arr)


def test_copy_true_gives_the_consumer_a_writable_copy():
    arr = random_array((3, 4), lt.int32, seed=5)
    x = lt.asarray(arr)
    a = np.from_dlpack(x, copy=True)
    assert a.flags.writeable and a.ctypes.data != x.realize().node.buffer.ptr
    a[...] = 0
    np.testing.assert_array_equal(x.numpy(), arr)


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


def test_export_arguments_the_standard_rules_out():
    x = lt.asarray([1.0, 2.0])
    with pytest.raises(ValueError, match="stream=None"):  # host memory has no stream
        x.__dlpack__(stream=1)
    with pytest.raises(BufferError, match="without a copy"):
        x.__dlpack__(dl_device=(2, 0), copy=False)
    with pytest.raises(BufferError, match=r"DLPack device \(4, 0\)"):
        x.__dlpack__(dl_device=(4, 0))  # OpenCL
    if "cuda:0" not in [d.name for d in lt.devices()] or DEFAULT_DEVICE != "cpu":
        with pytest.raises(BufferError, match=r"\(2, 0\)"):  # no GPU here; Triton's interpreter is host memory
            x.__dlpack__(dl_device=(2, 0))


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
    x = lt.from_dlpack(arr, device=DEFAULT_DEVICE)
    assert x.device == DEFAULT_DEVICE
    check(x, arr)
    if DEFAULT_DEVICE == "cpu":
        with pytest.raises(lt.DeviceError if "cuda:0" not in [d.name for d in lt.devices()] else BufferError):
            lt.from_dlpack(arr, device="cuda:0", copy=False if "cuda:0" in [d.name for d in lt.devices()] else None)
    else:
        with pytest.raises(BufferError, match="without a copy"):
            lt.from_dlpack(arr, device=DEFAULT_DEVICE, copy=False)
