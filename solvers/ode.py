"""Adaptive Dormand-Prince 5(4) integration that stops at the first event.

Contract
--------
``integrate(fun, t0, y0, t_end, events)`` advances ``y' = fun(t, y)`` from ``t0``
towards ``t_end`` and returns an :class:`OdeResult`.  Each event is a plain function
``g(t, y) -> float`` that is positive while the current regime is valid; the
integration stops at the first instant where one of them reaches zero from above: of
several crossing inside one step, the earliest in time (ties within the location
tolerance: the lowest index).
An event that starts exactly at zero (a regime that has just begun, e.g. a clutch
that breaks away from rest) must first become positive before it can fire.
The event instant is located by the Illinois variant of regula falsi on the
re-stepped Runge-Kutta solution, to ``1e-13`` relative in time.

Method: Dormand & Prince (1980), the tableau of Hairer, Norsett & Wanner,
*Solving ODEs I*, table 5.2, with the standard step-size controller (II.4).

Cost.  ``max_steps`` bounds the Runge-Kutta steps *attempted* (accepted and rejected):
the callers pass what is left of their step's substep budget (:mod:`solvers.budget`),
and a rejected step counts because it costs as much as an accepted one (a stiff problem
rejects steps without end: the count of accepted steps alone never bounded it).  The
regula falsi steps that locate an event (at most 200 per crossing event) are Runge-Kutta
steps too: they count in ``n_attempts`` (a call may end up to 200 per crossing event
above ``max_steps``; the callers' budgets then have that much less left).
"""
from __future__ import annotations

import math
from typing import Callable, NamedTuple, Sequence

from .budget import BudgetExceeded

_C = (0.0, 1 / 5, 3 / 10, 4 / 5, 8 / 9, 1.0, 1.0)
_A = (
    (),
    (1 / 5,),
    (3 / 40, 9 / 40),
    (44 / 45, -56 / 15, 32 / 9),
    (19372 / 6561, -25360 / 2187, 64448 / 6561, -212 / 729),
    (9017 / 3168, -355 / 33, 46732 / 5247, 49 / 176, -5103 / 18656),
    (35 / 384, 0.0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84),
)
_B = _A[6]
_E = (71 / 57600, 0.0, -71 / 16695, 71 / 1920, -17253 / 339200, 22 / 525, -1 / 40)

MAX_STEPS = 100_000     # default bound on the attempted steps of one call
LOCATE_TOL = 1e-13      # event instants are located to this, relative (absolute below t = 1)


class IntegrationError(BudgetExceeded):
    """The integration could not reach the end of the interval within ``max_steps``."""


class OdeResult(NamedTuple):
    """Where the integration stopped.

    t, y      : time and state at the stop
    event     : index of the event that fired, or None when ``t_end`` was reached
    n_steps   : accepted Runge-Kutta steps
    n_attempts: attempted Runge-Kutta steps (accepted and rejected; what ``max_steps`` bounds)
    """

    t: float
    y: list[float]
    event: int | None
    n_steps: int
    n_attempts: int = 0


_A1, _A2, _A3, _A4, _A5, _A6 = _A[1:]


def _listed(values) -> list[float]:
    """``values`` as a list (the object itself when it is one): the derivatives a function
    returns as any sequence, indexed by :func:`_rk_step` as lists."""
    return values if type(values) is list else list(values)


