"""Planar longitudinal vehicle with pitch and tire stick/slip (Fan, Walker & Wang 2017).

Coordinates (eq. 1-2): q = [x1, y1, th1, x_f, y_f, th_f, x_r, y_r, th_r]: body centre of
mass and pitch (nose up positive), front and rear wheel centres and wheel angles
(positive rolling forward: the slip speed is v_r = x' - R th', eq. 3).  x points in the
direction of travel, y up; the front wheel sits a ahead of the body centre, the rear
wheel b behind.

Translational joints (eq. 1) along the body's vertical axis n = (-sin th1, cos th1)
through the points at +a and -b on the body axis u = (cos th1, sin th1):
    f_f = (p_f - p_1) . u - a = 0,     f_r = (p_r - p_1) . u + b = 0,
enforced with Lagrange multipliers and Baumgarte's stabilisation (eq. 23)
    Phi_q q'' = -(Phi_q)' q' - alpha Phi' - beta Phi.
Suspension along n: spring length L_i = -(p_i - p_1) . n, force k (L0_i - L_i) - c L_i'
pushing the body up and the wheel down; L0_i is chosen so that the body rests at the
design height h over the wheel centres under its static axle load (m1 g b/(a+b) front,
m1 g a/(a+b) rear).  Tire normal force (eq. 5): F_N = K d + C d' with penetration
d = R - y_i, C = 2 zeta sqrt(m_wheel K), and never pulling: F_N = max(0, .) (a wheel may lift).

Tangential contacts (eq. 3-4, 7), four of them: tire slip and rolling resistance of
each wheel, with relative speeds g = W^T q' (slip: x_i' - R th_i'; rolling: th_i').
Sliding: kinetic force -mu F_N sgn(g) (slip) or -delta F_N sgn(g) (rolling).  Stuck
(g = 0): the force keeps g' = 0 while |force| <= capacity (mu_0 F_N or delta F_N).

Both wheels stuck make the joint and contact constraints redundant (the horizontal
force split between the axles of a rigid chassis is statically indeterminate): the
minimum-norm multipliers are taken then.  The constraints' Schur complement C M^-1 C^T
is symmetric positive semidefinite, so every multiplier system is solved by Cholesky with
complete pivoting, which finds the redundancy as a rank below the number of
constraints, and the minimum-norm solution (solvers.dense).

Event-driven scheme (section 3): between events the mode of every contact is fixed and
the motion is smooth (DOPRI5 with event location, solvers.ode); events are a sliding
contact reaching zero relative speed and a stuck force reaching its capacity.  At an
event the contacts at zero relative speed are resolved by the LCP of eq. 31 (Lemke,
solvers.lcp): stick, or slide in the direction of the relative acceleration.
A contact that sticks has its relative speed set to exactly zero by the smallest
mass-weighted velocity correction, and is held at g' = -alpha g (velocity stabilisation).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, fields
from typing import NamedTuple

from .budget import Budget
from .dense import dot, identity, matmul, matvec, min_norm_solve, pivoted_cholesky, transpose
from .contract import GRAVITY, StepResult, check_step
from .friction import BACKWARD, FORWARD, FREE, STUCK, Mode
from .lcp import LcpError, lemke
from .ode import IntegrationError, integrate
from .vehicle_closed_form import closed_form_dynamics, closed_form_snap

CONTACTS = ("slip_f", "roll_f", "slip_r", "roll_r")
#: Stick/slip events of one step (each an LCP, a velocity projection and a restart of the
#: integration, about 1 ms of CPU here).  Floor 50, 5 x 10^3 per second of step, cap 500
#: (about 0.5 s of CPU).  Measured on the catalog (report of issue 17): at most one event
#: in one step (F3, F3 with harmonics).
EVENT_BUDGET = Budget("stick/slip events", 50, 5e3, 500)
#: Attempted integration steps of one step, all phases together, with the steps that locate
#: events (each seven evaluations of the constrained dynamics: 0.5 ms here unloaded, 2.5 ms
#: measured on a loaded machine with stuck contacts).  Floor 200, 10^4 per second of step:
#: DOPRI5's stability bound (3.3 / step) then admits modes up to 3.3e4 1/s in a step of any
#: length (the seed's tire hop is sqrt(k_tire / m_wheel) = 71 rad/s; the catalog takes at
#: most 5 in one step); cap 1000 (0.5-2.5 s of CPU).
SUBSTEP_BUDGET = Budget("integration steps", 200, 1e4, 1000)


_ADVICE = ("take a smaller communication step, or make the vehicle less stiff (the tire hop "
           "sqrt(k_tire / m_wheel), the suspension's c_susp / m_wheel, the Baumgarte gains alpha_bg, beta_bg)")


def _parameter(default: float, unit: str | None, description: str, kind: str = "nonnegative"):
    """A field of :class:`VehicleParams` with its declaration: unit, one-line description and
    ``kind``, its range: 'mass', 'inertia', 'positive' (> 0) or 'nonnegative' (>= 0).  The
    Vehicle FMU declares its parameters from these (fmus.vehicle, with the FMU-wide floors
    of fmus.variables for masses and inertias); :meth:`VehicleParams.problems` checks them."""
    return field(default=default, metadata={"unit": unit, "description": description, "kind": kind})


@dataclass(frozen=True)
class VehicleParams:
    """Seed values (Fan et al. section 4) as defaults; each field declares its unit,
    description and range (:func:`_parameter`), the relations between fields are
    :meth:`relation_problems`: the one statement of every rule, for the solver and the FMU."""

    m_body: float = _parameter(1400.0, "kg", "mass of the body", "mass")
    J_body: float = _parameter(1200.0, "kg.m2", "pitch inertia of the body", "inertia")
    m_wheel_f: float = _parameter(30.0, "kg", "mass of the front wheel", "mass")
    J_wheel_f: float = _parameter(2.0, "kg.m2", "inertia of the front wheel", "inertia")
    m_wheel_r: float = _parameter(30.0, "kg", "mass of the rear wheel", "mass")
    J_wheel_r: float = _parameter(2.0, "kg.m2", "inertia of the rear wheel", "inertia")
    a: float = _parameter(1.0, "m", "front axle ahead of the body centre of mass", "positive")
    b: float = _parameter(1.0, "m", "rear axle behind the body centre of mass", "positive")
    h: float = _parameter(0.6, "m", "design height of the body centre of mass (wheel centres at R)")
    R: float = _parameter(0.25, "m", "wheel radius", "positive")
    k_susp: float = _parameter(25e3, "N/m", "suspension stiffness per axle", "positive")
    c_susp: float = _parameter(3.5e3, "N.s/m", "suspension damping per axle")
    k_tire: float = _parameter(150e3, "N/m", "radial tire stiffness", "positive")
    zeta_tire: float = _parameter(0.05, None, "radial tire damping ratio")
    mu_s_road: float = _parameter(0.8, None, "static tire-road friction coefficient mu_0")
    mu_k_road: float = _parameter(0.75, None, "sliding tire-road friction coefficient mu (<= mu_0)")
    delta_roll: float = _parameter(0.005, "m", "rolling resistance arm delta (torque delta F_N)")
    alpha_bg: float = _parameter(30.0, "1/s", "Baumgarte velocity gain alpha")
    beta_bg: float = _parameter(30.0, "1/s2", "Baumgarte position gain beta")

    def problems(self) -> list[str]:
        """Messages naming every non-physical value (empty if all are fine): each field in
        its declared range, then the relations."""
        out = []
        for f in fields(self):
            value = getattr(self, f.name)
            if not math.isfinite(value):
                out.append(f"{f.name} = {value!r} is not finite")
            elif f.metadata["kind"] != "nonnegative" and not value > 0.0:
                out.append(f"{f.name} = {value!r} must be > 0")
            elif value < 0.0:
                out.append(f"{f.name} = {value!r} must be >= 0")
        return out + self.relation_problems()

    def relation_problems(self) -> list[str]:
        """Messages for the rules that relate fields (the FMU's cross-check: its variable
        ranges cover each field alone)."""
        out = []
        if self.mu_k_road > self.mu_s_road:
            out.append(f"mu_k_road = {self.mu_k_road!r} must not exceed mu_s_road = {self.mu_s_road!r}; "
                       "allowed range [0, mu_s_road]")
        if self.h <= self.R:
            out.append(f"h = {self.h!r} must exceed R = {self.R!r}; allowed range (R, inf) m")
        if all(0.0 < getattr(self, name) < math.inf for name in ("m_body", "a", "b", "k_susp")):
            # the suspension springs' free length is the design length plus the static sag
            sag = self.m_body * GRAVITY * max(self.a, self.b) / (self.a + self.b) / self.k_susp
            if not sag < math.inf:
                out.append(f"k_susp = {self.k_susp!r} N/m is too soft for m_body = {self.m_body!r} kg: the "
                           f"static suspension sag m_body g max(a, b) / ((a + b) k_susp) = {sag!r} m, and with "
                           "it the springs' free length, is beyond the floating-point range")
        return out


class VehicleState(NamedTuple):
    """q, q' and the contact modes."""

    q: tuple
    qd: tuple
    modes: tuple = (STUCK,) * 4

    def to_json(self):
        return [list(self.q), list(self.qd), [int(m) for m in self.modes]]

    @classmethod
    def from_json(cls, data):
        return cls(tuple(data[0]), tuple(data[1]), tuple(Mode(m) for m in data[2]))


