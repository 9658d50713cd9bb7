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
updated by ``remember`` after each point.

Step-mean contact torque (``mean_torque``, the ElastoBacklash FMU's ``T_comm`` > 0), as
Shaft's and NonlinearSpring's spring torques: the mean over s in [0, T] (T = T_comm, the
coming communication step) of the contact torque along the twist moving with the held
relative speed, phi(s) = phi_rel + w_rel s, integrated exactly over the piecewise law.
Derivation.  With w_rel held, the penetration speed p' = s w_rel is constant on each side,
so every factor of a law but p is constant along a piece of the path inside one contact;
ds = dp / |p'| turns the time integral into one over the penetration, and with the
travel Delta = w_rel T

    mean tau = (1 / |Delta|) sum over pieces  s_i  integral over the piece's p-range of f_i(p) dp,

the dead zone contributing nothing.  The path is cut where it crosses +-b: the twist
ends phi_rel and phi_rel + Delta on one side (or both in the dead zone) give one piece
(weight 1: its mean over p is the mean over time); a path leaving side s0 gives the piece
p from p0 = |phi_rel| - b down to 0 (weight p0 / |Delta|), a path entering side s1 the piece
p from 0 up to p1 = |phi_rel + Delta| - b (weight p1 / |Delta|): a path crossing the whole
gap has both.  A piece entered within the step is an impact at p' = s1 w_rel > 0, so law 1
gives it v_impact = max(p', w_impact_min), as the next communication point would; the piece
holding s = 0 takes the point's own contact (``_contact``).  Closed forms on a piece with
penetrations between lo and hi (length L = hi - lo):

* law 1, f = p^n max(k + c_F p', 0) (or k p^n loading, e^2 k p^n unloading): the factor is
  constant, and the mean of p^n is (hi^(n+1) - lo^(n+1)) / ((n + 1) L) =
  hi^n expm1((n + 1) log1p(x)) / ((n + 1) x) with x = -L / hi (hi^n / (n + 1) for lo = 0,
  hi^n for L = 0): no cancellation for a short piece, so T -> 0 gives the sampled torque;
* law 2, f = c p + min(max(D, -c p), c p) with D = d p' constant: affine in p on either side
  of the knee p* = |D| / c (D >= 0: f = 2 c p below it, c p + D above; D < 0: f = 0 below,
  c p + D above), so the mean over each affine part is f at its midpoint, the two parts
  weighted by their lengths.

For an elastic law (law 1 with e_rest = 1, law 2 with d = 0) the mean times the travel is
exactly the change of the stored energy V(phi_rel + Delta) - V(phi_rel) (V = k p^(n+1) / (n+1),
c p^2 / 2): the bodies receive, for the predicted motion, the work the contact stores, and
an explicit co-simulation stops feeding energy into every contact (tests/numerics/
test_elasto_backlash_solver.py).  Standard library only.
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


def _power(p, n):
    """p^n, +inf where it lies beyond the float range (Python's float power raises OverflowError)."""
    try:
        return p ** n
    except OverflowError:   # beyond the float range: +inf, which the output check refuses, naming it
        return math.inf


def path_pieces(phi_rel: float, travel: float, b: float):
    """The contact pieces of the twist path from phi_rel to phi_rel + travel (travel finite,
    not 0), each (side, p_from, dp, weight, first): on side ``side`` the penetration goes from
    p_from to p_from + dp, ``weight`` is the piece's share |dp| / |travel| of the path (1.0 for
    a path on one side), ``first`` tells the piece holding the start point.  The dead zone
    gives no piece (module docstring, step-mean torque)."""
    phi_end = phi_rel + travel
    side_0, side_1 = _side(phi_rel, b), _side(phi_end, b)
    if side_0 == side_1:
        return [(side_0, abs(phi_rel) - b, side_0 * travel, 1.0, True)] if side_0 else []
    pieces, span = [], abs(travel)
    if side_0:          # leaves the contact at s0 b: p from p0 down to 0
        p_0 = abs(phi_rel) - b
        pieces.append((side_0, p_0, -p_0, min(p_0 / span, 1.0), True))
    if side_1:          # enters the contact at s1 b: p from 0 up to p1
        p_1 = abs(phi_end) - b
        pieces.append((side_1, 0.0, p_1, min(p_1 / span, 1.0), False))
    return pieces


def mean_power(p_from: float, dp: float, n: float) -> float:
    """Mean of p^n over the penetrations between p_from and p_from + dp (both >= 0, n >= 1):
    (hi^(n+1) - lo^(n+1)) / ((n + 1) (hi - lo)) written hi^n expm1((n + 1) log1p(x)) /
    ((n + 1) x) with x = -|dp| / hi, so that a short piece (|dp| << hi) loses no digits to the
    difference of powers and |dp| -> 0 gives hi^n; hi^n / (n + 1) when lo = 0, +inf where hi^n
    lies beyond the float range."""
    length = abs(dp)
    hi = p_from + dp if dp > 0.0 else p_from
    if not hi > 0.0:
        return 0.0
    top = _power(hi, n)
    x = max(-length / hi, -1.0)
    if x == 0.0:
        return top
    if x == -1.0:
        return top / (n + 1.0)
    return top * (math.expm1((n + 1.0) * math.log1p(x)) / ((n + 1.0) * x))


def travel_cause(w_rel: float, t_comm: float) -> str:
    """Why a step-mean torque is not finite when the twist travel over the step is not."""
    if math.isfinite(w_rel * t_comm):
        return ""
    return (f"the twist travel w_rel T_comm = {w_rel!r} rad/s * {t_comm!r} s over the coming step, along which "
            "the contact torque is averaged, is beyond the floating-point range: check the connected speeds "
            "w_1, w_2 and T_comm (the master's communication step)")


def _mean_prefix(t_comm, w_rel, p_from, dp):
    return (f"the mean contact torque over the coming step of T_comm = {t_comm!r} s (the twist moving at "
            f"w_rel = {w_rel!r} rad/s, the penetration going from {p_from!r} to {p_from + dp!r} rad) is not finite: ")


class _StepMean:
    """The step-mean torque of a contact law, the same for both laws: the law gives
    ``contact`` (the torque at a point) and ``piece_mean`` (its mean force over one contact
    piece of the path)."""

    def mean_torque(self, memory: ContactMemory, phi_rel: float, w_rel: float, t_comm: float) -> float:
        """Mean contact torque over the coming step of t_comm along phi_rel + w_rel s (module
        docstring): the sum over the contact pieces of the path of side x share x mean force;
        the contact torque at the point when the twist does not move, NaN when its travel is
        beyond the float range."""
        travel = w_rel * t_comm
        if travel == 0.0:
            return self.contact(memory, phi_rel, w_rel).tau
        if not math.isfinite(travel):
            return math.nan
        total = 0.0
        for side, p_from, dp, weight, first in path_pieces(phi_rel, travel, self.b):
            total += side * weight * self.piece_mean(memory, phi_rel, w_rel, side, p_from, dp, first)
        return total


class FloresContact(_StepMean):
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

    def _terms(self, spring, p_dot, v_impact):
        """(k p^n, c p^n p') of the contact law for ``spring`` = p^n (or its mean over a piece
        of the path), each the float its formula rounds to, or +-inf where that value itself
        lies beyond the float range.  The damping term is one product of the factors
        8 (1 - e) k p^n p' / (5 e v_impact), so that a tiny e_rest or v_impact (c beyond the
        float range) with a zero or small p^n p' still gives the finite value (0.0 for a
        contact without a measured impact speed: it has no damping term)."""
        elastic = self.k * spring
        if v_impact == UNMEASURED:
            return elastic, 0.0
        damping = ratio_of_products((8.0, 1.0 - self.e_rest, self.k, spring, p_dot),
                                    (5.0, self.e_rest, v_impact))
        return elastic, damping

    def _force(self, spring, p_dot, v_impact):
        """f >= 0 for ``spring`` = p^n: the energy hysteresis without a measured impact speed
        (e^2 of the stored energy comes back), else max(k p^n + c p^n p', 0).  Linear in p^n
        at a given p', so ``spring`` = the mean of p^n over a piece gives the mean of f."""
        elastic, damping = self._terms(spring, p_dot, v_impact)
        if v_impact == UNMEASURED:
            return elastic if p_dot >= 0.0 else elastic * self.e_rest * self.e_rest
        return max(elastic + damping, 0.0)

    def contact(self, memory: ContactMemory, phi_rel: float, w_rel: float) -> Contact:
        side, p, p_dot, v_impact = self._contact(memory, phi_rel, w_rel)
        if not side:
            return NO_CONTACT
        return Contact(side * self._force(_power(p, self.n_exp), p_dot, v_impact), side, p)

    def _piece(self, memory, phi_rel, w_rel, side, p_from, dp, first):
        """(p', v_impact, mean of p^n) on one piece of the path (``path_pieces``)."""
        p_dot = side * w_rel
        v_impact = self._contact(memory, phi_rel, w_rel)[3] if first else max(p_dot, self.w_impact_min)
        return p_dot, v_impact, mean_power(p_from, dp, self.n_exp)

    def piece_mean(self, memory, phi_rel, w_rel, side, p_from, dp, first):
        """Mean of f over one piece of the path: f is linear in p^n at a given p' (``_force``)."""
        p_dot, v_impact, spring = self._piece(memory, phi_rel, w_rel, side, p_from, dp, first)
        return self._force(spring, p_dot, v_impact)

    def remember(self, memory: ContactMemory, phi_rel: float, w_rel: float) -> ContactMemory:
        side, _, _, v_impact = self._contact(memory, phi_rel, w_rel)
        return ContactMemory(side, v_impact)

    def _cause(self, p, p_dot, v_impact, elastic, damping) -> str:
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

    def nonfinite_cause(self, memory: ContactMemory, phi_rel: float, w_rel: float, t_comm: float = 0.0) -> str:
        """Why the contact torque (its step mean for t_comm > 0) is not finite at these inputs:
        the part of the law beyond the float range, with the values and parameters it comes from."""
        travel = w_rel * t_comm
        if travel != 0.0:
            if not math.isfinite(travel):
                return travel_cause(w_rel, t_comm)
            for side, p_from, dp, _, first in path_pieces(phi_rel, travel, self.b):
                p_dot, v_impact, spring = self._piece(memory, phi_rel, w_rel, side, p_from, dp, first)
                cause = self._cause(max(p_from, p_from + dp), p_dot, v_impact, *self._terms(spring, p_dot, v_impact))
                if cause:
                    return _mean_prefix(t_comm, w_rel, p_from, dp) + cause
            return ""
        side, p, p_dot, v_impact = self._contact(memory, phi_rel, w_rel)
        if not side:
            return ""
        return self._cause(p, p_dot, v_impact, *self._terms(_power(p, self.n_exp), p_dot, v_impact))


class LimitedSpringDamper(_StepMean):
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

    def _force(self, p, damper):
        """f = c p + min(max(d p', -c p), c p) for the damper torque ``damper`` = d p'."""
        spring = self.c * p
        return spring + min(max(damper, -spring), spring)

    def contact(self, memory: ContactMemory, phi_rel: float, w_rel: float) -> Contact:
        side = _side(phi_rel, self.b)
        if not side:
            return NO_CONTACT
        p = abs(phi_rel) - self.b
        return Contact(side * self._force(p, self.d * side * w_rel), side, p)

    def piece_mean(self, memory, phi_rel, w_rel, side, p_from, dp, first):
        """Mean of f over the penetrations between p_from and p_from + dp: f is affine on either
        side of the knee p* = |d p'| / c, so its mean over each affine part is its value at
        the part's midpoint (module docstring)."""
        damper = self.d * side * w_rel
        lo, hi = (p_from, p_from + dp) if dp > 0.0 else (p_from + dp, p_from)
        knee = abs(damper) / self.c if self.c > 0.0 else math.inf
        if lo < knee < hi:
            share = (knee - lo) / abs(dp)
            return (share * self._force(0.5 * (lo + knee), damper)
                    + (1.0 - share) * self._force(0.5 * (knee + hi), damper))
        return self._force(p_from + 0.5 * dp, damper)

    def remember(self, memory: ContactMemory, phi_rel: float, w_rel: float) -> ContactMemory:
        return ContactMemory(_side(phi_rel, self.b), UNMEASURED)

    def nonfinite_cause(self, memory: ContactMemory, phi_rel: float, w_rel: float, t_comm: float = 0.0) -> str:
        travel = w_rel * t_comm
        if travel != 0.0:
            if not math.isfinite(travel):
                return travel_cause(w_rel, t_comm)
            deepest = max((max(p_from, p_from + dp) for _, p_from, dp, _, _ in path_pieces(phi_rel, travel, self.b)),
                          default=0.0)
            prefix = (f"the mean contact torque over the coming step of T_comm = {t_comm!r} s (the twist moving at "
                      f"w_rel = {w_rel!r} rad/s) is not finite: ")
        else:
            deepest = abs(phi_rel) - self.b if _side(phi_rel, self.b) else 0.0
            prefix = ""
        if math.isfinite(self.c * deepest):
            return ""
        return (prefix + f"the spring torque c p with c = {self.c!r} N.m/rad and penetration p = {deepest!r} rad "
                "exceeds the floating-point range (1.8e308 N.m): check the connected angles phi_1, phi_2 and b, "
                "or lower c")
