"""Table sources: piecewise-linear functions of time (for driving systems described as SSP).

    y(t) = y_i + (y_(i+1) - y_i) (t - t_i) / (t_(i+1) - t_i)   for t_i <= t <= t_(i+1)
held at y_1 before t_1 and at y_n after t_n; with ``hold`` true a staircase instead,
y(t) = y_i for t_i <= t < t_(i+1) (steps such as a torque reversal); solvers.signal.  The output at a communication point is the
table at that time (no input, no feedthrough), so an SSP system can carry its time-varying
inputs (clamp-force ramps, torque steps) as a component instead of master-side code.

FMI units are fixed in modelDescription.xml and hosts such as OMSimulator refuse a
connection between different units, so each physical quantity has its own source, one
declaration each (:func:`table_variables`): ``TorqueTable`` (N.m) drives a torque input,
``ForceTable`` (N) a clamp force, ``SpeedTable`` (rad/s) a speed input together with its
angle (phi = phi_start + the exact integral of the table, as MSL's Rotational.Sources.Speed),
and ``Table`` a dimensionless signal (an engine's throttle).
"""
from __future__ import annotations

from drivetrain_fmu.solvers.signal import table_integral, table_points, table_value

from .model import ClockedModel
from .variables import BOOLEAN, INTEGER, Family, output, parameter

MAX_POINTS = 6


def table_variables(unit: str, quantity: str, outputs=None) -> tuple:
    """The parameters of a table of ``quantity`` in ``unit`` and its outputs (default: one
    output ``y``, the table value); the points t_i, y_i are members i of the families "t"
    and "y" counted by ``n_points``."""
    return (
        parameter("n_points", None, f"number of table points (1..{MAX_POINTS})", 2, type=INTEGER,
                  low=1, high=MAX_POINTS),
        *(parameter(f"t_{i}", "s", f"time of table point {i}", float(i - 1), family=Family("t", i, "n_points"))
          for i in range(1, MAX_POINTS + 1)),
        *(parameter(f"y_{i}", unit, f"{quantity} at table point {i}", 0.0, family=Family("y", i, "n_points"))
          for i in range(1, MAX_POINTS + 1)),
        parameter("hold", None, "staircase (each value held until the next point) instead of linear",
                  False, type=BOOLEAN),
        *(outputs or (output("y", unit, f"{quantity} at the communication point"),)),
    )


class Table(ClockedModel):
    """Piecewise-linear function of time with up to six points: a dimensionless signal."""

    description = "Signal source: piecewise-linear table of time (up to six points), dimensionless"
    VARIABLES = table_variables("1", "value")

    def _count(self):
        n = int(self.n_points)
        return n if 1 <= n <= MAX_POINTS else 1

    def family_counts(self):
        # points t_i, y_i in use: i <= n_points (declared in table_variables); an n_points
        # outside its range (reported by its check) stands for one point
        return {"n_points": self._count()}

    def cross_check(self):
        n = self._count()
        return [f"t_{i} = {getattr(self, f't_{i}')!r} must be greater than t_{i - 1} = "
                f"{getattr(self, f't_{i - 1}')!r} (table times strictly increasing)"
                for i in range(2, n + 1) if not getattr(self, f"t_{i}") > getattr(self, f"t_{i - 1}")]

    def initial_state(self):
        self._t, self._y = table_points(vars(self))       # parameters checked: n_points is valid
        return super().initial_state()

    def outputs(self):
        self.y = y = table_value(self._t, self._y, self.hold, self.state)
        return (y,)                     # its one state output, for doStep's screen


class TorqueTable(Table):
    """Torque source: a table of time in N.m."""

    description = "Torque source: piecewise-linear table of time (up to six points) in N.m"
    VARIABLES = table_variables("N.m", "torque")


class ForceTable(Table):
    """Force source (e.g. a clutch's clamp force): a table of time in N."""

    description = "Force source: piecewise-linear table of time (up to six points) in N"
    VARIABLES = table_variables("N", "force")


class SpeedTable(Table):
    """Speed source: a table of time in rad/s, with the angle it turns."""

    description = ("Speed source: piecewise-linear table of time (up to six points) in rad/s, "
                   "with its angle (the exact integral)")
    VARIABLES = table_variables("rad/s", "speed", outputs=(
        parameter("phi_start", "rad", "angle at the start time", 0.0),
        output("phi", "rad", "angle: phi_start plus the integral of the speed since the start time"),
        output("w", "rad/s", "speed at the communication point"),
    ))

    def initial_state(self):
        super().initial_state()
        return (self.start_time, self.start_time)  # (start time, time of the last communication point)

    def encode_state(self, state):
        return list(state)

    def decode_state(self, data):
        start, t = data
        return (float(start), float(t))

    def step(self, t, h, inputs):
        return (self.state[0], t + h)

    def outputs(self):
        start, t = self.state
        self.w = table_value(self._t, self._y, self.hold, t)
        self.phi = self.phi_start + (table_integral(self._t, self._y, self.hold, t)
                                     - table_integral(self._t, self._y, self.hold, start))
