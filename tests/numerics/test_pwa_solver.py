"""Piecewise-affine oscillators of Reiter ch. 3 (R1 in REFERENCE_CASES.md).

The reference is scipy's DOP853 at rtol 1e-10 / atol 1e-12, restarted at every
breakpoint and zero-speed event, with the same zero-order-held input (``pwa_methods.reference``);
its own error on these 10-100 s runs is a few 1e-9 m (measured against the closed-form
solution inside one region), which sets the floor of the tolerances below.
"""
import math

import numpy as np
import pytest
from scipy.integrate import quad
from scipy.linalg import expm

from drivetrain_fmu.solvers.contract import StepError
from drivetrain_fmu.solvers.exponential import expm2
from drivetrain_fmu.solvers.pwa import Characteristic, OscillatorState, PwaOscillator
from drivetrain_fmu.systems.catalog.pwa_methods import METHODS, discrete_energy, make_exact_switching, reference, simulate

TABLE2 = Characteristic((0.0, 0.05, 0.1, 0.15), (0.05, 1.0, 2.0, 10.0))
TABLE6 = PwaOscillator(1.0, Characteristic((0.0, 0.15), (1.0, 20.0)), Characteristic.linear(0.5))
X0 = 0.3


def test_table2_offsets_make_the_force_continuous():
    # Table 2 prints [0, -0.047, -0.147, -1.347]: the same values to its 3 decimals
    assert TABLE2.offsets == pytest.approx((0.0, -0.0475, -0.1475, -1.3475), abs=1e-12)
    assert np.allclose(TABLE2.offsets, (0.0, -0.047, -0.147, -1.347), atol=5e-4)
    for s in TABLE2.breakpoints[1:]:
        below, above = TABLE2.value(s * (1 - 1e-12)), TABLE2.value(s * (1 + 1e-12))
        assert above == pytest.approx(below, abs=1e-11)
        assert TABLE2.value(-s) == -TABLE2.value(s)            # point symmetric (eq. 28)


def test_potential_is_the_integral_of_the_force():
    for s in (0.03, 0.05, 0.12, -0.2, 0.4):
        integral, _ = quad(TABLE2.value, 0.0, s, points=[b for b in TABLE2.breakpoints if 0 < b < abs(s)] or None)
        assert TABLE2.potential(s) == pytest.approx(integral, rel=1e-12)


@pytest.mark.parametrize("bps,ks,named", [
    ((0.0, 0.2, 0.1), (1, 2, 3), "breakpoints[2] = 0.1"),
    ((0.1, 0.2), (1, 2), "breakpoints[0] = 0.1"),
    ((0.0, 0.2), (1,), "same length"),
])
def test_bad_characteristic_names_the_value(bps, ks, named):
    with pytest.raises(ValueError, match=named.replace("[", r"\[").replace("]", r"\]")):
        Characteristic(bps, ks)


def test_oscillator_rejects_non_physical_parameters():
    with pytest.raises(ValueError, match="mass = 0"):
        PwaOscillator(0.0, TABLE2)
    with pytest.raises(ValueError, match="k_0 = -1"):
        PwaOscillator(1.0, Characteristic((0.0,), (-1.0,)))
    with pytest.raises(ValueError, match="coulomb = -0.1"):
        PwaOscillator(1.0, TABLE2, coulomb=-0.1)
    with pytest.raises(StepError, match="u = nan"):
        TABLE6.step(OscillatorState(0.1, 0.0), math.nan, 0.1)
    with pytest.raises(StepError, match="h = 0"):
        TABLE6.step(OscillatorState(0.1, 0.0), 0.0, 0.0)


@pytest.mark.parametrize("A", [[[0, 1], [-20, -0.5]], [[0, 1], [-1, -5]], [[0, 1], [-4, -4]], [[0, 1], [-1, 0]]],
                         ids=["underdamped", "overdamped", "critical", "undamped"])
def test_closed_form_exponential(A):
    """expm2 (Cayley-Hamilton) against scipy's Pade expm, rounding-level agreement."""
    for t in (1e-3, 0.1, 0.7):
        assert np.allclose(np.array(expm2(*np.ravel(A), t)).reshape(2, 2), expm(np.array(A, float) * t),
                           rtol=1e-12, atol=1e-14)


