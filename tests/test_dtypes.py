"""dtypes: the promotion table against torch.promote_types (and for uint16, uint32 and uint64, which torch
does not promote, against the array API standard's table and NumPy 2's), to_dtype spellings, weak Python
scalar result types, and that ops really produce the promoted dtype."""
from __future__ import annotations

import copy
import itertools
import pickle
import types

import numpy as np
import pytest
import torch

import lazytensor as lt
from conftest import ALL_DTYPES, HALF_DTYPES, WIDE_UNSIGNED_DTYPES, check, random_array, to_torch_dtype
from lazytensor import dtypes

TORCH_PROMOTED = ALL_DTYPES + HALF_DTYPES  # the dtypes torch.promote_types takes
EVERY_DTYPE = TORCH_PROMOTED + WIDE_UNSIGNED_DTYPES
PAIRS = list(itertools.product(TORCH_PROMOTED, TORCH_PROMOTED))
ALL_PAIRS = list(itertools.product(EVERY_DTYPE, EVERY_DTYPE))
INTEGERS = [d for d in EVERY_DTYPE if d.is_int]


@pytest.mark.parametrize("a,b", PAIRS, ids=str)
def test_promote_matches_torch(a, b):
    out = lt.promote(a, b)
    assert to_torch_dtype(out) == torch.promote_types(to_torch_dtype(a), to_torch_dtype(b))
    assert out == lt.promote(b, a)


def test_promote_table_spot_checks():
    assert lt.promote(lt.int8, lt.uint8) == lt.int16
    assert lt.promote(lt.int64, lt.uint8) == lt.int64
    assert lt.promote(lt.int64, lt.float32) == lt.float32  # int with float: the float wins (torch, not NumPy)
    assert lt.promote(lt.uint8, lt.float32) == lt.float32
    assert lt.promote(lt.bool_, lt.uint8) == lt.uint8
    assert lt.promote(lt.float32, lt.float64) == lt.float64
    assert lt.promote(lt.int16, lt.int32) == lt.int32


def promoted(*dtypes_: lt.DType) -> lt.DType | None:
    """`lt.promote` folded over the dtypes from the left; None where a pair has no promotion."""
    out = dtypes_[0]
    try:
        for d in dtypes_[1:]:
            out = lt.promote(out, d)
    except lt.DTypeError:
        return None
    return out


def test_promote_is_associative_over_all_triples():
    """Wherever both groupings are defined (a signed integer with uint64 is not), and `result_type`, the join
    of all its arguments, is the same in every order."""
    for a, b, c in itertools.product(EVERY_DTYPE, repeat=3):
        left, right = promoted(a, b, c), promoted(b, c, a)  # (a + b) + c and a + (b + c)
        assert left is None or right is None or left is right, (a, b, c)
        joins = set()
        for order in itertools.permutations((a, b, c)):
            try:
                joins.add(lt.result_type(*order))
            except lt.DTypeError:
                joins.add(None)
        assert len(joins) == 1, (a, b, c, joins)


# The array API standard's promotion of a signed with an unsigned integer (2024.12, "Type Promotion Rules"):
# (signed bits, unsigned bits) -> bits of the signed result. With uint64 it is unspecified.
ARRAY_API_MIXED = {(8, 8): 16, (8, 16): 32, (8, 32): 64, (16, 8): 16, (16, 16): 32, (16, 32): 64,
                   (32, 8): 32, (32, 16): 32, (32, 32): 64, (64, 8): 64, (64, 16): 64, (64, 32): 64}


@pytest.mark.parametrize("a,b", list(itertools.product(INTEGERS, INTEGERS)), ids=str)
def test_integer_promotion_is_the_array_apis(a, b):
    """Two of a kind: the wider; a signed and an unsigned integer: the table's signed one, as NumPy 2's; a
    signed integer with uint64 raises (NumPy 2 gives float64, torch and the standard give nothing)."""
    signed, unsigned = (a, b) if a.is_signed else (b, a)
    if a.is_signed == b.is_signed:
        expected = a if a.bits >= b.bits else b
    elif unsigned is lt.uint64:
        with pytest.raises(lt.DTypeError, match=f"no integer dtype holds both {a.name} and {b.name}"):
            lt.promote(a, b)
        with pytest.raises(lt.DTypeError):
            lt.asarray([1], dtype=a) + lt.asarray([1], dtype=b)
        assert np.promote_types(a.name, b.name) == np.float64
        return
    else:
        expected = dtypes.to_dtype(f"int{ARRAY_API_MIXED[(signed.bits, unsigned.bits)]}")
    assert lt.promote(a, b) is expected and lt.result_type(a, b) is expected
    assert np.promote_types(a.name, b.name) == expected.name


