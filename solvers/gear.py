"""Rigid gear pair with mesh efficiency and bearing friction: one degree of freedom, stepped exactly.

Law: Modelica Standard Library 4.0, ``Modelica.Mechanics.Rotational.Components.LossyGear``
with a loss table of one row ``[0, eta, eta, tau_bf_1, tau_bf_2]``: the same mesh
efficiency whichever flange drives, and the two resultant bearing-friction torques of that
row, constant in speed; ``eta = 1`` without bearing friction is ``IdealGear``.  In that
model the gear itself has no inertia: the angles are tied by ``phi_a = ratio phi_b``, and
of the torque ``flange_a.tau`` the gear takes in at flange a, flange b receives what is
left after a loss torque ``tauLoss``:

    -flange_b.tau = ratio (flange_a.tau - tauLoss)                                   (1)

LossyGear's table gives two bearing torques, both referred to flange a: ``tau_bf1`` the
resultant bearing friction when flange a drives (power flows from a into the mesh), and
``tau_bf2`` when flange b drives.  They depend on which side drives, not on the sense of
rotation: in either sense, ``tau_bf1`` goes with the efficiency ``eta`` and ``tau_bf2``
with ``1/eta``.  MSL splits them into a bearing torque ``tau_bf_a`` on the flange-a side
(before the mesh) and ``tau_bf_b`` on the flange-b side,

    tau_bf1 = eta tau_bf_a + tau_bf_b / ratio,   tau_bf2 = tau_bf_a / eta + tau_bf_b / ratio,

and the driving side is the sign of what reaches the mesh from a, ``flange_a.tau -
tau_bf_a`` rolling forward (``flange_a.tau + tau_bf_a`` backward).  With w = w_a its four
quadrants are, rolling forward (w > 0) and backward (w < 0):

    a drives, w > 0:  tauLoss = (1 - eta) flange_a.tau + tau_bf1     (quadrant 1)    (2)
    b drives, w > 0:  tauLoss = (1 - 1/eta) flange_a.tau + tau_bf2   (quadrant 2)
    a drives, w < 0:  tauLoss = (1 - eta) flange_a.tau - tau_bf1     (quadrant 3)
    b drives, w < 0:  tauLoss = (1 - 1/eta) flange_a.tau - tau_bf2   (quadrant 4)

The two lines of one sense meet where the driving side changes (``flange_a.tau = tau_bf_a``
forward, ``-tau_bf_a`` backward), so tauLoss is continuous in flange_a.tau: forward it is the
larger of quadrants 1 and 2, backward the smaller of 3 and 4.  With eta = 1 the split is
undetermined and MSL takes ``tau_bf_a = tau_bf1/2``, which makes tauLoss jump there unless
``tau_bf1 = tau_bf2``; with eta = 1 this module therefore asks for equal bearing torques (with
a lossless mesh, which side drives cannot change the bearing loss).  The power LossyGear
dissipates is ``lossPower = tauLoss w_a``.  At ``w_a = 0`` LossyGear decides, like a friction
element, between rolling forward, rolling backward and staying stuck (its modes Forward,
Backward, Stuck): it starts forward when ``sa > tauLossMax_p``, backward when ``sa <
tauLossMin_m``, where, at rest, ``sa`` is the loss torque that would keep ``der(w_a) = 0``
and tauLossMax_p, tauLossMin_m are tauLoss at ``w = 0+`` and ``0-``; while stuck the loss
torque takes that value.  MSL's support flange (``useSupport = false`` grounds it) carries
``support.tau = -(flange_a.tau + flange_b.tau)``, the torque balance of the massless gear:
the torque the housing exerts on the gear; the housing takes its opposite.

Here the two shafts carry the inertias J_1, J_2 and the external torques tau_1, tau_2, and
the housing is fixed.  With ``tau_a`` the torque the mesh takes from shaft 1 (MSL's
flange_a.tau) and ``tau_mesh`` the torque it puts on shaft 2 (MSL's -flange_b.tau), w = w_1,
w_2 = w / ratio, d = +1 rolling forward and -1 backward, (1) with (2) is

    J_1 w'         = tau_1 - tau_a                                             (3, shaft 1)
    J_2 w' / ratio = tau_2 + tau_mesh                                          (4, shaft 2)
    tau_mesh       = ratio (c tau_a - d b),   (c, b) = (eta, tau_bf_1)   if a drives   (5)
                                              (c, b) = (1/eta, tau_bf_2) if b drives

A negative ratio is allowed, as in MSL (its only condition is ratio != 0): shaft 2 then
turns the other way; every formula holds as written.  With J_r = J_2 / ratio^2 (shaft 2's
inertia seen at shaft 1), q = tau_2 / ratio (tau_2 seen at shaft 1) and s = J_r tau_1 -
J_1 q, eliminating w' for one (c, b):

    tau_a = (s + d J_1 b) / (c J_1 + J_r)                                              (6)
    w'    = (c tau_1 + q - d b) / (c J_1 + J_r)                                        (7)

Which side drives.  In (5) the torque passed on, ``c tau_a - d b``, is the smaller of its two
lines forward (the larger backward), and (3) with (4) ask ``J_r (tau_1 - tau_a) = J_1 (q +
c tau_a - d b)``: a decreasing function of tau_a equal to an increasing one, so exactly one
tau_a solves it, and it is the larger of the two roots (6) forward, the smaller backward.
Comparing the two roots, a drives (c = eta) exactly when

    d s >= S = (tau_bf_2 (eta J_1 + J_r) - tau_bf_1 (J_1/eta + J_r)) / (1/eta - eta)    (8)

(S = 0 when eta = 1: both lines are then the same).  S is MSL's switching point
``flange_a.tau = d tau_bf_a`` carried through (3)-(4) into s, written without tau_bf_a,
which is large and the difference of near-equal torques when eta is close to 1.  Without
bearing friction S = 0 and (8) is the sign of tau_a, as in the mesh-only law.  The choice
depends on the inputs and d alone, not on w: over a rolling phase with held torques c, b,
tau_a and w' are constant.

Losses.  The mesh takes ``tau_a w`` from shaft 1 and gives ``tau_mesh w / ratio`` to
shaft 2, so by (5)

    p_loss = tauLoss w = ((1 - c) tau_a + d b) w = (1 - c) tau_a w + b |w| >= 0       (9)

(the mesh part ``(1 - c) tau_a w`` and the bearing part ``b |w|``; their sum is MSL's
lossPower, never negative: forward, tauLoss is the larger of two lines that cross at
tauLoss = ``tau_bf_a + tau_bf_b/ratio = (tau_bf_1 + eta tau_bf_2)/(1 + eta) >= 0``, the
bearing loss alone; backward the smaller of two that cross at minus that).

Support torque.  The housing holds the gear against what the shafts do to it, so it takes

    tau_support = tau_a - tau_mesh                      (= -MSL's support.tau)        (10)

the torque the gear applies to the housing, positive in the common positive direction (what
the mounts must react; wired into a housing body it accelerates it, whose motion this
element does not feed back: its housing is fixed).  Adding (3) and (4):

    J_1 w_1' + J_2 w_2' = tau_1 + tau_2 - tau_support                                (11)

the change of angular momentum of the two shafts is the sum of the external torques on
them and on the gear, the housing's ``-tau_support`` included.

Rest.  At w = 0 the direction of motion is decided like a Karnopp friction element
(LossyGear's startForward / startBackward / locked): FORWARD if rolling forward by (6)-(8)
gives w' > 0, BACKWARD if rolling backward gives w' < 0, else STUCK, where w' = 0, tau_a =
tau_1 and tau_mesh = -tau_2 (tau_support = tau_1 + tau_2).  Rolling forward gives w' > 0
exactly when ``tau_1 + q`` (MSL's sa at rest: flange_a.tau = tau_1 while stuck) exceeds
tauLoss forward at flange_a.tau = tau_1, which is tauLossMax_p; likewise backward with
tauLossMin_m.  So STUCK happens exactly when

    tauLossMin_m <= tau_1 + q <= tauLossMax_p,                                        (12)
    i.e.  min(-eta tau_1 - tau_bf_1, -tau_1/eta - tau_bf_2) <= q
                                    <= max(tau_bf_1 - eta tau_1, tau_bf_2 - tau_1/eta)

LossyGear's stuck interval with bearing friction: without it, -q between eta tau_1 and
tau_1/eta; the bearing friction widens it by tau_bf_1 or tau_bf_2 at either end.  Since
tauLossMin_m <= tauLossMax_p at most one rolling mode is consistent.  With eta = 1 and no
bearing friction the interval is the single point of balance (w' = 0), the ideal gear at rest.

Stepping.  tau_1 and tau_2 are held over a step, so in each mode the acceleration is
constant and the motion is exactly quadratic in time.  A step runs at most two phases: a
rolling phase that decelerates reaches w = 0 at t = -w / w', where w is set to exactly 0
and the mode is decided again from the inputs (it locks or reverses); a phase that starts
at rest in a rolling mode accelerates away from 0 and cannot return within the step.
No velocity band, no chattering, nothing depends on the step size.  The loss of a phase is
the integral of (9), exact for the linear speed: tauLoss (phi_1 at its end minus phi_1 at its
start), with tauLoss constant over the phase (w keeps its sign within a phase).
"""
from __future__ import annotations

