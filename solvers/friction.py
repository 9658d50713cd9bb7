"""Stick/slip of bodies joined by dry-friction interfaces: a chain in series (the paper's
case, below), generalized by :class:`FrictionSystem` to interfaces to the fixed housing
(a brake), one-way interfaces (a freewheel) and members tied by a kinematic constraint
(a planetary gear set): the same decoupling with D = C E and M_q = E^T J E in place of
the difference matrix and diag(J) (see the class).

Biagiotti & Zanasi, "Efficient simulation of static and dynamic friction for
automotive applications".

Model (eq. 5, 10, 16)
    J_i w_i' = F_i - tau_(i-1,i)... written as  J W' = F - D^T tau,
with ``D`` the (n-1) x n difference matrix (row j: +1 at body j, -1 at body j+1) and
``tau_j`` the torque interface j transmits from body j to body j+1.

Decoupling (eq. 7-9, 11, 17)
    mean motion      J_tot * w_mean' = sum(F)                 (no friction in it)
    relative motion  s' = g - M tau,   s = D W (slip speeds),
                     M = D J^-1 D^T  (= J_R^-1),  g = D J^-1 F  (= J_R^-1 F_R)
    back to bodies   W = w_mean * 1 + K s,  K = J^-1 D^T M^-1   (the matrix T of eq. 7)
so a stuck interface keeps its slip exactly zero: it is not integrated at all.

Friction of a slipping interface (eq. 2), with direction d = sign(s):
    tau = d * (T_c + (T_s - T_c) * exp(-|s / w_s|^alpha)) + d_visc * s
``w_s = 0`` means no Stribeck drop (tau = d*T_c + d_visc*s at any slip).
Friction of the stuck set xi (eq. 19), given the torques of the others:
    tau_xi = M_xixi^-1 (g_xi - M_xi,rest tau_rest)
and it holds while |tau_j| <= T_s,j (eq. 20-21).

Exact stuck set.  Eq. 19-22 saturate each violating interface on its own, which the
seed admits is only approximate when neighbouring interfaces stick and one saturates.
Here every interface at zero slip gets a mode from {STUCK, FORWARD, BACKWARD}; the
candidate assignments are tested in order of decreasing number of stuck interfaces
and the first consistent one is taken: every stuck friction within its static limit,
every interface that breaks away accelerating in the direction it was assigned, with
its friction at the breakaway level ``d * T_k0`` (``T_k0 = T_s`` with a Stribeck drop,
``T_c`` without).  This is the mixed linear complementarity problem of the stuck set
solved by enumeration (at most 3^5 candidates for six bodies).

Stepping.  External torques and capacities are constant over a step.  Inside the step
the solver runs from event to event: a slip that reaches zero (the interface is then
re-resolved: it locks or reverses) or, with several interfaces, a stuck friction that
reaches its static limit.  With constant friction in every slipping interface the
motion between events is quadratic in time and events are found in closed form (a
stuck friction is then constant between events: eq. 19 with constant tau_rest);
otherwise the slip ODE is integrated by :mod:`solvers.ode` with event location.
Nothing here depends on the step size: there is no velocity band and no chattering.

Decisions at the static limit.  One rule decides whether a zero-slip interface holds:
|tau_j| <= T_s,j (1 + STICK_TOL) (eq. 20).  :meth:`FrictionChain.resolve` applies it
to eq. 19 (with every interface stuck: to M^-1 g), and the stuck-limit event of the ODE
path is that same inequality along the phase, offset to start from resolve's value (its
product form of eq. 19 rounds differently).  When the event fires, the stuck friction has just
gone past the limit: the interface breaks away in the direction of the excess (Karnopp,
eq. 4; eq. 22) without eq. 19 being asked again at that instant, where its rounding
could say "holds" and keep the stuck phase the event has just ended (that phase then
ended at once, at the same instant, again and again: 10^4 events in one step).
STICK_TOL = 1e-12 (relative): eq. 4 holds an interface whose friction equals its
capacity, and the slack lets that equality survive the rounding of eq. 19 (measured:
at most 4e-14 of the largest stuck friction for inertias within 0.01..3 kg.m2; up to
6e-11 for inertias spread over 1e-3..1e3, where the decision at the limit is decided
by rounding, consistently).  It also puts the hold threshold above the breakaway
friction (T_k0 <= T_s), so an interface that breaks away at its event starts with a
slip acceleration of the excess's sign, about STICK_TOL T_s times its effective
inverse inertia (a Schur complement of M), rather than a rounding-sized one.
A slip that starts at zero (just broken away or reversed, resolve having found
d s' > 0) is watched through d s / t, which starts at d s'(0) > 0, so that a return
to zero inside the integrator's first step is located there rather than reported as a
slip that never began.  Of events crossing inside one integration step the earliest is
taken (:func:`solvers.ode.integrate` locates it).  Should the integration still be unable
to continue a resolution for any time (a phase ending where it began), that assignment
is not offered again at that instant, so such phases are finite in number.

Dissipation per interface (for a thermal model): :meth:`FrictionSystem.advance` also splits
the step's e_loss among the interfaces on request, as :mod:`solvers.dissipation` describes.

Cost of a step (:mod:`solvers.budget`).  The events of one step and the integration
steps of its ODE phases (all phases together) count against EVENT_BUDGET and
SUBSTEP_BUDGET; a step that needs more is refused naming the budget (the state passed in
is untouched).  The stuck-set enumeration is bounded by 3^5 candidates per event.

Matrices are lists of rows (:mod:`solvers.dense`): the FMUs ship the standard library only.
Compiled, a system's per-step methods (capacities, step_inputs, resolve, advance,
member_motion, _advance_ode) run on its kernels, solvers/friction_kernel.py and
solvers/friction_ode_kernel.py: this module's operations over C doubles, the same floats bit
for bit; what is rare (errors, some decisions at events) stays here.
"""
from __future__ import annotations

