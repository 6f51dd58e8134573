"""Modules: parameters and sub-modules with PyTorch's interface (`torch.nn.Module` and friends)."""
from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, NamedTuple

from .. import dtypes
from ..autograd import RemovableHandle, is_grad_enabled, joint, no_grad
from ..creation import arange, asarray, full, zeros
from ..errors import ShapeError
from ..helpers import KnownUserLine, user_line
from ..tensor import Tensor, to_arguments, where
from . import functional as F
from . import init
from .attention import multi_head_attention
from .convolution import _conv_padding

_PACKAGE = __name__.partition(".")[0] + "."  # the modules of lazytensor's own classes start so


class Parameter(Tensor):
    """A tensor that is a module's parameter: it requires grad, and `Module.parameters()` finds it.

    Optimizers update a parameter by rebinding its node (`p.node = new.node`), so the object a model
    holds stays the same across steps."""

    def __init__(self, data: Any = None, requires_grad: bool = True):
        if data is None:
            data = Tensor([], dtype=dtypes.get_default_dtype())
        super().__init__(data.node if isinstance(data, Tensor) else data, requires_grad=requires_grad)

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()

    __str__ = __repr__


class _IncompatibleKeys(NamedTuple):
    missing_keys: list[str]
    unexpected_keys: list[str]


def _differentiable(x: Any) -> bool:
    return isinstance(x, Tensor) and x.requires_grad and x.dtype.is_float


class _BackwardCall:
    """One call of a module with backward hooks: its inputs and outputs pass through joints (`autograd.joint`),
    so the hooks see all their gradients at once, as PyTorch's `register_full_backward_hook`: one per
    positional argument (output), None for one that is no tensor or requires no grad."""

    def __init__(self, module: Module, hooks: dict[str, OrderedDict]):
        self.module, self.hooks = module, hooks
        self.grad_output: tuple[Tensor | None, ...] = ()
        self.inputs: list[bool] = []  # for each positional argument: whether it passes through the joint
        self.outputs: list[bool] = []  # likewise for each output

    def wrap_inputs(self, args: tuple) -> tuple:
        self.inputs = [_differentiable(a) for a in args]
        wrapped = [a for a, w in zip(args, self.inputs) if w]
        if not wrapped:
            return args
        members = iter(joint(wrapped, self._fire_inputs))
        return tuple(next(members) if w else a for a, w in zip(args, self.inputs))

    def wrap_outputs(self, out: Any) -> Any:
        outs = [out] if isinstance(out, Tensor) else list(out) if isinstance(out, (tuple, list)) else []
        self.outputs = [_differentiable(o) for o in outs]
        if not any(self.outputs):
            return out
        members = iter(joint([o for o, w in zip(outs, self.outputs) if w], self._fire_outputs))
        outs = [next(members) if w else o for o, w in zip(outs, self.outputs)]
        return outs[0] if isinstance(out, Tensor) else type(out)(outs)

    def _fire_outputs(self, grads: list[Tensor | None]) -> list[Tensor | None]:
        it = iter(grads)
        grad_output = tuple(next(it) if o else None for o in self.outputs)
        for hook, _ in list(self.hooks["backward_pre"].values()):
            result = hook(self.module, grad_output)
            if result is not None:
                grad_output = tuple(result) if isinstance(result, (tuple, list)) else (result,)
        self.grad_output = grad_output
        if not any(self.inputs):  # no input joint to wait for: PyTorch calls the hooks with no input gradients
            self._call_hooks(tuple(None for _ in self.inputs))
        return [g for g, o in zip(grad_output, self.outputs) if o]

    def _fire_inputs(self, grads: list[Tensor | None]) -> list[Tensor | None]:
        it = iter(grads)
        grad_input = self._call_hooks(tuple(next(it) if w else None for w in self.inputs))
        return [g for g, w in zip(grad_input, self.inputs) if w]

    def _call_hooks(self, grad_input: tuple[Tensor | None, ...]) -> tuple[Tensor | None, ...]:
        for hook, _ in list(self.hooks["backward"].values()):
            result = hook(self.module, grad_input, self.grad_output)
            if result is not None:
                grad_input = tuple(result) if isinstance(result, (tuple, list)) else (result,)
                if len(grad_input) != len(self.inputs):
                    raise RuntimeError(f"backward hook: returned {len(grad_input)} gradients for "
                                       f"{len(self.inputs)} arguments")
        return grad_input


