"""The contraction template (`lowering` finds contractions, `kernels/llvm/gemm.py` runs them) against torch.

Sizes are big enough for the template and odd on purpose: partial tiles at the row and column edges,
k not a multiple of the k block or of the unrolling. float32 data is quantized to multiples of 1/8 as in
test_contraction, so every summation order gives the same answer and float32 keeps its full tolerance.
Correctness tests run on the default device; tests of what the CPU scheduler builds pin `device="cpu"`.
"""
from __future__ import annotations

import os
import platform
import re
import subprocess
import sys

import numpy as np
import pytest
import torch
from fuzz import modes
from test_contraction import data

import lazytensor as lt
from conftest import LAYOUTS, check, layout, to_torch_dtype
from lazytensor.kernels import bounds
from lazytensor.kernels.ir import Contraction, Kernel
from lazytensor.kernels.llvm import compile_kernel, compiler, gemm, runtime

SHAPES = [((37, 129), (129, 70)), ((12, 256), (256, 32)), ((100, 513), (513, 33)), ((5, 300), (300, 400)),
          ((130, 40), (40, 17))]


@pytest.fixture(autouse=True, params=["unchecked", "checked"])
def checking(request, monkeypatch):
    """Every test runs on unchecked kernels and on checked ones (LT_CHECK_BOUNDS): there a load or a store
    outside its buffer (a packing kernel past its panels, the micro-kernel past the product) fails the test
    instead of corrupting memory. Tests of the generated code take unchecked kernels only. Each product runs
    its own program, made for its sizes: not one that a product of its structure at other sizes, earlier in the
    process, compiled generic over them (`kernels/symbolic.py`; those are tested in test_symbolic)."""
    monkeypatch.setattr(bounds, "CHECK", request.param == "checked")
    monkeypatch.setenv("LT_SYMBOLIC", "0")


unchecked_only = pytest.mark.parametrize("checking", ["unchecked"], indirect=True)


def operands(a_shape, b_shape, dtype=lt.float32, kinds=("contiguous", "contiguous")):
    (x, t), (y, u) = layout(data(a_shape, dtype, 1), kinds[0]), layout(data(b_shape, dtype, 2), kinds[1])
    return x, y, t, u


def kinds_of(x: lt.Tensor, y: lt.Tensor) -> list[str]:
    return [type(item.kernel).__name__ for item in lt.schedule(x, y)]


@pytest.fixture
def k_blocks(monkeypatch):
    """Pins the k per block (`gemm.KC_TARGET`) for the kernels compiled after: those of the tests' sizes then
    run several blocks of k, each storing the product's tiles and reading them back for the next."""
    def pin(kc: int) -> None:
        monkeypatch.setattr(gemm, "KC_TARGET", kc)
        monkeypatch.setattr(runtime, "_programs", {})
        monkeypatch.setattr(sys.modules["lazytensor.schedule"], "_cache", {})
        monkeypatch.setattr(sys.modules["lazytensor.schedule"], "_templates", {})
    return pin


@pytest.mark.parametrize("kc", [gemm.KC_TARGET, 64])
@pytest.mark.parametrize("dtype", [lt.float32, lt.float64], ids=str)
@pytest.mark.parametrize("shapes", SHAPES, ids=str)
def test_matmul_odd_sizes(k_blocks, shapes, dtype, kc):
    k_blocks(kc)
    x, y, t, u = operands(*shapes, dtype)
    check(x @ y, t @ u)
    check((x @ y).relu(), torch.relu(t @ u))


@pytest.mark.parametrize("lhs", LAYOUTS)
@pytest.mark.parametrize("rhs", LAYOUTS)
def test_matmul_non_contiguous(lhs, rhs):
    x, y, t, u = operands((45, 300), (300, 50), kinds=(lhs, rhs))
    check(x @ y, t @ u)


@pytest.mark.parametrize("a_shape,b_shape", [((3, 40, 64), (3, 64, 48)), ((2, 1, 20, 50), (4, 50, 33)),
                                             ((6, 30, 70), (70, 40)), ((70,), (3, 70, 64))], ids=str)
def test_batched_and_broadcast(a_shape, b_shape):
    x, y, t, u = operands(a_shape, b_shape)
    check(x @ y, t @ u)


def test_epilogue_bias_activation_and_transpose():
    x, y, t, u = operands((64, 96), (96, 80))
    bias, tb = layout(data((80,), seed=3), "contiguous")
    check(((x @ y) + bias).relu(), torch.relu(t @ u + tb))
    check(((x @ y) * 0.5).T, (t @ u * 0.5).T)
    check((x @ y).sum(axis=0), (t @ u).sum(0))


def test_prologue_cast_and_scale():
    x, y, t, u = operands((50, 70), (70, 60))
    xi = (x * 8).cast(lt.int32)
    check(xi.cast(lt.float32) * 0.125 @ (y * 2), (t * 8).to(torch.int32).float() * 0.125 @ (u * 2))


def test_tensordot_and_chain():
    x, y, t, u = operands((4, 5, 6, 7), (6, 7, 8, 9), lt.float64)
    check(x.tensordot(y, 2), torch.tensordot(t, u, 2))
    a, b, ta, tb = operands((40, 60), (60, 50), lt.float64)
    check(a @ b @ b.T, ta @ tb @ tb.T)


def test_linear_layer_gradients():
    x, w, tx, tw = operands((64, 96), (80, 96))
    w.requires_grad = True
    tw.requires_grad_(True)
    ((x @ w.T).relu() ** 2).sum().backward()
    ((tx @ tw.T).relu() ** 2).sum().backward()
    check(w.grad, tw.grad)


