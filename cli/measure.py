"""What `report` measures: a run against the monolithic reference of a documented system
(separate FMUs or the system FMU), its status and errors."""
from __future__ import annotations

import math
import sys
import time
from pathlib import Path

import numpy as np

from drivetrain_fmu import build_fmus
from drivetrain_fmu.host_support import HostSupportError
from drivetrain_fmu.systems.catalog import reference
from drivetrain_fmu.systems.catalog.reference import error_report
from drivetrain_fmu.systems.master import CoSimulationError

from .checks import family_and_case, writable_folder
from .errors import one_line
from .simulation import cosimulate_system_fmu, interruptible, recorded_signals

# per family: the signals the error report compares
REPORT_KEYS = {
    "z3": ["clutch.w_1", "clutch.w_2", "clutch.w_3", "vehicle.w", "clutch.tau_fric_a", "clutch.tau_fric_b"],
    "fan": ["vehicle.v", "vehicle.pitch", "vehicle.w_wheel_f", "engine.w", "clutch.w_1"],
    "r3_spring": ["spring.phi_rel", "z.w", "wv.w"],
    "r3_clearance": ["mesh.w_mean", "mesh.w_1", "mesh.w_2", "vehicle.w"],   # w_1, w_2 not pointwise when elastic
    "automatic_launch": list(reference.AUTOMATIC_LAUNCH_KEYS),
    "heating_clutch": list(reference.HEATING_CLUTCH_KEYS),
    "synchro_upshift": list(reference.SYNCHRO_UPSHIFT_KEYS),
    "split_mu": list(reference.SPLIT_MU_KEYS),
    "planetary_shift": ["gear.w_sun", "gear.w_carrier", "gear.w_ring", "vehicle.w", "gear.tau_fric_c",
                        "gear.tau_fric_b"],
}
#: a co-simulation whose error exceeds this many times a signal's range has diverged
DIVERGED = 10.0


def reference_of(system: str, t_grid):
    """The monolithic reference of a documented system (systems.catalog.reference)."""
    family, case = family_and_case(system)
    if family == "z3":
        return reference.z3_reference(t_grid)
    if family == "fan":
        return reference.fan_reference(case, t_grid)
    if family == "r3_spring":
        return reference.r3_spring_reference(int(case), t_grid)
    if family == "planetary_shift":
        return reference.planetary_shift_reference(t_grid)
    if family == "automatic_launch":
        return reference.automatic_launch_reference(t_grid)
    if family == "heating_clutch":
        return reference.heating_clutch_reference(t_grid)
    if family == "synchro_upshift":
        return reference.synchro_upshift_reference(t_grid)
    if family == "split_mu":
        return reference.split_mu_reference(system, t_grid)
    return reference.r3_clearance_reference(int(case), t_grid)


def _divergence(result, ref, keys, time) -> str | None:
    """Where the co-simulation left the reference by more than DIVERGED times a signal's
    range (or became non-finite): None if it did not."""
    for key in keys:
        x, r = np.asarray(result[key], dtype=float), np.asarray(ref[key], dtype=float)
        span = float(np.ptp(r)) or 1.0
        bad = ~np.isfinite(x) | (np.abs(x - r) > DIVERGED * span)
        if bad.any():
            first = int(np.argmax(bad))
            peak = float(np.nanmax(np.abs(x[np.isfinite(x)]))) if np.isfinite(x).any() else math.inf
            return (f"DIVERGED: {key} leaves the reference by more than {DIVERGED:g} times its range "
                    f"({span:.3g}) from t = {time[first]:g} s and reaches {peak:.3g}; no error to report")
    return None


def measure_run(simulate, ref, keys, grid) -> dict:
    """Run ``simulate(at_point)`` (Ctrl-C stops it at a communication point) and compare it
    with the reference ``ref`` on ``grid``: {status ('ok', 'failed', 'diverged'), detail (the
    sentence saying why not ok), errors {signal: (max, RMS) / range}, result, seconds (wall)}."""
    start = time.monotonic()
    with interruptible() as (at_point, state):
        try:
            result = simulate(at_point)
        except CoSimulationError as exc:   # a diverging coupling makes an element refuse a step
            said = f"; the FMU says: {exc.messages[0]}" if exc.messages else ""
            return {"status": "failed", "detail": one_line(f"FAILED at t = {state['t']:g} s "
                                                            f"({str(exc).splitlines()[0]}{said})"),
                    "errors": {}, "result": None, "seconds": time.monotonic() - start}
    measured = {"status": "ok", "detail": "", "errors": {}, "result": result, "seconds": time.monotonic() - start}
    diverged = _divergence(result, ref, keys, grid)
    if diverged:
        return {**measured, "status": "diverged", "detail": diverged, "result": None}
    return {**measured, "errors": error_report(result, ref, keys)}


def built_system_fmu(system, keys: list[str], fmu_dir: Path) -> Path | str:
    """``system`` as one FMU (systems/composite.py) whose outputs are what a run records for
    the signals ``keys``, in FMUS/systems/, built there unless up to date; or why it cannot
    be built (a report then says FAILED for it and goes on).  Its internal step is a
    parameter (``internal_step``), set per run: one FMU serves every step."""
    folder = writable_folder(Path(fmu_dir) / "systems", "--fmus")
    before = {path: path.stat().st_mtime_ns for path in folder.glob("*.fmu")}
    try:
        path = build_fmus.build_system_fmu(system, folder, outputs=recorded_signals(system, keys), force=False)
    except (ValueError, HostSupportError) as exc:
        return one_line(exc)
    if before.get(path) != path.stat().st_mtime_ns:
        print(f"built {path} (the system as one FMU)", file=sys.stderr)
    return path


def measure_system_fmu(system, system_fmu: Path | str, step: float, ref, keys, grid) -> dict:
    """:func:`measure_run` of the system FMU (:func:`built_system_fmu`) at ``step``."""
    if isinstance(system_fmu, str):
        return {"status": "failed", "detail": f"FAILED: not built ({system_fmu})", "errors": {}, "result": None,
                "seconds": 0.0}
    return measure_run(lambda at_point: cosimulate_system_fmu(system, system_fmu, step, keys, at_point), ref, keys,
                     grid)


def largest_difference(one: dict, other: dict, ref, keys) -> float | None:
    """The largest |difference| between two measured runs' signals over ``keys``, divided
    by the reference signal's range (as the errors are); None unless both ran."""
    if one["status"] != "ok" or other["status"] != "ok":
        return None
    return max(float(np.max(np.abs(np.asarray(one["result"][key]) - other["result"][key])))
               / (float(np.ptp(ref[key])) or 1.0) for key in keys)
