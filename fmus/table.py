"""Table: a signal source, piecewise linear in time (for driving systems described as SSP).

    y(t) = y_i + (y_(i+1) - y_i) (t - t_i) / (t_(i+1) - t_i)   for t_i <= t <= t_(i+1)
held at y_1 before t_1 and at y_n after t_n; with ``hold`` true a staircase instead,
y(t) = y_i for t_i <= t < t_(i+1) (steps such as a torque reversal); solvers.signal.  The output at a communication point is the
table at that time (no input, no feedthrough), so an SSP system can carry its time-varying
inputs (clamp-force ramps, torque steps) as a component instead of master-side code.
"""
from __future__ import annotations

from solvers.signal import table_points, table_value

from .base import ElementSlave
from .variables import BOOLEAN, INTEGER, output, parameter

MAX_POINTS = 6


class Table(ElementSlave):
    """Piecewise-linear function of time with up to six points."""

    description = "Signal source: piecewise-linear table of time (up to six points)"
    VARIABLES = (
        parameter("n_points", None, f"number of table points (1..{MAX_POINTS})", 2, type=INTEGER,
                  low=1, high=MAX_POINTS),
        *(parameter(f"t_{i}", "s", f"time of table point {i}", float(i - 1)) for i in range(1, MAX_POINTS + 1)),
        *(parameter(f"y_{i}", "1", f"value of table point {i}", 0.0) for i in range(1, MAX_POINTS + 1)),
        parameter("hold", None, "staircase (each value held until the next point) instead of linear",
                  False, type=BOOLEAN),
        output("y", "1", "table value at the communication point (unit as wired)"),
    )

    def _count(self):
        n = int(self.n_points)
        return n if 1 <= n <= MAX_POINTS else 1

    def checked_variables(self):
        n = self._count()
        return [v for v in super().checked_variables()
                if v.name in ("n_points", "hold") or int(v.name.rpartition("_")[2]) <= n]

    def cross_check(self):
        n = self._count()
        return [f"t_{i} = {getattr(self, f't_{i}')!r} must be greater than t_{i - 1} = "
                f"{getattr(self, f't_{i - 1}')!r} (table times strictly increasing)"
                for i in range(2, n + 1) if not getattr(self, f"t_{i}") > getattr(self, f"t_{i - 1}")]

    def initial_state(self):
        self._t, self._y = table_points(vars(self))       # parameters checked: n_points is valid
        return self.start_time           # the time of the last communication point

    def encode_state(self, state):
        return state

    def decode_state(self, data):
        return float(data)

    def advance(self, t, h):
        return t + h

    def refresh_outputs(self):
        self.y = table_value(self._t, self._y, self.hold, self.state)