class Module:
    """Base class of layers and models: set Parameters, Modules and buffers as attributes, define
    `forward`, and call the module."""

    training: bool

    def __init__(self) -> None:
        object.__setattr__(self, "_parameters", OrderedDict())
        object.__setattr__(self, "_buffers", OrderedDict())
        object.__setattr__(self, "_non_persistent", set())
        object.__setattr__(self, "_modules", OrderedDict())
        object.__setattr__(self, "training", True)

    # ---- attributes ---------------------------------------------------------------------------

    def __setattr__(self, name: str, value: Any) -> None:
        d = self.__dict__
        if "_parameters" not in d:
            raise AttributeError(f"cannot assign {name!r} before Module.__init__() is called")
        params, buffers, modules = self._parameters, self._buffers, self._modules
        if isinstance(value, (Parameter, Module)):
            for table in (params, buffers, modules, d):
                table.pop(name, None)
            (params if isinstance(value, Parameter) else modules)[name] = value
        elif name in params:
            if value is not None:
                raise TypeError(f"cannot assign {type(value).__name__} as parameter {name!r} (use nn.Parameter "
                                "or None)")
            params[name] = None
        elif name in buffers:
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(f"cannot assign {type(value).__name__} to buffer {name!r} (a Tensor or None)")
            buffers[name] = value
        elif name in modules and value is None:
            modules[name] = None
        else:
            object.__setattr__(self, name, value)

    def __getattr__(self, name: str) -> Any:
        d = self.__dict__
        for table in ("_parameters", "_buffers", "_modules"):
            if table in d and name in d[table]:
                return d[table][name]
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def __delattr__(self, name: str) -> None:
        for table in (self._parameters, self._buffers, self._modules):
            if name in table:
                del table[name]
                return
        object.__delattr__(self, name)

    def register_parameter(self, name: str, param: Parameter | None) -> None:
        if param is None:
            self._parameters[name] = None
        else:
            setattr(self, name, param if isinstance(param, Parameter) else Parameter(param))

    def register_buffer(self, name: str, tensor: Tensor | None, persistent: bool = True) -> None:
        """A tensor that is part of the module's state (saved by state_dict) but not a parameter."""
        self.__dict__.pop(name, None)
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent.discard(name)
        else:
            self._non_persistent.add(name)

    def register_module(self, name: str, module: Module | None) -> None:
        self._modules[name] = module

    add_module = register_module

    # ---- traversal -----------------------------------------------------------------------------

    def named_modules(self, memo: set[int] | None = None, prefix: str = "") -> Iterator[tuple[str, Module]]:
        memo = set() if memo is None else memo
        stack: list[tuple[str, Module]] = [(prefix, self)]
        while stack:  # depth first, in registration order
            name, m = stack.pop()
            if id(m) in memo:
                continue
            memo.add(id(m))
            yield name, m
            children = [(f"{name}.{k}" if name else k, c) for k, c in m._modules.items() if c is not None]
            stack.extend(reversed(children))

    def modules(self) -> Iterator[Module]:
        for _, m in self.named_modules():
            yield m

    def named_children(self) -> Iterator[tuple[str, Module]]:
        for k, m in self._modules.items():
            if m is not None:
                yield k, m

    def children(self) -> Iterator[Module]:
        for _, m in self.named_children():
            yield m

    def _named(self, table: str, prefix: str, recurse: bool) -> Iterator[tuple[str, Tensor]]:
        seen: set[int] = set()
        mods = self.named_modules(prefix=prefix) if recurse else iter([(prefix, self)])
        for mname, m in mods:
            for k, t in getattr(m, table).items():
                if t is None or id(t) in seen:
                    continue
                seen.add(id(t))
                yield (f"{mname}.{k}" if mname else k), t

    def named_parameters(self, prefix: str = "", recurse: bool = True) -> Iterator[tuple[str, Parameter]]:
        yield from self._named("_parameters", prefix, recurse)  # type: ignore[misc]

    def parameters(self, recurse: bool = True) -> Iterator[Parameter]:
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_buffers(self, prefix: str = "", recurse: bool = True) -> Iterator[tuple[str, Tensor]]:
        yield from self._named("_buffers", prefix, recurse)

    def buffers(self, recurse: bool = True) -> Iterator[Tensor]:
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    def apply(self, fn: Callable[[Module], None]) -> Module:
        """`fn` applied to every sub-module, then to this one (each child's sub-modules before it, as
        PyTorch's: a module that two parents hold is visited under each)."""
        for m in self.children():
            m.apply(fn)
        fn(self)
        return self

    # ---- state ---------------------------------------------------------------------------------

    def state_dict(self, prefix: str = "") -> OrderedDict[str, Tensor]:
        """Parameters and persistent buffers by dotted name, as detached tensors of their current value."""
        out: OrderedDict[str, Tensor] = OrderedDict()
        for mname, m in self.named_modules(prefix=prefix.rstrip(".")):
            base = f"{mname}." if mname else ""
            for k, p in m._parameters.items():
                if p is not None:
                    out[base + k] = Tensor(p.node)
            for k, b in m._buffers.items():
                if b is not None and k not in m._non_persistent:
                    out[base + k] = Tensor(b.node)
        return out

    def load_state_dict(self, state_dict: Any, strict: bool = True) -> _IncompatibleKeys:
        """Copy values (lazytensor tensors, NumPy arrays, torch tensors through NumPy, lists) into the
        parameters and buffers of the same names; shapes must match."""
        own: dict[str, Tensor] = {}
        for mname, m in self.named_modules():
            base = f"{mname}." if mname else ""
            for k, t in [*m._parameters.items(), *((k, b) for k, b in m._buffers.items()
                                                  if k not in m._non_persistent)]:
                if t is not None:
                    own[base + k] = t
        missing = [k for k in own if k not in state_dict]
        unexpected = [k for k in state_dict if k not in own]
        if strict and (missing or unexpected):
            raise KeyError(f"load_state_dict: missing keys {missing}, unexpected keys {unexpected}")
        values = {}
        for k, t in own.items():
            if k not in state_dict:
                continue
            v = state_dict[k]
            if not isinstance(v, Tensor):
                v = v.detach().cpu().numpy() if hasattr(v, "detach") else v
            v = asarray(v, dtype=t.dtype, device=t.device)
            if v.shape != t.shape:
                raise ShapeError(f"load_state_dict: {k} has shape {v.shape} in the state dict and {t.shape} "
                                 "in the module")
            values[k] = v
        with no_grad():
            for k, v in values.items():
                own[k].node = v.node
        return _IncompatibleKeys(missing, unexpected)

    # ---- modes and conversions -------------------------------------------------------------------

    def train(self, mode: bool = True) -> Module:
        for m in self.modules():
            object.__setattr__(m, "training", mode)
        return self

    def eval(self) -> Module:
        return self.train(False)

    def requires_grad_(self, requires_grad: bool = True) -> Module:
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        for p in self.parameters():
            if set_to_none or p.grad is None:
                p.grad = None
            else:
                p.grad = p.grad * 0.0

    def to(self, *args: Any, dtype: Any = None, device: Any = None, non_blocking: bool = False) -> Module:
        """Cast floating-point parameters and buffers to a dtype (`model.to(lt.float64)`) and/or move them, and
        their gradients, to a device (`model.to("cuda")`, `model.to(lt.device("cuda"))`), in place."""
        device, dtype = to_arguments(args, device, dtype)
        if dtype is not None:
            dt = dtypes.to_dtype(dtype)
            with no_grad():
                for t in [*self.parameters(), *self.buffers()]:
                    if t.dtype.is_float:
                        t.node = t.cast(dt).realize().node
        if device is not None:  # in place, as PyTorch's: each parameter (and its gradient) is moved, keeping its object
            for t in [*self.parameters(), *self.buffers()]:
                moved = t.to(device)  # raises for devices it cannot copy to
                if moved is not t:
                    t.node = moved.node
                    if t.grad is not None:
                        t.grad = t.grad.to(device)
        return self

    def float(self) -> Module:
        return self.to(dtypes.float32)

    def half(self) -> Module:
        return self.to(dtypes.float16)

    def bfloat16(self) -> Module:
        return self.to(dtypes.bfloat16)

    def double(self) -> Module:
        return self.to(dtypes.float64)

    def cpu(self) -> Module:
        """The parameters and buffers moved to the CPU (in place, as `to`)."""
        return self.to(device="cpu")

    def cuda(self, device: int | str | None = None) -> Module:
        """The parameters and buffers moved to a GPU (`cuda`, or `cuda:N` for `device` N), in place."""
        return self.to(device="cuda" if device is None else device if isinstance(device, str) else f"cuda:{device}")

    def get_submodule(self, target: str) -> Module:
        """The module at a dotted path (`"encoder.layers.0"`); "" is this one."""
        module = self
        for name in target.split(".") if target else []:
            if module._modules.get(name) is None:
                raise AttributeError(f"{type(module).__name__} has no submodule {name!r} (in {target!r})")
            module = module._modules[name]
        return module

    def get_parameter(self, target: str) -> Parameter:
        """The parameter at a dotted path (`"encoder.layers.0.linear1.weight"`)."""
        owner, _, name = target.rpartition(".")
        module = self.get_submodule(owner)
        if name not in module._parameters:
            raise AttributeError(f"{type(module).__name__} has no parameter {name!r} (in {target!r})")
        return module._parameters[name]

    def get_buffer(self, target: str) -> Tensor:
        """The buffer at a dotted path (`"bn1.running_mean"`)."""
        owner, _, name = target.rpartition(".")
        module = self.get_submodule(owner)
        if name not in module._buffers:
            raise AttributeError(f"{type(module).__name__} has no buffer {name!r} (in {target!r})")
        return module._buffers[name]

    # ---- calling ------------------------------------------------------------------------------------

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(f"{type(self).__name__} does not define forward()")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        hooks = self.__dict__.get("_hooks")
        if not hooks:
            if not self._modules and not kwargs and type(self).__module__.startswith(_PACKAGE) \
                    and all(type(a) is Tensor for a in args):
                # one of lazytensor's own modules without children, on plain tensors, runs none of the user's
                # code: its ops are all made at the user's call of it
                with KnownUserLine(user_line()):
                    return self.forward(*args)
            return self.forward(*args, **kwargs)
        for hook, with_kwargs in list(hooks["pre"].values()):
            result = hook(self, args, kwargs) if with_kwargs else hook(self, args)
            if result is not None:
                if with_kwargs:
                    args, kwargs = result
                else:
                    args = result if isinstance(result, tuple) else (result,)
        backward = _BackwardCall(self, hooks) if (hooks["backward"] or hooks["backward_pre"]) and \
            is_grad_enabled() else None
        if backward is not None:
            args = backward.wrap_inputs(args)
        out = self.forward(*args, **kwargs)
        for hook, with_kwargs in list(hooks["post"].values()):
            result = hook(self, args, kwargs, out) if with_kwargs else hook(self, args, out)
            if result is not None:
                out = result
        return out if backward is None else backward.wrap_outputs(out)

    def register_forward_pre_hook(self, hook: Callable[..., Any], *, prepend: bool = False,
                                  with_kwargs: bool = False) -> RemovableHandle:
        """Run `hook(module, args)` (with `with_kwargs`, `hook(module, args, kwargs)`) before each forward; what
        it returns, if not None, replaces the arguments (`(args, kwargs)` with `with_kwargs`). PyTorch's."""
        return self._add_hook("pre", hook, prepend, with_kwargs)

    def register_forward_hook(self, hook: Callable[..., Any], *, prepend: bool = False,
                              with_kwargs: bool = False) -> RemovableHandle:
        """Run `hook(module, args, output)` (with `with_kwargs`, `hook(module, args, kwargs, output)`) after each
        forward; what it returns, if not None, replaces the output. PyTorch's."""
        return self._add_hook("post", hook, prepend, with_kwargs)

    def register_full_backward_hook(self, hook: Callable[..., Any], prepend: bool = False) -> RemovableHandle:
        """Run `hook(module, grad_input, grad_output)` when the gradients with respect to the module's positional
        arguments are computed (each call's): tuples with one gradient per argument (None for one that is no
        tensor or needs none) and per output; what it returns, if not None, replaces `grad_input`. PyTorch's."""
        return self._add_hook("backward", hook, prepend, False)

    def register_full_backward_pre_hook(self, hook: Callable[..., Any], prepend: bool = False) -> RemovableHandle:
        """Run `hook(module, grad_output)` when the gradients with respect to the module's outputs are computed,
        before those of its inputs; what it returns, if not None, replaces `grad_output`. PyTorch's."""
        return self._add_hook("backward_pre", hook, prepend, False)

    def _add_hook(self, kind: str, hook: Callable[..., Any], prepend: bool, with_kwargs: bool) -> RemovableHandle:
        hooks = self.__dict__.get("_hooks")
        if hooks is None:
            hooks = {"pre": OrderedDict(), "post": OrderedDict(), "backward": OrderedDict(),
                     "backward_pre": OrderedDict()}
            object.__setattr__(self, "_hooks", hooks)
        handle = RemovableHandle(hooks[kind])
        hooks[kind][handle.id] = (hook, with_kwargs)
        if prepend:
            hooks[kind].move_to_end(handle.id, last=False)
        return handle

    def extra_repr(self) -> str:
        return ""

    def __repr__(self) -> str:
        lines = [f"({k}): " + repr(m).replace("\n", "\n  ") for k, m in self._modules.items()]
        head = f"{type(self).__name__}({self.extra_repr()}"
        if not lines:
            return head + ")"
        return head + "\n  " + "\n  ".join(lines) + "\n)"

    def __dir__(self) -> list[str]:
        return sorted({*super().__dir__(), *self._parameters, *self._buffers, *self._modules})


