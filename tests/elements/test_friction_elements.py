"""Brake, OneWayClutch and PlanetaryGear: the friction system of solvers.friction with a
fixed housing, a one-way interface and a kinematic constraint, against analytic cases.

The slaves run in-process (the FMU calls without the FMI layer; the built FMUs are
covered for every element by the element-contract and catalog tests).  Tolerances: the
motion is piecewise quadratic in time with events found in closed form (Coulomb
friction), so speeds and instants agree with the formulas to rounding: 1e-12 relative
to the largest speed (a few dozen floating-point operations per step, each 1.1e-16).
"""
import itertools
import math

import pytest

from drivetrain_fmu.fmus import Brake, OneWayClutch, PlanetaryGear

ROUNDING = 1e-12


def make(cls, **values):
    slave = cls(instance_name=cls.__name__, resources=None)
    slave.setup_experiment(0.0)
    for name, value in values.items():
        slave.assign({name: value})
    slave.enter_initialization_mode()
    slave.exit_initialization_mode()
    return slave


def advance(slave, t, h, steps=1, **inputs):
    """``steps`` communication steps of ``h`` from ``t`` with ``inputs`` set; the new time."""
    for name, value in inputs.items():
        slave.assign({name: value})
    for _ in range(steps):
        assert slave.do_step(t, h) is True, [entry.msg for entry in slave.log_queue]
        t += h
    return t


def feedthrough(slave):
    """The feedthrough outputs at the inputs set now (what fmi2GetReal of them returns)."""
    slave.update_feedthrough()
    return {name: getattr(slave, name) for name in slave.feedthrough_names}


# ---------------------------------------------------------------------------------- Brake
def test_brake_stops_the_body_at_the_analytic_instant_and_holds_it():
    """J = 1 kg.m2 at 10 rad/s, T_c = mu_k r_eff n f_n = 0.32 * 0.125 * 2 * 1000 = 80 N.m:
    w = 10 - 80 t until t = 1/8 s (inside the second 0.1 s step), then at rest; the angle
    10 t - 40 t^2 ends at 0.625 rad and the brake has dissipated the 50 J of kinetic energy."""
    brake = make(Brake)
    assert feedthrough(brake)["tau_fric"] == -80.0           # opposes the motion
    t = advance(brake, 0.0, 0.1)
    assert brake.w == pytest.approx(10.0 - 80.0 * 0.1, rel=ROUNDING)
    advance(brake, t, 0.1, steps=3)
    assert brake.w == 0.0 and feedthrough(brake)["locked"]
    assert brake.phi == pytest.approx(0.625, rel=ROUNDING)
    assert brake.e_loss == pytest.approx(50.0, rel=ROUNDING)


def test_brake_holds_below_its_static_capacity_and_slips_above_it():
    """Locked at rest, T_s = mu_s r_eff n f_n = 100 N.m: a torque of 99 N.m is held (the
    housing applies -99 N.m), 101 N.m breaks away with friction T_c = 80 N.m (no Stribeck
    drop): w = (101 - 80) t / J."""
    brake = make(Brake, w_start=0.0, locked_start=True)
    advance(brake, 0.0, 0.01, steps=10, tau=99.0)
    assert brake.w == 0.0 and brake.phi == 0.0
    assert feedthrough(brake) == {"tau_fric": -99.0, "locked": True, "p_loss": 0.0}
    advance(brake, 0.1, 0.01, steps=10, tau=101.0)
    assert brake.w == pytest.approx(21.0 * 0.1, rel=ROUNDING)
    assert feedthrough(brake)["tau_fric"] == -80.0


def test_brake_refuses_a_locked_start_in_motion():
    brake = Brake(instance_name="b", resources=None)
    brake.locked_start = True
    assert brake.parameter_problems() == ["locked_start = true needs w_start == 0 (got 10.0)"]


