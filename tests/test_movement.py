"""Movement ops against torch and NumPy: reshape, permute, transpose, expand, squeeze, flatten, flip, pad,
indexing, concat/stack/split/chunk, tile/repeat, and random chains of them on non-contiguous inputs."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import lazytensor as lt
from conftest import LAYOUTS, check, inputs, layout, random_array


def arange(*shape: int, dtype=np.float32) -> np.ndarray:
    """Distinct values, so any element out of place shows."""
    return np.arange(int(np.prod(shape)), dtype=dtype).reshape(shape)


# ---- reshape / view / flatten --------------------------------------------------------------------------


@pytest.mark.parametrize("kind", LAYOUTS)
@pytest.mark.parametrize("new", [(24,), (-1,), (4, 6), (2, -1, 3), [3, 8], (1, 2, 1, 12, 1), (6, 4)], ids=str)
def test_reshape(kind, new):
    x, t = layout(random_array((2, 3, 4), lt.float32), kind)
    check(x.reshape(new), t.reshape(new))
    check(x.reshape(*new), t.reshape(*new))
    check(x.view(new), t.reshape(new))


def test_reshape_forms_and_identity():
    x, t = layout(arange(2, 3, 4), "transposed")
    check(x.reshape([6, -1]), t.reshape(6, -1))
    check(x.reshape((4, 3, 2)), t.reshape(4, 3, 2))
    check(x.reshape(4, 3, 2), t.reshape(4, 3, 2))
    assert x.reshape(x.shape) is x
    check(lt.reshape(x, (2, 12)), t.reshape(2, 12))
    z = lt.asarray(np.float32(5.0))
    check(z.reshape(1, 1), torch.tensor(5.0).reshape(1, 1))
    check(z.reshape(-1), torch.tensor(5.0).reshape(-1))
    check(lt.asarray(arange(1, 1)).reshape(()), torch.tensor(arange(1, 1)).reshape(()))
    e = lt.asarray(np.zeros((0, 3), np.float32))
    check(e.reshape(-1, 3), torch.zeros(0, 3).reshape(-1, 3))
    check(e.reshape(3, 0, 5), torch.zeros(0, 3).reshape(3, 0, 5))
    check(e.reshape(-1), torch.zeros(0, 3).reshape(-1))


@pytest.mark.parametrize("bad", [(5, -1), (7,), (-1, -1), (2, -2, 6), (25,), (0, -1)], ids=str)
def test_reshape_wrong_sizes_raise(bad):
    x = lt.asarray(arange(2, 3, 4))
    with pytest.raises(lt.ShapeError):
        x.reshape(bad)
    with pytest.raises(ValueError):  # ShapeError is a ValueError, as NumPy raises
        x.view(*bad)


def test_reshape_of_empty_with_unknown_size_raises():
    with pytest.raises(lt.ShapeError):
        lt.asarray(np.zeros((0, 3), np.float32)).reshape(0, -1)  # -1 could be anything


@pytest.mark.parametrize("start,end", [(0, -1), (1, -1), (0, 1), (1, 2), (-2, -1), (2, 2), (0, 0)])
def test_flatten(start, end):
    for kind, x, t in inputs((2, 3, 4), lt.float32):
        check(x.flatten(start, end), t.flatten(start, end))


def test_flatten_ravel_0d_and_errors():
    check(lt.asarray(np.float32(3)).flatten(), torch.tensor(3.0).flatten())
    x, t = layout(arange(2, 3, 4), "flipped")
    check(x.flatten(), t.flatten())
    check(x.ravel(), np.ravel(t.numpy()))
    check(lt.flatten(x, 1), t.flatten(1))
    with pytest.raises(lt.AxisError):
        x.flatten(2, 1)
    with pytest.raises(lt.AxisError):
        x.flatten(0, 3)


# ---- permute / transpose / swapaxes ---------------------------------------------------------------------


@pytest.mark.parametrize("order", [(0, 1, 2), (2, 0, 1), (1, 0, 2), (2, 1, 0), (-1, 0, -2)], ids=str)
def test_permute(order):
    for kind, x, t in inputs((2, 3, 4), lt.float32):
        check(x.permute(order), t.permute(order))
        check(x.permute(*order), t.permute(*order))
        check(x.permute_dims(order), np.permute_dims(t.numpy(), order))


def test_permute_errors():
    x = lt.asarray(arange(2, 3, 4))
    for bad in [(0, 1), (0, 1, 1), (0, 1, 3), (0, 1, 2, 3), (0, -1, 2)]:
        with pytest.raises(lt.AxisError):
            x.permute(bad)


def test_permute_of_permute():
    for kind, x, t in inputs((2, 3, 4, 5), lt.float32):
        check(x.permute(3, 1, 0, 2).permute(2, 0, 3, 1), t.permute(3, 1, 0, 2).permute(2, 0, 3, 1))
        check(x.permute(1, 0, 3, 2).permute(1, 0, 3, 2), t)


def test_transpose_forms():
    for kind, x, t in inputs((2, 3, 4), lt.float32):
        check(x.transpose(), t.permute(2, 1, 0))  # no args: reverse (NumPy)
        check(x.transpose(None), t.permute(2, 1, 0))  # as NumPy's ndarray.transpose(None)
        check(x.T, t.permute(2, 1, 0))
        check(x.transpose(0, 2), t.transpose(0, 2))  # two ints: swap (torch)
        check(x.transpose(-1, 1), t.transpose(-1, 1))
        check(x.transpose((1, 2, 0)), t.permute(1, 2, 0))  # a tuple: permute (NumPy)
        check(x.transpose(1, 0, 2), np.transpose(t.numpy(), (1, 0, 2)))
        check(x.swapaxes(0, -1), t.swapaxes(0, -1))
        check(x.swapdims(1, 2), t.swapdims(1, 2))
        check(x.mT, t.mT)
        check(lt.transpose(x), np.transpose(t.numpy()))
        check(lt.swapaxes(x, 0, 1), t.swapaxes(0, 1))
    v = lt.asarray(arange(5))
    check(v.T, arange(5))
    check(v.transpose(), arange(5))
    with pytest.raises(lt.ShapeError):
        _ = v.mT
    with pytest.raises(lt.AxisError):
        lt.asarray(arange(2, 3)).transpose(0, 2)
    with pytest.raises(lt.AxisError):
        lt.asarray(arange(2, 3)).swapaxes(-3, 0)


# ---- expand / broadcast_to / squeeze / unsqueeze ----------------------------------------------------------


def test_expand_and_broadcast_to():
    # (size-1 axes are never last here: conftest's flipped layout cannot flip a last axis of size 1)
    for kind, x, t in inputs((3, 1, 2), lt.float32):
        check(x.expand(3, 4, 2), t.expand(3, 4, 2))
        check(x.expand(-1, 4, -1), t.expand(-1, 4, -1))  # -1 keeps the size
        check(x.expand(2, -1, 5, 2), t.expand(2, -1, 5, 2))  # new leading axes
        check(x.expand((2, 3, -1, -1)), t.expand((2, 3, -1, -1)))
        check(x.broadcast_to(2, 3, 6, 2), t.broadcast_to((2, 3, 6, 2)))
        check(x.broadcast_to((3, 1, 2)), t)
        check(lt.broadcast_to(x, (4, 3, 3, 2)), t.broadcast_to((4, 3, 3, 2)))
        check(x.broadcast_to(3, 0, 2), t.broadcast_to((3, 0, 2)))
        check(x.broadcast_to(0, 3, 2, 2), t.broadcast_to((0, 3, 2, 2)))
    for kind, x, t in inputs((1, 3), lt.int32):
        check(x.expand(4, 3), t.expand(4, 3))
        check(x.broadcast_to(2, 2, 3), t.broadcast_to((2, 2, 3)))
    z = lt.asarray(np.float32(2.0))
    check(z.broadcast_to(2, 3), torch.tensor(2.0).broadcast_to((2, 3)))
    check(z.expand(4), torch.tensor(2.0).expand(4))


def test_expand_then_compute():
    # expanded views are read by index 0 along the broadcast axis; a chain on top must see the copies
    x, t = layout(arange(1, 3), "flipped")
    check(x.expand(4, 3).T.reshape(-1)[::5], t.expand(4, 3).T.reshape(-1)[::5])
    check((x.expand(3, 3) + x.T).sum(0), (t.expand(3, 3) + t.T).sum(0))


@pytest.mark.parametrize("target", [(2,), (2, 1), (2, 4, 1), (3, 0, 1), (-1, 3), (3, -1), (2, -1, 1)], ids=str)
def test_broadcast_to_bad_shapes_raise(target):
    x = lt.asarray(arange(3, 1))
    with pytest.raises(lt.ShapeError):
        x.broadcast_to(target)


def test_expand_bad_shapes_raise():
    x = lt.asarray(arange(3, 1))
    for bad in [(4,), (2, 2), (-1, 3, 4), (3, -2)]:
        with pytest.raises(lt.ShapeError):
            x.expand(bad)


def test_squeeze():
    for kind, x, t in inputs((1, 3, 1, 2), lt.float32):
        check(x.squeeze(), t.squeeze())
        check(x.squeeze(0), t.squeeze(0))
        check(x.squeeze(-2), t.squeeze(-2))
        check(x.squeeze((0, 2)), t.squeeze((0, 2)))
        check(x.squeeze(dim=2), t.squeeze(dim=2))
        check(lt.squeeze(x, (-2, 0)), t.squeeze((-2, 0)))
    x, t = layout(arange(2, 1), "transposed")
    check(x.squeeze(-1), t.squeeze(-1))
    z = lt.asarray(np.ones((1, 1), np.float32))
    check(z.squeeze(), torch.ones(1, 1).squeeze())
    check(lt.asarray(np.float32(1)).squeeze(), torch.tensor(1.0).squeeze())
    x = lt.asarray(arange(1, 3, 1))
    with pytest.raises(lt.ShapeError):  # NumPy's rule: a named axis must have size 1
        x.squeeze(1)
    with pytest.raises(lt.AxisError):
        x.squeeze(3)
    with pytest.raises(lt.AxisError):
        x.squeeze((0, 0))


def test_unsqueeze_expand_dims():
    for kind, x, t in inputs((2, 3), lt.float32):
        for axis in (0, 1, 2, -1, -2, -3):
            check(x.unsqueeze(axis), t.unsqueeze(axis))
        check(x.expand_dims(0), np.expand_dims(t.numpy(), 0))
        check(x.expand_dims((0, -1)), np.expand_dims(t.numpy(), (0, -1)))
        check(x.expand_dims((1, 3)), np.expand_dims(t.numpy(), (1, 3)))
        check(lt.expand_dims(x, -2), np.expand_dims(t.numpy(), -2))
    x = lt.asarray(arange(2, 3))
    with pytest.raises(lt.AxisError):
        x.unsqueeze(3)
    with pytest.raises(lt.AxisError):
        x.unsqueeze(-4)
    with pytest.raises(lt.AxisError):
        x.expand_dims((0, 0))
    with pytest.raises(lt.AxisError):
        x.expand_dims((0, 4))
    check(lt.asarray(np.float32(1)).unsqueeze(0), torch.tensor(1.0).unsqueeze(0))


# ---- flip / pad ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("axis", [None, 0, 1, -1, (0, 2), (2, 1, 0)], ids=str)
def test_flip(axis):
    for kind, x, t in inputs((2, 3, 4), lt.float32):
        dims = tuple(range(3)) if axis is None else (axis,) if isinstance(axis, int) else axis
        check(x.flip(axis), t.flip(dims))
        check(lt.flip(x, axis), np.flip(t.numpy(), axis))
    x, t = layout(arange(2, 3, 4), "flipped")
    check(x.flip(dims=(1,)), t.flip((1,)))


def test_flip_twice_and_errors():
    for kind, x, t in inputs((3, 4), lt.int32):
        check(x.flip(0).flip(0), t)
        check(x.flip(1).flip(0), t.flip((0, 1)))
    check(lt.asarray(np.float32(1)).flip(), np.flip(np.float32(1)))
    with pytest.raises(lt.AxisError):
        lt.asarray(arange(2, 3)).flip(2)


@pytest.mark.parametrize("width", [1, (1, 2), [(0, 1)], [(1, 0), (2, 3)], ((0, 0), (0, 2)), [[2, 1], [0, 0]]], ids=str)
def test_pad_widths(width):
    for kind, x, t in inputs((3, 4), lt.float32):
        check(x.pad(width), np.pad(t.numpy(), width))
        check(x.pad(width, value=-2.5), np.pad(t.numpy(), width, constant_values=-2.5))


@pytest.mark.parametrize("dtype", [lt.int8, lt.uint8, lt.int64, lt.float64, lt.bool_], ids=str)
def test_pad_dtypes_and_values(dtype):
    arr = random_array((2, 3), dtype)
    value = True if dtype == lt.bool_ else 7
    for kind in ("contiguous", "transposed"):
        x, t = layout(arr, kind)
        check(x.pad(((1, 0), (2, 1))), np.pad(t.numpy(), ((1, 0), (2, 1))))
        check(x.pad(1, value=value), np.pad(t.numpy(), 1, constant_values=value))
        check(lt.pad(x, (0, 2), constant_values=value), np.pad(t.numpy(), (0, 2), constant_values=value))


def test_pad_keeps_the_dtype():
    # NumPy and torch fill with the value converted to the tensor's dtype: pad never changes the dtype.
    arr = arange(2, 3, dtype=np.int32)
    x, t = lt.asarray(arr), torch.tensor(arr)
    check(x.pad(1, value=1.5), np.pad(arr, 1, constant_values=1.5))
    check(x.pad((0, 1), value=-3.9), torch.nn.functional.pad(t, (0, 1, 0, 1), value=-3.9))


def test_pad_0d_1d_and_empty():
    check(lt.asarray(arange(3)).pad(2, value=9), np.pad(arange(3), 2, constant_values=9))
    check(lt.asarray(np.zeros((0, 2), np.float32)).pad(1, value=1), np.pad(np.zeros((0, 2), np.float32), 1,
                                                                           constant_values=1))
    x = lt.asarray(arange(2, 3))
    with pytest.raises(lt.ShapeError):
        x.pad([(1, 1)] * 3)
    with pytest.raises(ValueError):
        x.pad(-1)
    with pytest.raises(ValueError):
        x.pad([(0, 1), (-1, 0)])


@pytest.mark.parametrize("mode", ["edge", "reflect", "symmetric", "wrap"])
@pytest.mark.parametrize("dtype", [lt.float32, lt.int64, lt.float16, lt.bool_], ids=str)
def test_pad_modes_as_numpy(mode, dtype):
    """NumPy's modes, amounts past the axis's size included (NumPy reflects and wraps again), every layout, and
    through np.pad of a tensor; a size-1 axis, 1-d and 0-d."""
    arr = random_array((3, 4), dtype, 2)
    for kind in LAYOUTS:
        x, t = layout(arr, kind, oracle="numpy")
        for width in (1, ((1, 2), (0, 5)), ((4, 0), (9, 2)), ((7, 7), (0, 0))):
            check(x.pad(width, mode), np.pad(t, width, mode))
    check(np.pad(lt.asarray(arr), 2, mode=mode), np.pad(arr, 2, mode=mode))
    check(lt.pad(lt.asarray(arr[:1, :1]), ((3, 2), (1, 4)), mode=mode), np.pad(arr[:1, :1], ((3, 2), (1, 4)), mode))
    check(lt.asarray(arr[0]).pad((5, 6), mode), np.pad(arr[0], (5, 6), mode))
    check(lt.asarray(arr[0, 0]).pad(1, mode), np.pad(arr[0, 0], 1, mode))
    with pytest.raises(lt.ShapeError, match="non-empty"):
        lt.zeros((0, 2)).pad(1, mode)


def test_pad_mode_errors():
    x = lt.ones((2, 2))
    with pytest.raises(ValueError, match="mode"):
        x.pad(1, "linear_ramp")
    with pytest.raises(ValueError, match="constant_values"):
        x.pad(1, "edge", constant_values=3)
    check(x.pad(1, constant_values=3), np.pad(np.ones((2, 2), np.float32), 1, constant_values=3))


def test_pad_then_slice_and_reduce():
    for kind, x, t in inputs((3, 4), lt.float32):
        p = np.pad(t.numpy(), ((1, 2), (3, 0)), constant_values=1.0)
        check(x.pad(((1, 2), (3, 0)), value=1.0)[::2, 1:-1], p[::2, 1:-1])
        check(x.pad(2).sum(0), torch.nn.functional.pad(t, (2, 2, 2, 2)).sum(0))


# ---- __getitem__ -----------------------------------------------------------------------------------------

INDICES = [
    0, -1, 2, (1, 2), (-2, -3, -1), (0, 1, 3),
    slice(None), slice(1, None), slice(None, -1), slice(None, None, 2), slice(1, 3, 2), slice(-2, None),
    slice(None, None, -1), slice(None, None, -2), slice(2, 0, -1), slice(-1, -4, -2), slice(5, None), slice(3, 1),
    (slice(None), 1), (Ellipsis, 2), (Ellipsis, slice(None, None, -1)), (1, Ellipsis), (Ellipsis,),
    None, (None, 1), (slice(None), None, slice(None, None, -3)), (None, Ellipsis, None),
    (1, None, slice(None, 2), -1), (slice(None, None, -1), Ellipsis, slice(1, -1, 2)),
    (Ellipsis, None, 0), (slice(1, 2), slice(None, None, -2), slice(None, None, 3)),
    (-1, slice(None, None, -1), None, slice(-2, None)), (slice(10, -10, -1),), (slice(-10, 10, 4), 0),
]


@pytest.mark.parametrize("index", INDICES, ids=repr)
def test_getitem(index):
    # torch has no negative steps, so NumPy's answer on the same view is the expectation.
    for kind, x, t in inputs((3, 4, 5), lt.float32):
        check(x[index], t.numpy()[index])


def test_getitem_matches_torch_for_positive_steps():
    for kind, x, t in inputs((3, 4, 5), lt.int32):
        for index in [(1, slice(None, None, 2), -1), (None, 2, Ellipsis, slice(1, 4)), (slice(0, 3, 2), None)]:
            check(x[index], t[index])


def test_getitem_index_types():
    x, t = layout(arange(3, 4), "flipped")
    a = t.numpy()
    check(x[np.int64(1)], a[np.int64(1)])
    check(x[np.int32(-1), np.int64(2)], a[-1, 2])
    check(x[np.array(2)], a[2])
    check(x[1:np.int64(3)], a[1:3])
    check(x[2, 3], torch.tensor(a)[2, 3])


def test_getitem_0d():
    z = lt.asarray(np.float32(3))
    check(z[...], np.float32(3)[...])
    check(z[None], np.float32(3)[None])
    check(z[None, ..., None], np.array(np.float32(3))[None, ..., None])
    check(z[()], np.array(np.float32(3))[()])
    with pytest.raises(IndexError):
        z[0]


def test_getitem_errors():
    x = lt.asarray(arange(3, 4))
    for bad in [3, -4, (0, 4), (0, -5), (slice(None), 10), (Ellipsis, -5)]:
        with pytest.raises(IndexError):
            x[bad]
    with pytest.raises(IndexError):
        x[0, 0, 0]
    with pytest.raises(IndexError):
        x[..., 0, ...]
    with pytest.raises(ValueError):
        x[::0]
    with pytest.raises(TypeError):
        x[1.0]
    with pytest.raises(TypeError):
        x["a"]


def test_getitem_size0_results():
    for kind, x, t in inputs((3, 4), lt.float32):
        a = t.numpy()
        for index in [slice(2, 1), (slice(None), slice(4, None)), (slice(None, None, -1), slice(0, 0))]:
            check(x[index], a[index])
    e = lt.asarray(np.zeros((0, 3), np.float32))
    check(e[:, 1], np.zeros((0, 3), np.float32)[:, 1])
    with pytest.raises(IndexError):
        e[0]


WINDOWS = [(slice(2, 5),), (3,), (1, slice(1, 3)), (2, 3), (slice(1, 2), slice(0, 4), slice(2, 4)), (Ellipsis, 1),
           (slice(None), slice(1, 3)), (slice(0, 4, 2),), (slice(None), 2), (slice(1, 4), slice(1, 3), slice(2, 5)),
           (slice(1, None, 2), slice(None, None, 3), slice(1, 4, 2)), (-1, slice(-3, -1), -2), (2, 3, 4),
           (slice(None), slice(2, 2)), (Ellipsis, slice(None, None, -2)), (slice(4, 0, -3), 1, slice(None, 1, -1)),
           (Ellipsis, slice(3, 4)), (None, slice(None), -1, None, slice(1, None, 3))]


def has_negative_step(index: tuple) -> bool:
    return any(isinstance(i, slice) and (i.step or 1) < 0 for i in index)


@pytest.mark.parametrize("dtype", [lt.float32, lt.float64, lt.int64, lt.uint8, lt.bool_, lt.float16])
def test_slices_of_realized_data_share_its_memory(dtype):
    """Any basic slice of a realized tensor (a run of rows `x[i:i + n]`, a column `x[:, t]`, a tile, a step, a
    negative step) is a window on its buffer seen through views with no offset in them: the same values as torch's
    slices (NumPy's for a negative step, which torch lacks), at every offset one graph (nothing compiles again: a
    minibatch loop, a sliding window over time); the window keeps its base's memory alive."""
    arr = random_array((6, 4, 5), dtype, seed=7)
    x, t = lt.asarray(arr).realize(), torch.tensor(arr)
    for index in WINDOWS:
        want = arr[index] if has_negative_step(index) else t[index]
        check(x[index], want)
        check((x[index] + 1) * 2, (want + 1) * 2)
    slices = [lambda i: np.s_[i:i + 2], lambda i: np.s_[:, i % 3:i % 3 + 2], lambda i: np.s_[..., i],
              lambda i: np.s_[i:i + 2, 1, i % 3:i % 3 + 2:2], lambda i: np.s_[i % 2::2, ::3, i]]
    for at in slices:
        lt.reset_stats()
        for i in range(4):
            check(x[at(i)] == x[at(i + 1)], t[at(i)] == t[at(i + 1)])
        assert lt.stats().kernels_compiled <= 1, at(0)
    rows, columns = x[1:3], x[:, 1:3, ::2]
    del x
    import gc
    gc.collect()
    lt.asarray(random_array((6, 4, 5), dtype, seed=8)).realize()  # memory a freed base would be reused for
    check(rows, t[1:3])
    check(columns, t[:, 1:3, ::2])


