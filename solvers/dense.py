"""Small dense linear algebra on lists of floats (the standard library only).

The element code ships inside the FMUs with nothing but the Python standard library, so
its few matrix operations (at most about 12x12: the friction chain's J_R^-1 blocks, the
vehicle's constrained mass matrix) are written here.  A matrix is a list of rows, a
vector a list of floats.  Measured side by side (``benchmarks/bench_dense.py``): a
matrix-vector product costs about what numpy's does up to n = 3 (numpy's per-call overhead)
and grows to 6x at n = 12; a linear solve is 1.4x numpy's at n = 2 and 17x at n = 12.  The
per-step paths therefore avoid solves where they can (the friction chain's all-stuck
frictions are a product with M^-1, formed once), and the element steps cost the same or
less than with numpy (docs/benchmarks.md).

Method: Gaussian elimination with partial (row) pivoting, the LU factorisation LAPACK's
``dgesv`` uses (Golub & Van Loan, *Matrix Computations*, algorithm 3.4.1); results agree
with numpy to rounding, not bit for bit (the update order of the elimination differs).
Symmetric positive semidefinite systems that may be singular (the vehicle's constrained
mass matrix with redundant constraints): Cholesky with complete pivoting, which reveals
the rank, and the minimum-norm solution (:func:`pivoted_cholesky`, :func:`min_norm_solve`).
"""
from __future__ import annotations

import math
import sys
from itertools import chain
from operator import mul
from typing import Sequence

from .contract import SolverError

EPSILON = sys.float_info.epsilon


class SingularMatrixError(SolverError, ArithmeticError):
    """The matrix of a linear system is singular (no pivot above rounding)."""


def zeros(rows: int, cols: int) -> list[list[float]]:
    return [[0.0] * cols for _ in range(rows)]


def identity(n: int) -> list[list[float]]:
    matrix = zeros(n, n)
    for i in range(n):
        matrix[i][i] = 1.0
    return matrix


def transpose(a) -> list[list[float]]:
    return [list(column) for column in zip(*a)]


def dot(x: Sequence[float], y: Sequence[float]) -> float:
    """x . y: the products summed from 0.0 in index order, one rounding per addition on every
    CPython (``sum()`` of floats compensates its rounding from CPython 3.12 on); y at least as
    long as x."""
    total = 0.0
    for i in range(len(x)):
        total += x[i] * y[i]
    return total


def matvec(a: Sequence[Sequence[float]], x: Sequence[float]) -> list[float]:
    """A x, each row's product summed as :func:`dot` sums it (its loop inlined: the rows are
    few and short, and the friction chain's step takes several products)."""
    products = []
    for row in a:
        total = 0.0
        for i in range(len(row)):
            total += row[i] * x[i]
        products.append(total)
    return products


def quadratic_form(a: Sequence[Sequence[float]], x: Sequence[float]) -> float:
    """x . (A x), summed as ``dot(x, matvec(a, x))``."""
    return dot(x, matvec(a, x))


def matmul(a, b) -> list[list[float]]:
    """A B, each entry summed as :func:`dot` sums it."""
    columns = list(zip(*b))
    return [[dot(row, column) for column in columns] for row in a]


def submatrix(a, rows, cols) -> list[list[float]]:
    """A[rows, cols] (numpy's ``a[np.ix_(rows, cols)]``)."""
    return [[a[i][j] for j in cols] for i in rows]


def lu_factor(a):
    """LU factors of a square matrix with partial pivoting: (LU in one matrix, row order).

    Raises SingularMatrixError when a pivot vanishes (exactly, or is not finite)."""
    n = len(a)
    lu = [list(map(float, row)) for row in a]
    if any(len(row) != n for row in lu):
        raise ValueError(f"lu_factor needs a square matrix, got {n} rows of lengths {[len(r) for r in lu]}")
    order = list(range(n))
    for k in range(n):
        pivot_row = max(range(k, n), key=lambda i: abs(lu[i][k]))
        pivot = lu[pivot_row][k]
        if pivot == 0.0 or not math.isfinite(pivot):
            raise SingularMatrixError(f"singular matrix (pivot {pivot!r} in column {k})")
        if pivot_row != k:
            lu[k], lu[pivot_row] = lu[pivot_row], lu[k]
            order[k], order[pivot_row] = order[pivot_row], order[k]
        row_k = lu[k]
        tail = row_k[k + 1:]
        for i in range(k + 1, n):
            row_i = lu[i]
            factor = row_i[k] / pivot
            row_i[k] = factor
            if factor:
                row_i[k + 1:] = [x - factor * y for x, y in zip(row_i[k + 1:], tail)]
    return lu, order


def lu_solve(factors, b) -> list[float]:
    """x with A x = b from :func:`lu_factor`'s factors (b a vector)."""
    lu, order = factors
    n = len(lu)
    y = [float(b[i]) for i in order]
    for i in range(1, n):                       # forward: L y = P b (unit diagonal)
        row = lu[i]
        y[i] -= sum(map(mul, row[:i], y[:i]), 0.0)
    for i in range(n - 1, -1, -1):              # backward: U x = y
        row = lu[i]
        y[i] = (y[i] - sum(map(mul, row[i + 1:], y[i + 1:]), 0.0)) / row[i]
    return y


def solve(a, b) -> list[float]:
    """x with A x = b (b a vector)."""
    if len(b) != len(a):
        raise ValueError(f"solve: {len(a)} equations but {len(b)} right-hand sides")
    return lu_solve(lu_factor(a), b)


