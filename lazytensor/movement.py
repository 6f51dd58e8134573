"""Movement ops: reshape, permute, broadcast, pad, slice, flip, and what is built from them.

None of these copies data or launches a kernel: each records a view node that
becomes index arithmetic in the kernel that reads it (see `views.py`).
Shapes are given as tuples, lists or separate ints, as in NumPy and PyTorch.
"""
from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

import numpy as np

from .autograd import is_grad_enabled
from .device import get_device
from .dtypes import bool_, int64, promote
from .errors import AxisError, DeviceError, ShapeError
from .graph import Node, Op
from .helpers import prod
from .realize import is_recording

# Read by every reshape, permute and broadcast: an enum's member, read on its class, costs a call into Python on 3.11
_RESHAPE, _PERMUTE, _EXPAND = Op.RESHAPE, Op.PERMUTE, Op.EXPAND

if TYPE_CHECKING:
    from .tensor import Tensor

Shape = tuple[int, ...]

# Whether a slice of a realized tensor may be a window on its buffer (`MovementOps._shrink`): not while a recipe
# records (`slice_ops`)
_WINDOWS: ContextVar[bool] = ContextVar("lazytensor_windows", default=True)


@contextmanager
def slice_ops() -> Iterator[None]:
    """Within it, a slice of a realized tensor is the slice op, not a window on its buffer: for a graph that must be a
    function of its tensors' structure alone (`recipe`: a window is data, which a recipe cannot rebuild)."""
    token = _WINDOWS.set(False)
    try:
        yield
    finally:
        _WINDOWS.reset(token)


def shape_arg(args: Sequence[Any], op: str) -> Shape:
    """`f(2, 3)`, `f((2, 3))` and `f([2, 3])` all mean the shape (2, 3)."""
    if len(args) == 1 and isinstance(args[0], (tuple, list)):
        args = args[0]
    try:
        return tuple(map(int, args))
    except TypeError:
        raise TypeError(f"{op}: a shape is a sequence of ints, got {args!r}") from None


def normalize_axis(axis: int, ndim: int, op: str) -> int:
    if not isinstance(axis, int):
        raise TypeError(f"{op}: an axis is an int, got {type(axis).__name__}")
    if not -ndim <= axis < ndim:
        raise AxisError(f"{op}: axis {axis} is out of bounds for a tensor of dimension {ndim}")
    return axis % ndim


def normalize_axes(axis: Any, ndim: int, op: str) -> tuple[int, ...]:
    """Axes as sorted non-negative ints; None means all of them."""
    if axis is None:
        return tuple(range(ndim))
    if type(axis) is int and -ndim <= axis < ndim:  # the common case, one axis, without the general checks
        return (axis % ndim,)
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    out = tuple(normalize_axis(a, ndim, op) for a in axes)
    if len(set(out)) != len(out):
        raise AxisError(f"{op}: repeated axis in {axes}")
    return tuple(sorted(out))