# ---- containers ----------------------------------------------------------------------------------


class _ModuleSequence(Module):
    """What `Sequential` and `ModuleList` share: their modules indexed as a list, PyTorch's way (keys "0", "1", ...
    renumbered after an insertion or a deletion)."""

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._modules.values())

    def _index(self, i: int) -> int:
        n = len(self._modules)
        if not -n <= i < n:
            raise IndexError(f"{type(self).__name__}: index {i} is out of range for {n} modules")
        return i % n

    def _renumber(self, modules: list[Module]) -> None:
        self._modules.clear()
        for i, m in enumerate(modules):
            self._modules[str(i)] = m

    def __setitem__(self, i: int, module: Module) -> None:
        self._modules[list(self._modules)[self._index(i)]] = module

    def __delitem__(self, i: int | slice) -> None:
        modules = list(self._modules.values())
        del modules[i if isinstance(i, slice) else self._index(i)]
        self._renumber(modules)

    def append(self, module: Module) -> Any:
        self.register_module(str(len(self._modules)), module)
        return self

    def extend(self, modules: Iterable[Module]) -> Any:
        for m in modules:
            self.append(m)
        return self

    def insert(self, index: int, module: Module) -> None:
        modules = list(self._modules.values())
        modules.insert(index, module)
        self._renumber(modules)

    def pop(self, index: int = -1) -> Module:
        module = self[index]
        del self[index]
        return module


class Sequential(_ModuleSequence):
    """Modules applied in order: `Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))`, or named:
    `Sequential(OrderedDict(fc=nn.Linear(4, 8), act=nn.ReLU()))`."""

    def __init__(self, *modules: Any):
        super().__init__()
        if len(modules) == 1 and isinstance(modules[0], OrderedDict):
            for k, m in modules[0].items():
                self.register_module(k, m)
        else:
            for i, m in enumerate(modules):
                self.register_module(str(i), m)

    def __getitem__(self, i: int | slice) -> Any:
        if isinstance(i, slice):
            return Sequential(OrderedDict(list(self._modules.items())[i]))
        return list(self._modules.values())[self._index(i)]

    def forward(self, x: Any) -> Any:
        for m in self._modules.values():
            x = m(x)
        return x


class ModuleList(_ModuleSequence):
    """Modules in a list, registered (their parameters are the owner's): `ModuleList([nn.Linear(4, 4)] * 3)`."""

    def __init__(self, modules: Iterable[Module] = ()):
        super().__init__()
        self.extend(modules)

    def __getitem__(self, i: int | slice) -> Any:
        if isinstance(i, slice):
            return ModuleList(list(self._modules.values())[i])
        return list(self._modules.values())[self._index(i)]

    def __add__(self, other: Iterable[Module]) -> ModuleList:
        return ModuleList([*self, *other])

    def __iadd__(self, other: Iterable[Module]) -> ModuleList:
        return self.extend(other)


class _NamedMembers(Module):
    """What `ModuleDict` and `ParameterDict` share: their members by name, in insertion order, as a dict's
    methods over one of the module's tables (`_table`), each added through `_add` (which registers it)."""
    _table: str

    def __init__(self, members: Mapping[str, Any] | Iterable[tuple[str, Any]] | None = None):
        super().__init__()
        if members is not None:
            self.update(members)

    def _members(self) -> OrderedDict[str, Any]:
        return getattr(self, self._table)

    def _add(self, key: str, value: Any) -> None:
        raise NotImplementedError

    def __getitem__(self, key: str) -> Any:
        return self._members()[key]

    def __setitem__(self, key: str, value: Any) -> None:
        self._add(key, value)

    def __delitem__(self, key: str) -> None:
        del self._members()[key]

    def __len__(self) -> int:
        return len(self._members())

    def __iter__(self) -> Iterator[str]:
        return iter(self._members())

    def __contains__(self, key: object) -> bool:
        return key in self._members()

    def keys(self) -> Any:
        return self._members().keys()

    def items(self) -> Any:
        return self._members().items()

    def values(self) -> Any:
        return self._members().values()

    def update(self, members: Mapping[str, Any] | Iterable[tuple[str, Any]]) -> None:
        for key, value in (members.items() if isinstance(members, Mapping) else members):
            self._add(key, value)

    def pop(self, key: str) -> Any:
        return self._members().pop(key)

    def clear(self) -> None:
        self._members().clear()


class ModuleDict(_NamedMembers):
    """Modules by name, registered (PyTorch's `nn.ModuleDict`): `ModuleDict({"act": nn.ReLU()})`, in insertion
    order."""
    _table = "_modules"

    def _add(self, key: str, value: Any) -> None:
        self.register_module(key, value)


class ParameterDict(_NamedMembers):
    """Parameters by name, registered (PyTorch's `nn.ParameterDict`); tensors become Parameters."""
    _table = "_parameters"

    def _add(self, key: str, value: Any) -> None:
        self.register_parameter(key, value)


class ParameterList(Module):
    """Parameters in a list, registered as "0", "1", ... (PyTorch's `nn.ParameterList`); tensors become
    Parameters."""

    def __init__(self, values: Iterable[Any] = ()):
        super().__init__()
        self.extend(values)

    def __getitem__(self, i: int) -> Parameter:
        return list(self._parameters.values())[i]

    def __setitem__(self, i: int, value: Any) -> None:
        self.register_parameter(list(self._parameters)[i], value)

    def __len__(self) -> int:
        return len(self._parameters)

    def __iter__(self) -> Iterator[Parameter]:
        return iter(self._parameters.values())

    def append(self, value: Any) -> ParameterList:
        self.register_parameter(str(len(self._parameters)), value)
        return self

    def extend(self, values: Iterable[Any]) -> ParameterList:
        for v in values:
            self.append(v)
        return self


# ---- layers ----------------------------------------------------------------------------------------


class Identity(Module):
    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__()

    def forward(self, x: Tensor) -> Tensor:
        return x


class Linear(Module):
    """y = x W^T + b, W of shape (out_features, in_features); W and b uniform in +-1/sqrt(in_features)
    (PyTorch's kaiming_uniform_(a=sqrt(5)) and its bias rule)."""

    def __init__(self, in_features: int, out_features: int, bias: bool = True, dtype: Any = None):
        super().__init__()
        self.in_features, self.out_features = in_features, out_features
        dt = dtypes.dtype_or_default(dtype)
        self.weight = _parameter((out_features, in_features), dt)
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if bias:
            bound = 1 / math.sqrt(in_features) if in_features > 0 else 0
            self.bias = _parameter((out_features,), dt)
            init.uniform_(self.bias, -bound, bound)
        else:
            self.register_parameter("bias", None)

    def forward(self, x: Tensor) -> Tensor:
        return F.linear(x, self.weight, self.bias)

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"


def _parameter(shape: tuple[int, ...], dtype: Any) -> Parameter:
    return Parameter(zeros(*shape, dtype=dtype).realize())


