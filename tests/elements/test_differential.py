"""Differential against the closed form of its three-inertia constraint dynamics.

With the carrier passing T_g to the spider gears (fmus/differential.py):
    J_carrier a_carrier = tau_carrier - T_g,   J_left a_left = tau_left + T_g/2 - tau_fric,
    J_right a_right = tau_right + T_g/2 + tau_fric,   a_carrier = (a_left + a_right) / 2
so that
    T_g = (4 J_left J_right tau_carrier - 2 J_carrier (J_right (tau_left - tau_fric)
           + J_left (tau_right + tau_fric))) / (4 J_left J_right + J_carrier (J_left + J_right)).
The slaves run in-process (the built FMU is checked by the element-contract and fuzz tests).
Tolerances: with Coulomb friction (w_stribeck = 0) or none the motion is piecewise quadratic
in time with its events in closed form, so speeds, angles and torques agree with these
formulas to rounding: ROUNDING = 1e-12 relative (a few dozen floating-point operations per
step, each 1.1e-16), as tests/elements/test_friction_elements.py.
"""
import itertools

import pytest

from drivetrain_fmu.fmus import Differential
from tests.elements.test_friction_elements import ROUNDING, advance, feedthrough, make

MEMBERS = ("carrier", "left", "right")
#: a limited-slip clutch of constant friction: T_s = 10 + 0.4 * 0.15 * 2 * 100 = 22 N.m,
#: T_c = 10 + 0.3 * 0.15 * 2 * 100 = 19 N.m
LIMITED_SLIP = dict(T_preload=10.0, f_n=100.0, w_stribeck=0.0)
T_S, T_C = 22.0, 19.0


def gear_torque(j_carrier, j_left, j_right, tau_carrier, tau_left, tau_right, tau_fric=0.0):
    """T_g, the torque the carrier passes to the spider gears (module docstring)."""
    return ((4.0 * j_left * j_right * tau_carrier - 2.0 * j_carrier * (j_right * (tau_left - tau_fric)
                                                                       + j_left * (tau_right + tau_fric)))
            / (4.0 * j_left * j_right + j_carrier * (j_left + j_right)))


def accelerations(inertias, torques, tau_fric=0.0):
    """(a_carrier, a_left, a_right) and T_g from the closed form."""
    (j_carrier, j_left, j_right), (tau_carrier, tau_left, tau_right) = inertias, torques
    t_g = gear_torque(*inertias, *torques, tau_fric)
    return ((tau_carrier - t_g) / j_carrier, (tau_left + t_g / 2.0 - tau_fric) / j_left,
            (tau_right + t_g / 2.0 + tau_fric) / j_right), t_g


def speeds(diff):
    return tuple(getattr(diff, f"w_{m}") for m in MEMBERS)


def inertia_values(diff):
    return tuple(getattr(diff, f"J_{m}") for m in MEMBERS)


@pytest.mark.parametrize("j_left, j_right, tau_left, tau_right", [(0.5, 0.5, -10.0, -10.0),   # equal loads
                                                                 (0.2, 0.8, -5.0, -30.0)])    # unequal
def test_open_differential_gives_each_axle_half_the_gear_torque(j_left, j_right, tau_left, tau_right):
    """Open (T_preload = 0, f_n = 0): each axle receives T_g / 2 from the differential, J a -
    tau (the torque beyond its own load that accelerates it), whatever its inertia and load; with
    equal axles and loads they turn at one speed.  From rest over 0.1 s the accelerations are
    the speeds / 0.1 (constant: no friction)."""
    diff = make(Differential, J_left=j_left, J_right=j_right)
    advance(diff, 0.0, 0.1, tau_carrier=100.0, tau_left=tau_left, tau_right=tau_right)
    expected, t_g = accelerations(inertia_values(diff), (100.0, tau_left, tau_right))
    measured = [w / 0.1 for w in speeds(diff)]
    received = (j_left * measured[1] - tau_left, j_right * measured[2] - tau_right)
    assert received == (pytest.approx(t_g / 2.0, rel=ROUNDING),) * 2
    assert measured == pytest.approx(expected, rel=ROUNDING)
    assert not feedthrough(diff)["locked"] and feedthrough(diff)["tau_fric"] == 0.0
    if (j_left, tau_left) == (j_right, tau_right):
        assert diff.w_left == diff.w_right == diff.w_carrier


