"""solvers.ode.integrate stops at the earliest event crossing, not the first one listed.

Bodies falling freely from rest (h' = v, v' = -G): the solution is quadratic in t, which
the 5th-order Runge-Kutta step reproduces to rounding, so the located instants can be
checked against the analytic impact times sqrt(2 h0 / G) to 1e-12 relative.  With the
first step set to the whole interval, every impact below lies inside that one step.
"""
import math

import pytest

from drivetrain_fmu.solvers.ode import integrate

G = 9.81


def falling(heights):
    """y = (h_0, v_0, h_1, v_1, ...): the rhs, the initial state, the impact events."""
    n = len(heights)

    def rhs(_t, y):
        out = []
        for k in range(n):
            out += [y[2 * k + 1], -G]
        return out

    y0 = []
    for h0 in heights:
        y0 += [h0, 0.0]
    events = [lambda _t, y, k=k: y[2 * k] for k in range(n)]
    return rhs, y0, events


def impact(h0):
    return math.sqrt(2.0 * h0 / G)


def run(heights, first_step=1.0, **kw):
    rhs, y0, events = falling(heights)
    return integrate(rhs, 0.0, y0, 1.0, events, first_step=first_step, **kw)


def test_single_event_located():
    result = run([1.0])
    assert result.event == 0
    assert result.n_steps == 1
    assert result.t == pytest.approx(impact(1.0), rel=1e-12, abs=0.0)
    assert abs(result.y[0]) <= 1e-12


def test_later_listed_event_crossing_earlier_wins():
    # body 0 from 2 m lands at 0.639 s, body 1 from 1 m at 0.452 s: both inside the one step
    result = run([2.0, 1.0])
    assert result.n_steps == 1
    assert result.event == 1
    assert result.t == pytest.approx(impact(1.0), rel=1e-12, abs=0.0)
    assert abs(result.y[2]) <= 1e-12
    assert result.y[0] > 0.0           # body 0 still above ground: no slip carried through zero


@pytest.mark.parametrize("heights, earliest", [
    ([3.0, 1.5, 0.5], 2),
    ([3.0, 0.5, 1.5], 1),
    ([0.5, 3.0, 1.5], 0),
    ([1.5, 0.5, 3.0, 0.7], 1),
])
def test_earliest_of_several(heights, earliest):
    result = run(heights)
    assert result.n_steps == 1
    assert result.event == earliest
    assert result.t == pytest.approx(impact(heights[earliest]), rel=1e-12, abs=0.0)


def test_extra_later_event_does_not_change_the_single_event_result():
    alone = run([1.0])
    both = run([1.0, 1.8])            # the second body lands after the first: same stop, bit for bit
    assert (both.t, both.y[:2], both.event) == (alone.t, alone.y, alone.event)


def test_tie_goes_to_the_lowest_index():
    result = run([1.0, 2.0, 1.0])
    assert result.event == 0
    assert result.t == pytest.approx(impact(1.0), rel=1e-12, abs=0.0)


def test_earliest_with_controlled_steps():
    # Without first_step the controller chooses the steps; the earliest impact still wins.
    result = run([2.0, 1.0], first_step=None)
    assert result.event == 1
    assert result.t == pytest.approx(impact(1.0), rel=1e-12, abs=0.0)


def test_two_decaying_slips_analytic():
    # s' = -a s - b (viscous + Coulomb) from s0 > 0: s = 0 at ln(1 + a s0 / b) / a.
    # Slip 0 (listed first) stops at 0.2001 s, slip 1 at 0.2 s, inside the same
    # accepted step (checked: each alone stops after the same number of steps).
    a = (2.0, 3.0)
    b = (1.0, 2.0)
    t_stop = (0.2001, 0.2)
    s0 = [bk / ak * math.expm1(ak * tk) for ak, bk, tk in zip(a, b, t_stop)]

    def rhs(_t, y):
        return [-a[0] * y[0] - b[0], -a[1] * y[1] - b[1]]

    events = [lambda _t, y: y[0], lambda _t, y: y[1]]

    def run_slips(evs):
        return integrate(rhs, 0.0, s0, 0.3, evs, rtol=1e-13, atol=1e-15, first_step=0.3)

    alone = [run_slips([e]) for e in events]
    assert alone[0].n_steps == alone[1].n_steps
    for k in (0, 1):
        assert alone[k].t == pytest.approx(t_stop[k], rel=1e-12, abs=0.0)
    result = run_slips(events)
    assert result.event == 1
    assert result.y[0] > 0.0
    assert result.t == pytest.approx(t_stop[1], rel=1e-12, abs=0.0)


def test_exact_zero_in_the_location():
    # Linear slips: regula falsi lands exactly on the zero of slip 0 (t = 0.5, g = 0.0),
    # leaving a wide bracket; slip 1, crossing at 0.25 inside it, is still the one taken.
    events = [lambda _t, y: y[0], lambda _t, y: y[1], lambda _t, y: y[0]]
    result = integrate(lambda _t, y: [-1.0, -1.0], 0.0, [0.5, 0.25], 1.0, events, first_step=1.0)
    assert result.event == 1
    assert result.t == pytest.approx(0.25, rel=1e-12, abs=0.0)
    # the same function twice crossing exactly together: the lower index
    result = integrate(lambda _t, y: [-1.0, -1.0], 0.0, [0.5, 0.75], 1.0, events, first_step=1.0)
    assert result.event == 0
    assert result.t == 0.5
