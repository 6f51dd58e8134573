"""lazytensor.nn against torch.nn, with the weights copied over: outputs, input gradients and parameter
gradients of every layer and loss; the Module API; PyTorch's initialization distributions."""
from __future__ import annotations

import copy
import math
import pickle

import numpy as np
import pytest
import torch

import lazytensor as lt
from conftest import LAYOUTS, check, graph_lines, inputs, marked_line, random_array
from lazytensor import nn
from lazytensor.device import get_device
from lazytensor.kernels.ir import Contraction, Kernel

F = nn.functional
F64 = lt.float64


def copy_weights(module: nn.Module, tmodule: torch.nn.Module) -> None:
    module.load_state_dict({k: v.detach().numpy() for k, v in tmodule.state_dict().items()})


def run_both(module, tmodule, arr: np.ndarray, seed: int = 3, train_input: bool = True, **tol):
    """Forward both on `arr`, backward the same random upstream gradient, compare the output, the input
    gradient and every parameter's gradient."""
    x = lt.asarray(arr).requires_grad_(train_input)
    t = torch.tensor(arr, requires_grad=train_input)
    out, tout = module(x), tmodule(t)
    check(out, tout, **tol)
    up = random_array(tuple(tout.shape), lt.float64 if tout.dtype == torch.float64 else lt.float32, seed=seed)
    out.backward(lt.asarray(up))
    tout.backward(torch.tensor(up))
    if train_input:
        check(x.grad, t.grad, **tol)
    tparams = dict(tmodule.named_parameters())
    for name, p in module.named_parameters():
        check(p.grad, tparams[name].grad, **tol)
    return out, tout


def test_linear():
    torch.manual_seed(0)
    tm = torch.nn.Linear(5, 3, dtype=torch.float64)
    m = nn.Linear(5, 3, dtype=F64)
    copy_weights(m, tm)
    run_both(m, tm, random_array((4, 5), F64, seed=1))
    run_both(m, tm, random_array((2, 3, 5), F64, seed=2))  # extra batch axes


def test_linear_without_bias_float32():
    torch.manual_seed(0)
    tm = torch.nn.Linear(6, 2, bias=False)
    m = nn.Linear(6, 2, bias=False)
    assert m.bias is None and [n for n, _ in m.named_parameters()] == ["weight"]
    copy_weights(m, tm)
    run_both(m, tm, random_array((3, 6), lt.float32, seed=1))


CONV = [  # (in, out, kernel, stride, padding, dilation, groups, input H, W)
    (3, 4, 3, 1, 0, 1, 1, 7, 6),
    (3, 4, 3, 1, 1, 1, 1, 6, 6),
    (4, 6, 3, 2, 1, 1, 2, 9, 8),
    (2, 3, (3, 2), (2, 1), (1, 0), (2, 1), 1, 9, 7),
    (4, 4, 3, 1, "same", 2, 4, 7, 7),
    (2, 4, 2, 2, 0, 1, 1, 8, 8),
    (1, 2, 5, 3, 2, 1, 1, 11, 10),
]


@pytest.mark.parametrize("cfg", CONV, ids=str)
def test_conv2d(cfg):
    cin, cout, k, s, p, d, g, h, w = cfg
    torch.manual_seed(1)
    tm = torch.nn.Conv2d(cin, cout, k, s, p, d, g, dtype=torch.float64)
    m = nn.Conv2d(cin, cout, k, s, p, d, g, dtype=F64)
    copy_weights(m, tm)
    run_both(m, tm, random_array((2, cin, h, w), F64, seed=4))


GRAD_CONV = [(s, p, d) for s in (1, 2, 3) for p in (0, 1, 2) for d in (1, 2)] + [(1, "same", 1), (1, "same", 2)]


