"""ElastoBacklash FMU between two Inertia FMUs: a stiff compliant impact against the
rigid impact law (eq. 107-108), momentum, and a contact that never pulls; MSL's law (law 2)
against the half spring period; a contact loaded at rest at the start (law 1).  The laws
themselves are tested in tests/numerics/test_elasto_backlash_solver.py."""
import math

import numpy as np
import pytest

from drivetrain_fmu.systems.master import CoSimulationError, Connection, Instance, run

J1, J2, W1 = 1.0, 2.0, 1.0


@pytest.mark.parametrize("e", [0.5, 0.9])
def test_stiff_contact_reproduces_the_rigid_impact(fmu_dir, e):
    """Body 1 (1 kg.m2, 1 rad/s) closes the 0.01 rad play onto body 2 (2 kg.m2, at rest)
    through a Hertz contact (k = 1e6, n = 1.5, contact time about 4 ms).  Communication
    step 20 us (about 200 points per contact).  Post-impact speeds within 2 % of the
    approach speed of the rigid law; measured deviations 1.9 % (e = 0.5, where the
    Flores damping law itself dissipates a little more than e asks) and 0.2 % (e = 0.9),
    unchanged at 10 us, so they come from the contact law, not from the coupling."""
    instances = {
        "a": Instance(fmu_dir / "Inertia.fmu", "a", {"J": J1, "w_start": W1}),
        "gap": Instance(fmu_dir / "ElastoBacklash.fmu", "gap", {"b": 0.01, "k": 1e6, "n_exp": 1.5, "e_rest": e}),
        "c": Instance(fmu_dir / "Inertia.fmu", "c", {"J": J2}),
    }
    connections = [Connection("a", "phi", "gap", "phi_1"), Connection("a", "w", "gap", "w_1"),
                   Connection("c", "phi", "gap", "phi_2"), Connection("c", "w", "gap", "w_2"),
                   Connection("gap", "tau_1", "a", "tau_1"), Connection("gap", "tau_2", "c", "tau_1")]
    try:
        result = run(instances, connections, 0.04, 2e-5, ["a.w", "c.w", "gap.tau_2", "gap.contact"])
    finally:
        for inst in instances.values():
            inst.free()
    w1_rigid = (J1 * W1 - J2 * W1 * e) / (J1 + J2)      # eq. 107, w2 = 0 before
    w2_rigid = (J1 * W1 + J1 * W1 * e) / (J1 + J2)      # eq. 108
    assert result["gap.contact"][-1] == 0                # separated again
    assert abs(result["a.w"][-1] - w1_rigid) <= 0.02 * W1
    assert abs(result["c.w"][-1] - w2_rigid) <= 0.02 * W1
    # torques act pairwise at every communication point: momentum is exact
    assert np.allclose(J1 * result["a.w"] + J2 * result["c.w"], J1 * W1, rtol=1e-12)
    # never pulls: the torque on body 2 has the sign of the contact side
    assert np.all(result["gap.tau_2"] * result["gap.contact"] >= 0.0)
    assert np.all(result["gap.tau_2"][result["gap.contact"] == 0] == 0.0)


def couple(fmu_dir, gap_parameters, phi_1_start, w_1_start, t_end, h):
    """Inertia a (J1, phi_1_start, w_1_start) - ElastoBacklash - Inertia c (J2 at rest at 0)."""
    instances = {
        "a": Instance(fmu_dir / "Inertia.fmu", "a", {"J": J1, "phi_start": phi_1_start, "w_start": w_1_start}),
        "gap": Instance(fmu_dir / "ElastoBacklash.fmu", "gap", gap_parameters),
        "c": Instance(fmu_dir / "Inertia.fmu", "c", {"J": J2}),
    }
    connections = [Connection("a", "phi", "gap", "phi_1"), Connection("a", "w", "gap", "w_1"),
                   Connection("c", "phi", "gap", "phi_2"), Connection("c", "w", "gap", "w_2"),
                   Connection("gap", "tau_1", "a", "tau_1"), Connection("gap", "tau_2", "c", "tau_1")]
    try:
        return run(instances, connections, t_end, h, ["a.w", "c.w", "gap.tau_2", "gap.contact"])
    finally:
        for inst in instances.values():
            inst.free()


