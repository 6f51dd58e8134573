"""lazytensor: NumPy- and PyTorch-style arrays that are lazy and fuse into compiled kernels.

    import lazytensor as lt
    x = lt.asarray([1.0, 2.0, 3.0])
    y = (x * 2 + 1).sum()      # recorded, not run
    print(lt.schedule(y))      # the one kernel realize() would run
    y.item()                   # runs it: 15.0

See README.md for the guide to lazy evaluation and debugging.
"""
from __future__ import annotations

import builtins
import functools
from collections.abc import Callable
from typing import Any

from . import (
    cuda,
    einops_backend,  # noqa: F401  (defines einops' backend where einops is installed)
    linalg,
    nn,
    optim,
    random,
    special,
    utils,
)
from .array_api import __array_api_version__, __array_namespace_info__, e, inf, nan, newaxis, pi
from .autograd import custom_vjp, enable_grad, grad, gradients, no_grad, set_grad_enabled, value_and_grad
from .autograd import functional as _functional  # noqa: F401 (lt.autograd.functional, as torch.autograd's)
from .checkpoint import load, save
from .contraction import einsum
from .creation import (
    arange,
    array,
    asanyarray,
    asarray,
    ascontiguousarray,
    block_diag,
    cartesian_prod,
    combinations,
    diag_indices,
    diagflat,
    empty,
    empty_like,
    eye,
    from_dlpack,
    from_numpy,
    full,
    full_like,
    geomspace,
    identity,
    indices,
    linspace,
    logspace,
    meshgrid,
    ones,
    ones_like,
    tensor,
    tri,
    tril,
    tril_indices,
    triu,
    triu_indices,
    vander,
    zeros,
    zeros_like,
)
from .device import Device, devices, empty_cache, synchronize
from .dtypes import (
    DType,
    FInfo,
    IInfo,
    bfloat16,
    bool_,
    can_cast,
    default_int,
    finfo,
    float16,
    float32,
    float64,
    get_default_dtype,
    iinfo,
    int8,
    int16,
    int32,
    int64,
    isdtype,
    promote,
    result_type,
    set_default_dtype,
    uint8,
    uint16,
    uint32,
    uint64,
    weak_result_type,
)
from .dump import dump_to
from .errors import AxisError, DeviceError, DTypeError, JitError, KernelError, LinAlgError, ShapeError, VmapError
from .explain import draw, explain
from .export import export
from .indexing import compress, delete, extract, flatnonzero, ix_, nonzero, put_along_axis, trim_zeros
from .jit import Jit, jit
from .kernels.llvm import disk_cache
from .kernels.triton import set_allow_tf32, tf32_allowed
from .movement import (
    append,
    array_split,
    atleast_1d,
    atleast_2d,
    atleast_3d,
    block,
    broadcast_arrays,
    column_stack,
    concat,
    dsplit,
    dstack,
    fliplr,
    flipud,
    hsplit,
    hstack,
    repeat,
    resize,
    rollaxis,
    rot90,
    split,
    stack,
    unstack,
    vsplit,
    vstack,
)
from .nanfunctions import (
    nanargmax,
    nanargmin,
    nancumprod,
    nancumsum,
    nanmax,
    nanmean,
    nanmin,
    nanprod,
    nanstd,
    nansum,
    nanvar,
)
from .numeric import (
    convolve,
    correlate,
    cumulative_trapezoid,
    ediff1d,
    gradient,
    polyfit,
    polyval,
    ravel_multi_index,
    trapezoid,
    trapz,
    unravel_index,
    unwrap,
)
from .products import inner, kron, trace, vdot
from .profiling import Profile, profile
from .pytorch_methods import add_pytorch_methods
from .random import (
    Generator,
    get_rng_state,
    initial_seed,
    manual_seed,
    multinomial,
    normal,
    rand,
    rand_like,
    randint,
    randint_like,
    randn,
    randn_like,
    randperm,
    set_rng_state,
)
from .realize import Stats, reset_stats, stats
from .realize import realizing as _realizing
from .schedule import Schedule
from .schedule import schedule as _schedule_nodes
from .sorting import (
    argpartition,
    bucketize,
    in1d,
    intersect1d,
    isin,
    lexsort,
    partition,
    searchsorted,
    setdiff1d,
    setxor1d,
    union1d,
    unique,
    unique_all,
    unique_counts,
    unique_inverse,
    unique_values,
)
from .special import digamma, erfc, erfinv, frexp, gcd, i0, lcm, lgamma, polygamma
from .statistics import (
    average,
    bincount,
    corrcoef,
    cov,
    digitize,
    histc,
    histogram,
    histogram2d,
    histogram_bin_edges,
    histogramdd,
    interp,
    median,
    nanmedian,
    nanpercentile,
    nanquantile,
    percentile,
    ptp,
    quantile,
)
from .tensor import Tensor, _is_scalar, broadcast_shapes, realize, where
from .ufuncs import (
    cbrt,
    deg2rad,
    degrees,
    fabs,
    float_power,
    fmax,
    fmin,
    fmod,
    heaviside,
    isneginf,
    isposinf,
    ldexp,
    logaddexp2,
    modf,
    rad2deg,
    radians,
    select,
    sinc,
)
from .vmap import vmap

