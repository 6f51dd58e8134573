"""NumPy's functions on tensors: `np.exp(t)`, `np.add(a, t)`, `a * t`, `np.sum(t, axis=0)`, `np.concatenate([t, u])`,
`np.where(t > 0, t, 0)` give lazy tensors on the tensor's device, as they give CuPy or Dask arrays.

NumPy hands a call with a tensor among its arguments to the tensor: a ufunc (`np.exp`, `np.add`, the operators
of a NumPy array with a tensor) to `Tensor.__array_ufunc__` (NEP 13), any other function to
`Tensor.__array_function__` (NEP 18). `ROWS` maps each NumPy callable lazytensor implements, by its name in
NumPy, to the lazytensor function and the NumPy parameters passed on to it, written as

    "a axis= keepdims="    a by position, axis and keepdims by keyword of the same name
    "a a_min=min"          NumPy's a_min is lazytensor's keyword min
    "*xi indexing="        NumPy's *xi spread as positional arguments

and only the parameters given in the call are passed (lazytensor's defaults are NumPy's, but for a ufunc's
reduce and accumulate, whose rows give axis 0). Every other parameter must keep NumPy's default (`out=None`,
`where=True`, `casting='same_kind'`, `order`, `dtype=None`, `initial`, ...): another value raises TypeError naming
it, rather than being ignored, except those in `HINTS`, which cannot change a lazytensor result.

The NumPy arrays among the arguments become tensors on the device of the first tensor (NumPy scalars too, among
a ufunc's operands); Python scalars stay weak, so `np.subtract(1, t)` of an int8 tensor is int8, as `1 - t`.
Results follow lazytensor's dtypes (the mean of integers is float32), as its own functions do.

A ufunc's methods map where lazytensor has the op: `np.add.reduce` is sum, `np.multiply.reduce` prod,
`np.maximum.reduce` max, `np.minimum.reduce` min, `np.logical_and.reduce` all, `np.logical_or.reduce` any,
`np.add.accumulate` cumsum, `np.multiply.accumulate` cumprod, and `outer` of every binary ufunc mapped.

Anything else raises TypeError naming the NumPy function and how to convert explicitly (`np.asarray(t)`, a copy
on the host), instead of converting silently; `DIFFERENT` says why some that have a lazytensor namesake are not
mapped (its semantics differ).
"""
from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np

# This module is imported by the first NumPy call on a tensor (see Tensor.__array_function__), when the package is
# complete: its public functions are what the table maps to.
import lazytensor as lt

from .dtypes import weak_result_type
from .tensor import Tensor, _is_scalar


class Row(NamedTuple):
    """How lazytensor implements a NumPy callable: `target`, given the NumPy parameters `positional` by position
    (a '*name' spread) and `keywords` (NumPy's name to lazytensor's) by keyword."""

    target: Callable[..., Any]
    positional: tuple[str, ...]
    keywords: dict[str, str]


def row(target: Callable[..., Any], params: str) -> Row:
    """A Row from the module docstring's notation."""
    positional, keywords = [], {}
    for token in params.split():
        name, is_keyword, keyword = token.partition("=")
        if is_keyword:
            keywords[name] = keyword or name
        else:
            positional.append(name)
    return Row(target, tuple(positional), keywords)


_REDUCTION = "a axis= dtype= keepdims="
_EXTREMUM = "a axis= keepdims="
_DEVIATION = "a axis= dtype= ddof= keepdims= correction="
_LIKE = "a dtype= device="

