"""Recurrent layers, as PyTorch's: `nn.RNN` (tanh or relu), `nn.LSTM` and `nn.GRU`, with `num_layers`, `bias`,
`batch_first`, `dropout` between layers and `bidirectional`, and PyTorch's parameter names and shapes
(`weight_ih_l0`, `weight_hh_l0`, `bias_ih_l0`, `bias_hh_l0`, `..._reverse`), so a state dict moves between the two;
and their cells, one time step each (`nn.RNNCell`, `nn.LSTMCell`, `nn.GRUCell`: `weight_ih`, `weight_hh`, ...).

A layer's input projections of every time step are one contraction (`x @ W_ih^T` over the whole sequence); the
recurrence is then a Python loop over the steps, each a small product and the gate arithmetic, all lazy: a
sequence's forward (and backward) is one graph, scheduled and fused like any other.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import dtypes
from ..creation import asarray, zeros
from ..movement import concat, stack
from ..tensor import Tensor, where
from . import functional as F
from . import init
from .modules import Module, Parameter
from .utils.rnn import PackedSequence, _packed_rows, pad_packed_sequence

GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "LSTM": 4, "GRU": 3}


def _add_weights(module: Module, mode: str, input_size: int, hidden_size: int, bias: bool, dtype: Any,
                 suffix: str) -> None:
    """PyTorch's input and hidden weights (and biases) of one layer and direction (`suffix`), U(-1/sqrt(hidden),
    1/sqrt(hidden)) each."""
    gates = GATES[mode] * hidden_size
    bound = 1 / math.sqrt(hidden_size) if hidden_size > 0 else 0
    shapes = {"weight_ih": (gates, input_size), "weight_hh": (gates, hidden_size)}
    if bias:
        shapes |= {"bias_ih": (gates,), "bias_hh": (gates,)}
    for name, shape in shapes.items():
        p = Parameter(zeros(*shape, dtype=dtype).realize())
        init.uniform_(p, -bound, bound)
        setattr(module, f"{name}{suffix}", p)


def _step(mode: str, gi: Tensor, h: Tensor, c: Tensor | None, w_hh: Tensor, b_hh: Tensor | None) \
        -> tuple[Tensor, Tensor | None]:
    """One time step: `gi` the step's input projections (bias_ih included), `h` (and an LSTM's `c`) the state."""
    gh = F.linear(h, w_hh, b_hh)
    hs = h.shape[-1]
    if mode == "LSTM":
        i, f, g, o = (gi[..., k * hs:(k + 1) * hs] + gh[..., k * hs:(k + 1) * hs] for k in range(4))
        c = f.sigmoid() * c + i.sigmoid() * g.tanh()
        return o.sigmoid() * c.tanh(), c
    if mode == "GRU":
        r = (gi[..., :hs] + gh[..., :hs]).sigmoid()
        z = (gi[..., hs:2 * hs] + gh[..., hs:2 * hs]).sigmoid()
        n = (gi[..., 2 * hs:] + r * gh[..., 2 * hs:]).tanh()
        return (1 - z) * n + z * h, None
    pre = gi + gh
    return (pre.tanh() if mode == "RNN_TANH" else pre.relu()), None


class _RNNBase(Module):
    """The shared machinery: parameters, layers and directions, shapes and initial states."""

    def __init__(self, mode: str, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True,
                 batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False, proj_size: int = 0,
                 dtype: Any = None):
        super().__init__()
        if proj_size:
            raise NotImplementedError("LSTM: proj_size is not supported")
        if not 0 <= dropout <= 1:
            raise ValueError(f"{mode}: dropout must be in [0, 1], got {dropout}")
        self.mode, self.input_size, self.hidden_size, self.num_layers = mode, input_size, hidden_size, num_layers
        self.bias, self.batch_first, self.dropout, self.bidirectional = bias, batch_first, dropout, bidirectional
        dt = dtypes.dtype_or_default(dtype)
        directions = 2 if bidirectional else 1
        for layer in range(num_layers):
            for suffix in ("", "_reverse")[:directions]:
                width = input_size if layer == 0 else hidden_size * directions
                _add_weights(self, mode, width, hidden_size, bias, dt, f"_l{layer}{suffix}")

    def _weights(self, layer: int, suffix: str) -> tuple[Tensor, Tensor, Tensor | None, Tensor | None]:
        names = ("weight_ih", "weight_hh", "bias_ih", "bias_hh")
        w_ih, w_hh, b_ih, b_hh = (getattr(self, f"{name}_l{layer}{suffix}", None) for name in names)
        return w_ih, w_hh, b_ih, b_hh

    def forward(self, x: Tensor | PackedSequence, hx: Any = None) -> tuple[Any, Any]:
        if isinstance(x, PackedSequence):
            # the padded batch in its own order, each sequence's steps past its length leaving the state as it
            # was: h_n is each one's state at its last step, and the reverse direction starts at that step
            padded, lengths = pad_packed_sequence(x, self.batch_first)
            out, state = self._run(padded, hx, lengths.numpy())
            out = out.swapaxes(0, 1) if self.batch_first else out
            return x._replace(data=_packed_rows(out, x.batch_sizes, x.sorted_indices)), state
        return self._run(x, hx, None)

    def _run(self, x: Tensor, hx: Any, lengths: np.ndarray | None) -> tuple[Tensor, Any]:
        batched = x.ndim == 3
        if x.ndim not in (2, 3):
            raise ValueError(f"{type(self).__name__}: expects a 2-d (unbatched) or 3-d input, got shape {x.shape}")
        seq = x if not batched else x.swapaxes(0, 1) if self.batch_first else x  # (time, batch, features)
        if not batched:
            seq = seq.unsqueeze(1)
        steps, batch = seq.shape[0], seq.shape[1]
        directions = 2 if self.bidirectional else 1
        h0, c0 = self._initial(hx, batched, batch, directions, seq)
        h_n, c_n = [], []
        layer_input = seq
        for layer in range(self.num_layers):
            outputs = []
            for d, suffix in enumerate(("", "_reverse")[:directions]):
                w_ih, w_hh, b_ih, b_hh = self._weights(layer, suffix)
                gi = F.linear(layer_input, w_ih, b_ih)  # every step's input projections: one contraction
                k = layer * directions + d
                h, c = h0[k], (c0[k] if c0 is not None else None)
                order = range(steps) if d == 0 else range(steps - 1, -1, -1)
                per_step: list[Tensor] = [None] * steps  # type: ignore[list-item]
                for t in order:
                    h_t, c_t = _step(self.mode, gi[t], h, c, w_hh, b_hh)
                    if lengths is not None and (lengths <= t).any():
                        running = asarray((lengths > t)[:, None], device=seq.device)
                        h_t, c_t = where(running, h_t, h), (where(running, c_t, c) if c is not None else None)
                        per_step[t] = where(running, h_t, 0)
                    else:
                        per_step[t] = h_t
                    h, c = h_t, c_t
                outputs.append(stack(per_step) if steps else zeros(0, batch, self.hidden_size, dtype=seq.dtype,
                                                                   device=seq.device))
                h_n.append(h)
                if c is not None:
                    c_n.append(c)
            layer_input = outputs[0] if directions == 1 else concat(outputs, axis=-1)
            if self.dropout and self.training and layer < self.num_layers - 1:
                layer_input = F.dropout(layer_input, self.dropout)
        out = layer_input if not self.batch_first or not batched else layer_input.swapaxes(0, 1)
        h_n_t, c_n_t = stack(h_n), (stack(c_n) if c_n else None)
        if not batched:
            out, h_n_t = out.squeeze(1), h_n_t.squeeze(1)
            c_n_t = c_n_t.squeeze(1) if c_n_t is not None else None
        return out, ((h_n_t, c_n_t) if self.mode == "LSTM" else h_n_t)

    def _initial(self, hx: Any, batched: bool, batch: int, directions: int, seq: Tensor) \
            -> tuple[Tensor, Tensor | None]:
        shape = (self.num_layers * directions, batch, self.hidden_size)
        if hx is None:
            h0 = zeros(*shape, dtype=seq.dtype, device=seq.device)
            return h0, (h0 if self.mode == "LSTM" else None)
        h0, c0 = hx if self.mode == "LSTM" else (hx, None)
        if not batched:
            h0, c0 = h0.unsqueeze(1), (c0.unsqueeze(1) if c0 is not None else None)
        for name, t in (("h0", h0), ("c0", c0)):
            if t is not None and t.shape != shape:
                raise ValueError(f"{type(self).__name__}: {name} has shape {t.shape}, expected {shape}")
        return h0, c0

    def extra_repr(self) -> str:
        extra = "".join(f", {k}={getattr(self, k)}" for k, default in
                        (("num_layers", 1), ("bias", True), ("batch_first", False), ("dropout", 0.0),
                         ("bidirectional", False)) if getattr(self, k) != default)
        return f"{self.input_size}, {self.hidden_size}{extra}"


class RNN(_RNNBase):
    """An Elman RNN: h' = tanh(x W_ih^T + b_ih + h W_hh^T + b_hh) (`nonlinearity='relu'` for relu)."""

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1, nonlinearity: str = "tanh",
                 bias: bool = True, batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False,
                 dtype: Any = None):
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"RNN: nonlinearity must be 'tanh' or 'relu', got {nonlinearity!r}")
        super().__init__(f"RNN_{nonlinearity.upper()}", input_size, hidden_size, num_layers, bias, batch_first,
                         dropout, bidirectional, dtype=dtype)


