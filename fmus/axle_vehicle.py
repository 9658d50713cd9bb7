"""AxleVehicle: a vehicle on one driven axle of two wheels, each wheel with its own tire as
clutch (VehicleSimple's tire model 0, solvers.tire, once per wheel), so that the two sides of
the road may grip differently (split mu: one wheel on ice, one on asphalt).

Bodies (members of the friction system): the left and the right wheel, J_wheel each, speeds
w_left, w_right [rad/s]; the vehicle, mass m_vehicle, speed v [m/s] (the wheels of the undriven
axle roll with it, their inertia lumped into the mass).
Dynamics (eq. 1; F_t_left, F_t_right the tangential forces of the tires on the vehicle):
    J_wheel w_left'  = tau_left  - R F_t_left
    J_wheel w_right' = tau_right - R F_t_right
    m v'             = F_t_left + F_t_right - F_road(v, grade)
Tires (eq. 2): Coulomb stick/slip between each wheel and the vehicle, slip speed
v_slip = R w_wheel - v, static capacity mu_s F_z and sliding force mu_k F_z with the wheel's
own coefficients, the normal load of each driven wheel
    F_z = axle_load m g cos(grade) / 2                                       (eq. 3)
(the driven axle carries the fraction axle_load of the weight, split equally between its
wheels).  VehicleSimple's tire model 0 is this law with the vehicle's inertia seen at the
wheel, m R^2, and torques mu F_z R: the same motion in other units.  F_road is VehicleSimple's
road load (solvers.tire.road_force: d_v v / R^2 + f_roll m g sgn v + rho/2 cdA v|v| +
m g sin(grade)), evaluated at the start of each step and held over it as VehicleSimple's tire
model 0 holds it.  The three bodies and two interfaces are a solvers.friction.FrictionSystem
with the inertias (J_wheel, J_wheel, m) and the slip rows [R, 0, -1] and [0, R, -1] (generalized
coordinates in rad and m: the kinetic energy J w^2 / 2 + m v^2 / 2 and the generalized force
-R F_t on a wheel are those of eq. 1), one free motion (the wheels rolling, N = (1, 1, R)):
each wheel's lock (rolling) and breakaway (spin, lock-up) at its exact instant inside the
step for the torques held, no velocity band, no chattering.

With equal coefficients and equal torques both tires act alike: the element is
VehicleSimple's model 0 with J_wheel 2 J_wheel, drive torque tau_left + tau_right and F_z the
whole axle's load (axle_load = 1: VehicleSimple puts all the weight on its one wheel).

Defaults: a rear-driven saloon of 1500 kg on tires of R = 0.3 m; J_wheel = 1.25 kg.m2, a
wheel with its tire, brake disc and hub (about 1 kg.m2 for a 17-inch wheel and tire, 0.25
for the disc and hub; 1.25 rather than 1.2 also brings the element-contract test's start
values, 0.25 each, back from the friction system's mean and slip coordinates exactly, which
1.2 did not: w_left 0.2500000000000001); axle_load = 0.5, the static weight distribution of
a rear-driven saloon (near 50:50; the load transfer onto the driven axle under acceleration
is left out: the Vehicle element has pitch); the split-mu case of the catalog
(systems/catalog/ssd/split_mu_*.ssd): the left wheel on ice (mu_s 0.1, mu_k 0.07), the right
on dry asphalt (mu_s 0.9, mu_k 0.75), the peak and sliding values of Wong, Theory of Ground
Vehicles, ch. 1 (average coefficients of road adhesion).  Road load: rolling resistance
f_roll = 0.012 and drag area cdA = 0.6 m2 in air of 1.2 kg/m3 (Wong, ch. 1 and 3: 0.010 ..
0.015 for car tires on asphalt, c_d A 0.5 .. 0.7 m2 for a saloon).  The default inputs, 300
N.m on each wheel, spin the ice wheel (its capacity mu_s F_z R = 0.1 * 3678.75 * 0.3 = 110
N.m) and roll the asphalt wheel.
Left out: tire compliance and the slip-dependent force of a real tire (the Pacejka model of
VehicleSimple, the radial stiffness of Vehicle); the undriven axle's wheels, whose inertia is
lumped into m_vehicle (rolling, they turn with the vehicle).
"""
from __future__ import annotations

