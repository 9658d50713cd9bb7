"""Synchronizer against the closed form of a cone clutch between two inertias, the sleeve's
travel and rigid dogs (fmus/synchronizer.py).

Cone capacity T = mu r_cone f_sleeve / sin(alpha_cone) (defaults: 0.1 * 0.04 * 500 / sin(7 deg)
= 16.411 N.m).  Slipping from w_slip(0) = dw with external torques tau_gear, tau_shaft held,
the slip falls at the constant rate T / J_eff - sign(dw) g, g = tau_gear / J_gear - tau_shaft /
J_shaft, J_eff = J_gear J_shaft / (J_gear + J_shaft), and is zero after
    t_sync = |dw| / (T / J_eff - sign(dw) g)
(J_eff |dw| / T for free members; J_gear |dw| / T for a shaft held at its speed by tau_shaft =
-T sign(dw)).  The relative angle gained meanwhile is dw t_sync / 2 (the slip falls linearly to
zero), and stays: t_sync is measured from it after the lock, whatever the step size.  Then the
sleeve travels f_sleeve / (2 m_sleeve) (t - t_sync)^2 and the dogs engage after
sqrt(2 m_sleeve x_engage / f_sleeve) (defaults: 3.162 ms).

The slaves run in-process (the built FMU is checked by the element-contract, model-description
and fuzz tests).  Tolerance: the cone is Coulomb friction, so the motion is piecewise quadratic
in time with its lock instant in closed form (solvers.friction), and speeds, angles, instants
and energies agree with these formulas to rounding: ROUNDING = 1e-12 relative (a few dozen
floating-point operations per step, each 1.1e-16, as tests/elements/test_friction_elements.py).
Angles relative to each other lose the digits of the absolute angle (a 5 rad angle read to
1e-15 relative gives a 0.6 rad difference to 1e-14 relative), still well within ROUNDING.  The
sleeve's travel f (t - t_sync)^2 / (2 m) squares a difference of instants: t - t_sync is at
least 1.06e-5 s in these tests, of instants of about 0.03 s known to a few of their units in
the last place (3.5e-18 s each), so up to about 2e-12 relative (measured: 9.1e-13):
TRAVEL = 1e-11.
"""
import math

import pytest

from drivetrain_fmu.fmus import Synchronizer
from drivetrain_fmu.fmus.model import ParameterError
from tests.elements.test_friction_elements import ROUNDING, feedthrough, make

J_GEAR, J_SHAFT = 0.01, 0.05
J_EFF = J_GEAR * J_SHAFT / (J_GEAR + J_SHAFT)
MU, R_CONE, ALPHA, F_SLEEVE, M_SLEEVE, X_ENGAGE = 0.1, 0.04, math.radians(7.0), 500.0, 0.5, 0.005
T_CONE = MU * R_CONE * F_SLEEVE / math.sin(ALPHA)       # 16.411 N.m
T_TRAVEL = math.sqrt(2.0 * M_SLEEVE * X_ENGAGE / F_SLEEVE)   # 3.162 ms
TRAVEL = 1e-11


def run(sync, t0, t1, h, **inputs):
    """Steps of ``h`` from ``t0`` to ``t1`` with ``inputs`` set; one record per step end:
    (t, w_slip, engaged, x_sleeve, locked)."""
    sync.assign(inputs)
    n = round((t1 - t0) / h)
    records = []
    for k in range(1, n + 1):
        t_start = t0 + (k - 1) * h
        assert sync.do_step(t_start, h) is True, [entry.msg for entry in sync.log_queue]
        out = feedthrough(sync)
        records.append((t0 + k * h, sync.w_slip, out["engaged"], out["x_sleeve"], out["locked"]))
    return records


def kinetic_energy(sync):
    return 0.5 * (J_GEAR * sync.w_gear ** 2 + J_SHAFT * sync.w_shaft ** 2)


