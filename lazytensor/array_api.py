"""What the Python array API standard asks a namespace to say about itself: the revision it follows and
`__array_namespace_info__()`, the inspection object (capabilities, devices, dtypes).

lazytensor is its own array API namespace (`x.__array_namespace__()` is the `lazytensor` module); this
module holds only the inspection part, and imports nothing that builds tensors.
"""
from __future__ import annotations

import math

from .device import devices, get_device
from .dtypes import (
    DType,
    bool_,
    default_int,
    float32,
    float64,
    get_default_dtype,
    int8,
    int16,
    int32,
    int64,
    isdtype,
    uint8,
    uint16,
    uint32,
    uint64,
)

# The revision of the standard lazytensor follows, and those `__array_namespace__(api_version=...)` accepts:
# the older revisions are subsets of it in everything lazytensor implements.
__array_api_version__ = "2024.12"
API_VERSIONS = ("2021.12", "2022.12", "2023.12", "2024.12")

# The standard's constants.
e = math.e
pi = math.pi
inf = math.inf
nan = math.nan
newaxis = None

# The standard's dtypes that lazytensor has: not float16 and bfloat16, which the standard does not define.
STANDARD_DTYPES = (bool_, int8, int16, int32, int64, uint8, uint16, uint32, uint64, float32, float64)


class Info:
    """The standard's inspection namespace: what `lt.__array_namespace_info__()` returns.

    Device arguments are device names (`'cpu'`, `'cuda:0'`), as `x.device` gives them; every device holds
    every dtype. lazytensor has no complex dtypes, so no kind or default names one; its float16 and bfloat16
    are outside the standard, so `dtypes()` leaves them out.
    """

    def capabilities(self) -> dict[str, bool | int | None]:
        """Optional features: boolean-mask indexing and ops whose output shape depends on the data (`nonzero`,
        `unique_*`: the data is read first); any number of dimensions works."""
        return {"boolean indexing": True, "data-dependent shapes": True, "max dimensions": None}

    def default_device(self) -> str:
        """The device tensors are made on when none is given (`LT_DEVICE`, else the CPU)."""
        return get_device().name

    def default_dtypes(self, *, device: str | None = None) -> dict[str, DType]:
        """The dtypes of Python floats and ints as tensors, and of indices."""
        get_device(device)  # an unknown or unavailable device raises DeviceError
        return {"real floating": get_default_dtype(), "integral": default_int, "indexing": default_int}

    def devices(self) -> list[str]:
        """The names of the devices available in this process."""
        return [d.name for d in devices()]

    def dtypes(self, *, device: str | None = None, kind: str | DType | tuple[str | DType, ...] | None = None
               ) -> dict[str, DType]:
        """The standard's dtypes (`STANDARD_DTYPES`) by name, or those of `kind` (as `isdtype` reads it)."""
        get_device(device)
        return {d.name: d for d in STANDARD_DTYPES if kind is None or isdtype(d, kind)}


def __array_namespace_info__() -> Info:
    """The array API standard's inspection object for lazytensor (see `Info`)."""
    return Info()


__all__ = [
    "API_VERSIONS",
    "STANDARD_DTYPES",
    "Info",
    "__array_api_version__",
    "__array_namespace_info__",
    "e",
    "inf",
    "nan",
    "newaxis",
    "pi",
]
