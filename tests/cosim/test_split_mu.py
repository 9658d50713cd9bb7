"""The split-mu launch (systems/catalog/ssd/split_mu_open.ssd, split_mu_lsd.ssd): a rear-driven
car, the left wheel on ice, the right on asphalt, 1000 N.m on the differential's carrier, an
open and a limited-slip differential, against the monolithic reference
(systems.catalog.reference.split_mu_reference) and the differential's torque split.

The law checked (fmus/differential.py and fmus/axle_vehicle.py, eq. 1): the differential
gives its axles torques that differ by 2 tau_fric (0 open, T_preload while the limited-slip
clutch slips); each half-shaft passes its axle's torque to its wheel, less the axle's
inertia J_axle times its acceleration; each wheel keeps J_wheel times its acceleration and
puts the rest on the road.  So, the ice tire sliding with mu_k F_z:
    R (F_t_left + F_t_right) = 2 R mu_k F_z + 2 tau_fric + J_wheel (w_left' - w_right')
                               + J_axle (w_axle_left' - w_axle_right'),
integrated over a window: twice the ice wheel's traction, plus twice the clutch's torque,
plus the torque that spins the ice wheel up faster than the other.  With an open differential
the vehicle gets no more than that (the asphalt wheel's grip, 0.9 F_z, unused: it barely
moves); with the limited-slip clutch the asphalt wheel takes 2 T_preload / R = 1667 N more.

Tolerances: the co-simulation at its 1 ms step against the reference, 1 % of each signal's
range RMS (the accuracy asked of a documented system; measured 0.10 % at most, the left
half-shaft's torque of split_mu_lsd); the integrated law 0.1 % of the tractive force (the
co-simulation's error of the tire forces, up to 0.064 % RMS of their range, and the
trapezoidal sums of 1 ms samples; measured 2.6e-6 open, 1.3e-6 limited slip).
"""
import numpy as np
import pytest

from drivetrain_fmu.solvers.contract import GRAVITY
from drivetrain_fmu.systems.catalog.msl import flag_changes
from drivetrain_fmu.systems.catalog.reference import SPLIT_MU_KEYS, error_report, split_mu_reference
from drivetrain_fmu.systems.ssp import load_system
from tests.cosim import run_as_documented

pytestmark = pytest.mark.fmu

NAMES = ("split_mu_open", "split_mu_lsd")
FLAGS = ["vehicle.stick_left", "vehicle.stick_right", "diff.locked"]
#: after the torque ramp (0.5 s) to the end: the ice tire slides, the limited-slip clutch slips
WINDOW = (0.5, 2.0)


@pytest.fixture(scope="module", params=NAMES)
def case(request, fmu_dir):
    system = load_system(request.param)
    run = run_as_documented(fmu_dir, system, list(SPLIT_MU_KEYS) + FLAGS)
    return request.param, system, run


def test_the_launch_matches_its_monolithic_reference_within_1_percent(case):
    name, _, run = case
    report = error_report(run, split_mu_reference(name, run.time), SPLIT_MU_KEYS)
    print("\n" + "\n".join(f"{key}: max {mx:.2e}, RMS {rms:.2e}" for key, (mx, rms) in report.items()))
    for key, (_, rms) in report.items():
        assert rms <= 1e-2, (key, rms)


def integral(time, signal, inside):
    return float(np.trapezoid(np.asarray(signal)[inside], time[inside]))


def test_the_road_gets_twice_the_ice_traction_plus_twice_the_clutch_torque(case):
    """The law of the module docstring over WINDOW, with mu_k F_z and T_preload from the file:
    open, 2 mu_k F_z = 515 N and the ice wheel's spin-up (282 N here); limited slip, 1667 N
    more.  The ice tire slides and the limited-slip clutch slips throughout the window."""
    name, system, run = case
    car = system.components["vehicle"].with_defaults()
    diff = system.components["diff"].with_defaults()
    time = run.time
    inside = (time >= WINDOW[0] - 1e-9) & (time <= WINDOW[1] + 1e-9)
    first, last = np.flatnonzero(inside)[[0, -1]]
    assert not np.any(run["vehicle.stick_left"][inside]) and not np.any(run["diff.locked"][inside])
    radius, span = car["R"], time[last] - time[first]
    f_z = car["axle_load"] * car["m_vehicle"] * GRAVITY / 2.0
    traction = integral(time, run["vehicle.F_t_left"] + run["vehicle.F_t_right"], inside) / span
    spin_up = sum(inertia * ((run[f"{body}_left"][last] - run[f"{body}_right"][last])
                             - (run[f"{body}_left"][first] - run[f"{body}_right"][first]))
                  for inertia, body in ((car["J_wheel"], "vehicle.w"), (diff["J_left"], "diff.w"))) / span
    ice, clutch = 2.0 * car["mu_k_left"] * f_z, 2.0 * diff["T_preload"] / radius
    print(f"\n{name}: traction {traction:.2f} N = 2 ice {ice:.2f} + 2 clutch {clutch:.2f} + spin-up "
          f"{spin_up / radius:.2f} N")
    assert diff["J_left"] == diff["J_right"]           # the law's J_axle
    law = ice + clutch + spin_up / radius
    print(f"relative residual {traction / law - 1.0:.2e}")
    assert traction == pytest.approx(law, rel=1e-3)


def test_each_tire_and_the_clutch_switch_once_without_chattering(case):
    """From rest everything sticks; the ice tire breaks away once and slides to the end, the
    asphalt tire rolls throughout; the limited-slip clutch (capacity T_preload > 0) holds
    until the axles' torques differ by 2 T_preload, then slips once (open: it never holds)."""
    name, system, run = case
    time = run.time
    assert [state for _, state in flag_changes(time, run["vehicle.stick_left"])] == [False]
    assert np.all(run["vehicle.stick_right"])
    expected = [False] if system.components["diff"].with_defaults()["T_preload"] else []
    assert [state for _, state in flag_changes(time, run["diff.locked"])] == expected