class MovementOps:
    """Mixed into Tensor."""

    __slots__ = ()

    def reshape(self: Tensor, shape: Any = (), *more: int, copy: bool | None = None) -> Tensor:
        """Same elements in a new shape (row-major), given as a tuple or as the sizes (`x.reshape(2, 3)`); one
        axis may be -1. `copy` is the array API's: a view or a copy cannot be told apart, as no tensor is
        written in place (a write rebinds its tensor)."""
        shape = (shape, *more)
        target = shape_arg(shape, "reshape")
        if target == (node := self._node).shape:  # ops reshape to the shape a tensor has often
            return self
        if min(target, default=0) >= 0 and prod(target) == node.numel:
            return self._derive(_RESHAPE, target, target)
        new = list(target)
        if new.count(-1) > 1:
            raise ShapeError(f"reshape: only one axis may be -1, got {tuple(new)}")
        if any(n < -1 for n in new):
            raise ShapeError(f"reshape: negative size in {tuple(new)}")
        if -1 in new:
            known = prod(n for n in new if n != -1)
            if known == 0 or self.numel() % known:
                raise ShapeError(f"reshape: cannot reshape a tensor of shape {self.shape} ({self.numel()} "
                                 f"elements) into {tuple(shape_arg(shape, 'reshape'))}")
            new[new.index(-1)] = self.numel() // known
        target = tuple(new)
        if prod(target) != self.numel():
            raise ShapeError(f"reshape: cannot reshape a tensor of shape {self.shape} ({self.numel()} elements) "
                             f"into {target} ({prod(target)} elements)")
        return self if target == self.shape else self._derive(_RESHAPE, target, target)

    def view(self: Tensor, *shape: Any) -> Tensor:
        """`reshape` (PyTorch's `view(*shape)`), or with a dtype, PyTorch's `view(dtype)`: the same bits read as
        `dtype`, of the same size (`Tensor._bitcast`)."""
        from .dtypes import BY_NAME, DType, to_dtype
        if len(shape) == 1 and (isinstance(shape[0], DType) or isinstance(shape[0], str) and shape[0] in BY_NAME
                                or hasattr(shape[0], "itemsize") and not isinstance(shape[0], int)):
            dtype = to_dtype(shape[0])
            if dtype.itemsize != self.dtype.itemsize:
                raise ShapeError(f"view: {self.dtype.name} and {dtype.name} differ in size; viewing a tensor as a "
                                 "dtype of another size is not supported")
            return self._bitcast(dtype)
        return self.reshape(*shape)

    def permute(self: Tensor, *axes: Any) -> Tensor:
        """Reorder the axes: output axis i is input axis `axes[i]`."""
        order = shape_arg(axes, "permute")
        if len(order) != self.ndim:
            raise AxisError(f"permute: got {len(order)} axes {order} for a tensor of dimension {self.ndim}")
        order = tuple(normalize_axis(a, self.ndim, "permute") for a in order)
        if sorted(order) != list(range(self.ndim)):
            raise AxisError(f"permute: {order} is not a permutation of the axes of a {self.ndim}-d tensor")
        if order == tuple(range(self.ndim)):
            return self
        return self._derive(_PERMUTE, tuple(self.shape[a] for a in order), order)

    def permute_dims(self: Tensor, axes: Sequence[int]) -> Tensor:
        return self.permute(axes)

    def transpose(self: Tensor, *axes: Any) -> Tensor:
        """`t.transpose()` (or `t.transpose(None)`) reverses the axes and `t.transpose(axes)` permutes them
        (NumPy); `t.transpose(a, b)` swaps two axes (PyTorch)."""
        if not axes or axes == (None,):
            return self.permute(tuple(reversed(range(self.ndim))))
        if len(axes) == 2 and all(isinstance(a, int) for a in axes):
            return self.swapaxes(*axes)
        return self.permute(*axes)

    def swapaxes(self: Tensor, axis1: int, axis2: int) -> Tensor:
        a, b = normalize_axis(axis1, self.ndim, "swapaxes"), normalize_axis(axis2, self.ndim, "swapaxes")
        order = list(range(self.ndim))
        order[a], order[b] = order[b], order[a]
        return self.permute(order)

    swapdims = swapaxes

    @property
    def T(self: Tensor) -> Tensor:
        """All axes reversed."""
        return self.permute(tuple(reversed(range(self.ndim))))

    @property
    def mT(self: Tensor) -> Tensor:
        """The last two axes swapped (a batch of transposed matrices)."""
        if self.ndim < 2:
            raise ShapeError(f"mT: needs at least 2 dimensions, got a tensor of shape {self.shape}")
        return self.swapaxes(-1, -2)

    def broadcast_to(self: Tensor, shape: Any = (), *more: int) -> Tensor:
        """Repeat size-1 axes (and prepend new ones) to reach `shape` (a tuple or the sizes), without copying."""
        target = shape_arg((shape, *more), "broadcast_to")
        if target == self.shape:
            return self
        if len(target) < self.ndim:
            raise ShapeError(f"broadcast_to: cannot broadcast shape {self.shape} to {target} with fewer dimensions")
        if min(target) < 0:  # a size-1 axis would otherwise "broadcast" to them
            raise ShapeError(f"broadcast_to: negative size in {target}")
        padded = (1,) * (len(target) - self.ndim) + self.shape
        for have, want in zip(padded, target):
            if have != want and have != 1:
                raise ShapeError(f"broadcast_to: cannot broadcast shape {self.shape} to {target}")
        return self._expand_to(target)

    def _expand_to(self: Tensor, shape: Shape) -> Tensor:
        """`broadcast_to(shape)` of a `shape` known to be one this tensor broadcasts to (a tuple of ints, from
        `broadcast_shapes` of its own): the nodes without the checks, which every op on operands of two shapes
        would otherwise repeat."""
        own = self._node.shape
        if own == shape:
            return self
        padded = (1,) * (len(shape) - len(own)) + own
        x = self if padded == own else self._derive(_RESHAPE, padded, padded)  # (size-1 axes in front)
        return x if padded == shape else x._derive(_EXPAND, shape, shape)

    def expand(self: Tensor, *sizes: Any) -> Tensor:
        """PyTorch's expand: like broadcast_to, where -1 keeps an axis's size."""
        target = shape_arg(sizes, "expand")
        lead = len(target) - self.ndim
        if lead < 0:
            raise ShapeError(f"expand: cannot expand shape {self.shape} to {target} with fewer dimensions")
        return self.broadcast_to(tuple(self.shape[i - lead] if n == -1 and i >= lead else n
                                       for i, n in enumerate(target)))

    def squeeze(self: Tensor, axis: Any = None, dim: Any = None) -> Tensor:
        """Remove size-1 axes: all of them, or the ones named (which must have size 1)."""
        axis = dim if axis is None else axis
        if axis is None:
            return self.reshape(tuple(n for n in self.shape if n != 1))
        axes = normalize_axes(axis, self.ndim, "squeeze")
        for a in axes:
            if self.shape[a] != 1:
                raise ShapeError(f"squeeze: axis {a} has size {self.shape[a]}, not 1 (shape {self.shape})")
        return self.reshape(tuple(n for i, n in enumerate(self.shape) if i not in axes))

    def unsqueeze(self: Tensor, axis: int | None = None, *, dim: int | None = None) -> Tensor:
        """Insert a size-1 axis at position `axis` (PyTorch's `dim=`) of the result."""
        ndim = self.ndim + 1
        a = normalize_axis(_one_of(axis, dim, "unsqueeze"), ndim, "unsqueeze")
        return self.reshape(self.shape[:a] + (1,) + self.shape[a:])

    def expand_dims(self: Tensor, axis: int | Sequence[int]) -> Tensor:
        axes = (axis,) if isinstance(axis, int) else tuple(axis)
        ndim = self.ndim + len(axes)
        new = normalize_axes(axes, ndim, "expand_dims")
        it = iter(self.shape)
        return self.reshape(tuple(1 if i in new else next(it) for i in range(ndim)))

    def flatten(self: Tensor, start_dim: int = 0, end_dim: int = -1) -> Tensor:
        """Merge axes start_dim..end_dim (all by default) into one."""
        if self.ndim == 0:
            return self.reshape(1)
        s = normalize_axis(start_dim, self.ndim, "flatten")
        e = normalize_axis(end_dim, self.ndim, "flatten")
        if s > e:
            raise AxisError(f"flatten: start_dim {start_dim} comes after end_dim {end_dim}")
        return self.reshape(self.shape[:s] + (prod(self.shape[s:e + 1]),) + self.shape[e + 1:])

    ravel = flatten

    def flip(self: Tensor, axis: Any = None, dims: Any = None) -> Tensor:
        """Reverse the order of elements along the given axes (all by default)."""
        axes = normalize_axes(dims if axis is None else axis, self.ndim, "flip")
        axes = tuple(a for a in axes if self.shape[a] > 1)
        return self._derive(Op.FLIP, self.shape, axes) if axes else self

    def pad(self: Tensor, pad_width: Any, mode: str = "constant", value: Any = 0, *,
            constant_values: Any = None) -> Tensor:
        """NumPy's `pad`: `pad_width` is an int, a (before, after) pair, or one pair per axis. Modes 'constant'
        (`value`, or NumPy's `constant_values`, a scalar), 'edge' (the edge element repeated), 'reflect'
        (mirrored about the edge element), 'symmetric' (mirrored, the edge element included) and 'wrap'
        (periodic); the last three take any amount, reflecting again as NumPy does. Every mode but 'constant'
        reads each element through a precomputed position (a view, or one gather per axis)."""
        pads = _pad_pairs(pad_width, self.ndim)
        if mode not in ("constant", "edge", "reflect", "symmetric", "wrap"):
            raise ValueError(f"pad: mode must be 'constant', 'edge', 'reflect', 'symmetric' or 'wrap', got {mode!r}")
        if constant_values is not None:
            if mode != "constant" or not isinstance(constant_values, (int, float, bool)):
                raise ValueError("pad: constant_values takes one scalar, with mode='constant'")
            value = constant_values
        if all(p == (0, 0) for p in pads):
            return self
        if mode != "constant":
            x = self
            for axis, (before, after) in enumerate(pads):
                if before or after:
                    if x.shape[axis] == 0:
                        raise ShapeError(f"pad: {mode} padding of axis {axis} needs a non-empty axis (shape "
                                         f"{self.shape})")
                    x = padded_along(x, axis, before, after, mode)
            return x
        shape = tuple(n + b + a for n, (b, a) in zip(self.shape, pads))
        padded = self._derive(Op.PAD, shape, pads)
        if isinstance(value, (int, float)) and value == 0 and not isinstance(value, bool):
            return padded
        inside = self._const(True, bool_, self.device).broadcast_to(self.shape)._derive(Op.PAD, shape, pads)
        from .tensor import Tensor, where
        # the value takes the tensor's dtype (1.5 pads an int tensor with 1), as in NumPy and PyTorch
        return where(inside, padded, Tensor._scalar(value, self.dtype, self.device, "pad"))

    def narrow(self: Tensor, dim: int, start: int, length: int) -> Tensor:
        """PyTorch's `narrow`: the `length` elements from `start` (negative counts from the end) along `dim`,
        a view as `x[..., start:start + length, ...]` is."""
        axis = normalize_axis(dim, self.ndim, "narrow")
        n = self.shape[axis]
        first = start + n if start < 0 else start
        if not 0 <= first <= n or length < 0 or first + length > n:
            raise IndexError(f"narrow: start {start} and length {length} do not fit in axis {dim} of size {n} "
                             f"(shape {self.shape})")
        return self._shrink([(first, first + length, 1) if a == axis else (0, m, 1) for a, m in enumerate(self.shape)])

    def _shrink(self: Tensor, ranges: Sequence[tuple[int, int, int]]) -> Tensor:
        """Keep `range(start, stop, step)` of each axis (step > 0, bounds already in range)."""
        ranges = tuple(ranges)
        if all(r == (0, n, 1) for r, n in zip(ranges, self.shape)):
            return self
        shape = tuple(len(range(*r)) for r in ranges)
        if self._node.op is Op.BUFFER and not (self.requires_grad and is_grad_enabled()) and not is_recording() \
                and 0 not in shape and _WINDOWS.get():
            # a slice of realized data (a minibatch `x[i:i + n]`, a column `x[:, t]`, a tile): a window on the
            # buffer and views with no offsets in them, so every offset is the same graph (a shrink's offsets are
            # its structure: each would be a kernel of its own). Not where lt.jit or vmap records: their graph
            # must read the argument, not a buffer of this call's; nor where a recipe records (`slice_ops`)
            return _window_view(self, ranges, shape)
        return self._derive(Op.SHRINK, shape, ranges)

    def split(self: Tensor, split_size_or_sections: int | Sequence[int], dim: int = 0) -> tuple[Tensor, ...]:
        """PyTorch's split: pieces of `split_size` along `dim` (the last may be shorter), or of the
        sizes listed."""
        axis = normalize_axis(dim, self.ndim, "split")
        n = self.shape[axis]
        if isinstance(split_size_or_sections, int):
            size = split_size_or_sections
            if size <= 0:
                raise ValueError(f"split: split_size must be positive, got {size}")
            sizes = [min(size, n - s) for s in range(0, n, size)] or [0]
        else:
            sizes = list(split_size_or_sections)
            if sum(sizes) != n:
                raise ShapeError(f"split: sizes {sizes} sum to {sum(sizes)}, but axis {axis} has size {n}")
        starts = [sum(sizes[:i]) for i in range(len(sizes))]
        return _pieces(self, [(s, s + n) for s, n in zip(starts, sizes)], axis)

    def chunk(self: Tensor, chunks: int, dim: int = 0) -> tuple[Tensor, ...]:
        """PyTorch's chunk: at most `chunks` pieces along `dim` of ceil(size / chunks) elements each, the
        last one shorter (fewer pieces where they run out first); an empty axis gives `chunks` empty ones."""
        if chunks <= 0:
            raise ValueError(f"chunk: chunks must be greater than 0, got {chunks}")
        n = self.shape[normalize_axis(dim, self.ndim, "chunk")]
        return self.split(-(-n // chunks) if n else [0] * chunks, dim)

    def tile(self: Tensor, *reps: Any) -> Tensor:
        """Repeat the whole tensor `reps[i]` times along axis i (NumPy's tile, PyTorch's repeat)."""
        reps_t = shape_arg(reps, "tile")
        if any(r < 0 for r in reps_t):
            raise ValueError(f"tile: repetitions must be non-negative, got {reps_t}")
        ndim = max(len(reps_t), self.ndim)
        reps_t = (1,) * (ndim - len(reps_t)) + reps_t
        x = self.reshape((1,) * (ndim - self.ndim) + self.shape)
        expanded = []
        for r, n in zip(reps_t, x.shape):
            expanded += [r, n]
        interleaved = x.reshape(tuple(v for n in x.shape for v in (1, n))).broadcast_to(tuple(expanded))
        return interleaved.reshape(tuple(r * n for r, n in zip(reps_t, x.shape)))

    def moveaxis(self: Tensor, source: int | Sequence[int], destination: int | Sequence[int]) -> Tensor:
        """The axes `source` moved to the positions `destination`, the others keeping their order (NumPy)."""
        src = [source] if isinstance(source, int) else list(source)
        dst = [destination] if isinstance(destination, int) else list(destination)
        if len(src) != len(dst):
            raise ValueError(f"moveaxis: source {source} and destination {destination} differ in length")
        src = [normalize_axis(a, self.ndim, "moveaxis") for a in src]
        dst = [normalize_axis(a, self.ndim, "moveaxis") for a in dst]
        if len(set(src)) != len(src) or len(set(dst)) != len(dst):
            raise AxisError(f"moveaxis: repeated axis in source {source} or destination {destination}")
        rest = iter(a for a in range(self.ndim) if a not in src)
        placed = dict(zip(dst, src))
        return self.permute([placed[i] if i in placed else next(rest) for i in range(self.ndim)])

    movedim = moveaxis

    def roll(self: Tensor, shift: int | Sequence[int], axis: int | Sequence[int] | None = None) -> Tensor:
        """Elements shifted by `shift` along `axis`, those pushed off one end coming back at the other; with
        axis None, along the flattened tensor (the shape kept). Pairs of shifts and axes apply in turn."""
        if axis is None:
            if not isinstance(shift, int):
                raise ValueError(f"roll: with axis None, shift is one int, got {shift!r}")
            return self.reshape(-1).roll(shift, 0).reshape(self.shape)
        shifts = [shift] if isinstance(shift, int) else list(shift)
        axes = [axis] if isinstance(axis, int) else list(axis)
        if len(shifts) == 1 and len(axes) > 1:
            shifts *= len(axes)
        if len(shifts) != len(axes):
            raise ValueError(f"roll: {len(shifts)} shifts for {len(axes)} axes")
        out = self
        for s, a in zip(shifts, axes):
            a = normalize_axis(a, self.ndim, "roll")
            n = self.shape[a]
            if n and s % n:
                cut = n - s % n
                out = concat(_pieces(out, [(cut, n), (0, cut)], a), a)
        return out

    def repeat(self: Tensor, *sizes: Any) -> Tensor:
        """PyTorch's repeat (NumPy's tile): at least as many repeats as dimensions."""
        reps = shape_arg(sizes, "repeat")
        if len(reps) < self.ndim:
            raise ShapeError(f"repeat: {len(reps)} repeats given for a tensor of dimension {self.ndim}")
        return self.tile(reps)


def padded_along(x: Tensor, axis: int, before: int, after: int, mode: str) -> Tensor:
    """`x` with `before` and `after` elements added along `axis` (non-empty) in NumPy's `mode` 'edge', 'reflect',
    'symmetric' or 'wrap': each output reads the input at a position computed here, one load per element (a
    concatenation of edge slices would load each of them under a mask, several times slower)."""
    n = x.shape[axis]
    j = np.arange(-before, n + after)
    if mode == "edge":
        j = np.clip(j, 0, n - 1)
    elif mode == "wrap":
        j = j % n
    elif mode == "reflect":  # period 2(n - 1), the edge element once
        j = j % (2 * n - 2) if n > 1 else np.zeros_like(j)
        j = np.where(j < n, j, 2 * n - 2 - j)
    else:  # symmetric: period 2n, the edge element twice
        j = j % (2 * n)
        j = np.where(j < n, j, 2 * n - 1 - j)
    return take_positions(x, axis, j)


def take_positions(x: Tensor, axis: int, idx: np.ndarray) -> Tensor:
    """The elements at positions `idx` (computed on the host) along `axis`: a view where they are a repetition
    (each position k times in a row) or a stride, a gather otherwise."""
    n_out, n_in = len(idx), x.shape[axis]
    lead = [(0, m, 1) for m in x.shape]
    if n_out % n_in == 0 and np.array_equal(idx, np.arange(n_out) // (n_out // n_in)):
        k = n_out // n_in
        wide = x.unsqueeze(axis + 1).broadcast_to(*x.shape[:axis + 1], k, *x.shape[axis + 1:])
        return wide.reshape(*x.shape[:axis], n_out, *x.shape[axis + 1:])
    step = int(idx[1] - idx[0]) if n_out > 1 else 1
    if step > 0 and np.array_equal(idx, idx[0] + step * np.arange(n_out)):
        lead[axis] = (int(idx[0]), int(idx[0]) + step * (n_out - 1) + 1, step)
        return x._shrink(lead)
    from .creation import asarray
    shape = [1] * x.ndim
    shape[axis] = n_out
    index = asarray(idx, device=x.device).reshape(shape)
    return x._gather(axis, index.broadcast_to(*x.shape[:axis], n_out, *x.shape[axis + 1:]))


def _pad_pairs(pad_width: Any, ndim: int) -> tuple[tuple[int, int], ...]:
    if isinstance(pad_width, int):
        pairs = [(pad_width, pad_width)] * ndim
    else:
        pw = list(pad_width)
        if len(pw) == 2 and all(isinstance(p, int) for p in pw):
            pairs = [tuple(pw)] * ndim
        elif len(pw) == 1 and not isinstance(pw[0], int):
            pairs = [tuple(pw[0])] * ndim
        else:
            pairs = [tuple(p) for p in pw]
    if len(pairs) != ndim or any(len(p) != 2 for p in pairs):
        raise ShapeError(f"pad: pad_width {pad_width!r} does not give a (before, after) pair for each of {ndim} axes")
    if any(int(b) < 0 or int(a) < 0 for b, a in pairs):
        raise ValueError(f"pad: pad widths must be non-negative, got {pad_width!r}")
    return tuple((int(b), int(a)) for b, a in pairs)


def _window_view(x: Tensor, ranges: tuple[tuple[int, int, int], ...], shape: Shape) -> Tensor:
    """`ranges` (a shrink's, none empty) of realized `x` as a window on its buffer from the first element they
    keep to the last, seen through views whose arguments depend on `shape`, the steps and x's shape alone: the
    window padded at its end to whole rows of the first axis that keeps more than one index, reshaped to those
    rows and shrunk from 0 by the steps. The padding is never read (the last element kept is the window's last),
    so the kernel's index bounds drop it: no mask. Rows read whole (a run of them, every other one) need no
    padding: the window is those rows."""
    from .tensor import Tensor
    node = x._node
    strides = [prod(x.shape[a + 1:]) for a in range(len(shape))]
    first = sum(start * stride for (start, _, _), stride in zip(ranges, strides))
    span = 1 + sum((n - 1) * step * stride for n, (_, _, step), stride in zip(shape, ranges, strides))
    outer = next((a for a, n in enumerate(shape) if n != 1), len(shape) - 1)
    rows = ((shape[outer] - 1) * ranges[outer][2] + 1, *x.shape[outer + 1:])
    window = get_device(node.device).window(node.buffer, first, span)
    if span == prod(rows):
        view = Tensor(Node.from_buffer(window, node.dtype, rows, node.device))
    else:
        view = Tensor(Node.from_buffer(window, node.dtype, (span,), node.device))
        view = view._derive(Op.PAD, (prod(rows),), ((0, prod(rows) - span),)).reshape(rows)
    inner = tuple((0, (n - 1) * step + 1, step) for n, (_, _, step) in zip(shape[outer:], ranges[outer:]))
    if view.shape != shape[outer:]:
        view = view._derive(Op.SHRINK, shape[outer:], inner)
    return view.reshape(shape)


def _pieces(x: Tensor, bounds: Sequence[tuple[int, int]], axis: int) -> tuple[Tensor, ...]:
    """`x[..., start:stop, ...]` along `axis` for each (start, stop)."""
    out = []
    for start, stop in bounds:
        ranges = [(0, n, 1) for n in x.shape]
        ranges[axis] = (start, max(start, stop), 1)
        out.append(x._shrink(ranges))
    return tuple(out)


def _one_of(axis: Any, dim: Any, op: str, default: Any = None) -> Any:
    """The axis given as NumPy's `axis` or PyTorch's `dim` (not both), else `default`."""
    if axis is not None and dim is not None:
        raise TypeError(f"{op}: give axis or dim, not both")
    chosen = axis if axis is not None else dim
    if chosen is None and default is None:
        raise TypeError(f"{op}: missing the axis (axis= or dim=)")
    return default if chosen is None else chosen


def block(arrays: Any) -> Tensor:
    """NumPy's block: nested lists of arrays joined, the innermost lists along the last axis, each list outside
    them along the axis before; arrays of fewer dimensions than the result gain leading axes of 1."""
    from .creation import asarray

    def depth(x: Any, where: str) -> int:
        if isinstance(x, tuple):
            raise TypeError(f"block: {where} is a tuple; only lists nest (as NumPy)")
        if not isinstance(x, list):
            return 0
        if not x:
            raise ValueError(f"block: {where} is an empty list")
        depths = {depth(e, f"{where}[{i}]") for i, e in enumerate(x)}
        if len(depths) != 1:
            raise ValueError(f"block: the lists' depths are mismatched inside {where}")
        return 1 + depths.pop()

    levels = depth(arrays, "arrays")
    leaves: list[Tensor] = []

    def leaf(x: Any) -> Any:
        if isinstance(x, list):
            return [leaf(e) for e in x]
        leaves.append(asarray(x))
        return leaves[-1]

    tree = leaf(arrays)
    ndim = max(levels, *(t.ndim for t in leaves))

    def join(x: Any, level: int) -> Tensor:
        if isinstance(x, list):
            return concat([join(e, level + 1) for e in x], axis=level - levels)
        return x.reshape((1,) * (ndim - x.ndim) + x.shape)

    return join(tree, 0)


def concat(tensors: Sequence[Tensor], axis: int | None = 0, *, dim: int | None = None) -> Tensor:
    """Join tensors along an existing axis (PyTorch's `dim=` too; `axis=None` flattens them first)."""
    from .tensor import Tensor
    if dim is not None:
        axis = dim
    ts = list(tensors)
    if not ts:
        raise ValueError("concat: needs at least one tensor")
    if not all(isinstance(t, Tensor) for t in ts):
        raise TypeError("concat: every element must be a Tensor")
    if axis is None:
        ts, axis = [t.reshape(-1) for t in ts], 0
    ndim = ts[0].ndim
    if ndim == 0:
        raise ShapeError("concat: zero-dimensional tensors cannot be concatenated")
    a = normalize_axis(axis, ndim, "concat")
    for t in ts:
        if t.ndim != ndim or any(n != m for i, (n, m) in enumerate(zip(t.shape, ts[0].shape)) if i != a):
            shapes = ", ".join(str(t.shape) for t in ts)
            raise ShapeError(f"concat: shapes {shapes} differ outside axis {a}")
        if t.device != ts[0].device:
            raise DeviceError(f"concat: tensors are on different devices: {ts[0].device} and {t.device}")
    dtype = ts[0].dtype
    for t in ts[1:]:
        dtype = promote(dtype, t.dtype)
    total = sum(t.shape[a] for t in ts)
    pieces, offset = [], 0
    for t in ts:
        pads = [(0, 0)] * ndim
        pads[a] = (offset, total - offset - t.shape[a])
        offset += t.shape[a]
        inside = t._const(True, bool_, t.device).broadcast_to(t.shape).pad(pads)
        pieces.append((inside, t.cast(dtype).pad(pads)))
    from .tensor import where
    out = pieces[-1][1]
    for inside, piece in reversed(pieces[:-1]):
        out = where(inside, piece, out)
    return out


def stack(tensors: Sequence[Tensor], axis: int | None = None, *, dim: int | None = None) -> Tensor:
    """Join tensors of one shape along a new axis (`axis`, PyTorch's `dim`; 0 by default)."""
    axis = _one_of(axis, dim, "stack", 0)
    ts = list(tensors)
    if not ts:
        raise ValueError("stack: needs at least one tensor")
    shapes = {t.shape for t in ts}
    if len(shapes) != 1:
        raise ShapeError(f"stack: all tensors need one shape, got {', '.join(str(t.shape) for t in ts)}")
    return concat([t.unsqueeze(axis) for t in ts], axis)


def unstack(x: Tensor, axis: int = 0) -> tuple[Tensor, ...]:
    """The slices of `x` along `axis`, that axis removed (array API; PyTorch's unbind)."""
    a = normalize_axis(axis, x.ndim, "unstack")
    return tuple(piece.squeeze(a) for piece in _pieces(x, [(i, i + 1) for i in range(x.shape[a])], a))


def repeat(x: Tensor, repeats: Any, axis: int | None = None) -> Tensor:
    """Each element repeated in a row along `axis`, or along the flattened tensor with axis None (NumPy's and
    the array API's repeat; `Tensor.repeat` is PyTorch's, which tiles instead). `repeats` is an int, or one
    count per element along the axis (a 1-d integer tensor, list or array, or one count for all): then the
    result's length is their sum, which is read first (a realize; a JitError inside `lt.jit`), and each
    position takes the element whose running count it falls in (a binary search, then a gather)."""
    if axis is None:
        x, axis = x.reshape(-1), 0
    a = normalize_axis(axis, x.ndim, "repeat")
    if isinstance(repeats, bool):
        raise TypeError("repeat: repeats must be an int or integers, got bool")
    if isinstance(repeats, int):
        if repeats < 0:
            raise ValueError(f"repeat: repeats must be non-negative, got {repeats}")
        wide = x.unsqueeze(a + 1)
        copies = wide.broadcast_to(*wide.shape[:a + 1], repeats, *wide.shape[a + 2:])
        return copies.reshape(*x.shape[:a], x.shape[a] * repeats, *x.shape[a + 1:])
    from .creation import arange, asarray
    from .sorting import searchsorted
    from .tensor import realize
    counts = asarray(repeats, device=x.device)
    if counts.dtype.is_float or counts.dtype == bool_ or counts.ndim > 1:
        raise TypeError(f"repeat: repeats must be an int or a 1-d tensor of integers, got {counts.ndim}-d "
                        f"{counts.dtype}")
    if counts.numel() not in (1, x.shape[a]):
        raise ShapeError(f"repeat: {counts.numel()} repeats for axis {a} of length {x.shape[a]}")
    counts = counts.reshape(-1).broadcast_to(x.shape[a]).cast(int64)
    total, negative = counts.sum(), (counts < 0).any()
    realize(total, negative)
    if negative.item():
        raise ValueError("repeat: repeats must be non-negative")
    ends = counts.cumsum(0)
    return x.take(searchsorted(ends, arange(int(total.item()), device=x.device, dtype=int64), side="right"), axis=a)


def broadcast_arrays(*arrays: Tensor) -> list[Tensor]:
    """The tensors broadcast to their common shape (views: nothing is copied)."""
    from .tensor import broadcast_shapes
    shape = broadcast_shapes(*(t.shape for t in arrays), op="broadcast_arrays")
    return [t.broadcast_to(shape) for t in arrays]


def vstack(tensors: Sequence[Tensor]) -> Tensor:
    """NumPy's vstack: tensors joined along axis 0, 1-d ones (and 0-d) taken as rows first."""
    return concat([t.reshape(1, -1) if t.ndim < 2 else t for t in tensors], 0)


def hstack(tensors: Sequence[Tensor]) -> Tensor:
    """NumPy's hstack: 1-d tensors (and 0-d) joined end to end, others along axis 1."""
    ts = [t.reshape(1) if t.ndim == 0 else t for t in tensors]
    return concat(ts, 0 if ts and ts[0].ndim == 1 else 1)


def split(x: Tensor, indices_or_sections: int | Sequence[int], axis: int = 0) -> tuple[Tensor, ...]:
    """NumPy's split: N equal sections (N must divide the axis), or cuts at the given indices."""
    a = normalize_axis(axis, x.ndim, "split")
    n = x.shape[a]
    if isinstance(indices_or_sections, int):
        k = indices_or_sections
        if k <= 0 or n % k:
            raise ShapeError(f"split: axis {a} of size {n} does not divide into {k} equal sections")
        return _pieces(x, [(i * (n // k), (i + 1) * (n // k)) for i in range(k)], a)
    cuts = [0] + [min(max(int(i) + n if int(i) < 0 else int(i), 0), n) for i in indices_or_sections] + [n]
    return _pieces(x, list(itertools.pairwise(cuts)), a)


def _as_tensor(x: Any) -> Tensor:
    from .creation import asarray
    from .tensor import Tensor
    return x if isinstance(x, Tensor) else asarray(x)


def _at_least(arrays: Sequence[Any], ndim: int) -> Any:
    """NumPy's atleast_<ndim>d: one tensor for one argument, else a tuple of them."""
    out = tuple(_padded_view(_as_tensor(a), ndim) for a in arrays)
    return out[0] if len(out) == 1 else out


def _padded_view(t: Tensor, ndim: int) -> Tensor:
    """t with size-1 axes added to reach `ndim` as NumPy's atleast_*d places them: before a 1-d tensor's axis
    (and, for 3 dimensions, after it too); after a matrix's axes."""
    if t.ndim >= ndim:
        return t
    if ndim == 3 and t.ndim == 2:
        return t.reshape(*t.shape, 1)
    if ndim == 3 and t.ndim == 1:
        return t.reshape(1, t.shape[0], 1)
    return t.reshape((1,) * (ndim - t.ndim) + t.shape)


def atleast_1d(*arrays: Any) -> Any:
    """NumPy's atleast_1d: each argument as a tensor of at least 1 dimension (a 0-d one as shape (1,))."""
    return _at_least(arrays, 1)


def atleast_2d(*arrays: Any) -> Any:
    """NumPy's atleast_2d: each argument as a tensor of at least 2 dimensions (shape (n,) as (1, n))."""
    return _at_least(arrays, 2)


def atleast_3d(*arrays: Any) -> Any:
    """NumPy's atleast_3d: each argument as a tensor of at least 3 dimensions ((n,) as (1, n, 1), (m, n) as
    (m, n, 1))."""
    return _at_least(arrays, 3)


def column_stack(tup: Sequence[Any]) -> Tensor:
    """NumPy's column_stack: 1-d tensors (and 0-d) as the columns of a matrix, others joined along axis 1."""
    ts = [_as_tensor(t) for t in tup]
    return concat([t.reshape(-1, 1) if t.ndim < 2 else t for t in ts], 1)


def dstack(tup: Sequence[Any]) -> Tensor:
    """NumPy's dstack: the tensors as 3-d (`atleast_3d`) joined along axis 2."""
    return concat([_padded_view(_as_tensor(t), 3) for t in tup], 2)


def array_split(ary: Any, indices_or_sections: int | Sequence[int], axis: int = 0) -> list[Tensor]:
    """NumPy's array_split: `split`, where N sections need not divide the axis: the first n % N sections hold
    one element more than the others."""
    x = _as_tensor(ary)
    if not isinstance(indices_or_sections, int):
        return list(split(x, indices_or_sections, axis))
    a = normalize_axis(axis, x.ndim, "array_split")
    n, k = x.shape[a], indices_or_sections
    if k <= 0:
        raise ValueError(f"array_split: the number of sections must be larger than 0, got {k}")
    size, extra = divmod(n, k)
    cuts = list(itertools.accumulate([0] + [size + 1] * extra + [size] * (k - extra)))
    return list(_pieces(x, list(itertools.pairwise(cuts)), a))


def _split_along(ary: Any, indices_or_sections: int | Sequence[int], axis: int, least: int, name: str) -> list[Tensor]:
    x = _as_tensor(ary)
    if x.ndim < least:
        raise ShapeError(f"{name}: needs at least {least} dimensions, got a tensor of shape {x.shape}")
    return list(split(x, indices_or_sections, axis))


def hsplit(ary: Any, indices_or_sections: int | Sequence[int]) -> list[Tensor]:
    """NumPy's hsplit: `split` along axis 1 (axis 0 of a 1-d tensor)."""
    x = _as_tensor(ary)
    return _split_along(x, indices_or_sections, 1 if x.ndim > 1 else 0, 1, "hsplit")


def vsplit(ary: Any, indices_or_sections: int | Sequence[int]) -> list[Tensor]:
    """NumPy's vsplit: `split` along axis 0 of a tensor of at least 2 dimensions."""
    return _split_along(ary, indices_or_sections, 0, 2, "vsplit")


def dsplit(ary: Any, indices_or_sections: int | Sequence[int]) -> list[Tensor]:
    """NumPy's dsplit: `split` along axis 2 of a tensor of at least 3 dimensions."""
    return _split_along(ary, indices_or_sections, 2, 3, "dsplit")


def append(arr: Any, values: Any, axis: int | None = None) -> Tensor:
    """NumPy's append: `values` joined after `arr` along `axis`; both flattened first where it is None."""
    a, v = _as_tensor(arr), _as_tensor(values)
    if axis is None:
        return concat([a.reshape(-1), v.reshape(-1)], 0)
    return concat([a, v], axis)


def rot90(m: Any, k: int = 1, axes: Sequence[int] = (0, 1)) -> Tensor:
    """NumPy's rot90: the tensor rotated by 90 degrees `k` times in the plane of `axes`, from the first axis
    toward the second (a view)."""
    x = _as_tensor(m)
    if len(axes) != 2:
        raise ValueError(f"rot90: axes must hold 2 axes, got {tuple(axes)}")
    a0, a1 = (normalize_axis(a, x.ndim, "rot90") for a in axes)
    if a0 == a1:
        raise ValueError(f"rot90: the axes must differ, got {tuple(axes)}")
    k %= 4
    if k == 0:
        return x.copy()
    if k == 2:
        return x.flip((a0, a1))
    order = list(range(x.ndim))
    order[a0], order[a1] = order[a1], order[a0]
    return x.flip(a1).permute(order) if k == 1 else x.permute(order).flip(a1)


def fliplr(m: Any) -> Tensor:
    """NumPy's fliplr: the order of axis 1 reversed (a view)."""
    x = _as_tensor(m)
    if x.ndim < 2:
        raise ValueError(f"fliplr: needs at least 2 dimensions, got a tensor of shape {x.shape}")
    return x.flip(1)


def flipud(m: Any) -> Tensor:
    """NumPy's flipud: the order of axis 0 reversed (a view)."""
    x = _as_tensor(m)
    if x.ndim < 1:
        raise ValueError("flipud: needs at least 1 dimension, got a 0-d tensor")
    return x.flip(0)


def rollaxis(a: Any, axis: int, start: int = 0) -> Tensor:
    """NumPy's rollaxis: `axis` moved to stand before the axis now at `start` (a view; `moveaxis` says it
    plainer)."""
    x = _as_tensor(a)
    n = x.ndim
    ax = normalize_axis(axis, n, "rollaxis")
    if not -n <= start <= n:
        raise AxisError(f"rollaxis: start {start} is out of bounds for a tensor of {n} dimensions")
    start = start + n if start < 0 else start
    start = start - 1 if ax < start else start
    order = [k for k in range(n) if k != ax]
    order.insert(start, ax)
    return x.permute(order)


def resize(a: Any, new_shape: Any) -> Tensor:
    """NumPy's resize: the flattened tensor repeated as often as it takes to fill `new_shape` (zeros where it has
    no elements)."""
    from .creation import zeros
    x = _as_tensor(a)
    shape = (new_shape,) if isinstance(new_shape, int) else tuple(new_shape)
    if any(n < 0 for n in shape):
        raise ValueError(f"resize: all sizes must be non-negative, got {shape}")
    total, n = prod(shape), x.numel()
    if n == 0 or total == 0:
        return zeros(shape, dtype=x.dtype, device=x.device)
    return x.reshape(-1).tile(-(-total // n))[:total].reshape(shape)
