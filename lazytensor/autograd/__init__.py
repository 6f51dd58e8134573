"""Reverse-mode automatic differentiation on the lazy graph.

Every Tensor made by an op on a tensor that requires grad remembers that op
(`Tensor._ctx`: the primitive graph op, its argument, and its source tensors,
as the handles `Tensor._as_source` gives: a leaf itself, any other tensor a
private handle, so records keep no tensor of the user's alive).
Gradients are built from these records with one vector-Jacobian product rule
per primitive op, as ordinary lazy tensors: the backward pass fuses like any
other computation, with the forward pass it reads and with the optimizer
update that reads it.

- `backward(t, gradient)` (also `t.backward()`) accumulates d(t)/d(leaf) into
  `.grad` of every leaf tensor that requires grad. It frees nothing: the graph
  can be differentiated again (PyTorch's `retain_graph=True`).
- `grad(f)` is the functional form: a function returning the gradient of
  `f`'s scalar result with respect to its arguments (JAX's `grad`);
  `gradients(outputs, inputs)` is PyTorch's `torch.autograd.grad`.
- `no_grad()` / `enable_grad()` switch recording off and on.
- `custom_vjp(srcs, forward, backward)` records an op with its own backward (JAX's `custom_vjp`): for a
  composite whose derivative through its primitives lowers badly (conv2d's input gradient is a contraction
  over the output channels in the layout that its placement reads, not the derivative of the sliding-window
  view). `Function` (function.py) is PyTorch's `torch.autograd.Function`, for the user's own ops.

Hooks, as PyTorch's: `t.register_hook(fn)` runs `fn(gradient)` when the walk has t's whole gradient (what
it returns, if not None, replaces the gradient); `t.retain_grad()` keeps a non-leaf's gradient in `.grad`.
They are kept by the handle the records hold of t (`Tensor._as_source`), for as long as a record holds it.
A module's backward hooks see the gradients of all its inputs (outputs) at once: its inputs pass through
a joint (`joint`), a record of each that the walk holds back until every one of them has its gradient.

Only floating-point tensors have gradients. Comparisons, bitwise and integer
ops, `argmax`, casts to integers and `floor`/`ceil`/`round`/`trunc`/`//`
pass no gradient (zero, as PyTorch); calling `backward` on a non-float result
raises a clear error.
"""
from __future__ import annotations

import contextlib
import enum
import functools
import itertools
import math
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from ..dtypes import float64
from ..graph import MOVEMENT, Op
from ..helpers import KnownUserLine, is_ours, user_line
from ..kernels.ir import Alu, ReduceOp, toposort

if TYPE_CHECKING:
    from ..tensor import Tensor

class _GradMode(threading.local):
    """This thread's autograd mode. The default on the class, which a thread that never set the mode reads: an
    attribute a thread-local object lacks costs `getattr(local, name, default)` an exception raised and caught, a
    microsecond per recorded op."""

    enabled = True


_state = _GradMode()


def is_grad_enabled() -> bool:
    """False inside `no_grad()`: ops then record nothing for autograd."""
    return _state.enabled


@contextlib.contextmanager
def set_grad_enabled(mode: bool) -> Iterator[None]:
    """Run a block with autograd recording on (`mode=True`) or off, restoring the previous mode after."""
    previous = is_grad_enabled()
    _state.enabled = mode
    try:
        yield
    finally:
        _state.enabled = previous


def no_grad() -> contextlib.AbstractContextManager:
    """Run a block without recording operations for autograd (inference, optimizer updates)."""
    return set_grad_enabled(False)


def enable_grad() -> contextlib.AbstractContextManager:
    return set_grad_enabled(True)


class Custom(enum.Enum):
    """The ops of autograd records of no graph op: `VJP` (made by `custom_vjp`: its argument is the backward
    function and whether it takes the result) and `JOINT` (made by `joint`: its argument is the joint, the
    member's position and the number of members)."""
    VJP = "custom_vjp"
    JOINT = "joint"


# The members the backward walk reads for every op it passes: read on their class, each costs a call into Python on
# 3.11 (an Enum class's attributes are all read through EnumType.__getattr__'s hook)
_CUSTOM_VJP, _JOINT = Custom.VJP, Custom.JOINT
(_ALU, _BITCAST, _CAST, _CHECK, _CONTIGUOUS, _EXPAND, _FLIP, _GATHER, _LINALG, _PAD, _PERMUTE, _REDUCE, _RESHAPE, _SCAN,
 _SCATTER, _SHRINK, _SORT) = (Op.ALU, Op.BITCAST, Op.CAST, Op.CHECK, Op.CONTIGUOUS, Op.EXPAND, Op.FLIP, Op.GATHER,
                              Op.LINALG, Op.PAD, Op.PERMUTE, Op.REDUCE, Op.RESHAPE, Op.SCAN, Op.SCATTER, Op.SHRINK,
                              Op.SORT)