class _ConvNd(Module):
    """A convolution over `_nd` spatial axes with stride, padding (int, tuple, 'same', 'valid'), dilation,
    groups and padding_mode ('zeros', 'reflect', 'replicate', 'circular'); weight (out, in / groups, *kernel),
    initialized as PyTorch (uniform in +-1/sqrt(fan_in)). The transposed ones add output_padding, take their
    weight as (in, out / groups, *kernel) and pad only with zeros."""

    _nd = 2
    _transposed = False

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1, padding: Any = 0,
                 dilation: Any = 1, groups: int = 1, bias: bool = True, padding_mode: str = "zeros",
                 dtype: Any = None):
        super().__init__()
        name, nd = type(self).__name__, self._nd
        modes = ("zeros",) if self._transposed else ("zeros", "reflect", "replicate", "circular")
        if padding_mode not in modes:
            raise ValueError(f"{name}: padding_mode must be one of {modes}, got {padding_mode!r}")
        if groups <= 0 or in_channels % groups or out_channels % groups:
            raise ValueError(f"{name}: in_channels ({in_channels}) and out_channels ({out_channels}) must be "
                             f"divisible by groups ({groups})")
        if isinstance(padding, str) and self._transposed:
            raise ValueError(f"{name}: padding must be an int or a tuple, got {padding!r}")
        self.in_channels, self.out_channels, self.groups = in_channels, out_channels, groups
        self.kernel_size = F._pair(kernel_size, nd, name)
        self.stride, self.dilation = F._pair(stride, nd, name), F._pair(dilation, nd, name)
        self.padding = padding if isinstance(padding, str) else F._pair(padding, nd, name)
        self.output_padding = (0,) * nd
        self.padding_mode = padding_mode
        dt = dtypes.dtype_or_default(dtype)
        shape = (in_channels, out_channels // groups) if self._transposed else (out_channels, in_channels // groups)
        self.weight = _parameter((*shape, *self.kernel_size), dt)
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if bias:
            fan_in = shape[1] * math.prod(self.kernel_size)
            bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
            self.bias = _parameter((out_channels,), dt)
            init.uniform_(self.bias, -bound, bound)
        else:
            self.register_parameter("bias", None)

    def forward(self, x: Tensor) -> Tensor:
        conv = (F.conv1d, F.conv2d, F.conv3d)[self._nd - 1]
        if self.padding_mode == "zeros":
            return conv(x, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups)
        pads = _conv_padding(self.padding, self.kernel_size, self.dilation, self.stride, type(self).__name__)
        x = F.pad(x, [p for before, after in reversed(pads) for p in (before, after)], self.padding_mode)
        return conv(x, self.weight, self.bias, self.stride, 0, self.dilation, self.groups)

    def extra_repr(self) -> str:
        return (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}, "
                f"padding={self.padding}, dilation={self.dilation}, groups={self.groups}")


class Conv1d(_ConvNd):
    _nd = 1


class Conv2d(_ConvNd):
    _nd = 2


class Conv3d(_ConvNd):
    _nd = 3


class _ConvTransposeNd(_ConvNd):
    _transposed = True

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1, padding: Any = 0,
                 output_padding: Any = 0, groups: int = 1, bias: bool = True, dilation: Any = 1,
                 padding_mode: str = "zeros", dtype: Any = None):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias,
                         padding_mode, dtype)
        self.output_padding = F._pair(output_padding, self._nd, type(self).__name__)

    def forward(self, x: Tensor, output_size: Sequence[int] | None = None) -> Tensor:
        """The transposed convolution; `output_size` (the spatial sizes, or with the leading axes) picks the
        output_padding that gives it, as PyTorch."""
        extra = self.output_padding
        if output_size is not None:
            want = list(output_size)[-self._nd:]
            base = [(i - 1) * s - 2 * p + d * (k - 1) + 1 for i, s, p, d, k in
                    zip(x.shape[-self._nd:], self.stride, self.padding, self.dilation, self.kernel_size)]
            extra = tuple(w - b for w, b in zip(want, base))
        conv = (F.conv_transpose1d, F.conv_transpose2d, F.conv_transpose3d)[self._nd - 1]
        return conv(x, self.weight, self.bias, self.stride, self.padding, extra, self.groups, self.dilation)


class ConvTranspose1d(_ConvTransposeNd):
    _nd = 1


class ConvTranspose2d(_ConvTransposeNd):
    _nd = 2


class ConvTranspose3d(_ConvTransposeNd):
    _nd = 3


class Unfold(Module):
    """`F.unfold` with fixed options (PyTorch's `nn.Unfold`)."""

    def __init__(self, kernel_size: Any, dilation: Any = 1, padding: Any = 0, stride: Any = 1):
        super().__init__()
        self.kernel_size, self.dilation, self.padding, self.stride = kernel_size, dilation, padding, stride

    def forward(self, x: Tensor) -> Tensor:
        return F.unfold(x, self.kernel_size, self.dilation, self.padding, self.stride)


class Fold(Module):
    """`F.fold` with fixed options (PyTorch's `nn.Fold`)."""

    def __init__(self, output_size: Any, kernel_size: Any, dilation: Any = 1, padding: Any = 0, stride: Any = 1):
        super().__init__()
        self.output_size, self.kernel_size = output_size, kernel_size
        self.dilation, self.padding, self.stride = dilation, padding, stride

    def forward(self, x: Tensor) -> Tensor:
        return F.fold(x, self.output_size, self.kernel_size, self.dilation, self.padding, self.stride)


class _MaxPoolNd(Module):
    _nd = 2

    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0, dilation: Any = 1,
                 return_indices: bool = False, ceil_mode: bool = False):
        super().__init__()
        self.kernel_size, self.stride, self.padding = kernel_size, stride, padding
        self.dilation, self.ceil_mode, self.return_indices = dilation, ceil_mode, return_indices

    def forward(self, x: Tensor) -> Any:
        pool = (F.max_pool1d, F.max_pool2d, F.max_pool3d)[self._nd - 1]
        return pool(x, self.kernel_size, self.stride, self.padding, self.dilation, self.ceil_mode,
                    self.return_indices)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class MaxPool1d(_MaxPoolNd):
    _nd = 1


class MaxPool2d(_MaxPoolNd):
    _nd = 2


class MaxPool3d(_MaxPoolNd):
    _nd = 3


class _MaxUnpoolNd(Module):
    _nd = 2

    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0):
        super().__init__()
        self.kernel_size, self.stride, self.padding = kernel_size, stride, padding

    def forward(self, x: Tensor, indices: Tensor, output_size: Any = None) -> Tensor:
        unpool = (F.max_unpool1d, F.max_unpool2d, F.max_unpool3d)[self._nd - 1]
        return unpool(x, indices, self.kernel_size, self.stride, self.padding, output_size)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class MaxUnpool1d(_MaxUnpoolNd):
    _nd = 1


class MaxUnpool2d(_MaxUnpoolNd):
    _nd = 2


class MaxUnpool3d(_MaxUnpoolNd):
    _nd = 3


class AvgPool1d(Module):
    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0, ceil_mode: bool = False,
                 count_include_pad: bool = True):
        super().__init__()
        self.kernel_size, self.stride, self.padding = kernel_size, stride, padding
        self.ceil_mode, self.count_include_pad = ceil_mode, count_include_pad

    def forward(self, x: Tensor) -> Tensor:
        return F.avg_pool1d(x, self.kernel_size, self.stride, self.padding, self.ceil_mode, self.count_include_pad)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AvgPool2d(Module):
    _nd = 2

    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0, ceil_mode: bool = False,
                 count_include_pad: bool = True, divisor_override: int | None = None):
        super().__init__()
        self.kernel_size, self.stride, self.padding = kernel_size, stride, padding
        self.ceil_mode, self.count_include_pad, self.divisor_override = ceil_mode, count_include_pad, divisor_override

    def forward(self, x: Tensor) -> Tensor:
        pool = F.avg_pool2d if self._nd == 2 else F.avg_pool3d
        return pool(x, self.kernel_size, self.stride, self.padding, self.ceil_mode, self.count_include_pad,
                    self.divisor_override)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AvgPool3d(AvgPool2d):
    _nd = 3


class AdaptiveAvgPool2d(Module):
    _nd = 2

    def __init__(self, output_size: Any):
        super().__init__()
        self.output_size = output_size

    def forward(self, x: Tensor) -> Tensor:
        pool = (F.adaptive_avg_pool1d, F.adaptive_avg_pool2d, F.adaptive_avg_pool3d)[self._nd - 1]
        return pool(x, self.output_size)

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class AdaptiveAvgPool1d(AdaptiveAvgPool2d):
    _nd = 1


class AdaptiveAvgPool3d(AdaptiveAvgPool2d):
    _nd = 3


class LayerNorm(Module):
    def __init__(self, normalized_shape: Any, eps: float = 1e-5, elementwise_affine: bool = True,
                 bias: bool = True, dtype: Any = None):
        super().__init__()
        self.normalized_shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
        self.eps, self.elementwise_affine = eps, elementwise_affine
        dt = dtypes.dtype_or_default(dtype)
        if elementwise_affine:
            self.weight = _filled(self.normalized_shape, 1.0, dt)
            if bias:
                self.bias = _filled(self.normalized_shape, 0.0, dt)
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)

    def forward(self, x: Tensor) -> Tensor:
        return F.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"