def test_the_defaults_are_the_documented_case():
    sync = make(Synchronizer)
    assert (sync.J_gear, sync.J_shaft, sync.mu, sync.r_cone, sync.f_sleeve) == (J_GEAR, J_SHAFT, MU, R_CONE, F_SLEEVE)
    assert sync.alpha_cone == pytest.approx(ALPHA, rel=1e-15)
    assert feedthrough(sync)["tau_cone"] == pytest.approx(T_CONE, rel=ROUNDING)
    assert T_CONE == pytest.approx(16.411018, rel=1e-7)


@pytest.mark.parametrize("h", [1e-4, 1e-3, 7e-3, 0.05])
@pytest.mark.parametrize("w_gear", [150.0, 40.0])        # upshift (gear faster) and downshift (slower)
def test_free_members_synchronize_after_j_eff_dw_over_t_cone(h, w_gear):
    """No external torques: the slip falls at T / J_eff and is zero after J_eff |dw| / T (25.4 ms
    from 50 rad/s, 15.2 ms from -30 rad/s); the instant read from the relative angle is that one
    to ROUNDING at every step size (the lock is decided exactly inside the step); before it the
    cone slips (locked false) with w_slip = dw - sign(dw) T t / J_eff."""
    sync = make(Synchronizer, w_gear_start=w_gear, w_shaft_start=100.0)
    dw = w_gear - 100.0
    t_sync = J_EFF * abs(dw) / T_CONE
    records = run(sync, 0.0, 0.1, h)
    for t, w_slip, engaged, _, locked in records:
        if t < t_sync:
            assert w_slip == pytest.approx(dw - math.copysign(T_CONE, dw) * t / J_EFF, rel=ROUNDING, abs=ROUNDING * 50)
            assert not locked and not engaged
        else:
            assert w_slip == 0.0 and locked
    relative_angle = sync.phi_gear - sync.phi_shaft
    assert 2.0 * relative_angle / dw == pytest.approx(t_sync, rel=ROUNDING)
    w_common = (J_GEAR * w_gear + J_SHAFT * 100.0) / (J_GEAR + J_SHAFT)      # momentum is kept
    assert sync.w_gear == sync.w_shaft == pytest.approx(w_common, rel=ROUNDING)


def test_a_driven_shaft_synchronizes_after_j_gear_dw_over_t_cone():
    """tau_shaft = -T holds the shaft at 100 rad/s while the cone slips (the cone's torque on it is
    +T): the gear alone is brought down, after J_gear dw / T = 30.5 ms (with 50 rad/s), the shaft's
    speed unchanged to then; after the lock both accelerate at -T / (J_gear + J_shaft)."""
    sync = make(Synchronizer, w_gear_start=150.0, w_shaft_start=100.0)
    t_sync = J_GEAR * 50.0 / T_CONE
    run(sync, 0.0, 0.03, 1e-3, tau_shaft=-T_CONE)
    assert sync.w_shaft == pytest.approx(100.0, rel=ROUNDING)
    assert sync.w_gear == pytest.approx(150.0 - T_CONE * 0.03 / J_GEAR, rel=ROUNDING)
    run(sync, 0.03, 0.06, 1e-3)
    assert 2.0 * (sync.phi_gear - sync.phi_shaft) / 50.0 == pytest.approx(t_sync, rel=ROUNDING)
    assert sync.w_gear == sync.w_shaft == pytest.approx(100.0 - T_CONE * (0.06 - t_sync) / (J_GEAR + J_SHAFT),
                                                        rel=ROUNDING)


