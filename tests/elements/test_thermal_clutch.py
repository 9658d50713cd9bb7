"""The clutches' thermal model (solvers.thermal, fmus.clutch.FrictionChainElement) against
physical facts: the exact temperature under constant power, the energy balance (dissipated =
stored + transferred) with the transferred heat checked on its own, the split of the
dissipation between DualClutch's clutches, friction falling as the clutch heats, and the
refusal of a temperature outside the friction law.

The slaves run in-process (the FMU calls without the FMI layer), as in
test_friction_elements.py.  Tolerances are stated with each test.
"""
import math

import pytest

from drivetrain_fmu.fmus import Clutch, DualClutch

J1, J2 = 0.2, 0.28                  # Clutch's defaults (case Z1): T_s = 100, T_c = 80 N.m at f_n = 1000 N


def make(cls, **values):
    slave = cls(instance_name=cls.__name__, resources=None)
    slave.setup_experiment(0.0)
    slave.assign(values)
    slave.enter_initialization_mode()
    slave.exit_initialization_mode()
    return slave


def feedthrough(slave):
    slave.update_feedthrough()
    return {name: getattr(slave, name) for name in slave.feedthrough_names}


def step(slave, t, h):
    assert slave.do_step(t, h) is True, [entry.msg for entry in slave.log_queue]
    return t + h


# ------------------------------------------------------------------ constant power
@pytest.mark.parametrize("h", [1e-3, 1e-2, 0.1])
def test_temperature_under_constant_power_is_the_exact_exponential(h):
    """A clutch slipping at a held slip (external torques +-T_c balance the friction on two
    equal inertias, so both speeds stay exactly constant) dissipates P = T_c w_slip; the
    temperature then is T_amb + P/G + (T0 - T_amb - P/G) exp(-G t / C), and the heat
    transferred, the integral of G (T - T_amb), is P t - C (T(t) - T0).  The element's
    update is that solution for the step's mean power, which is exact for constant power at
    any step size, so the difference is rounding: a few operations per step on T (and the
    step's dissipation from the angles, rounded relative to them): measured at most 8.5e-15
    of T (38 ulps after 20 000 steps of 1 ms), asserted 1e-13.  The transferred heat is
    compared with P t - C (T(t) - T0), whose own rounding is C times T's (500 J/K x 6e-14 K
    = 3e-11 J against P t = 8 J after the first 1 ms step): measured 3.2e-12 of P t,
    asserted 1e-11."""
    c_th, g_th, t0, t_amb = 500.0, 10.0, 300.0, 290.0
    clutch = make(Clutch, J_1=1.0, J_2=1.0, w_1_start=100.0, w_2_start=0.0, thermal=True,
                  C_th=c_th, G_th=g_th, T_th_start=t0)
    clutch.assign({"T_amb": t_amb})
    torque = feedthrough(clutch)["tau_fric"]
    clutch.assign({"tau_1": torque, "tau_2": -torque})
    power = torque * 100.0
    t, worst = 0.0, 0.0
    for k in range(1, round(20.0 / h) + 1):
        step(clutch, t, h)
        t = k * h
        exact = t_amb + power / g_th + (t0 - t_amb - power / g_th) * math.exp(-g_th * t / c_th)
        transferred = power * t - c_th * (exact - t0)
        assert clutch.w_slip == 100.0
        worst = max(worst, abs(clutch.T_th - exact) / exact)
        assert clutch.e_heat == pytest.approx(transferred, rel=1e-11, abs=1e-11 * power * t)
        assert feedthrough(clutch)["p_heat"] == g_th * (clutch.T_th - t_amb)
    assert worst <= 1e-13, worst
    assert clutch.T_th - t0 > 100.0        # it did heat: 263 K of the 790 K it tends to


# ------------------------------------------------------------------ energy balance
F_N = {  # (until t, f_n_a, f_n_b): both slip, then a locks with b slipping, then b locks and a opens
    0: (0.3, 150.0, 100.0), 1: (0.6, 3000.0, 100.0), 2: (1.0, 0.0, 3000.0)}
