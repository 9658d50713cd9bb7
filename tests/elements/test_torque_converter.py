"""TorqueConverter against the closed forms of its fluid coupling and its lock-up clutch.

The fluid law (solvers/fluid_coupling.py): in drive the pump gives the fluid
tau_fluid_pump = (w_pump / K(SR))^2 and the turbine receives tau_fluid_turbine = TR(SR) times
it (solvers.fluid_coupling's torques on the members are -tau_fluid_pump and tau_fluid_turbine).  The slaves run in-process (the built FMU is checked
by the element-contract and fuzz tests).  Tolerances:
- a fluid torque at a given state is a few operations of the table's formula: ROUNDING
  (1e-12 relative, as tests/elements/test_friction_elements.py);
- a motion under the fluid torque is Heun's method (the fluid torque held over a step as the
  mean of its values at the start and at the predicted end; fmus/torque_converter.py), second
  order: its error against a closed form is bounded at the measured value times 2, and
  halving the step divides it by 4 (checked: 3.5 .. 4.5);
- energy balances are sums of the same products the model adds: rounding of ~1e3 steps,
  1e-12 relative.
"""
import math

import pytest

from drivetrain_fmu.fmus import TorqueConverter
from drivetrain_fmu.fmus.model import ParameterError
from drivetrain_fmu.solvers.fluid_coupling import ConverterTable, fluid_jacobian, fluid_torques
from tests.elements.test_friction_elements import ROUNDING, advance, feedthrough, make

#: the default table (fmus/torque_converter.py): K(0) = 14 rad/s/sqrt(N.m), TR(0) = 2, the
#: coupling point TR = 1 at SR_5 = 0.87, K_6 = 28 at SR_6 = 0.95
K0, TR0 = 14.0, 2.0
#: the lock-up clutch's kinetic lever mu_k r_eff n_surfaces (defaults): T_c = 0.0242 f_n
KINETIC_LEVER = 0.11 * 0.11 * 2


def default_table():
    return ConverterTable((0.0, 0.4, 0.7, 0.8, 0.87, 0.95), (14.0, 14.5, 15.8, 17.0, 19.0, 28.0),
                          (2.0, 1.6, 1.25, 1.12, 1.0, 1.0))


# ------------------------------------------------------------------------------ the fluid law
def test_stall_torque_and_torque_ratio_at_sr_zero():
    """Turbine at rest, pump at 200 rad/s: the pump absorbs (200 / K(0))^2 = 204.08 N.m and the
    turbine receives TR(0) = 2 times it (the stall torque multiplication), at the first
    communication point and through p_loss_fluid = T w_pump (all of the pump's power)."""
    tc = make(TorqueConverter, w_pump_start=200.0, w_turbine_start=0.0)
    stall = (200.0 / K0) ** 2
    assert tc.tau_fluid_pump == pytest.approx(stall, rel=ROUNDING)
    assert tc.tau_fluid_turbine == pytest.approx(TR0 * stall, rel=ROUNDING)
    assert tc.p_loss_fluid == pytest.approx(stall * 200.0, rel=ROUNDING)


@pytest.mark.parametrize("h", [1e-3])
def test_the_pump_spins_up_to_the_stall_speed_k0_sqrt_tau_against_a_held_turbine(h):
    """The turbine held (J_turbine = 1e9 kg.m2: it creeps at 3e-7 rad/s^2) and the table flat
    below SR = 0.4 (K_2 = 14, TR_2 = 2: the creep changes nothing), 150 N.m on the pump from
    80 rad/s: J w' = tau - w^2 / K0^2, whose solution is w_s tanh(kappa t + atanh(w0 / w_s)) with
    the stall speed w_s = K0 sqrt(tau) = 171.46 rad/s and kappa = sqrt(tau) / (K0 J).  Heun's
    error over the first second: at most 1e-3 rad/s at h = 1 ms (measured 5.0e-4), four times
    smaller at h / 2 (measured 4.03); after 5 s the pump holds w_s to 1e-9 (the method's fixed
    point is the exact equilibrium, kappa t = 29)."""
    tau, j_pump, w0 = 150.0, 0.15, 80.0
    w_s, kappa = K0 * math.sqrt(tau), math.sqrt(tau) / (K0 * j_pump)

    def closed_form(t):
        return w_s * math.tanh(kappa * t + math.atanh(w0 / w_s))

    errors = []
    for step in (h, h / 2.0):
        tc = make(TorqueConverter, J_pump=j_pump, J_turbine=1e9, K_2=K0, TR_2=TR0, tau_pump=tau, tau_turbine=0.0)
        t, error = 0.0, 0.0
        for _ in range(round(1.0 / step)):
            t = advance(tc, t, step)
            error = max(error, abs(tc.w_pump - closed_form(t)))
            assert tc.tau_fluid_turbine == pytest.approx(TR0 * tc.tau_fluid_pump, rel=ROUNDING)
        errors.append(error)
    assert errors[0] <= 1e-3
    assert 3.5 <= errors[0] / errors[1] <= 4.5
    advance(tc, t, 0.01, steps=400)
    assert tc.w_pump == pytest.approx(w_s, rel=1e-9)
    assert tc.tau_fluid_pump == pytest.approx(tau, rel=1e-9)


