"""Command line: list the elements, build the FMUs, co-simulate a documented drivetrain.

    drivetrain-fmu list [--markdown]            (--markdown: the README's element table)
    drivetrain-fmu build [NAME ...] [--out build/fmus]   (rebuilds the chosen element FMUs, default all)
    drivetrain-fmu run SYSTEM [--step H] [--stop T] [--record inst.var ...]   (co-simulation: CSV and plot)
    drivetrain-fmu report SYSTEM [--steps ...]   (separate FMUs and one system FMU vs monolithic reference)
    drivetrain-fmu report --all [--write [docs/systems.md]]   (every documented system at its step: tables)
    drivetrain-fmu export SYSTEM [--step H] [--stop T]   (SSP archive of the system)
    drivetrain-fmu export-fmu SYSTEM [--input inst.var] [--output inst.var] [--internal-step H] [--rate INST=H] [--iterations N]   (one FMU)
    drivetrain-fmu new NAME --from SYSTEM       (NAME.ssd: an editable copy in the working directory)
    drivetrain-fmu ssp FILE.ssp [--step H] [--stop T] [--record inst.var ...]   (run an SSP file: CSV)
    drivetrain-fmu compare r1 [--step 0.1]      (PWA discretisations, no FMU)
    drivetrain-fmu study judder-onset [--T_S 400] [--T_C 320 300 ...] [--scheduler tcp://HOST:PORT]
    drivetrain-fmu study tire-slip-onset [--mu_k_road 0.07 ...] [--scheduler tcp://HOST:PORT]
    drivetrain-fmu study breakaway [--mu_s 0.3 0.4 ...] [--scheduler tcp://HOST:PORT]

SYSTEM is a documented system's name (drivetrain-fmu list) or the path of an .ssd or .ssp
file.  run, report and export build the FMUs that are not up to date first (--fmus: an
existing folder, or the default build/fmus of the working directory, made if needed) and
say in one line where; every command writes into its own folder RESULTS/COMMAND/SYSTEM/
(RESULTS: --out, default results).  Arguments and files are checked before anything is
built.  Exit status: 0 done, 1 the simulation failed, 2 a usage error (the message names the
bad value and what is allowed) or a missing optional package (the message names the extra to
install: run, report and compare need [cli], study [study]; ssp runs without [cli], with no progress
bar), 130 interrupted (Ctrl-C: what was computed is written), 143 terminated (SIGTERM: as Ctrl-C),
141 stdout closed by its reader (`drivetrain-fmu list | head -3`: nothing said); --debug shows the
Python traceback of an error.
"""
from __future__ import annotations

import argparse
import contextlib
import csv
import math
import re
import signal
import sys
import tempfile
import threading
from pathlib import Path

import compiled_modules

# the element code of this process compiled, where the build has cached it for the sources
# imported here (compiled_modules.prefer_compiled): the FMUs this process runs share it
compiled_modules.prefer_compiled()

import build_fmus  # noqa: E402
from fmus import ELEMENTS  # noqa: E402
from systems.optional import MissingExtra, check, require  # noqa: E402
from systems import msl  # noqa: E402
from systems.ssp import catalog, load_system  # noqa: E402
from systems.signals import FLAGS, PLOTS  # noqa: E402
from systems.signals import declared as _declared, default_record as _default_record  # noqa: E402
from systems.signals import family_of as _family_of  # noqa: E402

PROG = "drivetrain-fmu"
FAILED, USAGE, INTERRUPTED = 1, 2, 130
#: SIGTERM (timeout, a batch scheduler, CI) ends a command as Ctrl-C does, with the status
#: of a command killed by SIGTERM (128 + 15), as shells report it
TERMINATED = 128 + signal.SIGTERM
#: the reader of stdout went away (`drivetrain-fmu list | head -3`): ended quietly with the
#: status of a command killed by SIGPIPE (128 + 13), as shells report it
CLOSED_PIPE = 128 + 13


class UsageError(Exception):
    """A user mistake found before the simulation: exit status 2."""


class SimulationFailed(Exception):
    """The simulation did not complete, or its results could not be written: exit status 1."""


class Terminated(KeyboardInterrupt):
    """SIGTERM: handled as Ctrl-C (stopped at a communication point, what was computed
    written, the temporary files removed), exit status TERMINATED."""


def _on_sigterm(_signum, _frame):
    raise Terminated


class Exit(SystemExit):
    """How main() ends on an error: its message (already printed on stderr) and the exit
    status (``code``)."""

    def __init__(self, message: str, status: int):
        super().__init__(message)
        self.code = status


class Parser(argparse.ArgumentParser):
    """argparse that reads '-1e-3' as a (negative) value, not as an option, so
    '--step -1e-3' is refused as a step that is not > 0."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._negative_number_matcher = re.compile(r"^-(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$|^-(inf|nan)$")

    def error(self, message):
        """A usage error in one line, and where to read the usage (no usage block)."""
        self.exit(USAGE, f"{self.prog}: error: {message}\n  (usage: {self.prog} --help)\n")


#: per family: a row of zoomed panels (the labels of PLOTS' panels to zoom) over one period of
#: a stick-slip cycle, whose lock events are the 0 -> 1 steps of ``events``: the cycle with the
#: largest |``size``| (at this time scale the panels are solid bands)
ZOOMS = {"fan": {"events": "clutch.locked", "size": "clutch.w_slip",
                 "panels": ("clutch slip [rad/s]", "clutch torque [N.m]")}}
#: successive curves of a panel: solid, then dashed and dotted and thinner, so a curve that
#: coincides with an earlier one (w_1 and w_2 of a locked clutch) stays visible on top of it
LINE_STYLES = (("-", 2.2), ("--", 1.6), (":", 1.4), ("-.", 1.2))


def _family(system: str) -> tuple[str | None, str]:
    """(family, case) of a documented system's name: z3 -> ("z3", ""), fan_F2 -> ("fan", "F2"),
    r3_spring_1 -> ("r3_spring", "1"); another name -> (None, name)."""
    family = next((f for f in PLOTS if system == f or system.startswith(f + "_")), None)
    return (family, system[len(family) + 1:]) if family else (None, system)


# ---------------------------------------------------------------------------- checks
def _open(spec: str):
    """The System of a name or a file; a usage error when it is neither or is malformed."""
    from systems.ssp import open_system

    try:
        return open_system(spec)
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def _label(system) -> str:
    """The folder and file name of a system's outputs: its catalog name or its file's stem."""
    return system.path.stem if system.path is not None else system.name


def _shown(system) -> str:
    """How messages name a system: its catalog name, or its file as given."""
    from systems.ssp import CATALOG

    if system.path is None or system.path.parent.resolve() == CATALOG.resolve():
        return system.name
    return str(system.path)


def _times(system, step: float | None, stop: float | None, step_option: str = "--step") -> tuple[float, float]:
    """(step, stop) of a run: the options or the file's; usage errors name the option."""
    option = step_option if step is not None else "the step written in the file,"
    step = system.step if step is None else step
    stop = system.stop if stop is None else stop
    if step is None:
        raise UsageError(f"{_shown(system)}: its file gives no communication step; give {step_option} H")
    if stop is None:
        raise UsageError(f"{_shown(system)}: its file gives no stop time (DefaultExperiment stopTime); give --stop T")
    _check_steps(step, stop, option, system)
    _check_divides(step, stop, option, system)
    return step, stop


def _check_steps(step: float, stop: float, option: str, system) -> None:
    """At most systems.master.MAX_STEPS steps (2**52: beyond it t + step == t in double
    precision; a step of 5e-324 made the step count overflow)."""
    from systems.master import MAX_STEPS

    if stop / step > MAX_STEPS:
        raise UsageError(f"{option} {step:g} makes {stop / step:.3g} steps of the stop time {stop:g} s of "
                         f"{_shown(system)}; at most {MAX_STEPS:.3g} (2**52: beyond it t + step rounds to t in "
                         f"double precision)")


def _available_memory() -> int | None:
    """Bytes of memory available now without swapping (Linux's MemAvailable), else the
    physical memory; None when neither is known."""
    import os

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
    from systems.composite import checked_rates
    from systems.composite_slave import element_classes

    try:
        rates = checked_rates(texts, system.components, step, element_classes(), "step", f"in {_shown(system)}")
    except ValueError as exc:
        raise UsageError(_one_line(exc)) from None
    frame = step * math.lcm(*(round(h / step) for h in rates.values()))
    if not _divides(frame, stop):
        raise UsageError(f"--rate: the stop {stop:g} s is not a whole number of {frame:g} s, the common step of "
                         f"{', '.join(f'{inst} {h:g} s' for inst, h in rates.items())}: give --stop n x {frame:g}")
    return rates


def _divides(step: float, stop: float) -> bool:
    if not math.isfinite(stop / step):
        return False
    n = round(stop / step)
    return n >= 1 and abs(n * step - stop) <= 1e-9 * max(1.0, stop)


def _check_divides(step: float, stop: float, option: str, system) -> None:
    """A step must divide the stop time into whole steps (the master counts t = n h)."""
    if _divides(step, stop):
        return
    round_steps = sorted({m * 10.0 ** e for m in (1, 2, 2.5, 4, 5) for e in range(-7, 4)
                          if m * 10.0 ** e <= stop and _divides(m * 10.0 ** e, stop)})
    near = [f"{h:g}" for h in ([x for x in round_steps if x < step][-1:] + [x for x in round_steps if x > step][:1])]
    raise UsageError(f"{option} {step:g} does not divide the stop time {stop:g} s of {_shown(system)} into whole "
                     f"steps; allowed: {stop:g} s / n" + (f", e.g. {' or '.join(near)}" if near else ""))


def _warn_unconnected(system, command: str, fmu_inputs=()) -> None:
    """One line on stderr naming every input that runs at its start value without the file
    saying so (systems.ssp.unconnected_inputs: not a free flange's zero torque, not bound),
    but those ``fmu_inputs`` (INST.VAR) makes inputs of a system FMU (export-fmu --input)."""
    from systems.ssp import unconnected_inputs

    found = [entry for entry in unconnected_inputs(system.components, system.connections)
             if entry.split(" = ")[0] not in fmu_inputs]
    if found:
        print(f"{PROG} {command}: warning: {_shown(system)}: {'an input' if len(found) == 1 else 'inputs'} left "
              f"unconnected, run at the start value: {', '.join(found)} (connect {'it' if len(found) == 1 else 'them'}"
              f", or bind the value in the component's parameter set to make it deliberate)", file=sys.stderr)


