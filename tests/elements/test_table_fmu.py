"""Table FMU: the piecewise-linear source that carries a system's inputs in SSP files."""
import numpy as np
import pytest

from drivetrain_fmu.systems.master import CoSimulationError, Instance, run


def test_table_output_is_the_piecewise_linear_function_of_time(fmu_dir):
    """Z3's clamp ramp for clutch a: 6000 N until 4 s, linear to 0 at 4.5 s, held after;
    sampled at 0.1 s it equals the linear interpolation at every communication point."""
    table = Instance(fmu_dir / "Table.fmu", "ramp", {"n_points": 3, "t_1": 0.0, "y_1": 6000.0, "t_2": 4.0,
                                                     "y_2": 6000.0, "t_3": 4.5, "y_3": 0.0})
    try:
        result = run({"ramp": table}, [], 5.0, 0.1, ["ramp.y"])
    finally:
        table.free()
    expected = np.interp(result.time, [0.0, 4.0, 4.5], [6000.0, 6000.0, 0.0])
    assert np.allclose(result["ramp.y"], expected, rtol=0, atol=1e-9)


def test_non_increasing_times_are_refused_naming_them(fmu_dir):
    with pytest.raises(CoSimulationError) as info:
        Instance(fmu_dir / "Table.fmu", "bad", {"n_points": 3, "t_1": 0.0, "t_2": 2.0, "t_3": 1.0})
    assert "t_3 = 1.0 must be greater than t_2 = 2.0" in " ".join(info.value.messages)


def test_hold_gives_a_staircase(fmu_dir):
    """R3's torque reversal: +100 N.m, then -100 N.m from 1 s on (hold = true): the step
    lands on the communication point at 1 s, with no ramp in between."""
    table = Instance(fmu_dir / "Table.fmu", "step", {"n_points": 2, "t_1": 0.0, "y_1": 100.0, "t_2": 1.0,
                                                    "y_2": -100.0, "hold": True})
    try:
        result = run({"step": table}, [], 2.0, 0.25, ["step.y"])
    finally:
        table.free()
    assert list(result["step.y"]) == [100.0] * 4 + [-100.0] * 5


def test_values_are_held_before_the_first_and_after_the_last_point(fmu_dir):
    """A ramp from 2 at 0.5 s to 4 at 1.5 s, sampled every 0.25 s from 0 to 2 s: y_1 held
    before t_1, the linear interpolation between, y_n held after t_n (exact in binary)."""
    table = Instance(fmu_dir / "Table.fmu", "ramp", {"n_points": 2, "t_1": 0.5, "y_1": 2.0, "t_2": 1.5,
                                                     "y_2": 4.0})
    try:
        result = run({"ramp": table}, [], 2.0, 0.25, ["ramp.y"])
    finally:
        table.free()
    assert list(result["ramp.y"]) == [2.0, 2.0, 2.0, 2.5, 3.0, 3.5, 4.0, 4.0, 4.0]


@pytest.mark.parametrize("element, unit, outputs", [("Table", None, ["y"]), ("TorqueTable", "N.m", ["y"]),
                                                    ("ForceTable", "N", ["y"]),
                                                    ("SpeedTable", "rad/s", ["w", "phi"])])
def test_each_source_declares_the_unit_of_its_quantity(fmu_dir, element, unit, outputs):
    """A torque, force or speed source carries its unit on its table values and its output
    (a speed source also its angle in rad), so a host that checks units (OMSimulator)
    connects it to a torque, clamp-force or speed input; the plain Table stays
    dimensionless ("1", e.g. a throttle)."""
    from fmpy import read_model_description

    variables = {v.name: v for v in read_model_description(fmu_dir / f"{element}.fmu").modelVariables}
    expected = unit or "1"
    assert [variables[f"y_{i}"].unit for i in range(1, 7)] == [expected] * 6
    assert variables[outputs[0]].unit == expected and variables[outputs[0]].causality == "output"
    if element == "SpeedTable":
        assert (variables["phi"].unit, variables["phi_start"].unit) == ("rad", "rad")


@pytest.mark.parametrize("hold", [False, True])
def test_speed_source_angle_is_the_exact_integral_of_its_speed(fmu_dir, hold):
    """SpeedTable (a test-bench speed profile: 0 -> 2 rad/s over 1 s, then 2 rad/s, then
    -1 rad/s from 2 s) from phi_start = 0.5 rad, started at t0 = 0.25 s and sampled every
    0.25 s.  Linear: phi(t) = 0.5 + (t^2 - t0^2) for t <= 1, then + 2 (t - 1) up to 2 s,
    then the ramp 2 -> -1 rad/s over [2, 3] s (area 0.5 rad), then -1 rad/s.  Staircase:
    the speed of each point held until the next.  Every value is a dyadic rational, so the
    integral is exact in binary: compared with ==."""
    parameters = {"n_points": 4, "t_1": 0.0, "y_1": 0.0, "t_2": 1.0, "y_2": 2.0, "t_3": 2.0, "y_3": 2.0,
                  "t_4": 3.0, "y_4": -1.0, "phi_start": 0.5, "hold": hold}
    source = Instance(fmu_dir / "SpeedTable.fmu", "bench", parameters, start_time=0.25)
    try:
        times = [0.25 + 0.25 * n for n in range(15)]
        angles, speeds = [source.get("phi")], [source.get("w")]
        for t in times[:-1]:
            source.do_step(t, 0.25)
            angles.append(source.get("phi"))
            speeds.append(source.get("w"))
    finally:
        source.free()

    def speed(t):
        if hold:
            return 0.0 if t < 1 else 2.0 if t < 3 else -1.0
        return 2 * t if t <= 1 else 2.0 if t <= 2 else 2.0 - 3 * (t - 2) if t <= 3 else -1.0

    def angle(t):          # integral of speed from 0.25 s, closed form per piece
        if hold:
            total = 2.0 * (min(t, 3.0) - 1.0) if t > 1 else 0.0
            return 0.5 + total - (t - 3.0 if t > 3 else 0.0)
        first = min(t, 1.0) ** 2 - 0.0625
        second = 2.0 * (min(t, 2.0) - 1.0) if t > 1 else 0.0
        u = min(t, 3.0) - 2.0
        third = 2.0 * u - 1.5 * u * u if t > 2 else 0.0
        return 0.5 + first + second + third - (t - 3.0 if t > 3 else 0.0)
    assert speeds == [speed(t) for t in times]
    assert angles == [angle(t) for t in times]