@pytest.mark.filterwarnings("ignore:Using padding='same'")  # torch's note on an even kernel length
@pytest.mark.parametrize("dtype", [lt.float32, F64], ids=str)
@pytest.mark.parametrize("cfg", GRAD_CONV, ids=str)
def test_conv2d_gradients(cfg, dtype):
    """Input, weight and bias gradients (the input's is a transposed convolution of its own) with a 3x2
    kernel on a 9x11 input, where strided windows stop short of the input's end and a padding wider than
    the kernel's reach (2 > 1 across) is cropped; groups 1, 2 and 4 in turn. The float32 data are small
    integers, so every sum is exact in any order (random floats of both signs cancel in sums, and the
    two libraries' summation orders then differ by more than float32's tolerance)."""
    stride, padding, dilation = cfg
    groups = (1, 2, 4)[GRAD_CONV.index(cfg) % 3]

    def data(shape, seed):
        arr = random_array(shape, dtype, seed=seed)
        return arr.round() if dtype == lt.float32 else arr

    x, w, b = data((2, 4, 9, 11), 7), data((8, 4 // groups, 3, 2), 8), data((8,), 9)
    up_shape = tuple(torch.nn.functional.conv2d(torch.tensor(x), torch.tensor(w), None, stride, padding,
                                                dilation, groups).shape)
    up = data(up_shape, 10)
    lx, lw, lb = (lt.asarray(a).requires_grad_() for a in (x, w, b))
    tx, tw, tb = (torch.tensor(a, requires_grad=True) for a in (x, w, b))
    out = F.conv2d(lx, lw, lb, stride, padding, dilation, groups)
    tout = torch.nn.functional.conv2d(tx, tw, tb, stride, padding, dilation, groups)
    out.backward(lt.asarray(up))
    tout.backward(torch.tensor(up))
    check(out, tout)
    for got, expected in ((lx.grad, tx.grad), (lw.grad, tw.grad), (lb.grad, tb.grad)):
        check(got, expected)


@pytest.mark.parametrize("kind", LAYOUTS)
def test_conv2d_gradients_of_views_and_3d_input(kind):
    """Non-contiguous input and weight (the weight as the same kind of view), and a 3-d input."""
    (_, x, tx), = [v for v in inputs((3, 8, 7), F64, seed=11) if v[0] == kind]
    (_, w, tw), = [v for v in inputs((4, 3, 3, 3), F64, seed=12) if v[0] == kind]
    x, w = x.requires_grad_(), w.requires_grad_()
    tx, tw = tx.requires_grad_(), tw.requires_grad_()
    out, tout = F.conv2d(x, w, stride=2, padding=1), torch.nn.functional.conv2d(tx, tw, stride=2, padding=1)
    up = random_array(tuple(tout.shape), F64, seed=13)
    out.backward(lt.asarray(up))
    tout.backward(torch.tensor(up))
    check(out, tout)
    check(x.grad, tx.grad)
    check(w.grad, tw.grad)


@pytest.mark.parametrize("cfg", [(1, 1, 1, 1), (2, 1, 1, 2), (3, 2, 2, 1)], ids=str)
def test_conv2d_second_order_gradients(cfg):
    """Gradients of a function of conv2d's gradients (create_graph): the custom backward is made of
    differentiable ops, the input gradient's convolution included."""
    stride, padding, dilation, groups = cfg
    x, w = random_array((2, 4, 9, 8), F64, seed=14), random_array((6, 4 // groups, 3, 2), F64, seed=15)

    def both(conv, grad, a, b):
        out = conv(a, b, None, stride, padding, dilation, groups)
        gx, gw = grad((out ** 2).sum(), (a, b))
        return grad((gx ** 3).sum() + (gw * gw).sum(), (a, b))

    got = both(F.conv2d, lambda f, v: lt.autograd.gradients(f, v, create_graph=True),
               *(lt.asarray(a).requires_grad_() for a in (x, w)))
    expected = both(torch.nn.functional.conv2d, lambda f, v: torch.autograd.grad(f, v, create_graph=True),
                    *(torch.tensor(a, requires_grad=True) for a in (x, w)))
    for g, t in zip(got, expected):
        check(g, t, rtol=1e-10)


def test_conv2d_gradients_are_contractions():
    """From a realized output gradient, the input gradient is one contraction over C_out that writes its
    columns in place, (C_in * kH * kW) x (N * OH * OW), then one kernel that adds each tap's column where
    it belongs; the weight gradient one contraction over (N, OH, OW), the windows its rows (C_in * kH * kW)
    and C_out its columns, whose epilogue writes it transposed as the weight's gradient, where the template
    packs its operands (the CPU's) from the padded input in a buffer of its own (one copy, which the packing
    reads with no mask); the bias gradient one reduction."""
    x = lt.asarray(random_array((4, 16, 6, 6), lt.float32, seed=16)).requires_grad_()
    w = lt.asarray(random_array((32, 16, 3, 3), lt.float32, seed=17)).requires_grad_()
    b = lt.asarray(random_array((32,), lt.float32, seed=18)).requires_grad_()
    F.conv2d(x, w, b, padding=1).backward(lt.asarray(random_array((4, 32, 6, 6), lt.float32, seed=19)))
    (cols, gx), (*padded, gw) = lt.schedule(x.grad), lt.schedule(w.grad)
    assert len(padded) == get_device(x.device).packs_operands
    assert all(isinstance(p.kernel, Kernel) and p.outputs[0].shape == (4, 16, 8, 8) for p in padded)
    assert isinstance(cols.kernel, Contraction) and cols.kernel.sizes == (1, 16 * 3 * 3, 4 * 6 * 6, 32)
    assert cols.kernel.epilogue is None
    assert isinstance(gx.kernel, Kernel) and gx.outputs == [x.grad.node]
    assert isinstance(gw.kernel, Contraction) and gw.kernel.sizes == (1, 16 * 3 * 3, 32, 4 * 6 * 6)
    assert gw.kernel.epilogue is not None and gw.outputs[0].shape[-4:] == (32, 16, 3, 3)
    assert len(lt.schedule(b.grad)) == 1


def test_conv_block_gradients_read_the_realized_output_gradient():
    """conv, bias, relu, max pool, conv (odd sizes, a strided input): the second conv's output gradient
    is written once for its input and weight gradients, and its bias gradient sums that buffer instead
    of computing the relu and max pool backward again; the only copy is the strided input's, padded, which the
    first conv's forward and weight gradient share."""
    (_, x, tx), = [v for v in inputs((3, 2, 9, 7), lt.float32, seed=40) if v[0] == "strided"]
    convs = [nn.Conv2d(2, 5, 3, padding=1), nn.Conv2d(5, 4, 2)]
    tconvs = [torch.nn.Conv2d(2, 5, 3, padding=1), torch.nn.Conv2d(5, 4, 2)]
    for c, tc in zip(convs, tconvs):
        copy_weights(c, tc)
    c1, c2 = convs
    out = c2(F.max_pool2d(F.relu(c1(x.requires_grad_())), 2)).relu()
    tout = tconvs[1](torch.nn.functional.max_pool2d(torch.relu(tconvs[0](tx.requires_grad_())), 2)).relu()
    up = random_array(tuple(tout.shape), lt.float32, seed=41)
    out.backward(lt.asarray(up))
    tout.backward(torch.tensor(up))
    grads = [x.grad, c1.weight.grad, c1.bias.grad, c2.weight.grad, c2.bias.grad]
    sched = lt.schedule(*grads)
    (bias,) = [item for item in sched if c2.bias.grad.node.srcs[:1] == tuple(item.outputs)]
    assert "max" not in str(bias.kernel) and "cmp" not in str(bias.kernel)
    assert sum(str(item.kernel).count("load") == 1 and item.kernel.name.startswith("ew_") for item in sched) == 1
    for got, t in zip(grads, [tx.grad, tconvs[0].weight.grad, tconvs[0].bias.grad, tconvs[1].weight.grad,
                              tconvs[1].bias.grad]):
        check(got, t)


def test_dropout_backward_reads_its_mask_from_a_buffer():
    """The mask is drawn once, in a kernel of its own, which the forward and the backward both read."""
    lt.manual_seed(3)
    x = lt.asarray(random_array((33, 17), lt.float32, seed=42)).requires_grad_()
    w = lt.asarray(random_array((17, 5), lt.float32, seed=43))
    y = F.dropout(x, 0.3)
    (y @ w).sum().backward()
    sched = lt.schedule(y, x.grad)
    drawn = [item for item in sched if "xor" in str(item.kernel)]
    assert len(drawn) == 1 and drawn[0].outputs[0].dtype == lt.bool_
    kept = y.numpy() != 0
    check(x.grad, np.where(kept, w.numpy().sum(axis=1) / np.float32(0.7), np.float32(0)))


@pytest.mark.parametrize("stride", [1, 2])
def test_conv2d_input_gradient_takes_no_nan_from_a_weight_tap_no_output_reaches(stride):
    # found by the fuzzer (tests/fuzz, grad seeds 400022 and 11029): an infinite weight tap that reaches
    # an input element through no output (past the edge, or between the strided windows)
    x = random_array((1, 2, 5, 5), lt.float32, 3)
    w = random_array((2, 2, 2, 1), lt.float32, 4)
    w[1, 0, 1, 0] = -np.inf
    g = random_array((1, 2, (5 - 2) // stride + 1, (5 - 1) // stride + 1), lt.float32, 5)
    ours, theirs = lt.asarray(x).requires_grad_(), torch.tensor(x, requires_grad=True)
    (nn.functional.conv2d(ours, lt.asarray(w), stride=(stride, stride)) * lt.asarray(g)).sum().backward()
    (torch.nn.functional.conv2d(theirs, torch.tensor(w), stride=stride) * torch.tensor(g)).sum().backward()
    check(ours.grad, theirs.grad)


def test_conv2d_functional_without_bias_and_3d_input():
    x, w = random_array((2, 5, 5), F64, seed=5), random_array((3, 2, 3, 3), F64, seed=6)
    check(F.conv2d(lt.asarray(x), lt.asarray(w), padding=1),
          torch.nn.functional.conv2d(torch.tensor(x), torch.tensor(w), padding=1))


def test_conv2d_shape_errors():
    with pytest.raises(lt.ShapeError):
        F.conv2d(lt.zeros(1, 3, 5, 5), lt.zeros(4, 2, 3, 3))
    with pytest.raises(lt.ShapeError):
        F.conv2d(lt.zeros(1, 1, 2, 2), lt.zeros(1, 1, 3, 3))


POOL = [  # (kernel, stride, padding, dilation, ceil_mode)
    (2, None, 0, 1, False),
    (3, 2, 1, 1, False),
    ((2, 3), (1, 2), (1, 1), 1, False),
    (3, 1, 0, 2, False),
    (3, 2, 1, 1, True),
    (2, 2, 0, 1, True),
]


@pytest.mark.parametrize("cfg", POOL, ids=str)
def test_max_pool2d(cfg):
    k, s, p, d, ceil = cfg
    tm = torch.nn.MaxPool2d(k, s, p, d, ceil_mode=ceil)
    m = nn.MaxPool2d(k, s, p, d, ceil_mode=ceil)
    run_both(m, tm, random_array((2, 3, 7, 9), F64, seed=7))


@pytest.mark.parametrize("cfg", POOL, ids=str)
@pytest.mark.parametrize("include_pad", [True, False])
def test_avg_pool2d(cfg, include_pad):
    k, s, p, d, ceil = cfg
    if d != 1:
        return  # avg_pool2d has no dilation
    tm = torch.nn.AvgPool2d(k, s, p, ceil_mode=ceil, count_include_pad=include_pad)
    m = nn.AvgPool2d(k, s, p, ceil_mode=ceil, count_include_pad=include_pad)
    run_both(m, tm, random_array((2, 3, 7, 9), F64, seed=8))


@pytest.mark.parametrize("dtype", [lt.float32, F64], ids=str)
def test_max_pool2d_gradient_goes_to_the_first_maximum(dtype):
    """Found by the fuzzer (grad seed 500375): a window's gradient goes to its first maximum, as PyTorch's
    (tied maxima had shared it), or to its last NaN (seed 500089: a NaN maximum had given NaN)."""
    x = np.array([[[[4, -3, -3, 2], [4, 4, 2, 4], [np.nan, 1, 0, 0], [3, np.nan, 0, 0]]]], dtype.name)
    ours, theirs = lt.asarray(x).requires_grad_(), torch.tensor(x, requires_grad=True)
    up = random_array((1, 1, 2, 2), dtype, seed=12)
    (F.max_pool2d(ours, 2) * lt.asarray(up)).sum().backward()
    (torch.nn.functional.max_pool2d(theirs, 2) * torch.tensor(up)).sum().backward()
    check(ours.grad, theirs.grad)
    check(F.max_pool2d(lt.asarray(x), 2), torch.nn.functional.max_pool2d(torch.tensor(x), 2))


def test_pool_of_3d_input_and_adaptive_average():
    x = random_array((3, 6, 6), F64, seed=9)
    check(F.max_pool2d(lt.asarray(x), 2), torch.nn.functional.max_pool2d(torch.tensor(x), 2))
    x4 = random_array((2, 3, 6, 4), F64, seed=10)
    run_both(nn.AdaptiveAvgPool2d(1), torch.nn.AdaptiveAvgPool2d(1), x4)
    run_both(nn.AdaptiveAvgPool2d((3, 2)), torch.nn.AdaptiveAvgPool2d((3, 2)), x4)


def test_layer_norm():
    torch.manual_seed(2)
    for shape in [(6,), (3, 6)]:
        tm = torch.nn.LayerNorm(shape, dtype=torch.float64)
        with torch.no_grad():
            tm.weight.uniform_(0.5, 1.5)
            tm.bias.uniform_(-0.5, 0.5)
        m = nn.LayerNorm(shape, dtype=F64)
        copy_weights(m, tm)
        run_both(m, tm, random_array((4, 3, 6), F64, seed=11))
    run_both(nn.LayerNorm(6, elementwise_affine=False, dtype=F64),
             torch.nn.LayerNorm(6, elementwise_affine=False, dtype=torch.float64), random_array((2, 6), F64, seed=12))


@pytest.mark.parametrize("dtype", [lt.float16, lt.bfloat16])
def test_norms_of_16_bit_inputs_compute_their_statistics_in_float32(dtype):
    # found by the fuzzer: the mean was rounded to the input's dtype before x - mean, so a bfloat16 row
    # around 100 with a spread of 1 was normalized around a mean off by up to 0.25 (torch: float32 inside)
    tdtype = torch.float16 if dtype == lt.float16 else torch.bfloat16
    arr = (100 + random_array((4, 3, 5, 6), lt.float32, 7)).astype(np.float32)
    t = torch.tensor(arr).to(tdtype)
    x = lt.asarray(t.float().numpy()).cast(dtype)
    w, b = random_array((6,), lt.float32, 8), random_array((6,), lt.float32, 9)
    tw, tb = torch.tensor(w).to(tdtype), torch.tensor(b).to(tdtype)
    lw, lb = lt.asarray(tw.float().numpy()).cast(dtype), lt.asarray(tb.float().numpy()).cast(dtype)
    check(nn.functional.layer_norm(x, (6,), lw, lb), torch.nn.functional.layer_norm(t, (6,), tw, tb))
    check(nn.functional.group_norm(x, 3), torch.nn.functional.group_norm(t, 3))
    # torch's own 16-bit batch norm keeps its statistics in 16 bits on the CPU: the oracle is float64, rounded
    rm, rv = lt.zeros(3, dtype=dtype), lt.ones(3, dtype=dtype)
    trm, trv = torch.zeros(3, dtype=torch.float64), torch.ones(3, dtype=torch.float64)
    check(nn.functional.batch_norm(x, rm, rv, training=True),
          torch.nn.functional.batch_norm(t.double(), trm, trv, training=True).to(tdtype))
    check(rm, trm.to(tdtype))
    check(rv, trv.to(tdtype))
    check(nn.functional.batch_norm(x, rm, rv), torch.nn.functional.batch_norm(t.double(), trm.to(tdtype).double(),
                                                                             trv.to(tdtype).double()).to(tdtype))


def test_batch_norm2d_train_and_eval():
    torch.manual_seed(3)
    tm = torch.nn.BatchNorm2d(3, dtype=torch.float64)
    with torch.no_grad():
        tm.weight.uniform_(0.5, 1.5)
        tm.bias.uniform_(-0.5, 0.5)
    m = nn.BatchNorm2d(3, dtype=F64)
    copy_weights(m, tm)
    for step in range(2):
        for p, tp in zip(m.parameters(), tm.parameters()):
            p.grad, tp.grad = None, None
        run_both(m, tm, random_array((4, 3, 5, 5), F64, seed=13 + step, low=-1, high=3))
    check(m.running_mean, tm.running_mean)
    check(m.running_var, tm.running_var)
    check(m.num_batches_tracked, tm.num_batches_tracked)
    m.eval()
    tm.eval()
    run_both(m, tm, random_array((2, 3, 5, 5), F64, seed=15))
    assert set(m.state_dict()) == set(tm.state_dict())


def test_batch_norm_momentum_none_and_no_running_stats():
    tm = torch.nn.BatchNorm2d(2, momentum=None, dtype=torch.float64)
    m = nn.BatchNorm2d(2, momentum=None, dtype=F64)
    for step in range(3):
        run_both(m, tm, random_array((3, 2, 2, 2), F64, seed=20 + step))
    check(m.running_mean, tm.running_mean)
    check(m.running_var, tm.running_var)
    tm2 = torch.nn.BatchNorm2d(2, track_running_stats=False, affine=False, dtype=torch.float64).eval()
    m2 = nn.BatchNorm2d(2, track_running_stats=False, affine=False, dtype=F64).eval()
    run_both(m2, tm2, random_array((3, 2, 2, 2), F64, seed=24))


def test_batch_norm_running_stats_realize_with_the_next_schedule():
    m = nn.BatchNorm2d(2)
    y = m(lt.asarray(random_array((4, 2, 3, 3), lt.float32, seed=25)))
    assert not m.running_mean.is_realized
    y.realize()
    assert m.running_mean.is_realized and m.running_var.is_realized and m.num_batches_tracked.is_realized


def test_batch_norm_running_stats_of_passes_that_read_nothing():
    """Forward passes in training mode whose outputs are never read (a warm-up of the statistics): each pass
    computes the last one's update of the running statistics, so they never grow a graph over every pass;
    torch's values."""
    m, tm = nn.BatchNorm2d(2, dtype=F64), torch.nn.BatchNorm2d(2, dtype=torch.float64)
    for step in range(5):
        if step == 2:
            lt.reset_stats()
        arr = random_array((4, 2, 3, 3), F64, seed=30 + step)
        m(lt.asarray(arr))
        tm(torch.tensor(arr))
    assert lt.stats().realizes == 3 and not m.running_mean.is_realized
    check(m.running_mean, tm.running_mean)
    check(m.running_var, tm.running_var)
    check(m.num_batches_tracked, tm.num_batches_tracked)


def test_embedding():
    torch.manual_seed(4)
    tm = torch.nn.Embedding(7, 3, dtype=torch.float64)
    m = nn.Embedding(7, 3, dtype=F64)
    copy_weights(m, tm)
    idx = np.array([[1, 3, 3], [0, 6, 1]])
    out, tout = m(lt.asarray(idx)), tm(torch.tensor(idx))
    check(out, tout)
    up = random_array((2, 3, 3), F64, seed=26)
    out.backward(lt.asarray(up))
    tout.backward(torch.tensor(up))
    check(m.weight.grad, tm.weight.grad)  # repeated indices accumulate


def test_embedding_padding_idx():
    torch.manual_seed(5)
    tm = torch.nn.Embedding(5, 2, padding_idx=1, dtype=torch.float64)
    m = nn.Embedding(5, 2, padding_idx=1, dtype=F64)
    check(m.weight[1], np.zeros(2))
    copy_weights(m, tm)
    idx = np.array([1, 2, 1, 4])
    out, tout = m(lt.asarray(idx)), tm(torch.tensor(idx))
    check(out, tout)
    out.sum().backward()
    tout.sum().backward()
    check(m.weight.grad, tm.weight.grad)


ACTIVATIONS = {
    "relu": (nn.ReLU(), torch.nn.ReLU()),
    "leaky_relu": (nn.LeakyReLU(0.2), torch.nn.LeakyReLU(0.2)),
    "gelu": (nn.GELU(), torch.nn.GELU()),
    "gelu_tanh": (nn.GELU("tanh"), torch.nn.GELU("tanh")),
    "silu": (nn.SiLU(), torch.nn.SiLU()),
    "sigmoid": (nn.Sigmoid(), torch.nn.Sigmoid()),
    "tanh": (nn.Tanh(), torch.nn.Tanh()),
    "softmax": (nn.Softmax(1), torch.nn.Softmax(1)),
    "log_softmax": (nn.LogSoftmax(-1), torch.nn.LogSoftmax(-1)),
    "flatten": (nn.Flatten(), torch.nn.Flatten()),
    "identity": (nn.Identity(), torch.nn.Identity()),
}


@pytest.mark.parametrize("name", list(ACTIVATIONS))
def test_activations(name):
    m, tm = ACTIVATIONS[name]
    run_both(m, tm, random_array((3, 4, 2), F64, seed=27, low=-4, high=4))


def test_activations_float32_and_extremes():
    x = np.array([-200.0, -90.0, -20.0, -1.0, 0.0, 1.0, 20.0, 90.0, 200.0], np.float32)
    for f, tf in [(F.sigmoid, torch.sigmoid), (F.silu, torch.nn.functional.silu), (F.gelu, torch.nn.functional.gelu),
                  (lambda v: F.softplus(v), torch.nn.functional.softplus)]:
        a = lt.asarray(x).requires_grad_()
        t = torch.tensor(x, requires_grad=True)
        out, tout = f(a), tf(t)
        check(out, tout)
        out.sum().backward()
        tout.sum().backward()
        assert np.isfinite(a.grad.numpy()).all()
        check(a.grad, t.grad)


def test_activation_gradients_at_nan_and_the_kinks_are_torchs():
    """Found by the fuzzer (grad seeds 921553, 922277, 930077, 930369): elu gave a NaN input the gradient of its
    exponential branch where torch's passes it (x <= 0 is false), so NaN gradients went missing downstream;
    relu6 as torch's hardtanh passes it too; softplus's is NaN (it was clipped to 0); abs's slope at NaN is 0
    (it took sign(NaN), NaN)."""
    x = np.array([np.nan, -2.0, -0.0, 0.0, 3.0, 6.0, 7.0, np.inf, -np.inf], np.float32)
    for f, tf in [(F.elu, torch.nn.functional.elu), (F.relu6, torch.nn.functional.relu6), (F.relu, torch.relu),
                  (F.softplus, torch.nn.functional.softplus), (lambda v: v.abs(), torch.abs),
                  (lambda v: F.leaky_relu(v, 0.1), lambda v: torch.nn.functional.leaky_relu(v, 0.1))]:
        a = lt.asarray(x).requires_grad_()
        t = torch.tensor(x, requires_grad=True)
        out, tout = f(a), tf(t)
        check(out, tout)
        (out * 3).sum().backward()
        (tout * 3).sum().backward()
        check(a.grad, t.grad)


@pytest.mark.parametrize("name", ["silu", "gelu", "gelu_tanh"])
def test_smooth_activation_gradients_of_huge_inputs_and_upstream_gradients(name):
    """Found by the fuzzer (grad seed 940209): differentiated through their products, silu and gelu gave a
    large x times a large upstream gradient (inf in float32) times their factor's slope of 0, NaN; they are
    differentiated as PyTorch's formulas are, which torch in float64 confirms."""
    m, tm = ACTIVATIONS[name]
    x = np.array([2.5e30, -2.5e30, 3e38, -3e38, 1.0, -0.5, 0.0, 9.5, -9.5, 20.0, np.nan, np.inf, -np.inf], np.float32)
    a = lt.asarray(x).requires_grad_()
    t = torch.tensor(x, dtype=torch.float64, requires_grad=True)
    (m(a) * 6e29).sum().backward()
    (tm(t) * 6e29).sum().backward()
    check(a.grad, t.grad.float())


def test_dropout_module_train_and_eval():
    m = nn.Dropout(0.5)
    x = lt.ones(1000)
    lt.manual_seed(0)
    y = m(x).numpy()
    assert set(np.unique(y)) == {0.0, 2.0}
    m.eval()
    assert m(x) is x
    with pytest.raises(ValueError):
        nn.Dropout(1.5)


def test_dropout_gradient_uses_the_same_mask():
    lt.manual_seed(1)
    x = lt.asarray(random_array((50,), lt.float32, seed=28)).requires_grad_()
    y = F.dropout(x, 0.4)
    y.sum().backward()
    kept = y.numpy() != 0
    check(x.grad, np.where(kept, np.float32(1 / 0.6), np.float32(0)))


LOGITS = random_array((6, 5), F64, seed=30)
LABELS = np.array([0, 4, 2, 2, 1, 3])


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("smoothing", [0.0, 0.1])
@pytest.mark.parametrize("weighted", [False, True])
def test_cross_entropy(reduction, smoothing, weighted):
    weight = random_array((5,), F64, seed=31, low=0.5, high=2) if weighted else None
    labels = LABELS.copy()
    labels[1] = -100  # ignored
    x = lt.asarray(LOGITS).requires_grad_()
    t = torch.tensor(LOGITS, requires_grad=True)
    out = F.cross_entropy(x, lt.asarray(labels), None if weight is None else lt.asarray(weight),
                          reduction=reduction, label_smoothing=smoothing)
    tout = torch.nn.functional.cross_entropy(t, torch.tensor(labels), None if weight is None else torch.tensor(weight),
                                             reduction=reduction, label_smoothing=smoothing)
    check(out, tout)
    up = random_array(tuple(tout.shape), F64, seed=32)
    out.backward(lt.asarray(up))
    tout.backward(torch.tensor(up))
    check(x.grad, t.grad)


def test_cross_entropy_spatial_and_module():
    logits = random_array((2, 4, 3, 3), F64, seed=33)
    labels = np.random.default_rng(0).integers(0, 4, (2, 3, 3))
    m, tm = nn.CrossEntropyLoss(label_smoothing=0.2), torch.nn.CrossEntropyLoss(label_smoothing=0.2)
    x, t = lt.asarray(logits).requires_grad_(), torch.tensor(logits, requires_grad=True)
    out, tout = m(x, lt.asarray(labels)), tm(t, torch.tensor(labels))
    check(out, tout)
    out.backward()
    tout.backward()
    check(x.grad, t.grad)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_nll_of_weighted_spatial_targets_with_an_ignored_class_inside_the_range(reduction):
    """logp[y] and weight[y] are read at the targets; a target equal to ignore_index counts for nothing, in the
    loss and in the mean's summed weights, also where that index is a class (2 of 4)."""
    logits = random_array((3, 4, 2, 5), F64, seed=38)
    labels = np.random.default_rng(2).integers(0, 4, (3, 2, 5))
    weight = random_array((4,), F64, seed=39, low=0.5, high=2)
    x, t = lt.asarray(logits).requires_grad_(), torch.tensor(logits, requires_grad=True)
    out = F.cross_entropy(x, lt.asarray(labels), lt.asarray(weight), ignore_index=2, reduction=reduction)
    tout = torch.nn.functional.cross_entropy(t, torch.tensor(labels), torch.tensor(weight), ignore_index=2,
                                             reduction=reduction)
    check(out, tout)
    out.sum().backward()
    tout.sum().backward()
    check(x.grad, t.grad)
    lp = random_array((6, 4), F64, seed=40)
    y = np.array([0, 2, 3, 2, 1, 3])
    check(F.nll_loss(lt.asarray(lp), lt.asarray(y), lt.asarray(weight), ignore_index=2, reduction=reduction),
          torch.nn.functional.nll_loss(torch.tensor(lp), torch.tensor(y), torch.tensor(weight), ignore_index=2,
                                       reduction=reduction))


def test_cross_entropy_float32_training_shape():
    logits = random_array((32, 10), lt.float32, seed=34)
    labels = np.random.default_rng(1).integers(0, 10, 32)
    x, t = lt.asarray(logits).requires_grad_(), torch.tensor(logits, requires_grad=True)
    out = F.cross_entropy(x, lt.asarray(labels))
    tout = torch.nn.functional.cross_entropy(t, torch.tensor(labels))
    check(out, tout)
    out.backward()
    tout.backward()
    check(x.grad, t.grad)
    with pytest.raises(lt.ShapeError, match="probability targets must have the input's shape"):
        F.cross_entropy(x, lt.asarray(labels.astype(np.float32)))
    with pytest.raises(lt.DTypeError):
        F.nll_loss(x, lt.asarray(labels.astype(np.float32)))


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("smoothing, weighted, shape", [(0.0, False, (6, 5)), (0.1, True, (6, 5)),
                                                        (0.2, False, (2, 5, 3)), (0.0, True, (5,))])
def test_cross_entropy_of_probability_targets(reduction, smoothing, weighted, shape):
    logits = random_array(shape, F64, seed=35)
    probs = torch.tensor(random_array(shape, F64, seed=36)).softmax(0 if len(shape) == 1 else 1).numpy()
    weight = random_array((5,), F64, seed=37, low=0.5, high=2) if weighted else None
    x, t = lt.asarray(logits).requires_grad_(), torch.tensor(logits, requires_grad=True)
    out = F.cross_entropy(x, lt.asarray(probs), None if weight is None else lt.asarray(weight), reduction=reduction,
                          label_smoothing=smoothing)
    tout = torch.nn.functional.cross_entropy(t, torch.tensor(probs), None if weight is None else torch.tensor(weight),
                                             reduction=reduction, label_smoothing=smoothing)
    check(out, tout)
    out.sum().backward()
    tout.sum().backward()
    check(x.grad, t.grad)


def test_nll_mse_l1_bce():
    a, b = random_array((4, 3), F64, seed=35), random_array((4, 3), F64, seed=36)
    p = 1 / (1 + np.exp(-a))
    y = (b > 0).astype(np.float64)
    cases = [
        (lambda x: F.mse_loss(x, lt.asarray(b)), lambda t: torch.nn.functional.mse_loss(t, torch.tensor(b)), a),
        (lambda x: F.l1_loss(x, lt.asarray(b), reduction="sum"),
         lambda t: torch.nn.functional.l1_loss(t, torch.tensor(b), reduction="sum"), a),
        (lambda x: F.nll_loss(x.log_softmax(1), lt.asarray(LABELS[:4] % 3)),
         lambda t: torch.nn.functional.nll_loss(t.log_softmax(1), torch.tensor(LABELS[:4] % 3)), a),
        (lambda x: F.binary_cross_entropy_with_logits(x, lt.asarray(y)),
         lambda t: torch.nn.functional.binary_cross_entropy_with_logits(t, torch.tensor(y)), a),
        (lambda x: F.binary_cross_entropy(x, lt.asarray(y)),
         lambda t: torch.nn.functional.binary_cross_entropy(t, torch.tensor(y)), p),
    ]
    for f, tf, arr in cases:
        x, t = lt.asarray(arr).requires_grad_(), torch.tensor(arr, requires_grad=True)
        out, tout = f(x), tf(t)
        check(out, tout)
        out.backward()
        tout.backward()
        check(x.grad, t.grad)


# ---- the Module API ---------------------------------------------------------------------------------


def mlp():
    return nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))


def test_sequential_parameters_state_dict_and_load():
    torch.manual_seed(6)
    m, tm = mlp(), torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 3))
    assert [n for n, _ in m.named_parameters()] == [n for n, _ in tm.named_parameters()]
    assert [p.shape for p in m.parameters()] == [tuple(p.shape) for p in tm.parameters()]
    assert list(m.state_dict()) == list(tm.state_dict())
    copy_weights(m, tm)
    x = random_array((5, 4), lt.float32, seed=37)
    check(m(lt.asarray(x)), tm(torch.tensor(x)))
    assert len(m) == 3 and isinstance(m[1], nn.ReLU) and len(m[1:]) == 2
    with pytest.raises(KeyError):
        m.load_state_dict({"0.weight": np.zeros((8, 4), np.float32)})
    result = m.load_state_dict({"0.weight": np.zeros((8, 4), np.float32)}, strict=False)
    assert "0.bias" in result.missing_keys
    check(m[0].weight, np.zeros((8, 4), np.float32))
    with pytest.raises(lt.ShapeError):
        m.load_state_dict({"0.weight": np.zeros((4, 8), np.float32)}, strict=False)


def test_state_dict_is_a_snapshot_and_round_trips():
    m = mlp()
    sd = m.state_dict()
    before = sd["0.weight"].numpy().copy()
    with lt.no_grad():
        m[0].weight.node = (m[0].weight * 2).node
    np.testing.assert_array_equal(sd["0.weight"].numpy(), before)
    m.load_state_dict(sd)
    np.testing.assert_array_equal(m[0].weight.numpy(), before)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 2, 3)
        self.bn = nn.BatchNorm2d(2)
        self.head = nn.Sequential(nn.Flatten(), nn.Linear(2 * 4 * 4, 3))
        self.scale = 2.0

    def forward(self, x):
        return self.head(self.bn(self.conv(x)).relu()) * self.scale


def test_custom_module_train_eval_buffers_and_zero_grad():
    net = Net()
    names = [n for n, _ in net.named_parameters()]
    assert names == ["conv.weight", "conv.bias", "bn.weight", "bn.bias", "head.1.weight", "head.1.bias"]
    assert [n for n, _ in net.named_buffers()] == ["bn.running_mean", "bn.running_var", "bn.num_batches_tracked"]
    assert "bn.running_mean" in net.state_dict()
    assert net.training and net.bn.training
    net.eval()
    assert not net.training and not net.bn.training and not net.head[1].training
    net.train()
    out = net(lt.asarray(random_array((2, 1, 6, 6), lt.float32, seed=38)))
    out.sum().backward()
    assert all(p.grad is not None for p in net.parameters())
    net.zero_grad()
    assert all(p.grad is None for p in net.parameters())
    assert "Conv2d" in repr(net) and "(head): Sequential" in repr(net)
    with pytest.raises(AttributeError):
        net.nothing  # noqa: B018
    with pytest.raises(TypeError):
        net.conv.weight = lt.zeros(2, 1, 3, 3)  # a parameter is replaced by a Parameter


def test_modules_pickle_and_deepcopy_with_copies_of_their_parameters_and_buffers():
    """A module pickles and deep-copies with copies of its parameters (still Parameters, with their
    requires_grad) and buffers (batch norm's running statistics, updated lazily just before), its settings
    and its mode: the copy computes the same output bit for bit, a tied parameter stays tied, and training
    the copy leaves the original alone. A state dict pickles and loads back."""
    from lazytensor import optim
    net = Net()
    net.head[1].bias.requires_grad = False
    x = lt.asarray(random_array((2, 1, 6, 6), lt.float32, seed=40))
    net(x)  # training mode: the running statistics' update is pending
    tied = nn.Sequential(nn.Embedding(5, 3), nn.Linear(3, 5))
    tied[1].weight = tied[0].weight
    for make in (lambda m: pickle.loads(pickle.dumps(m)), copy.deepcopy):
        c = make(net)
        assert type(c) is Net and c.scale == net.scale and c.training and c.bn.momentum == net.bn.momentum
        for (name, p), (cname, cp) in zip(net.named_parameters(), c.named_parameters()):
            assert cname == name and type(cp) is nn.Parameter and cp is not p and cp.requires_grad == p.requires_grad
            np.testing.assert_array_equal(cp.numpy(), p.numpy())
        for (name, b), (cname, cb) in zip(net.named_buffers(), c.named_buffers()):
            assert cname == name and cb.dtype == b.dtype
            np.testing.assert_array_equal(cb.numpy(), b.numpy())
        np.testing.assert_array_equal(c(x).numpy(), net(x).numpy())
        before = [p.numpy().copy() for p in net.parameters()]
        opt = optim.SGD(c.parameters(), lr=0.5)
        c(x).sum().backward()
        opt.step()
        assert not np.array_equal(c.conv.weight.numpy(), before[0])
        for p, old in zip(net.parameters(), before):
            np.testing.assert_array_equal(p.numpy(), old)
        t = make(tied)
        assert t[1].weight is t[0].weight and len(list(t.parameters())) == 2
    sd = pickle.loads(pickle.dumps(net.state_dict()))
    fresh = Net()
    fresh.load_state_dict(sd)
    fresh.eval(), net.eval()
    np.testing.assert_array_equal(fresh(x).numpy(), net(x).numpy())


def test_module_to_float64_and_requires_grad():
    m = mlp().to(lt.float64)
    assert all(p.dtype == lt.float64 for p in m.parameters())
    assert all(isinstance(p, nn.Parameter) and p.requires_grad for p in m.parameters())
    m.requires_grad_(False)
    assert not any(p.requires_grad for p in m.parameters())


# ---- initialization ---------------------------------------------------------------------------------


def test_default_initialization_matches_torch_distributions():
    lt.manual_seed(0)
    fan_in = 200
    w = nn.Linear(fan_in, 300).weight.numpy()
    bound = 1 / math.sqrt(fan_in)
    assert w.min() >= -bound and w.max() <= bound
    assert abs(w.std() - bound / math.sqrt(3)) < 0.01 * bound
    assert abs(w.mean()) < 0.01 * bound
    conv = nn.Conv2d(4, 64, 3, groups=2)
    b = 1 / math.sqrt(2 * 9)
    assert conv.weight.shape == (64, 2, 3, 3) and np.abs(conv.weight.numpy()).max() <= b
    assert np.abs(conv.bias.numpy()).max() <= b
    e = nn.Embedding(1000, 64).weight.numpy()
    assert abs(e.std() - 1) < 0.02 and abs(e.mean()) < 0.02
    ln, bn = nn.LayerNorm(5), nn.BatchNorm2d(3)
    check(ln.weight, np.ones(5, np.float32))
    check(bn.bias, np.zeros(3, np.float32))
    check(bn.running_var, np.ones(3, np.float32))


def test_init_functions():
    lt.manual_seed(1)
    t = nn.Parameter(lt.zeros(400, 300))
    std = math.sqrt(2.0 / (400 + 300))
    assert abs(nn.init.xavier_normal_(t).numpy().std() - std) < 0.02 * std
    assert abs(nn.init.kaiming_normal_(t, nonlinearity="relu").numpy().std() - math.sqrt(2 / 300)) < 0.002
    bound = math.sqrt(6 / 300)
    u = nn.init.kaiming_uniform_(t, nonlinearity="relu").numpy()
    assert u.min() >= -bound and u.max() <= bound
    v = nn.init.trunc_normal_(t, std=0.5, a=-1, b=1).numpy()
    assert v.min() >= -1 and v.max() <= 1 and abs(v.mean()) < 0.01
    assert abs(v.std() - 0.5 * 0.8796256610) < 0.003  # a standard normal truncated at +-2 has std 0.8796
    check(nn.init.constant_(t, 0.25)[0, :3], np.full(3, 0.25, np.float32))
    assert t.is_realized
    assert nn.init.calculate_gain("tanh") == 5 / 3


@pytest.mark.parametrize("shape", [(3, 5), (5, 3), (4, 4), (6, 2, 2, 2), (2, 3, 4)], ids=str)
def test_orthogonal_init_is_orthonormal(shape):
    """Rows orthonormal where fewer than the (flattened, as torch's) columns, else columns; times the gain."""
    lt.manual_seed(3)
    t = nn.Parameter(lt.zeros(shape))
    assert nn.init.orthogonal_(t, gain=1.5) is t and t.is_realized and t.requires_grad
    w = t.numpy().reshape(shape[0], -1).astype(np.float64)
    gram = w @ w.T if w.shape[0] < w.shape[1] else w.T @ w
    np.testing.assert_allclose(gram, 2.25 * np.eye(len(gram)), atol=2e-6)
    first = w.copy()
    assert not np.allclose(nn.init.orthogonal_(t).numpy().reshape(w.shape), first / 1.5)  # a new draw
    assert nn.init.orthogonal_(lt.zeros((0, 3))).shape == (0, 3)
    with pytest.raises(ValueError):
        nn.init.orthogonal_(lt.zeros(4))


@pytest.mark.parametrize("shape, groups", [((4, 4), 1), ((3, 5), 1), ((5, 3), 1), ((6, 3, 3), 1), ((4, 2, 3, 3), 2),
                                           ((6, 4, 2, 3, 5), 3), ((2, 5, 4, 4), 1)], ids=str)
def test_eye_and_dirac_init_are_torchs(shape, groups):
    if len(shape) == 2:
        check(nn.init.eye_(lt.zeros(shape)), torch.nn.init.eye_(torch.zeros(shape)))
        with pytest.raises(ValueError):
            nn.init.dirac_(lt.zeros(shape))
        return
    t = nn.Parameter(lt.ones(shape, dtype=lt.float64))
    assert nn.init.dirac_(t, groups) is t and t.is_realized
    check(t, torch.nn.init.dirac_(torch.ones(shape, dtype=torch.float64), groups))
    with pytest.raises(ValueError):
        nn.init.eye_(lt.zeros(shape))
    with pytest.raises(ValueError):
        nn.init.dirac_(lt.zeros(shape), shape[0] + 1)


# ---- the training example ----------------------------------------------------------------------------


def test_digits_example_trains(capsys):
    """examples/train_digits.py's training loop on digit-like data made here (scikit-learn is only an extra
    of the examples): the loss falls within a few steps."""
    import importlib.util
    from pathlib import Path
    path = Path(__file__).resolve().parent.parent / "examples" / "train_digits.py"
    spec = importlib.util.spec_from_file_location("train_digits", path)
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    rng = np.random.default_rng(0)
    prototypes = rng.random((10, 1, 8, 8)).astype(np.float32)
    y = rng.integers(0, 10, 256)
    x = (prototypes[y] + 0.3 * rng.standard_normal((256, 1, 8, 8))).astype(np.float32)
    lt.manual_seed(0)
    model = example.mlp()
    losses = example.train(model, x, y, epochs=2, batch_size=32, lr=1e-2)
    assert len(losses) == 16
    assert np.mean(losses[-4:]) < 0.5 * np.mean(losses[:2])
    out = capsys.readouterr().out
    assert "epoch  2/2 [########################] 8/8" in out
    assert "\r" not in out and out.count("\n") == 2  # not a terminal: one line per epoch, nothing redrawn
    assert example.accuracy(model, x, y) > 0.9


def test_cross_entropy_with_a_target_out_of_range_raises_index_error():
    """A target of 7 for 3 classes is an error, as in PyTorch, not a loss of 0.66: raised by the realize
    that computes the loss, naming the op and the line; `ignore_index` stays allowed."""
    logits = lt.asarray(random_array((4, 3), lt.float32))
    for bad in ([0, 7, 1, 2], [0, -1, 1, 2]):
        loss = F.cross_entropy(logits, lt.asarray(np.array(bad)))
        with pytest.raises(IndexError, match=r"cross_entropy: a target is outside \[0, 3\).*test_nn\.py:"):
            loss.item()
    with pytest.raises(IndexError, match="nll_loss"):
        F.nll_loss(logits.log_softmax(1), lt.asarray(np.array([3, 0, 0, 0]))).item()
    ok = F.cross_entropy(logits, lt.asarray(np.array([0, 2, -100, 1])))
    expected = torch.nn.functional.cross_entropy(torch.tensor(logits.numpy()), torch.tensor([0, 2, -100, 1]))
    np.testing.assert_allclose(ok.item(), expected.item(), rtol=1e-6)


def test_embedding_of_an_index_out_of_range_raises_index_error():
    """nn.Embedding(5, 2) of index 9 is an error, as in PyTorch, not a zero row."""
    emb = nn.Embedding(5, 2)
    for bad in ([1, 9], [-1, 0]):
        out = emb(lt.asarray(np.array(bad)))
        with pytest.raises(IndexError, match=r"embedding: an index is outside \[0, 5\)"):
            out.numpy()
    np.testing.assert_array_equal(emb(lt.asarray(np.array([4, 0]))).numpy(), emb.weight.numpy()[[4, 0]])


@pytest.mark.parametrize("dtype", [lt.int64, lt.int32, lt.uint8], ids=str)
@pytest.mark.parametrize("shape", [(), (5,), (3, 4), (0, 2)], ids=str)
def test_one_hot_as_torch(dtype, shape):
    for _, x, t in inputs(shape, dtype, seed=4):
        x, t = x % 4, (t % 4).long()  # torch takes int64 labels only
        check(F.one_hot(x, 5), torch.nn.functional.one_hot(t, 5))
        if x.numel():
            check(F.one_hot(x), torch.nn.functional.one_hot(t))  # as many classes as the largest label says


def test_one_hot_of_a_label_out_of_range_raises_index_error():
    with pytest.raises(IndexError, match=r"one_hot: a label is outside \[0, 3\)"):
        F.one_hot(lt.asarray(np.array([0, 3])), 3).numpy()
    np.testing.assert_array_equal(F.one_hot(lt.asarray(np.array([2, 0])), 3).numpy(), [[0, 0, 1], [1, 0, 0]])


def test_module_to_a_device_moves_its_parameters_in_place():
    """As PyTorch's: `model.to(device)` moves every parameter, buffer and gradient, keeping the tensor objects (an
    optimizer made before holds them)."""
    model = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4))
    params = list(model.parameters())
    before = [p.numpy().copy() for p in params]
    model[0].weight.grad = lt.ones((4, 3))
    assert model.to("cpu") is model
    assert [p is q for p, q in zip(model.parameters(), params)] == [True] * len(params)
    assert all(t.device == "cpu" for t in [*model.parameters(), *model.buffers()]) and model[0].weight.grad.device == "cpu"
    for p, b in zip(params, before):
        np.testing.assert_array_equal(p.numpy(), b)
    out = model(lt.asarray(random_array((5, 3), lt.float32), device="cpu"))
    assert out.device == "cpu" and out.shape == (5, 4)