class GroupNorm(Module):
    """`F.group_norm` over `num_groups` groups of the channels (axis 1), with a per-channel weight (ones) and
    bias (zeros) when affine."""

    def __init__(self, num_groups: int, num_channels: int, eps: float = 1e-5, affine: bool = True,
                 device: Any = None, dtype: Any = None):
        super().__init__()
        if num_groups <= 0 or num_channels % num_groups:
            raise ValueError(f"GroupNorm: num_channels ({num_channels}) must be divisible by num_groups "
                             f"({num_groups})")
        self.num_groups, self.num_channels, self.eps, self.affine = num_groups, num_channels, eps, affine
        dt = dtypes.dtype_or_default(dtype)
        if affine:
            self.weight = _filled((num_channels,), 1.0, dt)
            self.bias = _filled((num_channels,), 0.0, dt)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        if device is not None:
            self.to(device)

    def forward(self, x: Tensor) -> Tensor:
        if x.ndim < 2 or x.shape[1] != self.num_channels:
            raise ShapeError(f"GroupNorm: expected {self.num_channels} channels (axis 1), got shape {x.shape}")
        return F.group_norm(x, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}"


class RMSNorm(Module):
    """`F.rms_norm` over the last axes `normalized_shape`, with a weight (ones) when elementwise_affine."""

    def __init__(self, normalized_shape: Any, eps: float | None = None, elementwise_affine: bool = True,
                 device: Any = None, dtype: Any = None):
        super().__init__()
        self.normalized_shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
        self.eps, self.elementwise_affine = eps, elementwise_affine
        dt = dtypes.dtype_or_default(dtype)
        if elementwise_affine:
            self.weight = _filled(self.normalized_shape, 1.0, dt)
        else:
            self.register_parameter("weight", None)
        if device is not None:
            self.to(device)

    def forward(self, x: Tensor) -> Tensor:
        return F.rms_norm(x, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self) -> str:
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"


def _filled(shape: tuple[int, ...], value: float, dtype: Any) -> Parameter:
    return Parameter(full(shape, value, dtype=dtype).realize())


class _BatchNorm(Module):
    _expected_ndim: tuple[int, ...] = ()

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1, affine: bool = True,
                 track_running_stats: bool = True, dtype: Any = None):
        super().__init__()
        self.num_features, self.eps, self.momentum = num_features, eps, momentum
        self.affine, self.track_running_stats = affine, track_running_stats
        dt = dtypes.dtype_or_default(dtype)
        if affine:
            self.weight = _filled((num_features,), 1.0, dt)
            self.bias = _filled((num_features,), 0.0, dt)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        if track_running_stats:
            self.register_buffer("running_mean", full((num_features,), 0.0, dtype=dt).realize())
            self.register_buffer("running_var", full((num_features,), 1.0, dtype=dt).realize())
            self.register_buffer("num_batches_tracked", full((), 0, dtype=dtypes.int64).realize())
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)

    def forward(self, x: Tensor) -> Tensor:
        if self._expected_ndim and x.ndim not in self._expected_ndim:
            raise ShapeError(f"{type(self).__name__}: expected a {' or '.join(map(str, self._expected_ndim))}-d "
                             f"input, got shape {x.shape}")
        if x.shape[1] != self.num_features:
            raise ShapeError(f"{type(self).__name__}: expected {self.num_features} channels, got shape {x.shape}")
        return F.batch_norm(x, self.running_mean, self.running_var, self.weight, self.bias,
                            training=self.training or self.running_mean is None, momentum=self.momentum,
                            eps=self.eps, num_batches_tracked=self.num_batches_tracked)

    def extra_repr(self) -> str:
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, affine={self.affine}, "
                f"track_running_stats={self.track_running_stats}")


class BatchNorm1d(_BatchNorm):
    _expected_ndim = (2, 3)


class BatchNorm2d(_BatchNorm):
    _expected_ndim = (4,)


class BatchNorm3d(_BatchNorm):
    _expected_ndim = (5,)


class Embedding(Module):
    """A lookup table of `num_embeddings` vectors of size `embedding_dim`, initialized N(0, 1) (the
    `padding_idx` row zero, and it gets no gradient). Its gradient is dense: `sparse=True` (PyTorch's sparse
    gradient) is refused."""

    def __init__(self, num_embeddings: int, embedding_dim: int, padding_idx: int | None = None, dtype: Any = None,
                 *, sparse: bool = False):
        super().__init__()
        if sparse:
            raise NotImplementedError(f"{type(self).__name__}: sparse gradients are not supported (sparse=False "
                                      "gives the same values, as a dense gradient)")
        self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
        if padding_idx is not None:
            if not -num_embeddings <= padding_idx < num_embeddings:
                raise ValueError(f"Embedding: padding_idx {padding_idx} is out of range")
            padding_idx %= num_embeddings
        self.padding_idx = padding_idx
        dt = dtypes.dtype_or_default(dtype)
        self.weight = _parameter((num_embeddings, embedding_dim), dt)
        init.normal_(self.weight)
        if padding_idx is not None:
            with no_grad():
                rows = arange(num_embeddings).reshape(num_embeddings, 1)
                self.weight.node = where(rows == padding_idx, 0.0, self.weight).realize().node

    def forward(self, indices: Tensor) -> Tensor:
        return F.embedding(indices, self.weight, self.padding_idx)

    def extra_repr(self) -> str:
        return f"{self.num_embeddings}, {self.embedding_dim}" + \
            (f", padding_idx={self.padding_idx}" if self.padding_idx is not None else "")


class Dropout(Module):
    def __init__(self, p: float = 0.5, inplace: bool = False):
        super().__init__()
        if not 0 <= p <= 1:
            raise ValueError(f"Dropout: p must be in [0, 1], got {p}")
        self.p, self.inplace = p, inplace

    def forward(self, x: Tensor) -> Tensor:
        return F.dropout(x, self.p, self.training, self.inplace)

    def extra_repr(self) -> str:
        return f"p={self.p}"


class Flatten(Module):
    def __init__(self, start_dim: int = 1, end_dim: int = -1):
        super().__init__()
        self.start_dim, self.end_dim = start_dim, end_dim

    def forward(self, x: Tensor) -> Tensor:
        return x.flatten(self.start_dim, self.end_dim)


