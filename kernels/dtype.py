"""Scalar element types shared by the kernel IR and every backend.

A `DType` names an element type once; backends map it to their own spelling
(LLVM types, Triton dtypes) from `kind` and `itemsize`, and the frontend maps it
to NumPy through `np_name`.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True, eq=False)
class DType:
    """An element type: `kind` is 'b' (bool), 'i' (signed), 'u' (unsigned) or 'f' (float).

    The module's constants are the only instances, so equality is identity: that keeps hashing a dtype,
    which every cache key of the scheduler and the compilers does, at C speed.
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
float32 = DType("float32", "f", 4)
float64 = DType("float64", "f", 8)

ALL_DTYPES: tuple[DType, ...] = (bool_, int8, int16, int32, int64, uint8, float32, float64)
BY_NAME: dict[str, DType] = {d.name: d for d in ALL_DTYPES}

SHORT_NAMES: dict[DType, str] = {
    bool_: "bool", int8: "i8", int16: "i16", int32: "i32", int64: "i64", uint8: "u8",
    float32: "f32", float64: "f64",
}
