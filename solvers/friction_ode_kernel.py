"""A friction system's ODE phases over C doubles: the kernel of FrictionSystem._advance_ode.

An ODE phase is the motion of solvers/friction.py with a slipping interface whose friction
varies with its slip (a Stribeck drop, viscous friction): the slips integrated by
solvers/ode.py's Dormand-Prince method to the first stick/slip event.  Compiled, a system
the kernel of solvers/friction_kernel.py takes hands its phases to :class:`SlipPhases`:
friction.py's partition of eq. 19, right-hand side and events, and ode.py's integration,
step-size control and event location (Illinois regula falsi), with the reference's IEEE
operations in the reference's order over C doubles, so every float is the reference's bit for
bit (tests/numerics/test_friction_kernel.py).  Where the reference decides, it is called: three
or more stuck interfaces beside slipping ones (its LU solve then sums several products, which
CPython 3.12 on compensates), a singular stuck block, no time left, and every error (a step
over its integration budget: the reference raises IntegrationError with its message).

Uncompiled, this module refuses to be imported and the reference runs.
"""
from __future__ import annotations

import cython

if not cython.compiled:
    raise ImportError("solvers.friction_ode_kernel runs compiled only: solvers/friction.py runs instead")

from cython.cimports.libc.math import exp, fabs, isfinite, pow, sqrt  # noqa: E402

from .friction_state import BACKWARD, FORWARD, STICK_SLACK  # noqa: E402
from .ode import _A as ode_A, _C as ode_C, _E as ode_E, LOCATE_TOL  # noqa: E402

#: the stride of the matrices below (friction_kernel.MAX_INTERFACES); an ODE has 2 x 5 unknowns
MAX_INTERFACES = cython.declare(cython.int, 5)
#: the outcomes of SlipPhases._phase
_RESOLVED = cython.declare(cython.int, 0)
_BY_REFERENCE = cython.declare(cython.int, 1)
_OVER_BUDGET = cython.declare(cython.int, 2)
#: the kinds of the events of a phase (friction.py, FrictionSystem._advance_ode)
_SLIP = cython.declare(cython.int, 0)                 # d s_k
_SLIP_FROM_ZERO = cython.declare(cython.int, 1)       # d s_k / t, d s_k'(0) at t = 0
_HOLD = cython.declare(cython.int, 2)                 # limit - |tau_j|
_HOLD_ONE_WAY = cython.declare(cython.int, 3)         # limit + tau_j
#: ode.py's Dormand-Prince tableau and event tolerance, as C doubles
_C = cython.declare(cython.double[7])
_A = cython.declare(cython.double[49])                # row i from 7 i on
_E = cython.declare(cython.double[7])
_LOCATE_TOL = cython.declare(cython.double, LOCATE_TOL)


def _fill_tableau():
    for i in range(7):
        _C[i], _E[i] = ode_C[i], ode_E[i]
        for j in range(len(ode_A[i])):
            _A[7 * i + j] = ode_A[i][j]


_fill_tableau()