def test_cpu_schedule_uses_the_template():
    x, y, _, _ = operands((64, 96), (96, 80))
    x, y = x.to("cpu"), y.to("cpu")
    bias = lt.ones(80, device="cpu")
    assert kinds_of(x @ y, x @ y) == ["Contraction"]
    items = lt.schedule(((x @ y) + bias).relu())
    assert len(items) == 1 and isinstance(items[0].kernel, Contraction) and items[0].kernel.epilogue is not None
    plain = lt.schedule(x @ y)[0].kernel
    assert plain.epilogue is None and plain.product == 0, "a bare matmul writes its output directly"
    # the inner product of a chain is its own kernel: the template packs realized operands only
    assert kinds_of(x @ y @ y.T, x) == ["Contraction", "Contraction"]


@pytest.mark.parametrize("dtype", [lt.float32, lt.float64], ids=str)
def test_a_batch_of_small_products_is_one_contraction(dtype):
    """Attention's per-head products (here 16 x 4 heads of 32x32 scores over a head width of 16, causal, and
    the weights times the values) are each too small for the template alone, but their batch is not: each
    is one template kernel, with the heads as its batch, whose results match torch."""
    q, k, v = (lt.asarray(data((16, 4, 32, 16), dtype, seed=i), device="cpu") for i in range(3))
    scores = q @ k.mT
    items = lt.schedule(scores)
    assert [type(item.kernel) for item in items] == [Contraction] and items[0].kernel.sizes[0] == 64
    tq, tk, tv = (torch.tensor(t.numpy()) for t in (q, k, v))
    check(scores, tq @ tk.mT)
    out = lt.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
    assert sum(isinstance(item.kernel, Contraction) for item in lt.schedule(out)) == 2
    check(out, torch.nn.functional.scaled_dot_product_attention(tq, tk, tv, is_causal=True))


def test_weight_gradient_is_a_contraction():
    x = lt.asarray(data((256, 96)), device="cpu")
    w = lt.asarray(data((80, 96)), device="cpu")
    w.requires_grad = True
    (x @ w.T).relu().sum().backward()
    forward, gradient = lt.schedule(w.grad)  # the relu's mask needs the forward product
    assert isinstance(forward.kernel, Contraction) and isinstance(gradient.kernel, Contraction)
    assert gradient.kernel.sizes[3] == 256, "the gradient sums over the batch"
    assert gradient.kernel.epilogue is None, "the transpose of x.T @ g leaves every element in place"


@pytest.mark.parametrize("dtype", [lt.float32, lt.float64], ids=str)
@pytest.mark.parametrize("case", [((4, 16, 20, 20), (24, 16, 3, 3), 2, 1), ((3, 8, 30, 17), (40, 8, 3, 3), 2, 0),
                                  ((2, 12, 18, 18), (32, 6, 3, 3), 2, 1)], ids=str)
def test_convolution_product_is_its_result(case, dtype):
    """A strided conv2d's contraction takes the images as its batch and the output channels as its rows: its
    product is laid out (N, C, OH, OW) like the result, with no transposing epilogue; with groups and padding (a
    copy of the padded images, one kernel before it, whose windows the packing reads with no mask)."""
    x_shape, w_shape, stride, padding = case
    groups = x_shape[1] // w_shape[1]
    x, w = (lt.asarray(data(s, dtype, seed=i), device="cpu") for i, s in enumerate((x_shape, w_shape)))
    out = lt.nn.functional.conv2d(x, w, stride=stride, padding=padding, groups=groups)
    *padded, item = lt.schedule(out)
    assert len(padded) == (padding > 0) and isinstance(item.kernel, Contraction) and item.kernel.epilogue is None
    assert "valid" not in str(item.kernel), "the windows of the padded copy are read with no mask"
    assert item.kernel.sizes[0] == x_shape[0] * groups and item.kernel.sizes[1] == w_shape[0] // groups
    want = torch.nn.functional.conv2d(torch.tensor(x.numpy()), torch.tensor(w.numpy()), stride=stride,
                                      padding=padding, groups=groups)
    check(out, want)


@pytest.mark.parametrize("view", ["transpose", "reshape", "slice"])
def test_views_of_the_product_that_move_elements_keep_an_epilogue(view):
    x, y, t, u = operands((40, 64), (64, 48))
    x, y = x.to("cpu"), y.to("cpu")
    got, want = {"transpose": ((x @ y).T, (t @ u).T),
                 "reshape": ((x @ y).reshape(48, 40).T, (t @ u).reshape(48, 40).T),
                 "slice": ((x @ y)[:, 1:], (t @ u)[:, 1:])}[view]
    assert lt.schedule(got)[0].kernel.epilogue is not None
    check(got, want)
    same = (x @ y).reshape(40, 6, 8).reshape(40, 48)
    assert lt.schedule(same)[0].kernel.epilogue is None
    check(same, t @ u)


@pytest.fixture
def threaded(monkeypatch):
    """Two threads even for the smallest stage, so every launch goes through the pool's chunks."""
    monkeypatch.setenv("LT_NUM_THREADS", "2")
    monkeypatch.setattr(runtime, "PARALLEL_MIN_WORK", 1)


@pytest.mark.parametrize("shapes", SHAPES + [((3, 40, 64), (3, 64, 48)), ((2, 1, 20, 50), (4, 50, 33))], ids=str)
@pytest.mark.parametrize("kinds", [("contiguous", "contiguous"), ("transposed", "strided"), ("flipped", "transposed")])
def test_threaded_stages(threaded, shapes, kinds):
    x, y, t, u = operands(*shapes, kinds=kinds)
    check(x @ y, t @ u)
    check(((x @ y) * 2).relu(), torch.relu(t @ u * 2))


@pytest.mark.parametrize("threads", [1, 2, 3])
@pytest.mark.parametrize("dtype", [lt.float32, lt.float64], ids=str)
@pytest.mark.parametrize("shapes", [((40, 96), (96, 700)), ((700, 96), (96, 40)), ((176, 64), (64, 300)),
                                    ((2, 90, 50), (2, 50, 260))], ids=str)
