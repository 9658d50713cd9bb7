"""Shaft: linear torsional spring-damper with an ideal gear ratio (compliance element).

    phi_rel = phi_1 / ratio - phi_2 + phi_rel_start
    tau     = k phi_rel + d (w_1 / ratio - w_2)
    tau_2 = +tau (on body 2),  tau_1 = -tau / ratio (on body 1),  e_spring = k phi_rel^2 / 2
All outputs follow the inputs without delay (direct feedthrough); the element has no state.
"""
from __future__ import annotations

from .base import ElementSlave
from .variables import input_, output, parameter

_ALL = ("phi_1", "w_1", "phi_2", "w_2")


class Shaft(ElementSlave):
    """Linear spring-damper between two bodies, optionally through a gear ratio."""

    description = "Torsional spring-damper with ideal gear ratio (compliance element)"
    VARIABLES = (
        parameter("k", "N.m/rad", "torsional stiffness", 5000.0, low=0.0),
        parameter("d", "N.m.s/rad", "torsional damping", 5.0, low=0.0),
        parameter("ratio", None, "gear ratio phi_1/phi_2 of the ideal gear at body 1", 1.0, low=0.0, low_open=True),
        parameter("phi_rel_start", "rad", "pre-twist added to phi_1/ratio - phi_2", 0.0),
        input_("phi_1", "rad", "angle of body 1"),
        input_("w_1", "rad/s", "speed of body 1"),
        input_("phi_2", "rad", "angle of body 2"),
        input_("w_2", "rad/s", "speed of body 2"),
        output("tau_1", "N.m", "torque the shaft applies to body 1", depends=_ALL),
        output("tau_2", "N.m", "torque the shaft applies to body 2", depends=_ALL),
        output("phi_rel", "rad", "twist phi_1/ratio - phi_2 + phi_rel_start", depends=("phi_1", "phi_2")),
        output("e_spring", "J", "energy stored in the spring", depends=("phi_1", "phi_2")),
    )

    def initial_state(self):
        return ()

    def decode_state(self, data):
        return ()

    def encode_state(self, state):
        return []

    def advance(self, t, h):
        return ()

    def refresh_outputs(self):
        pass

    def feedthrough_outputs(self):
        phi_rel = self.phi_1 / self.ratio - self.phi_2 + self.phi_rel_start
        tau = self.k * phi_rel + self.d * (self.w_1 / self.ratio - self.w_2)
        return {"tau_1": -tau / self.ratio, "tau_2": tau, "phi_rel": phi_rel,
                "e_spring": 0.5 * self.k * phi_rel * phi_rel}