ROWS: dict[str, Row] = {
    # ufuncs: their operands, and the keyword a generalized ufunc takes
    **{name: row(getattr(lt, name), "x1 x2") for name in (
        "add", "subtract", "multiply", "divide", "floor_divide", "remainder", "maximum", "minimum", "logaddexp",
        "less", "less_equal", "greater", "greater_equal", "equal", "not_equal", "logical_and", "logical_or",
        "logical_xor", "bitwise_and", "bitwise_or", "bitwise_xor", "matmul", "hypot", "copysign", "nextafter", "fmax",
        "fmin", "fmod", "heaviside", "ldexp", "logaddexp2", "float_power", "gcd", "lcm")},
    "mod": row(lt.remainder, "x1 x2"),
    "true_divide": row(lt.divide, "x1 x2"),
    "power": row(lt.pow, "x1 x2"),
    "arctan2": row(lt.atan2, "x1 x2"),
    "left_shift": row(lt.bitwise_left_shift, "x1 x2"),
    "right_shift": row(lt.bitwise_right_shift, "x1 x2"),
    "divmod": row(lt.divmod, "x1 x2"),
    "vecdot": row(lt.vecdot, "x1 x2 axis="),
    **{name: row(getattr(lt, name), "x") for name in (
        "negative", "positive", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sqrt", "square", "sin",
        "cos", "tan", "tanh", "sinh", "cosh", "floor", "ceil", "trunc", "isnan", "isinf", "isfinite", "logical_not",
        "sign", "signbit", "fabs", "deg2rad", "rad2deg", "degrees", "radians", "cbrt", "modf", "frexp")},
    **{f"arc{name[1:]}": row(getattr(lt, name), "x") for name in ("asin", "acos", "atan", "asinh", "acosh", "atanh")},
    "absolute": row(lt.abs, "x"),
    "rint": row(lt.round, "x"),  # half to even, as NumPy
    "fix": row(lt.fix, "x"),  # toward zero, as trunc
    "invert": row(lt.bitwise_invert, "x"),
    "conjugate": row(lt.conj, "x"),
    # ufunc methods
    "add.reduce": row(functools.partial(lt.sum, axis=0), "array axis= dtype= keepdims="),
    "multiply.reduce": row(functools.partial(lt.prod, axis=0), "array axis= dtype= keepdims="),
    "maximum.reduce": row(functools.partial(lt.max, axis=0), "array axis= keepdims="),
    "minimum.reduce": row(functools.partial(lt.min, axis=0), "array axis= keepdims="),
    "logical_and.reduce": row(functools.partial(lt.all, axis=0), "array axis= keepdims="),
    "logical_or.reduce": row(functools.partial(lt.any, axis=0), "array axis= keepdims="),
    "add.accumulate": row(functools.partial(lt.cumsum, axis=0), "array axis= dtype="),
    "multiply.accumulate": row(functools.partial(lt.cumprod, axis=0), "array axis= dtype="),
    # reductions and scans
    "sum": row(lt.sum, _REDUCTION),
    "prod": row(lt.prod, _REDUCTION),
    "mean": row(lt.mean, _REDUCTION),
    "var": row(lt.var, _DEVIATION),
    "std": row(lt.std, _DEVIATION),
    "max": row(lt.max, _EXTREMUM),
    "amax": row(lt.max, _EXTREMUM),
    "min": row(lt.min, _EXTREMUM),
    "amin": row(lt.min, _EXTREMUM),
    "any": row(lt.any, _EXTREMUM),
    "all": row(lt.all, _EXTREMUM),
    "argmax": row(lt.argmax, _EXTREMUM),
    "argmin": row(lt.argmin, _EXTREMUM),
    "count_nonzero": row(lt.count_nonzero, _EXTREMUM),
    "cumsum": row(lt.cumsum, "a axis= dtype="),
    "cumprod": row(lt.cumprod, "a axis= dtype="),
    "cumulative_sum": row(lt.cumulative_sum, "x axis= dtype= include_initial="),
    "cumulative_prod": row(lt.cumulative_prod, "x axis= dtype= include_initial="),
    "diff": row(lt.diff, "a n= axis= prepend= append="),
    **{name: row(getattr(lt, name), "a axis= dtype= keepdims=") for name in ("nansum", "nanprod", "nanmean")},
    **{name: row(getattr(lt, name), "a axis= dtype= ddof= keepdims=") for name in ("nanvar", "nanstd")},
    **{name: row(getattr(lt, name), _EXTREMUM) for name in ("nanmax", "nanmin", "nanargmax", "nanargmin", "ptp")},
    "nancumsum": row(lt.nancumsum, "a axis= dtype="),
    "nancumprod": row(lt.nancumprod, "a axis= dtype="),
    # statistics
    "median": row(lt.median, "a axis= keepdims="),
    "nanmedian": row(lt.nanmedian, "a axis= keepdims="),
    "nanpercentile": row(lt.nanpercentile, "a q axis= method= keepdims="),
    "nanquantile": row(lt.nanquantile, "a q axis= method= keepdims="),
    "cov": row(lt.cov, "m y= rowvar= bias= ddof= fweights= aweights= dtype="),
    "corrcoef": row(lt.corrcoef, "x y= rowvar= dtype="),
    "digitize": row(lt.digitize, "x bins right="),
    "interp": row(lt.interp, "x xp fp left= right="),
    "average": row(lt.average, "a axis= weights= returned= keepdims="),
    "percentile": row(lt.percentile, "a q axis= method= keepdims="),
    "quantile": row(lt.quantile, "a q axis= method= keepdims="),
    "bincount": row(lt.bincount, "x weights= minlength="),
    "histogram": row(lt.histogram, "a bins= range= weights= density="),
    "histogram_bin_edges": row(lt.histogram_bin_edges, "a bins= range= weights="),
    "histogram2d": row(lt.histogram2d, "x y bins= range= density= weights="),
    "histogramdd": row(lt.histogramdd, "sample bins= range= density= weights="),
    # elementwise functions that are not ufuncs
    "round": row(lt.round, "a decimals="),
    "around": row(lt.round, "a decimals="),
    "clip": row(lt.clip, "a a_min=min a_max=max min= max="),
    "real": row(lt.real, "val"),
    "imag": row(lt.imag, "val"),
    "isclose": row(lt.isclose, "a b rtol= atol= equal_nan="),
    "nan_to_num": row(lt.nan_to_num, "x copy= nan= posinf= neginf="),
    "cross": row(lt.cross, "a b axis="),
    "allclose": row(lt.allclose, "a b rtol= atol= equal_nan="),
    "array_equal": row(lt.array_equal, "a1 a2 equal_nan="),
    "array_equiv": row(lt.array_equiv, "a1 a2"),
    "isreal": row(lt.isreal, "x"),
    "iscomplex": row(lt.iscomplex, "x"),
    "where": row(lt.where, "condition x y"),
    "sinc": row(lt.sinc, "x"),
    "i0": row(lt.i0, "x"),
    "block": row(lt.block, "arrays"),
    "select": row(lt.select, "condlist choicelist default="),
    "ediff1d": row(lt.ediff1d, "ary to_end= to_begin="),
    "gradient": row(lt.gradient, "f *varargs axis= edge_order="),
    "trapezoid": row(lt.trapezoid, "y x= dx= axis="),
    "convolve": row(lt.convolve, "a v mode="),
    "correlate": row(lt.correlate, "a v mode="),
    "polyval": row(lt.polyval, "p x"),
    "unwrap": row(lt.unwrap, "p discont= axis= period="),
    "isposinf": row(lt.isposinf, "x"),
    "isneginf": row(lt.isneginf, "x"),
    # indexing, sorting, sets
    "nonzero": row(lt.nonzero, "a"),
    "argwhere": row(lt.argwhere, "a"),
    "flatnonzero": row(lt.flatnonzero, "a"),
    "extract": row(lt.extract, "condition arr"),
    "compress": row(lt.compress, "condition a axis="),
    "delete": row(lt.delete, "arr obj axis="),
    "trim_zeros": row(lt.trim_zeros, "filt trim= axis="),
    "ix_": row(lt.ix_, "*args"),
    "put_along_axis": row(lt.put_along_axis, "arr indices values axis"),
    "take": row(lt.take, "a indices axis="),
    "take_along_axis": row(lt.take_along_axis, "arr indices axis="),
    "searchsorted": row(lt.searchsorted, "a v side= sorter="),
    "sort": row(lt.sort, "a axis= stable="),
    "argsort": row(lt.argsort, "a axis= stable="),
    "unique": row(lt.unique, "ar return_index= return_inverse= return_counts= equal_nan="),
    "unique_values": row(lt.unique_values, "x"),
    "unique_counts": row(lt.unique_counts, "x"),
    "unique_inverse": row(lt.unique_inverse, "x"),
    "unique_all": row(lt.unique_all, "x"),
    "isin": row(lt.isin, "element test_elements invert="),
    "union1d": row(lt.union1d, "ar1 ar2"),
    "intersect1d": row(lt.intersect1d, "ar1 ar2 assume_unique="),
    "setdiff1d": row(lt.setdiff1d, "ar1 ar2 assume_unique="),
    "setxor1d": row(lt.setxor1d, "ar1 ar2 assume_unique="),
    "lexsort": row(lt.lexsort, "keys axis="),
    "partition": row(lt.partition, "a kth axis="),  # a sort: one of the arrangements NumPy's allows
    "argpartition": row(lt.argpartition, "a kth axis="),
    "unravel_index": row(lt.unravel_index, "indices shape"),
    "ravel_multi_index": row(lt.ravel_multi_index, "multi_index dims mode="),
    # shapes and views
    "shape": row(lt.shape, "a"),
    "ndim": row(lt.ndim, "a"),
    "rollaxis": row(lt.rollaxis, "a axis start="),
    "resize": row(lt.resize, "a new_shape"),
    "size": row(lt.size, "a axis"),
    "copy": row(Tensor.copy, "a"),
    "astype": row(lt.astype, "x dtype copy= device="),
    "reshape": row(lt.reshape, "a shape"),
    "ravel": row(lt.ravel, "a"),
    "squeeze": row(lt.squeeze, "a axis="),
    "expand_dims": row(lt.expand_dims, "a axis"),
    "transpose": row(lt.transpose, "a axes"),
    "matrix_transpose": row(lt.matrix_transpose, "x"),
    "swapaxes": row(lt.swapaxes, "a axis1 axis2"),
    "moveaxis": row(lt.moveaxis, "a source destination"),
    "flip": row(lt.flip, "m axis="),
    "diag": row(lt.diag, "v k=diagonal"),
    "roll": row(lt.roll, "a shift axis="),
    "broadcast_to": row(lt.broadcast_to, "array shape"),
    "broadcast_arrays": row(lt.broadcast_arrays, "*args"),
    "tile": row(lt.tile, "A reps"),
    "repeat": row(lt.repeat, "a repeats axis="),
    "fill_diagonal": row(lt.fill_diagonal, "a val wrap="),
    "pad": row(lt.pad, "array pad_width mode constant_values=value"),
    "tril": row(lt.tril, "m k="),
    "triu": row(lt.triu, "m k="),
    "atleast_1d": row(lt.atleast_1d, "*arys"),
    "atleast_2d": row(lt.atleast_2d, "*arys"),
    "atleast_3d": row(lt.atleast_3d, "*arys"),
    "rot90": row(lt.rot90, "m k= axes="),
    "fliplr": row(lt.fliplr, "m"),
    "flipud": row(lt.flipud, "m"),
    "append": row(lt.append, "arr values axis="),
    "vander": row(lt.vander, "x N= increasing="),
    "diagflat": row(lt.diagflat, "v k="),
    # joining and splitting
    "concatenate": row(lt.concat, "arrays axis="),
    "stack": row(lt.stack, "arrays axis="),
    "vstack": row(lt.vstack, "tup"),
    "hstack": row(lt.hstack, "tup"),
    "column_stack": row(lt.column_stack, "tup"),
    "dstack": row(lt.dstack, "tup"),
    "split": row(lt.split, "ary indices_or_sections axis="),
    "array_split": row(lt.array_split, "ary indices_or_sections axis="),
    "hsplit": row(lt.hsplit, "ary indices_or_sections"),
    "vsplit": row(lt.vsplit, "ary indices_or_sections"),
    "dsplit": row(lt.dsplit, "ary indices_or_sections"),
    "unstack": row(lt.unstack, "x axis="),
    "meshgrid": row(lt.meshgrid, "*xi indexing="),
    # new tensors like one given
    "zeros_like": row(lt.zeros_like, _LIKE),
    "ones_like": row(lt.ones_like, _LIKE),
    "empty_like": row(lt.empty_like, "prototype dtype= device="),
    "full_like": row(lt.full_like, "a fill_value dtype= device="),
    # products and linear algebra
    "dot": row(lt.dot, "a b"),
    "outer": row(lt.outer, "a b"),
    "tensordot": row(lt.tensordot, "a b axes="),
    "einsum": row(lt.einsum, "*operands"),
    "trace": row(lt.trace, "a offset= axis1= axis2= dtype="),
    "inner": row(lt.inner, "a b"),
    "vdot": row(lt.vdot, "a b"),
    "kron": row(lt.kron, "a b"),
    "linalg.norm": row(lt.linalg.norm, "x ord= axis= keepdims="),
    "linalg.matmul": row(lt.linalg.matmul, "x1 x2"),
    "linalg.tensordot": row(lt.linalg.tensordot, "x1 x2 axes="),
    "linalg.vecdot": row(lt.linalg.vecdot, "x1 x2 axis="),
    "linalg.outer": row(lt.linalg.outer, "x1 x2"),
    "linalg.matrix_transpose": row(lt.linalg.matrix_transpose, "x"),
    "linalg.diagonal": row(lt.linalg.diagonal, "x offset="),
    "linalg.trace": row(lt.linalg.trace, "x offset= dtype="),
    "linalg.cross": row(lt.linalg.cross, "x1 x2 axis="),
    "linalg.vector_norm": row(lt.linalg.vector_norm, "x axis= keepdims= ord="),
    "linalg.matrix_norm": row(lt.linalg.matrix_norm, "x keepdims= ord="),
    "linalg.cholesky": row(lt.linalg.cholesky, "a upper="),
    "linalg.det": row(lt.linalg.det, "a"),
    "linalg.slogdet": row(lt.linalg.slogdet, "a"),
    "linalg.inv": row(lt.linalg.inv, "a"),
    "linalg.solve": row(lt.linalg.solve, "a b"),
    "linalg.eigh": row(lt.linalg.eigh, "a"),
    "linalg.eigvalsh": row(lt.linalg.eigvalsh, "a"),
    "linalg.qr": row(lt.linalg.qr, "a mode="),
    "linalg.svd": row(lt.linalg.svd, "a full_matrices="),
    "linalg.svdvals": row(lt.linalg.svdvals, "x"),
    "linalg.matrix_power": row(lt.linalg.matrix_power, "a n"),
    "linalg.matrix_rank": row(lt.linalg.matrix_rank, "A rtol="),
    "linalg.cond": row(lt.linalg.cond, "x p="),
    "linalg.lstsq": row(lt.linalg.lstsq, "a b rcond="),
    "linalg.multi_dot": row(lt.linalg.multi_dot, "arrays"),
    "linalg.tensorinv": row(lt.linalg.tensorinv, "a ind="),
    "linalg.tensorsolve": row(lt.linalg.tensorsolve, "a b axes="),
}