def test_the_sleeve_travels_only_after_synchronization_and_the_dogs_engage_after_x_engage():
    """Steps of 0.1 ms: the sleeve stays at 0 while the cone slips, then travels
    f_sleeve / (2 m_sleeve) (t - t_sync)^2; the dogs are engaged at the first step end after
    t_sync + sqrt(2 m_sleeve x_engage / f_sleeve) = 28.55 ms and not before, with x_sleeve = x_engage."""
    sync = make(Synchronizer)
    t_sync = J_EFF * 50.0 / T_CONE
    t_engage = t_sync + T_TRAVEL
    records = run(sync, 0.0, 0.04, 1e-4)
    engaged_at = [t for t, _, engaged, _, _ in records if engaged]
    assert engaged_at and engaged_at[0] - 1e-4 < t_engage <= engaged_at[0]
    for t, w_slip, engaged, x_sleeve, _ in records:
        if t < t_sync:
            assert x_sleeve == 0.0
        elif t < t_engage:
            assert not engaged
            assert x_sleeve == pytest.approx(F_SLEEVE / (2.0 * M_SLEEVE) * (t - t_sync) ** 2, rel=TRAVEL)
        else:
            assert engaged and x_sleeve == X_ENGAGE and w_slip == 0.0


def test_no_engagement_while_slipping_even_at_zero_travel():
    """x_engage = 0 (dogs that would engage the instant the sleeve is free).  The gear, 30 rad/s
    slower than the shaft, is driven with tau_gear = 2 T: at zero slip holding the members
    together would need J_shaft / (J_gear + J_shaft) 2 T = 1.67 T > T, so the cone cannot hold:
    the slip passes through zero (at 30 / (2 T / J_gear + T / J_eff) = 5.7 ms, inside a step)
    and grows on the other side, and the dogs never engage, the sleeve never moves.  Every step end: engaged only
    with w_slip exactly 0."""
    sync = make(Synchronizer, x_engage=0.0, w_gear_start=70.0, w_shaft_start=100.0)
    records = run(sync, 0.0, 0.1, 1e-3, tau_gear=2.0 * T_CONE)
    slips = [w_slip for _, w_slip, _, _, _ in records]
    assert slips[0] < 0.0 < slips[-1]                     # it went through zero
    assert not any(engaged or locked or x_sleeve for _, _, engaged, x_sleeve, locked in records)
    # the same with 0.9 T: the cone holds at zero slip (0.75 T needed) and the dogs engage at once
    sync = make(Synchronizer, x_engage=0.0, w_gear_start=70.0, w_shaft_start=100.0)
    records = run(sync, 0.0, 0.1, 1e-3, tau_gear=0.9 * T_CONE)
    assert records[-1][2] and all(w_slip == 0.0 for _, w_slip, engaged, _, _ in records if engaged)


def test_a_cone_that_breaks_away_blocks_the_sleeve_until_it_holds_again():
    """Synchronized at 25.4 ms, the sleeve travels; at 27 ms (1.6 ms of its 3.16 ms) the gear is
    driven with 40 N.m (holding would need 33 N.m > T): the cone slips again, the dogs stay out,
    the sleeve stays where it was blocked; with the torque removed at 35 ms the cone
    synchronizes again and the sleeve goes on from there, from rest: the dogs engage
    sqrt(2 m (x_engage - x_blocked) / f) after the second lock."""
    sync = make(Synchronizer)
    t_sync = J_EFF * 50.0 / T_CONE
    run(sync, 0.0, 0.027, 1e-3)
    x_blocked = feedthrough(sync)["x_sleeve"]
    assert x_blocked == pytest.approx(F_SLEEVE / (2.0 * M_SLEEVE) * (0.027 - t_sync) ** 2, rel=TRAVEL)
    records = run(sync, 0.027, 0.035, 1e-3, tau_gear=40.0)
    assert all(w_slip > 0.0 and not engaged and x_sleeve == x_blocked for _, w_slip, engaged, x_sleeve, _ in records)
    dw = sync.w_slip
    phi_rel = sync.phi_gear - sync.phi_shaft
    records = run(sync, 0.035, 0.06, 1e-4, tau_gear=0.0)
    t_lock = 0.035 + J_EFF * dw / T_CONE
    assert sync.phi_gear - sync.phi_shaft == pytest.approx(phi_rel + dw * (t_lock - 0.035) / 2.0, rel=ROUNDING)
    t_engage = t_lock + math.sqrt(2.0 * M_SLEEVE * (X_ENGAGE - x_blocked) / F_SLEEVE)
    engaged_at = [t for t, _, engaged, _, _ in records if engaged]
    assert engaged_at[0] - 1e-4 < t_engage <= engaged_at[0]


