"""TorqueConverter: a pump (impeller, on the engine side) and a turbine (on the gearbox side)
joined by the fluid and by a lock-up clutch.

Dynamics (torques positive accelerating the member they act on)
    J_pump w_pump'       = tau_pump    + f_pump    - tau_fric
    J_turbine w_turbine' = tau_turbine + f_turbine + tau_fric
f_pump, f_turbine: the fluid's torques (solvers.fluid_coupling, eq. 1-3): in drive
f_pump = -(w_pump / K(SR))^2 and f_turbine = -TR(SR) f_pump with SR = w_turbine / w_pump, the
steady-state characteristic of Simscape Driveline's Torque Converter and Chrono's
ChShaftsTorqueConverter (the stator's reaction, -(f_pump + f_turbine), goes to the housing).
Outputs in the interface contract's signs: tau_fluid_pump = -f_pump, the torque the pump
gives the fluid ((w_pump / K)^2 in drive), and tau_fluid_turbine = f_turbine (TR times it).
K and TR are tables of six breakpoints SR_1 < ... < SR_6 < 1 (K_i, TR_i), linear between them,
held below SR_1; above SR_6 the capacity 1 / K^2 falls linearly to 0 at SR = 1 (zero slip:
no circulation, no torque) with TR held at TR_6.  Reverse flow (the turbine overrunning,
SR > 1; a pump turning backwards; opposite directions): the faster member drives the fluid
with the same table and nothing is multiplied (TR = 1), Chrono's rule made continuous
(solvers/fluid_coupling.py states it in full).
tau_fric: the lock-up clutch between pump and turbine, slip w_slip = w_pump - w_turbine, the
torque it passes from the pump to the turbine, with Clutch's friction law (eq. 2 of
solvers.friction) and capacities T_s = mu_s r_eff n_surfaces f_n, T_c = mu_k r_eff n_surfaces
f_n: the friction system of solvers.friction with one interface (a two-body chain), its lock
and breakaway at their exact instants inside a step for the torques it holds over the step.

Default table (illustrative, not a particular converter's data): shaped like the published
curves of passenger-car converters, a stall torque ratio TR(0) = 2 falling to the coupling
point TR = 1 at SR = 0.87, K(0) = 14 rad/s/sqrt(N.m) (stall: 150 N.m of engine torque holds
the pump at 14 sqrt(150) = 171 rad/s, 1640 rpm) rising steeply towards the coupling range
(K = 28 at SR = 0.95).  Its efficiency SR TR peaks at 0.90 below the coupling point (SR = 0.8)
and rises to 1 only as the torque vanishes at SR = 1.  K's unit, rad/s/sqrt(N.m), has
fractional base-unit exponents, which FMI 2.0's BaseUnit cannot express: the K_i declare the
unit by its name alone (fmus/variables.py's UNITS).  The lock-up clutch's defaults are a wet
clutch's (mu about 0.1 in transmission fluid), also illustrative.

The fluid torque in a step.  solvers.friction holds the member torques over a step, so the
fluid torque enters as a held value; held at its start value (zero-order hold) the coupling
would be integrated by the explicit Euler method, first order.  We take Heun's method instead
(a mid-step re-evaluation, second order): a predictor step holds f(start), the step is then
taken again from the start holding the mean (f(start) + f(predicted end)) / 2.  Both steps
decide the clutch's stick/slip exactly for the torques they hold.  A step that neither
starts nor ends slipping costs one friction step (the fluid torque is 0 at zero slip).
Stability: linearized, the fluid torques' Jacobian A (the damping of the coupling: in drive
d|f_pump|/dw_pump = 2 w_pump / K^2 at a fixed K, more with K's slope) against the inertias
gives the rate rho, the spectral radius of diag(1 / J_pump, 1 / J_turbine) A; Euler and Heun
alike are stable for h rho <= 2 when the eigenvalues are real and negative (the converter's:
the limit h < 2 J / d of one inertia on a damper d).  A step with h > 2 / rho at its start
or its predicted end is refused, naming the limit (a stuck clutch that holds for the whole
step has no fluid torque and no limit).  At the defaults, at the stall speed 171 rad/s:
rho = 27 1/s, h < 75 ms; near lock (SR = 0.95 .. 1) the fluid's damping of the slip is
beta = w_pump / ((1 - SR_6) K_6^2) = 4.4 N.m.s/rad, rho = beta (1 / J_pump + 1 / J_turbine) =
110 1/s: h < 18 ms; it grows with the pump's speed and falls with the inertias.
Energy: the fluid dissipates, per step, minus the work of the held fluid torques over the
members' rotations (e_loss_fluid); solvers.friction's clutch loss is the work of all held
torques minus the change of kinetic energy.  So kinetic energy change = work of tau_pump and
tau_turbine - e_loss, to rounding, whatever the step (e_loss = clutch + fluid).  Fluid
torques are functions of the state (no feedthrough); tau_fric and locked are resolved at the
communication point with the fluid torque of that instant.
"""
from __future__ import annotations

