"""Exceptions users see. Each subclasses the builtin (or NumPy's exception) a NumPy or PyTorch user would catch."""
from __future__ import annotations

import numpy as np


class ShapeError(ValueError):
    """Shapes that do not fit: broadcasting, reshape sizes, matmul inner dimensions."""


class AxisError(ValueError, IndexError):
    """An axis outside the tensor's dimensions, or repeated (NumPy's AxisError)."""


class DTypeError(TypeError):
    """A dtype an op does not support, or a value that does not fit a dtype."""


class DeviceError(RuntimeError):
    """A device that does not exist here, or tensors on different devices in one op."""


class KernelError(RuntimeError):
    """A kernel failed to compile or run; the message names the op's line in user code."""


class LinAlgError(np.linalg.LinAlgError):
    """A factorization failed on a matrix (singular, not positive definite, no convergence): NumPy's
    `numpy.linalg.LinAlgError` (a ValueError), so code written for NumPy catches it; raised by the realize that
    computes it, naming the matrix and the op's line."""


class JitError(RuntimeError):
    """A function given to `lt.jit` does something a recorded replay cannot repeat; the message says what
    and names the line in user code."""


class VmapError(RuntimeError):
    """A function given to `lt.vmap` does something a batching transformation cannot (reads data, computes a value
    of its mapped arguments); the message says what and names the line in user code."""
