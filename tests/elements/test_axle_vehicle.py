"""AxleVehicle against VehicleSimple, the analytic breakaway of a wheel and the balances of
momentum and energy (fmus/axle_vehicle.py, eq. 1-3).

The slaves run in-process (the built FMU is checked by the element-contract and fuzz tests).
Tolerances: with Coulomb tires and the road load held over a step the motion within a step is
piecewise quadratic in time with its events in closed form, so speeds, angles and forces
agree with the closed forms to rounding: ROUNDING = 1e-12 relative (a few dozen
floating-point operations per step, each 1.1e-16), as tests/elements/test_friction_elements.py.
"""
import math

import pytest

from drivetrain_fmu.fmus import AxleVehicle, VehicleSimple
from drivetrain_fmu.solvers.contract import GRAVITY
from drivetrain_fmu.solvers.tire import road_force
from tests.elements.test_friction_elements import ROUNDING, advance, feedthrough, make

J, M, R = 1.25, 1500.0, 0.3        # the defaults
#: no road load: the closed forms below are those of eq. 1 with F_road = 0
NO_ROAD = dict(f_roll=0.0, cdA=0.0)


def test_equal_grip_and_torques_are_vehicle_simple_with_one_wheel_of_twice_the_inertia():
    """Both wheels on mu_s 0.8, mu_k 0.75 with 2500 N.m each (above the breakaway
    torque mu_s F_z R (1 + 2 J / (m R^2)) = 3597 N.m of the pair), the axle carrying the whole
    weight (axle_load = 1): both tires slide alike, and the element is VehicleSimple's model 0
    with J_wheel = 2 J, tau_wheel = 5000 N.m, F_z = m g cos(grade) (module docstring), road
    load and grade included; then 300 N.m each: the wheels lock onto the vehicle again (a lock
    event inside a step) and roll.  Speeds, positions and tire forces agree to ROUNDING at
    every one of the 40 steps of 0.05 s (the two solve the same equations in other units)."""
    grip = dict(mu_s_left=0.8, mu_k_left=0.75, mu_s_right=0.8, mu_k_right=0.75)
    road = dict(f_roll=0.012, cdA=0.6, rho_air=1.2, d_v=0.5)
    axle = make(AxleVehicle, J_wheel=J, m_vehicle=M, R=R, axle_load=1.0, **grip, **road)
    single = make(VehicleSimple, J_wheel=2.0 * J, m_vehicle=M, R=R, tire_model=0, mu_s=0.8, mu_k=0.75, **road)
    t, grade, spun, locked_again = 0.0, 0.03, False, False
    for k in range(40):
        torque = 2500.0 if k < 20 else 300.0
        axle_forces = feedthrough(make_inputs(axle, tau_left=torque, tau_right=torque, grade=grade))
        single_force = feedthrough(make_inputs(single, tau_wheel=2.0 * torque, grade=grade))["F_x"]
        assert axle_forces["F_t_left"] + axle_forces["F_t_right"] == pytest.approx(single_force, rel=ROUNDING)
        advance(axle, t, 0.05)
        t = advance(single, t, 0.05)
        assert axle.w_left == axle.w_right == pytest.approx(single.w_wheel, rel=ROUNDING)
        assert (axle.v, axle.x) == pytest.approx((single.v, single.x), rel=ROUNDING)
        spun |= axle.v_slip_left > 1.0
        locked_again |= spun and axle.v_slip_left == 0.0
    assert spun and locked_again


def make_inputs(slave, **inputs):
    slave.assign(inputs)
    return slave