def test_a_strided_window_reads_no_mask():
    """A slice that is no run (a column, a tile with steps) reads its window through a padding to whole rows that
    nothing reads: the kernel's loads have no bounds to check, as a shrink's had none."""
    x = lt.asarray(arange(6, 4, 5)).realize()
    for view in (x[:, 1], x[1:5:2, 1:3, 2:5:2], x[..., 3:4]):
        (item,) = lt.schedule(view * 2)
        assert "valid" not in str(item.kernel), str(item.kernel)


def test_writes_and_a_window():
    """A write to a tensor does not reach a window taken from it before (as a row's, and as its slice op's did);
    a window written in place writes the tensor it was taken from (NumPy's and PyTorch's views)."""
    arr = arange(4, 5)
    x = lt.asarray(arr).realize()
    column = x[:, 1]
    x[:, 1] = 5
    check(column, arr[:, 1])
    want = arr.copy()
    want[:, 1] = 5
    check(x, want)
    tile = x[1:3, ::2]
    tile += 1
    want[1:3, ::2] += 1
    check(x, want)
    check(tile, want[1:3, ::2])


def test_slices_inside_jit_and_vmap_read_their_argument():
    """Where lt.jit or vmap records, a slice of an argument is the slice op on it (a window would be a buffer of the
    recording call's): each call's values, replayed."""
    f = lt.jit(lambda x, i: x[i:i + 2] * 2)
    for k in range(4):
        arr = arange(4, 3, dtype=np.int64) + k
        check(f(lt.asarray(arr), 1), arr[1:3] * 2)
    arr = arange(2, 4, 3, dtype=np.int64)
    check(lt.vmap(lambda x: x[1:3].sum())(lt.asarray(arr)), arr[:, 1:3].sum((1, 2)))
    check(lt.vmap(lambda x: x[:, 1:3].sum())(lt.asarray(arr)), arr[:, :, 1:3].sum((1, 2)))
    f = lt.jit(lambda x, i: x[:, i, ::2] * 2)
    for k in range(4):
        arr = arange(3, 4, 5, dtype=np.int64) + k
        check(f(lt.asarray(arr), 1), arr[:, 1, ::2] * 2)


