"""The gear pair of solvers.gear (MSL LossyGear, constant efficiency, no bearing friction):
ideal kinematics and reflected inertia, power balance in both directions, the stuck
interval, the exact stop/reverse and stop/lock instants, e_loss against the energy balance.

Tolerances: the solver's result is a handful of float operations on the closed form, so
quantities of one instant agree to 1e-14 relative (a few roundings of eps = 2.2e-16 each);
sums over many steps to 1e-12 relative (1000 steps, each adding a few roundings)."""
import math
import random
import re

import pytest

from drivetrain_fmu.solvers.contract import StepError
from drivetrain_fmu.solvers.gear import Gear, GearState, Mode

J_1, J_2 = 0.1, 1.0


def shaft_residuals(gear, motion, tau_1, tau_2):
    """Newton's law on each shaft, J_1 w_1' = tau_1 - tau_a and J_2 w_2' = tau_2 + tau_mesh,
    as residuals relative to the largest term."""
    a_2 = motion.a_1 / gear.ratio
    r_1 = (J_1 * motion.a_1 - (tau_1 - motion.tau_a)) / max(abs(tau_1), abs(motion.tau_a), 1e-300)
    r_2 = (gear.j_2 * a_2 - (tau_2 + motion.tau_mesh)) / max(abs(tau_2), abs(motion.tau_mesh), 1e-300)
    return r_1, r_2


@pytest.mark.parametrize("ratio", [4.0, -2.5, 0.3])
def test_ideal_gear_accelerates_the_reflected_inertia(ratio):
    """eta = 1: w_2' = (ratio tau_1 + tau_2) / (J_2 + ratio^2 J_1) (the inertia at shaft 2;
    at shaft 1 it is J_1 + J_2/ratio^2), through zero speed without a stop; 100 steps of
    10 ms, w and phi of the uniform acceleration to 1e-12 relative; no loss at all."""
    gear = Gear(J_1, J_2, ratio, 1.0)
    tau_1, tau_2 = 3.0, -20.0
    a_2 = (ratio * tau_1 + tau_2) / (J_2 + ratio**2 * J_1)
    w0 = 5.0
    state = GearState(0.0, w0)
    h = 0.01
    for n in range(1, 101):
        state = gear.advance(state, tau_1, tau_2, h)
        t = n * h
        assert state.w_1 / ratio == pytest.approx(w0 / ratio + a_2 * t, rel=1e-12, abs=1e-12)
        assert state.phi_1 / ratio == pytest.approx(w0 / ratio * t + 0.5 * a_2 * t * t, rel=1e-12, abs=1e-12)
    assert state.e_loss == 0.0


@pytest.mark.parametrize("ratio", [4.0, -4.0])
@pytest.mark.parametrize("w_1,tau_1,tau_2,driver", [
    (10.0, 50.0, -20.0, 1),     # motor on shaft 1 drives the load on shaft 2 forward
    (10.0, -5.0, 80.0, 2),      # shaft 2 overruns and drives shaft 1 against its brake
    (-10.0, -50.0, 20.0, 1),    # the same, backward
    (-10.0, 5.0, -80.0, 2),
])
def test_power_balance_in_both_directions(ratio, w_1, tau_1, tau_2, driver):
    """eta = 0.8: the driving shaft gives P_in, the driven one receives eta P_in and p_loss =
    (1 - eta) P_in; both shafts obey Newton's law (all to 1e-14 relative: a few roundings).
    ``driver`` is the shaft whose power goes into the mesh.  tau_2 is given for ratio > 0 and
    flipped with the ratio's sign, so the load seen at shaft 1, tau_2/ratio, and with it the
    driving shaft, are the same for ratio = -4."""
    eta = 0.8
    tau_2 = tau_2 * math.copysign(1.0, ratio)
    gear = Gear(J_1, J_2, ratio, eta)
    motion = gear.motion(w_1, tau_1, tau_2)
    assert motion.mode == (Mode.FORWARD if w_1 > 0 else Mode.BACKWARD)
    w_2 = w_1 / ratio
    from_1 = motion.tau_a * w_1               # power the mesh takes from shaft 1
    to_2 = motion.tau_mesh * w_2              # power the mesh gives to shaft 2
    p_loss = gear.loss_power(motion, w_1)
    if driver == 1:
        p_in, p_out = from_1, to_2
    else:
        p_in, p_out = -to_2, -from_1
    assert p_in > 0.0 and p_out > 0.0 and p_loss > 0.0
    assert p_out == pytest.approx(eta * p_in, rel=1e-14)
    assert p_in == pytest.approx(p_out + p_loss, rel=1e-14)
    assert all(abs(r) < 1e-14 for r in shaft_residuals(gear, motion, tau_1, tau_2))


