"""Two bodies with a clearance: exact impacts and persistent contact (Reiter ch. 4).

Bodies (optionally tied to ground by spring-dampers, Reiter eq. 109-111):
    J_i phi_i'' = tau_i - k_i (phi_i - phi_rest_i) - d_i w_i   (+ contact torques)
Relative angle through an ideal gear at body 1:  phi_rel = phi_1 / r - phi_2, kept
within [-b, +b].  At the limit s b (s = +1 or -1) the contact torque lambda acts on
body 2 and -lambda / r on body 1 (no work is done by it in persistent contact).

Free flight.  Both bodies move in closed form (solvers.motion.AffineMotion); the
instant phi_rel reaches a limit is located by a rigorous crossing search (the thesis
predicts it linearly, eq. 113-119: here the crossing is exact to rounding).

Impact (Newton's law, eq. 105-108 with the gear):
    approach speed   w_rel = w_1 / r - w_2,  m_eff = 1 / (1/(r^2 J_1) + 1/J_2)
    impulse on body 2  P = (1 + e) m_eff w_rel,  on body 1  -P / r
    after impact     w_rel' = -e w_rel,  loss  m_eff w_rel^2 (1 - e^2) / 2   (eq. 106)
If the separation speed e |w_rel| is below ``w_close`` the impact is taken plastic
(w_rel' = 0): rattling, an infinite series of ever shorter bounces under a pressing
torque (total duration 2 e w/(a (1 - e)) for bounce speed w and relative acceleration
a), is replaced by closing the contact; the extra loss is at most m_eff (w_close/e)^2/2.

Persistent contact (an exact contact constraint instead of the thesis's separation
force, eq. 125-133).  With phi_1 = r (phi_2 + s b) the pair moves as one body
    (r^2 J_1 + J_2) phi_2'' = r tau_1 + tau_2 - r k_1 (r phi_2 + r s b - phi_rest_1)
                              - k_2 (phi_2 - phi_rest_2) - (r^2 d_1 + d_2) w_2
and the contact torque lambda = J_2 phi_2'' - (tau_2 - k_2 (phi_2 - phi_rest_2) - d_2 w_2)
is affine in (phi_2, w_2).  The contact holds while it is compressive (s lambda >= 0)
and opens at the exact instant it would pull.  No overlap can arise: phi_rel = s b by
construction.  At zero relative speed on a limit the contact closes iff the free
relative acceleration points into the limit (the same test as a clutch's stick test).

``e_loss`` is the energy balance: work of the inputs minus the change of kinetic and
spring energy (impacts, closing contacts and the dampers).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from .budget import Budget
from .contract import StepResult, check_step
from .motion import AffineMotion, SearchBudgetExceeded, first_crossing

#: Contact events (impacts, closings, openings) of one step.  Floor 100 (a burst at one
#: instant: impact, close, open, again), 10^4 per second of step (one event every 0.1 ms:
#: 20 times R3's elastic clearance case, about 1000 impacts in 2 s), cap 2000 (each event
#: costs 20-100 us here, the crossing searches aside: EVALUATION_BUDGET bounds those).
EVENT_BUDGET = Budget("contact events", 100, 1e4, 2000)
#: Interval halvings of the crossing searches (solvers.motion.first_crossing) of one step,
#: all searches together.  Floor 20 000 (the bound one search had before: a grazing contact
#: bisects to rounding, about 50 levels per grazing point), 10^6 per second of step, cap
#: 200 000 (1.3-1.5 s of CPU measured here on a loaded machine, 7 us per halving).
EVALUATION_BUDGET = Budget("crossing-search evaluations", 20_000, 1e6, 200_000)
_ADVICE = ("take a smaller communication step (a long step with oscillating ground springs k_ground_i, "
           "or rattling with e_rest near 1 and a small w_close, has more events than it may)")
_EPS = 2.220446049250313e-16


@dataclass(frozen=True)
class Body:
    """A body of the pair: inertia and its optional spring-damper to ground."""

    J: float
    k_ground: float = 0.0
    d_ground: float = 0.0
    phi_rest: float = 0.0

    def __post_init__(self):
        for name, value, low_open in (("J", self.J, True), ("k_ground", self.k_ground, False),
                                      ("d_ground", self.d_ground, False)):
            if not (math.isfinite(value) and (value > 0.0 if low_open else value >= 0.0)):
                raise ValueError(f"{name} = {value!r} must be finite and {'>' if low_open else '>='} 0")
        if not math.isfinite(self.phi_rest):
            raise ValueError(f"phi_rest = {self.phi_rest!r} must be finite")

    def motion(self, torque, phi, w):
        return AffineMotion(self.J, self.k_ground, self.d_ground, torque + self.k_ground * self.phi_rest, phi, w)

    def energy(self, phi, w):
        return 0.5 * self.J * w * w + 0.5 * self.k_ground * (phi - self.phi_rest) ** 2


@dataclass(frozen=True)
class PairState:
    """Angles, speeds, contact side (-1, 0 free, +1), impact count, last impulse on body 2,
    dissipated energy."""

    phi_1: float
    w_1: float
    phi_2: float
    w_2: float
    contact: int = 0
    n_impacts: int = 0
    impulse_last: float = 0.0
    e_loss: float = 0.0

    def to_json(self):
        return [self.phi_1, self.w_1, self.phi_2, self.w_2, self.contact, self.n_impacts,
                self.impulse_last, self.e_loss]

    @classmethod
    def from_json(cls, data):
        return cls(*data)


class BacklashPair:
    """Two bodies with half clearance ``b`` (module docstring)."""

    def __init__(self, body_1: Body, body_2: Body, clearance: float, restitution: float,
                 ratio: float = 1.0, w_close: float = 1e-6):
        if not (clearance >= 0.0 and math.isfinite(clearance)):
            raise ValueError(f"clearance b = {clearance!r} must be finite and >= 0")
        if not 0.0 <= restitution <= 1.0:
            raise ValueError(f"restitution e = {restitution!r} must be in [0, 1]")
        if not (ratio > 0.0 and math.isfinite(ratio)):
            raise ValueError(f"ratio = {ratio!r} must be finite and > 0")
        if not (w_close > 0.0 and math.isfinite(w_close)):
            raise ValueError(f"w_close = {w_close!r} must be finite and > 0")
        self.b1, self.b2, self.b, self.e, self.r, self.w_close = body_1, body_2, clearance, restitution, ratio, w_close
        self.m_eff = 1.0 / (1.0 / (ratio * ratio * body_1.J) + 1.0 / body_2.J)

    # ---------------------------------------------------------------- helpers
    def phi_rel(self, phi_1, phi_2):
        return phi_1 / self.r - phi_2

    def energy(self, phi_1, w_1, phi_2, w_2):
        """Kinetic energy plus the energy of the ground springs."""
        return self.b1.energy(phi_1, w_1) + self.b2.energy(phi_2, w_2)

    def free_relative_acceleration(self, phi_1, w_1, phi_2, w_2, tau_1, tau_2):
        a1 = (tau_1 - self.b1.k_ground * (phi_1 - self.b1.phi_rest) - self.b1.d_ground * w_1) / self.b1.J
        a2 = (tau_2 - self.b2.k_ground * (phi_2 - self.b2.phi_rest) - self.b2.d_ground * w_2) / self.b2.J
        return a1 / self.r - a2

    def _pressed(self, side, phi_1, w_1, phi_2, w_2, tau_1, tau_2):
        """At rest on limit ``side``: does the free motion not pull the bodies apart?
        (Zero relative acceleration counts as contact: identical bodies move together.)"""
        a_rel = self.free_relative_acceleration(phi_1, w_1, phi_2, w_2, tau_1, tau_2)
        return side * a_rel >= -self._acceleration_noise(phi_1, w_1, phi_2, w_2, tau_1, tau_2)

    def _noise(self, phi_1, phi_2):
        return 64.0 * _EPS * max(abs(phi_1) / self.r, abs(phi_2), self.b, 1e-300)

    def _limit_at(self, phi_1, phi_2):
        """+1 / -1 if phi_rel sits on that limit (to rounding), else 0."""
        rel, noise = self.phi_rel(phi_1, phi_2), self._noise(phi_1, phi_2)
        if abs(rel - self.b) <= noise:
            return 1
        if abs(rel + self.b) <= noise:
            return -1
        return 0

    def _contact_motion(self, s, tau_1, tau_2, phi_2, w_2):
        b1, b2, r = self.b1, self.b2, self.r
        J = r * r * b1.J + b2.J
        k = r * r * b1.k_ground + b2.k_ground
        d = r * r * b1.d_ground + b2.d_ground
        F = r * tau_1 + tau_2 - r * r * b1.k_ground * s * self.b + r * b1.k_ground * b1.phi_rest \
            + b2.k_ground * b2.phi_rest
        return AffineMotion(J, k, d, F, phi_2, w_2)

    def _contact_torque(self, motion: AffineMotion, tau_2, phi_2, w_2):
        """lambda on body 2 in persistent contact, for the state (phi_2, w_2)."""
        acc = (motion.F - motion.k * phi_2 - motion.d * w_2) / motion.J
        b2 = self.b2
        return b2.J * acc - (tau_2 - b2.k_ground * (phi_2 - b2.phi_rest) - b2.d_ground * w_2)

    def _impact(self, s, w_1, w_2, plastic):
        """Speeds after an impact at limit s and the impulse on body 2 (eq. 107-108)."""
        w_rel = w_1 / self.r - w_2
        e = 0.0 if plastic else self.e
        impulse = (1.0 + e) * self.m_eff * w_rel
        return w_1 - impulse / (self.r * self.b1.J), w_2 + impulse / self.b2.J, impulse

    # ---------------------------------------------------------------- stepping
    def step(self, state: PairState, tau_1: float, tau_2: float, h: float) -> StepResult:
        """Advance by h with the input torques held (exact events inside the step); the
        events are (time in the step, 'impact' | 'close' | 'open') records."""
        check_step(h, tau_1=tau_1, tau_2=tau_2)
        energy_0 = self.energy(state.phi_1, state.w_1, state.phi_2, state.w_2)
        events = []
        try:
            end = self._events(state, tau_1, tau_2, h, events, EVENT_BUDGET.limit(h), [EVALUATION_BUDGET.limit(h)])
        except SearchBudgetExceeded as cause:
            raise EVALUATION_BUDGET.exceeded("backlash", h, f"{cause}; {_ADVICE}") from None
        phi_1, w_1, phi_2, w_2, contact, n_impacts, impulse_last = end
        work = tau_1 * (phi_1 - state.phi_1) + tau_2 * (phi_2 - state.phi_2)
        e_loss = state.e_loss + work - (self.energy(phi_1, w_1, phi_2, w_2) - energy_0)
        return StepResult(PairState(phi_1, w_1, phi_2, w_2, contact, n_impacts, impulse_last, e_loss),
                          tuple(events))

    def _events(self, state, tau_1, tau_2, h, events, max_events, search):
        """The event loop of :meth:`step`: (phi_1, w_1, phi_2, w_2, contact, n_impacts,
        impulse_last) at the end of the step; ``events`` filled in."""
        phi_1, w_1, phi_2, w_2 = state.phi_1, state.w_1, state.phi_2, state.w_2
        contact, n_impacts, impulse_last = state.contact, state.n_impacts, state.impulse_last
        t = 0.0
        just_opened = False  # at the instant a contact opens, lambda and the free relative
        # acceleration are both zero: do not let rounding close it again at that instant
        while True:
            if len(events) > max_events:           # every kind of event counts
                raise EVENT_BUDGET.exceeded("backlash", h, _ADVICE)
            remaining = h - t
            if contact:
                motion = self._contact_motion(contact, tau_1, tau_2, phi_2, w_2)
                lam_0 = self._contact_torque(motion, tau_2, phi_2, w_2)
                if t == 0.0 and contact * lam_0 < -self._torque_noise(motion, tau_2):
                    contact, just_opened = 0, True  # the new inputs pull the bodies apart
                    events.append((t, "open"))
                    continue
                hit = self._contact_opens(motion, contact, tau_2, remaining, lam_0, search)
                phi_2, w_2 = motion.at(remaining if hit is None else hit)
                phi_1, w_1 = self.r * (phi_2 + contact * self.b), self.r * w_2
                if hit is None:
                    break
                t += hit
                contact, just_opened = 0, True
                events.append((t, "open"))
                continue
            side = 0 if just_opened else self._limit_at(phi_1, phi_2)
            just_opened = False
            w_rel = w_1 / self.r - w_2
            if side and side * w_rel > 0.0:          # moving into the limit: impact now
                hit_side, hit = side, 0.0
            elif side and w_rel == 0.0 and self._pressed(side, phi_1, w_1, phi_2, w_2, tau_1, tau_2):
                contact = side                       # resting on the limit, not pulled off it
                events.append((t, "close"))
                continue
            else:
                hit_side, hit = self._free_hits(phi_1, w_1, phi_2, w_2, tau_1, tau_2, remaining, search)
            if hit is None:
                phi_1, w_1 = self.b1.motion(tau_1, phi_1, w_1).at(remaining)
                phi_2, w_2 = self.b2.motion(tau_2, phi_2, w_2).at(remaining)
                break
            if hit > 0.0:
                phi_1, w_1 = self.b1.motion(tau_1, phi_1, w_1).at(hit)
                phi_2, w_2 = self.b2.motion(tau_2, phi_2, w_2).at(hit)
                phi_2 = phi_1 / self.r - hit_side * self.b   # exactly on the limit
                t += hit
            plastic = self.e * abs(w_1 / self.r - w_2) < self.w_close
            w_1, w_2, impulse_last = self._impact(hit_side, w_1, w_2, plastic)
            n_impacts += 1
            events.append((t, "impact"))
            if plastic:
                w_2 = w_1 / self.r  # relative speed exactly zero
                if self._pressed(hit_side, phi_1, w_1, phi_2, w_2, tau_1, tau_2):
                    contact = hit_side
                    events.append((t, "close"))
        return phi_1, w_1, phi_2, w_2, contact, n_impacts, impulse_last

    def _free_hits(self, phi_1, w_1, phi_2, w_2, tau_1, tau_2, horizon, search=None):
        """(side, time) of the first limit reached in free flight within horizon, or (0, None)."""
        m1, m2 = self.b1.motion(tau_1, phi_1, w_1), self.b2.motion(tau_2, phi_2, w_2)
        rel_0 = self.phi_rel(phi_1, phi_2)
        bound_1 = m1.derivative_bound(1, horizon) / self.r + m2.derivative_bound(1, horizon)
        bound_2 = m1.derivative_bound(2, horizon) / self.r + m2.derivative_bound(2, horizon)
        noise = self._noise(phi_1, phi_2) + bound_1 * horizon * 8.0 * _EPS
        best_side, best = 0, None
        for side in (1, -1):
            gap_0 = max(self.b - side * rel_0, 0.0)

            def gap(t, side=side, gap_0=gap_0):
                (x1, v1), (x2, v2) = m1.at(t), m2.at(t)
                return gap_0 - side * (x1 / self.r - x2 - rel_0), -side * (v1 / self.r - v2)

            limit = horizon if best is None else best
            found = first_crossing(gap, bound_1, bound_2, limit, gap_0, noise, search)
            if found is not None and (best is None or found < best):
                best_side, best = side, found
        return best_side, best

    def _contact_opens(self, motion: AffineMotion, s, tau_2, horizon, lam_0, search=None):
        """Time in (0, horizon] at which s lambda falls below its rounding level, or None."""
        # lambda = alpha phi_2 + beta w_2 + const
        alpha = self.b2.k_ground - self.b2.J * motion.k / motion.J
        beta = self.b2.d_ground - self.b2.J * motion.d / motion.J
        bound_1 = abs(alpha) * motion.derivative_bound(1, horizon) + abs(beta) * motion.derivative_bound(2, horizon)
        bound_2 = abs(alpha) * motion.derivative_bound(2, horizon) + abs(beta) * motion.derivative_bound(3, horizon)
        noise = self._torque_noise(motion, tau_2)
        if s * lam_0 - bound_1 * horizon > -noise:
            return None

        def lam(t):
            phi, w = motion.at(t)
            acc = (motion.F - motion.k * phi - motion.d * w) / motion.J
            return (s * lam_0 + s * (alpha * (phi - motion.x0) + beta * (w - motion.v0)),
                    s * (alpha * w + beta * acc))

        return first_crossing(lam, bound_1, bound_2, horizon, max(s * lam_0, 0.0), noise, search)

    def _torque_noise(self, motion: AffineMotion, tau_2):
        """Rounding level of the contact torque (sum of the magnitudes of its terms)."""
        b2 = self.b2
        scale = (b2.J * (abs(motion.F) + motion.k * abs(motion.x0) + motion.d * abs(motion.v0)) / motion.J
                 + abs(tau_2) + b2.k_ground * (abs(motion.x0) + abs(b2.phi_rest)) + b2.d_ground * abs(motion.v0))
        return 64.0 * _EPS * max(scale, 1e-300)

    def _acceleration_noise(self, phi_1, w_1, phi_2, w_2, tau_1, tau_2):
        """Rounding level of the free relative acceleration."""
        b1, b2 = self.b1, self.b2
        a1 = (abs(tau_1) + b1.k_ground * (abs(phi_1) + abs(b1.phi_rest)) + b1.d_ground * abs(w_1)) / b1.J
        a2 = (abs(tau_2) + b2.k_ground * (abs(phi_2) + abs(b2.phi_rest)) + b2.d_ground * abs(w_2)) / b2.J
        return 64.0 * _EPS * max(a1 / self.r + a2, 1e-300)