import math
from enum import IntEnum
from typing import NamedTuple

from .contract import check_step     # StepError (solvers.contract) for a bad step or input


class Mode(IntEnum):
    """Motion of the gear at an instant (names as in MSL LossyGear's mode)."""

    BACKWARD = -1  # rolling, w_1 < 0 (or leaving rest backward)
    STUCK = 0      # w_1 == 0 held: the losses' interval (12) balances the torques
    FORWARD = 1    # rolling, w_1 > 0 (or leaving rest forward)


class GearState(NamedTuple):
    """State of the gear pair; immutable.

    phi_1, w_1 : angle [rad] and speed [rad/s] of shaft 1 (shaft 2: divided by ratio)
    e_loss     : energy dissipated in the mesh and the bearings since the start [J]
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
    bearing  : d b, the signed bearing torque of (5) at shaft 1 [N.m] (0 when stuck)
    """

    mode: Mode
    a_1: float
    tau_a: float
    tau_mesh: float
    factor: float
    bearing: float = 0.0

    @property
    def tau_support(self) -> float:
        """(10): the torque the gear applies to the (fixed) housing [N.m]."""
        return self.tau_a - self.tau_mesh


def switching_point(j_1: float, j_r: float, eta: float, tau_bf_1: float, tau_bf_2: float) -> float:
    """S of (8): the value of d s at which the driving side changes (0 without bearing
    friction, and when eta = 1: both lines of (5) are then the same)."""
    if eta == 1.0:
        return 0.0
    return (tau_bf_2 * (eta * j_1 + j_r) - tau_bf_1 * (j_1 / eta + j_r)) / (1.0 / eta - eta)


