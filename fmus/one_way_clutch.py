"""OneWayClutch (freewheel): body 1 may drive body 2 forward, body 2 may overrun body 1.

    J_1 w_1' = tau_1 - tau_fric,   J_2 w_2' = tau_2 + tau_fric,   w_slip = w_1 - w_2
    locked (w_slip = 0): tau_fric from the locked motion, held while tau_fric >= -tau_drag
    free   (w_slip < 0): tau_fric = -tau_drag (a constant drag of the free-running clutch)
A slip w_slip > 0 cannot occur: body 1 catching up with body 2 locks the clutch.
With tau_drag = 0 this is MSL's ideal freewheel (Rotational.Components.OneWayClutch with
no clutch force: locked while the locked motion needs tau_fric >= 0, free while body 2
overruns); tau_drag is the Coulomb friction of the free-running clutch, static and
kinetic alike.  The friction system of solvers.friction with one one-way interface: the
instant body 1 catches up with body 2 and the instant the locked torque turns negative
(body 2 starts to overrun) are found exactly inside the step.
"""
from __future__ import annotations

from solvers.friction import FrictionSystem, InterfaceLaw

from .clutch import FrictionElement
from .variables import BOOLEAN, inertia, input_, output, parameter

_TORQUES = ("tau_1", "tau_2")


class OneWayClutch(FrictionElement):
    """Freewheel between a driving body 1 and a driven body 2 (defaults: body 2 overruns at
    5 rad/s and is caught by the accelerating body 1 at t = 0.5 s)."""

    description = "One-way clutch (freewheel): body 1 drives body 2 forward, body 2 may overrun, exact switching"
    DEFAULT_STOP = 1.0
    MEMBERS = ("_1", "_2")
    TAGS = ("",)
    VARIABLES = (
        inertia("J_1", "inertia of the driving body 1", 0.1),
        inertia("J_2", "inertia of the driven body 2", 0.1),
        parameter("tau_drag", "N.m", "drag torque of the free-running clutch (Coulomb: it also holds "
                  "a locked clutch against overrun torques up to this size)", 0.0, low=0.0),
        parameter("locked_start", None, "the clutch starts locked (needs w_1_start == w_2_start)", False,
                  type=BOOLEAN),
        parameter("phi_1_start", "rad", "initial angle of body 1", 0.0),
        parameter("w_1_start", "rad/s", "initial speed of body 1 (at most w_2_start)", 0.0),
        parameter("phi_2_start", "rad", "initial angle of body 2", 0.0),
        parameter("w_2_start", "rad/s", "initial speed of body 2", 5.0),
        input_("tau_1", "N.m", "external torque on body 1, positive accelerating it forward", 1.0),
        input_("tau_2", "N.m", "external torque on body 2, positive accelerating it forward"),
        output("phi_1", "rad", "angle of body 1"),
        output("w_1", "rad/s", "speed of body 1"),
        output("phi_2", "rad", "angle of body 2"),
        output("w_2", "rad/s", "speed of body 2"),
        output("w_slip", "rad/s", "slip speed w_1 - w_2 (<= 0: 0 locked, < 0 body 2 overruns)"),
        output("tau_fric", "N.m", "torque the clutch transmits from body 1 to body 2 (>= -tau_drag)",
               depends=_TORQUES),
        output("locked", None, "the clutch is locked (body 1 drives body 2)", type=BOOLEAN, depends=_TORQUES),
        output("p_loss", "W", "power dissipated by the drag of the free-running clutch"),
        output("e_loss", "J", "energy dissipated by the drag since the start"),
    )

    def cross_check(self):
        problems = []
        if self.w_1_start > self.w_2_start:
            problems.append(f"w_1_start = {self.w_1_start!r} must not exceed w_2_start = {self.w_2_start!r}: "
                            "body 1 cannot overrun body 2 forward (the clutch would have locked)")
        if self.locked_start and self.w_1_start != self.w_2_start:
            problems.append(f"locked_start = true needs w_1_start == w_2_start "
                            f"(got {self.w_1_start!r} and {self.w_2_start!r})")
        return problems

    def build_system(self):
        # slip w_1 - w_2 (rows = [[1, -1]]), held one way (one_way): the freewheel
        return FrictionSystem([self.J_1, self.J_2], [InterfaceLaw(d_visc=0.0, w_stribeck=0.0)],
                              rows=[[1.0, -1.0]], one_way=(0,))

    def clamp_names(self):
        return []

    def capacities(self, clamps):
        return [self.tau_drag], [self.tau_drag]
