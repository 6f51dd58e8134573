"""Making tensors and reading them back: asarray/tensor, from_numpy, zeros/ones/full/empty and their
_like forms, arange, linspace, eye; attributes (shape, dtype, size, T, mT, ...), conversions to
NumPy and Python values, casts."""
from __future__ import annotations

import copy
import math
import operator
import pickle

import numpy as np
import pytest
import torch

import lazytensor as lt
from conftest import ALL_DTYPES, check, layout, random_array, to_torch_dtype
from lazytensor.device import get_device
from lazytensor.graph import Op

DEFAULT_DEVICE = lt.zeros(1).device  # LT_DEVICE, else cpu


# ---- asarray / tensor -----------------------------------------------------------------------------

PYTHON_DATA = [
    [[1, 2], [3, 4]], [[1.5, 2], [3, 4]], [True, False, True], [True, 2], [1, 2.5], [[[1], [2]], [[3], [4]]],
    3, 2.5, True, -7, [], [[]], [[1.0, -0.0], [math.inf, -math.inf]], [2 ** 63 - 1, -2 ** 63],
]


@pytest.mark.parametrize("data", PYTHON_DATA, ids=str)
def test_asarray_python_data_default_dtypes(data):
    """Float data defaults to float32, int data to int64, bools to bool: as torch.tensor."""
    x = lt.asarray(data)
    check(x, torch.tensor(data))
    check(lt.tensor(data), torch.tensor(data))


def test_asarray_default_dtype_of_float_and_int_lists():
    assert lt.asarray([1.0, 2.0]).dtype == lt.float32
    assert lt.asarray([1, 2]).dtype == lt.int64
    assert lt.asarray(1.0).dtype == lt.float32
    assert lt.asarray([[1, 2.0]]).dtype == lt.float32
    assert lt.asarray([]).dtype == lt.float32
    check(lt.asarray([]), torch.tensor([]))


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_asarray_python_data_with_dtype(dtype):
    data = [[0, 1, 2], [3, 1, 0]]
    for spec in (dtype, dtype.name, np.dtype(dtype.name)):
        check(lt.asarray(data, dtype=spec), torch.tensor(data, dtype=to_torch_dtype(dtype)))
    fdata = [1.7, -1.7, 0.0, 2.5] if dtype.is_signed else [1.7, 0.2, 0.0, 2.5]
    check(lt.asarray(fdata, dtype=dtype), torch.tensor(fdata, dtype=to_torch_dtype(dtype)))  # ints truncate


@pytest.mark.parametrize("pytype,expected", [(float, lt.float64), (int, lt.int64), (bool, lt.bool_)], ids=str)
def test_asarray_dtype_given_as_python_type(pytype, expected):
    """The Python types as torch and NumPy read them: float is float64, whatever the default float."""
    x = lt.asarray([0, 1, 2], dtype=pytype)
    assert x.dtype == expected and np.asarray([0, 1, 2], dtype=pytype).dtype == np.dtype(expected.name)
    check(x, torch.tensor([0, 1, 2], dtype=pytype))


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_asarray_numpy_of_every_dtype(dtype):
    arr = random_array((2, 3), dtype, 1)
    x = lt.asarray(arr)
    assert x.dtype == dtype
    check(x, torch.from_numpy(arr))
    check(lt.asarray(arr.T), torch.from_numpy(arr).T)  # a non-contiguous source
    check(lt.asarray(arr[:, ::-2]), torch.from_numpy(np.ascontiguousarray(arr[:, ::-2])))
    check(lt.asarray(arr[0, 0]), torch.tensor(arr[0, 0]))  # a NumPy scalar keeps its dtype
    check(lt.asarray(np.asarray(arr[1, 2])), torch.tensor(arr[1, 2]))  # 0-d array
    check(lt.from_numpy(arr), torch.from_numpy(arr))


@pytest.mark.parametrize("src", ALL_DTYPES, ids=str)
def test_asarray_numpy_with_dtype_casts(src):
    arr = random_array((5,), src, 2)
    for dst in (lt.float64, lt.int32, lt.bool_):
        check(lt.asarray(arr, dtype=dst), torch.from_numpy(arr).to(to_torch_dtype(dst)))


def test_asarray_copies_its_source():
    arr = np.array([1.0, 2.0, 3.0], np.float32)
    x = lt.asarray(arr)
    arr[0] = 100.0
    check(x, torch.tensor([1.0, 2.0, 3.0]))
    check(x + 1, torch.tensor([2.0, 3.0, 4.0]))


def test_asarray_of_a_tensor_is_that_tensor():
    x = lt.asarray([1, 2, 3])
    assert lt.asarray(x) is x
    assert lt.asarray(x, dtype=lt.int64) is x
    check(lt.asarray(x, dtype=lt.float64), torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64))
    check(lt.asarray([lt.asarray(1.5), lt.asarray(2.5)]), torch.tensor([1.5, 2.5]))


def test_asarray_copy_argument():
    """array API: copy=True always gives a new tensor, copy=False raises ValueError where a copy is needed."""
    x = lt.asarray([1, 2, 3])
    for copied in (lt.asarray(x, copy=True), lt.asarray(x, dtype=lt.int64, copy=True)):
        assert copied is not x
        check(copied, np.array([1, 2, 3]))
    copied += 1  # rebinds the copy only
    check(x, np.array([1, 2, 3]))
    assert lt.asarray(x, copy=False) is x and lt.asarray(x, dtype=lt.int64, device=x.device, copy=False) is x
    check(lt.asarray(x, dtype=lt.float32, copy=True), np.array([1, 2, 3], np.float32))
    with pytest.raises(ValueError, match="needs a copy"):
        lt.asarray(x, dtype=lt.float32, copy=False)
    for data in ([1, 2], np.arange(3), 2.5):
        with pytest.raises(ValueError, match="copy=False"):
            lt.asarray(data, copy=False)
        check(lt.asarray(data, copy=True), np.asarray(data) if not isinstance(data, float) else np.float32(data))


def test_tensor_constructor():
    check(lt.Tensor([1, 2], dtype="int8"), torch.tensor([1, 2], dtype=torch.int8))
    check(lt.Tensor([[1.5]]), torch.tensor([[1.5]]))
    check(lt.Tensor(np.arange(4, dtype=np.int16)), torch.arange(4, dtype=torch.int16))


