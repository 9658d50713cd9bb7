"""Gear FMU driven by fmpy: ideal kinematics, power balance from the outputs, the stuck mode,
the stop/reverse instant, e_loss against the energy balance, refused parameters and inputs;
bearing friction: the stop and lock with the support torque and p_loss checked from the
outputs, MSL's LossyGearDemo3.

Only Gear.fmu is built here (build_fmus.build_all(only=...), about 4 s) rather than the
session's fmu_dir of every element.  Tolerances as in test_gear_solver.py: one instant to
1e-13 relative (a few roundings, and the host's copy of the same doubles), sums over a run
to 1e-12 of the total work."""
import math
import random

import pytest

from drivetrain_fmu.systems.master import CoSimulationError, Instance

J_1, J_2 = 0.1, 1.0


@pytest.fixture(scope="module")
def gear_fmu(tmp_path_factory):
    from drivetrain_fmu import build_fmus

    return build_fmus.build_all(tmp_path_factory.mktemp("gear"), only=["Gear"])[0]


def gear(gear_fmu, name, **parameters):
    return Instance(gear_fmu, name, {"J_1": J_1, "J_2": J_2, **parameters})


def test_ideal_gear_ties_the_speeds_and_accelerates_the_reflected_inertia(gear_fmu):
    """eta = 1, ratio 4: w_1 = ratio w_2 to 2 roundings (w_2 = w_1/ratio, times ratio), a_1
    = (tau_1 + tau_2/ratio) / (J_1 + J_2/ratio^2) to 1e-14, w_1 of the uniform acceleration
    at every communication point to 1e-12 over 1 s; no loss."""
    ratio, tau_1, tau_2, w0, h = 4.0, 3.0, -20.0, 5.0, 1e-3
    a_1 = (tau_1 + tau_2 / ratio) / (J_1 + J_2 / ratio**2)
    g = gear(gear_fmu, "ideal", ratio=ratio, eta=1.0, w_1_start=w0)
    try:
        g.set("tau_1", tau_1)
        g.set("tau_2", tau_2)
        for n in range(1000):
            assert g.get("a_1") == pytest.approx(a_1, rel=1e-14)
            g.do_step(n * h, h)
            w_1, w_2 = g.get("w_1"), g.get("w_2")
            assert w_1 == pytest.approx(ratio * w_2, rel=4.5e-16, abs=1e-300)
            assert w_1 == pytest.approx(w0 + a_1 * (n + 1) * h, rel=1e-12)
            assert g.get("phi_1") == pytest.approx(ratio * g.get("phi_2"), rel=4.5e-16, abs=1e-300)
        assert g.get("e_loss") == 0.0 and g.get("p_loss") == 0.0
    finally:
        g.free()


@pytest.mark.parametrize("tau_1,tau_2,driver", [(50.0, -20.0, 1), (-5.0, 80.0, 2)])
def test_power_balance_from_the_outputs(gear_fmu, tau_1, tau_2, driver):
    """eta = 0.8 at w_1 = 10 rad/s: tau_a = tau_1 - J_1 a_1 (shaft 1's Newton law);
    shaft 2 obeys J_2 a_1/ratio = tau_2 + tau_mesh; the driven shaft receives eta times the
    driver's power and p_in = p_out + p_loss, all to 1e-13 relative."""
    eta, ratio = 0.8, 4.0
    g = gear(gear_fmu, f"power{driver}", ratio=ratio, eta=eta, w_1_start=10.0)
    try:
        g.set("tau_1", tau_1)
        g.set("tau_2", tau_2)
        a_1, tau_mesh, p_loss = g.get("a_1"), g.get("tau_mesh"), g.get("p_loss")
        w_1, w_2 = g.get("w_1"), g.get("w_2")
        tau_a = tau_1 - J_1 * a_1
        assert J_2 * a_1 / ratio == pytest.approx(tau_2 + tau_mesh, rel=1e-13)
        from_1, to_2 = tau_a * w_1, tau_mesh * w_2
        p_in, p_out = (from_1, to_2) if driver == 1 else (-to_2, -from_1)
        assert p_in > 0.0 and p_out > 0.0
        assert p_out == pytest.approx(eta * p_in, rel=1e-13)
        assert p_in == pytest.approx(p_out + p_loss, rel=1e-13)
        assert g.get("locked") is False or g.get("locked") == 0
    finally:
        g.free()