def switching_problem(switch: float, tau_bf_1: float, tau_bf_2: float) -> str:
    """The message for a switching point (8) beyond the floats."""
    return (f"the switching point (8) of the driving side, s = {switch!r} N.m.kg.m2, from tau_bf_1 = "
            f"{tau_bf_1!r} N.m and tau_bf_2 = {tau_bf_2!r} N.m, must be finite (smaller bearing friction "
            "or inertias, or eta further from 1)")


class Gear:
    """Two shafts joined by a rigid mesh of ratio ``ratio`` = w_1 / w_2, efficiency eta and
    bearing friction (MSL LossyGear, module docstring).

    Parameters
    ----------
    j_1, j_2 : inertias of shaft 1 and shaft 2 [kg.m2], finite and > 0
    ratio    : w_1 / w_2, finite and != 0 (negative: shaft 2 turns the other way)
    eta      : mesh efficiency, 0 < eta <= 1 (1: ideal mesh)
    tau_bf_1, tau_bf_2 : resultant bearing friction at shaft 1 when shaft 1 resp. shaft 2
               drives [N.m], finite and >= 0 (MSL's tau_bf1, tau_bf2); equal when eta = 1
    """

    def __init__(self, j_1: float, j_2: float, ratio: float, eta: float,
                 tau_bf_1: float = 0.0, tau_bf_2: float = 0.0):
        for name, value in (("J_1", j_1), ("J_2", j_2)):
            if not (math.isfinite(value) and value > 0.0):
                raise ValueError(f"inertia {name} = {value!r} must be finite and > 0")
        if not (math.isfinite(ratio) and ratio != 0.0):
            raise ValueError(f"ratio = {ratio!r} must be finite and nonzero; allowed (-inf, 0) or (0, inf)")
        if not 0.0 < eta <= 1.0:
            raise ValueError(f"eta = {eta!r} is outside the allowed range (0, 1]")
        for name, value in (("tau_bf_1", tau_bf_1), ("tau_bf_2", tau_bf_2)):
            if not (math.isfinite(value) and value >= 0.0):
                raise ValueError(f"bearing friction {name} = {value!r} N.m must be finite and >= 0")
        if eta == 1.0 and tau_bf_1 != tau_bf_2:
            raise ValueError(f"tau_bf_1 = {tau_bf_1!r} N.m and tau_bf_2 = {tau_bf_2!r} N.m must be equal "
                             "when eta = 1 (a lossless mesh cannot make the bearing loss depend on the "
                             "driving side)")
        self.j_1, self.j_2, self.ratio, self.eta = float(j_1), float(j_2), float(ratio), float(eta)
        self.tau_bf_1, self.tau_bf_2 = float(tau_bf_1), float(tau_bf_2)
        self.j_reflected = self.j_2 / self.ratio / self.ratio      # J_r = J_2 / ratio^2 (ratio^2 could underflow to 0)
        if not (math.isfinite(self.j_reflected) and self.j_reflected > 0.0):
            raise ValueError(f"J_2 / ratio^2 = {self.j_reflected!r} kg.m2 (J_2 = {j_2!r}, ratio = {ratio!r}) "
                             "must be finite and > 0")
        self.switch = switching_point(self.j_1, self.j_reflected, self.eta, self.tau_bf_1, self.tau_bf_2)
        if not math.isfinite(self.switch):
            raise ValueError(switching_problem(self.switch, tau_bf_1, tau_bf_2))

    # ------------------------------------------------------------------ one instant
    def rolling(self, direction: int, tau_1: float, tau_2: float) -> MeshMotion:
        """The motion rolling in ``direction`` (+1 or -1): the driving side by (8), then (6),
        (7) and (5)."""
        j_1, j_r = self.j_1, self.j_reflected
        q = tau_2 / self.ratio
        s = j_r * tau_1 - j_1 * q
        if direction * s >= self.switch:                                  # (8): shaft 1 drives
            factor, friction = self.eta, self.tau_bf_1
        else:                                                             # shaft 2 drives
            factor, friction = 1.0 / self.eta, self.tau_bf_2
        denominator = factor * j_1 + j_r
        if friction == 0.0:        # (6), (7), (5) with b = 0, no rounding added by a zero term
            tau_a = s / denominator
            return MeshMotion(Mode(direction), (factor * tau_1 + q) / denominator, tau_a,
                              self.ratio * factor * tau_a, factor)
        bearing = direction * friction                                    # d b
        tau_a = (s + j_1 * bearing) / denominator                         # (6)
        return MeshMotion(Mode(direction), (factor * tau_1 + q - bearing) / denominator,   # (7)
                          tau_a, self.ratio * factor * tau_a - self.ratio * bearing,        # (5)
                          factor, bearing)

    def stuck(self, tau_1: float, tau_2: float) -> MeshMotion:
        """w' = 0: each shaft's torques balance (tau_a = tau_1, tau_mesh = -tau_2)."""
        return MeshMotion(Mode.STUCK, 0.0, tau_1, -tau_2, 1.0)

    def motion(self, w_1: float, tau_1: float, tau_2: float) -> MeshMotion:
        """The motion at speed w_1: rolling its way if w_1 != 0, else decided (Karnopp, the
        interval (12)): forward if that gives w' > 0, backward if that gives w' < 0, else stuck."""
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
    def loss_torque(motion: MeshMotion) -> float:
        """MSL's tauLoss of (9), (1 - c) tau_a + d b [N.m] (0 when stuck: c = 1, b = 0)."""
        if motion.bearing == 0.0:
            return (1.0 - motion.factor) * motion.tau_a
        return (1.0 - motion.factor) * motion.tau_a + motion.bearing

    @staticmethod
    def loss_power(motion: MeshMotion, w_1: float) -> float:
        """p_loss = tauLoss w_1 [W], (9)."""
        return Gear.loss_torque(motion) * w_1

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
            e_loss += self.loss_torque(motion) * travel                  # (9) over the phase
            phi, w, remaining = phi + travel, 0.0, remaining - t_stop
            if remaining <= 0.0:
                return GearState(phi, 0.0, e_loss)
            motion = self.motion(0.0, tau_1, tau_2)
        if motion.mode == Mode.STUCK:
            return GearState(phi, 0.0, e_loss)
        a = motion.a_1          # w keeps its sign to the end: it starts at 0 or does not reach 0 in time
        travel = w * remaining + 0.5 * a * remaining * remaining
        e_loss += self.loss_torque(motion) * travel
        return GearState(phi + travel, w + a * remaining, e_loss)
