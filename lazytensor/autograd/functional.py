"""PyTorch's `torch.autograd.functional`: `vjp`, `jvp`, `jacobian` and `hessian` of a function of tensors, built
from reverse-mode gradients (`lazytensor.autograd.gradients`), lazily: the results are graph nodes like any other,
computed when read.

`inputs` is a tensor or a tuple of tensors, and `func` returns a tensor or a tuple of tensors; results have
PyTorch's structure (a tuple per input and per output where they are tuples). `jvp` is the transpose of a vjp
(differentiating `u -> J^T u` by `u`), so it needs the function's gradient to be differentiable, as every op's
here is. `jacobian` differentiates each output element in turn (PyTorch's `vectorize=False`); its rows are built
lazily and computed together.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..creation import ones_like, zeros_like
from ..movement import stack
from ..tensor import Tensor
from . import enable_grad, gradients


def _as_tuple(x: Tensor | tuple[Tensor, ...], what: str) -> tuple[tuple[Tensor, ...], bool]:
    if isinstance(x, Tensor):
        return (x,), False
    if isinstance(x, (tuple, list)) and all(isinstance(t, Tensor) for t in x):
        return tuple(x), True
    raise TypeError(f"autograd.functional: {what} must be a tensor or a tuple of tensors")


def _inputs(inputs: Tensor | tuple[Tensor, ...]) -> tuple[tuple[Tensor, ...], bool]:
    ins, is_tuple = _as_tuple(inputs, "inputs")
    return tuple(Tensor(t.node, requires_grad=True) for t in ins), is_tuple


def _call(func: Callable[..., Any], ins: tuple[Tensor, ...]) -> tuple[tuple[Tensor, ...], bool]:
    with enable_grad():
        return _as_tuple(func(*ins), "func's result")


def _grads(outs: tuple[Tensor, ...], ins: tuple[Tensor, ...], cotangents: tuple[Tensor, ...],
           create_graph: bool) -> tuple[Tensor, ...]:
    """d(sum of outs * cotangents) / d ins; zeros for an input the outputs do not depend on."""
    reached = [(o, c) for o, c in zip(outs, cotangents) if o.requires_grad]
    if not reached:
        return tuple(zeros_like(t) for t in ins)
    grads = gradients([o for o, _ in reached], list(ins), [c for _, c in reached], create_graph=create_graph,
                      allow_unused=True)
    return tuple(zeros_like(t) if g is None else g for g, t in zip(grads, ins))


def _detached(ts: tuple[Tensor, ...], keep: bool) -> tuple[Tensor, ...]:
    return ts if keep else tuple(Tensor(t.node) for t in ts)


def vjp(func: Callable[..., Any], inputs: Tensor | tuple[Tensor, ...], v: Any = None, create_graph: bool = False,
        strict: bool = False) -> tuple[Any, Any]:
    """`(func(inputs), v^T J)`: the vector-Jacobian product, `v` of the outputs' shapes (None for a 1-element
    output: 1)."""
    ins, in_tuple = _inputs(inputs)
    outs, out_tuple = _call(func, ins)
    vs = tuple(ones_like(o) for o in outs) if v is None else _as_tuple(v, "v")[0]
    if v is None and any(o.numel() != 1 for o in outs):
        raise ValueError("vjp: v may be omitted only for a function with one element of output")
    grads = _grads(outs, ins, vs, create_graph)
    outs = _detached(outs, create_graph)
    return (outs if out_tuple else outs[0]), (grads if in_tuple else grads[0])


def jvp(func: Callable[..., Any], inputs: Tensor | tuple[Tensor, ...], v: Any = None, create_graph: bool = False,
        strict: bool = False) -> tuple[Any, Any]:
    """`(func(inputs), J v)`: the Jacobian-vector product, `v` of the inputs' shapes (None for a 1-element input:
    1)."""
    ins, _ = _inputs(inputs)
    vs = tuple(ones_like(t) for t in ins) if v is None else _as_tuple(v, "v")[0]
    if v is None and any(t.numel() != 1 for t in ins):
        raise ValueError("jvp: v may be omitted only for a function of one input element")
    outs, out_tuple = _call(func, ins)
    dummies = tuple(Tensor(zeros_like(o).node, requires_grad=True) for o in outs)
    with enable_grad():
        transposed = _grads(outs, ins, dummies, create_graph=True)  # u -> J^T u, linear in u
        live = [(g, w) for g, w in zip(transposed, vs) if g.requires_grad]
        if live:
            found = gradients([g for g, _ in live], list(dummies), [w for _, w in live], create_graph=create_graph,
                              allow_unused=True)
        else:
            found = [None] * len(dummies)
    products = tuple(zeros_like(o) if g is None else g for g, o in zip(found, outs))
    outs = _detached(outs, create_graph)
    return (outs if out_tuple else outs[0]), (products if out_tuple else products[0])


def jacobian(func: Callable[..., Any], inputs: Tensor | tuple[Tensor, ...], create_graph: bool = False,
             strict: bool = False, vectorize: bool = False, strategy: str = "reverse-mode") -> Any:
    """The Jacobian of `func` at `inputs`: for an output of shape O and an input of shape I, a tensor of shape
    O + I (a tuple over the inputs, inside a tuple over the outputs, where they are tuples)."""
    if strategy != "reverse-mode":
        raise ValueError(f"jacobian: only strategy='reverse-mode' is supported, got {strategy!r}")
    ins, in_tuple = _inputs(inputs)
    outs, out_tuple = _call(func, ins)
    result = []
    for o in outs:
        flat = o.reshape(-1)
        rows = [_grads((flat[i],), ins, (ones_like(flat[i]),), create_graph=True) for i in range(flat.shape[0])]
        per_input = []
        for k, t in enumerate(ins):
            block = stack([r[k] for r in rows]) if rows else zeros_like(t).reshape(0, *t.shape)
            per_input.append(block.reshape(*o.shape, *t.shape))
        per_input = list(_detached(tuple(per_input), create_graph))
        result.append(tuple(per_input) if in_tuple else per_input[0])
    return tuple(result) if out_tuple else result[0]


def hessian(func: Callable[..., Any], inputs: Tensor | tuple[Tensor, ...], create_graph: bool = False,
            strict: bool = False, vectorize: bool = False, outer_jacobian_strategy: str = "reverse-mode") -> Any:
    """The Hessian of a scalar function `func` at `inputs`: shape I + I (a tuple of tuples for a tuple of
    inputs)."""
    ins, in_tuple = _as_tuple(inputs, "inputs")

    def gradient(*xs: Tensor) -> Any:
        outs, _ = _call(func, xs)
        if len(outs) != 1 or outs[0].numel() != 1:
            raise ValueError("hessian: func must return a single tensor of one element")
        grads = _grads(outs, xs, (ones_like(outs[0]),), create_graph=True)
        return grads if in_tuple else grads[0]

    return jacobian(gradient, inputs if in_tuple else ins[0], create_graph=create_graph)


__all__ = ["hessian", "jacobian", "jvp", "vjp"]
