"""Piecewise-affine (PWA) spring-damper oscillators with exact region switching.

Reiter, *Nonlinear drivetrain elements* (seed ``reiter-nonlinear-drivetrain-elements-
thesis.txt``), chapter 3.

Characteristic (eq. 28 spring, eq. 34 damper).  Symmetric in its argument s:
    F(s) = k_i s + sign(s) F_off,i     for s_i < |s| <= s_(i+1)   (region i = 0..N-1)
with breakpoints 0 = s_0 < s_1 < ... < s_(N-1) and the offsets derived so that F is
continuous:  F_off,0 = 0,  F_off,i = F_off,(i-1) + (k_(i-1) - k_i) s_i.
(Table 2 prints the offsets rounded: [0, -0.047, -0.147, -1.347]; continuity gives
[0, -0.0475, -0.1475, -1.3475].)

Oscillator.  m x'' + D(x') + F(x) + F_c sgn(x') = u with u held over each step
(zero-order hold).  Inside one spring region i (sign sx), damper region j (sign sv)
and friction direction sf the motion is affine (eq. 32, 36, 79):
    x' = A_ij x + c,   A_ij = [[0, 1], [-k_i/m, -d_j/m]],
    c = [0, (u - sx F_off,i - sv D_off,j - sf F_c) / m]
with the equilibrium x_eq = [(u - sx F_off,i - sv D_off,j - sf F_c)/k_i, 0].
The exact solution is x(t) = x_eq + Phi(t) (x0 - x_eq), Phi(t) = exp(A t) (eq. 25-26):
this is the shift / propagate / shift back of eq. 81-83, exact inside a region.

Region switching (ch. 2.2.4, eq. 84-90, ch. 3.2.4).  The thesis estimates the
crossing fraction eta of a step with the delta approximation (eq. 90), samples at the
crossing and carries the missing time (1 - eta) T_d in a buffer so that the fixed grid
is kept.  Here the crossing instant is located exactly instead: every region boundary
(and zero speed while Coulomb friction acts) is a linear function g(t) = l^T x(t) - s
of the closed-form solution; the extrema of g are known in closed form (roots of
g'(t) = e^(mu t) (a C(t) + b S(t))), which splits the step into intervals where g is
monotone, and the first sign change is refined by Brent's method to machine
precision.  The step continues from the crossing with the new region's law for the
remaining time, so every call still ends exactly at t + h: the deferred-time buffer
becomes the remaining time of the same call.

Coulomb friction in the damper (ch. 3.2.4, Table 9) is handled like a clutch: when the
speed reaches zero the mass sticks if the static friction F_c can hold the remaining
force u - F(x) (the damper force is zero at zero speed); a stuck mass stays exactly at
rest until that force exceeds F_c, re-tested at every step (u is constant within one).

The baselines of the thesis's comparison (section 3.2.1-3.2.2) and the scipy reference
are in :mod:`systems.catalog.pwa_methods`: they use numpy and scipy, which the FMUs do not ship.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from .contract import StepError, StepResult, check_step
from .exponential import exp_pair, expm2

MAX_EVENTS_PER_STEP = 10_000
_EPS = 2.220446049250313e-16


def _sign(value: float) -> float:
    return 1.0 if value > 0.0 else (-1.0 if value < 0.0 else 0.0)


# ---------------------------------------------------------------------- characteristic
@dataclass(frozen=True)
class Characteristic:
    """Symmetric continuous piecewise-affine characteristic (Reiter eq. 28 / 34).

    breakpoints : (0, s_1, ..., s_(N-1)), strictly increasing, first one 0
    slopes      : (k_0, ..., k_(N-1)), one per region
    """

    breakpoints: tuple[float, ...]
    slopes: tuple[float, ...]
    offsets: tuple[float, ...] = field(init=False)

    def __post_init__(self):
        bps, ks = tuple(map(float, self.breakpoints)), tuple(map(float, self.slopes))
        if not ks:
            raise ValueError("slopes: at least one region is needed")
        if len(bps) != len(ks):
            raise ValueError(f"breakpoints {bps} and slopes {ks} must have the same length "
                             "(one breakpoint, starting with 0, per region)")
        if bps[0] != 0.0:
            raise ValueError(f"breakpoints[0] = {bps[0]} must be 0 (regions are defined on |s|)")
        for i in range(1, len(bps)):
            if not (bps[i] > bps[i - 1] and math.isfinite(bps[i])):
                raise ValueError(f"breakpoints[{i}] = {bps[i]} must be finite and greater than "
                                 f"breakpoints[{i - 1}] = {bps[i - 1]}")
        for i, k in enumerate(ks):
            if not math.isfinite(k):
                raise ValueError(f"slopes[{i}] = {k} must be finite")
        offsets = [0.0]
        for i in range(1, len(ks)):  # continuity at s_i
            offsets.append(offsets[-1] + (ks[i - 1] - ks[i]) * bps[i])
        object.__setattr__(self, "breakpoints", bps)
        object.__setattr__(self, "slopes", ks)
        object.__setattr__(self, "offsets", tuple(offsets))

    @classmethod
    def linear(cls, slope: float) -> "Characteristic":
        return cls((0.0,), (slope,))

    @property
    def n_regions(self) -> int:
        return len(self.slopes)

    def region(self, s: float, direction: float = 0.0) -> int:
        """Region index of s (eq. 28: s_i < |s| <= s_(i+1)); on a breakpoint the region the
        motion enters (``direction`` = ds/dt) decides, so a crossing is not counted twice."""
        a = abs(s)
        bps = self.breakpoints
        i = 0
        while i + 1 < len(bps) and a > bps[i + 1]:
            i += 1
        if i + 1 < len(bps) and a == bps[i + 1] and s * direction > 0.0:
            i += 1  # exactly on s_(i+1) and moving outwards
        return i

    def value(self, s: float) -> float:
        i = self.region(s)
        return self.slopes[i] * s + _sign(s) * self.offsets[i]

    def potential(self, s: float) -> float:
        """Integral of F from 0 to s (the stored energy of a spring, eq. 93)."""
        a = abs(s)
        energy, ks, bps = 0.0, self.slopes, self.breakpoints
        for i in range(len(ks)):
            lo = bps[i]
            hi = bps[i + 1] if i + 1 < len(bps) else math.inf
            if a <= lo:
                break
            top = min(a, hi)
            f_lo = ks[i] * lo + self.offsets[i]
            f_top = ks[i] * top + self.offsets[i]
            energy += 0.5 * (f_lo + f_top) * (top - lo)
        return energy


# ------------------------------------------------------------------ oscillator
@dataclass(frozen=True)
class OscillatorState:
    """x [m or rad], v [m/s or rad/s]; ``stuck`` while Coulomb friction holds the mass."""

    x: float
    v: float
    stuck: bool = False


@dataclass(frozen=True)
class _Law:
    """Affine law of one region: A = [[0, 1], [a21, a22]], equilibrium (x_eq, 0)."""

    a21: float
    a22: float
    x_eq: float


class PwaOscillator:
    """m x'' + D(x') + F(x) + F_c sgn(x') = u  (Reiter eq. 30-36 and ch. 3.2.4).

    mass    m > 0
    spring  :class:`Characteristic` F(x), every slope > 0
    damper  :class:`Characteristic` D(v), slopes >= 0 (default: none)
    coulomb F_c >= 0, static = kinetic Coulomb friction of the damper (default 0)
    """

    def __init__(self, mass: float, spring: Characteristic, damper: Characteristic | None = None,
                 coulomb: float = 0.0):
        if not (mass > 0.0 and math.isfinite(mass)):
            raise ValueError(f"mass = {mass!r} must be finite and > 0")
        for i, k in enumerate(spring.slopes):
            if not k > 0.0:
                raise ValueError(f"spring slope k_{i} = {k!r} must be > 0")
        damper = damper or Characteristic.linear(0.0)
        for i, d in enumerate(damper.slopes):
            if not d >= 0.0:
                raise ValueError(f"damper slope d_{i} = {d!r} must be >= 0")
        if not (coulomb >= 0.0 and math.isfinite(coulomb)):
            raise ValueError(f"coulomb = {coulomb!r} must be finite and >= 0")
        self.mass, self.spring, self.damper, self.coulomb = float(mass), spring, damper, float(coulomb)

    # -- forces and energy
    def acceleration(self, x: float, v: float, u: float, sf: float) -> float:
        return (u - self.spring.value(x) - self.damper.value(v) - sf * self.coulomb) / self.mass

    def energy(self, x: float, v: float) -> float:
        """Kinetic plus spring energy (eq. 91-93)."""
        return 0.5 * self.mass * v * v + self.spring.potential(x)

    def rhs(self, t, y, u: float):
        """Continuous right-hand side for a reference integrator (friction direction sgn v)."""
        return (y[1], self.acceleration(y[0], y[1], u, _sign(y[1])))

    # -- regimes
    def friction_direction(self, x: float, v: float, u: float, stuck: bool) -> float:
        """+1/-1 sliding direction, 0 while stuck (Karnopp test at v == 0)."""
        if v != 0.0:
            return _sign(v)
        if self.coulomb == 0.0:
            return 0.0
        drive = u - self.spring.value(x)  # the damper force is zero at zero speed
        return 0.0 if abs(drive) <= self.coulomb else _sign(drive)

    def _law(self, i: int, sx: float, j: int, sv: float, sf: float, u: float) -> _Law:
        k, d, m = self.spring.slopes[i], self.damper.slopes[j], self.mass
        drive = u - sx * self.spring.offsets[i] - sv * self.damper.offsets[j] - sf * self.coulomb
        return _Law(-k / m, -d / m, drive / k)

    def _regime(self, x, v, u, sf):
        """Spring/damper regions and signs for the motion leaving the state (x, v)."""
        a = self.acceleration(x, v, u, sf)
        i = self.spring.region(x, v if v != 0.0 else a)
        j = self.damper.region(v, a)
        sx = _sign(x) if x != 0.0 else _sign(v if v != 0.0 else a)
        sv = _sign(v) if v != 0.0 else _sign(a)
        return i, sx, j, sv

    def _boundaries(self, i, sx, j, sv, sf):
        """Event functions g = w * (l . x) - level, positive inside the regime:
        tuples (component, weight, level, kind)."""
        out = []
        for comp, ch, r, s in ((0, self.spring, i, sx), (1, self.damper, j, sv)):
            bps = ch.breakpoints
            if r == 0:
                if len(bps) > 1:
                    out.append((comp, 1.0, -bps[1], ("up", comp)))     # s > -s_1
                    out.append((comp, -1.0, -bps[1], ("up", comp)))    # s < +s_1
            else:
                out.append((comp, s, bps[r], ("down", comp)))           # |s| > s_r
                if r + 1 < len(bps):
                    out.append((comp, -s, -bps[r + 1], ("up", comp)))  # |s| < s_(r+1)
        if sf != 0.0:
            out.append((1, sf, 0.0, ("stop", 1)))                       # moving on
        return out

    # -- stepping
    def step(self, state: OscillatorState, u: float, h: float) -> StepResult:
        """Advance by h with the input u held; every switch inside the step is exact."""
        check_step(h, u=u)
        x, v, t = state.x, state.v, 0.0
        events = []
        while True:
            if self.coulomb == 0.0:
                sf = 0.0
            elif v != 0.0:
                sf = _sign(v)
            else:  # Karnopp test at rest: stuck for the rest of the step (u is constant)
                sf = self.friction_direction(x, 0.0, u, True)
                if sf == 0.0:
                    return StepResult(OscillatorState(x, 0.0, True), tuple(events))
            i, sx, j, sv = self._regime(x, v, u, sf)
            law = self._law(i, sx, j, sv, sf, u)
            remaining = h - t
            hit = self._first_event(law, x, v, remaining, self._boundaries(i, sx, j, sv, sf))
            if hit is None:
                x, v = _propagate(law, x, v, remaining)
                return StepResult(OscillatorState(x, v, False), tuple(events))
            tau, comp, level_value = hit
            x, v = _propagate(law, x, v, tau)
            if comp == 0:
                x = level_value
            else:
                v = level_value
            t += tau
            events.append((t, x, v))
            if len(events) > MAX_EVENTS_PER_STEP:
                raise StepError(f"more than {MAX_EVENTS_PER_STEP} region switches in one step")

    @staticmethod
    def _first_event(law: _Law, x, v, horizon, boundaries):
        """Earliest crossing in (0, horizon]: (time, component, exact value there)."""
        z0, z1 = x - law.x_eq, v
        if z0 == 0.0 and z1 == 0.0:
            return None  # at the region's equilibrium: no motion
        mu = 0.5 * law.a22
        q2 = mu * mu + law.a21  # mu^2 - det(A), det(A) = -a21
        best = None
        for comp, w, level, _kind in boundaries:
            # g(t) = w * (x_eq_comp + e^(mu t)(C a + S b)) - level
            base = (law.x_eq if comp == 0 else 0.0)
            if comp == 0:
                a, b = z0, (-mu) * z0 + z1
                da, db = z1, law.a21 * z0 + (law.a22 - mu) * z1          # g'/w coefficients
            else:
                a, b = z1, law.a21 * z0 + (law.a22 - mu) * z1
                dv = law.a21 * z0 + law.a22 * z1                          # v'(0)
                da, db = dv, law.a21 * z1 + (law.a22 - mu) * dv
            limit = horizon if best is None else best[0]
            g0 = w * (x if comp == 0 else v) - level
            # |e^(mu t)(da C + db S)| <= |da| + |db| t on [0, limit] (mu <= 0): the component
            # moves at most this far, so a boundary further away cannot be reached
            if g0 > limit * (abs(da) + abs(db) * limit):
                continue
            g = _EventFunction(w, base, level, mu, q2, a, b, da, db)
            root = g.first_root(limit, g0)
            if root is not None and (best is None or root < best[0]):
                best = (root, comp, (level / w))
        return best


def _propagate(law: _Law, x, v, t):
    """Exact affine motion over t: shift, Phi(t), shift back (eq. 81-83)."""
    p11, p12, p21, p22 = expm2(0.0, 1.0, law.a21, law.a22, t)
    z0 = x - law.x_eq
    return law.x_eq + p11 * z0 + p12 * v, p21 * z0 + p22 * v


class _EventFunction:
    """g(t) = w (base + e^(mu t)(a C(t) + b S(t))) - level with g'(t) = w e^(mu t)(da C + db S)."""

    __slots__ = ("w", "base", "level", "mu", "q2", "a", "b", "da", "db")

    def __init__(self, w, base, level, mu, q2, a, b, da, db):
        self.w, self.base, self.level, self.mu, self.q2 = w, base, level, mu, q2
        self.a, self.b, self.da, self.db = a, b, da, db

    def __call__(self, t):
        c, s = exp_pair(self.mu, self.q2, t)
        return self.w * (self.base + self.a * c + self.b * s) - self.level

    def slope(self, t):
        c, s = exp_pair(self.mu, self.q2, t)
        return self.w * (self.da * c + self.db * s)

    def _extrema(self, horizon):
        """Roots of da C(t) + db S(t) in (0, horizon), ascending (closed form)."""
        da, db, q2 = self.da, self.db, self.q2
        if q2 < 0.0:
            om = math.sqrt(-q2)
            beta = db / om                   # da cos + beta sin = 0
            if da == 0.0 and beta == 0.0:
                return []
            first = math.atan2(-da, beta) % math.pi    # omega t in [0, pi)
            roots, n = [], 0
            while True:
                tr = (first + n * math.pi) / om
                if tr >= horizon:
                    return roots
                if tr > 0.0:
                    roots.append(tr)
                n += 1
        if q2 > 0.0:
            q = math.sqrt(q2)                # da cosh + (db/q) sinh = 0 -> tanh(q t) = -da q / db
            if db == 0.0:
                return []
            ratio = -da * q / db
            if 0.0 < ratio < 1.0:
                tr = math.atanh(ratio) / q
                return [tr] if tr < horizon else []
            return []
        if db == 0.0:
            return []
        tr = -da / db
        return [tr] if 0.0 < tr < horizon else []

    def first_root(self, horizon, g0):
        """First instant in (0, horizon] where g crosses zero downwards; ``g0`` is g(0)
        evaluated on the state itself (no shift/unshift rounding)."""
        slope0 = self.slope(0.0)
        if (g0 < 0.0 and slope0 <= 0.0) or (g0 == 0.0 and slope0 < 0.0):
            return 0.0  # leaving through this boundary right now (a hair outside: rounding)
        points = [0.0] + self._extrema(horizon) + [horizon]
        g_lo = max(g0, 0.0)
        for lo, hi in zip(points[:-1], points[1:]):
            g_hi = self(hi)
            if g_hi < 0.0 and g_lo > 0.0:
                return self._monotone_root(lo, g_lo, hi)
            if g_hi == 0.0 and g_lo > 0.0 and (hi == horizon or self.slope(hi) < 0.0):
                return hi
            g_lo = g_hi
        return None

    def _monotone_root(self, lo, g_lo, hi):
        """Root of the decreasing g on [lo, hi] (g(lo) > 0 > g(hi)): Newton steps with the
        analytic slope, kept inside the shrinking bracket by bisection, to rounding."""
        t = lo - g_lo / self.slope(lo) if self.slope(lo) < 0.0 else 0.5 * (lo + hi)
        for _ in range(200):
            if not lo < t < hi:
                t = 0.5 * (lo + hi)
            g = self(t)
            if g > 0.0:
                lo = t
            elif g < 0.0:
                hi = t
            else:
                return t
            if hi - lo <= 4.0 * _EPS * hi:
                return hi
            slope = self.slope(t)
            t = t - g / slope if slope < 0.0 else 0.5 * (lo + hi)
        return hi
