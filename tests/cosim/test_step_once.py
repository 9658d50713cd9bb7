"""Each step's work done once: a friction element reads its inputs once per doStep, computes
its capacities once per set of inputs and starts the step from the stuck set its
feedthrough resolved; the master moves a communication point's values with one get and one
set per instance and type, with the values and records of a plain get/set per connection."""
import math

import numpy as np
import pytest

from drivetrain_fmu.fmus import Clutch, DualClutch
from drivetrain_fmu.systems.catalog import z3
from drivetrain_fmu.systems.master import Instance, run


def _slave(cls, **values):
    slave = cls(instance_name="once", resources=None)
    for name, value in values.items():
        slave.assign({name: value})
    slave.exit_initialization_mode()
    return slave


def _state_outputs(slave):
    return [getattr(slave, v.name) for v in slave.VARIABLES if v.causality == "output" and not v.depends]


def _feedthrough(slave):
    """What fmi2GetReal of the feedthrough outputs computes: their values at the inputs set now."""
    slave.update_feedthrough()
    return {name: getattr(slave, name) for name in slave.feedthrough_names}


def _count(monkeypatch, obj, name):
    calls = []
    original = getattr(obj, name)

    def counted(*args, **kwargs):
        calls.append(args)
        return original(*args, **kwargs)

    monkeypatch.setattr(obj, name, counted)
    return calls


def test_a_step_after_a_feedthrough_get_reads_and_resolves_nothing_again(monkeypatch):
    clutch = _slave(DualClutch, f_n_a=6000.0, tau_2=400.0, tau_1=-50.0)
    capacities = _count(monkeypatch, clutch, "capacities")
    resolve = _count(monkeypatch, clutch.chain, "resolve")
    reads = _count(monkeypatch, clutch, "read_inputs")
    first = _feedthrough(clutch)                      # fmi2GetReal of tau_fric_a, ...
    assert (len(capacities), len(resolve), len(reads)) == (1, 1, 1)
    _feedthrough(clutch)                              # the same inputs: read, nothing computed again
    assert (len(capacities), len(resolve), len(reads)) == (1, 1, 2)
    clutch.tau_1 = -60.0                              # new inputs: one more record, one more resolution
    _feedthrough(clutch)
    assert (len(capacities), len(resolve), len(reads)) == (2, 2, 3)
    assert clutch.do_step(0.0, 1e-3)
    # the step read the inputs once and reused the capacities and the stuck set of the get
    assert (len(capacities), len(resolve), len(reads)) == (2, 2, 4)
    assert clutch.do_step(1e-3, 1e-3)                 # held inputs: the capacities are kept
    assert len(capacities) == 2
    assert first["locked_a"] is True


def test_held_inputs_keep_the_capacities_and_new_ones_replace_them(monkeypatch):
    clutch = _slave(Clutch, f_n=1.0)
    capacities = _count(monkeypatch, clutch, "capacities")
    for k in range(5):
        assert clutch.do_step(k * 1e-4, 1e-4)
    assert len(capacities) == 1
    clutch.f_n = 2.0
    assert clutch.do_step(5e-4, 1e-4)
    assert len(capacities) == 2
    assert clutch.prepared()[1] == clutch.chain.capacities([2.0])[0]


@pytest.mark.parametrize("f_n", [0.0, 1.0, 1000.0])
def test_the_steps_and_outputs_equal_those_of_the_element_called_directly(f_n):
    """doStep (the prepared record and the stuck set shared with the feedthrough get) against
    the model's prepare/step/outputs called directly on a second instance that reuses
    nothing: bit for bit."""
    stepped, direct = _slave(Clutch, f_n=f_n), _slave(Clutch, f_n=f_n)
    for k in range(200):
        torque = 30.0 * math.sin(0.05 * k)
        stepped.assign({"tau_2": torque})
        direct.tau_2 = torque
        got = _feedthrough(stepped)
        assert got == direct.feedthrough(direct.prepare(direct.read_inputs(direct)))
        assert stepped.do_step(k * 1e-3, 1e-3)
        direct.state = direct.step(k * 1e-3, 1e-3, direct.prepare(direct.read_inputs(direct)))
        direct.outputs()
        assert stepped.state == direct.state
        assert _state_outputs(stepped) == _state_outputs(direct)


