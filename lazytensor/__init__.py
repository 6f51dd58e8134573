"""lazytensor: NumPy- and PyTorch-style arrays that are lazy and fuse into compiled kernels.

    import lazytensor as lt
    x = lt.asarray([1.0, 2.0, 3.0])
    y = (x * 2 + 1).sum()      # recorded, not run
    print(lt.schedule(y))      # the one kernel realize() would run
    y.item()                   # runs it: 15.0

See README.md for the guide to lazy evaluation and debugging.
"""
from __future__ import annotations

import functools
from typing import Any, Callable

from .creation import (arange, asarray, empty, empty_like, eye, from_numpy, full, full_like, linspace, ones,
                       ones_like, tensor, zeros, zeros_like)
from .device import Device, devices, empty_cache, synchronize
from .dtypes import (DType, FInfo, bfloat16, bool_, default_float, default_int, finfo, float16, float32, float64,
                     int8, int16, int32, int64, promote, uint8)
from .errors import AxisError, DeviceError, DTypeError, JitError, KernelError, ShapeError
from .kernels.triton import set_allow_tf32, tf32_allowed
from .movement import concat, split, stack
from .realize import Stats, reset_stats, stats
from .realize import realizing as _realizing
from .schedule import Schedule
from .schedule import schedule as _schedule_nodes
from .tensor import Tensor, broadcast_shapes, realize, where

from . import nn, optim, random  # noqa: E402  (they build on Tensor)
from .autograd import (custom_vjp, enable_grad, grad, gradients, no_grad, set_grad_enabled,  # noqa: E402
                       value_and_grad)
from .random import manual_seed, rand, rand_like, randint, randn, randn_like, randperm  # noqa: E402
from .jit import Jit, jit  # noqa: E402

bool = bool_  # noqa: A001  (lt.bool, as torch.bool)
float = float32  # noqa: A001
double = float64
half = float16
long = int64
int = int32  # noqa: A001
cat = concat


def schedule(*tensors: Tensor) -> Schedule:
    """The kernels `realize(*tensors)` would run, without running them. Print it to read them."""
    with _realizing:  # a realize in another thread must not rewrite the graph while it is read
        return _schedule_nodes(*(t.node for t in tensors))


def _function(method: Callable) -> Callable:
    """`lt.exp(x)` for `x.exp()`: the first argument may be anything asarray takes."""
    @functools.wraps(method)
    def function(x: Any, *args: Any, **kwargs: Any) -> Any:
        return method(x if isinstance(x, Tensor) else asarray(x), *args, **kwargs)
    return function


_METHODS = """abs absolute add sub multiply divide floor_divide remainder pow exp exp2 expm1 log log2 log10 log1p
sqrt rsqrt sin cos tan tanh erf sigmoid relu sign floor ceil round trunc reciprocal square maximum minimum clip
clamp isnan isinf isfinite logical_and logical_or logical_xor logical_not bitwise_not negative less less_equal
greater greater_equal equal not_equal sum mean prod max min amax amin argmax argmin var std any all logsumexp
softmax log_softmax cumsum reshape permute permute_dims transpose swapaxes broadcast_to squeeze unsqueeze
expand_dims flatten ravel flip pad tile matmul tensordot dot vecdot outer astype contiguous""".split()
_ALIASES = {"multiply": "mul", "divide": "div", "subtract": "sub"}
for _name in _METHODS:
    globals()[_name] = _function(getattr(Tensor, _ALIASES.get(_name, _name)))
subtract = globals()["sub"]

__all__ = ["Tensor", "DType", "Device", "Schedule", "Stats", "asarray", "tensor", "from_numpy", "zeros", "ones",
           "full", "empty", "zeros_like", "ones_like", "full_like", "empty_like", "arange", "linspace", "eye",
           "concat", "cat", "stack", "split", "where", "realize", "schedule", "stats", "reset_stats", "devices",
           "synchronize", "broadcast_shapes", "promote", "bool_", "int8", "int16", "int32", "int64", "uint8",
           "float16", "half", "bfloat16", "float32", "float64", "finfo", "FInfo", "default_float", "default_int",
           "ShapeError", "AxisError", "DTypeError", "DeviceError", "KernelError", "empty_cache", *_METHODS, "subtract"]
__all__ += ["nn", "optim", "random", "no_grad", "enable_grad", "set_grad_enabled", "grad", "value_and_grad",
            "gradients", "custom_vjp", "manual_seed", "rand", "randn", "randint", "rand_like", "randn_like",
            "randperm", "set_allow_tf32", "tf32_allowed", "jit", "Jit", "JitError"]
