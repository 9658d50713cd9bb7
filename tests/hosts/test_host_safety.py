"""No call of ours crashes a host: every failing FMI call ends in an error status with a
message naming the cause, and the instance can still be freed (fmus.shell.fmi_entry).

pythonfmu 0.7.0 released its references to a slave on any Python exception and again in
fmi2FreeInstance: an exception outside the one guarded path crashed the host (segfault)
within a few instantiate/free cycles.  Each case runs in its own process through fmpy (a
crash is a non-zero exit), repeats its failing sequence several times, and checks the
messages and, where the call is meant to succeed, the physics.
"""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

RUNNER = r'''
import json, sys
from fmpy import extract, read_model_description
from fmpy.fmi2 import FMU2Slave, fmi2CallbackFunctions, fmi2CallbackLoggerTYPE, \
    fmi2CallbackAllocateMemoryTYPE, fmi2CallbackFreeMemoryTYPE, calloc, free

messages = []


def logger(env, name, status, category, message):
    messages.append(message.decode(errors="replace"))


callbacks = fmi2CallbackFunctions()
callbacks.logger = fmi2CallbackLoggerTYPE(logger)
callbacks.allocateMemory = fmi2CallbackAllocateMemoryTYPE(calloc)
callbacks.freeMemory = fmi2CallbackFreeMemoryTYPE(free)


def load(path, name="case"):
    md = read_model_description(path)
    where = extract(path)
    slave = FMU2Slave(guid=md.guid, unzipDirectory=where, modelIdentifier=md.coSimulation.modelIdentifier,
                      instanceName=name)
    slave.instantiate(callbacks=callbacks, loggingOn=True)
    vr = {v.name: v.valueReference for v in md.modelVariables}
    return slave, vr


def call(function, *args):
    """(ok, result or status text) of an FMI call through fmpy."""
    try:
        return True, function(*args)
    except Exception as exc:
        return False, str(exc)


def initialized(path, reals=(), name="case"):
    slave, vr = load(path, name)
    slave.setupExperiment(startTime=0.0)
    slave.enterInitializationMode()
    for key, value in reals:
        slave.setReal([vr[key]], [value])
    ok, result = call(slave.exitInitializationMode)
    return slave, vr, ok, result


CASES = {}


def case(function):
    CASES[function.__name__] = function
    return function


@case
def feedthrough_overflow(fmus):
    """getReal of a feedthrough output that overflows (ElastoBacklash n_exp = 1000 at a
    penetration of 3 - 1e-4 rad: p^n = 1e477 in the contact law).  (The Clutch case once
    here, a Stribeck law with alpha_stribeck = 1000 slipping at 100 rad/s, is computed
    exactly now: exp(-100^1000) is 0.0.)"""
    for cycle in range(5):
        slave, vr, ok, _ = initialized(f"{fmus}/ElastoBacklash.fmu", [("n_exp", 1000.0), ("phi_1", 3.0)],
                                       f"c{cycle}")
        got = call(slave.getReal, [vr["tau_1"], vr["tau_2"]])
        print(json.dumps({"init": ok, "get_ok": got[0]}))
        slave.freeInstance()


@case
def bad_parameter_cycles(fmus):
    """exitInitializationMode with parameters inside their declared ranges for which the
    model cannot be built (Vehicle m_wheel_f = 1 kg, k_tire = 100 N/m: the tires are too soft
    for a settled start; once "math domain error"), instantiated and freed 5 times.  The
    model's own error, not a range check, goes through the guarded path.  (The case once
    here, Backlash ratio = 1e-225, is refused by its range checks now: ratio^2 J_1 < J_MIN.)"""
    for cycle in range(5):
        slave, vr, ok, result = initialized(f"{fmus}/Vehicle.fmu", [("m_wheel_f", 1.0), ("k_tire", 100.0)],
                                            f"b{cycle}")
        print(json.dumps({"init": ok}))
        slave.freeInstance()


@case
def invalid_state_bytes(fmus):
    """deSerializeFMUstate of bytes that are no state, then setFMUstate, 5 times."""
    for cycle in range(5):
        slave, vr, ok, _ = initialized(f"{fmus}/Clutch.fmu", name=f"s{cycle}")
        de_ok, state = call(slave.deSerializeFMUstate, b"\x00not a state")
        set_ok = call(slave.setFMUstate, state)[0] if de_ok else None
        print(json.dumps({"init": ok, "deserialize": de_ok, "set": set_ok}))
        slave.freeInstance()


@case
def another_fmus_state(fmus):
    """A Clutch state set into a Shaft."""
    clutch, _, ok_c, _ = initialized(f"{fmus}/Clutch.fmu", name="clutch")
    shaft, _, ok_s, _ = initialized(f"{fmus}/Shaft.fmu", name="shaft")
    state = clutch.deSerializeFMUstate(clutch.serializeFMUstate(clutch.getFMUstate()))
    for cycle in range(3):
        print(json.dumps({"set": call(shaft.setFMUstate, state)[0]}))
    clutch.freeInstance()
    shaft.freeInstance()


@case
def state_into_other_parameters(fmus):
    """A Clutch state taken with J_1 = 0.2 set into an instance initialized with the default
    J_1 (0.5) and into one never initialized: both continue exactly as the original."""
    original, vr, _, _ = initialized(f"{fmus}/Clutch.fmu", [("J_1", 0.2), ("tau_1", 30.0)], "original")
    for k in range(50):
        original.doStep(k * 1e-3, 1e-3)
    state = original.deSerializeFMUstate(original.serializeFMUstate(original.getFMUstate()))
    other, _, _, _ = initialized(f"{fmus}/Clutch.fmu", [("tau_1", 30.0)], "other")
    fresh, _, = load(f"{fmus}/Clutch.fmu", "fresh")
    rows = {}
    for name, slave in (("original", original), ("other", other), ("fresh", fresh)):
        if slave is not original:
            ok, result = call(slave.setFMUstate, state)
            assert ok, result
        slave.setReal([vr["tau_1"]], [30.0])
        for k in range(50, 100):
            slave.doStep(k * 1e-3, 1e-3)
        rows[name] = slave.getReal([vr["w_1"], vr["w_2"], vr["J_1"]])
    print(json.dumps(rows))


@case
def fixed_parameter_and_terminate(fmus):
    """A fixed parameter set after initialization is refused naming it (the model is not
    changed); doStep after fmi2Terminate is refused."""
    slave, vr, _, _ = initialized(f"{fmus}/Inertia.fmu", [("tau_1", 2.0)])
    set_ok = call(slave.setReal, [vr["J"]], [-2.0])[0]
    j = slave.getReal([vr["J"]])[0]
    slave.doStep(0.0, 1.0)
    w = slave.getReal([vr["w"]])[0]
    slave.terminate()
    step_ok = call(slave.doStep, 1.0, 1.0)[0]
    print(json.dumps({"set": set_ok, "J": j, "w": w, "step_after_terminate": step_ok}))
    slave.freeInstance()


@case
def nonfinite_results(fmus):
    """A step whose result overflows (Inertia J = 1e-10, tau_1 = 1e300: w = tau h / J = inf)
    is refused and leaves state and outputs as they were; a feedthrough output that
    overflows (ElastoBacklash n_exp = 994 at a penetration of 3 rad: p^n = 1e474) fails the
    get; a NaN communication point is refused.  (At 2 rad, the case once here, the torque
    k p^n = 1.3e305 N.m is finite: only the damping coefficient times p^n overflowed before
    its p' = 0 was applied, and it is computed now.)"""
    slave, vr, _, _ = initialized(f"{fmus}/Inertia.fmu", [("J", 1e-10), ("tau_1", 1.0)])
    slave.doStep(0.0, 1e-3)
    before = slave.getReal([vr["phi"], vr["w"]])
    slave.setReal([vr["tau_1"]], [1e300])
    refused = not call(slave.doStep, 1e-3, 1e-3)[0]
    after = slave.getReal([vr["phi"], vr["w"]])
    nan_refused = not call(slave.doStep, float("nan"), 1e-3)[0]
    slave.setReal([vr["tau_1"]], [1.0])
    continues = call(slave.doStep, 1e-3, 1e-3)[0]
    w = slave.getReal([vr["w"]])[0]
    slave.freeInstance()
    spring, vr, ok, _ = initialized(f"{fmus}/ElastoBacklash.fmu", [("n_exp", 994.0), ("phi_1", 3.0)], "spring")
    get_ok = call(spring.getReal, [vr["tau_2"]])[0]
    spring.freeInstance()
    print(json.dumps({"refused": refused, "unchanged": before == after, "nan_refused": nan_refused,
                      "continues": continues, "w": w, "spring_init": ok, "spring_get": get_ok}))


CASES[sys.argv[2]](sys.argv[1])
print("MESSAGES", json.dumps(messages))
'''


