"""Friction clutch elements: Clutch (2 bodies), DualClutch (3), ClutchChain (2..6).

All three are the n-body friction chain of Biagiotti & Zanasi (solvers.friction):
bodies i = 1..n with inertia J_i and external torque tau_i, interface j joining body j
and body j+1 with capacity T_s = mu_s r_eff n_surfaces f_n (static) and
T_c = mu_k r_eff n_surfaces f_n (kinetic) and the Stribeck law of eq. 2.
``tau_fric`` is the torque an interface transmits from body j to body j+1
(acts -tau_fric on body j, +tau_fric on body j+1); ``w_slip = w_j - w_(j+1)``.

The three have an optional thermal model (solvers.thermal; :class:`FrictionChainElement`):
a temperature per interface, heated by its dissipation and cooled to ``T_amb``, on which
both friction coefficients depend linearly.  The other friction elements (Brake,
OneWayClutch, PlanetaryGear, Differential, TorqueConverter) have none.
"""
from __future__ import annotations

from functools import partial
from typing import NamedTuple

from drivetrain_fmu.solvers.friction import STUCK, ChainState, FrictionChain, FrictionSystem, InterfaceLaw
from drivetrain_fmu.solvers.thermal import InterfaceHeat

from .model import Model, items_getter
from .variables import BOOLEAN, INTEGER, Family, inertia, input_, output, parameter, with_second_torques

#: the thermal model's defaults: a clutch pack of about 1 kg of steel (460 J/(kg.K)), a
#: conductance of a dry clutch in its bell housing, 20 degC; c_mu_T = 0: no dependence
_HEAT = dict(C_th=500.0, G_th=10.0, T_start=293.15, T_ref=293.15, c_mu_T=0.0)


def interface_variables(tag: str, label: str, law: dict, locked_start: bool = False, family=None):
    """The friction parameters of one interface (suffix ``tag``) and its locked start flag;
    ``family(stem)``, if given, is the :class:`~fmus.variables.Family` each one is a member of."""
    member = family or (lambda stem: None)
    return [
        parameter(f"mu_s{tag}", None, f"static friction coefficient of {label}", law["mu_s"], low=0.0,
                  family=member("mu_s")),
        parameter(f"mu_k{tag}", None, f"kinetic friction coefficient of {label} (<= mu_s)", law["mu_k"], low=0.0,
                  family=member("mu_k")),
        parameter(f"r_eff{tag}", "m", f"effective friction radius of {label}", law["r_eff"], low=0.0, low_open=True,
                  family=member("r_eff")),
        parameter(f"n_surfaces{tag}", None, f"number of friction surfaces of {label}", law["n_surfaces"],
                  type=INTEGER, low=1, family=member("n_surfaces")),
        parameter(f"w_stribeck{tag}", "rad/s", f"Stribeck speed of {label} (0: no Stribeck drop)",
                  law["w_stribeck"], low=0.0, family=member("w_stribeck")),
        parameter(f"alpha_stribeck{tag}", None, f"Stribeck exponent of {label}", law["alpha_stribeck"],
                  low=0.0, low_open=True, family=member("alpha_stribeck")),
        parameter(f"d_visc{tag}", "N.m.s/rad", f"viscous friction coefficient of {label}", law["d_visc"], low=0.0,
                  family=member("d_visc")),
        parameter(f"locked{tag}_start", None, f"{label} starts locked (needs zero slip at the start)",
                  locked_start, type=BOOLEAN, family=member("locked_start")),
    ]


