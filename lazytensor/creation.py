"""Making tensors: from data (`asarray`), from a value (`zeros`, `full`), and from a formula
(`arange`, `linspace`, `eye`). Formulas are lazy too: `arange(n) * 2` is one kernel."""
from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from . import dlpack, dtypes
from .device import canonical, get_device
from .dtypes import DType, default_int, float64, get_default_dtype
from .errors import DTypeError, ShapeError
from .graph import Node, Op
from .kernels.dtype import bfloat16_to_float32
from .movement import concat, shape_arg, stack
from .tensor import Tensor, _is_scalar, where


def factory(make: Callable[..., Tensor]) -> Callable[..., Tensor]:
    """`make`, a function that makes a tensor, taking PyTorch's factory keyword `requires_grad=` too:
    `lt.zeros(3, requires_grad=True)`, `lt.tensor(data, requires_grad=True)` are leaves that require grad. A
    tensor passed in and handed back (`asarray(t)`) is detached first: the caller's tensor keeps its flag."""
    @functools.wraps(make)
    def made(*args: Any, requires_grad: bool = False, **kwargs: Any) -> Tensor:
        t = make(*args, **kwargs)
        if not requires_grad:
            return t
        if any(t is a for a in args):
            t = t.detach()
        return t.requires_grad_()
    return made


def _check_int_range(arr: np.ndarray, dtype: DType) -> None:
    """Python ints that `dtype` cannot hold raise, as in NumPy 2 and PyTorch: a cast would wrap them silently."""
    if arr.size and arr.dtype.kind in "iu" and dtype.is_int:
        least, greatest = dtypes.int_bounds(dtype)
        lo, hi = int(arr.min()), int(arr.max())
        if lo < least or hi > greatest:
            bad = lo if lo < least else hi
            raise DTypeError(f"asarray: Python integer {bad} is out of bounds for {dtype.name}")


def _numpy_of(obj: Any, dtype: DType | None) -> tuple[np.ndarray, DType]:
    """`obj` as the NumPy array a buffer of the returned dtype holds (bfloat16: its bit patterns)."""
    if isinstance(obj, (np.ndarray, np.generic)):
        arr = np.asarray(obj)
        if dtype is None:
            dtype = dtypes.to_dtype(arr.dtype)  # raises for unsupported dtypes
        elif dtypes.is_ml_bfloat16(arr.dtype):
            arr = bfloat16_to_float32(arr.view(np.uint16))  # ml_dtypes' bfloat16, by its exact values
        elif arr.dtype.kind not in "biuf":
            raise DTypeError(f"asarray: cannot make a tensor from data of NumPy dtype {arr.dtype}")
    else:
        try:
            arr = np.asarray(obj)
        except (ValueError, TypeError) as e:
            raise TypeError(f"asarray: cannot make a tensor from {type(obj).__name__}: {e}") from None
        if dtype is not None and dtype.is_int and arr.dtype.kind in "fO":
            # NumPy reads ints beyond int64's range beside others as float64 (or objects), which would round
            # them: converted straight to the integer dtype they are exact, and NumPy refuses what it cannot hold
            try:
                arr = np.asarray(obj, dtype=dtype.np_name)
            except (OverflowError, ValueError) as e:
                raise DTypeError(f"asarray: a value is out of bounds for {dtype.name} ({e})") from None
        _check_int_range(arr, dtype or default_int)
        if arr.dtype.kind not in "biuf":
            raise DTypeError(f"asarray: cannot make a tensor from data of NumPy dtype {arr.dtype}")
        if dtype is None:
            # Python data: floats default to float32 and ints to int64, as in PyTorch
            dtype = get_default_dtype() if arr.dtype.kind == "f" else default_int if arr.dtype.kind in "iu" else dtypes.bool_
    return dtypes.storage_array(arr, dtype), dtype


