"""Lemke's method (solvers.lcp) on known, degenerate and random friction problems.
lemke takes and returns lists (it ships in the FMUs); the checks use numpy arrays."""
import numpy as np
import pytest

from drivetrain_fmu.solvers.lcp import LcpError, lemke


@pytest.mark.parametrize("M,q,z", [
    ([[2, 1], [1, 2]], [-5, -6], [4 / 3, 7 / 3]),                          # P-matrix, interior solution
    ([[1, 2, 0], [0, 1, 2], [2, 0, 1]], [-1, -1, -1], [1 / 3, 1 / 3, 1 / 3]),  # cyclic
    ([[2, -1, 0], [-1, 2, -1], [0, -1, 2]], [-1, -1, -1], [1.5, 2.0, 1.5]),  # stiffness-like
    (np.eye(3), [-1, -1, -1], [1, 1, 1]),                                  # all ratios tie at the start
    ([[1, 2], [3, 4]], [-1, 0], [1, 0]),                                   # degenerate: q has a zero
])
def test_known_solutions(M, q, z):
    result = lemke(M, q)
    assert result.z == pytest.approx(z, abs=1e-12)
    w = np.array(result.w)
    assert np.all(w >= -1e-12) and abs(np.array(result.z) @ w) < 1e-12


def test_unsolvable_problem_ends_on_a_ray():
    with pytest.raises(LcpError, match="ray"):
        lemke([[-1, 0], [0, -1]], [-1, -1])


def test_bad_shapes_and_values_are_named():
    with pytest.raises(ValueError, match="expected \\(2, 2\\)"):
        lemke(np.eye(3), [1.0, 2.0])
    with pytest.raises(ValueError, match="finite"):
        lemke(np.eye(1), [np.nan])


def test_random_friction_problems_satisfy_coulomb():
    """2000 box-friction LCPs of the vehicle's form (M = [[G, I], [-I, 0]], G positive
    semidefinite and often singular, some capacities zero): every solution is feasible,
    complementary, and gives friction within +-c that saturates against any nonzero
    relative acceleration (lambda = -c sgn(a))."""
    rng = np.random.default_rng(1)
    for trial in range(2000):
        n = int(rng.integers(1, 6))
        A = rng.normal(size=(n, max(1, n - 1)))
        G = A @ A.T
        L = 3 * rng.normal(size=n)
        c = rng.uniform(0.1, 2.0, size=n)
        if trial % 5 == 0:
            c[0] = 0.0
        M = np.block([[G, np.eye(n)], [-np.eye(n), np.zeros((n, n))]])
        result = lemke(M, np.concatenate([L - G @ c, 2 * c]))
        z, w = np.array(result.z), np.array(result.w)
        assert np.all(z >= -1e-12) and np.all(w >= -1e-9) and abs(z @ w) < 1e-8
        lam = z[:n] - c
        accel = G @ lam + L
        assert np.all(np.abs(lam) <= c + 1e-9)
        moving = np.abs(accel) > 1e-7
        assert np.allclose(lam[moving], -np.sign(accel[moving]) * c[moving], atol=1e-7)
