"""Brake: one inertia with dry friction to the fixed housing (MSL Rotational.Components.Brake).

    J w' = tau + tau_fric
    slipping (w != 0): tau_fric = -(T_c + (T_s - T_c) exp(-|w / w_stribeck|^alpha)) sign(w) - d_visc w
    locked   (w == 0): tau_fric = -tau, held while |tau| <= T_s
with T_s = mu_s r_eff n_surfaces f_n and T_c = mu_k r_eff n_surfaces f_n as for Clutch.
The body and the housing are the friction system of solvers.friction with one interface
and no free motion (the housing does not move): the stop instant and the breakaway are
found exactly inside the step, as for the clutches.
"""
from __future__ import annotations

from drivetrain_fmu.solvers.friction import FrictionSystem

from .clutch import FrictionElement, _Z1_LAW, interface_variables
from .variables import BOOLEAN, inertia, input_, output, parameter, with_second_torques


class Brake(FrictionElement):
    """Brake of one inertia to the housing (defaults: 1 kg.m2 at 10 rad/s stopped by T_c = 80 N.m
    at t = 1/8 s)."""

    description = "Brake: one inertia with dry friction to the fixed housing, exact stick/slip"
    DEFAULT_STOP = 0.3
    MEMBERS = ("",)
    TAGS = ("",)
    HOUSING_TAGS = frozenset(TAGS)
    SLIP_OUTPUTS = False
    VARIABLES = with_second_torques((
        inertia("J", "moment of inertia of the braked body", 1.0),
        *interface_variables("", "the brake", _Z1_LAW),
        parameter("phi_start", "rad", "initial angle of the body", 0.0),
        parameter("w_start", "rad/s", "initial speed of the body", 10.0),
        input_("tau", "N.m", "external torque on the body, positive accelerating it"),
        input_("f_n", "N", "normal (clamp) force of the brake; 0 releases it", 1000.0, low=0.0),
        output("phi", "rad", "angle of the body"),
        output("w", "rad/s", "speed of the body (the brake's slip)"),
        output("tau_fric", "N.m", "torque the housing applies to the body through the brake: opposes "
               "the motion while slipping, -(tau + tau_2) while locked", depends=("tau", "f_n")),
        output("locked", None, "the brake holds the body at rest (static friction)", type=BOOLEAN,
               depends=("tau", "f_n")),
        output("p_loss", "W", "power dissipated by the brake", depends=("f_n",)),
        output("e_loss", "J", "energy dissipated by the brake since the start"),
    ), ("tau",))

    def build_system(self):
        # one interface whose slip is the body's speed (rows = [[1]]): the housing is fixed
        return FrictionSystem([self.J], [self.law("")], rows=[[1.0]])

    def cross_check(self):
        problems = super().cross_check()
        if self.locked_start and self.w_start != 0.0:
            problems.append(f"locked_start = true needs w_start == 0 (got {self.w_start!r})")
        return problems
