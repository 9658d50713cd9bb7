"""Compliance elements: no inertia, torques from the states of the two bodies they join.

    phi_rel = phi_1 / ratio - phi_2 + phi_rel_start,   w_rel = w_1 / ratio - w_2
    tau_2 = +tau (on body 2),   tau_1 = -tau / ratio (on body 1)
with ``tau`` the torque the element transmits for the twist phi_rel (positive twist:
body 1 ahead of body 2 through the ideal gear at body 1).  All outputs follow the
inputs without delay (direct feedthrough) and the element has no state of its own, so
a master may evaluate it after the bodies at every communication point.
"""
from __future__ import annotations

from drivetrain_fmu.solvers.compliance import twist

from .model import StatelessModel
from .variables import input_, output, parameter

STEP_ROUNDING = 1e-9    # relative difference from T_comm accepted as rounding of the time
SLIVER = 1e-6           # a remainder step accepted at the end of a run, relative to T_comm

FLANGE_INPUTS = ("phi_1", "w_1", "phi_2", "w_2")


def compliance_variables(relative: str):
    """The variables every compliance element shares (``relative`` describes the twist)."""
    return (
        parameter("ratio", None, "gear ratio phi_1/phi_2 of the ideal gear at body 1", 1.0,
                  low=0.0, low_open=True),
        parameter("phi_rel_start", "rad", "pre-twist added to phi_1/ratio - phi_2", 0.0),
        input_("phi_1", "rad", "angle of body 1"),
        input_("w_1", "rad/s", "speed of body 1"),
        input_("phi_2", "rad", "angle of body 2"),
        input_("w_2", "rad/s", "speed of body 2"),
        output("tau_1", "N.m", "torque the element applies to body 1", depends=FLANGE_INPUTS),
        output("tau_2", "N.m", "torque the element applies to body 2", depends=FLANGE_INPUTS),
        output("phi_rel", "rad", relative, depends=("phi_1", "phi_2")),
    )


class ComplianceElement(StatelessModel):
    """Stateless two-flange element; subclasses give ``transmitted(phi_rel, w_rel)``."""

    def transmitted(self, phi_rel: float, w_rel: float) -> dict:
        """{'tau': torque transmitted, other outputs...} for the current twist."""
        raise NotImplementedError

    def step(self, t, h, prepared):
        """Stateless; an element averaging over T_comm (Shaft, NonlinearSpring) takes the
        steps its torque outputs were computed for:

        * h = T_comm to rounding, |h - T_comm| <= STEP_ROUNDING T_comm (1e-9: a master that
          accumulates t += h over 10^6 steps is off by about 1e-10 T_comm);
        * a remainder h <= SLIVER T_comm (1e-6) that such a master adds at the end of a run
          (OMSimulator: 1.09e-13 s after 10 s at 1 ms): the torque held over it moves the
          bodies by at most a millionth of a step's impulse;
        * any other step is refused (fmi2Discard): the averaged torque would be wrong."""
        t_comm = getattr(self, "T_comm", 0.0)
        if t_comm > 0.0 and abs(h - t_comm) > STEP_ROUNDING * t_comm and h > SLIVER * t_comm:
            raise ValueError(f"communication step h = {h!r} differs from T_comm = {t_comm!r} "
                             "that the torque outputs were averaged over (allowed: T_comm to "
                             f"{STEP_ROUNDING:g} relative, or a final remainder up to {SLIVER:g} T_comm)")
        return ()

    def feedthrough(self, inputs):
        phi_1, w_1, phi_2, w_2 = inputs     # FLANGE_INPUTS: the only inputs compliance_variables declares
        ratio = self.ratio
        phi_rel, w_rel = twist(phi_1, w_1, phi_2, w_2, ratio, self.phi_rel_start)
        values = self.transmitted(phi_rel, w_rel)
        tau = values.pop("tau")
        return {"tau_1": -tau / ratio, "tau_2": tau, "phi_rel": phi_rel, **values}