@pytest.mark.parametrize("dtype", WIDE_UNSIGNED_DTYPES, ids=str)
def test_wide_unsigned_promotion_with_bools_and_floats(dtype):
    """A bool joins any integer; a float wins, at its own width (as torch, which promotes these two kinds)."""
    assert lt.promote(lt.bool_, dtype) is dtype
    for f in (lt.float16, lt.bfloat16, lt.float32, lt.float64):
        assert lt.promote(dtype, f) is f
        assert to_torch_dtype(f) == torch.promote_types(to_torch_dtype(dtype), to_torch_dtype(f))


@pytest.mark.parametrize("a", ALL_DTYPES, ids=str)
def test_binary_op_result_dtypes_match_torch(a):
    """Ops, not just the table: a tensor of `a` combined with a tensor of every dtype (one fused kernel)."""
    x = lt.asarray(random_array((3,), a, 1))
    tx = torch.tensor(random_array((3,), a, 1))
    for b in ALL_DTYPES:
        arr = random_array((3,), b, 2)
        y, ty = lt.asarray(arr), torch.tensor(arr)
        check(y + x, ty + tx)


@pytest.mark.parametrize("x,expected", [
    (lt.float32, lt.float32), (lt.int8, lt.int8), ("float32", lt.float32), ("float64", lt.float64),
    ("int8", lt.int8), ("int16", lt.int16), ("int32", lt.int32), ("int64", lt.int64), ("uint8", lt.uint8),
    ("bool", lt.bool_), ("f4", lt.float32), ("f8", lt.float64), ("i2", lt.int16), ("u1", lt.uint8),
    ("?", lt.bool_), (np.float32, lt.float32), (np.float64, lt.float64), (np.int8, lt.int8), (np.int16, lt.int16),
    (np.int32, lt.int32), (np.int64, lt.int64), (np.uint8, lt.uint8), (np.bool_, lt.bool_),
    ("uint16", lt.uint16), ("uint32", lt.uint32), ("uint64", lt.uint64), ("u2", lt.uint16), ("u4", lt.uint32),
    ("u8", lt.uint64), ("Q", lt.uint64), (np.uint16, lt.uint16), (np.uint32, lt.uint32), (np.uint64, lt.uint64),
    (np.uintc, lt.uint32), (np.ulonglong, lt.uint64), (np.dtype("uint64"), lt.uint64),
    (np.dtype("float32"), lt.float32), (np.dtype("int64"), lt.int64), (np.dtype("bool"), lt.bool_),
    (float, lt.float64), (int, lt.int64), (bool, lt.bool_),
], ids=str)
def test_to_dtype(x, expected):
    assert dtypes.to_dtype(x) == expected
    assert lt.zeros(1, dtype=x).dtype == expected


@pytest.mark.parametrize("x", ["float128", "complex64", "int128", "object", "notadtype", "", np.longdouble,
                               np.complex128, np.dtype(">u4"), complex, object, str, None.__class__, 3], ids=str)
def test_to_dtype_unsupported_raises(x):
    with pytest.raises(lt.DTypeError):
        dtypes.to_dtype(x)
    with pytest.raises(TypeError):  # DTypeError is a TypeError
        dtypes.to_dtype(x)


def test_to_dtype_error_names_the_supported_dtypes():
    with pytest.raises(lt.DTypeError, match="complex64.*supported: bool, int8.*uint8, uint16, uint32, uint64, float16"):
        dtypes.to_dtype(np.complex64)