def test_held_load_stays_locked_and_a_larger_one_back_drives(gear_fmu):
    """eta = 0.6, ratio 3, brake torque tau_1 = 10 N.m at rest: a load seen at shaft 1 of
    15 N.m (inside [eta tau_1, tau_1/eta] = [6, 16.67]) cannot back-drive the gear: over 1 s
    of 1 ms steps w_1 stays exactly 0, the angle exactly its start, no loss, locked, and the
    mesh balances the load exactly (tau_mesh = -tau_2).  A load of 17 N.m then back-drives."""
    ratio, eta, tau_1 = 3.0, 0.6, 10.0
    g = gear(gear_fmu, "stuck", ratio=ratio, eta=eta, phi_1_start=0.25)
    try:
        g.set("tau_1", tau_1)
        g.set("tau_2", -15.0 * ratio)
        for n in range(1000):
            assert g.get("locked") and g.get("tau_mesh") == 15.0 * ratio and g.get("p_loss") == 0.0
            g.do_step(n * 1e-3, 1e-3)
            assert g.get("w_1") == 0.0 and g.get("phi_1") == 0.25 and g.get("e_loss") == 0.0
        g.set("tau_2", -17.0 * ratio)
        assert not g.get("locked") and g.get("a_1") < 0.0
        g.do_step(1.0, 1e-3)
        assert g.get("w_1") < 0.0 and g.get("e_loss") > 0.0
    finally:
        g.free()


@pytest.mark.parametrize("h", [1e-3, 0.013])
def test_stops_and_reverses_at_the_analytic_instant(gear_fmu, h):
    """Coasting at 20 rad/s against tau_2 = -30 N.m (ratio 2, eta 0.7, tau_1 = 0): forward
    with c = eta to t* = 20/|a_fwd|, then backward with c = 1/eta; w_1 at every
    communication point equals the piecewise closed form to 1e-12 (1e-12 rad/s near 0)."""
    ratio, eta, tau_2, w0 = 2.0, 0.7, -30.0, 20.0
    q, j_r = tau_2 / ratio, J_2 / ratio**2
    a_fwd, a_bwd = q / (eta * J_1 + j_r), q / (J_1 / eta + j_r)
    t_stop = -w0 / a_fwd
    g = gear(gear_fmu, f"reverse{h}", ratio=ratio, eta=eta, w_1_start=w0)
    try:
        g.set("tau_2", tau_2)
        n = 0
        while n * h < 1.2:
            g.do_step(n * h, h)
            n += 1
            t = n * h
            expected = w0 + a_fwd * t if t <= t_stop else a_bwd * (t - t_stop)
            assert g.get("w_1") == pytest.approx(expected, rel=1e-12, abs=1e-12), t
            assert not g.get("locked")
        assert t_stop < 1.0 and g.get("w_1") < 0.0
    finally:
        g.free()


def test_e_loss_equals_the_energy_balance(gear_fmu):
    """Random torque pairs around the stuck interval, each held 50 steps of 5 ms, 1000 steps
    (rolling both ways, stops, reversals, locks): e_loss = work of tau_1 and tau_2 minus the
    change of kinetic energy 0.5 (J_1 w_1^2 + J_2 w_2^2), to 1e-12 of the total work."""
    ratio, eta, h = -2.0, 0.5, 5e-3
    rng = random.Random(17)
    g = gear(gear_fmu, "energy", ratio=ratio, eta=eta, w_1_start=3.0)
    try:
        def kinetic():
            return 0.5 * (J_1 * g.get("w_1") ** 2 + J_2 * g.get("w_2") ** 2)

        ke0, work, total, locked_seen = kinetic(), 0.0, 0.0, False
        for n in range(1000):
            if n % 50 == 0:
                tau_1 = rng.uniform(-10, 10)
                tau_2 = -tau_1 * rng.uniform(0.5 * eta, 1.5 / eta) * ratio
                g.set("tau_1", tau_1)
                g.set("tau_2", tau_2)
            locked_seen |= bool(g.get("locked"))
            phi_1, phi_2 = g.get("phi_1"), g.get("phi_2")
            g.do_step(n * h, h)
            w_1_work, w_2_work = tau_1 * (g.get("phi_1") - phi_1), tau_2 * (g.get("phi_2") - phi_2)
            work += w_1_work + w_2_work
            total += abs(w_1_work) + abs(w_2_work)
        assert locked_seen
        e_loss = g.get("e_loss")
        assert e_loss > 0.0
        assert abs(e_loss - (work - (kinetic() - ke0))) <= 1e-12 * total
    finally:
        g.free()