THERMAL = dict(thermal=True, C_th_a=50.0, C_th_b=80.0, G_th_a=2.0, G_th_b=5.0, T_th_a_start=310.0,
               T_th_b_start=295.0, c_mu_T_a=-1e-3, c_mu_T_b=-1e-3)


def shift(clutch, h=1e-3):
    """DualClutch (Z3's Stribeck law: ODE phases, two slipping at once) from rest: engine
    torque on body 2, loads on bodies 1 and 3, the clamp forces of F_N; returns the
    (locked_a, locked_b) pairs seen at the communication points."""
    clutch.assign({"tau_1": -30.0, "tau_2": 100.0, "tau_3": -10.0, "T_amb": 300.0})
    seen, t = set(), 0.0
    for until, f_a, f_b in F_N.values():
        clutch.assign({"f_n_a": f_a, "f_n_b": f_b})
        while t < until - h / 2:
            t = step(clutch, t, h)
            locked = feedthrough(clutch)
            seen.add((locked["locked_a"] if clutch.f_n_a else None, locked["locked_b"]))
    return seen


def stored(clutch):
    return (clutch.C_th_a * (clutch.T_th_a - clutch.T_th_a_start)
            + clutch.C_th_b * (clutch.T_th_b - clutch.T_th_b_start))


def test_energy_balance_dissipated_is_stored_plus_transferred_through_locking_and_slipping():
    """e_loss = sum_j C_j (T_j - T_j0) + sum_j e_heat_j over a run in which both clutches of
    a DualClutch slip at once, lock and open, with heat flowing out and friction depending on
    the temperature: 1e-9 relative (the parts of each step are scaled to the step's e_loss;
    what remains is the rounding of the temperatures, about 1e-16 of them per step;
    measured 2.8e-14)."""
    clutch = make(DualClutch, **THERMAL)
    seen = shift(clutch)
    assert {(False, False), (True, False), (None, True)} <= seen, seen      # both slipped and both locked
    assert clutch.e_loss > 100.0
    assert stored(clutch) + clutch.e_heat_a + clutch.e_heat_b == pytest.approx(clutch.e_loss, rel=1e-9)
    assert clutch.e_heat_a > 0.0 and clutch.e_heat_b > 0.0


def test_with_no_heat_transfer_everything_dissipated_is_stored():
    """G = 0: nothing leaves (e_heat exactly 0) and sum_j C_j (T_j - T_j0) = e_loss, 1e-9
    relative (measured 5.9e-14): the transferred heat is checked without the element's
    bookkeeping of it."""
    clutch = make(DualClutch, **{**THERMAL, "G_th_a": 0.0, "G_th_b": 0.0})
    shift(clutch)
    assert clutch.e_heat_a == 0.0 and clutch.e_heat_b == 0.0
    assert stored(clutch) == pytest.approx(clutch.e_loss, rel=1e-9)


def test_after_a_long_cool_down_everything_has_been_transferred():
    """After the shift both clutches open and the bodies coast without torque for 3000 s,
    120 and 188 time constants C/G: each temperature is back at T_amb (to 1e-12 relative,
    exp(-120) being far below), so the heat transferred in all must be everything
    dissipated plus what the start temperatures held above T_amb, sum_j C_j (T_j0 - T_amb):
    1e-9 relative (measured 3.4e-13; the temperatures 1.9e-16 from T_amb).  The heat-flow output p_heat is G (T - T_amb) at every point."""
    clutch = make(DualClutch, **THERMAL)
    shift(clutch)
    clutch.assign({"tau_1": 0.0, "tau_2": 0.0, "tau_3": 0.0, "f_n_a": 0.0, "f_n_b": 0.0})
    t = 1.0
    for _ in range(300):
        t = step(clutch, t, 10.0)
        flows = feedthrough(clutch)
        assert flows["p_heat_a"] == clutch.G_th_a * (clutch.T_th_a - 300.0)
    assert clutch.T_th_a == pytest.approx(300.0, rel=1e-12) and clutch.T_th_b == pytest.approx(300.0, rel=1e-12)
    initial = clutch.C_th_a * (310.0 - 300.0) + clutch.C_th_b * (295.0 - 300.0)
    assert clutch.e_heat_a + clutch.e_heat_b == pytest.approx(clutch.e_loss + initial, rel=1e-9)


