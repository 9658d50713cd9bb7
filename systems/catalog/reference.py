"""Monolithic references: a documented system as one ODE, solved by scipy, and the
error report of a co-simulation against it.

Z3 (systems.catalog.z3): the DualClutch's three bodies are the friction chain of
solvers.friction in decoupled coordinates (mean motion, relative angles q and slips s;
a stuck slip has zero derivative, so it stays exactly zero), the two shafts and the
vehicle inertia are added as smooth forces, and the whole system is integrated by
scipy's DOP853 (rtol 1e-10, atol 1e-10) with terminal events: a slip reaching zero, a
stuck friction reaching its static capacity, and the kinks of the clamp-force ramps.
At every event the stuck set is decided exactly (FrictionChain.resolve).  Nothing of
the co-simulation is shared but the friction law and the chain algebra.
"""
from __future__ import annotations

from dataclasses import dataclass, field, fields

import numpy as np

from drivetrain_fmu.fmus import AxleVehicle, Clutch, ClutchChain, Differential, PlanetaryGear, Synchronizer, TorqueConverter
from drivetrain_fmu.fmus.lockup_control import clamp_force
from drivetrain_fmu.solvers.fluid_coupling import ConverterTable, fluid_torques
from drivetrain_fmu.solvers.friction import FrictionChain, InterfaceLaw, Mode
from drivetrain_fmu.solvers.pwa import Characteristic, OscillatorState, PwaOscillator
from drivetrain_fmu.solvers.contract import GRAVITY
from drivetrain_fmu.solvers.signal import quadratic_speed_torque, table_points, table_value
from drivetrain_fmu.solvers.tire import road_force
from drivetrain_fmu.solvers.vehicle import VehicleParams

from ..optional import require
from ..ssp import load_system
from . import fan, r3, z3
from .powered_vehicle import PoweredVehicle, PowertrainParams


@dataclass(frozen=True)
class Reference:
    time: np.ndarray
    signals: dict
    events: dict = field(default_factory=dict)     # instants a reference computes exactly, by name

    def __getitem__(self, key):
        return self.time if key == "time" else self.signals[key]


def _z3_model():
    c = z3.CLUTCH
    at_rest = {name: c[name] for name in ("w_1_start", "w_2_start", "w_3_start", "phi_1_start", "phi_2_start",
                                          "phi_3_start", "locked_a_start", "locked_b_start")}
    if any(at_rest.values()) or z3.VEHICLE["w_start"] or z3.VEHICLE["phi_start"]:
        raise ValueError(f"z3_reference starts at rest with both clutches free to decide; the file gives "
                         f"{at_rest}, vehicle w_start {z3.VEHICLE['w_start']!r}")
    laws = [InterfaceLaw(c[f"mu_s_{t}"], c[f"mu_k_{t}"], c[f"r_eff_{t}"], c[f"n_surfaces_{t}"],
                         c[f"w_stribeck_{t}"], c[f"alpha_stribeck_{t}"], c[f"d_visc_{t}"]) for t in "ab"]
    return FrictionChain([c["J_1"], c["J_2"], c["J_3"]], laws)