@pytest.mark.parametrize("make", [
    lambda: lt.asarray(np.zeros(3, np.float128)), lambda: lt.asarray(np.zeros(3, np.complex64)),
    lambda: lt.asarray(np.zeros(3, np.complex128)), lambda: lt.asarray([1 + 2j]), lambda: lt.asarray(1j),
    lambda: lt.asarray(np.zeros(3, ">u2")), lambda: lt.asarray(np.zeros(3, "datetime64[s]")),
    lambda: lt.asarray([1.0], dtype="float128"), lambda: lt.asarray([1.0], dtype=np.complex64),
    lambda: lt.asarray(["a", "b"]), lambda: lt.asarray(None), lambda: lt.asarray([[1, 2], [3]]),
    lambda: lt.asarray({1: 2}), lambda: lt.from_numpy(np.zeros(2, np.complex64)),
    lambda: lt.from_numpy([1.0, 2.0]), lambda: lt.zeros(2, dtype="complex64"),
    lambda: lt.asarray(np.zeros(2, np.complex64), dtype=lt.float32),
], ids=["float128", "complex64", "complex128", "py-complex-list", "py-complex", "big-endian-uint16", "datetime64",
        "dtype-float128", "dtype-complex64", "strings", "None", "ragged", "dict", "from_numpy-complex64",
        "from_numpy-list", "zeros-complex", "complex-to-float32"])
def test_unsupported_data_and_dtypes_raise_type_error(make):
    with pytest.raises(TypeError):
        make()


def test_unsupported_dtype_error_is_a_dtype_error():
    with pytest.raises(lt.DTypeError):
        lt.asarray(np.zeros(2, np.complex64))


@pytest.mark.parametrize("data,dtype", [([2 ** 63], None), (2 ** 63, None), ([-2 ** 63 - 1], None),
                                        ([300], lt.uint8), ([-1], lt.uint8), ([[128]], lt.int8),
                                        ([1, 2 ** 31], lt.int32), ([2 ** 16], lt.uint16), ([-1], lt.uint32),
                                        ([2 ** 64], lt.uint64), ([-1, 2 ** 62], lt.uint64)], ids=str)
def test_asarray_python_int_out_of_range_raises(data, dtype):
    """NumPy 2 and torch refuse these; a silent wrap-around would be a wrong value."""
    with pytest.raises(lt.DTypeError):
        lt.asarray(data, dtype=dtype)


def test_asarray_python_ints_at_the_edges_fit():
    check(lt.asarray([127, -128], dtype=lt.int8), torch.tensor([127, -128], dtype=torch.int8))
    check(lt.asarray([0, 255], dtype="uint8"), torch.tensor([0, 255], dtype=torch.uint8))
    check(lt.asarray([2 ** 63 - 1, -2 ** 63]), torch.tensor([2 ** 63 - 1, -2 ** 63]))
    check(lt.asarray([2 ** 40], dtype=lt.float32), torch.tensor([2 ** 40], dtype=torch.float32))


# ---- from_numpy -----------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_from_numpy_shares_memory(dtype):
    arr = random_array((2, 3), dtype, 3)
    x = lt.from_numpy(arr)
    assert x.dtype == dtype and x.shape == (2, 3)
    new = random_array((3,), dtype, 4)
    arr[1] = new  # a later write to the array shows in the tensor
    np.testing.assert_array_equal(x.numpy()[1], new)
    assert np.shares_memory(x.numpy(), arr)
    check(x, torch.from_numpy(arr))


def test_from_numpy_write_shows_in_a_lazy_result_computed_later():
    arr = np.array([1.0, 2.0, 3.0])
    x = lt.from_numpy(arr)
    y = x * 2
    arr[0] = 10.0
    check(y, torch.tensor([20.0, 4.0, 6.0], dtype=torch.float64))


def test_from_numpy_non_contiguous_array_gives_the_same_values():
    arr = np.arange(12, dtype=np.int32).reshape(3, 4)
    check(lt.from_numpy(arr.T), torch.from_numpy(arr).T)
    check(lt.from_numpy(arr[:, ::2]), torch.from_numpy(arr)[:, ::2])


# ---- zeros / ones / empty / full -----------------------------------------------------------------

SHAPE_SPECS = [((2, 3), ((2, 3),)), ((2, 3), ([2, 3],)), ((2, 3), (2, 3)), ((4,), (4,)), ((4,), ((4,),)),
               ((), ()), ((), ((),)), ((2, 0, 3), ((2, 0, 3),)), ((0,), (0,))]


@pytest.mark.parametrize("shape,args", SHAPE_SPECS, ids=str)
def test_zeros_ones_empty_shape_forms(shape, args):
    check(lt.zeros(*args), torch.zeros(shape))
    check(lt.ones(*args), torch.ones(shape))
    check(lt.empty(*args), torch.zeros(shape))  # lazytensor's empty is zero-filled
    check(lt.full(args[0] if len(args) == 1 else args, 2.5), torch.full(shape, 2.5))


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_zeros_ones_full_dtypes(dtype):
    td = to_torch_dtype(dtype)
    check(lt.zeros(2, 3, dtype=dtype), torch.zeros(2, 3, dtype=td))
    check(lt.ones((2, 3), dtype=dtype.name), torch.ones(2, 3, dtype=td))
    check(lt.empty([3], dtype=dtype), torch.zeros(3, dtype=td))
    check(lt.full((2, 2), 1, dtype=dtype), torch.full((2, 2), 1, dtype=td))


@pytest.mark.parametrize("value", [7, -7, 2.5, -0.0, True, False, math.inf, math.nan], ids=str)
def test_full_dtype_follows_the_value(value):
    check(lt.full((2, 3), value), torch.full((2, 3), value))
    check(lt.full(3, value), torch.full((3,), value))
    check(lt.full([], value), torch.full((), value))


def test_full_with_explicit_dtype_and_conversions():
    check(lt.full((2,), 2.7, dtype=lt.int32), torch.full((2,), 2.7, dtype=torch.int32))
    check(lt.full((2,), 3, dtype=lt.float64), torch.full((2,), 3, dtype=torch.float64))
    check(lt.full((2,), 0.5, dtype=bool), torch.full((2,), 0.5, dtype=torch.bool))
    check(lt.full((2,), np.float64(1.5)), torch.full((2,), 1.5))
    check(lt.full((2, 2), lt.asarray(3)), torch.full((2, 2), 3))
    with pytest.raises(lt.DTypeError):
        lt.full((2,), 300, dtype=lt.uint8)


@pytest.mark.parametrize("dtype", [lt.float16, lt.bfloat16], ids=str)
def test_full_of_a_16_bit_float_holds_its_rounded_value_in_the_kernels_that_read_it(dtype):
    """A 16-bit `full` passes its value to kernels as a float32 parameter: the value rounded to the dtype,
    not the Python float, or `full(1e-20, float16) * 1e20` is 1 where the tensor holds 0."""
    tdtype = to_torch_dtype(dtype)
    for value in (1e-20, 0.1, 1 + 2 ** -9, -3e4):
        x, t = lt.full((3,), value, dtype=dtype), torch.full((3,), value, dtype=tdtype).float()
        for got, expected in ((x * 1e20, t * 1e20), (x - value, t - value)):
            np.testing.assert_array_equal(got.float().numpy(), expected.to(tdtype).float().numpy(), err_msg=str(value))


