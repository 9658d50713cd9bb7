"""The synchronizer upshift (systems/catalog/ssd/synchro_upshift.ssd): a two-speed manual
upshift, gear 1 released with the main clutch open, gear 2 synchronized by the Synchronizer's
cone and engaged by its dogs, against its monolithic reference
(systems.catalog.reference.synchro_upshift_reference) and the synchronizer's laws.

Tolerances: the co-simulation at the system's 1 ms step against the reference, 1 % of each
signal's range RMS (the accuracy asked of a documented system; measured 0.29 % at most); the
synchronization time J_eff dw / T_cone to 0.5 % of itself (measured 0.23 % against the
reference's exact lock: the output shaft is held by the vehicle through a shaft, not fixed, and
its speed is taken at the lock's communication point) plus one communication step (the lock is
seen at the first point after it); the dogs' engagement within one communication step after
the exact sleeve travel; the dogs' rigid joint to rounding (exactly equal speeds).
"""
import math

import numpy as np
import pytest

from drivetrain_fmu.systems.catalog.msl import flag_changes
from drivetrain_fmu.systems.catalog.reference import SYNCHRO_UPSHIFT_KEYS, error_report, synchro_upshift_reference
from drivetrain_fmu.systems.ssp import load_system
from tests.cosim import run_as_documented

pytestmark = pytest.mark.fmu

KEYS = list(SYNCHRO_UPSHIFT_KEYS)


@pytest.fixture(scope="module")
def system():
    return load_system("synchro_upshift")


@pytest.fixture(scope="module")
def values(system):
    return system.component_values()


@pytest.fixture(scope="module")
def run(fmu_dir, system):
    return run_as_documented(fmu_dir, system, KEYS + ["synchro.locked", "synchro.engaged", "synchro.w_slip",
                                                      "synchro.phi_gear", "synchro.phi_shaft", "gearbox.phi_2",
                                                      "gearbox.locked_1", "mesh_2.phi_rel"])


@pytest.fixture(scope="module")
def reference(run):
    return synchro_upshift_reference(run.time)


def test_the_upshift_matches_its_monolithic_reference_within_1_percent(run, reference):
    report = error_report(run, reference, KEYS)
    print("\n" + "\n".join(f"{key}: max {mx:.2e}, RMS {rms:.2e}" for key, (mx, rms) in report.items()))
    for key, (_, rms) in report.items():
        assert rms <= 1e-2, (key, rms)


def test_the_cone_synchronizes_in_j_eff_dw_over_t_cone(run, reference, system, values):
    """With the main clutch open and gear 1 released, the input side (the clutch disc and input
    shaft, J_2, seen through gear 2's ratio, and the gear-2 idler) is free but for the cone: its
    momentum falls by T_cone = mu r_cone f_sleeve / sin(alpha_cone) per second (the
    synchronizer's eq. 1) until the idler turns with the output shaft, after
    t_sync = J_eff dw / T_cone, J_eff = J_gear + ratio^2 J_2 (the output shaft, held by the
    vehicle, barely moves)."""
    synchro, gearbox, ratio = values["synchro"], values["gearbox"], values["mesh_2"]["ratio"]
    sleeve = values["sleeve_force"]
    n = sleeve["n_points"]
    t_on = 0.5 * (sleeve[f"t_{n - 1}"] + sleeve[f"t_{n}"])    # the linear force ramp's mean instant
    f_sleeve = sleeve[f"y_{n}"]
    t_cone = synchro["mu"] * synchro["r_cone"] * f_sleeve / math.sin(synchro["alpha_cone"])
    j_eff = synchro["J_gear"] + ratio ** 2 * gearbox["J_2"]
    time = run.time
    start = int(np.searchsorted(time, sleeve[f"t_{n - 1}"] - 1e-12))
    momentum = ratio * gearbox["J_2"] * run["gearbox.w_2"][start] + synchro["J_gear"] * run["synchro.w_gear"][start]
    assert run["synchro.locked"][start:].any(), "the cone never synchronizes"
    locked = np.flatnonzero(run["synchro.locked"][start:])[0] + start
    dw = momentum / j_eff - run["synchro.w_shaft"][locked]
    t_sync = j_eff * dw / t_cone
    print(f"\nT_cone {t_cone:.4f} N.m, dw {dw:.4f} rad/s, predicted lock {t_on + t_sync:.6f} s, exact "
          f"{reference.events['t_lock']:.6f} s, seen at {time[locked]:.4f} s")
    assert abs(reference.events["t_lock"] - (t_on + t_sync)) <= 5e-3 * t_sync
    assert t_on + t_sync * (1 - 5e-3) <= time[locked] < t_on + t_sync * (1 + 5e-3) + system.step


def test_the_dogs_engage_only_on_a_synchronized_cone_after_the_sleeve_travel(run, reference, system, values):
    """The dogs engage once, x_engage of sleeve travel after the cone has locked (x'' =
    f_sleeve / m_sleeve from rest: sqrt(2 m_sleeve x_engage / f_sleeve)); never while the cone
    slips: at every point with the dogs engaged the slip is exactly zero."""
    synchro = values["synchro"]
    engaged = run["synchro.engaged"].astype(bool)
    changes = flag_changes(run.time, run["synchro.engaged"])
    assert len(changes) == 1 and changes[0][1]
    assert np.all(run["synchro.w_slip"][engaged] == 0.0) and np.all(run["synchro.locked"][engaged])
    first_lock = flag_changes(run.time, run["synchro.locked"])[0][0]
    travel = math.sqrt(2 * synchro["m_sleeve"] * synchro["x_engage"] / values["sleeve_force"]["y_3"])
    assert changes[0][0] > first_lock
    assert reference.events["t_engaged"] == pytest.approx(reference.events["t_lock"] + travel, abs=1e-12)
    assert changes[0][0] - system.step < reference.events["t_engaged"] <= changes[0][0]


def test_after_the_shift_the_gearbox_turns_at_gear_2s_ratio(run, values):
    """Engaged dogs join the gear-2 idler to the output shaft rigidly: equal speeds at every
    point to rounding (exactly); the input shaft then turns at gear 2's ratio to the output
    shaft, up to the change of the mesh shaft's twist (its phi_rel) over the window; once the
    main clutch has locked again, the engine turns with the input shaft."""
    ratio = values["mesh_2"]["ratio"]
    engaged = run["synchro.engaged"].astype(bool)
    assert np.array_equal(run["synchro.w_gear"][engaged], run["synchro.w_shaft"][engaged])
    first, last = np.flatnonzero(engaged)[[0, -1]]
    d_in = run["gearbox.phi_2"][last] - run["gearbox.phi_2"][first]
    d_out = run["synchro.phi_shaft"][last] - run["synchro.phi_shaft"][first]
    twist = abs(run["mesh_2.phi_rel"][last] - run["mesh_2.phi_rel"][first])
    assert abs(d_in / d_out - ratio) <= ratio * twist / d_out + 1e-12
    relocked = flag_changes(run.time, run["gearbox.locked_1"])[-1]
    assert relocked[1] and relocked[0] > run.time[first]
    after = run.time > relocked[0]
    assert np.array_equal(run["gearbox.w_1"][after], run["gearbox.w_2"][after])
