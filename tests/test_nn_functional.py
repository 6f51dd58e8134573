"""`nn.functional`'s activations, distances, pooling, normalizations and losses against torch's: values in
float64 and float32, gradients, reductions, broadcasting, non-contiguous and size-0 inputs, errors."""
from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as TF
from test_autograd import check_grads

import lazytensor as lt
from conftest import TORCH_DTYPES, check, random_array
from lazytensor.errors import ShapeError
from lazytensor.nn import functional as F

UNIT = {"low": 0.05, "high": 0.95}
POSITIVE = {"low": 0.2, "high": 3}


def _signs(shape, seed=5):
    return np.where(random_array(shape, lt.bool_, seed), 1.0, -1.0)


# name: (lazytensor, torch, the shapes of the random float arguments, their range)
FUNCTIONS = {
    "hardtanh": (lambda x: F.hardtanh(x, -2.0, 1.5), lambda x: TF.hardtanh(x, -2.0, 1.5), [(3, 5)], {}),
    "relu6": (lambda x: F.relu6(x * 3), lambda x: TF.relu6(x * 3), [(3, 5)], {}),
    "hardswish": (lambda x: F.hardswish(x * 2), lambda x: TF.hardswish(x * 2), [(3, 5)], {}),
    "hardshrink": (lambda x: F.hardshrink(x, 1.0), lambda x: TF.hardshrink(x, 1.0), [(3, 5)], {}),
    "softshrink": (lambda x: F.softshrink(x), lambda x: TF.softshrink(x), [(3, 5)], {}),
    "tanhshrink": (F.tanhshrink, TF.tanhshrink, [(3, 5)], {}),
    "softsign": (F.softsign, TF.softsign, [(3, 5)], {}),
    "threshold": (lambda x: F.threshold(x, 0.5, -3.0), lambda x: TF.threshold(x, 0.5, -3.0), [(3, 5)], {}),
    "logsigmoid": (lambda x: F.logsigmoid(x * 20), lambda x: TF.logsigmoid(x * 20), [(3, 5)], {}),
    "mish": (F.mish, TF.mish, [(3, 5)], {}),
    "selu": (F.selu, TF.selu, [(3, 5)], {}),
    "celu": (lambda x: F.celu(x, 0.5), lambda x: TF.celu(x, 0.5), [(3, 5)], {}),
    "glu": (lambda x: F.glu(x, 0), lambda x: TF.glu(x, 0), [(4, 3)], {}),
    "prelu": (F.prelu, TF.prelu, [(2, 3, 4), (3,)], {}),
    "prelu_shared": (F.prelu, TF.prelu, [(2, 3), (1,)], {}),
    "rrelu_eval": (F.rrelu, TF.rrelu, [(3, 5)], {}),
    "softmin": (lambda x: F.softmin(x, 0), lambda x: TF.softmin(x, 0), [(3, 5)], {}),
    "normalize": (F.normalize, TF.normalize, [(3, 4, 2)], {}),
    "normalize_p1": (lambda x: F.normalize(x, 1.0, -1), lambda x: TF.normalize(x, 1.0, -1), [(3, 4)], {}),
    "cosine_similarity": (F.cosine_similarity, TF.cosine_similarity, [(3, 4), (1, 4)], {}),
    "cosine_similarity_dim": (lambda a, b: F.cosine_similarity(a, b, dim=-1),
                              lambda a, b: TF.cosine_similarity(a, b, dim=-1), [(2, 3, 4), (3, 4)], {}),
    "pairwise_distance": (F.pairwise_distance, TF.pairwise_distance, [(3, 4), (3, 4)], {}),
    "pairwise_distance_p1": (lambda a, b: F.pairwise_distance(a, b, 1.0, keepdim=True),
                             lambda a, b: TF.pairwise_distance(a, b, 1.0, keepdim=True), [(3, 4), (4,)], {}),
    "pdist": (F.pdist, TF.pdist, [(4, 3)], {}),
    "pdist_p3": (lambda x: F.pdist(x, 3), lambda x: TF.pdist(x, 3), [(3, 2)], {}),
    "cdist": (F.cdist, torch.cdist, [(2, 4, 3), (5, 3)], {}),
    "cdist_p1": (lambda a, b: lt.cdist(a, b, 1.0), lambda a, b: torch.cdist(a, b, 1.0), [(4, 3), (2, 1, 5, 3)], {}),
    "cdist_p3": (lambda a, b: lt.cdist(a, b, 3.5), lambda a, b: torch.cdist(a, b, 3.5), [(3, 2), (4, 2)], {}),
    "cdist_inf": (lambda a, b: lt.cdist(a, b, float("inf")), lambda a, b: torch.cdist(a, b, float("inf")),
                  [(3, 2), (4, 2)], {}),
    "bilinear": (F.bilinear, TF.bilinear, [(3, 4), (3, 2), (5, 4, 2), (5,)], {}),
    "channel_shuffle": (lambda x: F.channel_shuffle(x, 2), lambda x: TF.channel_shuffle(x, 2), [(2, 6, 3)], {}),
    "adaptive_max_pool1d": (lambda x: F.adaptive_max_pool1d(x, 3), lambda x: TF.adaptive_max_pool1d(x, 3),
                            [(2, 3, 7)], {}),
    "adaptive_max_pool2d": (lambda x: F.adaptive_max_pool2d(x, (2, None)),
                            lambda x: TF.adaptive_max_pool2d(x, (2, None)), [(2, 5, 3)], {}),
    "adaptive_max_pool2d_up": (lambda x: F.adaptive_max_pool2d(x, 4), lambda x: TF.adaptive_max_pool2d(x, 4),
                               [(1, 2, 3, 5)], {}),
    "lp_pool1d": (lambda x: F.lp_pool1d(x, 2, 3), lambda x: TF.lp_pool1d(x, 2, 3), [(2, 3, 7)], POSITIVE),
    "lp_pool2d": (lambda x: F.lp_pool2d(x, 3, 2, 1, True), lambda x: TF.lp_pool2d(x, 3, 2, 1, True),
                  [(2, 3, 3)], POSITIVE),
    "instance_norm": (F.instance_norm, TF.instance_norm, [(2, 3, 5)], {}),
    "instance_norm_affine": (lambda x, w, b: F.instance_norm(x, weight=w, bias=b),
                             lambda x, w, b: TF.instance_norm(x, weight=w, bias=b), [(2, 3, 2, 2), (3,), (3,)], {}),
    "local_response_norm": (lambda x: F.local_response_norm(x, 3, 0.5), lambda x: TF.local_response_norm(x, 3, 0.5),
                            [(2, 5, 3)], {}),
    "local_response_norm_2d": (lambda x: F.local_response_norm(x, 2), lambda x: TF.local_response_norm(x, 2),
                               [(1, 4, 2, 3)], {}),
    "huber_loss": (lambda a, b: F.huber_loss(a, b, delta=0.7), lambda a, b: TF.huber_loss(a, b, delta=0.7),
                   [(3, 4), (4,)], {}),
    "smooth_l1_loss": (lambda a, b: F.smooth_l1_loss(a, b, reduction="sum", beta=0.5),
                       lambda a, b: TF.smooth_l1_loss(a, b, reduction="sum", beta=0.5), [(3, 4), (3, 4)], {}),
    "smooth_l1_loss_beta0": (lambda a, b: F.smooth_l1_loss(a, b, beta=0.0),
                             lambda a, b: TF.smooth_l1_loss(a, b, beta=0.0), [(3, 4), (3, 4)], {}),
    "kl_div": (lambda a, b: F.kl_div(a.log_softmax(1), b, reduction="batchmean"),
               lambda a, b: TF.kl_div(a.log_softmax(1), b, reduction="batchmean"), [(3, 4), (3, 4)], UNIT),
    "kl_div_log_target": (lambda a, b: F.kl_div(a, b, reduction="none", log_target=True),
                          lambda a, b: TF.kl_div(a, b, reduction="none", log_target=True), [(3, 4), (3, 4)], {}),
    "poisson_nll_loss": (lambda a, b: F.poisson_nll_loss(a, b * 3, full=True),
                         lambda a, b: TF.poisson_nll_loss(a, b * 3, full=True), [(3, 4), (3, 4)], UNIT),
    "poisson_nll_loss_rate": (lambda a, b: F.poisson_nll_loss(a, b, log_input=False, reduction="sum"),
                              lambda a, b: TF.poisson_nll_loss(a, b, log_input=False, reduction="sum"),
                              [(3, 4), (3, 4)], POSITIVE),
    "gaussian_nll_loss": (lambda a, b, v: F.gaussian_nll_loss(a, b, v, full=True, eps=0.3),
                          lambda a, b, v: TF.gaussian_nll_loss(a, b, v, full=True, eps=0.3), [(3, 4), (3, 4), (3, 4)],
                          UNIT),
    "gaussian_nll_loss_one_var": (lambda a, b, v: F.gaussian_nll_loss(a, b, v, reduction="none"),
                                  lambda a, b, v: TF.gaussian_nll_loss(a, b, v, reduction="none"),
                                  [(3, 4), (3, 4), (3, 1)], UNIT),
    "cosine_embedding_loss": (lambda a, b: F.cosine_embedding_loss(a, b, lt.asarray(_signs(3)), 0.2),
                              lambda a, b: TF.cosine_embedding_loss(a, b, torch.tensor(_signs(3)), 0.2),
                              [(3, 4), (3, 4)], {}),
    "hinge_embedding_loss": (lambda a: F.hinge_embedding_loss(a, lt.asarray(_signs((3, 4)))),
                             lambda a: TF.hinge_embedding_loss(a, torch.tensor(_signs((3, 4)))), [(3, 4)], {}),
    "margin_ranking_loss": (lambda a, b: F.margin_ranking_loss(a, b, lt.asarray(_signs(5)), 0.5),
                            lambda a, b: TF.margin_ranking_loss(a, b, torch.tensor(_signs(5)), 0.5), [(5,), (5,)],
                            {}),
    "soft_margin_loss": (lambda a: F.soft_margin_loss(a, lt.asarray(_signs((3, 4))).cast(a.dtype)),
                         lambda a: TF.soft_margin_loss(a, torch.tensor(_signs((3, 4))).to(a.dtype)), [(3, 4)], {}),
    "multilabel_soft_margin_loss": (lambda a, b, w: F.multilabel_soft_margin_loss(a, b.round(), w),
                                    lambda a, b, w: TF.multilabel_soft_margin_loss(a, b.round(), w),
                                    [(3, 4), (3, 4), (4,)], UNIT),
    "triplet_margin_loss": (F.triplet_margin_loss, TF.triplet_margin_loss, [(3, 4), (3, 4), (3, 4)], {}),
    "triplet_margin_loss_swap": (lambda a, p, n: F.triplet_margin_loss(a, p, n, 2.0, 1, swap=True),
                                 lambda a, p, n: TF.triplet_margin_loss(a, p, n, 2.0, 1, swap=True),
                                 [(3, 4), (3, 4), (3, 4)], {}),
    "multi_margin_loss": (lambda a: F.multi_margin_loss(a, lt.asarray([1, 0, 3]), 2, 0.5,
                                                        lt.asarray([0.5, 2.0, 1.0, 3.0]).cast(a.dtype)),
                          lambda a: TF.multi_margin_loss(a, torch.tensor([1, 0, 3]), 2, 0.5,
                                                         torch.tensor([0.5, 2.0, 1.0, 3.0]).to(a.dtype)), [(3, 4)], {}),
    "multi_margin_loss_1d": (lambda a: F.multi_margin_loss(a, lt.asarray([2]), reduction="none"),
                             lambda a: TF.multi_margin_loss(a, torch.tensor([2]), reduction="none"), [(4,)], {}),
    "embedding_bag": (lambda w: F.embedding_bag(lt.asarray([[0, 2, 2], [4, 1, 0]]), w),
                      lambda w: TF.embedding_bag(torch.tensor([[0, 2, 2], [4, 1, 0]]), w), [(5, 3)], {}),
    "embedding_bag_offsets": (
        lambda w, s: F.embedding_bag(lt.asarray([0, 2, 2, 4, 1]), w, lt.asarray([0, 2, 2, 5]), mode="sum",
                                     per_sample_weights=s, include_last_offset=True),
        lambda w, s: TF.embedding_bag(torch.tensor([0, 2, 2, 4, 1]), w, torch.tensor([0, 2, 2, 5]), mode="sum",
                                      per_sample_weights=s, include_last_offset=True), [(5, 3), (5,)], {}),
    "embedding_bag_max": (lambda w: F.embedding_bag(lt.asarray([0, 2, 3, 4, 1]), w, lt.asarray([0, 3, 3]),
                                                    mode="max", padding_idx=4),
                          lambda w: TF.embedding_bag(torch.tensor([0, 2, 3, 4, 1]), w, torch.tensor([0, 3, 3]),
                                                     mode="max", padding_idx=4), [(5, 3)], {}),
}