@pytest.mark.parametrize("make", [lambda: lt.zeros(-1), lambda: lt.ones((2, -1)), lambda: lt.full(-1, 2.0),
                                  lambda: lt.empty([3, -2])], ids=["zeros", "ones", "full", "empty"])
def test_negative_dimensions_raise(make):
    with pytest.raises(ValueError):
        make()


@pytest.mark.parametrize("dtype", [lt.int8, lt.bool_, lt.float64], ids=str)
def test_like_functions(dtype):
    base = lt.asarray(random_array((3, 4), dtype, 5)).T  # a view: its shape, not its base's
    td = to_torch_dtype(dtype)
    check(lt.zeros_like(base), torch.zeros(4, 3, dtype=td))
    check(lt.ones_like(base), torch.ones(4, 3, dtype=td))
    check(lt.empty_like(base), torch.zeros(4, 3, dtype=td))
    check(lt.full_like(base, 1), torch.full((4, 3), 1, dtype=td))
    check(lt.zeros_like(base, dtype=lt.float32), torch.zeros(4, 3))
    check(lt.ones_like(base, dtype="int16"), torch.ones(4, 3, dtype=torch.int16))
    check(lt.full_like(base, 2.5, dtype=lt.float64), torch.full((4, 3), 2.5, dtype=torch.float64))
    check(lt.full_like(lt.zeros(2, 0), 1.0), torch.full((2, 0), 1.0))


def test_full_like_value_is_cast_to_the_tensor_dtype():
    x = lt.asarray([1, 2, 3], dtype=lt.int32)
    check(lt.full_like(x, 2.9), torch.full_like(torch.tensor([1, 2, 3], dtype=torch.int32), 2.9))


# ---- arange / linspace / eye ----------------------------------------------------------------------

ARANGE_ARGS = [(5,), (0,), (2, 10), (2, 10, 3), (10, 2, -3), (0, -5, -1), (-4, 4, 2), (3, 4, 5), (1.5,),
               (0, 1, 0.1), (1.0, -1.0, -0.5), (-2.5, 2.5, 0.7), (0.0, 3), (1, 2.0, 0.25), (5, 5.0)]


@pytest.mark.parametrize("args", ARANGE_ARGS, ids=str)
def test_arange(args):
    """int64 when every argument is an int, else float32, as torch."""
    check(lt.arange(*args), torch.arange(*args))


@pytest.mark.parametrize("dtype", [lt.float64, lt.int8, lt.int32, lt.float32], ids=str)
def test_arange_dtype(dtype):
    check(lt.arange(6, dtype=dtype), torch.arange(6, dtype=to_torch_dtype(dtype)))
    check(lt.arange(-3, 9, 2, dtype=dtype.name), torch.arange(-3, 9, 2, dtype=to_torch_dtype(dtype)))
    check(lt.arange(9, -3, -4, dtype=dtype), torch.arange(9, -3, -4, dtype=to_torch_dtype(dtype)))


def test_arange_float_dtype_from_float_args():
    check(lt.arange(0.5, 2.0, 0.5, dtype=lt.float64), torch.arange(0.5, 2.0, 0.5, dtype=torch.float64))
    check(lt.arange(np.int64(4)), torch.arange(4))


def test_arange_from_0_by_1_is_the_iota():
    """`arange(n)` (and of another integer dtype, a cast of it) is one node, no multiply by 1 nor add of 0: nothing to
    build, and no kernel parameter to pass; an index by it knows its range (test_indexing)."""
    assert lt.arange(7).node.op is Op.IOTA and lt.arange(0, 7, 1).node.op is Op.IOTA
    assert lt.arange(7, dtype=lt.int32).node.srcs[0].op is Op.IOTA
    check(lt.arange(9, 3, -1), torch.arange(9, 3, -1))
    check(lt.arange(0, 9, 1, dtype=lt.uint8), torch.arange(0, 9, 1, dtype=torch.uint8))


def test_arange_large_and_fused():
    check(lt.arange(1000) * 3 - 7, torch.arange(1000) * 3 - 7)
    check(lt.arange(0.0, 10.0, 0.01), torch.arange(0.0, 10.0, 0.01, dtype=torch.float64).float())


@pytest.mark.parametrize("args", [(-3,), (10, 2), (0, 5, -1), (2.5, 1.0), (0.0, 1.0, -0.5)], ids=str)
def test_arange_empty_ranges(args):
    """A step that points away from stop gives no elements (NumPy; torch raises instead)."""
    expected_dtype = np.int64 if all(isinstance(a, int) for a in args) else np.float32
    check(lt.arange(*args), np.zeros(0, expected_dtype))
    assert len(np.arange(*args)) == 0


def test_arange_zero_step_raises():
    with pytest.raises(ValueError):
        lt.arange(0, 5, 0)
    with pytest.raises(ValueError):
        lt.arange(0.0, 5.0, 0.0)


@pytest.mark.parametrize("start,stop,num", [(0, 1, 5), (0, 1, 0), (0, 1, 1), (3, 3, 1), (0, 1, 2), (-1, 1, 50),
                                            (10, -10, 7), (2.5, -1.5, 9), (0, 1, 3), (-5, 5, 11)], ids=str)
def test_linspace(start, stop, num):
    check(lt.linspace(start, stop, num), torch.linspace(start, stop, num))
    check(lt.linspace(start, stop, steps=num), torch.linspace(start, stop, steps=num))
    check(lt.linspace(start, stop, num, dtype=lt.float64), torch.linspace(start, stop, num, dtype=torch.float64))
    expected = np.linspace(start, stop, num, endpoint=False).astype(np.float32)
    check(lt.linspace(start, stop, num, endpoint=False), expected)


def test_linspace_endpoints_are_exact():
    x = lt.linspace(0.1, 0.7, 13, dtype=lt.float64).numpy()
    assert x[0] == 0.1 and x[-1] == 0.7
    assert lt.linspace(-3.3, 7.7, 1).item() == np.float32(-3.3)


@pytest.mark.parametrize("num", [0, 1, 2, 3, 4, 7, 10])
@pytest.mark.parametrize("start, stop", [(0.0, 1.0), (-3.0, 7.5), (1e10, -2.0)])
def test_linspace_without_endpoint_is_the_points_with_it_but_the_last(start, stop, num):
    """The array API's rule, bit for bit (its conformance suite: linspace(0, 1, 3, endpoint=False)[1] was 1/3
    rounded up, computed from the end that is not a point)."""
    without = lt.linspace(start, stop, num, endpoint=False, dtype=lt.float64).numpy()
    np.testing.assert_array_equal(without, lt.linspace(start, stop, num + 1, dtype=lt.float64).numpy()[:-1])
    np.testing.assert_allclose(without, np.linspace(start, stop, num, endpoint=False), rtol=1e-14)


