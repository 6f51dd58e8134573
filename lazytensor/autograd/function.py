"""PyTorch's `torch.autograd.Function`: an op written by the user with its own backward.

    class RoundStraightThrough(lt.autograd.Function):
        @staticmethod
        def forward(ctx, x, scale):
            ctx.scale = scale
            return (x * scale).round() / scale

        @staticmethod
        def backward(ctx, g):
            return g, None  # the rounding passes the gradient on; the scale is no tensor

    q = RoundStraightThrough.apply(w, 16.0)

`forward` runs without recording; its outputs (a tensor or a tuple of them) pass through one joint
(`autograd.joint`), so the backward walk calls `backward(ctx, *grad_outputs)` once, with the gradients of all
outputs, as PyTorch's. The `ctx` is an instance of the class `<Name>Backward` made for each subclass, and is
what `y.grad_fn` names. PyTorch's other spelling, `forward(*args)` with `setup_context(ctx, inputs, output)`,
works too.
"""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING, Any

from ..errors import ShapeError
from . import Custom, is_grad_enabled, joint, no_grad

if TYPE_CHECKING:
    from ..graph import Node
    from ..tensor import Tensor


class FunctionCtx:
    """The `ctx` of one call of a `Function`: what `forward` (or `setup_context`) keeps for `backward`.

    `save_for_backward(*tensors)` and `saved_tensors`; `needs_input_grad` (per argument of `apply`, whether
    its gradient is wanted); `mark_non_differentiable(*outputs)`; `set_materialize_grads(False)` (an output
    whose gradient did not arrive is passed as None instead of zeros); `mark_dirty` is accepted. Any other
    attribute is the user's.

    It is also what the joint of the call's outputs fires (`__call__`): the user's `backward` on the outputs'
    gradients. It holds the arguments' handles, not the outputs: an output's record holds it, so holding the
    output would be a reference cycle that keeps the graph (and its memory) until Python's cyclic collector
    runs. A saved output is found again, when backward reads it, through a weak reference to its handle, or
    rebuilt from its record's parts where nothing holds it any more."""

    def __init__(self, function: type[Function], args: tuple, needs_input_grad: tuple[bool, ...]) -> None:
        self.needs_input_grad = needs_input_grad
        self.materialize_grads = True
        self._function = function
        self._args = [(a.shape, a.dtype) if w else None for a, w in zip(args, needs_input_grad)]
        self._non_differentiable: list[Any] = []
        self._saved: tuple = ()
        self._outputs: list[tuple[weakref.ref, Node]] = []  # per differentiable output: its handle, its value
        self._every_output: list[tuple[bool, Node | None]] = []  # per output: differentiable, its value if a tensor
        self._sources: tuple = ()

    def save_for_backward(self, *tensors: Tensor | None) -> None:
        self._saved = tensors

    @property
    def saved_tensors(self) -> tuple:
        return tuple(self._output(t) if type(t) is int else t for t in self._saved)

    def mark_non_differentiable(self, *outputs: Tensor) -> None:
        self._non_differentiable.extend(outputs)

    def mark_dirty(self, *tensors: Tensor) -> None:
        """Accepted for PyTorch's code: an in-place op here rebinds the tensor to a new value anyway."""

    def set_materialize_grads(self, value: bool) -> None:
        self.materialize_grads = value

    def _record(self, args: tuple, every_output: list[Any], differentiable: list[bool]) -> list[Tensor]:
        """The differentiable outputs as tensors whose gradients reach this ctx; what was saved resolved: an
        output as its position, anything else as its autograd handle (a later in-place op on the user's tensor
        rebinds it, not what was saved, and a gradient built from a saved input under create_graph reaches
        that input's own graph)."""
        from ..tensor import Tensor
        self._every_output = [(d, o.node if isinstance(o, Tensor) else None) for o, d in zip(every_output, differentiable)]
        outputs = [o for o, d in zip(every_output, differentiable) if d]
        members = joint([a for a, w in zip(args, self.needs_input_grad) if w], self, values=outputs)
        self._sources = members[0]._ctx[2]
        self._outputs = [(weakref.ref(m._as_source()), m.node) for m in members]

        def resolve(t: Tensor | None) -> Tensor | int | None:
            if t is None:
                return None
            for i, o in enumerate(outputs):
                if o is t:
                    return i
            return t._as_source()
        self._saved = tuple(resolve(t) for t in self._saved)
        return members

    def _output(self, i: int) -> Tensor:
        from ..tensor import Tensor
        handle, node = self._outputs[i]
        if (out := handle()) is None:
            out = Tensor(node, requires_grad=True)
            out._ctx = (Custom.JOINT, (self, i, len(self._outputs)), self._sources)
        return out

    def __call__(self, grads: list[Tensor | None]) -> list[Tensor | None]:
        from ..creation import zeros
        given_out = iter(grads)  # one gradient per output of forward, as PyTorch's: the non-differentiable ones' too
        grads = [next(given_out) if differentiable else None for differentiable, _ in self._every_output]
        if self.materialize_grads:
            grads = [zeros(node.shape, dtype=node.dtype, device=node.device) if g is None and node is not None else g
                     for g, (_, node) in zip(grads, self._every_output)]
        given = self._function.backward(self, *grads)
        given = list(given) if isinstance(given, (tuple, list)) else [given]
        name = f"{self._function.__name__}.backward"
        if len(given) < len(self._args) or any(g is not None for g in given[len(self._args):]):
            raise RuntimeError(f"{name} returned {len(given)} gradients, forward took {len(self._args)} "
                               "arguments: return one per argument (None for one that needs none)")
        out = []
        for i, (g, arg) in enumerate(zip(given, self._args)):
            if arg is None:
                continue
            shape, dtype = arg
            if g is not None:
                try:  # a gradient of a shape the argument broadcasts to is summed back (sum_to_size checks which)
                    g = g.sum_to_size(shape).cast(dtype)
                except ShapeError:
                    raise RuntimeError(f"{name} returned a gradient of shape {g.shape} for argument {i} of shape "
                                       f"{shape}") from None
            out.append(g)
        return out


