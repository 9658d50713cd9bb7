"""The system FMU (build_fmus.build_system_fmu) in ecos and OMSimulator.

Two FMUs: Z3 as `drivetrain-fmu export-fmu z3` builds it, and Fan F2 multi-rate (the vehicle
at 1 ms over a 0.05 ms internal step). Each runs, from t = 0 to the case's stop at its host
step, in

* ecos through ecospy, in this process, with its single-FMU API (no SSP);
* ecos through libecosc from tests/hosts/ecos_host.c, every Python installation of the machine
  hidden, on a one-component SSP wrapping the FMU (its values printed with %.17g);
* OMSimulator's command line on the bare FMU, every Python hidden;
* OMSimulator's Python API, the FMU the one component of a new SSP (its class SSP);

and its outputs at every communication point must equal fmpy's in-process run of the same
FMU to RELATIVE (1e-9) of each signal's largest magnitude, the tolerance of the element FMUs'
host tests (tests/hosts/test_self_contained.py). The same CPython build runs the same code in every
host and the system FMU counts its own time (t = t0 + n h), so a host's time arithmetic does
not reach the elements, and the values cross no rounding text file (ecospy returns doubles,
the C host prints 17 digits, OMSimulator writes a MAT file of doubles; its CSV would keep 12
significant digits, 5e-12 relative, also within the tolerance): what is left is rounding,
far below 1e-9. Measured: identical (difference 0) in every host, the stop included.

OMSimulator accumulates time (t += h, the last step cut at the stop), so a run can end with
a step of about 1e-13 s. The stops are chosen so that it does: Z3 to 4 s at 2 ms ends with a
2.2e-13 s step, F2 to 1.008 s at 1 ms (the shortest such stop of at least 0.5 s) with a
2.2e-16 s step; the tests read that step from OMSimulator's own result file. The system FMU
takes it as a final remainder (systems/composite_slave.py, SLIVER) that ends where the host's
step ends: it steps only what lies beyond its own time, here nothing. It used to step the
whole sliver past its own stop: Z3's clutch b clamp Table, whose ramp starts at 4 s, read
2.6e-9 N at the stop instead of 0, and every state had moved by the sliver.

Besides equality, each run must show the physics of its system: the ideal gear of every shaft
(fmus/compliance.py: tau_1 = -tau / ratio, tau_2 = tau) at every point, the start values
and the Tables the system file binds.
"""
from __future__ import annotations

import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest
from fmpy import read_model_description

from drivetrain_fmu import build_fmus
from drivetrain_fmu.systems import ssp
from drivetrain_fmu.systems.catalog import z3
from drivetrain_fmu.systems.ssp import Component, write_ssp
from drivetrain_fmu.systems.master import Instance
from tests.cosim.test_composite_fmu import FAN_F2, _assert_close, _outputs, _run_fmpy
from tests.hosts.test_hosts import OMS_API_SCRIPT, OMSIMULATOR, _omsimulator_result, _omsimulator_signals, _run_c_host
from tests.hosts.test_self_contained import RELATIVE, hiding, without_python  # noqa: F401  (fixtures)

#: the component name of the system FMU in ecos (structure or SSP)
INSTANCE = "system"


@dataclass(frozen=True)
class Case:
    system: str | Path                 # what build_system_fmu builds
    step: float                        # the host step
    stop: float                        # OMSimulator's t += step reaches it with a final sliver step
    build: dict = field(default_factory=dict)     # build_system_fmu's keyword arguments
    start: dict = field(default_factory=dict)     # output -> its value at t = 0, from the file
    constant: dict = field(default_factory=dict)  # output -> the value it keeps over the run


def _bound(system, instance: str, name: str) -> float:
    return ssp.open_system(str(system)).components[instance].with_defaults()[name]


CASES = {
    # engine 400 N.m through clutch a (clamped with 6000 N; the shift starts at 4 s); at rest
    "z3": Case("z3", z3.SYSTEM.step, z3.SHIFT_START,
               start={"clutch.w_1": 0.0, "vehicle.w": 0.0},
               constant={"engine_torque.y": z3.ENGINE_TORQUE, "clamp_a.y": z3.CLAMP_FORCE, "clamp_b.y": 0.0}),
    # clutch judder: engine and wheels start at 20 rad/s
    "fan_F2": Case(FAN_F2, 1e-3, 1.008, build={"internal_step": 5e-5, "rates": {"vehicle": 1e-3}},
                   start={"engine.w": _bound(FAN_F2, "engine", "w_start"),
                          "vehicle.w_wheel_f": _bound(FAN_F2, "vehicle", "w_wheel_f_start")}),
}