def test_forward_hooks_as_pytorch():
    """register_forward_pre_hook / register_forward_hook: called around forward, replacing the arguments or the
    output when they return something, in order (prepend first), removable by their handle."""
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU())
    tmodel = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU())
    tmodel.load_state_dict({k: torch.tensor(v.numpy()) for k, v in model.state_dict().items()})
    seen = []
    for m, lib in ((model, "lt"), (tmodel, "torch")):
        h1 = m[0].register_forward_pre_hook(lambda mod, args: (args[0] * 2,))
        h2 = m[0].register_forward_hook(lambda mod, args, out, lib=lib: seen.append((lib, tuple(out.shape))))
        h3 = m.register_forward_hook(lambda mod, args, out: out + 1, prepend=True)
        h4 = m[1].register_forward_pre_hook(lambda mod, args, kwargs: ((args[0] - 0.5,), kwargs), with_kwargs=True)
        if lib == "lt":
            handles = (h1, h2, h3, h4)
    x = random_array((5, 3), lt.float32)
    check(model(lt.asarray(x)), tmodel(torch.tensor(x)))
    assert seen == [("lt", (5, 4)), ("torch", (5, 4))]
    for h in handles:
        h.remove()
    np.testing.assert_allclose(model(lt.asarray(x)).numpy(), model.forward(lt.asarray(x)).numpy())
    with model.register_forward_hook(lambda mod, args, out: out * 0):
        assert not model(lt.asarray(x)).numpy().any()
    assert model(lt.asarray(x)).numpy().any()


