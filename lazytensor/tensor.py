"""The Tensor: a handle on a lazy graph node, with NumPy- and PyTorch-style operators.

Every method records graph nodes and returns at once; shapes and dtypes are
checked here, at the user's call, so errors point at the user's line. Data is
computed only by `realize()` or by reading it (`numpy()`, `item()`, `repr`,
`bool`, ...). Reductions live in `reduce.py`, movement ops in `movement.py`,
contractions in `contraction.py`; this module holds the core and elementwise ops.
"""
from __future__ import annotations

import copy
import math
import operator
import weakref
from collections.abc import Callable, Iterator, Sequence
from decimal import Decimal, localcontext
from types import ModuleType
from typing import Any, NamedTuple

import numpy as np

from . import array_api, dlpack, dtypes
from .autograd import _zeros_like, backward, custom_vjp, is_grad_enabled
from .contraction import ContractionOps
from .device import Device, canonical, get_device
from .dtypes import DType, bfloat16, bool_, float16, float32, float64, get_default_dtype, int16, int32, int64
from .errors import DeviceError, DTypeError, ShapeError
from .graph import MOVEMENT, Node, Op, hold
from .helpers import prod, user_line
from .indexing import IndexingOps
from .kernels.dtype import bfloat16_to_float32
from .kernels.ir import Alu
from .movement import MovementOps
from .pytorch_methods import PyTorchOps
from .realize import check_read, compute_stale, realize_nodes
from .reduce import ReduceOps
from .schedule import realize_with_next
from .sorting import SortingOps
from .views import element_source

Scalar = bool | int | float
Shape = tuple[int, ...]


class _Size(int):
    """`t.size` is the element count (NumPy); `t.size()` and `t.size(dim)` give the shape (PyTorch)."""

    _shape: Shape

    def __new__(cls, shape: Shape) -> _Size:
        self = super().__new__(cls, prod(shape))
        self._shape = shape
        return self

    def __call__(self, dim: int | None = None) -> Shape | int:
        return self._shape if dim is None else self._shape[dim]


def broadcast_shapes(*shapes: Shape, op: str = "broadcast") -> Shape:
    """NumPy broadcasting of shapes; a ShapeError names the op and every shape."""
    if len(shapes) == 2:
        a, b = shapes
        if a == b:
            return tuple(a)
        if len(a) == len(b) and all(m == n or m == 1 or n == 1 for m, n in zip(a, b)):  # no axes to prepend
            return tuple(n if m == 1 else m for m, n in zip(a, b))
    ndim = max((len(s) for s in shapes), default=0)
    out = []
    for axis in range(-ndim, 0):
        sizes = {s[axis] for s in shapes if len(s) >= -axis} - {1}
        if len(sizes) > 1:
            shown = " and ".join(str(tuple(s)) for s in shapes)
            raise ShapeError(f"{op}: shapes {shown} are not broadcastable (axis {axis}: sizes {sorted(sizes)})")
        out.append(sizes.pop() if sizes else 1)
    return tuple(out)


def to_arguments(args: Sequence[Any], device: Any, dtype: Any) -> tuple[Any, Any]:
    """The device and dtype of a call of `to` (a tensor's or a module's), PyTorch's spellings: each positional
    argument a device (a Device, a name), a dtype, or a tensor (its device and dtype)."""
    for a in args:
        if isinstance(a, Tensor):
            device, dtype = a.device, a.dtype
        elif isinstance(a, Device) or isinstance(a, str) and a.strip().lower() not in dtypes.BY_NAME:
            device = a
        else:
            dtype = a
    return device, dtype


def _no_min_max_result(t: Tensor, name: str) -> AttributeError:
    """The error for `.values`/`.indices` of a tensor: properties, not a `__getattr__`, so that an attribute a
    tensor lacks (`getattr(x, "_view", None)` on every basic index) costs no call into Python."""
    return AttributeError(f"'{type(t).__name__}' object has no attribute '{name}': a min or max over a positional "
                          f"axis (x.max(1)) is NumPy's, values only; PyTorch's (values, indices) is x.max(dim=1) or "
                          f"x.max(1, keepdim=False)", name=name, obj=t)


def _is_scalar(x: object) -> bool:
    return isinstance(x, (bool, int, float)) and not isinstance(x, np.generic)


# PyTorch raises a float tensor to these Python scalar powers with other ops than C's `pow`, whose special
# values differ: `(-inf) ** 0.5` is sqrt's NaN (pow's is inf), `(-0.0) ** -0.5` is -inf, `1e20 ** -2` is 0
# in float32. Tensor exponents (and other scalars) take `pow` in both.
_SCALAR_POWERS: dict[float, Callable[[Tensor], Tensor]] = {
    0.5: lambda x: x.sqrt(), -0.5: lambda x: x.rsqrt(), 2: lambda x: x * x, 3: lambda x: x * x * x,
    -1: lambda x: x.reciprocal(), -2: lambda x: (x * x).reciprocal(),
}
# Like a power, an integer division or modulo takes another algorithm for a known Python scalar divisor:
# baked into the kernel as a constant (one kernel per divisor, where other scalars share one kernel as
# parameters), it lets LLVM and Triton multiply by the divisor's inverse rather than divide, and the
# legalization of Python's semantics skip its zero and -1 cases.
_CONSTANT_DIVISORS = frozenset({Alu.FLOORDIV, Alu.MOD})


# What `_binary` checks of its op, as sets: a tuple compares an enum by == at Python speed
_NOT_FOR_BOOLS = frozenset({Alu.SUB, Alu.FLOORDIV, Alu.MOD, Alu.POW, Alu.NEG})
_BITWISE = frozenset({Alu.AND, Alu.OR, Alu.XOR})
_SHIFTS = frozenset({Alu.LSHIFT, Alu.RSHIFT})
_FLOAT_RESULTS = frozenset({Alu.DIV, Alu.ATAN2})
_COMPARISONS = frozenset({Alu.CMPLT, Alu.CMPLE, Alu.CMPEQ, Alu.CMPNE})
_INT_ONLY = _BITWISE | _SHIFTS  # refused for float tensors (`_binary` says why)