import math
from operator import sub
from dataclasses import dataclass

from . import dissipation
from .budget import StepError
from .contract import StepResult, check_step
from .dense import dot, identity, inverse, matmul, matvec, quadratic_form, solve, submatrix, transpose, zeros
from .friction_state import (BACKWARD, EVENT_BUDGET, FORWARD, FREE, SLIP_ADVICE, STICK_SLACK, STUCK,
                             SUBSTEP_BUDGET, ChainState, Mode, slip_direction, stuck_candidates)
from .ode import IntegrationError, integrate

_INFINITY = math.inf


def stribeck_decay(x: float, alpha: float) -> float:
    """exp(-x^alpha) for x >= 0, alpha > 0: the float the formula rounds to at every x.

    Where x^alpha exceeds the float range (Python's power raises OverflowError: e.g. x = 100,
    alpha = 1000) the exact value exp(-x^alpha) < exp(-1.8e308) is far below the smallest
    positive float (5e-324 = exp(-744.4)), so it rounds to 0.0, which is what exp(-inf)
    gives: nothing is clamped, the Stribeck drop is simply complete."""
    try:
        power = x ** alpha
    except OverflowError:
        power = math.inf
    return math.exp(-power)


@dataclass(frozen=True)
class InterfaceLaw:
    """Friction law of one interface (eq. 2); capacities come with the normal force.

    mu_s, mu_k      static and kinetic friction coefficients, 0 <= mu_k <= mu_s
    r_eff           effective friction radius [m]
    n_surfaces      number of friction surfaces
    w_stribeck      Stribeck speed [rad/s]; 0 = no Stribeck drop
    alpha_stribeck  Stribeck exponent
    d_visc          viscous friction coefficient [N.m.s/rad]
    """

    mu_s: float = 0.4
    mu_k: float = 0.3
    r_eff: float = 0.15
    n_surfaces: float = 2.0
    w_stribeck: float = 0.0
    alpha_stribeck: float = 1.0
    d_visc: float = 0.0

    @property
    def levers(self) -> tuple[float, float]:
        """Torque capacity per newton of normal force, static and kinetic [m]:
        (mu_s r_eff n_surfaces, mu_k r_eff n_surfaces)."""
        lever = self.r_eff * self.n_surfaces
        return self.mu_s * lever, self.mu_k * lever

    def capacities(self, f_n: float) -> tuple[float, float]:
        """Static and kinetic torque capacities (T_s, T_c) at normal force f_n."""
        static, kinetic = self.levers
        return static * f_n, kinetic * f_n

    def slipping_torque(self, s: float, direction: int, t_s: float, t_c: float) -> float:
        """Eq. 2 with the sign taken from the slip direction of the current mode."""
        level = t_c
        if self.w_stribeck > 0.0 and t_s != t_c:
            level += (t_s - t_c) * stribeck_decay(abs(s) / self.w_stribeck, self.alpha_stribeck)
        return direction * level + self.d_visc * s

    def is_constant(self, free: bool, t_s: float, t_c: float) -> bool:
        """True when eq. 2 does not vary with the slip of a slipping interface (``free``: one
        without capacity): no viscous part, and no Stribeck drop (free, none set, or
        T_s == T_c)."""
        return self.d_visc == 0.0 and (free or self.w_stribeck <= 0.0 or t_s == t_c)

    def breakaway_torque(self, t_s: float, t_c: float) -> float:
        """Friction level at the instant of breakaway, T_k0 = F(0+)."""
        return t_s if self.w_stribeck > 0.0 else t_c


