"""ElastoBacklash: clearance with a compliant contact; the contact law is
:mod:`solvers.elasto_backlash` (law 1: Flores's k p^n + c p^n p', never pulling).
Twist, speeds and signs as in :mod:`fmus.compliance` (tau_2 = +tau, tau_1 = -tau/ratio).
"""
from __future__ import annotations

from solvers.elasto_backlash import INITIAL, ContactMemory, FloresContact

from .compliance import ComplianceElement, compliance_variables
from .variables import INTEGER, output, parameter


class ElastoBacklash(ComplianceElement):
    """Dead zone of +-b, then a stiff, damped, never-pulling contact."""

    description = "Clearance with compliant contact k p^n + c p^n p' (Flores/Virlez law), never pulling"
    VARIABLES = (
        parameter("b", "rad", "half clearance (dead zone of phi_rel is [-b, +b])", 1e-4, low=0.0),
        parameter("k", "N.m/rad", "contact stiffness k (torque k p^n, unit for n = 1)", 1e6, low=0.0, low_open=True),
        parameter("n_exp", None, "exponent n of the contact law (1 linear, 1.5 Hertz)", 1.5, low=1.0),
        parameter("e_rest", None, "coefficient of restitution the damping is tuned for", 0.5,
                  low=0.0, high=1.0, low_open=True),
        parameter("w_impact_min", "rad/s", "lower limit of the impact speed in the damping law", 1e-3,
                  low=0.0, low_open=True),
        *compliance_variables("relative angle phi_1/ratio - phi_2 + phi_rel_start"),
        output("contact", None, "contact side: +1 beyond +b, -1 beyond -b, 0 in the dead zone",
               type=INTEGER, depends=("phi_1", "phi_2")),
        output("penetration", "rad", "penetration p = |phi_rel| - b in contact, else 0", depends=("phi_1", "phi_2")),
    )

    def initial_state(self):
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
        return {"tau": contact.tau, "contact": contact.side, "penetration": contact.penetration}

    def nonfinite_cause(self) -> str:
        return self._law.nonfinite_cause(self.state, *self._relative())

    def advance(self, t, h):
        return self._law.remember(self.state, *self._relative())