@pytest.mark.parametrize("name", FUNCTIONS)
def test_functions_against_torch_with_gradients(name):
    f, g, shapes, rng = FUNCTIONS[name]
    arrays = [random_array(s, lt.float64, seed, **rng) for seed, s in enumerate(shapes)]
    check_grads(f, g, arrays, kinds=("transposed",) if len(shapes[0]) > 1 else ("contiguous",))
    check(f(*(lt.asarray(a.astype(np.float32)) for a in arrays)),
          g(*(torch.tensor(a.astype(np.float32)) for a in arrays)), rtol=1e-4, atol=1e-5)


def test_cdist_p0_equal_rows_empty_and_more_rows_than_torchs_matmul_threshold():
    """p = 0 counts differing coordinates; equal rows are 0 apart with a 0 gradient at p = 2 (torch's); past 25
    rows torch switches to |a|**2 + |b|**2 - 2 a.b, which cancels, and lazytensor does not."""
    a = np.round(random_array((2, 3, 4), lt.float64, seed=20))
    b = np.round(random_array((2, 5, 4), lt.float64, seed=21))
    check(lt.cdist(lt.asarray(a), lt.asarray(b), 0.0), torch.cdist(torch.tensor(a), torch.tensor(b), 0.0))
    b[:, 1] = a[:, 0]
    x, y = lt.asarray(a).requires_grad_(), lt.asarray(b).requires_grad_()
    t, u = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
    out, expected = lt.cdist(x, y), torch.cdist(t, u)
    check(out, expected)
    out.sum().backward()
    expected.sum().backward()
    check(x.grad, t.grad)
    check(y.grad, u.grad)
    big = random_array((30, 3), lt.float32, seed=22)
    got = lt.cdist(lt.asarray(big), lt.asarray(big).flip(0))
    check(got, torch.cdist(torch.tensor(big), torch.tensor(big).flip(0), compute_mode="donot_use_mm_for_euclid_dist"))
    assert (np.diagonal(got.numpy()[::-1]) == 0).all()  # torch's matmul form gives up to 1e-3 there
    for p in (0.0, 2.0, float("inf")):
        check(lt.cdist(lt.zeros((3, 0)), lt.zeros((2, 0)), p), torch.cdist(torch.zeros((3, 0)), torch.zeros((2, 0)), p))
        check(lt.cdist(lt.zeros((0, 2)), lt.ones((4, 2)), p), torch.cdist(torch.zeros((0, 2)), torch.ones((4, 2)), p))
    check(lt.cdist(lt.asarray([[1, 2]]), lt.asarray([[4, 6]])), np.array([[5.0]], np.float32))  # ints as floats
    with pytest.raises(ShapeError):
        lt.cdist(lt.zeros((3, 2)), lt.zeros((3, 4)))
    with pytest.raises(ValueError):
        lt.cdist(lt.zeros((3, 2)), lt.zeros((3, 2)), -1.0)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_loss_reductions_and_broadcast_targets(reduction):
    a, b = random_array((2, 3), lt.float32, 1), random_array((3,), lt.float32, 2)
    for name in ("huber_loss", "smooth_l1_loss", "kl_div", "soft_margin_loss", "hinge_embedding_loss"):
        check(getattr(F, name)(lt.asarray(a), lt.asarray(b), reduction=reduction),
              getattr(TF, name)(torch.tensor(a), torch.tensor(b), reduction=reduction))
    empty = lt.zeros((0, 3))
    check(F.huber_loss(empty, empty, reduction=reduction), TF.huber_loss(torch.zeros(0, 3), torch.zeros(0, 3),
                                                                         reduction=reduction))
    with pytest.raises(ValueError, match="reduction"):
        F.huber_loss(lt.asarray(a), lt.asarray(a), reduction="avg")


