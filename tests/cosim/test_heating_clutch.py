"""The repeated launches (systems/catalog/ssd/heating_clutch.ssd): a Clutch with its thermal
model heated launch after launch until its friction falls, against its monolithic reference
(systems.catalog.reference.heating_clutch_reference) and the thermal model's laws
(solvers.thermal).

Tolerances: the co-simulation at the system's 1 ms step against the reference, 1 % of each
signal's range RMS (the accuracy asked of a documented system; measured 0.11 % at most, the
engine speed; docs/reference-cases.md splits the error among the couplings); the energy
balance to 1e-9 of the energy dissipated (measured 6e-15: two formulas of the same step that
agree to rounding, summed over 4500 steps); the cooling of the open clutch to 1e-12 (the element's update is the
exact exponential for zero power, so only rounding is left: measured 2.5e-15); the slip
times against the lock times of the launch's closed-form motion (below), bracketed by the
capacities at the temperatures where the launch starts and where it locks, with one
communication step of slack on the late side (the run sees the lock at the first
communication point after it).
"""
import math

import numpy as np
import pytest

from drivetrain_fmu.systems.catalog.msl import flag_changes
from drivetrain_fmu.systems.catalog.reference import HEATING_CLUTCH_KEYS, error_report, heating_clutch_reference
from drivetrain_fmu.systems.ssp import load_system
from tests.cosim import run_as_documented

pytestmark = pytest.mark.fmu

KEYS = list(HEATING_CLUTCH_KEYS)


@pytest.fixture(scope="module")
def system():
    return load_system("heating_clutch")


@pytest.fixture(scope="module")
def values(system):
    return system.component_values()


@pytest.fixture(scope="module")
def run(fmu_dir, system):
    return run_as_documented(fmu_dir, system, KEYS + ["clutch.locked", "clutch.e_loss", "clutch.f_n", "clutch.w_slip"])


def launches(values, time):
    """(start, end) of each launch as indices of ``time``: the first communication points at
    or after the instants where the clamp-force staircase steps up and down (the file puts
    them half a step before a point, so a sampled source switches at that point)."""
    table = values["clamp_force"]
    points = [(table[f"t_{i}"], table[f"y_{i}"]) for i in range(1, table["n_points"] + 1)]
    return [(int(np.searchsorted(time, t)), int(np.searchsorted(time, t_next)))
            for (t, y), (t_next, _) in zip(points, points[1:]) if y > 0.0]


def test_the_launches_match_their_monolithic_reference_within_1_percent(run):
    report = error_report(run, heating_clutch_reference(run.time), KEYS)
    print("\n" + "\n".join(f"{key}: max {mx:.2e}, RMS {rms:.2e}" for key, (mx, rms) in report.items()))
    for key, (_, rms) in report.items():
        assert rms <= 1e-2, (key, rms)


def test_the_heat_dissipated_is_stored_or_transferred(run, values):
    """e_loss = C_th (T_th - T_th_start) + e_heat at every communication point: the first
    law for the clutch's lumped capacity (solvers.thermal)."""
    clutch = values["clutch"]
    stored = clutch["C_th"] * (run["clutch.T_th"] - clutch["T_th_start"])
    balance = run["clutch.e_loss"] - stored - run["clutch.e_heat"]
    assert run["clutch.e_loss"][-1] > 5e3          # it did dissipate: three launches, 5.7 kJ
    assert np.max(np.abs(balance)) <= 1e-9 * run["clutch.e_loss"][-1], np.max(np.abs(balance))


