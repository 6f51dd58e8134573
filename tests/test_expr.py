"""Symbolic index expressions: simplification must never change a value."""
from __future__ import annotations

import itertools
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lazytensor.kernels.expr import (
    UNBOUNDED,
    Bound,
    Div,
    Expr,
    Mod,
    Stride,
    Var,
    flat_index,
    simplify_bounds,
    unflatten_index,
)

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


def test_a_modulo_keeps_a_run_outside_where_a_partial_divisor_splits_it():
    """k in runs of 4 over rows of 56 (a convolution's weight gradient): the run's offset stays a plain term,
    of unit stride, which the template's packing copies in runs (`kernels/llvm/gemm.py`, `Layout.a_rows`)."""
    run, r = Expr.of(Var("run", 12544)), Expr.of(Var("r", 4))
    assert (run * 4 + r) % 56 == (run % 14) * 4 + r


def evaluate_strided(e: Expr, env: dict[Var, int], sizes: dict[str, int]) -> int:
    """`e`'s value where its `Stride`s read the loop sizes `sizes` (by name)."""
    total = e.const
    for atom, k in e.terms:
        if isinstance(atom, Var):
            v = env[atom]
        elif isinstance(atom, Stride):
            v = evaluate_strided(atom.x, env, sizes) * math.prod(sizes[name] for name in atom.by)
        elif isinstance(atom, Div):
            v = evaluate_strided(atom.x, env, sizes) // atom.c
        else:
            v = evaluate_strided(atom.x, env, sizes) % atom.c
        total += k * v
    return total


def test_a_stride_reads_loop_sizes_by_name_and_its_range_holds_at_every_size():
    """`Expr.times` makes a `Stride`: it keeps the names of the loops whose sizes it multiplies by, which a
    substitution leaves alone (it reads sizes, not variables); its range covers every size from 0 to `UNBOUNDED`,
    so simplifying with it (a division, a bound) holds whatever sizes a generic kernel runs at."""
    T, K = Var("t", 5), Var("k", 5)
    e = Expr.of(I).times(("t", "t")) + Expr.of(J).times(("t",)) * 3 + K + Expr.of(1).times(("t",)) * 2
    assert e.vars() == {I, J, K} and e.strides() == {"t"} and "|t t|" in str(e)
    assert e.vmin == 0 and e.vmax >= 3 * UNBOUNDED ** 2
    assert Expr.of(0).times(("t",)) == Expr.of(0) and Expr.of(I).times(()) == Expr.of(I)
    moved = e.substitute({J: Expr.of(I) + 1, T: Expr.of(0)})
    assert moved.strides() == {"t"} and J not in moved.vars()
    for t in (1, 2, 7, 64):
        for env in assignments([I, J, K]):
            expected = env[I] * t * t + 3 * env[J] * t + env[K] + 2 * t
            assert evaluate_strided(e, env, {"t": t}) == expected
            assert evaluate_strided(e // 4, env, {"t": t}) == expected // 4
            assert evaluate_strided(e % 3, env, {"t": t}) == expected % 3
            assert evaluate_strided(moved, {**env, J: env[I] + 1}, {"t": t}) == \
                env[I] * t * t + 3 * (env[I] + 1) * t + env[K] + 2 * t
    # a bound that holds at the sizes a kernel was made at does not hold at every size: it is kept
    assert simplify_bounds([Bound(Expr.of(J).times(("t",)), 0, 30)]) == (Bound(Expr.of(J).times(("t",)), 0, 30),)
