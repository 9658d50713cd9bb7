"""Vehicle FMU (Fan, Walker & Wang planar vehicle) through fmpy.

Seed parameters (REFERENCE_CASES.md F): m1 = 1400 kg, J1 = 1200 kg.m2, wheels 30 kg /
2 kg.m2, a = b = 1 m, h = 0.6 m, R = 0.25 m, k = 25 kN/m, c = 3.5 kN.s/m, tire
150 N/mm with zeta = 0.05; dry road mu_0 = 0.8, mu = 0.75, delta = 0.005 m.
"""
import math

import numpy as np
import pytest

from drivetrain_fmu.systems.master import CoSimulationError, Instance, run

WEIGHT = (1400 + 30 + 30) * 9.81
RECORD = ["x", "v", "pitch", "w_wheel_f", "w_wheel_r", "F_n_f", "F_n_r", "F_t_f", "F_t_r",
          "v_slip_f", "v_slip_r", "stick_f", "stick_r", "drift", "phi_wheel_f"]


def drive(fmu_dir, params, duration, h=1e-2, torque_f=lambda t: 0.0, torque_r=lambda t: 0.0):
    vehicle = Instance(fmu_dir / "Vehicle.fmu", "vehicle", params)
    try:
        result = run({"vehicle": vehicle}, [], duration, h, [f"vehicle.{n}" for n in RECORD],
                     inputs=lambda t: {"vehicle.tau_wheel_f": torque_f(t), "vehicle.tau_wheel_r": torque_r(t)})
    finally:
        vehicle.free()
    out = {n: result[f"vehicle.{n}"] for n in RECORD}
    out["time"] = result.time
    return out


def test_static_normal_forces_settle_to_the_weight(fmu_dir):
    """Dropped from the seed's initial state (tires undeflected) with no torque: after
    4 s the normal forces carry the weight within 0.1 % and share it equally (a = b)."""
    out = drive(fmu_dir, {"settle_start": False}, 4.0)
    total = out["F_n_f"][-1] + out["F_n_r"][-1]
    assert total == pytest.approx(WEIGHT, rel=1e-3)
    assert out["F_n_f"][-1] == pytest.approx(out["F_n_r"][-1], rel=1e-3)
    assert abs(out["x"][-1]) < 1e-6 and abs(out["v"][-1]) < 1e-6     # no torque: no creep


def test_pure_rolling_with_load_transfer(fmu_dir):
    """Settled at 5 m/s, 100 N.m on the front wheel for 2 s: the tires roll without slip
    (|v_slip| < 1e-6 m/s, so v = R w), and the forward acceleration moves load from the
    front to the rear axle."""
    out = drive(fmu_dir, {"v_start": 5.0, "w_wheel_f_start": 20.0, "w_wheel_r_start": 20.0}, 2.0,
                torque_f=lambda t: 100.0)
    assert np.all(out["stick_f"] == 1) and np.all(out["stick_r"] == 1)
    assert np.max(np.abs(out["v_slip_f"])) < 1e-6 and np.max(np.abs(out["v_slip_r"])) < 1e-6
    assert out["v"][-1] > 5.0
    assert out["F_n_f"][-1] < out["F_n_f"][0] and out["F_n_r"][-1] > out["F_n_r"][0]


def test_f1_launch_pitch_settles_and_rear_carries_more(fmu_dir):
    """F1 initial state of the seed (wheels at y = R, 5 m/s, 20 rad/s), 200 N.m at the
    front wheel for 5 s: the pitch settles (it moves less than 1e-4 rad over the last
    second) nose up, and F_N1 < F_N2 at the end (seed Fig. 3 and 6); joint drift stays
    below 1e-4 m throughout (seed Fig. 19)."""
    out = drive(fmu_dir, {"settle_start": False, "v_start": 5.0, "w_wheel_f_start": 20.0,
                          "w_wheel_r_start": 20.0}, 5.0, torque_f=lambda t: 200.0)
    last_second = out["time"] >= 4.0
    assert np.ptp(out["pitch"][last_second]) < 1e-4 and out["pitch"][-1] > 0.0
    assert out["F_n_f"][-1] < out["F_n_r"][-1]
    assert np.all(out["stick_f"][last_second] == 1)
    assert np.max(out["drift"]) < 1e-4


def test_low_friction_wheel_slides_with_the_sliding_force(fmu_dir):
    """mu_0 = 0.1, mu = 0.07 and 1500 N.m on the front wheel: it spins, and the road
    pushes it with exactly mu F_N (the sliding law)."""
    out = drive(fmu_dir, {"mu_s_road": 0.1, "mu_k_road": 0.07, "v_start": 5.0, "w_wheel_f_start": 20.0,
                          "w_wheel_r_start": 20.0}, 1.0, torque_f=lambda t: 1500.0)
    assert out["stick_f"][-1] == 0 and out["v_slip_f"][-1] < -1.0     # contact point slips backwards
    assert out["F_t_f"][-1] == pytest.approx(0.07 * out["F_n_f"][-1], rel=1e-9)


