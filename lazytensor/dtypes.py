"""dtypes and promotion.

Promotion follows NumPy between two integer or two float dtypes
(int8 + uint8 -> int16), and PyTorch / JAX between an integer and a float (the
float wins: int64 + float32 -> float32). Python scalars are weak: they take the
tensor's dtype unless their kind is higher (a Python float with an int tensor
gives float32, the default float; a Python int with a bool tensor gives int64,
the default int).
"""
from __future__ import annotations

import numpy as np

from .errors import DTypeError
from .kernels.dtype import (ALL_DTYPES, BY_NAME, DType, bool_, float32, float64, int8, int16, int32, int64,
                            uint8)

__all__ = ["DType", "bool_", "int8", "int16", "int32", "int64", "uint8", "float32", "float64", "ALL_DTYPES",
           "default_float", "default_int", "to_dtype", "promote", "result_type", "scalar_dtype", "to_numpy_dtype"]

default_float = float32
default_int = int64

_NP_TO_DTYPE = {np.dtype(d.np_name): d for d in ALL_DTYPES}


def to_dtype(x: object) -> DType:
    """A DType from a DType, a name ('float32'), a NumPy dtype or a Python type (float, int, bool)."""
    if isinstance(x, DType):
        return x
    if x is float:
        return default_float
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
    supported = ", ".join(d.name for d in ALL_DTYPES)
    name = getattr(x, "name", None) or getattr(x, "__name__", None) or str(x)
    raise DTypeError(f"lazytensor does not support dtype {name} (supported: {supported})")


def to_numpy_dtype(dtype: DType) -> np.dtype:
    return np.dtype(dtype.np_name)


def promote(a: DType, b: DType) -> DType:
    """The dtype two tensors combine to."""
    if a == b:
        return a
    ka, kb = ("f" if a.is_float else "i" if a.is_int else "b"), ("f" if b.is_float else "i" if b.is_int else "b")
    if ka == kb:
        return _NP_TO_DTYPE[np.promote_types(a.np_name, b.np_name)]
    order = "bif"
    return a if order.index(ka) > order.index(kb) else b


def scalar_dtype(value: object) -> DType:
    """The dtype a Python scalar would have as a tensor on its own."""
    if isinstance(value, bool):
        return bool_
    if isinstance(value, int):
        return default_int
    if isinstance(value, float):
        return default_float
    raise DTypeError(f"cannot use a {type(value).__name__} as a tensor scalar")


def result_type(tensor_dtype: DType, scalar: object) -> DType:
    """The dtype of a tensor combined with a weak Python scalar."""
    sd = scalar_dtype(scalar)
    if sd == bool_ or (sd.is_int and tensor_dtype.kind != "b") or (sd.is_float and tensor_dtype.is_float):
        return tensor_dtype
    return sd


def check_fits(value: int | float | bool, dtype: DType, op: str) -> None:
    """Raise if a Python int cannot be represented in an integer dtype (NumPy 2 and PyTorch refuse too)."""
    if dtype.is_int and isinstance(value, int) and not isinstance(value, bool):
        info = np.iinfo(dtype.np_name)
        if not info.min <= value <= info.max:
            raise DTypeError(f"{op}: Python integer {value} is out of bounds for {dtype.name}")