class _FrictionReference:
    """Friction systems (solvers.friction) with smooth parts around them (shafts, inertias)
    as one ODE, integrated from event to event (module docstring).

    ``chain``: one friction system, or a list of them joined only by smooth parts (their
    stuck sets are then decided each on its own: the smooth forces do not depend on the
    accelerations).  State y = [theta_mean, w_mean, q_1..q_k, s_1..s_k] of each system in
    turn, then extra...: the decoupled coordinates of each friction system (a stuck slip
    has zero derivative, so it stays exactly zero; theta_mean and w_mean stay 0 without a
    free motion) and the smooth parts' states.  Members and interfaces are numbered through
    the systems in turn.  ``external(t, phi, w, extra)`` gives the torques on the members and
    the derivative of ``extra`` at member angles ``phi`` and speeds ``w``; ``capacities(t)``
    the interfaces' (T_s, T_c) lists; ``breakpoints`` the instants where they have kinks or
    steps.  ``switch``, if given, is (condition(t, y), switched(t)): a controller's rule that
    fires once, where condition(t, y) rises through 0 (a terminal event); switched(t) is told
    the instant and returns the breakpoints the switch brings (a clamp-force ramp's ends).
    ``heat``, if given, is (laws, T_amb): the thermal model of solvers.thermal on every
    interface (laws[j] an InterfaceHeat) with a constant ambient temperature; the state then
    ends with the interfaces' temperatures T_j and heats transferred E_j, integrated with
    the rest as the ODE itself (not the elements' step-wise coupling):
        C_j dT_j/dt = tau_j s_j - G_j (T_j - T_amb),   dE_j/dt = G_j (T_j - T_amb)
    and the capacities ``capacities(t)`` gives at mu_ref are scaled by mu(T_j)/mu_ref.
    ``history``: after :meth:`solve`, the (instant, modes after it) of every event."""

    def __init__(self, chain, external, capacities, breakpoints, switch=None, heat=None):
        self.chains = list(chain) if isinstance(chain, (list, tuple)) else [chain]
        self.external, self.reference_capacities = external, capacities
        self.breakpoints = sorted(breakpoints)
        self.k = sum(c.n_interfaces for c in self.chains)
        self.switch = switch
        self.heat = heat
        self.n_heat = 2 * self.k if heat else 0
        self.history = []
        # per system: (the system, its block's offset in y, its first member, its first interface)
        self.blocks, offset, member, interface = [], 0, 0, 0
        for c in self.chains:
            self.blocks.append((c, offset, member, interface))
            offset, member, interface = offset + 2 + 2 * c.n_interfaces, member + c.n, interface + c.n_interfaces
        self.n_extra_start = offset
        #: the position of interface j's slip in y
        self.slip_index = [o + 2 + c.n_interfaces + j for c, o, _, _ in self.blocks for j in range(c.n_interfaces)]

    def members(self, y):
        """(member angles, member speeds, slips, extra) of state y."""
        phi, w = [], []
        for chain, o, _, _ in self.blocks:
            k = chain.n_interfaces
            q, s = y[o + 2:o + 2 + k], y[o + 2 + k:o + 2 + 2 * k]
            phi += [x * y[o] + sum(c * v for c, v in zip(row, q)) for x, row in zip(chain.free_members, chain.k)]
            w += [x * y[o + 1] + sum(c * v for c, v in zip(row, s)) for x, row in zip(chain.free_members, chain.k)]
        return phi, w, [y[i] for i in self.slip_index], y[self.n_extra_start:len(y) - self.n_heat]

    def temperatures(self, y):
        """(T_j, E_j) lists of state y (the thermal model's part; empty without it)."""
        heat = y[len(y) - self.n_heat:] if self.n_heat else []
        return list(heat[:self.k]), list(heat[self.k:])

    def capacities(self, t, y):
        """(T_s, T_c) lists at t, at the temperatures of y with the thermal model."""
        t_s, t_c = self.reference_capacities(t)
        if not self.heat:
            return t_s, t_c
        factors = [law.friction_factor(temp) for law, temp in zip(self.heat[0], self.temperatures(y)[0])]
        return [c * f for c, f in zip(t_s, factors)], [c * f for c, f in zip(t_c, factors)]

    def friction(self, t, y, modes):
        """(member torques, g, friction torques, derivative of extra, T_s) at t, y in ``modes``."""
        phi, w, s, extra = self.members(y)
        torques, d_extra = self.external(t, phi, w, extra)
        t_s, t_c = self.capacities(t, y)
        g, tau = [], [0.0] * self.k
        for chain, _, first_member, first in self.blocks:
            g_chain = chain.relative_free_acceleration(torques[first_member:first_member + chain.n])
            g += g_chain
            chain_modes = modes[first:first + chain.n_interfaces]
            tau_chain = tau[first:first + chain.n_interfaces]
            for j, mode in enumerate(chain_modes):
                i = first + j
                if mode in (Mode.FORWARD, Mode.BACKWARD):
                    tau_chain[j] = chain.laws[j].slipping_torque(s[i], mode, t_s[i], t_c[i])
                elif mode == Mode.FREE:                       # open: viscous friction only
                    tau_chain[j] = chain.laws[j].d_visc * s[i]
            stuck = [j for j, mode in enumerate(chain_modes) if mode == Mode.STUCK]
            if stuck:
                for j, value in zip(stuck, chain.stuck_torques(stuck, g_chain, tau_chain)):
                    tau_chain[j] = value
            tau[first:first + chain.n_interfaces] = tau_chain
        return torques, g, tau, d_extra, t_s

    def rhs(self, t, y, modes):
        torques, g, tau, d_extra, _ = self.friction(t, y, modes)
        derivative = []
        for chain, o, first_member, first in self.blocks:
            mm, k = chain.m, chain.n_interfaces
            ds = [0.0 if modes[first + j] == Mode.STUCK
                  else g[first + j] - sum(mm[j][i] * tau[first + i] for i in range(k)) for j in range(k)]
            derivative += [y[o + 1], chain.free_acceleration(torques[first_member:first_member + chain.n]),
                           *y[o + 2 + k:o + 2 + 2 * k], *ds]
        return [*derivative, *d_extra, *self.heating(y, tau)]

    def heating(self, y, tau):
        """d/dt of the thermal part (class docstring): the power tau_j s_j each interface
        dissipates heats it, G_j (T_j - T_amb) flows to the ambient."""
        if not self.heat:
            return []
        laws, t_amb = self.heat
        s = [y[i] for i in self.slip_index]
        flows = [law.g_th * (temp - t_amb) for law, temp in zip(laws, self.temperatures(y)[0])]
        return [*((tau_j * s_j - flow) / law.c_th for law, tau_j, s_j, flow in zip(laws, tau, s, flows)), *flows]

    def events_for(self, modes):
        """Terminal events: a slip reaching zero, a stuck friction reaching its capacity."""
        events = []
        for j, mode in enumerate(modes):
            if mode in (Mode.FORWARD, Mode.BACKWARD):
                def event(t, y, *_, i=self.slip_index[j], sign=int(mode)):
                    return sign * y[i]
            elif mode == Mode.STUCK:
                def event(t, y, *_, j=j):
                    _, _, tau, _, t_s = self.friction(t, y, modes)
                    return t_s[j] - abs(tau[j])
            else:
                continue
            event.terminal, event.direction = True, -1
            events.append((j, event))
        return events

    def decide(self, t, y, modes, event_j=None):
        """Modes after an event at t, with the capacities just after t (right-hand limit:
        a clutch whose clamp-force ramp starts at t is no longer open).  A stuck interface
        whose static limit the event found reached, and that eq. 19 asked again would still
        hold (its rounding at the limit), breaks away in the direction of its friction
        (solvers.friction, "Decisions at the static limit"): else the same stuck phase would
        end at once, at the same instant, again and again."""
        _, g, tau, _, _ = self.friction(t, y, modes)
        t_s, t_c = self.capacities(t + 1e-9, y)
        s = [y[i] for i in self.slip_index]
        for j, mode in enumerate(modes):
            if mode == Mode.STUCK or j == event_j:
                s[j] = 0.0
        new_modes = []
        for chain, _, _, first in self.blocks:
            part = slice(first, first + chain.n_interfaces)
            chain_modes, _ = chain.resolve(s[part], modes[part], g[part], t_s[part], t_c[part])
            if event_j is not None and first <= event_j < part.stop and modes[event_j] == Mode.STUCK \
                    and chain_modes[event_j - first] == Mode.STUCK:
                direction = Mode.FORWARD if tau[event_j] > 0.0 else Mode.BACKWARD
                chain_modes, _ = chain.resolve(s[part], modes[part], g[part], t_s[part], t_c[part],
                                               breaking=(event_j - first, direction))
            new_modes += chain_modes
        return tuple(new_modes), s

    def solve(self, y0, start_modes, t_grid):
        """(samples of the state at t_grid, the modes at each sample)."""
        solve_ivp = require("scipy.integrate", "the monolithic references need", "cli").solve_ivp
        y = np.asarray(y0, dtype=float)
        modes, _ = self.decide(0.0, y, start_modes)
        t, t_end = 0.0, float(t_grid[-1])
        samples = np.full((t_grid.size, y.size), np.nan)
        modes_at = [None] * t_grid.size
        switch = self.switch
        while t < t_end:
            stop = min([b for b in self.breakpoints if b > t + 1e-12] + [t_end])
            events = self.events_for(modes)
            if switch is not None:
                def condition(t, y, *_):
                    return switch[0](t, y)
                condition.terminal, condition.direction = True, 1
                events.append(("switch", condition))
            sol = solve_ivp(self.rhs, (t, stop), y, method="DOP853", rtol=1e-10, atol=1e-10, dense_output=True,
                            events=[e for _, e in events] or None, args=(modes,))
            t_new = float(sol.t[-1])
            for i in np.flatnonzero((t_grid >= t) & (t_grid <= t_new)):
                samples[i] = sol.sol(t_grid[i])
                modes_at[i] = modes
            y = sol.y[:, -1].copy()
            fired = None
            if sol.status == 1:
                fired = next(j for (j, _), times in zip(events, sol.t_events) if times.size)
            if fired == "switch":
                self.breakpoints = sorted([*self.breakpoints, *switch[1](t_new)])
                switch, fired = None, None
            modes, s = self.decide(t_new, y, modes, fired)
            y[self.slip_index] = s
            t = t_new
            self.history.append((t, modes))
        return samples, modes_at


