"""Checked kernels (`LT_CHECK_BOUNDS=1`, `kernels/bounds.py`): faulty kernels built directly against the LLVM
backend, and through a realize, are caught before they touch memory outside their buffers."""
from __future__ import annotations

import dataclasses
import importlib

import numpy as np
import pytest
import torch
from test_contraction import data

import lazytensor as lt
from conftest import check
from lazytensor.kernels import bounds, ir
from lazytensor.kernels.bounds import OutOfBounds
from lazytensor.kernels.dtype import float32
from lazytensor.kernels.expr import Bound, Expr, Var
from lazytensor.kernels.llvm import compile_kernel, runtime

SENTINEL = -7.0
realize = importlib.import_module("lazytensor.realize")  # the module, which `lt.realize` the function hides


@pytest.fixture
def checked(monkeypatch):
    monkeypatch.setattr(bounds, "CHECK", True)


def shifted_copy(n: int, src_size: int, out_size: int) -> ir.Kernel:
    """`out[o] = src[o + 1]` for o < n, with the buffers declared `out_size` and `src_size` elements long: a
    faulty kernel when either is below what it indexes."""
    o = Var("o0", n)
    bufs = (ir.BufferParam(float32, out_size, True), ir.BufferParam(float32, src_size))
    value = ir.load(1, float32, Expr.of(o) + 1, ())
    return ir.Kernel(f"shifted_{n}_{src_size}_{out_size}", bufs, (), (o,), (ir.Store(0, Expr.of(o), value),))


def run(kernel: ir.Kernel, out: np.ndarray, src: np.ndarray) -> None:
    program, _ = compile_kernel(kernel)
    program([out.ctypes.data, src.ctypes.data], [])


def test_a_load_outside_its_buffer_is_caught_and_not_made(checked):
    src, out = np.arange(6, dtype=np.float32), np.zeros(8, np.float32)
    with pytest.raises(OutOfBounds, match=r"kernel shifted_8_6_8: a load from b1 \(f32\[6\]\) at index 6 "):
        run(shifted_copy(8, 6, 8), out, src)
    assert out[:5].tolist() == [1, 2, 3, 4, 5], "the accesses inside the buffers are made"


def test_a_store_outside_its_buffer_is_caught_and_not_made(checked):
    # the output's memory has two more elements than the kernel is told: they must keep their sentinel
    src, out = np.arange(9, dtype=np.float32), np.full(8, SENTINEL, np.float32)
    with pytest.raises(OutOfBounds, match=r"a store to b0 \(f32\[6\]\) at index 6") as caught:
        run(shifted_copy(8, 9, 6), out, src)
    assert (caught.value.buffer, caught.value.store, caught.value.index) == (0, True, 6)
    assert out.tolist() == [1, 2, 3, 4, 5, 6, SENTINEL, SENTINEL]


def test_unchecked_kernels_are_untouched_and_cached_apart(monkeypatch):
    kernel = shifted_copy(10, 11, 8)
    monkeypatch.setattr(bounds, "CHECK", False)
    plain, _ = compile_kernel(kernel)
    monkeypatch.setattr(bounds, "CHECK", True)
    guarded, compiled = compile_kernel(kernel)
    assert compiled and guarded is not plain and guarded.checked and not plain.checked
    assert "lt_fault" not in plain.llvm_ir and "lt_fault" in guarded.llvm_ir
    src, out = np.arange(11, dtype=np.float32), np.full(10, SENTINEL, np.float32)
    plain([out.ctypes.data, src.ctypes.data], [])  # the memory is there: unchecked, the fault goes unseen
    assert out.tolist() == list(range(1, 11))


def test_a_fault_in_a_threaded_launch_is_reported(checked, monkeypatch):
    monkeypatch.setenv("LT_NUM_THREADS", "2")
    monkeypatch.setattr(runtime, "PARALLEL_MIN_WORK", 1)
    n = 1000
    src, out = np.arange(n, dtype=np.float32), np.full(n + 1, SENTINEL, np.float32)
    with pytest.raises(OutOfBounds, match=f"at index {n - 1}"):
        run(shifted_copy(n, n + 1, n - 1), out, src)
    assert out[n - 1:].tolist() == [SENTINEL, SENTINEL]