@dataclass(frozen=True)
class Built:
    name: str
    case: Case
    fmu: Path
    outputs: list[str]
    booleans: frozenset                # the outputs of type Boolean (lock flags): read as such
    reference: dict                    # fmpy's in-process run: time and every output
    n_steps: int


@pytest.fixture(scope="module", params=sorted(CASES))
def built(request, tmp_path_factory) -> Built:
    """The case's system FMU and fmpy's in-process run of it (the reference)."""
    name, case = request.param, CASES[request.param]
    fmu = build_fmus.build_system_fmu(case.system, tmp_path_factory.mktemp(name), **case.build)
    outputs = _outputs(fmu)
    booleans = frozenset(v.name for v in read_model_description(str(fmu)).modelVariables
                         if v.causality == "output" and v.type == "Boolean")
    result = _run_fmpy(fmu, case.stop, case.step, outputs)
    reference = {key: np.asarray(result[key], dtype=float) for key in ["time", *outputs]}
    n_steps = round(case.stop / case.step)
    assert len(reference["time"]) == n_steps + 1
    return Built(name, case, fmu, outputs, booleans, reference, n_steps)


def _assert_like_fmpy(built: Built, table: dict, host: str):
    """``table`` (time and every output at the n_steps + 1 communication points) equals fmpy's
    run to RELATIVE and shows the system's physics: every geared shaft's torques in the ratio
    of its gear (to 1e-12 of the larger torque: one division's rounding is 1e-16), the
    file's start values at t = 0 and its Tables' values over the run."""
    what = f"{built.name} in {host}"
    assert np.allclose(table["time"], built.reference["time"], rtol=0, atol=1e-9 * built.case.stop), what
    _assert_close(table, built.reference, [key for key in built.outputs if key in table], RELATIVE, what)
    system = ssp.open_system(str(built.case.system))
    shafts = [inst for inst in system.components if f"{inst}.tau_1" in table and f"{inst}.tau_2" in table]
    assert shafts, what
    for inst in shafts:
        ratio = system.components[inst].with_defaults()["ratio"]
        tau_1, tau_2 = table[f"{inst}.tau_1"], table[f"{inst}.tau_2"]
        assert np.ptp(tau_2) > 1.0, (what, inst)                               # they do carry torque
        assert np.max(np.abs(tau_2 + ratio * tau_1)) <= 1e-12 * np.max(np.abs(tau_2)), (what, inst)
    for key, value in built.case.start.items():
        assert table[key][0] == value and np.ptp(table[key]) > 1.0, (what, key)   # starts there, moves
    for key, value in built.case.constant.items():
        assert np.all(table[key] == value), (what, key)


def test_ecospy_runs_the_system_fmu_like_fmpy(built):
    """ecospy's single-FMU structure (EcosSimulationStructure.add_model), in this process:
    init, then one ecos step of the host step at a time, every output read as a double."""
    try:
        from ecospy import EcosSimulation, EcosSimulationStructure
    except (ImportError, OSError) as exc:
        pytest.skip(f"ecospy is not usable here ({exc}); ./run_tests.sh installs it and libtbb12")
    with EcosSimulationStructure() as structure:
        structure.add_model(INSTANCE, built.fmu)
        simulation = EcosSimulation(structure=structure, step_size=built.case.step)
    getters = [(simulation.get_bool if key in built.booleans else simulation.get_real, f"{INSTANCE}::{key}")
               for key in built.outputs]

    def row():
        return [float(get(name)) for get, name in getters]
    try:
        assert simulation.init(), f"ecos could not initialize {built.name}"
        rows = [[0.0, *row()]]
        for _ in range(built.n_steps):
            rows.append([simulation.step(1), *row()])
        simulation.terminate()
    finally:
        simulation.free()
    rows = np.array(rows)
    _assert_like_fmpy(built, {"time": rows[:, 0], **dict(zip(built.outputs, rows[:, 1:].T))}, "ecospy")


def test_ecos_c_host_without_python_runs_the_system_fmu_like_fmpy(built, ecos_host, without_python,  # noqa: F811
                                                                  tmp_path):
    """libecosc from tests/hosts/ecos_host.c (a C program) with every Python installation hidden,
    on an SSP with the FMU as its one component: the FMU's bundled runtime is all the Python
    there is."""
    wrapped = write_ssp(tmp_path / f"{built.name}_wrapped.ssp", f"{built.name}_wrapped",
                        {INSTANCE: Component(built.fmu.stem)}, [], built.fmu.parent, built.case.stop)
    reals = [key for key in built.outputs if key not in built.booleans]     # tests/hosts/ecos_host.c reads Reals
    names = [f"{INSTANCE}::{key}" for key in reals]
    rows = _run_c_host(ecos_host, wrapped, built.case.step, built.n_steps, names, tmp_path, run=without_python)
    _assert_like_fmpy(built, {"time": rows[:, 0], **dict(zip(reals, rows[:, 1:].T))}, "ecos (C)")