def test_ice_stick_slip_recurs_under_a_fluctuating_drive(fmu_dir):
    """F3 road (mu_0 = 0.1, mu = 0.07) with a drive torque oscillating across the
    adhesion limit (about 220 N.m here: mu_0 F_N R = 179 N.m plus the rolling resistance
    and the wheel's own inertia) and below the sliding level (chosen: 150 + 100 sin(4 pi t)
    N.m, as a fluctuating driveline would deliver): the front tire alternates between
    sticking and slipping at every period (measured: 6 of each in 3 s)."""
    out = drive(fmu_dir, {"mu_s_road": 0.1, "mu_k_road": 0.07, "v_start": 5.0, "w_wheel_f_start": 20.0,
                          "w_wheel_r_start": 20.0}, 3.0, h=5e-3,
                torque_f=lambda t: 150.0 + 100.0 * math.sin(4 * math.pi * t))
    stick = out["stick_f"].astype(int)
    to_slip = np.count_nonzero((stick[:-1] == 1) & (stick[1:] == 0))
    to_stick = np.count_nonzero((stick[:-1] == 0) & (stick[1:] == 1))
    assert to_slip >= 4 and to_stick >= 4
    assert np.max(out["drift"]) < 1e-4


def test_no_dissipation_drive_work_equals_energy_change(fmu_dir):
    """c_susp = zeta_tire = delta = 0, pure rolling: the work of the drive torque equals
    the change of kinetic, gravity, suspension and tire energy within 0.5 % (measured to
    1e-13: the Baumgarte terms vanish with the drift); drift below 1e-4 m over 10 s."""
    from drivetrain_fmu.solvers.vehicle import PlanarVehicle, VehicleParams

    params = {"c_susp": 0.0, "zeta_tire": 0.0, "delta_roll": 0.0, "v_start": 5.0,
              "w_wheel_f_start": 20.0, "w_wheel_r_start": 20.0}
    vehicle = Instance(fmu_dir / "Vehicle.fmu", "energy", params)
    try:
        model = PlanarVehicle(VehicleParams(c_susp=0.0, zeta_tire=0.0, delta_roll=0.0))
        start = model.initial_state(0.0, 5.0, 20.0, 20.0)
        energy_0, phi_0 = model.energy(start.q, start.qd), vehicle.get("phi_wheel_f")
        vehicle.set("tau_wheel_f", 200.0)
        drift = 0.0
        for n in range(1000):
            vehicle.do_step(n * 1e-2, 1e-2)
            drift = max(drift, vehicle.get("drift"))
        state = vehicle.call("getFMUstate")
        blob = bytes(vehicle.call("serializeFMUstate", state))
    finally:
        vehicle.free()
    import json
    saved = json.loads(blob.decode())["state"]
    q, qd = saved[0], saved[1]
    work = 200.0 * (q[5] - phi_0)
    assert model.energy(q, qd) - energy_0 == pytest.approx(work, rel=5e-3)
    assert drift < 1e-4


@pytest.mark.parametrize("params,named", [
    ({"m_body": -1.0}, "m_body = -1.0 is outside the allowed range"),
    ({"R": 0.0}, "R = 0.0 is outside the allowed range"),
    ({"mu_k_road": 0.9}, "mu_k_road = 0.9 must not exceed mu_s_road = 0.8"),
])
def test_bad_parameters_are_named(fmu_dir, params, named):
    with pytest.raises(CoSimulationError) as info:
        Instance(fmu_dir / "Vehicle.fmu", "bad", params)
    assert named in " ".join(info.value.messages)


@pytest.mark.parametrize("a,b", [(1.2, 0.8), (1.6, 0.9)])
def test_settled_start_carries_the_static_axle_loads(a, b):
    """With a != b the settled start puts each tire at its static deflection: the normal
    forces equal the axle loads m1 g b/(a+b) + m_wheel g and the rest, to 1e-9."""
    from drivetrain_fmu.solvers.vehicle import PlanarVehicle, VehicleParams

    model = PlanarVehicle(VehicleParams(a=a, b=b))
    state = model.initial_state(0.0, 0.0)
    _, normal = model.applied(np.array(state.q), np.array(state.qd), 0.0, 0.0)
    front = 1400 * 9.81 * b / (a + b) + 30 * 9.81
    assert normal[0] == pytest.approx(front, rel=1e-9)
    assert normal[1] == pytest.approx(WEIGHT - front, rel=1e-9)


def test_both_wheels_stuck_report_the_minimum_norm_force_split():
    """At rest on the settled start with 20 N.m on the front wheel all four contacts stick
    (below the rolling capacity delta F_N = 36 N.m) and the six constraints are redundant:
    the axle split of the horizontal force is statically indeterminate.  The tangential
    forces are the minimum-norm multipliers, numpy's lstsq of the same system to 1e-9
    relative (measured 3e-14; the system's condition on its range is 680)."""
    from drivetrain_fmu.solvers.vehicle import PlanarVehicle, VehicleParams

    model = PlanarVehicle(VehicleParams())
    state = model.initial_state(0.0, 0.0)
    forces = model.forces(state.q, state.qd, 20.0, 0.0, state.modes)
    assert model.forces_hold(forces, state.modes)
    _, jac, gamma = model._joint_terms(state.q, state.qd)
    c = np.array(jac + model.Wt)
    c_minv = c * np.array(model.inv_mass)
    applied, _ = model.applied(state.q, state.qd, 20.0, 0.0)
    b = np.concatenate([gamma, -model.p.alpha_bg * (np.array(model.Wt) @ np.array(state.qd))])
    multipliers = np.linalg.lstsq(c_minv @ c.T, b - c_minv @ np.array(applied), rcond=None)[0]
    assert np.array(forces.tangential) == pytest.approx(multipliers[2:], rel=1e-9, abs=1e-9 * np.max(np.abs(multipliers)))
    assert forces.tangential[0] == pytest.approx(-forces.tangential[2], rel=1e-9)   # the tire forces cancel at rest
