"""An element FMU run by its compiled kernel (fmus/kernel_run.py over fmus/element_kernel.py)
against the same FMU run by its model.

element_kernel is compiled here through the build's cache and bound into this process's
fmus.kernel_run; the same element FMU class then runs a scenario once with it and once without
(the model, fmus/, the specification) through the FMI entry points the host calls (the shell's
set, get, doStep and FMU-state methods).  Every output at every communication point must be the
model's bit for bit: the kernel makes the model's floating-point operations in the model's
order, so any difference is a defect, not rounding.  A refused step must give the model's
message and keep the state; an FMU state taken and set again, and a step undone, must give back
the same outputs.
"""
from __future__ import annotations

import importlib
import math
import struct
import sys
from pathlib import Path

import pytest

from drivetrain_fmu import compiled_modules, fmus
from drivetrain_fmu.fmus import kernel_run
from drivetrain_fmu.fmus.variables import BOOLEAN, INPUT, OUTPUT, REAL
from tests.numerics.test_kernels import load_compiled

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def element_kernel():
    """fmus.element_kernel, compiled, with the compiled friction kernels it cimports (in
    ``sys.modules`` only while it is imported: this process's models stay uncompiled); skipped
    where nothing can be compiled."""
    try:
        compiled_modules.toolchain()
    except compiled_modules.CompileError as exc:
        pytest.skip(str(exc))
    kernels = [f"drivetrain_fmu.solvers.{name}" for name in ("friction_ode_kernel", "friction_kernel")]
    importlib.import_module("drivetrain_fmu.solvers.friction")     # before: its own methods stay the reference's
    try:
        for qualified in kernels:
            sys.modules[qualified] = load_compiled(qualified, ROOT / "solvers" / f"{qualified.rpartition('.')[2]}.py")
        return load_compiled("drivetrain_fmu.fmus.element_kernel", ROOT / "fmus" / "element_kernel.py")
    finally:
        for qualified in kernels:
            sys.modules.pop(qualified, None)


def _instance(monkeypatch, kernel, element: str, parameters: dict):
    """The element FMU ``element`` initialized with ``parameters``, run by its kernel
    (``kernel``: the compiled element_kernel) or by its model (None)."""
    monkeypatch.setattr(kernel_run, "ElementRun", kernel and kernel.ElementRun)
    monkeypatch.setattr(kernel_run, "kernel_of", kernel and kernel.kernel_of)
    slave = getattr(fmus, element)(instance_name=element, resources=None)
    _set(slave, parameters)
    slave.exit_initialization_mode()
    assert (slave._run is not None) == (kernel is not None), "the kernel runs the element exactly when bound"
    return slave


def _refs(slave, names):
    by_name = {var.name: vr for vr, var in slave._declared.items()}
    return [by_name[name] for name in names]


def _set(slave, values: dict):
    """fmi2Set<type> of ``values`` (name -> value), per FMI type."""
    types = {var.name: var.type for var in slave._declared.values()}
    for kind, setter in ((REAL, slave.set_real), (BOOLEAN, slave.set_boolean)):
        names = [name for name in values if types[name] == kind]
        if names:
            setter(_refs(slave, names), [values[name] for name in names])
    other = [name for name in values if types[name] not in (REAL, BOOLEAN)]
    if other:
        slave.set_integer(_refs(slave, other), [values[name] for name in other])


def _outputs(slave) -> bytes:
    """Every output, each as fmi2Get of its type gives it, as bytes (bit for bit)."""
    reals = [var.name for var in slave._declared.values() if var.causality == OUTPUT and var.type == REAL]
    flags = [var.name for var in slave._declared.values() if var.causality == OUTPUT and var.type != REAL]
    values = slave.get_real(_refs(slave, reals))
    if flags:
        values += [float(flag) for flag in slave.get_boolean(_refs(slave, flags))]
    return struct.pack(f"{len(values)}d", *values)


def _log(slave) -> list[str]:
    messages = [entry.msg for entry in slave.log_queue]
    slave.log_queue.clear()
    return messages


