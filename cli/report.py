"""drivetrain-fmu report SYSTEM: the co-simulation error against the monolithic reference
per step (or MSL's results), or the step-convergence check of any system."""
from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

from drivetrain_fmu.docgen.accuracy_tables import difference_text
from drivetrain_fmu.systems import ssp  # CATALOG read when called (a test points it elsewhere)
from drivetrain_fmu.systems.catalog import msl
from drivetrain_fmu.systems.ssp import Component, catalog, load_system

from . import report_all
from .checks import check_divides, family_and_case, fmus_for, out_folder, system_of
from .convergence import SIGNAL_WIDTH, report_convergence
from .errors import UsageError
from .measure import REPORT_KEYS, built_system_fmu, largest_difference, measure_run, measure_system_fmu, reference_of
from .simulation import cosimulate, file_torques, interruptible


def _normalised(system):
    """What a reference depends on: components (T_comm as step-mean or not), connections, stop."""
    components = {name: Component(c.element, {k: (bool(v) if k == "T_comm" else v) for k, v in c.parameters.items()})
                  for name, c in system.components.items()}
    return components, sorted(map(tuple, (vars(c).values() for c in system.connections))), system.stop


def _documented_name(system) -> str | None:
    """The catalog name of ``system`` (a documented system, or a file equal to one: the
    references are built from the catalog's parameters); None for any other system."""
    if system.path is not None and system.path.parent.resolve() == ssp.CATALOG.resolve():
        return system.path.stem
    mine = _normalised(system)
    return next((name for name in catalog() if _normalised(load_system(name)) == mine), None)


def execute(args) -> None:
    """Error of a co-simulation against its monolithic reference, per step, with the
    step-mean and the sampled compliance torques; a diverged run is said to be one."""
    if args.all:
        if args.system is not None or args.steps is not None:
            raise UsageError(f"--all runs every documented system at its file's step: give no SYSTEM "
                             f"({args.system}) and no --steps" if args.system is not None else
                             "--all runs every documented system at its file's step: give no --steps")
        if args.convergence:
            raise UsageError("--all compares every documented system with its reference: give no --convergence")
        return report_all.execute(args)
    if args.write is not None:
        raise UsageError("--write rewrites the tables of --all: give --all (and no SYSTEM)")
    if args.system is None:
        raise UsageError("give a SYSTEM (drivetrain-fmu list) or --all")
    system = system_of(args.system)
    name = _documented_name(system)
    if name is None or args.convergence:
        return report_convergence(system, args, documented=name is not None)
    if args.steps is None:
        args.steps = [1e-4, 1e-3, 1e-2]
    system = load_system(name)
    stop = system.stop
    for step in args.steps:
        check_divides(step, stop, "--steps", system)
    out = out_folder(args, "report", name)
    fmu_dir = fmus_for(system, args.fmus)
    if name in msl.EVENTS:
        _print_msl_report(name, system, fmu_dir, args.steps, out / f"{name}_events.csv")
    else:
        system_fmu = built_system_fmu(system, REPORT_KEYS[family_and_case(name)[0]], fmu_dir)
        _print_report(name, system, fmu_dir, args.steps, out / f"{name}_errors.csv", system_fmu)


def _print_msl_report(name, system, fmu_dir, steps, csv_path: Path) -> None:
    """An MSL example has no monolithic reference here: its lock and unlock instants and
    speeds beside those of MSL 4.0's results (systems.catalog.msl)."""
    rows = []
    print(f"{name} co-simulation vs the MSL 4.0 results (Dymola) over {system.stop:g} s")
    for step in steps:
        with interruptible() as (at_point, _state):
            result = cosimulate(system, fmu_dir, step, progress=False, at_point=at_point)
        print(f"  step {step:g} s:")
        for key, what, ours, theirs in msl.comparison(name, result):
            print(f"    {key:18s} {what:22s} {ours:10.5g}   MSL {theirs:10.5g}")
            rows.append((step, key, what, f"{ours:.6g}", f"{theirs:.6g}"))
    with open(csv_path, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["step [s]", "signal", "what", "this run", "MSL 4.0"])
        writer.writerows(rows)
    print(f"wrote {csv_path}")