def z3_reference(t_grid) -> Reference:
    """Z3 as one ODE (module docstring), sampled at ``t_grid``."""
    chain = _z3_model()
    odd, even, vehicle = z3.SHAFT_ODD, z3.SHAFT_EVEN, z3.VEHICLE
    t_grid = np.asarray(t_grid, dtype=float)

    def capacities(t):
        caps = [law.capacities(f) for law, f in zip(chain.laws, z3.clamp_forces(t))]
        return [c[0] for c in caps], [c[1] for c in caps]

    def external(t, phi, w, extra):
        """Engine on body 2, the shafts from bodies 1 and 3 to the vehicle inertia."""
        phi_v, w_v = extra
        tau_odd = odd["k"] * (phi[0] / odd["ratio"] - phi_v) + odd["d"] * (w[0] / odd["ratio"] - w_v)
        tau_even = even["k"] * (phi[2] / even["ratio"] - phi_v) + even["d"] * (w[2] / even["ratio"] - w_v)
        torques = [-tau_odd / odd["ratio"], z3.engine_torque(t), -tau_even / even["ratio"]]
        return torques, [w_v, (tau_odd + tau_even - vehicle["d_ground"] * w_v) / vehicle["J"]]

    model = _FrictionReference(chain, external, capacities, z3.TABLE_TIMES)
    # start: everything at rest (clutch a clamped: stuck, b open)
    samples, modes_at = model.solve(np.zeros(8), (Mode.STUCK, Mode.FREE), t_grid)
    signals = {k: np.empty(t_grid.size) for k in ("clutch.w_1", "clutch.w_2", "clutch.w_3", "vehicle.w",
                                                   "clutch.tau_fric_a", "clutch.tau_fric_b")}
    for i, (row, modes_i) in enumerate(zip(samples, modes_at)):
        _, w, _, extra = model.members(row)
        _, _, tau, _, _ = model.friction(t_grid[i], row, modes_i)
        signals["clutch.w_1"][i], signals["clutch.w_2"][i], signals["clutch.w_3"][i] = w
        signals["vehicle.w"][i] = extra[1]
        signals["clutch.tau_fric_a"][i], signals["clutch.tau_fric_b"][i] = tau
    return Reference(t_grid, signals)


def _element_model(element, values: dict):
    """The model of ``element`` (an FMU class of fmus) with a component's parameter values set."""
    model = element(instance_name="reference", resources=None)
    for name, value in values.items():
        setattr(model, name, value)
    return model


def _shaft_to_inertia(shaft: dict, vehicle: dict, phi: float, w: float, extra):
    """(the Shaft's torque on its body 2 side, d/dt of (phi_v, w_v)): a Shaft from a member at
    ``phi``, ``w`` through its ratio to the vehicle Inertia whose (phi_v, w_v) is ``extra``."""
    phi_v, w_v = extra
    ratio = shaft["ratio"]
    tau_shaft = shaft["k"] * (phi / ratio - phi_v) + shaft["d"] * (w / ratio - w_v)
    return tau_shaft, [w_v, (tau_shaft - vehicle["d_ground"] * w_v) / vehicle["J"]]


def planetary_shift_reference(t_grid) -> Reference:
    """The planetary upshift (systems/catalog/ssd/planetary_shift.ssd) as one ODE, sampled at
    ``t_grid``: the PlanetaryGear's friction system (its two interfaces fix both
    coordinates: no free motion), the shaft to the vehicle and the vehicle inertia as
    smooth forces, integrated from event to event as Z3 (_FrictionReference)."""
    system = load_system("planetary_shift")
    values = system.component_values()
    gear_values, shaft, vehicle = values["gear"], values["shaft"], values["vehicle"]
    if gear_values["w_carrier_start"] or gear_values["w_ring_start"] or vehicle["w_start"]:
        raise ValueError("planetary_shift_reference starts at rest")
    chain = _element_model(PlanetaryGear, gear_values).build_system()
    tables = {name: (*table_points(values[name]), values[name]["hold"])
              for name in ("engine_torque", "brake_force", "clutch_force")}

    def table(name, t):
        times, ys, hold = tables[name]
        return table_value(times, ys, hold, t)

    def capacities(t):
        return chain.capacities([table("clutch_force", t), table("brake_force", t)])

    def external(t, phi, w, extra):
        """Engine torque on the sun, the shaft from the carrier to the vehicle inertia."""
        tau_shaft, d_extra = _shaft_to_inertia(shaft, vehicle, phi[1], w[1], extra)
        return [table("engine_torque", t), -tau_shaft / shaft["ratio"], 0.0], d_extra

    model = _FrictionReference(chain, external, capacities, {t for times, _, _ in tables.values() for t in times})
    t_grid = np.asarray(t_grid, dtype=float)
    samples, modes_at = model.solve(np.zeros(8), (Mode.FREE, Mode.STUCK), t_grid)
    keys = ("gear.w_sun", "gear.w_carrier", "gear.w_ring", "vehicle.w", "gear.tau_fric_c", "gear.tau_fric_b")
    signals = {key: np.empty(t_grid.size) for key in keys}
    for i, (row, modes_i) in enumerate(zip(samples, modes_at)):
        _, w, _, extra = model.members(row)
        _, _, tau, _, _ = model.friction(t_grid[i], row, modes_i)
        signals["gear.w_sun"][i], signals["gear.w_carrier"][i], signals["gear.w_ring"][i] = w
        signals["vehicle.w"][i] = extra[1]
        # the element's outputs: the clutch's torque as transmitted, the brake's as the housing's on the ring
        signals["gear.tau_fric_c"][i], signals["gear.tau_fric_b"][i] = tau[0], -tau[1]
    return Reference(t_grid, signals)