add_pytorch_methods(Tensor)  # after every module has added its methods

bool = bool_
float = float32
double = float64
half = float16
long = int64
int = int32
cat = concat
concatenate = concat
matrix_transpose = linalg.matrix_transpose
cross = linalg.cross  # NumPy's np.cross of 3-vectors, PyTorch's torch.cross along `axis`
cdist = nn.functional.cdist


def fill_diagonal(a: Tensor, val: Any, wrap: bool = False) -> None:
    """NumPy's fill_diagonal: `val` on a's main diagonal, in place (a rebound; see `Tensor.fill_diagonal_`)."""
    a.fill_diagonal_(val, wrap)


def __getattr__(name: str) -> Any:
    if name == "default_float":  # the default float dtype at the time it is read (`set_default_dtype`)
        return get_default_dtype()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def set_cache(enabled: bool) -> None:
    """Turn the persistent compile cache on or off for this process: compiled CPU kernels kept on disk under
    `$LT_CACHE_DIR/llvm` (`~/.cache/lazytensor/llvm` by default; `LT_CACHE_DIR=` empty turns it off too), so a
    new process running the same program compiles nothing."""
    disk_cache.set_enabled(enabled)


def clear_cache() -> None:
    """Remove every compiled kernel the persistent compile cache holds."""
    disk_cache.clear()


def schedule(*tensors: Tensor) -> Schedule:
    """The kernels `realize(*tensors)` would run, without running them. Print it to read them."""
    with _realizing:  # a realize in another thread must not rewrite the graph while it is read
        return _schedule_nodes(*(t.node for t in tensors))


def _function(method: Callable) -> Callable:
    """`lt.exp(x)` for `x.exp()`: the first argument may be anything asarray takes. A Python scalar before a
    tensor is weak, as the array API (2024.12) has it for binary functions: `lt.atan2(1, x)` takes x's dtype
    and device, as `x.atan2(1)` would. `out=t` (PyTorch's and NumPy's; NumPy's one-tensor tuple too) rebinds
    t to the result, by the rules of an in-place op: the same shape and device, a dtype t can hold."""
    @functools.wraps(method)
    def function(x: Any, *args: Any, out: Tensor | tuple[Tensor] | None = None, **kwargs: Any) -> Any:
        if not isinstance(x, Tensor):
            other = args[0] if args else None
            x = Tensor._scalar(x, weak_result_type(other.dtype, x), other.device, method.__name__) \
                if _is_scalar(x) and isinstance(other, Tensor) else asarray(x)
        result = method(x, *args, **kwargs)
        return result if out is None else _written_into(out, result, method.__name__)
    return function