@pytest.mark.parametrize("ratio", [3.0, -3.0])
def test_load_that_cannot_back_drive_through_eta_stays_stuck(ratio):
    """A brake torque tau_1 = 10 N.m holds a load seen at shaft 1 of q = tau_2/ratio when
    -q lies in [eta tau_1, tau_1/eta] = [6, 16.67] N.m (eta = 0.6; LossyGear's stuck
    interval): 1000 steps of 1 ms leave the gear exactly at rest with no loss.  The
    same load back-drives an ideal gear (eta = 1), and a load just past tau_1/eta
    (1e-9 relative, far above rounding) back-drives the lossy one."""
    eta, tau_1 = 0.6, 10.0
    start = GearState(0.7, 0.0)
    for load in (6.0 * (1 + 1e-9), 15.0, 10.0 / eta * (1 - 1e-9)):
        tau_2 = -load * ratio               # q = tau_2/ratio = -load
        gear = Gear(J_1, J_2, ratio, eta)
        assert gear.motion(0.0, tau_1, tau_2).mode == Mode.STUCK
        state = start
        for _ in range(1000):
            state = gear.advance(state, tau_1, tau_2, 1e-3)
        assert state == start
        if load != 10.0:
            assert Gear(J_1, J_2, ratio, 1.0).motion(0.0, tau_1, tau_2).mode != Mode.STUCK
    gear = Gear(J_1, J_2, ratio, eta)
    backward = gear.motion(0.0, tau_1, -10.0 / eta * (1 + 1e-9) * ratio)
    assert backward.mode == Mode.BACKWARD and backward.a_1 < 0.0
    # power flows from shaft 2 into shaft 1 (tau_a w < 0 while w < 0 means tau_a > 0)
    assert backward.tau_a > 0.0 and backward.factor == 1.0 / eta
    forward = gear.motion(0.0, tau_1, -6.0 * (1 - 1e-9) * ratio)
    assert forward.mode == Mode.FORWARD and forward.a_1 > 0.0


def test_with_no_torque_on_shaft_1_any_load_back_drives():
    """This law (output = eta x input in either direction) has no self-locking: with
    tau_1 = 0 the stuck interval [0, 0] holds no load, whatever eta (even 0.1)."""
    for eta in (0.1, 0.5, 0.9):
        motion = Gear(J_1, J_2, 2.0, eta).motion(0.0, 0.0, -1.0)
        assert motion.mode == Mode.BACKWARD and motion.factor == 1.0 / eta


def rolling_accelerations(ratio, eta, tau_1, tau_2):
    """Analytic w_1' = (c tau_1 + q) / (c J_1 + J_2/ratio^2) for c = eta and c = 1/eta."""
    q, j_r = tau_2 / ratio, J_2 / ratio**2
    return tuple((c * tau_1 + q) / (c * J_1 + j_r) for c in (eta, 1 / eta))


@pytest.mark.parametrize("h", [1e-3, 7e-3, 0.05, 1.0])
def test_stop_and_reverse_at_the_analytic_instant(h):
    """Coasting at w_1 = 20 rad/s against a load tau_2 = -30 N.m (ratio 2, eta 0.7, tau_1 = 0):
    shaft 1 drives the load (c = eta) and stops at t* = 20 / |a_fwd|; the load then drives
    back (c = 1/eta) with a_bwd.  At every communication point w_1 and phi_1 equal the
    piecewise closed form to 1e-12 relative (1e-12 rad/s absolute at w = 0), whatever the
    step, also when one step spans the event."""
    ratio, eta, tau_2, w0 = 2.0, 0.7, -30.0, 20.0
    a_fwd, a_bwd = rolling_accelerations(ratio, eta, 0.0, tau_2)
    t_stop = -w0 / a_fwd
    gear = Gear(J_1, J_2, ratio, eta)
    state = GearState(0.0, w0)
    for n in range(1, int(round(1.2 / h)) + 1):
        state = gear.advance(state, 0.0, tau_2, h)
        t = n * h
        if t <= t_stop:
            w, phi = w0 + a_fwd * t, w0 * t + 0.5 * a_fwd * t * t
        else:
            w = a_bwd * (t - t_stop)
            phi = 0.5 * w0 * t_stop + 0.5 * a_bwd * (t - t_stop) ** 2
        assert state.w_1 == pytest.approx(w, rel=1e-12, abs=1e-12), t
        assert state.phi_1 == pytest.approx(phi, rel=1e-12), t
    assert state.w_1 < 0.0


