"""Fan, Walker & Wang drivetrains by co-simulation (systems.fan): Engine, input shaft,
Clutch, half shaft and Vehicle FMUs at a 1 ms step (step-mean shafts)."""
import numpy as np
import pytest

from systems import fan

H = 1e-3


def test_f1_launch_rolls_pitches_and_keeps_the_clutch_stuck(fmu_dir):
    """F1 (200 N.m, dry road, clutch never slipping), 3 s: the clutch stays locked, the
    driven wheel rolls without slip after the first landing transient, the pitch settles
    nose up (it moves less than 2e-4 rad over the last second) and F_N1 < F_N2 at the end;
    joint drift below 1e-4 m."""
    r = fan.simulate(fmu_dir, "F1", step=H, stop=3.0)
    late = r.time >= 2.0
    assert r["clutch.locked"].all()
    assert r["vehicle.stick_f"][late].all()
    assert np.ptp(r["vehicle.pitch"][late]) < 2e-4 and r["vehicle.pitch"][-1] > 0.0
    assert r["vehicle.F_n_f"][-1] < r["vehicle.F_n_r"][-1]
    assert np.max(r["vehicle.drift"]) < 1e-4


def test_f2_clutch_judder_is_periodic_while_the_wheels_roll(fmu_dir):
    """F2 (T_e = 323.47 N.m, T_S = 400, T_C = 320), 4.5 s: in steady state (after 3 s)
    the clutch locks and breaks away periodically; the lock-to-lock period is regular
    (spread below 10 % of its mean; measured 0.0263 s at 1, 0.5 and 0.2 ms steps, the
    half-shaft mode sqrt(k2 / J_c) / 2 pi = 38 Hz) and the wheels roll without slip."""
    r = fan.simulate(fmu_dir, "F2", step=H, stop=4.5)
    locked = r["clutch.locked"].astype(int)
    late = r.time > 3.0
    lock_times = r.time[1:][(np.diff(locked) == 1) & late[1:]]
    periods = np.diff(lock_times)
    assert len(lock_times) >= 20
    assert np.std(periods) < 0.1 * np.mean(periods)
    assert np.mean(periods) == pytest.approx(0.0263, rel=0.05)
    assert r["vehicle.stick_f"][late].all() and r["vehicle.stick_r"][late].all()
    assert np.max(r["vehicle.drift"]) < 1e-4


def test_f2_variant_stribeck_gives_the_larger_slip_amplitude(fmu_dir):
    """T_e = 100 N.m with the seed's clutch (T_S = 100, T_C = 80): the slip oscillation
    (peak to peak after 1.5 s) is larger with the Stribeck drop (w_s = 10 rad/s,
    exponent 0.6) than with Coulomb friction (seed Fig. 13; measured 39.6 vs 37.8 rad/s)."""
    amplitude = {}
    for stribeck in (False, True):
        r = fan.simulate(fmu_dir, "F2_100", step=H, stop=3.0, stribeck=stribeck)
        amplitude[stribeck] = np.ptp(r["clutch.w_slip"][r.time > 1.5])
    assert amplitude[True] > amplitude[False]


def test_f3_ice_clutch_stuck_and_tire_stick_slip_recurs(fmu_dir):
    """F3 (ice, T_e = -168.48 N.m, moving backwards with the driven wheel trailing), 1 s:
    the clutch stays stuck and the driven tire sticks and slips again and again (measured:
    6 cycles of 0.043 s between 0.49 and 0.71 s).  DEVIATION from the seed, stated here:
    in this model the tire stick-slip is a burst after the initial transient and then
    stops (pure rolling after 0.71 s), where the seed shows it in steady state; stronger
    torques (-172 N.m and beyond) slip for good after the first landing."""
    r = fan.simulate(fmu_dir, "F3", step=H, stop=1.0)
    assert r["clutch.locked"].all()
    stick = r["vehicle.stick_f"].astype(int)
    to_slip = np.count_nonzero(np.diff(stick) == -1)
    to_stick = np.count_nonzero(np.diff(stick) == 1)
    assert to_slip >= 5 and to_stick >= 5
    assert r["vehicle.v"][-1] < 0.0                       # moving backwards, driven by T_e < 0
    assert np.max(r["vehicle.drift"]) < 1e-4