def custom_vjp(srcs: Sequence[Tensor], forward: Callable[[], Tensor],
               backward: Callable[..., Sequence[Tensor | None]], *, takes_result: bool = False) -> Tensor:
    """`forward()` (a tensor computed from `srcs`), differentiated by `backward` instead of through the
    ops inside `forward`.

    `forward` runs without recording; when some source requires grad, the result records `srcs` and
    `backward`. `backward(g)` gets the gradient of the result and returns one gradient per source, of
    its shape and dtype (None for a source that needs none). It must build them with ordinary tensor
    ops on `g` and `srcs`, which are recorded under `create_graph`, so higher-order gradients go
    through them (and through a custom op they call).

    With `takes_result`, it is called `backward(g, y)` with the result `y` too (softmax's gradient is
    written with it). A backward that closed over the result instead would make the result and its
    record a reference cycle, which keeps the graph behind them, and the memory of whatever of it was
    realized, until Python's cyclic garbage collector runs."""
    from ..tensor import Tensor
    srcs = tuple(srcs)
    with no_grad():
        out = forward()
    if is_grad_enabled() and any(s.requires_grad for s in srcs):
        out = Tensor(out.node, requires_grad=True)
        out._ctx = (Custom.VJP, (backward, takes_result), tuple(s._as_source() for s in srcs))
    return out


# ---- hooks -----------------------------------------------------------------------------------


class RemovableHandle:
    """What registering a hook returns: `remove()` (or leaving a `with` block) unregisters it."""

    _ids = itertools.count()

    def __init__(self, table: OrderedDict):
        self.table, self.id = table, next(RemovableHandle._ids)

    def remove(self) -> None:
        self.table.pop(self.id, None)

    def __enter__(self) -> RemovableHandle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.remove()


class _TensorHooks:
    """The hooks of one source handle, and the tensors that retain its gradient (weakly: a hook keeps no
    tensor of the user's alive)."""

    __slots__ = ("fns", "retained")

    def __init__(self) -> None:
        self.fns: OrderedDict[int, Callable[[Tensor], Tensor | None]] = OrderedDict()
        self.retained: weakref.ref | None = None


# {id(handle): hooks}, an entry dropped with its handle (a tensor's hash is not its identity)
_hooks: dict[int, _TensorHooks] = {}
_hooks_lock = threading.Lock()


def _hooks_of(t: Tensor) -> _TensorHooks:
    """The hooks of the tensor `t` is now (its node and record), made on first use."""
    if not t.requires_grad:
        raise RuntimeError("register_hook: the tensor does not require grad, so no gradient is computed for it")
    handle = t._as_source()
    with _hooks_lock:
        hooks = _hooks.get(id(handle))
        if hooks is None:
            key = id(handle)
            hooks = _hooks[key] = _TensorHooks()
            weakref.finalize(handle, _hooks.pop, key, None)
    return hooks


def register_hook(t: Tensor, fn: Callable[[Tensor], Tensor | None]) -> RemovableHandle:
    """Run `fn(gradient)` each time the gradient with respect to `t` is computed (`t.register_hook`)."""
    table = _hooks_of(t).fns
    handle = RemovableHandle(table)
    table[handle.id] = fn
    return handle


def retain_grad(t: Tensor) -> None:
    """Keep the gradient with respect to the non-leaf `t` in `t.grad` when `backward` computes it."""
    if t.requires_grad and t._ctx is None:  # a leaf's gradient is kept anyway
        return
    _hooks_of(t).retained = weakref.ref(t)


def _hooked(t: Tensor, g: Tensor, retain: bool, create_graph: bool) -> Tensor:
    """The gradient `g` of `t` through t's hooks, in their order; kept in the retaining tensor's `.grad`."""
    hooks = _hooks.get(id(t))
    if hooks is None:
        return g
    for fn in list(hooks.fns.values()):
        with KnownUserLine(None):  # the hook is the user's code: its ops are made at its lines
            new = fn(g)
        if new is not None:
            if new.shape != g.shape:
                raise RuntimeError(f"hook: a tensor hook returned a gradient of shape {new.shape} for a tensor of "
                                   f"shape {g.shape}")
            g = new.cast(g.dtype)
    owner = hooks.retained() if hooks.retained is not None and retain else None
    if owner is not None:
        from ..tensor import Tensor
        kept = g if create_graph else Tensor(g.node)
        owner.grad = kept if owner.grad is None else owner.grad + kept
    return g


JointFire = Callable[[list["Tensor | None"]], Sequence["Tensor | None"]]


def joint(tensors: Sequence[Tensor], fire: JointFire, values: Sequence[Tensor] | None = None) -> list[Tensor]:
    """Each of `tensors` (or of `values`, computed from them) as a tensor of its value whose gradient the
    backward walk holds back until all of theirs are in (PyTorch's multi-output autograd nodes): then
    `fire(gradients)` (None for one that got no gradient) returns the gradients to pass on to `tensors` (None:
    none). A module's backward hooks use it to see the gradients of all its inputs or outputs at once, an
    `autograd.Function` to run its backward once for all its outputs. `tensors` must all require grad."""
    from ..tensor import Tensor
    srcs = tuple(t._as_source() for t in tensors)
    out = []
    members = tensors if values is None else values
    for i, t in enumerate(members):
        member = Tensor(t.node, requires_grad=True)
        member._ctx = (Custom.JOINT, (fire, i, len(members)), srcs)
        out.append(member)
    return out


# ---- the walk ------------------------------------------------------------------------------