def automatic_launch_reference(t_grid) -> Reference:
    """The automatic launch (systems/catalog/ssd/automatic_launch.ssd) as one ODE, sampled at
    ``t_grid``: the TorqueConverter's lock-up clutch (a two-body friction system) with the
    fluid torques (solvers.fluid_coupling, eq. 3) at the members' speeds, the shaft to the
    vehicle and the vehicle inertia as smooth forces, integrated from event to event as Z3
    (_FrictionReference); the lock-up rule (fmus.lockup_control, eq. 1) an event at the exact
    instant the speed ratio reaches SR_on, the clamp-force ramp (eq. 2) from there."""
    system = load_system("automatic_launch")
    values = system.component_values()
    tc_values, lockup, shaft, vehicle = (values[name] for name in ("converter", "lockup", "shaft", "vehicle"))
    if tc_values["w_turbine_start"] or vehicle["w_start"] or tc_values["locked_start"]:
        raise ValueError("automatic_launch_reference starts with the turbine and the vehicle at rest, unlocked")
    converter = _element_model(TorqueConverter, tc_values)
    chain = converter.build_system()
    table = ConverterTable(*converter._table_values())
    engine = values["engine_torque"]
    times, ys = table_points(engine)
    switched_at = [np.inf]

    def capacities(t):
        return chain.capacities([clamp_force(lockup["f_on"], lockup["t_ramp"], switched_at[0], t)])

    def external(t, phi, w, extra):
        """Engine torque and fluid torque on the pump; fluid torque and shaft on the turbine."""
        tau_shaft, d_extra = _shaft_to_inertia(shaft, vehicle, phi[1], w[1], extra)
        f_pump, f_turbine = fluid_torques(table, w[0], w[1])
        return [table_value(times, ys, engine["hold"], t) + f_pump, f_turbine - tau_shaft / shaft["ratio"]], d_extra

    def ratio_reached(t, y):
        """Eq. 1 of the lock-up rule: w_turbine - SR_on w_pump rises through 0."""
        _, w, _, _ = model.members(y)
        return w[1] - lockup["SR_on"] * w[0] if w[0] >= lockup["w_in_min"] else -1.0

    def switched(t):
        switched_at[0] = t
        return [t, t + lockup["t_ramp"]]

    model = _FrictionReference(chain, external, capacities, set(times), switch=(ratio_reached, switched))
    t_grid = np.asarray(t_grid, dtype=float)
    start = chain.state_from_bodies([tc_values["phi_pump_start"], tc_values["phi_turbine_start"]],
                                    [tc_values["w_pump_start"], tc_values["w_turbine_start"]])
    y0 = np.array([start.theta_mean, start.w_mean, *start.q, *start.s, 0.0, 0.0])
    samples, modes_at = model.solve(y0, (Mode.FREE,), t_grid)
    signals = {key: np.empty(t_grid.size) for key in AUTOMATIC_LAUNCH_KEYS}
    for i, (row, modes_i) in enumerate(zip(samples, modes_at)):
        _, w, _, extra = model.members(row)
        _, _, tau, _, _ = model.friction(t_grid[i], row, modes_i)
        f_pump, f_turbine = fluid_torques(table, w[0], w[1])
        signals["converter.w_pump"][i], signals["converter.w_turbine"][i] = w
        signals["vehicle.w"][i] = extra[1]
        signals["converter.tau_fluid_pump"][i], signals["converter.tau_fluid_turbine"][i] = -f_pump, f_turbine
        signals["converter.tau_fric"][i] = tau[0]
    return Reference(t_grid, signals)


#: what automatic_launch_reference gives
AUTOMATIC_LAUNCH_KEYS = ("converter.w_pump", "converter.w_turbine", "vehicle.w", "converter.tau_fluid_pump",
                         "converter.tau_fluid_turbine", "converter.tau_fric")


def heating_clutch_reference(t_grid) -> Reference:
    """The repeated launches (systems/catalog/ssd/heating_clutch.ssd) as one ODE, sampled at
    ``t_grid``: the Clutch's two bodies (a one-interface friction system) with the engine
    torque table on body 1 and the quadratic drag (solvers.signal.quadratic_speed_torque) on
    body 2, integrated from event to event as Z3 (_FrictionReference), and the clutch's
    temperature C dT/dt = tau w_slip - G (T - T_amb) integrated with them, the capacities at
    mu(T) = mu_ref (1 + c_mu_T (T - T_ref)) at every instant (solvers.thermal's law; the
    element holds a step's capacities at the temperature of its start instead)."""
    system = load_system("heating_clutch")
    values = system.component_values()
    clutch_values, drag = values["clutch"], values["drag"]
    if not clutch_values["thermal"] or clutch_values["locked_start"]:
        raise ValueError("heating_clutch_reference needs the clutch's thermal model and a slipping start")
    clutch = _element_model(Clutch, clutch_values)
    chain = clutch.build_system()
    tables = {name: (*table_points(values[name]), values[name]["hold"]) for name in ("engine_torque", "clamp_force")}

    def table(name, t):
        times, ys, hold = tables[name]
        return table_value(times, ys, hold, t)

    def capacities(t):
        return chain.capacities([table("clamp_force", t)])

    def external(t, phi, w, extra):
        """The engine torque on body 1, the drag on body 2 (the vehicle)."""
        load = quadratic_speed_torque(drag["tau_nominal"], drag["w_nominal"], w[1], drag["opposes_motion"])
        return [table("engine_torque", t), load], []

    heat = ([clutch.heat_law("")], clutch_values["T_amb"])
    model = _FrictionReference(chain, external, capacities, {t for times, _, _ in tables.values() for t in times},
                               heat=heat)
    t_grid = np.asarray(t_grid, dtype=float)
    start = chain.state_from_bodies(*clutch.start_coordinates())
    y0 = np.array([start.theta_mean, start.w_mean, *start.q, *start.s, clutch_values["T_th_start"], 0.0])
    samples, modes_at = model.solve(y0, (Mode.FREE,), t_grid)
    signals = {key: np.empty(t_grid.size) for key in HEATING_CLUTCH_KEYS}
    for i, (row, modes_i) in enumerate(zip(samples, modes_at)):
        _, w, _, _ = model.members(row)
        _, _, tau, _, _ = model.friction(t_grid[i], row, modes_i)
        (temperature,), (transferred,) = model.temperatures(row)
        signals["clutch.w_1"][i], signals["clutch.w_2"][i] = w
        signals["clutch.tau_fric"][i], signals["clutch.T_th"][i], signals["clutch.e_heat"][i] = tau[0], temperature, \
            transferred
    return Reference(t_grid, signals)


