"""Symbolic integer index expressions.

Every address a kernel touches is an `Expr`: an affine combination
`const + sum(coef * atom)` whose atoms are loop variables (`Var`), floor
division / modulo of a smaller expression by a positive constant (`Div`, `Mod`),
and a smaller expression times the sizes of some of the kernel's loops (`Stride`:
a stride that a kernel generic over those sizes computes, `kernels/symbolic.py`).
Movement ops (reshape, permute, pad, ...) build these expressions; the
constructors simplify as they go, using each variable's range, so that a
reshape followed by its inverse collapses back to the plain index.

Division and modulo have Python (floor) semantics. Expressions are values:
equal structure means equal objects under `==` and `hash`.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from math import gcd
from typing import NamedTuple, Union


@dataclass(frozen=True, slots=True)
class Var:
    """A loop variable ranging over `0 .. size-1`."""

    name: str
    size: int
    _hash: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:  # expressions are dictionary keys by the thousand: hash each once
        object.__setattr__(self, "_hash", hash((self.name, self.size)))

    def __hash__(self) -> int:
        return self._hash

    @property
    def vmin(self) -> int:
        return 0

    @property
    def vmax(self) -> int:
        return self.size - 1

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True, slots=True)
class Div:
    """`x // c` for a constant c > 1 that could not be simplified away."""

    x: Expr
    c: int
    _hash: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_hash", hash((Div, self.x, self.c)))

    def __hash__(self) -> int:
        return self._hash

    @property
    def vmin(self) -> int:
        return self.x.vmin // self.c

    @property
    def vmax(self) -> int:
        return self.x.vmax // self.c

    def __str__(self) -> str:
        return f"({self.x} // {self.c})"


@dataclass(frozen=True, slots=True)
class Mod:
    """`x % c` for a constant c > 1 that could not be simplified away."""

    x: Expr
    c: int
    _hash: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_hash", hash((Mod, self.x, self.c)))

    def __hash__(self) -> int:
        return self._hash

    @property
    def vmin(self) -> int:
        return 0

    @property
    def vmax(self) -> int:
        return self.c - 1 if self.x.vmin < 0 else min(self.c - 1, self.x.vmax)

    def __str__(self) -> str:
        return f"({self.x} % {self.c})"


# A loop size no launch reaches: the largest a generic kernel's loop may have (`kernels/symbolic.py`), and so the
# largest factor a `Stride` multiplies by per size it reads.
UNBOUNDED = 1 << 62


@dataclass(frozen=True, slots=True)
class Stride:
    """`x` times the sizes of the kernel's loops named `by` (one factor per name, a name repeated for a square):
    an index's stride that is a product of sizes (`i*t*t + j*t + k` over a `(h, t, t)` array), which a kernel
    generic over those sizes reads at runtime. It reads the loops' sizes, not their variables: `vars()` leaves the
    names out, and substituting a variable leaves them as they are. Its range holds for every size from 0 to
    `UNBOUNDED`, so a simplification that its range allows holds at every size."""

    x: Expr
    by: tuple[str, ...]
    _hash: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_hash", hash((Stride, self.x, self.by)))

    def __hash__(self) -> int:
        return self._hash

    @property
    def vmin(self) -> int:
        return min(0, self.x.vmin * UNBOUNDED ** len(self.by))

    @property
    def vmax(self) -> int:
        return max(0, self.x.vmax * UNBOUNDED ** len(self.by))

    def __str__(self) -> str:
        return f"({self.x} * |{' '.join(self.by)}|)"


Atom = Var | Div | Mod | Stride
IntLike = Union["Expr", int]


def _atom_order(term: tuple[Atom, int]) -> tuple[int, str]:
    atom = term[0]
    return (0 if isinstance(atom, Var) else 1, str(atom))


@dataclass(frozen=True, slots=True)
class Expr:
    """`const + sum(coef * atom for atom, coef in terms)`, kept in canonical order."""

    const: int
    terms: tuple[tuple[Atom, int], ...] = ()
    vmin: int = field(default=0, compare=False, hash=False)
    vmax: int = field(default=0, compare=False, hash=False)
    _hash: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_hash", hash((self.const, self.terms)))

    def __hash__(self) -> int:
        return self._hash

    @staticmethod
    def make(const: int, coefs: dict[Atom, int]) -> Expr:
        const += _recombine_div_mod(coefs)
        for atom in [a for a in coefs if a.vmin == a.vmax]:  # a size-1 loop, or a div/mod that folds
            const += coefs.pop(atom) * atom.vmin
        terms = tuple(sorted(((a, k) for a, k in coefs.items() if k != 0), key=_atom_order))
        lo = hi = const
        for atom, k in terms:
            lo += k * (atom.vmin if k > 0 else atom.vmax)
            hi += k * (atom.vmax if k > 0 else atom.vmin)
        return Expr(const, terms, lo, hi)

    @staticmethod
    def of(x: IntLike | Atom) -> Expr:
        if isinstance(x, Expr):
            return x
        if isinstance(x, int):
            return Expr(x, (), x, x)
        return Expr.make(0, {x: 1})

    @property
    def is_const(self) -> bool:
        return not self.terms

    def vars(self) -> set[Var]:
        """Every loop variable this expression reads."""
        out: set[Var] = set()
        stack: list[Expr] = [self]
        while stack:
            for atom, _ in stack.pop().terms:
                if isinstance(atom, Var):
                    out.add(atom)
                else:
                    stack.append(atom.x)
        return out

    def substitute(self, mapping: dict[Var, Expr]) -> Expr:
        """This expression with each variable in `mapping` replaced by its expression.

        Built again through the constructors, so a `Div` or `Mod` over the new terms simplifies with
        the new variables' ranges. An expression that reads none of the variables is returned as is."""
        if not self.vars() & mapping.keys():
            return self
        out = Expr.of(self.const)
        for atom, k in self.terms:
            if isinstance(atom, Var):
                term = mapping.get(atom, Expr.of(atom))
            elif isinstance(atom, Div):
                term = atom.x.substitute(mapping) // atom.c
            elif isinstance(atom, Mod):
                term = atom.x.substitute(mapping) % atom.c
            else:
                term = atom.x.substitute(mapping).times(atom.by)
            out = out + term * k
        return out

    def times(self, by: tuple[str, ...]) -> Expr:
        """This expression times the sizes of the loops named `by` (see `Stride`)."""
        if not by or self.is_const and self.const == 0:
            return self
        return Expr.make(0, {Stride(self, tuple(sorted(by))): 1})

    def strides(self) -> set[str]:
        """The names of the loops whose sizes this expression reads (its `Stride`s')."""
        out: set[str] = set()
        stack: list[Expr] = [self]
        while stack:
            for atom, _ in stack.pop().terms:
                if isinstance(atom, Stride):
                    out.update(atom.by)
                if not isinstance(atom, Var):
                    stack.append(atom.x)
        return out

    def __add__(self, other: IntLike) -> Expr:
        other = Expr.of(other)
        coefs = dict(self.terms)
        for atom, k in other.terms:
            coefs[atom] = coefs.get(atom, 0) + k
        return Expr.make(self.const + other.const, coefs)

    __radd__ = __add__

    def __neg__(self) -> Expr:
        return self * -1

    def __sub__(self, other: IntLike) -> Expr:
        return self + (-Expr.of(other))

    def __rsub__(self, other: IntLike) -> Expr:
        return Expr.of(other) - self

    def __mul__(self, k: int) -> Expr:
        if not isinstance(k, int):
            raise TypeError("index expressions are affine: multiply only by an integer constant")
        return Expr.make(self.const * k, {a: c * k for a, c in self.terms})

    __rmul__ = __mul__

    def __floordiv__(self, c: int) -> Expr:
        return _floordiv(self, c)

    def __mod__(self, c: int) -> Expr:
        return _mod(self, c)

    def __str__(self) -> str:
        parts = [str(a) if k == 1 else f"{a}*{k}" for a, k in self.terms]
        if self.const or not parts:
            parts.append(str(self.const))
        return parts[0] if len(parts) == 1 else "(" + " + ".join(parts) + ")"