def test_slices_of_a_parameter_record_their_gradient():
    """A slice of a realized tensor that requires grad is recorded (its gradient reaches the rows it took); under
    no_grad it is a window that requires none."""
    arr = random_array((5, 3), lt.float64, seed=9)
    w, tw = lt.asarray(arr).requires_grad_(), torch.tensor(arr, requires_grad=True)
    (w[1:3] * w[2:4]).sum().backward()
    (tw[1:3] * tw[2:4]).sum().backward()
    check(w.grad, tw.grad)
    with lt.no_grad():
        assert not w[1:3].requires_grad
        check(w[1:3], tw[1:3])
    w.grad = tw.grad = None
    (w[:, 1:3] * w[:, ::2]).sum().backward()
    (tw[:, 1:3] * tw[:, ::2]).sum().backward()
    check(w.grad, tw.grad)


def test_gradients_through_windows_of_data():
    """Windows of data that requires no gradient (a sliding window over a realized sequence) pass a weight's
    gradient as torch's slices do, at every offset one graph."""
    arr, warr = random_array((4, 9, 3), lt.float64, seed=10), random_array((3, 2), lt.float64, seed=11)
    x, t = lt.asarray(arr).realize(), torch.tensor(arr)
    w, tw = lt.asarray(warr).requires_grad_(), torch.tensor(warr, requires_grad=True)
    for i in range(3):
        (x[:, i] @ w + x[:, i + 1:i + 3].sum(1) @ w).tanh().sum().backward()
        (t[:, i] @ tw + t[:, i + 1:i + 3].sum(1) @ tw).tanh().sum().backward()
        check(w.grad, tw.grad)


