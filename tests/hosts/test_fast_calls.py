"""The FMU's binary makes an FMU's hot calls on its kernel (fmus/fmi_kernel.py through
native/fmi2_forwarding.h), without pythonfmu and the shell, and the host sees exactly what the
shell would have given.

The Clutch FMU runs a scenario in fmpy in a process of its own that imports nothing of this
project (the FMU runs its compiled copy, as in an engineer's script): every step its inputs
set, every Real and Boolean output got, a doStep; one step with a clamp force out of its range
(the kernel leaves it to the model, which refuses it); an FMU state taken and set again.  The
same scenario runs in this process through the shell's own methods on the uncompiled model
(the specification).  Every output at every point must be the same bit for bit, every status
and refusal the same (also after fmi2Reset, where pythonfmu makes a new slave), and the process must have called the shell's Python methods only for
the calls the fast path leaves to it (those at the input out of range): else the test would
compare the shell with itself.

A system FMU (Z3 with two FMU inputs) runs the same kind of scenario, with steps of one and of
two internal steps, in two such processes: one with the fast calls, one whose binary finds no
fmus.fmi_kernel (pythonfmu and the shell make every call, on the compiled system loop that
tests/cosim/test_system_kernel.py holds to the algorithm).  The two must agree bit for bit, and
the fast one must have left to the shell only the steps whose count of internal steps the
system model decides first and the calls at the input out of range.
"""
from __future__ import annotations

import json
import math
import struct
import subprocess
import sys

import pytest

from drivetrain_fmu import build_fmus, fmus
from drivetrain_fmu.fmus.variables import BOOLEAN, OUTPUT, REAL

H = 1e-3
REFUSED_AT = 40         # the step whose clamp force is negative
SAVED_AT = 60           # the FMU state taken after this step, set again at the end
PARAMETERS = {"w_stribeck": 10.0, "alpha_stribeck": 0.6}


def _inputs(n: int) -> dict:
    return {"f_n": -5.0 if n == REFUSED_AT else 20.0 * n, "tau_1": 30.0 * math.sin(0.01 * n), "tau_2": -2.0}


STEPS = [_inputs(n) for n in range(120)]

HOST = r'''
import collections, ctypes, json, struct, sys
from fmpy import extract, read_model_description
from fmpy.fmi2 import FMU2Slave, fmi2CallbackFunctions, fmi2CallbackLoggerTYPE, fmi2CallbackAllocateMemoryTYPE, \
    fmi2CallbackFreeMemoryTYPE, calloc, free

fmu, spec = sys.argv[1], json.loads(sys.argv[2])
if not spec.get("fast", True):
    sys.modules["drivetrain_fmu.fmus.fmi_kernel"] = None    # the binary's import of it fails: no fast calls
md = read_model_description(fmu)
vr = {v.name: v.valueReference for v in md.modelVariables}
reals = [v.valueReference for v in md.modelVariables if v.causality == "output" and v.type == "Real"]
flags = [v.valueReference for v in md.modelVariables if v.causality == "output" and v.type == "Boolean"]
if "reads" in spec:                     # only these outputs (Real) are got
    reals, flags = [vr[name] for name in spec["reads"]], []
slave = FMU2Slave(guid=md.guid, unzipDirectory=extract(fmu), modelIdentifier=md.coSimulation.modelIdentifier,
                  instanceName="fast")
messages = []
callbacks = fmi2CallbackFunctions()
callbacks.logger = fmi2CallbackLoggerTYPE(lambda env, name, status, category, text: messages.append(text.decode()))
callbacks.allocateMemory = fmi2CallbackAllocateMemoryTYPE(calloc)
callbacks.freeMemory = fmi2CallbackFreeMemoryTYPE(free)
slave.instantiate(callbacks=callbacks, loggingOn=True)
slave.setupExperiment(startTime=0.0)
slave.enterInitializationMode()
names = sorted(spec["parameters"])
slave.setReal([vr[k] for k in names], [spec["parameters"][k] for k in names])
slave.exitInitializationMode()

shell = sys.modules["drivetrain_fmu.fmus.shell"].Shell      # the FMU's copy, compiled
calls = collections.Counter()
for method in ("do_step", "set_real", "get_real", "get_boolean"):
    def counting(self, *args, _original=getattr(shell, method), _name=method):
        calls[_name] += 1
        return _original(self, *args)
    setattr(shell, method, counting)

def outputs():
    values = list(slave.getReal(reals)) + [float(flag) for flag in slave.getBoolean(flags)]
    return struct.pack(f"{len(values)}d", *values).hex()

do_step = slave.dll.fmi2DoStep         # its status as it is (fmpy's doStep raises on fmi2Discard)
do_step.argtypes = [ctypes.c_void_p, ctypes.c_double, ctypes.c_double, ctypes.c_int]
do_step.restype = ctypes.c_int
multiples = spec.get("multiples", [1] * len(spec["steps"]))     # each step's size, in h
rows, statuses, reached = [outputs()], [], 0      # reached h: the time reached (a refused step is not)
for n, inputs in enumerate(spec["steps"]):
    names = sorted(inputs)
    slave.setReal([vr[k] for k in names], [inputs[k] for k in names])
    rows.append(outputs())
    statuses.append(do_step(slave.component, reached * spec["h"], multiples[n] * spec["h"], 1))
    reached += multiples[n] if statuses[-1] == 0 else 0
    rows.append(outputs())
    if n == spec["saved_at"]:
        state = slave.getFMUstate()
slave.setFMUstate(state)
rows.append(outputs())
slave.reset()                           # pythonfmu makes a new slave: the fast calls follow it
slave.setupExperiment(startTime=0.0)
slave.enterInitializationMode()
slave.exitInitializationMode()          # the default parameters, this time
for n, inputs in enumerate(spec["steps"][:20]):
    names = sorted(inputs)
    slave.setReal([vr[k] for k in names], [inputs[k] for k in names])
    statuses.append(do_step(slave.component, n * spec["h"], spec["h"], 1))
    rows.append(outputs())
slave.terminate()
slave.freeInstance()
print("RESULT " + json.dumps({"rows": rows, "statuses": statuses, "calls": calls, "messages": messages}))
'''


