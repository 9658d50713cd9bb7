"""A rigid body on a bearing: J w' = T - d w with T constant over the step.

Exact solution (linear ODE with constant input), with x = d h / J:
    w(h)   = w0 e^-x + (T h / J) p1(x),        p1(x) = (1 - e^-x) / x
    phi(h) = phi0 + w0 h p1(x) + (T h^2 / J) p2(x),   p2(x) = (x - 1 + e^-x) / x^2
(the exponential-integrator functions, Hochbruck & Ostermann, Acta Numerica 2010, eq. 2.10,
at -x).  p1 and p2 tend to 1 and 1/2 as d -> 0, so the step stays exact for any small
damping; the form with the terminal speed T/d lost it (d = 1e-14 gave w = 0, 1e-300 an
infinite angle).  d = 0 is the uniform acceleration itself.
The body with a time- and speed-dependent drive (the engine, Fan et al. eq. for T_e)
is integrated with :func:`solvers.ode.integrate`.
"""
from __future__ import annotations

import math
from functools import partial
from typing import NamedTuple

from .budget import Budget
from .ode import IntegrationError, integrate

#: Attempted integration steps of one engine step (harmonics on).  Floor 500, 2 x 10^4 per
#: second of step: at rtol 1e-10 DOPRI5 takes about 60 steps per period of the 4th order
#: harmonic, so a long step resolves it up to 4 w = 2 x 10^3 rad/s (w = 500 rad/s, 4800 rpm)
#: and a step of 0.2 ms (fan_F3_harmonics) any speed below 4 x 10^4 rad/s; cap 20 000:
#: 0.4 s of CPU here unloaded (20 us per attempted step), 1.5 s measured on a loaded machine.
ENGINE_SUBSTEP_BUDGET = Budget("integration steps", 500, 2e4, 20_000)


class BodyState(NamedTuple):
    """Angle and speed of a body; immutable."""

    phi: float
    w: float

    def to_json(self) -> list:
        return [self.phi, self.w]

    @classmethod
    def from_json(cls, data) -> "BodyState":
        return cls(*data)


_new_body_state = partial(tuple.__new__, BodyState)     # BodyState from a tuple, no Python-level __new__


def damped_motion(phi: float, w: float, inertia: float, torque: float, damping: float, h: float) -> tuple:
    """(phi, w) after the exact step of J w' = T - d w (module docstring), with x = d h / J:

    p1(x) = (1 - e^-x) / x, accurate for every x >= 0 (expm1);
    p2(x) = (x - 1 + e^-x) / x^2: below x = 0.05 the Taylor series sum_k (-x)^k / (k + 2)! to
    k = 6 (truncation below 5e-15 relative); above, the closed form, whose cancellation costs
    2 eps / x (below 1e-14 there); e^-x - 1 is evaluated once for both."""
    if damping == 0.0:
        return phi + w * h + 0.5 * torque / inertia * h * h, w + torque / inertia * h
    x = damping * h / inertia
    impulse = torque * h / inertia
    if x < 0.05:
        p1 = -math.expm1(-x) / x if x else 1.0
        p2 = 0.5 - x * (1 / 6 - x * (1 / 24 - x * (1 / 120 - x * (1 / 720 - x * (1 / 5040 - x / 40320)))))
    else:
        expm1_x = math.expm1(-x)
        p1 = -expm1_x / x
        p2 = (x + expm1_x) / (x * x)
    return phi + w * h * p1 + impulse * h * p2, w * math.exp(-x) + impulse * p1


def step_damped(state: BodyState, inertia: float, torque: float, damping: float, h: float) -> BodyState:
    """The state after h: :func:`damped_motion`."""
    phi, w = state
    return _new_body_state(damped_motion(phi, w, inertia, torque, damping, h))


def engine_torque(t: float, w: float, mean: float, h2: float, h4: float) -> float:
    """Fan, Walker & Wang: T_e = T0 (1 + h2 sin(2 w_e t) + h4 sin(4 w_e t))."""
    return mean * (1.0 + h2 * math.sin(2.0 * w * t) + h4 * math.sin(4.0 * w * t))


def step_engine(state: BodyState, inertia: float, t0: float, h: float, mean: float,
                h2: float, h4: float, load: float) -> BodyState:
    """Engine inertia driven by T_e(t, w) plus a load torque constant over the step."""
    if h2 == 0.0 and h4 == 0.0:
        return step_damped(state, inertia, mean + load, 0.0, h)

    def rhs(t, y):
        return [y[1], (engine_torque(t, y[1], mean, h2, h4) + load) / inertia]

    try:
        result = integrate(rhs, t0, [state.phi, state.w], t0 + h, rtol=1e-10,
                           atol=1e-12 * max(1.0, abs(state.w)), first_step=h,
                           max_steps=ENGINE_SUBSTEP_BUDGET.limit(h))
    except IntegrationError:
        raise ENGINE_SUBSTEP_BUDGET.exceeded(
            "engine with harmonics", h, f"the torque T0 (1 + h2 sin(2 w t) + h4 sin(4 w t)) oscillates too fast "
            f"at w = {state.w!r} rad/s (or the engine speeds up too fast: T0 = {mean!r} N.m on J = {inertia!r} "
            "kg.m2) to be resolved in this step: take a smaller communication step") from None
    return BodyState(*result.y)


try:        # compiled, its kernel (tools/generate_kernels.py) replaces the reference function above
    from .rigid_kernel import damped_motion
except ImportError:
    pass