def _check_archive_units(system, fmu_dir: Path) -> None:
    """The units an archive's connectors are marked with against the modelDescription of
    its FMUs that are not this project's elements (those were checked when it was read)."""
    from fmpy import read_model_description

    from systems.master import Port
    from systems.ssp import connector_unit_problems

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
        raise UsageError(f"{_shown(system)}: {problems[0]}{more}")


def _check_parameters(system) -> None:
    from systems.ssp import parameter_problems

    components = system.components
    if system.is_archive:          # an archive may carry FMUs of other tools: check ours only
        names = {e.__name__ for e in ELEMENTS}
        components = {n: c for n, c in components.items() if c.element in names}
    problems = parameter_problems(components)
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise UsageError(f"{_shown(system)}: {problems[0]}{more}")


def _check_t_comm(system, step: float) -> None:
    """An archive runs as bound: its step-mean compliances refuse another step."""
    from systems.ssp import t_comm_problem

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
    from fmpy import read_model_description

    elements = {e.__name__: {v.name: v.causality for v in e.VARIABLES} for e in ELEMENTS}
    declared = {}
    for name, component in system.components.items():
        if component.element in elements:
            declared[name] = elements[component.element]
        elif fmu_dir is not None:
            model = read_model_description(str(fmu_dir / f"{component.element}.fmu"))
            declared[name] = {v.name: v.causality for v in model.modelVariables}
    return declared


def _writable(folder: Path, option: str) -> Path:
    """``folder``, created; a usage error naming it and ``option`` when it cannot be written."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as exc:
        raise UsageError(f"cannot write to {folder} ({exc.strerror or exc}); give {option} DIR, a folder you "
                         f"can write") from None
    return folder


def _out_folder(args, command: str, label: str) -> Path:
    """RESULTS/COMMAND/SYSTEM: one folder per command and system, checked writable."""
    return _writable(Path(args.out) / command / label, "--out")


def _fmu_folder(folder: Path, option: str, new_allowed: bool = False) -> Path:
    """``folder`` (of ``option``) where FMUs are built and reused, checked writable before
    anything is built.  A folder that does not exist is created only when it is the default
    (build/fmus in the working directory, with its parents: a first run must work) or, with
    ``new_allowed`` (`build --out`, which asks for a folder to build into), when its parent
    folder exists, as mkdir makes one.  Any other is refused as most likely mistyped:
    --fmus names where FMUs already are, and a mistyped path must not start a build of
    30 MB in a new folder (at the filesystem root, for an absolute path)."""
    folder = Path(folder)
    if not folder.exists() and folder != build_fmus.DEFAULT_OUT:
        if not new_allowed:
            raise UsageError(f"{option} {folder}: no such folder (a folder of FMUs that exists, or the default "
                             f"{build_fmus.DEFAULT_OUT}; build into a new one with `{PROG} build --out {folder}`)")
        if not folder.parent.is_dir():
            raise UsageError(f"{option} {folder}: its parent folder {folder.parent} does not exist (a new folder is "
                             f"made only inside an existing one)")
    return _writable(folder, option)


def _fmus_for(systems, fmu_dir: Path) -> Path:
    """Build the FMUs that ``systems`` (one System or a list) use and that are not up to
    date in ``fmu_dir`` (:func:`_fmu_folder`); one line on stderr says where they are built
    and reused."""
    systems = systems if isinstance(systems, list) else [systems]
    return _element_fmus(sorted({c.element for system in systems for c in system.components.values()}), fmu_dir)


def _element_fmus(needed: list[str], fmu_dir: Path) -> Path:
    """The FMUs of the elements ``needed`` in ``fmu_dir``, those not up to date built: one
    line on stderr says where (the absolute path: the default folder is relative to the
    working directory), what is built and what is reused."""
    fmu_dir = Path(fmu_dir)
    created = "" if fmu_dir.exists() else f" (new: {build_fmus.DEFAULT_OUT} in the working directory)"
    _fmu_folder(fmu_dir, "--fmus")
    fingerprint = build_fmus.build_fingerprint(False)
    todo = [e for e in needed if not build_fmus.is_up_to_date(fmu_dir / f"{e}.fmu", fingerprint)]
    reused = f"{len(needed) - len(todo)} up to date reused" if len(todo) < len(needed) else "none to reuse"
    if todo:
        print(f"FMUs in {fmu_dir.resolve()}{created}: building {len(todo)} ({', '.join(todo)}), {reused}",
              file=sys.stderr)
        build_fmus.build_all(fmu_dir, only=todo, force=False)
    else:
        print(f"FMUs in {fmu_dir.resolve()}: {len(needed)} up to date reused", file=sys.stderr)
    return fmu_dir


# ---------------------------------------------------------------------------- running
@contextlib.contextmanager
def _interruptible():
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


def _one_line(text: str, limit: int = 300) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _failure(exc, t: float) -> SimulationFailed:
    """One or two lines of a failed FMI call: what failed, when, and the FMU's first message."""
    from systems.master import CoSimulationError

    if isinstance(exc, CoSimulationError):
        first = str(exc).splitlines()[0]
        detail = f"\n  the FMU says: {_one_line(exc.messages[0])}" if exc.messages else ""
        return SimulationFailed(f"the simulation failed at t = {t:g} s: {first}{detail}")
    return SimulationFailed(f"the simulation failed at t = {t:g} s: {_one_line(exc)}")


def _simulate(system, fmu_dir: Path, step: float, stop: float | None = None, step_mean: bool | None = None,
              record: list[str] | None = None, progress: bool = True, at_point=None, rates=None,
              output_interval: float | None = None):
    """Co-simulate ``system`` at ``step`` until ``stop`` (default: its DefaultExperiment).
    A file's compliances with T_comm > 0 average over ``step`` (``step_mean`` True or False
    overrides the file); an .ssp archive runs as bound, with its own FMUs from ``fmu_dir``."""
    from systems.ssp import run_system

    stop = system.stop if stop is None else stop
    components = system.components if system.is_archive else system.at_step(step, step_mean)
    record = _recorded(system, _default_record(system) if record is None else record)
    return _derived(system, run_system(fmu_dir, components, system.connections, stop, step, record, progress,
                                       at_point=at_point, rates=rates, output_interval=output_interval))


def _recorded(system, record: list[str]) -> list[str]:
    """What a run of ``system`` records to give ``record`` and the signals computed after
    it (:func:`_derived`): R3 clearance's mesh.w_mean, no FMU's variable, from mesh.w_1 and
    mesh.w_2."""
    if _family_of(system) != "r3_clearance":
        return record
    return list(dict.fromkeys([key for key in record if key != "mesh.w_mean"] + ["mesh.w_1", "mesh.w_2"]))


def _derived(system, result):
    """``result`` with the signals computed from recorded ones: R3 clearance's mesh.w_mean,
    the mesh's centre-of-momentum speed (systems.r3.mesh_mean_speed_of)."""
    if _family_of(system) == "r3_clearance":
        from systems.r3 import mesh_mean_speed_of

        result.signals["mesh.w_mean"] = mesh_mean_speed_of(system.components["mesh"], result["mesh.w_1"],
                                                           result["mesh.w_2"])
    return result


#: the instance name of a system FMU run under systems.master (its variables are inst.var:
#: the master records SYSTEM_INSTANCE.inst.var)
SYSTEM_INSTANCE = "system"


def _simulate_system_fmu(system, fmu: Path, step: float, record: list[str], at_point=None):
    """Run the system FMU ``fmu`` (:func:`_built_system_fmu`) with internal step = communication
    step = ``step`` to the system's stop under systems.master (fmpy's FMU2Slave), as
    :func:`_simulate` runs the separate element FMUs: the signals of ``record``."""
    from systems.master import Result
    from systems.ssp import Component, run_system

    inside = _recorded(system, record)
    result = run_system(fmu.parent, {SYSTEM_INSTANCE: Component(fmu.stem, {"internal_step": step})}, [],
                        system.stop, step, [f"{SYSTEM_INSTANCE}.{key}" for key in inside], at_point=at_point)
    return _derived(system, Result(result.time, {key: result[f"{SYSTEM_INSTANCE}.{key}"] for key in inside}))


def _write_csv(path: Path, result, record: list[str], units: dict) -> None:
    """CSV of the records; each header is 'instance.variable [unit]' (the FMU's declared unit)."""
    with open(path, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["time [s]"] + [f"{k} [{units[k]}]" if units.get(k) else k for k in record])
        for n, t in enumerate(result.time):
            writer.writerow([f"{t:.6g}"] + [f"{result.signals[k][n]:.10g}" for k in record])


def _pyplot(extra: str = "cli"):
    """matplotlib.pyplot drawing into files (Agg), or MissingExtra naming ``extra``."""
    require("matplotlib", "plots need", extra).use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _stick_slip_window(time, events, size) -> tuple[float, float] | None:
    """(start, end) of one stick-slip period and a margin around it: between two successive
    lock events (0 -> 1 steps of ``events``), the cycle with the largest |``size``|; None
    with fewer than two lock events."""
    import numpy as np

    onsets = time[1:][np.diff(np.asarray(events, dtype=int)) == 1]
    if len(onsets) < 2:
        return None
    peaks = [np.max(np.abs(size[(time >= a) & (time <= b)])) for a, b in zip(onsets[:-1], onsets[1:])]
    k = int(np.argmax(peaks))
    a, b = onsets[k], onsets[k + 1]
    margin = 0.15 * (b - a)
    return max(time[0], a - margin), min(time[-1], b + margin)


def _draw_panel(ax, result, label, signals, window=None) -> None:
    """One panel: its signals in LINE_STYLES (a FLAGS panel stacked, one row per flag)."""
    stacked = label.startswith(FLAGS)
    shown = slice(None) if window is None else (result.time >= window[0]) & (result.time <= window[1])
    for row, (key, legend) in enumerate(signals):
        style, width = LINE_STYLES[row % len(LINE_STYLES)]
        values = result[key] * 0.8 + 1.2 * row if stacked else result[key]
        ax.plot(result.time[shown], values[shown], style, lw=width, label=legend)
    if stacked:      # one row per flag: 0 at its base line, 1 at 0.8 above it
        rows = range(len(signals))
        ax.set_yticks([1.2 * row + level for row in rows for level in (0.0, 0.8)],
                      [f"{legend}: {value}" for _, legend in signals for value in (0, 1)], fontsize=7)
        ax.set_ylim(-0.3, 1.2 * len(signals) - 0.1)
    ax.set_ylabel(label)


