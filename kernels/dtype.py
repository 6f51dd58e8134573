"""Scalar element types shared by the kernel IR and every backend.

A `DType` names an element type once; backends map it to their own spelling
(LLVM types, Triton dtypes) from `kind` and `itemsize`, and the frontend maps it
to NumPy through `np_name`.

The 16-bit floats (float16, bfloat16) are storage types: kernels load them, compute
in float32 (`compute_dtype`) and round once where a value is stored, as
torch.compile's Inductor does. bfloat16 has no NumPy type: its buffers hold the
16-bit patterns (the top half of a float32's bits).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True, slots=True, eq=False)
class DType:
    """An element type: `kind` is 'b' (bool), 'i' (signed), 'u' (unsigned) or 'f' (float).

    The module's constants are the only instances, so two DTypes are equal when they are the same object, and
    the hash is the identity's: that keeps hashing a dtype, which every cache key of the scheduler and the
    compilers does, at C speed. A DType also equals what NumPy reads as the same dtype (`lt.float32 ==
    np.float32 == np.dtype('float32') == 'float32'`), and NumPy reads `np.dtype(lt.float32)` through the
    `dtype` property. As for NumPy's own dtypes, those equal objects do not hash alike.
    """

    name: str
    kind: str
    itemsize: int

    @property
    def np_name(self) -> str:
        return self.name

    @property
    def is_float(self) -> bool:
        return self.kind == "f"

    @property
    def is_int(self) -> bool:
        """Signed or unsigned integer (bool is not an int here)."""
        return self.kind in "iu"

    @property
    def is_signed(self) -> bool:
        return self.kind in "if"

    @property
    def bits(self) -> int:
        return 1 if self.kind == "b" else 8 * self.itemsize

    @property
    def dtype(self) -> np.dtype:
        """The NumPy dtype of these values (what `np.dtype(this)` gives): ml_dtypes' bfloat16 for bfloat16,
        which NumPy lacks; TypeError where ml_dtypes is not installed."""
        if self.name != "bfloat16":
            return np.dtype(self.name)
        try:
            import ml_dtypes
        except ImportError:
            raise TypeError("NumPy has no bfloat16: install ml_dtypes to get bfloat16 arrays, or convert "
                            "with .float() first") from None
        return np.dtype(ml_dtypes.bfloat16)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, DType):
            return self is other
        # Only what names a dtype by itself: np.dtype(None) is float64, and a tensor has a `.dtype`.
        if not isinstance(other, (type, str, np.dtype)):
            return NotImplemented
        try:
            return np.dtype(other).name == self.name  # ml_dtypes' bfloat16 is named bfloat16 too
        except (TypeError, ValueError):  # NumPy reads some strings as a format it then rejects
            return False

    __hash__ = object.__hash__  # identity, as the constants are the only instances (see the class docstring)

    def __reduce__(self) -> tuple[Callable[[str], DType], tuple[str]]:
        """Pickled and copied as its name: the copy is the module's constant again, not an unequal twin."""
        return named, (self.name,)

    def __repr__(self) -> str:
        return f"lazytensor.{self.name}"

    def __str__(self) -> str:
        return self.name


bool_ = DType("bool", "b", 1)
int8 = DType("int8", "i", 1)
int16 = DType("int16", "i", 2)
int32 = DType("int32", "i", 4)
int64 = DType("int64", "i", 8)
uint8 = DType("uint8", "u", 1)
uint16 = DType("uint16", "u", 2)
uint32 = DType("uint32", "u", 4)
uint64 = DType("uint64", "u", 8)
float32 = DType("float32", "f", 4)
float64 = DType("float64", "f", 8)
float16 = DType("float16", "f", 2)
bfloat16 = DType("bfloat16", "f", 2)

ALL_DTYPES: tuple[DType, ...] = (bool_, int8, int16, int32, int64, uint8, uint16, uint32, uint64, float16, bfloat16,
                                 float32, float64)
BY_NAME: dict[str, DType] = {d.name: d for d in ALL_DTYPES}


def named(name: str) -> DType:
    """The dtype called `name` (`DType.name`)."""
    return BY_NAME[name]


SHORT_NAMES: dict[DType, str] = {
    bool_: "bool", int8: "i8", int16: "i16", int32: "i32", int64: "i64", uint8: "u8", uint16: "u16", uint32: "u32",
    uint64: "u64", float16: "f16", bfloat16: "bf16", float32: "f32", float64: "f64",
}


def wrap(value: int, dtype: DType) -> int:
    """`value` modulo 2**bits, read as a value of the integer `dtype` (two's complement where it is signed):
    what integer arithmetic and conversions in the IR leave of it."""
    bits = dtype.bits
    if not dtype.is_signed:
        return value % (1 << bits)
    half = 1 << (bits - 1)
    return (value + half) % (1 << bits) - half


def compute_dtype(dtype: DType) -> DType:
    """The dtype kernels compute values of `dtype` in: float32 for the 16-bit floats, which are only
    loaded and stored (more accurate than rounding after every op, and every backend has float32 math)."""
    return float32 if dtype.is_float and dtype.itemsize == 2 else dtype


def bfloat16_bits(values: np.ndarray) -> np.ndarray:
    """float32 values rounded to bfloat16, as bit patterns (uint16): to nearest even, too big to inf, and
    NaN to a quiet NaN of its sign (the rounding carry could otherwise turn a NaN into inf)."""
    bits = np.asarray(values, dtype=np.float32).view(np.uint32)
    rounded = ((bits + (0x7FFF + ((bits >> 16) & 1))) >> 16).astype(np.uint16)
    return np.where(np.isnan(values), ((bits >> 16) | 0x0040).astype(np.uint16), rounded)


def half_bits(value: float, dtype: DType) -> int:
    """The bit pattern of `value` rounded (through float32, as the IR defines) to a 16-bit float dtype: how a
    backend writes a 16-bit constant, whatever its own constants would round it to."""
    with np.errstate(over="ignore"):
        single = np.array(value, dtype=np.float32)
        return int(single.astype(np.float16).view(np.uint16) if dtype == float16 else bfloat16_bits(single))


def bfloat16_to_float32(bits: np.ndarray) -> np.ndarray:
    """The float32 values of bfloat16 bit patterns (exact)."""
    return (bits.astype(np.uint32) << 16).view(np.float32)
