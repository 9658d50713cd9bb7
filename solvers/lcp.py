"""Linear complementarity problems by Lemke's method with lexicographic pivoting.

Problem:  find z >= 0 with w = M z + q >= 0 and z . w = 0.

Method (Lemke 1965; Cottle, Pang & Stone, *The Linear Complementarity Problem*,
ch. 4.4 and 4.9): an artificial variable z0 with covering vector e (all ones) makes
w = q + e z0 + M z feasible at z0 = max(-q); complementary pivots then drive z0 out
of the basis.  The leaving variable is chosen by the lexicographic minimum ratio test
on [q, B^-1] (ties broken by the rows of the basis inverse), which prevents cycling
on degenerate problems.  Termination on a secondary ray means the method cannot
solve the problem (no solution, or M not copositive-plus): :class:`LcpError`.

Friction problems of solvers.vehicle (Fan et al. eq. 31) have
M = [[G, I], [-I, 0]] with G = W^T M_c^-1 W positive semidefinite: copositive-plus, so
Lemke's method finds a solution whenever one exists.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from .budget import StepError
from .dense import matvec

MAX_PIVOTS_FACTOR = 50


class LcpError(StepError):
    """Lemke's method ended on a secondary ray or did not finish (a step that cannot be
    taken: the FMU refuses it, keeping its state)."""


@dataclass(frozen=True)
class LcpResult:
    z: list
    w: list
    pivots: int


def lemke(M, q, tol: float = 1e-12) -> LcpResult:
    """Solve w = M z + q, z >= 0, w >= 0, z.w = 0 (module docstring); M a list of rows."""
    q = [float(v) for v in q]
    M = [[float(v) for v in row] for row in M]
    n = len(q)
    if len(M) != n or any(len(row) != n for row in M):
        raise ValueError(f"M has {len(M)} rows of lengths {sorted({len(row) for row in M})}, "
                         f"expected ({n}, {n}) to match q")
    if not all(math.isfinite(v) for row in M + [q] for v in row):
        raise ValueError("M and q must be finite")
    if n == 0 or all(v >= 0.0 for v in q):
        return LcpResult([0.0] * n, q, 0)
    scale = max(1.0, max(abs(v) for row in M for v in row), max(abs(v) for v in q))
    eps = tol * scale
    # columns: w (0..n-1), z (n..2n-1), z0 (2n); tableau rows hold B^-1 [I, -M, -e | q]
    tableau = [[1.0 if k == i else 0.0 for k in range(n)] + [-v for v in M[i]] + [-1.0, q[i]] for i in range(n)]
    basis = list(range(n))                        # w basic
    row = min(range(n), key=q.__getitem__)       # first pivot: z0 enters, the most negative w leaves
    entering = 2 * n
    for pivots in range(1, MAX_PIVOTS_FACTOR * (n + 1)):
        leaving = basis[row]
        _pivot(tableau, row, entering)
        basis[row] = entering
        if leaving == 2 * n:                      # z0 left the basis: solution
            return _solution(tableau, basis, n, M, q, pivots)
        entering = leaving + n if leaving < n else leaving - n   # complement of the leaving one
        column = [tableau_row[entering] for tableau_row in tableau]
        candidates = [i for i in range(n) if column[i] > eps]
        if not candidates:
            raise LcpError(f"Lemke's method ended on a ray after {pivots} pivots (no solution found)")
        row = _lexicographic_min(tableau, candidates, column, n)
    raise LcpError(f"Lemke's method did not finish within {MAX_PIVOTS_FACTOR * (n + 1)} pivots")


def _pivot(tableau, row, column):
    pivot_row = tableau[row]
    pivot = pivot_row[column]
    pivot_row[:] = [v / pivot for v in pivot_row]
    for i, other in enumerate(tableau):
        factor = other[column]
        if i != row and factor != 0.0:
            other[:] = [x - factor * y for x, y in zip(other, pivot_row)]


def _lexicographic_min(tableau, candidates, column, n):
    """Row of the lexicographically smallest [q_i, (B^-1)_i] / column_i; ratios within
    rounding of the smallest count as ties and go on to the next key."""
    rows = list(candidates)
    for k in [-1, *range(n)]:                     # q, then B^-1, which sits where I started
        ratios = [tableau[i][k] / column[i] for i in rows]
        smallest = min(ratios)
        tie = 1e-11 * max(1.0, abs(smallest))
        rows = [i for i, r in zip(rows, ratios) if r <= smallest + tie]
        if len(rows) == 1:
            break
    return rows[0]


def _solution(tableau, basis, n, M, q, pivots):
    z = [0.0] * n
    for i, var in enumerate(basis):
        if n <= var < 2 * n:
            z[var - n] = max(tableau[i][-1], 0.0)
    w = [v + qi for v, qi in zip(matvec(M, z), q)]
    return LcpResult(z, w, pivots)