def inverse(a) -> list[list[float]]:
    """A^-1 (column by column from one factorisation)."""
    factors = lu_factor(a)
    n = len(a)
    columns = [lu_solve(factors, unit) for unit in identity(n)]
    return transpose(columns)


def pivoted_cholesky(a):
    """Cholesky factors of a symmetric positive semidefinite matrix with complete
    (diagonal) pivoting, stopped at its numerical rank: (R, order, rank) with
    A[order][:, order] = R^T R, R given by its ``rank`` rows (upper trapezoidal, n columns).

    Method: outer-product Cholesky taking the largest remaining diagonal as the pivot
    (Higham, *Accuracy and Stability of Numerical Algorithms*, 2nd ed., section 10.3;
    LAPACK ``dpstrf``).  It stops when no remaining diagonal exceeds ``dpstrf``'s default
    tolerance n eps max(diag A): the Schur complement left is rounding, the rank found.
    Like ``dpstrf`` it does not check that A is semidefinite (an indefinite A stops at
    its first pivot not above the tolerance).  Scalar loops: at these sizes they cost CPython 3.11 fewer instructions than list
    comprehensions (each one a function call)."""
    n = len(a)
    work = [list(row) for row in a]
    if any(len(row) != n for row in work):
        raise ValueError(f"pivoted_cholesky needs a square matrix, got {n} rows of lengths {[len(r) for r in work]}")
    if not all(map(math.isfinite, chain.from_iterable(work))):
        raise ValueError("pivoted_cholesky needs a finite matrix")
    order = list(range(n))
    tolerance = None
    for k in range(n):
        pivot_row, pivot = k, work[k][k]
        for i in range(k + 1, n):
            if work[i][i] > pivot:
                pivot_row, pivot = i, work[i][i]
        if tolerance is None:           # the first pivot is the largest diagonal entry
            tolerance = n * EPSILON * max(pivot, 0.0)
        if not pivot > tolerance:
            return work[:k], order, k
        if pivot_row != k:      # symmetric permutation: swap rows and columns k and pivot_row
            work[k], work[pivot_row] = work[pivot_row], work[k]
            for row in work:
                row[k], row[pivot_row] = row[pivot_row], row[k]
            order[k], order[pivot_row] = order[pivot_row], order[k]
        root = math.sqrt(pivot)
        row_k = work[k]
        row_k[k] = root
        for j in range(k + 1, n):
            row_k[j] /= root
        for i in range(k + 1, n):       # Schur complement A_22 - r r^T (kept symmetric)
            row_i, r_i = work[i], row_k[i]
            row_i[k] = 0.0
            for j in range(k + 1, n):
                row_i[j] -= r_i * row_k[j]
    return work, order, n


def min_norm_solve(factors, b) -> list[float]:
    """The x of smallest Euclidean norm with A x = b, from :func:`pivoted_cholesky`'s
    factors of A (b a vector in the range of A, a consistent system; of an inconsistent
    one the pivoted equations beyond the rank are ignored, which is not least squares).

    With P^T A P = R^T R, R = [R11 R12] (R11 rank x rank, nonsingular), the solutions
    are y = P^T x = [u - T y2; y2] for any y2, with R11^T R11 u = c1 (c = P^T b, its
    first rank entries) and T = R11^-1 R12: [-T; I] spans the null space.  |y|^2 =
    |u - T y2|^2 + |y2|^2 is smallest where (I + T^T T) y2 = T^T u, a symmetric positive
    definite system of the nullity's size (the minimum-norm solution of a rank-deficient
    system from a basic one: Golub & Van Loan, *Matrix Computations*, section 5.5)."""
    rows, order, rank = factors
    n = len(order)
    c = [b[i] for i in order]
    y = _back_substitution(rows, rank, _forward_substitution(rows, rank, c[:rank]))
    if rank < n:
        # T = R11^-1 R12, column by column; then the (n - rank) free coordinates y2
        t_columns = [_back_substitution(rows, rank, [rows[i][j] for i in range(rank)]) for j in range(rank, n)]
        normal = [[dot(ti, tj) + (1.0 if i == j else 0.0) for j, tj in enumerate(t_columns)]
                  for i, ti in enumerate(t_columns)]
        y2 = solve(normal, [dot(ti, y) for ti in t_columns])
        for i in range(rank):
            y[i] -= sum(t[i] * v for t, v in zip(t_columns, y2))
        y += y2
    x = [0.0] * n
    for i, value in zip(order, y):
        x[i] = value
    return x


def _forward_substitution(rows, rank, c):
    """z with R11^T z = c (R11: the leading rank x rank block of the upper triangular
    rows; R11^T's columns are R11's rows)."""
    z = list(c)
    for i in range(rank):
        row = rows[i]
        z_i = z[i] = z[i] / row[i]
        for j in range(i + 1, rank):
            z[j] -= row[j] * z_i
    return z


def _back_substitution(rows, rank, z):
    """u with R11 u = z."""
    u = list(z)
    for i in range(rank - 1, -1, -1):
        row = rows[i]
        u_i = u[i]
        for j in range(i + 1, rank):
            u_i -= row[j] * u[j]
        u[i] = u_i / row[i]
    return u


try:        # compiled, their kernel (tools/generate_kernels.py) replaces the reference functions above
    from .dense_kernel import dot, matvec, quadratic_form
except ImportError:
    pass
