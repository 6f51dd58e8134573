"""lazytensor.kernels: the backend-neutral kernel IR and its backends.

This package knows nothing of tensors: it takes a `Kernel` (see `ir.py`) and
renders, compiles and runs it. It imports nothing from the rest of lazytensor.
"""
from . import dtype, expr, ir

__all__ = ["dtype", "expr", "ir"]