import math

from drivetrain_fmu.solvers.contract import GRAVITY
from drivetrain_fmu.solvers.friction import STUCK, ChainState, FrictionSystem, InterfaceLaw
from drivetrain_fmu.solvers.tire import road_force

from .model import Model
from .variables import BOOLEAN, derived_inertia_problem, inertia, input_, mass, output, parameter, with_second_torques

_INPUTS = ("tau_left", "tau_right", "grade")
_SIDES = ("left", "right")
#: (mu_s, mu_k) of each side by default: ice and dry asphalt (module docstring)
_GRIP = {"left": (0.1, 0.07, "ice"), "right": (0.9, 0.75, "dry asphalt")}


def _side_variables(side):
    mu_s, mu_k, road = _GRIP[side]
    return [
        parameter(f"mu_s_{side}", None, f"static tire-road friction coefficient of the {side} wheel "
                  f"(default: {road})", mu_s, low=0.0),
        parameter(f"mu_k_{side}", None, f"sliding tire-road friction coefficient of the {side} wheel "
                  f"(<= mu_s_{side})", mu_k, low=0.0),
    ]


def _side_outputs(side):
    return [
        output(f"F_t_{side}", "N", f"tangential force of the {side} tire on the vehicle, positive forward",
               depends=_INPUTS),
        output(f"v_slip_{side}", "m/s", f"slip speed of the {side} tire, R w_{side} - v"),
        output(f"stick_{side}", None, f"the {side} tire sticks (rolls without slip)", type=BOOLEAN,
               depends=_INPUTS),
    ]


