"""dtypes, promotion, and the NumPy side of the 16-bit floats.

Promotion follows NumPy and the array API standard between two integer or two
float dtypes (int8 + uint8 -> int16, uint16 + uint32 -> uint32, int32 + uint32
-> int64), and PyTorch / JAX between an integer and a float (the float wins:
int64 + float32 -> float32). float16 with bfloat16 gives float32, as in PyTorch
(neither holds the other). Python scalars are weak: they take the tensor's
dtype unless their kind is higher (a Python float with an int tensor gives
float32, the default float; a Python int with a bool tensor gives int64, the
default int).

A signed integer with uint64 has no common integer dtype, and so no promotion:
it raises DTypeError (cast one operand). The array API standard leaves it
unspecified and PyTorch refuses it; NumPy 2 gives float64, which rounds integers
above 2**53, and beside the float-wins rule would make the result depend on the
order of the operands (int64 + uint64 + float32 would be float64 one way and
float32 the other). `result_type` of several dtypes is their join, whatever the
order: a float among them absorbs every integer.

NumPy has float16 but no bfloat16: a bfloat16 buffer holds the 16-bit patterns
(uint16), converted here with round to nearest even, and is shown to NumPy as an
`ml_dtypes.bfloat16` array when ml_dtypes is installed (it is not a dependency).
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from .errors import DTypeError
from .kernels.dtype import (
    ALL_DTYPES,
    BY_NAME,
    DType,
    bfloat16,
    bfloat16_bits,
    bfloat16_to_float32,
    bool_,
    float16,
    float32,
    float64,
    int8,
    int16,
    int32,
    int64,
    uint8,
    uint16,
    uint32,
    uint64,
)

__all__ = [
    "ALL_DTYPES",
    "DType",
    "FInfo",
    "IInfo",
    "bfloat16",
    "bool_",
    "can_cast",
    "default_int",
    "dtype_or_default",
    "finfo",
    "float16",
    "float32",
    "float64",
    "get_default_dtype",
    "iinfo",
    "int8",
    "int16",
    "int32",
    "int64",
    "int_bounds",
    "isdtype",
    "promote",
    "result_type",
    "scalar_dtype",
    "set_default_dtype",
    "to_dtype",
    "to_numpy_dtype",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "weak_result_type",
    "wide_int",
]

default_int = int64
_default_float = float32  # set_default_dtype's: process-wide, as PyTorch's


def get_default_dtype() -> DType:
    """The float dtype of Python floats, of float factories without a dtype (`zeros`, `rand`, `linspace`, ...) and
    of integer inputs to float functions (`mean`, `exp`, `/`): float32 unless `set_default_dtype` changed it."""
    return _default_float


def set_default_dtype(dtype: Any) -> None:
    """Make `dtype` (a float dtype) the default float dtype of the process, as PyTorch's
    `torch.set_default_dtype` (`lt.set_default_dtype(lt.float64)` for scientific code). Tensors already made keep
    their dtypes; `lt.jit` functions record again for the new default."""
    global _default_float
    dt = to_dtype(dtype)
    if not dt.is_float:
        raise DTypeError(f"set_default_dtype: the default must be a float dtype, got {dt.name}")
    _default_float = dt


def dtype_or_default(dtype: Any) -> DType:
    """`dtype` as a DType; the default float dtype where it is None (factories' and layers' `dtype=`)."""
    return to_dtype(dtype) if dtype is not None else _default_float

_NP_TO_DTYPE = {np.dtype(d.np_name): d for d in ALL_DTYPES if d != bfloat16}


def to_dtype(x: object) -> DType:
    """A DType from a DType, a name ('float32'), a NumPy dtype or a Python type (float, int, bool). The type
    `float` is float64, as in NumPy and PyTorch (`x.astype(float)`, `cumsum(x, dtype=float)`), whatever the default
    float dtype, which is that of Python float *values*."""
    if isinstance(x, DType):
        return x
    if x is float:
        return float64
    if x is int:
        return default_int
    if x is bool:
        return bool_
    if isinstance(x, str) and x in BY_NAME:
        return BY_NAME[x]
    try:
        npd = np.dtype(x)  # type: ignore[call-overload]
    except TypeError:
        npd = None
    if npd is not None and npd in _NP_TO_DTYPE:
        return _NP_TO_DTYPE[npd]
    if npd is not None and is_ml_bfloat16(npd):
        return bfloat16
    supported = ", ".join(d.name for d in ALL_DTYPES)
    name = getattr(x, "name", None) or getattr(x, "__name__", None) or str(x)
    raise DTypeError(f"lazytensor does not support dtype {name} (supported: {supported})")


def is_ml_bfloat16(npd: np.dtype) -> bool:
    """Whether a NumPy dtype is ml_dtypes' bfloat16 (a 2-byte dtype NumPy itself does not define)."""
    return npd.name == "bfloat16" and npd.itemsize == 2


