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

Baselines of the thesis's comparison (section 3.2.1-3.2.2) are in :data:`METHODS`, each
a factory ``make(oscillator, h) -> step(x, v, u) -> (x, v)`` with its matrices computed
once: explicit Euler (eq. 43), constant nonlinearity per step (eq. 58-68) with and
without the internal linear stiffness (eq. 69-72), online coordinate shifting
(eq. 73-78), matrix-exponential approximation (eq. 46-52), switching affine models
without step adjustment (eq. 79-83) and with exact switching (this module's step).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from .friction import StepError, check_step

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


# ------------------------------------------------------------------ 2x2 exponentials
def expm2(a11, a12, a21, a22, t):
    """exp(A t) of a 2x2 matrix in closed form (Cayley-Hamilton):
    exp(A t) = e^(mu t) (C(t) I + S(t) (A - mu I)),  mu = tr(A)/2,  q^2 = mu^2 - det(A),
    C = cosh(q t), S = sinh(q t)/q  (q^2 > 0);  cos, sin/omega (q^2 < 0);  1, t (q^2 = 0)."""
    mu = 0.5 * (a11 + a22)
    q2 = mu * mu - (a11 * a22 - a12 * a21)
    c, s = _ecs(mu, q2, t)
    return (c + s * (a11 - mu), s * a12, s * a21, c + s * (a22 - mu))


def _ecs(mu, q2, t):
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


def zoh(A: np.ndarray, h: float) -> tuple[np.ndarray, np.ndarray]:
    """Exact zero-order-hold matrices Phi = exp(A h) and L = int_0^h exp(A s) ds (eq. 66),
    from one exponential of the block matrix [[A, I], [0, 0]] (Van Loan 1978)."""
    from scipy.linalg import expm

    n = A.shape[0]
    block = np.zeros((2 * n, 2 * n))
    block[:n, :n] = A
    block[:n, n:] = np.eye(n)
    E = expm(block * h)
    return E[:n, :n], E[:n, n:]


# ------------------------------------------------------------------ oscillator
@dataclass(frozen=True)
class OscillatorState:
    """x [m or rad], v [m/s or rad/s]; ``stuck`` while Coulomb friction holds the mass."""

    x: float
    v: float
    stuck: bool = False


@dataclass(frozen=True)
class StepResult:
    """The state after the step and the switches inside it: ``events`` holds
    (time from the step start, x, v) at each region switch or stop, in order."""

    state: OscillatorState
    events: tuple[tuple[float, float, float], ...] = ()

    @property
    def n_events(self) -> int:
        return len(self.events)


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
        c, s = _ecs(self.mu, self.q2, t)
        return self.w * (self.base + self.a * c + self.b * s) - self.level

    def slope(self, t):
        c, s = _ecs(self.mu, self.q2, t)
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


# ------------------------------------------------------------------ discretisation methods
Stepper = Callable[[float, float, float], tuple[float, float]]


def _linear_damping(osc: PwaOscillator, method: str) -> float:
    if osc.damper.n_regions != 1 or osc.coulomb != 0.0:
        raise ValueError(f"method {method!r} is defined for a linear damper without Coulomb "
                         "friction (Reiter section 3.2.2)")
    return osc.damper.slopes[0]


def make_euler(osc: PwaOscillator, h: float) -> Stepper:
    """Explicit Euler, eq. 41-43."""
    m = osc.mass

    def step(x, v, u):
        a = (u - osc.spring.value(x) - osc.damper.value(v) - osc.coulomb * _sign(v)) / m
        return x + h * v, v + h * a
    return step


def _zoh_for(m, k, d, h):
    A = np.array([[0.0, 1.0], [-k / m, -d / m]])
    Phi, L = zoh(A, h)
    return Phi, L


def make_constant_nonlinearity(osc: PwaOscillator, h: float, internal_stiffness: float | None = 0.0) -> Stepper:
    """Spring force held constant over the step (eq. 58-68); with ``internal_stiffness``
    c_bar > 0 only the deviation F(x) - c_bar x is held (eq. 69-72)."""
    d, m = _linear_damping(osc, "constant_nonlinearity"), osc.mass
    cbar = float(internal_stiffness or 0.0)
    Phi, L = _zoh_for(m, cbar, d, h)
    p11, p12, p21, p22 = Phi.ravel()
    l12, l22 = L[0, 1] / m, L[1, 1] / m   # L [0, 1/m]^T

    def step(x, v, u):
        drive = u - (osc.spring.value(x) - cbar * x)  # u + zeta_k m (eq. 67-68, 71)
        return p11 * x + p12 * v + l12 * drive, p21 * x + p22 * v + l22 * drive
    return step


def make_coordinate_shifting(osc: PwaOscillator, h: float, internal_stiffness: float | None = None) -> Stepper:
    """Online coordinate shifting (eq. 73-78): the deflection is replaced by the one at
    which the linear spring c_bar gives F(x) (eq. 77), propagated with Phi_lin (eq. 78),
    and the shift is undone on the deflection afterwards (the shift is only for the
    computation, as in eq. 81-83)."""
    d, m = _linear_damping(osc, "coordinate_shifting"), osc.mass
    cbar = float(internal_stiffness or osc.spring.slopes[0])
    Phi, L = _zoh_for(m, cbar, d, h)
    p11, p12, p21, p22 = Phi.ravel()
    l12, l22 = L[0, 1] / m, L[1, 1] / m

    def step(x, v, u):
        xs = osc.spring.value(x) / cbar                  # eq. 77
        x_new = p11 * xs + p12 * v + l12 * u             # eq. 78
        v_new = p21 * xs + p22 * v + l22 * u
        return x_new + (x - xs), v_new
    return step


def make_matrix_exponential(osc: PwaOscillator, h: float, n_m: int = 10) -> Stepper:
    """Matrix-exponential approximation (eq. 46-52) with N_M sub-products."""
    m, hk = osc.mass, h / n_m

    def step(x, v, u):
        i = osc.spring.region(x, v)
        j = osc.damper.region(v)
        a = (u - osc.spring.value(x) - osc.damper.value(v) - osc.coulomb * _sign(v)) / m
        M = np.array([[1.0, hk, hk * v],
                      [-hk * osc.spring.slopes[i] / m, 1.0 - hk * osc.damper.slopes[j] / m, hk * a],
                      [0.0, 0.0, 1.0]])
        P = np.linalg.matrix_power(M, n_m)
        return x + P[0, 2], v + P[1, 2]
    return step


def make_switching(osc: PwaOscillator, h: float) -> Stepper:
    """Switching affine models without step adjustment (eq. 79-83): the region of x_k
    is used for the whole step, with Phi_j(T_d) computed once per region."""
    if osc.coulomb != 0.0:
        raise ValueError("method 'switching' is defined without Coulomb friction")
    phis = {}

    def step(x, v, u):
        i, sx, j, sv = osc._regime(x, v, u, 0.0)
        law = osc._law(i, sx, j, sv, 0.0, u)
        key = (i, j)
        if key not in phis:
            phis[key] = expm2(0.0, 1.0, law.a21, law.a22, h)
        p11, p12, p21, p22 = phis[key]
        z0 = x - law.x_eq
        return law.x_eq + p11 * z0 + p12 * v, p21 * z0 + p22 * v
    return step


def make_exact_switching(osc: PwaOscillator, h: float) -> Stepper:
    """Switching affine models with every switch located exactly inside the step."""
    state = {"stuck": False}

    def step(x, v, u):
        res = osc.step(OscillatorState(x, v, state["stuck"]), u, h).state
        state["stuck"] = res.stuck
        return res.x, res.v
    return step


def make_linear(osc: PwaOscillator, h: float) -> Stepper:
    """The plain linear discrete system x+ = Phi x + H u with the first-region stiffness:
    the cost baseline of Table 7 (not a method for the nonlinear spring)."""
    d, m = osc.damper.slopes[0], osc.mass
    Phi, L = _zoh_for(m, osc.spring.slopes[0], d, h)
    p11, p12, p21, p22 = Phi.ravel()
    l12, l22 = L[0, 1] / m, L[1, 1] / m

    def step(x, v, u):
        return p11 * x + p12 * v + l12 * u, p21 * x + p22 * v + l22 * u
    return step


METHODS: dict[str, Callable[..., Stepper]] = {
    "euler": make_euler,
    "constant_nonlinearity": make_constant_nonlinearity,
    "constant_nonlinearity_internal": lambda osc, h: make_constant_nonlinearity(osc, h, osc.spring.slopes[0]),
    "coordinate_shifting": make_coordinate_shifting,
    "matrix_exponential": make_matrix_exponential,
    "switching": make_switching,
    "switching_exact": make_exact_switching,
}


@dataclass(frozen=True)
class Trajectory:
    t: np.ndarray
    x: np.ndarray
    v: np.ndarray


def simulate(stepper: Stepper, x0: float, v0: float, h: float, n_steps: int,
             u: Callable[[float], float] | None = None) -> Trajectory:
    """Run a stepper on the grid t_k = k h with u(t_k) held over each step."""
    xs, vs = np.empty(n_steps + 1), np.empty(n_steps + 1)
    x, v = float(x0), float(v0)
    xs[0], vs[0] = x, v
    for k in range(n_steps):
        x, v = stepper(x, v, 0.0 if u is None else u(k * h))
        xs[k + 1], vs[k + 1] = x, v
    return Trajectory(np.arange(n_steps + 1) * h, xs, vs)


def reference(osc: PwaOscillator, x0: float, v0: float, h: float, n_steps: int,
              u: Callable[[float], float] | None = None, rtol: float = 1e-10,
              atol: float = 1e-12) -> Trajectory:
    """Independent reference: scipy's DOP853 on the continuous equations, the input held
    over each step, restarted at every breakpoint crossing (terminal events on the
    spring and damper breakpoints and, with Coulomb friction, on zero speed followed by
    the same stick test)."""
    from scipy.integrate import solve_ivp

    xs, vs = np.empty(n_steps + 1), np.empty(n_steps + 1)
    x, v = float(x0), float(v0)
    xs[0], vs[0] = x, v
    levels_x = [s for b in osc.spring.breakpoints[1:] for s in (b, -b)]
    levels_v = [s for b in osc.damper.breakpoints[1:] for s in (b, -b)]
    for k in range(n_steps):
        uk = 0.0 if u is None else u(k * h)
        t, t_end = 0.0, h
        while t < t_end:
            sf = osc.friction_direction(x, v, uk, True) if v == 0.0 else _sign(v)
            if osc.coulomb > 0.0 and sf == 0.0:
                v = 0.0
                break  # stuck for the rest of this step
            a0 = osc.acceleration(x, v, uk, sf)

            def f(_t, y):
                return (y[1], osc.acceleration(y[0], y[1], uk, sf))

            events = []
            for lv in levels_x:
                ev = (lambda lv: lambda _t, y: y[0] - lv)(lv)
                ev.terminal = True
                events.append(ev)
            for lv in levels_v:
                ev = (lambda lv: lambda _t, y: y[1] - lv)(lv)
                ev.terminal = True
                events.append(ev)
            if osc.coulomb > 0.0:
                ev = lambda _t, y: y[1]
                ev.terminal = True
                ev.direction = -sf
                events.append(ev)
            # an event at the start point (just crossed) must not stop the integration
            sol = solve_ivp(f, (t, t_end), (x, v), method="DOP853", rtol=rtol, atol=atol,
                            events=events if events else None)
            x, v = float(sol.y[0, -1]), float(sol.y[1, -1])
            if sol.status == 1 and sol.t[-1] - t <= 1e-14 * h:
                # stopped on the starting boundary: at rest in equilibrium there it stays for
                # the step; otherwise leave it by integrating a short stretch without events
                if v == 0.0 and a0 == 0.0:
                    break
                leave = solve_ivp(f, (t, t + 1e-6 * (t_end - t)), (x, v), method="DOP853", rtol=rtol, atol=atol)
                x, v, t = float(leave.y[0, -1]), float(leave.y[1, -1]), float(leave.t[-1])
                continue
            t = float(sol.t[-1])
            if osc.coulomb > 0.0 and sol.status == 1 and sol.t_events[-1].size:
                v = 0.0
        xs[k + 1], vs[k + 1] = x, v
    return Trajectory(np.arange(n_steps + 1) * h, xs, vs)


def discrete_energy(osc: PwaOscillator, x: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Discrete system energy of eq. 94-96: kinetic energy plus the spring work summed
    with the trapezoidal rule over the sample sequence."""
    forces = np.array([osc.spring.value(s) for s in x])
    work = np.concatenate(([0.0], np.cumsum(0.5 * (forces[1:] + forces[:-1]) * np.diff(x))))
    return 0.5 * osc.mass * v * v + osc.spring.potential(x[0]) + work