class GradFn:
    """What `Tensor.grad_fn` shows of the autograd record that made a tensor (PyTorch's autograd node): `name()`
    spelled as PyTorch's (`MulBackward`, `SumBackward`, `SoftmaxBackward` for a composite with its own backward)
    and `next_functions`, one `(GradFn or AccumulateGrad or None, 0)` per source of the op. Records are of the
    graph's primitive ops, so a composite without a backward of its own shows the last primitive it recorded
    (a reduction without `keepdims` shows the `ReshapeBackward` that drops its axes). For reading only: backward
    runs from the records themselves."""

    __slots__ = ("_record",)

    def __init__(self, record: tuple) -> None:
        self._record = record

    def name(self) -> str:
        op, arg, _ = self._record
        if op is _ALU:
            what = arg.name
        elif op is _REDUCE:
            what = arg[0].name
        elif op is _SCAN:
            what = f"cum{arg[0].name}"
        elif op is _CUSTOM_VJP:
            what = getattr(arg[0], "__qualname__", "custom").split(".<locals>")[0].rsplit(".", 1)[-1]
        elif op is _JOINT and isinstance(arg[0], FunctionCtx):  # named by its Function's class, as PyTorch's
            return type(arg[0]).__name__
        else:
            what = op.name
        return f"{what.title().replace('_', '')}Backward"

    @property
    def next_functions(self) -> tuple[tuple[GradFn | AccumulateGrad | None, int], ...]:
        return tuple((_grad_fn_of(s), 0) for s in self._record[2])

    def __eq__(self, other: object) -> bool:
        return isinstance(other, GradFn) and other._record is self._record

    def __hash__(self) -> int:
        return id(self._record)

    def __repr__(self) -> str:
        return f"<{self.name()} object>"


class AccumulateGrad:
    """The `next_functions` entry of a leaf that requires grad: its gradient accumulates into `variable.grad`."""

    __slots__ = ("variable",)

    def __init__(self, variable: Tensor) -> None:
        self.variable = variable

    def name(self) -> str:
        return "AccumulateGrad"

    next_functions: tuple = ()

    def __repr__(self) -> str:
        return "<AccumulateGrad object>"


def _grad_fn_of(t: Tensor) -> GradFn | AccumulateGrad | None:
    """A source's entry of `next_functions`: its record, or where a leaf's gradient goes, or None (no grad)."""
    if t._ctx is not None:
        return GradFn(t._ctx)
    return AccumulateGrad(t) if t.requires_grad else None


def _graph(roots: Sequence[Tensor]) -> list[Tensor]:
    """Tensors that require grad reachable from `roots` through `_ctx`, each after its sources."""
    return toposort(list(roots), lambda t: [s for s in t._ctx[2] if s.requires_grad] if t._ctx else [])


def _propagate(roots: Sequence[Tensor], seeds: Sequence[Tensor], stop: set[int] | None = None,
               retain: bool = False) -> dict[int, tuple[Tensor, Tensor]]:
    """Gradients of `roots` (seeded with `seeds`): {id(t): (t, gradient)} for every tensor `t` of the
    graph that has no `_ctx` (the leaves), or, when `stop` is given, for the tensors in it (by id).
    Reverse topological order: a tensor's gradient is complete when its turn comes, and is dropped as
    soon as its rule has run. Each gradient passes through its tensor's hooks first; `retain` (backward's)
    keeps it where `retain_grad` asked."""
    with KnownUserLine(user_line()):  # every op the rules make serves the user's call of backward (or grad)
        return _walk(_graph(roots), roots, seeds, stop, retain)


def _walk(order: list[Tensor], roots: Sequence[Tensor], seeds: Sequence[Tensor], stop: set[int] | None,
          retain: bool) -> dict[int, tuple[Tensor, Tensor]]:
    """`_propagate`'s walk over `order` (the graph, each tensor after its sources)."""
    pending: dict[int, Tensor] = {}
    for r, s in zip(roots, seeds):
        pending[id(r)] = pending[id(r)] + s if id(r) in pending else s
    # a joint fires when the last of its members in this graph has its turn: members wait, in arrival order
    waiting: dict[int, int] = {}
    for t in order:
        if t._ctx is not None and t._ctx[0] is _JOINT:
            waiting[id(t._ctx[2])] = waiting.get(id(t._ctx[2]), 0) + 1
    arrived: dict[int, list[Tensor | None]] = {}
    out: dict[int, tuple[Tensor, Tensor]] = {}
    create_graph = is_grad_enabled()
    for t in reversed(order):
        g = pending.pop(id(t), None)
        if g is not None:
            g = _hooked(t, g, retain, create_graph)
            if stop is None or id(t) in stop:
                if stop is not None or t._ctx is None:
                    out[id(t)] = (t, g)
                if stop is not None and len(out) == len(stop):
                    break
        if t._ctx is None:
            continue
        op, arg, srcs = t._ctx
        if op is _JOINT:
            fire, i, n = arg
            grads = arrived.setdefault(id(srcs), [None] * n)
            grads[i] = g
            waiting[id(srcs)] -= 1
            if waiting[id(srcs)] == 0 and any(x is not None for x in grads):
                with KnownUserLine(None):  # a module's hooks, a Function's backward: the user's code
                    fired = fire(grads)
                for s, gs in zip(srcs, fired):
                    if gs is not None and s.dtype.is_float:
                        pending[id(s)] = pending[id(s)] + gs if id(s) in pending else gs
            continue
        if g is None:
            continue
        needs = [s.requires_grad and s._node.dtype.kind == "f" for s in srcs]
        if True not in needs:
            continue
        for s, gs, need in zip(srcs, vjp(op, arg, srcs, t, g, needs), needs):
            if gs is None or not need:
                continue
            # a rule's contract: the source's shape and dtype
            if (a := gs._node).shape != (b := s._node).shape or a.dtype is not b.dtype:
                raise AssertionError(f"autograd: the {op.value} rule gave a gradient of shape {gs.shape} "
                                     f"{gs.dtype.name} for a source of shape {s.shape} {s.dtype.name}")
            key = id(s)
            pending[key] = gs if (held := pending.get(key)) is None else held + gs
    return out