def to_numpy_dtype(dtype: DType) -> np.dtype:
    """The NumPy dtype of a buffer of `dtype`: uint16 bit patterns for bfloat16."""
    return _STORAGE[dtype]


_STORAGE = {d: np.dtype(np.uint16) if d is bfloat16 else np.dtype(d.np_name) for d in ALL_DTYPES}


def storage_array(arr: np.ndarray, dtype: DType) -> np.ndarray:
    """`arr` converted to `dtype` as a buffer of it holds it (bfloat16: its bit patterns); no copy when
    it already is. bfloat16 rounds from float32 (as PyTorch does from float64) to nearest even."""
    with np.errstate(over="ignore"):  # too big for the dtype is inf, as in PyTorch
        if dtype != bfloat16:
            return arr.astype(to_numpy_dtype(dtype), copy=False)
        if is_ml_bfloat16(arr.dtype):
            return arr.view(np.uint16)
        return bfloat16_bits(np.asarray(arr, dtype=np.float32))


def rounded(value: float, dtype: DType) -> float:
    """`value` rounded to a 16-bit float dtype as a cast rounds it: through float32, to nearest even, too big
    to inf."""
    with np.errstate(over="ignore"):
        bits = storage_array(np.array([value], dtype=np.float32), dtype)
    return float((bfloat16_to_float32(bits) if dtype == bfloat16 else bits)[0])


def host_view(bits: np.ndarray, dtype: DType) -> np.ndarray:
    """A buffer's array as NumPy should see it: bfloat16 bits as an ml_dtypes.bfloat16 view (no copy)."""
    if dtype != bfloat16:
        return bits
    try:
        return bits.view(dtype.dtype)
    except TypeError as e:  # ml_dtypes is not installed
        raise DTypeError(str(e)) from None


def promote(a: DType, b: DType) -> DType:
    """The dtype two tensors combine to; DTypeError for a signed integer with uint64, which no integer dtype
    holds (see the module docstring)."""
    if a == b:
        return a
    ka, kb = ("f" if a.is_float else "i" if a.is_int else "b"), ("f" if b.is_float else "i" if b.is_int else "b")
    if ka == kb == "f":
        if a.itemsize == b.itemsize:  # float16 and bfloat16: each has what the other lacks
            return float32
        return a if a.itemsize > b.itemsize else b
    if ka == kb:
        joined = np.promote_types(a.np_name, b.np_name)
        if joined.kind == "f":  # NumPy's float64 for a signed integer with uint64
            raise DTypeError(f"no integer dtype holds both {a.name} and {b.name}: cast one of them (to float64 "
                             "for NumPy's promotion)")
        return _NP_TO_DTYPE[joined]
    order = "bif"
    return a if order.index(ka) > order.index(kb) else b


def scalar_dtype(value: object) -> DType:
    """The dtype a Python scalar would have as a tensor on its own."""
    if isinstance(value, bool):
        return bool_
    if isinstance(value, int):
        return default_int
    if isinstance(value, float):
        return _default_float
    raise DTypeError(f"cannot use a {type(value).__name__} as a tensor scalar")


def weak_result_type(tensor_dtype: DType, scalar: object) -> DType:
    """The dtype of a tensor combined with a weak Python scalar."""
    sd = scalar_dtype(scalar)
    if sd == bool_ or (sd.is_int and tensor_dtype.kind != "b") or (sd.is_float and tensor_dtype.is_float):
        return tensor_dtype
    return sd


def check_fits(value: float | bool, dtype: DType, op: str) -> None:
    """Raise if a Python int cannot be represented in an integer dtype (NumPy 2 and PyTorch refuse too)."""
    if dtype.is_int and isinstance(value, int) and not isinstance(value, bool):
        lo, hi = int_bounds(dtype)
        if not lo <= value <= hi:
            raise DTypeError(f"{op}: Python integer {value} is out of bounds for {dtype.name}")


@dataclass(frozen=True)
class FInfo:
    """Machine limits of a float dtype, as `torch.finfo` gives them."""

    dtype: DType
    bits: int
    digits: int             # significand bits, the implicit leading one included (NumPy's nmant + 1)
    eps: float              # the distance from 1.0 to the next larger float
    max: float
    min: float
    tiny: float             # the smallest positive normal number
    smallest_normal: float
    resolution: float       # 10**-(the decimal digits it holds)


# significand bits (with the implicit one), largest exponent
_FLOAT_FORMATS = {float16: (11, 15), bfloat16: (8, 127), float32: (24, 127), float64: (53, 1023)}