def test_iteration_and_len():
    x, t = layout(arange(3, 2), "transposed")
    assert len(x) == 3
    rows = list(x)
    assert len(rows) == 3
    for r, tr in zip(rows, t):
        check(r, tr)


# ---- chains on non-contiguous inputs ----------------------------------------------------------------------

CHAINS = {
    "T-slice-reshape-step": (lambda x: x.T[1:, ::-2].reshape(-1)[::3],
                             lambda a: np.ascontiguousarray(a.T[1:, ::-2]).reshape(-1)[::3]),
    "flip-permute-reshape": (lambda x: x.flip(1).permute(2, 0, 1).reshape(4, -1)[:, 1::2],
                             lambda a: np.flip(a, 1).transpose(2, 0, 1).reshape(4, -1)[:, 1::2]),
    "slice-expand-reshape": (lambda x: x[:, None, 1, ::-1].broadcast_to(2, 3, 4).reshape(6, 4).T,
                             lambda a: np.broadcast_to(a[:, None, 1, ::-1], (2, 3, 4)).reshape(6, 4).T),
    "pad-flip-slice": (lambda x: x.pad(((0, 1), (2, 0), (1, 1)), value=-1.0).flip((0, 2))[1:, ::2, 1:-1],
                       lambda a: np.flip(np.pad(a, ((0, 1), (2, 0), (1, 1)), constant_values=-1.0), (0, 2))
                       [1:, ::2, 1:-1]),
    "reshape-transpose-reshape": (lambda x: x.reshape(4, 6).T.reshape(3, 8)[::-1],
                                  lambda a: a.reshape(4, 6).T.reshape(3, 8)[::-1]),
    "squeeze-unsqueeze-flatten": (lambda x: x[:, :1].squeeze(1).unsqueeze(0).flatten(0, 1)[::-1, 2:],
                                  lambda a: a[:, :1].squeeze(1)[None].reshape(2, 4)[::-1, 2:]),
    "tile-slice": (lambda x: x[0].tile(2, 1)[1:5, ::3], lambda a: np.tile(a[0], (2, 1))[1:5, ::3]),
    "split-cat": (lambda x: lt.cat(x.split([1, 3], dim=2)[::-1], 2).reshape(-1, 2),
                  lambda a: np.concatenate(np.split(a, [1], axis=2)[::-1], 2).reshape(-1, 2)),
    "expand-sum": (lambda x: x[:, :, None, 0].expand(2, 3, 5).sum(0),
                   lambda a: np.broadcast_to(a[:, :, None, 0], (2, 3, 5)).sum(0)),
}


@pytest.mark.parametrize("name", list(CHAINS))
def test_movement_chains(name):
    fn, ref = CHAINS[name]
    for kind, x, t in inputs((2, 3, 4), lt.float32):
        check(fn(x), ref(t.numpy()))


def test_chain_against_torch():
    for kind, x, t in inputs((4, 6), lt.float32):
        check(x.T.reshape(3, 8)[1:, ::3].unsqueeze(0).expand(2, -1, -1).permute(2, 0, 1).contiguous(),
              t.T.reshape(3, 8)[1:, ::3].unsqueeze(0).expand(2, -1, -1).permute(2, 0, 1).contiguous())
        check(x[1:3].flatten().view(2, 6).mT[::2], t[1:3].flatten().view(2, 6).mT[::2])


