"""Vehicle: the planar longitudinal vehicle of Fan, Walker & Wang (solvers.vehicle).

Body (x, height, pitch) on front and rear suspension with translational joints
(Baumgarte-stabilised), two wheels with radial tire stiffness and damping that never
pulls, Coulomb tire friction with static and sliding coefficients and rolling
resistance, stick/slip decided by the LCP of the seed's eq. 31 at every event.  Drive or
brake torques act on the wheels (positive accelerating forward rolling).  ``x`` points
in the direction of travel; pitch is nose up positive.
"""
from __future__ import annotations

import math
from dataclasses import fields

from solvers.dense import norm
from solvers.friction import Mode
from solvers.vehicle import GRAVITY, PlanarVehicle, VehicleParams, VehicleState

from .base import ElementSlave
from .variables import BOOLEAN, dataclass_parameters, input_, output, parameter

_UNITS = {"m_body": ("kg", "mass of the body"), "J_body": ("kg.m2", "pitch inertia of the body"),
          "m_wheel_f": ("kg", "mass of the front wheel"), "J_wheel_f": ("kg.m2", "inertia of the front wheel"),
          "m_wheel_r": ("kg", "mass of the rear wheel"), "J_wheel_r": ("kg.m2", "inertia of the rear wheel"),
          "a": ("m", "front axle ahead of the body centre of mass"), "b": ("m", "rear axle behind the body centre of mass"),
          "h": ("m", "design height of the body centre of mass (wheel centres at R)"), "R": ("m", "wheel radius"),
          "k_susp": ("N/m", "suspension stiffness per axle"), "c_susp": ("N.s/m", "suspension damping per axle"),
          "k_tire": ("N/m", "radial tire stiffness"), "zeta_tire": (None, "radial tire damping ratio"),
          "mu_s_road": (None, "static tire-road friction coefficient mu_0"),
          "mu_k_road": (None, "sliding tire-road friction coefficient mu (<= mu_0)"),
          "delta_roll": ("m", "rolling resistance arm delta (torque delta F_N)"),
          "alpha_bg": ("1/s", "Baumgarte velocity gain alpha"), "beta_bg": ("1/s2", "Baumgarte position gain beta")}
_POSITIVE = ("m_body", "J_body", "m_wheel_f", "J_wheel_f", "m_wheel_r", "J_wheel_r", "a", "b", "R", "k_susp", "k_tire")
_INPUTS = ("tau_wheel_f", "tau_wheel_r")


