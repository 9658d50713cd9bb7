"""Multi-rate stepping of separate FMUs: systems.master.run's ``rates`` (through
systems.ssp.run_system and systems.catalog.fan.simulate), the scheme of the system FMU's ``--rate``
(docs/composite-fmu.md, "Multi-rate"):

* every rate equal to the base step runs the multi-rate path (inputs set at the step's start,
  then again as the mean of one value, the instances with a rate stepped after the others)
  and gives the uniform run bit for bit;
* the system FMU (systems/composite_slave.py, in-process under fmpy) and the master with the
  element FMUs give the same values for the same rates at every host step (1e-12 relative
  asked; measured: bit-identical): the two implement one scheme;
* Fan F2 with the vehicle at 1 ms over a 0.1 ms base step stays as close to the monolithic
  reference as the uniform 0.1 ms run (the vehicle's own dynamics are slow);
* bad rates are refused in one line naming the value and what is allowed.
"""
from __future__ import annotations

import numpy as np
import pytest

from drivetrain_fmu import build_fmus
from drivetrain_fmu.systems.catalog import fan
from drivetrain_fmu.systems.catalog.reference import error_report, fan_reference

FAN_KEYS = ["engine.w", "clutch.w_1", "vehicle.w_wheel_f"]
#: F2's components with a state (the shafts are compliances: no rate of their own)
F2_BODIES = ("engine", "clutch", "vehicle")


def test_every_rate_equal_to_the_base_step_is_the_uniform_run_bit_for_bit(fmu_dir):
    """F2, 0.1 s at 0.1 ms (the clutch locks and unlocks 7 times): every body given the base
    step as its rate, every recorded signal identical to the uniform run's (difference 0)."""
    uniform = fan.simulate(fmu_dir, "F2", step=1e-4, stop=0.1)
    mine = fan.simulate(fmu_dir, "F2", step=1e-4, stop=0.1, rates={body: 1e-4 for body in F2_BODIES})
    for key in fan.RECORD:
        assert mine[key].tobytes() == uniform[key].tobytes(), key
    assert np.count_nonzero(np.diff(uniform["clutch.locked"])) >= 2


@pytest.mark.parametrize("internal, rates", [(1e-4, {"vehicle": 1e-3}),
                                             (5e-5, {"vehicle": 1e-3, "engine": 2e-4})],
                         ids=["vehicle_1ms_over_0.1ms", "vehicle_1ms_engine_0.2ms_over_0.05ms"])
def test_the_master_and_the_system_fmu_run_one_multirate_scheme(fmu_dir, tmp_path, internal, rates):
    """F2, 0.2 s: the system FMU built with these rates over this internal step, run by fmpy at
    a 1 ms host step, against the master with the element FMUs at the same rates over the same
    base step, sampled at the host steps: equal to 1e-12 of each signal's largest value
    (measured: bit-identical; the same operations in the same order).  The run is not the
    uniform one (the rates do something)."""
    from fmpy import simulate_fmu

    stop, host = 0.2, 1e-3
    fmu = build_fmus.build_system_fmu("fan_F2", tmp_path, internal_step=internal, rates=rates, outputs=FAN_KEYS)
    system = simulate_fmu(str(fmu), stop_time=stop, step_size=host, output_interval=host, output=FAN_KEYS)
    every = int(round(host / internal))
    master = fan.simulate(fmu_dir, "F2", step=internal, stop=stop, rates=rates)
    uniform = fan.simulate(fmu_dir, "F2", step=internal, stop=stop)
    for key in FAN_KEYS:
        mine, theirs = master[key][::every], system[key].astype(float)
        assert mine.shape == theirs.shape, key
        assert np.max(np.abs(mine - theirs)) <= 1e-12 * np.max(np.abs(theirs)), key
    assert not np.array_equal(master["clutch.w_1"], uniform["clutch.w_1"])