@pytest.mark.parametrize("dtype", [lt.float32, lt.float64, lt.int8, lt.bool_], ids=str)
@pytest.mark.parametrize("shape", [(16, 16), (17, 33), (70, 65), (3, 40, 70), (1, 100)], ids=str)
def test_transposed_copies_in_tiles(dtype, shape):
    """Kernels that store along one axis and load along another walk tiles (CPU), whole and partial ones:
    transposes, a transpose beside a plain load, a permute of three axes, math on a transpose."""
    for kind, x, t in inputs(shape, dtype):
        check(x.mT.contiguous(), t.mT.contiguous())
        check(x.permute(2, 0, 1) if x.ndim == 3 else x.T[::-1], t.permute(2, 0, 1) if t.ndim == 3 else t.T.flip(0))
        square = x[..., : min(shape[-2:]), : min(shape[-2:])]
        twin = t[..., : min(shape[-2:]), : min(shape[-2:])]
        if dtype == lt.bool_:
            check(square ^ square.mT, twin ^ twin.mT)
        else:
            check(square + square.mT * 3, twin + twin.mT * 3)
    if dtype.is_float:
        x, t = next(inputs(shape, dtype))[1:]
        check(x.mT.exp(), t.mT.exp())


def test_contiguous():
    for kind, x, t in inputs((3, 4), lt.float32):
        c = x.T.contiguous()
        check(c, t.T.contiguous())
        check(c[::-1] * 2, t.T.flip(0) * 2)
        check(x.contiguous(), t)
    r = lt.asarray(arange(2, 2)).realize()
    assert r.contiguous() is r  # already in its own buffer


# ---- concat / stack ----------------------------------------------------------------------------------


@pytest.mark.parametrize("axis", [0, 1, -1, -2])
def test_concat(axis):
    a = random_array((2, 3), lt.float32, seed=1)
    b = random_array((2, 3), lt.float32, seed=2)
    for kind in LAYOUTS:
        (x, t), (y, u) = layout(a, kind), layout(b, "flipped")
        check(lt.concat([x, y, x], axis), torch.cat([t, u, t], axis))
        check(lt.cat((y, x), axis=axis), torch.cat((u, t), dim=axis))


def test_concat_uneven_and_empty_pieces():
    x, t = layout(arange(2, 3), "transposed")
    y = lt.asarray(arange(1, 3) + 100)
    z = lt.asarray(np.zeros((0, 3), np.float32))
    check(lt.concat([x, y, z, x]), torch.cat([t, torch.tensor(arange(1, 3) + 100), torch.zeros(0, 3), t]))
    check(lt.concat([z, z]), torch.zeros(0, 3))
    check(lt.concat([x]), t)
    check(lt.concat([x, x[:, :1]], axis=1), torch.cat([t, t[:, :1]], 1))


def test_concat_axis_none_flattens():
    a, b = arange(2, 3), arange(4, dtype=np.int8)
    x, t = layout(a, "flipped")
    check(lt.concat([x, lt.asarray(b)], axis=None), np.concatenate([t.numpy(), b], axis=None))


@pytest.mark.parametrize("pair", [(lt.int8, lt.uint8), (lt.bool_, lt.int8), (lt.int32, lt.float32),
                                  (lt.int64, lt.float64), (lt.float32, lt.float64), (lt.bool_, lt.float32),
                                  (lt.uint8, lt.int64)], ids=str)
def test_concat_mixed_dtypes_promote(pair):
    a, b = random_array((2, 2), pair[0], seed=3), random_array((1, 2), pair[1], seed=4)
    check(lt.concat([lt.asarray(a), lt.asarray(b)]), torch.cat([torch.tensor(a), torch.tensor(b)]))
    check(lt.concat([lt.asarray(b), lt.asarray(a)]), torch.cat([torch.tensor(b), torch.tensor(a)]))


def test_concat_errors():
    x = lt.asarray(arange(2, 3))
    with pytest.raises(lt.ShapeError):
        lt.concat([x, lt.asarray(arange(2, 2))])
    with pytest.raises(lt.ShapeError):
        lt.concat([x, lt.asarray(arange(6))])
    with pytest.raises(lt.ShapeError):
        lt.concat([lt.asarray(np.float32(1)), lt.asarray(np.float32(2))])
    with pytest.raises(lt.AxisError):
        lt.concat([x, x], axis=2)
    with pytest.raises(ValueError):
        lt.concat([])
    with pytest.raises(TypeError):
        lt.concat([x, arange(2, 3)])


@pytest.mark.parametrize("axis", [0, 1, 2, -1, -3])
def test_stack(axis):
    for kind, x, t in inputs((2, 3), lt.float32):
        y = lt.asarray(arange(2, 3))
        check(lt.stack([x, y, x], axis), torch.stack([t, torch.tensor(arange(2, 3)), t], axis))


def test_stack_0d_dtypes_and_errors():
    a, b = lt.asarray(np.float32(1)), lt.asarray(np.int32(2))
    check(lt.stack([a, b]), torch.stack([torch.tensor(1.0), torch.tensor(2, dtype=torch.int32)]))
    with pytest.raises(lt.ShapeError):
        lt.stack([lt.asarray(arange(2)), lt.asarray(arange(3))])
    with pytest.raises(lt.AxisError):
        lt.stack([lt.asarray(arange(2))], axis=2)
    with pytest.raises(ValueError):
        lt.stack([])


# ---- split / chunk --------------------------------------------------------------------------------------


def check_pieces(got: list[lt.Tensor], want) -> None:
    """As many pieces as the oracle, each matching it."""
    assert len(got) == len(want)
    for g, w in zip(got, want):
        check(g, w)


@pytest.mark.parametrize("how", [3, 1, 6, [2], [1, 4], [4, 2], [-2], [0, 6], [-10, 3, 10], []], ids=str)
def test_numpy_split(how):
    for kind, x, t in inputs((6, 4), lt.float32):
        got, want = lt.split(x, how), np.split(t.numpy(), how)
        check_pieces(got, want)


def test_numpy_split_axis():
    for kind, x, t in inputs((2, 6), lt.int32):
        for how, axis in ((2, 1), ([1, 5], -1), (2, 0)):
            got, want = lt.split(x, how, axis=axis), np.split(t.numpy(), how, axis=axis)
            check_pieces(got, want)
    with pytest.raises(lt.ShapeError):  # 6 does not divide into 4 sections (NumPy raises too)
        lt.split(lt.asarray(arange(6)), 4)
    with pytest.raises(lt.AxisError):
        lt.split(lt.asarray(arange(6)), 2, axis=1)


@pytest.mark.parametrize("how", [1, 2, 3, 4, 7, [2, 4], [6, 0], [0, 1, 5]], ids=str)
def test_tensor_split_torch(how):
    for kind, x, t in inputs((6, 3), lt.float32):
        got, want = x.split(how), t.split(how)
        check_pieces(got, want)


def test_tensor_split_dim_and_errors():
    for kind, x, t in inputs((3, 5), lt.float32):
        for how in (2, [1, 1, 3]):
            got, want = x.split(how, dim=-1), t.split(how, dim=-1)
            check_pieces(got, want)
    e, te = lt.asarray(np.zeros((0, 2), np.float32)), torch.zeros(0, 2)
    assert len(e.split(2)) == len(te.split(2))
    check(e.split(2)[0], te.split(2)[0])
    x = lt.asarray(arange(5))
    with pytest.raises(lt.ShapeError):
        x.split([2, 2])
    with pytest.raises(ValueError):
        x.split(0)
    with pytest.raises(lt.AxisError):
        x.split(2, dim=1)


