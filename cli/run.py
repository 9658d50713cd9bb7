"""drivetrain-fmu run SYSTEM and drivetrain-fmu ssp FILE.ssp: check, build what is needed,
co-simulate, write the CSV (and the plot) whole or not at all."""
from __future__ import annotations

import contextlib
import math
import os
import tempfile
from pathlib import Path

from fmpy import read_model_description

from drivetrain_fmu.fmus import ELEMENTS
from drivetrain_fmu.systems.composite_slave import element_classes
from drivetrain_fmu.systems.master import CoSimulationError, Port, SetValueError
from drivetrain_fmu.systems.rates import checked_rates
from drivetrain_fmu.systems.signals import default_record as _default_record
from drivetrain_fmu.systems.ssp import connector_unit_problems, declared_units, extracted_fmus, t_comm_problem, written_whole

from .checks import (_divides, check_parameters, fmus_for, out_folder, output_label, shown_name, step_and_stop,
                     system_of, warn_unconnected)
from .errors import PROG, SimulationFailed, UsageError, one_line, simulation_failure
from .plots import plot_run
from .simulation import cosimulate, interruptible, recorded_signals, write_csv


def _available_memory() -> int | None:
    """Bytes of memory available now without swapping (Linux's MemAvailable), else the
    physical memory; None when neither is known."""
    try:
        with open("/proc/meminfo") as handle:
            for line in handle:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, AttributeError):
        return None


def _check_rows(step: float, stop: float, interval: float | None, columns: int) -> None:
    """The rows a run records (one per step, or per --output-interval) are held in memory
    as float64 until the CSV is written: 8 bytes per value, ``columns`` signals and the
    time.  Refused when that exceeds the memory available now (`--stop 1e12` asked numpy
    for 74.6 PiB and ended in a MemoryError traceback)."""
    rows = round(stop / (interval or step)) + 1
    needed = 8 * rows * (columns + 1)
    available = _available_memory()
    if available is not None and needed > available:
        raise UsageError(f"a run to {stop:g} s with a row every {interval or step:g} s records {rows:.3g} rows of "
                         f"{columns} signals: {_size(needed)} in memory, more than the {_size(available)} available; "
                         f"at most {available // (8 * (columns + 1)):.3g} rows: give a shorter --stop, a larger "
                         f"--output-interval or fewer --record signals")


def _size(n: float) -> str:
    """Bytes in binary units: 80.1 GiB."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if n < 1024 or unit == "PiB":
            return f"{n:.3g} {unit}" if unit != "B" else f"{n:.0f} B"
        n /= 1024


def _rates(system, texts: list[str] | None, step: float, stop: float) -> dict[str, float]:
    """{inst: H} of the --rate options, checked before anything is built (systems.composite.
    checked_rates; the stop a whole number of the slowest common step): usage errors."""
    if not texts:
        return {}
    try:
        rates = checked_rates(texts, system.components, step, element_classes(), "step", f"in {shown_name(system)}")
    except ValueError as exc:
        raise UsageError(one_line(exc)) from None
    frame = step * math.lcm(*(round(h / step) for h in rates.values()))
    if not _divides(frame, stop):
        raise UsageError(f"--rate: the stop {stop:g} s is not a whole number of {frame:g} s, the common step of "
                         f"{', '.join(f'{inst} {h:g} s' for inst, h in rates.items())}: give --stop n x {frame:g}")
    return rates


def _check_archive_units(system, fmu_dir: Path) -> None:
    """The units an archive's connectors are marked with against the modelDescription of
    its FMUs that are not this project's elements (those were checked when it was read)."""
    ours = {e.__name__ for e in ELEMENTS}
    described = {}

    def port(instance: str, name: str):
        element = system.components[instance].element if instance in system.components else None
        if element is None or element in ours:
            return None
        if element not in described:
            model = read_model_description(str(fmu_dir / f"{element}.fmu"))
            described[element] = {v.name: Port(v.causality, v.type, v.unit or (
                v.declaredType.unit if v.declaredType is not None else None)) for v in model.modelVariables}
        return described[element].get(name)

    problems = connector_unit_problems(system.connector_units, port)
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise UsageError(f"{shown_name(system)}: {problems[0]}{more}")


def _check_t_comm(system, step: float) -> None:
    """An archive runs as bound: its step-mean compliances refuse another step."""
    problem = t_comm_problem(system.components, step)
    if problem:
        raise UsageError(f"--step {step:g} differs from the step the archive was exported for: {problem} "
                         f"(a step-mean compliance runs only at its T_comm); run it at --step "
                         f"{_bound_t_comm(system):g} or export the system again with --step {step:g}")


def _bound_t_comm(system) -> float:
    return next(c.parameters["T_comm"] for c in system.components.values() if c.parameters.get("T_comm"))


def _check_record(system, record: list[str], variables: dict[str, dict[str, str]]) -> None:
    for key in record:
        instance, _, variable = key.partition(".")
        if instance not in system.components:
            raise UsageError(f"--record {key}: no component {instance!r}; components: "
                             f"{', '.join(system.components)} (give instance.variable)")
        if not variable or variable not in variables[instance]:
            outputs = [name for name, causality in variables[instance].items() if causality == "output"]
            raise UsageError(f"--record {key}: {instance} ({system.components[instance].element}) has no variable "
                             f"{variable!r}; its outputs: {', '.join(outputs)}")


def _variables(system, fmu_dir: Path | None) -> dict[str, dict[str, str]]:
    """{instance: {variable: causality}}: declared by this project's elements, or read from
    the FMU's modelDescription in ``fmu_dir`` for any other."""
    elements = {e.__name__: {v.name: v.causality for v in e.VARIABLES} for e in ELEMENTS}
    declared = {}
    for name, component in system.components.items():
        if component.element in elements:
            declared[name] = elements[component.element]
        elif fmu_dir is not None:
            model = read_model_description(str(fmu_dir / f"{component.element}.fmu"))
            declared[name] = {v.name: v.causality for v in model.modelVariables}
    return declared


