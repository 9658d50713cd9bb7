"""Backlash: two bodies with a gear clearance and rigid impacts (Reiter ch. 4).

    J_i phi_i'' = tau_i - k_ground_i (phi_i - phi_rest_i) - d_ground_i w_i  (+ contact)
    phi_rel = phi_1 / ratio - phi_2  within [-b, +b]
Impacts with Newton's restitution e_rest at their exact instant, persistent contact as
an exact constraint that opens when it would pull (solvers.backlash).  With the
grounded spring-dampers the seven two-mass test systems of Reiter Tables 13-14 run in
this one element.  ``contact`` is +1 on the limit +b (body 1 ahead, pushing body 2
forward), -1 on -b, 0 in free play.
"""
from __future__ import annotations

import math

from drivetrain_fmu.solvers.backlash import Body, BacklashPair, PairState

from .model import Model
from .variables import INTEGER, J_MIN, derived_inertia_problem, inertia, input_, output, parameter, with_second_torques



def _body_variables(i, j_start):
    return (
        inertia(f"J_{i}", f"inertia of body {i}", j_start),
        parameter(f"k_ground_{i}", "N.m/rad", f"stiffness of the spring tying body {i} to ground", 0.0, low=0.0),
        parameter(f"d_ground_{i}", "N.m.s/rad", f"damping of the damper tying body {i} to ground", 0.0, low=0.0),
        parameter(f"phi_rest_{i}", "rad", f"angle of body {i} at which its ground spring is relaxed", 0.0),
    )


class Backlash(Model):
    """Two inertias with free play, exact impacts and persistent contact."""

    description = "Gear clearance between two inertias: exact impacts, restitution, persistent contact (Reiter ch. 4)"
    DEFAULT_STOP = 1.0
    VARIABLES = with_second_torques((
        *_body_variables(1, 3.4093),
        *_body_variables(2, 1.5),
        parameter("b", "rad", "half clearance: phi_1/ratio - phi_2 stays within [-b, +b]", 1e-4, low=0.0),
        parameter("e_rest", None, "coefficient of restitution (0 plastic, 1 elastic)", 0.0, low=0.0, high=1.0),
        parameter("ratio", None, "gear ratio phi_1/phi_2 of the ideal gear at body 1", 1.0, low=0.0, low_open=True),
        parameter("w_close", "rad/s", "impacts separating slower than this close the contact (ends rattling)",
                  1e-6, low=0.0, low_open=True),
        parameter("phi_1_start", "rad", "initial angle of body 1", 0.0),
        parameter("w_1_start", "rad/s", "initial speed of body 1", 0.0),
        parameter("phi_2_start", "rad", "initial angle of body 2", 0.0),
        parameter("w_2_start", "rad/s", "initial speed of body 2", 0.0),
        input_("tau_1", "N.m", "external torque on body 1, positive accelerating it"),
        input_("tau_2", "N.m", "external torque on body 2, positive accelerating it"),
        output("phi_1", "rad", "angle of body 1"),
        output("w_1", "rad/s", "speed of body 1"),
        output("phi_2", "rad", "angle of body 2"),
        output("w_2", "rad/s", "speed of body 2"),
        output("phi_rel", "rad", "relative angle phi_1/ratio - phi_2"),
        output("contact", None, "contact side: +1 at +b, -1 at -b, 0 free play", type=INTEGER),
        output("n_impacts", None, "number of impacts since the start", type=INTEGER),
        output("impulse_last", "N.m.s", "angular impulse of the last impact on body 2"),
        output("e_loss", "J", "energy dissipated since the start (impacts, contact closing, ground dampers)"),
    ), ("tau_1", "tau_2"))

    def pair(self) -> BacklashPair:
        bodies = [Body(getattr(self, f"J_{i}"), getattr(self, f"k_ground_{i}"), getattr(self, f"d_ground_{i}"),
                       getattr(self, f"phi_rest_{i}")) for i in (1, 2)]
        return BacklashPair(*bodies, self.b, self.e_rest, self.ratio, self.w_close)

    def cross_check(self):
        if not self.ratio > 0.0:
            return []   # reported by the range check of ratio
        problems = []
        in_range = self.J_1 >= J_MIN and math.isfinite(self.J_1) and math.isfinite(self.ratio)
        # body 1 seen at the clearance (phi_1 / ratio) has the inertia ratio^2 J_1
        reflected = derived_inertia_problem("ratio^2 J_1, the inertia of body 1 seen at the clearance",
                                            self.ratio * self.ratio * self.J_1, {"ratio": self.ratio, "J_1": self.J_1})
        if reflected and in_range:      # (else the range checks name ratio or J_1)
            problems.append(reflected)
        rel = self.phi_1_start / self.ratio - self.phi_2_start
        if abs(rel) > self.b * (1 + 1e-12):
            problems.append(f"phi_1_start/ratio - phi_2_start = {rel!r} lies outside the clearance; "
                            f"allowed range [-b, b] = [{-self.b!r}, {self.b!r}] rad")
        return problems

    def initial_state(self):
        self._pair = self.pair()
        self._torques = self.torque_picker(("tau_1", "tau_2"))
        return PairState(self.phi_1_start, self.w_1_start, self.phi_2_start, self.w_2_start)

    def decode_state(self, data):
        return PairState.from_json(data)

    def prepare(self, inputs):
        return self._torques(inputs)        # (tau_1, tau_2), each of both its connections

    def step(self, t, h, torques):
        tau_1, tau_2 = torques
        return self._pair.step(self.state, tau_1, tau_2, h).state

    def outputs(self):
        s = self.state
        self.phi_1, self.w_1, self.phi_2, self.w_2 = s.phi_1, s.w_1, s.phi_2, s.w_2
        self.phi_rel = self._pair.phi_rel(s.phi_1, s.phi_2)
        self.contact, self.n_impacts = int(s.contact), int(s.n_impacts)
        self.impulse_last, self.e_loss = s.impulse_last, s.e_loss