@pytest.mark.parametrize("chunks", [1, 2, 3, 4, 5, 6, 8])
def test_chunk(chunks):
    for kind, x, t in inputs((6, 2), lt.float32):
        got, want = x.chunk(chunks), t.chunk(chunks)
        check_pieces(got, want)
        got, want = x.chunk(chunks, dim=1), t.chunk(chunks, dim=1)
        check_pieces(got, want)


def test_chunk_of_an_empty_axis_and_a_count_below_1():
    """A count below 1 is a ValueError naming it (torch raises too), not a ZeroDivisionError or a split
    into pieces of -(-n // -1); an empty axis gives `chunks` empty pieces, as torch."""
    x, t = lt.asarray(arange(10)), torch.tensor(arange(10))
    for chunks in (0, -1, -5):
        with pytest.raises(ValueError, match=f"chunks must be greater than 0, got {chunks}"):
            x.chunk(chunks)
        with pytest.raises(RuntimeError):
            t.chunk(chunks)
    e, te = lt.asarray(np.zeros((0, 2), np.float32)), torch.zeros(0, 2)
    for chunks in (1, 3):
        check_pieces(e.chunk(chunks), te.chunk(chunks))
        check_pieces(e.chunk(chunks, dim=1), te.chunk(chunks, dim=1))


# ---- tile / repeat -------------------------------------------------------------------------------------


@pytest.mark.parametrize("reps", [(2,), (1, 3), (2, 1), (2, 2), (3, 1, 2), (0, 2), (2, 1, 1, 1)], ids=str)
def test_tile(reps):
    for kind, x, t in inputs((2, 3), lt.float32):
        check(x.tile(reps), np.tile(t.numpy(), reps))
        check(x.tile(*reps), np.tile(t.numpy(), reps))
        check(lt.tile(x, reps), np.tile(t.numpy(), reps))
        if len(reps) >= 2:
            check(x.repeat(*reps), t.repeat(*reps))
            check(x.repeat(reps), t.repeat(reps))


def test_tile_repeat_0d_1d_and_errors():
    check(lt.asarray(np.float32(5)).tile(3), np.tile(np.float32(5), 3))
    check(lt.asarray(np.float32(5)).repeat(2, 2), torch.tensor(5.0).repeat(2, 2))
    check(lt.asarray(arange(3)).repeat(2), torch.tensor(arange(3)).repeat(2))
    check(lt.asarray(arange(3, dtype=np.int8)).tile(()), np.tile(arange(3, dtype=np.int8), ()))
    with pytest.raises(lt.ShapeError):
        lt.asarray(arange(2, 3)).repeat(2)  # torch: fewer repeats than dimensions
    with pytest.raises(ValueError):
        lt.asarray(arange(3)).tile(-1)


# ---- random chains (hypothesis) -----------------------------------------------------------------------