def test_linspace_default_num_and_int_dtype():
    check(lt.linspace(0, 1), torch.linspace(0, 1, 50))
    check(lt.linspace(0, 10, 5, dtype=lt.int64), torch.linspace(0, 10, 5, dtype=torch.int64))


def test_linspace_negative_num_raises():
    with pytest.raises(ValueError):
        lt.linspace(0, 1, -1)


@pytest.mark.parametrize("n,m", [(3, None), (1, None), (0, None), (2, 4), (4, 2), (3, 0)], ids=str)
def test_eye(n, m):
    check(lt.eye(n, m), torch.eye(n, m if m is not None else n))
    check(lt.eye(n, m, dtype=lt.int64), torch.eye(n, m if m is not None else n, dtype=torch.int64))


@pytest.mark.parametrize("k", [-4, -1, 0, 1, 2, 5, 2**63, -2**70])
def test_eye_offset_diagonal(k):
    check(lt.eye(3, 4, k=k), np.eye(3, 4, k=k, dtype=np.float32))
    check(lt.eye(4, k=k, dtype=lt.bool_), np.eye(4, k=k, dtype=np.bool_))


# ---- attributes ------------------------------------------------------------------------------------

@pytest.mark.parametrize("shape", [(), (0,), (5,), (2, 3), (2, 0, 3), (1, 2, 3, 4)], ids=str)
def test_shape_ndim_size_attributes(shape):
    x, t = lt.zeros(shape, dtype=lt.int16), torch.zeros(shape, dtype=torch.int16)
    assert x.shape == tuple(t.shape) and type(x.shape) is tuple
    assert x.ndim == t.ndim == x.dim()
    assert x.size == t.numel() == x.numel()
    assert isinstance(x.size, int)
    assert x.size() == tuple(t.size())
    for d in range(-len(shape), len(shape)):
        assert x.size(d) == t.size(d)
    assert x.dtype == lt.int16
    assert x.device == DEFAULT_DEVICE
    assert x.itemsize == 2 and x.nbytes == 2 * t.numel()


def test_size_is_usable_as_an_int():
    x = lt.zeros(2, 3)
    assert x.size == 6 and x.size + 1 == 7 and list(range(x.size)) == list(range(6))
    assert x.size(1) == 3 and x.size(-2) == 2


@pytest.mark.parametrize("shape", [(), (4,), (2, 3), (2, 3, 4)], ids=str)
def test_T(shape):
    arr = random_array(shape, lt.float32, 6)
    x, t = lt.asarray(arr), torch.tensor(arr)
    check(x.T, t.permute(tuple(reversed(range(t.ndim)))))
    check(x.T.T, t)


@pytest.mark.parametrize("shape", [(2, 3), (2, 3, 4), (1, 2, 1, 3)], ids=str)
def test_mT(shape):
    arr = random_array(shape, lt.int32, 7)
    x, t = lt.asarray(arr), torch.tensor(arr)
    check(x.mT, t.mT)
    check(x.mT + 1, t.mT + 1)


def test_mT_needs_two_dims():
    with pytest.raises(lt.ShapeError):
        _ = lt.asarray([1, 2]).mT
    with pytest.raises(ValueError):
        _ = lt.asarray(1.0).mT


# ---- reading values -------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_numpy(dtype):
    arr = random_array((3, 4), dtype, 8)
    for kind in ("contiguous", "transposed", "flipped"):
        x, t = layout(arr, kind)
        out = x.numpy()
        assert isinstance(out, np.ndarray)
        assert out.dtype == np.dtype(dtype.name)
        np.testing.assert_array_equal(out, t.numpy())
    out = lt.asarray(arr).numpy()
    assert not out.flags.writeable
    with pytest.raises(ValueError):
        out[0, 0] = out[0, 1]


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_item(dtype):
    arr = random_array((1, 1), dtype, 9)
    x, t = lt.asarray(arr), torch.tensor(arr)
    got, exp = x.item(), t.item()
    assert type(got) is type(exp)
    assert got == exp
    got, exp = (x * 1).item(), (t * 1).item()  # a computed value, not just a copied one
    assert type(got) is type(exp) and got == exp
    assert lt.asarray(arr.reshape(())).item() == exp


# one-element views of a (3, 4, 5) tensor, each as lazytensor and NumPy spell it
ELEMENT_VIEWS = [
    lambda a: a[2, 1, 3],
    lambda a: a.transpose(2, 0, 1)[4, 1, 2] if isinstance(a, np.ndarray) else a.permute(2, 0, 1)[4, 1, 2],
    lambda a: a[:, ::-1, ::-2][1, 0, 2],
    lambda a: a[1:, ::2, 3:][1, 1, 0],
    lambda a: a.reshape(5, 12)[3, 7],
    lambda a: a.reshape(60)[59:60],
    lambda a: a[:, :1].reshape(3, 1, 1, 5)[2:, :, :, 4:],
    lambda a: np.broadcast_to(a[:, :1], (3, 4, 5))[2, 3, 1] if isinstance(a, np.ndarray)
    else a[:, :1].broadcast_to((3, 4, 5))[2, 3, 1],
    lambda a: np.pad(a, 1)[3, 4, 5] if isinstance(a, np.ndarray) else a.pad(1)[3, 4, 5],
]


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_item_of_realized_data(dtype):
    """An element of realized data in host memory reads where it lies (`float(x[i])` in a loop, as Hypothesis's
    array strategies check each element they draw): a realize compiled a kernel for each position read."""
    arr = random_array((3, 4, 5), dtype, 12)
    x = lt.asarray(arr).realize()
    lt.reset_stats()
    for view in ELEMENT_VIEWS:
        got, exp = view(x), view(arr)
        assert got.item() == exp.item() and got.tolist() == exp.tolist()
        np.testing.assert_array_equal(got.numpy(), exp)
    if get_device(x.device).host_memory:
        assert lt.stats().kernels_compiled == 0
    padding = x.pad(1)[0, 4, 5]  # reads a padding's zero, which only a kernel computes
    assert padding.item() == 0 and padding.is_realized


def test_item_needs_one_element():
    for x in (lt.zeros(2), lt.zeros(0), lt.zeros(1, 2)):
        with pytest.raises(ValueError):
            x.item()


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_tolist(dtype):
    arr = random_array((2, 3), dtype, 10)
    x, t = lt.asarray(arr), torch.tensor(arr)
    assert x.tolist() == t.tolist()
    assert x.T.tolist() == t.T.tolist()
    assert lt.asarray(arr[0, 0]).tolist() == t[0, 0].tolist()
    assert lt.zeros(2, 0).tolist() == torch.zeros(2, 0).tolist()


