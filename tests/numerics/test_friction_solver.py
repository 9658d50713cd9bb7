"""Physical checks of solvers.friction against hand-computed values (Zanasi eq. 9, 13-14, 19)."""
import math

import numpy as np
import pytest

from drivetrain_fmu.solvers.friction import FrictionChain, InterfaceLaw, Mode

COULOMB = InterfaceLaw(mu_s=1.0, mu_k=0.8, r_eff=1.0, n_surfaces=1.0)  # T_s = f_n, T_c = 0.8 f_n


def test_two_body_lock_time_is_analytic_at_any_step():
    """Z1 without FMI: lock at t* = 100 / (80 (1/J1 + 1/J2)) to rounding (1e-12 s)."""
    chain = FrictionChain([0.2, 0.28], [COULOMB])
    t_star = 100.0 / (80.0 * (1 / 0.2 + 1 / 0.28))
    for h in (1e-5, 1e-3, 0.1):
        state, lock = chain.state_from_bodies([0, 0], [100, 0]), None
        for n in range(int(round(0.3 / h))):
            result = chain.step(state, [0.0, 0.0], [100.0], [80.0], h)
            if result.event_times and lock is None:
                lock = n * h + result.event_times[0]
            state = result.state
        assert lock == pytest.approx(t_star, abs=1e-12)
        assert state.modes == (Mode.STUCK,) and state.s == (0.0,)


THREE = dict(J=(0.5, 1.0, 2.0), F=(30.0, -5.0, 10.0))


def _three_body(s, ts, tc):
    """Expected accelerations and frictions of the three-body model from eq. 13-14."""
    j1, j2, j3 = THREE["J"]
    f1, f2, f3 = THREE["F"]
    jt = j1 + j2 + j3
    ft2 = (-j1 * (f2 + f3) + (j2 + j3) * f1) / jt
    ft3 = (j3 * (f1 + f2) - (j1 + j2) * f3) / jt
    return j1, j2, j3, ft2, ft3


@pytest.mark.parametrize("case", [1, 2, 3, 4])
def test_three_body_cases_match_eq_13_14(case):
    """Seed cases 1-4 (slip/slip, stuck/slip, slip/stuck, stuck/stuck) at one instant."""
    j1, j2, j3 = THREE["J"]
    chain = FrictionChain([j1, j2, j3], [COULOMB, COULOMB])
    slip = {1: (3.0, -2.0), 2: (0.0, -2.0), 3: (3.0, 0.0), 4: (0.0, 0.0)}[case]
    ts, tc = [100.0, 100.0], [80.0, 80.0]
    _, _, _, ft2, ft3 = _three_body(slip, ts, tc)
    tau12 = math.copysign(80.0, slip[0]) if slip[0] else None
    tau23 = math.copysign(80.0, slip[1]) if slip[1] else None
    # eq. 13 = 0 / eq. 14 = 0 solved by hand for the stuck interfaces
    if case == 2:
        tau12 = ft2 - j1 / (j1 + j2) * (ft3 - tau23)
    if case == 3:
        tau23 = ft3 - j3 / (j2 + j3) * (ft2 - tau12)
    if case == 4:
        # both stuck: z2' = z3' = 0  =>  tau12 = F_T2, tau23 = F_T3
        tau12, tau23 = ft2, ft3
    z2dot = (1 / j1 + 1 / j2) * (ft2 - tau12) - (ft3 - tau23) / j2
    z3dot = -(ft2 - tau12) / j2 + (1 / j2 + 1 / j3) * (ft3 - tau23)
    w = np.array([10.0, 10.0 - slip[0], 10.0 - slip[0] - slip[1]])
    state = chain.state_from_bodies([0, 0, 0], w)
    modes, tau = chain.friction_torques(state, THREE["F"], ts, tc)
    assert tau == pytest.approx([tau12, tau23], rel=1e-12)
    expected_modes = [Mode.STUCK if x == 0 else Mode(int(math.copysign(1, x))) for x in slip]
    assert modes == expected_modes
    g = chain.relative_free_acceleration(THREE["F"])
    accel = g - chain.m @ np.array(tau)
    assert accel == pytest.approx([z2dot, z3dot], abs=1e-12)
    for j, x in enumerate(slip):
        if x == 0:
            assert accel[j] == pytest.approx(0.0, abs=1e-12) and abs(tau[j]) <= ts[j]


