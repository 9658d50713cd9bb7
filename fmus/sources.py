"""Torque sources with a law of their own (the Table elements are piecewise linear):

* SineTorque: y = offset + amplitude sin(2 pi f (t - t_start) + phase) for t_start <= t <
  t_stop, offset otherwise (MSL Blocks.Sources.Sine driving a Rotational.Sources.Torque;
  t_stop switches it off, as MSL's Friction example does with a step);
* SpeedDependentTorque: tau = tau_nominal (w / w_nominal)^2 of the speed input w (MSL
  Rotational.Sources.QuadraticSpeedDependentTorque: a fan, a pump or aerodynamic drag).

Both output their law at the communication point (SineTorque: at the time of the point,
like the tables; SpeedDependentTorque: at the speed set now, a feedthrough).
"""
from __future__ import annotations

import math
import sys

from drivetrain_fmu.solvers.signal import gated_sine, quadratic_speed_torque

from .model import ClockedModel, StatelessModel
from .variables import BOOLEAN, input_, output, parameter


class SineTorque(ClockedModel):
    """Sinusoidal torque switched on at t_start and off at t_stop."""

    description = "Torque source: offset + amplitude sin(2 pi f (t - t_start) + phase) between t_start and t_stop"
    DEFAULT_STOP = 1.0
    VARIABLES = (
        parameter("amplitude", "N.m", "amplitude of the sine", 1.0),
        parameter("f", "1/s", "frequency of the sine [Hz]", 1.0, low=0.0),
        parameter("phase", "rad", "phase of the sine at t_start", 0.0),
        parameter("offset", "N.m", "torque added at all times", 0.0),
        parameter("t_start", "s", "time the sine starts", 0.0),
        parameter("t_stop", "s", "time the sine stops (the offset remains); default: beyond any run",
                  1e9),
        output("y", "N.m", "torque at the communication point"),
    )

    def cross_check(self):
        if not self.t_stop > self.t_start:
            return [f"t_stop = {self.t_stop!r} must be greater than t_start = {self.t_start!r}"]
        return []

    def outputs(self):
        self.y = gated_sine(self.amplitude, self.f, self.phase, self.offset, self.t_start, self.t_stop,
                            self.state)


class SpeedDependentTorque(StatelessModel):
    """Load torque growing with the square of the speed (a fan, a pump, air drag)."""

    description = "Torque source: tau_nominal (w / w_nominal)^2 of the speed input (MSL QuadraticSpeedDependentTorque)"
    KIND = "source"              # a speed input, yet no compliance: it joins no two bodies
    DEFAULT_STOP = 1.0
    VARIABLES = (
        parameter("tau_nominal", "N.m", "torque at the nominal speed (negative: a load on a body turning "
                  "forward)", -1.0),
        parameter("w_nominal", "rad/s", "nominal speed", 1.0, low=0.0, low_open=True),
        parameter("opposes_motion", None, "the torque changes sign with the speed (false: always the sign "
                  "of tau_nominal, MSL's TorqueDirection = true)", False, type=BOOLEAN),
        input_("w", "rad/s", "speed of the body the torque acts on"),
        output("tau", "N.m", "torque on the body, positive accelerating it", depends=("w",)),
    )

    def nonfinite_cause(self) -> str:
        # tau_nominal (w / w_nominal)^2 is computed to rounding wherever it is a float
        # (solvers.signal); beyond the largest float it has no value to return (tau_nominal = 0
        # never gets here: the torque is then 0 at every speed)
        limit = math.sqrt(sys.float_info.max / abs(self.tau_nominal)) * self.w_nominal
        return (f"|tau_nominal| (w / w_nominal)^2 exceeds the largest float {sys.float_info.max:.4g} N.m: with "
                f"tau_nominal = {self.tau_nominal!r} and w_nominal = {self.w_nominal!r}, |w| must stay below "
                f"{limit:.6g} rad/s")

    def feedthrough(self, inputs):
        return {"tau": quadratic_speed_torque(self.tau_nominal, self.w_nominal, self.w, self.opposes_motion)}
