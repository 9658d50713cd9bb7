"""NonlinearSpring FMU through fmpy: the R1 oscillator in co-simulation and the R3 cases."""
import numpy as np
import pytest

from drivetrain_fmu.solvers.pwa import Characteristic, PwaOscillator
from drivetrain_fmu.systems.catalog import r3
from drivetrain_fmu.systems.master import CoSimulationError, Connection, Instance, run
from drivetrain_fmu.systems.catalog.pwa_methods import reference

TABLE6 = PwaOscillator(1.0, Characteristic((0.0, 0.15), (1.0, 20.0)), Characteristic.linear(0.5))


def _oscillator(fmu_dir, h, duration):
    instances = {
        "body": Instance(fmu_dir / "Inertia.fmu", "body", {"J": 1.0, "phi_start": 0.3}),
        "spring": Instance(fmu_dir / "NonlinearSpring.fmu", "spring",
                           {"n_regions": 2, "phi_s_1": 0.15, "k_1": 1.0, "k_2": 20.0, "d_1": 0.5}),
    }
    connections = [Connection("body", "phi", "spring", "phi_1"), Connection("body", "w", "spring", "w_1"),
                   Connection("spring", "tau_1", "body", "tau_1")]   # phi_2 = w_2 = 0: fixed end
    try:
        return run(instances, connections, duration, h, ["body.phi", "spring.region"])
    finally:
        for inst in instances.values():
            inst.free()


def test_inertia_on_nonlinear_spring_reproduces_the_pwa_oscillator(fmu_dir):
    """Inertia (1 kg.m2, 0.3 rad) on the Table 6 spring-damper with a fixed end, 5 s.
    The spring torque is held over each communication step (explicit coupling), so the
    co-simulation is first order in h: measured max errors 3.1e-3 rad at 1 ms and
    1.5e-3 rad at 0.5 ms against the DOP853 reference (rtol 1e-10)."""
    duration, errors = 5.0, {}
    for h in (1e-3, 5e-4):
        result = _oscillator(fmu_dir, h, duration)
        ref = reference(TABLE6, 0.3, 0.0, h, int(round(duration / h)))
        errors[h] = np.max(np.abs(result["body.phi"] - ref.x))
        assert set(result["spring.region"]) == {1.0, 2.0}   # both regions visited
    print(f"\nco-simulation error: {errors}")
    assert errors[5e-4] < 2.5e-3                       # < 1 % of the 0.3 rad swing
    assert 1.6 < errors[1e-3] / errors[5e-4] < 2.4      # first order in h


@pytest.mark.parametrize("case", sorted(r3.SPRING_CASES))
def test_r3_nonlinear_spring_switches_stiffness_at_the_documented_angle(fmu_dir, case):
    """R3 spring cases (systems.catalog.r3): the region output and the torque switch exactly at the
    breakpoint of Table 12, the stored energy is the integral of the torque, and the
    spring is internal, so J_z w_z + (J_w + J_v) w_wv = T t."""
    breakpoint, k_1, k_2 = r3.SPRING_CASES[case]
    result = r3.simulate_spring(fmu_dir, case, step_mean=False)
    twist, torque, region = result["spring.phi_rel"], result["spring.tau_2"], result["spring.region"]
    stiff_part = np.abs(twist) > breakpoint
    assert stiff_part.any() and (~stiff_part).any()            # the switch is crossed
    assert np.array_equal(region == 2, stiff_part)             # region 2 exactly beyond the angle
    offset = (k_1 - k_2) * breakpoint                          # continuity at the breakpoint
    expected = np.where(stiff_part, k_2 * twist + np.sign(twist) * offset, k_1 * twist)
    assert np.allclose(torque, expected, rtol=1e-12, atol=1e-12)
    energy = np.where(stiff_part, 0.5 * k_1 * breakpoint**2
                      + 0.5 * (k_2 * np.abs(twist) + offset + k_1 * breakpoint) * (np.abs(twist) - breakpoint),
                      0.5 * k_1 * twist**2)
    assert np.allclose(result["spring.e_spring"], energy, rtol=1e-12, atol=1e-15)
    momentum = r3.J_Z * result["z.w"] + r3.J_WV * result["wv.w"]
    assert np.allclose(momentum, r3.SPRING_TORQUE * result.time, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("params,named", [
    ({"n_regions": 3, "phi_s_1": 0.02, "phi_s_2": 0.01}, "phi_s_2 = 0.01 must be greater than phi_s_1"),
    ({"k_2": 0.0}, "k_2 = 0.0 is outside the allowed range"),
    ({"n_regions": 5}, "n_regions = 5 is outside the allowed range"),
    ({"n_damper_regions": 2, "d_2": -1.0}, "d_2 = -1.0 is outside the allowed range"),
])
def test_bad_parameters_fail_initialization_naming_them(fmu_dir, params, named):
    with pytest.raises(CoSimulationError) as info:
        Instance(fmu_dir / "NonlinearSpring.fmu", "bad", params)
    assert named in " ".join(info.value.messages)


def _undamped_body_on_spring(fmu_dir, t_comm, h=0.01, duration=100.0):
    instances = {
        "body": Instance(fmu_dir / "Inertia.fmu", "body", {"J": 1.0, "phi_start": 0.3}),
        "spring": Instance(fmu_dir / "NonlinearSpring.fmu", "spring",
                           {"n_regions": 2, "phi_s_1": 0.15, "k_1": 1.0, "k_2": 20.0, "T_comm": t_comm}),
    }
    connections = [Connection("body", "phi", "spring", "phi_1"), Connection("body", "w", "spring", "w_1"),
                   Connection("spring", "tau_1", "body", "tau_1")]
    try:
        result = run(instances, connections, duration, h, ["body.w", "spring.e_spring"])
    finally:
        for inst in instances.values():
            inst.free()
    energy = 0.5 * result["body.w"] ** 2 + result["spring.e_spring"]
    return energy / energy[0]


def test_step_mean_torque_keeps_the_energy_of_an_explicit_co_simulation(fmu_dir):
    """Undamped Table 6 spring, 1 kg.m2 body, h = 10 ms, 100 s (about 20 swings through the
    stiff region).  The torque sampled at the communication point feeds energy into the
    explicit coupling (measured: E grows 6700-fold); the step-mean torque (T_comm = h,
    work-consistent across the region switches) keeps E within 0.1 % (measured 0.05 %)."""
    sampled = _undamped_body_on_spring(fmu_dir, 0.0)
    averaged = _undamped_body_on_spring(fmu_dir, 0.01)
    print(f"\nE(100 s)/E(0): sampled {sampled[-1]:.4g}, step mean {averaged[-1]:.6f}")
    assert np.max(np.abs(averaged - 1.0)) < 1e-3
    assert sampled[-1] > 10.0


def test_step_other_than_t_comm_is_refused(fmu_dir):
    spring = Instance(fmu_dir / "NonlinearSpring.fmu", "tcomm", {"T_comm": 0.01})
    try:
        with pytest.raises(CoSimulationError) as info:
            spring.do_step(0.0, 0.02)
        assert "differs from T_comm = 0.01" in " ".join(info.value.messages)
        spring.do_step(0.0, 0.01)   # the right step is taken
        # a host accumulating time: a step short by rounding, then the final remainder
        # (OMSimulator after 10 s at 1 ms: 1.09e-13 s); both are taken
        spring.do_step(0.01, 0.01 * (1.0 - 1e-12))
        spring.do_step(0.02, 1.09e-13)
    finally:
        spring.free()
