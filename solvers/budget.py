"""Work budgets: every doStep has a bounded cost.

Every loop of the solvers whose number of iterations depends on parameters, inputs or the
step size h (integration substeps, stick/slip and contact events, crossing-search
evaluations) counts its iterations of one communication step against a budget

    limit(h) = min(floor + per_second * h, cap)

and a step that would exceed it is refused with :class:`BudgetExceeded`, whose message
names the solver, what was counted, the limit and its terms, and what to change (the
FMU then returns fmi2Discard and keeps the state of the last communication point).

* ``per_second``: the work proportional to the step, far above what the documented
  systems need per simulated second (each budget states its margin);
* ``floor``: what a step needs whatever its length (a burst of events at one instant,
  the first integration steps), far above the most measured in one step;
* ``cap``: the absolute bound, so no single doStep runs for more than about a second
  of CPU here (each budget states its measured cost per unit); a host with a long
  step that needs more is told to take a smaller one, which lowers the count.

The loops with a fixed bound that does not depend on the inputs (Lemke's pivots,
regula falsi and Newton iterations, dense factorizations, the stuck-set enumeration)
state it where they are.
"""
from __future__ import annotations

import math
from dataclasses import dataclass


class StepError(RuntimeError):
    """A step that cannot be taken; the caller keeps its previous state."""


class BudgetExceeded(StepError):
    """A step that needs more work than its budget (module docstring)."""


@dataclass(frozen=True)
class Budget:
    """``floor + per_second * h``, at most ``cap``, of ``what`` in one step of h seconds."""

    what: str
    floor: int
    per_second: float
    cap: int

    def limit(self, h: float) -> int:
        """The number of ``what`` allowed in one step of ``h`` seconds (h > 0, finite)."""
        if not h > 0.0:
            return self.floor
        share = self.per_second * h
        return self.cap if share >= self.cap else min(self.floor + int(math.ceil(share)), self.cap)

    def terms(self, h: float) -> str:
        return (f"min({self.floor} + {self.per_second:g}/s x h, {self.cap}) = {self.limit(h)} "
                f"for h = {h!r} s")

    def exceeded(self, who: str, h: float, advice: str) -> BudgetExceeded:
        """The error of a step of ``h`` that needs more than ``limit(h)``."""
        return BudgetExceeded(f"{who}: more than {self.limit(h)} {self.what} in one step "
                              f"(budget {self.terms(h)}): {advice}")