@pytest.mark.parametrize("params,message", [
    ({"ratio": 0.0}, "ratio = 0.0 is outside the allowed range (-inf, 0) or (0, inf)"),
    ({"eta": 0.0}, "eta = 0.0 is outside the allowed range (0, 1]"),
    ({"eta": 1.5}, "eta = 1.5 is outside the allowed range (0, 1]"),
    ({"ratio": 1e-200}, "J_2/ratio^2, the inertia of shaft 2 seen at shaft 1 = inf kg.m2"),
    ({"ratio": 1e10}, "kg.m2 (from J_2 = 1.0, ratio = 10000000000.0) must be finite and at least 1e-12"),
])
def test_bad_parameter_fails_initialization_naming_it(gear_fmu, params, message):
    with pytest.raises(CoSimulationError) as info:
        gear(gear_fmu, "badparam", **params)
    assert message in " ".join(info.value.messages)


def test_bad_input_is_refused_and_state_kept(gear_fmu):
    g = gear(gear_fmu, "badinput", w_1_start=2.0)
    try:
        g.do_step(0.0, 1e-3)
        outputs = [g.get(o) for o in ("phi_1", "w_1", "e_loss")]
        g.set("tau_1", math.nan)
        with pytest.raises(CoSimulationError) as info:
            g.do_step(1e-3, 1e-3)
        assert "tau_1 = nan" in " ".join(info.value.messages) and "discard" in str(info.value)
        assert [g.get(o) for o in ("phi_1", "w_1", "e_loss")] == outputs
    finally:
        g.free()


def test_fmu_state_replays_a_stop_bit_identically(gear_fmu):
    """Saved before the stop of the reversal case, stepped through it, restored (directly and
    serialized): the replay gives the same outputs exactly."""
    h = 0.01
    g = gear(gear_fmu, "state", ratio=2.0, eta=0.7, w_1_start=20.0)
    try:
        g.set("tau_2", -30.0)
        for n in range(10):
            g.do_step(n * h, h)
        saved = g.call("getFMUstate")
        blob = g.call("serializeFMUstate", saved)

        def run_on():
            values = []
            for n in range(10, 80):
                g.do_step(n * h, h)
                values.append(tuple(g.get(o) for o in ("phi_1", "w_1", "w_2", "e_loss", "p_loss")))
            return values

        first = run_on()
        assert first[0][1] > 0.0 > first[-1][1]
        g.call("setFMUstate", saved)
        assert run_on() == first
        g.call("setFMUstate", g.call("deSerializeFMUstate", blob))
        assert run_on() == first
    finally:
        g.free()