@pytest.mark.parametrize("h", [1e-3, 0.03, 0.4])
def test_stop_and_lock_when_the_torques_fall_into_the_stuck_interval(h):
    """Rolling forward at 20 rad/s with tau_1 = 5 N.m against a load q = -6 N.m (ratio 3,
    eta 0.7: stuck interval [3.5, 7.14]): c = eta, the gear decelerates and stops at the
    analytic t*, then stays locked: w_1 exactly 0 and phi_1 the stop angle (1e-12)."""
    ratio, eta, tau_1, tau_2, w0 = 3.0, 0.7, 5.0, -18.0, 20.0
    a_fwd, _ = rolling_accelerations(ratio, eta, tau_1, tau_2)
    t_stop = -w0 / a_fwd
    gear = Gear(J_1, J_2, ratio, eta)
    state = GearState(0.0, w0)
    for n in range(1, int(round(2.0 / h)) + 1):
        state = gear.advance(state, tau_1, tau_2, h)
        t = n * h
        if t < t_stop:
            assert state.w_1 == pytest.approx(w0 + a_fwd * t, rel=1e-12, abs=1e-12)
        else:
            assert state.w_1 == 0.0
            assert state.phi_1 == pytest.approx(0.5 * w0 * t_stop, rel=1e-12)
            assert gear.motion(state.w_1, tau_1, tau_2).mode == Mode.STUCK
    assert 1.0 < t_stop < 2.0 - h    # locked for at least one communication point


def kinetic_energy(gear, w_1):
    return 0.5 * (gear.j_1 + gear.j_reflected) * w_1 * w_1


@pytest.mark.parametrize("ratio,eta", [(4.0, 0.9), (-2.0, 0.5), (0.5, 0.3)])
def test_e_loss_equals_the_energy_balance(ratio, eta):
    """Random torques, each pair held for 50 steps of 5 ms, 1000 steps: tau_1 in [-10, 10] N.m
    and a load seen at shaft 1 of -tau_1 times a factor in [0.5 eta, 1.5/eta], around the
    stuck interval, so the run rolls both ways, stops, reverses and locks: e_loss = work of
    tau_1 and tau_2 minus the change of kinetic energy 0.5 (J_1 + J_2/ratio^2) w_1^2, to 1e-12
    of the total work done (sums of 1000 steps of a few roundings each); e_loss never
    decreases."""
    rng = random.Random(17)
    gear = Gear(J_1, J_2, ratio, eta)
    state = GearState(0.0, 3.0)
    work, total, kinds = 0.0, 0.0, set()
    ke0 = kinetic_energy(gear, state.w_1)
    for n in range(1000):
        if n % 50 == 0:
            tau_1 = rng.uniform(-10, 10)
            tau_2 = -tau_1 * rng.uniform(0.5 * eta, 1.5 / eta) * ratio
        new = gear.advance(state, tau_1, tau_2, 5e-3)
        kinds.add(gear.motion(state.w_1, tau_1, tau_2).mode)
        step_work = (tau_1 + tau_2 / ratio) * (new.phi_1 - state.phi_1)      # tau_2 dphi_2, dphi_2 = dphi_1/ratio
        work += step_work
        total += abs(tau_1 * (new.phi_1 - state.phi_1)) + abs(tau_2 * (new.phi_1 - state.phi_1) / ratio)
        assert new.e_loss >= state.e_loss
        state = new
    assert kinds == {Mode.FORWARD, Mode.BACKWARD, Mode.STUCK}
    balance = work - (kinetic_energy(gear, state.w_1) - ke0)
    assert state.e_loss > 0.0
    assert abs(state.e_loss - balance) <= 1e-12 * total


@pytest.mark.parametrize("h,tau_1,tau_2,named", [
    (0.0, 1.0, 1.0, "h = 0.0"), (-1e-3, 1.0, 1.0, "h = -0.001"), (math.nan, 1.0, 1.0, "h = nan"),
    (math.inf, 1.0, 1.0, "h = inf"), (1e-3, math.nan, 1.0, "tau_1 = nan"), (1e-3, 1.0, -math.inf, "tau_2 = -inf"),
])
def test_bad_step_is_refused_naming_the_value(h, tau_1, tau_2, named):
    with pytest.raises(StepError, match=named):
        Gear(J_1, J_2, 2.0, 0.9).advance(GearState(0.0, 1.0), tau_1, tau_2, h)


@pytest.mark.parametrize("args,named", [
    ((0.0, J_2, 2.0, 0.9), "J_1 = 0.0"), ((J_1, J_2, 0.0, 0.9), "ratio = 0.0"),
    ((J_1, J_2, 2.0, 0.0), "eta = 0.0"), ((J_1, J_2, 2.0, 1.5), "eta = 1.5"),
    ((J_1, J_2, 1e-200, 0.9), "J_2 / ratio^2 = inf"),
])
def test_bad_parameters_are_refused_naming_the_value(args, named):
    with pytest.raises(ValueError, match=re.escape(named)):
        Gear(*args)


def test_state_round_trips_through_json():
    state = GearState(1.25, -3.5, 0.75)
    assert GearState.from_json(state.to_json()) == state
