"""OneWayClutch (freewheel): body 1 may drive body 2 forward, body 2 may overrun body 1.

    J_1 w_1' = tau_1 - tau_fric,   J_2 w_2' = tau_2 + tau_fric,   w_slip = w_1 - w_2
    locked (w_slip = 0): tau_fric from the locked motion, held while tau_fric >= -T_s
    free   (w_slip < 0): tau_fric = -T(w_slip) (Clutch's law, eq. 2, with T_s and T_c)
    T_s = tau_drag + mu_s r_eff n_surfaces f_n,   T_c = tau_drag + mu_k r_eff n_surfaces f_n
A slip w_slip > 0 cannot occur: body 1 catching up with body 2 locks the freewheel.
With tau_drag = 0 and f_n = 0 this is MSL's ideal freewheel (locked while the locked
motion needs tau_fric >= 0, free while body 2 overruns); a clamp force f_n > 0 engages
the friction clutch that also holds the overrun direction, as in MSL's
Rotational.Components.OneWayClutch (its static factor peak is mu_s / mu_k here);
tau_drag is a constant Coulomb drag of the free-running clutch.  The friction system of
solvers.friction with one one-way interface: the instant body 1 catches up with body 2
and the instant the locked torque falls below -T_s (body 2 starts to overrun) are found
exactly inside the step.
"""
from __future__ import annotations

from drivetrain_fmu.solvers.friction import FrictionSystem

from .clutch import FrictionElement, _Z3_LAW, interface_variables
from .variables import BOOLEAN, inertia, input_, output, parameter, with_second_torques

_INPUTS = ("tau_1", "tau_2", "f_n")


class OneWayClutch(FrictionElement):
    """Freewheel between a driving body 1 and a driven body 2 (defaults: body 2 overruns at
    5 rad/s and is caught by the accelerating body 1 at t = 0.5 s)."""

    description = "One-way clutch (freewheel): body 1 drives body 2 forward, body 2 may overrun, exact switching"
    DEFAULT_STOP = 1.0
    MEMBERS = ("_1", "_2")
    TAGS = ("",)
    VARIABLES = with_second_torques((
        inertia("J_1", "inertia of the driving body 1", 0.1),
        inertia("J_2", "inertia of the driven body 2", 0.1),
        parameter("tau_drag", "N.m", "drag torque of the free-running clutch (Coulomb: it also holds "
                  "a locked clutch against overrun torques up to this size)", 0.0, low=0.0),
        *interface_variables("", "the friction clutch that holds the overrun direction", _Z3_LAW),
        parameter("phi_1_start", "rad", "initial angle of body 1", 0.0),
        parameter("w_1_start", "rad/s", "initial speed of body 1 (at most w_2_start)", 0.0),
        parameter("phi_2_start", "rad", "initial angle of body 2", 0.0),
        parameter("w_2_start", "rad/s", "initial speed of body 2", 5.0),
        input_("tau_1", "N.m", "external torque on body 1, positive accelerating it forward", 1.0),
        input_("tau_2", "N.m", "external torque on body 2, positive accelerating it forward"),
        input_("f_n", "N", "normal (clamp) force of the friction clutch; 0: a freewheel only", 0.0, low=0.0),
        output("phi_1", "rad", "angle of body 1"),
        output("w_1", "rad/s", "speed of body 1"),
        output("phi_2", "rad", "angle of body 2"),
        output("w_2", "rad/s", "speed of body 2"),
        output("w_slip", "rad/s", "slip speed w_1 - w_2 (<= 0: 0 locked, < 0 body 2 overruns)"),
        output("tau_fric", "N.m", "torque the clutch transmits from body 1 to body 2 (>= -T_s)",
               depends=_INPUTS),
        output("locked", None, "the clutch is locked (body 1 drives body 2, or the friction clutch holds)",
               type=BOOLEAN, depends=_INPUTS),
        output("p_loss", "W", "power dissipated while body 2 overruns (drag and friction clutch)",
               depends=("f_n",)),
        output("e_loss", "J", "energy dissipated since the start"),
    ), ("tau_1", "tau_2"))

    def cross_check(self):
        problems = super().cross_check()
        if self.w_1_start > self.w_2_start:
            problems.append(f"w_1_start = {self.w_1_start!r} must not exceed w_2_start = {self.w_2_start!r}: "
                            "body 1 cannot overrun body 2 forward (the clutch would have locked)")
        if self.locked_start and self.w_1_start != self.w_2_start:
            problems.append(f"locked_start = true needs w_1_start == w_2_start "
                            f"(got {self.w_1_start!r} and {self.w_2_start!r})")
        return problems

    def build_system(self):
        # slip w_1 - w_2 (rows = [[1, -1]]), held one way (one_way): the freewheel
        return FrictionSystem([self.J_1, self.J_2], [self.law("")], rows=[[1.0, -1.0]], one_way=(0,))

    def capacities(self, clamps):
        (static,), (kinetic,) = self.chain.capacities(clamps)
        return [self.tau_drag + static], [self.tau_drag + kinetic]