class LSTM(_RNNBase):
    """Long short-term memory, gates in PyTorch's order (input, forget, cell, output); returns
    `(output, (h_n, c_n))`."""

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True,
                 batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False, proj_size: int = 0,
                 dtype: Any = None):
        super().__init__("LSTM", input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional,
                         proj_size, dtype)


class GRU(_RNNBase):
    """Gated recurrent unit, gates in PyTorch's order (reset, update, new); returns `(output, h_n)`."""

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True,
                 batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False, dtype: Any = None):
        super().__init__("GRU", input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional,
                         dtype=dtype)


class _CellBase(Module):
    """One time step of a recurrent layer: PyTorch's `weight_ih`, `weight_hh`, `bias_ih`, `bias_hh`."""

    def __init__(self, mode: str, input_size: int, hidden_size: int, bias: bool, dtype: Any):
        super().__init__()
        self.mode, self.input_size, self.hidden_size, self.bias = mode, input_size, hidden_size, bias
        _add_weights(self, mode, input_size, hidden_size, bias,
                     dtypes.dtype_or_default(dtype), "")

    def _state(self, x: Tensor, hx: Tensor | None, batched: bool) -> Tensor:
        if hx is None:
            return zeros(x.shape[0], self.hidden_size, dtype=x.dtype, device=x.device)
        state = hx if batched else hx.unsqueeze(0)
        if state.shape != (x.shape[0], self.hidden_size):
            raise ValueError(f"{type(self).__name__}: a state of shape {hx.shape} for an input of shape "
                             f"{x.shape[:-1] if batched else ()} and hidden size {self.hidden_size}")
        return state

    def _run(self, input: Tensor, hx: Tensor | None, cx: Tensor | None) -> tuple[Tensor, Tensor | None]:
        if input.ndim not in (1, 2):
            raise ValueError(f"{type(self).__name__}: expects a 1-d (unbatched) or 2-d input, got shape {input.shape}")
        batched = input.ndim == 2
        x = input if batched else input.unsqueeze(0)
        h = self._state(x, hx, batched)
        c = self._state(x, cx, batched) if self.mode == "LSTM" else None
        gi = F.linear(x, self.weight_ih, getattr(self, "bias_ih", None))
        h, c = _step(self.mode, gi, h, c, self.weight_hh, getattr(self, "bias_hh", None))
        if not batched:
            h, c = h.squeeze(0), (c.squeeze(0) if c is not None else None)
        return h, c

    def extra_repr(self) -> str:
        return f"{self.input_size}, {self.hidden_size}{'' if self.bias else ', bias=False'}"


