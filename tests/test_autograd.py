"""Autograd against torch autograd: every primitive rule (through the ops built on it) on several shapes,
broadcasting, 0-d and non-contiguous inputs; accumulation, detach, no_grad, functional grad; fusion."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import lazytensor as lt
from conftest import LAYOUTS, check, check_two_orders, graph_lines, marked_line, random_array, to_torch_dtype
from lazytensor.graph import Node

F64 = lt.float64


def leaf_pair(arr: np.ndarray, kind: str = "contiguous"):
    """(lazytensor leaf, its view of `kind`, torch leaf, torch view): gradients land on the leaves."""
    if kind == "contiguous" or arr.ndim == 0 or (kind == "transposed" and arr.ndim < 2):
        base = arr
        view = lambda t: t
    elif kind == "transposed":
        base = np.ascontiguousarray(arr.T)
        view = lambda t: t.permute(*reversed(range(arr.ndim)))
    elif kind == "strided":
        base = np.repeat(arr, 2, axis=-1)
        view = lambda t: t[..., ::2]
    elif kind == "flipped":
        base = np.ascontiguousarray(np.flip(arr, -1))
        view = lambda t: t.flip(-1)
    else:
        raise ValueError(kind)
    x = lt.asarray(base).requires_grad_()
    t = torch.tensor(base, requires_grad=True)
    return x, view(x), t, view(t)


def check_grads(f_lt, f_torch, arrays, kinds=("contiguous",), seed=7, **tol):
    """Run f on leaves of each layout kind, backward a random upstream gradient through both, and compare
    the outputs and the leaves' gradients (values, shapes, dtypes)."""
    for kind in kinds:
        pairs = [leaf_pair(a, kind) for a in arrays]
        out = f_lt(*(p[1] for p in pairs))
        tout = f_torch(*(p[3] for p in pairs))
        check(out, tout, **tol)
        up = random_array(tuple(tout.shape), lt.dtypes.to_dtype(str(tout.dtype).split(".")[-1]), seed=seed)
        out.backward(lt.asarray(up))
        tout.backward(torch.tensor(up))
        for (x, _, t, _) in pairs:
            assert x.grad is not None, f"no gradient ({kind})"
            check(x.grad, t.grad, **tol)


UNARY = {
    "neg": (lambda x: -x, lambda t: -t, {}),
    "abs": (lambda x: x.abs(), lambda t: t.abs(), {}),
    "reciprocal": (lambda x: x.reciprocal(), lambda t: t.reciprocal(), {"low": 0.5, "high": 3}),
    "exp": (lambda x: x.exp(), lambda t: t.exp(), {}),
    "exp2": (lambda x: x.exp2(), lambda t: t.exp2(), {}),
    "expm1": (lambda x: x.expm1(), lambda t: t.expm1(), {}),
    "log": (lambda x: x.log(), lambda t: t.log(), {"low": 0.1, "high": 4}),
    "log2": (lambda x: x.log2(), lambda t: t.log2(), {"low": 0.1, "high": 4}),
    "log10": (lambda x: x.log10(), lambda t: t.log10(), {"low": 0.1, "high": 4}),
    "log1p": (lambda x: x.log1p(), lambda t: t.log1p(), {"low": -0.5, "high": 4}),
    "sqrt": (lambda x: x.sqrt(), lambda t: t.sqrt(), {"low": 0.1, "high": 4}),
    "rsqrt": (lambda x: x.rsqrt(), lambda t: t.rsqrt(), {"low": 0.1, "high": 4}),
    "sin": (lambda x: x.sin(), lambda t: t.sin(), {}),
    "cos": (lambda x: x.cos(), lambda t: t.cos(), {}),
    "tan": (lambda x: x.tan(), lambda t: t.tan(), {"low": -1.2, "high": 1.2}),
    "tanh": (lambda x: x.tanh(), lambda t: t.tanh(), {}),
    "erf": (lambda x: x.erf(), lambda t: t.erf(), {}),
    "sigmoid": (lambda x: x.sigmoid(), lambda t: t.sigmoid(), {}),
    "relu": (lambda x: x.relu(), lambda t: t.relu(), {}),
    "square": (lambda x: x.square(), lambda t: t.square(), {}),
    "floor": (lambda x: x.floor(), lambda t: t.floor(), {}),
    "ceil": (lambda x: x.ceil(), lambda t: t.ceil(), {}),
    "round": (lambda x: x.round(), lambda t: t.round(), {}),
    "trunc": (lambda x: x.trunc(), lambda t: t.trunc(), {}),
    "pow_scalar": (lambda x: x ** 3, lambda t: t ** 3, {}),
    "pow_half": (lambda x: x ** 0.5, lambda t: t ** 0.5, {"low": 0.1, "high": 4}),
    "rpow": (lambda x: 2.0 ** x, lambda t: 2.0 ** t, {}),
    "clip": (lambda x: x.clip(-1.0, 1.5), lambda t: t.clamp(-1.0, 1.5), {}),
    "asin": (lambda x: x.asin(), lambda t: t.asin(), {"low": -0.95, "high": 0.95}),
    "acos": (lambda x: x.acos(), lambda t: t.acos(), {"low": -0.95, "high": 0.95}),
    "atan": (lambda x: x.atan(), lambda t: t.atan(), {}),
    "asinh": (lambda x: x.asinh(), lambda t: t.asinh(), {}),
    "acosh": (lambda x: x.acosh(), lambda t: t.acosh(), {"low": 1.05, "high": 4}),
    "atanh": (lambda x: x.atanh(), lambda t: t.atanh(), {"low": -0.95, "high": 0.95}),
    "sinh": (lambda x: x.sinh(), lambda t: t.sinh(), {}),
    "cosh": (lambda x: x.cosh(), lambda t: t.cosh(), {}),
}


def two_layouts(i: int) -> tuple[str, str]:
    """Contiguous and one of the non-contiguous layouts, rotating with the case's position."""
    return "contiguous", LAYOUTS[1 + i % (len(LAYOUTS) - 1)]


@pytest.mark.parametrize("name", list(UNARY))
def test_unary_rules(name):
    f, g, rng = UNARY[name]
    check_grads(f, g, [random_array((3, 4), F64, seed=1, **rng)], kinds=two_layouts(list(UNARY).index(name)))


@pytest.mark.parametrize("name", ["exp", "log", "tanh", "sigmoid", "relu", "sqrt", "asin", "acosh", "sinh"])
def test_unary_rules_0d_and_float32(name):
    f, g, rng = UNARY[name]
    check_grads(f, g, [random_array((), F64, seed=2, **rng)])
    check_grads(f, g, [random_array((5,), lt.float32, seed=3, **rng)])


