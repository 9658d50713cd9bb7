"""The thesis's clearance algorithm, the baseline the exact :class:`solvers.backlash.BacklashPair`
is compared with (tests only: it uses numpy and scipy, which the FMUs do not ship)."""
from __future__ import annotations

import numpy as np

from drivetrain_fmu.solvers.backlash import BacklashPair

from .pwa_methods import zoh


class ThesisClearanceStepper:
    """Reiter's fixed-grid clearance algorithm (ch. 4.3), kept for comparison.

    The pair's free motion is the exact discrete system x+ = Phi x + L (B u + x_off)
    (eq. 109-112, Van Loan ZOH).  Per step, with the gap Delta = b - s phi_rel to the
    limit s that the prediction x_pred violates:
      collision  (Delta_k > 0 > Delta_pred): eta = Delta_k / (Delta_k - Delta_pred)
                 (eq. 119), the state at the collision by the linear delta approximation
                 x_k + eta (x_pred - x_k) (eq. 115), Newton's law (eq. 107-108), then the
                 rest of the step (1 - eta) T_d like a separation step, so the grid is kept
                 (the thesis extends the next step by the missing time instead, 2 - eta);
      separation (Delta_k <= 0, bodies together): a force pair acting on the two speed
                 equations, k_s times stronger on the pushing body (eq. 125-128), sized so
                 that Delta_(k+1) = 0 (eq. 132-133); speeds are not matched (the thesis
                 notes the resulting speed oscillation, its case 5).
    No overlap at the samples; between samples and in the speeds it is approximate,
    which is what the exact BacklashPair removes.
    """

    def __init__(self, pair: BacklashPair, h: float, k_s: float = 1.0):
        self.pair, self.h, self.k_s = pair, h, k_s
        b1, b2 = pair.b1, pair.b2
        A = np.zeros((4, 4))
        A[0, 1] = A[2, 3] = 1.0
        A[1, 0], A[1, 1] = -b1.k_ground / b1.J, -b1.d_ground / b1.J
        A[3, 2], A[3, 3] = -b2.k_ground / b2.J, -b2.d_ground / b2.J
        self._A = A
        self._per_torque = np.diag([1.0 / b1.J, 1.0 / b2.J])
        self._rest_torque = np.array([b1.k_ground * b1.phi_rest, b2.k_ground * b2.phi_rest])
        self._matrices = {}

    def _zoh(self, dt):
        """Phi(dt) and the map from the body torques to the state, L(dt)[:, speeds] / J
        (kept for the full step only: the remainders after impacts are all different)."""
        if dt in self._matrices:
            return self._matrices[dt]
        Phi, L = zoh(self._A, dt)
        matrices = (Phi, L[:, [1, 3]] @ self._per_torque)
        if dt == self.h:
            self._matrices[dt] = matrices
        return matrices

    def _gap(self, x, side):
        return self.pair.b - side * (x[0] / self.pair.r - x[2])

    def step(self, x, tau_1, tau_2):
        """x = [phi_1, w_1, phi_2, w_2] at t_k -> the same at t_k + h."""
        return self._advance(np.asarray(x, float), tau_1, tau_2, self.h, collide=True)

    def _advance(self, x, tau_1, tau_2, dt, collide):
        pair = self.pair
        Phi, to_state = self._zoh(dt)
        pred = Phi @ x + to_state @ (np.array([tau_1, tau_2]) + self._rest_torque)
        for side in (1, -1):
            gap_k, gap_pred = self._gap(x, side), self._gap(pred, side)
            if gap_pred >= 0.0:
                continue
            if collide and gap_k > 0.0:                       # collision step
                eta = gap_k / (gap_k - gap_pred)
                at = x + eta * (pred - x)                     # eq. 115
                at[1], at[3], _ = pair._impact(side, at[1], at[3], plastic=False)
                return self._advance(at, tau_1, tau_2, (1.0 - eta) * dt, collide=False)
            # separation force pair (eq. 125-128), sized by eq. 133
            v_dir = np.sign(np.sign(x[1]) + np.sign(x[3]))
            e_dir = np.sign(x[1] ** 2 * pair.b1.J - x[3] ** 2 * pair.b2.J)
            force_dir = v_dir if v_dir != 0 else e_dir
            w1, w2 = (self.k_s, 1.0) if force_dir > 0 else ((1.0, self.k_s) if force_dir < 0 else (1.0, 1.0))
            direction = to_state @ np.array([-side * w1 / pair.r, side * w2])   # -lambda / r on body 1
            tau_s = gap_pred / (side * (direction[0] / pair.r - direction[2]))
            return pred + direction * tau_s
        return pred