#: what heating_clutch_reference gives
HEATING_CLUTCH_KEYS = ("clutch.w_1", "clutch.w_2", "clutch.tau_fric", "clutch.T_th", "clutch.e_heat")


def synchro_upshift_reference(t_grid) -> Reference:
    """The synchronizer upshift (systems/catalog/ssd/synchro_upshift.ssd) as one ODE, sampled at
    ``t_grid``: the gearbox's ClutchChain (engine, input shaft, gear-1 idler: the main clutch
    and gear 1's dogs) and the Synchronizer (gear-2 idler, output shaft) as one friction chain
    of five members, the gear-1 idler and the gear-2 idler joined by an interface that never
    has a capacity (always FREE: no torque, no event), so both friction systems are decided
    exactly and together; gear 2's mesh shaft, the two drive shafts to the vehicle and the
    vehicle inertia as smooth forces, integrated from event to event as Z3
    (_FrictionReference).  The dogs (fmus.synchronizer, eq. 3 and 4): the cone locks at an
    exact event; from there the sleeve travels x_engage under the constant f_sleeve in
    sqrt(2 m_sleeve x_engage / f_sleeve), after which the interface is rigid (unlimited
    capacity): a one-time switch (an event at that instant) whose condition reads the lock
    instant from the events so far (a cone slipping again would restart the travel)."""
    system = load_system("synchro_upshift")
    values = system.component_values()
    gearbox, synchro, vehicle = values["gearbox"], values["synchro"], values["vehicle"]
    mesh, drive_1, drive_2 = values["mesh_2"], values["drive_1"], values["drive_2"]
    if (gearbox["n_bodies"] != 3 or gearbox["thermal"] or synchro["engaged_start"]
            or any(v[name] for v, name in ((gearbox, "phi_1_start"), (gearbox, "phi_2_start"),
                                           (gearbox, "phi_3_start"), (synchro, "phi_gear_start"),
                                           (synchro, "phi_shaft_start"), (vehicle, "phi_start")))
            or any(v["phi_rel_start"] for v in (mesh, drive_1, drive_2))):
        raise ValueError("synchro_upshift_reference covers three gearbox bodies without the thermal model, the "
                         "synchronizer's dogs out at the start and every angle and pre-twist 0")
    box = _element_model(ClutchChain, gearbox).build_system()
    cone = _element_model(Synchronizer, synchro).build_system()
    never = InterfaceLaw(1.0, 1.0, 1.0, 1, 0.0, 1.0, 0.0)     # capacity 0 throughout: FREE
    chain = FrictionChain([*box.inertias, *cone.inertias], [*box.laws, never, *cone.laws])
    tables = {name: (*table_points(values[name]), values[name]["hold"])
              for name in ("engine_torque", "clutch_force", "gear1_force", "sleeve_force")}

    def table(name, t):
        times, ys, hold = tables[name]
        return table_value(times, ys, hold, t)

    sleeve_times, sleeve_forces, _ = tables["sleeve_force"]
    f_sleeve = sleeve_forces[-1]
    if any(f != 0.0 for f in sleeve_forces[:-2]) or not f_sleeve > 0.0:
        raise ValueError(f"synchro_upshift_reference needs the sleeve force 0, then one rise to its last value "
                         f"held; the file gives {list(sleeve_forces)} N")
    travel = float(np.sqrt(2.0 * synchro["m_sleeve"] * synchro["x_engage"] / f_sleeve))     # eq. 3
    engaged_at = [np.inf]

    def capacities(t):
        laws, forces = chain.laws, (table("clutch_force", t), table("gear1_force", t), 0.0, table("sleeve_force", t))
        caps = [laws[j].capacities(f) for j, f in enumerate(forces)]
        if t >= engaged_at[0]:
            caps[3] = (np.inf, np.inf)                                             # eq. 4: rigid dogs
        return [c[0] for c in caps], [c[1] for c in caps]

    def external(t, phi, w, extra):
        """Engine torque on the engine; gear 2's mesh from the input shaft to the gear-2 idler;
        the drive shafts from the gear-1 idler and from the output shaft to the vehicle."""
        ratio = mesh["ratio"]
        tau_mesh = mesh["k"] * (phi[1] / ratio - phi[3]) + mesh["d"] * (w[1] / ratio - w[3])
        tau_1, _ = _shaft_to_inertia(drive_1, vehicle, phi[2], w[2], extra)
        tau_2, _ = _shaft_to_inertia(drive_2, vehicle, phi[4], w[4], extra)
        torques = [table("engine_torque", t), -tau_mesh / ratio, -tau_1 / drive_1["ratio"], tau_mesh,
                   -tau_2 / drive_2["ratio"]]
        return torques, [extra[1], (tau_1 + tau_2 - vehicle["d_ground"] * extra[1]) / vehicle["J"]]

    def locked_since(history):
        """The instant the cone last locked after the sleeve force came on, None while it slips."""
        since = None
        for t, modes in history:
            if t >= sleeve_times[-1]:
                since = (since if since is not None else t) if modes[3] == Mode.STUCK else None
        return since

    def sleeve_home(t, y):
        """Rises through 0 when the sleeve, moving since the cone locked, has travelled x_engage."""
        since = locked_since(model.history)
        return -1.0 if since is None else t - (since + travel)

    def dogs_engage(t):
        engaged_at[0] = t
        return [t]

    t_grid = np.asarray(t_grid, dtype=float)
    start = chain.state_from_bodies([0.0] * 5, [gearbox["w_1_start"], gearbox["w_2_start"], gearbox["w_3_start"],
                                                synchro["w_gear_start"], synchro["w_shaft_start"]])
    y0 = np.array([start.theta_mean, start.w_mean, *start.q, *start.s, 0.0, vehicle["w_start"]])
    start_modes = tuple(Mode.STUCK if gearbox[f"locked_{j}_start"] else Mode.FREE for j in (1, 2)) + (Mode.FREE,) * 2
    model = _FrictionReference(chain, external, capacities, {t for times, _, _ in tables.values() for t in times},
                               switch=(sleeve_home, dogs_engage))
    samples, modes_at = model.solve(y0, start_modes, t_grid)
    signals = {key: np.empty(t_grid.size) for key in SYNCHRO_UPSHIFT_KEYS}
    for i, (row, modes_i) in enumerate(zip(samples, modes_at)):
        _, w, _, extra = model.members(row)
        _, _, tau, _, _ = model.friction(t_grid[i], row, modes_i)
        engaged = t_grid[i] >= engaged_at[0]
        for key, value in zip(SYNCHRO_UPSHIFT_KEYS, (*w, extra[1], tau[0], tau[1], 0.0 if engaged else tau[3],
                                                     tau[3] if engaged else 0.0)):
            signals[key][i] = value
    return Reference(t_grid, signals, events={"t_lock": engaged_at[0] - travel, "t_engaged": engaged_at[0]})


