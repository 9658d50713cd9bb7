"""The checks every command makes before anything is built or run (systems, steps, stop
times, parameters, folders), and the element FMUs built where they are not up to date."""
from __future__ import annotations

import argparse
import math
import sys
import tempfile
from pathlib import Path

from drivetrain_fmu import build_fmus
from drivetrain_fmu.fmus import ELEMENTS
from drivetrain_fmu.systems import ssp  # CATALOG read when called (a test points it elsewhere)
from drivetrain_fmu.systems.master import MAX_STEPS
from drivetrain_fmu.systems.signals import PLOTS
from drivetrain_fmu.systems.ssp import open_system, parameter_problems, unconnected_inputs

from .errors import PROG, UsageError


def family_and_case(system: str) -> tuple[str | None, str]:
    """(family, case) of a documented system's name: z3 -> ("z3", ""), fan_F2 -> ("fan", "F2"),
    r3_spring_1 -> ("r3_spring", "1"); another name -> (None, name)."""
    family = next((f for f in PLOTS if system == f or system.startswith(f + "_")), None)
    return (family, system[len(family) + 1:]) if family else (None, system)


def system_of(spec: str):
    """The System of a name or a file; a usage error when it is neither or is malformed."""
    try:
        return open_system(spec)
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def output_label(system) -> str:
    """The folder and file name of a system's outputs: its catalog name or its file's stem."""
    return system.path.stem if system.path is not None else system.name


def shown_name(system) -> str:
    """How messages name a system: its catalog name, or its file as given."""
    if system.path is None or system.path.parent.resolve() == ssp.CATALOG.resolve():
        return system.name
    return str(system.path)


def step_and_stop(system, step: float | None, stop: float | None, step_option: str = "--step") -> tuple[float, float]:
    """(step, stop) of a run: the options or the file's; usage errors name the option."""
    option = step_option if step is not None else "the step written in the file,"
    step = system.step if step is None else step
    stop = system.stop if stop is None else stop
    if step is None:
        raise UsageError(f"{shown_name(system)}: its file gives no communication step; give {step_option} H")
    if stop is None:
        raise UsageError(f"{shown_name(system)}: its file gives no stop time (DefaultExperiment stopTime); give --stop T")
    _check_steps(step, stop, option, system)
    check_divides(step, stop, option, system)
    return step, stop


def _check_steps(step: float, stop: float, option: str, system) -> None:
    """At most systems.master.MAX_STEPS steps (2**52: beyond it t + step == t in double
    precision; a step of 5e-324 made the step count overflow)."""
    if stop / step > MAX_STEPS:
        raise UsageError(f"{option} {step:g} makes {stop / step:.3g} steps of the stop time {stop:g} s of "
                         f"{shown_name(system)}; at most {MAX_STEPS:.3g} (2**52: beyond it t + step rounds to t in "
                         f"double precision)")


def _divides(step: float, stop: float) -> bool:
    if not math.isfinite(stop / step):
        return False
    n = round(stop / step)
    return n >= 1 and abs(n * step - stop) <= 1e-9 * max(1.0, stop)


def check_divides(step: float, stop: float, option: str, system) -> None:
    """A step must divide the stop time into whole steps (the master counts t = n h)."""
    if _divides(step, stop):
        return
    round_steps = sorted({m * 10.0 ** e for m in (1, 2, 2.5, 4, 5) for e in range(-7, 4)
                          if m * 10.0 ** e <= stop and _divides(m * 10.0 ** e, stop)})
    near = [f"{h:g}" for h in ([x for x in round_steps if x < step][-1:] + [x for x in round_steps if x > step][:1])]
    raise UsageError(f"{option} {step:g} does not divide the stop time {stop:g} s of {shown_name(system)} into whole "
                     f"steps; allowed: {stop:g} s / n" + (f", e.g. {' or '.join(near)}" if near else ""))


def warn_unconnected(system, command: str, fmu_inputs=()) -> None:
    """One line on stderr naming every input that runs at its start value without the file
    saying so (systems.ssp.unconnected_inputs: not a free flange's zero torque, not bound),
    but those ``fmu_inputs`` (INST.VAR) makes inputs of a system FMU (export-fmu --input)."""
    found = [entry for entry in unconnected_inputs(system.components, system.connections)
             if entry.split(" = ")[0] not in fmu_inputs]
    if found:
        print(f"{PROG} {command}: warning: {shown_name(system)}: {'an input' if len(found) == 1 else 'inputs'} left "
              f"unconnected, run at the start value: {', '.join(found)} (connect {'it' if len(found) == 1 else 'them'}"
              f", or bind the value in the component's parameter set to make it deliberate)", file=sys.stderr)


def check_parameters(system) -> None:
    components = system.components
    if system.is_archive:          # an archive may carry FMUs of other tools: check ours only
        names = {e.__name__ for e in ELEMENTS}
        components = {n: c for n, c in components.items() if c.element in names}
    problems = parameter_problems(components)
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise UsageError(f"{shown_name(system)}: {problems[0]}{more}")


def writable_folder(folder: Path, option: str) -> Path:
    """``folder``, created; a usage error naming it and ``option`` when it cannot be written."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as exc:
        raise UsageError(f"cannot write to {folder} ({exc.strerror or exc}); give {option} DIR, a folder you "
                         f"can write") from None
    return folder


def out_folder(args, command: str, label: str) -> Path:
    """RESULTS/COMMAND/SYSTEM: one folder per command and system, checked writable."""
    return writable_folder(Path(args.out) / command / label, "--out")


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
    return writable_folder(folder, option)


def fmus_for(systems, fmu_dir: Path) -> Path:
    """Build the FMUs that ``systems`` (one System or a list) use and that are not up to
    date in ``fmu_dir`` (:func:`_fmu_folder`); one line on stderr says where they are built
    and reused."""
    systems = systems if isinstance(systems, list) else [systems]
    return element_fmus(sorted({c.element for system in systems for c in system.components.values()}), fmu_dir)


def element_fmus(needed: list[str], fmu_dir: Path) -> Path:
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


def seconds(text: str) -> float:
    """argparse type of a step or a duration: a finite number of seconds > 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not (value > 0.0 and math.isfinite(value)):
        raise argparse.ArgumentTypeError(f"must be a finite number of seconds > 0, got {text}")
    return value


def or_default(value, default):
    return default if value is None else value