class MultiheadAttention(Module):
    """PyTorch's `nn.MultiheadAttention`: the parameters of the same names and initialization
    (`in_proj_weight` (3E, E) when kdim == vdim == E, else `q_proj_weight`, `k_proj_weight`, `v_proj_weight`;
    `in_proj_bias`, `out_proj`), and `forward(query, key, value, key_padding_mask, need_weights, attn_mask,
    average_attn_weights, is_causal)` returning (output, weights or None); `add_bias_kv` (parameters `bias_k`,
    `bias_v`) and `add_zero_attn` append a key and value, as PyTorch's. A query whose keys are all masked gets zeros (weights and output) where PyTorch's
    need_weights=True path gives NaN. `is_causal` is PyTorch's hint that `attn_mask` is the causal mask: the
    mask is applied as given."""

    def __init__(self, embed_dim: int, num_heads: int, dropout: float = 0.0, bias: bool = True,
                 add_bias_kv: bool = False, add_zero_attn: bool = False, kdim: int | None = None,
                 vdim: int | None = None, batch_first: bool = False, device: Any = None, dtype: Any = None):
        super().__init__()
        if num_heads <= 0 or embed_dim % num_heads:
            raise ValueError(f"MultiheadAttention: embed_dim ({embed_dim}) must be divisible by num_heads "
                             f"({num_heads})")
        self.embed_dim, self.num_heads, self.dropout, self.batch_first = embed_dim, num_heads, dropout, batch_first
        self.kdim = embed_dim if kdim is None else kdim
        self.vdim = embed_dim if vdim is None else vdim
        self.head_dim = embed_dim // num_heads
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        dt = dtypes.dtype_or_default(dtype)
        if self._qkv_same_embed_dim:
            self.in_proj_weight = _parameter((3 * embed_dim, embed_dim), dt)
            init.xavier_uniform_(self.in_proj_weight)
            for name in ("q_proj_weight", "k_proj_weight", "v_proj_weight"):
                self.register_parameter(name, None)
        else:
            self.register_parameter("in_proj_weight", None)
            for name, dim in (("q_proj_weight", embed_dim), ("k_proj_weight", self.kdim),
                              ("v_proj_weight", self.vdim)):
                setattr(self, name, _parameter((embed_dim, dim), dt))
                init.xavier_uniform_(getattr(self, name))
        if bias:
            self.in_proj_bias = _filled((3 * embed_dim,), 0.0, dt)
        else:
            self.register_parameter("in_proj_bias", None)
        if add_bias_kv:
            self.bias_k, self.bias_v = _parameter((1, 1, embed_dim), dt), _parameter((1, 1, embed_dim), dt)
            init.xavier_normal_(self.bias_k)
            init.xavier_normal_(self.bias_v)
        else:
            self.bias_k = self.bias_v = None
        self.add_zero_attn = add_zero_attn
        self.out_proj = Linear(embed_dim, embed_dim, bias=bias, dtype=dt)
        if bias:
            init.zeros_(self.out_proj.bias)
        if device is not None:
            self.to(device)

    def forward(self, query: Tensor, key: Tensor, value: Tensor, key_padding_mask: Tensor | None = None,
                need_weights: bool = True, attn_mask: Tensor | None = None, average_attn_weights: bool = True,
                is_causal: bool = False) -> tuple[Tensor, Tensor | None]:
        """Attention of `query` (L, N, E) over `key` (S, N, kdim) and `value` (S, N, vdim) ((N, L, E) ... with
        batch_first, (L, E) ... unbatched); `key_padding_mask` (N, S) and `attn_mask` (L, S) or
        (N * num_heads, L, S), True (or -inf) excluding. The weights are (N, L, S) averaged over the heads, or
        (N, num_heads, L, S)."""
        if is_causal and attn_mask is None:
            raise ValueError("MultiheadAttention: is_causal needs attn_mask (it says that attn_mask is causal)")
        unbatched = query.ndim == 2
        if unbatched:
            query, key, value = query.unsqueeze(0), key.unsqueeze(0), value.unsqueeze(0)
            key_padding_mask = None if key_padding_mask is None else key_padding_mask.unsqueeze(0)
        elif not self.batch_first:
            query, key, value = query.swapaxes(0, 1), key.swapaxes(0, 1), value.swapaxes(0, 1)
        if query.ndim != 3 or query.shape[-1] != self.embed_dim or key.shape[-1] != self.kdim or \
                value.shape[-1] != self.vdim or key.shape[:2] != value.shape[:2] or key.shape[0] != query.shape[0]:
            raise ShapeError(f"MultiheadAttention: query {query.shape}, key {key.shape} and value {value.shape} "
                             f"do not fit embed_dim={self.embed_dim}, kdim={self.kdim}, vdim={self.vdim}")
        e = self.embed_dim
        if self._qkv_same_embed_dim:
            w = self.in_proj_weight
            weights = (w[:e], w[e:2 * e], w[2 * e:])
        else:
            weights = (self.q_proj_weight, self.k_proj_weight, self.v_proj_weight)
        b = self.in_proj_bias
        biases = (None, None, None) if b is None else (b[:e], b[e:2 * e], b[2 * e:])
        out, w_out = multi_head_attention(query, key, value, self.num_heads, weights, biases, self.out_proj.weight,
                                          self.out_proj.bias, self.dropout if self.training else 0.0,
                                          key_padding_mask, need_weights, attn_mask, average_attn_weights,
                                          None if self.bias_k is None else (self.bias_k, self.bias_v),
                                          self.add_zero_attn)
        if unbatched:
            return out.squeeze(0), None if w_out is None else w_out.squeeze(0)
        return (out if self.batch_first else out.swapaxes(0, 1)), w_out

    def extra_repr(self) -> str:
        return f"embed_dim={self.embed_dim}, num_heads={self.num_heads}, batch_first={self.batch_first}"


# ---- activations -----------------------------------------------------------------------------------


class ReLU(Module):
    def __init__(self, inplace: bool = False):
        super().__init__()
        self.inplace = inplace

    def forward(self, x: Tensor) -> Tensor:
        return F.relu(x, self.inplace)


class LeakyReLU(Module):
    def __init__(self, negative_slope: float = 0.01, inplace: bool = False):
        super().__init__()
        self.negative_slope, self.inplace = negative_slope, inplace

    def forward(self, x: Tensor) -> Tensor:
        return F.leaky_relu(x, self.negative_slope, self.inplace)


class GELU(Module):
    def __init__(self, approximate: str = "none"):
        super().__init__()
        self.approximate = approximate

    def forward(self, x: Tensor) -> Tensor:
        return F.gelu(x, self.approximate)


class SiLU(Module):
    def __init__(self, inplace: bool = False):
        super().__init__()
        self.inplace = inplace

    def forward(self, x: Tensor) -> Tensor:
        return F.silu(x, self.inplace)


class Sigmoid(Module):
    def forward(self, x: Tensor) -> Tensor:
        return F.sigmoid(x)


class Tanh(Module):
    def forward(self, x: Tensor) -> Tensor:
        return x.tanh()


class Softmax(Module):
    def __init__(self, dim: int = -1):
        super().__init__()
        self.dim = dim

    def forward(self, x: Tensor) -> Tensor:
        return F.softmax(x, self.dim)


class Softmax2d(Module):
    """softmax over the channels (axis -3) of a (N, C, H, W) or (C, H, W) input, at every position."""

    def forward(self, x: Tensor) -> Tensor:
        if x.ndim not in (3, 4):
            raise ShapeError(f"Softmax2d: expects a 3-d or 4-d input, got shape {x.shape}")
        return F.softmax(x, -3)


class LogSoftmax(Module):
    def __init__(self, dim: int = -1):
        super().__init__()
        self.dim = dim

    def forward(self, x: Tensor) -> Tensor:
        return F.log_softmax(x, self.dim)


# ---- losses -------------------------------------------------------------------------------------------


class CrossEntropyLoss(Module):
    def __init__(self, weight: Tensor | None = None, ignore_index: int = -100, reduction: str = "mean",
                 label_smoothing: float = 0.0):
        super().__init__()
        self.weight, self.ignore_index = weight, ignore_index
        self.reduction, self.label_smoothing = reduction, label_smoothing

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.cross_entropy(input, target, self.weight, self.ignore_index, self.reduction, self.label_smoothing)


class NLLLoss(Module):
    def __init__(self, weight: Tensor | None = None, ignore_index: int = -100, reduction: str = "mean"):
        super().__init__()
        self.weight, self.ignore_index, self.reduction = weight, ignore_index, reduction

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.nll_loss(input, target, self.weight, self.ignore_index, self.reduction)


class MSELoss(Module):
    def __init__(self, reduction: str = "mean"):
        super().__init__()
        self.reduction = reduction

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.mse_loss(input, target, self.reduction)


class L1Loss(Module):
    def __init__(self, reduction: str = "mean"):
        super().__init__()
        self.reduction = reduction

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.l1_loss(input, target, self.reduction)


class BCEWithLogitsLoss(Module):
    def __init__(self, weight: Tensor | None = None, reduction: str = "mean", pos_weight: Tensor | None = None):
        super().__init__()
        self.weight, self.reduction, self.pos_weight = weight, reduction, pos_weight

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.binary_cross_entropy_with_logits(input, target, self.weight, self.reduction, self.pos_weight)


# ---- resampling -------------------------------------------------------------------------------------


class Upsample(Module):
    """`F.interpolate` with fixed options (PyTorch's `nn.Upsample`)."""

    def __init__(self, size: Any = None, scale_factor: Any = None, mode: str = "nearest",
                 align_corners: bool | None = None, recompute_scale_factor: bool | None = None):
        super().__init__()
        self.size, self.scale_factor, self.mode = size, scale_factor, mode
        self.align_corners, self.recompute_scale_factor = align_corners, recompute_scale_factor

    def forward(self, x: Tensor) -> Tensor:
        return F.interpolate(x, self.size, self.scale_factor, self.mode, self.align_corners,
                             self.recompute_scale_factor)

    def extra_repr(self) -> str:
        what = f"size={self.size}" if self.size is not None else f"scale_factor={self.scale_factor}"
        return f"{what}, mode={self.mode!r}"


