"""DLPack: a tensor's memory shared with NumPy, PyTorch, CuPy, JAX, ... without a copy, in both directions.

DLPack (https://dmlc.github.io/dlpack/latest/) is a C struct that describes an array's memory (address, device,
dtype, shape, strides, byte offset) with a deleter its consumer calls when it is done, handed over in a
PyCapsule named 'dltensor' (DLPack 0.x: `DLManagedTensor`) or 'dltensor_versioned' (1.x:
`DLManagedTensorVersioned`, with a version and flags); the consumer renames the capsule 'used_...' as it takes
it over. The array API standard (2023.12 on) spells it `x.__dlpack__(stream=, max_version=, dl_device=, copy=)`,
`x.__dlpack_device__()` and `from_dlpack(x, device=, copy=)`. The structs are declared here with ctypes, as
NumPy and PyTorch declare them in C.

Exporting (`export`, behind `Tensor.__dlpack__`): the tensor is realized and its buffer handed over; the
capsule's struct keeps the buffer alive until the consumer calls the deleter (or, never consumed, until the
capsule dies). lazytensor never writes a realized buffer (`x[i] = v` rebinds x) and tensors of equal value may
share one, so the consumer must not write it either:

- a versioned capsule (the consumer passed `max_version` (1, x) or later) shares the buffer, flagged READ_ONLY
  (NumPy makes a read-only array of it; a consumer that ignores the flag, as PyTorch does, leaves it to the
  user not to write, as the standard says);
- an unversioned capsule cannot say read-only, so it holds a copy, the consumer's to write, unless the consumer
  passed `copy=False`. That argument came with `max_version` (array API 2023.12): a consumer that passes it
  knows the versioned protocol and asked for the unversioned struct all the same, so it gets the buffer itself,
  as it asked, under the standard's rule for a consumer that cannot honour READ_ONLY (the user keeps the memory
  unwritten). Refusing with BufferError would deny a zero-copy export that is possible (and fails the array
  API test suite's `test_dunder_dlpack`, which asks for every combination);
- `copy=True` always copies, and so does a `dl_device` other than the tensor's (`copy=False` then raises
  BufferError): a copy is the consumer's alone, writable, flagged IS_COPIED.

Devices: host memory is (kDLCPU, 0): the CPU's, and that of Triton's interpreter, whose cuda:0 tensors live in
torch CPU storage that NumPy and PyTorch read at its address. A GPU's memory is (kDLCUDA, n); `stream` is the
standard's (None: the legacy default stream, 1: the legacy, 2: the per-thread default stream, -1: no
synchronization, else a CUstream handle): the consumer's stream waits on an event for the kernels lazytensor
queued, without blocking the host. On the CPU only None is accepted. Released, the memory is lazytensor's to
reuse at once (its stream orders its own work): a consumer calls the deleter once its stream is done with it,
as DLPack asks.

Importing (`import_buffer`, behind `lt.from_dlpack`): the producer's memory becomes a buffer over it, without a
copy where its layout is lazytensor's (C-contiguous, each element aligned), and the producer's deleter runs once
no tensor or array reads it. Another layout (strides, a misaligned address) is copied (BufferError with
`copy=False`). lazytensor never writes the memory; a producer that writes it later changes what the tensor
reads, as with `from_numpy`. GPU memory comes with lazytensor's stream as `stream`, so the producer orders its
own work before lazytensor's reads.
"""
from __future__ import annotations

import ctypes
import functools
from enum import IntEnum
from typing import TYPE_CHECKING, Any

import numpy as np

from .device import Buffer, get_device
from .dtypes import ALL_DTYPES, DType, bfloat16, to_numpy_dtype, uint8
from .errors import DeviceError
from .helpers import prod
from .realize import check_read

if TYPE_CHECKING:
    from .tensor import Tensor

# The DLPack ABI lazytensor writes and reads: 1.0's structs, which 1.1 keeps (it adds dtype codes, for float8
# and smaller types, that lazytensor has none of).
VERSION = (1, 0)


class DLDeviceType(IntEnum):
    """The device types lazytensor's memory can be (DLPack's `DLDeviceType`)."""

    CPU = 1   # kDLCPU
    CUDA = 2  # kDLCUDA


# DLPackVersioned's flags
READ_ONLY = 1 << 0  # the consumer must not write the memory
IS_COPIED = 1 << 1  # the memory is a copy made for this export alone