def chain_variables(n: int, tags: list[str], labels: list[str], inertias, law: dict,
                    w_start, normal_forces, count_parameter: bool = False):
    """The variable table of an n-body chain whose interfaces carry the suffixes ``tags``.

    The variables of body i are member i of their family (J_i: stem "J", index i).  With
    ``count_parameter`` the parameter ``n_bodies`` (2..n) chooses how many bodies are in
    use, and the interfaces, numbered by their tags "_1" .. "_(n-1)", are families too:
    interface j (between body j and body j+1) is in use when j <= n_bodies - 1.  Without
    it every body is in use, and the interfaces (one, or named by letters) are no family."""
    bodies = range(1, n + 1)
    count = "n_bodies" if count_parameter else None

    def body(stem: str, i: int) -> Family:
        return Family(stem, i, count)

    def interface(j: int):
        return (lambda stem: Family(stem, j, count, offset=1)) if count else (lambda stem: None)

    interfaces = list(zip(range(1, len(tags) + 1), tags, labels))
    torque_inputs = [f"tau_{i}" for i in bodies] + [f"f_n{t}" for t in tags]
    variables = []
    if count_parameter:
        variables.append(parameter("n_bodies", None, f"number of bodies in the chain (2..{n})", 3,
                                   type=INTEGER, low=2, high=n))
    for i, j in zip(bodies, inertias):
        variables.append(inertia(f"J_{i}", f"inertia of body {i}", j, family=body("J", i)))
    for j, tag, label in interfaces:
        variables += interface_variables(tag, label, law, family=interface(j))
    for i, w in zip(bodies, w_start):
        variables.append(parameter(f"phi_{i}_start", "rad", f"initial angle of body {i}", 0.0,
                                   family=body("phi_start", i)))
        variables.append(parameter(f"w_{i}_start", "rad/s", f"initial speed of body {i}", w,
                                   family=body("w_start", i)))
    for i in bodies:
        variables.append(input_(f"tau_{i}", "N.m", f"external torque on body {i}, positive accelerating it",
                                family=body("tau", i)))
    for (j, tag, label), f_n in zip(interfaces, normal_forces):
        variables.append(input_(f"f_n{tag}", "N", f"normal (clamp) force of {label}; 0 opens it", f_n, low=0.0,
                                family=interface(j)("f_n")))
    for i in bodies:
        variables.append(output(f"phi_{i}", "rad", f"angle of body {i}", family=body("phi", i)))
        variables.append(output(f"w_{i}", "rad/s", f"speed of body {i}", family=body("w", i)))
    for j, tag, label in interfaces:
        member = interface(j)
        variables += [
            output(f"tau_fric{tag}", "N.m", f"torque {label} transmits from body {j} to body {j + 1}",
                   depends=torque_inputs, family=member("tau_fric")),
            output(f"w_slip{tag}", "rad/s", f"slip speed of {label}, w_{j} - w_{j + 1}", family=member("w_slip")),
            output(f"locked{tag}", None, f"{label} is stuck (static friction holds it)", type=BOOLEAN,
                   depends=torque_inputs, family=member("locked")),
        ]
    variables += [
        output("p_loss", "W", "power dissipated by friction", depends=[f"f_n{t}" for t in tags]),
        output("e_loss", "J", "energy dissipated by friction since the start"),
    ]
    # the thermal model (solvers.thermal), declared last so that the variables above keep
    # their value references
    variables += [
        parameter("thermal", None, "integrate the clutch temperatures and let friction depend on them "
                  "(false: the temperatures stay at their start values, no heat flows)", False, type=BOOLEAN),
        input_("T_amb", "K", "ambient temperature the clutches exchange heat with", _HEAT["T_start"],
               low=0.0, low_open=True, active_if="thermal"),
    ]
    for j, tag, label in interfaces:
        variables += thermal_variables(tag, label, _HEAT, family=interface(j))
    return with_second_torques(variables, [f"tau_{i}" for i in bodies])


def thermal_variables(tag: str, label: str, heat: dict, family=None):
    """The thermal parameters and outputs of one interface (suffix ``tag``; solvers.thermal)."""
    member = family or (lambda stem: None)
    return [
        parameter(f"C_th{tag}", "J/K", f"heat capacity of {label}", heat["C_th"], low=0.0, low_open=True,
                  family=member("C_th")),
        parameter(f"G_th{tag}", "W/K", f"heat-transfer coefficient from {label} to the ambient", heat["G_th"],
                  low=0.0, family=member("G_th")),
        parameter(f"T_th{tag}_start", "K", f"temperature of {label} at the start", heat["T_start"], low=0.0,
                  low_open=True, family=member("T_th_start")),
        parameter(f"T_ref{tag}", "K", f"temperature at which the friction coefficients of {label} are mu_s{tag}, "
                  f"mu_k{tag}", heat["T_ref"], low=0.0, low_open=True, family=member("T_ref")),
        parameter(f"c_mu_T{tag}", "1/K", f"relative temperature coefficient of the friction of {label}: "
                  f"mu(T) = mu (1 + c_mu_T{tag} (T - T_ref{tag}))", heat["c_mu_T"], family=member("c_mu_T")),
        output(f"T_th{tag}", "K", f"temperature of {label}", family=member("T_th")),
        output(f"p_heat{tag}", "W", f"heat flow from {label} to the ambient, G_th{tag} (T_th{tag} - T_amb)",
               depends=["T_amb"], family=member("p_heat")),
        output(f"e_heat{tag}", "J", f"heat transferred from {label} to the ambient since the start",
               family=member("e_heat")),
    ]