class Tensor(ReduceOps, MovementOps, IndexingOps, SortingOps, ContractionOps, PyTorchOps):
    """An n-dimensional array whose value is computed lazily. See the README's "Lazy evaluation"."""

    # `_view` is set on a basic index's result only (`indexing`): (what it views, the index); read where it is written
    __slots__ = ("__weakref__", "_ctx", "_node", "_source", "_view", "grad", "requires_grad")

    def __init__(self, data: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False):
        if isinstance(data, Node):
            self.node = data
        else:
            from .creation import asarray
            self.node = asarray(data, dtype=dtype, device=device).node
        self.requires_grad = requires_grad
        self.grad: Tensor | None = None
        self._ctx: tuple[Op, Any, tuple[Tensor, ...]] | None = None
        self._source: Tensor | None = None

    @property
    def node(self) -> Node:
        """The graph node this tensor is. Rebinding it (`t.node = new`, as optimizers update parameters) keeps
        the tensor known as the user's data (see `graph.hold`)."""
        return self._node

    @node.setter
    def node(self, node: Node) -> None:
        self._node = node
        hold(self, node)

    def _as_source(self) -> Tensor:
        """What an autograd record keeps of this tensor as a source of an op. A leaf that requires grad is
        kept itself (its `.grad` is where gradients go); any other tensor as a private handle on its node and
        record (one per node and record, so the backward walk meets it once). The records then hold no tensor
        of the user's: a tensor the user dropped is not data the user can read, so realizing its consumers
        does not write it (see `graph.hold`)."""
        if self.requires_grad and self._ctx is None:
            return self
        handle = self._source
        if handle is None or handle._node is not self._node or handle._ctx is not self._ctx:
            handle = self._source = _Source(self)
        return handle

    # ---- graph construction ----------------------------------------------------------

    @staticmethod
    def _make(op: Op, dtype: DType, shape: Shape, srcs: tuple[Tensor, ...], arg: Any = None,
              device: str | None = None) -> Tensor:
        """Record an op on `srcs`. A result with no elements is realized at once: it needs no kernel.

        The graph node composes a reshape of a reshape (and a permute of a permute) into one
        view of the original; the autograd record keeps the op as the user applied it.
        """
        if device is None:
            device = srcs[0]._node.device
        if 0 in shape:
            out = _wrap(Node.from_buffer(get_device(device).alloc(dtype, 0), dtype, shape, device))
        elif op is _RESHAPE or op is _PERMUTE:
            nodes, node_arg = tuple(map(_node_of, srcs)), arg
            if op is _RESHAPE and nodes[0].op is _RESHAPE:
                nodes = nodes[0].srcs
            elif op is _PERMUTE and nodes[0].op is _PERMUTE:
                node_arg = tuple(nodes[0].arg[a] for a in arg)
                nodes = nodes[0].srcs
            if nodes[0].shape == shape and (op is _RESHAPE or node_arg == tuple(range(len(shape)))):
                out = _wrap(nodes[0])
            else:
                out = _wrap(Node(op, dtype, shape, device, nodes, node_arg, user_line(3)))
        # The user's line is found from the frame under this private method's caller (lazytensor's, as this one):
        # two frame objects fewer for the walk to make
        elif len(srcs) == 2:  # spelled out for the common arity: a tuple made through `map` costs more
            out = _wrap(Node(op, dtype, shape, device, (srcs[0]._node, srcs[1]._node), arg, user_line(3)))
        else:
            out = _wrap(Node(op, dtype, shape, device, tuple(map(_node_of, srcs)), arg, user_line(3)))
        for s in srcs:
            if s.requires_grad:
                _record(out, op, arg, srcs)
                break
        return out

    def _checked(self, bad: Tensor, what: str) -> Tensor:
        """This tensor, guarded by `bad` (true where an index that comes from data is out of range): the
        realize that computes it raises `IndexError` saying `what`, at the user's line, where any is true.
        An op that picks by index (an embedding's rows, a loss's classes) never computes quietly on
        an index outside its range; nor does it wait for the data to say so, which a lazy op cannot."""
        flag = bad.any(keepdims=True)  # its shape is no one's: kept, it needs no reshape
        return Tensor._make(Op.CHECK, self.dtype, self.shape, (self, flag), f"{what} (at {flag.node.origin})")

    def _derive(self, op: Op, shape: Shape, arg: Any = None, dtype: DType | None = None) -> Tensor:
        return Tensor._make(op, dtype or self._node.dtype, shape, (self,), arg)

    @staticmethod
    def _scalar(value: Scalar, dtype: DType, device: str, op: str = "op", shape: Shape = ()) -> Tensor:
        """A Python scalar as a tensor of `shape` holding it everywhere, passed to kernels as a parameter
        (never baked in). One node at the shape it is used at, rather than a 0-d node and its broadcast:
        an optimizer step makes a scalar for every hyperparameter of every parameter."""
        if dtype.kind == "f":
            value = float(value)
        else:
            dtypes.check_fits(value, dtype, op)
            value = bool(value) if dtype is bool_ else int(value)
        if 0 in shape:  # no elements: `_make` gives it a buffer of none
            return Tensor._make(_SCALAR, dtype, shape, (), value, device=device)
        # `_make`'s case for an op with no sources, and its line likewise from under this private method's caller
        return _wrap(Node(_SCALAR, dtype, shape, device, (), value, user_line(3)))

    @staticmethod
    def _const(value: Scalar, dtype: DType, device: str, shape: Shape = ()) -> Tensor:
        """A constant baked into kernels (identities and fixed literals, not user scalars), of `shape`: one node,
        as `_scalar`'s, rather than a 0-d one and its broadcast (an index's wrap and range check make four)."""
        value = float(value) if dtype.is_float else bool(value) if dtype == bool_ else int(value)
        return Tensor._make(Op.CONST, dtype, shape, (), value, device=device)

    def cast(self, dtype: Any) -> Tensor:
        """This tensor converted to `dtype` (C-style: floats truncate toward zero into ints)."""
        dtype = dtypes.to_dtype(dtype)
        return self if dtype is self._node.dtype else self._derive(Op.CAST, self.shape, dtype=dtype)

    def astype(self, dtype: Any, /, *, copy: bool = True, device: Any = None) -> Tensor:
        """This tensor converted to `dtype` (as `cast`) and moved to `device` (array API and NumPy). With
        `copy=False` the tensor itself comes back where nothing changes; by default always a new tensor."""
        out = self.cast(dtype)
        if device is not None:
            out = out.to(device)
        return out.copy() if copy and out is self else out

    def _alu(self, op: Alu, dtype: DType, *others: Tensor) -> Tensor:
        return Tensor._make(_ALU, dtype, self._node.shape, (self, *others), op)

    def _operands(self, others: Sequence[Any], op: str, baked: bool = False) -> tuple[list[Tensor], DType]:
        """Tensors for self and `others` (Python scalars are weak), cast to their common dtype and
        broadcast to one shape; with `baked`, integer scalars are constants of the kernel (see
        `_CONSTANT_DIVISORS`) rather than its parameters."""
        if len(others) == 1:  # the common cases first: an op builds thousands of these per training step
            o, node = others[0], self._node
            if (type(o) is float or type(o) is int) and node.dtype.kind == "f":  # a float tensor and a number
                return [self, Tensor._scalar(o, node.dtype, node.device, op, node.shape)], node.dtype
            if _is_scalar(o):
                dtype = dtypes.weak_result_type(self.dtype, o)
                return [self.cast(dtype), self._scalar_operand(o, dtype, op, self.shape, baked)], dtype
            if isinstance(o, Tensor) and (other := o._node).dtype is node.dtype and other.device == node.device:
                if other.shape == node.shape:
                    return [self, o], node.dtype
                shape = broadcast_shapes(node.shape, other.shape, op=op)
                return [self._expand_to(shape), o._expand_to(shape)], node.dtype
        strong = [self, *(o if isinstance(o, Tensor) else None if _is_scalar(o) else self._like(o) for o in others)]
        for t in strong:
            if t is not None and t.device != self.device:
                raise DeviceError(f"{op}: tensors are on different devices: {self.device} and {t.device}")
        dtype = self.dtype
        for t in strong[1:]:
            if t is not None:
                dtype = dtypes.promote(dtype, t.dtype)
        for o in others:
            if _is_scalar(o):
                dtype = dtypes.weak_result_type(dtype, o)
        shape = broadcast_shapes(*(t.shape for t in strong if t is not None), op=op)
        return [t.cast(dtype).broadcast_to(shape) if t is not None else self._scalar_operand(o, dtype, op, shape, baked)
                for t, o in zip(strong, [self, *others])], dtype

    def _scalar_operand(self, value: Scalar, dtype: DType, op: str, shape: Shape, baked: bool) -> Tensor:
        """A Python scalar operand of `shape`: a kernel parameter, or with `baked` and an integer `dtype`
        a constant of the kernel."""
        if baked and dtype.is_int:
            dtypes.check_fits(value, dtype, op)
            return Tensor._const(value, dtype, self.device, shape)
        return Tensor._scalar(value, dtype, self.device, op, shape)

    def _like(self, data: Any) -> Tensor:
        from .creation import asarray
        return asarray(data, device=self.device)

    def _binary(self, other: Any, op: Alu, name: str, reverse: bool = False) -> Tensor:
        node = self._node
        if node.dtype.kind == "f" and op not in _INT_ONLY and 0 not in (shape := node.shape):
            # The commonest ops of a step, built here rather than through `_operands` and `_make`: a float tensor
            # and a Python number (weak: of the tensor's dtype), whose scalar's node has no tensor of its own
            # unless autograd records it and gives the op its user's line (found once for both); or two float
            # tensors of one dtype, shape and device
            dtype, device = node.dtype, node.device
            result = bool_ if op in _COMPARISONS else dtype
            if type(other) is float or type(other) is int:
                # the user's line found from the frame under this private method's caller (lazytensor's, as this
                # one): two frame objects fewer for the walk to make, of the three of `x * 0.5` (and of `x * y`)
                scalar = Node(_SCALAR, dtype, shape, device, (), float(other), user_line(3))
                out = _wrap(Node(_ALU, result, shape, device, (scalar, node) if reverse else (node, scalar), op,
                                 scalar.line))
                if self.requires_grad:
                    _record(out, _ALU, op, (_wrap(scalar), self) if reverse else (self, _wrap(scalar)))
                return out
            if isinstance(other, Tensor) and (o := other._node).dtype is dtype and o.shape == shape \
                    and o.device == device:
                out = _wrap(Node(_ALU, result, shape, device, (o, node) if reverse else (node, o), op, user_line(3)))
                if self.requires_grad or other.requires_grad:
                    _record(out, _ALU, op, (other, self) if reverse else (self, other))
                return out
        (a, b), dtype = self._operands([other], name, baked=op in _CONSTANT_DIVISORS and not reverse)
        if reverse:
            a, b = b, a
        if dtype is bool_ and op in _NOT_FOR_BOOLS:
            raise DTypeError(f"{name}: not supported for two bool tensors (cast to an integer dtype first)")
        if op in _BITWISE and dtype.is_float:
            raise DTypeError(f"{name}: bitwise ops need bool or integer tensors, got {dtype.name}")
        if op in _SHIFTS and not dtype.is_int:
            raise DTypeError(f"{name}: shifts need integer tensors, got {dtype.name}")
        if op in _FLOAT_RESULTS and not dtype.is_float:
            dtype = get_default_dtype()
            a, b = a.cast(dtype), b.cast(dtype)
        return Tensor._make(_ALU, bool_ if op in _COMPARISONS else dtype, a._node.shape, (a, b), op)

    def _float_unary(self, op: Alu) -> Tensor:
        (x,), dtype = self._float_operands((), op.label)
        return x._alu(op, dtype)

    def _float_operands(self, others: Sequence[Any], name: str) -> tuple[list[Tensor], DType]:
        """Self and `others` promoted together and broadcast (`_operands`), integers and bools to the default
        float: the operands of a float function (`name`, for errors)."""
        xs, dtype = self._operands(others, name) if others else ([self], self.dtype)
        if not dtype.is_float:
            dtype = get_default_dtype()
            xs = [x.cast(dtype) for x in xs]
        return xs, dtype

    def _composite(self, compute: Callable[..., Tensor], backward: Callable[..., list[Tensor | None]],
                   *others: Any, name: str = "") -> Tensor:
        """A function composed of other ops: `compute(working, *operands)` on the float operands of this tensor
        and `others` (`_float_operands`; `name` the function's) widened to their working precision
        (`_WORKING`), rounded once to their dtype. Differentiated by `backward(g, *operands)`, the derivative
        PyTorch gives, not through its steps (whose derivatives blow up where the function's is only large,
        as sqrt(1 - x**2) at 1)."""
        xs, dtype = self._float_operands(others, name)
        working = _WORKING[float32 if dtype in (float16, bfloat16) else float64]
        return custom_vjp(xs, lambda: compute(working, *(x.cast(working.dtype) for x in xs)).cast(dtype),
                          lambda g: backward(g, *xs))

    def _bitcast(self, dtype: DType) -> Tensor:
        """This tensor's bits read as `dtype`, of the same size (a 16-bit float's as it is stored). A graph op of
        its own, lowered to the kernel IR's BITCAST: signbit, copysign and nextafter are integer ops on the bits,
        which no value op can see (the sign of a NaN), and `view(dtype)` will be this too. No gradient passes
        it: the functions that read bits say what theirs is."""
        if dtype.itemsize != self.dtype.itemsize or bool_ in (dtype, self.dtype):
            raise DTypeError(f"bitcast: {self.dtype.name} and {dtype.name} are not of one size (bools have no bits)")
        return self if dtype == self.dtype else self._derive(Op.BITCAST, self.shape, dtype=dtype)

    # ---- attributes ------------------------------------------------------------------

    @property
    def shape(self) -> Shape:
        return self._node.shape

    @property
    def dtype(self) -> DType:
        return self._node.dtype

    @property
    def device(self) -> str:
        return self._node.device

    @property
    def ndim(self) -> int:
        return len(self._node.shape)

    @property
    def size(self) -> _Size:
        return _Size(self.node.shape)

    def numel(self) -> int:
        return self.node.numel

    def dim(self) -> int:
        return self.ndim

    @property
    def itemsize(self) -> int:
        return self.dtype.itemsize

    @property
    def nbytes(self) -> int:
        return self.numel() * self.itemsize

    @property
    def is_realized(self) -> bool:
        return self.node.realized

    # ---- realizing and reading ---------------------------------------------------------

    def realize(self) -> Tensor:
        """Compute this tensor now (and everything it needs that is not computed yet)."""
        if (node := self._node).op is not _BUFFER:
            realize_nodes(node)
        return self

    def numpy(self) -> np.ndarray:
        """The data as a read-only NumPy array sharing this tensor's memory (realizes). bfloat16 gives an
        `ml_dtypes.bfloat16` array, and raises DTypeError where ml_dtypes is not installed."""
        out = dtypes.host_view(self._host_bits(), self.dtype)
        out.flags.writeable = False
        return out

    def _host_bits(self) -> np.ndarray:
        """The data as its buffer holds it (bfloat16 as uint16 bit patterns), shaped: realized, but for one
        element of realized data in host memory, which is read where it lies."""
        check_read()
        if self.numel() == 1 and (read := element_source(self._node)) is not None \
                and get_device((source := read[0]).device).host_memory:
            # one element of data in host memory (`float(x[i])` in a loop) is read where it lies: a realize
            # would compile a kernel for each position read
            return source.buffer.numpy()[read[1]:read[1] + 1].reshape(self.shape)
        self.realize()
        return self.node.buffer.numpy().reshape(self.shape)

    def _host_values(self) -> np.ndarray:
        """The data as a NumPy array of numbers NumPy can compute with: bfloat16 as float32 (exact)."""
        bits = self._host_bits()
        return bfloat16_to_float32(bits) if self.dtype == dtypes.bfloat16 else bits

    @property
    def values(self) -> Tensor:
        """No attribute of a tensor: PyTorch's `x.max(1).values` meets NumPy's `x.max(1)` (values only), the error says."""
        raise _no_min_max_result(self, "values")

    @property
    def indices(self) -> Tensor:
        """No attribute of a tensor: see `values`."""
        raise _no_min_max_result(self, "indices")

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickling and `copy` save the data (computed now), never the graph that computes it: the tensor
        that comes back holds a copy of it (one copy for the tensors that shared it), on the same device,
        with the same dtype, shape, requires_grad and class (a Parameter stays one), and no gradient.
        `copy.copy` shares the data instead, as a view would."""
        check_read()
        self.realize()
        return _rebuilt, (type(self), self.node, self.requires_grad), getattr(self, "__dict__", None) or None

    def __deepcopy__(self, memo: dict[int, Any]) -> Tensor:
        """A copy as pickling makes it (see `__reduce__`), and of the gradient too, as PyTorch's."""
        rebuild, args, state = self.__reduce__()
        out = memo[id(self)] = rebuild(*copy.deepcopy(args, memo))
        if state:
            out.__dict__.update(copy.deepcopy(state, memo))
        if self.grad is not None:
            out.grad = copy.deepcopy(self.grad, memo)
        return out

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        """NumPy 2's protocol (`np.asarray(t)`, `np.array(t)`): the data (realized now) as a read-only view of
        this tensor's memory where it can be one, else a copy. `copy=True` always copies; `copy=False` raises
        ValueError where a copy is needed (another dtype, or a tensor on a GPU), as NumPy specifies."""
        needs_copy = self.device != "cpu" or (dtype is not None and np.dtype(dtype) != np.dtype(self.dtype))
        if copy is False and needs_copy:
            raise ValueError(f"__array__: a {self.dtype.name} tensor on {self.device} cannot become a NumPy array "
                             f"of dtype {np.dtype(dtype) if dtype is not None else self.dtype.name} without a copy")
        out = self.numpy()
        if dtype is not None and np.dtype(dtype) != out.dtype:
            return out.astype(dtype)
        return out.copy() if copy else out

    def __array_ufunc__(self, ufunc: np.ufunc, method: str, *inputs: Any, **kwargs: Any) -> Any:
        """NumPy's ufuncs on tensors (NEP 13): `np.exp(t)`, `np.maximum(a, t)`, `a + t` for a NumPy array a,
        `np.add.reduce(t)` are lazytensor's ops, lazy on t's device; a ufunc or argument lazytensor has not raises
        TypeError (see `lazytensor/interop.py`)."""
        from .interop import array_ufunc  # it maps NumPy's functions to the package's, which build on this module
        return array_ufunc(ufunc, method, inputs, kwargs)

    def __array_function__(self, func: Callable[..., Any], types: Sequence[type], args: tuple[Any, ...],
                           kwargs: dict[str, Any]) -> Any:
        """NumPy's other functions on tensors (NEP 18): `np.sum(t, axis=0)`, `np.concatenate([t, u])`,
        `np.where(t > 0, t, 0)`, ... are lazytensor's, lazy on t's device; a function or argument lazytensor has
        not raises TypeError (see `lazytensor/interop.py`)."""
        from .interop import array_function  # as __array_ufunc__
        return array_function(func, types, args, kwargs)

    def __dlpack__(self, *, stream: Any = None, max_version: tuple[int, int] | None = None,
                   dl_device: tuple[int, int] | None = None, copy: bool | None = None) -> Any:
        """The array API's DLPack export: a capsule of the data (realized now). Zero-copy and flagged read-only
        for a consumer of versioned DLPack (`max_version` (1, 0) or later), since lazytensor's buffers are never
        written and equal tensors may share one; a copy for a consumer of unversioned DLPack, which cannot be
        told read-only, unless it passes copy=False; a copy with copy=True or another `dl_device` (BufferError
        with copy=False). `stream` is a CUDA stream that is made to wait for this tensor's kernels. The rules in
        full are in `lazytensor/dlpack.py`."""
        return dlpack.export(self, stream=stream, max_version=max_version, dl_device=dl_device, copy=copy)

    def __dlpack_device__(self) -> tuple[dlpack.DLDeviceType, int]:
        """DLPack's (device type, index) of this tensor's memory: (CPU, 0) for host memory, which is the CPU's and
        that of Triton's interpreter (TRITON_INTERPRET=1: cuda:0 tensors live in host memory, which consumers
        read at its address); (CUDA, n) on the GPU cuda:n."""
        return dlpack.dlpack_device(self.device)

    def item(self) -> Scalar:
        if self.numel() != 1:
            raise ValueError(f"item(): only a tensor with one element converts to a Python scalar, "
                             f"this one has shape {self.shape}")
        return self._host_values().reshape(()).item()

    def tolist(self) -> Any:
        return self._host_values().tolist()

    def __bool__(self) -> bool:
        if self.numel() != 1:
            raise ValueError(f"the truth value of a tensor with {self.numel()} elements (shape {self.shape}) "
                             "is ambiguous: use .any() or .all()")
        return bool(self.item())

    def __float__(self) -> float:
        return float(self.item())

    def __int__(self) -> int:
        return int(self.item())

    def __complex__(self) -> complex:
        return complex(self.item())

    def __format__(self, format_spec: str) -> str:
        """`f"{loss:.3f}"` formats a 0-d tensor's value (as torch); other tensors take only an empty spec."""
        if self.numel() == 1 and self.ndim == 0:
            return format(self.item(), format_spec)
        if format_spec:
            raise TypeError(f"unsupported format string {format_spec!r} for a tensor of shape {self.shape}")
        return str(self)

    def __index__(self) -> int:
        if self.dtype.is_float or self.numel() != 1:
            raise TypeError(f"only one-element integer tensors can be used as an index, not {self.dtype.name}"
                            f"{list(self.shape)}")
        return int(self.item())

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a 0-d tensor")
        return self.shape[0]

    def __iter__(self) -> Iterator[Tensor]:
        if not self.shape:
            raise TypeError("iteration over a 0-d tensor")
        return (self[i] for i in range(self.shape[0]))

    def __repr__(self) -> str:
        body = np.array2string(self._host_values(), separator=", ", prefix="tensor(")
        return f"tensor({body}, dtype={self.dtype.name}, device='{self.device}')"

    __str__ = __repr__
    __hash__ = object.__hash__

    def to(self, *args: Any, device: Any = None, dtype: Any = None, non_blocking: bool = False,
           copy: bool = False) -> Tensor:
        """Another device and/or dtype: `t.to('cpu')`, `t.to(lt.float64)`, `t.to(device=..., dtype=...)`,
        `t.to(other)` (other's device and dtype). `non_blocking` is accepted (a copy between devices is done
        when it is read anyway); with `copy`, a new tensor even where nothing changes."""
        device, dtype = to_arguments(args, device, dtype)
        out = self.cast(dtype) if dtype is not None else self
        if device is None or canonical(device) == self.device:
            return Tensor(out.node) if copy and out is self else out
        target = get_device(device)  # DeviceError if it is not available here, before computing anything
        source = out.realize().node.buffer
        return Tensor(Node.from_buffer(target.copy_from(source), out.dtype, out.shape, target.name))

    def to_device(self, device: Any, /, *, stream: Any = None) -> Tensor:
        """This tensor on `device` (array API): a copy where it is another device, else itself."""
        if stream is not None:
            raise ValueError("to_device: streams are not supported")
        return self.to(device)

    def __array_namespace__(self, /, *, api_version: str | None = None) -> ModuleType:
        """The lazytensor module, the namespace of the array API standard this tensor follows (ValueError for a
        revision of the standard it does not implement)."""
        if api_version is not None and api_version not in array_api.API_VERSIONS:
            raise ValueError(f"lazytensor implements the array API standard {', '.join(array_api.API_VERSIONS)}, "
                             f"not {api_version!r}")
        import lazytensor  # at call time: the package imports this module
        return lazytensor

    def cpu(self) -> Tensor:
        return self.to("cpu")

    def float(self) -> Tensor:
        return self.cast(dtypes.float32)

    def double(self) -> Tensor:
        return self.cast(dtypes.float64)

    def half(self) -> Tensor:
        return self.cast(dtypes.float16)

    def bfloat16(self) -> Tensor:
        return self.cast(dtypes.bfloat16)

    def int(self) -> Tensor:
        return self.cast(dtypes.int32)

    def long(self) -> Tensor:
        return self.cast(dtypes.int64)

    def bool(self) -> Tensor:
        return self.cast(bool_)

    # ---- autograd (rules in autograd/__init__.py) ------------------------------------------------

    def requires_grad_(self, requires_grad: bool = True) -> Tensor:
        """Mark this tensor as a leaf whose gradient `backward()` accumulates into `.grad`."""
        self.requires_grad = requires_grad
        return self

    def detach(self) -> Tensor:
        """The same data, cut off from autograd."""
        return Tensor(self.node)

    def backward(self, gradient: Tensor | None = None, retain_graph: bool | None = None, create_graph: bool = False,
                 inputs: Tensor | Sequence[Tensor] | None = None) -> None:
        """Accumulate d(self)/d(leaf) into `.grad` of every leaf that requires grad (of `inputs` where given), as
        PyTorch's; see `lt.autograd.backward`."""
        backward(self, gradient, retain_graph=retain_graph, create_graph=create_graph, inputs=inputs)

    def contiguous(self) -> Tensor:
        """A tensor that is computed into its own buffer when realized: a fusion barrier. A broadcast of one
        value (the gradient of a sum or a mean) stays what it is: its buffer would hold that value over and over,
        and a kernel reading it would load every element where it reads one number (a convolution's weight
        gradient then sums the windows times it once per output channel: 16x64x56x56 k3, 7 s instead of 17 ms)."""
        node = self.node
        base = node
        while base.op in MOVEMENT:
            base = base.srcs[0]
        if node.realized or (base is not node and base.numel == 1):
            return self
        return self._derive(Op.CONTIGUOUS, self.shape)

    def clone(self) -> Tensor:
        return self._derive(Op.CONTIGUOUS, self.shape)

    def copy(self) -> Tensor:
        """A tensor of the same values that is not this one (NumPy's copy), with its gradient. No data moves:
        nothing writes a tensor's buffer (an in-place operator rebinds the tensor it is applied to), so a
        copy differs from the original only in being another object. A same-shape reshape records that."""
        return self._derive(Op.RESHAPE, self.shape, self.shape)

    # ---- arithmetic operators ----------------------------------------------------------

    def add(self, other: Any) -> Tensor:
        return self._binary(other, Alu.ADD, "add")

    def sub(self, other: Any) -> Tensor:
        return self._binary(other, Alu.SUB, "subtract")

    def mul(self, other: Any) -> Tensor:
        return self._binary(other, Alu.MUL, "multiply")

    def div(self, other: Any) -> Tensor:
        return self._binary(other, Alu.DIV, "divide")

    def floor_divide(self, other: Any) -> Tensor:
        return self._binary(other, Alu.FLOORDIV, "floor_divide")

    def remainder(self, other: Any) -> Tensor:
        return self._binary(other, Alu.MOD, "remainder")

    def pow(self, other: Any) -> Tensor:
        """`self ** other` elementwise, with PyTorch's special values (see `_SCALAR_POWERS`)."""
        return self._pow(other, reverse=False)

    def _pow(self, other: Any, reverse: bool) -> Tensor:
        if _is_scalar(other) and not reverse and not isinstance(other, bool):
            if isinstance(other, int) and other < 0 and not self.dtype.is_float:
                raise ValueError(f"power: integers to negative integer powers are not allowed ({self.dtype.name} "
                                 f"tensor ** {other})")
            dtype = dtypes.weak_result_type(self.dtype, other)
            if dtype.is_float and other in _SCALAR_POWERS:
                x, p = self.cast(dtype), other
                # differentiated as PyTorch's pow, p * x**(p-1): the chain through the ops computing it gives
                # NaN where that is 0 or infinite (x ** -2 as 1 / (x*x) at an infinite x: inf * 0). With no
                # gradient to record, computed directly: custom_vjp's bookkeeping doubled the cost of an `x ** 2`
                if not (x.requires_grad and is_grad_enabled()):
                    return _SCALAR_POWERS[p](x)
                return custom_vjp([x], lambda: _SCALAR_POWERS[p](x),
                                  lambda g: (g * (x * p if p == 2 else x ** (p - 1) * p),))
        return self._binary(other, Alu.POW, "power", reverse)

    __add__ = add
    __sub__ = sub
    __mul__ = mul
    __truediv__ = div
    __floordiv__ = floor_divide
    __mod__ = remainder
    __pow__ = pow

    def __radd__(self, other: Any) -> Tensor:
        return self._binary(other, Alu.ADD, "add", reverse=True)

    def __rsub__(self, other: Any) -> Tensor:
        return self._binary(other, Alu.SUB, "subtract", reverse=True)

    def __rmul__(self, other: Any) -> Tensor:
        return self._binary(other, Alu.MUL, "multiply", reverse=True)

    def __rtruediv__(self, other: Any) -> Tensor:
        return self._binary(other, Alu.DIV, "divide", reverse=True)

    def __rfloordiv__(self, other: Any) -> Tensor:
        return self._binary(other, Alu.FLOORDIV, "floor_divide", reverse=True)

    def __rmod__(self, other: Any) -> Tensor:
        return self._binary(other, Alu.MOD, "remainder", reverse=True)

    def __rpow__(self, other: Any) -> Tensor:
        return self._pow(other, reverse=True)

    def bitwise_and(self, other: Any) -> Tensor:
        return self._binary(other, Alu.AND, "bitwise_and")

    def bitwise_or(self, other: Any) -> Tensor:
        return self._binary(other, Alu.OR, "bitwise_or")

    def bitwise_xor(self, other: Any) -> Tensor:
        return self._binary(other, Alu.XOR, "bitwise_xor")

    def bitwise_left_shift(self, other: Any) -> Tensor:
        """Each element's bits moved left by `other`'s (integers), as NumPy and PyTorch: a count past the
        width, or negative (read as unsigned, as NumPy does), shifts every bit out and gives 0."""
        return self._binary(other, Alu.LSHIFT, "bitwise_left_shift")

    def bitwise_right_shift(self, other: Any) -> Tensor:
        """Each element's bits moved right by `other`'s (integers): arithmetic, so floor division by a power
        of two (array API). A count past the width, or negative, shifts every bit out: 0, and -1 for a
        negative value."""
        return self._binary(other, Alu.RSHIFT, "bitwise_right_shift")

    __and__ = bitwise_and
    __or__ = bitwise_or
    __xor__ = bitwise_xor
    __lshift__ = bitwise_left_shift
    __rshift__ = bitwise_right_shift

    def __rand__(self, other: Any) -> Tensor:
        return self._binary(other, Alu.AND, "bitwise_and", reverse=True)

    def __ror__(self, other: Any) -> Tensor:
        return self._binary(other, Alu.OR, "bitwise_or", reverse=True)

    def __rxor__(self, other: Any) -> Tensor:
        return self._binary(other, Alu.XOR, "bitwise_xor", reverse=True)

    def __rlshift__(self, other: Any) -> Tensor:
        return self._binary(other, Alu.LSHIFT, "bitwise_left_shift", reverse=True)

    def __rrshift__(self, other: Any) -> Tensor:
        return self._binary(other, Alu.RSHIFT, "bitwise_right_shift", reverse=True)

    def _inplace(self, fn: Callable[[Tensor, Any], Tensor], other: Any, op: str) -> Tensor:
        """`x op= y` rebinds x to `fn(x, y)`, which must keep x's shape and a dtype x can hold.

        The op reads a handle on what x was (`_as_source`), so x's autograd record points at that, not at
        x itself.
        """
        self._check_modifiable(op)
        result = fn(self._as_source(), other)
        if result.shape != self.shape:
            raise ShapeError(f"{op}: the result has shape {result.shape}, which cannot be written into "
                             f"a tensor of shape {self.shape}")
        if result.dtype != self.dtype and (result.dtype.is_float and not self.dtype.is_float
                                           or result.dtype != bool_ and self.dtype == bool_):
            raise DTypeError(f"{op}: result dtype {result.dtype.name} cannot be cast to {self.dtype.name} in place")
        self._rebind(result.cast(self.dtype))
        return self

    def _check_modifiable(self, op: str) -> None:
        """PyTorch's rule for in-place ops: not on a leaf that requires grad while gradients are recorded."""
        if self.requires_grad and self._ctx is None and is_grad_enabled():
            raise RuntimeError(f"{op}: a leaf tensor that requires grad cannot be modified in place; "
                               "use lt.no_grad() or an out-of-place op")

    def _assign(self, node: Node) -> None:
        """`self.node = node`, for an in-place op. A leaf that requires grad updated so (under no_grad: a
        parameter updated by hand, `w -= lr * w.grad`, `w.data.add_(...)`) is updated as an optimizer's step
        updates it: the new value rides on the next schedule (`schedule.realize_with_next`), the last one
        computed first if no schedule ran since (`realize.compute_stale`)."""
        if self.requires_grad and self._ctx is None:
            compute_stale(self)
            self.node = node
            realize_with_next(self)
        else:
            self.node = node

    def _rebind(self, out: Tensor) -> None:
        """This tensor takes `out`'s value (an in-place op), and its autograd record where gradients are recorded.
        Under `no_grad` it keeps its own: a parameter updated there still requires grad, and a non-leaf's
        gradient passes the update as PyTorch's does (`with no_grad(): w -= lr * w.grad`). A basic index's result
        (`x[i]`, NumPy's and PyTorch's view) writes its new value into what it views too: `x[i][j] = v` writes x.
        An in-place view op (`squeeze_`) changes its shape, not its values, and ends that."""
        view = getattr(self, "_view", None)
        if view is not None:
            base = view[0]() if type(view[0]) is weakref.ReferenceType else view[0]
            if base is None or out.shape != self.shape:
                self._view = view = None
            else:
                base._check_modifiable("an in-place write to a view")
        self._assign(out.node)
        if is_grad_enabled():
            self._ctx, self.requires_grad = out._ctx, out.requires_grad
        if view is not None:
            base[view[1]] = self

    def __iadd__(self, other: Any) -> Tensor:
        return self._inplace(operator.add, other, "+=")

    def __isub__(self, other: Any) -> Tensor:
        return self._inplace(operator.sub, other, "-=")

    def __imul__(self, other: Any) -> Tensor:
        return self._inplace(operator.mul, other, "*=")

    def __itruediv__(self, other: Any) -> Tensor:
        return self._inplace(operator.truediv, other, "/=")

    def __ifloordiv__(self, other: Any) -> Tensor:
        return self._inplace(operator.floordiv, other, "//=")

    def __imod__(self, other: Any) -> Tensor:
        return self._inplace(operator.mod, other, "%=")

    def __ipow__(self, other: Any) -> Tensor:
        return self._inplace(operator.pow, other, "**=")

    def __iand__(self, other: Any) -> Tensor:
        return self._inplace(operator.and_, other, "&=")

    def __ior__(self, other: Any) -> Tensor:
        return self._inplace(operator.or_, other, "|=")

    def __ixor__(self, other: Any) -> Tensor:
        return self._inplace(operator.xor, other, "^=")

    def __ilshift__(self, other: Any) -> Tensor:
        return self._inplace(operator.lshift, other, "<<=")

    def __irshift__(self, other: Any) -> Tensor:
        return self._inplace(operator.rshift, other, ">>=")

    def __neg__(self) -> Tensor:
        if self.dtype == bool_:
            raise DTypeError("negative: not supported for bool tensors; use ~ or logical_not")
        return self._alu(Alu.NEG, self.dtype)

    neg = negative = __neg__

    def positive(self) -> Tensor:
        """`+x`: the same values, as a new tensor (`copy`), so that `y = +x; y += 1` leaves x alone."""
        return self.copy()

    __pos__ = positive

    def __invert__(self) -> Tensor:
        if self.dtype.is_float:
            raise DTypeError(f"bitwise_not: needs a bool or integer tensor, got {self.dtype.name}")
        return self._alu(Alu.NOT, self.dtype)

    bitwise_not = bitwise_invert = __invert__

    # ---- comparisons --------------------------------------------------------------------

    def __lt__(self, other: Any) -> Tensor:
        return self._binary(other, Alu.CMPLT, "less")

    def __le__(self, other: Any) -> Tensor:
        return self._binary(other, Alu.CMPLE, "less_equal")

    def __gt__(self, other: Any) -> Tensor:
        return self._binary(other, Alu.CMPLT, "greater", reverse=True)

    def __ge__(self, other: Any) -> Tensor:
        return self._binary(other, Alu.CMPLE, "greater_equal", reverse=True)

    def __eq__(self, other: object) -> Tensor:  # type: ignore[override]
        return self._binary(other, Alu.CMPEQ, "equal")

    def __ne__(self, other: object) -> Tensor:  # type: ignore[override]
        return self._binary(other, Alu.CMPNE, "not_equal")

    lt = less = __lt__
    le = less_equal = __le__
    gt = greater = __gt__
    ge = greater_equal = __ge__
    eq = equal = __eq__
    ne = not_equal = __ne__

    def maximum(self, other: Any) -> Tensor:
        """Elementwise maximum; NaN wins, as in NumPy and PyTorch."""
        return self._binary(other, Alu.MAX, "maximum")

    def minimum(self, other: Any) -> Tensor:
        """Elementwise minimum; NaN wins, as in NumPy and PyTorch."""
        return self._binary(other, Alu.MIN, "minimum")

    def clip(self, min: Any = None, max: Any = None) -> Tensor:
        """`minimum(maximum(x, min), max)`: with min > max every element is max, as in NumPy; with neither
        bound, the values of x as a new tensor (array API; PyTorch's clamp raises).

        Differentiated as PyTorch's clamp: x takes the gradient where min <= x <= max, min where
        x < min < max, max where x > max or max < min. Through maximum and minimum, a tie (x == min) would
        split it between them instead (scalar bounds already follow clamp: see autograd's `_extremum_vjp`)."""
        if min is None and max is None:
            return self.copy()
        if not isinstance(min, Tensor) and not isinstance(max, Tensor):
            out = self if min is None else self.maximum(min)
            return out if max is None else out.minimum(max)
        (x, *bounds), _ = self._operands([b for b in (min, max) if b is not None], "clip")
        lo = bounds.pop(0) if min is not None else None
        hi = bounds.pop(0) if max is not None else None

        def forward() -> Tensor:
            out = x if lo is None else x.maximum(lo)
            return out if hi is None else out.minimum(hi)

        def backward(g: Tensor) -> list[Tensor]:
            if lo is None:
                masks = [x <= hi, x > hi]
            elif hi is None:
                masks = [x >= lo, x < lo]
            else:
                masks = [(x >= lo) & (x <= hi), (x < lo) & (lo < hi), (x > hi) | (hi < lo)]
            return [where(m, g, 0.0) for m in masks]

        return custom_vjp([t for t in (x, lo, hi) if t is not None], forward, backward)

    clamp = clip

    def where(self, condition: Any, other: Any) -> Tensor:
        """PyTorch's `x.where(condition, y)`: x where condition holds, else y."""
        return where(condition, self, other)

    # ---- elementwise math ---------------------------------------------------------------

    def exp(self) -> Tensor:
        return self._float_unary(Alu.EXP)

    def exp2(self) -> Tensor:
        return self._float_unary(Alu.EXP2)

    def expm1(self) -> Tensor:
        return self._float_unary(Alu.EXPM1)

    def log(self) -> Tensor:
        return self._float_unary(Alu.LOG)

    def log2(self) -> Tensor:
        return self._float_unary(Alu.LOG2)

    def log1p(self) -> Tensor:
        return self._float_unary(Alu.LOG1P)

    def log10(self) -> Tensor:
        return self.log2() * (1 / math.log2(10))

    def sqrt(self) -> Tensor:
        return self._float_unary(Alu.SQRT)

    def rsqrt(self) -> Tensor:
        return self.sqrt().reciprocal()

    def sin(self) -> Tensor:
        return self._float_unary(Alu.SIN)

    def cos(self) -> Tensor:
        return self._float_unary(Alu.COS)

    def tan(self) -> Tensor:
        return self._float_unary(Alu.TAN)

    def tanh(self) -> Tensor:
        return self._float_unary(Alu.TANH)

    def erf(self) -> Tensor:
        return self._float_unary(Alu.ERF)

    # The inverse trigonometric and the hyperbolic functions: atan2 is the primitive (an IR op), the others
    # are composed of it, sqrt, exp, expm1, log and log1p with the usual careful formulas (fdlibm's), in the
    # working precision of `_composite`; where rounding an intermediate would cost more than half an ulp,
    # its error is carried beside it as a second term (`_two_sum`, `_two_product`).

    def atan2(self, other: Any) -> Tensor:
        """The angle of the point (other, self) (`atan2(y, x)`, y first), in [-pi, pi], with C's and the array
        API's special values (signed zeros pick the half-plane: atan2(+0.0, -0.0) is pi)."""
        return self._binary(other, Alu.ATAN2, "atan2")

    def atan(self) -> Tensor:
        """The inverse tangent, in [-pi/2, pi/2]: atan2(x, 1)."""
        (x,), dtype = self._float_operands((), "atan")
        return x._alu(Alu.ATAN2, dtype, x._const(1, dtype, x.device, x.shape))

    def asin(self) -> Tensor:
        """The inverse sine, in [-pi/2, pi/2]; NaN outside [-1, 1]."""
        return self._composite(_asin, lambda g, x: [g * (1 - x * x).rsqrt()])

    def acos(self) -> Tensor:
        """The inverse cosine, in [0, pi]; NaN outside [-1, 1]."""
        return self._composite(_acos, lambda g, x: [-g * (1 - x * x).rsqrt()])

    def asinh(self) -> Tensor:
        """The inverse hyperbolic sine."""
        return self._composite(_asinh, lambda g, x: [g * (x * x + 1).rsqrt()])

    def acosh(self) -> Tensor:
        """The inverse hyperbolic cosine, from 0 at 1; NaN below 1."""
        return self._composite(_acosh, lambda g, x: [g * (x * x - 1).rsqrt()])

    def atanh(self) -> Tensor:
        """The inverse hyperbolic tangent: infinite at -1 and 1, NaN beyond."""
        return self._composite(_atanh, lambda g, x: [g / (1 - x * x)])

    def sinh(self) -> Tensor:
        """The hyperbolic sine."""
        return self._composite(_sinh, lambda g, x: [g * x.cosh()])

    def cosh(self) -> Tensor:
        """The hyperbolic cosine."""
        return self._composite(_cosh, lambda g, x: [g * x.sinh()])

    arctan2, arctan, arcsin, arccos, arcsinh, arccosh, arctanh = atan2, atan, asin, acos, asinh, acosh, atanh

    def hypot(self, other: Any) -> Tensor:
        """sqrt(self**2 + other**2), neither overflowing nor underflowing where the result does not; infinite
        where either is infinite, NaN or not."""
        def backward(g: Tensor, x: Tensor, y: Tensor) -> list[Tensor | None]:
            out = x.hypot(y)  # again, recorded: a higher-order gradient goes through it
            return [g * x / out, g * y / out]

        return self._composite(_hypot, backward, other, name="hypot")

    # Functions of the sign bit, which no comparison sees (-0.0 == 0.0, and a NaN's sign): integer ops on the
    # bits (`_bitcast`), exact in every float dtype.

    def signbit(self) -> Tensor:
        """Whether the sign bit is set: true for -0.0 and a NaN with its sign bit set (array API, NumPy, PyTorch);
        an integer's is whether it is below 0, a bool's is false."""
        if self.dtype == bool_:
            return self._const(False, bool_, self.device).broadcast_to(self.shape)
        return (self._bitcast(_WORDS[self.dtype.itemsize]) if self.dtype.is_float else self) < 0

    def copysign(self, other: Any) -> Tensor:
        """|self| with the sign bit of `other`, NaN's and zero's included (a float; integers promote to the default
        float). Differentiated as PyTorch: `result / self`, 0 where self is 0; `other` gets 0."""
        (x, y), dtype = self._float_operands([other], "copysign")
        word, sign = _WORDS[dtype.itemsize], -1 << (8 * dtype.itemsize - 1)

        def forward() -> Tensor:
            return ((x._bitcast(word) & ~sign) | (y._bitcast(word) & sign))._bitcast(dtype)

        def backward(g: Tensor) -> list[Tensor | None]:
            return [where(x == 0, 0.0, g * (x.copysign(y) / x)), _zeros_like(y)]

        return custom_vjp([x, y], forward, backward)

    def nextafter(self, other: Any) -> Tensor:
        """The float next to each element of self in the direction of `other` (other itself where they are
        equal, so nextafter(-0.0, +0.0) is +0.0; NaN where either is NaN): one step of the bits.
        Differentiated as PyTorch: self's gradient passes where self != other (the step is below the rounding
        of any use of it; where they are equal the result is other, a constant), `other` gets 0."""
        (x, y), dtype = self._float_operands([other], "nextafter")
        word, sign = _WORDS[dtype.itemsize], -1 << (8 * dtype.itemsize - 1)

        def forward() -> Tensor:
            bits = x._bitcast(word)
            # the bits are a sign and a magnitude: away from zero is one up, toward it one down
            step = where((x < y) == (x > 0), bits + 1, bits - 1)
            smallest = ((y._bitcast(word) & sign) | 1)._bitcast(dtype)  # from a zero: the subnormal on y's side
            out = where(x == y, y, where(x == 0, smallest, step._bitcast(dtype)))
            return where(x.isnan() | y.isnan(), x + y, out)

        return custom_vjp([x, y], forward, lambda g: [where(x != y, g, 0.0), _zeros_like(y)])

    def reciprocal(self) -> Tensor:
        return self._float_unary(Alu.RECIP)

    def sigmoid(self) -> Tensor:
        """`1 / (1 + exp(-x))`, from `exp(-|x|)` so neither the value nor its gradient overflows."""
        x = self if self.dtype.is_float else self.cast(get_default_dtype())
        e = where(x >= 0, -x, x).exp()
        s = (e + 1).reciprocal()
        return where(x >= 0, s, e * s)

    def relu(self) -> Tensor:
        if self.dtype == bool_:
            raise DTypeError("relu: not supported for bool tensors")
        return self._alu(Alu.MAX, self.dtype, self._const(0, self.dtype, self.device).broadcast_to(self.shape))

    def abs(self) -> Tensor:
        return self if self.dtype == bool_ else self._alu(Alu.ABS, self.dtype)

    __abs__ = absolute = abs

    def square(self) -> Tensor:
        return self * self

    def sign(self) -> Tensor:
        """-1, 0 or 1 by the sign of each element; NaN for NaN (NumPy, the array API; PyTorch gives 0)."""
        if self.dtype == bool_:
            return self
        zero = self._const(0, self.dtype, self.device).broadcast_to(self.shape)
        pos, neg = zero._alu(Alu.CMPLT, bool_, self), self._alu(Alu.CMPLT, bool_, zero)
        out = pos.cast(self.dtype) - neg.cast(self.dtype)
        return where(self.isnan(), self, out) if self.dtype.is_float else out

    def _rounding(self, op: Alu) -> Tensor:
        return self._alu(op, self.dtype) if self.dtype.is_float else self

    def floor(self) -> Tensor:
        return self._rounding(Alu.FLOOR)

    def ceil(self) -> Tensor:
        return self._rounding(Alu.CEIL)

    def trunc(self) -> Tensor:
        return self._rounding(Alu.TRUNC)

    def round(self, decimals: int = 0) -> Tensor:
        """Round half to even, like NumPy and PyTorch; `decimals` scales by 10**decimals first."""
        if decimals == 0 or not self.dtype.is_float:
            return self._rounding(Alu.ROUND)
        scale = 10.0 ** decimals
        return (self * scale)._rounding(Alu.ROUND) / scale

    def isnan(self) -> Tensor:
        if not self.dtype.is_float:
            return self._const(False, bool_, self.device).broadcast_to(self.shape)
        return self._alu(Alu.CMPNE, bool_, self)

    def isinf(self) -> Tensor:
        if not self.dtype.is_float:
            return self._const(False, bool_, self.device).broadcast_to(self.shape)
        return self.abs() == math.inf

    def isfinite(self) -> Tensor:
        if not self.dtype.is_float:
            return self._const(True, bool_, self.device).broadcast_to(self.shape)
        return self.abs() < math.inf

    def logaddexp(self, other: Any) -> Tensor:
        """`log(exp(x) + exp(y))` without overflow: `max(x, y) + log1p(exp(-|x - y|))`; equal arguments
        (infinities included, whose difference is NaN) give `x + log(2)`."""
        (a, b), dtype = self._operands([other], "logaddexp")
        if not dtype.is_float:
            a, b = a.cast(get_default_dtype()), b.cast(get_default_dtype())
        spread = a.maximum(b) + (-(a - b).abs()).exp().log1p()
        return where(a == b, a + math.log(2), spread)

    def real(self) -> Tensor:
        """The real part: the values themselves, as lazytensor has no complex dtypes."""
        return self.copy()

    def imag(self) -> Tensor:
        """The imaginary part: zeros of this tensor's dtype, as lazytensor has no complex dtypes."""
        return self._const(0, self.dtype, self.device).broadcast_to(self.shape)

    def conj(self) -> Tensor:
        """The complex conjugate: the values themselves, as lazytensor has no complex dtypes."""
        return self.copy()

    def nan_to_num(self, nan: float = 0.0, posinf: float | None = None, neginf: float | None = None, *,
                   copy: bool = True) -> Tensor:
        """NaN replaced by `nan`, inf by `posinf` and -inf by `neginf` (by default the dtype's greatest and least
        finite values), as NumPy's and PyTorch's (NumPy's `copy` is accepted: the result is a new tensor either
        way); an integer or bool tensor's values as they are."""
        if not self.dtype.is_float:
            return self.copy()
        finite = dtypes.finfo(self.dtype).max
        big, small = finite if posinf is None else posinf, -finite if neginf is None else neginf
        return where(self.isnan(), nan, where(self == math.inf, big, where(self == -math.inf, small, self)))

    def isclose(self, other: Any, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False) -> Tensor:
        """Where `|self - other| <= atol + rtol * |other|` (NumPy's and PyTorch's test, not symmetric), or
        the two are equal (infinities of one sign); NaNs are close to each other only with `equal_nan`."""
        (a, b), _ = self._operands([other], "isclose")
        out = a == b
        if a.dtype.is_float:  # an infinite or NaN self is never within a finite distance
            out = out | (b.isfinite() & ((a - b).abs() <= atol + rtol * b.abs()))
            if equal_nan:
                out = out | (a.isnan() & b.isnan())
        else:  # computed in float64 as NumPy does: a - b can wrap in the integer dtype
            a, b = a.cast(dtypes.float64), b.cast(dtypes.float64)
            out = out | ((a - b).abs() <= atol + rtol * b.abs())
        return out

    def allclose(self, other: Any, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False) -> bool:
        """Whether every element `isclose`: reads the data, like `bool()`."""
        return bool(self.isclose(other, rtol, atol, equal_nan).all())

    def logical_not(self) -> Tensor:
        return self.cast(bool_)._alu(Alu.NOT, bool_)

    def _logical(self, other: Any, op: Alu, name: str) -> Tensor:
        other = other.cast(bool_) if isinstance(other, Tensor) else bool(other) if _is_scalar(other) else other
        return self.cast(bool_)._binary(other, op, name)

    def logical_and(self, other: Any) -> Tensor:
        return self._logical(other, Alu.AND, "logical_and")

    def logical_or(self, other: Any) -> Tensor:
        return self._logical(other, Alu.OR, "logical_or")

    def logical_xor(self, other: Any) -> Tensor:
        return self._logical(other, Alu.XOR, "logical_xor")