# element, parameters, inputs at step n (name -> value), steps, h
SCENARIOS = {
    # locked from the start, the torque within the static capacity (analytic lock held)
    "clutch locked": ("Clutch", {"w_1_start": 0.0}, lambda n: {"tau_1": 50.0}, 400, 1e-4),
    # slipping on the Stribeck law (the ODE path), the clamp force rising until it locks
    "clutch engaging, Stribeck": ("Clutch", {"w_stribeck": 10.0, "alpha_stribeck": 0.6},
                                  lambda n: {"f_n": 20.0 * n, "tau_1": 30.0 * math.sin(0.01 * n)}, 600, 1e-3),
    # Z3's dual clutch: a locked, b open, then b clamped while a opens (a shift)
    "dual clutch shift": ("DualClutch", {"w_2_start": 50.0},
                          lambda n: {"f_n_a": max(6000.0 - 30.0 * n, 0.0), "f_n_b": min(30.0 * n, 6000.0),
                                     "tau_1": 200.0, "tau_3": -20.0}, 400, 1e-3),
    # Fan F2's engine: no harmonics, a throttle and both load connections varying
    "engine without harmonics": ("Engine", {"J": 0.6, "T0": 323.47, "w_start": 20.0},
                                 lambda n: {"throttle": 0.5 + 0.5 * math.sin(0.01 * n), "tau_load": -150.0 - 0.5 * n,
                                            "tau_load_2": 3.0 * math.cos(0.03 * n)}, 400, 1e-3),
    "inertia with damping": ("Inertia", {"J": 0.3, "d_ground": 0.05},
                             lambda n: {"tau_1": 10.0 * math.cos(0.02 * n), "tau_2": -1.0}, 300, 1e-3),
    # stateless: its torques the feedthrough of the flanges set, averaged over T_comm = h
    "shaft averaging over the step": ("Shaft", {"k": 2000.0, "d": 3.0, "T_comm": 1e-3},
                                      lambda n: {"phi_1": 1e-3 * n, "w_1": 1.0 + 0.01 * n, "phi_2": 0.0,
                                                 "w_2": 0.5 * math.sin(0.05 * n)}, 200, 1e-3),
    # switched on at 0.05 s and off at 0.3 s, between them a sine with a phase over an offset
    "sine torque switched on and off": ("SineTorque", {"amplitude": 20.0, "f": 5.0, "phase": 0.3, "offset": 1.5,
                                                       "t_start": 0.05, "t_stop": 0.3}, lambda n: {}, 400, 1e-3),
    # a fan load opposing the motion, the speed through zero both ways; over 1500 speeds some
    # ratios' squares by libm's pow (Python's **) differ from their products in the last bit
    "speed-dependent torque opposing motion": ("SpeedDependentTorque",
                                               {"tau_nominal": -40.0, "w_nominal": 100.0, "opposes_motion": True},
                                               lambda n: {"w": 150.0 * math.sin(0.02 * n)}, 1500, 1e-3),
    "torque table": ("TorqueTable", {"n_points": 3, "t_2": 0.05, "t_3": 0.1, "y_2": 40.0, "y_3": -5.0},
                     lambda n: {}, 200, 1e-3),
}


def _run(slave, inputs, steps: int, h: float):
    rows, messages = [_outputs(slave)], []
    for n in range(steps):
        _set(slave, inputs(n))
        rows.append(_outputs(slave))       # the feedthrough at the new inputs, before the step
        messages.append((slave.do_step(n * h, h), _log(slave)))
        assert (slave._run is not None and slave._run.stepped) == (slave._run is not None), \
            f"step {n} taken by the kernel where it runs"
        rows.append(_outputs(slave))
    return rows, messages


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_the_kernel_gives_the_model_s_outputs_bit_for_bit(monkeypatch, element_kernel, scenario):
    element, parameters, inputs, steps, h = SCENARIOS[scenario]
    runs = [_run(_instance(monkeypatch, kernel, element, parameters), inputs, steps, h)
            for kernel in (None, element_kernel)]
    assert runs[1][1] == runs[0][1]
    assert all(taken for taken, _ in runs[0][1]), runs[0][1]
    for n, (by_model, by_kernel) in enumerate(zip(*(rows for rows, _ in runs))):
        assert by_kernel == by_model, f"outputs differ at row {n} of {scenario}"
    assert len(set(runs[0][0])) > 2, "the outputs move (the comparison is not of constants)"


