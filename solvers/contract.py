"""What every solver of this package takes, returns and raises.

* Takes: an immutable state, the inputs (held constant over the step) and the step
  ``h`` (finite, > 0), checked once at the solver's entry with messages naming the value.
* Returns: ``advance(...)`` the new state; ``step(...)`` a :class:`StepResult`, the new
  state and the events inside the step, in order (each solver's records start with the
  event's time from the start of the step and name what happened there).
* Raises: :class:`SolverError` (or a subclass: :class:`solvers.budget.StepError`,
  ``BudgetExceeded``, ``IntegrationError``, ``LcpError``, ``SearchBudgetExceeded``,
  ``SingularMatrixError``) for a step or a model that cannot be computed, with a message
  naming the cause and what to change; the state passed in is never modified (it is
  immutable), so the caller keeps its previous state.  Errors in the arguments of a
  constructor (a parameter out of range) are ValueError naming the argument.

Constants shared by several solvers are defined here once.
"""
from __future__ import annotations

import math
from typing import Any, NamedTuple

#: standard gravity [m/s2]
GRAVITY = 9.81


class SolverError(RuntimeError):
    """A step or model the solver cannot compute; the caller keeps its previous state."""


class StepError(SolverError):
    """A step that cannot be taken; the caller keeps its previous state."""


def check_step(h: float, **inputs: float) -> None:
    """StepError naming the value unless h is finite and > 0 and every input is finite."""
    if not 0.0 < h < math.inf:
        raise StepError(f"step h = {h!r} must be finite and > 0")
    for name, value in inputs.items():
        if not math.isfinite(value):
            raise StepError(f"input {name} = {value!r} must be finite")


class StepResult(NamedTuple):
    """The state after one step and the events inside it: ``events`` holds one record per
    event, in order; a record is a tuple whose first item is the event's time from the
    start of the step (the rest is the solver's: the friction interface, the backlash
    event kind, the oscillator's position and speed, the tire)."""

    state: Any
    events: tuple = ()

    @property
    def n_events(self) -> int:
        return len(self.events)

    @property
    def event_times(self) -> tuple[float, ...]:
        return tuple(record[0] for record in self.events)