def test_msl_law_contact_lasts_half_a_spring_period(fmu_dir):
    """law = 2, c = 1e4 N.m/rad, d = 0, b = 0.01: body 1 at 1 rad/s from the middle of the
    dead zone.  The contact lasts pi sqrt(m_eff / c) = 25.65 ms (m_eff = J1 J2 / (J1 + J2))
    and the bodies part with the entry speed reversed.  h = 1e-5 s: length within 2 h (the
    contact is seen at points h apart), exit speed within 2e-3 (the held torque of an
    undamped spring feeds in h omega = 1.2e-3; the solver test measures 1e-3)."""
    c, h = 1e4, 1e-5
    result = couple(fmu_dir, {"law": 2, "b": 0.01, "c": c, "d": 0.0}, 0.0, 1.0, 0.05, h)
    in_contact = result["gap.contact"] != 0
    m_eff = J1 * J2 / (J1 + J2)
    assert np.count_nonzero(in_contact) * h == pytest.approx(math.pi * math.sqrt(m_eff / c), abs=2 * h)
    assert result["a.w"][-1] - result["c.w"][-1] == pytest.approx(-1.0, rel=2e-3)
    assert np.all(result["gap.tau_2"] * result["gap.contact"] >= 0.0)


def test_a_contact_loaded_at_rest_at_the_start_pushes_the_bodies_apart(fmu_dir):
    """Review defect, through the FMUs: law 1 (k = 1e4, n = 1.5, e = 0.5), body 1 starts at
    rest 0.05 rad beyond b = 0.01.  The bodies part with e sqrt(2 E0 / m_eff), E0 =
    k p0^(n+1) / (n+1) (solver test: measured deviation 1.2e-4 at h = 1e-5 s, allowed 1e-3);
    before the fix they crept out at 1.7e-3 rad/s with no torque.  Momentum exact (the
    torques act pairwise), the contact torque pushes while in contact."""
    k, n, e, b, p0 = 1e4, 1.5, 0.5, 0.01, 0.05
    result = couple(fmu_dir, {"b": b, "k": k, "n_exp": n, "e_rest": e}, b + p0, 0.0, 0.06, 1e-5)
    m_eff = J1 * J2 / (J1 + J2)
    v_exit = e * math.sqrt(2 * k * p0 ** (n + 1) / (n + 1) / m_eff)
    assert result["gap.contact"][-1] == 0
    assert result["a.w"][-1] - result["c.w"][-1] == pytest.approx(-v_exit, rel=1e-3)
    assert np.allclose(J1 * result["a.w"] + J2 * result["c.w"], 0.0, atol=1e-12 * J2 * v_exit)
    assert np.all(result["gap.tau_2"][result["gap.contact"] != 0] > 0.0)


def msl_backlash_reference(law_parameters, J, phi_start, t):
    """Speed of MSL 4.0 Examples.Backlash's ElastoBacklash branch at times ``t``: an inertia J
    on a fixed flange through the clearance, released at rest at phi_start; scipy DOP853,
    rtol = atol = 1e-12, events at the gap edges and at the knee |d p'| = c p (against
    DOP853 at 1e-9 and Radau at 1e-11 it differs by at most 4e-6 rad/s)."""
    from scipy.integrate import solve_ivp

    from drivetrain_fmu.solvers.elasto_backlash import INITIAL, LimitedSpringDamper

    b, c, d = law_parameters["b"], law_parameters["c"], law_parameters["d"]
    law = LimitedSpringDamper(b, c, d)

    def knee(_, y):
        p = abs(y[0]) - b
        return abs(d * y[1]) - c * p if p > 0.0 else 1.0
    edges = [lambda _, y: y[0] - b, lambda _, y: y[0] + b, knee]
    run = solve_ivp(lambda _, y: (y[1], -law.contact(INITIAL, y[0], y[1]).tau / J), (0.0, float(t[-1])),
                    (phi_start, 0.0), method="DOP853", rtol=1e-12, atol=1e-12, events=edges,
                    dense_output=True, max_step=1e-4)
    return run.sol(t)[1]