def _written_into(out: Any, result: Any, name: str) -> Tensor:
    """`out` rebound to `result`, the value of `lt.<name>(..., out=out)`."""
    if isinstance(out, tuple) and len(out) == 1:
        out = out[0]
    if not isinstance(out, Tensor) or not isinstance(result, Tensor):
        raise TypeError(f"{name}: out= takes one tensor for a function of one tensor result, got "
                        f"{type(out).__name__}")
    if out.device != result.device:
        raise DeviceError(f"{name}: out= is on {out.device}, the result on {result.device}")
    return out._inplace(lambda _, r: r, result, f"{name}(out=)")


# NumPy-style functions of the Tensor methods: `lt.exp(x)` is `x.exp()`, for anything `asarray` takes.
abs = _function(Tensor.abs)
absolute = _function(Tensor.absolute)
add = _function(Tensor.add)
sub = _function(Tensor.sub)
multiply = _function(Tensor.mul)
divide = true_divide = _function(Tensor.div)
floor_divide = _function(Tensor.floor_divide)
remainder = mod = _function(Tensor.remainder)
pow = power = _function(Tensor.pow)
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
atan2 = arctan2 = _function(Tensor.atan2)
atan = arctan = _function(Tensor.atan)
asin = arcsin = _function(Tensor.asin)
acos = arccos = _function(Tensor.acos)
asinh = arcsinh = _function(Tensor.asinh)
acosh = arccosh = _function(Tensor.acosh)
atanh = arctanh = _function(Tensor.atanh)
sinh = _function(Tensor.sinh)
cosh = _function(Tensor.cosh)
hypot = _function(Tensor.hypot)
copysign = _function(Tensor.copysign)
signbit = _function(Tensor.signbit)
nextafter = _function(Tensor.nextafter)
sigmoid = _function(Tensor.sigmoid)
relu = _function(Tensor.relu)
sign = _function(Tensor.sign)
floor = _function(Tensor.floor)
ceil = _function(Tensor.ceil)
round = _function(Tensor.round)
rint = _function(Tensor.round)  # NumPy's: half to even, as round
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
bitwise_invert = _function(Tensor.bitwise_invert)
bitwise_and = _function(Tensor.bitwise_and)
bitwise_or = _function(Tensor.bitwise_or)
bitwise_xor = _function(Tensor.bitwise_xor)
bitwise_left_shift = _function(Tensor.bitwise_left_shift)
bitwise_right_shift = _function(Tensor.bitwise_right_shift)
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
var_mean = _function(Tensor.var_mean)
std_mean = _function(Tensor.std_mean)
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
narrow = _function(Tensor.narrow)
pad = _function(Tensor.pad)
tile = _function(Tensor.tile)
matmul = _function(Tensor.matmul)
tensordot = _function(Tensor.tensordot)
dot = _function(Tensor.dot)
vecdot = _function(Tensor.vecdot)
outer = _function(Tensor.outer)
astype = _function(Tensor.astype)
contiguous = _function(Tensor.contiguous)
copy = _function(Tensor.copy)
subtract = _function(Tensor.sub)
positive = _function(Tensor.positive)
logaddexp = _function(Tensor.logaddexp)
real = _function(Tensor.real)
imag = _function(Tensor.imag)
conj = _function(Tensor.conj)
isclose = _function(Tensor.isclose)
nan_to_num = _function(Tensor.nan_to_num)
allclose = _function(Tensor.allclose)
moveaxis = _function(Tensor.moveaxis)
roll = _function(Tensor.roll)
cumprod = _function(Tensor.cumprod)
cumulative_sum = _function(Tensor.cumulative_sum)
cumulative_prod = _function(Tensor.cumulative_prod)
count_nonzero = _function(Tensor.count_nonzero)
diff = _function(Tensor.diff)
take = _function(Tensor.take)
take_along_axis = _function(Tensor.take_along_axis)
argwhere = _function(Tensor.argwhere)
argsort = _function(Tensor.argsort)
gather = _function(Tensor.gather)
index_select = _function(Tensor.index_select)
bmm = _function(Tensor.bmm)
movedim = _function(Tensor.movedim)
diag = _function(Tensor.diag)
diagonal = _function(Tensor.diagonal)
masked_fill = _function(Tensor.masked_fill)
masked_select = _function(Tensor.masked_select)
repeat_interleave = _function(Tensor.repeat_interleave)
topk = _function(Tensor.topk)
kthvalue = _function(Tensor.kthvalue)
scatter_reduce = _function(Tensor.scatter_reduce)
cummax = _function(Tensor.cummax)
cummin = _function(Tensor.cummin)
logcumsumexp = _function(Tensor.logcumsumexp)
mode = _function(Tensor.mode)
unique_consecutive = _function(Tensor.unique_consecutive)


