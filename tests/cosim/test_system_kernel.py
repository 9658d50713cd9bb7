"""The system FMU's compiled inner loop (systems/system_kernel.py) against the algorithm.

The kernel is compiled here through the build's cache and bound into this process's
systems.composite_slave; the same system model then runs once with it and once with the
algorithm (systems/algorithm.py, the specification), and every output at every communication
point must be the algorithm's bit for bit: on every documented single-rate system, on a
refused step (same message, state kept), across an FMU state taken and set again, and with
FMU inputs set between steps.
"""
from __future__ import annotations

import importlib.util
import json
import math
import struct
import sys
from pathlib import Path

import pytest

from drivetrain_fmu import compiled_modules
from drivetrain_fmu.systems import composite, composite_slave
from drivetrain_fmu.systems.ssp import load_system
from tests.numerics.test_kernels import load_compiled

ROOT = Path(__file__).resolve().parents[2]
#: the documented systems the kernel runs (single rate, no iterations: the others run the algorithm)
SINGLE_RATE = sorted(path.stem for path in (ROOT / "systems" / "catalog" / "ssd").glob("*.ssd"))


@pytest.fixture(scope="module")
def system_loop():
    """systems.system_kernel.SystemLoop, compiled, with the compiled element and friction kernels it cimports
    (in ``sys.modules`` only while it is imported: this process's references stay uncompiled);
    skipped where nothing can be compiled."""
    try:
        compiled_modules.toolchain()
    except compiled_modules.CompileError as exc:
        pytest.skip(str(exc))
    kernels = [f"drivetrain_fmu.{name}" for name in ("solvers.friction_ode_kernel", "solvers.friction_kernel",
                                                       "fmus.element_kernel")]
    importlib.import_module("drivetrain_fmu.solvers.friction")     # before: its own methods stay the reference's
    try:
        for qualified in kernels:
            sys.modules[qualified] = load_compiled(qualified, ROOT.joinpath(*qualified.split(".")[1:]).with_suffix(".py"))
        return load_compiled("drivetrain_fmu.systems.system_kernel", ROOT / "systems" / "system_kernel.py").SystemLoop
    finally:
        for qualified in kernels:
            sys.modules.pop(qualified, None)


class _SystemModel(composite_slave.SystemModel):
    """SystemModel with an instance dict (the FMU's Composite has it through the shell)."""


def _model(tmp_path, monkeypatch, loop, system, parameters=None, **options):
    """A SystemModel of ``system`` (composite.describe's ``options``, ``parameters`` {name:
    value} set before initialization) with ``loop`` (None: the algorithm)."""
    folder = tmp_path / ("kernel" if loop else "algorithm")
    folder.mkdir(exist_ok=True)
    (folder / composite_slave.DESCRIPTION_FILE).write_text(json.dumps(composite.describe(system, **options)))
    monkeypatch.setattr(composite_slave, "SystemLoop", loop)
    model = _SystemModel(str(folder))
    if parameters:
        model.writer(list(parameters))(model, list(parameters.values()))
    model.initialize()
    return model


def _bits(values) -> bytes:
    return struct.pack(f"{len(values)}d", *values)


def _drive(model, steps: int, h: float, names, actions=None):
    """Per communication point n: ``actions(model, n)``, the outputs ``names`` read, a step of h
    (its message, if refused).  Returns the rows as bytes and the messages."""
    read = model.reader(names, float)
    rows, messages = [], []
    for n in range(steps):
        if actions:
            actions(model, n)
        rows.append(_bits(read(model)))
        messages.append(model.take_step(model._time(), h))
    rows.append(_bits(read(model)))
    return rows, messages


@pytest.mark.parametrize("system", SINGLE_RATE)
def test_the_kernel_gives_the_algorithm_s_outputs_bit_for_bit(tmp_path, monkeypatch, system_loop, system):
    described = load_system(system)
    names = composite.describe(system)["outputs"]
    h = described.step
    steps = min(int(round(described.stop / h)), 1500)
    runs = {}
    for loop in (None, system_loop):
        model = _model(tmp_path, monkeypatch, loop, system)
        uses_kernel = model._run is not None
        runs[loop] = _drive(model, steps, h, names)
    if not uses_kernel:
        pytest.skip(f"{system} runs the algorithm (multi-rate or iterated)")
    assert runs[system_loop] == runs[None]
    assert not any(runs[None][1]), runs[None][1]        # every step taken


def test_z3_runs_every_element_as_a_kernel_and_a_heated_clutch_runs_its_model(tmp_path, monkeypatch, system_loop):
    model = _model(tmp_path, monkeypatch, system_loop, "z3")
    assert model._run.kernel_count() == 7          # the dual clutch, the vehicle, two shafts, three tables
    heating = _model(tmp_path, monkeypatch, system_loop, "heating_clutch")
    assert heating.elements["clutch"]._thermal
    assert heating._run.kernel_count() == 3        # its two tables and the drag; the heated clutch its model


