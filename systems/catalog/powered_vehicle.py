"""Fan et al.'s whole system in one set of equations: the vehicle of solvers.vehicle with
its powertrain (the monolithic reference of systems.catalog.fan, built by systems.catalog.reference.
fan_model).  It runs outside the FMUs only, in the reference and the studies."""
from __future__ import annotations

from dataclasses import dataclass

from drivetrain_fmu.solvers.friction import InterfaceLaw
from drivetrain_fmu.solvers.rigid import engine_torque
from drivetrain_fmu.solvers.vehicle import PlanarVehicle, VehicleParams, VehicleState


@dataclass(frozen=True)
class PowertrainParams:
    """Fan et al. Fig. 2: engine J_e --(k1, c1)-- flywheel J_f ==clutch== disc and
    transmission J_c --(k2, c2)-- driven wheel; engine torque T0 (1 + h2 sin(2 w_e t) +
    h4 sin(4 w_e t)) (seed, after [44]; h2 = h4 = 0: constant); clutch with
    static T_S and sliding T_C, with the Stribeck drop of Biagiotti-Zanasi eq. 2 from T_S to
    T_C over the slip speed w_stribeck (0: Coulomb, sliding at T_C).  ``wheel`` is 'f' or 'r'."""

    J_e: float = 0.6
    J_f: float = 0.2
    J_c: float = 0.28
    k1: float = 77e3
    c1: float = 1.76
    k2: float = 16e3
    c2: float = 0.12
    T0: float = 200.0
    T_S: float = 5000.0
    T_C: float = 5000.0
    wheel: str = "f"
    w_stribeck: float = 0.0
    alpha_stribeck: float = 1.0
    h2: float = 0.0
    h4: float = 0.0


class PoweredVehicle(PlanarVehicle):
    """The seed's whole system in one set of equations (its coordinates q, eq. 2): the
    vehicle plus q[9] = th_c (disc), q[10] = th_f (flywheel), q[11] = th_e (engine), and
    the clutch as a fifth tangential contact (g = th_f' - th_c', capacity T_S, sliding
    T_C) in the same LCP (eq. 31).  The monolithic reference of systems.catalog.fan."""

    N_COORDINATES = 12

    def __init__(self, params: VehicleParams, powertrain: PowertrainParams):
        super().__init__(params)
        self.pt = pt = powertrain
        # the clutch's sliding level (eq. 2; capacities T_S, T_C are given directly)
        self.clutch_law = InterfaceLaw(w_stribeck=pt.w_stribeck, alpha_stribeck=pt.alpha_stribeck)
        self.mass = self.mass + [pt.J_c, pt.J_f, pt.J_e]
        self.inv_mass = [1.0 / m for m in self.mass]
        clutch = [0.0] * self.N_COORDINATES      # the base class sized W^T's rows for 12 coordinates
        clutch[9], clutch[10] = -1.0, 1.0         # clutch slip th_f' - th_c'
        self.Wt = self.Wt + [clutch]
        self.wheel_index = 5 if pt.wheel == "f" else 8

    def initial_state(self, x=0.0, v=0.0, w_wheel_f=None, w_wheel_r=None, settle=True, w_powertrain=0.0):
        q, qd = self._body_coordinates(x, v, w_wheel_f, w_wheel_r, settle)
        qd = qd + [w_powertrain] * 3
        return VehicleState(tuple(q + [0.0, 0.0, 0.0]), tuple(qd), self._sliding_modes(qd))

    def applied(self, q, qd, tau_f, tau_r, t=0.0):
        Q, normal = super().applied(q, qd, 0.0, 0.0)
        pt, w = self.pt, self.wheel_index
        input_shaft = pt.k1 * (q[11] - q[10]) + pt.c1 * (qd[11] - qd[10])
        half_shaft = pt.k2 * (q[9] - q[w]) + pt.c2 * (qd[9] - qd[w])
        Q[11] += engine_torque(t, qd[11], pt.T0, pt.h2, pt.h4) - input_shaft
        Q[10] += input_shaft
        Q[9] -= half_shaft
        Q[w] += half_shaft
        return Q, normal

    def capacities(self, normal, static=True, qd=None):
        pt = self.pt
        if static:
            clutch = pt.T_S
        elif qd is None:
            clutch = pt.T_C
        else:      # sliding level of eq. 2 at the clutch slip th_f' - th_c'
            clutch = self.clutch_law.slipping_torque(qd[10] - qd[9], 1, pt.T_S, pt.T_C)
        return super().capacities(normal, static) + (clutch,)

    def snap(self, qd, contacts):
        corrected = super().snap(qd, contacts)
        if 4 in contacts:
            corrected[10] = corrected[9]
        return corrected