def test_array_protocol():
    arr = random_array((2, 3), lt.int16, 11)
    x = lt.asarray(arr).T
    out = np.asarray(x)
    assert out.dtype == np.int16
    np.testing.assert_array_equal(out, arr.T)
    as64 = np.asarray(x, dtype=np.float64)
    assert as64.dtype == np.float64
    np.testing.assert_array_equal(as64, arr.T.astype(np.float64))
    copied = np.array(x)
    assert copied.flags.writeable
    copied[0, 0] = 99  # a copy: the tensor keeps its value
    assert x.numpy()[0, 0] == arr[0, 0]


def test_numpy_array_with_tensor_gives_a_tensor():
    out = np.array([1.0, 2.0]) + lt.asarray([1, 2])
    assert isinstance(out, lt.Tensor)
    check(out, np.array([2.0, 4.0]))


def test_repr():
    assert repr(lt.asarray([1.5, 2.0])) == f"tensor([1.5, 2. ], dtype=float32, device='{DEFAULT_DEVICE}')"
    assert repr(lt.asarray([[1, 2], [3, 4]], dtype=lt.int8)) == \
        f"tensor([[1, 2],\n        [3, 4]], dtype=int8, device='{DEFAULT_DEVICE}')"
    assert repr(lt.asarray(True)) == f"tensor(True, dtype=bool, device='{DEFAULT_DEVICE}')"
    assert repr(lt.zeros(0, dtype=lt.int64)) == f"tensor([], dtype=int64, device='{DEFAULT_DEVICE}')"
    x = lt.asarray([1.0, 2.0]) * 3
    assert str(x) == repr(x) == f"tensor([3., 6.], dtype=float32, device='{DEFAULT_DEVICE}')"


def storage_bits(t: lt.Tensor) -> np.ndarray:
    """A tensor's data as its buffer holds it, as raw bytes: bit for bit, NaN payloads and -0.0 included."""
    return t.realize().node.buffer.numpy().view(np.uint8).copy()


@pytest.mark.parametrize("dtype", [*ALL_DTYPES, lt.float16, lt.bfloat16], ids=str)
def test_pickle_and_deepcopy_copy_the_data_not_the_graph(dtype):
    """A pickled or deep-copied tensor comes back computed, as a buffer of its own (not the graph that made
    it), bit for bit, with its dtype, shape, device and requires_grad; tensors that shared data share the
    copy; pickling drops the gradient and deepcopy copies it (as torch); copy.copy shares the data."""
    import ml_dtypes
    raw = np.random.default_rng(5).integers(0, 256, 4 * 6 * dtype.itemsize, dtype=np.uint8)
    arr = (raw % 2).astype(bool) if dtype == lt.bool_ else \
        raw.view(ml_dtypes.bfloat16 if dtype == lt.bfloat16 else np.dtype(dtype.name))
    x = lt.from_numpy(arr.reshape(4, 6)).T[::2]  # a lazy view: its graph is not what is saved
    x.requires_grad = dtype.is_float
    twin = lt.Tensor(x.node)
    for y, y_twin in (pickle.loads(pickle.dumps((x, twin))), copy.deepcopy((x, twin))):
        assert type(y) is lt.Tensor and y.node.realized and y.node.srcs == ()
        assert (y.dtype, y.shape, y.device, y.requires_grad, y.grad) == (x.dtype, x.shape, x.device, x.requires_grad, None)
        np.testing.assert_array_equal(storage_bits(y), storage_bits(x))
        assert y_twin.node is y.node and y.node is not x.node
    if dtype.is_float:
        x.grad = lt.ones(x.shape, dtype=dtype) * 2
        assert pickle.loads(pickle.dumps(x)).grad is None
        np.testing.assert_array_equal(storage_bits(copy.deepcopy(x).grad), storage_bits(x.grad))
    assert copy.copy(x).node is x.node


def test_a_copy_is_independent_of_the_memory_it_was_made_from():
    arr = np.arange(4, dtype=np.float32)
    x = lt.from_numpy(arr)
    copies = [copy.deepcopy(x), pickle.loads(pickle.dumps(x))]
    arr[0] = 9.0
    assert x.numpy()[0] == 9.0
    for y in copies:
        np.testing.assert_array_equal(y.numpy(), [0.0, 1.0, 2.0, 3.0])


def test_len_and_iteration():
    arr = random_array((3, 2), lt.float64, 12)
    x, t = lt.asarray(arr), torch.tensor(arr)
    assert len(x) == len(t) == 3
    assert len(lt.zeros(0, 4)) == 0
    rows = list(x)
    assert len(rows) == 3
    for got, exp in zip(rows, t):
        check(got, exp)
    with pytest.raises(TypeError):
        len(lt.asarray(1.0))
    with pytest.raises(TypeError):
        iter(lt.asarray(1.0))


@pytest.mark.parametrize("value", [0, 3, -2, 0.0, -0.0, 0.5, math.nan, math.inf, True, False], ids=str)
def test_python_conversions(value):
    x, t = lt.asarray([value]), torch.tensor([value])
    assert bool(x) == bool(t)
    assert bool(lt.asarray(value)) == bool(torch.tensor(value))
    f = float(x)
    assert (math.isnan(f) and math.isnan(float(t))) or f == float(t)
    if not (isinstance(value, float) and not math.isfinite(value)):
        assert int(x) == int(t)


def test_int_conversion_truncates():
    assert int(lt.asarray(2.7)) == 2
    assert int(lt.asarray([-2.7])) == -2
    assert float(lt.asarray([[3]])) == 3.0 and type(float(lt.asarray(3))) is float
    assert operator.index(lt.asarray(4)) == 4
    assert [10, 20, 30][lt.asarray(1)] == 20
    with pytest.raises(TypeError):
        operator.index(lt.asarray(1.0))


@pytest.mark.parametrize("shape", [(2,), (0,), (2, 2)], ids=str)
def test_conversions_of_several_elements_raise(shape):
    x = lt.zeros(shape)
    for fn in (bool, float, int):
        with pytest.raises(ValueError):
            fn(x)


def test_bool_of_two_elements_is_ambiguous():
    with pytest.raises(ValueError, match="ambiguous"):
        bool(lt.asarray([1, 2]))
    with pytest.raises(ValueError):
        if lt.asarray([1.0, 2.0]) > 0:
            pass


# ---- casts ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("src", ALL_DTYPES, ids=str)
def test_astype_every_pair(src):
    arr = random_array((2, 3), src, 13)
    x, t = lt.asarray(arr), torch.tensor(arr)
    for dst in ALL_DTYPES:
        check(x.astype(dst), t.to(to_torch_dtype(dst)))
    check(x.T.astype(lt.float64), t.T.double())