baddbmm = _function(Tensor.baddbmm)
addbmm = _function(Tensor.addbmm)
addmm = _function(Tensor.addmm)
addmv = _function(Tensor.addmv)
addr = _function(Tensor.addr)
mm = _function(Tensor.mm)
mv = _function(Tensor.mv)
ger = _function(Tensor.ger)
lerp = _function(Tensor.lerp)
logit = _function(Tensor.logit)
xlogy = _function(Tensor.xlogy)
frac = _function(Tensor.frac)
sgn = _function(Tensor.sgn)
fix = _function(Tensor.fix)
clamp_min = _function(Tensor.clamp_min)
clamp_max = _function(Tensor.clamp_max)
unbind = _function(Tensor.unbind)
unflatten = _function(Tensor.unflatten)
narrow_copy = _function(Tensor.narrow_copy)
diag_embed = _function(Tensor.diag_embed)
aminmax = _function(Tensor.aminmax)
take_along_dim = _function(Tensor.take_along_dim)
msort = _function(Tensor.msort)
index_fill = _function(Tensor.index_fill)
index_copy = _function(Tensor.index_copy)
index_put = _function(Tensor.index_put)
put = _function(Tensor.put)
addcmul = _function(Tensor.addcmul)
addcdiv = _function(Tensor.addcdiv)
masked_scatter = _function(Tensor.masked_scatter)
select_scatter = _function(Tensor.select_scatter)
slice_scatter = _function(Tensor.slice_scatter)
diagonal_scatter = _function(Tensor.diagonal_scatter)
dist = _function(Tensor.dist)
renorm = _function(Tensor.renorm)
inverse = _function(Tensor.inverse)
logdet = _function(Tensor.logdet)
pinverse = _function(Tensor.pinverse)


# PyTorch's names of functions lazytensor has under NumPy's or the array API's
mul = multiply
div = divide
neg = negative
eq, ne, gt, ge, lt, le = equal, not_equal, greater, greater_equal, less, less_equal
as_tensor = asarray
broadcast_tensors = broadcast_arrays
tensor_split = _function(Tensor.tensor_split)
t = _function(Tensor.t)
clone = _function(Tensor.clone)
chunk = _function(Tensor.chunk)
numel = _function(Tensor.numel)
norm = _function(Tensor.norm)
bernoulli = _function(Tensor.bernoulli)
swapdims = _function(Tensor.swapdims)
adjoint = _function(Tensor.adjoint)
pdist = nn.functional.pdist


# NumPy's other names of functions lazytensor has
around = round
invert = bitwise_invert
left_shift = bitwise_left_shift
right_shift = bitwise_right_shift


def chain_matmul(*matrices: Tensor) -> Tensor:
    """PyTorch's chain_matmul: the product of the 2-d tensors, in the cheapest order (`linalg.multi_dot`)."""
    if builtins.any(m.ndim != 2 for m in matrices):
        raise ShapeError(f"chain_matmul: expects 2-d tensors, got shapes {[m.shape for m in matrices]}")
    return matrices[0] if len(matrices) == 1 else linalg.multi_dot(list(matrices))


def divmod(x1: Any, x2: Any, /) -> tuple[Tensor, Tensor]:
    """NumPy's divmod: `(floor_divide(x1, x2), remainder(x1, x2))`."""
    return floor_divide(x1, x2), remainder(x1, x2)


def ndim(a: Any) -> int:
    """NumPy's ndim: the number of dimensions of `a` (anything asarray takes)."""
    return (a if isinstance(a, Tensor) else asarray(a)).ndim


def shape(a: Any) -> tuple[int, ...]:
    """NumPy's shape of `a` (anything asarray takes)."""
    return tuple((a if isinstance(a, Tensor) else asarray(a)).shape)