@pytest.mark.parametrize("interface", ["cli", "api"])
def test_omsimulator_runs_the_system_fmu_like_fmpy_through_its_final_sliver_step(interface, built, request, tmp_path):
    """OMSimulator's command line on the bare FMU with every Python hidden
    (`OMSimulator z3.fmu --stopTime=4 --stepSize=0.002 --resultFile=cli.mat`), and its Python
    API with the FMU as the one component of a new SSP, each writing a MAT result file: the
    run ends with a step shorter than 1e-9 of the host step (its accumulated time), which the
    FMU takes without an error, and the values at every communication point, the stop
    included, equal fmpy's."""
    oms, library = OMSIMULATOR / "bin" / "OMSimulator", OMSIMULATOR / "lib" / "x86_64-linux-gnu"
    if not oms.exists():
        pytest.skip(f"{oms} is absent (the prebuilt hosts of ../shared/tools/hosts)")
    case, result = built.case, tmp_path / f"{interface}.mat"
    if interface == "cli":
        run_hidden = request.getfixturevalue("without_python")     # not asked for by the API run
        done = run_hidden([oms, built.fmu, f"--stopTime={case.stop!r}", f"--stepSize={case.step!r}",
                           f"--resultFile={result.name}"], tmp_path)
        system = ""
    else:
        (tmp_path / "api.py").write_text(OMS_API_SCRIPT)
        done = subprocess.run([sys.executable, "api.py", str(built.fmu), result.name,
                               repr(case.stop), repr(case.step)], cwd=tmp_path, capture_output=True, text=True,
                              env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "PYTHONPATH": str(library),
                                   "LD_LIBRARY_PATH": str(library)}, timeout=600)
        system = built.fmu.stem                # the component OMS_API_SCRIPT makes of the FMU
    log = done.stdout + done.stderr
    assert done.returncode == 0 and not re.search(r"^(error|warning)", log, flags=re.M), log[-3000:]
    times = np.unique(_omsimulator_result(result)[1][:, 0])
    assert times[-1] == case.stop and 0.0 < times[-1] - times[-2] < 1e-9 * case.step, times[-3:]
    table = _omsimulator_signals(result, system, built.outputs, built.reference["time"])
    _assert_like_fmpy(built, {"time": built.reference["time"], **table}, f"OMSimulator ({interface})")


def _omsimulator_times(step: float, stop: float) -> list[float]:
    """OMSimulator's communication points: its fixed-step master accumulates t_next = t + step
    and cuts the last step at the stop."""
    times = [0.0]
    while times[-1] < stop:
        times.append(min(times[-1] + step, stop))
    return times


def test_a_host_s_accumulated_time_does_not_reach_the_elements(built):
    """The FMU driven (systems.master.Instance) at OMSimulator's accumulated communication
    points, without OMSimulator: 2000 (Z3) or 1008 (F2) steps whose start lags the FMU's
    own count n h by up to 2.2e-13 s, then the final sliver up to the stop. The FMU counts its
    time, so every value equals fmpy's (t = n h) bit for bit, and after the sliver it is at the
    host's stop as the host's step ends there (FMI: doStep(t, h) ends at t + h), not a sliver
    beyond its own stop. Before, it stepped the whole sliver from its own time: Z3's clutch b
    clamp Table, ramping from 0 at 4 s, read 2.6e-9 N at the stop instead of 0."""
    times = _omsimulator_times(built.case.step, built.case.stop)
    assert len(times) == built.n_steps + 2 and times[-1] - times[-2] < 1e-9 * built.case.step   # a sliver
    inst = Instance(built.fmu, "system")
    try:
        rows = [[inst.get(key) for key in built.outputs]]
        for t, t_next in zip(times[:-1], times[1:]):
            inst.do_step(t, t_next - t)
            rows.append([inst.get(key) for key in built.outputs])
    finally:
        inst.free()
    rows = np.array(rows)
    for column, key in enumerate(built.outputs):
        assert np.array_equal(rows[:-1, column], built.reference[key]), key   # the points before the sliver
        assert rows[-1, column] == built.reference[key][-1], key                 # and after it
    for key, value in built.case.constant.items():
        assert rows[-1, built.outputs.index(key)] == value, key