def _rebuilt(cls: type[Tensor], node: Node, requires_grad: bool) -> Tensor:
    """A tensor of class `cls` on `node`, a leaf of the graph: how pickles and copies come back."""
    out = cls.__new__(cls)
    Tensor.__init__(out, node, requires_grad=requires_grad)
    return out


def where(condition: Any, x: Any = None, y: Any = None) -> Any:
    """Elements of `x` where `condition` is true, else of `y`; any of the three may be a scalar. With neither x nor
    y, NumPy's shorthand for `nonzero(condition)`: a tuple of index tensors, one per axis."""
    from .creation import asarray
    cond = condition if isinstance(condition, Tensor) else asarray(condition)
    if x is None and y is None:
        return cond.nonzero(as_tuple=True)
    if x is None or y is None:
        raise TypeError("where: give both x and y, or neither (NumPy's shorthand for nonzero)")
    swap = not isinstance(x, Tensor) and isinstance(y, Tensor)
    base, other = (y, x) if swap else (x, y)
    if not isinstance(base, Tensor):
        dtype = (dtypes.promote(dtypes.scalar_dtype(x), dtypes.scalar_dtype(y))
                 if _is_scalar(x) and _is_scalar(y) else None)
        base = asarray(base, dtype=dtype, device=cond.device)
    if cond.device != base.device:
        raise DeviceError(f"where: tensors are on different devices: {cond.device} and {base.device}")
    (a, b), dtype = base._operands([other], "where")
    if swap:
        a, b = b, a
    shape = broadcast_shapes(cond.shape, a.shape, op="where")
    return cond.cast(bool_).broadcast_to(shape)._alu(Alu.WHERE, dtype, a.broadcast_to(shape), b.broadcast_to(shape))