def _seed(t: Tensor, gradient: Any, name: str) -> Tensor:
    from ..creation import asarray
    from ..tensor import Tensor
    if not t.dtype.is_float:
        raise RuntimeError(f"{name}: only floating-point tensors have gradients, this one is {t.dtype.name} "
                           "(comparisons, argmax, integer and bool ops are not differentiable)")
    if gradient is None:
        if t.numel() != 1:
            raise RuntimeError(f"{name}: a gradient can be implied only for a scalar output, this one has "
                               f"shape {t.shape}: pass `gradient` (the same shape)")
        return t._const(1, t.dtype, t.device).broadcast_to(t.shape)
    g = gradient if isinstance(gradient, Tensor) else asarray(gradient, device=t.device)
    if g.shape != t.shape:
        raise RuntimeError(f"{name}: the gradient has shape {g.shape}, the output has shape {t.shape}")
    # recording (create_graph), the gradient is a function of the seed too: a jvp differentiates by it
    return g.cast(t.dtype) if is_grad_enabled() else Tensor(g.node).cast(t.dtype)


def backward(tensor: Tensor, gradient: Any = None, *, retain_graph: bool | None = None, create_graph: bool = False,
             inputs: Tensor | Sequence[Tensor] | None = None) -> None:
    """Accumulate d(tensor)/d(leaf) into `.grad` of every leaf that requires grad, or of each of `inputs` (leaves
    or not) where given, as PyTorch's.

    `gradient` (the vector of the vector-Jacobian product) is needed when `tensor` is not a scalar.
    The gradients are lazy tensors: they are computed with whatever is realized next. The graph is
    always kept, so `backward` may be called again on it (`retain_graph` is accepted for PyTorch's calls);
    `create_graph=True` records the gradients' own ops, for higher derivatives."""
    if not tensor.requires_grad:
        raise RuntimeError("backward: the tensor does not require grad: no input of the ops that made it "
                           "requires grad (call requires_grad_() on the inputs first), or it was made under "
                           "no_grad()")
    from ..tensor import Tensor
    chosen = None if inputs is None else [inputs] if isinstance(inputs, Tensor) else list(inputs)
    if chosen is not None and not all(isinstance(t, Tensor) and t.requires_grad for t in chosen):
        raise RuntimeError("backward: every tensor of inputs= must be a tensor that requires grad")
    with set_grad_enabled(create_graph):
        seed = _seed(tensor, gradient, "backward")
        sources = None if chosen is None else [t._as_source() for t in chosen]
        reached = _propagate([tensor._as_source()], [seed], None if sources is None else {id(s) for s in sources},
                             retain=True)
        if not reached:
            raise RuntimeError("backward: no gradient reaches a tensor that requires grad: the output depends on "
                               "them only through ops that are not differentiable (comparisons, casts from bool "
                               "or integers, argmax, sign, ...)")
        targets = [(leaf, g) for leaf, g in reached.values() if leaf.requires_grad] if chosen is None else \
            [(t, reached[id(s)][1]) for t, s in zip(chosen, sources) if id(s) in reached]
        for leaf, g in targets:
            g = g if create_graph else Tensor(g.node)
            leaf.grad = g if leaf.grad is None else leaf.grad + g


def gradients(outputs: Tensor | Sequence[Tensor], inputs: Tensor | Sequence[Tensor],
              grad_outputs: Any = None, *, create_graph: bool = False,
              allow_unused: bool = False) -> tuple[Tensor, ...]:
    """PyTorch's `torch.autograd.grad`: the gradients of `outputs` with respect to `inputs` (any tensors
    of the graph, leaves or not), returned instead of accumulated into `.grad`."""
    from ..tensor import Tensor
    outs = [outputs] if isinstance(outputs, Tensor) else list(outputs)
    ins = [inputs] if isinstance(inputs, Tensor) else list(inputs)
    if grad_outputs is None:
        gos = [None] * len(outs)
    elif isinstance(outputs, Tensor):
        gos = [grad_outputs]
    else:
        gos = list(grad_outputs)
    for t in outs:
        if not t.requires_grad:
            raise RuntimeError("gradients: an output does not require grad (no input of the ops that made it "
                               "requires grad)")
    with set_grad_enabled(create_graph):
        seeds = [_seed(t, g, "gradients") for t, g in zip(outs, gos)]
        ins_as_sources = [t._as_source() for t in ins]
        got = _propagate([t._as_source() for t in outs], seeds, stop={id(t) for t in ins_as_sources})
    result = []
    for t, source in zip(ins, ins_as_sources):
        g = got[id(source)][1] if id(source) in got else None
        if g is None:  # not reached, or reached only through ops that are not differentiable
            if not allow_unused:
                raise RuntimeError("gradients: an input was not used to compute the outputs (pass "
                                   "allow_unused=True to get a zero gradient for it)")
            g = t._const(0, t.dtype, t.device).broadcast_to(t.shape)
        result.append(g)
    return tuple(result)