def test_activations_keep_dtypes_and_take_0d_and_size_0():
    for dtype, tdtype in ((lt.float32, torch.float32), (lt.float64, torch.float64)):
        for shape in ((), (0, 3)):
            x, t = lt.zeros(shape, dtype=dtype) + 0.5, torch.zeros(shape, dtype=tdtype) + 0.5
            for name in ("hardtanh", "hardsigmoid", "hardswish", "hardshrink", "softshrink", "tanhshrink",
                         "softsign", "logsigmoid", "mish", "selu", "celu", "softmin"):
                check(getattr(F, name)(x), getattr(TF, name)(t))
    x, t = lt.asarray(np.arange(-4, 5)), torch.arange(-4, 5)
    check(F.hardtanh(x, -2, 3), TF.hardtanh(t, -2, 3))
    check(F.threshold(x, 1, 7), TF.threshold(t, 1, 7))
    check(F.hardswish(lt.asarray([-3.0, 3.0]).requires_grad_()), TF.hardswish(torch.tensor([-3.0, 3.0])))
    x = lt.asarray([-3.0, 3.0]).requires_grad_()
    t = torch.tensor([-3.0, 3.0], requires_grad=True)
    F.hardswish(x).sum().backward()
    TF.hardswish(t).sum().backward()
    check(x.grad, t.grad)