def realize(*tensors: Tensor) -> tuple[Tensor, ...]:
    """Compute several tensors in one schedule, so work they share runs once."""
    realize_nodes(*(t.node for t in tensors if not t.node.realized))
    return tensors


# ---- the composite functions -------------------------------------------------------------------------

_WORDS = {2: int16, 4: int32, 8: int64}  # the integer dtype of a float's bits, by size


class _Working(NamedTuple):
    """A working precision of the composite functions and the constants their formulas take in it."""

    dtype: DType
    splitter: float  # 2**ceil(p/2) + 1 for Dekker's split into halves (p the significand's bits)
    big: float  # above this, 1 + x**2 rounds to x**2: asinh and acosh are log(2x)
    huge: float  # an integer below log(max): exp(x) overflows past it, sinh and cosh a little later
    half_exp_huge: float  # e**huge / 2
    hypot_scales: tuple[float, float, float, float]  # above a, scaled by b; below c, by d: squares stay normal


def _half_exp(x: int) -> float:
    """e**x / 2, correctly rounded."""
    with localcontext() as ctx:
        ctx.prec = 40
        return float(Decimal(x).exp() / 2)


# float64 for float32 and float64 operands (float32 results correctly rounded but for rare double roundings),
# float32 for the 16-bit floats, as every op computes them
_WORKING = {float64: _Working(float64, 2.0**27 + 1, 2.0**28, 709.0, _half_exp(709), (2.0**500, 2.0**-600, 2.0**-500,
                                                                                   2.0**600)),
            float32: _Working(float32, 2.0**12 + 1, 2.0**14, 88.0, _half_exp(88), (2.0**52, 2.0**-76, 2.0**-52,
                                                                                2.0**100))}


