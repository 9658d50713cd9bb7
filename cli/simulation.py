"""Running a system as the commands run it: separate element FMUs or one system FMU under
systems.master, stopped cleanly at a communication point by Ctrl-C or SIGTERM; the CSV."""
from __future__ import annotations

import contextlib
import csv
import signal
import threading
from pathlib import Path

from drivetrain_fmu.systems.catalog.r3 import mesh_mean_speed_of
from drivetrain_fmu.systems.master import Result
from drivetrain_fmu.systems.signals import default_record as _default_record
from drivetrain_fmu.systems.signals import family_of as _family_of
from drivetrain_fmu.systems.ssp import Component, run_system

from .errors import Terminated


@contextlib.contextmanager
def interruptible():
    """Ctrl-C (or SIGTERM) during a run stops it at the next communication point (no FMU is
    stopped in the middle of a step, which would kill it): yields (at_point, state);
    ``at_point(t)`` raises KeyboardInterrupt (Terminated after SIGTERM) there once the
    signal came; ``state['t']`` is the time of the last communication point.  A second
    signal interrupts at once."""
    state = {"t": 0.0, "stop": None}

    def interrupt(signum):
        return Terminated() if signum == signal.SIGTERM else KeyboardInterrupt()

    def at_point(t):
        state["t"] = t
        if state["stop"] is not None:
            raise interrupt(state["stop"])

    def handler(signum, _frame):
        if state["stop"] is not None:
            raise interrupt(signum)
        state["stop"] = signum

    main_thread = threading.current_thread() is threading.main_thread()
    previous = {signum: signal.signal(signum, handler) for signum in (signal.SIGINT, signal.SIGTERM)} \
        if main_thread else {}
    try:
        yield at_point, state
    finally:
        for signum, handling in previous.items():
            signal.signal(signum, handling)


def cosimulate(system, fmu_dir: Path, step: float, stop: float | None = None, step_mean: bool | None = None,
              record: list[str] | None = None, progress: bool = True, at_point=None, rates=None,
              output_interval: float | None = None):
    """Co-simulate ``system`` at ``step`` until ``stop`` (default: its DefaultExperiment).
    A file's compliances with T_comm > 0 average over ``step`` (``step_mean`` True or False
    overrides the file); an .ssp archive runs as bound, with its own FMUs from ``fmu_dir``."""
    stop = system.stop if stop is None else stop
    components = system.components if system.is_archive else system.at_step(step, step_mean)
    record = recorded_signals(system, _default_record(system) if record is None else record)
    return _derived(system, run_system(fmu_dir, components, system.connections, stop, step, record, progress,
                                       at_point=at_point, rates=rates, output_interval=output_interval))


def recorded_signals(system, record: list[str]) -> list[str]:
    """What a run of ``system`` records to give ``record`` and the signals computed after
    it (:func:`_derived`): R3 clearance's mesh.w_mean, no FMU's variable, from mesh.w_1 and
    mesh.w_2."""
    if _family_of(system) != "r3_clearance":
        return record
    return list(dict.fromkeys([key for key in record if key != "mesh.w_mean"] + ["mesh.w_1", "mesh.w_2"]))


def _derived(system, result):
    """``result`` with the signals computed from recorded ones: R3 clearance's mesh.w_mean,
    the mesh's centre-of-momentum speed (systems.catalog.r3.mesh_mean_speed_of)."""
    if _family_of(system) == "r3_clearance":
        result.signals["mesh.w_mean"] = mesh_mean_speed_of(system.components["mesh"], result["mesh.w_1"],
                                                           result["mesh.w_2"])
    return result


#: the instance name of a system FMU run under systems.master (its variables are inst.var:
#: the master records SYSTEM_INSTANCE.inst.var)
SYSTEM_INSTANCE = "system"


def cosimulate_system_fmu(system, fmu: Path, step: float, record: list[str], at_point=None):
    """Run the system FMU ``fmu`` (:func:`built_system_fmu`) with internal step = communication
    step = ``step`` to the system's stop under systems.master (fmpy's FMU2Slave), as
    :func:`cosimulate` runs the separate element FMUs: the signals of ``record``."""
    inside = recorded_signals(system, record)
    result = run_system(fmu.parent, {SYSTEM_INSTANCE: Component(fmu.stem, {"internal_step": step})}, [],
                        system.stop, step, [f"{SYSTEM_INSTANCE}.{key}" for key in inside], at_point=at_point)
    return _derived(system, Result(result.time, {key: result[f"{SYSTEM_INSTANCE}.{key}"] for key in inside}))


def write_csv(path: Path, result, record: list[str], units: dict) -> None:
    """CSV of the records; each header is 'instance.variable [unit]' (the FMU's declared unit)."""
    with open(path, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["time [s]"] + [f"{k} [{units[k]}]" if units.get(k) else k for k in record])
        for n, t in enumerate(result.time):
            writer.writerow([f"{t:.6g}"] + [f"{result.signals[k][n]:.10g}" for k in record])


def file_torques(system) -> str:
    """How ``system``'s file binds its compliance torques: 'step-mean' when one binds T_comm > 0."""
    return "step-mean" if any(c.parameters.get("T_comm") for c in system.components.values()) else "sampled"