class FrictionElement(Model):
    """Body element whose members are joined by dry-friction interfaces (solvers.friction):
    the partial element of Clutch, DualClutch, ClutchChain, Brake, OneWayClutch and
    PlanetaryGear.  A subclass names its members (``MEMBERS``: the suffixes of ``phi``,
    ``w``, ``tau``) and interfaces (``TAGS``: the suffixes of ``tau_fric``, ``locked``,
    ``f_n``) and builds its :class:`~solvers.friction.FrictionSystem` (``build_system``);
    by default a chain: member i joined to member i+1 by interface i."""

    MEMBERS: tuple[str, ...] = ("_1", "_2")
    TAGS: tuple[str, ...] = ("",)
    #: interfaces to the fixed housing: their ``tau_fric`` is the torque the housing applies
    #: to the member, minus the interface torque of solvers.friction (which acts -tau on the
    #: member of its row); a clutch's is the torque it transmits from its first member
    HOUSING_TAGS: frozenset = frozenset()
    #: whether ``w_slip<tag>`` outputs exist (a brake's slip is the member's speed itself)
    SLIP_OUTPUTS = True
    description = "Bodies in series joined by dry-friction interfaces (Biagiotti-Zanasi stick/slip)"

    # --- sizes (ClutchChain makes them a parameter)
    def active_members(self):
        return self.MEMBERS

    def active_tags(self):
        return self.TAGS

    # --- parameters
    def law(self, tag: str) -> InterfaceLaw:
        return InterfaceLaw(*(float(getattr(self, f"{name}{tag}")) for name in
                              ("mu_s", "mu_k", "r_eff", "n_surfaces", "w_stribeck", "alpha_stribeck", "d_visc")))

    def cross_check(self):
        problems = []
        for tag in self.active_tags():
            mu_s, mu_k = getattr(self, f"mu_s{tag}"), getattr(self, f"mu_k{tag}")
            if mu_k > mu_s:
                problems.append(f"mu_k{tag} = {mu_k!r} must not exceed mu_s{tag} = {mu_s!r}; allowed range [0, mu_s{tag}]")
        return problems

    def build_system(self) -> FrictionSystem:
        """The friction system of the parameters set now (default: the chain)."""
        return FrictionChain([getattr(self, f"J{m}") for m in self.active_members()],
                             [self.law(tag) for tag in self.active_tags()])

    def start_coordinates(self):
        """(angles, speeds) of the generalized coordinates at the start (default: every member)."""
        members = self.active_members()
        return ([getattr(self, f"phi{m}_start") for m in members], [getattr(self, f"w{m}_start") for m in members])

    def clamp_names(self):
        return [f"f_n{tag}" for tag in self.active_tags()]

    def capacities(self, clamps):
        """(T_s, T_c) of every interface at the clamp forces ``clamps``."""
        return self.chain.capacities(clamps)

    def initial_state(self) -> ChainState:
        self.chain = self.build_system()
        # the positions of the torques and clamp forces in use among the declared inputs, and
        # the names of the outputs of the members and interfaces in use
        members, tags = self.active_members(), self.active_tags()
        position = {v.name: i for i, v in enumerate(self.input_variables)}
        self._pick_torques = self.torque_picker([f"tau{m}" for m in members])
        self._pick_clamps = items_getter([position[name] for name in self.clamp_names()])
        self._output_names = ([f"phi{m}" for m in members] + [f"w{m}" for m in members]
                              + ([f"w_slip{tag}" for tag in tags] if self.SLIP_OUTPUTS else []) + ["e_loss"])
        self._interface_outputs = [(f"tau_fric{tag}", f"locked{tag}", -1.0 if tag in self.HOUSING_TAGS else 1.0)
                                   for tag in tags]
        # the outputs of the interfaces beyond n_bodies: open
        self._open_outputs = {**{f"tau_fric{tag}": 0.0 for tag in self.TAGS},
                              **{f"locked{tag}": False for tag in self.TAGS}, "p_loss": 0.0}
        return self.chain.state_from_bodies(*self.start_coordinates())

    def decode_state(self, data):
        return ChainState.from_json(data)

    def prepare(self, inputs):
        """(external torques, T_s, T_c, their solvers.friction step_inputs)."""
        torques = self._pick_torques(inputs)
        t_s, t_c = self.capacities(self._pick_clamps(inputs))
        return torques, t_s, t_c, self.chain.step_inputs(torques)

    def step(self, t, h, prepared):
        torques, t_s, t_c, step_inputs = prepared
        # the stuck set and frictions the feedthrough resolved at this state and these inputs
        start = self._resolution if self.fresh else None
        return self.chain.advance(self.state, torques, t_s, t_c, h, start=start, inputs=step_inputs)

    def outputs(self):
        return self.chain_outputs(self.state)

    def chain_outputs(self, state: ChainState):
        """Set the outputs of the friction system's ``state``; their values."""
        values = self.chain.member_motion(state)       # the angles, then the speeds
        _, _, _, slips, _, e_loss = state
        if self.SLIP_OUTPUTS:
            values += slips
        values.append(e_loss)
        names, attributes = self._output_names, self.__dict__
        for i in range(len(names)):
            attributes[names[i]] = values[i]
        return values           # every state output that changes (the inactive members' stay 0)

    def feedthrough(self, prepared):
        _, t_s, t_c, (_, g) = prepared
        return self.friction_feedthrough(self.state, g, t_s, t_c)

    def friction_feedthrough(self, state: ChainState, g, t_s, t_c) -> dict:
        """The friction outputs at ``state``, relative free accelerations ``g`` and capacities
        (``t_s``, ``t_c``); the resolution is kept for the step (``fresh``)."""
        _, _, _, slips, modes_start, _ = state
        modes, tau = self._resolution = self.chain.resolve(slips, modes_start, g, t_s, t_c)
        values = self._open_outputs.copy()
        names = self._interface_outputs
        stuck = STUCK
        p_loss = 0.0
        for j in range(len(names)):
            torque_name, locked_name, sign = names[j]
            torque, slip, mode = tau[j], slips[j], modes[j]
            values[torque_name] = sign * torque
            values[locked_name] = mode == stuck
            p_loss += torque * slip                     # the power friction dissipates in interface j
        values["p_loss"] = p_loss
        return values


