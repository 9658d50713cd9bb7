"""The system kernel against the algorithm on the call sequences a review found diverging
(session 23): each runs a small system twice, with the compiled kernel and with the
algorithm (tests/cosim/test_system_kernel.py's model), and every value must be the same."""
from __future__ import annotations

import json
import struct

from drivetrain_fmu.systems import composite, composite_slave
from drivetrain_fmu.systems.master import Connection
from drivetrain_fmu.systems.ssp import Component, System

from tests.cosim.test_system_kernel import _SystemModel, system_loop  # noqa: F401  (fixture)

H = 1e-3
CLUTCH_INERTIA = {"c": Component("Clutch", {}), "v": Component("Inertia", {})}


def _both(tmp_path, monkeypatch, loop, system, scenario, **options):
    runs = []
    for kernel in (None, loop):
        folder = tmp_path / ("kernel" if kernel else "algorithm")
        folder.mkdir(exist_ok=True)
        (folder / composite_slave.DESCRIPTION_FILE).write_text(json.dumps(composite.describe(system, **options)))
        monkeypatch.setattr(composite_slave, "SystemLoop", kernel)
        model = _SystemModel(str(folder))
        model.initialize()
        assert (model._run is not None) == (kernel is not None)
        runs.append(scenario(model, model.reader(options["outputs"], float)))
    assert runs[1] == runs[0]


def _bits(values):
    return struct.pack(f"{len(values)}d", *values)


def test_an_fmu_state_taken_with_an_input_just_set(tmp_path, monkeypatch, system_loop):
    system = System("one", "", CLUTCH_INERTIA, [Connection("c", "w_2", "v", "tau_1")], stop=1.0, step=H)

    def scenario(m, read):
        rows, clamp = [], m.writer(["c.f_n"])
        m.writer(["c.tau_1"])(m, [50.0])
        for f_n, h in ((500.0, H), (500.0, 1e-10), (900.0, H)):
            clamp(m, [f_n])
            rows += [m.take_step(m._time(), h), _bits(read(m))]
        clamp(m, [500.0])
        m.record()                  # fmi2GetFMUstate before the input reached the kernel
        for h in (1e-10, H, H, H):
            rows += [m.take_step(m._time(), h), _bits(read(m))]
        return rows
    _both(tmp_path, monkeypatch, system_loop, system, scenario, inputs=["c.f_n", "c.tau_1"],
          outputs=["c.w_1", "c.w_2", "c.tau_fric", "c.e_loss", "c.locked"])


def test_an_undone_step_in_which_the_clutch_locks(tmp_path, monkeypatch, system_loop):
    system = System("two", "", CLUTCH_INERTIA, [Connection("c", "tau_fric", "v", "tau_1")], stop=1.0, step=H)

    def scenario(m, read):
        rows = []
        m.writer(["c.tau_1", "c.f_n"])(m, [50.0, 1000.0])
        for _ in range(229):        # the clutch locks within the next two steps
            rows.append(m.take_step(m._time(), H))
        rows += [m.take_step(m._time(), 1e-10), _bits(read(m)), m.take_step(m._time(), 2 * H)]
        m.undo_step()
        for h in (1e-10, H, H, H):
            rows += [m.take_step(m._time(), h), _bits(read(m))]
        return rows
    _both(tmp_path, monkeypatch, system_loop, system, scenario, inputs=["c.f_n", "c.tau_1"],
          outputs=["c.w_1", "c.w_2", "c.tau_fric", "c.e_loss", "c.locked", "v.w"])


def test_a_get_after_a_clutch_input_out_of_range(tmp_path, monkeypatch, system_loop):
    system = System("four", "", CLUTCH_INERTIA, [Connection("c", "w_2", "v", "tau_1")], stop=1.0, step=H)

    def scenario(m, read):
        rows = []
        for n in range(5):
            m.writer(["v.tau_2", "c.f_n"])(m, [float(n), 1000.0 if n < 3 else -100.0])
            rows += [_bits(read(m)), m.take_step(m._time(), H)]
        return rows
    _both(tmp_path, monkeypatch, system_loop, system, scenario, inputs=["c.f_n", "v.tau_2"],
          outputs=["c.tau_fric", "v.a", "v.w", "c.w_2"])


def test_the_temperature_of_a_clutch_without_its_thermal_model(tmp_path, monkeypatch, system_loop):
    system = System("five", "", CLUTCH_INERTIA, [Connection("c", "w_2", "v", "tau_1")], stop=1.0, step=H)

    def scenario(m, read):
        first = read(m)
        assert first[0] == 293.15, first
        return [first, m.take_step(m._time(), H), read(m)]
    _both(tmp_path, monkeypatch, system_loop, system, scenario, inputs=["c.f_n"], outputs=["c.T_th", "c.w_1"])


def test_a_stage_two_source_that_is_also_a_stage_two_target(tmp_path, monkeypatch, system_loop):
    components = {"c": Component("Clutch", {"w_1_start": 0.0, "locked_start": True}),
                  "s": Component("Shaft", {"k": 500.0, "d": 1.0, "T_comm": 0.0}), "v": Component("Inertia", {})}
    links = [Connection("c", "phi_2", "s", "phi_1"), Connection("c", "w_2", "s", "w_1"),
             Connection("v", "phi", "s", "phi_2"), Connection("v", "w", "s", "w_2"),
             Connection("s", "tau_1", "c", "tau_2"), Connection("s", "tau_2", "v", "tau_1"),
             Connection("c", "p_loss", "v", "tau_2")]
    system = System("seven", "", components, links, stop=1.0, step=H)

    def scenario(m, read):
        rows = []
        m.writer(["c.f_n", "c.tau_1"])(m, [3000.0, 50.0])
        for _ in range(20):
            rows += [_bits(read(m)), m.take_step(m._time(), H)]
        return rows + [_bits(read(m))]
    _both(tmp_path, monkeypatch, system_loop, system, scenario, inputs=["c.f_n", "c.tau_1"],
          outputs=["c.tau_fric", "c.w_1", "c.w_2", "v.w"])
