"""The Vehicle solver's closed-form path (solvers.vehicle._fast_dynamics, the plain
vehicle's dynamics for every contact mode but all four stuck) against the physics it
solves and against the generic matrix path it replaces; its Runge-Kutta loop against
solvers.ode's."""
import itertools
import math
import random

import pytest

from drivetrain_fmu.solvers import ode
from drivetrain_fmu.solvers.contract import GRAVITY
from drivetrain_fmu.solvers.friction import Mode
from drivetrain_fmu.solvers.vehicle import PlanarVehicle, VehicleParams

MODES = [m for m in itertools.product((Mode.STUCK, Mode.FORWARD, Mode.BACKWARD, Mode.FREE), repeat=4)
         if m != (Mode.STUCK,) * 4]          # all four stuck: the generic minimum-norm path


def _states(count=20, seed=3):
    """(model, q, qd) near the F1 steady state (5 m/s, 200 N.m front, 0.1 s in), perturbed
    by up to 1 mm / 1 mrad in position and 0.1 m/s (rad/s) in speed."""
    model = PlanarVehicle(VehicleParams())
    state = model.initial_state(0.0, 5.0, 20.0, 20.0, settle=False)
    for _ in range(100):
        state = model.step(state, 200.0, 0.0, 1e-3).state
    rng = random.Random(seed)
    for _ in range(count):
        yield (model, [v + rng.uniform(-1e-3, 1e-3) for v in state.q],
               [v + rng.uniform(-0.1, 0.1) for v in state.qd])


def test_newton_for_the_whole_vehicle_and_each_wheel():
    """Suspension, joint and tire normal forces are internal or known: summed over the
    body and both wheels, m x'' is the road's two slip forces and m y'' the normal forces
    minus the weight; each wheel's J th'' is its drive torque minus R times its slip force
    plus its rolling torque.  The internal forces (about 1e4 N) cancel only to rounding,
    so the tolerance is 1e-10 of the weight (1.4e-6 N; measured below 1e-10 N)."""
    p = VehicleParams()
    weight = (p.m_body + p.m_wheel_f + p.m_wheel_r) * GRAVITY
    masses = (p.m_body, p.m_wheel_f, p.m_wheel_r)
    for model, q, qd in _states():
        for modes in MODES:
            f = model.forces(q, qd, 150.0, -40.0, modes)
            a = f.qdd
            t_sf, t_rf, t_sr, t_rr = f.tangential
            assert sum(m * a[i] for m, i in zip(masses, (0, 3, 6))) == pytest.approx(t_sf + t_sr, abs=1e-10 * weight)
            assert sum(m * a[i] for m, i in zip(masses, (1, 4, 7))) == pytest.approx(
                f.normal[0] + f.normal[1] - weight, abs=1e-10 * weight)
            assert p.J_wheel_f * a[5] == pytest.approx(150.0 - p.R * t_sf + t_rf, abs=1e-10 * weight * p.R)
            assert p.J_wheel_r * a[8] == pytest.approx(-40.0 - p.R * t_sr + t_rr, abs=1e-10 * weight * p.R)


def test_constraints_and_friction_laws_hold():
    """Joints: Phi_q q'' equals Baumgarte's gamma; a stuck contact's relative acceleration
    is -alpha g (held at zero speed); a sliding one carries exactly its kinetic force
    mu F_N (slip) or delta F_N (rolling) against its speed; a free one none.  Tolerance
    for the accelerations: 1e-10 of their largest term (|C| |q''| about 1e2; rounding of
    the elimination gives 1e-13)."""
    p = VehicleParams()
    for model, q, qd in _states(10):
        _, jac, gamma = model._joint_terms(q, qd)
        for modes in MODES:
            f = model.forces(q, qd, 150.0, -40.0, modes)
            scale = 1e-10 * max(1.0, max(abs(v) for v in f.qdd))
            for row, target in zip(jac, gamma):
                assert sum(c * v for c, v in zip(row, f.qdd)) == pytest.approx(target, abs=scale)
            kinetic = (p.mu_k_road * f.normal[0], p.delta_roll * f.normal[0],
                       p.mu_k_road * f.normal[1], p.delta_roll * f.normal[1])
            for j, mode in enumerate(modes):
                w = model.Wt[j]
                if mode == Mode.STUCK:
                    assert sum(c * v for c, v in zip(w, f.qdd)) == pytest.approx(
                        -p.alpha_bg * sum(c * v for c, v in zip(w, qd)), abs=scale)
                elif mode == Mode.FREE:
                    assert f.tangential[j] == 0.0
                else:
                    assert f.tangential[j] == -int(mode) * kinetic[j]


def test_closed_form_agrees_with_the_generic_matrix_path():
    """The same equations solved by the pivoted Cholesky factors of the whole constraint
    system (the path the monolithic reference keeps): equal to 1e-10 relative (measured
    2e-13: the joint system with three contacts stuck is nearly redundant, condition about
    1e3, which multiplies the rounding of either solution)."""
    for model, q, qd in _states(10):
        for modes in MODES:
            model._fast = True
            fast = model.forces(q, qd, 150.0, -40.0, modes)
            model._fast = False
            generic = model.forces(q, qd, 150.0, -40.0, modes)
            model._fast = True
            for x, y in zip([*fast.qdd, *fast.tangential, *fast.normal, *fast.capacity],
                            [*generic.qdd, *generic.tangential, *generic.normal, *generic.capacity]):
                assert x == pytest.approx(y, rel=1e-10, abs=1e-10)


def test_the_unrolled_runge_kutta_stages_are_the_tableau_sums_to_the_bit():
    """ode._rk_step adds each stage's terms in one comprehension: the same operations in the
    same order as the textbook loop over the Dormand-Prince tableau (one coefficient at a
    time from the left, zero coefficients left out), so the same floats, bit for bit, on
    random states and derivatives of the vehicle's size (18)."""
    rng = random.Random(3)

    def loop_step(fun, t, y, f0, h):
        k = [f0]
        for i in range(1, 7):
            yi = y
            for a, kj in zip(ode._A[i], k):
                if a:
                    yi = [v + h * a * d for v, d in zip(yi, kj)]
            k.append(fun(t + ode._C[i] * h, yi))
        err = [0.0] * len(y)
        for e, kj in zip(ode._E, k):
            if e:
                err = [v + h * e * d for v, d in zip(err, kj)]
        return yi, k[6], err

    for _ in range(200):
        weights = [rng.uniform(-5, 5) for _ in range(18)]

        def fun(t, y, weights=weights):
            return [w * math.sin(v + t) for w, v in zip(weights, y)]

        y0 = [rng.uniform(-1, 1) for _ in range(18)]
        h = 10 ** rng.uniform(-6, -1)
        assert ode._rk_step(fun, 0.1, y0, fun(0.1, y0), h) == loop_step(fun, 0.1, y0, fun(0.1, y0), h)