class _NextAfter(torch.autograd.Function):
    """torch.nextafter with the derivative PyTorch gives it from 2.13 on (the incoming gradient to the first
    argument where the two differ, none to the second): older versions have none, and the tests run against
    either."""

    @staticmethod
    def forward(ctx, a, b):
        ctx.shapes = a.shape, b.shape
        ctx.save_for_backward(a != b)
        return torch.nextafter(a, b)

    @staticmethod
    def backward(ctx, up):
        a_shape, b_shape = ctx.shapes
        (differ,) = ctx.saved_tensors
        return torch.where(differ, up, 0.0).sum_to_size(a_shape), up.new_zeros(b_shape)


BINARY = {
    "add": (lambda a, b: a + b, lambda a, b: a + b, {}),
    "sub": (lambda a, b: a - b, lambda a, b: a - b, {}),
    "mul": (lambda a, b: a * b, lambda a, b: a * b, {}),
    "div": (lambda a, b: a / b, lambda a, b: a / b, {"low": 0.5, "high": 3}),
    "pow": (lambda a, b: a ** b, lambda a, b: a ** b, {"low": 0.5, "high": 2}),
    "maximum": (lambda a, b: a.maximum(b), lambda a, b: torch.maximum(a, b), {}),
    "minimum": (lambda a, b: a.minimum(b), lambda a, b: torch.minimum(a, b), {}),
    "remainder": (lambda a, b: a % b, lambda a, b: a % b, {"low": 0.5, "high": 3}),
    "where": (lambda a, b: lt.where(a > b, a * 2, b), lambda a, b: torch.where(a > b, a * 2, b), {}),
    "atan2": (lambda a, b: a.atan2(b), torch.atan2, {}),
    "hypot": (lambda a, b: a.hypot(b), torch.hypot, {}),
    "copysign": (lambda a, b: a.copysign(b), torch.copysign, {}),
    "nextafter": (lambda a, b: a.nextafter(b), _NextAfter.apply, {}),
}

SHAPE_PAIRS = [((3, 4), (3, 4)), ((3, 1), (1, 4)), ((), (2, 3)), ((2, 1, 3), (4, 1))]


@pytest.mark.parametrize("name", list(BINARY))
@pytest.mark.parametrize("shapes", SHAPE_PAIRS, ids=str)
def test_binary_rules_broadcasting(name, shapes):
    f, g, rng = BINARY[name]
    arrays = [random_array(s, F64, seed=10 + i, **rng) for i, s in enumerate(shapes)]
    check_grads(f, g, arrays)


@pytest.mark.parametrize("name", ["add", "mul", "div", "maximum"])
def test_binary_rules_non_contiguous(name):
    f, g, rng = BINARY[name]
    arrays = [random_array((4, 3), F64, seed=20 + i, **rng) for i in range(2)]
    check_grads(f, g, arrays, kinds=LAYOUTS)


@pytest.mark.parametrize("name", ["sub", "mul", "div", "remainder", "maximum"])
@pytest.mark.parametrize("side", [0, 1])
def test_binary_rules_with_one_source_requiring_grad(name, side):
    f, g, rng = BINARY[name]
    arrays = [random_array((3, 4), F64, seed=30 + i, **rng) for i in range(2)]
    ours = [lt.asarray(a).requires_grad_(i == side) for i, a in enumerate(arrays)]
    theirs = [torch.tensor(a, requires_grad=i == side) for i, a in enumerate(arrays)]
    up = random_array((3, 4), F64, seed=9)
    f(*ours).backward(lt.asarray(up))
    g(*theirs).backward(torch.tensor(up))
    check(ours[side].grad, theirs[side].grad)
    assert ours[1 - side].grad is None


def test_where_with_one_branch_requiring_grad():
    a, b = random_array((3, 4), F64, seed=1), random_array((3, 4), F64, seed=2)
    mask = a > b
    x, t = lt.asarray(a).requires_grad_(), torch.tensor(a, requires_grad=True)
    (lt.where(lt.asarray(mask), lt.asarray(b), x) * lt.asarray(a)).sum().backward()
    (torch.where(torch.tensor(mask), torch.tensor(b), t) * torch.tensor(a)).sum().backward()
    check(x.grad, t.grad)


def test_rules_build_only_the_gradients_their_sources_need():
    """A source that needs no gradient (the 8 of `x / 8`, a mask's fill) gets none built: its rule is not run."""
    from lazytensor.autograd import vjp
    from lazytensor.graph import Op
    from lazytensor.kernels.ir import Alu
    x, c = lt.asarray(np.ones((2, 3))).requires_grad_(), lt.asarray(np.full((2, 3), 8.0))
    out, g = x / c, lt.asarray(np.ones((2, 3)))
    for op in (Alu.SUB, Alu.MUL, Alu.DIV, Alu.MOD):
        first, second = vjp(Op.ALU, op, (x, c), out, g, needs=[True, False])
        assert first is not None and second is None, op
        first, second = vjp(Op.ALU, op, (c, x), out, g, needs=[False, True])
        assert first is None and second is not None, op
    cond = lt.asarray(np.ones((2, 3), dtype=bool))
    assert vjp(Op.ALU, Alu.WHERE, (cond, x, c), out, g, needs=[False, True, False])[2] is None


def test_maximum_minimum_ties_split_the_gradient_as_torch():
    a = np.array([1.0, 2.0, 3.0, 2.0])
    b = np.array([1.0, 1.0, 3.0, 5.0])
    check_grads(lambda x, y: x.maximum(y), torch.maximum, [a, b])
    check_grads(lambda x, y: x.minimum(y), torch.minimum, [a, b])


def test_relu_and_clip_at_their_kinks_as_torch():
    a = np.array([-1.0, 0.0, 0.5, 1.0, 2.0])
    check_grads(lambda x: x.relu(), torch.relu, [a])
    check_grads(lambda x: x.clip(0.0, 1.0), lambda t: t.clamp(0.0, 1.0), [a])
    check_grads(lambda x: x.maximum(0.5), lambda t: t.clamp(min=0.5), [a])


def test_pow_at_zero_as_torch():
    a = np.array([0.0, 0.0, 2.0, 0.0])
    b = np.array([0.0, 2.0, 0.0, 1.0])
    check_grads(lambda x, y: x ** y, lambda x, y: x ** y, [a, b])