def test_the_open_clutch_cools_exponentially_and_heats_again_at_each_launch(run, values):
    """Between launches the clutch is open (f_n = 0: no friction, no dissipation), so its
    temperature relaxes to the ambient as T_amb + (T(t_off) - T_amb) exp(-G_th (t - t_off) /
    C_th) (Newton cooling of a lumped capacity), only partly within the 0.7 s pause
    (C_th / G_th = 5 s); each launch then heats it above where the last one left it: the
    temperature at each launch's end rises launch after launch."""
    clutch = values["clutch"]
    t, temperature, t_amb = run.time, run["clutch.T_th"], clutch["T_amb"]
    spans = launches(values, t)
    for (_, off), (on, _) in zip(spans, spans[1:] + [(t.size - 1, None)]):
        pause = slice(off, on + 1)
        assert not np.any(run["clutch.f_n"][off:on])
        start = temperature[off]
        exact = t_amb + (start - t_amb) * np.exp(-clutch["G_th"] * (t[pause] - t[off]) / clutch["C_th"])
        assert np.max(np.abs(temperature[pause] - exact) / exact) <= 1e-12
        assert 0.8 < (temperature[on] - t_amb) / (start - t_amb) < 0.9     # partly: exp(-0.7 / 5) = 0.87
    at_ends = [temperature[off] for _, off in spans]
    assert all(later > earlier + 5.0 for earlier, later in zip(at_ends, at_ends[1:])), at_ends


def lock_time(values, w_1, w_2, t_c):
    """When the slipping clutch locks, launched at engine speed ``w_1`` and vehicle speed
    ``w_2`` with the kinetic capacity ``t_c`` held: the engine decelerates uniformly,
    J_1 dw_1/dt = T_e - t_c; the vehicle under the quadratic drag obeys J_2 dw_2/dt = t_c -
    b J_2 w_2^2 (w_2 > 0), whose solution is w_2(t) = r tanh(k t + artanh(w_2(0) / r)) with
    r = sqrt(a / b), k = sqrt(a b), a = t_c / J_2 (a Riccati equation); the slip w_1 - w_2
    falls monotonically, so its one zero is found by bisection to 1e-12 s."""
    clutch, drag = values["clutch"], values["drag"]
    a = t_c / clutch["J_2"]
    b = abs(drag["tau_nominal"]) / (drag["w_nominal"] ** 2 * clutch["J_2"])
    r, k = math.sqrt(a / b), math.sqrt(a * b)
    deceleration = (t_c - values["engine_torque"]["y_1"]) / clutch["J_1"]

    def slip(t):
        return w_1 - deceleration * t - r * math.tanh(k * t + math.atanh(w_2 / r))

    low, high = 0.0, 1.0
    assert slip(low) > 0.0 > slip(high)
    while high - low > 1e-12:
        middle = 0.5 * (low + high)
        low, high = (middle, high) if slip(middle) > 0.0 else (low, middle)
    return high


def test_each_launch_slips_longer_as_the_hot_clutch_grips_less(run, values):
    """mu(T) = mu_ref (1 + c_mu_T (T - T_ref)) with c_mu_T < 0: the capacity falls as the
    clutch heats, during a launch and from launch to launch.  Each launch's slip time lies
    between the closed-form lock times (lock_time) with the capacity at the temperature where
    the launch starts and where it locks, the least and the most heated of the slip; and
    the later launches, which start hotter, slip longer than the first."""
    clutch, t, temperature = values["clutch"], run.time, run["clutch.T_th"]
    lever = clutch["mu_k"] * clutch["r_eff"] * clutch["n_surfaces"]
    step = t[1] - t[0]
    slips = []
    for start, off in launches(values, t):
        locks = flag_changes(t[start:], run["clutch.locked"][start:])
        assert locks and locks[0][1] and locks[0][0] < t[off]
        lock = int(np.searchsorted(t, locks[0][0]))

        def capacity(at):
            return lever * run["clutch.f_n"][start] * (1.0 + clutch["c_mu_T"] * (temperature[at] - clutch["T_ref"]))

        w_1, w_2 = run["clutch.w_1"][start], run["clutch.w_2"][start]
        earliest, latest = lock_time(values, w_1, w_2, capacity(start)), lock_time(values, w_1, w_2, capacity(lock))
        slips.append(t[lock] - t[start])
        print(f"launch at {t[start]:.3f} s: T {temperature[start]:.2f} -> {temperature[lock]:.2f} K, "
              f"slip {slips[-1]:.3f} s within [{earliest:.4f}, {latest:.4f}] s")
        assert earliest <= slips[-1] <= latest + step
    assert all(later > slips[0] + 0.01 for later in slips[1:]), slips