def _plot(path: Path, system, result, record: list[str], units: dict) -> None:
    plt = _pyplot()

    family = _family_of(system)
    title, panels = PLOTS.get(family) or (
        _label(system), [(f"{k} [{units.get(k) or '1'}]", [(k, k)]) for k in record[:6]])  # a system of its own
    zoom = ZOOMS.get(family)
    window = zoom and _stick_slip_window(result.time, result[zoom["events"]], result[zoom["size"]])
    zoomed = [panel for panel in panels if window and panel[0] in zoom["panels"]]
    rows = len(panels) + (1 if zoomed else 0)
    fig = plt.figure(figsize=(8, 2.4 * rows + 1), layout="constrained")
    grid = fig.add_gridspec(rows, max(1, len(zoomed)))
    axes = []
    for n, (label, signals) in enumerate(panels):
        ax = fig.add_subplot(grid[n, :], sharex=axes[0] if axes else None)
        _draw_panel(ax, result, label, signals)
        ax.legend(fontsize=8, loc="best")
        if zoomed and (label, signals) in zoomed:
            ax.axvspan(*window, color="0.5", alpha=0.3, label="zoomed below")
            ax.legend(fontsize=8, loc="best")
        if n < len(panels) - 1:
            ax.tick_params(labelbottom=False)
        axes.append(ax)
    axes[0].set_title(f"{title}: {_label(system)}", fontsize=10)
    axes[-1].set_xlabel("time [s]")
    for column, (label, signals) in enumerate(zoomed):
        ax = fig.add_subplot(grid[-1, column])
        _draw_panel(ax, result, label, signals, window)
        ax.set_xlabel("time [s]")
        ax.set_title(f"one judder period: t = {window[0]:.4g} to {window[1]:.4g} s", fontsize=9)
        ax.grid(alpha=0.3)
    fig.savefig(path, dpi=120, format="png")        # format: the path may be a partial file's
    plt.close(fig)


