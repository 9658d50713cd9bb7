"""Closed-form motion of a damped, grounded body and a robust first-crossing search.

AffineMotion: J x'' = F - k x - d x' (J > 0, k >= 0, d >= 0, F constant), i.e. the
affine 2x2 system x' = v, v' = (F - k x - d v)/J of Reiter eq. 109-111, solved exactly:
    k > 0:        x = x_eq + Phi(t) (x0 - x_eq),  x_eq = F/k   (Phi from exponential.expm2)
    k = 0, d > 0: v = v_inf + (v0 - v_inf) e^(-d t/J),  v_inf = F/d
    k = 0, d = 0: v = v0 + (F/J) t
together with bounds on |v| and |v'| over [0, T] (for k > 0: e^(mu t)|C| <= 1 and
e^(mu t)|S| <= t since mu <= 0), which make the crossing search below rigorous.

first_crossing: the first t in (0, T] where a continuous g falls below -noise, given a
bound M >= |g'| on [0, T].  Interval halving in time order; an interval [t0, t1] with
g(t0) + noise > M (t1 - t0) cannot contain a crossing and is skipped.  Nothing is
missed that dips below -noise for longer than the tolerance.  ``noise`` is the rounding
level of g: a motion that starts exactly on the boundary (g(0) = 0) and leaves it
tangentially is not reported as a crossing at t = 0+.
"""
from __future__ import annotations

import math

from .budget import BudgetExceeded
from .exponential import expm2

_EPS = 2.220446049250313e-16
MAX_EVALUATIONS = 20_000     # default budget of one search (callers pass their step's)


class SearchBudgetExceeded(BudgetExceeded):
    """first_crossing used up the evaluations it was given."""


class AffineMotion:
    """Exact motion from (x0, v0) under a constant force (module docstring)."""

    __slots__ = ("x0", "v0", "J", "k", "d", "F", "_a21", "_a22", "_x_eq", "_mu")

    def __init__(self, inertia, stiffness, damping, force, x0, v0):
        self.J, self.k, self.d, self.F = inertia, stiffness, damping, force
        self.x0, self.v0 = x0, v0
        self._a21, self._a22 = -stiffness / inertia, -damping / inertia
        self._x_eq = force / stiffness if stiffness > 0.0 else 0.0
        self._mu = 0.5 * self._a22

    def accel0(self):
        return (self.F - self.k * self.x0 - self.d * self.v0) / self.J

    def at(self, t):
        """(x, v) at time t."""
        if self.k > 0.0:
            p11, p12, p21, p22 = expm2(0.0, 1.0, self._a21, self._a22, t)
            z = self.x0 - self._x_eq
            return self._x_eq + p11 * z + p12 * self.v0, p21 * z + p22 * self.v0
        if self.d > 0.0:
            v_inf = self.F / self.d
            rate = self.d / self.J
            decay = -math.expm1(-rate * t)  # 1 - e^(-rate t), accurate for small t
            return self.x0 + v_inf * t + (self.v0 - v_inf) * decay / rate, v_inf + (self.v0 - v_inf) * (1.0 - decay)
        a = self.F / self.J
        return self.x0 + self.v0 * t + 0.5 * a * t * t, self.v0 + a * t

    def derivative_bound(self, order, horizon):
        """An upper bound of |d^order x / dt^order| on [0, horizon] (order >= 1)."""
        if self.k > 0.0:
            y0, y1 = self.x0 - self._x_eq, self.v0          # y = A^order z, z = x - x_eq
            for _ in range(order):
                y0, y1 = y1, self._a21 * y0 + self._a22 * y1
            return abs(y0) + abs(y1 - self._mu * y0) * horizon
        if order == 1:
            return max(abs(self.v0), abs(self.at(horizon)[1]))   # monotone in time
        return abs(self.accel0()) * (self.d / self.J) ** (order - 2)  # decaying exponential


def first_crossing(g, bound_1, bound_2, horizon, g0, noise, budget=None):
    """First t in (0, horizon] with g(t) < -noise (module docstring); None if there is none.

    budget   a one-element list holding the interval halvings still allowed (shared by the
             searches of one step; decremented here), default [MAX_EVALUATIONS]; more
             raise :class:`SearchBudgetExceeded`.  The Newton refinement is bounded by 100.

    g        t -> (g(t), g'(t)), with g(0) = g0 >= 0
    bound_1  M1 >= |g'| on [0, horizon];  bound_2  M2 >= |g''| on [0, horizon]
    noise    rounding level of g (> 0)
    An interval [t0, t0 + D] is skipped when g stays above -noise by either bound:
    g(t0) - M1 D > -noise  or  g(t0) + min(0, g'(t0) D) - M2 D^2 / 2 > -noise;
    once g(t0 + D) < -noise and g'(t0) + M2 D < 0 (g decreasing throughout) the zero of g
    is refined by safeguarded Newton steps.
    """
    tol = 4.0 * _EPS * horizon
    left = [MAX_EVALUATIONS] if budget is None else budget

    def clear(t0, g_0, s_0, t1):
        span = t1 - t0
        return (g_0 - bound_1 * span > -noise
                or g_0 + min(0.0, s_0 * span) - 0.5 * bound_2 * span * span > -noise)

    def monotone_root(t0, g_0, s_0, t1):
        """Zero of g on [t0, t1] where g' < 0 throughout: Newton kept inside the bracket."""
        if g_0 <= 0.0:
            return t0
        t = t0 - g_0 / s_0
        for _ in range(100):
            if not t0 < t < t1:
                t = 0.5 * (t0 + t1)
            value, slope = g(t)
            if value > 0.0:
                t0 = t
            elif value < 0.0:
                t1 = t
            else:
                return t
            if t1 - t0 <= tol:
                return t1
            t = t - value / slope if slope < 0.0 else 0.5 * (t0 + t1)
        return t1

    def search(t0, g_0, s_0, t1, g_1):
        if clear(t0, g_0, s_0, t1):
            return None
        if g_1 < -noise and s_0 + bound_2 * (t1 - t0) < 0.0:
            return monotone_root(t0, g_0, s_0, t1)   # g decreasing on the whole interval
        if t1 - t0 <= tol:
            return t1 if g_1 < -noise else None
        left[0] -= 1
        if left[0] < 0:
            raise SearchBudgetExceeded(f"the crossing search used up its evaluations (at t = {t0!r} of "
                                       f"{horizon!r}: a grazing contact, or fast oscillation over a long step)")
        tm = 0.5 * (t0 + t1)
        g_m, s_m = g(tm)
        found = search(t0, g_0, s_0, tm, g_m)
        if found is not None:
            return found
        if g_m < -noise:
            return tm
        return search(tm, g_m, s_m, t1, g_1)

    _, slope_0 = g(0.0)
    return search(0.0, g0, slope_0, horizon, g(horizon)[0])
