"""Ctrl-C inside an FMU's doStep in a Python host (issue 30): in fmpy the FMU's code runs in the
host's interpreter, so the host's SIGINT raises KeyboardInterrupt inside the FMU's code.

Each case runs tests/hosts/interrupt_host.py (fmpy's FMU2Slave) in its own process; a hook in the
FMU's copy of an element method blocks inside the chosen doStep and the test sends SIGINT
then.  Required (fmus/shell.py, "Interrupts"): the host gets KeyboardInterrupt, raised in its
own code (fmpy's frame), not fmi2Fatal; the FMU's Real outputs and serialized FMU state
after the interrupted call equal those before it; the step taken again from the same time
and every step after it give the outputs of a run without the interrupt, bit for bit.  Before
this, the call returned fmi2Fatal, the interrupt was lost and the state had moved (the
element committed its new state, a system FMU its time: the retaken step was refused).

Cases: an element (Vehicle: an element without a compiled kernel, whose Python model runs
inside the step) interrupted after its new state is set (in its model's outputs), compiled as
the build ships it and uncompiled (``--pure-python``: there a signal raised again
from the FMU's code would fire at once inside it); a system FMU (Fan F2, 10 internal steps per
host step) interrupted in its 3rd internal step and in its 7th, each after the internal steps
before it have moved the elements and the time; and a get of a system FMU interrupted
where it brings a feedthrough output up to date.
"""
from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from drivetrain_fmu import build_fmus

HOST = Path(__file__).with_name("interrupt_host.py")


@pytest.fixture(scope="module")
def interrupt_fmus(tmp_path_factory):
    """Vehicle compiled and uncompiled, and the Fan F2 system FMU (internal step 0.1 ms)."""
    out = tmp_path_factory.mktemp("interrupt_fmus")
    (out / "pure").mkdir()
    build_fmus.build_all(out, only=["Vehicle"])
    build_fmus.build_all(out / "pure", only=["Vehicle"], pure_python=True)
    build_fmus.build_system_fmu("fan_F2", out)
    return out


def host_run(fmu: Path, steps: int, h: float, interrupted="-1", hook=()) -> dict:
    """tests/hosts/interrupt_host.py's RESULT; with ``hook`` (element, method, call), SIGINT is sent
    when the hook blocks."""
    command = [sys.executable, str(HOST), str(fmu), str(steps), repr(h), str(interrupted), *map(str, hook)]
    lines = []
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          cwd=fmu.parent) as process:
        for line in process.stdout:
            lines.append(line)
            if line.startswith("BLOCKED"):
                process.send_signal(signal.SIGINT)
    results = [json.loads(line[len("RESULT "):]) for line in lines if line.startswith("RESULT ")]
    assert process.returncode == 0 and results, "".join(lines)
    return results[0]


CASES = {
    "element compiled": ("Vehicle.fmu", 6, 1e-3, 3, ("Vehicle", "outputs", 1)),
    "element uncompiled": ("pure/Vehicle.fmu", 6, 1e-3, 3, ("Vehicle", "outputs", 1)),
    "system, 3rd internal step": ("fan_F2.fmu", 4, 1e-3, 2, ("Vehicle", "step", 3)),
    "system, 7th internal step": ("fan_F2.fmu", 4, 1e-3, 2, ("Vehicle", "outputs", 7)),
}


@pytest.mark.fmu
def test_ctrl_c_inside_a_get_reaches_the_host_and_the_get_completes(interrupt_fmus):
    """The get of every output after a Fan F2 step, interrupted where it evaluates the vehicle's
    feedthrough outputs (brought up to date after the exchange of the connections; the shafts'
    and the clutch's are computed in the compiled kernel, where no interrupt is delivered):
    the host gets KeyboardInterrupt in its own code, not fmi2Fatal; the get was run to its end
    (a message at status OK says so) and the run goes on as one without the interrupt, bit
    for bit."""
    fmu = interrupt_fmus / "fan_F2.fmu"
    got = host_run(fmu, 4, 1e-3, "get1", ("Vehicle", "feedthrough", 1))
    assert got["got"] == "KeyboardInterrupt", got
    assert Path(got["raised_in"]).parent.name == "fmpy", got
    assert [status for status, _ in got["messages"]] == [0], got
    assert "fmi2GetReal was interrupted (KeyboardInterrupt) and run again to its end" in got["messages"][0][1]
    assert "after" not in got, got
    assert got["rows"] == host_run(fmu, 4, 1e-3)["rows"]


@pytest.mark.fmu
@pytest.mark.parametrize("case", CASES)
def test_ctrl_c_inside_do_step_reaches_the_host_and_leaves_the_fmu_as_before(interrupt_fmus, case):
    name, steps, h, interrupted, hook = CASES[case]
    fmu = interrupt_fmus / name
    got = host_run(fmu, steps, h, interrupted, hook)
    assert got["got"] == "KeyboardInterrupt", got
    assert Path(got["raised_in"]).parent.name == "fmpy", got     # in the host's code, after the call
    assert got["outputs_kept"] and got["state_kept"], got
    assert [status for status, _ in got["messages"]] == [2], got     # fmi2Discard's message, no fatal
    assert "interrupted (KeyboardInterrupt): the step is undone" in got["messages"][0][1]
    assert "after" not in got, got
    clean = host_run(fmu, steps, h)
    assert got["rows"] == clean["rows"]      # the retaken step and the rest: bit for bit
