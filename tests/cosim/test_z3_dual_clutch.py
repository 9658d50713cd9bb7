"""Z3: double-clutch vehicle co-simulated through fmpy (DualClutch, 2 Shafts, Inertia)."""
import numpy as np
import pytest

from drivetrain_fmu.systems.catalog import z3

H = z3.SYSTEM.step          # the system's default step (2 ms, systems/catalog/ssd/z3.ssd)


@pytest.fixture(scope="module")
def result(fmu_dir):
    return z3.simulate(fmu_dir, step=H)


def _window(result, t0, t1):
    return (result.time >= t0) & (result.time <= t1)


def test_engaged_clutch_locks_and_stays_locked(result):
    before_shift = _window(result, 0.0, z3.SHIFT_START - H)
    assert result["clutch.locked_a"][before_shift].all()
    assert np.all(result["clutch.w_slip_a"][before_shift] == 0.0)
    # clutch b synchronises once clamped, then stays locked to the end
    locked_b = result["clutch.locked_b"].astype(bool)
    t_lock_b = result.time[np.argmax(locked_b)]
    assert z3.SHIFT_START < t_lock_b < z3.SHIFT_START + z3.SHIFT_DURATION + 0.5
    assert locked_b[result.time >= t_lock_b].all()
    assert np.all(result["clutch.w_slip_b"][result.time >= t_lock_b] == 0.0)


def test_locked_friction_equals_carried_torque(result):
    """Clutch a locked, b open: body 2 gets 400 N.m + tau_a, body 1 gets shaft torque - tau_a.

    Both move together (w_1 == w_2), so tau_a follows from equal accelerations:
    (400 + tau_a)/J2 = (tau_shaft - tau_a)/J1  =>  tau_a = (J2 tau_shaft - J1 400)/(J1 + J2)
    (eq. 9 with F1 = tau_shaft, F2 = 400).  Evaluated with the inputs of the same point.
    """
    j1, j2 = z3.CLUTCH["J_1"], z3.CLUTCH["J_2"]
    locked = _window(result, 0.0, z3.SHIFT_START - H)
    expected = (j2 * result["shaft_odd.tau_1"][locked] - j1 * z3.ENGINE_TORQUE) / (j1 + j2)
    np.testing.assert_allclose(result["clutch.tau_fric_a"][locked], expected, rtol=1e-9, atol=1e-9)
    assert np.all(result["clutch.tau_fric_b"][locked] == 0.0)  # f_n_b = 0 opens b


def test_locked_friction_never_flips_sign(result):
    for tag, window in (("a", (0.0, z3.SHIFT_START - H)), ("b", (z3.SHIFT_START + 1.0, z3.STOP))):
        tau = result[f"clutch.tau_fric_{tag}"][_window(result, *window)]
        locked = result[f"clutch.locked_{tag}"][_window(result, *window)].astype(bool)
        signs = np.sign(tau[locked])
        assert np.all(signs == signs[0]), f"clutch {tag} friction changes sign while locked"


def test_shift_hands_the_torque_over_without_chattering(result):
    shift = _window(result, z3.SHIFT_START, z3.SHIFT_START + z3.SHIFT_DURATION)
    # over the whole run each clutch changes its lock state exactly once: a unlocks, b locks
    for tag in "ab":
        flips = np.count_nonzero(np.diff(result[f"clutch.locked_{tag}"].astype(int)))
        assert flips == 1, f"clutch {tag} toggled {flips} times"
    # a slipping clutch transmits its kinetic level T_c(f_n) (Stribeck drop aside): bounded by T_s
    for tag, mu_s in (("a", 0.4), ("b", 0.4)):
        cap = mu_s * 0.15 * 2.0 * result[f"clutch.f_n_{tag}"][shift]
        assert np.all(np.abs(result[f"clutch.tau_fric_{tag}"][shift]) <= cap * (1 + 1e-12))
    # after the shift, the even gear carries the engine torque: |tau_b| -> 400 minus inertial share
    end = _window(result, z3.STOP - 0.5, z3.STOP)
    assert np.all(result["clutch.tau_fric_b"][end] > 0.9 * z3.ENGINE_TORQUE)
    assert np.all(np.abs(result["clutch.tau_fric_a"][end]) < 1e-9)
