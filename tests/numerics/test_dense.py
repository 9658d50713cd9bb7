"""solvers.dense (small dense linear algebra on lists, shipped in the FMUs) against numpy.

Tolerances are forward-error bounds of backward-stable methods, c n kappa eps (n the
order, kappa the condition number, eps the machine epsilon), with the constant c stated
at each test and the ratio measured when it was written."""
import numpy as np
import pytest

from drivetrain_fmu.solvers import dense

EPS = np.finfo(float).eps


def well_conditioned(rng, n):
    """A random n x n matrix with a dominant diagonal (condition number below about 10)."""
    return rng.normal(size=(n, n)) + n * np.eye(n)


def relative(x, reference):
    return np.linalg.norm(np.asarray(x) - reference) / np.linalg.norm(reference)


@pytest.mark.parametrize("n", range(1, 13))
def test_solve_and_inverse_agree_with_numpy(n):
    """LU with partial pivoting against LAPACK's (numpy.linalg.solve, inv), 20 matrices
    per order: both are backward stable, so each is within about n kappa eps of the exact
    solution and they differ by less than 10 n kappa eps (measured at most 0.43 n kappa eps
    for solve, 0.29 for the inverse, over 300 matrices of orders 1-12)."""
    rng = np.random.default_rng(n)
    for _ in range(20):
        a = well_conditioned(rng, n)
        b = rng.normal(size=n)
        bound = 10 * n * np.linalg.cond(a) * EPS
        assert relative(dense.solve(a.tolist(), b.tolist()), np.linalg.solve(a, b)) < bound
        inverse = np.linalg.inv(a)
        assert np.linalg.norm(np.array(dense.inverse(a.tolist())) - inverse, 2) < bound * np.linalg.norm(inverse, 2)


@pytest.mark.parametrize("a", [
    [[1.0, 2.0], [2.0, 4.0]],                            # dependent rows: the second pivot is exactly zero
    [[0.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]],  # a zero column
    [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [1.0, 2.0, 3.0]],  # a repeated row
])
def test_singular_matrices_are_refused(a):
    with pytest.raises(dense.SingularMatrixError):
        dense.solve(a, [1.0] * len(a))
    with pytest.raises(dense.SingularMatrixError):
        dense.inverse(a)


def test_nonfinite_matrices_are_refused():
    with pytest.raises(dense.SingularMatrixError):
        dense.solve([[np.nan, 0.0], [0.0, 1.0]], [1.0, 1.0])
    with pytest.raises(ValueError, match="finite"):
        dense.pivoted_cholesky([[1.0, np.inf], [np.inf, 1.0]])


def semidefinite(rng, n, rank):
    """B B^T with B n x rank (Gaussian): symmetric positive semidefinite of that rank."""
    b = rng.normal(size=(n, rank))
    return b @ b.T, b


@pytest.mark.parametrize("n", range(1, 13))
def test_pivoted_cholesky_reveals_the_rank_and_factors(n):
    """Every rank 0..n: the rank found is the true one, and R^T R reproduces the pivoted
    matrix to 10 n eps |A| (Cholesky's backward error is at most about n eps |A|,
    Higham 10.3; measured at most 0.2 n eps |A|)."""
    rng = np.random.default_rng(100 + n)
    for rank in range(n + 1):
        a, _ = semidefinite(rng, n, rank)
        rows, order, found = dense.pivoted_cholesky(a.tolist())
        assert found == rank
        r = np.array(rows).reshape(rank, n)
        assert np.array_equal(np.triu(r), r)                                 # upper trapezoidal
        permuted = a[np.ix_(order, order)]
        assert np.linalg.norm(r.T @ r - permuted, 2) <= 10 * n * EPS * max(np.linalg.norm(a, 2), 1e-300)


def min_norm(a, b):
    return np.array(dense.min_norm_solve(dense.pivoted_cholesky(a.tolist()), b.tolist()))


def kappa_of_range(a, rank):
    """sigma_1 / sigma_rank: the condition of A on its range, which sets the accuracy of
    the minimum-norm solution of a consistent system."""
    sigma = np.linalg.svd(a, compute_uv=False)
    return sigma[0] / sigma[rank - 1]


@pytest.mark.parametrize("n", range(1, 13))
def test_min_norm_solve_agrees_with_lstsq_on_rank_deficient_consistent_systems(n):
    """A = B B^T of every rank 1..n, b = A x with x in the range of A (then x is the
    minimum-norm solution; an x with a null-space part would be reduced by the projection
    and its relative error inflated by |x| / |x_min|): the solution agrees with numpy's
    lstsq (SVD) to 100 n kappa eps with kappa = sigma_1 / sigma_rank (measured at most
    3.1 n kappa eps over 4000 random systems of orders 1-12)."""
    rng = np.random.default_rng(200 + n)
    for rank in range(1, n + 1):
        for _ in range(5):
            a, b_factor = semidefinite(rng, n, rank)
            x = b_factor @ rng.normal(size=rank)
            rhs = a @ x
            reference = np.linalg.lstsq(a, rhs, rcond=None)[0]
            assert relative(min_norm(a, rhs), reference) < 100 * n * kappa_of_range(a, rank) * EPS


def test_min_norm_solve_of_a_regular_system_is_its_solution():
    """Full rank: the ordinary solution (symmetric positive definite, 10 n kappa eps as
    test_solve_and_inverse_agree_with_numpy)."""
    rng = np.random.default_rng(3)
    for n in range(1, 13):
        a, _ = semidefinite(rng, n, n)
        a += np.eye(n)
        rhs = rng.normal(size=n)
        assert relative(min_norm(a, rhs), np.linalg.solve(a, rhs)) < 10 * n * np.linalg.cond(a) * EPS


def vehicle_constraint_matrix(**params):
    """C M^-1 C^T of the Fan vehicle at rest on its settled start with all four contacts
    stuck (joints and contact rows, as solvers.vehicle forms it), symmetrised."""
    from drivetrain_fmu.solvers.vehicle import PlanarVehicle, VehicleParams

    model = PlanarVehicle(VehicleParams(**params))
    state = model.initial_state(0.0, 0.0)
    _, jac = model.constraints(state.q)
    c = np.array(jac + model.Wt)
    a = (c * np.array(model.inv_mass)) @ c.T
    return 0.5 * (a + a.T)


def test_min_norm_solve_on_the_vehicle_with_both_wheels_stuck():
    """Level body (a = b), both wheels stuck: the six constraints have rank five (the
    axle split of the horizontal force is indeterminate; the smallest singular value is
    rounding, 4e-17 against 0.53); pivoted_cholesky finds rank 5, and the minimum-norm
    multipliers agree with lstsq to 100 n kappa eps (kappa = sigma_1 / sigma_5 = 680;
    measured 2e-13 relative).  With a != b the body pitches on its settled start and
    the same six constraints are independent (rank 6)."""
    a = vehicle_constraint_matrix()
    assert np.linalg.matrix_rank(a) == 5
    assert dense.pivoted_cholesky(a.tolist())[2] == 5
    rng = np.random.default_rng(4)
    for _ in range(20):
        rhs = a @ (a @ rng.normal(size=6))               # consistent, solution in the range
        reference = np.linalg.lstsq(a, rhs, rcond=None)[0]
        assert relative(min_norm(a, rhs), reference) < 100 * 6 * kappa_of_range(a, 5) * EPS
    assert dense.pivoted_cholesky(vehicle_constraint_matrix(a=1.2, b=0.8).tolist())[2] == 6