@pytest.mark.parametrize("w_turbine, k, tr", [(174.0, 19.0, 1.0),                        # SR_5: TR = 1
                                              (180.0, 19.0 + 9.0 * 0.03 / 0.08, 1.0),    # 0.9: TR = 1
                                              (160.0, 17.0, 1.12)])                      # 0.8: below it
def test_coupling_point_turbine_torque_equals_pump_torque(w_turbine, k, tr):
    """At and above the coupling point (SR = 0.87, TR = 1) the turbine receives the torque the
    pump gives (the stator carries nothing), below it TR > 1 times it; K linear between the
    breakpoints; the fluid dissipates T (w_pump - TR w_turbine) (efficiency SR TR)."""
    tc = make(TorqueConverter, w_pump_start=200.0, w_turbine_start=w_turbine)
    torque = (200.0 / k) ** 2
    assert tc.tau_fluid_pump == pytest.approx(torque, rel=ROUNDING)
    assert tc.tau_fluid_turbine == pytest.approx(tr * torque, rel=ROUNDING)
    if tr == 1.0:
        assert tc.tau_fluid_turbine == tc.tau_fluid_pump
    assert tc.p_loss_fluid == pytest.approx(torque * (200.0 - tr * w_turbine), rel=ROUNDING)


def test_the_torque_falls_to_zero_at_zero_slip_and_reverses_with_the_flow():
    """Above SR_6 = 0.95 the capacity falls linearly to 0 at SR = 1: T = w_pump (w_pump -
    w_turbine) / ((1 - SR_6) K_6^2), linear in the slip; with the turbine overrunning (SR > 1)
    the turbine drives the fluid (T = C(w_pump / w_turbine) w_turbine^2) and the pump receives
    all of it (TR = 1): engine braking.  Continuous through SR = 1: at a slip of 1e-9 of the
    speed either way (2e-7 rad/s) both rules give beta s = 1.0204e-6 N.m (beta = 200 / (0.05 *
    28^2) = 5.10 N.m.s/rad), with opposite signs, equal to 1e-6 relative (the slip's second-order
    term), and exactly 0 at SR = 1."""
    table = default_table()
    for w_turbine in (192.0, 196.0, 199.0):
        expected = 200.0 * (200.0 - w_turbine) / (0.05 * 28.0 ** 2)
        pump, turbine = fluid_torques(table, 200.0, w_turbine)
        assert (pump, turbine) == (pytest.approx(-expected, rel=ROUNDING), pytest.approx(expected, rel=ROUNDING))
    pump, turbine = fluid_torques(table, 200.0, 210.0)
    c = (1.0 - 200.0 / 210.0) / (0.05 * 28.0 ** 2)
    assert (pump, turbine) == (pytest.approx(c * 210.0 ** 2, rel=ROUNDING), pytest.approx(-c * 210.0 ** 2, rel=ROUNDING))
    below, above = fluid_torques(table, 200.0, 200.0 * (1 - 1e-9)), fluid_torques(table, 200.0, 200.0 * (1 + 1e-9))
    beta_s = 200.0 / (0.05 * 28.0 ** 2) * 200.0 * 1e-9
    assert [abs(x) for x in below + above] == pytest.approx([beta_s] * 4, rel=1e-6)
    assert below[0] < 0.0 < above[0] and above[1] < 0.0 < below[1]
    assert fluid_torques(table, 200.0, 200.0) == (0.0, 0.0)