class Function:
    """Subclass it with static `forward(ctx, *args)` and `backward(ctx, *grad_outputs)` (see the module's
    docstring) and call `apply`. `backward` returns one gradient per argument of `forward` (None for an
    argument that is no tensor or needs none), each of its argument's shape or one that broadcasts to it
    (summed back, as PyTorch's)."""

    _backward_cls: type[FunctionCtx] = FunctionCtx

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls._backward_cls = type(f"{cls.__name__}Backward", (FunctionCtx,), {"__module__": cls.__module__})

    @staticmethod
    def forward(ctx: Any, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError("a Function subclass defines forward (and backward) as static methods")

    @staticmethod
    def backward(ctx: Any, *grad_outputs: Any) -> Any:
        raise NotImplementedError("a Function subclass defines backward to be differentiated")

    @staticmethod
    def setup_context(ctx: Any, inputs: tuple, output: Any) -> None:
        raise NotImplementedError

    @classmethod
    def apply(cls, *args: Any, **kwargs: Any) -> Any:
        """`forward` on `args`, its outputs differentiated by `backward`."""
        from ..tensor import Tensor
        recording = is_grad_enabled()
        wanted = tuple(recording and isinstance(a, Tensor) and a.requires_grad and a.dtype.is_float for a in args)
        ctx = cls._backward_cls(cls, args, wanted)
        separate = cls.setup_context is not Function.setup_context
        with no_grad():
            out = cls.forward(*args, **kwargs) if separate else cls.forward(ctx, *args, **kwargs)
            if separate:
                cls.setup_context(ctx, args, out)
        if not any(wanted):
            return out
        outs = list(out) if isinstance(out, (tuple, list)) else [out]
        differentiable = [isinstance(o, Tensor) and o.dtype.is_float and
                          not any(o is n for n in ctx._non_differentiable) for o in outs]
        if not any(differentiable):
            return out
        members = iter(ctx._record(args, outs, differentiable))
        outs = [next(members) if d else o for o, d in zip(outs, differentiable)]
        return outs if isinstance(out, list) else tuple(outs) if isinstance(out, tuple) else outs[0]
