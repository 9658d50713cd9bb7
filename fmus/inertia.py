"""Inertia and Engine: single rigid bodies (solvers.rigid).

Inertia:  J w' = tau_1 + tau_2 - d_ground w      (exact step, inputs held over the step)
Engine:   J w' = throttle T0 (1 + h2 sin(2 w t) + h4 sin(4 w t)) + tau_load + tau_load_2
          (Fan, Walker & Wang, engine torque with 2nd and 4th order harmonics)
"""
from __future__ import annotations

from drivetrain_fmu.solvers.rigid import BodyState, engine_torque, step_damped, step_engine

from .model import Model
from .variables import inertia, input_, output, parameter, with_second_torques


class Inertia(Model):
    """Rigid inertia with two torque inputs and an optional viscous loss to ground."""

    description = "Rigid rotating inertia with viscous loss to ground"
    VARIABLES = (
        inertia("J", "moment of inertia", 1.0),
        parameter("d_ground", "N.m.s/rad", "viscous loss coefficient to ground", 0.0, low=0.0),
        parameter("phi_start", "rad", "initial angle", 0.0),
        parameter("w_start", "rad/s", "initial speed", 0.0),
        input_("tau_1", "N.m", "external torque on the body (first connection)"),
        input_("tau_2", "N.m", "external torque on the body (second connection)", adds_to="tau_1"),
        output("phi", "rad", "angle"),
        output("w", "rad/s", "speed"),
        output("a", "rad/s2", "angular acceleration", depends=("tau_1", "tau_2")),
    )

    def initial_state(self):
        self._torque = self.torque_picker(("tau_1",))
        return BodyState(self.phi_start, self.w_start)

    def decode_state(self, data):
        return BodyState.from_json(data)

    def prepare(self, inputs):
        (tau,) = self._torque(inputs)       # tau_1 + tau_2
        return tau

    def step(self, t, h, tau):
        return step_damped(self.state, self.J, tau, self.d_ground, h)

    def outputs(self):
        self.phi, self.w = self.state       # BodyState (phi, w)

    def feedthrough(self, tau):
        return {"a": (tau - self.d_ground * self.state.w) / self.J}


class Engine(Model):
    """Engine inertia driven by its own torque with optional 2nd/4th order harmonics."""

    description = "Engine: inertia driven by T0 (1 + h2 sin(2 w t) + h4 sin(4 w t)) (Fan et al.)"
    DEFAULT_STOP = 1.0
    VARIABLES = with_second_torques((
        inertia("J", "engine moment of inertia", 0.6),
        parameter("T0", "N.m", "mean engine torque", 200.0),
        parameter("h2", None, "relative amplitude of the 2nd order harmonic", 0.0),
        parameter("h4", None, "relative amplitude of the 4th order harmonic", 0.0),
        parameter("phi_start", "rad", "initial crank angle", 0.0),
        parameter("w_start", "rad/s", "initial engine speed", 20.0),
        input_("tau_load", "N.m", "torque from the driveline acting on the engine"),
        input_("throttle", None, "scaling of the mean torque T0", 1.0),
        output("phi", "rad", "crank angle"),
        output("w", "rad/s", "engine speed"),
        output("tau_engine", "N.m", "engine torque at the communication point", depends=("throttle",)),
    ), ("tau_load",))

    # state: (BodyState, time of the communication point)
    def initial_state(self):
        self._load = self.torque_picker(("tau_load",))
        return BodyState(self.phi_start, self.w_start), self.start_time

    def encode_state(self, state):
        return state[0].to_json() + [state[1]]

    def decode_state(self, data):
        return BodyState.from_json(data[:2]), data[2]

    def prepare(self, inputs):
        (tau_load,) = self._load(inputs)    # tau_load + tau_load_2
        return tau_load

    def step(self, t, h, tau_load):
        body = step_engine(self.state[0], self.J, t, h, self.throttle * self.T0, self.h2, self.h4, tau_load)
        return body, t + h

    def outputs(self):
        self.phi, self.w = self.state[0].phi, self.state[0].w

    def feedthrough(self, tau_load):
        body, time = self.state
        return {"tau_engine": engine_torque(time, body.w, self.throttle * self.T0, self.h2, self.h4)}
