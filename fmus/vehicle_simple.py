"""VehicleSimple: wheel and equivalent vehicle behind a tire model (solvers.tire).

    J_wheel w' = tau_wheel + tau_wheel_2 - R F_x
    m_vehicle v' = F_x - (d_v v/R^2 + f_roll m g sgn v + rho/2 cdA v|v| + m g sin(grade))
tire_model 0: stick/slip "tire as clutch" (mu_s, mu_k); 1: Pacejka magic formula
(B, C, D, E) on the slip (R w - v) / max(|v|, v_min).  ``w_v`` = v / R is the vehicle
speed seen at the wheel (what a clutch-like tire compares with w_wheel).
"""
from __future__ import annotations

import math
import sys
from dataclasses import fields

from drivetrain_fmu.solvers.tire import TireVehicle, TireVehicleParams, TireVehicleState

from .model import Model
from .variables import INTEGER, dataclass_parameters, derived_inertia_problem, input_, output, parameter

_DESCRIPTIONS = {
    "J_wheel": ("kg.m2", "inertia of the wheel (and what turns with it)"),
    "m_vehicle": ("kg", "vehicle mass"), "R": ("m", "wheel radius"),
    "tire_model": (None, "tire model: 0 stick/slip tire as clutch, 1 Pacejka magic formula"),
    "mu_s": (None, "static tire-road friction coefficient (tire model 0)"),
    "mu_k": (None, "sliding tire-road friction coefficient (tire model 0, <= mu_s)"),
    "B": ("1", "magic formula stiffness factor B"), "C": ("1", "magic formula shape factor C"),
    "D": ("1", "magic formula peak factor D (peak force D m g)"), "E": ("1", "magic formula curvature factor E"),
    "v_min": ("m/s", "lower bound of |v| in the slip definition (finite slip at standstill)"),
    "d_v": ("N.m.s/rad", "viscous road load on w_v = v/R"), "f_roll": ("1", "rolling resistance coefficient"),
    "cdA": ("m2", "aerodynamic drag area c_d A"), "rho_air": ("kg/m3", "air density"),
}
_POSITIVE = ("J_wheel", "m_vehicle", "R")
#: The smallest v_min accepted [m/s]: the slip (R w - v) / max(|v|, v_min) is a float only while
#: |R w - v| <= v_min * 1.8e308, so a v_min near the float minimum made it +-inf as soon as the
#: wheel turned at standstill (5e-324 m/s: slip = inf at initialization, returned with fmi2OK;
#: every step off standstill then refused for it).  1e-6 m/s, a micrometre per second, lies far
#: below any speed a tire test resolves (the low-speed fix uses 0.1 .. 1 m/s), and keeps the slip
#: finite for speed differences up to 1.8e302 m/s; the start speeds are checked against that
#: (cross_check), a step's by the step's output check.
V_MIN_LOW = 1e-6
_INPUTS = ("tau_wheel", "tau_wheel_2", "grade")


class VehicleSimple(Model):
    """One-degree-of-freedom vehicle with a stick/slip or magic-formula tire."""

    description = "Wheel and equivalent vehicle behind a stick/slip or Pacejka tire, road load (Reiter ch. 5)"
    DEFAULT_STOP = 5.0
    VARIABLES = (
        *dataclass_parameters(TireVehicleParams, _DESCRIPTIONS, _POSITIVE, inertias=("J_wheel",), masses=("m_vehicle",), replace={
            "tire_model": parameter("tire_model", None, _DESCRIPTIONS["tire_model"][1], 0, type=INTEGER, low=0, high=1),
            "E": parameter("E", "1", _DESCRIPTIONS["E"][1], TireVehicleParams().E),
            "v_min": parameter("v_min", "m/s", f"{_DESCRIPTIONS['v_min'][1]}; at least {V_MIN_LOW:g} m/s: "
                               "below, the slip of a wheel turning at standstill leaves the float range",
                               TireVehicleParams().v_min, low=V_MIN_LOW)}),
        parameter("phi_wheel_start", "rad", "initial wheel angle", 0.0),
        parameter("w_wheel_start", "rad/s", "initial wheel speed", 0.0),
        parameter("x_start", "m", "initial vehicle position", 0.0),
        parameter("v_start", "m/s", "initial vehicle speed", 0.0),
        input_("tau_wheel", "N.m", "drive torque on the wheel (first connection)"),
        input_("tau_wheel_2", "N.m", "drive torque on the wheel (second connection, summed)", adds_to="tau_wheel"),
        input_("grade", "rad", "road grade, positive uphill"),
        output("phi_wheel", "rad", "wheel angle"),
        output("w_wheel", "rad/s", "wheel speed"),
        output("x", "m", "vehicle position"),
        output("v", "m/s", "vehicle speed"),
        output("w_v", "rad/s", "vehicle speed seen at the wheel, v / R"),
        output("slip", None, "tire slip (R w - v) / max(|v|, v_min)"),
        output("F_x", "N", "longitudinal tire force on the vehicle", depends=_INPUTS),
    )

    def cross_check(self):
        problems = []
        if self.mu_k > self.mu_s:
            problems.append(f"mu_k = {self.mu_k!r} must not exceed mu_s = {self.mu_s!r}; allowed range [0, mu_s]")
        # the vehicle is the second body of the tire's friction chain, with inertia m R^2 at the wheel
        equivalent = derived_inertia_problem("m_vehicle R^2, the vehicle's inertia seen at the wheel",
                                             self.m_vehicle * self.R * self.R, {"m_vehicle": self.m_vehicle, "R": self.R})
        if equivalent and self.m_vehicle > 0.0 and self.R > 0.0:     # (else the range check names them)
            problems.append(equivalent)
        if self.v_min >= V_MIN_LOW and math.isfinite(self.R):           # (else the range check names them)
            slip = (self.R * self.w_wheel_start - self.v_start) / max(abs(self.v_start), self.v_min)
            if not math.isfinite(slip):
                problems.append(f"the start slip (R w_wheel_start - v_start) / max(|v_start|, v_min) with R = "
                                f"{self.R!r}, w_wheel_start = {self.w_wheel_start!r}, v_start = {self.v_start!r}, "
                                f"v_min = {self.v_min!r} is {slip!r}: |R w_wheel_start - v_start| must stay "
                                f"below {sys.float_info.max:.4g} max(|v_start|, v_min) m/s")
        return problems

    def initial_state(self):
        values = {f.name: getattr(self, f.name) for f in fields(TireVehicleParams)}
        values["tire_model"] = int(values["tire_model"])
        self.model = TireVehicle(TireVehicleParams(**{k: (v if k == "tire_model" else float(v))
                                                      for k, v in values.items()}))
        self._torque = self.torque_picker(("tau_wheel",))
        stuck = self.R * self.w_wheel_start == self.v_start
        return TireVehicleState(self.phi_wheel_start, self.w_wheel_start, self.x_start, self.v_start, stuck)

    def decode_state(self, data):
        return TireVehicleState(*data)

    def prepare(self, inputs):
        (tau,) = self._torque(inputs)       # tau_wheel + tau_wheel_2
        return tau

    def step(self, t, h, tau):
        return self.model.step(self.state, tau, self.grade, h)

    def outputs(self):
        s = self.state
        self.phi_wheel, self.w_wheel, self.x, self.v = s.phi_wheel, s.w_wheel, s.x, s.v
        self.w_v = s.v / self.R
        self.slip = self.model.slip(s.w_wheel, s.v)

    def feedthrough(self, tau):
        return {"F_x": self.model.tire_force(self.state, tau, self.grade)}