def test_the_reverse_flow_rule_is_continuous_odd_and_dissipative():
    """On a grid of speeds of both signs (pump and turbine -300 .. 300 rad/s): the fluid never
    delivers power (p_fluid = -(f_pump w_pump + f_turbine w_turbine) >= 0; the default table's
    efficiency SR TR is at most 1), reversing both speeds reverses both torques exactly, and
    the torques are continuous: across each boundary of the rule (|w_pump| = |w_turbine| with
    equal or opposite signs, a speed through 0) a change of 1e-7 rad/s changes them by at most
    1e-4 N.m (their slope there is below 1e3 N.m.s/rad)."""
    table = default_table()
    grid = [-300.0, -171.0, -80.0, -1.0, 0.0, 1.0, 80.0, 171.0, 300.0]
    for w_p in grid:
        for w_t in grid:
            f_p, f_t = fluid_torques(table, w_p, w_t)
            assert -(f_p * w_p + f_t * w_t) >= -ROUNDING * (abs(f_p * w_p) + abs(f_t * w_t)), (w_p, w_t)
            assert fluid_torques(table, -w_p, -w_t) == (-f_p, -f_t)
    delta = 1e-7
    for w_p, w_t in [(150.0, 150.0), (150.0, -150.0), (-150.0, 150.0), (0.0, 120.0), (120.0, 0.0), (0.0, -90.0)]:
        for d_p, d_t in [(delta, 0.0), (0.0, delta), (delta, -delta)]:
            one = fluid_torques(table, w_p + d_p, w_t + d_t)
            other = fluid_torques(table, w_p - d_p, w_t - d_t)
            assert max(abs(x - y) for x, y in zip(one, other)) <= 1e-4, (w_p, w_t, one, other)


def test_the_jacobian_is_the_slope_of_the_fluid_torques():
    """fluid_jacobian (the stability limit's input) against central differences of 1e-6 rad/s
    inside each region of the rule and segment of the table: within 1e-6 relative to the
    largest entry (the difference quotient's own error: rounding 1e-16 * 1e4 N.m / 1e-6 rad/s,
    and curvature 1e-6 rad/s * 1e-3 relative)."""
    table = default_table()
    step = 1e-6
    for w_p, w_t in [(200.0, 10.0), (200.0, 100.0), (200.0, 150.0), (200.0, 172.0), (200.0, 185.0), (200.0, 195.0),
                     (180.0, 210.0), (50.0, 210.0), (200.0, -50.0), (-60.0, 210.0), (-200.0, -150.0)]:
        jac = fluid_jacobian(table, w_p, w_t)
        columns = []
        for d_p, d_t in [(step, 0.0), (0.0, step)]:
            plus, minus = fluid_torques(table, w_p + d_p, w_t + d_t), fluid_torques(table, w_p - d_p, w_t - d_t)
            columns.append([(x - y) / (2.0 * step) for x, y in zip(plus, minus)])
        numeric = [[columns[0][0], columns[1][0]], [columns[0][1], columns[1][1]]]
        scale = max(abs(x) for row in jac for x in row)
        for row, numeric_row in zip(jac, numeric):
            for x, y in zip(row, numeric_row):
                assert abs(x - y) <= 1e-6 * scale, (w_p, w_t, jac, numeric)