@pytest.mark.parametrize("w_stribeck", [(0.0, 0.0), (5.0, 5.0), (0.0, 5.0)], ids=["coulomb", "stribeck", "mixed"])
def test_each_clutch_is_heated_by_its_own_dissipation(w_stribeck):
    """Both clutches slipping at held slips (external torques balance the frictions read
    from the element, so the speeds stay constant: w_slip_a = 30, w_slip_b = 20 rad/s): each
    dissipates tau_j w_slip_j, so with G = 0 its temperature rises by tau_j w_slip_j t / C_j.
    Coulomb: analytic phases (tau_j dq_j); Stribeck: ODE phases with two slipping clutches
    (the Simpson split of the phase's energy balance); mixed (a Coulomb, b Stribeck): ODE
    phases, a takes tau_a dq_a, b the rest of the balance.  1e-9 relative (measured: at most
    2.8e-13); the slips stay at their start values exactly."""
    clutch = make(DualClutch, w_1_start=50.0, w_2_start=20.0, w_3_start=0.0, w_stribeck_a=w_stribeck[0],
                  w_stribeck_b=w_stribeck[1], thermal=True, G_th_a=0.0, G_th_b=0.0, C_th_a=50.0, C_th_b=80.0)
    clutch.assign({"f_n_a": 1000.0, "f_n_b": 2000.0})
    torques = feedthrough(clutch)
    tau_a, tau_b = torques["tau_fric_a"], torques["tau_fric_b"]
    assert tau_a != tau_b
    clutch.assign({"tau_1": tau_a, "tau_2": tau_b - tau_a, "tau_3": -tau_b})
    t = 0.0
    for _ in range(500):
        t = step(clutch, t, 2e-3)
    assert clutch.w_slip_a == pytest.approx(30.0, rel=1e-12) and clutch.w_slip_b == pytest.approx(20.0, rel=1e-12)
    assert clutch.C_th_a * (clutch.T_th_a - 293.15) == pytest.approx(tau_a * 30.0 * t, rel=1e-9)
    assert clutch.C_th_b * (clutch.T_th_b - 293.15) == pytest.approx(tau_b * 20.0 * t, rel=1e-9)


# ------------------------------------------------------------------ friction falls as it heats
def engagement(t_start, h=1e-3, c_mu=-2e-3, c_th=5.0):
    """Z1's engagement (body 1 at 100 rad/s, body 2 at rest, T_c = 80 N.m at T_ref) of a
    clutch of small capacity (5 J/K: its 583 J raise it by about 117 K) whose friction falls
    by 0.2 %/K.  Returns (the lock time reconstructed from the temperatures at the
    communication points, the communication point first reporting the lock, the
    temperatures)."""
    clutch = make(Clutch, thermal=True, C_th=c_th, G_th=0.0, c_mu_T=c_mu, T_th_start=t_start)
    rate = 80.0 * (1 / J1 + 1 / J2)             # the slip's deceleration at mu_ref
    slip, t, temperatures, lock = 100.0, 0.0, [clutch.T_th], None
    while not feedthrough(clutch)["locked"]:
        # explicit coupling: the capacity over the step is the one of its start temperature
        deceleration = rate * (1.0 + c_mu * (clutch.T_th - 293.15))
        if lock is None and slip <= deceleration * h:
            lock = t + slip / deceleration
        t = step(clutch, t, h)
        slip -= deceleration * h
        if lock is None:
            assert clutch.w_slip == pytest.approx(slip, rel=1e-10, abs=1e-10)
        temperatures.append(clutch.T_th)
    return lock, t, temperatures