# --------------------------------------------------------------------------- OneWayClutch
def test_freewheel_locks_when_the_driving_body_catches_up_inside_a_step():
    """Body 1 (0.1 kg.m2, 1 N.m) accelerates at 10 rad/s2 from rest, body 2 coasts at 5 rad/s:
    they meet at t = 0.5 s, inside the step 0.3..0.6 s; from then on they turn together at
    1 / 0.2 = 5 rad/s2 and the clutch carries 0.5 N.m to body 2.  Momentum: J_1 w_1 + J_2
    w_2 grows by (tau_1 + tau_2) t exactly whatever the clutch does."""
    clutch = make(OneWayClutch)
    t = advance(clutch, 0.0, 0.3)
    assert (clutch.w_1, clutch.w_2) == (pytest.approx(3.0, rel=ROUNDING), 5.0)
    assert not feedthrough(clutch)["locked"]
    t = advance(clutch, t, 0.3)
    assert clutch.w_1 == clutch.w_2 == pytest.approx(5.0 + 5.0 * 0.1, rel=ROUNDING)
    assert clutch.w_slip == 0.0
    assert feedthrough(clutch)["locked"] and feedthrough(clutch)["tau_fric"] == pytest.approx(0.5, rel=ROUNDING)
    assert 0.1 * clutch.w_1 + 0.1 * clutch.w_2 == pytest.approx(0.1 * 5.0 + 1.0 * t, rel=ROUNDING)


def test_freewheel_lets_the_driven_body_overrun():
    """Locked at 5 rad/s, then body 2 is driven ahead (tau_2 = 2 N.m, tau_1 = 1 N.m): locked,
    the clutch would have to pull body 2 back (tau_fric = J_2 (tau_1 + tau_2) / (J_1 + J_2)
    - tau_2 = -0.5 N.m < 0), so it frees at once: w_1' = 10, w_2' = 20 rad/s2."""
    clutch = make(OneWayClutch, w_1_start=5.0, w_2_start=5.0, locked_start=True)
    advance(clutch, 0.0, 0.1, tau_1=1.0, tau_2=2.0)
    assert clutch.w_1 == pytest.approx(6.0, rel=ROUNDING) and clutch.w_2 == pytest.approx(7.0, rel=ROUNDING)
    assert not feedthrough(clutch)["locked"] and feedthrough(clutch)["tau_fric"] == 0.0


def test_freewheel_drag_slows_the_overrunning_body_and_dissipates_its_work():
    """Free-running with drag 0.2 N.m, no external torques: body 2 decelerates at 2 rad/s2,
    body 1 accelerates at 2 rad/s2 from 0 until they meet at t = 5 / 4 = 1.25 s at 2.5
    rad/s; dissipated: drag times the integral of |w_slip| = 0.2 * 5 * 1.25 / 2 = 0.625 J,
    the kinetic energy lost (1.25 J - 2 * 0.3125 J)."""
    clutch = make(OneWayClutch, tau_drag=0.2)
    advance(clutch, 0.0, 0.5, steps=4, tau_1=0.0)
    assert clutch.w_1 == clutch.w_2 == pytest.approx(2.5, rel=ROUNDING)
    assert clutch.e_loss == pytest.approx(0.625, rel=ROUNDING)
    assert feedthrough(clutch)["locked"]


def test_freewheel_refuses_body_1_overrunning_body_2_at_the_start():
    clutch = OneWayClutch(instance_name="o", resources=None)
    clutch.w_1_start = 6.0
    assert clutch.parameter_problems()[0].startswith("w_1_start = 6.0 must not exceed w_2_start = 5.0")


# -------------------------------------------------------------------------- PlanetaryGear
def ring_from_willis(gear, w_sun, w_carrier):
    """w_ring from Willis' equation w_sun - w_carrier = -(z_ring / z_sun) (w_ring - w_carrier)."""
    return w_carrier - (w_sun - w_carrier) * gear.z_sun / gear.z_ring