#: what synchro_upshift_reference gives, in the order of its members
SYNCHRO_UPSHIFT_KEYS = ("gearbox.w_1", "gearbox.w_2", "gearbox.w_3", "synchro.w_gear", "synchro.w_shaft",
                        "vehicle.w", "gearbox.tau_fric_1", "gearbox.tau_fric_2", "synchro.tau_cone",
                        "synchro.tau_dog")


def split_mu_reference(name: str, t_grid) -> Reference:
    """A split-mu launch (systems/catalog/ssd/split_mu_open.ssd, split_mu_lsd.ssd) as one ODE,
    sampled at ``t_grid``: two friction systems joined by the half-shafts as smooth forces,
    the Differential's (carrier and axles, its limited-slip clutch of capacity T_preload) and
    the AxleVehicle's (wheels and vehicle, a stick/slip tire per wheel), integrated from event
    to event as Z3 (_FrictionReference); the road load at the vehicle's speed as it varies
    (the element holds it over a step)."""
    system = load_system(name)
    values = system.component_values()
    diff_values, car_values = values["diff"], values["vehicle"]
    starts = [diff_values[f"{x}_{side}_start"] for x in ("phi", "w") for side in ("left", "right")]
    starts += [car_values[n] for n in ("phi_left_start", "w_left_start", "phi_right_start", "w_right_start",
                                       "x_start", "v_start")]
    if any(starts) or diff_values["locked_start"] or car_values["grade"] or diff_values["f_n"]:
        raise ValueError(f"split_mu_reference starts at rest on level ground with the limited-slip clutch free "
                         f"to decide and no clamp force beyond its preload; {name} gives other values")
    differential = _element_model(Differential, diff_values)
    car = _element_model(AxleVehicle, car_values)
    diff_chain, car_chain = differential.build_system(), car.build_system()
    f_z = car_values["axle_load"] * car_values["m_vehicle"] * GRAVITY / 2.0     # each wheel's load, level ground
    tire_static = [car_values[f"mu_s_{side}"] * f_z for side in ("left", "right")]
    tire_kinetic = [car_values[f"mu_k_{side}"] * f_z for side in ("left", "right")]
    shafts = [values[f"shaft_{side}"] for side in ("left", "right")]
    if any(shaft["ratio"] != 1.0 or shaft["phi_rel_start"] for shaft in shafts):
        raise ValueError(f"split_mu_reference needs half-shafts of ratio 1 without pre-twist; {name} gives others")
    engine = values["engine_torque"]
    times, ys = table_points(engine)
    preload = diff_values["T_preload"]

    def capacities(t):
        return [preload, *tire_static], [preload, *tire_kinetic]

    def external(t, phi, w, extra):
        """Engine torque on the carrier; each half-shaft between its axle (members 1, 2) and its
        wheel (members 3, 4); the road load on the vehicle (member 5, in m/s)."""
        shaft_torques = [shaft["k"] * (phi[1 + i] - phi[3 + i]) + shaft["d"] * (w[1 + i] - w[3 + i])
                         for i, shaft in enumerate(shafts)]
        return [table_value(times, ys, engine["hold"], t), -shaft_torques[0], -shaft_torques[1],
                shaft_torques[0], shaft_torques[1], -road_force(car, w[5], 0.0)], []

    model = _FrictionReference([diff_chain, car_chain], external, capacities, set(times))
    t_grid = np.asarray(t_grid, dtype=float)
    samples, modes_at = model.solve(np.zeros(10), (Mode.STUCK,) * 3, t_grid)
    signals = {key: np.empty(t_grid.size) for key in SPLIT_MU_KEYS}
    for i, (row, modes_i) in enumerate(zip(samples, modes_at)):
        phi, w, _, _ = model.members(row)
        _, _, tau, _, _ = model.friction(t_grid[i], row, modes_i)
        torques, _ = external(t_grid[i], phi, w, [])
        row_signals = (w[0], w[1], w[2], w[3], w[4], w[5], tau[0], tau[1], tau[2], torques[3], torques[4])
        for key, value in zip(SPLIT_MU_KEYS, row_signals):
            signals[key][i] = value
    return Reference(t_grid, signals)