@pytest.mark.parametrize("margin", [-1e-9, 1e-9])
def test_the_ice_wheel_breaks_away_at_its_capacity_plus_its_inertial_share(margin):
    """Split mu from rest (ice left: mu_s 0.1, mu_k 0.07; asphalt right: 0.9), axle_load 0.5,
    F_z = 0.25 m g, no road load, tau on each wheel.  While both tires stick the three bodies
    turn as one, w' = 2 tau / (2 J + m R^2), and the ice tire carries F = (tau - J w') / R =
    tau m R / (2 J + m R^2): it breaks away at tau* = mu_s F_z R + J w'(tau*), the static
    torque plus the wheel's inertial share, tau* = mu_s F_z R (1 + 2 J / (m R^2)).  1e-9
    below it, nothing slips for 1 s (v = R w' t); 1e-9 above it the ice wheel spins at once,
    w_left' = (tau - R mu_k F_z) / J, while the asphalt wheel rolls on with the vehicle:
    (J + m R^2) w_right' = tau + R mu_k F_z, its tire force tau / R - J w_right' / R below
    mu_s F_z.  Speeds over 10 steps of 0.1 s to ROUNDING."""
    f_z = 0.25 * M * GRAVITY
    critical = 0.1 * f_z * R * (1.0 + 2.0 * J / (M * R * R))
    tau = critical * (1.0 + margin)
    axle = make(AxleVehicle, **NO_ROAD, tau_left=tau, tau_right=tau)
    forces = feedthrough(axle)
    rolling = 2.0 * tau / (2.0 * J + M * R * R)
    if margin < 0.0:
        assert forces["stick_left"] and forces["stick_right"]
        assert forces["F_t_left"] == pytest.approx((tau - J * rolling) / R, rel=ROUNDING)
        advance(axle, 0.0, 0.1, steps=10)
        assert axle.w_left == axle.w_right == pytest.approx(rolling * 1.0, rel=ROUNDING)
        assert axle.v == pytest.approx(R * rolling * 1.0, rel=ROUNDING)
        assert axle.e_loss == 0.0
    else:
        assert not forces["stick_left"] and forces["stick_right"]
        assert forces["F_t_left"] == pytest.approx(0.07 * f_z, rel=ROUNDING)
        advance(axle, 0.0, 0.1, steps=10)
        a_right = (tau + R * 0.07 * f_z) / (J + M * R * R)
        assert axle.w_left == pytest.approx((tau - R * 0.07 * f_z) / J * 1.0, rel=ROUNDING)
        assert (axle.w_right, axle.v) == pytest.approx((a_right * 1.0, R * a_right * 1.0), rel=ROUNDING)
        assert axle.v_slip_right == 0.0
        right = feedthrough(axle)["F_t_right"]
        assert right == pytest.approx((tau - J * a_right) / R, rel=ROUNDING) and right < 0.9 * f_z


def test_momentum_and_energy_balance_to_rounding():
    """Split mu with road load on a grade, torques that spin the ice wheel, then brake it (it
    locks onto the vehicle again), both wheels' tires slipping or rolling: over each step of
    0.02 s with the inputs and the road load F_road (solvers.tire.road_force at the step's
    start v) held, the momentum along the free motion changes by the impulse of the external
    forces, J w_left + J w_right + R m v  grows by (tau_left + tau_right - R F_road) h
    (friction is internal), and the work of the held torques and road load equals the change
    of kinetic energy plus the energy the tires dissipated (e_loss): both to ROUNDING of
    their largest term (momentum up to 576 kg.m2/s, energy up to 1.6e4 J here; measured
    4.0e-16 and 4.3e-15 of them at most)."""
    axle = make(AxleVehicle)
    t, h, grade = 0.0, 0.02, 0.02
    for k in range(100):
        tau_left, tau_right = (400.0, 700.0) if k < 30 else (-100.0, 200.0)
        axle.assign({"tau_left": tau_left, "tau_right": tau_right, "grade": grade})
        before = (axle.w_left, axle.w_right, axle.v, axle.phi_left, axle.phi_right, axle.x, axle.e_loss)
        f_road = road_force(axle, axle.v, grade)
        t = advance(axle, t, h)
        w_l, w_r, v, phi_l, phi_r, x, e_loss = before
        momentum = J * axle.w_left + J * axle.w_right + R * M * axle.v
        expected = J * w_l + J * w_r + R * M * v + (tau_left + tau_right - R * f_road) * h
        assert momentum == pytest.approx(expected, rel=ROUNDING)
        kinetic = 0.5 * (J * axle.w_left ** 2 + J * axle.w_right ** 2 + M * axle.v ** 2)
        work = tau_left * (axle.phi_left - phi_l) + tau_right * (axle.phi_right - phi_r) - f_road * (axle.x - x)
        kinetic_before = 0.5 * (J * w_l ** 2 + J * w_r ** 2 + M * v ** 2)
        scale = max(kinetic, kinetic_before, abs(work))
        assert kinetic - kinetic_before + axle.e_loss - e_loss == pytest.approx(work, abs=ROUNDING * scale)
    assert axle.v_slip_left == 0.0 < axle.e_loss        # the ice wheel spun, then locked again


def test_a_sliding_coefficient_above_the_static_one_is_refused_naming_both():
    axle = AxleVehicle(instance_name="a", resources=None)
    axle.mu_k_right = 0.95
    assert axle.parameter_problems() == ["mu_k_right = 0.95 must not exceed mu_s_right = 0.9; "
                                         "allowed range [0, mu_s_right]"]
    assert math.isfinite(axle.mu_s_right)