def test_saturating_neighbour_is_resolved_exactly():
    """Eq. 19-22 is approximate when a stuck neighbour saturates; the stuck set must be consistent.

    Body 1 pulled hard, both interfaces at rest: interface 1 must break (its holding
    torque exceeds T_s) while interface 2 recomputes its friction with tau_12 at the
    breakaway level, not with the unsaturated eq. 19 value.
    """
    chain = FrictionChain([1.0, 1.0, 1.0], [COULOMB, COULOMB])
    state = chain.state_from_bodies([0, 0, 0], [0, 0, 0])
    f = [300.0, 0.0, 0.0]
    ts, tc = [100.0, 150.0], [80.0, 120.0]
    modes, tau = chain.friction_torques(state, f, ts, tc)
    assert modes == [Mode.FORWARD, Mode.STUCK]
    assert tau[0] == pytest.approx(80.0)  # no Stribeck drop: breaks away at T_c
    # bodies 2 and 3 move together driven by tau_12 = 80: tau_23 = 80 * J3/(J2+J3) = 40
    assert tau[1] == pytest.approx(40.0, rel=1e-12)
    result = chain.step(state, f, ts, tc, 1e-3)
    w = chain.body_speeds(result.state)
    assert w[1] == pytest.approx(w[2], abs=1e-15)
    assert w[0] == pytest.approx((300 - 80) * 1e-3, rel=1e-12)


def test_stribeck_slip_conserves_momentum_and_energy_balance():
    """With Stribeck friction (numerical path) the mean motion stays exact and e_loss = -dKE."""
    law = InterfaceLaw(mu_s=1.0, mu_k=0.8, r_eff=1.0, n_surfaces=1.0, w_stribeck=5.0, alpha_stribeck=0.6)
    chain = FrictionChain([0.2, 0.28], [law])
    state = chain.state_from_bodies([0, 0], [100, 0])
    ke0 = chain.kinetic_energy(state.w_mean, state.s)
    for _ in range(300):
        state = chain.step(state, [0.0, 0.0], [100.0], [80.0], 1e-3).state
    w = chain.body_speeds(state)
    assert 0.2 * w[0] + 0.28 * w[1] == pytest.approx(20.0, rel=1e-12)
    assert state.modes == (Mode.STUCK,)
    assert state.e_loss == pytest.approx(ke0 - chain.kinetic_energy(state.w_mean, state.s), rel=1e-9)


def test_zero_normal_force_opens_the_interface():
    chain = FrictionChain([0.2, 0.28], [COULOMB])
    state = chain.state_from_bodies([0, 0], [50, 50])
    modes, tau = chain.friction_torques(state, [10.0, 0.0], [0.0], [0.0])
    assert modes == [Mode.FREE] and tau == [0.0]


def test_stuck_step_and_instant_friction_decide_alike_at_the_static_limit():
    """A locked chain (n = 2..5, inertias spread over 1e-3..1e3, so eq. 19's rounding is
    large) under torques whose stuck friction (M tau = D J^-1 F) lies within 1e-11 of the
    static capacity, either side, around the 1e-12 acceptance slack: the step keeps every
    interface stuck exactly when the instantaneous resolution (the ``locked``/``tau_fric``
    outputs) says it holds, at 4000 random draws (they disagreed in about 1 % of these
    draws when the step used its own product form of eq. 19)."""
    rng = np.random.default_rng(7)
    for _ in range(4000):
        n = int(rng.integers(2, 6))
        chain = FrictionChain(10.0 ** rng.uniform(-3, 3, n), [COULOMB] * (n - 1))
        torques = list(rng.normal(0.0, 100.0, n))
        state = chain.state_from_bodies(np.zeros(n), np.full(n, 3.0), [Mode.STUCK] * (n - 1))
        needed = np.linalg.solve(chain.m, chain.relative_free_acceleration(torques))
        offsets = rng.choice([0.0, 1e-14, -1e-13, 1e-13, 1e-12, 2e-12, -1e-11, 1e-11], n - 1)
        t_s = list(np.abs(needed) * (1.0 + offsets))
        modes, _ = chain.friction_torques(state, torques, t_s, [0.8 * x for x in t_s])
        stepped = chain.step(state, torques, t_s, [0.8 * x for x in t_s], 1e-3).state
        held_now = all(m == Mode.STUCK for m in modes)
        held_over_step = all(m == Mode.STUCK for m in stepped.modes) and not any(stepped.s)
        assert held_now == held_over_step


def test_stuck_mode_with_a_residual_slip_is_not_taken_as_locked():
    """A state marked STUCK but with a slip of 2.2e-16 rad/s (as v / R rebuilt from w can
    give) is slipping, as the instantaneous resolution says (kinetic friction): within the
    static capacity the step lets kinetic friction close that slip at once (one event)
    and the pair locks with exactly zero slip, instead of moving rigidly with the residue."""
    chain = FrictionChain([0.2, 0.28], [COULOMB])
    state = chain.state_from_bodies([0.0, 0.0], [1.0 + 2.220446049250313e-16, 1.0], [Mode.STUCK])
    assert state.s[0] > 0.0
    modes, tau = chain.friction_torques(state, [50.0, 0.0], [100.0], [80.0])
    result = chain.step(state, [50.0, 0.0], [100.0], [80.0], 1e-3)
    assert modes == [Mode.FORWARD] and tau == [80.0]
    assert result.n_events == 1 and result.state.modes == (Mode.STUCK,) and result.state.s == (0.0,)