@pytest.mark.parametrize("dtype", ALL_DTYPES + WIDE_UNSIGNED_DTYPES, ids=str)
def test_to_numpy_dtype_round_trip(dtype):
    npd = dtypes.to_numpy_dtype(dtype)
    assert npd == np.dtype(dtype.name)
    assert dtypes.to_dtype(npd) == dtype
    assert dtypes.to_dtype(dtype.name) == dtype


@pytest.mark.parametrize("value,expected", [(True, lt.bool_), (False, lt.bool_), (3, lt.int64), (-2 ** 63, lt.int64),
                                            (2.5, lt.float32), (float("nan"), lt.float32)], ids=str)
def test_scalar_dtype_matches_torch(value, expected):
    assert dtypes.scalar_dtype(value) == expected
    assert to_torch_dtype(expected) == torch.tensor(value).dtype


@pytest.mark.parametrize("value", ["a", None, 1j, [1]], ids=str)
def test_scalar_dtype_of_non_scalars_raises(value):
    with pytest.raises(lt.DTypeError):
        dtypes.scalar_dtype(value)


@pytest.mark.parametrize("dtype", EVERY_DTYPE, ids=str)
@pytest.mark.parametrize("scalar", [True, 2, 2.5], ids=["bool", "int", "float"])
def test_result_type_with_weak_scalar_matches_torch(dtype, scalar):
    """Every dtype, the uint16, uint32 and uint64 that torch promotes with nothing but Python scalars too."""
    expected = torch.result_type(torch.zeros(2, dtype=to_torch_dtype(dtype)), scalar)
    assert to_torch_dtype(dtypes.weak_result_type(dtype, scalar)) == expected


def test_result_type_examples():
    assert dtypes.weak_result_type(lt.float32, 2.5) == lt.float32
    assert dtypes.weak_result_type(lt.int32, 2.5) == lt.float32
    assert dtypes.weak_result_type(lt.uint8, 7) == lt.uint8
    assert dtypes.weak_result_type(lt.bool_, 1) == lt.int64
    assert dtypes.weak_result_type(lt.bool_, True) == lt.bool_
    assert dtypes.weak_result_type(lt.float64, 1) == lt.float64


@pytest.mark.parametrize("dtype", ALL_DTYPES + WIDE_UNSIGNED_DTYPES, ids=str)
def test_check_fits(dtype):
    if dtype.is_int:
        info = np.iinfo(dtype.name)
        dtypes.check_fits(info.max, dtype, "op")
        dtypes.check_fits(info.min, dtype, "op")
        for bad in (info.max + 1, info.min - 1):
            with pytest.raises(lt.DTypeError, match=f"op: .*{bad}.*{dtype.name}"):
                dtypes.check_fits(bad, dtype, "op")
    else:  # floats and bools take any Python int (it converts, possibly to inf or True)
        dtypes.check_fits(2 ** 70, dtype, "op")
    dtypes.check_fits(True, dtype, "op")
    dtypes.check_fits(1e300, dtype, "op")


def test_dtype_properties():
    table = {  # dtype: (kind, itemsize, bits, is_float, is_int, is_signed)
        lt.bool_: ("b", 1, 1, False, False, False), lt.int8: ("i", 1, 8, False, True, True),
        lt.int16: ("i", 2, 16, False, True, True), lt.int32: ("i", 4, 32, False, True, True),
        lt.int64: ("i", 8, 64, False, True, True), lt.uint8: ("u", 1, 8, False, True, False),
        lt.uint16: ("u", 2, 16, False, True, False), lt.uint32: ("u", 4, 32, False, True, False),
        lt.uint64: ("u", 8, 64, False, True, False),
        lt.float32: ("f", 4, 32, True, False, True), lt.float64: ("f", 8, 64, True, False, True),
        lt.float16: ("f", 2, 16, True, False, True), lt.bfloat16: ("f", 2, 16, True, False, True),
    }
    assert set(table) == set(EVERY_DTYPE) == set(dtypes.ALL_DTYPES)
    for d, (kind, itemsize, bits, is_float, is_int, is_signed) in table.items():
        assert (d.kind, d.itemsize, d.bits, d.is_float, d.is_int, d.is_signed) == \
            (kind, itemsize, bits, is_float, is_int, is_signed)
        assert d.itemsize == dtypes.to_numpy_dtype(d).itemsize == to_torch_dtype(d).itemsize
        assert str(d) == d.name and repr(d) == f"lazytensor.{d.name}"
        assert d.np_name == d.name


