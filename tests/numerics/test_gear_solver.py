"""The gear pair of solvers.gear (MSL LossyGear, constant efficiency and bearing friction):
ideal kinematics and reflected inertia, power balance in both directions, the stuck
interval, the exact stop/reverse and stop/lock instants, e_loss against the energy balance;
with bearing friction the lock time of a coasting gear, the friction of the driving side,
the widened stuck interval, the support torque in the angular momentum balance, and MSL's
LossyGearDemo3 (analytic) and LossyGearDemo2 (against a solve_ivp reference of MSL's
two friction elements).

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


# ---------------------------------------------------------------- bearing friction (tau_bf_1, tau_bf_2)

@pytest.mark.parametrize("ratio", [3.0, -4.0])
@pytest.mark.parametrize("h", [1e-3, 0.017, 0.5])
def test_coasting_with_bearing_friction_stops_at_the_analytic_instant(ratio, h):
    """eta = 1, tau_bf_1 = tau_bf_2 = 2 N.m, no external torque, w_1 = 30 rad/s: the gear
    decelerates at tau_bf/J_eff with J_eff = J_1 + J_2/ratio^2 and stops at t* = J_eff w0 /
    tau_bf, then stays exactly at rest (the bearing friction holds a gear with no load).
    w_1 and phi_1 against the closed form to 1e-12 of w0 and relative at every communication
    point (up to 3200 steps), whatever the step (one step spans the stop for h = 0.5);
    e_loss equals the initial kinetic energy to 1e-12 (the sum over up to 3200 steps of a
    few roundings each; measured 7e-14 at h = 1 ms, ratio -4)."""
    tau_bf, w0 = 2.0, 30.0
    gear = Gear(J_1, J_2, ratio, 1.0, tau_bf, tau_bf)
    j_eff = J_1 + J_2 / ratio**2
    a, t_stop = -tau_bf / j_eff, j_eff * w0 / tau_bf
    state = GearState(0.0, w0)
    n = 0
    while n * h < t_stop + 0.3:
        state = gear.advance(state, 0.0, 0.0, h)
        n += 1
        t = n * h
        if t < t_stop:
            assert state.w_1 == pytest.approx(w0 + a * t, rel=1e-12, abs=1e-12 * w0), t
            assert state.phi_1 == pytest.approx(w0 * t + 0.5 * a * t * t, rel=1e-12), t
        else:
            assert state.w_1 == 0.0 and state.phi_1 == pytest.approx(0.5 * w0 * t_stop, rel=1e-12), t
            assert gear.motion(0.0, 0.0, 0.0).mode == Mode.STUCK
    assert state.e_loss == pytest.approx(kinetic_energy(gear, w0), rel=1e-12)


@pytest.mark.parametrize("w0", [25.0, -25.0])
@pytest.mark.parametrize("j_1,j_2,driver", [(1.0, 0.01, 1), (0.01, 1.0, 2)])
def test_bearing_friction_follows_the_driving_side_not_the_sense(w0, j_1, j_2, driver):
    """eta = 0.5, tau_bf_1 = 1 N.m (shaft 1 drives), tau_bf_2 = 3 N.m (shaft 2 drives), ratio 1,
    coasting without external torque.  A heavy shaft 1 keeps the light shaft 2 turning (power
    flows 1 -> 2): |w'| = tau_bf_1 / (eta J_1 + J_2) from (7); a heavy shaft 2 drives shaft 1
    back through the mesh: |w'| = tau_bf_2 / (J_1/eta + J_2); in either sense of rotation
    (LossyGear's tau_bf1 / tau_bf2 go with the driving side, quadrants 1, 3 and 2, 4).  The
    stop instant t* = w0 / |w'| to 1e-12 relative over 1 ms steps (the stop is an event:
    the step that holds it lands on w = 0 exactly).  The driving side is the sign of what
    reaches the mesh from shaft 1 after the shaft-1 bearing, (tau_a - d tau_bf_a) w with MSL's
    tau_bf_a = (tau_bf_1 - tau_bf_2)/(eta - 1/eta) = 4/3 N.m, not the sign of tau_a w."""
    eta, tau_bf_1, tau_bf_2 = 0.5, 1.0, 3.0
    gear = Gear(j_1, j_2, 1.0, eta, tau_bf_1, tau_bf_2)
    if driver == 1:
        deceleration = tau_bf_1 / (eta * j_1 + j_2)
    else:
        deceleration = tau_bf_2 / (j_1 / eta + j_2)
    motion = gear.motion(w0, 0.0, 0.0)
    assert motion.a_1 == pytest.approx(-math.copysign(deceleration, w0), rel=1e-14)
    assert motion.factor == (eta if driver == 1 else 1.0 / eta)
    tau_bf_a = (tau_bf_1 - tau_bf_2) / (eta - 1.0 / eta)
    assert ((motion.tau_a - math.copysign(tau_bf_a, w0)) * w0 > 0.0) == (driver == 1)
    t_stop = abs(w0) / deceleration
    state, h, n = GearState(0.0, w0), 1e-3, 0
    while state.w_1 != 0.0:
        state = gear.advance(state, 0.0, 0.0, h)
        n += 1
    # the last step held the stop: t* lies in ((n-1) h, n h], its travel is w0 t*/2
    assert (n - 1) * h < t_stop <= n * h
    assert state.phi_1 == pytest.approx(0.5 * w0 * t_stop, rel=1e-12)


def stuck_interval(eta, tau_bf_1, tau_bf_2, tau_1):
    """(12): the loads q = tau_2/ratio that a torque tau_1 holds at rest."""
    return (min(-eta * tau_1 - tau_bf_1, -tau_1 / eta - tau_bf_2),
            max(tau_bf_1 - eta * tau_1, tau_bf_2 - tau_1 / eta))


@pytest.mark.parametrize("ratio", [3.0, -3.0])
def test_bearing_friction_widens_the_stuck_interval(ratio):
    """eta = 0.6, tau_bf_1 = 1 N.m, tau_bf_2 = 2 N.m, tau_1 = 10 N.m at rest: the loads seen at
    shaft 1 held at rest are q in [-tau_1/eta - tau_bf_2, tau_bf_1 - eta tau_1] = [-18.67, -5]
    N.m instead of [-16.67, -6] without bearing friction.  Loads inside (also those between
    the two intervals, and 1e-9 relative inside either end) stay exactly at rest over 1000
    steps of 1 ms; 1e-9 relative beyond the upper end the motor lifts the load (FORWARD,
    shaft 1 drives: w' = (eta tau_1 + q - tau_bf_1)/(eta J_1 + J_r)), beyond the lower end the
    load back-drives (BACKWARD, shaft 2 drives: w' = (tau_1/eta + q + tau_bf_2)/(J_1/eta +
    J_r)), both to 1e-6 relative (w' is the difference of terms of ~10 N.m that cancel to
    ~1e-8 N.m: relative rounding ~1e-15 x 1e9)."""
    eta, tau_bf_1, tau_bf_2, tau_1 = 0.6, 1.0, 2.0, 10.0
    lo, hi = stuck_interval(eta, tau_bf_1, tau_bf_2, tau_1)
    assert (lo, hi) == (pytest.approx(-10.0 / 0.6 - 2.0), pytest.approx(-5.0))
    gear = Gear(J_1, J_2, ratio, eta, tau_bf_1, tau_bf_2)
    start = GearState(0.4, 0.0)
    for q in (lo * (1 - 1e-9), -17.5, -12.0, -5.5, hi * (1 + 1e-9)):
        tau_2 = q * ratio
        assert gear.motion(0.0, tau_1, tau_2).mode == Mode.STUCK, q
        state = start
        for _ in range(1000):
            state = gear.advance(state, tau_1, tau_2, 1e-3)
        assert state == start
        if q in (-17.5, -5.5):      # outside the interval without bearing friction
            assert Gear(J_1, J_2, ratio, eta).motion(0.0, tau_1, tau_2).mode != Mode.STUCK
    j_r = J_2 / ratio**2
    q = hi * (1 - 1e-9)
    forward = gear.motion(0.0, tau_1, q * ratio)
    assert forward.mode == Mode.FORWARD and forward.factor == eta
    assert forward.a_1 == pytest.approx((eta * tau_1 + q - tau_bf_1) / (eta * J_1 + j_r), rel=1e-6)
    q = lo * (1 + 1e-9)
    backward = gear.motion(0.0, tau_1, q * ratio)
    assert backward.mode == Mode.BACKWARD and backward.factor == 1.0 / eta
    assert backward.a_1 == pytest.approx((tau_1 / eta + q + tau_bf_2) / (J_1 / eta + j_r), rel=1e-6)


def test_with_no_torque_on_shaft_1_the_bearing_friction_holds_a_small_load():
    """tau_1 = 0: (12) holds |q| up to tau_bf_2 when the load would drive (shaft 2 drives
    shaft 1; tau_bf_1 < tau_bf_2): eta = 0.8, tau_bf_1 = 0.5, tau_bf_2 = 0.9 N.m, ratio 2:
    q = +-0.89 stays stuck, q = +-0.91 back-drives in its direction."""
    gear = Gear(J_1, J_2, 2.0, 0.8, 0.5, 0.9)
    for q in (0.89, -0.89):
        assert gear.motion(0.0, 0.0, 2.0 * q).mode == Mode.STUCK
    for q, mode in ((0.91, Mode.FORWARD), (-0.91, Mode.BACKWARD)):
        motion = gear.motion(0.0, 0.0, 2.0 * q)
        assert motion.mode == mode and motion.factor == 1.0 / 0.8
        assert motion.a_1 == pytest.approx(math.copysign(0.01, q) / (J_1 / 0.8 + J_2 / 4.0), rel=1e-12)


def random_case(rng):
    ratio = rng.choice([-1.0, 1.0]) * 10 ** rng.uniform(-1, 1)
    eta = rng.choice([1.0, rng.uniform(0.2, 1.0)])
    tau_bf_1 = rng.uniform(0.0, 3.0)
    tau_bf_2 = tau_bf_1 if eta == 1.0 else rng.uniform(0.0, 3.0)
    gear = Gear(10 ** rng.uniform(-2, 0), 10 ** rng.uniform(-2, 0), ratio, eta, tau_bf_1, tau_bf_2)
    w_1 = rng.choice([0.0, rng.uniform(-20, 20)])
    return gear, w_1, rng.uniform(-10, 10), rng.uniform(-10, 10) * abs(ratio)


def test_support_torque_closes_the_angular_momentum_balance():
    """(11): J_1 w_1' + J_2 w_2' = tau_1 + tau_2 - tau_support (tau_support the torque the gear
    applies to its housing) in every mode: 20000 random cases (rolling both ways, at rest:
    stuck or breaking away; eta 0.2..1, bearing friction 0..3 N.m, ratio +-0.1..10), to
    1e-14 of the largest torque (a few roundings).  Two closed forms: stuck, the housing
    takes tau_1 + tau_2; the ideal gear rolling, tau_a (1 - ratio)."""
    rng = random.Random(5)
    modes = set()
    for _ in range(20000):
        gear, w_1, tau_1, tau_2 = random_case(rng)
        motion = gear.motion(w_1, tau_1, tau_2)
        modes.add(motion.mode)
        rate = gear.j_1 * motion.a_1 + gear.j_2 * motion.a_1 / gear.ratio
        scale = max(abs(tau_1), abs(tau_2), abs(motion.tau_support), abs(motion.tau_a))
        assert abs(rate - (tau_1 + tau_2 - motion.tau_support)) <= 1e-14 * scale
        if motion.mode == Mode.STUCK:
            assert motion.tau_support == tau_1 + tau_2
    assert modes == {Mode.FORWARD, Mode.BACKWARD, Mode.STUCK}
    ideal = Gear(J_1, J_2, 4.0, 1.0).motion(5.0, 3.0, -20.0)
    assert ideal.tau_support == pytest.approx(ideal.tau_a * (1 - 4.0), rel=1e-15)


@pytest.mark.parametrize("ratio,eta,tau_bf_1,tau_bf_2", [
    (4.0, 0.9, 0.5, 0.8), (-2.0, 0.5, 2.0, 1.0), (2.0, 1.0, 1.5, 1.5)])
def test_e_loss_with_bearing_friction_equals_the_energy_balance(ratio, eta, tau_bf_1, tau_bf_2):
    """As test_e_loss_equals_the_energy_balance with bearing friction (tau_1 in [-10, 10] N.m,
    loads around the stuck interval, every mode visited): e_loss = work of tau_1 and tau_2
    minus the change of kinetic energy, to 1e-12 of the total work (1000 steps of a few
    roundings each); e_loss never decreases; and the bearing part b |w| of (9) is a part of
    it that the mesh alone would not give (e_loss exceeds the mesh losses by it)."""
    rng = random.Random(23)
    gear = Gear(J_1, J_2, ratio, eta, tau_bf_1, tau_bf_2)
    state = GearState(0.0, 3.0)
    work, total, kinds, mesh_part = 0.0, 0.0, set(), 0.0
    ke0 = kinetic_energy(gear, state.w_1)
    for n in range(1000):
        if n % 50 == 0:
            tau_1 = rng.uniform(-10, 10)
            tau_2 = -tau_1 * rng.uniform(0.5 * eta, 1.5 / eta) * ratio
        new = gear.advance(state, tau_1, tau_2, 5e-3)
        motion = gear.motion(state.w_1, tau_1, tau_2)
        kinds.add(motion.mode)
        travel = new.phi_1 - state.phi_1
        step_work = (tau_1 + tau_2 / ratio) * travel
        work += step_work
        total += abs(tau_1 * travel) + abs(tau_2 * travel / ratio)
        if motion.mode != Mode.STUCK and state.w_1 * new.w_1 > 0.0:      # one phase, no stop in the step
            mesh_part += (1.0 - motion.factor) * motion.tau_a * travel
        assert new.e_loss >= state.e_loss
        state = new
    assert kinds == {Mode.FORWARD, Mode.BACKWARD, Mode.STUCK}
    balance = work - (kinetic_energy(gear, state.w_1) - ke0)
    assert abs(state.e_loss - balance) <= 1e-12 * total
    assert state.e_loss > mesh_part


def test_msl_lossy_gear_demo3_decelerates_and_stays_stuck():
    """MSL 4.0 Rotational.Examples.LossyGearDemo3 (ratio 1, lossTable [0, 0.25, 0.25, 0.625,
    2.5], J = 0.001 kg.m2 on both sides, both at 10 rad/s, tau_1 = 0, tau_2 a step to 1 N.m at
    0.5 s; the example whose driving side is not obvious).  Analytically: (8)'s S is 0 at
    tau = 0 (2.5 (0.25e-3 + 1e-3) = 0.625 (4e-3 + 1e-3)): both driving sides give w' =
    -0.625/1.25e-3 = -2.5/5e-3 = -500 rad/s2, so the gear stops at t = 0.02 s and stays
    stuck, also after the step (|q| = 1 N.m < tau_bf_2 = 2.5 N.m holds it, (12)).  Its 1 ms
    output interval as the step: w_1 to 1e-12 of 10 rad/s, e_loss = 0.1 J to 1e-14."""
    gear = Gear(1e-3, 1e-3, 1.0, 0.25, 0.625, 2.5)
    state, h = GearState(0.0, 10.0), 1e-3
    for n in range(1000):
        tau_2 = 1.0 if n * h >= 0.5 - 1e-12 else 0.0
        state = gear.advance(state, 0.0, tau_2, h)
        t = (n + 1) * h
        assert state.w_1 == pytest.approx(max(10.0 - 500.0 * t, 0.0), abs=1e-11), t
    assert state.w_1 == 0.0 and state.phi_1 == pytest.approx(0.1, rel=1e-12)
    assert gear.motion(0.0, 0.0, 1.0).mode == Mode.STUCK
    assert state.e_loss == pytest.approx(0.5 * 2e-3 * 100.0, rel=1e-14)


def msl_demo2_reference(j_1, j_2, ratio, eta, tau_bearing, inputs, h):
    """LossyGearDemo2's gear and BearingFriction as MSL writes them, two friction elements:
    a Coulomb bearing torque tau_bearing on shaft 1 (BearingFriction at its standstill value)
    and a mesh-only LossyGear (lossTable [0, eta, eta, 0, 0]): rolling d, J_1 w' = tau_1 -
    d tau_bearing - m, J_2 w'/ratio = tau_2 + ratio c m, c = eta if d m >= 0 else 1/eta (m the
    torque the mesh takes, tau_eta of MSL); at rest each direction is tried (both elements
    roll or both stick: one shaft).  Integrated by scipy's solve_ivp (RK45) between the held
    inputs, w = 0 as a terminal event; the state at every communication point."""
    from scipy.integrate import solve_ivp

    j_r = j_2 / ratio**2

    def acceleration(d, tau_1, tau_2):
        q = tau_2 / ratio
        for c in (eta, 1.0 / eta):
            m = (j_r * (tau_1 - d * tau_bearing) - j_1 * q) / (c * j_1 + j_r)
            if (d * m >= 0.0) == (c == eta):
                return (tau_1 - d * tau_bearing - m) / j_1
        raise AssertionError("no consistent driving side")

    def direction_at_rest(tau_1, tau_2):
        for d in (1, -1):
            if d * acceleration(d, tau_1, tau_2) > 0.0:
                return d
        return 0

    phi, w, out = 0.0, 0.0, []
    for n, (tau_1, tau_2) in enumerate(inputs):
        t, t_end = n * h, (n + 1) * h
        while t < t_end:
            d = (1 if w > 0 else -1) if w != 0.0 else direction_at_rest(tau_1, tau_2)
            if d == 0:
                break
            a = acceleration(d, tau_1, tau_2)
            stop = lambda _t, y: y[1]
            stop.terminal, stop.direction = True, -d
            sol = solve_ivp(lambda _t, y: [y[1], a], (t, t_end), [phi, w], rtol=1e-12, atol=1e-14,
                            events=stop)
            phi, w = sol.y[0, -1], sol.y[1, -1]
            if sol.status == 1:          # stopped: w = 0 exactly, the mode decided again
                w, t = 0.0, sol.t_events[0][0]
            else:
                t = t_end
        out.append((phi, w))
    return out


def test_msl_lossy_gear_demo2_with_its_bearing_friction_folded_into_the_gear():
    """MSL 4.0 LossyGearDemo2 (J_1 = 1, J_2 = 1.5 kg.m2, ratio 2, eta 0.5, drive 10 sin(2 pi t)
    N.m on shaft 1, load -10 + 2.5 t N.m on shaft 2, 0.5 s) with its BearingFriction on shaft 1
    at the table's standstill value 0.5 N.m (its speed-dependent part, 0.5 |w| N.m, cannot be
    expressed by a constant loss row and is left out).  A bearing torque T on shaft 1 is
    LossyGear's tau_bf_a = T: tau_bf_1 = eta T = 0.25, tau_bf_2 = T/eta = 1 N.m.  The gear so
    parameterized against the two-element reference of MSL's equations (solve_ivp with a
    stop event, inputs sampled and held over the 1 ms output interval in both): phi_1 and
    w_1 at every point to 1e-12 absolute (|w_1| reaches 0.027 rad/s; RK45 is exact on the
    constant accelerations between events, so only rounding and the event location by
    brentq at 4 eps remain: measured 1.7e-17 rad/s and 8.7e-19 rad), and the run visits all
    three modes (330 stuck, 78 forward, 92 backward of 500 points), as the example means to."""
    j_1, j_2, ratio, eta, tau_bearing, h = 1.0, 1.5, 2.0, 0.5, 0.5, 1e-3
    inputs = [(10.0 * math.sin(2 * math.pi * n * h), -10.0 + 2.5 * n * h) for n in range(500)]
    reference = msl_demo2_reference(j_1, j_2, ratio, eta, tau_bearing, inputs, h)
    gear = Gear(j_1, j_2, ratio, eta, eta * tau_bearing, tau_bearing / eta)
    state, modes = GearState(0.0, 0.0), set()
    for (tau_1, tau_2), (phi, w) in zip(inputs, reference):
        modes.add(gear.motion(state.w_1, tau_1, tau_2).mode)
        state = gear.advance(state, tau_1, tau_2, h)
        assert state.w_1 == pytest.approx(w, abs=1e-12)
        assert state.phi_1 == pytest.approx(phi, abs=1e-12)
    assert modes == {Mode.FORWARD, Mode.BACKWARD, Mode.STUCK}


@pytest.mark.parametrize("args,named", [
    ((J_1, J_2, 2.0, 0.9, -1.0, 0.0), "tau_bf_1 = -1.0"), ((J_1, J_2, 2.0, 0.9, 0.0, math.inf), "tau_bf_2 = inf"),
    ((J_1, J_2, 2.0, 1.0, 1.0, 2.0), "tau_bf_1 = 1.0 N.m and tau_bf_2 = 2.0 N.m must be equal when eta = 1"),
])
def test_bad_bearing_friction_is_refused_naming_the_value(args, named):
    with pytest.raises(ValueError, match=re.escape(named)):
        Gear(*args)