class _PadNd(Module):
    """`F.pad` of the last `_dims` axes by fixed amounts in `_mode` (PyTorch's padding modules): `padding` one
    amount for every side, or (left, right) per axis from the last, as `F.pad` takes them."""
    _dims: int = 1
    _mode: str = "constant"

    def __init__(self, padding: int | Sequence[int], value: float = 0.0):
        super().__init__()
        amounts = (padding,) * (2 * self._dims) if isinstance(padding, int) else tuple(padding)
        if len(amounts) != 2 * self._dims:
            raise ValueError(f"{type(self).__name__}: padding needs {2 * self._dims} amounts, got {padding}")
        self.padding, self.value = amounts, value

    def forward(self, x: Tensor) -> Tensor:
        if x.ndim not in (self._dims + 1, self._dims + 2):
            raise ShapeError(f"{type(self).__name__}: expects a {self._dims + 1}-d or {self._dims + 2}-d input, got "
                             f"shape {x.shape}")
        return F.pad(x, self.padding, self._mode, self.value if self._mode == "constant" else None)

    def extra_repr(self) -> str:
        return f"{self.padding}" + (f", value={self.value}" if self._mode == "constant" else "")


class ConstantPad1d(_PadNd):
    _dims = 1


class ConstantPad2d(_PadNd):
    _dims = 2


class ConstantPad3d(_PadNd):
    _dims = 3


class ZeroPad1d(ConstantPad1d):
    def __init__(self, padding: int | Sequence[int]):
        super().__init__(padding, 0.0)


class ZeroPad2d(ConstantPad2d):
    def __init__(self, padding: int | Sequence[int]):
        super().__init__(padding, 0.0)


class ZeroPad3d(ConstantPad3d):
    def __init__(self, padding: int | Sequence[int]):
        super().__init__(padding, 0.0)


class ReflectionPad1d(_PadNd):
    _dims, _mode = 1, "reflect"


class ReflectionPad2d(_PadNd):
    _dims, _mode = 2, "reflect"


class ReflectionPad3d(_PadNd):
    _dims, _mode = 3, "reflect"


class ReplicationPad1d(_PadNd):
    _dims, _mode = 1, "replicate"


class ReplicationPad2d(_PadNd):
    _dims, _mode = 2, "replicate"


class ReplicationPad3d(_PadNd):
    _dims, _mode = 3, "replicate"


class CircularPad1d(_PadNd):
    _dims, _mode = 1, "circular"


class CircularPad2d(_PadNd):
    _dims, _mode = 2, "circular"


class CircularPad3d(_PadNd):
    _dims, _mode = 3, "circular"


class UpsamplingNearest2d(Upsample):
    def __init__(self, size: Any = None, scale_factor: Any = None):
        super().__init__(size, scale_factor, "nearest")


class UpsamplingBilinear2d(Upsample):
    def __init__(self, size: Any = None, scale_factor: Any = None):
        super().__init__(size, scale_factor, "bilinear", align_corners=True)


class PixelShuffle(Module):
    def __init__(self, upscale_factor: int):
        super().__init__()
        self.upscale_factor = upscale_factor

    def forward(self, x: Tensor) -> Tensor:
        return F.pixel_shuffle(x, self.upscale_factor)

    def extra_repr(self) -> str:
        return f"upscale_factor={self.upscale_factor}"


class PixelUnshuffle(Module):
    def __init__(self, downscale_factor: int):
        super().__init__()
        self.downscale_factor = downscale_factor

    def forward(self, x: Tensor) -> Tensor:
        return F.pixel_unshuffle(x, self.downscale_factor)

    def extra_repr(self) -> str:
        return f"downscale_factor={self.downscale_factor}"


# ---- modules that apply one function of `nn.functional` with the options they were made with --------------


class _Applies(Module):
    """Applies `F.<_function>` to its inputs with the attributes named in `_options` as keywords (and
    `inplace=True` where the module was made so: the result written into the input, as PyTorch's)."""
    _function: str = ""
    _options: tuple[str, ...] = ()
    inplace: bool = False

    def forward(self, *inputs: Tensor) -> Tensor:
        options = {k: getattr(self, k) for k in self._options}
        if self.inplace:
            options["inplace"] = True
        return getattr(F, self._function)(*inputs, **options)

    def extra_repr(self) -> str:
        return ", ".join(f"{k}={getattr(self, k)}" for k in self._options)


class ReLU6(_Applies):
    _function = "relu6"

    def __init__(self, inplace: bool = False):
        super().__init__()
        self.inplace = inplace


class ELU(_Applies):
    _function, _options = "elu", ("alpha",)

    def __init__(self, alpha: float = 1.0, inplace: bool = False):
        super().__init__()
        self.alpha, self.inplace = alpha, inplace


class CELU(ELU):
    _function = "celu"


class SELU(ReLU6):
    _function = "selu"


class Hardswish(ReLU6):
    _function = "hardswish"


class Hardsigmoid(ReLU6):
    _function = "hardsigmoid"


class Mish(ReLU6):
    _function = "mish"


class Tanhshrink(_Applies):
    _function = "tanhshrink"


class Softsign(_Applies):
    _function = "softsign"


class LogSigmoid(_Applies):
    _function = "logsigmoid"


class Hardtanh(_Applies):
    _function, _options = "hardtanh", ("min_val", "max_val")

    def __init__(self, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False):
        super().__init__()
        self.min_val, self.max_val, self.inplace = min_val, max_val, inplace


class Hardshrink(_Applies):
    _function, _options = "hardshrink", ("lambd",)

    def __init__(self, lambd: float = 0.5):
        super().__init__()
        self.lambd = lambd


class Softshrink(Hardshrink):
    _function = "softshrink"


class Softplus(_Applies):
    _function, _options = "softplus", ("beta", "threshold")

    def __init__(self, beta: float = 1.0, threshold: float = 20.0):
        super().__init__()
        self.beta, self.threshold = beta, threshold


class Threshold(_Applies):
    _function, _options = "threshold", ("threshold", "value")

    def __init__(self, threshold: float, value: float, inplace: bool = False):
        super().__init__()
        self.threshold, self.value, self.inplace = threshold, value, inplace


class GLU(_Applies):
    _function, _options = "glu", ("dim",)

    def __init__(self, dim: int = -1):
        super().__init__()
        self.dim = dim


class Softmin(GLU):
    _function = "softmin"

    def __init__(self, dim: int = -1):
        super().__init__(dim)


class RReLU(_Applies):
    """leaky_relu with random slopes in [lower, upper] when training, their mean in evaluation."""
    _function, _options = "rrelu", ("lower", "upper", "training")

    def __init__(self, lower: float = 1.0 / 8, upper: float = 1.0 / 3, inplace: bool = False):
        super().__init__()
        self.lower, self.upper, self.inplace = lower, upper, inplace


class PReLU(Module):
    """leaky_relu with learnt slopes: one, or one per channel (`num_parameters`), starting at `init`."""

    def __init__(self, num_parameters: int = 1, init: float = 0.25, dtype: Any = None):
        super().__init__()
        self.num_parameters = num_parameters
        self.weight = _filled((num_parameters,), init, dtypes.dtype_or_default(dtype))

    def forward(self, x: Tensor) -> Tensor:
        return F.prelu(x, self.weight)

    def extra_repr(self) -> str:
        return f"num_parameters={self.num_parameters}"


class CosineSimilarity(_Applies):
    _function, _options = "cosine_similarity", ("dim", "eps")

    def __init__(self, dim: int = 1, eps: float = 1e-8):
        super().__init__()
        self.dim, self.eps = dim, eps


class PairwiseDistance(_Applies):
    _function, _options = "pairwise_distance", ("p", "eps", "keepdim")

    def __init__(self, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False):
        super().__init__()
        self.p, self.eps, self.keepdim = p, eps, keepdim


class ChannelShuffle(_Applies):
    _function, _options = "channel_shuffle", ("groups",)

    def __init__(self, groups: int):
        super().__init__()
        self.groups = groups


class Unflatten(Module):
    """Axis `dim` unflattened into `unflattened_size`."""

    def __init__(self, dim: int, unflattened_size: Sequence[int]):
        super().__init__()
        self.dim, self.unflattened_size = dim, tuple(unflattened_size)

    def forward(self, x: Tensor) -> Tensor:
        return x.unflatten(self.dim, self.unflattened_size)


class _DropoutNd(_Applies):
    _options = ("p", "training")

    def __init__(self, p: float = 0.5, inplace: bool = False):
        super().__init__()
        if not 0 <= p <= 1:
            raise ValueError(f"{type(self).__name__}: p must be in [0, 1], got {p}")
        self.p, self.inplace = p, inplace


class Dropout1d(_DropoutNd):
    _function = "dropout1d"


class Dropout2d(_DropoutNd):
    _function = "dropout2d"


class Dropout3d(_DropoutNd):
    _function = "dropout3d"


class AlphaDropout(_DropoutNd):
    _function = "alpha_dropout"


class _AdaptiveMaxPoolNd(_Applies):
    _options = ("output_size", "return_indices")

    def __init__(self, output_size: Any, return_indices: bool = False):
        super().__init__()
        self.output_size, self.return_indices = output_size, return_indices