def test_dtypes_are_values():
    assert lt.float32 == dtypes.to_dtype("float32") and hash(lt.float32) == hash(dtypes.to_dtype("float32"))
    assert lt.float32 != lt.float64
    assert len({*EVERY_DTYPE, *dtypes.ALL_DTYPES}) == 13


def test_module_aliases():
    assert lt.bool is lt.bool_
    assert lt.float is lt.float32 and lt.double is lt.float64 and lt.half is lt.float16
    assert lt.long is lt.int64 and lt.int is lt.int32
    assert lt.default_float == lt.float32 and lt.default_int == lt.int64


def test_default_dtypes_of_creation_and_results():
    assert lt.asarray([1.0]).dtype == lt.default_float
    assert lt.asarray([1]).dtype == lt.default_int
    assert lt.zeros(2).dtype == lt.default_float
    assert lt.arange(3).dtype == lt.default_int
    assert (lt.asarray([1, 2]) / 2).dtype == lt.default_float
    assert lt.asarray([1, 2]).exp().dtype == lt.default_float
    assert (lt.asarray([True]) + 1).dtype == lt.default_int


@pytest.fixture
def default_dtype_restored():
    yield
    lt.set_default_dtype(lt.float32)
    torch.set_default_dtype(torch.float32)


@pytest.mark.parametrize("dtype", [lt.float64, lt.float16, lt.bfloat16])
def test_set_default_dtype_as_torch(default_dtype_restored, dtype):
    """Every place the default float decides a dtype follows `set_default_dtype`, as torch's does; tensors made
    before keep theirs; lt.jit records again, saying why; an integer default is an error."""
    before = lt.zeros(2)
    lt.set_default_dtype(dtype)
    torch.set_default_dtype(to_torch_dtype(dtype))
    assert lt.get_default_dtype() == dtype == lt.default_float and before.dtype == lt.float32
    made = {"zeros": (lt.zeros(2), torch.zeros(2)), "rand": (lt.rand(2), torch.rand(2)),
            "randn": (lt.randn(2), torch.randn(2)), "linspace": (lt.linspace(0, 1, 3), torch.linspace(0, 1, 3)),
            "tensor of floats": (lt.tensor([1.5]), torch.tensor([1.5])),
            "int / int": (lt.arange(3) / 2, torch.arange(3) / 2), "int * float": (lt.arange(3) * 0.5,
                                                                                  torch.arange(3) * 0.5),
            "exp of ints": (lt.arange(3).exp(), torch.arange(3).exp()),
            "Linear": (lt.nn.Linear(2, 2).weight, torch.nn.Linear(2, 2).weight),
            "LSTM": (lt.nn.LSTM(2, 3).weight_ih_l0, torch.nn.LSTM(2, 3).weight_ih_l0),
            "Parameter()": (lt.nn.Parameter(), torch.nn.Parameter())}
    for what, (ours, theirs) in made.items():
        assert ours.dtype == dtype and theirs.dtype == to_torch_dtype(dtype), what
    assert lt.finfo().eps == lt.finfo(dtype).eps
    assert lt.__array_namespace_info__().default_dtypes()["real floating"] == dtype
    check(lt.arange(5) / 3, torch.arange(5) / 3)
    with pytest.raises(lt.DTypeError, match="float dtype"):
        lt.set_default_dtype(lt.int32)


def test_jit_records_again_for_a_new_default_dtype(default_dtype_restored):
    @lt.jit
    def scaled(x):
        return x / 2 + lt.ones(x.shape)
    x = lt.arange(4)
    for _ in range(3):
        assert scaled(x).dtype == lt.float32
    lt.set_default_dtype(lt.float64)
    for _ in range(3):
        got = scaled(x)
        assert got.dtype == lt.float64
    check(got, torch.arange(4, dtype=torch.float64) / 2 + 1)
    assert "new signature: the default float dtype is float64, was float32" in scaled.reasons


