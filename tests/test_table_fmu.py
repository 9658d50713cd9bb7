"""Table FMU: the piecewise-linear source that carries a system's inputs in SSP files."""
import numpy as np
import pytest

from systems.master import CoSimulationError, Instance, run


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