# DLDataTypeCode by DType.kind; bfloat16 has a code of its own
_KIND_CODES = {"i": 0, "u": 1, "f": 2, "b": 6}  # kDLInt, kDLUInt, kDLFloat, kDLBool
_BFLOAT = 4                                     # kDLBfloat


class DLDevice(ctypes.Structure):
    _fields_ = (("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32))


class DLDataType(ctypes.Structure):
    _fields_ = (("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16))


class DLTensor(ctypes.Structure):
    _fields_ = (("data", ctypes.c_void_p), ("device", DLDevice), ("ndim", ctypes.c_int32), ("dtype", DLDataType),
                ("shape", ctypes.POINTER(ctypes.c_int64)), ("strides", ctypes.POINTER(ctypes.c_int64)),
                ("byte_offset", ctypes.c_uint64))


# The deleters, `void (*)(DLManagedTensor *)`, are declared as addresses: a ctypes function field read from a
# producer's struct would read that struct again when called, which the call itself frees.
class DLManagedTensor(ctypes.Structure):
    _fields_ = (("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", ctypes.c_void_p))


class DLPackVersion(ctypes.Structure):
    _fields_ = (("major", ctypes.c_uint32), ("minor", ctypes.c_uint32))


class DLManagedTensorVersioned(ctypes.Structure):
    _fields_ = (("version", DLPackVersion), ("manager_ctx", ctypes.c_void_p), ("deleter", ctypes.c_void_p),
                ("flags", ctypes.c_uint64), ("dl_tensor", DLTensor))


_Deleter = ctypes.CFUNCTYPE(None, ctypes.c_void_p)     # a DLPack deleter, given its managed tensor
_Destructor = ctypes.CFUNCTYPE(None, ctypes.c_void_p)  # a PyCapsule_Destructor, given its (dying) capsule


def _python_api(name: str, restype: Any, *argtypes: Any) -> Any:
    """A function of Python's C API with its own prototype (a capsule is passed by address where it may be dying)."""
    return ctypes.PYFUNCTYPE(restype, *argtypes)((name, ctypes.pythonapi))


_capsule_new = _python_api("PyCapsule_New", ctypes.py_object, ctypes.c_void_p, ctypes.c_char_p, _Destructor)
_capsule_is_valid = _python_api("PyCapsule_IsValid", ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p)
_capsule_pointer = _python_api("PyCapsule_GetPointer", ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p)
_capsule_set_name = _python_api("PyCapsule_SetName", ctypes.c_int, ctypes.py_object, ctypes.c_char_p)

# A capsule keeps a pointer to its name: these bytes live as long as the module.
_NAMES = {False: b"dltensor", True: b"dltensor_versioned"}
_USED_NAMES = {False: b"used_dltensor", True: b"used_dltensor_versioned"}

# The exports not released yet, by the address of their struct: what must live until the consumer is done
# (the struct, its shape and strides, and the buffer whose memory it points to).
_exports: dict[int, tuple[Any, ...]] = {}


def _release(managed: int) -> None:
    """The deleter of lazytensor's exports: the consumer is done with the memory."""
    _exports.pop(managed, None)


def _destroy_capsule(capsule: int) -> None:
    """The destructor of lazytensor's capsules: one that no consumer took over (its name unchanged) releases its
    export."""
    for name in _NAMES.values():
        if _capsule_is_valid(capsule, name):
            _release(_capsule_pointer(capsule, name))


# The C callbacks live as long as the module: capsules and consumers hold their addresses.
_DELETER = _Deleter(_release)
_DESTRUCTOR = _Destructor(_destroy_capsule)


def _code(dtype: DType) -> int:
    """DLPack's type code (DLDataTypeCode) of `dtype`."""
    return _BFLOAT if dtype is bfloat16 else _KIND_CODES[dtype.kind]


_DTYPES = {(_code(d), 8 * d.itemsize): d for d in ALL_DTYPES}  # by (code, bits)


def dlpack_device(device: str) -> tuple[DLDeviceType, int]:
    """DLPack's (device type, index) of the memory of lazytensor's `device`: host memory is the CPU's (see the
    module docstring)."""
    if get_device(device).host_memory:
        return DLDeviceType.CPU, 0
    return DLDeviceType.CUDA, int(device.partition(":")[2])  # names are canonical: 'cuda:N'


def _device_of(dl_device: tuple[int, int], op: str) -> str:
    """lazytensor's device holding memory on DLPack's device `dl_device`; BufferError where there is none."""
    kind, index = int(dl_device[0]), int(dl_device[1])
    if kind == DLDeviceType.CPU and index == 0:
        return "cpu"
    if kind == DLDeviceType.CUDA:
        name = f"cuda:{index}"
        try:
            if not get_device(name).host_memory:
                return name
        except DeviceError as e:
            raise BufferError(f"{op}: DLPack device {(kind, index)}: {e}") from None
        raise BufferError(f"{op}: DLPack device {(kind, index)} is GPU memory, and lazytensor's {name} is Triton's "
                          "interpreter, whose memory is the host's")
    raise BufferError(f"{op}: lazytensor has no device with the memory of DLPack device {(kind, index)} (it has "
                      "(1, 0) for host memory and (2, n) for the GPU cuda:n)")


def _row_major_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    """The strides, in elements, of a C-contiguous array of `shape`."""
    return tuple(prod(shape[i + 1:]) for i in range(len(shape)))


# ---- export ----------------------------------------------------------------------------------------------------


def export(tensor: Tensor, *, stream: Any, max_version: tuple[int, int] | None, dl_device: tuple[int, int] | None,
           copy: bool | None) -> Any:
    """`tensor.__dlpack__(...)`: a capsule of its data (realized now), shared read-only or copied as the module
    docstring says."""
    source = dlpack_device(tensor.device)
    target = source if dl_device is None else (int(dl_device[0]), int(dl_device[1]))
    moved = target != source
    if moved:
        if copy is False:
            raise BufferError(f"__dlpack__: a tensor on {tensor.device} (DLPack device {tuple(source)}) cannot be "
                              f"exported to DLPack device {target} without a copy, and copy=False")
        tensor = tensor.to(_device_of(target, "__dlpack__"))
    check_read()
    buffer = tensor.realize().node.buffer
    versioned = max_version is not None and max_version[0] >= VERSION[0]
    shared = not moved and copy is not True and (versioned or copy is False)
    if not shared and not moved:  # a copy the consumer may write (a move made one already)
        buffer = get_device(buffer.device).from_numpy(np.array(buffer.numpy()), buffer.dtype)
    _hand_over(buffer.device, target, stream)
    return _capsule(buffer, tensor.shape, target, versioned, READ_ONLY if shared else IS_COPIED)


def _hand_over(device: str, dl_device: tuple[int, int], stream: Any) -> None:
    """Make the consumer's `stream` wait for the work queued on the memory of lazytensor's `device` (the array
    API's stream numbering; see the module docstring)."""
    if dl_device[0] != DLDeviceType.CUDA:
        if stream is not None:
            raise ValueError(f"__dlpack__: memory on DLPack device {tuple(dl_device)} has no stream: pass "
                             f"stream=None, not {stream!r}")
        return
    if stream == 0:
        raise ValueError("__dlpack__: stream=0 is ambiguous for CUDA (the legacy or the per-thread default "
                         "stream): pass 1, 2, a stream handle, or -1 for no synchronization")
    if stream != -1:  # `device` is a GPU (its memory is not the host's), which has a stream
        get_device(device).target.gpu.order_before(1 if stream is None else stream)


def _capsule(buffer: Buffer, shape: tuple[int, ...], dl_device: tuple[int, int], versioned: bool, flags: int) -> Any:
    """A capsule holding a new DLPack struct for `buffer` as a C-contiguous tensor of `shape`, which keeps the
    buffer alive until it is released."""
    managed: DLManagedTensor | DLManagedTensorVersioned
    if versioned:
        managed = DLManagedTensorVersioned(version=DLPackVersion(*VERSION), flags=flags)
    else:
        managed = DLManagedTensor()
    managed.deleter = ctypes.cast(_DELETER, ctypes.c_void_p).value
    sizes = (ctypes.c_int64 * len(shape))(*shape)
    strides = (ctypes.c_int64 * len(shape))(*_row_major_strides(shape))
    dtype = DLDataType(_code(buffer.dtype), 8 * buffer.dtype.itemsize, 1)
    managed.dl_tensor = DLTensor(buffer.ptr, DLDevice(*dl_device), len(shape), dtype, sizes, strides, 0)
    address = ctypes.addressof(managed)
    _exports[address] = (managed, sizes, strides, buffer)
    return _capsule_new(address, _NAMES[versioned], _DESTRUCTOR)


# ---- import ----------------------------------------------------------------------------------------------------


def import_buffer(x: Any, copy: bool | None) -> tuple[Buffer, DType, tuple[int, ...]]:
    """The memory `x` exports through DLPack as a buffer (on the device whose memory it is), its dtype and shape:
    shared where its layout is lazytensor's and `copy` is not True, else copied (BufferError with copy=False)."""
    if not hasattr(x, "__dlpack__") or not hasattr(x, "__dlpack_device__"):
        raise TypeError(f"from_dlpack: {type(x).__name__} does not export DLPack (no __dlpack__ and __dlpack_device__)")
    device = _device_of(x.__dlpack_device__(), "from_dlpack")
    kwargs: dict[str, Any] = {"max_version": VERSION, "copy": copy}
    if not get_device(device).host_memory:  # the producer orders its work before what lazytensor queues
        kwargs["stream"] = get_device(device).target.gpu.stream
    try:
        capsule = x.__dlpack__(**kwargs)
    except TypeError:  # a producer of the array API before 2023.12: no max_version, dl_device or copy
        capsule = x.__dlpack__(**{k: v for k, v in kwargs.items() if k == "stream"})
    return _take(capsule, copy)


def _take(capsule: Any, copy: bool | None) -> tuple[Buffer, DType, tuple[int, ...]]:
    """The memory of a DLPack capsule as a buffer (see `import_buffer`). Everything is checked before the capsule is
    taken over: one refused stays the producer's, whose capsule releases it."""
    versioned = bool(_capsule_is_valid(id(capsule), _NAMES[True]))
    if not versioned and not _capsule_is_valid(id(capsule), _NAMES[False]):
        raise BufferError("from_dlpack: the producer's __dlpack__ gave no DLPack capsule, or one already consumed")
    address = _capsule_pointer(id(capsule), _NAMES[versioned])
    managed = (DLManagedTensorVersioned if versioned else DLManagedTensor).from_address(address)
    if versioned and managed.version.major != VERSION[0]:
        raise BufferError(f"from_dlpack: the producer wrote DLPack {managed.version.major}.{managed.version.minor}; "
                          f"lazytensor reads DLPack {VERSION[0]}.x")
    t = managed.dl_tensor
    device = _device_of((t.device.device_type, t.device.device_id), "from_dlpack")
    dtype = _DTYPES.get((t.dtype.code, t.dtype.bits)) if t.dtype.lanes == 1 else None
    if dtype is None:
        raise BufferError(f"from_dlpack: DLPack dtype (code {t.dtype.code}, {t.dtype.bits} bits, {t.dtype.lanes} "
                          "lanes) has no lazytensor dtype")
    shape = tuple(t.shape[i] for i in range(t.ndim))
    strides = tuple(t.strides[i] for i in range(t.ndim)) if t.strides else _row_major_strides(shape)
    start, size = (t.data or 0) + t.byte_offset, prod(shape)
    in_place = size == 0 or start % dtype.itemsize == 0 and \
        all(s == r for n, s, r in zip(shape, strides, _row_major_strides(shape)) if n > 1)
    fresh = versioned and managed.flags & IS_COPIED  # made for this import: a copy already
    if copy is False and not in_place:
        raise BufferError(f"from_dlpack: the memory (strides {strides}, address {start:#x}) is not a C-contiguous "
                          f"aligned {dtype.name} array, as lazytensor's buffers are: it needs a copy, and copy=False")
    deleter = managed.deleter
    _capsule_set_name(capsule, _USED_NAMES[versioned])  # ours now: its destructor no longer releases it
    release = functools.partial(_call_deleter, deleter, address)
    dev = get_device(device)
    if size == 0:
        release()
        return dev.from_numpy(np.empty(0, to_numpy_dtype(dtype)), dtype), dtype, shape
    if in_place and not (copy and not fresh):
        return dev.wrap(start, dtype, size, release), dtype, shape
    # The bytes the elements lie in, read on the host through NumPy's strides, copied into lazytensor's layout
    byte_strides = [s * dtype.itemsize for s in strides]
    low = sum(min(0, (n - 1) * s) for n, s in zip(shape, byte_strides))
    high = sum(max(0, (n - 1) * s) for n, s in zip(shape, byte_strides)) + dtype.itemsize
    span = dev.wrap(start + low, uint8, high - low, release).numpy()
    view = np.ndarray(shape, to_numpy_dtype(dtype), buffer=span, offset=-low, strides=byte_strides)
    return dev.from_numpy(np.array(view, order="C"), dtype), dtype, shape


def _call_deleter(deleter: int | None, managed: int) -> None:
    """Tell a producer its export is released (a NULL deleter means it has nothing to free)."""
    if deleter:
        _Deleter(deleter)(managed)