def _run_system(system, fmu_dir: Path, step: float, stop: float, out: Path, record: list[str] | None = None,
                plot: bool = True, rates=None, output_interval: float | None = None) -> list[Path]:
    """Run ``system`` (arguments checked) and write out/LABEL.csv (and .png): the paths.
    Ctrl-C writes the rows computed so far and raises KeyboardInterrupt."""
    from systems.master import CoSimulationError, SetValueError
    from systems.ssp import declared_units

    record = _default_record(system) if record is None else record
    label = _label(system)
    with _interruptible() as (at_point, state):
        try:
            result = _simulate(system, fmu_dir, step, stop, record=record, at_point=at_point, rates=rates,
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
            raise _failure(exc, state["t"]) from exc
        except SetValueError as exc:                      # an archive's value of the wrong type for another FMU
            raise UsageError(f"{_shown(system)}: {_one_line(exc)}") from None
        except ValueError as exc:                         # the master refuses connections of other FMUs
            if "cannot be run" not in str(exc):
                raise
            raise UsageError(f"{label}: {_one_line(exc)}") from None
    units = declared_units(fmu_dir, system.components, record)
    paths = [out / f"{label}.csv"] + ([out / f"{label}.png"] if plot else [])
    writers = [lambda path: _write_csv(path, result, record, units),
               lambda path: _plot(path, system, result, record, units)]
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
    from systems.ssp import written_whole

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
        _write_together({path: lambda into: _write_csv(into, partial, record, units)})
    except SimulationFailed as exc:
        return f"at t = {t:g} s; {exc}"
    return (f"at t = {t:g} s; wrote {path} with the rows computed so far (t = 0 to {reached:g} s)"
            + (f"; {' and '.join(kept)} of the last complete run kept" if kept else ""))


def _run(args, command: str) -> None:
    """run and ssp: check everything, build what is needed, simulate, write."""
    system = _open(str(args.system))
    if command == "ssp" and not system.is_archive:
        raise UsageError(f"{args.system}: ssp runs an .ssp archive; run an .ssd with `{PROG} run {args.system}`")
    step, stop = _times(system, args.step, args.stop)
    rates = _rates(system, args.rate, step, stop)
    if args.output_interval is not None and not (_divides(step, args.output_interval)
                                                 and _divides(args.output_interval, stop)):
        raise UsageError(f"--output-interval {args.output_interval:g} must be a whole multiple of the step {step:g} s "
                         f"that divides the stop time {stop:g} s")
    if system.is_archive:
        _check_t_comm(system, step)
    _check_parameters(system)
    _check_rows(step, stop, args.output_interval, len(_recorded(system, args.record or _default_record(system))))
    _warn_unconnected(system, command)
    out = _out_folder(args, command, _label(system))
    with tempfile.TemporaryDirectory(prefix="ssp_") as folder:
        if system.is_archive:
            from systems.ssp import extracted_fmus

            fmu_dir = extracted_fmus(system.path, folder)
            _check_archive_units(system, fmu_dir)
        else:
            fmu_dir = None
        if args.record:
            _check_record(system, args.record, _variables(system, fmu_dir))
        if fmu_dir is None:
            fmu_dir = _fmus_for(system, args.fmus)
        paths = _run_system(system, fmu_dir, step, stop, out, args.record, plot=command == "run", rates=rates,
                            output_interval=args.output_interval)
    print(f"wrote {' and '.join(str(p) for p in paths)}")


#: `compare r1`: the legend of each method (systems.pwa_methods.METHODS) and its marker; the
#: line styles and widths are LINE_STYLES'
R1_NAMES = {
    "reference": "exact solution (fine-step reference)",
    "euler": "explicit Euler",
    "constant_nonlinearity": "spring force held over the step",
    "constant_nonlinearity_internal": "spring force held, linear part exact",
    "coordinate_shifting": "online coordinate shifting",
    "matrix_exponential": "matrix-exponential approximation",
    "switching": "switching affine models",
    "switching_exact": "switching, exact switch instants (the FMU's)",
}
R1_MARKERS = ("o", "s", "^", "D", "v", "x", "+")


def _compare_r1(step: float, duration: float, out: Path) -> None:
    """Every PWA method of systems.pwa_methods on the Table 6 oscillator against the reference
    (Reiter Fig. 31-36): error table on stdout, x(t) in r1_methods.csv / .png."""
    import numpy as np

    from solvers.pwa import Characteristic, PwaOscillator
    from systems.pwa_methods import METHODS, reference, simulate

    osc = PwaOscillator(1.0, Characteristic((0.0, 0.15), (1.0, 20.0)), Characteristic.linear(0.5))
    n = int(round(duration / step))
    runs = {"reference": reference(osc, 0.3, 0.0, step, n)}
    runs.update({name: simulate(make(osc, step), 0.3, 0.0, step, n) for name, make in METHODS.items()})
    out.mkdir(parents=True, exist_ok=True)
    print(f"Table 6 oscillator, T_d = {step:g} s, {duration:g} s: max |x - x_ref|")
    for name, traj in runs.items():
        if name != "reference":
            print(f"  {name:32s} {np.max(np.abs(traj.x - runs['reference'].x)):.3e} m")
    with open(out / "r1_methods.csv", "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["time"] + [f"x_{name}" for name in runs])
        for k, t in enumerate(runs["reference"].t):
            writer.writerow([f"{t:.6g}"] + [f"{traj.x[k]:.10g}" for traj in runs.values()])
    plt = _pyplot()
    fig, (ax, err) = plt.subplots(2, 1, sharex=True, figsize=(9, 7.5), height_ratios=(3, 2))
    exact = runs["reference"]
    ax.plot(exact.t, exact.x, "-", color="0.6", lw=5, alpha=0.6, label=R1_NAMES["reference"])
    every = max(len(R1_MARKERS), len(exact.t) // 15)         # markers every few points, staggered
    methods = [(n, r) for n, r in runs.items() if n != "reference"]
    for k, (name, traj) in enumerate(methods):
        style, width = LINE_STYLES[k % len(LINE_STYLES)]
        marks = dict(marker=R1_MARKERS[k % len(R1_MARKERS)], ms=5, markevery=(k % every, every), color=f"C{k}")
        label = R1_NAMES.get(name, name)
        same = [other for other, earlier in methods[:k] if np.max(np.abs(earlier.x - traj.x)) <= 1e-9 * np.ptp(exact.x)]
        if same:                              # a curve on top of another: say so in its legend
            label += f" (= {R1_NAMES.get(same[0], same[0])})"
        ax.plot(traj.t, traj.x, style, lw=width, label=label, **marks)
        deviation = np.abs(traj.x - exact.x)
        err.semilogy(traj.t, np.where(deviation > 0, deviation, np.nan), style, lw=width, **marks)
    ax.set_ylim(-0.4, 0.4)
    ax.set_ylabel("spring deflection x [m]")
    ax.set_title(f"Piecewise-affine spring-mass oscillator: discretisation methods at step T_d = {step:g} s",
                 fontsize=10)
    ax.legend(fontsize=7, ncol=2, loc="lower right")
    ax.grid(alpha=0.3)
    err.set_ylabel("deviation from the exact\nsolution |x - x_exact| [m]")
    err.set_xlabel("time [s]")
    err.set_ylim(1e-12, 1.0)
    err.grid(alpha=0.3, which="major")
    fig.tight_layout()
    fig.savefig(out / "r1_methods.png", dpi=120)
    plt.close(fig)
    print(f"wrote {out / 'r1_methods.csv'} and {out / 'r1_methods.png'}")


# per family: the signals the error report compares
REPORT_KEYS = {
    "z3": ["clutch.w_1", "clutch.w_2", "clutch.w_3", "vehicle.w", "clutch.tau_fric_a", "clutch.tau_fric_b"],
    "fan": ["vehicle.v", "vehicle.pitch", "vehicle.w_wheel_f", "engine.w", "clutch.w_1"],
    "r3_spring": ["spring.phi_rel", "z.w", "wv.w"],
    "r3_clearance": ["mesh.w_mean", "mesh.w_1", "mesh.w_2", "vehicle.w"],   # w_1, w_2 not pointwise when elastic
    "planetary_shift": ["gear.w_sun", "gear.w_carrier", "gear.w_ring", "vehicle.w", "gear.tau_fric_c",
                        "gear.tau_fric_b"],
}
#: a co-simulation whose error exceeds this many times a signal's range has diverged
DIVERGED = 10.0


def _reference(system: str, t_grid):
    """The monolithic reference of a documented system (systems.reference)."""
    from systems import reference

    family, case = _family(system)
    if family == "z3":
        return reference.z3_reference(t_grid)
    if family == "fan":
        return reference.fan_reference(case, t_grid)
    if family == "r3_spring":
        return reference.r3_spring_reference(int(case), t_grid)
    if family == "planetary_shift":
        return reference.planetary_shift_reference(t_grid)
    return reference.r3_clearance_reference(int(case), t_grid)


def _normalised(system):
    """What a reference depends on: components (T_comm as step-mean or not), connections, stop."""
    from systems.ssp import Component

    components = {name: Component(c.element, {k: (bool(v) if k == "T_comm" else v) for k, v in c.parameters.items()})
                  for name, c in system.components.items()}
    return components, sorted(map(tuple, (vars(c).values() for c in system.connections))), system.stop


def _documented_name(system) -> str | None:
    """The catalog name of ``system`` (a documented system, or a file equal to one: the
    references are built from the catalog's parameters); None for any other system."""
    from systems.ssp import CATALOG

    if system.path is not None and system.path.parent.resolve() == CATALOG.resolve():
        return system.path.stem
    mine = _normalised(system)
    return next((name for name in catalog() if _normalised(load_system(name)) == mine), None)


def _divergence(result, ref, keys, time) -> str | None:
    """Where the co-simulation left the reference by more than DIVERGED times a signal's
    range (or became non-finite): None if it did not."""
    import numpy as np

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


def _report(args) -> None:
    """Error of a co-simulation against its monolithic reference, per step, with the
    step-mean and the sampled compliance torques; a diverged run is said to be one."""
    if args.all:
        if args.system is not None or args.steps is not None:
            raise UsageError(f"--all runs every documented system at its file's step: give no SYSTEM "
                             f"({args.system}) and no --steps" if args.system is not None else
                             "--all runs every documented system at its file's step: give no --steps")
        if args.convergence:
            raise UsageError("--all compares every documented system with its reference: give no --convergence")
        return _report_all(args)
    if args.write is not None:
        raise UsageError("--write rewrites the tables of --all: give --all (and no SYSTEM)")
    if args.system is None:
        raise UsageError("give a SYSTEM (drivetrain-fmu list) or --all")
    system = _open(args.system)
    name = _documented_name(system)
    if name is None or args.convergence:
        return _report_convergence(system, args, documented=name is not None)
    if args.steps is None:
        args.steps = [1e-4, 1e-3, 1e-2]
    system = load_system(name)
    stop = system.stop
    for step in args.steps:
        _check_divides(step, stop, "--steps", system)
    out = _out_folder(args, "report", name)
    fmu_dir = _fmus_for(system, args.fmus)
    if name in msl.EVENTS:
        _print_msl_report(name, system, fmu_dir, args.steps, out / f"{name}_events.csv")
    else:
        system_fmu = _built_system_fmu(system, REPORT_KEYS[_family(name)[0]], fmu_dir)
        _print_report(name, system, fmu_dir, args.steps, out / f"{name}_errors.csv", system_fmu)


#: step convergence: each step H is compared with H/2 and H/4 (halving: Richardson's ratio 2)
HALVINGS = (1, 2, 4)
#: an observed order below this is no convergence (the steps are too large for the system,
#: or an event moved): no error estimate is given
LEAST_ORDER = 0.5


def _convergence_keys(system) -> list[str]:
    """The Real signals the step-convergence check compares: the family's REPORT_KEYS
    where the system has them all, else what `run` records (its plotted signals, then every
    connected output) that is a Real variable (no lock flag or impact count)."""
    from fmus.variables import REAL

    family = _family_of(system)
    declared = _declared(system)
    keys = REPORT_KEYS.get(family)
    if keys and all(key == "mesh.w_mean" or key.split(".", 1)[1] in declared.get(key.split(".", 1)[0], {})
                    for key in keys):
        return keys
    return [key for key in _default_record(system)
            if declared.get(key.split(".", 1)[0], {}).get(key.split(".", 1)[1]) == REAL]


def convergence(runs) -> dict:
    """Step convergence of one signal from its runs at a step h, h/2 and h/4 (arrays on
    their own grids): on the grid of h, d1 = RMS(y_h - y_h/2) and d2 = RMS(y_h/2 -
    y_h/4) (and their max), the observed order p = log2(d1 / d2), and by Richardson
    extrapolation (y_h - y = C h^p) the error of the run at h, d1 / (1 - 2^-p) (RMS and max,
    the max with the same p).  None for p and the errors when p < LEAST_ORDER or is not finite
    (no convergence observed); p None and errors 0 when the three runs are equal."""
    import numpy as np

    coarse = [np.asarray(values, dtype=float)[::k] for values, k in zip(runs, HALVINGS)]
    n = min(map(len, coarse))
    first, second = coarse[0][:n] - coarse[1][:n], coarse[1][:n] - coarse[2][:n]
    rms = [float(np.sqrt(np.mean(d * d))) for d in (first, second)]
    peak = [float(np.max(np.abs(d))) for d in (first, second)]
    span = float(np.ptp(coarse[2])) or 1.0
    measured = {"differences": rms, "max differences": peak, "range": span, "order": None,
                "error": None, "max error": None}
    if rms[0] == 0.0 and rms[1] == 0.0:
        return {**measured, "error": 0.0, "max error": 0.0}
    order = math.log2(rms[0] / rms[1]) if rms[1] > 0.0 and rms[0] > 0.0 else math.nan
    if not (math.isfinite(order) and order >= LEAST_ORDER):
        return {**measured, "order": order if math.isfinite(order) else None}
    factor = 1.0 / (1.0 - 2.0 ** -order)
    return {**measured, "order": order, "error": rms[0] * factor, "max error": peak[0] * factor}


def _report_convergence(system, args, documented: bool) -> None:
    """The step-convergence check of any system: the same system at H, H/2 and H/4 (H: each
    --steps, default the file's step) as `run` runs it (separate FMUs, the torques its file
    binds); per signal the observed order and the Richardson estimate of the error of the
    run at H, divided by the signal's range (:func:`convergence`); each run's time on stderr."""
    import time

    from systems.master import CoSimulationError

    label = _label(system)
    stop = system.stop
    if stop is None:
        raise UsageError(f"{_shown(system)}: its file gives no stop time (DefaultExperiment stopTime)")
    steps = args.steps or ([system.step] if system.step else [])
    if not steps:
        raise UsageError(f"{_shown(system)}: its file gives no communication step; give --steps H")
    for step in steps:
        _check_divides(step, stop, "--steps", system)
    keys = _convergence_keys(system)
    out = _out_folder(args, "report", label)
    fmu_dir = _fmus_for(system, args.fmus)
    torques = _file_torques(system)
    why = ("--convergence" if documented else
           "an edited system: no monolithic reference (those exist for the documented systems and files equal to "
           "one), so its accuracy is estimated from its own convergence")
    print(f"{_shown(system)}: step convergence over {stop:g} s ({why})")
    print(f"  the same system at H, H/2 and H/4 as `{PROG} run` runs it (separate FMUs, {torques} compliance "
          f"torques); on the grid of H: d1 = RMS(y_H - y_H/2), d2 = RMS(y_H/2 - y_H/4); observed order "
          f"p = log2(d1/d2) (the master holds each input over a step: p near 1, near 2 with step-mean "
          f"compliance torques in a run without friction or impact events); error of the run at H by Richardson "
          f"extrapolation: d1 / (1 - 2^-p); errors divided by each signal's range")
    rows = []
    for step in steps:
        results = []
        for k in HALVINGS:
            started = time.monotonic()
            with _interruptible() as (at_point, state):
                try:
                    results.append(_simulate(system, fmu_dir, step / k, progress=False, at_point=at_point))
                except CoSimulationError as exc:  # a diverging coupling makes an element refuse a step
                    raise SimulationFailed(f"at the step {step / k:g} s: {_failure(exc, state['t'])}") from None
            print(f"  ran {label} at {step / k:g} s ({time.monotonic() - started:.1f} s)", file=sys.stderr, flush=True)
        print(f"  step H = {step:g} s (and {step / 2:g}, {step / 4:g} s):")
        print(f"    {'signal':<{_SIGNAL}}{'order p':<10}{'error at H: RMS':<18}max")
        for key in keys:
            m = convergence([r[key] for r in results])
            order = "-" if m["order"] is None else f"{m['order']:.2f}"
            if m["error"] is None:
                shown = (f"not converging at these steps (d1 {m['differences'][0] / m['range']:.2e}, "
                         f"d2 {m['differences'][1] / m['range']:.2e}): try a smaller --steps")
            else:
                shown = f"{m['error'] / m['range']:<18.2e}{m['max error'] / m['range']:.2e}"
            print(f"    {key:<{_SIGNAL}}{order:<10}{shown}")
            rows.append((step, key, "" if m["order"] is None else f"{m['order']:.4g}",
                         *(f"{d / m['range']:.4g}" for d in m["differences"]),
                         "" if m["error"] is None else f"{m['error'] / m['range']:.4g}",
                         "" if m["max error"] is None else f"{m['max error'] / m['range']:.4g}"))
    csv_path = out / f"{label}_convergence.csv"
    with open(csv_path, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["step H [s]", "signal", "observed order", "RMS(y_H - y_H/2) / range",
                         "RMS(y_H/2 - y_H/4) / range", "RMS error at H / range", "max error at H / range"])
        writer.writerows(rows)
    print(f"wrote {csv_path}")


def _print_msl_report(name, system, fmu_dir, steps, csv_path: Path) -> None:
    """An MSL example has no monolithic reference here: its lock and unlock instants and
    speeds beside those of MSL 4.0's results (systems.msl)."""
    rows = []
    print(f"{name} co-simulation vs the MSL 4.0 results (Dymola) over {system.stop:g} s")
    for step in steps:
        with _interruptible() as (at_point, _state):
            result = _simulate(system, fmu_dir, step, progress=False, at_point=at_point)
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
#: `report`'s columns: width of a configuration's (max, RMS) and of the signal names
_COLUMN, _SIGNAL = 24, 20


def _file_torques(system) -> str:
    """How ``system``'s file binds its compliance torques: 'step-mean' when one binds T_comm > 0."""
    return "step-mean" if any(c.parameters.get("T_comm") for c in system.components.values()) else "sampled"


def _measured(simulate, ref, keys, grid) -> dict:
    """Run ``simulate(at_point)`` (Ctrl-C stops it at a communication point) and compare it
    with the reference ``ref`` on ``grid``: {status ('ok', 'failed', 'diverged'), detail (the
    sentence saying why not ok), errors {signal: (max, RMS) / range}, result, seconds (wall)}."""
    import time

    from systems.master import CoSimulationError
    from systems.reference import error_report

    start = time.monotonic()
    with _interruptible() as (at_point, state):
        try:
            result = simulate(at_point)
        except CoSimulationError as exc:   # a diverging coupling makes an element refuse a step
            said = f"; the FMU says: {exc.messages[0]}" if exc.messages else ""
            return {"status": "failed", "detail": _one_line(f"FAILED at t = {state['t']:g} s "
                                                            f"({str(exc).splitlines()[0]}{said})"),
                    "errors": {}, "result": None, "seconds": time.monotonic() - start}
    measured = {"status": "ok", "detail": "", "errors": {}, "result": result, "seconds": time.monotonic() - start}
    diverged = _divergence(result, ref, keys, grid)
    if diverged:
        return {**measured, "status": "diverged", "detail": diverged, "result": None}
    return {**measured, "errors": error_report(result, ref, keys)}


def _built_system_fmu(system, keys: list[str], fmu_dir: Path) -> Path | str:
    """``system`` as one FMU (systems/composite.py) whose outputs are what a run records for
    the signals ``keys``, in FMUS/systems/, built there unless up to date; or why it cannot
    be built (a report then says FAILED for it and goes on).  Its internal step is a
    parameter (``internal_step``), set per run: one FMU serves every step."""
    from host_support import HostSupportError

    folder = _writable(Path(fmu_dir) / "systems", "--fmus")
    before = {path: path.stat().st_mtime_ns for path in folder.glob("*.fmu")}
    try:
        path = build_fmus.build_system_fmu(system, folder, outputs=_recorded(system, keys), force=False)
    except (ValueError, HostSupportError) as exc:
        return _one_line(exc)
    if before.get(path) != path.stat().st_mtime_ns:
        print(f"built {path} (the system as one FMU)", file=sys.stderr)
    return path


def _measured_system_fmu(system, system_fmu: Path | str, step: float, ref, keys, grid) -> dict:
    """:func:`_measured` of the system FMU (:func:`_built_system_fmu`) at ``step``."""
    if isinstance(system_fmu, str):
        return {"status": "failed", "detail": f"FAILED: not built ({system_fmu})", "errors": {}, "result": None,
                "seconds": 0.0}
    return _measured(lambda at_point: _simulate_system_fmu(system, system_fmu, step, keys, at_point), ref, keys,
                     grid)


def _largest_difference(one: dict, other: dict, ref, keys) -> float | None:
    """The largest |difference| between two measured runs' signals over ``keys``, divided
    by the reference signal's range (as the errors are); None unless both ran."""
    import numpy as np

    if one["status"] != "ok" or other["status"] != "ok":
        return None
    return max(float(np.max(np.abs(np.asarray(one["result"][key]) - other["result"][key])))
               / (float(np.ptp(ref[key])) or 1.0) for key in keys)


def _difference_text(difference: float) -> str:
    return "0" if difference == 0.0 else f"{difference:.1e}"


def _print_step(step: float, keys: list[str], columns: list[tuple[str, str, dict]]) -> None:
    """One step's block of `report`: a column per (configuration, torques, measured), a row
    per signal (max and RMS error / range, or the run's status), the wall times, the
    sentence of each run that is not ok."""
    def line(first: str, cells) -> None:
        print((f"    {first:<{_SIGNAL}}" + "".join(f"{cell:<{_COLUMN}}" for cell in cells)).rstrip())

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
    (``system_fmu``, :func:`_built_system_fmu`) with the torques its file binds, side by
    side; how far the one FMU is from the separate FMUs with the same torques (the same
    code in the same order: equal to 1e-12 of each signal's largest value,
    docs/composite-fmu.md).  The rows also go to ``csv_path``."""
    import numpy as np

    family, _ = _family(name)
    keys, stop = REPORT_KEYS[family], system.stop
    rows = []
    print(f"{name} co-simulation vs monolithic reference over {stop:g} s: max and RMS error / signal range")
    print(f"  {SEPARATE}: an FMU per element; {ONE_FMU}: the whole system in one FMU, internal step = the step; "
          f"both run by systems.master")
    for step in steps:
        grid = np.arange(int(round(stop / step)) + 1) * step
        ref = _reference(name, grid)
        columns = []
        for step_mean in ((True,) if family == "r3_clearance" else (True, False)):
            columns.append((SEPARATE, "step-mean" if step_mean else "sampled", _measured(
                lambda at_point, step_mean=step_mean: _simulate(system, fmu_dir, step, step_mean=step_mean,
                                                                progress=False, at_point=at_point),
                ref, keys, grid)))
        torques = _file_torques(system)
        one = _measured_system_fmu(system, system_fmu, step, ref, keys, grid)
        columns.append((ONE_FMU, torques, one))
        _print_step(step, keys, columns)
        same = next(m for configuration, t, m in columns if configuration == SEPARATE and t == torques)
        difference = _largest_difference(one, same, ref, keys)
        if difference is not None:
            print(f"    {ONE_FMU} against {SEPARATE}, {torques} torques: largest difference "
                  f"{_difference_text(difference)} of a signal's range")
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


# ---------------------------------------------------------------------------- report --all
#: the comments around the tables `report --all --write FILE` rewrites in place
ACCURACY_BEGIN = "<!-- begin: generated by `drivetrain-fmu report --all --write`; do not edit by hand -->"
ACCURACY_END = "<!-- end: generated by `drivetrain-fmu report --all --write` -->"
ACCURACY_HEADER = ("| system | step | separate FMUs: RMS error / range of each compared signal (max error / range) "
                   "| one FMU: largest difference from the separate FMUs / range |\n"
                   "|---|---|---|---|")
MSL_HEADER = ("| system | step | lock and unlock instants against MSL's | speeds against MSL's at its sample times |\n"
              "|---|---|---|---|")


def _percent(fraction: float) -> str:
    """A fraction of a range in percent, two significant digits: 0.0017 -> '0.17 %'."""
    value = 100.0 * fraction
    if value >= 10.0:
        return f"{value:.0f} %"
    text = f"{value:.2g}"
    return f"{value:.1e} %" if "e" in text else f"{text} %"


def _step_text(step: float) -> str:
    return f"{step * 1e3:g} ms"


def _measure_reference(name: str, fmu_dir: Path) -> dict:
    """`run NAME` at its file's step and binding against the monolithic reference, and the
    system as one FMU at that step: {name, step, status ('ok', 'failed', 'diverged'), detail,
    errors {signal: (max, RMS) / range}, one_fmu {status, detail, difference: the largest
    difference from the separate FMUs / range, None unless both ran}}."""
    import numpy as np

    system = load_system(name)
    keys, step = REPORT_KEYS[_family(name)[0]], system.step
    grid = np.arange(int(round(system.stop / step)) + 1) * step
    ref = _reference(name, grid)
    separate = _measured(lambda at_point: _simulate(system, fmu_dir, step, progress=False, at_point=at_point),
                         ref, keys, grid)
    one = _measured_system_fmu(system, _built_system_fmu(system, keys, fmu_dir), step, ref, keys, grid)
    return {"name": name, "step": step, "status": separate["status"], "detail": separate["detail"],
            "errors": separate["errors"], "one_fmu": {"status": one["status"], "detail": one["detail"],
                                                      "difference": _largest_difference(one, separate, ref, keys)}}


def _measure_msl(name: str, fmu_dir: Path) -> dict:
    """`run NAME` at its file's step against MSL 4.0's results (systems.msl): {name, step,
    events: [(signal, what, ours, MSL's)], speeds: [(signal, what, ours, MSL's)]}."""
    system = load_system(name)
    with _interruptible() as (at_point, _state):
        result = _simulate(system, fmu_dir, system.step, progress=False, at_point=at_point)
    rows = msl.comparison(name, result)
    return {"name": name, "step": system.step, "events": [r for r in rows if "lock" in r[1]],
            "speeds": [r for r in rows if "lock" not in r[1]]}


def _status_cell(measured: dict, limit: int) -> str:
    return measured["status"] + (f": {_one_line(measured['detail'], limit)}" if measured["detail"] else "")


def _reference_row(row: dict) -> str:
    if row["status"] != "ok":
        cell = _status_cell(row, 200)
    else:
        cell = ", ".join(f"`{key}` {_percent(rms)} ({_percent(peak)})" for key, (peak, rms) in row["errors"].items())
    one = row["one_fmu"]
    if one["status"] != "ok":
        one_cell = _status_cell(one, 200)
    elif one["difference"] is None:
        one_cell = "ran (the separate FMUs did not)"
    else:
        one_cell = _difference_text(one["difference"])
    return f"| `{row['name']}` | {_step_text(row['step'])} | {cell} | {one_cell} |"


def _msl_row(row: dict) -> str:
    events = row["events"]
    found = [(key, what, ours, theirs) for key, what, ours, theirs in events
             if not (math.isnan(ours) or math.isnan(theirs))]
    if found:
        key, what, ours, theirs = max(found, key=lambda r: abs(r[2] - r[3]))
        worst = max(abs(ours - theirs) for _, _, ours, theirs in found)
        instants = (f"{len(found)} of {len(events)} found, within {worst * 1e3:.2g} ms "
                    f"(largest: `{key}` {what.split(' ')[0]} at {theirs:g} s)")
    else:
        instants = f"0 of {len(events)} found"
    moving = [(key, what, ours, theirs) for key, what, ours, theirs in row["speeds"] if theirs != 0.0]
    held = [(key, ours) for key, what, ours, theirs in row["speeds"] if theirs == 0.0]
    parts = []
    if moving:
        key, what, ours, theirs = max(moving, key=lambda r: abs(r[2] - r[3]) / abs(r[3]))
        parts.append(f"within {_percent(abs(ours - theirs) / abs(theirs))} of the value (largest: `{key}` "
                     f"{what.split(' [')[0]})")
    if held:
        off = max(abs(ours) for _, ours in held)
        parts.append("held at exactly 0 where MSL's is 0" if off == 0.0 else f"up to {off:.2g} rad/s where MSL's is 0")
    return f"| `{row['name']}` | {_step_text(row['step'])} | {instants} | {'; '.join(parts)} |"


def accuracy_tables(reference_rows: list[dict], msl_rows: list[dict]) -> str:
    """The markdown `report --all` writes (between ACCURACY_BEGIN and ACCURACY_END): one
    row per documented system, those with a monolithic reference, then the MSL examples."""
    lines = [ACCURACY_BEGIN, "", ACCURACY_HEADER, *map(_reference_row, reference_rows), "",
             MSL_HEADER, *map(_msl_row, msl_rows), "", ACCURACY_END]
    return "\n".join(lines) + "\n"


def replace_generated(text: str, tables: str, where: str = "the file") -> str:
    """``text`` with the part from ACCURACY_BEGIN to ACCURACY_END (both lines included)
    replaced by ``tables``; a usage error when the comments are not there exactly once."""
    if text.count(ACCURACY_BEGIN) != 1 or text.count(ACCURACY_END) != 1 or \
            text.index(ACCURACY_BEGIN) > text.index(ACCURACY_END):
        raise UsageError(f"{where}: --write needs the line {ACCURACY_BEGIN} and, after it, the line "
                         f"{ACCURACY_END}, once each")
    start = text.index(ACCURACY_BEGIN)
    end = text.index(ACCURACY_END) + len(ACCURACY_END)
    end += 1 if text[end:end + 1] == "\n" else 0
    return text[:start] + tables + text[end:]


def _report_all(args) -> None:
    """Every documented system at its file's step (as `run` runs it) against its monolithic
    reference or MSL's results: the markdown tables on stdout, progress on stderr; --write
    FILE rewrites them in place in FILE."""
    import time

    names = catalog()
    target = args.write
    if target is not None:                                # checked before hours of work, not after
        try:
            replace_generated(target.read_text(encoding="utf-8"), "", str(target))
        except OSError as exc:
            raise UsageError(f"--write {target}: {exc.strerror or exc}") from None
    out = _out_folder(args, "report", "all")
    fmu_dir = Path(args.fmus)
    _fmus_for([load_system(name) for name in names], fmu_dir)
    reference_rows, msl_rows = [], []
    for name in names:
        start = time.monotonic()
        if name in msl.EVENTS:
            msl_rows.append(_measure_msl(name, fmu_dir))
            shown = _msl_row(msl_rows[-1])
        else:
            reference_rows.append(_measure_reference(name, fmu_dir))
            shown = _reference_row(reference_rows[-1])
        print(f"{time.monotonic() - start:6.1f} s  {shown}", file=sys.stderr, flush=True)
    tables = accuracy_tables(reference_rows, msl_rows)
    (out / "accuracy.md").write_text(tables, encoding="utf-8")
    print(tables, end="")
    if target is not None:
        target.write_text(replace_generated(target.read_text(encoding="utf-8"), tables, str(target)),
                          encoding="utf-8")
        print(f"wrote {out / 'accuracy.md'} and the tables in {target}", file=sys.stderr)
    else:
        print(f"wrote {out / 'accuracy.md'}", file=sys.stderr)


#: ecos and fmpy's simulate_ssp exchange values Jacobi-style (every input lags one step),
#: which needs smaller steps than systems.master's ordered exchange.  Per documented
#: system: the largest step at which ecos ran stable with the RMS error of every compared
#: signal (REPORT_KEYS) at most 1 % of its range against the monolithic reference, and that
#: error's worst signal (measured with ecospy 0.7.2's ecos command over the whole default
#: experiment; see docs/systems.md).
JACOBI_STEPS: dict[str, tuple[float, str]] = {
    "z3": (1e-4, "RMS error of w_2 0.36 %, vehicle speed 0.010 %, friction torques 0.58 % at most; "
                 "2e-4 s: torque 1.3 %; 1e-3 s: w_2 9.7 %; at its 2 ms ecos diverges (|w_1| 1e47 at 10 s); "
                 "10 s take 72 s in ecos"),
    "r3_clearance_1": (1e-4, "RMS error of the speeds 0.63 % at most (2e-4 s: 1.3 %, 1e-3 s: 8 %)"),
    "r3_clearance_2": (1e-4, "RMS error of the mesh's mean speed 0.63 %, vehicle 0.094 % (2e-4 s: 1.3 %, "
                             "1e-3 s: 8 %)"),
    "r3_clearance_3": (1e-4, "RMS error of the speeds 0.94 % at most (2e-4 s: 1.6 %, 1e-3 s: 7.5 %)"),
    "r3_spring_1": (5e-6, "RMS error of the twist 0.93 %, speeds 0.78 % at most (2e-5 s: 3.7 %, 1e-4 s: 18 %, "
                          "1e-3 s: 74 %); 1 s takes about 5 min in ecos"),
    "r3_spring_2": (5e-6, "RMS error of the twist 0.86 %, speeds 0.73 % at most (2e-5 s: 3.5 %, 1e-3 s: 71 %); "
                          "1 s takes about 5 min in ecos"),
    "r3_spring_3": (5e-5, "RMS error of the twist 0.67 %, speeds 0.56 % at most (1e-4 s: 1.35 %, 1e-3 s: 9.7 %)"),
}
#: the Fan systems: the stiff input shaft (77 kN.m/rad between 0.6 and 0.2 kg.m2) under a
#: one-step lag needs a step below 1e-5 s, measured on F1's first 0.5 s (RMS / range)
JACOBI_UNSUITED = {name: (
    "not practical: ecos exchanges values Jacobi-style and the stiff input shaft then needs a step below 1e-5 s "
    "(measured on F1's first 0.5 s: engine speed 0.94 % and flywheel 1.3 % RMS error at 1e-5 s, 2.3 % and "
    "3.2 % at 2e-5 s, 16 % at 5e-5 s, 290 % at 1e-4 s, diverging at 5e-4 s), and 0.5 s at 1e-5 s took 6 min; "
    "run the F systems with `drivetrain-fmu run` or OMSimulator") for name in catalog() if name.startswith("fan_")}


def _export(args) -> None:
    from systems import ssp

    system = _open(args.system)
    label = _label(system)
    step, stop = _times(system, args.step, args.stop)
    _check_parameters(system)
    _warn_unconnected(system, "export")
    out = _out_folder(args, "export", label)
    path = out / f"{label}.ssp"
    with tempfile.TemporaryDirectory(prefix="ssp_") as folder:
        if system.is_archive:                 # re-export with its own FMUs
            fmu_dir = ssp.extracted_fmus(system.path, folder)
            system = ssp.System(system.name, system.description, {
                n: ssp.Component(c.element, {**c.parameters, "T_comm": step} if c.parameters.get("T_comm")
                                 else c.parameters) for n, c in system.components.items()},
                system.connections, system.stop, system.step)
        else:
            fmu_dir = _fmus_for(system, args.fmus)
        try:
            ssp.export(system, path, fmu_dir, step, stop)
        except OSError as exc:                # written whole or not at all (systems.ssp.written_whole)
            if exc.filename is not None and Path(exc.filename).parent != path.parent:
                raise                         # an FMU that could not be read: not the archive's write
            raise SimulationFailed(f"cannot write {path} ({exc.strerror or exc}); "
                                   + (f"the previous {path.name} kept" if path.exists() else "nothing written")
                                   + "; free space there or give --out DIR") from None
    print(f"wrote {path}: run it at a step of {step:g} s (its step-mean compliances' T_comm), e.g.\n"
          f"  OMSimulator {path} --stopTime={stop:g} --stepSize={step:g} --resultFile={label}.csv")
    ecos = f"ecos simulate --path {path} --stepSize {step:g} --stopTime {stop:g} --parameterSet initialValues"
    documented = system.path is None or system.path.parent.resolve() == ssp.CATALOG.resolve()
    measured = JACOBI_STEPS.get(label) if documented else None
    if documented and label in JACOBI_UNSUITED:
        print(f"ecos (and fmpy's simulate_ssp): {JACOBI_UNSUITED[label]}")
    elif measured is None:
        print(f"  {ecos}\n(ecos and fmpy's simulate_ssp exchange values Jacobi-style, one step late: compare their "
              f"result with `{PROG} run` at the same step; they may need a smaller step)")
    elif step <= measured[0] * (1 + 1e-9):
        print(f"  {ecos}\n(ecos exchanges values Jacobi-style; measured stable and within 1 % at {measured[0]:g} s: "
              f"{measured[1]})")
    else:
        print(f"ecos and fmpy's simulate_ssp exchange values Jacobi-style and need a smaller step for {label}: "
              f"measured stable and within 1 % of the reference at {measured[0]:g} s ({measured[1]}); export for "
              f"them with\n  {PROG} export {label} --step {measured[0]:g}\n  then ecos simulate --path {path} "
              f"--stepSize {measured[0]:g} --stopTime {stop:g} --parameterSet initialValues")


def _new(args) -> None:
    from systems.ssp import copy_system

    if not re.fullmatch(r"[A-Za-z][A-Za-z0-9_-]*", args.name):
        raise UsageError(f"NAME {args.name!r}: use letters, digits, '_' and '-', starting with a letter "
                         f"(it names the file NAME.ssd)")
    source = _open(args.source)
    target = _writable(Path(args.dir), "--dir") / f"{args.name}.ssd"
    if target.exists():
        raise UsageError(f"{target} exists: choose another NAME or remove it")
    target.write_bytes(copy_system(source, args.name))
    print(f"wrote {target}, a copy of {_label(source)}: edit it (parameters are ssv:Parameter values), then\n"
          f"  {PROG} run {target}")


#: per study: plot title and the label (words and unit) of each CSV column; "KEY legend" is
#: the legend of a threshold's curve.  The bisection brackets each threshold: PARAMETER_threshold
#: is the smallest value tried at which the effect occurs, PARAMETER_below the largest at
#: which it did not
STUDY_PLOTS = {
    "judder-onset": ("Engine torque at which the clutch starts to judder (stick-slip in steady state)", {
        "T_S": "clutch static friction capacity T_S [N.m]", "T_C": "clutch kinetic friction capacity T_C [N.m]",
        "T0_threshold": "engine torque at judder onset [N.m]",
        "T0_threshold legend": "lowest engine torque tried with judder [N.m]",
        "T0_below": "highest engine torque tried without judder [N.m]"}),
    "tire-slip-onset": ("Engine torque on ice beyond which the driven tire no longer settles to rolling", {
        "mu_k_road": "kinetic tire-road friction coefficient [-]",
        "T0_threshold": "engine torque at the tire-slip onset [N.m]",
        "T0_threshold legend": "torque tried nearest the onset at which the tire rolls [N.m]",
        "T0_below": "torque tried nearest the onset at which the tire slips or spins [N.m]"}),
    "breakaway": ("Torque on a locked clutch at which it breaks away (starts to slip)", {
        "mu_s": "static friction coefficient of the clutch mu_s [-]",
        "tau_threshold": "breakaway torque on body 1 [N.m]",
        "tau_threshold legend": "lowest torque tried at which the clutch slips [N.m]",
        "tau_below": "highest torque tried at which the clutch still holds [N.m]"}),
}


def _study(args) -> None:
    """Threshold studies (systems.study) on this machine's cores or a dask cluster: CSV and plot in
    OUT/study/KIND/."""
    from systems import study

    out = _out_folder(args, "study", args.kind)
    _element_fmus([e.__name__ for e in ELEMENTS], args.fmus)
    client = study.study_workers(args.scheduler)
    try:
        if args.kind == "judder-onset":
            # Fan et al. F2: the engine torque above which the clutch sticks and slips in steady state
            spec = study.Study("fan", "stick_slip_cycles_per_second",
                               grid={"T_S": args.T_S, "T_C": args.T_C}, fixed={"stop": _or(args.stop, 4.5)})
            rows = study.threshold_search(spec, args.fmus, client, "T0", _or(args.low, 300.0),
                                          _or(args.high, 323.47), level=0.0, tolerance=args.tolerance)
            x, y = ("T_C", "T_S") if len(args.T_S) > 1 and len(args.T_C) > 1 else ("T_C" if len(args.T_C) > 1 else "T_S", None)
        elif args.kind == "tire-slip-onset":
            # Fan et al. F3 (ice, negative torque): the torque beyond which the driven tire no
            # longer settles to rolling within the run (stick-slip or spinning in its last third)
            spec = study.Study("fan", "driven_tire_rolls", grid={"mu_k_road": args.mu_k_road},
                               fixed={"case": "F3", "stop": _or(args.stop, 8.0)})
            rows = study.threshold_search(spec, args.fmus, client, "T0", _or(args.low, -170.0),
                                          _or(args.high, -160.0), level=0.5, tolerance=args.tolerance)
            x, y = "mu_k_road", None
        else:
            spec = study.Study("clutch_hold", "breakaway", grid={"mu_s": args.mu_s})
            rows = study.threshold_search(spec, args.fmus, client, "tau", 0.0, 1000.0, level=0.5, tolerance=0.01)
            x, y = "mu_s", None
    finally:
        client.close()
    csv_path = study.write_csv(rows, out / f"{args.kind}.csv")
    value = next(key for key in rows[0] if key.endswith("_threshold"))
    title, labels = STUDY_PLOTS[args.kind]
    png = study.plot(rows, x, value, out / f"{args.kind}.png", y=y, title=title, labels=labels,
                     below=value.replace("_threshold", "_below"))
    for row in rows:
        print("  " + ", ".join(f"{k} = {v:.6g}" for k, v in row.items()))
    print(f"wrote {csv_path} and {png}")


def seconds(text: str) -> float:
    """argparse type of a step or a duration: a finite number of seconds > 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not (value > 0.0 and math.isfinite(value)):
        raise argparse.ArgumentTypeError(f"must be a finite number of seconds > 0, got {text}")
    return value


def _or(value, default):
    return default if value is None else value


def _parser() -> Parser:
    parser = Parser(prog=PROG, description=__doc__.splitlines()[0])
    parser.add_argument("--debug", action="store_true", help="show the Python traceback of an error")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser)

    def command(name, **kwargs):
        p = sub.add_parser(name, **kwargs)
        p.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                       help="show the Python traceback of an error")
        return p

    system_help = "a documented system (drivetrain-fmu list) or the path of an .ssd or .ssp file"
    results_help = "results folder: outputs go to OUT/COMMAND/SYSTEM/ (default results)"
    fmus_help = (f"folder of the element FMUs, those missing or not up to date built there first (default "
                 f"{build_fmus.DEFAULT_OUT} in the working directory, made if needed; another folder must exist)")
    listing = command("list", help="list elements and documented systems")
    listing.add_argument(
        "--markdown", action="store_true", help="print only the README's element table, made from fmus.ELEMENTS")
    listing.add_argument(
        "--variables", action="store_true", help="print only the variable tables of docs/contract.md")
    build = command("build", help="build element FMUs (default every element), rebuilt even when up to date")
    build.add_argument("elements", nargs="*", metavar="NAME",
                       help="elements to build, e.g. Clutch Shaft (default: every element; drivetrain-fmu list)")
    build.add_argument("--out", type=Path, default=build_fmus.DEFAULT_OUT,
                       help=f"folder for the .fmu files (default {build_fmus.DEFAULT_OUT} in the working directory; "
                            "a new folder is made only inside an existing one)")
    build.add_argument("--pure-python", action="store_true",
                       help="without the element code compiled by Cython (no Cython or C headers needed): "
                            "the same results, slower")
    for name, text in (("run", "co-simulate a system: CSV and plot"),
                       ("ssp", "run an .ssp archive with this project's master: CSV")):
        run = command(name, help=text)
        run.add_argument("system", metavar="SYSTEM" if name == "run" else "FILE.ssp",
                         help=system_help if name == "run" else "an .ssp archive")
        run.add_argument("--step", type=seconds, help="communication step [s] (default: the file's)")
        run.add_argument("--stop", type=seconds, help="stop time [s] (default: the file's DefaultExperiment)")
        run.add_argument("--record", nargs="+", metavar="INST.VAR",
                         help="instance.variable to record (default: the system's signals and every connected "
                              "output)")
        run.add_argument("--output-interval", type=seconds, metavar="DT",
                         help="write a row every DT s (a whole multiple of the step; default: every step)")
        run.add_argument("--rate", nargs="+", metavar="INST=H",
                         help="multi-rate: component INST steps every H s (a whole multiple of --step) with its "
                              "inputs averaged over its step, e.g. vehicle=1e-3 (docs/composite-fmu.md)")
        run.add_argument("--fmus", type=Path, default=build_fmus.DEFAULT_OUT, help=fmus_help)
        run.add_argument("--out", type=Path, default=Path("results"), help=results_help)
    compare = command("compare", help="compare the PWA discretisation methods (no FMU)")
    compare.add_argument("case", choices=["r1"], help="r1: Reiter's piecewise-affine spring-mass oscillator "
                                                       "(Table 6)")
    compare.add_argument("--step", type=seconds, default=0.1, help="discretisation step T_d [s]")
    compare.add_argument("--duration", type=seconds, default=10.0, help="simulated time [s]")
    compare.add_argument("--out", type=Path, default=Path("results"), help=results_help)
    report = command("report", help="co-simulation error against the monolithic reference, as separate FMUs "
                                    "and as one system FMU")
    report.add_argument("system", metavar="SYSTEM", nargs="?", help=system_help)
    report.add_argument("--steps", type=seconds, nargs="+",
                        help="steps to compare at [s] (default 1e-4 1e-3 1e-2; for the step-convergence check each "
                             "H is run with H/2 and H/4, default the file's step)")
    report.add_argument("--convergence", action="store_true",
                        help="the step-convergence check (H, H/2, H/4: observed order and estimated error) instead "
                             "of the monolithic reference; what `report` does for a system that has no reference "
                             "(an edited copy)")
    report.add_argument("--all", action="store_true",
                        help="every documented system at its file's step: the accuracy tables of docs/systems.md "
                             "(markdown on stdout)")
    report.add_argument("--write", type=Path, nargs="?", const=Path("docs") / "systems.md", metavar="FILE.md",
                        help="with --all: also rewrite the tables in place in FILE.md, between its "
                             "'drivetrain-fmu report --all' begin and end comments (default docs/systems.md)")
    report.add_argument("--fmus", type=Path, default=build_fmus.DEFAULT_OUT, help=fmus_help)
    report.add_argument("--out", type=Path, default=Path("results"), help=results_help)
    export = command("export", help="write a system as an SSP archive")
    export.add_argument("system", metavar="SYSTEM", help=system_help)
    export.add_argument("--step", type=seconds, help="step the SSP is meant to run at [s] (default: the file's)")
    export.add_argument("--stop", type=seconds, help="stop time [s] (default: the file's)")
    export.add_argument("--fmus", type=Path, default=build_fmus.DEFAULT_OUT, help=fmus_help)
    export.add_argument("--out", type=Path, default=Path("results"), help=results_help)
    from systems import composite

    composite.add_arguments(command("export-fmu", help="write a whole system as one FMU (docs/composite-fmu.md)"))
    new = command("new", help="write NAME.ssd, an editable copy of a system, into the working directory")
    new.add_argument("name", metavar="NAME", help="the copy's name: letters, digits, '_' and '-', starting with a "
                                                  "letter (the file is NAME.ssd)")
    new.add_argument("--from", dest="source", required=True, metavar="SYSTEM", help=system_help)
    new.add_argument("--dir", default=".", help="folder to write NAME.ssd into (default: the working directory)")
    studies = command("study", help="threshold studies on this machine's cores or a dask cluster")
    studies.add_argument("kind", choices=["judder-onset", "tire-slip-onset", "breakaway"],
                         help="judder-onset: the engine torque at which Fan F2's clutch starts to judder; "
                              "tire-slip-onset: the torque on ice beyond which the driven tire no longer settles "
                              "to rolling (F3); breakaway: the torque at which a locked clutch starts to slip")
    studies.add_argument("--scheduler", help="tcp://HOST:PORT of a running dask scheduler (default: one "
                         "worker process per core of this machine)")
    studies.add_argument("--T_S", type=float, nargs="+", default=[400.0], help="clutch static capacities [N.m]")
    studies.add_argument("--T_C", type=float, nargs="+", default=[320.0], help="clutch kinetic capacities [N.m]")
    studies.add_argument("--low", type=float, help="engine torque at the lower end of the search [N.m] "
                         "(judder-onset: 300, no judder; tire-slip-onset: -170, the tire spins)")
    studies.add_argument("--high", type=float, help="engine torque at the upper end [N.m] (judder-onset: "
                         "323.47, judder, a narrow band: above it the clutch slips for good; "
                         "tire-slip-onset: -160, the tire settles to rolling)")
    studies.add_argument("--mu_k_road", type=float, nargs="+", default=[0.07],
                         help="tire-slip-onset: kinetic road friction (ice: 0.07)")
    studies.add_argument("--tolerance", type=float, default=0.5, help="the width the search brings each "
                         "threshold's bracket to [N.m]")
    studies.add_argument("--stop", type=seconds, help="simulated time per run [s] (judder-onset 4.5, "
                         "tire-slip-onset 8)")
    studies.add_argument("--mu_s", type=float, nargs="+", default=[0.3, 0.4, 0.5],
                         help="breakaway: static friction coefficients of the clutch (default 0.3 0.4 0.5)")
    studies.add_argument("--fmus", type=Path, default=build_fmus.DEFAULT_OUT, help=fmus_help)
    studies.add_argument("--out", type=Path, default=Path("results"), help=results_help)
    return parser


def _ports(names: list[str]) -> str:
    """Port names in backticks; the members of an indexed family (``fmus.variables.Family``,
    as the elements declare them: tau_1 .. tau_6 of ClutchChain) together, three or more
    as a range.  A name is grouped as any element declares it (phi_1, phi_2 of a Gear
    with those of a Clutch, which declares them members of "phi")."""
    stems = _declared_stems()
    families: dict[str, list[str]] = {}
    for name in names:
        families.setdefault(stems.get(name, name), []).append(name)
    return ", ".join(f"`{group[0]}`..`{group[-1]}`" if len(group) >= 3 else ", ".join(f"`{n}`" for n in group)
                     for group in families.values()) or "none"


def _declared_stems() -> dict[str, str]:
    """name -> stem of the family that name is declared a member of, over ``fmus.ELEMENTS``
    (a name is the same member wherever it is declared: tests/test_element_contract.py)."""
    return {v.name: v.family.stem for element in ELEMENTS for v in element.VARIABLES if v.family is not None}


#: count parameters whose families docs/contract.md shows by their first member only
_FIRST_MEMBER_ONLY = ("n_bodies", "n_points")


def _contract_cell(value) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    return "" if value is None else f"{value:g}"


def variable_tables() -> str:
    """docs/contract.md's "Variables of every element": one table per entry of
    ``fmus.ELEMENTS``, from its VARIABLES (of a family counted by a parameter of
    _FIRST_MEMBER_ONLY only the first member is listed)."""
    from fmus.variables import BOOLEAN, INTEGER, OUTPUT

    parts = []
    for element in ELEMENTS:
        rows = [f"#### {element.__name__}", "",
                "| variable | causality | unit | default | allowed | feedthrough from | description |",
                "|---|---|---|---|---|---|---|"]
        for v in element.VARIABLES:
            if v.family is not None and v.family.count in _FIRST_MEMBER_ONLY and v.family.index > 1:
                continue
            unit = {INTEGER: "Integer", BOOLEAN: "Boolean"}.get(v.type, v.unit or "1")
            bounded = v.low is not None or v.high is not None
            allowed = ("" if v.causality == OUTPUT or v.type == BOOLEAN
                       else v.allowed() if bounded else "any finite")
            rows.append(f"| `{v.name}` | {v.causality} | {unit} | {_contract_cell(v.start)} | {allowed} | "
                        f"{', '.join(v.depends)} | {v.description} |")
        parts.append("\n".join(rows))
    return "\n\n".join(parts) + "\n"


def element_table() -> str:
    """The README's element table, one row per entry of ``fmus.ELEMENTS``: the element's
    ``KIND`` if it declares one, else a source has no input, a compliance takes the speeds
    of its sides (rad/s inputs), a body the others."""
    rows = ["| element | kind | what it is | module (equations in its docstring) | inputs | outputs |",
            "|---|---|---|---|---|---|"]
    for element in ELEMENTS:
        inputs = [v for v in element.VARIABLES if v.causality == "input"]
        kind = getattr(element, "KIND", None) or (
            "compliance" if any(v.unit == "rad/s" for v in inputs) else "body" if inputs else "source")
        where = element.__module__.replace(".", "/") + ".py"
        rows.append(f"| {element.__name__} | {kind} | {element.description} | `{where}` | "
                    f"{_ports([v.name for v in inputs])} | "
                    f"{_ports([v.name for v in element.VARIABLES if v.causality == 'output'])} |")
    return "\n".join(rows)


def _list() -> None:
    """The elements and the documented systems, one per line, each column as wide as its
    longest name."""
    width = max(len(element.__name__) for element in ELEMENTS)
    for element in ELEMENTS:
        print(f"{element.__name__:{width}s}  {element.description}")
    print("documented systems (systems/ssd/NAME.ssd; drivetrain-fmu run|report|export NAME, "
          "or a file: drivetrain-fmu new MINE --from NAME, then run MINE.ssd):")
    names = catalog()
    width = max(map(len, names), default=0)
    for name in names:
        try:
            description = load_system(name).description
        except (ValueError, SyntaxError, KeyError) as exc:      # one bad file hides no other
            description = f"(cannot be read: {exc})"
        print(f"  {name:{width}s}  {description}")


#: per command: the optional packages it needs (module, what needs it, the extra that installs it),
#: checked before anything is built or computed
NEEDS = {
    "run": [("matplotlib", "plots need", "cli"), ("tqdm", "progress bars need", "cli")],
    "report": [("scipy", "the monolithic references need", "cli")],
    "compare": [("scipy", "the PWA methods need", "cli"), ("matplotlib", "plots need", "cli")],
    "study": [("distributed", "studies need", "study"), ("matplotlib", "plots need", "study"),
              ("tqdm", "progress bars need", "study")],
}


def _dispatch(args) -> None:
    for module, purpose, extra in NEEDS.get(args.command, ()):
        check(module, purpose, extra)
    if args.command == "list":
        if args.variables:
            print(variable_tables(), end="")
        elif args.markdown:
            print(element_table())
        else:
            _list()
    elif args.command == "build":
        _build(args)
    elif args.command == "study":
        _study(args)
    elif args.command in ("run", "ssp"):
        _run(args, args.command)
    elif args.command == "export":
        _export(args)
    elif args.command == "report":
        _report(args)
    elif args.command == "new":
        _new(args)
    elif args.command == "export-fmu":
        from systems import composite
        from systems.ssp import open_system

        try:
            args.system = open_system(str(args.system))
            _warn_unconnected(args.system, args.command, args.input)
            composite.export(args)
        except ValueError as exc:
            raise UsageError(str(exc)) from exc
    else:
        _compare_r1(args.step, args.duration, _out_folder(args, "compare", args.case))


def _build(args) -> None:
    """build [NAME ...]: the chosen elements' FMUs (default every element), rebuilt."""
    known = [e.__name__ for e in ELEMENTS]
    unknown = [name for name in args.elements if name not in known]
    if unknown:
        raise UsageError(f"build {unknown[0]}: no element {unknown[0]!r}; elements: {', '.join(known)}")
    out = _fmu_folder(Path(args.out), "--out", new_allowed=True)
    chosen = list(dict.fromkeys(args.elements)) or known
    print(f"building {len(chosen)} FMU(s) into {out.resolve()}", file=sys.stderr)
    for path in build_fmus.build_all(out, only=chosen, pure_python=args.pure_python or None):
        print(f"built {path}")


def _quiet_stdout() -> None:
    """Point stdout at /dev/null, so that Python's final flush of what is still buffered
    for a closed pipe does not print 'Exception ignored ... BrokenPipeError' at exit."""
    import os

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):                     # stdout is no file (captured in a test)
        pass