def _recombine_div_mod(coefs: dict[Atom, int]) -> int:
    """Rewrite `k*c*(x // c) + k*(x % c)` as `k*x` in place, until nothing changes: what a
    reshape and its inverse leave behind. Returns the constant the rewrites add."""
    const, changed = 0, True
    while changed:
        changed = False
        for atom in [a for a in coefs if isinstance(a, Mod)]:
            k = coefs.get(atom, 0)
            quotient = atom.x // atom.c
            if not k or quotient.const or len(quotient.terms) != 1 or quotient.terms[0][1] != 1:
                continue
            div = quotient.terms[0][0]
            if coefs.get(div, 0) == k * atom.c:
                del coefs[atom], coefs[div]
                for inner, kk in atom.x.terms:
                    coefs[inner] = coefs.get(inner, 0) + k * kk
                const += k * atom.x.const
                changed = True
    return const


def _split(e: Expr, c: int) -> tuple[Expr, Expr]:
    """Split `e` into `(c*q, r)` where q collects the terms whose coefficient c divides."""
    q: dict[Atom, int] = {}
    r: dict[Atom, int] = {}
    for atom, k in e.terms:
        (q if k % c == 0 else r)[atom] = k
    q0, r0 = divmod(e.const, c)
    return Expr.make(q0 * c, q), Expr.make(r0, r)


