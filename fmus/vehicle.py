"""Vehicle: the planar longitudinal vehicle of Fan, Walker & Wang (solvers.vehicle).

Body (x, height, pitch) on front and rear suspension with translational joints
(Baumgarte-stabilised), two wheels with radial tire stiffness and damping that never
pulls, Coulomb tire friction with static and sliding coefficients and rolling
resistance, stick/slip decided by the LCP of the seed's eq. 31 at every event.  Drive or
brake torques act on the wheels (positive accelerating forward rolling).  ``x`` points
in the direction of travel; pitch is nose up positive.
"""
from __future__ import annotations

from dataclasses import fields

from drivetrain_fmu.solvers.friction import FREE, STUCK
from drivetrain_fmu.solvers.vehicle import PlanarVehicle, VehicleParams, VehicleState

from .model import Model
from .variables import BOOLEAN, dataclass_parameters, input_, output, parameter, with_second_torques

# the parameter declarations come from solvers.vehicle.VehicleParams' fields (unit,
# description, range kind), so no rule is written twice
_DECLARED = {f.name: f.metadata for f in fields(VehicleParams)}
_TABLE = {name: (meta["unit"], meta["description"]) for name, meta in _DECLARED.items()}
_KINDS = {kind: tuple(name for name, meta in _DECLARED.items() if meta["kind"] == kind)
          for kind in ("mass", "inertia", "positive")}
_INPUTS = ("tau_wheel_f", "tau_wheel_r")


class Vehicle(Model):
    """Longitudinal vehicle with pitch and tire stick/slip (Fan et al. 2017)."""

    description = "Planar vehicle with pitch, suspension, tire stick/slip by LCP (Fan, Walker & Wang 2017)"
    DEFAULT_STOP = 5.0
    VARIABLES = with_second_torques((
        *dataclass_parameters(VehicleParams, _TABLE, _KINDS["positive"], inertias=_KINDS["inertia"],
                              masses=_KINDS["mass"]),
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
    ), _INPUTS)

    def params(self) -> VehicleParams:
        return VehicleParams(**{f.name: float(getattr(self, f.name)) for f in fields(VehicleParams)})

    def cross_check(self):
        return self.params().relation_problems()

    def initial_state(self):
        self.model = PlanarVehicle(self.params())
        self._torques = self.torque_picker(_INPUTS)
        return self.model.initial_state(self.x_start, self.v_start, self.w_wheel_f_start, self.w_wheel_r_start,
                                        settle=bool(self.settle_start))

    def decode_state(self, data):
        return VehicleState.from_json(data)

    def prepare(self, inputs):
        return self._torques(inputs)        # (tau_wheel_f, tau_wheel_r), each of both its connections

    def step(self, t, h, torques):
        tau_f, tau_r = torques
        return self.model.step(self.state, tau_f, tau_r, h).state

    def outputs(self):
        s, model = self.state, self.model
        q, qd = s.q, s.qd
        self.x, self.v, self.pitch = q[0], qd[0], q[2]
        self.phi_wheel_f, self.w_wheel_f, self.phi_wheel_r, self.w_wheel_r = q[5], qd[5], q[8], qd[8]
        self.F_n_f, self.F_n_r, self.v_slip_f, self.v_slip_r, self.drift = outputs = model.state_outputs(q, qd)
        self.stick_f, self.stick_r = s.modes[0] == STUCK, s.modes[2] == STUCK
        # every state output, for the step's screen of non-finite values (Model.outputs)
        return (q[0], qd[0], q[2], q[5], qd[5], q[8], qd[8], *outputs)

    def feedthrough(self, torques):
        model, s = self.model, self.state
        tau_f, tau_r = torques
        modes = s.modes
        # the forces at the stuck set as it stands; re-decided by the LCP when a contact is
        # free or the stuck forces exceed their capacities at these inputs (as in the step)
        forces = None if FREE in modes else model.forces(s.q, s.qd, tau_f, tau_r, modes)
        if forces is None or not model.forces_hold(forces, modes):
            held = [j for j, m in enumerate(modes) if m == STUCK]
            modes = model.resolve(s.q, s.qd, tau_f, tau_r, s.modes, held)
            forces = model.forces(s.q, s.qd, tau_f, tau_r, modes)
        return {"ax": forces.qdd[0], "pitch_acc": forces.qdd[2],
                "F_t_f": forces.tangential[0], "F_t_r": forces.tangential[2]}