class Vehicle(ElementSlave):
    """Longitudinal vehicle with pitch and tire stick/slip (Fan et al. 2017)."""

    description = "Planar vehicle with pitch, suspension, tire stick/slip by LCP (Fan, Walker & Wang 2017)"
    DEFAULT_STOP = 5.0
    VARIABLES = (
        *dataclass_parameters(VehicleParams, _UNITS, _POSITIVE, inertias=("J_body", "J_wheel_f", "J_wheel_r"),
                              masses=("m_body", "m_wheel_f", "m_wheel_r")),
        parameter("x_start", "m", "initial body position", 0.0),
        parameter("v_start", "m/s", "initial speed of body and wheel centres", 0.0),
        parameter("w_wheel_f_start", "rad/s", "initial front wheel speed", 0.0),
        parameter("w_wheel_r_start", "rad/s", "initial rear wheel speed", 0.0),
        parameter("settle_start", None, "start with the tires at their static deflection "
                  "(false: wheel centres at y = R, Fan, Walker & Wang's initial state)", True, type=BOOLEAN),
        input_("tau_wheel_f", "N.m", "drive (positive) or brake torque on the front wheel"),
        input_("tau_wheel_r", "N.m", "drive (positive) or brake torque on the rear wheel"),
        output("phi_wheel_f", "rad", "front wheel angle (positive rolling forward)"),
        output("w_wheel_f", "rad/s", "front wheel speed"),
        output("phi_wheel_r", "rad", "rear wheel angle"),
        output("w_wheel_r", "rad/s", "rear wheel speed"),
        output("x", "m", "body position"),
        output("v", "m/s", "body speed"),
        output("ax", "m/s2", "body longitudinal acceleration", depends=_INPUTS),
        output("pitch", "rad", "body pitch angle, nose up positive"),
        output("pitch_acc", "rad/s2", "body pitch acceleration", depends=_INPUTS),
        output("F_n_f", "N", "normal force of the front tire"),
        output("F_n_r", "N", "normal force of the rear tire"),
        output("F_t_f", "N", "tangential force of the road on the front tire (positive forward)", depends=_INPUTS),
        output("F_t_r", "N", "tangential force of the road on the rear tire (positive forward)", depends=_INPUTS),
        output("v_slip_f", "m/s", "front tire slip speed x' - R phi'"),
        output("v_slip_r", "m/s", "rear tire slip speed x' - R phi'"),
        output("stick_f", None, "front tire sticks (rolls without slip)", type=BOOLEAN),
        output("stick_r", None, "rear tire sticks (rolls without slip)", type=BOOLEAN),
        output("drift", "m", "norm of the joint constraint violation"),
    )

    def params(self) -> VehicleParams:
        return VehicleParams(**{f.name: float(getattr(self, f.name)) for f in fields(VehicleParams)})

    def cross_check(self):
        params = self.params()
        problems = []
        if params.mu_k_road > params.mu_s_road:
            problems.append(f"mu_k_road = {params.mu_k_road!r} must not exceed mu_s_road = {params.mu_s_road!r}; "
                            "allowed range [0, mu_s_road]")
        if params.h <= params.R:
            problems.append(f"h = {params.h!r} must exceed R = {params.R!r}; allowed range (R, inf) m")
        positive = ("m_body", "a", "b", "k_susp")
        if all(0.0 < getattr(params, name) < math.inf for name in positive):
            # the suspension springs' free length is the design length plus the static sag
            sag = params.m_body * GRAVITY * max(params.a, params.b) / (params.a + params.b) / params.k_susp
            if not sag < math.inf:
                problems.append(f"k_susp = {params.k_susp!r} N/m is too soft for m_body = {params.m_body!r} kg: the "
                                f"static suspension sag m_body g max(a, b) / ((a + b) k_susp) = {sag!r} m, and with it "
                                "the springs' free length, is beyond the floating-point range")
        return problems

    def initial_state(self):
        self.model = PlanarVehicle(self.params())
        return self.model.initial_state(self.x_start, self.v_start, self.w_wheel_f_start, self.w_wheel_r_start,
                                        settle=bool(self.settle_start))

    def decode_state(self, data):
        return VehicleState.from_json(data)

    def advance(self, t, h):
        return self.model.step(self.state, self.tau_wheel_f, self.tau_wheel_r, h).state

    def refresh_outputs(self):
        s, model = self.state, self.model
        q, qd = s.q, s.qd
        self.x, self.v, self.pitch = q[0], qd[0], q[2]
        self.phi_wheel_f, self.w_wheel_f, self.phi_wheel_r, self.w_wheel_r = q[5], qd[5], q[8], qd[8]
        _, normal = model.applied(q, qd, 0.0, 0.0)
        self.F_n_f, self.F_n_r = normal
        g = model.relative_speeds(qd)
        self.v_slip_f, self.v_slip_r = g[0], g[2]
        self.stick_f, self.stick_r = s.modes[0] == Mode.STUCK, s.modes[2] == Mode.STUCK
        self.drift = norm(model.constraints(q)[0])

    def feedthrough_outputs(self):
        model, s = self.model, self.state
        held = [j for j, m in enumerate(s.modes) if m == Mode.STUCK]
        modes = model.resolve(s.q, s.qd, self.tau_wheel_f, self.tau_wheel_r, s.modes, held)
        forces = model.forces(s.q, s.qd, self.tau_wheel_f, self.tau_wheel_r, modes)
        return {"ax": forces.qdd[0], "pitch_acc": forces.qdd[2],
                "F_t_f": forces.tangential[0], "F_t_r": forces.tangential[2]}
