"""The drivetrain-fmu command: its arguments, one module per command, and the one error
funnel (main)."""
from __future__ import annotations

import argparse
import os
import re
import signal
import sys
import threading
import traceback
from pathlib import Path

from drivetrain_fmu import build_fmus
from drivetrain_fmu import cli
from drivetrain_fmu.systems.optional import MissingExtra, check

from . import build, compare, export, export_fmu, listing, new, report, run, study
from .checks import seconds
from .errors import (CLOSED_PIPE, FAILED, INTERRUPTED, PROG, TERMINATED, USAGE, Exit, SimulationFailed, Terminated,
                     UsageError, on_sigterm, one_line)
from .export_fmu import add_arguments


class Parser(argparse.ArgumentParser):
    """argparse that reads '-1e-3' as a (negative) value, not as an option, so
    '--step -1e-3' is refused as a step that is not > 0."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._negative_number_matcher = re.compile(r"^-(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$|^-(inf|nan)$")

    def error(self, message):
        """A usage error in one line, and where to read the usage (no usage block)."""
        self.exit(USAGE, f"{self.prog}: error: {message}\n  (usage: {self.prog} --help)\n")


def _parser() -> Parser:
    parser = Parser(prog=PROG, description=cli.__doc__.splitlines()[0])
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
    add_arguments(command("export-fmu", help="write a whole system as one FMU (docs/composite-fmu.md)"))
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


#: per command: the optional packages it needs (module, what needs it, the extra that installs it),
#: checked before anything is built or computed
NEEDS = {
    "run": [("matplotlib", "plots need", "cli"), ("tqdm", "progress bars need", "cli")],
    "report": [("scipy", "the monolithic references need", "cli")],
    "compare": [("scipy", "the PWA methods need", "cli"), ("matplotlib", "plots need", "cli")],
    "study": [("distributed", "studies need", "study"), ("matplotlib", "plots need", "study"),
              ("tqdm", "progress bars need", "study")],
}


#: per command: the module whose execute(args) does it (one module per command)
COMMANDS = {"list": listing, "build": build, "run": run, "ssp": run, "report": report, "export": export,
            "export-fmu": export_fmu, "new": new, "study": study, "compare": compare}


def _dispatch(args) -> None:
    for module, purpose, extra in NEEDS.get(args.command, ()):
        check(module, purpose, extra)
    COMMANDS[args.command].execute(args)


def _quiet_stdout() -> None:
    """Point stdout at /dev/null, so that Python's final flush of what is still buffered
    for a closed pipe does not print 'Exception ignored ... BrokenPipeError' at exit."""
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
    handling = signal.signal(signal.SIGTERM, on_sigterm) if main_thread else None
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
            message, status = f"{type(exc).__name__}: {one_line(exc)} (rerun with --debug for the traceback)", FAILED
        if args.debug:
            traceback.print_exc()
    finally:
        if main_thread:
            signal.signal(signal.SIGTERM, handling)
    print(f"{PROG} {args.command}: {'error: ' if status not in (INTERRUPTED, TERMINATED) else ''}{message}",
          file=sys.stderr)
    raise Exit(message, status)
