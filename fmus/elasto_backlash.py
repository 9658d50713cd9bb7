"""ElastoBacklash: clearance with a compliant contact (Virlez et al., Flores contact law).

    p = |phi_rel| - b  (penetration beyond the dead zone, s = sign(phi_rel))
    f = k p^n + c p^n dp/dt,   c = 8 (1 - e) k / (5 e v_impact)     for p > 0
    tau = s max(f, 0)          (clipped: the contact never pulls, like Modelica's ElastoBacklash)
with v_impact the penetration speed at the first communication point of a contact
(at least ``w_impact_min``), held for that contact: the element keeps it as its state.
Twist, speeds and signs as in :mod:`fmus.compliance` (tau_2 = +tau, tau_1 = -tau/ratio).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from .compliance import ComplianceElement, compliance_variables
from .variables import INTEGER, output, parameter


def _ratio_of_products(numerators, denominators) -> float:
    """prod(numerators) / prod(denominators) (denominators > 0) without the spurious overflow
    or underflow of the partial products: mantissas and binary exponents are multiplied
    apart (math.frexp), the result is rounded once to a float by math.ldexp, +-inf where it
    lies beyond the float range, 0.0 when a numerator is 0.  Each mantissa product rounds
    (relative error a few ulp), as the plain product would."""
    mantissa, exponent = 1.0, 0
    for x in numerators:
        if x == 0.0:
            return 0.0
        m, e = math.frexp(x)
        mantissa, shift = math.frexp(mantissa * m)
        exponent += e + shift
    for x in denominators:
        m, e = math.frexp(x)
        mantissa, shift = math.frexp(mantissa / m)
        exponent += shift - e
    try:
        return math.ldexp(mantissa, exponent)
    except OverflowError:
        return math.copysign(math.inf, mantissa)


@dataclass(frozen=True)
class ContactMemory:
    side: int            # -1, 0, +1: contact side at the last communication point
    v_impact: float      # penetration speed when that contact began [rad/s]

    def to_json(self):
        return [self.side, self.v_impact]


class ElastoBacklash(ComplianceElement):
    """Dead zone of +-b, then a stiff, damped, never-pulling contact."""

    description = "Clearance with compliant contact k p^n + c p^n p' (Flores/Virlez law), never pulling"
    VARIABLES = (
        parameter("b", "rad", "half clearance (dead zone of phi_rel is [-b, +b])", 1e-4, low=0.0),
        parameter("k", "N.m/rad", "contact stiffness k (torque k p^n, unit for n = 1)", 1e6, low=0.0, low_open=True),
        parameter("n_exp", None, "exponent n of the contact law (1 linear, 1.5 Hertz)", 1.5, low=1.0),
        parameter("e_rest", None, "coefficient of restitution the damping is tuned for", 0.5,
                  low=0.0, high=1.0, low_open=True),
        parameter("w_impact_min", "rad/s", "lower limit of the impact speed in the damping law", 1e-3,
                  low=0.0, low_open=True),
        *compliance_variables("relative angle phi_1/ratio - phi_2 + phi_rel_start"),
        output("contact", None, "contact side: +1 beyond +b, -1 beyond -b, 0 in the dead zone",
               type=INTEGER, depends=("phi_1", "phi_2")),
        output("penetration", "rad", "penetration p = |phi_rel| - b in contact, else 0", depends=("phi_1", "phi_2")),
    )

    def initial_state(self):
        return ContactMemory(0, 0.0)

    def encode_state(self, state):
        return state.to_json()

    def decode_state(self, data):
        return ContactMemory(*data)

    def _contact(self, phi_rel, w_rel):
        """(side, penetration, penetration speed, impact speed) for the current inputs."""
        side = 1 if phi_rel > self.b else (-1 if phi_rel < -self.b else 0)
        if not side:
            return 0, 0.0, 0.0, 0.0
        p, p_dot = abs(phi_rel) - self.b, side * w_rel
        v_impact = self.state.v_impact if self.state.side == side else max(p_dot, self.w_impact_min)
        return side, p, p_dot, v_impact

    def _law(self, p, p_dot, v_impact):
        """(k p^n, c p^n p') of the contact law, each the float its formula rounds to, or +-inf
        where that value itself lies beyond the float range.  p^n is Python's power (+inf
        where it overflows); the damping term is one product of the factors
        8 (1 - e) k p^n p' / (5 e v_impact), so that a tiny e_rest or v_impact (c beyond the
        float range) with a zero or small p^n p' still gives the finite value: with
        e_rest = 5e-324 the old c = ... / (5 e v_impact) divided by zero."""
        try:
            spring = p ** self.n_exp
        except OverflowError:   # beyond the float range: +inf, which the output check refuses, naming it
            spring = math.inf
        elastic = self.k * spring
        damping = _ratio_of_products((8.0, 1.0 - self.e_rest, self.k, spring, p_dot),
                                     (5.0, self.e_rest, v_impact))
        return elastic, damping

    def transmitted(self, phi_rel, w_rel):
        side, p, p_dot, v_impact = self._contact(phi_rel, w_rel)
        if not side:
            return {"tau": 0.0, "contact": 0, "penetration": 0.0}
        elastic, damping = self._law(p, p_dot, v_impact)
        force = max(elastic + damping, 0.0)
        return {"tau": side * force, "contact": side, "penetration": p}

    def nonfinite_cause(self) -> str:
        """Why the contact torque is not finite at the inputs set now: the part of the law
        beyond the float range, with the values and parameters it comes from."""
        phi_rel = self.phi_1 / self.ratio - self.phi_2 + self.phi_rel_start
        side, p, p_dot, v_impact = self._contact(phi_rel, self.w_1 / self.ratio - self.w_2)
        if not side:
            return ""
        elastic, damping = self._law(p, p_dot, v_impact)
        if math.isfinite(elastic):
            return (f"the damping term c p^n_exp p' = 8 (1 - e_rest) k p^n_exp p' / (5 e_rest v_impact) of the "
                    f"contact law with e_rest = {self.e_rest!r}, k = {self.k!r}, v_impact = {v_impact!r} rad/s "
                    f"(at least w_impact_min = {self.w_impact_min!r}), p = {p!r} rad, n_exp = {self.n_exp!r}, "
                    f"p' = {p_dot!r} rad/s is {damping!r}, beyond the floating-point range (1.8e308 N.m): "
                    "raise e_rest or w_impact_min (the Flores damping grows as 1/e_rest), or check the "
                    "connected speeds w_1, w_2")
        return (f"the contact law k p^n_exp + c p^n_exp p' with penetration p = {p!r} rad, n_exp = {self.n_exp!r}, "
                f"k = {self.k!r} exceeds the floating-point range (1.8e308 N.m): the bodies overlap far beyond "
                "any contact this law describes (check the connected angles phi_1, phi_2 and b), or lower n_exp")

    def advance(self, t, h):
        phi_rel = self.phi_1 / self.ratio - self.phi_2 + self.phi_rel_start
        side, _, _, v_impact = self._contact(phi_rel, self.w_1 / self.ratio - self.w_2)
        return ContactMemory(side, v_impact)