def grad(f: Callable[..., Any], argnums: int | Sequence[int] = 0, has_aux: bool = False) -> Callable[..., Any]:
    """JAX-style `grad`: `grad(f)(x, y)` is d f(x, y) / dx for a function `f` returning a scalar tensor.

    `argnums` picks the arguments to differentiate (an int gives one gradient, a tuple a tuple);
    `has_aux=True` means `f` returns `(value, aux)` and `grad` returns `(gradient, aux)`. Gradients keep
    their graph, so `grad(grad(f))` gives second derivatives."""
    from ..creation import asarray
    from ..pytree import flatten, unflatten
    from ..tensor import Tensor

    def leaf(a: Any, i: int) -> Tensor:
        a = a if isinstance(a, Tensor) else asarray(a)
        if not a.dtype.is_float:
            raise TypeError(f"grad: argument {i} holds {a.dtype.name}; only floating-point inputs have gradients")
        if a.requires_grad and is_grad_enabled():  # differentiate through an outer grad as well
            return a * 1.0
        return Tensor(a.node, requires_grad=True)

    @functools.wraps(f)
    def gradient_of_f(*args: Any, **kwargs: Any) -> Any:
        nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
        args = list(args)
        wrt, trees = [], []  # the leaves differentiated by, and per argument its structure and leaf count
        for i in nums:  # a tensor, or a pytree (tuples, lists, dicts) of them, as JAX's
            leaves: list[Any] = []
            structure = flatten(args[i], leaves)
            xs = [leaf(a, i) for a in leaves]
            args[i] = unflatten(structure, iter(xs))
            wrt += xs
            trees.append((structure, len(xs)))
        with enable_grad():
            result = f(*args, **kwargs)
        value, aux = result if has_aux else (result, None)
        if not isinstance(value, Tensor) or value.numel() != 1:
            raise TypeError("grad: f must return a tensor with one element (a scalar)")
        if not value.requires_grad:
            gs = tuple(x._const(0, x.dtype, x.device).broadcast_to(x.shape) for x in wrt)
        else:
            gs = gradients(value, wrt, create_graph=True, allow_unused=True)
        found, per_argument = iter(gs), []
        for structure, count in trees:
            per_argument.append(unflatten(structure, iter([next(found) for _ in range(count)])))
        out = per_argument[0] if isinstance(argnums, int) else tuple(per_argument)
        return (out, aux) if has_aux else out

    return gradient_of_f


def value_and_grad(f: Callable[..., Any], argnums: int | Sequence[int] = 0) -> Callable[..., Any]:
    """`value_and_grad(f)(x)` is `(f(x), grad(f)(x))`, evaluating f once."""
    def value_twice(*args: Any, **kwargs: Any) -> tuple[Any, Any]:
        value = f(*args, **kwargs)
        return value, value

    g = grad(value_twice, argnums, has_aux=True)

    @functools.wraps(f)
    def both(*args: Any, **kwargs: Any) -> Any:
        gr, value = g(*args, **kwargs)
        return value, gr

    return both


# ---- vector-Jacobian products, one per primitive op ------------------------------------------


def _zeros_like(t: Tensor) -> Tensor:
    return t._const(0, t.dtype, t.device).broadcast_to(t.shape)


def _where(cond: Tensor, a: Tensor, b: Tensor | float) -> Tensor:
    from ..tensor import where
    return where(cond, a, b)


def _constant_kind(t: Tensor) -> str | None:
    """'const' or 'scalar' when `t` is a constant or a Python scalar seen through movement ops (relu's
    0, clip's bounds), else None."""
    if t.requires_grad:
        return None
    n = t.node
    while n.op in MOVEMENT:
        n = n.srcs[0]
    return "const" if n.op is Op.CONST else "scalar" if n.op is Op.SCALAR else None


def _pow_vjp(srcs: Sequence[Tensor], out: Tensor, g: Tensor) -> list[Tensor | None]:
    a, b = srcs
    ga = _where(b == 0, 0.0, g * (b * a ** (b - 1)))
    gb = g * _where((a == 0) & (b >= 0), 0.0, out * a.log())
    return [ga, gb]


def _atan2_vjp(srcs: Sequence[Tensor], out: Tensor, g: Tensor) -> list[Tensor | None]:
    """d atan2(y, x) = (x dy - y dx) / (x**2 + y**2), as PyTorch computes it: 0 at the origin, where
    x**2 + y**2 is 0 (or underflows)."""
    y, x = srcs
    recip = (y * y + x * x).reciprocal()
    recip = _where(recip.isinf(), 0.0, recip)
    return [g * x * recip, g * -y * recip]


def _piecewise_constant(srcs: Sequence[Tensor], out: Tensor, g: Tensor) -> list[Tensor | None]:
    """floor, ceil, round, trunc and //: a zero gradient, as PyTorch."""
    return [_zeros_like(s) for s in srcs]


def _slope_sign(x: Tensor) -> Tensor:
    """-1, 0 or 1 by x's sign, 0 for NaN: abs's slope, as PyTorch's (lazytensor's sign(NaN) is NaN)."""
    return (x > 0).cast(x.dtype) - (x < 0).cast(x.dtype)


AluRule = Callable[[Sequence["Tensor"], "Tensor", "Tensor"], "list[Tensor | None]"]
SourceRule = Callable[[Sequence["Tensor"], "Tensor", "Tensor"], "Tensor"]