@factory
def asarray(obj: Any, dtype: Any = None, device: Any = None, copy: bool | None = None) -> Tensor:
    """A tensor from a tensor, NumPy array, nested list or Python scalar.

    The data is copied (a lazy tensor must not see later writes to the source);
    `from_numpy` shares memory instead. A tensor comes back itself where nothing changes. `copy=True` always
    gives a new tensor; `copy=False` raises ValueError where a copy is needed: for data that is not a tensor,
    and for a tensor of another dtype or device (array API).
    """
    dt = dtypes.to_dtype(dtype) if dtype is not None else None
    if isinstance(obj, Tensor):
        out = obj.cast(dt) if dt is not None else obj
        out = out.to(device) if device is not None else out
        if copy is False and out is not obj:
            raise ValueError(f"asarray: copy=False, but a {obj.dtype.name} tensor on {obj.device} needs a copy "
                             f"to become {out.dtype.name} on {out.device}")
        return out.copy() if copy and out is obj else out
    if copy is False:
        raise ValueError(f"asarray: copy=False, but a tensor from a {type(obj).__name__} is a copy of it "
                         "(from_numpy and from_dlpack share an array's memory)")
    dev = get_device(device)
    data, dt = _numpy_of(obj, dt)
    return Tensor(Node.from_buffer(dev.copy_of(data, dt), dt, data.shape, dev.name))


tensor = asarray


def from_numpy(array: np.ndarray) -> Tensor:
    """A CPU tensor sharing `array`'s memory (PyTorch's from_numpy): later writes to the array show."""
    if not isinstance(array, np.ndarray):
        raise TypeError(f"from_numpy: expected a numpy.ndarray, got {type(array).__name__}")
    dt = dtypes.to_dtype(array.dtype)
    arr = dtypes.storage_array(array if array.flags.c_contiguous else np.ascontiguousarray(array), dt)
    dev = get_device("cpu")
    return Tensor(Node.from_buffer(dev.from_numpy(arr, dt), dt, arr.shape, dev.name))


def _shape(args: Any, op: str) -> tuple[int, ...]:
    """A shape argument, checked now: a negative size must fail at the user's call, not at realize."""
    shape = shape_arg(args, op)
    if any(n < 0 for n in shape):
        raise ValueError(f"{op}: negative dimension in shape {shape}")
    return shape


@factory
def full(shape: Any, fill_value: Any, dtype: Any = None, device: Any = None) -> Tensor:
    """A tensor of `shape` filled with `fill_value` (its dtype follows the value unless given)."""
    shape = _shape((shape,) if isinstance(shape, int) else shape, "full")
    if isinstance(fill_value, Tensor):
        return fill_value.reshape(()).cast(dtype or fill_value.dtype).broadcast_to(shape)
    if not _is_scalar(fill_value):
        fill_value = np.asarray(fill_value).item()
    dt = dtypes.to_dtype(dtype) if dtype is not None else dtypes.scalar_dtype(fill_value)
    if dt.is_float and dt.itemsize == 2:  # a kernel reads the parameter in float32: give it the 16-bit value
        fill_value = dtypes.rounded(float(fill_value), dt)
    return Tensor._scalar(fill_value, dt, get_device(device).name, "full", shape)


def _constant(shape: Any, value: int, dtype: Any, device: Any, op: str) -> Tensor:
    shape = _shape(shape, op)
    dt = dtypes.dtype_or_default(dtype)
    return Tensor._const(value, dt, get_device(device).name).broadcast_to(shape)


@factory
def zeros(shape: Any = (), *more: int, dtype: Any = None, device: Any = None) -> Tensor:
    """A tensor of `shape` (a tuple, or the sizes as arguments: `zeros(2, 3)`) filled with 0s."""
    return _constant((shape, *more), 0, dtype, device, "zeros")


@factory
def ones(shape: Any = (), *more: int, dtype: Any = None, device: Any = None) -> Tensor:
    """A tensor of `shape` (a tuple, or the sizes as arguments: `ones(2, 3)`) filled with 1s."""
    return _constant((shape, *more), 1, dtype, device, "ones")


@factory
def empty(shape: Any = (), *more: int, dtype: Any = None, device: Any = None) -> Tensor:
    """Like zeros: lazytensor never hands out uninitialized memory."""
    return _constant((shape, *more), 0, dtype, device, "empty")


def _like(x: Tensor, dtype: Any, device: Any) -> tuple[DType, str]:
    return (dtypes.to_dtype(dtype) if dtype is not None else x.dtype), (device or x.device)


@factory
def zeros_like(x: Tensor, dtype: Any = None, device: Any = None) -> Tensor:
    dt, dev = _like(x, dtype, device)
    return zeros(x.shape, dtype=dt, device=dev)


@factory
def ones_like(x: Tensor, dtype: Any = None, device: Any = None) -> Tensor:
    dt, dev = _like(x, dtype, device)
    return ones(x.shape, dtype=dt, device=dev)