class RNNCell(_CellBase):
    """h' = tanh(x W_ih^T + b_ih + h W_hh^T + b_hh) (`nonlinearity='relu'` for relu); h starts at 0."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, nonlinearity: str = "tanh",
                 dtype: Any = None):
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"RNNCell: nonlinearity must be 'tanh' or 'relu', got {nonlinearity!r}")
        super().__init__(f"RNN_{nonlinearity.upper()}", input_size, hidden_size, bias, dtype)

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:
        return self._run(input, hx, None)[0]


class LSTMCell(_CellBase):
    """One LSTM step, gates in PyTorch's order (input, forget, cell, output); `hx` is `(h, c)`, both 0 at first;
    returns `(h', c')`."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, dtype: Any = None):
        super().__init__("LSTM", input_size, hidden_size, bias, dtype)

    def forward(self, input: Tensor, hx: tuple[Tensor, Tensor] | None = None) -> tuple[Tensor, Tensor]:
        h, c = self._run(input, *(hx if hx is not None else (None, None)))
        return h, c  # type: ignore[return-value]


class GRUCell(_CellBase):
    """One GRU step, gates in PyTorch's order (reset, update, new); h starts at 0."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, dtype: Any = None):
        super().__init__("GRU", input_size, hidden_size, bias, dtype)

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:
        return self._run(input, hx, None)[0]


__all__ = ["GRU", "LSTM", "RNN", "GRUCell", "LSTMCell", "RNNCell"]
