"""The automatic launch (systems/catalog/ssd/automatic_launch.ssd): a torque converter from stall,
locked up by LockupControl at a speed ratio, against its monolithic reference
(systems.catalog.reference.automatic_launch_reference) and the converter's own laws.

Tolerances: the co-simulation at the system's 1 ms step against the reference, 1 % of each
signal's range RMS (the accuracy asked of a documented system; measured 0.053 % at most for
the speeds, 0.095 % for the fluid torques); the stall torque ratio to rounding (1e-12: at
SR = 0 the torque ratio is the table's TR_1 times the pump torque, one product); the stall
balance to 3e-7 (the file gives the stall speed K_1 sqrt(150 N.m) = 171.464282 rad/s as
171.4643: 1.05e-7 above it, so the pump torque, its square, 2.1e-7 above 150 N.m).
"""
import numpy as np
import pytest

from drivetrain_fmu.systems.catalog.msl import flag_changes
from drivetrain_fmu.systems.catalog.reference import AUTOMATIC_LAUNCH_KEYS, automatic_launch_reference, error_report
from drivetrain_fmu.systems.ssp import load_system
from tests.cosim import run_as_documented

pytestmark = pytest.mark.fmu

KEYS = list(AUTOMATIC_LAUNCH_KEYS)


@pytest.fixture(scope="module")
def system():
    return load_system("automatic_launch")


@pytest.fixture(scope="module")
def run(fmu_dir, system):
    return run_as_documented(fmu_dir, system, KEYS + ["converter.locked", "lockup.on", "lockup.f_n", "engine_torque.y"])


def test_the_launch_matches_its_monolithic_reference_within_1_percent(run):
    report = error_report(run, automatic_launch_reference(run.time), KEYS)
    print("\n" + "\n".join(f"{key}: max {mx:.2e}, RMS {rms:.2e}" for key, (mx, rms) in report.items()))
    for key, (_, rms) in report.items():
        assert rms <= 1e-2, (key, rms)


def test_at_stall_the_converter_doubles_the_engine_torque(run, system):
    """At t = 0 the turbine stands (SR = 0) and the pump turns at the stall speed, where the
    fluid takes exactly the engine's 150 N.m: the turbine gets TR_1 = 2 times that."""
    tr_stall = system.components["converter"].with_defaults()["TR_1"]
    pump, turbine = run["converter.tau_fluid_pump"][0], run["converter.tau_fluid_turbine"][0]
    # the turbine at rest up to the rounding of the friction system's mean and slip coordinates
    assert abs(run["converter.w_turbine"][0]) <= 1e-15 * run["converter.w_pump"][0]
    assert turbine == pytest.approx(tr_stall * pump, rel=1e-12, abs=0.0)
    assert pump == pytest.approx(run["engine_torque.y"][0], rel=3e-7, abs=0.0)


def test_the_lockup_comes_on_once_at_the_speed_ratio_and_the_clutch_then_holds(run, system):
    """LockupControl switches at the first communication point where w_turbine >= SR_on
    w_pump (its rule, eq. 1), never back; the lock-up clutch then slips until the speeds
    meet and locks once, without chattering: pump and turbine turn as one, with no fluid
    torque (no slip, no circulation)."""
    sr_on = system.components["lockup"].with_defaults()["SR_on"]
    ratio = run["converter.w_turbine"] / run["converter.w_pump"]
    switched = flag_changes(run.time, run["lockup.on"])
    assert len(switched) == 1 and switched[0][1]
    first_on = int(np.searchsorted(run.time, switched[0][0]))
    assert ratio[first_on] >= sr_on > ratio[first_on - 1]
    locked = flag_changes(run.time, run["converter.locked"])
    assert len(locked) == 1 and locked[0][1] and locked[0][0] > switched[0][0]
    after = run.time > locked[0][0]
    assert np.array_equal(run["converter.w_pump"][after], run["converter.w_turbine"][after])
    assert not np.any(run["converter.tau_fluid_pump"][after]) and not np.any(run["converter.tau_fluid_turbine"][after])
