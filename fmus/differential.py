"""Differential: a carrier (the case, driven through the final drive) and two axles, left and
right, with a limited-slip clutch between the axles (open when it has no capacity).

Kinematics (bevel differential):  w_carrier = (w_left + w_right) / 2             (likewise the angles)
MSL's Rotational.Components.IdealPlanetary with ratio = 1 ((1 + ratio) w_carrier = w_sun +
ratio w_ring, the sun the left axle, the ring the right one) and Simscape Driveline's
Differential; the final-drive ratio is a Gear ahead of the carrier.  Ideal gears without loss:
the carrier passes a torque T_g to the spider gears, which give T_g / 2 to each axle.
Dynamics (the spider gears' own inertia neglected, as in IdealPlanetary):
    J_carrier w_carrier' = tau_carrier - T_g
    J_left w_left'       = tau_left  + T_g / 2 - tau_fric
    J_right w_right'     = tau_right + T_g / 2 + tau_fric
Open (tau_fric = 0) both axles receive the same torque T_g / 2 whatever their speeds: an axle
with less load runs ahead, one without grip takes all the speed.

Limited slip: a friction clutch joins the left axle to the right one, slip w_left - w_right,
``tau_fric`` the torque it passes from the left axle to the right: the axles then receive
torques that differ by 2 tau_fric.  This is Simscape Driveline's Limited-Slip Differential
(an open differential with a plate clutch between the shafts): the usual clutch pack between
each side gear and the case, each of capacity T, acts on the axles exactly as this one clutch
of capacity T (each pack slips at +-(w_left - w_right) / 2, and the case passes the
difference of their torques half to each axle).  Its capacities are a preload torque (the
spring that presses the plates; the Powertrain Blockset's pre-loaded clutch) plus the clamp
force's part, with Clutch's friction law (eq. 2 of solvers.friction) on top:
    T_s = T_preload + mu_s r_eff n_surfaces f_n,   T_c = T_preload + mu_k r_eff n_surfaces f_n.
T_preload = 0 and f_n = 0 give the open differential.  Stick/slip is the friction system of
solvers.friction with one interface and one free motion (the common rotation of all three
members): locking and breakaway at their exact instants inside the step.

Left out: a torque-sensing (Torsen-type) capacity: axle torques within a bias ratio b of each
other need T = T_preload + (b - 1) / (b + 1) |T_g| / 2.
The torque T_g through the gears is not an input: with J_left != J_right it depends on the
clutch torque itself (T_g = tau_carrier - J_carrier w_carrier'), so the capacity would be a
function of the unknown friction, a complementarity problem solvers.friction does not solve;
taking |tau_carrier| instead would be wrong whenever the carrier accelerates.

Coordinates: the momentum-weighted mean speed w_mean = (J_carrier w_carrier + J_left w_left +
J_right w_right) / J_total and the slip s = w_left - w_right, so that
    w_member = w_mean + k_member s,  k_carrier = (J_right - J_left) / (2 J_total),
    k_left = (J_carrier + 2 J_right) / (2 J_total),  k_right = -(J_carrier + 2 J_left) / (2 J_total)
(k_left - k_right = 1, (k_left + k_right) / 2 = k_carrier, sum J_i k_i = 0).  Their mass
matrix is diagonal, J_total and the slip inertia sum J_i k_i^2 = (J_carrier (J_left + J_right)
+ 4 J_left J_right) / (4 J_total), each a sum of positive terms: no inertia ratio within the
declared ranges loses digits (measured: the open differential's accelerations within 3.2e-15
of the closed form, relative to their terms, over inertias 1e-12 .. 1e6 kg.m2 each, 125
combinations).  The axle speeds as coordinates would lose them: their mass matrix
[[J_left + J_carrier/4, J_carrier/4], [J_carrier/4, J_right + J_carrier/4]] has a determinant
that is a difference of terms of size J_carrier^2 / 16 (measured, axles of 1 kg.m2: a carrier
1e9 times heavier puts the slip's inertia 2e-9 off, 1e17 times makes it singular).
"""
from __future__ import annotations

from drivetrain_fmu.solvers.friction import FrictionSystem

from .clutch import FrictionElement, _Z3_LAW, interface_variables
from .variables import BOOLEAN, inertia, input_, output, parameter, with_second_torques

_INPUTS = ("tau_carrier", "tau_left", "tau_right", "f_n")