@pytest.mark.parametrize("h", [1e-3, 0.021])
def test_bearing_friction_stops_the_gear_and_the_housing_takes_the_reaction(gear_fmu, h):
    """eta = 0.8, tau_bf_1 = 0.6, tau_bf_2 = 0.9 N.m, ratio 4, w_1 = 40 rad/s, a motor torque
    tau_1 = 1 N.m against a load tau_2 = -8 N.m.  Shaft 1 drives (the load seen at shaft 1,
    -2 N.m, pulls less than the motor plus the inertia gives): w_1' = (eta tau_1 + q -
    tau_bf_1)/(eta J_1 + J_2/ratio^2) = -2.8/0.1425 rad/s2 by (7), the stop at t* = 40/|w_1'|
    (w_1 at every point to 1e-12 of w0), then locked: (12) holds q = -2 between -tau_1/eta -
    tau_bf_2 = -2.15 and tau_bf_1 - eta tau_1 = -0.2.  At every point, from the outputs:
    angular momentum J_1 a_1 + J_2 a_1/ratio = tau_1 + tau_2 - tau_support, and p_loss =
    tau_1 w_1 + tau_2 w_2 - (J_1 a_1 w_1 + J_2 a_2 w_2) (the power the shafts lose), to 1e-13
    of the largest term; locked, the housing takes tau_1 + tau_2 = -7 N.m exactly; at the
    end e_loss = work + kinetic energy given up, to 1e-12."""
    ratio, eta, tau_bf_1, tau_bf_2, tau_1, tau_2, w0 = 4.0, 0.8, 0.6, 0.9, 1.0, -8.0, 40.0
    q, j_r = tau_2 / ratio, J_2 / ratio**2
    a_1 = (eta * tau_1 + q - tau_bf_1) / (eta * J_1 + j_r)
    t_stop = -w0 / a_1
    g = gear(gear_fmu, f"bearing{h}", ratio=ratio, eta=eta, tau_bf_1=tau_bf_1, tau_bf_2=tau_bf_2, w_1_start=w0)
    try:
        g.set("tau_1", tau_1)
        g.set("tau_2", tau_2)
        ke0, n = 0.5 * (J_1 + j_r) * w0 * w0, 0
        while n * h < t_stop + 0.2:
            a, w_1, w_2 = g.get("a_1"), g.get("w_1"), g.get("w_2")
            support, p_loss = g.get("tau_support"), g.get("p_loss")
            momentum = J_1 * a + J_2 * a / ratio
            assert abs(momentum - (tau_1 + tau_2 - support)) <= 1e-13 * max(abs(tau_2), abs(support))
            power = tau_1 * w_1 + tau_2 * w_2 - (J_1 * a * w_1 + J_2 * (a / ratio) * w_2)
            assert abs(p_loss - power) <= 1e-13 * max(abs(tau_2 * w_2), abs(J_1 * a * w_1), 1e-300)
            if n * h < t_stop:
                assert a == pytest.approx(a_1, rel=1e-14) and not g.get("locked")
            else:
                assert g.get("locked") and support == tau_1 + tau_2 and p_loss == 0.0
            g.do_step(n * h, h)
            n += 1
            expected = w0 + a_1 * n * h if n * h < t_stop else 0.0
            assert g.get("w_1") == pytest.approx(expected, rel=1e-12, abs=1e-12 * w0), n * h
        assert g.get("w_1") == 0.0 and g.get("locked")
        travel = g.get("phi_1")
        assert travel == pytest.approx(0.5 * w0 * t_stop, rel=1e-12)
        assert g.get("e_loss") == pytest.approx((tau_1 + q) * travel + ke0, rel=1e-12)
    finally:
        g.free()


def test_msl_lossy_gear_demo3_through_the_fmu(gear_fmu):
    """MSL 4.0 LossyGearDemo3 (ratio 1, lossTable [0, 0.25, 0.25, 0.625, 2.5], J 0.001 kg.m2 on
    both shafts at 10 rad/s, tau_1 = 0, tau_2 a step to 1 N.m at 0.5 s, 1 s at its 1 ms
    interval): w_1 = 10 - 500 t to the stop at 0.02 s (either driving side gives -500
    rad/s2: the case whose driving side is not obvious), then exactly 0 and locked, also
    after the step, with the housing taking the load (tau_support = tau_2); e_loss the
    0.1 J of kinetic energy to 1e-14."""
    g = Instance(gear_fmu, "demo3", {"J_1": 1e-3, "J_2": 1e-3, "ratio": 1.0, "eta": 0.25, "tau_bf_1": 0.625,
                                     "tau_bf_2": 2.5, "w_1_start": 10.0})
    try:
        h = 1e-3
        for n in range(1000):
            tau_2 = 1.0 if n >= 500 else 0.0
            g.set("tau_2", tau_2)
            g.do_step(n * h, h)
            t = (n + 1) * h
            assert g.get("w_1") == pytest.approx(max(10.0 - 500.0 * t, 0.0), abs=1e-11), t
            if t >= 0.02:
                assert g.get("w_1") == 0.0 and g.get("locked") and g.get("tau_support") == tau_2
        assert g.get("e_loss") == pytest.approx(0.1, rel=1e-14)
    finally:
        g.free()


@pytest.mark.parametrize("params,message", [
    ({"tau_bf_1": -1.0}, "tau_bf_1 = -1.0 is outside the allowed range [0, inf)"),
    ({"eta": 1.0, "tau_bf_1": 1.0, "tau_bf_2": 2.0},
     "tau_bf_1 = 1.0 N.m and tau_bf_2 = 2.0 N.m must be equal when eta = 1"),
])
def test_bad_bearing_friction_fails_initialization_naming_it(gear_fmu, params, message):
    with pytest.raises(CoSimulationError) as info:
        gear(gear_fmu, "badbearing", **params)
    assert message in " ".join(info.value.messages)