@st.composite
def movement_chains(draw):
    """A small shape and a list of movement ops valid for the shapes they meet, applied identically to a
    NumPy array (the oracle) and a lazytensor tensor."""
    # the last axis is never 1: conftest's flipped layout cannot flip a last axis of size 1
    shape = tuple(draw(st.lists(st.integers(1, 4), max_size=2))) + (draw(st.integers(2, 4)),)
    cur, ops = shape, []
    for _ in range(draw(st.integers(1, 5))):
        n, nd = int(np.prod(cur)), len(cur)
        kind = draw(st.sampled_from(["reshape", "permute", "flip", "slice", "index", "newaxis", "expand", "pad",
                                     "transpose", "swapaxes"] if nd else ["reshape", "newaxis"]))
        if kind == "reshape":
            divisors = [d for d in range(1, n + 1) if n % d == 0] or [0]
            d = draw(st.sampled_from(divisors))
            new = draw(st.sampled_from([(n,), (-1,), (d, -1), (d, n // d if d else 0), (1, d, -1)])) if n else (0,)
            ops.append(("reshape", new))
            cur = np.empty(cur).reshape(new).shape
        elif kind == "permute":
            perm = tuple(draw(st.permutations(range(nd))))
            ops.append(("permute", perm))
            cur = tuple(cur[p] for p in perm)
        elif kind == "flip":
            ops.append(("flip", draw(st.integers(-nd, nd - 1))))
        elif kind == "slice":
            index = tuple(slice(draw(st.integers(-5, 5) | st.none()), draw(st.integers(-5, 5) | st.none()),
                                draw(st.sampled_from([None, 1, 2, 3, -1, -2, -3]))) for _ in range(nd))
            ops.append(("getitem", index))
            cur = np.empty(cur)[index].shape
        elif kind == "index":
            axis = draw(st.integers(0, nd - 1))
            if cur[axis] == 0:
                continue
            i = draw(st.integers(-cur[axis], cur[axis] - 1))
            index = (slice(None),) * axis + (i,)
            ops.append(("getitem", index))
            cur = np.empty(cur)[index].shape
        elif kind == "newaxis":
            axis = draw(st.integers(-nd - 1, nd))
            ops.append(("unsqueeze", axis))
            cur = np.expand_dims(np.empty(cur), axis).shape
        elif kind == "expand":
            ones = [i for i, s in enumerate(cur) if s == 1]
            if not ones:
                continue
            target = list(cur)
            target[draw(st.sampled_from(ones))] = draw(st.integers(0, 3))
            target = [draw(st.integers(1, 2))] * draw(st.integers(0, 1)) + target
            ops.append(("broadcast_to", tuple(target)))
            cur = tuple(target)
        elif kind == "pad":
            width = tuple((draw(st.integers(0, 2)), draw(st.integers(0, 2))) for _ in range(nd))
            value = draw(st.sampled_from([0.0, -1.0, 0.5]))
            ops.append(("pad", (width, value)))
            cur = tuple(s + b + a for s, (b, a) in zip(cur, width))
        elif kind == "transpose":
            ops.append(("transpose", None))
            cur = cur[::-1]
        else:
            a, b = draw(st.integers(-nd, nd - 1)), draw(st.integers(-nd, nd - 1))
            ops.append(("swapaxes", (a, b)))
            cur = np.swapaxes(np.empty(cur), a, b).shape
    return shape, draw(st.sampled_from(LAYOUTS)), ops


def apply_lt(x: lt.Tensor, ops) -> lt.Tensor:
    for name, arg in ops:
        if name == "getitem":
            x = x[arg]
        elif name == "pad":
            x = x.pad(arg[0], value=arg[1])
        elif name == "transpose":
            x = x.transpose()
        elif name == "swapaxes":
            x = x.swapaxes(*arg)
        else:
            x = getattr(x, name)(arg)
    return x


def apply_np(a: np.ndarray, ops) -> np.ndarray:
    for name, arg in ops:
        if name == "getitem":
            a = a[arg]
        elif name == "pad":
            a = np.pad(a, arg[0], constant_values=arg[1])
        elif name == "transpose":
            a = a.transpose()
        elif name == "swapaxes":
            a = np.swapaxes(a, *arg)
        elif name == "reshape":
            a = a.reshape(arg)
        elif name == "permute":
            a = a.transpose(arg)
        elif name == "flip":
            a = np.flip(a, arg)
        elif name == "unsqueeze":
            a = np.expand_dims(a, arg)
        elif name == "broadcast_to":
            a = np.broadcast_to(a, arg)
    return a


@settings(max_examples=60, deadline=None, derandomize=True, database=None)
@given(movement_chains())
def test_random_movement_chains_match_numpy(chain):
    shape, kind, ops = chain
    arr = arange(*shape) + 1  # no zeros, so a zero from padding cannot pass for data
    x, t = layout(arr, kind)
    check(apply_lt(x, ops), apply_np(t.numpy(), ops))


# ---- moveaxis, roll, NumPy's repeat, unstack, broadcast_arrays, concatenate / vstack / hstack -----------


@pytest.mark.parametrize("source,destination", [(0, -1), (-1, 0), (1, 1), ((0, 1), (-1, -2)), ((2, 0), (0, 1)),
                                                ([], [])], ids=str)
def test_moveaxis(source, destination):
    for kind, x, t in inputs((2, 3, 4), lt.int32, seed=60):
        check(lt.moveaxis(x, source, destination), torch.movedim(t, source, destination))
        check(x.moveaxis(source, destination), np.moveaxis(t.numpy(), source, destination))


def test_moveaxis_errors():
    x = lt.zeros(2, 3)
    with pytest.raises(lt.AxisError):
        x.moveaxis(2, 0)
    with pytest.raises(lt.AxisError, match="repeated"):
        x.moveaxis((0, 0), (0, 1))
    with pytest.raises(ValueError, match="differ in length"):
        x.moveaxis((0, 1), 0)


@pytest.mark.parametrize("dtype", [lt.float32, lt.int64, lt.bool_], ids=str)
@pytest.mark.parametrize("shift,axis", [(1, 0), (-2, 1), (7, -1), (0, 0), (3, None), (-9, None),
                                        ((1, -1), (0, 2)), ((2, 3), (1, 1)), (1, (0, 1))], ids=str)
def test_roll(dtype, shift, axis):
    for kind, x, t in inputs((3, 4, 5), dtype, seed=61):
        check(lt.roll(x, shift, axis), np.roll(t.numpy(), shift, axis))
        if axis is not None and np.ndim(shift) == np.ndim(axis):  # torch takes one shift per axis only
            check(x.roll(shift, axis), torch.roll(t, shift, axis))


def test_roll_0d_size_0_and_errors():
    check(lt.roll(lt.asarray(np.float32(1.5)), 3), np.roll(np.float32(1.5), 3))
    check(lt.roll(lt.zeros(0, 3), 2, 0), np.roll(np.zeros((0, 3), np.float32), 2, 0))
    check(lt.roll(lt.zeros(2, 0), 2, None), np.roll(np.zeros((2, 0), np.float32), 2, None))
    with pytest.raises(ValueError, match="3 shifts for 2 axes"):
        lt.roll(lt.zeros(2, 3), (1, 2, 3), (0, 1))


@pytest.mark.parametrize("dtype", [lt.float64, lt.int8, lt.bool_], ids=str)
@pytest.mark.parametrize("repeats,axis", [(2, 0), (3, 1), (1, -1), (0, 0), (2, None), (3, -3)], ids=str)
def test_repeat_is_numpys(dtype, repeats, axis):
    for kind, x, t in inputs((3, 2, 4), dtype, seed=62):
        check(lt.repeat(x, repeats, axis), np.repeat(t.numpy(), repeats, axis))
        if axis is not None:
            check(lt.repeat(x, repeats, axis), torch.repeat_interleave(t, repeats, axis))


def test_repeat_0d_size_0_and_errors():
    check(lt.repeat(lt.asarray(np.int16(5)), 3), np.repeat(np.int16(5), 3))
    check(lt.repeat(lt.zeros(0, 2), 4, 1), np.repeat(np.zeros((0, 2), np.float32), 4, 1))
    with pytest.raises(ValueError, match="non-negative"):
        lt.repeat(lt.zeros(2), -1)
    with pytest.raises(ValueError, match="non-negative"):
        lt.repeat(lt.zeros(2), [1, -1])
    with pytest.raises(TypeError, match="1-d tensor of integers"):
        lt.repeat(lt.zeros(2), lt.asarray([1.0, 2.0]))
    with pytest.raises(lt.ShapeError, match="3 repeats for axis 0 of length 2"):
        lt.repeat(lt.zeros(2), [1, 2, 3])
    assert lt.zeros(2, 3).repeat(2, 1).shape == (4, 3)  # the method stays PyTorch's (tile)


@pytest.mark.parametrize("dtype", [lt.float32, lt.int16, lt.bool_], ids=str)
@pytest.mark.parametrize("axis", [0, 1, -1, None], ids=str)
def test_repeat_with_a_count_per_element(dtype, axis):
    rng = np.random.default_rng(64)
    for kind, x, t in inputs((3, 2, 4), dtype, seed=65):
        n = t.numel() if axis is None else t.shape[axis]
        for counts in (rng.integers(0, 4, n), np.zeros(n, np.int64), np.array([2])):
            want = np.repeat(t.numpy(), counts, axis)
            check(lt.repeat(x, lt.asarray(counts), axis), want)
            check(lt.repeat(x, counts.tolist(), axis), want)
            if axis is not None:
                check(lt.repeat(x, lt.asarray(counts.astype(np.int32)), axis),
                      torch.repeat_interleave(t, torch.as_tensor(counts), axis))
    check(lt.repeat(lt.zeros(0, 2), lt.asarray(np.array([], np.int64)), 0), np.zeros((0, 2), np.float32))


@pytest.mark.parametrize("axis", [0, 1, -1, -3])
def test_unstack(axis):
    for kind, x, t in inputs((2, 3, 4), lt.float32, seed=63):
        got, expected = lt.unstack(x, axis), torch.unbind(t, axis)
        assert isinstance(got, tuple) and len(got) == len(expected)
        for g, e in zip(got, expected):
            check(g, e)


def test_unstack_size_0_and_1d():
    assert lt.unstack(lt.zeros(0, 3)) == ()
    pieces = lt.unstack(lt.zeros(3, 0), 0)
    assert len(pieces) == 3 and all(p.shape == (0,) for p in pieces)
    for g, e in zip(lt.unstack(lt.asarray([1, 2, 3])), (1, 2, 3)):
        check(g, np.int64(e))
    with pytest.raises(lt.AxisError):
        lt.unstack(lt.asarray(1.0))


@pytest.mark.parametrize("shapes", [[(3, 1), (1, 4)], [(2, 3, 4), (4,), ()], [(5,)], [(0, 1), (1, 3)],
                                    [(2, 1, 3), (2, 4, 1), (1, 1, 1)]], ids=str)
def test_broadcast_arrays(shapes):
    arrays = [random_array(s, lt.int16, seed=64 + i) for i, s in enumerate(shapes)]
    for kind in LAYOUTS:
        pairs = [layout(a, kind) for a in arrays]
        got = lt.broadcast_arrays(*(p[0] for p in pairs))
        expected = torch.broadcast_tensors(*(p[1] for p in pairs))
        assert isinstance(got, list) and len(got) == len(expected)
        for g, e in zip(got, expected):
            check(g, e)
    with pytest.raises(lt.ShapeError, match="broadcast_arrays"):
        lt.broadcast_arrays(lt.zeros(2), lt.zeros(3))


def test_concatenate_is_concat():
    a, b = random_array((2, 3), lt.float64, seed=65), random_array((4, 3), lt.float64, seed=66)
    check(lt.concatenate([lt.asarray(a), lt.asarray(b)]), np.concatenate([a, b]))
    check(lt.concatenate([lt.asarray(a), lt.asarray(b)], axis=None), np.concatenate([a, b], axis=None))


@pytest.mark.parametrize("shapes", [[(3,), (3,)], [(), ()], [(2, 3), (1, 3), (3,)], [(2, 2, 2), (1, 2, 2)],
                                    [(0, 4), (4,)]], ids=str)
def test_vstack(shapes):
    arrays = [random_array(s, lt.int32, seed=67 + i) for i, s in enumerate(shapes)]
    for kind in LAYOUTS:
        check(lt.vstack([layout(a, kind)[0] for a in arrays]), np.vstack(arrays))
    check(lt.vstack([lt.asarray(a) for a in arrays]), torch.vstack([torch.tensor(a) for a in arrays]))


@pytest.mark.parametrize("shapes", [[(3,), (2,)], [(), (2,)], [(2, 3), (2, 1)], [(2, 0, 2), (2, 3, 2)],
                                    [(0,), (4,)]], ids=str)
def test_hstack(shapes):
    arrays = [random_array(s, lt.float32, seed=70 + i) for i, s in enumerate(shapes)]
    for kind in LAYOUTS:
        check(lt.hstack([layout(a, kind)[0] for a in arrays]), np.hstack(arrays))
    check(lt.hstack([lt.asarray(a) for a in arrays]), torch.hstack([torch.tensor(a) for a in arrays]))


def test_vstack_hstack_promote_and_raise():
    check(lt.vstack([lt.asarray([1, 2]).cast(lt.int8), lt.asarray([1.5, 2.5])]),
          np.vstack([np.array([1, 2], np.int8), np.array([1.5, 2.5], np.float32)]))
    with pytest.raises(lt.ShapeError):
        lt.hstack([lt.zeros(2, 3), lt.zeros(3, 3)])
    with pytest.raises(ValueError, match="at least one"):
        lt.vstack([])


# ---- NumPy's joins, splits and rotations (atleast_*d, column_stack, dstack, array_split, ..., rot90) ------------


def same_views(got, expected) -> None:
    """Tensors, or tuples and lists of them, equal to NumPy's arrays item by item (shape, dtype, values)."""
    if isinstance(expected, (list, tuple)):
        assert isinstance(got, (list, tuple)) and len(got) == len(expected)
        for g, e in zip(got, expected):
            same_views(g, e)
    else:
        check(got, expected)


@pytest.mark.parametrize("dtype", [lt.float32, lt.int64, lt.bool_], ids=str)
def test_numpys_joins_splits_and_rotations_match_numpy(dtype):
    scalar, vector = random_array((), dtype, seed=31), random_array((5,), dtype, seed=32)
    x, a = layout(random_array((4, 5, 6), dtype, seed=33), "strided", oracle="numpy")  # contiguous: test_interop.py
    m, b = x[:, :, 0], a[:, :, 0]
    for name in ("atleast_1d", "atleast_2d", "atleast_3d"):
        fn, ref = getattr(lt, name), getattr(np, name)
        same_views(fn(x), ref(a))
        same_views(fn(lt.asarray(scalar), lt.asarray(vector), m), ref(scalar, vector, b))
    same_views(lt.column_stack([lt.asarray(vector), m.T]), np.column_stack([vector, b.T]))
    same_views(lt.dstack([m, m]), np.dstack([b, b]))
    same_views(lt.dstack([lt.asarray(vector), lt.asarray(vector)]), np.dstack([vector, vector]))
    for sections in (3, 4, 7, [1, 4], [-2, 9]):
        same_views(lt.array_split(x, sections, axis=2), np.array_split(a, sections, axis=2))
    same_views(lt.array_split(x, 3, axis=0), np.array_split(a, 3, axis=0))
    same_views(lt.hsplit(x, 5), np.hsplit(a, 5))
    same_views(lt.hsplit(lt.asarray(vector), [2]), np.hsplit(vector, [2]))
    same_views(lt.vsplit(m, 2), np.vsplit(b, 2))
    same_views(lt.dsplit(x, [1, 3]), np.dsplit(a, [1, 3]))
    same_views(lt.append(x, m), np.append(a, b))
    same_views(lt.append(m, m[:1], axis=0), np.append(b, b[:1], axis=0))
    for k in (-1, 0, 1, 2):
        for axes in ((0, 1), (2, 0), (-1, 1)):
            same_views(lt.rot90(x, k, axes), np.rot90(a, k, axes))
    same_views(lt.fliplr(x), np.fliplr(a))
    same_views(lt.flipud(x), np.flipud(a))
    same_views(lt.array_split(lt.zeros((0, 3), dtype=dtype), 2), np.array_split(np.zeros((0, 3), dtype.name), 2))
    for bad in (lambda: lt.vsplit(lt.asarray(vector), 1), lambda: lt.dsplit(lt.zeros((2, 2)), 2),
                lambda: lt.fliplr(lt.asarray(vector)), lambda: lt.rot90(lt.zeros((2, 2)), axes=(1, 1))):
        with pytest.raises((lt.ShapeError, ValueError)):
            bad()


def test_numpys_rotations_and_joins_carry_gradients():
    arr = random_array((3, 4), lt.float64, seed=34)
    x, t = lt.asarray(arr).requires_grad_(), torch.tensor(arr, requires_grad=True)
    weights = random_array((4, 3), lt.float64, seed=35)
    (lt.rot90(x) * lt.asarray(weights)).sum().backward()
    (torch.rot90(t) * torch.tensor(weights)).sum().backward()
    check(x.grad, t.grad)
    y = lt.asarray(arr).requires_grad_()
    lt.column_stack([y, y[:, 0]]).sum().backward()
    check(y.grad, np.where(np.arange(4) == 0, 2.0, 1.0) * np.ones((3, 4)))


def test_block_matches_numpy():
    """Nested lists joined innermost along the last axis; scalars and lower-rank arrays gain leading axes."""
    a, b = random_array((2, 2), lt.float32, seed=1), random_array((2, 3), lt.float32, seed=2)
    c, d = random_array((1, 5), lt.float32, seed=3), random_array((3,), lt.float32, seed=4)
    cases = [[[a, b], [c]], [d, d], [[d], [d]], [np.float32(1.5), d], [[[a]], [[a]]], [[a.T, b.T.reshape(2, 3)[:, :2]]]]
    for case in cases:
        ours = lt.block([[lt.asarray(x) if isinstance(x, np.ndarray) else x for x in row] if isinstance(row, list)
                         else lt.asarray(row) if isinstance(row, np.ndarray) else row for row in case])
        check(ours, np.block(case))
    with pytest.raises(ValueError, match="depths are mismatched"):
        lt.block([[lt.asarray(a)], lt.asarray(b)])
    with pytest.raises(TypeError, match="tuple"):
        lt.block((lt.asarray(a), lt.asarray(b)))
    with pytest.raises(ValueError, match="empty list"):
        lt.block([])


@pytest.mark.parametrize("axis, start", [(3, 1), (0, 4), (-1, 0), (1, 1), (2, -1), (0, -4), (1, 3)])
def test_rollaxis_is_numpys(axis, start):
    for kind, x, t in inputs((2, 3, 4, 5), lt.float32, seed=60):
        check(lt.rollaxis(x, axis, start), np.rollaxis(t.numpy(), axis, start))
    with pytest.raises(lt.AxisError):
        lt.rollaxis(lt.zeros((2, 3)), 0, 3)
    with pytest.raises(lt.AxisError):
        lt.rollaxis(lt.zeros((2, 3)), 2)


@pytest.mark.parametrize("new_shape", [(2, 7), 5, (3, 2, 2), (0, 3), (1,)])
def test_resize_is_numpys(new_shape):
    for kind, x, t in inputs((2, 3), lt.int32, seed=61):
        check(lt.resize(x, new_shape), np.resize(t.numpy(), new_shape))
    check(lt.resize(lt.zeros((0, 2)), (2, 2)), np.resize(np.zeros((0, 2), np.float32), (2, 2)))
    with pytest.raises(ValueError):
        lt.resize(lt.zeros(3), (-1, 2))