def test_a_step_the_kernel_leaves_to_the_model_is_refused_with_its_message_and_the_state_kept(
        monkeypatch, element_kernel):
    runs = []
    for kernel in (None, element_kernel):
        slave = _instance(monkeypatch, kernel, "Clutch", {"w_stribeck": 10.0})
        rows = []
        for n in range(60):
            _set(slave, {"f_n": -5.0 if n == 30 else 500.0 + n, "tau_1": 20.0})
            before = _outputs(slave)
            taken = slave.do_step(n * 1e-3, 1e-3)
            rows.append((taken, _log(slave), _outputs(slave)))
            if not taken:
                assert rows[-1][2] == before, "a refused step keeps the state and outputs"
        runs.append(rows)
    assert runs[1] == runs[0]
    refused = [row for row in runs[1] if not row[0]]
    assert len(refused) == 1 and "f_n = -5.0" in refused[0][1][0], refused


def test_a_step_other_than_the_one_a_shaft_averaged_over_is_refused_with_its_model_s_message(
        monkeypatch, element_kernel):
    outcomes = []
    for kernel in (None, element_kernel):
        slave = _instance(monkeypatch, kernel, "Shaft", {"T_comm": 1e-3})
        _set(slave, {"phi_1": 0.01, "w_1": 2.0})
        outcomes.append([(slave.do_step(0.0, h), _log(slave), _outputs(slave)) for h in (1e-3, 2e-3, 1e-3 * 1e-7)])
    assert outcomes[1] == outcomes[0]
    assert [taken for taken, _, _ in outcomes[1]] == [True, False, True]     # a final sliver is taken
    assert "differs from T_comm = 0.001" in outcomes[1][1][1][0]


def test_an_fmu_state_set_again_and_an_undone_step_give_back_the_same_outputs(monkeypatch, element_kernel):
    slave = _instance(monkeypatch, element_kernel, "DualClutch", {"w_2_start": 50.0})
    inputs = SCENARIOS["dual clutch shift"][2]
    for n in range(150):
        _set(slave, inputs(n))
        assert slave.do_step(n * 1e-3, 1e-3)
    saved, at_150 = slave._get_fmu_state(), _outputs(slave)
    ahead = []
    for n in range(150, 250):
        _set(slave, inputs(n))
        assert slave.do_step(n * 1e-3, 1e-3)
        ahead.append(_outputs(slave))
    slave._set_fmu_state(saved)
    assert _outputs(slave) == at_150
    for n in range(150, 250):
        _set(slave, inputs(n))
        assert slave.do_step(n * 1e-3, 1e-3)
        assert _outputs(slave) == ahead[n - 150], f"after the state was set again, step {n}"
    before = _outputs(slave)
    assert slave.do_step(0.25, 1e-3)
    assert _outputs(slave) != before
    after = _outputs(slave)
    slave.undo_step()
    assert _outputs(slave) == before
    assert slave.do_step(0.25, 1e-3) and _outputs(slave) == after


def test_elements_with_a_kernel_run_on_it_and_the_others_on_their_model(monkeypatch, element_kernel):
    with_kernel = {element.__name__ for element in fmus.ELEMENTS if element_kernel.kernel_class(element.MODEL)}
    # exactly those classes: not the FMU classes, which bear their model's module and name
    assert not [element for element in fmus.ELEMENTS if element_kernel.kernel_class(element)]
    assert with_kernel == {"Clutch", "DualClutch", "ClutchChain", "Inertia", "Engine", "Shaft", "Table",
                           "TorqueTable", "ForceTable", "SineTorque", "SpeedDependentTorque"}
    monkeypatch.setattr(kernel_run, "ElementRun", element_kernel.ElementRun)
    monkeypatch.setattr(kernel_run, "kernel_of", element_kernel.kernel_of)
    for element, parameters in (("Clutch", {"thermal": True}), ("Engine", {"h2": 0.1}), ("Gear", {}),
                                ("NonlinearSpring", {})):
        slave = getattr(fmus, element)(instance_name=element, resources=None)
        _set(slave, parameters)
        slave.exit_initialization_mode()
        assert slave._run is None, f"{element} {parameters} runs its model"