def test_an_input_out_of_its_range_is_refused_by_the_element_as_the_algorithm_refuses_it(
        tmp_path, monkeypatch, system_loop):
    # clamp_a's table goes below zero from 0.1 s: the dual clutch's kernel leaves the step to the
    # algorithm, whose clutch refuses the negative clamp force naming it
    names = ["clutch.w_1", "clutch.w_2", "vehicle.w"]
    runs = {}
    for loop in (None, system_loop):
        model = _model(tmp_path, monkeypatch, loop, "z3", {"clamp_a.n_points": 2, "clamp_a.t_1": 0.0,
                                                           "clamp_a.y_1": 6000.0, "clamp_a.t_2": 0.2,
                                                           "clamp_a.y_2": -6000.0})
        runs[loop] = _drive(model, 60, 2e-3, names)
    rows, messages = runs[system_loop]
    refused = [message for message in messages if message is not None]
    assert refused and all("clutch (DualClutch): input f_n_a" in str(message) for message in refused), refused
    assert rows[-1] == rows[len(messages) - len(refused)]      # every refused step kept the state
    assert runs[system_loop] == runs[None]


def test_a_step_the_kernel_cannot_take_is_refused_with_the_algorithm_s_message_and_the_state_kept(
        tmp_path, monkeypatch, system_loop):
    # an FMU input of a light vehicle (an Inertia kernel) so large that its speed overflows at
    # step 30: the kernel leaves the step to the algorithm, which refuses it with its message;
    # the next steps, with a small input again, go on from the state kept.  At 30 the state of
    # step 20 is set first, and a step refused before any get (the kernel then holds nothing
    # the models do not)
    names = ["vehicle.w", "vehicle.phi", "clutch.w_2", "shaft_odd.tau_1"]

    def push(model, n):
        if n == 20:
            saved.append(json.loads(json.dumps(model.record())))
        if n == 30:
            model.restore(saved.pop(), lambda: "not this code's")
            model.writer(["vehicle.tau_2"])(model, [1e308])
            first.append(model.take_step(model._time(), 2e-3))
        model.writer(["vehicle.tau_2"])(model, [1e308 if n == 30 else 10.0 * math.sin(n)])

    runs = {}
    for loop in (None, system_loop):
        saved, first = [], []
        model = _model(tmp_path, monkeypatch, loop, "z3", {"vehicle.J": 1e-3}, inputs=["vehicle.tau_2"],
                       outputs=names)
        runs[loop] = _drive(model, 60, 2e-3, names, push), first
    (rows, messages), first = runs[system_loop]
    assert "vehicle (Inertia)" in str(first[0]) and "= inf is not finite" in str(first[0]), first
    assert "vehicle (Inertia)" in str(messages[30]) and "= inf is not finite" in str(messages[30]), messages[30]
    assert sum(message is not None for message in messages) == 1
    assert rows[31] == rows[30]         # refused: the outputs of the state kept
    assert runs[system_loop] == runs[None]


def test_an_fmu_state_taken_and_set_again_continues_bit_for_bit(tmp_path, monkeypatch, system_loop):
    names = composite.describe("z3")["outputs"]
    model = _model(tmp_path, monkeypatch, system_loop, "z3")
    first, _ = _drive(model, 400, 2e-3, names)
    saved = json.loads(json.dumps(model.record()))
    later, _ = _drive(model, 300, 2e-3, names)
    model.restore(saved, lambda: "not this code's")
    again, _ = _drive(model, 300, 2e-3, names)
    assert again == later
    fresh = _model(tmp_path, monkeypatch, None, "z3")
    reference, _ = _drive(fresh, 700, 2e-3, names)
    assert first + later[1:] == reference


def test_host_steps_of_several_internal_steps_and_an_undone_step_match_the_algorithm(
        tmp_path, monkeypatch, system_loop):
    names = composite.describe("z3")["outputs"]

    def undo_every_seventh(model, n):
        if n % 7 == 3:
            model.take_step(model._time(), 1e-2)
            model.undo_step()

    runs = {}
    for loop in (None, system_loop):
        model = _model(tmp_path, monkeypatch, loop, "z3")
        runs[loop] = _drive(model, 200, 1e-2, names, undo_every_seventh)
    assert runs[system_loop] == runs[None]


def test_uncompiled_the_kernel_refuses_to_be_imported_and_the_algorithm_runs():
    spec = importlib.util.spec_from_file_location("drivetrain_fmu.systems.system_kernel",
                                                  ROOT / "systems" / "system_kernel.py")
    with pytest.raises(ImportError, match="runs compiled only"):
        spec.loader.exec_module(importlib.util.module_from_spec(spec))
    assert composite_slave.SystemLoop is None       # this process's systems are uncompiled


def test_an_output_that_is_not_finite_fails_the_get_with_the_algorithm_s_message(tmp_path, monkeypatch,
                                                                                    system_loop):
    # a torque of 1e308 on the vehicle at step 30: the shafts' spring energy at the next
    # communication point is not finite; every get from there fails naming it, every step
    # is refused, and a kernel run says what the algorithm says
    names = ["vehicle.w", "shaft_odd.tau_1", "shaft_even.e_spring", "clutch.tau_fric_a", "clutch.locked_a"]

    def run(loop):
        model = _model(tmp_path, monkeypatch, loop, "z3", inputs=["vehicle.tau_2"], outputs=names)
        read, seen = model.reader(names, float), []
        for n in range(40):
            model.writer(["vehicle.tau_2"])(model, [1e308 if n == 30 else 0.0])
            try:
                seen.append(_bits(read(model)))
            except ArithmeticError as exc:
                seen.append(str(exc))
            seen.append(model.take_step(model._time(), 2e-3))
        return seen

    kernel, algorithm = run(system_loop), run(None)
    failed = [entry for entry in kernel if isinstance(entry, str)]
    assert failed and "e_spring = inf is not finite" in failed[0], kernel[60:]
    assert kernel == algorithm