class AdaptiveMaxPool1d(_AdaptiveMaxPoolNd):
    _function = "adaptive_max_pool1d"


class AdaptiveMaxPool2d(_AdaptiveMaxPoolNd):
    _function = "adaptive_max_pool2d"


class _LPPoolNd(_Applies):
    _options = ("norm_type", "kernel_size", "stride", "ceil_mode")

    def __init__(self, norm_type: float, kernel_size: Any, stride: Any = None, ceil_mode: bool = False):
        super().__init__()
        self.norm_type, self.kernel_size, self.stride, self.ceil_mode = norm_type, kernel_size, stride, ceil_mode


class LPPool1d(_LPPoolNd):
    _function = "lp_pool1d"


class LPPool2d(_LPPoolNd):
    _function = "lp_pool2d"


class LocalResponseNorm(_Applies):
    _function, _options = "local_response_norm", ("size", "alpha", "beta", "k")

    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0):
        super().__init__()
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k


class _InstanceNorm(_BatchNorm):
    """Instance normalization (`F.instance_norm`): PyTorch's defaults differ from batch norm's, no affine
    parameters and no running statistics."""

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float = 0.1, affine: bool = False,
                 track_running_stats: bool = False, dtype: Any = None):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, dtype)

    def forward(self, x: Tensor) -> Tensor:
        if x.ndim not in self._expected_ndim:
            raise ShapeError(f"{type(self).__name__}: expected a {' or '.join(map(str, self._expected_ndim))}-d "
                             f"input, got shape {x.shape}")
        batched = x if x.ndim == self._expected_ndim[-1] else x.unsqueeze(0)
        out = F.instance_norm(batched, self.running_mean, self.running_var, self.weight, self.bias,
                              use_input_stats=self.training or self.running_mean is None,
                              momentum=self.momentum, eps=self.eps)
        return out if x.ndim == self._expected_ndim[-1] else out.squeeze(0)


class InstanceNorm1d(_InstanceNorm):
    _expected_ndim = (2, 3)


class InstanceNorm2d(_InstanceNorm):
    _expected_ndim = (3, 4)


class InstanceNorm3d(_InstanceNorm):
    _expected_ndim = (4, 5)


class Bilinear(Module):
    """y = x1^T W x2 + b, W of shape (out_features, in1_features, in2_features), initialized as PyTorch's:
    U(-1/sqrt(in1_features), 1/sqrt(in1_features)) for W and b."""

    def __init__(self, in1_features: int, in2_features: int, out_features: int, bias: bool = True,
                 dtype: Any = None):
        super().__init__()
        self.in1_features, self.in2_features, self.out_features = in1_features, in2_features, out_features
        dt = dtypes.dtype_or_default(dtype)
        bound = 1 / math.sqrt(in1_features)
        self.weight = _parameter((out_features, in1_features, in2_features), dt)
        init.uniform_(self.weight, -bound, bound)
        if bias:
            self.bias = _parameter((out_features,), dt)
            init.uniform_(self.bias, -bound, bound)
        else:
            self.register_parameter("bias", None)

    def forward(self, input1: Tensor, input2: Tensor) -> Tensor:
        return F.bilinear(input1, input2, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
                f"out_features={self.out_features}, bias={self.bias is not None}")


class EmbeddingBag(Embedding):
    """A lookup table whose bags of rows are summed, averaged or maxed (`F.embedding_bag`)."""

    def __init__(self, num_embeddings: int, embedding_dim: int, mode: str = "mean", include_last_offset: bool = False,
                 padding_idx: int | None = None, dtype: Any = None, *, sparse: bool = False):
        super().__init__(num_embeddings, embedding_dim, padding_idx, dtype, sparse=sparse)
        self.mode, self.include_last_offset = mode, include_last_offset

    def forward(self, input: Tensor, offsets: Tensor | None = None,
                per_sample_weights: Tensor | None = None) -> Tensor:
        return F.embedding_bag(input, self.weight, offsets, mode=self.mode, per_sample_weights=per_sample_weights,
                               include_last_offset=self.include_last_offset, padding_idx=self.padding_idx)


# ---- losses that apply one function of `nn.functional` ---------------------------------------------------


class _Loss(_Applies):
    """A loss module; `size_average` and `reduce`, where PyTorch's signature keeps them, are its deprecated
    spellings of `reduction`, read as PyTorch reads them."""
    _options = ("reduction",)

    def __init__(self, reduction: str = "mean"):
        super().__init__()
        self.reduction = reduction


class BCELoss(_Loss):
    _function, _options = "binary_cross_entropy", ("weight", "reduction")

    def __init__(self, weight: Tensor | None = None, size_average: bool | None = None, reduce: bool | None = None,
                 reduction: str = "mean"):
        super().__init__(F._legacy_reduction(size_average, reduce, reduction))
        self.weight = weight


class HuberLoss(_Loss):
    _function, _options = "huber_loss", ("reduction", "delta")

    def __init__(self, reduction: str = "mean", delta: float = 1.0):
        super().__init__(reduction)
        self.delta = delta


class SmoothL1Loss(_Loss):
    _function, _options = "smooth_l1_loss", ("reduction", "beta")

    def __init__(self, size_average: bool | None = None, reduce: bool | None = None, reduction: str = "mean", beta: float = 1.0):
        super().__init__(F._legacy_reduction(size_average, reduce, reduction))
        self.beta = beta


class KLDivLoss(_Loss):
    _function, _options = "kl_div", ("reduction", "log_target")

    def __init__(self, size_average: bool | None = None, reduce: bool | None = None, reduction: str = "mean",
                 log_target: bool = False):
        super().__init__(F._legacy_reduction(size_average, reduce, reduction))
        self.log_target = log_target


class PoissonNLLLoss(_Loss):
    _function, _options = "poisson_nll_loss", ("log_input", "full", "eps", "reduction")

    def __init__(self, log_input: bool = True, full: bool = False, size_average: bool | None = None, eps: float = 1e-8,
                 reduce: bool | None = None, reduction: str = "mean"):
        super().__init__(F._legacy_reduction(size_average, reduce, reduction))
        self.log_input, self.full, self.eps = log_input, full, eps


class GaussianNLLLoss(_Loss):
    _function, _options = "gaussian_nll_loss", ("full", "eps", "reduction")

    def __init__(self, *, full: bool = False, eps: float = 1e-6, reduction: str = "mean"):
        super().__init__(reduction)
        self.full, self.eps = full, eps


class SoftMarginLoss(_Loss):
    _function = "soft_margin_loss"

    def __init__(self, size_average: bool | None = None, reduce: bool | None = None, reduction: str = "mean"):
        super().__init__(F._legacy_reduction(size_average, reduce, reduction))


class _MarginLoss(_Loss):
    _options = ("margin", "reduction")

    def __init__(self, margin: float = 0.0, size_average: bool | None = None, reduce: bool | None = None,
                 reduction: str = "mean"):
        super().__init__(F._legacy_reduction(size_average, reduce, reduction))
        self.margin = margin


class HingeEmbeddingLoss(_MarginLoss):
    _function = "hinge_embedding_loss"

    def __init__(self, margin: float = 1.0, size_average: bool | None = None, reduce: bool | None = None,
                 reduction: str = "mean"):
        super().__init__(margin, reduction=F._legacy_reduction(size_average, reduce, reduction))


class MarginRankingLoss(_MarginLoss):
    _function = "margin_ranking_loss"


class CosineEmbeddingLoss(_MarginLoss):
    _function = "cosine_embedding_loss"


class MultiLabelSoftMarginLoss(BCELoss):
    _function = "multilabel_soft_margin_loss"


class TripletMarginLoss(_Loss):
    _function, _options = "triplet_margin_loss", ("margin", "p", "eps", "swap", "reduction")

    def __init__(self, margin: float = 1.0, p: float = 2.0, eps: float = 1e-6, swap: bool = False,
                 size_average: bool | None = None, reduce: bool | None = None, reduction: str = "mean"):
        super().__init__(F._legacy_reduction(size_average, reduce, reduction))
        self.margin, self.p, self.eps, self.swap = margin, p, eps, swap


class MultiMarginLoss(_Loss):
    _function, _options = "multi_margin_loss", ("p", "margin", "weight", "reduction")

    def __init__(self, p: int = 1, margin: float = 1.0, weight: Tensor | None = None, size_average: bool | None = None,
                 reduce: bool | None = None, reduction: str = "mean"):
        super().__init__(F._legacy_reduction(size_average, reduce, reduction))
        self.p, self.margin, self.weight = p, margin, weight