def test_planetary_with_the_ring_braked_is_a_reduction_of_z_sun_over_z_sun_plus_z_ring():
    """Ring held, 10 N.m on the sun: the carrier turns at rho = z_sun / (z_sun + z_ring) = 1/3
    of the sun; the sun accelerates at tau / (J_sun + rho^2 J_carrier) (the carrier's inertia
    reflected to the sun); the housing holds the ring with (z_ring / z_sun) times the
    torque the sun passes to the mesh, tau - J_sun a_sun."""
    gear = make(PlanetaryGear)
    rho = 50 / 150
    a_sun = 10.0 / (0.01 + rho**2 * 0.05)
    advance(gear, 0.0, 0.1, steps=5)
    assert gear.w_ring == 0.0 and feedthrough(gear)["locked_b"]
    assert gear.w_sun == pytest.approx(a_sun * 0.5, rel=ROUNDING)
    assert gear.w_carrier == pytest.approx(rho * gear.w_sun, rel=ROUNDING)
    assert feedthrough(gear)["tau_fric_b"] == pytest.approx(2.0 * (10.0 - 0.01 * a_sun), rel=ROUNDING)


@pytest.mark.parametrize("clutch_members", [1, 2, 3])
def test_planetary_with_the_clutch_locked_turns_as_one_body(clutch_members):
    """Any two members clutched together lock the gear set (Willis then forces the third to
    the same speed): brake open, the set accelerates as one inertia J_sun + J_carrier + J_ring."""
    gear = make(PlanetaryGear, clutch_members=clutch_members, locked_c_start=True)
    advance(gear, 0.0, 0.1, steps=5, f_n_b=0.0, f_n_c=1000.0, tau_sun=5.0, tau_ring=-1.0)
    expected = 4.0 / 0.09 * 0.5
    for speed in (gear.w_sun, gear.w_carrier, gear.w_ring):
        assert speed == pytest.approx(expected, rel=ROUNDING)
    assert feedthrough(gear)["locked_c"]
    # nothing slips: no loss, to the rounding of e_loss = work - change of kinetic energy
    assert abs(gear.e_loss) <= ROUNDING * 0.5 * 0.09 * expected**2


def test_planetary_upshift_hands_over_from_brake_to_clutch_without_chattering():
    """A two-speed shift: first gear (ring braked, sun driven, load on the carrier), then the
    brake releases while the clutch (sun to carrier) engages.  Through the shift Willis holds
    at every step, each interface changes its stick state at most twice (brake: held ->
    slipping; clutch: slipping -> locked) and the energy balance closes: work of the external
    torques = change of kinetic energy + dissipated energy (1e-9 relative: the dissipated
    energy is accumulated per step from the same closed-form motion)."""
    gear = make(PlanetaryGear, tau_sun=30.0, tau_carrier=-20.0)
    inertias = {"sun": 0.01, "carrier": 0.05, "ring": 0.03}

    def kinetic():
        return sum(0.5 * j * getattr(gear, f"w_{m}") ** 2 for m, j in inertias.items())

    def angles():
        return {m: getattr(gear, f"phi_{m}") for m in inertias}

    start_angles, work, t, h = angles(), 0.0, 0.0, 1e-3
    history = []
    for k in range(1500):
        ramp = min(max((k - 500) / 200, 0.0), 1.0)          # shift from 0.5 s to 0.7 s
        t = advance(gear, t, h, f_n_b=1000.0 * (1.0 - ramp), f_n_c=2000.0 * ramp)
        out = feedthrough(gear)
        history.append((out["locked_b"], out["locked_c"]))
        assert gear.w_ring == pytest.approx(ring_from_willis(gear, gear.w_sun, gear.w_carrier),
                                            rel=ROUNDING, abs=ROUNDING * abs(gear.w_sun))
    end_angles = angles()
    work = 30.0 * (end_angles["sun"] - start_angles["sun"]) - 20.0 * (end_angles["carrier"] - start_angles["carrier"])
    assert work == pytest.approx(kinetic() + gear.e_loss, rel=1e-9)
    brake_changes = sum(a[0] != b[0] for a, b in zip(history, history[1:]))
    clutch_changes = sum(a[1] != b[1] for a, b in zip(history, history[1:]))
    assert history[0] == (True, False) and history[-1] == (False, True)
    assert brake_changes == 1 and clutch_changes == 1
    assert gear.w_sun == pytest.approx(gear.w_carrier, rel=ROUNDING)      # second gear: direct drive


