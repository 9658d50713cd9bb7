"""Fan, Walker & Wang drivetrains by co-simulation (systems.catalog.fan): Engine, input shaft,
Clutch, half shaft and Vehicle FMUs at a 1 ms step (step-mean shafts)."""
import numpy as np
import pytest

from drivetrain_fmu.systems.catalog import fan

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
        r = fan.simulate(fmu_dir, "F2_100_stribeck" if stribeck else "F2_100", step=H, stop=3.0)
        amplitude[stribeck] = np.ptp(r["clutch.w_slip"][r.time > 1.5])
    assert amplitude[True] > amplitude[False]


def _stick_instants(result):
    """Instants where the driven (front) tire goes from slip to stick."""
    return result.time[1:][np.diff(result["vehicle.stick_f"].astype(int)) == 1]


def test_f3_published_torque_clutch_stuck_stick_slip_then_the_wheel_spins_up(fmu_dir):
    """F3 as published (ice, T_e = -168.48 N.m, moving backwards), 1.5 s: the clutch stays
    stuck and the driven tire sticks and slips again and again with the half-shaft period
    (measured 6 cycles from 0.48 s, median 0.044 s apart, until 0.70 s), then slips for good: the mean
    drive torque 168.48 N.m exceeds the kinetic traction torque mu F_N R (0.07 x about
    7200 N x 0.25 m = 126 N.m), so once slipping the wheel spins up (its slip speed grows
    over the last 0.5 s).  DEVIATION from the seed, stated here: the seed shows steady
    periodic stick-slip at this torque; in this model that only happens at the critical
    torque near -165.5 N.m (next test)."""
    r = fan.simulate(fmu_dir, "F3", step=H, stop=1.5)
    assert r["clutch.locked"].all()
    instants = _stick_instants(r)
    assert len(instants) >= 5 and np.median(np.diff(instants)) == pytest.approx(0.044, rel=0.05)
    late = r.time > 1.0
    assert not r["vehicle.stick_f"][late].any()
    assert 0.07 * r["vehicle.F_n_f"][-1] * 0.25 < 168.48
    slip = np.abs(r["vehicle.w_wheel_f"] * 0.25 - r["vehicle.v"])[late]
    assert slip[-1] > slip[0] + 0.1
    assert r["vehicle.v"][-1] < 0.0                       # moving backwards, driven by T_e < 0
    assert np.max(r["vehicle.drift"]) < 1e-4


def test_f3_stick_slip_lasts_longer_the_closer_the_torque_to_the_critical_one(fmu_dir):
    """Below the critical torque (between -165.4 and -165.6 N.m in this model; beyond it
    the wheel spins up) the tire stick-slip is a transient that ends in pure rolling, and
    it lasts longer the closer T_e is to the critical torque, the seed's "smallest value
    at which periodic stick-slip can be identified" (measured at 1 ms: 16 cycles until
    1.15 s at -162 N.m, 51 until 2.63 s at -165 N.m, and still periodic at 8 s at
    -165.6 N.m; median cycle 0.044-0.046 s).  At -164 N.m the monolithic reference
    (PoweredVehicle: the seed's 12 coordinates and one LCP) counts the same cycles as the
    co-simulation, to one cycle."""
    from drivetrain_fmu.systems.catalog.reference import fan_reference

    stop = 3.5
    instants = {}
    for torque in (-162.0, -165.0):
        r = fan.simulate(fmu_dir, "F3", step=H, stop=stop, T0=torque)
        assert r["clutch.locked"].all()
        assert r["vehicle.stick_f"][r.time > 3.0].all()                # pure rolling at the end
        instants[torque] = _stick_instants(r)
        assert np.median(np.diff(instants[torque])) == pytest.approx(0.045, rel=0.05)
    assert len(instants[-165.0]) > 2 * len(instants[-162.0])
    assert instants[-165.0][-1] > instants[-162.0][-1] + 1.0
    grid = np.arange(int(round(stop / H)) + 1) * H
    cosimulated = _stick_instants(fan.simulate(fmu_dir, "F3", step=H, stop=stop, T0=-164.0))
    reference = fan_reference("F3", grid, T0=-164.0)
    monolithic = grid[1:][np.diff(reference["vehicle.stick_f"].astype(int)) == 1]
    assert len(cosimulated) >= 20 and abs(len(cosimulated) - len(monolithic)) <= 1




def test_f3_engine_harmonics_excite_the_driveline(fmu_dir):
    """fan_F3_harmonics (seed section 4.3: T_e = T0 (1 + 1.8 sin(2 w_e t) + 0.7 sin(4 w_e t)),
    T0 = 60 N.m, here driving backwards as F3) against the same drivetrain with the constant
    mean torque, 2 s each: the clutch stays stuck in both; with the constant torque the
    driven tire rolls after 1 s and the driveline twist rate w_e - w_wheel only decays
    (measured peak to peak 0.75 rad/s), with the harmonics the twist rate keeps
    oscillating (measured 4.9 rad/s, asserted > 3x) and the torque peaks (up to 3.5 T0)
    make the tire stick and slip (measured stuck 58 % of the time); joint drift < 1e-4 m."""
    from drivetrain_fmu.systems.catalog import fan

    harmonic = fan.simulate(fmu_dir, "F3_harmonics")
    constant = fan.simulate(fmu_dir, "F3", T0=fan.case_values("F3_harmonics")["T0"])
    late = {}
    for name, r in (("harmonic", harmonic), ("constant", constant)):
        assert np.all(r["clutch.locked"]), name
        assert np.max(np.abs(r["vehicle.drift"])) < 1e-4, name
        window = r.time > 1.0
        late[name] = (np.ptp((r["engine.w"] - r["vehicle.w_wheel_f"])[window]), np.mean(r["vehicle.stick_f"][window]))
    assert late["constant"][1] == 1.0
    assert late["harmonic"][0] > 3.0 * late["constant"][0]
    assert 0.2 < late["harmonic"][1] < 0.9