def test_open_differential_lets_the_loaded_axle_fall_behind():
    """100 N.m on the carrier, the right axle loaded with 30 N.m: the right axle accelerates at
    (tau_right + T_g / 2) / J_right, less than the left one, and the carrier at the mean; over
    1 s (10 steps) the speeds are a t and the angles a t^2 / 2 (to ROUNDING), nothing is
    dissipated (e_loss, the work minus the kinetic energy, is 0 to the rounding of 1e-12 of
    that energy)."""
    inertias = (0.05, 0.3, 0.6)
    diff = make(Differential, J_carrier=0.05, J_left=0.3, J_right=0.6)
    advance(diff, 0.0, 0.1, steps=10, tau_carrier=100.0, tau_left=0.0, tau_right=-30.0)
    expected, _ = accelerations(inertias, (100.0, 0.0, -30.0))
    assert expected[2] < expected[0] < expected[1]
    assert list(speeds(diff)) == pytest.approx(expected, rel=ROUNDING)
    assert [getattr(diff, f"phi_{m}") for m in MEMBERS] == pytest.approx([a / 2.0 for a in expected], rel=ROUNDING)
    assert diff.w_carrier == pytest.approx((diff.w_left + diff.w_right) / 2.0, rel=ROUNDING)
    kinetic = sum(0.5 * j * w**2 for j, w in zip(inertias, speeds(diff)))
    assert abs(diff.e_loss) <= ROUNDING * kinetic


def test_limited_slip_below_its_capacity_turns_the_axles_together():
    """Locked, T_s = 22 N.m, 100 N.m on the carrier and no axle loads: the three members turn
    as one body at a = tau_carrier / (J_carrier + J_left + J_right) (a solid axle), so the
    carrier torque reaching the axles, tau_carrier - J_carrier a, splits in proportion to their
    inertias (left J_left a); the clutch passes tau_fric = (J_right - J_left) a / 2 = 11.8 N.m
    < T_s from the left axle to the right one, and nothing slips (e_loss 0)."""
    diff = make(Differential, J_carrier=0.05, J_left=0.3, J_right=0.5, locked_start=True, **LIMITED_SLIP)
    advance(diff, 0.0, 0.1, steps=5, tau_carrier=100.0, tau_right=0.0)
    a = 100.0 / 0.85
    assert diff.w_carrier == diff.w_left == diff.w_right == pytest.approx(a * 0.5, rel=ROUNDING)
    out = feedthrough(diff)
    assert out["locked"] and out["p_loss"] == 0.0 and diff.e_loss == 0.0
    assert out["tau_fric"] == pytest.approx((0.5 - 0.3) * a / 2.0, rel=ROUNDING) and out["tau_fric"] < T_S
    # the left axle receives T_g / 2 - tau_fric = J_left a: its share of what the carrier passes on
    t_g = gear_torque(0.05, 0.3, 0.5, 100.0, 0.0, 0.0, out["tau_fric"])
    assert t_g / 2.0 - out["tau_fric"] == pytest.approx((100.0 - 0.05 * a) * 0.3 / 0.8, rel=ROUNDING)


@pytest.mark.parametrize("h", [1e-3, 1e-2])
def test_limited_slip_breaks_away_when_the_torque_to_pass_exceeds_its_capacity(h):
    """Equal axles, locked, the right axle's load ramped at 90 N.m/s (held over each step): the
    clutch must pass (tau_left - tau_right) / 2 = 45 t from the left axle to the right one, so
    it holds until t* = 2 T_s / 90 = 0.4889 s (the axles' torques from the differential then
    differ by 2 T_s = 44 N.m) and slips from the first communication point after t* on (within
    h), with its kinetic capacity T_c = 19 N.m (w_stribeck = 0), the right axle behind."""
    diff = make(Differential, J_carrier=0.05, J_left=0.5, J_right=0.5, locked_start=True, **LIMITED_SLIP)
    t_break, breakaway = 2.0 * T_S / 90.0, None
    for n in range(round(0.6 / h)):
        t = n * h
        diff.assign({"tau_carrier": 50.0, "tau_right": -90.0 * t})
        out = feedthrough(diff)
        if out["locked"]:
            assert breakaway is None, f"locked again at t = {t}"
            assert out["tau_fric"] == pytest.approx(45.0 * t, rel=ROUNDING, abs=ROUNDING)
            assert diff.w_left == diff.w_right
        elif breakaway is None:
            breakaway = t
        else:
            assert out["tau_fric"] == T_C and diff.w_right < diff.w_left
        advance(diff, t, h)
    assert t_break < breakaway <= t_break + h