#: what `report` runs at each step: the system as separate element FMUs under systems.master,
#: and the system as one FMU (systems/composite.py) under the same master
SEPARATE, ONE_FMU = "separate FMUs", "one FMU"
#: `report`'s columns: width of a configuration's (max, RMS); that of the signal names is SIGNAL_WIDTH
COLUMN_WIDTH = 24


def _print_step(step: float, keys: list[str], columns: list[tuple[str, str, dict]]) -> None:
    """One step's block of `report`: a column per (configuration, torques, measured), a row
    per signal (max and RMS error / range, or the run's status), the wall times, the
    sentence of each run that is not ok."""
    width = max([SIGNAL_WIDTH, *(len(key) + 2 for key in keys)])

    def line(first: str, cells) -> None:
        print((f"    {first:<{width}}" + "".join(f"{cell:<{COLUMN_WIDTH}}" for cell in cells)).rstrip())

    print(f"  step {step:g} s:")
    line("", [configuration for configuration, _, _ in columns])
    line("", [f"{torques} torques" for _, torques, _ in columns])
    line("signal", [f"{'max':<10}RMS" for _ in columns])
    for key in keys:
        line(key, [f"{m['errors'][key][0]:<10.2e}{m['errors'][key][1]:.2e}" if m["status"] == "ok"
                   else m["status"].upper() for _, _, m in columns])
    line("wall time", [f"{m['seconds']:.2f} s" if m["seconds"] else "" for _, _, m in columns])
    for configuration, torques, m in columns:
        if m["status"] != "ok":
            print(f"    {configuration}, {torques} torques: {m['detail']}")


def _print_report(name, system, fmu_dir, steps, csv_path: Path, system_fmu: Path | str) -> list[tuple]:
    """Per step, the error against the monolithic reference of the separate element FMUs
    with step-mean and with sampled compliance torques, and of the system as one FMU
    (``system_fmu``, :func:`built_system_fmu`) with the torques its file binds, side by
    side; how far the one FMU is from the separate FMUs with the same torques (the same
    code in the same order: equal to 1e-12 of each signal's largest value,
    docs/composite-fmu.md).  The rows also go to ``csv_path``."""
    family, _ = family_and_case(name)
    keys, stop = REPORT_KEYS[family], system.stop
    rows = []
    print(f"{name} co-simulation vs monolithic reference over {stop:g} s: max and RMS error / signal range")
    print(f"  {SEPARATE}: an FMU per element; {ONE_FMU}: the whole system in one FMU, internal step = the step; "
          f"both run by systems.master")
    for step in steps:
        grid = np.arange(int(round(stop / step)) + 1) * step
        ref = reference_of(name, grid)
        columns = []
        for step_mean in ((True,) if family == "r3_clearance" else (True, False)):
            columns.append((SEPARATE, "step-mean" if step_mean else "sampled", measure_run(
                lambda at_point, step_mean=step_mean: cosimulate(system, fmu_dir, step, step_mean=step_mean,
                                                                progress=False, at_point=at_point),
                ref, keys, grid)))
        torques = file_torques(system)
        one = measure_system_fmu(system, system_fmu, step, ref, keys, grid)
        columns.append((ONE_FMU, torques, one))
        _print_step(step, keys, columns)
        same = next(m for configuration, t, m in columns if configuration == SEPARATE and t == torques)
        difference = largest_difference(one, same, ref, keys)
        if difference is not None:
            print(f"    {ONE_FMU} against {SEPARATE}, {torques} torques: largest difference "
                  f"{difference_text(difference)} of a signal's range")
        for configuration, torques, m in columns:
            if m["status"] != "ok":
                rows.append((step, configuration, torques, "", m["status"], "", ""))
                continue
            rows += [(step, configuration, torques, key, "ok", f"{m['errors'][key][0]:.4g}",
                      f"{m['errors'][key][1]:.4g}") for key in keys]
    with open(csv_path, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["step [s]", "configuration", "compliance torques", "signal", "status",
                         "max error / range", "RMS error / range"])
        writer.writerows(rows)
    print(f"wrote {csv_path}")
    return rows
