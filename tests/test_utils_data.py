"""Datasets, samplers and `DataLoader` (`lazytensor.utils.data`) against PyTorch's `torch.utils.data`."""
from __future__ import annotations

import collections

import numpy as np
import pytest
import torch
import torch.utils.data as tdata

import lazytensor as lt
from conftest import check
from lazytensor import nn
from lazytensor.utils.data import (
    BatchSampler,
    ConcatDataset,
    DataLoader,
    Dataset,
    SequentialSampler,
    Subset,
    TensorDataset,
    default_collate,
    random_split,
)

X = np.random.default_rng(0).standard_normal((11, 3)).astype(np.float32)
Y = np.arange(11) % 4


def batches_equal(ours: list, theirs: list) -> None:
    assert len(ours) == len(theirs)
    for b, tb in zip(ours, theirs):
        assert type(b) is type(tb)
        for x, t in zip(b, tb):
            check(x, t)


@pytest.mark.parametrize("batch_size, drop_last", [(4, False), (4, True), (1, False), (11, True), (20, False)])
def test_batches_in_order_are_torchs(batch_size, drop_last):
    ours = DataLoader(TensorDataset(X, Y), batch_size=batch_size, drop_last=drop_last)
    theirs = tdata.DataLoader(tdata.TensorDataset(torch.tensor(X), torch.tensor(Y)), batch_size=batch_size,
                              drop_last=drop_last)
    assert len(ours) == len(theirs)
    batches_equal(list(ours), list(theirs))


def test_a_shuffled_epoch_is_a_permutation_of_the_data_and_each_epoch_another():
    loader = DataLoader(TensorDataset(lt.asarray(X), lt.asarray(Y)), batch_size=4, shuffle=True)
    lt.manual_seed(1)
    epochs = []
    for _ in range(2):
        xs, ys = zip(*[(xb.numpy(), yb.numpy()) for xb, yb in loader])
        assert [len(y) for y in ys] == [4, 4, 3]
        order = np.concatenate([np.flatnonzero((X == row).all(1)) for row in np.concatenate(xs)])
        assert sorted(order.tolist()) == list(range(11))
        np.testing.assert_array_equal(np.concatenate(ys), Y[order])  # rows and labels stay together
        epochs.append(order)
    assert epochs[0].tolist() != epochs[1].tolist()
    lt.manual_seed(1)  # the same seed, the same epochs
    again = np.concatenate([yb.numpy() for _, yb in loader])
    np.testing.assert_array_equal(again, Y[epochs[0]])
    generated = DataLoader(TensorDataset(X, Y), batch_size=11, shuffle=True, generator=np.random.default_rng(7))
    (_, yb), = list(generated)
    np.testing.assert_array_equal(yb.numpy(), Y[np.random.default_rng(7).permutation(11)])


Point = collections.namedtuple("Point", "x y")
SAMPLES = {
    "tuple of int and float": [(1, 2.0), (3, 4.5)],
    "dict": [{"a": 1, "b": np.ones(2, np.float32)}, {"a": 2, "b": np.zeros(2, np.float32)}],
    "named tuple": [Point(1, 2), Point(3, 4)],
    "arrays": [np.arange(3, dtype=np.int16), np.arange(3, 6, dtype=np.int16)],
    "numpy scalars": [np.float32(1), np.float32(2.5)],
    "lists": [[1, 2], [3, 4]],
    "bools": [True, False],
}


def same(ours, theirs) -> None:
    if isinstance(theirs, torch.Tensor):
        check(ours, theirs)
    elif isinstance(theirs, dict):
        assert ours.keys() == theirs.keys()
        for k in theirs:
            same(ours[k], theirs[k])
    else:
        assert type(ours) is type(theirs)
        if isinstance(theirs, (list, tuple)):
            for o, t in zip(ours, theirs):
                same(o, t)


@pytest.mark.parametrize("kind", sorted(SAMPLES))
def test_default_collate_is_torchs(kind):
    same(default_collate(SAMPLES[kind]), tdata.default_collate(SAMPLES[kind]))


def test_strings_stay_a_list_and_other_objects_are_an_error():
    assert default_collate(["a", "b"]) == ["a", "b"]
    with pytest.raises(TypeError, match="cannot batch samples of type object"):
        default_collate([object(), object()])
    with pytest.raises(RuntimeError, match="same number of fields"):
        default_collate([(1, 2), (3,)])


class Squares(Dataset):
    """A dataset of its own, read sample by sample: (an array, its label)."""

    def __getitem__(self, i: int):
        return np.full(2, i * i, np.float64), i % 2

    def __len__(self) -> int:
        return 7


class TorchSquares(tdata.Dataset):
    def __getitem__(self, i: int):
        return np.full(2, i * i, np.float64), i % 2

    def __len__(self) -> int:
        return 7