def _in_this_process() -> dict:
    """The scenario through the shell's methods, on the model (uncompiled in this process)."""
    slave = fmus.Clutch(instance_name="reference", resources=None)
    by_name = {var.name: vr for vr, var in slave._declared.items()}
    reals = [vr for vr, var in slave._declared.items() if var.causality == OUTPUT and var.type == REAL]
    flags = [vr for vr, var in slave._declared.items() if var.causality == OUTPUT and var.type == BOOLEAN]
    slave.set_real([by_name[k] for k in sorted(PARAMETERS)], [PARAMETERS[k] for k in sorted(PARAMETERS)])
    slave.exit_initialization_mode()
    assert slave._run is None, "this process runs the model"

    def outputs():
        values = slave.get_real(reals) + [float(flag) for flag in slave.get_boolean(flags)]
        return struct.pack(f"{len(values)}d", *values).hex()

    rows, statuses, messages, reached = [outputs()], [], [], 0
    for n, inputs in enumerate(STEPS):
        slave.set_real([by_name[k] for k in sorted(inputs)], [inputs[k] for k in sorted(inputs)])
        rows.append(outputs())
        statuses.append(0 if slave.do_step(reached * H, H) else 2)        # fmi2OK, fmi2Discard
        reached += 1 if statuses[-1] == 0 else 0
        messages += [entry.msg for entry in slave.log_queue]
        slave.log_queue.clear()
        rows.append(outputs())
        if n == SAVED_AT:
            state = slave._get_fmu_state()
    slave._set_fmu_state(state)
    rows.append(outputs())
    slave = fmus.Clutch(instance_name="after reset", resources=None)       # what fmi2Reset makes
    slave.exit_initialization_mode()
    for n, inputs in enumerate(STEPS[:20]):
        slave.set_real([by_name[k] for k in sorted(inputs)], [inputs[k] for k in sorted(inputs)])
        statuses.append(0 if slave.do_step(n * H, H) else 2)
        rows.append(outputs())
    return {"rows": rows, "statuses": statuses, "messages": messages}


