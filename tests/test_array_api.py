"""The array API standard's namespace: the revision, `x.__array_namespace__()`, and the inspection object
`lt.__array_namespace_info__()` (capabilities, devices, default dtypes, dtypes by kind)."""
from __future__ import annotations

import math

import numpy as np
import pytest

import lazytensor as lt
from conftest import ALL_DTYPES, WIDE_UNSIGNED_DTYPES
from lazytensor.kernels.triton import targets


def test_the_namespace_of_a_tensor_is_lazytensor():
    assert lt.__array_api_version__ == "2024.12"
    for x in (lt.zeros(2, 3), lt.asarray(1.5), lt.arange(3) + 1):
        assert x.__array_namespace__() is lt
        for version in ("2021.12", "2022.12", "2023.12", "2024.12"):
            assert x.__array_namespace__(api_version=version) is lt


@pytest.mark.parametrize("version", ["2025.12", "2024", "", "2024.12 "])
def test_an_unknown_revision_raises(version):
    with pytest.raises(ValueError, match="array API standard"):
        lt.zeros(2).__array_namespace__(api_version=version)


def test_the_standards_constants():
    assert (lt.e, lt.pi, lt.inf) == (math.e, math.pi, math.inf) and math.isnan(lt.nan) and lt.newaxis is None
    assert lt.zeros(2, 3)[:, lt.newaxis].shape == (2, 1, 3)
    assert type(lt.e) is type(lt.pi) is type(lt.inf) is type(lt.nan) is float


def test_capabilities_say_what_is_implemented():
    info = lt.__array_namespace_info__()
    assert info.capabilities() == {"boolean indexing": True, "data-dependent shapes": True,
                                   "max dimensions": None}
    x = lt.asarray(np.array([[1.0, -2.0], [3.0, 0.0]]))
    np.testing.assert_array_equal(x[x > 0].numpy(), [1.0, 3.0])
    np.testing.assert_array_equal(lt.nonzero(x)[1].numpy(), [0, 1, 0])


def test_any_number_of_dimensions_works():
    """'max dimensions' is None: a 40-d tensor computes as any other."""
    shape = (2,) * 10 + (1,) * 30
    x = lt.arange(2 ** 10).reshape(shape)
    assert (x * 2 + 1).sum().item() == sum(2 * i + 1 for i in range(2 ** 10))
    assert x.T.reshape(-1).tolist() == x.numpy().T.reshape(-1).tolist()


def test_devices_and_the_default_device():
    info = lt.__array_namespace_info__()
    assert info.default_device() == lt.zeros(2).device
    assert info.devices() == [d.name for d in lt.devices()]
    assert "cpu" in info.devices()
    assert len(info.devices()) == 1 + targets.target_count()


def test_default_dtypes_are_those_python_values_get():
    info = lt.__array_namespace_info__()
    defaults = info.default_dtypes()
    assert defaults == {"real floating": lt.float32, "integral": lt.int64, "indexing": lt.int64}
    assert lt.asarray(1.5).dtype is defaults["real floating"] and lt.asarray(1).dtype is defaults["integral"]
    assert lt.arange(3).argmax().dtype is defaults["indexing"]
    assert info.default_dtypes(device="cpu") == defaults
    with pytest.raises(lt.DeviceError):
        info.default_dtypes(device="tpu")


def test_dtypes_by_kind():
    info = lt.__array_namespace_info__()
    every = info.dtypes()
    assert set(every.values()) == set(ALL_DTYPES + WIDE_UNSIGNED_DTYPES)  # float16 and bfloat16 are not the standard's
    assert all(every[name].name == name for name in every)
    assert set(info.dtypes(kind="real floating")) == {"float32", "float64"}
    assert set(info.dtypes(kind="integral")) == {"int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
                                                  "uint64"}
    assert set(info.dtypes(kind="bool")) == {"bool"}
    assert info.dtypes(kind="complex floating") == {}
    assert set(info.dtypes(kind=("bool", lt.float64))) == {"bool", "float64"}
    assert info.dtypes(device="cpu", kind="unsigned integer") == {"uint8": lt.uint8, "uint16": lt.uint16,
                                                                  "uint32": lt.uint32, "uint64": lt.uint64}
    with pytest.raises(ValueError, match="unknown kind"):
        info.dtypes(kind="integer")