def run_case(fmu_dir, name):
    done = subprocess.run([sys.executable, "-c", RUNNER, str(fmu_dir), name], capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, f"exit {done.returncode} (a crash is negative)\n{done.stderr[-3000:]}"
    lines = done.stdout.splitlines()
    messages = json.loads(next(line for line in lines if line.startswith("MESSAGES "))[len("MESSAGES "):])
    rows = [json.loads(line) for line in lines if line.startswith("{")]
    return rows, " | ".join(messages)


def test_an_overflowing_feedthrough_output_fails_the_get_without_crashing(fmu_dir):
    rows, log = run_case(fmu_dir, "feedthrough_overflow")
    assert rows == [{"init": True, "get_ok": False}] * 5
    assert "fmi2GetReal failed" in log and "is not finite at the inputs set now" in log
    assert "penetration p = 2.9999 rad, n_exp = 1000.0" in log


def test_a_model_error_at_initialization_is_reported_without_crashing(fmu_dir):
    rows, log = run_case(fmu_dir, "bad_parameter_cycles")
    assert rows == [{"init": False}] * 5
    assert "fmi2ExitInitializationMode failed" in log and "k_tire = 100.0 N/m is too soft" in log


def test_invalid_state_bytes_are_refused_by_name(fmu_dir):
    rows, log = run_case(fmu_dir, "invalid_state_bytes")
    assert rows == [{"init": True, "deserialize": True, "set": False}] * 5
    assert "the serialized FMU state is not one this FMU wrote" in log


def test_a_state_of_another_fmu_is_refused(fmu_dir):
    rows, log = run_case(fmu_dir, "another_fmus_state")
    assert rows == [{"set": False}] * 3
    assert "a state of 'Clutch' cannot be set into a Shaft" in log


def test_a_state_restores_the_model_of_its_parameters(fmu_dir):
    """The continuation after setFMUstate is bit-identical to the original's, whatever
    parameters the receiving instance had (or none: never initialized)."""
    rows, _ = run_case(fmu_dir, "state_into_other_parameters")
    (result,) = rows
    assert result["other"] == result["original"] and result["fresh"] == result["original"]
    assert result["original"][2] == 0.2


def test_fixed_parameters_after_initialization_and_steps_after_terminate_are_refused(fmu_dir):
    """Inertia J = 1, tau_1 = 2 N.m: after 1 s, w = tau / J = 2 rad/s exactly, the refused
    J = -2 notwithstanding."""
    rows, log = run_case(fmu_dir, "fixed_parameter_and_terminate")
    assert rows == [{"set": False, "J": 1.0, "w": pytest.approx(2.0, rel=1e-12), "step_after_terminate": False}]
    assert "parameter J is fixed" in log and "fmi2DoStep called after fmi2Terminate" in log


def test_no_step_returns_ok_with_a_nonfinite_output(fmu_dir):
    """w after two 1 ms steps of 1 N.m on J = 1e-10 with one overflowing step refused
    between them: 2e-3 / 1e-10 = 2e7 rad/s exactly as if the refused step never happened."""
    rows, log = run_case(fmu_dir, "nonfinite_results")
    assert rows == [{"refused": True, "unchanged": True, "nan_refused": True, "continues": True,
                     "w": pytest.approx(2e7, rel=1e-12), "spring_init": True, "spring_get": False}]
    assert "refused: output phi = inf is not finite" in log
    assert "fmi2GetReal failed" in log and "is not finite at the inputs set now" in log
    assert "communication point t = nan" in log


def test_a_refused_step_restores_every_output_of_a_chain_with_fewer_bodies():
    """ClutchChain with 3 of its 6 possible bodies: a step whose new state gives a
    non-finite output (here a state whose mean angle is infinite, as an overflowing
    solver would leave it) is refused and every output reads as before it.  The element
    keeps its own list of the outputs it sets, shorter than the declared one: the restore
    once mixed the two lists up."""
    import math

    from drivetrain_fmu.fmus import ClutchChain

    chain = ClutchChain(instance_name="restore", resources=None)
    chain.n_bodies, chain.tau_1 = 3, 1.0
    chain.exit_initialization_mode()
    assert chain.do_step(0.0, 1e-3)
    names = [v.name for v in ClutchChain.VARIABLES if v.causality == "output" and not v.depends]
    before = {name: getattr(chain, name) for name in names}
    state = chain.state
    chain.step = lambda t, h, prepared: state._replace(theta_mean=math.inf)   # the model's step
    assert not chain.do_step(1e-3, 1e-3)
    assert chain.state is state and {name: getattr(chain, name) for name in names} == before
