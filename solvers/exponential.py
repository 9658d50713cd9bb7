"""exp(A t) of 2x2 matrices in closed form: the flow of a linear second-order system
x'' = a21 x + a22 x' over t (the piecewise-affine spring's regions, the backlash's
affine contact motion).  Standard library only."""
from __future__ import annotations

import math


def expm2(a11, a12, a21, a22, t):
    """exp(A t) of a 2x2 matrix in closed form (Cayley-Hamilton):
    exp(A t) = e^(mu t) (C(t) I + S(t) (A - mu I)),  mu = tr(A)/2,  q^2 = mu^2 - det(A),
    C = cosh(q t), S = sinh(q t)/q  (q^2 > 0);  cos, sin/omega (q^2 < 0);  1, t (q^2 = 0)."""
    mu = 0.5 * (a11 + a22)
    q2 = mu * mu - (a11 * a22 - a12 * a21)
    c, s = exp_pair(mu, q2, t)
    return (c + s * (a11 - mu), s * a12, s * a21, c + s * (a22 - mu))


def exp_pair(mu, q2, t):
    """(e^(mu t) C(t), e^(mu t) S(t)) without overflow: for q t > 1 the hyperbolic pair is
    formed from e^((mu + q) t) and e^((mu - q) t), which stay finite in a strongly
    overdamped region where cosh(q t) alone would overflow."""
    if q2 > 0.0:
        q = math.sqrt(q2)
        if q * t > 1.0:
            fast, slow = math.exp((mu + q) * t), math.exp((mu - q) * t)
            return 0.5 * (fast + slow), 0.5 * (fast - slow) / q
        e = math.exp(mu * t)
        return e * math.cosh(q * t), e * math.sinh(q * t) / q
    e = math.exp(mu * t)
    if q2 < 0.0:
        w = math.sqrt(-q2)
        return e * math.cos(w * t), e * math.sin(w * t) / w
    return e, e * t