def _two_forward(self, x, scale, y):
    """Two tensor arguments around a number, two outputs."""
    return x * y + scale, x.sin()


class _LtTwo(nn.Module):
    forward = _two_forward


class _TorchTwo(torch.nn.Module):
    forward = _two_forward


def _values(grads):
    return [None if g is None else g.detach().numpy() if isinstance(g, torch.Tensor) else g.numpy() for g in grads]


@pytest.mark.parametrize("replace", [False, True])
def test_full_backward_hooks_as_pytorch(replace):
    """register_full_backward_pre_hook sees (and may replace) the gradients of all the outputs at once,
    register_full_backward_hook those of all the tensor inputs with them, once per backward; replacing them
    changes what flows on as PyTorch's does. An input that needs no gradient has None."""
    a, b = random_array((3, 4), lt.float32, 1), random_array((3, 4), lt.float32, 2)
    model, tmodel = nn.Sequential(nn.Linear(4, 4), nn.Tanh()), torch.nn.Sequential(torch.nn.Linear(4, 4),
                                                                                     torch.nn.Tanh())
    tmodel.load_state_dict({k: torch.tensor(v.numpy()) for k, v in model.state_dict().items()})
    seen = {"lt": [], "torch": []}
    for lib, m, two, mk in (("lt", model, _LtTwo(), lambda v: lt.asarray(v).requires_grad_()),
                            ("torch", tmodel, _TorchTwo(), lambda v: torch.tensor(v, requires_grad=True))):
        def pre(mod, grad_output, lib=lib):
            seen[lib].append(("pre", _values(grad_output)))
            return (grad_output[0] * 2, grad_output[1]) if replace else None

        def full(mod, grad_input, grad_output, lib=lib):
            seen[lib].append(("full", _values(grad_input), _values(grad_output)))
            return (grad_input[0] - 1, None, grad_input[2] * 0.5) if replace else None

        two.register_full_backward_pre_hook(pre)
        two.register_full_backward_hook(full)
        m[1].register_full_backward_hook(lambda mod, gi, go, lib=lib: seen[lib].append(("tanh", _values(gi))))
        x, y = mk(a), mk(b)
        u, v = two(m(x), 0.5, y)
        (u * v).sum().backward()
        seen[lib].append(("grads", _values([x.grad, y.grad, m[0].weight.grad])))
        with torch.no_grad() if lib == "torch" else lt.no_grad():
            two(mk(a), 1.0, mk(b))  # no record, no hook
    assert [e[0] for e in seen["lt"]] == [e[0] for e in seen["torch"]] == ["pre", "full", "tanh", "grads"]
    for got, want in zip(seen["lt"], seen["torch"]):
        for g, w in zip(got[1:], want[1:]):
            for gv, wv in zip(g, w):
                assert (gv is None) == (wv is None)
                if gv is not None:
                    np.testing.assert_allclose(gv, wv, rtol=1e-5, atol=1e-6)


