"""PlanetaryGear: sun, carrier and ring of a simple planetary gear set, with a clutch
between two of its members and a brake of the ring to the housing (the element an
automatic transmission is built from; MSL Rotational.Components.IdealPlanetary plus
Clutch and Brake, in one element so that their stick/slip is decided together).

Kinematics (Willis):  w_sun - w_carrier = -(z_ring / z_sun) (w_ring - w_carrier),
so two speeds fix the third; the coordinates here are the carrier and the ring:
    w_sun = w_carrier + (z_ring / z_sun) (w_carrier - w_ring)          (likewise the angles)
Dynamics: the members' inertias and torques act through that constraint (the planets'
own inertia is neglected, as in MSL's IdealPlanetary), an ideal mesh without loss:
    M_q v' = E^T tau - D^T tau_friction,  M_q = E^T diag(J_sun, J_carrier, J_ring) E,
with E the map from (w_carrier, w_ring) to the member speeds and D the slip rows of the
clutch (w_a - w_b of its two members) and the brake (w_ring).  The two interfaces fix
both coordinates (no free motion): their stick/slip is the mixed complementarity problem
of solvers.friction (Biagiotti-Zanasi decoupling with the kinematic constraint), solved
exactly at every event inside the step.

Friction laws as Clutch, capacities T = mu r_eff n_surfaces f_n of each interface.
"""
from __future__ import annotations

from solvers.friction import FrictionSystem

from .clutch import FrictionElement, _Z3_LAW, interface_variables
from .variables import BOOLEAN, INTEGER, inertia, input_, output, parameter

#: clutch_members: the two members the clutch joins (slip w_a - w_b)
CLUTCH_MEMBERS = {1: ("sun", "carrier"), 2: ("sun", "ring"), 3: ("carrier", "ring")}
_MEMBER_INDEX = {"sun": 0, "carrier": 1, "ring": 2}
_INPUTS = ("tau_sun", "tau_carrier", "tau_ring", "f_n_c", "f_n_b")


class PlanetaryGear(FrictionElement):
    """Planetary gear set with a clutch (sun to carrier by default) and a ring brake
    (defaults: ring braked, sun driven: carrier turns at z_sun / (z_sun + z_ring) of the sun)."""

    description = "Planetary gear set (sun, carrier, ring) with a clutch and a ring brake, exact stick/slip"
    DEFAULT_STOP = 1.0
    MEMBERS = ("_sun", "_carrier", "_ring")
    TAGS = ("_c", "_b")
    HOUSING_TAGS = frozenset(("_b",))
    SLIP_OUTPUTS = False
    VARIABLES = (
        parameter("z_sun", None, "number of teeth of the sun", 50, type=INTEGER, low=1),
        parameter("z_ring", None, "number of teeth of the ring (more than the sun's)", 100, type=INTEGER, low=1),
        inertia("J_sun", "inertia of the sun and what is fixed to it", 0.01),
        inertia("J_carrier", "inertia of the carrier and what is fixed to it", 0.05),
        inertia("J_ring", "inertia of the ring and what is fixed to it", 0.03),
        parameter("clutch_members", None, "members the clutch joins: 1 sun-carrier, 2 sun-ring, "
                  "3 carrier-ring (slip w_a - w_b, in that order)", 1, type=INTEGER, low=1, high=3),
        *interface_variables("_c", "the clutch", _Z3_LAW),
        *interface_variables("_b", "the ring brake", _Z3_LAW, locked_start=True),
        parameter("phi_carrier_start", "rad", "initial angle of the carrier", 0.0),
        parameter("w_carrier_start", "rad/s", "initial speed of the carrier", 0.0),
        parameter("phi_ring_start", "rad", "initial angle of the ring (the sun's follows from Willis)", 0.0),
        parameter("w_ring_start", "rad/s", "initial speed of the ring (the sun's follows from Willis)", 0.0),
        input_("tau_sun", "N.m", "external torque on the sun, positive accelerating it", 10.0),
        input_("tau_carrier", "N.m", "external torque on the carrier, positive accelerating it"),
        input_("tau_ring", "N.m", "external torque on the ring, positive accelerating it"),
        input_("f_n_c", "N", "normal (clamp) force of the clutch; 0 opens it", 0.0, low=0.0),
        input_("f_n_b", "N", "normal (clamp) force of the ring brake; 0 releases it", 1000.0, low=0.0),
        output("phi_sun", "rad", "angle of the sun"),
        output("w_sun", "rad/s", "speed of the sun"),
        output("phi_carrier", "rad", "angle of the carrier"),
        output("w_carrier", "rad/s", "speed of the carrier"),
        output("phi_ring", "rad", "angle of the ring"),
        output("w_ring", "rad/s", "speed of the ring (the brake's slip)"),
        output("tau_fric_c", "N.m", "torque the clutch transmits from its first member to its second",
               depends=_INPUTS),
        output("locked_c", None, "the clutch is stuck (the gear set turns as one body)", type=BOOLEAN,
               depends=_INPUTS),
        output("tau_fric_b", "N.m", "torque the housing applies to the ring through the brake",
               depends=_INPUTS),
        output("locked_b", None, "the brake holds the ring at rest", type=BOOLEAN, depends=_INPUTS),
        output("p_loss", "W", "power dissipated by the clutch and the brake", depends=("f_n_c", "f_n_b")),
        output("e_loss", "J", "energy dissipated by the clutch and the brake since the start"),
    )

    def member_map(self):
        """E: (w_carrier, w_ring) -> (w_sun, w_carrier, w_ring) (Willis)."""
        ratio = self.z_ring / self.z_sun
        return [[1.0 + ratio, -ratio], [1.0, 0.0], [0.0, 1.0]]

    def clutch_row(self):
        first, second = CLUTCH_MEMBERS[int(self.clutch_members)]
        row = [0.0, 0.0, 0.0]
        row[_MEMBER_INDEX[first]], row[_MEMBER_INDEX[second]] = 1.0, -1.0
        return row

    def cross_check(self):
        problems = super().cross_check()
        if self.z_ring <= self.z_sun:
            problems.append(f"z_ring = {self.z_ring!r} must exceed z_sun = {self.z_sun!r} (the ring gear "
                            "surrounds the sun and the planets)")
            return problems
        # every clutch slip is a multiple of w_carrier - w_ring (Willis)
        if self.locked_c_start and self.w_carrier_start != self.w_ring_start:
            problems.append(f"locked_c_start = true needs the clutch's members at equal speeds: w_carrier_start "
                            f"== w_ring_start (got {self.w_carrier_start!r} and {self.w_ring_start!r})")
        if self.locked_b_start and self.w_ring_start != 0.0:
            problems.append(f"locked_b_start = true needs w_ring_start == 0 (got {self.w_ring_start!r})")
        return problems

    def build_system(self):
        return FrictionSystem([self.J_sun, self.J_carrier, self.J_ring], [self.law("_c"), self.law("_b")],
                              rows=[self.clutch_row(), [0.0, 0.0, 1.0]], members=self.member_map())

    def start_coordinates(self):
        return [self.phi_carrier_start, self.phi_ring_start], [self.w_carrier_start, self.w_ring_start]