def test_crossing_instant_is_exact():
    """Unit mass, k_0 = 1, from x = 0 with v = 1: x = sin t reaches the breakpoint 0.15 at
    t = asin(0.15) exactly; then region 1 (k = 20) takes over."""
    osc = PwaOscillator(1.0, Characteristic((0.0, 0.15), (1.0, 20.0)))
    result = osc.step(OscillatorState(0.0, 1.0), 0.0, 0.2)
    t_cross, x_cross, v_cross = result.events[0]
    assert t_cross == pytest.approx(math.asin(0.15), rel=4e-16)
    assert x_cross == 0.15 and v_cross == pytest.approx(math.cos(math.asin(0.15)), rel=1e-15)
    # after the switch F = 20 x - 19 * 0.15: oscillation about the shifted origin
    # x_eq = 19 * 0.15 / 20 (eq. 81-83) with w = sqrt(20)
    w, x_eq, tau = math.sqrt(20.0), 19 * 0.15 / 20, 0.2 - t_cross
    expected = x_eq + (0.15 - x_eq) * math.cos(w * tau) + v_cross / w * math.sin(w * tau)
    assert result.state.x == pytest.approx(expected, rel=1e-14)


def _errors(h, duration=10.0):
    n = int(round(duration / h))
    ref = reference(TABLE6, X0, 0.0, h, n)
    return {name: float(np.max(np.abs(simulate(make(TABLE6, h), X0, 0.0, h, n).x - ref.x)))
            for name, make in METHODS.items()}


def test_every_method_converges_to_the_reference():
    """Table 6 oscillator over 10 s.  Every baseline is at least first order: a tenfold
    smaller step cuts its error at least threefold (first order gives ten, the margin
    covers pre-asymptotic behaviour), and at 1 ms all are within 1 cm of the 0.3 m swing."""
    coarse, fine = _errors(1e-2), _errors(1e-3)
    for name in METHODS:
        print(f"{name:32s} h=1e-2: {coarse[name]:.3e}  h=1e-3: {fine[name]:.3e}")
    for name in METHODS:
        if name == "switching_exact":
            continue  # exact to the reference's own error at any step: checked below
        assert fine[name] < coarse[name] / 3, name
        assert fine[name] < 1e-2, name
    assert coarse["switching_exact"] < 1e-8 and fine["switching_exact"] < 1e-8


@pytest.mark.parametrize("h", [0.1, 0.2])
def test_exact_switching_is_the_most_accurate_at_large_steps(h):
    errors = _errors(h)
    print(f"\nh = {h} s, max |x - x_ref| over 10 s:")
    for name, err in sorted(errors.items(), key=lambda item: item[1]):
        print(f"  {name:32s} {err:.3e} m")
    assert min(errors, key=errors.get) == "switching_exact"
    assert errors["switching_exact"] < 1e-8  # exact up to the reference's tolerance


def test_energy_is_kept_without_damping_and_shifting_drifts():
    """d = 0, Table 6 spring, 100 s.  The exact switching keeps the energy of eq. 91-93
    to rounding; the discrete energy of eq. 94-96 over its samples (the grid plus the
    switching instants, so the trapezoid of eq. 96 is exact on every affine piece) stays
    within 0.1 %.  Coordinate shifting (eq. 73-78) does not conserve it (thesis Fig. 38)."""
    osc = PwaOscillator(1.0, Characteristic((0.0, 0.15), (1.0, 20.0)))
    h, n = 0.1, 1000
    x, v, samples = X0, 0.0, [(X0, 0.0)]
    energies = []
    for _ in range(n):
        result = osc.step(OscillatorState(x, v), 0.0, h)
        samples += [(ex, ev) for _, ex, ev in result.events]
        x, v = result.state.x, result.state.v
        samples.append((x, v))
        energies.append(osc.energy(x, v))
    e0 = osc.energy(X0, 0.0)
    assert max(abs(e / e0 - 1) for e in energies) < 1e-12
    xs, vs = np.array(samples).T
    eq96 = discrete_energy(osc, xs, vs)
    assert np.max(np.abs(eq96 / e0 - 1)) < 1e-3

    shifted = simulate(METHODS["coordinate_shifting"](osc, 0.01), X0, 0.0, 0.01, 10_000)
    e_end = osc.energy(shifted.x[-1], shifted.v[-1])
    print(f"\ncoordinate shifting, h = 0.01 s: E(100 s)/E(0) = {e_end / e0:.3g}")
    assert abs(e_end / e0 - 1) > 0.1


