"""Gear: two inertias joined by a rigid mesh with efficiency and bearing friction (solvers.gear).

    J_1 w_1' = tau_1 - tau_a,   J_2 w_2' = tau_2 + tau_mesh,   w_1 = ratio w_2,   d = sign(w_1)
    tau_mesh = ratio (eta tau_a - d tau_bf_1)  (shaft 1 drives)
             = ratio (tau_a/eta - d tau_bf_2)  (shaft 2 drives)
    tau_support = tau_a - tau_mesh  (the torque on the housing: J_1 w_1' + J_2 w_2' = tau_1 + tau_2 - tau_support)
MSL 4.0 Rotational LossyGear with lossTable [0, eta, eta, tau_bf_1, tau_bf_2] (IdealGear at
eta = 1 without bearing friction), including its stuck mode at rest: exact step, an event
where w_1 reaches 0; the driving side and the stuck interval as solvers.gear (5)-(12).
"""
from __future__ import annotations

import math

from drivetrain_fmu.solvers.gear import Gear as GearModel, GearState, Mode, switching_point, switching_problem

from .model import Model
from .variables import BOOLEAN, J_MIN, derived_inertia_problem, inertia, input_, output, parameter, with_second_torques

_TORQUES = ("tau_1", "tau_2")


class Gear(Model):
    """Rigid gear pair with mesh efficiency, bearing friction and stuck mode (MSL IdealGear / LossyGear)."""

    description = ("Rigid gear pair between two inertias, mesh efficiency and bearing friction with stuck "
                   "mode, support torque (MSL LossyGear)")
    DEFAULT_STOP = 1.0
    VARIABLES = with_second_torques((
        inertia("J_1", "inertia of shaft 1 (the flange_a side)", 0.1),
        inertia("J_2", "inertia of shaft 2 (the flange_b side)", 1.0),
        parameter("ratio", None, "gear ratio w_1/w_2 = phi_1/phi_2, nonzero (negative: shaft 2 turns "
                  "the other way)", 4.0),
        parameter("eta", "1", "mesh efficiency, fraction of the power passed on whichever shaft drives "
                  "(1: ideal gear)", 0.95, low=0.0, low_open=True, high=1.0),
        parameter("tau_bf_1", "N.m", "bearing friction seen at shaft 1 while shaft 1 drives (MSL LossyGear's "
                  "tau_bf1; equal to tau_bf_2 when eta = 1)", 0.0, low=0.0),
        parameter("tau_bf_2", "N.m", "bearing friction seen at shaft 1 while shaft 2 drives (MSL LossyGear's "
                  "tau_bf2)", 0.0, low=0.0),
        parameter("phi_1_start", "rad", "initial angle of shaft 1 (shaft 2 starts at phi_1_start/ratio)", 0.0),
        parameter("w_1_start", "rad/s", "initial speed of shaft 1 (shaft 2 starts at w_1_start/ratio)", 0.0),
        input_("tau_1", "N.m", "external torque on shaft 1, positive accelerating it"),
        input_("tau_2", "N.m", "external torque on shaft 2, positive accelerating it"),
        output("phi_1", "rad", "angle of shaft 1"),
        output("w_1", "rad/s", "speed of shaft 1"),
        output("phi_2", "rad", "angle of shaft 2, phi_1/ratio"),
        output("w_2", "rad/s", "speed of shaft 2, w_1/ratio"),
        output("a_1", "rad/s2", "angular acceleration of shaft 1", depends=_TORQUES),
        output("tau_mesh", "N.m", "torque the mesh applies to shaft 2, positive accelerating it",
               depends=_TORQUES),
        output("tau_support", "N.m", "torque the gear applies to its housing (support), positive in the common "
               "direction: J_1 a_1 + J_2 a_1/ratio = tau_1 + tau_1_2 + tau_2 + tau_2_2 - tau_support",
               depends=_TORQUES),
        output("locked", None, "the gear is stuck at rest (efficiency and bearing friction hold the torques)",
               type=BOOLEAN,
               depends=_TORQUES),
        output("p_loss", "W", "power dissipated in the mesh and the bearings", depends=_TORQUES),
        output("e_loss", "J", "energy dissipated in the mesh and the bearings since the start"),
    ), _TORQUES)

    def cross_check(self):
        if self.ratio == 0.0:
            return [f"ratio = {self.ratio!r} is outside the allowed range (-inf, 0) or (0, inf) "
                    "(w_1 = ratio w_2 ties no motion)"]
        in_range = math.isfinite(self.ratio) and math.isfinite(self.J_2) and self.J_2 >= J_MIN
        # the solver divides by J_1 + J_2/ratio^2 scaled by c: shaft 2 seen at shaft 1 must be an inertia
        reflected = derived_inertia_problem("J_2/ratio^2, the inertia of shaft 2 seen at shaft 1",
                                            self.J_2 / self.ratio / self.ratio, {"J_2": self.J_2, "ratio": self.ratio})
        problems = [reflected] if reflected and in_range else []     # (else the range checks name J_2 or ratio)
        if in_range and not reflected and math.isfinite(self.J_1) and self.J_1 >= J_MIN and 0.0 < self.eta <= 1.0 \
                and all(math.isfinite(t) and t >= 0.0 for t in (self.tau_bf_1, self.tau_bf_2)):
            switch = switching_point(self.J_1, self.J_2 / self.ratio / self.ratio, self.eta,
                                     self.tau_bf_1, self.tau_bf_2)
            if not math.isfinite(switch):
                problems.append(switching_problem(switch, self.tau_bf_1, self.tau_bf_2))
        if self.eta == 1.0 and self.tau_bf_1 != self.tau_bf_2:
            problems.append(f"tau_bf_1 = {self.tau_bf_1!r} N.m and tau_bf_2 = {self.tau_bf_2!r} N.m must be equal "
                            "when eta = 1 (a lossless mesh cannot make the bearing loss depend on the driving side)")
        return problems

    def initial_state(self):
        self._gear = GearModel(self.J_1, self.J_2, self.ratio, self.eta, self.tau_bf_1, self.tau_bf_2)
        self._torques = self.torque_picker(_TORQUES)
        return GearState(self.phi_1_start, self.w_1_start)

    def decode_state(self, data):
        return GearState.from_json(data)

    def prepare(self, inputs):
        return self._torques(inputs)        # (tau_1, tau_2), each of both its connections

    def step(self, t, h, torques):
        tau_1, tau_2 = torques
        return self._gear.advance(self.state, tau_1, tau_2, h)

    def outputs(self):
        phi_1, w_1, self.e_loss = self.state
        self.phi_1, self.w_1 = phi_1, w_1
        self.phi_2, self.w_2 = phi_1 / self.ratio, w_1 / self.ratio

    def feedthrough(self, torques):
        w_1 = self.state.w_1
        tau_1, tau_2 = torques
        motion = self._gear.motion(w_1, tau_1, tau_2)
        return {"a_1": motion.a_1, "tau_mesh": motion.tau_mesh, "tau_support": motion.tau_support,
                "locked": motion.mode == Mode.STUCK,
                "p_loss": self._gear.loss_power(motion, w_1)}
