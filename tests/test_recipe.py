"""Graphs of lazytensor's own code recorded once per structure and rebuilt after (`lazytensor.recipe`): what is
rebuilt is the graph the ops record, node for node, computing the same values. (Adam's updates: test_optim.)"""
from __future__ import annotations

import numpy as np
import pytest
import torch

import lazytensor as lt
from conftest import check, graph_structure, random_array
from lazytensor import recipe
from lazytensor.nn import functional as F


def recorded(monkeypatch) -> None:
    """From here on, every graph is recorded through the ops, none rebuilt (no recipe kept)."""
    monkeypatch.setattr(recipe, "_recipes", {})
    monkeypatch.setattr(recipe, "_record", lambda *args: None)


def draws() -> list[tuple[list, np.ndarray]]:
    """Three draws of each kind and shape from seed 0 (the second and third of a structure are rebuilt): each
    one's graph and values."""
    lt.manual_seed(0)
    out = []
    for shape in ((1000,), (7, 13)):
        for _ in range(3):
            for t in (lt.rand(shape), lt.randn(shape, dtype=lt.float64), lt.randint(0, 100, shape),
                      F.dropout(lt.ones(shape), 0.3)):
                out.append((graph_structure([t]), t.numpy()))
    return out


def test_random_draws_rebuilt_are_the_draws_recorded(monkeypatch):
    rebuilt = draws()
    with monkeypatch.context() as patch:
        recorded(patch)
        expected = draws()
    for (graph, values), (expected_graph, expected_values) in zip(rebuilt, expected):
        assert graph == expected_graph
        np.testing.assert_array_equal(values, expected_values)
    # each draw of a structure its own numbers: the offset is the recipe's scalar, not the first draw's
    assert not np.array_equal(rebuilt[0][1], rebuilt[4][1])


