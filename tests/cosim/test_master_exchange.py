"""The master's exchange and record layouts (systems/master.py ``_Exchange``): each way of
moving and recording the values gives the same results bit for bit, and a failing FMI call
of the run loop still raises CoSimulationError with the FMU's log."""
import math

import numpy as np
import pytest

from drivetrain_fmu.systems import master as master
from drivetrain_fmu.systems.catalog import fan
from drivetrain_fmu.systems.master import CoSimulationError, Instance, run
from drivetrain_fmu.systems.ssp import run_system

STEP, STOP = 1e-3, 0.05


def _f2(fmu_dir, record=fan.RECORD):
    return run_system(fmu_dir, fan.components("F2", STEP), fan.connections("F2"), STOP, STEP, record)


def _plans(monkeypatch, may_share=None):
    """The plans the runs make (``may_share`` given: forced to it)."""
    plans = []

    class Spy(master._Exchange):
        def __init__(self, instances, stages, record, moved_at, shared, rows):
            super().__init__(instances, stages, record, moved_at, shared if may_share is None else may_share, rows)
            plans.append(self)

    monkeypatch.setattr(master, "_Exchange", Spy)
    return plans


def test_f2_sets_what_it_reads_without_copying_and_as_with_copies(fmu_dir, monkeypatch):
    """fan_F2 reads each connection's source once, in the order of the inputs it drives: its
    inputs are set from the buffer the gets fill (no copy), with the results of the copies."""
    plans = _plans(monkeypatch)
    shared = _f2(fmu_dir)
    copied_plans = _plans(monkeypatch, may_share=False)
    copied = _f2(fmu_dir)
    assert plans[0].shared and not copied_plans[0].shared
    assert all(shared[key].tobytes() == copied[key].tobytes() for key in ["time", *fan.RECORD])


def test_a_few_recorded_values_far_apart_are_recorded_as_among_many(fmu_dir, monkeypatch):
    """engine.w (read for the exchange) and vehicle.ax (read for the record only) lie far apart
    in the read buffer: recorded alone they are gathered by a take instead of recorded with
    the values between them; they are the same values either way (reading changes nothing)."""
    plans = _plans(monkeypatch)
    few = _f2(fmu_dir, ["vehicle.ax", "clutch.locked", "engine.w"])
    every = _f2(fmu_dir)
    assert plans[0].record_take is not None and plans[1].record_take is None
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
