"""Rigid gear pair with constant mesh efficiency: one degree of freedom, stepped exactly.

Law: Modelica Standard Library 4.0, ``Modelica.Mechanics.Rotational.Components.LossyGear``
with a loss table of one row ``[0, eta, eta, 0, 0]`` (the same mesh efficiency whichever
flange drives, no bearing friction); ``eta = 1`` is ``IdealGear``.  In that model the
gear itself has no inertia: the angles are tied by ``phi_a = ratio phi_b``, and the torque
``flange_a.tau`` the gear takes in at flange a reaches flange b reduced by a loss torque
that depends on which side drives.  When flange a drives (power ``flange_a.tau w_a > 0``)
only the fraction eta of the power gets through; when flange b drives, flange a receives
eta of what flange b gives up, so the torque at b is the one at a divided by eta.  At
``w_a = 0`` LossyGear decides, like a friction element, between rolling forward, rolling
backward and staying stuck (its modes Forward, Backward, Stuck), and while stuck the loss
torque takes whatever value in its admissible interval keeps ``der(w_a) = 0``.

Here the two shafts carry the inertias J_1, J_2 and the external torques tau_1, tau_2.
With ``tau_a`` the torque the mesh takes from shaft 1 (MSL's flange_a.tau) and ``tau_mesh``
the torque it puts on shaft 2 (MSL's -flange_b.tau), w = w_1, w_2 = w / ratio:

    J_1 w'         = tau_1 - tau_a                                   (shaft 1)
    J_2 w' / ratio = tau_2 + tau_mesh                                (shaft 2)
    tau_mesh       = ratio c tau_a,   c = eta    if tau_a w > 0      (1 drives 2)
                                      c = 1/eta  if tau_a w < 0      (2 drives 1)

A negative ratio is allowed, as in MSL (its only condition is ratio != 0): shaft 2 then
turns the other way; every formula holds as written.  With J_r = J_2 / ratio^2 (shaft 2's
inertia seen at shaft 1) and q = tau_2 / ratio (tau_2 seen at shaft 1), eliminating tau_a:

    w'    = (c tau_1 + q) / (c J_1 + J_r)
    tau_a = (J_r tau_1 - J_1 q) / (c J_1 + J_r)

so the sign of tau_a does not depend on c: in motion (w != 0) the power-flow direction,
hence c, follows from the inputs without ambiguity.  Power balance: the mesh passes
``c tau_a w`` to shaft 2 of the ``tau_a w`` it takes from shaft 1, so

    p_loss = (1 - c) tau_a w >= 0.

At rest (w = 0) the direction of motion is decided like a Karnopp friction element
(LossyGear's startForward / startBackward / locked): FORWARD if rolling forward with its c
gives w' > 0, BACKWARD if rolling backward with its c gives w' < 0, else STUCK, where
w' = 0, tau_a = tau_1 and tau_mesh = -tau_2.  At most one rolling mode is consistent, and
STUCK happens exactly when -q lies between eta tau_1 and tau_1 / eta (LossyGear's stuck
interval tauLossMin_m <= sa <= tauLossMax_p without bearing friction): the torque on
shaft 1 holds the load tau_2 with a margin of eta either way.  With eta = 1 that interval
is the single point of balance (w' = 0), which is the ideal gear at rest.

Stepping.  tau_1 and tau_2 are held over a step, so in each mode the acceleration is
constant and the motion is exactly quadratic in time.  A step runs at most two phases: a
rolling phase that decelerates reaches w = 0 at t = -w / w', where w is set to exactly 0
and the mode is decided again from the inputs (it locks or reverses); a phase that starts
at rest in a rolling mode accelerates away from 0 and cannot return within the step.
No velocity band, no chattering, nothing depends on the step size.  The loss of a phase is
the integral of p_loss, exact for the linear speed: (1 - c) tau_a (phi_1 at its end minus
phi_1 at its start), with tau_a constant over the phase.
"""
from __future__ import annotations

import math
from enum import IntEnum
from typing import NamedTuple

from .contract import check_step     # StepError (solvers.contract) for a bad step or input


class Mode(IntEnum):
    """Motion of the gear at an instant (names as in MSL LossyGear's mode)."""

    BACKWARD = -1  # rolling, w_1 < 0 (or leaving rest backward)
    STUCK = 0      # w_1 == 0 held: the efficiency interval balances the torques
    FORWARD = 1    # rolling, w_1 > 0 (or leaving rest forward)


class GearState(NamedTuple):
    """State of the gear pair; immutable.

    phi_1, w_1 : angle [rad] and speed [rad/s] of shaft 1 (shaft 2: divided by ratio)
    e_loss     : energy dissipated in the mesh since the start [J]
    """

    phi_1: float
    w_1: float
    e_loss: float = 0.0

    def to_json(self) -> list:
        return [self.phi_1, self.w_1, self.e_loss]

    @classmethod
    def from_json(cls, data) -> "GearState":
        phi_1, w_1, e_loss = data
        return cls(float(phi_1), float(w_1), float(e_loss))