def test_planetary_refuses_a_ring_smaller_than_the_sun():
    gear = PlanetaryGear(instance_name="p", resources=None)
    gear.z_ring = 40
    assert gear.parameter_problems() == ["z_ring = 40 must exceed z_sun = 50 (the ring gear surrounds the "
                                         "sun and the planets)"]


def test_brake_is_a_clutch_against_a_housing_of_infinite_inertia():
    """The brake's solver (one interface, no free motion) against the chain solver with the
    housing as a second body of 1e9 kg.m2: the body's speeds agree to about J / J_housing =
    1e-9 (the housing's recoil), here checked at 1e-8 of the start speed over a stop and a
    breakaway."""
    from drivetrain_fmu.solvers.friction import FrictionChain, FrictionSystem, InterfaceLaw

    law = InterfaceLaw(0.4, 0.3, 0.1, 2)
    brake = FrictionSystem([1.0], [law], rows=[[1.0]])
    chain = FrictionChain([1.0, 1e9], [law])
    b, c = brake.state_from_bodies([0.0], [10.0]), chain.state_from_bodies([0.0, 0.0], [10.0, 0.0])
    for k in range(100):
        torque = 0.0 if k < 50 else 100.0          # T_s = 80 N.m, T_c = 60 N.m
        t_s, t_c = brake.capacities([1000.0])
        b = brake.advance(b, [torque], t_s, t_c, 0.01)
        c = chain.advance(c, [torque, 0.0], t_s, t_c, 0.01)
        assert brake.body_speeds(b)[0] == pytest.approx(chain.body_speeds(c)[0], abs=1e-8 * 10.0)
    assert brake.body_speeds(b)[0] == pytest.approx((100.0 - 60.0) * 0.5, rel=ROUNDING)
    assert math.isfinite(b.e_loss) and b.e_loss == pytest.approx(c.e_loss, rel=1e-8)


# ------------------------------------------------- PlanetaryGear at extreme teeth ratios
def test_planetary_at_a_large_accepted_ratio_keeps_willis_and_the_reflected_inertia():
    """Reliability campaign (issue 30): z_ring / z_sun = 1e6 ran 2e-5 off, 1e8 30 % off, both with
    fmi2OK (rounding in the mass matrix of the coordinates (w_carrier, w_ring), whose entries
    grow as r^2 J_sun: fmus.planetary_gear.SLIP_MODEL_TOLERANCE).  At z_ring / z_sun = 4700,
    accepted at the default inertias, ring held (a brake strong enough for the r-fold reaction)
    and 10 N.m on the sun: the kinematic constraint z_sun w_sun + z_ring w_ring = (z_sun + z_ring)
    w_carrier holds, the sun accelerates at tau / (J_sun + rho^2 J_carrier), rho = z_sun /
    (z_sun + z_ring), to 1e-9 relative (the accepted rounding of the model), and the housing
    holds the ring with (z_ring / z_sun) (tau - J_sun a_sun) (to 1e-9 of the torque tau rho
    that the mesh passes on, from which this small share is the difference)."""
    gear = make(PlanetaryGear, z_sun=1, z_ring=4700, f_n_b=1e12)
    advance(gear, 0.0, 0.1, steps=2)
    rho = 1 / 4701
    a_sun = 10.0 / (0.01 + rho**2 * 0.05)
    assert gear.w_ring == 0.0 and feedthrough(gear)["locked_b"]
    assert gear.w_sun == pytest.approx(a_sun * 0.2, rel=1e-9)
    willis = 1 * gear.w_sun + 4700 * gear.w_ring - 4701 * gear.w_carrier
    assert abs(willis) <= ROUNDING * gear.w_sun
    # tau - J_sun a_sun = tau rho^2 J_carrier / (J_sun + rho^2 J_carrier): the sun's share of the
    # torque passed on, 2.3e-7 of tau here; its rounding is the model's 1e-9 of tau
    reaction = 4700 * 10.0 * rho**2 * 0.05 / (0.01 + rho**2 * 0.05)
    assert feedthrough(gear)["tau_fric_b"] == pytest.approx(reaction, abs=1e-9 * 10.0 * 4700 * rho)