# One rule per elementwise op that can give a float: `rule(srcs, out, g)` -> the sources' gradients; or, where
# each source's gradient is computed apart from the others', a tuple of one rule per source (`rule(srcs, out, g)`
# -> that source's gradient; None: it has none), so that only the gradients a source needs are built (a
# backward pass through `x / 8` or `x * mask` builds nothing for the 8 or the mask).
ALU_VJP: dict[Alu, AluRule | tuple[SourceRule | None, ...]] = {
    Alu.NEG: lambda s, out, g: [-g],
    Alu.ABS: lambda s, out, g: [g * _slope_sign(s[0])],
    Alu.RECIP: lambda s, out, g: [-g * (out * out)],
    Alu.EXP: lambda s, out, g: [g * out],
    Alu.EXP2: lambda s, out, g: [g * out * math.log(2)],
    Alu.EXPM1: lambda s, out, g: [g * (out + 1)],
    Alu.LOG: lambda s, out, g: [g / s[0]],
    Alu.LOG2: lambda s, out, g: [g / (s[0] * math.log(2))],
    Alu.LOG1P: lambda s, out, g: [g / (s[0] + 1)],
    Alu.SQRT: lambda s, out, g: [g / (out * 2)],
    Alu.SIN: lambda s, out, g: [g * s[0].cos()],
    Alu.COS: lambda s, out, g: [g * -s[0].sin()],
    Alu.TAN: lambda s, out, g: [g * (out * out + 1)],
    Alu.TANH: lambda s, out, g: [g * (1 - out * out)],
    Alu.ERF: lambda s, out, g: [g * ((-(s[0] * s[0])).exp() * (2 / math.sqrt(math.pi)))],
    Alu.FLOOR: _piecewise_constant,
    Alu.CEIL: _piecewise_constant,
    Alu.ROUND: _piecewise_constant,
    Alu.TRUNC: _piecewise_constant,
    Alu.ADD: lambda s, out, g: [g, g],
    Alu.SUB: (lambda s, out, g: g, lambda s, out, g: -g),
    Alu.MUL: (lambda s, out, g: g * s[1], lambda s, out, g: g * s[0]),
    Alu.DIV: (lambda s, out, g: g / s[1], lambda s, out, g: -g * ((s[0] / s[1]) / s[1])),
    Alu.FLOORDIV: _piecewise_constant,
    Alu.MOD: (lambda s, out, g: g, lambda s, out, g: -g * (s[0] / s[1]).floor()),  # a - b * floor(a / b)
    Alu.POW: _pow_vjp,
    Alu.ATAN2: _atan2_vjp,
    Alu.MAX: lambda s, out, g: _extremum_vjp(True, s[0], s[1], g),
    Alu.MIN: lambda s, out, g: _extremum_vjp(False, s[0], s[1], g),
    Alu.WHERE: (None, lambda s, out, g: _where(s[0], g, 0.0), lambda s, out, g: _where(s[0], 0.0, g)),
}

# Elementwise ops whose result is never a float (comparisons give bools; the bitwise and logical ops and the
# shifts take only bools and integers): nothing to differentiate.
NOT_DIFFERENTIABLE = frozenset({Alu.CMPLT, Alu.CMPLE, Alu.CMPEQ, Alu.CMPNE, Alu.AND, Alu.OR, Alu.XOR, Alu.NOT,
                                Alu.LSHIFT, Alu.RSHIFT})


def _alu_vjp(op: Alu, srcs: Sequence[Tensor], out: Tensor, g: Tensor,
             needs: Sequence[bool] | None) -> list[Tensor | None]:
    if (rule := ALU_VJP.get(op)) is None:  # a float result without a rule must not lose its gradient
        raise NotImplementedError(f"autograd: no gradient rule for the elementwise op {op.label}")
    if type(rule) is not tuple:
        return rule(srcs, out, g)
    if needs is None:
        return [None if r is None else r(srcs, out, g) for r in rule]
    return [None if r is None or not need else r(srcs, out, g) for r, need in zip(rule, needs)]


def _extremum_vjp(is_max: bool, a: Tensor, b: Tensor, g: Tensor) -> list[Tensor | None]:
    """maximum/minimum as PyTorch: ties split the gradient in half. Against a constant the op is relu
    (the gradient passes where a > 0 strictly, and where a is NaN, as torch.relu's, which stops it where the
    result is <= 0); against a Python scalar it is clip (where a >= bound, as torch.clamp)."""
    for x, other, i in ((a, b, 0), (b, a, 1)):
        kind = _constant_kind(other)
        if kind is not None:
            if kind == "const":
                keep = ~(x <= other) if is_max else ~(x >= other)
            else:
                keep = x >= other if is_max else x <= other
            out: list[Tensor | None] = [None, None]
            out[i] = _where(keep, g, 0.0)
            return out
    half = _where(a == b, g * 0.5, g)
    a_loses, b_loses = (a < b, a > b) if is_max else (a > b, a < b)
    return [_where(a_loses, 0.0, half), _where(b_loses, 0.0, half)]