def test_dtypes_pickle_and_copy_as_the_same_constant():
    """A dtype's equality is identity: a pickled or copied dtype must be the module's constant itself."""
    for dt in EVERY_DTYPE:
        for back in (pickle.loads(pickle.dumps(dt)), copy.deepcopy(dt), copy.copy(dt)):
            assert back is dt


# ---- the array API's dtype functions: finfo, iinfo, isdtype, result_type, can_cast ----------------------


@pytest.mark.parametrize("dtype", [lt.float16, lt.bfloat16, lt.float32, lt.float64], ids=str)
def test_finfo_of_a_dtype_or_a_tensor_matches_torch(dtype):
    expected = torch.finfo(to_torch_dtype(dtype))
    for got in (lt.finfo(dtype), lt.finfo(lt.zeros(2, dtype=dtype))):
        assert got.dtype is dtype
        for name in ("bits", "eps", "max", "min", "smallest_normal"):
            assert getattr(got, name) == getattr(expected, name), name
            assert type(getattr(got, name)) is type(getattr(expected, name)), name  # Python ints and floats


@pytest.mark.parametrize("dtype", INTEGERS, ids=str)
def test_iinfo_matches_torch_and_numpy(dtype):
    expected = torch.iinfo(to_torch_dtype(dtype))
    for got in (lt.iinfo(dtype), lt.iinfo(lt.zeros(2, dtype=dtype)), lt.iinfo(dtype.name)):
        assert (got.dtype, got.bits, got.max, got.min) == (dtype, expected.bits, expected.max, expected.min)
        assert type(got.max) is int and type(got.min) is int
        assert (got.max, got.min) == (np.iinfo(dtype.name).max, np.iinfo(dtype.name).min)


@pytest.mark.parametrize("dtype", [lt.bool_, lt.float32, lt.bfloat16], ids=str)
def test_iinfo_of_a_non_integer_raises(dtype):
    with pytest.raises(lt.DTypeError, match="not an integer dtype"):
        lt.iinfo(dtype)


def test_isdtype_kinds():
    kinds = {  # the dtypes of each kind (every other dtype is not of it)
        "bool": {lt.bool_}, "signed integer": {lt.int8, lt.int16, lt.int32, lt.int64},
        "unsigned integer": {lt.uint8, lt.uint16, lt.uint32, lt.uint64}, "integral": set(INTEGERS),
        "real floating": {lt.float16, lt.bfloat16, lt.float32, lt.float64}, "complex floating": set(),
        "numeric": set(EVERY_DTYPE) - {lt.bool_},
    }
    for kind, members in kinds.items():
        assert {d for d in EVERY_DTYPE if lt.isdtype(d, kind)} == members, kind
    for d in EVERY_DTYPE:
        assert lt.isdtype(d, d) and not lt.isdtype(d, lt.float64 if d is not lt.float64 else lt.float32)
        assert lt.isdtype(d, ("bool", "numeric"))
    assert lt.isdtype(lt.int8, (lt.float32, "signed integer")) and not lt.isdtype(lt.uint8, (lt.int8, "bool"))
    with pytest.raises(ValueError, match="unknown kind"):
        lt.isdtype(lt.int8, "integer")
    with pytest.raises(TypeError):
        lt.isdtype("int8", "integral")


@pytest.mark.parametrize("a,b", PAIRS, ids=str)
def test_result_type_of_dtypes_and_tensors_is_promotion(a, b):
    expected = torch.promote_types(to_torch_dtype(a), to_torch_dtype(b))
    assert to_torch_dtype(lt.result_type(a, b)) == expected
    assert to_torch_dtype(lt.result_type(lt.zeros(1, dtype=a), b)) == expected
    assert to_torch_dtype(lt.result_type(lt.zeros(1, dtype=a), lt.zeros((), dtype=b))) == expected


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
@pytest.mark.parametrize("scalar", [True, 3, 2.5])
def test_result_type_takes_python_scalars_as_weak(dtype, scalar):
    expected = torch.result_type(torch.zeros(2, dtype=to_torch_dtype(dtype)), scalar)
    assert to_torch_dtype(lt.result_type(dtype, scalar)) == expected
    assert to_torch_dtype(lt.result_type(scalar, lt.zeros(2, dtype=dtype))) == expected