@pytest.mark.filterwarnings("ignore:Full backward hook is firing")  # torch's note of this very case
def test_full_backward_hook_of_inputs_that_need_no_gradient():
    """PyTorch calls the hook with None for each input when none needs a gradient (the parameters' do)."""
    calls = []
    for m, x in ((nn.Linear(3, 2), lt.ones((4, 3))), (torch.nn.Linear(3, 2), torch.ones(4, 3))):
        h = m.register_full_backward_hook(lambda mod, gi, go: calls.append((gi, tuple(go[0].shape))))
        m(x).sum().backward()
        h.remove()
        m(x).sum().backward()
    assert calls == [((None,), (4, 2)), ((None,), (4, 2))]


def test_apply_and_register_buffer_as_pytorch():
    """Module.apply visits each child's sub-modules, then the child, then the module (post-order), as torch's;
    buffers: persistent ones in the state dict, a re-registration's `persistent` the one that holds, None
    buffers left out, all of them in `buffers()` and moved by `.to`."""
    def build(lib):
        inner = lib.Sequential(lib.Linear(2, 2), lib.ReLU())
        return lib.Sequential(lib.Sequential(inner, lib.Tanh()), lib.Linear(2, 3), inner)

    orders = []
    for lib in (nn, torch.nn):
        model, order = build(lib), []
        assert model.apply(lambda m, order=order: order.append(type(m).__name__)) is model
        orders.append(order)
    assert orders[0] == orders[1]
    states = []
    for lib, mk in ((nn, lambda v: lt.asarray(np.array(v, np.float32))), (torch.nn, lambda v: torch.tensor(v))):
        m = lib.Linear(2, 2)
        m.register_buffer("running", mk([1.0, 2.0]))
        m.register_buffer("scratch", mk([3.0]), persistent=False)
        m.register_buffer("nothing", None)
        m.register_buffer("flip", mk([4.0]), persistent=False)
        m.register_buffer("flip", mk([5.0]))  # persistent now
        states.append((sorted(m.state_dict()), sorted(n for n, _ in m.named_buffers()),
                       m.flip.numpy().tolist(), m.to(lt.float64 if lib is nn else torch.float64).running.dtype))
    (keys, bufs, flip, dtype), (tkeys, tbufs, tflip, tdtype) = states
    assert (keys, bufs, flip) == (tkeys, tbufs, tflip) and dtype == lt.float64 and tdtype == torch.float64