@pytest.mark.parametrize("power", [-2, -1, -0.5, 0.5, 2, 3], ids=str)
def test_scalar_powers_at_zeros_and_infinities_as_torch(power):
    """The powers computed by other means (x ** -2 as 1 / (x*x)) differentiate as PyTorch's pow, p * x**(p-1):
    0 at an infinite x, where the chain through their ops would make NaN."""
    values = np.array([np.inf, -np.inf, 0.0, -0.0, 2.0, -3.0, 1e-30, np.nan])
    check_grads(lambda x: x ** power, lambda t: t ** power, [values])


def test_math_functions_at_their_edges_as_torch():
    """Where the derivative is infinite (the ends of asin's, acos's, atanh's and acosh's domains), or where
    PyTorch picks a value (atan2 and hypot at the origin, copysign at zeros and infinities): PyTorch's."""
    ends = np.array([-1.0, 1.0, 0.0])
    for name in ("asin", "acos", "atanh"):
        check_grads(lambda x, n=name: getattr(x, n)(), lambda t, n=name: getattr(t, n)(), [ends])
    check_grads(lambda x: x.acosh(), lambda t: t.acosh(), [np.array([1.0, 2.0])])
    a = np.array([0.0, -0.0, 0.0, 2.0, -np.inf, 3.0])
    b = np.array([0.0, 0.0, -1.0, -0.0, 1.0, np.nan])
    for name in ("atan2", "hypot", "copysign", "nextafter"):
        check_grads(BINARY[name][0], BINARY[name][1], [a, b])


