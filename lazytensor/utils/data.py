"""Datasets and the batches of a training loop, as PyTorch's `torch.utils.data` writes them.

    loader = DataLoader(TensorDataset(X, y), batch_size=64, shuffle=True)
    for xb, yb in loader:
        ...

A `DataLoader` draws the indices of each batch from a sampler (in order, or a new random permutation every
epoch) and fetches the batch. A dataset of tensors (`TensorDataset`, a `Subset` of one) fetches a batch as one
gather per tensor, `t[indices]`, a lazy op the training step that reads it fuses; any other dataset is read
sample by sample and the samples are stacked by `default_collate`, as PyTorch's. Batches are made in the
loop's own thread, when the loop asks for them: the work of a lazy batch runs with the step, so worker
processes would have nothing to do (`num_workers` is accepted, and changes nothing).

Shuffles draw from lazytensor's default stream (`lt.manual_seed` makes them repeat), or from the generator
passed as `generator`: an `lt.Generator` (PyTorch's `generator=torch.Generator().manual_seed(42)`) or a NumPy
`np.random.Generator`.
"""
from __future__ import annotations

import bisect
import itertools
import math
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from ..creation import asarray
from ..movement import stack
from ..random import Generator, randperm
from ..tensor import Tensor


class Dataset:
    """A map-style dataset: `dataset[i]` is its i-th sample and `len(dataset)` their number. A subclass may
    also define `batch(indices)`, the collated batch of those samples at once (what `default_collate` would
    make of them), which `DataLoader` then calls instead of reading the samples one by one."""

    def __getitem__(self, index: int) -> Any:
        raise NotImplementedError(f"{type(self).__name__} defines no __getitem__")

    def __add__(self, other: Dataset) -> ConcatDataset:
        return ConcatDataset([self, other])


class TensorDataset(Dataset):
    """Samples that are rows of tensors (or arrays, made tensors) of one length: `dataset[i]` is the tuple of
    their i-th rows."""

    def __init__(self, *tensors: Any):
        if not tensors:
            raise ValueError("TensorDataset needs at least one tensor")
        self.tensors = tuple(t if isinstance(t, Tensor) else asarray(t) for t in tensors)
        sizes = [t.shape[0] if t.ndim else None for t in self.tensors]
        if None in sizes or len(set(sizes)) != 1:
            raise ValueError(f"TensorDataset: the tensors' first dimensions must be one size, got shapes "
                             f"{[t.shape for t in self.tensors]}")

    def __getitem__(self, index: Any) -> tuple[Tensor, ...]:
        return tuple(t[index] for t in self.tensors)

    def __len__(self) -> int:
        return self.tensors[0].shape[0]

    def batch(self, indices: Sequence[int]) -> list[Tensor]:
        """The rows at `indices` of every tensor: one gather each."""
        at = asarray(np.asarray(indices, dtype=np.int64), device=self.tensors[0].device)
        return [t[at] for t in self.tensors]


class Subset(Dataset):
    """The samples of `dataset` at `indices`, in their order."""

    def __init__(self, dataset: Any, indices: Sequence[int]):
        self.dataset, self.indices = dataset, indices

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, list):
            return self.dataset[[self.indices[i] for i in index]]
        return self.dataset[self.indices[index]]

    def __len__(self) -> int:
        return len(self.indices)

    def batch(self, indices: Sequence[int]) -> Any:
        """The batch of the samples at `indices`: the dataset's own `batch` of the indices they stand for, where
        it has one, else the samples collated."""
        chosen = [self.indices[i] for i in indices]
        if hasattr(self.dataset, "batch"):
            return self.dataset.batch(chosen)
        return default_collate([self.dataset[i] for i in chosen])


class ConcatDataset(Dataset):
    """The samples of several datasets, one after another."""

    def __init__(self, datasets: Iterable[Any]):
        self.datasets = list(datasets)
        if not self.datasets:
            raise ValueError("ConcatDataset needs at least one dataset")
        self.cumulative_sizes = list(itertools.accumulate(len(d) for d in self.datasets))

    def __len__(self) -> int:
        return self.cumulative_sizes[-1]

    def __getitem__(self, index: int) -> Any:
        if index < 0:
            if -index > len(self):
                raise IndexError(f"index {index} is out of range for a dataset of {len(self)} samples")
            index += len(self)
        which = bisect.bisect_right(self.cumulative_sizes, index)
        start = self.cumulative_sizes[which - 1] if which else 0
        return self.datasets[which][index - start]