def main(argv=None) -> int:
    """The drivetrain-fmu command.  Every error ends here: one or two lines on stderr
    naming the bad value and what is allowed, exit status 2 (usage), 1 (the simulation
    failed or its results could not be written), 130 (interrupted) or 143 (SIGTERM); the
    traceback only with --debug.  Raised as Exit (a SystemExit carrying the message) so
    that callers in Python see it."""
    args = _parser().parse_args(argv)
    main_thread = threading.current_thread() is threading.main_thread()
    handling = signal.signal(signal.SIGTERM, _on_sigterm) if main_thread else None
    try:
        _dispatch(args)
        sys.stdout.flush()                            # a closed pipe shows here, not at exit
        return 0
    except BrokenPipeError:                           # `drivetrain-fmu list | head -3`: the reader left
        _quiet_stdout()
        raise Exit("stdout closed", CLOSED_PIPE) from None
    except (KeyboardInterrupt, Exception) as exc:     # the funnel (SystemExit passes through)
        if isinstance(exc, Terminated):
            message, status = "terminated (SIGTERM)" + (f" {exc}" if str(exc) else ""), TERMINATED
        elif isinstance(exc, KeyboardInterrupt):
            message, status = "interrupted" + (f" {exc}" if str(exc) else ""), INTERRUPTED
        elif isinstance(exc, (UsageError, SimulationFailed, MissingExtra)):
            message, status = str(exc), FAILED if isinstance(exc, SimulationFailed) else USAGE
        else:                                         # a bug or a failure nobody foresaw
            message, status = f"{type(exc).__name__}: {_one_line(exc)} (rerun with --debug for the traceback)", FAILED
        if args.debug:
            import traceback

            traceback.print_exc()
    finally:
        if main_thread:
            signal.signal(signal.SIGTERM, handling)
    print(f"{PROG} {args.command}: {'error: ' if status not in (INTERRUPTED, TERMINATED) else ''}{message}",
          file=sys.stderr)
    raise Exit(message, status)


if __name__ == "__main__":
    sys.exit(main())