class Differential(FrictionElement):
    """Open or limited-slip differential (defaults: open, 100 N.m on the carrier, the right axle
    loaded with 20 N.m: the left axle runs ahead)."""

    description = "Differential (carrier, left and right axle) with a limited-slip clutch, exact stick/slip"
    DEFAULT_STOP = 1.0
    MEMBERS = ("_carrier", "_left", "_right")
    TAGS = ("",)
    SLIP_OUTPUTS = False
    VARIABLES = with_second_torques((
        inertia("J_carrier", "inertia of the carrier (case, ring gear) and what is fixed to it", 0.05),
        inertia("J_left", "inertia of the left axle and what is fixed to it", 0.5),
        inertia("J_right", "inertia of the right axle and what is fixed to it", 0.5),
        parameter("T_preload", "N.m", "preload torque of the limited-slip clutch (its spring), added to "
                  "the static and the kinetic capacity; 0 with f_n = 0: an open differential", 0.0, low=0.0),
        *interface_variables("", "the limited-slip clutch", _Z3_LAW),
        parameter("phi_left_start", "rad", "initial angle of the left axle (the carrier's is the mean "
                  "of the axles')", 0.0),
        parameter("w_left_start", "rad/s", "initial speed of the left axle (the carrier's is the mean "
                  "of the axles')", 0.0),
        parameter("phi_right_start", "rad", "initial angle of the right axle", 0.0),
        parameter("w_right_start", "rad/s", "initial speed of the right axle", 0.0),
        input_("tau_carrier", "N.m", "external torque on the carrier (from the final drive), positive "
               "accelerating it", 100.0),
        input_("tau_left", "N.m", "external torque on the left axle (its wheel's load), positive "
               "accelerating it"),
        input_("tau_right", "N.m", "external torque on the right axle (its wheel's load), positive "
               "accelerating it", -20.0),
        input_("f_n", "N", "normal (clamp) force of the limited-slip clutch beyond its preload; 0 adds "
               "nothing", 0.0, low=0.0),
        output("phi_carrier", "rad", "angle of the carrier, (phi_left + phi_right) / 2"),
        output("w_carrier", "rad/s", "speed of the carrier, (w_left + w_right) / 2"),
        output("phi_left", "rad", "angle of the left axle"),
        output("w_left", "rad/s", "speed of the left axle"),
        output("phi_right", "rad", "angle of the right axle"),
        output("w_right", "rad/s", "speed of the right axle"),
        output("tau_fric", "N.m", "torque the limited-slip clutch passes from the left axle to the right "
               "(the axles' torques from the differential differ by 2 tau_fric)", depends=_INPUTS),
        output("locked", None, "the limited-slip clutch is stuck (the axles turn together)", type=BOOLEAN,
               depends=_INPUTS),
        output("p_loss", "W", "power dissipated by the limited-slip clutch", depends=("f_n",)),
        output("e_loss", "J", "energy dissipated by the limited-slip clutch since the start"),
    ), ("tau_carrier", "tau_left", "tau_right"))

    def member_map(self):
        """E: (w_mean, s) -> (w_carrier, w_left, w_right) (module docstring: the k_member)."""
        twice_total = 2.0 * (self.J_carrier + self.J_left + self.J_right)
        return [[1.0, (self.J_right - self.J_left) / twice_total],
                [1.0, (self.J_carrier + 2.0 * self.J_right) / twice_total],
                [1.0, -(self.J_carrier + 2.0 * self.J_left) / twice_total]]

    def build_system(self):
        # one interface, slip w_left - w_right (row [0, 1, -1] over carrier, left, right)
        return FrictionSystem([self.J_carrier, self.J_left, self.J_right], [self.law("")],
                              rows=[[0.0, 1.0, -1.0]], members=self.member_map())

    def start_coordinates(self):
        """(w_mean, s) from the axles' start values: s = left - right, and w_mean = w_carrier -
        k_carrier s with w_carrier = (left + right) / 2 (E's carrier row); likewise the angles."""
        k_carrier = self.member_map()[0][1]

        def coordinates(left, right):
            slip = left - right
            return [(left + right) / 2.0 - k_carrier * slip, slip]

        return (coordinates(self.phi_left_start, self.phi_right_start),
                coordinates(self.w_left_start, self.w_right_start))

    def capacities(self, clamps):
        """T_s = T_preload + mu_s r_eff n_surfaces f_n, T_c = T_preload + mu_k r_eff n_surfaces f_n."""
        (static,), (kinetic,) = self.chain.capacities(clamps)
        return [self.T_preload + static], [self.T_preload + kinetic]

    def cross_check(self):
        problems = super().cross_check()
        if self.locked_start and self.w_left_start != self.w_right_start:
            problems.append(f"locked_start = true needs the axles at equal speeds: w_left_start == "
                            f"w_right_start (got {self.w_left_start!r} and {self.w_right_start!r})")
        return problems
