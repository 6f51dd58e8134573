"""The linear algebra routines a `LibraryCall` kernel names (`ROUTINES`), and what each computes.

A factorization (LU, Cholesky, QR, a symmetric eigensolver, an SVD) is not a loop nest: its steps depend on
the values (pivots, convergence) and its accuracy on decades of numerical care. So a kernel of that kind calls a
library: LAPACK, as NumPy's `numpy.linalg` (a dependency of lazytensor anyway) calls it, the library a user
would otherwise pick. NumPy computes in float64 whatever the input (float32 included, rounded once at the end),
and loops over a stack of matrices itself.

Each routine takes one or two matrices per entry of the batch and gives a fixed set of results per matrix,
which a `LibraryCall` writes one after another into its row of the output (`result_shapes`). `run` is the
definition: the CPU backend runs it on arrays over its buffers, the reference interpreter on its own arrays.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from typing import NamedTuple

import numpy as np

Shape = tuple[int, ...]


class Routine(NamedTuple):
    """A library routine: how many matrices it reads per entry of the batch, the shapes of its results for
    operands of the given (rows, columns), and NumPy's function of stacks of matrices giving them, stacked."""

    operands: int
    results: Callable[..., tuple[Shape, ...]]
    compute: Callable[..., tuple[np.ndarray, ...]]


def _square(m: int, n: int) -> tuple[Shape, ...]:
    return ((n, n),)


ROUTINES: dict[str, Routine] = {
    "cholesky": Routine(1, _square, lambda a: (np.linalg.cholesky(a),)),  # the lower factor
    "det": Routine(1, lambda m, n: ((),), lambda a: (np.linalg.det(a),)),
    "slogdet": Routine(1, lambda m, n: ((), ()), lambda a: tuple(np.linalg.slogdet(a))),
    "inv": Routine(1, _square, lambda a: (np.linalg.inv(a),)),
    # a's rows and columns, then b's: x with a @ x = b, for k right-hand sides
    "solve": Routine(2, lambda m, n, _, k: ((n, k),), lambda a, b: (np.linalg.solve(a, b),)),
    # from the lower triangle: ascending eigenvalues, and the eigenvectors as columns
    "eigh": Routine(1, lambda m, n: ((n,), (n, n)), lambda a: tuple(np.linalg.eigh(a))),
    "eigvalsh": Routine(1, lambda m, n: ((n,),), lambda a: (np.linalg.eigvalsh(a),)),
    "qr_reduced": Routine(1, lambda m, n: ((m, min(m, n)), (min(m, n), n)), lambda a: tuple(np.linalg.qr(a))),
    "qr_complete": Routine(1, lambda m, n: ((m, m), (m, n)), lambda a: tuple(np.linalg.qr(a, mode="complete"))),
    # U, the singular values in descending order, Vh
    "svd_reduced": Routine(1, lambda m, n: ((m, min(m, n)), (min(m, n),), (min(m, n), n)),
                           lambda a: tuple(np.linalg.svd(a, full_matrices=False))),
    "svd_full": Routine(1, lambda m, n: ((m, m), (min(m, n),), (n, n)),
                        lambda a: tuple(np.linalg.svd(a, full_matrices=True))),
    "svdvals": Routine(1, lambda m, n: ((min(m, n),),), lambda a: (np.linalg.svdvals(a),)),
}


def result_shapes(routine: str, shapes: tuple[tuple[int, int], ...]) -> tuple[Shape, ...]:
    """The shapes of `routine`'s results for one entry of the batch, whose operands have `shapes`."""
    return ROUTINES[routine].results(*(size for shape in shapes for size in shape))


def flops(routine: str, shapes: tuple[tuple[int, int], ...]) -> int:
    """About the arithmetic `routine` does for one entry of the batch: the cube of its matrices' size."""
    m, n = shapes[0]
    return max(m, n) * max(1, min(m, n)) ** 2 + sum(math.prod(s) for s in shapes)


class LibraryError(ArithmeticError):
    """A routine failed on a matrix of a batch (NumPy's LinAlgError: singular, not positive definite, no
    convergence), the first one that fails; `position` is the kernel's place among the kernels of a launch
    that runs several as one (a batch), else None."""

    def __init__(self, routine: str, index: int, batch: int, reason: str):
        super().__init__(f"{routine}: matrix {index} of the batch of {batch}: {reason}")
        self.routine, self.index, self.position = routine, index, None


def run(routine: str, operands: list[np.ndarray], out: np.ndarray, lo: int, hi: int) -> None:
    """`routine` on entries [lo, hi) of the batch: `operands` are stacks of matrices (batch, rows, columns),
    `out` is (batch, K) and gets each entry's results, flattened, one after another. Raises LibraryError
    naming the first entry it fails on."""
    r = ROUTINES[routine]
    if hi <= lo:
        return
    try:
        results = r.compute(*(a[lo:hi] for a in operands))
    except np.linalg.LinAlgError:
        for i in range(lo, hi):  # NumPy fails the whole stack: find the matrix
            try:
                r.compute(*(a[i:i + 1] for a in operands))
            except np.linalg.LinAlgError as e:
                raise LibraryError(routine, i, len(out), str(e)) from None
        raise
    start = 0
    for result in results:
        size = result.size // (hi - lo)
        out[lo:hi, start:start + size] = result.reshape(hi - lo, size)
        start += size


__all__ = ["ROUTINES", "LibraryError", "Routine", "flops", "result_shapes", "run"]