def _two_sum(a: Tensor | float, b: Tensor) -> tuple[Tensor, Tensor]:
    """a + b = s + e exactly, s the rounded sum (Knuth). Graph ops are a kernel's ops one for one, and no
    backend contracts or reassociates them, so the error-free transformations of `kernels/legalize.py` hold on
    tensors too (written here again: those build kernel IR values, below the frontend)."""
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


def _two_product(w: _Working, a: Tensor, b: Tensor) -> tuple[Tensor, Tensor]:
    """a * b = p + e exactly, p the rounded product (Dekker), for products that neither overflow nor underflow."""
    def split(v: Tensor) -> tuple[Tensor, Tensor]:
        t = v * w.splitter
        hi = t - (t - v)
        return hi, v - hi

    p = a * b
    (ah, al), (bh, bl) = split(a), split(b)
    return p, ((ah * bh - p) + ah * bl + al * bh) + al * bl


def _sqrt_pair(w: _Working, hi: Tensor, lo: Tensor) -> tuple[Tensor, Tensor]:
    """sqrt(hi + lo) as root + correction, for lo small against hi: the root of hi and, to first order, what
    its rounding and lo add (the exact residual hi - root**2 over 2 root)."""
    root = hi.sqrt()
    p, pe = _two_product(w, root, root)
    return root, where(root > 0, (((hi - p) - pe) + lo) / (root * 2), 0.0)


