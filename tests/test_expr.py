"""Symbolic index expressions: simplification must never change a value."""
from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lazytensor.kernels.expr import Bound, Div, Expr, Mod, Var, flat_index, simplify_bounds, unflatten_index

pytestmark = pytest.mark.fast  # the edit-test tier (pyproject.toml)


def evaluate(e: Expr, env: dict[Var, int]) -> int:
    total = e.const
    for atom, k in e.terms:
        if isinstance(atom, Var):
            v = env[atom]
        elif isinstance(atom, Div):
            v = evaluate(atom.x, env) // atom.c
        else:
            assert isinstance(atom, Mod)
            v = evaluate(atom.x, env) % atom.c
        total += k * v
    return total


def assignments(vars_: list[Var]):
    for values in itertools.product(*(range(v.size) for v in vars_)):
        yield dict(zip(vars_, values))


I, J = Var("i", 4), Var("j", 6)
i, j = Expr.of(I), Expr.of(J)


def test_reshape_and_its_inverse_collapse_to_the_plain_index():
    flat = i * 6 + j
    for shape in [(2, 12), (24,), (2, 3, 4), (2, 2, 3, 2), (3, 8)]:
        assert flat_index(unflatten_index(flat, shape), shape) == flat


def test_div_and_mod_fold_using_ranges():
    assert (i * 6 + j) // 6 == i
    assert (i * 6 + j) % 6 == j
    assert (i * 6 + j) // 12 == i // 2
    assert str((i * 6 + j) % 12) == "(j + (i % 2)*6)"
    assert j % 8 == j and j // 8 == Expr.of(0)
    assert Expr.of(Var("one", 1)) == Expr.of(0)


def test_ranges_are_tracked():
    e = i * 3 - j + 2
    assert (e.vmin, e.vmax) == (-3, 11)
    assert ((i - 1) // 3).vmin == -1


def test_bounds_simplify():
    assert simplify_bounds([Bound(i, 0, 4)]) == ()
    assert simplify_bounds([Bound(i - 5, 0, 10)]) is None
    kept = simplify_bounds([Bound(i - 1, 0, 3), Bound(i - 1, 0, 3)])
    assert kept == (Bound(i - 1, 0, 3),)


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_simplification_preserves_values(data):
    sizes = [data.draw(st.integers(1, 5)) for _ in range(data.draw(st.integers(1, 3)))]
    vars_ = [Var(f"v{k}", n) for k, n in enumerate(sizes)]
    coefs = [data.draw(st.integers(-6, 6)) for _ in vars_]
    const = data.draw(st.integers(-5, 5))
    steps = data.draw(st.lists(st.tuples(st.sampled_from(["div", "mod", "add"]), st.integers(1, 7),
                                         st.integers(0, len(vars_) - 1), st.integers(-3, 3)), max_size=4))

    def build(make_var, floordiv, mod):
        e = const
        for v, k in zip(vars_, coefs):
            e = e + make_var(v) * k
        for op, c, which, k in steps:
            if op == "div":
                e = floordiv(e, c)
            elif op == "mod":
                e = mod(e, c)
            else:
                e = e + make_var(vars_[which]) * k
        return e

    symbolic = build(Expr.of, lambda e, c: e // c, lambda e, c: e % c)
    for env in assignments(vars_):
        expected = build(env.__getitem__, lambda e, c: e // c, lambda e, c: e % c)
        value = evaluate(symbolic, env)
        assert value == expected, f"{symbolic} at {env}: {value} != {expected}"
        assert symbolic.vmin <= value <= symbolic.vmax


def test_coefficients_wrap_modulo_the_divisor():
    o, r = Expr.of(Var("o", 4)), Expr.of(Var("r", 3))
    assert (o + r * 9) % 8 == o + r
    assert (o + r * 9) // 8 == r
