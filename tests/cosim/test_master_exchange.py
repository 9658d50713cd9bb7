"""The master's recording (systems/master.py ``_Recorder``): what is recorded does not change
the run, and a failing FMI call of the run loop raises CoSimulationError with the FMU's log."""
import math

import numpy as np
import pytest

from drivetrain_fmu.systems.catalog import fan
from drivetrain_fmu.systems.master import CoSimulationError, Instance, run
from drivetrain_fmu.systems.ssp import run_system

STEP, STOP = 1e-3, 0.05


def _f2(fmu_dir, record=fan.RECORD):
    return run_system(fmu_dir, fan.components("F2", STEP), fan.connections("F2"), STOP, STEP, record)


def test_a_few_recorded_values_are_those_recorded_among_many(fmu_dir):
    """engine.w (read for the exchange), vehicle.ax (read for the record only) and
    clutch.locked (a Boolean) recorded alone are the values recorded with every signal of
    the system (reading changes nothing), a Boolean as 0.0 or 1.0."""
    few = _f2(fmu_dir, ["vehicle.ax", "clutch.locked", "engine.w"])
    every = _f2(fmu_dir)
    assert all(few[key].tobytes() == every[key].tobytes() for key in ["vehicle.ax", "clutch.locked", "engine.w"])
    assert few["clutch.locked"].dtype == np.float64 and set(every["clutch.locked"]) <= {0.0, 1.0}


def test_a_refused_step_of_the_run_raises_with_the_fmus_log(fmu_dir):
    """A NaN torque input: the Inertia refuses the step (fmi2Discard) and logs why; the run
    stops there with CoSimulationError naming the call and carrying that log."""
    inertia = Instance(fmu_dir / "Inertia.fmu", "inertia", {"J": 1.0})
    assert inertia.keeps_the_gil
    try:
        with pytest.raises(CoSimulationError) as info:
            run({"inertia": inertia}, [], 0.01, STEP, ["inertia.w"],
                inputs=lambda t: {"inertia.tau_1": math.nan if t >= 3 * STEP else 1.0})
    finally:
        inertia.free()
    assert "inertia: fmi2DoStep failed with status 2 (discard)" in str(info.value)
    assert info.value.messages == ["input tau_1 = nan is not finite; allowed range (-inf, inf) N.m; "
                                   "step from t = 0.003 refused"]