# ------------------------------------------------------------------------------ energy
def test_energy_balance_through_a_launch_and_lock_up():
    """From idle (80 rad/s, turbine at rest) 150 N.m on the pump against 50 N.m of load: stall,
    the turbine catching up, then the lock-up clutch's clamp force ramped at 2e4 N/s from 0.2 s
    (it locks at 0.353 s).  Work of tau_pump and tau_turbine = kinetic energy change + e_loss
    (lock-up clutch + fluid) to 1e-12 of the work (rounding of 1000 steps of sums; measured
    4e-14); the fluid dissipated 473 J, the clutch (e_loss - e_loss_fluid) 32 J."""
    tc = make(TorqueConverter)
    inertias = (0.2, 0.05)
    kinetic_start = 0.5 * 0.2 * 80.0 ** 2
    work, t, h, locked = 0.0, 0.0, 1e-3, []
    for k in range(1000):
        t_now = k * h
        tc.assign({"tau_pump": 150.0, "tau_turbine": -50.0, "f_n": max(0.0, 2e4 * (t_now - 0.2))})
        locked.append(feedthrough(tc)["locked"])
        before = (tc.phi_pump, tc.phi_turbine)
        t = advance(tc, t, h)
        work += 150.0 * (tc.phi_pump - before[0]) - 50.0 * (tc.phi_turbine - before[1])
    kinetic = 0.5 * inertias[0] * tc.w_pump ** 2 + 0.5 * inertias[1] * tc.w_turbine ** 2
    assert not locked[0] and locked[-1]
    assert not locked[352] and locked[353]
    assert tc.e_loss_fluid > 450.0 and tc.e_loss - tc.e_loss_fluid > 30.0
    assert work == pytest.approx(kinetic - kinetic_start + tc.e_loss, rel=1e-12)
    assert tc.w_pump == tc.w_turbine and tc.tau_fluid_pump == tc.tau_fluid_turbine == 0.0


# ------------------------------------------------------------------------------ lock-up
#: the lock-up case: the pump held at 200 rad/s (J_pump = 1e9 kg.m2, no torque: it slows by
#: 1e-7 rad/s^2), the turbine (0.05 kg.m2) at 192 rad/s (SR = 0.96, above SR_6) loaded with
#: 50 N.m, f_n ramped at 1e5 N/s (held over each step)
W_PUMP, W_TURBINE, J_TURBINE, TAU_TURBINE, F_RATE = 200.0, 192.0, 0.05, -50.0, 1e5


def lock_time(h):
    """The analytic lock instant of the lock-up case.  Above SR_6 the fluid gives the turbine
    beta s with s = w_pump - w_turbine, beta = w_pump / ((1 - SR_6) K_6^2) = 5.10 N.m.s/rad,
    so while the clutch slips s' = -a_k - k s with k = beta / J_turbine = 102 1/s and
    a_k = (tau_turbine + T_c,k) / J_turbine, T_c,k = 0.0242 f_n at the step's start: over a
    step s = (s_k + a_k / k) exp(-k t) - a_k / k, zero at ln(1 + k s_k / a_k) / k (a_k > 0)."""
    beta = W_PUMP / (0.05 * 28.0 ** 2)
    rate = beta / J_TURBINE
    s, t = W_PUMP - W_TURBINE, 0.0
    while True:
        a = (TAU_TURBINE + KINETIC_LEVER * F_RATE * t) / J_TURBINE
        if a > 0.0 and math.log1p(rate * s / a) / rate <= h:
            return t + math.log1p(rate * s / a) / rate
        decay = math.exp(-rate * h)
        s = (s + a / rate) * decay - a / rate
        t += h


def measured_lock_time(h):
    """The lock instant the converter takes: the communication points of h up to the step in
    which it locks, then that step's length bisected (60 times) between slipping and locked,
    from the state saved before it; the converter afterwards (locked at the end of the step)."""
    tc = make(TorqueConverter, J_pump=1e9, w_pump_start=W_PUMP, w_turbine_start=W_TURBINE, tau_pump=0.0,
              tau_turbine=TAU_TURBINE)
    t, n = 0.0, 0
    while True:
        tc.assign({"f_n": F_RATE * n * h})
        assert not feedthrough(tc)["locked"]
        saved = tc.record()
        if advance(tc, t, h) and tc.w_slip == 0.0:
            break
        t, n = t + h, n + 1
    slipping, locked = 0.0, h
    for _ in range(60):
        middle = 0.5 * (slipping + locked)
        tc.restore(saved, lambda: "")
        advance(tc, t, middle)
        if tc.w_slip == 0.0:
            locked = middle
        else:
            slipping = middle
    tc.restore(saved, lambda: "")
    advance(tc, t, h)
    return t + locked, tc