def _prod_vjp(x: Tensor, axes: tuple[int, ...], out: Tensor, g: Tensor) -> Tensor:
    """d prod / d x_i is the product of the others. Of the finite nonzero elements that is their product R
    over x_i (`out / x`, as PyTorch), without dividing by a zero or an infinity: R alone where x_i is one,
    times the zeros and infinities among the others (0 where one is a zero, a signed inf where one is an
    infinity, NaN where both are or where a NaN is; as PyTorch's, NaN where x_i is NaN and no zero is among
    the others), so a group of one element gives 1 and an infinite x_i the product of the rest.

    For a narrower float, R and the quotients are taken in float64, whose range holds every R whose
    quotients are finite in x's dtype: |R| = |R / x_i| |x_i| is within 2**+-300 for float32 and bfloat16
    (the running product leaves it only in a group of extremes that cancel). The product of the others is
    then finite and nonzero where R overflows or underflows x's dtype, as PyTorch's without division (its
    rule where a zero is anywhere in the tensor), not `out / x`'s inf or 0 (grad seed 669). A float64's R
    overflows past 1e308 as PyTorch's `out / x` does: no wider dtype holds it, and the exact ways round
    (running products from both ends, mantissas and exponents kept apart) cost the rule several times over."""
    def total(t: Tensor, op: ReduceOp) -> Tensor:
        return t._reduce(op, axes, True, "prod").broadcast_to(x.shape)

    def among_others(mask: Tensor) -> Tensor:
        """How many of each element's others the mask holds for."""
        count = mask.cast(x.dtype)
        return total(count, ReduceOp.SUM) - count

    zero, inf = x == 0, x.isinf()
    finite_nonzero = _where(zero | inf, 1.0, x.cast(float64))  # 1 for the others, so as not to divide by them
    others = (total(finite_nonzero, ReduceOp.PROD) / finite_nonzero).cast(x.dtype)
    zeros, infs, nans = among_others(zero), among_others(inf), among_others(x.isnan())
    inf_signs = _where(inf, _slope_sign(x), 1.0)
    # NaN where a NaN is in the group (x_i too, as PyTorch's out / x): the product stays NaN (grad seed 954005)
    signed = others * total(inf_signs, ReduceOp.PROD) * inf_signs
    others = _where(infs > 0, _where(signed < 0, -math.inf, _where(signed.isnan(), signed, math.inf)), others)
    others = _where(zeros > 0, _where((infs > 0) | (nans > 0), math.nan, 0.0), others)  # grad seed 960757
    return g.broadcast_to(x.shape) * others


def _extremum_reduce_vjp(x: Tensor, axes: tuple[int, ...], out: Tensor, g: Tensor) -> Tensor:
    """The gradient is shared evenly among the elements equal to the extremum, as PyTorch's amax/amin; where
    the extremum is NaN, among the NaNs it came from (as torch.max and max pooling give it to one of them;
    amax's own gradient is NaN everywhere there)."""
    at = out.broadcast_to(x.shape)
    hit = (x == at) | (x.isnan() & at.isnan()) if x.dtype.is_float else x == at
    hit = hit.cast(x.dtype)
    return hit * (g / hit.sum(axes, keepdims=True)).broadcast_to(x.shape)


# One rule per reduction: `rule(x, axes, out, g)` -> x's gradient (the reduced axes are kept in out and g).
REDUCE_VJP: dict[ReduceOp, Callable[[Tensor, tuple[int, ...], Tensor, Tensor], Tensor]] = {
    ReduceOp.SUM: lambda x, axes, out, g: g.broadcast_to(x.shape),
    ReduceOp.PROD: _prod_vjp,
    ReduceOp.MAX: _extremum_reduce_vjp,
    ReduceOp.MIN: _extremum_reduce_vjp,
}


def _scatter_prod_vjp(x: Tensor, axis: int, index: Tensor, updates: Tensor, out: Tensor,
                      g: Tensor) -> list[Tensor | None]:
    """A scatter folded by a product: each factor's gradient is the product of the other factors of its
    element (PyTorch's). The base's is the product of the element's updates; an update's is the element's
    product over it, or, for the one zero update of its element, the product folded again with a 1 for it (a
    division by 0 would not say); with two zeros among the others, it is 0 (the product over it, 0 too)."""
    from ..tensor import where
    ones = x._const(1, x.dtype, x.device).broadcast_to(x.shape)
    zero = updates == 0
    zeros_there = _zeros_like(x)._scatter(axis, index, zero.cast(x.dtype), ReduceOp.SUM)._gather(axis, index)
    single = zero & (zeros_there == 1)
    without = x._scatter(axis, index, where(single, 1, updates).cast(updates.dtype), ReduceOp.PROD)
    over = (g * out)._gather(axis, index) / where(zero, 1, updates).cast(updates.dtype)
    return [g * ones._scatter(axis, index, updates, ReduceOp.PROD), None,
            where(single, (g * without)._gather(axis, index), over).cast(updates.dtype)]


def unshrink(g: Tensor, shape: tuple[int, ...], ranges: Sequence[tuple[int, int, int]]) -> Tensor:
    """The gradient of a strided slice: g scattered back to positions start + i*step, zeros elsewhere.
    A step is undone by interleaving zeros (pad a new axis of size 1 to `step`, then merge it)."""
    for axis, (start, _, step) in enumerate(ranges):
        length = g.shape[axis]
        if step == 1 or length <= 1:
            continue
        s = g.shape
        wide = g.reshape(s[:axis + 1] + (1,) + s[axis + 1:])
        wide = wide.pad([(0, 0)] * (axis + 1) + [(0, step - 1)] + [(0, 0)] * (len(s) - axis - 1))
        wide = wide.reshape(s[:axis] + (length * step,) + s[axis + 1:])
        keep = [(0, n, 1) for n in wide.shape]
        keep[axis] = (0, (length - 1) * step + 1, 1)
        g = wide._shrink(keep)
    return g.pad([(start, n - start - m) for (start, _, _), n, m in zip(ranges, shape, g.shape)])


