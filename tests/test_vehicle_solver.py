"""The Vehicle solver's closed-form path (solvers.vehicle._fast_dynamics, the plain
vehicle's dynamics for every contact mode but all four stuck) against the physics it
solves and against the generic matrix path it replaces; its Runge-Kutta loop against
solvers.ode's."""
import itertools
import math
import random

import pytest

from solvers import ode
from solvers.contract import GRAVITY
from solvers.friction import Mode
from solvers.vehicle import PlanarVehicle, VehicleParams, _integrate

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
            model._cache_key = None
            fast = model.forces(q, qd, 150.0, -40.0, modes)
            model._fast = False
            model._cache_key = None
            generic = model.forces(q, qd, 150.0, -40.0, modes)
            model._fast = True
            for x, y in zip([*fast.qdd, *fast.tangential, *fast.normal, *fast.capacity],
                            [*generic.qdd, *generic.tangential, *generic.normal, *generic.capacity]):
                assert x == pytest.approx(y, rel=1e-10, abs=1e-10)


def test_vehicle_integrator_is_ode_integrate_to_the_bit():
    """solvers.vehicle._integrate is ode.integrate's method with cheaper stage sums: on a
    pendulum with an event (the angle crossing zero) and on a stiff one that rejects steps,
    the same stop time, state, event and step counts, bit for bit."""
    def pendulum(k):
        return lambda t, y: [y[1], -k * math.sin(y[0]) - 0.1 * y[1]]

    for k, t_end, first in ((4.0, 3.0, 0.5), (4e4, 0.01, 0.01), (1.0, 0.3, 0.3)):
        fun = pendulum(k)
        events = [lambda t, y: y[0] + 0.2]
        expected = ode.integrate(fun, 0.0, [1.0, 0.0], t_end, events, rtol=1e-9, atol=1e-11,
                                 first_step=first, max_steps=10_000)
        got = _integrate(fun, 0.0, [1.0, 0.0], t_end, events, 1e-9, 1e-11, first, 10_000)
        assert (got.t, list(got.y), got.event, got.n_steps, got.n_attempts) == (
            expected.t, list(expected.y), expected.event, expected.n_steps, expected.n_attempts)