def _rk_step(fun, t, y: list[float], k0: list[float], h: float):
    """One Dormand-Prince step from (t, y) with derivative k0 (lists); returns y_new, f_new,
    err.  Stage i is y + h sum_j a_ij k_j, each element summed in tableau order, one
    coefficient at a time from the left (zero coefficients left out): the same operations in
    the same order as a loop over the tableau (tests/numerics/test_vehicle_solver.py), unrolled
    because the stages run for every evaluation of every element's dynamics."""
    n = len(y)
    c0 = h * _A1[0]
    k1 = _listed(fun(t + _C[1] * h, [y[i] + c0 * k0[i] for i in range(n)]))
    c0, c1 = h * _A2[0], h * _A2[1]
    k2 = _listed(fun(t + _C[2] * h, [y[i] + c0 * k0[i] + c1 * k1[i] for i in range(n)]))
    c0, c1, c2 = h * _A3[0], h * _A3[1], h * _A3[2]
    k3 = _listed(fun(t + _C[3] * h, [y[i] + c0 * k0[i] + c1 * k1[i] + c2 * k2[i] for i in range(n)]))
    c0, c1, c2, c3 = h * _A4[0], h * _A4[1], h * _A4[2], h * _A4[3]
    k4 = _listed(fun(t + _C[4] * h, [y[i] + c0 * k0[i] + c1 * k1[i] + c2 * k2[i] + c3 * k3[i]
                                     for i in range(n)]))
    c0, c1, c2, c3, c4 = h * _A5[0], h * _A5[1], h * _A5[2], h * _A5[3], h * _A5[4]
    k5 = _listed(fun(t + _C[5] * h, [y[i] + c0 * k0[i] + c1 * k1[i] + c2 * k2[i] + c3 * k3[i] + c4 * k4[i]
                                     for i in range(n)]))
    c0, c2, c3, c4, c5 = h * _A6[0], h * _A6[2], h * _A6[3], h * _A6[4], h * _A6[5]     # _A6[1] == 0
    y_new = [y[i] + c0 * k0[i] + c2 * k2[i] + c3 * k3[i] + c4 * k4[i] + c5 * k5[i] for i in range(n)]
    k6 = _listed(fun(t + _C[6] * h, y_new))      # stage 7 is evaluated at the 5th-order solution (FSAL)
    e0, e2, e3, e4, e5, e6 = h * _E[0], h * _E[2], h * _E[3], h * _E[4], h * _E[5], h * _E[6]  # _E[1] == 0
    err = [0.0 + e0 * k0[i] + e2 * k2[i] + e3 * k3[i] + e4 * k4[i] + e5 * k5[i] + e6 * k6[i] for i in range(n)]
    return y_new, k6, err


def _error_norm(err: Sequence[float], y: Sequence[float], y_new: Sequence[float], atol: float, rtol: float) -> float:
    """RMS of e / (atol + rtol max(|a|, |b|)) over the error estimates e of a step from the
    states a to b (the squares summed from 0.0 in index order, as sum() of floats)."""
    n = len(err)
    total = 0.0
    for i in range(n):
        e, a, b = err[i], y[i], y_new[i]
        a = -a if a < 0.0 else a
        b = -b if b < 0.0 else b
        value = e / (atol + rtol * (a if a >= b else b))
        total += value * value
    return math.sqrt(total / n)


def _rms(values) -> float:
    """Root mean square of a sequence."""
    return math.sqrt(sum(v * v for v in values) / len(values))


def integrate(
    fun: Callable[[float, list[float]], Sequence[float]],
    t0: float,
    y0: Sequence[float],
    t_end: float,
    events: Sequence[Callable[[float, list[float]], float]] = (),
    rtol: float = 1e-10,
    atol: float = 1e-12,
    first_step: float | None = None,
    max_steps: int = MAX_STEPS,
    f0: Sequence[float] | None = None,
) -> OdeResult:
    """Integrate until ``t_end`` or the first event (see the module contract).
    ``first_step`` replaces the initial step-size estimate (e.g. a whole short
    communication step, tried first and halved by the controller if too large);
    ``f0`` is ``fun(t0, y0)`` when the caller has it already (not evaluated again);
    more than ``max_steps`` attempted steps raise :class:`IntegrationError`."""
    if not t_end > t0:
        raise ValueError(f"t_end = {t_end!r} must be greater than t0 = {t0!r}")
    y = [float(v) for v in y0]
    t = t0
    f = _listed(fun(t, y) if f0 is None else f0)
    g_prev = [g(t, y) for g in events]
    armed = [gp > 0.0 for gp in g_prev]
    if first_step is None:
        scale0 = [atol + rtol * abs(v) for v in y]
        d0 = _rms([v / s for v, s in zip(y, scale0)])
        d1 = _rms([v / s for v, s in zip(f, scale0)])
        h = 0.01 * d0 / d1 if d0 > 1e-5 and d1 > 1e-5 else 1e-6
    else:
        h = first_step
    h = min(h, t_end - t0)
    n_steps = attempts = 0
    n_events = len(events)
    while attempts < max_steps:
        attempts += 1
        h = min(h, t_end - t)
        y_new, f_new, err = _rk_step(fun, t, y, f, h)
        err_norm = _error_norm(err, y, y_new, atol, rtol)
        if err_norm > 1.0:
            h *= max(0.2, 0.9 * err_norm ** -0.2)
            continue
        n_steps += 1
        t_new = t_end if t + h >= t_end else t + h
        crossed = []
        for i in range(n_events):
            g_new = events[i](t_new, y_new)
            if armed[i] and g_new <= 0.0:
                crossed.append((i, g_new))
                continue
            if g_new > 0.0:
                armed[i] = True
            elif not armed[i] and g_new < 0.0:
                # never positive: the regime was inconsistent from its start; reported at
                # the start of the step, before any crossing located inside it
                return OdeResult(t, y, i, n_steps, attempts)
            g_prev[i] = g_new
        if crossed:
            return _earliest(fun, t, y, f, h, y_new, events, crossed, g_prev, n_steps, attempts)
        t, y, f = t_new, y_new, f_new
        if t >= t_end:
            return OdeResult(t, y, None, n_steps, attempts)
        h *= min(5.0, 0.9 * err_norm ** -0.2) if err_norm > 0 else 5.0
    raise IntegrationError(f"more than {max_steps} integration steps attempted between t = {t0!r} and "
                           f"{t_end!r} (reached t = {t!r}, last step size {h!r})")


