"""The per-step calls of a friction system over C doubles: the kernel of solvers/friction.py.

solvers/friction.py is the specification; this module is written by hand beside it (it is
not generated: the stick/slip decisions are loops over modes, not formulas).  Compiled, a
:class:`~solvers.friction.FrictionSystem` of at most MAX_MEMBERS members and MAX_INTERFACES
interfaces hands the calls a step makes to a :class:`FrictionKernel` (``compiled_methods``):
``capacities``, ``step_inputs``, ``resolve``, ``advance`` and ``member_motion``, the
matrices held as C arrays, every quantity a C double, with the reference's IEEE operations in
the reference's order (gcc -ffp-contract=off: compiled_modules), so every float is the
reference's bit for bit (tests/numerics/test_friction_kernel.py).  Each of those methods
wraps a C method of the same call over C values (``capacities_into``, ``step_inputs_into``,
``resolve_into``, ``advance_into``, ``motion_into``; a ChainState as a ChainValues struct),
declared with the class in solvers/friction_kernel.pxd, so that compiled code elsewhere
(systems/system_kernel.py's friction chain) cimports it and steps without a Python object.
The new ChainState is made by tuple.__new__, which is what its NamedTuple __new__ does
without that function's interpreted frame.

An ODE phase (a slipping interface with a Stribeck drop or viscous friction) is the
system's ``_advance_ode``, compiled in solvers/friction_ode_kernel.py.  What is rare stays
the reference's, called with the lists it takes: a resolution after an event that ends
where it began or at a stuck friction's static limit (``refuted``, ``breaking``), eq. 19 for
two or more stuck interfaces beside others (``stuck_torques``), the per-interface
``losses``, a step too long or of too many events, and every error (the reference raises
it, with its message).

Uncompiled, this module refuses to be imported and the reference runs.
"""
from __future__ import annotations

import cython

if not cython.compiled:
    raise ImportError("solvers.friction_kernel runs compiled only: solvers/friction.py runs instead")

from cython.cimports.libc.math import exp, fabs, pow  # noqa: E402
from cython.cimports.cpython.ref import Py_INCREF  # noqa: E402
from cython.cimports.cpython.tuple import PyTuple_New, PyTuple_SET_ITEM  # noqa: E402

from .contract import check_step  # noqa: E402
from .friction_state import (BACKWARD, EVENT_BUDGET, FORWARD, FREE, SLIP_ADVICE, STICK_SLACK, STUCK,  # noqa: E402
                             SUBSTEP_BUDGET, ChainState, stuck_candidates)
from .friction_ode_kernel import SlipPhases  # noqa: E402
from .ode import IntegrationError  # noqa: E402

#: the largest systems the kernel takes (ClutchChain: six bodies, five clutches); the C arrays
#: below are declared with these sizes (Cython takes literal sizes only)
MAX_MEMBERS = cython.declare(cython.int, 8)
MAX_INTERFACES = cython.declare(cython.int, 5)
_INFINITY = cython.declare(cython.double, float("inf"))
#: the Mode of each C mode value + 1 (BACKWARD -1, STUCK 0, FORWARD 1, FREE 2)
_MODES = (BACKWARD, STUCK, FORWARD, FREE)
#: resolve(): the candidate assignments of k zero-slip interfaces (friction_state.stuck_candidates, in
#: its order), k = 0..MAX_INTERFACES, each padded to MAX_INTERFACES modes, from _FIRST[k] on
_CANDIDATES = cython.declare(cython.int[364 * 5])
_FIRST = cython.declare(cython.int[6])
#: the outcomes of FrictionKernel._resolve
_RESOLVED = cython.declare(cython.int, 0)
_BY_REFERENCE = cython.declare(cython.int, 1)


def _fill_candidates():
    row = cython.declare(cython.int, 0)
    for count in range(MAX_INTERFACES + 1):
        _FIRST[count] = row
        for assignment in stuck_candidates(count):
            for i in range(count):
                _CANDIDATES[row * MAX_INTERFACES + i] = int(assignment[i])
            row += 1


_fill_candidates()


@cython.cfunc
@cython.locals(values=cython.p_double, count=cython.int, i=cython.int)
@cython.returns(list)
def _float_list(values, count):
    floats = []
    for i in range(count):
        floats.append(values[i])
    return floats