def conv_steps(cfg: tuple) -> list:
    """Three backward passes of one convolution's structure on new data: the gradients' graphs, and the
    gradients checked against torch."""
    stride, padding, dilation, groups = cfg
    graphs = []
    for seed in range(3):
        x, w = random_array((2, 4, 9, 8), lt.float64, seed=seed), random_array((6, 4 // groups, 3, 3), lt.float64, seed)
        lx, lw = lt.asarray(x).requires_grad_(), lt.asarray(w).requires_grad_()
        tx, tw = torch.tensor(x, requires_grad=True), torch.tensor(w, requires_grad=True)
        out = F.conv2d(lx, lw, None, stride, padding, dilation, groups)
        (out * out).sum().backward()
        tout = torch.nn.functional.conv2d(tx, tw, None, stride, padding, dilation, groups)
        (tout * tout).sum().backward()
        graphs.append(graph_structure([lx.grad, lw.grad]))
        check(lx.grad, tx.grad)
        check(lw.grad, tw.grad)
    return graphs


@pytest.mark.parametrize("cfg", [(1, 1, 1, 1), (2, 0, 1, 2), (1, 2, 2, 1)], ids=str)
def test_convolution_gradients_rebuilt_are_the_gradients_recorded(cfg, monkeypatch):
    rebuilt = conv_steps(cfg)
    with monkeypatch.context() as patch:
        recorded(patch)
        expected = conv_steps(cfg)
    assert rebuilt == expected


def test_a_structure_is_recorded_once(monkeypatch):
    """A counter: the draws of one shape record their graph through the ops once, then rebuild it."""
    from lazytensor import random
    calls = []
    words = random._philox_words
    monkeypatch.setattr(random, "_philox_words", lambda *a: calls.append(1) or words(*a))
    for _ in range(4):
        lt.rand(3, 5, 7).realize()
    assert len(calls) == 1


def test_a_recipe_slices_a_realized_tensor_by_the_slice_op(monkeypatch):
    """A convolution whose windows cut a realized input (kernel = stride = 2 over 7 columns) records its recipe with
    the slice op, which any input of its structure rebuilds: a window on the recording call's buffer would be data,
    and no recipe would be kept (every later call recorded through the ops)."""
    monkeypatch.setattr(recipe, "_recipes", {})
    w = random_array((4, 3, 2, 2), lt.float32, seed=1)
    for seed in range(3):
        x = random_array((2, 3, 7, 7), lt.float32, seed=seed)
        with lt.no_grad():
            got = F.conv2d(lt.asarray(x).realize(), lt.asarray(w), stride=2)
        check(got, torch.nn.functional.conv2d(torch.tensor(x), torch.tensor(w), stride=2))
    assert list(recipe._recipes.values()) and all(recipe._recipes.values())


def test_second_order_gradients_are_recorded_through_the_ops():
    """A backward that builds a graph autograd records (create_graph) takes the ops: a rebuilt graph would
    have no gradient of its own."""
    x = lt.asarray(random_array((1, 2, 6, 6), lt.float64)).requires_grad_()
    w = lt.asarray(random_array((3, 2, 3, 3), lt.float64, seed=1)).requires_grad_()
    tx, tw = torch.tensor(x.numpy(), requires_grad=True), torch.tensor(w.numpy(), requires_grad=True)
    for _ in range(2):
        gx, = lt.autograd.gradients((F.conv2d(x, w) ** 2).sum(), [x], create_graph=True)
        tgx, = torch.autograd.grad((torch.nn.functional.conv2d(tx, tw) ** 2).sum(), [tx], create_graph=True)
        gw, = lt.autograd.gradients((gx * gx).sum(), [w])
        tgw, = torch.autograd.grad((tgx * tgx).sum(), [tw])
        check(gw, tgw)


# each op, torch's, and the function its forward's recipe is kept for
FORWARDS = {
    "softmax": (lambda x: x.softmax(1), lambda t: t.softmax(1), "_softmax"),
    "log_softmax": (lambda x: x.log_softmax(-1), lambda t: t.log_softmax(-1), "_log_softmax"),
    "logsumexp": (lambda x: x.logsumexp((0, 2)), lambda t: t.logsumexp((0, 2)), "_logsumexp"),
    "attention": (lambda x: F.scaled_dot_product_attention(x, x, x, is_causal=True),
                  lambda t: torch.nn.functional.scaled_dot_product_attention(t, t, t, is_causal=True),
                  "_safe_softmax_forward"),
    "conv2d": (lambda x: F.conv2d(x, x[:2, :, :3, :3], stride=2, padding=1),
               lambda t: torch.nn.functional.conv2d(t, t[:2, :, :3, :3], stride=2, padding=1), "_forward"),
}


def forward_calls(name: str) -> list:
    """Three calls of one op's structure on new data, with an input that requires grad (the forward of an op
    with its own backward is rebuilt all the same): the results' graphs, each result and its gradient checked
    against torch. The data holds -inf and inf, which the shifts and replacements handle."""
    ours, theirs, _ = FORWARDS[name]
    graphs = []
    for seed in range(3):
        arr = random_array((3, 4, 5, 6), lt.float64, seed=seed)
        if name != "attention":
            arr[0, 1, 2, :] = -np.inf
            arr[1, 2, 3, 4] = np.inf
        x, t = lt.asarray(arr).requires_grad_(), torch.tensor(arr, requires_grad=True)
        out, tout = ours(x), theirs(t)
        graphs.append(graph_structure([out]))
        check(out, tout)
        out.sum().backward()
        tout.sum().backward()
        check(x.grad, t.grad)
    return graphs


@pytest.mark.parametrize("name", sorted(FORWARDS))
def test_forwards_of_ops_with_their_own_backward_rebuilt_are_the_forwards_recorded(name, monkeypatch):
    monkeypatch.setattr(recipe, "_recipes", {})
    rebuilt = forward_calls(name)
    assert FORWARDS[name][2] in [key[0].__name__ for key, kept in recipe._recipes.items() if kept]
    with monkeypatch.context() as patch:
        recorded(patch)
        expected = forward_calls(name)
    assert rebuilt == expected


def _plain_matmul(a: lt.Tensor, b: lt.Tensor) -> lt.Tensor:
    """The matrix product recorded op by op, as autograd records it (no recipe, one record per op)."""
    from lazytensor import contraction
    a_shape = (1, *a.shape) if a.ndim == 1 else a.shape
    b_shape = (*b.shape, 1) if b.ndim == 1 else b.shape
    return contraction._matmul((lt.broadcast_shapes(a_shape[:-2], b_shape[:-2]),), (), a, b)[0]


def matmul_steps(mm, shapes: tuple, needs: tuple[bool, ...], same: bool, theirs_mm=torch.matmul) -> list:
    """Three backward passes of one matrix product's structure through `mm` on new data (the same tensor twice
    where `same`): the gradients' graphs (without the users' lines: `mm` is called from two places), then the
    product and the gradients checked against torch's (`theirs_mm`)."""
    graphs = []
    for seed in range(3):
        arrays = [random_array(s, lt.float64, seed=seed * 2 + k) for k, s in enumerate(shapes)]
        ours = [lt.asarray(a).requires_grad_(n) for a, n in zip(arrays, needs)]
        theirs = [torch.tensor(a, requires_grad=n) for a, n in zip(arrays, needs)]
        if same:
            ours[1], theirs[1] = ours[0], theirs[0]
        out, tout = mm(*ours), theirs_mm(*theirs)
        (out * out).sum().backward()
        (tout * tout).sum().backward()
        grads = [x.grad for x in ours[:len(ours) - same] if x.requires_grad]
        graphs.append([(op, dtype, shape, arg, srcs) for op, dtype, shape, arg, _, srcs in graph_structure(grads)])
        check(out, tout)
        for x, t in zip(ours[:len(ours) - same], theirs):
            if t.requires_grad:
                check(x.grad, t.grad)
    return graphs


@pytest.mark.parametrize("case", [((4, 3), (3, 5), (True, True), False), ((3,), (3, 5), (True, True), False),
                                  ((2, 4, 3), (3,), (False, True), False), ((2, 1, 4, 3), (3, 3, 5), (True, False), False),
                                  ((3,), (3,), (True, True), False), ((4, 4), (4, 4), (True, True), True)], ids=str)
def test_matmul_gradients_rebuilt_are_the_gradients_autograd_records_op_by_op(case):
    """A matrix product is one autograd record whose forward and backward are rebuilt (`recipe.apply_differentiable`):
    its gradients' graph is the one autograd's rules make for its ops recorded one by one, node for node (a tensor
    times itself: the same nodes, its two places' gradients built in the other order, so only checked against
    torch)."""
    a, b, needs, same = case
    rebuilt = matmul_steps(lt.matmul, (a, b), needs, same)
    expected = matmul_steps(_plain_matmul, (a, b), needs, same)
    assert rebuilt == expected or same
    x = lt.asarray(random_array(a, lt.float64)).requires_grad_()
    assert (x @ lt.asarray(random_array(b, lt.float64))).grad_fn.name() == "MatmulBackward"


@pytest.mark.parametrize("needs", [(True, True, True), (True, False, True), (False, True, False)], ids=str)
def test_linear_gradients_rebuilt_are_the_gradients_autograd_records_op_by_op(needs):
    """`F.linear` likewise: one record (its matrix product inside it another), the same graph as its ops'."""
    from lazytensor.nn.functional import _linear
    shapes = ((2, 4, 5), (3, 5), (3,))
    rebuilt = matmul_steps(F.linear, shapes, needs, False, torch.nn.functional.linear)
    assert rebuilt == matmul_steps(lambda *t: _linear((), (), *t)[0], shapes, needs, False,
                                   torch.nn.functional.linear)


def test_matmul_second_order_gradients_chain_to_the_operands():
    """Under create_graph the gradients are recorded through the ops, on the operands' records: differentiating
    them again reaches the leaves (here through a product of a tensor with itself and through a transpose)."""
    arr = random_array((3, 4), lt.float64)
    x, t = lt.asarray(arr).requires_grad_(), torch.tensor(arr, requires_grad=True)
    for _ in range(2):
        x.grad, t.grad = None, None
        y = x * 2
        gx, = lt.autograd.gradients(((y @ y.T) ** 2).sum(), [x], create_graph=True)
        ty = t * 2
        tgx, = torch.autograd.grad(((ty @ ty.T) ** 2).sum(), [t], create_graph=True)
        check(gx, tgx)
        (gx * gx).sum().backward()
        (tgx * tgx).sum().backward()
        check(x.grad, t.grad)


def _swapped(flags: tuple, scalars: tuple, x: lt.Tensor) -> tuple[lt.Tensor]:
    return (x.permute(1, 0, 2),)


def _as_4x6(flags: tuple, scalars: tuple, x: lt.Tensor) -> tuple[lt.Tensor]:
    return (x.reshape(4, 6) * x.reshape(4, 6),)


def test_a_reshape_or_permute_given_is_rebuilt_on_what_it_views():
    """The function's own permute or reshape of a given permute or reshape composes with it into one of its source
    (or into the source itself): the recipe reads that source, and tells such inputs apart by their permutation
    and their source's shape (a cube permuted two ways has one shape; a reshape back to its source's shape is
    no node)."""
    cube = random_array((4, 4, 4), lt.float64, seed=1)
    flat = random_array((24,), lt.float64, seed=2)
    for _ in range(2):
        for order in ((1, 0, 2), (2, 0, 1), (0, 2, 1), (1, 0, 2)):
            got, = recipe.apply(_swapped, (), (), (lt.asarray(cube).permute(order),))
            check(got, torch.tensor(cube).permute(order).permute(1, 0, 2))
        for shape in ((4, 6), (2, 12), (24,), (4, 6)):
            got, = recipe.apply(_as_4x6, (), (), (lt.asarray(flat.reshape(shape)).reshape(24),))
            check(got, torch.tensor(flat).reshape(4, 6) ** 2)


def _plain_layer_norm(x: lt.Tensor, w: lt.Tensor | None, b: lt.Tensor | None) -> lt.Tensor:
    """`F.layer_norm` over the last axis recorded op by op, as autograd records it (no recipe)."""
    from lazytensor.nn.functional import _layer_norm
    return _layer_norm(((x.ndim - 1,), x.dtype), (1e-5,), x, w, b)[0]


def _plain_max_pool(x: lt.Tensor) -> lt.Tensor:
    """`F.max_pool2d(x, 3, 2, 1)` recorded op by op, as autograd records it (no recipe)."""
    from lazytensor.nn.functional import _MAX_POOL_SCALARS, _max_picked
    return _max_picked((((0, 0), (0, 0), (1, 1), (1, 1)), (3, 3), (2, 2), (1, 1)), (-np.inf, *_MAX_POOL_SCALARS),
                       x)[0]


def op_steps(op, theirs_op, shapes: tuple, needs: tuple[bool, ...], specials: bool = True) -> list:
    """Three backward passes of one op's structure on new data (with `specials`, NaN and inf among x's): the
    gradients' graphs without the users' lines, the result and the gradients checked against torch."""
    graphs = []
    for seed in range(3):
        arrays = [random_array(s, lt.float64, seed=seed * 3 + k) for k, s in enumerate(shapes)]
        if specials:
            arrays[0].flat[[1, 7, 8]] = np.nan, np.inf, -np.inf
        ours = [lt.asarray(a).requires_grad_(n) for a, n in zip(arrays, needs)]
        theirs = [torch.tensor(a, requires_grad=n) for a, n in zip(arrays, needs)]
        out, tout = op(*ours), theirs_op(*theirs)
        (out * out).sum().backward()
        (tout * tout).sum().backward()
        graphs.append([(op, dtype, shape, arg, srcs)
                       for op, dtype, shape, arg, _, srcs in graph_structure([x.grad for x in ours if x.requires_grad])])
        check(out, tout)
        for x, t in zip(ours, theirs):
            if t.requires_grad:
                check(x.grad, t.grad)
    return graphs


@pytest.mark.parametrize("needs", [(True, True, True), (True, False, True), (False, True, False)], ids=str)
def test_layer_norm_gradients_rebuilt_are_the_gradients_autograd_records_op_by_op(needs, monkeypatch):
    """`F.layer_norm` is one record (`recipe.apply_differentiable`, eps a scalar): its gradients' graph is the one
    autograd's rules make for its ops recorded one by one, node for node. The backward records the forward's ops
    again, which find the forward's nodes, eps's scalar node shared; the rules' own scalars (sqrt's 2) are fixed
    values of the recipe."""
    monkeypatch.setattr(recipe, "_recipes", {})
    shapes = ((2, 3, 8), (8,), (8,))
    rebuilt = op_steps(lambda x, w, b: F.layer_norm(x, (8,), w, b), lambda x, w, b: torch.nn.functional.layer_norm(
        x, (8,), w, b), shapes, needs)
    assert [key[0].__name__ for key, kept in recipe._recipes.items() if kept] == ["_layer_norm", "_gradients"]
    assert rebuilt == op_steps(_plain_layer_norm, lambda x, w, b: torch.nn.functional.layer_norm(x, (8,), w, b),
                               shapes, needs)


def test_max_pool_gradients_rebuilt_are_the_gradients_autograd_records_op_by_op(monkeypatch):
    """`F.max_pool2d` likewise: one record, its padding's value and its comparisons' scalars given, the gradient
    of each window going to the element PyTorch picks (NaN and inf among the inputs)."""
    monkeypatch.setattr(recipe, "_recipes", {})
    rebuilt = op_steps(lambda x: F.max_pool2d(x, 3, 2, 1), lambda x: torch.nn.functional.max_pool2d(x, 3, 2, 1),
                       ((2, 3, 9, 8),), (True,))
    assert [key[0].__name__ for key, kept in recipe._recipes.items() if kept] == ["_max_picked", "_gradients"]
    assert rebuilt == op_steps(_plain_max_pool, lambda x: torch.nn.functional.max_pool2d(x, 3, 2, 1),
                               ((2, 3, 9, 8),), (True,))


ATTENTION_MASKS = {"causal": None, "none": None, "bool": np.tril(np.ones((5, 6), bool), 1),
                   "float": np.linspace(-1, 1, 30).reshape(5, 6)}


@pytest.mark.parametrize("mask", sorted(ATTENTION_MASKS))
def test_attention_gradients_rebuilt_are_the_gradients_autograd_records_op_by_op(mask, monkeypatch):
    """`F.scaled_dot_product_attention` without dropout is one record, its scale and its masks' -inf given as
    scalars, with softmax's own (a scalar a function does not take has no place in its recipe), each used in two
    places: two nodes, as op by op (the forward and backward share them in order, `graph.sharing_scalars`)."""
    from lazytensor.nn.attention import attention
    monkeypatch.setattr(recipe, "_recipes", {})
    causal = mask == "causal"
    m = ATTENTION_MASKS[mask]

    def ours(q, k, v):
        return F.scaled_dot_product_attention(q, k, v, None if m is None else lt.asarray(m), is_causal=causal)

    def plain(q, k, v):
        masks = [lt.arange(5).reshape(5, 1) >= lt.arange(6) if causal else None if m is None else lt.asarray(m)]
        return attention(q, k, v, masks, 0.5, 0.0)[0]

    def theirs(q, k, v):
        return torch.nn.functional.scaled_dot_product_attention(q, k, v, None if m is None else torch.tensor(m),
                                                                is_causal=causal)

    shapes = ((2, 3, 5, 4), (2, 3, 6, 4), (2, 3, 6, 4))
    rebuilt = op_steps(ours, theirs, shapes, (True, True, True), False)
    assert {"_attention", "_gradients"} <= {key[0].__name__ for key, kept in recipe._recipes.items() if kept}
    with monkeypatch.context() as patch:
        recorded(patch)
        assert rebuilt == op_steps(plain, theirs, shapes, (True, True, True), False)


def _scaled_twice(flags: tuple, scalars: tuple, x: lt.Tensor) -> tuple[lt.Tensor]:
    """x * s * (s + 1), the second factor a scalar of the function's own, made from the scalar given."""
    s, = scalars
    return ((x * s).exp() * (s + 1),)


def test_a_differentiable_function_that_makes_scalars_is_recorded_each_call():
    """A function whose scalar is made from a scalar given (`s + 1`) has no recipe: its forward and its backward
    are recorded through the ops at every call, never rebuilt with the first call's value."""
    arr = random_array((5,), lt.float64)
    for s in (0.5, 2.0, -3.0):
        x, t = lt.asarray(arr).requires_grad_(), torch.tensor(arr, requires_grad=True)
        out = recipe.apply_differentiable(_scaled_twice, (), (s,), (x,))
        out.sum().backward()
        ((t * s).exp() * (s + 1)).sum().backward()
        check(x.grad, t.grad)
    assert not any(kept for key, kept in recipe._recipes.items()
                   if key[0] is _scaled_twice or key[0] is recipe._gradients and key[1][0] is _scaled_twice)