class AxleVehicle(Model):
    """Vehicle on one driven axle, a stick/slip tire per wheel (defaults: split mu, 300 N.m on
    each wheel from rest: the ice wheel spins, the asphalt wheel rolls)."""

    description = "Vehicle on one driven axle of two wheels, a stick/slip tire each (split mu), road load"
    DEFAULT_STOP = 2.0
    VARIABLES = with_second_torques((
        inertia("J_wheel", "inertia of each driven wheel (and what turns with it)", 1.25),
        mass("m_vehicle", "vehicle mass", 1500.0),
        parameter("R", "m", "wheel radius", 0.3, low=0.0, low_open=True),
        parameter("axle_load", "1", "fraction of the vehicle's weight on the driven axle, half on each of "
                  "its wheels", 0.5, low=0.0, low_open=True, high=1.0),
        *_side_variables("left"),
        *_side_variables("right"),
        parameter("d_v", "N.m.s/rad", "viscous road load on w_v = v/R", 0.0, low=0.0),
        parameter("f_roll", "1", "rolling resistance coefficient", 0.012, low=0.0),
        parameter("cdA", "m2", "aerodynamic drag area c_d A", 0.6, low=0.0),
        parameter("rho_air", "kg/m3", "air density", 1.2, low=0.0),
        parameter("phi_left_start", "rad", "initial angle of the left wheel", 0.0),
        parameter("w_left_start", "rad/s", "initial speed of the left wheel (rolling when equal to "
                  "v_start / R)", 0.0),
        parameter("phi_right_start", "rad", "initial angle of the right wheel", 0.0),
        parameter("w_right_start", "rad/s", "initial speed of the right wheel (rolling when equal to "
                  "v_start / R)", 0.0),
        parameter("x_start", "m", "initial vehicle position", 0.0),
        parameter("v_start", "m/s", "initial vehicle speed", 0.0),
        input_("tau_left", "N.m", "drive torque on the left wheel, positive accelerating it", 300.0),
        input_("tau_right", "N.m", "drive torque on the right wheel, positive accelerating it", 300.0),
        input_("grade", "rad", "road grade, positive uphill"),
        output("phi_left", "rad", "angle of the left wheel"),
        output("w_left", "rad/s", "speed of the left wheel"),
        output("phi_right", "rad", "angle of the right wheel"),
        output("w_right", "rad/s", "speed of the right wheel"),
        output("x", "m", "vehicle position"),
        output("v", "m/s", "vehicle speed"),
        *_side_outputs("left"),
        *_side_outputs("right"),
        output("p_loss", "W", "power dissipated by the two tires' slip", depends=("grade",)),
        output("e_loss", "J", "energy dissipated by the two tires' slip since the start"),
    ), ["tau_left", "tau_right"])

    def cross_check(self):
        problems = []
        for side in _SIDES:
            mu_s, mu_k = getattr(self, f"mu_s_{side}"), getattr(self, f"mu_k_{side}")
            if mu_k > mu_s:
                problems.append(f"mu_k_{side} = {mu_k!r} must not exceed mu_s_{side} = {mu_s!r}; "
                                f"allowed range [0, mu_s_{side}]")
        if self.m_vehicle > 0.0 and self.R > 0.0:       # (else the range check names them)
            problem = derived_inertia_problem("m_vehicle R^2, the vehicle's inertia seen at the wheel",
                                              self.m_vehicle * self.R * self.R,
                                              {"m_vehicle": self.m_vehicle, "R": self.R})
            if problem:
                problems.append(problem)
        return problems

    # ------------------------------------------------------------------ state
    def build_system(self) -> FrictionSystem:
        """The friction system of the parameters set now: members the wheels (rad/s) and the
        vehicle (m/s, mass m), slips R w_wheel - v, forces mu F_z (eq. 1, 2)."""
        r = float(self.R)
        laws = [InterfaceLaw(float(getattr(self, f"mu_s_{side}")), float(getattr(self, f"mu_k_{side}")), 1.0,
                             1.0, 0.0, 1.0, 0.0) for side in _SIDES]
        return FrictionSystem([self.J_wheel, self.J_wheel, self.m_vehicle], laws, rows=[[r, 0.0, -1.0], [0.0, r, -1.0]])

    def initial_state(self) -> ChainState:
        self.chain = self.build_system()
        self._drive = self.torque_picker(("tau_left", "tau_right"))
        return self.chain.state_from_bodies([self.phi_left_start, self.phi_right_start, self.x_start],
                                            [self.w_left_start, self.w_right_start, self.v_start])

    def decode_state(self, data):
        return ChainState.from_json(data)

    # ------------------------------------------------------------------ step
    def prepare(self, inputs):
        """(tau_left, tau_right, grade, T_s, T_c) with the capacities at F_z of eq. 3."""
        tau_left, tau_right = self._drive(inputs)         # each its two connections' sum
        grade = self.grade
        f_z = self.axle_load * self.m_vehicle * GRAVITY * math.cos(grade) / 2.0     # eq. 3
        t_s, t_c = zip(*(law.capacities(f_z) for law in self.chain.laws))
        return tau_left, tau_right, grade, list(t_s), list(t_c)

    def _torques(self, prepared, state):
        """Member torques (eq. 1): the drive torques and the road load held at the state's v."""
        tau_left, tau_right, grade, _, _ = prepared
        return [tau_left, tau_right, -road_force(self, self.chain.member_motion(state)[5], grade)]

    def step(self, t, h, prepared):
        torques = self._torques(prepared, self.state)
        # the stuck set and frictions the feedthrough resolved at this state and these inputs
        start = self._resolution if self.fresh else None
        return self.chain.advance(self.state, torques, prepared[3], prepared[4], h, start=start,
                                  inputs=self.chain.step_inputs(torques))

    # ------------------------------------------------------------------ outputs
    def outputs(self):
        state = self.state
        phi_left, phi_right, x, w_left, w_right, v = self.chain.member_motion(state)
        values = (phi_left, w_left, phi_right, w_right, x, v, *state.s, state.e_loss)
        (self.phi_left, self.w_left, self.phi_right, self.w_right, self.x, self.v, self.v_slip_left,
         self.v_slip_right, self.e_loss) = values
        return values

    def feedthrough(self, prepared):
        state = self.state
        _, g = self.chain.step_inputs(self._torques(prepared, state))
        modes, tau = self._resolution = self.chain.resolve(state.s, state.modes, g, prepared[3], prepared[4])
        return {"F_t_left": tau[0], "F_t_right": tau[1],
                "stick_left": modes[0] == STUCK, "stick_right": modes[1] == STUCK,
                "p_loss": tau[0] * state.s[0] + tau[1] * state.s[1]}