def test_the_binary_makes_the_hot_calls_on_the_kernel_as_the_shell_would(fmu_dir):
    spec = {"parameters": PARAMETERS, "steps": STEPS, "h": H, "saved_at": SAVED_AT}
    done = subprocess.run([sys.executable, "-c", HOST, str(fmu_dir / "Clutch.fmu"), json.dumps(spec)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    host = json.loads(done.stdout.split("RESULT ", 1)[1])
    reference = _in_this_process()
    assert host["statuses"] == reference["statuses"]
    assert [n for n, status in enumerate(host["statuses"]) if status] == [REFUSED_AT]
    assert len(host["statuses"]) == len(STEPS) + 20
    assert "f_n = -5.0" in reference["messages"][0]
    assert any(reference["messages"][0] in message for message in host["messages"]), host["messages"]
    for n, (got, expected) in enumerate(zip(host["rows"], reference["rows"], strict=True)):
        assert got == expected, f"outputs differ at row {n}"
    # the shell made only what the fast path left to it, all at the clamp force out of its range
    # (the kernel leaves what it computes from an input out of its range to the model): that step,
    # and the gets of the outputs before and after it (the friction torques are feedthrough);
    # every set, and the gets after the FMU state was set again, were the fast path's
    assert host["calls"] == {"do_step": 1, "get_real": 2, "get_boolean": 2}, host["calls"]


#: the system FMU's scenario: Z3 (internal step 2 ms) with the engine torque and clamp force A
#: as its inputs; steps of one internal step, from SYSTEM_DOUBLE on of two
SYSTEM_H = 2e-3
SYSTEM_INPUTS = ["clutch.tau_2", "clutch.f_n_a"]
SYSTEM_DOUBLE = 80


def _system_inputs(n: int) -> dict:
    return {"clutch.tau_2": 300.0 + 50.0 * math.sin(0.05 * n),
            "clutch.f_n_a": -5.0 if n == REFUSED_AT else 100.0 * n}


SYSTEM_STEPS = [_system_inputs(n) for n in range(120)]


@pytest.fixture(scope="module")
def system_fmu(fmu_dir, tmp_path_factory):
    return build_fmus.build_system_fmu("z3", tmp_path_factory.mktemp("z3_inputs"), inputs=SYSTEM_INPUTS)


def _host(fmu, spec) -> dict:
    done = subprocess.run([sys.executable, "-c", HOST, str(fmu), json.dumps(spec)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.split("RESULT ", 1)[1])


def test_the_binary_makes_a_system_fmu_s_hot_calls_on_its_loop_as_the_shell_would(system_fmu):
    multiples = [1 if n < SYSTEM_DOUBLE else 2 for n in range(len(SYSTEM_STEPS))]
    spec = {"parameters": {}, "steps": SYSTEM_STEPS, "h": SYSTEM_H, "saved_at": SAVED_AT, "multiples": multiples}
    fast, shell = _host(system_fmu, spec), _host(system_fmu, {**spec, "fast": False})
    assert [n for n, status in enumerate(shell["statuses"]) if status] == [REFUSED_AT]
    assert fast["statuses"] == shell["statuses"]
    assert "clutch.f_n_a" in shell["messages"][0] and fast["messages"] == shell["messages"], fast["messages"]
    for n, (got, expected) in enumerate(zip(fast["rows"], shell["rows"], strict=True)):
        assert got == expected, f"outputs differ at row {n}"
    assert shell["calls"]["get_real"] == len(fast["rows"]), "the reference's calls went through the shell"
    # the shell made: the first step of each size, whose count of internal steps the model
    # decides (and keeps), also after fmi2Reset; at the clamp force out of its range (set as
    # the model sets it, refused when the system steps), the step and the gets before and
    # after it (the friction torques are feedthrough).  Every set, every other get, also after
    # the FMU state was set again, and every other step were the fast path's.
    assert fast["calls"] == {"do_step": 4, "get_real": 2, "get_boolean": 2}, fast["calls"]


def test_a_system_with_an_element_without_a_kernel_steps_on_its_loop(tmp_path):
    """heating_clutch: its Clutch with a thermal model has no kernel, its two time tables have.
    The binary makes the gets of the tables' outputs and the steps on the loop, which drives
    the Clutch's model (saved before each step, set back where the step is left to the model).
    Bit for bit the same as without the fast calls."""
    fmu = build_fmus.build_system_fmu("heating_clutch", tmp_path)
    spec = {"parameters": {}, "steps": [{}] * 80, "h": 0.05, "saved_at": SAVED_AT,     # 4 s: the launches
            "reads": ["engine_torque.y", "clamp_force.y"]}
    fast, shell = _host(fmu, spec), _host(fmu, {**spec, "fast": False})
    assert fast["statuses"] == shell["statuses"] == [0] * 100
    for n, (got, expected) in enumerate(zip(fast["rows"], shell["rows"], strict=True)):
        assert got == expected, f"outputs differ at row {n}"
    assert len(set(fast["rows"])) > 1, "the tables switch the launches on and off"
    assert shell["calls"]["get_real"] == len(shell["rows"]) and shell["calls"]["do_step"] == 100
    # the shell made the first step, whose count of internal steps the model decides, and the
    # first after fmi2Reset
    assert fast["calls"]["do_step"] == 2 and "get_real" not in fast["calls"], fast["calls"]