def test_astype_spellings():
    arr = np.array([1.7, -1.7, 0.0, 2.5], np.float32)
    x, t = lt.asarray(arr), torch.tensor(arr)
    # Python types as torch reads them (float is float64, as in NumPy)
    for spec, td in (("int32", torch.int32), (np.int16, torch.int16), (np.dtype("float64"), torch.float64),
                     (lt.int8, torch.int8), (int, int), (float, float), (bool, bool)):
        check(x.astype(spec), t.to(td))
        check(lt.astype(arr, spec), t.to(td))
    # to its own dtype: a new tensor by default (array API and NumPy: copy=True), itself with copy=False
    assert x.astype(lt.float32) is not x and x.astype(lt.float32, copy=False) is x and x.cast(lt.float32) is x


def test_float_to_int_casts():
    """Truncation toward zero; negative floats wrap into uint8 as in torch."""
    arr = np.array([2.9, -2.9, -0.5, 0.5, -1.0, 300.7, -129.0, 1e4], np.float64)  # all within int32
    x, t = lt.asarray(arr), torch.tensor(arr)
    for dst in (lt.int64, lt.int32, lt.int16, lt.int8, lt.uint8):
        check(x.astype(dst), t.to(to_torch_dtype(dst)))


def test_nan_to_int_is_zero():
    """The kernel IR's documented saturating cast: NaN gives 0."""
    x = lt.asarray([math.nan, 1.5], dtype=lt.float64)
    for dst in (lt.int64, lt.int32, lt.uint8):
        check(x.astype(dst), np.array([0, 1], dst.name))


def test_float32_to_8_bits_past_int32():
    """float32 to an 8-bit type as the kernel IR defines it, past int32's range too: truncated, saturated to
    int64's range (NaN 0), wrapped. From 2**31 to 2**63 a float32 is a multiple of 256 (0 in 8 bits)."""
    big = float(np.nextafter(np.float32(2.0**63), np.float32(0)))
    values = [2.0**31, -(2.0**31), 2.0**31 - 128, -(2.0**31) - 256, 3e9 + 768, -3e9, 1e15, big, -big, 2.0**63,
              -(2.0**63), 2.0**64, -(2.0**70), math.inf, -math.inf, math.nan, 255.9, 256.0, -1.5, 127.5, -128.7, 0.0]
    arr = np.array(values * 3, np.float32)  # long enough for the CPU's vector loop and its remainder
    x = lt.asarray(arr)

    def defined(v: float) -> int:
        return 0 if math.isnan(v) else 2**63 - 1 if v >= 2.0**63 else -(2**63) if v <= -(2.0**63) else int(v)
    ints = np.array([defined(float(v)) for v in arr], np.int64)
    for dst in (lt.uint8, lt.int8):
        check(x.astype(dst), ints.astype(dst.name))
        check(x[::-2].astype(dst), ints[::-2].astype(dst.name))


@pytest.mark.parametrize("src", [lt.float32, lt.float64, lt.float16], ids=str)
def test_floats_to_int64_saturate_in_vector_loops(src):
    """float to int64 as the kernel IR defines it (truncated, saturated, NaN 0), on arrays long enough for the
    CPU's vector loop (whose conversions the selects around it saturate) and its remainder, strided too."""
    values = [2.0**62, -(2.0**62), 2.0**63, -(2.0**63), 2.0**64, -(2.0**70), math.inf, -math.inf, math.nan, 1e30,
              -1e30, 65504.0, -65504.0, 3.9, -3.9, 0.5, -0.5, 0.0, -0.0, 1e9 + 0.5, -1e9, 12345.75]
    arr = np.array(values * 7, np.float64).astype(src.name)  # float16: the large ones become inf

    def defined(v: float) -> int:
        return 0 if math.isnan(v) else 2**63 - 1 if v >= 2.0**63 else -(2**63) if v <= -(2.0**63) else int(v)
    ints = np.array([defined(float(v)) for v in arr], np.int64)
    x = lt.asarray(arr)
    check(x.astype(lt.int64), ints)
    check(x[::-3].astype(lt.int64), ints[::-3])
    check(x[:0].astype(lt.int64), ints[:0])
    check(x[5].astype(lt.int64), ints[5])


def test_casts_to_bool():
    arr = np.array([0.0, -0.0, 0.1, math.nan, -math.inf], np.float32)
    check(lt.asarray(arr).astype(bool), torch.tensor(arr).bool())
    ints = np.array([0, -1, 256, 2], np.int64)
    check(lt.asarray(ints).bool(), torch.tensor(ints).bool())


@pytest.mark.parametrize("method", ["float", "double", "long", "int", "bool"])
def test_cast_aliases(method):
    arr = np.array([[1.5, -2.5], [0.0, 3.0]], np.float64)
    x, t = lt.asarray(arr), torch.tensor(arr)
    check(getattr(x, method)(), getattr(t, method)())
    check(getattr(x.T, method)(), getattr(t.T, method)())


def test_to():
    x, t = lt.asarray([1.5, -2.5], device="cpu"), torch.tensor([1.5, -2.5])
    check(x.to(lt.float64), t.to(torch.float64))
    check(x.to("int32"), t.to(torch.int32))
    check(x.to(dtype=lt.int8), t.to(dtype=torch.int8))
    check(x.to("cpu", lt.float64), t.to("cpu", torch.float64))
    assert x.to("cpu") is x and x.cpu() is x
    assert x.to(device="cpu").device == "cpu"
    if "cuda:0" in [d.name for d in lt.devices()]:  # a GPU, or Triton's interpreter
        check(x.to("cuda").to("cpu"), t)
    else:
        with pytest.raises(lt.DeviceError):
            x.to("cuda")
        with pytest.raises(lt.DeviceError):
            lt.asarray([1.0], device="cuda:0")
    with pytest.raises(RuntimeError):  # DeviceError is a RuntimeError
        lt.zeros(2, device="nonsense")


# ---- NumPy's array protocol, format (DLPack and NumPy's functions: test_interop.py) --------------


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_array_protocol_copy_argument(dtype):
    """NumPy 2's `__array__(dtype, copy)`: copy=None shares the tensor's memory where it can, copy=True
    always copies, copy=False raises ValueError where a copy is needed, as NumPy specifies."""
    arr = random_array((3, 4), dtype, seed=80)
    x = lt.asarray(arr, device="cpu").T
    shared = np.asarray(x)
    np.testing.assert_array_equal(shared, arr.T)
    assert np.shares_memory(shared, x.numpy()) and not shared.flags.writeable
    assert np.shares_memory(np.asarray(x, copy=False), x.numpy())
    copied = np.array(x)  # NumPy 2 passes copy=True
    assert not np.shares_memory(copied, x.numpy()) and copied.flags.writeable
    np.testing.assert_array_equal(copied, arr.T)
    other = np.float64 if dtype != lt.float64 else np.float32
    np.testing.assert_array_equal(np.asarray(x, dtype=other), arr.T.astype(other))
    with pytest.raises(ValueError, match="without a copy"):
        np.asarray(x, dtype=other, copy=False)
    assert np.asarray(x, dtype=dtype.name, copy=False).dtype == arr.dtype  # the same dtype needs no copy