def test_engaged_dogs_join_the_members_rigidly_beyond_the_cone_capacity():
    """Engaged (from the start), 1000 N.m on the gear and -300 N.m on the shaft, 60 and 18 times
    the cone's capacity: the speeds stay equal to the bit, both accelerate at (1000 - 300) /
    (J_gear + J_shaft), the dogs pass (J_shaft 1000 + J_gear 300) / (J_gear + J_shaft) =
    883.3 N.m (the shaft's J a - tau_shaft), the cone nothing, and nothing is dissipated.  The
    same torques with the dogs out make the cone slip (its capacity is what they exceed)."""
    sync = make(Synchronizer, w_gear_start=100.0, w_shaft_start=100.0, engaged_start=True)
    sync.assign({"tau_gear": 1000.0, "tau_shaft": -300.0})
    out = feedthrough(sync)
    tau_dog = (J_SHAFT * 1000.0 + J_GEAR * 300.0) / (J_GEAR + J_SHAFT)
    assert out["engaged"] and out["locked"] and out["tau_cone"] == 0.0
    assert out["tau_dog"] == pytest.approx(tau_dog, rel=ROUNDING)
    records = run(sync, 0.0, 0.1, 1e-3, tau_gear=1000.0, tau_shaft=-300.0)
    assert all(w_slip == 0.0 and engaged for _, w_slip, engaged, _, _ in records)
    a = 700.0 / (J_GEAR + J_SHAFT)
    assert sync.w_gear == sync.w_shaft == pytest.approx(100.0 + a * 0.1, rel=ROUNDING)
    assert sync.phi_gear == pytest.approx(100.0 * 0.1 + 0.5 * a * 0.01, rel=ROUNDING)
    assert J_SHAFT * a - (-300.0) == pytest.approx(tau_dog, rel=ROUNDING)
    assert sync.e_loss == 0.0
    free = make(Synchronizer, w_gear_start=100.0, w_shaft_start=100.0)
    run(free, 0.0, 1e-3, 1e-3, tau_gear=1000.0, tau_shaft=-300.0)
    assert free.w_slip > 0.0 and not feedthrough(free)["engaged"]


@pytest.mark.parametrize("w_gear, tau_shaft", [(150.0, 0.0), (40.0, 0.0), (150.0, -T_CONE)])
def test_the_cone_dissipates_the_kinetic_energy_lost(w_gear, tau_shaft):
    """Free members: e_loss after the synchronization is the kinetic energy lost, J_eff dw^2 / 2
    (10.42 J from 50 rad/s); with the shaft driven it is the work of the torques minus the
    kinetic energy gained, and in every case the cone's torque times the angle it slipped,
    T (phi_gear - phi_shaft) sign(dw), all to ROUNDING (relative to the kinetic energy)."""
    sync = make(Synchronizer, w_gear_start=w_gear, w_shaft_start=100.0)
    ke0 = kinetic_energy(sync)
    phi_shaft0 = sync.phi_shaft
    run(sync, 0.0, 0.05, 1e-3, tau_shaft=tau_shaft)
    dw = w_gear - 100.0
    work = tau_shaft * (sync.phi_shaft - phi_shaft0)
    scale = ke0
    assert sync.e_loss == pytest.approx(ke0 + work - kinetic_energy(sync), rel=ROUNDING, abs=ROUNDING * scale)
    assert sync.e_loss == pytest.approx(T_CONE * abs(sync.phi_gear - sync.phi_shaft), rel=ROUNDING)
    if tau_shaft == 0.0:
        assert sync.e_loss == pytest.approx(0.5 * J_EFF * dw ** 2, rel=ROUNDING)