def _log1p_pair(hi: Tensor, lo: Tensor) -> Tensor:
    """log1p(hi + lo) for lo small against hi, to first order in lo."""
    return hi.log1p() + lo / (hi + 1)


def _one_minus_square(w: _Working, a: Tensor) -> tuple[Tensor, Tensor]:
    """1 - a**2 as hi + lo, to about twice the working precision: near |a| = 1 it cancels to a few bits."""
    p, pe = _two_product(w, a, a)
    hi, lo = _two_sum(1.0, -p)
    return hi, lo - pe


def _asin(w: _Working, x: Tensor) -> Tensor:
    """atan2(|x|, d) for d = sqrt(1 - x**2) + d_lo, whose low part moves the angle by -|x| d_lo (as |x|**2 + d**2
    is 1): rounding d alone would cost up to an ulp of the angle near 0; the sign of x put back (an odd
    function, -0.0 included)."""
    a = x.abs()
    d, d_lo = _sqrt_pair(w, *_one_minus_square(w, a))
    return (a.atan2(d) - a * d_lo).copysign(x)


def _acos(w: _Working, x: Tensor) -> Tensor:
    """atan2(d, x) for d = sqrt(1 - x**2) + d_lo (see `_asin`): d_lo moves it by x d_lo."""
    d, d_lo = _sqrt_pair(w, *_one_minus_square(w, x.abs()))
    return d.atan2(x) + x * d_lo