@pytest.mark.skipif(DEFAULT_DEVICE == "cpu", reason="needs a tensor off the CPU (LT_DEVICE=cuda)")
def test_array_protocol_of_a_gpu_tensor_copies():
    x = lt.asarray([1.0, 2.0])
    np.testing.assert_array_equal(np.asarray(x), [1.0, 2.0])
    with pytest.raises(ValueError, match="without a copy"):
        np.asarray(x, copy=False)


def test_format_of_a_0d_tensor_formats_its_value():
    loss = lt.asarray(np.float32(0.123456)) * 1
    assert f"{loss:.3f}" == "0.123" and format(loss, "8.2e") == format(np.float32(0.123456).item(), "8.2e")
    assert f"{lt.asarray(42):>5d}" == "   42" and f"{lt.asarray(True)}" == "True"
    x = lt.asarray([1.5, 2.0])
    assert f"{x}" == str(x)
    with pytest.raises(TypeError, match="unsupported format string"):
        f"{x:.3f}"
    with pytest.raises(TypeError, match="unsupported format string"):
        f"{lt.asarray([1.5]):.3f}"  # as torch: only a 0-d tensor takes a spec


def test_python_number_conversions():
    assert complex(lt.asarray(2.5)) == 2.5 + 0j and complex(lt.asarray([3])) == 3 + 0j
    assert float(lt.asarray(7)) == 7.0 and int(lt.asarray(2.9)) == 2 and bool(lt.asarray([0.5]))
    assert [10, 20, 30][lt.asarray(1)] == 20 and operator.index(lt.asarray(-2, dtype=lt.int8)) == -2
    with pytest.raises(TypeError):
        operator.index(lt.asarray(1.0))


# ---- array, copy, astype, to_device ----------------------------------------------------------------


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_array_copy_and_astype_give_new_tensors(dtype):
    arr = random_array((2, 3), dtype, seed=84)
    x = lt.asarray(arr)
    for new in (lt.array(x), lt.array(arr), x.copy(), lt.astype(x, dtype), x.astype(dtype, copy=True)):
        assert new is not x
        check(new, arr)
    assert lt.astype(x, dtype, copy=False) is x
    y = x.copy()
    y += True if dtype == lt.bool_ else 1  # rebinds y only
    check(x, arr)
    check(lt.array([[1, 2]], dtype=lt.int8), np.array([[1, 2]], np.int8))
    check(lt.array(x, dtype=lt.float64), arr.astype(np.float64))


@pytest.mark.parametrize("src", ALL_DTYPES, ids=str)
@pytest.mark.parametrize("dst", [lt.float32, lt.int16, lt.bool_], ids=str)
def test_astype_matches_torch(src, dst):
    for kind in ("contiguous", "strided"):
        x, t = layout(random_array((3, 4), src, seed=85), kind)
        check(lt.astype(x, dst), t.to(to_torch_dtype(dst)))
        check(x.astype(dst, copy=False, device=x.device), t.to(to_torch_dtype(dst)))


def test_copy_keeps_the_gradient():
    x = lt.asarray([1.0, 2.0]).requires_grad_()
    (x.copy() * 3).sum().backward()
    check(x.grad, np.array([3.0, 3.0], np.float32))


def test_to_device():
    x = lt.asarray([1.0, 2.0])
    assert x.to_device(x.device) is x
    on_cpu = x.to_device("cpu")
    assert on_cpu.device == "cpu"
    check(on_cpu, np.array([1.0, 2.0], np.float32))
    with pytest.raises(ValueError, match="streams"):
        x.to_device("cpu", stream=1)
    with pytest.raises(lt.DeviceError):
        x.to_device("tpu")


# ---- tril, triu, meshgrid --------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [lt.float32, lt.int64, lt.uint8, lt.bool_], ids=str)
@pytest.mark.parametrize("shape", [(4, 4), (3, 5), (5, 2), (2, 3, 4), (0, 3), (2, 0, 0)], ids=str)
@pytest.mark.parametrize("k", [0, 1, -2, 7, -9])
def test_tril_triu(dtype, shape, k):
    arr = random_array(shape, dtype, seed=86)
    for kind in ("contiguous", "transposed", "flipped"):
        x, t = layout(arr, kind)
        check(lt.tril(x, k=k), torch.tril(t, k))
        check(lt.triu(x, k=k), torch.triu(t, k))
    with pytest.raises(lt.ShapeError, match="at least 2 dimensions"):
        lt.tril(lt.zeros(3))


def test_tril_triu_diag_take_numpys_and_torchs_spellings():
    arr = random_array((4, 5), lt.float32, 9)
    x, t = lt.asarray(arr), torch.tensor(arr)
    check(lt.triu(x, 1), np.triu(arr, 1))
    check(lt.tril(x, -1), torch.tril(t, -1))
    check(lt.triu(x, diagonal=2), torch.triu(t, diagonal=2))
    check(lt.tril(x, diagonal=-2), torch.tril(t, diagonal=-2))
    check(lt.diag(x, k=1), np.diag(arr, k=1))
    check(lt.diag(lt.asarray(arr[0]), k=-1), np.diag(arr[0], k=-1))
    check(lt.diag(x, diagonal=-1), torch.diag(t, diagonal=-1))


def test_tril_gradient():
    x = lt.asarray(random_array((3, 3), lt.float64, seed=87)).requires_grad_()
    lt.triu(x, k=1).sum().backward()
    check(x.grad, np.triu(np.ones((3, 3)), 1))


@pytest.mark.parametrize("indexing", ["xy", "ij"])
@pytest.mark.parametrize("sizes", [(3,), (2, 4), (2, 3, 4), (0, 3), ()], ids=str)
def test_meshgrid(indexing, sizes):
    arrays = [random_array((n,), lt.int32, seed=88 + i) for i, n in enumerate(sizes)]
    got = lt.meshgrid(*(lt.asarray(a) for a in arrays), indexing=indexing)
    expected = np.meshgrid(*arrays, indexing=indexing)
    assert isinstance(got, list) and len(got) == len(expected)
    for g, e in zip(got, expected):
        check(g, e)
    if sizes:
        for g, e in zip(got, torch.meshgrid(*(torch.tensor(a) for a in arrays), indexing=indexing)):
            check(g, e)


def test_meshgrid_errors_and_strided_inputs():
    x, t = layout(random_array((6,), lt.float64, seed=89), "strided")
    for g, e in zip(lt.meshgrid(x, x.flip(0)), torch.meshgrid(t, t.flip(0), indexing="xy")):
        check(g, e)
    with pytest.raises(ValueError, match="indexing"):
        lt.meshgrid(lt.zeros(2), indexing="yx")
    with pytest.raises(lt.ShapeError, match="1-d"):
        lt.meshgrid(lt.zeros(2, 2))