def test_a_nonfinite_output_still_refuses_the_step_naming_it_and_keeps_state_and_outputs():
    clutch = _slave(Clutch, w_1_start=0.0, J_2=0.2)    # locked, equal inertias: no friction needed
    clutch.assign({"tau_1": 1.5e308, "tau_2": 1.5e308})     # the pair's acceleration overflows
    state = clutch.state
    outputs = _state_outputs(clutch)
    logged = []
    clutch.log = lambda message, status=None, *args: logged.append(message)
    assert clutch.do_step(0.0, 1.0) is False
    assert clutch.state is state
    assert _state_outputs(clutch) == outputs
    assert "refused: output phi_1 = " in logged[-1] and "is not finite" in logged[-1]


# ---------------------------------------------------------------------------- master

def _plain_run(fmu_dir, step, stop):
    """Z3 with one get and one set per connection and one get per record (the reference
    the master's exchange plan must reproduce bit for bit)."""
    components = z3.components(step)
    instances = {name: Instance(fmu_dir / f"{c.element}.fmu", name, c.parameters)
                 for name, c in components.items()}
    try:
        def feedthrough(c):
            return any(u.variable.name == c.output and u.dependencies for u in instances[c.source].model.outputs)

        stages = [[c for c in z3.CONNECTIONS if not feedthrough(c)], [c for c in z3.CONNECTIONS if feedthrough(c)]]
        rows = []
        n_steps = int(round(stop / step))
        for n in range(n_steps + 1):
            for stage in stages:
                values = [instances[c.source].get(c.output) for c in stage]
                for c, value in zip(stage, values):
                    instances[c.target].set(c.input, value)
            rows.append([float(instances[key.split(".")[0]].get(key.split(".", 1)[1])) for key in z3.RECORD])
            if n < n_steps:
                for inst in instances.values():
                    inst.do_step(n * step, step)
        return np.array(rows)
    finally:
        for inst in instances.values():
            inst.free()


def test_the_master_moves_and_records_what_a_get_and_set_per_connection_does(fmu_dir):
    step, stop = z3.SYSTEM.step, 0.2
    plain = _plain_run(fmu_dir, step, stop)
    result = z3.simulate(fmu_dir, step=step, stop=stop)
    planned = np.column_stack([result[key] for key in z3.RECORD])
    assert planned.tobytes() == plain.tobytes()


def test_the_exchange_plan_sets_an_instance_once_when_no_stage_2_get_reads_it(fmu_dir, monkeypatch):
    from drivetrain_fmu.systems import master as master

    plans = []

    class Spy(master.Algorithm):
        def __init__(self, *args):
            super().__init__(*args)
            plans.append(self)

    monkeypatch.setattr(master, "Algorithm", Spy)
    z3.simulate(fmu_dir, step=z3.SYSTEM.step, stop=4 * z3.SYSTEM.step)
    plan, = plans
    (program, held), = plan.phases
    gets = [[get.instance.name for get in refreshes] for refreshes, *_ in program]
    sets = [[put.instance.name for put in flushes] for *_, flushes in program]
    # the clutch's engine torque and clamp forces (stage 1) go with its shaft torques (stage 2)
    assert sorted(gets[0]) == ["clamp_a", "clamp_b", "clutch", "engine_torque", "vehicle"]
    assert sorted(gets[1]) == ["shaft_even", "shaft_odd"]
    assert sorted(sets[0]) == ["shaft_even", "shaft_odd"]
    assert sorted(sets[1]) == ["clutch", "vehicle"]
    # the vehicle's angle and speed, read for both shafts, are read once
    vehicle, = [get for get in program[0][0] if get.instance.name == "vehicle"]
    assert len(vehicle.values) == 2