def _atanh(w: _Working, x: Tensor) -> Tensor:
    """log1p(2a / (1 - a)) / 2 for a = |x| (fdlibm's), the quotient with its remainder: 1 - a and the
    quotient rounded would cost about an ulp each."""
    a = x.abs()
    b, b_lo = _two_sum(1.0, -a)
    q = a * 2 / b
    p, pe = _two_product(w, q, b)
    q_lo = (((a * 2 - p) - pe) - q * b_lo) / b  # nothing to correct where q is infinite (a = 1)
    return (_log1p_pair(q, where(q.isfinite(), q_lo, 0.0)) * 0.5).copysign(x)


def _asinh(w: _Working, x: Tensor) -> Tensor:
    """log1p(a + a**2 / (1 + sqrt(1 + a**2))) for a = |x| (fdlibm's), the sum with its rounding error; log(2a)
    past `big`, where a**2 could overflow."""
    a = x.abs()
    z, z_lo = _two_sum(a, a * a / ((a * a + 1).sqrt() + 1))
    return where(a > w.big, a.log() + math.log(2), _log1p_pair(z, z_lo)).copysign(x)


def _acosh(w: _Working, x: Tensor) -> Tensor:
    """log1p(t + sqrt(2t + t**2)) for t = x - 1 below 2 (fdlibm's; t is exact there), its square root and sum
    to twice the working precision; log(2x - 1 / (x + sqrt(x**2 - 1))) up to `big`, log(2x) past it."""
    t = x - 1
    p, pe = _two_product(w, t, t)
    s, s_lo = _two_sum(t * 2, p)
    r, r_lo = _sqrt_pair(w, s, s_lo + pe)
    z, z_lo = _two_sum(t, r)
    near = _log1p_pair(z, z_lo + r_lo)
    mid = (x * 2 - 1 / (x + (x * x - 1).sqrt())).log()
    y = where(x < 2, near, where(x < w.big, mid, x.log() + math.log(2)))
    return where(x < 1, math.nan, y)