def size(a: Any, axis: int | None = None) -> int:
    """NumPy's size: the number of elements of `a`, or of its `axis`."""
    t = a if isinstance(a, Tensor) else asarray(a)
    return t.numel() if axis is None else t.shape[axis]


def isreal(x: Any) -> Tensor:
    """Whether each element has no imaginary part (NumPy's and PyTorch's): true everywhere, as lazytensor's dtypes
    are real."""
    t = x if isinstance(x, Tensor) else asarray(x)
    return ones(t.shape, dtype=bool_, device=t.device)


def iscomplex(x: Any) -> Tensor:
    """NumPy's iscomplex: whether each element has an imaginary part other than 0 (false everywhere: lazytensor's
    dtypes are real)."""
    return ~isreal(x)


def array_equal(a1: Any, a2: Any, equal_nan: bool = False) -> bool:
    """NumPy's array_equal: whether the two have one shape and equal elements (NaNs equal with `equal_nan`)."""
    x, y = (a if isinstance(a, Tensor) else asarray(a) for a in (a1, a2))
    if x.shape != y.shape:
        return False
    same = x == y
    if equal_nan:
        same = same | (isnan(x) & isnan(y))
    return builtins.bool(same.all())


def array_equiv(a1: Any, a2: Any) -> bool:
    """NumPy's array_equiv: whether the two broadcast together and are equal elementwise."""
    x, y = (a if isinstance(a, Tensor) else asarray(a) for a in (a1, a2))
    try:
        broadcast_shapes(x.shape, y.shape)
    except ShapeError:
        return False
    return builtins.bool((x == y).all())


def is_tensor(obj: Any) -> bool:
    """Whether `obj` is a Tensor (PyTorch's `is_tensor`)."""
    return isinstance(obj, Tensor)


def is_floating_point(x: Tensor) -> bool:
    """Whether x's dtype is a floating-point one (PyTorch's)."""
    return x.dtype.is_float


def inference_mode(mode: bool = True) -> Any:
    """PyTorch's name for `no_grad` (a context manager and a decorator): no autograd records while it holds."""
    return set_grad_enabled(not mode)
scatter = _function(Tensor.scatter)
scatter_add = _function(Tensor.scatter_add)
index_add = _function(Tensor.index_add)


def sort(x: Any, /, *, axis: int | None = -1, descending: bool = False, stable: bool = True) -> Tensor:
    """The array API's sort: the values of x sorted along `axis` (see `Tensor.argsort` for the order; None, as
    NumPy: the flattened tensor)."""
    return (x if isinstance(x, Tensor) else asarray(x)).sort(axis, descending, stable)