def test_hardsigmoid_and_its_exact_gradient():
    # torch's float64 backward multiplies by a float32 1/6, so the gradient is checked against the exact one
    a = random_array((3, 5), lt.float64, 1) * 2
    for dtype in (lt.float32, lt.float64):
        check(F.hardsigmoid(lt.asarray(a).cast(dtype)), TF.hardsigmoid(torch.tensor(a).to(TORCH_DTYPES[dtype])))
    x = lt.asarray(a).requires_grad_()
    F.hardsigmoid(x).sum().backward()
    check(x.grad, np.where(np.abs(a) < 3, 1 / 6, 0.0))


def test_random_functions():
    lt.manual_seed(0)
    x = lt.asarray(random_array((64, 8, 4), lt.float32)) + 10
    out = F.dropout2d(x, 0.25).numpy()
    kept = (out != 0).reshape(64, 8, 4)
    assert (kept == kept[:, :, :1]).all() and 0.5 < kept.mean() < 0.95
    np.testing.assert_allclose(out[kept], x.numpy()[kept] / 0.75, rtol=1e-6)
    assert F.dropout1d(x, 0.5, training=False) is x and F.dropout3d(x.reshape(64, 8, 2, 2, 1), 0.0) is not None
    selu_out = F.alpha_dropout(F.selu(lt.asarray(random_array((20000,), lt.float32))), 0.2, training=True).numpy()
    reference = TF.alpha_dropout(TF.selu(torch.tensor(random_array((20000,), lt.float32))), 0.2, training=True)
    assert abs(selu_out.mean() - reference.mean().item()) < 0.05 and abs(selu_out.std() - reference.std().item()) < 0.05
    r = F.rrelu(lt.asarray(-np.ones(1000, np.float32)), 0.1, 0.3, training=True).numpy()
    assert (-0.3 <= r).all() and (r <= -0.1).all() and r.std() > 0.03
    logits = lt.asarray(random_array((5, 7), lt.float64)).requires_grad_()
    soft = F.gumbel_softmax(logits, tau=0.5)
    np.testing.assert_allclose(soft.sum(-1).numpy(), np.ones(5))
    hard = F.gumbel_softmax(logits, hard=True, dim=1)
    assert set(np.unique(hard.numpy())) <= {0.0, 1.0} and (hard.numpy().sum(-1) == 1).all()
    hard.sum().backward()
    np.testing.assert_allclose(logits.grad.numpy(), 0, atol=1e-12)  # the soft sample's rows sum to one