class Forces(NamedTuple):
    """Everything the outputs need at one instant."""

    qdd: list
    normal: tuple          # F_N front, rear
    tangential: tuple      # contact forces in CONTACTS order (tire force, rolling torque, ...)
    capacity: tuple        # static capacities in CONTACTS order


def _within_capacity(tangential, capacity, contacts) -> bool:
    """True when |tangential[j]| <= capacity[j] for every contact j in ``contacts``."""
    for j in contacts:
        if not abs(tangential[j]) <= capacity[j]:
            return False
    return True


def _schur_complement(C, inv_mass):
    """Pivoted Cholesky factors of C M^-1 C^T (rows of C: constraint Jacobians; M^-1 =
    diag(inv_mass)), built exactly symmetric, and C M^-1.  With redundant constraints
    (both wheels stuck on a rigid chassis: the split of the tangential forces between the
    axles is statically indeterminate) the matrix is singular and :func:`min_norm_solve`
    gives the minimum-norm multipliers, which keep the accelerations unique and share the
    forces."""
    CMinv = [[c * m for c, m in zip(row, inv_mass)] for row in C]
    k = len(C)
    A = [[0.0] * k for _ in range(k)]
    for i, left in enumerate(CMinv):
        for j in range(i, k):
            A[i][j] = A[j][i] = dot(left, C[j])
    return pivoted_cholesky(A), CMinv


