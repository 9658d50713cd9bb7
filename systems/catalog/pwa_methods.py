"""The piecewise-affine discretisation baselines of Reiter's comparison and their harness.

Reiter, *Nonlinear drivetrain elements*, section 3.2.1-3.2.2: each baseline in
:data:`METHODS` is a factory ``make(oscillator, h) -> step(x, v, u) -> (x, v)`` with its
matrices computed once: explicit Euler (eq. 43), constant nonlinearity per step
(eq. 58-68) with and without the internal linear stiffness (eq. 69-72), online coordinate
shifting (eq. 73-78), matrix-exponential approximation (eq. 46-52), switching affine
models without step adjustment (eq. 79-83) and with exact switching
(:meth:`solvers.pwa.PwaOscillator.step`, what the NonlinearSpring FMU uses).
:func:`simulate` runs a stepper on a grid, :func:`reference` is the independent scipy
reference, :func:`discrete_energy` the discrete system energy of eq. 94-96.

They are for comparisons and studies only (``drivetrain-fmu compare r1``, the tests,
``benchmarks/bench_pwa.py``) and use numpy and scipy, which the FMUs do not ship.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from drivetrain_fmu.solvers.exponential import expm2
from drivetrain_fmu.solvers.pwa import OscillatorState, PwaOscillator

from ..optional import require


def zoh(A: np.ndarray, h: float) -> tuple[np.ndarray, np.ndarray]:
    """Exact zero-order-hold matrices Phi = exp(A h) and L = int_0^h exp(A s) ds (eq. 66),
    from one exponential of the block matrix [[A, I], [0, 0]] (Van Loan 1978)."""
    expm = require("scipy.linalg", "the exact discretisation needs", "cli").expm

    n = A.shape[0]
    block = np.zeros((2 * n, 2 * n))
    block[:n, :n] = A
    block[:n, n:] = np.eye(n)
    E = expm(block * h)
    return E[:n, :n], E[:n, n:]


# ------------------------------------------------------------------ discretisation methods
Stepper = Callable[[float, float, float], tuple[float, float]]


def _linear_damping(osc: PwaOscillator, method: str) -> float:
    if osc.damper.n_regions != 1 or osc.coulomb != 0.0:
        raise ValueError(f"method {method!r} is defined for a linear damper without Coulomb "
                         "friction (Reiter section 3.2.2)")
    return osc.damper.slopes[0]


def make_euler(osc: PwaOscillator, h: float) -> Stepper:
    """Explicit Euler, eq. 41-43, on the continuous right-hand side."""

    def step(x, v, u):
        dx, dv = osc.rhs(0.0, (x, v), u)
        return x + h * dx, v + h * dv
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
        a = osc.rhs(0.0, (x, v), u)[1]
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
    solve_ivp = require("scipy.integrate", "the reference solution needs", "cli").solve_ivp

    xs, vs = np.empty(n_steps + 1), np.empty(n_steps + 1)
    x, v = float(x0), float(v0)
    xs[0], vs[0] = x, v
    levels_x = [s for b in osc.spring.breakpoints[1:] for s in (b, -b)]
    levels_v = [s for b in osc.damper.breakpoints[1:] for s in (b, -b)]
    for k in range(n_steps):
        uk = 0.0 if u is None else u(k * h)
        t, t_end = 0.0, h
        while t < t_end:
            sf = osc.friction_direction(x, v, uk, True)
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
