"""Batching sequences of different lengths, with PyTorch's names: `nn.utils.rnn.pad_sequence`."""
from __future__ import annotations

from collections.abc import Sequence

from ...errors import ShapeError
from ...movement import stack
from ...tensor import Tensor


def pad_sequence(sequences: Tensor | Sequence[Tensor], batch_first: bool = False, padding_value: float = 0.0,
                 padding_side: str = "right") -> Tensor:
    """PyTorch's `pad_sequence`: sequences (L_i, *) of one trailing shape and dtype as one tensor (T, B, *) (with
    `batch_first`, (B, T, *)), T the longest L_i, each padded with `padding_value` after its end
    (`padding_side="left"`: before its start). A tensor is its sequences along axis 0. Padding and a stack,
    so it fuses into what reads it, and its gradient is each sequence's slice."""
    if padding_side not in ("left", "right"):
        raise ValueError(f"pad_sequence: padding_side must be 'left' or 'right', got {padding_side!r}")
    seqs = list(sequences.unbind(0)) if isinstance(sequences, Tensor) else list(sequences)
    if not seqs:
        raise ValueError("pad_sequence: needs at least one sequence")
    if any(s.ndim == 0 or s.shape[1:] != seqs[0].shape[1:] or s.dtype != seqs[0].dtype for s in seqs):
        raise ShapeError("pad_sequence: the sequences need at least one dimension and one trailing shape and dtype; "
                         f"got {[(s.shape, s.dtype.name) for s in seqs]}")
    longest = max(s.shape[0] for s in seqs)
    padded = [s.pad([(0, longest - s.shape[0]) if padding_side == "right" else (longest - s.shape[0], 0)]
                    + [(0, 0)] * (s.ndim - 1), value=padding_value) for s in seqs]
    return stack(padded, axis=0 if batch_first else 1)


__all__ = ["pad_sequence"]