FACTORIES = [
    ("tensor", lambda m: m.tensor([[1.0, 2.0], [3.0, -4.0]], requires_grad=True)),
    ("zeros", lambda m: m.zeros(2, 3, requires_grad=True)),
    ("ones", lambda m: m.ones((3,), requires_grad=True)),
    ("full", lambda m: m.full((2, 2), 1.5, requires_grad=True)),
    ("arange", lambda m: m.arange(0.0, 3.0, requires_grad=True)),
    ("linspace", lambda m: m.linspace(0, 1, 5, requires_grad=True)),
    ("eye", lambda m: m.eye(3, requires_grad=True)),
    ("ones_like", lambda m: m.ones_like(m.zeros(2, 2), requires_grad=True)),
    ("full_like", lambda m: m.full_like(m.zeros(3), 2.0, requires_grad=True)),
]


@pytest.mark.parametrize("name, make", FACTORIES, ids=[n for n, _ in FACTORIES])
def test_factories_take_pytorchs_requires_grad(name, make):
    ours, theirs = make(lt), make(torch)
    assert ours.requires_grad and theirs.requires_grad
    (ours * ours * 3).sum().backward()
    (theirs * theirs * 3).sum().backward()
    check(ours.grad, theirs.grad.detach().numpy())
    assert not make(lt).detach().requires_grad


def test_requires_grad_of_a_tensor_handed_back_leaves_the_callers_flag():
    t = lt.ones(2)
    u = lt.asarray(t, requires_grad=True)
    assert u.requires_grad and not t.requires_grad
    assert not lt.zeros(2).requires_grad and not lt.zeros(2, requires_grad=False).requires_grad


# ---- NumPy's formulas: identity, tri, the index grids, logspace, geomspace, vander, diagflat ---------------------


def test_numpys_creation_functions_match_numpy():
    check(lt.identity(3), np.identity(3).astype(np.float32))  # the default float, as eye
    check(lt.identity(2, dtype=lt.int16), np.identity(2, np.int16))
    for n, m, k in ((3, None, 0), (3, 5, 1), (4, 2, -1), (0, 3, 0), (2, 3, 9)):
        check(lt.tri(n, m, k, dtype=lt.float64), np.tri(n, m, k))
        for got, want in zip(lt.tril_indices(n, k, m), np.tril_indices(n, k, m)):
            check(got, want)
        for got, want in zip(lt.triu_indices(n, k, m), np.triu_indices(n, k, m)):
            check(got, want)
    for got, want in zip(lt.diag_indices(4, 3), np.diag_indices(4, 3)):
        check(got, want)
    check(lt.indices((2, 3, 4)), np.indices((2, 3, 4)))
    check(lt.indices((2, 0)), np.indices((2, 0)))
    check(lt.indices((3,), dtype=lt.int32), np.indices((3,), dtype=np.int32))
    for got, want in zip(lt.indices((2, 3), sparse=True), np.indices((2, 3), sparse=True)):
        check(got, want)
    check(lt.logspace(0, 3, 7, dtype=lt.float64), np.logspace(0, 3, 7))
    check(lt.logspace(-1, 2, 5, endpoint=False, base=2.0, dtype=lt.float64), np.logspace(-1, 2, 5, endpoint=False, base=2.0))
    check(lt.logspace(0, 1, 4), np.logspace(0, 1, 4).astype(np.float32))
    for start, stop, num, endpoint in ((1, 1000, 4, True), (-2, -1e4, 6, True), (0.5, 8, 5, False), (3, 3, 1, True)):
        check(lt.geomspace(start, stop, num, endpoint, dtype=lt.float64), np.geomspace(start, stop, num, endpoint))
    with pytest.raises(ValueError):
        lt.geomspace(0, 1)
    for dtype in (lt.int32, lt.float32, lt.float64):
        v = random_array((4,), dtype, seed=41)
        dt = v.dtype if dtype.is_float else np.int64  # NumPy's vander of float32 is float64
        check(lt.vander(lt.asarray(v)), np.vander(v).astype(dt))
        check(lt.vander(lt.asarray(v), 3, increasing=True), np.vander(v, 3, increasing=True).astype(dt))
        check(lt.vander(lt.asarray(v), 0), np.vander(v, 0).astype(dt))
        check(lt.diagflat(lt.asarray(v), -1), np.diagflat(v, -1))
        check(lt.diagflat(lt.asarray(v.reshape(2, 2)), 2), np.diagflat(v.reshape(2, 2), 2))
    check(lt.ascontiguousarray(3.5, dtype=lt.float64), np.ascontiguousarray(3.5))
    check(lt.asanyarray([[1, 2]]), np.asanyarray([[1, 2]]))


def test_cartesian_prod_is_torchs():
    a, b, c = np.array([1, 2, 3]), np.array([-1, 4]), np.array([7, 8])
    check(lt.cartesian_prod(a, b, c), torch.cartesian_prod(torch.tensor(a), torch.tensor(b), torch.tensor(c)))
    check(lt.cartesian_prod(lt.asarray(a)), torch.cartesian_prod(torch.tensor(a)))
    floats = random_array((4,), lt.float32, seed=3)
    x, t = layout(np.stack([floats, floats]), "transposed")  # rows of a transposed view: strided
    check(lt.cartesian_prod(x[0], x[1]), torch.cartesian_prod(t[0], t[1]))
    check(lt.cartesian_prod(lt.asarray(a), lt.zeros(0, dtype=lt.int64)),
          torch.cartesian_prod(torch.tensor(a), torch.zeros(0, dtype=torch.int64)))
    check(lt.cartesian_prod(lt.asarray(a, dtype=lt.int32), lt.asarray(floats)),  # promoted (torch asks for one)
          torch.cartesian_prod(torch.tensor(a, dtype=torch.float32), torch.tensor(floats)))


@pytest.mark.parametrize("with_replacement", [False, True])
@pytest.mark.parametrize("r", [0, 1, 2, 3, 5])
def test_combinations_are_torchs(r, with_replacement):
    arr = random_array((4,), lt.float32, seed=4)
    x, t = layout(arr, "flipped")
    check(lt.combinations(x, r, with_replacement), torch.combinations(t, r, with_replacement))
    check(lt.combinations(lt.zeros(0), r, with_replacement), torch.combinations(torch.zeros(0), r, with_replacement))


def test_combinations_gradient_and_errors():
    arr = random_array((5,), lt.float64, seed=5)
    x, t = lt.asarray(arr).requires_grad_(), torch.tensor(arr, requires_grad=True)
    (lt.combinations(x, 3).prod(1)).sum().backward()
    torch.combinations(t, 3).prod(1).sum().backward()
    check(x.grad, t.grad)
    with pytest.raises(lt.ShapeError):
        lt.combinations(lt.zeros((2, 2)))
    with pytest.raises(ValueError):
        lt.combinations(lt.zeros(3), -1)