@factory
def empty_like(x: Tensor, dtype: Any = None, device: Any = None) -> Tensor:
    return zeros_like(x, dtype, device)


@factory
def full_like(x: Tensor, fill_value: Any, dtype: Any = None, device: Any = None) -> Tensor:
    dt, dev = _like(x, dtype, device)
    return full(x.shape, fill_value, dtype=dt, device=dev)


def _iota(n: int, device: str) -> Tensor:
    return Tensor._make(Op.IOTA, default_int, (n,), (), device=device)


@factory
def arange(start: float, stop: float | None = None, step: float = 1, dtype: Any = None,
           device: Any = None) -> Tensor:
    """`start, start+step, ...` below `stop`; int64 when every argument is an int, else float32."""
    if stop is None:
        start, stop = 0, start
    if step == 0:
        raise ValueError("arange: step must not be zero")
    all_int = all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in (start, stop, step))
    dt = dtypes.to_dtype(dtype) if dtype is not None else default_int if all_int else get_default_dtype()
    n = max(0, math.ceil((stop - start) / step))
    dev = get_device(device).name
    if all_int and not dt.is_float:
        # in int64, or in uint64 itself, which holds what int64 does not; a step down is subtracted, as
        # uint64 has no negative step
        # no multiply by a step of 1 nor add of a start of 0: `arange(n)` is the iota itself, which an index by
        # it (`x[arange(n), y]`) knows to be inside the axis, with no node to build nor a parameter to pass
        offsets = _iota(n, dev).cast(dtypes.wide_int(dt))
        offsets = offsets if abs(int(step)) == 1 else offsets * abs(int(step))
        if int(start) == 0 and step > 0:
            return offsets.cast(dt)
        return (int(start) + offsets if step > 0 else int(start) - offsets).cast(dt)
    return (_iota(n, dev).cast(float64) * float(step) + float(start)).cast(dt)