def test_module_half_and_bfloat16():
    model = nn.Linear(3, 2)
    assert model.half() is model and model.weight.dtype == lt.float16 and model.bias.dtype == lt.float16
    assert model.bfloat16().weight.dtype == lt.bfloat16


def test_module_ops_name_the_users_line():
    """A built-in module's ops name the user's call of it; a user's module (or subclass of a built-in one), the
    user's lines inside it, as errors and lt.explain show them."""
    class Doubled(lt.nn.Linear):
        def forward(self, x):
            return super().forward(x) * 2.0  # marker: subclass

    class Block(lt.nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = lt.nn.Linear(3, 3)

        def forward(self, x):
            return self.inner(x).relu()  # marker: block

    linear, doubled, block = lt.nn.Linear(3, 3), Doubled(3, 3), Block()
    for m in (linear, doubled, block):
        lt.realize(*m.parameters())
    x = [lt.asarray(np.ones((2, 3), dtype=np.float32)).realize() for _ in range(3)]  # one each: no shared views
    y = linear(x[0])  # marker: call
    assert graph_lines(y) == {marked_line(__file__, "# marker: call")}
    assert graph_lines(doubled(x[1])) == {marked_line(__file__, "# marker: subclass")}
    assert graph_lines(block(x[2])) == {marked_line(__file__, "# marker: block")}


def _containers(lib):
    """The same containers built and edited in PyTorch's nn and ours."""
    seq = lib.Sequential(lib.Linear(2, 3), lib.ReLU(), lib.Linear(3, 2))
    seq.insert(1, lib.Tanh())
    seq.extend([lib.Identity()])
    popped = seq.pop(0)
    del seq[-1]
    layers = lib.ModuleList([lib.Linear(2, 2) for _ in range(3)])
    layers.insert(0, lib.ReLU())
    layers += [lib.Tanh()]
    del layers[1]
    heads = lib.ModuleDict({"a": lib.Linear(2, 4)})
    heads["b"] = lib.Linear(2, 1)
    heads.update([("c", lib.ReLU())])
    scales = lib.ParameterList([lib.Parameter(lib_tensor(lib, [1.0, 2.0]))])
    scales.append(lib.Parameter(lib_tensor(lib, [3.0])))
    table = lib.ParameterDict({"w": lib.Parameter(lib_tensor(lib, [[1.0]]))})
    model = lib.Module()
    for name, m in [("seq", seq), ("layers", layers), ("heads", heads), ("scales", scales), ("table", table),
                    ("unflat", lib.Unflatten(1, (2, -1)))]:
        model.add_module(name, m)
    return model, popped


def lib_tensor(lib, values):
    return torch.tensor(values) if lib is torch.nn else lt.asarray(np.array(values, np.float32))


def test_containers_hold_and_edit_modules_as_pytorchs():
    ours, popped = _containers(nn)
    theirs, their_popped = _containers(torch.nn)
    assert type(popped).__name__ == type(their_popped).__name__
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert [type(m).__name__ for m in ours.modules()] == [type(m).__name__ for m in theirs.modules()]
    assert [type(m).__name__ for m in ours.layers[1:]] == [type(m).__name__ for m in theirs.layers[1:]]
    assert list(ours.heads.keys()) == list(theirs.heads.keys()) and "b" in ours.heads and len(ours.heads) == 3
    assert [tuple(p.shape) for p in ours.scales] == [tuple(p.shape) for p in theirs.scales]
    assert ours.get_submodule("layers.1") is ours.layers[1]
    assert ours.get_parameter("table.w") is ours.table["w"]
    check(ours.unflat(lt.zeros(3, 6)), theirs.unflat(torch.zeros(3, 6)).numpy())
    with pytest.raises(AttributeError, match="nope"):
        ours.get_submodule("layers.nope")
    with pytest.raises(IndexError):
        ours.layers[7]


def test_parameters_in_containers_train():
    model = nn.Module()
    model.add_module("layers", nn.ModuleList([nn.Linear(2, 2), nn.Linear(2, 1)]))
    model.add_module("scale", nn.ParameterList([lt.ones(1)]))
    opt = lt.optim.SGD(model.parameters(), lr=0.1)
    x = lt.ones(4, 2)
    loss = (model.layers[1](model.layers[0](x)) * model.scale[0]).sum()
    loss.backward()
    opt.step()
    assert len(list(model.parameters())) == 5
    check(model.scale[0], 1 - 0.1 * loss.detach().numpy().reshape(1))


# name: (module, torch's, the input shapes); each module gets float64 inputs, its parameters torch's values.
# Built without drawing from torch's random numbers, which unseeded tests elsewhere in the file read.
with torch.random.fork_rng():
    APPLIED_MODULES = {
        "ReLU6": (nn.ReLU6(), torch.nn.ReLU6(), [(2, 5)]),
        "ELU": (nn.ELU(0.5), torch.nn.ELU(0.5), [(2, 5)]),
        "CELU": (nn.CELU(2.0), torch.nn.CELU(2.0), [(2, 5)]),
        "SELU": (nn.SELU(), torch.nn.SELU(), [(2, 5)]),
        "Hardswish": (nn.Hardswish(), torch.nn.Hardswish(), [(2, 5)]),
        "Mish": (nn.Mish(), torch.nn.Mish(), [(2, 5)]),
        "Softsign": (nn.Softsign(), torch.nn.Softsign(), [(2, 5)]),
        "LogSigmoid": (nn.LogSigmoid(), torch.nn.LogSigmoid(), [(2, 5)]),
        "Hardtanh": (nn.Hardtanh(-0.5, 2.0), torch.nn.Hardtanh(-0.5, 2.0), [(2, 5)]),
        "Softshrink": (nn.Softshrink(0.3), torch.nn.Softshrink(0.3), [(2, 5)]),
        "Softplus": (nn.Softplus(2.0, 3.0), torch.nn.Softplus(2.0, 3.0), [(2, 5)]),
        "Threshold": (nn.Threshold(0.1, 20.0), torch.nn.Threshold(0.1, 20.0), [(2, 5)]),
        "GLU": (nn.GLU(), torch.nn.GLU(), [(3, 4)]),
        "Softmin": (nn.Softmin(1), torch.nn.Softmin(1), [(3, 4)]),
        "PReLU": (nn.PReLU(3, dtype=F64), torch.nn.PReLU(3, 0.1, dtype=torch.float64), [(2, 3, 4)]),
        "CosineSimilarity": (nn.CosineSimilarity(), torch.nn.CosineSimilarity(), [(3, 4), (3, 4)]),
        "PairwiseDistance": (nn.PairwiseDistance(1.0), torch.nn.PairwiseDistance(1.0), [(3, 4), (3, 4)]),
        "ChannelShuffle": (nn.ChannelShuffle(3), torch.nn.ChannelShuffle(3), [(1, 6, 2)]),
        "Unflatten": (nn.Unflatten(1, (2, 3)), torch.nn.Unflatten(1, (2, 3)), [(2, 6)]),
        "AdaptiveMaxPool2d": (nn.AdaptiveMaxPool2d(2), torch.nn.AdaptiveMaxPool2d(2), [(1, 2, 5, 3)]),
        "LPPool1d": (nn.LPPool1d(2, 2), torch.nn.LPPool1d(2, 2), [(1, 2, 6)]),
        "LocalResponseNorm": (nn.LocalResponseNorm(2), torch.nn.LocalResponseNorm(2), [(1, 3, 4)]),
        "InstanceNorm1d": (nn.InstanceNorm1d(3), torch.nn.InstanceNorm1d(3), [(3, 5)]),
        "InstanceNorm2d": (nn.InstanceNorm2d(3, affine=True, dtype=F64),
                           torch.nn.InstanceNorm2d(3, affine=True, dtype=torch.float64), [(2, 3, 2, 3)]),
        "Bilinear": (nn.Bilinear(3, 2, 4, dtype=F64), torch.nn.Bilinear(3, 2, 4, dtype=torch.float64), [(5, 3), (5, 2)]),
        "HuberLoss": (nn.HuberLoss("sum", 0.5), torch.nn.HuberLoss("sum", 0.5), [(3, 4), (3, 4)]),
        "SmoothL1Loss": (nn.SmoothL1Loss(beta=0.5), torch.nn.SmoothL1Loss(beta=0.5), [(3, 4), (3, 4)]),
        "KLDivLoss": (nn.KLDivLoss("batchmean", log_target=True), torch.nn.KLDivLoss("batchmean", log_target=True),
                      [(3, 4), (3, 4)]),
        "PoissonNLLLoss": (nn.PoissonNLLLoss(), torch.nn.PoissonNLLLoss(), [(3, 4), (3, 4)]),
        "GaussianNLLLoss": (nn.GaussianNLLLoss(eps=0.5), torch.nn.GaussianNLLLoss(eps=0.5), [(3, 4), (3, 4), (3, 1)]),
        "TripletMarginLoss": (nn.TripletMarginLoss(swap=True), torch.nn.TripletMarginLoss(swap=True),
                              [(3, 4), (3, 4), (3, 4)]),
    }


@pytest.mark.parametrize("name", APPLIED_MODULES)
def test_modules_that_apply_a_function(name):
    m, tm, shapes = APPLIED_MODULES[name]
    copy_weights(m, tm)
    arrays = [random_array(s, F64, seed, low=0.1 if "Loss" in name else -3) for seed, s in enumerate(shapes)]
    xs = [lt.asarray(a).requires_grad_() for a in arrays]
    ts = [torch.tensor(a, requires_grad=True) for a in arrays]
    out, tout = m(*xs), tm(*ts)
    check(out, tout)
    out.sum().backward()
    tout.sum().backward()
    for x, t in zip(xs, ts):
        check(x.grad, t.grad)
    tparams = dict(tm.named_parameters())
    for pname, p in m.named_parameters():
        check(p.grad, tparams[pname].grad)
    assert repr(m).startswith(name)


def test_modules_with_class_targets_random_draws_and_defaults():
    x, t = random_array((3, 4), lt.float32), np.array([1, 0, 3])
    signs = np.array([1.0, -1.0, 1.0], np.float32)
    pairs = [(nn.MultiMarginLoss(margin=0.5), torch.nn.MultiMarginLoss(margin=0.5), lt.asarray(t), torch.tensor(t)),
             (nn.MultiLabelSoftMarginLoss(), torch.nn.MultiLabelSoftMarginLoss(), lt.asarray(x > 0).cast(lt.float32),
              torch.tensor(x > 0).float()),
             (nn.SoftMarginLoss(), torch.nn.SoftMarginLoss(), lt.asarray(np.sign(x)), torch.tensor(np.sign(x))),
             (nn.HingeEmbeddingLoss(), torch.nn.HingeEmbeddingLoss(), lt.asarray(np.sign(x)), torch.tensor(np.sign(x))),
             (nn.BCELoss(), torch.nn.BCELoss(), lt.asarray(x > 0).cast(lt.float32), torch.tensor(x > 0).float())]
    for m, tm, target, ttarget in pairs:
        inp = lt.asarray(x).sigmoid() if isinstance(m, nn.BCELoss) else lt.asarray(x)
        tinp = torch.tensor(x).sigmoid() if isinstance(m, nn.BCELoss) else torch.tensor(x)
        check(m(inp, target), tm(tinp, ttarget))
    check(nn.CosineEmbeddingLoss(0.1)(lt.asarray(x), lt.asarray(x[::-1].copy()), lt.asarray(signs)),
          torch.nn.CosineEmbeddingLoss(0.1)(torch.tensor(x), torch.tensor(x[::-1].copy()), torch.tensor(signs)))
    check(nn.MarginRankingLoss(0.2)(lt.asarray(x[0]), lt.asarray(x[1]), lt.asarray(np.sign(x[2]))),
          torch.nn.MarginRankingLoss(0.2)(torch.tensor(x[0]), torch.tensor(x[1]), torch.tensor(np.sign(x[2]))))
    bag, tbag = nn.EmbeddingBag(5, 3, mode="sum", sparse=False), torch.nn.EmbeddingBag(5, 3, mode="sum", sparse=False)
    copy_weights(bag, tbag)
    check(bag(lt.asarray([1, 2, 4, 4]), lt.asarray([0, 1])), tbag(torch.tensor([1, 2, 4, 4]), torch.tensor([0, 1])))
    for module in (nn.Embedding, nn.EmbeddingBag):
        with pytest.raises(NotImplementedError, match="sparse gradients are not supported"):
            module(5, 3, sparse=True)
    prelu = nn.PReLU()
    assert prelu.weight.shape == (1,) and float(prelu.weight.numpy()[0]) == 0.25
    for module, shape in ((nn.Dropout1d(0.3), (2, 3, 2)), (nn.Dropout2d(), (3, 2, 2)), (nn.Dropout3d(), (2, 3, 2, 2, 2)),
                          (nn.AlphaDropout(0.2), (5,)), (nn.RReLU(), (3, 4))):
        module.eval()
        y = lt.asarray(random_array(shape, lt.float32))
        expected = y.numpy() if not isinstance(module, nn.RReLU) else np.where(y.numpy() >= 0, y.numpy(),
                                                                             y.numpy() * (1 / 8 + 1 / 3) / 2)
        np.testing.assert_allclose(module(y).numpy(), expected, rtol=1e-6)
    drop = nn.Dropout2d(0.5)
    kept = drop(lt.ones((4, 16, 3, 3))).numpy()
    assert set(np.unique(kept)) <= {0.0, 2.0} and (kept == kept[:, :, :1, :1]).all()
    with pytest.raises(ValueError):
        nn.Dropout2d(1.5)
    inorm = nn.InstanceNorm1d(3, track_running_stats=True)
    tinorm = torch.nn.InstanceNorm1d(3, track_running_stats=True)
    a = random_array((2, 3, 5), lt.float32)
    check(inorm(lt.asarray(a)), tinorm(torch.tensor(a)))
    check(inorm.running_var, tinorm.running_var)
    inorm.eval()
    tinorm.eval()
    check(inorm(lt.asarray(a)), tinorm(torch.tensor(a)))


@pytest.mark.parametrize("dtype", [np.uint8, np.int8, np.int16, np.uint16])
def test_narrow_integer_labels_against_many_classes(dtype):
    logits = random_array((3, 300), F64, seed=38)
    labels = np.array([0, 120, 7], dtype)
    want = torch.nn.functional.cross_entropy(torch.tensor(logits), torch.tensor(labels.astype(np.int64)))
    check(F.cross_entropy(lt.asarray(logits), lt.asarray(labels)), want)
    check(F.nll_loss(lt.asarray(logits), lt.asarray(labels)),
          torch.nn.functional.nll_loss(torch.tensor(logits), torch.tensor(labels.astype(np.int64))))
    check(F.one_hot(lt.asarray(labels), 300), torch.nn.functional.one_hot(torch.tensor(labels.astype(np.int64)), 300))