class FrictionSystem:
    """Bodies with dry-friction interfaces between them or to the fixed housing (module
    docstring), in generalized coordinates.

    Parameters
    ----------
    inertias : m positive floats [kg.m2], one per member (a rotating part)
    laws     : k :class:`InterfaceLaw`, one per interface
    members  : E, m x n: member speeds = E v for the n generalized speeds v (a kinematic
               constraint such as Willis' equation of a planetary gear leaves n < m);
               None: the identity (every member is a coordinate)
    rows     : C, k x m: slip of interface j = C_j . member speeds (+1/-1 for a clutch
               between two members, +1 alone for a brake to the housing)
    one_way  : indices of freewheel interfaces: they hold any friction >= -T_s (no upper
               limit) and never slip forward (s > 0 would be one member overrunning the other
               the wrong way); while slipping backward their friction is -T_c

    With M_q = E^T J E the mass matrix of the coordinates and D = C E (k x n, full rank k),
    the motion splits into the slips s = D v and at most one free motion along the null
    space of D, the direction N (D N = 0); n - k = 1 for a chain (N = 1: every member
    turns alike), 0 when the interfaces fix every coordinate (a brake; a planetary gear
    with a clutch and a brake).  With K = M_q^-1 D^T (D M_q^-1 D^T)^-1, v = N w_mean + K s,
    and N^T M_q K = 0 splits the kinetic energy into the two parts (eq. 7-9, 17,
    generalized).  The matrices, as lists of rows: ``m`` (M = D M_q^-1 D^T = J_R^-1),
    ``m_inv``, ``g_of_torques`` (D M_q^-1 E^T: g from the member torques), ``free_members``
    (E N) and ``k`` (E K: member speeds from the slips).
    """

    def __init__(self, inertias, laws, rows, members=None, one_way=()):
        inertias = [float(j) for j in inertias]
        for i, j in enumerate(inertias, start=1):
            if not (math.isfinite(j) and j > 0.0):
                raise ValueError(f"inertia J_{i} = {j!r} must be finite and > 0")
        n_members = len(inertias)
        e = identity(n_members) if members is None else [[float(x) for x in row] for row in members]
        c = [[float(x) for x in row] for row in rows]
        if len(e) != n_members or any(len(row) != len(e[0]) for row in e):
            raise ValueError(f"members must be a {n_members} x n matrix, got {e!r}")
        if not c or any(len(row) != n_members for row in c):
            raise ValueError(f"rows must be a k x {n_members} matrix with k >= 1, got {c!r}")
        k_interfaces, n_coordinates = len(c), len(e[0])
        if len(laws) != k_interfaces:
            raise ValueError(f"{k_interfaces} interfaces need {k_interfaces} laws, got {len(laws)}")
        if n_coordinates - k_interfaces not in (0, 1):
            raise ValueError(f"{k_interfaces} interfaces on {n_coordinates} coordinates leave "
                             f"{n_coordinates - k_interfaces} free motions; 0 or 1 are supported")
        self.n = n_members
        self.n_interfaces = k_interfaces
        self.inertias = inertias
        self.laws = tuple(laws)
        self.one_way = frozenset(one_way)
        e_t = transpose(e)
        mass = matmul(e_t, [[x * j for x in row] for row, j in zip(e, inertias)])     # M_q = E^T J E
        mass_inv = inverse(mass)
        self.d = matmul(c, e)                                                          # D = C E
        dm_inv = matmul(self.d, mass_inv)
        self.g_of_torques = matmul(dm_inv, e_t)                                        # g = D M_q^-1 E^T tau
        self.m = matmul(dm_inv, transpose(self.d))                                     # J_R^-1 (eq. 17)
        self.m_inv = inverse(self.m)
        if n_coordinates == k_interfaces:   # K = D^-1: its zeros stay exact (a held brake's member at 0)
            self.k = matmul(e, inverse(self.d))
        else:
            self.k = matmul(e, matmul(matmul(mass_inv, transpose(self.d)), self.m_inv))   # E K (eq. 7)
        if n_coordinates > k_interfaces:
            free = _null_direction(self.d, n_coordinates)
            self.free_members = matvec(e, free)                                        # E N
            self._mass_free = matvec(mass, free)                                       # M_q N
            self.j_total = dot(free, self._mass_free)                                  # N^T M_q N
        else:               # no free motion: theta_mean, w_mean stay 0 (0 / inf below)
            self.free_members = [0.0] * n_members
            self._mass_free = [0.0] * n_coordinates
            self.j_total = math.inf
        self._input_rows = [self.free_members, *self.g_of_torques]     # step_inputs(): N^T E^T and g's rows
        self._candidate_sets = [stuck_candidates(k) for k in range(k_interfaces + 1)]    # resolve(): by zero slips
        self._static_levers, self._kinetic_levers = (list(x) for x in zip(*(law.levers for law in self.laws)))
        # what resolve() and the phases read of each interface at every step
        self._d_visc = [law.d_visc for law in self.laws]
        self._is_one_way = [j in self.one_way for j in range(k_interfaces)]
        # compiled, the per-step methods are the kernel's (solvers/friction_kernel.py): the same floats
        vars(self).update(compiled_methods(self))

    # ------------------------------------------------------------------ coordinates
    def state_from_bodies(self, phi, w, modes=None, e_loss=0.0) -> ChainState:
        """Decoupled state from the angles and speeds of the generalized coordinates (of the
        members themselves when ``members`` is the identity); modes from the slip signs."""
        phi = [float(x) for x in phi]
        w = [float(x) for x in w]
        q = matvec(self.d, phi)
        s = matvec(self.d, w)
        for j in self.one_way:
            if s[j] > 0.0:
                raise ValueError(f"freewheel interface {j + 1} cannot start slipping forward "
                                 f"(slip {s[j]!r} rad/s > 0: it would have locked)")
        if modes is None:
            modes = tuple(STUCK if x == 0.0 else (FORWARD if x > 0.0 else BACKWARD) for x in s)
        return ChainState(
            theta_mean=dot(self._mass_free, phi) / self.j_total,     # N^T M_q phi / N^T M_q N (eq. 8)
            w_mean=dot(self._mass_free, w) / self.j_total,
            q=tuple(q),
            s=tuple(s),
            modes=tuple(modes),
            e_loss=e_loss,
        )

    def member_motion(self, state: ChainState) -> list[float]:
        """Member angles E (N theta_mean + K q), then member speeds E (N w_mean + K s), in one
        list (with every slip zero, the speeds are E N w_mean alone)."""
        theta, w_mean, q, s, _, _ = state
        offsets = matvec(self.k, q)
        n, free, motion = self.n, self.free_members, []
        for i in range(n):
            x, offset = free[i], offsets[i]
            motion.append(x * theta + offset)
        if any(s):
            relative = matvec(self.k, s)
            for i in range(n):
                x, relative_speed = free[i], relative[i]
                motion.append(x * w_mean + relative_speed)
        else:
            for i in range(n):
                x = free[i]
                motion.append(x * w_mean)
        return motion

    def body_angles(self, state: ChainState) -> list[float]:
        """Member angles E (N theta_mean + K q) (:meth:`member_motion`)."""
        return self.member_motion(state)[: self.n]

    def body_speeds(self, state: ChainState) -> list[float]:
        """Member speeds E (N w_mean + K s) (:meth:`member_motion`)."""
        return self.member_motion(state)[self.n:]

    def kinetic_energy(self, w_mean: float, s) -> float:
        """0.5 v^T M_q v = 0.5 N^T M_q N w_mean^2 + 0.5 s^T M^-1 s (the parts are M_q-orthogonal).
        w_mean^2 is Python's power, the C library's pow: a kernel taking this must keep it (gcc
        folds pow(x, 2.0) of a C double into x * x, which differs from pow in the last bit)."""
        relative = quadratic_form(self.m_inv, s)
        free = 0.5 * self.j_total * w_mean**2 if w_mean else 0.0
        return free + 0.5 * relative

    def free_acceleration(self, torques) -> float:
        """w_mean' = N^T E^T tau / N^T M_q N: friction does no work on the free motion
        (the mean motion of a chain, eq. 8; 0 without a free motion)."""
        return dot(self.free_members, torques) / self.j_total

    # ------------------------------------------------------------------ friction
    def capacities(self, normal_forces):
        """(T_s, T_c) lists of every interface at the given normal forces (the same
        products as :meth:`InterfaceLaw.capacities`)."""
        static_levers, kinetic_levers, static, kinetic = self._static_levers, self._kinetic_levers, [], []
        for i in range(self.n_interfaces):
            f_n, static_lever, kinetic_lever = normal_forces[i], static_levers[i], kinetic_levers[i]
            static.append(static_lever * f_n)
            kinetic.append(kinetic_lever * f_n)
        return static, kinetic

    def relative_free_acceleration(self, torques) -> list[float]:
        """g = D J^-1 F: slip accelerations without friction (a list)."""
        return matvec(self.g_of_torques, torques)

    def stuck_torques(self, stuck, g, tau):
        """Friction of the stuck interfaces (eq. 19): their slip accelerations vanish,
        g_xi - M_xi,rest tau_rest - M_xixi tau_xi = 0, with ``tau`` holding the others."""
        mm = self.m
        others = list(tau)
        for i in stuck:
            others[i] = 0.0                         # M_xi,rest tau_rest: the stuck ones left out
        rhs = []
        for i in stuck:
            rhs.append(g[i] - dot(mm[i], others))
        if len(stuck) == 1:
            i = stuck[0]
            return [rhs[0] / mm[i][i]]
        return solve(submatrix(mm, stuck, stuck), rhs)

    def resolve(self, s, modes, g, t_s, t_c, breaking=None, refuted=()):
        """Modes and friction torques at an instant (the exact stuck set).

        Interfaces with non-zero slip keep their slip direction; interfaces with zero
        capacity are FREE; the rest (zero slip, capacity > 0) are resolved by testing
        candidate assignments (module docstring).  Returns (modes, tau) as lists.

        From the event handling of :meth:`advance` (module docstring, "Decisions at the
        static limit"): ``breaking`` = (j, direction) of a zero-slip interface whose
        stuck-limit event has just fired: it breaks away in that direction, with its
        breakaway friction, and the others are resolved around it; ``refuted``: mode
        tuples that the integration could not continue for any time at this instant,
        skipped.
        """
        m = self.n_interfaces
        one_way = self._is_one_way
        new_modes = list(modes)
        tau = [0.0] * m
        zero = []
        for j in range(m):
            slip, capacity = s[j], t_s[j]
            if capacity <= 0.0 and not one_way[j]:
                new_modes[j] = FREE
                tau[j] = self._d_visc[j] * slip
            elif slip != 0.0:
                if slip > 0.0 and one_way[j]:
                    raise StepError(f"freewheel interface {j + 1} slips forward (slip {s[j]!r} rad/s): "
                                    "it cannot, it locks")
                new_modes[j] = FORWARD if slip > 0.0 else BACKWARD
                tau[j] = self.laws[j].slipping_torque(slip, new_modes[j], t_s[j], t_c[j])
            else:
                zero.append(j)
        if breaking is not None:
            j, direction = breaking
            if j in zero:       # Karnopp at the static limit: eq. 4, 22 (module docstring)
                zero.remove(j)
                new_modes[j] = direction
                tau[j] = direction * self.laws[j].breakaway_torque(t_s[j], t_c[j])
        if not zero:
            return new_modes, tau
        mm, stuck_mode, forward = self.m, STUCK, FORWARD
        n_zero = len(zero)
        for assignment in self._candidate_sets[n_zero]:
            stuck = []
            trial = list(tau)
            allowed = True
            for i in range(n_zero):
                j, mode = zero[i], assignment[i]
                if mode == stuck_mode:
                    stuck.append(j)
                elif mode == forward and one_way[j]:
                    allowed = False                 # a freewheel never breaks away forward
                    break
                else:
                    trial[j] = mode * self.laws[j].breakaway_torque(t_s[j], t_c[j])
            if not allowed:
                continue
            if stuck:
                solved = (matvec(self.m_inv, g) if len(stuck) == m          # eq. 19, all stuck: M tau = g
                          else self.stuck_torques(stuck, g, trial))
                if not self._holds(solved, stuck, t_s):
                    continue
                for i in range(len(stuck)):
                    trial[stuck[i]] = solved[i]
            consistent = True
            for i in range(n_zero):
                j, mode = zero[i], assignment[i]
                if mode != stuck_mode:
                    accel = g[j] - dot(mm[j], trial)
                    if mode * accel <= 0.0:
                        consistent = False
                        break
            if consistent:
                for i in range(n_zero):
                    new_modes[zero[i]] = assignment[i]
                if refuted and tuple(new_modes) in refuted:
                    continue
                return new_modes, trial
        raise StepError(f"no consistent stick/slip assignment for interfaces {zero} (g = {list(g)})")

    def _holds(self, torques, interfaces, t_s) -> bool:
        """The hold rule (eq. 20) for the frictions ``torques`` of the stuck ``interfaces``:
        |tau_j| <= T_s,j (1 + STICK_TOL); a freewheel's only limit is tau_j >= -T_s,j (1 + ...)."""
        one_way, slack = self._is_one_way, STICK_SLACK
        for i in range(len(interfaces)):
            j, x = interfaces[i], torques[i]
            capacity = t_s[j]
            limit = capacity * slack
            if (x < -limit) if one_way[j] else (abs(x) > limit or limit <= 0.0):
                return False
        return True

    def friction_torques(self, state: ChainState, torques, t_s, t_c, g=None):
        """Modes and friction torques of ``state`` under the given external torques (``g``:
        their relative_free_acceleration, if known)."""
        if g is None:
            g = self.relative_free_acceleration(torques)
        return self.resolve(state.s, state.modes, g, t_s, t_c)

    def step_inputs(self, torques):
        """(a_mean, g) of the external torques, for :meth:`advance`: the products of
        :meth:`free_acceleration` and :meth:`relative_free_acceleration` at once."""
        products = matvec(self._input_rows, torques)
        a_mean = products.pop(0) / self.j_total          # the first row: N^T E^T
        return a_mean, products                           # the others: g

    # ------------------------------------------------------------------ stepping
    def step(self, state: ChainState, torques, t_s, t_c, h: float) -> StepResult:
        """Advance ``state`` by ``h`` with constant external torques and capacities;
        the result also lists the stick/slip events inside the step as (time, interface
        index) records (:class:`solvers.contract.StepResult`).

        Raises StepError (the state passed in is never modified: it is immutable).
        """
        events = []
        new_state = self.advance(state, torques, t_s, t_c, h, events)
        return StepResult(new_state, tuple(events))

    def advance(self, state: ChainState, torques, t_s, t_c, h: float, events=None,
                start=None, inputs=None, losses=None) -> ChainState:
        """The state of :meth:`step` alone (the FMU's per-step call); the events' (time,
        interface) records are appended to ``events`` when a list is given.  ``start``: the (modes, tau)
        that :meth:`friction_torques` gave for this state and these inputs, if known; ``inputs``:
        :meth:`step_inputs` of ``torques``, if made (then reused, not recomputed).  ``losses``:
        a list of one 0.0 per interface, if given, receives the energy each interface
        dissipated in the step (module docstring, "Dissipation per interface"); without it
        nothing of that is computed."""
        if not 0.0 < h < _INFINITY:
            check_step(h)                               # raises, naming h
        step = h
        if inputs is None:
            a_mean = self.free_acceleration(torques)
            g = self.relative_free_acceleration(torques)
        else:
            a_mean, g = inputs
        theta_start, w_mean, q_start, s_start, modes_start, e_loss_start = state
        theta = theta_start
        modes, tau = start or self.resolve(s_start, modes_start, g, t_s, t_c)
        if all(mode == STUCK for mode in modes):
            # every interface holds for the whole step (|tau_j| <= T_s,j, eq. 19-21, with torques
            # and capacities constant): the bodies turn as one; no slip, e_loss unchanged
            theta += w_mean * step + 0.5 * a_mean * step * step
            return ChainState(theta, w_mean + a_mean * step, q_start, s_start, tuple(modes), e_loss_start)
        m = self.n_interfaces
        s = list(s_start)
        q = list(q_start)
        ke_start = self.kinetic_energy(w_mean, s)
        relative_work = None        # M^-1 g, for the losses of ODE phases, made when first needed
        t = 0.0
        breaking, refuted = None, ()
        # the budgets' limits at h (solvers.budget), looked up when first needed: most steps
        # have no event and no ODE phase
        max_events = substeps = -1
        phase = 0
        while True:
            if phase:                       # after an event: re-decide the stuck set
                modes, tau = self.resolve(s, modes, g, t_s, t_c, breaking, refuted)
            if losses is not None:
                q_phase, s_phase = list(q), list(s)       # the phase's start, for its losses
            if self._phase_is_analytic(modes, t_s, t_c):
                dt, event = self._advance_constant(s, q, modes, tau, g, step - t)
                breaking = None
                if losses is not None:
                    for j in range(m):      # a constant friction: tau_j times the phase's relative turn
                        if modes[j] != STUCK:
                            losses[j] += tau[j] * (q[j] - q_phase[j])
            else:
                if substeps < 0:
                    substeps = SUBSTEP_BUDGET.limit(h)
                try:
                    dt, event, breaking, used = self._advance_ode(s, q, modes, tau, g, t_s, t_c, step - t,
                                                                  substeps)
                except IntegrationError:
                    raise SUBSTEP_BUDGET.exceeded("friction chain", h, SLIP_ADVICE) from None
                substeps -= used
                if losses is not None:
                    if relative_work is None:
                        relative_work = matvec(self.m_inv, g)
                    directions = [None if mode == STUCK else slip_direction(mode) for mode in modes]
                    dissipation.add_ode_phase(self, losses, directions, t_s, t_c, relative_work,
                                              q_phase, s_phase, q, s, dt)
            theta += w_mean * dt + 0.5 * a_mean * dt * dt
            w_mean += a_mean * dt
            t += dt
            if event is None:
                break
            if events is not None:
                events.append((t, event))
            # a phase that ended where it began: its modes cannot be continued from here
            refuted = (*refuted, tuple(modes)) if dt == 0.0 else ()
            if max_events < 0:
                max_events = EVENT_BUDGET.limit(h)
            phase += 1
            if phase > max_events:          # the phases 0 .. max_events have all ended in an event
                raise EVENT_BUDGET.exceeded("friction chain", h, SLIP_ADVICE)
        # The last phase ended without an event, so its modes still hold at the end of the step.
        # Energy balance with constant torques: dissipated = work of F - change of KE.
        dq = []
        for j in range(m):
            dq.append(q[j] - q_start[j])
        d_theta = theta - theta_start
        free, relative, work = self.free_members, matvec(self.k, dq), 0.0
        for i in range(self.n):                         # work of member i's torque over its rotation
            torque, x, relative_turn = torques[i], free[i], relative[i]
            work += torque * (x * d_theta + relative_turn)
        ke_end = self.kinetic_energy(w_mean, s)
        e_loss = e_loss_start + work - (ke_end - ke_start)
        if losses is not None:
            dissipation.share(losses, e_loss - e_loss_start)
        return ChainState(theta, w_mean, tuple(q), tuple(s), tuple(modes), e_loss)

    def _phase_is_analytic(self, modes, t_s, t_c) -> bool:
        """True when every non-stuck interface has a constant torque in its mode."""
        laws = self.laws
        for j in range(self.n_interfaces):
            mode = modes[j]
            if mode != STUCK and not laws[j].is_constant(mode == FREE, t_s[j], t_c[j]):
                return False
        return True

    def _advance_constant(self, s, q, modes, tau, g, remaining):
        """Constant friction in every slipping interface: closed-form motion (in place)."""
        m, stuck, forward, backward = self.n_interfaces, STUCK, FORWARD, BACKWARD
        friction = matvec(self.m, tau)
        accel = []                  # s' = g - M tau (module docstring, "Decoupling"); 0 while stuck
        for j in range(m):
            mode = modes[j]
            if mode == stuck:
                accel.append(0.0)
            else:
                g_j, friction_j = g[j], friction[j]
                accel.append(g_j - friction_j)
        dt, event = remaining, -1
        for j in range(m):
            mode, a = modes[j], accel[j]
            if (mode == forward or mode == backward) and a * mode < 0.0:     # a slip decelerating to zero
                slip = s[j]
                t_zero = -slip / a
                if t_zero < dt:
                    dt, event = t_zero, j
        for j in range(m):
            mode = modes[j]
            if mode != stuck:
                slip, a = s[j], accel[j]
                q[j] += slip * dt + 0.5 * a * dt * dt
                s[j] = slip + a * dt
        if event < 0:
            return dt, None
        s[event] = 0.0
        return dt, event

    def _partition(self, stuck, slip):
        """M blocks of a stuck/slipping split (eq. 19 solved for the stuck frictions and put
        into s' = g - M tau): (M_ss^-1, Q = M_ss^-1 M_sk, the Schur complement
        S = M_kk - M_ks Q, M_ks)."""
        m_kk = submatrix(self.m, slip, slip)
        if not stuck:
            return None, None, m_kk, None
        a_inv = inverse(submatrix(self.m, stuck, stuck))
        m_ks = submatrix(self.m, slip, stuck)
        q_stuck = matmul(a_inv, submatrix(self.m, stuck, slip))
        schur = [list(map(sub, row_kk, row_ksq)) for row_kk, row_ksq in zip(m_kk, matmul(m_ks, q_stuck))]
        return a_inv, q_stuck, schur, m_ks

    def _advance_ode(self, s, q, modes, tau, g, t_s, t_c, remaining, max_steps):
        """Nonlinear friction in a slipping interface: integrate the slips (in place);
        ``tau``: the frictions resolve() found at the start; at most ``max_steps``
        attempted integration steps (IntegrationError beyond).  Returns (dt, interface of
        the event or None, breakaway or None, attempted steps)."""
        m = self.n_interfaces
        slip = [j for j in range(m) if modes[j] != STUCK]
        stuck = [j for j in range(m) if modes[j] == STUCK]
        a_inv, q_stuck, schur, m_ks = self._partition(stuck, slip)
        c_slip = [g[j] for j in slip]
        if stuck:
            p_stuck = matvec(a_inv, [g[j] for j in stuck])            # tau_xi = P - Q tau_k  (eq. 19)
            c_slip = list(map(sub, c_slip, matvec(m_ks, p_stuck)))  # s_k' = c - S tau_k
        laws = [self.laws[j] for j in slip]
        dirs = [int(modes[j]) if modes[j] != FREE else 0 for j in slip]
        caps = [(t_s[j], t_c[j]) for j in slip]
        nk = len(slip)

        def slip_torques(y):
            return [law.slipping_torque(y[i], d, ts, tc) if d else law.d_visc * y[i]
                    for i, (law, d, (ts, tc)) in enumerate(zip(laws, dirs, caps))]

        def rhs(_t, y):     # y = (slips s_k, relative angles q_k - q_k(0)): (s_k', q_k')
            return list(map(sub, c_slip, matvec(schur, slip_torques(y)))) + y[:nk]

        y0 = [s[j] for j in slip] + [0.0] * nk
        # A slip that reaches zero: d s_k = 0.  One that starts at zero (it has just broken
        # away or reversed, resolve() having found d s_k' > 0) is watched through d s_k / t,
        # its mean acceleration since the start, which starts at d s_k'(0) > 0: armed at
        # once, so a return to zero inside the first integration step is located there,
        # not taken for a slip that never began (ode's rule for events starting at zero).
        events, event_ids, f0 = [], [], None
        for i, (j, d) in enumerate(zip(slip, dirs)):
            if not d:
                continue
            if s[j]:
                events.append(lambda _t, y, i=i, d=d: d * y[i])
            else:
                if f0 is None:
                    f0 = rhs(0.0, y0)
                events.append(lambda t, y, i=i, d=d, a0=d * f0[i]: d * y[i] / t if t > 0.0 else a0)
            event_ids.append(j)
        if stuck:
            torques0 = slip_torques(y0)
            for r, j in enumerate(stuck):
                # The hold rule of resolve(), |tau_j| <= T_s,j (1 + STICK_TOL), as an event on
                # eq. 19 along the phase.  This product form rounds differently from resolve's,
                # so it is offset to start from resolve's value, on which the phase was decided.
                p, qr = p_stuck[r], q_stuck[r]
                if j in self.one_way:       # a freewheel holds while tau_j >= -T_s,j (1 + STICK_TOL)
                    limit = t_s[j] * STICK_SLACK + (tau[j] - (p - dot(qr, torques0)))
                    events.append(lambda _t, y, p=p, qr=qr, limit=limit: limit + (p - dot(qr, slip_torques(y))))
                else:
                    limit = t_s[j] * STICK_SLACK - (abs(tau[j]) - abs(p - dot(qr, torques0)))
                    events.append(lambda _t, y, p=p, qr=qr, limit=limit: limit - abs(p - dot(qr, slip_torques(y))))
                event_ids.append(j)
        scale = max(1.0, max(abs(x) for x in s))
        if max_steps < 1:
            raise IntegrationError("no integration step left in the step's budget")
        result = integrate(rhs, 0.0, y0, remaining, events, rtol=1e-10, atol=1e-12 * scale, first_step=remaining,
                           max_steps=max_steps)
        used = result.n_attempts
        for i, j in enumerate(slip):
            s[j] = result.y[i]
            q[j] += result.y[nk + i]
        if result.event is None:
            return result.t, None, None, used
        j = event_ids[result.event]
        if modes[j] != STUCK:
            s[j] = 0.0
            return result.t, j, None, used
        # A stuck friction went past its static limit (at once, if it started on it): the
        # interface breaks away in the direction of the excess (Karnopp, eq. 4 and 22).
        r = stuck.index(j)
        excess = p_stuck[r] - dot(q_stuck[r], slip_torques(result.y))
        return result.t, j, (j, FORWARD if excess > 0.0 else BACKWARD), used