def test_result_type_of_several_and_of_none():
    assert lt.result_type(lt.int8, lt.uint8, lt.int16, 7) is lt.int16
    assert lt.result_type(lt.int8, 1.5, lt.uint8) is lt.float32
    assert lt.result_type(lt.float16, lt.bfloat16) is lt.float32
    assert lt.result_type(np.float64, lt.int8) is lt.float64  # a NumPy dtype names the same dtype
    assert lt.result_type(lt.uint16, lt.int16, 7) is lt.int32 and lt.result_type(lt.uint32, 7, lt.uint64) is lt.uint64
    for order in itertools.permutations((lt.int8, lt.uint64, lt.float32)):  # the float absorbs both integers
        assert lt.result_type(*order) is lt.float32
    with pytest.raises(lt.DTypeError, match="no integer dtype holds both"):
        lt.result_type(lt.uint64, lt.uint8, lt.int64)
    with pytest.raises(ValueError, match="at least one tensor or dtype"):
        lt.result_type(1, 2.0)


@pytest.mark.parametrize("a,b", ALL_PAIRS, ids=str)
def test_can_cast_is_promotion_to_the_target(a, b):
    assert lt.can_cast(a, b) == (promoted(a, b) is b)  # a signed integer and uint64 cast to neither
    assert lt.can_cast(lt.zeros(1, dtype=a), b) == lt.can_cast(a, b)
    if a.is_int and b.is_int or a.kind == b.kind == "b":  # two ints: NumPy's safe casting
        assert lt.can_cast(a, b) == np.can_cast(a.name, b.name)


def test_can_cast_examples():
    assert lt.can_cast(lt.int8, lt.int16) and not lt.can_cast(lt.int16, lt.int8)
    assert lt.can_cast(lt.uint8, lt.int16) and not lt.can_cast(lt.int8, lt.uint8)
    assert lt.can_cast(lt.bool_, lt.uint8) and not lt.can_cast(lt.float32, lt.int64)
    assert lt.can_cast(lt.float16, lt.float32) and not lt.can_cast(lt.float16, lt.bfloat16)
    assert lt.can_cast(lt.uint16, lt.int32) and lt.can_cast(lt.uint32, lt.uint64) and lt.can_cast(lt.uint64, lt.float32)
    assert not lt.can_cast(lt.uint64, lt.int64) and not lt.can_cast(lt.int64, lt.uint64)


# ---- dtypes beside NumPy's ----------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", EVERY_DTYPE, ids=str)
def test_dtypes_equal_numpys(dtype):
    npd = np.dtype(dtype)  # NumPy reads the `dtype` property
    assert npd == dtype.dtype and npd.name == dtype.name and npd.itemsize == dtype.itemsize
    assert dtype == npd and npd == dtype and dtype == dtype.name
    assert lt.zeros(2, dtype=dtype).dtype == npd
    if dtype is not lt.bfloat16:
        scalar_type = getattr(np, dtype.name if dtype is not lt.bool_ else "bool_")
        assert dtype == scalar_type and scalar_type == dtype
        assert np.zeros(2, dtype=dtype).dtype == npd  # NumPy takes a lazytensor dtype where it takes its own
    others = [d for d in EVERY_DTYPE if d is not dtype]
    assert all(dtype != np.dtype(d) and dtype != d.name for d in others)


def test_dtype_equality_with_what_names_no_dtype():
    assert lt.float64 != None and lt.float32 != "no such dtype" and lt.int64 != 3
    assert lt.float32 != "f4,f4 y" and lt.float32 != "f4,f4"  # a string NumPy rejects (ValueError), a record
    assert lt.float32 != types.SimpleNamespace(dtype=np.dtype(np.float32))  # a thing with a dtype is not one
    assert lt.float64 == float and lt.int64 == int and lt.bool_ == bool  # NumPy's reading of Python's types
    # the constants still hash by identity, so a dict of dtypes is as fast as before, and a set holds each once
    assert hash(lt.float32) == object.__hash__(lt.float32)
    assert len({lt.float32, lt.float32, lt.float64}) == 2