@factory
def linspace(start: float, stop: float, num: int = 50, endpoint: bool = True, dtype: Any = None,
             device: Any = None, *, steps: int | None = None) -> Tensor:
    """`num` evenly spaced values from start to stop (PyTorch's `steps=` too); computed from both ends so the
    last is exact."""
    if steps is not None:
        num = steps
    if num < 0:
        raise ValueError(f"linspace: num must be non-negative, got {num}")
    dt = dtypes.dtype_or_default(dtype)
    dev = get_device(device).name
    # without the endpoint, the first num of the num + 1 points with it, bit for bit (as the array API asks)
    points = num if endpoint else num + 1
    last = points - 1
    step = (stop - start) / last if last > 0 else 0.0
    i = _iota(num, dev).cast(float64)
    from_start = i * step + float(start)
    from_end = float(stop) - (last - i) * step
    # the first half counts up from start, the rest down from the end (as torch); one point is start itself
    return where(i < max(points // 2, 1), from_start, from_end).cast(dt)


@factory
def eye(n: int, m: int | None = None, k: int = 0, dtype: Any = None, device: Any = None) -> Tensor:
    """Ones on the k-th diagonal of an n x m matrix, zeros elsewhere."""
    m = n if m is None else m
    dev = get_device(device).name
    dt = dtypes.dtype_or_default(dtype)
    k = max(-n, min(m, k))  # a diagonal outside the matrix is no diagonal: k fits int64 whatever its size
    return (_iota(n, dev).reshape(n, 1) + k == _iota(m, dev).reshape(1, m)).cast(dt)


def array(obj: Any, dtype: Any = None, device: Any = None) -> Tensor:
    """NumPy's `array`: a new tensor from data or from a tensor (`asarray` with `copy=True`, so never the
    tensor given, which an in-place operator on the result would otherwise rebind)."""
    return asarray(obj, dtype=dtype, device=device, copy=True)


def from_dlpack(x: Any, /, *, device: Any = None, copy: bool | None = None) -> Tensor:
    """A tensor over the memory of an object that exports DLPack (a NumPy array, a PyTorch tensor, a CuPy or JAX
    array, ...), as the array API's `from_dlpack`: without a copy where the memory is laid out as lazytensor's
    buffers are (C-contiguous, aligned), else copied (BufferError with copy=False); `copy=True` always copies.
    The tensor is on the device whose memory it is (DLPack's host memory is the CPU), or copied to `device`
    (BufferError with copy=False). Shared memory is shared as with `from_numpy`: lazytensor never writes it, and
    a producer that writes it later changes what the tensor reads. The producer's memory is released when no
    tensor (or array of its data) reads it any more.

    A lazytensor tensor gives its own data, on its own device, through no capsule (DLPack would call a cuda:0
    tensor of Triton's interpreter host memory): a new tensor of the same buffer, which stands for a copy too,
    as no buffer is ever written."""
    if isinstance(x, Tensor):
        out = x.detach()
    else:
        buffer, dtype, shape = dlpack.import_buffer(x, copy)
        out = Tensor(Node.from_buffer(buffer, dtype, shape, buffer.device))
    if device is None or canonical(device) == out.device:
        return out
    if copy is False:
        raise BufferError(f"from_dlpack: data on {out.device} cannot be a tensor on {canonical(device)} without a "
                          "copy, and copy=False")
    return out.to(device)


def _triangle(x: Tensor, k: int, lower: bool, op: str) -> Tensor:
    """`x` with the elements above (lower) or below the k-th diagonal of its last two axes zeroed."""
    if x.ndim < 2:
        raise ShapeError(f"{op}: needs at least 2 dimensions, got a tensor of shape {x.shape}")
    n, m = x.shape[-2:]
    offset = _iota(m, x.device).reshape(1, m) - _iota(n, x.device).reshape(n, 1)  # column - row
    keep = offset <= k if lower else offset >= k
    return where(keep, x, zeros_like(x))


def tril(x: Tensor, /, k: int = 0, *, diagonal: int | None = None) -> Tensor:
    """The lower triangle of the matrices in the last two axes: elements on or below the k-th diagonal
    (k > 0 above the main one), zeros above it. `k` as NumPy's, `diagonal=` as PyTorch's."""
    return _triangle(x, k if diagonal is None else diagonal, True, "tril")


def triu(x: Tensor, /, k: int = 0, *, diagonal: int | None = None) -> Tensor:
    """The upper triangle of the matrices in the last two axes: elements on or above the k-th diagonal
    (k > 0 above the main one), zeros below it. `k` as NumPy's, `diagonal=` as PyTorch's."""
    return _triangle(x, k if diagonal is None else diagonal, False, "triu")


def meshgrid(*arrays: Tensor, indexing: str = "xy") -> list[Tensor]:
    """Coordinate grids from 1-d tensors: output i holds `arrays[i]` along its own axis, broadcast (without a
    copy) over the others. `indexing='ij'` orders the axes as the inputs; 'xy' (the default, as NumPy)
    swaps the first two, for Cartesian x-y plots."""
    if indexing not in ("xy", "ij"):
        raise ValueError(f"meshgrid: indexing must be 'xy' or 'ij', got {indexing!r}")
    if any(t.ndim != 1 for t in arrays):
        raise ShapeError(f"meshgrid: needs 1-d tensors, got shapes {', '.join(str(t.shape) for t in arrays)}")
    sizes = [t.shape[0] for t in arrays]
    axes = list(range(len(arrays)))
    if indexing == "xy" and len(arrays) > 1:
        axes[0], axes[1] = 1, 0
        sizes[0], sizes[1] = sizes[1], sizes[0]
    out = []
    for t, axis in zip(arrays, axes):
        shape = [1] * len(arrays)
        shape[axis] = t.shape[0]
        out.append(t.reshape(shape).broadcast_to(sizes))
    return out


def cartesian_prod(*tensors: Any) -> Tensor:
    """Every tuple of one element from each 1-d tensor, the last varying fastest, as the rows of a
    (product of the lengths, len(tensors)) tensor (PyTorch's `cartesian_prod`; the dtypes promote, where
    PyTorch asks for one); a single tensor is returned as it is."""
    ts = [t if isinstance(t, Tensor) else asarray(t) for t in tensors]
    if len(ts) == 1:
        return ts[0]
    dtype = dtypes.result_type(*ts)
    return stack([grid.reshape(-1) for grid in meshgrid(*(t.cast(dtype) for t in ts), indexing="ij")], axis=1)


def combinations(input: Any, r: int = 2, with_replacement: bool = False) -> Tensor:
    """The r-element combinations of a 1-d tensor's elements, in the order of their positions, as the rows of an
    (m, r) tensor (PyTorch's `combinations`, itertools' order); r = 0 gives an empty 1-d tensor, as PyTorch."""
    x = input if isinstance(input, Tensor) else asarray(input)
    if x.ndim != 1:
        raise ShapeError(f"combinations: expects a 1-d tensor, got shape {x.shape}")
    if r < 0:
        raise ValueError(f"combinations: r must be >= 0, got {r}")
    if r == 0:
        return x[:0]
    pick = itertools.combinations_with_replacement if with_replacement else itertools.combinations
    positions = np.fromiter(itertools.chain.from_iterable(pick(range(x.shape[0]), r)), np.int64)
    return x.take(asarray(positions.reshape(-1, r), device=x.device))


def identity(n: int, dtype: Any = None, device: Any = None) -> Tensor:
    """NumPy's identity: the n x n identity matrix (`eye(n)`)."""
    return eye(n, dtype=dtype, device=device)


def tri(N: int, M: int | None = None, k: int = 0, dtype: Any = None, device: Any = None) -> Tensor:
    """NumPy's tri: an N x M matrix of ones on and below the k-th diagonal, zeros above (the default float)."""
    M = N if M is None else M
    dev = get_device(device).name
    dt = dtypes.dtype_or_default(dtype)
    return (_iota(M, dev).reshape(1, M) - _iota(N, dev).reshape(N, 1) <= k).cast(dt)


def _triangle_indices(n: int, k: int, m: int | None, lower: bool, device: Any) -> tuple[Tensor, Tensor]:
    """The row and column indices of a triangle, in row-major order. They depend on the sizes alone: NumPy's,
    computed on the host."""
    rows, cols = (np.tril_indices if lower else np.triu_indices)(n, k, m)
    dev = get_device(device)
    return asarray(rows.astype(np.int64), device=dev.name), asarray(cols.astype(np.int64), device=dev.name)


def tril_indices(n: int, k: int = 0, m: int | None = None, device: Any = None) -> tuple[Tensor, Tensor]:
    """NumPy's tril_indices: the int64 row and column indices of the elements on and below the k-th diagonal of
    an n x m matrix, in row-major order."""
    return _triangle_indices(n, k, m, True, device)


def triu_indices(n: int, k: int = 0, m: int | None = None, device: Any = None) -> tuple[Tensor, Tensor]:
    """NumPy's triu_indices: the int64 row and column indices of the elements on and above the k-th diagonal of
    an n x m matrix, in row-major order."""
    return _triangle_indices(n, k, m, False, device)


def diag_indices(n: int, ndim: int = 2, device: Any = None) -> tuple[Tensor, ...]:
    """NumPy's diag_indices: `ndim` copies of arange(n), which index the main diagonal of an n x ... x n tensor."""
    index = arange(n, device=device)
    return (index,) * ndim


def indices(dimensions: Sequence[int], dtype: Any = None, sparse: bool = False,
            device: Any = None) -> Any:
    """NumPy's indices: a grid of the index along each axis of a tensor of shape `dimensions`, stacked (shape
    (len(dimensions), *dimensions)); with `sparse`, a tuple of one index per axis shaped to broadcast. int64 by
    default."""
    dims = tuple(int(n) for n in dimensions)
    dt = dtypes.to_dtype(dtype) if dtype is not None else default_int
    dev = get_device(device).name
    grids = [_iota(n, dev).cast(dt).reshape(tuple(n if a == i else 1 for a in range(len(dims))))
             for i, n in enumerate(dims)]
    if sparse:
        return tuple(grids)
    return stack([g.broadcast_to(dims) for g in grids]) if dims else zeros(0, dtype=dt, device=dev)


def logspace(start: float, stop: float, num: int = 50, endpoint: bool = True, base: float = 10.0,
             dtype: Any = None, axis: int = 0, device: Any = None) -> Tensor:
    """`base ** linspace(start, stop, num, endpoint)`, computed in float64 (the default float, as `linspace`,
    unless `dtype`). NumPy's takes arrays for start and stop; lazytensor's numbers."""
    if axis != 0:
        raise ValueError(f"logspace: numbers give one axis: axis must be 0, got {axis}")
    dt = dtypes.dtype_or_default(dtype)
    exponents = linspace(start, stop, num, endpoint, dtype=float64, device=device)
    return Tensor._scalar(float(base), float64, exponents.device, "logspace").pow(exponents).cast(dt)


def geomspace(start: float, stop: float, num: int = 50, endpoint: bool = True, dtype: Any = None,
              axis: int = 0, device: Any = None) -> Tensor:
    """`num` numbers from `start` to `stop` spaced evenly on a log scale (a geometric progression), the ends
    exact; both ends negative give the negated progression of their magnitudes, as NumPy's. The default float
    unless `dtype`."""
    if axis != 0:
        raise ValueError(f"geomspace: numbers give one axis: axis must be 0, got {axis}")
    if start == 0 or stop == 0:
        raise ValueError("geomspace: Geometric sequence cannot include zero")
    if (start < 0) != (stop < 0):
        raise ValueError("geomspace: start and stop must have the same sign (no real logarithm between them)")
    sign = -1.0 if start < 0 else 1.0
    dt = dtypes.dtype_or_default(dtype)
    lo, hi = math.log10(abs(start)), math.log10(abs(stop))
    values = logspace(lo, hi, num, endpoint, dtype=float64, device=device)
    i = _iota(num, values.device)
    values = where(i == 0, abs(start), values)
    if endpoint and num > 1:
        values = where(i == num - 1, abs(stop), values)
    return (values * sign).cast(dt)


def vander(x: Any, N: int | None = None, increasing: bool = False) -> Tensor:
    """NumPy's Vandermonde matrix of a 1-d x: column j holds x ** (N - 1 - j) (x ** j with `increasing`), N
    columns (len(x) by default), the powers as NumPy's, a running product of x; x's dtype promoted with int64,
    as NumPy's (by lazytensor's promotion: a float keeps its dtype, where NumPy's float32 gives float64)."""
    t = asarray(x)
    if t.ndim != 1:
        raise ShapeError(f"vander: x must be 1-d, got shape {t.shape}")
    n = t.shape[0] if N is None else N
    if n < 0:
        raise ValueError(f"vander: N must be non-negative, got {n}")
    t = t.cast(dtypes.promote(t.dtype, dtypes.int64))  # NumPy's promotes x's dtype with int's
    ones_column = ones((t.shape[0], 1), dtype=t.dtype, device=t.device)
    if n <= 1:
        return ones_column[:, :n]
    from .movement import concat
    powers = concat([ones_column, t.reshape(-1, 1).broadcast_to((t.shape[0], n - 1)).cumprod(1)], 1)
    return powers if increasing else powers.flip(1)


def block_diag(*tensors: Any) -> Tensor:
    """PyTorch's block_diag: the tensors (0-d as 1x1, 1-d as one row, 2-d) along the diagonal of one matrix, zeros
    elsewhere, in their promoted dtype (a 0-d tensor's dtype counts as any other's, where PyTorch's promotion
    gives way to the others); no tensors give a (1, 0) matrix."""
    blocks = [t if isinstance(t, Tensor) else asarray(t) for t in tensors]
    if not blocks:
        return zeros((1, 0))
    if any(b.ndim > 2 for b in blocks):
        raise ShapeError(f"block_diag: expects tensors of at most 2 dimensions, got shapes {[b.shape for b in blocks]}")
    dtype = dtypes.result_type(*blocks)
    blocks = [b.cast(dtype).reshape(1, -1) if b.ndim < 2 else b.cast(dtype) for b in blocks]
    width = sum(b.shape[1] for b in blocks)
    rows, before = [], 0
    for b in blocks:
        rows.append(b.pad([(0, 0), (before, width - before - b.shape[1])]))
        before += b.shape[1]
    return concat(rows, 0)


def diagflat(v: Any, k: int = 0) -> Tensor:
    """NumPy's diagflat: the flattened input as the k-th diagonal of a square matrix, zeros elsewhere."""
    t = asarray(v)
    return t.reshape(-1).diag(k)


def ascontiguousarray(a: Any, dtype: Any = None, device: Any = None) -> Tensor:
    """NumPy's ascontiguousarray: `asarray`, at least 1-d (a tensor's layout is lazytensor's to choose)."""
    out = asarray(a, dtype=dtype, device=device)
    return out.reshape(1) if out.ndim == 0 else out


def asanyarray(a: Any, dtype: Any = None, device: Any = None) -> Tensor:
    """NumPy's asanyarray: `asarray` (a tensor has no subclasses to keep)."""
    return asarray(a, dtype=dtype, device=device)