def dtype_of(x: object) -> DType:
    """The dtype of a tensor (anything with a lazytensor `.dtype`), or `x` read as a dtype (`to_dtype`)."""
    if isinstance(x, DType):
        return x
    own = getattr(x, "dtype", None)
    return own if isinstance(own, DType) else to_dtype(x)


def finfo(type: object = None) -> FInfo:
    """Machine limits of a float dtype, or of a tensor's (default: the default float): `lt.finfo(lt.float16).eps`."""
    dt = dtype_of(type) if type is not None else _default_float
    if not dt.is_float:
        raise DTypeError(f"finfo: {dt.name} is not a floating-point dtype")
    digits, max_exponent = _FLOAT_FORMATS[dt]
    eps = 2.0 ** (1 - digits)
    largest = (2 - eps) * 2.0 ** max_exponent
    tiny = 2.0 ** (1 - max_exponent)
    resolution = 10.0 ** -math.floor((digits - 1) * math.log10(2))
    return FInfo(dt, dt.bits, digits, eps, largest, -largest, tiny, tiny, resolution)


@dataclass(frozen=True)
class IInfo:
    """Machine limits of an integer dtype, as `numpy.iinfo` and the array API give them."""

    dtype: DType
    bits: int
    max: int
    min: int


def iinfo(type: object) -> IInfo:
    """Machine limits of an integer dtype, or of a tensor's: `lt.iinfo(lt.int8).max == 127`."""
    dt = dtype_of(type)
    if not dt.is_int:
        raise DTypeError(f"iinfo: {dt.name} is not an integer dtype")
    lo, hi = int_bounds(dt)
    return IInfo(dt, dt.bits, hi, lo)


@functools.cache
def int_bounds(dtype: DType) -> tuple[int, int]:
    """The least and the greatest value of an integer dtype (kept: every integer scalar of every op asks, and
    `numpy.iinfo` takes microseconds)."""
    info = np.iinfo(dtype.np_name)
    return int(info.min), int(info.max)


# The array API's kinds of dtype (`isdtype`): which DType.kind letters each one covers.
_KINDS = {"bool": "b", "signed integer": "i", "unsigned integer": "u", "integral": "iu", "real floating": "f",
          "complex floating": "", "numeric": "iuf"}


def isdtype(dtype: DType, kind: DType | str | tuple[DType | str, ...]) -> bool:
    """Whether `dtype` is of `kind`: a dtype, one of the array API's kind names ('bool', 'signed integer',
    'unsigned integer', 'integral', 'real floating', 'complex floating', 'numeric'), or a tuple of them
    (any of which matches)."""
    if not isinstance(dtype, DType):
        raise TypeError(f"isdtype: expected a lazytensor dtype, got {dtype!r}")
    if isinstance(kind, tuple):
        return any(isdtype(dtype, k) for k in kind)
    if isinstance(kind, DType):
        return dtype is kind
    if isinstance(kind, str) and kind in _KINDS:
        return dtype.kind in _KINDS[kind]
    raise ValueError(f"isdtype: unknown kind {kind!r} (a dtype, or one of {', '.join(map(repr, _KINDS))})")


def result_type(*arrays_and_dtypes: object) -> DType:
    """The dtype the tensors, dtypes and Python scalars given combine to, by lazytensor's promotion (see the
    module docstring): scalars are weak, and at least one tensor or dtype must be given."""
    weak = [isinstance(x, (bool, int, float)) and not isinstance(x, np.generic) for x in arrays_and_dtypes]
    scalars = [x for x, w in zip(arrays_and_dtypes, weak) if w]
    strong = [dtype_of(x) for x, w in zip(arrays_and_dtypes, weak) if not w]
    if not strong:
        raise ValueError("result_type: needs at least one tensor or dtype")
    # floats first: a float absorbs every integer, so no pair of integers without a join is promoted first
    strong.sort(key=lambda dt: not dt.is_float)
    out = strong[0]
    for dt in strong[1:]:
        out = promote(out, dt)
    for value in scalars:
        out = weak_result_type(out, value)
    return out


def wide_int(dtype: DType) -> DType:
    """The integer dtype that integer arithmetic on values of `dtype` is done in where it must not wrap at the
    dtype's own width (`arange`, `randint`): uint64 for uint64, whose values int64 does not
    hold, and int64, which holds every other bool and integer, for the rest."""
    return uint64 if dtype == uint64 else default_int


def can_cast(from_: object, to: DType) -> bool:
    """Whether promotion turns `from_` (a dtype or a tensor) into `to`: no value is lost between two dtypes of
    one kind, and a bool or integer dtype promotes to any float (as lazytensor's promotion does); a signed
    integer and uint64, which do not promote, cast to neither."""
    try:
        return promote(dtype_of(from_), to_dtype(to)) is to_dtype(to)
    except DTypeError:
        return False