def test_instance_norm_running_stats_and_errors():
    a = random_array((4, 3, 5), lt.float32)
    rm, rv, trm, trv = lt.zeros(3), lt.ones(3), torch.zeros(3), torch.ones(3)
    check(F.instance_norm(lt.asarray(a), rm, rv, momentum=0.3), TF.instance_norm(torch.tensor(a), trm, trv,
                                                                                  momentum=0.3))
    check(rm, trm)
    check(rv, trv)
    check(F.instance_norm(lt.asarray(a), rm, rv, use_input_stats=False),
          TF.instance_norm(torch.tensor(a), trm, trv, use_input_stats=False))
    for bad in (lambda: F.instance_norm(lt.zeros((2, 3))), lambda: F.glu(lt.zeros((2, 3))),
                lambda: F.prelu(lt.zeros((2, 3)), lt.zeros(2)), lambda: F.pdist(lt.zeros(3)),
                lambda: F.channel_shuffle(lt.zeros((1, 3, 2)), 2), lambda: F.bilinear(lt.zeros((2, 3)), lt.zeros((2, 2)),
                                                                                       lt.zeros((1, 2, 2)))):
        with pytest.raises(ShapeError):
            bad()
    with pytest.raises(NotImplementedError):
        F.adaptive_max_pool2d(lt.zeros((1, 4, 4)), 2, return_indices=True)


