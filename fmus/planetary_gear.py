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

import math
from operator import sub

from drivetrain_fmu.solvers.friction import FrictionSystem

from .clutch import FrictionElement, _Z3_LAW, interface_variables
from .variables import BOOLEAN, INTEGER, J_MIN, inertia, input_, output, parameter, with_second_torques

#: clutch_members: the two members the clutch joins (slip w_a - w_b)
CLUTCH_MEMBERS = {1: ("sun", "carrier"), 2: ("sun", "ring"), 3: ("carrier", "ring")}
_MEMBER_INDEX = {"sun": 0, "carrier": 1, "ring": 2}
_MEMBER_INDEX_NAMES = tuple(_MEMBER_INDEX)
_INPUTS = ("tau_sun", "tau_carrier", "tau_ring", "f_n_c", "f_n_b")

#: The largest relative error of the gear's slip-space model the gear accepts: 1e-9, far below
#: any measurement of a gear set.  Why a limit: the friction system works in the coordinates
#: (w_carrier, w_ring); with r = z_ring / z_sun its mass matrix
#:     M_q = E^T J E = [[(1 + r)^2 J_sun + J_carrier, -r (1 + r) J_sun], [-r (1 + r) J_sun, r^2 J_sun + J_ring]]
#: has entries of size r^2 J_sun while det M_q = (1 + r)^2 J_sun J_ring + r^2 J_sun J_carrier +
#: J_carrier J_ring grows only as r^2 J_sun (J_carrier + J_ring): rounding each entry to
#: u = 2^-53 of itself and solving with it (J_R^-1 = D M_q^-1 D^T, g = D M_q^-1 E^T) loses
#: about u r^2 J_sun / (J_carrier + J_ring) of the accelerations.  Measured at the default
#: inertias (sun driven, ring held, against w_sun = tau t / (J_sun + rho^2 J_carrier)):
#: z_ring / z_sun = 1e4 -> 1.4e-9 relative, 1e6 -> 2e-5, 1e8 -> 0.30, 1e9 -> "singular matrix".
#: Inertias far apart lose digits too, whatever the ratio: a sun 10^12 times lighter than the
#: carrier makes g of size 1 / J_sun, and the step's differences of its products with the
#: torques (a stuck interface eliminated, the torques that hold the stuck ones) cancel to
#: results of size 1: 1.6e-5 off at z 50 / 100.  The check (:func:`slip_model_error`)
#: compares what the solver built with the same quantities in slip coordinates, where nothing
#: cancels, and bounds those differences by u times the size of their terms: by Willis every
#: member turns at w_ring + lambda (w_carrier - w_ring), lambda = (z_sun + z_ring) / z_sun for
#: the sun, 1 for the carrier, 0 for the ring, so the member speeds from the slips (s_clutch,
#: w_ring) are K = [[lambda_i / (lambda_a - lambda_b), 1]] (a, b the clutch's members: each
#: entry a ratio of teeth sums, >= 0) and J_R = K^T J K is a sum of terms >= 0 (a few u).
#: Measured over 1250 combinations of teeth (ratios 1.5 .. 1.7e8) and inertias (1e-12 .. 1e6
#: kg.m2 each), sun driven and ring held: every accepted one within 9.9e-10 of the closed form.
#: At the default inertias it refuses from z_ring / z_sun = 4750 on (the rounding error is not
#: monotonic in the ratio: some larger ratios pass up to about 10^4; real gear sets: 1.2 .. 12).
SLIP_MODEL_TOLERANCE = 1e-9
#: u, the relative rounding of one floating-point operation (IEEE double)
_UNIT_ROUNDOFF = 2.0 ** -53
_LAMBDA_NUMERATORS = {"sun": lambda z_sun, z_ring: z_sun + z_ring, "carrier": lambda z_sun, z_ring: z_sun,
                      "ring": lambda z_sun, z_ring: 0}