def test_f2_with_the_vehicle_at_1ms_is_as_close_to_the_reference_as_the_uniform_run(fmu_dir):
    """F2, first 0.5 s, base step 0.1 ms (the catalog's), the vehicle at 1 ms: RMS error /
    range against the monolithic reference on the 1 ms grid, measured 0.249 % (engine.w),
    0.585 % (clutch.w_1), 0.0046 % (vehicle.w_wheel_f); the uniform 0.1 ms run 0.251 %,
    0.587 %, 0.0047 %.  Asked: engine.w below 1 % (issue 20's target) and every signal within
    10 % of the uniform run's error: the vehicle's own motion is slow (its speeds' error stays
    near 0.005 % of their range), so its 1 ms step adds nothing the 0.1 ms driveline step does
    not already cost.  Holding the vehicle's inputs at their step's start instead of their
    mean, or its angle instead of advancing it, costs 20 % and 25x more on the system FMU
    (docs/composite-fmu.md)."""
    stop = 0.5
    grid = np.arange(int(round(stop / 1e-3)) + 1) * 1e-3
    reference = fan_reference("F2", grid)
    errors = {}
    for label, rates in (("multirate", {"vehicle": 1e-3}), ("uniform", None)):
        result = fan.simulate(fmu_dir, "F2", step=1e-4, stop=stop, rates=rates)
        errors[label] = error_report({key: result[key][::10] for key in FAN_KEYS}, reference, FAN_KEYS)
    assert errors["multirate"]["engine.w"][1] < 0.01, errors
    for key in FAN_KEYS:
        assert errors["multirate"][key][1] <= 1.1 * errors["uniform"][key][1], (key, errors)
    assert np.ptp(reference["clutch.w_1"]) > 1.0


def test_bad_rates_are_refused_in_one_line_naming_the_value(fmu_dir):
    allowed = "components that take a rate: engine, clutch, vehicle"
    for kwargs, text in (({"rates": {"nope": 1e-3}}, "--rate nope=0.001: no component 'nope' in this system; "
                                                     + allowed),
                         ({"rates": {"half_shaft": 1e-3}}, "--rate half_shaft=0.001: half_shaft (Shaft) has no state: "
                                                           "it is evaluated at every step; " + allowed),
                         ({"rates": ["vehicle=1.3e-4"]}, "--rate vehicle=0.00013: 0.00013 s is not a whole multiple of "
                                                         "the step 0.0001 s (nearest: 1 x 0.0001 = 0.0001 s)"),
                         ({"rates": {"vehicle": 1e-3}, "stop": 0.0105},
                          "stop = 0.0105 is not a whole number of the steps of the instances with their own rate "
                          "(vehicle 0.001 s): give a stop of n x 0.001 s"),
                         ({"rates": {"vehicle": 1e-3}, "iterations": 1}, "iterations with rates is not supported")):
        with pytest.raises(ValueError) as refused:
            fan.simulate(fmu_dir, "F2", **{"step": 1e-4, "stop": 0.01, **kwargs})
        assert text in str(refused.value) and "\n" not in str(refused.value), (kwargs, str(refused.value))


def test_the_master_refuses_a_rate_for_an_instance_it_does_not_run(fmu_dir):
    from drivetrain_fmu.systems.master import Instance, run

    engine = Instance(fmu_dir / "Engine.fmu", "engine")
    try:
        for rates, text in (({"vehicle": 1e-3}, "rates: no instance 'vehicle'; instances: engine"),
                            ({"engine": float("nan")}, "rates['engine'] = nan must be a finite number > 0 (seconds)"),
                            ({"engine": 1.7e-3}, "rates['engine'] = 0.0017 s is not a whole multiple of the step "
                                                 "0.001 s (nearest: 2 x 0.001 = 0.002 s)")):
            with pytest.raises(ValueError) as refused:
                run({"engine": engine}, [], 0.01, 1e-3, ["engine.w"], rates=rates)
            assert str(refused.value) == text
    finally:
        engine.free()


def test_an_output_interval_records_every_nth_row_of_the_same_run(fmu_dir):
    """output_interval = 1 ms over a 0.1 ms base step, the vehicle at 1 ms: the rows are t = 0,
    1 ms, ..., 0.1 s, each the every-step run's row at that time bit for bit (values not
    recorded are not read, and reading changes nothing in the run); an interval that is not a
    whole multiple of the step, or does not divide the stop, is refused naming it."""
    from drivetrain_fmu.systems.ssp import run_system

    run = (fmu_dir, fan.components("F2", 1e-4), fan.connections("F2"), 0.1, 1e-4, fan.RECORD)
    every_step = run_system(*run, rates={"vehicle": 1e-3})
    sparse = run_system(*run, rates={"vehicle": 1e-3}, output_interval=1e-3)
    assert len(sparse.time) == 101 and sparse.time.tobytes() == every_step.time[::10].tobytes()
    for key in fan.RECORD:
        assert sparse[key].tobytes() == every_step[key][::10].tobytes(), key
    for bad in (1.5e-4, 3e-3):
        with pytest.raises(ValueError, match=f"output_interval = {bad!r} must be a whole multiple of the step"):
            run_system(*run, output_interval=bad)