class PlanarVehicle:
    """Fan et al.'s vehicle body with two wheels (module docstring)."""

    N_COORDINATES = 9

    def __init__(self, params: VehicleParams):
        problems = params.problems()
        if problems:
            raise ValueError("; ".join(problems))
        self.p = p = params
        self.mass = [p.m_body, p.m_body, p.J_body, p.m_wheel_f, p.m_wheel_f, p.J_wheel_f,
                     p.m_wheel_r, p.m_wheel_r, p.J_wheel_r]
        self.inv_mass = [1.0 / m for m in self.mass]
        share_f = p.m_body * GRAVITY * p.b / (p.a + p.b)
        share_r = p.m_body * GRAVITY * p.a / (p.a + p.b)
        design = p.h - p.R
        self.free_length = (design + share_f / p.k_susp, design + share_r / p.k_susp)
        self.damping_tire = (2 * p.zeta_tire * math.sqrt(p.m_wheel_f * p.k_tire),
                             2 * p.zeta_tire * math.sqrt(p.m_wheel_r * p.k_tire))
        self.arm = (p.a, -p.b)
        # W^T (eq. 3-4), one row per contact in CONTACTS order: g_j = Wt[j] . q'
        Wt = [[0.0] * self.N_COORDINATES for _ in CONTACTS]
        Wt[0][3], Wt[0][5] = 1.0, -p.R         # slip front: x_f' - R th_f'
        Wt[1][5] = 1.0                         # rolling front: th_f'
        Wt[2][6], Wt[2][8] = 1.0, -p.R         # slip rear
        Wt[3][8] = 1.0                         # rolling rear
        self.Wt = Wt
        # the closed-form path (solvers.vehicle_closed_form) is this class's own dynamics; a subclass that
        # changes the coordinates, forces or contacts (systems.catalog.powered_vehicle) takes the
        # generic matrix path of forces()
        cls = type(self)
        self._fast = all(getattr(cls, name) is getattr(PlanarVehicle, name)
                         for name in ("N_COORDINATES", "applied", "capacities", "snap", "forces"))

    # ----------------------------------------------------------------- geometry
    def initial_state(self, x=0.0, v=0.0, w_wheel_f=None, w_wheel_r=None, settle=True) -> VehicleState:
        """Body at x, height h, level; wheels under the joints.  ``settle`` puts the tires
        at their static deflection (otherwise at y = R, the seed's initial state)."""
        q, qd = self._body_coordinates(x, v, w_wheel_f, w_wheel_r, settle)
        return VehicleState(tuple(q), tuple(qd), self._sliding_modes(qd))

    def _body_coordinates(self, x, v, w_wheel_f, w_wheel_r, settle):
        p = self.p
        y_f = y_r = p.R
        if settle:
            total = (p.m_body + p.m_wheel_f + p.m_wheel_r) * GRAVITY
            load_f = p.m_body * GRAVITY * p.b / (p.a + p.b) + p.m_wheel_f * GRAVITY
            y_f = p.R - load_f / p.k_tire
            y_r = p.R - (total - load_f) / p.k_tire
        if not abs(y_f - y_r) < p.a + p.b:
            raise ValueError(f"settle_start: the static tire deflections differ by {abs(y_f - y_r)!r} m, not less "
                             f"than the wheelbase a + b = {p.a + p.b!r} m (the axle line cannot pass through "
                             f"both wheel centres): k_tire = {p.k_tire!r} N/m is too soft for the masses m_body = "
                             f"{p.m_body!r}, m_wheel_f = {p.m_wheel_f!r}, m_wheel_r = {p.m_wheel_r!r} kg "
                             "(raise k_tire, or start with settle_start = false)")
        pitch = math.asin((y_f - y_r) / (p.a + p.b))       # the axle line through both joints
        y_axis = y_r + p.b / (p.a + p.b) * (y_f - y_r)       # under the centre of mass
        y_body = y_axis + (p.h - p.R) * math.cos(pitch)
        u = (math.cos(pitch), math.sin(pitch))
        n = (-u[1], u[0])
        L = p.h - p.R
        q = [x, y_body, pitch]
        for arm in self.arm:
            q += [x + arm * u[0] - L * n[0], y_body + arm * u[1] - L * n[1], 0.0]
        w_f = v / p.R if w_wheel_f is None else w_wheel_f
        w_r = v / p.R if w_wheel_r is None else w_wheel_r
        return q, [v, 0.0, 0.0, v, 0.0, w_f, v, 0.0, w_r]

    def relative_speeds(self, qd) -> list[float]:
        """g = W^T q' in CONTACTS order (slip speeds x' - R th', rolling speeds th')."""
        return [dot(w, qd) for w in self.Wt]

    def _sliding_modes(self, qd):
        return tuple(FORWARD if gi > 0 else (BACKWARD if gi < 0 else STUCK)
                     for gi in self.relative_speeds(qd))

    def constraints(self, q):
        """Phi (2), its Jacobian (2 x 9) and (Phi_q)' q' needs q' (see _joint_terms)."""
        x1, y1, th = q[0], q[1], q[2]
        c, s = math.cos(th), math.sin(th)
        phi, jac = [], []
        for arm, k in zip(self.arm, (3, 6)):
            dx, dy = q[k] - x1, q[k + 1] - y1
            phi.append(dx * c + dy * s - arm)
            row = [0.0] * self.N_COORDINATES
            row[0], row[1] = -c, -s
            row[2] = -dx * s + dy * c
            row[k], row[k + 1] = c, s
            jac.append(row)
        return phi, jac

    def _joint_terms(self, q, qd):
        """Phi, Phi_q and gamma = -(Phi_q)' q' - alpha Phi' - beta Phi (eq. 23)."""
        phi, jac = self.constraints(q)
        th, thd = q[2], qd[2]
        c, s = math.cos(th), math.sin(th)
        gamma = [0.0, 0.0]
        for i, k in enumerate((3, 6)):
            dx, dy = q[k] - q[0], q[k + 1] - q[1]
            dxd, dyd = qd[k] - qd[0], qd[k + 1] - qd[1]
            dd_dot_n = -dxd * s + dyd * c
            d_dot_u = dx * c + dy * s
            rest = 2.0 * thd * dd_dot_n - thd * thd * d_dot_u       # (Phi_q)' q'
            phi_dot = dot(jac[i], qd)
            gamma[i] = -rest - self.p.alpha_bg * phi_dot - self.p.beta_bg * phi[i]
        return phi, jac, gamma

    def applied(self, q, qd, tau_f, tau_r, t=0.0):
        """Smooth generalized forces Q (gravity, suspension, tires, drive) and F_N at time
        ``t`` (the body's forces do not depend on it; systems.catalog.powered_vehicle's engine torque does)."""
        p = self.p
        Q = [0.0] * self.N_COORDINATES
        Q[1] = -p.m_body * GRAVITY
        Q[4] = -p.m_wheel_f * GRAVITY
        Q[7] = -p.m_wheel_r * GRAVITY
        th, thd = q[2], qd[2]
        c, s = math.cos(th), math.sin(th)
        nx, ny = -s, c
        normal = []
        for i, (k, arm) in enumerate(zip((3, 6), self.arm)):
            dx, dy = q[k] - q[0], q[k + 1] - q[1]
            dxd, dyd = qd[k] - qd[0], qd[k + 1] - qd[1]
            length = -(dx * nx + dy * ny)
            length_rate = -(dxd * nx + dyd * ny) + thd * (dx * c + dy * s)
            push = p.k_susp * (self.free_length[i] - length) - p.c_susp * length_rate
            Q[0] += push * nx
            Q[1] += push * ny
            Q[2] += push * arm
            Q[k] -= push * nx
            Q[k + 1] -= push * ny
            penetration = p.R - q[k + 1]
            f_n = 0.0
            if penetration > 0.0:
                f_n = max(0.0, p.k_tire * penetration - self.damping_tire[i] * qd[k + 1])
            Q[k + 1] += f_n
            normal.append(f_n)
        Q[5] += tau_f
        Q[8] += tau_r
        return Q, normal

    def capacities(self, normal, static=True, qd=None):
        """Static (or, with ``static`` false, sliding) force bounds of the contacts;
        ``qd`` gives speed-dependent sliding levels (systems.catalog.powered_vehicle's Stribeck clutch)."""
        mu = self.p.mu_s_road if static else self.p.mu_k_road
        return (mu * normal[0], self.p.delta_roll * normal[0], mu * normal[1], self.p.delta_roll * normal[1])

    # ----------------------------------------------------------------- closed-form path
    def _fast_dynamics(self, modes, torque, last):
        """``evaluate(t, yy) -> y'`` (y = q, q') for fixed contact modes with the wheel
        torques ``torque`` = [tau_f, tau_r], which leaves ``last`` = [yy, tangential,
        static capacities, F_N, ...]: :meth:`forces` of this class in
        scalar closed form (solvers.vehicle_closed_form), or None when all four contacts
        stick (redundant constraints: the minimum-norm multipliers of the generic path)."""
        if all(m == STUCK for m in modes[:4]):
            return None
        p = self.p

        def matrix_path(t, yy):         # where the closed form's joint system lost its positivity
            f = self._matrix_forces(yy[:9], yy[9:], torque[0], torque[1], modes, t)
            last[0], last[1], last[2], last[3] = yy, f.tangential, f.capacity, f.normal
            return list(yy[9:]) + list(f.qdd)

        return closed_form_dynamics(*modes[:4], p.m_body, p.J_body, p.m_wheel_f, p.J_wheel_f, p.m_wheel_r,
                                    p.J_wheel_r, p.a, p.b, p.R, p.k_susp, p.c_susp, p.k_tire, *self.free_length,
                                    *self.damping_tire, p.mu_s_road, p.mu_k_road, p.delta_roll, p.alpha_bg,
                                    p.beta_bg, torque, last, matrix_path)

    # ----------------------------------------------------------------- dynamics
    def forces(self, q, qd, tau_f, tau_r, modes, t=0.0) -> Forces:
        """Accelerations and contact forces for fixed contact modes at time ``t``."""
        last = [None, None, None, None]
        evaluate = self._fast_dynamics(modes, [tau_f, tau_r], last) if self._fast else None
        if evaluate is None:
            return self._matrix_forces(q, qd, tau_f, tau_r, modes, t)
        qdd = evaluate(t, [float(v) for v in (*q, *qd)])[9:]
        return Forces(qdd, last[3], last[1], last[2])

    def _matrix_forces(self, q, qd, tau_f, tau_r, modes, t) -> Forces:
        """:meth:`forces` by the generic matrix path (minimum-norm multipliers)."""
        Q, normal = self.applied(q, qd, tau_f, tau_r, t)
        kinetic = self.capacities(normal, static=False, qd=qd)
        tangential = [0.0] * len(modes)
        for j, mode in enumerate(modes):
            if mode in (FORWARD, BACKWARD):
                tangential[j] = -kinetic[j] * int(mode)
                Q = [Qi + w * tangential[j] for Qi, w in zip(Q, self.Wt[j])]
        stuck = [j for j, mode in enumerate(modes) if mode == STUCK]
        _, jac, gamma = self._joint_terms(q, qd)
        # constraints C q'' = b (joints, eq. 23; stuck contacts held at g' = -alpha g) with
        # q'' = M^-1 (Q + C^T mu): the Schur complement C M^-1 C^T mu = b - C M^-1 Q
        C = jac + [self.Wt[j] for j in stuck]
        b = gamma + [-self.p.alpha_bg * dot(self.Wt[j], qd) for j in stuck]
        factors, CMinv = _schur_complement(C, self.inv_mass)
        mu = min_norm_solve(factors, [bi - v for bi, v in zip(b, matvec(CMinv, Q))])
        force = Q
        for row, mu_j in zip(C, mu):             # Q + C^T mu
            force = [f + mu_j * c for f, c in zip(force, row)]
        qdd = [m * f for m, f in zip(self.inv_mass, force)]
        for j, value in zip(stuck, mu[2:]):
            tangential[j] = value
        return Forces(qdd, tuple(normal), tuple(tangential), self.capacities(normal))

    def resolve(self, q, qd, tau_f, tau_r, modes, candidates, t=0.0):
        """New modes: the contacts in ``candidates`` (at zero relative speed) are decided
        together by the LCP of eq. 31; the others keep their mode."""
        if not candidates:
            return tuple(modes)
        base = tuple(FREE if j in candidates else m for j, m in enumerate(modes))
        free = self.forces(q, qd, tau_f, tau_r, base, t)   # candidate forces zero (FREE: no force)
        new = list(modes)
        for j in [j for j in candidates if free.capacity[j] <= 0.0]:
            new[j] = FREE          # no normal force: no friction until the next step or event
        candidates = [j for j in candidates if free.capacity[j] > 0.0]
        if not candidates:
            return tuple(new)
        # G = W_c^T S W_c with S the inverse mass under the joints and the other stuck contacts
        held = [j for j, m in enumerate(base) if m == STUCK]
        _, jac = self.constraints(q)
        factors, BMinv = _schur_complement(jac + [self.Wt[j] for j in held], self.inv_mass)
        # S = M^-1 - (B M^-1)^T (B M^-1 B^T)^+ B M^-1 (B: the bound rows), column by column
        multipliers = transpose([min_norm_solve(factors, column) for column in transpose(BMinv)])
        correction = matmul(transpose(BMinv), multipliers)
        S = [[(m if i == k else 0.0) - v for k, v in enumerate(row)]
             for i, (m, row) in enumerate(zip(self.inv_mass, correction))]
        WcT = [self.Wt[j] for j in candidates]
        G = matmul(matmul(WcT, S), transpose(WcT))
        L = matvec(WcT, free.qdd)
        c = [free.capacity[j] for j in candidates]
        n = len(candidates)
        # eq. 31: M = [[G, I], [-I, 0]], q = [L - G c, 2 c]
        M = ([row + unit for row, unit in zip(G, identity(n))]
             + [[-v for v in unit] + [0.0] * n for unit in identity(n)])
        try:
            result = lemke(M, [Li - v for Li, v in zip(L, matvec(G, c))] + [2.0 * ci for ci in c])
        except LcpError as error:
            raise self._unsolved(error, G, candidates) from None
        accel = [a + Li for a, Li in zip(matvec(G, [z - ci for z, ci in zip(result.z[:n], c)]), L)]
        scale = 1e-9 * (1.0 + max(abs(v) for v in L))
        for j, a_j in zip(candidates, accel):
            new[j] = FORWARD if a_j > scale else (BACKWARD if a_j < -scale else STUCK)
        return tuple(new)

    def _unsolved(self, error: LcpError, G, candidates) -> LcpError:
        """The LCP's failure in words naming the parameters that set its scale.  A friction
        LCP of eq. 31 always has a solution (G is positive semidefinite, M copositive-plus:
        lcp.py), so a ray is the method's tolerance (relative to the largest entry of M and q)
        losing the small entries of a badly scaled G: a light wheel, whose slip and rolling
        rows R^2 / J_wheel and 1 / J_wheel dwarf the body's, under a large torque."""
        p = self.p
        diagonal = [G[i][i] for i in range(len(G))]
        names = ", ".join(CONTACTS[j] for j in candidates)
        return LcpError(f"{error}: the stick/slip problem of the contacts {names} (Fan et al. eq. 31) is too badly "
                        f"scaled for Lemke's method (diagonal of its matrix G from {min(diagonal):.3g} to "
                        f"{max(diagonal):.3g}; the wheels' R^2 / J_wheel = {p.R * p.R / p.J_wheel_f:.3g} (front), "
                        f"{p.R * p.R / p.J_wheel_r:.3g} (rear) against 1 / m_wheel_f = {1.0 / p.m_wheel_f:.3g}, "
                        f"1 / m_wheel_r = {1.0 / p.m_wheel_r:.3g}, 1 / m_body = {1.0 / p.m_body:.3g}): raise the "
                        f"light wheel's J_wheel_f = {p.J_wheel_f!r} or J_wheel_r = {p.J_wheel_r!r} kg.m2 "
                        "towards the other inertias, or lower the wheel torques")

    def snap(self, qd, contacts):
        """Smallest mass-weighted change of q' that makes the relative speeds of
        ``contacts`` zero (a projection; exact zeros are then written in)."""
        if not contacts:
            return qd
        if self._fast:
            return self._fast_snap(qd, contacts)
        WcT = [self.Wt[j] for j in contacts]
        # q' - M^-1 Wc (Wc^T M^-1 Wc)^-1 Wc^T q'  (Wc's columns are independent)
        factors, weighted = _schur_complement(WcT, self.inv_mass)
        change = min_norm_solve(factors, matvec(WcT, qd))
        corrected = [v - d for v, d in zip(qd, matvec(transpose(weighted), change))]
        for j in contacts:
            if j in (1, 3):
                corrected[5 if j == 1 else 8] = 0.0
        for j in contacts:
            if j in (0, 2):
                k = 3 if j == 0 else 6
                corrected[k] = self.p.R * corrected[k + 2]
        return corrected

    def _fast_snap(self, qd, contacts):
        """:meth:`snap` of this class in closed form (solvers.vehicle_closed_form)."""
        return closed_form_snap(qd, contacts, self.p.R, self.inv_mass)

    def step(self, state: VehicleState, tau_f: float, tau_r: float, h: float, t0: float = 0.0) -> StepResult:
        """Advance by h from time ``t0`` with the drive torques held (event-driven, section 3)."""
        check_step(h, tau_wheel_f=tau_f, tau_wheel_r=tau_r)
        y = [float(v) for v in state.q] + [float(v) for v in state.qd]
        n = self.N_COORDINATES
        modes = tuple(state.modes)
        t, events = 0.0, []
        substeps, max_events = SUBSTEP_BUDGET.limit(h), EVENT_BUDGET.limit(h)
        # a contact left FREE (no normal force) slides now if it moved, else is re-decided
        if FREE in modes:
            modes = tuple(sliding if m == FREE and sliding != STUCK else m
                          for m, sliding in zip(modes, self._sliding_modes(y[n:])))
        held = [j for j, m in enumerate(modes) if m == STUCK or m == FREE]
        y[n:] = self.snap(y[n:], held)
        rhs, event_functions, last = self._phase(modes, tau_f, tau_r, t0)
        f0 = rhs(0.0, y)
        if FREE in modes or not _within_capacity(last[1], last[2], held):   # new inputs: re-decide
            modes = self.resolve(y[:n], y[n:], tau_f, tau_r, modes, held, t0)
            rhs, event_functions, last = self._phase(modes, tau_f, tau_r, t0)
            f0 = None
        while True:
            try:
                if substeps < 1:
                    raise IntegrationError("no integration step left in the step's budget")
                result = integrate(rhs, t, y, h, event_functions, 1e-9, 1e-11, h - t, substeps, f0)
            except IntegrationError:
                raise SUBSTEP_BUDGET.exceeded("vehicle", h, _ADVICE) from None
            substeps -= result.n_attempts
            y, t = list(result.y), result.t
            if result.event is None:
                break
            events.append((t, result.event))
            j = result.event
            candidates = sorted({i for i, m in enumerate(modes) if m == STUCK} | {j})
            y[n:] = self.snap(y[n:], candidates)
            before = modes
            modes = self.resolve(y[:n], y[n:], tau_f, tau_r, modes, candidates, t0 + t)
            if before[j] == STUCK and modes[j] == STUCK:
                # the force reached its capacity and the LCP holds it exactly there (a
                # degenerate solution: zero relative acceleration at the limit): it breaks
                # away in the direction friction was resisting, else it would re-trigger
                # the same event at the same instant
                force = self.forces(y[:n], y[n:], tau_f, tau_r, modes, t0 + t).tangential[j]
                breakaway = BACKWARD if force > 0.0 else FORWARD
                modes = tuple(breakaway if i == j else m for i, m in enumerate(modes))
            if len(events) > max_events:
                raise EVENT_BUDGET.exceeded("vehicle tires", h, "the tires switch between stick and slip too often: "
                                            "take a smaller communication step, or " + _ADVICE.split(", or ")[1])
            rhs, event_functions, last = self._phase(modes, tau_f, tau_r, t0)
            f0 = None
        return StepResult(VehicleState(tuple(y[:n]), tuple(y[n:]), modes), tuple(events))

    def _phase(self, modes, tau_f, tau_r, t0):
        """The right-hand side and event functions of one smooth phase (contact modes
        fixed), and ``last`` = [y, tangential, capacities, ...] of the latest evaluation:
        the event functions of the stuck contacts read the forces the integrator's last
        stage computed at the same point instead of evaluating them again."""
        last = [None, None, None, None, None]
        evaluate = self._fast_dynamics(modes, [tau_f, tau_r], last) if self._fast else None
        if evaluate is not None:
            return evaluate, self._event_functions(modes, evaluate, last, True), last
        n = self.N_COORDINATES

        def rhs(_t, yy):
            f = self.forces(yy[:n], yy[n:], tau_f, tau_r, modes, t0 + _t)
            last[0], last[1], last[2], last[4] = yy, f.tangential, f.capacity, _t
            return yy[n:] + f.qdd

        return rhs, self._event_functions(modes, rhs, last, False), last

    def _event_functions(self, modes, rhs, last, fast):
        """Per contact: a sliding one's signed relative speed, a stuck (or free) one's
        margin capacity - |force| at the point ``rhs`` evaluated last (again if another,
        or at another time for the generic path, whose forces may depend on time)."""
        n = self.N_COORDINATES

        def margin(_t, yy, j):
            if yy is not last[0] or (not fast and _t != last[4]):
                rhs(_t, yy)
            return last[2][j] - abs(last[1][j])

        event_functions = []
        for j, mode in enumerate(modes):
            if mode == FORWARD or mode == BACKWARD:
                if fast:
                    k = 3 * (j // 2) + n + 3        # slip: x' - R th' of its wheel; rolling: th'
                    if j % 2 == 0:
                        event_functions.append(lambda _t, yy, k=k, s=int(mode), R=self.p.R:
                                               s * (yy[k] + -R * yy[k + 2]))
                    else:
                        event_functions.append(lambda _t, yy, k=k + 2, s=int(mode): s * yy[k])
                else:
                    event_functions.append(lambda _t, yy, j=j, s=int(mode): s * dot(self.Wt[j], yy[n:]))
            else:
                event_functions.append(lambda _t, yy, j=j: margin(_t, yy, j))
        return event_functions

    @staticmethod
    def forces_hold(forces: Forces, modes) -> bool:
        """True when every stuck contact's force (``forces``, computed at ``modes``) is within
        its capacity: then the stuck set is a solution of the LCP as it stands and need not
        be re-solved."""
        return _within_capacity(forces.tangential, forces.capacity, [j for j, m in enumerate(modes) if m == STUCK])

    # ----------------------------------------------------------------- outputs
    def state_outputs(self, q, qd):
        """(F_N front, F_N rear, slip speed front, rear, |Phi|): :meth:`applied`'s normal
        forces, :meth:`relative_speeds`' slip speeds and the norm of :meth:`constraints`'
        Phi, in closed form (the same expressions)."""
        p = self.p
        R = p.R
        normal = []
        for k, damping in ((4, self.damping_tire[0]), (7, self.damping_tire[1])):
            f_n = 0.0
            if R - q[k] > 0.0:
                f_n = max(0.0, p.k_tire * (R - q[k]) - damping * qd[k])
            normal.append(f_n)
        c, s = math.cos(q[2]), math.sin(q[2])
        phi_f = (q[3] - q[0]) * c + (q[4] - q[1]) * s - p.a
        phi_r = (q[6] - q[0]) * c + (q[7] - q[1]) * s + p.b
        return (normal[0], normal[1], qd[3] + -R * qd[5], qd[6] + -R * qd[8],
                math.sqrt(phi_f * phi_f + phi_r * phi_r))

    def energy(self, q, qd):
        """Kinetic + gravity + suspension + tire energy."""
        p = self.p
        kinetic = 0.5 * sum(m * v * v for m, v in zip(self.mass, qd))
        gravity = GRAVITY * (p.m_body * q[1] + p.m_wheel_f * q[4] + p.m_wheel_r * q[7])
        c, s = math.cos(q[2]), math.sin(q[2])
        springs = 0.0
        for i, k in enumerate((3, 6)):
            dx, dy = q[k] - q[0], q[k + 1] - q[1]
            length = -(dx * -s + dy * c)
            springs += 0.5 * p.k_susp * (self.free_length[i] - length) ** 2
            penetration = p.R - q[k + 1]
            if penetration > 0.0:
                springs += 0.5 * p.k_tire * penetration ** 2
        return kinetic + gravity + springs


