"""Small dense linear algebra on lists of floats (the standard library only).

The element code ships inside the FMUs with nothing but the Python standard library, so
its few matrix operations (at most about 12x12: the friction chain's J_R^-1 blocks, the
vehicle's constrained mass matrix) are written here.  A matrix is a list of rows, a
vector a list of floats.  At these sizes plain Python is about as fast as numpy, whose
per-call overhead dominates (``benchmarks/bench_dense.py`` measures both).

Method: Gaussian elimination with partial (row) pivoting, the LU factorisation LAPACK's
``dgesv`` uses (Golub & Van Loan, *Matrix Computations*, algorithm 3.4.1); results agree
with numpy to rounding, not bit for bit (the update order of the elimination differs).
"""
from __future__ import annotations

import math
from operator import mul


class SingularMatrixError(ArithmeticError):
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


def dot(x, y) -> float:
    return sum(map(mul, x, y), 0.0)


def matvec(a, x) -> list[float]:
    """A x."""
    return [sum(map(mul, row, x), 0.0) for row in a]


def matmul(a, b) -> list[list[float]]:
    """A B."""
    columns = list(zip(*b))
    return [[sum(map(mul, row, column), 0.0) for column in columns] for row in a]


def submatrix(a, rows, cols) -> list[list[float]]:
    """A[rows, cols] (numpy's ``a[np.ix_(rows, cols)]``)."""
    return [[a[i][j] for j in cols] for i in rows]


def norm(x) -> float:
    """Euclidean norm."""
    return math.sqrt(sum(v * v for v in x))


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