def _null_direction(d, n):
    """N with D N = 0, for D of full rank n - 1 (k x n): the solution of D N = 0 with the
    component of the unit vector that completes D to a regular matrix set to 1."""
    for i in range(n):
        square = [list(row) for row in d] + [[1.0 if col == i else 0.0 for col in range(n)]]
        try:
            return solve(square, [0.0] * len(d) + [1.0])
        except ArithmeticError:
            continue
    raise ValueError(f"the interface rows D = {d!r} are not of full rank")


try:        # compiled, its kernel takes a system's per-step calls (FrictionSystem.__init__)
    from .friction_kernel import compiled_methods
except ImportError:
    def compiled_methods(system) -> dict:
        """Uncompiled: no method of ``system`` is replaced."""
        return {}


class FrictionChain(FrictionSystem):
    """n >= 2 bodies in series with n-1 friction interfaces (module docstring): interface j
    joins body j and body j+1, its slip is w_j - w_(j+1).

    Parameters
    ----------
    inertias : sequence of n positive floats [kg.m2]
    laws     : sequence of n-1 :class:`InterfaceLaw`
    """

    def __init__(self, inertias, laws):
        n = len(inertias)
        if n < 2:
            raise ValueError(f"inertias must hold at least two values, got {list(inertias)!r}")
        if len(laws) != n - 1:
            raise ValueError(f"{n} bodies need {n - 1} interface laws, got {len(laws)}")
        rows = zeros(n - 1, n)
        for j in range(n - 1):
            rows[j][j], rows[j][j + 1] = 1.0, -1.0
        super().__init__(inertias, laws, rows)
