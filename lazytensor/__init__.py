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


# NumPy-style functions of the Tensor methods: `lt.exp(x)` is `x.exp()`, for anything `asarray` takes.
abs = _function(Tensor.abs)
absolute = _function(Tensor.absolute)
add = _function(Tensor.add)
sub = _function(Tensor.sub)
multiply = _function(Tensor.mul)
divide = _function(Tensor.div)
floor_divide = _function(Tensor.floor_divide)
remainder = _function(Tensor.remainder)
pow = _function(Tensor.pow)
exp = _function(Tensor.exp)
exp2 = _function(Tensor.exp2)
expm1 = _function(Tensor.expm1)
log = _function(Tensor.log)
log2 = _function(Tensor.log2)
log10 = _function(Tensor.log10)
log1p = _function(Tensor.log1p)
sqrt = _function(Tensor.sqrt)
rsqrt = _function(Tensor.rsqrt)
sin = _function(Tensor.sin)
cos = _function(Tensor.cos)
tan = _function(Tensor.tan)
tanh = _function(Tensor.tanh)
erf = _function(Tensor.erf)
sigmoid = _function(Tensor.sigmoid)
relu = _function(Tensor.relu)
sign = _function(Tensor.sign)
floor = _function(Tensor.floor)
ceil = _function(Tensor.ceil)
round = _function(Tensor.round)
trunc = _function(Tensor.trunc)
reciprocal = _function(Tensor.reciprocal)
square = _function(Tensor.square)
maximum = _function(Tensor.maximum)
minimum = _function(Tensor.minimum)
clip = _function(Tensor.clip)
clamp = _function(Tensor.clamp)
isnan = _function(Tensor.isnan)
isinf = _function(Tensor.isinf)
isfinite = _function(Tensor.isfinite)
logical_and = _function(Tensor.logical_and)
logical_or = _function(Tensor.logical_or)
logical_xor = _function(Tensor.logical_xor)
logical_not = _function(Tensor.logical_not)
bitwise_not = _function(Tensor.bitwise_not)
negative = _function(Tensor.negative)
less = _function(Tensor.less)
less_equal = _function(Tensor.less_equal)
greater = _function(Tensor.greater)
greater_equal = _function(Tensor.greater_equal)
equal = _function(Tensor.equal)
not_equal = _function(Tensor.not_equal)
sum = _function(Tensor.sum)
mean = _function(Tensor.mean)
prod = _function(Tensor.prod)
max = _function(Tensor.max)
min = _function(Tensor.min)
amax = _function(Tensor.amax)
amin = _function(Tensor.amin)
argmax = _function(Tensor.argmax)
argmin = _function(Tensor.argmin)
var = _function(Tensor.var)
std = _function(Tensor.std)
any = _function(Tensor.any)
all = _function(Tensor.all)
logsumexp = _function(Tensor.logsumexp)
softmax = _function(Tensor.softmax)
log_softmax = _function(Tensor.log_softmax)
cumsum = _function(Tensor.cumsum)
reshape = _function(Tensor.reshape)
permute = _function(Tensor.permute)
permute_dims = _function(Tensor.permute_dims)
transpose = _function(Tensor.transpose)
swapaxes = _function(Tensor.swapaxes)
broadcast_to = _function(Tensor.broadcast_to)
squeeze = _function(Tensor.squeeze)
unsqueeze = _function(Tensor.unsqueeze)
expand_dims = _function(Tensor.expand_dims)
flatten = _function(Tensor.flatten)
ravel = _function(Tensor.ravel)
flip = _function(Tensor.flip)
pad = _function(Tensor.pad)
tile = _function(Tensor.tile)
matmul = _function(Tensor.matmul)
tensordot = _function(Tensor.tensordot)
dot = _function(Tensor.dot)
vecdot = _function(Tensor.vecdot)
outer = _function(Tensor.outer)
astype = _function(Tensor.astype)
contiguous = _function(Tensor.contiguous)
subtract = _function(Tensor.sub)

_FUNCTIONS = """abs absolute add sub multiply divide floor_divide remainder pow exp exp2 expm1 log log2 log10 log1p sqrt rsqrt
sin cos tan tanh erf sigmoid relu sign floor ceil round trunc reciprocal square maximum minimum clip clamp
isnan isinf isfinite logical_and logical_or logical_xor logical_not bitwise_not negative less less_equal
greater greater_equal equal not_equal sum mean prod max min amax amin argmax argmin var std any all logsumexp
softmax log_softmax cumsum reshape permute permute_dims transpose swapaxes broadcast_to squeeze unsqueeze
expand_dims flatten ravel flip pad tile matmul tensordot dot vecdot outer astype contiguous""".split()

__all__ = ["Tensor", "DType", "Device", "Schedule", "Stats", "asarray", "tensor", "from_numpy", "zeros", "ones",
           "full", "empty", "zeros_like", "ones_like", "full_like", "empty_like", "arange", "linspace", "eye",
           "concat", "cat", "stack", "split", "where", "realize", "schedule", "stats", "reset_stats", "devices",
           "synchronize", "broadcast_shapes", "promote", "bool_", "int8", "int16", "int32", "int64", "uint8",
           "float16", "half", "bfloat16", "float32", "float64", "finfo", "FInfo", "default_float", "default_int",
           "ShapeError", "AxisError", "DTypeError", "DeviceError", "KernelError", "empty_cache", *_FUNCTIONS, "subtract"]
__all__ += ["nn", "optim", "random", "no_grad", "enable_grad", "set_grad_enabled", "grad", "value_and_grad",
            "gradients", "custom_vjp", "manual_seed", "rand", "randn", "randint", "rand_like", "randn_like",
            "randperm", "set_allow_tf32", "tf32_allowed", "jit", "Jit", "JitError"]