def test_every_accepted_planetary_computes_the_reflected_inertia_to_its_tolerance():
    """Over teeth ratios 1.5 .. 1.7e8 and inertias 1e-12 .. 1e6 kg.m2 each (625 gear sets), sun
    driven by 10 N.m and ring held (a brake strong enough for any reaction): every gear set the
    element accepts moves its sun at tau / (J_sun + rho^2 J_carrier), rho = z_sun / (z_sun +
    z_ring), to 1e-9 relative (fmus.planetary_gear.SLIP_MODEL_TOLERANCE), and the refused ones
    include every one it cannot compute so (before: all accepted; 1e8 30 % off, a sun 1e12
    lighter than the carrier 1.6e-5 off at 50 / 100).  The extremes must be among both."""
    inertias = (1e-12, 1e-6, 0.01, 1.0, 1e6)
    accepted = refused = 0
    for j_sun, j_carrier, j_ring in itertools.product(inertias, repeat=3):
        for z_sun, z_ring in ((50, 100), (7, 100), (1, 4000), (1, 10**6), (1, 10**8)):
            gear = PlanetaryGear(instance_name="p", resources=None)
            values = dict(z_sun=z_sun, z_ring=z_ring, J_sun=j_sun, J_carrier=j_carrier, J_ring=j_ring, f_n_b=1e15)
            for name, value in values.items():
                gear.assign({name: value})
            if gear.parameter_problems():
                refused += 1
                continue
            accepted += 1
            gear = make(PlanetaryGear, **values)
            advance(gear, 0.0, 0.1)
            rho = z_sun / (z_sun + z_ring)
            assert gear.w_sun == pytest.approx(10.0 / (j_sun + rho**2 * j_carrier) * 0.1, rel=1e-9), values
    assert accepted > 100 and refused > 100


@pytest.mark.parametrize("z_ring", [10**6, 10**8, 10**9])
def test_planetary_refuses_a_ratio_its_rounding_cannot_carry_naming_the_teeth_and_the_limit(z_ring):
    """z_ring / z_sun = 1e6, 1e8 (wrong answers with fmi2OK before) and 1e9 (a "singular matrix"
    naming no parameter before): refused at initialization naming both teeth counts, the
    inertias and the allowed error."""
    gear = PlanetaryGear(instance_name="p", resources=None)
    gear.z_sun, gear.z_ring = 1, z_ring
    problems = " ".join(gear.parameter_problems())
    assert f"z_ring / z_sun = {z_ring} / 1 with J_sun = 0.01, J_carrier = 0.05, J_ring = 0.03 kg.m2" in problems
    assert "allowed: at most 1e-09" in problems


def test_planetary_refuses_a_sun_too_light_for_its_carrier_naming_the_inertias():
    """A sun 10^12 times lighter than the carrier at z 50 / 100 ran 1.6e-5 off with fmi2OK (the
    step's slip accelerations are differences of products of size 1 / J_sun): refused."""
    gear = PlanetaryGear(instance_name="p", resources=None)
    gear.J_sun, gear.J_carrier, gear.J_ring = 1e-12, 1.0, 1e-12
    problems = " ".join(gear.parameter_problems())
    assert "with J_sun = 1e-12, J_carrier = 1.0, J_ring = 1e-12 kg.m2" in problems and "1e-09" in problems
