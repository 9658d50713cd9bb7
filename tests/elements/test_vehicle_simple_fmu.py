"""VehicleSimple FMU: wheel and equivalent vehicle behind a tire (Reiter ch. 5)."""
import math

import numpy as np
import pytest

from drivetrain_fmu.systems.master import Instance, run

J_W, M, R, G = 1.5, 135.0, 1.0, 9.81   # defaults: R3 wheel, vehicle for a 1 m radius


def drive(fmu_dir, params, torque, duration=1.0, h=1e-3, grade=0.0):
    vehicle = Instance(fmu_dir / "VehicleSimple.fmu", "car", params)
    record = ["v", "w_wheel", "w_v", "slip", "F_x"]
    try:
        result = run({"car": vehicle}, [], duration, h, [f"car.{n}" for n in record],
                     inputs=lambda t: {"car.tau_wheel": torque, "car.grade": grade})
    finally:
        vehicle.free()
    return {n: result[f"car.{n}"] for n in record} | {"time": result.time}


def test_clutch_tire_rolls_without_slip_at_moderate_torque(fmu_dir):
    """200 N.m from rest, tire model 0: wheel and vehicle move as one inertia,
    v = tau R t / (J_w + m R^2) and v = R w exactly."""
    out = drive(fmu_dir, {"tire_model": 0}, 200.0)
    assert out["v"] == pytest.approx(200.0 * R * out["time"] / (J_W + M * R * R), rel=1e-12, abs=1e-12)
    assert np.array_equal(out["w_v"], out["w_wheel"]) and np.all(out["slip"] == 0.0)


def test_rolling_tire_stays_stuck_with_radius_not_one(fmu_dir):
    """R = 0.3 m, rolling from 1 m/s with a torque between the kinetic and the static
    capacity: the tire keeps rolling and F_x is the static share tau m R / (J_w + m R^2)
    = 728.39 N at every point.  (v / R rebuilt from the state differs from w by an ulp when
    R != 1: that read as slip once and gave F_x at the kinetic level with the wrong sign.)"""
    radius, mu_s, mu_k = 0.3, 0.8, 0.3
    t_s, t_c = mu_s * M * G * radius, mu_k * M * G * radius
    j_v = M * radius * radius
    torque = 0.5 * (t_s + t_c) * (J_W + j_v) / j_v
    out = drive(fmu_dir, {"tire_model": 0, "R": radius, "mu_s": mu_s, "mu_k": mu_k, "w_wheel_start": 1.0 / radius,
                          "v_start": 1.0}, torque, duration=0.2)
    assert out["F_x"] == pytest.approx(torque * M * radius / (J_W + j_v), rel=1e-12)
    assert np.all(out["slip"] == 0.0)


def test_clutch_tire_slides_with_the_kinetic_force(fmu_dir):
    """3000 N.m exceeds the static capacity mu_s m g R = 1059 N.m: the tire slides and
    pushes the vehicle with mu_k m g (a = mu_k g = 7.36 m/s2)."""
    out = drive(fmu_dir, {"tire_model": 0}, 3000.0)
    assert out["F_x"][-1] == pytest.approx(0.75 * M * G, rel=1e-12)
    assert out["v"][-1] == pytest.approx(0.75 * G * 1.0, rel=1e-9)
    assert out["w_wheel"][-1] > out["w_v"][-1]


def test_magic_formula_tire_carries_the_drive_with_small_slip(fmu_dir):
    """Tire model 1, 200 N.m: after the slip transient the tire force accelerates the
    vehicle like the rigid case (v within 0.5 % of tau R t / (J_w + m R^2) at 1 s), with a
    small positive slip, and never more than the peak D m g."""
    out = drive(fmu_dir, {"tire_model": 1}, 200.0)
    assert out["v"][-1] == pytest.approx(200.0 * R / (J_W + M * R * R), rel=5e-3)
    assert 0.0 < out["slip"][-1] < 0.05
    peak = 0.8 * M * G
    assert np.all(np.abs(out["F_x"]) <= peak * (1 + 1e-12))


def test_standstill_without_torque_stays_at_rest_for_both_tires(fmu_dir):
    """The slip is defined at standstill (denominator max(|v|, v_min)): no NaN, no creep."""
    for model in (0, 1):
        out = drive(fmu_dir, {"tire_model": model}, 0.0, duration=0.2)
        assert np.all(out["v"] == 0.0) and np.all(out["slip"] == 0.0) and np.all(np.isfinite(out["F_x"]))


def test_grade_rolls_the_car_back(fmu_dir):
    """On a 5 % grade (0.05 rad) without torque and with the tire stuck, the car rolls
    back with a = -m g sin(grade) R^2 / (J_w + m R^2)."""
    out = drive(fmu_dir, {"tire_model": 0}, 0.0, duration=0.5, grade=0.05)
    a = -M * G * math.sin(0.05) * R * R / (J_W + M * R * R)
    assert out["v"][-1] == pytest.approx(a * 0.5, rel=1e-9)