from typing import NamedTuple

from drivetrain_fmu.solvers.contract import SolverError
from drivetrain_fmu.solvers.fluid_coupling import K_MIN, ConverterTable, fluid_rate, fluid_torques
from drivetrain_fmu.solvers.friction import STUCK, ChainState

from .clutch import FrictionElement, interface_variables
from .variables import BOOLEAN, Family, inertia, input_, output, parameter, with_second_torques

#: breakpoints of the default table (module docstring): SR, K [rad/s/sqrt(N.m)], TR
_SR = (0.0, 0.4, 0.7, 0.8, 0.87, 0.95)
_K = (14.0, 14.5, 15.8, 17.0, 19.0, 28.0)
_TR = (2.0, 1.6, 1.25, 1.12, 1.0, 1.0)
N_POINTS = len(_SR)
#: a wet lock-up clutch (module docstring): T_s = 0.13 * 0.11 * 2 f_n = 0.0286 f_n N.m
_LOCKUP_LAW = dict(mu_s=0.13, mu_k=0.11, r_eff=0.11, n_surfaces=2, w_stribeck=0.0, alpha_stribeck=1.0, d_visc=0.0)
_INPUTS = ("tau_pump", "tau_turbine", "f_n")


def _table_variables():
    variables = []
    for stem, values, unit, what, extra in (
            ("SR", _SR, "1", "speed ratio w_turbine / w_pump of table point {i}", dict(low=0.0, high=1.0)),
            ("K", _K, "rad/s/sqrt(N.m)", "capacity factor K at SR_{i} (pump torque (w_pump / K)^2)",
             dict(low=K_MIN)),
            ("TR", _TR, "1", "torque ratio at SR_{i}: turbine torque / pump torque", dict(low=0.0))):
        for i, value in enumerate(values, start=1):
            variables.append(parameter(f"{stem}_{i}", unit, what.format(i=i), value, family=Family(stem, i), **extra))
    return variables


class ConverterState(NamedTuple):
    """The friction system's state, the fluid's dissipated energy, and the fluid torques at
    this state (functions of it, kept so that outputs, feedthrough and step share them)."""

    chain: ChainState
    e_fluid: float
    f_pump: float
    f_turbine: float