class ThermalChainState(NamedTuple):
    """State of a chain of clutches with their thermal model; immutable.

    chain         : the friction system's state (solvers.friction.ChainState)
    temperatures  : temperature of each interface in use [K]
    heat          : heat each interface has transferred to the ambient since the start [J]
    """

    chain: ChainState
    temperatures: tuple[float, ...]
    heat: tuple[float, ...]

    def to_json(self) -> list:
        return [self.chain.to_json(), list(self.temperatures), list(self.heat)]

    @classmethod
    def from_json(cls, data) -> "ThermalChainState":
        chain, temperatures, heat = data
        return cls(ChainState.from_json(chain), tuple(float(x) for x in temperatures), tuple(float(x) for x in heat))


_new_thermal_state = partial(tuple.__new__, ThermalChainState)   # from a tuple, as solvers.rigid's BodyState


class FrictionChainElement(FrictionElement):
    """A chain of clutches: members 1..n, clutch j joins body j and body j+1; the clutch
    states ``locked<tag>_start`` must agree with the start speeds.

    Thermal model (solvers.thermal), with ``thermal`` true: each clutch in use has a
    temperature ``T_th<tag>`` (heat capacity ``C_th<tag>``, conductance ``G_th<tag>`` to the
    input ``T_amb``), heated by the energy the friction step says it dissipated
    (solvers.friction, "Dissipation per interface": for a single clutch the step's increment
    of e_loss itself); its friction coefficients are mu (1 + c_mu_T<tag> (T - T_ref<tag>)),
    both of them, at the temperature of the step's start, held over the step as f_n is
    (explicit coupling, first order in h).  A step at whose end a clutch's coefficients
    would be negative is refused naming the temperature, c_mu_T and the limit.  With
    ``thermal`` false (the default) the temperatures stay at ``T_th<tag>_start``, ``p_heat``
    and ``e_heat`` at 0, and the friction step is the one without the thermal model, every
    result bit for bit (nothing is multiplied, nothing else is computed)."""

    def cross_check(self):
        problems = super().cross_check()
        for j, tag in enumerate(self.active_tags(), start=1):
            w_a, w_b = getattr(self, f"w_{j}_start"), getattr(self, f"w_{j + 1}_start")
            if getattr(self, f"locked{tag}_start") and w_a != w_b:
                problems.append(f"locked{tag}_start = true needs w_{j}_start == w_{j + 1}_start "
                                f"(got {w_a!r} and {w_b!r})")
        if self.thermal:
            for tag in self.active_tags():
                _, c_name, ref_name = self._thermal_names(tag)
                problem = self.heat_law(tag).problem(getattr(self, f"T_th{tag}_start"),
                                                     (f"T_th{tag}_start", c_name, ref_name))
                if problem:
                    problems.append(problem)
        return problems

    @staticmethod
    def _thermal_names(tag):
        return f"T_th{tag}", f"c_mu_T{tag}", f"T_ref{tag}"

    def heat_law(self, tag: str) -> InterfaceHeat:
        return InterfaceHeat(*(float(getattr(self, f"{name}{tag}")) for name in ("C_th", "G_th", "T_ref", "c_mu_T")))

    def initial_state(self) -> ThermalChainState:
        chain_state = super().initial_state()
        tags = self.active_tags()
        self._thermal = bool(self.thermal)
        self._heat_laws = [self.heat_law(tag) for tag in tags]
        # the friction depends on the temperatures: some c_mu_T is not 0
        self._heated = self._thermal and any(law.c_mu_t != 0.0 for law in self._heat_laws)
        self._t_amb_position = [v.name for v in self.input_variables].index("T_amb")
        self._thermal_names_in_use = [self._thermal_names(tag) for tag in tags]
        self._temperature_outputs = [(f"T_th{tag}", f"e_heat{tag}") for tag in tags]
        self._heat_flow_outputs = [f"p_heat{tag}" for tag in tags]
        temperatures = tuple(float(getattr(self, f"T_th{tag}_start")) for tag in tags)
        heat = (0.0,) * len(tags)
        # the heat flows of the clutches not in use, and of all without the thermal model: 0
        self._open_outputs.update((f"p_heat{tag}", 0.0) for tag in self.TAGS)
        if not self._thermal:       # constant state outputs: set once
            for (temperature_name, heat_name), temperature in zip(self._temperature_outputs, temperatures):
                setattr(self, temperature_name, temperature)
                setattr(self, heat_name, 0.0)
        return ThermalChainState(chain_state, temperatures, heat)

    def decode_state(self, data):
        return ThermalChainState.from_json(data)

    def prepare(self, inputs):
        """(external torques, T_s, T_c at the reference temperature, their solvers.friction
        step_inputs, T_amb)."""
        torques = self._pick_torques(inputs)
        t_s, t_c = self.capacities(self._pick_clamps(inputs))
        return torques, t_s, t_c, self.chain.step_inputs(torques), inputs[self._t_amb_position]

    def heated_capacities(self, t_s, t_c, temperatures):
        """(T_s, T_c) at the clutches' ``temperatures``: times mu(T) / mu_ref."""
        static, kinetic = [], []
        for law, capacity_s, capacity_c, temperature in zip(self._heat_laws, t_s, t_c, temperatures):
            factor = law.friction_factor(temperature)
            static.append(capacity_s * factor)
            kinetic.append(capacity_c * factor)
        return static, kinetic

    def step(self, t, h, prepared):
        torques, t_s, t_c, step_inputs, t_amb = prepared
        chain_state, temperatures, heat = self.state
        # the stuck set and frictions the feedthrough resolved at this state and these inputs
        start = self._resolution if self.fresh else None
        if not self._thermal:
            return _new_thermal_state((self.chain.advance(chain_state, torques, t_s, t_c, h, start=start,
                                                          inputs=step_inputs), temperatures, heat))
        if self._heated:
            t_s, t_c = self.heated_capacities(t_s, t_c, temperatures)
        if len(temperatures) == 1:      # one clutch: it dissipated the step's increment of e_loss
            new_chain = self.chain.advance(chain_state, torques, t_s, t_c, h, start=start, inputs=step_inputs)
            losses = [new_chain.e_loss - chain_state.e_loss]
        else:
            losses = [0.0] * len(temperatures)
            new_chain = self.chain.advance(chain_state, torques, t_s, t_c, h, start=start, inputs=step_inputs,
                                           losses=losses)
        new_temperatures, new_heat = [], []
        for j, law in enumerate(self._heat_laws):
            temperature, transferred = law.advance(temperatures[j], losses[j], h, t_amb)
            problem = law.problem(temperature, self._thermal_names_in_use[j]) if self._heated else None
            if problem:
                raise ValueError(f"{problem}; the step would end there")
            new_temperatures.append(temperature)
            new_heat.append(heat[j] + transferred)
        return _new_thermal_state((new_chain, tuple(new_temperatures), tuple(new_heat)))

    def outputs(self):
        chain_state, temperatures, heat = self.state
        values = self.chain_outputs(chain_state)
        if self._thermal:
            attributes = self.__dict__
            for (temperature_name, heat_name), temperature, transferred in zip(
                    self._temperature_outputs, temperatures, heat):
                attributes[temperature_name] = temperature
                attributes[heat_name] = transferred
                values.append(temperature)
                values.append(transferred)
        return values

    def feedthrough(self, prepared):
        _, t_s, t_c, (_, g), t_amb = prepared
        chain_state, temperatures, _ = self.state
        if self._heated:
            t_s, t_c = self.heated_capacities(t_s, t_c, temperatures)
        values = self.friction_feedthrough(chain_state, g, t_s, t_c)
        if self._thermal:
            for name, law, temperature in zip(self._heat_flow_outputs, self._heat_laws, temperatures):
                values[name] = law.g_th * (temperature - t_amb)
        return values


