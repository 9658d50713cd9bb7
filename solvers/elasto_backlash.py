"""Contact laws of a clearance with a compliant contact (the ElastoBacklash element).

Relative angle and speed as in :mod:`fmus.compliance`; the dead zone is -b <= phi_rel <= +b
(b is the half clearance).  Beyond it the contact side is s = sign(phi_rel), the penetration
p = |phi_rel| - b and the penetration speed p' = s w_rel (> 0 while the bodies press into
each other).  A law gives the contact torque tau = s f with f >= 0: the contact pushes the
bodies apart and never pulls them together.

Law 1, FLORES: f = k p^n + c_F p^n p',  c_F = 8 (1 - e) k / (5 e v_impact)  (Flores et al.'s
hysteresis damping tuned to the restitution e for the impact speed v_impact), f >= 0,
with v_impact the penetration speed at the first communication point of the contact (at
least ``w_impact_min``).  That speed is the impact speed only when the point before lay
outside the contact and the bodies approach (p' > 0).  A contact found otherwise (present
at the first communication point, e.g. a preload, or entered and already rebounding within
one step) has no measured impact speed; it gets the same restitution e from an energy
hysteresis instead: f = k p^n while loading or at rest (p' >= 0), f = e^2 k p^n while
unloading (p' < 0), so that unloading returns e^2 of the energy k p^(n+1) / (n+1) stored,
and bodies released from rest at p0 part with the relative speed e sqrt(2 E0 / m_eff).
(Before, such a contact took v_impact = w_impact_min: c_F became about 1600 k, the damping
cancelled the spring as soon as the bodies parted faster than 5 e w_impact_min / (8 (1 - e))
and they drifted out of the penetration at that speed with no torque.)

Law 2, MSL: the spring-damper of Modelica.Mechanics.Rotational.Components.ElastoBacklash
(MSL 4.0), see :class:`LimitedSpringDamper`.

The laws are evaluated at communication points only: a law keeps a
:class:`ContactMemory` (contact side at the last point, impact speed of that contact),
updated by ``remember`` after each point.  Standard library only.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

FLORES, MSL = 1, 2


def ratio_of_products(numerators, denominators) -> float:
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
    """What a law keeps from one communication point to the next."""

    side: int | None     # -1, 0, +1: contact side at the last communication point; None before the first
    v_impact: float      # impact speed of that contact [rad/s]; UNMEASURED: no impact was seen

    def to_json(self):
        return [self.side, self.v_impact]

    @classmethod
    def from_json(cls, data):
        return cls(*data)


UNMEASURED = 0.0
INITIAL = ContactMemory(None, UNMEASURED)


@dataclass(frozen=True)
class Contact:
    """The contact at one communication point."""

    tau: float           # contact torque s f [N.m] (on body 2; -tau/ratio on body 1)
    side: int            # s: -1, 0 (dead zone), +1
    penetration: float   # p [rad], 0 in the dead zone


NO_CONTACT = Contact(0.0, 0, 0.0)


def _side(phi_rel, b):
    return 1 if phi_rel > b else (-1 if phi_rel < -b else 0)


def _check(name, value, low, low_open=False, high=math.inf):
    """Refuse a parameter outside its range, naming the value and the range."""
    if not (math.isfinite(value) and (value > low if low_open else value >= low) and value <= high):
        left = "(" if low_open else "["
        right = "]" if high < math.inf else ")"
        raise ValueError(f"{name} = {value!r} is outside the allowed range {left}{low:g}, {high:g}{right}")


class FloresContact:
    """Law 1: dead zone of +-b, then f = k p^n + c_F p^n p' with Flores's damping, f >= 0, or the
    energy hysteresis for a contact without a measured impact speed (module docstring)."""

    def __init__(self, b: float, k: float, n_exp: float, e_rest: float, w_impact_min: float):
        _check("b", b, 0.0)
        _check("k", k, 0.0, low_open=True)
        _check("n_exp", n_exp, 1.0)
        _check("e_rest", e_rest, 0.0, low_open=True, high=1.0)
        _check("w_impact_min", w_impact_min, 0.0, low_open=True)
        self.b, self.k, self.n_exp, self.e_rest, self.w_impact_min = b, k, n_exp, e_rest, w_impact_min

    def _contact(self, memory, phi_rel, w_rel):
        """(side, penetration, penetration speed, impact speed) for the current inputs."""
        side = _side(phi_rel, self.b)
        if not side:
            return 0, 0.0, 0.0, 0.0
        p, p_dot = abs(phi_rel) - self.b, side * w_rel
        if memory.side == side:
            v_impact = memory.v_impact
        elif memory.side is not None and p_dot > 0.0:      # entered since the last point: an impact
            v_impact = max(p_dot, self.w_impact_min)
        else:
            v_impact = UNMEASURED
        return side, p, p_dot, v_impact

    def _terms(self, p, p_dot, v_impact):
        """(k p^n, c p^n p') of the contact law, each the float its formula rounds to, or +-inf
        where that value itself lies beyond the float range.  p^n is Python's power (+inf
        where it overflows); the damping term is one product of the factors
        8 (1 - e) k p^n p' / (5 e v_impact), so that a tiny e_rest or v_impact (c beyond the
        float range) with a zero or small p^n p' still gives the finite value (0.0 for a
        contact without a measured impact speed: it has no damping term)."""
        try:
            spring = p ** self.n_exp
        except OverflowError:   # beyond the float range: +inf, which the output check refuses, naming it
            spring = math.inf
        elastic = self.k * spring
        if v_impact == UNMEASURED:
            return elastic, 0.0
        damping = ratio_of_products((8.0, 1.0 - self.e_rest, self.k, spring, p_dot),
                                    (5.0, self.e_rest, v_impact))
        return elastic, damping

    def contact(self, memory: ContactMemory, phi_rel: float, w_rel: float) -> Contact:
        side, p, p_dot, v_impact = self._contact(memory, phi_rel, w_rel)
        if not side:
            return NO_CONTACT
        elastic, damping = self._terms(p, p_dot, v_impact)
        if v_impact == UNMEASURED:      # energy hysteresis: e^2 of the stored energy comes back
            return Contact(side * (elastic if p_dot >= 0.0 else elastic * self.e_rest * self.e_rest), side, p)
        return Contact(side * max(elastic + damping, 0.0), side, p)

    def remember(self, memory: ContactMemory, phi_rel: float, w_rel: float) -> ContactMemory:
        side, _, _, v_impact = self._contact(memory, phi_rel, w_rel)
        return ContactMemory(side, v_impact)

    def nonfinite_cause(self, memory: ContactMemory, phi_rel: float, w_rel: float) -> str:
        """Why the contact torque is not finite at these inputs: the part of the law beyond
        the float range, with the values and parameters it comes from."""
        side, p, p_dot, v_impact = self._contact(memory, phi_rel, w_rel)
        if not side:
            return ""
        elastic, damping = self._terms(p, p_dot, v_impact)
        if math.isfinite(elastic) and math.isfinite(damping):
            return ""
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


class LimitedSpringDamper:
    """Law 2: Modelica.Mechanics.Rotational.Components.ElastoBacklash of MSL 4.0
    (github.com/modelica/ModelicaStandardLibrary, Modelica/Mechanics/Rotational/Components/
    ElastoBacklash.mo, its equations and documentation).

    MSL's ``b`` is the total backlash with a dead zone of b/2 either side of phi_rel0; here
    ``b`` is the half clearance, so MSL's b is 2 b and its phi_rel0 is -phi_rel_start.  In
    contact a linear spring c and a damper d act on the penetration: spring torque c p,
    damper torque d p'.  MSL limits the damper torque by the spring torque on both sides:
    where the damper would push harder than the spring the contact torque is 2 c p (so it
    starts from zero at the contact instant instead of jumping to d p'), where the damper
    would make the torque pull (c p + d p' <= 0) it is zero.  So
        f = c p + min(max(d p', -c p), c p),   0 <= f <= 2 c p.
    MSL turns the element into an unlimited spring-damper for b below 1e-10 rad (to avoid
    solver events); here the limits hold for every b, so the contact never pulls."""

    def __init__(self, b: float, c: float, d: float):
        _check("b", b, 0.0)
        _check("c", c, 0.0)
        _check("d", d, 0.0)
        self.b, self.c, self.d = b, c, d

    def contact(self, memory: ContactMemory, phi_rel: float, w_rel: float) -> Contact:
        side = _side(phi_rel, self.b)
        if not side:
            return NO_CONTACT
        p = abs(phi_rel) - self.b
        spring, damper = self.c * p, self.d * side * w_rel
        return Contact(side * (spring + min(max(damper, -spring), spring)), side, p)

    def remember(self, memory: ContactMemory, phi_rel: float, w_rel: float) -> ContactMemory:
        return ContactMemory(_side(phi_rel, self.b), UNMEASURED)

    def nonfinite_cause(self, memory: ContactMemory, phi_rel: float, w_rel: float) -> str:
        side = _side(phi_rel, self.b)
        if not side or math.isfinite(self.c * (abs(phi_rel) - self.b)):
            return ""
        return (f"the spring torque c p with c = {self.c!r} N.m/rad and penetration p = {abs(phi_rel) - self.b!r} rad "
                "exceeds the floating-point range (1.8e308 N.m): check the connected angles phi_1, phi_2 and b, "
                "or lower c")