class MeshMotion(NamedTuple):
    """What the gear does at an instant under given inputs (module docstring).

    mode     : Mode
    a_1      : shaft 1's angular acceleration w' [rad/s2]
    tau_a    : torque the mesh takes from shaft 1 [N.m]
    tau_mesh : torque the mesh puts on shaft 2 [N.m]
    factor   : c, eta or 1/eta (1 when stuck: no power flows)
    """

    mode: Mode
    a_1: float
    tau_a: float
    tau_mesh: float
    factor: float


class Gear:
    """Two shafts joined by a rigid mesh of ratio ``ratio`` = w_1 / w_2 and efficiency eta.

    Parameters
    ----------
    j_1, j_2 : inertias of shaft 1 and shaft 2 [kg.m2], finite and > 0
    ratio    : w_1 / w_2, finite and != 0 (negative: shaft 2 turns the other way)
    eta      : mesh efficiency, 0 < eta <= 1 (1: ideal gear)
    """

    def __init__(self, j_1: float, j_2: float, ratio: float, eta: float):
        for name, value in (("J_1", j_1), ("J_2", j_2)):
            if not (math.isfinite(value) and value > 0.0):
                raise ValueError(f"inertia {name} = {value!r} must be finite and > 0")
        if not (math.isfinite(ratio) and ratio != 0.0):
            raise ValueError(f"ratio = {ratio!r} must be finite and nonzero; allowed (-inf, 0) or (0, inf)")
        if not 0.0 < eta <= 1.0:
            raise ValueError(f"eta = {eta!r} is outside the allowed range (0, 1]")
        self.j_1, self.j_2, self.ratio, self.eta = float(j_1), float(j_2), float(ratio), float(eta)
        self.j_reflected = self.j_2 / self.ratio / self.ratio      # J_r = J_2 / ratio^2 (ratio^2 could underflow to 0)
        if not (math.isfinite(self.j_reflected) and self.j_reflected > 0.0):
            raise ValueError(f"J_2 / ratio^2 = {self.j_reflected!r} kg.m2 (J_2 = {j_2!r}, ratio = {ratio!r}) "
                             "must be finite and > 0")

    # ------------------------------------------------------------------ one instant
    def rolling(self, direction: int, tau_1: float, tau_2: float) -> MeshMotion:
        """The motion rolling in ``direction`` (+1 or -1): c from the sign of tau_a w."""
        j_1, j_r = self.j_1, self.j_reflected
        q = tau_2 / self.ratio
        # sign of tau_a, the same for either c (module docstring)
        s = j_r * tau_1 - j_1 * q
        factor = self.eta if direction * s >= 0.0 else 1.0 / self.eta
        denominator = factor * j_1 + j_r
        tau_a = s / denominator
        return MeshMotion(Mode(direction), (factor * tau_1 + q) / denominator, tau_a,
                          self.ratio * factor * tau_a, factor)

    def stuck(self, tau_1: float, tau_2: float) -> MeshMotion:
        """w' = 0: each shaft's torques balance (tau_a = tau_1, tau_mesh = -tau_2)."""
        return MeshMotion(Mode.STUCK, 0.0, tau_1, -tau_2, 1.0)

    def motion(self, w_1: float, tau_1: float, tau_2: float) -> MeshMotion:
        """The motion at speed w_1: rolling its way if w_1 != 0, else decided (Karnopp):
        forward if that gives w' > 0, backward if that gives w' < 0, else stuck."""
        if w_1 > 0.0:
            return self.rolling(1, tau_1, tau_2)
        if w_1 < 0.0:
            return self.rolling(-1, tau_1, tau_2)
        for direction in (1, -1):
            candidate = self.rolling(direction, tau_1, tau_2)
            if direction * candidate.a_1 > 0.0:
                return candidate
        return self.stuck(tau_1, tau_2)

    @staticmethod
    def loss_power(motion: MeshMotion, w_1: float) -> float:
        """p_loss = (1 - c) tau_a w_1 [W] (module docstring)."""
        return (1.0 - motion.factor) * motion.tau_a * w_1

    # ------------------------------------------------------------------ one step
    def advance(self, state: GearState, tau_1: float, tau_2: float, h: float) -> GearState:
        """Exact step of h with tau_1, tau_2 held: a rolling phase that may end at rest
        (w set to exactly 0, the mode decided again), then at most one more phase (module
        docstring)."""
        check_step(h, tau_1=tau_1, tau_2=tau_2)
        phi, w, e_loss = state
        remaining = h
        motion = self.motion(w, tau_1, tau_2)
        if w * motion.a_1 < 0.0 and -w / motion.a_1 <= remaining:      # comes to rest inside the step
            t_stop = -w / motion.a_1
            travel = 0.5 * w * t_stop
            e_loss += (1.0 - motion.factor) * motion.tau_a * travel
            phi, w, remaining = phi + travel, 0.0, remaining - t_stop
            if remaining <= 0.0:
                return GearState(phi, 0.0, e_loss)
            motion = self.motion(0.0, tau_1, tau_2)
        if motion.mode == Mode.STUCK:
            return GearState(phi, 0.0, e_loss)
        a = motion.a_1          # w keeps its sign to the end: it starts at 0 or does not reach 0 in time
        travel = w * remaining + 0.5 * a * remaining * remaining
        e_loss += (1.0 - motion.factor) * motion.tau_a * travel
        return GearState(phi + travel, w + a * remaining, e_loss)