#: what split_mu_reference gives
SPLIT_MU_KEYS = ("diff.w_carrier", "diff.w_left", "diff.w_right", "vehicle.w_left", "vehicle.w_right", "vehicle.v",
                 "diff.tau_fric", "vehicle.F_t_left", "vehicle.F_t_right", "shaft_left.tau_2", "shaft_right.tau_2")


def error_report(result, reference, keys) -> dict:
    """{key: (max error, RMS error)}, each divided by the reference signal's range."""
    report = {}
    for key in keys:
        ref = reference[key]
        span = float(np.ptp(ref)) or 1.0
        diff = np.asarray(result[key]) - ref
        report[key] = (float(np.max(np.abs(diff))) / span, float(np.sqrt(np.mean(diff * diff))) / span)
    return report


def r3_spring_reference(case: int, t_grid) -> Reference:
    """R3 nonlinear-spring system (systems.catalog.r3) in closed form: the mean motion
    (J_z + J_wv) phi_mean'' = T and the relative motion x = phi_z - phi_wv, a PWA
    oscillator m x'' + F(x) = u with m = J_z J_wv / (J_z + J_wv), u = T J_wv / (J_z + J_wv),
    switched exactly by solvers.pwa (no scipy needed: the motion is piecewise analytic)."""
    breakpoint, k_1, k_2 = r3.SPRING_CASES[case]
    parts = r3.SPRING[case].components
    j1, j2, torque = parts["z"].parameters["J"], parts["wv"].parameters["J"], parts["drive"].parameters["y_1"]
    mass = j1 * j2 / (j1 + j2)
    oscillator = PwaOscillator(mass, Characteristic((0.0, breakpoint), (k_1, k_2)))
    t_grid = np.asarray(t_grid, dtype=float)
    x, v = np.zeros(t_grid.size), np.zeros(t_grid.size)
    state = OscillatorState(0.0, 0.0)
    for k in range(1, t_grid.size):
        state = oscillator.step(state, torque * j2 / (j1 + j2), t_grid[k] - t_grid[k - 1]).state
        x[k], v[k] = state.x, state.v
    w_mean = torque * t_grid / (j1 + j2)
    spring = np.array([oscillator.spring.value(s) for s in x])
    return Reference(t_grid, {"spring.phi_rel": x, "spring.tau_2": spring,
                              "z.w": w_mean + j2 / (j1 + j2) * v, "wv.w": w_mean - j1 / (j1 + j2) * v})


def fan_model(case: str, **values):
    """(PoweredVehicle, initial state) of a Fan et al. case from its components
    (systems.catalog.fan: the case's .ssd with ``values`` replacing T0, T_S, ...)."""
    parts = {name: c.with_defaults() for name, c in fan.components(case, **values).items()}
    engine, clutch, vehicle = parts["engine"], parts["clutch"], parts["vehicle"]
    speeds = {"engine w_start": engine["w_start"], "clutch w_1_start": clutch["w_1_start"],
              "clutch w_2_start": clutch["w_2_start"]}
    if len(set(speeds.values())) != 1 or not clutch["locked_start"] or clutch["d_visc"] or engine["phi_start"]:
        raise ValueError(f"fan_model starts the powertrain as one locked shaft at one speed without viscous "
                         f"clutch friction; case {case} gives {speeds}, locked_start {clutch['locked_start']!r}, "
                         f"d_visc {clutch['d_visc']!r}, phi_start {engine['phi_start']!r}")
    lever = clutch["r_eff"] * clutch["n_surfaces"] * clutch["f_n"]
    powertrain = PowertrainParams(J_e=engine["J"], J_f=clutch["J_1"], J_c=clutch["J_2"],
                                  k1=parts["input_shaft"]["k"], c1=parts["input_shaft"]["d"],
                                  k2=parts["half_shaft"]["k"], c2=parts["half_shaft"]["d"],
                                  T0=engine["T0"] * engine["throttle"],
                                  h2=engine["h2"], h4=engine["h4"],
                                  T_S=clutch["mu_s"] * lever, T_C=clutch["mu_k"] * lever,
                                  wheel=fan.driven_wheel(case), w_stribeck=clutch["w_stribeck"],
                                  alpha_stribeck=clutch["alpha_stribeck"])
    model = PoweredVehicle(VehicleParams(**{f.name: vehicle[f.name] for f in fields(VehicleParams)
                                            if f.name in vehicle}), powertrain)
    state = model.initial_state(vehicle["x_start"], vehicle["v_start"], vehicle["w_wheel_f_start"],
                                vehicle["w_wheel_r_start"], settle=vehicle["settle_start"],
                                w_powertrain=engine["w_start"])
    return model, state


def fan_reference(case: str, t_grid, **values) -> Reference:
    """Fan et al.'s system as the seed writes it, one set of equations (systems.catalog.powered_vehicle.
    PoweredVehicle: vehicle, powertrain and the clutch as a fifth contact of the LCP),
    with the parameters of the case's .ssd, sampled at ``t_grid``; signal names as in
    systems.catalog.fan's co-simulation."""
    model, state = fan_model(case, **values)
    t_grid = np.asarray(t_grid, dtype=float)
    names = ("vehicle.v", "vehicle.pitch", "vehicle.w_wheel_f", "vehicle.w_wheel_r", "engine.w", "clutch.w_1",
             "clutch.w_2", "clutch.w_slip", "vehicle.stick_f", "vehicle.stick_r", "clutch.locked")
    signals = {name: np.empty(t_grid.size) for name in names}
    for k, t in enumerate(t_grid):
        if k:
            state = model.step(state, 0.0, 0.0, t - t_grid[k - 1], t_grid[k - 1]).state
        q, qd, stuck = state.q, state.qd, [mode == Mode.STUCK for mode in state.modes]
        row = (qd[0], q[2], qd[5], qd[8], qd[11], qd[10], qd[9], qd[10] - qd[9], stuck[0], stuck[2], stuck[4])
        for name, value in zip(names, row):
            signals[name][k] = value
    return Reference(t_grid, signals)


