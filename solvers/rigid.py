"""A rigid body on a bearing: J w' = T - d w with T constant over the step.

Exact solution (linear ODE with constant input):
    d = 0:  w(h) = w0 + (T/J) h,            phi(h) = phi0 + w0 h + T h^2 / (2 J)
    d > 0:  w_inf = T/d,  e = exp(-d h / J),
            w(h) = w_inf + (w0 - w_inf) e,   phi(h) = phi0 + w_inf h + (w0 - w_inf) (J/d)(1 - e)
The body with a time- and speed-dependent drive (the engine, Fan et al. eq. for T_e)
is integrated with :func:`solvers.ode.integrate`.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from .ode import integrate


@dataclass(frozen=True)
class BodyState:
    phi: float
    w: float

    def to_json(self) -> list:
        return [self.phi, self.w]

    @classmethod
    def from_json(cls, data) -> "BodyState":
        return cls(*data)


def step_damped(state: BodyState, inertia: float, torque: float, damping: float, h: float) -> BodyState:
    """Exact step of J w' = T - d w (module docstring)."""
    if damping == 0.0:
        return BodyState(state.phi + state.w * h + 0.5 * torque / inertia * h * h,
                         state.w + torque / inertia * h)
    w_inf = torque / damping
    decay = math.exp(-damping * h / inertia)
    return BodyState(state.phi + w_inf * h - (state.w - w_inf) * inertia / damping * math.expm1(-damping * h / inertia),
                     w_inf + (state.w - w_inf) * decay)


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

    result = integrate(rhs, t0, [state.phi, state.w], t0 + h, rtol=1e-10,
                       atol=1e-12 * max(1.0, abs(state.w)), first_step=h)
    return BodyState(*result.y)