@pytest.mark.parametrize("size_average, reduce", [(None, False), (False, None), (True, True), (False, True)])
def test_deprecated_size_average_and_reduce_read_as_pytorchs(size_average, reduce):
    rng = np.random.default_rng(5)
    a, b = rng.standard_normal((3, 4)), rng.standard_normal((3, 4))
    for name in ("smooth_l1_loss", "soft_margin_loss"):
        got = getattr(F, name)(lt.asarray(a), lt.asarray(np.sign(b)), size_average=size_average, reduce=reduce)
        want = getattr(torch.nn.functional, name)(torch.tensor(a), torch.tensor(np.sign(b)), size_average=size_average,
                                                  reduce=reduce)
        check(got, want.numpy())
    got = lt.nn.SmoothL1Loss(size_average, reduce)(lt.asarray(a), lt.asarray(b))
    check(got, torch.nn.SmoothL1Loss(size_average, reduce)(torch.tensor(a), torch.tensor(b)).numpy())


IN_PLACE = [("relu", ()), ("relu6", ()), ("hardtanh", (-0.5, 0.5)), ("leaky_relu", (0.2,)), ("elu", (0.7,)),
            ("silu", ()), ("hardsigmoid", ()), ("hardswish", ()), ("threshold", (0.1, -2.0)), ("mish", ()),
            ("selu", ()), ("celu", (1.5,)), ("rrelu", (0.125, 0.3))]