def test_lock_up_engages_at_the_analytic_instant_and_then_turns_pump_and_turbine_together():
    """With f_n rising, the clutch locks at lock_time (30.32 ms at h = 1 ms) to within 2e-5 s
    (measured 1.39e-5: Heun's error in the slip, which the fluid decelerates by 3 % near the
    lock), four times closer at h / 2 (measured 4.02).  Then it holds: locked, the speeds equal,
    no fluid torque (SR = 1), no loss, the clutch passing the load the pump holds (50 N.m)."""
    errors = []
    for h in (1e-3, 5e-4):
        measured, tc = measured_lock_time(h)
        errors.append(abs(measured - lock_time(h)))
    assert errors[0] <= 2e-5
    assert 3.5 <= errors[0] / errors[1] <= 4.5
    t = 0.031
    for _ in range(5):
        t = advance(tc, t, 5e-4, f_n=F_RATE * t)
        out = feedthrough(tc)
        assert out["locked"] and tc.w_pump == tc.w_turbine and tc.w_slip == 0.0
        assert tc.tau_fluid_pump == tc.tau_fluid_turbine == 0.0 and out["p_loss"] == 0.0
        assert out["tau_fric"] == pytest.approx(-TAU_TURBINE, rel=1e-9)


def test_a_locked_start_stays_locked_below_the_capacity():
    """Locked at 100 rad/s with 8000 N (T_s = 228.8 N.m): 150 N.m on the pump and 50 N.m of load
    accelerate both at 100 / 0.25 = 400 rad/s^2; the clutch passes J_turbine a + 50 = 70 N.m, the
    fluid nothing."""
    tc = make(TorqueConverter, w_pump_start=100.0, w_turbine_start=100.0, locked_start=True, f_n=8000.0)
    advance(tc, 0.0, 1e-3, steps=100)
    assert tc.w_pump == tc.w_turbine == pytest.approx(100.0 + 400.0 * 0.1, rel=ROUNDING)
    out = feedthrough(tc)
    assert out["locked"] and out["tau_fric"] == pytest.approx(70.0, rel=ROUNDING) and tc.e_loss == 0.0


# ------------------------------------------------------------------------------ refusals
def test_a_step_beyond_the_stability_limit_is_refused_and_changes_nothing():
    """J_pump = 1e-3 kg.m2 at 200 rad/s against the turbine at rest: the pump's damping
    2 w / K(0)^2 - K's slope = 2.08 N.m.s/rad gives rate 2080 1/s, the limit 2 / rate = 0.96 ms.
    A step of 5 ms is refused naming the limit, the state and every output unchanged; half the
    limit is taken."""
    tc = make(TorqueConverter, J_pump=1e-3, w_pump_start=200.0, w_turbine_start=0.0)
    before = (tc.record(), [getattr(tc, v.name) for v in TorqueConverter.VARIABLES])
    problem = tc.take_step(0.0, 5e-3)
    assert problem is not None and "exceeds the stability limit" in problem and "J_pump = 0.001" in problem
    limit = float(problem.split("2 / rate = ")[1].split(" s")[0])
    assert 0.9e-3 < limit < 1e-3
    assert (tc.record(), [getattr(tc, v.name) for v in TorqueConverter.VARIABLES]) == before
    assert tc.take_step(0.0, 0.5 * limit) is None


@pytest.mark.parametrize("values, message", [
    ({"SR_3": 0.3}, "SR_3 = 0.3 must be greater than SR_2 = 0.4 (speed-ratio breakpoints strictly increasing)"),
    ({"SR_6": 1.0}, "SR_6 = 1.0 is outside [0, 1): the breakpoints lie below the zero-slip point SR = 1"),
    ({"K_2": 0.0}, "K_2 = 0.0 is outside the allowed range [0.001, inf)"),
    ({"K_4": -17.0}, "K_4 = -17.0 is outside the allowed range [0.001, inf)"),
    ({"TR_4": 1.5}, "the efficiency SR * TR = 1.2 > 1 at SR = 0.8 between SR_3 and SR_4 (TR from 1.25 to 1.5)"),
    ({"TR_5": 1.04, "TR_6": 1.04}, "the efficiency SR * TR = 1.04 > 1 at SR = 1 above SR_6 (TR held at TR_6)"),
])
def test_a_table_that_is_no_converter_is_refused_naming_the_value(values, message):
    tc = TorqueConverter(instance_name="tc", resources=None)
    tc.assign(values)
    problems = tc.parameter_problems()
    assert any(p.startswith(message) for p in problems), problems
    with pytest.raises(ParameterError, match="invalid parameters"):
        tc.initialize()
