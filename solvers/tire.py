"""One-degree-of-freedom vehicle behind a tire (Reiter ch. 5), two tire models.

Wheel and vehicle (mass m on radius R, i.e. inertia m R^2 seen at the wheel):
    J_w w' = tau - R F_x,      m v' = F_x - F_road(v),
    F_road = d_v v / R^2 ... written as a torque d_v w_v on w_v = v / R, plus
             f_roll m g sgn(v) + rho/2 cdA v |v| + m g sin(grade).
Tire models
  0 "tire as clutch": Coulomb stick/slip between wheel and vehicle (slip speed
    R w - v), static capacity mu_s F_z R, sliding mu_k F_z R: the friction chain of
    solvers.friction with two bodies (exact stick/slip, no chattering).  The road load
    is evaluated at the start of each step and held over it.
  1 Pacejka magic formula (thesis R4): F_x = F_z D sin(C atan(B k - E (B k - atan(B k))))
    with the slip k = (R w - v) / max(|v|, v_min).  The thesis's k = -(W0 - W)/W0 is
    undefined at standstill; bounding the denominator by v_min (default 1 m/s) keeps k
    finite (below v_min the force grows linearly with the slip speed: a stiff but
    smooth law at standstill), the usual low-speed fix.
    Integrated by solvers.ode (Dormand-Prince) with the road load as it varies.
F_z = m g cos(grade).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from .budget import Budget
from .contract import GRAVITY, StepError, check_step
from .friction import ChainState, FrictionChain, InterfaceLaw, Mode
from .ode import IntegrationError, integrate

#: Attempted integration steps of one magic-formula step: floor 500, 2 x 10^4 per second of
#: step: DOPRI5's stability bound (3.3 / step) then admits slip dynamics up to 6.6e4 1/s in
#: a step of any length (their rate at standstill is B C D g (1 + m R^2 / J_wheel) / v_min,
#: 1.4e4 1/s with the defaults); cap 20 000 (1.5 s of CPU measured
#: here on a loaded machine).  The stick/slip tire (model 0) is
#: the friction chain with its own budgets.
TIRE_SUBSTEP_BUDGET = Budget("integration steps", 500, 2e4, 20_000)


@dataclass(frozen=True)
class TireVehicleParams:
    J_wheel: float = 1.5
    m_vehicle: float = 135.0
    R: float = 1.0
    tire_model: int = 0
    mu_s: float = 0.8
    mu_k: float = 0.75
    B: float = 10.0
    C: float = 1.9
    D: float = 0.8
    E: float = 0.97
    v_min: float = 1.0
    d_v: float = 0.0
    f_roll: float = 0.0
    cdA: float = 0.0
    rho_air: float = 1.2


def road_force(p, v, grade):
    """F_road [N] opposing the vehicle at speed ``v`` on ``grade`` (module docstring): d_v v / R^2
    + f_roll m g sgn(v) + rho/2 cdA v |v| + m g sin(grade), from ``p``'s d_v, R, f_roll,
    m_vehicle, rho_air and cdA (TireVehicleParams, or an element with those parameters)."""
    sign = 1.0 if v > 0.0 else (-1.0 if v < 0.0 else 0.0)
    return (p.d_v * v / (p.R * p.R) + p.f_roll * p.m_vehicle * GRAVITY * sign
            + 0.5 * p.rho_air * p.cdA * v * abs(v) + p.m_vehicle * GRAVITY * math.sin(grade))


@dataclass(frozen=True)
class TireVehicleState:
    phi_wheel: float
    w_wheel: float
    x: float
    v: float
    stuck: bool = False

    def to_json(self):
        return [self.phi_wheel, self.w_wheel, self.x, self.v, self.stuck]


class TireVehicle:
    def __init__(self, p: TireVehicleParams):
        self.p = p
        self.chain = FrictionChain([p.J_wheel, p.m_vehicle * p.R * p.R],
                                   [InterfaceLaw(p.mu_s, p.mu_k, p.R, 1.0, 0.0, 1.0, 0.0)])

    def normal_force(self, grade):
        return self.p.m_vehicle * GRAVITY * math.cos(grade)

    def road_force(self, v, grade):
        return road_force(self.p, v, grade)

    def slip(self, w, v):
        return (self.p.R * w - v) / max(abs(v), self.p.v_min)

    def magic_formula(self, slip, f_z):
        """F_x of the magic formula.  A slip beyond the float range (a speed difference over a
        tiny v_min: +-inf here) gives the value the formula rounds to for any slip that large:
        atan(B k) is then +-pi/2, B k - E (B k - atan(B k)) = (1 - E) B k + E atan(B k) is
        +-inf (E != 1) or atan(B k) (E = 1), where inf - inf would give NaN; B = 0 gives 0."""
        p = self.p
        bk = p.B * slip if p.B != 0.0 else 0.0
        if math.isinf(bk):
            edge = math.copysign(math.pi / 2, bk)
            inner = edge if p.E == 1.0 else (1.0 - p.E) * bk + p.E * edge
        else:
            inner = bk - p.E * (bk - math.atan(bk))
        return f_z * p.D * math.sin(p.C * math.atan(inner))

    def tire_force(self, state: TireVehicleState, tau, grade):
        """F_x on the vehicle (positive forward) for the inputs now."""
        if self.p.tire_model == 1:
            return self.magic_formula(self.slip(state.w_wheel, state.v), self.normal_force(grade))
        chain_state = self._chain_state(state)
        t_s, t_c = self.chain.laws[0].capacities(self.normal_force(grade))
        _, torque = self.chain.friction_torques(chain_state, self._torques(state, tau, grade), [t_s], [t_c])
        return torque[0] / self.p.R

    def _chain_state(self, s: TireVehicleState) -> ChainState:
        p = self.p
        if s.stuck:     # rolling: both bodies at the wheel speed (v / R may differ from it by an ulp)
            return self.chain.state_from_bodies([s.phi_wheel, s.x / p.R], [s.w_wheel, s.w_wheel], [Mode.STUCK])
        return self.chain.state_from_bodies([s.phi_wheel, s.x / p.R], [s.w_wheel, s.v / p.R])

    def _torques(self, s, tau, grade):
        return [tau, -self.p.R * self.road_force(s.v, grade)]

    def step(self, state: TireVehicleState, tau, grade, h) -> TireVehicleState:
        check_step(h, tau=tau, grade=grade)
        p = self.p
        f_z = self.normal_force(grade)
        if p.tire_model == 0:
            t_s, t_c = self.chain.laws[0].capacities(f_z)
            result = self.chain.step(self._chain_state(state), self._torques(state, tau, grade), [t_s], [t_c], h)
            phi_w, phi_v, w, w_v = self.chain.member_motion(result.state)      # the angles, then the speeds
            return TireVehicleState(phi_w, w, phi_v * p.R, w_v * p.R, result.state.modes[0] == Mode.STUCK)

        def rhs(_t, y):
            force = self.magic_formula(self.slip(y[1], y[3]), f_z)
            return [y[1], (tau - p.R * force) / p.J_wheel, y[3],
                    (force - self.road_force(y[3], grade)) / p.m_vehicle]

        y0 = [state.phi_wheel, state.w_wheel, state.x, state.v]
        try:
            result = integrate(rhs, 0.0, y0, h, [], rtol=1e-9, atol=1e-12, first_step=h,
                               max_steps=TIRE_SUBSTEP_BUDGET.limit(h))
        except IntegrationError:
            raise TIRE_SUBSTEP_BUDGET.exceeded(
                "magic-formula tire", h, "the slip dynamics are too stiff for this step (steep B D near "
                "standstill, small v_min, light J_wheel): take a smaller communication step, or raise v_min "
                "or J_wheel") from None
        if result.event is not None or result.t < h:
            raise StepError("tire integration did not reach the end of the step")
        return TireVehicleState(*result.y, False)