def _permutation(n: int, generator: np.random.Generator | Generator | None) -> list[int]:
    """A random order of 0..n-1, from `generator` (NumPy's or lazytensor's) or else lazytensor's default stream."""
    if isinstance(generator, np.random.Generator):
        return generator.permutation(n).tolist()
    return randperm(n, generator=generator).numpy().tolist() if n else []


def random_split(dataset: Any, lengths: Sequence[int | float],
                 generator: np.random.Generator | Generator | None = None) -> list[Subset]:
    """`dataset` cut at random into subsets of `lengths` samples; lengths that are fractions summing to 1 are
    floor(fraction * len), the samples left over given one each to the first subsets in turn (PyTorch's rule)."""
    n = len(dataset)
    if math.isclose(sum(lengths), 1) and sum(lengths) <= 1:
        if any(not 0 <= f <= 1 for f in lengths):
            raise ValueError(f"random_split: fractions must be in [0, 1], got {list(lengths)}")
        counts = [math.floor(n * f) for f in lengths]
        for i in range(n - sum(counts)):
            counts[i % len(counts)] += 1
    else:
        counts = [int(c) for c in lengths]
    if sum(counts) != n:
        raise ValueError(f"random_split: the lengths {list(lengths)} do not add up to the dataset's {n} samples")
    order = _permutation(n, generator)
    return [Subset(dataset, order[end - c:end]) for c, end in zip(counts, itertools.accumulate(counts))]


class SequentialSampler:
    """0, 1, ..., len(data_source) - 1."""

    def __init__(self, data_source: Any):
        self.data_source = data_source

    def __iter__(self) -> Iterator[int]:
        return iter(range(len(self.data_source)))

    def __len__(self) -> int:
        return len(self.data_source)


class RandomSampler:
    """A new random order of the samples at every pass (with `replacement`, `num_samples` draws of any sample)."""

    def __init__(self, data_source: Any, replacement: bool = False, num_samples: int | None = None,
                 generator: np.random.Generator | Generator | None = None):
        self.data_source, self.replacement, self.generator = data_source, replacement, generator
        self._num_samples = num_samples
        if num_samples is not None and not replacement and num_samples > len(data_source):
            raise ValueError(f"RandomSampler: {num_samples} samples without replacement from {len(data_source)}")

    @property
    def num_samples(self) -> int:
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self) -> Iterator[int]:
        n, k = len(self.data_source), self.num_samples
        if self.replacement:
            from ..random import randint
            if isinstance(self.generator, np.random.Generator):
                return iter(self.generator.integers(0, n, k).tolist())
            return iter(randint(0, n, (k,), generator=self.generator).numpy().tolist() if k else [])
        return iter(_permutation(n, self.generator)[:k])

    def __len__(self) -> int:
        return self.num_samples


class BatchSampler:
    """The indices of `sampler` in lists of `batch_size` (the last one shorter, or dropped with `drop_last`)."""

    def __init__(self, sampler: Iterable[int], batch_size: int, drop_last: bool):
        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size <= 0:
            raise ValueError(f"batch_size must be a positive integer, got {batch_size!r}")
        self.sampler, self.batch_size, self.drop_last = sampler, batch_size, drop_last

    def __iter__(self) -> Iterator[list[int]]:
        it = iter(self.sampler)
        while batch := list(itertools.islice(it, self.batch_size)):
            if len(batch) < self.batch_size and self.drop_last:
                return
            yield batch

    def __len__(self) -> int:
        n = len(self.sampler)  # type: ignore[arg-type]
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)