__all__ = [
    "AxisError",
    "DType",
    "DTypeError",
    "Device",
    "DeviceError",
    "FInfo",
    "Generator",
    "KernelError",
    "LinAlgError",
    "Profile",
    "Schedule",
    "ShapeError",
    "Stats",
    "Tensor",
    "arange",
    "as_tensor",
    "asarray",
    "bfloat16",
    "bool_",
    "broadcast_shapes",
    "broadcast_tensors",
    "cat",
    "chunk",
    "clear_cache",
    "clone",
    "concat",
    "default_float",
    "default_int",
    "devices",
    "div",
    "draw",
    "dump_to",
    "empty",
    "empty_cache",
    "empty_like",
    "eq",
    "explain",
    "export",
    "eye",
    "finfo",
    "float16",
    "float32",
    "float64",
    "from_numpy",
    "full",
    "full_like",
    "ge",
    "get_default_dtype",
    "get_rng_state",
    "gt",
    "half",
    "initial_seed",
    "int8",
    "int16",
    "int32",
    "int64",
    "is_floating_point",
    "is_tensor",
    "le",
    "linspace",
    "load",
    "lt",
    "mul",
    "ne",
    "neg",
    "norm",
    "normal",
    "numel",
    "ones",
    "ones_like",
    "profile",
    "promote",
    "randint_like",
    "realize",
    "reset_stats",
    "save",
    "schedule",
    "set_cache",
    "set_default_dtype",
    "set_rng_state",
    "split",
    "stack",
    "stats",
    "synchronize",
    "t",
    "tensor",
    "tensor_split",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "vmap",
    "where",
    "zeros",
    "zeros_like",
]
__all__ += [  # the NumPy-style functions above
    "abs",
    "absolute",
    "acos",
    "acosh",
    "add",
    "addbmm",
    "addmm",
    "addmv",
    "addr",
    "all",
    "allclose",
    "amax",
    "amin",
    "aminmax",
    "any",
    "arccos",
    "arccosh",
    "arcsin",
    "arcsinh",
    "arctan",
    "arctan2",
    "arctanh",
    "argmax",
    "argmin",
    "argsort",
    "argwhere",
    "asin",
    "asinh",
    "astype",
    "atan",
    "atan2",
    "atanh",
    "baddbmm",
    "bitwise_and",
    "bitwise_invert",
    "bitwise_left_shift",
    "bitwise_not",
    "bitwise_or",
    "bitwise_right_shift",
    "bitwise_xor",
    "bmm",
    "broadcast_to",
    "ceil",
    "clamp",
    "clamp_max",
    "clamp_min",
    "clip",
    "conj",
    "contiguous",
    "copysign",
    "cos",
    "cosh",
    "count_nonzero",
    "cummax",
    "cummin",
    "cumprod",
    "cumsum",
    "cumulative_prod",
    "cumulative_sum",
    "diag",
    "diag_embed",
    "diagonal",
    "diff",
    "dist",
    "divide",
    "dot",
    "equal",
    "erf",
    "exp",
    "exp2",
    "expand_dims",
    "expm1",
    "fix",
    "flatten",
    "flip",
    "floor",
    "floor_divide",
    "frac",
    "gather",
    "ger",
    "greater",
    "greater_equal",
    "hypot",
    "imag",
    "index_add",
    "index_copy",
    "index_fill",
    "index_put",
    "index_select",
    "inference_mode",
    "inverse",
    "isclose",
    "isfinite",
    "isinf",
    "isnan",
    "kthvalue",
    "lerp",
    "less",
    "less_equal",
    "log",
    "log1p",
    "log2",
    "log10",
    "log_softmax",
    "logaddexp",
    "logcumsumexp",
    "logdet",
    "logical_and",
    "logical_not",
    "logical_or",
    "logical_xor",
    "logit",
    "logsumexp",
    "masked_fill",
    "masked_select",
    "matmul",
    "max",
    "maximum",
    "mean",
    "min",
    "minimum",
    "mm",
    "mode",
    "moveaxis",
    "movedim",
    "msort",
    "multiply",
    "mv",
    "nan_to_num",
    "narrow",
    "narrow_copy",
    "negative",
    "nextafter",
    "not_equal",
    "outer",
    "pad",
    "permute",
    "permute_dims",
    "pinverse",
    "positive",
    "pow",
    "prod",
    "ravel",
    "real",
    "reciprocal",
    "relu",
    "remainder",
    "renorm",
    "repeat_interleave",
    "reshape",
    "roll",
    "round",
    "rsqrt",
    "scatter",
    "scatter_add",
    "scatter_reduce",
    "select",
    "sgn",
    "sigmoid",
    "sign",
    "signbit",
    "sin",
    "sinh",
    "softmax",
    "sqrt",
    "square",
    "squeeze",
    "std",
    "std_mean",
    "sub",
    "subtract",
    "sum",
    "swapaxes",
    "take_along_dim",
    "tan",
    "tanh",
    "tensordot",
    "tile",
    "topk",
    "transpose",
    "true_divide",
    "trunc",
    "unbind",
    "unflatten",
    "unsqueeze",
    "var",
    "var_mean",
    "vecdot",
    "xlogy",
]
__all__ += [
    "Jit",
    "JitError",
    "VmapError",
    "cuda",
    "custom_vjp",
    "enable_grad",
    "grad",
    "gradients",
    "jit",
    "manual_seed",
    "nn",
    "no_grad",
    "optim",
    "rand",
    "rand_like",
    "randint",
    "randn",
    "randn_like",
    "random",
    "randperm",
    "set_allow_tf32",
    "set_grad_enabled",
    "special",
    "tf32_allowed",
    "utils",
    "value_and_grad",
]
# the array API standard's namespace and NumPy's everyday names
__all__ += [
    "IInfo",
    "__array_api_version__",
    "__array_namespace_info__",
    "array",
    "average",
    "bincount",
    "broadcast_arrays",
    "can_cast",
    "concatenate",
    "cross",
    "e",
    "einsum",
    "from_dlpack",
    "histogram",
    "hstack",
    "iinfo",
    "inf",
    "isdtype",
    "isin",
    "linalg",
    "matrix_transpose",
    "median",
    "meshgrid",
    "nan",
    "newaxis",
    "nonzero",
    "percentile",
    "pi",
    "quantile",
    "repeat",
    "result_type",
    "searchsorted",
    "sort",
    "take",
    "take_along_axis",
    "tril",
    "triu",
    "unique",
    "unique_all",
    "unique_consecutive",
    "unique_counts",
    "unique_inverse",
    "unique_values",
    "unstack",
    "vstack",
]
__all__ += [  # NumPy's functions beyond the array API, and PyTorch's special functions
    "addcdiv",
    "addcmul",
    "adjoint",
    "append",
    "argpartition",
    "around",
    "array_equal",
    "array_equiv",
    "array_split",
    "asanyarray",
    "ascontiguousarray",
    "atleast_1d",
    "atleast_2d",
    "atleast_3d",
    "bernoulli",
    "block",
    "block_diag",
    "bucketize",
    "cartesian_prod",
    "cbrt",
    "cdist",
    "chain_matmul",
    "column_stack",
    "combinations",
    "compress",
    "convolve",
    "copy",
    "corrcoef",
    "correlate",
    "cov",
    "cumulative_trapezoid",
    "deg2rad",
    "degrees",
    "delete",
    "diag_indices",
    "diagflat",
    "diagonal_scatter",
    "digamma",
    "digitize",
    "divmod",
    "dsplit",
    "dstack",
    "ediff1d",
    "erfc",
    "erfinv",
    "extract",
    "fabs",
    "fill_diagonal",
    "flatnonzero",
    "fliplr",
    "flipud",
    "float_power",
    "fmax",
    "fmin",
    "fmod",
    "frexp",
    "gcd",
    "geomspace",
    "gradient",
    "heaviside",
    "histc",
    "histogram2d",
    "histogram_bin_edges",
    "histogramdd",
    "hsplit",
    "i0",
    "identity",
    "in1d",
    "indices",
    "inner",
    "interp",
    "intersect1d",
    "invert",
    "iscomplex",
    "isneginf",
    "isposinf",
    "isreal",
    "ix_",
    "kron",
    "lcm",
    "ldexp",
    "left_shift",
    "lexsort",
    "lgamma",
    "logaddexp2",
    "logspace",
    "masked_scatter",
    "mod",
    "modf",
    "multinomial",
    "nanargmax",
    "nanargmin",
    "nancumprod",
    "nancumsum",
    "nanmax",
    "nanmean",
    "nanmedian",
    "nanmin",
    "nanpercentile",
    "nanprod",
    "nanquantile",
    "nanstd",
    "nansum",
    "nanvar",
    "ndim",
    "partition",
    "pdist",
    "polyfit",
    "polygamma",
    "polyval",
    "power",
    "ptp",
    "put",
    "put_along_axis",
    "rad2deg",
    "radians",
    "ravel_multi_index",
    "resize",
    "right_shift",
    "rint",
    "rollaxis",
    "rot90",
    "select_scatter",
    "setdiff1d",
    "setxor1d",
    "shape",
    "sinc",
    "size",
    "slice_scatter",
    "swapdims",
    "trace",
    "trapezoid",
    "trapz",
    "tri",
    "tril_indices",
    "trim_zeros",
    "triu_indices",
    "union1d",
    "unravel_index",
    "unwrap",
    "vander",
    "vdot",
    "vsplit",
]