def test_releasing_the_sleeve_disengages_the_dogs_and_a_new_push_engages_them_again():
    """Engaged at 28.55 ms; at 40 ms f_sleeve = 0: at once (before any step) engaged and
    locked are false, tau_cone = tau_dog = 0 and x_sleeve = 0; with +10 N.m on the gear and -10 on
    the shaft they then turn apart at 10 / J_gear and -10 / J_shaft, nothing coupling them.
    Pushed again at 60 ms (torques off) the cone synchronizes them after J_eff |w_slip| / T and
    the dogs engage sqrt(2 m_sleeve x_engage / f_sleeve) later, the sleeve starting from neutral."""
    sync = make(Synchronizer)
    run(sync, 0.0, 0.04, 1e-3)
    assert feedthrough(sync)["engaged"]
    w0 = sync.w_gear
    sync.assign({"f_sleeve": 0.0, "tau_gear": 10.0, "tau_shaft": -10.0})
    out = feedthrough(sync)
    assert not out["engaged"] and not out["locked"] and out["x_sleeve"] == 0.0
    assert out["tau_cone"] == out["tau_dog"] == 0.0
    run(sync, 0.04, 0.06, 1e-3, f_sleeve=0.0, tau_gear=10.0, tau_shaft=-10.0)
    assert sync.w_gear == pytest.approx(w0 + 10.0 / J_GEAR * 0.02, rel=ROUNDING)
    assert sync.w_shaft == pytest.approx(w0 - 10.0 / J_SHAFT * 0.02, rel=ROUNDING)
    dw = sync.w_slip
    assert dw == pytest.approx(10.0 * 0.02 / J_EFF, rel=ROUNDING)
    records = run(sync, 0.06, 0.1, 1e-4, f_sleeve=F_SLEEVE, tau_gear=0.0, tau_shaft=0.0)
    t_sync = 0.06 + J_EFF * dw / T_CONE
    engaged_at = [t for t, _, engaged, _, _ in records if engaged]
    assert engaged_at[0] - 1e-4 < t_sync + T_TRAVEL <= engaged_at[0]
    assert all(engaged for t, _, engaged, _, _ in records if t >= engaged_at[0])


def test_engagement_does_not_depend_on_the_step_size_and_never_chatters():
    """The default case to 0.1 s with steps from 10 us to 0.1 s (one step): the same end state
    (speeds, angles, e_loss) to ROUNDING, engaged in every run, and in the finest run (10 000
    steps) the dogs switch exactly once, from out to in, and the cone locks exactly once."""
    ends = []
    for h in (1e-5, 1e-4, 1e-3, 1e-2, 0.1):
        sync = make(Synchronizer)
        records = run(sync, 0.0, 0.1, h)
        ends.append((sync.w_gear, sync.w_shaft, sync.phi_gear, sync.phi_shaft, sync.e_loss))
        assert records[-1][2], h
        if h == 1e-5:
            engaged = [r[2] for r in records]
            locked = [r[4] for r in records]
            assert sum(a != b for a, b in zip(engaged, engaged[1:])) == 1
            assert sum(a != b for a, b in zip(locked, locked[1:])) == 1
    for end in ends[1:]:
        assert end == pytest.approx(ends[0], rel=ROUNDING)


def test_parameters_a_synchronizer_cannot_have_are_refused_naming_them():
    """A cone within its friction angle (tan(alpha_cone) <= mu) locks itself; engaged dogs at
    the start need equal speeds."""
    with pytest.raises(ParameterError, match=r"alpha_cone = .* must exceed the friction angle atan\(mu\)"):
        make_model(mu=0.2, alpha_cone=math.atan(0.2))
    with pytest.raises(ParameterError, match="engaged_start = true needs w_gear_start == w_shaft_start"):
        make_model(engaged_start=True)
    make_model(mu=0.2, alpha_cone=math.nextafter(math.atan(0.2), 1.0))     # just outside: accepted


def make_model(**values):
    model = Synchronizer(instance_name="s", resources=None)
    model.assign(values)
    model.initialize()
    return model