def default_collate(batch: Sequence[Any]) -> Any:
    """A list of samples made one batch, as PyTorch's `default_collate`: tensors and arrays stacked along a new
    first axis, Python ints, floats and bools made int64, float64 and bool tensors, NumPy scalars a tensor of
    their dtype, mappings and sequences collated field by field (a tuple's fields as a list, a named tuple's as
    the named tuple), strings left as a list."""
    elem = batch[0]
    if isinstance(elem, Tensor):
        return stack(list(batch))
    if isinstance(elem, np.ndarray):
        return stack([asarray(b) for b in batch])
    if isinstance(elem, np.generic):
        return asarray(np.array(batch))
    if isinstance(elem, bool):
        return asarray(np.array(batch, dtype=np.bool_))
    if isinstance(elem, int):
        return asarray(np.array(batch, dtype=np.int64))
    if isinstance(elem, float):
        return asarray(np.array(batch, dtype=np.float64))
    if isinstance(elem, (str, bytes)):
        return list(batch)
    if isinstance(elem, Mapping):
        return {key: default_collate([b[key] for b in batch]) for key in elem}
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):
        return type(elem)(*(default_collate(list(field)) for field in zip(*batch)))
    if isinstance(elem, Sequence):
        if any(len(b) != len(elem) for b in batch):
            raise RuntimeError("default_collate: each sample in the batch must have the same number of fields")
        return [default_collate(list(field)) for field in zip(*batch)]
    raise TypeError(f"default_collate: cannot batch samples of type {type(elem).__name__}")


class DataLoader:
    """Batches of `dataset` for a training loop, as PyTorch's `DataLoader`: `batch_size` samples each, in
    order or (`shuffle=True`) in a new random order every epoch, the last batch shorter unless `drop_last`;
    or the batches of indices a `batch_sampler` gives, or the order of a `sampler`. `collate_fn` makes a batch
    of a list of samples (`default_collate` by default; without one, a dataset with `batch(indices)` makes
    the batch itself: a `TensorDataset`'s is one gather per tensor). `batch_size=None` yields the samples
    themselves. `num_workers`, `pin_memory` are accepted for PyTorch's code and change nothing (see the
    module)."""

    def __init__(self, dataset: Any, batch_size: int | None = 1, shuffle: bool | None = None,
                 sampler: Iterable[int] | None = None, batch_sampler: Iterable[list[int]] | None = None,
                 num_workers: int = 0, collate_fn: Callable[[list[Any]], Any] | None = None,
                 pin_memory: bool = False, drop_last: bool = False,
                 generator: np.random.Generator | Generator | None = None):
        if num_workers < 0:
            raise ValueError(f"num_workers must be 0 or more, got {num_workers}")
        if sampler is not None and shuffle:
            raise ValueError("DataLoader: sampler and shuffle=True are exclusive")
        if batch_sampler is not None and (batch_size != 1 or shuffle or sampler is not None or drop_last):
            raise ValueError("DataLoader: batch_sampler is exclusive with batch_size, shuffle, sampler and drop_last")
        self.dataset, self.collate_fn, self.drop_last = dataset, collate_fn, drop_last
        self.num_workers, self.pin_memory, self.generator = num_workers, pin_memory, generator
        if sampler is None:
            sampler = RandomSampler(dataset, generator=generator) if shuffle else SequentialSampler(dataset)
        self.sampler = sampler
        self.batch_size = None if batch_sampler is not None else batch_size
        if batch_sampler is None and batch_size is not None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)
        self.batch_sampler = batch_sampler

    def __iter__(self) -> Iterator[Any]:
        if self.batch_sampler is None:
            for i in self.sampler:
                yield self.dataset[i]
            return
        fetch = getattr(self.dataset, "batch", None) if self.collate_fn is None else None
        collate = self.collate_fn or default_collate
        for indices in self.batch_sampler:
            if fetch is not None:
                yield fetch(indices)
            elif hasattr(self.dataset, "__getitems__"):
                yield collate(self.dataset.__getitems__(indices))
            else:
                yield collate([self.dataset[i] for i in indices])

    def __len__(self) -> int:
        return len(self.batch_sampler if self.batch_sampler is not None else self.sampler)  # type: ignore[arg-type]


__all__ = [
    "BatchSampler",
    "ConcatDataset",
    "DataLoader",
    "Dataset",
    "RandomSampler",
    "SequentialSampler",
    "Subset",
    "TensorDataset",
    "default_collate",
    "random_split",
]