@cython.cfunc
@cython.locals(modes=cython.p_int, count=cython.int, i=cython.int)
@cython.returns(list)
def _mode_list(modes, count):
    """The Modes of C mode values."""
    found = []
    for i in range(count):
        found.append(_MODES[modes[i] + 1])
    return found


@cython.locals(j=cython.int, fields=tuple, q=tuple, s=tuple, modes=tuple)
def chain_values(state, k, out):
    """A ChainState of ``k`` interfaces into ``out`` (its modes as C values)."""
    fields = cython.cast(tuple, state)      # a NamedTuple: a tuple's items, read without its subscript
    out.theta, out.w_mean, out.e_loss = fields[0], fields[1], fields[5]
    q, s, modes = _as_tuple(fields[2]), _as_tuple(fields[3]), _as_tuple(fields[4])
    for j in range(k):
        out.q[j], out.s[j], out.modes[j] = q[j], s[j], modes[j]
    return 0


@cython.cfunc
@cython.returns(tuple)
def _as_tuple(items):
    """``items`` as a tuple (itself when it is one)."""
    return cython.cast(tuple, items) if type(items) is tuple else tuple(items)


@cython.locals(j=cython.int, q=tuple, s=tuple, modes=tuple)
def chain_state(values, k):
    """The ChainState of ``values`` of ``k`` interfaces (made as its NamedTuple __new__ makes it)."""
    q, s, modes = PyTuple_New(k), PyTuple_New(k), PyTuple_New(k)
    for j in range(k):          # each item's reference handed to its tuple
        item = cython.declare(object, values.q[j])
        Py_INCREF(item)
        PyTuple_SET_ITEM(q, j, item)
        item = values.s[j]
        Py_INCREF(item)
        PyTuple_SET_ITEM(s, j, item)
        item = _MODES[values.modes[j] + 1]
        Py_INCREF(item)
        PyTuple_SET_ITEM(modes, j, item)
    return tuple.__new__(ChainState, (values.theta, values.w_mean, q, s, modes, values.e_loss))


def compiled_methods(system) -> dict:
    """The per-step methods of ``system`` (a FrictionSystem) on its kernel, by name; none
    when it is larger than the kernel takes."""
    if system.n > MAX_MEMBERS or system.n_interfaces > MAX_INTERFACES:
        return {}
    kernel = FrictionKernel(system)
    return {"capacities": kernel.capacities, "step_inputs": kernel.step_inputs, "resolve": kernel.resolve,
            "advance": kernel.advance, "member_motion": kernel.member_motion,
            "_advance_ode": SlipPhases(system).advance_ode}