class TorqueConverter(FrictionElement):
    """Torque converter with lock-up clutch (defaults: an engine torque of 150 N.m on the pump
    from idle, 80 rad/s, the turbine at rest loaded with 50 N.m, the lock-up clutch open).
    The default inertias, 0.2 and 0.05 kg.m2 (a pump with its cover, a turbine), bring the
    element-contract test's start speeds (80.25, 0.25 rad/s) back from the friction system's
    mean and slip coordinates exactly (0.15 and 0.05 gave w_turbine = 0.2499999999999929)."""

    description = ("Torque converter: pump and turbine, fluid coupling from K and TR tables, "
                   "lock-up clutch with exact stick/slip")
    DEFAULT_STOP = 2.0
    MEMBERS = ("_pump", "_turbine")
    TAGS = ("",)
    VARIABLES = with_second_torques((
        inertia("J_pump", "inertia of the pump (impeller) and what is fixed to it", 0.2),
        inertia("J_turbine", "inertia of the turbine and what is fixed to it", 0.05),
        *_table_variables(),
        *interface_variables("", "the lock-up clutch", _LOCKUP_LAW),
        parameter("phi_pump_start", "rad", "initial angle of the pump", 0.0),
        parameter("w_pump_start", "rad/s", "initial speed of the pump", 80.0),
        parameter("phi_turbine_start", "rad", "initial angle of the turbine", 0.0),
        parameter("w_turbine_start", "rad/s", "initial speed of the turbine", 0.0),
        input_("tau_pump", "N.m", "external torque on the pump (the engine's), positive accelerating it", 150.0),
        input_("tau_turbine", "N.m", "external torque on the turbine (the gearbox's load), positive "
               "accelerating it", -50.0),
        input_("f_n", "N", "normal (clamp) force of the lock-up clutch; 0 opens it", 0.0, low=0.0),
        output("phi_pump", "rad", "angle of the pump"),
        output("w_pump", "rad/s", "speed of the pump"),
        output("phi_turbine", "rad", "angle of the turbine"),
        output("w_turbine", "rad/s", "speed of the turbine"),
        output("tau_fluid_pump", "N.m", "torque the pump gives the fluid, opposing the pump: in drive "
               "(w_pump / K(SR))^2, negative when the fluid drives the pump (reverse flow)"),
        output("tau_fluid_turbine", "N.m", "torque the fluid gives the turbine, driving it: in drive "
               "TR(SR) tau_fluid_pump, negative when the turbine drives the fluid (reverse flow)"),
        output("tau_fric", "N.m", "torque the lock-up clutch passes from the pump to the turbine",
               depends=_INPUTS),
        output("w_slip", "rad/s", "slip speed of the lock-up clutch, w_pump - w_turbine"),
        output("locked", None, "the lock-up clutch is stuck (pump and turbine turn together)", type=BOOLEAN,
               depends=_INPUTS),
        output("p_loss", "W", "power dissipated by the converter: the lock-up clutch's plus p_loss_fluid",
               depends=("f_n",)),
        output("e_loss", "J", "energy dissipated by the converter since the start: the lock-up clutch's "
               "plus e_loss_fluid"),
        output("p_loss_fluid", "W", "power the fluid dissipates, tau_fluid_pump w_pump - "
               "tau_fluid_turbine w_turbine"),
        output("e_loss_fluid", "J", "energy the fluid has dissipated since the start"),
    ), ("tau_pump", "tau_turbine"))

    # ------------------------------------------------------------------ parameters
    def _table_values(self):
        return ([getattr(self, f"SR_{i}") for i in range(1, N_POINTS + 1)],
                [getattr(self, f"K_{i}") for i in range(1, N_POINTS + 1)],
                [getattr(self, f"TR_{i}") for i in range(1, N_POINTS + 1)])

    def cross_check(self):
        problems = super().cross_check()
        values = self._table_values()
        if all(isinstance(x, (int, float)) for column in values for x in column):
            problems += ConverterTable.problems(*values)
        if self.locked_start and self.w_pump_start != self.w_turbine_start:
            problems.append(f"locked_start = true needs w_pump_start == w_turbine_start "
                            f"(got {self.w_pump_start!r} and {self.w_turbine_start!r})")
        return problems

    # ------------------------------------------------------------------ state
    def initial_state(self):
        self.table = ConverterTable(*self._table_values())
        chain = super().initial_state()         # the friction system (a two-body chain)
        return self._state(chain, 0.0)

    def _state(self, chain, e_fluid) -> ConverterState:
        """The state of the friction state ``chain``, with the fluid torques at its speeds."""
        w_pump, w_turbine = self.chain.member_motion(chain)[2:]
        f_pump, f_turbine = fluid_torques(self.table, w_pump, w_turbine)
        return ConverterState(chain, e_fluid, f_pump, f_turbine)

    def encode_state(self, state):
        return [state.chain.to_json(), state.e_fluid]

    def decode_state(self, data):
        chain, e_fluid = data
        return self._state(ChainState.from_json(chain), float(e_fluid))

    # ------------------------------------------------------------------ step
    def _rate_problem(self, h, chain) -> str | None:
        """Why a step of ``h`` is beyond the stability limit of the held fluid torque at the
        state ``chain`` (module docstring, "Stability"), or None."""
        w_pump, w_turbine = self.chain.member_motion(chain)[2:]
        rate = fluid_rate(self.table, self.J_pump, self.J_turbine, w_pump, w_turbine)
        if h * rate <= 2.0:
            return None
        limit = 2.0 / rate
        return (f"h = {h!r} s exceeds the stability limit 2 / rate = {limit:.6g} s of the fluid coupling at "
                f"w_pump = {w_pump!r}, w_turbine = {w_turbine!r} rad/s (rate {rate:.6g} 1/s: the fluid's "
                f"damping against J_pump = {self.J_pump!r}, J_turbine = {self.J_turbine!r} kg.m2; the fluid "
                f"torque is held over a step, an explicit integration): take steps of at most {limit:.3g} s")

    def step(self, t, h, prepared):
        (tau_pump, tau_turbine), t_s, t_c, _ = prepared
        chain0, e_fluid, f_pump, f_turbine = self.state
        if not (abs(f_pump) < float("inf") and abs(f_turbine) < float("inf")):
            raise SolverError(f"the fluid torques {f_pump!r}, {f_turbine!r} N.m at this state are not finite")
        # predictor: the fluid torques of the start held (the stuck set the feedthrough resolved
        # at this state and these inputs is that of these torques)
        start = self._resolution if self.fresh else None
        held = (tau_pump + f_pump, tau_turbine + f_turbine)
        predicted = self.chain.advance(chain0, held, t_s, t_c, h, start=start, inputs=self.chain.step_inputs(held))
        locked_throughout = (not any(chain0.s) and not any(predicted.s) and predicted.q == chain0.q
                             and all(mode == STUCK for mode in predicted.modes))
        if not locked_throughout:
            for chain in (chain0, predicted):
                problem = self._rate_problem(h, chain)
                if problem is not None:
                    raise SolverError(problem)
        end = self._state(predicted, 0.0)
        if (end.f_pump, end.f_turbine) == (f_pump, f_turbine):
            chain1 = predicted                  # the same torques held: the corrector is the predictor
        else:
            # corrector (Heun): the mean of the fluid torques at the start and the predicted end held
            f_pump = 0.5 * (f_pump + end.f_pump)
            f_turbine = 0.5 * (f_turbine + end.f_turbine)
            held = (tau_pump + f_pump, tau_turbine + f_turbine)
            chain1 = self.chain.advance(chain0, held, t_s, t_c, h, inputs=self.chain.step_inputs(held))
        # the fluid's loss: minus the work of the held fluid torques over the members' rotations,
        # the rotations as solvers.friction's energy balance takes them (free motion + K dq)
        d_theta = chain1.theta_mean - chain0.theta_mean
        dq = chain1.q[0] - chain0.q[0]
        (k_pump,), (k_turbine,) = self.chain.k
        free_pump, free_turbine = self.chain.free_members
        work = (f_pump * (free_pump * d_theta + k_pump * dq)
                + f_turbine * (free_turbine * d_theta + k_turbine * dq))
        return self._state(chain1, e_fluid - work)

    # ------------------------------------------------------------------ outputs
    def outputs(self):
        chain, e_fluid, f_pump, f_turbine = self.state
        phi_pump, phi_turbine, w_pump, w_turbine = self.chain.member_motion(chain)
        p_fluid = -(f_pump * w_pump + f_turbine * w_turbine)
        values = (phi_pump, w_pump, phi_turbine, w_turbine, -f_pump, f_turbine, chain.s[0],
                  chain.e_loss + e_fluid, p_fluid, e_fluid)
        (self.phi_pump, self.w_pump, self.phi_turbine, self.w_turbine, self.tau_fluid_pump,
         self.tau_fluid_turbine, self.w_slip, self.e_loss, self.p_loss_fluid, self.e_loss_fluid) = values
        return values

    def feedthrough(self, prepared):
        (tau_pump, tau_turbine), t_s, t_c, _ = prepared
        chain, _, f_pump, f_turbine = self.state
        _, g = self.chain.step_inputs((tau_pump + f_pump, tau_turbine + f_turbine))
        modes, tau = self._resolution = self.chain.resolve(chain.s, chain.modes, g, t_s, t_c)
        w_pump, w_turbine = self.chain.member_motion(chain)[2:]
        p_fluid = -(f_pump * w_pump + f_turbine * w_turbine)
        return {"tau_fric": tau[0], "locked": modes[0] == STUCK, "p_loss": tau[0] * chain.s[0] + p_fluid}