_Z1_LAW = dict(mu_s=0.4, mu_k=0.32, r_eff=0.125, n_surfaces=2, w_stribeck=0.0, alpha_stribeck=1.0, d_visc=0.0)
_Z3_LAW = dict(mu_s=0.4, mu_k=0.3, r_eff=0.15, n_surfaces=2, w_stribeck=5.0, alpha_stribeck=1.0, d_visc=0.0)


class Clutch(FrictionChainElement):
    """Dry friction clutch joining body 1 and body 2 (defaults: case Z1, lock at 0.14583 s)."""

    description = "Dry friction clutch between two inertias, exact stick/slip (Biagiotti-Zanasi)"
    TAGS = ("",)
    DEFAULT_STOP = 0.5
    VARIABLES = chain_variables(2, [""], ["the clutch"], (0.2, 0.28), _Z1_LAW, (100.0, 0.0), (1000.0,))


class DualClutch(FrictionChainElement):
    """Double clutch of a DCT: body 2 engine side, clutch a to body 1, clutch b to body 3."""

    description = "Double clutch (DCT): three inertias, two friction interfaces (Biagiotti-Zanasi)"
    MEMBERS = ("_1", "_2", "_3")
    TAGS = ("_a", "_b")
    DEFAULT_STOP = 1.0
    VARIABLES = chain_variables(3, ["_a", "_b"], ["clutch a", "clutch b"], (0.05, 0.25, 0.05), _Z3_LAW,
                                (0.0, 0.0, 0.0), (0.0, 0.0))


class ClutchChain(FrictionChainElement):
    """Up to six bodies in series joined by clutches; ``n_bodies`` chooses how many."""

    description = "Chain of up to six inertias joined by friction clutches (Biagiotti-Zanasi, n bodies)"
    MEMBERS = ("_1", "_2", "_3", "_4", "_5", "_6")
    TAGS = ("_1", "_2", "_3", "_4", "_5")
    DEFAULT_STOP = 1.0
    VARIABLES = chain_variables(6, list(TAGS), [f"clutch {j}" for j in range(1, 6)], (0.1,) * 6, _Z3_LAW,
                                (0.0,) * 6, (0.0,) * 5, count_parameter=True)

    def active_members(self):
        return self.MEMBERS[: int(self.n_bodies)]

    def active_tags(self):
        return self.TAGS[: int(self.n_bodies) - 1]

    def family_counts(self):
        # an n_bodies outside 2..6 is reported by its range check, with every body and
        # clutch checked (their families are declared in chain_variables)
        n = int(self.n_bodies)
        return {"n_bodies": n if 2 <= n <= 6 else 6}

    def cross_check(self):
        if not 2 <= int(self.n_bodies) <= 6:
            return []  # reported by the range check of n_bodies
        return super().cross_check()