def test_table9_coulomb_damper_stops_where_stiction_holds_the_spring():
    """Table 9 (x0 = 0.3 m chosen): the mass stops once the static friction 0.05 N can
    hold the spring force, and stays exactly there; the path matches the reference."""
    osc = PwaOscillator(1.0, Characteristic((0.0, 0.1, 0.2), (1.0, 10.0, 20.0)),
                        Characteristic.linear(0.05), coulomb=0.05)
    h, n = 0.1, 300
    traj = simulate(make_exact_switching(osc, h), X0, 0.0, h, n)
    ref = reference(osc, X0, 0.0, h, n)
    assert np.max(np.abs(traj.x - ref.x)) < 1e-7
    at_rest = np.flatnonzero(traj.v == 0.0)
    first = at_rest[at_rest > 0][0]
    assert np.all(traj.v[first:] == 0.0) and np.ptp(traj.x[first:]) == 0.0
    assert abs(osc.spring.value(traj.x[-1])) <= 0.05
    # it did swing through several stiff-region passes before (not stuck at the start)
    assert first * h > 5.0


def test_table10_harmonic_input_stiffness_ratio_1000():
    """u = sin t, x0 = 0.1 m, c = [1, 1000], d = 0, T_d = 0.01 s (breakpoint 0.15 m
    chosen as in Tables 5-6): the input drives the mass into the stiff region and the
    exact switching follows the reference within 1 um over 20 s."""
    osc = PwaOscillator(1.0, Characteristic((0.0, 0.15), (1.0, 1000.0)))
    h, n = 0.01, 2000
    traj = simulate(make_exact_switching(osc, h), 0.1, 0.0, h, n, u=math.sin)
    ref = reference(osc, 0.1, 0.0, h, n, u=math.sin)
    assert np.max(np.abs(traj.x)) > 0.15
    assert np.max(np.abs(traj.x - ref.x)) < 1e-6


def test_strongly_overdamped_region_takes_a_long_step():
    """m = 0.01, k = 100, d = 20: poles s = (-d +- sqrt(d^2 - 4 m k)) / (2 m), about -5.01
    and -1995 (q t of about 800 at t = 0.8 s, where cosh alone overflows).  From rest at
    x0: x(t) = x0 (s2 e^(s1 t) - s1 e^(s2 t)) / (s2 - s1), matched to 1e-12, and the
    exponential agrees with scipy's."""
    osc = PwaOscillator(0.01, Characteristic.linear(100.0), Characteristic.linear(20.0))
    state = osc.step(OscillatorState(0.1, 0.0), 0.0, 0.8).state
    root = math.sqrt(20.0**2 - 4 * 0.01 * 100.0)
    s1, s2 = (-20.0 + root) / 0.02, (-20.0 - root) / 0.02
    exact = 0.1 * (s2 * math.exp(s1 * 0.8) - s1 * math.exp(s2 * 0.8)) / (s2 - s1)
    assert state.x == pytest.approx(exact, rel=1e-12)
    assert np.allclose(np.array(expm2(0.0, 1.0, -1.0, -2000.0, 1.0)).reshape(2, 2),
                       expm(np.array([[0.0, 1.0], [-1.0, -2000.0]])), rtol=1e-10, atol=1e-14)


def test_reference_starting_on_a_breakpoint():
    """Released at rest exactly on the breakpoint (moving into either region, or held in
    equilibrium there): the scipy reference and the exact switching agree."""
    osc = PwaOscillator(1.0, Characteristic((0.0, 0.01), (1.0, 10.0)))
    for u in (0.0, 1.0, 0.01):
        ref = reference(osc, 0.01, 0.0, 0.01, 100, u=lambda t, u=u: u)
        exact = simulate(make_exact_switching(osc, 0.01), 0.01, 0.0, 0.01, 100, u=lambda t, u=u: u)
        assert np.max(np.abs(ref.x - exact.x)) < 1e-9