@pytest.mark.parametrize(("name", "args"), IN_PLACE, ids=str)
def test_inplace_writes_the_result_into_the_input_as_torchs(name, args):
    """`inplace=True` (by keyword, in its place, and through the module) and the `F.<name>_` twins write the
    result into the input: the same object comes back and holds it, and the gradient flows through it as
    torch's; a leaf that requires grad refuses, as torch's does."""
    a = random_array((3, 7), lt.float64, seed=3)
    want = getattr(TF, name)(torch.tensor(a), *args)
    spellings = [lambda x: getattr(F, name)(x, *args, inplace=True),
                 lambda x: getattr(F, name)(x, *args, *([False] * (name == "rrelu")), True)]
    if hasattr(F, f"{name}_"):
        spellings.append(lambda x: getattr(F, f"{name}_")(x, *args))
    for spell in spellings:
        x = lt.asarray(a)
        assert spell(x) is x
        check(x, want)
    # the gradient through the written input is the out-of-place function's (test_functions_against_torch_with_gradients)
    w, v = lt.asarray(a).requires_grad_(), lt.asarray(a).requires_grad_()
    x = w * 2
    getattr(F, name)(x, *args, inplace=True)
    (x * x).sum().backward()
    (getattr(F, name)(v * 2, *args) ** 2).sum().backward()
    check(w.grad, v.grad.numpy())
    with pytest.raises(RuntimeError, match="leaf"):
        getattr(F, name)(lt.asarray(a).requires_grad_(), *args, inplace=True)


def test_inplace_modules_and_dropout():
    a = random_array((4, 6), lt.float64, seed=4)
    for module, tmodule in ((lt.nn.ReLU(inplace=True), torch.nn.ReLU(inplace=True)),
                            (lt.nn.LeakyReLU(0.3, inplace=True), torch.nn.LeakyReLU(0.3, inplace=True)),
                            (lt.nn.ELU(inplace=True), torch.nn.ELU(inplace=True)),
                            (lt.nn.Hardtanh(-0.2, 0.3, inplace=True), torch.nn.Hardtanh(-0.2, 0.3, inplace=True))):
        x, t = lt.asarray(a), torch.tensor(a)
        assert module(x) is x
        tmodule(t)
        check(x, t)
        y = lt.asarray(a)
        type(module)(*([0.3] if isinstance(module, lt.nn.LeakyReLU) else []))(y)
        check(y, a)  # not in place: the input keeps its values
    x = lt.asarray(np.ones((50, 40)))
    assert F.dropout(x, 0.5, True, True) is x
    kept = x.numpy()
    assert set(np.unique(kept)) == {0.0, 2.0} and 0.4 < (kept == 0).mean() < 0.6


def test_softmax2d_and_batchnorm3d_match_torch():
    a = random_array((2, 3, 4, 5), lt.float64, seed=5)
    check(lt.nn.Softmax2d()(lt.asarray(a)), torch.nn.Softmax2d()(torch.tensor(a)))
    check(lt.nn.Softmax2d()(lt.asarray(a[0])), torch.nn.Softmax2d()(torch.tensor(a[0])))
    with pytest.raises(ShapeError, match="3-d or 4-d"):
        lt.nn.Softmax2d()(lt.asarray(a[0, 0]))
    b = random_array((2, 3, 4, 5, 6), lt.float64, seed=6)
    ours, theirs = lt.nn.BatchNorm3d(3, dtype=lt.float64), torch.nn.BatchNorm3d(3, dtype=torch.float64)
    check(ours(lt.asarray(b)), theirs(torch.tensor(b)).detach())
    check(ours.running_mean, theirs.running_mean)
    check(ours.running_var, theirs.running_var)
    ours.eval()
    theirs.eval()
    check(ours(lt.asarray(b)), theirs(torch.tensor(b)).detach())
    with pytest.raises(ShapeError, match="5-d"):
        ours(lt.asarray(a))