def test_energy_balance_through_slip_and_lock():
    """Work of the external torques = kinetic energy + e_loss (from rest) through a launch
    with a Stribeck law (the slip integrated by solvers.ode): locked, then the right axle's load
    makes it slip, then the clamp force relocks it.  e_loss is accumulated step by step from the
    same motion as the angles, so the balance holds to the rounding of 1500 steps of sums,
    about 1500 u = 3e-13 relative at most: 1e-12 (measured 2.1e-14)."""
    inertias = (0.05, 0.3, 0.6)
    diff = make(Differential, J_carrier=0.05, J_left=0.3, J_right=0.6, T_preload=30.0, locked_start=True)
    work, t, h, modes = 0.0, 0.0, 1e-3, []
    for k in range(1500):
        torques = (100.0, -5.0, -80.0 if 300 <= k < 900 else -20.0)
        clamp = 0.0 if k < 700 else 500.0
        diff.assign({"tau_carrier": torques[0], "tau_left": torques[1], "tau_right": torques[2], "f_n": clamp})
        modes.append(feedthrough(diff)["locked"])
        before = [getattr(diff, f"phi_{m}") for m in MEMBERS]
        t = advance(diff, t, h)
        work += sum(tau * (getattr(diff, f"phi_{m}") - phi) for tau, m, phi in zip(torques, MEMBERS, before))
    kinetic = sum(0.5 * j * w**2 for j, w in zip(inertias, speeds(diff)))
    assert modes[0] and not modes[400] and modes[-1]          # locked, slipping, locked again
    assert diff.e_loss > 0.01 * work
    assert work == pytest.approx(kinetic + diff.e_loss, rel=1e-12)


def test_open_differential_is_exact_at_any_inertias_in_range():
    """Inertias 1e-12 .. 1e6 kg.m2 each (125 sets), 10 N.m on the carrier, 1 N.m of load on
    the right axle: each member's acceleration within 1e-12 of the closed form, relative to the
    size of the terms it is made of (|tau| + |T_g| / 2 over J: the formula's own rounding); the
    mean and slip coordinates keep every inertia ratio (fmus/differential.py; as axle speeds
    a carrier 1e17 times heavier than the axles was singular)."""
    values = (1e-12, 1e-6, 0.01, 1.0, 1e6)
    for inertias in itertools.product(values, repeat=3):
        diff = make(Differential, **dict(zip(("J_carrier", "J_left", "J_right"), inertias)))
        advance(diff, 0.0, 1e-3, tau_carrier=10.0, tau_left=0.0, tau_right=-1.0)
        expected, t_g = accelerations(inertias, (10.0, 0.0, -1.0))
        sizes = ((10.0 + abs(t_g)) / inertias[0], abs(t_g) / 2.0 / inertias[1], (1.0 + abs(t_g) / 2.0) / inertias[2])
        for w, a, size in zip(speeds(diff), expected, sizes):
            assert abs(w / 1e-3 - a) <= ROUNDING * size, (inertias, w / 1e-3, a)


def test_differential_refuses_a_locked_start_with_the_axles_apart():
    diff = Differential(instance_name="d", resources=None)
    diff.assign({"locked_start": True, "w_left_start": 1.0})
    assert diff.parameter_problems() == ["locked_start = true needs the axles at equal speeds: w_left_start == "
                                         "w_right_start (got 1.0 and 0.0)"]
