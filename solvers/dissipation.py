"""The energy each friction interface dissipates in a step of solvers.friction (for a
thermal model, solvers.thermal).

The friction system's energy balance gives the total dissipated in a step;
:meth:`solvers.friction.FrictionSystem.advance` also splits it, on request, among the
interfaces, phase by phase:

- In an analytic phase a slipping interface's friction is constant, so it dissipates
  exactly tau_j dq_j (dq_j its relative turn over the phase); a stuck one nothing.
- In an ODE phase friction dissipates, by the relative motion's energy balance
      d/dt (s^T M^-1 s / 2) = (M^-1 g)^T s - tau^T s,
  (M^-1 g)^T dq minus the change of s^T M^-1 s / 2 (:func:`add_ode_phase`).  A slipping
  interface of constant friction takes its exact tau_j dq_j of it; the rest goes to the
  one of nonlinear friction (Stribeck, viscous) when one slips; among several, in
  proportion to Simpson's rule for the integral of tau_j s_j, with the mid-phase slip from
  the cubic Hermite interpolant of q_j (its values and slopes at both ends): a quadrature,
  normalised to their exact total.

The parts of a step are then scaled to sum to the step's increment of e_loss
(:func:`share`; they differ from it by rounding only; all zero, it is shared equally), so
that the interfaces' energies add up to e_loss.
"""
from __future__ import annotations

from .dense import dot, quadratic_form


def add_ode_phase(system, losses, directions, t_s, t_c, relative_work, q0, s0, q1, s1, dt):
    """Add to ``losses`` what each interface of ``system`` (a FrictionSystem) dissipated in
    an ODE phase of length ``dt`` from the relative angles and slips ``q0``, ``s0`` to
    ``q1``, ``s1`` (module docstring).  ``directions``: per interface the sign of eq. 2 in
    its mode (+1, -1; 0 free), None when stuck; ``relative_work`` is M^-1 g."""
    slipping = [j for j, direction in enumerate(directions) if direction is not None]
    if dt <= 0.0 or not slipping:
        return
    dq = [q1[j] - q0[j] for j in range(system.n_interfaces)]
    # d/dt (s^T M^-1 s / 2) = (M^-1 g)^T s - tau^T s: what friction dissipated in the phase
    kinetic = 0.5 * (quadratic_form(system.m_inv, s1) - quadratic_form(system.m_inv, s0))
    remainder = dot(relative_work, dq) - kinetic
    nonlinear = []
    for j in slipping:
        law, direction = system.laws[j], directions[j]
        if law.is_constant(direction == 0, t_s[j], t_c[j]):      # tau_j dq_j exactly
            part = law.slipping_torque(s0[j], direction, t_s[j], t_c[j]) * dq[j]
            losses[j] += part
            remainder -= part
        else:
            nonlinear.append(j)
    if len(nonlinear) == 1:
        losses[nonlinear[0]] += remainder
        return
    shares = []
    for j in nonlinear:
        law, direction = system.laws[j], directions[j]
        # the slip at mid-phase from the cubic Hermite interpolant of q_j (q_j, s_j at both ends)
        s_mid = 1.5 * dq[j] / dt - 0.25 * (s0[j] + s1[j])
        power = [law.slipping_torque(x, direction, t_s[j], t_c[j]) * x for x in (s0[j], s_mid, s1[j])]
        shares.append(max(0.0, dt / 6.0 * (power[0] + 4.0 * power[1] + power[2])))
    share(shares, remainder)
    for j, part in zip(nonlinear, shares):
        losses[j] += part


def share(parts, total):
    """Scale ``parts`` (in place) so that they sum to ``total``: in proportion to them, or in
    equal parts when they sum to 0."""
    weight = sum(parts)
    if weight != 0.0:
        scale = total / weight
        for j in range(len(parts)):
            parts[j] *= scale
    else:
        for j in range(len(parts)):
            parts[j] = total / len(parts)
