"""The two-speed planetary upshift (systems/catalog/ssd/planetary_shift.ssd) against its monolithic
reference (systems.catalog.reference.planetary_shift_reference) and its kinematics.

Tolerances: the co-simulation at the system's 1 ms step against the reference, 1 % of each
signal's range RMS (the accuracy asked of this system; measured 0.058 % at most for the
speeds, 0.36 % for the friction torques: the README's figures, checked by tests/cli/test_cli.py);
the gear ratios to rounding
(1e-12), as Willis' equation is built into the element's coordinates.
"""
import numpy as np
import pytest

from drivetrain_fmu.systems.catalog.msl import flag_changes
from drivetrain_fmu.systems.catalog.reference import error_report, planetary_shift_reference
from drivetrain_fmu.systems.ssp import load_system
from tests.cosim import run_as_documented

pytestmark = pytest.mark.fmu

KEYS = ["gear.w_sun", "gear.w_carrier", "gear.w_ring", "vehicle.w", "gear.tau_fric_c", "gear.tau_fric_b"]


@pytest.fixture(scope="module")
def run(fmu_dir):
    system = load_system("planetary_shift")
    return run_as_documented(fmu_dir, system, KEYS + ["gear.locked_b", "gear.locked_c"])


def test_the_upshift_matches_its_monolithic_reference_within_1_percent(run):
    report = error_report(run, planetary_shift_reference(run.time), KEYS)
    print("\n" + "\n".join(f"{key}: max {mx:.2e}, RMS {rms:.2e}" for key, (mx, rms) in report.items()))
    for key, (_, rms) in report.items():
        assert rms <= 1e-2, (key, rms)


def test_the_torque_hands_over_from_brake_to_clutch_without_chattering(run):
    """The brake holds the ring until the releasing ramp lets it slip, the clutch locks once
    the engine has come down to the carrier's speed: one change each, in that order."""
    brake = flag_changes(run.time, run["gear.locked_b"])
    clutch = flag_changes(run.time, run["gear.locked_c"])
    assert len(brake) == 1 and not brake[0][1] and len(clutch) == 1 and clutch[0][1]
    assert 2.0 < brake[0][0] < clutch[0][0] < 2.6


def test_first_gear_then_direct_drive(run):
    """Ring held: carrier = z_sun / (z_sun + z_ring) sun = 1/3 sun; clutch locked: 1:1."""
    first = (run.time > 0.1) & (run.time < 2.0)
    assert np.allclose(run["gear.w_carrier"][first], run["gear.w_sun"][first] / 3.0, rtol=1e-12, atol=0.0)
    assert np.all(run["gear.w_ring"][first] == 0.0)
    direct = run.time > 2.7
    assert np.allclose(run["gear.w_carrier"][direct], run["gear.w_sun"][direct], rtol=1e-12, atol=0.0)