# NumPy's parameters that cannot change a lazytensor result, and are accepted with any value
HINTS = {
    "kind": "the sort's algorithm: lazytensor's sorts are stable, which every kind allows",
    "assume_unique": "a promise that only lets NumPy skip work",
    "sorted": "np.unique may leave its values unsorted: lazytensor's are sorted",
    "copy": "a view or a copy: tensors are never written, so the two cannot be told apart",
    "subok": "whether to keep an ndarray subclass: lazytensor gives tensors",
    "overwrite_input": "leave to reuse the input as scratch space: lazytensor never writes an input",
    "optimize": "the order in which einsum contracts: lazytensor chooses its own",
}

# The NumPy callables that have a lazytensor namesake of other semantics, and why they are not mapped
DIFFERENT = {
    "reciprocal": "lazytensor's reciprocal of integers is a float, NumPy's an integer division",
    "result_type": "lazytensor promotes dtypes its own way (see lt.result_type)",
    "can_cast": "lazytensor promotes dtypes its own way (see lt.can_cast)",
    "linspace": "lazytensor's takes numbers and gives float32 by default, NumPy's takes arrays and their dtype",
    "logspace": "lazytensor's takes numbers and gives float32 by default, NumPy's takes arrays and their dtype",
    "polyfit": "lazytensor's fit of float32 (or of integers, in the default float) stays float32, NumPy's is float64",
    "geomspace": "lazytensor's takes numbers and gives float32 by default, NumPy's takes arrays and their dtype",
    "save": "NumPy's writes .npy files, lazytensor's safetensors checkpoints (lt.save)",
    "diagonal": "NumPy's takes the first two axes, lazytensor's (np.linalg.diagonal's) the last two",
    "put": "NumPy's writes into its first argument (positions and values), lazytensor's is PyTorch's put, which "
           "returns the new tensor",
    "linalg.pinv": "NumPy's default cut-off is 1e-15 times the largest singular value (rcond), lazytensor's the array "
                   "API's, max(M, N) * eps of the dtype (rtol)",
}

