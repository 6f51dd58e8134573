"""Batching sequences of different lengths, with PyTorch's names: `nn.utils.rnn.pad_sequence`, and the packed
form that `nn.RNN`, `nn.LSTM` and `nn.GRU` accept (`PackedSequence`, `pack_padded_sequence`,
`pad_packed_sequence`). The lengths are the host's (as PyTorch's, a CPU tensor): packing and unpacking are
one gather each, of positions computed from them."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from ...creation import asarray, full
from ...errors import ShapeError
from ...movement import concat, stack
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


class PackedSequence(NamedTuple):
    """PyTorch's packed batch: `data` (sum of the lengths, *) holds every sequence's step 0, then step 1, ...,
    each step's sequences longest first; `batch_sizes` (int64, on the host) counts the sequences at each step;
    `sorted_indices` are the batch's order by decreasing length and `unsorted_indices` its inverse (None where
    the batch came sorted)."""
    data: Tensor
    batch_sizes: np.ndarray
    sorted_indices: np.ndarray | None = None
    unsorted_indices: np.ndarray | None = None

    def lengths(self) -> np.ndarray:
        """Each sequence's length, in the batch's own order."""
        sizes = np.asarray(self.batch_sizes)
        by_rank = _counts_above(sizes, int(sizes[0]) if sizes.size else 0)
        return by_rank if self.unsorted_indices is None else by_rank[np.asarray(self.unsorted_indices)]


def _counts_above(values: np.ndarray, n: int) -> np.ndarray:
    """For each i < n, how many of `values` exceed i: the batch sizes of sequences of lengths `values`, and the
    lengths of a packed batch of batch sizes `values` (sorted)."""
    return (values[None, :] > np.arange(n)[:, None]).sum(1)


def _ranked(sorted_indices: np.ndarray | None, batch: int) -> np.ndarray:
    """The batch's sequences by decreasing length (`PackedSequence.sorted_indices`, or the batch's own order)."""
    return np.arange(batch) if sorted_indices is None else np.asarray(sorted_indices)


def _host_lengths(lengths: Any) -> np.ndarray:
    return np.asarray(lengths.numpy() if isinstance(lengths, Tensor) else lengths, dtype=np.int64).reshape(-1)


def pack_padded_sequence(input: Tensor, lengths: Any, batch_first: bool = False,
                         enforce_sorted: bool = True) -> PackedSequence:
    """PyTorch's `pack_padded_sequence`: the padded batch (T, B, *) (batch_first: (B, T, *)) of sequences of
    `lengths` (each in [1, T]; in decreasing order unless not `enforce_sorted`) as a `PackedSequence`."""
    seq = input.swapaxes(0, 1) if batch_first else input
    steps, batch = seq.shape[:2]
    lens = _host_lengths(lengths)
    if lens.shape != (batch,) or batch and (lens.min() < 1 or lens.max() > steps):
        raise ValueError(f"pack_padded_sequence: needs {batch} lengths in [1, {steps}], got {lens.tolist()}")
    if enforce_sorted and (np.diff(lens) > 0).any():
        raise ValueError("pack_padded_sequence: lengths must be in decreasing order (or enforce_sorted=False)")
    order = None if enforce_sorted else np.argsort(-lens, kind="stable")
    sizes = _counts_above(lens, int(lens.max()) if batch else 0)
    return PackedSequence(_packed_rows(seq, sizes, order), sizes, order, None if order is None else np.argsort(order))


def _packed_rows(seq: Tensor, batch_sizes: np.ndarray, sorted_indices: np.ndarray | None) -> Tensor:
    """The rows of the padded batch `seq` (T, B, *) that a PackedSequence of these `batch_sizes` and
    `sorted_indices` holds, in its order: one gather."""
    batch = seq.shape[1]
    ranked = _ranked(sorted_indices, batch)
    rows = [t * batch + ranked[:n] for t, n in enumerate(np.asarray(batch_sizes))]
    index = np.concatenate(rows) if rows else np.zeros(0, np.int64)
    return seq.reshape(-1, *seq.shape[2:])[asarray(index, device=seq.device)]


def pad_packed_sequence(sequence: PackedSequence, batch_first: bool = False, padding_value: float = 0.0,
                        total_length: int | None = None) -> tuple[Tensor, Tensor]:
    """PyTorch's `pad_packed_sequence`: the padded batch (T, B, *) (batch_first: (B, T, *)) in the batch's own
    order, `padding_value` past each sequence's end (T: the longest, or `total_length`), and the lengths (int64)."""
    data, sizes = sequence.data, np.asarray(sequence.batch_sizes)
    lens = sequence.lengths()
    steps = len(sizes) if total_length is None else int(total_length)
    if steps < len(sizes):
        raise ValueError(f"pad_packed_sequence: total_length {steps} is below the longest length {len(sizes)}")
    batch = int(sizes[0]) if sizes.size else 0
    ranked = _ranked(sequence.sorted_indices, batch)
    where_row = np.full((steps, batch), data.shape[0])  # the padding row, after the data
    starts = np.concatenate([[0], np.cumsum(sizes)])
    for t, n in enumerate(sizes):
        where_row[t, ranked[:n]] = starts[t] + np.arange(n)
    pad_row = full((1, *data.shape[1:]), padding_value, dtype=data.dtype, device=data.device)
    padded = concat([data, pad_row])[asarray(where_row.reshape(-1), device=data.device)]
    padded = padded.reshape(steps, batch, *data.shape[1:])
    return (padded.swapaxes(0, 1) if batch_first else padded), asarray(lens)


__all__ = ["PackedSequence", "pack_padded_sequence", "pad_packed_sequence", "pad_sequence"]