@cython.cclass
class SlipPhases:
    """The ODE phases of one FrictionSystem of at most five interfaces (its matrix M and laws as
    C arrays); ``advance_ode`` has the signature and the results of the reference's
    ``_advance_ode``."""

    system = cython.declare(object)
    reference = cython.declare(object)      # the reference's _advance_ode
    k = cython.declare(cython.int)
    m = cython.declare(cython.double[25])
    d_visc = cython.declare(cython.double[5])
    w_stribeck = cython.declare(cython.double[5])
    alpha = cython.declare(cython.double[5])
    one_way = cython.declare(cython.int[5])
    # a phase: its result, and what its right-hand side and events read
    _phase_dt = cython.declare(cython.double)
    _last_event = cython.declare(cython.int)                # the interface of its event, -1: none
    _breaking = cython.declare(cython.int)                  # the direction it breaks away in, 0: none
    _used = cython.declare(cython.int)                      # attempted integration steps
    nk = cython.declare(cython.int)                         # slipping interfaces
    slip = cython.declare(cython.int[5])
    dirs = cython.declare(cython.int[5])
    slip_static = cython.declare(cython.double[5])
    slip_kinetic = cython.declare(cython.double[5])
    c_slip = cython.declare(cython.double[5])
    schur = cython.declare(cython.double[25])
    n_stuck = cython.declare(cython.int)
    p_stuck = cython.declare(cython.double[5])
    q_stuck = cython.declare(cython.double[25])
    n_events = cython.declare(cython.int)
    event_kind = cython.declare(cython.int[10])             # _SLIP, _SLIP_FROM_ZERO, _HOLD, _HOLD_ONE_WAY
    event_index = cython.declare(cython.int[10])            # i of the slip or r of the stuck interface
    event_value = cython.declare(cython.double[10])         # a0 or the limit
    event_ids = cython.declare(cython.int[10])              # the interface j

    @cython.locals(i=cython.int, j=cython.int)
    def __init__(self, system):
        self.system, self.reference = system, type(system)._advance_ode
        self.k = system.n_interfaces
        for i in range(self.k):
            for j in range(self.k):
                self.m[i * MAX_INTERFACES + j] = system.m[i][j]
            law = system.laws[i]
            self.d_visc[i], self.w_stribeck[i], self.alpha[i] = law.d_visc, law.w_stribeck, law.alpha_stribeck
            self.one_way[i] = system._is_one_way[i]

    @cython.locals(j=cython.int, status=cython.int, slips=cython.double[5], angles=cython.double[5],
                   mode=cython.int[5], friction=cython.double[5], accel=cython.double[5],
                   static=cython.double[5], kinetic=cython.double[5])
    def advance_ode(self, s, q, modes, tau, g, t_s, t_c, remaining, max_steps):
        """FrictionSystem._advance_ode: s and q (lists) in place; (dt, the interface of the
        event or None, the breakaway or None, attempted steps)."""
        for j in range(self.k):
            slips[j], angles[j], mode[j], friction[j] = s[j], q[j], modes[j], tau[j]
            accel[j], static[j], kinetic[j] = g[j], t_s[j], t_c[j]
        status = self._phase(slips, angles, mode, friction, accel, static, kinetic, remaining, max_steps)
        if status != _RESOLVED:
            return self.reference(self.system, s, q, modes, tau, g, t_s, t_c, remaining, max_steps)
        for j in range(self.k):
            if mode[j] != 0:
                s[j], q[j] = slips[j], angles[j]
        if self._last_event < 0:
            return self._phase_dt, None, None, self._used
        if self._breaking == 0:
            return self._phase_dt, self._last_event, None, self._used
        return (self._phase_dt, self._last_event, (self._last_event, FORWARD if self._breaking > 0 else BACKWARD),
                self._used)

    # ------------------------------------------------------------------ C parts
    @cython.cfunc
    @cython.locals(s=cython.p_double, q=cython.p_double, modes=cython.p_int, tau=cython.p_double,
                   g=cython.p_double, t_s=cython.p_double, t_c=cython.p_double, remaining=cython.double,
                   max_steps=cython.int, i=cython.int, j=cython.int, r=cython.int, n=cython.int, nk=cython.int,
                   n_stuck=cython.int, event=cython.int, held=cython.double, limit=cython.double,
                   scale=cython.double, x=cython.double, excess=cython.double, have_f0=cython.bint,
                   stuck=cython.int[5], y0=cython.double[10], f0=cython.double[10], y=cython.double[10],
                   torques0=cython.double[5])
    @cython.returns(cython.int)
    def _phase(self, s, q, modes, tau, g, t_s, t_c, remaining, max_steps):
        """FrictionSystem._advance_ode in place (s, q): _RESOLVED with the phase's length, the
        interface of its event (-1: none), the direction a stuck one breaks away in (0: none)
        and the attempted steps in _phase_dt, _last_event, _breaking, _used; _OVER_BUDGET where
        the reference raises IntegrationError; _BY_REFERENCE, s and q untouched, where the
        reference decides: three or more stuck interfaces beside slipping ones (its LU sums
        more than one product: CPython 3.12 compensates such sums), a singular stuck block,
        no time left (it raises)."""
        nk = n_stuck = 0
        for j in range(self.k):
            if modes[j] != 0:
                self.slip[nk] = j
                self.dirs[nk] = 0 if modes[j] == 2 else modes[j]
                self.slip_static[nk], self.slip_kinetic[nk] = t_s[j], t_c[j]
                nk += 1
            else:
                stuck[n_stuck] = j
                n_stuck += 1
        self.nk, self.n_stuck = nk, n_stuck
        if n_stuck > 2 or not remaining > 0.0 or not self._partition(stuck, g):
            return _BY_REFERENCE
        n = 2 * nk
        for i in range(nk):
            y0[i], y0[nk + i] = s[self.slip[i]], 0.0
        # the events (friction.py: a slip reaching zero, watched through d s / t when it
        # starts at zero; a stuck friction at its static limit, offset to resolve's value)
        self.n_events = 0
        have_f0 = False
        for i in range(nk):
            if self.dirs[i] == 0:
                continue
            j = self.slip[i]
            if s[j] != 0.0:
                self._add_event(_SLIP, i, 0.0, j)
            else:
                if not have_f0:
                    self._rhs(y0, f0)
                    have_f0 = True
                self._add_event(_SLIP_FROM_ZERO, i, self.dirs[i] * f0[i], j)
        if n_stuck:
            self._slip_torques(y0, torques0)
            for r in range(n_stuck):
                j = stuck[r]
                held = self.p_stuck[r] - self._dot_slip(cython.address(self.q_stuck[r * MAX_INTERFACES]), torques0)
                if self.one_way[j]:
                    limit = t_s[j] * STICK_SLACK + (tau[j] - held)
                    self._add_event(_HOLD_ONE_WAY, r, limit, j)
                else:
                    limit = t_s[j] * STICK_SLACK - (fabs(tau[j]) - fabs(held))
                    self._add_event(_HOLD, r, limit, j)
        scale = fabs(s[0])
        for j in range(1, self.k):
            x = fabs(s[j])
            if x > scale:
                scale = x
        if not scale > 1.0:
            scale = 1.0
        if max_steps < 1:
            return _OVER_BUDGET
        event = self._integrate(y0, y, n, remaining, 1e-12 * scale, max_steps)
        if event == -2:
            return _OVER_BUDGET
        for i in range(nk):
            j = self.slip[i]
            s[j] = y[i]
            q[j] += y[nk + i]
        self._breaking = 0
        if event < 0:
            self._last_event = -1
            return _RESOLVED
        j = self._last_event = self.event_ids[event]
        if modes[j] != 0:
            s[j] = 0.0
            return _RESOLVED
        # a stuck friction went past its static limit: it breaks away in the excess's direction
        r = self.event_index[event]
        self._slip_torques(y, torques0)
        excess = self.p_stuck[r] - self._dot_slip(cython.address(self.q_stuck[r * MAX_INTERFACES]), torques0)
        self._breaking = 1 if excess > 0.0 else -1
        return _RESOLVED

    @cython.cfunc
    @cython.locals(kind=cython.int, index=cython.int, value=cython.double, j=cython.int)
    @cython.returns(cython.void)
    def _add_event(self, kind, index, value, j):
        self.event_kind[self.n_events], self.event_index[self.n_events] = kind, index
        self.event_value[self.n_events], self.event_ids[self.n_events] = value, j
        self.n_events += 1

    @cython.cfunc
    @cython.locals(stuck=cython.p_int, g=cython.p_double, i=cython.int, i2=cython.int, l=cython.int,
                   r=cython.int, c=cython.int, nk=cython.int, n_stuck=cython.int, total=cython.double,
                   a_inv=cython.double[4], m_ks=cython.double[10], y=cython.double[2])
    @cython.returns(cython.bint)
    def _partition(self, stuck, g):
        """FrictionSystem._partition and the phase's constants: the Schur complement S of the
        slipping block, c = g_k - M_ks M_ss^-1 g_s, P = M_ss^-1 g_s and Q = M_ss^-1 M_sk (eq. 19
        solved for the stuck frictions); False where M_ss is singular (dense.lu_factor)."""
        nk, n_stuck = self.nk, self.n_stuck
        for i in range(nk):
            self.c_slip[i] = g[self.slip[i]]
            for i2 in range(nk):
                self.schur[i * MAX_INTERFACES + i2] = self.m[self.slip[i] * MAX_INTERFACES + self.slip[i2]]
        if n_stuck == 0:
            return True
        # M_ss^-1 column by column from one LU factorization (dense.inverse), n_stuck <= 2
        if not self._inverse(stuck, a_inv):
            return False
        for i in range(nk):
            for l in range(n_stuck):
                m_ks[i * 2 + l] = self.m[self.slip[i] * MAX_INTERFACES + stuck[l]]
        for r in range(n_stuck):                # Q = M_ss^-1 M_sk
            for i in range(nk):
                total = 0.0
                for l in range(n_stuck):
                    total += a_inv[r * 2 + l] * self.m[stuck[l] * MAX_INTERFACES + self.slip[i]]
                self.q_stuck[r * MAX_INTERFACES + i] = total
        for i in range(nk):                     # S = M_kk - M_ks Q
            for i2 in range(nk):
                total = 0.0
                for l in range(n_stuck):
                    total += m_ks[i * 2 + l] * self.q_stuck[l * MAX_INTERFACES + i2]
                self.schur[i * MAX_INTERFACES + i2] = self.schur[i * MAX_INTERFACES + i2] - total
        for r in range(n_stuck):                # P = M_ss^-1 g_s
            total = 0.0
            for l in range(n_stuck):
                total += a_inv[r * 2 + l] * g[stuck[l]]
            self.p_stuck[r] = total
        for i in range(nk):                     # c = g_k - M_ks P
            total = 0.0
            for l in range(n_stuck):
                total += m_ks[i * 2 + l] * self.p_stuck[l]
            self.c_slip[i] = self.c_slip[i] - total
        return True

    @cython.cfunc
    @cython.locals(stuck=cython.p_int, a_inv=cython.p_double, n=cython.int, i=cython.int, k=cython.int,
                   c=cython.int, pivot_row=cython.int, swap=cython.int, pivot=cython.double,
                   factor=cython.double, x=cython.double, total=cython.double, lu=cython.double[4],
                   order=cython.int[2], y=cython.double[2])
    @cython.returns(cython.bint)
    def _inverse(self, stuck, a_inv):
        """M[stuck, stuck]^-1 (n <= 2) as dense.inverse forms it: lu_factor with partial
        pivoting, lu_solve of each unit vector, transposed; False for a singular pivot."""
        n = self.n_stuck
        for i in range(n):
            order[i] = i
            for c in range(n):
                lu[i * 2 + c] = self.m[stuck[i] * MAX_INTERFACES + stuck[c]]
        for k in range(n):
            pivot_row = k
            for i in range(k + 1, n):
                if fabs(lu[i * 2 + k]) > fabs(lu[pivot_row * 2 + k]):
                    pivot_row = i
            pivot = lu[pivot_row * 2 + k]
            if pivot == 0.0 or not isfinite(pivot):
                return False
            if pivot_row != k:
                for c in range(n):
                    x = lu[k * 2 + c]
                    lu[k * 2 + c] = lu[pivot_row * 2 + c]
                    lu[pivot_row * 2 + c] = x
                swap = order[k]
                order[k] = order[pivot_row]
                order[pivot_row] = swap
            for i in range(k + 1, n):
                factor = lu[i * 2 + k] / pivot
                lu[i * 2 + k] = factor
                if factor != 0.0:
                    for c in range(k + 1, n):
                        lu[i * 2 + c] = lu[i * 2 + c] - factor * lu[k * 2 + c]
        for c in range(n):                      # lu_solve(unit vector c): column c of the inverse
            for i in range(n):
                y[i] = 1.0 if order[i] == c else 0.0
            for i in range(1, n):               # L y = P b (unit diagonal)
                total = 0.0
                for k in range(i):
                    total += lu[i * 2 + k] * y[k]
                y[i] -= total
            for i in range(n - 1, -1, -1):      # U x = y
                total = 0.0
                for k in range(i + 1, n):
                    total += lu[i * 2 + k] * y[k]
                y[i] = (y[i] - total) / lu[i * 2 + i]
            for i in range(n):
                a_inv[i * 2 + c] = y[i]
        return True

    @cython.cfunc
    @cython.locals(x=cython.p_double, y=cython.p_double, i=cython.int, total=cython.double)
    @cython.returns(cython.double)
    def _dot_slip(self, x, y):
        """x . y over the slipping interfaces (dense.dot)."""
        total = 0.0
        for i in range(self.nk):
            total += x[i] * y[i]
        return total

    @cython.cfunc
    @cython.locals(y=cython.p_double, out=cython.p_double, i=cython.int, j=cython.int, d=cython.int,
                   slip=cython.double, level=cython.double, t_s=cython.double, t_c=cython.double)
    @cython.returns(cython.void)
    def _slip_torques(self, y, out):
        """The frictions of the slipping interfaces at slips y (eq. 2; a free one: viscous only)."""
        for i in range(self.nk):
            j, d, slip = self.slip[i], self.dirs[i], y[i]
            if d == 0:
                out[i] = self.d_visc[j] * slip
                continue
            t_s, t_c = self.slip_static[i], self.slip_kinetic[i]
            level = t_c                     # InterfaceLaw.slipping_torque
            if self.w_stribeck[j] > 0.0 and t_s != t_c:
                level += (t_s - t_c) * exp(-pow(fabs(slip) / self.w_stribeck[j], self.alpha[j]))
            out[i] = d * level + self.d_visc[j] * slip

    @cython.cfunc
    @cython.locals(y=cython.p_double, out=cython.p_double, i=cython.int, l=cython.int, nk=cython.int,
                   total=cython.double, torques=cython.double[5])
    @cython.returns(cython.void)
    def _rhs(self, y, out):
        """(s_k', q_k') = (c - S tau_k(s_k), s_k) (friction.py, FrictionSystem._advance_ode)."""
        nk = self.nk
        self._slip_torques(y, torques)
        for i in range(nk):
            total = 0.0
            for l in range(nk):
                total += self.schur[i * MAX_INTERFACES + l] * torques[l]
            out[i] = self.c_slip[i] - total
            out[nk + i] = y[i]

    @cython.cfunc
    @cython.locals(e=cython.int, t=cython.double, y=cython.p_double, kind=cython.int, i=cython.int,
                   d=cython.int, torques=cython.double[5])
    @cython.returns(cython.double)
    def _event(self, e, t, y):
        """Event e of the phase at (t, y): positive while the phase's modes hold."""
        kind, i = self.event_kind[e], self.event_index[e]
        if kind == _SLIP:
            return self.dirs[i] * y[i]
        if kind == _SLIP_FROM_ZERO:
            d = self.dirs[i]
            return d * y[i] / t if t > 0.0 else self.event_value[e]
        self._slip_torques(y, torques)
        if kind == _HOLD:
            return self.event_value[e] - fabs(
                self.p_stuck[i] - self._dot_slip(cython.address(self.q_stuck[i * MAX_INTERFACES]), torques))
        return self.event_value[e] + (
            self.p_stuck[i] - self._dot_slip(cython.address(self.q_stuck[i * MAX_INTERFACES]), torques))

    @cython.cfunc
    @cython.locals(y=cython.p_double, k0=cython.p_double, h=cython.double, n=cython.int, y_new=cython.p_double,
                   k6=cython.p_double, err=cython.p_double, i=cython.int, c0=cython.double, c1=cython.double,
                   c2=cython.double, c3=cython.double, c4=cython.double, c5=cython.double,
                   k1=cython.double[10], k2=cython.double[10], k3=cython.double[10], k4=cython.double[10],
                   k5=cython.double[10], stage=cython.double[10])
    @cython.returns(cython.void)
    def _rk_step(self, y, k0, h, n, y_new, k6, err):
        """ode._rk_step: one Dormand-Prince step of h from y with derivative k0 into y_new and,
        unless k6 is NULL, the derivative there and the error estimate (each stage summed in
        tableau order from the left, as the reference)."""
        c0 = h * _A[7]
        for i in range(n):
            stage[i] = y[i] + c0 * k0[i]
        self._rhs(stage, k1)
        c0, c1 = h * _A[14], h * _A[15]
        for i in range(n):
            stage[i] = y[i] + c0 * k0[i] + c1 * k1[i]
        self._rhs(stage, k2)
        c0, c1, c2 = h * _A[21], h * _A[22], h * _A[23]
        for i in range(n):
            stage[i] = y[i] + c0 * k0[i] + c1 * k1[i] + c2 * k2[i]
        self._rhs(stage, k3)
        c0, c1, c2, c3 = h * _A[28], h * _A[29], h * _A[30], h * _A[31]
        for i in range(n):
            stage[i] = y[i] + c0 * k0[i] + c1 * k1[i] + c2 * k2[i] + c3 * k3[i]
        self._rhs(stage, k4)
        c0, c1, c2, c3, c4 = h * _A[35], h * _A[36], h * _A[37], h * _A[38], h * _A[39]
        for i in range(n):
            stage[i] = y[i] + c0 * k0[i] + c1 * k1[i] + c2 * k2[i] + c3 * k3[i] + c4 * k4[i]
        self._rhs(stage, k5)
        c0, c2, c3, c4, c5 = h * _A[42], h * _A[44], h * _A[45], h * _A[46], h * _A[47]   # _A[43] == 0
        for i in range(n):
            y_new[i] = y[i] + c0 * k0[i] + c2 * k2[i] + c3 * k3[i] + c4 * k4[i] + c5 * k5[i]
        if k6 == cython.NULL:
            return
        self._rhs(y_new, k6)
        c0, c1, c2, c3, c4, c5 = h * _E[0], h * _E[2], h * _E[3], h * _E[4], h * _E[5], h * _E[6]   # _E[1] == 0
        for i in range(n):
            err[i] = 0.0 + c0 * k0[i] + c1 * k2[i] + c2 * k3[i] + c3 * k4[i] + c4 * k5[i] + c5 * k6[i]

    @cython.cfunc
    @cython.locals(y0=cython.p_double, y=cython.p_double, n=cython.int, t_end=cython.double,
                   atol=cython.double, max_steps=cython.int, i=cython.int, e=cython.int,
                   attempts=cython.int, n_crossed=cython.int, t=cython.double, t_new=cython.double,
                   h=cython.double, x=cython.double, a=cython.double, b=cython.double, value=cython.double,
                   total=cython.double, err_norm=cython.double, g_new=cython.double,
                   f=cython.double[10], y_new=cython.double[10], f_new=cython.double[10], err=cython.double[10],
                   g_prev=cython.double[10], armed=cython.bint[10], crossed=cython.int[10],
                   g_crossed=cython.double[10])
    @cython.returns(cython.int)
    def _integrate(self, y0, y, n, t_end, atol, max_steps):
        """ode.integrate of the phase from t = 0, y0 to t_end (rtol 1e-10, first step t_end)
        into y: the event that fired (-1: none, t_end reached; -2: more than max_steps attempted
        steps, where the reference raises IntegrationError), the time in _phase_dt and the
        attempted steps in _used."""
        for i in range(n):
            y[i] = y0[i]
        t = 0.0
        self._rhs(y, f)
        for e in range(self.n_events):
            g_prev[e] = self._event(e, t, y)
            armed[e] = g_prev[e] > 0.0
        h = t_end
        attempts = 0
        while attempts < max_steps:
            attempts += 1
            x = t_end - t
            if x < h:
                h = x
            self._rk_step(y, f, h, n, y_new, f_new, err)
            total = 0.0                         # ode._error_norm
            for i in range(n):
                a, b = y[i], y_new[i]
                a = -a if a < 0.0 else a
                b = -b if b < 0.0 else b
                value = err[i] / (atol + 1e-10 * (a if a >= b else b))
                total += value * value
            err_norm = sqrt(total / n)
            if err_norm > 1.0:
                x = 0.9 * pow(err_norm, -0.2)
                h *= x if x > 0.2 else 0.2
                continue
            t_new = t_end if t + h >= t_end else t + h
            n_crossed = 0
            for e in range(self.n_events):
                g_new = self._event(e, t_new, y_new)
                if armed[e] and g_new <= 0.0:
                    crossed[n_crossed], g_crossed[n_crossed] = e, g_new
                    n_crossed += 1
                    continue
                if g_new > 0.0:
                    armed[e] = True
                elif not armed[e] and g_new < 0.0:
                    # never positive: reported at the start of the step
                    self._phase_dt, self._used = t, attempts
                    return e
                g_prev[e] = g_new
            if n_crossed:
                return self._earliest(t, y, f, h, y_new, n, crossed, g_crossed, n_crossed, g_prev, attempts)
            t = t_new
            for i in range(n):
                y[i], f[i] = y_new[i], f_new[i]
            if t >= t_end:
                self._phase_dt, self._used = t, attempts
                return -1
            if err_norm > 0:
                x = 0.9 * pow(err_norm, -0.2)
                h *= x if x < 5.0 else 5.0
            else:
                h *= 5.0
        return -2

    @cython.cfunc
    @cython.locals(t=cython.double, y=cython.p_double, f=cython.p_double, h=cython.double,
                   y_new=cython.p_double, n=cython.int, crossed=cython.p_int, g_crossed=cython.p_double,
                   n_crossed=cython.int, g_start=cython.p_double, attempts=cython.int, c=cython.int,
                   i=cython.int, e=cython.int, index=cython.int, used=cython.int, tol=cython.double,
                   lo=cython.double, hi=cython.double, g_lo=cython.double, g_hi=cython.double,
                   y_lo=cython.double[10], y_hi=cython.double[10], b_lo=cython.double[10],
                   b_hi=cython.double[10], bracket=cython.double[2])
    @cython.returns(cython.int)
    def _earliest(self, t, y, f, h, y_new, n, crossed, g_crossed, n_crossed, g_start, attempts):
        """ode._earliest into y: the earliest of the events that crossed zero in (t, t + h]."""
        index = crossed[0]
        used = 0
        for i in range(n):
            y_lo[i], y_hi[i] = y[i], y_new[i]
        used += self._locate(t, y, f, h, index, 0.0, g_start[index], y_lo, 1.0, g_crossed[0], y_hi, n, bracket)
        lo, hi = bracket[0], bracket[1]
        tol = _LOCATE_TOL * (fabs(t) if fabs(t) > 1.0 else 1.0)
        for c in range(1, n_crossed):
            e = crossed[c]
            g_hi = self._event(e, t + hi * h, y_hi)
            if g_hi > 0.0:
                continue
            g_lo = self._event(e, t + lo * h, y_lo) if lo > 0.0 else g_start[e]
            if g_lo <= 0.0:
                index = e
                for i in range(n):
                    y_hi[i] = y_lo[i]
                    y_lo[i] = y[i]
                used += self._locate(t, y, f, h, e, 0.0, g_start[e], y_lo, lo, g_lo, y_hi, n, bracket)
                lo, hi = bracket[0], bracket[1]
            elif (hi - lo) * h > tol:
                for i in range(n):
                    b_lo[i], b_hi[i] = y_lo[i], y_hi[i]
                used += self._locate(t, y, f, h, e, lo, g_lo, b_lo, hi, g_hi, b_hi, n, bracket)
                if bracket[1] < hi:
                    index = e
                    lo, hi = bracket[0], bracket[1]
                    for i in range(n):
                        y_lo[i], y_hi[i] = b_lo[i], b_hi[i]
        for i in range(n):
            y[i] = y_hi[i]
        self._phase_dt, self._used = t + hi * h, attempts + used
        return index

    @cython.cfunc
    @cython.locals(t=cython.double, y=cython.p_double, f=cython.p_double, h=cython.double, e=cython.int,
                   lo=cython.double, g_lo=cython.double, y_lo=cython.p_double, hi=cython.double,
                   g_hi=cython.double, y_hi=cython.p_double, n=cython.int, bracket=cython.p_double,
                   side=cython.int, count=cython.int, i=cython.int, theta=cython.double, g_mid=cython.double,
                   y_mid=cython.double[10])
    @cython.returns(cython.int)
    def _locate(self, t, y, f, h, e, lo, g_lo, y_lo, hi, g_hi, y_hi, n, bracket):
        """ode._locate: Illinois regula falsi for a zero of event e on theta in (lo, hi], the
        final bracket into (bracket, y_lo, y_hi); the Runge-Kutta steps it took."""
        side = 0
        count = 0
        while count < 200:
            count += 1
            theta = (lo * g_hi - hi * g_lo) / (g_hi - g_lo)
            if not lo < theta < hi:
                theta = 0.5 * (lo + hi)
            self._rk_step(y, f, theta * h, n, y_mid, cython.NULL, cython.NULL)
            g_mid = self._event(e, t + theta * h, y_mid)
            if g_mid > 0.0:
                lo, g_lo = theta, g_mid
                for i in range(n):
                    y_lo[i] = y_mid[i]
                if side == -1:
                    g_hi *= 0.5
                side = -1
            else:
                hi, g_hi = theta, g_mid
                for i in range(n):
                    y_hi[i] = y_mid[i]
                if side == 1:
                    g_lo *= 0.5
                side = 1
            if (hi - lo) * h <= _LOCATE_TOL * (fabs(t) if fabs(t) > 1.0 else 1.0) or g_mid == 0.0:
                break
        bracket[0], bracket[1] = lo, hi
        return count