def _wrap(e: Expr, c: int) -> tuple[Expr, Expr]:
    """`e = c*q + r` with every coefficient of r in [0, c): `(o + 9*r) // 8` is `r + (o + r) // 8`,
    which folds when `o + r < 8` (what convolution windows leave behind)."""
    q0, r0 = divmod(e.const, c)
    return (Expr.make(q0, {a: k // c for a, k in e.terms}),
            Expr.make(r0, {a: k % c for a, k in e.terms}))


@lru_cache(maxsize=1 << 16)  # views ask for the same quotients again and again (convolution windows)
def _floordiv(e: Expr, c: int) -> Expr:
    if c <= 0:
        raise ValueError("index division needs a positive constant")
    if c == 1:
        return e
    if e.vmin // c == e.vmax // c:
        return Expr.of(e.vmin // c)
    multiple, rest = _split(e, c)
    quotient = Expr.make(multiple.const // c, {a: k // c for a, k in multiple.terms})
    if rest.vmin // c == rest.vmax // c:
        return quotient + rest.vmin // c
    wrapped, small = _wrap(rest, c)
    if small.vmin // c == small.vmax // c:
        return quotient + wrapped + small.vmin // c
    g = gcd(c, *(k for _, k in rest.terms))
    if g > 1:
        return quotient + Expr.make(rest.const // g, {a: k // g for a, k in rest.terms}) // (c // g)
    if rest.const == 0 and len(rest.terms) == 1 and rest.terms[0][1] == 1:
        atom = rest.terms[0][0]
        if isinstance(atom, Div):
            return quotient + atom.x // (atom.c * c)
        if isinstance(atom, Mod) and atom.c % c == 0:
            return quotient + (atom.x // c) % (atom.c // c)
    best = Expr.of(Div(rest, c))
    for d in _partial_divisors(rest, c):
        best = min(best, (rest // d) // (c // d), key=_complexity)
    return quotient + best


@lru_cache(maxsize=1 << 16)
def _mod(e: Expr, c: int) -> Expr:
    if c <= 0:
        raise ValueError("index modulo needs a positive constant")
    if c == 1:
        return Expr.of(0)
    if 0 <= e.vmin and e.vmax < c:
        return e
    _, rest = _split(e, c)
    if rest.vmin // c == rest.vmax // c:
        return rest - c * (rest.vmin // c)
    _, small = _wrap(rest, c)
    if small.vmin // c == small.vmax // c:
        return small - c * (small.vmin // c)
    g = gcd(c, rest.const, *(k for _, k in rest.terms))
    if g > 1:
        return (Expr.make(rest.const // g, {a: k // g for a, k in rest.terms}) % (c // g)) * g
    if rest.const == 0 and len(rest.terms) == 1 and rest.terms[0][1] == 1:
        atom = rest.terms[0][0]
        if isinstance(atom, Mod) and atom.c % c == 0:
            return atom.x % c
    best = Expr.of(Mod(rest, c))
    # On a tie the split wins: the variables it leaves outside the modulo read with unit stride, as
    # `(4*run + r) % 56` read as `(run % 14)*4 + r` (a convolution's k in A's runs, `kernels/llvm/gemm.py`)
    for d in _partial_divisors(rest, c):
        best = min(((rest // d) % (c // d)) * d + rest % d, best, key=_complexity)
    return best


def _partial_divisors(e: Expr, c: int) -> list[int]:
    """Proper divisors of c shared with a coefficient: splitting `// c` into `// d // (c//d)`
    lets `(6*i + j) // 12` become `i // 2` when j < 6."""
    return sorted({g for _, k in e.terms if 1 < (g := gcd(k, c)) < c})


def _complexity(e: Expr) -> int:
    return len(str(e))


class Bound(NamedTuple):
    """The constraint `lo <= expr < hi`; a load or value is valid where all its bounds hold."""

    expr: Expr
    lo: int
    hi: int

    def __str__(self) -> str:
        return f"{self.lo} <= {self.expr} < {self.hi}"


Bounds = tuple[Bound, ...]


def simplify_bounds(bounds: list[Bound] | Bounds) -> Bounds | None:
    """Drop constraints that always hold; return None when one can never hold."""
    out: list[Bound] = []
    for b in bounds:
        if b.expr.vmax < b.lo or b.expr.vmin >= b.hi or b.lo >= b.hi:
            return None
        if b.expr.vmin >= b.lo and b.expr.vmax < b.hi:
            continue
        if b not in out:
            out.append(b)
    return tuple(out)


# Kept by their arguments (see `lazytensor.views.source_index`): a deep network's kernels load their
# buffers at the same indexes, block after block.
@lru_cache(maxsize=1 << 16)
def flat_index(idx: tuple[Expr, ...], shape: tuple[int, ...]) -> Expr:
    """Row-major linear index of `idx` into a contiguous array of `shape`."""
    flat = Expr.of(0)
    stride = 1
    for i, n in reversed(list(zip(idx, shape))):
        if n != 1:
            flat = flat + i * stride
        stride *= n
    return flat


@lru_cache(maxsize=1 << 16)
def unflatten_index(flat: Expr, shape: tuple[int, ...]) -> tuple[Expr, ...]:
    """Inverse of `flat_index`: per-dimension indices of a row-major position."""
    out: list[Expr] = []
    stride = 1
    for n in reversed(shape):
        out.append((flat // stride) % n if n != 1 else Expr.of(0))
        stride *= n
    return tuple(reversed(out))