# NumPy's questions about memory, which NumPy answers on the tensors' host arrays (`np.asarray(t)`: a realized CPU
# tensor's own memory, read-only; a cuda tensor's is a copy, which shares nothing with a NumPy array)
MEMORY_QUERIES = ("may_share_memory", "shares_memory")

# NumPy's defaults for the keywords of a ufunc's call and of the methods mapped (NumPy passes them by name)
_UFUNC_DEFAULTS: dict[str, dict[str, Any]] = {
    "__call__": {"out": None, "where": True, "casting": "same_kind", "order": "K", "dtype": None, "subok": True,
                 "signature": None, "keepdims": False},
    "reduce": {"axis": 0, "dtype": None, "out": None, "keepdims": False, "initial": np._NoValue, "where": True},
    "accumulate": {"axis": 0, "dtype": None, "out": None},
}
_IN_PLACE = "it writes its first operand in place, and a tensor is never written"


def _numpy(name: str) -> Any:
    """The NumPy callable of a dotted name ('linalg.vecdot', 'add.reduce'), or None where this NumPy has none."""
    obj: Any = np
    for part in name.split("."):
        obj = getattr(obj, part, None)
    return obj


# Keyed by the callables NumPy hands over (a ufunc's bound methods compare equal by ufunc and name)
_IMPLEMENTED = {fn: r for name, r in ROWS.items() if (fn := _numpy(name)) is not None}
_DIFFERENT = {fn: reason for name, reason in DIFFERENT.items() if (fn := _numpy(name)) is not None}
_MEMORY_QUERIES = {fn for name in MEMORY_QUERIES if (fn := _numpy(name)) is not None}
_signature = functools.cache(inspect.signature)