def _earliest(fun, t, y, f, h, y_new, events, crossed, g_start, n_steps, attempts):
    """The earliest of the events that crossed zero inside the step (t, t + h].

    ``crossed``: (index, value at t + h) in list order; ``g_start``: the values at t,
    positive for these.  The first is located; each later one is compared on the final
    bracket [lo, hi] of the current earliest (its function > 0 at lo, <= 0 at hi): it
    replaces it only if it is <= 0 already at lo (located again on (0, lo]) or, when that
    bracket is wider than the tolerance (the search stopped on an exact zero at hi), if it
    is located strictly before hi.  Crossings in the same final bracket are a tie, won by
    the lowest index.  One crossing costs one location, as before."""
    index, g_right = crossed[0]
    counter = [0]
    lo, y_lo, hi, y_hi = _locate(fun, t, y, f, h, events[index], 0.0, g_start[index], y, 1.0, g_right, y_new,
                                 counter)
    tol = LOCATE_TOL * max(1.0, abs(t))
    for k, _ in crossed[1:]:
        g = events[k]
        g_hi = g(t + hi * h, y_hi)
        if g_hi > 0.0:
            continue
        g_lo = g(t + lo * h, y_lo) if lo > 0.0 else g_start[k]
        if g_lo <= 0.0:
            index = k
            lo, y_lo, hi, y_hi = _locate(fun, t, y, f, h, g, 0.0, g_start[k], y, lo, g_lo, y_lo, counter)
        elif (hi - lo) * h > tol:
            bracket = _locate(fun, t, y, f, h, g, lo, g_lo, y_lo, hi, g_hi, y_hi, counter)
            if bracket[2] < hi:
                index = k
                lo, y_lo, hi, y_hi = bracket
    return OdeResult(t + hi * h, y_hi, index, n_steps, attempts + counter[0])


def _locate(fun, t, y, f, h, g, lo, g_lo, y_lo, hi, g_hi, y_hi, counter):
    """Illinois regula falsi for a zero of g on theta in (lo, hi], g > 0 at lo and <= 0 at
    hi, with y(t + theta*h) by one re-taken step; returns the final bracket
    (lo, y_lo, hi, y_hi).  ``counter[0]`` is increased by the steps taken (at most 200)."""
    side = 0
    for _ in range(200):
        counter[0] += 1
        theta = (lo * g_hi - hi * g_lo) / (g_hi - g_lo)
        if not lo < theta < hi:
            theta = 0.5 * (lo + hi)
        y_mid = _rk_step(fun, t, y, f, theta * h)[0]
        g_mid = g(t + theta * h, y_mid)
        if g_mid > 0.0:
            lo, g_lo, y_lo = theta, g_mid, y_mid
            if side == -1:
                g_hi *= 0.5
            side = -1
        else:
            hi, g_hi, y_hi = theta, g_mid, y_mid
            if side == 1:
                g_lo *= 0.5
            side = 1
        if (hi - lo) * h <= LOCATE_TOL * max(1.0, abs(t)) or g_mid == 0.0:
            break
    return lo, y_lo, hi, y_hi


try:        # compiled, their kernel (tools/generate_kernels.py) replaces the reference functions above
    from .ode_kernel import _error_norm, _rk_step
except ImportError:
    pass