def test_a_map_style_dataset_of_its_own_is_read_sample_by_sample_and_collated():
    batches_equal(list(DataLoader(Squares(), batch_size=3)), list(tdata.DataLoader(TorchSquares(), batch_size=3)))
    with_fn = DataLoader(Squares(), batch_size=3, collate_fn=lambda samples: [i for _, i in samples])
    assert list(with_fn) == [[0, 1, 0], [1, 0, 1], [0]]
    one_by_one = list(DataLoader(Squares(), batch_size=None))
    assert len(one_by_one) == 7 and one_by_one[3][1] == 1 and one_by_one[3][0].tolist() == [9.0, 9.0]


def test_samplers_and_batch_samplers_choose_the_batches():
    data = TensorDataset(X, Y)
    loader = DataLoader(data, batch_sampler=[[3, 1], [0, 10, 2]])
    assert [yb.numpy().tolist() for _, yb in loader] == [[3, 1], [0, 2, 2]]
    assert len(loader) == 2
    reversed_order = DataLoader(data, batch_size=5, sampler=range(10, -1, -1))
    assert [yb.numpy().tolist() for _, yb in reversed_order] == [Y[10:5:-1].tolist(), Y[5:0:-1].tolist(), [0]]
    assert list(BatchSampler(SequentialSampler(range(5)), 2, drop_last=False)) == [[0, 1], [2, 3], [4]]
    assert len(BatchSampler(range(5), 2, drop_last=True)) == 2
    with pytest.raises(ValueError, match="sampler and shuffle"):
        DataLoader(data, sampler=range(3), shuffle=True)
    with pytest.raises(ValueError, match="batch_size must be a positive integer"):
        DataLoader(data, batch_size=0)


@pytest.mark.parametrize("lengths", [[0.3, 0.3, 0.4], [0.5, 0.5], [3, 8], [0.1, 0.9]])
def test_random_split_cuts_as_torch_cuts(lengths):
    lt.manual_seed(2)
    parts = random_split(TensorDataset(X, Y), lengths)
    theirs = tdata.random_split(range(11), lengths, generator=torch.Generator().manual_seed(0))
    assert [len(p) for p in parts] == [len(t) for t in theirs]
    chosen = sorted(i for p in parts for i in p.indices)
    assert chosen == list(range(11))
    for p in parts:  # each subset's batches are the rows it chose, in its order
        rows = np.concatenate([xb.numpy() for xb, _ in DataLoader(p, batch_size=4)])
        np.testing.assert_array_equal(rows, X[p.indices])
    with pytest.raises(ValueError, match="do not add up"):
        random_split(TensorDataset(X, Y), [3, 3])


def test_subsets_and_concatenations_index_as_torchs():
    data, tdata_ = TensorDataset(X, Y), tdata.TensorDataset(torch.tensor(X), torch.tensor(Y))
    sub, tsub = Subset(data, [4, 0, 7]), tdata.Subset(tdata_, [4, 0, 7])
    for ours, theirs in zip(sub[1], tsub[1]):
        check(ours, theirs)
    both, tboth = data + sub, tdata_ + tsub
    assert isinstance(both, ConcatDataset) and len(both) == len(tboth) == 14
    for i in (0, 10, 11, 13, -1, -14):
        for ours, theirs in zip(both[i], tboth[i]):
            check(ours, theirs)
    with pytest.raises(IndexError):
        both[-15]
    batches_equal(list(DataLoader(both, batch_size=5)), list(tdata.DataLoader(tboth, batch_size=5)))
    with pytest.raises(ValueError, match="first dimensions must be one size"):
        TensorDataset(X, Y[:5])


def test_a_batch_of_a_tensor_dataset_is_one_gather_per_tensor():
    data = TensorDataset(lt.asarray(X, device="cpu"), lt.asarray(Y, device="cpu"))
    xb, yb = data.batch([5, 2, 9])
    kernels = [item.kernel for item in lt.schedule(xb)]
    assert sum("gather" in str(k) for k in kernels) == 1
    check(xb, X[[5, 2, 9]])
    check(yb, Y[[5, 2, 9]])


def test_a_tutorials_training_loop_over_a_data_loader_learns():
    """`for xb, yb in DataLoader(TensorDataset(X, y), batch_size=64, shuffle=True)`, as PyTorch's tutorials
    write it: an MLP with Adam separates four Gaussian blobs."""
    rng = np.random.default_rng(3)
    centers = np.array([[2, 2], [-2, 2], [2, -2], [-2, -2]], np.float32)
    labels = rng.integers(0, 4, 512)
    points = (centers[labels] + 0.5 * rng.standard_normal((512, 2))).astype(np.float32)
    lt.manual_seed(0)
    model = nn.Sequential(nn.Linear(2, 16), nn.ReLU(), nn.Linear(16, 4))
    opt = lt.optim.Adam(model.parameters(), lr=0.02)
    loader = DataLoader(TensorDataset(points, labels), batch_size=64, shuffle=True)
    for _ in range(5):
        for xb, yb in loader:
            loss = nn.functional.cross_entropy(model(xb), yb)
            opt.zero_grad()
            loss.backward()
            opt.step()
    accuracy = (model(lt.asarray(points)).argmax(1).numpy() == labels).mean()
    assert accuracy > 0.97
