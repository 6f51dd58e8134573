"""Bad input fails at the op call, in the user's terms, before anything is compiled."""
from __future__ import annotations

import numpy as np
import pytest

import lazytensor as lt


@pytest.fixture(autouse=True)
def nothing_compiles():
    yield
    assert lt.stats().kernels_compiled == 0 and lt.stats().kernels_launched == 0


def test_shapes_that_do_not_broadcast():
    with pytest.raises(lt.ShapeError, match=r"add: shapes \(3, 4\) and \(5,\) are not broadcastable"):
        lt.ones(3, 4) + lt.ones(5)
    with pytest.raises(ValueError):  # ShapeError is a ValueError, as NumPy raises
        lt.ones(2, 3) * lt.ones(3, 2)


def test_bad_axes():
    x = lt.ones(2, 3)
    with pytest.raises(lt.AxisError, match="axis 2 is out of bounds for a tensor of dimension 2"):
        x.sum(axis=2)
    with pytest.raises(IndexError):
        x.max(-3)
    with pytest.raises(lt.AxisError, match="repeated axis"):
        x.sum(axis=(0, -2))
    with pytest.raises(lt.AxisError):
        x.permute(0, 0)


def test_reshape_to_a_wrong_size():
    with pytest.raises(lt.ShapeError, match=r"cannot reshape a tensor of shape \(2, 3\) \(6 elements\) into \(4, 2\)"):
        lt.ones(2, 3).reshape(4, 2)
    with pytest.raises(lt.ShapeError):
        lt.ones(2, 3).reshape(-1, 4)
    with pytest.raises(lt.ShapeError):
        lt.ones(2, 3).reshape(-1, -1)


def test_index_out_of_range():
    x = lt.ones(2, 3)
    with pytest.raises(IndexError, match="index 3 is out of bounds for axis 1 with size 3"):
        x[0, 3]
    with pytest.raises(IndexError):
        x[-3]
    with pytest.raises(IndexError, match="too many indices"):
        x[0, 0, 0]


def test_unsupported_dtypes():
    with pytest.raises(TypeError, match="complex64"):
        lt.asarray(np.ones(3, np.complex64))
    with pytest.raises(TypeError):
        lt.zeros(3, dtype="float128")
    with pytest.raises(lt.DTypeError, match="out of bounds for uint8"):
        lt.ones(3, dtype=lt.uint8) + 300
    with pytest.raises(TypeError):
        lt.ones(3) & lt.ones(3)


def test_matmul_inner_dimensions():
    with pytest.raises(lt.ShapeError, match=r"matmul: inner dimensions do not match: \(2, 3\) @ \(4, 5\) \(3 != 4\)"):
        lt.ones(2, 3) @ lt.ones(4, 5)
    with pytest.raises(lt.ShapeError):
        lt.ones(3) @ lt.ones(4)
    with pytest.raises(lt.ShapeError):
        lt.ones(2, 2, 3) @ lt.ones(3, 3, 2)


def test_devices_that_are_not_there():
    with pytest.raises(lt.DeviceError, match="unknown device 'tpu'"):
        lt.ones(3, device="tpu")
    if "cuda:0" in [d.name for d in lt.devices()]:  # a machine with a GPU and triton
        assert lt.ones(3, device="cuda").device == "cuda:0"
    else:
        with pytest.raises(lt.DeviceError, match="cuda:0"):
            lt.ones(3, device="cuda")


def test_ambiguous_truth_value():
    with pytest.raises(ValueError, match="ambiguous"):
        bool(lt.asarray(np.ones(2)))