def test_a_masked_load_reads_nothing_of_an_empty_buffer(checked):
    """Padding an empty tensor loads nothing: the masked loads are not faults."""
    o = Var("o0", 4)
    bufs = (ir.BufferParam(float32, 4, True), ir.BufferParam(float32, 0))
    value = ir.load(1, float32, Expr.of(o) - 2, (Bound(Expr.of(o) - 2, 0, 0),))
    kernel = ir.Kernel("pad_empty", bufs, (), (o,), (ir.Store(0, Expr.of(o), value),))
    out = np.full(4, SENTINEL, np.float32)
    run(kernel, out, np.zeros(0, np.float32))
    assert out.tolist() == [0, 0, 0, 0]


def contraction(m: int, k: int, n: int) -> ir.Contraction:
    x = lt.asarray(data((m, k)), device="cpu")
    y = lt.asarray(data((k, n), seed=2), device="cpu")
    (item,) = lt.schedule(x @ y)
    assert isinstance(item.kernel, ir.Contraction)
    return item.kernel


def shorten(c: ir.Contraction, slot: int, by: int) -> ir.Contraction:
    """`c` with buffer `slot` declared `by` elements shorter (and a name of its own)."""
    buffers = list(c.buffers)
    buffers[slot] = dataclasses.replace(buffers[slot], size=buffers[slot].size - by)
    return dataclasses.replace(c, name=f"{c.name}_short{slot}", buffers=tuple(buffers))


@pytest.mark.parametrize("m,k,n", [(37, 129, 70), (48, 64, 64)], ids=str)
def test_the_contraction_template_checks_its_product_and_operands(checked, m, k, n):
    """The micro-kernel's tiles (full ones, and edge ones) and the packing kernels: a product or an operand
    one row shorter than the contraction reads or writes is caught, and nothing past it is written."""
    a, b = data((m, k)), data((k, n), seed=2)
    c = contraction(m, k, n)
    program, _ = compile_kernel(shorten(c, 0, n))
    out = np.full((m + 1) * n, SENTINEL, np.float32)
    with pytest.raises(OutOfBounds, match=f"a store to b0 \\(f32\\[{(m - 1) * n}\\]\\)"):
        program([out.ctypes.data, a.ctypes.data, b.ctypes.data], [])
    assert (out[(m - 1) * n:] == SENTINEL).all()
    program, _ = compile_kernel(shorten(c, 1, k))  # A, read by the packing kernel
    with pytest.raises(OutOfBounds, match=f"a load from b1 \\(f32\\[{(m - 1) * k}\\]\\)"):
        program([out.ctypes.data, a.ctypes.data, b.ctypes.data], [])
    program, _ = compile_kernel(c)
    program([out.ctypes.data, a.ctypes.data, b.ctypes.data], [])
    np.testing.assert_array_equal(out[:m * n].reshape(m, n), torch.tensor(a) @ torch.tensor(b))


def faulty_schedule(monkeypatch, position: int) -> None:
    """Make the scheduler declare the first input of its `position`th kernel one element shorter."""
    plan = realize.plan

    def shortened(*nodes):
        planned = plan(*nodes)
        items = planned.made = planned.schedule()  # as if just made: launched from this schedule
        item = items[position]
        k = item.kernel
        bufs = list(k.buffers)
        slot = len(item.outputs)
        bufs[slot] = dataclasses.replace(bufs[slot], size=bufs[slot].size - 1)
        item.kernel = ir.Kernel(f"{k.name}_short", tuple(bufs), k.params, k.loops, k.stores)
        return planned

    monkeypatch.setattr(realize, "plan", shortened)


@pytest.mark.parametrize("position", [0, 1])
def test_a_realize_names_the_line_of_the_faulty_kernel(checked, monkeypatch, position):
    x = lt.asarray(data((40, 30)), device="cpu")
    total = x.sum(axis=0)        # the first kernel
    shifted = x * 2 - total      # the second, reading x and the first's result
    faulty_schedule(monkeypatch, position)
    origin = (total, shifted)[position].node.origin
    with pytest.raises(lt.KernelError, match="out of bounds.*a load from b1") as caught:
        shifted.realize()
    assert f"the kernel for the op at {origin} " in str(caught.value) and "test_bounds.py" in origin
    assert isinstance(caught.value.__cause__, OutOfBounds)
    monkeypatch.undo()
    tx = torch.tensor(data((40, 30)))
    check(shifted, tx * 2 - tx.sum(0))
