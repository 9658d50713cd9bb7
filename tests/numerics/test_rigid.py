"""The damped rigid body's exact step (solvers.rigid.step_damped) for every damping,
checked against the closed-form solution in 700-digit arithmetic."""
import decimal

import pytest

from drivetrain_fmu.solvers.rigid import BodyState, step_damped

J, T, H = 1.5, 10.0, 0.01
START = BodyState(0.3, 2.0)


def exact(d: float):
    """J w' = T - d w from (phi0, w0): w = T/d + (w0 - T/d) e^(-d h/J),
    phi = phi0 + (T/d) h + (w0 - T/d)(J/d)(1 - e^(-d h/J)), in 700 digits."""
    decimal.getcontext().prec = 700      # the terminal-speed form cancels ~600 digits at d = 1e-300
    D, j, t, h = (decimal.Decimal(v) for v in (d, J, T, H))
    w0, phi0 = decimal.Decimal(START.w), decimal.Decimal(START.phi)
    w_inf, e = t / D, (-D * h / j).exp()
    return float(phi0 + w_inf * h + (w0 - w_inf) * j / D * (1 - e)), float(w_inf + (w0 - w_inf) * e)


@pytest.mark.parametrize("d", [1e-300, 1e-14, 1e-9, 1e-3, 0.5, 20.0, 1e4])
def test_step_equals_the_closed_form_to_rounding(d):
    """Relative 1e-14: a few roundings of the exponential-integrator form (the 700-digit
    closed form is the truth).  The terminal-speed form the element used before lost all
    digits as d -> 0 (d = 1e-14 gave w = 0, d = 1e-300 an infinite angle)."""
    phi, w = exact(d)
    got = step_damped(START, J, T, d, H)
    assert got.phi == pytest.approx(phi, rel=1e-14) and got.w == pytest.approx(w, rel=1e-14)


def test_vanishing_damping_is_uniform_acceleration():
    """d -> 0 tends to the undamped step w0 + T h / J, phi0 + w0 h + T h^2 / (2 J)."""
    undamped = step_damped(START, J, T, 0.0, H)
    for d in (1e-300, 1e-200, 1e-20):
        got = step_damped(START, J, T, d, H)
        assert got.w == pytest.approx(undamped.w, rel=1e-15) and got.phi == pytest.approx(undamped.phi, rel=1e-15)