def _exp_past_huge(w: _Working, a: Tensor) -> Tensor:
    """e**a / 2 for a beyond `huge`, where e**a overflows before e**a / 2 does: e**(a - huge) (a - huge is
    exact) times e**huge / 2."""
    return (a - w.huge).exp() * w.half_exp_huge


# sinh a = a + a**3 S(a**2) below 1: its Taylor series, whose terms past these fall below 2**-60 of a there
_SINH_TAYLOR = tuple(1 / math.factorial(k) for k in range(3, 21, 2))


def _sinh(w: _Working, x: Tensor) -> Tensor:
    """a + a**3 S(a**2) for a = |x| below 1 (fdlibm's form from expm1 loses up to 2 ulps there),
    (t + t / (t + 1)) / 2 for t = expm1(a) above (fdlibm's); the sign of x put back."""
    a = x.abs()
    z = a * a
    series = _SINH_TAYLOR[-1]
    for c in reversed(_SINH_TAYLOR[:-1]):
        series = series * z + c
    t = a.minimum(w.huge).expm1()
    large = (t + t / (t + 1)) * 0.5
    return where(a < 1, a + a * z * series, where(a < w.huge, large, _exp_past_huge(w, a))).copysign(x)


def _cosh(w: _Working, x: Tensor) -> Tensor:
    """1 + t**2 / (2 (t + 1)) for t = expm1(|x|) below ln(2)/2 (fdlibm's), (e + 1/e) / 2 for e = exp(|x|) above."""
    a = x.abs()
    t = a.expm1()
    e = a.minimum(w.huge).exp()
    small = t * t / ((t + 1) * 2) + 1
    return where(a < math.log(2) / 2, small, where(a < w.huge, e * 0.5 + 0.5 / e, _exp_past_huge(w, a)))


def _hypot(w: _Working, x: Tensor, y: Tensor) -> Tensor:
    """sqrt(x**2 + y**2) of both scaled by a power of two (exactly) that keeps the squares normal, and the sum of
    squares to twice the working precision, so that the square root is rounded once."""
    above, down, below, up = w.hypot_scales
    a, b = x.abs(), y.abs()
    m = a.maximum(b)
    scale = where(m > above, down, where(m < below, up, m._const(1, w.dtype, m.device).broadcast_to(m.shape)))
    p, pe = _two_product(w, a * scale, a * scale)
    q, qe = _two_product(w, b * scale, b * scale)
    h, h_lo = _two_sum(p, q)
    r, r_lo = _sqrt_pair(w, h, h_lo + pe + qe)
    return where(a.isinf() | b.isinf(), math.inf, (r + r_lo) / scale)


__all__ = ["Tensor", "broadcast_shapes", "realize", "where"]


def _record(out: Tensor, op: Op, arg: Any, srcs: tuple[Tensor, ...]) -> None:
    """Record for autograd (where it records) that `out` is `op` of `srcs`, one of which requires grad."""
    if is_grad_enabled():
        out.requires_grad, out._ctx = True, (op, arg, tuple([s._as_source() for s in srcs]))


def _wrap(node: Node) -> Tensor:
    """A new tensor of the user's program on `node`: what `Tensor(node)` makes, without its argument checks (every
    op makes one)."""
    t = _new_object(Tensor)
    t._node, t.requires_grad, t.grad, t._ctx, t._source = node, False, None, None, None
    if node.holders is None:  # a node just made: `hold`'s first case
        node.holders = _ref(t)
    else:
        hold(t, node)
    return t


_new_object = object.__new__
_ref = weakref.ref
_node_of = operator.attrgetter("_node")
# Read by every op: an enum's member, looked up on its class, costs a call into Python on 3.11
_ALU, _SCALAR, _RESHAPE, _PERMUTE, _BUFFER = Op.ALU, Op.SCALAR, Op.RESHAPE, Op.PERMUTE, Op.BUFFER


class _Source(Tensor):
    """The handle an autograd record keeps of a source tensor (see `Tensor._as_source`): the tensor's node,
    flag and record at the time, and not a tensor of the user's program."""

    __slots__ = ()

    def __init__(self, of: Tensor):  # its node is set past the setter, which registers a tensor as the user's
        self._node, self.requires_grad, self.grad, self._ctx, self._source = of._node, of.requires_grad, None, of._ctx, None

    def _as_source(self) -> Tensor:
        return self