def test_floor_divide_and_rounding_give_zero_gradients():
    x = lt.asarray([1.5, -2.5, 3.0], dtype=F64).requires_grad_()
    y = lt.asarray([2.0, 2.0, -1.5], dtype=F64).requires_grad_()
    ((x // y) + x.floor() + x.round()).sum().backward()
    check(x.grad, np.zeros(3))
    check(y.grad, np.zeros(3))


REDUCTIONS = {
    "sum": (lambda x: x.sum(1), lambda t: t.sum(1)),
    "sum_all": (lambda x: x.sum(), lambda t: t.sum()),
    "sum_keep": (lambda x: x.sum((0, 2), keepdims=True), lambda t: t.sum((0, 2), keepdim=True)),
    "mean": (lambda x: x.mean((0, -1)), lambda t: t.mean((0, -1))),
    "max": (lambda x: x.max(2), lambda t: t.amax(2)),
    "max_all": (lambda x: x.max(), lambda t: t.amax()),
    "min": (lambda x: x.min((0, 1), keepdims=True), lambda t: t.amin((0, 1), keepdim=True)),
    "prod": (lambda x: x.prod(1), lambda t: t.prod(1)),
    "var": (lambda x: x.var(1, correction=1), lambda t: t.var(1)),
    "std": (lambda x: x.std(-1), lambda t: t.std(-1, correction=0)),
    "logsumexp": (lambda x: x.logsumexp(2), lambda t: t.logsumexp(2)),
    "softmax": (lambda x: x.softmax(1), lambda t: t.softmax(1)),
    "log_softmax": (lambda x: x.log_softmax(-1), lambda t: t.log_softmax(-1)),
    "cumsum": (lambda x: x.cumsum(1), lambda t: t.cumsum(1)),
}


@pytest.mark.parametrize("name", list(REDUCTIONS))
def test_reduction_rules(name):
    f, g = REDUCTIONS[name]
    check_grads(f, g, [random_array((2, 3, 4), F64, seed=30, low=0.5, high=2)],
                kinds=two_layouts(list(REDUCTIONS).index(name)))


def test_reductions_of_0d_and_float32():
    check_grads(lambda x: x.sum(), lambda t: t.sum(), [np.array(2.5)])
    check_grads(lambda x: x.max(), lambda t: t.amax(), [np.array(2.5)])
    check_grads(lambda x: x.softmax(0), lambda t: t.softmax(0), [random_array((7,), lt.float32, seed=5)])
    check_grads(lambda x: x.mean(1), lambda t: t.mean(1), [random_array((3, 5), lt.float32, seed=6)])


def test_max_min_ties_share_the_gradient_as_amax():
    a = np.array([[1.0, 3.0, 3.0, 0.0], [2.0, 2.0, 2.0, 2.0]])
    check_grads(lambda x: x.max(1), lambda t: t.amax(1), [a])
    check_grads(lambda x: x.min(), lambda t: t.amin(), [a])


def test_prod_with_zeros():
    a = np.array([[1.5, 0.0, 2.0, 3.0], [0.0, 2.0, 0.0, 1.0], [1.0, 2.0, -3.0, 0.5]])
    check_grads(lambda x: x.prod(1), lambda t: t.prod(1), [a])
    check_grads(lambda x: x.prod(0), lambda t: t.prod(0), [a])
    check_grads(lambda x: x[0].prod(), lambda t: t[0].prod(), [a])


def test_max_of_nan_gives_the_gradient_to_the_nans():
    """Found by the fuzzer (grad seed 500089): where the extremum is NaN, its gradient goes to the NaNs it came
    from (shared, as ties are), as torch.max gives it to one; it was 0 / 0 = NaN everywhere."""
    a = np.array([[1.0, np.nan, 3.0], [2.0, 5.0, -1.0], [np.nan, 0.0, np.nan]])
    x = lt.asarray(a).requires_grad_()
    (x.max(1) * lt.asarray(np.array([2.0, 3.0, 4.0]))).sum().backward()
    check(x.grad, torch.tensor([[0.0, 2.0, 0.0], [0.0, 3.0, 0.0], [2.0, 0.0, 2.0]], dtype=torch.float64))


def test_prod_gradient_of_one_element_and_of_infinities():
    """Found by the fuzzer (grad seed 500090): the gradient of each element is the product of the others, also
    where the product is inf: a group of one element gives 1 (not inf / inf), an infinite element the product
    of the rest; two zeros or two infinities among the others give 0 or inf, a zero and an inf NaN. Where the
    finite elements' product overflows, the others' is still their own: 4e30 (torch's on this tensor, whose
    zeros send it to its rule without division; grad seed 669), inf for the 4's (1e60). A NaN among the
    others makes the product NaN, an infinity among them too (grad seed 954005; the sixth row: NaN everywhere, as
    torch's, whose NaN element has the NaN product over itself); a NaN among the others with a zero too
    (grad seed 960757, the last row; it gave 0)."""
    inf, nan = np.inf, np.nan
    a = np.array([[inf, 2.0, 3.0], [inf, -inf, 2.0], [0.0, inf, 2.0], [0.0, 0.0, inf], [1e30, 1e30, 4.0],
                  [inf, nan, -2.0], [-0.0, nan, 1.5]], np.float32)
    check_grads(lambda x: x.prod(1), lambda t: t.prod(1), [a[:, :1]])
    x = lt.asarray(a).requires_grad_()
    x.prod(1).sum().backward()
    expected = [[6.0, inf, inf], [-inf, inf, -inf], [inf, 0.0, nan], [nan, nan, 0.0], [4e30, 4e30, inf], [nan, nan, nan],
                [nan, 0.0, nan]]
    check(x.grad, torch.tensor(expected, dtype=torch.float32))


PRODUCT_OUT_OF_RANGE = {  # big, small, c: [big, big, c] overflows, [small, small, c] underflows; the others' do not
    lt.float32: (1.5e19, 1e-23, 2.0), lt.bfloat16: (1.5e19, 1e-23, 2.0), lt.float16: (250.0, 1e-4, 1.2)}


@pytest.mark.parametrize("dtype", list(PRODUCT_OUT_OF_RANGE))
@pytest.mark.parametrize("group", ["rows", "columns", "all"])
def test_prod_gradients_where_the_product_leaves_the_range(dtype, group):
    """Found by the fuzzer (grad seed 669): where a group's product overflows (underflows) its dtype while the
    products of the others do not, the gradient is those products, as torch's, and so is the second derivative;
    the product over each element, `out / x`, gave inf (0). Against torch in float64 from the same values (torch's
    rule in the dtype itself divides too where no zero is in the tensor)."""
    big, small, c = PRODUCT_OUT_OF_RANGE[dtype]
    rows = np.array([[big, big, c], [c, -big, big], [small, c, small], [0.5, -1.5, 2.0]])
    a, prod = {"rows": (rows, lambda v: v.prod(1)), "columns": (rows.T, lambda v: v.prod(0)),
               "all": (rows[:1], lambda v: v.prod())}[group]
    x = lt.asarray(a.astype(np.float32)).cast(dtype).requires_grad_()
    t = torch.tensor(x.float().numpy(), dtype=torch.float64, requires_grad=True)
    y, ty = prod(x), prod(t)
    w = random_array(tuple(ty.shape), lt.float32, seed=11, low=-1, high=1)
    w2 = random_array(a.shape, lt.float32, seed=12, low=-1, high=1)
    (g,) = lt.autograd.gradients((y * lt.asarray(w).cast(dtype)).sum(), x, create_graph=True)
    (tg,) = torch.autograd.grad((ty * torch.tensor(w)).sum(), t, create_graph=True)
    (gg,) = lt.autograd.gradients((g * lt.asarray(w2).cast(dtype)).sum(), x)
    (tgg,) = torch.autograd.grad((tg * torch.tensor(w2)).sum(), t)
    assert np.isfinite(tg.detach().numpy()).sum() >= a.size - 1  # the case: one product of the others is 1e38
    check(g, tg.detach().to(to_torch_dtype(dtype)))
    check(gg, tgg.to(to_torch_dtype(dtype)))


def test_relu_passes_the_gradient_of_nan():
    """Found by the fuzzer (grad seed 910161): torch.relu stops the gradient where its result is <= 0, so a NaN
    passes it; lazytensor's stopped it (it kept x > 0)."""
    a = np.array([np.nan, 1.5, -1.0, 0.0, -np.inf, np.inf], np.float32)
    check_grads(lambda x: x.relu() * 3, lambda t: t.relu() * 3, [a])


def test_variance_gradient_with_an_infinite_upstream_gradient():
    """Found by the fuzzer (grad seed 910941): exp of a large variance has an infinite gradient; var's is
    2 (x - mean) / n times it, as torch's, -inf and inf, where through the mean it was inf - inf."""
    a = np.array([[0.7, 1.9, 7.6], [1.0, 2.0, 3.0]])
    check_grads(lambda x: (x.var(1, correction=1) * 100).exp(), lambda t: (t.var(1) * 100).exp(), [a])
    check_grads(lambda x: x.std(0, keepdims=True).exp(), lambda t: t.std(0, correction=0, keepdim=True).exp(), [a])


def test_float32_std_of_a_spread_whose_squares_overflow():
    """Found by the fuzzer (grad seed 932677): float32 deviations of 5e29 have squares beyond float32; the
    variance accumulates in float64, as PyTorch's on the CPU, so the standard deviation and its gradient are
    finite (the variance itself is inf, as torch's)."""
    a = np.array([[1e30, -0.5], [0.834, -0.732]], np.float32)
    check_grads(lambda x: x.std(0) * 3, lambda t: t.std(0, correction=0) * 3, [a])
    check(lt.asarray(a).var(0), torch.tensor(a).var(0, correction=0))


MOVEMENT = {
    "reshape": (lambda x: x.reshape(4, 6), lambda t: t.reshape(4, 6)),
    "permute": (lambda x: x.permute(2, 0, 1), lambda t: t.permute(2, 0, 1)),
    "transpose": (lambda x: x.transpose(0, 2), lambda t: t.transpose(0, 2)),
    "broadcast": (lambda x: x[:, :1].broadcast_to(5, 2, 3, 4), lambda t: t[:, :1].expand(5, 2, 3, 4)),
    "pad": (lambda x: x.pad(((1, 0), (0, 2), (1, 1))), lambda t: torch.nn.functional.pad(t, (1, 1, 0, 2, 1, 0))),
    "slice": (lambda x: x[1:, 1:3, ::2], lambda t: t[1:, 1:3, ::2]),
    "slice_step3": (lambda x: x[:, ::3, 1::3], lambda t: t[:, ::3, 1::3]),
    "slice_negative": (lambda x: x[::-1, ::-2, 2:0:-1], lambda t: t.flip(0).flip(1)[:, ::2].flip(2)[:, :, 1:3]),
    "index": (lambda x: x[1, :, 2], lambda t: t[1, :, 2]),
    "flip": (lambda x: x.flip((0, 2)), lambda t: t.flip((0, 2))),
    "squeeze_unsqueeze": (lambda x: x.unsqueeze(1)[:, :, :1].squeeze(), lambda t: t.unsqueeze(1)[:, :, :1].squeeze()),
    "concat": (lambda x: lt.concat([x, x * 2], 1), lambda t: torch.cat([t, t * 2], 1)),
    "stack": (lambda x: lt.stack([x[0], x[1]], -1), lambda t: torch.stack([t[0], t[1]], -1)),
    "split": (lambda x: x.split([1, 2], 1)[1], lambda t: t.split([1, 2], 1)[1]),
    "tile": (lambda x: x.tile(2, 1, 3), lambda t: t.repeat(2, 1, 3)),
    "flatten": (lambda x: x.flatten(1), lambda t: t.flatten(1)),
    "contiguous": (lambda x: x.T.contiguous(), lambda t: t.permute(2, 1, 0).contiguous()),
}


@pytest.mark.parametrize("name", list(MOVEMENT))
def test_movement_rules(name):
    f, g = MOVEMENT[name]
    check_grads(f, g, [random_array((2, 3, 4), F64, seed=40)], kinds=two_layouts(list(MOVEMENT).index(name)))


def test_strided_slices_of_several_phases():
    arr = random_array((11,), F64, seed=41)
    for start, step in [(0, 2), (1, 2), (2, 3), (1, 4), (3, 5)]:
        check_grads(lambda x, start=start, step=step: x[start::step] * 3,
                    lambda t, start=start, step=step: t[start::step] * 3, [arr])


def test_cast_rule():
    # float32 math inside, exact in both libraries (exp would differ by an ulp, then compared as float64)
    check_grads(lambda x: x.cast(lt.float32) * 3, lambda t: t.float() * 3, [random_array((3,), F64, seed=42)])
    check_grads(lambda x: x.cast(F64) * 2, lambda t: t.double() * 2, [random_array((3,), lt.float32, seed=43)])


LINALG = {
    "matmul": ((3, 4), (4, 5), lambda a, b: a @ b),
    "batched": ((2, 3, 4), (4, 2), lambda a, b: a @ b),
    "broadcast_batch": ((2, 1, 3, 4), (5, 4, 2), lambda a, b: a @ b),
    "vector_matrix": ((4,), (4, 3), lambda a, b: a @ b),
    "matrix_vector": ((3, 4), (4,), lambda a, b: a @ b),
    "dot": ((4,), (4,), lambda a, b: a.dot(b) if isinstance(a, lt.Tensor) else torch.dot(a, b)),
    "outer": ((3,), (4,), lambda a, b: a.outer(b) if isinstance(a, lt.Tensor) else torch.outer(a, b)),
    "tensordot": ((2, 3, 4), (3, 4, 5), lambda a, b: a.tensordot(b, 2) if isinstance(a, lt.Tensor)
                  else torch.tensordot(a, b, 2)),
}


@pytest.mark.parametrize("name", list(LINALG))
def test_linalg(name):
    sa, sb, f = LINALG[name]
    kinds = ("contiguous", "transposed") if len(sa) >= 2 else ("contiguous",)
    check_grads(f, f, [random_array(sa, F64, seed=50), random_array(sb, F64, seed=51)], kinds=kinds)


def test_composite_expression_float32():
    def f(x, w, b):
        h = (x @ w + b).tanh()
        return (h * h).mean(0).sqrt()
    arrays = [random_array((4, 3), lt.float32, seed=60), random_array((3, 5), lt.float32, seed=61),
              random_array((5,), lt.float32, seed=62)]
    check_grads(f, f, arrays)


# ---- the autograd machinery -------------------------------------------------------------------------


def test_scalar_backward_and_accumulation():
    x = lt.asarray([1.0, 2.0, 3.0]).requires_grad_()
    (x * x).sum().backward()
    check(x.grad, np.array([2.0, 4.0, 6.0], np.float32))
    (x * 3).sum().backward()  # accumulates into .grad
    check(x.grad, np.array([5.0, 7.0, 9.0], np.float32))
    x.grad = None
    y = (x * x).sum()
    y.backward()
    y.backward()  # the graph is kept: backward twice accumulates twice
    check(x.grad, np.array([4.0, 8.0, 12.0], np.float32))


def test_shared_subexpressions_accumulate():
    check_grads(lambda x: (x * x).exp() + x * (x * x), lambda t: (t * t).exp() + t * (t * t),
                [random_array((3,), F64, seed=70)])


def test_backward_errors():
    x = lt.asarray([1.0, 2.0]).requires_grad_()
    with pytest.raises(RuntimeError, match="scalar"):
        (x * 2).backward()
    with pytest.raises(RuntimeError, match="does not require grad"):
        lt.asarray([1.0]).sum().backward()
    with pytest.raises(RuntimeError, match="floating-point"):
        (x > 1).backward()
    with pytest.raises(RuntimeError, match="not differentiable"):
        (x > 1).cast(lt.float32).sum().backward()
    with pytest.raises(RuntimeError, match="shape"):
        (x * 2).backward(lt.ones(3))


def test_argmax_and_comparisons_pass_no_gradient():
    x = lt.asarray([1.0, 3.0, 2.0]).requires_grad_()
    t = torch.tensor([1.0, 3.0, 2.0], requires_grad=True)
    y = x * (x.argmax() == 1).cast(lt.float32) + (x > 1).cast(lt.float32) * 0
    ty = t * (t.argmax() == 1).float() + (t > 1).float() * 0
    y.sum().backward()
    ty.sum().backward()
    check(x.grad, t.grad)


def test_detach_and_no_grad():
    x = lt.asarray([1.0, 2.0]).requires_grad_()
    y = x * x
    z = y.detach() * x  # d/dx = y, not 3x^2
    assert not y.detach().requires_grad
    z.sum().backward()
    check(x.grad, np.array([1.0, 4.0], np.float32))
    with lt.no_grad():
        w = x * 2
        assert lt.autograd.is_grad_enabled() is False
        with lt.enable_grad():
            assert (x * 2).requires_grad
    assert not w.requires_grad and w._ctx is None
    assert lt.autograd.is_grad_enabled()


def test_leaves_that_do_not_require_grad_get_nothing():
    x = lt.asarray([1.0, 2.0]).requires_grad_()
    c = lt.asarray([3.0, 4.0])
    (x * c).sum().backward()
    assert c.grad is None
    check(x.grad, np.array([3.0, 4.0], np.float32))


def test_functional_grad():
    f = lambda x, y: (x * x * y).sum()
    x, y = lt.asarray([1.0, 2.0]), lt.asarray([3.0, 5.0])
    check(lt.grad(f)(x, y), np.array([6.0, 20.0], np.float32))
    _, gy = lt.grad(f, argnums=(0, 1))(x, y)
    check(gy, np.array([1.0, 4.0], np.float32))
    g, aux = lt.grad(lambda x: ((x * 2).sum(), "aux"), has_aux=True)(x)
    assert aux == "aux"
    check(g, np.array([2.0, 2.0], np.float32))
    value, g = lt.value_and_grad(lambda x: (x ** 3).sum())(x)
    check(value, np.array(9.0, np.float32))
    check(g, np.array([3.0, 12.0], np.float32))
    assert x.grad is None  # grad() does not touch .grad


def test_higher_order_grad():
    f = lambda x: (x ** 3).sum()
    x = lt.asarray([1.0, -2.0], dtype=F64)
    check(lt.grad(lambda x: lt.grad(f)(x).sum())(x), np.array([6.0, -12.0]))
    t = torch.tensor([0.3, 1.2], dtype=torch.float64, requires_grad=True)
    (g,) = torch.autograd.grad(t.sin().exp().sum(), t, create_graph=True)
    (gg,) = torch.autograd.grad(g.sum(), t)
    check(lt.grad(lambda x: lt.grad(lambda y: y.sin().exp().sum())(x).sum())(lt.asarray([0.3, 1.2], dtype=F64)), gg)


def test_gradients_of_intermediates():
    x = lt.asarray([1.0, 2.0]).requires_grad_()
    h = x * 3
    y = (h * h).sum()
    gh, gx = lt.gradients(y, [h, x])
    check(gh, np.array([6.0, 12.0], np.float32))
    check(gx, np.array([18.0, 36.0], np.float32))
    assert x.grad is None


def test_deep_chain_does_not_recurse():
    x = lt.asarray([1.0]).requires_grad_()
    y = x
    for _ in range(2000):
        y = y * 1.0 + 0.0
    y.sum().backward()
    check(x.grad, np.array([1.0], np.float32))


def test_backward_fuses():
    """The gradient of an elementwise chain is one kernel; with the forward it reads, still one."""
    x = lt.asarray(random_array((64,), lt.float32, seed=80)).requires_grad_()
    y = ((x * 2).exp().sin() * x).sum()
    y.backward()
    assert len(lt.schedule(x.grad)) == 1
    lt.reset_stats()
    lt.realize(y, x.grad)
    assert lt.stats().kernels_launched == 2  # the loss (a reduction) and the gradient (elementwise)


def test_grad_of_a_matmul_is_one_kernel_per_operand():
    """The relu mask needs the product, computed once; then one reduction per operand's gradient. Without the
    relu the output's gradient is one value: each operand's gradient is the other's sums along the contracted
    axis (b's row sums, a's column sums), reduced once at their own size and broadcast by a second kernel."""
    a = lt.asarray(random_array((8, 16), lt.float32, seed=81)).requires_grad_()
    b = lt.asarray(random_array((16, 4), lt.float32, seed=82)).requires_grad_()
    (a @ b).relu().sum().backward()
    assert len(lt.schedule(a.grad, b.grad)) == 3
    a.grad = b.grad = None
    (a @ b).sum().backward()
    for grad in (a.grad, b.grad):
        sums, broadcast = lt.schedule(grad)
        assert sums.outputs[0].numel == 16 and broadcast.outputs[0].numel == grad.node.numel


def test_in_place_ops_keep_the_gradient():
    y0 = np.array([1.0, -2.0, 3.0], np.float32)
    y, ty = lt.asarray(y0).requires_grad_(), torch.tensor(y0, requires_grad=True)
    z, tz = y * 2, ty * 2
    z *= 3
    tz *= 3
    z += y
    tz += ty
    z.sum().backward()
    tz.sum().backward()
    check(y.grad, ty.grad)


def test_in_place_op_on_a_leaf_that_requires_grad_raises():
    y = lt.asarray(np.ones(3, np.float32)).requires_grad_()
    with pytest.raises(RuntimeError, match="leaf tensor"):
        y += 1
    with lt.no_grad():
        y += 1
    check(y.detach(), np.full(3, 2, np.float32))


def test_sigmoid_gradient_does_not_overflow():
    x0 = np.array([-100.0, -88.5, 0.0, 30.0, 100.0], np.float32)
    x, tx = lt.asarray(x0).requires_grad_(), torch.tensor(x0, requires_grad=True)
    x.sigmoid().sum().backward()
    torch.sigmoid(tx).sum().backward()
    check(x.grad, tx.grad)


class _TorchCube(torch.autograd.Function):
    """x ** 3 with its derivative written by hand, as the lazytensor custom op below."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 3

    @staticmethod
    def backward(ctx, g):
        x, = ctx.saved_tensors
        return g * 3 * x * x


def _cube(x):
    return lt.autograd.custom_vjp((x,), lambda: x ** 3, lambda g: (g * 3 * x * x,))


def _exp_of_result(x):
    return lt.autograd.custom_vjp((x,), lambda: x.exp(), lambda g, y: (g * y,), takes_result=True)


CUSTOM = {"closing over its source": (_cube, _TorchCube.apply), "taking its result": (_exp_of_result, torch.exp)}


@pytest.mark.parametrize("case", CUSTOM)
def test_custom_vjp_first_and_second_order(case):
    """A custom op's backward replaces the derivative of its forward, and is itself differentiated
    (create_graph), as torch.autograd.Function; with `takes_result=True` the backward gets the result (a
    softmax's gradient is written with it), and a second-order gradient goes through the result's own record,
    as through torch's saved output."""
    ours, theirs = CUSTOM[case]
    arr = random_array((3, 4), F64, seed=1)
    x, tx = lt.asarray(arr).requires_grad_(), torch.tensor(arr, requires_grad=True)
    check_two_orders(ours(x), theirs(tx), x, tx)


def test_custom_vjp_uses_its_backward_and_skips_sources():
    """The recorded backward is what runs (here a straight-through rounding: gradient 1, where the
    forward's own derivative is 0); a None gradient leaves a source out; nothing is recorded without a
    source that requires grad, or under no_grad."""
    arr = random_array((5,), F64, seed=2)
    x, w = lt.asarray(arr).requires_grad_(), lt.asarray(arr * 2).requires_grad_()
    y = lt.autograd.custom_vjp((x, w), lambda: x.round() + w, lambda g: (g * 2, None))
    y.sum().backward()
    check(x.grad, np.full(5, 2.0))
    assert w.grad is None
    plain = lt.asarray(arr)
    assert lt.autograd.custom_vjp((plain,), lambda: plain * 2, lambda g: (g,))._ctx is None
    with lt.no_grad():
        assert not lt.autograd.custom_vjp((x,), lambda: x * 2, lambda g: (g,)).requires_grad


@pytest.mark.parametrize("op", ["softmax", "log_softmax", "logsumexp", "attention", "cross_entropy"])
def test_graphs_are_freed_without_the_cycle_collector(op):
    """The ops whose gradient uses their result hold no reference cycle: once the program drops the result and
    what it fed, reference counting frees the graph (and any memory realized in it) at once, not Python's cyclic
    collector some steps later (a training step's graph was all cyclic garbage through one softmax)."""
    import gc
    fns = {"softmax": lambda x: x.softmax(-1), "log_softmax": lambda x: x.log_softmax(-1),
           "logsumexp": lambda x: x.logsumexp(-1),
           "attention": lambda x: lt.nn.functional.scaled_dot_product_attention(x, x, x, is_causal=True),
           "cross_entropy": lambda x: lt.nn.functional.cross_entropy(x.reshape(6, 4), lt.asarray([0, 1, 2, 3, 0, 1]))}

    def step():
        x = lt.asarray(random_array((2, 3, 4), lt.float32, seed=5)).requires_grad_()
        loss = (fns[op](x) ** 2).sum()
        loss.backward()
        lt.realize(loss, x.grad)

    step()  # compiles the kernels, and fills the caches
    enabled = gc.isenabled()
    gc.collect()
    gc.disable()
    gc.set_debug(gc.DEBUG_SAVEALL)  # the collector keeps what it finds in gc.garbage, for us to look at
    try:
        step()
        gc.collect()
        assert [o for o in gc.garbage if isinstance(o, (lt.Tensor, Node))] == []
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        if enabled:
            gc.enable()


def test_custom_vjp_backward_must_give_one_gradient_per_source():
    x = lt.asarray(random_array((2,), F64, seed=3)).requires_grad_()
    y = lt.autograd.custom_vjp((x,), lambda: x * 2, lambda g: (g, g))
    with pytest.raises(ValueError, match="2 gradients for 1 sources"):
        y.sum().backward()


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
def test_softmax_gradients_are_torchs_formula_where_terms_cancel(name):
    """Found by the fuzzer (grad seed 950589): 1 / log_softmax(x) near 0 has an upstream gradient of 2e8 that
    log_softmax's backward cancels to 1e4. Through the max that log_softmax subtracts, a rounding residue
    reached the maximal elements (a relative error of 3e-12 in float64); as PyTorch's formula (`g - exp(y)
    sum(g)`, `y (g - sum(g y))`) it is within 1e-12."""
    u = np.frombuffer(bytes.fromhex("e051e3dbf04bea3f52eecec2b819f6bf"), np.float64)
    v = np.frombuffer(bytes.fromhex("e051e3dbf04bea3f52eecec2b819f6bf64394170840806c0"), np.float64)
    x = np.exp(-np.outer(u, v))
    w = np.frombuffer(bytes.fromhex("1c93b1f1fbe4dfbf6445bea79997ec3f90e0fbc02ce2e3bfa03bf3517d86e4bfe0833551d436d3bf"
                                    "281b61edcf3ee1bf"), np.float64).reshape(2, 3)
    a = lt.asarray(x).requires_grad_()
    t = torch.tensor(x, requires_grad=True)
    ((1 / getattr(a, name)(0)) * lt.asarray(w)).sum().backward()
    ((1 / getattr(t, name)(0)) * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), t.grad.numpy(), rtol=1e-12, atol=0)


def test_grad_of_pytree_arguments_as_torch_func():
    """lt.grad and value_and_grad take a dict, list or tuple of tensors (nested) as an argument, and give the
    gradients in its structure, as JAX's and torch.func's."""
    a, b, x = random_array((3, 2), lt.float64, 1), random_array((2,), lt.float64, 2), random_array((4, 3), lt.float64, 3)

    def loss(p, x):
        return ((x @ p["w"] + p["b"][0]) ** 2).sum() + (p["b"][1] * 3).sum()

    ours = lt.grad(loss)({"w": lt.asarray(a), "b": [lt.asarray(b), lt.asarray(b * 2)]}, lt.asarray(x))
    theirs = torch.func.grad(loss)({"w": torch.tensor(a), "b": [torch.tensor(b), torch.tensor(b * 2)]}, torch.tensor(x))
    assert set(ours) == {"w", "b"} and isinstance(ours["b"], list)
    check(ours["w"], theirs["w"])
    check(ours["b"][0], theirs["b"][0])
    check(ours["b"][1], theirs["b"][1])
    value, (gp, gx) = lt.value_and_grad(loss, argnums=(0, 1))({"w": lt.asarray(a), "b": (lt.asarray(b),) * 2},
                                                              lt.asarray(x))
    check(gx, torch.func.grad(loss, argnums=1)({"w": torch.tensor(a), "b": (torch.tensor(b),) * 2}, torch.tensor(x)))
    assert isinstance(gp["b"], tuple) and value.shape == ()



def _both(a: np.ndarray) -> tuple[lt.Tensor, torch.Tensor]:
    return lt.asarray(a).requires_grad_(), torch.tensor(a, requires_grad=True)


@pytest.mark.parametrize("dtype", [lt.float32, lt.float64])
def test_register_hook_and_retain_grad_as_pytorch(dtype):
    """A tensor hook sees the tensor's whole gradient (from every use) and may replace it, for what flows on and
    for a leaf's `.grad`; `retain_grad` keeps a non-leaf's (after its hooks); a removed hook runs no more."""
    a, b = random_array((3, 4), dtype, 1), random_array((4,), dtype, 2)
    results = []
    for x, w in zip(_both(a), _both(b)):
        seen = []
        y = x * w  # broadcast: w's gradient sums over rows
        y.retain_grad()
        h1 = y.register_hook(lambda g, seen=seen: seen.append(g * 1))
        h2 = y.register_hook(lambda g: g * 3)
        hw = w.register_hook(lambda g: g + 1)  # a leaf's replacement goes into .grad
        z = y.sin() + y * y  # two uses: the hook sees their sum, once
        z.sum().backward()
        assert len(seen) == 1
        got = [seen[0], y.grad, x.grad, w.grad]
        for h in (h1, h2, hw):
            h.remove()
        x.grad = w.grad = None
        (x * w).sum().backward()
        results.append([*got, x.grad, w.grad])
    for got, want in zip(*results):
        check(got, want)


def test_hooks_on_a_root_and_in_a_gradients_call():
    a = random_array((5,), lt.float32, 3)
    x, tx = _both(a)
    y, ty = x.exp(), tx.exp()
    y.register_hook(lambda g: g * 2)
    ty.register_hook(lambda g: g * 2)
    (gx,) = lt.autograd.gradients(y, [x], lt.ones(5))
    (tgx,) = torch.autograd.grad(ty, [tx], torch.ones(5), retain_graph=True)
    check(gx, tgx)
    s, ts = y.sum(), ty.sum()
    s.register_hook(lambda g: g * 10)  # the root's own gradient, the seed
    ts.register_hook(lambda g: g * 10)
    s.backward()
    ts.backward()
    check(x.grad, tx.grad)
    with pytest.raises(RuntimeError, match="does not require grad"):
        lt.ones(3).register_hook(lambda g: g)
    assert x.is_leaf and not y.is_leaf and lt.ones(2).is_leaf


def test_grad_fn_names_the_op_and_walks_to_the_leaves_as_torch():
    a = random_array((3, 4), lt.float32, 5)
    x, tx = lt.asarray(a).requires_grad_(), torch.tensor(a, requires_grad=True)
    for f in (lambda t: t * 2, lambda t: t.exp(), lambda t: t.cumsum(0), lambda t: t.softmax(-1)):
        ours, theirs = f(x).grad_fn, f(tx).grad_fn
        assert ours.name() == theirs.name().rstrip("0123456789"), theirs.name()
        (leaf, _), = [n for n in ours.next_functions if n[0] is not None]
        assert leaf.name() == "AccumulateGrad" and leaf.variable is x and leaf.next_functions == ()
    y = (x * 2).sum(0)
    assert repr(y.grad_fn) == "<ReshapeBackward object>"  # the reduction keeps its axis, then drops it
    total = y.grad_fn.next_functions[0][0]
    assert total.name() == "SumBackward" and total.next_functions[0][0].name() == "MulBackward"
    assert (x * 2).grad_fn.next_functions[1] == (None, 0)  # the constant 2 requires no grad
    assert y.grad_fn == y.grad_fn and len({y.grad_fn, y.grad_fn}) == 1
    assert x.grad_fn is None and y.detach().grad_fn is None and lt.ones(2).grad_fn is None
    with lt.no_grad():
        assert (x * 2).grad_fn is None


@pytest.mark.filterwarnings("ignore:Using backward\\(\\) with create_graph")  # torch's, about its own memory
def test_backward_takes_torchs_arguments_as_the_autograd_tutorial_calls_it():
    """`out.backward(torch.ones_like(out), retain_graph=True)` twice accumulates, `grad.zero_()` resets;
    `inputs=` fills only the tensors named (a non-leaf too); `create_graph=True` gives a differentiable gradient."""
    a = np.eye(4, 5, dtype=np.float32)
    results = []
    for lib, inp in ((lt, lt.asarray(a).requires_grad_()), (torch, torch.tensor(a, requires_grad=True))):
        out = (inp + 1).pow(2).t()
        grads = []
        for zero_first in (False, False, True):
            if zero_first:
                inp.grad.zero_()
            out.backward(lib.ones_like(out), retain_graph=True)
            grads.append(inp.grad.clone())
        results.append(grads)
    for ours, theirs in zip(*results):
        check(ours, theirs)
    x0, w0 = random_array((3,), lt.float32, 1), random_array((3,), lt.float32, 2)
    results = []
    for lib, make in ((lt, lambda v: lt.asarray(v).requires_grad_()),
                      (torch, lambda v: torch.tensor(v, requires_grad=True))):
        x, w = make(x0), make(w0)
        h = x * w
        (h.exp().sum()).backward(inputs=[w, h])
        results.append((x.grad, w.grad, h.grad))
        y = (x ** 3).sum()
        y.backward(create_graph=True, inputs=x)
        g = x.grad
        x.grad = None
        g.sum().backward(inputs=[x])
        results.append((x.grad,))
    assert results[0][0] is None and results[2][0] is None  # x was not named
    check(results[0][1], results[2][1])
    check(results[0][2], results[2][2])
    check(results[1][0], results[3][0])  # 6x: the second derivative through the recorded gradient
    with pytest.raises(RuntimeError, match="inputs="):
        (lt.ones(2).requires_grad_() * 2).sum().backward(inputs=[lt.ones(2)])


def test_retain_grad_accumulates_and_a_wrong_hook_shape_raises():
    a = random_array((2, 3), lt.float32, 4)
    grads = []
    for x in _both(a):
        y = x * x
        y.retain_grad()
        y.sum().backward(retain_graph=True) if isinstance(y, torch.Tensor) else y.sum().backward()
        y.sum().backward()
        grads.append(y.grad)
    check(*grads)
    x = lt.asarray(a).requires_grad_()
    y = x * 2
    y.register_hook(lambda g: g.sum())
    with pytest.raises(RuntimeError, match="shape"):
        y.sum().backward()



def test_backward_ops_name_the_line_of_backward_and_of_the_users_hooks():
    """The gradient's nodes name the user's call of backward, and those a hook or a custom backward makes name
    that code's own line, as errors and lt.explain show them."""
    def hook(g):
        return g * 3.0  # marker: hook

    def custom_backward(g):
        return [g.exp()]  # marker: custom backward

    data = np.linspace(0.1, 1.0, 6).reshape(2, 3)
    x = lt.asarray(data).requires_grad_()
    y = x.sin() * 2.0
    y.register_hook(hook)
    z = lt.autograd.custom_vjp([y], lambda: y * 1.0, custom_backward)
    loss = (z.exp() / 4.0).sum()
    forward = graph_lines(loss)
    loss.backward()  # marker: backward
    markers = ("# marker: backward", "# marker: hook", "# marker: custom backward")
    assert graph_lines(x.grad) - forward == {marked_line(__file__, m) for m in markers}
    t = torch.tensor(data)
    y = t.sin() * 2.0  # d/dy of sum(exp(y) / 4) is exp(y) / 4; then the custom backward's exp, the hook's * 3
    check(x.grad, torch.exp(torch.exp(y) / 4.0) * 3.0 * 2.0 * t.cos())


def test_an_optimizers_update_names_the_line_of_step_or_of_the_users_update():
    class Halving(lt.optim.SGD):
        def _update(self, p, grad, state, group):
            return p - grad * 0.5  # marker: user update

    for opt_class, marker in ((lt.optim.Adam, "# marker: step"), (Halving, "# marker: user update")):
        w = lt.nn.Parameter(lt.asarray(np.ones((2, 2), dtype=np.float32)))
        opt = opt_class([w])
        before = graph_lines(w)
        (w * w).sum().backward()
        grad_lines = graph_lines(w.grad)
        opt.step()  # marker: step
        assert graph_lines(w) - before - grad_lines == {marked_line(__file__, marker)}