def r3_clearance_reference(case: int, t_grid, max_step: float = 1e-4) -> Reference:
    """R3 clearance system (systems.catalog.r3) as one ODE with events: J_z and J_w with the play
    +-b (free flight, Newton impacts with e = c_r, persistent contact as a constraint that
    opens when the contact torque would pull), the shaft k2, d2 from J_w to J_v, and the
    drive torque switching at 1 s.  scipy DOP853 (rtol 1e-10) with terminal events, its
    steps bounded by ``max_step``, which is the protection: a bounce shorter than one
    integrator step would pass unseen between two sign checks of the event functions.
    Such a miss leaves the bodies beyond the play (no impact turns them back), and the
    play is checked at every event, segment end and sample: a crossing still present there
    raises ValueError (lower max_step) instead of returning a wrong motion.

    With elastic impacts (case 2, c_r = 1) the bodies rattle in the 1e-4 rad play, about a
    thousand impacts in 2 s, and the instants are sensitive to the smallest perturbation
    (this reference at max_step 1e-4 and 3e-5 s differs by 0.09 rad/s in w_z): the
    pointwise w_z and w_w are not reproducible, the motion of the mesh's centre of
    momentum ``mesh.w_mean`` = (J_z w_z + J_w w_w) / (J_z + J_w), which no impact changes,
    and the vehicle speed are."""
    solve_ivp = require("scipy.integrate", "the monolithic references need", "cli").solve_ivp


    parts = {name: c.with_defaults() for name, c in r3.CLEARANCE[case].components.items()}
    mesh, shaft_p, body, drive = parts["mesh"], parts["shaft"], parts["vehicle"], parts["drive"]
    idle = {f"{name}": mesh[name] for name in ("k_ground_1", "k_ground_2", "d_ground_1", "d_ground_2",
                                                "phi_1_start", "w_1_start", "phi_2_start", "w_2_start")}
    idle.update(shaft_ratio_minus_1=shaft_p["ratio"] - 1.0, mesh_ratio_minus_1=mesh["ratio"] - 1.0,
                pre_twist=shaft_p["phi_rel_start"], vehicle_d_ground=body["d_ground"], vehicle_w_start=body["w_start"])
    if any(idle.values()) or not drive["hold"]:
        raise ValueError(f"r3_clearance_reference covers the documented layout (no ground springs, unit ratios, "
                         f"from rest, a staircase drive); case {case} gives {idle}, hold {drive['hold']!r}")
    b, e, w_close = mesh["b"], mesh["e_rest"], mesh["w_close"]
    jz, jw, jv, k2, d2 = mesh["J_1"], mesh["J_2"], body["J"], shaft_p["k"], shaft_p["d"]
    m_eff = 1.0 / (1.0 / jz + 1.0 / jw)
    t_grid = np.asarray(t_grid, dtype=float)

    def shaft(y):
        return k2 * (y[2] - y[4]) + d2 * (y[3] - y[5])

    def rhs(t, y, side, torque):
        tau = shaft(y)
        if side:
            a = (torque - tau) / (jz + jw)
            return [y[1], a, y[3], a, y[5], tau / jv]
        return [y[1], torque / jz, y[3], -tau / jw, y[5], tau / jv]

    def contact_torque(y, side, torque):
        a = (torque - shaft(y)) / (jz + jw)
        return jw * a + shaft(y)            # on J_w from J_z

    y = np.zeros(6)
    side, t, samples = 0, 0.0, np.full((t_grid.size, 6), np.nan)
    times, levels = table_points(drive)                 # the staircase drive, held before t_1
    edges = [0.0] + [x for x in times if 0.0 < x < t_grid[-1]] + [float(t_grid[-1])]
    segments = [(lo, hi, levels[max(0, sum(x <= lo for x in times) - 1)]) for lo, hi in zip(edges, edges[1:])]
    for index, (start, stop, torque) in enumerate(segments):
        t = start
        while t < stop:
            if side:
                def opens(t, y, *_):
                    return side * contact_torque(y, side, torque)
                opens.terminal, opens.direction = True, -1
                events = [opens]
            else:
                def hits_up(t, y, *_):
                    return b - (y[0] - y[2])
                def hits_down(t, y, *_):
                    return (y[0] - y[2]) + b
                hits_up.terminal = hits_down.terminal = True
                hits_up.direction = hits_down.direction = -1
                events = [hits_up, hits_down]
            sol = solve_ivp(rhs, (t, stop), y, method="DOP853", rtol=1e-10, atol=1e-12, dense_output=True,
                            events=events, args=(side, torque), max_step=max_step)
            inside = (t_grid >= t) & (t_grid <= sol.t[-1])
            for k in np.flatnonzero(inside):
                samples[k] = sol.sol(t_grid[k])
            y, t = sol.y[:, -1].copy(), float(sol.t[-1])
            if abs(y[0] - y[2]) > b * (1.0 + 1e-6):
                raise ValueError(f"the play b = {b} was crossed unseen before t = {t}: a bounce shorter "
                                 f"than max_step = {max_step} s; lower max_step")
            if sol.status != 1:
                break
            if side:                                  # the contact would pull: free flight
                side = 0
                continue
            hit = 1 if sol.t_events[0].size else -1
            y[2] = y[0] - hit * b                     # exactly on the limit
            w_rel = y[1] - y[3]
            plastic = e * abs(w_rel) < w_close
            impulse = (1.0 + (0.0 if plastic else e)) * m_eff * w_rel
            y[1] -= impulse / jz
            y[3] += impulse / jw
            if plastic:
                y[3] = y[1]
                free_rel = torque / jz + shaft(y) / jw          # relative acceleration if free
                if hit * free_rel >= 0.0:
                    side = hit
        if side and index + 1 < len(segments):   # the drive steps here: re-decide the contact
            if side * contact_torque(y, side, segments[index + 1][2]) < 0.0:
                side = 0
    rel = samples[:, 0] - samples[:, 2]
    if np.any(np.abs(rel) > b * (1.0 + 1e-6)):
        raise ValueError(f"the play b = {b} was crossed unseen: a bounce shorter than max_step = {max_step} s; "
                         "lower max_step")
    return Reference(t_grid, {"mesh.w_1": samples[:, 1], "mesh.w_2": samples[:, 3], "vehicle.w": samples[:, 5],
                              "mesh.phi_rel": rel,
                              "mesh.w_mean": r3.mesh_mean_speed(case, samples[:, 1], samples[:, 3])})