def _run_system(system, fmu_dir: Path, step: float, stop: float, out: Path, record: list[str] | None = None,
                plot: bool = True, rates=None, output_interval: float | None = None) -> list[Path]:
    """Run ``system`` (arguments checked) and write out/LABEL.csv (and .png): the paths.
    Ctrl-C writes the rows computed so far and raises KeyboardInterrupt."""
    record = _default_record(system) if record is None else record
    label = output_label(system)
    with interruptible() as (at_point, state):
        try:
            result = cosimulate(system, fmu_dir, step, stop, record=record, at_point=at_point, rates=rates,
                               output_interval=output_interval)
        except KeyboardInterrupt as exc:                  # Terminated too: the same type is raised again
            partial = getattr(exc, "partial", None)
            if partial is None:
                raise type(exc)(f"at t = {state['t']:g} s; nothing written (the master kept no partial "
                                f"result)") from None
            kept = [path.name for path in (out / f"{label}.csv", out / f"{label}.png") if path.exists()]
            raise type(exc)(_write_partial(out / f"{label}{INTERRUPTED_SUFFIX}", partial, record,
                                           declared_units(fmu_dir, system.components, record), state["t"],
                                           kept)) from None
        except CoSimulationError as exc:                  # an FMI call failed: one or two lines
            raise simulation_failure(exc, state["t"]) from exc
        except SetValueError as exc:                      # an archive's value of the wrong type for another FMU
            raise UsageError(f"{shown_name(system)}: {one_line(exc)}") from None
        except ValueError as exc:                         # the master refuses connections of other FMUs
            if "cannot be run" not in str(exc):
                raise
            raise UsageError(f"{label}: {one_line(exc)}") from None
    units = declared_units(fmu_dir, system.components, record)
    paths = [out / f"{label}.csv"] + ([out / f"{label}.png"] if plot else [])
    writers = [lambda path: write_csv(path, result, record, units),
               lambda path: plot_run(path, system, result, record, units)]
    _write_together(dict(zip(paths, writers)))
    (out / f"{label}{INTERRUPTED_SUFFIX}").unlink(missing_ok=True)     # an earlier run's, now superseded
    return paths


#: the file of the rows an interrupted run computed (beside LABEL.csv and LABEL.png, which
#: it leaves as they were: those of the last complete run, which belong together)
INTERRUPTED_SUFFIX = ".interrupted.csv"


def _write_together(writers: dict) -> None:
    """Write every file of ``writers`` ({path: write(partial path)}) into a partial file
    beside it, then rename them all: a failure (a full disk) or an interrupt before the
    renames leaves every previous file as it was, and says which file could not be written
    (exit status 1); the files a run writes belong to that run."""
    with contextlib.ExitStack() as renames:            # renamed when every file is written
        for path, write in writers.items():
            partial = renames.enter_context(written_whole(path))
            try:
                write(partial)
            except OSError as exc:
                kept = [p.name for p in writers if p.exists()]
                raise SimulationFailed(f"cannot write {path} ({exc.strerror or exc}); "
                                       + (f"the previous {' and '.join(kept)} kept" if kept else "nothing written")
                                       + "; free space there or give --out DIR") from None


def _write_partial(path: Path, partial, record: list[str], units: dict, t: float, kept: list[str]) -> str:
    """Write the rows of an interrupted run into ``path`` (whole or not at all): what the
    interrupt message says after 'interrupted ' (``kept``: the names of the last complete
    run's files, which stay as they are)."""
    reached = partial.time[-1] if len(partial.time) else 0.0
    try:
        _write_together({path: lambda into: write_csv(into, partial, record, units)})
    except SimulationFailed as exc:
        return f"at t = {t:g} s; {exc}"
    return (f"at t = {t:g} s; wrote {path} with the rows computed so far (t = 0 to {reached:g} s)"
            + (f"; {' and '.join(kept)} of the last complete run kept" if kept else ""))


def execute(args) -> None:
    """run and ssp: check everything, build what is needed, simulate, write."""
    command = args.command
    system = system_of(str(args.system))
    if command == "ssp" and not system.is_archive:
        raise UsageError(f"{args.system}: ssp runs an .ssp archive; run an .ssd with `{PROG} run {args.system}`")
    step, stop = step_and_stop(system, args.step, args.stop)
    rates = _rates(system, args.rate, step, stop)
    if args.output_interval is not None and not (_divides(step, args.output_interval)
                                                 and _divides(args.output_interval, stop)):
        raise UsageError(f"--output-interval {args.output_interval:g} must be a whole multiple of the step {step:g} s "
                         f"that divides the stop time {stop:g} s")
    if system.is_archive:
        _check_t_comm(system, step)
    check_parameters(system)
    _check_rows(step, stop, args.output_interval, len(recorded_signals(system, args.record or _default_record(system))))
    warn_unconnected(system, command)
    out = out_folder(args, command, output_label(system))
    with tempfile.TemporaryDirectory(prefix="ssp_") as folder:
        if system.is_archive:
            fmu_dir = extracted_fmus(system.path, folder)
            _check_archive_units(system, fmu_dir)
        else:
            fmu_dir = None
        if args.record:
            _check_record(system, args.record, _variables(system, fmu_dir))
        if fmu_dir is None:
            fmu_dir = fmus_for(system, args.fmus)
        paths = _run_system(system, fmu_dir, step, stop, out, args.record, plot=command == "run", rates=rates,
                            output_interval=args.output_interval)
    print(f"wrote {' and '.join(str(p) for p in paths)}")