@cython.cclass
class FrictionKernel:
    """One FrictionSystem's matrices as C arrays (row stride MAX_INTERFACES or MAX_MEMBERS) and
    its per-step methods, each with the signature and the results of the reference's."""

    @cython.locals(i=cython.int, j=cython.int)
    def __init__(self, system):
        self.system, self.reference = system, type(system)
        self.n, self.k = system.n, system.n_interfaces
        self.j_total = system.j_total
        self.two = 2.0
        for i in range(self.k):
            for j in range(self.k):
                self.m[i * MAX_INTERFACES + j] = system.m[i][j]
                self.m_inv[i * MAX_INTERFACES + j] = system.m_inv[i][j]
            law = system.laws[i]
            self.static_levers[i], self.kinetic_levers[i] = system._static_levers[i], system._kinetic_levers[i]
            self.d_visc[i], self.w_stribeck[i], self.alpha[i] = law.d_visc, law.w_stribeck, law.alpha_stribeck
            self.one_way[i] = system._is_one_way[i]
        for i in range(self.n):
            self.free[i] = system.free_members[i]
            for j in range(self.k):
                self.k_members[i * MAX_INTERFACES + j] = system.k[i][j]
        for i in range(self.k + 1):
            for j in range(self.n):
                self.input_rows[i * MAX_MEMBERS + j] = system._input_rows[i][j]

    # ------------------------------------------------------------------ FrictionSystem's methods
    @cython.locals(i=cython.int, normal=cython.double[5], static=cython.double[5], kinetic=cython.double[5])
    def capacities(self, normal_forces):
        for i in range(self.k):
            normal[i] = normal_forces[i]
        self.capacities_into(normal, static, kinetic)
        return _float_list(static, self.k), _float_list(kinetic, self.k)

    @cython.locals(j=cython.int, torque=cython.double[8], g=cython.double[5], a_mean=cython.double)
    def step_inputs(self, torques):
        for j in range(self.n):
            torque[j] = torques[j]
        a_mean = self.step_inputs_into(torque, g)
        return a_mean, _float_list(g, self.k)

    @cython.locals(j=cython.int, slip=cython.double[5], current=cython.int[5], accel=cython.double[5],
                   static=cython.double[5], kinetic=cython.double[5], modes_out=cython.int[5], tau=cython.double[5])
    def resolve(self, s, modes, g, t_s, t_c, breaking=None, refuted=()):
        if breaking is not None or refuted:
            return self.reference.resolve(self.system, s, modes, g, t_s, t_c, breaking, refuted)
        for j in range(self.k):
            slip[j], current[j], accel[j], static[j], kinetic[j] = s[j], modes[j], g[j], t_s[j], t_c[j]
        self.resolve_into(slip, current, accel, static, kinetic, modes_out, tau)
        return _mode_list(modes_out, self.k), _float_list(tau, self.k)

    @cython.locals(values=ChainValues, motion=cython.double[16])
    def member_motion(self, state):
        chain_values(state, self.k, cython.address(values))
        self.motion_into(cython.address(values), motion)
        return _float_list(motion, 2 * self.n)

    @cython.locals(j=cython.int, a_mean=cython.double, values=ChainValues, out=ChainValues,
                   torque=cython.double[8], g=cython.double[5], static=cython.double[5], kinetic=cython.double[5],
                   start_modes=cython.int[5], start_tau=cython.double[5])
    def advance(self, state, torques, t_s, t_c, h, events=None, start=None, inputs=None, losses=None):
        if losses is not None:
            return self.reference.advance(self.system, state, torques, t_s, t_c, h, events, start, inputs, losses)
        for j in range(self.n):
            torque[j] = torques[j]
        if inputs is None:
            a_mean = self.step_inputs_into(torque, g)
        else:
            a_mean, g_list = inputs
            for j in range(self.k):
                g[j] = g_list[j]
        for j in range(self.k):
            static[j], kinetic[j] = t_s[j], t_c[j]
        chain_values(state, self.k, cython.address(values))
        if start is None:
            self.resolve_into(values.s, values.modes, g, static, kinetic, start_modes, start_tau)
        else:
            for j in range(self.k):
                start_modes[j], start_tau[j] = start[0][j], start[1][j]
        self.advance_into(cython.address(values), torque, a_mean, g, static, kinetic, h, start_modes, start_tau,
                          events, cython.address(out))
        return chain_state(cython.address(out), self.k)

    # ------------------------------------------------------------------ the same over C values
    @cython.locals(i=cython.int, f_n=cython.double)
    def capacities_into(self, normal_forces, t_s, t_c):
        for i in range(self.k):
            f_n = normal_forces[i]
            t_s[i] = self.static_levers[i] * f_n
            t_c[i] = self.kinetic_levers[i] * f_n

    @cython.locals(i=cython.int, j=cython.int, total=cython.double)
    def step_inputs_into(self, torque, g):
        """a_mean (the mean acceleration); g (the interfaces' free slip accelerations) into ``g``."""
        total = 0.0
        for j in range(self.n):
            total += self.input_rows[j] * torque[j]
        a_mean = cython.declare(cython.double, total / self.j_total)
        for i in range(1, self.k + 1):
            total = 0.0
            for j in range(self.n):
                total += self.input_rows[i * MAX_MEMBERS + j] * torque[j]
            g[i - 1] = total
        return a_mean

    @cython.locals(j=cython.int)
    def resolve_into(self, s, modes, g, t_s, t_c, modes_out, tau):
        """FrictionSystem.resolve without ``breaking`` and ``refuted`` into ``modes_out``, ``tau``
        (the reference's where it decides: it may raise)."""
        if self._resolve(s, g, t_s, t_c, modes_out, tau) != _RESOLVED:
            found_modes, found_tau = self.reference.resolve(
                self.system, _float_list(s, self.k), _mode_list(modes, self.k), _float_list(g, self.k),
                _float_list(t_s, self.k), _float_list(t_c, self.k))
            for j in range(self.k):
                modes_out[j], tau[j] = found_modes[j], found_tau[j]
        return 0

    @cython.locals(i=cython.int, n=cython.int, offsets=cython.double[8], relative=cython.double[8],
                   slipping=cython.bint)
    def motion_into(self, state, motion):
        """FrictionSystem.member_motion: the members' angles, then their speeds, into ``motion``."""
        n = self.n
        slipping = False
        for i in range(self.k):
            if state.s[i] != 0.0:
                slipping = True
        self._matvec(self.k_members, n, state.q, offsets)
        for i in range(n):
            motion[i] = self.free[i] * state.theta + offsets[i]
        if slipping:
            self._matvec(self.k_members, n, state.s, relative)
            for i in range(n):
                motion[n + i] = self.free[i] * state.w_mean + relative[i]
        else:
            for i in range(n):
                motion[n + i] = self.free[i] * state.w_mean

    @cython.locals(i=cython.int, j=cython.int, m=cython.int, n=cython.int, event=cython.int, phase=cython.int,
                   max_events=cython.int, substeps=cython.int, used=cython.int, status=cython.int,
                   all_stuck=cython.bint,
                   analytic=cython.bint, mode=cython.int, step=cython.double,
                   theta=cython.double, theta_start=cython.double, w_mean=cython.double,
                   e_loss_start=cython.double,
                   t=cython.double, dt=cython.double, ke_start=cython.double, ke_end=cython.double,
                   d_theta=cython.double, work=cython.double, x=cython.double,
                   relative=cython.double[8], q=cython.double[5],
                   s=cython.double[5], q_start=cython.double[5],
                   dq=cython.double[5], tau=cython.double[5],
                   modes=cython.int[5])
    def advance_into(self, state, torque, a_mean, g, t_s, t_c, h, start_modes, start_tau, events, out):
        """FrictionSystem.advance without ``losses`` from ``state`` into ``out`` (``state`` is
        read whole before ``out`` is written), the step's start resolution given; ``events``
        (a list, or None) gets (t, interface) of each slip that reached zero.  Raises as the
        reference does (a step too long or of too many events, a resolution that fails)."""
        step = h
        if not 0.0 < step < _INFINITY:
            check_step(h)                               # raises, naming h
        m, n = self.k, self.n
        theta_start, w_mean, e_loss_start = state.theta, state.w_mean, state.e_loss
        theta = theta_start
        all_stuck = True
        for j in range(m):
            q[j] = q_start[j] = state.q[j]
            s[j] = state.s[j]
            modes[j], tau[j] = start_modes[j], start_tau[j]
            if modes[j] != 0:
                all_stuck = False
        if all_stuck:
            # every interface holds for the whole step (friction.py, FrictionSystem.advance)
            theta += w_mean * step + 0.5 * a_mean * step * step
            out.theta, out.w_mean, out.e_loss = theta, w_mean + a_mean * step, e_loss_start
            for j in range(m):
                out.q[j], out.s[j], out.modes[j] = q[j], s[j], modes[j]
            return 0
        ke_start = self._kinetic_energy(w_mean, s)
        t = 0.0
        breaking, refuted = None, ()
        max_events = substeps = -1
        phase = 0
        while True:
            if phase:                       # after an event: re-decide the stuck set
                status = _BY_REFERENCE if breaking is not None or refuted else \
                    self._resolve(s, g, t_s, t_c, modes, tau)
                if status != _RESOLVED:
                    new_modes, new_tau = self.reference.resolve(
                        self.system, _float_list(s, m), _mode_list(modes, m), _float_list(g, m),
                        _float_list(t_s, m), _float_list(t_c, m), breaking, refuted)
                    for j in range(m):
                        modes[j], tau[j] = new_modes[j], new_tau[j]
            analytic = True
            for j in range(m):
                mode = modes[j]
                if mode != 0 and not (self.d_visc[j] == 0.0 and (mode == 2 or self.w_stribeck[j] <= 0.0
                                                                 or t_s[j] == t_c[j])):
                    analytic = False
            if analytic:
                dt = self._advance_constant(s, q, modes, tau, g, step - t)
                event = self._last_event
                breaking = None
            else:
                if substeps < 0:
                    substeps = SUBSTEP_BUDGET.limit(h)
                s_list, q_list = _float_list(s, m), _float_list(q, m)
                try:
                    dt, found, breaking, used = self.system._advance_ode(
                        s_list, q_list, _mode_list(modes, m), _float_list(tau, m), _float_list(g, m),
                        _float_list(t_s, m), _float_list(t_c, m), step - t, substeps)
                except IntegrationError:
                    raise SUBSTEP_BUDGET.exceeded("friction chain", h, SLIP_ADVICE) from None
                for j in range(m):
                    s[j], q[j] = s_list[j], q_list[j]
                event = -1 if found is None else found
                substeps -= used
            theta += w_mean * dt + 0.5 * a_mean * dt * dt
            w_mean += a_mean * dt
            t += dt
            if event < 0:
                break
            if events is not None:
                events.append((t, event))
            # a phase that ended where it began: its modes cannot be continued from here
            refuted = (*refuted, tuple(_mode_list(modes, m))) if dt == 0.0 else ()
            if max_events < 0:
                max_events = EVENT_BUDGET.limit(h)
            phase += 1
            if phase > max_events:          # the phases 0 .. max_events have all ended in an event
                raise EVENT_BUDGET.exceeded("friction chain", h, SLIP_ADVICE)
        # the energy balance of friction.py's advance: dissipated = work of F - change of KE
        for j in range(m):
            dq[j] = q[j] - q_start[j]
        d_theta = theta - theta_start
        self._matvec(self.k_members, n, dq, relative)
        work = 0.0
        for i in range(n):
            x = self.free[i]
            work += torque[i] * (x * d_theta + relative[i])
        ke_end = self._kinetic_energy(w_mean, s)
        out.theta, out.w_mean, out.e_loss = theta, w_mean, e_loss_start + work - (ke_end - ke_start)
        for j in range(m):
            out.q[j], out.s[j], out.modes[j] = q[j], s[j], modes[j]
        return 0

    # ------------------------------------------------------------------ C parts
    @cython.locals(i=cython.int, j=cython.int, total=cython.double)
    def _matvec(self, a, rows, x, out):
        """out = A x for the first ``rows`` rows of A (stride MAX_INTERFACES, k columns),
        each sum from 0.0 in index order (dense.matvec)."""
        for i in range(rows):
            total = 0.0
            for j in range(self.k):
                total += a[i * MAX_INTERFACES + j] * x[j]
            out[i] = total

    @cython.locals(relative=cython.double, free=cython.double, products=cython.double[5])
    def _kinetic_energy(self, w_mean, s):
        """FrictionSystem.kinetic_energy: w_mean^2 by the C library's pow, as Python's power."""
        self._matvec(self.m_inv, self.k, s, products)
        relative = self._dot(s, products)
        free = 0.5 * self.j_total * pow(w_mean, self.two) if w_mean != 0.0 else 0.0
        return free + 0.5 * relative

    @cython.locals(i=cython.int, total=cython.double)
    def _dot(self, x, y):
        total = 0.0
        for i in range(self.k):
            total += x[i] * y[i]
        return total

    @cython.locals(j=cython.int, mode=cython.int, event=cython.int, dt=cython.double, a=cython.double, slip=cython.double,
                   t_zero=cython.double, friction=cython.double[5], accel=cython.double[5])
    def _advance_constant(self, s, q, modes, tau, g, remaining):
        """FrictionSystem._advance_constant in place: the phase's length; the interface whose
        slip reached zero at its end in ``_last_event`` (-1: none)."""
        self._matvec(self.m, self.k, tau, friction)
        for j in range(self.k):             # s' = g - M tau; 0 while stuck
            accel[j] = 0.0 if modes[j] == 0 else g[j] - friction[j]
        dt, event = remaining, -1
        for j in range(self.k):
            mode, a = modes[j], accel[j]
            if (mode == 1 or mode == -1) and a * mode < 0.0:     # a slip decelerating to zero
                slip = s[j]
                t_zero = -slip / a
                if t_zero < dt:
                    dt, event = t_zero, j
        for j in range(self.k):
            if modes[j] != 0:
                slip, a = s[j], accel[j]
                q[j] += slip * dt + 0.5 * a * dt * dt
                s[j] = slip + a * dt
        self._last_event = event
        if event >= 0:
            s[event] = 0.0
        return dt

    @cython.locals(i=cython.int, j=cython.int, row=cython.int, count=cython.int, n_zero=cython.int,
                   n_stuck=cython.int, mode=cython.int, allowed=cython.bint, consistent=cython.bint,
                   slip=cython.double, level=cython.double, total=cython.double, limit=cython.double,
                   x=cython.double, row_i=cython.p_double, zero=cython.int[5], stuck=cython.int[5],
                   trial=cython.double[5], solved=cython.double[5], others=cython.double[5])
    def _resolve(self, s, g, t_s, t_c, modes, tau):
        """FrictionSystem.resolve without ``breaking`` and ``refuted`` into ``modes``, ``tau``:
        _RESOLVED, or _BY_REFERENCE where the reference decides (a freewheel slipping forward,
        two or more stuck interfaces beside others, no consistent assignment: it raises)."""
        n_zero = 0
        for j in range(self.k):
            slip = s[j]
            if t_s[j] <= 0.0 and not self.one_way[j]:
                modes[j] = 2
                tau[j] = self.d_visc[j] * slip
            elif slip != 0.0:
                if slip > 0.0 and self.one_way[j]:
                    return _BY_REFERENCE
                modes[j] = 1 if slip > 0.0 else -1
                level = t_c[j]                  # InterfaceLaw.slipping_torque (eq. 2)
                if self.w_stribeck[j] > 0.0 and t_s[j] != t_c[j]:
                    level += (t_s[j] - t_c[j]) * exp(-pow(fabs(slip) / self.w_stribeck[j], self.alpha[j]))
                tau[j] = modes[j] * level + self.d_visc[j] * slip
            else:
                zero[n_zero] = j
                n_zero += 1
        if n_zero == 0:
            return _RESOLVED
        count = 1
        for i in range(n_zero):
            count *= 3
        for row in range(_FIRST[n_zero], _FIRST[n_zero] + count):
            n_stuck = 0
            for j in range(self.k):
                trial[j] = tau[j]
            allowed = True
            for i in range(n_zero):
                j, mode = zero[i], _CANDIDATES[row * MAX_INTERFACES + i]
                if mode == 0:
                    stuck[n_stuck] = j
                    n_stuck += 1
                elif mode == 1 and self.one_way[j]:
                    allowed = False             # a freewheel never breaks away forward
                    break
                else:                           # InterfaceLaw.breakaway_torque
                    trial[j] = mode * (t_s[j] if self.w_stribeck[j] > 0.0 else t_c[j])
            if not allowed:
                continue
            if n_stuck:
                if n_stuck == self.k:           # eq. 19, all stuck: M tau = g
                    self._matvec(self.m_inv, self.k, g, solved)
                elif n_stuck == 1:              # FrictionSystem.stuck_torques of one
                    i = stuck[0]
                    for j in range(self.k):
                        others[j] = trial[j]
                    others[i] = 0.0
                    row_i = cython.address(self.m[i * MAX_INTERFACES])
                    solved[0] = (g[i] - self._dot(row_i, others)) / row_i[i]
                else:
                    return _BY_REFERENCE
                consistent = True               # FrictionSystem._holds (eq. 20)
                for i in range(n_stuck):
                    j, x = stuck[i], solved[i]
                    limit = t_s[j] * STICK_SLACK
                    if (x < -limit) if self.one_way[j] else (fabs(x) > limit or limit <= 0.0):
                        consistent = False
                        break
                if not consistent:
                    continue
                for i in range(n_stuck):
                    trial[stuck[i]] = solved[i]
            consistent = True
            for i in range(n_zero):
                j, mode = zero[i], _CANDIDATES[row * MAX_INTERFACES + i]
                if mode != 0:
                    total = g[j] - self._dot(cython.address(self.m[j * MAX_INTERFACES]), trial)
                    if mode * total <= 0.0:
                        consistent = False
                        break
            if consistent:
                for i in range(n_zero):
                    modes[zero[i]] = _CANDIDATES[row * MAX_INTERFACES + i]
                for j in range(self.k):
                    tau[j] = trial[j]
                return _RESOLVED
        return _BY_REFERENCE