def array_ufunc(ufunc: np.ufunc, method: str, inputs: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """`Tensor.__array_ufunc__`: the lazytensor op of `ufunc.method` on `inputs` (see the module docstring)."""
    if any(_foreign(x) for x in (*inputs, *kwargs.get("out", ()))):
        return NotImplemented
    name = f"numpy.{ufunc.__name__}" + (f".{method}" if method != "__call__" else "")
    device = _device((inputs, kwargs.get("out")))
    operands = [_operand(x, device) for x in inputs]
    fn = ufunc if method == "__call__" else getattr(ufunc, method)
    if method == "outer" and ufunc.nin == 2 and ufunc in _IMPLEMENTED:  # the call, on operands broadcast apart
        a, b = (x if isinstance(x, Tensor) else lt.asarray(x, device=device) for x in operands)
        operands, fn, method = [a.reshape(a.shape + (1,) * b.ndim), b], ufunc, "__call__"
    r = _IMPLEMENTED.get(fn)
    if r is None:
        raise _not_implemented(name, _DIFFERENT.get(fn) or (_IN_PLACE if method == "at" else None))
    if len(operands) == 2 and _is_scalar(operands[0]) and isinstance(operands[1], Tensor):
        # a Python scalar first, weak as in `1 - t`: the lazytensor function would read it as a tensor of its own
        operands[0] = Tensor._scalar(operands[0], weak_result_type(operands[1].dtype, operands[0]), device, name)
    return _call(name, r, dict(zip(r.positional, operands)) | kwargs, _UFUNC_DEFAULTS[method], device)


def array_function(func: Callable[..., Any], types: Sequence[type], args: tuple[Any, ...],
                   kwargs: dict[str, Any]) -> Any:
    """`Tensor.__array_function__`: the lazytensor function for the NumPy function `func` (see the module
    docstring)."""
    if not all(issubclass(t, (Tensor, np.ndarray)) for t in types):  # another library's arrays: theirs to say
        return NotImplemented
    name = f"{func.__module__}.{func.__name__}"
    if func in _MEMORY_QUERIES:
        return func(*(np.asarray(a) if isinstance(a, Tensor) else a for a in args), **kwargs)
    r = _IMPLEMENTED.get(func)
    if r is None:
        raise _not_implemented(name, _DIFFERENT.get(func))
    signature = _signature(func)
    given = dict(signature.bind(*args, **kwargs).arguments)  # NumPy's dispatcher took them: they bind
    for p in signature.parameters.values():
        if p.kind is inspect.Parameter.VAR_KEYWORD:  # np.pad's constant_values, np.clip's ufunc keywords
            given.update(given.pop(p.name, {}))
    given = {k: v for k, v in given.items() if v is not np._NoValue}
    return _call(name, r, given, {p.name: p.default for p in signature.parameters.values()}, _device(given))


def _call(name: str, r: Row, given: dict[str, Any], defaults: dict[str, Any], device: str | None) -> Any:
    """`r.target` called with the NumPy arguments `given` (by NumPy's names) as the row passes them, their NumPy
    arrays as tensors on `device`; TypeError for another argument that is not NumPy's default (`defaults`) nor a
    hint."""
    args: list[Any] = []
    for slot in r.positional:  # one left out is a trailing one, whose lazytensor default is NumPy's
        if (key := slot.lstrip("*")) in given:
            value = _arrays_on(given.pop(key), device)
            args.extend(value) if slot.startswith("*") else args.append(value)
    kwargs = {r.keywords[k]: _arrays_on(given.pop(k), device) for k in list(given) if k in r.keywords}
    for k, value in given.items():
        default = defaults.get(k, inspect.Parameter.empty)
        if k not in HINTS and not (value is default or type(value) is type(default) and value == default):
            why = "lazytensor implements the function without it"
            if k == "out":  # a ufunc's out comes as a tuple of one array per output
                why = "lazytensor computes a new tensor, never into an existing array"
                value = value[0] if isinstance(value, tuple) and len(value) == 1 else value
            raise TypeError(f"{name}: {k}={_shown(value)} is not supported for lazytensor tensors ({why}); convert "
                            f"explicitly to compute it with NumPy: {name}(np.asarray(t), ...)")
    return r.target(*args, **kwargs)


def _not_implemented(name: str, reason: str | None) -> TypeError:
    because = f" ({reason})" if reason else ""
    return TypeError(f"{name} is not implemented for lazytensor tensors{because}; convert explicitly to compute it "
                     f"with NumPy, on a copy on the host: {name}(np.asarray(t), ...), or use lazytensor's functions")


def _shown(value: Any) -> str:
    """A short form of an argument's value for an error message (a tensor's repr would compute it)."""
    return repr(value) if value is None or isinstance(value, (bool, int, float, str)) else type(value).__name__


def _foreign(x: Any) -> bool:
    """Whether `x` is another library's array that takes part in NumPy's ufunc dispatch: its ufuncs are its own."""
    return hasattr(type(x), "__array_ufunc__") and not isinstance(x, (Tensor, np.ndarray, np.generic))


def _device(x: Any) -> str | None:
    """The device of the first tensor in `x` (a value, or lists, tuples and dicts of values), if any."""
    if isinstance(x, Tensor):
        return x.device
    items = x.values() if isinstance(x, dict) else x if isinstance(x, (list, tuple)) else ()
    return next((d for d in map(_device, items) if d is not None), None)


def _operand(x: Any, device: str | None) -> Any:
    """A ufunc's operand: a NumPy array or scalar as a tensor on `device`; a tensor or a Python value as it is."""
    return lt.asarray(x, device=device) if isinstance(x, (np.ndarray, np.generic)) else x


def _arrays_on(x: Any, device: str | None) -> Any:
    """A function's argument with its NumPy arrays (within lists and tuples too) as tensors on `device`; NumPy
    scalars stay, as they may be sizes or axes."""
    if isinstance(x, np.ndarray):
        return lt.asarray(x, device=device)
    if isinstance(x, (list, tuple)):
        items = [_arrays_on(v, device) for v in x]
        return items if isinstance(x, list) else tuple(items)
    return x
