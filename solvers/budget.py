"""Work budgets: every doStep has a bounded cost.

Every loop of the solvers whose number of iterations depends on parameters, inputs or the
step size h (integration substeps, stick/slip and contact events, crossing-search
evaluations) counts its iterations of one communication step against a budget

    limit(h) = min(floor + per_second * h, cap)

and a step that would exceed it is refused with :class:`BudgetExceeded`, whose message
names the solver, what was counted, the limit and its terms, and what to change (the
FMU then returns fmi2Discard and keeps the state of the last communication point).

* ``per_second``: the work proportional to the step: the rate a long step may sustain,
  set by what the element must resolve (each budget states it, e.g. the stiffest
  dynamics DOPRI5 can follow at that many steps per second);
* ``floor``: what any step may use whatever its length, for the bursts of work around an
  event: the documented systems use at most 44 integration steps, 1 stick/slip or 3
  contact events and 610 crossing-search halvings in one step (measured on every catalog
  system at its own step; peaks of up to 6e4 integration steps per simulated second
  inside one short step), each floor 10 to 100 times that;
* ``cap``: the absolute bound, so that no single doStep runs for more than one to three
  seconds of CPU measured here on a loaded machine (each budget states its cost per
  unit); a host whose long step needs more is told to take a smaller one, which lowers
  the count (or, for a model too stiff at any step, what to change).

A system FMU (systems/composite_slave.py) knows its work before it starts: a host step is
a whole number of internal steps, each stepping every element once; its budget is the cap
alone (floor = cap, per_second = 0), on the element steps of one doStep.

The loops with a fixed bound that does not depend on the inputs (Lemke's pivots,
regula falsi and Newton iterations, dense factorizations, the stuck-set enumeration)
state it where they are.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from .contract import StepError


class BudgetExceeded(StepError):
    """A step that needs more work than its budget (module docstring)."""


@dataclass(frozen=True)
class Budget:
    """``floor + per_second * h``, at most ``cap``, of ``what`` in one step of h seconds."""

    what: str
    floor: int
    per_second: float
    cap: int
    # limit(h) of the step sizes asked so far (a host repeats its step: computed once per size);
    # hash=False says what compare=False implies, for the compiled record (budget.pxd) too
    _limits: dict = field(default_factory=dict, init=False, repr=False, compare=False, hash=False)

    def limit(self, h: float) -> int:
        """The number of ``what`` allowed in one step of ``h`` seconds (h > 0, finite)."""
        known = self._limits.get(h)
        if known is not None:
            return known
        if not h > 0.0:
            return self.floor
        share = self.per_second * h
        limit = self.cap if share >= self.cap else min(self.floor + int(math.ceil(share)), self.cap)
        if len(self._limits) < 64:          # a host changing its step at every step: not kept
            self._limits[h] = limit
        return limit

    def terms(self, h: float) -> str:
        if self.per_second == 0.0 and self.floor == self.cap:      # a work counted in advance
            return f"{self.cap} whatever h"
        return (f"min({self.floor} + {self.per_second:g}/s x h, {self.cap}) = {self.limit(h)} "
                f"for h = {h!r} s")

    def exceeded(self, who: str, h: float, advice: str) -> BudgetExceeded:
        """The error of a step of ``h`` that needs more than ``limit(h)``."""
        return BudgetExceeded(f"{who}: more than {self.limit(h)} {self.what} in one step "
                              f"(budget {self.terms(h)}): {advice}")