class PlanetaryGear(FrictionElement):
    """Planetary gear set with a clutch (sun to carrier by default) and a ring brake
    (defaults: ring braked, sun driven: carrier turns at z_sun / (z_sun + z_ring) of the sun)."""

    description = "Planetary gear set (sun, carrier, ring) with a clutch and a ring brake, exact stick/slip"
    DEFAULT_STOP = 1.0
    MEMBERS = ("_sun", "_carrier", "_ring")
    TAGS = ("_c", "_b")
    HOUSING_TAGS = frozenset(("_b",))
    SLIP_OUTPUTS = False
    VARIABLES = with_second_torques((
        parameter("z_sun", None, "number of teeth of the sun", 50, type=INTEGER, low=1),
        parameter("z_ring", None, "number of teeth of the ring (more than the sun's; z_ring / z_sun at most "
                  "about 4700 at the default inertias, less with a heavier sun or inertias far apart: beyond, "
                  f"rounding would put the speeds off by more than {SLIP_MODEL_TOLERANCE:g})", 100, type=INTEGER, low=1),
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
    ), ("tau_sun", "tau_carrier", "tau_ring"))

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
        in_range = (self.z_sun >= 1 and int(self.clutch_members) in CLUTCH_MEMBERS
                    and all(J_MIN <= j < math.inf for j in (self.J_sun, self.J_carrier, self.J_ring)))
        conditioning = self.conditioning_problem() if in_range else None      # (else the range check names them)
        if conditioning:
            problems.append(conditioning)
        # every clutch slip is a multiple of w_carrier - w_ring (Willis)
        if self.locked_c_start and self.w_carrier_start != self.w_ring_start:
            problems.append(f"locked_c_start = true needs the clutch's members at equal speeds: w_carrier_start "
                            f"== w_ring_start (got {self.w_carrier_start!r} and {self.w_ring_start!r})")
        if self.locked_b_start and self.w_ring_start != 0.0:
            problems.append(f"locked_b_start = true needs w_ring_start == 0 (got {self.w_ring_start!r})")
        return problems

    def conditioning_problem(self) -> str | None:
        """None when the friction system of these parameters computes the gear's slip-space
        model to SLIP_MODEL_TOLERANCE, else a message naming the teeth, the inertias and the limit."""
        try:
            error = slip_model_error(self.build_system(), self.z_sun, self.z_ring, self.clutch_row())
        except (ValueError, ArithmeticError) as exc:       # a matrix singular to rounding
            off = f"not be computable ({exc})"
        else:
            if error <= SLIP_MODEL_TOLERANCE:
                return None
            off = f"be off by {error:.2g} relative"
        return (f"z_ring / z_sun = {self.z_ring!r} / {self.z_sun!r} with J_sun = {self.J_sun!r}, J_carrier = "
                f"{self.J_carrier!r}, J_ring = {self.J_ring!r} kg.m2: rounding would make the gear's "
                f"accelerations {off}; allowed: at most {SLIP_MODEL_TOLERANCE:g} (a smaller z_ring / z_sun, "
                "or inertias less far apart)")

    def build_system(self):
        return FrictionSystem([self.J_sun, self.J_carrier, self.J_ring], [self.law("_c"), self.law("_b")],
                              rows=[self.clutch_row(), [0.0, 0.0, 1.0]], members=self.member_map())

    def start_coordinates(self):
        return [self.phi_carrier_start, self.phi_ring_start], [self.w_carrier_start, self.w_ring_start]


def slip_model_error(system, z_sun: int, z_ring: int, clutch_row) -> float:
    """The largest relative deviation of the friction system's slip-space inertia J_R = m_inv,
    of g = J_R^-1 K^T (its accelerations of the slips from the member torques) and of the
    mobility and accelerations of one interface slipping while the other is stuck from their
    forms in slip coordinates (SLIP_MODEL_TOLERANCE): J_R against K^T J K entry by entry, g by
    the residual J_R g - K^T (no inverse) relative to |K^T J K| |g|, the mobility against
    1 / (K^T J K)_jj, the accelerations against K_j^T / (K^T J K)_jj."""
    first, second = (_MEMBER_INDEX_NAMES[i] for i in (clutch_row.index(1.0), clutch_row.index(-1.0)))
    numerators = {m: f(z_sun, z_ring) for m, f in _LAMBDA_NUMERATORS.items()}
    span = numerators[first] - numerators[second]            # > 0: sun, carrier, ring in this order
    k = [[numerators[m] / span, 1.0] for m in _MEMBER_INDEX_NAMES]
    j = system.inertias
    j_r = [[sum(k[i][a] * j[i] * k[i][b] for i in range(3)) for b in range(2)] for a in range(2)]
    worst = max(abs(system.m_inv[a][b] - j_r[a][b]) / j_r[a][b] for a in range(2) for b in range(2))
    g = system.g_of_torques
    for a in range(2):
        for member in range(3):
            residual = sum(j_r[a][b] * g[b][member] for b in range(2)) - k[member][a]
            scale = sum(j_r[a][b] * abs(g[b][member]) for b in range(2))
            if scale:
                worst = max(worst, abs(residual) / scale)
    # one interface stuck, the other slipping: a one-coordinate system of inertia (J_R)_jj
    # driven by K_j^T tau.  The solver forms its mobility, the Schur complement of J_R^-1
    # ((J_R^-1)_jj - (J_R^-1)_ji^2 / (J_R^-1)_ii = 1 / (J_R)_jj), and its acceleration from the
    # member torques, g_j - Q g_i = K_j^T / (J_R)_jj, from entries of J_R^-1 and g that are large
    # beside the result where a member is light (a sun 10^12 times lighter than the carrier:
    # 1.6e-5 off), so both are checked against those exact forms
    for stuck, slipping in ((0, 1), (1, 0)):
        _, q, schur, _ = system._partition((stuck,), (slipping,))
        inertia = j_r[slipping][slipping]
        worst = max(worst, abs(schur[0][0] * inertia - 1.0))
        exact = [k[member][slipping] / inertia for member in range(3)]
        computed = [g[slipping][member] - q[0][0] * g[stuck][member] for member in range(3)]
        worst = max(worst, max(map(abs, map(sub, computed, exact))) / max(map(abs, exact)))
        # the step forms g tau first and this difference of the products after: its rounding
        # is u (|g_j| + |Q| |g_i|) |tau| whatever the rows' own luck
        magnitude = max(abs(g[slipping][member]) + abs(q[0][0] * g[stuck][member]) for member in range(3))
        worst = max(worst, _UNIT_ROUNDOFF * magnitude / max(map(abs, exact)))
    # all stuck: the torques that hold them, J_R (g tau) = K^T tau, likewise from the products
    for a in range(2):
        magnitude = max(sum(abs(j_r[a][b] * g[b][member]) for b in range(2)) for member in range(3))
        worst = max(worst, _UNIT_ROUNDOFF * magnitude / max(abs(k[member][a]) for member in range(3)))
    return worst
