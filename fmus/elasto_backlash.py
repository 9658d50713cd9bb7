"""ElastoBacklash: clearance with a compliant contact that never pulls; the contact laws are
:mod:`solvers.elasto_backlash` (law 1: Flores's k p^n + c p^n p'; law 2: MSL 4.0's
ElastoBacklash, a spring c and a damper d limited by the spring).
Twist, speeds and signs as in :mod:`fmus.compliance` (tau_2 = +tau, tau_1 = -tau/ratio).

Step-mean torque.  With ``T_comm`` = 0 the torque is the contact law at the communication
point.  With ``T_comm`` = h > 0 (the master's communication step) it is the law's mean over
the coming step along the twist advanced with the held relative speed, phi_rel + w_rel s,
integrated exactly across the dead zone, either contact and the law's own pieces
(:func:`solvers.elasto_backlash.path_pieces`, ``mean_torque``), like Shaft's and
NonlinearSpring's spring torques: an explicit co-simulation stops feeding energy into every
contact.  ``contact`` and ``penetration`` stay those of the point.  A doStep with another step
size than T_comm is refused (fmi2Discard), as for Shaft.
"""
from __future__ import annotations

from drivetrain_fmu.solvers.elasto_backlash import FLORES, INITIAL, MSL, ContactMemory, FloresContact, LimitedSpringDamper

from .compliance import ComplianceElement, compliance_variables
from .variables import INTEGER, output, parameter


class ElastoBacklash(ComplianceElement):
    """Dead zone of +-b, then a stiff, damped, never-pulling contact."""

    stateless = False        # the contact memory (solvers.elasto_backlash.ContactMemory)

    description = ("Clearance with a compliant contact that never pulls: Flores/Virlez law k p^n with "
                   "restitution damping, or MSL's ElastoBacklash spring-damper")
    VARIABLES = (
        parameter("law", None, f"contact law: {FLORES} = Flores/Virlez, stiffness k p^n with damping tuned to e_rest "
                  f"(k, n_exp, e_rest, w_impact_min); {MSL} = MSL ElastoBacklash, spring c and damper d "
                  "limited by the spring (c, d)", FLORES,
                  type=INTEGER, low=FLORES, high=MSL),
        parameter("b", "rad", "half clearance (dead zone of phi_rel is [-b, +b]; MSL's total backlash is 2 b)",
                  1e-4, low=0.0),
        parameter("k", "N.m/rad", "law 1: contact stiffness k (torque k p^n, unit for n = 1)", 1e6, low=0.0, low_open=True),
        parameter("n_exp", None, "law 1: exponent n of the contact law (1 linear, 1.5 Hertz)", 1.5, low=1.0),
        parameter("e_rest", None, "law 1: coefficient of restitution the damping is tuned for", 0.5,
                  low=0.0, high=1.0, low_open=True),
        parameter("w_impact_min", "rad/s", "law 1: lower limit of the impact speed in the damping law", 1e-3,
                  low=0.0, low_open=True),
        parameter("c", "N.m/rad", "law 2: stiffness of the spring on the penetration", 1e6, low=0.0),
        parameter("d", "N.m.s/rad", "law 2: damping of the damper on the penetration speed (limited by the spring)",
                  0.0, low=0.0),
        parameter("T_comm", "s", "communication step the contact torque is averaged over, both laws "
                  "(0: torque at the communication point)", 0.0, low=0.0),
        *compliance_variables("relative angle phi_1/ratio - phi_2 + phi_rel_start"),
        output("contact", None, "contact side: +1 beyond +b, -1 beyond -b, 0 in the dead zone",
               type=INTEGER, depends=("phi_1", "phi_2")),
        output("penetration", "rad", "penetration p = |phi_rel| - b in contact, else 0", depends=("phi_1", "phi_2")),
    )

    def initial_state(self):
        if int(self.law) == MSL:
            self._law = LimitedSpringDamper(self.b, self.c, self.d)
        else:
            self._law = FloresContact(self.b, self.k, self.n_exp, self.e_rest, self.w_impact_min)
        return INITIAL

    def encode_state(self, state):
        return state.to_json()

    def decode_state(self, data):
        return ContactMemory.from_json(data)

    def _relative(self):
        """(phi_rel, w_rel) at the inputs set now."""
        return self.phi_1 / self.ratio - self.phi_2 + self.phi_rel_start, self.w_1 / self.ratio - self.w_2

    def transmitted(self, phi_rel, w_rel):
        contact = self._law.contact(self.state, phi_rel, w_rel)
        tau = self._law.mean_torque(self.state, phi_rel, w_rel, self.T_comm) if self.T_comm > 0.0 else contact.tau
        return {"tau": tau, "contact": contact.side, "penetration": contact.penetration}

    def nonfinite_cause(self) -> str:
        return self._law.nonfinite_cause(self.state, *self._relative(), self.T_comm)

    def step(self, t, h, inputs):
        ComplianceElement.step(self, t, h, inputs)      # refuses a step other than T_comm > 0
        return self._law.remember(self.state, *self._relative())
