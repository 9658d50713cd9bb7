"""Piecewise-linear (or staircase) signals of time: the law of the Table elements.

    y(t) = y_i + (y_(i+1) - y_i) (t - t_i) / (t_(i+1) - t_i)   for t_i <= t <= t_(i+1)
held at y_1 before t_1 and at y_n after t_n; with ``hold`` a staircase instead,
y(t) = y_i for t_i <= t < t_(i+1).  Its integral (the angle of a speed source) is exact:
the trapezoidal rule on each linear piece, the rectangle rule on each held one.
"""
from __future__ import annotations

import math
import sys
from bisect import bisect_right


def table_value(times, values, hold: bool, t: float) -> float:
    """The table (strictly increasing ``times``, same-length ``values``) at time ``t``."""
    n = len(times)
    index = bisect_right(times, t) - 1            # last point at or before t (-1: before all)
    if index < 0:
        return values[0]
    if hold or index == n - 1:
        return values[index]
    t_i, t_next, y_i, y_next = times[index], times[index + 1], values[index], values[index + 1]
    fraction = (t - t_i) / (t_next - t_i)
    return y_i + (y_next - y_i) * fraction


def table_integral(times, values, hold: bool, t: float) -> float:
    """The integral of the table from ``times[0]`` to ``t`` (negative before ``times[0]``)."""
    if t <= times[0]:
        return values[0] * (t - times[0])
    total = 0.0
    for i in range(len(times) - 1):
        start, end = times[i], times[i + 1]
        if t <= start:
            break
        until = min(t, end)
        if hold:
            total += values[i] * (until - start)
        else:
            reached = values[i] + (values[i + 1] - values[i]) * ((until - start) / (end - start))
            total += 0.5 * (values[i] + reached) * (until - start)
    if t > times[-1]:
        total += values[-1] * (t - times[-1])
    return total


def table_points(parameters: dict) -> tuple[list[float], list[float]]:
    """(times, values) of a Table element's parameters (n_points, t_i, y_i)."""
    n = int(parameters["n_points"])
    return ([parameters[f"t_{i}"] for i in range(1, n + 1)], [parameters[f"y_{i}"] for i in range(1, n + 1)])


def gated_sine(amplitude: float, frequency: float, phase: float, offset: float, t_start: float,
               t_stop: float, t: float) -> float:
    """offset + amplitude sin(2 pi frequency (t - t_start) + phase) for t_start <= t < t_stop,
    else offset (MSL Blocks.Sources.Sine with its startTime, switched off at t_stop as by
    MSL's product with a step)."""
    if t_start <= t < t_stop:
        return offset + amplitude * math.sin(2.0 * math.pi * frequency * (t - t_start) + phase)
    return offset


def quadratic_speed_torque(tau_nominal: float, w_nominal: float, w: float, opposes_motion: bool) -> float:
    """tau_nominal (w / w_nominal)^2 (MSL Rotational.Sources.QuadraticSpeedDependentTorque):
    always of the sign of tau_nominal (``TorqueDirection = true``), or with ``opposes_motion``
    of the sign of tau_nominal times that of w (false)."""
    ratio = w / w_nominal
    if SQRT_FLOAT_MIN <= abs(ratio) < SQRT_FLOAT_MAX or ratio == 0.0:   # ratio^2 a normal float: as always
        torque = tau_nominal * ratio ** 2
    else:       # ratio^2 would overflow or underflow (or ratio did) where the torque may not
        torque = _product_with_square_of_ratio(tau_nominal, w, w_nominal)
    return -torque if opposes_motion and w < 0.0 else torque


#: |x| from which x ** 2 overflows (CPython raises OverflowError there, where x * y gives inf),
#: and below which x ** 2 is subnormal or 0 (digits lost silently)
SQRT_FLOAT_MAX = math.sqrt(sys.float_info.max)
SQRT_FLOAT_MIN = math.sqrt(sys.float_info.min)


def _product_with_square_of_ratio(factor: float, w: float, w_nominal: float) -> float:
    """factor (w / w_nominal)^2 to rounding (three roundings of 2^-53 each), also where
    (w / w_nominal)^2, or w / w_nominal, is beyond the float range: each number split into
    mantissa and power of two (frexp: x = m 2^e, 0.5 <= |m| < 1), the mantissas' product
    m_f (m_w / m_n)^2 lies in [1/8, 4), the powers are summed exactly and applied last (ldexp:
    +-inf beyond the largest float, the nearest subnormal or 0 below the smallest)."""
    m_f, e_f = math.frexp(factor)
    m_w, e_w = math.frexp(w)
    m_n, e_n = math.frexp(w_nominal)
    scaled = m_f * (m_w / m_n) ** 2
    try:
        return math.ldexp(scaled, e_f + 2 * (e_w - e_n))
    except OverflowError:
        return math.copysign(math.inf, scaled)