def test_step_mean_torque_reproduces_msl_backlash_example_at_1_ms(fmu_dir):
    """MSL 4.0 Modelica.Mechanics.Rotational.Examples.Backlash, the ElastoBacklash branch:
    inertia J = 5 kg.m2 on a fixed flange through ElastoBacklash c = 2e4 N.m/rad, d = 50
    N.m.s/rad, MSL's total backlash pi/4 (b = pi/8 here), released at rest at phi = pi/2
    (3 pi/8 rad deep in the contact), 1 s (about 20 contacts, peak speed 66 rad/s).  Inertia
    FMU - ElastoBacklash FMU (law 2) through the master at 1 ms, largest speed error over the
    run against the reference: sampled torque 33.9 rad/s (the issue's 34 rad/s; 0.67 rad/s at
    0.01 ms), step mean (T_comm = 1 ms) 1.30 rad/s (0.117 at 0.1 ms, 0.012 at 0.01 ms:
    first order in h, 26 to 58 times below the sampled).  Allowed 2 rad/s; the sampled run
    must stay above 25 rad/s, so the test shows the difference the step mean makes."""
    gap = {"law": 2, "b": math.pi / 8, "c": 2e4, "d": 50.0}
    J, phi_start, h = 5.0, math.pi / 2, 1e-3
    errors = {}
    for t_comm in (0.0, h):
        instances = {
            "inertia": Instance(fmu_dir / "Inertia.fmu", "inertia", {"J": J, "phi_start": phi_start}),
            "gap": Instance(fmu_dir / "ElastoBacklash.fmu", "gap", {**gap, "T_comm": t_comm}),
        }
        connections = [Connection("inertia", "phi", "gap", "phi_1"), Connection("inertia", "w", "gap", "w_1"),
                       Connection("gap", "tau_1", "inertia", "tau_1")]     # phi_2 = w_2 = 0: the fixed flange
        try:
            result = run(instances, connections, 1.0, h, ["inertia.w", "gap.contact"])
        finally:
            for inst in instances.values():
                inst.free()
        reference = msl_backlash_reference(gap, J, phi_start, result["time"])
        errors[t_comm] = float(np.max(np.abs(result["inertia.w"] - reference)))
        assert set(result["gap.contact"]) == {-1.0, 0.0, 1.0}      # both contacts and the free play
    print(f"\nlargest speed error at 1 ms: sampled {errors[0.0]:.4g} rad/s, step mean {errors[h]:.4g} rad/s")
    assert errors[h] < 2.0
    assert errors[0.0] > 25.0


def test_step_mean_step_other_than_t_comm_is_refused(fmu_dir):
    """As Shaft and NonlinearSpring: the torque was averaged over T_comm, another step is
    refused (the contact memory kept); T_comm to rounding and a final sliver are taken."""
    gap = Instance(fmu_dir / "ElastoBacklash.fmu", "tcomm", {"T_comm": 0.01, "law": 2})
    try:
        with pytest.raises(CoSimulationError) as info:
            gap.do_step(0.0, 0.02)
        assert "differs from T_comm = 0.01" in " ".join(info.value.messages)
        gap.do_step(0.0, 0.01)
        gap.do_step(0.01, 0.01 * (1.0 - 1e-12))
        gap.do_step(0.02, 1.09e-13)
    finally:
        gap.free()
