"""What solvers/friction.py and its compiled kernel (solvers/friction_kernel.py) share: the
modes of a friction interface, the state of a friction system, the stuck-set candidates
resolve() tries, the budgets of a step and the slack of the hold rule (solvers/friction.py's
docstring, "Decisions at the static limit" and "Cost of a step", says why each is so)."""
from __future__ import annotations

import itertools
from enum import IntEnum
from typing import NamedTuple

from .budget import Budget


class Mode(IntEnum):
    """State of one friction interface (names as in Modelica's Rotational library)."""

    BACKWARD = -1  # slipping, s < 0
    STUCK = 0      # s == 0 held by static friction
    FORWARD = 1    # slipping, s > 0
    FREE = 2       # zero capacity (normal force 0): only viscous friction


STUCK, FORWARD, BACKWARD, FREE = Mode.STUCK, Mode.FORWARD, Mode.BACKWARD, Mode.FREE


def slip_direction(mode: Mode) -> int:
    """The sign eq. 2 takes in a non-stuck ``mode``: +1 forward, -1 backward, 0 free."""
    return 0 if mode == FREE else int(mode)


#: Stick/slip events of one step.  Floor 100: ten times the most events found in one step
#: (10, for n = 6, in 240 000 random steps and 9 000 limit cases: tests/numerics/test_chain_chatter.py);
#: 10^4 per second: one event every 0.1 ms, 130 times Fan F2's judder (38 Hz, 76 events/s);
#: cap 2000: about 0.1 s of CPU here at the measured 20-50 us per event.
EVENT_BUDGET = Budget("stick/slip events", 100, 1e4, 2000)
#: Attempted integration steps of the ODE phases (nonlinear friction) of one step, all
#: phases together.  Floor 500 and 2 x 10^4 per second: DOPRI5's stability bound admits
#: slip dynamics up to about 3.3 / (50 us) = 6.6e4 1/s (d_visc (1/J_j + 1/J_j+1)) in a
#: step of any length; the catalog systems take at most 44 in one step (measured in the
#: report of issue 17: Z3, F2_100_stribeck); cap 10 000: about 0.8 s of CPU here for two
#: bodies, 1.6 s for six (measured 80 and 160 us per attempted step on a loaded machine).
SUBSTEP_BUDGET = Budget("integration steps", 500, 2e4, 10_000)
SLIP_ADVICE = ("take a smaller communication step, or make the slip dynamics less stiff (smaller d_visc, "
           "larger inertias J_i, a smoother Stribeck law: larger w_stribeck, alpha_stribeck nearer 1)")

STICK_TOL = 1e-12  # relative slack on |tau| <= T_s against rounding in eq. 19 (module docstring)
STICK_SLACK = 1.0 + STICK_TOL


class ChainState(NamedTuple):
    """State in decoupled coordinates (angles of the mean and relative motion); immutable.

    theta_mean, w_mean : J-weighted mean angle and speed (eq. 8)
    q, s               : relative angles and slips, q_j = phi_j - phi_(j+1), s = q'
    modes              : Mode of each interface
    e_loss             : energy dissipated by friction since the start [J]
    """

    theta_mean: float
    w_mean: float
    q: tuple[float, ...]
    s: tuple[float, ...]
    modes: tuple[Mode, ...]
    e_loss: float = 0.0

    def to_json(self) -> list:
        return [self.theta_mean, self.w_mean, list(self.q), list(self.s),
                [int(m) for m in self.modes], self.e_loss]

    @classmethod
    def from_json(cls, data) -> "ChainState":
        theta, w, q, s, modes, e_loss = data
        return cls(theta, w, tuple(q), tuple(s), tuple(Mode(m) for m in modes), e_loss)


def stuck_candidates(k: int) -> tuple[tuple[Mode, ...], ...]:
    """Mode assignments for k zero-slip interfaces, most stuck first."""
    options = (STUCK, FORWARD, BACKWARD)
    assignments = itertools.product(options, repeat=k)
    return tuple(sorted(assignments, key=lambda a: -sum(m == STUCK for m in a)))
