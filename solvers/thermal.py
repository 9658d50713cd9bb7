"""Lumped thermal model of one friction interface: a heat capacity heated by its friction
and cooled to an ambient temperature, and a friction coefficient that depends on it.

Model (one lumped capacity per interface, as in a heat-transfer textbook's lumped-capacity
analysis, Biot number small, and in the thermal variants of Simscape Driveline's clutches)
    C dT/dt = P(t) - G (T - T_amb)
with C [J/K] the heat capacity of the interface's plates, G [W/K] the heat-transfer
coefficient (conductance) to the ambient at T_amb (held over a step, as every input is),
P [W] the power the interface dissipates.

Friction (linear law)
    mu(T) = mu_ref (1 + c_mu_T (T - T_ref))
one relative coefficient c_mu_T [1/K] for mu_s and mu_k, so mu_k <= mu_s at every
temperature; c_mu_T = 0 is no dependence.  A temperature where 1 + c_mu_T (T - T_ref) < 0
(mu negative) is outside the law: :meth:`InterfaceHeat.check` raises, naming it.

Coupling (explicit, first order in h).  The friction step of a communication step uses the
capacities at the temperature of the step's start (they are held over the step like the
clamp force f_n); the friction step gives the energy Q the interface dissipated in the step
(solvers.friction), and the temperature is then advanced with that power taken uniform over
the step, P = Q / h.  With x = G h / C the linear ODE has the exact solution
    T(h) = T_amb + P/G + (T0 - T_amb - P/G) exp(-x)
written as
    T(h) - T0 = (Q / C) (1 - exp(-x)) / x - (T0 - T_amb) (1 - exp(-x))
with 1 - exp(-x) = -expm1(-x), so that a tiny x (a large capacity, a short step) loses no
digits, and G = 0 (x = 0) gives T0 + Q / C exactly.  The heat transferred to the ambient
over the step is the integral of G (T - T_amb) along that solution,
    Q (1 - (1 - exp(-x)) / x) + C (T0 - T_amb) (1 - exp(-x))
(exactly 0 for G = 0), which by the ODE equals Q - C (T(h) - T0): dissipated = stored +
transferred holds per interface and per step, computed by two formulas that agree to
rounding.  For a
constant P the composition of these steps is the exact solution at every communication
point; with a varying P the temperature is first order in h (P's step mean is exact, its
distribution inside the step is not).
"""
from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class InterfaceHeat:
    """Thermal law of one friction interface (module docstring).

    c_th    heat capacity C [J/K], > 0
    g_th    heat-transfer coefficient G to the ambient [W/K], >= 0
    t_ref   temperature where mu = mu_ref [K]
    c_mu_t  relative temperature coefficient of the friction coefficients [1/K]
    """

    c_th: float
    g_th: float
    t_ref: float
    c_mu_t: float

    def friction_factor(self, temperature: float) -> float:
        """mu(T) / mu_ref = 1 + c_mu_T (T - T_ref)."""
        return 1.0 + self.c_mu_t * (temperature - self.t_ref)

    def limit(self) -> float:
        """The temperature where mu(T) = 0 [K] (inf for c_mu_T = 0): the law holds below it
        for c_mu_T < 0, above it for c_mu_T > 0."""
        return self.t_ref - 1.0 / self.c_mu_t if self.c_mu_t else math.inf

    def problem(self, temperature: float, names: tuple[str, str, str]) -> str | None:
        """None when mu(T) >= 0 at ``temperature``; else why not, naming the temperature, the
        coefficient, the reference and the limit (``names``: the FMU names of T, c_mu_T and
        T_ref)."""
        if self.friction_factor(temperature) >= 0.0:
            return None
        t_name, c_name, ref_name = names
        side = "up to" if self.c_mu_t < 0.0 else "down to"
        return (f"{t_name} = {temperature!r} K makes the friction coefficients negative: "
                f"mu = mu_ref (1 + {c_name} (T - {ref_name})) with {c_name} = {self.c_mu_t!r} 1/K and "
                f"{ref_name} = {self.t_ref!r} K holds {side} T = {self.limit()!r} K")

    def advance(self, t0: float, q: float, h: float, t_amb: float) -> tuple[float, float]:
        """(T(h), heat transferred to the ambient over the step [J]) from T(0) = ``t0`` with
        the energy ``q`` [J] dissipated uniformly over the step ``h`` (module docstring)."""
        c = self.c_th
        x = self.g_th * h / c
        decay = -math.expm1(-x)                 # 1 - exp(-x)
        kept = decay / x if x > 0.0 else 1.0    # (1 - exp(-x)) / x: 1 at G = 0
        excess = t0 - t_amb
        rise = q / c * kept - excess * decay
        transferred = q * (1.0 - kept) + c * excess * decay     # the integral of G (T - T_amb)
        return t0 + rise, transferred
