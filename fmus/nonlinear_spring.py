"""NonlinearSpring: piecewise-affine spring and damper (Reiter ch. 3, eq. 28 and 34).

    tau = F(phi_rel) + D(w_rel)
    F(s) = k_i s + sign(s) F_off,i   for phi_s_(i-1) < |s| <= phi_s_i   (phi_s_0 = 0)
    D(w) = d_j w + sign(w) D_off,j   for w_s_(j-1) < |w| <= w_s_j
with the offsets derived so that F and D are continuous (solvers.pwa.Characteristic),
e_spring = integral of F from 0 to phi_rel, and ``region`` the 1-based spring region.
Twist, speeds and signs as in :mod:`fmus.compliance`.

Step-mean torque.  With ``T_comm`` = 0 the spring torque is F at the communication
point.  With ``T_comm`` = h > 0 (the master's communication step) it is the mean of F
over the coming step along the twist advanced with the held relative speed,
    (V(phi_rel + w_rel h) - V(phi_rel)) / (w_rel h),   V = integral of F,
exact across every region crossing inside the step (V is piecewise quadratic).  The
bodies then receive, for the predicted motion, exactly the work stored in the spring:
an explicit co-simulation of a body on this spring keeps its energy (0.02 % over 100 s
at h = 10 ms, against a 6700-fold growth with the sampled torque; see the tests).
A doStep with another step size than T_comm is refused (fmi2Discard).
"""
from __future__ import annotations

from drivetrain_fmu.solvers.pwa import Characteristic

from .compliance import ComplianceElement, compliance_variables
from .variables import INTEGER, Family, output, parameter

MAX_REGIONS = 4


class NonlinearSpring(ComplianceElement):
    """Symmetric piecewise-affine torsional spring and damper (compliance element)."""

    description = "Piecewise-affine torsional spring and damper, continuous characteristics (Reiter ch. 3)"
    # defaults: R3 nonlinear-spring case 1 (breakpoint 6e-3 rad, 800 -> 20000 N.m/rad)
    VARIABLES = (
        parameter("n_regions", None, f"number of spring regions (1..{MAX_REGIONS})", 2,
                  type=INTEGER, low=1, high=MAX_REGIONS),
        # n regions: stiffnesses k_1 .. k_n and the n - 1 breakpoints between them
        *(parameter(f"phi_s_{i}", "rad", f"breakpoint on |twist| between spring regions {i} and {i + 1}",
                    value, low=0.0, low_open=True, family=Family("phi_s", i, "n_regions", offset=1))
          for i, value in enumerate((6e-3, 0.01, 0.02), start=1)),
        *(parameter(f"k_{i}", "N.m/rad", f"stiffness in spring region {i}", value, low=0.0, low_open=True,
                    family=Family("k", i, "n_regions"))
          for i, value in enumerate((800.0, 20000.0, 20000.0, 20000.0), start=1)),
        parameter("n_damper_regions", None, f"number of damper regions (1..{MAX_REGIONS})", 1,
                  type=INTEGER, low=1, high=MAX_REGIONS),
        *(parameter(f"w_s_{i}", "rad/s", f"breakpoint on |twist rate| between damper regions {i} and {i + 1}",
                    value, low=0.0, low_open=True, family=Family("w_s", i, "n_damper_regions", offset=1))
          for i, value in enumerate((1.0, 2.0, 3.0), start=1)),
        *(parameter(f"d_{i}", "N.m.s/rad", f"damping in damper region {i}", 0.0, low=0.0,
                    family=Family("d", i, "n_damper_regions"))
          for i in range(1, MAX_REGIONS + 1)),
        parameter("T_comm", "s", "communication step the spring torque is averaged over "
                  "(0: torque at the communication point)", 0.0, low=0.0),
        *compliance_variables("twist phi_1/ratio - phi_2 + phi_rel_start"),
        output("region", None, "spring region of the twist (1-based)", type=INTEGER, depends=("phi_1", "phi_2")),
        output("e_spring", "J", "energy stored in the spring (integral of the spring torque)",
               depends=("phi_1", "phi_2")),
    )

    def _count(self, name):
        n = int(getattr(self, name))
        return n if 1 <= n <= MAX_REGIONS else 1

    def family_counts(self):
        # the members in use are declared in VARIABLES; a count outside its range (reported
        # by its check) stands for one region
        return {name: self._count(name) for name in ("n_regions", "n_damper_regions")}

    def cross_check(self):
        problems = []
        for n_name, bp in (("n_regions", "phi_s"), ("n_damper_regions", "w_s")):
            for i in range(2, self._count(n_name)):
                lower, upper = getattr(self, f"{bp}_{i - 1}"), getattr(self, f"{bp}_{i}")
                if not upper > lower:
                    problems.append(f"{bp}_{i} = {upper!r} must be greater than {bp}_{i - 1} = {lower!r} "
                                    f"(breakpoints strictly increasing); allowed range ({lower!r}, inf)")
        return problems

    def _characteristic(self, n_name, bp, slope):
        n = self._count(n_name)
        return Characteristic((0.0,) + tuple(getattr(self, f"{bp}_{i}") for i in range(1, n)),
                              tuple(getattr(self, f"{slope}_{i}") for i in range(1, n + 1)))

    def initial_state(self):
        self.spring = self._characteristic("n_regions", "phi_s", "k")
        self.damper = self._characteristic("n_damper_regions", "w_s", "d")
        return ()

    def spring_torque(self, phi_rel, w_rel):
        """F(phi_rel), or its mean over the coming step (module docstring)."""
        travel = w_rel * self.T_comm
        if travel == 0.0:
            return self.spring.value(phi_rel)
        return (self.spring.potential(phi_rel + travel) - self.spring.potential(phi_rel)) / travel

    def transmitted(self, phi_rel, w_rel):
        return {"tau": self.spring_torque(phi_rel, w_rel) + self.damper.value(w_rel),
                "region": self.spring.region(phi_rel) + 1,
                "e_spring": self.spring.potential(phi_rel)}