def test_a_heating_clutch_locks_later_as_its_friction_falls():
    """With c_mu_T < 0 the capacity falls as the clutch heats: the slip follows the
    capacity of each step's start temperature (1e-10 relative: Coulomb friction, the slip
    linear in time within a step), the lock lies in the step the reconstruction puts it in,
    between the lock time with the capacity at the start temperature and the one at the
    final temperature, later than the lock time without heating (0.14583 s); a clutch that
    starts 100 K hotter locks later still."""
    t_cold = 100.0 / (80.0 * (1 / J1 + 1 / J2))
    lock, reported, temperatures = engagement(293.15)
    assert lock <= reported < lock + 1e-3
    hottest = 1.0 + -2e-3 * (temperatures[-1] - 293.15)
    assert temperatures[-1] - 293.15 > 100.0
    assert t_cold < lock < t_cold / hottest
    lock_hot, _, hot = engagement(393.15)
    start_factor = 1.0 + -2e-3 * 100.0
    assert t_cold / start_factor < lock_hot < t_cold / (1.0 + -2e-3 * (hot[-1] - 293.15))
    assert lock_hot > lock


# ------------------------------------------------------------------ refusal
def test_a_step_that_would_make_the_friction_negative_is_refused_naming_the_values():
    """c_mu_T = -2e-3 1/K: mu = 0 at T_ref + 500 K = 793.15 K.  A clutch of 0.5 J/K heated
    by a 50 ms step of Z1's engagement (about 330 J) would pass it: the step is refused, the
    message names the temperature, the coefficient and the limit, the state and the outputs
    are those before the step; a shorter step is taken."""
    clutch = make(Clutch, thermal=True, C_th=0.5, G_th=0.0, c_mu_T=-2e-3)
    state, outputs = clutch.state, (clutch.w_1, clutch.w_2, clutch.T_th, clutch.e_loss)
    assert clutch.do_step(0.0, 0.05) is False
    message = clutch.log_queue[-1].msg if clutch.log_queue else ""
    assert "T_th = " in message and "c_mu_T = -0.002 1/K" in message and "793.15 K" in message, message
    assert clutch.state is state
    assert (clutch.w_1, clutch.w_2, clutch.T_th, clutch.e_loss) == outputs
    assert clutch.do_step(0.0, 1e-4) is True


def test_a_start_temperature_outside_the_friction_law_fails_initialization():
    with pytest.raises(Exception, match=r"T_th_b_start = 900.0 K makes the friction coefficients negative.*"
                                        r"c_mu_T_b = -0.002 1/K.*793.15 K"):
        make(DualClutch, thermal=True, c_mu_T_b=-2e-3, T_th_b_start=900.0)


# ------------------------------------------------------------------ off, and the saved state
def test_the_thermal_bookkeeping_leaves_the_motion_bit_identical():
    """thermal on with c_mu_T = 0: the motion (every state of the friction system) equals
    bit for bit the one without the thermal model, through the ODE phases with the
    per-clutch split; off, the temperatures stay at their start values."""
    on, off = make(DualClutch, thermal=True), make(DualClutch)
    for until, f_a, f_b in F_N.values():
        for clutch in (on, off):
            clutch.assign({"tau_1": -30.0, "tau_2": 100.0, "tau_3": -10.0, "f_n_a": f_a, "f_n_b": f_b})
    t = 0.0
    for k in range(600):
        f_a, f_b = (150.0, 100.0) if k < 300 else (3000.0, 100.0)
        for clutch in (on, off):
            clutch.assign({"f_n_a": f_a, "f_n_b": f_b})
            step(clutch, t, 1e-3)
        t += 1e-3
        assert on.state.chain == off.state.chain
    assert on.T_th_a > 293.15 and off.T_th_a == 293.15 and off.e_heat_a == 0.0
    assert feedthrough(off)["p_heat_a"] == 0.0


def test_a_saved_thermal_state_continues_bit_identically():
    """record() mid-shift (temperatures, transferred heat, the friction state), run on,
    restore, run again: the same temperatures, heat and motion bit for bit."""
    clutch = make(DualClutch, **THERMAL)
    clutch.assign({"tau_1": -30.0, "tau_2": 100.0, "tau_3": -10.0, "f_n_a": 150.0, "f_n_b": 100.0})
    t = 0.0
    for _ in range(100):
        t = step(clutch, t, 1e-3)
    saved = clutch.record()

    def run_on():
        time = t
        for _ in range(100):
            time = step(clutch, time, 1e-3)
        return clutch.state, clutch.T_th_a, clutch.e_heat_b

    first = run_on()
    clutch.restore(saved, lambda: "not this code's state")
    assert run_on() == first