def test_tasks_cut_products_to_read_the_panels_least(monkeypatch, threads, shapes, dtype):
    """The GEMM's tasks cut a product into blocks of rows and of columns so that its panels are read the
    fewest times: a product of few rows and many columns (a linear layer's `x @ w`) by columns, for each
    block of rows reads all of B; one of many rows and few columns by rows; blocks of rows of equal size.
    Values checked on one thread and shared out (the layout is chosen when the kernel compiles)."""
    monkeypatch.setenv("LT_NUM_THREADS", str(threads))
    monkeypatch.setattr(runtime, "PARALLEL_MIN_WORK", 1)
    monkeypatch.setattr(runtime, "_programs", {})
    x, y, t, u = operands(*shapes, dtype, kinds=("contiguous", "transposed"))
    kernel = lt.schedule(x.to("cpu") @ y.to("cpu"))[0].kernel
    layout = gemm.Layout.choose(kernel, threads)
    (batch, m, n, _), (mp, np_) = kernel.sizes, layout.panels(kernel)
    row_blocks, col_blocks = -(-mp // layout.row_panels), -(-np_ // layout.col_panels)
    assert layout.row_panels == -(-mp // row_blocks)  # equal blocks, but for the last
    # enough tasks to share out: three quarters of the aim, which blocks of equal size cannot always make
    assert 4 * batch * row_blocks * col_blocks >= 3 * min(gemm.TASKS_PER_THREAD * threads, batch * mp * np_)
    cut = {"rows": row_blocks > 1, "columns": col_blocks > 1}
    if threads > 1 and batch == 1:
        assert not cut["rows"] if n > 4 * m else not cut["columns"] if m > 4 * n else True
    check(x @ y, t @ u)
    check((x @ y).relu(), torch.relu(t @ u))


@pytest.mark.parametrize("rows", [64, 36, 20, 16, 100])
def test_tiles_pad_the_rows_least(rows):
    """With AVX-512, tiles are 8 or 12 rows high, whichever pads the product's rows less (8 where both pad
    alike): 64 output channels take tiles of 8, not 72 rows of 12; 36 take 12."""
    x, y, t, u = operands((rows, 80), (80, 96))
    layout = gemm.Layout.choose(lt.schedule(x.to("cpu") @ y.to("cpu"))[0].kernel, 2)
    if layout.lanes * 32 == 512:
        assert layout.mr == min((8, 12), key=lambda r: -(-rows // r) * r)
    check(x @ y, t @ u)


@pytest.mark.parametrize("shapes", [((3, 4), (4, 5)), ((1000,), (1000,)), ((100, 1000), (1000,))], ids=str)
def test_small_and_vector_products_stay_loops(shapes):
    x, y = (lt.asarray(data(s), device="cpu") for s in shapes)
    assert all(isinstance(item.kernel, Kernel) for item in lt.schedule(x @ y))


def test_integer_matmul_is_exact_without_the_template():
    x, y, t, u = operands((40, 50), (50, 60), lt.int64)
    check(x @ y, t @ u)
    assert isinstance(lt.schedule(x.to("cpu") @ y.to("cpu"))[0].kernel, Kernel)


@pytest.mark.skipif(platform.machine() != "x86_64", reason="checks x86-64 FMA instructions")
@unchecked_only
def test_micro_kernel_is_vector_fma():
    x, y = lt.asarray(data((64, 96)), device="cpu"), lt.asarray(data((96, 80)), device="cpu")
    program, _ = compile_kernel(lt.schedule(x @ y)[0].kernel)
    asm = program.gemm.assembly
    fmas = [line for line in asm.splitlines() if "vfmadd" in line and "ps" in line.split()[0]]
    register = "zmm" if any("zmm" in line for line in asm.splitlines()) else "ymm"
    assert len(fmas) >= 2 * program.layout.mr and all(register in line for line in fmas)


def test_print_schedule_names_the_operands():
    x, y = lt.asarray(np.ones((64, 96), np.float32), device="cpu"), lt.asarray(np.ones((96, 80), np.float32), device="cpu")
    text = str(lt.schedule((x @ y).relu()))
    assert "contraction contract_1x64x80x96_" in text and "epilogue" in text and "max" in text
    assert np.array_equal((x @ y).relu().numpy(), np.full((64, 80), 96, np.float32))


# Packing: every transposition of each operand, with sizes that leave partial row panels (m % 12), column
# panels (n % 32) and k blocks (k % 16, and k below one block) in the packing loops.
PACK_SHAPES = [((45, 300), (300, 50)), ((37, 9), (9, 70)), ((130, 40), (40, 17)), ((12, 257), (257, 64))]


@pytest.mark.parametrize("shapes", PACK_SHAPES, ids=str)
@pytest.mark.parametrize("trans_a", [False, True])
@pytest.mark.parametrize("trans_b", [False, True])
def test_packing_every_transposition(shapes, trans_a, trans_b):
    kinds = ("transposed" if trans_a else "contiguous", "transposed" if trans_b else "contiguous")
    x, y, t, u = operands(*shapes, kinds=kinds)
    check(x @ y, t @ u)


@pytest.mark.parametrize("kinds", [("contiguous", "transposed"), ("transposed", "contiguous"), ("transposed", "transposed")])
def test_packing_batched_broadcast_transposed(kinds):
    # "transposed" reverses every axis of a 3-d operand: its memory runs along the batch
    (x, t), (y, u) = layout(data((3, 70, 40), seed=1), kinds[0]), layout(data((40, 45), seed=2), kinds[1])
    check(x @ y, t @ u)
    swapped, tswapped = layout(data((3, 40, 70), seed=3), "contiguous")
    check(swapped.transpose(0, 2, 1) @ y, tswapped.permute(0, 2, 1) @ u)


@pytest.mark.parametrize("dtype", [lt.float16, lt.bfloat16], ids=str)
@pytest.mark.parametrize("kinds", [("contiguous", "contiguous"), ("transposed", "transposed"),
                                   ("contiguous", "transposed")])
def test_packing_widens_16_bit_operands(dtype, kinds):
    x, y, t, u = operands((45, 100), (100, 50), kinds=kinds)  # multiples of 1/8: exact in 16 bits
    half = to_torch_dtype(dtype)
    check(x.cast(dtype) @ y.cast(dtype), t.to(half) @ u.to(half))


@pytest.mark.parametrize("kinds", [("transposed", "transposed"), ("strided", "flipped")])
def test_packing_prologue_and_epilogue_on_any_layout(kinds):
    x, y, t, u = operands((50, 70), (70, 60), kinds=kinds)
    bias, tb = layout(data((60,), seed=3), "contiguous")
    xi = (x * 8).cast(lt.int32)
    got = ((xi.cast(lt.float32) * 0.125 @ (y * 2).T.T) + bias).relu()
    check(got, torch.relu((t * 8).to(torch.int32).float() * 0.125 @ (u * 2) + tb))


@unchecked_only
def test_packing_kernels_stream():
    """Panels are written through affine addresses (no division per element) and never scattered; an operand
    contiguous along its panels' rows is copied in whole vectors, and one that is transposed into them (B of
    `x @ w.T`) without gathers, slower than copying element by element."""
    x, y = lt.asarray(data((64, 96)), device="cpu"), lt.asarray(data((96, 80)), device="cpu")
    xt, yt = lt.asarray(data((96, 64)), device="cpu").T, lt.asarray(data((80, 96)), device="cpu").T
    for a, b in ((x, y), (xt, yt), (x, yt), (xt, y)):
        program, _ = compile_kernel(lt.schedule(a @ b)[0].kernel)
        for pack in program.stages[:2]:
            assert not re.search(r"= [us](div|rem) ", pack.optimized_ir) and "scatter" not in pack.optimized_ir
    pack_b = compile_kernel(lt.schedule(x @ y)[0].kernel)[0].stages[1].optimized_ir
    assert re.search(r"load <\d+ x float>", pack_b) and re.search(r"store <\d+ x float>", pack_b), pack_b
    assert "llvm.masked.gather" not in pack_b
    transposing = compile_kernel(lt.schedule(x @ yt)[0].kernel)[0].stages[1].optimized_ir
    # read element by element (how the stores are then formed, scalar or vectors built from the elements, is the
    # host's choice: Zen 4 stores scalars, Zen 3 vectors)
    assert "llvm.masked.gather" not in transposing and "load float" in transposing


@unchecked_only
def test_packing_kernels_keep_their_machines_features():
    """A packing kernel's features (gathers not preferred) are otherwise those of the machine it compiles on:
    the wide one's where it computes math functions (A of `sin(x) @ y`), the plain one's where it copies."""
    x, y = lt.asarray(data((64, 96)), device="cpu"), lt.asarray(data((96, 80)), device="cpu")
    pack_a, pack_b = compile_kernel(lt.schedule(x.sin() @ y)[0].kernel)[0].stages[:2]
    assert f'"target-features"="{compiler.features(True)},+prefer-no-gather"' in pack_a.llvm_ir
    assert f'"target-features"="{compiler.features(False)},+prefer-no-gather"' in pack_b.llvm_ir


@unchecked_only
def test_packing_a_weight_gradient_copies_lanes():
    """A linear layer's weight gradient through a ReLU, `where(h > 0, g, 0).T @ x`: A runs along its 12
    lanes in memory. LLVM unrolls the lane loop; the loop over k around it must not then be vectorized
    with gathers and scatters across rows (the packing kernels' outer loops are marked so)."""
    shapes = [(130, 70), (130, 70), (130, 50)]
    g, h, x = (lt.asarray(data(s, seed=i), device="cpu") for i, s in enumerate(shapes))
    tg, th, tx = (torch.tensor(v.numpy()) for v in (g, h, x))
    def masked() -> lt.Tensor:  # a fresh mask each time, held by no variable: it fuses into the packing
        return lt.where(h > 0, g, 0.0)

    tmasked = torch.where(th > 0, tg, 0.0)
    for got, want in ((masked().T @ x, tmasked.T @ tx), (x.T @ masked(), tx.T @ tmasked)):
        program, _ = compile_kernel(lt.schedule(got)[0].kernel)
        for pack in program.stages[:2]:
            assert "llvm.masked.gather" not in pack.optimized_ir and "scatter" not in pack.optimized_ir
        check(got, want)


@pytest.mark.parametrize("dtype", [lt.float32, lt.float64], ids=str)
@pytest.mark.parametrize("shapes", [((37, 129), (129, 70)), ((12, 301), (301, 40)), ((100, 514), (514, 33)),
                                    ((3, 40, 9), (3, 9, 480)), ((2, 1, 20, 50), (4, 50, 33))], ids=str)
@pytest.mark.parametrize("rhs", LAYOUTS)
def test_packing_a_in_runs_of_its_rows(k_blocks, shapes, dtype, rhs):
    """A left operand that runs along k in memory is packed in runs of `Layout.a_run` k's of each row: k not a multiple
    of the run nor of the k block (in blocks of at most 256, 301 takes blocks of 152, rounded up to whole
    runs; 514 of 172), fewer k's than a tile of packing (9), batched and broadcast, and a slice of wider rows;
    checked kernels keep every access inside the panels."""
    k_blocks(256)
    x, y, t, u = operands(*shapes, dtype, kinds=("contiguous", rhs))
    wide = lt.asarray(data((*shapes[0][:-1], shapes[0][-1] + 7), dtype, 3))
    sliced = wide[..., 5:5 + shapes[0][-1]]
    for a, ta in ((x, t), (sliced, torch.tensor(sliced.numpy()))):
        program, _ = compile_kernel(lt.schedule(a.to("cpu") @ y.to("cpu"))[0].kernel)
        assert program.layout.a_rows and program.layout.kc % program.layout.a_run == 0
        check(a @ y, ta @ u)
        check((a @ y * 2).relu(), torch.relu(ta @ u * 2))


@unchecked_only
def test_packing_a_softmax_copies_runs_of_its_rows():
    """Attention's second product, `softmax(s) @ v`: A runs along k in s, and reads its rows' max and sum,
    which are the same for every k; A is packed in runs of its rows, each run one vector's lanes, so its exps
    are computed as whole vectors, with no gathers nor scatters. A plain product's runs stay UNROLL_K long."""
    s, v = lt.asarray(data((2, 64, 100)), device="cpu"), lt.asarray(data((2, 100, 40), seed=2), device="cpu")
    out = s.softmax(-1) @ v
    contraction = next(item.kernel for item in lt.schedule(out) if isinstance(item.kernel, Contraction))
    program, _ = compile_kernel(contraction)
    layout = program.layout
    assert layout.a_rows and layout.a_run == layout.lanes and layout.kc % layout.lanes == 0
    pack_a = program.stages[0].optimized_ir
    assert "llvm.masked.gather" not in pack_a and "scatter" not in pack_a
    assert re.search(rf"store <{layout.lanes} x float>", pack_a)
    check(out, torch.softmax(torch.tensor(s.numpy()), -1) @ torch.tensor(v.numpy()))
    plain, _ = compile_kernel(lt.schedule(s @ v)[0].kernel)
    assert plain.layout.a_rows and plain.layout.a_run == gemm.UNROLL_K


def test_packing_a_along_its_lanes_keeps_runs_of_k():
    """`x.T @ w` of a row-major x: A runs along its lanes in memory, its panels hold k's one after another."""
    x, y, t, u = operands((129, 37), (129, 70), kinds=("contiguous", "contiguous"))
    program, _ = compile_kernel(lt.schedule(x.to("cpu").T @ y.to("cpu"))[0].kernel)
    assert not program.layout.a_rows
    check(x.T @ y, t.T @ u)


@pytest.mark.parametrize("threads", ["1", "2"])
@pytest.mark.parametrize("dtype", [lt.float32, lt.float64], ids=str)
@pytest.mark.parametrize("shapes", [((16, 37, 129), (16, 129, 70)), ((9, 128, 128), (9, 128, 128)),
                                    ((8, 64, 33), (8, 33, 40)), ((5, 0, 40), (5, 40, 20))], ids=str)
def test_batched_tasks_pack_their_own_products(monkeypatch, threads, shapes, dtype):
    """A batch of products, each one task of the GEMM step: the task packs its own product's panels (no
    packing phase before the tasks), on one thread or shared out; a size-0 product runs no task. Every
    batch gives each of the threads its TASKS_PER_THREAD products (a smaller one has its products split
    into several tasks). The layout is chosen for the threads when the kernel compiles: compiled here."""
    assert gemm.TASKS_PER_THREAD * 2 <= 8
    monkeypatch.setenv("LT_NUM_THREADS", threads)
    monkeypatch.setattr(runtime, "PARALLEL_MIN_WORK", 1)
    monkeypatch.setattr(runtime, "_programs", {})
    x, y, t, u = operands(*shapes, dtype, kinds=("contiguous", "transposed"))
    items = lt.schedule(x.to("cpu") @ y.to("cpu"))
    if items and isinstance(items[0].kernel, Contraction):
        program, _ = compile_kernel(items[0].kernel)
        assert program.layout.fused and len(program.phases()) == 1
    check(x @ y, t @ u)
    check((x @ y).exp(), (t @ u).exp())


@pytest.mark.parametrize("threads", ["1", "2"])
@pytest.mark.parametrize("kc", [gemm.KC_TARGET, 64])
@pytest.mark.parametrize("dtype", [lt.float32, lt.float64], ids=str)
@pytest.mark.parametrize("rows", range(1, 10))
def test_products_of_few_rows_read_b_in_place(monkeypatch, k_blocks, threads, kc, rows, dtype):
    """A product of B_IN_PLACE_ROW_PANELS panels of rows or fewer (`x @ w` of a few rows) reads B where it lies
    where B is a plain load whose rows run along n in whole panels: its B packing stage stores nothing, and the
    core steps from one k to the next by the row length of w's buffer (a view's, rows further apart and not
    from the buffer's start, too). B transposed, n not a whole number of panels, or more rows: B packed. Values
    against torch on one thread and shared out, over one block of k and several, with an epilogue, batched."""
    monkeypatch.setenv("LT_NUM_THREADS", threads)
    monkeypatch.setattr(runtime, "PARALLEL_MIN_WORK", 1)
    k_blocks(kc)
    def cpu(arr: np.ndarray) -> tuple[lt.Tensor, torch.Tensor]:  # what the CPU scheduler builds is asserted
        return lt.asarray(arr, device="cpu"), torch.from_numpy(np.ascontiguousarray(arr))

    x, t = cpu(data((rows, 300), dtype, 1))
    base = data((301, 150), dtype, 2)
    for columns, whole in ((slice(8, 72), True), (slice(0, 70), False)):  # views of rows 150 elements apart
        w, u = lt.asarray(base, device="cpu")[1:, columns], torch.from_numpy(np.ascontiguousarray(base[1:, columns]))
        wt, ut = lt.asarray(np.ascontiguousarray(base[1:, columns].T), device="cpu").T, u  # B transposed in memory
        bias, bias_t = cpu(data((u.shape[1],), dtype, 3))
        for got, expected, b_row in ((x @ w, t @ u, 150), (x @ wt, t @ ut, 0)):
            items = lt.schedule(got)
            if isinstance(items[0].kernel, Contraction):
                program, _ = compile_kernel(items[0].kernel)
                lay = program.layout
                in_place = whole and -(-rows // lay.mr) <= gemm.B_IN_PLACE_ROW_PANELS and b_row
                assert lay.b_row == (b_row if in_place else 0)
                assert (program.stages[1].kernel.stores == ()) == bool(in_place)
            check(got, expected)
        check((x @ w + bias).relu(), torch.relu(t @ u + bias_t))
        xb, tb = cpu(data((3, rows, 300), dtype, 4))
        check(xb @ w, tb @ u)


def test_packing_finds_unit_stride_in_tiles_of_k():
    """k running over (N, H, W) of 4 x 4 planes laid out (N, C, H, W), as in a convolution's weight
    gradient: the index along k is `(k // 16)*plane + k % 16`, unit stride within a tile of k, so both
    operands are packed tile by tile (each lane reads a run of the tile; A's panels then hold their rows in
    order), not one k at a time across lanes 16 elements apart."""
    g = lt.asarray(data((6, 16, 4, 4)), device="cpu")
    x = lt.asarray(data((6, 45, 4, 4), seed=2), device="cpu")
    tg, tx = torch.tensor(g.numpy()), torch.tensor(x.numpy())
    product = g.permute(1, 0, 2, 3).reshape(16, 96) @ x.permute(0, 2, 3, 1).reshape(96, 45)
    program, _ = compile_kernel(lt.schedule(product)[0].kernel)
    pack_a, pack_b = ([v.name for v in pack.kernel.loops][-3:] for pack in program.stages[:2])
    assert program.layout.a_rows and pack_a == ["cm_lane", "ck_block", "ck_tile"]  # A's rows, in order
    assert pack_b[-2:] == ["cn_lane", "ck_tile"]
    check(product, tg.permute(1, 0, 2, 3).reshape(16, 96) @ tx.permute(0, 2, 3, 1).reshape(96, 45))


@pytest.mark.parametrize("dtype", [lt.float32, lt.float64], ids=str)
@pytest.mark.parametrize("case", [((2, 5, 40, 40), (20, 5, 3, 3), 1, 1), ((3, 4, 13, 20), (18, 4, 3, 3), 1, 2),
                                  ((1, 6, 23, 45), (17, 6, 5, 3), 2, 1), ((2, 8, 7, 7), (24, 8, 3, 3), 1, 1)],
                         ids=str)
def test_packing_windows_walks_rows(case, dtype):
    """A convolution's windows as unfold's view, whose lane axis is the flattened (oh, ow) (conv2d's own at a
    stride, or where its padding is wide, `nn/convolution.py`): a panel is packed row by row of ow (the panel's
    loops end with the row, k and the row's run), so no lane divides its index: rows wider than a panel, narrower
    (a panel then spans several), a last panel cut short (13 x 20 = 260 pixels), odd filters, a stride; rows of
    7, shorter than a quarter of a panel, stay flat."""
    x_shape, w_shape, stride, padding = case
    x, w = (lt.asarray(data(s, dtype, seed=i), device="cpu") for i, s in enumerate((x_shape, w_shape)))
    padded = x.pad([(0, 0), (0, 0), (padding, padding), (padding, padding)]).contiguous()
    windows = lt.nn.functional.unfold(padded, w_shape[2:], stride=stride)
    out = w.reshape(w_shape[0], -1) @ windows
    program, _ = compile_kernel(lt.schedule(out)[-1].kernel)  # after the padded images' copy
    pack_b = program.stages[1]
    width = (x_shape[3] + 2 * padding - w_shape[3]) // stride + 1  # the output's row
    rows = stride == 1 and width * 4 >= program.layout.nr
    if stride == 1:  # a stride along ow leaves unit stride only along k: packed in tiles of k instead
        loops = [v.name for v in pack_b.kernel.loops]
        assert loops[-3:] == ["cn_row", "ck", "cn_col"] if rows else loops[-2:] == ["ck", "cn_lane"]
    if rows and not bounds.CHECK:
        assert not re.search(r"= [us](div|rem) <", pack_b.optimized_ir) and "llvm.masked.gather" not in pack_b.optimized_ir
        assert re.search(r"store <\d+ x (float|double)>", pack_b.optimized_ir), pack_b.optimized_ir
    want = torch.nn.functional.conv2d(torch.tensor(x.numpy()), torch.tensor(w.numpy()), stride=stride,
                                      padding=padding)
    check(out, want.reshape(out.shape))


@pytest.mark.parametrize("dtype", [lt.float32, lt.float64], ids=str)
@pytest.mark.parametrize("case", [
    ((2, 5, 40, 40), (20, 5, 3, 3), 1, 1, 1),          # 42 columns a row for 40: a last panel past n
    ((1, 4, 13, 20), (18, 2, 3, 3), 2, (2, 1), 2),     # groups, dilation, padding wider along one axis
    ((3, 1, 9, 30), (16, 1, 2, 4), 0, 1, 1),           # one channel in, no padding, even filters
], ids=str)
def test_convolution_reads_rows_of_padded_images(case, dtype):
    """A stride-1 conv2d is an implicit GEMM (`nn/convolution.py`, `_conv_of_rows`):
    its windows are runs of its padded images' rows, the product's B read where it lies, by a table of each k's row
    (`Layout.b_taps`), with no packing of B; its product has the padding's columns of each row, which the epilogue
    drops. Its input and weight gradients against torch too."""
    x_shape, w_shape, padding, dilation, groups = case
    conv, tconv = lt.nn.functional.conv2d, torch.nn.functional.conv2d
    x, w = (lt.asarray(data(s, dtype, seed=i), device="cpu") for i, s in enumerate((x_shape, w_shape)))
    out = conv(x, w, padding=padding, dilation=dilation, groups=groups)
    item = lt.schedule(out)[-1]
    program, _ = compile_kernel(item.kernel)
    assert program.layout.b_taps and program.layout.packed_buffers(item.kernel)[1].size == 0
    assert item.kernel.epilogue is not None and item.kernel.sizes[2] > np.prod(out.shape[2:])
    tx, tw = (torch.tensor(a.numpy(), requires_grad=True) for a in (x, w))
    want = tconv(tx, tw, padding=padding, dilation=dilation, groups=groups)
    check(out, want.detach())
    x.requires_grad_(), w.requires_grad_()
    up = data(tuple(want.shape), dtype, seed=7)
    conv(x, w, padding=padding, dilation=dilation, groups=groups).backward(lt.asarray(up, device="cpu"))
    want.backward(torch.tensor(up))
    check(x.grad, tx.grad)
    check(w.grad, tw.grad)


def test_rows_that_do_not_overlap_are_packed():
    """B's rows found by divisions along k but no two of them overlapping (a product by a permuted reshape, rows
    768 elements apart) are packed, contiguous, not read in place as a convolution's windows are (`gemm._b_taps`)."""
    a, b = (lt.asarray(data(s, seed=i), device="cpu") for i, s in enumerate(((40, 64), (4, 16, 48))))
    got = a @ b.permute(1, 0, 2).reshape(64, 48)
    c = lt.schedule(got)[-1].kernel
    assert "//" in str(c.bv.arg[1]) and not gemm.Layout.choose(c, 1).b_taps
    check(got, torch.tensor(a.numpy()) @ torch.tensor(b.numpy()).permute(1, 0, 2).reshape(64, 48))


@pytest.mark.parametrize("kind", LAYOUTS[1:])
def test_packing_windows_of_non_contiguous_images(kind):
    """The windows of a transposed, strided or flipped batch of images, packed row by row."""
    x, tx = layout(data((2, 5, 30, 24)), kind)
    w = lt.asarray(data((20, 5, 3, 3), seed=1))
    out = lt.nn.functional.conv2d(x, w, padding=1)
    check(out, torch.nn.functional.conv2d(tx, torch.tensor(w.numpy()), padding=1))


@pytest.mark.parametrize("dtype", [lt.float32, lt.float64], ids=str)
def test_packing_flattened_pairs_of_either_operand(dtype):
    """Operands whose lane axis flattens a pair of axes of a wider array (rows of 24 sliced to 20, so the
    index divides): A's rows and B's columns, each packed by rows of the pair's inner axis, batched, and one
    made by a reduction."""
    z = lt.asarray(data((3, 9, 11, 24), dtype, seed=1), device="cpu")
    y = lt.asarray(data((3, 9, 50), dtype, seed=2), device="cpu")
    tz, ty = torch.tensor(z.numpy()), torch.tensor(y.numpy())
    a = z[..., :20].reshape(3, 9, 220).permute(0, 2, 1)   # (3, 220, 9): A's rows are (11, 20) pixels
    ta = tz[..., :20].reshape(3, 9, 220).permute(0, 2, 1)
    yt, tyt = y.permute(0, 2, 1), ty.permute(0, 2, 1)
    for got, want in ((a @ y, ta @ ty), (yt @ a.permute(0, 2, 1), tyt @ ta.permute(0, 2, 1))):
        program, _ = compile_kernel(lt.schedule(got)[0].kernel)
        assert any(pack.kernel.loops[-1].name.endswith("_col") for pack in program.stages[:2])
        check(got, want)
    check((a * 2 + 1) @ y, (ta * 2 + 1) @ ty)
    # a sum over a leading axis: packed by the column path, which keeps to each row's run too
    w = lt.asarray(data((40, 9), dtype, seed=3), device="cpu")
    tw = torch.tensor(w.numpy())
    check(w @ z[..., :20].sum(0).reshape(9, 220), tw @ tz[..., :20].sum(0).reshape(9, 220))


@pytest.mark.parametrize("dtype", [lt.float32, lt.float64], ids=str)
@pytest.mark.parametrize("width", [5, 9, 13, 20])
def test_packing_rows_cut_where_a_shift_pads_them(dtype, width):
    """Pixels of channels-first images, each plus its left neighbour (a shift padded with a zero), as A's rows:
    packed row by row of the images' width, and each row's run cut where the padding starts (`pieces`) keeps to
    its part of the panel there (it ran over the whole panel's part in each piece)."""
    img = lt.asarray(data((2, 24, 7, width), dtype, seed=1), device="cpu")
    w = lt.asarray(data((24, 40), dtype, seed=2), device="cpu")
    timg, tw = torch.tensor(img.numpy()), torch.tensor(w.numpy())
    got = (img + img.pad(((0, 0), (0, 0), (0, 0), (1, 0)))[..., :width]).permute(0, 2, 3, 1).reshape(-1, 24) @ w
    shifted = torch.nn.functional.pad(timg, (1, 0))[..., :width]
    assert isinstance(lt.schedule(got)[0].kernel, Contraction)
    check(got, (timg + shifted).permute(0, 2, 3, 1).reshape(-1, 24) @ tw)


@pytest.mark.parametrize("cfg", [(1, 1, 1, 1), (2, 1, 1, 2), (3, 2, 2, 1)], ids=str)
def test_every_product_on_the_template(monkeypatch, cfg):
    """With the template's thresholds at 1, every product of a convolution's second-order gradients runs on it
    (tiny ones, one row or one column wide, sums of padded and dilated windows as operands), and gives torch's
    values: what a scheduler choice reaches there (a size that changed counts as large; here products of fewer
    than 2**16 terms, below the default threshold) is right too."""
    modes.small_products_on_the_template(monkeypatch.setattr)
    stride, padding, dilation, groups = cfg
    x, w = data((2, 4, 9, 8), lt.float64, seed=3), data((6, 4 // groups, 3, 2), lt.float64, seed=4)

    def second_order(conv, grad, a, b):
        gx, gw = grad((conv(a, b, None, stride, padding, dilation, groups) ** 2).sum(), (a, b))
        return grad((gx ** 3).sum() + (gw * gw).sum(), (a, b))

    got = second_order(lt.nn.functional.conv2d, lambda f, v: lt.autograd.gradients(f, v, create_graph=True),
                       *(lt.asarray(a, device="cpu").requires_grad_() for a in (x, w)))
    want = second_order(torch.nn.functional.conv2d, lambda f, v: torch.autograd.grad(f, v, create_graph=True),
                        *(torch.tensor(a, requires_grad=True) for a in (x, w)))
    assert any(isinstance(item.kernel, Contraction) and np.prod(item.kernel.sizes) < 1 << 16 for item in lt.schedule(*got))
    for g, t in zip(got, want):
        check(g, t.detach(), rtol=1e-10)


@unchecked_only
def test_the_last_panels_copy_is_not_vectorized(monkeypatch):
    """Attention's scores over a sequence of 19, `q @ k.T` with the keys read transposed out of one qkv buffer
    (rows 192 apart): the copy of B's last panel, 3 of its 16 lanes, is a loop of its own (`_PackRenderer.loop`),
    which LLVM vectorized through loads put together element by element, a body its code generator took most of a
    second over (the whole panels' copy, vectorized too, half that), for one panel per head. It stays a plain
    loop: the packing's optimized IR holds at most one vectorized loop, the whole panels' (on AVX2; where AVX-512's
    wider panels leave no whole one, none). Values against NumPy."""
    modes.small_products_on_the_template(monkeypatch.setattr)
    qkv = data((19, 192), lt.float32, seed=5)
    q = lt.asarray(qkv, device="cpu")[:, :64].reshape(19, 4, 16).permute(1, 0, 2)
    k = lt.asarray(qkv, device="cpu")[:, 64:128].reshape(19, 4, 16).permute(1, 2, 0)
    got = q @ k
    (item,) = lt.schedule(got)
    assert isinstance(item.kernel, Contraction)
    program, _ = compile_kernel(item.kernel)
    assert program.stages[1].optimized_ir.count("\nvector.body") <= 1
    want = qkv[:, :64].reshape(19, 4, 16).transpose(1, 0, 2) @ qkv[:, 64:128].reshape(19, 4, 16).transpose(1, 2, 0)
    check(got, torch.from_numpy(want))


@pytest.mark.parametrize("kinds", [("contiguous", "contiguous"), ("transposed", "transposed")])
def test_product_one_vector_wide_takes_tiles_one_vector_wide(kinds):
    x, y, t, u = operands((100, 70), (70, 16), kinds=kinds)
    program, _ = compile_kernel(lt.schedule(x.to("cpu") @ y.to("cpu"))[0].kernel)
    assert program.layout.nr == 16
    check(x @ y, t @ u)


# Operands that are reductions, packed through the renderer's column path: along k (the last tile of k stops
# at k) and along the lanes (the last panel stops at m or n), on either side, batched; m, n and k leave partial
# panels and tiles. (contraction, operand shapes), each written for lazytensor and torch alike.
REDUCED = {"a_along_k": (lambda x, w: x.sum(1) @ w, (200, 3, 33), (33, 50)),
           "a_along_lanes": (lambda x, w: x.sum(1).T @ w, (33, 3, 200), (33, 50)),
           "b_along_k": (lambda x, w: w @ x.sum(1).T, (50, 3, 33), (200, 33)),
           "b_along_lanes": (lambda x, w: w @ x.sum(1), (33, 3, 50), (200, 33)),
           "batched": (lambda x, w: x.sum(2) @ w, (2, 200, 3, 33), (33, 50))}


@pytest.mark.parametrize("dtype", [lt.float32, lt.float16], ids=str)
@pytest.mark.parametrize("case", REDUCED)
def test_packing_operands_made_by_reductions(case, dtype):
    contraction, x_shape, w_shape = REDUCED[case]
    (x, tx), (w, tw) = layout(data(x_shape, seed=1), "contiguous"), layout(data(w_shape, seed=2), "contiguous")
    on_cpu = contraction(x.to("cpu").cast(dtype), w.to("cpu").cast(dtype))
    assert [type(item.kernel) for item in lt.schedule(on_cpu)] == [Contraction], "the reduction is in the packing"
    half = to_torch_dtype(dtype)
    check(contraction(x.cast(dtype), w.cast(dtype)), contraction(tx.to(half), tw.to(half)))


# Run in a fresh process: a write past a panel corrupts the heap, which glibc reports (and aborts on) only
# at a later allocation. The churn of allocations after the products gives it that chance.
REDUCED_OPERANDS = """
import sys, numpy as np, lazytensor as lt
out = {}
for k in (17, 33, 40, 65):
    x = np.random.default_rng(k).integers(-8, 8, (200, 3, k)).astype(np.float32) / 8
    w = np.random.default_rng(k + 1).integers(-8, 8, (k, 50)).astype(np.float32) / 8
    out[f"a{k}"] = (lt.asarray(x, device="cpu").sum(1) @ lt.asarray(w, device="cpu")).numpy()
    out[f"b{k}"] = (lt.asarray(w.T, device="cpu") @ lt.asarray(x, device="cpu").sum(1).T).numpy()
for size in range(1, 4000, 7):
    junk = [np.ones(size + i) for i in range(20)]
np.savez(sys.argv[1], **out)
"""


def test_packing_an_operand_made_by_a_reduction_stays_inside_its_panels(tmp_path):
    """`x.sum(1) @ w` with k not a multiple of the k tile: the operand's reduction over rows is packed by
    the renderer's column path, which must stop the last tile of k at the operand's edge as the packing
    loops do; it used to write past the panels (and read past the operand) and corrupt the heap."""
    env = {**{key: v for key, v in os.environ.items() if key != "LT_DEVICE"}, "LT_CHECK_BOUNDS": str(int(bounds.CHECK))}
    run = subprocess.run([sys.executable, "-c", REDUCED_OPERANDS, str(tmp_path / "out.npz")], env=env,
                         capture_output=True, text=True, check=False)
    assert run.returncode == 0, f"the process died ({run.returncode}): {run.stderr[-2000:]}"
    got = np.load(tmp_path / "out.npz")
    for k in (17, 33, 40, 65):
        x = torch.tensor(np.random.default_rng(k).integers(-8, 8, (200, 3, k)).astype(np.float32) / 8)
        w = torch.tensor(np.random.default_rng(k + 1).integers(-8, 8, (k, 50)).astype(np.float32) / 8)
        np.testing.assert_array_equal(got[f"a{k}"], (x.sum(1) @ w).numpy())
        np.testing.assert_array_equal(got[f"b{k}"], (w.T @ x.sum(1).T).numpy())
