"""LockupControl: the lock-up command of a torque converter, the rule a transmission control
unit applies: once the converter's speed ratio SR = w_out / w_in has reached SR_on (with the
input turning at w_in_min or faster, where the ratio means something), apply the lock-up
clutch and keep it applied.

Switch (at a communication point t, with the speeds connected there)
    on(t) = on(t-) or (w_in >= w_in_min and w_out >= SR_on w_in)                    (1)
the product form of SR >= SR_on, defined at w_in = 0 as well; the instant it first holds is
t_on, remembered (a latch: one launch engages the clutch once; the state).
Clamp force, ramped as the clutch's apply pressure rises,
    f_n(t) = 0                                   before t_on
           = f_on min(1, (t - t_on) / t_ramp)     from t_on (t_ramp = 0: f_on at once)  (2)
f_n and on follow the speeds of the same point without delay (outputs that depend on the
inputs), so the clutch command changes at the first communication point where (1) holds:
a communication step h after the crossing of SR_on at most.

Left out: unlocking (a coasting or kick-down rule), a pressure model of the apply piston,
and hysteresis (a latch needs none).
"""
from __future__ import annotations

import math

from .model import Model
from .variables import BOOLEAN, input_, output, parameter

_SPEEDS = ("w_in", "w_out")


def clamp_force(f_on: float, t_ramp: float, t_on: float, t: float) -> float:
    """Eq. 2: the clamp force at time t of a switch that came on at t_on (inf: not yet)."""
    if not t >= t_on:
        return 0.0
    if not t - t_on < t_ramp:
        return f_on
    return f_on * ((t - t_on) / t_ramp)


class LockupControl(Model):
    """Lock-up clutch command: f_on, ramped over t_ramp, from the first point where the speed
    ratio w_out / w_in reaches SR_on (defaults: SR_on 0.85, 4000 N over 0.2 s; unconnected, the
    speeds 100 and 90 rad/s switch it on at the start)."""

    description = "Lock-up command: clamp force ramped up once the speed ratio w_out / w_in reaches SR_on"
    KIND = "source"              # speed inputs, yet no compliance: it joins no two bodies
    DEFAULT_STOP = 1.0
    VARIABLES = (
        parameter("SR_on", "1", "speed ratio w_out / w_in at which the clutch is applied", 0.85,
                  low=0.0, low_open=True),
        parameter("w_in_min", "rad/s", "input speed below which the ratio is not judged", 10.0,
                  low=0.0, low_open=True),
        parameter("f_on", "N", "clamp force applied (reached t_ramp after the switch)", 4000.0, low=0.0),
        parameter("t_ramp", "s", "time the clamp force takes to rise from 0 to f_on", 0.2, low=0.0),
        input_("w_in", "rad/s", "speed of the converter's input (the pump)", 100.0),
        input_("w_out", "rad/s", "speed of the converter's output (the turbine)", 90.0),
        output("f_n", "N", "clamp force of the lock-up clutch", depends=_SPEEDS),
        output("on", None, "the lock-up is applied (the ratio has reached SR_on)", type=BOOLEAN,
               depends=_SPEEDS),
        output("t_on", "s", "time the lock-up was applied; -1 before"),
    )

    def initial_state(self):
        """(time of the communication point, t_on: inf before the switch)."""
        return (self.start_time, math.inf)

    def encode_state(self, state):
        t, t_on = state
        return [t, None if t_on == math.inf else t_on]

    def decode_state(self, data):
        t, t_on = data
        return (float(t), math.inf if t_on is None else float(t_on))

    def _switched(self, inputs) -> float:
        """t_on after eq. 1 at this point with the speeds ``inputs``."""
        t, t_on = self.state
        w_in, w_out = inputs
        if t_on == math.inf and w_in >= self.w_in_min and w_out >= self.SR_on * w_in:
            return t
        return t_on

    def step(self, t, h, prepared):
        return (t + h, self._switched(prepared))

    def outputs(self):
        t_on = self.state[1]
        self.t_on = -1.0 if t_on == math.inf else t_on
        return (self.t_on,)

    def feedthrough(self, prepared):
        t_on = self._switched(prepared)
        return {"f_n": clamp_force(self.f_on, self.t_ramp, t_on, self.state[0]), "on": t_on != math.inf}