def vjp(op: Any, arg: Any, srcs: Sequence[Tensor], out: Tensor, g: Tensor,
        needs: Sequence[bool] | None = None) -> list[Tensor | None]:
    """The gradients for `srcs` of the op `(op, arg)` that made `out`, given the gradient `g` of `out`
    (None where a source gets no gradient); for `_CUSTOM_VJP`, `arg` is the op's backward and whether it takes the
    result (see `custom_vjp`). With `needs` (a flag per source), a rule may leave out (None) the gradient of a
    source whose flag is false."""
    if (node := out._node).dtype.kind != "f":
        return [None] * len(srcs)
    if 0 in node.shape:
        return [_zeros_like(s) for s in srcs]
    x = srcs[0]
    if op is _CUSTOM_VJP:
        backward, takes_result = arg
        if is_ours(backward):  # one of lazytensor's own ops (a wrapper of the user's says so itself: vmap's)
            grads = list(backward(g, out) if takes_result else backward(g))
        else:
            with KnownUserLine(None):  # the user's custom backward: its ops are made at its lines
                grads = list(backward(g, out) if takes_result else backward(g))
        if len(grads) != len(srcs):
            raise ValueError(f"autograd: a custom backward gave {len(grads)} gradients for {len(srcs)} "
                                 "sources")
    elif op is _ALU:
        grads = _alu_vjp(arg, srcs, out, g, needs)
    elif op is _CAST:
        grads = [g.cast(x.dtype) if x.dtype.is_float else None]
    elif op is _BITCAST:  # bits are not a differentiable function of a value: what uses them says how
        grads = [None]
    elif op is _CONTIGUOUS:  # a fusion barrier forward is one backward too
        grads = [g.contiguous()]
    elif op is _CHECK:
        grads = [g, None]
    elif op is _REDUCE:
        grads = [REDUCE_VJP[arg[0]](x, arg[1], out, g)]
    elif op is _RESHAPE:  # `g.reshape(x.shape)` without its argument's parsing and checks: the shape is x's
        grads = [g if g._node.shape == (shape := x._node.shape) else g._derive(_RESHAPE, shape, shape)]
    elif op is _PERMUTE:
        inverse = [0] * len(arg)
        for i, a in enumerate(arg):
            inverse[a] = i
        grads = [g.permute(inverse)]
    elif op is _EXPAND:
        axes = tuple(i for i, (n, m) in enumerate(zip(x.shape, arg)) if n == 1 and m != 1)
        grads = [g.sum(axes, keepdims=True) if axes else g]
    elif op is _PAD:
        grads = [g._shrink([(before, before + n, 1) for (before, _), n in zip(arg, x.shape)])]
    elif op is _SHRINK:
        grads = [unshrink(g, x.shape, arg)]
    elif op is _FLIP:
        grads = [g.flip(arg)]
    elif op is _SCAN:  # a running sum's gradient: the running sum of g from the end
        fold, axis = arg
        if fold is not ReduceOp.SUM:
            raise NotImplementedError(f"autograd: no gradient for a running {fold.value}")
        grads = [g.flip(axis)._scan(ReduceOp.SUM, axis).flip(axis)]
    elif op is _LINALG:  # a factorization's rule, beside its routine
        from ..linalg import vjp as linalg_vjp
        grads = linalg_vjp(arg, srcs, out, g)
    elif op is _SORT:  # sorted values (positions are not differentiable): each one's gradient back where it was
        last, (descending, _, take, _) = x.ndim - 1, arg
        order = x.argsort(last, descending)
        grads = [_zeros_like(x)._scatter(last, order[..., list(take)], g, ReduceOp.SUM) if take else
                 _zeros_like(x)._scatter(last, order, g, None, distinct=True)]
    elif op is _GATHER:  # what each element read, added back where it read it
        index = srcs[1]
        grads = [_zeros_like(x)._scatter(arg, index, g, ReduceOp.SUM), None]
    elif op is _SCATTER:
        axis, combine, distinct = arg
        index, updates = srcs[1], srcs[2]
        if combine in (ReduceOp.MAX, ReduceOp.MIN):
            # an extremum's gradient goes evenly to every value equal to it, the base's and the updates' (PyTorch's)
            from ..tensor import where
            x_won, picked = x == out, out._gather(axis, index)
            u_won = updates == picked
            count = x_won.cast(g.dtype) + _zeros_like(g)._scatter(axis, index, u_won.cast(g.dtype), ReduceOp.SUM)
            share = g / count.clip(1, None)
            grads = [where(x_won, share, 0.0), None, where(u_won, share._gather(axis, index), 0.0)]
        elif combine is ReduceOp.PROD:
            grads = _scatter_prod_vjp(x, axis, index, updates, out, g)
        else:
            # a replaced element's gradient goes to its update (to each, where several write it, as PyTorch's)
            base = g if combine is ReduceOp.SUM else g._scatter(axis, index, _zeros_like(updates), None, distinct)
            grads = [base, None, g._gather(axis, index)]
    else:
        raise AssertionError(f"no gradient rule for {op}")
    return [gs if gs is None or gs._node.dtype is s._node.dtype else gs.cast(s._node.dtype)
            for gs, s in zip(grads, srcs)]


__all__ = [
    "ALU_VJP",
    "NOT_DIFFERENTIABLE",
    "REDUCE_VJP",
    "AccumulateGrad",
    "Custom",
    "GradFn",
    "RemovableHandle",
    "backward",
    "custom_vjp",
    "enable_grad",
    "grad",
    "gradients",
    "is_grad_enabled",
    "joint",
    "no_grad",
    "register_hook",
    "retain_grad",
    "set_grad_enabled",
    "value_and_grad",
    "vjp",
]

from .function import Function, FunctionCtx  # last: it builds on joint and no_grad above

__all__ += ["Function", "FunctionCtx"]
