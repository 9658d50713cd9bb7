"""Shaft: linear torsional spring-damper with an ideal gear ratio (compliance element).

    tau = k (phi_rel + w_rel T_comm / 2) + d w_rel,   e_spring = k phi_rel^2 / 2
(solvers.compliance; twist, speeds and signs as in :mod:`fmus.compliance`).  With T_comm = 0 the spring
torque is the one at the communication point; with T_comm = h (the master's step) it is
its mean over the coming step along the twist advanced with the held relative speed,
like NonlinearSpring's (a doStep with another step is refused).
"""
from __future__ import annotations

from drivetrain_fmu.solvers.compliance import spring_damper_torque, spring_energy

from .compliance import ComplianceElement, compliance_variables
from .variables import output, parameter


class Shaft(ComplianceElement):
    """Linear spring-damper between two bodies, optionally through a gear ratio."""

    description = "Torsional spring-damper with ideal gear ratio (compliance element)"
    VARIABLES = (
        parameter("k", "N.m/rad", "torsional stiffness", 5000.0, low=0.0),
        parameter("d", "N.m.s/rad", "torsional damping", 5.0, low=0.0),
        parameter("T_comm", "s", "communication step the spring torque is averaged over "
                  "(0: torque at the communication point)", 0.0, low=0.0),
        *compliance_variables("twist phi_1/ratio - phi_2 + phi_rel_start"),
        output("e_spring", "J", "energy stored in the spring", depends=("phi_1", "phi_2")),
    )

    def transmitted(self, phi_rel, w_rel):
        return {"tau": spring_damper_torque(self.k, self.d, phi_rel, w_rel, self.T_comm),
                "e_spring": spring_energy(self.k, phi_rel)}
